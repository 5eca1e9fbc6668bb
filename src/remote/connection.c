/*-------------------------------------------------------------------------
 *
 * connection.c
 *	  libpq connections to nodes, cached per (server, user, slot) for the
 *	  life of the backend (connection.h is the interface of remote/'s
 *	  connection files): which connection a statement gets (get_connection:
 *	  a free slot, the transaction's writing one after a write, deferred
 *	  BEGIN), connections retired when a server or user mapping changes,
 *	  the connect attempts of failover, and the write path's connections
 *	  (cj_get_write_connection: one per node and transaction, able to
 *	  PREPARE).
 *
 *	  The rest of remote/'s connection work lives beside it, sharing
 *	  connection_internal.h: opening a connection and telling why it failed
 *	  (conn_open.c), sending, waiting and error reporting (conn_io.c),
 *	  remote transactions, savepoints and commit (remote_xact.c), COPY
 *	  streams (copy_stream.c).  Deliberately does not decide what runs
 *	  where (planner, executor).
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

/* the per-backend state connection_internal.h declares */
HTAB	   *cj_connections = NULL;
List	   *cj_write_slots = NIL;
bool		cj_opening_raw = false;
bool		cj_begin_read_committed = false;
bool		cj_xact_touched = false;
bool		cj_pending_close = false;
List	   *cj_libpq_keywords = NIL;

static CjConnection *get_connection(Oid serverid, Oid userid, int slot,
									 char **begin_sql, bool optional);
static void cj_inval_server(Datum arg, int cacheid, uint32 hashvalue);
static void cj_inval_mapping(Datum arg, int cacheid, uint32 hashvalue);
static void close_at_exit(int code, Datum arg);

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

CjConnection *
cj_lookup_entry(Oid serverid, Oid userid, int slot, bool create)
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
		on_proc_exit(close_at_exit, (Datum) 0);
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

/*
 * close_at_exit
 *		on_proc_exit: say goodbye to every node still connected, so its
 *		backend ends quietly.  A read-only COMMIT's answer is read at the
 *		connection's next use, which an ending session never has; a socket
 *		closed with that answer unread is reset, and the node logs "could
 *		not receive data from client" for every session that ends.  What has
 *		already arrived is read; nothing is waited for (a node that is slow
 *		or gone must not hold the exit up), and the transaction, if any, was
 *		already settled by the abort that runs before this.
 */
