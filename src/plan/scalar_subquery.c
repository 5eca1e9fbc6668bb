/*-------------------------------------------------------------------------
 *
 * scalar_subquery.c
 *	  Correlated scalar subqueries over sharded tables, in a WHERE clause
 *	  or a select list, rewritten as LATERAL subqueries before PostgreSQL
 *	  plans the query.
 *
 *	  PostgreSQL runs WHERE o_totalprice < (SELECT max(l_extendedprice)
 *	  FROM lineitem WHERE l_orderkey = o_orderkey) as a SubPlan: a round
 *	  trip to a node for every row of orders, on the coordinator, which no
 *	  join hook ever sees.  The same subquery as a LATERAL item of the FROM
 *	  list is a join, and lateral.c runs a join with a LATERAL subquery
 *	  correlated on the partition key inside each task.  The two forms
 *	  give the same rows exactly when the subquery always yields one row:
 *	  an aggregate with no GROUP BY, HAVING, LIMIT, OFFSET, DISTINCT,
 *	  window function or set-returning function, whose one output column
 *	  then stands for the subquery wherever it appeared (a count over no
 *	  rows is 0 there as here, a max is NULL).  Nothing volatile inside,
 *	  and only at query levels without FOR UPDATE (in the select list: of
 *	  a level that neither aggregates nor limits); the subquery's WHERE
 *	  must equate the partition key of a sharded table of postgres_fdw
 *	  leaves with a value of the level above, which must read a sharded
 *	  table too (itself or through a subquery in FROM: a view).  Elsewhere
 *	  the query is left as written: correlated otherwise, the tasks could
 *	  not run it, and the SubPlan costs what the LATERAL item would.
 *
 *	  Owns the rewrite only: whether the tasks can run the result is
 *	  lateral.c's decision, made later with everything else; when colojoin
 *	  declines, PostgreSQL runs the LATERAL subquery once per outer row, as
 *	  it ran the SubPlan.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"

#include "metadata/metadata.h"
#include "plan/planner_internal.h"

/* the FROM items a query level gained, while its WHERE is rewritten */
typedef struct LateralizeContext
{
	Query	   *query;
	int			added;
} LateralizeContext;

/* a table whose leaves are all postgres_fdw foreign tables */
bool
cj_is_sharded_relid(Oid relid)
{
	CjTable    *t;

	if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
		return false;
	t = cj_get_table(relid);
	return t != NULL && t->all_foreign;
}

/* q reads a sharded table, itself or through a subquery in FROM (a view) */
static bool
reads_sharded_table(Query *q)
{
	ListCell   *lc;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_RELATION && cj_is_sharded_relid(rte->relid))
			return true;
		if (rte->rtekind == RTE_SUBQUERY && rte->subquery != NULL &&
			reads_sharded_table(rte->subquery))
			return true;
	}
	return false;
}

/* e reads the level above and nothing of its own level */
static bool
outer_only(Node *e)
{
	return contain_vars_of_level(e, 1) && !contain_vars_of_level(e, 0) &&
		!contain_volatile_functions(e);
}

/*
 * correlated_on_key
 *		Whether s's WHERE equates the one-column partition key of a sharded
 *		table it reads with a value of the level above: what lateral.c needs
 *		to run it in the tasks.  Otherwise the SubPlan stays, as cheap as
 *		the LATERAL item would be and what users know from PostgreSQL.
 */
static bool
correlated_on_key(Query *s)
{
	List	   *conjuncts;
	ListCell   *lc;

	if (s->jointree == NULL || s->jointree->quals == NULL)
		return false;
	conjuncts = make_ands_implicit((Expr *) s->jointree->quals);
	foreach(lc, conjuncts)
	{
		OpExpr	   *op = lfirst(lc);
		Var		   *v;
		Node	   *other;
		RangeTblEntry *rte;
		CjTable    *t;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2)
			continue;
		v = linitial(op->args);
		other = lsecond(op->args);
		if (!IsA(v, Var))
		{
			v = lsecond(op->args);
			other = linitial(op->args);
		}
		if (!IsA(v, Var) || v->varlevelsup != 0 || !outer_only(other) ||
			!op_hashjoinable(op->opno, exprType((Node *) v)))
			continue;
		rte = rt_fetch(v->varno, s->rtable);
		if (rte->rtekind != RTE_RELATION || !cj_is_sharded_relid(rte->relid))
			continue;
		t = cj_get_table(rte->relid);
		if (t->partnatts == 1 && t->partattrs[0] == v->varattno)
			return true;
	}
	return false;
}

/* the target entry of the one column s returns, or NULL */
static TargetEntry *
only_column(Query *s)
{
	TargetEntry *found = NULL;
	ListCell   *lc;

	foreach(lc, s->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		if (tle->resjunk)
			continue;
		if (found != NULL)
			return NULL;
		found = tle;
	}
	return found;
}

/*
 * one_row_subquery
 *		Whether sl is a scalar subquery correlated to the level that holds
 *		it and certain to yield exactly one row for every outer row.
 */
