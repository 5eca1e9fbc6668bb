/*-------------------------------------------------------------------------
 *
 * conflict_arbiter.h
 *	  The check that an INSERT ... ON CONFLICT (columns) of a sharded table
 *	  has an arbiter on every leaf, as PostgreSQL requires of one table.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_CONFLICT_ARBITER_H
#define COLOJOIN_CONFLICT_ARBITER_H

#include "nodes/pg_list.h"

/*
 * cj_check_conflict_arbiters: ERROR, as PostgreSQL does, unless every
 * placement of every leaf of relid has a unique index on the conflict
 * target of conflict (the plan's CJ_MODIFY_CONFLICT list).  Asks each node
 * once per session.
 */
extern void cj_check_conflict_arbiters(Oid relid, Oid userid, List *conflict);

#endif							/* COLOJOIN_CONFLICT_ARBITER_H */
