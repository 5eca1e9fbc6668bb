/*-------------------------------------------------------------------------
 *
 * colocation.c
 *	  The colocation rules of DESIGN §2 that depend on metadata only: do
 *	  sharded tables partition alike (schemes), which of their partitions
 *	  form one class (bounds), and which nodes hold a class (placement).
 *
 *	  It knows nothing about queries: whether a join equates the partition
 *	  keys, which classes survive pruning and which node a task runs on are
 *	  the planner's business.  Every "no" comes with a sentence a person can
 *	  act on, naming tables, columns and partitions.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/nbtree.h"
#include "catalog/pg_opfamily.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/primnodes.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "metadata/colocation.h"
#include "metadata/node_identity.h"

/* at most this many "partitions overlap" reasons, then a count of the rest */
#define CJ_MAX_OVERLAP_REASONS 8

typedef enum CjBoundRelation
{
	CJ_BOUNDS_DISJOINT,
	CJ_BOUNDS_IDENTICAL,
	CJ_BOUNDS_OVERLAP
} CjBoundRelation;

/*
 * How to compare the bound values of table a with those of table b: one
 * btree comparison function per key column, for (a's type, b's type), so
 * that int4 bounds compare with int8 bounds.
 */
typedef struct CjBoundComparator
{
	bool		valid;			/* every column has a comparison function */
	int			natts;
	FmgrInfo   *cmp;
	Oid		   *collation;
} CjBoundComparator;

/* state of one cj_build_class_space call */
typedef struct CjSpaceBuild
{
	int			ntables;
	CjTable   **tables;
	CjBoundComparator **comparators;	/* [a * ntables + b], built lazily */
	List	   *reasons;
	int			noverlaps;		/* overlap reasons suppressed beyond the cap */
	int			overlap_reasons;
} CjSpaceBuild;


/* ----------------------------------------------------------------
 *		Naming things in reasons
 * ----------------------------------------------------------------
 */

static const char *
table_name(Oid relid)
{
	char	   *name = get_rel_name(relid);

	return name ? quote_identifier(name) : psprintf("relation %u", relid);
}

const char *
cj_strategy_name(char strategy)
{
	switch (strategy)
	{
		case PARTITION_STRATEGY_HASH:
			return "HASH";
		case PARTITION_STRATEGY_LIST:
			return "LIST";
		case PARTITION_STRATEGY_RANGE:
			return "RANGE";
	}
	return "an unknown strategy";
}

static char *
opfamily_name(Oid opfamily)
{
	HeapTuple	tuple;
	char	   *result;

	tuple = SearchSysCache1(OPFAMILYOID, ObjectIdGetDatum(opfamily));
	if (!HeapTupleIsValid(tuple))
		return psprintf("operator family %u", opfamily);
	result = pstrdup(NameStr(((Form_pg_opfamily) GETSTRUCT(tuple))->opfname));
	ReleaseSysCache(tuple);
	return result;
}

/* "orders.o_orderkey", or "orders.(k % 1000)" for an expression key */
static char *
key_column_name(CjTable *t, int col)
{
	return psprintf("%s.%s", table_name(t->relid), cj_key_text(t, col, NULL));
}

/* "orders_p1 (FOR VALUES FROM (1) TO (10))" */
static char *
partition_label(CjTable *t, int cls)
{
	return psprintf("%s (%s)", table_name(t->classes[cls].partrelid),
					cj_class_bound_text(t, cls));
}

/* append reason unless an equal sentence is already there */
static List *
add_reason(List *reasons, char *reason)
{
	ListCell   *lc;

	foreach(lc, reasons)
	{
		if (strcmp((char *) lfirst(lc), reason) == 0)
			return reasons;
	}
	return lappend(reasons, reason);
}


/* ----------------------------------------------------------------
 *		Schemes
 * ----------------------------------------------------------------
 */

