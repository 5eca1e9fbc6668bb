/*-------------------------------------------------------------------------
 *
 * planner.c
 *	  The planner side of colocated joins: a set_join_pathlist_hook that
 *	  recognises joins of sharded tables that are colocated by every rule of
 *	  DESIGN §2, adds a CustomPath for the whole join, and turns the chosen
 *	  path into a CustomScan holding one task (node, remote SQL) per
 *	  partition class.
 *
 *	  It never talks to a node: everything the executor needs is put in the
 *	  plan.  Metadata comes from metadata.c, the class and placement rules
 *	  from colocation.c, the tasks' and moves' SQL from remote_sql.c
 *	  (expressions from deparse.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "access/hash.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "optimizer/planner.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "parser/parse_coerce.h"
#include "rewrite/rewriteManip.h"

#include "colojoin.h"
#include "colocation.h"
#include "deparse.h"
#include "hints.h"
#include "join_group.h"
#include "metadata.h"
#include "node_health.h"
#include "planner.h"
#include "connection.h"
#include "modify.h"
#include "planner_internal.h"

/* Join relations examined during one planner() call */
typedef struct CjJoinAttempt
{
	RelOptInfo *joinrel;
	CjJoinGroup *group;			/* NULL while every attempt failed */
	List	   *reasons;		/* why the failed attempts failed */
	char	   *names;			/* its tables, for the decision log */
	CjUpperSpec *upper;			/* for a grouped relation: full pushdown */
} CjJoinAttempt;

static List *cj_attempts = NIL;

static char *joinrel_names(PlannerInfo *root, RelOptInfo *rel);
static bool is_dimension_rel(PlannerInfo *root, RelOptInfo *rel);

/* the hints of the statement being planned */
static CjHintSet *cj_hints = NULL;

static set_join_pathlist_hook_type prev_join_pathlist_hook = NULL;
static planner_hook_type prev_planner_hook = NULL;


static CustomPathMethods cj_path_methods = {
	.CustomName = COLOJOIN_CUSTOM_SCAN_NAME,
	.PlanCustomPath = cj_plan_custom_path,
};

CustomScanMethods cj_scan_methods = {
	.CustomName = COLOJOIN_CUSTOM_SCAN_NAME,
	.CreateCustomScanState = cj_create_scan_state,
};

/* The filter scope the shippability pass and the deparser agree on */
typedef enum CjScopeKind
{
	CJ_SCOPE_NONE,				/* no place for a filter (side of FULL JOIN) */
	CJ_SCOPE_TOP,				/* the query's WHERE: local filters allowed */
	CJ_SCOPE_NESTED				/* an ON clause or EXISTS subquery's WHERE */
} CjScopeKind;

static CjJoinAttempt *
find_attempt(RelOptInfo *joinrel)
{
	ListCell   *lc;

	foreach(lc, cj_attempts)
	{
		CjJoinAttempt *a = (CjJoinAttempt *) lfirst(lc);

		if (a->joinrel == joinrel)
			return a;
	}
	return NULL;
}

static CjJoinAttempt *
get_attempt(RelOptInfo *joinrel)
{
	CjJoinAttempt *a = find_attempt(joinrel);

	if (a == NULL)
	{
		a = palloc0(sizeof(CjJoinAttempt));
		a->joinrel = joinrel;
		cj_attempts = lappend(cj_attempts, a);
	}
	return a;
}

/*
 * is_sharded_baserel
 *		Cheap test: a base relation scanning a partitioned table with its
 *		partitions (not ONLY).
 */
static bool
is_sharded_baserel(PlannerInfo *root, RelOptInfo *rel)
{
	RangeTblEntry *rte;

	if (rel->reloptkind != RELOPT_BASEREL || rel->rtekind != RTE_RELATION)
		return false;
	rte = planner_rt_fetch(rel->relid, root);
	return rte->relkind == RELKIND_PARTITIONED_TABLE && rte->inh;
}

/*
 * mark_live_leaves
 *		Record the leaves below a surviving partition, descending into
 *		sub-partitioned partitions, skipping what pruning removed.
 */
static bool
mark_live_leaves(PlannerInfo *root, CjBaseRel *br, RelOptInfo *child)
{
	RangeTblEntry *crte = planner_rt_fetch(child->relid, root);

	if (IS_DUMMY_REL(child))
		return true;
	if (crte->relkind == RELKIND_PARTITIONED_TABLE)
	{
		int			i = -1;

		while ((i = bms_next_member(child->live_parts, i)) >= 0)
		{
			if (child->part_rels[i] == NULL)
				continue;
			if (!mark_live_leaves(root, br, child->part_rels[i]))
				return false;
		}
	}
	else
	{
		int			leafindex;
		int			cls = cj_class_of_leaf(br->table, crte->relid, &leafindex);

		if (cls < 0)
			return false;		/* metadata does not know this leaf */
		br->class_live[cls] = true;
		br->leaf_live[cls][leafindex] = true;
	}
	return true;
}

/*
 * insert_by_level
 *		Put q, of security_level level, into *exprs after every condition
 *		of the same or a lower level (*levels runs parallel): the order
 *		PostgreSQL evaluates conditions in, and stable, so that equal levels
 *		keep the order they came in.
 */
static void
insert_by_level(List **exprs, List **levels, Expr *q, int level)
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
	insert_by_level(&g->local_quals, &g->local_levels, q, level);
}

/*
 * take_quals
 *		A member table's own conditions, into br->quals, lowest
 *		security_level first (row security policies and security-barrier
 *		quals before the query's own), the order PostgreSQL evaluates them
 *		in; their levels into br->qual_levels.  false (with the reason) for
 *		a condition that does not depend on its rows: PostgreSQL evaluates
 *		those once, as a gating qual, which no task can.
 */
static bool
take_quals(PlannerInfo *root, RelOptInfo *rel, CjBaseRel *br, List **reasons)
{
	ListCell   *lc;

	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (rinfo->pseudoconstant)
		{
			*reasons = lappend(*reasons,
							   psprintf("table %s has a condition that does not depend on its rows", br->alias));
			return false;
		}
		insert_by_level(&br->quals, &br->qual_levels, rinfo->clause,
						(int) rinfo->security_level);
		if (rinfo->security_level < root->qual_security_level)
			br->has_security_quals = true;
	}
	return true;
}

/*
 * make_base_rel
 *		Describe a sharded table of the query, or return NULL (with a
 *		reason) when colojoin cannot take it.
 */
static CjBaseRel *
make_base_rel(PlannerInfo *root, RelOptInfo *rel, List **reasons)
{
	RangeTblEntry *rte;
	CjTable    *table;
	CjBaseRel  *br;
	int			i;

	/*
	 * A table pruned to nothing is still a member: it behaves as an empty
	 * relation in every class (an outer join keeps the other side's rows).
	 */
	if (!is_sharded_baserel(root, rel))
	{
		if (is_dimension_rel(root, rel))
			*reasons = lappend(*reasons,
							   psprintf("relation %s is not a sharded table",
										planner_rt_fetch(rel->relid, root)->eref->aliasname));
		return NULL;
	}
	rte = planner_rt_fetch(rel->relid, root);
	table = cj_get_table(rte->relid);
	if (table == NULL || table->nclasses == 0)
		return NULL;

	br = palloc0(sizeof(CjBaseRel));
	br->rtindex = rel->relid;
	br->relid = rte->relid;
	br->table = table;
	br->alias = rte->eref->aliasname;
	br->checkasuser = rte->checkAsUser;
	br->reference_capable = cj_is_reference_table(table);
	br->class_live = palloc0(sizeof(bool) * table->nclasses);
	br->leaf_live = palloc0(sizeof(bool *) * table->nclasses);
	for (i = 0; i < table->nclasses; i++)
		br->leaf_live[i] = palloc0(sizeof(bool) * Max(table->classes[i].nleaves, 1));

	i = -1;
	while (!IS_DUMMY_REL(rel) &&
		   (i = bms_next_member(rel->live_parts, i)) >= 0)
	{
		if (rel->part_rels == NULL || rel->part_rels[i] == NULL)
			continue;
		if (!mark_live_leaves(root, br, rel->part_rels[i]))
		{
			*reasons = lappend(*reasons,
							   psprintf("the partitions of %s changed while planning", br->alias));
			return NULL;
		}
	}

	return take_quals(root, rel, br, reasons) ? br : NULL;
}

/*
 * is_dimension_rel
 *		A table that is not sharded but whose rows colojoin can read on the
 *		coordinator and broadcast to the nodes of a group (a small dimension
 *		table joined to a sharded fact): a plain table, a materialized view
 *		or a foreign table of its own, read as the query reads it.
 */
