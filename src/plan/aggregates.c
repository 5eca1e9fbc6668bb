/*-------------------------------------------------------------------------
 *
 * aggregates.c
 *	  Aggregation pushed into the tasks of a colocated group (a colocated
 *	  join, or a sharded table on its own), through create_upper_paths_hook.
 *
 *	  Three shapes, each offered as a path and chosen by cost:
 *	  - full: the GROUP BY holds every partition key of a table every result
 *		row comes from, so each group lives in one partition class; every
 *		task computes final groups (HAVING included) and the coordinator
 *		only concatenates;
 *	  - partial: any other GROUP BY, or none: every task computes partial
 *		aggregates per group (count, sum, ...), and a PostgreSQL Agg node
 *		on the coordinator combines them with ordinary aggregates and
 *		expressions that give PostgreSQL's own results and types;
 *	  - distinct values: aggregates insensitive to duplicates (DISTINCT
 *		aggregates, min, max, ...) get the distinct (group, argument)
 *		values from the nodes instead of every row, and the coordinator runs
 *		the query's own aggregates over them.
 *	  Aggregates none of these can carry leave the query to the join path.
 *
 *	  This file decides what the remote queries compute; planner.c writes
 *	  them, executor.c runs them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planner.h"
#include "optimizer/prep.h"
#include "optimizer/tlist.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/selfuncs.h"
#include "utils/syscache.h"

#include "plan/planner.h"
#include "plan/join_group.h"
#include "deparse/deparse.h"
#include "util/extension.h"
#include "util/settings.h"

PG_FUNCTION_INFO_V1(colojoin_variance_final);

static create_upper_paths_hook_type prev_upper_paths_hook = NULL;

/* the kinds of variance colojoin.variance_final computes */
#define CJ_VAR_SAMP		0
#define CJ_VAR_POP		1
#define CJ_STDDEV_SAMP	2
#define CJ_STDDEV_POP	3

/* While decomposing: the partial aggregates the nodes compute */
typedef struct Decomposition
{
	List	   *partials;		/* Aggref *, remote, distinct */
	int			nfinal;			/* upper Aggrefs made so far (their aggno) */
	bool		failed;
} Decomposition;

static Oid
pg_catalog_function(const char *name, int nargs, Oid arg1, Oid arg2)
{
	Oid			argtypes[2];

	argtypes[0] = arg1;
	argtypes[1] = arg2;
	return LookupFuncName(list_make2(makeString("pg_catalog"), makeString((char *) name)),
						  nargs, argtypes, false);
}

