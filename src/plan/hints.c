/*-------------------------------------------------------------------------
 *
 * hints.c
 *	  Reads colojoin's hints out of hint comments (comments opening with "/" "*" "+") of a statement.
 *
 *	  Every hint comment of the statement counts (outside string literals
 *	  and quoted identifiers): the leading one in pg_hint_plan's place, one
 *	  after WITH or EXPLAIN, or one right after SELECT as Apache Pinot users
 *	  write it.  A comment may mix colojoin's hints with pg_hint_plan's,
 *	  whose names are skipped silently.  What a hint means for a plan is the
 *	  planner's business; this file only reads, validates and reports.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "nodes/nodeFuncs.h"
#include "parser/scansup.h"
#include "utils/lsyscache.h"

#include "plan/hints.h"

typedef struct CjHintName
{
	const char *name;
	CjHintKind	kind;
	int			min_names;
	int			max_names;		/* -1: no limit */
} CjHintName;

static const CjHintName hint_names[] = {
	{"colocatedjoin", CJ_HINT_COLOCATED_JOIN, 2, -1},
	{"nocolocatedjoin", CJ_HINT_NO_COLOCATED_JOIN, 2, -1},
	{"redistributejoin", CJ_HINT_REDISTRIBUTE_JOIN, 2, 2},
	{"redistribute", CJ_HINT_REDISTRIBUTE, 1, 2},
	{"broadcastjoin", CJ_HINT_BROADCAST_JOIN, 1, 1},
	{"localjoin", CJ_HINT_LOCAL_JOIN, 2, -1},
	{"preaggregate", CJ_HINT_PRE_AGGREGATE, 1, 1},
	{"joinoptions", CJ_HINT_JOIN_OPTIONS, 0, 0},
};

/* pg_hint_plan's hints: a comment may hold them; they are not ours */
static const char *const foreign_hint_names[] = {
	"seqscan", "indexscan", "indexonlyscan", "bitmapscan", "tidscan",
	"noseqscan", "noindexscan", "noindexonlyscan", "nobitmapscan",
	"notidscan", "indexscanregexp", "indexonlyscanregexp",
	"bitmapscanregexp", "nestloop", "hashjoin", "mergejoin", "nonestloop",
	"nohashjoin", "nomergejoin", "leading", "set", "rows", "parallel",
	"memoize", "nomemoize",
};

/* reading state over one comment's body */
typedef struct HintReader
{
	const char *stmt;			/* the whole statement, for positions */
	const char *p;				/* next character */
	const char *end;			/* end of the comment body */
} HintReader;

static int
reader_position(HintReader *r, const char *at)
{
	return (int) (at - r->stmt) + 1;
}

static void
skip_space(HintReader *r)
{
	while (r->p < r->end && scanner_isspace(*r->p))
		r->p++;
}

/*
 * read_word
 *		An identifier: a double-quoted one keeps its case (with "" as a
 *		quote), a plain one is folded to lower case like SQL does.
 *		Returns NULL when there is none at this point.
 */
static char *
read_word(HintReader *r)
{
	StringInfoData buf;

	skip_space(r);
	if (r->p >= r->end)
		return NULL;
	initStringInfo(&buf);
	if (*r->p == '"')
	{
		r->p++;
		while (r->p < r->end)
		{
			if (*r->p == '"')
			{
				if (r->p + 1 < r->end && r->p[1] == '"')
				{
					appendStringInfoChar(&buf, '"');
					r->p += 2;
					continue;
				}
				r->p++;
				return buf.data;
			}
			appendStringInfoChar(&buf, *r->p++);
		}
		return NULL;			/* unterminated */
	}
	while (r->p < r->end &&
		   (isalnum((unsigned char) *r->p) || *r->p == '_' || *r->p == '$' ||
			IS_HIGHBIT_SET(*r->p)))
		appendStringInfoChar(&buf, *r->p++);
	if (buf.len == 0)
		return NULL;
	return downcase_identifier(buf.data, buf.len, false, false);
}

