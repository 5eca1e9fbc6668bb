/*-------------------------------------------------------------------------
 *
 * move_choice.c
 *	  Redistribution choice (DESIGN.md, Redistribution): how a table that is
 *	  not in a group's class space reaches its classes (refining partitions
 *	  copied, rows repartitioned by the anchor's hash function, or the whole
 *	  table broadcast), how many rows that moves, and what the moves cost the
 *	  group's paths.  Joins without an equality of keys (CROSS JOIN,
 *	  inequalities, BETWEEN, ON true) can only broadcast, so they are
 *	  decided here too, by the same size threshold.
 *
 *	  It does not build groups or join trees (group.c, planner.c), find the
 *	  value a table is repartitioned by (repartition_key.c) or write the
 *	  moves' SQL (move_sql.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/ruleutils.h"

#include "metadata/colocation.h"
#include "plan/planner_internal.h"
#include "util/settings.h"

/* the number of nodes the group's tasks run on (at least 1) */
int
cj_task_node_count(CjJoinGroup *g)
{
	List	   *nodes = NIL;
	ListCell   *lc;

	foreach(lc, g->tasks)
		nodes = list_append_unique_oid(nodes, ((CjTask *) lfirst(lc))->serverid);
	return Max(list_length(nodes), 1);
}

/* the common modulus of a hash-partitioned table, or -1 */
int
cj_single_modulus(CjTable *table)
{
	int			c;

	if (table == NULL || table->strategy != PARTITION_STRATEGY_HASH ||
		table->nclasses == 0)
		return -1;
	for (c = 1; c < table->nclasses; c++)
		if (table->classes[c].bound->modulus != table->classes[0].bound->modulus)
			return -1;
	return table->classes[0].bound->modulus;
}

static bool
contains_param_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return true;
	return expression_tree_walker(node, contains_param_walker, context);
}

/* whether a table's conditions hold a parameter (a move's COPY takes none) */
bool
cj_contains_param(Node *node)
{
	return contains_param_walker(node, NULL);
}

/*
 * cj_choose_move
 *		How rows of table mb can reach the classes of group ag (anchor: its
 *		first table, whose partition function defines the classes), or
 *		CJ_MOVE_NONE with the reason.  Copying the partitions that refine each class moves
 *		the least; routing by the anchor's hash function moves the table
 *		once; broadcasting moves it once per node, so only a small table.
 */
