/*-------------------------------------------------------------------------
 *
 * lateral.c
 *	  LATERAL subqueries run inside the tasks of a colocated group.  A
 *	  subquery that PostgreSQL keeps as a subquery (LIMIT, aggregates,
 *	  DISTINCT, ORDER BY), reads only sharded tables and equates each of
 *	  their partition keys with the key of a table of the group (directly
 *	  or through another of its tables) sees, for any row of the group,
 *	  only rows of that row's own partition class; reference tables it
 *	  reads whole, from their copy on the task's node.  So every task can
 *	  evaluate it for its rows over the leaves of its class, and the whole
 *	  join is one CustomScan instead of a coordinator nested loop with a
 *	  round trip per outer row.
 *
 *	  Owns: recognising such subqueries (cj_try_lateral_join, called from
 *	  planner.c's join hook), the leaf of the join tree that stands for
 *	  one (CjJoinTree.lateral), the moves and narrowing it needs and the
 *	  nodes its partitions need.  Everything the tasks cannot compute
 *	  exactly is declined, leaving PostgreSQL's plan.
 *
 *	  Does not: plan the group around it (planner.c), write its SQL
 *	  (lateral_sql.c) or the rest of a task (remote_sql.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "nodes/makefuncs.h"
#include "optimizer/clauses.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "plan/lateral_internal.h"
#include "plan/planner_internal.h"
#include "remote/connection.h"
#include "util/settings.h"


bool
cj_is_lateral_rel(RelOptInfo *rel)
{
	return rel->reloptkind == RELOPT_BASEREL && rel->rtekind == RTE_SUBQUERY &&
		!bms_is_empty(rel->lateral_relids);
}

/* a subquery relation, or a scan of a WITH query (a materialized CTE) */
bool
cj_is_subquery_rel(RelOptInfo *rel)
{
	return rel->reloptkind == RELOPT_BASEREL &&
		(rel->rtekind == RTE_SUBQUERY || rel->rtekind == RTE_CTE);
}

/*
 * cte_of
 *		The WITH query a CTE scan reads, or NULL when the tasks may not
 *		compute it again for the join: PostgreSQL materializes a WITH query read twice and computes it
 *		once, which the tasks' copy only repeats when it is a plain SELECT
 *		of no volatile function (not recursive, not MATERIALIZED on
 *		purpose, of this query level).
 */
static CommonTableExpr *
cte_of(PlannerInfo *root, RangeTblEntry *rte)
{
	ListCell   *lc;

	if (rte->ctelevelsup != 0 || rte->self_reference)
		return NULL;
	foreach(lc, root->parse->cteList)
	{
		CommonTableExpr *cte = lfirst_node(CommonTableExpr, lc);

		if (strcmp(cte->ctename, rte->ctename) != 0)
			continue;
		if (cte->cterecursive || cte->ctematerialized == CTEMaterializeAlways ||
			!IsA(cte->ctequery, Query) ||
			((Query *) cte->ctequery)->commandType != CMD_SELECT ||
			contain_volatile_functions(cte->ctequery))
			return NULL;
		return cte;
	}
	return NULL;
}

/*
 * key_safe_output
 *		Whether output column expr of subquery q stands for every row it was
 *		made of: a column of one of its tables that q groups by (or keeps
 *		DISTINCT), or any column when q neither groups nor aggregates.  A
 *		join equating such a column with the group's key equates the key
 *		of each of those rows with it, as a LATERAL subquery's WHERE would.
 */
static bool
key_safe_output(Query *q, TargetEntry *tle)
{
	if (!IsA(tle->expr, Var))
		return false;
	if (q->groupClause != NIL)
		return tle->ressortgroupref != 0 &&
			get_sortgroupref_clause_noerr(tle->ressortgroupref, q->groupClause) != NULL;
	if (q->distinctClause != NIL)
		return tle->ressortgroupref != 0 &&
			get_sortgroupref_clause_noerr(tle->ressortgroupref, q->distinctClause) != NULL;
	return !q->hasAggs && q->havingQual == NULL;
}

typedef struct
{
	CjLateral  *lat;
	bool		ok;
} OutputsContext;

/* a condition of the join with the subquery's columns as its rows' own */
static Node *
replace_outputs(Node *node, OutputsContext *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == cxt->lat->rtindex &&
		((Var *) node)->varlevelsup == 0)
	{
		Var		   *v = (Var *) node;
		TargetEntry *tle = v->varattno > 0 ?
			get_tle_by_resno(cxt->lat->query->targetList, v->varattno) : NULL;

		if (tle == NULL || !key_safe_output(cxt->lat->query, tle))
		{
			cxt->ok = false;
			return node;
		}
		return copyObject((Node *) tle->expr);
	}
	return expression_tree_mutator(node, replace_outputs, cxt);
}

/*
 * cj_conjuncts
 *		The top-level conjuncts of a condition, nested ANDs (and implicit-AND
 *		lists) flattened, appended to result.
 */
List *
cj_conjuncts(Node *node, List *result)
{
	if (node == NULL)
		return result;
	if (is_andclause(node))
	{
		ListCell   *lc;

		foreach(lc, ((BoolExpr *) node)->args)
			result = cj_conjuncts(lfirst(lc), result);
		return result;
	}
	if (IsA(node, List))
	{
		ListCell   *lc;

		foreach(lc, (List *) node)
			result = cj_conjuncts(lfirst(lc), result);
		return result;
	}
	return lappend(result, node);
}

/* whether an equivalence class fixes a column of rel (to a constant or another of its columns) */
static bool
ec_fixes_column(PlannerInfo *root, RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, root->eq_classes)
	{
		EquivalenceClass *ec = lfirst(lc);
		ListCell   *lm;
		int			own = 0;

		foreach(lm, ec->ec_members)
		{
			EquivalenceMember *em = lfirst(lm);

			if (bms_is_subset(em->em_relids, rel->relids) &&
				!bms_is_empty(em->em_relids))
				own++;
		}
		if (own > 0 && (ec->ec_has_const || own > 1))
			return true;
	}
	return false;
}

