/*-------------------------------------------------------------------------
 *
 * connection.h
 *	  libpq connections to nodes, keyed by (server, user, slot), and the
 *	  remote transactions that live as long as the local transaction.
 *
 *	  Connection options come from the foreign server and the user mapping
 *	  only; a non-superuser must authenticate with a password (the same rule
 *	  postgres_fdw applies).  Every remote failure is reported with the node
 *	  it came from.  This module never plans and never decides what to run.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_CONNECTION_H
#define COLOJOIN_CONNECTION_H

#include "nodes/pg_list.h"

#include "libpq-fe.h"

typedef struct CjConnection CjConnection;

/*
 * cj_get_connection: an open connection to serverid as userid (through that
 * user's mapping, or PUBLIC's), with a remote transaction open for the
 * current local transaction: REPEATABLE READ, SERIALIZABLE when the local
 * one is.  The first connection of a local transaction to a server (as one
 * user) exports its snapshot and the others import it, so every
 * connection to one node sees the same data.
 * The connection is idle when returned.
 *
 * Opening one, a node that answers "too many clients" (53300) or "starting
 * up / shutting down" (57P03) is busy, not down: the session waits for a
 * free slot, at most colojoin.connection_wait_timeout, then ERRORs with
 * ERRCODE_TOO_MANY_CONNECTIONS (ERRCODE_CANNOT_CONNECT_NOW).  Any other
 * error the node sends (a failed login, a missing database) is the ERROR
 * of this role, with the node's SQLSTATE.  Only a node that does not
 * answer at all fails with
 * ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION.
 */
extern CjConnection *cj_get_connection(Oid serverid, Oid userid, int slot);

/*
 * cj_get_connection_deferred: the same, except that when the remote
 * transaction must start and can do so without a round trip of its own,
 * *begin_sql receives the SQL that starts it, which the caller must send in
 * front of its first command on the connection.  Such a transaction exports
 * its snapshot only when another connection to the node needs it.
 */
extern CjConnection *cj_get_connection_deferred(Oid serverid, Oid userid,
												int slot, char **begin_sql);

/*
 * cj_get_connection_optional: the same as cj_get_connection, except that it
 * returns NULL where a connection would have to be opened and the node's
 * connection budget (conn_budget.h) has no room for it now, or the node
 * has no free slot (now, or had none moments ago): for a scan's extra
 * connections, which it can do without.
 */
extern CjConnection *cj_get_connection_optional(Oid serverid, Oid userid,
												int slot);

/*
 * cj_conn_close_idle: close the cached connections no transaction uses
 * that the connection budget wants back: those of nodes other sessions
 * wait for, and those beyond a server's first idle for longer than
 * colojoin.idle_connection_timeout.  Runs at every transaction end and
 * before a session waits for the budget.  Never throws.
 */
extern void cj_conn_close_idle(void);

extern PGconn *cj_conn_pgconn(CjConnection *conn);

/*
 * cj_conn_wait: sleep until the connection's socket has one of events
 * (WL_SOCKET_READABLE, WL_SOCKET_WRITEABLE), the latch is set (returned,
 * not reset) or timeout_ms passes (-1: never; WL_TIMEOUT); 0 when the
 * connection has no socket.  Exits with the postmaster.
 */
extern int	cj_conn_wait(CjConnection *conn, int events, long timeout_ms);

/*
 * Synchronous execution, interruptible while waiting.  On a remote error
 * they ereport(ERROR) with the node name and context (e.g. "partition
 * orders_p3") in the message.  cj_exec_query returns a PGresult the caller
 * must PQclear (it is not palloc'd).
 */
extern void cj_exec_command(CjConnection *conn, const char *sql,
							const char *context);
/*
 * cj_exec_value: the first column of the first row sql returns (palloc'd),
 * NULL when it returns no row or a NULL there
 */
extern char *cj_exec_value(CjConnection *conn, const char *sql,
						   const char *context);
extern PGresult *cj_exec_query(CjConnection *conn, const char *sql,
							   const char *context);

/*
 * Asynchronous use by the executor: call cj_conn_begin_async right after a
 * PQsend* succeeded and cj_conn_end_async once PQgetResult returned NULL.
 * While a query is in flight, a (sub)transaction abort cancels it and
 * drains the connection, so errors, cancel and statement_timeout never
 * leave a connection busy.
 */
extern void cj_conn_begin_async(CjConnection *conn);
extern void cj_conn_end_async(CjConnection *conn);

/*
 * cj_report_remote_error: ereport a remote failure at elevel, keeping the
 * remote SQLSTATE, message, detail and hint, and saying which node and
 * context (e.g. "partition class 3") it came from.  res may be NULL (then
 * the connection's error message is used).  Does not PQclear res.
 */
