/*-------------------------------------------------------------------------
 *
 * row_writes.c
 *	  Writes colojoin runs row by row, on its own connections.
 *
 *	  An UPDATE or DELETE of a sharded table that cannot go to the nodes
 *	  whole (a volatile function, a subquery, a join that does not line up,
 *	  triggers or row security on the coordinator, a write straight into a
 *	  leaf) keeps PostgreSQL's plan and executor: ModifyTable fires the
 *	  coordinator's triggers, checks the policies and computes RETURNING.
 *	  Only the foreign data wrapper callbacks of colojoin's leaves are
 *	  colojoin's: postgres_fdw plans the remote SQL of their scans (and adds
 *	  the ctid that names a row), but every scan and every change runs on
 *	  the transaction's write connection of the node (connection.c), so the
 *	  rows a statement reads, locks and changes are in the remote
 *	  transaction that colojoin's other writes, savepoints and two-phase
 *	  commit manage, and a change reaches every placement of the leaf: the
 *	  primary by its ctid, each replica by the row's old image (every
 *	  column, compared as the node prints it), whichever copy of identical
 *	  rows that finds.
 *
 *	  The routine is handed to the planner through get_relation_info_hook
 *	  while cj_plan_row_writes plans, and to the executor by lending it to
 *	  the leaves' relcache entries while ExecutorStart builds the plan's
 *	  states (PostgreSQL asks the relation for its routine there); a plan is
 *	  recognised by a mark in its nodes' private lists.
 *
 *	  This file does not plan writes it can send whole (modify.c) nor route
 *	  inserted rows of a sharded table (insert_route.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/attmap.h"
#include "access/htup_details.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "storage/itemptr.h"
#include "utils/fmgrprotos.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_class.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/plancat.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "deparse/deparse.h"
#include "metadata/metadata.h"
#include "plan/planner.h"
#include "remote/connection.h"
#include "remote/twophase.h"
#include "util/extension.h"
#include "util/fdw_writes.h"
#include "write/insert_route.h"
#include "write/row_writes.h"
#include "write/row_writes_internal.h"


bool		cj_planning_rowwise = false;

static get_relation_info_hook_type prev_relation_info = NULL;
static ExecutorStart_hook_type prev_executor_start = NULL;
static ExecutorRun_hook_type prev_executor_run = NULL;
static ExecutorFinish_hook_type prev_executor_finish = NULL;

/* postgres_fdw's routine (planning) and colojoin's (execution) */
FdwRoutine *cj_rw_pg_routine = NULL;
static FdwRoutine *cj_routine = NULL;


static bool routes_to_managed_leaf(Oid relid);

/* ---------------------------------------------------------------------
 * Which leaves are colojoin's
 * ---------------------------------------------------------------------
 */

/* the leaf's metadata and its sharded table's OID, or NULL */
static CjLeaf *
managed_leaf(Oid relid, Oid *root)
{
	List	   *ancestors;
	CjTable    *t;
	int			cls;
	int			li;

	if (get_rel_relkind(relid) != RELKIND_FOREIGN_TABLE ||
		!get_rel_relispartition(relid))
		return NULL;
	/* an older version installed: no commit records, no write path */
	if (!cj_twophase_available())
		return NULL;
	ancestors = get_partition_ancestors(relid);
	if (ancestors == NIL)
		return NULL;
	t = cj_get_table(llast_oid(ancestors));
	if (t == NULL)
		return NULL;
	cls = cj_class_of_leaf(t, relid, &li);
	if (cls < 0 || !t->classes[cls].leaves[li].is_foreign)
		return NULL;
	if (root)
		*root = t->relid;
	return &t->classes[cls].leaves[li];
}

bool
cj_is_managed_leaf(Oid relid)
{
	return colojoin_is_active() && managed_leaf(relid, NULL) != NULL;
}

CjLeaf *
cj_managed_leaf(Oid relid)
{
	return colojoin_is_active() ? managed_leaf(relid, NULL) : NULL;
}

/* ---------------------------------------------------------------------
 * Text of values as the nodes read and print them
 * ---------------------------------------------------------------------
 */

char *
cj_rw_value_text(Datum value, Oid typid)
{
	Oid			out;
	bool		varlena;

	getTypeOutputInfo(typid, &out, &varlena);
	return OidOutputFunctionCall(out, value);
}

/* a heap tuple of desc from columns first.. of res's row (leaf order) */
static HeapTuple
tuple_from_result(TupleDesc desc, PGresult *res, int row, int first,
				  ItemPointer ctid)
{
	Datum	   *values = palloc0(desc->natts * sizeof(Datum));
	bool	   *nulls = palloc(desc->natts * sizeof(bool));
	HeapTuple	tuple;
	int			col = first;
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Oid			in;
		Oid			ioparam;

		nulls[i] = true;
		if (att->attisdropped)
			continue;
		if (!PQgetisnull(res, row, col))
		{
			getTypeInputInfo(att->atttypid, &in, &ioparam);
			values[i] = OidInputFunctionCall(in, PQgetvalue(res, row, col),
											 ioparam, att->atttypmod);
			nulls[i] = false;
		}
		col++;
	}
	tuple = heap_form_tuple(desc, values, nulls);
	if (ctid)
		tuple->t_self = *ctid;
	pfree(values);
	pfree(nulls);
	return tuple;
}

/* ---------------------------------------------------------------------
 * Changes
 * ---------------------------------------------------------------------
 */

