#!/bin/bash
# bench/asof.sh -- the ASOF idiom (the closest earlier and the closest later
# line item of each order, two LEFT JOIN LATERAL ... ORDER BY ... LIMIT 1
# subqueries correlated on the partition key) through colojoin against
# native PostgreSQL on the same cluster and data, in one run: a coordinator
# and 4 nodes, orders and lineitem hash partitioned 16 ways (4 partitions
# per node, colocated), an index on (l_orderkey, l_shipdate) of every
# lineitem partition on its node, foreign tables nobody ANALYZEd, servers
# without use_remote_estimate.  Prints the medians and the ratio and writes
# them to bench/results/asof-<timestamp>.md.
#
#   bench/asof.sh                          SCALE=1: 1M orders, 4M lineitem
#   SCALE=0.01 REPS=1 bench/asof.sh        a quick check that it works
#
# The query (one month of orders, about 13,000 at SCALE 1):
#   SELECT o.o_orderkey, o.o_orderdate, b.l_shipdate, a.l_shipdate
#   FROM orders o
#   LEFT JOIN LATERAL (SELECT l_shipdate FROM lineitem l
#       WHERE l.l_orderkey = o.o_orderkey AND l.l_shipdate <= o.o_orderdate
#       ORDER BY l.l_shipdate DESC LIMIT 1) b ON true
#   LEFT JOIN LATERAL (SELECT l_shipdate FROM lineitem l
#       WHERE l.l_orderkey = o.o_orderkey AND l.l_shipdate > o.o_orderdate
#       ORDER BY l.l_shipdate LIMIT 1) a ON true
#   WHERE o.o_orderdate BETWEEN '1995-03-01' AND '1995-03-31'
# read to the end (count and a digest of every row, which must be the same
# both ways).  Configurations: colojoin (one ColocatedJoin: each task runs
# both subqueries on its node); native (colojoin.enable = off,
# enable_partitionwise_join on, servers async_capable: a nested loop that
# sends each subquery to a node once per order).  REPS runs of each,
# interleaved, after one untimed run of each.
#
# Settings: SCALE (default 1), REPS (default 3), CJ_PORT (default 22652),
# CJ_CLUSTER_DIR (default /tmp/cj-bench-asof), PG_CONFIG, BENCH_SKIP_BUILD=1.
# Run as root; the servers run as user postgres and are stopped on exit.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
SCALE=${SCALE:-1}
REPS=${REPS:-3}
export CJ_PORT=${CJ_PORT:-22652}
export CJ_CLUSTER_DIR=${CJ_CLUSTER_DIR:-/tmp/cj-bench-asof}
. "$BENCH/bench_common.sh"
STAMP=$(date +%Y%m%d-%H%M%S)
REPORT="$BENCH/results/asof-$STAMP.md"
mkdir -p "$BENCH/results"
N_ORDERS=$(awk -v s="$SCALE" 'BEGIN { printf "%d", 1000000 * s }')

