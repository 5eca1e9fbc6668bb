/*-------------------------------------------------------------------------
 *
 * replicas.c
 *	  Replica placements of leaf partitions: colojoin.add_replica,
 *	  colojoin.drop_replica, and the trigger that tells every backend's
 *	  metadata cache when colojoin.replicas changes.
 *
 *	  A replica is a copy of a postgres_fdw leaf on another server, under
 *	  the same remote schema and table name as the primary.  This file
 *	  registers replicas and, when asked, creates and fills the copy; it
 *	  does not keep copies in sync afterwards (writes through postgres_fdw
 *	  reach the primary only) and drop_replica never drops the remote table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "metadata/metadata.h"
#include "metadata/node_identity.h"
#include "operations/shard_create.h"
#include "operations/shard_drop.h"
#include "remote/connection.h"
#include "util/catalog_query.h"

PG_FUNCTION_INFO_V1(colojoin_add_replica);
PG_FUNCTION_INFO_V1(colojoin_drop_replica);
PG_FUNCTION_INFO_V1(colojoin_replicas_changed);

static void
require_extension(void)
{
	if (!OidIsValid(cj_replicas_relid()))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension colojoin is not installed in this database")));
}

/*
 * The top-level partitioned table above partition relid, after checking
 * that relid is a leaf partition, a postgres_fdw foreign table, and that
 * the current user owns it.  Returns its foreign server in *serverid.
 */
static Oid
check_replicable_leaf(Oid relid, Oid *serverid)
{
	char		relkind = get_rel_relkind(relid);
	char	   *name = get_rel_name(relid);
	ForeignTable *ft;
	List	   *ancestors;

	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (!get_rel_relispartition(relid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a partition", name),
				 errdetail("Replicas are extra placements of the leaf partitions of a sharded table.")));
	if (relkind == RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a leaf partition", name),
				 errdetail("It is partitioned itself."),
				 errhint("Add replicas of its leaf partitions.")));
	if (relkind != RELKIND_FOREIGN_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a foreign table", name),
				 errdetail("Only postgres_fdw foreign partitions can have replicas; \"%s\" is stored on the coordinator.",
						   name)));

	ft = GetForeignTable(relid);
	if (!cj_is_postgres_fdw_server(ft->serverid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("foreign table \"%s\" does not use postgres_fdw", name),
				 errdetail("Its server \"%s\" belongs to another foreign-data wrapper.",
						   cj_node_name(ft->serverid))));

	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_FOREIGN_TABLE, name);

	*serverid = ft->serverid;
	ancestors = get_partition_ancestors(relid);
	return llast_oid(ancestors);
}

/* the replica server: must exist, use postgres_fdw and be usable by us */
static Oid
check_replica_server(const char *server)
{
	Oid			serverid = get_foreign_server_oid(server, false);
	AclResult	aclresult;

	if (!cj_is_postgres_fdw_server(serverid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("server \"%s\" does not use postgres_fdw", server),
				 errdetail("Replicas are read through postgres_fdw, like the primary placement.")));
	aclresult = pg_foreign_server_aclcheck(serverid, GetUserId(), ACL_USAGE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FOREIGN_SERVER, server);
	return serverid;
}

/*
 * Create (when missing) and fill the replica's table on dst from the
 * primary's on src.  The new table gets the sharded table's columns
 * (cj_shard_table_ddl), renamed to the leaf's remote column names when
 * postgres_fdw column_name options make them differ, so that the same
 * remote SQL runs on every placement.  An existing table must be empty.
 * Every change is noted with the connection layer, so that it commits with
 * the local transaction and is undone if the local commit fails.
 */
