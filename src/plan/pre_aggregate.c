/*-------------------------------------------------------------------------
 *
 * pre_aggregate.c
 *	  Aggregation before a move.  When a query aggregates, over inner joins
 *	  only, nothing but columns of the one table its group moves
 *	  (repartitioned or broadcast), that table's nodes group its rows by
 *	  the columns the rest of the query reads (the join columns, grouping
 *	  columns, the value it is routed by) and send one row per group with
 *	  its partial aggregates (count, sum, min, ...).  The tasks combine
 *	  those over the join: every joined row of a group repeats the group's
 *	  partial, as it repeated each of the group's rows, so a sum of counts
 *	  counts the joined rows and a sum of sums sums their values.
 *
 *	  The planner weighs it with the groups the nodes' own statistics
 *	  expect (pg_stats' n_distinct of the grouped columns, leaf by leaf,
 *	  through the size cache): planner.c when it chooses which side of a
 *	  join moves, aggregates.c for the aggregation path.  Without those
 *	  statistics nothing is grouped early: a guess that rows shrink would
 *	  make the planner move the big side.
 *
 *	  A subquery the tasks compute over its table's rows moved to them
 *	  (lateral.c: grouped by the column its table is repartitioned by)
 *	  is grouped the same way before the move when its aggregates split:
 *	  the nodes send partial groups, the tasks combine them in the
 *	  subquery's own GROUP BY (cj_pre_aggregate_subquery).
 *
 *	  This file decides and rewrites the plan's parts; move_sql.c writes
 *	  the grouped COPY and the temporary table's columns.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/sysattr.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_statistic.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "operations/size_cache.h"
#include "plan/planner_internal.h"
#include "util/settings.h"

/* the one table g moves, if it moves rows a node can group, else NULL */
static CjBaseRel *
moved_rel(CjJoinGroup *g)
{
	CjBaseRel  *found = NULL;
	ListCell   *lc;

	foreach(lc, g->rels)
	{
		CjBaseRel  *br = lfirst(lc);

		if (br->move == CJ_MOVE_NONE)
			continue;
		if (found != NULL)
			return NULL;		/* one move at a time */
		found = br;
	}
	if (found == NULL || (found->table == NULL && found->stage == NULL) ||
		found->preagg != NIL ||
		(found->move != CJ_MOVE_REPARTITION && found->move != CJ_MOVE_BROADCAST))
		return NULL;
	return found;
}

static bool
all_inner(CjJoinTree *t)
{
	if (t->is_base)
		return true;
	if (t->lateral != NULL || t->jointype != JOIN_INNER)
		return false;
	return all_inner(t->outer) && all_inner(t->inner);
}

/*
 * partial_allowed
 *		Whether a partial aggregate (one aggregates.c's split makes) can be
 *		computed on mb's nodes and combined in the tasks: over mb's columns
 *		alone, of a name the tasks know how to combine, of a type that is
 *		not collatable (the nodes' min of text would follow their columns'
 *		collations, not the coordinator's).
 */
static bool
partial_allowed(Aggref *agg, CjBaseRel *mb)
{
	const char *name = get_func_name(agg->aggfnoid);
	static const char *const combinable[] = {
		"count", "sum", "min", "max", "bool_and", "bool_or",
		"bit_and", "bit_or", "bit_xor"
	};
	bool		known = false;
	ListCell   *lc;
	int			i;

	for (i = 0; i < lengthof(combinable); i++)
		if (name && strcmp(name, combinable[i]) == 0)
			known = true;
	if (!known || type_is_collatable(agg->aggtype) ||
		contain_volatile_functions((Node *) agg) ||
		cj_contains_param((Node *) agg))
		return false;
	foreach(lc, pull_var_clause((Node *) list_make2(agg->args, agg->aggfilter),
								PVC_INCLUDE_PLACEHOLDERS))
	{
		Var		   *v = lfirst(lc);

		if (!IsA(v, Var) || !cj_rel_has_varno(mb, v->varno) || v->varattno <= 0)
			return false;
	}
	return true;
}

/*
 * query_refusal
 *		Why the query's own conditions do not allow grouping mb first, or
 *		NULL when they do: it aggregates (no grouping sets) above a join of
 *		all its tables, inner joins only, run wholly in the tasks, and
 *		every aggregate splits into partials mb's nodes can compute.
 */
