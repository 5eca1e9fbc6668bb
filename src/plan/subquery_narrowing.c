/*-------------------------------------------------------------------------
 *
 * subquery_narrowing.c
 *	  A subquery (or a WITH query read once) that groups a sharded table by
 *	  a column the query joins to a sharded table with conditions of its
 *	  own computes every group, though the join keeps only those whose
 *	  value that table's remaining rows hold: a WITH query averaging the
 *	  quantity of every part's line items, joined to the parts of two
 *	  containers, groups all of lineitem for a twentieth of it.  Written
 *	  with EXISTS over that table and its conditions in its WHERE, the
 *	  subquery groups only those rows, and colojoin plans the EXISTS like
 *	  any semi join (the table broadcast into the subquery's group, say).
 *	  A group of the column is kept whole or dropped, never changed, so
 *	  the rows are the same; which costs less is the planner's estimate, so
 *	  the query is planned both ways and the cheaper plan is kept.
 *
 *	  Owns: the rewrite of a copy of the query (cj_narrowed_query) and the
 *	  rules that make it exact.  Does not: plan either form or choose
 *	  (planner.c), or narrow a subquery the tasks run (lateral.c's
 *	  find_semi_filters, which needs no second plan: it only shrinks what
 *	  one task groups).
 *
 *	  Only between sharded tables (plain PostgreSQL use keeps its plans),
 *	  only in inner joins of one query level, never for a table with row
 *	  security or through a security-barrier view, and only equalities the
 *	  subquery's grouping agrees with.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "catalog/pg_am.h"
#include "commands/defrem.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "plan/planner_internal.h"

/* one narrowing: the subquery's query, and the EXISTS conditions for it */
typedef struct Narrowing
{
	Query	   *sq;				/* the subquery's (or WITH query's) query */
	Index		srti;			/* its item in the level */
	Index		trti;			/* the table narrowing it */
	List	   *equalities;		/* over the subquery's column (level up) and
								 * the table as range table index 1 */
	List	   *conditions;		/* the table's own, as range table index 1 */
} Narrowing;

/* a sharded table read with its partitions (not ONLY) */
static bool
sharded_rte(RangeTblEntry *rte)
{
	return rte->rtekind == RTE_RELATION && rte->inh &&
		cj_is_sharded_relid(rte->relid);
}

/*
 * inner_scope
 *		The items of a level that only inner joins combine (nothing under an
 *		outer join), and the conditions over them: the WHERE and the ON
 *		clauses of those inner joins, which mean the same there.
 */
static void
inner_scope(Node *jtnode, Relids *items, List **conds)
{
	ListCell   *lc;

	if (IsA(jtnode, RangeTblRef))
		*items = bms_add_member(*items, ((RangeTblRef *) jtnode)->rtindex);
	else if (IsA(jtnode, FromExpr))
	{
		foreach(lc, ((FromExpr *) jtnode)->fromlist)
			inner_scope(lfirst(lc), items, conds);
		*conds = cj_conjuncts(((FromExpr *) jtnode)->quals, *conds);
	}
	else if (IsA(jtnode, JoinExpr) && ((JoinExpr *) jtnode)->jointype == JOIN_INNER)
	{
		JoinExpr   *j = (JoinExpr *) jtnode;

		inner_scope(j->larg, items, conds);
		inner_scope(j->rarg, items, conds);
		*conds = cj_conjuncts(j->quals, *conds);
	}
}

/* the query of item rti when it is a subquery or a WITH query read once */
static Query *
subquery_of(Query *q, Index rti)
{
	RangeTblEntry *rte = rt_fetch(rti, q->rtable);
	ListCell   *lc;

	if (rte->rtekind == RTE_SUBQUERY)
		return rte->security_barrier ? NULL : rte->subquery;
	if (rte->rtekind != RTE_CTE || rte->ctelevelsup != 0 || rte->self_reference)
		return NULL;
	foreach(lc, q->cteList)
	{
		CommonTableExpr *cte = lfirst(lc);

		if (strcmp(cte->ctename, rte->ctename) == 0)
			return (cte->cterefcount == 1 && !cte->cterecursive &&
					cte->ctematerialized != CTEMaterializeAlways &&
					IsA(cte->ctequery, Query)) ? (Query *) cte->ctequery : NULL;
	}
	return NULL;
}

/*
 * grouped_column
 *		The expression behind output column attno of sq when a condition on
 *		it can move into sq's WHERE: a column of a sharded table of sq that
 *		sq groups by (by its type's default equality), or any column when sq
 *		neither groups, aggregates nor keeps distinct rows by other columns;
 *		sq computes nothing volatile, limits nothing, and has no window.
 */
