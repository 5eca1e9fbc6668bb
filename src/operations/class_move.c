/*-------------------------------------------------------------------------
 *
 * class_move.c
 *	  colojoin.move_class: move one partition class (the partitions with
 *	  the same bounds of every table colocated with a given one) from the
 *	  node that holds it to another server, all of its tables in one move,
 *	  so that colocation holds before, during and after.
 *
 *	  Two ways, both ending in one local transaction that repoints the
 *	  leaves (or the replica rows) at the new server and drops the old
 *	  tables through the caller's remote transactions, so that the switch
 *	  and the drop commit together (two-phase commit):
 *
 *	  - blocking: writes to the class wait (EXCLUSIVE on its leaves: reads
 *	    go on) while the rows are copied node to node through COPY streams
 *	    inside the caller's remote transactions; nothing of it survives a
 *	    failure.
 *	  - online: the nodes' logical replication copies the rows and follows
 *	    the writes (publication on the source, subscription on the target)
 *	    while reads and writes go on; then writes to the class wait only
 *	    until the target has applied everything the source had when the
 *	    wait began.  What a failure leaves on the nodes (subscription,
 *	    publication, slot, target tables marked by their comment) is
 *	    removed at once when it can be, else by the next move of the class
 *	    or colojoin.move_cleanup (move_cleanup.c).
 *
 *	  Servers that reach the same database need no copy: the move only
 *	  repoints the leaves.
 *
 *	  It does not choose what to move (the rebalance planner would) and
 *	  does not make the target's tables' statements (remote_table_ddl.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "access/hash.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/wait_event.h"

#include "metadata/colocation.h"
#include "metadata/metadata.h"
#include "metadata/node_identity.h"
#include "operations/class_move.h"
#include "operations/progress.h"
#include "operations/remote_table_ddl.h"
#include "operations/shard_drop.h"
#include "remote/connection.h"
#include "util/catalog_query.h"
#include "util/extension.h"

PG_FUNCTION_INFO_V1(colojoin_move_class);

bool		colojoin_move_keep_source = false;

/* tests only: the phase at which a move waits for an advisory lock */
static char *debug_pause_phase = NULL;
static int	debug_pause_key = 0;

/* one placement of one leaf that moves */
typedef struct MovePart
{
	Oid			toprelid;
	Oid			leafrelid;
	bool		is_replica;
	Oid			serverid;		/* its server now, on the source node */
	char	   *schema;
	char	   *table;
	char	   *qualified;
	CjRemoteTableDdl *ddl;
} MovePart;

typedef struct ClassMove
{
	Oid			relid;
	int			cls;
	Oid			from;
	Oid			to;
	const char *from_name;
	const char *to_name;
	bool		online;
	bool		same_node;
	char	   *name;			/* publication, subscription and slot */
	CjReplication rep;			/* name, from_name, to_name */
	List	   *parts;			/* MovePart */
	List	   *tables;			/* sharded tables that take part, Oid */
	int64		rows;
} ClassMove;

void
cj_class_move_init(void)
{
	DefineCustomBoolVariable("colojoin.move_keep_source",
							 "Keeps a moved class's tables on the node it left.",
							 "They are then no placement of anything; drop_shards and DROP TABLE of the sharded table still drop them.",
							 &colojoin_move_keep_source,
							 false,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomStringVariable("colojoin.debug_pause_move_phase",
							   "Tests only: the phase of a class move that waits for colojoin.debug_pause_move's advisory lock.",
							   NULL, &debug_pause_phase, "",
							   PGC_SUSET, GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("colojoin.debug_pause_move",
							"Tests only: the advisory lock a class move waits for at colojoin.debug_pause_move_phase.",
							NULL, &debug_pause_key, 0, 0, INT_MAX,
							PGC_SUSET, GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);
}

/*
 * Tests stop a node or the coordinator at a phase: the move waits there
 * for the advisory lock the test holds, which the test sees in pg_locks.
 */
void
cj_move_debug_pause(const char *phase)
{
	LOCKTAG		tag;

	if (debug_pause_key == 0 || debug_pause_phase == NULL ||
		strcmp(debug_pause_phase, phase) != 0)
		return;
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, (uint32) debug_pause_key, 1);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	LockRelease(&tag, ExclusiveLock, false);
}

/*
 * cj_move_try_lock
 *		The transaction-level advisory lock of a running move, of a kind no
 *		SQL function takes (field 4 = 4): move_cleanup leaves alone what a
 *		move that holds it is still using.
 */
bool
cj_move_try_lock(const char *name)
{
	LOCKTAG		tag;
	uint32		h = DatumGetUInt32(hash_any((const unsigned char *) name,
										   strlen(name)));

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, h, 0, 4);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/* sleep a little, awake to interrupts: for waits on what nodes report */
static void
nap(void)
{
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 50L, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

static Oid
server_oid(const char *name, const char *what)
{
	ForeignServer *server = GetForeignServerByName(name, false);
	AclResult	aclresult;

	if (!cj_is_postgres_fdw_server(server->serverid))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s \"%s\" is not a postgres_fdw server", what, name)));
	aclresult = pg_foreign_server_aclcheck(server->serverid, GetUserId(), ACL_USAGE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FOREIGN_SERVER, name);
	return server->serverid;
}