typedef struct RowModify
{
	CmdType		op;
	Oid			relid;
	char	   *context;
	int			nplacements;
	CjConnection **conns;		/* primary first */
	Oid		   *servers;
	char	  **sql;			/* per placement */
	int			nset;			/* UPDATE: columns set; INSERT: columns */
	AttrNumber *set_attnos;		/* leaf attnos */
	int			nimage;			/* columns of a row's image */
	int			nreturned;		/* every column the primary returns */
	AttrNumber ctid_attno;		/* in the plan's rows */
	struct RowModify *mover;	/* UPDATE: the DELETE of a row that moves */
	Oid			root;			/* the sharded table */
	Oid			userid;
	bool		checked;		/* two-phase commit possible */
	MemoryContext row_cxt;		/* reset for every row */
} RowModify;

static bool
is_mark(Node *n)
{
	return n != NULL && IsA(n, String) && strcmp(strVal(n), ROW_WRITES_MARK) == 0;
}

/* remote name of a leaf column (leaf attno) */
static const char *
remote_column(Relation rel, CjLeaf *leaf, Oid root, AttrNumber attno)
{
	const char *name = NameStr(TupleDescAttr(RelationGetDescr(rel), attno - 1)->attname);
	AttrNumber	top = get_attnum(root, name);

	if (top > 0 && top <= leaf->natts && cj_leaf_colnames(leaf)[top - 1] != NULL)
		return cj_leaf_colnames(leaf)[top - 1];
	return name;
}

static bool
column_written(Form_pg_attribute att)
{
	return !att->attisdropped && att->attgenerated == '\0';
}

/*
 * The statements of one placement: the primary's names its row by ctid
 * and returns it (ctid, every column, then the old image where replicas
 * need it); a replica's names its row by the old image.
 */
static char *
placement_sql(RowModify *st, Relation rel, CjLeaf *leaf, Oid root, int p)
{
	TupleDesc	desc = RelationGetDescr(rel);
	CjPlacement *pl = &leaf->placements[p];
	char	   *q = cj_qualified_name(pl->remote_schema, pl->remote_table);
	StringInfoData buf;
	StringInfoData image;
	int			i;
	int			n;

	initStringInfo(&buf);
	initStringInfo(&image);

	/* the image match of a replica: its params after the row's values */
	n = (st->op == CMD_UPDATE) ? st->nset : 0;
	for (i = 1; i <= desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i - 1);

		if (!column_written(att))
			continue;
		n++;
		appendStringInfo(&image, "%sx.%s::pg_catalog.text IS NOT DISTINCT FROM ($%d::%s)::pg_catalog.text",
						 image.len ? " AND " : "",
						 cj_quote_ident(remote_column(rel, leaf, root, i)), n,
						 cj_type_name(att->atttypid, att->atttypmod));
	}

	if (st->op == CMD_INSERT)
	{
		appendStringInfo(&buf, "INSERT INTO %s AS r (", q);
		for (i = 0; i < st->nset; i++)
			appendStringInfo(&buf, "%s%s", i ? ", " : "",
							 cj_quote_ident(remote_column(rel, leaf, root, st->set_attnos[i])));
		appendStringInfoString(&buf, ") VALUES (");
		for (i = 0; i < st->nset; i++)
			appendStringInfo(&buf, "%s$%d", i ? ", " : "", i + 1);
		appendStringInfoChar(&buf, ')');
	}
	else if (st->op == CMD_UPDATE)
	{
		int			base = (p == 0) ? 1 : 0;

		appendStringInfo(&buf, "UPDATE ONLY %s r SET ", q);
		for (i = 0; i < st->nset; i++)
			appendStringInfo(&buf, "%s%s = $%d", i ? ", " : "",
							 cj_quote_ident(remote_column(rel, leaf, root, st->set_attnos[i])),
							 base + i + 1);
		if (p == 0 && st->nplacements > 1)
		{
			/* the old image, as the node prints it, for the replicas */
			appendStringInfoString(&buf, " FROM (SELECT x.ctid AS t");
			for (i = 1; i <= desc->natts; i++)
				if (column_written(TupleDescAttr(desc, i - 1)))
					appendStringInfo(&buf, ", x.%s AS o%d",
									 cj_quote_ident(remote_column(rel, leaf, root, i)), i);
			appendStringInfo(&buf, " FROM ONLY %s x WHERE x.ctid = $1) o WHERE r.ctid = o.t", q);
		}
		else if (p == 0)
			appendStringInfoString(&buf, " WHERE r.ctid = $1");
	}
	else
	{
		appendStringInfo(&buf, "DELETE FROM ONLY %s r", q);
		if (p == 0)
			appendStringInfoString(&buf, " WHERE r.ctid = $1");
	}

	if (p > 0 && st->op != CMD_INSERT)
		appendStringInfo(&buf, " WHERE r.ctid = (SELECT x.ctid FROM ONLY %s x WHERE %s LIMIT 1)",
						 q, image.data);

	if (p == 0)
	{
		appendStringInfoString(&buf, " RETURNING r.ctid");
		for (i = 1; i <= desc->natts; i++)
			if (!TupleDescAttr(desc, i - 1)->attisdropped)
				appendStringInfo(&buf, ", r.%s",
								 cj_quote_ident(remote_column(rel, leaf, root, i)));
		if (st->op == CMD_UPDATE && st->nplacements > 1)
		{
			for (i = 1; i <= desc->natts; i++)
				if (column_written(TupleDescAttr(desc, i - 1)))
					appendStringInfo(&buf, ", o.o%d", i);
		}
	}
	pfree(image.data);
	return buf.data;
}

