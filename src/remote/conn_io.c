/*-------------------------------------------------------------------------
 *
 * conn_io.c
 *	  Talking over an open connection: sending a command, waiting for its
 *	  socket with the latch (interruptible, statement_timeout and cancel
 *	  obeyed, asking a node about a statement that waits on ourselves),
 *	  reading results, and reporting remote errors with the node's name;
 *	  plus the cleanup that never throws (cancel, drain, a deadline), which
 *	  abort processing and failover use, and the owner, settle and yield
 *	  hooks by which a scan and a write share a connection.
 *
 *	  It does not open connections (conn_open.c) nor start or end remote
 *	  transactions (remote_xact.c).
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

CjSettleHook cj_settle_hook = NULL;
CjSettleHook cj_yield_hook = NULL;

/* counts the writes of this backend (cj_conn_last_write) */
uint64		cj_write_tick = 0;

/* libpq's last error message without its trailing newline(s) */
static char *
conn_error_message(PGconn *conn)
{
	char	   *msg = pstrdup(conn ? PQerrorMessage(conn) : "connection closed");
	int			len = strlen(msg);

	while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == '\r' ||
					   msg[len - 1] == ' '))
		msg[--len] = '\0';
	if (len == 0)
		return pstrdup("connection failed without a message");
	return msg;
}

/*
 * cj_forget_wait_set
 *		Free c's wait set, before its socket closes: the socket's number
 *		may come back for another connection, which the set would not see.
 */
void
cj_forget_wait_set(CjConnection *c)
{
	if (c->wait_set != NULL)
	{
		FreeWaitEventSet(c->wait_set);
		c->wait_set = NULL;
	}
}

/* close the connection, whatever state it is in; the cache entry stays */
void
cj_close_connection(CjConnection *c)
{
	cj_forget_wait_set(c);
	if (c->conn != NULL)
	{
		PQfinish(c->conn);
		c->conn = NULL;
	}
	cj_budget_release(&c->budget_token);
	c->in_flight = false;
	c->commit_pending = false;
	c->snapshot[0] = '\0';
}

bool
cj_conn_is_bad(CjConnection *c)
{
	return c->conn == NULL || PQstatus(c->conn) != CONNECTION_OK;
}

/*
 * cj_report_connection_lost
 *		ERROR for a connection that broke while we talked to it.
 */
void
cj_report_connection_lost(CjConnection *c, const char *context)
{
	char	   *msg = conn_error_message(c->conn);

	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("lost connection to node \"%s\"", NameStr(c->node_name)),
			 errdetail_internal("%s", msg),
			 context ? errcontext("%s", context) : 0));
}

/*
 * cj_report_error
 *		ereport a remote failure, keeping the remote SQLSTATE, message, detail,
 *		hint and context, and adding which node, what for and (when known)
 *		which SQL.  With clear, res is PQclear'ed before reporting, so the
 *		caller's result never leaks into a longjmp.
 */