static const char *
query_refusal(PlannerInfo *root, CjJoinGroup *g, CjBaseRel *mb)
{
	Query	   *parse = root->parse;
	ListCell   *lc;

	/* a hint overrides the setting for its statement */
	if (!colojoin_enable_pre_aggregation &&
		cj_pre_aggregate_hint(root, mb->rtindex) == NULL)
		return "aggregation before a move is off (colojoin.enable_pre_aggregation)";
	if (!colojoin_enable_aggregate_pushdown)
		return "aggregation on the nodes is off (colojoin.enable_aggregate_pushdown)";
	if ((!parse->hasAggs && parse->groupClause == NIL) ||
		parse->groupingSets != NIL || parse->hasTargetSRFs ||
		(parse->groupClause != NIL && !grouping_is_hashable(parse->groupClause)))
		return "the query does not aggregate, or groups by grouping sets or by unhashable values";
	if (!bms_equal(g->rel->relids, root->all_baserels))
		return "the join that moves it is not the query's whole FROM";
	if (g->local_quals != NIL || !all_inner(g->tree))
		return "its join is not all inner joins run on the nodes";
	foreach(lc, pull_var_clause((Node *) list_make2(root->processed_tlist,
													parse->havingQual),
								PVC_INCLUDE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS |
								PVC_RECURSE_PLACEHOLDERS))
	{
		Aggref	   *agg = lfirst(lc);
		List	   *partials;
		ListCell   *lp;

		if (!IsA(agg, Aggref))
			continue;
		if (!cj_aggref_splits(agg, &partials))
			return "an aggregate does not split into partial aggregates";
		foreach(lp, partials)
			if (!partial_allowed(lfirst(lp), mb))
				return psprintf("an aggregate reads more than columns of %s, or gives a collatable type",
								mb->alias);
	}
	return NULL;
}

/*
 * read_outside_aggregates
 *		What the rest of the query reads of the join outside aggregates:
 *		the Vars of the select list and HAVING, the join's conditions, and
 *		the value mb is routed by.
 */
static List *
read_outside_aggregates(PlannerInfo *root, CjJoinGroup *g, CjBaseRel *mb)
{
	List	   *exprs = NIL;
	ListCell   *lc;

	foreach(lc, pull_var_clause((Node *) list_make2(root->processed_tlist,
													root->parse->havingQual),
								PVC_INCLUDE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS |
								PVC_RECURSE_PLACEHOLDERS))
		if (IsA(lfirst(lc), Var))
			exprs = lappend(exprs, lfirst(lc));
	exprs = list_concat(exprs, cj_tree_quals(g->tree));
	if (mb->move == CJ_MOVE_REPARTITION)
		exprs = lappend(exprs, mb->move_key);
	return exprs;
}

/*
 * carried_columns
 *		The columns of mb the rest of the query reads outside aggregates
 *		(the join's conditions, grouping columns and other expressions of
 *		the select list and HAVING, the value a repartitioning routes by):
 *		what the nodes group by.  NIL when there is none (a group of all
 *		rows would join every row of the other side, even with no row) or
 *		when a system column or the whole row is read.
 */
static List *
carried_columns(PlannerInfo *root, CjJoinGroup *g, CjBaseRel *mb)
{
	List	   *exprs = read_outside_aggregates(root, g, mb);
	Bitmapset  *attnos = NULL;
	List	   *result = NIL;
	int			a = -1;

	pull_varattnos((Node *) exprs, mb->rtindex, &attnos);
	while ((a = bms_next_member(attnos, a)) >= 0)
	{
		AttrNumber	attno = a + FirstLowInvalidHeapAttributeNumber;

		if (attno <= 0)
			return NIL;
		result = lappend_int(result, attno);
	}
	return result;
}

/*
 * carried_stage_vars
 *		carried_columns for a stage: the Vars of its relations the rest of
 *		the query reads outside aggregates (each once), its rows' columns.
 */
