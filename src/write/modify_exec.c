/*-------------------------------------------------------------------------
 *
 * modify_exec.c
 *	  Carrying out colojoin's writes (modify.h): the ColojoinModify scan.
 *
 *	  Statements: the remote UPDATE / DELETE of every leaf and placement
 *	  the plan lists run on the transaction's write connection of each
 *	  node, every node at once (one statement per node at a time).  The
 *	  primary placement's count is the statement's; a replica must change
 *	  as many rows as its primary, or the transaction fails before anything
 *	  commits.  Route: the child plan's rows are read to the end first (they
 *	  may come from scans of the same nodes, over the same connections),
 *	  then routed (insert_route.c).  RETURNING rows are kept in a
 *	  tuplestore and returned after the write, projected by ExecScan.
 *
 *	  This file does not decide what to write (modify.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "metadata/metadata.h"
#include "operations/placement_health.h"
#include "remote/connection.h"
#include "remote/row_decode.h"
#include "write/conflict_arbiter.h"
#include "write/insert_route.h"
#include "write/modify.h"

typedef struct CjModifyState
{
	CustomScanState css;
	int			kind;
	Oid			relid;
	const char *verb;
	Oid			userid;
	bool		returning;
	List	   *stmts;
	List	   *conflict;
	bool		done;
	List	   *param_states;
	FmgrInfo   *param_out;
	const char **param_values;
	int			nparams;
	Tuplestorestate *returned;
	uint64		rows;
	List	   *node_names;		/* String, for EXPLAIN ANALYZE */
	List	   *node_rows;		/* int64 * */
	CjRowDecoder decoder;
	TupleTableSlot *read_slot;	/* reads the tuplestore */
	ResultRelInfo *checked;		/* route: the target with the check options
								 * of the views written through, or NULL */
} CjModifyState;

static Node *create_modify_state(CustomScan *cscan);
static void begin_modify(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_modify(CustomScanState *node);
static void end_modify(CustomScanState *node);
static void rescan_modify(CustomScanState *node);
static void explain_modify(CustomScanState *node, List *ancestors,
						   ExplainState *es);

CustomScanMethods cj_modify_scan_methods = {
	.CustomName = "ColojoinModify",
	.CreateCustomScanState = create_modify_state,
};

static CustomExecMethods modify_exec_methods = {
	.CustomName = "ColojoinModify",
	.BeginCustomScan = begin_modify,
	.ExecCustomScan = exec_modify,
	.EndCustomScan = end_modify,
	.ReScanCustomScan = rescan_modify,
	.ExplainCustomScan = explain_modify,
};

static Node *
create_modify_state(CustomScan *cscan)
{
	CjModifyState *st = (CjModifyState *) newNode(sizeof(CjModifyState),
												  T_CustomScanState);

	st->css.methods = &modify_exec_methods;
	return (Node *) st;
}

/*
 * init_checks
 *		The check options of the views an INSERT writes through, ready to
 *		run on each routed row the way PostgreSQL's ModifyTable runs them
 *		(ExecWithCheckOptions: its error, its DETAIL of the failing row).
 */
static void
init_checks(CjModifyState *st, List *checks, Index rti, EState *estate)
{
	ResultRelInfo *rri;
	ListCell   *lc;

	if (checks == NIL)
		return;
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, table_open(st->relid, RowExclusiveLock), rti,
					  NULL, estate->es_instrument);
	rri->ri_WithCheckOptions = checks;
	foreach(lc, checks)
	{
		WithCheckOption *wco = lfirst_node(WithCheckOption, lc);

		rri->ri_WithCheckOptionExprs =
			lappend(rri->ri_WithCheckOptionExprs,
					ExecInitQual((List *) wco->qual, &st->css.ss.ps));
	}
	st->checked = rri;
}