qn() { local p=$1; shift; runuser -u postgres -- "$PSQL" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$p" -d bench "$@"; }

bench_fresh_cluster

say "schema and data (SCALE=$SCALE: $N_ORDERS orders, 4 line items each)"
{
	echo "CREATE EXTENSION colojoin CASCADE;"
	bench_servers "async_capable 'true'"
	cat <<SQL
CREATE TABLE orders (o_orderkey int NOT NULL, o_custkey int, o_totalprice numeric(12,2),
	o_orderdate date) PARTITION BY HASH (o_orderkey);
SELECT colojoin.create_shards('orders', ARRAY['n1', 'n2', 'n3', 'n4'], 16);
CREATE TABLE lineitem (l_orderkey int NOT NULL, l_linenumber int, l_quantity numeric(12,2),
	l_extendedprice numeric(12,2), l_shipdate date) PARTITION BY HASH (l_orderkey);
SELECT colojoin.create_shards('lineitem', NULL, colocate_with => 'orders');
INSERT INTO orders SELECT g, g % 100000, (g % 1000) * 1.5,
	DATE '1992-01-01' + (g % 2400) FROM generate_series(1, $N_ORDERS) g;
INSERT INTO lineitem SELECT o, n, n, (o % 997) + n * 0.25,
	DATE '1992-01-01' + ((o + n * 37) % 2400 + n * 11 - 60)
FROM generate_series(1, $N_ORDERS) o, generate_series(1, 4) n;
SQL
} | q >/dev/null

# an index for the subqueries on every lineitem partition, then the nodes'
# tables as autovacuum would leave them; the coordinator's foreign tables
# stay unanalyzed
for i in 1 2 3 4; do
	qn $((CJ_PORT + i)) <<'SQL' >/dev/null
DO $$
DECLARE
	t regclass;
BEGIN
	FOR t IN SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			 WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname LIKE 'lineitem%' LOOP
		EXECUTE format('CREATE INDEX ON %s (l_orderkey, l_shipdate)', t);
	END LOOP;
END
$$;
VACUUM ANALYZE;
SQL
done

ASOF="SELECT o.o_orderkey, o.o_orderdate, b.l_shipdate AS shipped_before, a.l_shipdate AS shipped_after
FROM orders o
LEFT JOIN LATERAL (SELECT l_shipdate FROM lineitem l
	WHERE l.l_orderkey = o.o_orderkey AND l.l_shipdate <= o.o_orderdate
	ORDER BY l.l_shipdate DESC LIMIT 1) b ON true
LEFT JOIN LATERAL (SELECT l_shipdate FROM lineitem l
	WHERE l.l_orderkey = o.o_orderkey AND l.l_shipdate > o.o_orderdate
	ORDER BY l.l_shipdate LIMIT 1) a ON true
WHERE o.o_orderdate BETWEEN '1995-03-01' AND '1995-03-31'"
# every row read, one line out
DIGEST="SELECT count(*), md5(string_agg(x::text, ',' ORDER BY x.o_orderkey)) FROM ($ASOF) x"

cfg_sql() {
	case $1 in
		colojoin) echo "SET colojoin.enable = on;" ;;
		native) echo "SET colojoin.enable = off; SET enable_partitionwise_join = on; SET enable_partitionwise_aggregate = on;" ;;
	esac
}

# seconds of one run of the query in configuration $1
time_one() {
	local t0 t1
	t0=$(date +%s.%N)
	printf '%s\n%s;\n' "$(cfg_sql "$1")" "$DIGEST" | q >/dev/null
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}

say "checks: one ColocatedJoin runs both subqueries; the same rows both ways"
printf '%s\nEXPLAIN (COSTS OFF) %s;\n' "$(cfg_sql colojoin)" "$ASOF" | q | head -3
printf '%s\nEXPLAIN (COSTS OFF) %s;\n' "$(cfg_sql colojoin)" "$ASOF" | q | grep -q 'with LATERAL b .*with LATERAL a' ||
	{ echo "the ASOF query is not one ColocatedJoin" >&2; exit 1; }
printf '%s\nEXPLAIN (COSTS OFF) %s;\n' "$(cfg_sql native)" "$ASOF" | q | head -8
R_CJ=$(printf '%s\n%s;\n' "$(cfg_sql colojoin)" "$DIGEST" | q -At | tail -1)
R_NATIVE=$(printf '%s\n%s;\n' "$(cfg_sql native)" "$DIGEST" | q -At | tail -1)
echo "colojoin: $R_CJ"
echo "native:   $R_NATIVE"
[ "$R_CJ" = "$R_NATIVE" ] || { echo "the results differ" >&2; exit 1; }

say "timed runs (REPS=$REPS, interleaved)"
declare -A runs
for cfg in colojoin native; do
	time_one "$cfg" >/dev/null
done
for r in $(seq 1 "$REPS"); do
	for cfg in colojoin native; do
		runs[$cfg]+="$(time_one "$cfg") "
	done
done
declare -A T
for cfg in colojoin native; do
	T[$cfg]=$(printf '%s\n' ${runs[$cfg]} | median)
	echo "$cfg: ${runs[$cfg]}-> median ${T[$cfg]} s"
done

ratio=$(awk -v a="${T[native]}" -v b="${T[colojoin]}" 'BEGIN { printf "%.2f", a / b }')
{
	echo "# ASOF (two LEFT JOIN LATERAL ... LIMIT 1), $(date -u +%Y-%m-%dT%H:%MZ), SCALE=$SCALE, REPS=$REPS (medians, seconds)"
	echo
	echo "| query | rows | colojoin | native (postgres_fdw, partitionwise join, async append) | ratio native / colojoin |"
	echo "|---|---|---|---|---|"
	echo "| closest earlier and later line item of one month's orders | ${R_CJ%%|*} | ${T[colojoin]} | ${T[native]} | $ratio |"
	echo
	echo "Command: \`SCALE=$SCALE REPS=$REPS bench/asof.sh\`"
} | tee "$REPORT"
