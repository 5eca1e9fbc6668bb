/*-------------------------------------------------------------------------
 *
 * modify.c
 *	  Planning colojoin's writes of sharded tables (modify.h).
 *
 *	  UPDATE and DELETE of a sharded table, alone or joined (FROM, USING)
 *	  with sharded tables colocated with it on its partition key, become one
 *	  remote statement per surviving leaf and placement: the statement
 *	  reads the colocated leaves on the same node, so no row travels.
 *	  Which leaves survive is PostgreSQL's own plan-time pruning of the same
 *	  statement.  INSERT (VALUES, SELECT, anything) keeps PostgreSQL's plan
 *	  of its rows and routes them itself (insert_route.c), ON CONFLICT and
 *	  RETURNING included.
 *
 *	  A write colojoin declines (expressions a node cannot evaluate, joins
 *	  with tables that do not line up, triggers on the coordinator's tables)
 *	  is planned by PostgreSQL as before: postgres_fdw writes it, and the
 *	  write guard refuses it where that would leave a replica stale.
 *
 *	  This file does not execute anything (modify_exec.c does) and does not
 *	  route rows (insert_route.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_class.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "metadata/colocation.h"
#include "metadata/metadata.h"
#include "plan/key_match.h"
#include "plan/scan_plan.h"
#include "remote/twophase.h"
#include "deparse/deparse.h"
#include "util/extension.h"
#include "util/settings.h"
#include "write/modify.h"
#include "write/row_writes.h"

bool		cj_planning_insert_source = false;
bool		cj_planning_write_pruning = false;

/* a table the remote statement reads: the target or a colocated one */
typedef struct WriteRel
{
	Index		rti;
	CjTable    *table;
	CjLeaf	   *leaf;			/* the leaf of the class being written */
	CjPlacement *placement;		/* its placement on the statement's node */
} WriteRel;

typedef struct WriteDeparse
{
	List	   *rels;			/* WriteRel * */
	Index		excluded_rti;	/* ON CONFLICT's EXCLUDED, 0 when none */
	CjLeaf	   *excluded_leaf;
} WriteDeparse;

static bool
has_triggers(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	bool		result;

	if (!HeapTupleIsValid(tup))
		return false;
	result = ((Form_pg_class) GETSTRUCT(tup))->relhastriggers ||
		((Form_pg_class) GETSTRUCT(tup))->relrowsecurity;
	ReleaseSysCache(tup);
	return result;
}

bool
cj_write_target(Oid relid, const char **why)
{
	CjTable    *t;
	int			c,
				l;

	if (why)
		*why = NULL;
	if (!colojoin_enable || !colojoin_enable_writes || !colojoin_is_active() ||
		get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
		return false;
	if (!cj_twophase_available())
	{
		/* an older version installed: no commit records, no write path */
		if (why)
			*why = "the installed version of the extension has no write path (ALTER EXTENSION colojoin UPDATE)";
		return false;
	}
	t = cj_get_table(relid);
	if (t == NULL || t->nclasses == 0)
		return false;
	if (!t->all_foreign)
	{
		if (why)
			*why = "some of its leaves are not postgres_fdw foreign tables";
		return false;
	}
	if (has_triggers(relid))
	{
		if (why)
			*why = "it has triggers or row security on the coordinator";
		return false;
	}
	for (c = 0; c < t->nclasses; c++)
	{
		if (has_triggers(t->classes[c].partrelid))
		{
			if (why)
				*why = "a partition has triggers or row security on the coordinator";
			return false;
		}
		for (l = 0; l < t->classes[c].nleaves; l++)
		{
			if (has_triggers(t->classes[c].leaves[l].relid))
			{
				if (why)
					*why = "a leaf has triggers or row security on the coordinator";
				return false;
			}
		}
	}
	return true;
}

/* ----------------------------------------------------------------
 *		SQL of the remote statements
 * ----------------------------------------------------------------
 */

static const char *
write_var_name(Var *var, void *arg)
{
	WriteDeparse *wd = (WriteDeparse *) arg;
	ListCell   *lc;

	if (var->varlevelsup != 0 || var->varattno <= 0)
		return NULL;
	if (wd->excluded_rti != 0 && var->varno == wd->excluded_rti)
	{
		if (var->varattno > wd->excluded_leaf->natts ||
			cj_leaf_colnames(wd->excluded_leaf)[var->varattno - 1] == NULL)
			return NULL;
		return psprintf("excluded.%s",
						cj_quote_ident(cj_leaf_colnames(wd->excluded_leaf)[var->varattno - 1]));
	}
	foreach(lc, wd->rels)
	{
		WriteRel   *wr = (WriteRel *) lfirst(lc);

		if (wr->rti != var->varno)
			continue;
		if (wr->leaf == NULL || var->varattno > wr->leaf->natts ||
			cj_leaf_colnames(wr->leaf)[var->varattno - 1] == NULL)
			return NULL;
		return psprintf("r%u.%s", wr->rti,
						cj_quote_ident(cj_leaf_colnames(wr->leaf)[var->varattno - 1]));
	}
	return NULL;
}

/* can every Var of node be named remotely (user columns of known tables)? */
static bool
vars_nameable_walker(Node *node, WriteDeparse *wd)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;
		ListCell   *lc;

		if (var->varlevelsup != 0 || var->varattno <= 0)
			return true;
		if (wd->excluded_rti != 0 && var->varno == wd->excluded_rti)
			return false;
		foreach(lc, wd->rels)
		{
			if (((WriteRel *) lfirst(lc))->rti == var->varno)
				return false;
		}
		return true;
	}
	return expression_tree_walker(node, vars_nameable_walker, (void *) wd);
}

