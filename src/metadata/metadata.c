/*-------------------------------------------------------------------------
 *
 * metadata.c
 *	  The shard metadata of sharded tables (metadata.h): partition classes,
 *	  leaves, placements and remote names, read from PostgreSQL's catalogs
 *	  and colojoin.replicas, and a per-backend cache of it kept correct by
 *	  relcache and syscache invalidation.
 *
 *	  It does not decide anything about colocation (colocation.c does), never
 *	  talks to a node, and never writes a catalog: the replicas table is
 *	  maintained by replicas.c.
 *
 *	  Cache lifetime: each CjTable lives in a memory context of its own.  An
 *	  invalidation removes the entry from the lookup table at once, but its
 *	  memory is only released at the end of the transaction, because the
 *	  planner may hold pointers into it for the whole planning.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/reloptions.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_foreign_data_wrapper.h"
#include "catalog/pg_foreign_server.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "nodes/pg_list.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/fmgrprotos.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"

#include "metadata/colocation.h"
#include "metadata/metadata.h"
#include "util/extension.h"
#include "util/options.h"

/* where a partition (any level) sits in its sharded table */
typedef struct CjRelPos
{
	Oid			relid;
	int			cls;			/* class index */
	int			leaf;			/* leaf index within the class, -1 if not a leaf */
	bool		is_class;		/* relid is the class's top-level partition */
} CjRelPos;

/*
 * The cache's private view of a table.  CjTable must stay the first member:
 * cj_get_table hands out &pub and the lookup functions cast it back.  Every
 * CjTable a caller sees comes from cj_get_table, so the cast is safe.
 */
typedef struct CjTableCache
{
	CjTable		pub;
	MemoryContext cxt;			/* holds this struct and everything below */
	int			nrels;			/* every partition at any level */
	CjRelPos   *rels;			/* sorted by relid */
	struct CjTableCache *next_stale;
} CjTableCache;

typedef struct CjCacheSlot
{
	Oid			relid;			/* hash key */
	CjTableCache *table;
} CjCacheSlot;

typedef struct CjServerSlot
{
	Oid			serverid;		/* hash key */
	bool		is_postgres_fdw;
} CjServerSlot;

/* the replica rows of one leaf, gathered while building */
typedef struct CjReplicaRow
{
	char	   *server;
	Oid			serverid;
	char	   *remote_schema;
	char	   *remote_table;
} CjReplicaRow;

static MemoryContext metadata_cxt = NULL;
static HTAB *table_cache = NULL;
static HTAB *server_cache = NULL;

/* invalidated tables whose memory is released at transaction end */
static CjTableCache *stale_tables = NULL;

/* OID of colojoin.replicas, InvalidOid when not (yet) looked up */
static Oid	replicas_relid = InvalidOid;
static bool replicas_relid_known = false;

/* the same for colojoin.stale_placements */
static Oid	stale_relid = InvalidOid;
static bool stale_relid_known = false;

/* whether that table has a row at all; -1 until looked at, reset with it */
static int	any_stale = -1;

/*
 * Invalidations that arrive while a table is being built (opening partitions
 * takes locks, which processes pending invalidations) are recorded here, so
 * that a build that raced with DDL on its own partitions is thrown away.
 */
#define CJ_MAX_BUILD_INVALS 32
static bool build_active = false;
static bool build_inval_all = false;
static int	build_ninvals = 0;
static Oid	build_invals[CJ_MAX_BUILD_INVALS];

static void cj_relcache_callback(Datum arg, Oid relid);
static void cj_syscache_callback(Datum arg, int cacheid, uint32 hashvalue);
static void cj_server_syscache_callback(Datum arg, int cacheid, uint32 hashvalue);
static void cj_namespace_callback(Datum arg, int cacheid, uint32 hashvalue);
static void cj_xact_callback(XactEvent event, void *arg);


/* ----------------------------------------------------------------
 *		Cache maintenance
 * ----------------------------------------------------------------
 */

/*
 * cj_metadata_init
 *		Register the invalidation callbacks that keep the cache correct.
 *
 * Relcache invalidations cover partitions attached, detached, created,
 * dropped or renamed, column changes (including postgres_fdw column options,
 * which live in pg_attribute) and replica changes (the replicas table's
 * trigger invalidates its relcache entry).  Changes to foreign tables,
 * servers and wrappers and to schemas (default remote schema names) drop
 * the whole cache: they are rare and the cache rebuilds lazily.
 */