static void
begin_modify(ModifyTableState *mtstate, ResultRelInfo *rinfo, CmdType op,
			 int eflags)
{
	Relation	rel = rinfo->ri_RelationDesc;
	TupleDesc	desc = RelationGetDescr(rel);
	EState	   *estate = mtstate->ps.state;
	/* a leaf tuple routing opened has no range table entry of its own */
	RangeTblEntry *rte = exec_rt_fetch(rinfo->ri_RangeTableIndex > 0 ?
									   rinfo->ri_RangeTableIndex :
									   rinfo->ri_RootResultRelInfo->ri_RangeTableIndex,
									   estate);
	Oid			userid = OidIsValid(rte->checkAsUser) ? rte->checkAsUser : GetUserId();
	Oid			root;
	CjLeaf	   *leaf = managed_leaf(RelationGetRelid(rel), &root);
	RowModify  *st;
	int			i;

	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	if (leaf == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("\"%s\" is no longer a partition of a sharded table",
						RelationGetRelationName(rel)),
				 errhint("Run the statement again.")));
	st = palloc0(sizeof(RowModify));
	st->op = op;
	st->relid = RelationGetRelid(rel);
	st->context = psprintf("partition %s", RelationGetRelationName(rel));
	st->set_attnos = palloc0(desc->natts * sizeof(AttrNumber));
	if (op == CMD_UPDATE && rel->trigdesc && rel->trigdesc->trig_update_before_row)
	{
		/* a BEFORE trigger on the coordinator may change any column */
		for (i = 1; i <= desc->natts; i++)
			if (column_written(TupleDescAttr(desc, i - 1)))
				st->set_attnos[st->nset++] = i;
	}
	else if (op == CMD_UPDATE)
	{
		Bitmapset  *cols = bms_union(rte->updatedCols, rte->extraUpdatedCols);

		/* the RTE's columns are the statement target's; map by name */
		Relation	target = rinfo->ri_RootResultRelInfo ?
			rinfo->ri_RootResultRelInfo->ri_RelationDesc : rel;
		int			k = -1;

		if (rinfo->ri_RootResultRelInfo)
		{
			RangeTblEntry *trte = exec_rt_fetch(rinfo->ri_RootResultRelInfo->ri_RangeTableIndex, estate);

			cols = bms_union(trte->updatedCols, trte->extraUpdatedCols);
		}
		while ((k = bms_next_member(cols, k)) >= 0)
		{
			AttrNumber	tattno = k + FirstLowInvalidHeapAttributeNumber;
			AttrNumber	lattno;

			if (tattno <= 0)
				continue;
			lattno = get_attnum(RelationGetRelid(rel),
								NameStr(TupleDescAttr(RelationGetDescr(target), tattno - 1)->attname));
			if (lattno > 0 && column_written(TupleDescAttr(desc, lattno - 1)))
				st->set_attnos[st->nset++] = lattno;
		}
	}
	else if (op == CMD_INSERT)
	{
		for (i = 1; i <= desc->natts; i++)
			if (column_written(TupleDescAttr(desc, i - 1)))
				st->set_attnos[st->nset++] = i;
	}
	for (i = 1; i <= desc->natts; i++)
	{
		if (column_written(TupleDescAttr(desc, i - 1)))
			st->nimage++;
		if (!TupleDescAttr(desc, i - 1)->attisdropped)
			st->nreturned++;
	}
	if (op != CMD_INSERT)
	{
		Plan	   *sub = outerPlanState(mtstate)->plan;

		st->ctid_attno = ExecFindJunkAttributeInTlist(sub->targetlist, "ctid");
		if (!AttributeNumberIsValid(st->ctid_attno))
			elog(ERROR, "could not find junk ctid column");
	}
	st->nplacements = leaf->nplacements;
	st->conns = palloc(st->nplacements * sizeof(CjConnection *));
	st->servers = palloc(st->nplacements * sizeof(Oid));
	st->sql = palloc(st->nplacements * sizeof(char *));
	st->root = root;
	st->userid = userid;
	for (i = 0; i < st->nplacements; i++)
	{
		st->servers[i] = leaf->placements[i].serverid;
		st->conns[i] = cj_get_write_connection(st->servers[i], userid);
		st->sql[i] = placement_sql(st, rel, leaf, root, i);
	}
	if (op == CMD_UPDATE)
	{
		/* a row whose new key belongs elsewhere leaves this leaf */
		st->mover = palloc(sizeof(RowModify));
		memcpy(st->mover, st, sizeof(RowModify));
		st->mover->op = CMD_DELETE;
		st->mover->mover = NULL;
		st->mover->sql = palloc(st->nplacements * sizeof(char *));
		for (i = 0; i < st->nplacements; i++)
			st->mover->sql[i] = placement_sql(st->mover, rel, leaf, root, i);
	}
	/* every row's parameters and results; the mover shares it */
	st->row_cxt = AllocSetContextCreate(estate->es_query_cxt,
										"colojoin row write",
										ALLOCSET_SMALL_SIZES);
	if (st->mover)
		st->mover->row_cxt = st->row_cxt;
	rinfo->ri_FdwState = st;
}

static List *
rw_plan_modify(PlannerInfo *root, ModifyTable *plan, Index resultRelation,
			   int subplan_index)
{
	return list_make1(makeString(ROW_WRITES_MARK));
}

static void
rw_begin_modify(ModifyTableState *mtstate, ResultRelInfo *rinfo,
				List *fdw_private, int subplan_index, int eflags)
{
	begin_modify(mtstate, rinfo, mtstate->operation, eflags);
}

static void
rw_begin_insert(ModifyTableState *mtstate, ResultRelInfo *rinfo)
{
	/*
	 * A row an UPDATE moves from another partition into a leaf that the
	 * same UPDATE changes: that leaf's state is the UPDATE's.  The same
	 * refusal as postgres_fdw's (rows colojoin itself moves between its
	 * leaves never come here).
	 */
	if (rinfo->ri_FdwState != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot route tuples into foreign table to be updated \"%s\"",
						RelationGetRelationName(rinfo->ri_RelationDesc))));
	begin_modify(mtstate, rinfo, CMD_INSERT, 0);
}

