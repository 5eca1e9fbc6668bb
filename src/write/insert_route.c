/*-------------------------------------------------------------------------
 *
 * insert_route.c
 *	  Routing inserted rows to their leaves and sending them to every
 *	  placement (insert_route.h).
 *
 *	  A row's partition is found the way PostgreSQL's tuple routing finds
 *	  it, level by level, with PostgreSQL's own partition bound searches
 *	  and hash functions: hash partitions by the combined hash of the key,
 *	  list partitions by value (NULL to the partition that accepts NULLs),
 *	  range partitions by bound search, and anything else to the DEFAULT
 *	  partition, or the error PostgreSQL gives.  Rows gather per leaf and go
 *	  out in batches: COPY when nothing is asked back, else INSERT ... VALUES
 *	  with the statement's ON CONFLICT and RETURNING.  Every placement of
 *	  the leaf (primary and replicas) gets the same batch on the
 *	  transaction's write connection to its node, so they stay equal; a
 *	  replica that takes a different number of rows than its primary is an
 *	  error, before anything commits.
 *
 *	  This file does not plan (modify.c) and knows nothing of how the rows
 *	  were produced (an executor plan, COPY FROM's input).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/attmap.h"
#include "access/table.h"
#include "access/tupconvert.h"
#include "catalog/partition.h"
#include "executor/executor.h"
#include "lib/stringinfo.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "metadata/metadata.h"
#include "operations/placement_health.h"
#include "remote/connection.h"
#include "remote/row_decode.h"
#include "deparse/deparse.h"
#include "write/insert_route.h"

/* a batch goes out at this size (COPY) or row count (INSERT ... VALUES) */
#define CJ_ROUTE_COPY_BYTES		(1024 * 1024)
#define CJ_ROUTE_VALUES_ROWS	1000
/* and every batch when all of them together hold this much */
#define CJ_ROUTE_TOTAL_BYTES	(32 * 1024 * 1024)

/* one partitioned table on a row's way down */
typedef struct RouteLevel
{
	Relation	rel;
	PartitionKey key;
	PartitionDesc pd;
	AttrMap    *map;			/* root's columns to this table's, or NULL */
	TupleTableSlot *slot;		/* the row in this table's columns */
	List	   *expr_states;	/* of the key expressions */
	struct RouteLevel **children;	/* per partition index, made on demand */
} RouteLevel;

typedef struct LeafBatch
{
	Oid			relid;			/* hash key */
	CjLeaf	   *leaf;
	const char *conflict;		/* ON CONFLICT clause, or NULL */
	int			alias;			/* the target's range table index, which
								 * names it in conflict ("r1") */
	StringInfoData data;
	int			nrows;
	char	   *label;
} LeafBatch;

struct CjRouter
{
	Oid			relid;
	Oid			userid;
	CjTable    *table;
	Relation	root_rel;
	TupleDesc	desc;
	bool		use_values;		/* INSERT ... VALUES rather than COPY */
	bool		returning;
	List	   *conflict;
	int			nparams;
	const char *const *param_values;
	EState	   *estate;
	RouteLevel *root;
	HTAB	   *batches;
	int64		buffered;		/* bytes in all batches */
	FmgrInfo   *outfuncs;		/* per attribute */
	char	  **type_names;		/* per attribute, for VALUES casts */
	bool	   *sent;			/* per attribute: a column the nodes get */
	uint64		rows;
	MemoryContext row_cxt;
	Tuplestorestate *returned;
	TupleTableSlot *ret_slot;
	CjRowDecoder decoder;
	List	   *node_names;		/* String */
	List	   *node_rows;		/* parallel: Integer would overflow; int64 * */
	List	   *opened;			/* partitioned tables below the root, open */
	List	   *level_slots;	/* their slots, which pin their descriptors */
	Oid			last_leaf;		/* the leaf of the row put last */
};

static RouteLevel *
open_level(CjRouter *r, Oid relid)
{
	RouteLevel *lv = palloc0(sizeof(RouteLevel));
	Relation	rel = (relid == r->relid) ? r->root_rel :
		table_open(relid, RowExclusiveLock);

	if (relid != r->relid)
		r->opened = lappend(r->opened, rel);

	lv->rel = rel;
	lv->key = RelationGetPartitionKey(rel);
	lv->pd = RelationGetPartitionDesc(rel, true);
	if (relid != r->relid)
	{
		lv->map = build_attrmap_by_name_if_req(r->desc, RelationGetDescr(rel));
		if (lv->map)
		{
			lv->slot = MakeSingleTupleTableSlot(RelationGetDescr(rel),
												&TTSOpsVirtual);
			r->level_slots = lappend(r->level_slots, lv->slot);
		}
	}
	if (lv->key->partexprs != NIL)
		lv->expr_states = ExecPrepareExprList(lv->key->partexprs, r->estate);
	lv->children = palloc0(sizeof(RouteLevel *) * Max(lv->pd->nparts, 1));
	return lv;
}

