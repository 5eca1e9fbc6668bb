/*-------------------------------------------------------------------------
 *
 * progress.c
 *	  How far along colojoin's long operations are: a row per session in
 *	  colojoin.progress (create_shards, drop_shards, repair_placement: the
 *	  operation, its table, its phase, units done and in all, since when),
 *	  and a NOTICE at most every colojoin.progress_notice_interval.
 *
 *	  The rows live in shared memory (with colojoin in
 *	  shared_preload_libraries), one slot per backend, written only by its
 *	  own backend under one LWLock held for a copy; without it only the
 *	  NOTICEs are given.  A transaction abort clears the slot, so an
 *	  operation that failed leaves no row behind.
 *
 *	  Reports what the operations tell it; runs none of them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "access/xact.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "operations/progress.h"

#define CJ_PROGRESS_TRANCHE "colojoin progress"

typedef struct ProgressSlot
{
	int			pid;			/* 0: no operation */
	Oid			dbid;
	Oid			relid;
	char		command[32];
	char		phase[64];
	int64		done;
	int64		total;
	TimestampTz started;
} ProgressSlot;

typedef struct ProgressShared
{
	LWLock	   *lock;
	int			nslots;
	ProgressSlot slots[FLEXIBLE_ARRAY_MEMBER];
} ProgressShared;

int			colojoin_progress_notice_interval = 5000;

static ProgressShared *progress = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* this backend's operation, also without shared memory */
static ProgressSlot mine;
static TimestampTz last_notice = 0;
static bool callback_registered = false;

PG_FUNCTION_INFO_V1(colojoin_progress_info);

static Size
progress_size(void)
{
	return add_size(offsetof(ProgressShared, slots),
					mul_size(MaxBackends, sizeof(ProgressSlot)));
}

static void
progress_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(progress_size());
	RequestNamedLWLockTranche(CJ_PROGRESS_TRANCHE, 1);
}

static void
progress_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	progress = ShmemInitStruct(CJ_PROGRESS_TRANCHE, progress_size(), &found);
	if (!found)
	{
		memset(progress, 0, progress_size());
		progress->lock = &(GetNamedLWLockTranche(CJ_PROGRESS_TRANCHE))->lock;
		progress->nslots = MaxBackends;
	}
	LWLockRelease(AddinShmemInitLock);
}

/* mine, copied into this backend's shared slot */
static void
publish(void)
{
	if (progress == NULL || MyBackendId == InvalidBackendId ||
		MyBackendId > progress->nslots)
		return;
	LWLockAcquire(progress->lock, LW_EXCLUSIVE);
	memcpy(&progress->slots[MyBackendId - 1], &mine, sizeof(ProgressSlot));
	LWLockRelease(progress->lock);
}

/* a NOTICE when the interval passed since the start or the last one */
static void
maybe_notice(void)
{
	TimestampTz now = GetCurrentTimestamp();

	if (colojoin_progress_notice_interval < 0 || mine.pid == 0)
		return;
	if (!TimestampDifferenceExceeds(last_notice, now,
									colojoin_progress_notice_interval))
		return;
	last_notice = now;
	if (mine.total > 0)
		ereport(NOTICE,
				(errmsg("colojoin: %s%s%s: %s, %lld of %lld",
						mine.command,
						OidIsValid(mine.relid) ? " of " : "",
						OidIsValid(mine.relid) ? get_rel_name(mine.relid) : "",
						mine.phase, (long long) mine.done, (long long) mine.total)));
	else
		ereport(NOTICE,
				(errmsg("colojoin: %s%s%s: %s",
						mine.command,
						OidIsValid(mine.relid) ? " of " : "",
						OidIsValid(mine.relid) ? get_rel_name(mine.relid) : "",
						mine.phase)));
}

static void
progress_xact_callback(XactEvent event, void *arg)
{
	if ((event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT) &&
		mine.pid != 0)
		cj_progress_end();
}

/*
 * cj_progress_begin
 *		This session starts command on relid: its first phase, of total
 *		units (0 when not counted).
 */
void
cj_progress_begin(const char *command, Oid relid, const char *phase,
				  int64 total)
{
	if (!callback_registered)
	{
		RegisterXactCallback(progress_xact_callback, NULL);
		callback_registered = true;
	}
	memset(&mine, 0, sizeof(mine));
	mine.pid = MyProcPid;
	mine.dbid = MyDatabaseId;
	mine.relid = relid;
	strlcpy(mine.command, command, sizeof(mine.command));
	strlcpy(mine.phase, phase, sizeof(mine.phase));
	mine.total = total;
	mine.started = GetCurrentTimestamp();
	last_notice = mine.started;
	publish();
}

/* a new phase of total units, none done */
void
cj_progress_phase(const char *phase, int64 total)
{
	if (mine.pid == 0)
		return;
	strlcpy(mine.phase, phase, sizeof(mine.phase));
	mine.done = 0;
	mine.total = total;
	publish();
	maybe_notice();
}

/* n more units of the phase done */
void
cj_progress_advance(int64 n)
{
	if (mine.pid == 0)
		return;
	mine.done += n;
	publish();
	maybe_notice();
}

/* the operation is over (or failed): its row goes */
void
cj_progress_end(void)
{
	if (mine.pid == 0)
		return;
	memset(&mine, 0, sizeof(mine));
	publish();
}

/* colojoin.progress: the operations of this database's sessions */
Datum
colojoin_progress_info(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	if (progress == NULL)
	{
		/* no shared memory: this session's own operation is all there is */
		return (Datum) 0;
	}
	LWLockAcquire(progress->lock, LW_SHARED);
	for (i = 0; i < progress->nslots; i++)
	{
		ProgressSlot s;
		Datum		values[8];
		bool		nulls[8];

		memcpy(&s, &progress->slots[i], sizeof(s));
		if (s.pid == 0 || s.dbid != MyDatabaseId)
			continue;
		memset(nulls, false, sizeof(nulls));
		values[0] = Int32GetDatum(s.pid);
		values[1] = CStringGetTextDatum(s.command);
		if (OidIsValid(s.relid))
			values[2] = ObjectIdGetDatum(s.relid);
		else
			nulls[2] = true;
		values[3] = CStringGetTextDatum(s.phase);
		values[4] = Int64GetDatum(s.done);
		if (s.total > 0)
			values[5] = Int64GetDatum(s.total);
		else
			nulls[5] = true;
		values[6] = TimestampTzGetDatum(s.started);
		if (s.total > 0)
			values[7] = Float8GetDatum(100.0 * s.done / s.total);
		else
			nulls[7] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(progress->lock);
	return (Datum) 0;
}

void
cj_progress_init(void)
{
	DefineCustomIntVariable("colojoin.progress_notice_interval",
							"How often a long colojoin operation says in a NOTICE how far it is.",
							"-1 never; 0 at every step.",
							&colojoin_progress_notice_interval,
							5000, -1, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = progress_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = progress_shmem_startup;
}
