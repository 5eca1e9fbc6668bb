/*-------------------------------------------------------------------------
 *
 * executor.c
 *	  Runs the tasks of a colojoin CustomScan: every task on its node, all
 *	  nodes at once, several connections per node (colojoin.
 *	  max_connections_per_node), each task a cursor read in batches, the
 *	  next batch computed while the current one is returned, so memory
 *	  does not grow with the result.  How column values become datums
 *	  (binary or text) is row_decode.c's.
 *
 *	  It carries out the plan it was given and never re-decides it.  The
 *	  remote transactions, cancellation on abort and error reporting with
 *	  the node's name are connection.c's; EXPLAIN output is explain.c's.
 *	  Failover of tasks whose node is down is failover.c's; the turns
 *	  scans and writes take on a written node's one connection are
 *	  write_turns.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/extensible.h"
#include "partitioning/partbounds.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"
#include "utils/wait_event.h"

#include "exec/executor.h"
#include "exec/local_source.h"
#include "exec/move_streams.h"
#include "metadata/metadata.h"
#include "plan/scan_plan.h"
#include "remote/connection.h"
#include "remote/node_health.h"
#include "deparse/deparse.h"
#include "util/settings.h"

static void cj_begin_scan(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *cj_exec_scan(CustomScanState *node);
static void cj_end_scan(CustomScanState *node);
static void cj_rescan(CustomScanState *node);
static void release_on_reset(void *arg);

static CustomExecMethods cj_exec_methods = {
	.CustomName = COLOJOIN_CUSTOM_SCAN_NAME,
	.BeginCustomScan = cj_begin_scan,
	.ExecCustomScan = cj_exec_scan,
	.EndCustomScan = cj_end_scan,
	.ReScanCustomScan = cj_rescan,
	.ExplainCustomScan = cj_explain_scan,
};

/* numbers each execution of a scan, for its temporary tables' names */
static uint32 execution_counter = 0;

static Node *
create_scan_state(CustomScan *cscan)
{
	CjScanState *st = (CjScanState *) newNode(sizeof(CjScanState),
											  T_CustomScanState);

	st->css.methods = &cj_exec_methods;
	return (Node *) st;
}