/*
 * filters_of
 *		The conditions of the query's join tree (below jtnode) that filter
 *		the rows of relation rti before anything joins them: those reading
 *		rti alone in a WHERE or an inner join's ON clause while no outer join
 *		below makes it nullable, or in the ON clause of a left, semi or anti
 *		join (or one PostgreSQL proved unique and made inner: the join tree
 *		still says semi) whose inner side holds it.  Others reading rti alone
 *		(a preserved side's ON condition, a WHERE above the join that nulls
 *		it) decide matches or see NULL-extended rows: *other is set.
 *		Returns whether jtnode holds rti; *nullable, whether a join below
 *		may null its rows.
 */
static bool
filters_of(PlannerInfo *root, Node *jtnode, Index rti, List **filters,
		   bool *other, bool *nullable)
{
	List	   *quals = NIL;
	bool		holds = false;
	bool		filtering = false;
	ListCell   *lc;

	*nullable = false;
	if (jtnode == NULL)
		return false;
	if (IsA(jtnode, RangeTblRef))
		return ((RangeTblRef *) jtnode)->rtindex == (int) rti;
	if (IsA(jtnode, FromExpr))
	{
		FromExpr   *f = (FromExpr *) jtnode;

		foreach(lc, f->fromlist)
		{
			bool		n;

			if (filters_of(root, lfirst(lc), rti, filters, other, &n))
			{
				holds = true;
				*nullable = n;
			}
		}
		quals = cj_conjuncts(f->quals, NIL);
		filtering = holds && !*nullable;
	}
	else if (IsA(jtnode, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) jtnode;
		bool		nl;
		bool		nr;
		bool		in_left = filters_of(root, j->larg, rti, filters, other, &nl);
		bool		in_right = filters_of(root, j->rarg, rti, filters, other, &nr);

		holds = in_left || in_right;
		quals = cj_conjuncts(j->quals, NIL);
		switch (j->jointype)
		{
			case JOIN_INNER:
				*nullable = in_left ? nl : nr;
				filtering = holds && !*nullable;
				break;
			case JOIN_LEFT:
			case JOIN_SEMI:
			case JOIN_ANTI:
				filtering = in_right && !nr;
				*nullable = in_right || nl;
				break;
			default:
				*nullable = true;
				break;
		}
	}
	foreach(lc, quals)
	{
		Relids		varnos = pull_varnos(root, lfirst(lc));

		if (bms_membership(varnos) != BMS_SINGLETON || !bms_is_member(rti, varnos))
			continue;
		if (filtering)
			*filters = lappend(*filters, lfirst(lc));
		else
			*other = true;
	}
	return holds;
}

/*
 * may_have_lost_quals
 *		PostgreSQL pushes the conditions of a subquery without LIMIT into
 *		its own planning copy and drops them from the relation: they are
 *		then nowhere we could read them.  True when that may have happened:
 *		the query has a condition on rel alone, or an equivalence class
 *		fixes one of its columns (to a constant or another of its columns).
 */
static bool
may_have_lost_quals(PlannerInfo *root, RelOptInfo *rel, Query *sq)
{
	List	   *filters = NIL;
	bool		other = false;
	bool		nullable;

	if (sq->limitCount != NULL || sq->limitOffset != NULL)
		return false;			/* PostgreSQL pushes nothing into it */
	if (rel->baserestrictinfo != NIL || ec_fixes_column(root, rel))
		return true;
	/* any condition of the query reading it alone, filter or not */
	(void) filters_of(root, (Node *) root->parse->jointree, rel->relid,
					  &filters, &other, &nullable);
	return filters != NIL || other;
}

/* a column of the subquery's table rti, as its copy names it */
static Var *
table_key_var(CjLateral *lat, CjLateralTable *lt, int p)
{
	CjTable    *t = lt->rel->table;
	Oid			typid;
	int32		typmod;
	Oid			collid;

	get_atttypetypmodcoll(lt->rel->relid, t->partattrs[p], &typid, &typmod, &collid);
	return makeVar(lat->offset + lt->rti, t->partattrs[p], typid, typmod, collid, 0);
}

/* every key column of lt equated with the same one of br, by quals */
static bool
keys_equated_with(CjLateral *lat, CjLateralTable *lt, List *quals,
				  Node *(*other_key) (void *, int), void *other)
{
	int			p;

	for (p = 0; p < lt->rel->table->partnatts; p++)
		if (!cj_clause_equates(quals, (Node *) table_key_var(lat, lt, p),
							   other_key(other, p),
							   lt->rel->table->partopfamily[p], false))
			return false;
	return true;
}

static Node *
group_key(void *br, int p)
{
	return (Node *) cj_key_var((CjBaseRel *) br, p);
}

typedef struct
{
	CjLateral  *lat;
	CjLateralTable *lt;
} SubqueryKeyArg;

static Node *
subquery_key(void *arg, int p)
{
	SubqueryKeyArg *a = arg;

	return (Node *) table_key_var(a->lat, a->lt, p);
}

/* whether every key column of t is a column */
static bool
column_keys(CjTable *t)
{
	int			p;

	for (p = 0; p < t->partnatts; p++)
		if (t->partattrs[p] == 0)
			return false;
	return true;
}

/*
 * anchor_table
 *		lt follows the class of anchor (a table of the group): map each class
 *		of anchor's table to the class of lt's with the same keys.  false
 *		when their bounds do not line up one to one.
 */
