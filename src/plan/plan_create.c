/*-------------------------------------------------------------------------
 *
 * plan_create.c
 *	  From the chosen path to the plan: the CustomScan of a colocated group,
 *	  with its tasks (their SQL written by remote_sql.c), failover
 *	  alternatives, moves, run-time pruning keys and EXPLAIN texts, all in
 *	  custom_private as plain nodes.
 *
 *	  It writes down what planner.c decided; it decides nothing new.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/hash.h"
#include "catalog/pg_am.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"
#include "optimizer/tlist.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "metadata/colocation.h"
#include "metadata/metadata.h"
#include "plan/hints.h"
#include "plan/planner_internal.h"
#include "plan/scan_plan.h"

CustomScanMethods cj_scan_methods = {
	.CustomName = COLOJOIN_CUSTOM_SCAN_NAME,
	/* CreateCustomScanState: set by the executor (cj_executor_init) */
};

/*
 * find_prune_keys
 *		Run-time pruning for parameters (generic plans, PL/pgSQL): a
 *		hash-partitioned table that every result row needs, whose partition
 *		key columns are all equated with parameters of the key's own type.
 *		At execution, only the class those values hash to can produce rows.
 *		Returns the parameter expressions, one per key column, or NIL.
 */
static List *
find_prune_keys(CjJoinGroup *g, int *prune_rel)
{
	int			nt = list_length(g->rels);
	bool	   *present = palloc(sizeof(bool) * nt);
	int			t;

	for (t = 0; t < nt; t++)
	{
		CjBaseRel  *br = list_nth(g->rels, t);
		CjTable    *table = br->table;
		List	   *exprs = NIL;
		int			p;
		int			c;

		if (br->move != CJ_MOVE_NONE || table->strategy != PARTITION_STRATEGY_HASH ||
			br->space_index >= g->space->ntables - cj_group_references(g))
			continue;
		/* required: without its rows no class produces anything */
		memset(present, true, sizeof(bool) * nt);
		present[t] = false;
		if (cj_tree_produces(g->tree, present))
			continue;
		/* one modulus, so that a value names one class */
		for (c = 1; c < table->nclasses; c++)
			if (table->classes[c].bound->modulus != table->classes[0].bound->modulus)
				break;
		if (c < table->nclasses)
			continue;

		for (p = 0; p < table->partnatts; p++)
		{
			Var		   *kv;
			ListCell   *lc;
			Expr	   *found = NULL;

			/* an expression key would need its expression of the value */
			if (table->partattrs[p] == 0)
				break;
			kv = cj_key_var(br, p);

			foreach(lc, br->quals)
			{
				OpExpr	   *op = (OpExpr *) lfirst(lc);
				Node	   *l,
						   *r;
				Node	   *other;

				if (!IsA(op, OpExpr) || list_length(op->args) != 2)
					continue;
				l = linitial(op->args);
				r = lsecond(op->args);
				if (cj_is_var_of(l, kv))
					other = r;
				else if (cj_is_var_of(r, kv))
					other = l;
				else
					continue;
				while (other && IsA(other, RelabelType))
					other = (Node *) ((RelabelType *) other)->arg;
				if (!IsA(other, Param) ||
					(((Param *) other)->paramkind != PARAM_EXTERN &&
					 ((Param *) other)->paramkind != PARAM_EXEC) ||
					exprType(other) != table->parttypid[p] ||
					get_op_opfamily_strategy(op->opno, table->partopfamily[p]) != HTEqualStrategyNumber)
					continue;
				found = (Expr *) other;
				break;
			}
			if (found == NULL)
				break;
			exprs = lappend(exprs, found);
		}
		if (p == table->partnatts)
		{
			*prune_rel = t;
			return exprs;
		}
	}
	return NIL;
}