static void
begin_modify(CustomScanState *node, EState *estate, int eflags)
{
	CjModifyState *st = (CjModifyState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *priv = cscan->custom_private;
	ListCell   *lc;
	int			i = 0;

	st->kind = intVal(list_nth(priv, CJ_MODIFY_KIND));
	st->relid = (Oid) intVal(list_nth(priv, CJ_MODIFY_RELID));
	st->verb = strVal(list_nth(priv, CJ_MODIFY_VERB));
	st->userid = (Oid) intVal(list_nth(priv, CJ_MODIFY_USERID));
	if (!OidIsValid(st->userid))
		st->userid = GetUserId();
	st->returning = intVal(list_nth(priv, CJ_MODIFY_RETURNING)) != 0;
	st->stmts = (List *) list_nth(priv, CJ_MODIFY_STMTS);
	st->conflict = (List *) list_nth(priv, CJ_MODIFY_CONFLICT);
	init_checks(st, (List *) list_nth(priv, CJ_MODIFY_CHECKS),
				intVal(list_nth(priv, CJ_MODIFY_RTI)), estate);

	st->nparams = list_length(cscan->custom_exprs);
	st->param_states = ExecInitExprList(cscan->custom_exprs, &node->ss.ps);
	st->param_out = palloc0(sizeof(FmgrInfo) * Max(st->nparams, 1));
	st->param_values = palloc0(sizeof(char *) * Max(st->nparams, 1));
	foreach(lc, cscan->custom_exprs)
	{
		Oid			out;
		bool		varlena;

		getTypeOutputInfo(exprType((Node *) lfirst(lc)), &out, &varlena);
		fmgr_info(out, &st->param_out[i++]);
	}
	if (cscan->custom_plans != NIL)
		node->custom_ps = list_make1(ExecInitNode(linitial(cscan->custom_plans),
												  estate, eflags));
	if (st->returning)
		cj_decoder_init(&st->decoder, node->ss.ss_ScanTupleSlot->tts_tupleDescriptor);
}

static void
evaluate_params(CjModifyState *st)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	ListCell   *lc;
	int			i = 0;

	foreach(lc, st->param_states)
	{
		bool		isnull;
		Datum		value = ExecEvalExpr((ExprState *) lfirst(lc), econtext,
										 &isnull);

		st->param_values[i] = isnull ? NULL :
			OutputFunctionCall(&st->param_out[i], value);
		i++;
	}
}

static void
count_node_rows(CjModifyState *st, const char *node, int64 n)
{
	ListCell   *ln;
	ListCell   *lr;

	forboth(ln, st->node_names, lr, st->node_rows)
	{
		if (strcmp(strVal(lfirst(ln)), node) == 0)
		{
			*(int64 *) lfirst(lr) += n;
			return;
		}
	}
	st->node_names = lappend(st->node_names, makeString(pstrdup(node)));
	st->node_rows = lappend(st->node_rows, palloc0(sizeof(int64)));
	*(int64 *) llast(st->node_rows) = n;
}

/* the rows a RETURNING statement sent back, into the tuplestore */
static void
keep_returned(CjModifyState *st, PGresult *res)
{
	TupleTableSlot *slot = st->css.ss.ss_ScanTupleSlot;
	int			natts = slot->tts_tupleDescriptor->natts;
	int			i,
				col;

	for (i = 0; i < PQntuples(res); i++)
	{
		ExecClearTuple(slot);
		for (col = 0; col < natts && col < PQnfields(res); col++)
		{
			slot->tts_isnull[col] = PQgetisnull(res, i, col);
			slot->tts_values[col] = slot->tts_isnull[col] ? (Datum) 0 :
				cj_decode_value(&st->decoder, res, i, col);
		}
		ExecStoreVirtualTuple(slot);
		tuplestore_puttupleslot(st->returned, slot);
	}
}

/* one leaf's counts: its reference placement's, and what each other did */
typedef struct LeafCount
{
	Oid			leaf;
	int			ref;			/* index of the placement that answers */
	int64		count;			/* its count, -1 until known */
	List	   *others;			/* of [String node, int64 *] */
} LeafCount;