static bool
exprs_shippable(List *exprs, WriteDeparse *wd)
{
	ListCell   *lc;

	foreach(lc, exprs)
	{
		Expr	   *e = (Expr *) lfirst(lc);

		if (vars_nameable_walker((Node *) e, wd) ||
			!cj_is_shippable(NULL, e, NULL))
			return false;
	}
	return true;
}

static void
append_remote_rel(StringInfo buf, CjPlacement *p)
{
	appendStringInfoString(buf, cj_qualified_name(p->remote_schema,
												  p->remote_table));
}

static CjPlacement *
placement_on(CjLeaf *leaf, Oid serverid)
{
	int			i;

	for (i = 0; i < leaf->nplacements; i++)
	{
		if (leaf->placements[i].serverid == serverid)
			return &leaf->placements[i];
	}
	return NULL;
}

/*
 * returning_vars
 *		The Vars RETURNING reads, each once, in order; false when one of
 *		them cannot be returned by a remote statement (a whole row, a
 *		system column).
 */
static bool
returning_vars(List *returning, List **vars)
{
	List	   *all = pull_var_clause((Node *) returning, PVC_RECURSE_PLACEHOLDERS);
	ListCell   *lc;

	*vars = NIL;
	foreach(lc, all)
	{
		Var		   *v = (Var *) lfirst(lc);
		ListCell   *lc2;
		bool		seen = false;

		if (v->varattno <= 0 || v->varlevelsup != 0)
			return false;
		foreach(lc2, *vars)
		{
			Var		   *w = (Var *) lfirst(lc2);

			if (w->varno == v->varno && w->varattno == v->varattno)
				seen = true;
		}
		if (!seen)
			*vars = lappend(*vars, v);
	}
	return true;
}

/* replace Vars of vars by references to their position in the scan tuple */
static Node *
to_scan_refs_mutator(Node *node, List *vars)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;
		ListCell   *lc;
		int			pos = 0;

		foreach(lc, vars)
		{
			Var		   *w = (Var *) lfirst(lc);

			pos++;
			if (w->varno == v->varno && w->varattno == v->varattno &&
				v->varlevelsup == 0)
			{
				Var		   *r = copyObject(v);

				r->varno = INDEX_VAR;
				r->varattno = pos;
				return (Node *) r;
			}
		}
	}
	return expression_tree_mutator(node, to_scan_refs_mutator, (void *) vars);
}

/*
 * make_modify_scan
 *		The CustomScan of a write, its scan tuple made of scan_vars, its
 *		output the RETURNING list computed from them.
 */
static CustomScan *
make_modify_scan(List *priv, List *params, List *scan_vars, List *returning,
				 List *children)
{
	CustomScan *cscan = makeNode(CustomScan);
	ListCell   *lc;
	int			resno = 1;

	cscan->scan.scanrelid = 0;
	cscan->flags = 0;
	cscan->custom_private = priv;
	cscan->custom_exprs = params;
	cscan->custom_plans = children;
	cscan->methods = &cj_modify_scan_methods;
	foreach(lc, scan_vars)
		cscan->custom_scan_tlist = lappend(cscan->custom_scan_tlist,
										   makeTargetEntry((Expr *) lfirst(lc),
														   resno++, NULL, false));
	cscan->scan.plan.targetlist = (List *)
		to_scan_refs_mutator((Node *) copyObject(returning), scan_vars);
	return cscan;
}

/* put cscan in place of stmt's ModifyTable */
static PlannedStmt *
install_scan(PlannedStmt *stmt, CustomScan *cscan)
{
	Plan	   *old = stmt->planTree;

	cscan->scan.plan.startup_cost = old->startup_cost;
	cscan->scan.plan.total_cost = old->total_cost;
	cscan->scan.plan.plan_rows = old->plan_rows;
	cscan->scan.plan.plan_width = old->plan_width;
	cscan->scan.plan.initPlan = old->initPlan;
	old->initPlan = NIL;
	stmt->planTree = (Plan *) cscan;

	/*
	 * The leaves are written through colojoin's connections, not as result
	 * relations of this backend; row marks of the joined tables have no
	 * use either.
	 */
	stmt->resultRelations = NIL;
	stmt->rowMarks = NIL;
	return stmt;
}

/* ----------------------------------------------------------------
 *		UPDATE and DELETE
 * ----------------------------------------------------------------
 */

/*
 * query_has_security_quals
 *		Whether a table of the statement is read through security quals:
 *		a row security policy or a security-barrier view over it.
 */
static bool
query_has_security_quals(Query *parse)
{
	ListCell   *lc;

	foreach(lc, parse->rtable)
	{
		if (((RangeTblEntry *) lfirst(lc))->securityQuals != NIL)
			return true;
	}
	return false;
}

/* collect the tables and conditions of an inner-join FROM list */
static bool
collect_from(Query *parse, Node *item, List **rtis, List **quals)
{
	if (IsA(item, RangeTblRef))
	{
		*rtis = lappend_int(*rtis, ((RangeTblRef *) item)->rtindex);
		return true;
	}
	if (IsA(item, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) item;

		if (j->jointype != JOIN_INNER || j->alias != NULL || j->usingClause)
			return false;
		if (!collect_from(parse, j->larg, rtis, quals) ||
			!collect_from(parse, j->rarg, rtis, quals))
			return false;
		*quals = list_concat(*quals, make_ands_implicit((Expr *) j->quals));
		return true;
	}
	return false;
}

/* is a key column of t assigned something other than itself? */
static bool
changes_key(CjTable *t, Index rti, List *tlist, char **column)
{
	ListCell   *lc;
	int			p;

	foreach(lc, tlist)
	{
		TargetEntry *te = (TargetEntry *) lfirst(lc);
		bool		is_key = false;

		if (te->resjunk)
			continue;
		for (p = 0; p < t->partnatts; p++)
		{
			if (t->partattrs[p] == te->resno)
				is_key = true;
			else if (t->partattrs[p] == 0)
			{
				Bitmapset  *cols = NULL;

				pull_varattnos(t->partexprs[p], 1, &cols);
				if (bms_is_member(te->resno - FirstLowInvalidHeapAttributeNumber, cols))
					is_key = true;
			}
		}
		if (is_key && !(IsA(te->expr, Var) &&
						((Var *) te->expr)->varno == rti &&
						((Var *) te->expr)->varattno == te->resno))
		{
			*column = get_attname(t->relid, te->resno, false);
			return true;
		}
	}
	return false;
}

