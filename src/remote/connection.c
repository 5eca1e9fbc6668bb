/*-------------------------------------------------------------------------
 *
 * connection.c
 *	  libpq connections to nodes, cached per (server, user, slot) for the
 *	  life of the backend, and the remote transactions that follow the
 *	  local transaction.
 *
 *	  Owns: opening connections from the foreign server's and the user
 *	  mapping's options (with postgres_fdw's password rule), the session
 *	  settings remote SQL relies on, remote START TRANSACTION / COMMIT /
 *	  ROLLBACK driven by the local (sub)transaction callbacks, synchronous
 *	  execution that stays interruptible, cancelling and draining queries in
 *	  flight when a (sub)transaction aborts, node-to-node COPY through the
 *	  coordinator, and reporting remote errors with the node's name.
 *
 *	  A transaction that changed data on several nodes through colojoin's
 *	  write path (cj_conn_note_dml) commits with two-phase commit: PREPARE
 *	  TRANSACTION everywhere in pre-commit, COMMIT PREPARED once the local
 *	  commit is durable; twophase.c names the prepared transactions, keeps
 *	  their commit records and resolves those left in doubt.
 *
 *	  Deliberately does not: decide what runs where (planner, executor).
 *	  Subtransactions are handled cheaply: a read-only
 *	  remote transaction hit by a subtransaction abort is restarted at its
 *	  next use; only a connection holding durable changes (noted with
 *	  cj_conn_note_write) takes remote savepoints, so that an abort undoes
 *	  just the aborted level's work.  When even that is impossible (the
 *	  connection died), the local transaction is refused at commit, so the
 *	  coordinator and the nodes never silently disagree.
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

/* how long abort processing waits for a node before closing the connection */
#define CJ_CLEANUP_TIMEOUT_MS	5000

/* a COPY between nodes flushes to the destination after this many bytes */
#define CJ_COPY_FLUSH_BYTES		(64 * 1024)

/* the session settings every connection gets; remote SQL relies on them */
/* how long a command waits before we ask whether it waits on ourselves */
/* the slot of the connection that asks a node about a waiting statement */
#define CJ_SIDE_SLOT 1001

#define CJ_SESSION_SETUP \
	"SET search_path = pg_catalog; SET timezone = 'UTC'; SET datestyle = ISO; " \
	"SET intervalstyle = postgres; SET extra_float_digits = 3"

typedef struct CjConnKey
{
	Oid			serverid;
	Oid			userid;
	int			slot;
} CjConnKey;

/* SQL that undoes a durable remote change, should the local commit fail */
typedef struct CjUndo
{
	char	   *sql;
	char	   *what;
	int			level;			/* nest level that owns the change */
} CjUndo;

struct CjConnection
{
	CjConnKey	key;			/* hash key; must be first */
	PGconn	   *conn;			/* NULL while closed */
	NameData	node_name;		/* the server's name, for messages */
	uint32		server_hashvalue;	/* syscache hash of the server */
	bool		invalidated;	/* server or mapping changed: reopen when idle */

	/* the remote transaction of the current local transaction */
	bool		xact_open;		/* START TRANSACTION sent in this transaction */
	bool		needs_restart;	/* roll back and start anew at the next use */
	bool		doomed;			/* lost changes the local transaction kept */
	bool		committed;		/* COMMIT succeeded during pre-commit */
	bool		undo_done;		/* undo SQL already run after a failed commit */
	uint64		xact_id;		/* which remote transaction, 0 before any */
	char		snapshot[64];	/* the transaction's snapshot name, "" when none */
	bool		exported;		/* that snapshot was exported here */
	int			write_min_level;	/* lowest nest level with durable writes */
	int			write_max_level;	/* highest one; 0 when no writes */
	List	   *undo;			/* of CjUndo, newest first, TopTransactionContext */
	List	   *savepoints;		/* nest levels with a remote savepoint, ascending */

	/* the query in flight, if any */
	bool		in_flight;
	int			flight_level;	/* nest level of the (sub)transaction that sent it */

	/* the executor's cursor is open in the remote transaction */
	bool		cursor_open;
	/* the scan reading through this connection, which nobody else may use */
	void	   *owner;

	/* COMMIT of a read-only transaction sent, its answer not read yet */
	bool		commit_pending;

	/* colojoin's write path changed rows here (two-phase commit applies) */
	bool		dml;
	uint64		last_write;		/* write_tick at its last write */
	/* a move put temporary tables here (such a transaction cannot PREPARE) */
	bool		used_temp;
	/* prepared as gid in pre-commit; COMMIT PREPARED follows the local commit */
	bool		prepared;
	char		gid[200];
	/* the node's max_prepared_transactions, -1 until asked */
	int			max_prepared;

	/* its share of the node's connection budget (conn_budget.c), 0: none */
	int			budget_token;
	TimestampTz last_used;		/* when get_connection last handed it out */

	/*
	 * The latch, postmaster death and this socket, kept while the socket
	 * lives: a set made per wait costs an epoll descriptor's creation and
	 * close, a fifth of what a warm point lookup spends on the coordinator.
	 */
	WaitEventSet *wait_set;
	pgsocket	wait_sock;
	int			wait_events;
};

static HTAB *cj_connections = NULL;

/*
 * The connection slot of each (server, user) that colojoin's write path
 * wrote through in this transaction (CjConnKey, TopTransactionContext):
 * later reads and writes of that node use it alone, so they see the writes.
 */
static List *cj_write_slots = NIL;

/* cj_conn_open_raw is opening a connection for recovery, which resolves itself */
static bool opening_raw = false;

/*
 * Set while cj_get_write_connection starts a write connection's remote
 * transaction for a local transaction at READ COMMITTED: it starts at READ
 * COMMITTED too, without a snapshot of the node's other connections.
 */
static bool begin_read_committed = false;

/* true once any connection was used in the current local transaction */
static bool cj_xact_touched = false;

/* true when an invalidation retired connections that are still open */
static bool cj_pending_close = false;

/* libpq keywords a user may set through server or user mapping options */
static List *cj_libpq_keywords = NIL;

static void cj_xact_callback(XactEvent event, void *arg);
static void check_self_wait(CjConnection *c, const char *context);
static void check_remote_wait(CjConnection *c, const char *context);
static CjConnection *lookup_entry(Oid serverid, Oid userid, int slot,
								  bool create);
static void check_remote_wait(CjConnection *c, const char *context);
static void quiet_cancel(CjConnection *c);
static bool quiet_drain(PGconn *conn, TimestampTz deadline, char **errmsg_out);
static void finish_pending_commit(CjConnection *c);
static CjConnection *get_connection(Oid serverid, Oid userid, int slot,
									 char **begin_sql, bool optional);
static void cj_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
								SubTransactionId parentSubid, void *arg);
static void cj_inval_server(Datum arg, int cacheid, uint32 hashvalue);
static void cj_inval_mapping(Datum arg, int cacheid, uint32 hashvalue);

/*
 * cj_connection_init
 *		Register the callbacks that tie remote transactions to local ones and
 *		retire connections whose server or user mapping changed.
 */
void
cj_connection_init(void)
{
	RegisterXactCallback(cj_xact_callback, NULL);
	RegisterSubXactCallback(cj_subxact_callback, NULL);
	CacheRegisterSyscacheCallback(FOREIGNSERVEROID, cj_inval_server, (Datum) 0);
	CacheRegisterSyscacheCallback(USERMAPPINGOID, cj_inval_mapping, (Datum) 0);
}

/* ----------------------------------------------------------------
 *		Small helpers
 * ----------------------------------------------------------------
 */

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
 * forget_wait_set
 *		Free c's wait set, before its socket closes: the socket's number
 *		may come back for another connection, which the set would not see.
 */
static void
forget_wait_set(CjConnection *c)
{
	if (c->wait_set != NULL)
	{
		FreeWaitEventSet(c->wait_set);
		c->wait_set = NULL;
	}
}

/* close the connection, whatever state it is in; the cache entry stays */
static void
close_connection(CjConnection *c)
{
	forget_wait_set(c);
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

static bool
conn_is_bad(CjConnection *c)
{
	return c->conn == NULL || PQstatus(c->conn) != CONNECTION_OK;
}

/*
 * report_connection_lost
 *		ERROR for a connection that broke while we talked to it.
 */
static void
report_connection_lost(CjConnection *c, const char *context)
{
	char	   *msg = conn_error_message(c->conn);

	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("lost connection to node \"%s\"", NameStr(c->node_name)),
			 errdetail_internal("%s", msg),
			 context ? errcontext("%s", context) : 0));
}

/*
 * report_error
 *		ereport a remote failure, keeping the remote SQLSTATE, message, detail,
 *		hint and context, and adding which node, what for and (when known)
 *		which SQL.  With clear, res is PQclear'ed before reporting, so the
 *		caller's result never leaks into a longjmp.
 */
