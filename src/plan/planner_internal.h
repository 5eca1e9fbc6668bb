/*-------------------------------------------------------------------------
 *
 * planner_internal.h
 *	  The planner's picture of a colocated group, private to plan/: shared
 *	  by planner.c (the hooks and dispatch), group.c (building groups),
 *	  qual_placement.c (where conditions run), upper.c, the strategies
 *	  (move_choice.c, dual_repartition.c, lateral.c, pre_aggregate.c, ...),
 *	  remote_sql.c (the SQL the plan sends) and plan_create.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_PLANNER_INTERNAL_H
#define COLOJOIN_PLANNER_INTERNAL_H

#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"

#include "metadata/colocation.h"
#include "metadata/metadata.h"
#include "plan/hints.h"
#include "plan/join_group.h"
#include "plan/key_match.h"
#include "deparse/deparse.h"

/* A sharded table taking part in a join */
typedef struct CjBaseRel
{
	Index		rtindex;
	Oid			relid;
	CjTable    *table;
	char	   *alias;			/* the query's name for it, for messages */
	Oid			checkasuser;
	bool	   *class_live;		/* per class of the table: survived pruning */
	bool	  **leaf_live;		/* per class, per leaf */
	List	   *quals;			/* its restriction clauses (Expr), in
								 * security_level order */
	List	   *qual_levels;	/* parallel: each one's security_level */
	bool		has_security_quals; /* row security or a security-barrier
									 * qual of lower level than the query's */
	List	   *remote_quals;	/* those that run on the node */
	bool		filter_in_derived;	/* quals go into a derived table */

	/*
	 * Redistribution (DESIGN §3): a table whose rows are moved to the nodes
	 * of the group's classes instead of being read where they are.  Moved
	 * tables have no place in the class space (space_index -1).
	 */
	int			space_index;	/* its table in the group's class space */
	int			move;			/* CJ_MOVE_* */
	Expr	   *move_key;		/* CJ_MOVE_REPARTITION: the value hashed, a
								 * column or the anchor's key expression
								 * over mb's columns */
	Oid			move_hashfn;	/* its hash support function */
	int			move_modulus;	/* the anchor's modulus */
	List	   *move_attnos;	/* columns the moved rows carry */
	bool		move_keep_nulls;	/* CJ_MOVE_REPARTITION of a side the
									 * join keeps (dual repartition): rows
									 * whose key is NULL go to class 0 */
	char	   *move_name;		/* base name of its temporary tables */

	/*
	 * Aggregation before the move (pre_aggregate.c): the moved rows are
	 * grouped by move_attnos on their nodes, each group carrying these
	 * partial aggregates (CjPreAgg) of its rows; NIL for plain rows.
	 */
	List	   *preagg;
	double		preagg_rows;	/* the groups the sources send, estimated */

	/*
	 * A table a subquery of the group reads (lateral.c), moved for it: not
	 * one of the query's relations, so its rows and width are its own.
	 */
	bool		in_subquery;
	double		subquery_rows;
	double		subquery_tuples;	/* its rows before its own conditions */
	int			subquery_width;

	/*
	 * A table that is not sharded (table NULL), broadcast from the
	 * coordinator: read with or without its inheritance children, as the
	 * query reads it.
	 */
	bool		local_inh;

	/*
	 * A reference table (cj_is_reference_table: one partition that takes
	 * every row, copies on the nodes) joined to sharded tables: every
	 * class of the group reads the whole table, from its copy on the
	 * task's node.  It has a place in the class space (member class 0 in
	 * every class) but no say in it: its key neither colocates nor groups.
	 */
	bool		reference;			/* read so in this group */
	bool		reference_capable;	/* the table is a reference table */

	/*
	 * A stage (stage_move.c): not a table but the rows of a colocated
	 * group of other tables (the relations stage_relids), computed by its
	 * tasks and moved (table NULL, relid invalid, rtindex the first of
	 * stage_relids).  Its rows carry the columns stage_vars.
	 */
	struct CjJoinGroup *stage;
	Relids		stage_relids;
	List	   *stage_vars;		/* Var */
	List	   *stage_task_vars;	/* Var: what its tasks return, when its
									 * sources group them (preagg) into
									 * stage_vars and partial aggregates */
	double		stage_rows;		/* the group's output */
	double		stage_input_rows;	/* what its tasks read */
	int			stage_width;

	/*
	 * Rows the coordinator computes (coordinator_rows.c): a relation that is
	 * no table (a WITH query's scan, a subquery, VALUES, a function), made
	 * here by PostgreSQL's own plan of it (coord_path, a child plan of the
	 * scan) and broadcast before the tasks start (table NULL, relid
	 * invalid).  Its rows carry the columns stage_vars, its relation's
	 * target in order; coord_child is its plan's place among the scan's
	 * child plans, set when the plan is made.
	 */
	Path	   *coord_path;
	int			coord_child;
} CjBaseRel;

