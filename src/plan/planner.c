/*-------------------------------------------------------------------------
 *
 * planner.c
 *	  The planner hooks of colocated joins and their dispatch: a
 *	  set_join_pathlist_hook that, for every pair of relations PostgreSQL
 *	  joins, tries the strategies in turn (a colocated join, a
 *	  redistributed one, broadcast, dual repartition, LATERAL) and adds the
 *	  CustomPath of the group it accepts; and a planner_hook that reads the
 *	  statement's hints, hands writes to the write layer (cj_write_planner)
 *	  and logs the decisions.
 *
 *	  It does not build groups (group.c), decide where conditions run
 *	  (qual_placement.c), make paths of steps above the join (upper.c) or
 *	  plans (plan_create.c), and never talks to a node.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "metadata/colocation.h"
#include "metadata/metadata.h"
#include "plan/hints.h"
#include "plan/join_group.h"
#include "plan/planner.h"
#include "plan/decision_stats.h"
#include "plan/planner_internal.h"
#include "plan/scan_plan.h"
#include "remote/connection.h"
#include "remote/node_health.h"
#include "util/extension.h"
#include "util/settings.h"

CjWritePlanner cj_write_planner = NULL;

bool		cj_plan_no_custom_paths = false;

static set_join_pathlist_hook_type prev_join_pathlist_hook = NULL;
static planner_hook_type prev_planner_hook = NULL;

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

static int	move_name_counter = 0;

/* the base name of a moved table's temporary tables, unique in this backend */
char *
cj_new_move_name(Index rtindex)
{
	return psprintf("colojoin_move_%d_%u", ++move_name_counter, rtindex);
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
						cj_tree_quals(mg->tree));
	text = ag->move_text;
	foreach(lc, moved)
	{
		CjBaseRel  *br = lfirst(lc);

		/* a join's rows moved as a stage are no table to broadcast again */
		if (br->stage != NULL)
		{
			*reasons = lappend(*reasons,
							   psprintf("%s moves the rows of a join into its classes, which cannot be broadcast",
										cj_joinrel_names(root, innerrel)));
			return NULL;
		}
		br->move = CJ_MOVE_BROADCAST;
		if ((br->table != NULL && !cj_live_leaves_foreign(br, reasons)) ||
			!cj_broadcast_allowed(br, find_base_rel(root, br->rtindex), reasons) ||
			!cj_move_columns(br, (Node *) lappend(list_copy(exprs),
												  cj_task_quals(root, br)),
							 reasons))
			return NULL;
		br->reference = false;
		br->move_name = cj_new_move_name(br->rtindex);
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
/*
 * group_with_moved
 *		The group of joinrel: ag's tables and join tree, joined with mb (a
 *		table or a stage that moves into ag's classes) as its inner side,
 *		finished; NULL with the reasons when it cannot run so.
 */
static CjJoinGroup *
group_with_moved(PlannerInfo *root, RelOptInfo *joinrel, CjJoinGroup *ag,
				 CjBaseRel *mb, JoinType jointype, List *joinquals,
				 List *otherquals, List **reasons)
{
	CjJoinGroup *g = palloc0(sizeof(CjJoinGroup));
	CjJoinTree *leaf = palloc0(sizeof(CjJoinTree));
	CjJoinTree *t = palloc0(sizeof(CjJoinTree));

	g->rel = joinrel;
	g->rels = lappend(cj_copy_rels(ag->rels), mb);
	leaf->is_base = true;
	leaf->base = list_length(g->rels) - 1;
	t->jointype = jointype;
	t->outer = ag->tree;
	t->inner = leaf;
	t->joinquals = joinquals;
	t->otherquals = otherquals;
	g->tree = t;
	if (!cj_finish_group(root, g, reasons) ||
		!cj_check_target(g, joinrel, reasons))
		return NULL;
	return g;
}

/*
 * try_stage
 *		The join of group input arel with the rows of mrel, a join relation
 *		colojoin runs as a colocated group of its own, moved into arel's
 *		classes by a column the join equates with a key there (a stage,
 *		stage_move.c), or NULL with the reasons.
 */
static CjJoinGroup *
try_stage(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *arel,
		  RelOptInfo *mrel, JoinType jointype, List *joinquals,
		  List *otherquals, int forced, List **reasons)
{
	CjJoinGroup *ag;
	CjJoinGroup *sg = cj_group_of_rel(mrel);
	CjJoinGroup *g;
	CjBaseRel  *sb;

	if (sg == NULL || !cj_stage_possible(sg, reasons))
		return NULL;
	ag = cj_group_for_rel(root, arel, reasons);
	if (ag == NULL)
		return NULL;
	if (ag->rel->reloptkind == RELOPT_BASEREL &&
		!cj_finish_group(root, ag, reasons))
		return NULL;
	if (((CjBaseRel *) linitial(ag->rels))->move != CJ_MOVE_NONE ||
		ag->space == NULL || ag->space->ntables == 0)
		return NULL;

	sb = cj_make_stage_rel(root, mrel, sg);
	if (!cj_stage_columns(sb, (Node *) list_make3(joinrel->reltarget->exprs,
												  joinquals, otherquals), reasons))
		return NULL;
	sb->move = cj_choose_stage_move(root, ag, sb, joinquals,
									jointype == JOIN_INNER, forced, reasons);
	if (sb->move == CJ_MOVE_NONE)
		return NULL;
	sb->move_name = cj_new_move_name(sb->rtindex);

	g = group_with_moved(root, joinrel, ag, sb, jointype, joinquals, otherquals,
						 reasons);
	if (g == NULL)
		return NULL;
	g->move_text = ag->move_text ?
		psprintf("%s; %s", ag->move_text,
				 cj_stage_description(root, sb, linitial(g->rels))) :
		cj_stage_description(root, sb, linitial(g->rels));
	return g;
}

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
									cj_joinrel_names(root, must_move)));
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

		if (attempt == 1 && jointype != JOIN_INNER)
			break;
		if (mrel->reloptkind == RELOPT_JOINREL && must_move == NULL &&
			forced != CJ_MOVE_BROADCAST)
		{
			/*
			 * The other side's join, moved as a stage (stage_move.c): of an
			 * inner join, or the side an outer, semi or anti join does not
			 * keep (its rows whose key is NULL, dropped at the source, would
			 * match nothing there either).
			 */
			g = try_stage(root, joinrel, arel, mrel, jointype, joinquals,
						  otherquals, forced, reasons);
			if (g != NULL)
			{
				CjBaseRel  *sb = llast(g->rels);
				double		moved = cj_moved_rows(root, g, sb);
				double		grouped = cj_pre_aggregated_rows(root, g, sb);

				/* its rows grouped on their nodes first, when the query lets */
				if (grouped >= 0 && grouped < moved)
					moved = grouped;
				moved += cj_group_moved_rows(root, sb->stage);

				if (best == NULL || moved < best_moved)
				{
					best = g;
					best_moved = moved;
				}
			}
			continue;
		}
		if (mrel->reloptkind != RELOPT_BASEREL ||
			(must_move != NULL && mrel != must_move))
			continue;
		ag = cj_group_for_rel(root, arel, reasons);
		if (ag == NULL)
			continue;
		if (ag->rel->reloptkind == RELOPT_BASEREL &&
			!cj_finish_group(root, ag, reasons))
			continue;
		if (cj_is_dimension_rel(root, mrel))
			mb = cj_make_dimension_rel(root, mrel, reasons);
		else if (cj_is_coordinator_rows_rel(root, mrel))
			mb = cj_make_coordinator_rows_rel(root, mrel, reasons);
		else
			mb = cj_make_base_rel(root, mrel, reasons);
		if (mb == NULL || (mb->table != NULL && !cj_live_leaves_foreign(mb, reasons)))
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
													 cj_task_quals(root, mb)),
							 reasons))
			continue;
		mb->move_name = cj_new_move_name(mb->rtindex);

		g = group_with_moved(root, joinrel, ag, mb, jointype, joinquals,
							 otherquals, reasons);
		if (g == NULL)
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
 * group_cost
 *		Cost the group honestly.
 *
 * The nodes work at once, so the remote scan and join cost is divided by
 * the number of nodes; every result row crosses the network and is turned
 * into a tuple here, which is what usually decides against pulling both
 * inputs to the coordinator.
 */
