/*-------------------------------------------------------------------------
 *
 * shard_drop.c
 *	  Removing the remote tables colojoin made: colojoin.drop_shards, the
 *	  DROP TABLE event trigger, and the record (colojoin.shard_origins) of
 *	  which remote tables colojoin created, that both rely on.
 *
 *	  create_shards and add_replica record every remote table they create;
 *	  only those are ever dropped, never a table someone else made and
 *	  pointed a foreign table at.  Remote DROPs run in the remote
 *	  transactions of the caller's transaction, so they commit or roll back
 *	  with it; a node that cannot be reached is reported, not fatal.
 *
 *	  It does not create anything (shard_create.c, replicas.c do).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/event_trigger.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "metadata/metadata.h"
#include "metadata/node_identity.h"
#include "operations/progress.h"
#include "operations/shard_drop.h"
#include "remote/connection.h"
#include "util/catalog_query.h"
#include "util/extension.h"
#include "util/settings.h"

PG_FUNCTION_INFO_V1(colojoin_drop_shards);
PG_FUNCTION_INFO_V1(colojoin_drop_remote_shards);

/* colojoin.shard_origins, or InvalidOid (extension 1.0, or absent) */
static Oid
origins_relid(void)
{
	Oid			nspid;

	if (!colojoin_is_active())
		return InvalidOid;
	nspid = get_namespace_oid(COLOJOIN_SCHEMA, true);
	return OidIsValid(nspid) ? get_relname_relid("shard_origins", nspid) : InvalidOid;
}

/*
 * The record is colojoin's bookkeeping, not the user's: it is read and
 * written as the owner of colojoin.shard_origins, whoever made or drops the
 * shards (the remote work itself runs as the user, with the user's own
 * mappings and privileges on the nodes).
 */
typedef struct CjSavedUser
{
	Oid			userid;
	int			sec_context;
} CjSavedUser;

static void
become_record_owner(CjSavedUser *saved)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(origins_relid()));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for colojoin.shard_origins");
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	GetUserIdAndSecContext(&saved->userid, &saved->sec_context);
	SetUserIdAndSecContext(owner, saved->sec_context | SECURITY_LOCAL_USERID_CHANGE);
}

static void
become_user_again(CjSavedUser *saved)
{
	SetUserIdAndSecContext(saved->userid, saved->sec_context);
}

/* SPI statement sql with args, run as the record's owner */
static int
record_exec(const char *sql, int nargs, Oid *argtypes, Datum *values,
			bool read_only)
{
	CjSavedUser saved;
	int			rc;

	become_record_owner(&saved);
	rc = SPI_execute_with_args(sql, nargs, argtypes, values, NULL, read_only, 0);
	become_user_again(&saved);
	return rc;
}

/*
 * cj_record_shard_origin
 *		See shard_drop.h.  A database still at version 1.0 has no record:
 *		its tables are then never dropped by colojoin, which is the safe
 *		side.
 */
