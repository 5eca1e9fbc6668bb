/*-------------------------------------------------------------------------
 *
 * deparse.c
 *	  Which expressions may run on a node, and the SQL text that makes a
 *	  node compute exactly what the coordinator would have computed.
 *
 *	  Owns: the shippability rules (built-in, immutable, collation-safe),
 *	  expression deparsing, identifier and literal quoting, type names.
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

/*
 * Collation tracking.  The node re-parses our SQL text and derives the
 * collation of every operation by PostgreSQL's rules (parse_collate.c):
 * Vars bring their column's collation (implicit), literals and parameters
 * their type's (implicit), COLLATE clauses are explicit, explicit beats
 * implicit, and a non-default implicit collation beats the default one.
 * We replay those rules over the text we are going to write and ship an
 * operation only when the node will derive the collation the local plan
 * uses (or, for equality under deterministic collations, one that gives
 * the same answer).
 */
typedef enum CjCollStrength
{
	CJ_COLL_NONE,				/* not collatable, or no collation */
	CJ_COLL_IMPLICIT,
	CJ_COLL_CONFLICT,			/* two different non-default implicit ones */
	CJ_COLL_EXPLICIT
} CjCollStrength;

typedef struct CjColl
{
	Oid			collation;
	CjCollStrength strength;
} CjColl;

/* State of one shippability walk */
typedef struct ShipContext
{
	Relids		relids;			/* Vars must belong to these (NULL: any) */

	/*
	 * Test expressions of the enclosing CASE x WHEN ... constructs, innermost
	 * first.  A CaseTestExpr is written as its CASE's test expression
	 * (CASE x WHEN v becomes CASE WHEN x = v), which is equivalent because
	 * everything we ship is immutable.
	 */
	List	   *case_args;

	/* window functions allowed, with the query's windows and target list */
	bool		allow_windows;
	List	   *windows;
	List	   *window_tlist;
} ShipContext;

/* State of one deparse */
typedef struct DeparseState
{
	StringInfo	buf;
	CjDeparseContext *ctx;
	List	   *case_args;		/* as in ShipContext */
	int			guc_nest;		/* > 0 once output settings are pinned */
} DeparseState;

static bool ship_walk(Node *node, ShipContext *cxt, CjColl *out);
static bool ship_window_func(WindowFunc *wf, ShipContext *cxt, CjColl *out);
static void deparse_node(Node *node, DeparseState *st);
static void deparse_list(List *list, const char *sep, DeparseState *st);

/*
 * Built-in objects: created by initdb from the catalogs' .dat files, so
 * they exist with the same OID, name and definition on every node of the
 * same major version.  Objects with higher OIDs (including the collations
 * initdb imports from the operating system) may differ between servers.
 */
static inline bool
is_builtin(Oid oid)
{
	return oid < FirstGenbkiObjectId;
}

/*
 * type_is_shippable: a value of this type can appear in a remote
 * expression: built in, and neither a pseudo-type nor a composite type
 * (row values have no portable textual form we want to rely on).
 */
static bool
type_is_shippable(Oid typid)
{
	char		typtype;

	if (!is_builtin(typid))
		return false;
	typtype = get_typtype(typid);
	return typtype != TYPTYPE_PSEUDO && typtype != TYPTYPE_COMPOSITE;
}

/*
 * value_type_is_shippable: a constant or parameter of this type can be
 * sent as text.  Besides type_is_shippable, reject the reg* types (their
 * text is an object name that means a different OID on the node) and money
 * (its text form depends on lc_monetary).
 */
static bool
value_type_is_shippable(Oid typid)
{
	Oid			elemtype;

	if (!type_is_shippable(typid))
		return false;

	elemtype = get_element_type(typid);
	if (OidIsValid(elemtype))
		typid = elemtype;

	switch (typid)
	{
		case REGPROCOID:
		case REGPROCEDUREOID:
		case REGOPEROID:
		case REGOPERATOROID:
		case REGCLASSOID:
		case REGCOLLATIONOID:
		case REGTYPEOID:
		case REGROLEOID:
		case REGNAMESPACEOID:
		case REGCONFIGOID:
		case REGDICTIONARYOID:
		case CASHOID:
			return false;
		default:
			return true;
	}
}

/*
 * func_is_shippable: a built-in, immutable, non-set-returning function.
 * Immutability is what makes the node's answer equal to ours: a stable
 * function could read settings (TimeZone, DateStyle, ...) that differ there.
 */
