#!/bin/bash
# bench/point_lookup.sh -- a warm point lookup through colojoin against the
# same SQL sent straight to the node that holds the key: what colojoin adds
# to a query that runs as one task (planning, pruning, the cursor, the
# rows' way back).  Prints the averages and the ratio, and writes them to
# bench/results/point-lookup-<timestamp>.md.
#
#   bench/point_lookup.sh                     SCALE=1: 1M orders, 4M lineitem
#   SCALE=0.01 ROUNDS=1 bench/point_lookup.sh a quick check that it works
#
# The cluster: a coordinator and 4 nodes, orders and lineitem hash 16 on the
# order key (colojoin.create_shards, 4 partitions per node, colocated),
# loaded through colojoin, primary keys on the nodes' tables; foreign tables
# nobody ANALYZEd, servers without use_remote_estimate.
#
# The lookup (one order and its line items, by key):
#   SELECT o.o_orderkey, o.o_orderdate, o.o_totalprice, l.l_linenumber,
#          l.l_quantity, l.l_extendedprice
#   FROM orders o JOIN lineitem l ON o.o_orderkey = l.l_orderkey
#   WHERE o.o_orderkey = :key
# The keys: 10,000 keys of one partition class (remainder 0), in a table
# cj_keys on the coordinator and on that class's node; a pgbench
# transaction picks a random i, reads key i from cj_keys (\gset), then runs
# the lookup.  The direct configuration runs, on the node, the SQL of
# colojoin's task for that class (EXPLAIN VERBOSE's, the key as a
# parameter).  Both use pgbench's simple protocol in one warm session; the
# time of the lookup statement is pgbench's per-statement average (-r).
# ROUNDS rounds (default 5), each running both for TX transactions
# (default 2000), alternately; medians of the rounds' averages.
#
# Settings: SCALE (default 1), ROUNDS, TX, CJ_PORT (default 22932),
# CJ_CLUSTER_DIR (default /tmp/cj-bench-point), BENCH_SKIP_BUILD=1,
# PG_CONFIG.  Run as root; the servers run as user postgres and are stopped
# on exit.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
SCALE=${SCALE:-1}
ROUNDS=${ROUNDS:-5}
TX=${TX:-2000}
export CJ_PORT=${CJ_PORT:-22932}
export CJ_CLUSTER_DIR=${CJ_CLUSTER_DIR:-/tmp/cj-bench-point}
. "$BENCH/bench_common.sh"
PGBENCH="$PG_BINDIR/pgbench"
STAMP=$(date +%Y%m%d-%H%M%S)
REPORT="$BENCH/results/point-lookup-$STAMP.md"
mkdir -p "$BENCH/results"
N_ORDERS=$(awk -v s="$SCALE" 'BEGIN { printf "%d", 1000000 * s }')
[ "$N_ORDERS" -ge 1000 ] || { echo "point_lookup.sh: SCALE=$SCALE is too small" >&2; exit 2; }

bench_fresh_cluster

say "schema and data (SCALE=$SCALE: $N_ORDERS orders, 4 line items each), loaded through colojoin"
{
	echo "CREATE EXTENSION colojoin CASCADE;"
	bench_servers
	cat <<SQL
CREATE TABLE orders (o_orderkey bigint NOT NULL, o_custkey int, o_orderdate date,
	o_totalprice numeric(15,2), o_comment text) PARTITION BY HASH (o_orderkey);
SELECT colojoin.create_shards('orders', ARRAY['n1', 'n2', 'n3', 'n4'], 16);
CREATE TABLE lineitem (l_orderkey bigint NOT NULL, l_linenumber int NOT NULL, l_quantity numeric(15,2),
	l_extendedprice numeric(15,2), l_shipdate date, l_comment text) PARTITION BY HASH (l_orderkey);
SELECT colojoin.create_shards('lineitem', NULL, colocate_with => 'orders');
INSERT INTO orders SELECT g, 1 + g % 100000, DATE '1992-01-01' + (g % 2400), (g % 100000) * 1.25,
	md5(g::text) FROM generate_series(1, $N_ORDERS) g;
INSERT INTO lineitem SELECT o, n, n, (o % 997) + n * 0.25, DATE '1992-01-02' + ((o + n) % 2400), md5((o * 8 + n)::text)
FROM generate_series(1, $N_ORDERS) o, generate_series(1, 4) n;
CREATE TABLE cj_keys (i int PRIMARY KEY, k bigint NOT NULL);
INSERT INTO cj_keys SELECT row_number() OVER (ORDER BY g), g FROM (
	SELECT g FROM generate_series(1, $N_ORDERS::bigint) g
	WHERE satisfies_hash_partition('orders'::regclass, 16, 0, g) ORDER BY g LIMIT 10000) s;
ANALYZE cj_keys;
SQL
} | q >/dev/null
nkeys=$(q -At -c "SELECT count(*) FROM cj_keys")
# primary keys on the nodes' tables (as users have), vacuumed and analyzed there
for i in 1 2 3 4; do
	qn "$i" <<'SQL' >/dev/null
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT relname FROM pg_class WHERE relkind = 'r' AND relname ~ '^(orders|lineitem)_p[0-9]+$' LOOP
		EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (%s)', r.relname,
					   CASE WHEN r.relname LIKE 'orders%' THEN 'o_orderkey' ELSE 'l_orderkey, l_linenumber' END);
	END LOOP;