void
cj_report_error(int elevel, CjConnection *c, PGresult *res, bool clear,
			 const char *context, const char *sql)
{
	char	   *sqlstate = NULL;
	char	   *primary = NULL;
	char	   *detail = NULL;
	char	   *hint = NULL;
	char	   *remote_context = NULL;
	char	   *where;
	int			code = ERRCODE_CONNECTION_FAILURE;

	if (res != NULL)
	{
		char	   *s;

		if ((s = PQresultErrorField(res, PG_DIAG_SQLSTATE)) != NULL)
			sqlstate = pstrdup(s);
		if ((s = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY)) != NULL)
			primary = pstrdup(s);
		if ((s = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL)) != NULL)
			detail = pstrdup(s);
		if ((s = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT)) != NULL)
			hint = pstrdup(s);
		if ((s = PQresultErrorField(res, PG_DIAG_CONTEXT)) != NULL)
			remote_context = pstrdup(s);
		if (primary == NULL && PQresultErrorMessage(res)[0] != '\0')
		{
			primary = pstrdup(PQresultErrorMessage(res));
			while (primary[0] != '\0' && primary[strlen(primary) - 1] == '\n')
				primary[strlen(primary) - 1] = '\0';
		}
		if (clear)
			PQclear(res);
	}
	if (primary == NULL)
		primary = conn_error_message(c->conn);
	if (sqlstate != NULL && strlen(sqlstate) == 5)
		code = MAKE_SQLSTATE(sqlstate[0], sqlstate[1], sqlstate[2],
							 sqlstate[3], sqlstate[4]);

	/* one line built first: errcontext() is a comma expression */
	if (sql && context)
		where = psprintf("remote SQL command on node \"%s\" (%s): %s",
						 NameStr(c->node_name), context, sql);
	else if (sql)
		where = psprintf("remote SQL command on node \"%s\": %s",
						 NameStr(c->node_name), sql);
	else if (context)
		where = psprintf("remote query on node \"%s\" (%s)",
						 NameStr(c->node_name), context);
	else
		where = psprintf("remote query on node \"%s\"",
						 NameStr(c->node_name));

	/*
	 * A connection that broke (libpq's own message, or the node's last words
	 * before it closed the session) is named in the message itself: that the
	 * node went away is what the user must learn first.
	 */
	if (PQstatus(c->conn) == CONNECTION_BAD)
		ereport(elevel,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("lost connection to node \"%s\"", NameStr(c->node_name)),
				 errdetail_internal("%s", primary),
				 errcontext("%s", where)));
	else
		ereport(elevel,
				(errcode(code),
				 errmsg_internal("%s", primary),
				 detail ? errdetail_internal("%s", detail) : 0,
				 hint ? errhint("%s", hint) : 0,
				 remote_context ? errcontext("%s", remote_context) : 0,
				 errcontext("%s", where)));
}

/*
 * cj_report_remote_error
 *		Public form of report_error; the caller owns (and clears) res.
 */
void
cj_report_remote_error(int elevel, CjConnection *conn, PGresult *res,
					   const char *context)
{
	cj_report_error(elevel, conn, res, false, context, NULL);
}

/*
 * wait_for_socket_timeout
 *		Sleep until the connection's socket is ready for events, the latch
 *		is set or timeout_ms passes (WL_TIMEOUT), handling interrupts
 *		(cancel, statement_timeout, termination) meanwhile.  Returns the
 *		events that fired.
 */
