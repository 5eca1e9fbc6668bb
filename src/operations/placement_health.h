/*-------------------------------------------------------------------------
 *
 * placement_health.h
 *	  Placements that missed a write (stale) and their repair.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_PLACEMENT_HEALTH_H
#define COLOJOIN_PLACEMENT_HEALTH_H

#include "metadata/metadata.h"
#include "remote/connection.h"

/*
 * cj_health_write_connections: the write connection of each placement of
 * leaf (in placement order) for a write as userid; NULL for a placement
 * whose node cannot be reached, which is then marked stale
 * (cj_health_mark_stale).  ERROR when no placement can be reached.
 */
extern List *cj_health_write_connections(CjLeaf *leaf, Oid userid);

/*
 * cj_health_mark_stale: the placement of leafrelid on serverid missed a
 * write of this transaction: recorded in colojoin.stale_placements (in the
 * local transaction), plans reading the leaf invalidated, a WARNING says so.
 */
extern void cj_health_mark_stale(Oid leafrelid, Oid serverid,
								 const char *reason);

/* whether leafrelid's placement on serverid is stale */
extern bool cj_health_is_stale(Oid leafrelid, Oid serverid);

/*
 * whether a leaf of sharded table relid has its own server's placement (the
 * one postgres_fdw reads) stale: colojoin must read the table then
 */
extern bool cj_health_primary_stale(Oid relid);

#endif							/* COLOJOIN_PLACEMENT_HEALTH_H */
