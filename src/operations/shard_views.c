/*-------------------------------------------------------------------------
 *
 * shard_views.c
 *	  The SQL functions that show shard metadata to people:
 *	  colojoin.shard_placements() (behind view colojoin.shards) and
 *	  colojoin.colocation(a, b).
 *
 *	  They only read metadata.c's cache and apply colocation.c's rules; they
 *	  never contact a node, so they describe what colojoin believes, not what
 *	  the nodes actually hold.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "metadata/colocation.h"
#include "metadata/metadata.h"
#include "metadata/node_identity.h"
#include "operations/size_cache.h"
#include "remote/connection.h"
#include "util/catalog_query.h"
#include "util/extension.h"

PG_FUNCTION_INFO_V1(colojoin_shard_placements);

PG_FUNCTION_INFO_V1(colojoin_colocation);

/* a name Datum from a C string, truncated like any name */
static Datum
name_datum(const char *s)
{
	Name		n = (Name) palloc0(NAMEDATALEN);

	namestrcpy(n, s);
	return NameGetDatum(n);
}

static bool
table_is_sharded(CjTable *t)
{
	int			c,
				l;

	for (c = 0; c < t->nclasses; c++)
		for (l = 0; l < t->classes[c].nleaves; l++)
		{
			CjLeaf	   *leaf = &t->classes[c].leaves[l];

			if (leaf->is_foreign || get_rel_relkind(leaf->relid) == RELKIND_FOREIGN_TABLE)
				return true;
		}
	return false;
}

/* "HASH ((k % 1000))", "LIST (lower(region))": the key as psql \d+ shows it */
static char *
partition_key_text(CjTable *t)
{
	return TextDatumGetCString(DirectFunctionCall1(pg_get_partkeydef,
												   ObjectIdGetDatum(t->relid)));
}

/*
 * physical_node
 *		The database server reaches ("<system identifier>/<database>"), as
 *		learned when colojoin connected to it; connects now when this
 *		backend has not yet.  NULL when the node cannot be reached: the view
 *		must work with a node down.  The connection attempt runs in a
 *		subtransaction so that its failure is only that.
 */
static Datum
physical_node(Oid serverid, bool *isnull)
{
	const char *node = cj_node_identity(serverid);

	if (node == NULL && cj_is_postgres_fdw_server(serverid))
	{
		MemoryContext oldcxt = CurrentMemoryContext;
		ResourceOwner oldowner = CurrentResourceOwner;

		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(oldcxt);
		PG_TRY();
		{
			(void) cj_get_connection(serverid, GetUserId(), 0);
			ReleaseCurrentSubTransaction();
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(oldcxt);
			FlushErrorState();
			RollbackAndReleaseCurrentSubTransaction();
		}
		PG_END_TRY();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		node = cj_node_identity(serverid);
	}
	*isnull = (node == NULL);
	return node ? CStringGetTextDatum(node) : (Datum) 0;
}

/*
 * colojoin_shard_placements
 *		One row per placement of every leaf of every sharded table: a
 *		top-level partitioned table with at least one foreign leaf.
 *
 * bound and partition_class describe the leaf's class, i.e. its top-level
 * partition, also for leaves of sub-partitioned classes: the class is what
 * colocation is about.  partition_class is the 0-based index of the class
 * in bound order (a default partition comes last).  A foreign leaf of
 * another wrapper than postgres_fdw has no placement colojoin can use; it
 * shows as one row with node and remote_relation NULL.
 */
