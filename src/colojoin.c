/*-------------------------------------------------------------------------
 *
 * colojoin.c
 *	  Module entry point, the top of the layers: registers every colojoin.*
 *	  setting (the variables live in util/settings.c or in the module that
 *	  owns them) and calls each layer's *_init, which installs its hooks
 *	  and callbacks.
 *
 *	  Nothing here plans or executes, and nothing below includes it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "exec/executor.h"
#include "metadata/metadata.h"
#include "operations/class_move.h"
#include "operations/column_stats.h"
#include "operations/progress.h"
#include "plan/decision_stats.h"
#include "operations/shared_sizes.h"
#include "operations/size_cache.h"
#include "plan/join_group.h"
#include "plan/planner.h"
#include "remote/conn_budget.h"
#include "remote/connection.h"
#include "remote/deadlock.h"
#include "remote/node_health.h"
#include "remote/recovery_worker.h"
#include "remote/setup_cache.h"
#include "remote/twophase.h"
#include "util/extension.h"
#include "util/fdw_writes.h"
#include "util/settings.h"
#include "write/row_writes.h"
#include "write/modify.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static void
define_settings(void)
{
	DefineCustomBoolVariable("colojoin.enable",
							 "Enables every colojoin plan.",
							 "When off, PostgreSQL plans joins of sharded tables on its own.",
							 &colojoin_enable,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("colojoin.enable_writes",
							 "Enables colojoin's own INSERT, UPDATE, DELETE and COPY of sharded tables.",
							 "When off (or when colojoin.enable is off), postgres_fdw writes them, and writes that would reach only the primary of a replicated leaf are refused.",
							 &colojoin_enable_writes,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("colojoin.enable_colocated_join",
							 "Enables joins run where colocated partitions live.",
							 NULL,
							 &colojoin_enable_colocated_join,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("colojoin.enable_redistribution",
							 "Enables joins that repartition one side onto the nodes of the other.",
							 NULL,
							 &colojoin_enable_redistribution,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("colojoin.enable_dual_repartition",
							 "Enables joins that repartition both sides by the join column onto their nodes.",
							 "Needs colojoin.enable_redistribution too.",
							 &colojoin_enable_dual_repartition,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("colojoin.enable_stages",
							 "Enables joins that move the rows of a colocated join into the classes of the next one.",
							 "Needs colojoin.enable_redistribution too.",
							 &colojoin_enable_stages,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("colojoin.enable_coordinator_rows",
							 "Enables joins that broadcast rows the coordinator computes (a WITH query, a subquery, VALUES, a function) to the nodes of a colocated join.",
							 "Needs colojoin.enable_broadcast too; only relations of at most colojoin.broadcast_threshold rows.",
							 &colojoin_enable_coordinator_rows,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("colojoin.enable_lateral_subqueries",
							 "Rewrites correlated scalar subqueries over sharded tables in WHERE and select lists as LATERAL subqueries, which the tasks can run.",
							 "Only aggregates without GROUP BY, HAVING or LIMIT, which always yield one row.",
							 &colojoin_enable_lateral_subqueries,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("colojoin.enable_subquery_narrowing",
							 "Plans a query whose subquery groups a sharded table by a column joined to a sharded table with conditions of its own also with that subquery narrowed to the rows that table keeps, and keeps the cheaper plan.",
							 "Only inner joins of sharded tables, equalities the grouping agrees with, tables without row security.",
							 &colojoin_enable_subquery_narrowing,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("colojoin.enable_broadcast",
							 "Enables joins that copy a small side to every node of the other.",
							 NULL,
							 &colojoin_enable_broadcast,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("colojoin.broadcast_threshold",
							"Largest estimated row count of a side that may be broadcast.",
							NULL,
							&colojoin_broadcast_threshold,
							1000000, 0, INT_MAX,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("colojoin.max_connections_per_node",
							"Maximum number of connections a query opens to one node.",
							"Tasks for one node beyond this number wait for a free connection.",
							&colojoin_max_connections_per_node,
							4, 1, 64,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("colojoin.log_decisions",
							 "Reports, as a NOTICE, why a join of sharded tables was not run by colojoin.",
							 NULL,
							 &colojoin_log_decisions,
							 false,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("colojoin.enable_aggregate_pushdown",
							 "Enables aggregation, full or partial, in the tasks of a colocated join or sharded table.",
							 NULL,
							 &colojoin_enable_aggregate_pushdown,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("colojoin.enable_pre_aggregation",
							 "Enables aggregating a moved table by its join columns on its own nodes before it moves.",
							 "Applies when the query aggregates only that table's columns over inner joins.",
							 &colojoin_enable_pre_aggregation,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("colojoin.binary_results",
							 "Has the nodes send result rows in binary form when every column's type allows it.",
							 "Built-in types whose binary form is exact and independent of the session's settings travel in binary; any other column makes the scan use text.",
							 &colojoin_binary_results,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("colojoin.binary_moves",
							 "Moves rows between nodes in binary COPY when every moved column's type allows it.",
							 "The same built-in types as for colojoin.binary_results; a move with any other column, or from the coordinator's own table, uses text COPY.  Taken when a statement is planned.",
							 &colojoin_binary_moves,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("colojoin.drop_remote_shards",
							 "Drops the remote tables colojoin made for a leaf when the leaf is dropped.",
							 "DROP TABLE of a sharded table made by colojoin.create_shards, or of such a leaf, drops the leaves' remote tables (and their replicas' made by add_replica) on the nodes in the same transaction; tables colojoin did not make are never dropped.",
							 &colojoin_drop_remote_shards_on,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("colojoin.node_failure_memory",
							"How long a node that could not be reached is avoided.",
							"Tasks whose partition class has another placement run there instead, without trying the node again, for this long after its failure; 0 tries it every time.",
							&colojoin_node_failure_memory,
							30000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("colojoin.node_connection_budget",
							"Maximum number of connections all sessions of this coordinator hold to one node.",
							"Counted per database server in shared memory (colojoin must be in shared_preload_libraries); a session's first connection to a node waits for room, a query's further ones are skipped.  0 sets no limit.",
							&colojoin_node_connection_budget,
							80, 0, 10000,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("colojoin.connection_wait_timeout",
							"How long a session waits for a connection to a node.",
							"For room in the node's connection budget, or for a free slot on a node that answers it has none (too many clients, starting up); then the statement fails.  0 waits without limit.",
							&colojoin_connection_wait_timeout,
							30000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("colojoin.idle_connection_timeout",
							"How long a session keeps an idle connection to a node beyond its first.",
							"Checked at transaction end; 0 keeps them for the life of the session.  Idle connections to a node other sessions wait for close at once.",
							&colojoin_idle_connection_timeout,
							60000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("colojoin.recovery_interval",
							"How often a background worker resolves the transactions this coordinator left prepared on its nodes.",
							"Needs colojoin in shared_preload_libraries.  Every interval, each database with the extension commits or rolls back, from its commit records, what a crash left between the two phases of a commit.  0 or -1 turns the worker off.",
							&colojoin_recovery_interval,
							60000, -1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
}

void
_PG_init(void)
{
	define_settings();
	cj_budget_init();
	cj_deadlock_init();
	cj_extension_init();
	cj_fdw_writes_init();
	cj_metadata_init();
	cj_connection_init();
	cj_planner_init();
	cj_executor_init();
	cj_aggregates_init();
	cj_combine_init();
	cj_write_guard_init();
	cj_modify_init();
	cj_row_writes_init();
	cj_twophase_init();
	cj_recovery_worker_init();
	cj_read_after_write_init();
	cj_size_cache_init();
	cj_shared_sizes_init();
	cj_setup_cache_init();
	cj_column_stats_init();
	cj_decision_stats_init();
	cj_progress_init();
	cj_class_move_init();
	cj_rebalance_worker_init();
	cj_copy_from_init();
	cj_truncate_init();

	/*
	 * Last, once every module defined its settings (size_cache.c and
	 * twophase.c define theirs in their init): a value given earlier, in
	 * postgresql.conf, for a setting defined after the reservation would be
	 * discarded as an unknown placeholder.
	 */
	MarkGUCPrefixReserved("colojoin");
}
