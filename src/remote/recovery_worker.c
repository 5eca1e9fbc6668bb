/*-------------------------------------------------------------------------
 *
 * recovery_worker.c
 *	  The background workers that resolve, without waiting for a session to
 *	  come by, the transactions a coordinator crash (or a node's) left
 *	  prepared on the nodes between the two phases of a commit.
 *
 *	  With colojoin in shared_preload_libraries, a launcher (one static
 *	  worker, connected to no database: it reads the shared catalog
 *	  pg_database) starts, every colojoin.recovery_interval, one short-lived
 *	  worker per database that accepts connections, one database after the
 *	  other.  That worker leaves a database without the extension (or with
 *	  a version older than the commit records) alone; elsewhere it runs
 *	  twophase.c's recovery for each postgres_fdw server, in a transaction
 *	  of its own so that one node's failure does not stop the others, logs
 *	  what it committed or rolled back, and exits.  Without
 *	  shared_preload_libraries nothing here runs; the setting still exists.
 *
 *	  This file owns scheduling, processes, signals and error isolation.
 *	  What is in doubt, how its fate is read from the commit records, and
 *	  which role's user mapping finishes it are twophase.c's; connections
 *	  are connection.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "metadata/metadata.h"
#include "remote/recovery_worker.h"
#include "remote/twophase.h"
#include "util/extension.h"

/* colojoin.recovery_interval, registered by the entry module */
int			colojoin_recovery_interval = 60000;

/* the library the workers' entry points are loaded from */
#define CJ_LIBRARY "colojoin"

/* seconds before the postmaster restarts a launcher that failed */
#define CJ_LAUNCHER_RESTART_SECONDS 10

PGDLLEXPORT void cj_recovery_launcher_main(Datum main_arg);
PGDLLEXPORT void cj_recovery_database_main(Datum main_arg);

/*
 * A database worker still running when its round ended (it took longer
 * than the interval: a node slow to answer, or one that does not): the
 * next rounds leave that database out until it exits, instead of starting
 * a second worker beside it.  Launcher only, in launcher_cxt.
 */
typedef struct CjRunningWorker
{
	Oid			dboid;
	BackgroundWorkerHandle *handle;
} CjRunningWorker;

static List *still_running = NIL;
static MemoryContext launcher_cxt = NULL;

/* what twophase.c reported resolved on the node at hand (database worker) */
static List *node_report = NIL;

/* the database worker's database, for its messages */
static char *database_name = NULL;

void
cj_recovery_worker_init(void)
{
	BackgroundWorker worker;

	/*
	 * colojoin.recovery_interval is defined with the other settings
	 * (colojoin.c), before the prefix is reserved: a value in
	 * postgresql.conf would otherwise be thrown away.  A static worker can
	 * only be registered while preloading.
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	/* a standby has nothing to resolve: its coordinator is the primary */
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = CJ_LAUNCHER_RESTART_SECONDS;
	strlcpy(worker.bgw_library_name, CJ_LIBRARY, BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, "cj_recovery_launcher_main", BGW_MAXLEN);
	strlcpy(worker.bgw_name, "colojoin recovery launcher", BGW_MAXLEN);
	strlcpy(worker.bgw_type, "colojoin recovery launcher", BGW_MAXLEN);
	RegisterBackgroundWorker(&worker);
}

/* ----------------------------------------------------------------
 *		The launcher
 * ----------------------------------------------------------------
 */

static void
reload_config_if_asked(void)
{
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
}

/*
 * connectable_databases
 *		The OIDs of the databases a worker may connect to, in OID order:
 *		templates and those that refuse connections are left out (a worker
 *		would fail to connect, or keep CREATE DATABASE from copying them).
 *		In the caller's memory context.
 */
static List *
connectable_databases(void)
{
	MemoryContext cxt = CurrentMemoryContext;
	List	   *result = NIL;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tuple);
		MemoryContext old;

		if (!db->datallowconn || db->datistemplate)
			continue;