Datum
colojoin_shard_placements(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *tables;
	ListCell   *lc;
	int			natts;

	InitMaterializedSRF(fcinfo, 0);
	/* 7 columns in version 1.0 of the SQL objects, 9 from 1.1 on */
	natts = rsinfo->setDesc->natts;

	if (!colojoin_is_active())
		PG_RETURN_VOID();

	tables = cj_top_level_partitioned_tables();
	foreach(lc, tables)
	{
		CjTable    *t = cj_get_table(lfirst_oid(lc));
		int			c,
					l,
					p;

		char	   *key_text;

		if (t == NULL || !table_is_sharded(t))
			continue;
		key_text = partition_key_text(t);

		for (c = 0; c < t->nclasses; c++)
		{
			CjClass    *cls = &t->classes[c];

			for (l = 0; l < cls->nleaves; l++)
			{
				CjLeaf	   *leaf = &cls->leaves[l];

				/* healthy placements first, then stale ones */
				for (p = 0; p < Max(leaf->nplacements + leaf->nstale, 1); p++)
				{
					Datum		values[11];
					bool		nulls[11];
					bool		is_stale = (p >= leaf->nplacements);

					memset(nulls, 0, sizeof(nulls));
					values[0] = ObjectIdGetDatum(t->relid);
					values[1] = ObjectIdGetDatum(leaf->relid);
					values[2] = CStringGetTextDatum(cj_class_bound_text(t, c));
					values[3] = Int32GetDatum(c);
					if (leaf->nplacements + leaf->nstale == 0)
					{
						nulls[4] = nulls[5] = nulls[7] = nulls[9] = true;
						values[6] = BoolGetDatum(false);
					}
					else
					{
						CjPlacement *pl = is_stale ?
						&leaf->stale[p - leaf->nplacements] : &leaf->placements[p];

						values[4] = name_datum(cj_node_name(pl->serverid));
						values[5] = CStringGetTextDatum(quote_qualified_identifier(pl->remote_schema,
																				   pl->remote_table));
						values[6] = BoolGetDatum(pl->is_replica);
						if (natts > 7 && pl->serverid != CJ_LOCAL_NODE)
							values[7] = physical_node(pl->serverid, &nulls[7]);
						else
							nulls[7] = true;
					}
					if (natts > 8)
						values[8] = CStringGetTextDatum(key_text);
					if (natts > 9 && !nulls[9])
						values[9] = CStringGetTextDatum(is_stale ? "stale" : "healthy");
					if (natts > 10)
					{
						double		tuples;
						double		pages;
						float4		reltuples = cj_rel_reltuples(leaf->relid);

						if (reltuples >= 0)
							values[10] = Float8GetDatum(reltuples);
						else if (cj_leaf_remote_size(leaf->relid, &tuples, &pages))
							values[10] = Float8GetDatum(tuples);
						else
							nulls[10] = true;
					}
					tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
										 values, nulls);
				}
			}
		}
	}
	PG_RETURN_VOID();
}


/* ----------------------------------------------------------------
 *		colojoin.colocation(a, b)
 * ----------------------------------------------------------------
 */

static void
put_row(ReturnSetInfo *rsinfo, bool colocated, const char *aspect,
		const char *detail)
{
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	values[0] = BoolGetDatum(colocated);
	values[1] = CStringGetTextDatum(aspect);
	values[2] = CStringGetTextDatum(detail);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* ERROR unless relid is a table of some kind (plain, partitioned, foreign) */
static void
check_is_table(Oid relid)
{
	char		relkind = get_rel_relkind(relid);

	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE &&
		relkind != RELKIND_FOREIGN_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", get_rel_name(relid)),
				 errdetail("colojoin.colocation compares partitioned tables.")));
}

static const char *
rel_label(Oid relid)
{
	return quote_identifier(get_rel_name(relid));
}

/* "n1", "n1 and n3", "n1, n2 and n3" */
static char *
node_list_text(List *nodes)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, nodes)
	{
		if (foreach_current_index(lc) > 0)
			appendStringInfoString(&buf,
								   foreach_current_index(lc) == list_length(nodes) - 1 ?
								   " and " : ", ");
		appendStringInfoString(&buf, cj_node_name(lfirst_oid(lc)));
	}
	return buf.data;
}

/* "a_p1_x on n1, a_p1_y on n2": where each leaf of a class is (primary) */
static char *
leaf_places_text(CjClass *cls)
{
	StringInfoData buf;
	int			l;

	initStringInfo(&buf);
	for (l = 0; l < cls->nleaves; l++)
	{
		CjLeaf	   *leaf = &cls->leaves[l];
		List	   *nodes = NIL;
		int			p;

		for (p = 0; p < leaf->nplacements; p++)
			nodes = lappend_oid(nodes, leaf->placements[p].serverid);
		appendStringInfo(&buf, "%s%s on %s", l > 0 ? ", " : "",
						 rel_label(leaf->relid), node_list_text(nodes));
	}
	return buf.data;
}

typedef struct NodeCount
{
	char	   *name;
	int			count;
} NodeCount;

static int
node_count_cmp(const ListCell *a, const ListCell *b)
{
	return strcmp(((NodeCount *) lfirst(a))->name, ((NodeCount *) lfirst(b))->name);
}

static List *
count_node(List *counts, Oid node)
{
	char	   *name = cj_node_name(node);
	ListCell   *lc;
	NodeCount  *nc;

	foreach(lc, counts)
	{
		nc = (NodeCount *) lfirst(lc);
		if (strcmp(nc->name, name) == 0)
		{
			nc->count++;
			return counts;
		}
	}
	nc = palloc(sizeof(NodeCount));
	nc->name = name;
	nc->count = 1;
	return lappend(counts, nc);
}

