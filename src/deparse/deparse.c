/*-------------------------------------------------------------------------
 *
 * deparse.c
 *	  The SQL text that makes a node compute exactly what the coordinator
 *	  would have computed, for expressions shippable.c accepted.
 *
 *	  Owns: expression deparsing, identifier and literal quoting, type
 *	  names, the output settings constants are printed under.  The rules
 *	  of what may be shipped are shippable.c's.
 *
 *	  Does not: build whole remote queries (FROM items, joins, target lists
 *	  are the planner's), know about partitions or nodes, or evaluate
 *	  Params (the executor sends their values).
 *
 *	  The remote session is assumed to run with search_path = pg_catalog,
 *	  DateStyle ISO, IntervalStyle postgres, extra_float_digits 3 and
 *	  TimeZone UTC, and to be the same PostgreSQL major version, so that
 *	  built-in objects have the same names and meaning there.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/transam.h"
#include "catalog/heap.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "deparse/deparse.h"
#include "deparse/deparse_internal.h"

/* State of one deparse */
typedef struct DeparseState
{
	StringInfo	buf;
	CjDeparseContext *ctx;
	List	   *case_args;		/* as in ShipContext */
	int			guc_nest;		/* > 0 once output settings are pinned */
} DeparseState;

static void deparse_node(Node *node, DeparseState *st);
static void deparse_list(List *list, const char *sep, DeparseState *st);

/* ---------------------------------------------------------------------
 * Deparsing
 * ---------------------------------------------------------------------
 */

/*
 * pin_output_settings: make the text of constants independent of the
 * session's DateStyle, IntervalStyle and extra_float_digits, and match what
 * the node reads.  Done once per cj_deparse_expr call, the first time a
 * constant needs it; cj_deparse_expr restores the settings.
 */
static void
pin_output_settings(DeparseState *st)
{
	if (st->guc_nest > 0)
		return;
	st->guc_nest = cj_pin_node_output_settings();
}

/*
 * cj_pin_node_output_settings
 *		See deparse.h: the settings the nodes' sessions read values under
 *		(connection.c sets them there), until AtEOXact_GUC(true, level).
 */