static void
report_error(int elevel, CjConnection *c, PGresult *res, bool clear,
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
	report_error(elevel, conn, res, false, context, NULL);
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
		report_connection_lost(c, context);
	if (rc & WL_LATCH_SET)
	{
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return rc;
}

/* wait_for_socket_timeout without a timeout */
static int
wait_for_socket(CjConnection *c, int events, const char *context)
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
 * check_self_wait, waiting uninterruptibly for the node's answer (it does
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
 * get_result
 *		The next result of the query in flight, or NULL when it is done;
 *		waits interruptibly.  A broken connection is an ERROR.  Every
 *		deadlock_timeout of waiting, as PostgreSQL's own detector does, it
 *		looks for the waits no node can see: for this backend's own other
 *		connection (check_self_wait), and for other sessions that wait on
 *		other nodes for this one (check_remote_wait).
 */
static PGresult *
get_result(CjConnection *c, const char *context)
{
	while (PQisBusy(c->conn))
	{
		int			rc = wait_for_socket_timeout(c, WL_SOCKET_READABLE,
												 Max(DeadlockTimeout, 10), context);

		if ((rc & WL_SOCKET_READABLE) && !PQconsumeInput(c->conn))
			report_connection_lost(c, context);
		if (rc & WL_TIMEOUT)
		{
			check_self_wait(c, context);
			if (cj_deadlock_registered())
				check_remote_wait(c, context);
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
	CjConnection *s = lookup_entry(c->key.serverid, c->key.userid,
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
	quiet_cancel(c);
	(void) quiet_drain(c->conn,
					   TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												   CJ_CLEANUP_TIMEOUT_MS),
					   NULL);
	c->in_flight = false;
	c->needs_restart = true;
}
/*
 * check_remote_wait
 *		c's command of a transaction that wrote through colojoin has been
 *		running for a while: ask its node which backends block it, and let
 *		deadlock.c see whether those belong to sessions that wait, on other
 *		nodes, for this one.  The session chosen to give up ends its wait
 *		with PostgreSQL's deadlock error; its abort frees the others.
 */
static void
check_remote_wait(CjConnection *c, const char *context)
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
 * check_self_wait
 *		c's command has been running for a while: find out whether it waits
 *		for a lock that another connection of this backend holds in the same
 *		database.  That connection sits idle in its transaction until the
 *		coordinator sends it something, which it never will while waiting
 *		for c, and the node cannot see the cycle: only we can end it.  Asked
 *		through that idle connection itself (pg_blocking_pids of c's
 *		backend), which costs the node nothing when all is well.  Never
 *		asked of connections busy or in a failed transaction.
 */
static void
check_self_wait(CjConnection *c, const char *context)
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
			conn_is_bad(o) || PQtransactionStatus(o->conn) != PQTRANS_INTRANS ||
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

static void
begin_flight(CjConnection *c)
{
	c->in_flight = true;
	c->flight_level = GetCurrentTransactionNestLevel();
	cj_xact_touched = true;
}

void
cj_conn_begin_async(CjConnection *conn)
{
	begin_flight(conn);
}

void
cj_conn_end_async(CjConnection *conn)
{
	conn->in_flight = false;
}

/*
 * exec_sql
 *		Run sql (one or several statements) and wait for all of its results,
 *		interruptibly.  The first error result, if any, is reported as an
 *		ERROR with the node and context; otherwise the last result is
 *		returned when want_result (NULL for an empty string), else cleared.
 *		No PGresult leaks on any path.
 */
static void
send_sql(CjConnection *c, const char *sql, const char *context)
{
	if (conn_is_bad(c))
		report_connection_lost(c, context);
	if (!PQsendQuery(c->conn, sql))
		report_error(ERROR, c, NULL, false, context, sql);
	begin_flight(c);
}

static PGresult *collect_sql(CjConnection *c, const char *sql,
							 const char *context, bool want_result);

static PGresult *
exec_sql(CjConnection *c, const char *sql, const char *context,
		 bool want_result)
{
	send_sql(c, sql, context);
	return collect_sql(c, sql, context, want_result);
}

/* the answer to sql, sent by send_sql: see exec_sql */
static PGresult *
collect_sql(CjConnection *c, const char *sql, const char *context,
			bool want_result)
{
	PGresult   *volatile last = NULL;
	PGresult   *volatile failed = NULL;

	PG_TRY();
	{
		PGresult   *res;

		while ((res = get_result(c, context)) != NULL)
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
		report_error(ERROR, c, failed, true, context, sql);
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
	exec_sql(conn, sql, context, false);
}

PGresult *
cj_exec_query(CjConnection *conn, const char *sql, const char *context)
{
	return exec_sql(conn, sql, context, true);
}

/* ----------------------------------------------------------------
 *		Cleanup that never throws (abort processing)
 * ----------------------------------------------------------------
 */

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
 * quiet_drain
 *		Read and discard every remaining result of the query in flight,
 *		ending a COPY in either direction, until deadline.  When errmsg is
 *		given, the first error result's message is stored there (palloc'd).
 *		false when the connection could not be brought back to idle.
 */
static bool
quiet_drain(PGconn *conn, TimestampTz deadline, char **errmsg_out)
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
 * quiet_cancel
 *		Ask the node to cancel the query in flight, if it is still running.
 *		A cancel that arrives after the query ended is ignored by the node.
 */
static void
quiet_cancel(CjConnection *c)
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
 * quiet_exec
 *		Run sql on an idle connection without throwing, waiting at most until
 *		deadline.  On failure *errmsg_out (if given) says why.
 */
static bool
quiet_exec(CjConnection *c, const char *sql, TimestampTz deadline,
		   char **errmsg_out)
{
	char	   *err = NULL;

	if (conn_is_bad(c))
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
	if (!quiet_flush(c->conn, deadline) || !quiet_drain(c->conn, deadline, &err))
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
 * settle_connection
 *		Bring a connection whose query may still be in flight back to idle:
 *		cancel (already requested by the caller when cancelled is true),
 *		drain, and close it when that fails.  Never throws.
 */
static void
settle_connection(CjConnection *c, bool cancelled)
{
	if (c->conn == NULL)
	{
		c->in_flight = false;
		return;
	}
	if (PQstatus(c->conn) != CONNECTION_OK)
	{
		close_connection(c);
		return;
	}
	if (!c->in_flight)
		return;
	if (!cancelled)
		quiet_cancel(c);
	if (!quiet_drain(c->conn,
					 TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												 CJ_CLEANUP_TIMEOUT_MS),
					 NULL))
		close_connection(c);
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

static CjSettleHook settle_hook = NULL;
static CjSettleHook yield_hook = NULL;

void
cj_conn_set_yield_hook(CjSettleHook hook)
{
	yield_hook = hook;
}

static uint64 write_tick = 0;

uint64
cj_conn_write_tick(void)
{
	return write_tick;
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
	int			rc = wait_for_socket(conn, WL_SOCKET_READABLE, context);

	if ((rc & WL_SOCKET_READABLE) && !PQconsumeInput(conn->conn))
		report_error(ERROR, conn, NULL, false, context, NULL);
}

void
cj_conn_set_settle_hook(CjSettleHook hook)
{
	settle_hook = hook;
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
	quiet_cancel(conn);
	if (!quiet_drain(conn->conn,
					 TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												 CJ_CLEANUP_TIMEOUT_MS),
					 &err))
	{
		close_connection(conn);
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

/* ----------------------------------------------------------------
 *		Opening connections
 * ----------------------------------------------------------------
 */

/*
 * is_libpq_keyword
 *		Whether an option name may be passed to libpq: a keyword libpq knows,
 *		not a debug option, and not one colojoin sets itself.  This is what
 *		drops postgres_fdw's own options (use_remote_estimate, fetch_size,
 *		...) from the connection string.
 */
static bool
is_libpq_keyword(const char *name)
{
	ListCell   *lc;

	if (cj_libpq_keywords == NIL)
	{
		PQconninfoOption *defs = PQconndefaults();
		PQconninfoOption *d;
		MemoryContext old;

		if (defs == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
		old = MemoryContextSwitchTo(TopMemoryContext);
		for (d = defs; d->keyword != NULL; d++)
		{
			if (strchr(d->dispchar, 'D') != NULL ||
				strcmp(d->keyword, "client_encoding") == 0 ||
				strcmp(d->keyword, "fallback_application_name") == 0 ||
				strcmp(d->keyword, "replication") == 0)
				continue;
			cj_libpq_keywords = lappend(cj_libpq_keywords, pstrdup(d->keyword));
		}
		MemoryContextSwitchTo(old);
		PQconninfoFree(defs);
	}
	foreach(lc, cj_libpq_keywords)
	{
		if (strcmp((char *) lfirst(lc), name) == 0)
			return true;
	}
	return false;
}

/*
 * cj_server_address
 *		"host=... port=..." of a server for messages, with libpq's defaults
 *		filled in where the options are silent.
 */
char *
cj_server_address(Oid serverid)
{
	ForeignServer *server = GetForeignServer(serverid);
	char	   *host = cj_option_value(server->options, "host");
	char	   *hostaddr = cj_option_value(server->options, "hostaddr");
	char	   *port = cj_option_value(server->options, "port");

	if (host == NULL && hostaddr == NULL)
	{
		host = getenv("PGHOST");
		if (host == NULL || host[0] == '\0')
			host = DEFAULT_PGSOCKET_DIR;
	}
	if (port == NULL)
	{
		port = getenv("PGPORT");
		if (port == NULL || port[0] == '\0')
			port = DEF_PGPORT_STR;
	}
	if (host == NULL)
		return psprintf("hostaddr=%s port=%s", hostaddr, port);
	return psprintf("host=%s port=%s", host, port);
}

/*
 * lookup_user_mapping
 *		The user mapping serving userid on the server (the user's own, else
 *		PUBLIC's), with an error that names both when there is none.
 */
static UserMapping *
lookup_user_mapping(Oid userid, ForeignServer *server)
{
	if (!SearchSysCacheExists2(USERMAPPINGUSERSERVER,
							   ObjectIdGetDatum(userid),
							   ObjectIdGetDatum(server->serverid)) &&
		!SearchSysCacheExists2(USERMAPPINGUSERSERVER,
							   ObjectIdGetDatum(InvalidOid),
							   ObjectIdGetDatum(server->serverid)))
	{
		char	   *username = GetUserNameFromId(userid, true);

		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("user mapping not found for user \"%s\" on node \"%s\"",
						username ? username : "?", server->servername),
				 errhint("Create one with CREATE USER MAPPING FOR %s SERVER %s OPTIONS (user '...', password '...').",
						 username ? quote_identifier(username) : "CURRENT_USER",
						 quote_identifier(server->servername))));
	}
	return GetUserMapping(userid, server->serverid);
}

static bool
mapping_requires_password(UserMapping *um)
{
	ListCell   *lc;

	foreach(lc, um->options)
	{
		DefElem    *d = (DefElem *) lfirst(lc);

		if (strcmp(d->defname, "password_required") == 0)
			return defGetBoolean(d);
	}
	return true;
}

/*
 * notice_receiver
 *		Remote NOTICEs and WARNINGs ("schema ... already exists, skipping")
 *		would otherwise go to the coordinator's stderr through libpq's
 *		default; they go to the server log at DEBUG1 instead.  Never throws
 *		(it runs inside libpq).
 */
static void
notice_receiver(void *arg, const PGresult *res)
{
	CjConnection *c = (CjConnection *) arg;
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

	if (msg != NULL)
		elog(DEBUG1, "colojoin: node \"%s\": %s", NameStr(c->node_name), msg);
}

/*
 * What an attempt to connect met.  Only a node that did not answer at all
 * is down: one that answered with an error is up and holds its data, and
 * is either full for now or refusing this role.
 */
typedef enum CjConnectFailure
{
	CJ_CONNECT_UNREACHABLE,		/* no server answered: refused, timeout, DNS */
	CJ_CONNECT_BUSY,			/* 53300 no free slot, 57P03 starting up or
								 * shutting down */
	CJ_CONNECT_REFUSED			/* any other error the server sent: 28xxx,
								 * 3D000, ... */
} CjConnectFailure;

/* what a caller wants done when the node does not let it connect */
typedef enum CjConnectMode
{
	CJ_CONNECT_WAIT,			/* a busy node is waited for; any failure is
								 * an ERROR */
	CJ_CONNECT_SKIP_BUSY,		/* a busy node: NULL at once (the caller does
								 * without); other failures ERRORs */
	CJ_CONNECT_PROBE,			/* a busy node is waited for; an unreachable
								 * one is NULL with the reason; a refusal is
								 * an ERROR */
	CJ_CONNECT_QUIET			/* no waiting: whatever the failure, NULL with
								 * the reason */
} CjConnectMode;

/* a busy node is asked again after this long at first, then twice as long */
#define CJ_BUSY_FIRST_RETRY_MS	10
#define CJ_BUSY_MAX_RETRY_MS	250

/* one libpq attempt's failure: its class, SQLSTATE ("" when none), text */
typedef struct CjConnectError
{
	CjConnectFailure kind;
	char		sqlstate[6];
	char	   *message;		/* libpq's message, as its default verbosity
								 * would have put it */
} CjConnectError;

/*
 * classify_connect_error
 *		Why libpq could not connect, from its error message.  libpq keeps an
 *		error the server sent during start-up only as text; under
 *		PQERRORS_VERBOSE its line reads "SEVERITY:  SQLSTATE: message" and
 *		a "LOCATION:  " line follows.  libpq tries a host's addresses (and
 *		hosts) in turn, each attempt adding its lines: the last code found
 *		is the one that counts.  The message is given back without codes and
 *		LOCATION lines.
 */
static void
classify_connect_error(const char *msg, CjConnectError *err)
{
	StringInfoData clean;
	const char *line = msg;

	initStringInfo(&clean);
	err->sqlstate[0] = '\0';
	while (*line != '\0')
	{
		const char *eol = strchr(line, '\n');
		int			len = eol ? eol - line : strlen(line);
		int			i;
		int			code_at = -1;

		if (strncmp(line, "LOCATION:  ", 11) != 0)
		{
			/* ":  " then five code characters then ": " */
			for (i = 0; i + 10 <= len; i++)
			{
				int			j;

				if (strncmp(line + i, ":  ", 3) != 0 ||
					strncmp(line + i + 8, ": ", 2) != 0)
					continue;
				for (j = 3; j < 8; j++)
					if (!((line[i + j] >= '0' && line[i + j] <= '9') ||
						  (line[i + j] >= 'A' && line[i + j] <= 'Z')))
						break;
				if (j == 8)
				{
					code_at = i + 3;
					break;
				}
			}
			if (code_at >= 0)
			{
				memcpy(err->sqlstate, line + code_at, 5);
				err->sqlstate[5] = '\0';
				appendBinaryStringInfo(&clean, line, code_at);
				appendBinaryStringInfo(&clean, line + code_at + 7,
									   len - code_at - 7);
			}
			else
				appendBinaryStringInfo(&clean, line, len);
			appendStringInfoChar(&clean, '\n');
		}
		line += len;
		if (*line == '\n')
			line++;
	}
	while (clean.len > 0 && (clean.data[clean.len - 1] == '\n' ||
							 clean.data[clean.len - 1] == ' '))
		clean.data[--clean.len] = '\0';
	if (clean.len > 0)
		err->message = clean.data;
	else
	{
		pfree(clean.data);
		err->message = pstrdup("connection failed without a message");
	}

	if (err->sqlstate[0] == '\0')
		err->kind = CJ_CONNECT_UNREACHABLE;
	else if (strcmp(err->sqlstate, "53300") == 0 ||
			 strcmp(err->sqlstate, "57P03") == 0)
		err->kind = CJ_CONNECT_BUSY;
	else
		err->kind = CJ_CONNECT_REFUSED;
}

/*
 * libpq_connect
 *		One attempt: start a libpq connection with these options and poll it
 *		until it is up or failed, interruptibly (cancel, statement_timeout).
 *		On failure, NULL with *err filled in.
 */
static PGconn *
libpq_connect(const char *const *keywords, const char *const *values,
			  const char *servername, CjConnectError *err)
{
	PGconn	   *volatile conn;
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;

	conn = PQconnectStartParams(keywords, values, false);
	if (conn == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory while connecting to node \"%s\"",
						servername)));
	/* so that the server's SQLSTATE reaches the message (above) */
	PQsetErrorVerbosity(conn, PQERRORS_VERBOSE);

	PG_TRY();
	{
		if (PQstatus(conn) == CONNECTION_BAD)
			st = PGRES_POLLING_FAILED;
		while (st != PGRES_POLLING_OK && st != PGRES_POLLING_FAILED)
		{
			pgsocket	sock = PQsocket(conn);
			int			events;
			int			rc;

			if (sock == PGINVALID_SOCKET)
			{
				st = PGRES_POLLING_FAILED;
				break;
			}
			events = (st == PGRES_POLLING_READING) ?
				WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE;
			rc = WaitLatchOrSocket(MyLatch,
								   WL_LATCH_SET | WL_EXIT_ON_PM_DEATH | events,
								   sock, -1L, PG_WAIT_EXTENSION);
			if (rc & WL_LATCH_SET)
			{
				ResetLatch(MyLatch);
				CHECK_FOR_INTERRUPTS();
			}
			if (rc & events)
				st = PQconnectPoll(conn);
		}
	}
	PG_CATCH();
	{
		PQfinish(conn);
		PG_RE_THROW();
	}
	PG_END_TRY();

	if (st == PGRES_POLLING_OK && PQstatus(conn) == CONNECTION_OK)
	{
		/* remote errors are read field by field; messages as by default */
		PQsetErrorVerbosity(conn, PQERRORS_DEFAULT);
		return conn;
	}
	classify_connect_error(PQerrorMessage(conn), err);
	PQfinish(conn);
	return NULL;
}

/*
 * wait_for_slot
 *		libpq_connect until the node lets this session in.  A node that is
 *		full (or starting up) is asked again after a short, growing, jittered
 *		sleep on the latch, for at most colojoin.connection_wait_timeout, and
 *		only in the modes that wait; meanwhile the connection budget lets
 *		the other sessions of this coordinator see the wait, so that they
 *		close their idle connections to the node, and this one closes its
 *		own.  NULL with *err when it gives up or the failure is another.
 */
static PGconn *
wait_for_slot(CjConnection *c, ForeignServer *server,
			  const char *const *keywords, const char *const *values,
			  CjConnectMode mode, CjConnectError *err, long *waited_ms)
{
	PGconn	   *volatile conn = NULL;
	volatile bool registered = false;
	TimestampTz start = GetCurrentTimestamp();
	long		delay_ms = CJ_BUSY_FIRST_RETRY_MS;

	*waited_ms = 0;
	err->message = NULL;
	PG_TRY();
	{
		for (;;)
		{
			long		sleep_ms;
			long		secs;
			int			usecs;

			/* a long wait keeps only the last attempt's message */
			if (err->message != NULL)
			{
				pfree(err->message);
				err->message = NULL;
			}
			conn = libpq_connect(keywords, values, server->servername, err);
			if (conn != NULL || err->kind != CJ_CONNECT_BUSY)
				break;
			cj_node_note_busy(server->serverid);
			if (mode != CJ_CONNECT_WAIT && mode != CJ_CONNECT_PROBE)
				break;
			TimestampDifference(start, GetCurrentTimestamp(), &secs, &usecs);
			*waited_ms = secs * 1000 + usecs / 1000;
			/* jittered, so that sessions refused together do not ask together */
			sleep_ms = delay_ms / 2 +
				(long) (pg_prng_double(&pg_global_prng_state) * (delay_ms / 2));
			if (colojoin_connection_wait_timeout > 0)
			{
				if (*waited_ms >= colojoin_connection_wait_timeout)
					break;
				sleep_ms = Min(sleep_ms,
							   colojoin_connection_wait_timeout - *waited_ms);
			}
			if (!registered)
			{
				cj_budget_slot_wait(c->budget_token, true);
				registered = true;
			}
			cj_conn_close_idle();
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 Max(sleep_ms, 1), PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
			delay_ms = Min(delay_ms * 2, CJ_BUSY_MAX_RETRY_MS);
		}
	}
	PG_FINALLY();
	{
		if (registered)
			cj_budget_slot_wait(c->budget_token, false);
	}
	PG_END_TRY();
	if (conn != NULL && err->message != NULL)
	{
		pfree(err->message);
		err->message = NULL;
	}
	return conn;
}

/*
 * report_connect_failure
 *		ERROR for a connection the node did not let us open, by what it met:
 *		an unreachable node is a connection failure (failover and stale
 *		placements start from that code), a full one a timeout, a refusal
 *		the node's own error, which names the role: nothing about the node
 *		or its placements follows from it.
 */
static void
report_connect_failure(CjConnection *c, ForeignServer *server,
					   CjConnectError *err, long waited_ms)
{
	char	   *where = cj_server_address(server->serverid);

	if (err->kind == CJ_CONNECT_UNREACHABLE)
		ereport(ERROR,
				(errcode(ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION),
				 errmsg("could not connect to node \"%s\"", server->servername),
				 errdetail_internal("%s: %s", where, err->message)));
	if (err->kind == CJ_CONNECT_BUSY && strcmp(err->sqlstate, "57P03") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_CANNOT_CONNECT_NOW),
				 errmsg("node \"%s\" did not accept connections for %ld ms",
						server->servername, waited_ms),
				 errdetail_internal("%s: %s", where, err->message),
				 errhint("The node is starting up or shutting down; raise colojoin.connection_wait_timeout to wait longer.")));
	if (err->kind == CJ_CONNECT_BUSY)
		ereport(ERROR,
				(errcode(ERRCODE_TOO_MANY_CONNECTIONS),
				 errmsg("node \"%s\" had no free connection slot for %ld ms",
						server->servername, waited_ms),
				 errdetail_internal("%s: %s", where, err->message),
				 errhint("Raise the node's max_connections (or the CONNECTION LIMIT of the role or database there), lower colojoin.max_connections_per_node or colojoin.node_connection_budget so that this coordinator's sessions leave room for each other and for other clients, or raise colojoin.connection_wait_timeout.")));
	{
		char	   *role = GetUserNameFromId(c->key.userid, true);
		const char *s = err->sqlstate;

		ereport(ERROR,
				(errcode(MAKE_SQLSTATE(s[0], s[1], s[2], s[3], s[4])),
				 errmsg("node \"%s\" refused the connection of role \"%s\"",
						server->servername, role ? role : "?"),
				 errdetail_internal("%s: %s", where, err->message),
				 strncmp(s, "28", 2) == 0 ?
				 errhint("Check the user and password of the user mapping of role \"%s\" for server \"%s\", and the node's pg_hba.conf.",
						 role ? role : "?", server->servername) :
				 strcmp(s, "3D000") == 0 ?
				 errhint("Check the dbname option of server \"%s\".",
						 server->servername) : 0));
	}
}

