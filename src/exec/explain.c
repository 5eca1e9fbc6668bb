/*-------------------------------------------------------------------------
 *
 * explain.c
 *	  EXPLAIN output of a colojoin CustomScan, in every EXPLAIN format: the
 *	  strategy and join keys, partitions run / pruned / empty, tasks per
 *	  node, rows moved between nodes, the remote SQL (one task, or every
 *	  task under VERBOSE), and under ANALYZE per-node tasks, rows, bytes
 *	  and time.  TEXT prints them as lines for people; JSON, YAML and XML
 *	  give numbers as numbers and repeated things as lists of objects.
 *
 *	  It only reports; it never connects to a node.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/explain.h"
#include "lib/stringinfo.h"

#include "exec/executor.h"

typedef struct CjNodeSummary
{
	Oid			serverid;
	char	   *node;
	int			tasks;
	int			tasks_run;		/* not pruned at run time */
	double		rows;
	uint64		bytes;
	double		seconds;
} CjNodeSummary;

/* per-node totals, nodes in order of their first task */
static List *
summarise_nodes(CjScanState *st)
{
	List	   *nodes = NIL;
	int			i;

	for (i = 0; i < st->ntasks; i++)
	{
		CjExecTask *task = &st->tasks[i];
		CjNodeSummary *ns = NULL;
		ListCell   *lc;

		foreach(lc, nodes)
		{
			if (((CjNodeSummary *) lfirst(lc))->serverid == task->serverid)
				ns = lfirst(lc);
		}
		if (ns == NULL)
		{
			ns = palloc0(sizeof(CjNodeSummary));
			ns->serverid = task->serverid;
			ns->node = task->node;
			nodes = lappend(nodes, ns);
		}
		ns->tasks++;
		ns->tasks_run += task->runs;
		ns->rows += task->rows;
		ns->bytes += task->bytes;
		ns->seconds += task->seconds;
	}
	return nodes;
}

/*
 * Under VERBOSE, the COPY format of the moves (binary, text, or binary and
 * text); under ANALYZE, what the moves carried; in every format.
 */
static void
explain_move_totals(CjScanState *st, ExplainState *es)
{
	uint64		bytes = 0;
	uint64		rows = 0;
	double		seconds = 0;
	int			nbinary = 0;
	int			i;

	for (i = 0; i < st->nmoves; i++)
		if (st->moves[i].binary)
			nbinary++;
	if (es->verbose)
		ExplainPropertyText("Move Format",
							nbinary == st->nmoves ? "binary" :
							nbinary == 0 ? "text" : "binary and text", es);
	if (!es->analyze)
		return;
	for (i = 0; i < st->nmoves; i++)
	{
		bytes += st->moves[i].bytes;
		rows += st->moves[i].rows;
		seconds += st->moves[i].seconds;
	}
	/* next to the plan's estimate (Rows Moved), what really moved */
	ExplainPropertyUInteger("Actual Rows Moved", NULL, rows, es);
	ExplainPropertyUInteger("Bytes Moved", NULL, bytes, es);

	/* rescans reuse the moved rows: say how often they really moved */
	if (st->css.ss.ps.instrument && st->css.ss.ps.instrument->nloops > 1)
		ExplainPropertyInteger("Moves Run", NULL, st->moves[0].runs, es);
	if (es->timing)
		ExplainPropertyFloat("Move Time", "ms", seconds * 1000.0, 3, es);
}

/*
 * Under ANALYZE, the tasks that ran on another placement than the plan's
 * because their node could not be reached (failover): "class from node to
 * node" each, in every format a list.
 */
static void
explain_failover(CjScanState *st, ExplainState *es)
{
	List	   *moved = NIL;
	int			i;

	if (!es->analyze)
		return;
	for (i = 0; i < st->ntasks; i++)
		if (st->tasks[i].failed_over)
			moved = lappend(moved, psprintf("%s from %s to %s", st->tasks[i].label,
											st->tasks[i].planned_node,
											st->tasks[i].node));
	if (moved != NIL)
		ExplainPropertyList("Failed Over", moved, es);
}

static void
explain_hints(CjScanState *st, ExplainState *es)
{
	if (st->hints[0] != '\0')
		ExplainPropertyText("Hints", st->hints, es);
	if (st->hints_unused[0] != '\0')
		ExplainPropertyText("Hints Not Used", st->hints_unused, es);
}

/*
 * What the text and the structured formats show alike after the moves:
 * tasks run, failovers, rows moved, hints, and without VERBOSE the first
 * task's SQL as an example (VERBOSE lists every task, each format its way).
 */
static void
explain_run_summary(CjScanState *st, ExplainState *es)
{
	if (es->analyze && st->pruned_at_run_time)
		ExplainPropertyInteger("Tasks Run", NULL, st->ntasks_run, es);
	explain_failover(st, es);
	ExplainPropertyInteger("Rows Moved", NULL, st->rows_moved, es);
	explain_hints(st, es);
	if (!es->verbose && st->ntasks > 0)
		ExplainPropertyText("Remote SQL", st->tasks[0].sql, es);
}

/*
 * The scan's properties as TEXT shows them: one line each, the partitions
 * and the tasks per node as one string, the per-node statistics of ANALYZE
 * as "Node ..." lines.  Existing plans' text must not change.
 */
