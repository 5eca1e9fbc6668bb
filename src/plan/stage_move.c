/*-------------------------------------------------------------------------
 *
 * stage_move.c
 *	  Multi-stage plans: the output of a colocated group (a join of tables
 *	  read where they are) moved, as a table would be, into the classes of
 *	  the next join.  customer JOIN orders JOIN lineitem runs orders JOIN
 *	  lineitem on the nodes that hold them, routes each joined row (only the
 *	  columns the rest of the query reads, after the group's filters) by
 *	  the hash of o_custkey to the node of its customer class, and joins
 *	  customer there.
 *
 *	  This file owns what is particular to such a moved group (a *stage*):
 *	  whether a group can be one, the CjBaseRel that stands for it in the
 *	  next group, the value its rows are routed by, its columns and the
 *	  COPY its source nodes run.  The rest of a move (temporary tables,
 *	  streams, costs) is the same as a table's: move_sql.c, move_choice.c,
 *	  exec/move_streams.c.  A group that moves rows itself makes its
 *	  moves first (one level down, move_sql.c's cj_build_moves; the
 *	  executor fills the deeper level first and runs the stage's source
 *	  on the connection holding them).  A stage joins by an inner join, or
 *	  is the side a left, semi or anti join does not keep; the side a join
 *	  keeps never moves.  Not here: broadcast stages.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "plan/planner_internal.h"
#include "deparse/deparse.h"
#include "util/settings.h"

/*
 * cj_stage_possible
 *		Whether g's rows can be computed by its tasks alone and moved: no
 *		condition left to the coordinator, no subquery run in its tasks, no
 *		parameter (a move's COPY takes none).  Tables g moves itself are
 *		moved first, into its own classes (a level below, cj_build_moves);
 *		not those grouped before their move, whose rows only the
 *		aggregation above g knows how to finish.
 */
bool
cj_stage_possible(CjJoinGroup *g, List **reasons)
{
	ListCell   *lc;

	if (!colojoin_enable_redistribution || !colojoin_enable_stages)
		return false;
	if (g->local_quals != NIL)
	{
		*reasons = lappend(*reasons,
						   pstrdup("the join that would move has conditions only the coordinator can run"));
		return false;
	}
	if (cj_tree_has_lateral(g->tree) || g->space == NULL || g->space->ntables == 0)
	{
		*reasons = lappend(*reasons,
						   pstrdup("the join that would move runs a subquery in its tasks or reads no sharded table in place"));
		return false;
	}
	foreach(lc, g->rels)
	{
		CjBaseRel  *br = lfirst(lc);

		if (br->preagg != NIL || br->in_subquery ||
			cj_contains_param((Node *) br->quals))
		{
			*reasons = lappend(*reasons,
							   pstrdup("the join that would move aggregates a table before moving it, or has a parameter"));
			return false;
		}
		if (br->coord_path != NULL)
		{
			*reasons = lappend(*reasons,
							   psprintf("the join that would move reads rows the coordinator computes (%s)",
										br->alias));
			return false;
		}
	}
	return true;
}

/*
 * cj_make_stage_rel
 *		The CjBaseRel standing for group sg (the rows of join relation
 *		mrel) in the group it moves into.  Its rtindex is mrel's first
 *		relation, which names it in the SQL; its columns are Vars of any of
 *		mrel's relations (cj_stage_columns).
 */
CjBaseRel *
cj_make_stage_rel(PlannerInfo *root, RelOptInfo *mrel, CjJoinGroup *sg)
{
	CjBaseRel  *sb = palloc0(sizeof(CjBaseRel));
	ListCell   *lc;

	sb->rtindex = (Index) bms_next_member(mrel->relids, -1);
	sb->relid = InvalidOid;
	sb->table = NULL;
	sb->alias = psprintf("(%s)", cj_joinrel_names(root, mrel));
	sb->checkasuser = sg->userid;
	sb->space_index = -1;
	sb->stage = sg;
	sb->stage_relids = bms_copy(mrel->relids);
	sb->stage_rows = Max(mrel->rows, 1);
	sb->stage_input_rows = cj_group_input_rows(root, sg);
	foreach(lc, sg->rels)
		if (((CjBaseRel *) lfirst(lc))->has_security_quals)
			sb->has_security_quals = true;
	return sb;
}

/* whether br reads range table entry varno: its own, or one of its stage */
bool
cj_rel_has_varno(CjBaseRel *br, Index varno)
{
	if (br->stage != NULL)
		return bms_is_member((int) varno, br->stage_relids);
	return br->rtindex == varno;
}

/*
 * cj_stage_columns
 *		The columns sb's moved rows carry: every Var of its relations that
 *		exprs read, in a fixed order.  false, with the reason, for a system
 *		column or a whole row, or a placeholder computed inside the stage.
 */
