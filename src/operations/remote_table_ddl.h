/*-------------------------------------------------------------------------
 *
 * remote_table_ddl.h
 *	  The statements that make, on another node, a table like one a node
 *	  holds: what a class move (class_move.c) runs on its target.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_REMOTE_TABLE_DDL_H
#define COLOJOIN_REMOTE_TABLE_DDL_H

#include "nodes/pg_list.h"

#include "remote/connection.h"

typedef struct CjRemoteTableDdl
{
	List	   *create;			/* CREATE SCHEMA IF NOT EXISTS, CREATE TABLE,
								 * storage settings: before rows are copied */
	List	   *finish;			/* constraints, indexes, replica identity,
								 * owner, privileges, row security, policies,
								 * triggers, statistics objects, comments */
	char	   *columns;		/* the columns COPY writes (not generated),
								 * quoted, comma-separated */
	char	   *comment;		/* the table's comment, or NULL */
	bool		has_identity;	/* replica identity usable for logical
								 * replication of UPDATE and DELETE */
} CjRemoteTableDdl;

/*
 * cj_remote_table_ddl: read the table schema.table on src's node and return
 * the statements that make an empty twin of it, under the same names, or
 * named new_table in the same schema (its indexes' names end in suffix).
 * ERROR naming the node when the table is missing or not a plain table.
 */
extern CjRemoteTableDdl *cj_remote_table_ddl(CjConnection *src,
											 const char *node,
											 const char *schema,
											 const char *table,
											 const char *new_table,
											 const char *suffix);

#endif							/* COLOJOIN_REMOTE_TABLE_DDL_H */