void
cj_metadata_init(void)
{
	HASHCTL		ctl;

	metadata_cxt = AllocSetContextCreate(CacheMemoryContext,
										 "colojoin metadata",
										 ALLOCSET_DEFAULT_SIZES);

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(CjCacheSlot);
	ctl.hcxt = metadata_cxt;
	table_cache = hash_create("colojoin sharded tables", 64, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(CjServerSlot);
	ctl.hcxt = metadata_cxt;
	server_cache = hash_create("colojoin servers", 16, &ctl,
							   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	CacheRegisterRelcacheCallback(cj_relcache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(FOREIGNTABLEREL, cj_syscache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(FOREIGNSERVEROID, cj_server_syscache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(FOREIGNDATAWRAPPEROID, cj_server_syscache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(NAMESPACEOID, cj_namespace_callback, (Datum) 0);
	RegisterXactCallback(cj_xact_callback, NULL);
}

static int
relpos_cmp(const void *a, const void *b)
{
	Oid			x = ((const CjRelPos *) a)->relid;
	Oid			y = ((const CjRelPos *) b)->relid;

	return (x > y) - (x < y);
}

static CjRelPos *
find_relpos(CjTableCache *tc, Oid relid)
{
	CjRelPos	key;

	key.relid = relid;
	return (CjRelPos *) bsearch(&key, tc->rels, tc->nrels, sizeof(CjRelPos),
								relpos_cmp);
}

/* does an invalidation of relid concern this cached table? */
static bool
table_depends_on(CjTableCache *tc, Oid relid)
{
	return tc->pub.relid == relid || find_relpos(tc, relid) != NULL;
}

/*
 * Remove entries from the lookup table (all of them, or those that depend on
 * relid) and queue their memory for release at transaction end.  Safe to
 * run inside invalidation callbacks: no catalog access, no allocation.
 */
static void
invalidate_entries(Oid relid, bool all)
{
	HASH_SEQ_STATUS status;
	CjCacheSlot *slot;

	if (table_cache == NULL)
		return;

	hash_seq_init(&status, table_cache);
	while ((slot = (CjCacheSlot *) hash_seq_search(&status)) != NULL)
	{
		CjTableCache *tc = slot->table;

		if (!all && !table_depends_on(tc, relid))
			continue;
		tc->next_stale = stale_tables;
		stale_tables = tc;
		hash_search(table_cache, &slot->relid, HASH_REMOVE, NULL);
	}
}

static void
note_build_inval(Oid relid, bool all)
{
	if (!build_active)
		return;
	if (all || build_ninvals >= CJ_MAX_BUILD_INVALS)
		build_inval_all = true;
	else
		build_invals[build_ninvals++] = relid;
}

static void
cj_relcache_callback(Datum arg, Oid relid)
{
	bool		all = !OidIsValid(relid);

	/* a change of colojoin.replicas or stale_placements may concern any table */
	if (all || (replicas_relid_known && relid == replicas_relid) ||
		(stale_relid_known && relid == stale_relid))
	{
		/* the extension's tables change with it: is it still there? */
		if (!all)
			cj_forget_active_state();
		replicas_relid_known = false;
		stale_relid_known = false;
		any_stale = -1;
		all = true;
	}
	note_build_inval(relid, all);
	invalidate_entries(relid, all);
}

static void
cj_syscache_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	note_build_inval(InvalidOid, true);
	invalidate_entries(InvalidOid, true);
}

static void
cj_server_syscache_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	HASH_SEQ_STATUS status;
	CjServerSlot *slot;

	if (server_cache != NULL)
	{
		hash_seq_init(&status, server_cache);
		while ((slot = (CjServerSlot *) hash_seq_search(&status)) != NULL)
			hash_search(server_cache, &slot->serverid, HASH_REMOVE, NULL);
	}
	cj_syscache_callback(arg, cacheid, hashvalue);
}

static void
cj_namespace_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	/* CREATE/DROP EXTENSION and schema renames land here */
	replicas_relid_known = false;
	stale_relid_known = false;
	any_stale = -1;
	cj_syscache_callback(arg, cacheid, hashvalue);
}

/* release the memory of invalidated tables: nobody may hold them any more */
static void
cj_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			while (stale_tables != NULL)
			{
				CjTableCache *tc = stale_tables;

				stale_tables = tc->next_stale;
				MemoryContextDelete(tc->cxt);
			}
			build_active = false;
			break;
		default:
			break;
	}
}

/*
 * cj_metadata_invalidate
 *		Forget the cached metadata of relid (a sharded table or any of its
 *		partitions), or of every table with InvalidOid, in this backend.
 *
 * Other backends learn of a change through the relcache invalidation that
 * the caller sends (CacheInvalidateRelcacheByRelid).
 */
void
cj_metadata_invalidate(Oid relid)
{
	if (!OidIsValid(relid))
	{
		replicas_relid_known = false;
		stale_relid_known = false;
		any_stale = -1;
	}
	note_build_inval(relid, !OidIsValid(relid));
	invalidate_entries(relid, !OidIsValid(relid));
}


/* ----------------------------------------------------------------
 *		Servers and the replicas table
 * ----------------------------------------------------------------
 */

/*
 * cj_is_postgres_fdw_server
 *		Whether serverid belongs to a foreign-data wrapper whose handler is
 *		postgres_fdw's.
 *
 * Judged by the handler function's name, not the wrapper's, so a wrapper
 * created under another name for postgres_fdw's handler counts too.
 * Answers are cached until a server or wrapper changes.
 */
bool
cj_is_postgres_fdw_server(Oid serverid)
{
	CjServerSlot *slot;
	bool		found;
	ForeignServer *server;
	bool		result = false;

	if (!OidIsValid(serverid))
		return false;

	slot = (CjServerSlot *) hash_search(server_cache, &serverid, HASH_FIND, NULL);
	if (slot != NULL)
		return slot->is_postgres_fdw;

	server = GetForeignServerExtended(serverid, FSV_MISSING_OK);
	if (server != NULL)
	{
		ForeignDataWrapper *fdw = GetForeignDataWrapperExtended(server->fdwid,
																FDW_MISSING_OK);

		if (fdw != NULL && OidIsValid(fdw->fdwhandler))
		{
			char	   *fname = get_func_name(fdw->fdwhandler);

			result = (fname != NULL && strcmp(fname, "postgres_fdw_handler") == 0);
		}
	}

	slot = (CjServerSlot *) hash_search(server_cache, &serverid, HASH_ENTER, &found);
	slot->is_postgres_fdw = result;
	return result;
}

/*
 * cj_node_name
 *		The name users know a node by: the server's name, or "local" for the
 *		coordinator.  A server dropped meanwhile prints as its OID rather
 *		than failing, since this feeds messages.
 */
char *
cj_node_name(Oid serverid)
{
	ForeignServer *server;

	if (serverid == CJ_LOCAL_NODE)
		return pstrdup("local");
	server = GetForeignServerExtended(serverid, FSV_MISSING_OK);
	if (server == NULL)
		return psprintf("server %u", serverid);
	return pstrdup(server->servername);
}

/*
 * cj_stale_relid
 *		OID of table colojoin.stale_placements, or InvalidOid when the
 *		installed version has none.
 */
Oid
cj_stale_relid(void)
{
	Oid			nspid;

	if (!colojoin_is_active())
		return InvalidOid;
	if (stale_relid_known)
		return stale_relid;
	nspid = get_namespace_oid(COLOJOIN_SCHEMA, true);
	stale_relid = OidIsValid(nspid) ? get_relname_relid("stale_placements", nspid) : InvalidOid;
	stale_relid_known = true;
	return stale_relid;
}

/*
 * cj_any_stale_placement
 *		Whether colojoin.stale_placements has a row: a scan the first time,
 *		then cached until the table changes (its trigger invalidates it), so
 *		that the checks for stale placements cost nothing in the usual case.
 */
bool
cj_any_stale_placement(void)
{
	Oid			relid = cj_stale_relid();

	if (!OidIsValid(relid))
		return false;
	if (any_stale < 0)
	{
		Relation	rel = table_open(relid, AccessShareLock);
		SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);

		any_stale = (systable_getnext(scan) != NULL) ? 1 : 0;
		systable_endscan(scan);
		table_close(rel, AccessShareLock);
	}
	return any_stale == 1;
}