bool
cj_stage_columns(CjBaseRel *sb, Node *exprs, List **reasons)
{
	List	   *vars = pull_var_clause(exprs, PVC_INCLUDE_PLACEHOLDERS);
	ListCell   *lc;

	sb->stage_vars = NIL;
	sb->stage_width = 0;
	foreach(lc, vars)
	{
		Node	   *n = lfirst(lc);
		Var		   *v;
		ListCell   *lo;
		bool		seen = false;

		if (IsA(n, PlaceHolderVar))
		{
			if (bms_overlap(((PlaceHolderVar *) n)->phrels, sb->stage_relids))
			{
				*reasons = lappend(*reasons,
								   psprintf("the join needs a value computed inside %s", sb->alias));
				return false;
			}
			continue;
		}
		v = (Var *) n;
		if (!bms_is_member((int) v->varno, sb->stage_relids) || v->varlevelsup != 0)
			continue;
		if (v->varattno <= 0)
		{
			*reasons = lappend(*reasons,
							   psprintf("the join needs a system column or whole row of %s",
										sb->alias));
			return false;
		}
		foreach(lo, sb->stage_vars)
		{
			Var		   *o = lfirst(lo);

			if (o->varno == v->varno && o->varattno == v->varattno)
				seen = true;
		}
		if (seen)
			continue;
		sb->stage_vars = lappend(sb->stage_vars,
								 makeVar(v->varno, v->varattno, v->vartype,
										 v->vartypmod, v->varcollid, 0));
		sb->stage_width += get_typavgwidth(v->vartype, v->vartypmod);
	}
	return true;
}

/* the name of a stage column in the moved rows */
char *
cj_stage_column_name(Var *v)
{
	return psprintf("c%u_%d", v->varno, (int) v->varattno);
}

/* a Var of sb's relations as the next group's SQL names it */
const char *
cj_stage_var_name(CjBaseRel *sb, Var *var)
{
	return psprintf("r%u.%s", sb->rtindex, cj_stage_column_name(var));
}

/*
 * cj_choose_stage_move
 *		How sb reaches the classes of ag: repartitioned by a column of its
 *		rows that the join equates with the one-column hash key of a table
 *		ag reads in place (any of them: each has the anchor's bounds class
 *		by class), or CJ_MOVE_NONE with the reason.  A stage is never
 *		broadcast: its rows are the output of a join, rarely small.
 */
int
cj_choose_stage_move(PlannerInfo *root, CjJoinGroup *ag, CjBaseRel *sb,
					 List *joinquals, bool inner, int forced, List **reasons)
{
	CjBaseRel  *anchor = linitial(ag->rels);
	int			ma = cj_single_modulus(anchor->table);
	List	   *candidates = NIL;
	ListCell   *lc;

	if (forced == CJ_MOVE_BROADCAST || ma <= 0)
	{
		*reasons = lappend(*reasons,
						   psprintf("%s can only be repartitioned into hash classes", sb->alias));
		return CJ_MOVE_NONE;
	}
	foreach(lc, pull_var_clause((Node *) joinquals, PVC_RECURSE_PLACEHOLDERS))
	{
		Var		   *v = lfirst(lc);

		if (bms_is_member((int) v->varno, sb->stage_relids) && v->varattno > 0 &&
			(!OidIsValid(v->varcollid) || get_collation_isdeterministic(v->varcollid)))
			candidates = lappend(candidates, v);
	}
	foreach(lc, ag->rels)
	{
		CjBaseRel  *t = lfirst(lc);
		Oid			family;
		Var		   *av;
		ListCell   *lv;

		if (t->move != CJ_MOVE_NONE || t->reference || t->table == NULL ||
			t->space_index < 0 || t->table->partnatts != 1 ||
			t->table->partattrs[0] == 0 || t->table->strategy != PARTITION_STRATEGY_HASH)
			continue;
		family = t->table->partopfamily[0];
		av = cj_key_var(t, 0);
		foreach(lv, candidates)
		{
			Var		   *bv = lfirst(lv);
			Oid			fn;

			/* an outer join's equality is its own ON clause's alone */
			if (!cj_clause_equates(joinquals, (Node *) av, (Node *) bv, family, false) &&
				(!inner || !exprs_known_equal(root, (Node *) av, (Node *) bv)))
				continue;
			fn = cj_usable_hash_function(family, bv->vartype);
			if (!OidIsValid(fn))
				continue;
			sb->move_key = (Expr *) copyObject(bv);
			sb->move_hashfn = fn;
			sb->move_modulus = ma;
			return CJ_MOVE_REPARTITION;
		}
	}
	*reasons = lappend(*reasons,
					   psprintf("%s is not joined on a column it could be repartitioned by into the classes of %s",
								sb->alias, anchor->alias));
	return CJ_MOVE_NONE;
}

/*
 * cj_stage_description
 *		What EXPLAIN's Strategy says of the stage: its join (in brackets
 *		when it moves rows itself), and how its rows move.
 */