/* run one placement's statement; its result (PQclear it) */
static PGresult *
run_placement(RowModify *st, int p, int nparams, const char **values)
{
	PGresult   *res;

	/* again: a scan of the statement may be reading there (scan_conn) */
	st->conns[p] = cj_get_write_connection(st->servers[p], st->userid);
	cj_conn_send_params(st->conns[p], st->sql[p], nparams, values, st->context);
	res = cj_conn_collect(st->conns[p], st->sql[p], st->context);
	cj_conn_note_dml(st->conns[p]);
	return res;
}

/*
 * The parameters of a replica's statement: the row's values (UPDATE,
 * INSERT), then its old image as the primary returned it (UPDATE: after
 * every column, only the written ones; DELETE: among every column).
 */
static const char **
replica_params(RowModify *st, TupleDesc desc, PGresult *res,
			   const char **values, int *n)
{
	const char **params = palloc0((st->nset + st->nimage + 1) * sizeof(char *));
	int			col = (st->op == CMD_UPDATE) ? 1 + st->nreturned : 1;
	int			i;

	*n = 0;
	if (st->op != CMD_DELETE)
		for (i = 0; i < st->nset; i++)
			params[(*n)++] = values[(st->op == CMD_UPDATE ? 1 : 0) + i];
	if (st->op == CMD_INSERT)
		return params;
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		if (column_written(att))
			params[(*n)++] = PQgetisnull(res, 0, col) ? NULL :
				PQgetvalue(res, 0, col);
		if (column_written(att) || st->op == CMD_DELETE)
			col++;
	}
	return params;
}

/*
 * Write one row: values[0..nvalues) are the primary's parameters (ctid
 * first unless INSERT); the replicas get the row's values and its image.
 * The row as the primary returned it goes into slot, made in tuple_cxt;
 * NULL when the primary had no such row any more.
 */
static TupleTableSlot *
write_row(RowModify *st, ResultRelInfo *rinfo, TupleTableSlot *slot,
		  const char **values, int nvalues, MemoryContext tuple_cxt)
{
	TupleDesc	desc = RelationGetDescr(rinfo->ri_RelationDesc);
	PGresult   *res;
	HeapTuple	tuple;
	ItemPointerData ctid;
	const char **params = NULL;
	int			nparams = 0;
	MemoryContext old;
	int			p;

	if (!st->checked)
	{
		List	   *conns = NIL;

		for (p = 0; p < st->nplacements; p++)
			conns = lappend(conns, st->conns[p]);
		cj_check_two_phase(conns);
		st->checked = true;
	}
	res = run_placement(st, 0, nvalues, values);
	if (PQntuples(res) == 0)
	{
		PQclear(res);
		return NULL;
	}

	/* the replicas: the same change, their row found by its image */
	if (st->nplacements > 1)
		params = replica_params(st, desc, res, values, &nparams);
	for (p = 1; p < st->nplacements; p++)
	{
		PGresult   *rres = run_placement(st, p, nparams, params);
		bool		one = (strcmp(PQcmdTuples(rres), "1") == 0);

		PQclear(rres);
		if (!one)
		{
			PQclear(res);
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the placement of \"%s\" on node \"%s\" does not hold a row its primary holds",
							get_rel_name(st->relid),
							cj_node_name(st->servers[p])),
					 errdetail("The copies of the partition differ; nothing the transaction wrote commits."),
					 errhint("Bring the placement back in line with colojoin.repair_placement.")));
		}
	}

	ctid = *(ItemPointer) DatumGetPointer(DirectFunctionCall1(tidin,
															  CStringGetDatum(PQgetvalue(res, 0, 0))));
	old = MemoryContextSwitchTo(tuple_cxt);
	tuple = tuple_from_result(desc, res, 0, 1, &ctid);
	MemoryContextSwitchTo(old);
	tuple->t_tableOid = st->relid;
	PQclear(res);
	ExecForceStoreHeapTuple(tuple, slot, true);
	return slot;
}

/* the text of the columns a statement sets, from slot, into values */
static void
slot_params(RowModify *st, TupleTableSlot *slot, const char **values)
{
	int			level;
	int			i;

	slot_getallattrs(slot);
	level = cj_pin_node_output_settings();
	for (i = 0; i < st->nset; i++)
	{
		AttrNumber	a = st->set_attnos[i];

		values[i] = slot->tts_isnull[a - 1] ? NULL :
			cj_rw_value_text(slot->tts_values[a - 1],
							 TupleDescAttr(slot->tts_tupleDescriptor, a - 1)->atttypid);
	}
	AtEOXact_GUC(true, level);
}

static TupleTableSlot *
rw_exec_insert(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot,
			   TupleTableSlot *planSlot)
{
	RowModify  *st = (RowModify *) rinfo->ri_FdwState;
	MemoryContext caller = MemoryContextSwitchTo(st->row_cxt);
	const char **values;
	TupleTableSlot *result;

	MemoryContextReset(st->row_cxt);
	values = palloc0((st->nset + 1) * sizeof(char *));
	slot_params(st, slot, values);
	result = write_row(st, rinfo, slot, values, st->nset, caller);
	MemoryContextSwitchTo(caller);
	return result;
}

static const char *
row_ctid(RowModify *st, TupleTableSlot *planSlot)
{
	bool		isnull;
	Datum		d = ExecGetJunkAttribute(planSlot, st->ctid_attno, &isnull);

	if (isnull)
		elog(ERROR, "ctid is NULL");
	return DatumGetCString(DirectFunctionCall1(tidout, d));
}

