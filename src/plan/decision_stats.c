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
#include "utils/builtins.h"
#include "utils/guc.h"

#include "plan/decision_stats.h"
#include "util/shared_table.h"

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

static CjSharedTable decisions = {
	"colojoin decisions", 0, sizeof(DecisionKey), sizeof(DecisionEntry)
};

PG_FUNCTION_INFO_V1(colojoin_decisions);
PG_FUNCTION_INFO_V1(colojoin_decisions_reset);

bool
cj_decisions_enabled(void)
{
	return decisions.htab != NULL;
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

	if (decisions.htab == NULL || queryid == UINT64CONST(0))
		return;
	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	key.queryid = queryid;
	LWLockAcquire(decisions.lock, LW_EXCLUSIVE);
	e = cj_shared_table_enter(&decisions, &key,
							  offsetof(DecisionEntry, last_seen), &found);
	if (e != NULL)
	{
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
	LWLockRelease(decisions.lock);
}

Datum
colojoin_decisions(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HASH_SEQ_STATUS status;
	DecisionEntry *e;

	InitMaterializedSRF(fcinfo, 0);
	if (decisions.htab == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("colojoin.decisions needs colojoin in shared_preload_libraries"),
				 errhint("Add colojoin to shared_preload_libraries and restart the server.")));
	LWLockAcquire(decisions.lock, LW_SHARED);
	hash_seq_init(&status, decisions.htab);
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
	LWLockRelease(decisions.lock);
	return (Datum) 0;
}

Datum
colojoin_decisions_reset(PG_FUNCTION_ARGS)
{
	HASH_SEQ_STATUS status;
	DecisionEntry *e;

	if (decisions.htab == NULL)
		PG_RETURN_VOID();
	LWLockAcquire(decisions.lock, LW_EXCLUSIVE);
	hash_seq_init(&status, decisions.htab);
	while ((e = hash_seq_search(&status)) != NULL)
		hash_search(decisions.htab, &e->key, HASH_REMOVE, NULL);
	LWLockRelease(decisions.lock);
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

	/*
	 * The query id is PostgreSQL's (compute_query_id, or pg_stat_statements
	 * asking for it): turning it on here would change what EXPLAIN VERBOSE
	 * prints for everyone, colojoin's tables or not.
	 */
	decisions.nentries = colojoin_decisions_max;
	cj_shared_table_register(&decisions);
}