extern void cj_report_remote_error(int elevel, CjConnection *conn,
								   PGresult *res, const char *context);

/*
 * cj_copy_rows: stream the rows of copy_out_sql ("COPY (...) TO STDOUT")
 * run on src into copy_in_sql ("COPY ... FROM STDIN") run on dst, through
 * the coordinator, in bounded memory.  Returns the number of bytes moved.
 */
extern uint64 cj_copy_rows(CjConnection *src, const char *copy_out_sql,
						   CjConnection *dst, const char *copy_in_sql,
						   const char *context);

/* the rows the last COPY into a node (cj_copy_rows, cj_copy_in_finish) took */
extern uint64 cj_copy_last_rows(void);

/* "host=... port=..." style description of a server, for messages */
extern char *cj_server_address(Oid serverid);

/*
 * cj_server_conninfo: a libpq connection string to serverid's node for
 * userid (the server's options, the user mapping's credentials), for a
 * node that must connect to another itself (a subscription).
 */
extern char *cj_server_conninfo(Oid serverid, Oid userid);

/*
 * cj_conn_note_write: the caller made a change on the node that must commit
 * with the local transaction (create_shards' tables, add_replica's rows);
 * scratch objects that die with the statement need no note.  undo_sql (may
 * be NULL) removes the change again and runs if this node committed but the
 * local transaction then failed; what names the change in messages.  Such
 * a connection takes a remote savepoint when first used inside a deeper
 * subtransaction, so a subtransaction abort undoes only its own changes.
 * (appended by the connection module's author)
 */
extern void cj_conn_note_write(CjConnection *conn, const char *undo_sql,
							   const char *what);

/*
 * cj_connection_busy: whether that slot has a query in flight (an open
 * cursor's scan, say); cj_get_connection refuses a busy slot, so a caller
 * running a second query meanwhile picks a free one.
 * (appended by the connection module's author)
 */
extern bool cj_connection_busy(Oid serverid, Oid userid, int slot);
/* the first slot >= from of (server, user) that cj_connection_busy is not */
extern int	cj_first_free_slot(Oid serverid, Oid userid, int from);

/*
 * cj_conn_xact_id: which remote transaction the slot's connection is in, or
 * 0 when none is open and healthy; what a statement left in that
 * transaction (temporary tables of a move) is still there while the value
 * stays the same.
 */
extern uint64 cj_conn_xact_id(Oid serverid, Oid userid, int slot);

/*
 * Failover (executor.c): cj_conn_try_connect opens the slot's connection
 * if need be, without a remote transaction, and says false (with why) when
 * the node cannot be reached instead of throwing; a busy node is waited
 * for and a refused login is an ERROR, as in cj_get_connection, since
 * neither says the node is down.  cj_conn_is_lost tells a
 * connection whose node went away; cj_conn_abandon lets a scan walk away
 * from one whose remote transaction only read.
 */
/*
 * cj_copy_out_start: send copy_out_sql ("COPY ... TO STDOUT") on src, and
 * wait until the node starts sending rows.  cj_copy_out_next: the next row
 * (its length; the row in *buf, to PQfreemem), 0 when none is there yet
 * (wait for the socket of cj_conn_pgconn(src), then cj_conn_consume), -1
 * when the COPY ended well (src is idle again); a failure is an ERROR.
 */
extern void cj_copy_out_start(CjConnection *src, const char *copy_out_sql,
							  const char *context);
extern int	cj_copy_out_next(CjConnection *src, const char *copy_out_sql,
							 char **buf, const char *context);
extern void cj_conn_consume(CjConnection *conn, const char *context);

/*
 * COPY into a node of rows the coordinator produces itself (a local table
 * broadcast to the nodes): start dst's COPY ... FROM STDIN, put COPY data
 * (text format, whole lines), finish it.  Errors name the node; an error
 * between start and finish leaves the COPY to the abort's cleanup.
 */
extern void cj_copy_in_start(CjConnection *dst, const char *copy_in_sql,
							 const char *context);
extern void cj_copy_in_put(CjConnection *dst, const char *data, int len,
						   const char *context);
extern void cj_copy_in_finish(CjConnection *dst, const char *copy_in_sql,
							  const char *context);

extern bool cj_conn_try_connect(Oid serverid, Oid userid, int slot, char **reason);
extern bool cj_conn_is_lost(CjConnection *conn);
extern void cj_conn_abandon(CjConnection *conn);

/*
 * cj_conn_cancel: stop the query in flight and leave the connection idle
 * (the remote transaction restarts at the next use if the cancel aborted
 * it).  Never throws.
 */
extern void cj_conn_cancel(CjConnection *conn);

/*
 * Whether the executor's cursor (colojoin_cursor) is open in the remote
 * transaction of conn; it closes with the transaction.
 */
