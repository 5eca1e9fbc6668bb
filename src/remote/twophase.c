/*-------------------------------------------------------------------------
 *
 * twophase.c
 *	  Atomic commit across nodes: names of prepared transactions, commit
 *	  records on the coordinator, and resolution of transactions in doubt.
 *
 *	  A local transaction that changed data on more than one node prepares
 *	  a transaction on each (connection.c sends PREPARE TRANSACTION and,
 *	  once the local commit is durable, COMMIT PREPARED).  Before anything
 *	  is prepared, one row per prepared transaction goes into
 *	  colojoin.prepared_xacts in the local transaction itself, so the rows
 *	  exist exactly when the local transaction committed.  A prepared
 *	  transaction found on a node later is therefore resolved without
 *	  guessing: if the local transaction that prepared it is still running,
 *	  it is left alone; otherwise it is committed when its row exists and
 *	  rolled back when not.  Resolution runs at a backend's first
 *	  connection to a node, in colojoin.recover_prepared_transactions(),
 *	  and in the recovery worker (recovery_worker.c), which calls
 *	  cj_twophase_recover_server for each node.
 *
 *	  This file decides and records; it does not hold connections or send
 *	  the protocol's commands during commit (connection.c does), and it
 *	  does not schedule recovery (recovery_worker.c does).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xloginsert.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/procarray.h"
#include "storage/procsignal.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"

#include "metadata/metadata.h"
#include "remote/connection.h"
#include "remote/setup_cache.h"
#include "remote/twophase.h"
#include "deparse/deparse.h"
#include "util/catalog_query.h"

PG_FUNCTION_INFO_V1(colojoin_recover_prepared_transactions);

/* a slot of its own, so that recovery never meets a transaction's connection */
#define CJ_RECOVERY_SLOT 1000

/* gids committed on their nodes whose records may go (TopMemoryContext) */
static List *forgotten = NIL;

/* servers this backend resolved at its first connection */
static List *resolved_servers = NIL;

/*
 * colojoin.debug_pause_after_prepare: for tests of failures between the
 * phases.  When not 0, a transaction that prepared on its nodes waits for
 * the advisory lock of that key (pg_advisory_lock(key)) before committing,
 * so that a test holding the lock can stop a node or the coordinator
 * exactly there, seeing the wait in pg_locks.
 */
static int	debug_pause_key = 0;

void
cj_twophase_init(void)
{
	DefineCustomIntVariable("colojoin.debug_pause_after_prepare",
							"Tests only: wait for this advisory lock between PREPARE TRANSACTION and the local commit.",
							NULL, &debug_pause_key, 0, 0, INT_MAX,
							PGC_SUSET, GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);
}

/*
 * The lock a session holds on its transaction's gids from before it
 * prepares them until it has finished them (COMMIT PREPARED or ROLLBACK
 * PREPARED after the local commit or abort): between the local commit and
 * its own COMMIT PREPARED, another backend's resolution would otherwise see
 * a transaction that is over and race the owner to finish it.  An advisory
 * lock tag of a kind no SQL function makes (field 4 = 3), keyed by the
 * transaction's full xid; a session lock, so that it outlives the local
 * commit, and goes with the backend if it dies.
 */
static bool finishing_held = false;
static uint64 finishing_fxid = 0;

static void
finishing_tag(LOCKTAG *tag, uint64 fxid)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (fxid >> 32),
						 (uint32) fxid, 3);
}

void
cj_twophase_hold(void)
{
	LOCKTAG		tag;

	if (finishing_held)
		return;
	finishing_fxid = U64FromFullTransactionId(GetTopFullTransactionId());
	finishing_tag(&tag, finishing_fxid);
	(void) LockAcquire(&tag, ExclusiveLock, true, false);
	finishing_held = true;
}

void
cj_twophase_release(void)
{
	LOCKTAG		tag;

	if (!finishing_held)
		return;
	finishing_tag(&tag, finishing_fxid);
	LockRelease(&tag, ExclusiveLock, true);
	finishing_held = false;
}