/*
 * colocated_rels
 *		Whether every other table of the statement is a sharded table
 *		joined to the target on its whole partition key (directly or through
 *		another such table), so that class c of each lines up with the
 *		target's class c.  Fills the class space of them all.
 */
static bool
colocated_rels(Query *parse, WriteRel *target, List *others, List *quals,
			   CjClassSpace **space)
{
	List	   *tables = list_make1(target->table);
	List	   *linked = list_make1(target);
	List	   *reasons = NIL;
	ListCell   *lc;
	bool		progress = true;
	int			p;

	foreach(lc, others)
	{
		WriteRel   *wr = (WriteRel *) lfirst(lc);

		if (!cj_schemes_compatible(target->table, wr->table, &reasons))
			return false;
		tables = lappend(tables, wr->table);
	}
	for (p = 0; p < target->table->partnatts; p++)
	{
		/* key expressions would need identity equality: columns only */
		if (target->table->partattrs[p] == 0 && others != NIL)
			return false;
	}
	while (progress && list_length(linked) <= list_length(others))
	{
		progress = false;
		foreach(lc, others)
		{
			WriteRel   *wr = (WriteRel *) lfirst(lc);
			ListCell   *lc2;

			if (list_member_ptr(linked, wr))
				continue;
			foreach(lc2, linked)
			{
				WriteRel   *with = (WriteRel *) lfirst(lc2);
				bool		all = true;

				for (p = 0; p < target->table->partnatts && all; p++)
				{
					Var		   *a;
					Var		   *b;

					if (wr->table->partattrs[p] == 0)
					{
						all = false;
						break;
					}
					a = linitial(cj_key_vars(with->table, p, with->rti));
					b = linitial(cj_key_vars(wr->table, p, wr->rti));
					all = cj_clause_equates(quals, (Node *) a, (Node *) b,
											target->table->partopfamily[p],
											false);
				}
				if (all)
				{
					linked = lappend(linked, wr);
					progress = true;
					break;
				}
			}
		}
	}
	if (list_length(linked) != list_length(others) + 1)
		return false;
	*space = cj_build_class_space(tables, &reasons);
	return *space != NULL;
}