static void
cj_begin_scan(CustomScanState *node, EState *estate, int eflags)
{
	CjScanState *st = (CjScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *priv = cscan->custom_private;
	List	   *tasks = (List *) list_nth(priv, CJ_PRIVATE_TASKS);
	TupleDesc	desc = node->ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	ListCell   *lc;
	int			i;

	st->begin_write_tick = cj_conn_write_tick();

	/* a nested loop's inner side without parameters: rescans will come */
	st->record = (eflags & EXEC_FLAG_REWIND) != 0 && cscan->custom_exprs == NIL;
	if (st->record)
		st->replay_slot = ExecAllocTableSlot(&estate->es_tupleTable, desc,
											 &TTSOpsMinimalTuple);

	st->strategy = strVal(list_nth(priv, CJ_PRIVATE_STRATEGY));
	st->nclasses = intVal(list_nth(priv, CJ_PRIVATE_NCLASSES));
	st->npruned = intVal(list_nth(priv, CJ_PRIVATE_NPRUNED));
	st->nempty = intVal(list_nth(priv, CJ_PRIVATE_NEMPTY));
	st->userid = (Oid) intVal(list_nth(priv, CJ_PRIVATE_USERID));
	st->rows_moved = intVal(list_nth(priv, CJ_PRIVATE_ROWS_MOVED));
	st->hints = strVal(list_nth(priv, CJ_PRIVATE_HINTS));
	st->hints_unused = strVal(list_nth(priv, CJ_PRIVATE_HINTS_UNUSED));

	st->ntasks = list_length(tasks);
	st->tasks = palloc0(sizeof(CjExecTask) * Max(st->ntasks, 1));
	i = 0;
	foreach(lc, tasks)
	{
		List	   *t = (List *) lfirst(lc);
		CjExecTask *task = &st->tasks[i++];

		task->cls = intVal(list_nth(t, CJ_TASK_CLASS));
		task->serverid = (Oid) intVal(list_nth(t, CJ_TASK_SERVER));
		task->node = strVal(list_nth(t, CJ_TASK_NODE));
		task->sql = strVal(list_nth(t, CJ_TASK_SQL));
		task->label = strVal(list_nth(t, CJ_TASK_LABEL));
		task->remainder = intVal(list_nth(t, CJ_TASK_HASH_REMAINDER));
		task->planned_node = task->node;
		st->nplanned += intVal(list_nth(t, CJ_TASK_NCLASSES));
		{
			List	   *alts = (List *) list_nth(t, CJ_TASK_ALTERNATIVES);
			ListCell   *la;
			int			a = 0;

			task->nalts = list_length(alts);
			task->alt_server = palloc(sizeof(Oid) * Max(task->nalts, 1));
			task->alt_node = palloc(sizeof(char *) * Max(task->nalts, 1));
			task->alt_sql = palloc(sizeof(char *) * Max(task->nalts, 1));
			foreach(la, alts)
			{
				List	   *alt = (List *) lfirst(la);

				task->alt_server[a] = (Oid) intVal(linitial(alt));
				task->alt_node[a] = strVal(lsecond(alt));
				task->alt_sql[a] = strVal(lthird(alt));
				a++;
			}
		}
	}

	{
		List	   *moves = (List *) list_nth(priv, CJ_PRIVATE_MOVES);

		st->nmoves = list_length(moves);
		st->moves = palloc0(sizeof(CjExecMove) * Max(st->nmoves, 1));
		i = 0;
		foreach(lc, moves)
		{
			List	   *m = (List *) lfirst(lc);
			CjExecMove *move = &st->moves[i++];

			move->dest = (Oid) intVal(list_nth(m, CJ_MOVE_DEST));
			move->create_sql = strVal(list_nth(m, CJ_MOVE_CREATE));
			move->copy_in_sql = strVal(list_nth(m, CJ_MOVE_COPY_IN));
			move->drop_sql = strVal(list_nth(m, CJ_MOVE_DROP));
			move->sources = (List *) list_nth(m, CJ_MOVE_SOURCES);
			move->label = strVal(list_nth(m, CJ_MOVE_LABEL));
			move->analyze_sql = strVal(list_nth(m, CJ_MOVE_ANALYZE));
			move->binary = intVal(list_nth(m, CJ_MOVE_BINARY)) != 0;
			move->classes = (List *) list_nth(m, CJ_MOVE_CLASSES);
			move->level = intVal(list_nth(m, CJ_MOVE_LEVEL));
		}
	}

	/*
	 * The child plans computing the coordinator rows the moves broadcast:
	 * read forward, to their end, and again only after a rescan.
	 */
	st->ncoord = list_length(cscan->custom_plans);
	st->coord = palloc0(sizeof(CjStoredRows) * Max(st->ncoord, 1));
	st->coord_done = palloc0(sizeof(bool) * Max(st->ncoord, 1));
	node->custom_ps = NIL;
	i = 0;
	foreach(lc, cscan->custom_plans)
	{
		PlanState  *child = ExecInitNode((Plan *) lfirst(lc), estate,
										 eflags & ~(EXEC_FLAG_BACKWARD | EXEC_FLAG_MARK));

		node->custom_ps = lappend(node->custom_ps, child);
		st->coord[i++].slot = ExecAllocTableSlot(&estate->es_tupleTable,
												 ExecGetResultType(child),
												 &TTSOpsMinimalTuple);
	}

	/* parameters: evaluated when the scan starts */
	st->param_states = ExecInitExprList(cscan->custom_exprs, &node->ss.ps);
	st->nparams = list_length(cscan->custom_exprs);
	st->param_values = palloc0(sizeof(char *) * Max(st->nparams, 1));
	st->param_outfuncs = palloc0(sizeof(FmgrInfo) * Max(st->nparams, 1));
	i = 0;
	foreach(lc, cscan->custom_exprs)
	{
		Oid			outfunc;
		bool		isvarlena;

		getTypeOutputInfo(exprType((Node *) lfirst(lc)), &outfunc, &isvarlena);
		fmgr_info(outfunc, &st->param_outfuncs[i++]);
	}

	/* run-time pruning */
	st->nremote_params = st->nparams;
	{
		List	   *prune = (List *) list_nth(priv, CJ_PRIVATE_PRUNE_KEYS);

		if (prune != NIL)
		{
			List	   *keys = (List *) lsecond(prune);

			st->prune_modulus = intVal(linitial(prune));
			st->nprune_keys = list_length(keys);
			st->prune_param_index = palloc(sizeof(int) * st->nprune_keys);
			st->prune_hashfuncs = palloc0(sizeof(FmgrInfo) * st->nprune_keys);
			st->prune_collations = palloc(sizeof(Oid) * st->nprune_keys);
			i = 0;
			foreach(lc, keys)
			{
				List	   *key = (List *) lfirst(lc);

				st->prune_param_index[i] = intVal(linitial(key));
				fmgr_info((Oid) intVal(lsecond(key)), &st->prune_hashfuncs[i]);
				st->prune_collations[i] = (Oid) intVal(lthird(key));
				st->nremote_params = Min(st->nremote_params, st->prune_param_index[i]);
				i++;
			}
		}
	}

	/* how the columns the nodes send back become datums */
	cj_decoder_init(&st->decoder, desc);

	{
		MemoryContextCallback *cb = palloc0(sizeof(MemoryContextCallback));

		cb->func = release_on_reset;
		cb->arg = st;
		MemoryContextRegisterResetCallback(estate->es_query_cxt, cb);
	}

	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0 && cj_xact_wrote_to_shards())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("colojoin cannot run a colocated join after this transaction wrote to shards"),
				 errdetail("The writes went through postgres_fdw's connections, which colojoin's connections cannot see until the transaction commits; the plan was made before the writes."),
				 errhint("Run the query in a new transaction, or SET colojoin.enable = off for this one.")));
}

/* the text of every parameter, computed once per (re)scan */
static void
evaluate_params(CjScanState *st)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_query_memory);
	ListCell   *lc;
	int			i = 0;
	Datum	   *values = palloc(sizeof(Datum) * Max(st->nparams, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(st->nparams, 1));
	int			nestlevel;

	foreach(lc, st->param_states)
	{
		values[i] = ExecEvalExpr((ExprState *) lfirst(lc), econtext, &nulls[i]);
		i++;
	}

	/*
	 * The values are written as the nodes' sessions read them (DateStyle
	 * ISO and the like, deparse.c), whatever this session's settings: a
	 * date under DateStyle German would not parse there.
	 */
	nestlevel = cj_pin_node_output_settings();
	for (i = 0; i < st->nparams; i++)
		st->param_values[i] = nulls[i] ? NULL :
			OutputFunctionCall(&st->param_outfuncs[i], values[i]);
	AtEOXact_GUC(true, nestlevel);
	pfree(values);
	pfree(nulls);
	MemoryContextSwitchTo(old);
}

/*
 * prune_tasks
 *		Skip the tasks of classes the key parameters cannot hash to: the
 *		value a generic plan's "k = $1" was executed with names one class.
 */
static void
prune_tasks(CjScanState *st)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	Datum	   *values = palloc(sizeof(Datum) * st->nprune_keys);
	bool	   *isnull = palloc(sizeof(bool) * st->nprune_keys);
	bool		anynull = false;
	uint64		hash;
	int			remainder = -1;
	int			i;

	for (i = 0; i < st->nprune_keys; i++)
	{
		ExprState  *es = list_nth(st->param_states, st->prune_param_index[i]);

		values[i] = ExecEvalExpr(es, econtext, &isnull[i]);
		anynull |= isnull[i];
	}
	/* "k = NULL" is never true: no class can produce a row */
	if (!anynull)
	{
		hash = compute_partition_hash_value(st->nprune_keys, st->prune_hashfuncs,
											st->prune_collations, values, isnull);
		remainder = (int) (hash % (uint64) st->prune_modulus);
	}
	for (i = 0; i < st->ntasks; i++)
	{
		CjExecTask *task = &st->tasks[i];

		if (anynull || (task->remainder >= 0 && task->remainder != remainder))
		{
			task->taken = true;
			task->skipped = true;
		}
		else
			st->ntasks_run++;	/* summed over rescans */
	}
	st->pruned_at_run_time = true;
}