/*
 * move_row
 *		The new version of an updated row belongs to another partition: as
 *		PostgreSQL moves a row between plain partitions, delete it here
 *		(every placement) and insert it into the sharded table, which
 *		routes it.  The inserted row is what the statement returns.
 */
static TupleTableSlot *
move_row(RowModify *st, ResultRelInfo *rinfo, TupleTableSlot *slot,
		 TupleTableSlot *planSlot)
{
	const char *values[1];
	Relation	root = table_open(st->root, NoLock);
	TupleTableSlot *old = MakeSingleTupleTableSlot(RelationGetDescr(rinfo->ri_RelationDesc),
												   &TTSOpsHeapTuple);
	TupleTableSlot *root_slot = MakeSingleTupleTableSlot(RelationGetDescr(root),
														 &TTSOpsVirtual);
	AttrMap    *map = build_attrmap_by_name_if_req(RelationGetDescr(root),
												   RelationGetDescr(rinfo->ri_RelationDesc));
	CjRouter   *router;

	values[0] = row_ctid(st, planSlot);
	if (write_row(st->mover, rinfo, old, values, 1, CurrentMemoryContext) == NULL)
	{
		ExecDropSingleTupleTableSlot(old);
		ExecDropSingleTupleTableSlot(root_slot);
		table_close(root, NoLock);
		return NULL;			/* gone meanwhile, as for an UPDATE */
	}
	if (map != NULL)
		execute_attr_map_slot(map, slot, root_slot);
	else
		ExecCopySlot(root_slot, slot);
	router = cj_router_begin(st->root, st->userid, NIL, 0, NULL, NULL, NULL);
	cj_router_put(router, root_slot);
	(void) cj_router_end(router);
	ExecDropSingleTupleTableSlot(old);
	ExecDropSingleTupleTableSlot(root_slot);
	table_close(root, NoLock);
	return slot;
}

static TupleTableSlot *
rw_exec_update(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot,
			   TupleTableSlot *planSlot)
{
	RowModify  *st = (RowModify *) rinfo->ri_FdwState;
	MemoryContext caller;
	const char **values;
	TupleTableSlot *result;

	if (rinfo->ri_RelationDesc->rd_rel->relispartition &&
		!ExecPartitionCheck(rinfo, slot, estate, false))
	{
		caller = MemoryContextSwitchTo(st->row_cxt);
		MemoryContextReset(st->row_cxt);
		result = move_row(st, rinfo, slot, planSlot);
		MemoryContextSwitchTo(caller);
		return result;
	}
	caller = MemoryContextSwitchTo(st->row_cxt);
	MemoryContextReset(st->row_cxt);
	values = palloc0((st->nset + 2) * sizeof(char *));
	values[0] = row_ctid(st, planSlot);
	slot_params(st, slot, values + 1);
	result = write_row(st, rinfo, slot, values, st->nset + 1, caller);
	MemoryContextSwitchTo(caller);
	return result;
}

static TupleTableSlot *
rw_exec_delete(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot,
			   TupleTableSlot *planSlot)
{
	RowModify  *st = (RowModify *) rinfo->ri_FdwState;
	MemoryContext caller = MemoryContextSwitchTo(st->row_cxt);
	const char *values[1];
	TupleTableSlot *result;

	MemoryContextReset(st->row_cxt);
	values[0] = row_ctid(st, planSlot);
	result = write_row(st, rinfo, slot, values, 1, caller);
	MemoryContextSwitchTo(caller);
	return result;
}

static void
rw_explain_modify(ModifyTableState *mtstate, ResultRelInfo *rinfo,
				  List *fdw_private, int subplan_index, ExplainState *es)
{
	ExplainPropertyText("Colojoin", "row by row, every placement", es);
}

/* ---------------------------------------------------------------------
 * The routine, the planner and the executor
 * ---------------------------------------------------------------------
 */

static FdwRoutine *
routine(FdwRoutine *pg)
{
	MemoryContext old;

	if (cj_routine != NULL)
		return cj_routine;
	old = MemoryContextSwitchTo(TopMemoryContext);
	cj_rw_pg_routine = palloc(sizeof(FdwRoutine));
	memcpy(cj_rw_pg_routine, pg, sizeof(FdwRoutine));
	cj_routine = palloc(sizeof(FdwRoutine));
	memcpy(cj_routine, pg, sizeof(FdwRoutine));
	MemoryContextSwitchTo(old);

	/* postgres_fdw plans the leaves' scans, colojoin runs them */
	cj_routine->GetForeignPlan = cj_rw_get_plan;
	cj_routine->BeginForeignScan = cj_rw_begin_scan;
	cj_routine->IterateForeignScan = cj_rw_iterate_scan;
	cj_routine->ReScanForeignScan = cj_rw_rescan;
	cj_routine->EndForeignScan = cj_rw_end_scan;
	cj_routine->ExplainForeignScan = cj_rw_explain_scan;
	/* joins, aggregates and direct modification are colojoin's own plans */
	cj_routine->GetForeignJoinPaths = NULL;
	cj_routine->GetForeignUpperPaths = NULL;
	cj_routine->PlanDirectModify = NULL;
	cj_routine->BeginDirectModify = NULL;
	cj_routine->IterateDirectModify = NULL;
	cj_routine->EndDirectModify = NULL;
	cj_routine->RecheckForeignScan = NULL;
	cj_routine->RefetchForeignRow = NULL;
	cj_routine->IsForeignPathAsyncCapable = NULL;
	cj_routine->ForeignAsyncRequest = NULL;
	cj_routine->ForeignAsyncConfigureWait = NULL;
	cj_routine->ForeignAsyncNotify = NULL;
	cj_routine->GetForeignModifyBatchSize = NULL;
	cj_routine->ExecForeignBatchInsert = NULL;
	cj_routine->PlanForeignModify = rw_plan_modify;
	cj_routine->BeginForeignModify = rw_begin_modify;
	cj_routine->ExecForeignInsert = rw_exec_insert;
	cj_routine->ExecForeignUpdate = rw_exec_update;
	cj_routine->ExecForeignDelete = rw_exec_delete;
	cj_routine->EndForeignModify = NULL;	/* the row context goes with the query */
	cj_routine->BeginForeignInsert = rw_begin_insert;
	cj_routine->EndForeignInsert = NULL;
	cj_routine->ExplainForeignModify = rw_explain_modify;
	return cj_routine;
}