static Expr *
call1(const char *name, Oid argtype, Expr *arg)
{
	Oid			fn = pg_catalog_function(name, 1, argtype, InvalidOid);

	return (Expr *) makeFuncExpr(fn, get_func_rettype(fn), list_make1(arg),
								 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

static Expr *
call2(const char *name, Oid argtype1, Oid argtype2, Expr *a, Expr *b)
{
	Oid			fn = pg_catalog_function(name, 2, argtype1, argtype2);

	return (Expr *) makeFuncExpr(fn, get_func_rettype(fn), list_make2(a, b),
								 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

/*
 * make_aggref
 *		An ordinary aggregate call fn(arg) (fn(*) when arg is NULL), filtered
 *		by filter, built the way the parser and planner would build it.
 */
static Aggref *
make_aggref(Oid fn, Expr *arg, Expr *filter, Oid inputcollid)
{
	Aggref	   *a = makeNode(Aggref);
	HeapTuple	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(fn));

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for aggregate %u", fn);
	a->aggtranstype = ((Form_pg_aggregate) GETSTRUCT(tup))->aggtranstype;
	ReleaseSysCache(tup);

	a->aggfnoid = fn;
	a->aggtype = get_func_rettype(fn);
	a->aggcollid = type_is_collatable(a->aggtype) ? inputcollid : InvalidOid;
	a->inputcollid = inputcollid;
	a->aggargtypes = arg ? list_make1_oid(exprType((Node *) arg)) : NIL;
	a->aggdirectargs = NIL;
	a->args = arg ? list_make1(makeTargetEntry(arg, 1, NULL, false)) : NIL;
	a->aggorder = NIL;
	a->aggdistinct = NIL;
	a->aggfilter = filter;
	a->aggstar = (arg == NULL);
	a->aggvariadic = false;
	a->aggkind = AGGKIND_NORMAL;
	a->agglevelsup = 0;
	a->aggsplit = AGGSPLIT_SIMPLE;
	a->aggno = -1;
	a->aggtransno = -1;
	a->location = -1;
	return a;
}

/* the remote partial aggregate fn(arg), shared when asked for twice */
static Expr *
partial(Decomposition *d, const char *name, Expr *arg, Oid argtype,
		Expr *filter, Oid inputcollid)
{
	Oid			fn;
	Aggref	   *a;
	ListCell   *lc;

	/* count takes "any" */
	if (arg && strcmp(name, "count") == 0)
		argtype = ANYOID;
	fn = arg ? pg_catalog_function(name, 1, argtype, InvalidOid) :
		pg_catalog_function(name, 0, InvalidOid, InvalidOid);
	a = make_aggref(fn, arg, filter, inputcollid);

	foreach(lc, d->partials)
		if (equal(lfirst(lc), a))
			return (Expr *) lfirst(lc);
	d->partials = lappend(d->partials, a);
	return (Expr *) a;
}

/* a coordinator aggregate over a partial value, numbered for the Agg node */
static Expr *
final(Decomposition *d, const char *name, Expr *partial_value, Oid inputcollid)
{
	Oid			argtype = exprType((Node *) partial_value);
	Aggref	   *a = make_aggref(pg_catalog_function(name, 1, argtype, InvalidOid),
								partial_value, NULL, inputcollid);

	a->aggno = d->nfinal;
	a->aggtransno = d->nfinal;
	d->nfinal++;
	return (Expr *) a;
}

/* COALESCE(value, 0::bigint): a count over no rows at all is 0 */
static Expr *
zero_if_null(Expr *value)
{
	CoalesceExpr *c = makeNode(CoalesceExpr);

	c->coalescetype = INT8OID;
	c->coalescecollid = InvalidOid;
	c->args = list_make2(value,
						 makeConst(INT8OID, -1, InvalidOid, 8, Int64GetDatum(0),
								   false, FLOAT8PASSBYVAL));
	c->location = -1;
	return (Expr *) c;
}

static Expr *
cast_to_numeric(Expr *e)
{
	Oid			t = exprType((Node *) e);

	if (t == NUMERICOID)
		return e;
	return call1("numeric", t, e);
}

/*
 * decompose_aggref
 *		The expression that computes agg on the coordinator out of partial
 *		aggregates the nodes compute (appended to d->partials), or NULL when
 *		agg cannot be split that way.  Each formula reproduces PostgreSQL's
 *		own result and type: sums of int8 counts are numeric and cast back,
 *		averages divide a numeric sum by a numeric count exactly as the
 *		aggregates' final functions do, variances use the exact numeric sums
 *		of x and x*x.
 */
static Expr *
decompose_aggref(Aggref *agg, Decomposition *d)
{
	char	   *name;
	Oid			argtype;
	Expr	   *arg;
	Expr	   *filter = agg->aggfilter;
	Oid			coll = agg->inputcollid;

	if (agg->aggkind != AGGKIND_NORMAL || agg->aggdistinct != NIL ||
		agg->aggorder != NIL || agg->agglevelsup != 0 ||
		agg->aggfnoid >= FirstGenbkiObjectId ||
		get_func_namespace(agg->aggfnoid) != PG_CATALOG_NAMESPACE)
		return NULL;
	name = get_func_name(agg->aggfnoid);

	if (agg->aggstar)
	{
		if (strcmp(name, "count") != 0)
			return NULL;
		/* count(*) = the sum of the counts, 0 when there were none */
		return zero_if_null(call1("int8", NUMERICOID,
								  final(d, "sum",
										partial(d, "count", NULL, InvalidOid, filter, coll),
										InvalidOid)));
	}
	if (list_length(agg->args) != 1)
		return NULL;
	arg = linitial_node(TargetEntry, agg->args)->expr;
	argtype = exprType((Node *) arg);

	if (strcmp(name, "count") == 0)
		return zero_if_null(call1("int8", NUMERICOID,
								  final(d, "sum",
										partial(d, "count", arg, argtype, filter, coll),
										InvalidOid)));

	if (strcmp(name, "sum") == 0)
	{
		Expr	   *p = partial(d, "sum", arg, argtype, filter, coll);

		/* sum(int2/int4) is bigint: the sum of bigints is numeric, cast back */
		if (argtype == INT2OID || argtype == INT4OID)
			return call1("int8", NUMERICOID, final(d, "sum", p, InvalidOid));
		if (argtype == INT8OID || argtype == NUMERICOID || argtype == FLOAT4OID ||
			argtype == FLOAT8OID || argtype == INTERVALOID || argtype == CASHOID)
			return final(d, "sum", p, InvalidOid);
		return NULL;
	}

	if (strcmp(name, "avg") == 0)
	{
		Expr	   *count = final(d, "sum", partial(d, "count", arg, argtype, filter, coll), InvalidOid);

		/*
		 * No rows (or all NULL) leave the sum NULL, and the strict division
		 * then gives NULL, as avg does.
		 */
		if (argtype == INT2OID || argtype == INT4OID || argtype == INT8OID ||
			argtype == NUMERICOID)
		{
			Expr	   *sum = final(d, "sum", partial(d, "sum", arg, argtype, filter, coll), InvalidOid);

			return call2("numeric_div", NUMERICOID, NUMERICOID,
						 cast_to_numeric(sum), count);
		}
		if (argtype == FLOAT4OID || argtype == FLOAT8OID)
		{
			Expr	   *x = argtype == FLOAT8OID ? arg : call1("float8", FLOAT4OID, arg);
			Expr	   *sum = final(d, "sum", partial(d, "sum", x, FLOAT8OID, filter, coll), InvalidOid);

			return call2("float8div", FLOAT8OID, FLOAT8OID, sum,
						 call1("float8", NUMERICOID, count));
		}
		if (argtype == INTERVALOID)
		{
			Expr	   *sum = final(d, "sum", partial(d, "sum", arg, argtype, filter, coll), InvalidOid);

			return call2("interval_div", INTERVALOID, FLOAT8OID, sum,
						 call1("float8", NUMERICOID, count));
		}
		return NULL;
	}

	if (strcmp(name, "min") == 0 || strcmp(name, "max") == 0 ||
		strcmp(name, "bool_and") == 0 || strcmp(name, "bool_or") == 0 ||
		strcmp(name, "bit_and") == 0 || strcmp(name, "bit_or") == 0 ||
		strcmp(name, "bit_xor") == 0)
		return final(d, name, partial(d, name, arg, argtype, filter, coll), coll);
	if (strcmp(name, "every") == 0)
		return final(d, "bool_and", partial(d, "bool_and", arg, argtype, filter, coll), coll);

	{
		int			kind = -1;
		bool		floating = (argtype == FLOAT4OID || argtype == FLOAT8OID);

		if (strcmp(name, "variance") == 0 || strcmp(name, "var_samp") == 0)
			kind = CJ_VAR_SAMP;
		else if (strcmp(name, "var_pop") == 0)
			kind = CJ_VAR_POP;
		else if (strcmp(name, "stddev") == 0 || strcmp(name, "stddev_samp") == 0)
			kind = CJ_STDDEV_SAMP;
		else if (strcmp(name, "stddev_pop") == 0)
			kind = CJ_STDDEV_POP;
		if (kind >= 0 &&
			(argtype == INT2OID || argtype == INT4OID || argtype == INT8OID ||
			 argtype == NUMERICOID || floating))
		{
			Expr	   *x = cast_to_numeric(floating && argtype == FLOAT4OID ?
											call1("float8", FLOAT4OID, arg) : arg);
			Expr	   *n = final(d, "sum", partial(d, "count", arg, argtype, filter, coll), InvalidOid);
			Expr	   *sx = final(d, "sum", partial(d, "sum", x, NUMERICOID, filter, coll), InvalidOid);
			Expr	   *sxx = final(d, "sum",
									partial(d, "sum",
											call2("numeric_mul", NUMERICOID, NUMERICOID, x, x),
											NUMERICOID, filter, coll),
									InvalidOid);
			Oid			argtypes[4] = {NUMERICOID, NUMERICOID, NUMERICOID, INT4OID};
			Oid			fn = LookupFuncName(list_make2(makeString(COLOJOIN_SCHEMA),
													   makeString("variance_final")),
											4, argtypes, false);
			Expr	   *v = (Expr *) makeFuncExpr(fn, NUMERICOID,
												  list_make4(n, sx, sxx,
															 makeConst(INT4OID, -1, InvalidOid, 4,
																	   Int32GetDatum(kind), false, true)),
												  InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);

			return floating ? call1("float8", NUMERICOID, v) : v;
		}
	}
	return NULL;
}

/*
 * cj_aggref_splits
 *		See join_group.h: the partial aggregates agg splits into.
 */
bool
cj_aggref_splits(Aggref *agg, List **partials)
{
	Decomposition d = {NIL, 0, false};

	if (decompose_aggref(agg, &d) == NULL)
		return false;
	*partials = d.partials;
	return true;
}

typedef struct ReplaceContext
{
	Decomposition *d;

	/*
	 * With keep_insensitive, a duplicate-insensitive aggregate that does not
	 * split (count(DISTINCT x), say) stays as it is, renumbered among the
	 * coordinator's aggregates, and the columns it reads are collected: the
	 * tasks group by them too.
	 */
	bool		keep_insensitive;
	List	   *kept_vars;
	int			nkept;
} ReplaceContext;

static bool duplicate_insensitive(Aggref *agg);

static Node *
replace_aggrefs_mutator(Node *node, ReplaceContext *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Aggref))
	{
		Aggref	   *agg = (Aggref *) node;
		Expr	   *e = agg->aggdistinct != NIL ? NULL :
			decompose_aggref(agg, cxt->d);

		if (e == NULL && cxt->keep_insensitive && duplicate_insensitive(agg))
		{
			Aggref	   *kept = copyObject(agg);
			ListCell   *lv;

			kept->aggno = cxt->d->nfinal;
			kept->aggtransno = cxt->d->nfinal;
			cxt->d->nfinal++;
			cxt->nkept++;
			foreach(lv, pull_var_clause((Node *) list_make2(agg->args, agg->aggfilter),
										PVC_RECURSE_PLACEHOLDERS))
				cxt->kept_vars = list_append_unique(cxt->kept_vars, lfirst(lv));
			return (Node *) kept;
		}
		if (e == NULL)
		{
			cxt->d->failed = true;
			return node;
		}
		return (Node *) e;
	}
	return expression_tree_mutator(node, replace_aggrefs_mutator, cxt);
}

/*
 * cj_split_aggregates
 *		See join_group.h: exprs with each aggregate replaced by its
 *		combination of partial aggregates (each partial Aggref standing as
 *		the argument of the aggregate that combines it).
 */
List *
cj_split_aggregates(List *exprs, List **partials)
{
	Decomposition d = {NIL, 0, false};
	ReplaceContext cxt;
	List	   *result = NIL;
	ListCell   *lc;

	memset(&cxt, 0, sizeof(cxt));
	cxt.d = &d;
	foreach(lc, exprs)
		result = lappend(result,
						 replace_aggrefs_mutator(copyObject(lfirst(lc)), &cxt));
	if (d.failed)
		return NIL;
	*partials = d.partials;
	return result;
}

/* aggregates a partial result can stand for, however often a row repeats */
static bool
duplicate_insensitive(Aggref *agg)
{
	char	   *name;

	if (agg->aggkind != AGGKIND_NORMAL || agg->agglevelsup != 0)
		return false;
	/* the coordinator runs the aggregate itself: its arguments must not vary */
	if (contain_volatile_functions((Node *) agg->args) ||
		contain_volatile_functions((Node *) agg->aggfilter))
		return false;
	/* DISTINCT removes duplicates before any ORDER BY is applied */
	if (agg->aggdistinct != NIL)
		return true;
	if (agg->aggorder != NIL || agg->aggfnoid >= FirstGenbkiObjectId)
		return false;
	name = get_func_name(agg->aggfnoid);
	return strcmp(name, "min") == 0 || strcmp(name, "max") == 0 ||
		strcmp(name, "bool_and") == 0 || strcmp(name, "bool_or") == 0 ||
		strcmp(name, "every") == 0 || strcmp(name, "bit_and") == 0 ||
		strcmp(name, "bit_or") == 0;
}

static PathTarget *
make_target(List *exprs, Index *refs)
{
	PathTarget *t = create_empty_pathtarget();
	ListCell   *lc;

	foreach(lc, exprs)
		add_column_to_pathtarget(t, lfirst(lc), refs ? refs[foreach_current_index(lc)] : 0);
	return t;
}

static double
estimated_groups(RelOptInfo *output_rel, double fallback)
{
	double		rows = -1;
	ListCell   *lc;

	foreach(lc, output_rel->pathlist)
	{
		Path	   *p = lfirst(lc);

		if (rows < 0 || p->rows < rows)
			rows = p->rows;
	}
	return rows > 0 ? rows : fallback;
}

static bool
all_shippable(PlannerInfo *root, List *exprs)
{
	ListCell   *lc;

	foreach(lc, exprs)
		if (!cj_is_shippable(root, (Expr *) lfirst(lc), NULL))
			return false;
	return true;
}

/*
 * add_combined_path
 *		The coordinator's Agg combining the partial aggregates of lower's
 *		tasks into final_target, under the labelling node that presents its
 *		rows as target; costing nothing when a hint asks for it (forced).
 */
static void
add_combined_path(PlannerInfo *root, RelOptInfo *output_rel, Path *lower,
				  PathTarget *final_target, PathTarget *target,
				  List *final_having, AggClauseCosts *agg_costs,
				  double numgroups, bool forced)
{
	Query	   *parse = root->parse;
	Path	   *path;

	path = cj_make_combine_path(root, output_rel,
								(Path *) create_agg_path(root, output_rel, lower,
														 final_target,
														 parse->groupClause != NIL ?
														 AGG_HASHED : AGG_PLAIN,
														 AGGSPLIT_SIMPLE,
														 parse->groupClause,
														 final_having, agg_costs,
														 numgroups),
								target);
	if (forced)
	{
		path->startup_cost = 0;
		path->total_cost = 0;
	}
	add_path(output_rel, path);
}

/*
 * add_grouping_paths
 *		Offer the aggregation shapes this query allows over group g.
 */
static const char *
add_grouping_paths(PlannerInfo *root, RelOptInfo *input_rel,
				   RelOptInfo *output_rel, GroupPathExtraData *extra,
				   CjJoinGroup *g)
{
	Query	   *parse = root->parse;
	PathTarget *target = output_rel->reltarget;
	List	   *having = (List *) extra->havingQual;
	List	   *group_exprs = NIL;
	Index	   *group_refs;
	List	   *aggrefs = NIL;
	List	   *vars_and_aggs;
	ListCell   *lc;
	int			ngroup = 0;
	int			ntasks = Max(cj_group_ntasks(g), 1);
	double		input_rows = input_rel->rows;
	double		numgroups;
	double		partial_rows;
	AggClauseCosts agg_costs;
	bool		hashable = parse->groupClause == NIL ||
		grouping_is_hashable(parse->groupClause);
	bool		offered = false;
	const char *why = NULL;

	/* every shape below, and the level above, count the groups this way */
	cj_bound_grouped_rows(root, output_rel);

	group_refs = palloc0(sizeof(Index) * (list_length(target->exprs) + 1));
	foreach(lc, target->exprs)
	{
		Index		ref = get_pathtarget_sortgroupref(target, foreach_current_index(lc));

		if (ref != 0 && get_sortgroupref_clause_noerr(ref, parse->groupClause))
		{
			group_exprs = lappend(group_exprs, lfirst(lc));
			group_refs[ngroup++] = ref;
		}
	}
	if (ngroup != list_length(parse->groupClause))
		return "a grouping column is not in the query's target list";
	if (!all_shippable(root, group_exprs))
		return "a grouping expression is not one the nodes evaluate alike (built-in and immutable)";

	vars_and_aggs = pull_var_clause((Node *) list_concat(list_copy(target->exprs), having),
									PVC_INCLUDE_AGGREGATES | PVC_RECURSE_PLACEHOLDERS);
	foreach(lc, vars_and_aggs)
		if (IsA(lfirst(lc), Aggref))
			aggrefs = list_append_unique(aggrefs, lfirst(lc));

	numgroups = estimated_groups(output_rel, ngroup > 0 ? 200 : 1);

	/*
	 * What the tasks send: each its groups (at most its rows), unless the
	 * nodes' statistics tell, for a table alone, how many there are; then
	 * the query has no more groups than that either.
	 */
	partial_rows = Min(numgroups * ntasks, Max(input_rows, 1));
	if (ngroup > 0)
	{
		double		known = cj_single_table_groups(root, g, group_exprs);

		if (known > 0)
		{
			partial_rows = Max(known, 1);
			numgroups = Max(Min(numgroups, known), 1);
		}
	}
	memset(&agg_costs, 0, sizeof(agg_costs));
	get_agg_clause_costs(root, AGGSPLIT_SIMPLE, &agg_costs);

	/* full: every group in one class, so every task's groups are final */
	if (ngroup > 0 && cj_group_groups_by_key(g, group_exprs) &&
		all_shippable(root, aggrefs))
	{
		CjUpperSpec *spec = cj_make_spec(NULL);

		spec->remote_exprs = list_concat(list_copy(group_exprs), aggrefs);
		spec->ngroup = ngroup;
		foreach(lc, having)
		{
			if (cj_is_shippable(root, lfirst(lc), NULL))
				spec->having = lappend(spec->having, lfirst(lc));
			else
				spec->local_quals = lappend(spec->local_quals, lfirst(lc));
		}
		spec->strategy = "grouped on the nodes";
		add_path(output_rel,
				 cj_make_upper_path(root, output_rel, g, target, spec, numgroups));
		cj_remember_upper(output_rel, g, spec);

		/* unless the moved table can be aggregated before its move, too */
		if (!cj_pre_aggregation_possible(root, g))
			return NULL;
		offered = true;
	}

	/* partial: the nodes aggregate what they can, the coordinator combines */
	if (hashable)
	{
		Decomposition d = {NIL, 0, false};
		ReplaceContext cxt = {&d, false, NIL, 0};
		PathTarget *final_target;
		List	   *final_having;
		List	   *final_exprs = NIL;

		foreach(lc, target->exprs)
			final_exprs = lappend(final_exprs,
								  replace_aggrefs_mutator(copyObject(lfirst(lc)), &cxt));
		final_having = (List *) replace_aggrefs_mutator(copyObject((Node *) having), &cxt);
		if (!d.failed && all_shippable(root, d.partials))
		{
			CjUpperSpec *spec = cj_make_spec(NULL);
			List	   *lower_exprs = list_concat(list_copy(group_exprs), d.partials);
			PathTarget *lower_target = make_target(lower_exprs, group_refs);
			Path	   *lower;
			CjJoinGroup *pg;
			CjUpperSpec *pspec;
			Cost		extra;
			bool		forced;

			final_target = copy_pathtarget(target);
			final_target->exprs = final_exprs;
			set_pathtarget_cost_width(root, lower_target);

			spec->remote_exprs = lower_exprs;
			spec->ngroup = ngroup;
			spec->strategy = "partial aggregation on the nodes";
			lower = cj_make_upper_path(root, output_rel, g, lower_target, spec,
									   partial_rows);
			add_combined_path(root, output_rel, lower, final_target, target,
							  final_having, &agg_costs, numgroups, false);

			/* the same, over the moved table's groups instead of its rows */
			if (cj_pre_aggregate(root, g, spec, &pg, &pspec, &extra, &forced))
			{
				lower = cj_make_upper_path(root, output_rel, pg, lower_target, pspec,
										   Min(numgroups * ntasks, Max(input_rows, 1)));
				lower->startup_cost += extra;
				lower->total_cost += extra;
				add_combined_path(root, output_rel, lower, final_target,
								  target, final_having, &agg_costs, numgroups,
								  forced);
			}
			return NULL;
		}
		why = d.failed ?
			"an aggregate colojoin cannot split into parts the nodes compute (DISTINCT or ORDER BY inside an aggregate next to others that count duplicates, ordered-set, user-defined, string_agg, volatile arguments)" :
			"an aggregate's argument is not one the nodes evaluate alike (built-in and immutable)";
	}
	else
		why = "a grouping column's type cannot be hashed";

	/*
	 * Distinct values: with only duplicate-insensitive aggregates, the nodes
	 * send each distinct combination of the grouping values and the columns
	 * the aggregates read, and the query's own aggregates run over them.
	 */
	{
		List	   *arg_vars = NIL;
		bool		ok = aggrefs != NIL;

		foreach(lc, aggrefs)
		{
			Aggref	   *agg = lfirst(lc);

			if (!duplicate_insensitive(agg))
				ok = false;
			else
			{
				ListCell   *lv;

				foreach(lv, pull_var_clause((Node *) list_make2(agg->args, agg->aggfilter),
											PVC_RECURSE_PLACEHOLDERS))
					if (!list_member(group_exprs, lfirst(lv)))
						arg_vars = list_append_unique(arg_vars, lfirst(lv));
			}
		}
		if (ok && all_shippable(root, arg_vars))
		{
			CjUpperSpec *spec = cj_make_spec(NULL);
			List	   *lower_exprs = list_concat(list_copy(group_exprs), arg_vars);
			PathTarget *lower_target = make_target(lower_exprs, group_refs);
			Path	   *lower;

			bool		ordered_aggs = false;
			AggStrategy strategy = AGG_PLAIN;

			set_pathtarget_cost_width(root, lower_target);
			spec->remote_exprs = lower_exprs;
			spec->ngroup = list_length(lower_exprs);
			spec->strategy = "distinct values on the nodes";
			lower = cj_make_upper_path(root, output_rel, g, lower_target, spec,
									   Max(input_rows / 2, 1));

			/* DISTINCT aggregates need sorted groups, not hashed ones */
			foreach(lc, aggrefs)
				if (((Aggref *) lfirst(lc))->aggdistinct != NIL ||
					((Aggref *) lfirst(lc))->aggorder != NIL)
					ordered_aggs = true;
			if (ngroup > 0 && (ordered_aggs || !hashable))
			{
				if (root->group_pathkeys == NIL)
					return offered ? NULL : why;
				lower = (Path *) create_sort_path(root, output_rel, lower,
												  root->group_pathkeys, -1.0);
				strategy = AGG_SORTED;
			}
			else if (ngroup > 0)
				strategy = AGG_HASHED;
			add_path(output_rel,
					 (Path *) create_agg_path(root, output_rel, lower, target,
											  strategy, AGGSPLIT_SIMPLE,
											  parse->groupClause, having,
											  &agg_costs, numgroups));
			offered = true;
		}
	}

	/*
	 * Distinct values with partial aggregates: DISTINCT aggregates next to
	 * ones that count duplicates (count(*), sum, avg ...).  The tasks group
	 * by the grouping values and the columns the DISTINCT aggregates read,
	 * computing the others' partial aggregates per such group; the
	 * coordinator runs the DISTINCT aggregates over those rows and combines
	 * the partial ones, which add up over finer groups as over tasks.
	 */
	if (!offered && (ngroup == 0 || root->group_pathkeys != NIL))
	{
		Decomposition d = {NIL, 0, false};
		ReplaceContext cxt = {&d, true, NIL, 0};
		List	   *final_exprs = NIL;
		List	   *final_having;

		foreach(lc, target->exprs)
			final_exprs = lappend(final_exprs,
								  replace_aggrefs_mutator(copyObject(lfirst(lc)), &cxt));
		final_having = (List *) replace_aggrefs_mutator(copyObject((Node *) having), &cxt);
		if (!d.failed && cxt.nkept > 0 && d.partials != NIL &&
			all_shippable(root, d.partials) && all_shippable(root, cxt.kept_vars))
		{
			CjUpperSpec *spec = cj_make_spec(NULL);
			List	   *distinct_vars = NIL;
			List	   *lower_exprs;
			PathTarget *lower_target;
			PathTarget *final_target;
			Path	   *lower;
			Path	   *path;

			foreach(lc, cxt.kept_vars)
				if (!list_member(group_exprs, lfirst(lc)))
					distinct_vars = lappend(distinct_vars, lfirst(lc));
			lower_exprs = list_concat(list_concat(list_copy(group_exprs), distinct_vars),
									  d.partials);
			lower_target = make_target(lower_exprs, group_refs);
			set_pathtarget_cost_width(root, lower_target);
			final_target = copy_pathtarget(target);
			final_target->exprs = final_exprs;

			spec->remote_exprs = lower_exprs;
			spec->ngroup = ngroup + list_length(distinct_vars);
			spec->strategy = "distinct values and partial aggregation on the nodes";
			lower = cj_make_upper_path(root, output_rel, g, lower_target, spec,
									   Max(input_rows / 2, 1));
			if (ngroup > 0)
				lower = (Path *) create_sort_path(root, output_rel, lower,
												  root->group_pathkeys, -1.0);
			path = (Path *) create_agg_path(root, output_rel, lower, final_target,
											ngroup > 0 ? AGG_SORTED : AGG_PLAIN,
											AGGSPLIT_SIMPLE, parse->groupClause,
											final_having, &agg_costs, numgroups);
			add_path(output_rel, cj_make_combine_path(root, output_rel, path, target));
			offered = true;
		}
	}
	return offered ? NULL : why;
}

/*
 * add_distinct_paths
 *		SELECT DISTINCT over a group: with the partition key of a table every
 *		row comes from among the distinct columns, each task's distinct rows
 *		are final; otherwise the nodes remove their duplicates and the
 *		coordinator removes those between nodes.
 */
static const char *
add_distinct_paths(PlannerInfo *root, RelOptInfo *input_rel,
				   RelOptInfo *distinct_rel, CjJoinGroup *g)
{
	Query	   *parse = root->parse;
	List	   *exprs = NIL;
	Index	   *refs;
	ListCell   *lc;
	int			n = 0;
	CjUpperSpec *spec;
	PathTarget *lower_target;
	Path	   *lower;
	double		numgroups = estimated_groups(distinct_rel, 200);

	if (parse->hasAggs || parse->groupClause != NIL || parse->hasWindowFuncs)
		return CJ_STEP_NOT_HERE;	/* the step before it decides */
	if (parse->hasDistinctOn)
		return "DISTINCT ON runs on the coordinator";
	if (parse->hasTargetSRFs)
		return "a set-returning function in the select list";
	if (!grouping_is_hashable(parse->distinctClause))
		return "a DISTINCT column's type cannot be hashed";
	refs = palloc0(sizeof(Index) * (list_length(parse->distinctClause) + 1));
	foreach(lc, parse->distinctClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);

		exprs = lappend(exprs, get_sortgroupclause_expr(sgc, root->processed_tlist));
		refs[n++] = sgc->tleSortGroupRef;
	}
	if (!all_shippable(root, exprs))
		return "a DISTINCT expression is not one the nodes evaluate alike (built-in and immutable)";

	spec = cj_make_spec(NULL);
	spec->stage = UPPERREL_DISTINCT;
	spec->remote_exprs = exprs;
	spec->ngroup = n;
	lower_target = make_target(exprs, refs);
	set_pathtarget_cost_width(root, lower_target);
	if (cj_group_groups_by_key(g, exprs))
	{
		spec->strategy = "grouped on the nodes";
		add_path(distinct_rel,
				 cj_make_upper_path(root, distinct_rel, g, lower_target, spec,
									numgroups));
		return NULL;
	}
	spec->strategy = "distinct values on the nodes";
	lower = cj_make_upper_path(root, distinct_rel, g, lower_target, spec,
							   Min(numgroups * Max(cj_group_ntasks(g), 1),
								   Max(input_rel->rows, 1)));
	add_path(distinct_rel,
			 (Path *) create_agg_path(root, distinct_rel, lower, lower_target,
									  AGG_HASHED, AGGSPLIT_SIMPLE,
									  parse->distinctClause, NIL, NULL,
									  numgroups));
	return NULL;
}

