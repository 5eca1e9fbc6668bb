/*-------------------------------------------------------------------------
 *
 * connection_internal.h
 *	  Inside remote/: the connection cache entry and the per-backend state
 *	  that connection.c (the cache, session setup, the write path),
 *	  conn_open.c (opening connections), conn_io.c (sending, waiting,
 *	  results and errors, quiet cleanup), remote_xact.c (remote
 *	  transactions, savepoints, commit) and copy_stream.c (COPY) share.
 *	  Nothing outside remote/ includes it: connection.h is the interface.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_CONNECTION_INTERNAL_H
#define COLOJOIN_CONNECTION_INTERNAL_H

#include "access/xact.h"
#include "datatype/timestamp.h"
#include "foreign/foreign.h"
#include "libpq-fe.h"
#include "storage/latch.h"
#include "utils/hsearch.h"

#include "remote/connection.h"

/* how long abort processing waits for a node before closing the connection */
#define CJ_CLEANUP_TIMEOUT_MS	5000

/* a COPY between nodes flushes to the destination after this many bytes */
#define CJ_COPY_FLUSH_BYTES		(64 * 1024)

/* the slot of the connection that asks a node about a waiting statement */
#define CJ_SIDE_SLOT 1001

/*
 * The session settings every connection gets; remote SQL relies on them.
 * A task is read through a cursor, which PostgreSQL plans for its first
 * tenth of rows (cursor_tuple_fraction): a merge join over full index scans
 * that starts at once and ends late.  colojoin reads every task to its end
 * (a LIMIT it may stop at is in the task's own SQL), so its cursors are
 * planned for all their rows, as a plain statement is.
 */
#define CJ_SESSION_SETUP \
	"SET search_path = pg_catalog; SET timezone = 'UTC'; SET datestyle = ISO; " \
	"SET intervalstyle = postgres; SET extra_float_digits = 3; " \
	"SET cursor_tuple_fraction = 1"

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
	List	   *write_levels;	/* every nest level with writes, ascending
								 * (TopTransactionContext) */
	List	   *undo;			/* of CjUndo, newest first, TopTransactionContext */
	List	   *savepoints;		/* nest levels with a remote savepoint, ascending */

	/* the query in flight, if any */
	bool		in_flight;
	int			flight_level;	/* nest level of the (sub)transaction that sent it */

	/* the executor's cursor is open in the remote transaction */
	bool		cursor_open;
	int			cursor_level;	/* nest level that declared it */
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
	/* at connect: the node may hold transactions this coordinator prepared */
	bool		twophase_pending;

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

extern HTAB *cj_connections;

/*
 * The connection slot of each (server, user) that colojoin's write path
 * wrote through in this transaction (CjConnKey, TopTransactionContext):
 * later reads and writes of that node use it alone, so they see the writes.
 */
extern List *cj_write_slots;

/* cj_conn_open_raw is opening a connection for recovery, which resolves itself */
extern bool cj_opening_raw;

/*
 * Set while cj_get_write_connection starts a write connection's remote
 * transaction for a local transaction at READ COMMITTED: it starts at READ
 * COMMITTED too, without a snapshot of the node's other connections.
 */
extern bool cj_begin_read_committed;

/* true once any connection was used in the current local transaction */
extern bool cj_xact_touched;

/* true when an invalidation retired connections that are still open */
extern bool cj_pending_close;

/* libpq keywords a user may set through server or user mapping options */
extern List *cj_libpq_keywords;

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

/* the hooks by which a scan and a write share a connection (conn_io.c) */
extern CjSettleHook cj_settle_hook;
extern CjSettleHook cj_yield_hook;
extern uint64 cj_write_tick;

/* conn_io.c: sending, waiting, results, errors, quiet cleanup */
extern void cj_begin_flight(CjConnection *c);
extern void cj_check_remote_wait(CjConnection *c, const char *context);
extern void cj_check_self_wait(CjConnection *c, const char *context);
extern void cj_close_connection(CjConnection *c);
extern PGresult *cj_collect_sql(CjConnection *c, const char *sql, const char *context, bool want_result);
extern bool cj_conn_is_bad(CjConnection *c);
extern PGresult *cj_exec_sql(CjConnection *c, const char *sql, const char *context, bool want_result);
extern void cj_forget_wait_set(CjConnection *c);
extern PGresult *cj_get_result(CjConnection *c, const char *context);
extern void cj_quiet_cancel(CjConnection *c);
extern bool cj_quiet_drain(PGconn *conn, TimestampTz deadline, char **errmsg_out);
extern bool cj_quiet_exec(CjConnection *c, const char *sql, TimestampTz deadline, char **errmsg_out);
extern void cj_report_connection_lost(CjConnection *c, const char *context);
extern void cj_report_error(int elevel, CjConnection *c, PGresult *res, bool clear, const char *context, const char *sql);
extern void cj_send_sql(CjConnection *c, const char *sql, const char *context);
extern void cj_conn_settle(CjConnection *c, bool cancelled);
extern int cj_wait_for_socket(CjConnection *c, int events, const char *context);

/* conn_open.c: opening a connection */
extern PGconn *cj_connect_node(CjConnection *c, ForeignServer *server, UserMapping *um, CjConnectMode mode, char **reason);
extern UserMapping *cj_lookup_user_mapping(Oid userid, ForeignServer *server);

/* connection.c: the cache */
extern CjConnection *cj_lookup_entry(Oid serverid, Oid userid, int slot, bool create);

/* remote_xact.c: remote transactions and commit */
extern void cj_begin_remote_xact(CjConnection *c);
extern void cj_check_prepared_allowed(CjConnection *c);
extern bool cj_deferred_begin(CjConnection *c, char **begin_sql);
extern void cj_begin_write_xact(CjConnection *c);
extern void cj_finish_pending_commit(CjConnection *c);
extern void cj_report_doomed(CjConnection *c);
extern void cj_reset_xact_state(CjConnection *c);
extern void cj_subxact_callback(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid, void *arg);
extern void cj_xact_callback(XactEvent event, void *arg);

#endif							/* COLOJOIN_CONNECTION_INTERNAL_H */
