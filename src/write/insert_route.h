/*-------------------------------------------------------------------------
 *
 * insert_route.h
 *	  Rows inserted into a sharded table (INSERT, COPY FROM): each routed
 *	  to its leaf by PostgreSQL's partitioning rules and sent in batches to
 *	  every placement of the leaf through colojoin's write connections.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_INSERT_ROUTE_H
#define COLOJOIN_INSERT_ROUTE_H

#include "executor/tuptable.h"
#include "utils/tuplestore.h"

typedef struct CjRouter CjRouter;

/*
 * cj_router_begin: rows for sharded table relid, written as userid.
 * conflict (may be NIL) holds [Integer leaf, String ON CONFLICT clause,
 * Integer n] per leaf, the clause naming the target "rn", its $n
 * parameters param_values.  With returned, every
 * inserted row, as the primary placement returned it (every attribute of
 * the table), goes into it through ret_slot.
 */
extern CjRouter *cj_router_begin(Oid relid, Oid userid, List *conflict,
								 int nparams, const char *const *param_values,
								 Tuplestorestate *returned,
								 TupleTableSlot *ret_slot);

/* one row, in the table's own column order (every attribute) */
extern void cj_router_put(CjRouter *r, TupleTableSlot *slot);

/* cj_router_end: send what is left; the number of rows inserted */
extern uint64 cj_router_end(CjRouter *r);

/* rows written per node so far: node names and counts, for EXPLAIN ANALYZE */
extern void cj_router_node_rows(CjRouter *r, List **nodes, List **rows);

#endif							/* COLOJOIN_INSERT_ROUTE_H */