/* whether gid's session is still finishing it (holds its lock) */
static bool
owner_finishing(const char *gid, const char *prefix)
{
	uint64		fxid;
	LOCKTAG		tag;

	if (sscanf(gid + strlen(prefix), UINT64_FORMAT "_", &fxid) != 1)
		return false;
	finishing_tag(&tag, fxid);
	if (LockAcquire(&tag, ShareLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return true;
	LockRelease(&tag, ShareLock, false);
	return false;
}

void
cj_twophase_debug_pause(void)
{
	LOCKTAG		tag;

	if (debug_pause_key == 0)
		return;
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, (uint32) debug_pause_key, 1);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	LockRelease(&tag, ExclusiveLock, false);
}

/* the prefix every gid of this coordinator's database starts with */
static char *
gid_prefix(void)
{
	return psprintf("colojoin_" UINT64_FORMAT "_%u_",
					GetSystemIdentifier(), MyDatabaseId);
}

char *
cj_twophase_gid(Oid serverid, Oid userid, int slot)
{
	FullTransactionId fxid = GetTopFullTransactionId();

	return psprintf("%s" UINT64_FORMAT "_%u_%u_%d", gid_prefix(),
					U64FromFullTransactionId(fxid), serverid, userid, slot);
}

/* OID of colojoin.prepared_xacts, InvalidOid when not installed */
static Oid
records_relid(void)
{
	Oid			nsp = get_namespace_oid("colojoin", true);

	if (!OidIsValid(nsp))
		return InvalidOid;
	return get_relname_relid("prepared_xacts", nsp);
}

bool
cj_twophase_available(void)
{
	return OidIsValid(records_relid());
}

static Datum
text_array(List *strings)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(list_length(strings), 1));
	ListCell   *lc;
	int			i = 0;

	foreach(lc, strings)
		d[i++] = CStringGetTextDatum((char *) lfirst(lc));
	return PointerGetDatum(construct_array(d, i, TEXTOID, -1, false,
										   TYPALIGN_INT));
}

static Datum
oid_array(List *oids)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(list_length(oids), 1));
	ListCell   *lc;
	int			i = 0;

	foreach(lc, oids)
		d[i++] = ObjectIdGetDatum(lfirst_oid(lc));
	return PointerGetDatum(construct_array(d, i, OIDOID, sizeof(Oid), true,
										   TYPALIGN_INT));
}

/* the records are colojoin's, written as the owner of their table */
static void
records_sql(const char *sql, int nargs, Oid *argtypes, Datum *args, int expect)
{
	cj_write_as_owner(records_relid(), sql, nargs, argtypes, args, expect);
}

/* DELETE the records of gids (ignoring those already gone) */
static void
delete_records(List *gids)
{
	Oid			argtypes[1] = {TEXTARRAYOID};
	Datum		args[1];

	if (gids == NIL)
		return;
	args[0] = text_array(gids);
	records_sql("DELETE FROM colojoin.prepared_xacts WHERE gid = ANY ($1)",
				1, argtypes, args, SPI_OK_DELETE);
}

void
cj_twophase_log(List *gids, List *serverids)
{
	Oid			argtypes[2] = {TEXTARRAYOID, OIDARRAYOID};
	Datum		args[2];

	if (!OidIsValid(records_relid()))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("colojoin cannot commit a transaction that wrote on several nodes"),
				 errdetail("Table colojoin.prepared_xacts, which records two-phase commits, does not exist: the installed version of the extension is older than its library."),
				 errhint("Run ALTER EXTENSION colojoin UPDATE.")));

	/*
	 * Before anything is prepared: a new connection that saw the node clean
	 * earlier must ask it again (setup_cache.c).
	 */
	cj_setup_cache_doubt();

	args[0] = text_array(gids);
	args[1] = oid_array(serverids);
	records_sql("INSERT INTO colojoin.prepared_xacts (gid, server) "
				"SELECT * FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2))",
				2, argtypes, args, SPI_OK_INSERT);

	/*
	 * The records' WAL must be durable before any node prepares: after a
	 * crash, the xid the gids name must be known as used, so that no new
	 * transaction gets it (and recovery takes its fate for theirs).
	 */
	XLogFlush(XactLastRecEnd);

	/* records of earlier commits this backend finished go at the same time */
	if (forgotten != NIL)
	{
		delete_records(forgotten);
		list_free_deep(forgotten);
		forgotten = NIL;
	}
}

void
cj_twophase_forget(const char *gid)
{
	MemoryContext old;

	/* bounded: recovery removes whatever a backend did not */
	if (list_length(forgotten) >= 10000)
		return;
	old = MemoryContextSwitchTo(TopMemoryContext);
	forgotten = lappend(forgotten, pstrdup(gid));
	MemoryContextSwitchTo(old);
}