/*
 * cj_schemes_compatible
 *		Whether a and b partition alike, so that equal keys land in
 *		partitions with comparable bounds.
 *
 * The test is the operator family, not the type: an operator family
 * promises that its types hash and order equal values alike (integer_ops
 * holds int2, int4 and int8), which is exactly what partition routing
 * relies on.  Collations must match for collatable keys, since they decide
 * equality and order.  Expression keys match when they are the same
 * expression up to the columns they read (cj_key_exprs_alike); whether a
 * join equates those columns is the planner's question.  A strategy mismatch is reported
 * first, alone with a key count mismatch, since comparing a hash family
 * with a btree one would say nothing useful.
 */
bool
cj_schemes_compatible(CjTable *a, CjTable *b, List **reasons)
{
	bool		ok = true;
	int			i;

	if (a->strategy != b->strategy)
	{
		*reasons = lappend(*reasons,
						   psprintf("%s is partitioned by %s, %s by %s",
									table_name(a->relid), cj_strategy_name(a->strategy),
									table_name(b->relid), cj_strategy_name(b->strategy)));
		ok = false;
	}
	if (a->partnatts != b->partnatts)
	{
		*reasons = lappend(*reasons,
						   psprintf("%s has %d partition key column%s, %s has %d",
									table_name(a->relid), a->partnatts,
									a->partnatts == 1 ? "" : "s",
									table_name(b->relid), b->partnatts));
		ok = false;
	}
	if (!ok)
		return false;

	for (i = 0; i < a->partnatts; i++)
	{
		if (!cj_key_exprs_alike(a, b, i))
		{
			*reasons = lappend(*reasons,
							   (a->partattrs[i] == 0) == (b->partattrs[i] == 0) ?
							   psprintf("key column %d: %s and %s are different expressions",
										i + 1, key_column_name(a, i), key_column_name(b, i)) :
							   psprintf("key column %d: %s is %s but %s is %s",
										i + 1, key_column_name(a, i),
										a->partattrs[i] == 0 ? "an expression" : "a column",
										key_column_name(b, i),
										b->partattrs[i] == 0 ? "an expression" : "a column"));
			ok = false;
			continue;
		}
		if (a->partopfamily[i] != b->partopfamily[i])
		{
			*reasons = lappend(*reasons,
							   psprintf("key column %d: %s is %s (%s) but %s is %s (%s)",
										i + 1,
										key_column_name(a, i), format_type_be(a->parttypid[i]),
										opfamily_name(a->partopfamily[i]),
										key_column_name(b, i), format_type_be(b->parttypid[i]),
										opfamily_name(b->partopfamily[i])));
			ok = false;
			continue;
		}
		if (a->partcollation[i] != b->partcollation[i])
		{
			*reasons = lappend(*reasons,
							   psprintf("key column %d: %s uses collation %s but %s uses collation %s",
										i + 1,
										key_column_name(a, i),
										OidIsValid(a->partcollation[i]) ?
										quote_identifier(get_collation_name(a->partcollation[i])) : "none",
										key_column_name(b, i),
										OidIsValid(b->partcollation[i]) ?
										quote_identifier(get_collation_name(b->partcollation[i])) : "none"));
			ok = false;
		}
	}
	return ok;
}

/* Vars replaced by their position of appearance: see cj_key_exprs_alike */
static Node *
number_vars_mutator(Node *node, int *count)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) copyObject(node);

		v->varno = 1;
		v->varattno = ++(*count);
		v->varnosyn = 0;
		v->varattnosyn = 0;
		v->location = -1;
		return (Node *) v;
	}
	return expression_tree_mutator(node, number_vars_mutator, (void *) count);
}

/*
 * cj_key_vars
 *		See colocation.h.  The order is the expression walker's, the same
 *		that number_vars_mutator numbers by, so the n-th Var of two alike
 *		keys stands at the same place in both.
 */
List *
cj_key_vars(CjTable *t, int col, Index varno)
{
	List	   *vars;
	ListCell   *lc;

	if (t->partattrs[col] != 0)
	{
		Oid			typid;
		int32		typmod;
		Oid			collid;

		/* the column's own type and collation, as the planner's Vars have */
		get_atttypetypmodcoll(t->relid, t->partattrs[col], &typid, &typmod, &collid);
		return list_make1(makeVar(varno, t->partattrs[col], typid, typmod, collid, 0));
	}
	vars = pull_var_clause(t->partexprs[col], 0);
	foreach(lc, vars)
	{
		Var		   *v = copyObject(lfirst(lc));

		/* as makeVar makes them, so that equal() finds the planner's own */
		v->varno = varno;
		v->varnosyn = varno;
		v->varattnosyn = v->varattno;
		v->location = -1;
		lfirst(lc) = v;
	}
	return vars;
}

