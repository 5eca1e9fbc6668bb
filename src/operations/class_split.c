/*-------------------------------------------------------------------------
 *
 * class_split.c
 *	  colojoin.split_shards: re-partition a hash-sharded table, and every
 *	  table colocated with it, to a finer modulus (16 to 32, say): each
 *	  class of modulus m becomes new_modulus / m classes, whose rows the
 *	  old class's node sorts out itself, in place or onto the servers given.
 *
 *	  One call splits every class (or one, partition_class), all tables of
 *	  the colocation group alike so that their joins stay colocated; a
 *	  table whose classes have different moduli is legal in PostgreSQL
 *	  (each modulus divides the next), and joins of moduli 16 and 32 already
 *	  run without moving rows, so a group may be split one class at a time.
 *	  Writes to the tables being split wait (EXCLUSIVE on them, taken all
 *	  or none at a time) while the rows are copied; reads go on until the
 *	  switch, which detaches the old leaves and attaches the new
 *	  ones in the caller's transaction; the new remote tables, the copies
 *	  and the old tables' drop commit with it on every node (two-phase
 *	  commit), so a failure leaves the old partitions serving and nothing
 *	  half split.
 *
 *	  The node routes rows as the coordinator would: a helper table there,
 *	  partitioned by hash on the key's types, operator classes and
 *	  collations, lets satisfies_hash_partition() say which new class a row
 *	  belongs to.  It does not move classes between servers afterwards
 *	  (class_move.c) and does not make the new tables' statements
 *	  (remote_table_ddl.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_partitioned_table.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "metadata/colocation.h"
#include "metadata/metadata.h"
#include "metadata/node_identity.h"
#include "operations/class_move.h"
#include "operations/class_split.h"
#include "operations/progress.h"
#include "operations/rebalance_plan.h"
#include "operations/remote_table_ddl.h"
#include "operations/shard_drop.h"
#include "remote/connection.h"
#include "util/catalog_query.h"
#include "util/extension.h"

PG_FUNCTION_INFO_V1(colojoin_split_shards);

/* the key of t as a helper table's column list and partitioning */
char *
cj_split_helper_ddl(CjTable *t, const char *qualified)
{
	StringInfoData colsbuf;
	StringInfoData keysbuf;
	StringInfo	cols = &colsbuf;
	StringInfo	keys = &keysbuf;
	HeapTuple	tup = SearchSysCache1(PARTRELID, ObjectIdGetDatum(t->relid));
	oidvector  *partclass;
	Datum		datum;
	bool		isnull;
	int			i;

	initStringInfo(cols);
	initStringInfo(keys);
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for partition key of %u", t->relid);
	datum = SysCacheGetAttr(PARTRELID, tup, Anum_pg_partitioned_table_partclass, &isnull);
	Assert(!isnull);
	partclass = (oidvector *) DatumGetPointer(datum);
	for (i = 0; i < t->partnatts; i++)
	{
		HeapTuple	ot = SearchSysCache1(CLAOID, ObjectIdGetDatum(partclass->values[i]));
		Form_pg_opclass opc;

		if (!HeapTupleIsValid(ot))
			elog(ERROR, "cache lookup failed for operator class %u", partclass->values[i]);
		opc = (Form_pg_opclass) GETSTRUCT(ot);
		appendStringInfo(cols, "%sk%d %s", i > 0 ? ", " : "", i + 1,
						 format_type_extended(t->parttypid[i], t->parttypmod[i],
											  FORMAT_TYPE_TYPEMOD_GIVEN |
											  FORMAT_TYPE_FORCE_QUALIFY));
		if (OidIsValid(t->partcollation[i]))
		{
			HeapTuple	ct = SearchSysCache1(COLLOID, ObjectIdGetDatum(t->partcollation[i]));

			if (!HeapTupleIsValid(ct))
				elog(ERROR, "cache lookup failed for collation %u", t->partcollation[i]);
			appendStringInfo(cols, " COLLATE %s",
							 quote_qualified_identifier(get_namespace_name(((Form_pg_collation) GETSTRUCT(ct))->collnamespace),
														NameStr(((Form_pg_collation) GETSTRUCT(ct))->collname)));
			ReleaseSysCache(ct);
		}
		appendStringInfo(keys, "%sk%d %s", i > 0 ? ", " : "", i + 1,
						 quote_qualified_identifier(get_namespace_name(opc->opcnamespace),
													NameStr(opc->opcname)));
		ReleaseSysCache(ot);
	}
	ReleaseSysCache(tup);
	return psprintf("CREATE TABLE %s (%s) PARTITION BY HASH (%s)", qualified,
					cols->data, keys->data);
}