static bool
anchor_table(CjLateralTable *lt, CjBaseRel *anchor, List **reasons)
{
	CjClassSpace *space;
	int			c;

	space = cj_build_class_space(list_make2(anchor->table, lt->rel->table), reasons);
	if (space == NULL)
		return false;
	lt->anchor = anchor->rtindex;
	lt->classes = palloc(sizeof(int) * Max(anchor->table->nclasses, 1));
	for (c = 0; c < anchor->table->nclasses; c++)
		lt->classes[c] = -1;
	for (c = 0; c < space->nclasses; c++)
		if (CJ_MEMBER(space, c, 0) >= 0)
			lt->classes[CJ_MEMBER(space, c, 0)] = CJ_MEMBER(space, c, 1);
	return true;
}

/* "l.l_orderkey = o.o_orderkey" appended to what EXPLAIN says of lat */
static void
describe_equality(CjLateral *lat, CjBaseRel *a, CjBaseRel *b)
{
	int			p;

	for (p = 0; p < a->table->partnatts; p++)
		lat->keys_text = psprintf("%s%s%s = %s", lat->keys_text,
								  *lat->keys_text ? ", " : "",
								  cj_key_name(a, p), cj_key_name(b, p));
}

/* whether q computes its rows per value of column c: it groups by c, or
 * computes each row from one row (no aggregates, no DISTINCT without c) */
static bool
rows_per_value(Query *q, Var *c)
{
	ListCell   *lc;

	if (q->hasAggs || q->groupClause != NIL || q->havingQual != NULL)
	{
		foreach(lc, q->groupClause)
			if (equal(get_sortgroupclause_expr(lfirst(lc), q->targetList), c))
				return true;
		return false;
	}
	if (q->distinctClause != NIL)
	{
		foreach(lc, q->distinctClause)
			if (equal(get_sortgroupclause_expr(lfirst(lc), q->targetList), c))
				return true;
		return false;
	}
	return true;
}

/*
 * repartition_table
 *		A subquery that is not LATERAL and reads one sharded table lt whose
 *		partition key the join does not meet: when the join equates a table
 *		of the group read in place with a column c of lt that the subquery
 *		groups by (or computes its rows from one row each), lt's rows are
 *		repartitioned by c to the group's classes, and each task computes
 *		the subquery over the rows of its class: every group of c is whole
 *		there, and only there can it meet the group's rows.  Conditions on
 *		lt alone filter the rows before they move.
 */
static bool
repartition_table(PlannerInfo *root, CjLateral *lat, CjLateralTable *lt,
				  CjJoinGroup *og, RelOptInfo *rel, List *quals, List **reasons)
{
	CjBaseRel  *anchor = linitial(og->rels);
	CjBaseRel  *mb = lt->rel;
	int			modulus = cj_single_modulus(anchor->table);
	ListCell   *lc;
	ListCell   *lv;
	RelOptInfo *trel;
	PlannerInfo *sub;

	/*
	 * Not for a WITH query PostgreSQL materializes: it computes it anyway
	 * for its other readers, and its rows at hand join cheaper than a
	 * second computation whose rows must move first.
	 */
	if (lat->correlated || !colojoin_enable_redistribution || modulus <= 0 ||
		anchor->move != CJ_MOVE_NONE || rel->rtekind == RTE_CTE)
		return false;
	if (cj_xact_has_dml())
	{
		*reasons = lappend(*reasons,
						   pstrdup("this transaction wrote through colojoin: rows are not moved until it commits"));
		return false;
	}
	foreach(lc, lat->tables)
	{
		CjLateralTable *other = lfirst(lc);

		if (other != lt && !other->whole)
			return false;
	}
	foreach(lc, og->rels)
	{
		CjBaseRel  *br = lfirst(lc);
		Var		   *key;

		if (br->move != CJ_MOVE_NONE || br->table == NULL || br->reference_capable ||
			br->space_index < 0 || br->table->partnatts != 1 ||
			br->table->partattrs[0] == 0 || cj_single_modulus(br->table) != modulus)
			continue;
		key = cj_key_var(br, 0);
		foreach(lv, pull_var_clause((Node *) quals, PVC_RECURSE_AGGREGATES |
									PVC_RECURSE_PLACEHOLDERS))
		{
			Var		   *c = lfirst(lv);
			Oid			hashfn;

			if (!IsA(c, Var) || c->varno != mb->rtindex || c->varattno <= 0 ||
				c->varlevelsup != 0 ||
				!cj_clause_equates(quals, (Node *) c, (Node *) key,
								   br->table->partopfamily[0], false) ||
				!rows_per_value(lat->query, c) ||
				!OidIsValid(hashfn = cj_usable_hash_function(br->table->partopfamily[0],
															 c->vartype)))
				continue;
			if (!cj_live_leaves_foreign(mb, reasons) ||
				!cj_move_columns(mb, (Node *) list_make3(lat->query->targetList,
														 lat->query->jointree->quals,
														 lat->query->havingQual),
								 reasons))
				return false;
			mb->move = CJ_MOVE_REPARTITION;
			mb->move_key = (Expr *) copyObject(c);
			mb->move_hashfn = hashfn;
			mb->move_modulus = modulus;
			mb->move_keep_nulls = false;
			mb->move_name = cj_new_move_name(mb->rtindex);
			mb->space_index = -1;
			mb->checkasuser = anchor->checkasuser;
			mb->in_subquery = true;
			mb->alias = psprintf("%s in %s %s", mb->alias, lat->kind, lat->alias);

			/* its own conditions filter the rows before they move */
			mb->remote_quals = NIL;
			foreach(lv, cj_conjuncts(lat->query->jointree->quals, NIL))
			{
				Node	   *q = lfirst(lv);
				Relids		varnos = pull_varnos(root, q);

				if (bms_membership(varnos) == BMS_SINGLETON &&
					bms_is_member(mb->rtindex, varnos) &&
					!contain_volatile_functions(q) && !contain_subplans(q) &&
					!cj_contains_param(q) && cj_is_shippable(root, (Expr *) q, NULL))
					mb->remote_quals = lappend(mb->remote_quals, q);
			}
			sub = rel->subroot;
			trel = sub != NULL && lt->rti < sub->simple_rel_array_size ?
				sub->simple_rel_array[lt->rti] : NULL;
			mb->subquery_rows = trel != NULL ? Max(trel->rows, 1) : 1000;
			mb->subquery_tuples = trel != NULL ? Max(trel->tuples, mb->subquery_rows) :
				mb->subquery_rows;
			mb->subquery_width = trel != NULL ? trel->reltarget->width : 32;
			lt->moved = true;
			lt->anchor = br->rtindex;

			/*
			 * Grouped before the move when it reads that table alone and
			 * every condition of it ran on the sources: the task then reads
			 * only the groups.
			 */
			if (list_length(lat->tables) == 1 &&
				list_length(cj_conjuncts(lat->query->jointree->quals, NIL)) ==
				list_length(mb->remote_quals))
				lat->grouped_exprs = cj_pre_aggregate_subquery(mb, lat->query,
															   &lat->partial_vars);
			lat->keys_text = psprintf("%s%s%s = %s", lat->keys_text,
									  *lat->keys_text ? ", " : "",
									  cj_key_name(br, 0),
									  get_attname(mb->relid, c->varattno, false));
			return true;
		}
	}
	return false;
}

