/*-------------------------------------------------------------------------
 *
 * shard_drop.h
 *	  The record of remote tables colojoin created, and their removal.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_SHARD_DROP_H
#define COLOJOIN_SHARD_DROP_H

/*
 * cj_record_shard_origin: colojoin created remote_schema.remote_table on
 * serverid for leaf (its primary table, or a replica's); drop_shards and
 * DROP TABLE may drop it later.  Only tables recorded here are ever dropped.
 */
extern void cj_record_shard_origin(Oid leaf, Oid serverid,
								   const char *remote_schema,
								   const char *remote_table);

/*
 * cj_forget_shard_origin: leaf's remote table on serverid is no longer
 * colojoin's to drop (it was dropped, or a move left it behind on purpose).
 */
extern void cj_forget_shard_origin(Oid leaf, Oid serverid);

#endif							/* COLOJOIN_SHARD_DROP_H */