static bool
func_is_shippable(Oid funcid)
{
	Oid		   *argtypes;
	int			nargs;
	int			i;

	if (!OidIsValid(funcid) || !is_builtin(funcid))
		return false;
	if (func_volatile(funcid) != PROVOLATILE_IMMUTABLE || get_func_retset(funcid))
		return false;

	/*
	 * A function of an object identifier reads this server's catalogs
	 * (satisfies_hash_partition(oid, ...)), and the node's OIDs name other
	 * objects: such a call means something else there, even once the
	 * planner folded 'tbl'::regclass into a plain oid constant.
	 */
	(void) get_func_signature(funcid, &argtypes, &nargs);
	for (i = 0; i < nargs; i++)
		if (argtypes[i] == OIDOID || argtypes[i] == REGCLASSOID ||
			argtypes[i] == REGPROCOID || argtypes[i] == REGTYPEOID)
			return false;
	return true;
}

/* oper_is_shippable: a built-in operator over a shippable function */
static bool
oper_is_shippable(Oid opno)
{
	return is_builtin(opno) && func_is_shippable(get_opcode(opno));
}

/*
 * oper_is_equality: opno is = or <> of some btree operator family.  Under
 * a deterministic collation such an operator compares bytes (after the
 * type's own normalisation, such as bpchar's trailing blanks), so its
 * result does not depend on which deterministic collation is used.
 */
static bool
oper_is_equality(Oid opno)
{
	List	   *interps = get_op_btree_interpretation(opno);
	ListCell   *lc;
	bool		result = false;

	foreach(lc, interps)
	{
		OpBtreeInterpretation *interp = lfirst(lc);

		if (interp->strategy == BTEqualStrategyNumber ||
			interp->strategy == ROWCOMPARE_NE)
		{
			result = true;
			break;
		}
	}
	list_free_deep(interps);
	return result;
}

/* coll_merge: fold a child's collation into acc, as the parser does */
static void
coll_merge(CjColl *acc, CjColl child)
{
	if (child.strength > acc->strength)
		*acc = child;
	else if (child.strength == acc->strength &&
			 child.strength == CJ_COLL_IMPLICIT &&
			 child.collation != acc->collation)
	{
		if (acc->collation == DEFAULT_COLLATION_OID)
			*acc = child;
		else if (child.collation != DEFAULT_COLLATION_OID)
		{
			acc->collation = InvalidOid;
			acc->strength = CJ_COLL_CONFLICT;
		}
	}
	else if (child.strength == acc->strength &&
			 child.strength == CJ_COLL_EXPLICIT &&
			 child.collation != acc->collation)
	{
		/* the node would raise an error; make the caller refuse */
		acc->collation = InvalidOid;
		acc->strength = CJ_COLL_CONFLICT;
	}
}

/*
 * coll_result: the collation the node gives an expression of type typid
 * whose collatable inputs merged to "merged".  A collatable result with no
 * collatable input takes its type's collation.
 */
static CjColl
coll_result(Oid typid, CjColl merged)
{
	CjColl		result;
	Oid			typcoll = get_typcollation(typid);

	if (!OidIsValid(typcoll))
	{
		result.collation = InvalidOid;
		result.strength = CJ_COLL_NONE;
	}
	else if (merged.strength == CJ_COLL_NONE)
	{
		result.collation = typcoll;
		result.strength = CJ_COLL_IMPLICIT;
	}
	else
		result = merged;
	return result;
}

/*
 * input_collation_ok: an operation that uses collation local_coll on the
 * coordinator gets the same answer on the node, whose inputs merge to
 * "merged".  Equality-like operators (eq_opno valid) also accept any
 * deterministic collation when the local one is deterministic.
 */
static bool
input_collation_ok(Oid local_coll, CjColl merged, Oid eq_opno)
{
	Oid			remote_coll = InvalidOid;

	if (!OidIsValid(local_coll))
		return true;			/* the operation does not use a collation */

	if (merged.strength == CJ_COLL_IMPLICIT ||
		merged.strength == CJ_COLL_EXPLICIT)
		remote_coll = merged.collation;

	if (remote_coll == local_coll)
		return true;

	return OidIsValid(eq_opno) && OidIsValid(remote_coll) &&
		oper_is_equality(eq_opno) &&
		get_collation_isdeterministic(local_coll) &&
		get_collation_isdeterministic(remote_coll);
}

