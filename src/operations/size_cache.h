/*-------------------------------------------------------------------------
 *
 * size_cache.h
 *	  Sizes of never-analyzed foreign partitions, read from their nodes and
 *	  cached per backend (size_cache.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_SIZE_CACHE_H
#define COLOJOIN_SIZE_CACHE_H

#include "lib/stringinfo.h"
#include "libpq-fe.h"
#include "nodes/pg_list.h"

extern int	colojoin_remote_size_lifetime;	/* ms; 0: off */

/*
 * cj_leaf_remote_size: the size the planner uses for foreign partition
 * leaf when pg_class has none: from the cache, read from the node when
 * missing or older than colojoin.remote_size_lifetime.  false when there
 * is none (off, not a foreign partition, node unreachable).
 */
extern bool cj_leaf_remote_size(Oid leaf, double *tuples, double *pages);

/* the type of a column of leaf's remote table, as its node said */
extern bool cj_leaf_remote_type(Oid leaf, const char *colname, Oid *typid);

/* its distinct values by the node's statistics; false when it has none */
extern bool cj_leaf_remote_ndistinct(Oid leaf, const char *colname,
									 double *ndistinct);

/* pg_class.reltuples of relid: -1 when never counted */
extern bool cj_leaf_column_stats(Oid leaf, const char *colname, bool fetch,
								 double *rows, double *ndistinct,
								 double *nullfrac, Oid *type,
								 const char **low, const char **high);

extern float4 cj_rel_reltuples(Oid relid);

/* forget every cached size (refresh_statistics) */

extern void cj_size_cache_forget(void);

/* servers, with those of the primaries of t's foreign leaves added */
struct CjTable;
extern List *cj_primary_servers(struct CjTable *t, List *servers);

/* a node's foreign leaves (primary placement) among tables, for its size query */
extern void cj_leaves_on_server(List *tables, Oid serverid, List **leaves,
								StringInfo schemas, StringInfo names);

/* the size query of one node, and the size of one of its rows */
extern char *cj_remote_sizes_query(const char *schemas, const char *names);
extern void cj_remote_size_row(PGresult *res, int row, double *tuples,
							   double *pages);

extern void cj_size_cache_init(void);

#endif							/* COLOJOIN_SIZE_CACHE_H */