/*
 * p reaches the node of server s; a server not connected to yet is asked
 * which database it is first.
 */
bool
cj_on_node(Oid p, Oid s)
{
	char	   *why;

	if (p == s)
		return true;
	if (p == CJ_LOCAL_NODE || s == CJ_LOCAL_NODE)
		return false;
	if (cj_node_identity(p) == NULL)
		(void) cj_conn_try_connect(p, GetUserId(), 0, &why);
	if (cj_node_identity(s) == NULL)
		(void) cj_conn_try_connect(s, GetUserId(), 0, &why);
	return cj_node_same(p, s);
}

/* ----------------------------------------------------------------
 *		What moves
 * ----------------------------------------------------------------
 */

/*
 * The placements of cls's leaves on m->from's node, for a table whose class
 * of the same bounds is part of the move; ERROR where the class already has
 * a placement on the target's node (two placements of one class on one
 * node would be one table).
 */
static void
add_class_parts(ClassMove *m, CjTable *t, int cls, bool required)
{
	CjClass    *c = &t->classes[cls];
	int			l;
	bool		any = false;

	for (l = 0; l < c->nleaves; l++)
	{
		CjLeaf	   *leaf = &c->leaves[l];
		int			p;
		bool		found = false;

		for (p = 0; p < leaf->nplacements; p++)
		{
			CjPlacement *pl = &leaf->placements[p];
			MovePart   *part;

			if (!m->same_node && cj_on_node(pl->serverid, m->to))
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("leaf %s already has a placement on server \"%s\"",
								quote_identifier(get_rel_name(leaf->relid)),
								cj_node_name(pl->serverid)),
						 errdetail("Server \"%s\" reaches the same node; one node holds at most one placement of a class.",
								   m->to_name),
						 errhint("Move the class to a server of another node.")));
			if (found || !cj_on_node(pl->serverid, m->from))
				continue;
			found = true;
			part = palloc0(sizeof(MovePart));
			part->toprelid = t->relid;
			part->leafrelid = leaf->relid;
			part->is_replica = pl->is_replica;
			part->serverid = pl->serverid;
			part->schema = pl->remote_schema;
			part->table = pl->remote_table;
			part->qualified = quote_qualified_identifier(pl->remote_schema,
														 pl->remote_table);
			m->parts = lappend(m->parts, part);
		}
		for (p = 0; p < leaf->nstale; p++)
			if (cj_on_node(leaf->stale[p].serverid, m->to) && !m->same_node)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("leaf %s has a stale placement on server \"%s\"",
								quote_identifier(get_rel_name(leaf->relid)),
								cj_node_name(leaf->stale[p].serverid)),
						 errhint("Repair or drop that placement first.")));
		if (!found && required)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("leaf %s of class %d of %s has no healthy placement on server \"%s\"",
							quote_identifier(get_rel_name(leaf->relid)), m->cls,
							quote_identifier(get_rel_name(t->relid)), m->from_name),
					 errhint("colojoin.shards lists where each leaf is.")));
		any |= found;
	}
	if (any)
		m->tables = list_append_unique_oid(m->tables, t->relid);
}

/* the server of a class's primary placement (its first leaf's) */
static Oid
class_server(CjTable *t, int cls)
{
	CjClass    *c = &t->classes[cls];

	if (c->nleaves == 0 || c->leaves[0].nplacements == 0)
		return CJ_LOCAL_NODE;
	return c->leaves[0].placements[0].serverid;
}

/*
 * o is colocated with t: partitioned alike, with the same bounds class by
 * class, and each class's primary on the same node as t's.  A table that
 * shares a node with t only here and there is not (its classes elsewhere
 * would not follow it anyway).
 */