/*
 * value_collate_clause: the collation a literal or parameter of type typid
 * with collation coll is given by an explicit COLLATE clause, or InvalidOid
 * when it gets none: when the node derives the same by itself (the type's
 * collation), or when the collation is not built in and so cannot be named
 * on the node.  In that last case the node derives the type's collation,
 * and the operation consuming the value decides whether that is good
 * enough (input_collation_ok).
 */
static Oid
value_collate_clause(Oid typid, Oid coll)
{
	if (!OidIsValid(coll) || coll == get_typcollation(typid) ||
		!is_builtin(coll))
		return InvalidOid;
	return coll;
}

/*
 * relabel_arg: what a RelabelType's argument is, for shipping.  A column of
 * a domain over a built-in type read as that type counts as a column of
 * the base type: the node's column holds values of the base type (or of a
 * domain over it there), and the cast written around it says which type is
 * meant.
 */
static Node *
relabel_arg(RelabelType *r)
{
	if (IsA(r->arg, Var) &&
		get_typtype(exprType((Node *) r->arg)) == TYPTYPE_DOMAIN &&
		getBaseType(exprType((Node *) r->arg)) == r->resulttype)
	{
		Var		   *dv = copyObject((Var *) r->arg);

		dv->vartype = r->resulttype;
		return (Node *) dv;
	}
	return (Node *) r->arg;
}

/*
 * relabel_collate_clause: whether a RelabelType must be written with a
 * COLLATE clause, given the collation the node derives for its argument.
 * A RelabelType between two different types is a binary coercion whose
 * collation bubbles up from the argument, so it needs one only when that
 * differs.  A RelabelType to the same type is what a COLLATE clause becomes
 * after planning: keep it explicit, so that it still beats the implicit
 * collations beside it.  Collations that are not built in cannot be named
 * on the node; the consumer of the value then judges the difference.
 */
static Oid
relabel_collate_clause(RelabelType *r, CjColl argcoll)
{
	if (!OidIsValid(r->resultcollid) || !is_builtin(r->resultcollid))
		return InvalidOid;
	if (exprType((Node *) r->arg) != r->resulttype)
	{
		if ((argcoll.strength == CJ_COLL_IMPLICIT ||
			 argcoll.strength == CJ_COLL_EXPLICIT) &&
			argcoll.collation == r->resultcollid)
			return InvalidOid;
	}
	return r->resultcollid;
}

/* ship_value_collation: the collation the node derives for a value */
static void
ship_value_collation(Oid typid, Oid coll, CjColl *out)
{
	Oid			clause = value_collate_clause(typid, coll);

	if (OidIsValid(clause))
	{
		out->collation = clause;
		out->strength = CJ_COLL_EXPLICIT;
	}
	else
	{
		out->collation = get_typcollation(typid);
		out->strength = OidIsValid(out->collation) ?
			CJ_COLL_IMPLICIT : CJ_COLL_NONE;
	}
}

/* ship_args: walk a list of arguments, merging their collations */
static bool
ship_args(List *args, ShipContext *cxt, CjColl *merged)
{
	ListCell   *lc;

	merged->collation = InvalidOid;
	merged->strength = CJ_COLL_NONE;
	foreach(lc, args)
	{
		CjColl		c;

		if (!ship_walk(lfirst(lc), cxt, &c))
			return false;
		coll_merge(merged, c);
	}
	return true;
}

/*
 * ship_walk: true when node may run on a node; *out receives the collation
 * the node will derive for it.
 */
