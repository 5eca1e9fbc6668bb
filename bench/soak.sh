#!/bin/bash
# bench/soak.sh -- a soak under load: CLIENTS pgbench sessions (default 16)
# run mixed colojoin joins for DURATION seconds (default 300) against a
# coordinator and 4 nodes; reports throughput, failed transactions, the
# coordinator backends' memory (their memory contexts' grand total, from
# pg_log_backend_memory_contexts, early and at the end: it must stay flat)
# and the nodes' connection counts during and after the run.  Writes
# bench/results/soak-<timestamp>.md.
#
#   bench/soak.sh                        16 clients x 300 s, SCALE=0.1
#   CLIENTS=8 DURATION=30 bench/soak.sh  a quick check
#
# The mix (one pgbench script per statement, weighted): a colocated join
# aggregated over every partition, a point lookup joined on the key, a join
# grouped on the key with ORDER BY ... LIMIT, and a redistributed join.
# Settings: SCALE (default 0.1: 100k orders), CLIENTS, DURATION, CJ_PORT
# (default 22832), CJ_CLUSTER_DIR (default /tmp/cj-bench-soak),
# BENCH_SKIP_BUILD=1.  Run as root; servers run as postgres, stopped on exit.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
SCALE=${SCALE:-0.1}
CLIENTS=${CLIENTS:-16}
DURATION=${DURATION:-300}
export CJ_PORT=${CJ_PORT:-22832}
export CJ_CLUSTER_DIR=${CJ_CLUSTER_DIR:-/tmp/cj-bench-soak}
export CJ_NODES=4
export CJ_DB=bench
CLUSTER="$ROOT/test/cluster/cluster.sh"
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
BIN=$("$PG_CONFIG" --bindir)
STAMP=$(date +%Y%m%d-%H%M%S)
REPORT="$BENCH/results/soak-$STAMP.md"
WORK=$(mktemp -d /tmp/cj-soak.XXXXXX)
chmod 777 "$WORK"
N_ORDERS=$(awk -v s="$SCALE" 'BEGIN { printf "%d", 1000000 * s }')

