/*-------------------------------------------------------------------------
 *
 * size_cache.c
 *	  Sizes of foreign partitions nobody ANALYZEd, read from their nodes and
 *	  cached per backend, so that the planner's estimates (and colojoin's
 *	  choice of what to move) follow the data without ANALYZE or
 *	  use_remote_estimate.
 *
 *	  For a foreign partition whose pg_class says it was never analyzed
 *	  (reltuples < 0), get_relation_info_hook sets the relation's pages
 *	  and tuples from the cache before postgres_fdw estimates its size
 *	  (postgres_fdw would otherwise assume 10 pages).  A miss, or an entry
 *	  older than colojoin.remote_size_lifetime, reads the sizes of every
 *	  leaf of the sharded table on the leaf's node at once (a query pruned
 *	  to one partition asks one node): one small query, on a
 *	  connection of its own outside any remote transaction, that takes no
 *	  lock (the node's own count, pg_class.reltuples, when it made one, else
 *	  its statistics' live rows).  A node that
 *	  cannot be reached gives no size (the planner's default applies).
 *	  Statistics in pg_class (ANALYZE, colojoin.refresh_statistics) always
 *	  win over the cache.
 *
 *	  This file estimates; it plans nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>
#include <math.h>

#include "access/htup_details.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "optimizer/plancat.h"
#include "storage/bufpage.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "metadata/metadata.h"
#include "operations/shared_sizes.h"
#include "operations/size_cache.h"
#include "remote/connection.h"
#include "util/extension.h"

/* the connection slot size reads use, apart from every transaction's */
#define CJ_SIZE_SLOT 999

int			colojoin_remote_size_lifetime = 300000;

typedef struct SizeEntry
{
	Oid			leaf;			/* hash key */
	double		tuples;			/* -1: the node does not know */
	double		pages;
	TimestampTz fetched;
	/* the remote table's columns: name and type, for binary moves */
	int			ncols;
	char	  **colnames;
	Oid		   *coltypes;
	/* and their distinct values by the node's statistics (0: unknown) */
	double	   *colndistinct;
	double	   *colnullfrac;	/* their fraction of NULLs (0: unknown) */
	char	  **colmin;			/* their histogram's first and last bound, */
	char	  **colmax;			/* as text (NULL: none) */
} SizeEntry;

static HTAB *sizes = NULL;
static MemoryContext sizes_cxt = NULL;	/* the table and its entries' columns */
static get_relation_info_hook_type prev_relation_info = NULL;

/*
 * cj_remote_sizes_query: the SQL that reads, on one node, the sizes of the
 * tables named by parallel lists of schemas and names (literals), one row
 * per table found: ordinal, reltuples, relpages, pages now.
 */
char *
cj_remote_sizes_query(const char *schemas, const char *names)
{
	return psprintf("SELECT s.i, c.reltuples, c.relpages, "
					"pg_catalog.pg_relation_size(c.oid) / pg_catalog.current_setting('block_size')::pg_catalog.int8 "
					"FROM ROWS FROM (pg_catalog.unnest(ARRAY[%s]::pg_catalog.text[]), "
					"pg_catalog.unnest(ARRAY[%s]::pg_catalog.text[])) "
					"WITH ORDINALITY AS s(nsp, rel, i) "
					"JOIN pg_catalog.pg_namespace n ON n.nspname = s.nsp "
					"JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = s.rel",
					schemas, names);
}

/*
 * cj_remote_size_row: the tuples and pages of a row of that query: the
 * rows the node counted scaled to the table's size now (as the planner
 * scales a plain table's), or -1 tuples when it never counted them.
 */
void
cj_remote_size_row(PGresult *res, int row, double *tuples, double *pages)
{
	double		t = strtod(PQgetvalue(res, row, 1), NULL);
	double		p = strtod(PQgetvalue(res, row, 2), NULL);
	double		now = strtod(PQgetvalue(res, row, 3), NULL);

	if (t >= 0 && p > 0)
		t = t / p * now;
	else if (now > 0 || t < 0)
		t = -1;
	*tuples = t;
	*pages = now;
}

