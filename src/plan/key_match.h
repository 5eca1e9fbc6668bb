/*-------------------------------------------------------------------------
 *
 * key_match.h
 *	  The part of key matching (key_match.c) that needs no planner
 *	  internals: whether a list of conditions equates two expressions, for
 *	  the write layer's colocated UPDATE ... FROM too.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_KEY_MATCH_H
#define COLOJOIN_KEY_MATCH_H

#include "nodes/pg_list.h"
#include "nodes/primnodes.h"

/*
 * cj_clause_equates: clauses hold an equality of a and b (either order) by
 * an operator of opfamily; with identity, only one whose equal values are
 * identical (so that equal keys partition alike).
 */
extern bool cj_clause_equates(List *clauses, Node *a, Node *b, Oid opfamily,
							  bool identity);

#endif							/* COLOJOIN_KEY_MATCH_H */
