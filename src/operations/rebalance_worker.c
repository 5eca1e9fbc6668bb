/*-------------------------------------------------------------------------
 *
 * rebalance_worker.c
 *	  colojoin.rebalance(), rebalance_resume() and rebalance_cancel(), and
 *	  the background worker that carries out a rebalance job: the moves
 *	  rebalance_plan.c chose, one class at a time, each move_class in a
 *	  transaction of its own.
 *
 *	  A job and its moves are rows of colojoin.rebalance_jobs and
 *	  colojoin.rebalance_moves, written in the caller's transaction; the
 *	  worker starts at once but first waits for a lock that transaction
 *	  holds, so it reads the job only once it committed (and nothing when
 *	  it rolled back).  A move's row turns 'done' in the move's own
 *	  transaction, so that a crash never leaves a committed move marked
 *	  otherwise: after a crash of the worker (restarted by the postmaster)
 *	  or of the coordinator (rebalance_resume), the first move not done runs
 *	  again, move_class removing what its cut-short try left.  A failed
 *	  move ends the job; a cancel (rebalance_cancel) cancels the running
 *	  move and ends the job.
 *
 *	  It decides no move (rebalance_plan.c) and moves nothing itself
 *	  (class_move.c).  Needs colojoin in shared_preload_libraries.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "metadata/metadata.h"
#include "operations/class_move.h"
#include "operations/rebalance_plan.h"
#include "util/catalog_query.h"
#include "util/extension.h"

PG_FUNCTION_INFO_V1(colojoin_rebalance);
PG_FUNCTION_INFO_V1(colojoin_rebalance_resume);
PG_FUNCTION_INFO_V1(colojoin_rebalance_cancel);

extern PGDLLEXPORT void cj_rebalance_worker_main(Datum main_arg);

/* seconds before the postmaster restarts a worker that crashed */
#define CJ_REBALANCE_RESTART_SECONDS 5

/* what the worker needs besides its job */
typedef struct RebalanceArgs
{
	Oid			dboid;
	Oid			roleid;
} RebalanceArgs;

static bool rebalance_available = false;

void
cj_rebalance_worker_init(void)
{
	rebalance_available = process_shared_preload_libraries_in_progress;
}

/*
 * The transaction that writes a job holds this lock (an advisory tag of a
 * kind no SQL function takes, field 4 = 5) until it ends; the worker takes
 * it before reading the job.
 */
static void
job_lock(int64 job)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) (job >> 32), (uint32) job, 5);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

static Oid
table_oid(const char *name)
{
	return get_relname_relid(name, get_namespace_oid(COLOJOIN_SCHEMA, false));
}

/* run sql (an INSERT or UPDATE of the job tables) as their owner */
static void
write_job(const char *table, const char *sql, int nargs, Oid *argtypes,
		  Datum *args, int expected)
{
	(void) cj_write_as_owner(table_oid(table), sql, nargs, argtypes, args, expected);
}

/* one value of a one-row query, or NULL; SPI must be connected */
static char *
spi_value(const char *sql, int nargs, Oid *argtypes, Datum *args)
{
	if (SPI_execute_with_args(sql, nargs, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "colojoin: could not read the rebalance jobs");
	if (SPI_processed == 0)
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/* a worker process of pid is alive */
static bool
worker_alive(int pid)
{
	return pid > 0 && BackendPidGetProc(pid) != NULL;
}

/* start the worker of job, as the current role */
static void
start_worker(int64 job)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	RebalanceArgs args;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = CJ_REBALANCE_RESTART_SECONDS;
	strlcpy(worker.bgw_library_name, "colojoin", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, "cj_rebalance_worker_main", BGW_MAXLEN);
	snprintf(worker.bgw_name, BGW_MAXLEN, "colojoin rebalance job " INT64_FORMAT, job);
	strlcpy(worker.bgw_type, "colojoin rebalance", BGW_MAXLEN);
	worker.bgw_main_arg = Int64GetDatum(job);
	args.dboid = MyDatabaseId;
	args.roleid = GetUserId();
	memcpy(worker.bgw_extra, &args, sizeof(args));
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("colojoin could not start the rebalance worker"),
				 errdetail("Every background worker slot is taken."),
				 errhint("Raise max_worker_processes, or try again later.")));
}

