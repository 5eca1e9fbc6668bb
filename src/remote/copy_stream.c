/*-------------------------------------------------------------------------
 *
 * copy_stream.c
 *	  COPY over colojoin's connections: rows streamed from one node to
 *	  another through the coordinator (cj_copy_rows), and the COPY TO and
 *	  COPY FROM halves the executor's moves and the write path's routing
 *	  drive themselves, flushing in bounded batches.
 *
 *	  It does not choose what moves where (the plan does).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"
#include "access/xact.h"
#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "common/pg_prng.h"
#include "foreign/foreign.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
#include "metadata/node_identity.h"
#include "remote/conn_budget.h"
#include "remote/connection.h"
#include "remote/deadlock.h"
#include "remote/node_health.h"
#include "remote/twophase.h"
#include "util/options.h"
#include "util/settings.h"
#include "remote/connection_internal.h"

/* rows the last COPY into a node took, from its command tag (COPY n) */
static uint64 last_copy_rows = 0;

/* wait for a COPY start result of the query just sent */
static void
expect_copy_start(CjConnection *c, ExecStatusType want, const char *sql,
				  const char *context)
{
	PGresult   *res = cj_get_result(c, context);

	if (res == NULL || PQresultStatus(res) != want)
	{
		PGresult   *more;

		if (res == NULL || PQresultStatus(res) == PGRES_FATAL_ERROR)
		{
			/* drain to idle so the error leaves the connection usable */
			while ((more = cj_get_result(c, context)) != NULL)
				PQclear(more);
			c->in_flight = false;
			cj_report_error(ERROR, c, res, true, context, sql);
		}
		PQclear(res);
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("node \"%s\" did not start a COPY", NameStr(c->node_name)),
				 errcontext("remote SQL command: %s", sql)));
	}
	PQclear(res);
}

uint64
cj_copy_last_rows(void)
{
	return last_copy_rows;
}

/* collect the final results of a finished COPY; ERROR on a failure */
static void
finish_copy(CjConnection *c, const char *sql, const char *context)
{
	PGresult   *res;
	PGresult   *volatile failed = NULL;

	last_copy_rows = 0;
	PG_TRY();
	{
		while ((res = cj_get_result(c, context)) != NULL)
		{
			if (PQresultStatus(res) != PGRES_COMMAND_OK && failed == NULL)
				failed = res;
			else
			{
				if (PQresultStatus(res) == PGRES_COMMAND_OK)
					last_copy_rows = strtoull(PQcmdTuples(res), NULL, 10);
				PQclear(res);
			}
		}
	}
	PG_CATCH();
	{
		PQclear(failed);
		PG_RE_THROW();
	}
	PG_END_TRY();
	c->in_flight = false;
	if (failed != NULL)
		cj_report_error(ERROR, c, failed, true, context, sql);
}

/*
 * cj_copy_rows
 *		See connection.h.  The destination runs in nonblocking mode so that
 *		neither side can block us uninterruptibly; we flush it every
 *		CJ_COPY_FLUSH_BYTES and read no more from the source until it has
 *		drained, which bounds the coordinator's memory.  On a failure the
 *		other side is brought back to idle before the error is raised.
 */
