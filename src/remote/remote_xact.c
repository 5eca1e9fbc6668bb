/*-------------------------------------------------------------------------
 *
 * remote_xact.c
 *	  The remote transactions that follow the local one: START TRANSACTION
 *	  at the isolation the local transaction needs (snapshots exported and
 *	  shared between a node's slots), savepoints for connections that hold
 *	  durable changes, restart or refusal when a subtransaction aborts, and
 *	  the commit: plain for one writer, two-phase (PREPARE everywhere in
 *	  pre-commit, COMMIT PREPARED after the local commit, with twophase.c's
 *	  records) for several, undo SQL should the local commit fail.
 *
 *	  It does not open connections (conn_open.c) nor say which ones a
 *	  statement uses (connection.c).
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

/* numbers the remote transactions this backend starts (cj_conn_xact_id) */
static uint64 xact_counter = 0;

/* forget everything about the remote transaction (local transaction ended) */
void
cj_reset_xact_state(CjConnection *c)
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
	c->write_levels = NIL;
	c->undo = NIL;
	c->savepoints = NIL;
	c->cursor_open = false;
	c->owner = NULL;
	c->dml = false;
	c->used_temp = false;
	c->prepared = false;
	c->gid[0] = '\0';
}

void
cj_report_doomed(CjConnection *c)
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
			!e->needs_restart && !e->doomed && !cj_conn_is_bad(e) &&
			PQtransactionStatus(e->conn) != PQTRANS_INERROR)
			alive = true;
	}
	return alive;
}

/*
 * snapshot_holder
 *		Another open connection to c's node, as c's user, whose transaction's
 *		snapshot is known and usable, or NULL.  *unknown_pending (when given)
 *		is set if some open transaction there has not reported its snapshot
 *		yet: a transaction started now could then see different data.
 */
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
		if (other->needs_restart || other->doomed || cj_conn_is_bad(other))
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
			!other->needs_restart && !other->doomed && !cj_conn_is_bad(other) &&
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
	/* the write connection restarted by a subtransaction abort: same reason */
	if (cj_write_slot(found->key.serverid, found->key.userid) == found->key.slot)
		return NULL;
	if (found->in_flight && found->owner != NULL && cj_settle_hook != NULL)
		cj_settle_hook(found->owner, found);
	if (found->in_flight)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("connection %d to node \"%s\" is busy with another query",
						found->key.slot, NameStr(found->node_name)),
				 errdetail("Another connection to the node needs its snapshot.")));

	res = cj_exec_sql(found, "SELECT pg_catalog.pg_export_snapshot()",
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
 * cj_begin_remote_xact
 *		START TRANSACTION on the node, at REPEATABLE READ or SERIALIZABLE,
 *		in the snapshot of the node's other open transactions of this local
 *		transaction (exported by one of them, lazily if need be), so that
 *		all connections to one node see the same data.  The first one
 *		exports its snapshot in the same round trip: the scans that start
 *		transactions this way use several connections.
 */
void
cj_begin_remote_xact(CjConnection *c)
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
		res = cj_exec_sql(c, sql, "transaction start", true);
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
		cj_exec_sql(c, sql, "transaction start", false);
		/* it can hand the snapshot on while the source is busy */
		strlcpy(c->snapshot, source->snapshot, sizeof(c->snapshot));
	}
	pfree(sql);
}

/*
 * cj_begin_write_xact
 *		Start the remote transaction of the transaction's write connection
 *		with a round trip of its own: at READ COMMITTED under
 *		cj_begin_read_committed, else in the snapshot of the node's other
 *		connections when one is known, and never exporting one (an exporter
 *		cannot PREPARE).
 */
void
cj_begin_write_xact(CjConnection *c)
{
	CjConnection *source = NULL;
	char	   *sql;

	c->snapshot[0] = '\0';
	if (cj_begin_read_committed)
		sql = pstrdup("START TRANSACTION ISOLATION LEVEL READ COMMITTED");
	else if ((source = snapshot_holder(c, NULL)) != NULL)
		sql = psprintf("%s; SET TRANSACTION SNAPSHOT %s", begin_statement(),
					   quote_literal_cstr(source->snapshot));
	else
		sql = pstrdup(begin_statement());
	c->xact_open = true;		/* abort processing reconciles a half start */
	c->xact_id = ++xact_counter;
	cj_xact_touched = true;
	cj_exec_sql(c, sql, "transaction start", false);
	if (source != NULL)
		strlcpy(c->snapshot, source->snapshot, sizeof(c->snapshot));
	pfree(sql);
}

/*
 * cj_deferred_begin
 *		The SQL that starts c's remote transaction, to be sent by the caller
 *		in front of its first command: importing a snapshot already known
 *		here, or with none exported (a point lookup's only connection rarely
 *		has company; exporting costs the node a file write, so it happens
 *		when a second connection asks, see export_snapshot).  false when the
 *		start needs a round trip of its own (another open transaction there
 *		has not exported its snapshot yet).
 */