/*
 * correlate
 *		Give every table of the subquery its anchor: a table of the group
 *		read in place (not moved, not a reference table) whose partition
 *		key its own is equated with in the subquery's WHERE, or whose key a
 *		table anchored already is equated with.
 */
static bool
correlate(PlannerInfo *root, CjLateral *lat, CjJoinGroup *og, RelOptInfo *rel,
		  List *quals, List **reasons)
{
	bool		progress = true;
	ListCell   *lc;

	while (progress)
	{
		progress = false;
		foreach(lc, lat->tables)
		{
			CjLateralTable *lt = lfirst(lc);
			ListCell   *lo;

			if (lt->classes != NULL || lt->whole || lt->moved)
				continue;
			foreach(lo, og->rels)
			{
				CjBaseRel  *br = lfirst(lo);
				List	   *ignored = NIL;

				if (br->move != CJ_MOVE_NONE || br->table == NULL ||
					br->reference_capable || !column_keys(br->table) ||
					!cj_schemes_compatible(br->table, lt->rel->table, &ignored) ||
					!keys_equated_with(lat, lt, quals, group_key, br))
					continue;
				if (!anchor_table(lt, br, reasons))
					return false;
				describe_equality(lat, lt->rel, br);
				progress = true;
				break;
			}
			if (lt->classes != NULL)
				continue;
			foreach(lo, lat->tables)
			{
				CjLateralTable *other = lfirst(lo);
				SubqueryKeyArg arg = {lat, other};
				List	   *ignored = NIL;
				ListCell   *lg;

				if (other == lt || other->classes == NULL || other->whole ||
					!cj_schemes_compatible(other->rel->table, lt->rel->table, &ignored) ||
					!keys_equated_with(lat, lt, quals, subquery_key, &arg))
					continue;
				foreach(lg, og->rels)
					if (((CjBaseRel *) lfirst(lg))->rtindex == other->anchor &&
						!anchor_table(lt, lfirst(lg), reasons))
						return false;
				if (lt->classes == NULL)
					continue;
				describe_equality(lat, lt->rel, other->rel);
				progress = true;
				break;
			}
		}
	}
	foreach(lc, lat->tables)
	{
		CjLateralTable *lt = lfirst(lc);

		if (lt->classes == NULL && !lt->whole &&
			!repartition_table(root, lat, lt, og, rel, quals, reasons))
		{
			*reasons = lappend(*reasons,
							   lat->correlated ?
							   psprintf("%s %s does not equate the partition key of %s with the key of a table it is joined to",
										lat->kind, lat->alias, lt->rel->alias) :
							   psprintf("%s %s neither equates the partition key of %s with the key of a table it is joined to nor groups by a column joined to one",
										lat->kind, lat->alias, lt->rel->alias));
			return false;
		}
	}
	return true;
}

/* sort and grouping clauses the nodes apply alike: the types' defaults */
static bool
clauses_default(List *clauses, List *tlist, bool sort)
{
	ListCell   *lc;

	foreach(lc, clauses)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		Oid			type = exprType(get_sortgroupclause_expr(sgc, tlist));
		TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_EQ_OPR |
											   TYPECACHE_LT_OPR | TYPECACHE_GT_OPR);

		if (sgc->eqop != tc->eq_opr)
			return false;
		if (sort && sgc->sortop != tc->lt_opr && sgc->sortop != tc->gt_opr)
			return false;
	}
	return true;
}

/*
 * make_lateral
 *		The leaf for subquery relation rel joined to og, or NULL with a
 *		reason.  A subquery that is not LATERAL follows the group's classes
 *		through join_clauses: those equating a key with an output column
 *		that is a column of its tables it groups by (key_safe_output) say
 *		what a LATERAL subquery's WHERE would.
 */