static bool
ship_walk(Node *node, ShipContext *cxt, CjColl *out)
{
	CjColl		merged;

	out->collation = InvalidOid;
	out->strength = CJ_COLL_NONE;

	if (node == NULL)
		return true;

	if (IsA(node, List))
	{
		ListCell   *lc;

		/* an implicit AND: each member stands alone */
		foreach(lc, (List *) node)
		{
			CjColl		c;

			if (!ship_walk(lfirst(lc), cxt, &c))
				return false;
		}
		return true;
	}

	/* whatever the node, its value must be of a type the node knows */
	if (!type_is_shippable(exprType(node)))
		return false;

	switch (nodeTag(node))
	{
		case T_Var:
			{
				Var		   *var = (Var *) node;

				/*
				 * Only user columns of this query level: system columns and
				 * whole-row references mean something else on the node.
				 */
				if (var->varlevelsup != 0 || var->varattno <= 0)
					return false;
				if (cxt->relids != NULL &&
					!bms_is_member(var->varno, cxt->relids))
					return false;
				if (OidIsValid(var->varcollid))
				{
					/* the node's column has the same collation */
					out->collation = var->varcollid;
					out->strength = CJ_COLL_IMPLICIT;
				}
				return true;
			}

		case T_Const:
			{
				Const	   *c = (Const *) node;

				if (!value_type_is_shippable(c->consttype))
					return false;
				ship_value_collation(c->consttype, c->constcollid, out);
				return true;
			}

		case T_Param:
			{
				Param	   *p = (Param *) node;

				/* external and executor parameters are sent as $n */
				if (p->paramkind != PARAM_EXTERN && p->paramkind != PARAM_EXEC)
					return false;
				if (!value_type_is_shippable(p->paramtype))
					return false;
				ship_value_collation(p->paramtype, p->paramcollid, out);
				return true;
			}

		case T_OpExpr:
		case T_DistinctExpr:
		case T_NullIfExpr:
			{
				OpExpr	   *op = (OpExpr *) node;

				if (!oper_is_shippable(op->opno) || op->opretset)
					return false;
				if (!ship_args(op->args, cxt, &merged))
					return false;
				if (!input_collation_ok(op->inputcollid, merged, op->opno))
					return false;
				*out = coll_result(exprType(node), merged);
				return true;
			}

		case T_ScalarArrayOpExpr:
			{
				ScalarArrayOpExpr *saop = (ScalarArrayOpExpr *) node;

				if (!oper_is_shippable(saop->opno))
					return false;
				if (!ship_args(saop->args, cxt, &merged))
					return false;
				return input_collation_ok(saop->inputcollid, merged,
										  saop->opno);
			}

		case T_FuncExpr:
			{
				FuncExpr   *f = (FuncExpr *) node;

				if (!func_is_shippable(f->funcid) || f->funcretset)
					return false;
				if (!ship_args(f->args, cxt, &merged))
					return false;
				if (!input_collation_ok(f->inputcollid, merged, InvalidOid))
					return false;
				*out = coll_result(f->funcresulttype, merged);
				return true;
			}

		case T_BoolExpr:
			return ship_args(((BoolExpr *) node)->args, cxt, &merged);

		case T_NullTest:
			{
				NullTest   *nt = (NullTest *) node;

				/* row IS NULL tests every field; we ship no row values */
				if (nt->argisrow)
					return false;
				return ship_walk((Node *) nt->arg, cxt, &merged);
			}

		case T_BooleanTest:
			return ship_walk((Node *) ((BooleanTest *) node)->arg, cxt,
							 &merged);

		case T_RelabelType:
			{
				RelabelType *r = (RelabelType *) node;
				Oid			clause;

				if (!ship_walk(relabel_arg(r), cxt, &merged))
					return false;
				clause = relabel_collate_clause(r, merged);
				if (OidIsValid(clause))
				{
					out->collation = clause;
					out->strength = CJ_COLL_EXPLICIT;
				}
				else
					*out = coll_result(r->resulttype, merged);
				return true;
			}

		case T_CoerceViaIO:
			{
				CoerceViaIO *cio = (CoerceViaIO *) node;
				Oid			outfunc;
				Oid			infunc;
				Oid			ioparam;
				bool		isvarlena;

				/* the text round trip must not depend on settings either */
				getTypeOutputInfo(exprType((Node *) cio->arg), &outfunc,
								  &isvarlena);
				getTypeInputInfo(cio->resulttype, &infunc, &ioparam);
				if (!func_is_shippable(outfunc) || !func_is_shippable(infunc))
					return false;
				if (!ship_walk((Node *) cio->arg, cxt, &merged))
					return false;
				*out = coll_result(cio->resulttype, merged);
				return true;
			}

		case T_ArrayExpr:
			{
				ArrayExpr  *a = (ArrayExpr *) node;

				if (!type_is_shippable(a->element_typeid))
					return false;
				if (!ship_args(a->elements, cxt, &merged))
					return false;
				*out = coll_result(a->array_typeid, merged);
				return true;
			}

		case T_CaseExpr:
			{
				CaseExpr   *ce = (CaseExpr *) node;
				ListCell   *lc;
				CjColl		c;

				if (ce->arg && !ship_walk((Node *) ce->arg, cxt, &c))
					return false;

				/* only the results decide the CASE's collation */
				merged.collation = InvalidOid;
				merged.strength = CJ_COLL_NONE;
				foreach(lc, ce->args)
				{
					CaseWhen   *w = lfirst_node(CaseWhen, lc);
					bool		ok;

					cxt->case_args = lcons(ce->arg, cxt->case_args);
					ok = ship_walk((Node *) w->expr, cxt, &c);
					cxt->case_args = list_delete_first(cxt->case_args);
					if (!ok)
						return false;
					if (!ship_walk((Node *) w->result, cxt, &c))
						return false;
					coll_merge(&merged, c);
				}
				if (!ship_walk((Node *) ce->defresult, cxt, &c))
					return false;
				coll_merge(&merged, c);
				*out = coll_result(ce->casetype, merged);
				return true;
			}

		case T_CaseTestExpr:
			{
				Expr	   *arg;
				List	   *saved = cxt->case_args;
				bool		ok;

				/* only inside a CASE x WHEN condition: it stands for x */
				if (saved == NIL || linitial(saved) == NULL)
					return false;
				arg = linitial(saved);
				cxt->case_args = list_copy_tail(saved, 1);
				ok = ship_walk((Node *) arg, cxt, out);
				list_free(cxt->case_args);
				cxt->case_args = saved;
				return ok;
			}

		case T_CoalesceExpr:
			{
				CoalesceExpr *ce = (CoalesceExpr *) node;

				if (!ship_args(ce->args, cxt, &merged))
					return false;
				*out = coll_result(ce->coalescetype, merged);
				return true;
			}

		case T_MinMaxExpr:
			{
				MinMaxExpr *mm = (MinMaxExpr *) node;

				if (!ship_args(mm->args, cxt, &merged))
					return false;
				if (!input_collation_ok(mm->inputcollid, merged, InvalidOid))
					return false;
				*out = coll_result(mm->minmaxtype, merged);
				return true;
			}

		case T_Aggref:
			{
				/*
				 * An aggregate runs on the node only inside the queries the
				 * planner builds for aggregate pushdown; plain aggregates of
				 * a built-in immutable function over shippable arguments.
				 */
				Aggref	   *agg = (Aggref *) node;
				ListCell   *lc;

				if (agg->aggkind != AGGKIND_NORMAL || agg->agglevelsup != 0 ||
					agg->aggdirectargs != NIL ||
					!func_is_shippable(agg->aggfnoid))
					return false;
				merged.collation = InvalidOid;
				merged.strength = CJ_COLL_NONE;
				foreach(lc, agg->args)
				{
					TargetEntry *tle = lfirst_node(TargetEntry, lc);
					CjColl		c;

					if (!ship_walk((Node *) tle->expr, cxt, &c))
						return false;
					if (!tle->resjunk)
						coll_merge(&merged, c);
				}
				if (agg->aggfilter != NULL)
				{
					CjColl		c;

					if (!ship_walk((Node *) agg->aggfilter, cxt, &c))
						return false;
				}
				/* ORDER BY and DISTINCT inside the call sort by the collation */
				if (!input_collation_ok(agg->inputcollid, merged, InvalidOid))
					return false;
				*out = coll_result(agg->aggtype, merged);
				return true;
			}

		case T_WindowFunc:
			return ship_window_func((WindowFunc *) node, cxt, out);

		default:

			/*
			 * SubLink, SubPlan, Aggref, WindowFunc, GroupingFunc,
			 * PlaceHolderVar, row expressions, subscripts, ...: evaluated by
			 * the coordinator.
			 */
			return false;
	}
}