char *
cj_stage_description(PlannerInfo *root, CjBaseRel *sb, CjBaseRel *anchor)
{
	Var		   *key = (Var *) sb->move_key;
	RangeTblEntry *rte = planner_rt_fetch(key->varno, root);

	return psprintf("%s %s%scolocated on %s%s, then repartitioned by hash of %s.%s like %s",
					sb->alias,
					sb->stage->move_text ? "[" : "",
					sb->stage->move_text ? psprintf("%s, then ", sb->stage->move_text) : "",
					sb->stage->keys_text,
					sb->stage->move_text ? "]" : "",
					quote_identifier(rte->eref->aliasname),
					quote_identifier(get_attname(rte->relid, key->varattno, false)),
					quote_identifier(anchor->alias));
}

/* a Var of a stage's rows, by its column name in the source's query */
static const char *
stage_column_var_name(Var *var, void *arg)
{
	CjBaseRel  *sb = (CjBaseRel *) arg;

	if (var->varlevelsup != 0 || var->varattno <= 0 || !cj_rel_has_varno(sb, var->varno))
		return NULL;
	return cj_stage_column_name(var);
}

/* the stage's column names of vars, comma separated */
static char *
stage_column_list(List *vars)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, vars)
		appendStringInfo(&buf, "%s%s", buf.len ? ", " : "",
						 cj_stage_column_name(lfirst(lc)));
	return buf.data;
}

/*
 * cj_stage_source_sql
 *		The COPY one source node runs: the stage's tasks there (each class
 *		it holds), their rows under the stage's column names, and the class
 *		class_sql (over those names) computes, keeping the rows of
 *		remainders (every class when NIL) whose key is not NULL (an inner
 *		join: a NULL equals nothing), in binary when binary.  One COPY
 *		per node, its classes one after the other: a COPY per task, run on
 *		more connections of the node, was slower (bench/README.md).  When
 *		the query aggregates what the stage joins (pre_aggregate.c), the
 *		node groups its rows by the columns carried on (the routing key
 *		among them) and sends each group's partial aggregates.
 */
char *
cj_stage_source_sql(CjBaseRel *sb, Oid serverid, const char *class_sql,
					List *remainders, bool binary)
{
	CjJoinGroup *sg = sb->stage;
	List	   *task_vars = sb->preagg != NIL ? sb->stage_task_vars : sb->stage_vars;
	char	   *task_cols = stage_column_list(task_vars);
	char	   *cols = stage_column_list(sb->stage_vars);
	StringInfoData tasks;
	StringInfoData sel;
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&tasks);
	foreach(lc, sg->tasks)
	{
		CjTask	   *task = lfirst(lc);
		CjSqlContext sc;

		if (task->serverid != serverid)
			continue;
		cj_sql_context_init(&sc, sg);
		appendStringInfo(&tasks, "%s%s", tasks.len ? " UNION ALL " : "",
						 cj_task_sql(sg, task_vars, NULL, task->cls,
									 serverid, &sc));
		if (sc.dctx.params != NIL)
			elog(ERROR, "colojoin: a moved join has a parameter");
	}

	initStringInfo(&sel);
	appendStringInfoString(&sel, cols);
	foreach(lc, sb->preagg)
	{
		CjPreAgg   *pa = lfirst(lc);
		CjDeparseContext dctx;

		/* the type the temporary column has, whatever the node computes */
		memset(&dctx, 0, sizeof(dctx));
		dctx.var_name = stage_column_var_name;
		dctx.var_arg = sb;
		appendStringInfoString(&sel, sel.len ? ", (" : "(");
		cj_deparse_expr(&sel, (Expr *) pa->agg, &dctx);
		appendStringInfo(&sel, ")::%s AS %s", cj_type_name(pa->agg->aggtype, -1),
						 pa->column);
		if (dctx.params != NIL)
			elog(ERROR, "colojoin: a moved join's aggregate has a parameter");
	}

	initStringInfo(&buf);
	appendStringInfo(&buf, "COPY (SELECT * FROM (SELECT %s, %s AS colojoin_class FROM (%s) s (%s) WHERE %s IS NOT NULL",
					 sel.data, class_sql, tasks.data, task_cols,
					 cj_stage_column_name((Var *) sb->move_key));
	if (sb->preagg != NIL)
		appendStringInfo(&buf, " GROUP BY %s", cols);
	appendStringInfoString(&buf, ") m");
	if (remainders != NIL)
	{
		appendStringInfoString(&buf, " WHERE colojoin_class = ANY ('{");
		foreach(lc, remainders)
			appendStringInfo(&buf, "%s%d", lc == list_head(remainders) ? "" : ",",
							 lfirst_int(lc));
		appendStringInfoString(&buf, "}'::pg_catalog.int4[])");
	}
	appendStringInfoString(&buf, ") TO STDOUT");
	if (binary)
		appendStringInfoString(&buf, " (FORMAT binary)");
	return buf.data;
}

/* the nodes that run sb's stage, in task order */
List *
cj_stage_source_nodes(CjBaseRel *sb)
{
	List	   *nodes = NIL;
	ListCell   *lc;

	foreach(lc, sb->stage->tasks)
		nodes = list_append_unique_oid(nodes, ((CjTask *) lfirst(lc))->serverid);
	return nodes;
}
