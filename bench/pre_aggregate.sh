#!/bin/bash
# bench/pre_aggregate.sh -- aggregation before a move: a query that
# aggregates the columns of a table a join must move, where grouping that
# table by the join column on its own nodes shrinks what moves.  colojoin
# (its defaults: the moved table's nodes send partial aggregates per join
# value) against colojoin moving the rows themselves
# (colojoin.enable_pre_aggregation off), native PostgreSQL + postgres_fdw
# on the same cluster and data, and the same query on plain local tables of
# the coordinator, in one run.  Prints a table of medians and ratios and
# writes it to bench/results/pre-aggregate-<timestamp>.md.
#
#   bench/pre_aggregate.sh                     SCALE=1: 4M events, 1M products
#   SCALE=0.01 REPS=1 bench/pre_aggregate.sh   a quick check that it works
#
# The cluster: a coordinator and 4 nodes; events hash partitioned 16 ways
# on event_id, products 16 ways on product_id (colojoin.create_shards, 4
# partitions per node).  Every event is of one of the 50,000 products that
# sell (5% of them at SCALE=1), so a node's events of one product group
# well.  The rows are made on the coordinator in plain tables (analyzed)
# and copied into the sharded tables through colojoin; the nodes' tables
# are vacuumed and analyzed (as autovacuum would), the coordinator's foreign
# tables are not, and the servers have no use_remote_estimate.
#
# The query (sales by category):
#   SELECT p.category, count(*), sum(e.amount) FROM events e JOIN products p
#     ON e.product_id = p.product_id GROUP BY p.category ORDER BY p.category
# Neither table is small: broadcasting products moves 4M rows, repartitioning
# events 4M; grouped first, events send one row per product a partition sold.
#
# Configurations, each round running every one in turn (REPS rounds, after
# one untimed round); a run is one psql session that runs the query once
# untimed and once under \timing:
#   colojoin       colojoin on, its defaults
#   colojoin_rows  colojoin.enable_pre_aggregation off: the rows move
#   native_pwa     colojoin.enable off, enable_partitionwise_join and
#                  enable_partitionwise_aggregate on, async_capable servers
#   native         colojoin.enable off, PostgreSQL's defaults
#   local          the query on events_local and products_local
# Every configuration's answer must be the same (the script stops otherwise).
#
# Settings: SCALE (default 1), REPS (default 3), CJ_PORT (default 22632),
# CJ_CLUSTER_DIR (default /tmp/cj-bench-preagg), BENCH_SKIP_BUILD=1,
# PG_CONFIG.  Run as root; the servers run as user postgres and are stopped
# on exit.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
SCALE=${SCALE:-1}
REPS=${REPS:-3}
export CJ_PORT=${CJ_PORT:-22632}
export CJ_CLUSTER_DIR=${CJ_CLUSTER_DIR:-/tmp/cj-bench-preagg}
. "$BENCH/bench_common.sh"
STAMP=$(date +%Y%m%d-%H%M%S)
REPORT="$BENCH/results/pre-aggregate-$STAMP.md"
mkdir -p "$BENCH/results"
N_EVENTS=$(awk -v s="$SCALE" 'BEGIN { printf "%d", 4000000 * s }')
N_PRODUCTS=$(awk -v s="$SCALE" 'BEGIN { printf "%d", 1000000 * s }')
N_SOLD=$(awk -v s="$SCALE" 'BEGIN { n = int(50000 * s); if (n < 50) n = 50; printf "%d", n }')
[ "$N_EVENTS" -ge 4000 ] || { echo "pre_aggregate.sh: SCALE=$SCALE is too small" >&2; exit 2; }

bench_fresh_cluster

# as bench/run.sh: everything in memory
bench_in_memory

