/*-------------------------------------------------------------------------
 *
 * move_sql.c
 *	  The SQL of a plan's moves: for every moved table (or stage) the
 *	  temporary table each destination node gets, the COPY each source
 *	  runs to fill it (its columns, its own conditions, the class each row
 *	  is routed to, grouped first when pre_aggregate.c says so), the
 *	  ANALYZE after it, and the FROM item a task reads the moved rows by.
 *	  Which tables move, and how, is the planner's decision (planner.c,
 *	  move_choice.c, stage_move.c); the executor runs what this writes
 *	  (exec/move_streams.c).  The tasks' own SELECTs are remote_sql.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "catalog/pg_collation.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "metadata/node_identity.h"
#include "operations/size_cache.h"
#include "plan/planner_internal.h"
#include "plan/scan_plan.h"
#include "remote/row_decode.h"
#include "util/settings.h"

/* the type a hash support function takes its value as */
static Oid
hash_arg_type(Oid fn)
{
	Oid		   *argtypes;
	int			nargs;

	(void) get_func_signature(fn, &argtypes, &nargs);
	return argtypes[0];
}

/* the live leaves of a moved table whose partitions refine class c */
List *
cj_refining_leaves(CjJoinGroup *g, CjBaseRel *br, int c)
{
	List	   *leaves = NIL;
	int			r = cj_class_remainder(g, c);
	int			k,
				l;

	for (k = 0; k < br->table->nclasses; k++)
	{
		CjClass    *cls = &br->table->classes[k];

		if (!br->class_live[k] || cls->bound->remainder % br->move_modulus != r)
			continue;
		for (l = 0; l < cls->nleaves; l++)
			if (br->leaf_live[k][l])
				leaves = lappend(leaves, &cls->leaves[l]);
	}
	return leaves;
}

static bool
leaf_on_node(CjLeaf *leaf, Oid serverid)
{
	int			i;

	for (i = 0; i < leaf->nplacements; i++)
		if (cj_node_same(leaf->placements[i].serverid, serverid))
			return true;
	return false;
}

bool
cj_leaves_on_node(List *leaves, Oid serverid)
{
	ListCell   *lc;

	foreach(lc, leaves)
		if (!leaf_on_node(lfirst(lc), serverid))
			return false;
	return true;
}

/* "colojoin_move_3_2" or, per class, "colojoin_move_3_2_c5", quoted */
static char *
move_table_name(CjBaseRel *br, int cls)
{
	return psprintf("pg_temp.%s",
					cj_quote_ident(cls < 0 ? br->move_name :
								   psprintf("%s_c%d", br->move_name, cls)));
}

/*
 * moved_columns
 *		The moved columns, comma separated: qualified, the table's columns
 *		as a source reads them; unqualified, every column of the moved rows
 *		(pre-aggregated ones too), as the temporary table names them.
 */
static char *
moved_columns(CjBaseRel *br, const char *qualifier)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, br->stage_vars)
		appendStringInfo(&buf, "%s%s%s", buf.len ? ", " : "",
						 qualifier ? qualifier : "",
						 cj_stage_column_name(lfirst(lc)));
	foreach(lc, br->move_attnos)
		appendStringInfo(&buf, "%s%s%s", buf.len ? ", " : "",
						 qualifier ? qualifier : "",
						 cj_quote_ident(get_attname(br->relid, lfirst_int(lc), false)));
	if (qualifier == NULL)
		foreach(lc, br->preagg)
			appendStringInfo(&buf, "%s%s", buf.len ? ", " : "",
							 ((CjPreAgg *) lfirst(lc))->column);
	/* empty when the query needs no column: moved rows are then only counted */
	return buf.data;
}

/* whether the moved rows have a column at all */
static bool
moves_columns(CjBaseRel *br)
{
	return br->move_attnos != NIL || br->preagg != NIL || br->stage_vars != NIL;
}