static bool
is_dimension_rel(PlannerInfo *root, RelOptInfo *rel)
{
	RangeTblEntry *rte;

	if (rel->reloptkind != RELOPT_BASEREL || rel->rtekind != RTE_RELATION)
		return false;
	rte = planner_rt_fetch(rel->relid, root);
	if (rte->tablesample != NULL)
		return false;
	return rte->relkind == RELKIND_RELATION || rte->relkind == RELKIND_MATVIEW ||
		(rte->relkind == RELKIND_FOREIGN_TABLE && !get_rel_relispartition(rte->relid));
}

/*
 * make_dimension_rel
 *		A dimension table as a member of a group: it has no partitions
 *		(table NULL), is only ever broadcast, and is read on the coordinator.
 */
static CjBaseRel *
make_dimension_rel(PlannerInfo *root, RelOptInfo *rel, List **reasons)
{
	RangeTblEntry *rte = planner_rt_fetch(rel->relid, root);
	CjBaseRel  *br = palloc0(sizeof(CjBaseRel));

	br->rtindex = rel->relid;
	br->relid = rte->relid;
	br->table = NULL;
	br->local_inh = rte->inh;
	br->alias = rte->eref->aliasname;
	br->checkasuser = rte->checkAsUser;
	return take_quals(root, rel, br, reasons) ? br : NULL;
}

/*
 * cj_group_for_rel
 *		The colocated group a join input stands for: a sharded table on its
 *		own, or a join relation colojoin already accepted.
 */
CjJoinGroup *
cj_group_for_rel(PlannerInfo *root, RelOptInfo *rel, List **reasons)
{
	if (rel->reloptkind == RELOPT_BASEREL)
	{
		CjBaseRel  *br = make_base_rel(root, rel, reasons);
		CjJoinGroup *g;
		CjJoinTree *t;

		if (br == NULL)
			return NULL;
		t = palloc0(sizeof(CjJoinTree));
		t->is_base = true;
		t->base = 0;
		g = palloc0(sizeof(CjJoinGroup));
		g->rel = rel;
		g->rels = list_make1(br);
		g->tree = t;
		return g;
	}
	else
	{
		CjJoinAttempt *a = find_attempt(rel);

		return a ? a->group : NULL;
	}
}

/* can a class produce rows, given which tables have live rows in it? */
bool
cj_tree_produces(CjJoinTree *t, const bool *present)
{
	/* a LATERAL subquery is read in every class (lateral.c) */
	if (t->lateral)
		return true;
	if (t->is_base)
		return present[t->base];
	switch (t->jointype)
	{
		case JOIN_INNER:
		case JOIN_SEMI:
			return cj_tree_produces(t->outer, present) && cj_tree_produces(t->inner, present);
		case JOIN_LEFT:
		case JOIN_ANTI:
			return cj_tree_produces(t->outer, present);
		case JOIN_FULL:
			return cj_tree_produces(t->outer, present) || cj_tree_produces(t->inner, present);
		default:
			return false;
	}
}

static CjJoinTree *
shift_tree(CjJoinTree *t, int offset)
{
	CjJoinTree *c = palloc(sizeof(CjJoinTree));

	memcpy(c, t, sizeof(CjJoinTree));
	if (c->is_base)
		c->base += offset;
	else if (c->lateral == NULL)
	{
		c->outer = shift_tree(t->outer, offset);
		c->inner = shift_tree(t->inner, offset);
	}
	return c;
}

/* the hash remainder of class c (hash class spaces), or -1 */
int
cj_class_remainder(CjJoinGroup *g, int c)
{
	ListCell   *lc;

	/* a space of hash classes alone (dual repartition): c is its remainder */
	if (g->space->ntables == 0)
		return c;
	foreach(lc, g->rels)
	{
		CjBaseRel  *br = lfirst(lc);
		int			m;

		if (br->move != CJ_MOVE_NONE)
			continue;
		m = CJ_MEMBER(g->space, c, br->space_index);
		if (m >= 0 && br->table->strategy == PARTITION_STRATEGY_HASH)
			return br->table->classes[m].bound->remainder;
	}
	return -1;
}

/*
 * moved_present
 *		Whether a moved table can have rows in class c: for copied
 *		partitions, when one of its live partitions refines the class; rows
 *		routed or broadcast may belong to any class.
 */
static bool
moved_present(CjJoinGroup *g, CjBaseRel *br, int c)
{
	int			r;
	int			k;

	if (br->move != CJ_MOVE_PARTITIONS)
		return true;
	r = cj_class_remainder(g, c);
	if (r < 0)
		return true;
	for (k = 0; k < br->table->nclasses; k++)
		if (br->class_live[k] &&
			br->table->classes[k].bound->remainder % br->move_modulus == r)
			return true;
	return false;
}

/*
 * assign_tasks
 *		Decide which classes run and where: a class runs when the join can
 *		produce rows from it, on a node that holds the live leaves of that
 *		class of every table that has them; tasks are spread over the nodes
 *		that qualify.
 */
