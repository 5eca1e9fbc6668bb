/*-------------------------------------------------------------------------
 *
 * write_guard.c
 *	  Replicas never lie: writes that would reach only the primary
 *	  placement of a leaf with replicas are refused.
 *
 *	  colojoin's write path (modify.c, copy_from.c) writes every placement.
 *	  What it leaves to PostgreSQL goes through postgres_fdw, which writes a
 *	  foreign leaf on its own server only: a replica (colojoin.replicas)
 *	  would silently keep the old rows and a later join reading it would
 *	  answer wrong.  So INSERT, UPDATE, DELETE, COPY FROM and TRUNCATE
 *	  planned by PostgreSQL that could reach such a leaf stop with an error
 *	  naming the leaf and its replicas, before anything is written.
 *
 *	  This file only refuses; it does not route or perform writes, and it
 *	  knows nothing of writes made on the nodes directly.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "executor/executor.h"
#include "lib/stringinfo.h"
#include "nodes/parsenodes.h"
#include "parser/parsetree.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "metadata/metadata.h"
#include "util/extension.h"
#include "util/fdw_writes.h"
#include "write/modify.h"
#include "write/row_writes.h"

static ExecutorStart_hook_type prev_executor_start = NULL;
static ProcessUtility_hook_type prev_process_utility = NULL;

/*
 * append_replicated_leaves
 *		Add to buf "leaf (replicas on s1, s2)" for every leaf of the sharded
 *		table root that lies at or below relid (relid itself a leaf, or a
 *		partitioned table of any level) and has replicas.  Returns how many.
 */
static int
append_replicated_leaves(StringInfo buf, Oid root, Oid relid)
{
	CjTable    *t = cj_get_table(root);
	int			found = 0;
	int			c,
				l,
				p;

	if (t == NULL)
		return 0;
	for (c = 0; c < t->nclasses; c++)
	{
		for (l = 0; l < t->classes[c].nleaves; l++)
		{
			CjLeaf	   *leaf = &t->classes[c].leaves[l];

			if (leaf->nplacements < 2)
				continue;
			if (leaf->relid != relid && relid != root &&
				!list_member_oid(get_partition_ancestors(leaf->relid), relid))
				continue;
			appendStringInfo(buf, "%s%s (on ", found ? ", " : "",
							 quote_identifier(get_rel_name(leaf->relid)));
			for (p = 0; p < leaf->nplacements; p++)
			{
				if (!leaf->placements[p].is_replica)
					continue;
				appendStringInfo(buf, "%s%s", buf->data[buf->len - 1] == ' ' ? "" : ", ",
								 cj_node_name(leaf->placements[p].serverid));
			}
			appendStringInfoChar(buf, ')');
			found++;
		}
	}
	return found;
}

/*
 * check_relation
 *		Refuse a write of kind what (INSERT, COPY, ...) to relid when it can
 *		reach a leaf with replicas.  Cheap for tables that are not part of a
 *		sharded table: one relkind lookup.
 */
static void
check_relation(Oid relid, const char *what)
{
	char		relkind = get_rel_relkind(relid);
	Oid			root = relid;
	List	   *ancestors;
	StringInfoData buf;
	int			n;

	if (relkind != RELKIND_FOREIGN_TABLE && relkind != RELKIND_PARTITIONED_TABLE)
		return;
	if (!colojoin_is_active() || cj_replicas_relid() == InvalidOid)
		return;
	ancestors = get_partition_ancestors(relid);
	if (ancestors != NIL)
		root = llast_oid(ancestors);
	else if (relkind != RELKIND_PARTITIONED_TABLE)
		return;					/* a foreign table that is not a partition */

	initStringInfo(&buf);
	n = append_replicated_leaves(&buf, root, relid);
	if (n == 0)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg_plural("cannot %s \"%s\": leaf %s has replica placements",
						   "cannot %s \"%s\": leaves %s have replica placements",
						   n, what, get_rel_name(relid), buf.data),
			 errdetail("colojoin writes every placement only of writes it runs itself (through the sharded table, with expressions the nodes can evaluate, no triggers on the coordinator); this one would go through postgres_fdw, which changes only the primary placement."),
			 errhint("Write through the sharded table, or remove the replicas with colojoin.drop_replica() and add them again after the write.")));
}

static const char *
command_verb(CmdType cmd)
{
	switch (cmd)
	{
		case CMD_INSERT:
			return "insert into";
		case CMD_UPDATE:
			return "update";
		case CMD_DELETE:
			return "delete from";
		default:
			return "write to";
	}
}

/*
 * The result relations of a plan: the leaves an UPDATE or DELETE can reach
 * after pruning, and the table an INSERT routes from (every leaf of it may
 * get rows).  Data-modifying CTEs put theirs in the same list.
 */
static void
cj_guard_executor_start(QueryDesc *queryDesc, int eflags)
{
	PlannedStmt *stmt = queryDesc->plannedstmt;

	/* colojoin's row-by-row writes reach every placement */
	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0 &&
		(stmt->commandType != CMD_SELECT || stmt->hasModifyingCTE) &&
		!cj_plan_is_row_writes(stmt))
	{
		ListCell   *lc;

		foreach(lc, stmt->resultRelations)
		{
			RangeTblEntry *rte = rt_fetch(lfirst_int(lc), stmt->rtable);

			check_relation(rte->relid, command_verb(stmt->commandType == CMD_SELECT ?
													CMD_UNKNOWN : stmt->commandType));
		}
	}
	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

/* COPY FROM and TRUNCATE reach foreign leaves without the executor */
static void
cj_guard_process_utility(PlannedStmt *pstmt, const char *queryString,
						 bool readOnlyTree, ProcessUtilityContext context,
						 ParamListInfo params, QueryEnvironment *queryEnv,
						 DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;

	if (IsA(parsetree, CopyStmt) && !cj_writes_through_colojoin &&
		((CopyStmt *) parsetree)->is_from &&
		((CopyStmt *) parsetree)->relation != NULL)
	{
		Oid			relid = RangeVarGetRelid(((CopyStmt *) parsetree)->relation,
											 NoLock, true);

		if (OidIsValid(relid))
			check_relation(relid, "copy into");
	}
	else if (IsA(parsetree, TruncateStmt))
	{
		ListCell   *lc;

		foreach(lc, ((TruncateStmt *) parsetree)->relations)
		{
			Oid			relid = RangeVarGetRelid(lfirst_node(RangeVar, lc),
												 NoLock, true);

			if (OidIsValid(relid))
				check_relation(relid, "truncate");
		}
	}

	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context,
							 params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

void
cj_write_guard_init(void)
{
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = cj_guard_executor_start;
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = cj_guard_process_utility;
}