/*
 * cj_replicas_relid
 *		OID of table colojoin.replicas, or InvalidOid when colojoin is not
 *		installed in this database.
 */
Oid
cj_replicas_relid(void)
{
	Oid			nspid;

	if (!colojoin_is_active())
		return InvalidOid;
	if (replicas_relid_known)
		return replicas_relid;

	nspid = get_namespace_oid(COLOJOIN_SCHEMA, true);
	replicas_relid = OidIsValid(nspid) ? get_relname_relid("replicas", nspid) : InvalidOid;
	replicas_relid_known = true;
	return replicas_relid;
}


/* ----------------------------------------------------------------
 *		Building a table's metadata
 * ----------------------------------------------------------------
 */

/*
 * Append every leaf below partition relid (relid itself when it is a leaf)
 * to *leaves, and the position of every relation of that subtree in class
 * cls to *positions, in bound order.  Intermediate partitioned tables are
 * locked as PostgreSQL's own planner locks them, since their partition
 * descriptors are read.
 */
static void
collect_leaves(Oid relid, bool is_leaf, int cls, bool is_class,
			   List **leaves, List **positions)
{
	CjRelPos   *pos = palloc(sizeof(CjRelPos));
	Relation	rel;
	PartitionDesc pd;
	int			i;

	pos->relid = relid;
	pos->cls = cls;
	pos->leaf = is_leaf ? list_length(*leaves) : -1;
	pos->is_class = is_class;
	*positions = lappend(*positions, pos);
	if (is_leaf)
	{
		*leaves = lappend_oid(*leaves, relid);
		return;
	}

	rel = relation_open(relid, AccessShareLock);
	pd = RelationGetPartitionDesc(rel, true);
	for (i = 0; i < pd->nparts; i++)
		collect_leaves(pd->oids[i], pd->is_leaf[i], cls, false, leaves, positions);
	relation_close(rel, NoLock);
}

