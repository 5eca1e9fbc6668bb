/*-------------------------------------------------------------------------
 *
 * join_group.h
 *	  What the planner knows about a colocated group (a colocated join, or
 *	  one sharded table on its own), offered to the planning of the steps
 *	  above the join (aggregates.c): they add paths whose remote queries
 *	  compute more than the join's rows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_JOIN_GROUP_H
#define COLOJOIN_JOIN_GROUP_H

#include "nodes/pathnodes.h"

typedef struct CjJoinGroup CjJoinGroup;

/* What the remote query of an upper path computes */
typedef struct CjUpperSpec
{
	List	   *remote_exprs;	/* its select list (may hold Aggrefs) */
	int			ngroup;			/* GROUP BY the first ngroup items; 0: none */
	List	   *having;			/* remote HAVING, implicit AND (Aggrefs) */
	List	   *local_quals;	/* run on the coordinator over the result */
	const char *strategy;		/* for EXPLAIN: what each task computes */
} CjUpperSpec;

/*
 * cj_group_for_input: the colocated group whose rows rel holds (a join
 * relation colojoin accepted, or a sharded table, which becomes a group
 * of one), or NULL.
 */
extern CjJoinGroup *cj_group_for_input(PlannerInfo *root, RelOptInfo *rel);

/* conditions of the group that only the coordinator can evaluate */
extern bool cj_group_has_local_quals(CjJoinGroup *g);

/*
 * cj_group_groups_by_key: exprs contain every partition key column of a
 * table whose rows every result row has (not on the nullable side of an
 * outer join), so that each group lives in one partition class.
 */
extern bool cj_group_groups_by_key(CjJoinGroup *g, List *exprs);

extern int	cj_group_ntasks(CjJoinGroup *g);

/*
 * cj_make_upper_path: a CustomPath of parent producing target, whose tasks
 * run spec's query over the group.
 */
extern Path *cj_make_upper_path(PlannerInfo *root, RelOptInfo *parent,
								CjJoinGroup *g, PathTarget *target,
								CjUpperSpec *spec, double rows);

/*
 * cj_make_combine_path (combine.c): child's rows presented under target's
 * expressions, for the coordinator's combining Agg.
 */
extern Path *cj_make_combine_path(PlannerInfo *root, RelOptInfo *rel,
								  Path *child, PathTarget *target);

#endif							/* COLOJOIN_JOIN_GROUP_H */