/* a 'quoted value' with '' as a quote, or NULL */
static char *
read_quoted_value(HintReader *r)
{
	StringInfoData buf;

	skip_space(r);
	if (r->p >= r->end || *r->p != '\'')
		return NULL;
	r->p++;
	initStringInfo(&buf);
	while (r->p < r->end)
	{
		if (*r->p == '\'')
		{
			if (r->p + 1 < r->end && r->p[1] == '\'')
			{
				appendStringInfoChar(&buf, '\'');
				r->p += 2;
				continue;
			}
			r->p++;
			return buf.data;
		}
		appendStringInfoChar(&buf, *r->p++);
	}
	return NULL;
}

static void
warn_hint(HintReader *r, const char *from, const char *what)
{
	const char *to = from;
	int			len;

	/* quote up to the end of the offending hint (or 40 characters) */
	while (to < r->end && *to != ')' && to - from < 40)
		to++;
	if (to < r->end && *to == ')')
		to++;
	len = (int) (to - from);
	ereport(WARNING,
			(errcode(ERRCODE_SYNTAX_ERROR),
			 errmsg("colojoin hint ignored: %s at position %d: \"%.*s\"",
					what, reader_position(r, from), len, from),
			 errhint("Hints are written as Name(alias alias ...), for example /*+ ColocatedJoin(o l) */.")));
}

/* skip a balanced (...) group of a hint that is not ours */
static bool
skip_group(HintReader *r)
{
	int			depth = 0;

	skip_space(r);
	if (r->p >= r->end || *r->p != '(')
		return false;
	while (r->p < r->end)
	{
		if (*r->p == '(')
			depth++;
		else if (*r->p == ')')
		{
			depth--;
			if (depth == 0)
			{
				r->p++;
				return true;
			}
		}
		else if (*r->p == '\'' || *r->p == '"')
		{
			char		q = *r->p++;

			while (r->p < r->end && *r->p != q)
				r->p++;
		}
		r->p++;
	}
	return false;
}

/*
 * read_join_options
 *		joinOptions(key='value', ...): only is_colocated_by_join_keys is
 *		known; others are a warning each.
 */
static bool
read_join_options(HintReader *r, CjHint *hint)
{
	for (;;)
	{
		const char *at;
		char	   *key;
		char	   *value;

		skip_space(r);
		if (r->p < r->end && *r->p == ')')
		{
			r->p++;
			return true;
		}
		at = r->p;
		key = read_word(r);
		skip_space(r);
		if (key == NULL || r->p >= r->end || *r->p != '=')
			return false;
		r->p++;
		value = read_quoted_value(r);
		if (value == NULL)
			return false;
		if (strcmp(key, "is_colocated_by_join_keys") == 0)
		{
			if (pg_strcasecmp(value, "true") == 0)
				hint->trust_colocation = true;
			else if (pg_strcasecmp(value, "false") == 0)
				hint->trust_colocation = false;
			else
				warn_hint(r, at, "is_colocated_by_join_keys takes 'true' or 'false'");
		}
		else
			warn_hint(r, at, "unknown join option");
		skip_space(r);
		if (r->p < r->end && *r->p == ',')
			r->p++;
	}
}

static bool
names_equal(List *a, List *b)
{
	ListCell   *lc;

	if (list_length(a) != list_length(b))
		return false;
	foreach(lc, a)
	{
		ListCell   *lc2;
		bool		found = false;

		foreach(lc2, b)
			if (strcmp(lfirst(lc), lfirst(lc2)) == 0)
				found = true;
		if (!found)
			return false;
	}
	return true;
}