static void
check_available(void)
{
	colojoin_require_active();
	if (!rebalance_available)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("colojoin.rebalance needs colojoin in shared_preload_libraries"),
				 errdetail("The moves run in a background worker."),
				 errhint("Add colojoin to shared_preload_libraries and restart, or run the moves of colojoin.rebalance_plan() with colojoin.move_class.")));
	PreventCommandIfReadOnly("colojoin.rebalance()");
}

/* the running job (0 when none) and its worker's pid */
static int64
running_job(int *pid)
{
	char	   *job;
	char	   *wpid;
	int64		result = 0;

	*pid = 0;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	job = spi_value("SELECT job FROM colojoin.rebalance_jobs WHERE state = 'running' ORDER BY job DESC",
					0, NULL, NULL);
	if (job != NULL)
	{
		result = strtoll(job, NULL, 10);
		wpid = spi_value("SELECT worker_pid FROM colojoin.rebalance_jobs WHERE job = $1",
						 1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(result)});
		*pid = wpid ? atoi(wpid) : 0;
	}
	SPI_finish();
	return result;
}

/*
 * colojoin_rebalance
 *		colojoin.rebalance(servers name[] DEFAULT NULL, by text DEFAULT
 *		'rows', mode text DEFAULT 'online', drain name DEFAULT NULL) →
 *		bigint: plan the moves, record them as a job, and start the worker
 *		that runs them once the calling transaction commits.  The job's id.
 */