/* a moved relation whose rows carry stage_vars: a stage or coordinator rows */
#define CJ_CARRIES_VARS(br) ((br)->stage != NULL || (br)->coord_path != NULL)

/* a partial aggregate computed on a moved table's nodes before it moves */
typedef struct CjPreAgg
{
	Aggref	   *agg;			/* over the moved table's columns */
	char	   *column;			/* its column in the moved rows */
} CjPreAgg;

#define CJ_MOVE_NONE		0
#define CJ_MOVE_PARTITIONS	1	/* partitions that refine the class, copied */
#define CJ_MOVE_REPARTITION 2	/* rows routed by the anchor's hash function */
#define CJ_MOVE_BROADCAST	3	/* the whole table to every task's node */

/* a LATERAL subquery run in the tasks (lateral.c) */
typedef struct CjLateral CjLateral;

/* The join tree of a colocated group, as it will be written in SQL */
typedef struct CjJoinTree
{
	bool		is_base;
	int			base;			/* index into CjJoinGroup.rels when is_base */
	CjLateral  *lateral;		/* or a LATERAL subquery (a leaf, not is_base) */
	JoinType	jointype;		/* INNER, LEFT, FULL, SEMI or ANTI */
	struct CjJoinTree *outer;
	struct CjJoinTree *inner;
	List	   *joinquals;		/* Expr: the join's own condition */
	List	   *otherquals;		/* Expr: applied above an outer join */
	List	   *remote_joinquals;	/* set by the shippability pass */
	List	   *remote_otherquals;
} CjJoinTree;

/* One task of a group: a partition class and the node that runs it */
typedef struct CjTask
{
	int			cls;
	Oid			serverid;
	List	   *alternatives;	/* Oid: other nodes that hold the class */
} CjTask;

/*
 * What we know about a join relation (or a single sharded table) that
 * colojoin can run as one remote query per partition class.
 */
struct CjJoinGroup
{
	RelOptInfo *rel;
	List	   *rels;			/* CjBaseRel * */
	CjJoinTree *tree;
	char	   *keys_text;		/* "o.o_orderkey = l.l_orderkey" */
	CjClassSpace *space;
	List	   *tasks;			/* CjTask * */
	int			npruned;
	int			nempty;
	List	   *local_quals;	/* Expr run on the coordinator, in
								 * security_level order (cj_add_local_qual) */
	List	   *local_levels;	/* parallel: each one's security_level */
	Oid			userid;
	bool		trust_placement;	/* joinOptions(is_colocated_by_join_keys) */
	List	   *hints_used;		/* CjHint * this group follows */
	char	   *move_text;		/* what moves, for EXPLAIN, or NULL */

	/*
	 * Aggregation before its move, worked out once per group (the join's
	 * choice and the aggregation paths ask again): pre_aggregate.c.
	 */
	bool		preagg_known;
	double		preagg_groups;	/* -1: not allowed (preagg_why) */
	List	   *preagg_carried;	/* attnos of a table; Vars of a stage */
	const char *preagg_why;
};

/* where the SQL of one task is being written */
typedef struct CjSqlContext
{
	CjJoinGroup *g;
	int			cls;			/* class being written */
	Oid			serverid;		/* node it runs on */
	CjDeparseContext dctx;

	/*
	 * Per table of the group: how many semi or anti joins, whose inner side
	 * holds it, the SQL being written is outside of (and how many of them
	 * are anti joins).  Such a table is out of reach of the SQL there.
	 */
	int		   *hidden;
	int		   *hidden_by_anti;

	/*
	 * Every class of one node's task, when the task reads several (int,
	 * NIL: only cls): each table read in place is the UNION ALL of its
	 * classes, a repartitioned one the rows of all of them.
	 */
	List	   *classes;
} CjSqlContext;

/* remote_sql.c */
extern void cj_sql_context_init(CjSqlContext *sc, CjJoinGroup *g);
extern char *cj_task_sql(CjJoinGroup *g, List *scan_vars, CjUpperSpec *spec,
						 int cls, Oid serverid, CjSqlContext *sc);