static int
wait_for_socket_timeout(CjConnection *c, int events, long timeout_ms,
						const char *context)
{
	int			rc = cj_conn_wait(c, events, timeout_ms);

	if (rc == 0)
		cj_report_connection_lost(c, context);
	if (rc & WL_LATCH_SET)
	{
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return rc;
}

/* wait_for_socket_timeout without a timeout */
int
cj_wait_for_socket(CjConnection *c, int events, const char *context)
{
	return wait_for_socket_timeout(c, events, -1L, context);
}

/*
 * cj_conn_wait
 *		See connection.h.  The connection's own wait set, made at its first
 *		wait and again when libpq hands out another socket.
 */
int
cj_conn_wait(CjConnection *c, int events, long timeout_ms)
{
	pgsocket	sock = c->conn ? PQsocket(c->conn) : PGINVALID_SOCKET;
	WaitEvent	event;

	if (sock == PGINVALID_SOCKET)
		return 0;
	if (c->wait_set != NULL && c->wait_sock != sock)
	{
		FreeWaitEventSet(c->wait_set);
		c->wait_set = NULL;
	}
	if (c->wait_set == NULL)
	{
		c->wait_set = CreateWaitEventSet(TopMemoryContext, 3);
		AddWaitEventToSet(c->wait_set, WL_LATCH_SET, PGINVALID_SOCKET,
						  MyLatch, NULL);
		AddWaitEventToSet(c->wait_set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET,
						  NULL, NULL);
		AddWaitEventToSet(c->wait_set, events, sock, NULL, NULL);
		c->wait_sock = sock;
		c->wait_events = events;
	}
	else if (c->wait_events != events)
	{
		ModifyWaitEvent(c->wait_set, 2, events, NULL);
		c->wait_events = events;
	}
	if (WaitEventSetWait(c->wait_set, timeout_ms, &event, 1,
						 PG_WAIT_EXTENSION) == 0)
		return WL_TIMEOUT;
	return event.events;
}

/*
 * get_result_plain: the next result of a short query sent by
 * cj_check_self_wait, waiting uninterruptibly for the node's answer (it does
 * not take locks); NULL when done or when the connection broke.
 */
static PGresult *
get_result_plain(CjConnection *c)
{
	while (PQisBusy(c->conn))
	{
		pgsocket	sock = PQsocket(c->conn);

		if (sock == PGINVALID_SOCKET)
			return NULL;
		(void) WaitLatchOrSocket(NULL, WL_SOCKET_READABLE | WL_EXIT_ON_PM_DEATH,
								 sock, -1L, PG_WAIT_EXTENSION);
		if (!PQconsumeInput(c->conn))
			return NULL;
	}
	return PQgetResult(c->conn);
}

/*
 * cj_get_result
 *		The next result of the query in flight, or NULL when it is done;
 *		waits interruptibly.  A broken connection is an ERROR.  Every
 *		deadlock_timeout of waiting, as PostgreSQL's own detector does, it
 *		looks for the waits no node can see: for this backend's own other
 *		connection (check_self_wait), and for other sessions that wait on
 *		other nodes for this one (check_remote_wait).
 */
PGresult *
cj_get_result(CjConnection *c, const char *context)
{
	while (PQisBusy(c->conn))
	{
		int			rc = wait_for_socket_timeout(c, WL_SOCKET_READABLE,
												 Max(DeadlockTimeout, 10), context);

		if ((rc & WL_SOCKET_READABLE) && !PQconsumeInput(c->conn))
			cj_report_connection_lost(c, context);
		if (rc & WL_TIMEOUT)
		{
			cj_check_self_wait(c, context);
			if (cj_deadlock_registered())
				cj_check_remote_wait(c, context);
		}
	}
	cj_deadlock_end_wait();
	return PQgetResult(c->conn);
}

/*
 * side_connection
 *		An idle connection to c's node outside any transaction, to ask it
 *		about c's backend while c is busy; NULL when the budget has no room
 *		for one now or the node cannot be reached (the question waits for
 *		the next check).
 */
static PGconn *
side_connection(CjConnection *c)
{
	CjConnection *s = cj_lookup_entry(c->key.serverid, c->key.userid,
								   CJ_SIDE_SLOT, true);
	char	   *why;

	if (s->conn == NULL && cj_node_busy_recently(c->key.serverid))
		return NULL;
	if (s->conn == NULL && s->budget_token == CJ_BUDGET_NONE)
	{
		s->budget_token = cj_budget_acquire(c->key.serverid,
											NameStr(c->node_name), true);
		if (s->budget_token == CJ_BUDGET_REFUSED)
		{
			s->budget_token = CJ_BUDGET_NONE;
			return NULL;
		}
	}
	return cj_conn_open_raw(c->key.serverid, c->key.userid, CJ_SIDE_SLOT,
							&why);
}

/*
 * end_hopeless_wait
 *		c's command waits for a lock it will never get (a deadlock across
 *		nodes, or its own sibling connection holding it): cancel it, read
 *		what is left, and restart the remote transaction, which the caller's
 *		ERROR aborts.
 */
static void
end_hopeless_wait(CjConnection *c)
{
	cj_quiet_cancel(c);
	(void) cj_quiet_drain(c->conn,
					   TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												   CJ_CLEANUP_TIMEOUT_MS),
					   NULL);
	c->in_flight = false;
	c->needs_restart = true;
}

/*
 * cj_check_remote_wait
 *		c's command of a transaction that wrote through colojoin has been
 *		running for a while: ask its node which backends block it, and let
 *		deadlock.c see whether those belong to sessions that wait, on other
 *		nodes, for this one.  The session chosen to give up ends its wait
 *		with PostgreSQL's deadlock error; its abort frees the others.
 */
