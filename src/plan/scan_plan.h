/*-------------------------------------------------------------------------
 *
 * scan_plan.h
 *	  The plan node colojoin's planner hands to its executor, the one
 *	  header both include: a CustomScan
 *	  whose custom_private describes the tasks to run, one per partition
 *	  class, each with its node and remote SQL.
 *
 *	  Everything here is a plain node List so that the plan can be copied,
 *	  cached and serialised like any other PostgreSQL plan.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_SCAN_PLAN_H
#define COLOJOIN_SCAN_PLAN_H

#include "nodes/pg_list.h"
#include "nodes/extensible.h"
#include "nodes/plannodes.h"

/* the name users see in EXPLAIN */
#define COLOJOIN_CUSTOM_SCAN_NAME "ColocatedJoin"

/* positions in CustomScan.custom_private */
typedef enum CjPrivateIndex
{
	CJ_PRIVATE_STRATEGY,		/* String: "colocated on a.k = b.k" */
	CJ_PRIVATE_NCLASSES,		/* Integer: classes in the class space */
	CJ_PRIVATE_NPRUNED,			/* Integer: classes removed by pruning */
	CJ_PRIVATE_NEMPTY,			/* Integer: classes no row can come from */
	CJ_PRIVATE_USERID,			/* Integer: user whose mappings to use, 0 =
								 * current user */
	CJ_PRIVATE_TASKS,			/* List of task Lists, see below */
	CJ_PRIVATE_ROWS_MOVED,		/* Integer: rows moved between nodes (plan) */
	CJ_PRIVATE_PRUNE_KEYS,		/* List: run-time pruning, see executor.c */
	CJ_PRIVATE_HINTS,			/* String: hints this scan follows, or "" */
	CJ_PRIVATE_MOVES,			/* List of moves, see below */
	CJ_PRIVATE_HINTS_UNUSED,	/* String: the statement's hints no scan
								 * followed when this one was planned */
	CJ_PRIVATE_IN_PLACE,		/* List of [Integer rtindex, Integer relid,
								 * Integer space index, Integer kept]: the
								 * tables of the class space read where they
								 * live; kept when every result row has a
								 * real row of it (INSERT ... SELECT uses
								 * it, modify.c) */
	CJ_PRIVATE_COUNT
} CjPrivateIndex;

/* positions in one task's List */
typedef enum CjTaskIndex
{
	CJ_TASK_CLASS,				/* Integer: class index in the class space */
	CJ_TASK_SERVER,				/* Integer: server OID */
	CJ_TASK_NODE,				/* String: node name, for messages */
	CJ_TASK_SQL,				/* String: the remote query */
	CJ_TASK_LABEL,				/* String: the class, e.g. its bound */
	CJ_TASK_HASH_REMAINDER,		/* Integer: hash remainder, -1 if not hash */
	CJ_TASK_ALTERNATIVES,		/* List of [Integer server, String node,
								 * String sql]: where else it can run */
	CJ_TASK_MEMBERS,			/* List of Integer: the class of each table
								 * of the class space this task reads, -1
								 * for none (or several) */
	CJ_TASK_NCLASSES,			/* Integer: the classes it reads (several:
								 * all of a node's, plan_create.c) */
	CJ_TASK_COUNT
} CjTaskIndex;

/*
 * positions in one move's List: rows copied into a temporary table on one
 * node before the tasks run (redistribution and broadcast)
 */
typedef enum CjMoveIndex
{
	CJ_MOVE_DEST,				/* Integer: server OID of the destination */
	CJ_MOVE_CREATE,				/* String: creates the temporary table */
	CJ_MOVE_COPY_IN,			/* String: COPY ... FROM STDIN */
	CJ_MOVE_DROP,				/* String: drops it */
	CJ_MOVE_SOURCES,			/* List of [Integer server, String COPY TO,
								 * Integer 1 when it reads the tables of the
								 * next level on its node (a stage's source
								 * whose group moved rows itself)]; server
								 * InvalidOid: the coordinator, with the
								 * SELECT it runs, or Integer k: the rows of
								 * the scan's child plan k (custom_plans) */
	CJ_MOVE_LABEL,				/* String: for messages and EXPLAIN */
	CJ_MOVE_ANALYZE,			/* String: ANALYZE of the filled table */
	CJ_MOVE_BINARY,				/* Integer: 1 when the COPYs are binary */
	CJ_MOVE_CLASSES,			/* List of Integer: the classes of the rows it
								 * takes, when the sources' rows are routed
								 * (repartitioning); else NIL */
	CJ_MOVE_LEVEL,				/* Integer: 0 for the moves the tasks read; a
								 * stage's own moves one more than the
								 * stage's, filled before it */
	CJ_MOVE_COUNT
} CjMoveIndex;

extern CustomScanMethods cj_scan_methods;

/* create the executor state of a colojoin CustomScan (executor.c) */
extern Node *cj_create_scan_state(CustomScan *cscan);

/* true when this transaction wrote to a sharded or foreign table */
extern bool cj_xact_wrote_to_shards(void);

#endif							/* COLOJOIN_SCAN_PLAN_H */