static bool
assign_tasks(CjJoinGroup *g, List **reasons)
{
	int			nt = list_length(g->rels);
	bool	   *present = palloc(sizeof(bool) * nt);
	List	   *load_nodes = NIL;
	List	   *load_counts = NIL;
	int			c;

	for (c = 0; c < g->space->nclasses; c++)
	{
		List	   *nodes = NIL;
		bool		any_member = false;
		bool		any_live = false;
		bool		first = true;
		int			t;
		Oid			best = InvalidOid;
		int			bestcount = -1;
		ListCell   *lc;
		CjTask	   *task;

		for (t = 0; t < nt; t++)
		{
			CjBaseRel  *br = list_nth(g->rels, t);
			int			m;

			if (br->move != CJ_MOVE_NONE)
			{
				present[t] = moved_present(g, br, c);
				continue;
			}
			m = CJ_MEMBER(g->space, c, br->space_index);
			present[t] = (m >= 0 && br->class_live[m]);
			/* a partition that exists but was pruned away */
			any_member |= (m >= 0 && !br->class_live[m]);
			any_live |= present[t];
		}
		if (!cj_tree_produces(g->tree, present))
		{
			/*
			 * Pruned: pruning removed a partition the class needed; empty:
			 * a table the class needs has no partition for it at all.
			 */
			if (any_member)
				g->npruned++;
			else
				g->nempty++;
			continue;
		}
		(void) any_live;

		for (t = 0; t < nt; t++)
		{
			CjBaseRel  *br = list_nth(g->rels, t);
			int			m;
			CjClass    *cls;
			List	   *here;
			int			l;

			if (!present[t] || br->move != CJ_MOVE_NONE)
				continue;
			m = CJ_MEMBER(g->space, c, br->space_index);
			cls = &br->table->classes[m];
			for (l = 0; l < cls->nleaves; l++)
			{
				if (br->leaf_live[m][l] && !cls->leaves[l].is_foreign)
				{
					*reasons = lappend(*reasons,
									   psprintf("partition %s of %s is not a postgres_fdw foreign table",
												get_rel_name(cls->leaves[l].relid), br->alias));
					return false;
				}
			}
			here = cj_common_nodes(cls, br->leaf_live[m]);
			if (first)
				nodes = here;
			else
				nodes = cj_intersect_nodes(nodes, here);
			first = false;
			if (nodes == NIL)
				break;
		}
		/* and the partitions LATERAL subqueries read in the class */
		nodes = cj_lateral_nodes(g, c, nodes);
		if (nodes == NIL && g->trust_placement)
		{
			/*
			 * The user vouches that equal classes sit together (servers of
			 * different names reaching one node, say): run where the first
			 * table's class is.
			 */
			for (t = 0; t < nt && nodes == NIL; t++)
			{
				CjBaseRel  *br = list_nth(g->rels, t);
				int			m = br->space_index < 0 ? -1 :
					CJ_MEMBER(g->space, c, br->space_index);

				if (present[t] && m >= 0)
					nodes = cj_common_nodes(&br->table->classes[m], br->leaf_live[m]);
			}
		}
		if (nodes == NIL)
		{
			StringInfoData where;

			initStringInfo(&where);
			for (t = 0; t < nt; t++)
			{
				CjBaseRel  *br = list_nth(g->rels, t);
				int			m;
				List	   *here;
				ListCell   *lc2;

				if (!present[t] || br->move != CJ_MOVE_NONE)
					continue;
				m = CJ_MEMBER(g->space, c, br->space_index);
				here = cj_common_nodes(&br->table->classes[m], br->leaf_live[m]);
				appendStringInfo(&where, "%s%s on ", where.len ? ", " : "",
								 br->alias);
				if (here == NIL)
					appendStringInfoString(&where, "several nodes");
				foreach(lc2, here)
					appendStringInfo(&where, "%s%s", lc2 == list_head(here) ? "" : "/",
									 cj_node_name(lfirst_oid(lc2)));
			}
			*reasons = lappend(*reasons,
							   psprintf("no node holds partition class %s of every table (%s)",
										cj_class_label(g->space, c), where.data));
			return false;
		}

		/*
		 * Spread: the qualifying node with the fewest tasks so far, among
		 * those that did not fail moments ago if there are such.
		 */
		foreach(lc, nodes)
		{
			Oid			node = lfirst_oid(lc);
			int			count = 0;
			ListCell   *ln,
					   *lcnt;

			forboth(ln, load_nodes, lcnt, load_counts)
			{
				if (lfirst_oid(ln) == node)
					count = lfirst_int(lcnt);
			}
			if (cj_node_failed_recently(node))
				count += 1000000;
			if (bestcount < 0 || count < bestcount)
			{
				best = node;
				bestcount = count;
			}
		}
		{
			ListCell   *ln,
					   *lcnt;
			bool		found = false;

			forboth(ln, load_nodes, lcnt, load_counts)
			{
				if (lfirst_oid(ln) == best)
				{
					lfirst_int(lcnt)++;
					found = true;
				}
			}
			if (!found)
			{
				load_nodes = lappend_oid(load_nodes, best);
				load_counts = lappend_int(load_counts, 1);
			}
		}
		task = palloc(sizeof(CjTask));
		task->cls = c;
		task->serverid = best;
		/* where the class can run if best cannot be reached (failover) */
		task->alternatives = list_delete_oid(list_copy(nodes), best);
		g->tasks = lappend(g->tasks, task);
	}
	return true;
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

		if (br->has_security_quals && bms_is_member(br->rtindex, relids))
			return true;
	}
	return false;
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

			/*
			 * A node evaluates its WHERE in an order of its own, so a
			 * condition that could leak its rows' values (a function that
			 * is not leakproof) may share it with the table's security
			 * quals only if it has none: otherwise it runs on the
			 * coordinator, after them, as PostgreSQL runs it.
			 */
			if (cj_is_shippable(root, q, NULL) &&
				(level == lowest || !contain_leaked_vars((Node *) q)))
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
			if (((CjBaseRel *) lfirst(lr))->rtindex == v->varno &&
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
	/* a LATERAL subquery's columns are not tracked: never inside EXISTS */
	if ((t->jointype == JOIN_SEMI || t->jointype == JOIN_ANTI) &&
		cj_tree_has_lateral(t->inner))
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
 * has_references: the group reads reference tables whole in every class
 * (they are joined to sharded tables; a group of reference tables alone
 * treats them as the one-partition tables they are)
 */
int
cj_group_references(CjJoinGroup *g)
{
	ListCell   *lc;
	int			refs = 0;
	bool		others = false;

	foreach(lc, g->rels)
	{
		CjBaseRel  *br = (CjBaseRel *) lfirst(lc);

		if (br->move != CJ_MOVE_NONE)
			continue;
		if (br->reference)
			refs++;
		else
			others = true;
	}
	return others ? refs : 0;
}

static bool
has_references(CjJoinGroup *g)
{
	return cj_group_references(g) > 0;
}

static void
describe_keys(CjJoinGroup *g)
{
	CjBaseRel  *first = linitial(g->rels);
	StringInfoData buf;
	int			p;

	initStringInfo(&buf);
	for (p = 0; p < first->table->partnatts; p++)
	{
		ListCell   *lc;
		bool		firstrel = true;

		if (p > 0)
			appendStringInfoString(&buf, ", ");
		foreach(lc, g->rels)
		{
			CjBaseRel  *br = (CjBaseRel *) lfirst(lc);

			if (br->move != CJ_MOVE_NONE || (br->reference && has_references(g)))
				continue;
			if (!firstrel)
				appendStringInfoString(&buf, " = ");
			appendStringInfoString(&buf, cj_key_name(lfirst(lc), p));
			firstrel = false;
		}
	}
	if (has_references(g))
	{
		ListCell   *lc;
		bool		firstref = true;

		appendStringInfoString(&buf, ", with reference table");
		foreach(lc, g->rels)
		{
			CjBaseRel  *br = (CjBaseRel *) lfirst(lc);

			if (br->reference && br->space_index >= 0)
			{
				appendStringInfo(&buf, "%s %s", firstref ? "" : ",", br->alias);
				firstref = false;
			}
		}
	}
	cj_lateral_describe(g->tree, &buf);
	g->keys_text = buf.data;
}

/*
 * cj_finish_group
 *		The rules that hold for a group whatever joined it: bounds (rule 3)
 *		and placement (rule 5) give the tasks; every table read as one user;
 *		conditions split into remote and local ones.
 */
bool
cj_finish_group(PlannerInfo *root, CjJoinGroup *g, List **reasons)
{
	CjBaseRel  *first = linitial(g->rels);
	CjHint	   *trust = cj_hint_trust_colocation(cj_hints);
	List	   *tables = NIL;
	ListCell   *lc;

	bool		refs = has_references(g);
	List	   *reftables = NIL;

	/*
	 * The class space is that of the tables read in place; reference
	 * tables joined to sharded ones come after them, whole in every class.
	 */
	foreach(lc, g->rels)
	{
		CjBaseRel  *br = lfirst(lc);

		if (br->move != CJ_MOVE_NONE)
			br->space_index = -1;
		else if (!(refs && br->reference))
		{
			br->space_index = list_length(tables);
			tables = lappend(tables, br->table);
		}
	}
	foreach(lc, g->rels)
	{
		CjBaseRel  *br = lfirst(lc);

		if (br->move == CJ_MOVE_NONE && refs && br->reference)
		{
			br->space_index = list_length(tables) + list_length(reftables);
			reftables = lappend(reftables, br->table);
		}
	}

	if (trust)
	{
		g->trust_placement = true;
		trust->used = true;
		g->hints_used = lappend(g->hints_used, trust);
	}
	/* a group that moves every table (dual repartition) has its tasks */
	if (g->space == NULL)
	{
		g->space = cj_build_class_space(tables, reasons);
		if (g->space == NULL)
			return false;
		if (reftables != NIL)
		{
			CjTable   **ra = palloc(sizeof(CjTable *) * list_length(reftables));
			int			k = 0;

			foreach(lc, reftables)
				ra[k++] = (CjTable *) lfirst(lc);
			g->space = cj_space_add_references(g->space, k, ra);
		}
		if (!assign_tasks(g, reasons))
			return false;
	}

	/* every base relation's user must be the same to share connections */
	foreach(lc, g->rels)
	{
		CjBaseRel  *br = lfirst(lc);

		if (br->checkasuser != first->checkasuser)
		{
			*reasons = lappend(*reasons,
							   pstrdup("the tables are read as different users"));
			return false;
		}
	}
	g->userid = first->checkasuser;

	g->local_quals = NIL;
	g->local_levels = NIL;
	if (!check_shippable(root, g, g->tree, CJ_SCOPE_TOP, reasons))
		return false;
	describe_keys(g);
	return true;
}

/* private copies: a group sets fields of its tables that depend on it */
List *
cj_copy_rels(List *rels)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, rels)
	{
		CjBaseRel  *br = palloc(sizeof(CjBaseRel));

		memcpy(br, lfirst(lc), sizeof(CjBaseRel));
		result = lappend(result, br);
	}
	return result;
}

/* the rows the group's tables hold after their own conditions */
static double
group_input_rows(PlannerInfo *root, CjJoinGroup *g)
{
	double		rows = 0;
	ListCell   *lc;

	foreach(lc, g->rels)
		rows += find_base_rel(root, ((CjBaseRel *) lfirst(lc))->rtindex)->rows;
	return rows;
}

/*
 * new_scan_path
 *		A ColocatedJoin path with the given target, size and costs.  ExecScan
 *		projects for it: no Result node goes on top.
 */
static Path *
new_scan_path(RelOptInfo *parent, PathTarget *target, double rows,
			  Cost startup, Cost total, List *private)
{
	CustomPath *cpath = makeNode(CustomPath);

	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = parent;
	cpath->path.pathtarget = target;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = false;
	cpath->path.parallel_workers = 0;
	cpath->path.rows = rows;
	cpath->path.startup_cost = startup;
	cpath->path.total_cost = total;
	cpath->path.pathkeys = NIL;
	cpath->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	cpath->custom_paths = NIL;
	cpath->custom_private = private;
	cpath->methods = &cj_path_methods;
	return (Path *) cpath;
}