/*
 * read_records
 *		The gids of colojoin.prepared_xacts that snapshot sees, for server
 *		serverid (any, with InvalidOid).
 */
static List *
read_records(Snapshot snapshot, Oid serverid)
{
	Oid			relid = records_relid();
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;
	List	   *result = NIL;

	if (!OidIsValid(relid))
		return NIL;
	rel = table_open(relid, AccessShareLock);
	scan = table_beginscan(rel, snapshot, 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		bool		isnull;
		Datum		gid = heap_getattr(tuple, 1, RelationGetDescr(rel), &isnull);
		Datum		srv;

		if (isnull)
			continue;
		srv = heap_getattr(tuple, 2, RelationGetDescr(rel), &isnull);
		if (OidIsValid(serverid) && (isnull || DatumGetObjectId(srv) != serverid))
			continue;
		result = lappend(result, TextDatumGetCString(gid));
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}

static bool
string_member(List *list, const char *s)
{
	ListCell   *lc;

	foreach(lc, list)
	{
		if (strcmp((char *) lfirst(lc), s) == 0)
			return true;
	}
	return false;
}

/*
 * local_xact_running
 *		Whether the local transaction gid names may still commit or abort
 *		(it is in progress, or the gid cannot be read and nothing is known).
 */
static bool
local_xact_running(const char *gid, const char *prefix)
{
	uint64		fxid;
	TransactionId xid;

	if (sscanf(gid + strlen(prefix), UINT64_FORMAT "_", &fxid) != 1)
		return true;
	xid = XidFromFullTransactionId(FullTransactionIdFromU64(fxid));
	if (!TransactionIdIsNormal(xid))
		return true;
	return TransactionIdIsInProgress(xid);
}

/*
 * gid_owner
 *		The role whose user mapping prepared gid (the user field of the name
 *		cj_twophase_gid gave it), InvalidOid when it cannot be read.  On the
 *		node, only the role that mapping logs in as (or a superuser) may
 *		finish it.
 */
static Oid
gid_owner(const char *gid, const char *prefix)
{
	uint64		fxid;
	unsigned int serverid;
	unsigned int userid;

	if (sscanf(gid + strlen(prefix), UINT64_FORMAT "_%u_%u_", &fxid,
			   &serverid, &userid) != 3)
		return InvalidOid;
	return (Oid) userid;
}

/*
 * in_doubt
 *		Whether gid's fate may be decided now: its local transaction has
 *		ended, and its session is not finishing it itself.  The transaction
 *		is tested first: once it is over, its commit records are final, and
 *		a snapshot taken after this test sees them.  A session that has not
 *		committed yet is always still running here, since its records are
 *		written, and its xid taken, before anything is prepared.
 */
static bool
in_doubt(const char *gid, const char *prefix)
{
	return !local_xact_running(gid, prefix) && !owner_finishing(gid, prefix);
}

/* the query listing a node's transactions this coordinator prepared */
static char *
prepared_gids_sql(const char *prefix)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfoString(&sql,
						   "SELECT gid FROM pg_catalog.pg_prepared_xacts "
						   "WHERE database = pg_catalog.current_database() "
						   "AND pg_catalog.starts_with(gid, ");
	cj_append_literal(&sql, prefix);
	appendStringInfoString(&sql, ") ORDER BY gid");
	return sql.data;
}

/*
 * exec_waiting
 *		PQexec that also waits on the latch, so that a process asked to end
 *		(SIGTERM at shutdown, pg_terminate_backend) leaves at once even when
 *		the node does not answer: the recovery worker must not hold up a
 *		shutdown, nor a DROP DATABASE (a ProcSignalBarrier is absorbed here).
 *		A cancel is left for later: acting on it here would leave the
 *		connection, which connection.c owns and caches, in the middle of a
 *		command.  Returns the last result, NULL when nothing could be sent.
 */
static PGresult *
exec_waiting(PGconn *conn, const char *sql)
{
	PGresult   *last = NULL;
	PGresult   *res;

	if (!PQsendQuery(conn, sql))
		return NULL;
	while (PQisBusy(conn))
	{
		int			rc;

		rc = WaitLatchOrSocket(MyLatch,
							   WL_LATCH_SET | WL_SOCKET_READABLE |
							   WL_EXIT_ON_PM_DEATH,
							   PQsocket(conn), -1L, PG_WAIT_EXTENSION);
		if (rc & WL_LATCH_SET)
		{
			ResetLatch(MyLatch);
			if (ProcDiePending)
				CHECK_FOR_INTERRUPTS();
			/* DROP DATABASE and others wait for every process to absorb it */
			if (ProcSignalBarrierPending && INTERRUPTS_CAN_BE_PROCESSED())
				ProcessProcSignalBarrier();
		}
		if ((rc & WL_SOCKET_READABLE) && !PQconsumeInput(conn))
			break;
	}
	while ((res = PQgetResult(conn)) != NULL)
	{
		PQclear(last);
		last = res;
	}
	return last;
}

