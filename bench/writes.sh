#!/bin/bash
# bench/writes.sh -- colojoin's write path against native PostgreSQL
# (postgres_fdw, with and without batch_size 1000) on the same cluster and
# data, in one run: a coordinator and 4 nodes, orders and lineitem hash
# partitioned 16 ways (4 partitions per node), foreign tables nobody
# ANALYZEd, servers without use_remote_estimate.  Prints a table of medians
# and ratios and writes it to bench/results/writes-<timestamp>.md.
#
#   bench/writes.sh                  SCALE=1: 1M orders, 4M lineitem
#   SCALE=0.05 REPS=1 bench/writes.sh   a quick check
#
# The statements (bench/README.md, "Writes"):
#   INS   INSERT INTO rollup SELECT o_orderkey, sum(l_extendedprice) FROM
#         orders JOIN lineitem ON l_orderkey = o_orderkey
#         WHERE o_orderdate < '1993-01-01' GROUP BY 1   (rollup colocated)
#   SEL   the SELECT of INS alone (colojoin), what INS cannot beat
#   UPD   UPDATE orders SET o_totalprice = o_totalprice + l_tax FROM lineitem
#         WHERE l_orderkey = o_orderkey AND l_linenumber = 1
#         AND o_orderdate < '1993-01-01'
#   COPY  COPY lineitem_copy FROM a file of 1M lineitem rows (SCALE 1)
# Each statement runs in a transaction that is rolled back (UPD, INS) or on
# an emptied table (COPY), REPS times per configuration, interleaved.
# Configurations: colojoin; colojoin reading and postgres_fdw writing
# (colojoin.enable_writes = off), with and without batch_size 1000; native
# PostgreSQL (colojoin.enable = off, partitionwise join and aggregation
# on), with and without batch_size 1000; PostgreSQL's defaults.
#
# Settings: SCALE (default 1), REPS (default 3), CJ_PORT (default 22632),
# CJ_CLUSTER_DIR (default /tmp/cj-bench-writes), BENCH_SKIP_BUILD=1.
# Run as root; the servers run as user postgres and are stopped on exit.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
SCALE=${SCALE:-1}
REPS=${REPS:-3}
export CJ_PORT=${CJ_PORT:-22632}
export CJ_CLUSTER_DIR=${CJ_CLUSTER_DIR:-/tmp/cj-bench-writes}
. "$BENCH/bench_common.sh"
STAMP=$(date +%Y%m%d-%H%M%S)
REPORT="$BENCH/results/writes-$STAMP.md"
mkdir -p "$BENCH/results"
N_ORDERS=$(awk -v s="$SCALE" 'BEGIN { printf "%d", 1000000 * s }')
N_COPY=$(awk -v s="$SCALE" 'BEGIN { printf "%d", 1000000 * s }')


bench_fresh_cluster

say "schema and data (SCALE=$SCALE: $N_ORDERS orders, ~4 lineitems each), loaded through colojoin"
{
	echo "CREATE EXTENSION colojoin CASCADE;"
	bench_servers
	cat <<SQL
CREATE TABLE orders (o_orderkey int NOT NULL, o_custkey int, o_totalprice numeric(12,2),
	o_orderdate date) PARTITION BY HASH (o_orderkey);
SELECT colojoin.create_shards('orders', ARRAY['n1', 'n2', 'n3', 'n4'], 16);
CREATE TABLE lineitem (l_orderkey int NOT NULL, l_linenumber int, l_quantity numeric(12,2),
	l_extendedprice numeric(12,2), l_tax numeric(12,2), l_shipdate date) PARTITION BY HASH (l_orderkey);
SELECT colojoin.create_shards('lineitem', NULL, colocate_with => 'orders');
CREATE TABLE rollup (r_orderkey int NOT NULL, r_revenue numeric) PARTITION BY HASH (r_orderkey);
SELECT colojoin.create_shards('rollup', NULL, colocate_with => 'orders');
CREATE TABLE lineitem_copy (LIKE lineitem) PARTITION BY HASH (l_orderkey);
SELECT colojoin.create_shards('lineitem_copy', NULL, colocate_with => 'orders');
INSERT INTO orders SELECT g, g % 100000, (g % 1000) * 1.5,
	DATE '1992-01-01' + (g % 2400) FROM generate_series(1, $N_ORDERS) g;
INSERT INTO lineitem SELECT o, n, n, (o % 997) + n * 0.25, 0.01 * n,
	DATE '1992-01-02' + ((o + n) % 2400)
FROM generate_series(1, $N_ORDERS) o, generate_series(1, 4) n;
COPY (SELECT o, n, n, (o % 997) + n * 0.25, 0.01 * n, DATE '1992-01-02' + ((o + n) % 2400)
	FROM generate_series(1, $((N_COPY / 4))) o, generate_series(1, 4) n) TO '$CJ_CLUSTER_DIR/lineitem.copy';
SQL
} | q >/dev/null