/*
 * move_in_binary
 *		Whether a move of leaves of br can use binary COPY: every moved
 *		column of a type whose binary form means the same on every node
 *		(row_decode.c's list), and of that very type in every leaf's remote
 *		table, as its node told the size cache (a foreign table may declare
 *		another type than the remote column's, which text converts and
 *		binary would misread).  The coordinator's own rows go as text.
 *		Binary spares the destination parsing numbers and dates, most of
 *		what a move costs it.
 */
static bool stage_in_binary(CjBaseRel *sb);

static bool
move_in_binary(CjBaseRel *br, List *leaves)
{
	ListCell   *lc;
	ListCell   *ll;
	Bitmapset  *agg_attnos = NULL;
	int			a = -1;

	if (colojoin_binary_moves && br->stage != NULL)
		return stage_in_binary(br);
	if (!colojoin_binary_moves || br->table == NULL)
		return false;
	foreach(lc, br->move_attnos)
	{
		AttrNumber	attno = lfirst_int(lc);

		if (!cj_type_travels_binary(get_atttype(br->relid, attno)))
			return false;
		foreach(ll, leaves)
			if (!cj_remote_type_declared(br, lfirst(ll), attno))
				return false;
	}

	/*
	 * A pre-aggregated column is cast to its type on the node; the columns
	 * its aggregate reads must be what they are declared, as above.
	 */
	foreach(lc, br->preagg)
	{
		Aggref	   *agg = ((CjPreAgg *) lfirst(lc))->agg;

		if (!cj_type_travels_binary(agg->aggtype))
			return false;
		pull_varattnos((Node *) agg, br->rtindex, &agg_attnos);
	}
	while ((a = bms_next_member(agg_attnos, a)) >= 0)
	{
		AttrNumber	attno = a + FirstLowInvalidHeapAttributeNumber;

		foreach(ll, leaves)
			if (attno <= 0 || !cj_remote_type_declared(br, lfirst(ll), attno))
				return false;
	}
	return true;
}

/*
 * cj_append_moved_from
 *		The FROM item of a moved table in one task: the temporary table its
 *		rows were moved into on this node (only this class's rows when they
 *		were routed), or its own partitions when they already sit here;
 *		unaliased.
 */
void
cj_append_moved_from(StringInfo buf, CjBaseRel *br, CjSqlContext *sc)
{
	switch (br->move)
	{
		case CJ_MOVE_PARTITIONS:
			{
				List	   *leaves = cj_refining_leaves(sc->g, br, sc->cls);
				ListCell   *lc;

				if (leaves == NIL)
					cj_append_empty_relation(buf, br);
				else if (!cj_leaves_on_node(leaves, sc->serverid))
					appendStringInfoString(buf, move_table_name(br, sc->cls));
				else
				{
					appendStringInfoChar(buf, '(');
					foreach(lc, leaves)
					{
						if (lc != list_head(leaves))
							appendStringInfoString(buf, " UNION ALL ");
						cj_append_leaf_select(buf, br, lfirst(lc),
										   cj_placement_on(lfirst(lc), sc->serverid));
					}
					appendStringInfoChar(buf, ')');
				}
				break;
			}
		case CJ_MOVE_REPARTITION:
			if (sc->classes != NIL)
			{
				ListCell   *lc;

				appendStringInfo(buf, "(SELECT %s FROM %s WHERE colojoin_class = ANY ('{",
								 moved_columns(br, NULL), move_table_name(br, -1));
				foreach(lc, sc->classes)
					appendStringInfo(buf, "%s%d", lc == list_head(sc->classes) ? "" : ",",
									 cj_class_remainder(sc->g, lfirst_int(lc)));
				appendStringInfoString(buf, "}'::pg_catalog.int4[]))");
			}
			else
				appendStringInfo(buf, "(SELECT %s FROM %s WHERE colojoin_class = %d)",
								 moved_columns(br, NULL), move_table_name(br, -1),
								 cj_class_remainder(sc->g, sc->cls));
			break;
		case CJ_MOVE_BROADCAST:
			appendStringInfoString(buf, move_table_name(br, -1));
			break;
	}
}

