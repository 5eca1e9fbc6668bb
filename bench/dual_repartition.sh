#!/bin/bash
# bench/dual_repartition.sh -- a join on a column neither side is
# partitioned by, `orders a JOIN orders b ON a.o_custkey = b.o_custkey`
# (orders hash partitioned 16 ways on o_orderkey, 4 partitions on each of 4
# nodes), with an aggregate on top, three ways on the same cluster and data:
#
#   dual       colojoin, both sides repartitioned by o_custkey
#              (/*+ Redistribute(a b) */): each row moves once
#   broadcast  colojoin, side b copied whole to every node
#              (/*+ BroadcastJoin(b) */): b's rows move once per node
#   native     PostgreSQL + postgres_fdw (colojoin.enable = off): both sides
#              pulled to the coordinator and joined there
#
# Prints a table of medians and ratios (broadcast / dual, native / dual:
# above 1, dual repartition is faster) and writes it to
# bench/results/dual-repartition-<timestamp>.md.  It fails when a
# configuration's plan is not the one it names or its answers differ.
#
#   bench/dual_repartition.sh                       SCALE=1: 1M orders, 100k customers
#   SCALE=0.01 REPS=1 bench/dual_repartition.sh     a quick check
#
# The queries:
#   CNT  SELECT count(*) FROM orders a JOIN orders b ON a.o_custkey = b.o_custkey
#   GRP  SELECT a.o_orderstatus, count(*), sum(b.o_totalprice) FROM the same
#        join GROUP BY 1
#
# Settings: SCALE (default 1), REPS (default 3), CJ_PORT (default 22732),
# CJ_CLUSTER_DIR (default /tmp/cj-bench-dual), BENCH_SKIP_BUILD=1.
# Run as root; the servers run as user postgres and are stopped on exit.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
SCALE=${SCALE:-1}
REPS=${REPS:-3}
export CJ_PORT=${CJ_PORT:-22732}
export CJ_CLUSTER_DIR=${CJ_CLUSTER_DIR:-/tmp/cj-bench-dual}
. "$BENCH/bench_common.sh"
STAMP=$(date +%Y%m%d-%H%M%S)
REPORT="$BENCH/results/dual-repartition-$STAMP.md"
mkdir -p "$BENCH/results"
N_ORDERS=$(awk -v s="$SCALE" 'BEGIN { printf "%d", 1000000 * s }')
N_CUST=$(awk -v s="$SCALE" 'BEGIN { n = int(100000 * s); if (n < 10) n = 10; printf "%d", n }')


bench_fresh_cluster

say "schema and data (SCALE=$SCALE: $N_ORDERS orders of $N_CUST customers), loaded through colojoin"
{
	echo "CREATE EXTENSION colojoin CASCADE;"
	bench_servers
	cat <<SQL
CREATE TABLE orders (o_orderkey bigint NOT NULL, o_custkey int, o_orderstatus char(1),
	o_totalprice numeric(15,2), o_orderdate date) PARTITION BY HASH (o_orderkey);
SELECT colojoin.create_shards('orders', ARRAY['n1', 'n2', 'n3', 'n4'], 16);
-- customers spread by a multiplicative hash, so that each has about the
-- same number of orders, none of them next to each other
INSERT INTO orders SELECT g, 1 + (g::bigint * 7919) % $N_CUST, (ARRAY['F', 'O', 'P'])[1 + g % 3],
	(g % 100000) * 1.25, DATE '1992-01-01' + (g % 2400)
FROM generate_series(1, $N_ORDERS) g;
SQL
} | q >/dev/null
for i in 1 2 3 4; do
	qn "$i" -c "VACUUM ANALYZE" >/dev/null
done
q -c "ANALYZE orders" >/dev/null

JOIN="FROM orders a JOIN orders b ON a.o_custkey = b.o_custkey"
declare -A QUERY=(
	[CNT]="SELECT count(*) $JOIN"
	[GRP]="SELECT a.o_orderstatus, count(*), sum(b.o_totalprice) $JOIN GROUP BY 1 ORDER BY 1"
)
CONFIGS="dual broadcast native"

# the statement of query $2 in configuration $1
stmt() {
	case $1 in
		dual) echo "/*+ Redistribute(a b) */ ${QUERY[$2]}" ;;
		broadcast) echo "/*+ BroadcastJoin(b) */ ${QUERY[$2]}" ;;
		native) echo "SET colojoin.enable = off; ${QUERY[$2]}" ;;
	esac
}

# what the plan of each configuration must say
check_plan() {
	local cfg=$1 name=$2 plan
	plan=$(stmt "$cfg" "$name" | sed 's/^\(SET [^;]*; \)\?/&EXPLAIN (COSTS OFF) /' | q -A -t)
	case $cfg in
		dual) grep -q 'Strategy: .*dual repartition of a' <<<"$plan" ;;
		broadcast) grep -q 'Strategy: .*b broadcast to the nodes of a' <<<"$plan" ;;
		native) ! grep -q 'ColocatedJoin' <<<"$plan" ;;
	esac || { echo "dual_repartition.sh: the $cfg plan of $name is not what it should be:" >&2; echo "$plan" >&2; exit 1; }
	grep 'Strategy:' <<<"$plan" | sed "s/^ */  $name $cfg: /" || echo "  $name $cfg: PostgreSQL's plan"
}

# seconds of one run of query $2 in configuration $1
time_one() {
	local t0 t1
	t0=$(date +%s.%N)
	stmt "$1" "$2" | q >/dev/null
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}

say "plans"
for name in CNT GRP; do
	for cfg in $CONFIGS; do
		check_plan "$cfg" "$name"
	done
done

declare -A T
for name in CNT GRP; do
	say "$name: ${QUERY[$name]} ($REPS runs each, interleaved)"
	declare -A runs=()
	ref=""
	for cfg in $CONFIGS; do
		# one untimed run: warm caches, and the answer every configuration must give
		out=$(stmt "$cfg" "$name" | q -A -t)
		if [ -z "$ref" ]; then
			ref=$out
		elif [ "$out" != "$ref" ]; then
			echo "dual_repartition.sh: $cfg answers $name otherwise than dual:" >&2
			diff <(echo "$ref") <(echo "$out") >&2 || true
			exit 1
		fi
		runs[$cfg]=""
	done
	for ((r = 0; r < REPS; r++)); do
		for cfg in $CONFIGS; do
			runs[$cfg]+="$(time_one "$cfg" "$name") "
		done
	done
	for cfg in $CONFIGS; do
		T[$name,$cfg]=$(echo "${runs[$cfg]}" | tr ' ' '\n' | grep . | median)
		echo "  $cfg: ${runs[$cfg]}-> median ${T[$name,$cfg]} s"
	done
done

{
	echo "# dual repartition, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
	echo
	echo "SCALE=$SCALE ($N_ORDERS orders, $N_CUST customers, 16 partitions on 4 nodes), REPS=$REPS, median seconds (whole psql run)."
	echo "Ratios above 1: dual repartition is faster."
	echo
	echo "| query | dual | broadcast | native | broadcast / dual | native / dual |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: |"
	for name in CNT GRP; do
		echo "| $name | ${T[$name,dual]} | ${T[$name,broadcast]} | ${T[$name,native]} |" \
			"$(ratio "${T[$name,broadcast]}" "${T[$name,dual]}") | $(ratio "${T[$name,native]}" "${T[$name,dual]}") |"
	done
} | tee "$REPORT"
echo
echo "written to $REPORT"
