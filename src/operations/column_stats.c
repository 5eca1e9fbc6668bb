/*-------------------------------------------------------------------------
 *
 * column_stats.c
 *	  Column statistics of sharded tables nobody ANALYZEd, made from their
 *	  nodes' own, so that the planner's estimate of a join's rows follows
 *	  the data.
 *
 *	  Without statistics PostgreSQL assumes 200 distinct values in every
 *	  column: customer JOIN orders ON c_custkey = o_custkey then looks 400
 *	  times larger than it is, every join above it larger still, and both
 *	  PostgreSQL and colojoin choose plans for rows that never come.  The
 *	  nodes have counted: size_cache.c reads each leaf's pg_stats
 *	  n_distinct and null_frac with its size.  get_relation_stats_hook
 *	  hands the planner, for a column of a sharded table (or of one of its
 *	  foreign leaves) that has no pg_statistic row of its own, a row
 *	  carrying the null fraction, the number of distinct values and, for
 *	  numbers, dates and timestamps, a histogram of just the lowest and
 *	  highest value the nodes' histograms show (so that a range condition
 *	  is interpolated, not guessed): no most common values.
 *
 *	  Over the whole table: a partition key's values are disjoint between
 *	  partitions, so their counts add up.  Another column's leaves draw
 *	  from one domain; a leaf of n rows showing d distinct values is what
 *	  n draws from D equally likely values give, d = D (1 - e^(-n/D)),
 *	  which is solved for D and applied to the table's N rows.  A column
 *	  distinct within every leaf is taken as distinct over the table.  Only
 *	  leaves whose sizes the server read already count, scaled up to all
 *	  of them, so that estimating a point lookup asks no node but its own.
 *
 *	  Only while colojoin is enabled and reads remote sizes; ANALYZE's
 *	  statistics always win.  This file estimates; it plans nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "metadata/metadata.h"
#include "operations/column_stats.h"
#include "operations/size_cache.h"
#include "util/extension.h"
#include "util/settings.h"

static get_relation_stats_hook_type prev_relation_stats = NULL;
static TupleDesc statistic_desc = NULL;

/* what one leaf's node says of a column */
typedef struct LeafColumn
{
	double		rows;
	double		ndistinct;		/* absolute */
	double		nullfrac;
	Oid			type;			/* the remote column's type */
	const char *low;			/* its histogram's first and last bound, */
	const char *high;			/* as text (NULL: none) */
} LeafColumn;

/* the lowest and highest value of a column over a table's leaves */
typedef struct ColumnBounds
{
	Oid			type;			/* InvalidOid: none known */
	Oid			collation;
	Datum		low;
	Datum		high;
} ColumnBounds;

/* what leaf's node said of the column (fetch: asking it if need be) */
static bool
leaf_column(CjLeaf *leaf, AttrNumber top_attno, bool fetch, LeafColumn *lc)
{
	if (!leaf->is_foreign || top_attno < 1 || top_attno > leaf->natts ||
		cj_leaf_colnames(leaf)[top_attno - 1] == NULL)
		return false;
	lc->low = lc->high = NULL;
	lc->type = InvalidOid;
	if (!cj_leaf_column_stats(leaf->relid, cj_leaf_colnames(leaf)[top_attno - 1],
							  fetch, &lc->rows, &lc->ndistinct, &lc->nullfrac,
							  &lc->type, &lc->low, &lc->high))
	{
		/* an empty leaf's node may have no statistics of it: no rows */
		double		pages;

		if (!fetch || !cj_leaf_remote_size(leaf->relid, &lc->rows, &pages) ||
			lc->rows > 0)
			return false;
		lc->ndistinct = 0;
		lc->nullfrac = 0;
		return true;
	}
	lc->ndistinct = Min(lc->ndistinct, lc->rows);
	return true;
}

/*
 * domain_size
 *		The D that n draws from D equally likely values leave d distinct:
 *		d = D (1 - e^(-n/D)) grows with D from about d towards n, so D is
 *		found by bisection (on a log scale).  d close to n: every value
 *		distinct, no domain to speak of (-1).
 */
static double
domain_size(double d, double n)
{
	double		lo = log(Max(d, 1));
	double		hi = lo + log(1e9);
	int			i;

	if (d >= 0.98 * n)
		return -1;
	for (i = 0; i < 60; i++)
	{
		double		mid = (lo + hi) / 2;
		double		D = exp(mid);

		if (D * -expm1(-n / D) < d)
			lo = mid;
		else
			hi = mid;
	}
	return exp((lo + hi) / 2);
}

/*
 * bound_type
 *		Whether a column of type typid gets bounds from its nodes: a built-in
 *		type whose text its own input reads back whatever the node's
 *		settings (the nodes' sessions use ISO dates), and that orders like a
 *		number (what the planner interpolates a range in).
 */
