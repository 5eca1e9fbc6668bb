/*-------------------------------------------------------------------------
 *
 * rebalance_plan.c
 *	  The rebalance planner: which partition classes to move, from where
 *	  to where, so that rows (or bytes) per node even out over a set of
 *	  servers, new empty ones included, or so that a node is drained; and
 *	  colojoin.rebalance_plan(), which shows the moves.
 *
 *	  The unit is a placement (primary or replica) of a class of a
 *	  colocation group (class_move.c's cj_tables_colocated: a table and
 *	  every table colocated with it move together), weighing the rows of
 *	  all of the group's tables in that class plus one, so that empty
 *	  classes spread too.  A drained node gives every unit away first, each
 *	  to the lightest node without a placement of that class; then, while
 *	  a unit of the heaviest node is lighter than its gap to a lighter node
 *	  without that class, the unit that lowers the sum of the squared loads
 *	  most moves, each unit at most once: the loop ends.  Sizes are the
 *	  nodes' own, read when the plan is made: rows by reltuples once the
 *	  node analyzed the table, else by its statistics' live rows (which
 *	  count inserts and deletes without waiting for ANALYZE).
 *
 *	  It plans only; rebalance_worker.c and class_move.c carry it out.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"

#include "metadata/colocation.h"
#include "metadata/metadata.h"
#include "operations/class_move.h"
#include "operations/rebalance_plan.h"
#include "remote/connection.h"
#include "util/catalog_query.h"
#include "util/extension.h"

PG_FUNCTION_INFO_V1(colojoin_rebalance_plan);

/* the most moves one plan holds: far more than classes times nodes */
#define CJ_PLAN_MAX_MOVES 100000

typedef struct PlanNode
{
	Oid			server;			/* the server moves go to */
	double		load;
	bool		drained;
} PlanNode;

typedef struct Unit
{
	int			group;
	Oid			relid;			/* the group's first table */
	int			cls;
	int			node;			/* index into the nodes */
	Oid			server;			/* the placement's server */
	double		rows;
	double		bytes;
	double		weight;
	bool		moved;			/* a class moves once per plan */
} Unit;

typedef struct TableSize
{
	char		key[NAMEDATALEN * 3];
	double		rows;
	double		bytes;
} TableSize;

typedef struct BalancePlan
{
	int			nnodes;
	PlanNode   *nodes;
	int			nunits;
	Unit	   *units;
	List	   *moves;
} BalancePlan;

/*
 * cj_server_list
 *		See rebalance_plan.h.
 */
List *
cj_server_list(Datum names)
{
	ArrayType  *arr = DatumGetArrayTypeP(names);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;
	List	   *result = NIL;

	deconstruct_array(arr, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR,
					  &elems, &nulls, &n);
	for (i = 0; i < n; i++)
	{
		ForeignServer *server;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("the servers must not include NULL")));
		server = GetForeignServerByName(NameStr(*DatumGetName(elems[i])), false);
		if (!cj_is_postgres_fdw_server(server->serverid))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("server \"%s\" is not a postgres_fdw server",
							server->servername)));
		result = lappend_oid(result, server->serverid);
	}
	return result;
}

/* the index of the node server reaches, or -1 */
static int
node_of(BalancePlan *p, Oid server)
{
	int			i;

	for (i = 0; i < p->nnodes; i++)
		if (cj_on_node(server, p->nodes[i].server))
			return i;
	return -1;
}

static void
add_node(BalancePlan *p, Oid server)
{
	if (server == CJ_LOCAL_NODE || node_of(p, server) >= 0)
		return;
	p->nodes = repalloc(p->nodes, sizeof(PlanNode) * (p->nnodes + 1));
	p->nodes[p->nnodes].server = server;
	p->nodes[p->nnodes].load = 0;
	p->nodes[p->nnodes].drained = false;
	p->nnodes++;
}

/*
 * The rows and bytes of every table on the plan's nodes, as the nodes
 * count them now (see the header), bytes by pg_table_size.  Keyed "node
 * index/schema.table".
 */