extern bool cj_conn_cursor_open(CjConnection *conn);

/*
 * cj_conn_set_owner: a scan reads through conn (its cursor stays open
 * between batches); cj_connection_busy reports the connection busy until
 * the owner is cleared (NULL), or the transaction ends.
 */
extern void cj_conn_set_owner(CjConnection *conn, void *owner);
extern void *cj_conn_owner(CjConnection *conn);

/*
 * cj_conn_set_settle_hook: how connection.c gets a connection with a
 * command of its owner in flight back to idle, when it must run a command
 * of its own there (exporting the snapshot a nested scan needs): the owner
 * reads the command's results to the end and keeps them.
 */
typedef void (*CjSettleHook) (void *owner, CjConnection *conn);

/*
 * cj_conn_await_input: sleep, interruptibly, until conn's node sends
 * something, and take it in (PQconsumeInput); a broken connection is an
 * ERROR naming the node and context.
 */
extern void cj_conn_await_input(CjConnection *conn, const char *context);
extern void cj_conn_set_settle_hook(CjSettleHook hook);

/*
 * cj_conn_set_yield_hook: how a write gets the write connection back from
 * the scan that reads through it (the rows the write takes, say): the
 * owner reads every row it still needs from there and lets it go.
 * cj_conn_write_tick: a counter of this backend's writes through its
 * connections; cj_conn_last_write: its value at conn's last write.
 */
extern void cj_conn_set_yield_hook(CjSettleHook hook);
extern uint64 cj_conn_write_tick(void);
extern uint64 cj_conn_last_write(CjConnection *conn);
extern void cj_conn_set_cursor_open(CjConnection *conn, bool open);

/*
 * colojoin's write path (modify_exec.c, insert_route.c)
 *
 * cj_get_write_connection: the connection through which this transaction
 * writes on (server, user): the first write picks one that can later
 * PREPARE TRANSACTION, and every later write and read of the node in the
 * transaction goes through it (cj_write_slot, -1 before any), so they see
 * the writes.  ERROR when an open scan is using it.
 * cj_conn_note_dml: rows were changed through it; a transaction that did
 * so on more than one node commits with two-phase commit.
 * cj_check_two_phase: before writing through conns, ERROR when the
 * transaction would then have written on several nodes one of which
 * cannot prepare transactions (max_prepared_transactions = 0).
 * cj_conn_note_temp: a move created temporary tables through conn.
 */
extern CjConnection *cj_get_write_connection(Oid serverid, Oid userid);
/*
 * the same, or NULL with the reason when the node cannot be reached (only
 * then: a busy node is waited for, a refused login is an ERROR)
 */
extern CjConnection *cj_try_write_connection(Oid serverid, Oid userid,
											 char **reason);
extern int	cj_write_slot(Oid serverid, Oid userid);
extern void cj_conn_note_dml(CjConnection *conn);
extern void cj_check_two_phase(List *conns);
extern void cj_conn_note_temp(CjConnection *conn);
extern bool cj_xact_has_dml(void);

/* send without waiting; cj_conn_collect returns the last result (PQclear it) */
extern void cj_conn_send(CjConnection *conn, const char *sql,
						 const char *context);
extern void cj_conn_send_params(CjConnection *conn, const char *sql,
								int nparams, const char *const *values,
								const char *context);
extern PGresult *cj_conn_collect(CjConnection *conn, const char *sql,
								 const char *context);

/*
 * cj_conn_open_raw: slot's connection, open and outside any remote
 * transaction (for recovery's COMMIT PREPARED), or NULL with the reason
 * when the node cannot be reached, is full or refuses the login; it never
 * waits for a free slot.
 */
extern PGconn *cj_conn_open_raw(Oid serverid, Oid userid, int slot,
								char **reason);
extern bool cj_has_user_mapping(Oid serverid, Oid userid);

/*
 * cj_get_autocommit_connection: slot's connection, open and outside any
 * remote transaction, so that each command commits on the node at once
 * (what must outlive the local transaction, or cannot run in one).  ERROR
 * when the node cannot be reached.  The caller keeps it out of transaction
 * blocks; cj_exec_command and cj_exec_query work on it as on any other.
 */
extern CjConnection *cj_get_autocommit_connection(Oid serverid, Oid userid,
												  int slot);

/*
 * The application_name of every connection to a node:
 * "colojoin:<coordinator's system identifier>:<session pid>"
 * (colojoin.activity ties a node's backends back to their sessions by it).
 */
extern const char *cj_application_name_prefix(void);
extern const char *cj_application_name(void);

/* the transaction callbacks and caches of connections (connection.c) */
extern void cj_connection_init(void);

#endif							/* COLOJOIN_CONNECTION_H */
