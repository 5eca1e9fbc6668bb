/*-------------------------------------------------------------------------
 *
 * remote_stats.c
 *	  colojoin.refresh_statistics: the sizes of the leaves' remote tables,
 *	  read from the nodes' own catalogs (reltuples and relpages, or the
 *	  table's size where the node never counted its rows), written into
 *	  the foreign partitions' pg_class entries as ANALYZE would, so that
 *	  every session plans with them.
 *
 *	  Foreign tables are rarely ANALYZEd (autovacuum never does, and
 *	  postgres_fdw samples every row's page to do it); without sizes the
 *	  planner guesses a few thousand rows per partition and picks the wrong
 *	  side to move.  Reading the node's counters costs one small query per
 *	  node.  This file reads and records; the planner uses what PostgreSQL
 *	  already keeps in pg_class.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/multixact.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "commands/vacuum.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "optimizer/plancat.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "metadata/metadata.h"
#include "operations/size_cache.h"
#include "remote/connection.h"
#include "util/catalog_query.h"

PG_FUNCTION_INFO_V1(colojoin_refresh_statistics);

/* the top-level sharded tables of the database (all of them: relid NULL) */
static List *
tables_to_refresh(Oid relid)
{
	if (OidIsValid(relid))
		return list_make1_oid(relid);
	return cj_top_level_partitioned_tables();
}

/*
 * record_size
 *		Write the leaf's size into its pg_class entry, as ANALYZE of a
 *		foreign table does (in place, not rolled back).  A node that never
 *		counted the table's rows gives only its pages: the rows are then
 *		estimated from the pages and the leaf's column widths, as the
 *		planner does for a plain table that was never analyzed.
 */
static bool
record_size(Oid leafrelid, double tuples, double pages)
{
	Relation	rel;

	/* as ANALYZE: only the owner records statistics of a table */
	if (!pg_class_ownercheck(leafrelid, GetUserId()))
	{
		ereport(WARNING,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("skipping \"%s\" --- only its owner can refresh its statistics",
						get_rel_name(leafrelid))));
		return false;
	}
	rel = relation_open(leafrelid, ShareUpdateExclusiveLock);

	if (tuples < 0)
	{
		int32		width = get_rel_data_width(rel, NULL);
		double		density = (BLCKSZ - SizeOfPageHeaderData) /
			(double) (width + MAXALIGN(SizeofHeapTupleHeader) + sizeof(ItemIdData));

		tuples = floor(pages * density + 0.5);
	}
	vac_update_relstats(rel, (BlockNumber) Min(pages, (double) MaxBlockNumber),
						tuples, 0, false, InvalidTransactionId,
						InvalidMultiXactId, NULL, NULL, false);
	relation_close(rel, NoLock);
	return true;
}

/*
 * colojoin_refresh_statistics
 *		colojoin.refresh_statistics(table regclass DEFAULT NULL) -> integer:
 *		for every foreign leaf of the table (of every sharded table), the
 *		size of its primary placement's remote table; returns how many
 *		leaves got one.  One query per node, through colojoin's connection.
 */
Datum
colojoin_refresh_statistics(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0);
	List	   *tables = tables_to_refresh(relid);
	List	   *servers = NIL;
	ListCell   *lt;
	ListCell   *ls;
	int			refreshed = 0;

	/* the leaves, by the server of their primary placement */
	foreach(lt, tables)
	{
		CjTable    *t = cj_get_table(lfirst_oid(lt));

		if (t == NULL)
		{
			if (OidIsValid(relid))
				ereport(ERROR,
						(errcode(ERRCODE_WRONG_OBJECT_TYPE),
						 errmsg("\"%s\" is not a partitioned table", get_rel_name(relid))));
			continue;
		}
		servers = cj_primary_servers(t, servers);
	}

	foreach(ls, servers)
	{
		Oid			serverid = lfirst_oid(ls);
		StringInfoData schemas;
		StringInfoData names;
		List	   *leaves = NIL;
		CjConnection *conn;
		PGresult   *res;
		int			i;

		List	   *metas = NIL;

		initStringInfo(&schemas);
		initStringInfo(&names);
		foreach(lt, tables)
			metas = lappend(metas, cj_get_table(lfirst_oid(lt)));
		cj_leaves_on_server(metas, serverid, &leaves, &schemas, &names);
		conn = cj_get_connection(serverid, GetUserId(), 0);
		res = cj_exec_query(conn, cj_remote_sizes_query(schemas.data, names.data),
							"reading table sizes");
		for (i = 0; i < PQntuples(res); i++)
		{
			int			idx = atoi(PQgetvalue(res, i, 0)) - 1;
			double		tuples;
			double		pages;

			if (idx < 0 || idx >= list_length(leaves))
				continue;
			cj_remote_size_row(res, i, &tuples, &pages);
			if (record_size(list_nth_oid(leaves, idx), tuples, pages))
				refreshed++;
		}
		PQclear(res);
	}
	/* what the backend cached is older than what was just recorded */
	cj_size_cache_forget();
	PG_RETURN_INT32(refreshed);
}