bool
cj_tables_colocated(CjTable *t, CjTable *o)
{
	List	   *reasons = NIL;
	int			k;

	if (o->nclasses != t->nclasses || cj_is_reference_table(o) ||
		!cj_schemes_compatible(t, o, &reasons))
		return false;
	for (k = 0; k < t->nclasses; k++)
	{
		Oid			a = class_server(t, k);
		Oid			b = class_server(o, k);

		if (strcmp(cj_class_bound_text(o, k), cj_class_bound_text(t, k)) != 0 ||
			a == CJ_LOCAL_NODE || b == CJ_LOCAL_NODE || !cj_on_node(a, b))
			return false;
	}
	return true;
}

/*
 * The given table's class and the same class of every table colocated
 * with it: that is what keeps their joins colocated.  Reference tables
 * stay (every node has one).
 */
static void
collect_parts(ClassMove *m, CjTable *t)
{
	ListCell   *lc;

	add_class_parts(m, t, m->cls, true);
	foreach(lc, cj_top_level_partitioned_tables())
	{
		CjTable    *o = cj_get_table(lfirst_oid(lc));

		if (o != NULL && o->relid != t->relid && cj_tables_colocated(t, o))
			add_class_parts(m, o, m->cls, false);
	}
}

/* ----------------------------------------------------------------
 *		The switch
 * ----------------------------------------------------------------
 */

/* repoint a foreign table at another server, as if it had been made there */
static void
set_foreign_server(Oid leafrelid, Oid from, Oid to)
{
	Relation	ftrel = table_open(ForeignTableRelationId, RowExclusiveLock);
	HeapTuple	tup = SearchSysCacheCopy1(FOREIGNTABLEREL, ObjectIdGetDatum(leafrelid));

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for foreign table %u", leafrelid);
	((Form_pg_foreign_table) GETSTRUCT(tup))->ftserver = to;
	CatalogTupleUpdate(ftrel, &tup->t_self, tup);
	heap_freetuple(tup);
	table_close(ftrel, RowExclusiveLock);
	if (changeDependencyFor(RelationRelationId, leafrelid,
							ForeignServerRelationId, from, to) != 1)
		elog(ERROR, "could not move the dependency of foreign table %u on its server",
			 leafrelid);
}

/*
 * Make the target the placement: the foreign table's server, or the
 * replica row; the record of which remote tables colojoin may drop
 * follows.  Every backend's metadata and plans see it at commit.
 */
static void
switch_placements(ClassMove *m)
{
	ListCell   *lc;

	foreach(lc, m->parts)
	{
		MovePart   *p = (MovePart *) lfirst(lc);

		if (p->is_replica)
		{
			Oid			argtypes[3] = {OIDOID, TEXTOID, TEXTOID};
			Datum		args[3];

			args[0] = ObjectIdGetDatum(p->leafrelid);
			args[1] = CStringGetTextDatum(cj_node_name(p->serverid));
			args[2] = CStringGetTextDatum(m->to_name);
			(void) cj_write_as_owner(cj_replicas_relid(),
									 "UPDATE colojoin.replicas SET server = $3::pg_catalog.name "
									 "WHERE leaf = $1::pg_catalog.regclass AND server = $2::pg_catalog.name",
									 3, argtypes, args, SPI_OK_UPDATE);
		}
		else
			set_foreign_server(p->leafrelid, p->serverid, m->to);

		if (!m->same_node)
		{
			if (!colojoin_move_keep_source)
				cj_forget_shard_origin(p->leafrelid, p->serverid);
			cj_record_shard_origin(p->leafrelid, m->to, p->schema, p->table);
		}
		CacheInvalidateRelcacheByRelid(p->leafrelid);
	}
	foreach(lc, m->tables)
	{
		cj_metadata_invalidate(lfirst_oid(lc));
		CacheInvalidateRelcacheByRelid(lfirst_oid(lc));
	}
}

/* every leaf that moves, in mode (cj_lock_together) */
static void
lock_leaves(ClassMove *m, LOCKMODE mode)
{
	List	   *relids = NIL;
	ListCell   *lc;

	foreach(lc, m->parts)
		relids = lappend_oid(relids, ((MovePart *) lfirst(lc))->leafrelid);
	cj_lock_together(relids, mode);
}

