/*-------------------------------------------------------------------------
 *
 * placement_health.c
 *	  Placements that missed a write: marking them stale, and repairing
 *	  them (colojoin.repair_placement).
 *
 *	  A write goes to every placement of a leaf.  When the node of one of
 *	  them cannot be reached but another placement of the leaf takes the
 *	  write, the write goes on and the unreachable placement is recorded in
 *	  colojoin.stale_placements, in the same transaction: it is stale
 *	  exactly when the write committed.  metadata.c leaves stale placements
 *	  out of the placements everything else reads and writes, so a stale
 *	  copy is never read, even once its node is back, until
 *	  repair_placement copies the leaf into it again.
 *
 *	  This file does not decide which placement a statement reads (the
 *	  planner does, from the metadata) and does not write rows of users'
 *	  tables except in repair.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/partition.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "metadata/metadata.h"
#include "operations/progress.h"
#include "operations/placement_health.h"
#include "remote/connection.h"
#include "deparse/deparse.h"
#include "util/catalog_query.h"

PG_FUNCTION_INFO_V1(colojoin_repair_placement);

/* the top-level partitioned table above leaf */
static Oid
root_of(Oid leafrelid)
{
	List	   *ancestors = get_partition_ancestors(leafrelid);

	return ancestors != NIL ? llast_oid(ancestors) : InvalidOid;
}

/* the leaf's cached metadata and its root */
static CjLeaf *
find_leaf(Oid leafrelid, Oid *root)
{
	CjTable    *t;
	int			c,
				li;

	*root = root_of(leafrelid);
	t = OidIsValid(*root) ? cj_get_table(*root) : NULL;
	if (t == NULL || (c = cj_class_of_leaf(t, leafrelid, &li)) < 0)
		return NULL;
	return &t->classes[c].leaves[li];
}

bool
cj_health_is_stale(Oid leafrelid, Oid serverid)
{
	Oid			root;
	CjLeaf	   *leaf;
	int			i;

	if (!cj_any_stale_placement() || !get_rel_relispartition(leafrelid))
		return false;
	leaf = find_leaf(leafrelid, &root);
	for (i = 0; leaf != NULL && i < leaf->nstale; i++)
		if (leaf->stale[i].serverid == serverid)
			return true;
	return false;
}

bool
cj_health_primary_stale(Oid relid)
{
	CjTable    *t;
	int			c,
				l,
				i;

	if (!cj_any_stale_placement() || (t = cj_get_table(relid)) == NULL)
		return false;
	for (c = 0; c < t->nclasses; c++)
		for (l = 0; l < t->classes[c].nleaves; l++)
			for (i = 0; i < t->classes[c].leaves[l].nstale; i++)
				if (!t->classes[c].leaves[l].stale[i].is_replica)
					return true;
	return false;
}

void
cj_health_mark_stale(Oid leafrelid, Oid serverid, const char *reason)
{
	Oid			argtypes[3] = {OIDOID, NAMEOID, TEXTOID};
	Datum		args[3];
	Oid			root = root_of(leafrelid);
	char	   *node = cj_node_name(serverid);

	args[0] = ObjectIdGetDatum(leafrelid);
	args[1] = DirectFunctionCall1(namein, CStringGetDatum(node));
	args[2] = CStringGetTextDatum(reason);
	cj_write_as_owner(cj_stale_relid(),
					  "INSERT INTO colojoin.stale_placements (leaf, server, reason) "
					  "VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
					  3, argtypes, args, SPI_OK_INSERT);

	/* plans that would read it are made again, here and everywhere */
	CacheInvalidateRelcacheByRelid(leafrelid);
	if (OidIsValid(root))
		CacheInvalidateRelcacheByRelid(root);
	ereport(WARNING,
			(errcode(ERRCODE_WARNING),
			 errmsg("placement of leaf \"%s\" on node \"%s\" missed this write and is now stale",
					get_rel_name(leafrelid), node),
			 errdetail("%s", reason),
			 errhint("Once the node is back, SELECT colojoin.repair_placement('%s', '%s') copies the leaf into it again.",
					 get_rel_name(leafrelid), node)));
}

List *
cj_health_write_connections(CjLeaf *leaf, Oid userid)
{
	List	   *conns = NIL;
	List	   *down = NIL;
	List	   *why = NIL;
	ListCell   *lc;
	ListCell   *lw;
	bool		any = false;
	int			p;

	if (!OidIsValid(cj_stale_relid()))
	{
		/* a version without stale placements: every placement or nothing */
		for (p = 0; p < leaf->nplacements; p++)
			conns = lappend(conns, cj_get_write_connection(leaf->placements[p].serverid,
														   userid));
		return conns;
	}
	for (p = 0; p < leaf->nplacements; p++)
	{
		char	   *reason = NULL;
		CjConnection *conn = cj_try_write_connection(leaf->placements[p].serverid,
													 userid, &reason);

		conns = lappend(conns, conn);
		if (conn != NULL)
			any = true;
		else
		{
			down = lappend_oid(down, leaf->placements[p].serverid);
			why = lappend(why, reason);
		}
	}
	if (!any)
		ereport(ERROR,
				(errcode(ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION),
				 errmsg("could not connect to node \"%s\": no placement of leaf \"%s\" can take the write",
						cj_node_name(linitial_oid(down)), get_rel_name(leaf->relid)),
				 errdetail_internal("%s", (char *) linitial(why))));
	forboth(lc, down, lw, why)
		cj_health_mark_stale(leaf->relid, lfirst_oid(lc),
							 psprintf("could not connect: %s", (char *) lfirst(lw)));
	return conns;
}