/*
 * cj_key_exprs_alike
 *		See colocation.h.  Two expressions are alike when they are equal once
 *		each Var is replaced by its position: the same functions and
 *		constants, applied to columns of the same types in the same places,
 *		whatever their names or attribute numbers in either table.
 */
bool
cj_key_exprs_alike(CjTable *a, CjTable *b, int col)
{
	int			na = 0;
	int			nb = 0;
	Node	   *ea;
	Node	   *eb;

	if ((a->partattrs[col] == 0) != (b->partattrs[col] == 0))
		return false;
	if (a->partattrs[col] != 0)
		return true;
	ea = number_vars_mutator(a->partexprs[col], &na);
	eb = number_vars_mutator(b->partexprs[col], &nb);
	return na == nb && equal(ea, eb);
}

/* ----------------------------------------------------------------
 *		Bounds
 * ----------------------------------------------------------------
 */

static int
gcd(int a, int b)
{
	while (b != 0)
	{
		int			r = a % b;

		a = b;
		b = r;
	}
	return a;
}

/*
 * The comparator for bound values of tables[a] (left) against tables[b]
 * (right), looked up once per pair.  Invalid when the operator family has
 * no comparison function for the two types, which the scheme check makes
 * unlikely but a hand-made operator family could allow.
 */
static CjBoundComparator *
get_comparator(CjSpaceBuild *sb, int a, int b)
{
	CjBoundComparator **slot = &sb->comparators[a * sb->ntables + b];
	CjTable    *ta = sb->tables[a];
	CjTable    *tb = sb->tables[b];
	CjBoundComparator *bc;
	int			i;

	if (*slot != NULL)
		return *slot;

	bc = palloc0(sizeof(CjBoundComparator));
	bc->valid = true;
	bc->natts = ta->partnatts;
	bc->cmp = palloc0(sizeof(FmgrInfo) * Max(ta->partnatts, 1));
	bc->collation = palloc0(sizeof(Oid) * Max(ta->partnatts, 1));
	for (i = 0; i < ta->partnatts; i++)
	{
		Oid			proc = InvalidOid;

		if (ta->strategy != PARTITION_STRATEGY_HASH)
			proc = get_opfamily_proc(ta->partopfamily[i], ta->partopcintype[i],
									 tb->partopcintype[i], BTORDER_PROC);
		if (!OidIsValid(proc))
		{
			bc->valid = false;
			break;
		}
		fmgr_info(proc, &bc->cmp[i]);
		bc->collation[i] = ta->partcollation[i];
	}
	*slot = bc;
	return bc;
}

/* compare two non-null bound values of key column col */
static int
compare_values(CjBoundComparator *bc, int col, Const *x, Const *y)
{
	return DatumGetInt32(FunctionCall2Coll(&bc->cmp[col], bc->collation[col],
										   x->constvalue, y->constvalue));
}

/*
 * Compare two range bounds (lists of PartitionRangeDatum), a lower or an
 * upper one each, as PostgreSQL orders them: MINVALUE below every value,
 * MAXVALUE above, and nothing after an infinite column matters.
 */
static int
compare_range_bounds(CjBoundComparator *bc, List *x, List *y)
{
	int			col = 0;
	ListCell   *lx,
			   *ly;

	forboth(lx, x, ly, y)
	{
		PartitionRangeDatum *dx = lfirst_node(PartitionRangeDatum, lx);
		PartitionRangeDatum *dy = lfirst_node(PartitionRangeDatum, ly);
		int			cmp;

		if (dx->kind != dy->kind)
			return (dx->kind < dy->kind) ? -1 : 1;
		if (dx->kind != PARTITION_RANGE_DATUM_VALUE)
			return 0;
		cmp = compare_values(bc, col, castNode(Const, dx->value),
							 castNode(Const, dy->value));
		if (cmp != 0)
			return cmp;
		col++;
	}
	return 0;
}

