/*-------------------------------------------------------------------------
 *
 * ordering.c
 *	  ORDER BY ... LIMIT n pushed into the tasks: each task returns only its
 *	  first n rows in the query's order (FETCH FIRST n ROWS WITH TIES when
 *	  the query asks for ties, so none is lost), and the coordinator sorts
 *	  the few rows that arrive and applies the query's own LIMIT.  Works
 *	  over a colocated join or sharded table, and over an aggregation that
 *	  runs whole on the nodes.
 *
 *	  A LIMIT without ORDER BY needs nothing here: the executor stops
 *	  reading and cancels the remaining tasks once the Limit node is done.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/tlist.h"
#include "utils/typcache.h"

#include "plan/join_group.h"
#include "deparse/deparse.h"

/*
 * constant_limit
 *		LIMIT plus OFFSET when both are constants (the planner's own
 *		root->limit_tuples is not kept for grouped queries), or -1.
 */
static double
constant_limit(Query *parse)
{
	double		n;

	if (parse->limitCount == NULL || !IsA(parse->limitCount, Const) ||
		((Const *) parse->limitCount)->constisnull)
		return -1;
	n = (double) DatumGetInt64(((Const *) parse->limitCount)->constvalue);
	if (parse->limitOffset != NULL)
	{
		if (!IsA(parse->limitOffset, Const))
			return -1;
		if (!((Const *) parse->limitOffset)->constisnull)
			n += (double) DatumGetInt64(((Const *) parse->limitOffset)->constvalue);
	}
	return n;
}

const char *
cj_add_ordered_paths(PlannerInfo *root, RelOptInfo *input_rel,
					 RelOptInfo *ordered_rel)
{
	Query	   *parse = root->parse;
	CjJoinGroup *g = NULL;
	CjUpperSpec *base = NULL;
	CjUpperSpec *spec;
	/* the ordered relation's target: the planner keeps it here for us */
	PathTarget *target = root->upper_targets[UPPERREL_ORDERED];
	double		limit = constant_limit(parse);
	double		rows;
	Path	   *path;
	ListCell   *lc;

	/* only a limit makes per-task ordering worth it */
	if (parse->sortClause == NIL || limit <= 0 || root->sort_pathkeys == NIL ||
		target == NULL)
		return CJ_STEP_NOT_HERE;
	if (parse->hasWindowFuncs || parse->distinctClause != NIL ||
		parse->hasTargetSRFs)
		return "each task orders and limits rows only without window functions, DISTINCT or set-returning functions";

	if (input_rel->reloptkind == RELOPT_UPPER_REL)
	{
		/* over an aggregation: only one computed whole on the nodes */
		base = cj_recall_upper(input_rel, &g);
		if (base == NULL)
			return "the aggregate below is not computed whole on the nodes";
		spec = cj_make_spec(psprintf("%s, ordered and limited", base->strategy));
		spec->remote_exprs = base->remote_exprs;
		spec->ngroup = base->ngroup;
		spec->having = base->having;
		spec->local_quals = base->local_quals;
		if (spec->local_quals != NIL)
			return "a HAVING condition must run on the coordinator before the limit";
	}
	else
	{
		if (input_rel->reloptkind != RELOPT_BASEREL &&
			input_rel->reloptkind != RELOPT_JOINREL)
			return CJ_STEP_NOT_HERE;
		g = cj_group_for_input(root, input_rel);
		if (g == NULL)
			return CJ_STEP_NOT_HERE;
		if (cj_group_has_local_quals(g))
			return "a condition must run on the coordinator first (row security, or a function that is not leakproof)";
		spec = cj_make_spec("ordered and limited on the nodes");
	}

	foreach(lc, parse->sortClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		Expr	   *expr = (Expr *) get_sortgroupclause_expr(sgc, root->processed_tlist);
		TypeCacheEntry *tc;

		if (!cj_is_shippable(root, expr, NULL))
			return "an ORDER BY expression is not one the nodes evaluate alike (built-in and immutable)";
		/* the node sorts by the type's default order, as here */
		tc = lookup_type_cache(exprType((Node *) expr),
							   TYPECACHE_LT_OPR | TYPECACHE_GT_OPR);
		if (sgc->sortop != tc->lt_opr && sgc->sortop != tc->gt_opr)
			return "an ORDER BY with an operator other than its type's default order";
		spec->order_exprs = lappend(spec->order_exprs, expr);
		spec->order_ops = lappend_oid(spec->order_ops, sgc->sortop);
		spec->order_nulls_first = lappend_int(spec->order_nulls_first, sgc->nulls_first);
	}
	spec->limit = limit;
	spec->stage = UPPERREL_ORDERED;
	spec->with_ties = (parse->limitOption == LIMIT_OPTION_WITH_TIES);

	rows = Min(input_rel->rows, limit * Max(cj_group_ntasks(g), 1));
	path = cj_make_upper_path(root, input_rel, g, target, spec, Max(rows, 1));
	path = (Path *) create_sort_path(root, ordered_rel, path, root->sort_pathkeys,
									 spec->with_ties ? -1.0 : limit);
	add_path(ordered_rel, path);
	return NULL;
}