/*
 * colojoin.repair_placement(leaf regclass, server name)
 *		Copy the leaf from a healthy placement into its stale placement on
 *		server (emptied first), and take that placement back: later
 *		statements read and write it again.  Writes of the table wait until
 *		the repair commits (SHARE lock on the table and the leaf).  Returns
 *		the number of rows copied.
 */
Datum
colojoin_repair_placement(PG_FUNCTION_ARGS)
{
	Oid			leafrelid = PG_GETARG_OID(0);
	char	   *server = NameStr(*PG_GETARG_NAME(1));
	Oid			serverid = get_foreign_server_oid(server, false);
	Oid			root;
	CjLeaf	   *leaf;
	CjPlacement *stale = NULL;
	CjPlacement *source;
	CjConnection *src;
	CjConnection *dst;
	Relation	rel;
	StringInfoData cols;
	StringInfoData sql;
	char	   *target;
	PGresult   *res;
	int64		rows;
	int			i;
	Oid			argtypes[2] = {OIDOID, NAMEOID};
	Datum		args[2];

	if (!OidIsValid(cj_stale_relid()))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table colojoin.stale_placements does not exist"),
				 errhint("Run ALTER EXTENSION colojoin UPDATE.")));
	if (!pg_class_ownercheck(leafrelid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_FOREIGN_TABLE, get_rel_name(leafrelid));
	root = root_of(leafrelid);
	if (!OidIsValid(root))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a leaf partition of a sharded table",
						get_rel_name(leafrelid))));

	/* no write of the table may slip in between the copy and the unmarking */
	LockRelationOid(root, ShareLock);
	LockRelationOid(leafrelid, ShareLock);
	cj_metadata_invalidate(root);
	leaf = find_leaf(leafrelid, &root);
	if (leaf == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a leaf partition of a sharded table",
						get_rel_name(leafrelid))));
	for (i = 0; i < leaf->nstale; i++)
		if (leaf->stale[i].serverid == serverid)
			stale = &leaf->stale[i];
	if (stale == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the placement of leaf \"%s\" on node \"%s\" is not stale",
						get_rel_name(leafrelid), server)));
	if (leaf->nplacements == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("leaf \"%s\" has no healthy placement to copy from",
						get_rel_name(leafrelid))));
	source = &leaf->placements[0];

	/* the columns as both nodes name them; generated ones the node computes */
	initStringInfo(&cols);
	rel = table_open(root, AccessShareLock);
	for (i = 0; i < leaf->natts; i++)
	{
		if (cj_leaf_colnames(leaf)[i] == NULL ||
			TupleDescAttr(RelationGetDescr(rel), i)->attgenerated != '\0')
			continue;
		appendStringInfo(&cols, "%s%s", cols.len > 0 ? ", " : "",
						 cj_quote_ident(cj_leaf_colnames(leaf)[i]));
	}
	table_close(rel, AccessShareLock);

	src = cj_get_write_connection(source->serverid, GetUserId());
	dst = cj_get_write_connection(serverid, GetUserId());
	cj_check_two_phase(list_make2(src, dst));
	cj_conn_note_dml(dst);
	target = cj_qualified_name(stale->remote_schema, stale->remote_table);
	cj_progress_begin("repair_placement", leafrelid,
					  psprintf("copying rows from %s",
							   GetForeignServer(source->serverid)->servername), 0);
	initStringInfo(&sql);
	appendStringInfo(&sql, "TRUNCATE %s", target);
	cj_exec_command(dst, sql.data, "repair of a stale placement");
	resetStringInfo(&sql);
	appendStringInfo(&sql, "COPY %s (%s) FROM STDIN", target, cols.data);
	cj_copy_rows(src, psprintf("COPY (SELECT %s FROM %s) TO STDOUT", cols.data,
							   cj_qualified_name(source->remote_schema,
												 source->remote_table)),
				 dst, sql.data, "repair of a stale placement");
	resetStringInfo(&sql);
	appendStringInfo(&sql, "SELECT count(*) FROM %s", target);
	res = cj_exec_query(dst, sql.data, "repair of a stale placement");
	rows = (res && PQntuples(res) == 1) ? atoll(PQgetvalue(res, 0, 0)) : 0;
	PQclear(res);

	args[0] = ObjectIdGetDatum(leafrelid);
	args[1] = DirectFunctionCall1(namein, CStringGetDatum(server));
	cj_write_as_owner(cj_stale_relid(),
					  "DELETE FROM colojoin.stale_placements WHERE leaf = $1 AND server = $2",
					  2, argtypes, args, SPI_OK_DELETE);
	CacheInvalidateRelcacheByRelid(leafrelid);
	CacheInvalidateRelcacheByRelid(root);
	cj_progress_end();
	PG_RETURN_INT64(rows);
}