/* describe the key of a row that fits no partition, as PostgreSQL does */
static char *
key_description(RouteLevel *lv, Datum *values, bool *isnull)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	appendStringInfo(&buf, "(%s) = (",
					 pg_get_partkeydef_columns(RelationGetRelid(lv->rel), false));
	for (i = 0; i < lv->key->partnatts; i++)
	{
		Oid			out;
		bool		varlena;

		if (i > 0)
			appendStringInfoString(&buf, ", ");
		if (isnull[i])
		{
			appendStringInfoString(&buf, "null");
			continue;
		}
		getTypeOutputInfo(lv->key->parttypid[i], &out, &varlena);
		appendStringInfoString(&buf, OidOutputFunctionCall(out, values[i]));
	}
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/* the index in lv's partition descriptor of the row in slot, or -1 */
static int
find_partition(RouteLevel *lv, Datum *values, bool *isnull)
{
	PartitionKey key = lv->key;
	PartitionBoundInfo bi = lv->pd->boundinfo;
	int			part = -1;
	int			i;

	if (lv->pd->nparts == 0)
		return -1;
	switch (key->strategy)
	{
		case PARTITION_STRATEGY_HASH:
			{
				uint64		h = compute_partition_hash_value(key->partnatts,
															 key->partsupfunc,
															 key->partcollation,
															 values, isnull);

				part = bi->indexes[h % get_hash_partition_greatest_modulus(bi)];
				break;
			}
		case PARTITION_STRATEGY_LIST:
			if (isnull[0])
			{
				if (partition_bound_accepts_nulls(bi))
					part = bi->null_index;
			}
			else
			{
				bool		equal = false;
				int			off = partition_list_bsearch(key->partsupfunc,
														 key->partcollation,
														 bi, values[0], &equal);

				if (off >= 0 && equal)
					part = bi->indexes[off];
			}
			break;
		case PARTITION_STRATEGY_RANGE:
			{
				bool		anynull = false;

				for (i = 0; i < key->partnatts; i++)
					anynull |= isnull[i];
				if (!anynull)
				{
					bool		equal = false;
					int			off = partition_range_datum_bsearch(key->partsupfunc,
																	key->partcollation,
																	bi, key->partnatts,
																	values, &equal);

					/* the upper bound after off closes the partition holding it */
					part = bi->indexes[off + 1];
				}
				break;
			}
	}
	if (part < 0 && partition_bound_has_default(bi))
		part = bi->default_index;
	return part;
}

/* the leaf of the row in slot (the root's columns) */
static Oid
route_row(CjRouter *r, TupleTableSlot *slot)
{
	RouteLevel *lv = r->root;
	ExprContext *econtext = GetPerTupleExprContext(r->estate);

	for (;;)
	{
		TupleTableSlot *lslot = slot;
		Datum		values[PARTITION_MAX_KEYS];
		bool		isnull[PARTITION_MAX_KEYS];
		ListCell   *le = list_head(lv->expr_states);
		int			i;
		int			part;

		if (lv->map)
			lslot = execute_attr_map_slot(lv->map, slot, lv->slot);
		econtext->ecxt_scantuple = lslot;
		for (i = 0; i < lv->key->partnatts; i++)
		{
			if (lv->key->partattrs[i] != 0)
				values[i] = slot_getattr(lslot, lv->key->partattrs[i], &isnull[i]);
			else
			{
				values[i] = ExecEvalExprSwitchContext((ExprState *) lfirst(le),
													  econtext, &isnull[i]);
				le = lnext(lv->expr_states, le);
			}
		}
		part = find_partition(lv, values, isnull);
		if (part < 0)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("no partition of relation \"%s\" found for row",
							RelationGetRelationName(lv->rel)),
					 errdetail("Partition key of the failing row contains %s.",
							   key_description(lv, values, isnull))));
		if (lv->pd->is_leaf[part])
			return lv->pd->oids[part];
		if (lv->children[part] == NULL)
		{
			MemoryContext old = MemoryContextSwitchTo(r->estate->es_query_cxt);

			lv->children[part] = open_level(r, lv->pd->oids[part]);
			MemoryContextSwitchTo(old);
		}
		lv = lv->children[part];
	}
}

