/*-------------------------------------------------------------------------
 *
 * colojoin.h
 *	  What every colojoin source file shares: settings, the "is colojoin
 *	  active in this database" test, and small common helpers.
 *
 *	  Concern-specific declarations live in the header named for the
 *	  concern (metadata.h, colocation.h, connection.h, deparse.h, ...).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_H
#define COLOJOIN_H

#include "postgres.h"

#include "nodes/pg_list.h"

#define COLOJOIN_SCHEMA "colojoin"
#define COLOJOIN_CUSTOM_SCAN_NAME "ColocatedJoin"

/* Settings (GUCs), defined in colojoin.c */
extern bool colojoin_enable;
extern bool colojoin_enable_writes;
extern bool colojoin_enable_colocated_join;
extern bool colojoin_enable_redistribution;
extern bool colojoin_enable_dual_repartition;
extern bool colojoin_enable_broadcast;
extern int	colojoin_broadcast_threshold;
extern int	colojoin_max_connections_per_node;
extern bool colojoin_log_decisions;
extern bool colojoin_enable_aggregate_pushdown;
extern bool colojoin_enable_pre_aggregation;
extern bool colojoin_binary_results;
extern bool colojoin_binary_moves;
extern bool colojoin_drop_remote_shards_on;
extern int	colojoin_recovery_interval;

/*
 * colojoin_is_active: true when the extension is installed in the current
 * database (the library may be loaded everywhere; it must change nothing
 * where CREATE EXTENSION colojoin has not been run).  Cheap: cached and
 * reset by syscache invalidation.
 */
extern bool colojoin_is_active(void);
extern void cj_forget_active_state(void);


/* Module initialisation of the files that register hooks or callbacks */
extern void cj_metadata_init(void);
extern void cj_connection_init(void);
extern void cj_planner_init(void);
extern void cj_executor_init(void);
extern void cj_aggregates_init(void);
extern void cj_combine_init(void);
extern void cj_write_guard_init(void);
extern void cj_copy_from_init(void);
extern void cj_read_after_write_init(void);
extern void cj_recovery_worker_init(void);

#endif							/* COLOJOIN_H */