static bool
bound_type(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return true;
		default:
			return false;
	}
}

/*
 * widen_bounds
 *		b widened to the bounds a leaf's node gave (lc), when the column's
 *		type (typid, of the coordinator's table) is the node's too.
 */
static void
widen_bounds(ColumnBounds *b, Oid typid, Oid collation, const LeafColumn *lc)
{
	Oid			input;
	Oid			ioparam;
	Datum		low;
	Datum		high;
	TypeCacheEntry *tc;

	if (lc->low == NULL || lc->high == NULL || lc->type != typid ||
		!bound_type(typid))
		return;
	getTypeInputInfo(typid, &input, &ioparam);
	low = OidInputFunctionCall(input, (char *) lc->low, ioparam, -1);
	high = OidInputFunctionCall(input, (char *) lc->high, ioparam, -1);
	if (!OidIsValid(b->type))
	{
		b->type = typid;
		b->collation = collation;
		b->low = low;
		b->high = high;
		return;
	}
	tc = lookup_type_cache(typid, TYPECACHE_CMP_PROC_FINFO);
	if (DatumGetInt32(FunctionCall2Coll(&tc->cmp_proc_finfo, collation, low, b->low)) < 0)
		b->low = low;
	if (DatumGetInt32(FunctionCall2Coll(&tc->cmp_proc_finfo, collation, high, b->high)) > 0)
		b->high = high;
}

static bool table_column_known(CjTable *t, AttrNumber attno, LeafColumn *out,
							   ColumnBounds *bounds);

/*
 * table_column
 *		A column of sharded table t (attno its own) over all its leaves:
 *		the rows, distinct values and null fraction.  Only the leaves whose
 *		sizes this server read already count (a query pruned to one
 *		partition must not ask every node), scaled to all of them; when
 *		none did, the first leaf's node is asked.  false when nothing is
 *		known.
 */
static bool
table_column(CjTable *t, AttrNumber attno, LeafColumn *out,
			 ColumnBounds *bounds)
{
	if (table_column_known(t, attno, out, bounds))
		return true;
	if (t->nclasses > 0 && t->classes[0].nleaves > 0)
	{
		LeafColumn	first;

		(void) leaf_column(&t->classes[0].leaves[0], attno, true, &first);
		return table_column_known(t, attno, out, bounds);
	}
	return false;
}

/*
 * table_column_known
 *		table_column over the leaves known without asking a node, and the
 *		column's lowest and highest value over them (bounds).
 */
static bool
table_column_known(CjTable *t, AttrNumber attno, LeafColumn *out,
				   ColumnBounds *bounds)
{
	Oid			typid;
	int32		typmod;
	Oid			collid;
	bool		is_key = t->partnatts == 1 && t->partattrs[0] == attno;
	double		rows = 0;
	double		nulls = 0;
	double		sum_distinct = 0;
	double		domain = 0;
	bool		unique = true;
	int			nleaves = 0;
	int			nknown = 0;
	double		scale;
	int			c;
	int			l;

	if (!t->all_foreign)
		return false;
	memset(bounds, 0, sizeof(*bounds));
	get_atttypetypmodcoll(t->relid, attno, &typid, &typmod, &collid);
	for (c = 0; c < t->nclasses; c++)
		for (l = 0; l < t->classes[c].nleaves; l++)
		{
			LeafColumn	lc;

			nleaves++;
			if (!leaf_column(&t->classes[c].leaves[l], attno, false, &lc))
				continue;
			nknown++;
			if (lc.rows <= 0)
				continue;
			widen_bounds(bounds, typid, collid, &lc);
			rows += lc.rows;
			nulls += lc.rows * lc.nullfrac;
			sum_distinct += lc.ndistinct;
			if (!is_key)
			{
				double		D = domain_size(lc.ndistinct,
											lc.rows * (1 - lc.nullfrac));

				if (D >= 0)
				{
					unique = false;
					domain = Max(domain, D);
				}
			}
		}
	if (nknown == 0 || rows <= 0)
		return false;
	/* the leaves not known are taken to be like those known */
	scale = (double) nleaves / nknown;
	out->nullfrac = nulls / rows;
	rows *= scale;
	nulls *= scale;
	sum_distinct *= scale;
	out->rows = rows;
	if (is_key || unique)
		out->ndistinct = sum_distinct;
	else
	{
		double		draws = rows - nulls;

		out->ndistinct = Min(domain * -expm1(-draws / domain), sum_distinct);
	}
	out->ndistinct = Max(out->ndistinct, 1);
	return true;
}

/*
 * A table's column over its leaves, once per transaction: the planner asks
 * for it at every estimate that reads the column, and a table of a
 * thousand partitions would be walked each time.
 */