/* the kinds of hint that say opposite things about the same join */
static bool
hints_conflict(CjHint *a, CjHint *b)
{
	bool		a_forces = (a->kind == CJ_HINT_COLOCATED_JOIN);
	bool		b_forces = (b->kind == CJ_HINT_COLOCATED_JOIN);
	bool		a_forbids = (a->kind == CJ_HINT_NO_COLOCATED_JOIN ||
							 a->kind == CJ_HINT_LOCAL_JOIN);
	bool		b_forbids = (b->kind == CJ_HINT_NO_COLOCATED_JOIN ||
							 b->kind == CJ_HINT_LOCAL_JOIN);

	if (a->kind == CJ_HINT_JOIN_OPTIONS || b->kind == CJ_HINT_JOIN_OPTIONS)
		return false;
	if ((a_forces && b_forbids) || (a_forbids && b_forces))
		return names_equal(a->names, b->names);
	if (a->kind == b->kind && names_equal(a->names, b->names))
		return true;
	if ((a->kind == CJ_HINT_BROADCAST_JOIN && b->kind == CJ_HINT_REDISTRIBUTE) ||
		(a->kind == CJ_HINT_REDISTRIBUTE && b->kind == CJ_HINT_BROADCAST_JOIN))
		return names_equal(a->names, b->names);
	return false;
}

typedef struct NameCollector
{
	List	   *names;
} NameCollector;

static bool
collect_names_walker(Node *node, NameCollector *nc)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->eref && rte->eref->aliasname)
			nc->names = lappend(nc->names, rte->eref->aliasname);
		if (rte->rtekind == RTE_RELATION)
		{
			char	   *relname = get_rel_name(rte->relid);

			if (relname)
				nc->names = lappend(nc->names, relname);
		}
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, collect_names_walker, nc,
								 QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, collect_names_walker, nc);
}

static bool
name_known(List *known, const char *name)
{
	ListCell   *lc;

	foreach(lc, known)
		if (strcmp(lfirst(lc), name) == 0)
			return true;
	return false;
}

/*
 * read_comment
 *		Parse one hint comment body into set; returns at the first syntax
 *		error (after a WARNING), keeping what came before.
 */
static void
read_comment(HintReader *r, CjHintSet *set, List *known)
{
	for (;;)
	{
		const char *start;
		char	   *word;
		const CjHintName *hn = NULL;
		CjHint	   *hint;
		int			i;
		bool		bad_name = false;

		skip_space(r);
		if (r->p >= r->end)
			return;
		start = r->p;
		word = read_word(r);
		if (word == NULL)
		{
			warn_hint(r, start, "syntax error");
			return;
		}
		for (i = 0; i < lengthof(hint_names); i++)
			if (strcmp(word, hint_names[i].name) == 0)
				hn = &hint_names[i];
		if (hn == NULL)
		{
			bool		theirs = false;

			for (i = 0; i < lengthof(foreign_hint_names); i++)
				if (strcmp(word, foreign_hint_names[i]) == 0)
					theirs = true;
			if (!theirs)
				warn_hint(r, start, "unknown hint");
			if (!skip_group(r))
			{
				if (theirs)
					warn_hint(r, start, "syntax error");
				return;
			}
			continue;
		}

		hint = palloc0(sizeof(CjHint));
		hint->kind = hn->kind;
		hint->position = reader_position(r, start);
		hint->valid = true;
		skip_space(r);
		if (r->p >= r->end || *r->p != '(')
		{
			warn_hint(r, start, "syntax error: \"(\" expected");
			return;
		}
		r->p++;
		if (hn->kind == CJ_HINT_JOIN_OPTIONS)
		{
			if (!read_join_options(r, hint))
			{
				warn_hint(r, start, "syntax error in joinOptions");
				return;
			}
		}
		else
		{
			for (;;)
			{
				char	   *name;

				skip_space(r);
				if (r->p < r->end && *r->p == ')')
				{
					r->p++;
					break;
				}
				name = read_word(r);
				if (name == NULL)
				{
					warn_hint(r, start, "syntax error: relation name or \")\" expected");
					return;
				}
				if (!name_known(known, name))
				{
					ereport(WARNING,
							(errcode(ERRCODE_UNDEFINED_TABLE),
							 errmsg("colojoin hint ignored: relation \"%s\" of hint at position %d does not appear in the query",
									name, hint->position),
							 errhint("Name relations by their alias, or by table name when they have none.")));
					bad_name = true;
				}
				hint->names = lappend(hint->names, name);
			}
			if (list_length(hint->names) < hn->min_names ||
				(hn->max_names >= 0 && list_length(hint->names) > hn->max_names))
			{
				warn_hint(r, start, psprintf("wrong number of relations (%s takes %d%s)",
											 hn->name, hn->min_names,
											 hn->max_names < 0 ? " or more" :
											 hn->max_names == hn->min_names ? "" : " or 2"));
				continue;
			}
		}
		hint->text = pnstrdup(start, r->p - start);
		if (bad_name)
			continue;

		/* a later hint about the same join wins; say so */
		{
			ListCell   *lc;

			foreach(lc, set->hints)
			{
				CjHint	   *other = lfirst(lc);

				if (other->valid && hints_conflict(other, hint))
				{
					ereport(WARNING,
							(errcode(ERRCODE_SYNTAX_ERROR),
							 errmsg("colojoin hints conflict: \"%s\" and \"%s\"",
									other->text, hint->text),
							 errdetail("The later hint, \"%s\", is used.", hint->text)));
					other->valid = false;
				}
			}
		}
		set->hints = lappend(set->hints, hint);
	}
}

