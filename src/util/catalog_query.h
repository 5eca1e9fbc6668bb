/*-------------------------------------------------------------------------
 *
 * catalog_query.h
 *	  Lists of OIDs read from the local catalogs through SPI, shared by the
 *	  SQL functions that walk sharded tables, and writes of colojoin's own
 *	  tables as their owner.
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

/*
 * cj_write_as_owner: run sql (an INSERT, UPDATE or DELETE of one of
 * colojoin's own tables, tablerelid) through SPI as that table's owner, with
 * an active snapshot; expected is SPI's result code for it.  Callers have
 * checked what the current user may do: the tables themselves are not
 * writable by ordinary users.  Returns the rows processed.
 */
extern uint64 cj_write_as_owner(Oid tablerelid, const char *sql, int nargs,
								Oid *argtypes, Datum *args, int expected);

#endif							/* COLOJOIN_CATALOG_QUERY_H */