int
cj_pin_node_output_settings(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("datestyle", "ISO", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("intervalstyle", "postgres", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("extra_float_digits", "3", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return level;
}

/* append_collate: " COLLATE schema.name" for a built-in collation */
static void
append_collate(StringInfo buf, Oid collid)
{
	HeapTuple	tup;
	Form_pg_collation coll;

	tup = SearchSysCache1(COLLOID, ObjectIdGetDatum(collid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for collation %u", collid);
	coll = (Form_pg_collation) GETSTRUCT(tup);
	appendStringInfo(buf, " COLLATE %s.%s",
					 cj_quote_ident(get_namespace_name(coll->collnamespace)),
					 cj_quote_ident(NameStr(coll->collname)));
	ReleaseSysCache(tup);
}

/* is_plain_number: digits, optionally signed, with an optional fraction */
static bool
is_plain_number(const char *s)
{
	const char *p = s;

	if (*p == '-')
		p++;
	if (!isdigit((unsigned char) *p))
		return false;
	while (isdigit((unsigned char) *p))
		p++;
	if (*p == '.')
	{
		p++;
		if (!isdigit((unsigned char) *p))
			return false;
		while (isdigit((unsigned char) *p))
			p++;
	}
	return *p == '\0';
}

/*
 * deparse_const
 *
 * The literal must have exactly the constant's type on the node, so that
 * operators and functions around it resolve as they did here.  An integer
 * literal that fits int4 is an int4, so int4 constants are written bare;
 * other numbers are written bare with a cast (5::bigint), negative ones in
 * parentheses because :: binds tighter than unary minus.  Everything else
 * is a quoted literal with a cast, which the node's input function reads.
 */
static void
deparse_const(Const *c, DeparseState *st)
{
	StringInfo	buf = st->buf;
	Oid			typoutput;
	bool		typisvarlena;
	char	   *text;
	Oid			collate;

	collate = cj_value_collate_clause(c->consttype, c->constcollid);
	if (OidIsValid(collate))
		appendStringInfoChar(buf, '(');

	if (c->constisnull)
	{
		appendStringInfo(buf, "NULL::%s",
						 cj_type_name(c->consttype, c->consttypmod));
	}
	else
	{
		switch (c->consttype)
		{
			case BOOLOID:
			case INT2OID:
			case INT4OID:
			case INT8OID:
			case OIDOID:
			case NUMERICOID:
			case TEXTOID:
			case VARCHAROID:
			case BPCHAROID:
			case NAMEOID:
				/* output independent of settings */
				break;
			default:
				pin_output_settings(st);
				break;
		}
		getTypeOutputInfo(c->consttype, &typoutput, &typisvarlena);
		text = OidOutputFunctionCall(typoutput, c->constvalue);

		switch (c->consttype)
		{
			case BOOLOID:
				appendStringInfoString(buf,
									   DatumGetBool(c->constvalue) ?
									   "true" : "false");
				break;

			case INT4OID:
				if (strcmp(text, "-2147483648") == 0)
				{
					/* the node would read (-2147483648) as bigint */
					appendStringInfo(buf, "(%s)::%s", text,
									 cj_type_name(INT4OID, -1));
				}
				else if (text[0] == '-')
					appendStringInfo(buf, "(%s)", text);
				else
					appendStringInfoString(buf, text);
				break;

			case INT2OID:
			case INT8OID:
			case OIDOID:
			case NUMERICOID:
			case FLOAT4OID:
			case FLOAT8OID:

				/*
				 * A float -0 would be read as integer 0 and lose its sign;
				 * "NaN", "Infinity" and exponents are not plain numbers.
				 */
				if (is_plain_number(text) && strcmp(text, "-0") != 0)
				{
					if (text[0] == '-')
						appendStringInfo(buf, "(%s)", text);
					else
						appendStringInfoString(buf, text);
				}
				else
					cj_append_literal(buf, text);
				appendStringInfo(buf, "::%s",
								 cj_type_name(c->consttype, c->consttypmod));
				break;

			default:
				cj_append_literal(buf, text);
				appendStringInfo(buf, "::%s",
								 cj_type_name(c->consttype, c->consttypmod));
				break;
		}
		pfree(text);
	}

	if (OidIsValid(collate))
	{
		append_collate(buf, collate);
		appendStringInfoChar(buf, ')');
	}
}

/*
 * deparse_param: $n, n being the Param's position in ctx->params (added
 * there the first time), cast to its type so that the node infers it.
 */
static void
deparse_param(Param *p, DeparseState *st)
{
	CjDeparseContext *ctx = st->ctx;
	ListCell   *lc;
	int			n = 0;
	int			found = 0;
	Oid			collate;

	foreach(lc, ctx->params)
	{
		n++;
		if (equal(lfirst(lc), p))
		{
			found = n;
			break;
		}
	}
	if (found == 0)
	{
		ctx->params = lappend(ctx->params, p);
		found = list_length(ctx->params);
	}

	collate = cj_value_collate_clause(p->paramtype, p->paramcollid);
	if (OidIsValid(collate))
		appendStringInfoChar(st->buf, '(');
	appendStringInfo(st->buf, "$%d::%s", found,
					 cj_type_name(p->paramtype, p->paramtypmod));
	if (OidIsValid(collate))
	{
		append_collate(st->buf, collate);
		appendStringInfoChar(st->buf, ')');
	}
}

/*
 * append_operator_name: pg_catalog operators by their bare name (the
 * node's search_path is pg_catalog, and every operand has its exact type,
 * so the same operator is found), others as OPERATOR(schema.name).
 */
static void
append_operator_name(StringInfo buf, Oid opno)
{
	HeapTuple	tup;
	Form_pg_operator oper;

	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator %u", opno);
	oper = (Form_pg_operator) GETSTRUCT(tup);
	if (oper->oprnamespace == PG_CATALOG_NAMESPACE)
		appendStringInfoString(buf, NameStr(oper->oprname));
	else
		appendStringInfo(buf, "OPERATOR(%s.%s)",
						 cj_quote_ident(get_namespace_name(oper->oprnamespace)),
						 NameStr(oper->oprname));
	ReleaseSysCache(tup);
}

/*
 * append_function_name: pg_catalog functions by their name, quoted when it
 * is a keyword (so "position"(a, b) is an ordinary call, not the special
 * POSITION syntax); others schema-qualified.
 */
static void
append_function_name(StringInfo buf, Oid funcid)
{
	HeapTuple	tup;
	Form_pg_proc proc;

	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for function %u", funcid);
	proc = (Form_pg_proc) GETSTRUCT(tup);
	if (proc->pronamespace == PG_CATALOG_NAMESPACE)
		appendStringInfoString(buf, quote_identifier(NameStr(proc->proname)));
	else
		appendStringInfo(buf, "%s.%s",
						 cj_quote_ident(get_namespace_name(proc->pronamespace)),
						 cj_quote_ident(NameStr(proc->proname)));
	ReleaseSysCache(tup);
}

/* deparse_list: the nodes of list separated by sep */
static void
deparse_list(List *list, const char *sep, DeparseState *st)
{
	ListCell   *lc;

	foreach(lc, list)
	{
		if (lc != list_head(list))
			appendStringInfoString(st->buf, sep);
		deparse_node(lfirst(lc), st);
	}
}

/* deparse_opexpr: (a op b) or (op a) */
static void
deparse_opexpr(OpExpr *op, DeparseState *st)
{
	StringInfo	buf = st->buf;

	appendStringInfoChar(buf, '(');
	if (list_length(op->args) == 2)
	{
		deparse_node(linitial(op->args), st);
		appendStringInfoChar(buf, ' ');
		append_operator_name(buf, op->opno);
		appendStringInfoChar(buf, ' ');
		deparse_node(lsecond(op->args), st);
	}
	else if (list_length(op->args) == 1)
	{
		append_operator_name(buf, op->opno);
		appendStringInfoChar(buf, ' ');
		deparse_node(linitial(op->args), st);
	}
	else
		elog(ERROR, "operator %u has %d arguments", op->opno,
			 list_length(op->args));
	appendStringInfoChar(buf, ')');
}

/*
 * deparse_funcexpr
 *
 * A one-argument cast is written (arg)::type: the node looks up the same
 * pg_cast entry.  Everything else, including length coercions whose
 * "explicit" flag matters (an implicit one raises an error where an explicit
 * one truncates), is written as a call of the very function, with its
 * arguments in order; a variadic array argument gets VARIADIC.
 */
static void
deparse_funcexpr(FuncExpr *f, DeparseState *st)
{
	StringInfo	buf = st->buf;
	ListCell   *lc;
	bool		variadic_last;

	if ((f->funcformat == COERCE_EXPLICIT_CAST ||
		 f->funcformat == COERCE_IMPLICIT_CAST) &&
		list_length(f->args) == 1)
	{
		appendStringInfoString(buf, "((");
		deparse_node(linitial(f->args), st);
		appendStringInfo(buf, ")::%s)",
						 cj_type_name(f->funcresulttype,
									  exprTypmod((Node *) f)));
		return;
	}

	if (f->funcvariadic)
		variadic_last = true;
	else
	{
		Oid			vartype = get_func_variadictype(f->funcid);

		/* the parser packed the variadic arguments into an array */
		variadic_last = OidIsValid(vartype) && vartype != ANYOID;
	}

	append_function_name(buf, f->funcid);
	appendStringInfoChar(buf, '(');
	foreach(lc, f->args)
	{
		if (lc != list_head(f->args))
			appendStringInfoString(buf, ", ");
		if (variadic_last && lnext(f->args, lc) == NULL)
			appendStringInfoString(buf, "VARIADIC ");
		deparse_node(lfirst(lc), st);
	}
	appendStringInfoChar(buf, ')');
}

/*
 * deparse_array: ARRAY[...]::type[].  The elements of a multi-dimensional
 * array that are themselves ARRAY constructors are written without a cast,
 * as the sub-arrays of one constructor.
 */
static void
deparse_array(ArrayExpr *a, bool nested, DeparseState *st)
{
	StringInfo	buf = st->buf;
	ListCell   *lc;

	if (!nested)
		appendStringInfoChar(buf, '(');
	appendStringInfoString(buf, "ARRAY[");
	foreach(lc, a->elements)
	{
		Node	   *e = lfirst(lc);

		if (lc != list_head(a->elements))
			appendStringInfoString(buf, ", ");
		if (a->multidims && IsA(e, ArrayExpr))
			deparse_array((ArrayExpr *) e, true, st);
		else
			deparse_node(e, st);
	}
	appendStringInfoChar(buf, ']');
	if (!nested)
		appendStringInfo(buf, "::%s)", cj_type_name(a->array_typeid, -1));
}

/* remote_collation: the collation the node derives for node */
static CjColl
remote_collation(Node *node, DeparseState *st)
{
	return cj_node_collation(node, st->case_args, st->ctx->windows,
							 st->ctx->window_tlist);
}

/* deparse_node: the SQL of one shippable node */
/* one frame bound: UNBOUNDED PRECEDING, n FOLLOWING, CURRENT ROW, ... */
static void
deparse_frame_bound(int options, bool start, Node *offset, DeparseState *st)
{
	StringInfo	buf = st->buf;
	int			unb_pre = start ? FRAMEOPTION_START_UNBOUNDED_PRECEDING : FRAMEOPTION_END_UNBOUNDED_PRECEDING;
	int			unb_fol = start ? FRAMEOPTION_START_UNBOUNDED_FOLLOWING : FRAMEOPTION_END_UNBOUNDED_FOLLOWING;
	int			cur = start ? FRAMEOPTION_START_CURRENT_ROW : FRAMEOPTION_END_CURRENT_ROW;
	int			off_pre = start ? FRAMEOPTION_START_OFFSET_PRECEDING : FRAMEOPTION_END_OFFSET_PRECEDING;

	if (options & unb_pre)
		appendStringInfoString(buf, "UNBOUNDED PRECEDING");
	else if (options & unb_fol)
		appendStringInfoString(buf, "UNBOUNDED FOLLOWING");
	else if (options & cur)
		appendStringInfoString(buf, "CURRENT ROW");
	else
	{
		deparse_node(offset, st);
		appendStringInfoString(buf, (options & off_pre) ? " PRECEDING" : " FOLLOWING");
	}
}

/*
 * deparse_window_func: name(args) [FILTER (WHERE ...)] OVER (PARTITION BY
 * ... ORDER BY ... frame), the window written out from its WINDOW clause
 * (sorting by the types' default orders, which ship_window_func checked).
 */
static void
deparse_window_func(WindowFunc *wf, DeparseState *st)
{
	StringInfo	buf = st->buf;
	WindowClause *wc = cj_find_window(st->ctx->windows, wf->winref);
	ListCell   *lc;

	if (wc == NULL)
		elog(ERROR, "colojoin: window %u of a window function not found", wf->winref);
	append_function_name(buf, wf->winfnoid);
	appendStringInfoChar(buf, '(');
	if (wf->winstar)
		appendStringInfoChar(buf, '*');
	else
		deparse_list(wf->args, ", ", st);
	appendStringInfoChar(buf, ')');
	if (wf->aggfilter != NULL)
	{
		appendStringInfoString(buf, " FILTER (WHERE ");
		deparse_node((Node *) wf->aggfilter, st);
		appendStringInfoChar(buf, ')');
	}
	appendStringInfoString(buf, " OVER (");
	if (wc->partitionClause != NIL)
	{
		appendStringInfoString(buf, "PARTITION BY ");
		foreach(lc, wc->partitionClause)
		{
			if (lc != list_head(wc->partitionClause))
				appendStringInfoString(buf, ", ");
			deparse_node(get_sortgroupclause_expr(lfirst_node(SortGroupClause, lc),
												  st->ctx->window_tlist), st);
		}
	}
	if (wc->orderClause != NIL)
	{
		appendStringInfoString(buf, wc->partitionClause ? " ORDER BY " : "ORDER BY ");
		foreach(lc, wc->orderClause)
		{
			SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
			Node	   *e = get_sortgroupclause_expr(sgc, st->ctx->window_tlist);
			TypeCacheEntry *tc = lookup_type_cache(exprType(e), TYPECACHE_LT_OPR);

			if (lc != list_head(wc->orderClause))
				appendStringInfoString(buf, ", ");
			deparse_node(e, st);
			appendStringInfoString(buf, sgc->sortop == tc->lt_opr ? " ASC" : " DESC");
			appendStringInfoString(buf, sgc->nulls_first ? " NULLS FIRST" : " NULLS LAST");
		}
	}
	if (wc->frameOptions & FRAMEOPTION_NONDEFAULT)
	{
		int			o = wc->frameOptions;

		appendStringInfoString(buf, (o & FRAMEOPTION_ROWS) ? " ROWS " :
							   (o & FRAMEOPTION_GROUPS) ? " GROUPS " : " RANGE ");
		if (o & FRAMEOPTION_BETWEEN)
		{
			appendStringInfoString(buf, "BETWEEN ");
			deparse_frame_bound(o, true, wc->startOffset, st);
			appendStringInfoString(buf, " AND ");
			deparse_frame_bound(o, false, wc->endOffset, st);
		}
		else
			deparse_frame_bound(o, true, wc->startOffset, st);
		if (o & FRAMEOPTION_EXCLUDE_CURRENT_ROW)
			appendStringInfoString(buf, " EXCLUDE CURRENT ROW");
		else if (o & FRAMEOPTION_EXCLUDE_GROUP)
			appendStringInfoString(buf, " EXCLUDE GROUP");
		else if (o & FRAMEOPTION_EXCLUDE_TIES)
			appendStringInfoString(buf, " EXCLUDE TIES");
	}
	appendStringInfoChar(buf, ')');
}

/*
 * deparse_aggref: name([DISTINCT] args [ORDER BY ...]) [FILTER (WHERE ...)],
 * or name(*).  Sort clauses refer to the aggregate's own argument list.
 */
static void
deparse_aggref(Aggref *agg, DeparseState *st)
{
	StringInfo	buf = st->buf;
	ListCell   *lc;
	bool		first = true;

	append_function_name(buf, agg->aggfnoid);
	appendStringInfoChar(buf, '(');
	if (agg->aggstar)
		appendStringInfoChar(buf, '*');
	else
	{
		if (agg->aggdistinct != NIL)
			appendStringInfoString(buf, "DISTINCT ");
		foreach(lc, agg->args)
		{
			TargetEntry *tle = lfirst_node(TargetEntry, lc);

			if (tle->resjunk)
				continue;
			if (!first)
				appendStringInfoString(buf, ", ");
			deparse_node((Node *) tle->expr, st);
			first = false;
		}
		if (agg->aggorder != NIL)
		{
			appendStringInfoString(buf, " ORDER BY ");
			foreach(lc, agg->aggorder)
			{
				SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
				TargetEntry *tle = get_sortgroupclause_tle(sgc, agg->args);
				TypeCacheEntry *tc = lookup_type_cache(exprType((Node *) tle->expr),
													   TYPECACHE_LT_OPR | TYPECACHE_GT_OPR);

				if (lc != list_head(agg->aggorder))
					appendStringInfoString(buf, ", ");
				deparse_node((Node *) tle->expr, st);
				if (sgc->sortop == tc->lt_opr)
					appendStringInfoString(buf, " ASC");
				else if (sgc->sortop == tc->gt_opr)
					appendStringInfoString(buf, " DESC");
				else
				{
					appendStringInfoString(buf, " USING ");
					append_operator_name(buf, sgc->sortop);
				}
				appendStringInfoString(buf, sgc->nulls_first ? " NULLS FIRST" : " NULLS LAST");
			}
		}
	}
	appendStringInfoChar(buf, ')');
	if (agg->aggfilter != NULL)
	{
		appendStringInfoString(buf, " FILTER (WHERE ");
		deparse_node((Node *) agg->aggfilter, st);
		appendStringInfoChar(buf, ')');
	}
}

static void
deparse_node(Node *node, DeparseState *st)
{
	StringInfo	buf = st->buf;

	if (node == NULL)
		elog(ERROR, "colojoin: cannot deparse a NULL expression");

	switch (nodeTag(node))
	{
		case T_List:
			{
				List	   *l = (List *) node;

				if (l == NIL)
					appendStringInfoString(buf, "true");
				else if (list_length(l) == 1)
					deparse_node(linitial(l), st);
				else
				{
					appendStringInfoChar(buf, '(');
					deparse_list(l, " AND ", st);
					appendStringInfoChar(buf, ')');
				}
				break;
			}

		case T_Var:
			{
				Var		   *var = (Var *) node;
				const char *name = NULL;

				if (st->ctx->var_name != NULL)
					name = st->ctx->var_name(var, st->ctx->var_arg);
				if (name == NULL && var->varattno < 0)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("colojoin cannot read system column \"%s\" of a sharded table on its nodes",
									NameStr(SystemAttributeDefinition(var->varattno)->attname)),
							 errdetail("Once a transaction wrote through colojoin it reads sharded tables only through colojoin's scans, which return no system columns; an UPDATE or DELETE that colojoin does not run on the nodes finds its rows by ctid."),
							 errhint("Run the statement before the transaction's first write through colojoin, or join the tables on their partition keys so that colojoin runs it on the nodes.")));
				if (name == NULL)
					elog(ERROR, "colojoin: column %d of range table entry %d cannot be referenced on a node",
						 var->varattno, var->varno);
				appendStringInfoString(buf, name);
				break;
			}

		case T_Const:
			deparse_const((Const *) node, st);
			break;

		case T_Param:
			deparse_param((Param *) node, st);
			break;

		case T_OpExpr:
			deparse_opexpr((OpExpr *) node, st);
			break;

		case T_DistinctExpr:
			{
				DistinctExpr *d = (DistinctExpr *) node;

				appendStringInfoChar(buf, '(');
				deparse_node(linitial(d->args), st);
				appendStringInfoString(buf, " IS DISTINCT FROM ");
				deparse_node(lsecond(d->args), st);
				appendStringInfoChar(buf, ')');
				break;
			}

		case T_NullIfExpr:
			{
				NullIfExpr *n = (NullIfExpr *) node;

				appendStringInfoString(buf, "NULLIF(");
				deparse_list(n->args, ", ", st);
				appendStringInfoChar(buf, ')');
				break;
			}

		case T_ScalarArrayOpExpr:
			{
				ScalarArrayOpExpr *saop = (ScalarArrayOpExpr *) node;

				appendStringInfoChar(buf, '(');
				deparse_node(linitial(saop->args), st);
				appendStringInfoChar(buf, ' ');
				append_operator_name(buf, saop->opno);
				appendStringInfoString(buf, saop->useOr ? " ANY (" : " ALL (");
				deparse_node(lsecond(saop->args), st);
				appendStringInfoString(buf, "))");
				break;
			}

		case T_FuncExpr:
			deparse_funcexpr((FuncExpr *) node, st);
			break;

		case T_BoolExpr:
			{
				BoolExpr   *b = (BoolExpr *) node;

				appendStringInfoChar(buf, '(');
				switch (b->boolop)
				{
					case AND_EXPR:
						deparse_list(b->args, " AND ", st);
						break;
					case OR_EXPR:
						deparse_list(b->args, " OR ", st);
						break;
					case NOT_EXPR:
						appendStringInfoString(buf, "NOT ");
						deparse_node(linitial(b->args), st);
						break;
				}
				appendStringInfoChar(buf, ')');
				break;
			}

		case T_NullTest:
			{
				NullTest   *nt = (NullTest *) node;

				appendStringInfoChar(buf, '(');
				deparse_node((Node *) nt->arg, st);
				appendStringInfoString(buf, nt->nulltesttype == IS_NULL ?
									   " IS NULL)" : " IS NOT NULL)");
				break;
			}

		case T_BooleanTest:
			{
				BooleanTest *bt = (BooleanTest *) node;
				const char *test = NULL;

				switch (bt->booltesttype)
				{
					case IS_TRUE:
						test = " IS TRUE)";
						break;
					case IS_NOT_TRUE:
						test = " IS NOT TRUE)";
						break;
					case IS_FALSE:
						test = " IS FALSE)";
						break;
					case IS_NOT_FALSE:
						test = " IS NOT FALSE)";
						break;
					case IS_UNKNOWN:
						test = " IS UNKNOWN)";
						break;
					case IS_NOT_UNKNOWN:
						test = " IS NOT UNKNOWN)";
						break;
				}
				appendStringInfoChar(buf, '(');
				deparse_node((Node *) bt->arg, st);
				appendStringInfoString(buf, test);
				break;
			}

		case T_RelabelType:
			{
				RelabelType *r = (RelabelType *) node;
				Oid			collate;

				collate = cj_relabel_collate_clause(r, remote_collation(cj_relabel_arg(r), st));
				appendStringInfoString(buf, "((");
				deparse_node((Node *) r->arg, st);
				appendStringInfo(buf, ")::%s",
								 cj_type_name(r->resulttype, r->resulttypmod));
				if (OidIsValid(collate))
					append_collate(buf, collate);
				appendStringInfoChar(buf, ')');
				break;
			}

		case T_CoerceViaIO:
			{
				CoerceViaIO *cio = (CoerceViaIO *) node;

				appendStringInfoString(buf, "((");
				deparse_node((Node *) cio->arg, st);
				appendStringInfo(buf, ")::%s)",
								 cj_type_name(cio->resulttype, -1));
				break;
			}

		case T_ArrayExpr:
			deparse_array((ArrayExpr *) node, false, st);
			break;

		case T_CaseExpr:
			{
				CaseExpr   *ce = (CaseExpr *) node;
				ListCell   *lc;

				appendStringInfoString(buf, "(CASE");
				foreach(lc, ce->args)
				{
					CaseWhen   *w = lfirst_node(CaseWhen, lc);

					appendStringInfoString(buf, " WHEN ");
					st->case_args = lcons(ce->arg, st->case_args);
					deparse_node((Node *) w->expr, st);
					st->case_args = list_delete_first(st->case_args);
					appendStringInfoString(buf, " THEN ");
					deparse_node((Node *) w->result, st);
				}
				if (ce->defresult)
				{
					appendStringInfoString(buf, " ELSE ");
					deparse_node((Node *) ce->defresult, st);
				}
				appendStringInfoString(buf, " END)");
				break;
			}

		case T_CaseTestExpr:
			{
				List	   *saved = st->case_args;

				if (saved == NIL || linitial(saved) == NULL)
					elog(ERROR, "colojoin: CASE placeholder outside CASE");
				st->case_args = list_copy_tail(saved, 1);
				deparse_node((Node *) linitial(saved), st);
				list_free(st->case_args);
				st->case_args = saved;
				break;
			}

		case T_CoalesceExpr:
			appendStringInfoString(buf, "COALESCE(");
			deparse_list(((CoalesceExpr *) node)->args, ", ", st);
			appendStringInfoChar(buf, ')');
			break;

		case T_Aggref:
			deparse_aggref((Aggref *) node, st);
			break;

		case T_WindowFunc:
			deparse_window_func((WindowFunc *) node, st);
			break;

		case T_MinMaxExpr:
			{
				MinMaxExpr *mm = (MinMaxExpr *) node;

				appendStringInfoString(buf, mm->op == IS_GREATEST ?
									   "GREATEST(" : "LEAST(");
				deparse_list(mm->args, ", ", st);
				appendStringInfoChar(buf, ')');
				break;
			}

		default:
			elog(ERROR, "colojoin: cannot deparse expression node %d",
				 (int) nodeTag(node));
	}
}

/*
 * cj_deparse_expr
 *
 * Appends the SQL of expr, which cj_is_shippable accepted, to buf: every
 * operation in parentheses, every literal and parameter cast to its exact
 * type, implicit casts written out, so the node resolves every operator
 * and function to the one used here.  Params are numbered through ctx.
 */
void
cj_deparse_expr(StringInfo buf, Expr *expr, CjDeparseContext *ctx)
{
	DeparseState st;

	st.buf = buf;
	st.ctx = ctx;
	st.case_args = NIL;
	st.guc_nest = 0;

	deparse_node((Node *) expr, &st);

	if (st.guc_nest > 0)
		AtEOXact_GUC(true, st.guc_nest);
}

/* ---------------------------------------------------------------------
 * Quoting and names
 * ---------------------------------------------------------------------
 */

/*
 * cj_quote_ident: ident in double quotes, embedded quotes doubled.  Always
 * quoted, never only "when needed": the text then means the same on a node
 * whatever keywords its parser knows.
 */
const char *
cj_quote_ident(const char *ident)
{
	StringInfoData buf;
	const char *p;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '"');
	for (p = ident; *p; p++)
	{
		if (*p == '"')
			appendStringInfoChar(&buf, '"');
		appendStringInfoChar(&buf, *p);
	}
	appendStringInfoChar(&buf, '"');
	return buf.data;
}

/*
 * cj_append_literal: value as an SQL string literal.  Quotes are doubled;
 * a value with backslashes is written E'...' with them doubled too, so
 * the literal reads the same whatever standard_conforming_strings says.
 */
void
cj_append_literal(StringInfo buf, const char *value)
{
	const char *p;

	if (strchr(value, '\\') != NULL)
		appendStringInfoChar(buf, 'E');
	appendStringInfoChar(buf, '\'');
	for (p = value; *p; p++)
	{
		if (*p == '\'' || *p == '\\')
			appendStringInfoChar(buf, *p);
		appendStringInfoChar(buf, *p);
	}
	appendStringInfoChar(buf, '\'');
}

/* cj_qualified_name: "schema"."relname", or "relname" without a schema */
char *
cj_qualified_name(const char *schema, const char *relname)
{
	if (schema == NULL)
		return pstrdup(cj_quote_ident(relname));
	return psprintf("%s.%s", cj_quote_ident(schema), cj_quote_ident(relname));
}

/*
 * cj_type_name: the type as the node must read it: SQL-standard names
 * (integer, character varying(10)) or schema-qualified ones
 * (pg_catalog.text), with the typmod when one is given.
 */
char *
cj_type_name(Oid typid, int32 typmod)
{
	return format_type_extended(typid, typmod,
								FORMAT_TYPE_TYPEMOD_GIVEN |
								FORMAT_TYPE_FORCE_QUALIFY);
}

/*
 * cj_append_copy_value
 *		A value in COPY's text format: backslash, and the characters that
 *		would end a field or a line, escaped.
 */
void
cj_append_copy_value(StringInfo buf, const char *value)
{
	const char *p;

	for (p = value; *p; p++)
	{
		switch (*p)
		{
			case '\\':
				appendStringInfoString(buf, "\\\\");
				break;
			case '\t':
				appendStringInfoString(buf, "\\t");
				break;
			case '\n':
				appendStringInfoString(buf, "\\n");
				break;
			case '\r':
				appendStringInfoString(buf, "\\r");
				break;
			default:
				appendStringInfoChar(buf, *p);
		}
	}
}
