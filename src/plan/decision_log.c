/*-------------------------------------------------------------------------
 *
 * decision_log.c
 *	  colojoin.log_decisions: after each planning, a NOTICE for every join
 *	  and every step above the tables (aggregate, DISTINCT, ORDER BY ...
 *	  LIMIT, window functions) that colojoin did not run on the nodes as
 *	  asked, and why: the reason a strategy refused, the move it took
 *	  instead, or that PostgreSQL's own plan cost less.
 *
 *	  Only at the end of planning is it known which paths won, so the
 *	  strategies leave notes (joins: planner.c's CjJoinAttempt; steps:
 *	  cj_note_step) and plan_create.c marks what made it into the plan
 *	  (cj_note_chosen).  A join or step inside a larger one that runs on
 *	  the nodes is not reported: that one covers it.  Nothing here decides
 *	  anything.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "optimizer/pathnode.h"

#include "plan/join_group.h"
#include "plan/planner_internal.h"
#include "plan/decision_stats.h"
#include "util/settings.h"

/* a step above the tables of one query level, as planned */
typedef struct CjStepNote
{
	PlannerInfo *root;
	UpperRelationKind stage;
	RelOptInfo *output_rel;
	char	   *names;			/* the tables below it */
	const char *reason;			/* why no path was offered; NULL: one was */
	bool		chosen;			/* a plan of colojoin's does it */
} CjStepNote;

/* the steps of the current planner() call; planner.c saves and resets it */
List	   *cj_step_notes = NIL;

const char	cj_step_not_here[] = "";

static char *reasons_text(List *reasons);

static const char *
stage_name(UpperRelationKind stage)
{
	switch (stage)
	{
		case UPPERREL_GROUP_AGG:
			return "aggregation";
		case UPPERREL_WINDOW:
			return "windowing";
		case UPPERREL_DISTINCT:
			return "DISTINCT";
		case UPPERREL_ORDERED:
			return "ORDER BY ... LIMIT";
		default:
			return "step";
	}
}

/*
 * cj_note_step
 *		Records that colojoin offered a path for stage over input_rel
 *		(reason NULL), or why it did not.  One note per output relation:
 *		an offered path outweighs any refusal, else the first reason stays.
 */
void
cj_note_step(PlannerInfo *root, UpperRelationKind stage, RelOptInfo *input_rel,
			 RelOptInfo *output_rel, const char *reason)
{
	CjStepNote *n = NULL;
	ListCell   *lc;

	if (!colojoin_log_decisions && !cj_decisions_enabled())
		return;
	foreach(lc, cj_step_notes)
	{
		CjStepNote *x = lfirst(lc);

		if (x->output_rel == output_rel)
			n = x;
	}
	if (n == NULL)
	{
		n = palloc0(sizeof(CjStepNote));
		n->root = root;
		n->stage = stage;
		n->output_rel = output_rel;
		/* an upper relation has no relids: the query's tables */
		n->names = cj_relids_names(root, bms_is_empty(input_rel->relids) ?
								   root->all_baserels : input_rel->relids);
		n->reason = reason;
		cj_step_notes = lappend(cj_step_notes, n);
	}
	else if (reason == NULL)
		n->reason = NULL;
}

/* whether rel is one of root's base or join relations */
static bool
rel_of_root(PlannerInfo *root, RelOptInfo *rel)
{
	if (rel->reloptkind == RELOPT_BASEREL)
		return bms_membership(rel->relids) == BMS_SINGLETON &&
			bms_singleton_member(rel->relids) < root->simple_rel_array_size &&
			root->simple_rel_array[bms_singleton_member(rel->relids)] == rel;
	if (rel->reloptkind == RELOPT_JOINREL)
		return find_join_rel(root, rel->relids) == rel;
	return false;
}

/*
 * cj_note_chosen
 *		plan_create.c made a plan of group g for rel: the joins of root
 *		inside g run on the nodes, and spec's step (with the steps before
 *		it) when it is a step's.
 */
void
cj_note_chosen(PlannerInfo *root, RelOptInfo *rel, CjJoinGroup *g,
			   CjUpperSpec *spec)
{
	Relids		relids = NULL;
	ListCell   *lc;

	if (!colojoin_log_decisions && !cj_decisions_enabled())
		return;
	if (g->rel != NULL)
		relids = bms_copy(g->rel->relids);
	foreach(lc, g->rels)
	{
		relids = bms_add_member(relids, ((CjBaseRel *) lfirst(lc))->rtindex);
		relids = bms_add_members(relids, ((CjBaseRel *) lfirst(lc))->stage_relids);
	}
	foreach(lc, cj_attempts)
	{
		CjJoinAttempt *a = lfirst(lc);

		if (a->joinrel == rel ||
			(bms_is_subset(a->joinrel->relids, relids) &&
			 rel_of_root(root, a->joinrel)))
			a->chosen = true;
	}
	foreach(lc, cj_step_notes)
	{
		CjStepNote *n = lfirst(lc);
		int			rti = -1;

		if (n->root == root && spec != NULL && n->stage <= spec->stage)
			n->chosen = true;
		/* a subquery the tasks run: its own planning is not the plan */
		while ((rti = bms_next_member(relids, rti)) >= 0)
			if (rti < root->simple_rel_array_size &&
				root->simple_rel_array[rti] != NULL &&
				root->simple_rel_array[rti]->subroot == n->root)
				n->chosen = true;
	}
}