static List *
carried_stage_vars(PlannerInfo *root, CjJoinGroup *g, CjBaseRel *sb)
{
	List	   *exprs = read_outside_aggregates(root, g, sb);
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, pull_var_clause((Node *) exprs, PVC_RECURSE_PLACEHOLDERS))
	{
		Var		   *v = lfirst(lc);
		ListCell   *lr;
		bool		seen = false;

		if (v->varlevelsup != 0 || !cj_rel_has_varno(sb, v->varno))
			continue;
		if (v->varattno <= 0)
			return NIL;
		foreach(lr, result)
			if (((Var *) lfirst(lr))->varno == v->varno &&
				((Var *) lfirst(lr))->varattno == v->varattno)
				seen = true;
		if (!seen)
			result = lappend(result, makeVar(v->varno, v->varattno, v->vartype,
											 v->vartypmod, v->varcollid, 0));
	}
	return result;
}

/*
 * column_ndistinct
 *		The distinct values of column attno of foreign leaf (tuples rows):
 *		the coordinator's own statistics of it when ANALYZE made them (as
 *		for sizes, they win), else its node's.  false when neither has any.
 */
static bool
column_ndistinct(CjLeaf *leaf, AttrNumber attno, double tuples, double *nd)
{
	HeapTuple	tup = SearchSysCache3(STATRELATTINH, ObjectIdGetDatum(leaf->relid),
									  Int16GetDatum(attno), BoolGetDatum(false));

	if (HeapTupleIsValid(tup))
	{
		double		d = ((Form_pg_statistic) GETSTRUCT(tup))->stadistinct;

		ReleaseSysCache(tup);
		if (d < 0)
			d = -d * tuples;
		if (d > 0)
		{
			*nd = d;
			return true;
		}
	}
	return cj_leaf_remote_ndistinct(leaf->relid, cj_leaf_colnames(leaf)[attno - 1], nd);
}

/* the share of mb's rows its own conditions keep, by PostgreSQL's estimate */
static double
rel_selectivity(PlannerInfo *root, CjBaseRel *mb)
{
	RelOptInfo *rel = find_base_rel(root, mb->rtindex);

	return rel->tuples > 0 ? Min(rel->rows / rel->tuples, 1.0) : 1.0;
}

/*
 * source_groups
 *		The groups mb's nodes would send: per live leaf, the distinct values
 *		of the carried columns by its node's statistics (their product,
 *		capped by the leaf's rows), thinned as mb's own conditions thin its
 *		rows (a value survives if any of its rows does), summed over the
 *		leaves (a node's leaves are grouped together, so this is an upper
 *		bound).  sel: the share of rows mb's conditions keep.  -1 when some
 *		leaf's node has no statistics for them.
 */
static double
source_groups(CjBaseRel *mb, List *carried, double sel)
{
	double		total = 0;
	int			k,
				l;

	for (k = 0; k < mb->table->nclasses; k++)
		for (l = 0; l < mb->table->classes[k].nleaves; l++)
		{
			CjLeaf	   *leaf = &mb->table->classes[k].leaves[l];
			double		tuples;
			double		pages;
			double		nd = 1;
			double		groups;
			ListCell   *lc;

			if (!mb->leaf_live[k][l])
				continue;
			if (!leaf->is_foreign)
				return -1;
			tuples = cj_rel_reltuples(leaf->relid);
			if (tuples < 0 && !cj_leaf_remote_size(leaf->relid, &tuples, &pages))
				return -1;
			if (tuples < 1)
				continue;
			foreach(lc, carried)
			{
				double		d;

				if (!column_ndistinct(leaf, lfirst_int(lc), tuples, &d))
					return -1;
				nd *= d;
			}
			nd = Min(nd, tuples);
			/* a value with tuples / nd rows keeps at least one of them */
			groups = sel >= 1.0 ? nd : nd * (1.0 - pow(1.0 - sel, tuples / nd));
			total += Max(Min(groups, tuples * sel), 1.0);
		}
	return total;
}

/* the rows of leaf by the coordinator's statistics or its node's, or -1 */
static double
leaf_tuples(CjLeaf *leaf)
{
	double		tuples = cj_rel_reltuples(leaf->relid);
	double		pages;

	if (tuples < 0 && (!leaf->is_foreign ||
					   !cj_leaf_remote_size(leaf->relid, &tuples, &pages)))
		return -1;
	return tuples;
}