static void
copy_replica(Oid toprelid, CjLeaf *leaf, CjPlacement *primary,
			 Oid serverid, const char *server)
{
	/*
	 * The transaction's write connections: the primary's rows written
	 * earlier in this transaction are read, and the rows written later go
	 * where the new table is.
	 */
	CjConnection *src = cj_get_write_connection(primary->serverid, GetUserId());
	CjConnection *dst;
	char	   *why;

	const char *schema = primary->remote_schema;
	const char *table = primary->remote_table;
	char	   *qualified = quote_qualified_identifier(schema, table);
	char	   *context = psprintf("replica of %s on server %s",
								   quote_identifier(get_rel_name(leaf->relid)), server);
	bool		table_exists;
	Relation	rel;
	TupleDesc	desc;
	StringInfoData cols;
	StringInfoData sql;
	int			i;

	/* DDL on one connection per database (see shard_create.c) */
	if (!cj_conn_try_connect(serverid, GetUserId(), 0, &why))
		(void) cj_get_connection(serverid, GetUserId(), 0);
	dst = cj_get_write_connection(cj_node_representative(serverid, GetUserId()),
								  GetUserId());

	/* both connections are open now, so both databases are known */
	if (cj_node_same(primary->serverid, serverid))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("server \"%s\" reaches the same database as server \"%s\", the primary placement of %s",
						server, cj_node_name(primary->serverid),
						quote_identifier(get_rel_name(leaf->relid))),
				 errdetail("A replica there would be the primary table itself."),
				 errhint("Add the replica on a server of another node.")));

	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT (SELECT true FROM pg_catalog.pg_namespace WHERE nspname = %s),"
					 " (SELECT true FROM pg_catalog.pg_class c"
					 "  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
					 "  WHERE n.nspname = %s AND c.relname = %s)",
					 quote_literal_cstr(schema), quote_literal_cstr(schema),
					 quote_literal_cstr(table));
	{
		PGresult   *res = cj_exec_query(dst, sql.data, context);
		bool		schema_exists = !PQgetisnull(res, 0, 0);

		table_exists = !PQgetisnull(res, 0, 1);
		PQclear(res);

		if (!schema_exists)
		{
			resetStringInfo(&sql);
			appendStringInfo(&sql, "CREATE SCHEMA %s", quote_identifier(schema));
			cj_exec_command(dst, sql.data, context);
			resetStringInfo(&sql);
			appendStringInfo(&sql, "DROP SCHEMA IF EXISTS %s", quote_identifier(schema));
			cj_conn_note_write(dst, sql.data, psprintf("schema %s", quote_identifier(schema)));
		}
	}

	if (!table_exists)
	{
		bool		renamed = false;

		cj_exec_command(dst, cj_shard_table_ddl(toprelid, schema, table, false),
						context);
		resetStringInfo(&sql);
		appendStringInfo(&sql, "DROP TABLE IF EXISTS %s", qualified);
		cj_conn_note_write(dst, sql.data, psprintf("table %s", qualified));
		cj_record_shard_origin(leaf->relid, serverid, schema, table);

		/*
		 * Rename through temporary names first, so that remote names that
		 * swap two local names cannot collide.
		 */
		rel = relation_open(toprelid, AccessShareLock);
		desc = RelationGetDescr(rel);
		for (i = 0; i < leaf->natts; i++)
		{
			const char *local = NameStr(TupleDescAttr(desc, i)->attname);

			if (cj_leaf_colnames(leaf)[i] == NULL ||
				strcmp(local, cj_leaf_colnames(leaf)[i]) == 0)
				continue;
			resetStringInfo(&sql);
			appendStringInfo(&sql, "ALTER TABLE %s RENAME COLUMN %s TO %s",
							 qualified, quote_identifier(local),
							 quote_identifier(psprintf("colojoin_rename_%d", i + 1)));
			cj_exec_command(dst, sql.data, context);
			renamed = true;
		}
		for (i = 0; renamed && i < leaf->natts; i++)
		{
			const char *local = NameStr(TupleDescAttr(desc, i)->attname);

			if (cj_leaf_colnames(leaf)[i] == NULL ||
				strcmp(local, cj_leaf_colnames(leaf)[i]) == 0)
				continue;
			resetStringInfo(&sql);
			appendStringInfo(&sql, "ALTER TABLE %s RENAME COLUMN %s TO %s",
							 qualified,
							 quote_identifier(psprintf("colojoin_rename_%d", i + 1)),
							 quote_identifier(cj_leaf_colnames(leaf)[i]));
			cj_exec_command(dst, sql.data, context);
		}
		relation_close(rel, AccessShareLock);
	}
	else
	{
		resetStringInfo(&sql);
		appendStringInfo(&sql, "SELECT true FROM %s LIMIT 1", qualified);
		if (cj_exec_value(dst, sql.data, context) != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("table %s on server \"%s\" already holds rows", qualified, server),
					 errhint("Empty it first, or call colojoin.add_replica with copy_data => false if it already is a copy.")));
		resetStringInfo(&sql);
		appendStringInfo(&sql, "TRUNCATE %s", qualified);
		cj_conn_note_write(dst, sql.data, psprintf("rows copied into %s", qualified));
	}

	/*
	 * Generated columns are left out: the replica's table computes them
	 * itself and COPY refuses to write them.
	 */
	initStringInfo(&cols);
	rel = relation_open(toprelid, AccessShareLock);
	desc = RelationGetDescr(rel);
	for (i = 0; i < leaf->natts; i++)
	{
		if (cj_leaf_colnames(leaf)[i] == NULL ||
			TupleDescAttr(desc, i)->attgenerated != '\0')
			continue;
		appendStringInfo(&cols, "%s%s", cols.len > 0 ? ", " : "",
						 quote_identifier(cj_leaf_colnames(leaf)[i]));
	}
	relation_close(rel, AccessShareLock);
	resetStringInfo(&sql);
	appendStringInfo(&sql, "COPY %s (%s) FROM STDIN", qualified, cols.data);
	cj_copy_rows(src, psprintf("COPY (SELECT %s FROM %s) TO STDOUT", cols.data, qualified),
				 dst, sql.data, context);
}

/* sql (an INSERT or DELETE on colojoin.replicas), as the table's owner */
static uint64
write_replicas(const char *sql, int nargs, Oid *argtypes, Datum *args,
			   int expected)
{
	return cj_write_as_owner(cj_replicas_relid(), sql, nargs, argtypes, args,
							 expected);
}

