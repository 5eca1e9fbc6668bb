/*-------------------------------------------------------------------------
 *
 * lateral_internal.h
 *	  What lateral.c knows of a subquery run in the tasks, shared with
 *	  lateral_sql.c, which writes it.  Nothing else reads these structs:
 *	  the rest of the planner sees CjLateral as opaque (planner_internal.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_LATERAL_INTERNAL_H
#define COLOJOIN_LATERAL_INTERNAL_H

#include "plan/planner_internal.h"

/* one sharded table the subquery reads */
typedef struct CjLateralTable
{
	Index		rti;			/* in the subquery's range table */
	CjBaseRel  *rel;			/* the table with every leaf live */
	Index		anchor;			/* the group's table whose class it follows */
	int		   *classes;		/* per class of the anchor's table: the
								 * class of this table holding the same
								 * keys, or -1 */
	bool		whole;			/* a reference table: its one class, whole,
								 * in every task (no anchor) */
	bool		moved;			/* repartitioned to the anchor's classes by
								 * a column the subquery groups by (rel's
								 * move fields; no classes) */
} CjLateralTable;

struct CjLateral
{
	Index		rtindex;		/* the subquery in the query's range table */
	char	   *alias;
	Query	   *query;			/* a copy whose Vars are all of level 0:
								 * its own tables' varnos shifted by offset,
								 * the query's own varnos as they are */
	Index		offset;
	List	   *tables;			/* CjLateralTable * */
	List	   *quals;			/* conditions on its rows (Expr over its
								 * output columns) */
	char	   *keys_text;		/* for EXPLAIN: its key equalities */
	char	   *refs_text;		/* and its reference tables */
	const char *kind;			/* "LATERAL subquery" or "subquery" */
	bool		correlated;		/* LATERAL: reads the group's columns */

	/*
	 * Its moved table grouped on its nodes first (pre_aggregate.c): the
	 * select list's expressions, then HAVING, over the partial aggregates,
	 * which are the Vars of partial_vars; NIL otherwise.
	 */
	List	   *grouped_exprs;
	List	   *partial_vars;

	/* conditions narrowing its rows to those the join keeps (CjSemiFilter) */
	List	   *semi_filters;
};

/*
 * The join's equalities between a column of the subquery (as the column of
 * its table it stands for) and columns of one table of the group, written
 * into the subquery as EXISTS over that table with its conditions.
 */
typedef struct CjSemiFilter
{
	Index		rtindex;		/* the group's table */
	char	   *alias;
	List	   *clauses;		/* Expr */
} CjSemiFilter;

/* lateral.c */
extern List *cj_tree_laterals(CjJoinTree *t, List *result);
extern int	cj_lateral_table_class(CjJoinGroup *g, CjLateralTable *lt, int c);

#endif							/* COLOJOIN_LATERAL_INTERNAL_H */
