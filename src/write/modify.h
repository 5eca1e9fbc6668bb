/*-------------------------------------------------------------------------
 *
 * modify.h
 *	  colojoin's write path: the plan of an INSERT, UPDATE or DELETE of a
 *	  sharded table (modify.c) and the executor that carries it out
 *	  (modify_exec.c).
 *
 *	  The plan is a PlannedStmt whose top node is a CustomScan
 *	  "ColojoinModify" instead of a ModifyTable:
 *	  - statements: one remote UPDATE / DELETE per leaf and placement,
 *	    run on the nodes (UPDATE ... FROM and DELETE ... USING of
 *	    colocated tables included);
 *	  - route: the rows of its child plan (the INSERT's VALUES or SELECT)
 *	    are routed to their leaves by PostgreSQL's partitioning rules and
 *	    sent in batches to every placement (insert_route.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_MODIFY_H
#define COLOJOIN_MODIFY_H

#include "nodes/extensible.h"
#include "nodes/params.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"

#include "plan/planner.h"

/* how the write runs */
#define CJ_MODIFY_STATEMENTS	1
#define CJ_MODIFY_ROUTE			2

/* positions in the CustomScan's custom_private */
typedef enum CjModifyIndex
{
	CJ_MODIFY_KIND,				/* Integer: CJ_MODIFY_* */
	CJ_MODIFY_RELID,			/* Integer: the sharded table written */
	CJ_MODIFY_VERB,				/* String: "INSERT", "UPDATE" or "DELETE" */
	CJ_MODIFY_USERID,			/* Integer: whose user mappings, 0 = current */
	CJ_MODIFY_RETURNING,		/* Integer: 1 when rows come back */
	CJ_MODIFY_STMTS,			/* statements: List of statement Lists */
	CJ_MODIFY_CONFLICT,			/* route: List of [Integer leaf, String
								 * ON CONFLICT clause, Integer range table
								 * index of the target, which names it
								 * there, List of String: the conflict
								 * target's columns as the leaf's node names
								 * them, Integer: 1 for DO UPDATE], NIL for
								 * none */
	CJ_MODIFY_CHECKS,			/* route: the WithCheckOptions of views the
								 * rows are inserted through (planned), NIL
								 * for none */
	CJ_MODIFY_RTI,				/* route: Integer, the target's range table
								 * index, which the checks' Vars name */
	CJ_MODIFY_COUNT
} CjModifyIndex;

/* positions in one statement's List */
typedef enum CjModifyStmtIndex
{
	CJ_MSTMT_SERVER,			/* Integer: server OID */
	CJ_MSTMT_NODE,				/* String: node name */
	CJ_MSTMT_SQL,				/* String: the remote statement */
	CJ_MSTMT_PLACEMENT,			/* Integer: the placement's index in the
								 * leaf's placements, 0 for the primary */
	CJ_MSTMT_LEAF,				/* Integer: the leaf's OID */
	CJ_MSTMT_COUNT
} CjModifyStmtIndex;

/*
 * cj_plan_modify: the plan of a write colojoin runs itself, or NULL to leave
 * the statement to PostgreSQL (and postgres_fdw).  plan_fn plans the
 * statement the usual way; parse is not modified.
 */
extern PlannedStmt *cj_plan_modify(Query *parse, const char *query_string,
								   int cursorOptions, ParamListInfo boundParams,
								   CjPlannerFunc plan_fn);

/*
 * cj_write_target: relid is a sharded table colojoin writes itself: every
 * leaf a postgres_fdw foreign table, no triggers or row security on the
 * coordinator's tables (they would have to run there, per row).  When not,
 * *why (may be NULL) says why.
 */
extern bool cj_write_target(Oid relid, const char **why);

/*
 * true while PostgreSQL plans the rows of an INSERT into a sharded table:
 * scans of sharded tables are then colojoin's (read_after_write.c), so
 * that an INSERT ... SELECT colocated with its target runs on the nodes
 */
extern bool cj_planning_insert_source;

/*
 * true while PostgreSQL plans an UPDATE or DELETE only to learn which
 * leaves survive pruning (the plan is replaced by colojoin's statements):
 * its scans are left as PostgreSQL makes them, even after a write
 */
extern bool cj_planning_write_pruning;

extern CustomScanMethods cj_modify_scan_methods;
/* the write layer's hooks: modify_exec.c, write_guard.c, copy_from.c, read_after_write.c */
extern void cj_modify_init(void);
extern void cj_write_guard_init(void);
extern void cj_copy_from_init(void);
extern void cj_truncate_init(void);
extern void cj_read_after_write_init(void);

#endif							/* COLOJOIN_MODIFY_H */
