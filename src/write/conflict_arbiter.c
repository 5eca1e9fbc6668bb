/*-------------------------------------------------------------------------
 *
 * conflict_arbiter.c
 *	  ON CONFLICT (columns) on a sharded table: the check that every
 *	  placement of every leaf has an arbiter for it (conflict_arbiter.h).
 *
 *	  PostgreSQL infers the arbiter of ON CONFLICT (columns) from the
 *	  target table's unique indexes before it writes anything, and refuses
 *	  the statement when none matches, whatever rows come.  A sharded
 *	  table's uniqueness lives in its leaves' remote tables, so colojoin
 *	  asks their nodes the same question, once per node for all the leaves
 *	  it holds, and gives PostgreSQL's error, naming the leaf and the node,
 *	  before any row is written.  What a node confirmed is remembered for
 *	  the session: an index dropped later still fails the remote statement
 *	  itself, with the same error, where rows reach it.
 *
 *	  This file does not write ON CONFLICT clauses (modify.c) nor run them
 *	  (insert_route.c, modify_exec.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "libpq-fe.h"
#include "lib/stringinfo.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "metadata/metadata.h"
#include "remote/connection.h"
#include "deparse/deparse.h"
#include "write/conflict_arbiter.h"
#include "write/modify.h"

/* a placement whose node confirmed an arbiter for one column list */
typedef struct ArbiterKey
{
	Oid			leaf;
	Oid			serverid;
	uint32		columns_hash;
} ArbiterKey;

static HTAB *confirmed = NULL;

static uint32
columns_hash(List *columns)
{
	StringInfoData buf;
	ListCell   *lc;
	uint32		h;

	initStringInfo(&buf);
	foreach(lc, columns)
		appendStringInfo(&buf, "%s%c", strVal(lfirst(lc)), '\0');
	h = hash_bytes((const unsigned char *) buf.data, buf.len);
	pfree(buf.data);
	return h;
}

static ArbiterKey
make_key(Oid leaf, Oid serverid, List *columns)
{
	ArbiterKey	key;

	memset(&key, 0, sizeof(key));
	key.leaf = leaf;
	key.serverid = serverid;
	key.columns_hash = columns_hash(columns);
	return key;
}

/* one node's leaves to ask about */
typedef struct NodeQuestion
{
	Oid			serverid;
	StringInfoData rows;		/* VALUES rows: (n, schema, table, columns) */
	List	   *leaves;			/* CjLeaf *, numbered from 0 as n */
	List	   *keys;			/* ArbiterKey * of each */
} NodeQuestion;

static NodeQuestion *
question_for(List **questions, Oid serverid)
{
	NodeQuestion *q;
	ListCell   *lc;

	foreach(lc, *questions)
	{
		q = (NodeQuestion *) lfirst(lc);
		if (q->serverid == serverid)
			return q;
	}
	q = palloc0(sizeof(NodeQuestion));
	q->serverid = serverid;
	initStringInfo(&q->rows);
	*questions = lappend(*questions, q);
	return q;
}

static void
add_question(NodeQuestion *q, CjLeaf *leaf, CjPlacement *pl, List *columns,
			 ArbiterKey *key)
{
	ListCell   *lc;

	appendStringInfo(&q->rows, "%s(%d, ", q->leaves == NIL ? "" : ", ",
					 list_length(q->leaves));
	cj_append_literal(&q->rows, pl->remote_schema);
	appendStringInfoString(&q->rows, ", ");
	cj_append_literal(&q->rows, pl->remote_table);
	appendStringInfoString(&q->rows, ", ARRAY[");
	foreach(lc, columns)
	{
		if (lc != list_head(columns))
			appendStringInfoString(&q->rows, ", ");
		cj_append_literal(&q->rows, strVal(lfirst(lc)));
	}
	appendStringInfoString(&q->rows, "]::pg_catalog.text[])");
	q->leaves = lappend(q->leaves, leaf);
	q->keys = lappend(q->keys, key);
}

/*
 * The leaves of q whose remote table has no unique index (or exclusion
 * constraint, for DO NOTHING) on exactly the columns, valid and not
 * deferred, with no expressions.  A partial index counts: whether the
 * statement's WHERE implies its predicate is the node's to judge when it
 * infers the arbiter.
 */