Datum
colojoin_rebalance(PG_FUNCTION_ARGS)
{
	List	   *servers;
	char	   *by = PG_ARGISNULL(1) ? "rows" : text_to_cstring(PG_GETARG_TEXT_PP(1));
	char	   *mode = PG_ARGISNULL(2) ? "online" : text_to_cstring(PG_GETARG_TEXT_PP(2));
	Oid			drain = InvalidOid;
	List	   *moves;
	ListCell   *lc;
	int64		job;
	int			pid;
	int			n = 0;
	Oid			jobtypes[4] = {INT8OID, NAMEARRAYOID, TEXTOID, TEXTOID};
	Datum		jobargs[4];
	bool		jobnulls = PG_ARGISNULL(0);

	check_available();
	if (strcmp(by, "rows") != 0 && strcmp(by, "bytes") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot rebalance by \"%s\"", by),
				 errhint("Rebalance by 'rows' or 'bytes'.")));
	if (strcmp(mode, "online") != 0 && strcmp(mode, "blocking") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown move mode \"%s\"", mode),
				 errhint("The modes are 'online' and 'blocking'.")));
	servers = PG_ARGISNULL(0) ? NIL : cj_server_list(PG_GETARG_DATUM(0));
	if (!PG_ARGISNULL(3))
		drain = GetForeignServerByName(NameStr(*PG_GETARG_NAME(3)), false)->serverid;

	job = running_job(&pid);
	if (job != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("rebalance job " INT64_FORMAT " is not finished", job),
				 worker_alive(pid) ?
				 errdetail("Its worker (process %d) is moving classes.", pid) :
				 errdetail("Its worker is gone (the server restarted)."),
				 errhint("colojoin.rebalance_resume() goes on with it; colojoin.rebalance_cancel() ends it.")));

	moves = cj_rebalance_plan(servers, strcmp(by, "bytes") == 0, drain);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	job = strtoll(spi_value("SELECT pg_catalog.nextval('colojoin.rebalance_job_seq')",
							0, NULL, NULL), NULL, 10);
	SPI_finish();
	job_lock(job);

	jobargs[0] = Int64GetDatum(job);
	jobargs[1] = jobnulls ? (Datum) 0 : PG_GETARG_DATUM(0);
	jobargs[2] = CStringGetTextDatum(by);
	jobargs[3] = CStringGetTextDatum(mode);
	write_job("rebalance_jobs",
			  jobnulls ?
			  "INSERT INTO colojoin.rebalance_jobs (job, servers, by, mode, state) "
			  "VALUES ($1, NULL, $3, $4, 'running')" :
			  "INSERT INTO colojoin.rebalance_jobs (job, servers, by, mode, state) "
			  "VALUES ($1, $2, $3, $4, 'running')",
			  4, jobtypes, jobargs, SPI_OK_INSERT);
	foreach(lc, moves)
	{
		CjPlannedMove *m = (CjPlannedMove *) lfirst(lc);
		Oid			types[8] = {INT8OID, INT4OID, OIDOID, INT4OID, TEXTOID, TEXTOID, INT8OID, INT8OID};
		Datum		args[8];

		args[0] = Int64GetDatum(job);
		args[1] = Int32GetDatum(++n);
		args[2] = ObjectIdGetDatum(m->relid);
		args[3] = Int32GetDatum(m->cls);
		args[4] = CStringGetTextDatum(cj_node_name(m->from));
		args[5] = CStringGetTextDatum(cj_node_name(m->to));
		args[6] = Int64GetDatum((int64) m->rows);
		args[7] = Int64GetDatum((int64) m->bytes);
		write_job("rebalance_moves",
				  "INSERT INTO colojoin.rebalance_moves (job, move, table_name, partition_class,"
				  " from_server, to_server, rows, bytes, state)"
				  " VALUES ($1, $2, $3::pg_catalog.regclass, $4, $5::pg_catalog.name,"
				  " $6::pg_catalog.name, $7, $8, 'planned')",
				  8, types, args, SPI_OK_INSERT);
	}
	if (moves == NIL)
	{
		write_job("rebalance_jobs",
				  "UPDATE colojoin.rebalance_jobs SET state = 'done', finished = pg_catalog.now() WHERE job = $1",
				  1, jobtypes, jobargs, SPI_OK_UPDATE);
		ereport(NOTICE,
				(errmsg("the nodes are balanced: rebalance job " INT64_FORMAT " has nothing to move", job)));
	}
	else
	{
		start_worker(job);
		ereport(NOTICE,
				(errmsg("rebalance job " INT64_FORMAT " moves %d classes in the background", job, n),
				 errhint("colojoin.rebalance_status shows how far it is.")));
	}
	PG_RETURN_INT64(job);
}

/*
 * colojoin_rebalance_resume
 *		colojoin.rebalance_resume() → bigint: start a worker again for the
 *		unfinished job whose worker is gone; its id, or NULL when there is
 *		none.
 */
Datum
colojoin_rebalance_resume(PG_FUNCTION_ARGS)
{
	int			pid;
	int64		job;

	check_available();
	job = running_job(&pid);
	if (job == 0)
		PG_RETURN_NULL();
	if (worker_alive(pid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("rebalance job " INT64_FORMAT " is running in process %d", job, pid)));
	job_lock(job);
	start_worker(job);
	PG_RETURN_INT64(job);
}

/*
 * colojoin_rebalance_cancel
 *		colojoin.rebalance_cancel() → boolean: end the unfinished job; its
 *		running move is cancelled (and leaves the class where it was).
 */
Datum
colojoin_rebalance_cancel(PG_FUNCTION_ARGS)
{
	int			pid;
	int64		job;
	Oid			types[1] = {INT8OID};
	Datum		args[1];

	check_available();
	job = running_job(&pid);
	if (job == 0)
		PG_RETURN_BOOL(false);
	args[0] = Int64GetDatum(job);
	write_job("rebalance_jobs",
			  "UPDATE colojoin.rebalance_jobs SET state = 'cancelled', finished = pg_catalog.now() WHERE job = $1",
			  1, types, args, SPI_OK_UPDATE);
	write_job("rebalance_moves",
			  "UPDATE colojoin.rebalance_moves SET state = 'cancelled' WHERE job = $1 AND state = 'planned'",
			  1, types, args, SPI_OK_UPDATE);
	if (worker_alive(pid))
		(void) DirectFunctionCall1(pg_cancel_backend, Int32GetDatum(pid));
	PG_RETURN_BOOL(true);
}