static Var *
grouped_column(Query *sq, AttrNumber attno)
{
	TargetEntry *tle = attno > 0 ? get_tle_by_resno(sq->targetList, attno) : NULL;
	Var		   *v;
	List	   *clauses;
	SortGroupClause *sgc;

	if (tle == NULL || tle->resjunk || !IsA(tle->expr, Var) ||
		sq->commandType != CMD_SELECT || sq->utilityStmt != NULL ||
		sq->setOperations != NULL || sq->limitCount != NULL ||
		sq->limitOffset != NULL || sq->hasWindowFuncs || sq->hasTargetSRFs ||
		sq->groupingSets != NIL || sq->hasForUpdate || sq->rowMarks != NIL ||
		sq->hasModifyingCTE || sq->hasRecursive ||
		contain_volatile_functions((Node *) sq))
		return NULL;
	v = (Var *) tle->expr;
	if (v->varlevelsup != 0 || v->varattno <= 0 ||
		!sharded_rte(rt_fetch(v->varno, sq->rtable)))
		return NULL;
	if (sq->groupClause != NIL)
		clauses = sq->groupClause;
	else if (sq->hasAggs || sq->havingQual != NULL)
		return NULL;
	else if (sq->distinctClause != NIL)
		clauses = sq->distinctClause;
	else
		return v;
	sgc = tle->ressortgroupref != 0 ?
		get_sortgroupref_clause_noerr(tle->ressortgroupref, clauses) : NULL;
	if (sgc == NULL ||
		sgc->eqop != lookup_type_cache(v->vartype, TYPECACHE_EQ_OPR)->eq_opr)
		return NULL;
	return v;
}

/*
 * cj_equality_groups_alike
 *		Whether op, comparing column v with something, is an equality that
 *		PostgreSQL's grouping by v agrees with: of the default btree family
 *		of v's type, in v's collation (values it calls equal fall in one
 *		group, and equality is transitive in a family), and leakproof, so
 *		that evaluating it on rows before other conditions shows nothing.
 *		lateral.c narrows subqueries the tasks run by the same rule.
 */
bool
cj_equality_groups_alike(OpExpr *op, Var *v)
{
	Oid			opclass = GetDefaultOpClass(v->vartype, BTREE_AM_OID);

	return OidIsValid(opclass) &&
		get_op_opfamily_strategy(op->opno, get_opclass_family(opclass)) == BTEqualStrategyNumber &&
		get_func_leakproof(get_opcode(op->opno)) &&
		(!OidIsValid(op->inputcollid) || op->inputcollid == v->varcollid);
}

/* whether node reads a column of an outer query level */
static bool
reads_outer_level(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varlevelsup > 0;
	if (IsA(node, PlaceHolderVar) || IsA(node, Aggref) || IsA(node, GroupingFunc))
		return true;
	return expression_tree_walker(node, reads_outer_level, context);
}

/* whether node is an expression of table rti of the level alone */
static bool
of_table_alone(Node *node, Index rti)
{
	Relids		varnos = pull_varnos(NULL, node);
	int			only;

	return bms_get_singleton_member(varnos, &only) && only == (int) rti &&
		!reads_outer_level(node, NULL) && !contain_volatile_functions(node) &&
		!checkExprHasSubLink(node);
}

/*
 * equality_sides
 *		For a condition of the level: the subquery item's column (*svar) and
 *		the table on the other side (*trti), when the condition is an
 *		equality of the column type's default btree family in its collation
 *		(what the grouping compares by), leakproof, whose other side reads
 *		that table alone.
 */
static bool
equality_sides(Node *cond, Var **svar, Index *trti)
{
	OpExpr	   *op = (OpExpr *) cond;
	int			side;

	if (!IsA(op, OpExpr) || list_length(op->args) != 2)
		return false;
	for (side = 0; side < 2; side++)
	{
		Node	   *mine = list_nth(op->args, side);
		Node	   *theirs = list_nth(op->args, 1 - side);
		int			rti;

		while (IsA(mine, RelabelType))
			mine = (Node *) ((RelabelType *) mine)->arg;
		if (!IsA(mine, Var) || ((Var *) mine)->varlevelsup != 0 ||
			!bms_get_singleton_member(pull_varnos(NULL, theirs), &rti) ||
			rti == (int) ((Var *) mine)->varno || !of_table_alone(theirs, rti))
			continue;
		if (!cj_equality_groups_alike(op, (Var *) mine))
			continue;
		*svar = (Var *) mine;
		*trti = (Index) rti;
		return true;
	}
	return false;
}

/* the equality as the EXISTS reads it (see narrow_level) */
typedef struct
{
	Var		   *svar;
	Var		   *inner;
} InnerColumnContext;

static Node *
inner_column(Node *node, InnerColumnContext *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && equal(node, cxt->svar))
		return copyObject((Node *) cxt->inner);
	return expression_tree_mutator(node, inner_column, cxt);
}

/* the conditions of the level on table trti alone, as range table index 1 */
static List *
own_conditions(List *conds, Index trti)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, conds)
	{
		Node	   *c = lfirst(lc);

		if (!of_table_alone(c, trti))
			continue;
		c = copyObject(c);
		ChangeVarNodes(c, trti, 1, 0);
		result = lappend(result, c);
	}
	return result;
}

