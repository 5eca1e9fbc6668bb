/*-------------------------------------------------------------------------
 *
 * catalog_query.h
 *	  Lists of OIDs read from the local catalogs through SPI, shared by the
 *	  SQL functions that walk sharded tables.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_CATALOG_QUERY_H
#define COLOJOIN_CATALOG_QUERY_H

#include "nodes/pg_list.h"

/* the first column (an oid) of every row of a read-only query */
extern List *cj_query_oids(const char *sql, int nargs, Oid *argtypes,
						   Datum *values);

/* the database's top-level partitioned tables, by schema and name */
extern List *cj_top_level_partitioned_tables(void);

#endif							/* COLOJOIN_CATALOG_QUERY_H */