/*
 * hash_class_sql
 *		The class of the value keysql (br's move_key, as the source names
 *		it) under the anchor's hash partitioning: the remainder of a
 *		one-column hash partition key, that is the support function h with
 *		the partitioning seed, plus the constant C that hash_combine64 adds
 *		to an initial 0, as unsigned 64-bit integers (wrapping), modulo the
 *		modulus m.  In int8 arithmetic (numeric cost five times as much per
 *		row): h % m, made non-negative, plus C % m, less 2^64 % m when h + C
 *		wrapped (h < 0 and h >= -C) and plus it when h < 0 alone (h read as
 *		unsigned is h + 2^64): a wrap cancels the unsigned reading, so only
 *		h < -C adds 2^64 % m.
 */
static char *
hash_class_sql(CjBaseRel *br, const char *keysql)
{
	uint64		m = (uint64) br->move_modulus;
	char	   *hash = psprintf("pg_catalog.%s((%s)::%s, 8816678312871386365::pg_catalog.int8)",
								cj_quote_ident(get_func_name(br->move_hashfn)),
								keysql,
								cj_type_name(hash_arg_type(br->move_hashfn), -1));

	return psprintf("(((%s %% " INT64_FORMAT "::pg_catalog.int8) + CASE WHEN %s < -5305509591434766563::pg_catalog.int8"
					" THEN " INT64_FORMAT "::pg_catalog.int8 ELSE " INT64_FORMAT "::pg_catalog.int8 END + "
					INT64_FORMAT "::pg_catalog.int8) %% " INT64_FORMAT "::pg_catalog.int8)::pg_catalog.int4",
					hash, (int64) m, hash,
					(int64) ((PG_UINT64_MAX % m + 1) % m + m), (int64) m,
					(int64) (UINT64CONST(5305509591434766563) % m), (int64) m);
}

/*
 * stage_in_binary
 *		Whether a stage's rows can travel in binary: every column of a type
 *		whose binary form means the same on every node, read from a table
 *		whose every live leaf has that very type on its node (its tasks
 *		send the node's own values, which text would convert).
 */
static bool
stage_in_binary(CjBaseRel *sb)
{
	ListCell   *lc;

	foreach(lc, sb->stage_vars)
	{
		Var		   *v = lfirst(lc);
		ListCell   *lr;
		bool		found = false;

		if (!cj_type_travels_binary(v->vartype))
			return false;
		foreach(lr, sb->stage->rels)
		{
			CjBaseRel  *br = lfirst(lr);
			int			k,
						l;

			if (br->rtindex != v->varno)
				continue;
			/* a table the stage's group moved: its temporary table's type */
			if (br->move != CJ_MOVE_NONE && br->stage == NULL)
			{
				found = true;
				continue;
			}
			if (br->table == NULL)
				continue;
			found = true;
			for (k = 0; k < br->table->nclasses; k++)
				for (l = 0; l < br->table->classes[k].nleaves; l++)
					if (br->leaf_live[k][l] &&
						!cj_remote_type_declared(br, &br->table->classes[k].leaves[l],
											  v->varattno))
						return false;
		}
		if (!found)
			return false;
	}
	/* partial aggregates are cast to their type on the node */
	foreach(lc, sb->preagg)
		if (!cj_type_travels_binary(((CjPreAgg *) lfirst(lc))->agg->aggtype))
			return false;
	return true;
}

/*
 * source_copy_sql
 *		COPY (...) TO STDOUT reading the moved columns of leaves on one node,
 *		filtered by the table's own conditions; for repartitioning also the
 *		class each row hashes to under the anchor's partition function (the
 *		remainder of PostgreSQL's hash partitioning, computed on the node),
 *		keeping only rows of the given classes.
 */