static void
cj_upper_paths(PlannerInfo *root, UpperRelationKind stage,
			   RelOptInfo *input_rel, RelOptInfo *output_rel, void *extra)
{
	CjJoinGroup *g;
	const char *why;

	if (prev_upper_paths_hook)
		prev_upper_paths_hook(root, stage, input_rel, output_rel, extra);

	if (stage != UPPERREL_GROUP_AGG && stage != UPPERREL_ORDERED &&
		stage != UPPERREL_DISTINCT && stage != UPPERREL_WINDOW)
		return;
	if (cj_plan_no_custom_paths)
		return;
	if (!colojoin_enable || !colojoin_enable_colocated_join ||
		!colojoin_enable_aggregate_pushdown || !colojoin_is_active())
		return;
	if (stage == UPPERREL_WINDOW)
		why = cj_add_window_paths(root, input_rel, output_rel);
	else if (stage == UPPERREL_ORDERED)
		why = cj_add_ordered_paths(root, input_rel, output_rel);
	else if ((input_rel->reloptkind != RELOPT_BASEREL &&
			  input_rel->reloptkind != RELOPT_JOINREL) ||
			 output_rel->reloptkind != RELOPT_UPPER_REL)
		why = CJ_STEP_NOT_HERE;
	else if ((g = cj_group_for_input(root, input_rel)) == NULL)
		why = CJ_STEP_NOT_HERE; /* not colojoin's tables, or the join says why */
	else if (root->parse->groupingSets != NIL)
		why = "grouping sets run on the coordinator";
	else if (root->parse->hasTargetSRFs)
		why = "a set-returning function in the select list";
	else if (cj_group_has_local_quals(g))
		why = "a condition must run on the coordinator first (row security, or a function that is not leakproof)";
	else if (stage == UPPERREL_DISTINCT)
		why = add_distinct_paths(root, input_rel, output_rel, g);
	else
		why = add_grouping_paths(root, input_rel, output_rel,
								 (GroupPathExtraData *) extra, g);
	if (why != CJ_STEP_NOT_HERE)
		cj_note_step(root, stage, input_rel, output_rel, why);
}