static CjLateral *
make_lateral(PlannerInfo *root, CjJoinGroup *og, RelOptInfo *outerrel,
			 RelOptInfo *rel, List *join_clauses, List **reasons)
{
	const char *kind = cj_is_lateral_rel(rel) ? "LATERAL subquery" :
		rel->rtekind == RTE_CTE ? "WITH query" : "subquery";
	List	   *correlation;
	RangeTblEntry *rte = planner_rt_fetch(rel->relid, root);
	Query	   *sq = rte->subquery;
	CjLateral  *lat;
	Query	   *q;
	List	   *exprs = NIL;
	ListCell   *lc;
	Oid			user = ((CjBaseRel *) linitial(og->rels))->checkasuser;
	char	   *why = NULL;
	bool		own_quals = false;	/* its conditions read from the query */
	List	   *own_filters = NIL;
	List	   *quals;

	if (rte->rtekind == RTE_CTE)
	{
		CommonTableExpr *cte = cte_of(root, rte);

		if (cte == NULL)
		{
			*reasons = lappend(*reasons,
							   psprintf("WITH query %s is recursive, writes, is MATERIALIZED or calls a volatile function",
										rte->eref->aliasname));
			return NULL;
		}
		sq = (Query *) cte->ctequery;
	}
	if (sq == NULL || sq->commandType != CMD_SELECT || sq->utilityStmt != NULL)
		return NULL;
	if (sq->setOperations != NULL || sq->cteList != NIL || sq->hasSubLinks ||
		sq->hasWindowFuncs || sq->hasTargetSRFs || sq->rowMarks != NIL ||
		sq->hasForUpdate || sq->groupingSets != NIL || sq->groupDistinct ||
		sq->hasDistinctOn || sq->hasRecursive || sq->hasModifyingCTE)
		why = "uses a construct colojoin does not write in a task";
	else if (list_length(sq->rtable) != list_length(sq->jointree->fromlist))
		why = "does not read only tables";
	else if (IS_DUMMY_REL(rel))
		why = "returns no rows";
	else if (!cj_is_lateral_rel(rel) &&
			 (sq->limitCount != NULL || sq->limitOffset != NULL))
		why = "limits its rows over all partitions";
	else if (rte->rtekind == RTE_CTE)
	{
		/* its conditions stay with the scan of its rows, nothing moved in */
	}
	else if (!cj_is_lateral_rel(rel))
	{
		/*
		 * The query's conditions on its rows alone that filter them are
		 * applied around it in the task: PostgreSQL moved them into its own
		 * copy.  One an equivalence class derived is nowhere to read.  The
		 * others reading it alone (a preserved side's ON condition, a WHERE
		 * above a join that nulls it) PostgreSQL keeps with the joins, where
		 * the group's tree or the coordinator evaluates them.
		 */
		bool		other = false;
		bool		nullable;

		(void) filters_of(root, (Node *) root->parse->jointree, rel->relid,
						  &own_filters, &other, &nullable);
		if (rte->security_barrier)
			why = "is a security-barrier view";
		else if (ec_fixes_column(root, rel))
			why = "has conditions PostgreSQL derived from others";
		own_quals = true;
	}
	else if (may_have_lost_quals(root, rel, sq))
		why = "has conditions PostgreSQL moved into it";
	else if (!clauses_default(sq->sortClause, sq->targetList, true) ||
			 !clauses_default(sq->groupClause, sq->targetList, false) ||
			 !clauses_default(sq->distinctClause, sq->targetList, false))
		why = "sorts or groups other than by the types' default order";
	if (why != NULL)
	{
		*reasons = lappend(*reasons, psprintf("%s %s %s", kind,
											  rte->eref->aliasname, why));
		return NULL;
	}

	lat = palloc0(sizeof(CjLateral));
	lat->rtindex = rel->relid;
	lat->alias = rte->eref->aliasname;
	lat->offset = list_length(root->parse->rtable);
	lat->keys_text = "";
	lat->refs_text = "";
	lat->kind = kind;
	lat->correlated = cj_is_lateral_rel(rel);
	q = copyObject(sq);
	OffsetVarNodes((Node *) q, lat->offset, 0);
	IncrementVarSublevelsUp((Node *) q, -1, 1);

	/*
	 * The expressions as the planner sees its own (COLLATE as relabelling,
	 * default arguments filled in, constants folded, ANDs flat), which is
	 * what deparse.c knows how to judge and write.
	 */
	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		tle->expr = (Expr *) eval_const_expressions(root, (Node *) tle->expr);
	}
	q->jointree->quals = eval_const_expressions(root, q->jointree->quals);
	q->havingQual = eval_const_expressions(root, q->havingQual);
	q->limitCount = eval_const_expressions(root, q->limitCount);
	q->limitOffset = eval_const_expressions(root, q->limitOffset);
	lat->query = q;

	/* its FROM list: sharded tables, read whole, as the group's user */
	foreach(lc, q->jointree->fromlist)
	{
		RangeTblRef *ref = (RangeTblRef *) lfirst(lc);
		RangeTblEntry *trte;
		CjTable    *table;
		CjLateralTable *lt;
		int			k;

		if (!IsA(ref, RangeTblRef))
			return NULL;
		trte = rt_fetch(ref->rtindex - lat->offset, q->rtable);
		table = (trte->rtekind == RTE_RELATION &&
				 trte->relkind == RELKIND_PARTITIONED_TABLE && trte->inh &&
				 trte->tablesample == NULL && trte->securityQuals == NIL) ?
			cj_get_table(trte->relid) : NULL;
		if (table == NULL || table->nclasses == 0 || !table->all_foreign ||
			!(column_keys(table) || cj_is_reference_table(table)) ||
			trte->checkAsUser != user)
		{
			*reasons = lappend(*reasons,
							   psprintf("%s %s reads %s, which is not a sharded table it can read in the tasks",
										kind, lat->alias, trte->eref->aliasname));
			return NULL;
		}
		lt = palloc0(sizeof(CjLateralTable));
		lt->rti = ref->rtindex - lat->offset;
		/* every copy of a reference table holds all its rows */
		lt->whole = cj_is_reference_table(table);
		if (lt->whole)
			lat->refs_text = psprintf("%s%s%s", lat->refs_text,
									  *lat->refs_text ? ", " : "",
									  trte->eref->aliasname);
		lt->rel = palloc0(sizeof(CjBaseRel));
		lt->rel->rtindex = ref->rtindex;
		lt->rel->relid = trte->relid;
		lt->rel->table = table;
		lt->rel->alias = trte->eref->aliasname;
		lt->rel->class_live = palloc(sizeof(bool) * table->nclasses);
		lt->rel->leaf_live = palloc(sizeof(bool *) * table->nclasses);
		for (k = 0; k < table->nclasses; k++)
		{
			lt->rel->class_live[k] = true;
			lt->rel->leaf_live[k] = palloc(sizeof(bool) * Max(table->classes[k].nleaves, 1));
			memset(lt->rel->leaf_live[k], true,
				   sizeof(bool) * Max(table->classes[k].nleaves, 1));
		}
		lat->tables = lappend(lat->tables, lt);
	}

	/* everything it computes, the nodes compute alike */
	foreach(lc, q->targetList)
		exprs = lappend(exprs, lfirst_node(TargetEntry, lc)->expr);
	exprs = lappend(exprs, q->jointree->quals);
	exprs = lappend(exprs, q->havingQual);
	exprs = lappend(exprs, q->limitCount);
	exprs = lappend(exprs, q->limitOffset);
	foreach(lc, exprs)
	{
		Node	   *e = lfirst(lc);
		ListCell   *lv;

		if (e != NULL && !cj_is_shippable(root, (Expr *) e, NULL))
		{
			*reasons = lappend(*reasons,
							   psprintf("%s %s computes something the nodes cannot",
										kind, lat->alias));
			return NULL;
		}
		/* the query's columns it reads are the group's */
		foreach(lv, pull_var_clause(e, PVC_RECURSE_AGGREGATES | PVC_RECURSE_PLACEHOLDERS))
		{
			Var		   *v = lfirst(lv);

			if (IsA(v, Var) && v->varno <= lat->offset &&
				!bms_is_member(v->varno, outerrel->relids))
				return NULL;
		}
	}

	/*
	 * The conditions on its rows: PostgreSQL's (nothing was pushed into
	 * it), or the query's own (own_quals).
	 */
	quals = NIL;
	if (own_quals)
		quals = own_filters;
	else
		foreach(lc, rel->baserestrictinfo)
		{
			if (lfirst_node(RestrictInfo, lc)->pseudoconstant)
				quals = lappend(quals, NULL);	/* refused below */
			else
				quals = lappend(quals, lfirst_node(RestrictInfo, lc)->clause);
		}
	foreach(lc, quals)
	{
		Expr	   *clause = lfirst(lc);

		if (clause == NULL || !cj_is_shippable(root, clause, NULL))
		{
			*reasons = lappend(*reasons,
							   psprintf("a condition on %s %s cannot run on the nodes",
										kind, lat->alias));
			return NULL;
		}
		lat->quals = lappend(lat->quals, clause);
	}

	correlation = cj_conjuncts(q->jointree->quals, NIL);
	foreach(lc, q->limitCount || q->limitOffset ? NIL : join_clauses)
	{
		OutputsContext cxt = {lat, true};
		Node	   *c = replace_outputs(copyObject(lfirst(lc)), &cxt);

		if (cxt.ok)
			correlation = lappend(correlation, c);
	}
	if (!correlate(root, lat, og, rel, correlation, reasons))
		return NULL;
	return lat;
}

