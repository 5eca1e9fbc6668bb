/*-------------------------------------------------------------------------
 *
 * qual_placement.c
 *	  Where each condition of a group runs: on the nodes, in a scope where
 *	  it means the same as below the join, or on the coordinator over the
 *	  join's rows, in PostgreSQL's order of security levels (row security
 *	  and security-barrier quals first; nothing that could leak a secured
 *	  row's values before them).  Also what the group may hand up above the
 *	  join (columns of tables a semi join hides).
 *
 *	  The SQL itself is remote_sql.c's (deparse_tree follows the same
 *	  scope rules); this file only decides.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/restrictinfo.h"

#include "plan/planner_internal.h"

/* The filter scope the shippability pass and the deparser agree on */
typedef enum CjScopeKind
{
	CJ_SCOPE_NONE,				/* no place for a filter (side of FULL JOIN) */
	CJ_SCOPE_TOP,				/* the query's WHERE: local filters allowed */
	CJ_SCOPE_NESTED				/* an ON clause or EXISTS subquery's WHERE */
} CjScopeKind;

/*
 * cj_insert_by_level
 *		Put q, of security_level level, into *exprs after every condition
 *		of the same or a lower level (*levels runs parallel): the order
 *		PostgreSQL evaluates conditions in, and stable, so that equal levels
 *		keep the order they came in.
 */
void
cj_insert_by_level(List **exprs, List **levels, Expr *q, int level)
{
	int			pos = 0;
	ListCell   *lc;

	foreach(lc, *levels)
	{
		if (lfirst_int(lc) > level)
			break;
		pos++;
	}
	*exprs = list_insert_nth(*exprs, pos, q);
	*levels = list_insert_nth_int(*levels, pos, level);
}

/* a condition only the coordinator can run, in PostgreSQL's order */
static void
add_local_qual(CjJoinGroup *g, Expr *q, int level)
{
	cj_insert_by_level(&g->local_quals, &g->local_levels, q, level);
}

/*
 * leaks_secured_rows
 *		Whether q, a join condition, could leak values of a table that has
 *		security quals (row security, a security-barrier view) to a function
 *		that is not leakproof.  The node that runs the join need not apply
 *		the table's security quals first (they may not even be sent to it),
 *		so such a condition runs on the coordinator, after them.
 */
static bool
leaks_secured_rows(PlannerInfo *root, CjJoinGroup *g, Expr *q)
{
	Relids		relids;
	ListCell   *lc;

	if (!contain_leaked_vars((Node *) q))
		return false;
	relids = pull_varnos(root, (Node *) q);
	foreach(lc, g->rels)
	{
		CjBaseRel  *br = lfirst(lc);

		if (br->has_security_quals &&
			(bms_is_member(br->rtindex, relids) ||
			 bms_overlap(br->stage_relids, relids)))
			return true;
	}
	return false;
}

/*
 * qual_runs_on_nodes
 *		Whether q, a condition of one table at security level level (lowest
 *		the level of its first condition), runs on the nodes.  A node
 *		evaluates its WHERE in an order of its own, so a condition that could
 *		leak its rows' values (a function that is not leakproof) may share it
 *		with the table's security quals only if it has none: otherwise it
 *		runs on the coordinator, after them, as PostgreSQL runs it.
 */
static bool
qual_runs_on_nodes(PlannerInfo *root, Expr *q, int level, int lowest)
{
	return cj_is_shippable(root, q, NULL) &&
		(level == lowest || !contain_leaked_vars((Node *) q));
}

/*
 * cj_filtered_at_source
 *		Whether br's moved rows are filtered by its own conditions where they
 *		are read, and only there: a table repartitioned or broadcast into a
 *		temporary table, which every task reads it from.  Its tasks need not
 *		run those conditions again, nor its rows carry the columns only they
 *		read.  Not a move of whole partitions (a task on a node that holds
 *		them reads them there), a stage or coordinator rows (their conditions
 *		are their own plan's).
 */
bool
cj_filtered_at_source(CjBaseRel *br)
{
	return (br->move == CJ_MOVE_REPARTITION || br->move == CJ_MOVE_BROADCAST) &&
		br->stage == NULL && br->coord_path == NULL;
}

/*
 * cj_task_quals
 *		The conditions of br its tasks (or the coordinator above them) still
 *		run: every one, less those its move already ran at the source
 *		(br->move is already chosen).
 */
List *
cj_task_quals(PlannerInfo *root, CjBaseRel *br)
{
	List	   *kept = NIL;
	ListCell   *lc;
	ListCell   *ll;
	int			lowest = -1;

	if (!cj_filtered_at_source(br))
		return br->quals;
	forboth(lc, br->quals, ll, br->qual_levels)
	{
		if (lowest < 0)
			lowest = lfirst_int(ll);
		if (!qual_runs_on_nodes(root, lfirst(lc), lfirst_int(ll), lowest))
			kept = lappend(kept, lfirst(lc));
	}
	return kept;
}