void
cj_check_remote_wait(CjConnection *c, const char *context)
{
	PGconn	   *side = side_connection(c);
	PGresult   *res;
	char		sql[128];
	int		   *pids;
	int			n = 0;
	int			i;
	char	   *detail;

	if (side == NULL)
		return;
	snprintf(sql, sizeof(sql),
			 "SELECT pg_catalog.unnest(pg_catalog.pg_blocking_pids(%d))",
			 PQbackendPID(c->conn));
	res = PQexec(side, sql);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) == 0)
	{
		PQclear(res);
		return;
	}
	pids = palloc(sizeof(int) * PQntuples(res));
	for (i = 0; i < PQntuples(res); i++)
		if (!PQgetisnull(res, i, 0))
			pids[n++] = atoi(PQgetvalue(res, i, 0));
	PQclear(res);
	if (!cj_deadlock_note_wait(c->key.serverid, pids, n, &detail))
	{
		pfree(pids);
		return;
	}

	end_hopeless_wait(c);
	cj_deadlock_end_wait();
	ereport(ERROR,
			(errcode(ERRCODE_T_R_DEADLOCK_DETECTED),
			 errmsg("deadlock detected across nodes, on node \"%s\"",
					NameStr(c->node_name)),
			 errdetail("%s", detail),
			 errhint("Run the transaction again; transactions that change rows on several nodes in the same order do not wait for each other in a cycle."),
			 context ? errcontext("%s", context) : 0));
}

/*
 * cj_check_self_wait
 *		c's command has been running for a while: find out whether it waits
 *		for a lock that another connection of this backend holds in the same
 *		database.  That connection sits idle in its transaction until the
 *		coordinator sends it something, which it never will while waiting
 *		for c, and the node cannot see the cycle: only we can end it.  Asked
 *		through that idle connection itself (pg_blocking_pids of c's
 *		backend), which costs the node nothing when all is well.  Never
 *		asked of connections busy or in a failed transaction.
 */
void
cj_check_self_wait(CjConnection *c, const char *context)
{
	HASH_SEQ_STATUS scan;
	CjConnection *o;
	const char *mine = cj_node_identity(c->key.serverid);
	CjConnection *holder = NULL;

	if (mine == NULL)
		return;
	hash_seq_init(&scan, cj_connections);
	while ((o = hash_seq_search(&scan)) != NULL)
	{
		char		sql[128];
		PGresult   *res;
		bool		blocked = false;

		if (holder != NULL || o == c || o->in_flight || !o->xact_open ||
			cj_conn_is_bad(o) || PQtransactionStatus(o->conn) != PQTRANS_INTRANS ||
			!cj_node_same(o->key.serverid, c->key.serverid))
			continue;
		snprintf(sql, sizeof(sql),
				 "SELECT %d = ANY (pg_catalog.pg_blocking_pids(%d))",
				 PQbackendPID(o->conn), PQbackendPID(c->conn));
		if (!PQsendQuery(o->conn, sql))
			continue;
		o->in_flight = true;
		while ((res = get_result_plain(o)) != NULL)
		{
			if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
				blocked = (strcmp(PQgetvalue(res, 0, 0), "t") == 0);
			PQclear(res);
		}
		o->in_flight = false;
		if (blocked)
			holder = o;
	}
	if (holder == NULL)
		return;

	/* end the wait: cancel c's command, then say who waited for whom */
	end_hopeless_wait(c);
	ereport(ERROR,
			(errcode(ERRCODE_T_R_DEADLOCK_DETECTED),
			 errmsg("colojoin's connection to node \"%s\" waits for a lock its own connection to node \"%s\" holds",
					NameStr(c->node_name), NameStr(holder->node_name)),
			 errdetail("Servers \"%s\" and \"%s\" reach the same database, and both connections are in this transaction%s%s.",
					   NameStr(c->node_name), NameStr(holder->node_name),
					   context ? ", while " : "", context ? context : ""),
			 errhint("Use one server per database for this work, or create what the statements wait on (a schema, say) beforehand.")));
}

void
cj_begin_flight(CjConnection *c)
{
	c->in_flight = true;
	c->flight_level = GetCurrentTransactionNestLevel();
	cj_xact_touched = true;
}

void
cj_conn_begin_async(CjConnection *conn)
{
	cj_begin_flight(conn);
}

void
cj_conn_end_async(CjConnection *conn)
{
	conn->in_flight = false;
}