/*
 * semi_filter_side
 *		For clause (subquery outputs replaced by its tables' columns): the
 *		group's table its other side reads alone, when the clause is an
 *		equality the subquery's grouping agrees with (the default btree
 *		family of the column's type, its collation, leakproof) and the
 *		table has a condition the task runs, else NULL.
 */
static CjBaseRel *
semi_filter_side(PlannerInfo *root, CjLateral *lat, CjJoinGroup *og, Expr *clause)
{
	OpExpr	   *op = (OpExpr *) clause;
	Var		   *mine = NULL;
	Node	   *theirs = NULL;
	ListCell   *lc;
	Relids		varnos;
	int			rti;

	if (!IsA(op, OpExpr) || list_length(op->args) != 2)
		return NULL;
	foreach(lc, op->args)
	{
		Node	   *arg = lfirst(lc);

		while (IsA(arg, RelabelType))
			arg = (Node *) ((RelabelType *) arg)->arg;
		if (IsA(arg, Var) && ((Var *) arg)->varno > lat->offset &&
			((Var *) arg)->varlevelsup == 0 && mine == NULL)
			mine = (Var *) arg;
		else
			theirs = lfirst(lc);
	}
	if (mine == NULL || theirs == NULL)
		return NULL;
	if (!cj_equality_groups_alike(op, mine))
		return NULL;
	varnos = pull_varnos(root, theirs);
	if (!bms_get_singleton_member(varnos, &rti) || rti > (int) lat->offset ||
		contain_volatile_functions(theirs) || cj_contains_param(theirs) ||
		!cj_is_shippable(root, (Expr *) theirs, NULL))
		return NULL;
	foreach(lc, og->rels)
	{
		CjBaseRel  *br = lfirst(lc);
		ListCell   *lq;

		if (br->rtindex != (Index) rti || br->table == NULL ||
			br->move != CJ_MOVE_NONE || br->space_index < 0 ||
			br->preagg != NIL || br->has_security_quals)
			continue;
		/* what the task's WHERE will read of it (qual_placement.c) */
		foreach(lq, br->quals)
			if (cj_is_shippable(root, lfirst(lq), NULL))
				return br;
	}
	return NULL;
}

/*
 * find_semi_filters
 *		A subquery the join keeps only the rows of that meet a table of the
 *		group (an inner join, or the subquery the inner side of a left or
 *		semi join), on an equality of a column it groups by (or keeps row
 *		for row, key_safe_output) with that table's, needs in each task only
 *		the rows of its tables whose column some row of the table that
 *		passes its conditions holds: each group of the column stays whole
 *		or goes, never changes.  Said as EXISTS in the subquery, it spares
 *		the task grouping the rows the join then throws away (a year's
 *		orders joined to line items grouped by order).  Only where the
 *		table's conditions keep under half its rows: an EXISTS that keeps
 *		nearly all of them costs more than it saves.
 */