/* EXISTS (SELECT FROM table WHERE equalities AND its own conditions) */
static Node *
exists_clause(Query *q, Narrowing *n)
{
	Query	   *sub = makeNode(Query);
	RangeTblEntry *trte = copyObject(rt_fetch(n->trti, q->rtable));
	SubLink    *link = makeNode(SubLink);
	RangeTblRef *ref = makeNode(RangeTblRef);

	ref->rtindex = 1;
	sub->commandType = CMD_SELECT;
	sub->querySource = QSRC_ORIGINAL;
	sub->canSetTag = true;
	sub->rtable = list_make1(trte);
	sub->jointree = makeFromExpr(list_make1(ref),
								 (Node *) make_ands_explicit(list_concat(list_copy(n->equalities),
																		 n->conditions)));
	link->subLinkType = EXISTS_SUBLINK;
	link->subLinkId = 0;
	link->subselect = (Node *) sub;
	link->location = -1;
	return (Node *) link;
}

/*
 * narrow_level
 *		Narrow the subqueries of one level, then look inside every subquery
 *		and WITH query of it for levels of their own.  Returns the number of
 *		narrowings made; *what names them for the decision log.
 */
static int
narrow_level(Query *q, StringInfo what)
{
	Relids		items = NULL;
	List	   *conds = NIL;
	List	   *narrowings = NIL;
	ListCell   *lc;
	int			made = 0;

	if (q->commandType == CMD_SELECT && q->jointree != NULL && !q->hasForUpdate)
		inner_scope((Node *) q->jointree, &items, &conds);
	foreach(lc, conds)
	{
		Var		   *svar;
		Index		trti;
		Query	   *sq;
		RangeTblEntry *trte;
		InnerColumnContext cxt;
		Narrowing  *n = NULL;
		ListCell   *ln;
		Node	   *eq;

		if (!equality_sides(lfirst(lc), &svar, &trti) ||
			!bms_is_member(svar->varno, items) || !bms_is_member(trti, items) ||
			rt_fetch(svar->varno, q->rtable)->lateral)
			continue;
		trte = rt_fetch(trti, q->rtable);
		if (!sharded_rte(trte) || trte->securityQuals != NIL ||
			trte->tablesample != NULL ||
			(sq = subquery_of(q, svar->varno)) == NULL ||
			(cxt.inner = grouped_column(sq, svar->varattno)) == NULL)
			continue;
		foreach(ln, narrowings)
			if (((Narrowing *) lfirst(ln))->srti == svar->varno &&
				((Narrowing *) lfirst(ln))->trti == trti)
				n = lfirst(ln);
		if (n == NULL)
		{
			List	   *own = own_conditions(conds, trti);

			/* a table with no condition of its own keeps every key */
			if (own == NIL)
				continue;
			n = palloc0(sizeof(Narrowing));
			n->sq = sq;
			n->srti = svar->varno;
			n->trti = trti;
			n->conditions = own;
			narrowings = lappend(narrowings, n);
		}

		/*
		 * The condition itself, its operands in their order: the subquery's
		 * column as its table's, one level up from inside the EXISTS; the
		 * table as that EXISTS's one item.
		 */
		cxt.svar = svar;
		cxt.inner = copyObject(cxt.inner);
		cxt.inner->varlevelsup = 1;
		eq = inner_column(copyObject((Node *) lfirst(lc)), &cxt);
		ChangeVarNodes(eq, trti, 1, 0);
		n->equalities = lappend(n->equalities, eq);
	}
	foreach(lc, narrowings)
	{
		Narrowing  *n = lfirst(lc);

		n->sq->jointree->quals = make_and_qual(n->sq->jointree->quals,
											   exists_clause(q, n));
		n->sq->hasSubLinks = true;
		appendStringInfo(what, "%s%s with %s", what->len > 0 ? "; " : "",
						 rt_fetch(n->srti, q->rtable)->eref->aliasname,
						 rt_fetch(n->trti, q->rtable)->eref->aliasname);
		made++;
	}
	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_SUBQUERY && rte->subquery != NULL)
			made += narrow_level(rte->subquery, what);
	}
	foreach(lc, q->cteList)
	{
		CommonTableExpr *cte = lfirst(lc);

		if (IsA(cte->ctequery, Query))
			made += narrow_level((Query *) cte->ctequery, what);
	}
	return made;
}

/*
 * cj_narrowed_query
 *		A copy of parse with its subqueries narrowed by the tables they are
 *		joined to, or NULL when none is; *what says which, by the names the
 *		query gives them.
 */
Query *
cj_narrowed_query(Query *parse, char **what)
{
	Query	   *copy;
	StringInfoData buf;

	if (parse->commandType != CMD_SELECT)
		return NULL;
	copy = copyObject(parse);
	initStringInfo(&buf);
	if (narrow_level(copy, &buf) == 0)
		return NULL;
	*what = buf.data;
	return copy;
}