/*
 * cj_exec_sql
 *		Run sql (one or several statements) and wait for all of its results,
 *		interruptibly.  The first error result, if any, is reported as an
 *		ERROR with the node and context; otherwise the last result is
 *		returned when want_result (NULL for an empty string), else cleared.
 *		No PGresult leaks on any path.
 */
void
cj_send_sql(CjConnection *c, const char *sql, const char *context)
{
	if (cj_conn_is_bad(c))
		cj_report_connection_lost(c, context);
	if (!PQsendQuery(c->conn, sql))
		cj_report_error(ERROR, c, NULL, false, context, sql);
	cj_begin_flight(c);
}

PGresult *
cj_exec_sql(CjConnection *c, const char *sql, const char *context,
		 bool want_result)
{
	cj_send_sql(c, sql, context);
	return cj_collect_sql(c, sql, context, want_result);
}

/* the answer to sql, sent by send_sql: see exec_sql */
PGresult *
cj_collect_sql(CjConnection *c, const char *sql, const char *context,
			bool want_result)
{
	PGresult   *volatile last = NULL;
	PGresult   *volatile failed = NULL;

	PG_TRY();
	{
		PGresult   *res;

		while ((res = cj_get_result(c, context)) != NULL)
		{
			ExecStatusType status = PQresultStatus(res);

			if (status == PGRES_COPY_IN || status == PGRES_COPY_OUT ||
				status == PGRES_COPY_BOTH)
			{
				/* leave it in flight: abort processing ends the COPY */
				PQclear(res);
				ereport(ERROR,
						(errcode(ERRCODE_PROTOCOL_VIOLATION),
						 errmsg("unexpected COPY from node \"%s\"",
								NameStr(c->node_name)),
						 errcontext("remote SQL command: %s", sql)));
			}
			if (status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE ||
				status == PGRES_PIPELINE_ABORTED)
			{
				if (failed == NULL)
					failed = res;
				else
					PQclear(res);
			}
			else
			{
				PQclear(last);
				last = res;
			}
		}
	}
	PG_CATCH();
	{
		PQclear(last);
		PQclear(failed);
		PG_RE_THROW();
	}
	PG_END_TRY();

	c->in_flight = false;
	if (failed != NULL)
	{
		PQclear(last);
		cj_report_error(ERROR, c, failed, true, context, sql);
	}
	if (!want_result)
	{
		PQclear(last);
		return NULL;
	}
	return last;
}

void
cj_exec_command(CjConnection *conn, const char *sql, const char *context)
{
	cj_exec_sql(conn, sql, context, false);
}

PGresult *
cj_exec_query(CjConnection *conn, const char *sql, const char *context)
{
	return cj_exec_sql(conn, sql, context, true);
}

/* see connection.h */
char *
cj_exec_value(CjConnection *conn, const char *sql, const char *context)
{
	PGresult   *res = cj_exec_query(conn, sql, context);
	char	   *value = NULL;

	if (res != NULL && PQntuples(res) > 0 && !PQgetisnull(res, 0, 0))
		value = pstrdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	return value;
}

/* milliseconds left until deadline, at least 0 */
static long
ms_left(TimestampTz deadline)
{
	long		secs;
	int			usecs;

	TimestampDifference(GetCurrentTimestamp(), deadline, &secs, &usecs);
	return secs * 1000 + usecs / 1000;
}

/*
 * quiet_wait
 *		Wait, without servicing interrupts (abort processing holds them), for
 *		socket events until deadline.  false on timeout or a dead socket.
 */
static bool
quiet_wait(PGconn *conn, int events, TimestampTz deadline)
{
	pgsocket	sock = PQsocket(conn);

	if (sock == PGINVALID_SOCKET)
		return false;
	for (;;)
	{
		long		timeout = ms_left(deadline);
		int			rc;

		if (timeout <= 0)
			return false;
		rc = WaitLatchOrSocket(MyLatch,
							   WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH | events,
							   sock, timeout, PG_WAIT_EXTENSION);
		if (rc & WL_LATCH_SET)
			ResetLatch(MyLatch);
		if (rc & events)
			return true;
	}
}