typedef struct CachedColumnKey
{
	Oid			relid;
	AttrNumber	attno;
} CachedColumnKey;

typedef struct CachedColumn
{
	CachedColumnKey key;
	bool		known;
	LeafColumn	col;			/* low and high not kept */
	ColumnBounds bounds;		/* its Datums copied into the cache */
} CachedColumn;

static HTAB *column_cache = NULL;
static MemoryContext column_cxt = NULL;
static TimestampTz column_cache_xact = 0;

static bool
cached_table_column(CjTable *t, AttrNumber attno, LeafColumn *out,
					ColumnBounds *bounds)
{
	CachedColumnKey key;
	CachedColumn *e;
	bool		found;

	if (column_cache == NULL ||
		column_cache_xact != GetCurrentTransactionStartTimestamp())
	{
		HASHCTL		ctl;

		if (column_cxt == NULL)
			column_cxt = AllocSetContextCreate(TopMemoryContext,
											   "colojoin column statistics",
											   ALLOCSET_SMALL_SIZES);
		else
			MemoryContextReset(column_cxt);
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(CachedColumnKey);
		ctl.entrysize = sizeof(CachedColumn);
		ctl.hcxt = column_cxt;
		column_cache = hash_create("colojoin column statistics", 64, &ctl,
								   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		column_cache_xact = GetCurrentTransactionStartTimestamp();
	}
	memset(&key, 0, sizeof(key));
	key.relid = t->relid;
	key.attno = attno;
	e = hash_search(column_cache, &key, HASH_FIND, &found);
	if (!found)
	{
		LeafColumn	col;
		ColumnBounds b;
		bool		known;

		/*
		 * Worked out before the entry exists: asking a node may fail, and a
		 * caught error must not leave a half-filled entry for the rest of
		 * the transaction.
		 */
		memset(&b, 0, sizeof(b));
		known = table_column(t, attno, &col, &b);
		col.low = col.high = NULL;
		if (known && OidIsValid(b.type))
		{
			TypeCacheEntry *tc = lookup_type_cache(b.type, 0);
			MemoryContext old = MemoryContextSwitchTo(column_cxt);

			b.low = datumCopy(b.low, tc->typbyval, tc->typlen);
			b.high = datumCopy(b.high, tc->typbyval, tc->typlen);
			MemoryContextSwitchTo(old);
		}
		e = hash_search(column_cache, &key, HASH_ENTER, &found);
		e->known = known;
		e->col = col;
		e->bounds = b;
	}
	*out = e->col;
	*bounds = e->bounds;
	return e->known;
}

/*
 * leaf_of
 *		The metadata of foreign leaf relid of a sharded table, and the
 *		top-level table's attno of the leaf's column attnum; NULL when relid
 *		is no such leaf.
 */
static CjLeaf *
leaf_of(Oid relid, AttrNumber attnum, AttrNumber *top_attno)
{
	List	   *ancestors;
	Oid			root;
	CjTable    *t;
	char	   *attname;
	int			c;
	int			l;

	if (!get_rel_relispartition(relid))
		return NULL;
	ancestors = get_partition_ancestors(relid);
	if (ancestors == NIL)
		return NULL;
	root = llast_oid(ancestors);
	t = cj_get_table(root);
	attname = get_attname(relid, attnum, true);
	if (t == NULL || attname == NULL)
		return NULL;
	*top_attno = get_attnum(root, attname);
	for (c = 0; c < t->nclasses; c++)
		for (l = 0; l < t->classes[c].nleaves; l++)
			if (t->classes[c].leaves[l].relid == relid)
				return &t->classes[c].leaves[l];
	return NULL;
}

/* heap_freetuple, as VariableStatData's freefunc */
static void
free_stats_tuple(HeapTuple tuple)
{
	heap_freetuple(tuple);
}

/*
 * stats_tuple
 *		A pg_statistic row of relid's column attnum saying only its null
 *		fraction, distinct values (negative: a fraction of the rows, as
 *		ANALYZE writes it when they grow with the table) and, when bounds
 *		knows them, a histogram of just its lowest and highest value, so
 *		that the planner interpolates a range condition in it instead of
 *		guessing.
 */
static HeapTuple
stats_tuple(Oid relid, AttrNumber attnum, bool inh, const LeafColumn *col,
			const ColumnBounds *bounds)
{
	Datum		values[Natts_pg_statistic];
	bool		nulls[Natts_pg_statistic];
	Oid			typid;
	int32		typmod;
	Oid			collid;
	double		stadistinct = col->ndistinct;
	int			i;

	if (statistic_desc == NULL)
	{
		Relation	rel = table_open(StatisticRelationId, AccessShareLock);
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		statistic_desc = CreateTupleDescCopy(RelationGetDescr(rel));
		MemoryContextSwitchTo(old);
		table_close(rel, AccessShareLock);
	}
	get_atttypetypmodcoll(relid, attnum, &typid, &typmod, &collid);
	if (stadistinct > 0.1 * col->rows)
		stadistinct = -Min(stadistinct / col->rows, 1.0);

	memset(values, 0, sizeof(values));
	memset(nulls, false, sizeof(nulls));
	values[Anum_pg_statistic_starelid - 1] = ObjectIdGetDatum(relid);
	values[Anum_pg_statistic_staattnum - 1] = Int16GetDatum(attnum);
	values[Anum_pg_statistic_stainherit - 1] = BoolGetDatum(inh);
	values[Anum_pg_statistic_stanullfrac - 1] = Float4GetDatum((float4) col->nullfrac);
	values[Anum_pg_statistic_stawidth - 1] = Int32GetDatum(get_typavgwidth(typid, typmod));
	values[Anum_pg_statistic_stadistinct - 1] = Float4GetDatum((float4) stadistinct);
	/* no slots: kinds, operators and collations 0, numbers and values NULL */
	for (i = 0; i < STATISTIC_NUM_SLOTS; i++)
	{
		nulls[Anum_pg_statistic_stanumbers1 - 1 + i] = true;
		nulls[Anum_pg_statistic_stavalues1 - 1 + i] = true;
	}
	if (OidIsValid(bounds->type) && bounds->type == typid)
	{
		TypeCacheEntry *tc = lookup_type_cache(typid, TYPECACHE_LT_OPR |
											   TYPECACHE_CMP_PROC_FINFO);
		Datum		ends[2];

		ends[0] = bounds->low;
		ends[1] = bounds->high;
		if (OidIsValid(tc->lt_opr) &&
			DatumGetInt32(FunctionCall2Coll(&tc->cmp_proc_finfo, bounds->collation,
											ends[0], ends[1])) < 0)
		{
			values[Anum_pg_statistic_stakind1 - 1] = Int16GetDatum(STATISTIC_KIND_HISTOGRAM);
			values[Anum_pg_statistic_staop1 - 1] = ObjectIdGetDatum(tc->lt_opr);
			values[Anum_pg_statistic_stacoll1 - 1] = ObjectIdGetDatum(bounds->collation);
			values[Anum_pg_statistic_stavalues1 - 1] =
				PointerGetDatum(construct_array(ends, 2, typid, tc->typlen,
												tc->typbyval, tc->typalign));
			nulls[Anum_pg_statistic_stavalues1 - 1] = false;
		}
	}
	return heap_form_tuple(statistic_desc, values, nulls);
}

static bool
cj_relation_stats(PlannerInfo *root, RangeTblEntry *rte, AttrNumber attnum,
				  VariableStatData *vardata)
{
	LeafColumn	col;
	ColumnBounds bounds;
	bool		known = false;

	if (prev_relation_stats &&
		prev_relation_stats(root, rte, attnum, vardata))
		return true;
	if (rte->rtekind != RTE_RELATION || attnum <= 0 || !colojoin_enable ||
		colojoin_remote_size_lifetime <= 0 ||
		(rte->relkind != RELKIND_PARTITIONED_TABLE &&
		 rte->relkind != RELKIND_FOREIGN_TABLE) ||
		!colojoin_is_active())
		return false;
	/* its own statistics (ANALYZE) win */
	if (SearchSysCacheExists3(STATRELATTINH, ObjectIdGetDatum(rte->relid),
							  Int16GetDatum(attnum), BoolGetDatum(rte->inh)))
		return false;

	if (rte->relkind == RELKIND_PARTITIONED_TABLE)
	{
		CjTable    *t = cj_get_table(rte->relid);

		known = t != NULL && cached_table_column(t, attnum, &col, &bounds);
	}
	else if (!rte->inh)
	{
		AttrNumber	top_attno;
		CjLeaf	   *leaf = leaf_of(rte->relid, attnum, &top_attno);

		known = leaf != NULL && leaf_column(leaf, top_attno, true, &col) &&
			col.rows > 0;
		if (known)
		{
			Oid			typid;
			int32		typmod;
			Oid			collid;

			col.ndistinct = Max(col.ndistinct, 1);
			memset(&bounds, 0, sizeof(bounds));
			get_atttypetypmodcoll(rte->relid, attnum, &typid, &typmod, &collid);
			widen_bounds(&bounds, typid, collid, &col);
		}
	}
	if (!known)
		return false;
	vardata->statsTuple = stats_tuple(rte->relid, attnum, rte->inh, &col,
									  &bounds);
	vardata->freefunc = free_stats_tuple;
	return true;
}

void
cj_column_stats_init(void)
{
	prev_relation_stats = get_relation_stats_hook;
	get_relation_stats_hook = cj_relation_stats;
}