/*
 * cj_orient_join
 *		A join as the group builders take it: a right join turned round into
 *		a left one (inputs swapped); false for the unique-ified variants of a
 *		semi join, which another call of the hook covers as the semi join.
 */
bool
cj_orient_join(RelOptInfo **outerrel, RelOptInfo **innerrel, JoinType *jointype)
{
	if (*jointype == JOIN_RIGHT)
	{
		RelOptInfo *tmp = *outerrel;

		*outerrel = *innerrel;
		*innerrel = tmp;
		*jointype = JOIN_LEFT;
	}
	return *jointype == JOIN_INNER || *jointype == JOIN_LEFT ||
		*jointype == JOIN_FULL || *jointype == JOIN_SEMI ||
		*jointype == JOIN_ANTI;
}

/*
 * cj_split_join_clauses
 *		The join's own conditions (joinquals) and, for an outer join, those
 *		applied above it (otherquals).  false, with the reason, for a
 *		condition that does not depend on the join's rows (PostgreSQL
 *		evaluates it once, as a gating qual).
 */
bool
cj_split_join_clauses(RelOptInfo *joinrel, JoinType jointype,
					  JoinPathExtraData *extra, List **joinquals,
					  List **otherquals, List **reasons)
{
	ListCell   *lc;

	foreach(lc, extra->restrictlist)
	{
		if (lfirst_node(RestrictInfo, lc)->pseudoconstant)
		{
			*reasons = lappend(*reasons,
							   pstrdup("the join has a condition that does not depend on its rows"));
			return false;
		}
	}
	if (jointype == JOIN_INNER || jointype == JOIN_SEMI)
	{
		foreach(lc, extra->restrictlist)
			*joinquals = lappend(*joinquals, lfirst_node(RestrictInfo, lc)->clause);
	}
	else
		extract_actual_join_clauses(extra->restrictlist, joinrel->relids,
									joinquals, otherquals);
	return true;
}

/*
 * try_colocated_join
 *		The colocated group for joinrel built from outerrel and innerrel, or
 *		NULL with reasons.
 */
/*
 * Every table of the group is a reference table read in place: nothing
 * moved (moves belong to the class space of their group).
 */
static bool
side_of_references(CjJoinGroup *g)
{
	ListCell   *lc;

	foreach(lc, g->rels)
	{
		CjBaseRel  *br = lfirst(lc);

		if (br->move != CJ_MOVE_NONE || !br->reference_capable)
			return false;
	}
	return g->rels != NIL;
}

static CjJoinGroup *
try_colocated_join(PlannerInfo *root, RelOptInfo *joinrel,
				   RelOptInfo *outerrel, RelOptInfo *innerrel,
				   JoinType jointype, JoinPathExtraData *extra,
				   List **reasons)
{
	CjJoinGroup *og,
			   *ig,
			   *g;
	CjJoinTree *t;
	CjBaseRel  *first;
	List	   *joinquals = NIL;
	List	   *otherquals = NIL;
	ListCell   *lc;
	int			p;
	int			nouter;
	bool		orefs;
	bool		irefs;

	if (!cj_orient_join(&outerrel, &innerrel, &jointype))
		return NULL;

	og = cj_group_for_rel(root, outerrel, reasons);
	ig = cj_group_for_rel(root, innerrel, reasons);
	if (og == NULL || ig == NULL)
		return NULL;

	/*
	 * A side made of reference tables joins any group without a key: each
	 * class reads it whole.  Only where no row of it is kept on its own:
	 * preserved by an outer join (or the outer side of a semi or anti
	 * join), every task would keep it.  An inner join is turned round so
	 * that the sharded side comes first.
	 */
	orefs = side_of_references(og);
	irefs = side_of_references(ig);
	if (orefs && irefs)
	{
		*reasons = lappend(*reasons, pstrdup("both sides are reference tables"));
		return NULL;
	}
	if (orefs && jointype != JOIN_INNER)
	{
		*reasons = lappend(*reasons,
						   psprintf("reference table %s is on the side the join keeps", og->rels ?
									((CjBaseRel *) linitial(og->rels))->alias : "?"));
		return NULL;
	}
	if (irefs && jointype == JOIN_FULL)
	{
		*reasons = lappend(*reasons,
						   psprintf("a full join keeps the rows of reference table %s",
									((CjBaseRel *) linitial(ig->rels))->alias));
		return NULL;
	}
	if (orefs)
	{
		CjJoinGroup *tg = og;
		RelOptInfo *tr = outerrel;

		og = ig;
		ig = tg;
		outerrel = innerrel;
		innerrel = tr;
		irefs = true;
	}

	if (!cj_split_join_clauses(joinrel, jointype, extra, &joinquals,
							   &otherquals, reasons))
		return NULL;

	g = palloc0(sizeof(CjJoinGroup));
	g->rel = joinrel;
	g->rels = cj_copy_rels(list_concat(list_copy(og->rels), ig->rels));
	nouter = list_length(og->rels);
	/* the reference side is read whole in every class of this group */
	if (irefs)
		foreach(lc, g->rels)
			if (foreach_current_index(lc) >= nouter)
				((CjBaseRel *) lfirst(lc))->reference = true;

	/* DESIGN §2 rule 2: the partition schemes agree (reference tables aside) */
	first = NULL;
	foreach(lc, g->rels)
	{
		CjBaseRel  *br = lfirst(lc);

		if (br->move != CJ_MOVE_NONE || (br->reference && irefs))
			continue;
		if (first == NULL)
			first = br;
		else if (!cj_schemes_compatible(first->table, br->table, reasons))
			return NULL;
	}
	if (first == NULL)
		return NULL;

	/*
	 * Rule 4: every key column of the inner side is equated with the same
	 * key column of some table of the outer side.  For inner and semi joins
	 * an equivalence class proves it too (it also covers "a.k = b.k AND a.k
	 * = 5", where the planner keeps no join clause); outer joins need the
	 * equality in their own ON clause.
	 */
	for (p = 0; !irefs && p < first->table->partnatts; p++)
	{
		bool		found = false;
		ListCell   *lo,
				   *li;

		foreach(lo, og->rels)
		{
			CjBaseRel  *o = lfirst(lo);

			/* a reference table's key says nothing of a row's class */
			if (o->move != CJ_MOVE_NONE || o->reference)
				continue;
			foreach(li, ig->rels)
			{
				CjBaseRel  *i = lfirst(li);

				if (i->move != CJ_MOVE_NONE || i->reference)
					continue;
				if (cj_keys_equated(root, joinquals,
								 jointype == JOIN_INNER || jointype == JOIN_SEMI,
								 o, i, p))
				{
					found = true;
					break;
				}
			}
			if (found)
				break;
		}
		if (!found)
		{
			CjBaseRel  *o = linitial(og->rels);
			CjBaseRel  *i = linitial(ig->rels);

			*reasons = lappend(*reasons,
							   psprintf("the join does not equate partition key %s with %s%s",
										cj_key_name(o, p), cj_key_name(i, p),
										(jointype == JOIN_INNER || jointype == JOIN_SEMI) ? "" :
										" in its ON clause"));
			return NULL;
		}
	}

	/* the join tree */
	t = palloc0(sizeof(CjJoinTree));
	t->jointype = jointype;
	t->outer = og->tree;
	t->inner = shift_tree(ig->tree, nouter);
	t->joinquals = joinquals;
	t->otherquals = otherquals;
	g->tree = t;

	if (!cj_finish_group(root, g, reasons))
		return NULL;
	if (!cj_check_target(g, joinrel, reasons))
		return NULL;
	/* what moved below this join still moves */
	if (og->move_text && ig->move_text)
		g->move_text = psprintf("%s; %s", og->move_text, ig->move_text);
	else
		g->move_text = og->move_text ? og->move_text : ig->move_text;
	return g;
}

/* ----------------------------------------------------------------
 *		Redistribution (DESIGN §3): moving the smaller side; how it
 *		moves is move_choice.c's
 * ----------------------------------------------------------------
 */

static bool
live_leaves_foreign(CjBaseRel *br, List **reasons)
{
	int			c,
				l;

	for (c = 0; c < br->table->nclasses; c++)
		for (l = 0; l < br->table->classes[c].nleaves; l++)
			if (br->leaf_live[c][l] && !br->table->classes[c].leaves[l].is_foreign)
			{
				*reasons = lappend(*reasons,
								   psprintf("partition %s of %s is not a postgres_fdw foreign table",
											get_rel_name(br->table->classes[c].leaves[l].relid),
											br->alias));
				return false;
			}
	return true;
}

static int	move_name_counter = 0;