/*
 * cj_leaves_on_server: the foreign leaves of tables (CjTable *) whose
 * primary placement is on serverid, each once, and their remote schemas and
 * names as comma-separated literals, for cj_remote_sizes_query.
 */
void
cj_leaves_on_server(List *tables, Oid serverid, List **leaves,
					StringInfo schemas, StringInfo names)
{
	ListCell   *lt;

	foreach(lt, tables)
	{
		CjTable    *t = (CjTable *) lfirst(lt);
		int			c,
					l;

		for (c = 0; t != NULL && c < t->nclasses; c++)
			for (l = 0; l < t->classes[c].nleaves; l++)
			{
				CjLeaf	   *leaf = &t->classes[c].leaves[l];

				if (!leaf->is_foreign || leaf->nplacements == 0 ||
					leaf->placements[0].serverid != serverid ||
					list_member_oid(*leaves, leaf->relid))
					continue;
				*leaves = lappend_oid(*leaves, leaf->relid);
				appendStringInfo(schemas, "%s%s", schemas->len ? "," : "",
								 quote_literal_cstr(leaf->placements[0].remote_schema));
				appendStringInfo(names, "%s%s", names->len ? "," : "",
								 quote_literal_cstr(leaf->placements[0].remote_table));
			}
	}
}

/* servers, with the servers of t's foreign leaves' primaries added */
List *
cj_primary_servers(CjTable *t, List *servers)
{
	int			c,
				l;

	for (c = 0; c < t->nclasses; c++)
		for (l = 0; l < t->classes[c].nleaves; l++)
		{
			CjLeaf	   *leaf = &t->classes[c].leaves[l];

			if (leaf->is_foreign && leaf->nplacements > 0)
				servers = list_append_unique_oid(servers, leaf->placements[0].serverid);
		}
	return servers;
}

/* room for size columns in e, after freeing those of a found entry */
static void
alloc_columns(SizeEntry *e, bool found, int size)
{
	if (found && e->colnames != NULL)
	{
		while (e->ncols > 0)
		{
			e->ncols--;
			pfree(e->colnames[e->ncols]);
			if (e->colmin[e->ncols])
				pfree(e->colmin[e->ncols]);
			if (e->colmax[e->ncols])
				pfree(e->colmax[e->ncols]);
		}
		pfree(e->colnames);
		pfree(e->coltypes);
		pfree(e->colndistinct);
		pfree(e->colnullfrac);
		pfree(e->colmin);
		pfree(e->colmax);
	}
	e->ncols = 0;
	size = Max(size, 1);
	e->colnames = MemoryContextAlloc(sizes_cxt, sizeof(char *) * size);
	e->coltypes = MemoryContextAlloc(sizes_cxt, sizeof(Oid) * size);
	e->colndistinct = MemoryContextAlloc(sizes_cxt, sizeof(double) * size);
	e->colnullfrac = MemoryContextAlloc(sizes_cxt, sizeof(double) * size);
	e->colmin = MemoryContextAllocZero(sizes_cxt, sizeof(char *) * size);
	e->colmax = MemoryContextAllocZero(sizes_cxt, sizeof(char *) * size);
}

/* e as the shared entry of another backend has it */
static void
entry_from_shared(SizeEntry *e, bool found, const CjSharedSize *s)
{
	int			i;

	alloc_columns(e, found, s->ncols);
	e->tuples = s->tuples;
	e->pages = s->pages;
	e->fetched = s->fetched;
	for (i = 0; i < s->ncols; i++)
	{
		e->colnames[i] = MemoryContextStrdup(sizes_cxt, NameStr(s->cols[i].name));
		e->coltypes[i] = s->cols[i].type;
		e->colndistinct[i] = s->cols[i].ndistinct;
		e->colnullfrac[i] = s->cols[i].nullfrac;
		e->colmin[i] = s->cols[i].lo[0] ? MemoryContextStrdup(sizes_cxt, s->cols[i].lo) : NULL;
		e->colmax[i] = s->cols[i].hi[0] ? MemoryContextStrdup(sizes_cxt, s->cols[i].hi) : NULL;
	}
	e->ncols = s->ncols;
}