/* the WINDOW clause a window function refers to, or NULL */
static WindowClause *
find_window(List *windows, Index winref)
{
	ListCell   *lc;

	foreach(lc, windows)
		if (lfirst_node(WindowClause, lc)->winref == winref)
			return (WindowClause *) lfirst(lc);
	return NULL;
}

/*
 * ship_window_func
 *		A window function runs on the node only in the select list of a
 *		task that computes every row of each of its partitions (windows.c
 *		checks that the PARTITION BY holds a partition key): a built-in
 *		function over shippable arguments, whose window's PARTITION BY and
 *		ORDER BY expressions ship, sorting by their types' default orders,
 *		with frame offsets that are shippable constants.
 */
static bool
ship_window_func(WindowFunc *wf, ShipContext *cxt, CjColl *out)
{
	WindowClause *wc;
	CjColl		merged;
	CjColl		c;
	ListCell   *lc;

	if (!cxt->allow_windows || !func_is_shippable(wf->winfnoid))
		return false;
	wc = find_window(cxt->windows, wf->winref);
	if (wc == NULL)
		return false;
	merged.collation = InvalidOid;
	merged.strength = CJ_COLL_NONE;
	foreach(lc, wf->args)
	{
		if (!ship_walk(lfirst(lc), cxt, &c))
			return false;
		coll_merge(&merged, c);
	}
	if (wf->aggfilter != NULL && !ship_walk((Node *) wf->aggfilter, cxt, &c))
		return false;
	if (!input_collation_ok(wf->inputcollid, merged, InvalidOid))
		return false;
	foreach(lc, list_concat(list_copy(wc->partitionClause), wc->orderClause))
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		Node	   *e = get_sortgroupclause_expr(sgc, cxt->window_tlist);
		TypeCacheEntry *tc;

		if (!ship_walk(e, cxt, &c))
			return false;
		tc = lookup_type_cache(exprType(e), TYPECACHE_LT_OPR | TYPECACHE_GT_OPR);
		if (list_member_ptr(wc->orderClause, sgc) &&
			sgc->sortop != tc->lt_opr && sgc->sortop != tc->gt_opr)
			return false;
	}
	if ((wc->startOffset && !IsA(wc->startOffset, Const)) ||
		(wc->endOffset && !IsA(wc->endOffset, Const)) ||
		(wc->startOffset && !ship_walk(wc->startOffset, cxt, &c)) ||
		(wc->endOffset && !ship_walk(wc->endOffset, cxt, &c)))
		return false;
	*out = coll_result(wf->wintype, merged);
	return true;
}

