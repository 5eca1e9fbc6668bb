/*-------------------------------------------------------------------------
 *
 * remote_sql.c
 *	  The SQL a colocated plan sends to the nodes: for every task, the
 *	  SELECT of one partition class (each table's leaves as they are named
 *	  on the node, UNION ALL of sub-partitions, an empty relation for a
 *	  missing partition, the temporary table of a moved table; the join
 *	  tree with its remote conditions; grouping, ordering and limits pushed
 *	  down), and for every move the COPY statements that fill its temporary
 *	  tables.  Which tasks and moves there are is planner.c's decision.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/hash.h"
#include "access/sysattr.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "metadata/node_identity.h"
#include "operations/size_cache.h"
#include "plan/planner_internal.h"
#include "remote/row_decode.h"
#include "util/settings.h"

static char *whole_row(CjBaseRel *br);

static int
base_index_for_varno(CjJoinGroup *g, Index varno)
{
	ListCell   *lc;

	foreach(lc, g->rels)
	{
		if (cj_rel_has_varno((CjBaseRel *) lfirst(lc), varno))
			return foreach_current_index(lc);
	}
	return -1;
}

/*
 * name_var
 *		A column as the remote SQL names it where it is being written.  A
 *		table inside EXISTS or NOT EXISTS is out of reach outside it: an
 *		anti join's inner rows never join, so its columns are NULL there,
 *		which PostgreSQL's own anti join gives too; columns of a semi join's
 *		inner side are never asked for there (check_target refuses such a
 *		group).
 */
static const char *
name_var(Var *var, void *arg)
{
	CjSqlContext *sc = (CjSqlContext *) arg;
	int			i = base_index_for_varno(sc->g, var->varno);
	CjBaseRel  *br;

	if (i < 0 && var->varattno > 0 && var->varlevelsup == 0)
		return cj_lateral_var_name(sc->g->tree, var);
	if (i < 0 || var->varattno < 0 || var->varlevelsup != 0)
		return NULL;
	br = list_nth(sc->g->rels, i);
	if (sc->hidden != NULL && sc->hidden[i] > 0)
	{
		if (sc->hidden_by_anti[i] == 0)
			elog(ERROR, "colojoin: a column of %s is needed outside the semi join that reads it",
				 br->alias);
		return psprintf("NULL::%s", cj_type_name(var->vartype, var->vartypmod));
	}
	if (br->stage != NULL)
		return var->varattno > 0 ? cj_stage_var_name(br, var) : NULL;
	if (var->varattno == 0)
		return whole_row(br);
	return psprintf("r%u.%s", br->rtindex,
					cj_quote_ident(get_attname(br->relid, var->varattno, false)));
}

/*
 * whole_row
 *		A whole-row value of br as the node computes it: a row of its
 *		columns in the coordinator's order (its text form is what the
 *		table's row type reads back), NULL when the join null-extends it.
 *		The node's own whole-row value is NULL exactly then (a row of NULL
 *		columns is a value whose text is not NULL), but its columns follow
 *		the remote table's order, hence ROW().  PostgreSQL asks for it
 *		only where colojoin plans a single table's scan after a write
 *		(read_after_write.c); the planner keeps it out of joins.
 */
static char *
whole_row(CjBaseRel *br)
{
	Relation	rel = RelationIdGetRelation(br->relid);
	TupleDesc	desc = RelationGetDescr(rel);
	StringInfoData buf;
	int			a;
	bool		first = true;

	initStringInfo(&buf);
	appendStringInfo(&buf, "CASE WHEN (r%u)::pg_catalog.text IS NULL THEN NULL ELSE ROW(",
					 br->rtindex);
	for (a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);

		if (att->attisdropped)
			continue;
		appendStringInfo(&buf, "%sr%u.%s", first ? "" : ", ", br->rtindex,
						 cj_quote_ident(NameStr(att->attname)));
		first = false;
	}
	appendStringInfoString(&buf, ") END");
	RelationClose(rel);
	return buf.data;
}