/* ----------------------------------------------------------------
 *		The worker
 * ----------------------------------------------------------------
 */

typedef struct NextMove
{
	int			move;
	char	   *table;
	char	   *cls;
	char	   *from;
	char	   *to;
	char	   *mode;
} NextMove;

/*
 * The job's next move, marked 'moving' and committed, or NULL when the job
 * is over (done: marked so; cancelled or gone: left).
 */
static NextMove *
next_move(int64 job, MemoryContext cxt)
{
	Oid			types[2] = {INT8OID, INT4OID};
	Datum		args[2];
	NextMove   *next = NULL;
	char	   *state;

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	args[0] = Int64GetDatum(job);
	state = spi_value("SELECT state FROM colojoin.rebalance_jobs WHERE job = $1", 1, types, args);
	if (state != NULL && strcmp(state, "running") == 0)
	{
		args[1] = Int32GetDatum(MyProcPid);
		write_job("rebalance_jobs",
				  "UPDATE colojoin.rebalance_jobs SET worker_pid = $2 WHERE job = $1",
				  2, types, args, SPI_OK_UPDATE);
		if (SPI_execute_with_args("SELECT m.move, m.table_name::pg_catalog.text, m.partition_class,"
								  " m.from_server, m.to_server, j.mode"
								  " FROM colojoin.rebalance_moves m JOIN colojoin.rebalance_jobs j USING (job)"
								  " WHERE m.job = $1 AND m.state IN ('planned', 'moving') ORDER BY m.move LIMIT 1",
								  1, types, args, NULL, false, 1) != SPI_OK_SELECT)
			elog(ERROR, "colojoin: could not read the rebalance moves");
		if (SPI_processed == 0)
			write_job("rebalance_jobs",
					  "UPDATE colojoin.rebalance_jobs SET state = 'done', finished = pg_catalog.now() WHERE job = $1",
					  1, types, args, SPI_OK_UPDATE);
		else
		{
			HeapTuple	tup = SPI_tuptable->vals[0];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			MemoryContext old = MemoryContextSwitchTo(cxt);

			next = palloc(sizeof(NextMove));
			next->move = atoi(SPI_getvalue(tup, desc, 1));
			next->table = pstrdup(SPI_getvalue(tup, desc, 2));
			next->cls = pstrdup(SPI_getvalue(tup, desc, 3));
			next->from = pstrdup(SPI_getvalue(tup, desc, 4));
			next->to = pstrdup(SPI_getvalue(tup, desc, 5));
			next->mode = pstrdup(SPI_getvalue(tup, desc, 6));
			MemoryContextSwitchTo(old);
			args[1] = Int32GetDatum(next->move);
			write_job("rebalance_moves",
					  "UPDATE colojoin.rebalance_moves SET state = 'moving',"
					  " started = pg_catalog.now(), error = NULL WHERE job = $1 AND move = $2",
					  2, types, args, SPI_OK_UPDATE);
		}
	}
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	return next;
}

/* the move and its row's 'done' commit together */
static void
run_move(int64 job, NextMove *m)
{
	Oid			types[5] = {TEXTOID, INT4OID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[5];
	Oid			donetypes[3] = {INT8OID, INT4OID, INT8OID};
	Datum		doneargs[3];
	char	   *rows;

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING,
							psprintf("colojoin rebalance job " INT64_FORMAT ": move %d, class %s of %s from %s to %s",
									 job, m->move, m->cls, m->table, m->from, m->to));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	args[0] = CStringGetTextDatum(m->table);
	args[1] = Int32GetDatum(atoi(m->cls));
	args[2] = CStringGetTextDatum(m->to);
	args[3] = CStringGetTextDatum(m->mode);
	args[4] = CStringGetTextDatum(m->from);
	rows = spi_value("SELECT colojoin.move_class($1::pg_catalog.regclass, $2, $3::pg_catalog.name, $4,"
					 " $5::pg_catalog.name)", 5, types, args);
	doneargs[0] = Int64GetDatum(job);
	doneargs[1] = Int32GetDatum(m->move);
	doneargs[2] = Int64GetDatum(rows ? strtoll(rows, NULL, 10) : 0);
	write_job("rebalance_moves",
			  "UPDATE colojoin.rebalance_moves SET state = 'done', finished = pg_catalog.now(),"
			  " moved_rows = $3 WHERE job = $1 AND move = $2",
			  3, donetypes, doneargs, SPI_OK_UPDATE);
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
}