/*
 * connect_node_raw
 *		Open a libpq connection for userid to the server, from the server's
 *		and user mapping's libpq options only, polling so that cancel and
 *		statement_timeout interrupt a slow connect.  Enforces the password
 *		rule for non-superusers and applies the session settings.  What a
 *		failure to connect does depends on mode (CjConnectMode); NULL, with
 *		the reason in *reason, only where mode says so.
 */
static PGconn *
connect_node_raw(CjConnection *c, ForeignServer *server, UserMapping *um,
				 CjConnectMode mode, char **reason)
{
	Oid			userid = c->key.userid;
	bool		check_password;
	const char **keywords;
	const char **values;
	int			n = 0;
	ListCell   *lc;
	PGconn	   *volatile conn;
	CjConnectError err;
	long		waited_ms;

	check_password = !superuser_arg(userid) && mapping_requires_password(um);

	keywords = palloc0(sizeof(char *) *
					   (list_length(server->options) + list_length(um->options) + 3));
	values = palloc0(sizeof(char *) *
					 (list_length(server->options) + list_length(um->options) + 3));
	foreach(lc, server->options)
	{
		DefElem    *d = (DefElem *) lfirst(lc);

		/* credentials come from the user mapping only */
		if (!is_libpq_keyword(d->defname) ||
			strcmp(d->defname, "user") == 0 ||
			strcmp(d->defname, "password") == 0)
			continue;
		keywords[n] = d->defname;
		values[n++] = defGetString(d);
	}
	foreach(lc, um->options)
	{
		DefElem    *d = (DefElem *) lfirst(lc);

		if (!is_libpq_keyword(d->defname))
			continue;
		keywords[n] = d->defname;
		values[n++] = defGetString(d);
	}

	if (check_password)
	{
		const char *password = cj_option_value(um->options, "password");

		if (password == NULL || password[0] == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED),
					 errmsg("password is required to connect to node \"%s\"",
							server->servername),
					 errdetail("Non-superusers must provide a password in the user mapping."),
					 errhint("Set a password in the user mapping for server \"%s\".",
							 server->servername)));
	}

	keywords[n] = "fallback_application_name";
	values[n++] = "colojoin";
	keywords[n] = "client_encoding";
	values[n++] = GetDatabaseEncodingName();
	keywords[n] = NULL;
	values[n] = NULL;

	conn = wait_for_slot(c, server, keywords, values, mode, &err, &waited_ms);
	pfree(keywords);
	pfree(values);
	if (conn == NULL)
	{
		if (mode == CJ_CONNECT_QUIET ||
			(mode == CJ_CONNECT_SKIP_BUSY && err.kind == CJ_CONNECT_BUSY) ||
			(mode == CJ_CONNECT_PROBE && err.kind == CJ_CONNECT_UNREACHABLE))
		{
			*reason = psprintf("could not connect to node \"%s\": %s: %s",
							   server->servername,
							   cj_server_address(server->serverid),
							   err.message);
			return NULL;
		}
		report_connect_failure(c, server, &err, waited_ms);
	}

	PG_TRY();
	{
		if (check_password && !PQconnectionUsedPassword(conn))
			ereport(ERROR,
					(errcode(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED),
					 errmsg("password is required to connect to node \"%s\"",
							server->servername),
					 errdetail("Node \"%s\" did not ask for the password, and non-superusers must authenticate to nodes with one.",
							   server->servername),
					 errhint("Make the node require password authentication for this user, or have a superuser set password_required 'false' in the user mapping.")));

		/* the entry owns the connection from here on */
		PQsetNoticeReceiver(conn, notice_receiver, c);
		c->conn = conn;
		{
			/* the session's settings, and which database this really is */
			PGresult   *res = exec_sql(c, CJ_SESSION_SETUP "; " CJ_NODE_IDENTITY_SQL,
									   "session setup", true);

			if (res != NULL && PQresultStatus(res) == PGRES_TUPLES_OK &&
				PQntuples(res) == 1 && PQnfields(res) == 2)
				cj_node_identity_learn(c->key.serverid, c->key.userid,
									   PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1));
			PQclear(res);
		}
	}
	PG_CATCH();
	{
		forget_wait_set(c);
		c->conn = NULL;
		c->in_flight = false;
		PQfinish(conn);
		PG_RE_THROW();
	}
	PG_END_TRY();

	return conn;
}

/*
 * connect_node
 *		connect_node_raw within the node's connection budget (conn_budget.c):
 *		the connection counts from before it is opened until
 *		close_connection, or until the attempt fails.  A caller that already
 *		took the share (an optional connection, get_connection) leaves it in
 *		budget_token.  May wait for the budget, and for a free slot on a
 *		full node; their timeouts are ERRORs (ERRCODE_TOO_MANY_CONNECTIONS),
 *		never ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION, which is
 *		kept for a node that could not be reached.  NULL (the share given
 *		back) where mode allows it; see CjConnectMode.
 */