/* add delta to the hiding counts of every table below t (see name_var) */
static void
hide_tables(CjSqlContext *sc, CjJoinTree *t, int delta, bool anti)
{
	if (t->lateral)
		return;
	if (t->is_base)
	{
		sc->hidden[t->base] += delta;
		if (anti)
			sc->hidden_by_anti[t->base] += delta;
		return;
	}
	hide_tables(sc, t->outer, delta, anti);
	hide_tables(sc, t->inner, delta, anti);
}

/* every table inside the inner side of a semi or anti join starts hidden */
static void
hide_inner_sides(CjSqlContext *sc, CjJoinTree *t)
{
	if (t->is_base || t->lateral)
		return;
	if (t->jointype == JOIN_SEMI || t->jointype == JOIN_ANTI)
		hide_tables(sc, t->inner, 1, t->jointype == JOIN_ANTI);
	hide_inner_sides(sc, t->outer);
	hide_inner_sides(sc, t->inner);
}

/* sc ready to write the tasks of g */
void
cj_sql_context_init(CjSqlContext *sc, CjJoinGroup *g)
{
	int			n = list_length(g->rels);

	memset(sc, 0, sizeof(*sc));
	sc->g = g;
	sc->dctx.var_name = name_var;
	sc->dctx.var_arg = sc;
	sc->dctx.params = NIL;
	sc->hidden = palloc0(sizeof(int) * n);
	sc->hidden_by_anti = palloc0(sizeof(int) * n);
	hide_inner_sides(sc, g->tree);
}

/* items joined by sep, or empty_text when there are none */
static void
append_string_list(StringInfo buf, List *items, const char *sep,
				   const char *empty_text)
{
	ListCell   *lc;

	if (items == NIL)
		appendStringInfoString(buf, empty_text);
	foreach(lc, items)
	{
		if (lc != list_head(items))
			appendStringInfoString(buf, sep);
		appendStringInfoString(buf, (char *) lfirst(lc));
	}
}

static int
list_index_of_expr(List *list, Expr *e)
{
	ListCell   *lc;

	foreach(lc, list)
		if (equal(lfirst(lc), e))
			return foreach_current_index(lc);
	return -1;
}

static void
append_quals(StringInfo buf, List *quals, CjSqlContext *sc)
{
	ListCell   *lc;

	foreach(lc, quals)
	{
		if (lc != list_head(quals))
			appendStringInfoString(buf, " AND ");
		cj_deparse_expr(buf, (Expr *) lfirst(lc), &sc->dctx);
	}
}

static char *
quals_text(List *quals, CjSqlContext *sc)
{
	StringInfoData buf;

	initStringInfo(&buf);
	append_quals(&buf, quals, sc);
	return buf.data;
}

/* the type a hash support function takes its value as */
static Oid
hash_arg_type(Oid fn)
{
	Oid		   *argtypes;
	int			nargs;

	(void) get_func_signature(fn, &argtypes, &nargs);
	return argtypes[0];
}

/*
 * leaf_select
 *		"SELECT remote_col AS parent_col, ... FROM schema.table" for one leaf
 *		placement, exposing the sharded table's column names.
 */
static void
append_leaf_select(StringInfo buf, CjBaseRel *br, CjLeaf *leaf,
				   CjPlacement *pl)
{
	Relation	rel = RelationIdGetRelation(br->relid);
	TupleDesc	desc = RelationGetDescr(rel);
	int			a;
	bool		firstcol = true;

	appendStringInfoString(buf, "SELECT ");
	for (a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);

		if (att->attisdropped)
			continue;
		appendStringInfo(buf, "%s%s AS %s", firstcol ? "" : ", ",
						 cj_quote_ident(cj_leaf_colnames(leaf)[a]),
						 cj_quote_ident(NameStr(att->attname)));
		firstcol = false;
	}
	if (firstcol)
		appendStringInfoString(buf, "NULL");
	appendStringInfo(buf, " FROM %s",
					 cj_qualified_name(pl->remote_schema, pl->remote_table));
	RelationClose(rel);
}