static PlannedStmt *
plan_update_delete(Query *parse, const char *query_string, int cursorOptions,
				   ParamListInfo boundParams, CjPlannerFunc plan_fn)
{
	Index		rti = parse->resultRelation;
	RangeTblEntry *rte = rt_fetch(rti, parse->rtable);
	WriteRel   *target = palloc0(sizeof(WriteRel));
	List	   *others = NIL;
	List	   *rtis = NIL;
	List	   *quals;
	List	   *sets = NIL;
	List	   *scan_vars = NIL;
	List	   *stmts = NIL;
	List	   *survivors = NIL;
	WriteDeparse wd;
	CjDeparseContext dctx;
	CjClassSpace *space = NULL;
	PlannedStmt *stmt;
	ListCell   *lc;
	char	   *keycol;
	int			c;
	bool		update = (parse->commandType == CMD_UPDATE);

	if (parse->hasSubLinks || parse->hasAggs || parse->hasWindowFuncs ||
		parse->hasTargetSRFs || parse->cteList != NIL)
		return NULL;

	/*
	 * Security quals (row security of a joined table, a security-barrier
	 * view written through) must run before the statement's own conditions
	 * and a view's check option on every new row: PostgreSQL's plan of the
	 * write does both, a remote statement would do neither.
	 */
	if (parse->withCheckOptions != NIL || query_has_security_quals(parse))
		return NULL;

	target->rti = rti;
	target->table = cj_get_table(rte->relid);
	quals = make_ands_implicit((Expr *) parse->jointree->quals);
	foreach(lc, parse->jointree->fromlist)
	{
		if (!collect_from(parse, (Node *) lfirst(lc), &rtis, &quals))
			return NULL;
	}
	foreach(lc, rtis)
	{
		Index		i = lfirst_int(lc);
		RangeTblEntry *r = rt_fetch(i, parse->rtable);
		WriteRel   *wr;

		if (i == rti)
			continue;
		if (r->rtekind != RTE_RELATION || !r->inh ||
			r->relkind != RELKIND_PARTITIONED_TABLE)
			return NULL;
		wr = palloc0(sizeof(WriteRel));
		wr->rti = i;
		wr->table = cj_get_table(r->relid);
		if (wr->table == NULL || !wr->table->all_foreign)
			return NULL;
		others = lappend(others, wr);
	}

	if (update)
	{
		/* a row whose key changes may move: row by row (row_writes.c) */
		if (changes_key(target->table, rti, parse->targetList, &keycol))
			return NULL;
		foreach(lc, parse->targetList)
		{
			TargetEntry *te = (TargetEntry *) lfirst(lc);

			if (!te->resjunk)
				sets = lappend(sets, te);
		}
	}

	/* every expression must run on the nodes, naming only these tables */
	memset(&wd, 0, sizeof(wd));
	wd.rels = lappend(list_copy(others), target);
	if (!exprs_shippable(quals, &wd))
		return NULL;
	foreach(lc, sets)
	{
		if (!exprs_shippable(list_make1(((TargetEntry *) lfirst(lc))->expr), &wd))
			return NULL;
	}
	if (parse->returningList != NIL)
	{
		if (!returning_vars(parse->returningList, &scan_vars) ||
			!exprs_shippable(scan_vars, &wd))
			return NULL;
	}
	if (!colocated_rels(parse, target, others, quals, &space))
		return NULL;

	/*
	 * PostgreSQL's own plan says which leaves survive pruning; colojoin's
	 * statements replace it, so after a write its scans need not be
	 * colojoin's (they could not give the row identities it asks for).
	 */
	cj_planning_write_pruning = true;
	PG_TRY();
	{
		stmt = plan_fn(copyObject(parse), query_string, cursorOptions, boundParams);
	}
	PG_FINALLY();
	{
		cj_planning_write_pruning = false;
	}
	PG_END_TRY();
	if (!IsA(stmt->planTree, ModifyTable))
		return NULL;

	/*
	 * That planning locked the surviving leaves, and so waited for a class
	 * move switching one of them (operations/class_move.c): placements read
	 * before are then stale, and PostgreSQL's plan, which reads them after
	 * its locks, does the write instead.
	 */
	if (cj_get_table(rte->relid) != target->table)
		return NULL;
	foreach(lc, others)
	{
		WriteRel   *wr = (WriteRel *) lfirst(lc);

		if (cj_get_table(rt_fetch(wr->rti, parse->rtable)->relid) != wr->table)
			return NULL;
	}
	foreach(lc, stmt->resultRelations)
		survivors = lappend_oid(survivors,
								rt_fetch(lfirst_int(lc), stmt->rtable)->relid);

	memset(&dctx, 0, sizeof(dctx));
	dctx.var_name = write_var_name;
	dctx.var_arg = &wd;
	for (c = 0; c < space->nclasses; c++)
	{
		int			tc = CJ_MEMBER(space, c, 0);
		int			l;

		if (tc < 0)
			continue;
		for (l = 0; l < target->table->classes[tc].nleaves; l++)
		{
			CjLeaf	   *leaf = &target->table->classes[tc].leaves[l];
			bool		empty = false;
			int			p;
			int			o = 1;

			if (!list_member_oid(survivors, leaf->relid))
				continue;
			target->leaf = leaf;
			foreach(lc, others)
			{
				WriteRel   *wr = (WriteRel *) lfirst(lc);
				int			oc = CJ_MEMBER(space, c, o++);

				if (oc < 0 || wr->table->classes[oc].nleaves == 0)
				{
					empty = true;	/* an inner join with nothing */
					break;
				}
				if (wr->table->classes[oc].nleaves > 1)
					return NULL;
				wr->leaf = &wr->table->classes[oc].leaves[0];
			}
			if (empty)
				continue;

			for (p = 0; p < leaf->nplacements; p++)
			{
				CjPlacement *pl = &leaf->placements[p];
				StringInfoData sql;
				ListCell   *lc2;
				bool		first;

				initStringInfo(&sql);
				appendStringInfoString(&sql, update ? "UPDATE " : "DELETE FROM ");
				append_remote_rel(&sql, pl);
				appendStringInfo(&sql, " r%u", rti);
				if (update)
				{
					appendStringInfoString(&sql, " SET ");
					first = true;
					foreach(lc2, sets)
					{
						TargetEntry *te = (TargetEntry *) lfirst(lc2);

						appendStringInfo(&sql, "%s%s = ", first ? "" : ", ",
										 cj_quote_ident(cj_leaf_colnames(leaf)[te->resno - 1]));
						cj_deparse_expr(&sql, te->expr, &dctx);
						first = false;
					}
				}
				first = true;
				foreach(lc2, others)
				{
					WriteRel   *wr = (WriteRel *) lfirst(lc2);
					CjPlacement *opl = placement_on(wr->leaf, pl->serverid);

					if (opl == NULL)
						return NULL;	/* not on this node: cannot run here */
					appendStringInfoString(&sql, first ? (update ? " FROM " : " USING ") : ", ");
					append_remote_rel(&sql, opl);
					appendStringInfo(&sql, " r%u", wr->rti);
					first = false;
				}
				first = true;
				foreach(lc2, quals)
				{
					appendStringInfoString(&sql, first ? " WHERE " : " AND ");
					cj_deparse_expr(&sql, (Expr *) lfirst(lc2), &dctx);
					first = false;
				}
				/* every placement returns: a replica answers for a stale primary */
				if (scan_vars != NIL)
				{
					first = true;
					foreach(lc2, scan_vars)
					{
						appendStringInfoString(&sql, first ? " RETURNING " : ", ");
						cj_deparse_expr(&sql, (Expr *) lfirst(lc2), &dctx);
						first = false;
					}
				}
				stmts = lappend(stmts,
								list_make5(makeInteger((int) pl->serverid),
										   makeString(cj_node_name(pl->serverid)),
										   makeString(sql.data),
										   makeInteger(p),
										   makeInteger((int) leaf->relid)));
			}
		}
	}

	{
		List	   *priv = list_make5(makeInteger(CJ_MODIFY_STATEMENTS),
									  makeInteger((int) rte->relid),
									  makeString(update ? "UPDATE" : "DELETE"),
									  makeInteger((int) rte->checkAsUser),
									  makeInteger(scan_vars != NIL ? 1 : 0));

		priv = lappend(lappend(priv, stmts), NIL);
		priv = lappend(lappend(priv, NIL), makeInteger((int) rti));
		return install_scan(stmt, make_modify_scan(priv, dctx.params, scan_vars,
												   parse->returningList, NIL));
	}
}

/* ----------------------------------------------------------------
 *		INSERT
 * ----------------------------------------------------------------
 */

/*
 * conflict_clauses
 *		The ON CONFLICT clause of each leaf (its columns are named as on its
 *		node), or false when colojoin cannot send it.  The conflict target
 *		must hold the partition key: uniqueness within one leaf is then
 *		uniqueness in the table, as PostgreSQL requires of unique indexes on
 *		partitioned tables.
 */
