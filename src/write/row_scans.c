/*-------------------------------------------------------------------------
 *
 * row_scans.c
 *	  The scans of colojoin's foreign data wrapper callbacks for its
 *	  leaves (row_writes.c): postgres_fdw's remote SELECT, planned by
 *	  postgres_fdw and marked as colojoin's, run as a cursor on the
 *	  transaction's write connection of the node, so that the rows a row
 *	  write changes are read and locked in the remote transaction that
 *	  changes them, and reads after a write see it.
 *
 *	  It does not change rows (row_writes.c) nor decide which plans use
 *	  these callbacks (row_writes.c, modify.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/sysattr.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "deparse/deparse.h"
#include "remote/connection.h"
#include "write/row_writes_internal.h"

static int	cursor_counter = 0;

/* ---------------------------------------------------------------------
 * Scans
 * ---------------------------------------------------------------------
 */

typedef struct RowScan
{
	CjConnection *conn;
	Oid			serverid;
	Oid			userid;
	char	   *sql;			/* postgres_fdw's SELECT */
	List	   *retrieved;		/* attnos of its columns */
	int			fetch_size;
	char		cursor[64];
	bool		declared;
	bool		eof;
	bool		locking;		/* FOR UPDATE: its cursor runs forward only */
	PGresult   *res;
	int			next_row;
	List	   *param_states;	/* ExprState of each $n */
	List	   *param_types;
	MemoryContext batch_cxt;
	char	   *context;
} RowScan;

static void declare_cursor(ForeignScanState *node, RowScan *st);

/*
 * The write connection again before each command: a colojoin scan of the
 * same statement may have a command in flight there, which this reads to
 * its end first (connection.c).
 */
static CjConnection *
scan_conn(RowScan *st)
{
	st->conn = cj_get_write_connection(st->serverid, st->userid);
	return st->conn;
}

static Oid
scan_server(Relation rel)
{
	return GetForeignTable(RelationGetRelid(rel))->serverid;
}

static Oid
scan_user(ForeignScan *fs, EState *estate)
{
	RangeTblEntry *rte = exec_rt_fetch(fs->scan.scanrelid, estate);

	return OidIsValid(rte->checkAsUser) ? rte->checkAsUser : GetUserId();
}

void
cj_rw_begin_scan(ForeignScanState *node, int eflags)
{
	ForeignScan *fs = (ForeignScan *) node->ss.ps.plan;
	Relation	rel = node->ss.ss_currentRelation;
	RowScan    *st;
	ListCell   *lc;

	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	st = palloc0(sizeof(RowScan));
	st->sql = strVal(list_nth(fs->fdw_private, 0));
	st->retrieved = (List *) list_nth(fs->fdw_private, 1);
	st->fetch_size = intVal(list_nth(fs->fdw_private, 2));
	if (st->fetch_size <= 0)
		st->fetch_size = 100;
	st->locking = (strstr(st->sql, " FOR UPDATE") != NULL ||
				   strstr(st->sql, " FOR SHARE") != NULL);
	st->context = psprintf("partition %s", RelationGetRelationName(rel));
	st->serverid = scan_server(rel);
	st->userid = scan_user(fs, node->ss.ps.state);
	st->conn = cj_get_write_connection(st->serverid, st->userid);
	st->param_states = ExecInitExprList(fs->fdw_exprs, (PlanState *) node);
	foreach(lc, fs->fdw_exprs)
		st->param_types = lappend_oid(st->param_types,
									  exprType((Node *) lfirst(lc)));
	st->batch_cxt = AllocSetContextCreate(node->ss.ps.state->es_query_cxt,
										  "colojoin row scan",
										  ALLOCSET_DEFAULT_SIZES);
	node->fdw_state = st;

	/*
	 * The cursor takes its snapshot now, before the statement changes any
	 * row: a row it moves into a partition scanned later is not found
	 * again there (PostgreSQL's scans all read the statement's snapshot).
	 */
	if (fs->fdw_exprs == NIL)
		declare_cursor(node, st);
}

static void
declare_cursor(ForeignScanState *node, RowScan *st)
{
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	int			nparams = list_length(st->param_states);
	const char **values = palloc0(Max(nparams, 1) * sizeof(char *));
	ListCell   *lc;
	ListCell   *lt;
	int			i = 0;
	int			level = cj_pin_node_output_settings();
	char	   *sql;
	PGresult   *res;

	forboth(lc, st->param_states, lt, st->param_types)
	{
		bool		isnull;
		Datum		v = ExecEvalExpr((ExprState *) lfirst(lc), econtext, &isnull);

		values[i++] = isnull ? NULL : cj_rw_value_text(v, lfirst_oid(lt));
	}
	AtEOXact_GUC(true, level);
	snprintf(st->cursor, sizeof(st->cursor), "colojoin_row_%d", ++cursor_counter);
	sql = psprintf("DECLARE %s CURSOR FOR %s", st->cursor, st->sql);
	cj_conn_send_params(scan_conn(st), sql, nparams, values, st->context);
	res = cj_conn_collect(st->conn, sql, st->context);
	PQclear(res);
	st->declared = true;
	st->eof = false;
}

