#!/bin/bash
# bench/redistribute.sh -- issue 14's redistributed join, the way users run
# it: foreign partitions nobody ANALYZEd, servers without
# use_remote_estimate.  colojoin against native PostgreSQL + postgres_fdw on
# the same cluster and data, and against the same query on plain local
# tables of the coordinator holding the same rows, in one run.  Prints a
# table of medians and ratios and writes it to
# bench/results/redistribute-<timestamp>.md.
#
#   bench/redistribute.sh                     SCALE=1: 4M lineitem, 200k part
#   SCALE=0.01 REPS=1 bench/redistribute.sh   a quick check that it works
#
# The cluster: a coordinator and 4 nodes; lineitem hash partitioned 16 ways
# on l_orderkey, part 16 ways on p_partkey (colojoin.create_shards, 4
# partitions per node), the columns of bench/run.sh; the rows are made on
# the coordinator in plain tables lineitem_local and part_local (analyzed,
# as autovacuum would) and copied into the sharded tables through colojoin.
# The nodes' tables are vacuumed and analyzed; the coordinator's foreign
# tables are not.
#
# The query (R1T, "group by brand, top 5"):
#   SELECT p_brand, sum(l_quantity) AS qty FROM lineitem JOIN part
#     ON l_partkey = p_partkey GROUP BY p_brand ORDER BY qty DESC, p_brand LIMIT 5
# lineitem is not partitioned by l_partkey: its rows and part's do not meet
# on one node, so some of the data must move.
#
# Configurations, each round running every one in turn (REPS rounds, after
# one untimed round); a run is one psql session that runs the query once
# untimed (connections, caches) and once under \timing:
#   colojoin     colojoin on, its defaults
#   colojoin_repartition
#                the same with /*+ Redistribute(lineitem) */: lineitem's
#                rows repartitioned by l_partkey to part's nodes (what
#                colojoin chose before it read sizes from the nodes)
#   native_pwa   colojoin.enable off, enable_partitionwise_join and
#                enable_partitionwise_aggregate on, async_capable servers
#   native       colojoin.enable off, PostgreSQL's defaults, the same servers
#   local        the query on lineitem_local and part_local
# "native best" is the faster native.  Every configuration's answer must be
# the same (the script stops otherwise).
#
# Settings: SCALE (default 1), REPS (default 5), CJ_PORT (default 22832),
# CJ_CLUSTER_DIR (default /tmp/cj-bench-redistribute), BENCH_SKIP_BUILD=1,
# PG_CONFIG.  Run as root; the servers run as user postgres and are stopped
# on exit.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
SCALE=${SCALE:-1}
REPS=${REPS:-5}
export CJ_PORT=${CJ_PORT:-22832}
export CJ_CLUSTER_DIR=${CJ_CLUSTER_DIR:-/tmp/cj-bench-redistribute}
. "$BENCH/bench_common.sh"
STAMP=$(date +%Y%m%d-%H%M%S)
REPORT="$BENCH/results/redistribute-$STAMP.md"
mkdir -p "$BENCH/results"
N_ORDERS=$(awk -v s="$SCALE" 'BEGIN { printf "%d", 1000000 * s }')
N_PART=$(awk -v s="$SCALE" 'BEGIN { n = int(200000 * s); if (n < 100) n = 100; printf "%d", n }')
[ "$N_ORDERS" -ge 1000 ] || { echo "redistribute.sh: SCALE=$SCALE is too small" >&2; exit 2; }

bench_fresh_cluster

# as bench/run.sh: everything in memory
bench_in_memory

say "schema and data (SCALE=$SCALE: $N_ORDERS orders' line items, $N_PART parts)"
LINEITEM_COLS="l_orderkey bigint NOT NULL, l_partkey int, l_suppkey int, l_linenumber int NOT NULL,
    l_quantity numeric(15,2), l_extendedprice numeric(15,2), l_discount numeric(15,2), l_tax numeric(15,2),
    l_returnflag text, l_linestatus text, l_shipdate date, l_commitdate date, l_receiptdate date,
    l_shipinstruct text, l_shipmode text, l_comment text"
