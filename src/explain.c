/*-------------------------------------------------------------------------
 *
 * explain.c
 *	  EXPLAIN output of a colojoin CustomScan, in every EXPLAIN format: the
 *	  strategy and join keys, partitions run / pruned / empty, tasks per
 *	  node, rows moved between nodes, the remote SQL (one task, or every
 *	  task under VERBOSE), and under ANALYZE per-node tasks, rows, bytes
 *	  and time.
 *
 *	  It only reports; it never connects to a node.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/explain.h"
#include "lib/stringinfo.h"

#include "colojoin.h"
#include "executor.h"

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

void
cj_explain_scan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	CjScanState *st = (CjScanState *) node;
	List	   *nodes = summarise_nodes(st);
	StringInfoData buf;
	ListCell   *lc;
	int			i;

	ExplainPropertyText("Strategy", st->strategy, es);

	initStringInfo(&buf);
	appendStringInfo(&buf, "%d of %d (%d pruned, %d empty)",
					 st->ntasks, st->nclasses, st->npruned, st->nempty);
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
		if (es->analyze)
		{
			uint64		bytes = 0;
			double		seconds = 0;

			for (i = 0; i < st->nmoves; i++)
			{
				bytes += st->moves[i].bytes;
				seconds += st->moves[i].seconds;
			}
			ExplainPropertyUInteger("Bytes Moved", NULL, bytes, es);

			/* rescans reuse the moved rows: say how often they really moved */
			if (st->css.ss.ps.instrument && st->css.ss.ps.instrument->nloops > 1)
				ExplainPropertyInteger("Moves Run", NULL, st->moves[0].runs, es);
			if (es->timing)
				ExplainPropertyFloat("Move Time", "ms", seconds * 1000.0, 3, es);
		}
	}
	if (es->analyze && st->pruned_at_run_time)
		ExplainPropertyInteger("Tasks Run", NULL, st->ntasks_run, es);
	ExplainPropertyInteger("Rows Moved", NULL, st->rows_moved, es);
	if (st->hints[0] != '\0')
		ExplainPropertyText("Hints", st->hints, es);
	if (st->hints_unused[0] != '\0')
		ExplainPropertyText("Hints Not Used", st->hints_unused, es);

	if (!es->verbose)
	{
		if (st->ntasks > 0)
			ExplainPropertyText("Remote SQL", st->tasks[0].sql, es);
	}
	else
	{
		ExplainOpenGroup("Remote Tasks", "Remote Tasks", false, es);
		for (i = 0; i < st->ntasks; i++)
		{
			CjExecTask *task = &st->tasks[i];

			if (es->format == EXPLAIN_FORMAT_TEXT)
			{
				appendStringInfoSpaces(es->str, es->indent * 2);
				appendStringInfo(es->str, "Task %d on %s (%s): %s\n",
								 i + 1, task->node, task->label, task->sql);
				continue;
			}
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

	if (es->analyze)
	{
		ExplainOpenGroup("Nodes", "Nodes", false, es);
		foreach(lc, nodes)
		{
			CjNodeSummary *ns = lfirst(lc);

			if (es->format == EXPLAIN_FORMAT_TEXT)
			{
				appendStringInfoSpaces(es->str, es->indent * 2);
				appendStringInfo(es->str, "Node %s: tasks=%d rows=%.0f bytes=" UINT64_FORMAT,
								 ns->node, ns->tasks_run, ns->rows, ns->bytes);
				if (es->timing)
					appendStringInfo(es->str, " time=%.3f ms", ns->seconds * 1000.0);
				appendStringInfoChar(es->str, '\n');
				continue;
			}
			ExplainOpenGroup("Node", NULL, true, es);
			ExplainPropertyText("Node", ns->node, es);
			ExplainPropertyInteger("Tasks", NULL, ns->tasks_run, es);
			ExplainPropertyFloat("Rows", NULL, ns->rows, 0, es);
			ExplainPropertyUInteger("Bytes", NULL, ns->bytes, es);
			if (es->timing)
				ExplainPropertyFloat("Time", "ms", ns->seconds * 1000.0, 3, es);
			ExplainCloseGroup("Node", NULL, true, es);
		}
		ExplainCloseGroup("Nodes", "Nodes", false, es);
	}
}