char *
cj_task_context(CjExecTask *task)
{
	return psprintf("partition class %s", task->label);
}

/* the next task not yet run on this worker's node, or NULL */
CjExecTask *
cj_next_task_for(CjScanState *st, Oid serverid)
{
	int			i;

	for (i = 0; i < st->ntasks; i++)
	{
		CjExecTask *task = &st->tasks[i];

		if (!task->taken && task->serverid == serverid)
		{
			task->taken = true;
			return task;
		}
	}
	return NULL;
}

/*
 * inline_params
 *		The task's SQL with $n replaced by its parameter's value as a quoted
 *		literal (the SQL already casts every $n to its type), so that the
 *		cursor and its first FETCH go in one simple-protocol round trip.
 *		Only $n outside quoted literals and identifiers is a parameter.
 */
static char *
inline_params(CjScanState *st, const char *sql)
{
	StringInfoData buf;
	const char *p = sql;

	if (st->nremote_params == 0)
		return (char *) sql;
	initStringInfo(&buf);
	while (*p)
	{
		if (*p == '\'' || *p == '"')
		{
			char		q = *p;

			appendStringInfoChar(&buf, *p++);
			while (*p)
			{
				if (*p == q && p[1] == q)
				{
					appendStringInfoChar(&buf, *p++);
					appendStringInfoChar(&buf, *p++);
					continue;
				}
				if (*p == '\\' && q == '\'' && p[1])
				{
					/* E'' literals escape with backslashes; harmless elsewhere */
					appendStringInfoChar(&buf, *p++);
					appendStringInfoChar(&buf, *p++);
					continue;
				}
				if (*p == q)
					break;
				appendStringInfoChar(&buf, *p++);
			}
			if (*p)
				appendStringInfoChar(&buf, *p++);
		}
		else if (*p == '$' && isdigit((unsigned char) p[1]))
		{
			int			n = 0;

			p++;
			while (isdigit((unsigned char) *p))
				n = n * 10 + (*p++ - '0');
			if (n < 1 || n > st->nremote_params)
				elog(ERROR, "colojoin: remote SQL refers to parameter $%d of %d",
					 n, st->nremote_params);
			if (st->param_values[n - 1] == NULL)
				appendStringInfoString(&buf, "NULL");
			else
			{
				appendStringInfoChar(&buf, '(');
				cj_append_literal(&buf, st->param_values[n - 1]);
				appendStringInfoChar(&buf, ')');
			}
		}
		else
			appendStringInfoChar(&buf, *p++);
	}
	return buf.data;
}

void
cj_send_command(CjWorker *w, const char *sql, CjExecTask *task)
{
	if (!PQsendQuery(cj_conn_pgconn(w->conn), sql))
		cj_report_remote_error(ERROR, w->conn, NULL, cj_task_context(task));
	cj_conn_begin_async(w->conn);
	w->in_flight = true;
}

/*
 * execution_names
 *		sql with the plan's temporary table names made unique to this
 *		execution: the same plan may run nested in its own rows (a
 *		PL/pgSQL loop calling itself), on the same node session.
 */
static char *
execution_names(CjScanState *st, const char *sql)
{
	if (st->nmoves == 0 || strstr(sql, "\"colojoin_move_") == NULL)
		return (char *) sql;
	{
		StringInfoData buf;
		const char *from = "\"colojoin_move_";
		const char *p = sql;
		const char *hit;

		initStringInfo(&buf);
		while ((hit = strstr(p, from)) != NULL)
		{
			appendBinaryStringInfo(&buf, p, hit - p);
			appendStringInfo(&buf, "\"colojoin_move_e%u_", st->exec_id);
			p = hit + strlen(from);
		}
		appendStringInfoString(&buf, p);
		return buf.data;
	}
}

/*
 * cj_cursor_sql
 *		The command that opens task's cursor on w's connection and fetches
 *		its first rows (fetch: a count, or ALL), closing the connection's
 *		previous cursor on the way.
 */
char *
cj_cursor_sql(CjScanState *st, CjWorker *w, CjExecTask *task, const char *fetch)
{
	return psprintf("%s%sDECLARE " CJ_CURSOR_NAME " %sNO SCROLL CURSOR FOR %s; "
					"FETCH %s FROM " CJ_CURSOR_NAME,
					w->begin_sql ? w->begin_sql : "",
					cj_conn_cursor_open(w->conn) ? "CLOSE " CJ_CURSOR_NAME "; " : "",
					st->decoder.binary &&
					cj_node_binary_compatible(cj_conn_pgconn(w->conn)) ?
					"BINARY " : "",
					execution_names(st, inline_params(st, task->sql)),
					fetch);
}

/*
 * open_cursor
 *		Open the cursor of the worker's task and fetch its first batch, in
 *		one round trip, the connection taken from any other scan first.
 */
static void
open_cursor(CjScanState *st, CjWorker *w)
{
	char	   *sql = cj_cursor_sql(st, w, w->task, CppAsString2(CJ_FETCH_SIZE));

	w->exhausted = false;
	w->first_batch = true;
	w->rerun_in_text = false;
	w->begin_sql = NULL;
	INSTR_TIME_SET_CURRENT(w->started);
	cj_claim_connection(st, w);
	cj_send_command(w, sql, w->task);
	cj_conn_set_cursor_open(w->conn, true);
}

/* start task on the worker's connection */
void
cj_start_task(CjScanState *st, CjWorker *w, CjExecTask *task)
{
	w->task = task;
	task->runs++;
	open_cursor(st, w);
}