static void
close_at_exit(int code, Datum arg)
{
	HASH_SEQ_STATUS scan;
	CjConnection *c;

	hash_seq_init(&scan, cj_connections);
	while ((c = hash_seq_search(&scan)) != NULL)
	{
		if (c->conn == NULL)
			continue;
		/* a deadline already past: read what is there, never wait */
		if (c->commit_pending)
			(void) cj_quiet_drain(c->conn, GetCurrentTimestamp(), NULL);
		PQfinish(c->conn);
		c->conn = NULL;
	}
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
	c = cj_lookup_entry(serverid, userid, slot, true);
	if (c->commit_pending)
		cj_finish_pending_commit(c);

	/*
	 * A scan's batch in flight (another scan of the statement wants the
	 * write connection, the only one that sees the transaction's writes)
	 * is read to its end first, and waits as that scan's next batch.
	 */
	if (c->in_flight && c->owner != NULL && cj_settle_hook != NULL)
		cj_settle_hook(c->owner, c);
	if (c->in_flight)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("connection %d to node \"%s\" is busy with another query",
						slot, NameStr(c->node_name)),
				 errdetail("A query started earlier in this transaction, such as an open cursor's, still reads from it.")));
	if (c->doomed)
		cj_report_doomed(c);

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
		cj_close_connection(c);

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
		um = cj_lookup_user_mapping(userid, server);
		c->server_hashvalue = GetSysCacheHashValue1(FOREIGNSERVEROID,
													ObjectIdGetDatum(serverid));
		c->invalidated = false;
		cj_reset_xact_state(c);
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
			if (cj_connect_node(c, server, um, CJ_CONNECT_SKIP_BUSY, &why) == NULL)
				return NULL;
		}
		else
			cj_connect_node(c, server, um, CJ_CONNECT_WAIT, NULL);
	}
	else if (PQstatus(c->conn) != CONNECTION_OK)
		cj_report_connection_lost(c, NULL);

	cj_xact_touched = true;
	c->last_used = GetCurrentTimestamp();
	if (c->xact_open && c->needs_restart)
	{
		cj_exec_sql(c, "ROLLBACK", "transaction restart", false);
		cj_reset_xact_state(c);
	}

	/*
	 * The transaction's write connection, restarted after a subtransaction
	 * abort took back all it wrote, starts again as a writer whoever asks
	 * (a read in between, say): as one that could not PREPARE, the next
	 * write there would make the commit fail.
	 */
	if (!c->xact_open && cj_write_slot(serverid, userid) == slot)
	{
		bool		saved = cj_begin_read_committed;

		cj_begin_read_committed = !IsolationUsesXactSnapshot();
		PG_TRY();
		{
			if (begin_sql != NULL && cj_deferred_begin(c, begin_sql))
				;				/* the caller sends it with its first command */
			else
				cj_begin_write_xact(c);
		}
		PG_FINALLY();
		{
			cj_begin_read_committed = saved;
		}
		PG_END_TRY();
	}
	if (!c->xact_open && begin_sql != NULL && cj_deferred_begin(c, begin_sql))
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
				cj_begin_remote_xact(c);
			}
			PG_CATCH();
			{
				if (c->conn == NULL || PQstatus(c->conn) != CONNECTION_BAD)
					PG_RE_THROW();
				MemoryContextSwitchTo(ctx);
				FlushErrorState();
				cj_close_connection(c);
				cj_reset_xact_state(c);
				reconnect = true;
			}
			PG_END_TRY();
			if (reconnect)
			{
				ForeignServer *server = GetForeignServer(serverid);

				cj_connect_node(c, server, cj_lookup_user_mapping(userid, server),
							 CJ_CONNECT_WAIT, NULL);
				cj_begin_remote_xact(c);
			}
		}
		else
			cj_begin_remote_xact(c);
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

		cj_exec_sql(c, sql, "subtransaction start", false);
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
	CjConnection *c = cj_lookup_entry(serverid, userid, slot, false);

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
	CjConnection *c = cj_lookup_entry(serverid, userid, slot, false);

	if (c == NULL || !c->xact_open || c->needs_restart || c->doomed ||
		cj_conn_is_bad(c) || PQtransactionStatus(c->conn) == PQTRANS_INERROR)
		return 0;
	return c->xact_id;
}

PGconn *
cj_conn_pgconn(CjConnection *conn)
{
	return conn->conn;
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
			cj_finish_pending_commit(c);
		cj_close_connection(c);
	}
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
	CjConnection *c = cj_lookup_entry(serverid, userid, slot, true);
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
		cj_close_connection(c);
	server = GetForeignServer(serverid);
	um = cj_lookup_user_mapping(userid, server);
	namestrcpy(&c->node_name, server->servername);
	c->server_hashvalue = GetSysCacheHashValue1(FOREIGNSERVEROID,
												ObjectIdGetDatum(serverid));
	c->invalidated = false;
	cj_reset_xact_state(c);
	return cj_connect_node(c, server, um, mode, reason) != NULL;
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
	return cj_conn_is_bad(conn);
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

	cj_begin_read_committed = !IsolationUsesXactSnapshot();
	PG_TRY();
	{
		c = get_connection(serverid, userid, slot, begin_sql, false);
	}
	PG_FINALLY();
	{
		cj_begin_read_committed = false;
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
		c = cj_lookup_entry(serverid, userid, slot, false);
		if (c != NULL && c->owner != NULL && cj_yield_hook != NULL)
			cj_yield_hook(c->owner, c);
		if (cj_connection_busy(serverid, userid, slot))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("cannot write on node \"%s\" while a scan of this transaction reads from it",
							GetForeignServer(serverid)->servername),
					 errdetail("This transaction's writes there go through one connection, which an open scan (a cursor, or the query calling this statement) is using.")));

		/* restarted after a subtransaction abort: again without exporting */
		c = write_connection_in(serverid, userid, slot, &begin_sql);
		if (begin_sql != NULL)
			cj_exec_sql(c, begin_sql, "transaction start", false);
		return c;
	}
	for (slot = 0;; slot++)
	{
		c = cj_lookup_entry(serverid, userid, slot, false);
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
		!cj_conn_is_bad(c) && PQtransactionStatus(c->conn) == PQTRANS_INTRANS)
	{
		/*
		 * Its read-only transaction holds nothing a later statement at READ
		 * COMMITTED may rely on: end it, and start the write transaction
		 * there, on the session's connection to the node.
		 */
		cj_exec_sql(c, "COMMIT", "transaction restart", false);
		cj_reset_xact_state(c);
	}
	c = write_connection_in(serverid, userid, slot, &begin_sql);
	if (begin_sql != NULL)
		cj_exec_sql(c, begin_sql, "transaction start", false);

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
	conn->last_write = ++cj_write_tick;
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
	/* no connection made yet in this backend (a write that reaches no leaf) */
	if (cj_connections != NULL)
	{
		hash_seq_init(&scan, cj_connections);
		while ((c = hash_seq_search(&scan)) != NULL)
		{
			if (c->xact_open && c->write_max_level > 0)
				nodes = list_append_unique_ptr(nodes, c);
		}
	}
	if (list_length(nodes) > 1)
	{
		foreach(lc, nodes)
			cj_check_prepared_allowed((CjConnection *) lfirst(lc));
	}
	list_free(nodes);
}