static bool
conflict_clauses(Query *parse, CjTable *t, List **result, CjDeparseContext *dctx,
				 WriteDeparse *wd)
{
	OnConflictExpr *oc = parse->onConflict;
	Index		rti = parse->resultRelation;
	Bitmapset  *cols = NULL;
	ListCell   *lc;
	int			c,
				l,
				p;

	if (OidIsValid(oc->constraint))
		return false;
	foreach(lc, oc->arbiterElems)
	{
		InferenceElem *ie = (InferenceElem *) lfirst(lc);
		Var		   *v = (Var *) ie->expr;

		if (!IsA(v, Var) || v->varno != rti || v->varattno <= 0 ||
			OidIsValid(ie->infercollid) || OidIsValid(ie->inferopclass))
			return false;
		cols = bms_add_member(cols, v->varattno);
	}
	if (oc->arbiterElems != NIL)
	{
		for (p = 0; p < t->partnatts; p++)
		{
			if (t->partattrs[p] == 0 || !bms_is_member(t->partattrs[p], cols))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
						 errmsg("there is no unique or exclusion constraint matching the ON CONFLICT specification"),
						 errdetail("A unique index of partitioned table \"%s\" must include its partition key: each leaf checks uniqueness only among its own rows.",
								   get_rel_name(t->relid))));
		}
	}
	else if (oc->action == ONCONFLICT_UPDATE)
		return false;

	wd->excluded_rti = oc->exclRelIndex;
	{
		WriteRel   *self = palloc0(sizeof(WriteRel));

		/* the leaf is not known yet: only whether the columns can be named */
		self->rti = rti;
		self->table = t;
		self->leaf = &t->classes[0].leaves[0];
		wd->rels = list_make1(self);
		wd->excluded_leaf = self->leaf;
	}
	if (!exprs_shippable(make_ands_implicit((Expr *) oc->arbiterWhere), wd) ||
		!exprs_shippable(make_ands_implicit((Expr *) oc->onConflictWhere), wd))
		return false;
	foreach(lc, oc->onConflictSet)
	{
		TargetEntry *te = (TargetEntry *) lfirst(lc);

		if (!te->resjunk && !exprs_shippable(list_make1(te->expr), wd))
			return false;
	}

	for (c = 0; c < t->nclasses; c++)
	{
		for (l = 0; l < t->classes[c].nleaves; l++)
		{
			CjLeaf	   *leaf = &t->classes[c].leaves[l];
			StringInfoData sql;
			bool		first = true;
			WriteRel	wr;

			wr.rti = rti;
			wr.table = t;
			wr.leaf = leaf;
			wr.placement = NULL;
			wd->rels = list_make1(&wr);
			wd->excluded_leaf = leaf;

			initStringInfo(&sql);
			appendStringInfoString(&sql, " ON CONFLICT");
			foreach(lc, oc->arbiterElems)
			{
				Var		   *v = (Var *) ((InferenceElem *) lfirst(lc))->expr;

				appendStringInfo(&sql, "%s%s", first ? " (" : ", ",
								 cj_quote_ident(cj_leaf_colnames(leaf)[v->varattno - 1]));
				first = false;
			}
			if (!first)
				appendStringInfoChar(&sql, ')');
			if (oc->arbiterWhere)
			{
				appendStringInfoString(&sql, " WHERE ");
				cj_deparse_expr(&sql, (Expr *) oc->arbiterWhere, dctx);
			}
			if (oc->action == ONCONFLICT_NOTHING)
				appendStringInfoString(&sql, " DO NOTHING");
			else
			{
				first = true;
				appendStringInfoString(&sql, " DO UPDATE SET ");
				foreach(lc, oc->onConflictSet)
				{
					TargetEntry *te = (TargetEntry *) lfirst(lc);

					if (te->resjunk)
						continue;
					appendStringInfo(&sql, "%s%s = ", first ? "" : ", ",
									 cj_quote_ident(cj_leaf_colnames(leaf)[te->resno - 1]));
					cj_deparse_expr(&sql, te->expr, dctx);
					first = false;
				}
				if (oc->onConflictWhere)
				{
					appendStringInfoString(&sql, " WHERE ");
					cj_deparse_expr(&sql, (Expr *) oc->onConflictWhere, dctx);
				}
			}
			{
				List	   *arbiter = NIL;

				foreach(lc, oc->arbiterElems)
				{
					Var		   *v = (Var *) ((InferenceElem *) lfirst(lc))->expr;

					arbiter = lappend(arbiter,
									  makeString(pstrdup(cj_leaf_colnames(leaf)[v->varattno - 1])));
				}
				*result = lappend(*result,
								  list_make5(makeInteger((int) leaf->relid),
											 makeString(sql.data),
											 makeInteger((int) rti),
											 arbiter,
											 makeInteger(oc->action == ONCONFLICT_UPDATE)));
			}
		}
	}
	wd->rels = NIL;
	return true;
}

/*
 * remote_column
 *		What target column i of an INSERT's rows is, traced through the
 *		plan of its SELECT down to colojoin's scan: the position (from 1) of
 *		the remote column that holds it, 0 for a constant (*c), -1 when it
 *		is computed on the coordinator.
 */
/*
 * strip_assignment
 *		The expression under relabelling and the built-in casts PostgreSQL
 *		adds to fit a value to its column (int4 to int8, a numeric's
 *		typmod): the node's INSERT applies the same ones to the same value.
 */
static Expr *
strip_assignment(Expr *e)
{
	for (;;)
	{
		if (e && IsA(e, RelabelType))
			e = ((RelabelType *) e)->arg;
		else if (e && IsA(e, FuncExpr) &&
				 ((FuncExpr *) e)->funcformat == COERCE_IMPLICIT_CAST &&
				 ((FuncExpr *) e)->funcid < FirstNormalObjectId &&
				 ((FuncExpr *) e)->args != NIL)
			e = (Expr *) linitial(((FuncExpr *) e)->args);
		else
			return e;
	}
}

