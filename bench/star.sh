#!/bin/bash
# bench/star.sh -- a star query: two colocated fact tables (orders JOIN
# lineitem) joined with two plain local dimension tables on the coordinator,
# grouped by dimension columns; colojoin against the best native
# PostgreSQL + postgres_fdw plan on the same cluster and data, in one run.
# Prints a table of medians and the ratio, and writes it to
# bench/results/star-<timestamp>.md.
#
#   bench/star.sh                       SCALE=1: 1M orders, 4M lineitem
#   SCALE=0.01 REPS=1 bench/star.sh     a quick check that it works
#
# The cluster: a coordinator and 4 nodes, orders and lineitem hash
# partitioned 16 ways (colojoin.create_shards: 4 partitions per node,
# lineitem colocated with orders), loaded through the coordinator; foreign
# tables nobody ANALYZEd, servers without use_remote_estimate (the nodes'
# own tables are vacuumed and analyzed).  The dimensions: cust_dim (100k
# customers times SCALE, 5 segments) and date_dim (every day of 1992-1998), plain
# tables on the coordinator, analyzed.
#
# The query (STAR):
#   SELECT c_segment, d_year, count(*), sum(l_extendedprice)
#   FROM orders JOIN lineitem ON l_orderkey = o_orderkey
#        JOIN cust_dim ON c_custkey = o_custkey
#        JOIN date_dim ON d_date = o_orderdate
#   WHERE d_quarter = 'Q1' GROUP BY 1, 2 ORDER BY 1, 2
# colojoin runs it as one scan: both dimensions broadcast from the
# coordinator into every node's session, each task joins and partially
# aggregates its partition class, the coordinator combines.
#
# Configurations, timed interleaved, REPS times each after one untimed run:
#   colojoin     colojoin on (its defaults)
#   native_pwa   colojoin.enable off; enable_partitionwise_join and
#                enable_partitionwise_aggregate on; async_capable servers
#   native_pwj   the same without partitionwise aggregation
# "native best" is the faster of the two natives.  Every configuration's
# answer must be the same (the script stops otherwise).
#
# Settings: SCALE (default 1), REPS (default 5), CJ_PORT (default 22732),
# CJ_CLUSTER_DIR (default /tmp/cj-bench-star), BENCH_SKIP_BUILD=1,
# PG_CONFIG.  Run as root; the servers run as user postgres and are stopped
# on exit.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
SCALE=${SCALE:-1}
REPS=${REPS:-5}
export CJ_PORT=${CJ_PORT:-22732}
export CJ_CLUSTER_DIR=${CJ_CLUSTER_DIR:-/tmp/cj-bench-star}
. "$BENCH/bench_common.sh"
STAMP=$(date +%Y%m%d-%H%M%S)
REPORT="$BENCH/results/star-$STAMP.md"
mkdir -p "$BENCH/results"
N_ORDERS=$(awk -v s="$SCALE" 'BEGIN { printf "%d", 1000000 * s }')
N_CUST=$(awk -v s="$SCALE" 'BEGIN { n = int(100000 * s); if (n < 100) n = 100; printf "%d", n }')
[ "$N_ORDERS" -ge 1000 ] || { echo "star.sh: SCALE=$SCALE is too small" >&2; exit 2; }


bench_fresh_cluster

say "schema and data (SCALE=$SCALE: $N_ORDERS orders, 4 lineitems each), loaded through colojoin"
{
	echo "CREATE EXTENSION colojoin CASCADE;"
	bench_servers
	cat <<SQL
CREATE TABLE orders (o_orderkey int NOT NULL, o_custkey int, o_orderpriority text,
	o_orderdate date) PARTITION BY HASH (o_orderkey);
SELECT colojoin.create_shards('orders', ARRAY['n1', 'n2', 'n3', 'n4'], 16);
CREATE TABLE lineitem (l_orderkey int NOT NULL, l_linenumber int, l_quantity numeric(12,2),
	l_extendedprice numeric(12,2), l_shipdate date) PARTITION BY HASH (l_orderkey);
SELECT colojoin.create_shards('lineitem', NULL, colocate_with => 'orders');
INSERT INTO orders SELECT g, 1 + (g::bigint * 7919) % $N_CUST,
	(ARRAY['1-URGENT', '2-HIGH', '3-MEDIUM', '4-NOT SPECIFIED', '5-LOW'])[1 + g % 5],
	DATE '1992-01-01' + (g % 2400) FROM generate_series(1, $N_ORDERS) g;
INSERT INTO lineitem SELECT o, n, n, (o % 997) + n * 0.25, DATE '1992-01-02' + ((o + n) % 2400)
FROM generate_series(1, $N_ORDERS) o, generate_series(1, 4) n;
CREATE TABLE cust_dim (c_custkey int PRIMARY KEY, c_segment text);
INSERT INTO cust_dim SELECT g, (ARRAY['AUTOMOBILE', 'BUILDING', 'FURNITURE', 'HOUSEHOLD', 'MACHINERY'])[1 + g % 5]
FROM generate_series(1, $N_CUST) g;
CREATE TABLE date_dim (d_date date PRIMARY KEY, d_year int, d_quarter text);
INSERT INTO date_dim SELECT d, extract(year FROM d), 'Q' || extract(quarter FROM d)
FROM generate_series(DATE '1992-01-01', DATE '1998-12-31', interval '1 day') d;
ANALYZE cust_dim, date_dim;
SQL
	# async appends for the native plans (colojoin does not read it)
	for i in 1 2 3 4; do
		echo "ALTER SERVER n$i OPTIONS (ADD async_capable 'true');"
	done
} | q >/dev/null

