/*-------------------------------------------------------------------------
 *
 * catalog_query.c
 *	  Reading lists of OIDs out of the local catalogs through SPI, for the
 *	  SQL functions that walk every sharded table or every recorded leaf
 *	  (the shards view, refresh_statistics, drop_shards), and writing
 *	  colojoin's own tables (replicas, commit records, stale placements) as
 *	  their owner.
 *
 *	  A leaf module: it runs the statements it is given and knows nothing of
 *	  what they mean.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "util/catalog_query.h"

/*
 * cj_query_oids
 *		The first column of every row of sql, a read-only query whose first
 *		column is an oid, as a list in the caller's memory context (SPI's
 *		own is gone when it returns).  NULLs are skipped.
 */
List *
cj_query_oids(const char *sql, int nargs, Oid *argtypes, Datum *values)
{
	MemoryContext cxt = CurrentMemoryContext;
	List	   *result = NIL;
	uint64		i;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(sql, nargs, argtypes, values, NULL, true, 0) !=
		SPI_OK_SELECT)
		elog(ERROR, "could not run catalog query: %s", sql);
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i],
									  SPI_tuptable->tupdesc, 1, &isnull);
		MemoryContext old;

		if (isnull)
			continue;
		old = MemoryContextSwitchTo(cxt);
		result = lappend_oid(result, DatumGetObjectId(d));
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return result;
}

/*
 * cj_top_level_partitioned_tables
 *		Every partitioned table that is not itself a partition, in schema
 *		and name order so that what is listed from them reads the same in
 *		every session.  Temporary tables are left out: their partitions
 *		cannot be foreign tables.
 */
List *
cj_top_level_partitioned_tables(void)
{
	return cj_query_oids("SELECT c.oid FROM pg_catalog.pg_class c"
						 " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
						 " WHERE c.relkind = 'p' AND NOT c.relispartition"
						 " AND c.relpersistence <> 't'"
						 " ORDER BY n.nspname, c.relname",
						 0, NULL, NULL);
}

/*
 * cj_write_as_owner
 *		See catalog_query.h.  Also usable at pre-commit, where no snapshot
 *		is active any more.
 */
uint64
cj_write_as_owner(Oid tablerelid, const char *sql, int nargs, Oid *argtypes,
				  Datum *args, int expected)
{
	Oid			save_userid;
	int			save_sec_context;
	HeapTuple	tuple;
	Oid			owner;
	uint64		processed;

	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(tablerelid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", tablerelid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(owner, save_sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	PushActiveSnapshot(GetTransactionSnapshot());
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(sql, nargs, argtypes, args, NULL, false, 0) != expected)
		elog(ERROR, "could not update %s", get_rel_name(tablerelid));
	processed = SPI_processed;
	SPI_finish();
	PopActiveSnapshot();
	SetUserIdAndSecContext(save_userid, save_sec_context);
	return processed;
}