int
cj_choose_move(PlannerInfo *root, CjJoinGroup *ag, CjBaseRel *mb,
			   RelOptInfo *mrel, List *joinquals, JoinType jointype,
			   int forced, List **reasons)
{
	bool		allow_redistribution = (forced == CJ_MOVE_REPARTITION) ||
		(forced == CJ_MOVE_NONE && colojoin_enable_redistribution);
	bool		allow_broadcast = (forced == CJ_MOVE_BROADCAST) ||
		(forced == CJ_MOVE_NONE && colojoin_enable_broadcast);
	CjBaseRel  *anchor = linitial(ag->rels);
	int			ma = cj_single_modulus(anchor->table);
	int			mbmod = cj_single_modulus(mb->table);
	bool		ec_ok = (jointype == JOIN_INNER || jointype == JOIN_SEMI);
	List	   *ignored = NIL;
	int			nnodes = cj_task_node_count(ag);
	int			p;
	double		repartition_rows = -1;
	ListCell   *lc;

	/* moved rows are read with COPY, which takes no parameters */
	if (cj_contains_param((Node *) mb->quals))
	{
		*reasons = lappend(*reasons,
						   psprintf("table %s has a condition with a parameter, which a move cannot carry",
									mb->alias));
		return CJ_MOVE_NONE;
	}

	/* a table that is not sharded can only be broadcast, from here */
	if (mb->table == NULL)
	{
		if (forced == CJ_MOVE_BROADCAST ||
			(allow_broadcast && mrel->rows <= colojoin_broadcast_threshold))
			return CJ_MOVE_BROADCAST;
		*reasons = lappend(*reasons,
						   psprintf("%s %s %s and %s",
									mb->coord_path != NULL ? "the rows of" : "table",
									mb->alias,
									mb->coord_path != NULL ?
									"are computed on the coordinator" : "is not sharded",
									forced == CJ_MOVE_REPARTITION ?
									"can only be broadcast, not repartitioned" :
									!allow_broadcast ? "broadcast is disabled" :
									mb->coord_path != NULL ? "are too many to broadcast" :
									"is too large to broadcast"));
		return CJ_MOVE_NONE;
	}

	/*
	 * Hash partitions of mb that refine the classes, or a value of mb to
	 * route by their hash function: joined with the key of any table the
	 * group reads in place, not only the anchor's.  Those tables all have
	 * the anchor's bounds class by class, so a row of theirs in class c
	 * has a key that hashes to c, and the rows of mb equal to it belong
	 * there too, wherever that table sits in the join tree (a row of it
	 * NULL-extended equals nothing).  An outer join above a colocated
	 * group often equates mb with a key other than the anchor's.
	 */
	foreach(lc, ag->rels)
	{
		CjBaseRel  *t = lfirst(lc);

		if (!allow_redistribution || ma <= 0)
			break;
		if (t->move != CJ_MOVE_NONE || t->reference || t->table == NULL ||
			t->space_index < 0)
			continue;
		if (mbmod > 0 && mbmod % ma == 0 &&
			cj_schemes_compatible(t->table, mb->table, &ignored))
		{
			for (p = 0; p < t->table->partnatts; p++)
			{
				if (!cj_keys_equated(root, joinquals, ec_ok, t, mb, p))
					break;
			}
			if (p == t->table->partnatts)
			{
				mb->move_modulus = ma;
				return CJ_MOVE_PARTITIONS;
			}
		}
		if (repartition_rows < 0 &&
			cj_repartition_key(root, t, mb, joinquals, ec_ok,
							   &mb->move_key, &mb->move_hashfn))
		{
			mb->move_modulus = ma;
			repartition_rows = mrel->rows;
		}
	}

	if (forced == CJ_MOVE_BROADCAST)
		return CJ_MOVE_BROADCAST;
	if (allow_broadcast && mrel->rows <= colojoin_broadcast_threshold &&
		(repartition_rows < 0 || mrel->rows * nnodes < repartition_rows))
		return CJ_MOVE_BROADCAST;
	if (repartition_rows >= 0)
		return CJ_MOVE_REPARTITION;

	*reasons = lappend(*reasons,
					   psprintf("table %s cannot be moved to the nodes of %s: %s", mb->alias,
								anchor->alias,
								forced == CJ_MOVE_REPARTITION ?
								"it is not joined on a column it could be repartitioned by" :
								!allow_redistribution && !allow_broadcast ?
								"redistribution and broadcast are disabled" :
								"it is not joined on the partition key and is too large to broadcast"));
	return CJ_MOVE_NONE;
}

char *
cj_move_description(CjBaseRel *mb, CjBaseRel *anchor)
{
	switch (mb->move)
	{
		case CJ_MOVE_PARTITIONS:
			return psprintf("partitions of %s refining those of %s, copied where needed",
							quote_identifier(mb->alias), quote_identifier(anchor->alias));
		case CJ_MOVE_REPARTITION:
			{
				Node	   *key = copyObject((Node *) mb->move_key);

				/* the key as the query names it: Vars of varno 1 for ruleutils */
				ChangeVarNodes(key, mb->rtindex, 1, 0);
				return psprintf("%s repartitioned by hash of %s like %s",
								quote_identifier(mb->alias),
								deparse_expression(key,
												   deparse_context_for(mb->alias, mb->relid),
												   true, false),
								quote_identifier(anchor->alias));
			}
		case CJ_MOVE_BROADCAST:
			if (mb->coord_path != NULL)
				return psprintf("%s computed on the coordinator, broadcast to the nodes of %s",
								quote_identifier(mb->alias), quote_identifier(anchor->alias));
			return psprintf("%s broadcast to the nodes of %s",
							quote_identifier(mb->alias), quote_identifier(anchor->alias));
	}
	return "";
}

