/*-------------------------------------------------------------------------
 *
 * colocation.h
 *	  The colocation rules of DESIGN §2 that depend only on metadata: do two
 *	  sharded tables partition alike, which partition classes correspond,
 *	  and which nodes hold a class.  Used by the planner and by the SQL
 *	  function colojoin.colocation().
 *
 *	  Reasons are human-readable sentences (palloc'd char *) so that both
 *	  the planner's decision log and colocation() can show them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_COLOCATION_H
#define COLOJOIN_COLOCATION_H

#include "metadata/metadata.h"

/*
 * The common class space of a group of sharded tables.  A class of the space
 * is a set of partitions, at most one per table, with identical bounds; a
 * table without such a partition has no leaf for the class (it behaves as
 * an empty relation there).  Partitions of different tables that overlap
 * without having identical bounds make the group non-colocatable.
 */
typedef struct CjClassSpace
{
	int			ntables;
	CjTable   **tables;
	int			nclasses;
	/* members[c * ntables + t]: class index within tables[t], or -1 */
	int		   *members;
} CjClassSpace;

#define CJ_MEMBER(space, c, t) ((space)->members[(c) * (space)->ntables + (t)])

/*
 * cj_schemes_compatible: a and b partition alike (same strategy, same number
 * of key columns, key columns whose operator families and collations agree
 * -- int2/int4/int8 share one family and so are compatible -- and key
 * expressions that are alike).  When not, appends one reason per mismatch
 * to *reasons.
 */
extern bool cj_schemes_compatible(CjTable *a, CjTable *b, List **reasons);

/*
 * cj_key_exprs_alike: key column col is a column in both tables, or in both
 * the same expression over columns of the same types in the same places
 * (a.(k % 1000) and b.(j % 1000)): equal values of those columns give equal
 * keys.
 */
extern bool cj_key_exprs_alike(CjTable *a, CjTable *b, int col);

/*
 * cj_key_vars: the Vars (of range table index varno) that key column col
 * reads: the column itself, or every Var of the expression in order of
 * appearance.  For two tables whose keys are alike, the n-th Vars of both
 * must be equal for the keys to be equal.
 */
extern List *cj_key_vars(CjTable *t, int col, Index varno);

/*
 * cj_build_class_space: the common class space of tables (a List of
 * CjTable *), whose schemes must already be compatible pairwise.  Returns
 * NULL and appends reasons when bounds disagree (e.g. hash moduli differ,
 * range bounds overlap without being equal, default partitions that could
 * hold each other's values).
 */
extern CjClassSpace *cj_build_class_space(List *tables, List **reasons);

/*
 * cj_common_nodes: nodes (List of Oid) that hold every leaf of cls for
 * which leaf_live[i] is true (all leaves when leaf_live is NULL).
 */
extern List *cj_common_nodes(CjClass *cls, const bool *leaf_live);

/*
 * cj_is_reference_table: t has a single partition that takes every row (a
 * DEFAULT partition, or hash modulus 1) with a single leaf: every copy of
 * it holds the whole table, so each class of a join can read it whole.
 */
extern bool cj_is_reference_table(CjTable *t);

/*
 * cj_space_add_references: space with nrefs more tables (refs) whose one
 * class is a member of every class of space.
 */
extern CjClassSpace *cj_space_add_references(CjClassSpace *space, int nrefs,
											 CjTable **refs);

/* the nodes of a that are also in b, in a's order */
extern List *cj_intersect_nodes(List *a, List *b);

/* "HASH", "LIST" or "RANGE" */
extern const char *cj_strategy_name(char strategy);

/* human-readable description of a class-space class: its bound */
extern char *cj_class_label(CjClassSpace *space, int cls);

#endif							/* COLOJOIN_COLOCATION_H */