/* every condition of a join tree */
static List *
tree_quals(CjJoinTree *t)
{
	if (t->is_base)
		return NIL;
	return list_concat(list_concat(list_copy(t->joinquals), t->otherquals),
					   list_concat(tree_quals(t->outer), tree_quals(t->inner)));
}

/*
 * broadcast_inner_group
 *		The inner side of an outer, semi or anti join is a group of its own
 *		(a join PostgreSQL cannot take apart, such as the inner side of
 *		"a LEFT JOIN (b JOIN c ON ...) ON ..."): when every table of it is
 *		small, each is broadcast into the classes of the outer group and the
 *		inner join runs whole in every task.  Tables the inner group moved
 *		itself are broadcast as well: their routing served its classes.
 */
static CjJoinGroup *
broadcast_inner_group(PlannerInfo *root, RelOptInfo *joinrel,
					  RelOptInfo *outerrel, RelOptInfo *innerrel,
					  JoinType jointype, List *joinquals, List *otherquals,
					  List **reasons)
{
	CjJoinGroup *ag = cj_group_for_rel(root, outerrel, reasons);
	CjJoinGroup *mg = cj_group_for_rel(root, innerrel, reasons);
	CjJoinGroup *g;
	CjJoinTree *t;
	List	   *moved;
	List	   *exprs;
	ListCell   *lc;
	char	   *text;

	if (ag == NULL || mg == NULL ||
		((CjBaseRel *) linitial(ag->rels))->move != CJ_MOVE_NONE)
		return NULL;
	if (ag->rel->reloptkind == RELOPT_BASEREL && !cj_finish_group(root, ag, reasons))
		return NULL;
	moved = cj_copy_rels(mg->rels);
	exprs = list_concat(list_make3(joinrel->reltarget->exprs, joinquals,
								   otherquals),
						tree_quals(mg->tree));
	text = ag->move_text;
	foreach(lc, moved)
	{
		CjBaseRel  *br = lfirst(lc);

		if ((br->table != NULL && !live_leaves_foreign(br, reasons)) ||
			!cj_broadcast_allowed(br, find_base_rel(root, br->rtindex), reasons) ||
			!cj_move_columns(br, (Node *) lappend(list_copy(exprs), br->quals),
							 reasons))
			return NULL;
		br->move = CJ_MOVE_BROADCAST;
		br->reference = false;
		br->move_name = psprintf("colojoin_move_%d_%u", ++move_name_counter,
								 br->rtindex);
		text = text ?
			psprintf("%s; %s", text, cj_move_description(br, linitial(ag->rels))) :
			cj_move_description(br, linitial(ag->rels));
	}

	g = palloc0(sizeof(CjJoinGroup));
	g->rel = joinrel;
	g->rels = list_concat(cj_copy_rels(ag->rels), moved);
	t = palloc0(sizeof(CjJoinTree));
	t->jointype = jointype;
	t->outer = ag->tree;
	t->inner = shift_tree(mg->tree, list_length(ag->rels));
	t->joinquals = joinquals;
	t->otherquals = otherquals;
	g->tree = t;
	if (!cj_finish_group(root, g, reasons) || !cj_check_target(g, joinrel, reasons))
		return NULL;
	g->move_text = text;
	return g;
}

/*
 * try_redistributed_join
 *		When a join is not colocated, a group on one side and a sharded table
 *		on the other that may move (it is not preserved by an outer join):
 *		the table's rows go to the nodes of the group's classes and every
 *		class joins there.
 */
static CjJoinGroup *
try_redistributed_join(PlannerInfo *root, RelOptInfo *joinrel,
					   RelOptInfo *outerrel, RelOptInfo *innerrel,
					   JoinType jointype, JoinPathExtraData *extra,
					   RelOptInfo *must_move, int forced, List **reasons)
{
	List	   *joinquals = NIL;
	List	   *otherquals = NIL;
	int			attempt;
	CjJoinGroup *best = NULL;
	double		best_moved = 0;

	if (!cj_orient_join(&outerrel, &innerrel, &jointype))
		return NULL;
	if (jointype == JOIN_FULL)
	{
		*reasons = lappend(*reasons,
						   pstrdup("a full join keeps the rows of both sides, so neither side may move"));
		return NULL;
	}
	if (cj_xact_has_dml())
	{
		*reasons = lappend(*reasons,
						   pstrdup("this transaction wrote through colojoin: rows are not moved until it commits (a move reads nodes through connections that do not see the writes)"));
		return NULL;
	}
	if (must_move != NULL && must_move == outerrel && jointype != JOIN_INNER)
	{
		*reasons = lappend(*reasons,
						   psprintf("relation %s is the side the join preserves, so it cannot move",
									joinrel_names(root, must_move)));
		return NULL;
	}
	if (!cj_split_join_clauses(joinrel, jointype, extra, &joinquals,
							   &otherquals, reasons))
		return NULL;

	/* the side that moves must not be preserved by the join */
	for (attempt = 0; attempt < 2; attempt++)
	{
		RelOptInfo *arel = attempt == 0 ? outerrel : innerrel;
		RelOptInfo *mrel = attempt == 0 ? innerrel : outerrel;
		CjJoinGroup *ag;
		CjJoinGroup *g;
		CjBaseRel  *mb;
		CjJoinTree *t;
		CjJoinTree *leaf;

		if (attempt == 1 && jointype != JOIN_INNER)
			break;
		if (mrel->reloptkind != RELOPT_BASEREL ||
			(must_move != NULL && mrel != must_move))
			continue;
		ag = cj_group_for_rel(root, arel, reasons);
		if (ag == NULL)
			continue;
		if (ag->rel->reloptkind == RELOPT_BASEREL &&
			!cj_finish_group(root, ag, reasons))
			continue;
		mb = is_dimension_rel(root, mrel) ?
			make_dimension_rel(root, mrel, reasons) :
			make_base_rel(root, mrel, reasons);
		if (mb == NULL || (mb->table != NULL && !live_leaves_foreign(mb, reasons)))
			continue;
		if (((CjBaseRel *) linitial(ag->rels))->move != CJ_MOVE_NONE)
			continue;

		mb->move = cj_choose_move(root, ag, mb, mrel, joinquals, jointype,
								  forced, reasons);
		if (mb->move == CJ_MOVE_NONE)
			continue;

		/* the columns the moved rows must carry */
		if (!cj_move_columns(mb, (Node *) list_make4(joinrel->reltarget->exprs,
													 joinquals, otherquals,
													 mb->quals),
							 reasons))
			continue;
		mb->move_name = psprintf("colojoin_move_%d_%u", ++move_name_counter,
								 mb->rtindex);

		g = palloc0(sizeof(CjJoinGroup));
		g->rel = joinrel;
		g->rels = lappend(cj_copy_rels(ag->rels), mb);
		leaf = palloc0(sizeof(CjJoinTree));
		leaf->is_base = true;
		leaf->base = list_length(g->rels) - 1;
		t = palloc0(sizeof(CjJoinTree));
		t->jointype = jointype;
		t->outer = ag->tree;
		t->inner = leaf;
		t->joinquals = joinquals;
		t->otherquals = otherquals;
		g->tree = t;
		if (!cj_finish_group(root, g, reasons) ||
			!cj_check_target(g, joinrel, reasons))
			continue;
		g->move_text = ag->move_text ?
			psprintf("%s; %s", ag->move_text, cj_move_description(mb, linitial(g->rels))) :
			cj_move_description(mb, linitial(g->rels));

		/*
		 * Of the ways that work, the one moving the fewest rows: a table
		 * the query lets its nodes aggregate first moves its groups.
		 */
		{
			double		moved = cj_moved_rows(root, g, mb);
			double		grouped = cj_pre_aggregated_rows(root, g, mb);

			if (grouped >= 0 && cj_pre_aggregate_hint(root, mb->rtindex))
				moved = -1;		/* PreAggregate(mb): this way */
			else if (grouped >= 0 && grouped < moved)
				moved = grouped;

			if (best == NULL || moved < best_moved)
			{
				best = g;
				best_moved = moved;
			}
		}
	}
	if (best == NULL && jointype != JOIN_INNER && forced == CJ_MOVE_NONE &&
		must_move == NULL && innerrel->reloptkind == RELOPT_JOINREL)
		best = broadcast_inner_group(root, joinrel, outerrel, innerrel,
									 jointype, joinquals, otherquals, reasons);
	return best;
}

/*
 * add_colocated_path
 *		Cost the group honestly and offer it to the planner.
 *
 * The nodes work at once, so the remote scan and join cost is divided by
 * the number of nodes; every result row crosses the network and is turned
 * into a tuple here, which is what usually decides against pulling both
 * inputs to the coordinator.
 */