static LeafCount *
leaf_count(List **counts, Oid leaf, bool create)
{
	ListCell   *lc;
	LeafCount  *lcnt;

	foreach(lc, *counts)
	{
		if (((LeafCount *) lfirst(lc))->leaf == leaf)
			return (LeafCount *) lfirst(lc);
	}
	if (!create)
		return NULL;
	lcnt = palloc0(sizeof(LeafCount));
	lcnt->leaf = leaf;
	lcnt->ref = INT_MAX;
	lcnt->count = -1;
	*counts = lappend(*counts, lcnt);
	return lcnt;
}

/* position of server in servers (it is there) */
static int
server_index(List *servers, Oid server)
{
	ListCell   *ls;

	foreach(ls, servers)
	{
		if (lfirst_oid(ls) == server)
			return foreach_current_index(ls);
	}
	return -1;
}

#define STMT_LEAF(s) ((Oid) intVal(list_nth((s), CJ_MSTMT_LEAF)))
#define STMT_SERVER(s) ((Oid) intVal(list_nth((s), CJ_MSTMT_SERVER)))
#define STMT_PLACEMENT(s) intVal(list_nth((s), CJ_MSTMT_PLACEMENT))

/*
 * run_statements
 *		Every statement of the plan, a round at a time: each node with
 *		statements left gets its next one, then every answer is read.  A
 *		node that cannot be reached loses its statements when each of their
 *		leaves has another placement that takes them (the placements there
 *		are marked stale); the first placement of a leaf that runs answers
 *		for it (count, RETURNING), the others must agree with it.
 */