/*
 * Fill leaf's placements (primary only; replicas are added later) and
 * remote column names.  topdesc is the sharded table's tuple descriptor.
 */
static void
build_leaf(CjLeaf *leaf, Oid relid, TupleDesc topdesc, bool *all_foreign)
{
	char		relkind = get_rel_relkind(relid);

	leaf->relid = relid;
	leaf->is_foreign = false;
	leaf->nplacements = 0;
	leaf->placements = palloc0(sizeof(CjPlacement));

	if (relkind == RELKIND_FOREIGN_TABLE)
	{
		ForeignTable *ft = GetForeignTable(relid);

		if (cj_is_postgres_fdw_server(ft->serverid))
		{
			CjPlacement *p = &leaf->placements[0];
			char	   *schema = cj_option_value(ft->options, "schema_name");
			char	   *table = cj_option_value(ft->options, "table_name");

			leaf->is_foreign = true;
			leaf->nplacements = 1;
			p->serverid = ft->serverid;
			p->remote_schema = schema ? pstrdup(schema) :
				get_namespace_name(get_rel_namespace(relid));
			p->remote_table = table ? pstrdup(table) : get_rel_name(relid);
			p->is_replica = false;
		}
		else
			*all_foreign = false;
	}
	else
	{
		CjPlacement *p = &leaf->placements[0];

		*all_foreign = false;
		leaf->nplacements = 1;
		p->serverid = CJ_LOCAL_NODE;
		p->remote_schema = get_namespace_name(get_rel_namespace(relid));
		p->remote_table = get_rel_name(relid);
		p->is_replica = false;
	}

	leaf->natts = topdesc->natts;
	leaf->remote_colnames = NULL;
	leaf->topdesc = topdesc;
	leaf->cxt = CurrentMemoryContext;
}