void
cj_record_shard_origin(Oid leaf, Oid serverid, const char *remote_schema,
					   const char *remote_table)
{
	Oid			argtypes[4] = {OIDOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[4];

	if (!OidIsValid(origins_relid()))
		return;
	values[0] = ObjectIdGetDatum(leaf);
	values[1] = CStringGetTextDatum(GetForeignServer(serverid)->servername);
	values[2] = CStringGetTextDatum(remote_schema);
	values[3] = CStringGetTextDatum(remote_table);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (record_exec("INSERT INTO colojoin.shard_origins (leaf, server, remote_schema, remote_table) "
					"VALUES ($1::pg_catalog.regclass, $2::pg_catalog.name, $3, $4) "
					"ON CONFLICT (leaf, server) DO UPDATE "
					"SET remote_schema = EXCLUDED.remote_schema, remote_table = EXCLUDED.remote_table",
					4, argtypes, values, false) != SPI_OK_INSERT)
		elog(ERROR, "could not record the remote table of %u", leaf);
	SPI_finish();
}

/*
 * cj_forget_shard_origin
 *		See shard_drop.h.
 */
void
cj_forget_shard_origin(Oid leaf, Oid serverid)
{
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		values[2];

	if (!OidIsValid(origins_relid()))
		return;
	values[0] = ObjectIdGetDatum(leaf);
	values[1] = CStringGetTextDatum(GetForeignServer(serverid)->servername);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (record_exec("DELETE FROM colojoin.shard_origins "
					"WHERE leaf = $1::pg_catalog.regclass AND server = $2::pg_catalog.name",
					2, argtypes, values, false) != SPI_OK_DELETE)
		elog(ERROR, "could not forget the remote table of %u", leaf);
	SPI_finish();
}

/*
 * drop_remote
 *		DROP TABLE the remote table on the named server, in this
 *		transaction's remote transaction there (one connection per database,
 *		see node_identity.h).  Returns NULL when done, else why not: a server
 *		gone or a node that cannot be reached is reported by the caller, and
 *		the local transaction goes on.  Runs in a subtransaction so that a
 *		failure there leaves the rest intact.
 */
static char *
drop_remote(const char *server, const char *schema, const char *table)
{
	ForeignServer *srv = GetForeignServerByName(server, true);
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	char	   *failure = NULL;

	if (srv == NULL)
		return psprintf("server \"%s\" no longer exists", server);

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		Oid			node;
		CjConnection *conn;

		char	   *why;

		/* where this transaction's writes to the node go, rows or DDL */
		if (!cj_conn_try_connect(srv->serverid, GetUserId(), 0, &why))
			(void) cj_get_connection(srv->serverid, GetUserId(), 0);
		node = cj_node_representative(srv->serverid, GetUserId());
		conn = cj_get_write_connection(node, GetUserId());
		cj_exec_command(conn, psprintf("DROP TABLE IF EXISTS %s",
									   quote_qualified_identifier(schema, table)),
						psprintf("dropping %s on %s",
								 quote_qualified_identifier(schema, table), server));
		cj_conn_note_write(conn, NULL,
						   psprintf("dropped table %s",
									quote_qualified_identifier(schema, table)));
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		failure = edata->message;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
	CurrentResourceOwner = oldowner;
	return failure;
}

/*
 * drop_recorded
 *		Drop every recorded remote table of the leaves that where selects
 *		(a WHERE clause over shard_origins o), forget them, and WARN about
 *		each one that could not be dropped.  Returns how many were dropped.
 */
static int
drop_recorded(const char *where, int nargs, Oid *argtypes, Datum *values)
{
	int			dropped = 0;
	uint64		i;
	uint64		n;
	SPITupleTable *tuptable;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (record_exec(psprintf("DELETE FROM colojoin.shard_origins o WHERE %s "
							 "RETURNING o.leaf::pg_catalog.oid::pg_catalog.text, o.server::pg_catalog.text, "
							 "o.remote_schema, o.remote_table", where),
					nargs, argtypes, values, false) != SPI_OK_DELETE_RETURNING)
		elog(ERROR, "could not read colojoin.shard_origins");
	n = SPI_processed;
	tuptable = SPI_tuptable;
	for (i = 0; i < n; i++)
	{
		HeapTuple	tup = tuptable->vals[i];
		TupleDesc	desc = tuptable->tupdesc;
		char	   *server = SPI_getvalue(tup, desc, 2);
		char	   *schema = SPI_getvalue(tup, desc, 3);
		char	   *table = SPI_getvalue(tup, desc, 4);
		char	   *failure = drop_remote(server, schema, table);

		if (failure == NULL)
			dropped++;
		else
			ereport(WARNING,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not drop remote table %s on server \"%s\"",
							quote_qualified_identifier(schema, table), server),
					 errdetail("%s", failure),
					 errhint("Drop it on the node by hand.")));
	}
	SPI_finish();
	return dropped;
}

/*
 * colojoin_drop_shards
 *		colojoin.drop_shards(parent regclass) -> integer: drop the remote
 *		tables colojoin made for the leaves of parent (every level), on every
 *		placement, then the leaves' foreign partitions themselves, so that
 *		create_shards can make them again.  Leaves colojoin did not create
 *		stay, and so do their remote tables.  Returns the number of remote
 *		tables dropped.
 */
