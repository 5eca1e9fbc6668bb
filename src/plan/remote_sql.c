/*-------------------------------------------------------------------------
 *
 * remote_sql.c
 *	  The SQL a colocated plan sends to the nodes: for every task, the
 *	  SELECT of one partition class (each table's leaves as they are named
 *	  on the node, UNION ALL of sub-partitions, an empty relation for a
 *	  missing partition, the temporary table of a moved table; the join
 *	  tree with its remote conditions; grouping, ordering and limits pushed
 *	  down).  The moves' SQL (temporary tables, COPYs, the FROM item of a
 *	  moved table) is move_sql.c's, which shares this file's pieces (a
 *	  leaf's SELECT, conditions' text).  Which tasks and moves there are is
 *	  planner.c's decision.
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
#include "plan/scan_plan.h"
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
	if (CJ_CARRIES_VARS(br))
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
void
cj_append_string_list(StringInfo buf, List *items, const char *sep,
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

char *
cj_quals_text(List *quals, CjSqlContext *sc)
{
	StringInfoData buf;

	initStringInfo(&buf);
	append_quals(&buf, quals, sc);
	return buf.data;
}

/*
 * leaf_select
 *		"SELECT remote_col AS parent_col, ... FROM schema.table" for one leaf
 *		placement, exposing the sharded table's column names.
 */
void
cj_append_leaf_select(StringInfo buf, CjBaseRel *br, CjLeaf *leaf,
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

CjPlacement *
cj_placement_on(CjLeaf *leaf, Oid serverid)
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
void
cj_append_empty_relation(StringInfo buf, CjBaseRel *br)
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
			pl = cj_placement_on(leaf, serverid);
			if (leaf_names_match(br, leaf))
				appendStringInfoString(buf,
									   cj_qualified_name(pl->remote_schema, pl->remote_table));
			else
			{
				appendStringInfoChar(buf, '(');
				cj_append_leaf_select(buf, br, leaf, pl);
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
			cj_append_leaf_select(buf, br, leaf, cj_placement_on(leaf, serverid));
			firstleaf = false;
		}
		appendStringInfoChar(buf, ')');
	}
	else
		cj_append_empty_relation(buf, br);
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
		cj_append_empty_relation(buf, br);
	else
		appendStringInfo(buf, "(%s)", items.data);
}

/*
 * cj_remote_type_declared
 *		Whether column attno of leaf's remote table has br's declared type,
 *		as its node told the size cache (false when that is not known).
 */
bool
cj_remote_type_declared(CjBaseRel *br, CjLeaf *leaf, AttrNumber attno)
{
	Oid			remote;

	return leaf->is_foreign && attno >= 1 && attno <= leaf->natts &&
		cj_leaf_colnames(leaf)[attno - 1] != NULL &&
		cj_leaf_remote_type(leaf->relid, cj_leaf_colnames(leaf)[attno - 1], &remote) &&
		remote == get_atttype(br->relid, attno);
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
						alike = cj_remote_type_declared(br, leaf, a + 1);
			}
		}
		RelationClose(rel);
		if (!alike)
			return false;
	}
	return true;
}

/*
 * cj_append_base_from
 *		The FROM item of a sharded table for one class on one node (or for
 *		every class of sc->classes).
 */
void
cj_append_base_from(StringInfo buf, CjBaseRel *br, CjSqlContext *sc)
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

		/*
		 * Moved rows were filtered before their move (and may lack the
		 * columns): grouped ones, and any a source read into the temporary
		 * table the task reads.
		 */
		if (br->remote_quals == NIL || br->preagg != NIL ||
			cj_filtered_at_source(br))
			cj_append_base_from(buf, br, sc);
		else if (scope != NULL)
		{
			cj_append_base_from(buf, br, sc);
			*scope = lappend(*scope, cj_quals_text(br->remote_quals, sc));
		}
		else
		{
			appendStringInfoString(buf, "(SELECT * FROM ");
			cj_append_base_from(buf, br, sc);
			appendStringInfo(buf, " WHERE %s) r%u",
							 cj_quals_text(br->remote_quals, sc), br->rtindex);
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
					on = lappend(on, cj_quals_text(t->remote_joinquals, sc));
				/* a LATERAL subquery joined on nothing more, as written */
				if (t->inner->lateral && on == NIL)
					appendStringInfo(buf, " CROSS JOIN %s)", inner.data);
				else
				{
					appendStringInfo(buf, " INNER JOIN %s ON (", inner.data);
					cj_append_string_list(buf, on, " AND ", "true");
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
					on = lcons(cj_quals_text(t->remote_joinquals, sc), on);
				appendStringInfoString(buf, " ON (");
				cj_append_string_list(buf, on, " AND ", "true");
				appendStringInfoString(buf, "))");
				if (t->remote_otherquals)
				{
					Assert(scope != NULL);
					*scope = lappend(*scope, cj_quals_text(t->remote_otherquals, sc));
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
					where = lappend(where, cj_quals_text(t->remote_joinquals, sc));
				if (where)
				{
					appendStringInfoString(&sub, " WHERE ");
					cj_append_string_list(&sub, where, " AND ", "true");
				}
				appendStringInfoChar(&sub, ')');
				hide_tables(sc, t->inner, 1, t->jointype == JOIN_ANTI);
				*scope = lappend(*scope, sub.data);
				if (t->remote_otherquals)
					*scope = lappend(*scope, cj_quals_text(t->remote_otherquals, sc));
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
		cj_append_string_list(&buf, where, " AND ", "true");
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