/* push out everything libpq buffered, in nonblocking mode, until deadline */
static bool
quiet_flush(PGconn *conn, TimestampTz deadline)
{
	for (;;)
	{
		int			r = PQflush(conn);

		if (r == 0)
			return true;
		if (r < 0)
			return false;
		if (!quiet_wait(conn, WL_SOCKET_WRITEABLE | WL_SOCKET_READABLE, deadline))
			return false;
		if (!PQconsumeInput(conn))
			return false;
	}
}

/*
 * cj_quiet_drain
 *		Read and discard every remaining result of the query in flight,
 *		ending a COPY in either direction, until deadline.  When errmsg is
 *		given, the first error result's message is stored there (palloc'd).
 *		false when the connection could not be brought back to idle.
 */
bool
cj_quiet_drain(PGconn *conn, TimestampTz deadline, char **errmsg_out)
{
	if (PQsetnonblocking(conn, 1) != 0 || !quiet_flush(conn, deadline))
		return false;
	/* what already arrived needs no wait (a COMMIT sent long ago, say) */
	if (!PQconsumeInput(conn))
		return false;
	for (;;)
	{
		PGresult   *res;

		while (PQisBusy(conn))
		{
			if (!quiet_wait(conn, WL_SOCKET_READABLE, deadline) ||
				!PQconsumeInput(conn))
				return false;
		}
		res = PQgetResult(conn);
		if (res == NULL)
			break;
		switch (PQresultStatus(res))
		{
			case PGRES_COPY_IN:
				PQclear(res);
				if (PQputCopyEnd(conn, "canceled by colojoin") < 0 ||
					!quiet_flush(conn, deadline))
					return false;
				break;
			case PGRES_COPY_OUT:
				PQclear(res);
				for (;;)
				{
					char	   *buf = NULL;
					int			n = PQgetCopyData(conn, &buf, 1);

					if (buf)
						PQfreemem(buf);
					if (n == -1)
						break;
					if (n == -2)
						return false;
					if (n == 0 &&
						(!quiet_wait(conn, WL_SOCKET_READABLE, deadline) ||
						 !PQconsumeInput(conn)))
						return false;
				}
				break;
			case PGRES_COPY_BOTH:
				PQclear(res);
				return false;
			case PGRES_FATAL_ERROR:
			case PGRES_BAD_RESPONSE:
				if (errmsg_out && *errmsg_out == NULL)
				{
					char	   *m = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

					*errmsg_out = pstrdup(m ? m : PQresultErrorMessage(res));
				}
				PQclear(res);
				break;
			default:
				PQclear(res);
				break;
		}
	}
	return PQsetnonblocking(conn, 0) == 0;
}

/*
 * cj_quiet_cancel
 *		Ask the node to cancel the query in flight, if it is still running.
 *		A cancel that arrives after the query ended is ignored by the node.
 */
void
cj_quiet_cancel(CjConnection *c)
{
	PGcancel   *cancel;
	char		errbuf[256];

	if (c->conn == NULL || !c->in_flight)
		return;

	/*
	 * Peek at the next result: when the statement already ended there is
	 * nothing to cancel (quiet_drain reads what is left), and a COPY IN is
	 * ended by quiet_drain's CopyFail.  Rows of single-row mode and COPY OUT
	 * data mean the query is still producing: cancel it.
	 */
	if (PQconsumeInput(c->conn) && !PQisBusy(c->conn))
	{
		PGresult   *res = PQgetResult(c->conn);
		ExecStatusType status = res ? PQresultStatus(res) : PGRES_COMMAND_OK;

		PQclear(res);
		if (status != PGRES_SINGLE_TUPLE && status != PGRES_COPY_OUT)
			return;
	}
	cancel = PQgetCancel(c->conn);
	if (cancel != NULL)
	{
		if (!PQcancel(cancel, errbuf, sizeof(errbuf)))
			ereport(WARNING,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not send cancel request to node \"%s\": %s",
							NameStr(c->node_name), errbuf)));
		PQfreeCancel(cancel);
	}
}

/*
 * cj_quiet_exec
 *		Run sql on an idle connection without throwing, waiting at most until
 *		deadline.  On failure *errmsg_out (if given) says why.
 */