static int
remote_column(Plan *top, CustomScan *scan, int i, Const **c)
{
	Expr	   *e = strip_assignment(((TargetEntry *) list_nth(top->targetlist, i))->expr);

	*c = NULL;
	if (IsA(e, Const))
	{
		*c = (Const *) e;
		return 0;
	}
	if ((Plan *) scan != top)
	{
		/* a SubqueryScan over the scan: its Vars are the scan's outputs */
		if (!IsA(e, Var) || ((Var *) e)->varattno <= 0 ||
			((Var *) e)->varattno > list_length(scan->scan.plan.targetlist))
			return -1;
		e = strip_assignment(((TargetEntry *) list_nth(scan->scan.plan.targetlist,
													   ((Var *) e)->varattno - 1))->expr);
		if (IsA(e, Const))
		{
			*c = (Const *) e;
			return 0;
		}
	}
	if (!IsA(e, Var) || ((Var *) e)->varno != INDEX_VAR ||
		((Var *) e)->varattno <= 0 ||
		((Var *) e)->varattno > list_length(scan->custom_scan_tlist))
		return -1;
	return ((Var *) e)->varattno;
}

/*
 * pushed_insert
 *		INSERT ... SELECT whose SELECT is one colojoin scan colocated with
 *		the target on its partition key: each task becomes
 *		"INSERT INTO <target leaf> SELECT ... FROM (<task>)" on its node,
 *		and on the nodes of the leaf's replicas, which hold the task's
 *		classes too.  No row travels.  NIL when the rows must be routed.
 */
static List *
pushed_insert(Query *parse, CjTable *t, Plan *sub, Relation rel, List *conflict,
			  List *rtable)
{
	CustomScan *scan;
	List	   *priv;
	List	   *in_place;
	List	   *stmts = NIL;
	int			natts = RelationGetNumberOfAttributes(rel);
	int		   *remote = palloc0(sizeof(int) * natts);
	Const	  **consts = palloc0(sizeof(Const *) * natts);
	int			source_space = -1;
	Oid			source_relid = InvalidOid;
	CjTable    *st;
	CjClassSpace *space;
	List	   *reasons = NIL;
	ListCell   *lc;
	int			i,
				p,
				c;

	if (parse->returningList != NIL || !colojoin_enable)
		return NIL;
	scan = (CustomScan *) sub;
	if (IsA(sub, SubqueryScan) && ((SubqueryScan *) sub)->scan.plan.qual == NIL)
		scan = (CustomScan *) ((SubqueryScan *) sub)->subplan;
	if (!IsA(scan, CustomScan) || scan->methods != &cj_scan_methods ||
		scan->scan.plan.qual != NIL || scan->custom_exprs != NIL ||
		sub->initPlan != NIL || scan->scan.plan.initPlan != NIL)
		return NIL;
	priv = scan->custom_private;
	if (list_length(priv) <= CJ_PRIVATE_IN_PLACE ||
		list_nth(priv, CJ_PRIVATE_MOVES) != NIL)
		return NIL;
	in_place = (List *) list_nth(priv, CJ_PRIVATE_IN_PLACE);

	for (i = 0; i < natts; i++)
	{
		remote[i] = remote_column(sub, scan, i, &consts[i]);
		if (remote[i] < 0)
			return NIL;
	}

	/* each key column of the target is the key column of one kept table */
	for (p = 0; p < t->partnatts; p++)
	{
		Var		   *v;
		ListCell   *lp;
		int			found = -1;
		Oid			vrelid;

		if (t->partattrs[p] == 0 || remote[t->partattrs[p] - 1] <= 0)
			return NIL;
		v = (Var *) ((TargetEntry *) list_nth(scan->custom_scan_tlist,
											  remote[t->partattrs[p] - 1] - 1))->expr;
		if (!IsA(v, Var) || v->varlevelsup != 0)
			return NIL;
		/*
		 * The scan's Vars name the final range table, the plan's record the
		 * table: the same table twice (a self-join) is taken only when no
		 * outer join can put NULLs in place of either.
		 */
		if (v->varno <= 0 || v->varno > list_length(rtable))
			return NIL;
		vrelid = rt_fetch(v->varno, rtable)->relid;
		foreach(lp, in_place)
		{
			List	   *ip = (List *) lfirst(lp);
			CjTable    *it = cj_get_table((Oid) intVal(lsecond(ip)));

			if ((Oid) intVal(lsecond(ip)) != vrelid)
				continue;
			if (!intVal(lfourth(ip)))
				return NIL;
			if (found < 0 && it != NULL && p < it->partnatts &&
				it->partattrs[p] == v->varattno &&
				(source_space < 0 || source_space == intVal(lthird(ip))))
			{
				found = intVal(lthird(ip));
				source_relid = vrelid;
			}
		}
		if (found < 0)
			return NIL;
		source_space = found;
	}
	st = cj_get_table(source_relid);
	if (st == NULL || st->partnatts != t->partnatts ||
		!cj_schemes_compatible(st, t, &reasons))
		return NIL;
	space = cj_build_class_space(list_make2(st, t), &reasons);
	if (space == NULL)
		return NIL;
	/* every class of either is a class of both: one to one */
	for (c = 0; c < space->nclasses; c++)
		if (CJ_MEMBER(space, c, 0) < 0 || CJ_MEMBER(space, c, 1) < 0 ||
			t->classes[CJ_MEMBER(space, c, 1)].nleaves != 1)
			return NIL;

	foreach(lc, (List *) list_nth(priv, CJ_PRIVATE_TASKS))
	{
		List	   *task = (List *) lfirst(lc);
		int			cs = intVal(list_nth((List *) list_nth(task, CJ_TASK_MEMBERS),
										 source_space));
		CjLeaf	   *leaf = NULL;
		int			pl;

		for (c = 0; c < space->nclasses && cs >= 0; c++)
			if (CJ_MEMBER(space, c, 0) == cs)
				leaf = &t->classes[CJ_MEMBER(space, c, 1)].leaves[0];
		if (leaf == NULL)
			return NIL;
		for (pl = 0; pl < leaf->nplacements; pl++)
		{
			CjPlacement *place = &leaf->placements[pl];
			const char *task_sql = NULL;
			StringInfoData sql;
			ListCell   *la;
			bool		first = true;
			int			k;

			if ((Oid) intVal(list_nth(task, CJ_TASK_SERVER)) == place->serverid)
				task_sql = strVal(list_nth(task, CJ_TASK_SQL));
			foreach(la, (List *) list_nth(task, CJ_TASK_ALTERNATIVES))
			{
				List	   *alt = (List *) lfirst(la);

				if (task_sql == NULL && (Oid) intVal(linitial(alt)) == place->serverid)
					task_sql = strVal(lthird(alt));
			}
			if (task_sql == NULL)
				return NIL;		/* a placement where the task cannot run */

			initStringInfo(&sql);
			appendStringInfo(&sql, "INSERT INTO %s AS r%d (",
							 cj_qualified_name(place->remote_schema, place->remote_table),
							 parse->resultRelation);
			for (i = 0; i < natts; i++)
			{
				Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), i);

				if (att->attisdropped || att->attgenerated)
					continue;
				appendStringInfo(&sql, "%s%s", first ? "" : ", ",
								 cj_quote_ident(cj_leaf_colnames(leaf)[i]));
				first = false;
			}
			appendStringInfoString(&sql, ") SELECT ");
			first = true;
			for (i = 0; i < natts; i++)
			{
				Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), i);

				if (att->attisdropped || att->attgenerated)
					continue;
				if (!first)
					appendStringInfoString(&sql, ", ");
				first = false;
				if (remote[i] > 0)
				{
					appendStringInfo(&sql, "s.c%d", remote[i]);
					continue;
				}
				if (consts[i]->constisnull)
					appendStringInfoString(&sql, "NULL");
				else
				{
					Oid			out;
					bool		varlena;

					getTypeOutputInfo(consts[i]->consttype, &out, &varlena);
					cj_append_literal(&sql, OidOutputFunctionCall(out, consts[i]->constvalue));
				}
				appendStringInfo(&sql, "::%s", cj_type_name(att->atttypid, att->atttypmod));
			}
			appendStringInfo(&sql, " FROM (%s) s(", task_sql);
			for (k = 1; k <= list_length(scan->custom_scan_tlist); k++)
				appendStringInfo(&sql, "%sc%d", k > 1 ? ", " : "", k);
			appendStringInfoChar(&sql, ')');
			foreach(la, conflict)
			{
				List	   *item = (List *) lfirst(la);

				if ((Oid) intVal(linitial(item)) == leaf->relid)
					appendStringInfoString(&sql, strVal(lsecond(item)));
			}
			stmts = lappend(stmts,
							list_make5(makeInteger((int) place->serverid),
									   makeString(cj_node_name(place->serverid)),
									   makeString(sql.data),
									   makeInteger(pl),
									   makeInteger((int) leaf->relid)));
		}
	}
	return stmts;
}

