/*-------------------------------------------------------------------------
 *
 * activity.c
 *	  colojoin.activity: what colojoin's connections are doing on the
 *	  nodes right now, read live from each node's pg_stat_activity.
 *
 *	  Every connection colojoin opens names its coordinator and session in
 *	  application_name ("colojoin:<system identifier>:<pid>",
 *	  remote/conn_open.c), so a node's backends can be tied back to the
 *	  coordinator session that holds them, whichever session asks: no
 *	  shared memory is needed.  Each physical node is asked once (servers
 *	  reaching the same database are the same node), on a connection of its
 *	  own outside any remote transaction; a node that cannot be reached is a
 *	  WARNING naming it, and its rows are missing.  The lock waits between
 *	  colojoin's backends on a node come with each row (blocked_by, the
 *	  node's pg_blocking_pids).
 *
 *	  Shows; changes nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_foreign_data_wrapper.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "metadata/node_identity.h"
#include "remote/connection.h"

/* the connection slot these reads use, apart from every transaction's */
#define CJ_ACTIVITY_SLOT 998

PG_FUNCTION_INFO_V1(colojoin_node_activity);

/* the postgres_fdw servers the current user has a mapping for */
static List *
fdw_servers(void)
{
	List	   *servers = NIL;
	uint64		i;
	MemoryContext caller = CurrentMemoryContext;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "colojoin: SPI_connect failed");
	if (SPI_execute("SELECT s.oid FROM pg_catalog.pg_foreign_server s "
					"JOIN pg_catalog.pg_foreign_data_wrapper w ON w.oid = s.srvfdw "
					"WHERE w.fdwname = 'postgres_fdw' ORDER BY s.srvname",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "colojoin: could not list the foreign servers");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			serverid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
															  SPI_tuptable->tupdesc,
															  1, &isnull));

		if (cj_has_user_mapping(serverid, GetUserId()))
		{
			/* the list outlives SPI's memory */
			MemoryContext old = MemoryContextSwitchTo(caller);

			servers = lappend_oid(servers, serverid);
			MemoryContextSwitchTo(old);
		}
	}
	SPI_finish();
	return servers;
}

Datum
colojoin_node_activity(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *seen = NIL;
	ListCell   *lc;
	char	   *prefix = psprintf("%%%s:%%", cj_application_name_prefix());
	Oid			array_input;
	Oid			array_ioparam;

	InitMaterializedSRF(fcinfo, 0);
	getTypeInputInfo(INT4ARRAYOID, &array_input, &array_ioparam);

	foreach(lc, fdw_servers())
	{
		Oid			serverid = lfirst_oid(lc);
		char	   *why = NULL;
		PGconn	   *conn = cj_conn_open_raw(serverid, GetUserId(),
											CJ_ACTIVITY_SLOT, &why);
		const char *node;
		const char *params[1];
		PGresult   *res;
		int			r;

		if (conn == NULL)
		{
			ereport(WARNING,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("colojoin: node \"%s\" is left out of the activity",
							GetForeignServer(serverid)->servername),
					 errdetail("%s", why ? why : "It could not be reached.")));
			continue;
		}
		/* one physical node once, under the first server reaching it */
		node = cj_node_identity(serverid);
		if (node != NULL)
		{
			ListCell   *ls;
			bool		dup = false;

			foreach(ls, seen)
				if (strcmp(lfirst(ls), node) == 0)
					dup = true;
			if (dup)
				continue;
			seen = lappend(seen, pstrdup(node));
		}

		params[0] = prefix;
		res = PQexecParams(conn,
						   "SELECT pg_catalog.substring(a.application_name, ':([0-9]+)$')::pg_catalog.int4, "
						   "a.pid, a.state, a.wait_event_type, a.wait_event, "
						   "pg_catalog.pg_blocking_pids(a.pid), a.backend_start, a.xact_start, "
						   "a.query_start, a.query "
						   "FROM pg_catalog.pg_stat_activity a "
						   "WHERE a.application_name LIKE $1 AND a.pid <> pg_catalog.pg_backend_pid() "
						   "ORDER BY 1, 2",
						   1, NULL, params, NULL, NULL, 0);
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
		{
			ereport(WARNING,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("colojoin: node \"%s\" is left out of the activity",
							GetForeignServer(serverid)->servername),
					 errdetail("%s", pchomp(PQerrorMessage(conn)))));
			PQclear(res);
			continue;
		}
		for (r = 0; r < PQntuples(res); r++)
		{
			Datum		values[12];
			bool		nulls[12];
			int			f;

			memset(nulls, false, sizeof(nulls));
			values[0] = Int32GetDatum(atoi(PQgetvalue(res, r, 0)));
			values[1] = CStringGetTextDatum(GetForeignServer(serverid)->servername);
			if (node != NULL)
				values[2] = CStringGetTextDatum(node);
			else
				nulls[2] = true;
			values[3] = Int32GetDatum(atoi(PQgetvalue(res, r, 1)));
			for (f = 2; f < 10; f++)
			{
				int			col = f + 2;

				if (PQgetisnull(res, r, f))
				{
					nulls[col] = true;
					continue;
				}
				switch (col)
				{
					case 7:
						values[col] = OidInputFunctionCall(array_input,
														   PQgetvalue(res, r, f),
														   array_ioparam, -1);
						break;
					case 8:
					case 9:
					case 10:
						values[col] = DirectFunctionCall3(timestamptz_in,
														  CStringGetDatum(PQgetvalue(res, r, f)),
														  ObjectIdGetDatum(InvalidOid),
														  Int32GetDatum(-1));
						break;
					default:
						values[col] = CStringGetTextDatum(PQgetvalue(res, r, f));
						break;
				}
			}
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
		PQclear(res);
	}
	return (Datum) 0;
}