static void
add_colocated_path(PlannerInfo *root, RelOptInfo *joinrel, CjJoinGroup *g,
				   bool forced)
{
	double		input_rows = group_input_rows(root, g);
	int			nnodes = cj_task_node_count(g);
	double		rows = joinrel->rows;
	int			width = joinrel->reltarget->width;
	Cost		startup;
	Cost		remote;
	Cost		transfer;
	Cost		total;
	QualCost	local_cost;

	startup = 100.0 + 0.5 * list_length(g->tasks) + cj_moves_cost(root, g);
	remote = (input_rows * (cpu_tuple_cost + 2 * cpu_operator_cost) +
			  rows * cpu_tuple_cost) / nnodes;
	transfer = rows * (cpu_tuple_cost + width * 0.0001);
	cost_qual_eval(&local_cost, g->local_quals, root);

	total = startup + remote + transfer +
		local_cost.startup + local_cost.per_tuple * rows;
	if (forced)
	{
		/* a hint asked for it: nothing else may look cheaper */
		startup = 0;
		total = 0;
	}
	/* the group is found again from joinrel (custom_private stays NIL) */
	add_path(joinrel, new_scan_path(joinrel, joinrel->reltarget, rows,
									startup, total, NIL));
}

/* the names of a join relation's base relations, for the decision log */
static char *
joinrel_names(PlannerInfo *root, RelOptInfo *rel)
{
	StringInfoData buf;
	int			i = -1;

	initStringInfo(&buf);
	while ((i = bms_next_member(rel->relids, i)) >= 0)
	{
		RangeTblEntry *rte;

		if (i >= root->simple_rel_array_size || root->simple_rte_array[i] == NULL)
			continue;
		rte = root->simple_rte_array[i];
		appendStringInfo(&buf, "%s%s", buf.len ? ", " : "",
						 rte->eref ? rte->eref->aliasname : "?");
	}
	return buf.data;
}

/* does a hint name relation rti of the query, by alias or table name? */
static bool
rel_has_name(PlannerInfo *root, int rti, const char *name)
{
	RangeTblEntry *rte;

	if (rti >= root->simple_rel_array_size || root->simple_rte_array[rti] == NULL)
		return false;
	rte = root->simple_rte_array[rti];
	if (rte->eref && strcmp(rte->eref->aliasname, name) == 0)
		return true;
	if (rte->rtekind == RTE_RELATION)
	{
		char	   *relname = get_rel_name(rte->relid);

		if (relname && strcmp(relname, name) == 0)
			return true;
	}
	return false;
}

/*
 * hint_covers
 *		Every relation the hint names is among relids; with exact, the hint
 *		names exactly the relations of relids.
 */
static bool
hint_covers(PlannerInfo *root, CjHint *hint, Relids relids, bool exact)
{
	ListCell   *lc;

	foreach(lc, hint->names)
	{
		int			i = -1;
		bool		found = false;

		while ((i = bms_next_member(relids, i)) >= 0)
		{
			if (rel_has_name(root, i, lfirst(lc)))
			{
				found = true;
				break;
			}
		}
		if (!found)
			return false;
	}
	return !exact || list_length(hint->names) == bms_num_members(relids);
}

/* the first valid hint of one of kinds covering relids */
static CjHint *
find_hint(PlannerInfo *root, Relids relids, bool exact, CjHintKind kind1,
		  CjHintKind kind2)
{
	ListCell   *lc;

	if (cj_hints == NULL)
		return NULL;
	foreach(lc, cj_hints->hints)
	{
		CjHint	   *h = lfirst(lc);

		if (h->valid && (h->kind == kind1 || h->kind == kind2) &&
			hint_covers(root, h, relids, exact))
			return h;
	}
	return NULL;
}

/* the PreAggregate hint naming relation rtindex, if any */
CjHint *
cj_pre_aggregate_hint(PlannerInfo *root, Index rtindex)
{
	Relids		relids = bms_make_singleton(rtindex);
	CjHint	   *h = find_hint(root, relids, true, CJ_HINT_PRE_AGGREGATE,
							  CJ_HINT_PRE_AGGREGATE);

	bms_free(relids);
	return h;
}

/*
 * colocated_hint_over: a ColocatedJoin hint naming every relation of relids
 * (and perhaps more): the group of this smaller join is needed to build the
 * hinted one, even where the settings would not offer it on its own.
 */
static CjHint *
colocated_hint_over(PlannerInfo *root, Relids relids)
{
	ListCell   *lc;

	if (cj_hints == NULL)
		return NULL;
	foreach(lc, cj_hints->hints)
	{
		CjHint	   *h = lfirst(lc);
		int			i = -1;
		bool		all = true;

		if (!h->valid || h->kind != CJ_HINT_COLOCATED_JOIN)
			continue;
		while (all && (i = bms_next_member(relids, i)) >= 0)
		{
			ListCell   *ln;
			bool		named = false;

			foreach(ln, h->names)
				if (rel_has_name(root, i, lfirst(ln)))
					named = true;
			all = named;
		}
		if (all)
			return h;
	}
	return NULL;
}

static bool
is_group_input(PlannerInfo *root, RelOptInfo *rel)
{
	CjJoinAttempt *a;

	if (is_sharded_baserel(root, rel))
		return true;
	if (rel->reloptkind != RELOPT_JOINREL)
		return false;
	a = find_attempt(rel);
	return a != NULL && a->group != NULL;
}