/* tell this and every other backend that the table's placements changed */
static void
invalidate_table(Oid toprelid)
{
	cj_metadata_invalidate(toprelid);
	CacheInvalidateRelcacheByRelid(toprelid);
}

/*
 * colojoin_add_replica
 *		colojoin.add_replica(leaf regclass, server name, copy_data boolean):
 *		register a copy of leaf on server, under the primary's remote schema
 *		and table name.  With copy_data, create that table on server when it
 *		is missing and copy the primary's rows into it, all within the
 *		current transaction.
 */
Datum
colojoin_add_replica(PG_FUNCTION_ARGS)
{
	Oid			leafrelid = PG_GETARG_OID(0);
	char	   *server = NameStr(*PG_GETARG_NAME(1));
	bool		copy_data = PG_GETARG_BOOL(2);
	Oid			primary_server;
	Oid			serverid;
	Oid			toprelid;
	CjTable    *table;
	CjLeaf	   *leaf;
	int			cls;
	int			leafindex;
	int			i;
	CjPlacement *primary;
	Oid			argtypes[4] = {REGCLASSOID, NAMEOID, TEXTOID, TEXTOID};
	Datum		args[4];

	require_extension();
	LockRelationOid(leafrelid, AccessShareLock);
	toprelid = check_replicable_leaf(leafrelid, &primary_server);
	serverid = check_replica_server(server);

	if (serverid == primary_server)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("server \"%s\" already holds \"%s\"", server, get_rel_name(leafrelid)),
				 errdetail("It is the foreign table's own server, its primary placement.")));

	table = cj_get_table(toprelid);
	cls = table ? cj_class_of_leaf(table, leafrelid, &leafindex) : -1;
	if (cls < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("\"%s\" is not a leaf of \"%s\"", get_rel_name(leafrelid),
						get_rel_name(toprelid)),
				 errdetail("It may be in the middle of being detached.")));
	leaf = &table->classes[cls].leaves[leafindex];
	primary = &leaf->placements[0];
	for (i = 1; i < leaf->nplacements; i++)
		if (leaf->placements[i].serverid == serverid)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("\"%s\" already has a replica on server \"%s\"",
							get_rel_name(leafrelid), server)));

	/* register first: a concurrent duplicate fails here, before any copying */
	args[0] = ObjectIdGetDatum(leafrelid);
	args[1] = PG_GETARG_DATUM(1);
	args[2] = CStringGetTextDatum(primary->remote_schema);
	args[3] = CStringGetTextDatum(primary->remote_table);
	write_replicas("INSERT INTO colojoin.replicas (leaf, server, remote_schema, remote_table)"
				   " VALUES ($1, $2, $3, $4)", 4, argtypes, args, SPI_OK_INSERT);

	if (copy_data)
		copy_replica(toprelid, leaf, primary, serverid, server);

	invalidate_table(toprelid);
	PG_RETURN_VOID();
}

/*
 * colojoin_drop_replica
 *		colojoin.drop_replica(leaf regclass, server name): forget a replica.
 *		The table on the server stays: it may hold the only copy of rows
 *		someone still wants, and dropping data on a node is not ours to do.
 */
Datum
colojoin_drop_replica(PG_FUNCTION_ARGS)
{
	Oid			leafrelid = PG_GETARG_OID(0);
	char	   *server = NameStr(*PG_GETARG_NAME(1));
	Oid			argtypes[2] = {REGCLASSOID, NAMEOID};
	Datum		args[2];
	char	   *name;
	uint64		ndeleted;

	require_extension();
	LockRelationOid(leafrelid, AccessShareLock);
	name = get_rel_name(leafrelid);
	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", leafrelid)));
	if (!pg_class_ownercheck(leafrelid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER,
					   get_rel_relkind(leafrelid) == RELKIND_FOREIGN_TABLE ?
					   OBJECT_FOREIGN_TABLE : OBJECT_TABLE, name);

	args[0] = ObjectIdGetDatum(leafrelid);
	args[1] = PG_GETARG_DATUM(1);
	ndeleted = write_replicas("DELETE FROM colojoin.replicas WHERE leaf = $1 AND server = $2",
							  2, argtypes, args, SPI_OK_DELETE);

	if (ndeleted == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("\"%s\" has no replica on server \"%s\"", name, server)));

	if (get_rel_relispartition(leafrelid))
		invalidate_table(llast_oid(get_partition_ancestors(leafrelid)));
	PG_RETURN_VOID();
}

/*
 * colojoin_replicas_changed
 *		Statement trigger on colojoin.replicas: whatever changed it (the
 *		functions above, a hand-written UPDATE, a restore), every backend
 *		must forget the placements it cached.  The relcache invalidation of
 *		the replicas table itself is what metadata.c listens for.
 */
Datum
colojoin_replicas_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("colojoin_replicas_changed must be called as a trigger")));

	CacheInvalidateRelcacheByRelid(RelationGetRelid(trigdata->tg_relation));
	cj_metadata_invalidate(InvalidOid);
	return PointerGetDatum(NULL);
}