say "schema and data (SCALE=$SCALE: $N_EVENTS events of $N_SOLD products sold, $N_PRODUCTS products)"
{
	echo "CREATE EXTENSION colojoin CASCADE;"
	bench_servers
	cat <<SQL
CREATE FUNCTION bench_rnd(k bigint, seed int, m int) RETURNS int LANGUAGE sql IMMUTABLE
	AS \$\$ SELECT (((hashint8extended(k, seed) % m) + m) % m)::int \$\$;
CREATE TABLE events_local (event_id bigint NOT NULL, product_id int, amount numeric(12,2), at date);
INSERT INTO events_local
SELECT g, 1 + bench_rnd(bench_rnd(g, 1, $N_SOLD), 2, $N_PRODUCTS), (1 + bench_rnd(g, 3, 50000) / 100.0)::numeric(12,2),
       date '2026-01-01' + bench_rnd(g, 4, 300)
FROM generate_series(1, $N_EVENTS::bigint) g;
CREATE TABLE products_local (product_id int NOT NULL, category text, name text, price numeric(12,2));
INSERT INTO products_local
SELECT k, 'category ' || (1 + bench_rnd(k, 5, 40)), 'product ' || md5(k::text), (1 + bench_rnd(k, 6, 90000) / 100.0)::numeric(12,2)
FROM generate_series(1, $N_PRODUCTS) k;
VACUUM ANALYZE events_local, products_local;
CREATE TABLE events (event_id bigint NOT NULL, product_id int, amount numeric(12,2), at date) PARTITION BY HASH (event_id);
SELECT colojoin.create_shards('events', ARRAY['n1', 'n2', 'n3', 'n4'], 16);
CREATE TABLE products (product_id int NOT NULL, category text, name text, price numeric(12,2)) PARTITION BY HASH (product_id);
SELECT colojoin.create_shards('products', ARRAY['n1', 'n2', 'n3', 'n4'], 16);
INSERT INTO events SELECT * FROM events_local;
INSERT INTO products SELECT * FROM products_local;
SQL
	for i in 1 2 3 4; do
		echo "ALTER SERVER n$i OPTIONS (ADD async_capable 'true');"
	done
} | q >/dev/null
bench_nodes_analyzed pre_aggregate.sh

QUERY="SELECT p.category, count(*), sum(e.amount) FROM %E e JOIN %P p ON e.product_id = p.product_id GROUP BY p.category ORDER BY p.category"
CONFIGS="colojoin colojoin_rows native_pwa native local"
stmt() {
	local sql
	if [ "$1" = local ]; then
		sql=${QUERY//%E/events_local}
		sql=${sql//%P/products_local}
	else
		sql=${QUERY//%E/events}
		sql=${sql//%P/products}
	fi
	case $1 in
		colojoin | local) echo "SET colojoin.enable = on;" ;;
		colojoin_rows) echo "SET colojoin.enable_pre_aggregation = off;" ;;
		native_pwa) echo "SET colojoin.enable = off; SET enable_partitionwise_join = on; SET enable_partitionwise_aggregate = on;" ;;
		native) echo "SET colojoin.enable = off;" ;;
	esac
	echo "$sql;"
}

say "checks: the same answer in every configuration, and colojoin's plans"
# shellcheck disable=SC2086
bench_same_answers pre_aggregate.sh stmt $CONFIGS
for cfg in colojoin colojoin_rows; do
	echo "-- $cfg"
	stmt "$cfg" | sed '$s/^/EXPLAIN (ANALYZE, VERBOSE) /' | q | grep -E 'Strategy|Rows Moved|Bytes Moved|Execution Time'
done
stmt colojoin | sed '$s/^/EXPLAIN (VERBOSE) /' | q | grep -q 'on its nodes first' ||
	{ echo "pre_aggregate.sh: colojoin did not aggregate before the move" >&2; exit 1; }

say "timed runs (REPS=$REPS rounds, each configuration in turn)"
# shellcheck disable=SC2086
bench_rounds stmt $CONFIGS
best=native_pwa
awk -v a="${T[native]}" -v b="${T[native_pwa]}" 'BEGIN { exit !(a < b) }' && best=native

{
	echo "# aggregation before a move, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
	echo
	echo "SCALE=$SCALE ($N_EVENTS events of $N_SOLD products sold, $N_PRODUCTS products, 16 partitions each on 4 nodes),"
	echo "foreign tables not analyzed, servers without use_remote_estimate; REPS=$REPS, median ms (psql \\timing, warm session)."
	echo
	echo "| query | colojoin | colojoin, rows moved | native, partitionwise | native, defaults | plain local tables | colojoin / local | rows moved / colojoin | native best / colojoin |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	echo "| sales by category, events x products on product_id | ${T[colojoin]} | ${T[colojoin_rows]} | ${T[native_pwa]} | ${T[native]} | ${T[local]} |" \
		"$(ratio "${T[colojoin]}" "${T[local]}")x | $(ratio "${T[colojoin_rows]}" "${T[colojoin]}")x | $(ratio "${T[$best]}" "${T[colojoin]}")x |"
	echo
	echo "Command: \`SCALE=$SCALE REPS=$REPS bench/pre_aggregate.sh\`"
} | tee "$REPORT"
echo
echo "written to $REPORT"
