/*-------------------------------------------------------------------------
 *
 * upper.c
 *	  What the steps above a join (join_group.h: aggregates, ordering,
 *	  windows) ask of a group, and the CustomPaths of groups: the group
 *	  whose rows a relation holds, whether it groups by a key, and a path
 *	  whose tasks run a spec's query over it, costed as remote work
 *	  divided over the nodes plus the rows that travel.
 *
 *	  It does not decide what the steps push down (aggregates.c,
 *	  ordering.c, windows.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/extensible.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "nodes/nodeFuncs.h"
#include "rewrite/rewriteManip.h"

#include "metadata/metadata.h"
#include "plan/join_group.h"
#include "plan/planner_internal.h"
#include "plan/scan_plan.h"

static CustomPathMethods cj_path_methods = {
	.CustomName = COLOJOIN_CUSTOM_SCAN_NAME,
	.PlanCustomPath = cj_plan_custom_path,
};

/* the rows the group's tables hold after their own conditions */
double
cj_group_input_rows(PlannerInfo *root, CjJoinGroup *g)
{
	double		rows = 0;
	ListCell   *lc;

	foreach(lc, g->rels)
	{
		CjBaseRel  *br = lfirst(lc);

		/* a stage's tasks read their tables, then the next group its rows */
		if (br->stage != NULL)
			rows += br->stage_input_rows + br->stage_rows;
		else
			rows += find_base_rel(root, br->rtindex)->rows;
	}
	return rows;
}

/*
 * cj_new_scan_path
 *		A ColocatedJoin path with the given target, size and costs.  ExecScan
 *		projects for it: no Result node goes on top.
 */
Path *
cj_new_scan_path(RelOptInfo *parent, CjJoinGroup *g, PathTarget *target,
				 double rows, Cost startup, Cost total, List *private)
{
	CustomPath *cpath = makeNode(CustomPath);

	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = parent;
	cpath->path.pathtarget = target;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = false;
	cpath->path.parallel_workers = 0;
	cpath->path.rows = rows;
	cpath->path.startup_cost = startup;
	cpath->path.total_cost = total;
	cpath->path.pathkeys = NIL;
	cpath->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	/* rows the coordinator computes and broadcasts: its child plans */
	cpath->custom_paths = cj_coordinator_paths(g);
	cpath->custom_private = private;
	cpath->methods = &cj_path_methods;
	return (Path *) cpath;
}

CjJoinGroup *
cj_group_for_input(PlannerInfo *root, RelOptInfo *rel)
{
	CjJoinAttempt *attempt;
	CjJoinGroup *g;
	List	   *reasons = NIL;

	if (rel->reloptkind == RELOPT_JOINREL)
	{
		attempt = cj_find_attempt(rel);
		return attempt ? attempt->group : NULL;
	}
	if (!cj_is_sharded_baserel(root, rel))
		return NULL;

	/* a sharded table on its own: a group of one, built once */
	attempt = cj_get_attempt(rel);
	if (attempt->group != NULL)
		return attempt->group;
	if (attempt->reasons != NIL)
		return NULL;
	g = cj_group_for_rel(root, rel, &reasons);
	if (g == NULL || !cj_finish_group(root, g, &reasons))
	{
		attempt->names = cj_joinrel_names(root, rel);
		attempt->reasons = lappend(attempt->reasons,
								   makeString(pstrdup("not a sharded table colojoin can run")));
		return NULL;
	}
	attempt->group = g;
	return g;
}

CjUpperSpec *
cj_make_spec(const char *strategy)
{
	CjUpperSpec *spec = palloc0(sizeof(CjUpperSpec));

	spec->strategy = strategy;
	spec->limit = -1;
	spec->stage = UPPERREL_GROUP_AGG;
	return spec;
}

void
cj_remember_upper(RelOptInfo *rel, CjJoinGroup *g, CjUpperSpec *spec)
{
	CjJoinAttempt *a = cj_get_attempt(rel);

	a->group = g;
	a->upper = spec;
}

CjUpperSpec *
cj_recall_upper(RelOptInfo *rel, CjJoinGroup **g)
{
	CjJoinAttempt *a = cj_find_attempt(rel);

	if (a == NULL || a->upper == NULL)
		return NULL;
	*g = a->group;
	return a->upper;
}

bool
cj_group_has_local_quals(CjJoinGroup *g)
{
	return g->local_quals != NIL;
}

int
cj_group_ntasks(CjJoinGroup *g)
{
	return list_length(g->tasks);
}

bool
cj_group_groups_by_key(CjJoinGroup *g, List *exprs)
{
	ListCell   *lc;

	foreach(lc, g->rels)
	{
		CjBaseRel  *br = lfirst(lc);
		int			p;

		if (!cj_tree_keeps_rows_of(g->tree, foreach_current_index(lc)))
			continue;

		/*
		 * Rows routed by another column, or copied to every node, do not
		 * sit in the class of their own key: its values span tasks.
		 */
		if (br->move == CJ_MOVE_REPARTITION || br->move == CJ_MOVE_BROADCAST ||
			(br->reference && cj_group_has_references(g)))
			continue;
		for (p = 0; p < br->table->partnatts; p++)
		{
			ListCell   *lv;
			ListCell   *le;
			bool		found = false;

			/* an expression key too is fixed by the columns it reads */
			foreach(lv, cj_key_vars(br->table, p, br->rtindex))
			{
				found = false;
				foreach(le, exprs)
					if (cj_is_var_of(lfirst(le), lfirst(lv)))
						found = true;
				if (!found)
					break;
			}
			if (!found && br->table->partattrs[p] == 0)
			{
				/* or the grouping has the key expression itself */
				Node	   *kexpr = copyObject(br->table->partexprs[p]);

				ChangeVarNodes(kexpr, 1, br->rtindex, 0);
				foreach(le, exprs)
					if (equal(strip_implicit_coercions(lfirst(le)),
							  strip_implicit_coercions(kexpr)))
						found = true;
			}
			if (!found)
				break;
		}
		if (p == br->table->partnatts)
			return true;
	}
	return false;
}

Path *
cj_make_upper_path(PlannerInfo *root, RelOptInfo *parent, CjJoinGroup *g,
				   PathTarget *target, CjUpperSpec *spec, double rows)
{
	double		input_rows = cj_group_input_rows(root, g);
	Cost		startup;
	Cost		remote;
	Cost		transfer;

	/*
	 * The nodes scan, join and aggregate at once, the join costed as for the
	 * join path: its moves included, unless a hint asked for them (the
	 * join path then costs nothing, and the moves are paid either way).
	 */
	startup = 100.0 + 0.5 * list_length(g->tasks) +
		(g->hints_used == NIL ? cj_moves_cost(root, g) : 0);
	remote = (input_rows * (cpu_tuple_cost + 2 * cpu_operator_cost) +
			  g->rel->rows * cpu_tuple_cost +
			  g->rel->rows * cpu_operator_cost * list_length(spec->remote_exprs)) /
		cj_task_node_count(g);
	transfer = rows * (cpu_tuple_cost + target->width * 0.0001);

	/* paths are never copied: plain pointers, read by cj_plan_custom_path */
	return cj_new_scan_path(parent, g, target, rows, startup + remote,
						 startup + remote + transfer, list_make2(g, spec));
}
