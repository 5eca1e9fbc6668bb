/*-------------------------------------------------------------------------
 *
 * key_match.c
 *	  Whether a join makes partition keys equal (DESIGN §2 rule 4): key
 *	  columns and key expressions as the planner's expressions, and the
 *	  equalities of join clauses and equivalence classes that prove two
 *	  tables' keys equal row by row.
 *
 *	  It only answers questions about keys and clauses; planner.c decides
 *	  what the answers make of a join.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/hash.h"
#include "catalog/pg_am.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"
#include "optimizer/tlist.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "metadata/colocation.h"
#include "metadata/metadata.h"
#include "plan/hints.h"
#include "plan/planner_internal.h"
#include "plan/scan_plan.h"

/*
 * cj_key_var: the key column p of br as a Var exactly like the planner's own;
 * only for keys that are columns (cj_key_vars covers expressions too)
 */
Var *
cj_key_var(CjBaseRel *br, int p)
{
	Assert(br->table->partattrs[p] != 0);
	return (Var *) linitial(cj_key_vars(br->table, p, br->rtindex));
}

/* "o.o_orderkey" or "(o.k % 1000)" */
char *
cj_key_name(CjBaseRel *br, int p)
{
	return cj_key_text(br->table, p, br->alias);
}

bool
cj_is_var_of(Node *node, Var *var)
{
	while (node && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	return node && IsA(node, Var) &&
		((Var *) node)->varno == var->varno &&
		((Var *) node)->varattno == var->varattno &&
		((Var *) node)->varlevelsup == 0;
}

/* node is expr (a Var of this query level, or an expression), give or take relabelling */
static bool
is_expr_of(Node *node, Node *expr)
{
	if (IsA(expr, Var))
		return cj_is_var_of(node, (Var *) expr);
	while (node && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	return node && equal(node, expr);
}

static Oid
opfamily_method(Oid opfamily)
{
	HeapTuple	tup = SearchSysCache1(OPFAMILYOID, ObjectIdGetDatum(opfamily));
	Oid			method;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator family %u", opfamily);
	method = ((Form_pg_opfamily) GETSTRUCT(tup))->opfmethod;
	ReleaseSysCache(tup);
	return method;
}

/*
 * clause_equates
 *		Whether one of clauses is "a = b" (either order) with an equality
 *		operator of the partition key's operator family, so that equal
 *		values partition alike.  With identity, the comparison must also
 *		not use a nondeterministic collation: equal then means the same
 *		value, which is what an expression of the columns needs.
 */
bool
cj_clause_equates(List *clauses, Node *a, Node *b, Oid opfamily, bool identity)
{
	ListCell   *lc;

	foreach(lc, clauses)
	{
		Node	   *clause = (Node *) lfirst(lc);
		OpExpr	   *op;
		Node	   *l,
				   *r;
		int			strategy;

		if (!IsA(clause, OpExpr))
			continue;
		op = (OpExpr *) clause;
		if (list_length(op->args) != 2)
			continue;
		l = linitial(op->args);
		r = lsecond(op->args);
		if (!((is_expr_of(l, a) && is_expr_of(r, b)) ||
			  (is_expr_of(l, b) && is_expr_of(r, a))))
			continue;
		if (identity && OidIsValid(op->inputcollid) &&
			!get_collation_isdeterministic(op->inputcollid))
			continue;
		strategy = get_op_opfamily_strategy(op->opno, opfamily);
		/* btree and hash both number equality 3 and 1 respectively */
		if (strategy == 0)
			continue;
		if (opfamily_method(opfamily) == BTREE_AM_OID ?
			strategy == BTEqualStrategyNumber :
			strategy == HTEqualStrategyNumber)
			return true;
	}
	return false;
}

/*
 * equality_is_identity
 *		Whether two values of the type that its default equality calls equal
 *		are the same value, so that any expression of them gives the same
 *		result.  Not so for numeric (1.0 = 1.00), floats (0 = -0), bpchar
 *		(trailing spaces) or text under a nondeterministic collation.
 */
static bool
equality_is_identity(Oid typid, Oid collid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
		case BOOLOID:
		case CHAROID:
		case DATEOID:
		case TIMEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case UUIDOID:
			return true;
		case TEXTOID:
		case VARCHAROID:
		case NAMEOID:
			return !OidIsValid(collid) || get_collation_isdeterministic(collid);
		default:
			return false;
	}
}

/*
 * keys_equated
 *		Whether the join makes key column p of a and of b equal (rule 4): a
 *		column key needs "a.k = b.k" with an equality of the key's operator
 *		family; an expression key, the same expression in both tables
 *		(checked already) and each column it reads equated with the
 *		column in the same place of the other, by an equality that means
 *		identity.  ec_ok: an equivalence class proves it too (inner and
 *		semi joins).
 */
bool
cj_keys_equated(PlannerInfo *root, List *joinquals, bool ec_ok,
			 CjBaseRel *a, CjBaseRel *b, int p)
{
	bool		is_expr = (a->table->partattrs[p] == 0);
	List	   *avars;
	List	   *bvars;
	ListCell   *la,
			   *lb;

	if (!cj_key_exprs_alike(a->table, b->table, p))
		return false;
	if (is_expr)
	{
		/* the join may equate the key expressions themselves */
		Node	   *ea = copyObject(a->table->partexprs[p]);
		Node	   *eb = copyObject(b->table->partexprs[p]);

		ChangeVarNodes(ea, 1, a->rtindex, 0);
		ChangeVarNodes(eb, 1, b->rtindex, 0);
		if (cj_clause_equates(joinquals, ea, eb, a->table->partopfamily[p], false) ||
			(ec_ok && exprs_known_equal(root, ea, eb)))
			return true;
	}
	avars = cj_key_vars(a->table, p, a->rtindex);
	bvars = cj_key_vars(b->table, p, b->rtindex);
	if (list_length(avars) != list_length(bvars))
		return false;
	forboth(la, avars, lb, bvars)
	{
		Var		   *av = lfirst(la);
		Var		   *bv = lfirst(lb);
		Oid			family;

		if (!is_expr)
		{
			if (!cj_clause_equates(joinquals, (Node *) av, (Node *) bv,
								a->table->partopfamily[p], false) &&
				!(ec_ok && exprs_known_equal(root, (Node *) av, (Node *) bv)))
				return false;
			continue;
		}
		if (av->vartype != bv->vartype || av->varcollid != bv->varcollid ||
			!equality_is_identity(av->vartype, av->varcollid))
			return false;
		family = get_opclass_family(GetDefaultOpClass(av->vartype, BTREE_AM_OID));
		/* an equivalence class does not tell its collation per member */
		if (!cj_clause_equates(joinquals, (Node *) av, (Node *) bv, family, true) &&
			!(ec_ok && !OidIsValid(av->varcollid) &&
			  exprs_known_equal(root, (Node *) av, (Node *) bv)))
			return false;
	}
	return true;
}


/*
 * cj_tree_keeps_rows_of
 *		Whether every result row of t has a real row of table base: no
 *		outer join above it can put NULLs in its place.  Such a table's
 *		partition key says which class a result row belongs to.
 */
bool
cj_tree_keeps_rows_of(CjJoinTree *t, int base)
{
	if (t->lateral)
		return false;
	if (t->is_base)
		return t->base == base;
	switch (t->jointype)
	{
		case JOIN_INNER:
			return cj_tree_keeps_rows_of(t->outer, base) ||
				cj_tree_keeps_rows_of(t->inner, base);
		case JOIN_LEFT:
		case JOIN_SEMI:
		case JOIN_ANTI:
			return cj_tree_keeps_rows_of(t->outer, base);
		default:
			return false;
	}
}
