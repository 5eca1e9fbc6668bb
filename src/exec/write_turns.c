/*-------------------------------------------------------------------------
 *
 * write_turns.c
 *	  Once colojoin wrote on a node in this transaction, every scan and
 *	  write of a statement reads that node through its one writing
 *	  connection, so they see the writes: they take turns on it.  The scan
 *	  that holds it reads the rest of its cursor and yields (a statement
 *	  never sees its own writes), a scan that needs it claims it, and a
 *	  write waits for it (the hooks remote/connection.c calls).
 *
 *	  It does not run tasks (executor.c) nor open connections.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "partitioning/partbounds.h"
#include "storage/latch.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"
#include "utils/wait_event.h"

#include "deparse/deparse.h"
#include "exec/executor.h"
#include "exec/local_source.h"
#include "exec/move_streams.h"
#include "metadata/metadata.h"
#include "plan/scan_plan.h"
#include "remote/connection.h"
#include "remote/node_health.h"
#include "util/settings.h"

/*
 * cj_settle_connection
 *		connection.c must run a command on conn, where a worker of this scan
 *		has one in flight (another connection to the node needs the snapshot
 *		of its transaction, which exports only when asked): read that
 *		command to its end.  The batch it brings waits as the worker's next,
 *		and the worker sends its next FETCH when it gets there.
 */
void
cj_settle_connection(void *owner, CjConnection *conn)
{
	CjScanState *st = (CjScanState *) owner;
	int			i;

	for (i = 0; i < st->nworkers; i++)
	{
		CjWorker   *w = &st->workers[i];

		if (w->conn != conn)
			continue;
		for (;;)
		{
			cj_collect_results(st, w);
			if (!w->in_flight)
				break;
			cj_conn_await_input(conn, cj_task_context(w->task));
		}
	}
}

/*
 * yield_connection
 *		Another scan of this statement must read through conn, which this
 *		scan owns: the write connection of a node this transaction wrote on,
 *		the only one that sees the writes (a join of two scans of the node,
 *		a scan nested in another's rows).  Each worker of this scan there
 *		reads its command in flight, then the rest of its cursor (FETCH
 *		ALL; the rows wait in memory as its next batches), and the
 *		connection is free; the other scan's cursor replaces this one.  A
 *		worker that has more tasks takes the connection back the same way
 *		when it starts the next (claim_connection).
 */
static void
yield_connection(CjScanState *st, CjConnection *conn)
{
	int			i;

	cj_settle_connection(st, conn);
	for (i = 0; i < st->nworkers; i++)
	{
		CjWorker   *w = &st->workers[i];

		/* a cursor to reopen in text starts again when it gets its turn */
		if (w->conn != conn || w->task == NULL || w->exhausted || w->rerun_in_text)
			continue;
		cj_send_command(w, "FETCH ALL FROM " CJ_CURSOR_NAME, w->task);
		cj_drain_results(st, w, w->task);
		w->exhausted = true;
	}
	cj_conn_set_owner(conn, NULL);
}

/*
 * cj_claim_connection
 *		w's scan reads through w's connection from now on, taking it from
 *		the scan of the statement that holds it (yield_connection).
 */
void
cj_claim_connection(CjScanState *st, CjWorker *w)
{
	CjScanState *owner = (CjScanState *) cj_conn_owner(w->conn);

	if (owner != NULL && owner != st)
		yield_connection(owner, w->conn);

	/*
	 * A cursor declared after this statement wrote through the connection
	 * would see those writes, which the scan must not (its first cursors
	 * did not): a write takes every row a scan needs from there first
	 * (yield_for_write), so this is only a scan the write did not know.
	 */
	if (cj_conn_last_write(w->conn) > st->begin_write_tick)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("colojoin cannot read node \"%s\" again after this statement wrote there",
						cj_node_name(w->serverid)),
				 errdetail("Its reads and writes there share the one connection that sees the transaction's writes, and the rest of this scan would see the statement's own writes."),
				 errhint("Split the statement, or run it before the transaction's first write through colojoin.")));
	cj_conn_set_owner(w->conn, st);
}

/* the results of cursor commands sent on w's connection, read to the end */
void
cj_drain_results(CjScanState *st, CjWorker *w, CjExecTask *task)
{
	PGconn	   *pg = cj_conn_pgconn(w->conn);
	PGresult   *res;

	for (;;)
	{
		while (PQisBusy(pg))
			cj_conn_await_input(w->conn, cj_task_context(task));
		res = PQgetResult(pg);
		if (res == NULL)
			break;
		if (PQresultStatus(res) == PGRES_COMMAND_OK)
		{
			PQclear(res);
			continue;
		}
		if (PQresultStatus(res) != PGRES_TUPLES_OK ||
			!cj_decoder_accepts(&st->decoder, res))
		{
			PG_TRY();
			{
				if (PQresultStatus(res) == PGRES_TUPLES_OK)
					ereport(ERROR,
							(errcode(ERRCODE_DATATYPE_MISMATCH),
							 errmsg("colojoin cannot read %s before this statement's write: its rows are not of the declared types",
									cj_task_context(task))));
				cj_report_remote_error(ERROR, w->conn, res, cj_task_context(task));
			}
			PG_FINALLY();
			{
				PQclear(res);
			}
			PG_END_TRY();
		}
		if (PQntuples(res) > 0)
		{
			/*
			 * Another scan may be taking the connection from inside its
			 * per-tuple memory: the list lives as long as this scan does.
			 */
			MemoryContext old = MemoryContextSwitchTo(st->css.ss.ps.state->es_query_cxt);

			w->drained = lappend(w->drained, res);
			MemoryContextSwitchTo(old);
		}
		else
			PQclear(res);
	}
	w->in_flight = false;
	cj_conn_end_async(w->conn);
}

/*
 * cj_yield_for_write
 *		A write of this statement needs conn, which st reads through: st
 *		reads the rest of its cursor there and runs every task it still has
 *		on that node to its end now (the rows wait in memory as its next
 *		batches), so that nothing it reads can see the statement's writes;
 *		then the connection is the write's.
 */
void
cj_yield_for_write(void *owner, CjConnection *conn)
{
	CjScanState *st = (CjScanState *) owner;
	int			i;

	yield_connection(st, conn);
	for (i = 0; i < st->nworkers; i++)
	{
		CjWorker   *w = &st->workers[i];
		CjExecTask *task;

		if (w->conn != conn)
			continue;
		while ((task = cj_next_task_for(st, w->serverid)) != NULL)
		{
			task->runs++;
			if (w->task == NULL)
			{
				w->task = task;
				INSTR_TIME_SET_CURRENT(w->started);
			}
			else
				task->done = true;	/* its rows count as the current task's */
			cj_send_command(w, cj_cursor_sql(st, w, task, "ALL"), task);
			cj_conn_set_cursor_open(conn, true);
			cj_drain_results(st, w, task);
		}
		w->exhausted = true;
	}
	cj_conn_set_owner(conn, NULL);
}