END
$$;
VACUUM ANALYZE;
SQL
done

LOOKUP="SELECT o.o_orderkey, o.o_orderdate, o.o_totalprice, l.l_linenumber, l.l_quantity, l.l_extendedprice FROM orders o JOIN lineitem l ON o.o_orderkey = l.l_orderkey WHERE o.o_orderkey = %s"
key1=$(q -At -c "SELECT k FROM cj_keys WHERE i = 1")
# shellcheck disable=SC2059
plan=$(q -At -c "EXPLAIN (VERBOSE, COSTS OFF) $(printf "$LOOKUP" "$key1")")
say "colojoin's plan"
echo "$plan" | grep -E 'Custom Scan|Strategy|Partitions|Remote SQL|Task'
node=$(grep -oE 'Task 1 on n[0-9]+' <<<"$plan" | grep -oE 'n[0-9]+$' || true)
task=$(grep -E 'Task 1 on' <<<"$plan" | sed 's/^.*): //' || true)
[ -n "$node" ] && [ -n "$task" ] || { echo "point_lookup.sh: colojoin's plan has no task" >&2; exit 1; }
[ "$(grep -c 'Task [0-9]* on' <<<"$plan")" = 1 ] || { echo "point_lookup.sh: the lookup is not one task" >&2; exit 1; }
direct=$(sed -E "s/([^0-9])$key1([^0-9])/\\1:key\\2/g" <<<"$task")
grep -q ':key' <<<"$direct" || { echo "point_lookup.sh: the key is not in the task's SQL: $task" >&2; exit 1; }
nport=$((CJ_PORT + ${node#n}))
echo "direct, on $node: $direct"

# the keys on the node too, and the two pgbench scripts
q -c "COPY cj_keys TO '$CJ_CLUSTER_DIR/keys.copy'"
qn "${node#n}" \
	-c "CREATE TABLE cj_keys (i int PRIMARY KEY, k bigint NOT NULL)" \
	-c "COPY cj_keys FROM '$CJ_CLUSTER_DIR/keys.copy'" -c "ANALYZE cj_keys"
# shellcheck disable=SC2059
printf '\\set i random(1, %s)\nSELECT k AS key FROM cj_keys WHERE i = :i \\gset\n%s;\n' \
	"$nkeys" "$(printf "$LOOKUP" ':key')" >"$CJ_CLUSTER_DIR/colojoin.pgbench"
printf '\\set i random(1, %s)\nSELECT k AS key FROM cj_keys WHERE i = :i \\gset\n%s;\n' \
	"$nkeys" "$direct" >"$CJ_CLUSTER_DIR/direct.pgbench"
chmod a+r "$CJ_CLUSTER_DIR"/*.pgbench

# the same answers
a=$(q -At -c "$(printf "$LOOKUP" "$key1") ORDER BY 4" | md5sum)
b=$(qn "${node#n}" -At -c "${direct//:key/$key1} ORDER BY 4" | md5sum)
[ "$a" = "$b" ] || { echo "point_lookup.sh: colojoin and the node answer differently" >&2; exit 1; }

# ms of the lookup statement (the script's third line) over TX transactions
one_round() {
	local port=$1 script=$2 seed=$3
	runuser -u postgres -- env PGOPTIONS="${4:-}" "$PGBENCH" -n -r -M simple -t "$TX" --random-seed="$seed" \
		-h 127.0.0.1 -p "$port" -f "$script" bench 2>&1 |
		awk '/statement latencies/ { on = 1; next } on && /(SELECT|EXPLAIN)/ { n++; if (n == 2) print $1 }'
}

# What any coordinator in front of the node adds before it runs anything,
# measured the same way: the extra hop (a bare SELECT 1 to the node) and
# PostgreSQL's own parse and plan of the lookup on the coordinator
# (EXPLAIN with colojoin off, less a bare SELECT 1 there).
printf '\\set i random(1, %s)\nSELECT k AS key FROM cj_keys WHERE i = :i \\gset\nSELECT 1;\n' \
	"$nkeys" >"$CJ_CLUSTER_DIR/one.pgbench"
# shellcheck disable=SC2059
printf '\\set i random(1, %s)\nSELECT k AS key FROM cj_keys WHERE i = :i \\gset\nEXPLAIN (COSTS OFF) %s;\n' \
	"$nkeys" "$(printf "$LOOKUP" ':key')" >"$CJ_CLUSTER_DIR/plan.pgbench"
chmod a+r "$CJ_CLUSTER_DIR"/*.pgbench

# The same through psql, as the issue measured it: \timing of each lookup
# (literal keys, 200 of cj_keys) in a warm session, the median; psql's own
# time per statement is in both.
keys=$(q -At -c "SELECT k FROM cj_keys WHERE i % (($nkeys + 199) / 200) = 0 ORDER BY i LIMIT 200")
psql_round() {
	local port=$1 kind=$2 k sql
	{
		echo '\o /dev/null'
		if [ "$kind" = direct ]; then
			echo "${direct//:key/$key1};"
		else
			# shellcheck disable=SC2059
			echo "$(printf "$LOOKUP" "$key1");"
		fi
		echo '\timing on'
		for k in $keys; do
			if [ "$kind" = direct ]; then
				echo "${direct//:key/$k};"
			else
				# shellcheck disable=SC2059
				echo "$(printf "$LOOKUP" "$k");"
			fi
		done
	} | runuser -u postgres -- "$PSQL" -X -q -h 127.0.0.1 -p "$port" -d bench | awk '/^Time: / { print $2 }' | median
}

say "timed rounds (ROUNDS=$ROUNDS, $TX lookups each, alternately)"
cj="" dr=""
one_round "$CJ_PORT" "$CJ_CLUSTER_DIR/colojoin.pgbench" 1 >/dev/null
one_round "$nport" "$CJ_CLUSTER_DIR/direct.pgbench" 1 >/dev/null
for ((r = 1; r <= ROUNDS; r++)); do
	cj+="$(one_round "$CJ_PORT" "$CJ_CLUSTER_DIR/colojoin.pgbench" $((42 + r))) "
	dr+="$(one_round "$nport" "$CJ_CLUSTER_DIR/direct.pgbench" $((42 + r))) "
done
hop="" c1="" pl=""
for ((r = 1; r <= ROUNDS; r++)); do
	hop+="$(one_round "$nport" "$CJ_CLUSTER_DIR/one.pgbench" $((42 + r))) "
	c1+="$(one_round "$CJ_PORT" "$CJ_CLUSTER_DIR/one.pgbench" $((42 + r))) "
	pl+="$(one_round "$CJ_PORT" "$CJ_CLUSTER_DIR/plan.pgbench" $((42 + r)) "-c colojoin.enable=off") "
done
thop=$(echo "$hop" | tr ' ' '\n' | grep . | median)
tc1=$(echo "$c1" | tr ' ' '\n' | grep . | median)
tpl=$(echo "$pl" | tr ' ' '\n' | grep . | median)
tplan=$(awk -v a="$tpl" -v b="$tc1" 'BEGIN { printf "%.3f", a - b }')
tc=$(echo "$cj" | tr ' ' '\n' | grep . | median)
td=$(echo "$dr" | tr ' ' '\n' | grep . | median)
pc="" pd=""
for ((r = 1; r <= ROUNDS; r++)); do
	pc+="$(psql_round "$CJ_PORT" colojoin) "
	pd+="$(psql_round "$nport" direct) "
done
tpc=$(echo "$pc" | tr ' ' '\n' | grep . | median)
tpd=$(echo "$pd" | tr ' ' '\n' | grep . | median)
echo "  psql, colojoin: $pc-> median $tpc ms"
echo "  psql, direct:   $pd-> median $tpd ms"
echo "  colojoin: $cj-> median $tc ms"
echo "  direct:   $dr-> median $td ms"
echo "  SELECT 1 on $node: $hop-> median $thop ms; on the coordinator: $c1-> median $tc1 ms"
echo "  EXPLAIN of the lookup, colojoin off: $pl-> median $tpl ms (plan: $tplan ms)"
floor=$(awk -v d="$td" -v h="$thop" -v p="$tplan" 'BEGIN { printf "%.3f", d + h + p }')
{
	echo "# warm point lookup, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
	echo
	echo "SCALE=$SCALE ($N_ORDERS orders, 16 partitions on 4 nodes), $ROUNDS rounds of $TX lookups, pgbench -M simple,"
	echo "median of the rounds' per-statement averages (ms); and $ROUNDS rounds of 200 lookups in psql, median of the rounds' medians."
	echo
	echo "| lookup | colojoin | the task's SQL straight to $node | colojoin / direct |"
	echo "| --- | ---: | ---: | ---: |"
	echo "| one order and its line items by key, pgbench -r | $tc | $td | $(awk -v a="$tc" -v b="$td" 'BEGIN { printf "%.2f", a / b }')x |"
	echo "| the same, psql \\timing, median of 200 | $tpc | $tpd | $(awk -v a="$tpc" -v b="$tpd" 'BEGIN { printf "%.2f", a / b }')x |"
	echo "| floor of any coordinator that plans with PostgreSQL: direct + a hop ($thop) + parse and plan ($tplan), pgbench -r | $floor | $td | $(awk -v a="$floor" -v b="$td" 'BEGIN { printf "%.2f", a / b }')x |"
	echo
	echo "Command: \`SCALE=$SCALE ROUNDS=$ROUNDS TX=$TX bench/point_lookup.sh\`"
} | tee "$REPORT"
echo
echo "written to $REPORT"