#ifdef DATCONNLIMIT_INVALID_DB
		/* left half-dropped by an interrupted DROP DATABASE */
		if (db->datconnlimit == DATCONNLIMIT_INVALID_DB)
			continue;
#endif
		old = MemoryContextSwitchTo(cxt);
		result = lappend_oid(result, db->oid);
		MemoryContextSwitchTo(old);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);

	list_sort(result, list_oid_cmp);
	return result;
}

/* forget the workers of earlier rounds that have exited */
static void
forget_exited_workers(void)
{
	List	   *keep = NIL;
	ListCell   *lc;
	MemoryContext old = MemoryContextSwitchTo(launcher_cxt);

	foreach(lc, still_running)
	{
		CjRunningWorker *w = (CjRunningWorker *) lfirst(lc);
		pid_t		pid;

		if (GetBackgroundWorkerPid(w->handle, &pid) == BGWH_STOPPED)
		{
			pfree(w->handle);
			pfree(w);
		}
		else
			keep = lappend(keep, w);
	}
	list_free(still_running);
	still_running = keep;
	MemoryContextSwitchTo(old);
}

static bool
worker_still_running(Oid dboid)
{
	ListCell   *lc;

	foreach(lc, still_running)
	{
		if (((CjRunningWorker *) lfirst(lc))->dboid == dboid)
			return true;
	}
	return false;
}

/*
 * start_database_worker
 *		Register the worker of database dboid; NULL (after a WARNING) when
 *		every background worker slot is taken.
 */
static BackgroundWorkerHandle *
start_database_worker(Oid dboid)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	strlcpy(worker.bgw_library_name, CJ_LIBRARY, BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, "cj_recovery_database_main", BGW_MAXLEN);
	snprintf(worker.bgw_name, BGW_MAXLEN,
			 "colojoin recovery of database %u", dboid);
	strlcpy(worker.bgw_type, "colojoin recovery", BGW_MAXLEN);
	worker.bgw_main_arg = ObjectIdGetDatum(dboid);
	worker.bgw_notify_pid = MyProcPid;

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("colojoin could not start a worker to resolve prepared transactions"),
				 errdetail("Every background worker slot is taken; the databases left are tried again in the next round."),
				 errhint("Raise max_worker_processes.")));
		return NULL;
	}
	return handle;
}

/*
 * wait_for_worker
 *		Wait until the worker of handle exits (true) or, when deadline is
 *		not 0, until it passes, or until shutdown (false).  The postmaster
 *		sets the latch when the worker starts and when it exits (it notifies
 *		this process, bgw_notify_pid).
 */
