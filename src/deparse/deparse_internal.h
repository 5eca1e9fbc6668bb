/*-------------------------------------------------------------------------
 *
 * deparse_internal.h
 *	  What shippable.c and deparse.c share inside deparse/: the collations
 *	  a node derives for what we write, and the helpers that decide a
 *	  COLLATE clause, used both to judge an expression and to write it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_DEPARSE_INTERNAL_H
#define COLOJOIN_DEPARSE_INTERNAL_H

#include "nodes/parsenodes.h"
#include "nodes/primnodes.h"

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

/*
 * cj_node_collation: the collation the node derives for node, written in
 * the context of case_args (the enclosing CASE tests) and the query's
 * windows; ERROR when node is not shippable there.
 */
extern CjColl cj_node_collation(Node *node, List *case_args, List *windows,
								List *window_tlist);
extern Oid	cj_value_collate_clause(Oid typid, Oid coll);
extern Node *cj_relabel_arg(RelabelType *r);
extern Oid	cj_relabel_collate_clause(RelabelType *r, CjColl argcoll);
extern WindowClause *cj_find_window(List *windows, Index winref);

#endif							/* COLOJOIN_DEPARSE_INTERNAL_H */