/*
 * sqrt_at_scale
 *		The square root of q correctly rounded to q's own scale s, as
 *		PostgreSQL's variance code computes it (numeric_sqrt picks its own,
 *		often larger scale, and rounding that again could differ in the last
 *		digit).  With N = q * 10^(2s), an integer, and x = floor(sqrt(N))
 *		found exactly, the result is x (or x + 1 when N - x^2 > x, that is
 *		sqrt(N) >= x + 1/2) divided by 10^s.
 */
static Datum
sqrt_at_scale(Datum q)
{
	int32		scale = DatumGetInt32(DirectFunctionCall1(numeric_scale, q));
	Datum		one = NumericGetDatum(int64_to_numeric(1));
	Datum		shift;
	Datum		n;
	Datum		x;
	Datum		x1;
	Datum		rem;

	if (numeric_is_nan(DatumGetNumeric(q)) || numeric_is_inf(DatumGetNumeric(q)))
		return DirectFunctionCall1(numeric_sqrt, q);
	/* exact powers of ten, written out: no division may round here */
	shift = DirectFunctionCall3(numeric_in, CStringGetDatum(psprintf("1e%d", 2 * scale)),
								ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	n = DirectFunctionCall2(numeric_trunc,
							DirectFunctionCall2(numeric_mul, q, shift),
							Int32GetDatum(0));
	/*
	 * numeric_sqrt keeps only about 16 significant digits of a large
	 * integer; a fractional digit in the argument makes it compute every
	 * integer digit.
	 */
	x = DirectFunctionCall2(numeric_trunc,
							DirectFunctionCall1(numeric_sqrt,
												DirectFunctionCall2(numeric_round, n,
																	Int32GetDatum(1))),
							Int32GetDatum(0));
	/* make x exactly floor(sqrt(n)) */
	while (DatumGetInt32(DirectFunctionCall2(numeric_cmp,
											 DirectFunctionCall2(numeric_mul, x, x), n)) > 0)
		x = DirectFunctionCall2(numeric_sub, x, one);
	for (;;)
	{
		x1 = DirectFunctionCall2(numeric_add, x, one);
		if (DatumGetInt32(DirectFunctionCall2(numeric_cmp,
											  DirectFunctionCall2(numeric_mul, x1, x1), n)) > 0)
			break;
		x = x1;
	}
	rem = DirectFunctionCall2(numeric_sub, n, DirectFunctionCall2(numeric_mul, x, x));
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, rem, x)) > 0)
		x = DirectFunctionCall2(numeric_add, x, one);
	return DirectFunctionCall2(numeric_round,
							   DirectFunctionCall2(numeric_mul, x,
												   DirectFunctionCall3(numeric_in,
																	   CStringGetDatum(psprintf("1e-%d", scale)),
																	   ObjectIdGetDatum(InvalidOid),
																	   Int32GetDatum(-1))),
							   Int32GetDatum(scale));
}