/*
 * cj_moved_tables
 *		Every table g moves: its own, and those subqueries of its tree read
 *		(lateral.c), which are not relations of the query.
 */
List *
cj_moved_tables(CjJoinGroup *g)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, g->rels)
		if (((CjBaseRel *) lfirst(lc))->move != CJ_MOVE_NONE)
			result = lappend(result, lfirst(lc));
	return list_concat(result, cj_lateral_moved_tables(g->tree));
}

/*
 * cj_moved_table_rows
 *		The rows (or groups, aggregated before the move) one moved table
 *		sends from its sources, and the width of a row.
 */
double
cj_moved_table_rows(PlannerInfo *root, CjBaseRel *br)
{
	if (br->preagg != NIL)
		return br->preagg_rows;
	if (br->in_subquery)
		return br->subquery_rows;
	if (br->stage != NULL)
		return br->stage_rows;
	return find_base_rel(root, br->rtindex)->rows;
}

static int
moved_table_width(PlannerInfo *root, CjBaseRel *br)
{
	if (br->stage != NULL)
		return br->stage_width;
	return br->in_subquery ? br->subquery_width :
		find_base_rel(root, br->rtindex)->reltarget->width;
}

/*
 * cj_moved_rows
 *		The rows a moved table sends (its groups when it is aggregated
 *		before the move): all of them once when repartitioned,
 *		once per task node when broadcast, and for refining partitions only
 *		those of the classes whose partitions are not already where the
 *		class runs (none at all when placement lines up).
 */
double
cj_moved_rows(PlannerInfo *root, CjJoinGroup *g, CjBaseRel *br)
{
	double		rows = cj_moved_table_rows(root, br);
	ListCell   *lc;

	switch (br->move)
	{
		case CJ_MOVE_REPARTITION:
			return rows;
		case CJ_MOVE_BROADCAST:
			return rows * cj_task_node_count(g);
		case CJ_MOVE_PARTITIONS:
			{
				int			nlive = 0;
				int			nmoved = 0;
				int			k,
							l;

				for (k = 0; k < br->table->nclasses; k++)
					for (l = 0; l < br->table->classes[k].nleaves; l++)
						nlive += br->leaf_live[k][l] ? 1 : 0;
				foreach(lc, g->tasks)
				{
					CjTask	   *task = lfirst(lc);
					List	   *leaves = cj_refining_leaves(g, br, task->cls);

					if (leaves != NIL && !cj_leaves_on_node(leaves, task->serverid))
						nmoved += list_length(leaves);
				}
				return nlive > 0 ? rows * nmoved / nlive : 0;
			}
	}
	return 0;
}

/*
 * What a stage's moved row costs, against a table's: its source computes
 * the rows in one COPY per node, its classes one after the other, and the
 * join the rows move for runs only after every source ended.  Three, when
 * every moved table was analyzed whole: warehouse W09 and W06 then ran as
 * fast or faster joined on the coordinator, or with the other side
 * broadcast, than as the stage their cost preferred.  Since a moved table
 * is analyzed in its join columns only (move_sql.c's analyze_sql), the
 * stage is the faster plan of W09, W24 and W06 (alternated, 3 runs each:
 * 164-180 ms against 240-283, 259-331 against 369-440, 287-330 against
 * 298-361).
 */
#define CJ_STAGE_ROW_COST	1.5

/*
 * cj_pre_aggregation_saving
 *		What g's moves would cost less with its one moved table (or stage)
 *		grouped on its nodes first (pre_aggregate.c), as the aggregation
 *		above the join will offer: when ways of building the join are
 *		compared, the one whose rows shrink so is weighed so.  0 when the
 *		query does not let it.
 */
Cost
cj_pre_aggregation_saving(PlannerInfo *root, CjJoinGroup *g)
{
	ListCell   *lc;

	foreach(lc, cj_moved_tables(g))
	{
		CjBaseRel  *br = lfirst(lc);
		double		grouped = cj_pre_aggregated_rows(root, g, br);
		double		moved = cj_moved_rows(root, g, br);

		if (grouped >= 0 && grouped < moved)
			return (moved - grouped) *
				(3 * cpu_tuple_cost + moved_table_width(root, br) * 0.0002) *
				(br->stage != NULL ? CJ_STAGE_ROW_COST : 1.0);
	}
	return 0;
}

