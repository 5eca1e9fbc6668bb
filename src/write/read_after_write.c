/*-------------------------------------------------------------------------
 *
 * read_after_write.c
 *	  A transaction reads what it wrote through colojoin.
 *
 *	  colojoin's writes live, until commit, only in the remote transaction
 *	  of one connection per node (connection.c's write slot).  postgres_fdw
 *	  reads through connections of its own and would not see them, so once
 *	  a transaction wrote through colojoin:
 *	  - every scan of a sharded table is planned as colojoin's scan (which
 *	    reads through the write connections), and no partitionwise join is
 *	    made of its foreign partitions;
 *	  - plans cached before the first write are planned again;
 *	  - a plan that would still read or write a node colojoin wrote on
 *	    through postgres_fdw (a foreign partition named directly, a write
 *	    colojoin declined) is refused with an error, never run to a wrong
 *	    answer.
 *
 *	  The same scans are colojoin's while PostgreSQL plans the rows of an
 *	  INSERT into a sharded table (modify.c): an INSERT ... SELECT whose
 *	  SELECT is then one colojoin scan colocated with the target runs on
 *	  the nodes.
 *
 *	  The reverse case, writes through postgres_fdw first, is the
 *	  executor's (colojoin then stays out of the transaction's joins).
 *	  This file plans nothing else and writes nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "optimizer/optimizer.h"

#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "executor/executor.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "parser/parsetree.h"
#include "tcop/utility.h"
#include "utils/lsyscache.h"

#include "metadata/metadata.h"
#include "operations/placement_health.h"
#include "plan/join_group.h"
#include "remote/connection.h"
#include "util/extension.h"
#include "plan/planner.h"
#include "write/modify.h"
#include "write/row_writes.h"

static const char *written_node_of(Oid relid);

static set_rel_pathlist_hook_type prev_rel_pathlist = NULL;
static ExecutorStart_hook_type prev_executor_start = NULL;
static ProcessUtility_hook_type prev_process_utility = NULL;

/*
 * TRUNCATE, and COPY FROM that colojoin's write path did not take, write
 * through postgres_fdw: after colojoin wrote on the same nodes they would
 * neither see those writes nor commit with them.
 */
static void
refuse_fdw_utility(Node *parsetree)
{
	List	   *rels = NIL;
	ListCell   *lc;

	if (IsA(parsetree, TruncateStmt))
		rels = ((TruncateStmt *) parsetree)->relations;
	else if (IsA(parsetree, CopyStmt) && ((CopyStmt *) parsetree)->is_from &&
			 ((CopyStmt *) parsetree)->relation != NULL)
		rels = list_make1(((CopyStmt *) parsetree)->relation);
	foreach(lc, rels)
	{
		Oid			relid = RangeVarGetRelid(lfirst_node(RangeVar, lc), NoLock, true);
		const char *node = NULL;

		if (!OidIsValid(relid))
			continue;
		if (get_rel_relkind(relid) == RELKIND_FOREIGN_TABLE)
		{
			Oid			server = GetForeignTable(relid)->serverid;

			if (cj_write_slot(server, GetUserId()) >= 0)
				node = cj_node_name(server);
		}
		else if (get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE)
			node = written_node_of(relid);
		if (node != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot %s \"%s\" through postgres_fdw after this transaction wrote on node \"%s\" through colojoin",
							IsA(parsetree, TruncateStmt) ? "truncate" : "copy into",
							get_rel_name(relid), node),
					 errdetail("postgres_fdw's connections neither see colojoin's uncommitted writes nor commit with them."),
					 errhint("Commit the writes first.")));
	}
}

/*
 * ANALYZE samples foreign tables through postgres_fdw: in a transaction
 * that wrote through colojoin it does not see those rows.  Not a wrong
 * answer, but statistics of the table as it was: say so.
 */