char	  **
cj_leaf_colnames(CjLeaf *leaf)
{
	TupleDesc	topdesc = leaf->topdesc;
	char		relkind;
	CatCList   *attrs;
	int			nsystem;
	int			i;
	MemoryContext oldcxt;
	char	  **names;

	if (leaf->remote_colnames != NULL)
		return leaf->remote_colnames;

	relkind = get_rel_relkind(leaf->relid);
	oldcxt = MemoryContextSwitchTo(leaf->cxt);
	names = palloc0(sizeof(char *) * Max(topdesc->natts, 1));

	/*
	 * Columns are matched by name: attnos of a leaf may differ from its
	 * parent's.  One catalog list of the leaf's attributes answers every
	 * column (a lookup per column was most of a cold session's planning).
	 */
	attrs = SearchSysCacheList1(ATTNUM, ObjectIdGetDatum(leaf->relid));
	nsystem = 0;
	while (nsystem < attrs->n_members &&
		   ((Form_pg_attribute) GETSTRUCT(&attrs->members[nsystem]->tuple))->attnum <= 0)
		nsystem++;
	for (i = 0; i < topdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(topdesc, i);
		const char *name = NameStr(att->attname);
		HeapTuple	leafatt = NULL;
		char	   *remote = NULL;
		int			m;

		if (att->attisdropped)
			continue;
		/* the same attno first (members are in attno order, system ones first) */
		for (m = 0; m < attrs->n_members; m++)
		{
			int			probe = (nsystem + i + m) % attrs->n_members;
			HeapTuple	tup = &attrs->members[probe]->tuple;
			Form_pg_attribute a = (Form_pg_attribute) GETSTRUCT(tup);

			if (!a->attisdropped && a->attnum > 0 &&
				strcmp(NameStr(a->attname), name) == 0)
			{
				leafatt = tup;
				break;
			}
		}
		if (leafatt != NULL && relkind == RELKIND_FOREIGN_TABLE)
		{
			bool		isnull;
			Datum		options = SysCacheGetAttr(ATTNUM, leafatt,
												  Anum_pg_attribute_attfdwoptions,
												  &isnull);

			if (!isnull)
				remote = cj_option_value(untransformRelOptions(options),
									  "column_name");
		}
		names[i] = pstrdup(remote ? remote : name);
	}
	ReleaseSysCacheList(attrs);
	MemoryContextSwitchTo(oldcxt);
	leaf->remote_colnames = names;
	return names;
}

static int
replica_row_cmp(const ListCell *a, const ListCell *b)
{
	const CjReplicaRow *x = (const CjReplicaRow *) lfirst(a);
	const CjReplicaRow *y = (const CjReplicaRow *) lfirst(b);

	return strcmp(x->server, y->server);
}

/*
 * Add the replica placements listed in colojoin.replicas to the leaves of
 * tc.  One scan of the whole table serves every leaf: a probe per leaf
 * would cost more for tables with hundreds of partitions.  Rows naming a
 * server that no longer exists or is not a postgres_fdw server are ignored;
 * so are rows of leaves that are not postgres_fdw foreign tables, which
 * add_replica never creates.
 */