static bool
list_values_equal(CjBoundComparator *bc, Const *x, Const *y)
{
	if (x->constisnull || y->constisnull)
		return x->constisnull && y->constisnull;
	return compare_values(bc, 0, x, y) == 0;
}

/*
 * Compare the value sets of two list partitions: is every value of x in y,
 * every value of y in x, and do they share one?  Values of x are always
 * the left argument of the comparator, as it expects.
 */
static void
compare_value_lists(CjBoundComparator *bc, List *x, List *y,
					bool *x_in_y, bool *y_in_x, bool *intersect)
{
	ListCell   *lx,
			   *ly;

	*x_in_y = true;
	*intersect = false;
	foreach(lx, x)
	{
		bool		found = false;

		foreach(ly, y)
		{
			if (list_values_equal(bc, lfirst_node(Const, lx), lfirst_node(Const, ly)))
			{
				found = true;
				break;
			}
		}
		*intersect |= found;
		*x_in_y &= found;
	}

	*y_in_x = true;
	foreach(ly, y)
	{
		bool		found = false;

		foreach(lx, x)
		{
			if (list_values_equal(bc, lfirst_node(Const, lx), lfirst_node(Const, ly)))
			{
				found = true;
				break;
			}
		}
		*y_in_x &= found;
	}
}

/*
 * How partition ka of tables[a] relates to partition kb of tables[b]:
 * identical bounds, overlapping without being identical, or disjoint.
 * Neither may be a default partition.  When overlapping, adds the reason.
 */
static CjBoundRelation
compare_partitions(CjSpaceBuild *sb, int a, int ka, int b, int kb)
{
	CjTable    *ta = sb->tables[a];
	CjTable    *tb = sb->tables[b];
	PartitionBoundSpec *x = ta->classes[ka].bound;
	PartitionBoundSpec *y = tb->classes[kb].bound;
	CjBoundComparator *bc;
	CjBoundRelation rel = CJ_BOUNDS_DISJOINT;

	if (ta->strategy == PARTITION_STRATEGY_HASH)
	{
		if (x->modulus == y->modulus)
			return (x->remainder == y->remainder) ? CJ_BOUNDS_IDENTICAL : CJ_BOUNDS_DISJOINT;
		if ((x->remainder - y->remainder) % gcd(x->modulus, y->modulus) != 0)
			return CJ_BOUNDS_DISJOINT;
		sb->reasons = add_reason(sb->reasons,
								 psprintf("hash moduli differ: %s has modulus %d, %s has modulus %d",
										  table_name(ta->relid), x->modulus,
										  table_name(tb->relid), y->modulus));
		return CJ_BOUNDS_OVERLAP;
	}

	bc = get_comparator(sb, a, b);
	if (!bc->valid)
	{
		sb->reasons = add_reason(sb->reasons,
								 psprintf("the partition bounds of %s and %s cannot be compared: their key types have no common comparison function",
										  table_name(ta->relid), table_name(tb->relid)));
		return CJ_BOUNDS_OVERLAP;
	}

	if (ta->strategy == PARTITION_STRATEGY_RANGE)
	{
		/*
		 * Identical when both ends are equal; [lx, ux) and [ly, uy) overlap
		 * when lx < uy and ly < ux.  The comparator takes x's value first.
		 */
		if (compare_range_bounds(bc, x->lowerdatums, y->lowerdatums) == 0 &&
			compare_range_bounds(bc, x->upperdatums, y->upperdatums) == 0)
			return CJ_BOUNDS_IDENTICAL;
		if (compare_range_bounds(bc, x->lowerdatums, y->upperdatums) < 0 &&
			compare_range_bounds(bc, x->upperdatums, y->lowerdatums) > 0)
			rel = CJ_BOUNDS_OVERLAP;
	}
	else
	{
		bool		x_in_y,
					y_in_x,
					intersect;

		compare_value_lists(bc, x->listdatums, y->listdatums,
							&x_in_y, &y_in_x, &intersect);
		if (x_in_y && y_in_x)
			return CJ_BOUNDS_IDENTICAL;
		if (intersect)
			rel = CJ_BOUNDS_OVERLAP;
	}

	if (rel == CJ_BOUNDS_OVERLAP)
	{
		if (sb->overlap_reasons < CJ_MAX_OVERLAP_REASONS)
		{
			sb->reasons = lappend(sb->reasons,
								  psprintf("partitions overlap without being equal: %s of %s and %s of %s",
										   partition_label(ta, ka), table_name(ta->relid),
										   partition_label(tb, kb), table_name(tb->relid)));
			sb->overlap_reasons++;
		}
		else
			sb->noverlaps++;
	}
	return rel;
}