/*
 * stage_groups
 *		The groups a stage's sources would send, grouping its rows by the
 *		carried Vars: each source node groups its share of the stage's rows,
 *		among the distinct values its columns' tables have (a column's by
 *		its leaves' statistics: their sum for the hash key of its table,
 *		whose leaves hold different values, else the largest leaf's, since
 *		the table's other partitioning spreads the same values over all of
 *		them; the product over the columns).  A node's rows take as many
 *		values as random draws would.  -1 when a column is of a table the
 *		stage's group moves, or a leaf's node has no statistics for it.
 */
static double
stage_groups(CjBaseRel *sb, List *carried)
{
	int			nnodes = Max(list_length(cj_stage_source_nodes(sb)), 1);
	double		node_rows = Max(sb->stage_rows, 1) / nnodes;
	double		values = 1;
	ListCell   *lc;

	foreach(lc, carried)
	{
		Var		   *v = lfirst(lc);
		CjBaseRel  *br = NULL;
		ListCell   *lr;
		double		sum = 0;
		double		largest = 0;
		bool		key;
		int			k,
					l;

		foreach(lr, sb->stage->rels)
			if (((CjBaseRel *) lfirst(lr))->rtindex == v->varno)
				br = lfirst(lr);
		if (br == NULL || br->table == NULL || br->move != CJ_MOVE_NONE)
			return -1;
		key = br->table->partnatts == 1 && br->table->partattrs[0] == v->varattno &&
			br->table->strategy == PARTITION_STRATEGY_HASH;
		for (k = 0; k < br->table->nclasses; k++)
			for (l = 0; l < br->table->classes[k].nleaves; l++)
			{
				CjLeaf	   *leaf = &br->table->classes[k].leaves[l];
				double		tuples;
				double		nd;

				if (!br->leaf_live[k][l])
					continue;
				tuples = leaf_tuples(leaf);
				if (tuples < 0)
					return -1;
				if (tuples < 1)
					continue;
				if (!column_ndistinct(leaf, v->varattno, tuples, &nd))
					return -1;
				sum += nd;
				largest = Max(largest, nd);
			}
		values *= Max(key ? sum : largest, 1);
	}
	/* of `values` equally likely values, node_rows draws take this many */
	return nnodes * values * (1.0 - exp(-node_rows / values));
}

/*
 * cj_single_table_groups
 *		See planner_internal.h: the groups the tasks of g, one sharded table
 *		alone, send when grouping by group_exprs, all columns of it; -1 when
 *		the expressions are no plain columns or a node has no statistics.
 */
double
cj_single_table_groups(PlannerInfo *root, CjJoinGroup *g, List *group_exprs)
{
	CjBaseRel  *br;
	List	   *carried = NIL;
	ListCell   *lc;

	if (list_length(g->rels) != 1 || group_exprs == NIL)
		return -1;
	br = (CjBaseRel *) linitial(g->rels);
	foreach(lc, group_exprs)
	{
		Var		   *var = (Var *) lfirst(lc);

		if (!IsA(var, Var) || var->varno != br->rtindex || var->varattno <= 0 ||
			var->varlevelsup != 0)
			return -1;
		carried = list_append_unique_int(carried, var->varattno);
	}
	return source_groups(br, carried, rel_selectivity(root, br));
}

/* a reason PreAggregate(mb) was not followed, for its error */
static void
refuse_hint(CjHint *hint, const char *why)
{
	if (hint != NULL && why != NULL &&
		!list_member(hint->failures, makeString((char *) why)))
		hint->failures = lappend(hint->failures, makeString(pstrdup(why)));
}

bool
cj_pre_aggregation_possible(PlannerInfo *root, CjJoinGroup *g)
{
	CjBaseRel  *mb = moved_rel(g);

	return mb != NULL && cj_pre_aggregated_rows(root, g, mb) >= 0;
}

/*
 * groups_of
 *		The groups mb (g's moved table) would send, or -1 (with *why) when
 *		grouping it is not allowed; with PreAggregate(mb) the rows stand in
 *		for statistics that are missing.  Worked out once per group: the
 *		join's choice of what moves and every aggregation path ask.
 */
