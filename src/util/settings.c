/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The storage of the colojoin.* settings no one module owns
 *	  (settings.h).  Their names, descriptions and ranges are registered by
 *	  the entry module (colojoin.c); nothing here reads them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "util/settings.h"

bool		colojoin_enable = true;
bool		colojoin_enable_writes = true;
bool		colojoin_enable_colocated_join = true;
bool		colojoin_enable_redistribution = true;
bool		colojoin_enable_dual_repartition = true;
bool		colojoin_enable_stages = true;
bool		colojoin_enable_coordinator_rows = true;
bool		colojoin_enable_lateral_subqueries = true;
bool		colojoin_enable_subquery_narrowing = true;
bool		colojoin_enable_broadcast = true;
int			colojoin_broadcast_threshold = 1000000;
int			colojoin_max_connections_per_node = 4;
bool		colojoin_log_decisions = false;
bool		colojoin_enable_aggregate_pushdown = true;
bool		colojoin_enable_pre_aggregation = true;
bool		colojoin_binary_results = true;
bool		colojoin_binary_moves = true;
bool		colojoin_drop_remote_shards_on = true;