static void
add_replicas(CjTableCache *tc)
{
	Oid			relid = cj_replicas_relid();
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	List	  **rows;
	int			nleaves_total = 0;
	int		   *leafbase;
	int			c;

	if (!OidIsValid(relid))
		return;

	/* flat numbering of leaves, to keep a list of replica rows per leaf */
	leafbase = palloc(sizeof(int) * (tc->pub.nclasses + 1));
	for (c = 0; c < tc->pub.nclasses; c++)
	{
		leafbase[c] = nleaves_total;
		nleaves_total += tc->pub.classes[c].nleaves;
	}
	rows = palloc0(sizeof(List *) * Max(nleaves_total, 1));

	rel = table_open(relid, AccessShareLock);
	if (RelationGetDescr(rel)->natts != 4)
		elog(ERROR, "table colojoin.replicas has an unexpected shape");
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while ((tuple = systable_getnext(scan)) != NULL)
	{
		Datum		values[4];
		bool		isnull[4];
		CjRelPos   *pos;
		CjReplicaRow *row;

		heap_deform_tuple(tuple, RelationGetDescr(rel), values, isnull);
		if (isnull[0] || isnull[1] || isnull[2] || isnull[3])
			continue;
		pos = find_relpos(tc, DatumGetObjectId(values[0]));
		if (pos == NULL || pos->leaf < 0)
			continue;

		row = palloc(sizeof(CjReplicaRow));
		row->server = pstrdup(NameStr(*DatumGetName(values[1])));
		row->remote_schema = TextDatumGetCString(values[2]);
		row->remote_table = TextDatumGetCString(values[3]);
		row->serverid = InvalidOid;
		rows[leafbase[pos->cls] + pos->leaf] =
			lappend(rows[leafbase[pos->cls] + pos->leaf], row);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	for (c = 0; c < tc->pub.nclasses; c++)
	{
		CjClass    *cls = &tc->pub.classes[c];
		int			l;

		for (l = 0; l < cls->nleaves; l++)
		{
			CjLeaf	   *leaf = &cls->leaves[l];
			List	   *list = rows[leafbase[c] + l];
			ListCell   *lc;
			CjPlacement *placements;
			int			n = 0;

			if (list == NIL || !leaf->is_foreign)
				continue;

			list_sort(list, replica_row_cmp);
			placements = palloc0(sizeof(CjPlacement) *
								 (leaf->nplacements + list_length(list)));
			memcpy(placements, leaf->placements,
				   sizeof(CjPlacement) * leaf->nplacements);
			n = leaf->nplacements;
			foreach(lc, list)
			{
				CjReplicaRow *row = (CjReplicaRow *) lfirst(lc);
				Oid			serverid = get_foreign_server_oid(row->server, true);
				int			k;
				bool		dup = false;

				if (!cj_is_postgres_fdw_server(serverid))
					continue;
				for (k = 0; k < n; k++)
					dup |= (placements[k].serverid == serverid);
				if (dup)
					continue;
				placements[n].serverid = serverid;
				placements[n].remote_schema = row->remote_schema;
				placements[n].remote_table = row->remote_table;
				placements[n].is_replica = true;
				n++;
			}
			leaf->placements = placements;
			leaf->nplacements = n;
		}
	}
}

/*
 * Take the placements listed in colojoin.stale_placements out of the
 * leaves' placements (into their stale lists): nothing plans reads or
 * writes of them.  The write path marks a placement stale only when
 * another one of the leaf took the write, so a leaf keeps one.
 */
static void
remove_stale(CjTableCache *tc)
{
	Oid			relid = cj_stale_relid();
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;

	if (!OidIsValid(relid))
		return;
	rel = table_open(relid, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while ((tuple = systable_getnext(scan)) != NULL)
	{
		bool		isnull;
		Datum		leafd = heap_getattr(tuple, 1, RelationGetDescr(rel), &isnull);
		Datum		serverd;
		CjRelPos   *pos;
		CjLeaf	   *leaf;
		Oid			serverid;
		int			p;

		if (isnull)
			continue;
		serverd = heap_getattr(tuple, 2, RelationGetDescr(rel), &isnull);
		if (isnull)
			continue;
		pos = find_relpos(tc, DatumGetObjectId(leafd));
		if (pos == NULL || pos->leaf < 0)
			continue;
		serverid = get_foreign_server_oid(NameStr(*DatumGetName(serverd)), true);
		leaf = &tc->pub.classes[pos->cls].leaves[pos->leaf];
		for (p = 0; p < leaf->nplacements; p++)
		{
			if (leaf->placements[p].serverid != serverid)
				continue;
			if (leaf->stale == NULL)
				leaf->stale = palloc0(sizeof(CjPlacement) * leaf->nplacements);
			leaf->stale[leaf->nstale++] = leaf->placements[p];
			memmove(&leaf->placements[p], &leaf->placements[p + 1],
					sizeof(CjPlacement) * (leaf->nplacements - p - 1));
			leaf->nplacements--;
			break;
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
}

/*
 * Build the metadata of partitioned table rel into a new context (a child
 * of the caller's context, so that an error cannot leak it).
 */
static CjTableCache *
build_table(Relation rel)
{
	MemoryContext cxt;
	MemoryContext oldcxt;
	CjTableCache *tc;
	CjTable    *t;
	PartitionKey key;
	PartitionDesc pd;
	TupleDesc	topdesc = RelationGetDescr(rel);
	List	   *allrels = NIL;
	int			nkey;
	int			c;
	ListCell   *lc;

	/*
	 * Everything, including the garbage of catalog lookups, goes into the
	 * table's own context: it is small next to the result and is released
	 * with it.
	 */
	cxt = AllocSetContextCreate(CurrentMemoryContext, "colojoin sharded table",
								ALLOCSET_DEFAULT_SIZES);
	MemoryContextCopyAndSetIdentifier(cxt, RelationGetRelationName(rel));
	oldcxt = MemoryContextSwitchTo(cxt);

	/* the leaves look their columns up later, after rel is closed */
	topdesc = CreateTupleDescCopy(topdesc);

	tc = palloc0(sizeof(CjTableCache));
	tc->cxt = cxt;
	t = &tc->pub;
	t->relid = RelationGetRelid(rel);

	key = RelationGetPartitionKey(rel);
	nkey = key->partnatts;
	t->strategy = key->strategy;
	t->partnatts = nkey;
	t->partattrs = palloc(sizeof(AttrNumber) * nkey);
	t->parttypid = palloc(sizeof(Oid) * nkey);
	t->parttypmod = palloc(sizeof(int32) * nkey);
	t->partopfamily = palloc(sizeof(Oid) * nkey);
	t->partopcintype = palloc(sizeof(Oid) * nkey);
	t->partcollation = palloc(sizeof(Oid) * nkey);
	memcpy(t->partattrs, key->partattrs, sizeof(AttrNumber) * nkey);
	memcpy(t->parttypid, key->parttypid, sizeof(Oid) * nkey);
	memcpy(t->parttypmod, key->parttypmod, sizeof(int32) * nkey);
	memcpy(t->partopfamily, key->partopfamily, sizeof(Oid) * nkey);
	memcpy(t->partopcintype, key->partopcintype, sizeof(Oid) * nkey);
	memcpy(t->partcollation, key->partcollation, sizeof(Oid) * nkey);
	t->partexprs = palloc0(sizeof(Node *) * nkey);
	{
		ListCell   *le = list_head(key->partexprs);

		for (c = 0; c < nkey; c++)
		{
			if (t->partattrs[c] != 0)
				continue;
			if (le == NULL)
				elog(ERROR, "wrong number of partition key expressions");
			t->partexprs[c] = copyObject(lfirst(le));
			le = lnext(key->partexprs, le);
		}
	}

	pd = RelationGetPartitionDesc(rel, true);
	t->has_default = (pd->boundinfo != NULL &&
					  partition_bound_has_default(pd->boundinfo));
	t->nclasses = pd->nparts;
	t->classes = palloc0(sizeof(CjClass) * Max(pd->nparts, 1));
	t->all_foreign = true;

	for (c = 0; c < pd->nparts; c++)
	{
		CjClass    *cls = &t->classes[c];
		HeapTuple	tuple;
		Datum		bounddatum;
		bool		isnull;
		List	   *leaves = NIL;
		int			l;

		cls->partrelid = pd->oids[c];

		tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(cls->partrelid));
		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for relation %u", cls->partrelid);
		bounddatum = SysCacheGetAttr(RELOID, tuple, Anum_pg_class_relpartbound,
									 &isnull);
		if (isnull)
			elog(ERROR, "partition %u has no partition bound", cls->partrelid);
		cls->bound = castNode(PartitionBoundSpec,
							  stringToNode(TextDatumGetCString(bounddatum)));
		cls->bound_text = NULL; /* cj_class_bound_text makes it when asked */
		ReleaseSysCache(tuple);

		collect_leaves(cls->partrelid, pd->is_leaf[c], c, true, &leaves, &allrels);
		cls->nleaves = list_length(leaves);
		cls->leaves = palloc0(sizeof(CjLeaf) * Max(cls->nleaves, 1));
		for (l = 0; l < cls->nleaves; l++)
			build_leaf(&cls->leaves[l], list_nth_oid(leaves, l), topdesc,
					   &t->all_foreign);
	}

	tc->nrels = list_length(allrels);
	tc->rels = palloc(sizeof(CjRelPos) * Max(tc->nrels, 1));
	c = 0;
	foreach(lc, allrels)
		tc->rels[c++] = *(CjRelPos *) lfirst(lc);
	qsort(tc->rels, tc->nrels, sizeof(CjRelPos), relpos_cmp);

	add_replicas(tc);
	remove_stale(tc);

	for (c = 0; c < t->nclasses; c++)
		t->classes[c].nodes = cj_common_nodes(&t->classes[c], NULL);

	MemoryContextSwitchTo(oldcxt);
	return tc;
}

/*
 * cj_key_text
 *		See metadata.h.  Expressions are printed by ruleutils, as \d+ shows
 *		them, so that messages and EXPLAIN name keys the way users wrote them.
 */
char *
cj_key_text(CjTable *table, int col, const char *qualifier)
{
	if (table->partattrs[col] != 0)
	{
		char	   *name = get_attname(table->relid, table->partattrs[col], false);

		return qualifier ?
			psprintf("%s.%s", quote_identifier(qualifier), quote_identifier(name)) :
			pstrdup(quote_identifier(name));
	}
	return deparse_expression(table->partexprs[col],
							  deparse_context_for(qualifier ? qualifier :
												  get_rel_name(table->relid),
												  table->relid),
							  qualifier != NULL, false);
}

/*
 * cj_class_bound_text
 *		See metadata.h.  Made on first use and kept with the table: printing
 *		a bound opens the partitioned table, which planning a point lookup
 *		in a new session should not pay for every partition.
 */
const char *
cj_class_bound_text(CjTable *table, int cls)
{
	CjClass    *c = &table->classes[cls];

	if (c->bound_text == NULL)
	{
		CjTableCache *tc = (CjTableCache *) table;
		HeapTuple	tuple;
		Datum		bounddatum;
		Datum		textbound;
		bool		isnull;

		/*
		 * A table held after an invalidation (see cj_get_table) may name a
		 * partition detached or dropped since: say which one it was.
		 */
		tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(c->partrelid));
		if (!HeapTupleIsValid(tuple))
			return psprintf("partition %u (dropped)", c->partrelid);
		bounddatum = SysCacheGetAttr(RELOID, tuple, Anum_pg_class_relpartbound,
									 &isnull);
		if (isnull)
		{
			ReleaseSysCache(tuple);
			return psprintf("partition %u (detached)", c->partrelid);
		}
		/* pg_get_expr prints bounds exactly as users see them in \d+ */
		textbound = DirectFunctionCall2(pg_get_expr, bounddatum,
										ObjectIdGetDatum(c->partrelid));
		c->bound_text = MemoryContextStrdup(tc->cxt, TextDatumGetCString(textbound));
		ReleaseSysCache(tuple);
	}
	return c->bound_text;
}

/* did an invalidation recorded during the build concern tc? */
static bool
build_was_invalidated(CjTableCache *tc)
{
	int			i;

	if (build_inval_all)
		return true;
	for (i = 0; i < build_ninvals; i++)
		if (table_depends_on(tc, build_invals[i]))
			return true;
	return false;
}

/*
 * cj_get_table
 *		The metadata of partitioned table relid, or NULL when relid is not a
 *		partitioned table (or no longer exists).
 *
 * Built once and cached until an invalidation concerns the table or one of
 * its partitions.  A build that raced with such an invalidation is thrown
 * away and redone, so that a stale picture never enters the cache; after a
 * few attempts under constant DDL the last build is returned uncached.
 */
CjTable *
cj_get_table(Oid relid)
{
	CjCacheSlot *slot;
	CjTableCache *tc = NULL;
	Relation	rel;
	int			attempt;

	if (!OidIsValid(relid))
		return NULL;

	slot = (CjCacheSlot *) hash_search(table_cache, &relid, HASH_FIND, NULL);
	if (slot != NULL)
		return &slot->table->pub;

	if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
		return NULL;

	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL)
		return NULL;
	if (rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
	{
		relation_close(rel, AccessShareLock);
		return NULL;
	}

	for (attempt = 0; attempt < 3; attempt++)
	{
		bool		found;

		build_active = true;
		build_inval_all = false;
		build_ninvals = 0;
		tc = build_table(rel);
		build_active = false;

		if (build_was_invalidated(tc))
		{
			/* keep it readable for a caller that gets it after the last try */
			MemoryContextSetParent(tc->cxt, metadata_cxt);
			tc->next_stale = stale_tables;
			stale_tables = tc;
			continue;
		}

		MemoryContextSetParent(tc->cxt, metadata_cxt);
		slot = (CjCacheSlot *) hash_search(table_cache, &relid, HASH_ENTER, &found);
		if (found)
		{
			/* cannot happen (no nested builds), but never leak the old one */
			slot->table->next_stale = stale_tables;
			stale_tables = slot->table;
		}
		slot->table = tc;
		break;
	}

	relation_close(rel, NoLock);
	return &tc->pub;
}

/*
 * cj_class_index
 *		Index of the class whose top-level partition is partrelid, or -1.
 *		A binary search: the planner calls it for every partition.
 */
int
cj_class_index(CjTable *table, Oid partrelid)
{
	CjRelPos   *pos = find_relpos((CjTableCache *) table, partrelid);

	return (pos != NULL && pos->is_class) ? pos->cls : -1;
}

/*
 * cj_class_of_leaf
 *		Index of the class holding leaf leafrelid (at any level) and, in
 *		*leafindex when not NULL, its index in the class's leaves; -1 (and
 *		*leafindex -1) when leafrelid is not a leaf of table.
 */
int
cj_class_of_leaf(CjTable *table, Oid leafrelid, int *leafindex)
{
	CjRelPos   *pos = find_relpos((CjTableCache *) table, leafrelid);

	if (pos == NULL || pos->leaf < 0)
	{
		if (leafindex)
			*leafindex = -1;
		return -1;
	}
	if (leafindex)
		*leafindex = pos->leaf;
	return pos->cls;
}