static bool
wait_for_worker(BackgroundWorkerHandle *handle, TimestampTz deadline)
{
	for (;;)
	{
		pid_t		pid;
		long		timeout = -1L;
		int			events = WL_LATCH_SET | WL_EXIT_ON_PM_DEATH;

		if (GetBackgroundWorkerPid(handle, &pid) == BGWH_STOPPED)
			return true;
		if (ShutdownRequestPending)
			return false;
		if (deadline != 0)
		{
			timeout = TimestampDifferenceMilliseconds(GetCurrentTimestamp(),
													  deadline);
			if (timeout <= 0)
				return false;
			events |= WL_TIMEOUT;
		}
		(void) WaitLatch(MyLatch, events, timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		reload_config_if_asked();
	}
}

/*
 * Where the last round stopped short (its interval passed, or no worker
 * slot was free): the next round begins with the database after it.
 */
static Oid	resume_after = InvalidOid;

/*
 * run_round
 *		One worker per connectable database, one after the other, so that a
 *		round takes one background worker slot and one connection per node
 *		at a time.  A worker that outlasts the interval is left running and
 *		the round ends there; the next one starts with the database after
 *		it (resume_after) and skips those whose worker still runs.
 */
static void
run_round(MemoryContext round_cxt)
{
	TimestampTz deadline = 0;
	List	   *databases;
	ListCell   *lc;
	MemoryContext old;
	Oid			last_done = InvalidOid;

	MemoryContextReset(round_cxt);
	old = MemoryContextSwitchTo(round_cxt);
	forget_exited_workers();
	databases = connectable_databases();

	/*
	 * Begin after the database where the last round stopped short, so that
	 * slow databases early in the list cannot keep the later ones from
	 * their turn round after round.
	 */
	if (OidIsValid(resume_after))
	{
		List	   *later = NIL;
		List	   *earlier = NIL;

		foreach(lc, databases)
		{
			if (lfirst_oid(lc) > resume_after)
				later = lappend_oid(later, lfirst_oid(lc));
			else
				earlier = lappend_oid(earlier, lfirst_oid(lc));
		}
		databases = list_concat(later, earlier);
	}
	resume_after = InvalidOid;

	if (colojoin_recovery_interval > 0)
		deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
											   colojoin_recovery_interval);
	foreach(lc, databases)
	{
		Oid			dboid = lfirst_oid(lc);
		BackgroundWorkerHandle *handle;

		if (ShutdownRequestPending || colojoin_recovery_interval <= 0)
			break;
		if (worker_still_running(dboid))
			continue;

		/* the handle may have to outlive the round */
		MemoryContextSwitchTo(launcher_cxt);
		handle = start_database_worker(dboid);
		if (handle == NULL)
		{
			/* no worker slot: this database's turn comes first next time */
			resume_after = last_done;
			break;
		}
		if (wait_for_worker(handle, deadline))
		{
			pfree(handle);
			last_done = dboid;
		}
		else
		{
			CjRunningWorker *w = palloc(sizeof(CjRunningWorker));

			w->dboid = dboid;
			w->handle = handle;
			still_running = lappend(still_running, w);
			resume_after = dboid;
			break;
		}
		MemoryContextSwitchTo(round_cxt);
	}
	MemoryContextSwitchTo(old);
}

/*
 * cj_recovery_launcher_main
 *		The static worker: a round at start (a restart after a crash is when
 *		transactions are most likely in doubt), then one every
 *		colojoin.recovery_interval after the end of the last.  SIGTERM ends
 *		it between two waits (exit code 0: the postmaster does not restart
 *		it); SIGHUP rereads the configuration, so that a new interval takes
 *		effect at once; the postmaster's death ends it in any wait.  Every
 *		wakeup processes interrupts: other backends' ProcSignalBarriers
 *		(DROP DATABASE waits for every process to absorb one) are absorbed
 *		there, and since SIGTERM does not go through die(), they never end
 *		the launcher with a FATAL.
 */