static PGconn *
connect_node(CjConnection *c, ForeignServer *server, UserMapping *um,
			 CjConnectMode mode, char **reason)
{
	PGconn	   *conn;

	if (c->budget_token == CJ_BUDGET_NONE)
		c->budget_token = cj_budget_acquire(server->serverid,
											server->servername, false);
	PG_TRY();
	{
		conn = connect_node_raw(c, server, um, mode, reason);
	}
	PG_CATCH();
	{
		cj_budget_release(&c->budget_token);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (conn == NULL)
	{
		cj_budget_release(&c->budget_token);
		return NULL;
	}
	cj_budget_rekey(&c->budget_token, c->key.serverid);
	c->max_prepared = -1;

	/* transactions left in doubt there are resolved at the next use */
	if (!opening_raw)
		cj_twophase_resolve_once(conn, c->key.serverid, NameStr(c->node_name));
	return conn;
}

/* ----------------------------------------------------------------
 *		Remote transactions
 * ----------------------------------------------------------------
 */

static CjConnection *
lookup_entry(Oid serverid, Oid userid, int slot, bool create)
{
	CjConnKey	key;
	CjConnection *c;
	bool		found;

	if (cj_connections == NULL)
	{
		HASHCTL		ctl;

		if (!create)
			return NULL;
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(CjConnKey);
		ctl.entrysize = sizeof(CjConnection);
		ctl.hcxt = TopMemoryContext;
		cj_connections = hash_create("colojoin connections", 16, &ctl,
									 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	memset(&key, 0, sizeof(key));
	key.serverid = serverid;
	key.userid = userid;
	key.slot = slot;
	c = hash_search(cj_connections, &key, create ? HASH_ENTER : HASH_FIND, &found);
	if (c != NULL && !found)
	{
		/* dynahash entries never move, so callers may keep this pointer */
		memset(((char *) c) + sizeof(CjConnKey), 0,
			   sizeof(CjConnection) - sizeof(CjConnKey));
	}
	return c;
}

/* numbers the remote transactions this backend starts (cj_conn_xact_id) */
static uint64 xact_counter = 0;

/* forget everything about the remote transaction (local transaction ended) */
static void
reset_xact_state(CjConnection *c)
{
	c->xact_open = false;
	c->needs_restart = false;
	c->doomed = false;
	c->committed = false;
	c->undo_done = false;
	c->snapshot[0] = '\0';
	c->exported = false;
	c->write_min_level = 0;
	c->write_max_level = 0;
	c->undo = NIL;
	c->savepoints = NIL;
	c->cursor_open = false;
	c->owner = NULL;
	c->dml = false;
	c->used_temp = false;
	c->prepared = false;
	c->gid[0] = '\0';
}

static void
report_doomed(CjConnection *c)
{
	ereport(ERROR,
			(errcode(ERRCODE_TRANSACTION_ROLLBACK),
			 errmsg("the remote transaction on node \"%s\" lost changes this transaction made there",
					NameStr(c->node_name)),
			 errdetail("The node's transaction ended (its connection failed, or a subtransaction abort could not be limited to its own changes); committing would keep only the coordinator's half."),
			 errhint("Roll back the transaction and run it again.")));
}

/* how every remote transaction starts: at least as strict as REPEATABLE READ */
static const char *
begin_statement(void)
{
	return IsolationIsSerializable() ?
		"START TRANSACTION ISOLATION LEVEL SERIALIZABLE" :
		"START TRANSACTION ISOLATION LEVEL REPEATABLE READ";
}

/*
 * snapshot_holder
 *		Another open connection to c's node, as c's user, whose transaction's
 *		snapshot is known and usable, or NULL.  *unknown_pending (when given)
 *		is set if some open transaction there has not reported its snapshot
 *		yet: a transaction started now could then see different data.
 */
/*
 * snapshot_usable
 *		Whether c's snapshot name can still be imported: a snapshot exported
 *		by a remote transaction lives only while that transaction does, and
 *		ends with its first error (a cancelled FETCH, say), while those that
 *		imported it go on with it and may have handed the name on.  So the
 *		name is good only while its exporter's transaction is open and
 *		healthy.
 */
static bool
snapshot_usable(CjConnection *c)
{
	HASH_SEQ_STATUS scan;
	CjConnection *e;
	bool		alive = false;

	if (c->snapshot[0] == '\0')
		return false;
	hash_seq_init(&scan, cj_connections);
	while ((e = hash_seq_search(&scan)) != NULL)
	{
		if (!alive && e->exported && e->xact_open &&
			e->key.serverid == c->key.serverid &&
			e->key.userid == c->key.userid &&
			strcmp(e->snapshot, c->snapshot) == 0 &&
			!e->needs_restart && !e->doomed && !conn_is_bad(e) &&
			PQtransactionStatus(e->conn) != PQTRANS_INERROR)
			alive = true;
	}
	return alive;
}

static CjConnection *
snapshot_holder(CjConnection *c, bool *unknown_pending)
{
	HASH_SEQ_STATUS scan;
	CjConnection *other;
	CjConnection *found = NULL;

	if (unknown_pending)
		*unknown_pending = false;
	hash_seq_init(&scan, cj_connections);
	while ((other = hash_seq_search(&scan)) != NULL)
	{
		if (other == c || other->key.serverid != c->key.serverid ||
			other->key.userid != c->key.userid || !other->xact_open)
			continue;
		if (other->needs_restart || other->doomed || conn_is_bad(other))
			continue;
		if (!snapshot_usable(other))
		{
			/* it knows the data, but can hand it on only by exporting */
			if (unknown_pending)
				*unknown_pending = true;
		}
		else if (found == NULL)
			found = other;
	}
	return found;
}

/*
 * lazy_export
 *		The open, healthy connection to c's node (as c's user) whose
 *		transaction has not exported its snapshot yet, now made to export
 *		it; NULL when there is none.  A command its owner has in flight
 *		there (a cursor's next batch) is first read to its end by the owner.
 */
static CjConnection *
lazy_export(CjConnection *c)
{
	HASH_SEQ_STATUS scan;
	CjConnection *other;
	CjConnection *found = NULL;
	PGresult   *res;

	hash_seq_init(&scan, cj_connections);
	while ((other = hash_seq_search(&scan)) != NULL)
	{
		if (found == NULL && other != c &&
			other->key.serverid == c->key.serverid &&
			other->key.userid == c->key.userid && other->xact_open &&
			!other->needs_restart && !other->doomed && !conn_is_bad(other) &&
			PQtransactionStatus(other->conn) != PQTRANS_INERROR &&
			!snapshot_usable(other))
			found = other;
	}
	if (found == NULL)
		return NULL;
	if (found->dml)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot open a second connection to node \"%s\" after this transaction wrote there",
						NameStr(found->node_name)),
				 errdetail("A transaction that wrote on several nodes commits with PREPARE TRANSACTION, which a transaction that exported its snapshot cannot do."),
				 errhint("Commit the writes first, or run this query in a separate transaction.")));
	if (found->in_flight && found->owner != NULL && settle_hook != NULL)
		settle_hook(found->owner, found);
	if (found->in_flight)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("connection %d to node \"%s\" is busy with another query",
						found->key.slot, NameStr(found->node_name)),
				 errdetail("Another connection to the node needs its snapshot.")));

	res = exec_sql(found, "SELECT pg_catalog.pg_export_snapshot()",
				   "snapshot export", true);
	if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK ||
		PQntuples(res) != 1 ||
		strlen(PQgetvalue(res, 0, 0)) >= sizeof(found->snapshot))
	{
		PQclear(res);
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("node \"%s\" returned no exported snapshot",
						NameStr(found->node_name))));
	}
	strlcpy(found->snapshot, PQgetvalue(res, 0, 0), sizeof(found->snapshot));
	found->exported = true;
	PQclear(res);
	return found;
}

/*
 * begin_remote_xact
 *		START TRANSACTION on the node, at REPEATABLE READ or SERIALIZABLE,
 *		in the snapshot of the node's other open transactions of this local
 *		transaction (exported by one of them, lazily if need be), so that
 *		all connections to one node see the same data.  The first one
 *		exports its snapshot in the same round trip: the scans that start
 *		transactions this way use several connections.
 */
static void
begin_remote_xact(CjConnection *c)
{
	const char *begin = begin_statement();
	bool		pending;
	CjConnection *source;
	char	   *sql;

	c->snapshot[0] = '\0';
	source = snapshot_holder(c, &pending);
	if (source == NULL && pending)
		source = lazy_export(c);

	c->xact_open = true;		/* abort processing reconciles a half start */
	c->xact_id = ++xact_counter;
	cj_xact_touched = true;
	if (source == NULL)
	{
		PGresult   *res;

		sql = psprintf("%s; SELECT pg_catalog.pg_export_snapshot()", begin);
		res = exec_sql(c, sql, "transaction start", true);
		if (res != NULL && PQresultStatus(res) == PGRES_TUPLES_OK &&
			PQntuples(res) == 1 &&
			strlen(PQgetvalue(res, 0, 0)) < sizeof(c->snapshot))
		{
			strlcpy(c->snapshot, PQgetvalue(res, 0, 0), sizeof(c->snapshot));
			c->exported = true;
		}
		PQclear(res);
	}
	else
	{
		sql = psprintf("%s; SET TRANSACTION SNAPSHOT %s", begin,
					   quote_literal_cstr(source->snapshot));
		exec_sql(c, sql, "transaction start", false);
		/* it can hand the snapshot on while the source is busy */
		strlcpy(c->snapshot, source->snapshot, sizeof(c->snapshot));
	}
	pfree(sql);
}

/*
 * deferred_begin
 *		The SQL that starts c's remote transaction, to be sent by the caller
 *		in front of its first command: importing a snapshot already known
 *		here, or with none exported (a point lookup's only connection rarely
 *		has company; exporting costs the node a file write, so it happens
 *		when a second connection asks, see export_snapshot).  false when the
 *		start needs a round trip of its own (another open transaction there
 *		has not exported its snapshot yet).
 */
static bool
deferred_begin(CjConnection *c, char **begin_sql)
{
	const char *begin;
	bool		unknown_pending;
	CjConnection *source;

	if (begin_read_committed)
	{
		*begin_sql = pstrdup("START TRANSACTION ISOLATION LEVEL READ COMMITTED; ");
		c->snapshot[0] = '\0';
		c->xact_open = true;
		c->xact_id = ++xact_counter;
		cj_xact_touched = true;
		return true;
	}
	begin = begin_statement();
	source = snapshot_holder(c, &unknown_pending);
	if (unknown_pending)
		return false;
	c->snapshot[0] = '\0';
	if (source != NULL)
	{
		*begin_sql = psprintf("%s; SET TRANSACTION SNAPSHOT %s; ", begin,
							  quote_literal_cstr(source->snapshot));
		strlcpy(c->snapshot, source->snapshot, sizeof(c->snapshot));
	}
	else
		*begin_sql = psprintf("%s; ", begin);
	c->xact_open = true;
	c->xact_id = ++xact_counter;
	cj_xact_touched = true;
	return true;
}

/*
 * finish_pending_commit
 *		Read the answer to a read-only transaction's COMMIT sent without
 *		waiting; a connection that cannot give it is closed (nothing it did
 *		can be lost).
 */
static void
finish_pending_commit(CjConnection *c)
{
	c->commit_pending = false;
	if (c->conn == NULL)
		return;
	c->in_flight = true;
	if (!quiet_drain(c->conn,
					 TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												 CJ_CLEANUP_TIMEOUT_MS),
					 NULL))
		close_connection(c);
	c->in_flight = false;
}

/*
 * cj_get_connection
 *		See connection.h.  Reuses the cached connection when it is healthy
 *		and its server and mapping are unchanged; (re)opens it otherwise,
 *		which is only allowed while no remote transaction depends on it.
 */
CjConnection *
cj_get_connection(Oid serverid, Oid userid, int slot)
{
	return get_connection(serverid, userid, slot, NULL, false);
}

/*
 * cj_get_connection_optional
 *		See connection.h: NULL instead of opening a connection the node's
 *		connection budget has no room for now.
 */
CjConnection *
cj_get_connection_optional(Oid serverid, Oid userid, int slot)
{
	return get_connection(serverid, userid, slot, NULL, true);
}

/*
 * cj_get_connection_deferred
 *		See connection.h: the remote transaction's start is handed to the
 *		caller, to go in front of its first command, when it needs no round
 *		trip of its own.
 */
CjConnection *
cj_get_connection_deferred(Oid serverid, Oid userid, int slot,
						   char **begin_sql)
{
	*begin_sql = NULL;
	return get_connection(serverid, userid, slot, begin_sql, false);
}