CjRouter *
cj_router_begin(Oid relid, Oid userid, List *conflict, int nparams,
				const char *const *param_values, Tuplestorestate *returned,
				TupleTableSlot *ret_slot)
{
	bool		returning = (returned != NULL);
	CjRouter   *r = palloc0(sizeof(CjRouter));
	HASHCTL		ctl;
	int			i;

	r->relid = relid;
	r->userid = userid;
	r->table = cj_get_table(relid);
	r->conflict = conflict;
	r->returning = returning;
	r->use_values = (conflict != NIL || returning);
	r->nparams = nparams;
	r->param_values = param_values;
	r->returned = returned;
	r->ret_slot = ret_slot;
	if (returned != NULL)
		cj_decoder_init(&r->decoder, ret_slot->tts_tupleDescriptor);
	r->root_rel = table_open(relid, RowExclusiveLock);
	r->desc = RelationGetDescr(r->root_rel);
	r->estate = CreateExecutorState();
	r->root = open_level(r, relid);
	r->row_cxt = AllocSetContextCreate(CurrentMemoryContext, "colojoin routing",
									   ALLOCSET_DEFAULT_SIZES);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(LeafBatch);
	ctl.hcxt = CurrentMemoryContext;
	r->batches = hash_create("colojoin leaf batches", 64, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	r->outfuncs = palloc0(sizeof(FmgrInfo) * r->desc->natts);
	r->type_names = palloc0(sizeof(char *) * r->desc->natts);
	r->sent = palloc0(sizeof(bool) * r->desc->natts);
	for (i = 0; i < r->desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(r->desc, i);
		Oid			out;
		bool		varlena;

		/* generated columns are the nodes' to compute */
		if (att->attisdropped || att->attgenerated)
			continue;
		r->sent[i] = true;
		getTypeOutputInfo(att->atttypid, &out, &varlena);
		fmgr_info(out, &r->outfuncs[i]);
		r->type_names[i] = cj_type_name(att->atttypid, att->atttypmod);
	}
	return r;
}


static void
count_node_rows(CjRouter *r, Oid serverid, int64 n)
{
	char	   *name = cj_node_name(serverid);
	ListCell   *ln;
	ListCell   *lr;

	forboth(ln, r->node_names, lr, r->node_rows)
	{
		if (strcmp(strVal(lfirst(ln)), name) == 0)
		{
			*(int64 *) lfirst(lr) += n;
			return;
		}
	}
	r->node_names = lappend(r->node_names, makeString(name));
	r->node_rows = lappend(r->node_rows, palloc0(sizeof(int64)));
	*(int64 *) llast(r->node_rows) = n;
}

void
cj_router_node_rows(CjRouter *r, List **nodes, List **rows)
{
	*nodes = r->node_names;
	*rows = r->node_rows;
}

/* "(col, col, ...)" as the leaf's node names them */
static void
append_columns(StringInfo buf, CjRouter *r, CjLeaf *leaf, bool all)
{
	bool		first = true;
	int			i;

	appendStringInfoChar(buf, all ? ' ' : '(');
	for (i = 0; i < r->desc->natts; i++)
	{
		if (all ? TupleDescAttr(r->desc, i)->attisdropped : !r->sent[i])
		{
			if (all)
				appendStringInfo(buf, "%sNULL::pg_catalog.int4", first ? "" : ", ");
			else
				continue;
		}
		else
			appendStringInfo(buf, "%s%s", first ? "" : ", ",
							 cj_quote_ident(cj_leaf_colnames(leaf)[i]));
		first = false;
	}
	if (!all)
		appendStringInfoChar(buf, ')');
}

/*
 * check_batches
 *		Before a batch goes out: the nodes of every batch gathered so far
 *		(all of them, for a statement whose rows fit in memory) can commit
 *		together, so that a node that cannot prepare is refused before the
 *		statement writes anything.
 */
static void
check_batches(CjRouter *r)
{
	HASH_SEQ_STATUS scan;
	LeafBatch  *b;
	List	   *conns = NIL;

	hash_seq_init(&scan, r->batches);
	while ((b = hash_seq_search(&scan)) != NULL)
	{
		int			p;

		if (b->nrows == 0)
			continue;
		for (p = 0; p < b->leaf->nplacements; p++)
		{
			char	   *why;
			CjConnection *conn = cj_try_write_connection(b->leaf->placements[p].serverid,
														 r->userid, &why);

			/* a node that is down is marked stale when its batch goes out */
			if (conn != NULL)
				conns = lappend(conns, conn);
		}
	}
	cj_check_two_phase(conns);
	list_free(conns);
}

/* send a leaf's batch to each of its placements */
static void
flush_batch(CjRouter *r, LeafBatch *b)
{
	List	   *conns = NIL;
	ListCell   *lc;
	int			p;
	int64		primary_count = -1;

	if (b->nrows == 0)
		return;
	/* placements whose node is down are marked stale, the others written */
	conns = cj_health_write_connections(b->leaf, r->userid);
	check_batches(r);

	p = 0;
	foreach(lc, conns)
	{
		CjConnection *conn = (CjConnection *) lfirst(lc);
		CjPlacement *pl = &b->leaf->placements[p];
		StringInfoData sql;
		int64		count;
		bool		first = (primary_count < 0);

		p++;
		if (conn == NULL)
			continue;			/* its node is down: marked stale */
		initStringInfo(&sql);
		cj_conn_note_dml(conn);
		if (!r->use_values)
		{
			appendStringInfo(&sql, "COPY %s ",
							 cj_qualified_name(pl->remote_schema, pl->remote_table));
			append_columns(&sql, r, b->leaf, false);
			appendStringInfoString(&sql, " FROM STDIN");
			cj_copy_in_start(conn, sql.data, b->label);
			cj_copy_in_put(conn, b->data.data, b->data.len, b->label);
			cj_copy_in_finish(conn, sql.data, b->label);
			count = b->nrows;
		}
		else
		{
			PGresult   *res;
			int			i;

			appendStringInfo(&sql, "INSERT INTO %s AS r%d ",
							 cj_qualified_name(pl->remote_schema, pl->remote_table),
							 b->alias);
			append_columns(&sql, r, b->leaf, false);
			appendStringInfoString(&sql, " VALUES ");
			appendBinaryStringInfo(&sql, b->data.data, b->data.len);
			if (b->conflict)
				appendStringInfoString(&sql, b->conflict);
			if (r->returning && first)
			{
				appendStringInfoString(&sql, " RETURNING");
				append_columns(&sql, r, b->leaf, true);
			}
			cj_conn_send_params(conn, sql.data, r->nparams, r->param_values,
								b->label);
			res = cj_conn_collect(conn, sql.data, b->label);
			count = atoll(PQcmdTuples(res));
			if (r->returning && first && r->returned != NULL)
			{
				for (i = 0; i < PQntuples(res); i++)
				{
					int			col;

					ExecClearTuple(r->ret_slot);
					for (col = 0; col < r->desc->natts; col++)
					{
						r->ret_slot->tts_isnull[col] = PQgetisnull(res, i, col);
						r->ret_slot->tts_values[col] = r->ret_slot->tts_isnull[col] ?
							(Datum) 0 : cj_decode_value(&r->decoder, res, i, col);
					}
					ExecStoreVirtualTuple(r->ret_slot);
					tuplestore_puttupleslot(r->returned, r->ret_slot);
				}
			}
			PQclear(res);
		}
		if (first)
		{
			primary_count = count;
			r->rows += count;
		}
		else if (count != primary_count)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("replica of leaf \"%s\" on node \"%s\" took " INT64_FORMAT " rows where its primary took " INT64_FORMAT,
							get_rel_name(b->relid), cj_node_name(pl->serverid),
							count, primary_count),
					 errdetail("The placements of the leaf no longer hold the same rows; the transaction is rolled back so that they do not drift further apart."),
					 errhint("Compare the placements and repair the replica (drop it and add it again).")));
		count_node_rows(r, pl->serverid, count);
	}
	r->buffered -= b->data.len;
	resetStringInfo(&b->data);
	b->nrows = 0;
}