static double
groups_of(PlannerInfo *root, CjJoinGroup *g, CjBaseRel *mb, List **carried,
		  const char **why)
{
	if (!g->preagg_known)
	{
		g->preagg_known = true;
		g->preagg_groups = -1;
		g->preagg_carried = NIL;
		g->preagg_why = query_refusal(root, g, mb);
		if (g->preagg_why == NULL)
			g->preagg_carried = mb->stage != NULL ?
				carried_stage_vars(root, g, mb) : carried_columns(root, g, mb);
		if (g->preagg_why == NULL && g->preagg_carried == NIL)
			g->preagg_why = psprintf("nothing else of %s is read to group it by, or a system column or the whole row is",
									 mb->alias);
		if (g->preagg_why == NULL)
		{
			g->preagg_groups = mb->stage != NULL ?
				stage_groups(mb, g->preagg_carried) :
				source_groups(mb, g->preagg_carried, rel_selectivity(root, mb));
			if (g->preagg_groups < 0 && cj_pre_aggregate_hint(root, mb->rtindex) != NULL)
				g->preagg_groups = cj_moved_table_rows(root, mb);
			if (g->preagg_groups < 0)
				g->preagg_why = psprintf("the nodes of %s have no statistics of the columns it would be grouped by",
										 mb->alias);
		}
	}
	*carried = g->preagg_carried;
	*why = g->preagg_why;
	return g->preagg_groups;
}

double
cj_pre_aggregated_rows(PlannerInfo *root, CjJoinGroup *g, CjBaseRel *mb)
{
	List	   *carried;
	const char *why;
	double		groups;

	if (moved_rel(g) != mb)
		return -1;
	groups = groups_of(root, g, mb, &carried, &why);
	if (groups < 0)
	{
		refuse_hint(cj_pre_aggregate_hint(root, mb->rtindex), why);
		return -1;
	}
	return mb->move == CJ_MOVE_BROADCAST ? groups * cj_task_node_count(g) : groups;
}

/*
 * combined_sql
 *		What a task computes, over the moved groups' column col of table
 *		rtindex, in place of the partial aggregate agg over the moved rows:
 *		counts and sums are summed (cast back to the partial's type), the
 *		others are their own combination.
 */
static char *
combined_sql(Aggref *agg, Index rtindex, const char *col)
{
	const char *name = get_func_name(agg->aggfnoid);

	if (strcmp(name, "count") == 0)
		return psprintf("COALESCE(pg_catalog.sum(r%u.%s), 0)::pg_catalog.int8",
						rtindex, col);
	if (strcmp(name, "sum") == 0)
		return psprintf("(pg_catalog.sum(r%u.%s))::%s", rtindex, col,
						cj_type_name(agg->aggtype, -1));
	return psprintf("pg_catalog.%s(r%u.%s)", quote_identifier(name), rtindex, col);
}