/* remote_sql.c's pieces that move_sql.c writes with too */
extern void cj_append_string_list(StringInfo buf, List *items, const char *sep,
								  const char *empty_text);
extern char *cj_quals_text(List *quals, CjSqlContext *sc);
extern void cj_append_base_from(StringInfo buf, CjBaseRel *br, CjSqlContext *sc);
extern void cj_append_leaf_select(StringInfo buf, CjBaseRel *br, CjLeaf *leaf,
								  CjPlacement *placement);
extern CjPlacement *cj_placement_on(CjLeaf *leaf, Oid serverid);
extern void cj_append_empty_relation(StringInfo buf, CjBaseRel *br);
extern bool cj_remote_type_declared(CjBaseRel *br, CjLeaf *leaf, AttrNumber attno);

/* move_sql.c: the SQL of the moves (temporary tables, COPYs, FROM items) */
extern List *cj_build_moves(PlannerInfo *root, CjJoinGroup *g,
							CjSqlContext *sc, double *rows_moved);
extern List *cj_refining_leaves(CjJoinGroup *g, CjBaseRel *br, int c);
extern bool cj_leaves_on_node(List *leaves, Oid serverid);

/*
 * remote_sql.c: whether the classes of g's tables read in place can be read
 * as one UNION ALL on serverid: every live leaf of them has, as its node
 * told the size cache, the declared type of every column (a UNION of
 * differing types would fail or convert on the node)
 */
extern bool cj_classes_union_alike(CjJoinGroup *g, List *classes);

/* remote_sql.c: class m (-1: none) of br's table on a node, unaliased */
extern void cj_append_class_from(StringInfo buf, CjBaseRel *br, int m,
								 Oid serverid);

/* Join relations examined during one planner() call (group.c) */
typedef struct CjJoinAttempt
{
	RelOptInfo *joinrel;
	CjJoinGroup *group;			/* NULL while every attempt failed */
	Relids		split;			/* one input of the join that built group */
	Cost		cost;			/* the total cost of group's path */
	bool		forced;			/* a hint asked for group */
	bool		chosen;			/* in the plan, alone or in a larger group */
	List	   *reasons;		/* why the failed attempts failed */
	char	   *names;			/* its tables, for the decision log */
	CjUpperSpec *upper;			/* for a grouped relation: full pushdown */
} CjJoinAttempt;

/* the attempts of the current planner() call; planner.c saves and resets it */
extern List *cj_attempts;

/*
 * group.c: building groups, the strategies' common ground.  A group whose
 * class space has no tables (ntables 0, dual repartition) brings its own
 * tasks to cj_finish_group, and each of its classes is its own hash
 * remainder.
 */
extern CjJoinAttempt *cj_find_attempt(RelOptInfo *joinrel);
extern CjJoinAttempt *cj_get_attempt(RelOptInfo *joinrel);
extern CjJoinGroup *cj_group_of_rel(RelOptInfo *rel);
extern bool cj_is_sharded_baserel(PlannerInfo *root, RelOptInfo *rel);
extern bool cj_is_dimension_rel(PlannerInfo *root, RelOptInfo *rel);
extern CjBaseRel *cj_make_base_rel(PlannerInfo *root, RelOptInfo *rel,
								   List **reasons);
extern CjBaseRel *cj_make_dimension_rel(PlannerInfo *root, RelOptInfo *rel,
										List **reasons);
extern bool cj_live_leaves_foreign(CjBaseRel *br, List **reasons);
extern CjJoinGroup *cj_group_for_rel(PlannerInfo *root, RelOptInfo *rel,
									 List **reasons);
/* how many reference tables the group reads whole in each class (its space's last tables) */
extern int	cj_group_references(CjJoinGroup *g);
extern bool cj_group_has_references(CjJoinGroup *g);
extern int	cj_class_remainder(CjJoinGroup *g, int c);
extern bool cj_tree_produces(CjJoinTree *t, const bool *present);
extern bool cj_finish_group(PlannerInfo *root, CjJoinGroup *g, List **reasons);
extern List *cj_copy_rels(List *rels);
extern List *cj_tree_quals(CjJoinTree *t);
extern double cj_group_moved_rows(PlannerInfo *root, CjJoinGroup *g);
extern bool cj_orient_join(RelOptInfo **outerrel, RelOptInfo **innerrel,
						   JoinType *jointype);
extern bool cj_split_join_clauses(RelOptInfo *joinrel, JoinType jointype,
								  JoinPathExtraData *extra, List **joinquals,
								  List **otherquals, List **reasons);