/*
 * publish
 *		What this backend read of leaf (e), for the others.  Not what a node
 *		said before it ever analyzed the table (no column has statistics,
 *		the rows are its live-row counter): a table just loaded is analyzed
 *		soon after, and every session should then see it, not in five
 *		minutes.
 */
static void
publish(Oid leaf, SizeEntry *e)
{
	CjSharedSize *s;
	int			i;
	bool		analyzed = false;

	for (i = 0; i < e->ncols; i++)
		if (e->colndistinct[i] != 0)
			analyzed = true;
	if (e->ncols > CJ_SHARED_SIZE_COLS || !analyzed)
		return;
	s = palloc0(sizeof(CjSharedSize));
	s->tuples = e->tuples;
	s->pages = e->pages;
	s->fetched = e->fetched;
	s->ncols = e->ncols;
	for (i = 0; i < e->ncols; i++)
	{
		if (strlen(e->colnames[i]) >= NAMEDATALEN)
		{
			pfree(s);
			return;
		}
		namestrcpy(&s->cols[i].name, e->colnames[i]);
		s->cols[i].type = e->coltypes[i];
		s->cols[i].ndistinct = e->colndistinct[i];
		s->cols[i].nullfrac = e->colnullfrac[i];
		/* bounds too long to share are left out (empty: none), both */
		if (e->colmin[i] && e->colmax[i] &&
			e->colmin[i][0] && e->colmax[i][0] &&
			strlen(e->colmin[i]) < sizeof(s->cols[i].lo) &&
			strlen(e->colmax[i]) < sizeof(s->cols[i].hi))
		{
			strlcpy(s->cols[i].lo, e->colmin[i], sizeof(s->cols[i].lo));
			strlcpy(s->cols[i].hi, e->colmax[i], sizeof(s->cols[i].hi));
		}
	}
	cj_shared_size_put(leaf, s);
	pfree(s);
}

/*
 * counted_text
 *		"length:text" at *p (length -1 and nothing: none) into *out, *p past
 *		it; false when *p holds no such item.
 */
static bool
counted_text(const char **p, char **out)
{
	char	   *end;
	long		len = strtol(*p, &end, 10);

	if (*end != ':')
		return false;
	if (len < 0)
	{
		*out = NULL;
		*p = end + 1;
		return true;
	}
	if ((long) strlen(end + 1) < len)
		return false;
	*out = pnstrdup(end + 1, len);
	*p = end + 1 + len;
	return true;
}

/*
 * set_columns
 *		e's remote columns from the node's list:
 *		"type:ndistinct:nullfrac:length:name" then "length:low" and
 *		"length:high" for each (pg_stats' n_distinct and null_frac, 0 when
 *		the node has none; the histogram's first and last bound, length -1
 *		without one; text may hold any character, so it is counted, not
 *		delimited).
 */