static void
run_statements(CjModifyState *st)
{
	List	   *servers = NIL;
	List	   *queues = NIL;
	List	   *conns = NIL;
	List	   *live = NIL;
	List	   *counts = NIL;
	List	   *stale = NIL;
	ListCell   *lc;
	ListCell   *lq;
	bool		more = true;
	int			phase;
	int			maxphase = 0;

	/* the nodes, and which of them answer */
	foreach(lc, st->stmts)
	{
		Oid			server = STMT_SERVER((List *) lfirst(lc));

		if (!list_member_oid(servers, server))
			servers = lappend_oid(servers, server);
	}
	foreach(lc, servers)
	{
		char	   *why = NULL;
		CjConnection *conn = cj_try_write_connection(lfirst_oid(lc), st->userid, &why);

		conns = lappend(conns, conn);
		if (conn != NULL)
			live = lappend(live, conn);
		else
			stale = lappend(stale, list_make2(makeInteger((int) lfirst_oid(lc)),
											  makeString(why)));
	}

	/* each leaf's answering placement: the first one on a node that is up */
	foreach(lc, st->stmts)
	{
		List	   *s = (List *) lfirst(lc);
		LeafCount  *lcnt = leaf_count(&counts, STMT_LEAF(s), true);
		int			i = server_index(servers, STMT_SERVER(s));

		if (list_nth(conns, i) != NULL && STMT_PLACEMENT(s) < lcnt->ref)
			lcnt->ref = STMT_PLACEMENT(s);
	}
	foreach(lc, counts)
	{
		LeafCount  *lcnt = (LeafCount *) lfirst(lc);

		if (lcnt->ref == INT_MAX || (stale != NIL && !OidIsValid(cj_stale_relid())))
		{
			List	   *down = (List *) linitial(stale);

			ereport(ERROR,
					(errcode(ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION),
					 errmsg("could not connect to node \"%s\": no placement of leaf \"%s\" can take the write",
							cj_node_name((Oid) intVal(linitial(down))),
							get_rel_name(lcnt->leaf)),
					 errdetail_internal("%s", strVal(lsecond(down)))));
		}
	}

	/* the leaves of nodes that cannot be reached go stale */
	foreach(lc, st->stmts)
	{
		List	   *s = (List *) lfirst(lc);
		ListCell   *ld;

		if (STMT_PLACEMENT(s) > maxphase)
			maxphase = STMT_PLACEMENT(s);
		if (list_nth(conns, server_index(servers, STMT_SERVER(s))) != NULL)
			continue;
		foreach(ld, stale)
		{
			List	   *down = (List *) lfirst(ld);

			if ((Oid) intVal(linitial(down)) == STMT_SERVER(s))
				cj_health_mark_stale(STMT_LEAF(s), STMT_SERVER(s),
									 psprintf("could not connect: %s",
											  strVal(lsecond(down))));
		}
	}

	/* no write yet: check that all of it can commit */
	cj_check_two_phase(live);

	/*
	 * Primaries first, every one of them, then the first replicas, and so
	 * on: two statements changing the same rows then meet at the primary
	 * (one waits there) instead of each locking a different copy first and
	 * waiting for the other on another node, which no node could detect.
	 */
	for (phase = 0; phase <= maxphase; phase++)
	{
		queues = NIL;
		foreach(lc, servers)
			queues = lappend(queues, NIL);
		foreach(lc, st->stmts)
		{
			List	   *s = (List *) lfirst(lc);
			int			i = server_index(servers, STMT_SERVER(s));

			if (STMT_PLACEMENT(s) != phase || list_nth(conns, i) == NULL)
				continue;
			list_nth_cell(queues, i)->ptr_value =
				lappend((List *) list_nth(queues, i), s);
		}

		more = true;
		while (more)
		{
			List	   *sent = NIL;
			ListCell   *lconn;

			more = false;
			CHECK_FOR_INTERRUPTS();
			forboth(lq, queues, lconn, conns)
			{
				List	   *q = (List *) lfirst(lq);
				List	   *s;
				CjConnection *conn = (CjConnection *) lfirst(lconn);

				if (q == NIL)
				{
					sent = lappend(sent, NULL);
					continue;
				}
				s = (List *) linitial(q);
				lfirst(lq) = list_delete_first(q);
				cj_conn_note_dml(conn);
				cj_conn_send_params(conn, strVal(list_nth(s, CJ_MSTMT_SQL)),
									st->nparams, st->param_values,
									psprintf("%s of leaf %s", st->verb,
											 get_rel_name(STMT_LEAF(s))));
				sent = lappend(sent, s);
				more = true;
			}
			forboth(lq, sent, lconn, conns)
			{
				List	   *s = (List *) lfirst(lq);
				CjConnection *conn = (CjConnection *) lfirst(lconn);
				PGresult   *res;
				int64		n;
				LeafCount  *lcnt;

				if (s == NULL)
					continue;
				res = cj_conn_collect(conn, strVal(list_nth(s, CJ_MSTMT_SQL)),
									  psprintf("%s of leaf %s", st->verb,
											   get_rel_name(STMT_LEAF(s))));
				n = atoll(PQcmdTuples(res));
				lcnt = leaf_count(&counts, STMT_LEAF(s), false);
				if (STMT_PLACEMENT(s) == lcnt->ref)
				{
					lcnt->count = n;
					st->rows += n;
					if (st->returning)
						keep_returned(st, res);
				}
				else
				{
					int64	   *v = palloc(sizeof(int64));

					*v = n;
					lcnt->others = lappend(lcnt->others,
										   list_make2(list_nth(s, CJ_MSTMT_NODE), v));
				}
				count_node_rows(st, strVal(list_nth(s, CJ_MSTMT_NODE)), n);
				PQclear(res);
			}
		}
	}

	foreach(lc, counts)
	{
		LeafCount  *lcnt = (LeafCount *) lfirst(lc);
		ListCell   *lr;

		foreach(lr, lcnt->others)
		{
			List	   *r = (List *) lfirst(lr);
			int64		n = *(int64 *) lsecond(r);

			if (n != lcnt->count)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("replica of leaf \"%s\" on node \"%s\" changed " INT64_FORMAT " rows where its primary changed " INT64_FORMAT,
								get_rel_name(lcnt->leaf), strVal(linitial(r)),
								n, lcnt->count),
						 errdetail("The placements of the leaf no longer hold the same rows; the transaction is rolled back so that they do not drift further apart."),
						 errhint("Compare the placements and repair the replica (drop it and add it again).")));
		}
	}
}

/*
 * check_stored_rows
 *		Run the views' check options over the rows the nodes returned, with
 *		PostgreSQL's error and DETAIL; then rewind them for RETURNING.  The
 *		checks were compiled for this scan's own (virtual) slot.
 */
