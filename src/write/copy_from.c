/*-------------------------------------------------------------------------
 *
 * copy_from.c
 *	  COPY ... FROM into a sharded table, through colojoin's write path.
 *
 *	  PostgreSQL reads and converts the input (COPY's own parser, options,
 *	  defaults of columns left out); each row is then routed to its leaf
 *	  and sent in COPY batches to every placement of it (insert_route.c),
 *	  on the transaction's write connections, so replicas stay equal to
 *	  their primaries and later joins of the transaction see the rows.
 *
 *	  COPY that colojoin does not take (a WHERE clause, FREEZE, a file the
 *	  user may not read, tables colojoin does not write) goes on to
 *	  PostgreSQL unchanged, and from there to postgres_fdw and the write
 *	  guard.  This file does not route rows itself.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "commands/copy.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "parser/parse_node.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/rel.h"

#include "plan/scan_plan.h"
#include "remote/connection.h"
#include "util/extension.h"
#include "util/settings.h"
#include "util/fdw_writes.h"
#include "write/insert_route.h"
#include "write/modify.h"
#include "write/row_writes.h"

static ProcessUtility_hook_type prev_process_utility = NULL;

/* whether colojoin takes this COPY (the checks PostgreSQL would pass) */
static bool
copy_is_ours(CopyStmt *stmt, Oid *relid)
{
	ListCell   *lc;

	if (!stmt->is_from || stmt->relation == NULL || stmt->query != NULL ||
		stmt->whereClause != NULL || cj_xact_wrote_to_shards())
		return false;
	foreach(lc, stmt->options)
	{
		DefElem    *d = (DefElem *) lfirst(lc);

		if (strcmp(d->defname, "freeze") == 0)
			return false;
	}
	if (stmt->filename != NULL &&
		!has_privs_of_role(GetUserId(), stmt->is_program ?
						   ROLE_PG_EXECUTE_SERVER_PROGRAM :
						   ROLE_PG_READ_SERVER_FILES))
		return false;
	*relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (!OidIsValid(*relid) || !cj_write_target(*relid, NULL))
		return false;

	/* column privileges and the like: PostgreSQL's path says it best */
	if (pg_class_aclcheck(*relid, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
		return false;
	return true;
}

static uint64
copy_into_shards(ParseState *pstate, CopyStmt *stmt, Oid relid)
{
	Relation	rel = table_open(relid, RowExclusiveLock);
	EState	   *estate = CreateExecutorState();
	ExprContext *econtext = GetPerTupleExprContext(estate);
	TupleTableSlot *slot = MakeSingleTupleTableSlot(RelationGetDescr(rel),
													&TTSOpsVirtual);
	CopyFromState cstate;
	CjRouter   *router;
	uint64		rows;

	PreventCommandIfReadOnly("COPY FROM");
	cstate = BeginCopyFrom(pstate, rel, NULL, stmt->filename,
						   stmt->is_program, NULL, stmt->attlist,
						   stmt->options);
	router = cj_router_begin(relid, GetUserId(), NIL, 0, NULL, NULL, NULL);
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		ResetPerTupleExprContext(estate);
		ExecClearTuple(slot);
		if (!NextCopyFrom(cstate, econtext, slot->tts_values, slot->tts_isnull))
			break;
		ExecStoreVirtualTuple(slot);
		cj_router_put(router, slot);
	}
	rows = cj_router_end(router);
	EndCopyFrom(cstate);
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	table_close(rel, NoLock);
	return rows;
}

static void
cj_copy_process_utility(PlannedStmt *pstmt, const char *queryString,
						bool readOnlyTree, ProcessUtilityContext context,
						ParamListInfo params, QueryEnvironment *queryEnv,
						DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	Oid			relid;
	void	   *volatile loan = NULL;

	if (IsA(parsetree, CopyStmt) && colojoin_is_active() &&
		copy_is_ours((CopyStmt *) parsetree, &relid))
	{
		ParseState *pstate = make_parsestate(NULL);
		uint64		rows;

		pstate->p_sourcetext = queryString;
		pstate->p_queryEnv = queryEnv;
		rows = copy_into_shards(pstate, (CopyStmt *) parsetree, relid);
		free_parsestate(pstate);
		if (qc)
			SetQueryCompletion(qc, CMDTAG_COPY, rows);
		return;
	}

	/*
	 * A COPY colojoin does not route itself (WHERE, FREEZE, a leaf named
	 * directly): PostgreSQL routes its rows, colojoin's callbacks write
	 * them (row_writes.c).
	 */
	if (IsA(parsetree, CopyStmt) && colojoin_enable && colojoin_enable_writes &&
		colojoin_is_active() && ((CopyStmt *) parsetree)->is_from &&
		((CopyStmt *) parsetree)->relation != NULL &&
		!cj_xact_wrote_to_shards() &&
		OidIsValid(relid = RangeVarGetRelid(((CopyStmt *) parsetree)->relation,
											RowExclusiveLock, true)))
		loan = cj_row_writes_lend(relid);
	PG_TRY();
	{
		if (prev_process_utility)
			prev_process_utility(pstmt, queryString, readOnlyTree, context,
								 params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
		cj_row_writes_give_back(loan);
	}
	PG_END_TRY();
}

/* must run after the other ProcessUtility hooks are installed: it goes first */
void
cj_copy_from_init(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = cj_copy_process_utility;
}