/*
 * check_shippable
 *		Split every condition of the tree into what runs on the nodes and
 *		what the coordinator must run, following the scope rules the
 *		deparser uses (see deparse_tree).  Fails when a condition cannot run
 *		remotely and has no safe place on the coordinator either (inside an
 *		outer join's nullable side, say).
 */
static bool
check_shippable(PlannerInfo *root, CjJoinGroup *g, CjJoinTree *t,
				CjScopeKind scope, List **reasons)
{
	ListCell   *lc;

	/* a LATERAL subquery's own conditions are inside it, all remote */
	if (t->lateral)
		return true;
	if (t->is_base)
	{
		CjBaseRel  *br = list_nth(g->rels, t->base);
		ListCell   *ll;
		int			lowest = -1;

		br->remote_quals = NIL;
		br->filter_in_derived = (scope == CJ_SCOPE_NONE);
		forboth(lc, br->quals, ll, br->qual_levels)
		{
			Expr	   *q = (Expr *) lfirst(lc);
			int			level = lfirst_int(ll);

			if (lowest < 0)
				lowest = level;
			if (qual_runs_on_nodes(root, q, level, lowest))
				br->remote_quals = lappend(br->remote_quals, q);
			else if (scope == CJ_SCOPE_TOP)
				add_local_qual(g, q, level);
			else
			{
				*reasons = lappend(*reasons,
								   psprintf("a condition on %s cannot run on the nodes and %s is on the nullable side of an outer join",
											br->alias, br->alias));
				return false;
			}
		}
		return true;
	}

	t->remote_joinquals = NIL;
	t->remote_otherquals = NIL;
	foreach(lc, t->joinquals)
	{
		Expr	   *q = (Expr *) lfirst(lc);

		if (cj_is_shippable(root, q, NULL) && !leaks_secured_rows(root, g, q))
			t->remote_joinquals = lappend(t->remote_joinquals, q);
		else if (t->jointype == JOIN_INNER && scope == CJ_SCOPE_TOP)
			add_local_qual(g, q, (int) root->qual_security_level);
		else
		{
			*reasons = lappend(*reasons,
							   pstrdup("a join condition cannot run on the nodes"));
			return false;
		}
	}
	foreach(lc, t->otherquals)
	{
		Expr	   *q = (Expr *) lfirst(lc);

		if (scope != CJ_SCOPE_NONE && cj_is_shippable(root, q, NULL) &&
			!leaks_secured_rows(root, g, q))
			t->remote_otherquals = lappend(t->remote_otherquals, q);
		else if (scope == CJ_SCOPE_TOP)
			add_local_qual(g, q, (int) root->qual_security_level);
		else
		{
			*reasons = lappend(*reasons,
							   pstrdup("a condition above an outer join has no place in the remote query"));
			return false;
		}
	}

	switch (t->jointype)
	{
		case JOIN_INNER:
			{
				/* an inner join's ON clause can hold its inputs' filters */
				CjScopeKind child = (scope == CJ_SCOPE_NONE) ? CJ_SCOPE_NESTED : scope;

				return check_shippable(root, g, t->outer, child, reasons) &&
					check_shippable(root, g, t->inner, child, reasons);
			}
		case JOIN_LEFT:
			return check_shippable(root, g, t->outer, scope, reasons) &&
				check_shippable(root, g, t->inner, CJ_SCOPE_NESTED, reasons);
		case JOIN_FULL:
			return check_shippable(root, g, t->outer, CJ_SCOPE_NONE, reasons) &&
				check_shippable(root, g, t->inner, CJ_SCOPE_NONE, reasons);
		case JOIN_SEMI:
		case JOIN_ANTI:
			if (scope == CJ_SCOPE_NONE)
			{
				*reasons = lappend(*reasons,
								   pstrdup("a semi or anti join directly below a full join"));
				return false;
			}
			return check_shippable(root, g, t->outer, scope, reasons) &&
				check_shippable(root, g, t->inner, CJ_SCOPE_NESTED, reasons);
		default:
			return false;
	}
}

/* whether exprs read a column of a table of g whose index is in tables */
static bool
reads_tables(CjJoinGroup *g, List *exprs, Bitmapset *tables)
{
	ListCell   *lc;

	if (tables == NULL)
		return false;
	foreach(lc, pull_var_clause((Node *) exprs, PVC_RECURSE_PLACEHOLDERS))
	{
		Var		   *v = lfirst(lc);
		ListCell   *lr;

		foreach(lr, g->rels)
			if (cj_rel_has_varno((CjBaseRel *) lfirst(lr), v->varno) &&
				bms_is_member(foreach_current_index(lr), tables))
				return true;
	}
	return false;
}

static Bitmapset *
tree_tables(CjJoinTree *t)
{
	if (t->lateral)
		return NULL;
	if (t->is_base)
		return bms_make_singleton(t->base);
	return bms_union(tree_tables(t->outer), tree_tables(t->inner));
}

