/*-------------------------------------------------------------------------
 *
 * truncate.c
 *	  TRUNCATE of sharded tables and of their leaves, on colojoin's
 *	  connections.
 *
 *	  PostgreSQL truncates a foreign table through its wrapper's
 *	  ExecForeignTruncate, which for postgres_fdw runs on postgres_fdw's
 *	  connections: outside colojoin's remote transactions, so a TRUNCATE
 *	  and the writes around it in one transaction would not see each
 *	  other, and a replica would keep its rows.  colojoin's ProcessUtility
 *	  hook takes the leaves it manages out of the statement and truncates
 *	  every placement of each through the transaction's write connection
 *	  of its node; what is left (plain tables, other foreign tables) goes
 *	  on to PostgreSQL as a TRUNCATE of its own.
 *
 *	  It does not fire TRUNCATE triggers of the leaves it takes (foreign
 *	  leaves rarely have any; a sharded table that has them is left to
 *	  PostgreSQL whole).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "deparse/deparse.h"
#include "metadata/metadata.h"
#include "remote/connection.h"
#include "util/extension.h"
#include "util/settings.h"
#include "write/modify.h"
#include "write/row_writes.h"

static ProcessUtility_hook_type prev_process_utility = NULL;

/* may the current user truncate relid?  PostgreSQL's error otherwise */
static void
check_truncate(Oid relid)
{
	AclResult	acl = pg_class_aclcheck(relid, GetUserId(), ACL_TRUNCATE);

	if (acl != ACLCHECK_OK)
		aclcheck_error(acl, get_relkind_objtype(get_rel_relkind(relid)),
					   get_rel_name(relid));
}

/* has relid TRUNCATE triggers (fired by PostgreSQL only)? */
static bool
has_truncate_triggers(Oid relid)
{
	Relation	rel = table_open(relid, NoLock);
	bool		result = rel->trigdesc != NULL &&
		(rel->trigdesc->trig_truncate_before_statement ||
		 rel->trigdesc->trig_truncate_after_statement);

	table_close(rel, NoLock);
	return result;
}

/* truncate every placement of the leaves, each node at once per placement */
static void
truncate_leaves(List *leaves, TruncateStmt *stmt)
{
	List	   *conns = NIL;
	List	   *sqls = NIL;
	ListCell   *lc;
	ListCell   *ls;

	foreach(lc, leaves)
	{
		CjLeaf	   *leaf = cj_managed_leaf(lfirst_oid(lc));
		int			p;

		if (leaf == NULL)
			continue;
		for (p = 0; p < leaf->nplacements; p++)
		{
			CjPlacement *pl = &leaf->placements[p];

			conns = lappend(conns, cj_get_write_connection(pl->serverid, GetUserId()));
			sqls = lappend(sqls,
						   psprintf("TRUNCATE ONLY %s%s%s",
									cj_qualified_name(pl->remote_schema, pl->remote_table),
									stmt->restart_seqs ? " RESTART IDENTITY" : "",
									stmt->behavior == DROP_CASCADE ? " CASCADE" : ""));
		}
	}
	cj_check_two_phase(conns);
	forboth(lc, conns, ls, sqls)
	{
		CjConnection *conn = (CjConnection *) lfirst(lc);

		cj_exec_command(conn, (char *) lfirst(ls), "TRUNCATE");
		cj_conn_note_dml(conn);
	}
}

static void
cj_truncate_process_utility(PlannedStmt *pstmt, const char *queryString,
							bool readOnlyTree, ProcessUtilityContext context,
							ParamListInfo params, QueryEnvironment *queryEnv,
							DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;

	if (IsA(parsetree, TruncateStmt) && colojoin_enable &&
		colojoin_enable_writes && colojoin_is_active())
	{
		TruncateStmt *stmt = (TruncateStmt *) parsetree;
		List	   *leaves = NIL;
		List	   *rest = NIL;
		ListCell   *lc;

		foreach(lc, stmt->relations)
		{
			RangeVar   *rv = lfirst_node(RangeVar, lc);
			Oid			relid = RangeVarGetRelid(rv, AccessExclusiveLock, false);
			char		kind = get_rel_relkind(relid);
			List	   *members;
			ListCell   *lm;
			bool		taken = false;

			if (kind == RELKIND_FOREIGN_TABLE && cj_is_managed_leaf(relid))
				members = list_make1_oid(relid);
			else if (kind == RELKIND_PARTITIONED_TABLE && rv->inh &&
					 !has_truncate_triggers(relid))
				members = find_all_inheritors(relid, AccessExclusiveLock, NULL);
			else
				members = NIL;
			foreach(lm, members)
			{
				if (cj_is_managed_leaf(lfirst_oid(lm)))
					taken = true;
			}
			if (!taken)
			{
				rest = lappend(rest, rv);
				continue;
			}

			/* the others below it go to PostgreSQL one by one */
			foreach(lm, members)
			{
				Oid			member = lfirst_oid(lm);
				char		mkind = get_rel_relkind(member);

				check_truncate(member);
				if (mkind == RELKIND_FOREIGN_TABLE && cj_is_managed_leaf(member))
					leaves = list_append_unique_oid(leaves, member);
				else if (mkind != RELKIND_PARTITIONED_TABLE)
				{
					RangeVar   *m = makeRangeVar(get_namespace_name(get_rel_namespace(member)),
												 get_rel_name(member), -1);

					m->inh = false;
					rest = lappend(rest, m);
				}
			}
		}
		if (leaves != NIL)
		{
			truncate_leaves(leaves, stmt);
			if (rest == NIL)
			{
				if (qc)
					SetQueryCompletion(qc, CMDTAG_TRUNCATE_TABLE, 0);
				return;
			}
			stmt = copyObject(stmt);
			stmt->relations = rest;
			pstmt = copyObject(pstmt);
			pstmt->utilityStmt = (Node *) stmt;
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
cj_truncate_init(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = cj_truncate_process_utility;
}