static void
ask_node(NodeQuestion *q, Oid userid, bool do_nothing)
{
	StringInfoData sql;
	CjConnection *conn;
	PGresult   *res;
	char	   *reason = NULL;
	int			i;

	conn = cj_try_write_connection(q->serverid, userid, &reason);
	if (conn == NULL)
		return;					/* unreachable: its placements are not written */
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT t.n FROM (VALUES %s) AS t(n, s, r, c) "
					 "WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_index i "
					 "JOIN pg_catalog.pg_class cl ON cl.oid = i.indrelid "
					 "JOIN pg_catalog.pg_namespace ns ON ns.oid = cl.relnamespace "
					 "WHERE ns.nspname = t.s AND cl.relname = t.r "
					 "AND (i.indisunique%s) AND i.indisvalid AND i.indimmediate "
					 "AND i.indexprs IS NULL "
					 "AND (SELECT pg_catalog.array_agg(a.attname::pg_catalog.text ORDER BY a.attname) "
					 "FROM pg_catalog.pg_attribute a WHERE a.attrelid = i.indrelid "
					 "AND a.attnum = ANY (i.indkey::pg_catalog.int2[])) = "
					 "(SELECT pg_catalog.array_agg(x ORDER BY x) FROM pg_catalog.unnest(t.c) x)) "
					 "ORDER BY t.n",
					 q->rows.data, do_nothing ? " OR i.indisexclusion" : "");
	res = cj_exec_query(conn, sql.data, "check of the ON CONFLICT target");
	for (i = 0; i < PQntuples(res); i++)
	{
		int			n = atoi(PQgetvalue(res, i, 0));
		CjLeaf	   *leaf = (CjLeaf *) list_nth(q->leaves, n);

		PQclear(res);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
				 errmsg("there is no unique or exclusion constraint matching the ON CONFLICT specification"),
				 errdetail("Leaf \"%s\" of the sharded table has no unique index on the conflict target's columns on node \"%s\".",
						   get_rel_name(leaf->relid), cj_node_name(q->serverid)),
				 errhint("Create the unique index on every leaf's remote table, on every node that holds it.")));
	}
	PQclear(res);
	for (i = 0; i < list_length(q->keys); i++)
		hash_search(confirmed, list_nth(q->keys, i), HASH_ENTER, NULL);
}

void
cj_check_conflict_arbiters(Oid relid, Oid userid, List *conflict)
{
	CjTable    *t;
	List	   *questions = NIL;
	ListCell   *lc;
	bool		do_nothing = true;
	int			c,
				l,
				p;

	if (conflict == NIL)
		return;
	if (confirmed == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(ArbiterKey);
		ctl.entrysize = sizeof(ArbiterKey);
		ctl.hcxt = TopMemoryContext;
		confirmed = hash_create("colojoin confirmed arbiters", 64, &ctl,
								HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	t = cj_get_table(relid);
	if (t == NULL)
		return;
	for (c = 0; c < t->nclasses; c++)
	{
		for (l = 0; l < t->classes[c].nleaves; l++)
		{
			CjLeaf	   *leaf = &t->classes[c].leaves[l];
			List	   *columns = NIL;

			foreach(lc, conflict)
			{
				List	   *item = (List *) lfirst(lc);

				if ((Oid) intVal(linitial(item)) == leaf->relid)
				{
					columns = (List *) lfourth(item);
					do_nothing = (intVal(list_nth(item, 4)) == 0);
				}
			}
			if (columns == NIL)
				continue;		/* DO NOTHING without a target: no arbiter */
			for (p = 0; p < leaf->nplacements; p++)
			{
				CjPlacement *pl = &leaf->placements[p];
				ArbiterKey *key = palloc(sizeof(ArbiterKey));

				*key = make_key(leaf->relid, pl->serverid, columns);
				if (hash_search(confirmed, key, HASH_FIND, NULL) != NULL)
					continue;
				add_question(question_for(&questions, pl->serverid), leaf, pl,
							 columns, key);
			}
		}
	}
	foreach(lc, questions)
		ask_node((NodeQuestion *) lfirst(lc), userid, do_nothing);
}
