/*-------------------------------------------------------------------------
 *
 * group_bound.c
 *	  How many groups a grouping over joined relations can have at most.
 *	  PostgreSQL estimates the groups of a column from that column's own
 *	  statistics, scaled by its table's conditions; it does not see that a
 *	  join keeps only the values another relation holds.  Grouping line
 *	  items by part, in a query that semi-joins them to the parts of two
 *	  containers, makes at most as many groups as there are such parts, a
 *	  twentieth of lineitem's parts; PostgreSQL's estimate near the number
 *	  of line items makes a result of a thousand rows look like nineteen
 *	  thousand to the query above it, too large to broadcast into a group,
 *	  and the tasks' partial groups too many to be worth sending.
 *
 *	  Owns: that bound (an equivalence class equating a grouping column
 *	  with a column of another relation the level inner or semi joins:
 *	  the rows of that relation after its own conditions) and lowering the
 *	  grouped rows' estimates of the level to it.  Does not: plan the
 *	  aggregation (aggregates.c), or change any cost already computed.
 *	  Only for groupings over colojoin's tables: plain PostgreSQL use keeps
 *	  its plans.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/tlist.h"

#include "plan/join_group.h"

/*
 * value_bound
 *		At most how many distinct values expr takes in the rows its level
 *		joins, by the relations an equivalence class equates it with; -1
 *		when none does.  An equality of an inner or semi join holds for
 *		every joined row, so each value of expr is one the other relation's
 *		rows hold (outer joins' equalities form no class).  A class below
 *		an outer join may see expr null: one group more.
 */
static double
value_bound(PlannerInfo *root, Expr *expr)
{
	Relids		own = pull_varnos(root, (Node *) expr);
	double		best = -1;
	ListCell   *lc;

	while (IsA(expr, RelabelType))
		expr = ((RelabelType *) expr)->arg;
	foreach(lc, root->eq_classes)
	{
		EquivalenceClass *ec = lfirst(lc);
		bool		member = false;
		ListCell   *lm;

		if (ec->ec_merged != NULL || ec->ec_has_volatile)
			continue;
		foreach(lm, ec->ec_members)
		{
			EquivalenceMember *em = lfirst(lm);
			Expr	   *e = em->em_expr;

			while (IsA(e, RelabelType))
				e = ((RelabelType *) e)->arg;
			if (!em->em_is_child && equal(e, expr))
				member = true;
		}
		if (!member)
			continue;
		foreach(lm, ec->ec_members)
		{
			EquivalenceMember *em = lfirst(lm);
			int			relid;
			RelOptInfo *rel;
			double		bound;

			if (em->em_is_child || em->em_is_const ||
				!bms_get_singleton_member(em->em_relids, &relid) ||
				bms_is_member(relid, own) || relid >= root->simple_rel_array_size)
				continue;
			rel = root->simple_rel_array[relid];
			if (rel == NULL || rel->reloptkind != RELOPT_BASEREL || rel->rows <= 0)
				continue;
			bound = rel->rows + (ec->ec_below_outer_join ? 1 : 0);
			if (best < 0 || bound < best)
				best = bound;
		}
	}
	return best;
}

/*
 * cj_bound_grouped_rows
 *		See join_group.h.
 */
void
cj_bound_grouped_rows(PlannerInfo *root, RelOptInfo *output_rel)
{
	double		bound = 1;
	ListCell   *lc;

	if (root->parse->groupClause == NIL || root->parse->groupingSets != NIL)
		return;
	foreach(lc, root->parse->groupClause)
	{
		SortGroupClause *sgc = lfirst(lc);
		double		b = value_bound(root,
									(Expr *) get_sortgroupclause_expr(sgc,
																	  root->processed_tlist));

		if (b < 0)
			return;
		bound *= b;
	}
	bound = clamp_row_est(bound);
	foreach(lc, list_concat_copy(output_rel->pathlist, output_rel->partial_pathlist))
	{
		Path	   *path = lfirst(lc);

		path->rows = Min(path->rows, bound);
	}
	output_rel->rows = Min(output_rel->rows, bound);
}