/* every batch, in the table's leaf order (RETURNING comes back in it) */
static void
flush_all(CjRouter *r)
{
	int			c,
				l;

	for (c = 0; c < r->table->nclasses; c++)
	{
		for (l = 0; l < r->table->classes[c].nleaves; l++)
		{
			Oid			relid = r->table->classes[c].leaves[l].relid;
			LeafBatch  *b = hash_search(r->batches, &relid, HASH_FIND, NULL);

			if (b != NULL)
				flush_batch(r, b);
		}
	}
}

static LeafBatch *
batch_for(CjRouter *r, Oid leafrelid)
{
	bool		found;
	LeafBatch  *b = hash_search(r->batches, &leafrelid, HASH_ENTER, &found);
	ListCell   *lc;
	int			li;
	int			c;

	if (found)
		return b;

	/*
	 * A class move switches a leaf's placement holding EXCLUSIVE on the
	 * leaf (operations/class_move.c): the first row for a leaf waits for a
	 * switch under way, and the placements are read after the lock, so the
	 * rows go where the leaf is once the switch committed.
	 */
	LockRelationOid(leafrelid, RowExclusiveLock);
	r->table = cj_get_table(r->relid);
	c = cj_class_of_leaf(r->table, leafrelid, &li);
	if (c < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("leaf \"%s\" of sharded table \"%s\" has no placement colojoin knows",
						get_rel_name(leafrelid), get_rel_name(r->relid))));
	b->leaf = &r->table->classes[c].leaves[li];
	b->conflict = NULL;
	b->alias = 1;
	foreach(lc, r->conflict)
	{
		List	   *item = (List *) lfirst(lc);

		if ((Oid) intVal(linitial(item)) == leafrelid)
		{
			b->conflict = strVal(lsecond(item));
			b->alias = intVal(lthird(item));
		}
	}
	initStringInfo(&b->data);
	b->nrows = 0;
	b->label = psprintf("insert into leaf %s", get_rel_name(leafrelid));
	return b;
}