CjHintSet *
cj_parse_hints(const char *text, int len, Query *query)
{
	const char *p = text;
	const char *end;
	CjHintSet  *set = NULL;
	NameCollector nc = {NIL};

	if (text == NULL)
		return NULL;
	end = text + (len < 0 ? strlen(text) : len);

	/* quick exit for the common case */
	{
		const char *q;
		bool		any = false;

		for (q = text; q + 2 < end; q++)
			if (q[0] == '/' && q[1] == '*' && q[2] == '+')
			{
				any = true;
				break;
			}
		if (!any)
			return NULL;
	}

	if (query)
		(void) collect_names_walker((Node *) query, &nc);

	while (p < end)
	{
		if (*p == '\'' || *p == '"')
		{
			char		q = *p++;

			while (p < end && *p != q)
				p++;
			p++;
		}
		else if (*p == '-' && p + 1 < end && p[1] == '-')
		{
			while (p < end && *p != '\n')
				p++;
		}
		else if (*p == '$' && p + 1 < end && p[1] == '$')
		{
			const char *close = strstr(p + 2, "$$");

			p = close ? close + 2 : end;
		}
		else if (*p == '/' && p + 1 < end && p[1] == '*')
		{
			const char *close = strstr(p + 2, "*/");
			const char *body_end = close ? close : end;

			if (p + 2 < end && p[2] == '+')
			{
				HintReader r;

				r.stmt = text;
				r.p = p + 3;
				r.end = body_end;
				if (set == NULL)
					set = palloc0(sizeof(CjHintSet));
				read_comment(&r, set, nc.names);
			}
			p = close ? close + 2 : end;
		}
		else
			p++;
	}
	return set;
}

CjHint *
cj_hint_trust_colocation(CjHintSet *set)
{
	ListCell   *lc;

	if (set == NULL)
		return NULL;
	foreach(lc, set->hints)
	{
		CjHint	   *h = lfirst(lc);

		if (h->valid && h->kind == CJ_HINT_JOIN_OPTIONS && h->trust_colocation)
			return h;
	}
	return NULL;
}

/* ----------------------------------------------------------------
 *		The statement's hints, looked up while it is planned
 * ----------------------------------------------------------------
 */

/* the hints of the statement being planned */
static CjHintSet *cj_hints = NULL;

/* set the statement's hints; returns the ones they replace */
CjHintSet *
cj_set_statement_hints(CjHintSet *hints)
{
	CjHintSet  *old = cj_hints;

	cj_hints = hints;
	return old;
}

/* the names of a join relation's base relations, for the decision log */
char *
cj_joinrel_names(PlannerInfo *root, RelOptInfo *rel)
{
	return cj_relids_names(root, rel->relids);
}

