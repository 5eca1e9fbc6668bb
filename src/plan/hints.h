/*-------------------------------------------------------------------------
 *
 * hints.h
 *	  Query hints: hint comments (comments opening with "/" "*" "+") that steer colojoin for one
 *	  statement, in the style pg_hint_plan users know plus Apache Pinot's
 *	  joinOptions(...).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_HINTS_H
#define COLOJOIN_HINTS_H

#include "nodes/parsenodes.h"
#include "nodes/pathnodes.h"
#include "nodes/pg_list.h"

typedef enum CjHintKind
{
	CJ_HINT_COLOCATED_JOIN,		/* ColocatedJoin(a b ...) */
	CJ_HINT_NO_COLOCATED_JOIN,	/* NoColocatedJoin(a b ...) */
	CJ_HINT_REDISTRIBUTE_JOIN,	/* RedistributeJoin(a b) */
	CJ_HINT_REDISTRIBUTE,		/* Redistribute(b), Redistribute(a b) */
	CJ_HINT_BROADCAST_JOIN,		/* BroadcastJoin(b) */
	CJ_HINT_LOCAL_JOIN,			/* LocalJoin(a b) */
	CJ_HINT_PRE_AGGREGATE,		/* PreAggregate(b) */
	CJ_HINT_JOIN_OPTIONS		/* joinOptions(key='value', ...) */
} CjHintKind;

typedef struct CjHint
{
	CjHintKind	kind;
	char	   *text;			/* as written, for messages and EXPLAIN */
	int			position;		/* 1-based character in the statement */
	List	   *names;			/* relation names (char *), case-folded */
	bool		trust_colocation;	/* joinOptions(is_colocated_by_join_keys) */
	bool		used;
	bool		valid;			/* false once superseded by a conflict */
	List	   *failures;		/* why the planner could not follow it */
} CjHint;

typedef struct CjHintSet
{
	List	   *hints;			/* CjHint * */
} CjHintSet;

/*
 * cj_parse_hints: the hints of one statement (text of len bytes, len < 0 for
 * the whole string).  Malformed hints, unknown names and conflicts are
 * WARNINGs that quote the text and its position; the rest still apply.
 * Hints of pg_hint_plan are ignored silently.  Relation names are checked
 * against query.  Returns NULL when the statement has no colojoin hints.
 */
extern CjHintSet *cj_parse_hints(const char *text, int len, Query *query);

/* whether joinOptions(is_colocated_by_join_keys='true') is in force */
extern CjHint *cj_hint_trust_colocation(CjHintSet *set);

/*
 * The hints of the statement being planned (planner.c sets them; NULL:
 * none), and the lookups the strategies make in them: the hint of a kind
 * that covers relids (exactly, or any of them), the ColocatedJoin hint
 * over a join, a PreAggregate hint of one table.  cj_joinrel_names gives a
 * relation's tables as the query names them, for messages.
 */
extern CjHintSet *cj_set_statement_hints(CjHintSet *hints);
extern CjHintSet *cj_statement_hints(void);
extern char *cj_joinrel_names(PlannerInfo *root, RelOptInfo *rel);
extern char *cj_relids_names(PlannerInfo *root, Relids relids);
extern bool cj_hint_covers(PlannerInfo *root, CjHint *hint, Relids relids,
						   bool exact);
extern CjHint *cj_find_hint(PlannerInfo *root, Relids relids, bool exact,
							CjHintKind kind1, CjHintKind kind2);
extern CjHint *cj_colocated_hint_over(PlannerInfo *root, Relids relids);
extern CjHint *cj_pre_aggregate_hint(PlannerInfo *root, Index rtindex);

#endif							/* COLOJOIN_HINTS_H */
