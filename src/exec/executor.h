/*-------------------------------------------------------------------------
 *
 * executor.h
 *	  The execution state of a colojoin CustomScan, shared by the executor
 *	  (executor.c) and EXPLAIN (explain.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_EXECUTOR_H
#define COLOJOIN_EXECUTOR_H

#include "commands/explain.h"
#include "nodes/execnodes.h"
#include "portability/instr_time.h"

#include "exec/local_source.h"
#include "remote/connection.h"
#include "remote/row_decode.h"

/* one task of the plan, with what ANALYZE reports of it */
typedef struct CjExecTask
{
	int			cls;
	Oid			serverid;
	char	   *node;
	char	   *sql;
	char	   *label;
	int			remainder;
	bool		taken;			/* dispatched (or skipped) */
	bool		skipped;		/* pruned at run time */
	int			runs;			/* times sent, over rescans */
	bool		done;
	double		rows;
	uint64		bytes;
	double		seconds;

	/* failover: the other nodes holding the class, with the SQL for each */
	int			nalts;
	Oid		   *alt_server;
	char	  **alt_node;
	char	  **alt_sql;
	char	   *planned_node;	/* where the plan put it */
	bool		failed_over;	/* it ran elsewhere, its node being down */
} CjExecTask;

/* rows moved into a temporary table on one node before the tasks */
typedef struct CjExecMove
{
	Oid			dest;
	char	   *create_sql;
	char	   *copy_in_sql;
	char	   *drop_sql;
	char	   *analyze_sql;
	List	   *sources;		/* List of [Integer server, String sql] */
	char	   *label;
	bool		binary;			/* its COPYs are binary (CJ_MOVE_BINARY) */
	List	   *classes;		/* CJ_MOVE_CLASSES */
	int			level;			/* CJ_MOVE_LEVEL: deeper levels fill first */
	bool		created;		/* to drop at the end */
	int			dest_slot;		/* connection slot holding the table */
	uint64		xact_id;		/* its remote transaction (cj_conn_xact_id) */
	int			runs;			/* times it was made, over rescans */
	uint64		bytes;
	uint64		rows;			/* rows it moved the last time it ran */
	double		seconds;
} CjExecMove;

/*
 * One connection working for the scan.  A task runs as a cursor on the
 * node, read in batches of CJ_FETCH_SIZE rows: while the scan returns the
 * rows of one batch, the node already computes the next.
 */
typedef struct CjWorker
{
	Oid			serverid;
	int			slot;
	CjConnection *conn;
	CjExecTask *task;			/* task being read, NULL when idle */
	instr_time	started;
	bool		in_flight;		/* a command runs on the connection */
	bool		exhausted;		/* the cursor returned its last rows */
	bool		first_batch;	/* no batch of the cursor arrived yet */
	bool		rerun_in_text;	/* reopen the cursor for text rows */
	PGresult   *batch;			/* rows being returned */
	int			batch_row;		/* the next of them */
	PGresult   *pending;		/* the next batch, arrived early */
	List	   *drained;		/* the cursor's last rows (PGresult *), read
								 * to its end when another scan of the
								 * statement needed the connection */
	char	   *begin_sql;		/* remote transaction start to send first */
} CjWorker;

#define CJ_FETCH_SIZE 2000
#define CJ_CURSOR_NAME "colojoin_cursor"

typedef struct CjScanState
{
	CustomScanState css;

	/* from the plan */
	char	   *strategy;
	char	   *hints;			/* hints this scan follows, or "" */
	char	   *hints_unused;	/* the statement's hints nothing followed */
	int			nclasses;
	int			npruned;
	int			nempty;
	int			rows_moved;
	Oid			userid;
	int			ntasks;
	CjExecTask *tasks;
	int			nplanned;		/* the classes the tasks read */
	int			nmoves;
	CjExecMove *moves;

	/*
	 * Rows the coordinator computes for the moves: each child plan's
	 * (custom_ps), run to its end before the moves start, so that a
	 * colojoin scan inside it is done with its connections.  Made again
	 * when a rescan changes a parameter the child plan reads.
	 */
	int			ncoord;
	CjStoredRows *coord;
	bool	   *coord_done;		/* its rows are in coord[k].store */

	/* parameters sent as $1..$n */
	List	   *param_states;	/* ExprState * */
	int			nparams;
	const char **param_values;
	FmgrInfo   *param_outfuncs;

	/* run-time pruning on hash keys equated with parameters */
	int			nremote_params; /* custom_exprs sent as $n; the rest prune */
	int			prune_modulus;	/* 0: no run-time pruning */
	int			nprune_keys;
	int		   *prune_param_index;
	FmgrInfo   *prune_hashfuncs;
	Oid		   *prune_collations;

	/* turning the nodes' column values into datums */
	CjRowDecoder decoder;

	/* execution */
	bool		started;
	bool		moves_ready;	/* the moves' tables are filled and kept */

	/*
	 * Rescans without new parameter values (the inner side of a nested
	 * loop) replay the rows of the first complete run, as postgres_fdw does
	 * with the rows it fetched: recorded only when the plan says rescans
	 * will come (EXEC_FLAG_REWIND).
	 */
	bool		record;			/* this run's rows go into replay */
	bool		replay_complete;	/* replay holds every row of a run */
	bool		replaying;		/* rows come from replay */
	struct Tuplestorestate *replay;
	TupleTableSlot *replay_slot;	/* replay's rows are read into this */
	uint32		exec_id;		/* this execution, for temporary table names */
	uint64		begin_write_tick;	/* cj_conn_write_tick when the plan
									 * started: a cursor declared on a
									 * connection written since would see
									 * the statement's own writes */
	int			nworkers;
	CjWorker   *workers;
	int			current;		/* worker last returning a row */
	int			ntasks_run;		/* tasks not pruned at execution */
	bool		pruned_at_run_time; /* ntasks_run is meaningful */
} CjScanState;

/* EXPLAIN output of the scan (explain.c) */
extern void cj_explain_scan(CustomScanState *node, List *ancestors,
							struct ExplainState *es);

/* registers the scan's execution methods and the executor hooks */
extern void cj_executor_init(void);

/*
 * Inside exec/: what executor.c, failover.c and write_turns.c share about
 * a running scan's tasks and workers.
 */
/* executor.c */
extern char *cj_task_context(CjExecTask *task);
extern CjExecTask *cj_next_task_for(CjScanState *st, Oid serverid);
extern void cj_send_command(CjWorker *w, const char *sql, CjExecTask *task);
extern char *cj_cursor_sql(CjScanState *st, CjWorker *w, CjExecTask *task,
						   const char *fetch);
extern void cj_start_task(CjScanState *st, CjWorker *w, CjExecTask *task);
extern void cj_collect_results(CjScanState *st, CjWorker *w);
extern void cj_release_batches(CjWorker *w);

/* failover.c: tasks of unreachable nodes onto other placements */
extern void cj_avoid_unreachable_nodes(CjScanState *st, Oid userid);
extern bool cj_fail_over_worker(CjScanState *st, CjWorker *w);

/* write_turns.c: scans and writes taking turns on a written node */
extern void cj_claim_connection(CjScanState *st, CjWorker *w);
extern void cj_drain_results(CjScanState *st, CjWorker *w, CjExecTask *task);
extern void cj_settle_connection(void *owner, CjConnection *conn);
extern void cj_yield_for_write(void *owner, CjConnection *conn);

#endif							/* COLOJOIN_EXECUTOR_H */