# the nodes' tables as autovacuum would leave them; the coordinator's
# foreign tables stay unanalyzed
for i in 1 2 3 4; do
	qn "$i" -c "VACUUM ANALYZE" >/dev/null
done

STAR="SELECT c_segment, d_year, count(*), sum(l_extendedprice)
FROM orders JOIN lineitem ON l_orderkey = o_orderkey
	JOIN cust_dim ON c_custkey = o_custkey
	JOIN date_dim ON d_date = o_orderdate
WHERE d_quarter = 'Q1' GROUP BY 1, 2 ORDER BY 1, 2"

CONFIGS="colojoin native_pwa native_pwj"
cfg_sql() {
	case $1 in
		colojoin) echo "SET colojoin.enable = on;" ;;
		native_pwa) echo "SET colojoin.enable = off; SET enable_partitionwise_join = on; SET enable_partitionwise_aggregate = on;" ;;
		native_pwj) echo "SET colojoin.enable = off; SET enable_partitionwise_join = on; SET enable_partitionwise_aggregate = off;" ;;
	esac
}
time_one() {
	local t0 t1
	t0=$(date +%s.%N)
	printf '%s\n%s;\n' "$(cfg_sql "$1")" "$STAR" | q >/dev/null
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}

say "checks: the same answer in every configuration, and colojoin's plan"
answer() { printf '%s\n%s;\n' "$(cfg_sql "$1")" "$STAR" | q -At | md5sum; }
reference=$(answer colojoin)
for cfg in $CONFIGS; do
	[ "$(answer "$cfg")" = "$reference" ] || { echo "star.sh: the answer of $cfg differs from colojoin's" >&2; exit 1; }
done
printf '%s\nEXPLAIN (COSTS OFF) %s;\n' "$(cfg_sql colojoin)" "$STAR" | q | grep -v 'Remote SQL'
scans=$(printf '%s\nEXPLAIN (COSTS OFF) %s;\n' "$(cfg_sql colojoin)" "$STAR" | q -At | grep -c 'Custom Scan (ColocatedJoin)' || true)
[ "$scans" = 1 ] || echo "star.sh: warning: colojoin's plan has $scans ColocatedJoin scans, not one" >&2

say "timed runs (REPS=$REPS, interleaved)"
declare -A runs T
for cfg in $CONFIGS; do
	time_one "$cfg" >/dev/null
done
for r in $(seq 1 "$REPS"); do
	for cfg in $CONFIGS; do
		runs[$cfg]+="$(time_one "$cfg") "
	done
done
for cfg in $CONFIGS; do
	T[$cfg]=$(printf '%s\n' ${runs[$cfg]} | median)
	echo "$cfg: ${runs[$cfg]}-> median ${T[$cfg]} s"
done
best=native_pwa
awk -v a="${T[native_pwj]}" -v b="${T[native_pwa]}" 'BEGIN { exit !(a < b) }' && best=native_pwj

{
	echo "# colojoin star query, $(date -u +%Y-%m-%dT%H:%MZ), SCALE=$SCALE, REPS=$REPS (medians, seconds)"
	echo
	echo "| query | colojoin | native, partitionwise join + aggregate | native, partitionwise join | native best / colojoin |"
	echo "|---|---|---|---|---|"
	echo "| STAR orders x lineitem x cust_dim x date_dim, by segment and year | ${T[colojoin]} | ${T[native_pwa]} | ${T[native_pwj]} | $(ratio "${T[$best]}" "${T[colojoin]}")x |"
	echo
	echo "Native best: $best (async_capable servers, no use_remote_estimate, foreign tables not analyzed)."
	echo
	echo "Command: \`SCALE=$SCALE REPS=$REPS bench/star.sh\`"
} | tee "$REPORT"
