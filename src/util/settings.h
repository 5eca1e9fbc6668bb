/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  The colojoin.* settings that no one module owns: the switches of the
 *	  strategies, limits every layer reads.  Settings that belong to one
 *	  concern (the connection budget, node failure memory, remote sizes)
 *	  live in that concern's module; the entry module registers them all.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_SETTINGS_H
#define COLOJOIN_SETTINGS_H

/* registered by the entry module (colojoin.c) */
extern bool colojoin_enable;
extern bool colojoin_enable_writes;
extern bool colojoin_enable_colocated_join;
extern bool colojoin_enable_redistribution;
extern bool colojoin_enable_dual_repartition;
extern bool colojoin_enable_stages;
extern bool colojoin_enable_coordinator_rows;
extern bool colojoin_enable_lateral_subqueries;
extern bool colojoin_enable_subquery_narrowing;
extern bool colojoin_enable_broadcast;
extern int	colojoin_broadcast_threshold;
extern int	colojoin_max_connections_per_node;
extern bool colojoin_log_decisions;
extern bool colojoin_enable_aggregate_pushdown;
extern bool colojoin_enable_pre_aggregation;
extern bool colojoin_binary_results;
extern bool colojoin_binary_moves;
extern bool colojoin_drop_remote_shards_on;

#endif							/* COLOJOIN_SETTINGS_H */