/* the move failed or was cancelled: record it, end the job */
static void
record_failure(int64 job, NextMove *m, ErrorData *edata)
{
	bool		cancelled = (edata->sqlerrcode == ERRCODE_QUERY_CANCELED);
	Oid			types[3] = {INT8OID, INT4OID, TEXTOID};
	Datum		args[3];

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	args[0] = Int64GetDatum(job);
	args[1] = Int32GetDatum(m->move);
	args[2] = CStringGetTextDatum(edata->message ? edata->message : "unknown error");
	write_job("rebalance_moves",
			  cancelled ?
			  "UPDATE colojoin.rebalance_moves SET state = 'cancelled', finished = pg_catalog.now(),"
			  " error = $3 WHERE job = $1 AND move = $2" :
			  "UPDATE colojoin.rebalance_moves SET state = 'failed', finished = pg_catalog.now(),"
			  " error = $3 WHERE job = $1 AND move = $2",
			  3, types, args, SPI_OK_UPDATE);
	write_job("rebalance_jobs",
			  cancelled ?
			  "UPDATE colojoin.rebalance_jobs SET state = 'cancelled', finished = pg_catalog.now()"
			  " WHERE job = $1" :
			  "UPDATE colojoin.rebalance_jobs SET state = 'failed', finished = pg_catalog.now(), error = $3"
			  " WHERE job = $1",
			  3, types, args, SPI_OK_UPDATE);
	write_job("rebalance_moves",
			  "UPDATE colojoin.rebalance_moves SET state = 'cancelled' WHERE job = $1 AND state = 'planned'",
			  3, types, args, SPI_OK_UPDATE);
	PopActiveSnapshot();
	CommitTransactionCommand();
}

/*
 * cj_rebalance_worker_main
 *		The worker of one job (bgw_main_arg), as the role that started it.
 */
void
cj_rebalance_worker_main(Datum main_arg)
{
	int64		job = DatumGetInt64(main_arg);
	RebalanceArgs args;
	MemoryContext cxt;

	memcpy(&args, MyBgworkerEntry->bgw_extra, sizeof(args));
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(args.dboid, args.roleid, 0);
	pgstat_report_appname("colojoin rebalance");
	cxt = AllocSetContextCreate(TopMemoryContext, "colojoin rebalance",
								ALLOCSET_DEFAULT_SIZES);

	/* the job's transaction has ended once its lock is free */
	StartTransactionCommand();
	SetConfigOption("statement_timeout", "0", PGC_USERSET, PGC_S_SESSION);
	job_lock(job);
	CommitTransactionCommand();

	for (;;)
	{
		NextMove   *m;

		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(cxt);
		m = next_move(job, cxt);
		if (m == NULL)
			break;
		PG_TRY();
		{
			run_move(job, m);
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			FlushErrorState();
			AbortCurrentTransaction();
			pgstat_report_activity(STATE_IDLE, NULL);
			ereport(LOG,
					(errmsg("colojoin rebalance job " INT64_FORMAT ": move %d (class %s of %s from %s to %s) failed: %s",
							job, m->move, m->cls, m->table, m->from, m->to, edata->message)));
			record_failure(job, m, edata);
			proc_exit(0);
		}
		PG_END_TRY();
	}
	proc_exit(0);
}