/*
 * moves_reusable
 *		Whether the tables an earlier run of this scan filled can serve this
 *		one.  What a move carries never depends on the scan's parameters
 *		(the planner moves no table whose conditions have one), so a rescan
 *		may read the same rows again, as long as the remote transaction
 *		that holds them is the one that made them: a cancel or an error
 *		there rolled them back.
 */
static bool
moves_reusable(CjScanState *st, Oid userid)
{
	int			i;

	if (!st->moves_ready)
		return false;
	for (i = 0; i < st->ncoord; i++)
		if (!st->coord_done[i])
			return false;
	for (i = 0; i < st->nmoves; i++)
	{
		CjExecMove *move = &st->moves[i];

		if (!move->created || move->xact_id == 0 ||
			cj_connection_busy(move->dest, userid, move->dest_slot) ||
			cj_conn_xact_id(move->dest, userid, move->dest_slot) != move->xact_id)
			return false;
	}
	return true;
}

/* the connection slot holding the moved rows of level on serverid, or -1 */
static int
level_slot(CjScanState *st, int level, Oid serverid)
{
	int			i;

	for (i = 0; i < st->nmoves; i++)
		if (st->moves[i].created && st->moves[i].level == level &&
			st->moves[i].dest == serverid)
			return st->moves[i].dest_slot;
	return -1;
}

/* the connection slot holding the rows the tasks read on serverid, or -1 */
static int
move_slot(CjScanState *st, Oid serverid)
{
	return level_slot(st, 0, serverid);
}

/* moved tables at least this large are analyzed before the tasks read them */
#define CJ_MOVE_ANALYZE_ROWS	5000

static void analyze_moves(CjScanState *st, CjMoveRun *runs, int *which,
						  int nruns);

/*
 * coordinator_rows
 *		The rows of child plan k, computed to their end (once per run of the
 *		moves: a rescan that changed its parameters clears them) and kept in
 *		the query's memory, spilling to disk past work_mem like any
 *		tuplestore.
 */
static CjStoredRows *
coordinator_rows(CjScanState *st, int k)
{
	CjStoredRows *rows;
	PlanState  *child;

	if (k < 0 || k >= st->ncoord)
		elog(ERROR, "colojoin: a move names child plan %d of %d", k, st->ncoord);
	rows = &st->coord[k];
	if (st->coord_done[k])
		return rows;
	child = (PlanState *) list_nth(st->css.custom_ps, k);
	if (rows->store == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(st->css.ss.ps.state->es_query_cxt);

		rows->store = tuplestore_begin_heap(false, false, work_mem);
		MemoryContextSwitchTo(old);
		if (child->chgParam != NULL)
			ExecReScan(child);
	}
	else
	{
		tuplestore_clear(rows->store);
		ExecReScan(child);
	}
	for (;;)
	{
		TupleTableSlot *slot = ExecProcNode(child);

		if (TupIsNull(slot))
			break;
		tuplestore_puttupleslot(rows->store, slot);
		CHECK_FOR_INTERRUPTS();
	}
	st->coord_done[k] = true;
	return rows;
}

/*
 * run_moves
 *		Fill the temporary tables of the plan's moves, one COPY stream per
 *		source node, through the coordinator in bounded memory.  The tables
 *		live in the remote transaction: an error or a cancel rolls them back
 *		with it, and a coordinator that dies takes the node's session, and
 *		its temporary tables, along.  Rescans reuse them (moves_reusable).
 *		A stage whose group moved rows itself (CJ_MOVE_LEVEL) reads them on
 *		the node's connection holding them while its rows go into the
 *		tables of the level above: a level's tables on a node sit on a
 *		connection past the level above's, and levels fill deepest first.
 */