/*
 * list_prepared
 *		The gids this coordinator prepared on conn's node, in gid order.  When
 *		they cannot be listed: an ERROR, or when quiet a WARNING, NIL and *ok
 *		false.
 */
static List *
list_prepared(PGconn *conn, const char *prefix, const char *node, bool quiet,
			  bool *ok)
{
	PGresult   *res = exec_waiting(conn, prepared_gids_sql(prefix));
	List	   *gids = NIL;
	int			i;

	*ok = (PQresultStatus(res) == PGRES_TUPLES_OK);
	if (!*ok)
	{
		char	   *why = pstrdup(PQerrorMessage(conn));

		PQclear(res);
		ereport(quiet ? WARNING : ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not list the prepared transactions on node \"%s\"",
						node),
				 errdetail_internal("%s", why)));
		return NIL;
	}
	for (i = 0; i < PQntuples(res); i++)
		gids = lappend(gids, pstrdup(PQgetvalue(res, i, 0)));
	PQclear(res);
	return gids;
}

typedef enum
{
	CJ_RAW_DONE,				/* the command did it */
	CJ_RAW_GONE,				/* someone else finished the transaction first */
	CJ_RAW_FAILED
} CjRawOutcome;

/* COMMIT or ROLLBACK PREPARED outside any transaction; why on failure */
static CjRawOutcome
run_raw(PGconn *conn, const char *sql, char **why)
{
	PGresult   *res = exec_waiting(conn, sql);
	CjRawOutcome outcome = CJ_RAW_DONE;

	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		/*
		 * Finished meanwhile by its own session or another recovery: the
		 * outcome is the same, but it is not this call's to report.
		 */
		if (state != NULL && strcmp(state, "42704") == 0)
			outcome = CJ_RAW_GONE;
		else
		{
			*why = pstrdup(PQerrorMessage(conn));
			outcome = CJ_RAW_FAILED;
		}
	}
	PQclear(res);
	return outcome;
}

int
cj_twophase_resolve(PGconn *conn, Oid serverid, const char *node, bool quiet,
					Oid owner, List **report)
{
	char	   *prefix = gid_prefix();
	StringInfoData sql;
	List	   *gids;
	List	   *candidates = NIL;
	List	   *records;
	ListCell   *lc;
	Snapshot	snap;
	bool		ok;
	int			n = 0;

	gids = list_prepared(conn, prefix, node, quiet, &ok);

	/* first decide which are over; only then look at the records */
	foreach(lc, gids)
	{
		char	   *gid = (char *) lfirst(lc);

		if ((!OidIsValid(owner) || gid_owner(gid, prefix) == owner) &&
			in_doubt(gid, prefix))
			candidates = lappend(candidates, gid);
	}
	if (candidates == NIL)
		return 0;

	snap = RegisterSnapshot(GetLatestSnapshot());
	records = read_records(snap, InvalidOid);
	UnregisterSnapshot(snap);

	initStringInfo(&sql);
	foreach(lc, candidates)
	{
		char	   *gid = (char *) lfirst(lc);
		bool		commit = string_member(records, gid);
		char	   *why = NULL;
		CjRawOutcome outcome;

		resetStringInfo(&sql);
		appendStringInfoString(&sql, commit ? "COMMIT PREPARED " : "ROLLBACK PREPARED ");
		cj_append_literal(&sql, gid);
		outcome = run_raw(conn, sql.data, &why);
		if (outcome == CJ_RAW_FAILED)
		{
			ereport(WARNING,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not %s prepared transaction %s on node \"%s\"",
							commit ? "commit" : "roll back", gid, node),
					 errdetail_internal("%s", why)));
			continue;
		}
		if (outcome == CJ_RAW_GONE)
			continue;
		n++;
		if (report)
			*report = lappend(*report, list_make3(pstrdup(node), pstrdup(gid),
												  pstrdup(commit ? "committed" : "rolled back")));
	}
	return n;
}

