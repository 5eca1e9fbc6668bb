/*-------------------------------------------------------------------------
 *
 * failover.c
 *	  A scan's tasks whose node cannot be reached move to another
 *	  placement of their class (the plan lists each task's alternatives):
 *	  before the scan uses any connection, for nodes that failed moments
 *	  ago or cannot be connected to now, and during it, for a worker whose
 *	  node is lost before its task returned a row.  Only a class with no
 *	  reachable placement fails, naming the node.
 *
 *	  It does not decide where a class may run (the plan does) nor tell a
 *	  busy node from a down one (remote/connection.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "partitioning/partbounds.h"
#include "storage/latch.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"
#include "utils/wait_event.h"

#include "deparse/deparse.h"
#include "exec/executor.h"
#include "exec/local_source.h"
#include "exec/move_streams.h"
#include "metadata/metadata.h"
#include "plan/scan_plan.h"
#include "remote/connection.h"
#include "remote/node_health.h"
#include "util/settings.h"

/*
 * move_task_off
 *		Failover of one task whose node is down: onto the first other node
 *		holding its class that did not fail moments ago.  false when there
 *		is none; the task stays where it was.
 */
static bool
move_task_off(CjExecTask *task, Oid down)
{
	int			a;

	if (task->serverid != down)
		return true;
	for (a = 0; a < task->nalts; a++)
	{
		if (task->alt_server[a] == down || cj_node_failed_recently(task->alt_server[a]))
			continue;
		task->serverid = task->alt_server[a];
		task->node = task->alt_node[a];
		task->sql = task->alt_sql[a];
		task->failed_over = true;
		return true;
	}
	return false;
}

/*
 * fail_over_node
 *		Node down cannot be reached (why says how): every task there that
 *		has not returned a row moves to another placement of its class.
 *		When one cannot, the node's failure is the scan's error, as it would
 *		have been without failover.
 */
static void
fail_over_node(CjScanState *st, Oid down, const char *node, const char *why)
{
	int			i;

	cj_node_note_failure(down);
	for (i = 0; i < st->ntasks; i++)
	{
		CjExecTask *task = &st->tasks[i];

		if (task->serverid != down || task->skipped || task->done)
			continue;
		if (!move_task_off(task, down))
			ereport(ERROR,
					(errcode(ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION),
					 errmsg("could not connect to node \"%s\"", node),
					 errdetail_internal("%s", why),
					 errhint("Partition class %s has no other placement that can be reached.",
							 task->label)));
		elog(DEBUG1, "colojoin: partition class %s moves from node \"%s\" to \"%s\"",
			 task->label, node, task->node);
	}
}

/*
 * cj_avoid_unreachable_nodes
 *		Before any connection of the scan is used: nodes that failed moments
 *		ago, or that cannot be connected to now, hand their tasks to other
 *		placements (fail_over_node).  Connecting is tried once per node;
 *		a connection already open costs nothing.
 */
void
cj_avoid_unreachable_nodes(CjScanState *st, Oid userid)
{
	List	   *tried = NIL;
	bool		again = true;

	/* a task that moved may land on another node to try in turn */
	while (again)
	{
		int			i;

		again = false;
		for (i = 0; i < st->ntasks; i++)
		{
			CjExecTask *task = &st->tasks[i];
			char	   *why = NULL;
			Oid			node = task->serverid;
			const char *name = task->node;

			if (task->skipped || list_member_oid(tried, node))
				continue;
			tried = lappend_oid(tried, node);
			if (task->nalts == 0 && !cj_node_failed_recently(node))
				continue;		/* nowhere else to go: let it fail as before */
			if (cj_node_failed_recently(node))
				why = psprintf("node \"%s\" failed moments ago", name);
			else if (!cj_conn_try_connect(node, userid,
										  cj_write_slot(node, userid) >= 0 ?
										  cj_write_slot(node, userid) :
										  cj_first_free_slot(node, userid, 0), &why))
				;
			else
			{
				cj_node_note_success(node);
				continue;
			}
			fail_over_node(st, node, name, why);
			again = true;
		}
	}
}

/*
 * cj_fail_over_worker
 *		w's connection died under its task.  When no row of the task reached
 *		the scan's caller yet and its class has another placement, the task
 *		runs again there, on a connection of that node, and so do the
 *		node's tasks not started yet; returns true.  Otherwise false, and
 *		the caller reports the lost connection as before.
 */
bool
cj_fail_over_worker(CjScanState *st, CjWorker *w)
{
	Oid			userid = OidIsValid(st->userid) ? st->userid : GetUserId();
	CjExecTask *task = w->task;
	Oid			down = w->serverid;
	const char *name;
	int			i;
	int			a;
	bool		possible = false;

	if (st->nmoves > 0 || task == NULL || task->rows > 0 ||
		!cj_conn_is_lost(w->conn))
		return false;
	for (a = 0; a < task->nalts; a++)
		if (task->alt_server[a] != down && !cj_node_failed_recently(task->alt_server[a]))
			possible = true;
	if (!possible)
		return false;

	name = task->node;
	cj_release_batches(w);
	w->in_flight = false;
	cj_conn_abandon(w->conn);

	/* the node's tasks not started yet go elsewhere too */
	task->taken = false;
	fail_over_node(st, down, name, "its connection was lost during the scan");
	for (i = 0; i < st->nworkers; i++)
		if (st->workers[i].serverid == down && &st->workers[i] != w &&
			st->workers[i].task == NULL)
			st->workers[i].serverid = InvalidOid;	/* idle, and its node is gone */

	/* this worker serves the task's new node from now on */
	task->taken = true;
	w->serverid = task->serverid;
	w->slot = cj_first_free_slot(w->serverid, userid, 0);
	w->conn = cj_get_connection(w->serverid, userid, w->slot);
	w->begin_sql = NULL;
	cj_conn_set_owner(w->conn, st);
	ereport(DEBUG1,
			(errmsg_internal("colojoin: %s runs again on node \"%s\", node \"%s\" being lost",
							 cj_task_context(task), task->node, name)));
	cj_start_task(st, w, task);
	return true;
}