/*
 * cj_decision_summary
 *		How the planning that just ended went, for colojoin.decisions: the
 *		strategies of what runs on the nodes, and the first reason anything
 *		was left to PostgreSQL (NULL when nothing was).  false when it
 *		never came near a table of colojoin's.
 */
bool
cj_decision_summary(CjDecisionSummary *out)
{
	ListCell   *lc;

	memset(out, 0, sizeof(*out));
	foreach(lc, cj_attempts)
	{
		CjJoinAttempt *a = lfirst(lc);

		if (a->joinrel->reloptkind != RELOPT_JOINREL)
			continue;
		out->considered = true;
		if (a->group != NULL && a->chosen)
		{
			const char *m = a->group->move_text;

			if (m == NULL)
				out->colocated = true;
			else if (strncmp(m, "dual repartition", 16) == 0)
				out->dual_repartition = true;
			else
			{
				if (strstr(m, "broadcast") != NULL)
					out->broadcast = true;
				if (strstr(m, "repartitioned") != NULL ||
					strstr(m, "partitions of") != NULL)
					out->redistributed = true;
			}
		}
		else if (out->reason == NULL)
		{
			if (a->group == NULL && a->reasons != NIL)
				out->reason = reasons_text(list_make1(linitial(a->reasons)));
			else if (a->group != NULL)
				out->reason = "its plan on the nodes cost more than PostgreSQL's";
		}
	}
	foreach(lc, cj_step_notes)
	{
		CjStepNote *n = lfirst(lc);

		out->considered = true;
		if (n->chosen)
			out->steps_on_nodes = true;
		else if (out->reason == NULL)
			out->reason = n->reason != NULL ? n->reason :
				"its plan on the nodes cost more than PostgreSQL's";
	}
	out->left_to_postgresql = out->considered && !out->colocated &&
		!out->redistributed && !out->broadcast && !out->dual_repartition &&
		!out->steps_on_nodes;
	return out->considered;
}

/* "; "-joined reasons, the first letter capitalised */
static char *
reasons_text(List *reasons)
{
	StringInfoData buf;
	ListCell   *lr;

	initStringInfo(&buf);
	foreach(lr, reasons)
		appendStringInfo(&buf, "%s%s", buf.len ? "; " : "", strVal(lfirst(lr)));
	if (buf.len > 0)
		buf.data[0] = pg_toupper((unsigned char) buf.data[0]);
	return buf.data;
}

/*
 * cj_log_decisions
 *		The NOTICEs of one planning: joins first (each join relation once),
 *		then the steps above them.
 */
void
cj_log_decisions(void)
{
	ListCell   *lc;

	foreach(lc, cj_attempts)
	{
		CjJoinAttempt *a = lfirst(lc);

		if (a->joinrel->reloptkind != RELOPT_JOINREL)
			continue;
		if (a->group == NULL)
		{
			if (a->reasons != NIL)
				ereport(NOTICE,
						(errmsg("colojoin: join of %s is not colocated",
								a->names),
						 errdetail("%s.", reasons_text(a->reasons))));
		}
		else if (a->reasons != NIL && a->group->move_text != NULL)
			ereport(NOTICE,
					(errmsg("colojoin: join of %s is not colocated; %s instead",
							a->names, a->group->move_text),
					 errdetail("%s.", reasons_text(a->reasons))));
	}
	foreach(lc, cj_attempts)
	{
		CjJoinAttempt *a = lfirst(lc);
		bool		covered = false;
		ListCell   *lb;

		if (a->joinrel->reloptkind != RELOPT_JOINREL || a->group == NULL ||
			a->chosen)
			continue;
		/* only the largest join left to PostgreSQL says so */
		foreach(lb, cj_attempts)
		{
			CjJoinAttempt *b = lfirst(lb);

			if (b != a && b->group != NULL && !b->chosen &&
				b->joinrel->reloptkind == RELOPT_JOINREL &&
				bms_is_subset(a->joinrel->relids, b->joinrel->relids) &&
				b->names != NULL)
				covered = true;
		}
		if (!covered && a->names != NULL)
			ereport(NOTICE,
					(errmsg("colojoin: join of %s is left to PostgreSQL",
							a->names),
					 errdetail("Its plan on the nodes (%s) cost more than PostgreSQL's.",
							   a->group->move_text ? a->group->move_text : "colocated")));
	}
	foreach(lc, cj_step_notes)
	{
		CjStepNote *n = lfirst(lc);

		if (n->chosen)
			continue;
		if (n->reason != NULL)
			ereport(NOTICE,
					(errmsg("colojoin: %s of %s is left to PostgreSQL",
							stage_name(n->stage), n->names),
					 errdetail("%c%s.", pg_toupper((unsigned char) n->reason[0]),
							   n->reason + 1)));
		else
			ereport(NOTICE,
					(errmsg("colojoin: %s of %s is left to PostgreSQL",
							stage_name(n->stage), n->names),
					 errdetail("Its plan on the nodes cost more than PostgreSQL's.")));
	}
}