static void
cj_join_pathlist_hook(PlannerInfo *root, RelOptInfo *joinrel,
					  RelOptInfo *outerrel, RelOptInfo *innerrel,
					  JoinType jointype, JoinPathExtraData *extra)
{
	CjJoinAttempt *attempt;
	CjJoinGroup *group;
	List	   *reasons = NIL;
	bool		enabled = colojoin_enable && colojoin_enable_colocated_join;
	CjHint	   *force = NULL;
	CjHint	   *forbid;
	CjHint	   *move_hint = NULL;
	RelOptInfo *must_move = NULL;
	int			forced_move = CJ_MOVE_NONE;
	bool		lateral;
	bool		force_dual = false;

	if (prev_join_pathlist_hook)
		prev_join_pathlist_hook(root, joinrel, outerrel, innerrel,
								jointype, extra);

	if (!enabled && cj_hints == NULL)
		return;
	if (IS_OTHER_REL(joinrel))
		return;

	if (cj_hints != NULL)
	{
		force = find_hint(root, joinrel->relids, true,
						  CJ_HINT_COLOCATED_JOIN, CJ_HINT_COLOCATED_JOIN);
		forbid = find_hint(root, joinrel->relids, false,
						   CJ_HINT_NO_COLOCATED_JOIN, CJ_HINT_LOCAL_JOIN);
		if (forbid)
		{
			forbid->used = true;
			return;
		}

		/*
		 * Hints that ask for a move: RedistributeJoin(a b) on this very join,
		 * Redistribute(b) or BroadcastJoin(b) naming one of its sides.
		 */
		move_hint = find_hint(root, joinrel->relids, true,
							  CJ_HINT_REDISTRIBUTE_JOIN, CJ_HINT_REDISTRIBUTE_JOIN);
		if (move_hint)
			forced_move = CJ_MOVE_REPARTITION;
		if (innerrel->reloptkind == RELOPT_BASEREL)
		{
			CjHint	   *h = find_hint(root, innerrel->relids, true,
									  CJ_HINT_REDISTRIBUTE, CJ_HINT_BROADCAST_JOIN);

			if (h)
			{
				move_hint = h;
				must_move = innerrel;
			}
		}
		if (outerrel->reloptkind == RELOPT_BASEREL)
		{
			CjHint	   *h = find_hint(root, outerrel->relids, true,
									  CJ_HINT_REDISTRIBUTE, CJ_HINT_BROADCAST_JOIN);

			if (h)
			{
				move_hint = h;
				must_move = outerrel;
			}
		}
		if (move_hint && move_hint->kind != CJ_HINT_REDISTRIBUTE_JOIN)
			forced_move = move_hint->kind == CJ_HINT_BROADCAST_JOIN ?
				CJ_MOVE_BROADCAST : CJ_MOVE_REPARTITION;

		/* Redistribute(a b) naming both sides of this join: both move */
		{
			CjHint	   *h = find_hint(root, joinrel->relids, true,
									  CJ_HINT_REDISTRIBUTE, CJ_HINT_REDISTRIBUTE);

			if (h)
			{
				move_hint = h;
				must_move = NULL;
				force_dual = true;
			}
		}
	}
	if (!enabled && force == NULL && move_hint == NULL &&
		colocated_hint_over(root, joinrel->relids) == NULL)
		return;

	/*
	 * Cheap tests first: both inputs must be sharded tables or groups, or
	 * one a group and the other a table to broadcast to it (a dimension)
	 * or a LATERAL subquery to run in its tasks (lateral.c).
	 */
	lateral = (cj_is_lateral_rel(innerrel) && is_group_input(root, outerrel)) ||
		(cj_is_lateral_rel(outerrel) && is_group_input(root, innerrel));
	if (!lateral &&
		!(is_group_input(root, outerrel) && is_group_input(root, innerrel)) &&
		!(is_group_input(root, outerrel) && is_dimension_rel(root, innerrel)) &&
		!(is_dimension_rel(root, outerrel) && is_group_input(root, innerrel)))
	{
		if (force == NULL)
			force = move_hint;
		if (force)
		{
			RelOptInfo *bad = is_group_input(root, outerrel) ? innerrel : outerrel;

			force->failures = list_append_unique(force->failures,
												 makeString(psprintf("relation %s %s",
																	 joinrel_names(root, bad),
																	 bad->reloptkind == RELOPT_BASEREL ?
																	 "is not a sharded table" :
																	 "is not a colocated join itself")));
		}
		return;
	}
	if (joinrel->lateral_relids != NULL || !colojoin_is_active())
		return;

	/* a table that is not sharded can only join a group by broadcast */
	if ((is_dimension_rel(root, outerrel) || is_dimension_rel(root, innerrel)) &&
		force == NULL && move_hint == NULL &&
		!(enabled && colojoin_enable_broadcast))
		return;

	attempt = get_attempt(joinrel);
	if (attempt->group != NULL)
		return;					/* this join already has its path */

	if (cj_xact_wrote_to_shards())
	{
		if (attempt->names == NULL)
			attempt->names = joinrel_names(root, joinrel);
		attempt->reasons = list_append_unique(attempt->reasons,
											  makeString(pstrdup("this transaction wrote to shards through postgres_fdw, whose writes colojoin's connections cannot see")));
		if (force)
			force->failures = list_append_unique(force->failures,
												 llast(attempt->reasons));
		return;
	}

	if (lateral)
		group = cj_try_lateral_join(root, joinrel, outerrel, innerrel,
									jointype, extra, &reasons);
	else if (move_hint == NULL)
		group = try_colocated_join(root, joinrel, outerrel, innerrel, jointype,
								   extra, &reasons);
	else
		group = NULL;
	if (group == NULL && force == NULL && !lateral && !force_dual &&
		(move_hint != NULL ||
		 (enabled && (colojoin_enable_redistribution || colojoin_enable_broadcast))))
	{
		List	   *colocated_reasons = reasons;

		reasons = NIL;
		group = try_redistributed_join(root, joinrel, outerrel, innerrel,
									   jointype, extra, must_move, forced_move,
									   &reasons);
		if (group != NULL)
		{
			/* the decision log says why the rows had to move */
			ListCell   *lr;

			if (attempt->names == NULL)
				attempt->names = joinrel_names(root, joinrel);
			foreach(lr, colocated_reasons)
				attempt->reasons = list_append_unique(attempt->reasons,
													  makeString(lfirst(lr)));
		}
		else
			reasons = list_concat(colocated_reasons, reasons);
	}

	/*
	 * Both sides repartitioned (dual_repartition.c): when asked for, when
	 * nothing else runs the join on the nodes, or instead of a move that
	 * carries more rows (a broadcast).  Why it could not is only worth
	 * saying when it was asked for.
	 */
	if (force == NULL &&
		(force_dual ||
		 (move_hint == NULL && enabled && colojoin_enable_redistribution &&
		  colojoin_enable_dual_repartition &&
		  (group == NULL || group->move_text != NULL))))
	{
		List	   *dual_reasons = NIL;
		CjJoinGroup *dual = cj_try_dual_repartition(root, joinrel, outerrel,
													innerrel, jointype, extra,
													force_dual ? NULL : group,
													force_dual, &dual_reasons);

		if (dual != NULL)
		{
			ListCell   *lr;

			if (attempt->names == NULL)
				attempt->names = joinrel_names(root, joinrel);
			if (group == NULL)
				foreach(lr, reasons)
					attempt->reasons = list_append_unique(attempt->reasons,
														  makeString(lfirst(lr)));
			group = dual;
		}
		else if (force_dual)
			reasons = list_concat(reasons, dual_reasons);
	}
	if (move_hint != NULL)
	{
		if (group != NULL)
		{
			move_hint->used = true;
			group->hints_used = lappend(group->hints_used, move_hint);
			force = move_hint;
		}
		else if (move_hint->failures == NIL)
		{
			ListCell   *lr;

			foreach(lr, reasons)
				move_hint->failures = list_append_unique(move_hint->failures,
														 makeString(lfirst(lr)));
		}
	}
	if (group == NULL)
	{
		ListCell   *lc;

		/*
		 * Keep the reasons of the first way of building this join that
		 * failed: the other order of the same two inputs only repeats them.
		 */
		if (attempt->names == NULL)
			attempt->names = joinrel_names(root, joinrel);
		if (attempt->reasons == NIL)
			foreach(lc, reasons)
				attempt->reasons = list_append_unique(attempt->reasons,
													  makeString(lfirst(lc)));
		if (force && force->failures == NIL)
			foreach(lc, reasons)
				force->failures = list_append_unique(force->failures,
													 makeString(lfirst(lc)));
		return;
	}
	attempt->group = group;
	if (force)
	{
		force->used = true;
		group->hints_used = list_append_unique_ptr(group->hints_used, force);
	}
	/* a part of a hinted join only: kept for it, offered only if allowed */
	if (enabled || force != NULL)
		add_colocated_path(root, joinrel, group, force != NULL);
}

/*
 * A forcing hint that the planner could not follow is an error: running
 * the query another way would silently ignore what the user asked for.
 */
static void
check_forcing_hints(CjHintSet *hints)
{
	ListCell   *lc;

	if (hints == NULL)
		return;
	foreach(lc, hints->hints)
	{
		CjHint	   *h = lfirst(lc);
		StringInfoData buf;
		ListCell   *lr;

		if (!h->valid || h->used ||
			(h->kind != CJ_HINT_COLOCATED_JOIN &&
			 h->kind != CJ_HINT_REDISTRIBUTE_JOIN &&
			 h->kind != CJ_HINT_REDISTRIBUTE &&
			 h->kind != CJ_HINT_BROADCAST_JOIN &&
			 h->kind != CJ_HINT_PRE_AGGREGATE))
			continue;
		initStringInfo(&buf);
		foreach(lr, h->failures)
			appendStringInfo(&buf, "%s%s", buf.len ? "; " : "", strVal(lfirst(lr)));
		if (buf.len > 0)
			buf.data[0] = pg_toupper((unsigned char) buf.data[0]);
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("colojoin hint \"%s\" cannot be honoured", h->text),
				 buf.len > 0 ?
				 errdetail("%s.", buf.data) :
				 h->kind == CJ_HINT_PRE_AGGREGATE ?
				 errdetail("The query does not aggregate over a join colojoin runs that moves %s.",
						   (char *) linitial(h->names)) :
				 errdetail("The relations it names are not joined to each other on their own in this query."),
				 h->kind == CJ_HINT_PRE_AGGREGATE ?
				 errhint("Aggregation before a move needs a table the join moves (repartitioned or broadcast) and a query that aggregates only its columns, or count(*), over inner joins, with aggregates colojoin splits (count, sum, avg, min and max of types without collation, bool and bit aggregates, variances).") :
				 h->kind == CJ_HINT_COLOCATED_JOIN ?
				 errhint("A colocated join needs sharded tables partitioned alike, joined on all their partition keys, with each partition class on one node; remove the hint to let the planner choose.") :
				 h->kind == CJ_HINT_REDISTRIBUTE && list_length(h->names) == 2 ?
				 errhint("Repartitioning both sides needs two sharded tables joined on their own by an equality of values of a built-in type that every node hashes alike.") :
				 errhint("A moved side must be a sharded table that the join does not preserve (not the outer side of a LEFT JOIN, no FULL JOIN); repartitioning needs it joined on the other side's hash partition key.")));
	}
}

/*
 * Report, once per join relation, why colojoin did not take it: only at the
 * end of planning do we know that no way of building it succeeded.
 */