void
cj_recovery_launcher_main(Datum main_arg)
{
	MemoryContext round_cxt;
	TimestampTz last_round = 0;
	bool		ran = false;

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	/* no database: pg_database is a shared catalog */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	launcher_cxt = AllocSetContextCreate(TopMemoryContext,
										 "colojoin recovery launcher",
										 ALLOCSET_SMALL_SIZES);
	round_cxt = AllocSetContextCreate(TopMemoryContext,
									  "colojoin recovery round",
									  ALLOCSET_DEFAULT_SIZES);

	while (!ShutdownRequestPending)
	{
		long		timeout = -1L;
		int			events = WL_LATCH_SET | WL_EXIT_ON_PM_DEATH;

		reload_config_if_asked();
		if (colojoin_recovery_interval > 0)
		{
			TimestampTz now = GetCurrentTimestamp();
			TimestampTz due = ran ?
				TimestampTzPlusMilliseconds(last_round, colojoin_recovery_interval) : now;

			if (now >= due)
			{
				run_round(round_cxt);
				last_round = GetCurrentTimestamp();
				ran = true;
				continue;
			}
			timeout = TimestampDifferenceMilliseconds(now, due);
			events |= WL_TIMEOUT;
		}
		(void) WaitLatch(MyLatch, events, timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	proc_exit(0);
}

/* ----------------------------------------------------------------
 *		The worker of one database
 * ----------------------------------------------------------------
 */

/* one LOG line per transaction resolved (node, gid, action lists) */
static void
log_resolved(List *report)
{
	ListCell   *lc;

	foreach(lc, report)
	{
		List	   *row = (List *) lfirst(lc);
		const char *node = (const char *) linitial(row);
		const char *gid = (const char *) lsecond(row);

		if (strcmp((const char *) lthird(row), "committed") == 0)
			ereport(LOG,
					(errmsg("colojoin committed prepared transaction %s on node \"%s\"",
							gid, node),
					 errdetail("The coordinator transaction that prepared it, in database \"%s\", had committed, but its second phase had not finished.",
							   database_name)));
		else
			ereport(LOG,
					(errmsg("colojoin rolled back prepared transaction %s on node \"%s\"",
							gid, node),
					 errdetail("The coordinator transaction that prepared it, in database \"%s\", did not commit.",
							   database_name)));
	}
}

/*
 * recover_node
 *		Recovery of one node in a transaction of its own.  An error (its
 *		user mapping, a commit record that cannot be deleted) is a WARNING
 *		and the worker goes on with the next node; what was resolved before
 *		it is logged all the same, since it happened on the node.
 */
static void
recover_node(Oid serverid, const char *node, MemoryContext cxt)
{
	node_report = NIL;
	StartTransactionCommand();
	PG_TRY();
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		cj_twophase_recover_server(serverid, InvalidOid, true, &node_report);
		PopActiveSnapshot();
		log_resolved(node_report);
		node_report = NIL;
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		/* the report lives in the transaction's memory, still there */
		log_resolved(node_report);
		node_report = NIL;
		AbortCurrentTransaction();
		RESUME_INTERRUPTS();
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("colojoin could not resolve the prepared transactions on node \"%s\": %s",
						node, edata->message),
				 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
				 errhint("The recovery worker tries again in its next round.")));
		FreeErrorData(edata);
	}
	PG_END_TRY();
}

/*
 * cj_recovery_database_main
 *		The worker of one database (bgw_main_arg): nothing where colojoin's
 *		commit records are not installed, else recovery of every
 *		postgres_fdw server, then exit.  It runs as the bootstrap superuser,
 *		which may read every role's user mappings: twophase.c finishes each
 *		transaction through the mapping of the role that prepared it.
 *		SIGTERM (shutdown, the launcher gone) ends it at once, also while it
 *		waits for a node (twophase.c waits on the latch).
 */
void
cj_recovery_database_main(Datum main_arg)
{
	Oid			dboid = DatumGetObjectId(main_arg);
	MemoryContext cxt;
	MemoryContext old;
	List	   *servers = NIL;
	List	   *names = NIL;
	ListCell   *lc;
	ListCell   *ln;

	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);

	cxt = AllocSetContextCreate(TopMemoryContext, "colojoin recovery",
								ALLOCSET_DEFAULT_SIZES);

	/* what the messages name, read while catalog access is certain to work */
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	old = MemoryContextSwitchTo(cxt);
	database_name = get_database_name(MyDatabaseId);
	if (!colojoin_is_active())
		elog(DEBUG1, "colojoin recovery leaves database \"%s\" alone: the extension is not installed there",
			 database_name);
	else if (!cj_twophase_available())
		elog(DEBUG1, "colojoin recovery leaves database \"%s\" alone: its version of the extension has no commit records",
			 database_name);
	else
	{
		servers = cj_twophase_servers();
		foreach(lc, servers)
			names = lappend(names, cj_node_name(lfirst_oid(lc)));
	}
	MemoryContextSwitchTo(old);
	PopActiveSnapshot();
	CommitTransactionCommand();

	forboth(lc, servers, ln, names)
	{
		CHECK_FOR_INTERRUPTS();
		reload_config_if_asked();
		recover_node(lfirst_oid(lc), (const char *) lfirst(ln), cxt);
	}
	proc_exit(0);
}