const char *
cj_twophase_pending_sql(void)
{
	static char *sql = NULL;

	/*
	 * Any database's transactions count (the view's filter would cost the
	 * planning this saves); one of another database only costs the listing.
	 */
	if (sql == NULL)
	{
		StringInfoData buf;

		initStringInfo(&buf);
		appendStringInfoString(&buf,
							   "CASE WHEN pg_catalog.has_function_privilege('pg_catalog.pg_prepared_xact()', 'EXECUTE') "
							   "THEN EXISTS (SELECT FROM pg_catalog.pg_prepared_xact() x "
							   "WHERE pg_catalog.starts_with(x.gid, ");
		cj_append_literal(&buf, gid_prefix());
		appendStringInfoString(&buf, ")) ELSE true END");
		sql = MemoryContextStrdup(TopMemoryContext, buf.data);
		pfree(buf.data);
	}
	return sql;
}

void
cj_twophase_resolve_once(PGconn *conn, Oid serverid, const char *node,
						 bool pending)
{
	MemoryContext old;
	MemoryContext ctx = CurrentMemoryContext;

	if (list_member_oid(resolved_servers, serverid) || !IsTransactionState() ||
		!OidIsValid(records_relid()))
		return;
	old = MemoryContextSwitchTo(TopMemoryContext);
	resolved_servers = lappend_oid(resolved_servers, serverid);
	MemoryContextSwitchTo(old);
	if (!pending)
		return;

	/* a failure here must not fail the query that opened the connection */
	PG_TRY();
	{
		(void) cj_twophase_resolve(conn, serverid, node, true, InvalidOid,
								   NULL);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(ctx);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("could not resolve prepared transactions on node \"%s\": %s",
						node, edata->message)));
	}
	PG_END_TRY();
}

void
cj_twophase_recheck(Oid serverid)
{
	resolved_servers = list_delete_oid(resolved_servers, serverid);
	/* and every new connection of the database asks again */
	cj_setup_cache_doubt();
}

bool
cj_twophase_resolved(Oid serverid)
{
	return list_member_oid(resolved_servers, serverid);
}

List *
cj_twophase_servers(void)
{
	return cj_query_oids("SELECT s.oid FROM pg_catalog.pg_foreign_server s "
						 "JOIN pg_catalog.pg_foreign_data_wrapper w ON w.oid = s.srvfdw "
						 "WHERE w.fdwname = 'postgres_fdw' ORDER BY s.srvname",
						 0, NULL, NULL);
}

static void
warn_unreachable(const char *node, const char *why)
{
	ereport(WARNING,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("node \"%s\" cannot be reached; its prepared transactions stay as they are",
					node),
			 errdetail_internal("%s", why ? why : "")));
}

/*
 * listing_connection
 *		A connection to serverid that lists its prepared transactions (any
 *		role may see them): the current user's mapping (or PUBLIC's) when
 *		there is one, else the first other role's own mapping that connects.
 *		NULL, after a WARNING unless no role has a mapping, when none does.
 *		Reads pg_user_mapping: superusers only.
 */
static PGconn *
listing_connection(Oid serverid, const char *node)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
	List	   *roles = NIL;
	ListCell   *lc;
	char	   *why = NULL;

	if (cj_has_user_mapping(serverid, GetUserId()))
		roles = lappend_oid(roles, GetUserId());
	args[0] = ObjectIdGetDatum(serverid);
	roles = list_concat_unique_oid(roles,
								   cj_query_oids("SELECT umuser FROM pg_catalog.pg_user_mapping "
												 "WHERE umserver = $1 AND umuser <> 0 ORDER BY umuser",
												 1, argtypes, args));
	if (roles == NIL)
		return NULL;
	foreach(lc, roles)
	{
		PGconn	   *conn = cj_conn_open_raw(serverid, lfirst_oid(lc),
											CJ_RECOVERY_SLOT, &why);

		if (conn != NULL)
			return conn;
	}
	warn_unreachable(node, why);
	return NULL;
}

/* a role's name for a message, also when it was dropped */
static char *
role_name(Oid roleid)
{
	char	   *name = GetUserNameFromId(roleid, true);

	return name ? name : psprintf("%u", roleid);
}

/*
 * resolve_as_owners
 *		cj_twophase_resolve on conn's node for every role that prepared a
 *		transaction in doubt there, each through that role's own user
 *		mapping: the node lets only the role that prepared a transaction, or
 *		a superuser, finish it, and the role colojoin's mapping for the
 *		recovering session logs in as may be neither.
 */