static Cost
group_cost(PlannerInfo *root, RelOptInfo *joinrel, CjJoinGroup *g,
		   Cost *startup)
{
	double		input_rows = cj_group_input_rows(root, g);
	int			nnodes = cj_task_node_count(g);
	double		rows = joinrel->rows;
	int			width = joinrel->reltarget->width;
	Cost		remote;
	Cost		transfer;
	QualCost	local_cost;

	*startup = 100.0 + 0.5 * list_length(g->tasks) + cj_moves_cost(root, g);
	remote = (input_rows * (cpu_tuple_cost + 2 * cpu_operator_cost) +
			  rows * cpu_tuple_cost) / nnodes;
	transfer = rows * (cpu_tuple_cost + width * 0.0001);
	cost_qual_eval(&local_cost, g->local_quals, root);

	return *startup + remote + transfer +
		local_cost.startup + local_cost.per_tuple * rows;
}

/*
 * group_rank
 *		What a group's cost is compared by against another way of building
 *		the same join: its cost, and for every table it moves the round
 *		trips of each destination (a temporary table made, filled, analyzed
 *		and dropped), which the cost of a path leaves out because every way
 *		of planning a join with a move pays them alike.
 */
static Cost
group_rank(CjJoinGroup *g, Cost total)
{
	ListCell   *lc;

	foreach(lc, g->rels)
	{
		CjBaseRel  *br = lfirst(lc);

		if (br->move != CJ_MOVE_NONE)
			total += 100.0 * cj_task_node_count(g);

		/*
		 * A stage's own moves too, and once more for the wait: the level
		 * below is filled and analyzed on every node before the stage's
		 * sources start.
		 */
		if (br->stage != NULL && cj_moved_tables(br->stage) != NIL)
			total = group_rank(br->stage, total) +
				100.0 * cj_task_node_count(br->stage);
	}
	return total;
}