static char *
source_copy_sql(CjBaseRel *br, List *leaves, Oid serverid, List *remainders,
				bool binary, CjSqlContext *sc)
{
	StringInfoData buf;
	StringInfoData sel;
	ListCell   *lc;
	char	   *alias = psprintf("r%u.", br->rtindex);

	initStringInfo(&sel);
	appendStringInfo(&sel, "SELECT %s", moved_columns(br, alias));
	foreach(lc, br->preagg)
	{
		CjPreAgg   *pa = lfirst(lc);

		/* the type the temporary column has, whatever the node's columns are */
		appendStringInfoString(&sel, foreach_current_index(lc) > 0 ||
							   br->move_attnos != NIL ? ", (" : " (");
		cj_deparse_expr(&sel, (Expr *) pa->agg, &sc->dctx);
		appendStringInfo(&sel, ")::%s AS %s", cj_type_name(pa->agg->aggtype, -1),
						 pa->column);
	}
	if (br->move == CJ_MOVE_REPARTITION && sc->g->space->ntables == 0)
	{
		/*
		 * A class of a space of hash classes alone (dual repartition) needs
		 * no partitioning's arithmetic, only the same on every node: int8's
		 * modulo, made non-negative, is cheaper than numeric's.
		 */
		appendStringInfo(&sel,
						 "%s %s((pg_catalog.%s((%s)::%s, 0::pg_catalog.int8) %% %d::pg_catalog.int8"
						 " + %d::pg_catalog.int8) %% %d::pg_catalog.int8)::pg_catalog.int4%s AS colojoin_class",
						 moves_columns(br) ? "," : "",
						 br->move_keep_nulls ? "COALESCE(" : "",
						 cj_quote_ident(get_func_name(br->move_hashfn)),
						 cj_quals_text(list_make1(br->move_key), sc),
						 cj_type_name(hash_arg_type(br->move_hashfn), -1),
						 br->move_modulus, br->move_modulus, br->move_modulus,
						 br->move_keep_nulls ? ", 0)" : "");
	}
	else if (br->move == CJ_MOVE_REPARTITION)
	{
		if (moves_columns(br))
			appendStringInfoString(&sel, ",");
		appendStringInfo(&sel, " %s AS colojoin_class",
						 hash_class_sql(br, cj_quals_text(list_make1(br->move_key), sc)));
	}
	appendStringInfoString(&sel, " FROM (");
	foreach(lc, leaves)
	{
		if (lc != list_head(leaves))
			appendStringInfoString(&sel, " UNION ALL ");
		cj_append_leaf_select(&sel, br, lfirst(lc), cj_placement_on(lfirst(lc), serverid));
	}
	appendStringInfo(&sel, ") r%u", br->rtindex);
	if (br->remote_quals ||
		(br->move == CJ_MOVE_REPARTITION && !br->move_keep_nulls))
	{
		List	   *conds = NIL;

		if (br->remote_quals)
			conds = lappend(conds, cj_quals_text(br->remote_quals, sc));

		/*
		 * A NULL key equals nothing: only the rows of a side the join keeps
		 * (dual repartition) travel without one, to class 0.
		 */
		if (br->move == CJ_MOVE_REPARTITION && !br->move_keep_nulls)
			conds = lappend(conds,
							psprintf("((%s) IS NOT NULL)",
									 cj_quals_text(list_make1(br->move_key), sc)));
		appendStringInfoString(&sel, " WHERE ");
		cj_append_string_list(&sel, conds, " AND ", "true");
	}
	if (br->preagg != NIL)
	{
		int			i;

		/* by position: the grouped columns lead the select list */
		appendStringInfoString(&sel, " GROUP BY ");
		for (i = 1; i <= list_length(br->move_attnos); i++)
			appendStringInfo(&sel, "%s%d", i > 1 ? ", " : "", i);
	}

	/*
	 * A repartitioning source sends every class some task reads, to all
	 * destinations at once (the coordinator routes each row by its class):
	 * one scan of the node's leaves, not one per destination.
	 */
	initStringInfo(&buf);
	if (br->move == CJ_MOVE_REPARTITION && list_length(remainders) < br->move_modulus)
	{
		appendStringInfo(&buf, "COPY (SELECT * FROM (%s) s WHERE colojoin_class = ANY ('{", sel.data);
		foreach(lc, remainders)
			appendStringInfo(&buf, "%s%d", lc == list_head(remainders) ? "" : ",", lfirst_int(lc));
		appendStringInfoString(&buf, "}'::pg_catalog.int4[])) TO STDOUT");
	}
	else
		appendStringInfo(&buf, "COPY (%s) TO STDOUT", sel.data);
	if (binary)
		appendStringInfoString(&buf, " (FORMAT binary)");
	return buf.data;
}