static void
resolve_as_owners(PGconn *conn, Oid serverid, const char *node,
				  const char *prefix, List **report)
{
	List	   *owners = NIL;
	List	   *gids;
	ListCell   *lc;
	bool		ok;

	gids = list_prepared(conn, prefix, node, true, &ok);
	foreach(lc, gids)
	{
		char	   *gid = (char *) lfirst(lc);
		Oid			owner = gid_owner(gid, prefix);

		if (OidIsValid(owner) && in_doubt(gid, prefix))
			owners = list_append_unique_oid(owners, owner);
	}
	foreach(lc, owners)
	{
		Oid			owner = lfirst_oid(lc);
		PGconn	   *owner_conn = NULL;
		char	   *why = NULL;

		if (!cj_has_user_mapping(serverid, owner))
			why = pstrdup("The role has no user mapping for the server any more.");
		else
			owner_conn = cj_conn_open_raw(serverid, owner, CJ_RECOVERY_SLOT,
										  &why);
		if (owner_conn == NULL)
		{
			ereport(WARNING,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not reach node \"%s\" as role \"%s\"; the transactions it prepared there stay as they are",
							node, role_name(owner)),
					 errdetail_internal("%s", why ? why : ""),
					 errhint("A superuser whose user mapping logs in to the node as a superuser can resolve them with colojoin.recover_prepared_transactions().")));
			continue;
		}
		(void) cj_twophase_resolve(owner_conn, serverid, node, true, owner,
								   report);
	}
}

/*
 * cj_twophase_recover_server
 *		See twophase.h.
 */
void
cj_twophase_recover_server(Oid serverid, Oid as_user, bool quiet,
						   List **report)
{
	char	   *node = cj_node_name(serverid);
	char	   *prefix = gid_prefix();
	PGconn	   *conn;
	Snapshot	snap;
	List	   *before;
	List	   *after;
	List	   *done = NIL;
	ListCell   *lc;
	bool		ok;

	if (OidIsValid(as_user))
	{
		char	   *why = NULL;

		if (!cj_has_user_mapping(serverid, as_user))
			return;
		conn = cj_conn_open_raw(serverid, as_user, CJ_RECOVERY_SLOT, &why);
		if (conn == NULL)
		{
			warn_unreachable(node, why);
			return;
		}
	}
	else if ((conn = listing_connection(serverid, node)) == NULL)
		return;

	/*
	 * Records committed before this snapshot belong to transactions
	 * prepared before it too: those not on the node any more after
	 * resolving are over.
	 */
	snap = RegisterSnapshot(GetLatestSnapshot());
	before = read_records(snap, serverid);
	UnregisterSnapshot(snap);

	if (OidIsValid(as_user))
		(void) cj_twophase_resolve(conn, serverid, node, quiet, InvalidOid,
								   report);
	else
		resolve_as_owners(conn, serverid, node, prefix, report);

	after = list_prepared(conn, prefix, node, true, &ok);
	if (!ok)
		return;
	foreach(lc, before)
	{
		if (!string_member(after, (char *) lfirst(lc)))
			done = lappend(done, lfirst(lc));
	}
	delete_records(done);
}

/*
 * colojoin.recover_prepared_transactions()
 *		Resolve, on every postgres_fdw server the current user can reach,
 *		the transactions this coordinator prepared whose local transaction
 *		has ended, and remove the commit records nobody needs any more.
 *		Returns one row per resolved transaction: node, gid, action.  A
 *		node that cannot be reached is reported with a WARNING and skipped.
 */
Datum
colojoin_recover_prepared_transactions(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *report = NIL;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	if (!OidIsValid(records_relid()))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table colojoin.prepared_xacts does not exist"),
				 errhint("Run ALTER EXTENSION colojoin UPDATE.")));

	foreach(lc, cj_twophase_servers())
		cj_twophase_recover_server(lfirst_oid(lc), GetUserId(), false,
								   &report);

	foreach(lc, report)
	{
		List	   *row = (List *) lfirst(lc);
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		values[0] = CStringGetDatum((char *) linitial(row));
		values[0] = DirectFunctionCall1(namein, values[0]);
		values[1] = CStringGetTextDatum((char *) lsecond(row));
		values[2] = CStringGetTextDatum((char *) lthird(row));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
