/*-------------------------------------------------------------------------
 *
 * group.c
 *	  Building colocated groups (planner_internal.h): a sharded table of
 *	  the query as a CjBaseRel (its live leaves, its conditions in
 *	  security_level order), a group of one, the rules every group obeys
 *	  whatever joined it (bounds, placement: the tasks), and the memory of
 *	  the groups accepted per join relation in one planner call.  The
 *	  strategies (planner.c, dual_repartition.c, lateral.c, move_choice.c,
 *	  pre_aggregate.c) build on these.
 *
 *	  It does not choose a strategy (planner.c) nor decide where a
 *	  condition runs (qual_placement.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "metadata/colocation.h"
#include "metadata/metadata.h"
#include "plan/hints.h"
#include "plan/join_group.h"
#include "plan/planner_internal.h"
#include "remote/node_health.h"
#include "util/settings.h"

/* the join relations examined during the current planner() call */
List	   *cj_attempts = NIL;

CjJoinAttempt *
cj_find_attempt(RelOptInfo *joinrel)
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

CjJoinAttempt *
cj_get_attempt(RelOptInfo *joinrel)
{
	CjJoinAttempt *a = cj_find_attempt(joinrel);

	if (a == NULL)
	{
		a = palloc0(sizeof(CjJoinAttempt));
		a->joinrel = joinrel;
		cj_attempts = lappend(cj_attempts, a);
	}
	return a;
}

/* the group accepted for rel in this planner call, or NULL */
CjJoinGroup *
cj_group_of_rel(RelOptInfo *rel)
{
	CjJoinAttempt *a = cj_find_attempt(rel);

	return a ? a->group : NULL;
}

/*
 * cj_is_sharded_baserel
 *		Cheap test: a base relation scanning a partitioned table with its
 *		partitions (not ONLY).
 */
bool
cj_is_sharded_baserel(PlannerInfo *root, RelOptInfo *rel)
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
		cj_insert_by_level(&br->quals, &br->qual_levels, rinfo->clause,
						(int) rinfo->security_level);
		if (rinfo->security_level < root->qual_security_level)
			br->has_security_quals = true;
	}
	return true;
}

/*
 * cj_make_base_rel
 *		Describe a sharded table of the query, or return NULL (with a
 *		reason) when colojoin cannot take it.
 */
CjBaseRel *
cj_make_base_rel(PlannerInfo *root, RelOptInfo *rel, List **reasons)
{
	RangeTblEntry *rte;
	CjTable    *table;
	CjBaseRel  *br;
	int			i;

	/*
	 * A table pruned to nothing is still a member: it behaves as an empty
	 * relation in every class (an outer join keeps the other side's rows).
	 */
	if (!cj_is_sharded_baserel(root, rel))
	{
		if (cj_is_dimension_rel(root, rel) || cj_is_coordinator_rows_rel(root, rel))
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
 * cj_is_dimension_rel
 *		A table that is not sharded but whose rows colojoin can read on the
 *		coordinator and broadcast to the nodes of a group (a small dimension
 *		table joined to a sharded fact): a plain table, a materialized view
 *		or a foreign table of its own, read as the query reads it.
 */
bool
cj_is_dimension_rel(PlannerInfo *root, RelOptInfo *rel)
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
 * cj_make_dimension_rel
 *		A dimension table as a member of a group: it has no partitions
 *		(table NULL), is only ever broadcast, and is read on the coordinator.
 */
CjBaseRel *
cj_make_dimension_rel(PlannerInfo *root, RelOptInfo *rel, List **reasons)
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
		CjBaseRel  *br = cj_make_base_rel(root, rel, reasons);
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
		CjJoinAttempt *a = cj_find_attempt(rel);

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

	if (!cj_lateral_anchors_in_place(g, reasons))
		return false;
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
 * cj_group_has_references: the group reads reference tables whole in every class
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

bool
cj_group_has_references(CjJoinGroup *g)
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

	/* a space of hash classes alone (dual repartition): its tables' keys */
	if (g->space->ntables == 0 && list_length(g->rels) >= 2)
		appendStringInfo(&buf, "%s = %s",
						 cj_moved_key_text(linitial(g->rels)),
						 cj_moved_key_text(lsecond(g->rels)));
	for (p = 0; g->space->ntables > 0 && p < first->table->partnatts; p++)
	{
		ListCell   *lc;
		bool		firstrel = true;

		if (p > 0)
			appendStringInfoString(&buf, ", ");
		foreach(lc, g->rels)
		{
			CjBaseRel  *br = (CjBaseRel *) lfirst(lc);

			if (br->move != CJ_MOVE_NONE || (br->reference && cj_group_has_references(g)))
				continue;
			if (!firstrel)
				appendStringInfoString(&buf, " = ");
			appendStringInfoString(&buf, cj_key_name(lfirst(lc), p));
			firstrel = false;
		}
	}
	if (cj_group_has_references(g))
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
	CjHint	   *trust = cj_hint_trust_colocation(cj_statement_hints());
	List	   *tables = NIL;
	ListCell   *lc;

	bool		refs = cj_group_has_references(g);
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

	if (!cj_check_shippable(root, g, reasons))
		return false;
	describe_keys(g);
	return true;
}

/*
 * cj_tree_quals
 *		Every join condition of a join tree (its joins' own conditions and
 *		those applied above outer joins), in a new list; none of a LATERAL
 *		subquery's leaf, whose conditions are inside it.
 */
List *
cj_tree_quals(CjJoinTree *t)
{
	if (t == NULL || t->is_base || t->lateral != NULL)
		return NIL;
	return list_concat(list_concat(list_copy(t->joinquals), t->otherquals),
					   list_concat(cj_tree_quals(t->outer), cj_tree_quals(t->inner)));
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

bool
cj_live_leaves_foreign(CjBaseRel *br, List **reasons)
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

/*
 * the rows all moves of g carry (moved_rows of each moved table), with
 * those a stage's own group moves before it
 */
double
cj_group_moved_rows(PlannerInfo *root, CjJoinGroup *g)
{
	double		rows = 0;
	ListCell   *lc;

	foreach(lc, cj_moved_tables(g))
	{
		CjBaseRel  *br = lfirst(lc);

		rows += cj_moved_rows(root, g, br);
		if (br->stage != NULL)
			rows += cj_group_moved_rows(root, br->stage);
	}
	return rows;
}