static void
run_moves(CjScanState *st, Oid userid)
{
	CjMoveRun  *runs = palloc0(sizeof(CjMoveRun) * Max(st->nmoves, 1));
	int		   *which = palloc(sizeof(int) * Max(st->nmoves, 1));
	int			maxlevel = 0;
	int			level;
	int			i;

	if (cj_xact_has_dml())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("colojoin cannot move rows for a join after this transaction wrote through colojoin"),
				 errdetail("The plan was made before the writes; moving rows reads the nodes through connections that do not see them."),
				 errhint("Run the query again: plans made after the writes do not move rows.")));

	/*
	 * The rows the coordinator computes, first: a colojoin scan inside a
	 * child plan uses connections of its own and is done with them before
	 * any temporary table is made.
	 */
	for (i = 0; i < st->nmoves; i++)
	{
		ListCell   *lc;

		maxlevel = Max(maxlevel, st->moves[i].level);
		foreach(lc, st->moves[i].sources)
			if (IsA(lsecond((List *) lfirst(lc)), Integer))
				(void) coordinator_rows(st, intVal(lsecond((List *) lfirst(lc))));
	}

	/*
	 * Every table first, level 0 on the slot the tasks on its node will run
	 * on; a deeper level past the slot of the level above on that node.
	 */
	for (level = 0; level <= maxlevel; level++)
		for (i = 0; i < st->nmoves; i++)
		{
			CjExecMove *move = &st->moves[i];
			CjMoveRun  *run = &runs[i];
			ListCell   *lc;

			if (move->level != level)
				continue;
			move->dest_slot = cj_first_free_slot(move->dest, userid,
												 level == 0 ? 0 :
												 level_slot(st, level - 1, move->dest) + 1);
			run->dest = move->dest;
			run->dest_slot = move->dest_slot;
			run->dest_conn = cj_get_connection(move->dest, userid, move->dest_slot);
			run->context = psprintf("moving %s", move->label);
			run->copy_in_sql = execution_names(st, move->copy_in_sql);
			run->binary = move->binary;
			foreach(lc, move->classes)
				run->nclasses = Max(run->nclasses, intVal(lfirst(lc)) + 1);
			if (move->classes != NIL)
			{
				run->takes = palloc0(sizeof(bool) * run->nclasses);
				foreach(lc, move->classes)
					run->takes[intVal(lfirst(lc))] = true;
			}
			cj_conn_note_temp(run->dest_conn);
			cj_exec_command(run->dest_conn,
							psprintf("%s; %s", execution_names(st, move->drop_sql),
									 execution_names(st, move->create_sql)),
							run->context);
			move->created = true;
			move->xact_id = cj_conn_xact_id(move->dest, userid, move->dest_slot);
			move->runs++;
		}

	for (level = maxlevel; level >= 0; level--)
	{
		int			n = 0;

		for (i = 0; i < st->nmoves; i++)
		{
			CjExecMove *move = &st->moves[i];
			CjMoveRun  *run = &runs[i];
			ListCell   *lc;
			int			j = 0;

			if (move->level != level)
				continue;
			run->nsources = list_length(move->sources);
			run->source_servers = palloc(sizeof(Oid) * Max(run->nsources, 1));
			run->source_sql = palloc(sizeof(char *) * Max(run->nsources, 1));
			run->source_slots = palloc(sizeof(int) * Max(run->nsources, 1));
			run->source_rows = palloc0(sizeof(CjStoredRows *) * Max(run->nsources, 1));
			foreach(lc, move->sources)
			{
				List	   *source = (List *) lfirst(lc);

				run->source_servers[j] = (Oid) intVal(linitial(source));
				if (IsA(lsecond(source), Integer))
				{
					/* rows a child plan computed here (above) */
					run->source_rows[j] = coordinator_rows(st, intVal(lsecond(source)));
					run->source_sql[j] = NULL;
					run->source_slots[j] = -1;
					j++;
					continue;
				}
				run->source_sql[j] = execution_names(st, strVal(lsecond(source)));
				/* a stage's source reads the level below where it is */
				run->source_slots[j] =
					list_length(source) > 2 && intVal(lthird(source)) != 0 ?
					level_slot(st, level + 1, run->source_servers[j]) : -1;
				j++;
			}
			which[n++] = i;
		}
		if (n == 0)
			continue;

		/* the runs of one level side by side, in one array */
		{
			CjMoveRun  *wave = palloc(sizeof(CjMoveRun) * n);

			for (i = 0; i < n; i++)
				wave[i] = runs[which[i]];
			cj_move_streams_run(wave, n, userid);
			for (i = 0; i < n; i++)
				runs[which[i]] = wave[i];
			pfree(wave);
		}
		analyze_moves(st, runs, which, n);
	}

	for (i = 0; i < st->nmoves; i++)
	{
		st->moves[i].bytes = runs[i].bytes;
		st->moves[i].rows = runs[i].rows;
		st->moves[i].seconds = runs[i].seconds;
	}
	pfree(runs);
	pfree(which);
	st->moves_ready = true;
}

/*
 * analyze_moves
 *		The node plans the tasks over the moved tables: without statistics
 *		it guesses their distinct values and filters (a join of two moved
 *		tables can end up a nested loop over hundreds of thousands of rows
 *		each).  Below a few thousand rows any plan is quick.  Every
 *		destination analyzes at once (one command string per connection, a
 *		connection holding several tables): one after another they would
 *		add up, each node idle while the others work.  which: the moves
 *		(indexes of st->moves and runs) just filled.
 */
static void
analyze_moves(CjScanState *st, CjMoveRun *runs, int *which, int nruns)
{
	CjConnection **conns = palloc0(sizeof(CjConnection *) * Max(nruns, 1));
	StringInfoData *sql = palloc0(sizeof(StringInfoData) * Max(nruns, 1));
	int			nconns = 0;
	int			w;
	int			c;

	for (w = 0; w < nruns; w++)
	{
		int			i = which[w];

		if (runs[i].rows < CJ_MOVE_ANALYZE_ROWS)
			continue;
		for (c = 0; c < nconns && conns[c] != runs[i].dest_conn; c++)
			;
		if (c == nconns)
		{
			conns[nconns++] = runs[i].dest_conn;
			initStringInfo(&sql[c]);
		}
		else
			appendStringInfoString(&sql[c], "; ");
		appendStringInfoString(&sql[c], execution_names(st, st->moves[i].analyze_sql));
	}
	for (c = 0; c < nconns; c++)
		cj_conn_send(conns[c], sql[c].data, "analyzing moved rows");
	for (c = 0; c < nconns; c++)
		PQclear(cj_conn_collect(conns[c], sql[c].data, "analyzing moved rows"));
	for (c = 0; c < nconns; c++)
		pfree(sql[c].data);
	pfree(sql);
	pfree(conns);
}

/* drop the temporary tables of the moves once every task is done */
static void
drop_moves(CjScanState *st)
{
	Oid			userid = OidIsValid(st->userid) ? st->userid : GetUserId();
	int			i;

	st->moves_ready = false;
	for (i = 0; i < st->nmoves; i++)
	{
		CjExecMove *move = &st->moves[i];
		CjConnection *conn;

		if (!move->created)
			continue;
		move->created = false;

		/* a remote transaction that ended took the table along */
		if (cj_conn_xact_id(move->dest, userid, move->dest_slot) != move->xact_id)
			continue;
		conn = cj_get_connection(move->dest, userid, move->dest_slot);

		/* the last task's cursor still reads the table: close it first */
		if (cj_conn_cursor_open(conn))
		{
			cj_exec_command(conn, psprintf("CLOSE " CJ_CURSOR_NAME "; %s",
										   execution_names(st, move->drop_sql)),
							"dropping moved rows");
			cj_conn_set_cursor_open(conn, false);
		}
		else
			cj_exec_command(conn, execution_names(st, move->drop_sql),
							"dropping moved rows");
	}
}

/*
 * start_scan
 *		Open the connections the tasks need, up to max_connections_per_node
 *		per node, and send each its first task; each node starts working
 *		while the next one is still being connected to.
 */