bool
cj_pre_aggregate(PlannerInfo *root, CjJoinGroup *g, CjUpperSpec *spec,
				 CjJoinGroup **pg, CjUpperSpec **pspec, Cost *extra_cost,
				 bool *forced)
{
	CjBaseRel  *mb = moved_rel(g);
	CjBaseRel  *pmb = NULL;
	CjJoinGroup *ng;
	CjUpperSpec *ns;
	CjHint	   *hint;
	List	   *carried;
	List	   *remote_sql = NIL;
	StringInfoData names;
	const char *why;
	double		groups;
	ListCell   *lc;

	if (mb == NULL)
		return false;
	hint = cj_pre_aggregate_hint(root, mb->rtindex);
	groups = groups_of(root, g, mb, &carried, &why);
	if (groups < 0)
	{
		refuse_hint(hint, why);
		return false;
	}

	ng = palloc(sizeof(CjJoinGroup));
	memcpy(ng, g, sizeof(CjJoinGroup));
	ng->preagg_known = false;	/* its moved table is grouped already */
	ng->rels = cj_copy_rels(g->rels);
	foreach(lc, ng->rels)
		if (((CjBaseRel *) lfirst(lc))->rtindex == mb->rtindex)
			pmb = lfirst(lc);
	Assert(pmb != NULL);
	pmb->preagg = NIL;
	pmb->preagg_rows = groups;
	pmb->move_name = psprintf("%s_g", mb->move_name);
	if (mb->stage != NULL)
	{
		/* its tasks return what they did; the sources group it */
		pmb->stage_task_vars = mb->stage_vars;
		pmb->stage_vars = carried;
	}
	else
		pmb->move_attnos = carried;

	foreach(lc, spec->remote_exprs)
	{
		Aggref	   *agg = lfirst(lc);
		CjPreAgg   *pa;

		if (foreach_current_index(lc) < spec->ngroup)
		{
			remote_sql = lappend(remote_sql, NULL);
			continue;
		}
		if (!IsA(agg, Aggref) || !partial_allowed(agg, mb))
		{
			refuse_hint(hint, psprintf("an aggregate reads more than columns of %s",
									   mb->alias));
			return false;
		}
		pa = palloc(sizeof(CjPreAgg));
		pa->agg = agg;
		pa->column = psprintf("colojoin_agg_%d", list_length(pmb->preagg) + 1);
		pmb->preagg = lappend(pmb->preagg, pa);
		remote_sql = lappend(remote_sql, combined_sql(agg, mb->rtindex, pa->column));
	}

	initStringInfo(&names);
	foreach(lc, carried)
	{
		if (mb->stage != NULL)
		{
			Var		   *v = lfirst(lc);
			RangeTblEntry *rte = planner_rt_fetch(v->varno, root);

			appendStringInfo(&names, "%s%s.%s", names.len ? ", " : "",
							 quote_identifier(rte->eref->aliasname),
							 quote_identifier(get_attname(rte->relid, v->varattno, false)));
		}
		else
			appendStringInfo(&names, "%s%s", names.len ? ", " : "",
							 quote_identifier(get_attname(mb->relid, lfirst_int(lc), false)));
	}
	ng->move_text = psprintf("%s, grouped by %s on its nodes first",
							 g->move_text ? g->move_text : "", names.data);

	ns = palloc(sizeof(CjUpperSpec));
	memcpy(ns, spec, sizeof(CjUpperSpec));
	ns->remote_sql = remote_sql;

	/*
	 * What the path adds over the same aggregation of the moved rows
	 * themselves: the sources' own aggregation of every row they read, and
	 * its moves (the groups, not the rows), which the path counts itself
	 * unless a hint asked for the move (cj_make_upper_path; a
	 * PreAggregate hint makes the path cost nothing anyway).
	 */
	*extra_cost = (g->hints_used != NIL ?
				   cj_moves_cost(root, ng) - cj_moves_cost(root, g) : 0) +
		(mb->stage != NULL ? mb->stage_rows : find_base_rel(root, mb->rtindex)->rows) *
		cpu_operator_cost *
		(list_length(carried) + list_length(pmb->preagg)) /
		Max(cj_task_node_count(g), 1);
	*pg = ng;
	*pspec = ns;
	*forced = (hint != NULL);
	if (hint != NULL)
	{
		hint->used = true;
		ng->hints_used = lappend(list_copy(g->hints_used), hint);
	}
	return true;
}

/* partial_vars' Var for each partial aggregate of partials, in the result */
typedef struct PartialVars
{
	List	   *partials;		/* Aggref * */
	List	   *vars;			/* Var *, one each */
} PartialVars;

static Node *
partials_to_vars(Node *node, PartialVars *pv)
{
	ListCell   *lp;
	ListCell   *lv;

	if (node == NULL)
		return NULL;
	if (IsA(node, Aggref))
		forboth(lp, pv->partials, lv, pv->vars)
			if (lfirst(lp) == node)
				return (Node *) copyObject(lfirst(lv));
	return expression_tree_mutator(node, partials_to_vars, pv);
}

/*
 * Whether every function a combination calls is PostgreSQL's own: the
 * tasks run it on the nodes, which have colojoin's schema (variance's
 * final function) no more than the coordinator's extensions.
 */
static bool
foreign_function_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, FuncExpr) &&
		get_func_namespace(((FuncExpr *) node)->funcid) != PG_CATALOG_NAMESPACE)
		return true;
	return expression_tree_walker(node, foreign_function_walker, context);
}