/*
 * cj_lock_together
 *		See class_move.h.  A writer that holds one leaf of a class and then
 *		wants another (an UPDATE of orders, then an INSERT into lineitem)
 *		would deadlock with a mover that holds the second and waits for the
 *		first; so when a leaf is taken, the ones got so far are let go and
 *		the mover waits for that one alone, holding nothing a writer needs.
 */
void
cj_lock_together(List *relids, LOCKMODE mode)
{
	/*
	 * Going from EXCLUSIVE to ACCESS EXCLUSIVE the writers already wait for
	 * the move, and waits for readers cannot close a cycle with them; one
	 * leaf after the other then (a conditional request would lose to every
	 * writer queued behind the EXCLUSIVE lock, for ever).
	 */
	if (mode == AccessExclusiveLock)
	{
		ListCell   *lc;

		foreach(lc, relids)
			LockRelationOid(lfirst_oid(lc), mode);
		return;
	}
	for (;;)
	{
		List	   *got = NIL;
		Oid			busy = InvalidOid;
		ListCell   *lc;

		foreach(lc, relids)
		{
			Oid			leaf = lfirst_oid(lc);

			if (list_member_oid(got, leaf))
				continue;
			if (!ConditionalLockRelationOid(leaf, mode))
			{
				busy = leaf;
				break;
			}
			got = lappend_oid(got, leaf);
		}
		if (!OidIsValid(busy))
			return;
		foreach(lc, got)
			UnlockRelationOid(lfirst_oid(lc), mode);
		list_free(got);
		LockRelationOid(busy, mode);
		UnlockRelationOid(busy, mode);
	}
}

/*
 * cj_move_wait_for_prepared
 *		See class_move.h.  A transaction prepared before the writes stopped
 *		commits on the source later (its coordinator or recovery finishes
 *		it), and the copy must include it.
 */
void
cj_move_wait_for_prepared(List *qualified, CjConnection *src, const char *context)
{
	StringInfoData sql;
	ListCell   *lc;
	bool		first = true;

	initStringInfo(&sql);
	appendStringInfoString(&sql,
						   "SELECT count(*) FROM pg_catalog.pg_locks l"
						   " JOIN pg_catalog.pg_prepared_xacts x"
						   " ON l.virtualtransaction = '-1/' || x.transaction::text"
						   " WHERE l.relation IN (");
	foreach(lc, qualified)
	{
		appendStringInfo(&sql, "%s%s::pg_catalog.regclass", first ? "" : ", ",
						 quote_literal_cstr((char *) lfirst(lc)));
		first = false;
	}
	appendStringInfoChar(&sql, ')');
	for (;;)
	{
		char	   *n = cj_exec_value(src, sql.data, context);

		if (n == NULL || strcmp(n, "0") == 0)
			break;
		cj_progress_phase("waiting for prepared transactions", 0);
		nap();
	}
}

/* the qualified remote names of a move's tables */
static List *
part_names(ClassMove *m)
{
	List	   *names = NIL;
	ListCell   *lc;

	foreach(lc, m->parts)
		names = lappend(names, ((MovePart *) lfirst(lc))->qualified);
	return names;
}

/* target tables must not exist yet (a failed move's are removed first) */
static void
check_targets_free(ClassMove *m, CjConnection *dst)
{
	ListCell   *lc;

	foreach(lc, m->parts)
	{
		MovePart   *p = (MovePart *) lfirst(lc);
		char	   *found;

		found = cj_exec_value(dst,
						  psprintf("SELECT COALESCE(pg_catalog.obj_description(c.oid, 'pg_class'), '')"
								   " FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
								   " WHERE n.nspname = %s AND c.relname = %s",
								   quote_literal_cstr(p->schema),
								   quote_literal_cstr(p->table)),
						  "checking the move's target");
		if (found != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_TABLE),
					 errmsg("table %s already exists on server \"%s\"",
							p->qualified, m->to_name),
					 strncmp(found, CJ_MOVE_MARKER, strlen(CJ_MOVE_MARKER)) == 0 ?
					 errdetail("A move that failed left it there, and another session is running that move.") :
					 errdetail("Leaf %s keeps that remote name wherever it is placed.",
							   quote_identifier(get_rel_name(p->leafrelid))),
					 errhint("Drop or rename that table on the node, or move the class elsewhere.")));
	}
}

/* ----------------------------------------------------------------
 *		Blocking
 * ----------------------------------------------------------------
 */