/*
 * task_alternatives
 *		Failover: the other nodes that hold every live leaf of the task's
 *		class, each with the task's SQL as it runs there (a replica's
 *		placement may be named differently).  None for a group that moves
 *		rows: its tasks read temporary tables filled on one node.
 */
static List *
task_alternatives(CjJoinGroup *g, CjTask *task, List *scan_vars,
				  CjUpperSpec *spec, CjSqlContext *sc)
{
	List	   *result = NIL;
	ListCell   *lc;

	if (cj_moved_tables(g) != NIL)
		return NIL;
	foreach(lc, task->alternatives)
	{
		Oid			alt = lfirst_oid(lc);

		result = lappend(result,
						 list_make3(makeInteger((int) alt),
									makeString(cj_node_name(alt)),
									makeString(cj_task_sql(g, scan_vars, spec,
														   task->cls, alt, sc))));
	}
	return result;
}

/*
 * task_units
 *		The tasks of g as the plan runs them: a List of Lists of CjTask, one
 *		task each, or all the tasks of one node together.  A group that
 *		moves rows reads each node's tasks one after another on one
 *		connection (its temporary tables live there), so one query over all
 *		the node's classes does the same work once: the moved table is
 *		hashed or scanned once per node, not once per class.  Not when run-
 *		time pruning picks tasks, LATERAL subqueries or copied refining
 *		partitions are read per class, a group repartitions both sides
 *		(one class per node already), or the classes' leaves differ in
 *		column types (cj_classes_union_alike).
 */
static List *
task_units(CjJoinGroup *g, List *prune_exprs)
{
	List	   *units = NIL;
	List	   *classes = NIL;
	bool		moves = false;
	bool		refining = false;
	ListCell   *lc;

	foreach(lc, g->rels)
	{
		int			move = ((CjBaseRel *) lfirst(lc))->move;

		moves |= (move != CJ_MOVE_NONE);
		refining |= (move == CJ_MOVE_PARTITIONS);
	}
	foreach(lc, g->tasks)
		classes = lappend_int(classes, ((CjTask *) lfirst(lc))->cls);
	if (!moves || refining || prune_exprs != NIL || g->space->ntables == 0 ||
		cj_tree_has_lateral(g->tree) || !cj_classes_union_alike(g, classes))
	{
		foreach(lc, g->tasks)
			units = lappend(units, list_make1(lfirst(lc)));
		return units;
	}
	foreach(lc, g->tasks)
	{
		CjTask	   *task = lfirst(lc);
		ListCell   *lu;

		foreach(lu, units)
			if (((CjTask *) linitial((List *) lfirst(lu)))->serverid == task->serverid)
				break;
		if (lu != NULL)
			lfirst(lu) = lappend((List *) lfirst(lu), task);
		else
			units = lappend(units, list_make1(task));
	}
	return units;
}

/*
 * cj_plan_custom_path
 *		The CustomScan of a chosen colocated path: its scan tuple holds the
 *		columns the remote queries return; conditions that cannot run on the
 *		nodes are its qual.
 */