static void
set_columns(SizeEntry *e, bool found, const char *list)
{
	MemoryContext old = MemoryContextSwitchTo(sizes_cxt);
	const char *p = list;
	int			n = 0;
	int			size = 8;

	alloc_columns(e, found, size);
	while (*p)
	{
		char	   *end;
		Oid			typid = (Oid) strtoul(p, &end, 10);
		double		nd;
		double		nf;
		long		len;

		if (*end != ':')
			break;
		nd = strtod(end + 1, &end);
		if (*end != ':')
			break;
		nf = strtod(end + 1, &end);
		if (*end != ':')
			break;
		len = strtol(end + 1, &end, 10);
		if (*end != ':' || len < 0 || (long) strlen(end + 1) < len)
			break;
		if (n == size)
		{
			size *= 2;
			e->colnames = repalloc(e->colnames, sizeof(char *) * size);
			e->coltypes = repalloc(e->coltypes, sizeof(Oid) * size);
			e->colndistinct = repalloc(e->colndistinct, sizeof(double) * size);
			e->colnullfrac = repalloc(e->colnullfrac, sizeof(double) * size);
			e->colmin = repalloc(e->colmin, sizeof(char *) * size);
			e->colmax = repalloc(e->colmax, sizeof(char *) * size);
		}
		e->coltypes[n] = typid;
		e->colndistinct[n] = nd;
		e->colnullfrac[n] = nf;
		e->colnames[n] = pnstrdup(end + 1, len);
		e->colmin[n] = NULL;
		e->colmax[n] = NULL;
		n++;
		p = end + 1 + len;
		if (!counted_text(&p, &e->colmin[n - 1]) ||
			!counted_text(&p, &e->colmax[n - 1]))
			break;
	}
	e->ncols = n;
	MemoryContextSwitchTo(old);
}

/*
 * The lowest and highest value a node's statistics show of a column (lo,
 * hi): over the histogram's ends and the most common values, which the
 * histogram leaves out.  A column of few values (a size, a quantity, a
 * flag) has only most common values and no histogram at all, and without
 * bounds a range condition on it is guessed at a half per cent of the
 * rows.  Compared in the column's own type (text orders 10 before 9), only
 * for the types column_stats.c interpolates: FILTER keeps every other
 * cast from running.
 */
#define BOUND_AGG(agg, cast, types) \
	"pg_catalog." agg "(v::" cast ") FILTER (WHERE a.atttypid IN (" types "))::pg_catalog.text"
#define BOUND_EXPR(agg) \
	"COALESCE(" BOUND_AGG(agg, "pg_catalog.numeric", "20, 21, 23, 700, 701, 1700") ", " \
	BOUND_AGG(agg, "pg_catalog.date", "1082") ", " \
	BOUND_AGG(agg, "pg_catalog.timestamp", "1114") ", " \
	BOUND_AGG(agg, "pg_catalog.timestamptz", "1184") ")"
static const char *const bounds_sql =
BOUND_EXPR("min") " AS lo, " BOUND_EXPR("max") " AS hi "
"FROM pg_catalog.unnest((SELECT ARRAY[h[1], h[pg_catalog.array_upper(h, 1)]] "
"FROM (SELECT st.histogram_bounds::pg_catalog.text::pg_catalog.text[] AS h) x) || "
"st.most_common_vals::pg_catalog.text::pg_catalog.text[]) v";

/*
 * fetch_sizes
 *		Read the sizes of t's foreign leaves on serverid (every server when
 *		invalid) from that node: a query pruned to one partition asks one
 *		node, not all of them.
 */