q() { runuser -u postgres -- "$BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$CJ_PORT" -d bench "$@"; }
qn() { local i=$1; shift; runuser -u postgres -- "$BIN/psql" -X -q -At -h 127.0.0.1 -p $((CJ_PORT + i)) -d bench "$@"; }
say() { printf '\n=== %s\n' "$*"; }
cleanup() { "$CLUSTER" stop >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT

if [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
	make -C "$ROOT" -s PG_CONFIG="$PG_CONFIG" >/dev/null
	make -C "$ROOT" -s PG_CONFIG="$PG_CONFIG" install >/dev/null
fi
"$CLUSTER" destroy >/dev/null 2>&1 || true
"$CLUSTER" start >/dev/null
say "schema and data: $N_ORDERS orders, 4 lineitems each, hash 16 over 4 nodes"
{
	echo "CREATE EXTENSION colojoin CASCADE;"
	for i in 1 2 3 4; do
		echo "CREATE SERVER n$i FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', port '$((CJ_PORT + i))', dbname 'bench');"
		echo "CREATE USER MAPPING FOR CURRENT_USER SERVER n$i;"
	done
	cat <<SQL
CREATE TABLE orders (o_orderkey int NOT NULL, o_custkey int, o_totalprice numeric(12,2)) PARTITION BY HASH (o_orderkey);
SELECT colojoin.create_shards('orders', ARRAY['n1', 'n2', 'n3', 'n4'], 16);
CREATE TABLE lineitem (l_orderkey int NOT NULL, l_partkey int, l_extendedprice numeric(12,2)) PARTITION BY HASH (l_orderkey);
SELECT colojoin.create_shards('lineitem', NULL, colocate_with => 'orders');
CREATE TABLE part (p_partkey int NOT NULL, p_brand text) PARTITION BY HASH (p_partkey);
SELECT colojoin.create_shards('part', ARRAY['n1', 'n2', 'n3', 'n4'], 4);
INSERT INTO orders SELECT g, g % 5000, (g % 1000) * 1.5 FROM generate_series(1, $N_ORDERS) g;
INSERT INTO lineitem SELECT o, (o * n) % 2000, o % 997 + n FROM generate_series(1, $N_ORDERS) o, generate_series(1, 4) n;
INSERT INTO part SELECT g, 'Brand#' || (g % 25) FROM generate_series(1, 2000) g;
SQL
} | q >/dev/null
for i in 1 2 3 4; do qn "$i" -c "VACUUM ANALYZE" >/dev/null; done

cat >"$WORK/fanout.sql" <<'SQL'
SELECT count(*), sum(l_extendedprice) FROM orders JOIN lineitem ON l_orderkey = o_orderkey WHERE o_custkey < 50;
SQL
cat >"$WORK/point.sql" <<SQL
\set k random(1, $N_ORDERS)
SELECT o_totalprice, l_extendedprice FROM orders JOIN lineitem ON l_orderkey = o_orderkey WHERE o_orderkey = :k;
SQL
cat >"$WORK/topn.sql" <<'SQL'
SELECT o_orderkey, sum(l_extendedprice) AS s FROM orders JOIN lineitem ON l_orderkey = o_orderkey WHERE o_custkey = 7 GROUP BY 1 ORDER BY s DESC LIMIT 5;
SQL
cat >"$WORK/redist.sql" <<'SQL'
SELECT p_brand, count(*) FROM lineitem JOIN part ON l_partkey = p_partkey WHERE l_orderkey < 2000 GROUP BY 1 ORDER BY 2 DESC LIMIT 3;
SQL

node_conns() {
	local i out=""
	for i in 1 2 3 4; do
		out+="$(qn "$i" -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND datname = 'bench'") "
	done
	echo "$out"
}
# grand total of each pgbench backend's memory contexts, from the log
memory() {
	local tag=$1 pids pid
	pids=$(q -c "SELECT string_agg(pid::text, ' ') FROM pg_stat_activity WHERE application_name = 'pgbench'")
	: >"$WORK/mem_$tag"
	for pid in $pids; do
		q -c "SELECT pg_log_backend_memory_contexts($pid)" >/dev/null || true
	done
	sleep 2
	grep -h "Grand total" "$CJ_CLUSTER_DIR"/coordinator.log | tail -n "$(echo $pids | wc -w)" \
		| sed -E 's/.*Grand total: ([0-9]+) bytes.*/\1/' >"$WORK/mem_$tag"
	awk '{ s += $1; if ($1 > m) m = $1; n++ } END { if (n) printf "%d backends, mean %.0f kB, max %.0f kB", n, s / n / 1024, m / 1024; else print "none" }' "$WORK/mem_$tag"
}

BASE_CONNS=$(node_conns)
say "soak: $CLIENTS clients, $DURATION s"
runuser -u postgres -- "$BIN/pgbench" -n -h 127.0.0.1 -p "$CJ_PORT" -c "$CLIENTS" -j 2 -T "$DURATION" \
	--failures-detailed --max-tries=1 -P 30 \
	-f "$WORK/fanout.sql@2" -f "$WORK/point.sql@6" -f "$WORK/topn.sql@2" -f "$WORK/redist.sql@1" bench \
	>"$WORK/pgbench.out" 2>"$WORK/pgbench.err" &
PGB=$!
sleep $((DURATION < 60 ? DURATION / 4 : 30))
MEM_START=$(memory start)
CONNS_DURING=$(node_conns)
sleep $((DURATION < 60 ? DURATION / 2 : DURATION - 60))
MEM_END=$(memory end)
wait $PGB || true
sleep 2
CONNS_AFTER=$(node_conns)

TPS=$(grep -E '^tps' "$WORK/pgbench.out" | head -1 | sed -E 's/tps = ([0-9.]+).*/\1/')
TX=$(grep -E 'number of transactions actually processed' "$WORK/pgbench.out" | sed -E 's/.*: ([0-9]+).*/\1/')
FAILED=$(grep -E 'number of failed transactions' "$WORK/pgbench.out" | head -1 | sed -E 's/.*: ([0-9]+).*/\1/')
LAT=$(grep -E '^latency average' "$WORK/pgbench.out" | sed -E 's/latency average = //')
ERRS=$(grep -c "ERROR\|FATAL" "$WORK/pgbench.err" || true)
{
	echo "# colojoin soak, $(date -u +%Y-%m-%dT%H:%MZ): $CLIENTS clients x $DURATION s, SCALE=$SCALE"
	echo
	echo "| measure | value |"
	echo "|---|---|"
	echo "| transactions | ${TX:-?} (${TPS:-?} tps, latency ${LAT:-?}) |"
	echo "| failed transactions | ${FAILED:-0} (client errors logged: $ERRS) |"
	echo "| coordinator backends' memory, 30 s in | $MEM_START |"
	echo "| coordinator backends' memory, at the end | $MEM_END |"
	echo "| client connections per node (n1 n2 n3 n4): before / during / after | $BASE_CONNS / $CONNS_DURING / $CONNS_AFTER |"
	echo
	echo "Mix (weights): fan-out colocated join 2, point lookup join 6, grouped top-5 2, redistributed join 1."
	echo "Command: \`CLIENTS=$CLIENTS DURATION=$DURATION SCALE=$SCALE bench/soak.sh\`"
} | tee "$REPORT"
grep -E "ERROR|FATAL" "$WORK/pgbench.err" | head -5 || true
