/*-------------------------------------------------------------------------
 *
 * coordinator_rows.c
 *	  Rows the coordinator computes, joined on the nodes.  A WITH query
 *	  PostgreSQL materializes (read twice, say: its rows and their maximum),
 *	  a subquery that groups a sharded table by a column no table of the
 *	  join is partitioned by, a VALUES list, a set-returning function: none
 *	  is a table any node holds, so a join of one with a colocated group
 *	  used to run on the coordinator, the group's rows pulled there.  Their
 *	  rows are what PostgreSQL's own plan of the relation makes, on the
 *	  coordinator (where the subquery's aggregate may itself have run on the
 *	  nodes); when they are few, the scan broadcasts them to the nodes of
 *	  the group before its tasks start, and the join runs there like a join
 *	  with a broadcast dimension table.
 *
 *	  Owns: which relations qualify, the CjBaseRel standing for one
 *	  (coord_path: PostgreSQL's cheapest path of the relation, which the
 *	  scan plans as a child and runs), its columns, and the list of child
 *	  paths a group's scan carries.
 *
 *	  Does not: choose the move (move_choice.c broadcasts every relation
 *	  with no table, within colojoin.broadcast_threshold), write the
 *	  temporary table and its COPY (move_sql.c), or run the child plan and
 *	  send its rows (executor.c, local_source.c).  Its conditions are not
 *	  taken: the child plan applies them, in PostgreSQL's order, security
 *	  barriers included, before any row leaves the coordinator.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "parser/parsetree.h"

#include "deparse/deparse.h"
#include "plan/planner_internal.h"
#include "util/settings.h"

/*
 * statement_writes
 *		Whether the statement has a WITH query that writes (only a top-level
 *		one may): reading it would run the write before the moves, and a
 *		move after a write through colojoin in the same transaction cannot
 *		see it (executor.c refuses).  This also keeps out every scan of a
 *		WITH query that writes.
 */
static bool
statement_writes(PlannerInfo *root)
{
	for (; root != NULL; root = root->parent_root)
		if (root->parse->hasModifyingCTE)
			return true;
	return false;
}

/*
 * cj_is_coordinator_rows_rel
 *		Whether rel's rows can be computed here and broadcast: a relation of
 *		the query that is a subquery, a WITH query's scan (not a recursive
 *		one's own reference), VALUES or a function, reading no other
 *		relation's columns (LATERAL), whose cheapest plan needs no parameter
 *		from a join above it, in a statement that writes nothing.
 */
bool
cj_is_coordinator_rows_rel(PlannerInfo *root, RelOptInfo *rel)
{
	RangeTblEntry *rte;
	Path	   *path;

	if (!colojoin_enable_coordinator_rows ||
		rel->reloptkind != RELOPT_BASEREL)
		return false;
	if (rel->rtekind != RTE_SUBQUERY && rel->rtekind != RTE_CTE &&
		rel->rtekind != RTE_VALUES && rel->rtekind != RTE_FUNCTION)
		return false;
	if (!bms_is_empty(rel->lateral_relids) || rel->lateral_vars != NIL)
		return false;
	path = rel->cheapest_total_path;
	if (path == NULL || PATH_REQ_OUTER(path) != NULL || statement_writes(root))
		return false;
	/* a recursive WITH query's own reference changes at each iteration */
	rte = planner_rt_fetch(rel->relid, root);
	return !(rte->rtekind == RTE_CTE && rte->self_reference);
}

/*
 * cj_make_coordinator_rows_rel
 *		The CjBaseRel of such a relation as a member of a group: its columns
 *		are its target's, in order, which is what its child plan returns
 *		(planned with its exact target list).  NULL, with the reason, when
 *		a column is not a plain one of a type the nodes have.
 */
CjBaseRel *
cj_make_coordinator_rows_rel(PlannerInfo *root, RelOptInfo *rel,
							 List **reasons)
{
	RangeTblEntry *rte = planner_rt_fetch(rel->relid, root);
	CjBaseRel  *br;
	ListCell   *lc;

	br = palloc0(sizeof(CjBaseRel));
	br->rtindex = rel->relid;
	br->relid = InvalidOid;
	br->table = NULL;
	br->alias = rte->eref->aliasname;
	br->space_index = -1;
	br->coord_path = rel->cheapest_total_path;
	br->coord_child = -1;
	foreach(lc, rel->reltarget->exprs)
	{
		Var		   *v = lfirst(lc);

		if (!IsA(v, Var) || v->varno != rel->relid || v->varattno <= 0 ||
			v->varlevelsup != 0)
		{
			*reasons = lappend(*reasons,
							   psprintf("the join needs a value of %s that is not one of its columns",
										br->alias));
			return NULL;
		}
		if (!cj_is_shippable(root, (Expr *) v, NULL))
		{
			*reasons = lappend(*reasons,
							   psprintf("a column of %s is of a type or collation the nodes may not have",
										br->alias));
			return NULL;
		}
		br->stage_vars = lappend(br->stage_vars, v);
	}
	return br;
}

/*
 * cj_coordinator_paths
 *		The child paths of a scan of g: the coordinator rows it broadcasts,
 *		in the order of g->rels (plan_create.c numbers them so).
 */
List *
cj_coordinator_paths(CjJoinGroup *g)
{
	List	   *paths = NIL;
	ListCell   *lc;

	if (g == NULL)
		return NIL;
	foreach(lc, g->rels)
	{
		CjBaseRel  *br = lfirst(lc);

		if (br->coord_path != NULL)
			paths = lappend(paths, br->coord_path);
	}
	return paths;
}

/*
 * cj_number_coordinator_rows
 *		Give each coordinator relation of g its place among the scan's child
 *		plans, as cj_coordinator_paths listed them.
 */
void
cj_number_coordinator_rows(CjJoinGroup *g)
{
	ListCell   *lc;
	int			k = 0;

	foreach(lc, g->rels)
	{
		CjBaseRel  *br = lfirst(lc);

		if (br->coord_path != NULL)
			br->coord_child = k++;
	}
}