/*
 * make_move
 *		One move: a temporary table on dest for the moved table (one class of
 *		it when cls >= 0), filled by one COPY stream per node that holds some
 *		of leaves (a leaf already on dest is read there, through a second
 *		connection).
 */
/*
 * local_select_sql
 *		The query the coordinator runs to read the rows of a table it
 *		broadcasts (a table that is not sharded): the moved columns, its own
 *		conditions, ONLY when the query reads it without its children.
 */
static char *
local_select_sql(CjBaseRel *br, CjSqlContext *sc)
{
	StringInfoData buf;
	char	   *cols = moved_columns(br, psprintf("r%u.", br->rtindex));

	initStringInfo(&buf);
	appendStringInfo(&buf, "SELECT %s FROM %s%s r%u", cols,
					 br->local_inh ? "" : "ONLY ",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(br->relid)),
												get_rel_name(br->relid)),
					 br->rtindex);
	if (br->remote_quals)
		appendStringInfo(&buf, " WHERE %s", cj_quals_text(br->remote_quals, sc));
	return buf.data;
}

/* COLLATE of a moved column whose collation is not the default */
static void
append_collation(StringInfo buf, Oid collid)
{
	HeapTuple	tup;

	if (!OidIsValid(collid) || collid == DEFAULT_COLLATION_OID)
		return;
	tup = SearchSysCache1(COLLOID, ObjectIdGetDatum(collid));
	if (HeapTupleIsValid(tup))
	{
		Form_pg_collation coll = (Form_pg_collation) GETSTRUCT(tup);

		appendStringInfo(buf, " COLLATE %s.%s",
						 cj_quote_ident(get_namespace_name(coll->collnamespace)),
						 cj_quote_ident(NameStr(coll->collname)));
		ReleaseSysCache(tup);
	}
}

/*
 * analyze_sql
 *		The ANALYZE of a filled temporary table: the columns g's joins
 *		compare, whose statistics the node's plan of the tasks needs (how
 *		many rows match); the others (measures summed, values carried) only
 *		cost time: analyzing an 18,000-row stage table's one key column took
 *		7 ms, all six of its columns 29-38 ms.  Every column when the joins
 *		compare none of them.
 */