static void
cj_raw_process_utility(PlannedStmt *pstmt, const char *queryString,
					   bool readOnlyTree, ProcessUtilityContext context,
					   ParamListInfo params, QueryEnvironment *queryEnv,
					   DestReceiver *dest, QueryCompletion *qc)
{
	if (cj_xact_has_dml())
		refuse_fdw_utility(pstmt->utilityStmt);
	if (IsA(pstmt->utilityStmt, VacuumStmt) && cj_xact_has_dml())
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("ANALYZE does not see the rows this transaction wrote through colojoin"),
				 errdetail("It samples foreign tables through postgres_fdw's connections, which see the nodes as they were before the transaction."),
				 errhint("Run ANALYZE after the transaction commits.")));
	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context,
							 params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

static void
cj_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
				RangeTblEntry *rte)
{
	if (prev_rel_pathlist)
		prev_rel_pathlist(root, rel, rti, rte);
	if (rel->reloptkind != RELOPT_BASEREL ||
		rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_PARTITIONED_TABLE ||
		!rte->inh || IS_DUMMY_REL(rel) || !colojoin_is_active())
		return;
	/* the table an UPDATE or DELETE changes is the write path's business */
	if (rti == (Index) root->parse->resultRelation)
		return;
	if (!(cj_xact_has_dml() || cj_planning_insert_source ||
		  cj_health_primary_stale(rte->relid)) || cj_planning_write_pruning ||
		cj_plan_no_custom_paths)
		return;

	/*
	 * System columns (tableoid, ctid) are the partitions' own: PostgreSQL
	 * scans them, through colojoin's connections (row_writes.c).
	 */
	{
		int			a;
		Bitmapset  *used = NULL;
		ListCell   *lc;

		for (a = rel->min_attr; a < 0; a++)
			if (!bms_is_empty(rel->attr_needed[a - rel->min_attr]))
				return;
		foreach(lc, rel->baserestrictinfo)
			pull_varattnos((Node *) ((RestrictInfo *) lfirst(lc))->clause,
						   rti, &used);
		a = bms_next_member(used, -1);
		if (a >= 0 && a + FirstLowInvalidHeapAttributeNumber < 0)
			return;
	}

	/* joins of its partitions would be postgres_fdw's */
	rel->consider_partitionwise_join = false;
	{
		CjJoinGroup *g = cj_group_for_input(root, rel);
		Path	   *path;

		if (g == NULL)
			return;
		path = cj_make_upper_path(root, rel, g, rel->reltarget,
								  cj_make_spec("scan of the table"), rel->rows);
		rel->pathlist = NIL;
		rel->partial_pathlist = NIL;
		add_path(rel, path);

		/*
		 * Nor may PostgreSQL remake the scan out of the partitions' own
		 * paths (it does so for partitioned relations when it applies the
		 * final target, and for partitionwise aggregation).
		 */
		rel->part_scheme = NULL;
	}
}

/* a node colojoin wrote on that holds a leaf of relid, or NULL */
static const char *
written_node_of(Oid relid)
{
	CjTable    *t = cj_get_table(relid);
	int			c,
				l,
				p;

	for (c = 0; t != NULL && c < t->nclasses; c++)
		for (l = 0; l < t->classes[c].nleaves; l++)
			for (p = 0; p < t->classes[c].leaves[l].nplacements; p++)
			{
				Oid			server = t->classes[c].leaves[l].placements[p].serverid;

				if (OidIsValid(server) && cj_write_slot(server, GetUserId()) >= 0)
					return cj_node_name(server);
			}
	return NULL;
}

