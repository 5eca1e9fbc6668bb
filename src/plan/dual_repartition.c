/*-------------------------------------------------------------------------
 *
 * dual_repartition.c
 *	  Joins of two sharded tables where neither side is partitioned on
 *	  the join column: both sides are repartitioned by the hash of their
 *	  join column into a synthetic class space (one hash class per node
 *	  their rows live on), and each class joins there.  Each row of each
 *	  side moves once, where a broadcast moves the smaller side once per
 *	  node.
 *
 *	  This file decides whether and how (which equality to hash, with which
 *	  hash functions, onto which nodes) and builds the group; the moves
 *	  themselves are CJ_MOVE_REPARTITION moves of both tables, written by
 *	  move_sql.c and carried out by the executor like any other.  It
 *	  does not extend a group: only two base relations are repartitioned,
 *	  and nothing builds on the result (its tables have no class space
 *	  table to colocate with).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/hash.h"
#include "access/htup_details.h"
#include "access/sysattr.h"
#include "access/transam.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"

#include "plan/planner_internal.h"
#include "remote/connection.h"
#include "deparse/deparse.h"

/*
 * Hash classes per destination node.  Moved rows are read on the one
 * connection per node that holds their temporary tables, so more classes
 * per node would only add tasks, not parallelism.
 */
#define CJ_DUAL_CLASSES_PER_NODE 1

static int	dual_name_counter = 0;

/* the hash operator family of equality operator opno, or InvalidOid */
static Oid
hash_family_of(Oid opno)
{
	CatCList   *catlist = SearchSysCacheList1(AMOPOPID, ObjectIdGetDatum(opno));
	Oid			family = InvalidOid;
	int			i;

	for (i = 0; i < catlist->n_members && !OidIsValid(family); i++)
	{
		Form_pg_amop amop = (Form_pg_amop) GETSTRUCT(&catlist->members[i]->tuple);

		if (amop->amopmethod == HASH_AM_OID &&
			amop->amopstrategy == HTEqualStrategyNumber)
			family = amop->amopfamily;
	}
	ReleaseSysCacheList(catlist);
	return family;
}

/*
 * key_hash_function
 *		The 64-bit hash support function of family for values of typid, when
 *		every node computes the same hash of the same value: a built-in
 *		function of a built-in scalar type, declared on that type or one it
 *		casts to unchanged (date's is declared on int4, which date does not
 *		cast to).  An enum hashes its OID, which differs between nodes;
 *		arrays and records hash their elements with functions of their own,
 *		so they are left out too.
 */
static Oid
key_hash_function(Oid family, Oid typid)
{
	if (typid >= FirstGenbkiObjectId || get_typtype(typid) != TYPTYPE_BASE ||
		OidIsValid(get_element_type(typid)))
		return InvalidOid;
	return cj_usable_hash_function(family, typid);
}

/* expr reads columns of table rtindex only (at least one), nothing volatile */
static bool
reads_only(PlannerInfo *root, Node *expr, Index rtindex)
{
	Relids		varnos = pull_varnos(root, expr);

	return bms_equal(varnos, bms_make_singleton(rtindex)) &&
		!contain_volatile_functions(expr) &&
		cj_is_shippable(root, (Expr *) expr, NULL);
}

/*
 * find_hash_key
 *		An equality of the join's own conditions between a value of a and a
 *		value of b that a hash operator family hashes alike on both sides
 *		(cross-type members of one family do, by the family's contract).
 *		Rows whose values are equal under it then land in the same class,
 *		so hashing this one pair suffices for any further conditions of the
 *		join, equalities of other columns included.
 */