static HTAB *
node_sizes(BalancePlan *p)
{
	HASHCTL		ctl;
	HTAB	   *sizes;
	int			i;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = NAMEDATALEN * 3;
	ctl.entrysize = sizeof(TableSize);
	ctl.hcxt = CurrentMemoryContext;
	sizes = hash_create("colojoin rebalance sizes", 256, &ctl,
						HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	for (i = 0; i < p->nnodes; i++)
	{
		CjConnection *conn = cj_get_connection(p->nodes[i].server, GetUserId(), 0);
		PGresult   *res;
		int			r;

		res = cj_exec_query(conn,
							"SELECT pg_catalog.format('%I.%I', n.nspname, c.relname),"
							" CASE WHEN c.reltuples >= 0 THEN c.reltuples::pg_catalog.int8 ELSE COALESCE(s.n_live_tup, 0) END,"
							" pg_catalog.pg_table_size(c.oid)"
							" FROM pg_catalog.pg_class c"
							" JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
							" LEFT JOIN pg_catalog.pg_stat_user_tables s ON s.relid = c.oid"
							" WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema')",
							"reading table sizes for a rebalance");
		for (r = 0; r < PQntuples(res); r++)
		{
			char		key[NAMEDATALEN * 3];
			TableSize  *ts;

			snprintf(key, sizeof(key), "%d/%s", i, PQgetvalue(res, r, 0));
			ts = hash_search(sizes, key, HASH_ENTER, NULL);
			ts->rows = strtod(PQgetvalue(res, r, 1), NULL);
			ts->bytes = strtod(PQgetvalue(res, r, 2), NULL);
		}
		PQclear(res);
	}
	return sizes;
}

/* a leaf's size on the node of its first placement the plan knows */
static void
leaf_size(BalancePlan *p, HTAB *sizes, CjLeaf *leaf, double *rows, double *bytes)
{
	int			k;

	*rows = *bytes = 0;
	for (k = 0; k < leaf->nplacements; k++)
	{
		int			node = node_of(p, leaf->placements[k].serverid);
		char		key[NAMEDATALEN * 3];
		TableSize  *ts;

		if (node < 0)
			continue;
		snprintf(key, sizeof(key), "%d/%s", node,
				 quote_qualified_identifier(leaf->placements[k].remote_schema,
											leaf->placements[k].remote_table));
		ts = hash_search(sizes, key, HASH_FIND, NULL);
		if (ts != NULL)
		{
			*rows = ts->rows;
			*bytes = ts->bytes;
			return;
		}
	}
}

/* node holds a placement of unit u's class */
static bool
holds_class(BalancePlan *p, Unit *u, int node)
{
	int			i;

	for (i = 0; i < p->nunits; i++)
		if (p->units[i].group == u->group && p->units[i].cls == u->cls &&
			p->units[i].node == node)
			return true;
	return false;
}

static void
move_unit(BalancePlan *p, Unit *u, int to)
{
	CjPlannedMove *m = palloc(sizeof(CjPlannedMove));

	if (list_length(p->moves) >= CJ_PLAN_MAX_MOVES)
		elog(ERROR, "rebalance plan exceeds %d moves", CJ_PLAN_MAX_MOVES);
	m->relid = u->relid;
	m->cls = u->cls;
	m->from = u->server;
	m->to = p->nodes[to].server;
	m->rows = u->rows;
	m->bytes = u->bytes;
	p->moves = lappend(p->moves, m);
	p->nodes[u->node].load -= u->weight;
	p->nodes[to].load += u->weight;
	u->node = to;
	u->server = p->nodes[to].server;
	u->moved = true;
}

/* the lightest node that may take u, or -1 */
static int
lightest_for(BalancePlan *p, Unit *u)
{
	int			best = -1;
	int			i;

	for (i = 0; i < p->nnodes; i++)
		if (!p->nodes[i].drained && !holds_class(p, u, i) &&
			(best < 0 || p->nodes[i].load < p->nodes[best].load))
			best = i;
	return best;
}

/* the units of every colocation group's classes on the plan's nodes */
static void
collect_units(BalancePlan *p, bool by_bytes)
{
	List	   *leaders = NIL;
	ListCell   *lc;
	int			maxunits = 16;
	int			i;
	HTAB	   *sizes = node_sizes(p);

	p->units = palloc(sizeof(Unit) * maxunits);
	foreach(lc, cj_top_level_partitioned_tables())
	{
		CjTable    *t = cj_get_table(lfirst_oid(lc));
		ListCell   *ll;
		int			group = -1;
		int			g = 0;
		int			c;

		if (t == NULL || !t->all_foreign || t->nclasses == 0 ||
			cj_is_reference_table(t))
			continue;
		foreach(ll, leaders)
		{
			if (cj_tables_colocated((CjTable *) lfirst(ll), t))
			{
				group = g;
				break;
			}
			g++;
		}
		if (group < 0)
		{
			group = list_length(leaders);
			leaders = lappend(leaders, t);
		}

		for (c = 0; c < t->nclasses; c++)
		{
			CjClass    *cls = &t->classes[c];
			double		rows = 0;
			double		bytes = 0;
			int			l;
			int			k;

			if (cls->nleaves == 0)
				continue;
			for (l = 0; l < cls->nleaves; l++)
			{
				double		r,
							b;

				leaf_size(p, sizes, &cls->leaves[l], &r, &b);
				rows += r;
				bytes += b;
			}

			/* the group's unit of this class and node, or a new one */
			for (k = 0; k < cls->leaves[0].nplacements; k++)
			{
				Oid			server = cls->leaves[0].placements[k].serverid;
				int			node = node_of(p, server);
				bool		found = false;

				if (node < 0)
					continue;
				for (i = 0; i < p->nunits; i++)
				{
					Unit	   *u = &p->units[i];

					if (u->group == group && u->cls == c && u->node == node)
					{
						u->rows += rows;
						u->bytes += bytes;
						found = true;
					}
				}
				if (found)
					continue;
				if (p->nunits == maxunits)
				{
					maxunits *= 2;
					p->units = repalloc(p->units, sizeof(Unit) * maxunits);
				}
				p->units[p->nunits].group = group;
				p->units[p->nunits].relid = t->relid;
				p->units[p->nunits].cls = c;
				p->units[p->nunits].node = node;
				p->units[p->nunits].server = server;
				p->units[p->nunits].rows = rows;
				p->units[p->nunits].bytes = bytes;
				p->units[p->nunits].moved = false;
				p->nunits++;
			}
		}
	}
	for (i = 0; i < p->nunits; i++)
	{
		Unit	   *u = &p->units[i];

		u->weight = (by_bytes ? u->bytes : u->rows) + 1;
		p->nodes[u->node].load += u->weight;
	}
}

/*
 * cj_rebalance_plan
 *		See rebalance_plan.h.
 */
List *
cj_rebalance_plan(List *servers, bool by_bytes, Oid drain)
{
	BalancePlan plan;
	BalancePlan *p = &plan;
	ListCell   *lc;
	int			i;

	memset(p, 0, sizeof(BalancePlan));
	p->nodes = palloc(sizeof(PlanNode));
	foreach(lc, servers)
		add_node(p, lfirst_oid(lc));
	if (servers == NIL)
	{
		/* every server holding a placement of a sharded table */
		foreach(lc, cj_top_level_partitioned_tables())
		{
			CjTable    *t = cj_get_table(lfirst_oid(lc));
			int			c,
						k;

			if (t == NULL || !t->all_foreign || cj_is_reference_table(t))
				continue;
			for (c = 0; c < t->nclasses; c++)
				if (t->classes[c].nleaves > 0)
					for (k = 0; k < t->classes[c].leaves[0].nplacements; k++)
						add_node(p, t->classes[c].leaves[0].placements[k].serverid);
		}
	}
	if (OidIsValid(drain))
	{
		add_node(p, drain);
		p->nodes[node_of(p, drain)].drained = true;
	}
	collect_units(p, by_bytes);

	/* a drained node gives everything away, heaviest first */
	for (;;)
	{
		Unit	   *heaviest = NULL;
		int			to;

		for (i = 0; i < p->nunits; i++)
			if (p->nodes[p->units[i].node].drained &&
				(heaviest == NULL || p->units[i].weight > heaviest->weight))
				heaviest = &p->units[i];
		if (heaviest == NULL)
			break;
		to = lightest_for(p, heaviest);
		if (to < 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("class %d of %s has nowhere to go from server \"%s\"",
							heaviest->cls, get_rel_name(heaviest->relid),
							cj_node_name(heaviest->server)),
					 errdetail("Every other node of the rebalance holds a placement of it already."),
					 errhint("Give more servers, or drop a replica of the class.")));
		move_unit(p, heaviest, to);
	}

	/* then the heaviest node gives to lighter ones while that helps */
	for (;;)
	{
		int			a = -1;
		Unit	   *best = NULL;
		int			best_to = -1;
		double		best_score = 0;

		for (i = 0; i < p->nnodes; i++)
			if (!p->nodes[i].drained && (a < 0 || p->nodes[i].load > p->nodes[a].load))
				a = i;
		if (a < 0)
			break;
		for (i = 0; i < p->nunits; i++)
		{
			Unit	   *u = &p->units[i];
			int			b;

			if (u->node != a)
				continue;
			for (b = 0; b < p->nnodes; b++)
			{
				double		gap = p->nodes[a].load - p->nodes[b].load;
				double		score;

				if (b == a || p->nodes[b].drained || u->weight >= gap ||
					u->moved || holds_class(p, u, b))
					continue;
				/* how much the sum of the squared loads falls */
				score = 2 * u->weight * (gap - u->weight);
				if (score > best_score)
				{
					best_score = score;
					best = u;
					best_to = b;
				}
			}
		}
		if (best == NULL)
			break;
		move_unit(p, best, best_to);
	}
	return p->moves;
}