static bool
one_row_subquery(SubLink *sl)
{
	Query	   *s;

	if (sl->subLinkType != EXPR_SUBLINK || !IsA(sl->subselect, Query))
		return false;
	s = (Query *) sl->subselect;
	if (s->commandType != CMD_SELECT || s->setOperations != NULL ||
		s->cteList != NIL || !s->hasAggs || s->groupClause != NIL ||
		s->groupingSets != NIL || s->havingQual != NULL ||
		s->hasWindowFuncs || s->hasTargetSRFs || s->limitCount != NULL ||
		s->limitOffset != NULL || s->distinctClause != NIL ||
		s->rowMarks != NIL || s->hasForUpdate || s->hasModifyingCTE ||
		only_column(s) == NULL)
		return false;
	/*
	 * Correlated on a key, so not one PostgreSQL runs once as an InitPlan.
	 * (An aggregate of the level above inside it would make that level
	 * aggregate: neither its WHERE nor a select list rewritten here can
	 * hold one.)
	 */
	return !contain_volatile_functions((Node *) s) && correlated_on_key(s);
}

/* sl's subquery as a new LATERAL item of cxt->query; the Var of its value */
static Node *
lateral_item(SubLink *sl, LateralizeContext *cxt)
{
	Query	   *q = cxt->query;
	Query	   *s = (Query *) sl->subselect;
	TargetEntry *tle = only_column(s);
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	RangeTblRef *rtr = makeNode(RangeTblRef);
	char	   *name;

	cxt->added++;
	name = cxt->added == 1 ? pstrdup("scalar_subquery") :
		psprintf("scalar_subquery_%d", cxt->added);

	/*
	 * OFFSET 0 changes no row, and keeps PostgreSQL from moving the WHERE
	 * clause's conditions on the value into the subquery's own planning,
	 * where lateral.c could not read them and would decline.
	 */
	s->limitOffset = (Node *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
										Int64GetDatum(0), false, FLOAT8PASSBYVAL);
	s->limitOption = LIMIT_OPTION_COUNT;
	rte->rtekind = RTE_SUBQUERY;
	rte->subquery = s;
	rte->lateral = true;
	rte->inh = false;
	rte->inFromCl = true;
	rte->alias = makeAlias(name, NIL);
	rte->eref = makeAlias(name, list_make1(makeString(pstrdup(tle->resname ?
																tle->resname : "value"))));
	q->rtable = lappend(q->rtable, rte);
	rtr->rtindex = list_length(q->rtable);
	q->jointree->fromlist = lappend(q->jointree->fromlist, rtr);

	return (Node *) makeVar(rtr->rtindex, tle->resno,
							exprType((Node *) tle->expr),
							exprTypmod((Node *) tle->expr),
							exprCollation((Node *) tle->expr), 0);
}

static void lateralize_level(Query *q);

static Node *
lateralize_mutator(Node *node, LateralizeContext *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, SubLink))
	{
		SubLink    *sl = (SubLink *) node;

		if (one_row_subquery(sl))
		{
			lateralize_level((Query *) sl->subselect);
			return lateral_item(sl, cxt);
		}
		return node;
	}
	return expression_tree_mutator(node, lateralize_mutator, cxt);
}

/* every sublink's subquery is a level of its own (IN, EXISTS, ...) */
static bool
sublink_levels_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, SubLink))
	{
		SubLink    *sl = (SubLink *) node;

		if (IsA(sl->subselect, Query))
			lateralize_level((Query *) sl->subselect);
		return sublink_levels_walker(sl->testexpr, context);
	}
	if (IsA(node, Query))
		return false;
	return expression_tree_walker(node, sublink_levels_walker, context);
}

static void
lateralize_level(Query *q)
{
	ListCell   *lc;

	/* the levels below: subqueries in FROM, WITH queries */
	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_SUBQUERY && rte->subquery != NULL)
			lateralize_level(rte->subquery);
	}
	foreach(lc, q->cteList)
	{
		CommonTableExpr *cte = lfirst(lc);

		if (IsA(cte->ctequery, Query))
			lateralize_level((Query *) cte->ctequery);
	}
	if (!q->hasSubLinks)
		return;

	if (q->commandType == CMD_SELECT && q->setOperations == NULL &&
		q->jointree != NULL && q->rowMarks == NIL && !q->hasForUpdate &&
		reads_sharded_table(q))
	{
		LateralizeContext cxt = {q, 0};

		if (q->jointree->quals != NULL)
			q->jointree->quals = lateralize_mutator(q->jointree->quals, &cxt);

		/*
		 * The select list too where each output row is one row of FROM (no
		 * aggregate, grouping, window or set-returning function) and every
		 * such row is computed anyway: with LIMIT, PostgreSQL may compute a
		 * SubPlan of the select list only for the rows it returns.
		 */
		if (!q->hasAggs && q->groupClause == NIL && q->groupingSets == NIL &&
			q->havingQual == NULL && !q->hasWindowFuncs && !q->hasTargetSRFs &&
			q->limitCount == NULL && q->limitOffset == NULL)
			q->targetList = (List *) lateralize_mutator((Node *) q->targetList,
														&cxt);
	}
	/* and the sublinks left anywhere in this level */
	(void) query_tree_walker(q, sublink_levels_walker, NULL,
							 QTW_IGNORE_RT_SUBQUERIES | QTW_IGNORE_CTE_SUBQUERIES);
}

/*
 * cj_lateralize_scalar_subqueries
 *		See the file header: rewrites parse in place, at every level.
 */
void
cj_lateralize_scalar_subqueries(Query *parse)
{
	lateralize_level(parse);
}