static PlannedStmt *
plan_insert(Query *parse, const char *query_string, int cursorOptions,
			ParamListInfo boundParams, CjPlannerFunc plan_fn)
{
	Index		rti = parse->resultRelation;
	RangeTblEntry *rte = rt_fetch(rti, parse->rtable);
	CjTable    *t = cj_get_table(rte->relid);
	Query	   *q;
	PlannedStmt *stmt;
	ModifyTable *mt;
	Plan	   *sub;
	List	   *conflict = NIL;
	List	   *checks = NIL;
	List	   *scan_vars = NIL;
	List	   *priv;
	CjDeparseContext dctx;
	WriteDeparse wd;
	Relation	rel;
	int			natts;
	int			i;

	memset(&dctx, 0, sizeof(dctx));
	memset(&wd, 0, sizeof(wd));
	dctx.var_name = write_var_name;
	dctx.var_arg = &wd;
	if (parse->onConflict != NULL &&
		!conflict_clauses(parse, t, &conflict, &dctx, &wd))
		return NULL;
	if (parse->returningList != NIL &&
		(contain_subplans((Node *) parse->returningList) ||
		 !returning_vars(parse->returningList, &scan_vars)))
		return NULL;

	/*
	 * PostgreSQL plans the rows to insert; ON CONFLICT is the nodes' (the
	 * coordinator has no unique index to infer it from).
	 */
	q = copyObject(parse);
	q->onConflict = NULL;
	/* its sharded tables read by colojoin, so that the nodes may insert */
	cj_planning_insert_source = true;
	PG_TRY();
	{
		stmt = plan_fn(q, query_string, cursorOptions, boundParams);
	}
	PG_FINALLY();
	{
		cj_planning_insert_source = false;
	}
	PG_END_TRY();
	if (!IsA(stmt->planTree, ModifyTable))
		return NULL;
	mt = (ModifyTable *) stmt->planTree;
	sub = outerPlan(mt);
	rel = table_open(rte->relid, NoLock);
	natts = RelationGetNumberOfAttributes(rel);
	if (mt->operation != CMD_INSERT || sub == NULL ||
		list_length(sub->targetlist) != natts)
	{
		table_close(rel, NoLock);
		return NULL;
	}

	/*
	 * A view's check option is checked on the coordinator, on each routed
	 * row, with PostgreSQL's own planned conditions; a stored generated
	 * column it might read is computed on the nodes, so then PostgreSQL
	 * writes the rows.
	 */
	if (mt->withCheckOptionLists != NIL)
	{
		checks = (List *) linitial(mt->withCheckOptionLists);
		if (checks != NIL && rel->rd_att->constr &&
			rel->rd_att->constr->has_generated_stored)
		{
			table_close(rel, NoLock);
			return NULL;
		}
	}

	/* the scan tuple: the row as inserted, every column of the table */
	scan_vars = NIL;
	for (i = 1; i <= natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), i - 1);

		if (att->attisdropped)
			scan_vars = lappend(scan_vars, makeNullConst(INT4OID, -1, InvalidOid));
		else
			scan_vars = lappend(scan_vars, makeVar(rti, i, att->atttypid,
												   att->atttypmod,
												   att->attcollation, 0));
	}
	/* colocated with the target: the nodes insert what they select */
	if (checks == NIL && (conflict == NIL || dctx.params == NIL))
	{
		List	   *stmts = pushed_insert(parse, t, sub, rel, conflict,
											  stmt->rtable);

		if (stmts != NIL)
		{
			table_close(rel, NoLock);
			priv = list_make5(makeInteger(CJ_MODIFY_STATEMENTS),
							  makeInteger((int) rte->relid),
							  makeString("INSERT"),
							  makeInteger((int) rte->checkAsUser),
							  makeInteger(0));
			priv = lappend(lappend(priv, stmts), conflict);
			priv = lappend(lappend(priv, NIL), makeInteger((int) rti));
			return install_scan(stmt, make_modify_scan(priv, NIL, NIL, NIL, NIL));
		}
	}
	table_close(rel, NoLock);

	priv = list_make5(makeInteger(CJ_MODIFY_ROUTE),
					  makeInteger((int) rte->relid),
					  makeString("INSERT"),
					  makeInteger((int) rte->checkAsUser),
					  makeInteger(parse->returningList != NIL ? 1 : 0));
	priv = lappend(priv, NIL);
	priv = lappend(priv, conflict);
	priv = lappend(priv, checks);
	priv = lappend(priv, makeInteger((int) rti));
	mt->plan.lefttree = NULL;
	return install_scan(stmt, make_modify_scan(priv, dctx.params, scan_vars,
											   parse->returningList,
											   list_make1(sub)));
}