static bool
find_hash_key(PlannerInfo *root, List *joinquals, CjBaseRel *a, CjBaseRel *b)
{
	ListCell   *lc;

	foreach(lc, joinquals)
	{
		OpExpr	   *op = (OpExpr *) lfirst(lc);
		Node	   *l,
				   *r;
		Oid			family;
		Oid			lfn,
					rfn;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2)
			continue;
		l = linitial(op->args);
		r = lsecond(op->args);
		if (reads_only(root, r, a->rtindex) && reads_only(root, l, b->rtindex))
		{
			Node	   *tmp = l;

			l = r;
			r = tmp;
		}
		else if (!reads_only(root, l, a->rtindex) || !reads_only(root, r, b->rtindex))
			continue;

		/* a nondeterministic collation hashes equal strings differently */
		if (OidIsValid(op->inputcollid) &&
			!get_collation_isdeterministic(op->inputcollid))
			continue;
		family = hash_family_of(op->opno);
		if (!OidIsValid(family))
			continue;
		lfn = key_hash_function(family, exprType(l));
		rfn = key_hash_function(family, exprType(r));
		if (!OidIsValid(lfn) || !OidIsValid(rfn))
			continue;
		a->move_key = (Expr *) l;
		a->move_hashfn = lfn;
		b->move_key = (Expr *) r;
		b->move_hashfn = rfn;
		return true;
	}
	return false;
}

/*
 * moved_columns_of
 *		The columns br's moved rows must carry (into br->move_attnos); false
 *		when the join needs a system column or the whole row.
 */
static bool
moved_columns_of(PlannerInfo *root, CjBaseRel *br, RelOptInfo *joinrel,
				 List *joinquals, List *otherquals, List **reasons)
{
	return cj_move_columns(br, (Node *) list_make4(joinrel->reltarget->exprs,
												   joinquals, otherquals,
												   cj_task_quals(root, br)),
						   reasons);
}

/*
 * source_nodes
 *		nodes with the nodes holding the live leaves of br added (their
 *		primaries: where COPY reads them); false when a live leaf has no
 *		placement left to read.
 */
static bool
source_nodes(CjBaseRel *br, List **nodes, List **reasons)
{
	int			c,
				l;

	for (c = 0; c < br->table->nclasses; c++)
		for (l = 0; l < br->table->classes[c].nleaves; l++)
		{
			CjLeaf	   *leaf = &br->table->classes[c].leaves[l];

			if (!br->leaf_live[c][l])
				continue;
			if (leaf->nplacements == 0)
			{
				*reasons = lappend(*reasons,
								   psprintf("partition %s of %s has no placement to read",
											get_rel_name(leaf->relid), br->alias));
				return false;
			}
			*nodes = list_append_unique_oid(*nodes, leaf->placements[0].serverid);
		}
	return true;
}

/* "a.o_custkey", the hashed value of a moved table as the query names it */
char *
cj_moved_key_text(CjBaseRel *br)
{
	Node	   *key = copyObject((Node *) br->move_key);

	/* Vars of varno 1 for ruleutils */
	ChangeVarNodes(key, br->rtindex, 1, 0);
	return deparse_expression(key, deparse_context_for(br->alias, br->relid),
							  true, false);
}

/*
 * cj_try_dual_repartition
 *		See planner_internal.h.
 */
