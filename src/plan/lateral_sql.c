/*-------------------------------------------------------------------------
 *
 * lateral_sql.c
 *	  The SQL of a subquery run in the tasks (lateral.c decides which and
 *	  how): its FROM item in one task, the subquery written again over the
 *	  class's partitions (or the rows moved for it), its grouped-first
 *	  partials, its narrowing EXISTS, and the names of its columns there.
 *
 *	  Does not: decide anything (lateral.c), write the rest of a task
 *	  (remote_sql.c) or expressions (deparse.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "plan/lateral_internal.h"
#include "plan/planner_internal.h"

/* naming inside the subquery: its tables, else the task's own names */
typedef struct CjLateralNaming
{
	CjLateral  *lat;
	CjVarNameFunc outer;
	void	   *outer_arg;
} CjLateralNaming;

const char *
cj_lateral_var_name(CjJoinTree *t, Var *var)
{
	ListCell   *lc;

	foreach(lc, cj_tree_laterals(t, NIL))
		if (((CjLateral *) lfirst(lc))->rtindex == var->varno)
			return psprintf("r%u.c%d", var->varno, (int) var->varattno);
	return NULL;
}

static const char *
lateral_var_name(Var *var, void *arg)
{
	CjLateralNaming *n = arg;
	CjLateral  *lat = n->lat;

	if (var->varno > lat->offset)
	{
		RangeTblEntry *rte = rt_fetch(var->varno - lat->offset, lat->query->rtable);
		ListCell   *lc;

		/* a partial aggregate of the grouped rows (their one table's) */
		foreach(lc, lat->partial_vars)
			if (equal(lfirst(lc), var))
				return psprintf("s%u_%u.%s", lat->rtindex, var->varno - lat->offset,
								((CjPreAgg *) list_nth(((CjLateralTable *) linitial(lat->tables))->rel->preagg,
													   foreach_current_index(lc)))->column);

		if (var->varattno <= 0 || var->varlevelsup != 0)
			return NULL;
		return psprintf("s%u_%u.%s", lat->rtindex, var->varno - lat->offset,
						cj_quote_ident(get_attname(rte->relid, var->varattno, false)));
	}
	return n->outer(var, n->outer_arg);
}

/* sort or grouping items: output positions, else the expressions */
static void
append_clause_items(StringInfo buf, List *clauses, List *tlist, bool sort,
					CjSqlContext *sc)
{
	ListCell   *lc;

	foreach(lc, clauses)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		TargetEntry *tle = get_sortgroupclause_tle(sgc, tlist);

		if (lc != list_head(clauses))
			appendStringInfoString(buf, ", ");
		if (!tle->resjunk)
			appendStringInfo(buf, "%d", (int) tle->resno);
		else
			cj_deparse_expr(buf, tle->expr, &sc->dctx);
		if (sort)
		{
			TypeCacheEntry *tc = lookup_type_cache(exprType((Node *) tle->expr),
												   TYPECACHE_LT_OPR);

			appendStringInfo(buf, "%s%s",
							 sgc->sortop == tc->lt_opr ? " ASC" : " DESC",
							 sgc->nulls_first ? " NULLS FIRST" : " NULLS LAST");
		}
	}
}

/*
 * append_semi_filter
 *		EXISTS over the group's table of sf as the task reads it, with its
 *		conditions there: inside it the table's name is its own again.
 */
static void
append_semi_filter(StringInfo buf, CjSemiFilter *sf, CjSqlContext *sc)
{
	CjBaseRel  *br = NULL;
	ListCell   *lc;

	foreach(lc, sc->g->rels)
		if (((CjBaseRel *) lfirst(lc))->rtindex == sf->rtindex)
			br = lfirst(lc);
	/* planned with the group its table was in: still read in place there */
	if (br == NULL || br->move != CJ_MOVE_NONE || br->preagg != NIL)
		elog(ERROR, "colojoin: the table a subquery was narrowed by is not read in place");
	appendStringInfoString(buf, "EXISTS (SELECT NULL FROM ");
	cj_append_base_from(buf, br, sc);
	appendStringInfoString(buf, " WHERE ");
	foreach(lc, sf->clauses)
	{
		cj_deparse_expr(buf, lfirst(lc), &sc->dctx);
		appendStringInfoString(buf, " AND ");
	}
	appendStringInfo(buf, "%s)", cj_quals_text(br->remote_quals, sc));
}

