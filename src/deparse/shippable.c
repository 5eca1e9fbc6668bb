/*-------------------------------------------------------------------------
 *
 * shippable.c
 *	  Which expressions may run on a node (deparse.h cj_is_shippable,
 *	  cj_is_shippable_window): built-in and immutable, over values whose
 *	  text the node reads back exactly, with the collation the local plan
 *	  uses replayed by PostgreSQL's rules over the text we would write.
 *
 *	  Does not write any SQL (deparse.c) nor decide where a condition of a
 *	  join runs (plan/qual_placement.c).
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

static bool ship_walk(Node *node, ShipContext *cxt, CjColl *out);
static bool ship_window_func(WindowFunc *wf, ShipContext *cxt, CjColl *out);

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
 * cj_value_collate_clause: the collation a literal or parameter of type typid
 * with collation coll is given by an explicit COLLATE clause, or InvalidOid
 * when it gets none: when the node derives the same by itself (the type's
 * collation), or when the collation is not built in and so cannot be named
 * on the node.  In that last case the node derives the type's collation,
 * and the operation consuming the value decides whether that is good
 * enough (input_collation_ok).
 */
Oid
cj_value_collate_clause(Oid typid, Oid coll)
{
	if (!OidIsValid(coll) || coll == get_typcollation(typid) ||
		!is_builtin(coll))
		return InvalidOid;
	return coll;
}

/*
 * cj_relabel_arg: what a RelabelType's argument is, for shipping.  A column of
 * a domain over a built-in type read as that type counts as a column of
 * the base type: the node's column holds values of the base type (or of a
 * domain over it there), and the cast written around it says which type is
 * meant.
 */
Node *
cj_relabel_arg(RelabelType *r)
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
 * cj_relabel_collate_clause: whether a RelabelType must be written with a
 * COLLATE clause, given the collation the node derives for its argument.
 * A RelabelType between two different types is a binary coercion whose
 * collation bubbles up from the argument, so it needs one only when that
 * differs.  A RelabelType to the same type is what a COLLATE clause becomes
 * after planning: keep it explicit, so that it still beats the implicit
 * collations beside it.  Collations that are not built in cannot be named
 * on the node; the consumer of the value then judges the difference.
 */
Oid
cj_relabel_collate_clause(RelabelType *r, CjColl argcoll)
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
	Oid			clause = cj_value_collate_clause(typid, coll);

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

				if (!ship_walk(cj_relabel_arg(r), cxt, &merged))
					return false;
				clause = cj_relabel_collate_clause(r, merged);
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
WindowClause *
cj_find_window(List *windows, Index winref)
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
	wc = cj_find_window(cxt->windows, wf->winref);
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

CjColl
cj_node_collation(Node *node, List *case_args, List *windows, List *window_tlist)
{
	ShipContext cxt;
	CjColl		c;

	memset(&cxt, 0, sizeof(cxt));
	cxt.relids = NULL;
	cxt.case_args = case_args;
	cxt.allow_windows = (windows != NIL);
	cxt.windows = windows;
	cxt.window_tlist = window_tlist;
	if (!ship_walk(node, &cxt, &c))
		elog(ERROR, "colojoin: expression cannot be deparsed for a node");
	return c;
}