/* whether exprs read a column of relation rti */
static bool
reads_rti(List *exprs, Index rti)
{
	ListCell   *lc;

	foreach(lc, pull_var_clause((Node *) exprs, PVC_RECURSE_PLACEHOLDERS))
		if (((Var *) lfirst(lc))->varno == rti)
			return true;
	return false;
}

/* whether a condition of t, other than skip's own, reads relation rti */
static bool
tree_reads_rti(CjJoinTree *t, CjJoinTree *skip, Index rti)
{
	if (t->is_base || t->lateral)
		return false;
	if (t != skip &&
		(reads_rti(t->joinquals, rti) || reads_rti(t->otherquals, rti)))
		return true;
	return tree_reads_rti(t->outer, skip, rti) || tree_reads_rti(t->inner, skip, rti);
}

/*
 * semi_subqueries_hidden
 *		A subquery that is the inner side of a semi or anti join is inside
 *		EXISTS in the remote SQL: false when anything outside that join
 *		(another condition of the tree, the join's target, the conditions
 *		the coordinator applies) reads its columns.
 */
static bool
semi_subqueries_hidden(CjJoinGroup *g, CjJoinTree *t, RelOptInfo *joinrel)
{
	Index		rti;

	if (t->is_base || t->lateral)
		return true;
	if ((t->jointype == JOIN_SEMI || t->jointype == JOIN_ANTI) &&
		(rti = cj_lateral_uncorrelated_rti(t->inner)) != 0 &&
		(tree_reads_rti(g->tree, t, rti) ||
		 reads_rti(joinrel->reltarget->exprs, rti) ||
		 reads_rti(g->local_quals, rti)))
		return false;
	return semi_subqueries_hidden(g, t->outer, joinrel) &&
		semi_subqueries_hidden(g, t->inner, joinrel);
}

/*
 * check_semi_refs
 *		The remote SQL writes a semi join as EXISTS (...), so its inner
 *		tables are out of reach outside it; PostgreSQL may still ask for
 *		their columns above the join (a column equal to one of the outer
 *		side, say).  False when a condition of t reads such a column; sets
 *		*hidden to the tables of t that are out of reach above t.  An anti
 *		join's inner tables are not counted: their columns are NULL above
 *		it, and the SQL says so (remote_sql.c name_var).
 */
static bool
check_semi_refs(CjJoinGroup *g, CjJoinTree *t, Bitmapset **hidden)
{
	Bitmapset  *ho;
	Bitmapset  *hi;

	*hidden = NULL;
	if (t->is_base || t->lateral)
		return true;
	if (!check_semi_refs(g, t->outer, &ho) || !check_semi_refs(g, t->inner, &hi))
		return false;
	/*
	 * A LATERAL subquery's columns are not tracked: never inside EXISTS; a
	 * subquery that is the whole inner side is checked by
	 * semi_subqueries_hidden.
	 */
	if ((t->jointype == JOIN_SEMI || t->jointype == JOIN_ANTI) &&
		cj_tree_has_lateral(t->inner) &&
		cj_lateral_uncorrelated_rti(t->inner) == 0)
		return false;
	if (reads_tables(g, t->joinquals, bms_union(ho, hi)) ||
		reads_tables(g, t->otherquals, bms_union(ho, hi)))
		return false;
	switch (t->jointype)
	{
		case JOIN_SEMI:
			*hidden = bms_union(ho, tree_tables(t->inner));
			break;
		case JOIN_ANTI:
			*hidden = ho;
			break;
		default:
			*hidden = bms_union(ho, hi);
			break;
	}
	return true;
}

/*
 * cj_check_target
 *		Every column the join must return has to be a plain column of one of
 *		the joined tables, in reach of the remote query's select list.
 */
bool
cj_check_target(CjJoinGroup *g, RelOptInfo *joinrel, List **reasons)
{
	ListCell   *lc;
	Bitmapset  *hidden;

	if (!check_semi_refs(g, g->tree, &hidden) ||
		!semi_subqueries_hidden(g, g->tree, joinrel) ||
		reads_tables(g, joinrel->reltarget->exprs, hidden) ||
		reads_tables(g, g->local_quals, hidden))
	{
		*reasons = lappend(*reasons,
						   pstrdup("the join needs a column of the inner side of a semi join above it"));
		return false;
	}

	foreach(lc, joinrel->reltarget->exprs)
	{
		Node	   *e = (Node *) lfirst(lc);

		if (!IsA(e, Var) || ((Var *) e)->varattno <= 0)
		{
			*reasons = lappend(*reasons,
							   pstrdup("the join must return a whole-row, system column or placeholder value"));
			return false;
		}
	}
	return true;
}

/*
 * cj_check_shippable
 *		Where each condition of g runs (check_shippable), from the top of
 *		its tree: the query's WHERE, where the coordinator may run what the
 *		nodes cannot.
 */
bool
cj_check_shippable(PlannerInfo *root, CjJoinGroup *g, List **reasons)
{
	g->local_quals = NIL;
	g->local_levels = NIL;
	return check_shippable(root, g, g->tree, CJ_SCOPE_TOP, reasons);
}
