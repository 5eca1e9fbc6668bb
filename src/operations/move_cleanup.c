/*-------------------------------------------------------------------------
 *
 * move_cleanup.c
 *	  What a class move that failed half way leaves on the nodes, and its
 *	  removal: by the move itself when it fails, by the next move of the
 *	  same class, and by colojoin.move_cleanup() for every node at once
 *	  (after a coordinator crash, say).
 *
 *	  A move's objects are named after it (CJ_MOVE_PREFIX: subscription,
 *	  publication, replication slot) and its target tables carry a comment
 *	  naming it (CJ_MOVE_MARKER) until the move commits; a move that is
 *	  running holds an advisory lock on its name, and its objects are left
 *	  alone.  A marked table that is a placement of a leaf (the switch
 *	  committed and the comment's change is still in doubt on the node) is
 *	  never dropped.
 *
 *	  It does not move anything (class_move.c does).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "metadata/metadata.h"
#include "metadata/node_identity.h"
#include "operations/class_move.h"
#include "remote/connection.h"
#include "util/catalog_query.h"
#include "util/extension.h"

PG_FUNCTION_INFO_V1(colojoin_move_cleanup);

typedef enum RemainKind
{
	REMAIN_SUBSCRIPTION,
	REMAIN_OTHER				/* publications, slots, target tables */
} RemainKind;

/* the remains of a move on one node, as (kind, name, object) rows */
static const char *list_sql =
"SELECT 'subscription', s.subname::text, pg_catalog.quote_ident(s.subname)"
" FROM pg_catalog.pg_subscription s"
" JOIN pg_catalog.pg_database d ON d.oid = s.subdbid AND d.datname = pg_catalog.current_database()"
" WHERE s.subname LIKE %1$s"
" UNION ALL"
" SELECT 'publication', p.pubname::text, pg_catalog.quote_ident(p.pubname)"
" FROM pg_catalog.pg_publication p WHERE p.pubname LIKE %1$s"
" UNION ALL"
" SELECT 'slot', r.slot_name::text, pg_catalog.quote_literal(r.slot_name)"
" FROM pg_catalog.pg_replication_slots r"
" WHERE r.slot_name LIKE %1$s AND NOT r.active AND r.database = pg_catalog.current_database()"
" UNION ALL"
" SELECT 'table', pg_catalog.substr(x.description, %2$s),"
"  pg_catalog.format('%%I.%%I', n.nspname, c.relname)"
" FROM pg_catalog.pg_description x"
" JOIN pg_catalog.pg_class c ON c.oid = x.objoid"
" JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
" WHERE x.classoid = 'pg_catalog.pg_class'::pg_catalog.regclass AND x.objsubid = 0"
"  AND x.description LIKE %3$s"
" ORDER BY 1, 2, 3";

/* a table of the node that is some leaf's placement: never a remain */
static bool
is_placement(Oid serverid, const char *qualified)
{
	ListCell   *lc;

	foreach(lc, cj_top_level_partitioned_tables())
	{
		CjTable    *t = cj_get_table(lfirst_oid(lc));
		int			c,
					l,
					p;

		if (t == NULL)
			continue;
		for (c = 0; c < t->nclasses; c++)
			for (l = 0; l < t->classes[c].nleaves; l++)
			{
				CjLeaf	   *leaf = &t->classes[c].leaves[l];

				for (p = 0; p < leaf->nplacements + leaf->nstale; p++)
				{
					CjPlacement *pl = p < leaf->nplacements ? &leaf->placements[p] :
						&leaf->stale[p - leaf->nplacements];

					if (pl->serverid != CJ_LOCAL_NODE &&
						(pl->serverid == serverid || cj_node_same(pl->serverid, serverid)) &&
						strcmp(quote_qualified_identifier(pl->remote_schema,
														  pl->remote_table),
							   qualified) == 0)
						return true;
				}
			}
	}
	return false;
}

/* the LIKE pattern of s, literally */
static char *
like_literal(const char *s)
{
	StringInfoData buf;
	const char *p;

	initStringInfo(&buf);
	for (p = s; *p; p++)
	{
		if (*p == '_' || *p == '%' || *p == '\\')
			appendStringInfoChar(&buf, '\\');
		appendStringInfoChar(&buf, *p);
	}
	return buf.data;
}

/*
 * Remove the remains of kind of the move name (every move when name is
 * NULL) on serverid's node.  Returns how many objects went; failures are
 * WARNINGs.
 */
