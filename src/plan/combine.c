/*-------------------------------------------------------------------------
 *
 * combine.c
 *	  The "ColocatedCombine" node: a pass-through over the coordinator's
 *	  Agg that combines partial aggregates from the nodes.  It hands on the
 *	  Agg's rows unchanged, but under the names the rest of the plan uses
 *	  for them: the query's own aggregate calls.
 *
 *	  Why it exists: the combining Agg computes count(*) as, say,
 *	  COALESCE(sum(<partial count>), 0); nodes above the aggregation (Sort,
 *	  projection, ORDER BY, HAVING references) look for the expression
 *	  count(*) itself.  This node's scan tuple is labelled with the original
 *	  expressions, so the planner matches them here.  It computes nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/restrictinfo.h"

#include "plan/join_group.h"

#define COMBINE_NAME "ColocatedCombine"

static Plan *plan_combine_path(PlannerInfo *root, RelOptInfo *rel,
							   CustomPath *best_path, List *tlist,
							   List *clauses, List *custom_plans);
static Node *create_combine_state(CustomScan *cscan);
static void begin_combine(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_combine(CustomScanState *node);
static void end_combine(CustomScanState *node);
static void rescan_combine(CustomScanState *node);

static CustomPathMethods combine_path_methods = {
	.CustomName = COMBINE_NAME,
	.PlanCustomPath = plan_combine_path,
};

static CustomScanMethods combine_scan_methods = {
	.CustomName = COMBINE_NAME,
	.CreateCustomScanState = create_combine_state,
};

static CustomExecMethods combine_exec_methods = {
	.CustomName = COMBINE_NAME,
	.BeginCustomScan = begin_combine,
	.ExecCustomScan = exec_combine,
	.EndCustomScan = end_combine,
	.ReScanCustomScan = rescan_combine,
};

/*
 * cj_make_combine_path
 *		A path over child (whose target computes, column by column, the
 *		values of target's expressions) that presents those values as
 *		target's expressions.
 */
Path *
cj_make_combine_path(PlannerInfo *root, RelOptInfo *rel, Path *child,
					 PathTarget *target)
{
	CustomPath *cpath = makeNode(CustomPath);

	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = rel;
	cpath->path.pathtarget = target;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = false;
	cpath->path.parallel_workers = 0;
	cpath->path.rows = child->rows;
	cpath->path.startup_cost = child->startup_cost;
	cpath->path.total_cost = child->total_cost + child->rows * cpu_tuple_cost * 0.1;
	cpath->path.pathkeys = child->pathkeys;
	cpath->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	cpath->custom_paths = list_make1(child);

	/*
	 * The labels, copied now: the planner may later swap this path's target
	 * for a projection's.
	 */
	cpath->custom_private = list_make1(list_copy(target->exprs));
	cpath->methods = &combine_path_methods;
	return (Path *) cpath;
}

static Plan *
plan_combine_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				  List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	List	   *labels = (List *) linitial(best_path->custom_private);
	Plan	   *child = (Plan *) linitial(custom_plans);
	List	   *scan_tlist = NIL;
	ListCell   *lc,
			   *lt;
	int			resno = 1;

	if (list_length(labels) != list_length(child->targetlist))
		elog(ERROR, "colojoin: combined aggregates do not match their labels");
	forboth(lc, labels, lt, child->targetlist)
	{
		Expr	   *label = (Expr *) lfirst(lc);
		Expr	   *value = ((TargetEntry *) lfirst(lt))->expr;

		if (exprType((Node *) label) != exprType((Node *) value))
			elog(ERROR, "colojoin: combined aggregate of type %u labelled as type %u",
				 exprType((Node *) value), exprType((Node *) label));
		scan_tlist = lappend(scan_tlist, makeTargetEntry(label, resno++, NULL, false));
	}

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = extract_actual_clauses(clauses, false);
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	cscan->custom_exprs = NIL;
	cscan->custom_private = NIL;
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_relids = pull_varnos(root, (Node *) labels);
	cscan->methods = &combine_scan_methods;
	return (Plan *) cscan;
}

static Node *
create_combine_state(CustomScan *cscan)
{
	CustomScanState *css = (CustomScanState *) newNode(sizeof(CustomScanState),
													   T_CustomScanState);

	css->methods = &combine_exec_methods;
	return (Node *) css;
}

static void
begin_combine(CustomScanState *node, EState *estate, int eflags)
{
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;

	node->custom_ps = list_make1(ExecInitNode(linitial(cscan->custom_plans),
											  estate, eflags));
}

static TupleTableSlot *
next_combined(ScanState *ss)
{
	CustomScanState *node = (CustomScanState *) ss;
	TupleTableSlot *in = ExecProcNode((PlanState *) linitial(node->custom_ps));
	TupleTableSlot *out = ss->ss_ScanTupleSlot;
	int			i;

	ExecClearTuple(out);
	if (TupIsNull(in))
		return out;
	slot_getallattrs(in);
	for (i = 0; i < out->tts_tupleDescriptor->natts; i++)
	{
		out->tts_values[i] = in->tts_values[i];
		out->tts_isnull[i] = in->tts_isnull[i];
	}
	return ExecStoreVirtualTuple(out);
}

static bool
recheck_combined(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
exec_combine(CustomScanState *node)
{
	return ExecScan(&node->ss, next_combined, recheck_combined);
}

static void
end_combine(CustomScanState *node)
{
	ExecEndNode((PlanState *) linitial(node->custom_ps));
}

static void
rescan_combine(CustomScanState *node)
{
	PlanState  *child = (PlanState *) linitial(node->custom_ps);

	if (node->ss.ps.chgParam != NULL)
		UpdateChangedParamSet(child, node->ss.ps.chgParam);
	if (child->chgParam == NULL)
		ExecReScan(child);
}

void
cj_combine_init(void)
{
	RegisterCustomScanMethods(&combine_scan_methods);
}