/*
 * qual_placement.c: where each condition runs (remote_quals of the tables and
 * joins, the group's local_quals in security_level order), or false with
 * the reason; what the group may hand up above its join
 */
extern bool cj_check_shippable(PlannerInfo *root, CjJoinGroup *g,
							   List **reasons);
extern void cj_insert_by_level(List **exprs, List **levels, Expr *q,
							   int level);
extern bool cj_check_target(CjJoinGroup *g, RelOptInfo *joinrel, List **reasons);
extern bool cj_filtered_at_source(CjBaseRel *br);
extern List *cj_task_quals(PlannerInfo *root, CjBaseRel *br);

/* upper.c: the rows a group's join produces, and a CustomPath of it */
extern double cj_group_input_rows(PlannerInfo *root, CjJoinGroup *g);
extern Path *cj_new_scan_path(RelOptInfo *parent, CjJoinGroup *g,
							  PathTarget *target, double rows,
							  Cost startup, Cost total, List *private);

/*
 * lateral.c: subqueries that follow the group's classes (LATERAL ones
 * correlated on the partition key, others joined on a key they group by),
 * run in the tasks as a leaf of the join tree
 */
extern bool cj_is_lateral_rel(RelOptInfo *rel);
extern List *cj_conjuncts(Node *node, List *result);
extern bool cj_is_subquery_rel(RelOptInfo *rel);

/* scalar_subquery.c: correlated scalar subqueries in WHERE as LATERAL items */
extern void cj_lateralize_scalar_subqueries(Query *parse);
extern bool cj_is_sharded_relid(Oid relid);

/* subquery_narrowing.c: a copy of parse with its grouped subqueries narrowed */
extern Query *cj_narrowed_query(Query *parse, char **what);
extern bool cj_equality_groups_alike(OpExpr *op, Var *v);
extern CjJoinGroup *cj_try_lateral_join(PlannerInfo *root, RelOptInfo *joinrel,
										RelOptInfo *outerrel, RelOptInfo *innerrel,
										JoinType jointype, JoinPathExtraData *extra,
										List **reasons);
extern bool cj_tree_has_lateral(CjJoinTree *t);
extern Index cj_lateral_uncorrelated_rti(CjJoinTree *t);
extern List *cj_lateral_nodes(CjJoinGroup *g, int c, List *nodes);
extern bool cj_lateral_anchors_in_place(CjJoinGroup *g, List **reasons);
extern void cj_lateral_describe(CjJoinTree *t, StringInfo buf);
extern const char *cj_lateral_var_name(CjJoinTree *t, Var *var);
extern void cj_append_lateral(StringInfo buf, CjLateral *lat, CjSqlContext *sc);
extern List *cj_lateral_moved_tables(CjJoinTree *t);
extern int	cj_single_modulus(CjTable *table);
extern char *cj_new_move_name(Index rtindex);
extern void cj_append_moved_from(StringInfo buf, CjBaseRel *br, CjSqlContext *sc);
extern void cj_lateral_plan_rtes(PlannerInfo *root, CjJoinTree *t);

/*
 * dual_repartition.c: the join of two sharded tables with both sides
 * repartitioned by the hash of an equated value into one hash class per
 * node, or NULL (with reasons).  Unless forced, NULL too when rival (the
 * group another way built, or NULL) moves no more rows.
 */
extern CjJoinGroup *cj_try_dual_repartition(PlannerInfo *root, RelOptInfo *joinrel,
											RelOptInfo *outerrel, RelOptInfo *innerrel,
											JoinType jointype, JoinPathExtraData *extra,
											CjJoinGroup *rival, bool forced,
											List **reasons);
extern char *cj_moved_key_text(CjBaseRel *br);

/* key_match.c: keys as expressions, and the equalities that match them */
extern Var *cj_key_var(CjBaseRel *br, int p);
extern char *cj_key_name(CjBaseRel *br, int p);
extern bool cj_is_var_of(Node *node, Var *var);
extern bool cj_keys_equated(PlannerInfo *root, List *joinquals, bool ec_ok,
							CjBaseRel *a, CjBaseRel *b, int p);
extern bool cj_tree_keeps_rows_of(CjJoinTree *t, int base);

/*
 * repartition_key.c: how mb's rows are routed like the anchor's hash
 * partitioning: the value to hash (a column of mb equated with the anchor's
 * key, or the anchor's key expression over mb's equated columns) and the
 * hash support function; false when there is none.
 */