static bool
leaf_names_match(CjBaseRel *br, CjLeaf *leaf)
{
	Relation	rel = RelationIdGetRelation(br->relid);
	TupleDesc	desc = RelationGetDescr(rel);
	int			a;
	bool		match = true;

	for (a = 0; a < desc->natts && match; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);

		if (att->attisdropped)
			continue;
		if (a >= leaf->natts || cj_leaf_colnames(leaf)[a] == NULL ||
			strcmp(cj_leaf_colnames(leaf)[a], NameStr(att->attname)) != 0)
			match = false;
	}
	RelationClose(rel);
	return match;
}

static CjPlacement *
placement_on(CjLeaf *leaf, Oid serverid)
{
	int			i;

	for (i = 0; i < leaf->nplacements; i++)
		if (leaf->placements[i].serverid == serverid)
			return &leaf->placements[i];
	/* another server reaching the same database: its name is good there */
	for (i = 0; i < leaf->nplacements; i++)
		if (cj_node_same(leaf->placements[i].serverid, serverid))
			return &leaf->placements[i];

	/*
	 * Only joinOptions(is_colocated_by_join_keys='true') puts a task where
	 * a leaf has no placement: the user vouches that the leaf's own server
	 * reaches that node too, so its relation is read there by its name.
	 */
	if (leaf->nplacements > 0)
		return &leaf->placements[0];
	elog(ERROR, "colojoin: leaf %u has no placement on server %u",
		 leaf->relid, serverid);
	return NULL;				/* keep compiler quiet */
}

/* a relation with the table's columns and no rows */
static void
append_empty_relation(StringInfo buf, CjBaseRel *br)
{
	Relation	rel = RelationIdGetRelation(br->relid);
	TupleDesc	desc = RelationGetDescr(rel);
	int			a;
	bool		firstcol = true;

	appendStringInfoString(buf, "(SELECT ");
	for (a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);

		if (att->attisdropped)
			continue;
		appendStringInfo(buf, "%sNULL::%s AS %s", firstcol ? "" : ", ",
						 cj_type_name(att->atttypid, att->atttypmod),
						 cj_quote_ident(NameStr(att->attname)));
		firstcol = false;
	}
	if (firstcol)
		appendStringInfoString(buf, "NULL");
	appendStringInfoString(buf, " WHERE false)");
	RelationClose(rel);
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
 * remote_type_declared
 *		Whether column attno of leaf's remote table has br's declared type,
 *		as its node told the size cache (false when that is not known).
 */