/* whether relid is, or has below it, a foreign leaf colojoin manages */
static bool
reaches_managed_leaf(Oid relid)
{
	char		kind = get_rel_relkind(relid);
	ListCell   *lc;

	if (kind == RELKIND_FOREIGN_TABLE)
		return cj_is_managed_leaf(relid);
	if (kind != RELKIND_PARTITIONED_TABLE)
		return false;
	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
	{
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_FOREIGN_TABLE &&
			cj_is_managed_leaf(lfirst_oid(lc)))
			return true;
	}
	return false;
}

/* does a data-modifying WITH of parse write a table reaching a managed leaf? */
static bool
cte_writes_managed_leaf(Query *parse)
{
	ListCell   *lc;

	foreach(lc, parse->cteList)
	{
		CommonTableExpr *cte = (CommonTableExpr *) lfirst(lc);
		Query	   *q = (Query *) cte->ctequery;

		if (!IsA(q, Query) || q->commandType == CMD_SELECT)
			continue;
		if (q->resultRelation > 0 &&
			reaches_managed_leaf(rt_fetch(q->resultRelation, q->rtable)->relid))
			return true;
		if (q->hasModifyingCTE && cte_writes_managed_leaf(q))
			return true;
	}
	return parse->resultRelation > 0 && parse->commandType != CMD_SELECT &&
		reaches_managed_leaf(rt_fetch(parse->resultRelation, parse->rtable)->relid);
}

PlannedStmt *
cj_plan_modify(Query *parse, const char *query_string, int cursorOptions,
			   ParamListInfo boundParams, CjPlannerFunc plan_fn)
{
	RangeTblEntry *rte;
	PlannedStmt *stmt = NULL;
	const char *why;

	/* colojoin.enable_writes = off: postgres_fdw writes, as without colojoin */
	if (!colojoin_enable || !colojoin_enable_writes)
		return NULL;
	if (parse->hasModifyingCTE && colojoin_is_active() &&
		!cj_xact_wrote_to_shards() && cte_writes_managed_leaf(parse))
	{
		/* WITH ... (INSERT | UPDATE | DELETE): PostgreSQL's plan, our callbacks */
		return cj_plan_row_writes(parse, query_string, cursorOptions,
								  boundParams, plan_fn);
	}
	if (parse->commandType != CMD_INSERT && parse->commandType != CMD_UPDATE &&
		parse->commandType != CMD_DELETE)
		return NULL;
	if (parse->resultRelation <= 0 || parse->hasModifyingCTE ||
		cj_xact_wrote_to_shards() || !colojoin_is_active())
		return NULL;
	rte = rt_fetch(parse->resultRelation, parse->rtable);
	if (parse->commandType == CMD_INSERT)
	{
		if (cj_write_target(rte->relid, &why))
			stmt = plan_insert(parse, query_string, cursorOptions, boundParams,
							   plan_fn);
		if (stmt == NULL && reaches_managed_leaf(rte->relid))
			stmt = cj_plan_row_writes(parse, query_string, cursorOptions,
									  boundParams, plan_fn);
		return stmt;
	}

	/*
	 * UPDATE and DELETE go to the nodes whole where they can; otherwise,
	 * when they reach a leaf colojoin manages, row by row on colojoin's
	 * connections (row_writes.c), never through postgres_fdw's.
	 */
	if (rte->inh && cj_write_target(rte->relid, &why))
		stmt = plan_update_delete(parse, query_string, cursorOptions,
								  boundParams, plan_fn);
	if (stmt == NULL && reaches_managed_leaf(rte->relid))
		stmt = cj_plan_row_writes(parse, query_string, cursorOptions,
								  boundParams, plan_fn);
	return stmt;
}