static CjConnection *
get_connection(Oid serverid, Oid userid, int slot, char **begin_sql,
			   bool optional)
{
	CjConnection *c;
	int			level;
	bool		reused;
	volatile bool reconnect = false;

	Assert(OidIsValid(serverid));
	Assert(slot >= 0);
	c = lookup_entry(serverid, userid, slot, true);
	if (c->commit_pending)
		finish_pending_commit(c);

	/*
	 * A scan's batch in flight (another scan of the statement wants the
	 * write connection, the only one that sees the transaction's writes)
	 * is read to its end first, and waits as that scan's next batch.
	 */
	if (c->in_flight && c->owner != NULL && settle_hook != NULL)
		settle_hook(c->owner, c);
	if (c->in_flight)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("connection %d to node \"%s\" is busy with another query",
						slot, NameStr(c->node_name)),
				 errdetail("A query started earlier in this transaction, such as an open cursor's, still reads from it.")));
	if (c->doomed)
		report_doomed(c);

	/*
	 * An idle cached connection whose node restarted since its last use has
	 * the server's goodbye (or EOF) waiting in its socket: reading it now,
	 * without blocking, marks the connection bad so it is reopened below
	 * instead of failing the first command of the new transaction.
	 */
	if (c->conn != NULL && !c->xact_open && PQstatus(c->conn) == CONNECTION_OK)
	{
		/* the first read may return the goodbye, the second the EOF */
		if (PQconsumeInput(c->conn))
			(void) PQconsumeInput(c->conn);
	}

	/* retire a connection that changed or broke, unless a transaction needs it */
	if (c->conn != NULL && !c->xact_open &&
		(c->invalidated || PQstatus(c->conn) != CONNECTION_OK ||
		 PQtransactionStatus(c->conn) != PQTRANS_IDLE))
		close_connection(c);

	reused = (c->conn != NULL);
	if (c->conn == NULL)
	{
		ForeignServer *server = GetForeignServer(serverid);
		UserMapping *um;

		if (c->xact_open)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("lost connection to node \"%s\" during the transaction",
							NameStr(c->node_name)),
					 errhint("Roll back the transaction and run it again.")));
		namestrcpy(&c->node_name, server->servername);
		um = lookup_user_mapping(userid, server);
		c->server_hashvalue = GetSysCacheHashValue1(FOREIGNSERVEROID,
													ObjectIdGetDatum(serverid));
		c->invalidated = false;
		reset_xact_state(c);
		if (optional)
		{
			char	   *why;

			/*
			 * No room in the budget, or no free slot on the node (now, or
			 * moments ago): the caller does without.
			 */
			if (cj_node_busy_recently(serverid))
				return NULL;
			c->budget_token = cj_budget_acquire(serverid, server->servername,
												true);
			if (c->budget_token == CJ_BUDGET_REFUSED)
			{
				c->budget_token = CJ_BUDGET_NONE;
				return NULL;
			}
			if (connect_node(c, server, um, CJ_CONNECT_SKIP_BUSY, &why) == NULL)
				return NULL;
		}
		else
			connect_node(c, server, um, CJ_CONNECT_WAIT, NULL);
	}
	else if (PQstatus(c->conn) != CONNECTION_OK)
		report_connection_lost(c, NULL);

	cj_xact_touched = true;
	c->last_used = GetCurrentTimestamp();
	if (c->xact_open && c->needs_restart)
	{
		exec_sql(c, "ROLLBACK", "transaction restart", false);
		reset_xact_state(c);
	}
	if (!c->xact_open && begin_sql != NULL && deferred_begin(c, begin_sql))
		;						/* the caller sends it with its first command */
	else if (!c->xact_open)
	{
		if (reused)
		{
			/*
			 * A cached connection may have died with its node without our
			 * noticing: when starting its transaction fails because the
			 * connection is gone, open a new one once (nothing depended on
			 * the old one yet).
			 */
			MemoryContext ctx = CurrentMemoryContext;

			PG_TRY();
			{
				begin_remote_xact(c);
			}
			PG_CATCH();
			{
				if (c->conn == NULL || PQstatus(c->conn) != CONNECTION_BAD)
					PG_RE_THROW();
				MemoryContextSwitchTo(ctx);
				FlushErrorState();
				close_connection(c);
				reset_xact_state(c);
				reconnect = true;
			}
			PG_END_TRY();
			if (reconnect)
			{
				ForeignServer *server = GetForeignServer(serverid);

				connect_node(c, server, lookup_user_mapping(userid, server),
							 CJ_CONNECT_WAIT, NULL);
				begin_remote_xact(c);
			}
		}
		else
			begin_remote_xact(c);
	}

	/*
	 * First use inside a subtransaction of a connection that holds changes
	 * of enclosing levels: a remote savepoint lets an abort of this level
	 * undo only its own work.  Read-only connections never need one (an
	 * abort restarts their remote transaction instead), so queries inside
	 * PL/pgSQL exception blocks cost no extra round trip.
	 */
	level = GetCurrentTransactionNestLevel();
	if (level > 1 && c->write_min_level > 0 && c->write_min_level < level &&
		(c->savepoints == NIL || llast_int(c->savepoints) < level))
	{
		char	   *sql = psprintf("SAVEPOINT colojoin_sp_%d", level);
		MemoryContext old;

		exec_sql(c, sql, "subtransaction start", false);
		pfree(sql);
		old = MemoryContextSwitchTo(TopTransactionContext);
		c->savepoints = lappend_int(c->savepoints, level);
		MemoryContextSwitchTo(old);
	}
	return c;
}

/*
 * cj_connection_busy
 *		Whether that connection has a query in flight (a cursor's scan, say),
 *		so that a caller can pick another slot instead of getting an error
 *		from cj_get_connection.
 */
bool
cj_connection_busy(Oid serverid, Oid userid, int slot)
{
	CjConnection *c = lookup_entry(serverid, userid, slot, false);

	return c != NULL && (c->in_flight || c->owner != NULL);
}

/*
 * cj_first_free_slot
 *		See connection.h: the first slot >= from of (server, user) whose
 *		connection no query or scan is using.
 */
int
cj_first_free_slot(Oid serverid, Oid userid, int from)
{
	int			slot = from;

	while (cj_connection_busy(serverid, userid, slot))
		slot++;
	return slot;
}

/*
 * cj_conn_xact_id
 *		See connection.h: an identifier of the slot's remote transaction
 *		while it is open and healthy, else 0.
 */
uint64
cj_conn_xact_id(Oid serverid, Oid userid, int slot)
{
	CjConnection *c = lookup_entry(serverid, userid, slot, false);

	if (c == NULL || !c->xact_open || c->needs_restart || c->doomed ||
		conn_is_bad(c) || PQtransactionStatus(c->conn) == PQTRANS_INERROR)
		return 0;
	return c->xact_id;
}

PGconn *
cj_conn_pgconn(CjConnection *conn)
{
	return conn->conn;
}

/*
 * cj_conn_note_write
 *		Record that the caller made a change on the node that must commit
 *		with the local transaction (DDL, copied rows).  undo_sql, when given,
 *		removes that change again; it runs (outside any transaction) if this
 *		node committed but the local transaction failed to.  what describes
 *		the change for messages ("table public.t_p0").
 */
void
cj_conn_note_write(CjConnection *conn, const char *undo_sql, const char *what)
{
	int			level = GetCurrentTransactionNestLevel();

	if (conn->write_min_level == 0 || level < conn->write_min_level)
		conn->write_min_level = level;
	if (level > conn->write_max_level)
		conn->write_max_level = level;
	if (undo_sql != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
		CjUndo	   *u = palloc(sizeof(CjUndo));

		u->sql = pstrdup(undo_sql);
		u->what = pstrdup(what ? what : undo_sql);
		u->level = level;
		conn->undo = lcons(u, conn->undo);
		MemoryContextSwitchTo(old);
	}
}

/*
 * run_undo
 *		After this node committed and the local transaction did not, run the
 *		undo SQL of its changes.  Never throws; appends to buf what could
 *		not be undone.
 */
static void
run_undo(CjConnection *c, StringInfo failures)
{
	ListCell   *lc;

	if (c->undo_done)
		return;
	c->undo_done = true;
	foreach(lc, c->undo)
	{
		CjUndo	   *u = (CjUndo *) lfirst(lc);
		char	   *err = NULL;

		if (!quiet_exec(c, u->sql,
						TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													CJ_CLEANUP_TIMEOUT_MS * 2),
						&err))
		{
			appendStringInfo(failures, "%s%s on node \"%s\" (%s)",
							 failures->len > 0 ? "; " : "",
							 u->what, NameStr(c->node_name), err);
			if (conn_is_bad(c) || c->in_flight)
				close_connection(c);
		}
	}
}

/* list_sort comparator: by node name, then slot, for a predictable order */
static int
writer_cmp(const ListCell *a, const ListCell *b)
{
	CjConnection *ca = (CjConnection *) lfirst(a);
	CjConnection *cb = (CjConnection *) lfirst(b);
	int			r = strcmp(NameStr(ca->node_name), NameStr(cb->node_name));

	if (r != 0)
		return r;
	return (ca->key.slot > cb->key.slot) - (ca->key.slot < cb->key.slot);
}

/*
 * check_prepared_allowed
 *		ERROR unless c's node can prepare transactions (its
 *		max_prepared_transactions is above 0); asked once per connection.
 */
static void
check_prepared_allowed(CjConnection *c)
{
	if (c->max_prepared < 0)
	{
		PGresult   *res = exec_sql(c, "SELECT pg_catalog.current_setting('max_prepared_transactions')",
								   "two-phase commit check", true);

		c->max_prepared = (res && PQntuples(res) == 1) ? atoi(PQgetvalue(res, 0, 0)) : 0;
		PQclear(res);
	}
	if (c->max_prepared <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("node \"%s\" cannot take part in a transaction that writes on several nodes",
						NameStr(c->node_name)),
				 errdetail("Its max_prepared_transactions is 0; colojoin commits such transactions with two-phase commit."),
				 errhint("Set max_prepared_transactions on the node (for example to max_connections) and restart it, or write to one node per transaction.")));
}

/*
 * prepare_writers
 *		Phase one of two-phase commit, in pre-commit: record the commit on
 *		the coordinator (in the local transaction), then PREPARE
 *		TRANSACTION on every node at once.  Any failure is an ERROR before
 *		anything committed: the abort rolls back what was prepared.
 */
static void
prepare_writers(List *writers)
{
	List	   *gids = NIL;
	List	   *servers = NIL;
	List	   *sqls = NIL;
	ListCell   *lc;
	ListCell   *ls;
	ErrorData  *volatile first = NULL;
	CjConnection *volatile first_conn = NULL;
	MemoryContext ctx = CurrentMemoryContext;

	foreach(lc, writers)
	{
		CjConnection *c = (CjConnection *) lfirst(lc);

		if (c->exported || c->used_temp)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot commit atomically the changes on node \"%s\"",
							NameStr(c->node_name)),
					 errdetail("Its remote transaction %s, and such a transaction cannot be prepared for two-phase commit.",
							   c->exported ? "exported its snapshot to other connections" :
							   "held rows moved for a join in temporary tables"),
					 errhint("Run the joins that move rows in a separate transaction from writes on several nodes.")));
		check_prepared_allowed(c);
		strlcpy(c->gid, cj_twophase_gid(c->key.serverid, c->key.userid,
										c->key.slot), sizeof(c->gid));
		gids = lappend(gids, c->gid);
		servers = lappend_oid(servers, c->key.serverid);
	}
	cj_twophase_hold();
	cj_twophase_log(gids, servers);

	foreach(lc, writers)
	{
		CjConnection *c = (CjConnection *) lfirst(lc);
		char	   *sql = psprintf("PREPARE TRANSACTION '%s'", c->gid);

		sqls = lappend(sqls, sql);
		send_sql(c, sql, "two-phase commit");
	}
	forboth(lc, writers, ls, sqls)
	{
		CjConnection *c = (CjConnection *) lfirst(lc);

		PG_TRY();
		{
			collect_sql(c, (char *) lfirst(ls), "two-phase commit", false);
			c->prepared = true;
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(ctx);
			if (first == NULL)
			{
				first = CopyErrorData();
				first_conn = c;
			}
			FlushErrorState();
			c->in_flight = false;
		}
		PG_END_TRY();
	}
	if (first == NULL)
		cj_twophase_debug_pause();
	if (first != NULL)
		ereport(ERROR,
				(errcode(first->sqlerrcode),
				 errmsg("could not prepare the remote transaction on node \"%s\": %s",
						NameStr(first_conn->node_name), first->message),
				 first->detail ? errdetail_internal("%s", first->detail) : 0,
				 errhint("Nothing was committed on any node; the transaction is rolled back everywhere.")));
}