/* index of the default partition of t, or -1 */
static int
default_class(CjTable *t)
{
	int			k;

	if (!t->has_default)
		return -1;
	for (k = 0; k < t->nclasses; k++)
		if (t->classes[k].bound->is_default)
			return k;
	return -1;
}

/*
 * A table's default partition holds every value that none of its other
 * partitions accepts.  It can only be paired safely when every non-default
 * partition of every other table has an equal partner in this table: then
 * no value another table keeps in an ordinary partition can sit in this
 * default.  Defaults of several tables then form one class, and a table
 * without a default simply has no member there.  Returns false and adds
 * reasons otherwise.
 */
static bool
check_defaults(CjSpaceBuild *sb, int *members, int nclasses)
{
	int			ntables = sb->ntables;
	bool		ok = true;
	int			t,
				u,
				c;

	for (t = 0; t < ntables; t++)
	{
		CjTable    *tt = sb->tables[t];
		int			d = default_class(tt);

		if (d < 0)
			continue;
		for (u = 0; u < ntables; u++)
		{
			int			missing = 0;
			char	   *first = NULL;

			if (u == t)
				continue;
			for (c = 0; c < nclasses; c++)
			{
				int			ku = members[c * ntables + u];

				if (ku < 0 || members[c * ntables + t] >= 0)
					continue;
				if (missing++ == 0)
					first = partition_label(sb->tables[u], ku);
			}
			if (missing == 0)
				continue;
			ok = false;
			sb->reasons = lappend(sb->reasons,
								  psprintf("%s has a default partition (%s) but no partition equal to %s of %s%s, so rows that join could sit in different partitions",
										   table_name(tt->relid),
										   table_name(tt->classes[d].partrelid),
										   first, table_name(sb->tables[u]->relid),
										   missing > 1 ?
										   psprintf(" (nor to %d other partitions of it)", missing - 1) : ""));
		}
	}
	return ok;
}

/*
 * cj_build_class_space
 *		The common class space of tables (see colocation.h), or NULL with
 *		reasons when their bounds disagree.
 *
 * Classes appear in order of first appearance: tables[0]'s partitions in
 * bound order, then partitions of later tables that no earlier table has.
 * Each partition is first compared with the class after the previous match,
 * so tables with equal bounds pair up in linear time; other partitions are
 * compared with every class, since one overlap anywhere is enough to make
 * the group non-colocatable.  Reasons for every disagreement are gathered
 * (overlaps up to a cap), not only the first one.
 */