/*
 * cj_moves_cost
 *		What a group's moves add to a path's startup cost: every moved row
 *		crosses the network twice and is written on its destination.  A
 *		broadcast table is also read again by each task (every class joins
 *		all of it), work the nodes share like the rest of the remote join.
 */
Cost
cj_moves_cost(PlannerInfo *root, CjJoinGroup *g)
{
	Cost		cost = 0;
	int			nnodes = cj_task_node_count(g);
	ListCell   *lc;

	foreach(lc, cj_moved_tables(g))
	{
		CjBaseRel  *br = lfirst(lc);
		double		moved = cj_moved_rows(root, g, br);

		cost += 50.0 + moved * (3 * cpu_tuple_cost + moved_table_width(root, br) * 0.0002) *
			(br->stage != NULL ? CJ_STAGE_ROW_COST : 1.0);
		/* and what the stage's own group moves before it */
		if (br->stage != NULL)
			cost += cj_moves_cost(root, br->stage);
		if (br->move == CJ_MOVE_BROADCAST && list_length(g->tasks) > 1)
			cost += find_base_rel(root, br->rtindex)->rows * (list_length(g->tasks) - 1) *
				(cpu_tuple_cost + cpu_operator_cost) / nnodes;

		/*
		 * A subquery's table is read whole by its nodes, which no plan of
		 * theirs counts.
		 */
		if (br->in_subquery)
			cost += br->subquery_tuples * cpu_tuple_cost / nnodes;
		/* grouped there first: each row hashed into its group */
		if (br->in_subquery && br->preagg != NIL)
			cost += br->subquery_rows * cpu_operator_cost *
				(list_length(br->move_attnos) + list_length(br->preagg)) / nnodes;

		/* the coordinator computes its rows before any move starts */
		if (br->coord_path != NULL)
			cost += br->coord_path->total_cost;
	}
	return cost;
}

/*
 * cj_move_columns
 *		Sets the columns the moved rows of br carry: those exprs read.  false,
 *		with the reason, when they read a system column or the whole row,
 *		which a move does not carry.
 */
bool
cj_move_columns(CjBaseRel *br, Node *exprs, List **reasons)
{
	Bitmapset  *attnos = NULL;
	int			a = -1;

	/* coordinator rows carry their relation's whole target, as made */
	if (br->coord_path != NULL)
		return true;
	pull_varattnos(exprs, br->rtindex, &attnos);
	br->move_attnos = NIL;
	while ((a = bms_next_member(attnos, a)) >= 0)
	{
		AttrNumber	attno = a + FirstLowInvalidHeapAttributeNumber;

		if (attno <= 0)
		{
			*reasons = lappend(*reasons,
							   psprintf("the join needs a system column or whole row of %s",
										br->alias));
			return false;
		}
		br->move_attnos = lappend_int(br->move_attnos, attno);
	}
	return true;
}

/*
 * cj_broadcast_allowed
 *		Whether table br (relation rel) may be broadcast unasked: broadcasts
 *		are on, it is at most colojoin.broadcast_threshold rows, and its
 *		conditions have no parameter.
 */
bool
cj_broadcast_allowed(CjBaseRel *br, RelOptInfo *rel, List **reasons)
{
	if (!colojoin_enable_broadcast)
	{
		*reasons = lappend(*reasons, pstrdup("broadcast is disabled"));
		return false;
	}
	if (cj_contains_param((Node *) br->quals))
	{
		*reasons = lappend(*reasons,
						   psprintf("table %s has a condition with a parameter, which a move cannot carry",
									br->alias));
		return false;
	}
	if (rel->rows > colojoin_broadcast_threshold)
	{
		*reasons = lappend(*reasons,
						   psprintf("table %s is too large to broadcast", br->alias));
		return false;
	}
	return true;
}