static void
move_blocking(ClassMove *m)
{
	Oid			userid = GetUserId();
	CjConnection *src;
	CjConnection *dst;
	ListCell   *lc;

	/* writes to the class wait from here; reads go on */
	lock_leaves(m, ExclusiveLock);
	src = cj_get_write_connection(cj_node_representative(m->from, userid), userid);
	dst = cj_get_write_connection(cj_node_representative(m->to, userid), userid);
	cj_check_two_phase(list_make2(src, dst));
	cj_move_wait_for_prepared(part_names(m), src, "moving a class");
	check_targets_free(m, dst);

	cj_progress_phase("copying rows", 0);
	foreach(lc, m->parts)
	{
		MovePart   *p = (MovePart *) lfirst(lc);
		char	   *context = psprintf("moving %s from server \"%s\" to \"%s\"",
									   p->qualified, cj_node_name(p->serverid),
									   m->to_name);

		cj_twin_create(dst, p->ddl, p->qualified, NULL, context);
		cj_conn_note_write(dst, psprintf("DROP TABLE IF EXISTS %s", p->qualified),
						   psprintf("table %s", p->qualified));
		cj_conn_note_dml(dst);
		(void) cj_copy_rows(src, psprintf("COPY (SELECT %s FROM %s) TO STDOUT",
											  p->ddl->columns, p->qualified),
								dst, psprintf("COPY %s (%s) FROM STDIN",
											  p->qualified, p->ddl->columns),
								context);
		m->rows += cj_copy_last_rows();
		cj_twin_finish(dst, p->ddl, p->qualified, NULL, context);
		cj_progress_advance(1);
	}
	cj_move_debug_pause("copied");
}

/* ----------------------------------------------------------------
 *		Online
 * ----------------------------------------------------------------
 */

/* an int64 of a one-row answer */
static int64
int_value(CjConnection *conn, const char *sql, const char *context)
{
	char	   *v = cj_exec_value(conn, sql, context);

	return v ? strtoll(v, NULL, 10) : 0;
}

/* ERROR when the subscription's workers failed (they retry otherwise) */
static void
check_subscription_errors(const CjReplication *m, CjConnection *dst)
{
	int64		errors = int_value(dst,
								   psprintf("SELECT sync_error_count + apply_error_count"
											" FROM pg_catalog.pg_stat_subscription_stats"
											" WHERE subname = %s",
											quote_literal_cstr(m->name)),
								   "following the move's subscription");

	if (errors > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the subscription of the move to server \"%s\" failed",
						m->to_name),
				 errdetail("Logical replication from server \"%s\" reported %lld errors.",
						   m->from_name, (long long) errors),
				 errhint("The target node's log says why; the class stays where it was.")));
}

/* cj_move_wait_for_copy: see class_move.h */
void
cj_move_wait_for_copy(const CjReplication *m, CjConnection *dst, int ntables)
{
	char	   *sql = psprintf("SELECT count(*) FILTER (WHERE r.srsubstate NOT IN ('r', 's'))"
							   " FROM pg_catalog.pg_subscription s"
							   " JOIN pg_catalog.pg_subscription_rel r ON r.srsubid = s.oid"
							   " WHERE s.subname = %s",
							   quote_literal_cstr(m->name));
	int64		total = ntables;

	cj_progress_phase("copying rows", total);
	for (;;)
	{
		int64		left = int_value(dst, sql, "waiting for the move's copy");

		check_subscription_errors(m, dst);
		if (left == 0)
			break;
		nap();
	}
	cj_progress_advance(total);
}

/*
 * cj_move_wait_for_lsn
 *		See class_move.h: the slot's confirmed position passes lsn once the
 *		target flushed it.  The target is asked too, so that a target that
 *		died ends the wait.
 */
void
cj_move_wait_for_lsn(const CjReplication *m, CjConnection *src, CjConnection *dst,
					 const char *lsn)
{
	char	   *sql = psprintf("SELECT (confirmed_flush_lsn >= %s::pg_catalog.pg_lsn)::int4,"
							   " pg_catalog.pg_wal_lsn_diff(%s::pg_catalog.pg_lsn, confirmed_flush_lsn)::int8"
							   " FROM pg_catalog.pg_replication_slots WHERE slot_name = %s",
							   quote_literal_cstr(lsn), quote_literal_cstr(lsn),
							   quote_literal_cstr(m->name));

	for (;;)
	{
		PGresult   *res = cj_exec_query(src, sql, "waiting for the move's target");
		bool		done;
		int64		lag;

		if (PQntuples(res) == 0)
		{
			PQclear(res);
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("replication slot \"%s\" of the move is gone from server \"%s\"",
							m->name, m->from_name)));
		}
		done = !PQgetisnull(res, 0, 0) && strcmp(PQgetvalue(res, 0, 0), "1") == 0;
		lag = PQgetisnull(res, 0, 1) ? -1 : strtoll(PQgetvalue(res, 0, 1), NULL, 10);
		PQclear(res);
		if (done)
			break;
		cj_progress_phase(psprintf("catching up (%lld bytes behind)", (long long) lag), 0);
		check_subscription_errors(m, dst);
		nap();
	}
}