static void
check_stored_rows(CjModifyState *st)
{
	TupleTableSlot *scan_slot = st->css.ss.ss_ScanTupleSlot;
	TupleTableSlot *read = MakeSingleTupleTableSlot(scan_slot->tts_tupleDescriptor,
													&TTSOpsMinimalTuple);
	EState	   *estate = st->css.ss.ps.state;

	while (tuplestore_gettupleslot(st->returned, true, false, read))
	{
		ExecCopySlot(scan_slot, read);
		ExecWithCheckOptions(WCO_VIEW_CHECK, st->checked, scan_slot, estate);
		ResetPerTupleExprContext(estate);
	}
	ExecDropSingleTupleTableSlot(read);
	ExecClearTuple(scan_slot);
	tuplestore_rescan(st->returned);
}

/* route: read the child's rows to the end, then route them */
static void
run_route(CjModifyState *st)
{
	PlanState  *child = (PlanState *) linitial(st->css.custom_ps);
	Tuplestorestate *spool = tuplestore_begin_heap(false, false, work_mem);
	TupleTableSlot *slot;
	TupleTableSlot *spool_slot;
	CjRouter   *router;

	for (;;)
	{
		slot = ExecProcNode(child);
		if (TupIsNull(slot))
			break;
		tuplestore_puttupleslot(spool, slot);
	}
	spool_slot = MakeSingleTupleTableSlot(ExecGetResultType(child),
										  &TTSOpsMinimalTuple);

	/*
	 * The arbiter is asked of the nodes once the rows are read, before the
	 * first is written: asking takes the write connections, after which
	 * the rows' own plan could no longer move rows between nodes.
	 */
	cj_check_conflict_arbiters(st->relid, st->userid, st->conflict);

	/*
	 * Views' check options hold for the rows as the nodes stored them
	 * (their triggers may change them, as PostgreSQL checks what the foreign
	 * table returns): the nodes return every row they inserted, checked
	 * below once all are written, before anything commits.
	 */
	router = cj_router_begin(st->relid, st->userid, st->conflict, st->nparams,
							 st->param_values,
							 (st->returning || st->checked) ? st->returned : NULL,
							 st->css.ss.ss_ScanTupleSlot);
	while (tuplestore_gettupleslot(spool, true, false, spool_slot))
		cj_router_put(router, spool_slot);
	st->rows = cj_router_end(router);
	cj_router_node_rows(router, &st->node_names, &st->node_rows);
	ExecDropSingleTupleTableSlot(spool_slot);
	tuplestore_end(spool);
	if (st->checked)
		check_stored_rows(st);
}

static TupleTableSlot *
next_returned(ScanState *node)
{
	CjModifyState *st = (CjModifyState *) node;

	if (st->read_slot == NULL)
		st->read_slot = ExecAllocTableSlot(&node->ps.state->es_tupleTable,
										   node->ss_ScanTupleSlot->tts_tupleDescriptor,
										   &TTSOpsMinimalTuple);
	if (!st->returning ||
		!tuplestore_gettupleslot(st->returned, true, false, st->read_slot))
		return ExecClearTuple(node->ss_ScanTupleSlot);
	/* the projection was built for the scan slot's own (virtual) kind */
	return ExecCopySlot(node->ss_ScanTupleSlot, st->read_slot);
}

static bool
recheck_returned(ScanState *node, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
exec_modify(CustomScanState *node)
{
	CjModifyState *st = (CjModifyState *) node;
	EState	   *estate = node->ss.ps.state;

	if (!st->done)
	{
		MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);

		st->returned = tuplestore_begin_heap(false, false, work_mem);
		/* read twice when the stored rows are checked first */
		tuplestore_set_eflags(st->returned, EXEC_FLAG_REWIND);
		evaluate_params(st);
		if (st->kind == CJ_MODIFY_STATEMENTS)
		{
			/* before any row is written, as PostgreSQL infers its arbiter */
			cj_check_conflict_arbiters(st->relid, st->userid, st->conflict);
			run_statements(st);
		}
		else
			run_route(st);
		MemoryContextSwitchTo(old);
		st->done = true;
		estate->es_processed += st->rows;
	}
	return ExecScan(&node->ss, next_returned, recheck_returned);
}

