/*-------------------------------------------------------------------------
 *
 * local_source.h
 *	  Moving rows the coordinator holds itself to a node.
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

#endif							/* COLOJOIN_LOCAL_SOURCE_H */
