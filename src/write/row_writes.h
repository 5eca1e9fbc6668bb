/*-------------------------------------------------------------------------
 *
 * row_writes.h
 *	  Writes colojoin runs row by row: an UPDATE or DELETE it cannot send
 *	  to the nodes whole, planned by PostgreSQL with colojoin's own foreign
 *	  data wrapper callbacks on its leaves (row_writes.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_ROW_WRITES_H
#define COLOJOIN_ROW_WRITES_H

#include "nodes/plannodes.h"

/*
 * cj_plan_row_writes: PostgreSQL's plan of the write in parse, in which
 * every scan and every change of a colojoin-managed leaf goes through
 * colojoin's connections (the transaction's write connection of the node,
 * every placement written); plan_fn plans the usual way.
 */
typedef PlannedStmt *(*CjRowPlanFunc) (Query *parse, const char *query_string,
									   int cursorOptions,
									   ParamListInfo boundParams);
extern PlannedStmt *cj_plan_row_writes(Query *parse, const char *query_string,
									   int cursorOptions,
									   ParamListInfo boundParams,
									   CjRowPlanFunc plan_fn);

/* whether relid is a foreign leaf of a sharded table colojoin manages */
extern bool cj_is_managed_leaf(Oid relid);
/* its metadata (placements), or NULL; valid until the transaction ends */
extern struct CjLeaf *cj_managed_leaf(Oid relid);

/* true while cj_plan_row_writes plans: colojoin adds no paths of its own */
extern bool cj_planning_rowwise;

/* whether a plan's foreign scans and modifications are colojoin's (above) */
extern bool cj_plan_is_row_writes(PlannedStmt *stmt);

/*
 * Around a write PostgreSQL makes outside the executor (COPY FROM of a
 * sharded table or leaf): the leaves at or below relid use colojoin's
 * callbacks until given back.  NULL (nothing lent) when there are none.
 */
extern void *cj_row_writes_lend(Oid relid);
extern void cj_row_writes_give_back(void *loan);

extern void cj_row_writes_init(void);

#endif							/* COLOJOIN_ROW_WRITES_H */