/* the subquery for the task being written */
static void
append_subquery(StringInfo buf, CjLateral *lat, CjSqlContext *sc)
{
	Query	   *q = lat->query;
	ListCell   *lc;
	bool		first = true;

	appendStringInfoString(buf, "SELECT ");
	if (q->distinctClause != NIL)
		appendStringInfoString(buf, "DISTINCT ");
	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		/* PostgreSQL puts the hidden sort and group items last */
		if (tle->resjunk)
			continue;
		if (!first)
			appendStringInfoString(buf, ", ");
		cj_deparse_expr(buf, lat->grouped_exprs != NIL ?
						list_nth(lat->grouped_exprs, foreach_current_index(lc)) :
						tle->expr, &sc->dctx);
		appendStringInfo(buf, " AS c%d", (int) tle->resno);
		first = false;
	}
	if (first)
		appendStringInfoString(buf, "NULL");
	appendStringInfoString(buf, " FROM ");
	foreach(lc, lat->tables)
	{
		CjLateralTable *lt = lfirst(lc);

		if (lc != list_head(lat->tables))
			appendStringInfoString(buf, ", ");
		if (lt->moved)
			cj_append_moved_from(buf, lt->rel, sc);
		else
			cj_append_class_from(buf, lt->rel, cj_lateral_table_class(sc->g, lt, sc->cls),
								 sc->serverid);
		appendStringInfo(buf, " s%u_%u", lat->rtindex, lt->rti);
	}
	/* grouped rows were filtered before their move, and lack the columns */
	if (lat->grouped_exprs == NIL)
	{
		const char *sep = " WHERE ";

		if (q->jointree->quals)
		{
			appendStringInfoString(buf, sep);
			cj_deparse_expr(buf, (Expr *) q->jointree->quals, &sc->dctx);
			sep = " AND ";
		}
		foreach(lc, lat->semi_filters)
		{
			appendStringInfoString(buf, sep);
			append_semi_filter(buf, lfirst(lc), sc);
			sep = " AND ";
		}
	}
	if (q->groupClause)
	{
		appendStringInfoString(buf, " GROUP BY ");
		append_clause_items(buf, q->groupClause, q->targetList, false, sc);
	}
	if (q->havingQual)
	{
		appendStringInfoString(buf, " HAVING ");
		cj_deparse_expr(buf, lat->grouped_exprs != NIL ? llast(lat->grouped_exprs) :
						(Expr *) q->havingQual, &sc->dctx);
	}
	if (q->sortClause)
	{
		appendStringInfoString(buf, " ORDER BY ");
		append_clause_items(buf, q->sortClause, q->targetList, true, sc);
	}
	if (q->limitOffset)
	{
		/* parenthesised: after OFFSET and FETCH FIRST only a plain value may stand */
		appendStringInfoString(buf, " OFFSET (");
		cj_deparse_expr(buf, (Expr *) q->limitOffset, &sc->dctx);
		appendStringInfoString(buf, ") ROWS");
	}
	if (q->limitCount)
	{
		appendStringInfoString(buf, " FETCH FIRST (");
		cj_deparse_expr(buf, (Expr *) q->limitCount, &sc->dctx);
		appendStringInfoString(buf, q->limitOption == LIMIT_OPTION_WITH_TIES ?
							   ") ROWS WITH TIES" : ") ROWS ONLY");
	}
}

/*
 * cj_append_lateral
 *		The FROM item of a LATERAL subquery in one task: the subquery over
 *		the class's partitions of its tables, then PostgreSQL's conditions
 *		on its rows, under the name r<rtindex> with columns c<n>.
 */
void
cj_append_lateral(StringInfo buf, CjLateral *lat, CjSqlContext *sc)
{
	CjLateralNaming naming;

	naming.lat = lat;
	naming.outer = sc->dctx.var_name;
	naming.outer_arg = sc->dctx.var_arg;
	sc->dctx.var_name = lateral_var_name;
	sc->dctx.var_arg = &naming;

	appendStringInfoString(buf, "LATERAL (");
	if (lat->quals != NIL)
		appendStringInfoString(buf, "SELECT * FROM (");
	append_subquery(buf, lat, sc);
	sc->dctx.var_name = naming.outer;
	sc->dctx.var_arg = naming.outer_arg;
	if (lat->quals != NIL)
	{
		ListCell   *lc;

		appendStringInfo(buf, ") r%u WHERE ", lat->rtindex);
		foreach(lc, lat->quals)
		{
			if (lc != list_head(lat->quals))
				appendStringInfoString(buf, " AND ");
			cj_deparse_expr(buf, (Expr *) lfirst(lc), &sc->dctx);
		}
	}
	appendStringInfo(buf, ") r%u", lat->rtindex);
}