static char *
analyze_sql(CjBaseRel *br, CjJoinGroup *g, const char *name)
{
	List	   *quals = cj_tree_quals(g->tree);
	List	   *cols = NIL;
	StringInfoData buf;
	ListCell   *lc;

	foreach(lc, pull_var_clause((Node *) quals, PVC_RECURSE_PLACEHOLDERS))
	{
		Var		   *v = lfirst(lc);
		char	   *col = NULL;

		if (v->varlevelsup != 0 || v->varattno <= 0 || !cj_rel_has_varno(br, v->varno))
			continue;
		if (CJ_CARRIES_VARS(br))
		{
			ListCell   *ls;

			foreach(ls, br->stage_vars)
			{
				Var		   *sv = lfirst(ls);

				if (sv->varno == v->varno && sv->varattno == v->varattno)
					col = cj_stage_column_name(v);
			}
		}
		else if (list_member_int(br->move_attnos, v->varattno) && br->relid != InvalidOid)
			col = (char *) cj_quote_ident(get_attname(br->relid, v->varattno, false));
		if (col == NULL)
			return psprintf("ANALYZE %s", name);
		if (!list_member(cols, makeString(col)))
			cols = lappend(cols, makeString(col));
	}
	if (cols == NIL)
		return psprintf("ANALYZE %s", name);
	initStringInfo(&buf);
	appendStringInfo(&buf, "ANALYZE %s (", name);
	foreach(lc, cols)
		appendStringInfo(&buf, "%s%s", lc == list_head(cols) ? "" : ", ",
						 strVal(lfirst(lc)));
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

static List *
make_move(CjBaseRel *br, Oid dest, int cls, List *leaves, List *remainders,
		  List *all_remainders, bool binary, CjSqlContext *sc)
{
	char	   *name = move_table_name(br, cls);
	StringInfoData create;
	List	   *servers = NIL;
	List	   *sources = NIL;
	ListCell   *lc;

	initStringInfo(&create);
	appendStringInfo(&create, "CREATE TEMP TABLE %s (", name);
	foreach(lc, br->stage_vars)
	{
		Var		   *v = lfirst(lc);

		appendStringInfo(&create, "%s%s %s", lc == list_head(br->stage_vars) ? "" : ", ",
						 cj_stage_column_name(v), cj_type_name(v->vartype, v->vartypmod));
		append_collation(&create, v->varcollid);
	}
	foreach(lc, br->move_attnos)
	{
		Oid			typid;
		int32		typmod;
		Oid			collid;

		get_atttypetypmodcoll(br->relid, lfirst_int(lc), &typid, &typmod, &collid);
		appendStringInfo(&create, "%s%s %s", lc == list_head(br->move_attnos) ? "" : ", ",
						 cj_quote_ident(get_attname(br->relid, lfirst_int(lc), false)),
						 cj_type_name(typid, typmod));
		append_collation(&create, collid);
	}
	foreach(lc, br->preagg)
	{
		CjPreAgg   *pa = lfirst(lc);

		appendStringInfo(&create, "%s%s %s", create.data[create.len - 1] == '(' ? "" : ", ",
						 pa->column, cj_type_name(pa->agg->aggtype, -1));
	}
	if (br->move == CJ_MOVE_REPARTITION)
		appendStringInfo(&create, "%scolojoin_class pg_catalog.int4",
						 moves_columns(br) ? ", " : "");

	/*
	 * Dropped by the scan when it ends; ON COMMIT DROP covers a statement
	 * that failed inside a subtransaction, whose remote transaction goes on.
	 */
	appendStringInfoString(&create, ") ON COMMIT DROP");

	/*
	 * Rows the coordinator computes: those of the scan's child plan
	 * coord_child; a table that is not sharded: read here, by the
	 * coordinator.
	 */
	if (br->coord_path != NULL)
		sources = list_make1(list_make2(makeInteger((int) InvalidOid),
										makeInteger(br->coord_child)));
	else if (br->table == NULL && br->stage == NULL)
		sources = list_make1(list_make2(makeInteger((int) InvalidOid),
										makeString(local_select_sql(br, sc))));

	/* a stage: its tasks on each of its nodes, routed by its key column */
	if (br->stage != NULL)
	{
		char	   *class_sql = hash_class_sql(br, cj_stage_column_name((Var *) br->move_key));

		bool		reads_moves = cj_moved_tables(br->stage) != NIL;

		foreach(lc, cj_stage_source_nodes(br))
			sources = lappend(sources,
							  list_make3(makeInteger((int) lfirst_oid(lc)),
										 makeString(cj_stage_source_sql(br, lfirst_oid(lc), class_sql,
																		list_length(all_remainders) < br->move_modulus ?
																		all_remainders : NIL,
																		binary)),
										 makeInteger(reads_moves ? 1 : 0)));
	}

	/* read each leaf where it is: on dest when it is there, else its primary */
	foreach(lc, leaves)
	{
		CjLeaf	   *leaf = lfirst(lc);
		Oid			src = leaf_on_node(leaf, dest) ? dest : leaf->placements[0].serverid;

		if (!list_member_oid(servers, src))
			servers = lappend_oid(servers, src);
	}
	foreach(lc, servers)
	{
		Oid			src = lfirst_oid(lc);
		List	   *here = NIL;
		ListCell   *ll;

		foreach(ll, leaves)
		{
			CjLeaf	   *leaf = lfirst(ll);

			if ((leaf_on_node(leaf, dest) ? dest : leaf->placements[0].serverid) == src)
				here = lappend(here, leaf);
		}
		sources = lappend(sources,
						  list_make2(makeInteger((int) src),
									 makeString(source_copy_sql(br, here, src,
																all_remainders, binary,
																sc))));
	}

	{
		List	   *move = NIL;

		move = lappend(move, makeInteger((int) dest));
		move = lappend(move, makeString(create.data));
		/* a table of no columns reads one empty line per row */
		move = lappend(move, makeString(!moves_columns(br) && br->move != CJ_MOVE_REPARTITION ?
										psprintf("COPY %s FROM STDIN%s", name,
												 binary ? " (FORMAT binary)" : "") :
										psprintf("COPY %s (%s%s%s) FROM STDIN%s", name,
												 moved_columns(br, NULL),
												 moves_columns(br) &&
												 br->move == CJ_MOVE_REPARTITION ? ", " : "",
												 br->move == CJ_MOVE_REPARTITION ?
												 "colojoin_class" : "",
												 binary ? " (FORMAT binary)" : "")));
		move = lappend(move, makeString(psprintf("DROP TABLE IF EXISTS %s", name)));
		move = lappend(move, sources);
		move = lappend(move, makeString(cls >= 0 ?
										psprintf("%s (class %s) to %s", br->alias,
												 cj_class_label(sc->g->space, cls),
												 cj_node_name(dest)) :
										psprintf("%s to %s", br->alias, cj_node_name(dest))));
		move = lappend(move, makeString(analyze_sql(br, sc->g, name)));
		move = lappend(move, makeInteger(binary ? 1 : 0));
		{
			List	   *classes = NIL;

			foreach(lc, remainders)
				classes = lappend(classes, makeInteger(lfirst_int(lc)));
			move = lappend(move, classes);
		}
		move = lappend(move, makeInteger(0));
		return move;
	}
}

/* a column of a table a subquery of the group reads, moved for it */
static const char *
subquery_table_var_name(Var *var, void *arg)
{
	CjBaseRel  *br = (CjBaseRel *) arg;

	if (var->varno != br->rtindex || var->varattno <= 0 || var->varlevelsup != 0)
		return NULL;
	return psprintf("r%u.%s", br->rtindex,
					cj_quote_ident(get_attname(br->relid, var->varattno, false)));
}

/* the moves of one moved table br of g, appended to *moves */
static void
table_moves(PlannerInfo *root, CjJoinGroup *g, CjBaseRel *br,
			CjSqlContext *sc, List **moves, double *rows_moved)
{
	double		relrows;
	bool		binary;
	List	   *all_leaves = NIL;
	List	   *nodes = NIL;
	ListCell   *lc;
	int			k,
				l;

	relrows = cj_moved_table_rows(root, br);
	for (k = 0; br->table != NULL && k < br->table->nclasses; k++)
		for (l = 0; l < br->table->classes[k].nleaves; l++)
			if (br->leaf_live[k][l])
				all_leaves = lappend(all_leaves, &br->table->classes[k].leaves[l]);
	/* one format for all of the table's moves, decided once */
	binary = move_in_binary(br, all_leaves);
	foreach(lc, g->tasks)
		if (!list_member_oid(nodes, ((CjTask *) lfirst(lc))->serverid))
			nodes = lappend_oid(nodes, ((CjTask *) lfirst(lc))->serverid);

	if (br->move == CJ_MOVE_PARTITIONS)
	{
		foreach(lc, g->tasks)
		{
			CjTask	   *task = lfirst(lc);
			List	   *leaves = cj_refining_leaves(g, br, task->cls);

			if (leaves == NIL || cj_leaves_on_node(leaves, task->serverid))
				continue;
			*moves = lappend(*moves, make_move(br, task->serverid, task->cls,
											   leaves, NIL, NIL, binary, sc));
			*rows_moved += relrows * list_length(leaves) /
				Max(list_length(all_leaves), 1);
		}
	}
	else
	{
		List	   *all_remainders = NIL;

		if (br->move == CJ_MOVE_REPARTITION)
			foreach(lc, g->tasks)
				all_remainders = list_append_unique_int(all_remainders,
														cj_class_remainder(g, ((CjTask *) lfirst(lc))->cls));
		foreach(lc, nodes)
		{
			Oid			node = lfirst_oid(lc);
			List	   *remainders = NIL;
			ListCell   *lt;

			foreach(lt, g->tasks)
				if (br->move == CJ_MOVE_REPARTITION &&
					((CjTask *) lfirst(lt))->serverid == node)
					remainders = lappend_int(remainders,
											 cj_class_remainder(g, ((CjTask *) lfirst(lt))->cls));
			*moves = lappend(*moves, make_move(br, node, -1, all_leaves,
											   remainders, all_remainders, binary,
											   sc));
			if (br->move == CJ_MOVE_BROADCAST)
				*rows_moved += relrows;
		}
		if (br->move == CJ_MOVE_REPARTITION)
			*rows_moved += relrows;
	}
}

/*
 * cj_build_moves
 *		Every move the plan makes before its tasks, and an estimate of the
 *		rows they carry.  A stage whose group moves rows itself needs those
 *		moves made first, on its source nodes: they follow, one level down
 *		(CJ_MOVE_LEVEL), and so on for a stage within that group.
 */
List *
cj_build_moves(PlannerInfo *root, CjJoinGroup *g, CjSqlContext *sc,
			double *rows_moved)
{
	List	   *moves = NIL;
	ListCell   *lr;
	int		   *hidden = sc->hidden;
	CjVarNameFunc saved_name = sc->dctx.var_name;
	void	   *saved_arg = sc->dctx.var_arg;

	/* a move reads its table on its own, where every column is in reach */
	sc->hidden = NULL;
	*rows_moved = 0;
	foreach(lr, cj_moved_tables(g))
	{
		CjBaseRel  *br = lfirst(lr);

		/* a subquery's table is named apart from the group's */
		if (br->in_subquery)
		{
			sc->dctx.var_name = subquery_table_var_name;
			sc->dctx.var_arg = br;
		}
		table_moves(root, g, br, sc, &moves, rows_moved);
		sc->dctx.var_name = saved_name;
		sc->dctx.var_arg = saved_arg;
	}
	sc->hidden = hidden;

	foreach(lr, cj_moved_tables(g))
	{
		CjBaseRel  *br = lfirst(lr);
		CjSqlContext ssc;
		double		stage_moved;
		ListCell   *lm;

		if (br->stage == NULL || cj_moved_tables(br->stage) == NIL)
			continue;
		cj_sql_context_init(&ssc, br->stage);
		foreach(lm, cj_build_moves(root, br->stage, &ssc, &stage_moved))
		{
			List	   *m = lfirst(lm);
			ListCell   *level = list_nth_cell(m, CJ_MOVE_LEVEL);

			lfirst(level) = makeInteger(intVal(lfirst(level)) + 1);
			moves = lappend(moves, m);
		}
		*rows_moved += stage_moved;
	}
	return moves;
}