void
cj_router_put(CjRouter *r, TupleTableSlot *slot)
{
	Oid			leafrelid;
	LeafBatch  *b;
	MemoryContext old;
	int			before;
	int			i;
	bool		first = true;

	slot_getallattrs(slot);
	old = MemoryContextSwitchTo(r->row_cxt);
	leafrelid = route_row(r, slot);
	ResetPerTupleExprContext(r->estate);
	MemoryContextSwitchTo(old);
	b = batch_for(r, leafrelid);

	/*
	 * Rows come back in the order they came, as from PostgreSQL's
	 * ModifyTable: with RETURNING, a row for another leaf first sends the
	 * batch of the row before it.
	 */
	if (r->returned != NULL && OidIsValid(r->last_leaf) &&
		r->last_leaf != leafrelid)
	{
		LeafBatch  *prev = hash_search(r->batches, &r->last_leaf, HASH_FIND, NULL);

		if (prev != NULL)
			flush_batch(r, prev);
	}
	r->last_leaf = leafrelid;
	before = b->data.len;

	old = MemoryContextSwitchTo(r->row_cxt);
	if (r->use_values)
		appendStringInfoString(&b->data, b->nrows > 0 ? ", (" : "(");
	for (i = 0; i < r->desc->natts; i++)
	{
		if (!r->sent[i])
			continue;
		if (!first)
			appendStringInfoChar(&b->data, r->use_values ? ',' : '\t');
		first = false;
		if (slot->tts_isnull[i])
		{
			if (r->use_values)
				appendStringInfo(&b->data, "NULL::%s", r->type_names[i]);
			else
				appendStringInfoString(&b->data, "\\N");
			continue;
		}
		if (r->use_values)
		{
			cj_append_literal(&b->data,
							  OutputFunctionCall(&r->outfuncs[i], slot->tts_values[i]));
			appendStringInfo(&b->data, "::%s", r->type_names[i]);
		}
		else
			cj_append_copy_value(&b->data,
							 OutputFunctionCall(&r->outfuncs[i], slot->tts_values[i]));
	}
	appendStringInfoChar(&b->data, r->use_values ? ')' : '\n');
	MemoryContextSwitchTo(old);
	MemoryContextReset(r->row_cxt);
	b->nrows++;
	r->buffered += b->data.len - before;

	if (r->use_values ? b->nrows >= CJ_ROUTE_VALUES_ROWS :
		b->data.len >= CJ_ROUTE_COPY_BYTES)
		flush_batch(r, b);
	else if (r->buffered >= CJ_ROUTE_TOTAL_BYTES)
		flush_all(r);
}

uint64
cj_router_end(CjRouter *r)
{
	ListCell   *lc;

	flush_all(r);
	/* a slot pins its relation's descriptor until it is dropped */
	foreach(lc, r->level_slots)
		ExecDropSingleTupleTableSlot((TupleTableSlot *) lfirst(lc));
	foreach(lc, r->opened)
		table_close((Relation) lfirst(lc), NoLock);
	table_close(r->root_rel, NoLock);
	FreeExecutorState(r->estate);
	return r->rows;
}