PART_COLS="p_partkey int NOT NULL, p_name text, p_mfgr text, p_brand text, p_type text, p_size int,
    p_container text, p_retailprice numeric(15,2), p_comment text"
{
	echo "CREATE EXTENSION colojoin CASCADE;"
	bench_servers
	cat <<SQL
CREATE FUNCTION bench_rnd(k bigint, seed int, m int) RETURNS int LANGUAGE sql IMMUTABLE
	AS \$\$ SELECT (((hashint8extended(k, seed) % m) + m) % m)::int \$\$;
CREATE TABLE lineitem_local ($LINEITEM_COLS);
INSERT INTO lineitem_local
SELECT o, 1 + bench_rnd(lk, 11, $N_PART), 1 + bench_rnd(lk, 12, 10000), j,
       qty, (qty * (900 + bench_rnd(lk, 14, 100000) / 100.0))::numeric(15,2),
       (bench_rnd(lk, 15, 11) / 100.0)::numeric(15,2), (bench_rnd(lk, 16, 9) / 100.0)::numeric(15,2),
       (ARRAY['A','N','R'])[1 + bench_rnd(lk, 17, 3)], (ARRAY['F','O'])[1 + bench_rnd(lk, 18, 2)],
       d + 1 + bench_rnd(lk, 19, 121), d + 30 + bench_rnd(lk, 20, 61), d + 2 + bench_rnd(lk, 21, 150),
       (ARRAY['DELIVER IN PERSON','COLLECT COD','NONE','TAKE BACK RETURN'])[1 + bench_rnd(lk, 22, 4)],
       (ARRAY['REG AIR','AIR','RAIL','SHIP','TRUCK','MAIL','FOB'])[1 + bench_rnd(lk, 23, 7)],
       substr(md5(lk::text), 1, 10 + bench_rnd(lk, 24, 23))
FROM (SELECT o, date '1992-01-01' + bench_rnd(o, 4, 2405) AS d, j, o * 8 + j AS lk,
             (1 + bench_rnd(o * 8 + j, 13, 50))::numeric(15,2) AS qty
      FROM generate_series(1, $N_ORDERS::bigint) o, generate_series(1, 1 + bench_rnd(o, 8, 7)) j) s;
CREATE TABLE part_local ($PART_COLS);
INSERT INTO part_local
SELECT k, 'part ' || md5(k::text), 'Manufacturer#' || (1 + bench_rnd(k, 31, 5)),
       'Brand#' || (1 + bench_rnd(k, 31, 5)) || (1 + bench_rnd(k, 32, 5)),
       (ARRAY['STANDARD','SMALL','MEDIUM','LARGE','ECONOMY','PROMO'])[1 + bench_rnd(k, 33, 6)] || ' '
           || (ARRAY['ANODIZED','BURNISHED','PLATED','POLISHED','BRUSHED'])[1 + bench_rnd(k, 34, 5)],
       1 + bench_rnd(k, 36, 50), (ARRAY['SM','LG','MED','JUMBO','WRAP'])[1 + bench_rnd(k, 37, 5)],
       (900 + k % 1000 + bench_rnd(k, 39, 100) / 100.0)::numeric(15,2),
       substr(md5((k * 3)::text), 1, 5 + bench_rnd(k, 40, 18))
FROM generate_series(1, $N_PART) k;
VACUUM ANALYZE lineitem_local, part_local;
CREATE TABLE lineitem ($LINEITEM_COLS) PARTITION BY HASH (l_orderkey);
SELECT colojoin.create_shards('lineitem', ARRAY['n1', 'n2', 'n3', 'n4'], 16);
CREATE TABLE part ($PART_COLS) PARTITION BY HASH (p_partkey);
SELECT colojoin.create_shards('part', ARRAY['n1', 'n2', 'n3', 'n4'], 16);
INSERT INTO lineitem SELECT * FROM lineitem_local;
INSERT INTO part SELECT * FROM part_local;
SQL
	# async appends for the native plans (colojoin does not read it)
	for i in 1 2 3 4; do
		echo "ALTER SERVER n$i OPTIONS (ADD async_capable 'true');"
	done
} | q >/dev/null
# the nodes' tables as autovacuum would leave them; the coordinator's
# foreign tables stay unanalyzed
bench_nodes_analyzed redistribute.sh