bool
cj_deferred_begin(CjConnection *c, char **begin_sql)
{
	const char *begin;
	bool		unknown_pending;
	CjConnection *source;

	if (cj_begin_read_committed)
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
 * cj_finish_pending_commit
 *		Read the answer to a read-only transaction's COMMIT sent without
 *		waiting; a connection that cannot give it is closed (nothing it did
 *		can be lost).
 */
void
cj_finish_pending_commit(CjConnection *c)
{
	c->commit_pending = false;
	if (c->conn == NULL)
		return;
	c->in_flight = true;
	if (!cj_quiet_drain(c->conn,
					 TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												 CJ_CLEANUP_TIMEOUT_MS),
					 NULL))
		cj_close_connection(c);
	c->in_flight = false;
}

/*
 * cj_conn_note_write
 *		Record that the caller made a change on the node that must commit
 *		with the local transaction (DDL, copied rows).  undo_sql, when given,
 *		removes that change again; it runs (outside any transaction) if this
 *		node committed but the local transaction failed to.  what describes
 *		the change for messages ("table public.t_p0").
 */
/* write_min_level and write_max_level from the levels that wrote */
static void
note_levels(CjConnection *c)
{
	c->write_min_level = c->write_levels ? linitial_int(c->write_levels) : 0;
	c->write_max_level = c->write_levels ? llast_int(c->write_levels) : 0;
}

void
cj_conn_note_write(CjConnection *conn, const char *undo_sql, const char *what)
{
	int			level = GetCurrentTransactionNestLevel();

	if (!list_member_int(conn->write_levels, level))
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

		conn->write_levels = lappend_int(conn->write_levels, level);
		list_sort(conn->write_levels, list_int_cmp);
		MemoryContextSwitchTo(old);
	}
	note_levels(conn);
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

		if (!cj_quiet_exec(c, u->sql,
						TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													CJ_CLEANUP_TIMEOUT_MS * 2),
						&err))
		{
			appendStringInfo(failures, "%s%s on node \"%s\" (%s)",
							 failures->len > 0 ? "; " : "",
							 u->what, NameStr(c->node_name), err);
			if (cj_conn_is_bad(c) || c->in_flight)
				cj_close_connection(c);
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
 * cj_check_prepared_allowed
 *		ERROR unless c's node can prepare transactions (its
 *		max_prepared_transactions is above 0); asked once per connection.
 */