static int
remove_on_node(Oid serverid, const char *name, RemainKind kind)
{
	MemoryContext cxt = CurrentMemoryContext;
	const char *node = cj_node_name(serverid);
	char	   *pattern = name ? like_literal(name) :
		psprintf("%s%%", like_literal(CJ_MOVE_PREFIX));
	char	   *marker = psprintf("%s%s", like_literal(CJ_MOVE_MARKER), pattern);
	int			removed = 0;
	PGresult   *volatile res = NULL;
	CjConnection *volatile conn = NULL;
	int			r;

	PG_TRY();
	{
		conn = cj_get_autocommit_connection(serverid, GetUserId(), CJ_MOVE_CLEANUP_SLOT);
		res = cj_exec_query(conn, psprintf(list_sql, quote_literal_cstr(pattern),
										   psprintf("%d", (int) strlen(CJ_MOVE_MARKER) + 1),
										   quote_literal_cstr(marker)),
							"looking for what failed moves left");
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(WARNING,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("colojoin: could not look for what failed moves left on server \"%s\"",
						node),
				 errdetail("%s", edata->message)));
		return 0;
	}
	PG_END_TRY();

	for (r = 0; r < PQntuples(res); r++)
	{
		const char *what = PQgetvalue(res, r, 0);
		const char *move = PQgetvalue(res, r, 1);
		const char *object = PQgetvalue(res, r, 2);
		List	   *sqls = NIL;
		ListCell   *lc;

		if ((kind == REMAIN_SUBSCRIPTION) != (strcmp(what, "subscription") == 0))
			continue;
		/* a running move holds the lock on its name: its objects stay */
		if (!cj_move_try_lock(move))
			continue;
		if (strcmp(what, "subscription") == 0)
			sqls = list_make1(psprintf("DROP SUBSCRIPTION %s", object));
		else if (strcmp(what, "publication") == 0)
			sqls = list_make1(psprintf("DROP PUBLICATION %s", object));
		else if (strcmp(what, "slot") == 0)
			sqls = list_make1(psprintf("SELECT pg_catalog.pg_drop_replication_slot(%s)", object));
		else if (!is_placement(serverid, object))
			sqls = list_make1(psprintf("DROP TABLE %s", object));
		else
			sqls = list_make1(psprintf("COMMENT ON TABLE %s IS NULL", object));

		PG_TRY();
		{
			foreach(lc, sqls)
				cj_exec_command(conn, (char *) lfirst(lc), "removing a failed move's remains");
			removed++;
			ereport(NOTICE,
					(errmsg("colojoin: removed %s %s of a failed move from server \"%s\"",
							what, object, node)));
		}
		PG_CATCH();
		{
			ErrorData  *edata;
			bool		dropped = false;

			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			FlushErrorState();

			/*
			 * A subscription whose publisher cannot be reached cannot drop
			 * its slot there: let go of the slot (the publisher's node is
			 * cleaned when it is back) and drop the subscription.
			 */
			if (strcmp(what, "subscription") == 0)
			{
				PG_TRY();
				{
					conn = cj_get_autocommit_connection(serverid, GetUserId(),
														CJ_MOVE_CLEANUP_SLOT);
					cj_exec_command(conn, psprintf("ALTER SUBSCRIPTION %s DISABLE", object),
									"removing a failed move's remains");
					cj_exec_command(conn, psprintf("ALTER SUBSCRIPTION %s SET (slot_name = NONE)",
												   object),
									"removing a failed move's remains");
					cj_exec_command(conn, psprintf("DROP SUBSCRIPTION %s", object),
									"removing a failed move's remains");
					dropped = true;
					removed++;
				}
				PG_CATCH();
				{
					MemoryContextSwitchTo(cxt);
					FlushErrorState();
				}
				PG_END_TRY();
			}
			if (!dropped)
				ereport(WARNING,
						(errcode(ERRCODE_OBJECT_IN_USE),
						 errmsg("colojoin: could not remove %s %s of a failed move from server \"%s\"",
								what, object, node),
						 errdetail("%s", edata->message),
						 errhint("Call colojoin.move_cleanup() again once the node can be reached.")));
			/* the failed command's connection is not to be trusted */
			conn = cj_get_autocommit_connection(serverid, GetUserId(), CJ_MOVE_CLEANUP_SLOT);
		}
		PG_END_TRY();
	}
	PQclear(res);
	return removed;
}

/*
 * cj_move_remove_remains
 *		See class_move.h.  The subscription goes first, so that the slot it
 *		used on the source is free to drop.
 */
int
cj_move_remove_remains(Oid src, Oid dst, const char *name)
{
	int			n = 0;

	n += remove_on_node(dst, name, REMAIN_SUBSCRIPTION);
	n += remove_on_node(dst, name, REMAIN_OTHER);
	n += remove_on_node(src, name, REMAIN_OTHER);
	return n;
}

/* one server of each node this user reaches through postgres_fdw */
static List *
node_servers(void)
{
	List	   *servers;
	List	   *result = NIL;
	ListCell   *lc;

	servers = cj_query_oids("SELECT s.oid FROM pg_catalog.pg_foreign_server s"
							" JOIN pg_catalog.pg_foreign_data_wrapper w ON w.oid = s.srvfdw"
							" WHERE w.fdwname = 'postgres_fdw' ORDER BY s.srvname",
							0, NULL, NULL);
	foreach(lc, servers)
	{
		Oid			serverid = lfirst_oid(lc);
		ListCell   *lr;
		bool		seen = false;
		char	   *why;

		if (!cj_has_user_mapping(serverid, GetUserId()))
			continue;
		(void) cj_conn_try_connect(serverid, GetUserId(), 0, &why);
		foreach(lr, result)
			if (cj_node_same(lfirst_oid(lr), serverid))
				seen = true;
		if (!seen)
			result = lappend_oid(result, serverid);
	}
	return result;
}

/*
 * colojoin_move_cleanup
 *		colojoin.move_cleanup() → integer: remove, from every node this
 *		user reaches, what moves that are not running left behind; the
 *		number of objects removed.
 */
Datum
colojoin_move_cleanup(PG_FUNCTION_ARGS)
{
	List	   *servers;
	ListCell   *lc;
	int			n = 0;

	colojoin_require_active();
	PreventCommandIfReadOnly("colojoin.move_cleanup()");
	servers = node_servers();
	foreach(lc, servers)
		n += remove_on_node(lfirst_oid(lc), NULL, REMAIN_SUBSCRIPTION);
	foreach(lc, servers)
		n += remove_on_node(lfirst_oid(lc), NULL, REMAIN_OTHER);
	PG_RETURN_INT32(n);
}