bool
cj_quiet_exec(CjConnection *c, const char *sql, TimestampTz deadline,
		   char **errmsg_out)
{
	char	   *err = NULL;

	if (cj_conn_is_bad(c))
	{
		if (errmsg_out)
			*errmsg_out = pstrdup("connection lost");
		return false;
	}
	if (PQsetnonblocking(c->conn, 1) != 0 || !PQsendQuery(c->conn, sql))
	{
		if (errmsg_out)
			*errmsg_out = conn_error_message(c->conn);
		return false;
	}
	c->in_flight = true;
	if (!quiet_flush(c->conn, deadline) || !cj_quiet_drain(c->conn, deadline, &err))
	{
		if (errmsg_out)
			*errmsg_out = err ? err : pstrdup("no answer from the node in time");
		return false;
	}
	c->in_flight = false;
	if (err != NULL)
	{
		if (errmsg_out)
			*errmsg_out = err;
		return false;
	}
	return true;
}

/*
 * cj_conn_settle
 *		Bring a connection whose query may still be in flight back to idle:
 *		cancel (already requested by the caller when cancelled is true),
 *		drain, and close it when that fails.  Never throws.
 */
void
cj_conn_settle(CjConnection *c, bool cancelled)
{
	if (c->conn == NULL)
	{
		c->in_flight = false;
		return;
	}
	if (PQstatus(c->conn) != CONNECTION_OK)
	{
		cj_close_connection(c);
		return;
	}
	if (!c->in_flight)
		return;
	if (!cancelled)
		cj_quiet_cancel(c);
	if (!cj_quiet_drain(c->conn,
					 TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												 CJ_CLEANUP_TIMEOUT_MS),
					 NULL))
		cj_close_connection(c);
	else
		c->in_flight = false;
}

void
cj_conn_set_owner(CjConnection *conn, void *owner)
{
	conn->owner = owner;
}

void *
cj_conn_owner(CjConnection *conn)
{
	return conn->owner;
}

void
cj_conn_set_yield_hook(CjSettleHook hook)
{
	cj_yield_hook = hook;
}

uint64
cj_conn_write_tick(void)
{
	return cj_write_tick;
}

uint64
cj_conn_last_write(CjConnection *conn)
{
	return conn->last_write;
}

/*
 * cj_conn_await_input
 *		See connection.h: sleep until conn's node sends something (or an
 *		interrupt arrives) and take it in.
 */
void
cj_conn_await_input(CjConnection *conn, const char *context)
{
	int			rc = cj_wait_for_socket(conn, WL_SOCKET_READABLE, context);

	if ((rc & WL_SOCKET_READABLE) && !PQconsumeInput(conn->conn))
		cj_report_error(ERROR, conn, NULL, false, context, NULL);
}

void
cj_conn_set_settle_hook(CjSettleHook hook)
{
	cj_settle_hook = hook;
}

bool
cj_conn_cursor_open(CjConnection *conn)
{
	return conn->cursor_open;
}

void
cj_conn_set_cursor_open(CjConnection *conn, bool open)
{
	conn->cursor_open = open;
	if (open)
		conn->cursor_level = GetCurrentTransactionNestLevel();
}

/*
 * cj_conn_cancel
 *		Stop the query in flight on conn (a scan that needs no more rows,
 *		say) and leave the connection idle.  When the cancel aborted the
 *		remote transaction, it is rolled back and begun anew at the next use
 *		in this local transaction; one that held changes dooms the local
 *		transaction instead of losing them silently.  Never throws.
 */
void
cj_conn_cancel(CjConnection *conn)
{
	char	   *err = NULL;

	if (conn->conn == NULL || !conn->in_flight)
		return;
	cj_quiet_cancel(conn);
	if (!cj_quiet_drain(conn->conn,
					 TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												 CJ_CLEANUP_TIMEOUT_MS),
					 &err))
	{
		cj_close_connection(conn);
		conn->in_flight = false;
		return;
	}
	conn->in_flight = false;
	if (err != NULL)
	{
		if (conn->write_min_level > 0)
			conn->doomed = true;
		else
			conn->needs_restart = true;
	}
}