void
cj_check_prepared_allowed(CjConnection *c)
{
	if (c->max_prepared < 0)
	{
		PGresult   *res = cj_exec_sql(c, "SELECT pg_catalog.current_setting('max_prepared_transactions')",
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
		cj_check_prepared_allowed(c);
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
		cj_send_sql(c, sql, "two-phase commit");
	}
	forboth(lc, writers, ls, sqls)
	{
		CjConnection *c = (CjConnection *) lfirst(lc);

		PG_TRY();
		{
			cj_collect_sql(c, (char *) lfirst(ls), "two-phase commit", false);
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
		cj_conn_settle(c, false);
	if (c->conn != NULL &&
		cj_quiet_exec(c, sql, TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
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
		if (c->conn != NULL && (cj_conn_is_bad(c) || c->in_flight))
			cj_close_connection(c);
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
			cj_conn_settle(c, false);
		if (!c->xact_open)
			continue;
		if (c->doomed)
		{
			hash_seq_term(&scan);
			cj_report_doomed(c);
		}
		if (cj_conn_is_bad(c))
		{
			if (c->write_max_level == 0)
			{
				/* nothing to keep there: forget that transaction */
				cj_close_connection(c);
				c->xact_open = false;
				continue;
			}
			hash_seq_term(&scan);
			cj_report_connection_lost(c, "commit");
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
		cj_begin_flight(c);
	}
	foreach(lc, readers)
	{
		PGresult   *res;

		c = (CjConnection *) lfirst(lc);
		if (!c->in_flight)
			continue;
		PG_TRY();
		{
			while ((res = cj_get_result(c, "commit")) != NULL)
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
		cj_report_error(ERROR, first_failed, failed_res, true,
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
			cj_exec_sql(c, "COMMIT", "commit of the remote transaction", false);
		}
		PG_CATCH();
		{
			ErrorData  *edata;
			StringInfoData undone;
			StringInfoData failures;
			ListCell   *lc2;
			bool		unknown = cj_conn_is_bad(c) || c->in_flight;

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
			cj_finish_pending_commit(c);
		if (c->in_flight && !cj_conn_is_bad(c))
			cj_quiet_cancel(c);
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
				cj_close_connection(c);
			c->in_flight = false;
			cj_reset_xact_state(c);
		}
		pfree(failures.data);
		return;
	}
	hash_seq_init(&scan, cj_connections);
	while ((c = hash_seq_search(&scan)) != NULL)
	{
		if (c->in_flight)
			cj_conn_settle(c, true);
		if (c->gid[0] != '\0')
			finish_prepared(c, false);
		else if (c->committed)
			run_undo(c, &failures);
		else if (c->xact_open && c->conn != NULL)
		{
			if (cj_conn_is_bad(c) ||
				(PQtransactionStatus(c->conn) != PQTRANS_IDLE &&
				 !cj_quiet_exec(c, "ROLLBACK",
							 TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														 CJ_CLEANUP_TIMEOUT_MS),
							 NULL)))
				cj_close_connection(c);
		}
		if (c->conn != NULL &&
			(PQstatus(c->conn) != CONNECTION_OK ||
			 PQtransactionStatus(c->conn) != PQTRANS_IDLE || c->in_flight))
			cj_close_connection(c);
		if (c->invalidated)
			cj_close_connection(c);
		cj_reset_xact_state(c);
	}
	cj_twophase_release();
	if (failures.len > 0)
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("some remote changes of the failed transaction could not be removed"),
				 errdetail("Left behind: %s.", failures.data)));
	pfree(failures.data);
}

void
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
					cj_close_connection(c);
				cj_reset_xact_state(c);
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
		c->write_levels = NIL;
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
	/*
	 * A cursor the forgotten levels declared that is still open (no remote
	 * rollback took it) is the enclosing level's now.
	 */
	if (c->cursor_level >= level)
		c->cursor_level = level - 1;

	/* the remote transaction is back where level began: exactly what wrote before */
	while (c->write_levels != NIL && llast_int(c->write_levels) >= level)
		c->write_levels = list_delete_last(c->write_levels);
	note_levels(c);
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
		if (c->write_levels != NIL && llast_int(c->write_levels) >= level)
		{
			MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

			while (c->write_levels != NIL && llast_int(c->write_levels) >= level)
				c->write_levels = list_delete_last(c->write_levels);
			c->write_levels = lappend_int(c->write_levels, level - 1);
			list_sort(c->write_levels, list_int_cmp);
			MemoryContextSwitchTo(old);
			if (list_length(c->write_levels) >= 2 &&
				list_nth_int(c->write_levels, list_length(c->write_levels) - 2) == level - 1)
				c->write_levels = list_delete_last(c->write_levels);
			note_levels(c);
		}
		if (c->cursor_level >= level)
			c->cursor_level = level - 1;
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

	/*
	 * Already lost by an earlier abort and waiting for its restart: it
	 * holds nothing, and those that shared its snapshot were told then.
	 */
	if (c->needs_restart && !c->in_flight)
	{
		forget_levels_from(c, level);
		return false;
	}
	if (cj_conn_is_bad(c))
	{
		cj_close_connection(c);
		if (outer_writes)
			c->doomed = true;
		else
		{
			cj_reset_xact_state(c);
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
			cj_reset_xact_state(c);
		return exporter;
	}
	if (status != PQTRANS_INTRANS && status != PQTRANS_INERROR)
	{
		cj_close_connection(c);
		if (outer_writes)
			c->doomed = true;
		else
			cj_reset_xact_state(c);
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
			if (cj_quiet_exec(c, sql,
						   TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   CJ_CLEANUP_TIMEOUT_MS),
						   NULL))
			{
				/* the node closed the cursors declared since the savepoint */
				if (c->cursor_open && c->cursor_level >= level)
					c->cursor_open = false;
				forget_levels_from(c, level);
				return false;
			}
			cj_close_connection(c);
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
void
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
		if (c->in_flight && c->flight_level >= level && !cj_conn_is_bad(c))
			cj_quiet_cancel(c);
	}
	hash_seq_init(&scan, cj_connections);
	while ((c = hash_seq_search(&scan)) != NULL)
	{
		char		snapshot[sizeof(c->snapshot)];

		if (c->in_flight && c->flight_level >= level)
			cj_conn_settle(c, true);
		/* what it exported, before the abort may reset it */
		strlcpy(snapshot, c->snapshot, sizeof(snapshot));
		if (subxact_abort_one(c, level) && snapshot[0] != '\0')
		{
			CjConnection *lost = palloc(sizeof(CjConnection));

			/* snapshot names are unique per node only: keep whose it was */
			lost->key = c->key;
			strlcpy(lost->snapshot, snapshot, sizeof(lost->snapshot));
			restarted = lappend(restarted, lost);
		}
	}

	/* those that imported a lost snapshot restart with it */
	foreach(lc, restarted)
	{
		CjConnection *lost = (CjConnection *) lfirst(lc);

		hash_seq_init(&scan, cj_connections);
		while ((c = hash_seq_search(&scan)) != NULL)
		{
			if (c->key.serverid != lost->key.serverid ||
				c->key.userid != lost->key.userid || !c->xact_open ||
				c->needs_restart || c->doomed || c->in_flight ||
				strcmp(c->snapshot, lost->snapshot) != 0)
				continue;
			mark_restart(c, level);
		}
	}
	list_free_deep(restarted);
}