CjJoinGroup *
cj_try_dual_repartition(PlannerInfo *root, RelOptInfo *joinrel,
						RelOptInfo *outerrel, RelOptInfo *innerrel,
						JoinType jointype, JoinPathExtraData *extra,
						CjJoinGroup *rival, bool forced, List **reasons)
{
	List	   *joinquals = NIL;
	List	   *otherquals = NIL;
	CjBaseRel  *a,
			   *b;
	CjJoinGroup *g;
	CjJoinTree *t;
	CjJoinTree *ta,
			   *tb;
	CjClassSpace *space;
	List	   *nodes;
	ListCell   *lc;
	double		arows,
				brows;
	int			c;

	if (!cj_orient_join(&outerrel, &innerrel, &jointype))
		return NULL;
	if (outerrel->reloptkind != RELOPT_BASEREL ||
		innerrel->reloptkind != RELOPT_BASEREL)
	{
		*reasons = lappend(*reasons,
						   pstrdup("dual repartition moves two sharded tables, not a join"));
		return NULL;
	}
	if (cj_xact_has_dml())
	{
		*reasons = lappend(*reasons,
						   pstrdup("this transaction wrote through colojoin: rows are not moved until it commits"));
		return NULL;
	}

	a = cj_make_base_rel(root, outerrel, reasons);
	b = cj_make_base_rel(root, innerrel, reasons);
	if (a == NULL || b == NULL ||
		!cj_live_leaves_foreign(a, reasons) || !cj_live_leaves_foreign(b, reasons))
		return NULL;
	if (cj_contains_param((Node *) a->quals) ||
		cj_contains_param((Node *) b->quals))
	{
		*reasons = lappend(*reasons,
						   pstrdup("a table has a condition with a parameter, which a move cannot carry"));
		return NULL;
	}
	if (!cj_split_join_clauses(joinrel, jointype, extra, &joinquals, &otherquals,
							   reasons))
		return NULL;
	if (!find_hash_key(root, joinquals, a, b))
	{
		*reasons = lappend(*reasons,
						   psprintf("the join equates no value of %s with one of %s by a hash equality every node computes alike",
									a->alias, b->alias));
		return NULL;
	}

	/*
	 * Every row of both sides goes to exactly one class.  A NULL key equals
	 * nothing: the rows of a side the join keeps go to class 0, where they
	 * appear once; the others are left behind.
	 */
	a->move_keep_nulls = (jointype == JOIN_LEFT || jointype == JOIN_FULL ||
						  jointype == JOIN_ANTI);
	b->move_keep_nulls = (jointype == JOIN_FULL);

	/* one class per node that holds rows of either side */
	nodes = NIL;
	if (!source_nodes(a, &nodes, reasons) || !source_nodes(b, &nodes, reasons))
		return NULL;
	if (nodes == NIL)
	{
		*reasons = lappend(*reasons,
						   pstrdup("neither side has a partition left to read"));
		return NULL;
	}

	/* broadcast moves the smaller side per node; this moves both once */
	arows = outerrel->rows;
	brows = innerrel->rows;
	if (rival != NULL && !forced &&
		cj_group_moved_rows(root, rival) <= arows + brows)
		return NULL;

	space = palloc0(sizeof(CjClassSpace));
	space->ntables = 0;
	space->nclasses = list_length(nodes) * CJ_DUAL_CLASSES_PER_NODE;

	g = palloc0(sizeof(CjJoinGroup));
	g->rel = joinrel;
	g->space = space;
	for (c = 0; c < space->nclasses; c++)
	{
		CjTask	   *task = palloc0(sizeof(CjTask));

		task->cls = c;
		task->serverid = list_nth_oid(nodes, c / CJ_DUAL_CLASSES_PER_NODE);
		/* moved rows sit on one node: no failover */
		task->alternatives = NIL;
		g->tasks = lappend(g->tasks, task);
	}

	foreach(lc, list_make2(a, b))
	{
		CjBaseRel  *br = lfirst(lc);

		br->move = CJ_MOVE_REPARTITION;
		br->move_modulus = space->nclasses;
		if (!moved_columns_of(root, br, joinrel, joinquals, otherquals, reasons))
			return NULL;
		br->move_name = psprintf("colojoin_move_d%d_%u", ++dual_name_counter,
								 br->rtindex);
	}

	g->rels = list_make2(a, b);
	ta = palloc0(sizeof(CjJoinTree));
	ta->is_base = true;
	ta->base = 0;
	tb = palloc0(sizeof(CjJoinTree));
	tb->is_base = true;
	tb->base = 1;
	t = palloc0(sizeof(CjJoinTree));
	t->jointype = jointype;
	t->outer = ta;
	t->inner = tb;
	t->joinquals = joinquals;
	t->otherquals = otherquals;
	g->tree = t;

	if (!cj_finish_group(root, g, reasons) || !cj_check_target(g, joinrel, reasons))
		return NULL;

	g->move_text = psprintf("dual repartition of %s (~%.0f row%s) and %s (~%.0f row%s) into %d hash class%s",
							quote_identifier(a->alias), arows, arows == 1 ? "" : "s",
							quote_identifier(b->alias), brows, brows == 1 ? "" : "s",
							space->nclasses, space->nclasses == 1 ? "" : "es");
	return g;
}