R1T="SELECT p_brand, sum(l_quantity) AS qty FROM %L JOIN %P ON l_partkey = p_partkey GROUP BY p_brand ORDER BY qty DESC, p_brand LIMIT 5"
CONFIGS="colojoin colojoin_repartition native_pwa native local"
stmt() {
	local sql
	if [ "$1" = local ]; then
		sql=${R1T//%L/lineitem_local}
		sql=${sql//%P/part_local}
	else
		sql=${R1T//%L/lineitem}
		sql=${sql//%P/part}
	fi
	[ "$1" != colojoin_repartition ] || sql="/*+ Redistribute(lineitem) */ $sql"
	case $1 in
		colojoin | colojoin_repartition | local) echo "SET colojoin.enable = on;" ;;
		native_pwa) echo "SET colojoin.enable = off; SET enable_partitionwise_join = on; SET enable_partitionwise_aggregate = on;" ;;
		native) echo "SET colojoin.enable = off;" ;;
	esac
	echo "$sql;"
}

say "checks: the same answer in every configuration, and colojoin's plan"
stmt colojoin | q -At
# shellcheck disable=SC2086
bench_same_answers redistribute.sh stmt $CONFIGS
plan=$(stmt colojoin | sed '$s/^/EXPLAIN (VERBOSE) /' | q)
grep -v 'Remote SQL' <<<"$plan"
grep -q 'Custom Scan (ColocatedJoin)' <<<"$plan" || { echo "redistribute.sh: colojoin did not plan the join" >&2; exit 1; }
say "colojoin's EXPLAIN ANALYZE"
stmt colojoin | sed '$s/^/EXPLAIN (ANALYZE, VERBOSE) /' | q | grep -v 'Remote SQL'


say "timed runs (REPS=$REPS rounds, each configuration in turn)"
# shellcheck disable=SC2086
bench_rounds stmt $CONFIGS
# The floor of colojoin's plan on this machine: its tasks alone (the SQL of
# EXPLAIN VERBOSE), every node at once, each node's tasks one after another
# on one session as colojoin runs them, over a temporary copy of part made
# beforehand (so no move and no coordinator); the slowest node's time.
say "floor: colojoin's tasks alone on the nodes, part already there"
runuser -u postgres -- "$PSQL" -X -q -h 127.0.0.1 -p "$CJ_PORT" -d bench \
	-c "COPY (SELECT p_partkey, p_brand FROM part_local) TO '$CJ_CLUSTER_DIR/part.copy'"
tasks_of() {
	grep -E "Task [0-9]+ on n$1 " <<<"$plan" | sed -e 's/^.*): //' -e 's/pg_temp\."colojoin_move_[^"]*"/pg_temp.floor_part/g' -e 's/$/;/'
}
floor_one() {
	local i pids=() t
	for i in 1 2 3 4; do
		{
			echo "CREATE TEMP TABLE floor_part (p_partkey int, p_brand text);"
			echo "COPY floor_part FROM '$CJ_CLUSTER_DIR/part.copy';"
			echo "ANALYZE floor_part;"
			echo "SELECT pg_sleep(1);"
			echo '\o /dev/null'
			echo '\timing on'
			tasks_of "$i" | tr '\n' ' '
			echo
		} | qn "$i" |
			awk '/^Time: / { t += $2 } END { print t }' >"$CJ_CLUSTER_DIR/floor.$i" &
		pids+=($!)
	done
	wait "${pids[@]}"
	cat "$CJ_CLUSTER_DIR"/floor.[1-4] | sort -g | tail -1
}
[ "$(tasks_of 1 | wc -l)" -gt 0 ] || { echo "redistribute.sh: no task of n1 in colojoin's plan" >&2; exit 1; }
runs[floor]=""
for ((r = 0; r < REPS; r++)); do
	runs[floor]+="$(floor_one) "
done
T[floor]=$(echo "${runs[floor]}" | tr ' ' '\n' | grep . | median)
echo "  floor: ${runs[floor]}-> median ${T[floor]} ms"

best=native_pwa
awk -v a="${T[native]}" -v b="${T[native_pwa]}" 'BEGIN { exit !(a < b) }' && best=native

{
	echo "# redistributed join, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
	echo
	echo "SCALE=$SCALE ($(q -At -c 'SELECT count(*) FROM lineitem_local') lineitem, $N_PART part, 16 partitions each on 4 nodes),"
	echo "foreign tables not analyzed, servers without use_remote_estimate; REPS=$REPS, median ms (psql \\timing, warm session)."
	echo
	echo "| query | colojoin | colojoin, lineitem repartitioned | native, partitionwise | native, defaults | plain local tables | colojoin / local | native best / colojoin | native best / repartitioned |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	echo "| R1T lineitem x part on l_partkey, top 5 brands | ${T[colojoin]} | ${T[colojoin_repartition]} | ${T[native_pwa]} | ${T[native]} | ${T[local]} |" \
		"$(ratio "${T[colojoin]}" "${T[local]}")x | $(ratio "${T[$best]}" "${T[colojoin]}")x | $(ratio "${T[$best]}" "${T[colojoin_repartition]}")x |"
	echo
	echo "Floor of colojoin's plan here (its tasks alone, part already on every node, all nodes at once): ${T[floor]} ms;"
	echo "native best / 3 = $(awk -v a="${T[$best]}" 'BEGIN { printf "%.1f", a / 3 }') ms."
	echo
	echo "Command: \`SCALE=$SCALE REPS=$REPS bench/redistribute.sh\`"
} | tee "$REPORT"
echo
echo "written to $REPORT"