/*
 * Placement of a two-table class space: adds a 'foreign tables' row per
 * leaf that is not a postgres_fdw foreign table (colojoin runs joins on
 * nodes only, so a leaf on the coordinator or behind another wrapper keeps
 * its class out, as in the planner), a 'placement' row per class that no
 * node holds whole, and returns whether every class has a node.  Counts, for the summary, the first common node
 * of each class, the classes that could also run elsewhere and the classes
 * only one table has.
 */
static bool
check_placement(ReturnSetInfo *rsinfo, CjClassSpace *space, List **counts,
				int *nchoice, int *nonesided)
{
	bool		ok = true;
	int			c,
				t;

	for (c = 0; c < space->nclasses; c++)
	{
		List	   *common = NIL;
		bool		first = true;
		bool		class_ok = true;
		int			npresent = 0;
		StringInfoData places;

		initStringInfo(&places);
		for (t = 0; t < space->ntables; t++)
		{
			int			k = CJ_MEMBER(space, c, t);
			CjClass    *cls;
			int			l;

			if (k < 0)
				continue;
			cls = &space->tables[t]->classes[k];
			if (cls->nleaves == 0)
				continue;		/* a partitioned partition without leaves: empty */
			npresent++;

			for (l = 0; l < cls->nleaves; l++)
			{
				CjLeaf	   *leaf = &cls->leaves[l];

				if (leaf->is_foreign)
					continue;
				if (get_rel_relkind(leaf->relid) == RELKIND_FOREIGN_TABLE)
					put_row(rsinfo, false, "foreign tables",
							psprintf("%s is a foreign table of server %s, which does not use postgres_fdw",
									 rel_label(leaf->relid),
									 cj_node_name(GetForeignTable(leaf->relid)->serverid)));
				else
					put_row(rsinfo, false, "foreign tables",
							psprintf("%s is not a foreign table: its rows are stored on the coordinator",
									 rel_label(leaf->relid)));
				class_ok = false;
			}
			if (!class_ok)
				continue;

			if (cls->nodes == NIL)
			{
				put_row(rsinfo, false, "placement",
						psprintf("class %s: no node holds every leaf of %s (%s)",
								 cj_class_label(space, c),
								 rel_label(cls->partrelid),
								 leaf_places_text(cls)));
				class_ok = false;
				continue;
			}

			appendStringInfo(&places, "%s%s is on %s", first ? "" : ", ",
							 rel_label(cls->partrelid), node_list_text(cls->nodes));
			if (first)
				common = list_copy(cls->nodes);
			else
				common = cj_intersect_nodes(common, cls->nodes);
			first = false;
		}

		if (!class_ok)
		{
			ok = false;
			continue;
		}
		if (npresent == 0)
			continue;
		if (common == NIL)
		{
			put_row(rsinfo, false, "placement",
					psprintf("class %s: %s", cj_class_label(space, c), places.data));
			ok = false;
			continue;
		}
		*counts = count_node(*counts, linitial_oid(common));
		if (list_length(common) > 1)
			(*nchoice)++;
		if (npresent < space->ntables)
			(*nonesided)++;
	}
	return ok;
}

/*
 * report_shared_nodes
 *		One row (true, 'physical node', ...) for each pair of the two
 *		tables' servers that reach one database: colojoin treats them as one
 *		node, so their partitions are colocated although the server names
 *		differ.  Servers not connected to yet are asked now (physical_node).
 */
static void
report_shared_nodes(ReturnSetInfo *rsinfo, CjTable *ta, CjTable *tb)
{
	List	   *servers = NIL;
	CjTable    *tables[2] = {ta, tb};
	ListCell   *l1;
	int			t,
				c,
				l,
				p;

	for (t = 0; t < 2; t++)
		for (c = 0; c < tables[t]->nclasses; c++)
			for (l = 0; l < tables[t]->classes[c].nleaves; l++)
			{
				CjLeaf	   *leaf = &tables[t]->classes[c].leaves[l];

				for (p = 0; p < leaf->nplacements; p++)
					if (leaf->placements[p].serverid != CJ_LOCAL_NODE)
						servers = list_append_unique_oid(servers,
														 leaf->placements[p].serverid);
			}
	foreach(l1, servers)
	{
		bool		isnull;
		ListCell   *l2;

		(void) physical_node(lfirst_oid(l1), &isnull);
		if (isnull)
			continue;
		for_each_cell(l2, servers, lnext(servers, l1))
		{
			bool		isnull2;

			(void) physical_node(lfirst_oid(l2), &isnull2);
			if (!isnull2 && cj_node_same(lfirst_oid(l1), lfirst_oid(l2)))
				put_row(rsinfo, true, "physical node",
						psprintf("servers %s and %s reach one database (%s)",
								 cj_node_name(lfirst_oid(l1)), cj_node_name(lfirst_oid(l2)),
								 cj_node_identity(lfirst_oid(l1))));
		}
	}
}