/*
 * colojoin_rebalance_plan
 *		colojoin.rebalance_plan(servers name[] DEFAULT NULL, by text DEFAULT
 *		'rows', drain name DEFAULT NULL) → setof (move, table_name,
 *		partition_class, from_server, to_server, rows, bytes).
 */
Datum
colojoin_rebalance_plan(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *servers = PG_ARGISNULL(0) ? NIL : cj_server_list(PG_GETARG_DATUM(0));
	char	   *by = PG_ARGISNULL(1) ? "rows" : text_to_cstring(PG_GETARG_TEXT_PP(1));
	Oid			drain = InvalidOid;
	ListCell   *lc;
	int			n = 0;

	colojoin_require_active();
	if (strcmp(by, "rows") != 0 && strcmp(by, "bytes") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot rebalance by \"%s\"", by),
				 errhint("Rebalance by 'rows' or 'bytes'.")));
	if (!PG_ARGISNULL(2))
		drain = GetForeignServerByName(NameStr(*PG_GETARG_NAME(2)), false)->serverid;

	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, cj_rebalance_plan(servers, strcmp(by, "bytes") == 0, drain))
	{
		CjPlannedMove *m = (CjPlannedMove *) lfirst(lc);
		Datum		values[7];
		bool		nulls[7] = {0};

		values[0] = Int32GetDatum(++n);
		values[1] = ObjectIdGetDatum(m->relid);
		values[2] = Int32GetDatum(m->cls);
		values[3] = DirectFunctionCall1(namein, CStringGetDatum(cj_node_name(m->from)));
		values[4] = DirectFunctionCall1(namein, CStringGetDatum(cj_node_name(m->to)));
		values[5] = Int64GetDatum((int64) m->rows);
		values[6] = Int64GetDatum((int64) m->bytes);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