# the nodes' tables as autovacuum would leave them (hint bits, visibility
# map, statistics of the nodes' own tables); the coordinator's foreign
# tables stay unanalyzed
for i in 1 2 3 4; do
	qn "$i" -c "VACUUM ANALYZE" >/dev/null
done

INS="INSERT INTO rollup SELECT o_orderkey, sum(l_extendedprice) FROM orders JOIN lineitem ON l_orderkey = o_orderkey WHERE o_orderdate < '1993-01-01' GROUP BY 1"
SEL="SELECT count(*), sum(r) FROM (SELECT o_orderkey, sum(l_extendedprice) AS r FROM orders JOIN lineitem ON l_orderkey = o_orderkey WHERE o_orderdate < '1993-01-01' GROUP BY 1) x"
UPD="UPDATE orders SET o_totalprice = o_totalprice + l_tax FROM lineitem WHERE l_orderkey = o_orderkey AND l_linenumber = 1 AND o_orderdate < '1993-01-01'"
CPY="COPY lineitem_copy FROM '$CJ_CLUSTER_DIR/lineitem.copy'"

# settings of each configuration, sent before the statement
cfg_sql() {
	case $1 in
		colojoin) echo "SET colojoin.enable = on;" ;;
		fdw_writes | fdw_writes_b1000) echo "SET colojoin.enable_writes = off;" ;;
		pg_default) echo "SET colojoin.enable = off;" ;;
		native) echo "SET colojoin.enable = off; SET enable_partitionwise_join = on; SET enable_partitionwise_aggregate = on;" ;;
		native_b1000) echo "SET colojoin.enable = off; SET enable_partitionwise_join = on; SET enable_partitionwise_aggregate = on;" ;;
	esac
}
batch_size() {
	local i
	for i in 1 2 3 4; do
		if [ "$1" = off ]; then
			q -c "ALTER SERVER n$i OPTIONS (DROP batch_size)" 2>/dev/null || true
		else
			q -c "ALTER SERVER n$i OPTIONS (ADD batch_size '$1')"
		fi
	done
}

# seconds of one run of statement $2 in configuration $1 (rolled back)
time_one() {
	local cfg=$1 stmt=$2 wrap=$3 t0 t1
	case $cfg in *_b1000) batch_size 1000 ;; esac
	if [ "$wrap" = copy ]; then
		q -c "TRUNCATE lineitem_copy" >/dev/null
	fi
	t0=$(date +%s.%N)
	if [ "$wrap" = rollback ]; then
		printf '%s\nBEGIN;\n%s;\nROLLBACK;\n' "$(cfg_sql "$cfg")" "$stmt" | q >/dev/null
	else
		printf '%s\n%s;\n' "$(cfg_sql "$cfg")" "$stmt" | q >/dev/null
	fi
	t1=$(date +%s.%N)
	case $cfg in *_b1000) batch_size off ;; esac
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}