/*
 * colojoin_colocation
 *		Whether a join of a and b on their partition keys is colocated: one
 *		row (true, 'colocated', summary) when it is, else one row per reason,
 *		with aspect 'partitioning', 'key', 'bounds', 'foreign tables' or
 *		'placement'.  Checks stop at the first aspect that fails among
 *		partitioning/key and bounds, since later ones are meaningless then;
 *		every class is checked for placement.
 */
Datum
colojoin_colocation(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			a = PG_GETARG_OID(0);
	Oid			b = PG_GETARG_OID(1);
	CjTable    *ta;
	CjTable    *tb;
	List	   *reasons = NIL;
	CjClassSpace *space;
	ListCell   *lc;
	List	   *counts = NIL;
	int			nchoice = 0;
	int			nonesided = 0;
	StringInfoData buf;

	check_is_table(a);
	check_is_table(b);
	InitMaterializedSRF(fcinfo, 0);

	ta = cj_get_table(a);
	tb = cj_get_table(b);
	if (ta == NULL)
		put_row(rsinfo, false, "partitioning",
				psprintf("%s is not a partitioned table", rel_label(a)));
	if (tb == NULL && b != a)
		put_row(rsinfo, false, "partitioning",
				psprintf("%s is not a partitioned table", rel_label(b)));
	if (ta == NULL || tb == NULL)
		PG_RETURN_VOID();

	/* a reference table joins any sharded table where it has copies */
	if (a != b && (cj_is_reference_table(ta) != cj_is_reference_table(tb)))
	{
		CjTable    *ref = cj_is_reference_table(ta) ? ta : tb;
		CjTable    *other = (ref == ta) ? tb : ta;
		CjLeaf	   *leaf = &ref->classes[0].leaves[0];
		StringInfoData nodes;
		int			c,
					p,
					missing = 0;

		initStringInfo(&nodes);
		for (p = 0; p < leaf->nplacements; p++)
			appendStringInfo(&nodes, "%s%s", p ? ", " : "", cj_node_name(leaf->placements[p].serverid));
		for (c = 0; c < other->nclasses; c++)
		{
			ListCell   *ln;
			bool		found = false;

			foreach(ln, other->classes[c].nodes)
				for (p = 0; p < leaf->nplacements; p++)
					found |= (leaf->placements[p].serverid == lfirst_oid(ln));
			if (!found)
				missing++;
		}
		put_row(rsinfo, missing == 0, "reference table",
				missing == 0 ?
				psprintf("%s is a reference table (one partition, copies on %s): every partition class of %s reads it whole on its own node",
						 rel_label(ref->relid), nodes.data, rel_label(other->relid)) :
				psprintf("%s is a reference table with copies on %s only: %d partition classes of %s are on no node that holds a copy",
						 rel_label(ref->relid), nodes.data, missing, rel_label(other->relid)));
		PG_RETURN_VOID();
	}

	if (!cj_schemes_compatible(ta, tb, &reasons))
	{
		/* cj_schemes_compatible reports a strategy mismatch first */
		foreach(lc, reasons)
			put_row(rsinfo, false,
					(foreach_current_index(lc) == 0 && ta->strategy != tb->strategy) ?
					"partitioning" : "key",
					(char *) lfirst(lc));
		PG_RETURN_VOID();
	}

	space = cj_build_class_space(list_make2(ta, tb), &reasons);
	if (space == NULL)
	{
		foreach(lc, reasons)
			put_row(rsinfo, false, "bounds", (char *) lfirst(lc));
		PG_RETURN_VOID();
	}

	if (!check_placement(rsinfo, space, &counts, &nchoice, &nonesided))
		PG_RETURN_VOID();

	initStringInfo(&buf);
	appendStringInfo(&buf, "%d partition class%s", space->nclasses,
					 space->nclasses == 1 ? "" : "es");
	if (counts != NIL)
	{
		list_sort(counts, node_count_cmp);
		appendStringInfoString(&buf, space->nclasses == 1 ?
							   "; held by one node (" : "; each held by one node (");
		foreach(lc, counts)
		{
			NodeCount  *nc = (NodeCount *) lfirst(lc);

			appendStringInfo(&buf, "%s%s %d", foreach_current_index(lc) > 0 ? ", " : "",
							 nc->name, nc->count);
		}
		appendStringInfoChar(&buf, ')');
	}
	if (nchoice > 0)
		appendStringInfo(&buf, "; %d of them also held by another node (replicas)",
						 nchoice);
	if (nonesided > 0)
		appendStringInfo(&buf, "; %d only in one table", nonesided);
	put_row(rsinfo, true, "colocated", buf.data);
	report_shared_nodes(rsinfo, ta, tb);
	PG_RETURN_VOID();
}