static void
start_scan(CjScanState *st)
{
	List	   *servers = NIL;
	List	   *counts = NIL;
	ListCell   *ls,
			   *lcnt;
	int			i;
	int			n = 0;
	Oid			userid = OidIsValid(st->userid) ? st->userid : GetUserId();

	evaluate_params(st);

	/* statistics add up over rescans, as EXPLAIN ANALYZE reports loops */
	for (i = 0; i < st->ntasks; i++)
	{
		CjExecTask *task = &st->tasks[i];

		task->taken = false;
		task->skipped = false;
		task->done = false;
	}
	if (st->prune_modulus > 0)
		prune_tasks(st);
	else
		st->ntasks_run += st->ntasks;

	/* failover: moved rows sit on one node each, so only without moves */
	if (st->nmoves == 0)
		cj_avoid_unreachable_nodes(st, userid);

	/* tasks per node, nodes in order of their first task */
	for (i = 0; i < st->ntasks; i++)
	{
		CjExecTask *task = &st->tasks[i];
		bool		found = false;

		if (task->skipped)
			continue;
		forboth(ls, servers, lcnt, counts)
		{
			if (lfirst_oid(ls) == task->serverid)
			{
				lfirst_int(lcnt)++;
				found = true;
			}
		}
		if (!found)
		{
			servers = lappend_oid(servers, task->serverid);
			counts = lappend_int(counts, 1);
		}
	}

	if (st->nmoves > 0 && !moves_reusable(st, userid))
	{
		if (st->moves_ready)
			drop_moves(st);
		/* names unique to this run: the plan may run nested in itself */
		st->exec_id = ++execution_counter;
		run_moves(st, userid);
	}

	/*
	 * Moved rows sit in temporary tables of one connection per node: the
	 * tasks that read them run there.
	 */
	forboth(ls, servers, lcnt, counts)
		n += Min(lfirst_int(lcnt), st->nmoves > 0 ? 1 : colojoin_max_connections_per_node);
	if (st->workers == NULL || st->nworkers < n)
		st->workers = MemoryContextAllocZero(st->css.ss.ps.state->es_query_cxt,
											 sizeof(CjWorker) * Max(n, 1));

	/*
	 * Open every connection of a node (and its remote transaction) before
	 * sending that node any task: a connection importing another's snapshot
	 * must not do so after that one's query has already failed.  Slots busy
	 * with another scan of this transaction (an open cursor, the other side
	 * of a join) are skipped.
	 */
	st->nworkers = 0;
	forboth(ls, servers, lcnt, counts)
	{
		int			nconn = Min(lfirst_int(lcnt),
								st->nmoves > 0 ? 1 : colojoin_max_connections_per_node);
		int			slot = -1;
		int			k;
		int			wslot = cj_write_slot(lfirst_oid(ls), userid);

		/*
		 * After this transaction wrote there, only the writing connection
		 * sees it: every scan of the node reads through it, taking turns
		 * (claim_connection).
		 */
		if (wslot >= 0)
			nconn = 1;

		for (k = 0; k < nconn; k++)
		{
			CjWorker   *w = &st->workers[st->nworkers++];

			/* tasks reading moved rows run where the moves put them */
			if (wslot >= 0)
				slot = wslot;
			else if (k == 0 && move_slot(st, lfirst_oid(ls)) >= 0)
				slot = move_slot(st, lfirst_oid(ls));
			else
				slot = cj_first_free_slot(lfirst_oid(ls), userid, slot + 1);
			w->serverid = lfirst_oid(ls);
			w->slot = slot;
			w->task = NULL;
			w->begin_sql = NULL;

			/*
			 * A scan with a single connection (a point lookup, say) starts
			 * the node's remote transaction in the same round trip as its
			 * task, exporting no snapshot: a scan nested in its rows that
			 * needs one has it exported then (settle_connection).  With
			 * several, the others import the first one's snapshot at once:
			 * they start it first.
			 */
			if (k > 0)
				w->conn = cj_get_connection_optional(w->serverid, userid, slot);
			else if (n == 1)
				w->conn = cj_get_connection_deferred(w->serverid, userid, slot,
													 &w->begin_sql);
			else
				w->conn = cj_get_connection(w->serverid, userid, slot);
			if (w->conn == NULL)
			{
				/* the node's connection budget is spent: do with these */
				st->nworkers--;
				nconn = k;
				break;
			}
			cj_claim_connection(st, w);
		}

		/*
		 * This node's connections are all open (and share its snapshot):
		 * its tasks start now, while the next node is being connected to.
		 */
		for (i = st->nworkers - nconn; i < st->nworkers; i++)
		{
			CjExecTask *task = cj_next_task_for(st, st->workers[i].serverid);

			if (task)
				cj_start_task(st, &st->workers[i], task);
		}
	}
	st->current = 0;
	st->started = true;
}

static void
finish_task(CjScanState *st, CjWorker *w)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, w->started);
	w->task->seconds += INSTR_TIME_GET_DOUBLE(now);
	w->task->done = true;
	w->task = NULL;
}

/*
 * store_row
 *		Turn one row of the current batch into the scan tuple, in per-tuple
 *		memory (ExecScan resets it before fetching the next row).
 */
static TupleTableSlot *
store_row(CjScanState *st, CjWorker *w)
{
	TupleTableSlot *slot = st->css.ss.ss_ScanTupleSlot;
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	PGresult   *res = w->batch;
	int			row = w->batch_row++;
	int			ncols = PQnfields(res);
	int			i;

	ExecClearTuple(slot);
	for (i = 0; i < st->decoder.natts; i++)
	{
		if (i >= ncols || PQgetisnull(res, row, i))
		{
			slot->tts_values[i] = (Datum) 0;
			slot->tts_isnull[i] = true;
		}
		else
		{
			slot->tts_values[i] = cj_decode_value(&st->decoder, res, row, i);
			slot->tts_isnull[i] = false;
			w->task->bytes += PQgetlength(res, row, i);
		}
	}
	w->task->rows += 1;
	MemoryContextSwitchTo(old);
	return ExecStoreVirtualTuple(slot);
}

/*
 * note_text_fallback
 *		A task's first binary batch holds a column of another type than the
 *		scan reads (a foreign table declaring another type than the remote
 *		column's): no row of it was returned, so the task runs again with
 *		text rows, and so does every task started from now on.
 */