/*
 * add_colocated_path
 *		Offer the group to the planner at its cost (group_cost), or at none
 *		when a hint asked for it (forced): nothing else may look cheaper.
 */
static void
add_colocated_path(PlannerInfo *root, RelOptInfo *joinrel, CjJoinGroup *g,
				   Cost startup, Cost total, bool forced)
{
	if (forced)
	{
		startup = 0;
		total = 0;
	}
	/* the group is found again from joinrel (custom_private stays NIL) */
	add_path(joinrel, cj_new_scan_path(joinrel, g, joinrel->reltarget,
									   joinrel->rows, startup, total, NIL));
}

static bool
is_group_input(PlannerInfo *root, RelOptInfo *rel)
{
	CjJoinAttempt *a;

	if (cj_is_sharded_baserel(root, rel))
		return true;
	if (rel->reloptkind != RELOPT_JOINREL)
		return false;
	a = cj_find_attempt(rel);
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
	bool		coord_rows;
	bool		force_dual = false;
	List	   *moved_reasons = NIL;

	if (prev_join_pathlist_hook)
		prev_join_pathlist_hook(root, joinrel, outerrel, innerrel,
								jointype, extra);

	if (!enabled && cj_statement_hints() == NULL)
		return;
	if (IS_OTHER_REL(joinrel) || cj_plan_no_custom_paths)
		return;

	if (cj_statement_hints() != NULL)
	{
		force = cj_find_hint(root, joinrel->relids, true,
						  CJ_HINT_COLOCATED_JOIN, CJ_HINT_COLOCATED_JOIN);
		forbid = cj_find_hint(root, joinrel->relids, false,
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
		move_hint = cj_find_hint(root, joinrel->relids, true,
							  CJ_HINT_REDISTRIBUTE_JOIN, CJ_HINT_REDISTRIBUTE_JOIN);
		if (move_hint)
			forced_move = CJ_MOVE_REPARTITION;
		if (innerrel->reloptkind == RELOPT_BASEREL)
		{
			CjHint	   *h = cj_find_hint(root, innerrel->relids, true,
									  CJ_HINT_REDISTRIBUTE, CJ_HINT_BROADCAST_JOIN);

			if (h)
			{
				move_hint = h;
				must_move = innerrel;
			}
		}
		if (outerrel->reloptkind == RELOPT_BASEREL)
		{
			CjHint	   *h = cj_find_hint(root, outerrel->relids, true,
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
			CjHint	   *h = cj_find_hint(root, joinrel->relids, true,
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
		cj_colocated_hint_over(root, joinrel->relids) == NULL)
		return;

	/*
	 * Cheap tests first: both inputs must be sharded tables or groups, or
	 * one a group and the other a table to broadcast to it (a dimension),
	 * a LATERAL subquery to run in its tasks (lateral.c) or rows the
	 * coordinator computes to broadcast (coordinator_rows.c; a subquery
	 * the tasks cannot run may be those).
	 */
	lateral = (cj_is_subquery_rel(innerrel) && is_group_input(root, outerrel)) ||
		(cj_is_subquery_rel(outerrel) && is_group_input(root, innerrel));
	coord_rows = (cj_is_coordinator_rows_rel(root, innerrel) && is_group_input(root, outerrel)) ||
		(cj_is_coordinator_rows_rel(root, outerrel) && is_group_input(root, innerrel));
	if (!lateral && !coord_rows &&
		!(is_group_input(root, outerrel) && is_group_input(root, innerrel)) &&
		!(is_group_input(root, outerrel) && cj_is_dimension_rel(root, innerrel)) &&
		!(cj_is_dimension_rel(root, outerrel) && is_group_input(root, innerrel)))
	{
		bool		group_side = is_group_input(root, outerrel) ||
			is_group_input(root, innerrel);
		RelOptInfo *bad = is_group_input(root, outerrel) ? innerrel : outerrel;
		char	   *why;

		if (force == NULL)
			force = move_hint;
		if (force == NULL &&
			!(colojoin_log_decisions && enabled && group_side && colojoin_is_active()))
			return;
		why = bad->reloptkind == RELOPT_BASEREL ?
			psprintf("relation %s is not a sharded table or a table to broadcast",
					 cj_joinrel_names(root, bad)) :
			psprintf("join %s does not run on the nodes itself",
					 cj_joinrel_names(root, bad));
		if (force)
			force->failures = list_append_unique(force->failures, makeString(why));
		if (colojoin_log_decisions && enabled && group_side && colojoin_is_active())
		{
			/* the decision log says what kept the join from the nodes */
			attempt = cj_get_attempt(joinrel);
			if (attempt->names == NULL)
				attempt->names = cj_joinrel_names(root, joinrel);
			if (attempt->group == NULL && attempt->reasons == NIL)
				attempt->reasons = lappend(attempt->reasons, makeString(why));
		}
		return;
	}
	if (joinrel->lateral_relids != NULL || !colojoin_is_active())
		return;

	/*
	 * A table that is not sharded, or rows the coordinator computes, can
	 * only join a group by broadcast (a subquery may still run in the
	 * tasks).
	 */
	if (!lateral &&
		(cj_is_dimension_rel(root, outerrel) || cj_is_dimension_rel(root, innerrel) ||
		 coord_rows) &&
		force == NULL && move_hint == NULL &&
		!(enabled && colojoin_enable_broadcast))
		return;

	/*
	 * A join of three or more tables has several pairs of inputs, and each
	 * may build another group (orders JOIN lineitem with customer broadcast
	 * into it, or customer JOIN orders with lineitem moved): every pair is
	 * tried and the cheapest group kept.  The same pair in the other order
	 * builds the same group again, and a hinted group stays.
	 */
	attempt = cj_get_attempt(joinrel);
	if (attempt->group != NULL &&
		(attempt->forced || bms_equal(attempt->split, outerrel->relids) ||
		 bms_equal(attempt->split, innerrel->relids)))
		return;

	if (cj_xact_wrote_to_shards())
	{
		if (attempt->names == NULL)
			attempt->names = cj_joinrel_names(root, joinrel);
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
	if (group == NULL && force == NULL && (!lateral || coord_rows) && !force_dual &&
		(move_hint != NULL ||
		 (enabled && (colojoin_enable_redistribution || colojoin_enable_broadcast))))
	{
		List	   *colocated_reasons = reasons;

		reasons = NIL;
		group = try_redistributed_join(root, joinrel, outerrel, innerrel,
									   jointype, extra, must_move, forced_move,
									   &reasons);
		if (group != NULL)
			moved_reasons = colocated_reasons;
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
			if (group == NULL)
				moved_reasons = reasons;
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
			attempt->names = cj_joinrel_names(root, joinrel);
		if (attempt->reasons == NIL && attempt->group == NULL)
			foreach(lc, reasons)
				attempt->reasons = list_append_unique(attempt->reasons,
													  makeString(lfirst(lc)));
		if (force && force->failures == NIL)
			foreach(lc, reasons)
				force->failures = list_append_unique(force->failures,
													 makeString(lfirst(lc)));
		return;
	}
	{
		Cost		startup;
		Cost		total = group_cost(root, joinrel, group, &startup);
		ListCell   *lr;

		/* an earlier pair's group is as cheap: that one stays */
		if (attempt->group != NULL && force == NULL &&
			group_rank(group, total - cj_pre_aggregation_saving(root, group)) >=
			group_rank(attempt->group,
					   attempt->cost - cj_pre_aggregation_saving(root, attempt->group)))
			return;
		/* the decision log says why the rows had to move, for this group */
		if (attempt->group != NULL)
			attempt->reasons = NIL;
		if (attempt->names == NULL)
			attempt->names = cj_joinrel_names(root, joinrel);
		foreach(lr, moved_reasons)
			attempt->reasons = list_append_unique(attempt->reasons,
												  makeString(lfirst(lr)));
		attempt->group = group;
		attempt->split = bms_copy(outerrel->relids);
		attempt->cost = total;
		attempt->forced = force != NULL;
		if (force)
		{
			force->used = true;
			group->hints_used = list_append_unique_ptr(group->hints_used, force);
		}
		/* a part of a hinted join only: kept for it, offered only if allowed */
		if (enabled || force != NULL)
			add_colocated_path(root, joinrel, group, startup, total,
							   force != NULL);
	}
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

/*
 * plan_narrowed_or_not
 *		The plan of parse, or of its copy with grouped subqueries narrowed by
 *		the tables they are joined to (subquery_narrowing.c) when that one
 *		is estimated cheaper; the decision log then reads the planning of
 *		the plan kept.  Not with hints: they name the query's own relations,
 *		and the copy has one more of the same name.
 */
static PlannedStmt *
plan_narrowed_or_not(Query *parse, const char *query_string, int cursorOptions,
					 ParamListInfo boundParams)
{
	Query	   *narrowed = NULL;
	char	   *what = NULL;
	PlannedStmt *plain;
	PlannedStmt *other;
	List	   *plain_attempts;
	List	   *plain_steps;

	if (colojoin_enable && colojoin_enable_subquery_narrowing &&
		colojoin_is_active() && cj_statement_hints() == NULL)
		narrowed = cj_narrowed_query(parse, &what);
	plain = plan_usual(parse, query_string, cursorOptions, boundParams);
	if (narrowed == NULL)
		return plain;
	plain_attempts = cj_attempts;
	plain_steps = cj_step_notes;
	cj_attempts = NIL;
	cj_step_notes = NIL;
	other = plan_usual(narrowed, query_string, cursorOptions, boundParams);
	if (colojoin_log_decisions)
		ereport(NOTICE,
				(errmsg("colojoin: subquery %s by a semi-join (%s)",
						other->planTree->total_cost < plain->planTree->total_cost ?
						"narrowed" : "not narrowed", what),
				 errdetail("Estimated cost %.2f narrowed, %.2f as written.",
						   other->planTree->total_cost, plain->planTree->total_cost)));
	if (other->planTree->total_cost < plain->planTree->total_cost)
		return other;
	cj_attempts = plain_attempts;
	cj_step_notes = plain_steps;
	return plain;
}

static PlannedStmt *
cj_planner(Query *parse, const char *query_string, int cursorOptions,
		   ParamListInfo boundParams)
{
	List	   *saved = cj_attempts;
	List	   *saved_steps = cj_step_notes;
	CjHintSet  *saved_hints = cj_set_statement_hints(NULL);
	PlannedStmt *result = NULL;

	cj_attempts = NIL;
	cj_step_notes = NIL;
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
			cj_set_statement_hints(cj_parse_hints(text, len, parse));
		}
		if (colojoin_enable && colojoin_enable_lateral_subqueries &&
			colojoin_is_active())
			cj_lateralize_scalar_subqueries(parse);
		if (cj_write_planner != NULL)
			result = cj_write_planner(parse, query_string, cursorOptions,
									  boundParams, plan_usual);
		if (result == NULL)
			result = plan_narrowed_or_not(parse, query_string, cursorOptions,
										  boundParams);
		check_forcing_hints(cj_statement_hints());
		if (colojoin_log_decisions)
			cj_log_decisions();
		if (cj_decisions_enabled() && parse->queryId != UINT64CONST(0))
		{
			CjDecisionSummary summary;

			if (cj_decision_summary(&summary))
				cj_decisions_record(parse->queryId, &summary);
		}
	}
	PG_FINALLY();
	{
		cj_attempts = saved;
		cj_step_notes = saved_steps;
		cj_set_statement_hints(saved_hints);
	}
	PG_END_TRY();
	return result;
}



void
cj_planner_init(void)
{
	prev_join_pathlist_hook = set_join_pathlist_hook;
	set_join_pathlist_hook = cj_join_pathlist_hook;
	prev_planner_hook = planner_hook;
	planner_hook = cj_planner;
}