static bool
remote_type_declared(CjBaseRel *br, CjLeaf *leaf, AttrNumber attno)
{
	Oid			remote;

	return leaf->is_foreign && attno >= 1 && attno <= leaf->natts &&
		cj_leaf_colnames(leaf)[attno - 1] != NULL &&
		cj_leaf_remote_type(leaf->relid, cj_leaf_colnames(leaf)[attno - 1], &remote) &&
		remote == get_atttype(br->relid, attno);
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
			if (!remote_type_declared(br, lfirst(ll), attno))
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
			if (attno <= 0 || !remote_type_declared(br, lfirst(ll), attno))
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
					append_empty_relation(buf, br);
				else if (!cj_leaves_on_node(leaves, sc->serverid))
					appendStringInfoString(buf, move_table_name(br, sc->cls));
				else
				{
					appendStringInfoChar(buf, '(');
					foreach(lc, leaves)
					{
						if (lc != list_head(leaves))
							appendStringInfoString(buf, " UNION ALL ");
						append_leaf_select(buf, br, lfirst(lc),
										   placement_on(lfirst(lc), sc->serverid));
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
 * cj_append_class_from
 *		The rows of class m of br's table on one node, unaliased: its leaf
 *		there, a UNION ALL of its live leaves (multi-level partitioning), or
 *		an empty relation when it has no live leaf in the class (m -1: no
 *		partition at all).
 */
void
cj_append_class_from(StringInfo buf, CjBaseRel *br, int m, Oid serverid)
{
	CjClass    *cls;
	int			nlive = 0;
	int			l;

	cls = (m >= 0 && br->class_live[m]) ? &br->table->classes[m] : NULL;

	if (cls)
		for (l = 0; l < cls->nleaves; l++)
			nlive += br->leaf_live[m][l] ? 1 : 0;

	if (nlive == 1)
	{
		for (l = 0; l < cls->nleaves; l++)
		{
			CjLeaf	   *leaf;
			CjPlacement *pl;

			if (!br->leaf_live[m][l])
				continue;
			leaf = &cls->leaves[l];
			pl = placement_on(leaf, serverid);
			if (leaf_names_match(br, leaf))
				appendStringInfoString(buf,
									   cj_qualified_name(pl->remote_schema, pl->remote_table));
			else
			{
				appendStringInfoChar(buf, '(');
				append_leaf_select(buf, br, leaf, pl);
				appendStringInfoChar(buf, ')');
			}
		}
	}
	else if (nlive > 1)
	{
		bool		firstleaf = true;

		appendStringInfoChar(buf, '(');
		for (l = 0; l < cls->nleaves; l++)
		{
			CjLeaf	   *leaf;

			if (!br->leaf_live[m][l])
				continue;
			leaf = &cls->leaves[l];
			if (!firstleaf)
				appendStringInfoString(buf, " UNION ALL ");
			append_leaf_select(buf, br, leaf, placement_on(leaf, serverid));
			firstleaf = false;
		}
		appendStringInfoChar(buf, ')');
	}
	else
		append_empty_relation(buf, br);
}

/*
 * append_classes_from
 *		The rows of br's table in every class of sc->classes on one node,
 *		unaliased: a UNION ALL of each class's rows under the coordinator's
 *		column names (a leaf's remote table may order or name its columns
 *		otherwise), or an empty relation.  Rows of two classes never join
 *		where a class's do not: the group joins its tables on their keys,
 *		and a key value has one class.
 */
static void
append_classes_from(StringInfo buf, CjBaseRel *br, CjSqlContext *sc)
{
	Relation	rel = RelationIdGetRelation(br->relid);
	TupleDesc	desc = RelationGetDescr(rel);
	StringInfoData cols;
	StringInfoData items;
	ListCell   *lc;
	int			a;

	initStringInfo(&cols);
	for (a = 0; a < desc->natts; a++)
		if (!TupleDescAttr(desc, a)->attisdropped)
			appendStringInfo(&cols, "%s%s", cols.len ? ", " : "",
							 cj_quote_ident(NameStr(TupleDescAttr(desc, a)->attname)));
	RelationClose(rel);
	initStringInfo(&items);
	foreach(lc, sc->classes)
	{
		int			m = CJ_MEMBER(sc->g->space, lfirst_int(lc), br->space_index);

		if (m < 0 || !br->class_live[m])
			continue;
		appendStringInfo(&items, "%sSELECT %s FROM ", items.len ? " UNION ALL " : "",
						 cols.len ? cols.data : "NULL");
		cj_append_class_from(&items, br, m, sc->serverid);
		appendStringInfo(&items, " c%d", foreach_current_index(lc));
	}
	if (items.len == 0)
		append_empty_relation(buf, br);
	else
		appendStringInfo(buf, "(%s)", items.data);
}

bool
cj_classes_union_alike(CjJoinGroup *g, List *classes)
{
	ListCell   *lr;

	foreach(lr, g->rels)
	{
		CjBaseRel  *br = lfirst(lr);
		Relation	rel;
		TupleDesc	desc;
		bool		alike = true;
		ListCell   *lc;

		if (br->move != CJ_MOVE_NONE || br->reference || br->table == NULL ||
			br->space_index < 0)
			continue;
		rel = RelationIdGetRelation(br->relid);
		desc = RelationGetDescr(rel);
		foreach(lc, classes)
		{
			int			m = CJ_MEMBER(g->space, lfirst_int(lc), br->space_index);
			int			l;
			int			a;

			if (m < 0 || !br->class_live[m])
				continue;
			for (l = 0; l < br->table->classes[m].nleaves && alike; l++)
			{
				CjLeaf	   *leaf = &br->table->classes[m].leaves[l];

				if (!br->leaf_live[m][l])
					continue;
				for (a = 0; a < desc->natts && alike; a++)
					if (!TupleDescAttr(desc, a)->attisdropped)
						alike = remote_type_declared(br, leaf, a + 1);
			}
		}
		RelationClose(rel);
		if (!alike)
			return false;
	}
	return true;
}

/*
 * append_base_from
 *		The FROM item of a sharded table for one class on one node (or for
 *		every class of sc->classes).
 */
static void
append_base_from(StringInfo buf, CjBaseRel *br, CjSqlContext *sc)
{
	if (br->move != CJ_MOVE_NONE)
	{
		cj_append_moved_from(buf, br, sc);
		appendStringInfo(buf, " r%u", br->rtindex);
		return;
	}
	/* a reference table is whole in every class: read it once */
	if (sc->classes != NIL && !br->reference)
		append_classes_from(buf, br, sc);
	else
		cj_append_class_from(buf, br, CJ_MEMBER(sc->g->space, sc->cls, br->space_index),
							 sc->serverid);
	appendStringInfo(buf, " r%u", br->rtindex);
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

			if (br->rtindex != v->varno || br->table == NULL)
				continue;
			found = true;
			for (k = 0; k < br->table->nclasses; k++)
				for (l = 0; l < br->table->classes[k].nleaves; l++)
					if (br->leaf_live[k][l] &&
						!remote_type_declared(br, &br->table->classes[k].leaves[l],
											  v->varattno))
						return false;
		}
		if (!found)
			return false;
	}
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
						 quals_text(list_make1(br->move_key), sc),
						 cj_type_name(hash_arg_type(br->move_hashfn), -1),
						 br->move_modulus, br->move_modulus, br->move_modulus,
						 br->move_keep_nulls ? ", 0)" : "");
	}
	else if (br->move == CJ_MOVE_REPARTITION)
	{
		if (moves_columns(br))
			appendStringInfoString(&sel, ",");
		appendStringInfo(&sel, " %s AS colojoin_class",
						 hash_class_sql(br, quals_text(list_make1(br->move_key), sc)));
	}
	appendStringInfoString(&sel, " FROM (");
	foreach(lc, leaves)
	{
		if (lc != list_head(leaves))
			appendStringInfoString(&sel, " UNION ALL ");
		append_leaf_select(&sel, br, lfirst(lc), placement_on(lfirst(lc), serverid));
	}
	appendStringInfo(&sel, ") r%u", br->rtindex);
	if (br->remote_quals ||
		(br->move == CJ_MOVE_REPARTITION && !br->move_keep_nulls))
	{
		List	   *conds = NIL;

		if (br->remote_quals)
			conds = lappend(conds, quals_text(br->remote_quals, sc));

		/*
		 * A NULL key equals nothing: only the rows of a side the join keeps
		 * (dual repartition) travel without one, to class 0.
		 */
		if (br->move == CJ_MOVE_REPARTITION && !br->move_keep_nulls)
			conds = lappend(conds,
							psprintf("((%s) IS NOT NULL)",
									 quals_text(list_make1(br->move_key), sc)));
		appendStringInfoString(&sel, " WHERE ");
		append_string_list(&sel, conds, " AND ", "true");
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
		appendStringInfo(&buf, " WHERE %s", quals_text(br->remote_quals, sc));
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

	/* a table that is not sharded: read here, by the coordinator */
	if (br->table == NULL && br->stage == NULL)
		sources = list_make1(list_make2(makeInteger((int) InvalidOid),
										makeString(local_select_sql(br, sc))));

	/* a stage: its tasks on each of its nodes, routed by its key column */
	if (br->stage != NULL)
	{
		char	   *class_sql = hash_class_sql(br, cj_stage_column_name((Var *) br->move_key));

		foreach(lc, cj_stage_source_nodes(br))
			sources = lappend(sources,
							  list_make2(makeInteger((int) lfirst_oid(lc)),
										 makeString(cj_stage_source_sql(br, lfirst_oid(lc), class_sql,
																		list_length(all_remainders) < br->move_modulus ?
																		all_remainders : NIL,
																		binary))));
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
		move = lappend(move, makeString(psprintf("ANALYZE %s", name)));
		move = lappend(move, makeInteger(binary ? 1 : 0));
		{
			List	   *classes = NIL;

			foreach(lc, remainders)
				classes = lappend(classes, makeInteger(lfirst_int(lc)));
			move = lappend(move, classes);
		}
		return move;
	}
}

