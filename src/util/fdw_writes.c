/*-------------------------------------------------------------------------
 *
 * fdw_writes.c
 *	  Whether the current transaction wrote to a foreign or partitioned
 *	  table through PostgreSQL's own executor (postgres_fdw), COPY FROM or
 *	  TRUNCATE, rather than through colojoin (fdw_writes.h).  postgres_fdw's
 *	  connections do not share colojoin's remote transactions, so from
 *	  then on colojoin's scans would not see those writes: the planner and
 *	  the write layer ask this before they take a statement.
 *
 *	  This file only watches statements end (ExecutorFinish and
 *	  ProcessUtility hooks) and transactions end; it decides nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "executor/executor.h"
#include "nodes/parsenodes.h"
#include "parser/parsetree.h"
#include "tcop/utility.h"
#include "utils/lsyscache.h"

#include "util/fdw_writes.h"

bool		(*cj_statement_is_colojoins) (PlannedStmt *stmt) = NULL;
bool		cj_writes_through_colojoin = false;

/* set once a statement of this transaction has written to a shard */
static bool xact_wrote_to_shards = false;

static ExecutorFinish_hook_type prev_executor_finish = NULL;
static ProcessUtility_hook_type prev_process_utility = NULL;

bool
cj_xact_wrote_to_shards(void)
{
	return xact_wrote_to_shards;
}


/*
 * A foreign partition, or a partitioned table with one below it: what
 * colojoin reads.  Writes of plain tables, partitioned or not, and of
 * foreign tables outside partitioned tables change nothing it reads.
 */
static bool
is_shard_or_sharded(Oid relid)
{
	char		relkind = get_rel_relkind(relid);
	ListCell   *lc;

	if (relkind == RELKIND_FOREIGN_TABLE)
		return get_rel_relispartition(relid);
	if (relkind != RELKIND_PARTITIONED_TABLE)
		return false;
	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
	{
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_FOREIGN_TABLE)
			return true;
	}
	return false;
}

/*
 * Remember that this transaction wrote through postgres_fdw to a foreign or
 * partitioned table once the writing statement has run; from then on the
 * planner leaves joins of shards to PostgreSQL, whose postgres_fdw scans
 * share the writing connection.
 */
static void
note_writes(QueryDesc *queryDesc)
{
	PlannedStmt *stmt = queryDesc->plannedstmt;
	ListCell   *lc;

	if (stmt->commandType == CMD_SELECT && !stmt->hasModifyingCTE)
		return;
	/* colojoin's own connections carried it out */
	if (cj_statement_is_colojoins != NULL && cj_statement_is_colojoins(stmt))
		return;
	foreach(lc, stmt->resultRelations)
	{
		RangeTblEntry *rte = rt_fetch(lfirst_int(lc), stmt->rtable);

		if (is_shard_or_sharded(rte->relid))
			xact_wrote_to_shards = true;
	}
}

static void
cj_executor_finish(QueryDesc *queryDesc)
{
	if (prev_executor_finish)
		prev_executor_finish(queryDesc);
	else
		standard_ExecutorFinish(queryDesc);
	note_writes(queryDesc);
}

static void
cj_process_utility(PlannedStmt *pstmt, const char *queryString,
				   bool readOnlyTree, ProcessUtilityContext context,
				   ParamListInfo params, QueryEnvironment *queryEnv,
				   DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;

	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context,
							 params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);

	/* COPY FROM routes rows to foreign partitions without the executor hooks */
	if (cj_writes_through_colojoin)
		return;
	if (IsA(parsetree, CopyStmt) && ((CopyStmt *) parsetree)->is_from &&
		((CopyStmt *) parsetree)->relation != NULL)
	{
		Oid			relid = RangeVarGetRelid(((CopyStmt *) parsetree)->relation,
											 NoLock, true);
		if (OidIsValid(relid) && is_shard_or_sharded(relid))
			xact_wrote_to_shards = true;
	}
	else if (IsA(parsetree, TruncateStmt))
	{
		ListCell   *lc;

		/* what colojoin truncates itself never comes this far */
		foreach(lc, ((TruncateStmt *) parsetree)->relations)
		{
			Oid			relid = RangeVarGetRelid(lfirst_node(RangeVar, lc),
												 NoLock, true);
			char		relkind = OidIsValid(relid) ? get_rel_relkind(relid) : 0;

			if (relkind != 0 && is_shard_or_sharded(relid))
				xact_wrote_to_shards = true;
		}
	}
}

static void
reset_write_tracking(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT || event == XACT_EVENT_PREPARE)
		xact_wrote_to_shards = false;
}

void
cj_fdw_writes_init(void)
{
	prev_executor_finish = ExecutorFinish_hook;
	ExecutorFinish_hook = cj_executor_finish;
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = cj_process_utility;
	RegisterXactCallback(reset_write_tracking, NULL);
}