static void
log_decisions(List *attempts)
{
	ListCell   *lc;

	foreach(lc, attempts)
	{
		CjJoinAttempt *a = lfirst(lc);
		StringInfoData buf;
		ListCell   *lr;

		if (a->reasons == NIL || (a->group != NULL && a->group->move_text == NULL))
			continue;
		initStringInfo(&buf);
		foreach(lr, a->reasons)
			appendStringInfo(&buf, "%s%s", buf.len ? "; " : "", strVal(lfirst(lr)));
		buf.data[0] = pg_toupper((unsigned char) buf.data[0]);
		if (a->group != NULL)
			ereport(NOTICE,
					(errmsg("colojoin: join of %s is not colocated; %s instead",
							a->names, a->group->move_text),
					 errdetail("%s.", buf.data)));
		else
			ereport(NOTICE,
					(errmsg("colojoin: join of %s is not colocated",
							a->names),
					 errdetail("%s.", buf.data)));
	}
}

/* the planning colojoin's own hook wraps */
static PlannedStmt *
plan_usual(Query *parse, const char *query_string, int cursorOptions,
		   ParamListInfo boundParams)
{
	if (prev_planner_hook)
		return prev_planner_hook(parse, query_string, cursorOptions,
								 boundParams);
	return standard_planner(parse, query_string, cursorOptions, boundParams);
}

static PlannedStmt *
cj_planner(Query *parse, const char *query_string, int cursorOptions,
		   ParamListInfo boundParams)
{
	List	   *saved = cj_attempts;
	CjHintSet  *saved_hints = cj_hints;
	PlannedStmt *result;

	cj_attempts = NIL;
	cj_hints = NULL;
	PG_TRY();
	{
		if (query_string != NULL && strstr(query_string, "/*+") != NULL &&
			colojoin_is_active())
		{
			const char *text = query_string;
			int			len = -1;

			if (parse->stmt_location > 0)
				text += parse->stmt_location;
			if (parse->stmt_len > 0)
				len = parse->stmt_len;
			cj_hints = cj_parse_hints(text, len, parse);
		}
		result = cj_plan_modify(parse, query_string, cursorOptions,
								boundParams, plan_usual);
		if (result == NULL)
			result = plan_usual(parse, query_string, cursorOptions,
								boundParams);
		check_forcing_hints(cj_hints);
		if (colojoin_log_decisions)
			log_decisions(cj_attempts);
	}
	PG_FINALLY();
	{
		cj_attempts = saved;
		cj_hints = saved_hints;
	}
	PG_END_TRY();
	return result;
}

/* the group accepted for rel in this planner call, or NULL */
CjJoinGroup *
cj_group_of_rel(RelOptInfo *rel)
{
	CjJoinAttempt *a = find_attempt(rel);

	return a ? a->group : NULL;
}

/* the hints of the statement being planned, or NULL */
CjHintSet *
cj_statement_hints(void)
{
	return cj_hints;
}

/* ----------------------------------------------------------------
 *		Groups for the steps above the join (join_group.h)
 * ----------------------------------------------------------------
 */

CjJoinGroup *
cj_group_for_input(PlannerInfo *root, RelOptInfo *rel)
{
	CjJoinAttempt *attempt;
	CjJoinGroup *g;
	List	   *reasons = NIL;

	if (rel->reloptkind == RELOPT_JOINREL)
	{
		attempt = find_attempt(rel);
		return attempt ? attempt->group : NULL;
	}
	if (!is_sharded_baserel(root, rel))
		return NULL;

	/* a sharded table on its own: a group of one, built once */
	attempt = get_attempt(rel);
	if (attempt->group != NULL)
		return attempt->group;
	if (attempt->reasons != NIL)
		return NULL;
	g = cj_group_for_rel(root, rel, &reasons);
	if (g == NULL || !cj_finish_group(root, g, &reasons))
	{
		attempt->names = joinrel_names(root, rel);
		attempt->reasons = lappend(attempt->reasons,
								   makeString(pstrdup("not a sharded table colojoin can run")));
		return NULL;
	}
	attempt->group = g;
	return g;
}

CjUpperSpec *
cj_make_spec(const char *strategy)
{
	CjUpperSpec *spec = palloc0(sizeof(CjUpperSpec));

	spec->strategy = strategy;
	spec->limit = -1;
	return spec;
}

void
cj_remember_upper(RelOptInfo *rel, CjJoinGroup *g, CjUpperSpec *spec)
{
	CjJoinAttempt *a = get_attempt(rel);

	a->group = g;
	a->upper = spec;
}

CjUpperSpec *
cj_recall_upper(RelOptInfo *rel, CjJoinGroup **g)
{
	CjJoinAttempt *a = find_attempt(rel);

	if (a == NULL || a->upper == NULL)
		return NULL;
	*g = a->group;
	return a->upper;
}

bool
cj_group_has_local_quals(CjJoinGroup *g)
{
	return g->local_quals != NIL;
}

int
cj_group_ntasks(CjJoinGroup *g)
{
	return list_length(g->tasks);
}

bool
cj_group_groups_by_key(CjJoinGroup *g, List *exprs)
{
	ListCell   *lc;

	foreach(lc, g->rels)
	{
		CjBaseRel  *br = lfirst(lc);
		int			p;

		if (!cj_tree_keeps_rows_of(g->tree, foreach_current_index(lc)))
			continue;

		/*
		 * Rows routed by another column, or copied to every node, do not
		 * sit in the class of their own key: its values span tasks.
		 */
		if (br->move == CJ_MOVE_REPARTITION || br->move == CJ_MOVE_BROADCAST ||
			(br->reference && has_references(g)))
			continue;
		for (p = 0; p < br->table->partnatts; p++)
		{
			ListCell   *lv;
			ListCell   *le;
			bool		found = false;

			/* an expression key too is fixed by the columns it reads */
			foreach(lv, cj_key_vars(br->table, p, br->rtindex))
			{
				found = false;
				foreach(le, exprs)
					if (cj_is_var_of(lfirst(le), lfirst(lv)))
						found = true;
				if (!found)
					break;
			}
			if (!found && br->table->partattrs[p] == 0)
			{
				/* or the grouping has the key expression itself */
				Node	   *kexpr = copyObject(br->table->partexprs[p]);

				ChangeVarNodes(kexpr, 1, br->rtindex, 0);
				foreach(le, exprs)
					if (equal(strip_implicit_coercions(lfirst(le)),
							  strip_implicit_coercions(kexpr)))
						found = true;
			}
			if (!found)
				break;
		}
		if (p == br->table->partnatts)
			return true;
	}
	return false;
}

Path *
cj_make_upper_path(PlannerInfo *root, RelOptInfo *parent, CjJoinGroup *g,
				   PathTarget *target, CjUpperSpec *spec, double rows)
{
	double		input_rows = group_input_rows(root, g);
	Cost		startup;
	Cost		remote;
	Cost		transfer;

	/*
	 * The nodes scan, join and aggregate at once, the join costed as for the
	 * join path; only results travel.
	 */
	startup = 100.0 + 0.5 * list_length(g->tasks);
	remote = (input_rows * (cpu_tuple_cost + 2 * cpu_operator_cost) +
			  g->rel->rows * cpu_tuple_cost +
			  g->rel->rows * cpu_operator_cost * list_length(spec->remote_exprs)) /
		cj_task_node_count(g);
	transfer = rows * (cpu_tuple_cost + target->width * 0.0001);

	/* paths are never copied: plain pointers, read by cj_plan_custom_path */
	return new_scan_path(parent, target, rows, startup + remote,
						 startup + remote + transfer, list_make2(g, spec));
}

/* ----------------------------------------------------------------
 *		Steps of building a group, for dual_repartition.c
 * ----------------------------------------------------------------
 */

CjBaseRel *
cj_make_base_rel(PlannerInfo *root, RelOptInfo *rel, List **reasons)
{
	return make_base_rel(root, rel, reasons);
}

bool
cj_live_leaves_foreign(CjBaseRel *br, List **reasons)
{
	return live_leaves_foreign(br, reasons);
}

/* the rows all moves of g carry (moved_rows of each moved table) */
double
cj_group_moved_rows(PlannerInfo *root, CjJoinGroup *g)
{
	double		rows = 0;
	ListCell   *lc;

	foreach(lc, g->rels)
		if (((CjBaseRel *) lfirst(lc))->move != CJ_MOVE_NONE)
			rows += cj_moved_rows(root, g, lfirst(lc));
	return rows;
}

/* ----------------------------------------------------------------
 *		From path to plan: the tasks (their SQL is remote_sql.c's), the
 *		moves and run-time pruning
 * ----------------------------------------------------------------
 */



void
cj_planner_init(void)
{
	RegisterCustomScanMethods(&cj_scan_methods);
	prev_join_pathlist_hook = set_join_pathlist_hook;
	set_join_pathlist_hook = cj_join_pathlist_hook;
	prev_planner_hook = planner_hook;
	planner_hook = cj_planner;
}