/*
 * colojoin_variance_final(n, sum_x, sum_xx, kind)
 *		The variance or standard deviation of n values whose exact sum and
 *		sum of squares are given, computed with the same numeric steps and
 *		scales as PostgreSQL's own numeric variance aggregates, so that the
 *		combined partial results equal theirs.
 */
Datum
colojoin_variance_final(PG_FUNCTION_ARGS)
{
	Datum		n;
	Datum		sx;
	Datum		sxx;
	int			kind = PG_GETARG_INT32(3);
	bool		sample = (kind == CJ_VAR_SAMP || kind == CJ_STDDEV_SAMP);
	int64		count;
	Datum		num;
	Datum		den;
	Datum		q;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		PG_RETURN_NULL();
	n = PG_GETARG_DATUM(0);
	sx = PG_GETARG_DATUM(1);
	sxx = PG_GETARG_DATUM(2);
	count = DatumGetInt64(DirectFunctionCall1(numeric_int8, n));
	if (count == 0 || (sample && count <= 1))
		PG_RETURN_NULL();

	/* N * sum(x*x) - sum(x)^2, exact */
	num = DirectFunctionCall2(numeric_sub,
							  DirectFunctionCall2(numeric_mul, n, sxx),
							  DirectFunctionCall2(numeric_mul, sx, sx));
	if (!numeric_is_nan(DatumGetNumeric(num)) &&
		DatumGetInt32(DirectFunctionCall2(numeric_cmp, num,
										  NumericGetDatum(int64_to_numeric(0)))) <= 0)
		PG_RETURN_NUMERIC(int64_to_numeric(0));		/* round-off guard, as PostgreSQL */

	den = sample ?
		DirectFunctionCall2(numeric_mul, n,
							DirectFunctionCall2(numeric_sub, n,
												NumericGetDatum(int64_to_numeric(1)))) :
		DirectFunctionCall2(numeric_mul, n, n);
	q = DirectFunctionCall2(numeric_div, num, den);
	if (kind == CJ_VAR_SAMP || kind == CJ_VAR_POP)
		PG_RETURN_DATUM(q);

	/* the square root to the quotient's scale, as PostgreSQL computes it */
	PG_RETURN_DATUM(sqrt_at_scale(q));
}

void
cj_aggregates_init(void)
{
	prev_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = cj_upper_paths;
}