/* send sql on conn without waiting (cj_conn_collect reads the answer) */
void
cj_conn_send(CjConnection *conn, const char *sql, const char *context)
{
	cj_send_sql(conn, sql, context);
}

void
cj_conn_send_params(CjConnection *conn, const char *sql, int nparams,
					const char *const *values, const char *context)
{
	if (cj_conn_is_bad(conn))
		cj_report_connection_lost(conn, context);
	if (!PQsendQueryParams(conn->conn, sql, nparams, NULL, values, NULL,
						   NULL, 0))
		cj_report_error(ERROR, conn, NULL, false, context, sql);
	cj_begin_flight(conn);
}

PGresult *
cj_conn_collect(CjConnection *conn, const char *sql, const char *context)
{
	return cj_collect_sql(conn, sql, context, true);
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

	cj_opening_raw = true;
	PG_TRY();
	{
		ok = try_connect(serverid, userid, slot, CJ_CONNECT_QUIET, reason);
	}
	PG_FINALLY();
	{
		cj_opening_raw = false;
	}
	PG_END_TRY();
	if (!ok)
		return NULL;
	c = cj_lookup_entry(serverid, userid, slot, false);
	if (c->xact_open || c->in_flight ||
		PQtransactionStatus(c->conn) != PQTRANS_IDLE)
	{
		*reason = pstrdup("the connection is in use by a transaction");
		return NULL;
	}
	return c->conn;
}

/*
 * cj_get_autocommit_connection
 *		See connection.h: slot's connection, open and outside any remote
 *		transaction, for commands the node must commit at once (creating a
 *		subscription, dropping a replication slot).  A node that cannot be
 *		reached or refuses the login is an ERROR naming it, as for any
 *		connection; a busy node is waited for.
 */
CjConnection *
cj_get_autocommit_connection(Oid serverid, Oid userid, int slot)
{
	CjConnection *c;
	char	   *why = NULL;

	(void) try_connect(serverid, userid, slot, CJ_CONNECT_WAIT, &why);
	c = cj_lookup_entry(serverid, userid, slot, false);
	if (c->conn == NULL || PQstatus(c->conn) != CONNECTION_OK)
		ereport(ERROR,
				(errcode(ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION),
				 errmsg("could not connect to node \"%s\"", NameStr(c->node_name)),
				 errdetail("%s", why ? why : "The connection failed.")));
	if (c->xact_open || c->in_flight ||
		PQtransactionStatus(c->conn) != PQTRANS_IDLE)
		elog(ERROR, "connection slot %d to node \"%s\" is in a transaction",
			 slot, NameStr(c->node_name));
	return c;
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
			CjConnection *c = cj_lookup_entry(serverid, userid, slot, false);

			if (c == NULL || !(c->in_flight || c->owner != NULL ||
							   (c->xact_open && (c->exported || c->used_temp))))
				break;
		}
		if (!cj_conn_try_connect(serverid, userid, slot, reason))
			return NULL;
	}
	return cj_get_write_connection(serverid, userid);
}