static void
find_semi_filters(PlannerInfo *root, CjLateral *lat, CjJoinGroup *og,
				  JoinType jointype, List *restrictlist)
{
	ListCell   *lc;

	if (lat->correlated || lat->grouped_exprs != NIL ||
		(jointype != JOIN_INNER && jointype != JOIN_LEFT && jointype != JOIN_SEMI) ||
		contain_volatile_functions((Node *) lat->query))
		return;
	foreach(lc, restrictlist)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
		OutputsContext cxt = {lat, true};
		Expr	   *clause;
		CjBaseRel  *br;
		Selectivity sel;
		CjSemiFilter *sf = NULL;
		ListCell   *ls;

		if (ri->pseudoconstant)
			continue;
		clause = (Expr *) replace_outputs(copyObject((Node *) ri->clause), &cxt);
		if (!cxt.ok || (br = semi_filter_side(root, lat, og, clause)) == NULL)
			continue;
		sel = clauselist_selectivity(root, br->quals, br->rtindex, JOIN_INNER, NULL);
		if (sel > 0.5)
			continue;
		foreach(ls, lat->semi_filters)
			if (((CjSemiFilter *) lfirst(ls))->rtindex == br->rtindex)
				sf = lfirst(ls);
		if (sf == NULL)
		{
			sf = palloc0(sizeof(CjSemiFilter));
			sf->rtindex = br->rtindex;
			sf->alias = br->alias;
			lat->semi_filters = lappend(lat->semi_filters, sf);
		}
		sf->clauses = lappend(sf->clauses, clause);
	}
}

/*
 * cj_try_lateral_join
 *		See planner_internal.h: the group of a join of a group (outer) and
 *		a subquery (inner): a LATERAL one of an inner or left join, another
 *		of an inner, left, semi or anti join; or NULL.
 */
CjJoinGroup *
cj_try_lateral_join(PlannerInfo *root, RelOptInfo *joinrel,
					RelOptInfo *outerrel, RelOptInfo *innerrel,
					JoinType jointype, JoinPathExtraData *extra,
					List **reasons)
{
	CjJoinGroup *og;
	CjJoinGroup *g;
	CjLateral  *lat;
	CjJoinTree *leaf;
	CjJoinTree *t;
	List	   *joinquals = NIL;
	List	   *otherquals = NIL;
	List	   *clauses = NIL;
	ListCell   *lc;

	if (cj_is_subquery_rel(outerrel) && !cj_is_subquery_rel(innerrel) &&
		(jointype == JOIN_INNER || jointype == JOIN_RIGHT))
	{
		RelOptInfo *tmp = outerrel;

		outerrel = innerrel;
		innerrel = tmp;
		jointype = (jointype == JOIN_RIGHT) ? JOIN_LEFT : JOIN_INNER;
	}
	if (!cj_is_subquery_rel(innerrel) || cj_is_subquery_rel(outerrel))
		return NULL;
	if (jointype != JOIN_INNER && jointype != JOIN_LEFT &&
		(cj_is_lateral_rel(innerrel) ||
		 (jointype != JOIN_SEMI && jointype != JOIN_ANTI)))
	{
		/* the unique-ified semi joins come again as the semi join */
		if (jointype != JOIN_UNIQUE_INNER && jointype != JOIN_UNIQUE_OUTER)
			*reasons = lappend(*reasons,
							   psprintf("subquery %s is preserved by an outer join",
										planner_rt_fetch(innerrel->relid, root)->eref->aliasname));
		return NULL;
	}
	if (!bms_is_subset(innerrel->lateral_relids, outerrel->relids))
	{
		*reasons = lappend(*reasons,
						   psprintf("LATERAL subquery %s reads relations outside the join",
									planner_rt_fetch(innerrel->relid, root)->eref->aliasname));
		return NULL;
	}
	og = cj_group_for_rel(root, outerrel, reasons);
	if (og == NULL)
		return NULL;
	foreach(lc, extra->restrictlist)
		clauses = lappend(clauses, lfirst_node(RestrictInfo, lc)->clause);
	lat = make_lateral(root, og, outerrel, innerrel, clauses, reasons);
	if (lat == NULL)
		return NULL;
	find_semi_filters(root, lat, og, jointype, extra->restrictlist);
	if (!cj_split_join_clauses(joinrel, jointype, extra, &joinquals,
							   &otherquals, reasons))
		return NULL;

	leaf = palloc0(sizeof(CjJoinTree));
	leaf->lateral = lat;
	t = palloc0(sizeof(CjJoinTree));
	t->jointype = jointype;
	t->outer = og->tree;
	t->inner = leaf;
	t->joinquals = joinquals;
	t->otherquals = otherquals;

	g = palloc0(sizeof(CjJoinGroup));
	g->rel = joinrel;
	g->rels = cj_copy_rels(og->rels);
	g->tree = t;

	/*
	 * A group that moves every table (dual repartition) has no table to
	 * build its classes from: it keeps the hash classes and tasks its rows
	 * were routed to.
	 */
	if (og->space != NULL && og->space->ntables == 0)
	{
		g->space = og->space;
		g->tasks = list_copy(og->tasks);
	}
	if (!cj_finish_group(root, g, reasons) ||
		!cj_check_target(g, joinrel, reasons))
		return NULL;
	g->move_text = og->move_text;
	foreach(lc, cj_lateral_moved_tables(leaf))
	{
		CjBaseRel  *mb = lfirst(lc);
		char	   *what = psprintf("%s repartitioned by hash of %s",
									mb->alias, get_attname(mb->relid,
														   ((Var *) mb->move_key)->varattno,
														   false));

		if (mb->preagg != NIL)
		{
			ListCell   *la;

			what = psprintf("%s, grouped by ", what);
			foreach(la, mb->move_attnos)
				what = psprintf("%s%s%s", what, la == list_head(mb->move_attnos) ? "" : ", ",
								quote_identifier(get_attname(mb->relid, lfirst_int(la), false)));
			what = psprintf("%s on its nodes first", what);
		}

		g->move_text = g->move_text ? psprintf("%s; %s", g->move_text, what) : what;
	}
	return g;
}