Datum
colojoin_drop_shards(PG_FUNCTION_ARGS)
{
	Oid			parent = PG_GETARG_OID(0);
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1];
	int			dropped;
	List	   *leaves = NIL;
	ListCell   *lc;

	if (!OidIsValid(origins_relid()))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("colojoin.drop_shards needs version 1.1 of the extension"),
				 errhint("Run ALTER EXTENSION colojoin UPDATE.")));
	if (get_rel_relkind(parent) != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a partitioned table", get_rel_name(parent))));
	if (!pg_class_ownercheck(parent, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(parent));

	/* the recorded leaves below parent */
	values[0] = ObjectIdGetDatum(parent);
	{
		CjSavedUser saved;

		become_record_owner(&saved);
		leaves = cj_query_oids("SELECT DISTINCT o.leaf::pg_catalog.oid FROM colojoin.shard_origins o "
							   "JOIN pg_catalog.pg_partition_tree($1::pg_catalog.regclass) t ON t.relid = o.leaf "
							   "WHERE t.isleaf",
							   1, argtypes, values);
		become_user_again(&saved);
	}

	cj_progress_begin("drop_shards", parent, "dropping the tables on the nodes",
					  list_length(leaves));
	dropped = drop_recorded("o.leaf::pg_catalog.oid IN (SELECT relid FROM pg_catalog.pg_partition_tree($1::pg_catalog.regclass))",
							1, argtypes, values);

	/* the foreign partitions go too, and their replicas' registrations */
	cj_progress_phase("dropping the foreign partitions", list_length(leaves));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	foreach(lc, leaves)
	{
		Oid			leaf = lfirst_oid(lc);
		char	   *name = get_rel_name(leaf);

		if (name == NULL)
			continue;
		(void) record_exec(psprintf("DELETE FROM colojoin.replicas WHERE leaf = %u::pg_catalog.oid", leaf),
						   0, NULL, NULL, false);
		SPI_execute(psprintf("DROP FOREIGN TABLE %s",
							 quote_qualified_identifier(get_namespace_name(get_rel_namespace(leaf)),
														name)),
					false, 0);
		cj_progress_advance(1);
	}
	SPI_finish();
	cj_progress_end();
	PG_RETURN_INT32(dropped);
}

/*
 * colojoin_drop_remote_shards
 *		The sql_drop event trigger: the remote tables recorded for foreign
 *		tables that a DROP (TABLE, SCHEMA ... CASCADE) just removed are
 *		dropped on their nodes in the same transaction, unless
 *		colojoin.drop_remote_shards is off.  Runs before the trigger that
 *		forgets the dropped leaves' replicas (event triggers fire in name
 *		order), though it needs only its own record.
 */
Datum
colojoin_drop_remote_shards(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("colojoin_drop_remote_shards: not fired by an event trigger")));
	if (!OidIsValid(origins_relid()))
		PG_RETURN_VOID();

	/* the record of a dropped server's tables says nothing any more */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	(void) record_exec("DELETE FROM colojoin.shard_origins o USING pg_catalog.pg_event_trigger_dropped_objects() d "
					   "WHERE d.object_type = 'server' AND d.object_name = o.server::pg_catalog.text",
					   0, NULL, NULL, false);
	SPI_finish();
	if (colojoin_drop_remote_shards_on)
		(void) drop_recorded("o.leaf::pg_catalog.oid IN (SELECT objid FROM pg_catalog.pg_event_trigger_dropped_objects() "
							 "WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND objsubid = 0)",
							 0, NULL, NULL);
	else
	{
		/* forget them: a later object reusing the OID must not inherit them */
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		(void) record_exec("DELETE FROM colojoin.shard_origins o WHERE o.leaf::pg_catalog.oid IN "
						   "(SELECT objid FROM pg_catalog.pg_event_trigger_dropped_objects() "
						   "WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND objsubid = 0)",
						   0, NULL, NULL, false);
		SPI_finish();
	}
	PG_RETURN_VOID();
}