static void
note_text_fallback(CjScanState *st, CjWorker *w, const PGresult *res)
{
	if (!w->first_batch)
		elog(ERROR, "colojoin: the column types of %s changed while its rows were read",
			 cj_task_context(w->task));
	elog(DEBUG1, "colojoin: %s on node \"%s\" sent columns of other types than the scan reads; reading its rows as text",
		 cj_task_context(w->task), w->task->node);
	st->decoder.binary = false;
	w->rerun_in_text = true;
}

/*
 * cj_collect_results
 *		Take in, without waiting, the results of the command in flight: a
 *		batch of rows becomes pending; the end of the command frees the
 *		connection.
 */
void
cj_collect_results(CjScanState *st, CjWorker *w)
{
	PGconn	   *pg = cj_conn_pgconn(w->conn);

	while (w->in_flight && !PQisBusy(pg))
	{
		PGresult   *res = PQgetResult(pg);

		if (res == NULL)
		{
			w->in_flight = false;
			cj_conn_end_async(w->conn);
			break;
		}
		switch (PQresultStatus(res))
		{
			case PGRES_TUPLES_OK:
				if (!cj_decoder_accepts(&st->decoder, res))
				{
					note_text_fallback(st, w, res);
					PQclear(res);
					break;
				}
				w->first_batch = false;
				if (PQntuples(res) < CJ_FETCH_SIZE)
					w->exhausted = true;
				if (PQntuples(res) > 0 && w->pending == NULL)
					w->pending = res;
				else
					PQclear(res);
				break;
			case PGRES_COMMAND_OK:
				PQclear(res);
				break;
			default:
				if (cj_conn_is_lost(w->conn) && cj_fail_over_worker(st, w))
				{
					PQclear(res);
					return;
				}
				PG_TRY();
				{
					cj_report_remote_error(ERROR, w->conn, res,
										   cj_task_context(w->task));
				}
				PG_FINALLY();
				{
					PQclear(res);
				}
				PG_END_TRY();
		}
	}
}

/*
 * advance
 *		Move a worker on: the next batch replaces a finished one, and the
 *		one after it is requested at once; a task whose rows are all read
 *		makes room for the node's next task.  Returns true when a row is
 *		ready in the worker's batch.
 */
static bool
advance(CjScanState *st, CjWorker *w)
{
	for (;;)
	{
		if (w->task == NULL)
			return false;
		cj_collect_results(st, w);
		if (w->batch != NULL && w->batch_row < PQntuples(w->batch))
			break;
		if (w->batch != NULL)
		{
			PQclear(w->batch);
			w->batch = NULL;
		}
		if (w->pending != NULL)
		{
			w->batch = w->pending;
			w->pending = NULL;
			w->batch_row = 0;
		}
		else if (w->drained != NIL)
		{
			w->batch = (PGresult *) linitial(w->drained);
			w->drained = list_delete_first(w->drained);
			w->batch_row = 0;
		}
		if (w->rerun_in_text)
		{
			if (w->in_flight)
				break;
			open_cursor(st, w);
			continue;
		}
		if (w->batch == NULL && !w->in_flight && w->exhausted && w->drained == NIL)
		{
			CjExecTask *next;

			finish_task(st, w);
			next = cj_next_task_for(st, w->serverid);
			if (next == NULL)
				return false;
			cj_start_task(st, w, next);
			continue;
		}
		break;
	}
	/* keep one batch ahead */
	if (!w->in_flight && !w->exhausted && w->pending == NULL)
		cj_send_command(w, "FETCH " CppAsString2(CJ_FETCH_SIZE) " FROM " CJ_CURSOR_NAME,
					 w->task);
	return w->batch != NULL && w->batch_row < PQntuples(w->batch);
}

/*
 * wait_for_input
 *		Sleep until a node sends something or an interrupt arrives, then read
 *		what arrived.  The wait set is freed before any error can be thrown.
 */