uint64
cj_copy_rows(CjConnection *src, const char *copy_out_sql,
			 CjConnection *dst, const char *copy_in_sql,
			 const char *context)
{
	uint64		bytes = 0;
	WaitEventSet *volatile wes = NULL;

	if (cj_conn_is_bad(src))
		cj_report_connection_lost(src, context);
	if (cj_conn_is_bad(dst))
		cj_report_connection_lost(dst, context);

	if (!PQsendQuery(src->conn, copy_out_sql))
		cj_report_error(ERROR, src, NULL, false, context, copy_out_sql);
	cj_begin_flight(src);
	PG_TRY();
	{
		size_t		unflushed = 0;
		bool		flush_pending = false;
		bool		src_done = false;
		int			pos_src;
		int			pos_dst;
		int			r;

		expect_copy_start(src, PGRES_COPY_OUT, copy_out_sql, context);

		cj_copy_in_start(dst, copy_in_sql, context);

		wes = CreateWaitEventSet(CurrentMemoryContext, 4);
		AddWaitEventToSet(wes, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
		AddWaitEventToSet(wes, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
		pos_src = AddWaitEventToSet(wes, WL_SOCKET_READABLE,
									PQsocket(src->conn), NULL, NULL);
		pos_dst = AddWaitEventToSet(wes, WL_SOCKET_READABLE,
									PQsocket(dst->conn), NULL, NULL);

		while (!src_done || flush_pending)
		{
			char	   *buf = NULL;
			int			n = 0;
			WaitEvent	ev;

			if (flush_pending)
			{
				r = PQflush(dst->conn);
				if (r < 0)
					cj_report_connection_lost(dst, context);
				flush_pending = (r == 1);
				if (!flush_pending)
				{
					unflushed = 0;
					continue;	/* re-check: done, or read on */
				}
			}
			else if (!src_done)
			{
				n = PQgetCopyData(src->conn, &buf, 1);
				if (n > 0)
				{
					r = PQputCopyData(dst->conn, buf, n);
					PQfreemem(buf);
					if (r != 1)
					{
						/* the destination failed: say why, stop the source */
						PGresult   *res;

						PQsetnonblocking(dst->conn, 0);
						res = PQgetResult(dst->conn);
						if (res != NULL &&
							PQresultStatus(res) == PGRES_FATAL_ERROR)
						{
							cj_conn_settle(src, false);
							cj_report_error(ERROR, dst, res, true, context,
										 copy_in_sql);
						}
						PQclear(res);
						cj_report_connection_lost(dst, context);
					}
					bytes += n;
					unflushed += n;
					if (unflushed >= CJ_COPY_FLUSH_BYTES)
						flush_pending = true;
					continue;
				}
				if (n == -1)
				{
					src_done = true;
					flush_pending = true;
					continue;
				}
				if (n == -2)
				{
					PGresult   *res = PQgetResult(src->conn);

					/* tell the destination to drop what it got so far */
					PQputCopyEnd(dst->conn, "source of the copy failed");
					cj_conn_settle(dst, true);
					if (res != NULL)
					{
						cj_conn_settle(src, true);
						cj_report_error(ERROR, src, res, true, context,
									 copy_out_sql);
					}
					cj_report_connection_lost(src, context);
				}
			}

			/*
			 * Nothing to do until a socket is ready.  While the destination
			 * has not taken what we sent, the source is not read at all, so
			 * its rows wait in the network instead of our memory.
			 */
			ModifyWaitEvent(wes, pos_src,
							flush_pending ? 0 : WL_SOCKET_READABLE, NULL);
			ModifyWaitEvent(wes, pos_dst,
							WL_SOCKET_READABLE |
							(flush_pending ? WL_SOCKET_WRITEABLE : 0), NULL);
			if (WaitEventSetWait(wes, -1L, &ev, 1, PG_WAIT_EXTENSION) == 1)
			{
				if (ev.events & WL_LATCH_SET)
				{
					ResetLatch(MyLatch);
					CHECK_FOR_INTERRUPTS();
				}
				else if (ev.pos == pos_dst)
				{
					if ((ev.events & WL_SOCKET_READABLE) &&
						!PQconsumeInput(dst->conn))
						cj_report_connection_lost(dst, context);
				}
				else if (ev.pos == pos_src &&
						 (ev.events & WL_SOCKET_READABLE))
				{
					if (!PQconsumeInput(src->conn))
						cj_report_connection_lost(src, context);
				}
			}
		}
		FreeWaitEventSet(wes);
		wes = NULL;

		/* the source's COPY is complete: check its status */
		finish_copy(src, copy_out_sql, context);

		/* end the destination's COPY */
		while ((r = PQputCopyEnd(dst->conn, NULL)) == 0)
			cj_wait_for_socket(dst, WL_SOCKET_WRITEABLE, context);
		if (r < 0)
			cj_report_connection_lost(dst, context);
		while ((r = PQflush(dst->conn)) == 1)
		{
			int			rc = cj_wait_for_socket(dst, WL_SOCKET_WRITEABLE |
											 WL_SOCKET_READABLE, context);

			if ((rc & WL_SOCKET_READABLE) && !PQconsumeInput(dst->conn))
				cj_report_connection_lost(dst, context);
		}
		if (r < 0 || PQsetnonblocking(dst->conn, 0) != 0)
			cj_report_connection_lost(dst, context);
		finish_copy(dst, copy_in_sql, context);
	}
	PG_CATCH();
	{
		/* the (sub)transaction abort drains whatever is still in flight */
		if (wes != NULL)
			FreeWaitEventSet(wes);
		PG_RE_THROW();
	}
	PG_END_TRY();

	return bytes;
}

/*
 * cj_copy_in_start
 *		See connection.h: dst runs copy_in_sql and waits for data.
 */
void
cj_copy_in_start(CjConnection *dst, const char *copy_in_sql, const char *context)
{
	if (cj_conn_is_bad(dst))
		cj_report_connection_lost(dst, context);
	if (!PQsendQuery(dst->conn, copy_in_sql))
		cj_report_error(ERROR, dst, NULL, false, context, copy_in_sql);
	cj_begin_flight(dst);
	expect_copy_start(dst, PGRES_COPY_IN, copy_in_sql, context);
	if (PQsetnonblocking(dst->conn, 1) != 0)
		cj_report_connection_lost(dst, context);
}

/*
 * cj_copy_out_start
 *		See connection.h: send copy_out_sql ("COPY ... TO STDOUT") on src and
 *		wait until the node starts sending rows.
 */
void
cj_copy_out_start(CjConnection *src, const char *copy_out_sql,
				  const char *context)
{
	if (cj_conn_is_bad(src))
		cj_report_connection_lost(src, context);
	if (!PQsendQuery(src->conn, copy_out_sql))
		cj_report_error(ERROR, src, NULL, false, context, copy_out_sql);
	cj_begin_flight(src);
	expect_copy_start(src, PGRES_COPY_OUT, copy_out_sql, context);
}

/*
 * cj_copy_out_next
 *		See connection.h: the next row src's COPY has sent (its length, the
 *		row in *buf for PQfreemem), 0 when none has arrived yet (wait for the
 *		socket, then cj_conn_consume), -1 once the COPY has ended well.
 */
int
cj_copy_out_next(CjConnection *src, const char *copy_out_sql, char **buf,
				 const char *context)
{
	int			n;

	*buf = NULL;
	n = PQgetCopyData(src->conn, buf, 1);
	if (n >= 0)
		return n;
	if (n == -2)
	{
		PGresult   *res = PQgetResult(src->conn);

		if (res != NULL)
		{
			cj_conn_settle(src, true);
			cj_report_error(ERROR, src, res, true, context, copy_out_sql);
		}
		cj_report_connection_lost(src, context);
	}
	finish_copy(src, copy_out_sql, context);
	return -1;
}

/* take in what arrived on conn's socket; a broken connection is an ERROR */
void
cj_conn_consume(CjConnection *conn, const char *context)
{
	if (!PQconsumeInput(conn->conn))
		cj_report_connection_lost(conn, context);
}

/* push what libpq holds for dst to the node, waiting interruptibly */
static void
copy_in_flush(CjConnection *dst, const char *context)
{
	int			r;

	while ((r = PQflush(dst->conn)) == 1)
	{
		int			rc = cj_wait_for_socket(dst, WL_SOCKET_WRITEABLE |
										 WL_SOCKET_READABLE, context);

		if ((rc & WL_SOCKET_READABLE) && !PQconsumeInput(dst->conn))
			cj_report_connection_lost(dst, context);
	}
	if (r < 0)
		cj_report_connection_lost(dst, context);
}

/*
 * cj_copy_in_put
 *		See connection.h: len bytes of COPY data for dst; flushed to the
 *		node once enough has gathered, so memory stays bounded.
 */
void
cj_copy_in_put(CjConnection *dst, const char *data, int len, const char *context)
{
	int			r;

	while ((r = PQputCopyData(dst->conn, data, len)) == 0)
		cj_wait_for_socket(dst, WL_SOCKET_WRITEABLE, context);
	if (r < 0)
	{
		PGresult   *res;

		PQsetnonblocking(dst->conn, 0);
		res = PQgetResult(dst->conn);
		if (res != NULL && PQresultStatus(res) == PGRES_FATAL_ERROR)
			cj_report_error(ERROR, dst, res, true, context, NULL);
		PQclear(res);
		cj_report_connection_lost(dst, context);
	}
	if (PQflush(dst->conn) == 1)
		copy_in_flush(dst, context);
}

/*
 * cj_copy_in_finish
 *		See connection.h: end dst's COPY and wait for its result.
 */
void
cj_copy_in_finish(CjConnection *dst, const char *copy_in_sql, const char *context)
{
	int			r;

	while ((r = PQputCopyEnd(dst->conn, NULL)) == 0)
		cj_wait_for_socket(dst, WL_SOCKET_WRITEABLE, context);
	if (r < 0)
		cj_report_connection_lost(dst, context);
	copy_in_flush(dst, context);
	if (PQsetnonblocking(dst->conn, 0) != 0)
		cj_report_connection_lost(dst, context);
	finish_copy(dst, copy_in_sql, context);
}