/*
 * finish_prepared
 *		Phase two, after the local commit (commit true) or abort: COMMIT or
 *		ROLLBACK PREPARED every transaction prepared in this one.  Never
 *		throws: a node that cannot be told keeps its prepared transaction,
 *		which recovery resolves from the commit record.
 */
static void
finish_prepared(CjConnection *c, bool commit)
{
	char	   *sql;
	char	   *err = NULL;

	if (c->gid[0] == '\0')
		return;
	sql = psprintf("%s PREPARED '%s'", commit ? "COMMIT" : "ROLLBACK", c->gid);
	if (c->in_flight)
		settle_connection(c, false);
	if (c->conn != NULL &&
		quiet_exec(c, sql, TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   CJ_CLEANUP_TIMEOUT_MS),
				   &err))
	{
		if (commit)
			cj_twophase_forget(c->gid);
	}
	else if (commit || c->prepared)
	{
		/* a rolled back PREPARE leaves nothing behind: no need to say so */
		if (err == NULL || strstr(err, "does not exist") == NULL)
			ereport(WARNING,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not %s prepared transaction %s on node \"%s\"",
							commit ? "commit" : "roll back", c->gid,
							NameStr(c->node_name)),
					 errdetail_internal("%s", err ? err : "connection lost"),
					 errhint("It is resolved at the next connection to the node, or by colojoin.recover_prepared_transactions().")));
		cj_twophase_recheck(c->key.serverid);
		if (c->conn != NULL && (conn_is_bad(c) || c->in_flight))
			close_connection(c);
	}
	pfree(sql);
	c->prepared = false;
	c->gid[0] = '\0';
}

/*
 * pre_commit
 *		Commit every remote transaction before the local one commits.  Read-
 *		only ones go first, all at once; those with durable changes follow
 *		one by one, so a failure knows exactly which nodes already committed
 *		and undoes their changes before reporting.
 */
static void
pre_commit(void)
{
	HASH_SEQ_STATUS scan;
	CjConnection *c;
	CjConnection *first_failed = NULL;
	PGresult   *volatile failed_res = NULL;
	List	   *readers = NIL;
	List	   *writers = NIL;
	ListCell   *lc;

	/* settle forgotten queries, check that everything can commit */
	hash_seq_init(&scan, cj_connections);
	while ((c = hash_seq_search(&scan)) != NULL)
	{
		if (!c->xact_open && !c->in_flight)
			continue;
		if (c->in_flight)
			settle_connection(c, false);
		if (!c->xact_open)
			continue;
		if (c->doomed)
		{
			hash_seq_term(&scan);
			report_doomed(c);
		}
		if (conn_is_bad(c))
		{
			if (c->write_max_level == 0)
			{
				/* nothing to keep there: forget that transaction */
				close_connection(c);
				c->xact_open = false;
				continue;
			}
			hash_seq_term(&scan);
			report_connection_lost(c, "commit");
		}
		if (c->write_max_level > 0)
			writers = lappend(writers, c);
		else
			readers = lappend(readers, c);
	}

	/*
	 * Read-only transactions: send every COMMIT, then collect the answers.
	 * Below SERIALIZABLE such a COMMIT cannot fail in a way that matters,
	 * so it is not waited for: its answer is read at the connection's next
	 * use, saving a round trip per statement.
	 */
	foreach(lc, readers)
	{
		c = (CjConnection *) lfirst(lc);
		if (!PQsendQuery(c->conn, c->needs_restart ? "ROLLBACK" : "COMMIT"))
		{
			if (first_failed == NULL)
				first_failed = c;
			continue;
		}
		if (!IsolationIsSerializable())
		{
			c->commit_pending = true;
			c->committed = true;
			continue;
		}
		begin_flight(c);
	}
	foreach(lc, readers)
	{
		PGresult   *res;

		c = (CjConnection *) lfirst(lc);
		if (!c->in_flight)
			continue;
		PG_TRY();
		{
			while ((res = get_result(c, "commit")) != NULL)
			{
				if (PQresultStatus(res) != PGRES_COMMAND_OK &&
					failed_res == NULL)
				{
					failed_res = res;
					first_failed = c;
				}
				else
					PQclear(res);
			}
		}
		PG_CATCH();
		{
			PQclear(failed_res);
			PG_RE_THROW();
		}
		PG_END_TRY();
		c->in_flight = false;
		c->committed = true;
	}
	if (first_failed != NULL)
		report_error(ERROR, first_failed, failed_res, true,
					 "commit of the remote transaction", "COMMIT");

	/* transactions with changes: one by one, in node name order */
	list_sort(writers, writer_cmp);
	if (list_length(writers) > 1)
	{
		foreach(lc, writers)
		{
			if (((CjConnection *) lfirst(lc))->dml)
			{
				prepare_writers(writers);
				return;
			}
		}
	}
	foreach(lc, writers)
	{
		MemoryContext ccxt = CurrentMemoryContext;

		c = (CjConnection *) lfirst(lc);
		PG_TRY();
		{
			exec_sql(c, "COMMIT", "commit of the remote transaction", false);
		}
		PG_CATCH();
		{
			ErrorData  *edata;
			StringInfoData undone;
			StringInfoData failures;
			ListCell   *lc2;
			bool		unknown = conn_is_bad(c) || c->in_flight;

			MemoryContextSwitchTo(ccxt);
			edata = CopyErrorData();
			FlushErrorState();

			initStringInfo(&undone);
			initStringInfo(&failures);
			foreach(lc2, writers)
			{
				CjConnection *w = (CjConnection *) lfirst(lc2);
				ListCell   *lc3;

				if (w == c)
					break;
				run_undo(w, &failures);
				foreach(lc3, w->undo)
					appendStringInfo(&undone, "%s%s on node \"%s\"",
									 undone.len > 0 ? ", " : "",
									 ((CjUndo *) lfirst(lc3))->what,
									 NameStr(w->node_name));
			}
			if (unknown)
			{
				foreach(lc2, c->undo)
					appendStringInfo(&failures, "%s%s on node \"%s\" (the outcome of its commit is unknown)",
									 failures.len > 0 ? "; " : "",
									 ((CjUndo *) lfirst(lc2))->what,
									 NameStr(c->node_name));
			}
			ereport(ERROR,
					(errcode(edata->sqlerrcode),
					 errmsg("could not commit the remote transaction on node \"%s\": %s",
							NameStr(c->node_name), edata->message),
					 failures.len > 0 ?
					 errdetail("These remote changes could not be removed: %s.",
							   failures.data) :
					 undone.len > 0 ?
					 errdetail("Changes already committed on other nodes were removed: %s.",
							   undone.data) : 0));
		}
		PG_END_TRY();
		c->committed = true;
	}
}

/*
 * abort_all
 *		Local transaction abort: cancel what is in flight (all cancels first,
 *		so the nodes work on them at once), drain, roll back, close what
 *		cannot be brought back to idle.  Changes of nodes that committed
 *		before the local commit failed are undone.  Never throws.
 */
static void
abort_all(void)
{
	HASH_SEQ_STATUS scan;
	CjConnection *c;
	StringInfoData failures;

	initStringInfo(&failures);
	hash_seq_init(&scan, cj_connections);
	while ((c = hash_seq_search(&scan)) != NULL)
	{
		if (c->commit_pending && !proc_exit_inprogress)
			finish_pending_commit(c);
		if (c->in_flight && !conn_is_bad(c))
			quiet_cancel(c);
	}

	/*
	 * A backend on its way out (pg_terminate_backend, a FATAL error) does not
	 * wait for nodes: the cancel is sent, and closing the connection makes
	 * each node roll its transaction back by itself.
	 */
	if (proc_exit_inprogress)
	{
		hash_seq_init(&scan, cj_connections);
		while ((c = hash_seq_search(&scan)) != NULL)
		{
			if (c->conn != NULL && (c->in_flight || c->xact_open))
				close_connection(c);
			c->in_flight = false;
			reset_xact_state(c);
		}
		pfree(failures.data);
		return;
	}
	hash_seq_init(&scan, cj_connections);
	while ((c = hash_seq_search(&scan)) != NULL)
	{
		if (c->in_flight)
			settle_connection(c, true);
		if (c->gid[0] != '\0')
			finish_prepared(c, false);
		else if (c->committed)
			run_undo(c, &failures);
		else if (c->xact_open && c->conn != NULL)
		{
			if (conn_is_bad(c) ||
				(PQtransactionStatus(c->conn) != PQTRANS_IDLE &&
				 !quiet_exec(c, "ROLLBACK",
							 TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														 CJ_CLEANUP_TIMEOUT_MS),
							 NULL)))
				close_connection(c);
		}
		if (c->conn != NULL &&
			(PQstatus(c->conn) != CONNECTION_OK ||
			 PQtransactionStatus(c->conn) != PQTRANS_IDLE || c->in_flight))
			close_connection(c);
		if (c->invalidated)
			close_connection(c);
		reset_xact_state(c);
	}
	cj_twophase_release();
	if (failures.len > 0)
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("some remote changes of the failed transaction could not be removed"),
				 errdetail("Left behind: %s.", failures.data)));
	pfree(failures.data);
}

/*
 * cj_conn_close_idle
 *		See connection.h: close the cached connections that no transaction
 *		uses now and that the connection budget wants back
 *		(cj_budget_should_close).  Never throws.
 */
void
cj_conn_close_idle(void)
{
	HASH_SEQ_STATUS scan;
	CjConnection *c;
	TimestampTz now;

	if (cj_connections == NULL || !cj_budget_holds_any())
		return;
	now = GetCurrentTimestamp();
	hash_seq_init(&scan, cj_connections);
	while ((c = hash_seq_search(&scan)) != NULL)
	{
		if (c->conn == NULL || c->xact_open || c->in_flight ||
			c->owner != NULL)
			continue;
		if (!cj_budget_should_close(c->budget_token, c->key.slot,
									c->last_used, now))
			continue;
		/* a node answering a COMMIT to a closed socket logs a FATAL */
		if (c->commit_pending)
			finish_pending_commit(c);
		close_connection(c);
	}
}

static void
cj_xact_callback(XactEvent event, void *arg)
{
	HASH_SEQ_STATUS scan;
	CjConnection *c;

	if (cj_connections == NULL)
		return;
	if (!cj_xact_touched && !cj_pending_close)
	{
		/* idle connections of earlier transactions may be wanted elsewhere */
		if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT)
			cj_conn_close_idle();
		return;
	}

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			pre_commit();
			break;
		case XACT_EVENT_PRE_PREPARE:
			hash_seq_init(&scan, cj_connections);
			while ((c = hash_seq_search(&scan)) != NULL)
			{
				if (c->xact_open)
				{
					hash_seq_term(&scan);
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("cannot PREPARE a transaction that has used colojoin connections to nodes")));
				}
			}
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			hash_seq_init(&scan, cj_connections);
			while ((c = hash_seq_search(&scan)) != NULL)
				finish_prepared(c, true);
			cj_twophase_release();
			if (cj_write_slots != NIL)
				ResetPlanCache();
			hash_seq_init(&scan, cj_connections);
			while ((c = hash_seq_search(&scan)) != NULL)
			{
				/*
				 * Everything committed in pre-commit (a read-only COMMIT may
				 * still be on its way back); anything else is unknown.
				 */
				if (c->conn != NULL &&
					(c->in_flight || c->invalidated ||
					 PQstatus(c->conn) != CONNECTION_OK ||
					 (!c->commit_pending &&
					  PQtransactionStatus(c->conn) != PQTRANS_IDLE)))
					close_connection(c);
				reset_xact_state(c);
			}
			cj_xact_touched = false;
			cj_pending_close = false;
			cj_write_slots = NIL;
			cj_deadlock_forget();
			cj_conn_close_idle();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			cj_deadlock_forget();
			abort_all();
			if (cj_write_slots != NIL)
				ResetPlanCache();
			cj_write_slots = NIL;
			cj_xact_touched = false;
			cj_pending_close = false;
			cj_conn_close_idle();
			break;
	}
}

/*
 * mark_restart
 *		The remote transaction lost (or must lose) the work of nest levels >=
 *		level and no savepoint can bring it back to the start of that level:
 *		restart it at the next use, or doom the local transaction when it
 *		also held changes of an enclosing level.
 */
static void
mark_restart(CjConnection *c, int level)
{
	if (c->write_min_level > 0 && c->write_min_level < level)
		c->doomed = true;
	else
	{
		c->needs_restart = true;
		c->write_min_level = 0;
		c->write_max_level = 0;
		c->undo = NIL;
		c->savepoints = NIL;
	}
}