static void
wait_for_input(CjScanState *st)
{
	WaitEventSet *set;
	WaitEvent  *events;
	int			nevents;
	int			i;
	int			nbusy = 0;
	CjWorker   *busy = NULL;

	for (i = 0; i < st->nworkers; i++)
		if (st->workers[i].in_flight)
		{
			busy = &st->workers[i];
			nbusy++;
		}
	if (nbusy == 1)
	{
		/* the connection's own wait set: no set to make and free */
		int			rc = cj_conn_wait(busy->conn, WL_SOCKET_READABLE, -1L);

		if (rc & WL_LATCH_SET)
			ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if ((rc & WL_SOCKET_READABLE) || rc == 0)
		{
			if (!PQconsumeInput(cj_conn_pgconn(busy->conn)) &&
				!cj_fail_over_worker(st, busy))
				cj_report_remote_error(ERROR, busy->conn, NULL,
									   cj_task_context(busy->task));
		}
		return;
	}
	events = palloc(sizeof(WaitEvent) * (nbusy + 2));
	set = CreateWaitEventSet(CurrentMemoryContext, nbusy + 2);
	AddWaitEventToSet(set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	for (i = 0; i < st->nworkers; i++)
	{
		CjWorker   *w = &st->workers[i];

		if (w->in_flight)
			AddWaitEventToSet(set, WL_SOCKET_READABLE,
							  PQsocket(cj_conn_pgconn(w->conn)), NULL, w);
	}
	nevents = WaitEventSetWait(set, -1, events, nbusy + 2, PG_WAIT_EXTENSION);
	FreeWaitEventSet(set);

	for (i = 0; i < nevents; i++)
	{
		if (events[i].events & WL_LATCH_SET)
			ResetLatch(MyLatch);
	}
	CHECK_FOR_INTERRUPTS();
	for (i = 0; i < nevents; i++)
	{
		CjWorker   *w = (CjWorker *) events[i].user_data;

		if (w == NULL || !(events[i].events & WL_SOCKET_READABLE) || !w->in_flight)
			continue;
		if (!PQconsumeInput(cj_conn_pgconn(w->conn)) && !cj_fail_over_worker(st, w))
			cj_report_remote_error(ERROR, w->conn, NULL, cj_task_context(w->task));
	}
	pfree(events);
}

/*
 * next_row
 *		The access method of ExecScan: a row from whichever node has one,
 *		staying with the same connection while its batch lasts.
 */
static TupleTableSlot *
next_row(ScanState *ss)
{
	CjScanState *st = (CjScanState *) ss;

	if (st->replaying)
	{
		/* the store holds minimal tuples; the scan slot is virtual */
		if (tuplestore_gettupleslot(st->replay, true, false, st->replay_slot))
			return ExecCopySlot(ss->ss_ScanTupleSlot, st->replay_slot);
		return ExecClearTuple(ss->ss_ScanTupleSlot);
	}
	if (!st->started)
	{
		start_scan(st);
		if (st->record)
		{
			MemoryContext old = MemoryContextSwitchTo(st->css.ss.ps.state->es_query_cxt);

			if (st->replay != NULL)
				tuplestore_clear(st->replay);
			else
				st->replay = tuplestore_begin_heap(false, false, work_mem);
			MemoryContextSwitchTo(old);
			st->replay_complete = false;
		}
	}

	for (;;)
	{
		bool		active = false;
		int			k;

		for (k = 0; k < st->nworkers; k++)
		{
			int			idx = (st->current + k) % st->nworkers;
			CjWorker   *w = &st->workers[idx];

			if (advance(st, w))
			{
				TupleTableSlot *slot;

				st->current = idx;
				slot = store_row(st, w);
				if (st->record)
					tuplestore_puttupleslot(st->replay, slot);
				return slot;
			}
			if (w->task != NULL)
				active = true;
		}
		if (!active)
		{
			st->replay_complete = st->record;
			return ExecClearTuple(ss->ss_ScanTupleSlot);
		}
		wait_for_input(st);
	}
}

static bool
recheck_row(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
cj_exec_scan(CustomScanState *node)
{
	return ExecScan(&node->ss, next_row, recheck_row);
}

/* the batches a worker holds, freed (they are libpq's, not palloc'd) */
void
cj_release_batches(CjWorker *w)
{
	ListCell   *lc;

	if (w->batch)
		PQclear(w->batch);
	if (w->pending)
		PQclear(w->pending);
	foreach(lc, w->drained)
		PQclear((PGresult *) lfirst(lc));
	list_free(w->drained);
	w->batch = NULL;
	w->pending = NULL;
	w->drained = NIL;
}

/* the scan no longer reads through w's connection (unless another took it) */
static void
release_connection(CjScanState *st, CjWorker *w)
{
	if (w->conn && cj_conn_owner(w->conn) == st)
		cj_conn_set_owner(w->conn, NULL);
}

/*
 * stop_workers
 *		Leave every connection idle.  A command still computing rows nobody
 *		will read (a LIMIT was satisfied, say) is cancelled; tasks not
 *		started yet are simply never sent.  A cursor left open closes with
 *		the connection's next task or its transaction.
 */
static void
stop_workers(CjScanState *st)
{
	int			i;

	for (i = 0; i < st->nworkers; i++)
	{
		CjWorker   *w = &st->workers[i];

		cj_release_batches(w);
		if (w->in_flight)
		{
			cj_conn_cancel(w->conn);
			w->in_flight = false;
		}
		if (w->task)
		{
			w->task->done = true;
			w->task = NULL;
		}
		release_connection(st, w);
	}
}

/*
 * On an error the executor never calls the end callback: the query's memory
 * context going away frees the batches instead.
 */
static void
release_on_reset(void *arg)
{
	CjScanState *st = (CjScanState *) arg;
	int			i;

	for (i = 0; i < st->nworkers; i++)
	{
		cj_release_batches(&st->workers[i]);
		/* the connection is free again (a dead transaction resets it too) */
		if (st->started)
			release_connection(st, &st->workers[i]);
	}
}

static void
cj_end_scan(CustomScanState *node)
{
	CjScanState *st = (CjScanState *) node;
	ListCell   *lc;
	int			i;

	if (st->started)
		stop_workers(st);
	if (st->moves_ready)
		drop_moves(st);
	foreach(lc, node->custom_ps)
		ExecEndNode((PlanState *) lfirst(lc));
	for (i = 0; i < st->ncoord; i++)
		if (st->coord[i].store != NULL)
			tuplestore_end(st->coord[i].store);
}

/*
 * A rescan keeps the moved rows for the next run.  A batch still being
 * computed is read to its end rather than cancelled: a cancel would abort
 * the remote transaction that holds the moved rows.
 */
static void
cj_rescan(CustomScanState *node)
{
	CjScanState *st = (CjScanState *) node;
	ListCell   *lc;

	/*
	 * A child plan computing coordinator rows whose parameters changed
	 * computes them again, and the moves carry the new ones.
	 */
	foreach(lc, node->custom_ps)
	{
		PlanState  *child = (PlanState *) lfirst(lc);

		if (node->ss.ps.chgParam != NULL)
			UpdateChangedParamSet(child, node->ss.ps.chgParam);
		if (child->chgParam != NULL)
			st->coord_done[foreach_current_index(lc)] = false;
	}

	/* the same parameters: the rows of the complete run are the answer */
	if (st->replay_complete && node->ss.ps.chgParam == NULL)
	{
		if (st->started)
			stop_workers(st);
		st->started = false;
		st->replaying = true;
		tuplestore_rescan(st->replay);
		return;
	}
	st->replaying = false;
	st->replay_complete = false;
	if (st->started)
	{
		int			i;

		if (st->moves_ready)
			for (i = 0; i < st->nworkers; i++)
				if (st->workers[i].in_flight)
					cj_settle_connection(st, st->workers[i].conn);
		stop_workers(st);
	}
	st->started = false;
}

void
cj_executor_init(void)
{
	cj_scan_methods.CreateCustomScanState = create_scan_state;
	RegisterCustomScanMethods(&cj_scan_methods);
	cj_conn_set_settle_hook(cj_settle_connection);
	cj_conn_set_yield_hook(cj_yield_for_write);
}