/*
 * cj_lateral_uncorrelated_rti
 *		The range table index of the subquery a leaf of a join tree stands
 *		for when it reads none of the group's columns (a semi or anti join
 *		may have it inside EXISTS), else 0.
 */
Index
cj_lateral_uncorrelated_rti(CjJoinTree *t)
{
	return t->lateral != NULL && !t->lateral->correlated ? t->lateral->rtindex : 0;
}

bool
cj_tree_has_lateral(CjJoinTree *t)
{
	if (t->lateral)
		return true;
	if (t->is_base)
		return false;
	return cj_tree_has_lateral(t->outer) || cj_tree_has_lateral(t->inner);
}

/* the laterals of a tree, in the order they are written */
List *
cj_tree_laterals(CjJoinTree *t, List *result)
{
	if (t == NULL)
		return result;
	if (t->lateral)
		return lappend(result, t->lateral);
	if (t->is_base)
		return result;
	return cj_tree_laterals(t->inner, cj_tree_laterals(t->outer, result));
}

/* the table of g that lt follows by its classes, read in place, or NULL */
static CjBaseRel *
anchor_in_place(CjJoinGroup *g, CjLateralTable *lt)
{
	ListCell   *lc;

	foreach(lc, g->rels)
	{
		CjBaseRel  *br = lfirst(lc);

		if (br->rtindex == lt->anchor)
			return (br->move == CJ_MOVE_NONE && br->space_index >= 0) ? br : NULL;
	}
	return NULL;
}

/* the class of lt's table that class c of g's space reads, or -1 */
int
cj_lateral_table_class(CjJoinGroup *g, CjLateralTable *lt, int c)
{
	CjBaseRel  *br;
	int			m;

	if (lt->whole)
		return 0;
	/* assign_tasks declined the group otherwise */
	br = anchor_in_place(g, lt);
	if (br == NULL)
		elog(ERROR, "colojoin: the table a LATERAL subquery follows is not read in place");
	m = CJ_MEMBER(g->space, c, br->space_index);
	return m >= 0 ? lt->classes[m] : -1;
}

/*
 * cj_lateral_anchors_in_place
 *		Every table a LATERAL subquery of g follows by its classes is read
 *		where it is: a later join that moves such a table (a broadcast, a
 *		repartition into another table's classes) would leave the subquery
 *		reading partitions of classes its rows no longer come from.
 */
bool
cj_lateral_anchors_in_place(CjJoinGroup *g, List **reasons)
{
	ListCell   *lc;

	foreach(lc, cj_tree_laterals(g->tree, NIL))
	{
		CjLateral  *lat = lfirst(lc);
		ListCell   *lt;

		foreach(lt, lat->tables)
		{
			CjLateralTable *t = lfirst(lt);

			if (t->whole || t->moved || anchor_in_place(g, t) != NULL)
				continue;
			*reasons = lappend(*reasons,
							   psprintf("%s %s follows the classes of a table this join would move",
										lat->kind, lat->alias));
			return false;
		}
	}
	return true;
}

List *
cj_lateral_nodes(CjJoinGroup *g, int c, List *nodes)
{
	ListCell   *lc;

	foreach(lc, cj_tree_laterals(g->tree, NIL))
	{
		CjLateral  *lat = lfirst(lc);
		ListCell   *lt;

		foreach(lt, lat->tables)
		{
			CjLateralTable *t = lfirst(lt);
			int			m;

			/* a moved table's rows come to the task */
			if (t->moved)
				continue;
			m = cj_lateral_table_class(g, t, c);
			if (m >= 0)
				nodes = cj_intersect_nodes(nodes,
										   cj_common_nodes(&t->rel->table->classes[m], NULL));
		}
	}
	return nodes;
}

/*
 * cj_lateral_moved_tables
 *		The tables subqueries of a join tree read, moved to its classes
 *		(CjBaseRel *, in_subquery): move_sql.c writes their moves.
 */
List *
cj_lateral_moved_tables(CjJoinTree *t)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, cj_tree_laterals(t, NIL))
	{
		ListCell   *lt;

		foreach(lt, ((CjLateral *) lfirst(lc))->tables)
			if (((CjLateralTable *) lfirst(lt))->moved)
				result = lappend(result, ((CjLateralTable *) lfirst(lt))->rel);
	}
	return result;
}

void
cj_lateral_describe(CjJoinTree *t, StringInfo buf)
{
	ListCell   *lc;
	ListCell   *ls;

	foreach(lc, cj_tree_laterals(t, NIL))
	{
		CjLateral  *lat = lfirst(lc);

		appendStringInfo(buf, ", with %s %s", lat->kind, lat->alias);
		if (*lat->keys_text)
			appendStringInfo(buf, " on %s", lat->keys_text);
		if (*lat->refs_text)
			appendStringInfo(buf, "%s reading reference table %s",
							 *lat->keys_text ? "," : "", lat->refs_text);
		foreach(ls, lat->semi_filters)
			appendStringInfo(buf, ", narrowed by a semi-join with %s",
							 ((CjSemiFilter *) lfirst(ls))->alias);
	}
}

/*
 * cj_lateral_plan_rtes
 *		The plan has no SubqueryScan for a subquery a task runs, so
 *		PostgreSQL would not list its tables in the plan's range table: no
 *		permission check, no lock, no invalidation when they change.  A
 *		subquery relation without a planned subquery has its tables listed
 *		from its RTE (setrefs.c, the way of subqueries never planned), which
 *		is what this one now is.
 */
void
cj_lateral_plan_rtes(PlannerInfo *root, CjJoinTree *t)
{
	ListCell   *lc;

	foreach(lc, cj_tree_laterals(t, NIL))
	{
		CjLateral  *lat = lfirst(lc);

		root->simple_rel_array[lat->rtindex]->subroot = NULL;
	}
}