/* forget savepoints and undo entries of nest levels >= level */
static void
forget_levels_from(CjConnection *c, int level)
{
	ListCell   *lc;

	while (c->savepoints != NIL && llast_int(c->savepoints) >= level)
		c->savepoints = list_delete_last(c->savepoints);
	foreach(lc, c->undo)
	{
		if (((CjUndo *) lfirst(lc))->level >= level)
			c->undo = foreach_delete_current(c->undo, lc);
	}
	if (c->write_max_level >= level)
		c->write_max_level = level - 1;
	if (c->write_min_level >= level)
		c->write_min_level = 0;
}

/*
 * subxact_commit
 *		Hand the committed level's queries, changes and savepoint to its
 *		parent.  A savepoint of the child becomes the parent's unless the
 *		parent has its own (which marks an earlier point of the parent).
 */
static void
subxact_commit(int level)
{
	HASH_SEQ_STATUS scan;
	CjConnection *c;
	ListCell   *lc;

	hash_seq_init(&scan, cj_connections);
	while ((c = hash_seq_search(&scan)) != NULL)
	{
		if (c->in_flight && c->flight_level >= level)
			c->flight_level = level - 1;
		if (c->write_max_level >= level)
			c->write_max_level = level - 1;
		if (c->write_min_level >= level)
			c->write_min_level = level - 1;
		foreach(lc, c->undo)
		{
			CjUndo	   *u = (CjUndo *) lfirst(lc);

			if (u->level >= level)
				u->level = level - 1;
		}
		if (c->savepoints != NIL && llast_int(c->savepoints) >= level)
		{
			int			n = list_length(c->savepoints);

			if (n >= 2 && list_nth_int(c->savepoints, n - 2) == level - 1)
				c->savepoints = list_delete_last(c->savepoints);
			else
				llast_int(c->savepoints) = level - 1;
		}
	}
}

/*
 * subxact_abort_one
 *		Bring one connection's remote transaction back to the state it had
 *		when subtransaction level began.  Returns true when a remote
 *		transaction that exported its snapshot was lost or must restart, so
 *		that the connections that imported it restart too.  Never throws.
 */
static bool
subxact_abort_one(CjConnection *c, int level)
{
	bool		outer_writes = c->write_min_level > 0 && c->write_min_level < level;
	bool		exporter = c->exported; /* before a reset forgets it */
	PGTransactionStatusType status;

	if (!c->xact_open)
	{
		forget_levels_from(c, level);
		return false;
	}
	if (conn_is_bad(c))
	{
		close_connection(c);
		if (outer_writes)
			c->doomed = true;
		else
		{
			reset_xact_state(c);
			return exporter;
		}
		return false;
	}
	if (c->in_flight)
		return false;			/* an enclosing level's query: not ours */

	status = PQtransactionStatus(c->conn);
	if (status == PQTRANS_IDLE)
	{
		/* the START TRANSACTION itself was interrupted */
		if (outer_writes)
			c->doomed = true;
		else
			reset_xact_state(c);
		return exporter;
	}
	if (status != PQTRANS_INTRANS && status != PQTRANS_INERROR)
	{
		close_connection(c);
		if (outer_writes)
			c->doomed = true;
		else
			reset_xact_state(c);
		return exporter;
	}

	/* healthy and nothing of this level to undo: the aborted work was reads */
	if (status == PQTRANS_INTRANS && c->write_max_level < level)
	{
		forget_levels_from(c, level);
		return false;
	}

	if (!outer_writes)
	{
		mark_restart(c, level);
		return exporter;
	}

	/* keep the enclosing levels' changes: roll back to this level's savepoint */
	{
		ListCell   *lc;
		int			sp = 0;

		foreach(lc, c->savepoints)
		{
			if (lfirst_int(lc) >= level)
			{
				sp = lfirst_int(lc);
				break;
			}
		}
		if (sp > 0)
		{
			char		sql[128];

			snprintf(sql, sizeof(sql),
					 "ROLLBACK TO SAVEPOINT colojoin_sp_%d; RELEASE SAVEPOINT colojoin_sp_%d",
					 sp, sp);
			if (quiet_exec(c, sql,
						   TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   CJ_CLEANUP_TIMEOUT_MS),
						   NULL))
			{
				forget_levels_from(c, level);
				return false;
			}
			close_connection(c);
		}
		c->doomed = true;
	}
	return false;
}

/*
 * cj_subxact_callback
 *		On subtransaction commit, hand queries and changes to the parent.
 *		On abort, cancel and drain the queries the subtransaction started
 *		(all cancels first, so the nodes work on them at once), then undo the
 *		subtransaction's remote work: a remote savepoint where the connection
 *		holds changes of enclosing levels, else a restart of the remote
 *		transaction at its next use.  Connections that imported a restarted
 *		one's snapshot restart with it.
 */
static void
cj_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					SubTransactionId parentSubid, void *arg)
{
	HASH_SEQ_STATUS scan;
	CjConnection *c;
	int			level;
	List	   *restarted = NIL;
	ListCell   *lc;

	if (!cj_xact_touched || cj_connections == NULL)
		return;
	level = GetCurrentTransactionNestLevel();
	if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		subxact_commit(level);
		return;
	}
	if (event != SUBXACT_EVENT_ABORT_SUB)
		return;

	hash_seq_init(&scan, cj_connections);
	while ((c = hash_seq_search(&scan)) != NULL)
	{
		if (c->in_flight && c->flight_level >= level && !conn_is_bad(c))
			quiet_cancel(c);
	}
	hash_seq_init(&scan, cj_connections);
	while ((c = hash_seq_search(&scan)) != NULL)
	{
		if (c->in_flight && c->flight_level >= level)
			settle_connection(c, true);
		if (subxact_abort_one(c, level))
			restarted = lappend(restarted, c);
	}

	foreach(lc, restarted)
	{
		CjConnection *first = (CjConnection *) lfirst(lc);

		hash_seq_init(&scan, cj_connections);
		while ((c = hash_seq_search(&scan)) != NULL)
		{
			if (c == first || c->key.serverid != first->key.serverid ||
				c->key.userid != first->key.userid || !c->xact_open ||
				c->needs_restart || c->doomed || c->in_flight)
				continue;
			mark_restart(c, level);
		}
	}
	list_free(restarted);
}

/* ----------------------------------------------------------------
 *		Invalidation
 * ----------------------------------------------------------------
 */

static void
cj_inval_server(Datum arg, int cacheid, uint32 hashvalue)
{
	HASH_SEQ_STATUS scan;
	CjConnection *c;

	if (cj_connections == NULL)
		return;
	hash_seq_init(&scan, cj_connections);
	while ((c = hash_seq_search(&scan)) != NULL)
	{
		if (hashvalue == 0 || c->server_hashvalue == hashvalue)
		{
			c->invalidated = true;
			cj_pending_close |= (c->conn != NULL);
			/* its address may name another database now */
			cj_node_identity_forget(c->key.serverid);
		}
	}
}

/*
 * Any user mapping change retires every connection: a new mapping for a
 * user who used PUBLIC's has a hash value no entry knows, and mapping
 * changes are rare enough that precision buys nothing.
 */
static void
cj_inval_mapping(Datum arg, int cacheid, uint32 hashvalue)
{
	HASH_SEQ_STATUS scan;
	CjConnection *c;

	if (cj_connections == NULL)
		return;
	hash_seq_init(&scan, cj_connections);
	while ((c = hash_seq_search(&scan)) != NULL)
	{
		c->invalidated = true;
		cj_pending_close |= (c->conn != NULL);
	}
}

/* ----------------------------------------------------------------
 *		COPY between nodes
 * ----------------------------------------------------------------
 */

/* wait for a COPY start result of the query just sent */
static void
expect_copy_start(CjConnection *c, ExecStatusType want, const char *sql,
				  const char *context)
{
	PGresult   *res = get_result(c, context);

	if (res == NULL || PQresultStatus(res) != want)
	{
		PGresult   *more;

		if (res == NULL || PQresultStatus(res) == PGRES_FATAL_ERROR)
		{
			/* drain to idle so the error leaves the connection usable */
			while ((more = get_result(c, context)) != NULL)
				PQclear(more);
			c->in_flight = false;
			report_error(ERROR, c, res, true, context, sql);
		}
		PQclear(res);
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("node \"%s\" did not start a COPY", NameStr(c->node_name)),
				 errcontext("remote SQL command: %s", sql)));
	}
	PQclear(res);
}

/* collect the final results of a finished COPY; ERROR on a failure */
/* rows the last COPY into a node took, from its command tag (COPY n) */
static uint64 last_copy_rows = 0;

uint64
cj_copy_last_rows(void)
{
	return last_copy_rows;
}

static void
finish_copy(CjConnection *c, const char *sql, const char *context)
{
	PGresult   *res;
	PGresult   *volatile failed = NULL;

	last_copy_rows = 0;
	PG_TRY();
	{
		while ((res = get_result(c, context)) != NULL)
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
		report_error(ERROR, c, failed, true, context, sql);
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

	if (conn_is_bad(src))
		report_connection_lost(src, context);
	if (conn_is_bad(dst))
		report_connection_lost(dst, context);

	if (!PQsendQuery(src->conn, copy_out_sql))
		report_error(ERROR, src, NULL, false, context, copy_out_sql);
	begin_flight(src);
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
					report_connection_lost(dst, context);
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
							settle_connection(src, false);
							report_error(ERROR, dst, res, true, context,
										 copy_in_sql);
						}
						PQclear(res);
						report_connection_lost(dst, context);
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
					settle_connection(dst, true);
					if (res != NULL)
					{
						settle_connection(src, true);
						report_error(ERROR, src, res, true, context,
									 copy_out_sql);
					}
					report_connection_lost(src, context);
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
						report_connection_lost(dst, context);
				}
				else if (ev.pos == pos_src &&
						 (ev.events & WL_SOCKET_READABLE))
				{
					if (!PQconsumeInput(src->conn))
						report_connection_lost(src, context);
				}
			}
		}
		FreeWaitEventSet(wes);
		wes = NULL;

		/* the source's COPY is complete: check its status */
		finish_copy(src, copy_out_sql, context);

		/* end the destination's COPY */
		while ((r = PQputCopyEnd(dst->conn, NULL)) == 0)
			wait_for_socket(dst, WL_SOCKET_WRITEABLE, context);
		if (r < 0)
			report_connection_lost(dst, context);
		while ((r = PQflush(dst->conn)) == 1)
		{
			int			rc = wait_for_socket(dst, WL_SOCKET_WRITEABLE |
											 WL_SOCKET_READABLE, context);

			if ((rc & WL_SOCKET_READABLE) && !PQconsumeInput(dst->conn))
				report_connection_lost(dst, context);
		}
		if (r < 0 || PQsetnonblocking(dst->conn, 0) != 0)
			report_connection_lost(dst, context);
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

/* ----------------------------------------------------------------
 *		Failover support
 * ----------------------------------------------------------------
 */

/*
 * try_connect
 *		Make sure the slot has a connection to its node, opening one if need
 *		be, without starting a remote transaction: true when it has one,
 *		false with the reason in *reason when mode (CJ_CONNECT_PROBE or
 *		CJ_CONNECT_QUIET) lets a failure to connect be an answer.  Any other
 *		error (a missing user mapping, a cancel) is thrown as usual.
 */
static bool
try_connect(Oid serverid, Oid userid, int slot, CjConnectMode mode,
			char **reason)
{
	CjConnection *c = lookup_entry(serverid, userid, slot, true);
	ForeignServer *server;
	UserMapping *um;

	*reason = NULL;
	if (c->conn != NULL && PQstatus(c->conn) == CONNECTION_OK)
		return true;
	if (c->xact_open)
	{
		/* it died earlier in this transaction */
		*reason = pstrdup("the connection was lost earlier in this transaction");
		return false;
	}
	if (c->conn != NULL)
		close_connection(c);
	server = GetForeignServer(serverid);
	um = lookup_user_mapping(userid, server);
	namestrcpy(&c->node_name, server->servername);
	c->server_hashvalue = GetSysCacheHashValue1(FOREIGNSERVEROID,
												ObjectIdGetDatum(serverid));
	c->invalidated = false;
	reset_xact_state(c);
	return connect_node(c, server, um, mode, reason) != NULL;
}