/*
 * cj_move_source_position
 *		See class_move.h.  A message past the position wakes the source's
 *		walsender, which then asks the target where it is: without it, an
 *		idle target reports only on its own timer, and the writes waited up
 *		to a second longer.
 */
char *
cj_move_source_position(CjConnection *src, const char *context)
{
	char	   *lsn = cj_exec_value(src, "SELECT pg_catalog.pg_current_wal_lsn()", context);

	cj_exec_command(src, "SELECT pg_catalog.pg_logical_emit_message(false, 'colojoin', 'cut-over')",
					context);
	return lsn;
}

/*
 * cj_move_check_source
 *		See class_move.h.
 */
void
cj_move_check_source(CjConnection *src, const char *from_name)
{
	char	   *wal_level = cj_exec_value(src, "SHOW wal_level", "checking the move's source");
	char	   *senders;

	if (wal_level == NULL || strcmp(wal_level, "logical") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("an online move needs wal_level = logical on server \"%s\"",
						from_name),
				 errdetail("The node's wal_level is %s.", wal_level ? wal_level : "unknown"),
				 errhint("Set wal_level = logical on that node and restart it, or use mode => 'blocking'.")));
	senders = cj_exec_value(src, "SELECT LEAST("
						"pg_catalog.current_setting('max_wal_senders')::int4,"
						" pg_catalog.current_setting('max_replication_slots')::int4)",
						"checking the move's source");
	if (senders == NULL || atoi(senders) <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("an online move needs max_wal_senders and max_replication_slots above 0 on server \"%s\"",
						from_name),
				 errhint("Raise them on that node and restart it, or use mode => 'blocking'.")));
}

/* cj_move_marker: see class_move.h */
char *
cj_move_marker(const char *name)
{
	return psprintf("%s%s", CJ_MOVE_MARKER, name);
}

/*
 * cj_move_replication_start
 *		See class_move.h.  The subscription commits synchronously, so that
 *		the target's flush position, which the catch-up waits for, follows
 *		its applies at once.
 */
void
cj_move_replication_start(const CjReplication *r, CjConnection *src, CjConnection *dst,
						  Oid from, const char *tables, const char *context)
{
	cj_exec_command(src, psprintf("CREATE PUBLICATION %s FOR TABLE %s",
								  quote_identifier(r->name), tables), context);
	cj_exec_command(dst, psprintf("CREATE SUBSCRIPTION %s CONNECTION %s PUBLICATION %s"
								  " WITH (copy_data = true, synchronous_commit = 'on')",
								  quote_identifier(r->name),
								  quote_literal_cstr(cj_server_conninfo(from, GetUserId())),
								  quote_identifier(r->name)),
					context);
}

/* cj_move_replication_end: see class_move.h */
void
cj_move_replication_end(const CjReplication *r, CjConnection *src, CjConnection *dst,
						const char *context)
{
	cj_exec_command(dst, psprintf("DROP SUBSCRIPTION %s", quote_identifier(r->name)), context);
	cj_exec_command(src, psprintf("DROP PUBLICATION %s", quote_identifier(r->name)), context);
}

/*
 * Everything up to the switch, committed on the nodes as it goes: the
 * target's tables (marked as a move's by their comment), the publication
 * and the subscription, the copy, then, with writes to the class waiting,
 * the catch-up and the end of replication.
 */