/*
 * build_moves
 *		Every move the plan makes before its tasks, and an estimate of the
 *		rows they carry.
 */
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
	return moves;
}

/*
 * deparse_tree
 *		The FROM item for a join tree node.  Filters of the node's inputs go
 *		to *scope (the WHERE of the query or subquery, or an ON clause, where
 *		they mean the same as below the join); with no scope (sides of a
 *		FULL JOIN) a table's filters go into a derived table around it.
 *		check_shippable applies the same rules to decide what is remote.
 */
static void
deparse_tree(StringInfo buf, CjJoinTree *t, List **scope, CjSqlContext *sc)
{
	if (t->lateral)
	{
		cj_append_lateral(buf, t->lateral, sc);
		return;
	}
	if (t->is_base)
	{
		CjBaseRel  *br = list_nth(sc->g->rels, t->base);

		/* grouped rows were filtered before their move, and lack the columns */
		if (br->remote_quals == NIL || br->preagg != NIL)
			append_base_from(buf, br, sc);
		else if (scope != NULL)
		{
			append_base_from(buf, br, sc);
			*scope = lappend(*scope, quals_text(br->remote_quals, sc));
		}
		else
		{
			appendStringInfoString(buf, "(SELECT * FROM ");
			append_base_from(buf, br, sc);
			appendStringInfo(buf, " WHERE %s) r%u",
							 quals_text(br->remote_quals, sc), br->rtindex);
		}
		return;
	}

	switch (t->jointype)
	{
		case JOIN_INNER:
			{
				List	   *on = NIL;
				List	  **childscope = scope ? scope : &on;
				StringInfoData inner;

				appendStringInfoChar(buf, '(');
				deparse_tree(buf, t->outer, childscope, sc);
				initStringInfo(&inner);
				deparse_tree(&inner, t->inner, childscope, sc);
				if (t->remote_joinquals)
					on = lappend(on, quals_text(t->remote_joinquals, sc));
				/* a LATERAL subquery joined on nothing more, as written */
				if (t->inner->lateral && on == NIL)
					appendStringInfo(buf, " CROSS JOIN %s)", inner.data);
				else
				{
					appendStringInfo(buf, " INNER JOIN %s ON (", inner.data);
					append_string_list(buf, on, " AND ", "true");
					appendStringInfoString(buf, "))");
				}
				break;
			}
		case JOIN_LEFT:
		case JOIN_FULL:
			{
				List	   *on = NIL;

				appendStringInfoChar(buf, '(');
				deparse_tree(buf, t->outer,
							 t->jointype == JOIN_LEFT ? scope : NULL, sc);
				appendStringInfoString(buf, t->jointype == JOIN_LEFT ?
									   " LEFT JOIN " : " FULL JOIN ");
				deparse_tree(buf, t->inner,
							 t->jointype == JOIN_LEFT ? &on : NULL, sc);
				if (t->remote_joinquals)
					on = lcons(quals_text(t->remote_joinquals, sc), on);
				appendStringInfoString(buf, " ON (");
				append_string_list(buf, on, " AND ", "true");
				appendStringInfoString(buf, "))");
				if (t->remote_otherquals)
				{
					Assert(scope != NULL);
					*scope = lappend(*scope, quals_text(t->remote_otherquals, sc));
				}
				break;
			}
		case JOIN_SEMI:
		case JOIN_ANTI:
			{
				List	   *where = NIL;
				StringInfoData sub;

				Assert(scope != NULL);
				deparse_tree(buf, t->outer, scope, sc);
				/* inside the subquery its tables are in reach */
				hide_tables(sc, t->inner, -1, t->jointype == JOIN_ANTI);
				initStringInfo(&sub);
				appendStringInfoString(&sub, t->jointype == JOIN_ANTI ?
									   "NOT EXISTS (SELECT NULL FROM " :
									   "EXISTS (SELECT NULL FROM ");
				deparse_tree(&sub, t->inner, &where, sc);
				if (t->remote_joinquals)
					where = lappend(where, quals_text(t->remote_joinquals, sc));
				if (where)
				{
					appendStringInfoString(&sub, " WHERE ");
					append_string_list(&sub, where, " AND ", "true");
				}
				appendStringInfoChar(&sub, ')');
				hide_tables(sc, t->inner, 1, t->jointype == JOIN_ANTI);
				*scope = lappend(*scope, sub.data);
				if (t->remote_otherquals)
					*scope = lappend(*scope, quals_text(t->remote_otherquals, sc));
				break;
			}
		default:
			elog(ERROR, "colojoin: unexpected join type %d", (int) t->jointype);
	}
}