declare -A T
run() {
	local name=$1 stmt=$2 wrap=$3
	shift 3
	local cfg r
	declare -A runs
	# one untimed run of each, for warm caches
	for cfg in "$@"; do
		time_one "$cfg" "$stmt" "$wrap" >/dev/null
	done
	for r in $(seq 1 "$REPS"); do
		for cfg in "$@"; do
			runs[$cfg]+="$(time_one "$cfg" "$stmt" "$wrap") "
		done
	done
	for cfg in "$@"; do
		T[$name.$cfg]=$(printf '%s\n' ${runs[$cfg]} | median)
		echo "$name $cfg: ${runs[$cfg]}-> median ${T[$name.$cfg]} s"
	done
}

say "checks: the same results in every configuration"
rows() { printf '%s\nBEGIN;\n%s;\nSELECT count(*), sum(r_revenue) FROM rollup;\nROLLBACK;\n' "$(cfg_sql "$1")" "$INS" | q -At | tail -1; }
[ "$(rows colojoin)" = "$(rows native)" ] || { echo "INS differs between colojoin and native" >&2; exit 1; }
upd() { printf '%s\nBEGIN;\n%s;\nSELECT sum(o_totalprice) FROM orders;\nROLLBACK;\n' "$(cfg_sql "$1")" "$UPD" | q -At | tail -1; }
[ "$(upd colojoin)" = "$(upd native)" ] || { echo "UPD differs between colojoin and native" >&2; exit 1; }
printf '%s\n' "EXPLAIN (COSTS OFF) $INS" | q | head -3
printf '%s\n' "EXPLAIN (COSTS OFF) $UPD" | q | head -3

say "timed runs (REPS=$REPS, interleaved)"
run SEL "$SEL" plain colojoin
run INS "$INS" rollback colojoin fdw_writes fdw_writes_b1000 native native_b1000
run UPD "$UPD" rollback colojoin pg_default native
run COPY "$CPY" copy colojoin native native_b1000

{
	echo "# colojoin writes, $(date -u +%Y-%m-%dT%H:%MZ), SCALE=$SCALE, REPS=$REPS (medians, seconds)"
	echo
	echo "| statement | colojoin | colojoin reads, postgres_fdw writes | the same, batch_size 1000 | native (postgres_fdw, partitionwise) | native, batch_size 1000 | PostgreSQL defaults |"
	echo "|---|---|---|---|---|---|---|"
	echo "| INS INSERT ... SELECT colocated | ${T[INS.colojoin]} | ${T[INS.fdw_writes]} | ${T[INS.fdw_writes_b1000]} | ${T[INS.native]} | ${T[INS.native_b1000]} | - |"
	echo "| UPD UPDATE ... FROM colocated | ${T[UPD.colojoin]} | - | - | ${T[UPD.native]} | - | ${T[UPD.pg_default]} |"
	echo "| COPY $N_COPY lineitem rows | ${T[COPY.colojoin]} | - | - | ${T[COPY.native]} | ${T[COPY.native_b1000]} | - |"
	echo
	echo "Ratios (other / colojoin):"
	echo
	echo "- INS: $(ratio "${T[INS.fdw_writes]}" "${T[INS.colojoin]}")x postgres_fdw's default writes, $(ratio "${T[INS.fdw_writes_b1000]}" "${T[INS.colojoin]}")x with batch_size 1000, $(ratio "${T[INS.native]}" "${T[INS.colojoin]}")x native; colojoin's INS is $(ratio "${T[INS.colojoin]}" "${T[SEL.colojoin]}")x its SELECT alone (${T[SEL.colojoin]} s)"
	echo "- UPD: $(ratio "${T[UPD.native]}" "${T[UPD.colojoin]}")x native (partitionwise), $(ratio "${T[UPD.pg_default]}" "${T[UPD.colojoin]}")x PostgreSQL defaults"
	echo "- COPY: $(ratio "${T[COPY.native_b1000]}" "${T[COPY.colojoin]}")x postgres_fdw with batch_size 1000, $(ratio "${T[COPY.native]}" "${T[COPY.colojoin]}")x without"
	echo
	echo "Command: \`SCALE=$SCALE REPS=$REPS bench/writes.sh\`"
} | tee "$REPORT"