static void
move_online_replicate(ClassMove *m, CjConnection *src, CjConnection *dst)
{
	char	   *context = psprintf("moving class %d of %s from server \"%s\" to \"%s\"",
								   m->cls, quote_identifier(get_rel_name(m->relid)),
								   m->from_name, m->to_name);
	StringInfoData tables;
	ListCell   *lc;
	char	   *lsn;

	cj_progress_phase("creating tables", 0);
	initStringInfo(&tables);
	foreach(lc, m->parts)
	{
		MovePart   *p = (MovePart *) lfirst(lc);

		cj_twin_create(dst, p->ddl, p->qualified, cj_move_marker(m->name), context);
		cj_twin_finish(dst, p->ddl, p->qualified, cj_move_marker(m->name), context);

		/*
		 * Logical replication of UPDATE and DELETE needs a replica identity
		 * on the source; without a key, the whole row is it.
		 */
		if (!p->ddl->has_identity)
			cj_exec_command(src, psprintf("ALTER TABLE %s REPLICA IDENTITY FULL",
										  p->qualified), context);
		appendStringInfo(&tables, "%s%s", tables.len > 0 ? ", " : "", p->qualified);
	}
	cj_move_replication_start(&m->rep, src, dst, m->from, tables.data, context);
	cj_move_wait_for_copy(&m->rep, dst, list_length(m->parts));

	/* the rows copied, counted before writes wait */
	foreach(lc, m->parts)
		m->rows += int_value(dst, psprintf("SELECT count(*) FROM %s",
										   ((MovePart *) lfirst(lc))->qualified),
							 context);
	cj_move_debug_pause("copied");

	/* writes to the class wait from here until the caller commits */
	cj_progress_phase("waiting for writes to end", 0);
	lock_leaves(m, ExclusiveLock);
	cj_move_wait_for_prepared(part_names(m), src, context);
	lsn = cj_move_source_position(src, context);
	cj_move_wait_for_lsn(&m->rep, src, dst, lsn);
	cj_move_debug_pause("caught_up");

	cj_progress_phase("ending replication", 0);
	cj_move_replication_end(&m->rep, src, dst, context);
}

static void
move_online(ClassMove *m)
{
	Oid			userid = GetUserId();
	CjConnection *src = cj_get_autocommit_connection(m->from, userid, CJ_MOVE_SLOT);
	CjConnection *dst = cj_get_autocommit_connection(m->to, userid, CJ_MOVE_SLOT);
	MemoryContext cxt = CurrentMemoryContext;
	ListCell   *lc;

	cj_move_check_source(src, m->from_name);

	/* remains of an earlier try of this move go first */
	if (!cj_move_try_lock(m->name))
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("another session is moving class %d of %s",
						m->cls, quote_identifier(get_rel_name(m->relid)))));
	(void) cj_move_remove_remains(m->from, m->to, m->name);
	check_targets_free(m, dst);

	PG_TRY();
	{
		move_online_replicate(m, src, dst);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		(void) cj_move_remove_remains(m->from, m->to, m->name);
		ReThrowError(edata);
	}
	PG_END_TRY();

	/*
	 * Readers planned against the old placement finish first; the switch,
	 * the target's own comment and the old tables' drop commit with the
	 * caller's transaction.
	 */
	cj_progress_phase("switching placements", 0);
	lock_leaves(m, AccessExclusiveLock);
	src = cj_get_write_connection(cj_node_representative(m->from, userid), userid);
	dst = cj_get_write_connection(cj_node_representative(m->to, userid), userid);
	cj_check_two_phase(list_make2(src, dst));
	cj_conn_note_dml(dst);
	foreach(lc, m->parts)
	{
		MovePart   *p = (MovePart *) lfirst(lc);

		cj_exec_command(dst, cj_twin_comment_sql(p->qualified, p->ddl->comment),
						"moving a class");
	}
}

/* ----------------------------------------------------------------
 *		colojoin.move_class
 * ----------------------------------------------------------------
 */

/* the old tables go with the caller's commit, unless kept */
static void
drop_sources(ClassMove *m)
{
	Oid			userid = GetUserId();
	CjConnection *src;
	ListCell   *lc;

	if (colojoin_move_keep_source)
		return;
	cj_progress_phase("dropping the source tables", 0);
	lock_leaves(m, AccessExclusiveLock);
	src = cj_get_write_connection(cj_node_representative(m->from, userid), userid);
	cj_conn_note_dml(src);
	foreach(lc, m->parts)
		cj_exec_command(src, psprintf("DROP TABLE %s", ((MovePart *) lfirst(lc))->qualified),
						"dropping a moved class's table");
}

/*
 * colojoin_move_class
 *		colojoin.move_class(table_name regclass, partition_class integer,
 *		to_server name, mode text DEFAULT 'online', from_server name DEFAULT
 *		NULL) → bigint: the rows moved.  from_server names which placement
 *		moves when the class has replicas (the primary's by default).
 */