/*
 * cj_conn_try_connect
 *		See connection.h: false (with why) only for a node that cannot be
 *		reached; a full node is waited for, and a node that refuses the
 *		role's login is that role's error, not the node's failure.
 */
bool
cj_conn_try_connect(Oid serverid, Oid userid, int slot, char **reason)
{
	return try_connect(serverid, userid, slot, CJ_CONNECT_PROBE, reason);
}

/*
 * cj_conn_is_lost
 *		See connection.h: the node went away under conn.
 */
bool
cj_conn_is_lost(CjConnection *conn)
{
	return conn_is_bad(conn);
}

/*
 * cj_conn_abandon
 *		See connection.h: conn's node went away while a scan read from it;
 *		the scan moves on without it.  Its remote transaction only read, so
 *		there is nothing to keep: commit forgets it (pre_commit), and this
 *		transaction does not use the slot again.
 */
void
cj_conn_abandon(CjConnection *conn)
{
	conn->in_flight = false;
	conn->owner = NULL;
	conn->cursor_open = false;
}

/* ----------------------------------------------------------------
 *		COPY into a node from the coordinator's own rows
 * ----------------------------------------------------------------
 */

/*
 * cj_copy_in_start
 *		See connection.h: dst runs copy_in_sql and waits for data.
 */
void
cj_copy_in_start(CjConnection *dst, const char *copy_in_sql, const char *context)
{
	if (conn_is_bad(dst))
		report_connection_lost(dst, context);
	if (!PQsendQuery(dst->conn, copy_in_sql))
		report_error(ERROR, dst, NULL, false, context, copy_in_sql);
	begin_flight(dst);
	expect_copy_start(dst, PGRES_COPY_IN, copy_in_sql, context);
	if (PQsetnonblocking(dst->conn, 1) != 0)
		report_connection_lost(dst, context);
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
	if (conn_is_bad(src))
		report_connection_lost(src, context);
	if (!PQsendQuery(src->conn, copy_out_sql))
		report_error(ERROR, src, NULL, false, context, copy_out_sql);
	begin_flight(src);
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
			settle_connection(src, true);
			report_error(ERROR, src, res, true, context, copy_out_sql);
		}
		report_connection_lost(src, context);
	}
	finish_copy(src, copy_out_sql, context);
	return -1;
}

/* take in what arrived on conn's socket; a broken connection is an ERROR */
void
cj_conn_consume(CjConnection *conn, const char *context)
{
	if (!PQconsumeInput(conn->conn))
		report_connection_lost(conn, context);
}

/* push what libpq holds for dst to the node, waiting interruptibly */
static void
copy_in_flush(CjConnection *dst, const char *context)
{
	int			r;

	while ((r = PQflush(dst->conn)) == 1)
	{
		int			rc = wait_for_socket(dst, WL_SOCKET_WRITEABLE |
										 WL_SOCKET_READABLE, context);

		if ((rc & WL_SOCKET_READABLE) && !PQconsumeInput(dst->conn))
			report_connection_lost(dst, context);
	}
	if (r < 0)
		report_connection_lost(dst, context);
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
		wait_for_socket(dst, WL_SOCKET_WRITEABLE, context);
	if (r < 0)
	{
		PGresult   *res;

		PQsetnonblocking(dst->conn, 0);
		res = PQgetResult(dst->conn);
		if (res != NULL && PQresultStatus(res) == PGRES_FATAL_ERROR)
			report_error(ERROR, dst, res, true, context, NULL);
		PQclear(res);
		report_connection_lost(dst, context);
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
		wait_for_socket(dst, WL_SOCKET_WRITEABLE, context);
	if (r < 0)
		report_connection_lost(dst, context);
	copy_in_flush(dst, context);
	if (PQsetnonblocking(dst->conn, 0) != 0)
		report_connection_lost(dst, context);
	finish_copy(dst, copy_in_sql, context);
}

/* ----------------------------------------------------------------
 *		colojoin's write path
 * ----------------------------------------------------------------
 */

/*
 * cj_write_slot
 *		See connection.h: the slot colojoin wrote through on (server, user)
 *		in this transaction, or -1.
 */
int
cj_write_slot(Oid serverid, Oid userid)
{
	ListCell   *lc;

	foreach(lc, cj_write_slots)
	{
		CjConnKey  *k = (CjConnKey *) lfirst(lc);

		if (k->serverid == serverid && k->userid == userid)
			return k->slot;
	}
	return -1;
}

/*
 * cj_get_write_connection
 *		See connection.h.  The first write to a node in a transaction picks
 *		a connection that can later PREPARE: not busy, not the one that
 *		exported the node's snapshot, no temporary tables of moves.
 */
/*
 * write_connection_in
 *		get_connection for writes: a remote transaction started here for a
 *		local one at READ COMMITTED (or READ UNCOMMITTED) runs at READ
 *		COMMITTED, as a local one would: a row another transaction changed
 *		meanwhile is waited for and then read in its new version, instead of
 *		failing the statement with a serialization error.  Stricter local
 *		levels keep their remote ones (begin_statement).
 */
static CjConnection *
write_connection_in(Oid serverid, Oid userid, int slot, char **begin_sql)
{
	CjConnection *c;

	begin_read_committed = !IsolationUsesXactSnapshot();
	PG_TRY();
	{
		c = get_connection(serverid, userid, slot, begin_sql, false);
	}
	PG_FINALLY();
	{
		begin_read_committed = false;
	}
	PG_END_TRY();
	return c;
}

CjConnection *
cj_get_write_connection(Oid serverid, Oid userid)
{
	int			slot = cj_write_slot(serverid, userid);
	CjConnection *c;
	char	   *begin_sql = NULL;

	if (slot >= 0)
	{
		c = lookup_entry(serverid, userid, slot, false);
		if (c != NULL && c->owner != NULL && yield_hook != NULL)
			yield_hook(c->owner, c);
		if (cj_connection_busy(serverid, userid, slot))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("cannot write on node \"%s\" while a scan of this transaction reads from it",
							GetForeignServer(serverid)->servername),
					 errdetail("This transaction's writes there go through one connection, which an open scan (a cursor, or the query calling this statement) is using.")));

		/* restarted after a subtransaction abort: again without exporting */
		c = write_connection_in(serverid, userid, slot, &begin_sql);
		if (begin_sql != NULL)
			exec_sql(c, begin_sql, "transaction start", false);
		return c;
	}
	for (slot = 0;; slot++)
	{
		c = lookup_entry(serverid, userid, slot, false);
		if (c == NULL)
			break;
		if (c->in_flight || c->owner != NULL)
			continue;
		if (c->xact_open && (c->exported || c->used_temp))
			continue;
		break;
	}
	if (c != NULL && c->xact_open && !IsolationUsesXactSnapshot() &&
		!c->dml && c->write_min_level == 0 && c->undo == NIL &&
		!c->cursor_open && !c->needs_restart && !c->doomed &&
		!conn_is_bad(c) && PQtransactionStatus(c->conn) == PQTRANS_INTRANS)
	{
		/*
		 * Its read-only transaction holds nothing a later statement at READ
		 * COMMITTED may rely on: end it, and start the write transaction
		 * there, on the session's connection to the node.
		 */
		exec_sql(c, "COMMIT", "transaction restart", false);
		reset_xact_state(c);
	}
	c = write_connection_in(serverid, userid, slot, &begin_sql);
	if (begin_sql != NULL)
		exec_sql(c, begin_sql, "transaction start", false);

	/* plans made before the first write would read around it */
	if (cj_write_slots == NIL)
		ResetPlanCache();
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
		CjConnKey  *k = palloc0(sizeof(CjConnKey));

		k->serverid = serverid;
		k->userid = userid;
		k->slot = slot;
		cj_write_slots = lappend(cj_write_slots, k);
		MemoryContextSwitchTo(old);
	}
	return c;
}

/*
 * cj_conn_note_dml
 *		See connection.h: rows changed through conn, kept with the local
 *		transaction (savepoints as for any durable change).
 */
void
cj_conn_note_dml(CjConnection *conn)
{
	cj_conn_note_write(conn, NULL, NULL);
	conn->dml = true;
	conn->last_write = ++write_tick;
	cj_deadlock_note_writer(conn->key.serverid, PQbackendPID(conn->conn));
}

void
cj_conn_note_temp(CjConnection *conn)
{
	conn->used_temp = true;
}

/*
 * cj_check_two_phase
 *		See connection.h: before writing on the nodes of conns, make sure
 *		that, if the transaction will then have written on more than one
 *		node, each of them can prepare.
 */
void
cj_check_two_phase(List *conns)
{
	List	   *nodes = NIL;
	ListCell   *lc;
	HASH_SEQ_STATUS scan;
	CjConnection *c;

	foreach(lc, conns)
		nodes = list_append_unique_ptr(nodes, lfirst(lc));
	hash_seq_init(&scan, cj_connections);
	while ((c = hash_seq_search(&scan)) != NULL)
	{
		if (c->xact_open && c->write_max_level > 0)
			nodes = list_append_unique_ptr(nodes, c);
	}
	if (list_length(nodes) > 1)
	{
		foreach(lc, nodes)
			check_prepared_allowed((CjConnection *) lfirst(lc));
	}
	list_free(nodes);
}

/* send sql on conn without waiting (cj_conn_collect reads the answer) */
void
cj_conn_send(CjConnection *conn, const char *sql, const char *context)
{
	send_sql(conn, sql, context);
}

void
cj_conn_send_params(CjConnection *conn, const char *sql, int nparams,
					const char *const *values, const char *context)
{
	if (conn_is_bad(conn))
		report_connection_lost(conn, context);
	if (!PQsendQueryParams(conn->conn, sql, nparams, NULL, values, NULL,
						   NULL, 0))
		report_error(ERROR, conn, NULL, false, context, sql);
	begin_flight(conn);
}

PGresult *
cj_conn_collect(CjConnection *conn, const char *sql, const char *context)
{
	return collect_sql(conn, sql, context, true);
}

/*
 * cj_conn_open_raw
 *		See connection.h: an open connection of slot outside any remote
 *		transaction, or NULL (why in *reason) when there is none to be had
 *		now: the node is unreachable, full or refuses the login.  Its
 *		callers ask the node something they can do without, so it never
 *		waits for a free slot.
 */
PGconn *
cj_conn_open_raw(Oid serverid, Oid userid, int slot, char **reason)
{
	CjConnection *c;
	bool		ok;

	opening_raw = true;
	PG_TRY();
	{
		ok = try_connect(serverid, userid, slot, CJ_CONNECT_QUIET, reason);
	}
	PG_FINALLY();
	{
		opening_raw = false;
	}
	PG_END_TRY();
	if (!ok)
		return NULL;
	c = lookup_entry(serverid, userid, slot, false);
	if (c->xact_open || c->in_flight ||
		PQtransactionStatus(c->conn) != PQTRANS_IDLE)
	{
		*reason = pstrdup("the connection is in use by a transaction");
		return NULL;
	}
	return c->conn;
}

bool
cj_has_user_mapping(Oid serverid, Oid userid)
{
	return SearchSysCacheExists2(USERMAPPINGUSERSERVER,
								 ObjectIdGetDatum(userid),
								 ObjectIdGetDatum(serverid)) ||
		SearchSysCacheExists2(USERMAPPINGUSERSERVER,
							  ObjectIdGetDatum(InvalidOid),
							  ObjectIdGetDatum(serverid));
}

/* whether colojoin's write path changed rows on any node in this transaction */
bool
cj_xact_has_dml(void)
{
	return cj_write_slots != NIL;
}

/*
 * cj_try_write_connection
 *		See connection.h: cj_get_write_connection, or NULL (with the reason)
 *		when the node cannot be reached at all.  A node this transaction
 *		already wrote on is never "unreachable" here: losing it is an error.
 */
CjConnection *
cj_try_write_connection(Oid serverid, Oid userid, char **reason)
{
	int			slot = cj_write_slot(serverid, userid);

	*reason = NULL;
	if (slot < 0)
	{
		/* the slot a first write would pick, tried without an error */
		for (slot = 0;; slot++)
		{
			CjConnection *c = lookup_entry(serverid, userid, slot, false);

			if (c == NULL || !(c->in_flight || c->owner != NULL ||
							   (c->xact_open && (c->exported || c->used_temp))))
				break;
		}
		if (!cj_conn_try_connect(serverid, userid, slot, reason))
			return NULL;
	}
	return cj_get_write_connection(serverid, userid);
}