static void
explain_text(CjScanState *st, List *nodes, ExplainState *es)
{
	StringInfoData buf;
	ListCell   *lc;
	int			i;

	ExplainPropertyText("Strategy", st->strategy, es);

	initStringInfo(&buf);
	appendStringInfo(&buf, "%d of %d (%d pruned, %d empty)",
					 st->nplanned, st->nclasses, st->npruned, st->nempty);
	ExplainPropertyText("Partitions", buf.data, es);

	resetStringInfo(&buf);
	foreach(lc, nodes)
	{
		CjNodeSummary *ns = lfirst(lc);

		appendStringInfo(&buf, "%s%s %d", buf.len ? ", " : "", ns->node, ns->tasks);
	}
	ExplainPropertyText("Tasks", buf.len ? buf.data : "none", es);
	if (st->nmoves > 0)
	{
		resetStringInfo(&buf);
		for (i = 0; i < st->nmoves; i++)
			appendStringInfo(&buf, "%s%s", i ? "; " : "", st->moves[i].label);
		ExplainPropertyText("Moves", buf.data, es);
		explain_move_totals(st, es);
	}
	explain_run_summary(st, es);
	if (es->verbose)
	{
		for (i = 0; i < st->ntasks; i++)
		{
			CjExecTask *task = &st->tasks[i];

			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str, "Task %d on %s (%s): %s\n",
							 i + 1, task->node, task->label, task->sql);
		}
	}

	if (es->analyze)
	{
		foreach(lc, nodes)
		{
			CjNodeSummary *ns = lfirst(lc);

			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str, "Node %s: tasks=%d rows=%.0f bytes=" UINT64_FORMAT,
							 ns->node, ns->tasks_run, ns->rows, ns->bytes);
			if (es->timing)
				appendStringInfo(es->str, " time=%.3f ms", ns->seconds * 1000.0);
			appendStringInfoChar(es->str, '\n');
		}
	}
	pfree(buf.data);
}

/*
 * The same properties in JSON, YAML and XML, typed so that a program reads
 * them without parsing strings:
 *
 *	Partitions		{Total, Planned, Pruned, Empty; Run under ANALYZE
 *					 when the executor pruned}
 *	Tasks			[{Node, Tasks; under ANALYZE Tasks Run, Rows, Bytes,
 *					 Time}], one object per node
 *	Moves			[label, ...], then Bytes Moved, Moves Run, Move Time
 *	Tasks Run		under ANALYZE when the executor pruned (as in TEXT)
 *	Rows Moved		a number
 *	Remote SQL		the first task's; under VERBOSE instead Remote Tasks,
 *					[{Node, Partition Class, Remote SQL; under ANALYZE
 *					 Rows, Bytes, Time}], one object per task
 *
 * Time is in ms and only with TIMING.  The per-node statistics TEXT prints
 * as "Node ..." lines are the Tasks objects' ANALYZE fields.
 */
static void
explain_structured(CjScanState *st, List *nodes, ExplainState *es)
{
	ListCell   *lc;
	int			i;

	ExplainPropertyText("Strategy", st->strategy, es);

	ExplainOpenGroup("Partitions", "Partitions", true, es);
	ExplainPropertyInteger("Total", NULL, st->nclasses, es);
	ExplainPropertyInteger("Planned", NULL, st->nplanned, es);
	ExplainPropertyInteger("Pruned", NULL, st->npruned, es);
	ExplainPropertyInteger("Empty", NULL, st->nempty, es);
	if (es->analyze && st->pruned_at_run_time)
		ExplainPropertyInteger("Run", NULL, st->ntasks_run, es);
	ExplainCloseGroup("Partitions", "Partitions", true, es);

	ExplainOpenGroup("Tasks", "Tasks", false, es);
	foreach(lc, nodes)
	{
		CjNodeSummary *ns = lfirst(lc);

		ExplainOpenGroup("Node Tasks", NULL, true, es);
		ExplainPropertyText("Node", ns->node, es);
		ExplainPropertyInteger("Tasks", NULL, ns->tasks, es);
		if (es->analyze)
		{
			ExplainPropertyInteger("Tasks Run", NULL, ns->tasks_run, es);
			ExplainPropertyFloat("Rows", NULL, ns->rows, 0, es);
			ExplainPropertyUInteger("Bytes", NULL, ns->bytes, es);
			if (es->timing)
				ExplainPropertyFloat("Time", "ms", ns->seconds * 1000.0, 3, es);
		}
		ExplainCloseGroup("Node Tasks", NULL, true, es);
	}
	ExplainCloseGroup("Tasks", "Tasks", false, es);

	if (st->nmoves > 0)
	{
		List	   *labels = NIL;

		for (i = 0; i < st->nmoves; i++)
			labels = lappend(labels, st->moves[i].label);
		ExplainPropertyList("Moves", labels, es);
		list_free(labels);
		explain_move_totals(st, es);
	}
	explain_run_summary(st, es);
	if (es->verbose)
	{
		ExplainOpenGroup("Remote Tasks", "Remote Tasks", false, es);
		for (i = 0; i < st->ntasks; i++)
		{
			CjExecTask *task = &st->tasks[i];

			ExplainOpenGroup("Task", NULL, true, es);
			ExplainPropertyText("Node", task->node, es);
			ExplainPropertyText("Partition Class", task->label, es);
			ExplainPropertyText("Remote SQL", task->sql, es);
			if (es->analyze)
			{
				ExplainPropertyFloat("Rows", NULL, task->rows, 0, es);
				ExplainPropertyUInteger("Bytes", NULL, task->bytes, es);
				if (es->timing)
					ExplainPropertyFloat("Time", "ms", task->seconds * 1000.0, 3, es);
			}
			ExplainCloseGroup("Task", NULL, true, es);
		}
		ExplainCloseGroup("Remote Tasks", "Remote Tasks", false, es);
	}
}

void
cj_explain_scan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	CjScanState *st = (CjScanState *) node;
	List	   *nodes = summarise_nodes(st);

	if (es->format == EXPLAIN_FORMAT_TEXT)
		explain_text(st, nodes, es);
	else
		explain_structured(st, nodes, es);
	list_free_deep(nodes);
}