extern bool cj_repartition_key(PlannerInfo *root, CjBaseRel *anchor,
							   CjBaseRel *mb, List *joinquals, bool ec_ok,
							   Expr **key, Oid *hashfn);
/* family's 64-bit hash function of typid that a node can call by name */
extern Oid	cj_usable_hash_function(Oid opfamily, Oid typid);
/* move_choice.c: whether conditions hold a parameter (a move takes none) */
extern bool cj_contains_param(Node *node);

/*
 * move_choice.c: how a table outside the class space reaches the classes
 * of a group (CJ_MOVE_*, or CJ_MOVE_NONE with a reason), the rows that
 * moves and what the group's moves add to a path's cost
 */
extern int	cj_choose_move(PlannerInfo *root, CjJoinGroup *ag, CjBaseRel *mb,
						   RelOptInfo *mrel, List *joinquals, JoinType jointype,
						   int forced, List **reasons);
extern char *cj_move_description(CjBaseRel *mb, CjBaseRel *anchor);
extern double cj_moved_rows(PlannerInfo *root, CjJoinGroup *g, CjBaseRel *br);
extern List *cj_moved_tables(CjJoinGroup *g);
extern Cost cj_pre_aggregation_saving(PlannerInfo *root, CjJoinGroup *g);
extern double cj_moved_table_rows(PlannerInfo *root, CjBaseRel *br);
extern Cost cj_moves_cost(PlannerInfo *root, CjJoinGroup *g);
extern int	cj_task_node_count(CjJoinGroup *g);
extern bool cj_move_columns(CjBaseRel *br, Node *exprs, List **reasons);
extern bool cj_broadcast_allowed(CjBaseRel *br, RelOptInfo *rel,
								 List **reasons);

/*
 * pre_aggregate.c: the rows g's moved table mb would send aggregated
 * before its move (once per node for a broadcast), or -1 when the query
 * does not allow it or its nodes' statistics are missing
 */
extern double cj_pre_aggregated_rows(PlannerInfo *root, CjJoinGroup *g,
									 CjBaseRel *mb);

/*
 * pre_aggregate.c: a subquery's one table mb, moved by a column it groups
 * by, grouped on its nodes before the move; the subquery's select list and
 * HAVING over its partial aggregates (Vars in *partial_vars), or NIL
 */
extern List *cj_pre_aggregate_subquery(CjBaseRel *mb, Query *q,
									   List **partial_vars);

/*
 * coordinator_rows.c: rows the coordinator computes (a WITH query, a
 * subquery, VALUES, a function), broadcast into a group
 */
extern bool cj_is_coordinator_rows_rel(PlannerInfo *root, RelOptInfo *rel);
extern CjBaseRel *cj_make_coordinator_rows_rel(PlannerInfo *root,
											   RelOptInfo *rel,
											   List **reasons);
extern List *cj_coordinator_paths(CjJoinGroup *g);
extern void cj_number_coordinator_rows(CjJoinGroup *g);

/*
 * stage_move.c: a colocated group's output moved into another group's
 * classes (a stage): whether g can be one, its CjBaseRel, its columns,
 * how it moves, and the COPY each of its nodes runs
 */
extern bool cj_stage_possible(CjJoinGroup *g, List **reasons);
extern CjBaseRel *cj_make_stage_rel(PlannerInfo *root, RelOptInfo *mrel,
									CjJoinGroup *sg);
extern bool cj_rel_has_varno(CjBaseRel *br, Index varno);
extern bool cj_stage_columns(CjBaseRel *sb, Node *exprs, List **reasons);
extern char *cj_stage_column_name(Var *v);
extern const char *cj_stage_var_name(CjBaseRel *sb, Var *var);
extern int	cj_choose_stage_move(PlannerInfo *root, CjJoinGroup *ag,
								 CjBaseRel *sb, List *joinquals, bool inner,
								 int forced, List **reasons);
extern char *cj_stage_description(PlannerInfo *root, CjBaseRel *sb,
								  CjBaseRel *anchor);
extern char *cj_stage_source_sql(CjBaseRel *sb, Oid serverid,
								 const char *class_sql, List *remainders,
								 bool binary);
extern List *cj_stage_source_nodes(CjBaseRel *sb);

/* plan_create.c: the CustomScan of a chosen path */
extern Plan *cj_plan_custom_path(PlannerInfo *root, RelOptInfo *rel,
								 CustomPath *best_path, List *tlist,
								 List *clauses, List *custom_plans);

#endif							/* COLOJOIN_PLANNER_INTERNAL_H */
