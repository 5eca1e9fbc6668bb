/*-------------------------------------------------------------------------
 *
 * repartition_key.c
 *	  How rows of a moved table are routed to the classes of the anchor's
 *	  hash partitioning (CJ_MOVE_REPARTITION): the value each row hashes,
 *	  computed on the source node, and the hash support function that
 *	  PostgreSQL's own routing uses for the anchor's key.
 *
 *	  A column of the moved table that the join equates with the anchor's
 *	  key column; or, for an anchor partitioned on an expression, that same
 *	  expression over the moved table's columns that the join equates with
 *	  the columns it reads.  This file only finds the key; choose_move
 *	  (planner.c) decides whether to move, remote_sql.c writes the SQL.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/hash.h"
#include "access/relation.h"
#include "access/transam.h"
#include "catalog/pg_am.h"
#include "commands/defrem.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"
#include "parser/parse_coerce.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "plan/planner_internal.h"
#include "deparse/deparse.h"

/*
 * cj_usable_hash_function
 *		The anchor's hash support function for values of type typid, when the
 *		node can call it by name on such a value: built in, and declared on
 *		typid or a type typid casts to without a change of representation
 *		(date's is declared on int4, which date does not cast to).
 */
Oid
cj_usable_hash_function(Oid opfamily, Oid typid)
{
	Oid			fn = get_opfamily_proc(opfamily, typid, typid, HASHEXTENDED_PROC);
	Oid		   *argtypes;
	int			nargs;

	if (!OidIsValid(fn) || fn >= FirstGenbkiObjectId || get_func_nargs(fn) != 2)
		return InvalidOid;
	(void) get_func_signature(fn, &argtypes, &nargs);
	if (argtypes[0] != typid && !IsBinaryCoercible(typid, argtypes[0]))
		return InvalidOid;
	return fn;
}

/*
 * equated_column
 *		A column of mb that the join equates with av (ec_ok: equivalence
 *		classes count), or NULL.  With identity, the equality must mean the
 *		same value and the column have av's type and collation, since an
 *		expression of it must give av's expression's result.
 */
static Var *
equated_column(PlannerInfo *root, CjBaseRel *mb, Var *av, Oid opfamily,
			   List *joinquals, bool ec_ok, bool identity)
{
	Relation	rel = RelationIdGetRelation(mb->relid);
	TupleDesc	desc = RelationGetDescr(rel);
	Var		   *found = NULL;
	int			a;

	for (a = 0; a < desc->natts && found == NULL; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);
		Var		   *bv;

		if (att->attisdropped)
			continue;
		if (OidIsValid(att->attcollation) &&
			!get_collation_isdeterministic(att->attcollation))
			continue;
		if (identity && (att->atttypid != av->vartype ||
						 att->attcollation != av->varcollid))
			continue;
		bv = makeVar(mb->rtindex, att->attnum, att->atttypid, att->atttypmod,
					 att->attcollation, 0);
		if (cj_clause_equates(joinquals, (Node *) av, (Node *) bv, opfamily, identity) ||
			(ec_ok && (!identity || !OidIsValid(att->attcollation)) &&
			 exprs_known_equal(root, (Node *) av, (Node *) bv)))
			found = bv;
	}
	RelationClose(rel);
	return found;
}

/* the Vars of an expression replaced, in walker order, by those of a list */
typedef struct VarSwap
{
	List	   *vars;
	int			next;
} VarSwap;

static Node *
swap_vars_mutator(Node *node, VarSwap *swap)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
		return copyObject(list_nth(swap->vars, swap->next++));
	return expression_tree_mutator(node, swap_vars_mutator, (void *) swap);
}

/*
 * cj_repartition_key
 *		See planner_internal.h.
 */
bool
cj_repartition_key(PlannerInfo *root, CjBaseRel *anchor, CjBaseRel *mb,
				   List *joinquals, bool ec_ok, Expr **key, Oid *hashfn)
{
	CjTable    *t = anchor->table;
	Oid			family = t->partopfamily[0];

	if (t->partnatts != 1)
		return false;
	if (t->partattrs[0] != 0)
	{
		Var		   *bv = equated_column(root, mb, cj_key_var(anchor, 0), family,
										joinquals, ec_ok, false);

		if (bv == NULL || !OidIsValid(*hashfn = cj_usable_hash_function(family, bv->vartype)))
			return false;
		*key = (Expr *) bv;
		return true;
	}
	else
	{
		/* the key expression, over the columns of mb the join equates */
		List	   *avars = cj_key_vars(t, 0, anchor->rtindex);
		List	   *bvars = NIL;
		ListCell   *lc;
		VarSwap		swap;
		Node	   *expr;

		foreach(lc, avars)
		{
			Var		   *av = lfirst(lc);
			Oid			eqfamily = get_opclass_family(GetDefaultOpClass(av->vartype,
																		BTREE_AM_OID));
			Var		   *bv;

			if (!OidIsValid(eqfamily))
				return false;
			bv = equated_column(root, mb, av, eqfamily, joinquals, ec_ok, true);
			if (bv == NULL)
				return false;
			bvars = lappend(bvars, bv);
		}
		swap.vars = bvars;
		swap.next = 0;
		expr = swap_vars_mutator(copyObject(t->partexprs[0]), &swap);
		if (!cj_is_shippable(root, (Expr *) expr, NULL) ||
			!OidIsValid(*hashfn = cj_usable_hash_function(family, exprType(expr))))
			return false;
		*key = (Expr *) expr;
		return true;
	}
}
