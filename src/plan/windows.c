/*-------------------------------------------------------------------------
 *
 * windows.c
 *	  Window functions computed in the tasks of a colocated group: when
 *	  every window of the query partitions by a partition key of a table
 *	  each row comes from, all the rows of each window partition sit in one
 *	  partition class, so each task computes its rows' window functions
 *	  whole and the coordinator only concatenates (and sorts, limits, ...
 *	  above, as the query says).  Other windows stay on the coordinator.
 *
 *	  This file decides, through the window stage of
 *	  create_upper_paths_hook (called from aggregates.c's hook); planner.c
 *	  writes the tasks' SQL, deparse.c the OVER clauses.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/tlist.h"

#include "plan/join_group.h"
#include "deparse/deparse.h"

/* collect the WindowFuncs of an expression tree */
static bool
collect_window_funcs(Node *node, List **funcs)
{
	if (node == NULL)
		return false;
	if (IsA(node, WindowFunc))
	{
		*funcs = lappend(*funcs, node);
		return false;
	}
	return expression_tree_walker(node, collect_window_funcs, (void *) funcs);
}

/*
 * cj_add_window_paths
 *		See join_group.h.  The query must have no grouping (windows over
 *		aggregated rows would need the aggregation whole on the nodes first)
 *		and the group no condition the coordinator must apply (a window sees
 *		the rows after every filter).
 */
const char *
cj_add_window_paths(PlannerInfo *root, RelOptInfo *input_rel,
					RelOptInfo *window_rel)
{
	Query	   *parse = root->parse;
	/* the window relation's target: the planner keeps it here for us */
	PathTarget *target = root->upper_targets[UPPERREL_WINDOW];
	CjJoinGroup *g;
	CjUpperSpec *spec;
	List	   *funcs = NIL;
	List	   *windows_used = NIL;
	ListCell   *lc;
	ListCell   *lp;

	if (target == NULL ||
		(input_rel->reloptkind != RELOPT_BASEREL &&
		 input_rel->reloptkind != RELOPT_JOINREL))
		return CJ_STEP_NOT_HERE;
	if (parse->hasAggs || parse->groupClause != NIL || parse->groupingSets != NIL)
		return "windows over aggregated rows run on the coordinator";
	if (parse->hasTargetSRFs)
		return "a set-returning function in the select list";
	g = cj_group_for_input(root, input_rel);
	if (g == NULL)
		return CJ_STEP_NOT_HERE;
	if (cj_group_has_local_quals(g))
		return "a condition must run on the coordinator first (row security, or a function that is not leakproof)";

	/* every window used partitions by a key: its partitions stay in a task */
	foreach(lc, target->exprs)
		collect_window_funcs(lfirst(lc), &funcs);
	if (funcs == NIL)
		return CJ_STEP_NOT_HERE;
	foreach(lc, funcs)
		windows_used = list_append_unique_int(windows_used,
											  (int) ((WindowFunc *) lfirst(lc))->winref);
	foreach(lc, parse->windowClause)
	{
		WindowClause *wc = lfirst_node(WindowClause, lc);
		List	   *partition = NIL;

		if (!list_member_int(windows_used, (int) wc->winref))
			continue;
		foreach(lp, wc->partitionClause)
			partition = lappend(partition,
								get_sortgroupclause_expr(lfirst_node(SortGroupClause, lp),
														 root->processed_tlist));
		if (!cj_group_groups_by_key(g, partition))
			return "a window is not partitioned by the partition key of a table every row comes from";
	}

	/* and the nodes can compute all of the select list */
	foreach(lc, target->exprs)
		if (!cj_is_shippable_window(root, (Expr *) lfirst(lc)))
			return "the select list has a window function or expression the nodes do not evaluate alike";

	spec = cj_make_spec("windows computed on the nodes");
	spec->stage = UPPERREL_WINDOW;
	spec->remote_exprs = list_copy(target->exprs);

	/*
	 * PostgreSQL may have turned a filter on a monotonic window function
	 * (rank() <= 2 in an enclosing query) into the window's run condition,
	 * removing it from the query: the scan must apply it to what the nodes
	 * return.  Its window functions are in the select list already.
	 */
	foreach(lc, parse->windowClause)
	{
		WindowClause *wc = lfirst_node(WindowClause, lc);

		if (list_member_int(windows_used, (int) wc->winref) && wc->runCondition != NIL)
		{
			ListCell   *lr;

			foreach(lr, wc->runCondition)
			{
				List	   *inner = NIL;

				collect_window_funcs(lfirst(lr), &inner);
				foreach(lp, inner)
					if (!list_member(spec->remote_exprs, lfirst(lp)))
						return "a window's run condition reads a window function not in the select list";
				spec->local_quals = lappend(spec->local_quals, copyObject(lfirst(lr)));
			}
		}
	}
	add_path(window_rel,
			 cj_make_upper_path(root, window_rel, g, target, spec,
								Max(input_rel->rows, 1)));
	return NULL;
}