/*
 * cj_pre_aggregate_subquery
 *		A subquery that groups the one sharded table mb it reads, mb moved
 *		(repartitioned) by a column the subquery groups by, every condition
 *		of the subquery applied before the move (lateral.c): mb's nodes
 *		group its rows by the subquery's grouping columns and send each
 *		group's partial aggregates, which the task combines in the
 *		subquery's own GROUP BY.  A group's partials all reach the class of
 *		its routing value, as its rows would have: an aggregate's output
 *		moved as a stage, node to node, instead of every row it reads.
 *
 *		Sets mb's moved columns (the grouping columns) and partial
 *		aggregates, and returns the subquery's select list expressions then
 *		its HAVING (NULL when none) with every aggregate replaced by the
 *		combination of its partials, each partial standing as a Var of mb
 *		(attribute number -1000 - k) that *partial_vars lists, in the order
 *		of mb->preagg.  NIL, leaving mb as it is, when the subquery is not
 *		of that shape, an aggregate does not split into partials mb's nodes
 *		compute alike, the nodes have no statistics of the grouping columns
 *		(no guess that rows shrink), or grouping would not send fewer rows.
 */
List *
cj_pre_aggregate_subquery(CjBaseRel *mb, Query *q, List **partial_vars)
{
	List	   *attnos = NIL;
	List	   *exprs = NIL;
	List	   *split;
	List	   *partials = NIL;
	PartialVars pv = {NIL, NIL};
	List	   *preagg = NIL;
	double		groups;
	ListCell   *lc;

	if (!colojoin_enable_pre_aggregation || !colojoin_enable_aggregate_pushdown ||
		mb->table == NULL || mb->move != CJ_MOVE_REPARTITION)
		return NIL;
	if (q->groupClause == NIL || q->groupingSets != NIL || q->hasTargetSRFs ||
		q->hasWindowFuncs || q->hasSubLinks || q->distinctClause != NIL ||
		q->sortClause != NIL || q->limitCount != NULL || q->limitOffset != NULL ||
		!grouping_is_hashable(q->groupClause))
		return NIL;

	/* it groups by plain columns of mb, and reads no other outside aggregates */
	foreach(lc, q->groupClause)
	{
		Var		   *v = (Var *) get_sortgroupclause_expr(lfirst(lc), q->targetList);

		if (!IsA(v, Var) || v->varno != mb->rtindex || v->varattno <= 0 ||
			v->varlevelsup != 0)
			return NIL;
		attnos = list_append_unique_int(attnos, v->varattno);
	}
	foreach(lc, q->targetList)
		exprs = lappend(exprs, ((TargetEntry *) lfirst(lc))->expr);
	exprs = lappend(exprs, q->havingQual);
	foreach(lc, pull_var_clause((Node *) exprs, PVC_INCLUDE_AGGREGATES |
								PVC_INCLUDE_PLACEHOLDERS))
	{
		Var		   *v = lfirst(lc);

		if (IsA(v, Aggref))
			continue;
		if (!IsA(v, Var) || v->varno != mb->rtindex ||
			!list_member_int(attnos, v->varattno))
			return NIL;
	}

	split = cj_split_aggregates(exprs, &partials);
	if (split == NIL || partials == NIL ||
		foreign_function_walker((Node *) split, NULL))
		return NIL;
	foreach(lc, partials)
		if (!partial_allowed(lfirst(lc), mb))
			return NIL;

	groups = source_groups(mb, attnos, mb->subquery_tuples > 0 ?
						   Min(mb->subquery_rows / mb->subquery_tuples, 1.0) : 1.0);
	if (groups < 0 || groups >= mb->subquery_rows)
		return NIL;

	foreach(lc, partials)
	{
		Aggref	   *agg = lfirst(lc);
		CjPreAgg   *pa = palloc(sizeof(CjPreAgg));

		pa->agg = agg;
		pa->column = psprintf("colojoin_agg_%d", foreach_current_index(lc) + 1);
		preagg = lappend(preagg, pa);
		pv.partials = lappend(pv.partials, agg);
		pv.vars = lappend(pv.vars,
						  makeVar(mb->rtindex, (AttrNumber) (-1000 - foreach_current_index(lc)),
								  agg->aggtype, -1, agg->aggcollid, 0));
	}
	mb->preagg = preagg;
	mb->preagg_rows = groups;
	mb->move_attnos = attnos;
	*partial_vars = pv.vars;
	return (List *) partials_to_vars((Node *) split, &pv);
}