static void
cj_relation_info(PlannerInfo *root, Oid relid, bool inhparent,
				 RelOptInfo *rel)
{
	bool		wrote;

	if (prev_relation_info)
		prev_relation_info(root, relid, inhparent, rel);
	if (inhparent || rel->fdwroutine == NULL || rel->fdwroutine == cj_routine)
		return;
	wrote = cj_xact_has_dml() && colojoin_is_active();

	/*
	 * Once the transaction wrote through colojoin, every scan of its leaves
	 * that PostgreSQL plans is colojoin's too, on the connection that sees
	 * the writes; and so is every read of another foreign table of a node
	 * it wrote on, which postgres_fdw's connection would read in a
	 * transaction of its own (a node's view over the written tables, a
	 * trigger's writes there).  Writes of such tables stay postgres_fdw's.
	 */
	if ((cj_planning_rowwise || wrote) && managed_leaf(relid, NULL) != NULL)
		rel->fdwroutine = routine(rel->fdwroutine);
	else if ((cj_planning_rowwise || wrote) && OidIsValid(rel->serverid) &&
			 cj_write_slot(rel->serverid, GetUserId()) >= 0 &&
			 cj_is_postgres_fdw_server(rel->serverid) &&
			 !bms_is_member(rel->relid, root->all_result_relids) &&
			 rel->relid != (Index) root->parse->resultRelation)
		rel->fdwroutine = routine(rel->fdwroutine);
}

/* does relid (partitioned) have a leaf colojoin manages below it? */
static bool
routes_to_managed_leaf(Oid relid)
{
	ListCell   *lc;

	if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
		return false;
	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
	{
		if (managed_leaf(lfirst_oid(lc), NULL) != NULL)
		{
			/* no leaf may have been planned: the routine is needed all the same */
			(void) routine(GetFdwRoutineByRelId(lfirst_oid(lc)));
			return true;
		}
	}
	return false;
}

static void
mark_routing(Plan *plan, PlannedStmt *stmt)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	if (IsA(plan, ModifyTable))
	{
		ModifyTable *mt = (ModifyTable *) plan;
		ListCell   *lr;

		forboth(lc, mt->fdwPrivLists, lr, mt->resultRelations)
		{
			Oid			relid = rt_fetch(lfirst_int(lr), stmt->rtable)->relid;
			List	   *priv = (List *) lfirst(lc);

			if (priv != NIL && is_mark((Node *) linitial(priv)))
				continue;

			/*
			 * A foreign leaf the statement writes without scanning it (INSERT
			 * into a leaf) was planned by postgres_fdw, whose private list
			 * colojoin's callbacks do not need.
			 */
			if ((priv == NIL && routes_to_managed_leaf(relid)) ||
				(managed_leaf(relid, NULL) != NULL &&
				 !bms_is_member(foreach_current_index(lc), mt->fdwDirectModifyPlans)))
			{
				if (managed_leaf(relid, NULL) != NULL)
					(void) routine(GetFdwRoutineByRelId(relid));
				lfirst(lc) = list_make1(makeString(ROW_WRITES_MARK));
			}
		}
	}
	mark_routing(plan->lefttree, stmt);
	mark_routing(plan->righttree, stmt);
	if (IsA(plan, Append))
		foreach(lc, ((Append *) plan)->appendplans)
			mark_routing((Plan *) lfirst(lc), stmt);
	else if (IsA(plan, SubqueryScan))
		mark_routing(((SubqueryScan *) plan)->subplan, stmt);
}

PlannedStmt *
cj_plan_row_writes(Query *parse, const char *query_string, int cursorOptions,
				   ParamListInfo boundParams, CjRowPlanFunc plan_fn)
{
	PlannedStmt *stmt;
	bool		saved = cj_planning_rowwise;
	bool		saved_custom = cj_plan_no_custom_paths;

	cj_planning_rowwise = true;
	cj_plan_no_custom_paths = true;
	PG_TRY();
	{
		stmt = plan_fn(parse, query_string, cursorOptions, boundParams);
	}
	PG_FINALLY();
	{
		cj_planning_rowwise = saved;
		cj_plan_no_custom_paths = saved_custom;
	}
	PG_END_TRY();

	/*
	 * A partitioned target routes its rows to leaves the executor opens
	 * only as rows come (INSERT, COPY-like): its entry is marked as well.
	 */
	{
		ListCell   *lc;

		mark_routing(stmt->planTree, stmt);
		foreach(lc, stmt->subplans)
			mark_routing((Plan *) lfirst(lc), stmt);
	}
	return stmt;
}

