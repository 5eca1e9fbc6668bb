/*-------------------------------------------------------------------------
 *
 * deparse.h
 *	  SQL text for nodes: which expressions may run remotely, and how to
 *	  write them, with every identifier and constant quoted.
 *
 *	  The planner builds whole remote queries (FROM items, joins) out of
 *	  these pieces; this module knows nothing of partitions or nodes.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_DEPARSE_H
#define COLOJOIN_DEPARSE_H

#include "lib/stringinfo.h"
#include "nodes/pathnodes.h"

/*
 * How the deparser names a Var: var_name returns the SQL text for the Var
 * (say r1."o_orderkey"), or NULL when it cannot be referenced remotely.
 */
typedef const char *(*CjVarNameFunc) (Var *var, void *arg);

typedef struct CjDeparseContext
{
	CjVarNameFunc var_name;
	void	   *var_arg;

	/*
	 * Expressions evaluated locally at execution time and sent as $1, $2,
	 * ... (Params, and anything else the planner chooses).  Deparsing a
	 * Param appends it here (once per distinct Param) and writes
	 * "$n::type".  The list is the caller's; start it as NIL.
	 */
	List	   *params;

	/*
	 * The query's WINDOW clauses and target list, for window functions
	 * computed in the tasks (their OVER clauses); NIL elsewhere.
	 */
	List	   *windows;
	List	   *window_tlist;
} CjDeparseContext;

/*
 * cj_is_shippable: expr may run on a node: built-in, immutable operators and
 * functions only (and types built in), collations that the node will
 * interpret the same way, no sublinks, aggregates, window functions or
 * system columns; Vars only of the rels in relids (NULL: any level-0 Var).
 */
extern bool cj_is_shippable(PlannerInfo *root, Expr *expr, Relids relids);

/*
 * cj_is_shippable_window: the same, and window functions of the query
 * (root->parse->windowClause) are allowed too, whose PARTITION BY, ORDER BY
 * and frame the node can compute alike.  Only for the select lists of tasks
 * that compute windows whole (windows.c).
 */
extern bool cj_is_shippable_window(PlannerInfo *root, Expr *expr);

/*
 * cj_deparse_expr: append the SQL of a shippable expr to buf, fully
 * parenthesised and schema-qualified where names could be ambiguous.
 */
extern void cj_deparse_expr(StringInfo buf, Expr *expr, CjDeparseContext *ctx);

/* a value in COPY's text format (backslash, tab, newline, return escaped) */
extern void cj_append_copy_value(StringInfo buf, const char *value);

/* identifier and literal quoting */
extern const char *cj_quote_ident(const char *ident);
extern void cj_append_literal(StringInfo buf, const char *value);
extern char *cj_qualified_name(const char *schema, const char *relname);

/* the name of a type as the node must read it, e.g. pg_catalog.int4 */
extern char *cj_type_name(Oid typid, int32 typmod);

/*
 * cj_pin_node_output_settings: make output functions write values as the
 * nodes' sessions read them (DateStyle ISO, IntervalStyle postgres,
 * extra_float_digits 3), whatever this session's settings; returns the GUC
 * nest level to end with AtEOXact_GUC(true, level).
 */
extern int	cj_pin_node_output_settings(void);

#endif							/* COLOJOIN_DEPARSE_H */
