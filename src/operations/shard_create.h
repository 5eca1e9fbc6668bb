/*-------------------------------------------------------------------------
 *
 * shard_create.h
 *	  Creating shard tables on nodes (colojoin.create_shards) and the DDL
 *	  that makes a node's table match a sharded table's columns.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_SHARD_CREATE_H
#define COLOJOIN_SHARD_CREATE_H

/*
 * cj_shard_table_ddl: a CREATE TABLE statement that makes, on a node, a
 * table remote_schema.remote_table with the columns of sharded table
 * parent_relid (names, types with typmods, collations, NOT NULL, defaults
 * that can run remotely), quoted throughout.  With if_not_exists, the
 * statement is CREATE TABLE IF NOT EXISTS.
 */
extern char *cj_shard_table_ddl(Oid parent_relid, const char *remote_schema,
								const char *remote_table, bool if_not_exists);

#endif							/* COLOJOIN_SHARD_CREATE_H */