static void
fetch_sizes(CjTable *t, Oid only_server)
{
	List	   *servers = NIL;
	ListCell   *ls;
	TimestampTz now = GetCurrentTimestamp();

	servers = OidIsValid(only_server) ? list_make1_oid(only_server) :
		cj_primary_servers(t, NIL);

	foreach(ls, servers)
	{
		Oid			serverid = lfirst_oid(ls);
		StringInfoData schemas;
		StringInfoData names;
		List	   *leaves = NIL;
		PGconn	   *conn;
		PGresult   *res;
		char	   *why = NULL;
		int			i;

		initStringInfo(&schemas);
		initStringInfo(&names);
		cj_leaves_on_server(list_make1(t), serverid, &leaves, &schemas, &names);
		if (!cj_has_user_mapping(serverid, GetUserId()))
			continue;
		conn = cj_conn_open_raw(serverid, GetUserId(), CJ_SIZE_SLOT, &why);
		if (conn == NULL)
			continue;			/* down: the planner's default size applies */
		/*
		 * Nothing here may wait: no lock (a table someone locked on the node
		 * is still counted, by its statistics), a bounded time.
		 */
		res = PQexec(conn, psprintf("SET statement_timeout = '2s'; "
									"SELECT s.i, c.reltuples, c.relpages, "
									"COALESCE(pg_catalog.pg_stat_get_live_tuples(c.oid), -1), "
									"(SELECT pg_catalog.string_agg(a.atttypid::pg_catalog.text || ':' || "
									"COALESCE(st.n_distinct::pg_catalog.text || ':' || st.null_frac::pg_catalog.text, '0:0') || ':' || "
									"pg_catalog.octet_length(a.attname::pg_catalog.text) || ':' || a.attname || "
									"COALESCE(pg_catalog.octet_length(b.lo) || ':' || b.lo, '-1:') || "
									"COALESCE(pg_catalog.octet_length(b.hi) || ':' || b.hi, '-1:'), '' ORDER BY a.attnum) "
									"FROM pg_catalog.pg_attribute a "
									"LEFT JOIN pg_catalog.pg_stats st ON st.schemaname = n.nspname "
									"AND st.tablename = c.relname AND st.attname = a.attname AND NOT st.inherited "
									"LEFT JOIN LATERAL (SELECT %s) b ON true "
									"WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) "
									"FROM ROWS FROM (pg_catalog.unnest(ARRAY[%s]::pg_catalog.text[]), "
									"pg_catalog.unnest(ARRAY[%s]::pg_catalog.text[])) "
									"WITH ORDINALITY AS s(nsp, rel, i) "
									"JOIN pg_catalog.pg_namespace n ON n.nspname = s.nsp "
									"JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = s.rel",
									bounds_sql, schemas.data, names.data));
		if (PQresultStatus(res) == PGRES_TUPLES_OK)
		{
			for (i = 0; i < PQntuples(res); i++)
			{
				int			idx = atoi(PQgetvalue(res, i, 0)) - 1;
				Oid			leaf;
				SizeEntry  *e;
				bool		found;

				if (idx < 0 || idx >= list_length(leaves))
					continue;
				leaf = list_nth_oid(leaves, idx);
				e = hash_search(sizes, &leaf, HASH_ENTER, &found);
				/* the node's count when it made one, else its live rows */
				e->tuples = strtod(PQgetvalue(res, i, 1), NULL);
				e->pages = strtod(PQgetvalue(res, i, 2), NULL);
				if (e->tuples < 0)
					e->tuples = strtod(PQgetvalue(res, i, 3), NULL);
				e->fetched = now;
				set_columns(e, found, PQgetvalue(res, i, 4));
				publish(leaf, e);
			}
		}
		PQclear(res);
	}
}

static SizeEntry *leaf_size(Oid leaf, Oid root);

/* the fresh cache entry of leaf, or NULL */
static SizeEntry *
fresh_entry(Oid leaf)
{
	SizeEntry  *e;

	if (sizes == NULL)
		return NULL;
	e = hash_search(sizes, &leaf, HASH_FIND, NULL);
	if (e != NULL &&
		!TimestampDifferenceExceeds(e->fetched, GetCurrentTimestamp(),
									colojoin_remote_size_lifetime))
		return e;
	return NULL;
}

/*
 * leaf_entry
 *		The cache entry of leaf, a foreign partition, read from its node with
 *		its table's other leaves when missing or stale; NULL when unknown.
 *		A fresh entry costs one hash lookup: a planning of a point lookup
 *		asks for every unpruned leaf, and the leaf's root (a catalog scan)
 *		is looked up only to fetch.
 */
static SizeEntry *
leaf_entry(Oid leaf)
{
	SizeEntry  *e = fresh_entry(leaf);
	List	   *ancestors;

	if (e != NULL)
		return e;
	if (get_rel_relkind(leaf) != RELKIND_FOREIGN_TABLE ||
		!get_rel_relispartition(leaf))
		return NULL;
	ancestors = get_partition_ancestors(leaf);
	if (ancestors == NIL)
		return NULL;
	return leaf_size(leaf, llast_oid(ancestors));
}

