/*-------------------------------------------------------------------------
 *
 * decision_stats.c
 *	  colojoin.decisions: for each query id (PostgreSQL's queryid, as
 *	  pg_stat_statements computes it), how often it was planned, how often
 *	  by each strategy, how often nothing of it ran on the nodes, and the
 *	  first reason in the decision log's words, with when it was last seen.
 *
 *	  With colojoin in shared_preload_libraries only, for queries that have
 *	  a query id (compute_query_id = on, or auto with pg_stat_statements
 *	  loaded): a fixed number of
 *	  entries (colojoin.decisions_max) in shared memory under one LWLock,
 *	  taken exclusively once per planning of a query that came near a table
 *	  of colojoin's, for the time of a hash lookup; when full, the entry
 *	  seen longest ago makes room.  colojoin.decisions_reset() empties it.
 *
 *	  Counts what decision_log.c summarises; decides nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "plan/decision_stats.h"

#define CJ_DECISIONS_TRANCHE "colojoin decisions"
#define CJ_REASON_LEN 160

typedef struct DecisionKey
{
	Oid			dbid;
	uint64		queryid;
} DecisionKey;

typedef struct DecisionEntry
{
	DecisionKey key;
	int64		plans;
	int64		colocated;
	int64		redistributed;
	int64		broadcast;
	int64		dual_repartition;
	int64		steps_on_nodes;
	int64		left_to_postgresql;
	char		reason[CJ_REASON_LEN];	/* the first reason, "" for none */
	TimestampTz last_seen;
} DecisionEntry;

int			colojoin_decisions_max = 1000;

static HTAB *decisions = NULL;
static LWLock *decisions_lock = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

PG_FUNCTION_INFO_V1(colojoin_decisions);
PG_FUNCTION_INFO_V1(colojoin_decisions_reset);

static void
decisions_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(hash_estimate_size(colojoin_decisions_max,
											  sizeof(DecisionEntry)));
	RequestNamedLWLockTranche(CJ_DECISIONS_TRANCHE, 1);
}

static void
decisions_shmem_startup(void)
{
	HASHCTL		info;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(DecisionKey);
	info.entrysize = sizeof(DecisionEntry);
	decisions = ShmemInitHash(CJ_DECISIONS_TRANCHE, colojoin_decisions_max,
							  colojoin_decisions_max, &info,
							  HASH_ELEM | HASH_BLOBS);
	decisions_lock = &(GetNamedLWLockTranche(CJ_DECISIONS_TRANCHE))->lock;
	LWLockRelease(AddinShmemInitLock);
}

bool
cj_decisions_enabled(void)
{
	return decisions != NULL;
}

/* the entry seen longest ago, removed; the lock held exclusively */
static void
evict_oldest(void)
{
	HASH_SEQ_STATUS status;
	DecisionEntry *e;
	DecisionKey oldest;
	TimestampTz when = 0;
	bool		any = false;

	hash_seq_init(&status, decisions);
	while ((e = hash_seq_search(&status)) != NULL)
		if (!any || e->last_seen < when)
		{
			oldest = e->key;
			when = e->last_seen;
			any = true;
		}
	if (any)
		hash_search(decisions, &oldest, HASH_REMOVE, NULL);
}

/*
 * cj_decisions_record
 *		Counts one planning of query queryid that went as s says.
 */
void
cj_decisions_record(uint64 queryid, const CjDecisionSummary *s)
{
	DecisionKey key;
	DecisionEntry *e;
	bool		found;
	TimestampTz now = GetCurrentTimestamp();

	if (decisions == NULL || queryid == UINT64CONST(0))
		return;
	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	key.queryid = queryid;
	LWLockAcquire(decisions_lock, LW_EXCLUSIVE);
	e = hash_search(decisions, &key, HASH_ENTER_NULL, &found);
	if (e == NULL)
	{
		evict_oldest();
		e = hash_search(decisions, &key, HASH_ENTER_NULL, &found);
	}
	if (e != NULL)
	{
		if (!found)
		{
			memset((char *) e + sizeof(DecisionKey), 0,
				   sizeof(DecisionEntry) - sizeof(DecisionKey));
		}
		e->plans++;
		e->colocated += s->colocated;
		e->redistributed += s->redistributed;
		e->broadcast += s->broadcast;
		e->dual_repartition += s->dual_repartition;
		e->steps_on_nodes += s->steps_on_nodes;
		e->left_to_postgresql += s->left_to_postgresql;
		if (e->reason[0] == '\0' && s->reason != NULL)
			strlcpy(e->reason, s->reason, sizeof(e->reason));
		e->last_seen = now;
	}
	LWLockRelease(decisions_lock);
}

Datum
colojoin_decisions(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HASH_SEQ_STATUS status;
	DecisionEntry *e;

	InitMaterializedSRF(fcinfo, 0);
	if (decisions == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("colojoin.decisions needs colojoin in shared_preload_libraries"),
				 errhint("Add colojoin to shared_preload_libraries and restart the server.")));
	LWLockAcquire(decisions_lock, LW_SHARED);
	hash_seq_init(&status, decisions);
	while ((e = hash_seq_search(&status)) != NULL)
	{
		Datum		values[10];
		bool		nulls[10];

		if (e->key.dbid != MyDatabaseId)
			continue;
		memset(nulls, false, sizeof(nulls));
		values[0] = Int64GetDatum((int64) e->key.queryid);
		values[1] = Int64GetDatum(e->plans);
		values[2] = Int64GetDatum(e->colocated);
		values[3] = Int64GetDatum(e->redistributed);
		values[4] = Int64GetDatum(e->broadcast);
		values[5] = Int64GetDatum(e->dual_repartition);
		values[6] = Int64GetDatum(e->steps_on_nodes);
		values[7] = Int64GetDatum(e->left_to_postgresql);
		if (e->reason[0] != '\0')
			values[8] = CStringGetTextDatum(e->reason);
		else
			nulls[8] = true;
		values[9] = TimestampTzGetDatum(e->last_seen);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(decisions_lock);
	return (Datum) 0;
}

Datum
colojoin_decisions_reset(PG_FUNCTION_ARGS)
{
	HASH_SEQ_STATUS status;
	DecisionEntry *e;

	if (decisions == NULL)
		PG_RETURN_VOID();
	LWLockAcquire(decisions_lock, LW_EXCLUSIVE);
	hash_seq_init(&status, decisions);
	while ((e = hash_seq_search(&status)) != NULL)
		hash_search(decisions, &e->key, HASH_REMOVE, NULL);
	LWLockRelease(decisions_lock);
	PG_RETURN_VOID();
}

void
cj_decision_stats_init(void)
{
	/* a setting of server start exists only where it can take effect */
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomIntVariable("colojoin.decisions_max",
							"How many queries colojoin.decisions keeps counts of.",
							"Needs colojoin in shared_preload_libraries; 0 turns the counting off.",
							&colojoin_decisions_max,
							1000, 0, INT_MAX / 1024,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	if (colojoin_decisions_max <= 0)
		return;

	/*
	 * The query id is PostgreSQL's (compute_query_id, or pg_stat_statements
	 * asking for it): turning it on here would change what EXPLAIN VERBOSE
	 * prints for everyone, colojoin's tables or not.
	 */
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = decisions_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = decisions_shmem_startup;
}