/* "satisfies_hash_partition(helper, m, r, key columns cast to their types)" */
char *
cj_split_class_test(CjTable *t, CjLeaf *leaf, const char *helper, int modulus, int remainder)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	appendStringInfo(&buf, "pg_catalog.satisfies_hash_partition(%s::pg_catalog.regclass, %d, %d",
					 quote_literal_cstr(helper), modulus, remainder);
	for (i = 0; i < t->partnatts; i++)
		appendStringInfo(&buf, ", %s::%s",
						 quote_identifier(cj_leaf_colnames(leaf)[t->partattrs[i] - 1]),
						 format_type_extended(t->parttypid[i], t->parttypmod[i],
											  FORMAT_TYPE_TYPEMOD_GIVEN |
											  FORMAT_TYPE_FORCE_QUALIFY));
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/* cj_split_leaf_name: see class_split.h */
char *
cj_split_leaf_name(Oid relid, int modulus, int remainder, char **suffix)
{
	char	   *sfx = psprintf("_m%dp%d", modulus, remainder);

	if (suffix)
		*suffix = sfx;
	return psprintf("%.*s%s", (int) (NAMEDATALEN - 1 - strlen(sfx)),
					get_rel_name(relid), sfx);
}

/* what a table must be for its classes to split */
static void
check_splittable(CjTable *t)
{
	const char *name = quote_identifier(get_rel_name(t->relid));
	int			i;

	if (!pg_class_ownercheck(t->relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(t->relid));
	if (t->strategy != PARTITION_STRATEGY_HASH || cj_is_reference_table(t))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s is not hash-sharded", name),
				 errhint("split_shards splits the hash partitions of sharded tables.")));
	for (i = 0; i < t->partnatts; i++)
		if (t->partattrs[i] == 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s is partitioned on an expression", name),
					 errhint("split_shards splits tables partitioned on columns.")));
}

/* the leaf of class c of t, checked */
static CjLeaf *
split_leaf(CjTable *t, int c)
{
	CjClass    *cls = &t->classes[c];
	CjLeaf	   *leaf;
	const char *name = quote_identifier(get_rel_name(t->relid));

	if (cls->nleaves != 1 || cls->leaves[0].relid != cls->partrelid)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("class %d of %s is partitioned again", c, name),
				 errhint("split_shards splits classes of one foreign table each.")));
	leaf = &cls->leaves[0];
	if (!leaf->is_foreign || leaf->nplacements != 1 || leaf->nstale > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("class %d of %s has %s", c, name,
						!leaf->is_foreign ? "a local partition" : "replicas"),
				 errhint("Drop its replicas before the split (colojoin.drop_replica) and add them again after.")));
	return leaf;
}

/* run sql through SPI (the caller's DDL on the coordinator) */
static void
spi_exec(const char *sql, int expected)
{
	if (SPI_execute(sql, false, 0) != expected)
		elog(ERROR, "colojoin: could not run \"%s\"", sql);
}

/*
 * colojoin_split_shards
 *		colojoin.split_shards(table_name regclass, new_modulus integer,
 *		servers name[] DEFAULT NULL, partition_class integer DEFAULT NULL)
 *		→ integer: the partitions made.
 */