Datum
colojoin_move_class(PG_FUNCTION_ARGS)
{
	Oid			relid;
	CjTable    *t;
	ClassMove  *m;
	char	   *mode;
	ListCell   *lc;
	Oid			userid = GetUserId();

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("table_name, partition_class, to_server and mode must not be NULL")));
	colojoin_require_active();
	PreventCommandIfReadOnly("colojoin.move_class()");

	relid = PG_GETARG_OID(0);
	m = palloc0(sizeof(ClassMove));
	m->relid = relid;
	m->cls = PG_GETARG_INT32(1);
	m->to_name = NameStr(*PG_GETARG_NAME(2));
	mode = text_to_cstring(PG_GETARG_TEXT_PP(3));
	if (strcmp(mode, "online") == 0)
		m->online = true;
	else if (strcmp(mode, "blocking") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown move mode \"%s\"", mode),
				 errhint("The modes are 'online' and 'blocking'.")));

	LockRelationOid(relid, AccessShareLock);
	t = cj_get_table(relid);
	if (t == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a sharded table", get_rel_name(relid)),
				 errhint("move_class takes a partitioned table whose partitions are postgres_fdw foreign tables.")));
	if (m->cls < 0 || m->cls >= t->nclasses)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s has no partition class %d", quote_identifier(get_rel_name(relid)), m->cls),
				 errdetail("Its classes are numbered 0 to %d, as colojoin.shards shows them.",
						   t->nclasses - 1)));
	if (cj_is_reference_table(t))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s is a reference table", quote_identifier(get_rel_name(relid))),
				 errhint("Add or drop its copies with colojoin.add_replica and colojoin.drop_replica.")));

	m->to = server_oid(m->to_name, "server");
	if (!PG_ARGISNULL(4))
	{
		m->from_name = NameStr(*PG_GETARG_NAME(4));
		m->from = server_oid(m->from_name, "server");
	}
	else
	{
		CjClass    *c = &t->classes[m->cls];

		if (c->nleaves == 0 || c->leaves[0].nplacements == 0 ||
			c->leaves[0].placements[0].serverid == CJ_LOCAL_NODE)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("class %d of %s has no placement on a server",
							m->cls, quote_identifier(get_rel_name(relid)))));
		m->from = c->leaves[0].placements[0].serverid;
		m->from_name = cj_node_name(m->from);
	}
	if (m->from == m->to)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("class %d of %s is on server \"%s\" already",
						m->cls, quote_identifier(get_rel_name(relid)), m->to_name)));

	/* connected once, both servers' databases are known */
	(void) cj_get_autocommit_connection(m->from, userid, CJ_MOVE_SLOT);
	(void) cj_get_autocommit_connection(m->to, userid, CJ_MOVE_SLOT);
	m->same_node = cj_node_same(m->from, m->to);
	m->name = psprintf(CJ_MOVE_PREFIX "%u_%u", t->classes[m->cls].partrelid, m->from);
	m->rep.name = m->name;
	m->rep.from_name = m->from_name;
	m->rep.to_name = m->to_name;

	collect_parts(m, t);
	foreach(lc, m->tables)
	{
		Oid			tab = lfirst_oid(lc);

		if (!pg_class_ownercheck(tab, userid))
			aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(tab));
		LockRelationOid(tab, AccessShareLock);
	}
	/* one move of a class at a time; reads and writes go on */
	lock_leaves(m, ShareUpdateExclusiveLock);

	cj_progress_begin("move_class", relid, "describing tables", list_length(m->parts));
	if (!m->same_node)
	{
		CjConnection *src = cj_get_autocommit_connection(m->from, userid, CJ_MOVE_SLOT);

		foreach(lc, m->parts)
		{
			MovePart   *p = (MovePart *) lfirst(lc);

			p->ddl = cj_remote_table_ddl(src, m->from_name, p->schema, p->table,
											 NULL, NULL);
		}
		if (m->online)
			move_online(m);
		else
			move_blocking(m);
		drop_sources(m);
	}
	else
		lock_leaves(m, AccessExclusiveLock);

	switch_placements(m);
	cj_move_debug_pause("switched");
	cj_progress_end();
	ereport(NOTICE,
			(errmsg("moved class %d of %s (%d placements of %d tables) from server \"%s\" to \"%s\"",
					m->cls, quote_identifier(get_rel_name(relid)),
					list_length(m->parts), list_length(m->tables),
					m->from_name, m->to_name)));
	PG_RETURN_INT64(m->rows);
}
