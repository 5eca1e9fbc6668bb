/*-------------------------------------------------------------------------
 *
 * class_move.h
 *	  Moving a partition class between servers, and cleaning up after a
 *	  move that failed half way.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_CLASS_MOVE_H
#define COLOJOIN_CLASS_MOVE_H

#include "nodes/pg_list.h"
#include "storage/lockdefs.h"

/* the prefix of every publication, subscription and slot a move makes */
#define CJ_MOVE_PREFIX "colojoin_move_"

/* the comment a move's target table carries until the move commits */
#define CJ_MOVE_MARKER "colojoin: target of move "

/* connection slots of moves, outside any remote transaction */
#define CJ_MOVE_SLOT 996
#define CJ_MOVE_CLEANUP_SLOT 995

extern bool colojoin_move_keep_source;

/*
 * cj_move_remove_remains: drop what the move called name left on the
 * nodes of servers src and dst (its subscription, publication, slot and
 * marked target tables), as far as they can be reached; WARNINGs for what
 * could not be removed.  Returns how many objects it removed.  Skips a
 * move another session is running.
 */
extern int	cj_move_remove_remains(Oid src, Oid dst, const char *name);

/*
 * take the advisory lock a running move holds on its name, without
 * waiting: false when another session's move holds it
 */
extern bool cj_move_try_lock(const char *name);

/*
 * cj_tables_colocated: o is partitioned like t, with the same bounds class
 * by class, and each class's primary on the same node as t's: a class of
 * t moves with o's.
 */
struct CjTable;
extern bool cj_tables_colocated(struct CjTable *t, struct CjTable *o);

/* server p reaches server s's node (asking either which one, if unknown) */
extern bool cj_on_node(Oid p, Oid s);

/*
 * cj_lock_together: lock relids (leaves a writer may take one after the
 * other in one transaction) in mode without deadlocking with such writers:
 * all or none at a time, waiting for a busy one holding none of the others.
 */
extern void cj_lock_together(List *relids, LOCKMODE mode);

/*
 * cj_move_debug_pause: tests stop a move or split at phase, waiting for the
 * advisory lock colojoin.debug_pause_move when colojoin.debug_pause_move_phase
 * names that phase.
 */
extern void cj_move_debug_pause(const char *phase);

/* a logical replication of a move (or split): its objects' name, its servers */
typedef struct CjReplication
{
	const char *name;			/* subscription, publication and slot */
	const char *from_name;		/* the source server */
	const char *to_name;		/* the target server */
} CjReplication;

struct CjConnection;

/* the marker comment of the tables the move (or split) name makes */
extern char *cj_move_marker(const char *name);

/*
 * start replicating tables (a FOR TABLE list, row filters allowed) from
 * src's node (server from) to dst's: publication and subscription named
 * r->name, the subscription copying the rows first
 */
extern void cj_move_replication_start(const CjReplication *r,
									  struct CjConnection *src,
									  struct CjConnection *dst, Oid from,
									  const char *tables, const char *context);

/* end it: subscription (and its slot) and publication dropped */
extern void cj_move_replication_end(const CjReplication *r,
									struct CjConnection *src,
									struct CjConnection *dst,
									const char *context);

/* ERROR unless src's node can publish (wal_level, senders, slots) */
extern void cj_move_check_source(struct CjConnection *src, const char *from_name);

/* until the subscription's initial copy is done for its ntables tables */
extern void cj_move_wait_for_copy(const CjReplication *r, struct CjConnection *dst,
								  int ntables);

/* the source's WAL position now, and a message past it (see class_move.c) */
extern char *cj_move_source_position(struct CjConnection *src, const char *context);

/* until the target has applied everything the source wrote up to lsn */
extern void cj_move_wait_for_lsn(const CjReplication *r, struct CjConnection *src,
								 struct CjConnection *dst, const char *lsn);

/*
 * until no prepared transaction on src's node holds a lock on the tables
 * (qualified names) there
 */
extern void cj_move_wait_for_prepared(List *qualified, struct CjConnection *src,
									  const char *context);

extern void cj_class_move_init(void);

/* rebalance_worker.c: whether its worker can run (preloaded) */
extern void cj_rebalance_worker_init(void);

#endif							/* COLOJOIN_CLASS_MOVE_H */