CjClassSpace *
cj_build_class_space(List *tables, List **reasons)
{
	CjSpaceBuild sb;
	CjClassSpace *space;
	int			ntables = list_length(tables);
	int			maxclasses = 1;
	int		   *members;
	int		   *rep_table;
	int		   *rep_class;
	int			nclasses = 0;
	bool		ok = true;
	bool		any_default = false;
	int			t,
				i;
	ListCell   *lc;

	memset(&sb, 0, sizeof(sb));
	sb.ntables = ntables;
	sb.tables = palloc(sizeof(CjTable *) * Max(ntables, 1));
	t = 0;
	foreach(lc, tables)
	{
		sb.tables[t] = (CjTable *) lfirst(lc);
		maxclasses += sb.tables[t]->nclasses;
		any_default |= sb.tables[t]->has_default;
		t++;
	}
	sb.comparators = palloc0(sizeof(CjBoundComparator *) * Max(ntables * ntables, 1));

	members = palloc(sizeof(int) * maxclasses * Max(ntables, 1));
	for (i = 0; i < maxclasses * ntables; i++)
		members[i] = -1;
	rep_table = palloc(sizeof(int) * maxclasses);
	rep_class = palloc(sizeof(int) * maxclasses);

	for (t = 0; t < ntables; t++)
	{
		CjTable    *tt = sb.tables[t];
		int			guess = 0;
		int			k;

		for (k = 0; k < tt->nclasses; k++)
		{
			int			match = -1;
			bool		overlapped = false;
			int			c;
			int			saved = list_length(sb.reasons);
			int			saved_overlaps = sb.overlap_reasons;
			int			saved_more = sb.noverlaps;

			if (tt->classes[k].bound->is_default)
				continue;

			if (guess < nclasses && members[guess * ntables + t] < 0)
			{
				CjBoundRelation rel;

				rel = compare_partitions(&sb, rep_table[guess], rep_class[guess], t, k);
				if (rel == CJ_BOUNDS_IDENTICAL)
					match = guess;
				else if (rel == CJ_BOUNDS_OVERLAP)
					overlapped = true;
			}
			else
				guess = -1;		/* nothing tried */

			/*
			 * Range and list partitions that only overlap: k may join the one
			 * class whose partitions it overlaps, as PostgreSQL's own
			 * partitionwise join pairs them.
			 */
			if (match < 0 && tt->strategy != PARTITION_STRATEGY_HASH && !any_default)
			{
				int			touched = 0;

				for (c = 0; c < nclasses; c++)
				{
					int			u;

					for (u = 0; u < ntables; u++)
					{
						int			ku = members[c * ntables + u];

						if (u == t || ku < 0)
							continue;
						if (compare_partitions(&sb, u, ku, t, k) != CJ_BOUNDS_DISJOINT)
						{
							if (touched++ == 0)
								match = c;
							break;
						}
					}
				}
				/* overlaps are no reason here: only a second one is */
				sb.reasons = list_truncate(sb.reasons, saved);
				sb.overlap_reasons = saved_overlaps;
				sb.noverlaps = saved_more;
				if (touched > 1 || (match >= 0 && members[match * ntables + t] >= 0))
				{
					sb.reasons = add_reason(sb.reasons,
											psprintf("%s of %s overlaps partitions that do not pair one to one",
													 partition_label(tt, k), table_name(tt->relid)));
					ok = false;
					match = -1;
					continue;
				}
				if (match < 0)
				{
					match = nclasses++;
					rep_table[match] = t;
					rep_class[match] = k;
				}
				members[match * ntables + t] = k;
				guess = match + 1;
				continue;
			}

			/*
			 * A class this table already has a member in is disjoint from k:
			 * partitions of one table never overlap.
			 */
			for (c = 0; match < 0 && c < nclasses; c++)
			{
				CjBoundRelation rel;

				if (c == guess || members[c * ntables + t] >= 0)
					continue;
				rel = compare_partitions(&sb, rep_table[c], rep_class[c], t, k);
				if (rel == CJ_BOUNDS_IDENTICAL)
					match = c;
				else if (rel == CJ_BOUNDS_OVERLAP)
					overlapped = true;
			}

			if (match >= 0)
				members[match * ntables + t] = k;
			else if (overlapped)
				ok = false;
			else
			{
				match = nclasses++;
				rep_table[match] = t;
				rep_class[match] = k;
				members[match * ntables + t] = k;
			}
			guess = match + 1;
		}
	}

	if (sb.noverlaps > 0)
		sb.reasons = lappend(sb.reasons,
							 psprintf("%d more pairs of partitions overlap without being equal",
									  sb.noverlaps));

	if (ok && any_default)
	{
		if (check_defaults(&sb, members, nclasses))
		{
			int			c = nclasses++;

			for (t = 0; t < ntables; t++)
				members[c * ntables + t] = default_class(sb.tables[t]);
		}
		else
			ok = false;
	}

	if (!ok)
	{
		*reasons = list_concat(*reasons, sb.reasons);
		return NULL;
	}

	space = palloc(sizeof(CjClassSpace));
	space->ntables = ntables;
	space->tables = sb.tables;
	space->nclasses = nclasses;
	space->members = members;
	return space;
}