static void
end_modify(CustomScanState *node)
{
	CjModifyState *st = (CjModifyState *) node;

	if (node->custom_ps != NIL)
		ExecEndNode((PlanState *) linitial(node->custom_ps));
	if (st->returned)
		tuplestore_end(st->returned);
	st->returned = NULL;
	if (st->checked)
		table_close(st->checked->ri_RelationDesc, NoLock);
	st->checked = NULL;
}

static void
rescan_modify(CustomScanState *node)
{
	/* a write runs once; its RETURNING rows can be read again */
	CjModifyState *st = (CjModifyState *) node;

	if (st->returned)
		tuplestore_rescan(st->returned);
}

static void
explain_modify(CustomScanState *node, List *ancestors, ExplainState *es)
{
	CjModifyState *st = (CjModifyState *) node;
	StringInfoData buf;
	ListCell   *lc;
	ListCell   *lr;

	initStringInfo(&buf);
	appendStringInfo(&buf, "%s %s", st->verb,
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(st->relid)),
												get_rel_name(st->relid)));
	ExplainPropertyText("Write", buf.data, es);
	if (st->kind == CJ_MODIFY_ROUTE)
		ExplainPropertyText("Routing",
							(st->conflict != NIL || st->returning) ?
							"rows to their leaves, INSERT ... VALUES batches to every placement" :
							"rows to their leaves, COPY batches to every placement",
							es);
	else
	{
		List	   *names = NIL;
		List	   *ns = NIL;

		foreach(lc, st->stmts)
		{
			char	   *node_name = strVal(list_nth((List *) lfirst(lc), CJ_MSTMT_NODE));
			ListCell   *ln;
			ListCell   *lcnt;
			bool		found = false;

			forboth(ln, names, lcnt, ns)
			{
				if (strcmp(strVal(lfirst(ln)), node_name) == 0)
				{
					lfirst_int(lcnt)++;
					found = true;
				}
			}
			if (!found)
			{
				names = lappend(names, makeString(node_name));
				ns = lappend_int(ns, 1);
			}
		}
		resetStringInfo(&buf);
		appendStringInfo(&buf, "%d", list_length(st->stmts));
		forboth(lc, names, lr, ns)
			appendStringInfo(&buf, "%s%s %d", lc == list_head(names) ? ": " : ", ",
							 strVal(lfirst(lc)), lfirst_int(lr));
		ExplainPropertyText("Statements", buf.data, es);
		if (!es->verbose && st->stmts != NIL)
			ExplainPropertyText("Remote SQL",
								strVal(list_nth((List *) linitial(st->stmts), CJ_MSTMT_SQL)),
								es);
		else
		{
			List	   *all = NIL;

			foreach(lc, st->stmts)
			{
				List	   *s = (List *) lfirst(lc);
				char	   *text = psprintf("%s: %s", strVal(list_nth(s, CJ_MSTMT_NODE)),
											strVal(list_nth(s, CJ_MSTMT_SQL)));

				/* one line each in text; one list in the structured formats */
				if (es->format == EXPLAIN_FORMAT_TEXT)
					ExplainPropertyText("Remote SQL", text, es);
				else
					all = lappend(all, text);
			}
			if (es->format != EXPLAIN_FORMAT_TEXT)
				ExplainPropertyList("Remote SQL", all, es);
		}
	}
	if (es->analyze && st->done)
	{
		resetStringInfo(&buf);
		forboth(lc, st->node_names, lr, st->node_rows)
			appendStringInfo(&buf, "%s%s " INT64_FORMAT, buf.len > 0 ? ", " : "",
							 strVal(lfirst(lc)), *(int64 *) lfirst(lr));
		ExplainPropertyText("Rows Written", buf.len > 0 ? buf.data : "none", es);
	}
}

void
cj_modify_init(void)
{
	RegisterCustomScanMethods(&cj_modify_scan_methods);
	/* the planner hands writes of sharded tables to modify.c */
	cj_write_planner = cj_plan_modify;
}