Datum
colojoin_split_shards(PG_FUNCTION_ARGS)
{
	Oid			relid;
	int			new_modulus;
	List	   *servers;
	int			only = PG_ARGISNULL(3) ? -1 : PG_GETARG_INT32(3);
	char	   *mode = PG_ARGISNULL(4) ? "blocking" : text_to_cstring(PG_GETARG_TEXT_PP(4));
	bool		online;
	CjTable    *t;
	List	   *relids;
	List	   *tables = NIL;
	List	   *splits = NIL;
	List	   *made = NIL;		/* CjNewLeaf */
	List	   *helpers = NIL;
	ListCell   *lc;
	ListCell   *lt;
	Oid			userid = GetUserId();
	int			c;
	int			n = 0;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("table_name and new_modulus must not be NULL")));
	colojoin_require_active();
	PreventCommandIfReadOnly("colojoin.split_shards()");
	relid = PG_GETARG_OID(0);
	new_modulus = PG_GETARG_INT32(1);
	if (strcmp(mode, "online") != 0 && strcmp(mode, "blocking") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown split mode \"%s\"", mode),
				 errhint("The modes are 'online' and 'blocking'.")));
	online = (strcmp(mode, "online") == 0);
	servers = PG_ARGISNULL(2) ? NIL : cj_server_list(PG_GETARG_DATUM(2));

	LockRelationOid(relid, ShareUpdateExclusiveLock);
	t = cj_get_table(relid);
	if (t == NULL || !t->all_foreign)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a sharded table", get_rel_name(relid)),
				 errhint("split_shards takes a partitioned table whose partitions are postgres_fdw foreign tables.")));
	check_splittable(t);
	if (only >= t->nclasses)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s has no partition class %d", quote_identifier(get_rel_name(relid)), only)));

	/* the table and every table colocated with it split alike */
	relids = list_make1_oid(relid);
	foreach(lc, cj_top_level_partitioned_tables())
	{
		CjTable    *o = cj_get_table(lfirst_oid(lc));

		if (o != NULL && o->relid != relid && cj_tables_colocated(t, o))
			relids = lappend_oid(relids, o->relid);
	}

	/*
	 * Blocking, writes to these tables wait from here (their leaves are
	 * replaced: a writer that had routed a row to an old leaf could not
	 * write it after), reads go on; all or none at a time, as writers may
	 * hold one table and want the other.  Online, they wait only for the
	 * catch-up (split_online.c); here one split at a time.  The metadata is
	 * read again after the locks.
	 */
	if (online)
	{
		foreach(lc, relids)
			LockRelationOid(lfirst_oid(lc), ShareUpdateExclusiveLock);
	}
	else
		cj_lock_together(relids, ExclusiveLock);
	foreach(lc, relids)
	{
		CjTable    *o = cj_get_table(lfirst_oid(lc));

		if (o == NULL || !o->all_foreign)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("\"%s\" changed while the split waited for it",
							get_rel_name(lfirst_oid(lc)))));
		check_splittable(o);
		tables = lappend(tables, o);
	}
	t = (CjTable *) linitial(tables);

	for (c = 0; c < t->nclasses; c++)
	{
		PartitionBoundSpec *b = t->classes[c].bound;

		if (only >= 0 && c != only)
			continue;
		if (b->modulus >= new_modulus && only < 0)
			continue;
		if (new_modulus <= b->modulus || new_modulus % b->modulus != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("class %d of %s has modulus %d, which new_modulus %d is not a larger multiple of",
							c, quote_identifier(get_rel_name(relid)), b->modulus, new_modulus),
					 errhint("Each class splits into new_modulus / modulus classes.")));
		foreach(lt, tables)
		{
			CjTable    *tab = (CjTable *) lfirst(lt);
			CjSplitLeaf  *s = palloc(sizeof(CjSplitLeaf));

			s->table = tab;
			s->leaf = split_leaf(tab, c);
			s->modulus = b->modulus;
			s->remainder = b->remainder;
			splits = lappend(splits, s);
		}
	}
	if (splits == NIL)
	{
		ereport(NOTICE,
				(errmsg("every class of %s has modulus %d or more already",
						quote_identifier(get_rel_name(relid)), new_modulus)));
		PG_RETURN_INT32(0);
	}

	cj_progress_begin("split_shards", relid, "copying rows", list_length(splits));

	if (online)
		made = cj_split_online(splits, new_modulus, servers, relids);
	else
	{
		foreach(lc, splits)
		{
			CjSplitLeaf  *s = (CjSplitLeaf *) lfirst(lc);
			CjPlacement *pl = &s->leaf->placements[0];
			CjConnection *src = cj_get_write_connection(cj_node_representative(pl->serverid, userid),
														userid);
			char	   *old_qualified = quote_qualified_identifier(pl->remote_schema, pl->remote_table);
			char	   *helper = psprintf("colojoin_split_%u_%d", s->leaf->relid, MyProcPid);
			char	   *helper_qualified = quote_qualified_identifier(pl->remote_schema, helper);
			char	   *context = psprintf("splitting %s on server \"%s\"", old_qualified,
										   cj_node_name(pl->serverid));
			int			k;

			cj_exec_command(src, cj_split_helper_ddl(s->table, helper_qualified), context);
			helpers = lappend(helpers, list_make2(src, helper_qualified));
			cj_conn_note_dml(src);

			for (k = 0; k < new_modulus / s->modulus; k++)
			{
				int			r = s->remainder + k * s->modulus;
				Oid			to = servers != NIL ?
					list_nth_oid(servers, r % list_length(servers)) : pl->serverid;
				char	   *suffix;
				char	   *name = cj_split_leaf_name(s->table->relid, new_modulus, r, &suffix);
				char	   *new_qualified = quote_qualified_identifier(pl->remote_schema, name);
				CjRemoteTableDdl *ddl = cj_remote_table_ddl(src, cj_node_name(pl->serverid),
															pl->remote_schema, pl->remote_table,
															name, suffix);
				CjConnection *dst;
				char	   *test = cj_split_class_test(s->table, s->leaf, helper_qualified, new_modulus, r);

				(void) cj_get_connection(to, userid, 0);
				dst = cj_get_write_connection(cj_node_representative(to, userid), userid);
				cj_check_two_phase(list_make2(src, dst));
				cj_twin_create(dst, ddl, new_qualified, NULL, context);
				cj_conn_note_write(dst, psprintf("DROP TABLE IF EXISTS %s", new_qualified),
								   psprintf("table %s", new_qualified));
				cj_conn_note_dml(dst);
				if (dst == src)
					cj_exec_command(src, psprintf("INSERT INTO %s (%s) SELECT %s FROM %s WHERE %s",
												  new_qualified, ddl->columns, ddl->columns,
												  old_qualified, test), context);
				else
					(void) cj_copy_rows(src, psprintf("COPY (SELECT %s FROM %s WHERE %s) TO STDOUT",
													  ddl->columns, old_qualified, test),
										dst, psprintf("COPY %s (%s) FROM STDIN", new_qualified,
													  ddl->columns),
										context);
				cj_twin_finish(dst, ddl, new_qualified, NULL, context);
				{
					CjNewLeaf    *nl = palloc(sizeof(CjNewLeaf));

					nl->from = s;
					nl->name = name;
					nl->remote = name;
					nl->server = to;
					nl->schema = pl->remote_schema;
					nl->remainder = r;
					nl->comment = ddl->comment;
					made = lappend(made, nl);
				}
			}
			cj_exec_command(src, psprintf("DROP TABLE %s", old_qualified), context);
			cj_progress_advance(1);
		}
		foreach(lc, helpers)
			cj_exec_command((CjConnection *) linitial((List *) lfirst(lc)),
							psprintf("DROP TABLE %s", (char *) lsecond((List *) lfirst(lc))),
							"dropping a split's helper table");

		cj_move_debug_pause("split_copied");
	}

	/* the switch: old leaves out, new ones in, in the caller's transaction */
	cj_progress_phase("switching partitions", 0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	foreach(lc, splits)
	{
		CjSplitLeaf  *s = (CjSplitLeaf *) lfirst(lc);
		Oid			leafid = s->leaf->relid;
		char	   *leafname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(leafid)),
														  get_rel_name(leafid));

		cj_forget_shard_origin(leafid, s->leaf->placements[0].serverid);
		spi_exec(psprintf("ALTER TABLE %s DETACH PARTITION %s",
						  quote_qualified_identifier(get_namespace_name(get_rel_namespace(s->table->relid)),
													 get_rel_name(s->table->relid)),
						  leafname), SPI_OK_UTILITY);
		spi_exec(psprintf("DROP FOREIGN TABLE %s", leafname), SPI_OK_UTILITY);
	}
	foreach(lc, made)
	{
		CjNewLeaf    *nl = (CjNewLeaf *) lfirst(lc);
		CjTable    *tab = nl->from->table;
		char	   *nsp = get_namespace_name(get_rel_namespace(tab->relid));
		char	   *qualified = quote_qualified_identifier(nsp, nl->name);
		Oid			newleaf;
		int			i;

		spi_exec(psprintf("CREATE FOREIGN TABLE %s PARTITION OF %s "
						  "FOR VALUES WITH (MODULUS %d, REMAINDER %d) SERVER %s "
						  "OPTIONS (schema_name %s, table_name %s)",
						  qualified,
						  quote_qualified_identifier(nsp, get_rel_name(tab->relid)),
						  new_modulus, nl->remainder, quote_identifier(cj_node_name(nl->server)),
						  quote_literal_cstr(nl->schema), quote_literal_cstr(nl->remote)),
				 SPI_OK_UTILITY);

		/* remote column names the old leaf had, the new one keeps */
		for (i = 0; i < nl->from->leaf->natts; i++)
		{
			const char *remote = cj_leaf_colnames(nl->from->leaf)[i];
			char	   *local = get_attname(tab->relid, i + 1, true);

			if (remote != NULL && local != NULL && strcmp(remote, local) != 0)
				spi_exec(psprintf("ALTER FOREIGN TABLE %s ALTER COLUMN %s OPTIONS (ADD column_name %s)",
								  qualified, quote_identifier(local),
								  quote_literal_cstr(remote)),
						 SPI_OK_UTILITY);
		}
		newleaf = get_relname_relid(nl->name, get_rel_namespace(tab->relid));
		cj_record_shard_origin(newleaf, nl->server, nl->schema, nl->remote);
		n++;
	}
	SPI_finish();
	foreach(lt, tables)
		cj_metadata_invalidate(((CjTable *) lfirst(lt))->relid);
	cj_progress_end();
	ereport(NOTICE,
			(errmsg("split %d classes of %d tables into %d partitions of modulus %d",
					list_length(splits) / list_length(tables), list_length(tables), n,
					new_modulus)));
	PG_RETURN_INT32(n);
}