Plan *
cj_plan_custom_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
					List *tlist, List *clauses, List *custom_plans)
{
	CjJoinGroup *g;
	CjUpperSpec *spec = NULL;
	CustomScan *cscan = makeNode(CustomScan);
	List	   *scan_vars = NIL;
	List	   *scan_tlist = NIL;
	List	   *tasks = NIL;
	List	   *private;
	CjSqlContext sc;
	ListCell   *lc;
	List	   *prune_exprs;
	int			prune_rel = -1;
	List	   *moves;
	double		rows_moved = 0;

	if (best_path->custom_private != NIL)
	{
		/* an upper path: the group and what its remote query computes */
		g = (CjJoinGroup *) linitial(best_path->custom_private);
		spec = (CjUpperSpec *) lsecond(best_path->custom_private);
	}
	else if ((g = cj_group_of_rel(rel)) == NULL)
		elog(ERROR, "colojoin: no plan information for a colocated join path");
	cj_note_chosen(root, rel, g, spec);

	if (spec && spec->remote_exprs != NIL)
	{
		/* an upper path: the nodes return exactly spec's select list */
		int			resno = 1;

		scan_vars = spec->remote_exprs;
		foreach(lc, scan_vars)
			scan_tlist = lappend(scan_tlist,
								 makeTargetEntry((Expr *) lfirst(lc), resno++, NULL, false));
	}
	else
	{
		/*
		 * What the nodes must return: the join's output and the local
		 * filters' columns.  The path's own target, not rel->reltarget: by
		 * now the planner may have replaced the latter with the final target
		 * list, expressions included.
		 */
		foreach(lc, pull_var_clause((Node *) best_path->path.pathtarget->exprs,
									PVC_RECURSE_PLACEHOLDERS))
			scan_vars = list_append_unique(scan_vars, lfirst(lc));
		foreach(lc, pull_var_clause((Node *) g->local_quals, PVC_RECURSE_PLACEHOLDERS))
			scan_vars = list_append_unique(scan_vars, lfirst(lc));
		scan_tlist = add_to_flat_tlist(NIL, scan_vars);
	}

	/* the tables LATERAL subqueries read are checked and locked as usual */
	cj_lateral_plan_rtes(root, g->tree);

	cj_sql_context_init(&sc, g);
	/* window functions computed in the tasks name the query's windows */
	sc.dctx.windows = root->parse->windowClause;
	sc.dctx.window_tlist = root->processed_tlist;

	prune_exprs = find_prune_keys(g, &prune_rel);
	foreach(lc, task_units(g, prune_exprs))
	{
		List	   *unit = lfirst(lc);
		CjTask	   *task = linitial(unit);
		int			remainder = -1;
		int			m = prune_exprs ?
			CJ_MEMBER(g->space, task->cls,
					  ((CjBaseRel *) list_nth(g->rels, prune_rel))->space_index) : -1;
		List	   *t = NIL;
		List	   *members = NIL;
		int			k;

		if (m >= 0)
			remainder = ((CjBaseRel *) list_nth(g->rels, prune_rel))->table->classes[m].bound->remainder;

		t = lappend(t, makeInteger(task->cls));
		t = lappend(t, makeInteger((int) task->serverid));
		t = lappend(t, makeString(cj_node_name(task->serverid)));
		if (list_length(unit) == 1)
		{
			t = lappend(t, makeString(cj_task_sql(g, scan_vars, spec, task->cls,
												  task->serverid, &sc)));
			t = lappend(t, makeString(cj_class_label(g->space, task->cls)));
			t = lappend(t, makeInteger(remainder));
			t = lappend(t, task_alternatives(g, task, scan_vars, spec, &sc));
			for (k = 0; k < g->space->ntables; k++)
				members = lappend(members,
								  makeInteger(CJ_MEMBER(g->space, task->cls, k)));
		}
		else
		{
			StringInfoData label;
			ListCell   *lu;

			/* one task for every class of the node (task_units) */
			initStringInfo(&label);
			sc.classes = NIL;
			foreach(lu, unit)
			{
				CjTask	   *ut = lfirst(lu);

				sc.classes = lappend_int(sc.classes, ut->cls);
				appendStringInfo(&label, "%s%s", label.len ? "; " : "",
								 cj_class_label(g->space, ut->cls));
			}
			t = lappend(t, makeString(cj_task_sql(g, scan_vars, spec, task->cls,
												  task->serverid, &sc)));
			sc.classes = NIL;
			t = lappend(t, makeString(label.data));
			t = lappend(t, makeInteger(-1));
			t = lappend(t, NIL);
			/* no single class per table (a plan with moves is never an
			 * INSERT ... SELECT pushed to the nodes, modify.c) */
			for (k = 0; k < g->space->ntables; k++)
				members = lappend(members, makeInteger(-1));
		}
		t = lappend(t, members);
		t = lappend(t, makeInteger(list_length(unit)));
		tasks = lappend(tasks, t);
	}

	private = NIL;
	/* the coordinator rows' moves name their child plans by position */
	cj_number_coordinator_rows(g);
	if (list_length(custom_plans) != list_length(cj_coordinator_paths(g)))
		elog(ERROR, "colojoin: a colocated join path lost its child plans");
	moves = cj_build_moves(root, g, &sc, &rows_moved);
	{
		char	   *on = g->move_text ?
			psprintf("%s, then colocated on %s", g->move_text, g->keys_text) :
			psprintf("colocated on %s", g->keys_text);

		private = lappend(private,
						  makeString(spec ? psprintf("%s, %s", spec->strategy, on) : on));
	}
	private = lappend(private, makeInteger(g->space->nclasses));
	private = lappend(private, makeInteger(g->npruned));
	private = lappend(private, makeInteger(g->nempty));
	private = lappend(private, makeInteger((int) g->userid));
	private = lappend(private, tasks);
	private = lappend(private, makeInteger((int) Min(rows_moved, (double) PG_INT32_MAX)));

	/*
	 * Run-time pruning: the key parameters go after the remote parameters
	 * in custom_exprs; the plan keeps their positions, the hash support
	 * functions and collations of the table, and its modulus.
	 */
	if (prune_exprs != NIL)
	{
		CjTable    *pt = ((CjBaseRel *) list_nth(g->rels, prune_rel))->table;
		List	   *keys = NIL;
		int			p;

		for (p = 0; p < pt->partnatts; p++)
		{
			Oid			procid = get_opfamily_proc(pt->partopfamily[p],
												   pt->partopcintype[p],
												   pt->partopcintype[p],
												   HASHEXTENDED_PROC);

			keys = lappend(keys,
						   list_make3(makeInteger(list_length(sc.dctx.params) + p),
									  makeInteger((int) procid),
									  makeInteger((int) pt->partcollation[p])));
		}
		private = lappend(private,
						  list_make2(makeInteger(pt->classes[0].bound->modulus), keys));
	}
	else
		private = lappend(private, NIL);
	{
		StringInfoData hints;

		initStringInfo(&hints);
		foreach(lc, g->hints_used)
			appendStringInfo(&hints, "%s%s", hints.len ? " " : "",
							 ((CjHint *) lfirst(lc))->text);
		private = lappend(private, makeString(hints.data));
	}
	private = lappend(private, moves);
	{
		StringInfoData unused;

		initStringInfo(&unused);
		if (cj_statement_hints() != NULL)
			foreach(lc, cj_statement_hints()->hints)
			{
				CjHint	   *h = lfirst(lc);

				if (!h->used)
					appendStringInfo(&unused, "%s%s", unused.len ? " " : "", h->text);
			}
		private = lappend(private, makeString(unused.data));
	}
	{
		List	   *in_place = NIL;
		int			b = 0;

		foreach(lc, g->rels)
		{
			CjBaseRel  *br = (CjBaseRel *) lfirst(lc);

			if (br->space_index >= 0 && br->move == CJ_MOVE_NONE && br->table &&
				br->space_index < g->space->ntables - cj_group_references(g))
				in_place = lappend(in_place,
								   list_make4(makeInteger((int) br->rtindex),
											  makeInteger((int) br->relid),
											  makeInteger(br->space_index),
											  makeInteger((g->tree == NULL || cj_tree_keeps_rows_of(g->tree, b)) ? 1 : 0)));
			b++;
		}
		private = lappend(private, in_place);
	}

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = (spec && spec->remote_exprs) ? spec->local_quals :
		g->local_quals;
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	cscan->custom_exprs = list_concat(sc.dctx.params, prune_exprs);
	cscan->custom_private = private;
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_relids = bms_copy(g->rel->relids);
	cscan->methods = &cj_scan_methods;

	return (Plan *) cscan;
}

