/*-------------------------------------------------------------------------
 *
 * planner.h
 *	  The planner hooks (planner.c), and the one thing a layer above hangs
 *	  on them: the write layer plans INSERT, UPDATE and DELETE of sharded
 *	  tables through cj_write_planner, which its init sets, so that the
 *	  planner never includes the write layer.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_PLANNER_H
#define COLOJOIN_PLANNER_H

#include "nodes/params.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"

/* plans a statement the usual way (the hooks before colojoin's) */
typedef PlannedStmt *(*CjPlannerFunc) (Query *parse, const char *query_string,
									   int cursorOptions,
									   ParamListInfo boundParams);

/*
 * The plan of a write colojoin runs itself, or NULL to plan the statement
 * with plan_fn (PostgreSQL and postgres_fdw).  parse is not modified.
 */
typedef PlannedStmt *(*CjWritePlanner) (Query *parse, const char *query_string,
										int cursorOptions,
										ParamListInfo boundParams,
										CjPlannerFunc plan_fn);

extern CjWritePlanner cj_write_planner;

/*
 * Set while the write path plans a statement it runs row by row through
 * PostgreSQL's own plan (write/row_writes.c): colojoin adds no paths.
 */
extern bool cj_plan_no_custom_paths;

extern void cj_planner_init(void);

#endif							/* COLOJOIN_PLANNER_H */
