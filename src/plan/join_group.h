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
	UpperRelationKind stage;	/* the last step it does (the decision log) */

	/* ORDER BY / LIMIT of each task; the coordinator merges */
	List	   *order_exprs;	/* Expr */
	List	   *order_ops;		/* Oid of each sort operator (< or >) */
	List	   *order_nulls_first;	/* bool (int) of each */
	double		limit;			/* rows per task, or -1 */
	bool		with_ties;		/* FETCH FIRST n ROWS WITH TIES */

	/*
	 * NIL, or parallel to remote_exprs: SQL written for an item instead of
	 * its expression (NULL: the expression), where the item's value comes
	 * from a moved table's pre-aggregated columns.
	 */
	List	   *remote_sql;
} CjUpperSpec;

/*
 * With remote_exprs NIL a spec describes the join's own rows (the columns
 * the path's target needs), ordered and limited; otherwise exactly
 * remote_exprs.
 */

/* a spec with nothing set: no grouping, no order, no limit */
extern CjUpperSpec *cj_make_spec(const char *strategy);

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
 * Remember, for a grouped relation, the group and the spec of its fully
 * pushed-down aggregation, so that ORDER BY ... LIMIT above it can be
 * pushed into the same tasks.
 */
extern void cj_remember_upper(RelOptInfo *rel, CjJoinGroup *g,
							  CjUpperSpec *spec);
extern CjUpperSpec *cj_recall_upper(RelOptInfo *rel, CjJoinGroup **g);

/*
 * cj_aggref_splits (aggregates.c): the partial aggregates the nodes would
 * compute for agg, combined on the coordinator; false when it does not
 * split.
 */
extern bool cj_aggref_splits(Aggref *agg, List **partials);

/*
 * cj_split_aggregates (aggregates.c): exprs (a List of expressions, NULL
 * elements allowed) with every aggregate replaced by the expression that
 * combines its partial aggregates, listed in *partials (each appears in the
 * result as the argument of its combining aggregate); NIL when one does not
 * split.
 */
extern List *cj_split_aggregates(List *exprs, List **partials);

/*
 * pre_aggregate.c: whether g's moved table could be aggregated before its
 * move; and the group and spec of spec's partial aggregation with it so
 * (spec's partials computed from the moved groups), with what that adds
 * to the path's cost (negative: it saves) and whether a PreAggregate hint
 * asks for it, or false.
 */
extern bool cj_pre_aggregation_possible(PlannerInfo *root, CjJoinGroup *g);
extern bool cj_pre_aggregate(PlannerInfo *root, CjJoinGroup *g,
							 CjUpperSpec *spec, CjJoinGroup **pg,
							 CjUpperSpec **pspec, Cost *extra_cost,
							 bool *forced);

/*
 * decision_log.c: what colojoin.log_decisions reports.  A step's function
 * returns NULL when it offered a path, else why not, or CJ_STEP_NOT_HERE
 * when the step is none of its business (no LIMIT, not colojoin's tables).
 */
extern const char cj_step_not_here[];
#define CJ_STEP_NOT_HERE cj_step_not_here
extern List *cj_step_notes;
extern void cj_note_step(PlannerInfo *root, UpperRelationKind stage,
						 RelOptInfo *input_rel, RelOptInfo *output_rel,
						 const char *reason);
extern void cj_note_chosen(PlannerInfo *root, RelOptInfo *rel,
						   CjJoinGroup *g, CjUpperSpec *spec);
extern void cj_log_decisions(void);

/* window functions computed in the tasks, for the window relation (windows.c) */
extern const char *cj_add_window_paths(PlannerInfo *root, RelOptInfo *input_rel,
								RelOptInfo *window_rel);

/* ORDER BY ... LIMIT paths for the ordered relation (ordering.c) */
extern const char *cj_add_ordered_paths(PlannerInfo *root, RelOptInfo *input_rel,
								 RelOptInfo *ordered_rel);

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

/* the hooks that add paths above the join: aggregates.c, combine.c */
extern void cj_aggregates_init(void);
extern void cj_combine_init(void);

/*
 * pre_aggregate.c: the groups the tasks of g, a sharded table alone, send
 * when grouping by group_exprs (its columns) by its nodes' statistics, -1
 * when unknown: PostgreSQL guesses 200 values a column it has no
 * statistics of, which would cost the coordinator's final aggregation as
 * if it spilled
 */
extern double cj_single_table_groups(PlannerInfo *root, CjJoinGroup *g,
									 List *group_exprs);

/*
 * group_bound.c: lower the grouped rows of output_rel (the level's GROUP BY)
 * to what the relations its columns are joined to allow
 */
extern void cj_bound_grouped_rows(PlannerInfo *root, RelOptInfo *output_rel);

#endif							/* COLOJOIN_JOIN_GROUP_H */