/*
 * cj_is_shippable_window
 *		See deparse.h.
 */
bool
cj_is_shippable_window(PlannerInfo *root, Expr *expr)
{
	ShipContext cxt;
	CjColl		coll;

	memset(&cxt, 0, sizeof(cxt));
	cxt.allow_windows = true;
	cxt.windows = root->parse->windowClause;
	cxt.window_tlist = root->processed_tlist;
	return ship_walk((Node *) expr, &cxt, &coll);
}

/*
 * cj_is_shippable
 *
 * Promises that cj_deparse_expr can write expr and that the node computes
 * the same value for it as the coordinator would: every type, function,
 * operator and collation named is built in, every function immutable, and
 * every collation-sensitive operation gets the collation the local plan
 * uses.  root is not needed today; it is part of the interface so that
 * rules may later depend on the query.
 *
 * A bare Var is shippable whatever its type: it is only a column fetched
 * from the node's table, whose column has the same type.
 */
bool
cj_is_shippable(PlannerInfo *root, Expr *expr, Relids relids)
{
	ShipContext cxt;
	CjColl		coll;

	(void) root;
	memset(&cxt, 0, sizeof(cxt));
	cxt.relids = relids;
	cxt.case_args = NIL;

	if (expr != NULL && IsA(expr, Var))
	{
		Var		   *var = (Var *) expr;

		return var->varlevelsup == 0 && var->varattno > 0 &&
			(relids == NULL || bms_is_member(var->varno, relids));
	}
	return ship_walk((Node *) expr, &cxt, &coll);
}

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

	collate = value_collate_clause(c->consttype, c->constcollid);
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

	collate = value_collate_clause(p->paramtype, p->paramcollid);
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
	ShipContext cxt;
	CjColl		c;

	memset(&cxt, 0, sizeof(cxt));
	cxt.relids = NULL;
	cxt.case_args = st->case_args;
	cxt.allow_windows = (st->ctx->windows != NIL);
	cxt.windows = st->ctx->windows;
	cxt.window_tlist = st->ctx->window_tlist;
	if (!ship_walk(node, &cxt, &c))
		elog(ERROR, "colojoin: expression cannot be deparsed for a node");
	return c;
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
	WindowClause *wc = find_window(st->ctx->windows, wf->winref);
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

				collate = relabel_collate_clause(r, remote_collation(relabel_arg(r), st));
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