/* the relations whose routine the plan's nodes need, or NIL */
static void
collect_marked(Plan *plan, PlannedStmt *stmt, bool leaves, List **relids)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	if (IsA(plan, ForeignScan))
	{
		ForeignScan *fs = (ForeignScan *) plan;

		if (fs->scan.scanrelid > 0 && fs->fdw_private != NIL &&
			is_mark((Node *) llast(fs->fdw_private)))
			*relids = list_append_unique_oid(*relids,
											 rt_fetch(fs->scan.scanrelid, stmt->rtable)->relid);
	}
	else if (IsA(plan, ModifyTable))
	{
		ModifyTable *mt = (ModifyTable *) plan;
		ListCell   *lr;

		forboth(lc, mt->fdwPrivLists, lr, mt->resultRelations)
		{
			List	   *priv = (List *) lfirst(lc);
			Oid			relid = rt_fetch(lfirst_int(lr), stmt->rtable)->relid;

			if (priv == NIL || !is_mark((Node *) linitial(priv)))
				continue;
			if (leaves && get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE)
			{
				ListCell   *ll;

				/*
				 * Locked now, the leaves routing opens later take no new
				 * lock there, so no invalidation arrives to take the
				 * routine back before their ResultRelInfo is made.
				 */
				foreach(ll, find_all_inheritors(relid, RowExclusiveLock, NULL))
					if (managed_leaf(lfirst_oid(ll), NULL) != NULL)
						*relids = list_append_unique_oid(*relids, lfirst_oid(ll));
			}
			else
				*relids = list_append_unique_oid(*relids, relid);
		}
	}
	collect_marked(plan->lefttree, stmt, leaves, relids);
	collect_marked(plan->righttree, stmt, leaves, relids);
	if (IsA(plan, Append))
		foreach(lc, ((Append *) plan)->appendplans)
			collect_marked((Plan *) lfirst(lc), stmt, leaves, relids);
	else if (IsA(plan, MergeAppend))
		foreach(lc, ((MergeAppend *) plan)->mergeplans)
			collect_marked((Plan *) lfirst(lc), stmt, leaves, relids);
	else if (IsA(plan, SubqueryScan))
		collect_marked(((SubqueryScan *) plan)->subplan, stmt, leaves, relids);
	else if (IsA(plan, CustomScan))
		foreach(lc, ((CustomScan *) plan)->custom_plans)
			collect_marked((Plan *) lfirst(lc), stmt, leaves, relids);
	else if (IsA(plan, BitmapAnd))
		foreach(lc, ((BitmapAnd *) plan)->bitmapplans)
			collect_marked((Plan *) lfirst(lc), stmt, leaves, relids);
	else if (IsA(plan, BitmapOr))
		foreach(lc, ((BitmapOr *) plan)->bitmapplans)
			collect_marked((Plan *) lfirst(lc), stmt, leaves, relids);
}

/*
 * The relations of stmt's marked nodes; with leaves, a marked partitioned
 * target stands for its managed leaves, locked (the executor's loan), else
 * for itself (whether the plan is colojoin's at all).
 */
static List *
marked_relids(PlannedStmt *stmt, bool leaves)
{
	List	   *relids = NIL;
	ListCell   *lc;

	if (cj_routine == NULL || stmt->commandType == CMD_UTILITY)
		return NIL;
	collect_marked(stmt->planTree, stmt, leaves, &relids);
	foreach(lc, stmt->subplans)
		collect_marked((Plan *) lfirst(lc), stmt, leaves, &relids);
	return relids;
}

bool
cj_plan_is_row_writes(PlannedStmt *stmt)
{
	return marked_relids(stmt, false) != NIL;
}

/* a planstate tree built with postgres_fdw's callbacks where ours were meant */
static bool
wrong_routine(PlanState *ps, void *context)
{
	if (ps == NULL)
		return false;
	if (IsA(ps, ForeignScanState))
	{
		ForeignScan *fs = (ForeignScan *) ps->plan;

		if (fs->fdw_private != NIL && is_mark((Node *) llast(fs->fdw_private)) &&
			((ForeignScanState *) ps)->fdwroutine->BeginForeignScan != cj_rw_begin_scan)
			return true;
	}
	if (IsA(ps, ModifyTableState))
	{
		ModifyTableState *mts = (ModifyTableState *) ps;
		ModifyTable *mt = (ModifyTable *) ps->plan;
		int			i = 0;
		ListCell   *lc;

		foreach(lc, mt->fdwPrivLists)
		{
			List	   *priv = (List *) lfirst(lc);

			if (priv != NIL && is_mark((Node *) linitial(priv)) &&
				mts->resultRelInfo[i].ri_RelationDesc->rd_rel->relkind == RELKIND_FOREIGN_TABLE &&
				(mts->resultRelInfo[i].ri_FdwRoutine == NULL ||
				 mts->resultRelInfo[i].ri_FdwRoutine->ExecForeignUpdate != rw_exec_update))
				return true;
			i++;
		}
	}
	return planstate_tree_walker(ps, wrong_routine, context);
}

/* what lend_routine changed, for give_back */
typedef struct Loan
{
	List	   *rels;
	List	   *saved;
	List	   *lent;
} Loan;

/*
 * lend_routine
 *		Lend colojoin's routine to the leaves' relcache entries while the
 *		executor asks them for it (ExecInitForeignScan, InitResultRelInfo,
 *		tuple routing); the relcache frees an entry's routine when it
 *		rebuilds it, so each gets its own copy, and give_back restores the
 *		entry's own.
 */
static void
lend_routine(List *relids, Loan *loan)
{
	ListCell   *lc;

	memset(loan, 0, sizeof(Loan));
	foreach(lc, relids)
	{
		Relation	rel = RelationIdGetRelation(lfirst_oid(lc));
		FdwRoutine *copy = MemoryContextAlloc(CacheMemoryContext, sizeof(FdwRoutine));

		memcpy(copy, cj_routine, sizeof(FdwRoutine));
		loan->rels = lappend(loan->rels, rel);
		loan->saved = lappend(loan->saved, rel->rd_fdwroutine);
		loan->lent = lappend(loan->lent, copy);
		rel->rd_fdwroutine = copy;
	}
}