/* the server of leaf's primary placement in t, InvalidOid when not found */
static Oid
leaf_server(CjTable *t, Oid leaf)
{
	int			c,
				l;

	for (c = 0; c < t->nclasses; c++)
		for (l = 0; l < t->classes[c].nleaves; l++)
			if (t->classes[c].leaves[l].relid == leaf &&
				t->classes[c].leaves[l].nplacements > 0)
				return t->classes[c].leaves[l].placements[0].serverid;
	return InvalidOid;
}

/*
 * cached_entry
 *		The fresh entry of leaf this backend has, or another one of this
 *		server published (then copied here); NULL without asking a node.
 */
static SizeEntry *
cached_entry(Oid leaf)
{
	SizeEntry  *e;
	CjSharedSize *s;

	if (sizes == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(SizeEntry);
		sizes_cxt = AllocSetContextCreate(TopMemoryContext, "colojoin remote sizes",
										  ALLOCSET_SMALL_SIZES);
		ctl.hcxt = sizes_cxt;
		sizes = hash_create("colojoin remote sizes", 256, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	e = fresh_entry(leaf);
	if (e != NULL)
		return e;
	/* another session of this server read it not long ago */
	s = palloc(sizeof(CjSharedSize));
	if (cj_shared_size_get(leaf, s) &&
		!TimestampDifferenceExceeds(s->fetched, GetCurrentTimestamp(),
									colojoin_remote_size_lifetime))
	{
		bool		found;

		e = hash_search(sizes, &leaf, HASH_ENTER, &found);
		entry_from_shared(e, found, s);
	}
	pfree(s);
	return e;
}

/* the cached size of leaf (a foreign partition of root), fetched if stale */
static SizeEntry *
leaf_size(Oid leaf, Oid root)
{
	SizeEntry  *e = cached_entry(leaf);
	CjTable    *t;

	if (e != NULL)
		return e;
	t = cj_get_table(root);
	if (t == NULL)
		return NULL;
	fetch_sizes(t, leaf_server(t, leaf));
	return hash_search(sizes, &leaf, HASH_FIND, NULL);
}

bool
cj_leaf_remote_size(Oid leaf, double *tuples, double *pages)
{
	SizeEntry  *e;

	if (colojoin_remote_size_lifetime <= 0 || !colojoin_is_active())
		return false;
	e = leaf_entry(leaf);
	if (e == NULL)
		return false;
	if (e->tuples < 0)
		return false;			/* the node knows nothing either */
	*tuples = e->tuples;
	*pages = e->pages;
	if (*pages <= 0 && *tuples > 0)
	{
		/* pages the node never counted: from the rows and their width */
		int32		width = get_relation_data_width(leaf, NULL);
		double		per_page = (BLCKSZ - SizeOfPageHeaderData) /
			(double) (MAXALIGN(SizeofHeapTupleHeader) + width + sizeof(ItemIdData));

		*pages = ceil(*tuples / Max(per_page, 1));
	}
	return true;
}

/*
 * The index of column colname in leaf's cache entry (read from the node if
 * need be when fetch), -1 when unknown.
 */
static int
remote_column(Oid leaf, const char *colname, bool fetch, SizeEntry **entry)
{
	SizeEntry  *e;
	int			i;

	if (colojoin_remote_size_lifetime <= 0)
		return -1;
	e = fetch ? leaf_entry(leaf) : cached_entry(leaf);
	if (e == NULL)
		return -1;
	for (i = 0; i < e->ncols; i++)
		if (strcmp(e->colnames[i], colname) == 0)
		{
			*entry = e;
			return i;
		}
	return -1;
}

/*
 * cj_leaf_remote_type
 *		The type of column colname of leaf's remote table (its primary), as
 *		its node last said; false when that is not known.
 */
bool
cj_leaf_remote_type(Oid leaf, const char *colname, Oid *typid)
{
	SizeEntry  *e;
	int			i = remote_column(leaf, colname, true, &e);

	if (i < 0)
		return false;
	*typid = e->coltypes[i];
	return true;
}

/*
 * cj_leaf_remote_ndistinct
 *		The distinct values of column colname of leaf's remote table by its
 *		node's statistics (a fraction of the rows there made a count);
 *		false when the node has none.
 */
bool
cj_leaf_remote_ndistinct(Oid leaf, const char *colname, double *ndistinct)
{
	SizeEntry  *e;
	int			i = remote_column(leaf, colname, true, &e);
	double		nd;

	if (i < 0)
		return false;
	nd = e->colndistinct[i];
	if (nd < 0 && e->tuples >= 0)
		nd = -nd * e->tuples;
	if (nd <= 0)
		return false;
	*ndistinct = nd;
	return true;
}

/*
 * cj_leaf_column_stats
 *		What leaf's node said of it and of its column colname: rows, distinct
 *		values (a count), fraction of NULLs, and the column's remote type and
 *		its histogram's first and last bound as text (NULL: none; any of
 *		the last three may be asked for with NULL).  With fetch false only what
 *		this backend or another of the server read already: no node is
 *		asked.  false when that is not known.
 */
bool
cj_leaf_column_stats(Oid leaf, const char *colname, bool fetch,
					 double *rows, double *ndistinct, double *nullfrac,
					 Oid *type, const char **low, const char **high)
{
	SizeEntry  *e;
	int			i;

	if (!colojoin_is_active())
		return false;
	i = remote_column(leaf, colname, fetch, &e);
	if (i < 0 || e->tuples < 0 || e->colndistinct[i] == 0)
		return false;
	*rows = e->tuples;
	*ndistinct = e->colndistinct[i] < 0 ?
		-e->colndistinct[i] * e->tuples : e->colndistinct[i];
	*nullfrac = e->colnullfrac[i];
	if (type != NULL)
		*type = e->coltypes[i];
	if (low != NULL)
		*low = e->colmin[i];
	if (high != NULL)
		*high = e->colmax[i];
	return true;
}

/* pg_class.reltuples of relid: -1 when never counted */
float4
cj_rel_reltuples(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	float4		result = -1;

	if (HeapTupleIsValid(tup))
	{
		result = ((Form_pg_class) GETSTRUCT(tup))->reltuples;
		ReleaseSysCache(tup);
	}
	return result;
}

void
cj_size_cache_forget(void)
{
	if (sizes != NULL)
	{
		MemoryContextDelete(sizes_cxt);
		sizes_cxt = NULL;
		sizes = NULL;
	}
}

static void
cj_relation_info(PlannerInfo *root, Oid relationObjectId, bool inhparent,
				 RelOptInfo *rel)
{
	double		tuples;
	double		pages;

	if (prev_relation_info)
		prev_relation_info(root, relationObjectId, inhparent, rel);

	/* never analyzed (a foreign table's pg_class says -1): ask the node */
	if (rel->reloptkind != RELOPT_OTHER_MEMBER_REL || rel->tuples >= 0)
		return;
	if (cj_leaf_remote_size(relationObjectId, &tuples, &pages))
	{
		rel->pages = (BlockNumber) Min(pages, (double) MaxBlockNumber);
		rel->tuples = tuples;
	}
}

void
cj_size_cache_init(void)
{
	DefineCustomIntVariable("colojoin.remote_size_lifetime",
							"How long a backend keeps the sizes it read from the nodes for foreign partitions nobody analyzed.",
							"0 turns the reading off: such partitions get the planner's default size.",
							&colojoin_remote_size_lifetime,
							300000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	prev_relation_info = get_relation_info_hook;
	get_relation_info_hook = cj_relation_info;
}