char *
cj_task_sql(CjJoinGroup *g, List *scan_vars, CjUpperSpec *spec, int cls,
		 Oid serverid, CjSqlContext *sc)
{
	StringInfoData buf;
	StringInfoData from;
	List	   *where = NIL;
	ListCell   *lc;

	sc->cls = cls;
	sc->serverid = serverid;

	initStringInfo(&from);
	deparse_tree(&from, g->tree, &where, sc);

	initStringInfo(&buf);
	appendStringInfoString(&buf, "SELECT ");
	if (scan_vars == NIL)
		appendStringInfoString(&buf, "NULL");
	foreach(lc, scan_vars)
	{
		const char *written = spec && spec->remote_sql ?
			list_nth(spec->remote_sql, foreach_current_index(lc)) : NULL;

		if (lc != list_head(scan_vars))
			appendStringInfoString(&buf, ", ");
		if (written)
			appendStringInfoString(&buf, written);
		else
			cj_deparse_expr(&buf, (Expr *) lfirst(lc), &sc->dctx);
	}
	appendStringInfo(&buf, " FROM %s", from.data);
	if (where)
	{
		appendStringInfoString(&buf, " WHERE ");
		append_string_list(&buf, where, " AND ", "true");
	}
	if (spec && spec->ngroup > 0)
	{
		int			i;

		/* by position: the items are written once, in the select list */
		appendStringInfoString(&buf, " GROUP BY ");
		for (i = 1; i <= spec->ngroup; i++)
			appendStringInfo(&buf, "%s%d", i > 1 ? ", " : "", i);
	}
	if (spec && spec->having)
	{
		appendStringInfoString(&buf, " HAVING ");
		append_quals(&buf, spec->having, sc);
	}
	if (spec && spec->order_exprs)
	{
		ListCell   *le,
				   *lo,
				   *ln;

		appendStringInfoString(&buf, " ORDER BY ");
		forthree(le, spec->order_exprs, lo, spec->order_ops, ln, spec->order_nulls_first)
		{
			Expr	   *e = (Expr *) lfirst(le);
			TypeCacheEntry *tc = lookup_type_cache(exprType((Node *) e), TYPECACHE_LT_OPR);
			int			pos = list_member(spec->remote_exprs, e) ?
				list_index_of_expr(spec->remote_exprs, e) + 1 : 0;

			if (le != list_head(spec->order_exprs))
				appendStringInfoString(&buf, ", ");
			if (pos > 0)
				appendStringInfo(&buf, "%d", pos);
			else
				cj_deparse_expr(&buf, e, &sc->dctx);
			appendStringInfo(&buf, "%s%s",
							 lfirst_oid(lo) == tc->lt_opr ? " ASC" : " DESC",
							 lfirst_int(ln) ? " NULLS FIRST" : " NULLS LAST");
		}
	}
	if (spec && spec->limit >= 0)
	{
		if (spec->with_ties)
			appendStringInfo(&buf, " FETCH FIRST %.0f ROWS WITH TIES", spec->limit);
		else
			appendStringInfo(&buf, " LIMIT %.0f", spec->limit);
	}
	return buf.data;
}