/* the aliases of relids, comma-separated */
char *
cj_relids_names(PlannerInfo *root, Relids relids)
{
	StringInfoData buf;
	int			i = -1;

	initStringInfo(&buf);
	while ((i = bms_next_member(relids, i)) >= 0)
	{
		RangeTblEntry *rte;

		if (i >= root->simple_rel_array_size || root->simple_rte_array[i] == NULL)
			continue;
		rte = root->simple_rte_array[i];
		appendStringInfo(&buf, "%s%s", buf.len ? ", " : "",
						 rte->eref ? rte->eref->aliasname : "?");
	}
	return buf.data;
}

/* does a hint name relation rti of the query, by alias or table name? */
static bool
rel_has_name(PlannerInfo *root, int rti, const char *name)
{
	RangeTblEntry *rte;

	if (rti >= root->simple_rel_array_size || root->simple_rte_array[rti] == NULL)
		return false;
	rte = root->simple_rte_array[rti];
	if (rte->eref && strcmp(rte->eref->aliasname, name) == 0)
		return true;
	if (rte->rtekind == RTE_RELATION)
	{
		char	   *relname = get_rel_name(rte->relid);

		if (relname && strcmp(relname, name) == 0)
			return true;
	}
	return false;
}

/*
 * cj_hint_covers
 *		Every relation the hint names is among relids; with exact, the hint
 *		names exactly the relations of relids.
 */
bool
cj_hint_covers(PlannerInfo *root, CjHint *hint, Relids relids, bool exact)
{
	ListCell   *lc;

	foreach(lc, hint->names)
	{
		int			i = -1;
		bool		found = false;

		while ((i = bms_next_member(relids, i)) >= 0)
		{
			if (rel_has_name(root, i, lfirst(lc)))
			{
				found = true;
				break;
			}
		}
		if (!found)
			return false;
	}
	return !exact || list_length(hint->names) == bms_num_members(relids);
}

/* the first valid hint of one of kinds covering relids */
CjHint *
cj_find_hint(PlannerInfo *root, Relids relids, bool exact, CjHintKind kind1,
		  CjHintKind kind2)
{
	ListCell   *lc;

	if (cj_hints == NULL)
		return NULL;
	foreach(lc, cj_hints->hints)
	{
		CjHint	   *h = lfirst(lc);

		if (h->valid && (h->kind == kind1 || h->kind == kind2) &&
			cj_hint_covers(root, h, relids, exact))
			return h;
	}
	return NULL;
}

/* the PreAggregate hint naming relation rtindex, if any */
CjHint *
cj_pre_aggregate_hint(PlannerInfo *root, Index rtindex)
{
	Relids		relids = bms_make_singleton(rtindex);
	CjHint	   *h = cj_find_hint(root, relids, true, CJ_HINT_PRE_AGGREGATE,
							  CJ_HINT_PRE_AGGREGATE);

	bms_free(relids);
	return h;
}

/*
 * cj_colocated_hint_over: a ColocatedJoin hint naming every relation of relids
 * (and perhaps more): the group of this smaller join is needed to build the
 * hinted one, even where the settings would not offer it on its own.
 */
CjHint *
cj_colocated_hint_over(PlannerInfo *root, Relids relids)
{
	ListCell   *lc;

	if (cj_hints == NULL)
		return NULL;
	foreach(lc, cj_hints->hints)
	{
		CjHint	   *h = lfirst(lc);
		int			i = -1;
		bool		all = true;

		if (!h->valid || h->kind != CJ_HINT_COLOCATED_JOIN)
			continue;
		while (all && (i = bms_next_member(relids, i)) >= 0)
		{
			ListCell   *ln;
			bool		named = false;

			foreach(ln, h->names)
				if (rel_has_name(root, i, lfirst(ln)))
					named = true;
			all = named;
		}
		if (all)
			return h;
	}
	return NULL;
}

/* the hints of the statement being planned, or NULL */
CjHintSet *
cj_statement_hints(void)
{
	return cj_hints;
}
