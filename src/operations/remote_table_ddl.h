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

/*
 * run ddl's first statements on dst (the schema and the empty table
 * qualified), then, when marker is given, comment the table with it at
 * once: a move's target is marked before anything can fail after it
 */
extern void cj_twin_create(CjConnection *dst, const CjRemoteTableDdl *ddl,
						   const char *qualified, const char *marker,
						   const char *context);

/*
 * run the rest (constraints, indexes, owner, ...) on dst; without a marker,
 * the table then gets the node's own comment (a marked one gets it when
 * its move commits)
 */
extern void cj_twin_finish(CjConnection *dst, const CjRemoteTableDdl *ddl,
						   const char *qualified, const char *marker,
						   const char *context);

/* COMMENT ON TABLE qualified IS comment (NULL: none) */
extern char *cj_twin_comment_sql(const char *qualified, const char *comment);

#endif							/* COLOJOIN_REMOTE_TABLE_DDL_H */