/* ----------------------------------------------------------------
 *		Placement
 * ----------------------------------------------------------------
 */

static bool
leaf_has_node(CjLeaf *leaf, Oid serverid)
{
	int			i;

	for (i = 0; i < leaf->nplacements; i++)
		if (cj_node_same(leaf->placements[i].serverid, serverid))
			return true;
	return false;
}

/*
 * cj_common_nodes
 *		The nodes that hold every live leaf of cls, in the order of the first
 *		live leaf's placements (its primary first).  NIL when no node holds
 *		them all, and also when no leaf is live: an empty class needs no
 *		node.  The pseudo-node "local" (CJ_LOCAL_NODE) counts as a node.
 */
List *
cj_common_nodes(CjClass *cls, const bool *leaf_live)
{
	List	   *result = NIL;
	CjLeaf	   *first = NULL;
	int			l,
				p;

	for (l = 0; l < cls->nleaves; l++)
	{
		if (leaf_live == NULL || leaf_live[l])
		{
			first = &cls->leaves[l];
			break;
		}
	}
	if (first == NULL)
		return NIL;

	for (p = 0; p < first->nplacements; p++)
	{
		Oid			node = first->placements[p].serverid;
		bool		everywhere = true;

		if (list_member_oid(result, node))
			continue;
		for (l = 0; l < cls->nleaves && everywhere; l++)
		{
			if (leaf_live != NULL && !leaf_live[l])
				continue;
			everywhere = leaf_has_node(&cls->leaves[l], node);
		}
		if (everywhere)
			result = lappend_oid(result, node);
	}
	return result;
}

/* the members of a that are also in b (or the same node), in a's order */
List *
cj_intersect_nodes(List *a, List *b)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, a)
	{
		ListCell   *lb;

		/* servers known to reach one database are one node */
		foreach(lb, b)
		{
			if (cj_node_same(lfirst_oid(lc), lfirst_oid(lb)))
			{
				result = lappend_oid(result, lfirst_oid(lc));
				break;
			}
		}
	}
	return result;
}

/*
 * cj_class_label
 *		A class of a class space described by its bound, as written by the
 *		first table that has it.
 */
char *
cj_class_label(CjClassSpace *space, int cls)
{
	int			t;

	for (t = 0; t < space->ntables; t++)
	{
		int			k = CJ_MEMBER(space, cls, t);

		if (k >= 0)
			return pstrdup(cj_class_bound_text(space->tables[t], k));
	}
	return psprintf("class %d", cls);
}

/*
 * cj_is_reference_table
 *		See colocation.h.
 */
bool
cj_is_reference_table(CjTable *t)
{
	PartitionBoundSpec *b;

	if (t == NULL || t->nclasses != 1 || t->classes[0].nleaves != 1 ||
		t->classes[0].leaves[0].nplacements == 0)
		return false;
	b = t->classes[0].bound;
	return b->is_default ||
		(b->strategy == PARTITION_STRATEGY_HASH && b->modulus == 1);
}

/*
 * cj_space_add_references
 *		See colocation.h.
 */
CjClassSpace *
cj_space_add_references(CjClassSpace *space, int nrefs, CjTable **refs)
{
	CjClassSpace *s = palloc0(sizeof(CjClassSpace));
	int			c,
				t;

	s->ntables = space->ntables + nrefs;
	s->nclasses = space->nclasses;
	s->tables = palloc(sizeof(CjTable *) * Max(s->ntables, 1));
	for (t = 0; t < space->ntables; t++)
		s->tables[t] = space->tables[t];
	for (t = 0; t < nrefs; t++)
		s->tables[space->ntables + t] = refs[t];
	s->members = palloc(sizeof(int) * Max(s->nclasses * s->ntables, 1));
	for (c = 0; c < s->nclasses; c++)
	{
		for (t = 0; t < space->ntables; t++)
			CJ_MEMBER(s, c, t) = CJ_MEMBER(space, c, t);
		for (t = 0; t < nrefs; t++)
			CJ_MEMBER(s, c, space->ntables + t) = 0;
	}
	return s;
}