static void
give_back(Loan *loan)
{
	ListCell   *lc;
	ListCell   *ls;
	ListCell   *ll;

	forthree(lc, loan->rels, ls, loan->saved, ll, loan->lent)
	{
		Relation	rel = (Relation) lfirst(lc);

		if (rel->rd_fdwroutine == lfirst(ll))
		{
			rel->rd_fdwroutine = (FdwRoutine *) lfirst(ls);
			pfree(lfirst(ll));
		}
		RelationClose(rel);
	}
	list_free(loan->rels);
	list_free(loan->saved);
	list_free(loan->lent);
}

/*
 * cj_row_writes_lend
 *		See row_writes.h: colojoin's routine for the managed leaves at or
 *		below relid while PostgreSQL writes them outside the executor
 *		(COPY FROM); NULL when there are none.
 */
void *
cj_row_writes_lend(Oid relid)
{
	List	   *relids = NIL;
	Loan	   *loan;

	if (get_rel_relkind(relid) == RELKIND_FOREIGN_TABLE)
	{
		if (managed_leaf(relid, NULL) != NULL)
		{
			(void) routine(GetFdwRoutineByRelId(relid));
			relids = list_make1_oid(relid);
		}
	}
	else if (routes_to_managed_leaf(relid))
	{
		ListCell   *lc;

		foreach(lc, find_all_inheritors(relid, RowExclusiveLock, NULL))
			if (managed_leaf(lfirst_oid(lc), NULL) != NULL)
				relids = lappend_oid(relids, lfirst_oid(lc));
	}
	if (relids == NIL)
		return NULL;
	loan = palloc(sizeof(Loan));
	lend_routine(relids, loan);
	cj_writes_through_colojoin = true;
	return loan;
}

void
cj_row_writes_give_back(void *loan)
{
	if (loan == NULL)
		return;
	cj_writes_through_colojoin = false;
	give_back((Loan *) loan);
	pfree(loan);
}

static void
changed_meanwhile(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("a partition of a sharded table changed while the statement ran"),
			 errdetail("Its foreign data wrapper callbacks were not colojoin's when the executor asked for them."),
			 errhint("Run the statement again.")));
}

static void
cj_row_writes_executor_start(QueryDesc *queryDesc, int eflags)
{
	List	   *relids = marked_relids(queryDesc->plannedstmt, true);
	Loan		loan;

	lend_routine(relids, &loan);
	PG_TRY();
	{
		if (prev_executor_start)
			prev_executor_start(queryDesc, eflags);
		else
			standard_ExecutorStart(queryDesc, eflags);
	}
	PG_FINALLY();
	{
		give_back(&loan);
	}
	PG_END_TRY();

	if (relids != NIL && queryDesc->planstate != NULL &&
		wrong_routine(queryDesc->planstate, NULL))
		changed_meanwhile();
}

/* the leaves a writing plan may route rows to while it runs, or NIL */
static List *
routing_relids(QueryDesc *queryDesc)
{
	PlannedStmt *stmt = queryDesc->plannedstmt;

	if (stmt->commandType == CMD_SELECT && !stmt->hasModifyingCTE)
		return NIL;
	return marked_relids(stmt, true);
}

/* rows routed to leaves: the leaves need the routine while the plan runs */
static void
cj_row_writes_executor_run(QueryDesc *queryDesc, ScanDirection direction,
						   uint64 count, bool execute_once)
{
	List	   *relids = routing_relids(queryDesc);
	Loan		loan;

	lend_routine(relids, &loan);
	PG_TRY();
	{
		if (prev_executor_run)
			prev_executor_run(queryDesc, direction, count, execute_once);
		else
			standard_ExecutorRun(queryDesc, direction, count, execute_once);
	}
	PG_FINALLY();
	{
		give_back(&loan);
	}
	PG_END_TRY();
}

static void
cj_row_writes_executor_finish(QueryDesc *queryDesc)
{
	List	   *relids = routing_relids(queryDesc);
	Loan		loan;
	ListCell   *lc;

	lend_routine(relids, &loan);
	PG_TRY();
	{
		if (prev_executor_finish)
			prev_executor_finish(queryDesc);
		else
			standard_ExecutorFinish(queryDesc);
	}
	PG_FINALLY();
	{
		give_back(&loan);
	}
	PG_END_TRY();

	/* every leaf a row was routed to wrote through colojoin */
	if (relids != NIL)
		foreach(lc, queryDesc->estate->es_tuple_routing_result_relations)
		{
			ResultRelInfo *ri = (ResultRelInfo *) lfirst(lc);

			if (ri->ri_FdwRoutine != NULL &&
				list_member_oid(relids, RelationGetRelid(ri->ri_RelationDesc)) &&
				ri->ri_FdwRoutine->ExecForeignInsert != rw_exec_insert)
				changed_meanwhile();
		}
}

void
cj_row_writes_init(void)
{
	prev_relation_info = get_relation_info_hook;
	get_relation_info_hook = cj_relation_info;
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = cj_row_writes_executor_start;
	prev_executor_run = ExecutorRun_hook;
	ExecutorRun_hook = cj_row_writes_executor_run;
	prev_executor_finish = ExecutorFinish_hook;
	ExecutorFinish_hook = cj_row_writes_executor_finish;
	cj_statement_is_colojoins = cj_plan_is_row_writes;
}