/* does plan (or a plan below it) go to a node colojoin wrote on? */
static bool
reads_written_node(Plan *plan, PlannedStmt *stmt, const char **what)
{
	if (plan == NULL)
		return false;
	if (IsA(plan, ForeignScan) && OidIsValid(((ForeignScan *) plan)->fs_server) &&
		cj_write_slot(((ForeignScan *) plan)->fs_server, GetUserId()) >= 0)
	{
		*what = cj_node_name(((ForeignScan *) plan)->fs_server);
		return true;
	}
	if (IsA(plan, ForeignScan) && OidIsValid(((ForeignScan *) plan)->fs_server))
	{
		ForeignScan *fs = (ForeignScan *) plan;
		int			rti = -1;

		/* every table it reads: one, or several a pushed join or aggregate reads */
		while ((rti = bms_next_member(fs->fs_relids, rti)) >= 0)
		{
			Oid			relid = rt_fetch(rti, stmt->rtable)->relid;

			if (cj_health_is_stale(relid, fs->fs_server))
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("cannot read \"%s\" through postgres_fdw: its placement on node \"%s\" is stale",
								get_rel_name(relid), cj_node_name(fs->fs_server)),
						 errdetail("The placement missed a write while its node was down."),
						 errhint("Query the sharded table (colojoin reads a healthy placement), or SELECT colojoin.repair_placement('%s', '%s').",
								 get_rel_name(relid), cj_node_name(fs->fs_server))));
		}
	}
	if (IsA(plan, ModifyTable))
	{
		ListCell   *lc;

		foreach(lc, ((ModifyTable *) plan)->resultRelations)
		{
			RangeTblEntry *rte = rt_fetch(lfirst_int(lc), stmt->rtable);

			if (rte->relkind == RELKIND_FOREIGN_TABLE)
			{
				ForeignTable *ft = GetForeignTable(rte->relid);

				if (cj_write_slot(ft->serverid, GetUserId()) >= 0)
				{
					*what = cj_node_name(ft->serverid);
					return true;
				}
			}
			else if (rte->relkind == RELKIND_PARTITIONED_TABLE &&
					 (*what = written_node_of(rte->relid)) != NULL)
				return true;
		}
	}
	if (reads_written_node(plan->lefttree, stmt, what) ||
		reads_written_node(plan->righttree, stmt, what))
		return true;
	if (IsA(plan, Append))
	{
		ListCell   *lc;

		foreach(lc, ((Append *) plan)->appendplans)
			if (reads_written_node((Plan *) lfirst(lc), stmt, what))
				return true;
	}
	else if (IsA(plan, MergeAppend))
	{
		ListCell   *lc;

		foreach(lc, ((MergeAppend *) plan)->mergeplans)
			if (reads_written_node((Plan *) lfirst(lc), stmt, what))
				return true;
	}
	else if (IsA(plan, SubqueryScan))
		return reads_written_node(((SubqueryScan *) plan)->subplan, stmt, what);
	else if (IsA(plan, CustomScan))
	{
		ListCell   *lc;

		foreach(lc, ((CustomScan *) plan)->custom_plans)
			if (reads_written_node((Plan *) lfirst(lc), stmt, what))
				return true;
	}
	return false;
}

static void
cj_raw_executor_start(QueryDesc *queryDesc, int eflags)
{
	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0 &&
		(cj_xact_has_dml() || cj_any_stale_placement()) &&
		!cj_plan_is_row_writes(queryDesc->plannedstmt))
	{
		PlannedStmt *stmt = queryDesc->plannedstmt;
		const char *what = NULL;
		bool		found = reads_written_node(stmt->planTree, stmt, &what);
		ListCell   *lc;

		foreach(lc, stmt->subplans)
			found = found || reads_written_node((Plan *) lfirst(lc), stmt, &what);
		if (found)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot read or write node \"%s\" through postgres_fdw after this transaction wrote there through colojoin",
							what),
					 errdetail("postgres_fdw's connections do not see colojoin's uncommitted writes; the answer would be wrong."),
					 errhint("Query the sharded table rather than its foreign partitions, or commit the writes first.")));
	}
	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

void
cj_read_after_write_init(void)
{
	prev_rel_pathlist = set_rel_pathlist_hook;
	set_rel_pathlist_hook = cj_rel_pathlist;
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = cj_raw_executor_start;
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = cj_raw_process_utility;
}
