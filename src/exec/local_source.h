/*-------------------------------------------------------------------------
 *
 * local_source.h
 *	  Moving rows the coordinator holds itself to a node: a table's, read
 *	  with SPI, or those a child plan of the scan computed.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_LOCAL_SOURCE_H
#define COLOJOIN_LOCAL_SOURCE_H

#include "remote/connection.h"

/*
 * cj_copy_local_rows: run select_sql here (SPI, the statement's snapshot)
 * and send its rows into dst with copy_in_sql (COPY ... FROM STDIN, text);
 * returns the bytes sent.
 */
extern uint64 cj_copy_local_rows(const char *select_sql, CjConnection *dst,
								 const char *copy_in_sql, const char *context);

/*
 * Rows a child plan of the scan computed here (coordinator rows), kept
 * for every destination: the store and a slot of its row type.
 */
typedef struct CjStoredRows
{
	struct Tuplestorestate *store;
	struct TupleTableSlot *slot;
} CjStoredRows;

/*
 * cj_copy_stored_rows: send every row of rows into dst with copy_in_sql
 * (COPY ... FROM STDIN, text); returns the bytes sent.
 */
extern uint64 cj_copy_stored_rows(CjStoredRows *rows, CjConnection *dst,
								  const char *copy_in_sql, const char *context);

#endif							/* COLOJOIN_LOCAL_SOURCE_H */