TupleTableSlot *
cj_rw_iterate_scan(ForeignScanState *node)
{
	RowScan    *st = (RowScan *) node->fdw_state;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
	TupleDesc	desc = RelationGetDescr(node->ss.ss_currentRelation);
	Datum	   *values;
	bool	   *nulls;
	ItemPointerData ctid;
	bool		has_ctid = false;
	HeapTuple	tuple;
	MemoryContext old;
	ListCell   *lc;
	int			col = 0;

	ExecClearTuple(slot);
	if (!st->declared)
		declare_cursor(node, st);
	if (st->res == NULL || st->next_row >= PQntuples(st->res))
	{
		char	   *sql;

		if (st->res)
			PQclear(st->res);
		st->res = NULL;
		MemoryContextReset(st->batch_cxt);
		if (st->eof)
			return slot;
		sql = psprintf("FETCH %d FROM %s", st->fetch_size, st->cursor);
		st->res = cj_exec_query(scan_conn(st), sql, st->context);
		pfree(sql);
		st->next_row = 0;
		if (PQntuples(st->res) < st->fetch_size)
			st->eof = true;
		if (PQntuples(st->res) == 0)
			return slot;
	}

	old = MemoryContextSwitchTo(st->batch_cxt);
	values = palloc0(desc->natts * sizeof(Datum));
	nulls = palloc(desc->natts * sizeof(bool));
	memset(nulls, true, desc->natts * sizeof(bool));
	foreach(lc, st->retrieved)
	{
		int			attno = lfirst_int(lc);
		char	   *text = PQgetisnull(st->res, st->next_row, col) ? NULL :
			PQgetvalue(st->res, st->next_row, col);

		col++;
		if (attno > 0 && text != NULL)
		{
			Form_pg_attribute att = TupleDescAttr(desc, attno - 1);
			Oid			in;
			Oid			ioparam;

			getTypeInputInfo(att->atttypid, &in, &ioparam);
			values[attno - 1] = OidInputFunctionCall(in, text, ioparam,
													 att->atttypmod);
			nulls[attno - 1] = false;
		}
		else if (attno == SelfItemPointerAttributeNumber && text != NULL)
		{
			ctid = *(ItemPointer) DatumGetPointer(DirectFunctionCall1(tidin,
															CStringGetDatum(text)));
			has_ctid = true;
		}
	}
	tuple = heap_form_tuple(desc, values, nulls);
	if (has_ctid)
		tuple->t_self = ctid;
	tuple->t_tableOid = RelationGetRelid(node->ss.ss_currentRelation);
	MemoryContextSwitchTo(old);
	st->next_row++;
	ExecStoreHeapTuple(tuple, slot, false);
	return slot;
}

static void
close_cursor(RowScan *st)
{
	if (st->res)
		PQclear(st->res);
	st->res = NULL;
	if (st->declared)
	{
		char	   *sql = psprintf("CLOSE %s", st->cursor);

		cj_exec_command(scan_conn(st), sql, st->context);
		pfree(sql);
	}
	st->declared = false;
	st->eof = false;
}

void
cj_rw_rescan(ForeignScanState *node)
{
	RowScan    *st = (RowScan *) node->fdw_state;

	if (st == NULL)
		return;

	/* the same rows again: rewind, keeping the cursor's snapshot */
	if (st->declared && node->ss.ps.chgParam == NULL && !st->locking)
	{
		char	   *sql = psprintf("MOVE BACKWARD ALL IN %s", st->cursor);

		if (st->res)
			PQclear(st->res);
		st->res = NULL;
		st->eof = false;
		cj_exec_command(scan_conn(st), sql, st->context);
		pfree(sql);
		return;
	}
	close_cursor(st);
}

void
cj_rw_end_scan(ForeignScanState *node)
{
	RowScan    *st = (RowScan *) node->fdw_state;

	if (st != NULL)
		close_cursor(st);
}

void
cj_rw_explain_scan(ForeignScanState *node, ExplainState *es)
{
	ForeignScan *fs = (ForeignScan *) node->ss.ps.plan;

	if (es->verbose)
		ExplainPropertyText("Remote SQL", strVal(list_nth(fs->fdw_private, 0)),
							es);
	ExplainPropertyText("Colojoin", "row by row on the write connection", es);
}

ForeignScan *
cj_rw_get_plan(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid,
			ForeignPath *best_path, List *tlist, List *scan_clauses,
			Plan *outer_plan)
{
	ForeignScan *fs = cj_rw_pg_routine->GetForeignPlan(root, baserel, foreigntableid,
												 best_path, tlist,
												 scan_clauses, outer_plan);

	/*
	 * The mark goes last: postgres_fdw reads its list by position, should
	 * its own callbacks ever see this plan.
	 */
	while (list_length(fs->fdw_private) < 4)
		fs->fdw_private = lappend(fs->fdw_private, makeString(""));
	fs->fdw_private = lappend(fs->fdw_private, makeString(ROW_WRITES_MARK));
	return fs;
}
