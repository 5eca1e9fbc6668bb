#!/bin/bash
# bench/warehouse.sh -- our own decision-support benchmark: 8 tables of a
# warehouse schema sharded over a coordinator and 4 nodes, 25 queries
# (W01..W25: single-table aggregates, 3- to 6-way joins on different keys,
# subqueries, CTEs, window functions, ORDER BY ... LIMIT), each answered by
# colojoin, by the best native PostgreSQL + postgres_fdw plan, and by the
# same rows in plain local tables of the coordinator, in one run.  Every
# answer is checked against the local tables' before the query is timed: the
# script stops (exit 1), naming the query, when one differs (or fails).
# Prints a table
# of medians and ratios and writes it to bench/results/warehouse-<stamp>.md
# (plans, answers and raw timings under bench/results/warehouse-<stamp>/).
#
#   bench/warehouse.sh                       SCALE=1: 750k orders, ~3M lineitem
#   SCALE=0.02 REPS=1 bench/warehouse.sh     a quick check (a couple of minutes)
#
# The data (bench/README.md, "Decision support (bench/warehouse.sh)", has
# the columns): orders and lineitem hash 16 on the order key (lineitem
# colocated with orders), customer hash 16 on the customer key, part and
# partsupp hash 16 on the part key (partsupp colocated with part), supplier
# hash 16 on the supplier key, all through colojoin.create_shards over n1..n4
# (4 partitions per node); nation (25 rows) and region (5 rows) reference
# tables (colojoin.create_reference_table: a copy on every node).  Every
# value is a hash of its row's key (wh_rnd), so every run has the same
# rows; nothing in the generator is shaped after a query.  The rows are made
# once in schema "local" on the coordinator (the local twins: plain tables,
# analyzed) and copied into the sharded tables through colojoin.  Primary
# keys, and one foreign-key index lineitem (l_partkey, l_suppkey), on the
# nodes' tables and on the twins alike; nothing else.  The nodes' tables are
# vacuumed and analyzed (as autovacuum would); the coordinator's foreign
# tables are never analyzed (checked), the servers have no
# use_remote_estimate while colojoin runs.
#
# Configurations (bench/README.md, bench/run.sh), for every query: one
# untimed run of each (its answer compared with local's; it also decides how
# many timed runs fit in BENCH_CELL_SECONDS), then REPS rounds, each running
# every configuration in turn, one psql session per timed run (the session
# first runs the query once untimed, or only EXPLAINs it when its first run
# took more than BENCH_WARM_SECONDS, then times it with \timing; a session
# that only EXPLAINed times a run that opens its connections to the nodes,
# which colojoin opens several of, so the limit is high: at 2 s, a first run
# slowed by the restart's cold caches made W02's timed runs 1.8 s where a
# warm session's take 1.0):
#   colojoin   colojoin on, its defaults, servers with host, port, dbname
#   native_b   colojoin.enable off, enable_partitionwise_join and
#              enable_partitionwise_aggregate on, servers altered with
#              async_capable, use_remote_estimate, fetch_size 10000
#   native_c   native_b without partitionwise aggregation
#   local      the query on the local twins (search_path local, public): one
#              server doing everything, the machine's own reference
# "native best" is the faster of native_b and native_c.  Server options are
# switched with ALTER SERVER between configurations, as bench/run.sh does.
#
# For colojoin the report also gives the number of Custom Scan (Colocated...)
# nodes of its plan, whether a join node (Hash/Merge Join, Nested Loop) is
# left on the coordinator, and the Strategy lines; the plans (EXPLAIN
# VERBOSE of every configuration, EXPLAIN ANALYZE VERBOSE of colojoin) are in
# bench/results/warehouse-<stamp>/plans/.
#
# Settings (environment):
#   SCALE               row counts relative to 750k orders (default 1)
#   REPS                timed runs per query and configuration (default 5)
#   BENCH_CELL_SECONDS  time budget of one query's timed runs in one
#                       configuration (default 60): a slower cell runs fewer
#                       times, at least once ("(n=...)" in the table)
#   BENCH_WARM_SECONDS  a configuration whose first run took longer only
#                       EXPLAINs the query before its timed run (default 10)
#   BENCH_TIMEOUT       statement_timeout in seconds of every run (default
#                       120); a configuration that exceeds it is reported as
#                       "timeout" for that query and not timed further
#   BENCH_QUERIES       the queries to run (default all: W01 .. W25)
#   BENCH_ALLOW_DIFF    queries whose wrong answer (or error) only prints a
#                       loud warning instead of stopping, e.g. "W07 W12"
#   BENCH_EXPLAIN_ANALYZE=0  skip colojoin's EXPLAIN ANALYZE
#   BENCH_REUSE=1       keep the data an earlier run loaded at the same
#                       SCALE in CJ_CLUSTER_DIR (development)
#   CJ_PORT, CJ_CLUSTER_DIR  default 23032, /tmp/cj-bench-wh (nodes on
#                       CJ_PORT+1..+4)
#   BENCH_SKIP_BUILD=1  use the installed colojoin; BENCH_KEEP=1 leaves the
#                       cluster running; PG_CONFIG
# Run as root; the servers run as user postgres and are stopped on exit.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
SCALE=${SCALE:-1}
REPS=${REPS:-5}
BENCH_CELL_SECONDS=${BENCH_CELL_SECONDS:-60}
BENCH_WARM_SECONDS=${BENCH_WARM_SECONDS:-10}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-120}
BENCH_ALLOW_DIFF=${BENCH_ALLOW_DIFF:-}
BENCH_EXPLAIN_ANALYZE=${BENCH_EXPLAIN_ANALYZE:-1}
export CJ_PORT=${CJ_PORT:-23032}
export CJ_CLUSTER_DIR=${CJ_CLUSTER_DIR:-/tmp/cj-bench-wh}
. "$BENCH/bench_common.sh"
STAMP=$(date +%Y%m%d-%H%M%S)
REPORT="$BENCH/results/warehouse-$STAMP.md"
OUT="$BENCH/results/warehouse-$STAMP"
mkdir -p "$OUT/plans" "$OUT/answers" "$OUT/raw"
T_START=$(date +%s)
say() { printf '\n=== [%4ds] %s\n' $(($(date +%s) - T_START)) "$*"; }
die() {
	echo "warehouse.sh: $*" >&2
	exit 1
}

# sizes
size() { awk -v s="$SCALE" -v n="$1" -v m="$2" 'BEGIN { v = int(n * s); if (v < m) v = m; printf "%d", v }'; }
N_ORD=$(size 750000 1000)
N_CUST=$(size 75000 100)
N_PART=$(size 100000 100)
N_SUPP=$(size 5000 40)
N_CLERK=$(size 1000 10)
STEP=$((N_SUPP / 4)) # a part's 4 suppliers: p, p + STEP, p + 2 STEP, p + 3 STEP (mod N_SUPP)
[ "$(awk -v s="$SCALE" 'BEGIN { print (s * 750000 >= 1000) }')" = 1 ] || die "SCALE=$SCALE is too small"
# the generator's version: BENCH_REUSE keeps only data of the same SCALE and version
GEN_VERSION=1

# --- schema -------------------------------------------------------------------

declare -A COLS KEY PKEY
COLS[region]="r_regionkey int NOT NULL, r_name text, r_comment text"
COLS[nation]="n_nationkey int NOT NULL, n_name text, n_regionkey int, n_comment text"
COLS[supplier]="s_suppkey int NOT NULL, s_name text, s_address text, s_nationkey int, s_phone text,
	s_acctbal numeric(15,2), s_comment text"
COLS[customer]="c_custkey int NOT NULL, c_name text, c_address text, c_nationkey int, c_phone text,
	c_acctbal numeric(15,2), c_mktsegment text, c_comment text"
COLS[part]="p_partkey int NOT NULL, p_name text, p_mfgr text, p_brand text, p_type text, p_size int,
	p_container text, p_retailprice numeric(15,2), p_comment text"
COLS[partsupp]="ps_partkey int NOT NULL, ps_suppkey int NOT NULL, ps_availqty int, ps_supplycost numeric(15,2),
	ps_comment text"
COLS[orders]="o_orderkey bigint NOT NULL, o_custkey int, o_orderstatus text, o_totalprice numeric(15,2),
	o_orderdate date, o_orderpriority text, o_clerk text, o_shippriority int, o_comment text"
COLS[lineitem]="l_orderkey bigint NOT NULL, l_partkey int, l_suppkey int, l_linenumber int NOT NULL,
	l_quantity numeric(15,2), l_extendedprice numeric(15,2), l_discount numeric(15,2), l_tax numeric(15,2),
	l_returnflag text, l_linestatus text, l_shipdate date, l_commitdate date, l_receiptdate date,
	l_shipinstruct text, l_shipmode text, l_comment text"
KEY[region]=r_regionkey KEY[nation]=n_nationkey KEY[supplier]=s_suppkey KEY[customer]=c_custkey
KEY[part]=p_partkey KEY[partsupp]=ps_partkey KEY[orders]=o_orderkey KEY[lineitem]=l_orderkey
PKEY[region]=r_regionkey PKEY[nation]=n_nationkey PKEY[supplier]=s_suppkey PKEY[customer]=c_custkey
PKEY[part]=p_partkey PKEY[partsupp]="ps_partkey, ps_suppkey" PKEY[orders]=o_orderkey
PKEY[lineitem]="l_orderkey, l_linenumber"
TABLES="region nation supplier customer part partsupp orders lineitem"
# the indexes of every copy of a table, on the nodes and on the twins
index_sql() { # table relation
	echo "ALTER TABLE $2 ADD PRIMARY KEY (${PKEY[$1]});"
	[ "$1" != lineitem ] || echo "CREATE INDEX ON $2 (l_partkey, l_suppkey);"
}

# The generator: plain tables in schema local, on the coordinator.  Every
# value is wh_rnd(key, seed, m), a hash of its row's key; lineitem's
# (l_partkey, l_suppkey) is one of partsupp's pairs, its price the part's
# retail price times the quantity; an order's status and total price come
# from its lines.  Lines shipped (received) by 1995-06-17 have status F (a
# return flag R or A), the others O (N).
generate_sql() {
	local t
	cat <<SQL
SET synchronous_commit = off;
CREATE SCHEMA local;
CREATE FUNCTION wh_rnd(k bigint, seed int, m int) RETURNS int LANGUAGE sql IMMUTABLE PARALLEL SAFE
	AS \$\$ SELECT (((hashint8extended(k, seed) % m) + m) % m)::int \$\$;
SQL
	for t in $TABLES; do
		echo "CREATE TABLE local.$t (${COLS[$t]});"
	done
	cat <<SQL
INSERT INTO local.region
SELECT k, name, 'region ' || substr(md5(name), 1, 20 + wh_rnd(k, 91, 30))
FROM (VALUES (0, 'AFRICA'), (1, 'AMERICA'), (2, 'ASIA'), (3, 'EUROPE'), (4, 'MIDDLE EAST')) v(k, name);
INSERT INTO local.nation
SELECT k - 1, name, r, 'nation ' || substr(md5(name), 1, 20 + wh_rnd(k, 92, 40))
FROM (VALUES (1, 'ALGERIA', 0), (2, 'ARGENTINA', 1), (3, 'BRAZIL', 1), (4, 'CANADA', 1), (5, 'CHINA', 2),
	(6, 'EGYPT', 4), (7, 'ETHIOPIA', 0), (8, 'FRANCE', 3), (9, 'GERMANY', 3), (10, 'INDIA', 2),
	(11, 'INDONESIA', 2), (12, 'IRAN', 4), (13, 'IRAQ', 4), (14, 'JAPAN', 2), (15, 'JORDAN', 4),
	(16, 'KENYA', 0), (17, 'MOROCCO', 0), (18, 'MOZAMBIQUE', 0), (19, 'PERU', 1), (20, 'ROMANIA', 3),
	(21, 'RUSSIA', 3), (22, 'SAUDI ARABIA', 4), (23, 'UNITED KINGDOM', 3), (24, 'UNITED STATES', 1),
	(25, 'VIETNAM', 2)) v(k, name, r);
INSERT INTO local.supplier
SELECT k, 'Supplier#' || lpad(k::text, 9, '0'), substr(md5(k::text), 1, 10 + wh_rnd(k, 50, 20)), n,
	(10 + n) || '-' || (100 + wh_rnd(k, 52, 900)) || '-' || (100 + wh_rnd(k, 53, 900)) || '-' || (1000 + wh_rnd(k, 54, 9000)),
	((wh_rnd(k, 55, 1100000) - 100000) / 100.0)::numeric(15,2),
	'supplier ' || substr(md5((k * 7)::text), 1, 10 + wh_rnd(k, 56, 20))
FROM (SELECT k, wh_rnd(k, 51, 25) AS n FROM generate_series(1, $N_SUPP) k) s;
INSERT INTO local.customer
SELECT k, 'Customer#' || lpad(k::text, 9, '0'), substr(md5((k * 3)::text), 1, 10 + wh_rnd(k, 60, 20)), n,
	(10 + n) || '-' || (100 + wh_rnd(k, 62, 900)) || '-' || (100 + wh_rnd(k, 63, 900)) || '-' || (1000 + wh_rnd(k, 64, 9000)),
	((wh_rnd(k, 65, 1100000) - 100000) / 100.0)::numeric(15,2),
	(ARRAY['AUTOMOBILE', 'BUILDING', 'FURNITURE', 'HOUSEHOLD', 'MACHINERY'])[1 + wh_rnd(k, 66, 5)],
	'customer ' || substr(md5((k * 5)::text), 1, 10 + wh_rnd(k, 67, 30))
FROM (SELECT k, wh_rnd(k, 61, 25) AS n FROM generate_series(1, $N_CUST) k) s;
INSERT INTO local.part
SELECT k, w[1 + wh_rnd(k, 71, 24)] || ' ' || w[1 + wh_rnd(k, 72, 24)] || ' ' || w[1 + wh_rnd(k, 73, 24)],
	'Manufacturer#' || m, 'Brand#' || m || (1 + wh_rnd(k, 75, 5)),
	(ARRAY['STANDARD', 'SMALL', 'MEDIUM', 'LARGE', 'ECONOMY', 'PROMO'])[1 + wh_rnd(k, 76, 6)] || ' '
		|| (ARRAY['ANODIZED', 'BURNISHED', 'PLATED', 'POLISHED', 'BRUSHED'])[1 + wh_rnd(k, 77, 5)] || ' '
		|| (ARRAY['TIN', 'NICKEL', 'BRASS', 'STEEL', 'COPPER'])[1 + wh_rnd(k, 78, 5)],
	1 + wh_rnd(k, 79, 50),
	(ARRAY['SM', 'LG', 'MED', 'JUMBO', 'WRAP'])[1 + wh_rnd(k, 80, 5)] || ' '
		|| (ARRAY['CASE', 'BOX', 'BAG', 'JAR', 'PKG', 'PACK', 'CAN', 'DRUM'])[1 + wh_rnd(k, 81, 8)],
	(900 + wh_rnd(k, 82, 110000) / 100.0)::numeric(15,2),
	'part ' || substr(md5((k * 11)::text), 1, 5 + wh_rnd(k, 83, 18))
FROM (SELECT k, 1 + wh_rnd(k, 74, 5) AS m,
	ARRAY['almond', 'antique', 'aqua', 'azure', 'beige', 'bisque', 'black', 'blue', 'brown', 'burlywood',
		'chartreuse', 'chocolate', 'coral', 'cyan', 'forest', 'ghost', 'ivory', 'khaki', 'lavender',
		'linen', 'olive', 'orchid', 'peach', 'plum'] AS w
	FROM generate_series(1, $N_PART) k) s;
INSERT INTO local.partsupp
SELECT p, 1 + (p - 1 + j * $STEP) % $N_SUPP, 1 + wh_rnd(p * 4 + j, 84, 9999),
	(1 + wh_rnd(p * 4 + j, 85, 99900) / 100.0)::numeric(15,2),
	'offer ' || substr(md5((p * 4 + j)::text), 1, 20 + wh_rnd(p * 4 + j, 86, 40))
FROM generate_series(1, $N_PART) p, generate_series(0, 3) j;
ANALYZE local.part;
INSERT INTO local.lineitem
SELECT o, pk, 1 + (pk - 1 + wh_rnd(lk, 13, 4) * $STEP) % $N_SUPP, j, qty, (qty * p.p_retailprice)::numeric(15,2),
	(wh_rnd(lk, 14, 11) / 100.0)::numeric(15,2), (wh_rnd(lk, 15, 9) / 100.0)::numeric(15,2),
	CASE WHEN rd <= date '1995-06-17' THEN (ARRAY['R', 'A'])[1 + wh_rnd(lk, 16, 2)] ELSE 'N' END,
	CASE WHEN sd <= date '1995-06-17' THEN 'F' ELSE 'O' END,
	sd, cd, rd,
	(ARRAY['DELIVER IN PERSON', 'COLLECT COD', 'NONE', 'TAKE BACK RETURN'])[1 + wh_rnd(lk, 17, 4)],
	(ARRAY['REG AIR', 'AIR', 'RAIL', 'SHIP', 'TRUCK', 'MAIL', 'FOB'])[1 + wh_rnd(lk, 18, 7)],
	'line ' || substr(md5(lk::text), 1, 10 + wh_rnd(lk, 22, 30))
FROM (SELECT o, j, lk, pk, qty, sd, od + 30 + wh_rnd(lk, 20, 61) AS cd, sd + 1 + wh_rnd(lk, 21, 30) AS rd
	FROM (SELECT o, j, o * 8 + j AS lk, 1 + wh_rnd(o * 8 + j, 11, $N_PART) AS pk,
			(1 + wh_rnd(o * 8 + j, 12, 50))::numeric(15,2) AS qty, od, od + 1 + wh_rnd(o * 8 + j, 19, 121) AS sd
		FROM (SELECT o, date '1992-01-01' + wh_rnd(o, 4, 2406) AS od FROM generate_series(1, $N_ORD::bigint) o) oo,
			generate_series(1, 1 + wh_rnd(o, 8, 7)) j) a) b
JOIN local.part p ON p.p_partkey = b.pk;
INSERT INTO local.orders
SELECT o, 1 + wh_rnd(o, 1, $N_CUST), status, total, date '1992-01-01' + wh_rnd(o, 4, 2406),
	(ARRAY['1-URGENT', '2-HIGH', '3-MEDIUM', '4-NOT SPECIFIED', '5-LOW'])[1 + wh_rnd(o, 5, 5)],
	'Clerk#' || lpad((1 + wh_rnd(o, 6, $N_CLERK))::text, 9, '0'), 0,
	'order ' || substr(md5((o * 13)::text), 1, 10 + wh_rnd(o, 7, 50))
FROM (SELECT l_orderkey AS o,
		CASE WHEN bool_and(l_linestatus = 'F') THEN 'F' WHEN bool_and(l_linestatus = 'O') THEN 'O' ELSE 'P' END AS status,
		round(sum(l_extendedprice * (1 + l_tax) * (1 - l_discount)), 2)::numeric(15,2) AS total
	FROM local.lineitem GROUP BY l_orderkey) s;
SQL
}

# the sharded tables, filled from the twins through colojoin
shard_sql() {
	local t
	echo "CREATE EXTENSION colojoin CASCADE;"
	bench_servers
	for t in $TABLES; do
		echo "CREATE TABLE $t (${COLS[$t]}) PARTITION BY HASH (${KEY[$t]});"
	done
	cat <<SQL
SELECT colojoin.create_reference_table('region');
SELECT colojoin.create_reference_table('nation');
SELECT colojoin.create_shards('supplier', ARRAY['n1', 'n2', 'n3', 'n4'], 16);
SELECT colojoin.create_shards('customer', ARRAY['n1', 'n2', 'n3', 'n4'], 16);
SELECT colojoin.create_shards('part', ARRAY['n1', 'n2', 'n3', 'n4'], 16);
SELECT colojoin.create_shards('partsupp', NULL, colocate_with => 'part');
SELECT colojoin.create_shards('orders', ARRAY['n1', 'n2', 'n3', 'n4'], 16);
SELECT colojoin.create_shards('lineitem', NULL, colocate_with => 'orders');
SQL
	echo '\timing on'
	for t in $TABLES; do
		echo "\\echo load $t"
		echo "INSERT INTO $t SELECT * FROM local.$t;"
	done
}

# server options of native_b and native_c ("tuned"), or none ("plain")
SERVERS_NOW=""
set_servers() {
	[ "$1" != "$SERVERS_NOW" ] || return 0
	bench_server_options "$1"
	SERVERS_NOW=$1
}

# --- cluster and data -----------------------------------------------------------

LOADED_MARK="$CJ_CLUSTER_DIR/.warehouse-loaded"
reuse=0
if [ "${BENCH_REUSE:-0}" = 1 ] && [ -f "$LOADED_MARK" ] && [ "$(cat "$LOADED_MARK")" = "$SCALE $GEN_VERSION" ]; then
	reuse=1
fi
if [ $reuse = 1 ]; then
	trap bench_cleanup EXIT
	if [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
		say "build and install colojoin"
		make -C "$ROOT" -s PG_CONFIG="$PG_CONFIG" >/dev/null
		make -C "$ROOT" -s PG_CONFIG="$PG_CONFIG" install >/dev/null
	fi
	say "reusing the data loaded at SCALE=$SCALE in $CJ_CLUSTER_DIR"
	"$CLUSTER" restart >/dev/null
	set_servers plain # whatever options an interrupted run left
else
	bench_fresh_cluster
	bench_in_memory
	say "generate the local twins (SCALE=$SCALE: $N_ORD orders, $N_CUST customers, $N_PART parts, $N_SUPP suppliers)"
	generate_sql >"$OUT/raw/generate.sql"
	q <"$OUT/raw/generate.sql" >/dev/null
	say "sharded tables, loaded through colojoin"
	shard_sql >"$OUT/raw/shard.sql"
	q -At <"$OUT/raw/shard.sql" | grep -E '^(load |Time: )' | paste -d ' ' - - | sed 's/^/  /'
	SERVERS_NOW=plain
	say "primary keys and lineitem (l_partkey, l_suppkey) on the nodes and the twins; VACUUM ANALYZE"
	# every placement of every table, the reference tables' copies too
	for i in 1 2 3 4; do : >"$OUT/raw/node$i-index.sql"; done
	while IFS='|' read -r tab node rel; do
		index_sql "$tab" "$rel" >>"$OUT/raw/${node/n/node}-index.sql"
	done < <(q -At -c "SELECT table_name::text, node, remote_relation FROM colojoin.shards ORDER BY 1, 2, 3")
	pids=()
	for i in 1 2 3 4; do
		qn "$i" <"$OUT/raw/node$i-index.sql" >/dev/null &
		pids+=($!)
	done
	for t in $TABLES; do index_sql "$t" "local.$t"; done | q >/dev/null
	for pid in "${pids[@]}"; do wait "$pid" || die "indexes on a node failed"; done
	# the twins named one by one: a database-wide ANALYZE would also give the
	# sharded parents statistics sampled from their foreign partitions
	q -c "VACUUM ANALYZE $(for t in $TABLES; do printf 'local.%s, ' "$t"; done | sed 's/, $//')" >/dev/null
	bench_nodes_analyzed warehouse.sh
	echo "$SCALE $GEN_VERSION" >"$LOADED_MARK"
fi
# the library the servers loaded when they (re)started
SO_TIME=$(date -u -r "$("$PG_CONFIG" --pkglibdir)/colojoin.so" '+%Y-%m-%d %H:%M:%S UTC' 2>/dev/null || echo '?')
# the sharded tables: no statistics on the coordinator, parents included
analyzed=$(q -At -c "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = 'public' AND c.relkind IN ('f', 'p')
	AND (c.reltuples >= 0 OR EXISTS (SELECT FROM pg_statistic WHERE starelid = c.oid))")
[ "$analyzed" = 0 ] || die "the sharded tables have statistics on the coordinator"

say "check the load: every table's rows through postgres_fdw (colojoin off) against the twins"
declare -A ROWS
for t in $TABLES; do
	ROWS[$t]=$(q -At -c "SELECT count(*) FROM local.$t")
	n_shard=$(q -At -c "SET colojoin.enable = off; SET enable_partitionwise_aggregate = on; SELECT count(*) FROM public.$t")
	printf '  %-9s %9s rows\n' "$t" "${ROWS[$t]}"
	[ "${ROWS[$t]}" = "$n_shard" ] && [ "$n_shard" -gt 0 ] || die "$t: $n_shard rows sharded, ${ROWS[$t]} in local.$t"
done

# --- queries ------------------------------------------------------------------

# query NAME TITLE [unordered] <<SQL: the query (made one line) and a short
# title.  Every query here orders its result totally (tie breakers
# included), so its answers compare exactly, order included; one marked
# "unordered" would be compared as sorted lines.  Numbers are numeric or
# integer, never float.
declare -A SQLQ TITLE UNORDERED
ALL_QUERIES=""
query() {
	SQLQ[$1]=$(tr '\n\t' '  ' | sed -e 's/  */ /g' -e 's/^ //' -e 's/ $//')
	TITLE[$1]=$2
	UNORDERED[$1]=${3:-}
	ALL_QUERIES="$ALL_QUERIES $1"
}

query W01 "lineitem by return flag and line status, 4 years shipped" <<'SQL'
SELECT l_returnflag, l_linestatus, count(*) AS lines, sum(l_quantity) AS qty, sum(l_extendedprice) AS gross,
	sum(l_extendedprice * (1 - l_discount)) AS net, sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS charged,
	avg(l_discount) AS avg_disc, min(l_shipdate) AS first_ship, max(l_receiptdate) AS last_receipt
FROM lineitem WHERE l_shipdate >= date '1994-01-01' AND l_shipdate < date '1998-01-01'
GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus
SQL
query W02 "count(DISTINCT) of orders, suppliers, parts by ship mode" <<'SQL'
SELECT l_shipmode, count(*) AS lines, count(DISTINCT l_orderkey) AS orders, count(DISTINCT l_suppkey) AS suppliers,
	count(DISTINCT l_partkey) AS parts
FROM lineitem WHERE l_receiptdate >= date '1996-01-01' AND l_receiptdate < date '1997-01-01'
GROUP BY l_shipmode ORDER BY l_shipmode
SQL
query W03 "top 20 orders by a quarter's revenue (grouped by the key)" <<'SQL'
SELECT l_orderkey, count(*) AS lines, sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM lineitem WHERE l_shipdate >= date '1995-04-01' AND l_shipdate < date '1995-07-01'
GROUP BY l_orderkey ORDER BY revenue DESC, l_orderkey LIMIT 20
SQL
query W04 "top 10 suppliers by quantity (grouped by a non-key)" <<'SQL'
SELECT l_suppkey, sum(l_quantity) AS qty, count(*) AS lines
FROM lineitem WHERE l_shipdate >= date '1997-01-01' AND l_shipdate < date '1997-07-01'
	AND l_shipinstruct = 'DELIVER IN PERSON'
GROUP BY l_suppkey ORDER BY qty DESC, l_suppkey LIMIT 10
SQL
query W05 "DISTINCT (supplier, ship mode) pairs of large lines, counted" <<'SQL'
SELECT l_shipmode, count(*) AS pairs
FROM (SELECT DISTINCT l_suppkey, l_shipmode FROM lineitem
	WHERE l_quantity >= 45 AND l_shipdate >= date '1993-01-01' AND l_shipdate < date '1994-01-01') d
GROUP BY l_shipmode ORDER BY l_shipmode
SQL
query W06 "customer x orders x lineitem, by market segment" <<'SQL'
SELECT c_mktsegment, count(DISTINCT o_orderkey) AS orders, count(*) AS lines,
	sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM customer JOIN orders ON o_custkey = c_custkey JOIN lineitem ON l_orderkey = o_orderkey
WHERE o_orderdate >= date '1996-01-01' AND o_orderdate < date '1997-01-01' AND l_returnflag <> 'R'
GROUP BY c_mktsegment ORDER BY c_mktsegment
SQL
query W07 "customer x orders x lineitem, top 10 open orders of a segment" <<'SQL'
SELECT l_orderkey, o_orderdate, o_shippriority, sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM customer JOIN orders ON o_custkey = c_custkey JOIN lineitem ON l_orderkey = o_orderkey
WHERE c_mktsegment = 'MACHINERY' AND o_orderdate < date '1995-03-20' AND l_shipdate > date '1995-03-20'
GROUP BY l_orderkey, o_orderdate, o_shippriority ORDER BY revenue DESC, o_orderdate, l_orderkey LIMIT 10
SQL
query W08 "lineitem x supplier x nation x region, revenue by nation" <<'SQL'
SELECT n_name, count(*) AS lines, sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM lineitem JOIN supplier ON s_suppkey = l_suppkey JOIN nation ON n_nationkey = s_nationkey
	JOIN region ON r_regionkey = n_regionkey
WHERE r_name = 'EUROPE' AND l_shipdate >= date '1994-01-01' AND l_shipdate < date '1995-01-01'
GROUP BY n_name ORDER BY revenue DESC, n_name
SQL
query W09 "lineitem x orders x customer x nation, top 20 customers by returns" <<'SQL'
SELECT c_custkey, c_name, n_name, c_acctbal, count(*) AS lines, sum(l_extendedprice * (1 - l_discount)) AS lost
FROM customer JOIN orders ON o_custkey = c_custkey JOIN lineitem ON l_orderkey = o_orderkey
	JOIN nation ON n_nationkey = c_nationkey
WHERE o_orderdate >= date '1993-07-01' AND o_orderdate < date '1993-10-01' AND l_returnflag = 'R'
GROUP BY c_custkey, c_name, n_name, c_acctbal ORDER BY lost DESC, c_custkey LIMIT 20
SQL
query W10 "part x partsupp x supplier, stock value by brand" <<'SQL'
SELECT p_brand, count(*) AS offers, sum(ps_availqty) AS avail, sum(ps_supplycost * ps_availqty) AS stock_value,
	min(ps_supplycost) AS cheapest
FROM part JOIN partsupp ON ps_partkey = p_partkey JOIN supplier ON s_suppkey = ps_suppkey
WHERE p_size BETWEEN 10 AND 20 AND s_acctbal > 0
GROUP BY p_brand ORDER BY p_brand
SQL
query W11 "orders x lineitem x part, filters on part, by priority and container" <<'SQL'
SELECT o_orderpriority, p_container, count(*) AS lines, sum(l_quantity) AS qty,
	sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM orders JOIN lineitem ON l_orderkey = o_orderkey JOIN part ON p_partkey = l_partkey
WHERE p_brand IN ('Brand#13', 'Brand#42') AND p_container LIKE 'MED%'
	AND o_orderdate >= date '1995-01-01' AND o_orderdate < date '1997-01-01'
GROUP BY o_orderpriority, p_container ORDER BY o_orderpriority, p_container
SQL
query W12 "6-way: part, lineitem, partsupp, supplier, orders, nation; profit by nation and year" <<'SQL'
SELECT n_name AS nation, extract(year FROM o_orderdate) AS o_year,
	sum(l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity) AS profit
FROM part JOIN lineitem ON l_partkey = p_partkey
	JOIN partsupp ON ps_partkey = l_partkey AND ps_suppkey = l_suppkey
	JOIN supplier ON s_suppkey = l_suppkey JOIN orders ON o_orderkey = l_orderkey
	JOIN nation ON n_nationkey = s_nationkey
WHERE p_name LIKE '%olive%'
GROUP BY nation, o_year ORDER BY nation, o_year DESC
SQL
query W13 "IN (lineitem grouped by the key HAVING sum > x), with customer x orders x lineitem" <<'SQL'
SELECT c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity) AS qty
FROM customer JOIN orders ON o_custkey = c_custkey JOIN lineitem ON l_orderkey = o_orderkey
WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > 260)
GROUP BY c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
ORDER BY o_totalprice DESC, o_orderdate, o_orderkey LIMIT 50
SQL
query W14 "EXISTS correlated on the key: late orders by priority" <<'SQL'
SELECT o_orderpriority, count(*) AS late_orders FROM orders
WHERE o_orderdate >= date '1996-04-01' AND o_orderdate < date '1996-07-01'
	AND EXISTS (SELECT 1 FROM lineitem WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate)
GROUP BY o_orderpriority ORDER BY o_orderpriority
SQL
query W15 "EXISTS and NOT EXISTS on the key plus a non-key inequality: suppliers who kept orders waiting" <<'SQL'
SELECT s_name, count(*) AS waits
FROM supplier JOIN lineitem l1 ON l1.l_suppkey = s_suppkey JOIN orders ON o_orderkey = l1.l_orderkey
	JOIN nation ON n_nationkey = s_nationkey
WHERE o_orderstatus = 'F' AND l1.l_receiptdate > l1.l_commitdate AND n_name = 'KENYA'
	AND EXISTS (SELECT 1 FROM lineitem l2 WHERE l2.l_orderkey = l1.l_orderkey AND l2.l_suppkey <> l1.l_suppkey)
	AND NOT EXISTS (SELECT 1 FROM lineitem l3 WHERE l3.l_orderkey = l1.l_orderkey
		AND l3.l_suppkey <> l1.l_suppkey AND l3.l_receiptdate > l3.l_commitdate)
GROUP BY s_name ORDER BY waits DESC, s_name LIMIT 100
SQL
query W16 "NOT EXISTS correlated on a non-key: customers without recent orders" <<'SQL'
SELECT c_mktsegment, count(*) AS customers, sum(c_acctbal) AS balance
FROM customer WHERE c_acctbal > 0
	AND NOT EXISTS (SELECT 1 FROM orders WHERE o_custkey = c_custkey AND o_orderdate >= date '1997-01-01')
GROUP BY c_mktsegment ORDER BY c_mktsegment
SQL
query W17 "EXISTS correlated on a non-key: small parts shipped by air in a quarter" <<'SQL'
SELECT p_mfgr, count(*) AS parts, sum(p_retailprice) AS list_value FROM part
WHERE p_size <= 10 AND EXISTS (SELECT 1 FROM lineitem WHERE l_partkey = p_partkey AND l_shipmode = 'AIR'
	AND l_shipdate >= date '1997-01-01' AND l_shipdate < date '1997-04-01')
GROUP BY p_mfgr ORDER BY p_mfgr
SQL
query W18 "scalar subquery correlated on (part, supplier): stock above half a year's sales" <<'SQL'
SELECT s_name, p_name, ps_availqty
FROM part JOIN partsupp ON ps_partkey = p_partkey JOIN supplier ON s_suppkey = ps_suppkey
	JOIN nation ON n_nationkey = s_nationkey
WHERE p_name LIKE 'ivory%' AND n_name = 'CANADA'
	AND ps_availqty > (SELECT 0.5 * sum(l_quantity) FROM lineitem
		WHERE l_partkey = p_partkey AND l_suppkey = s_suppkey
		AND l_shipdate >= date '1995-01-01' AND l_shipdate < date '1996-01-01')
ORDER BY s_name, p_name, ps_availqty
SQL
query W19 "scalar subquery correlated on the key: orders of a week dominated by one line" <<'SQL'
SELECT o_orderpriority, count(*) AS orders, sum(o_totalprice) AS value FROM orders
WHERE o_orderdate >= date '1996-09-02' AND o_orderdate < date '1996-09-09'
	AND (SELECT max(l_extendedprice * (1 - l_discount)) FROM lineitem WHERE l_orderkey = o_orderkey) > 0.5 * o_totalprice
GROUP BY o_orderpriority ORDER BY o_orderpriority
SQL
query W20 "aggregate CTE (lineitem by the key) joined back to orders on the key" <<'SQL'
WITH order_value AS (SELECT l_orderkey, count(*) AS lines, sum(l_extendedprice * (1 - l_discount)) AS net
	FROM lineitem WHERE l_shipmode IN ('MAIL', 'SHIP') GROUP BY l_orderkey)
SELECT o_orderpriority, o_orderstatus, count(*) AS orders, sum(lines) AS lines, sum(net) AS net
FROM orders JOIN order_value ON l_orderkey = o_orderkey
WHERE o_orderdate >= date '1994-01-01' AND o_orderdate < date '1995-01-01' AND net > 50000
GROUP BY o_orderpriority, o_orderstatus ORDER BY o_orderpriority, o_orderstatus
SQL
query W21 "CTE used twice: suppliers within 2% of the quarter's best revenue" <<'SQL'
WITH supplier_revenue AS (SELECT l_suppkey AS supplier_no, sum(l_extendedprice * (1 - l_discount)) AS total
	FROM lineitem WHERE l_shipdate >= date '1996-01-01' AND l_shipdate < date '1996-04-01' GROUP BY l_suppkey)
SELECT s_suppkey, s_name, s_phone, total
FROM supplier JOIN supplier_revenue ON supplier_no = s_suppkey
WHERE total >= 0.98 * (SELECT max(total) FROM supplier_revenue)
ORDER BY total DESC, s_suppkey
SQL
query W22 "aggregate CTE (lineitem by part) joined to part and lineitem: small lines of small containers" <<'SQL'
WITH part_qty AS (SELECT l_partkey AS q_partkey, avg(l_quantity) AS avg_qty FROM lineitem GROUP BY l_partkey)
SELECT p_brand, count(*) AS small_lines, sum(l_extendedprice) AS small_value
FROM lineitem JOIN part ON p_partkey = l_partkey JOIN part_qty ON q_partkey = p_partkey
WHERE p_container IN ('SM BOX', 'SM CASE') AND l_quantity < 0.3 * avg_qty
GROUP BY p_brand ORDER BY p_brand
SQL
query W23 "window partitioned by the key: each order's largest line of a month, by ship mode" <<'SQL'
SELECT l_shipmode, count(*) AS orders, sum(l_extendedprice) AS top_line_value
FROM (SELECT l_shipmode, l_extendedprice,
		rank() OVER (PARTITION BY l_orderkey ORDER BY l_extendedprice DESC, l_linenumber) AS r
	FROM lineitem WHERE l_shipdate >= date '1995-09-01' AND l_shipdate < date '1995-10-01') s
WHERE r = 1 GROUP BY l_shipmode ORDER BY l_shipmode
SQL
query W24 "window over aggregated rows: top 3 customers of each nation by a year's revenue" <<'SQL'
SELECT n_name, c_custkey, revenue, rnk FROM (
	SELECT n_name, c_custkey, sum(l_extendedprice * (1 - l_discount)) AS revenue,
		rank() OVER (PARTITION BY n_name ORDER BY sum(l_extendedprice * (1 - l_discount)) DESC, c_custkey) AS rnk
	FROM customer JOIN orders ON o_custkey = c_custkey JOIN lineitem ON l_orderkey = o_orderkey
		JOIN nation ON n_nationkey = c_nationkey
	WHERE o_orderdate >= date '1997-01-01' AND o_orderdate < date '1998-01-01'
	GROUP BY n_name, c_custkey) s
WHERE rnk <= 3 ORDER BY n_name, rnk
SQL
query W25 "ORDER BY ... LIMIT of joined rows: a year's 25 most expensive truck lines" <<'SQL'
SELECT l_orderkey, l_linenumber, o_orderdate, o_orderpriority, l_extendedprice, l_discount
FROM orders JOIN lineitem ON l_orderkey = o_orderkey
WHERE l_shipmode = 'TRUCK' AND o_orderdate >= date '1993-01-01' AND o_orderdate < date '1994-01-01'
ORDER BY l_extendedprice DESC, l_orderkey, l_linenumber LIMIT 25
SQL

BENCH_QUERIES=${BENCH_QUERIES:-$ALL_QUERIES}
for name in $BENCH_QUERIES; do
	[ -n "${SQLQ[$name]:-}" ] || die "unknown query $name in BENCH_QUERIES (known:$ALL_QUERIES)"
done
for name in $BENCH_ALLOW_DIFF; do
	[ -n "${SQLQ[$name]:-}" ] || die "unknown query $name in BENCH_ALLOW_DIFF"
done

# --- configurations -------------------------------------------------------------

CONFIGS="colojoin native_b native_c local"
declare -A CFG_SERVERS=([colojoin]=plain [native_b]=tuned [native_c]=tuned [local]="")
cfg_sql() {
	echo "SET statement_timeout = '${BENCH_TIMEOUT}s';"
	case $1 in
	colojoin) echo "SET colojoin.enable = on;" ;;
	native_b) echo "SET colojoin.enable = off; SET enable_partitionwise_join = on; SET enable_partitionwise_aggregate = on;" ;;
	native_c) echo "SET colojoin.enable = off; SET enable_partitionwise_join = on; SET enable_partitionwise_aggregate = off;" ;;
	local) echo "SET search_path = local, public;" ;;
	esac
}
servers_for() { [ -z "${CFG_SERVERS[$1]}" ] || set_servers "${CFG_SERVERS[$1]}"; }

# run_answer CFG NAME: one untimed session running the query; its answer in
# answers/NAME.CFG.txt; prints its ms, or "timeout", or "error" (the message
# in answers/NAME.CFG.err).  (The caller sets the servers: this runs in a
# command substitution.)
run_answer() {
	local cfg=$1 name=$2 f="$OUT/answers/$2.$1"
	if { cfg_sql "$cfg"; echo '\timing on'; echo "${SQLQ[$name]};"; } | q -At >"$f.out" 2>"$f.err"; then
		grep -v '^Time: ' "$f.out" >"$f.txt" || true
		awk '/^Time: / { t = $2 } END { print t }' "$f.out"
	elif grep -q 'statement timeout' "$f.err"; then
		echo timeout
	else
		echo error
	fi
}

# run_timed CFG NAME WARM: one session that runs WARM untimed, then the query
# under \timing; prints its ms, or "timeout", or "error"
run_timed() {
	local cfg=$1 name=$2 warm=$3 out
	local err="$OUT/raw/$name.$cfg.err"
	if out=$({ cfg_sql "$cfg"; echo '\o /dev/null'; echo "$warm"; echo '\timing on'; echo "${SQLQ[$name]};"; } |
		q -At 2>"$err.last"); then
		awk '/^Time: / { t = $2 } END { print t }' <<<"$out"
	elif grep -q 'statement timeout' "$err.last"; then
		echo timeout
	else
		echo error
	fi
	cat "$err.last" >>"$err"
	rm -f "$err.last"
}

# the plans: EXPLAIN VERBOSE of every configuration, EXPLAIN ANALYZE VERBOSE of colojoin's
save_plans() {
	local name=$1 cfg
	for cfg in $CONFIGS; do
		servers_for "$cfg"
		{ cfg_sql "$cfg"; echo "SET statement_timeout = 0;"; echo "EXPLAIN (VERBOSE) ${SQLQ[$name]};"; } |
			q -At >"$OUT/plans/$name.$cfg.txt" 2>&1 || true
		if [ "$cfg" != colojoin ] && grep -q 'Custom Scan (Colocated' "$OUT/plans/$name.$cfg.txt"; then
			die "$name: the plan of $cfg has a colojoin scan"
		fi
	done
	if [ "$BENCH_EXPLAIN_ANALYZE" = 1 ]; then
		servers_for colojoin
		{ cfg_sql colojoin; echo "EXPLAIN (ANALYZE, VERBOSE) ${SQLQ[$name]};"; } |
			q -At >"$OUT/plans/$name.colojoin.analyze.txt" 2>&1 || true
	fi
}

allowed() { case " $BENCH_ALLOW_DIFF " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
declare -A WRONG=() UNCHECKED=()
N_WRONG=0
# wrong NAME CFG WHY: a configuration's answer is not the reference's
wrong() {
	local name=$1 cfg=$2 why=$3
	WRONG[$name]="${WRONG[$name]:-}$cfg: $why; "
	N_WRONG=$((N_WRONG + 1))
	echo "  $name: $cfg: $why" >&2
	[ ! -s "$OUT/answers/$name.$cfg.diff" ] || head -20 "$OUT/answers/$name.$cfg.diff" | sed 's/^/    /' >&2
	if allowed "$name"; then
		{
			echo "  !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
			echo "  !!! WARNING: $name: $cfg gives a WRONG ANSWER (allowed by BENCH_ALLOW_DIFF)"
			echo "  !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
		} >&2
	else
		echo "warehouse.sh: $name: the answer of $cfg differs from the reference ($why); the query:" >&2
		echo "  ${SQLQ[$name]}" >&2
		echo "answers and diff: $OUT/answers/$name.*; BENCH_ALLOW_DIFF=\"$name\" goes on with a warning" >&2
		exit 1
	fi
}

# check NAME: every configuration's answer against the local twins' (or,
# when local timed out, the first native answer)
check() {
	local name=$1 ref="" cfg a b
	[ "${FIRST[$name.local]}" != error ] ||
		die "$name fails on the local tables: $(grep -m1 ERROR "$OUT/answers/$name.local.err" || head -1 "$OUT/answers/$name.local.err")"
	for cfg in local native_c native_b; do
		case ${FIRST[$name.$cfg]} in timeout | error) ;; *) ref=$cfg && break ;; esac
	done
	if [ -z "$ref" ]; then
		if is_ms "${FIRST[$name.colojoin]}"; then
			echo "  $name: neither local nor native finished: colojoin's answer is not checked" >&2
			UNCHECKED[$name]=1
		fi
		return 0
	fi
	REF[$name]=$ref
	for cfg in $CONFIGS; do
		[ "$cfg" != "$ref" ] || continue
		case ${FIRST[$name.$cfg]} in
		timeout) continue ;;
		error)
			wrong "$name" "$cfg" "error: $(grep -m1 ERROR "$OUT/answers/$name.$cfg.err" || head -1 "$OUT/answers/$name.$cfg.err")"
			continue
			;;
		esac
		a="$OUT/answers/$name.$ref.txt"
		b="$OUT/answers/$name.$cfg.txt"
		cmp -s "$a" "$b" && continue
		if [ -n "${UNORDERED[$name]}" ]; then
			[ "$(LC_ALL=C sort "$a" | md5sum)" != "$(LC_ALL=C sort "$b" | md5sum)" ] || continue
		fi
		diff -u "$a" "$b" >"$OUT/answers/$name.$cfg.diff" || true
		if [ "$(LC_ALL=C sort "$a" | md5sum)" = "$(LC_ALL=C sort "$b" | md5sum)" ]; then
			wrong "$name" "$cfg" "the same rows in another order (the query orders totally)"
		else
			wrong "$name" "$cfg" "$(wc -l <"$b") rows against $(wc -l <"$a") of $ref, $(grep -c '^[-+][^-+]' "$OUT/answers/$name.$cfg.diff" || true) lines differ"
		fi
	done
}

# what colojoin's plan does: Colocated scans, join nodes and other scans left
# on the coordinator, SubPlans, Strategy lines
JOIN_NODE='^[[:space:]]*(->[[:space:]]+)?((Hash|Merge)( (Left|Right|Full|Semi|Anti))* Join|Nested Loop)'
plan_summary() {
	local name=$1 f="$OUT/plans/$1.colojoin.txt"
	SCANS[$name]=$(grep -c 'Custom Scan (Colocated' "$f" || true)
	SCAN_KINDS[$name]="$(grep -c 'Custom Scan (ColocatedJoin)' "$f" || true) ColocatedJoin, $(grep -c 'Custom Scan (ColocatedCombine)' "$f" || true) ColocatedCombine"
	COORD_JOINS[$name]=$(grep -Ec "$JOIN_NODE" "$f" || true)
	FDW_SCANS[$name]=$(grep -Ec '^[[:space:]]*(->[[:space:]]+)?Foreign Scan' "$f" || true)
	SUBPLANS[$name]=$(grep -Ec '^[[:space:]]*(SubPlan|InitPlan)' "$f" || true)
	STRATEGIES[$name]=$(grep -o 'Strategy: .*' "$f" | sed 's/^Strategy: //' | paste -sd '|' || true)
	! grep -q '^ERROR' "$f" || STRATEGIES[$name]="EXPLAIN failed: $(grep -m1 '^ERROR' "$f")"
}

fmt() { awk -v v="$1" 'BEGIN { if (v !~ /^[0-9.]+$/) print v; else if (v >= 100) printf "%.0f\n", v; else printf "%.1f\n", v }'; }
is_ms() { [[ $1 =~ ^[0-9.]+$ ]]; }

# --- the runs -------------------------------------------------------------------

declare -A FIRST N MED TIMES REF SCANS SCAN_KINDS COORD_JOINS FDW_SCANS SUBPLANS STRATEGIES
uptime >"$OUT/raw/load_before.txt"
say "queries:$BENCH_QUERIES (REPS=$REPS, BENCH_CELL_SECONDS=$BENCH_CELL_SECONDS, BENCH_TIMEOUT=${BENCH_TIMEOUT}s)"
for name in $BENCH_QUERIES; do
	t0=$(date +%s)
	echo "$name: ${TITLE[$name]}"
	echo "${SQLQ[$name]};" >"$OUT/raw/$name.sql"
	# untimed: every configuration's answer, checked; the time it took
	# decides how many timed runs fit in BENCH_CELL_SECONDS
	for cfg in $CONFIGS; do
		servers_for "$cfg"
		FIRST[$name.$cfg]=$(run_answer "$cfg" "$name")
	done
	check "$name"
	save_plans "$name"
	plan_summary "$name"
	# REPS rounds, every configuration in turn
	for cfg in $CONFIGS; do
		TIMES[$name.$cfg]=""
		f=${FIRST[$name.$cfg]}
		if is_ms "$f"; then
			N[$name.$cfg]=$(awk -v t="$f" -v b="$BENCH_CELL_SECONDS" -v r="$REPS" 'BEGIN {
				c = (t < 2000) ? 2 * t : t; n = int(b * 1000 / c); if (n > r) n = r; if (n < 1) n = 1; print n }')
		else
			N[$name.$cfg]=0
		fi
	done
	for ((r = 1; r <= REPS; r++)); do
		for cfg in $CONFIGS; do
			[ "${N[$name.$cfg]}" -ge "$r" ] || continue
			warm="${SQLQ[$name]};"
			awk -v t="${FIRST[$name.$cfg]}" -v w="$BENCH_WARM_SECONDS" 'BEGIN { exit !(t >= w * 1000) }' &&
				warm="EXPLAIN ${SQLQ[$name]};"
			servers_for "$cfg"
			t=$(run_timed "$cfg" "$name" "$warm")
			if is_ms "$t"; then
				TIMES[$name.$cfg]+="$t "
			else
				# a later run timed out or failed: the cell keeps the runs it has
				echo "  $name: $cfg: a timed run gave $t" >&2
				N[$name.$cfg]=$((r - 1))
				[ -n "${TIMES[$name.$cfg]}" ] || FIRST[$name.$cfg]=$t
			fi
		done
	done
	line=""
	for cfg in $CONFIGS; do
		if [ -n "${TIMES[$name.$cfg]}" ]; then
			MED[$name.$cfg]=$(tr ' ' '\n' <<<"${TIMES[$name.$cfg]}" | grep . | median)
		else
			MED[$name.$cfg]=${FIRST[$name.$cfg]}
		fi
		printf '%s\t%s\t%s\t%s\n' "$name" "$cfg" "${FIRST[$name.$cfg]}" "${TIMES[$name.$cfg]}" >>"$OUT/raw/times.tsv"
		line="$line $cfg $(fmt "${MED[$name.$cfg]}")"
	done
	echo " ${line# } ms; colojoin: ${SCAN_KINDS[$name]}, ${COORD_JOINS[$name]} joins on the coordinator${WRONG[$name]:+; WRONG ANSWER} ($(($(date +%s) - t0)) s)"
done
set_servers plain
uptime >"$OUT/raw/load_after.txt"

# --- report ---------------------------------------------------------------------

cell() { # NAME CFG: the median, with (n=...) when fewer than REPS runs
	local v=${MED[$1.$2]}
	if is_ms "$v"; then
		v=$(fmt "$v")
		[ "${N[$1.$2]}" = "$REPS" ] || v="$v (n=${N[$1.$2]})"
	elif [ "$v" = timeout ]; then
		v="timeout (> ${BENCH_TIMEOUT} s)"
	fi
	echo "$v"
}
# A / B; a bound when one of them timed out
ratio_of() {
	local a=$1 b=$2 limit
	limit=$(awk -v t="$BENCH_TIMEOUT" 'BEGIN { print t * 1000 }')
	if is_ms "$a" && is_ms "$b"; then
		ratio "$a" "$b"
	elif is_ms "$a" && [ "$b" = timeout ]; then
		echo "< $(ratio "$a" "$limit")"
	elif [ "$a" = timeout ] && is_ms "$b"; then
		echo "> $(ratio "$limit" "$b")"
	else
		echo -
	fi
}
{
	echo "# colojoin decision-support benchmark (bench/warehouse.sh), $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "Commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?') ($(git -C "$ROOT" status --short -- src 2>/dev/null | wc -l) changed files in src/;" \
		"$([ "${BENCH_SKIP_BUILD:-0}" = 1 ] && echo 'the colojoin installed before the run' || echo 'built and installed by the run')," \
		"colojoin.so of $SO_TIME);" \
		"SCALE=$SCALE: $(for t in $TABLES; do printf '%s %s, ' "$t" "${ROWS[$t]}"; done | sed 's/, $//');" \
		"16 hash partitions on 4 nodes, nation and region reference tables; foreign tables never analyzed."
	echo "$(nproc) cores; load average before $(sed 's/.*load average: //' "$OUT/raw/load_before.txt"), after $(sed 's/.*load average: //' "$OUT/raw/load_after.txt")."
	echo
	echo "Median ms of REPS=$REPS runs (psql \\timing, warm session; \"(n=...)\": fewer runs in BENCH_CELL_SECONDS=$BENCH_CELL_SECONDS)."
	echo "native best: the faster of native_b (partitionwise join + aggregate) and native_c (partitionwise join), servers"
	echo "async_capable, use_remote_estimate, fetch_size 10000. local: the same rows in plain tables of the coordinator."
	echo "Ratios colojoin / other: below 1, colojoin is faster. Every answer equals the local tables' unless listed below."
	echo
	echo "| query | colojoin ms | native best ms | local ms | colojoin / native | colojoin / local | Colocated scans | joins on coordinator |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
	for name in $BENCH_QUERIES; do
		b=${MED[$name.native_b]} c=${MED[$name.native_c]}
		best=native_b
		if is_ms "$c" && { ! is_ms "$b" || awk -v b="$b" -v c="$c" 'BEGIN { exit !(c < b) }'; }; then best=native_c; fi
		nb=$(cell "$name" "$best")
		is_ms "${MED[$name.$best]}" && nb="$nb (${best#native_})"
		cj=$(cell "$name" colojoin)
		[ -z "${WRONG[$name]:-}" ] || cj="$cj **WRONG**"
		[ -z "${UNCHECKED[$name]:-}" ] || cj="$cj (unchecked)"
		joins=no
		[ "${COORD_JOINS[$name]}" = 0 ] || joins="yes (${COORD_JOINS[$name]})"
		echo "| $name ${TITLE[$name]} | $cj | $nb | $(cell "$name" local) |" \
			"$(ratio_of "${MED[$name.colojoin]}" "${MED[$name.$best]}") | $(ratio_of "${MED[$name.colojoin]}" "${MED[$name.local]}") |" \
			"${SCANS[$name]} | $joins |"
	done
	echo
	echo "Geometric means over the queries where both finished: colojoin / native best $(for name in $BENCH_QUERIES; do
		b=${MED[$name.native_b]} c=${MED[$name.native_c]} best=$b
		is_ms "$c" && { ! is_ms "$b" || awk -v b="$b" -v c="$c" 'BEGIN { exit !(c < b) }'; } && best=$c
		is_ms "${MED[$name.colojoin]}" && is_ms "$best" && echo "${MED[$name.colojoin]} $best"
	done | awk '{ s += log($1 / $2); n++ } END { if (n) printf "%.2f (%d queries)", exp(s / n), n; else print "-" }');" \
		"of colojoin / local: $(for name in $BENCH_QUERIES; do
			is_ms "${MED[$name.colojoin]}" && is_ms "${MED[$name.local]}" && echo "${MED[$name.colojoin]} ${MED[$name.local]}"
		done | awk '{ s += log($1 / $2); n++ } END { if (n) printf "%.2f (%d queries)", exp(s / n), n; else print "-" }')."
	echo
	if [ "$N_WRONG" -gt 0 ]; then
		echo "**Wrong answers** (allowed by BENCH_ALLOW_DIFF=\"$BENCH_ALLOW_DIFF\"; diffs in bench/results/warehouse-$STAMP/answers/):"
		echo
		for name in $BENCH_QUERIES; do
			[ -z "${WRONG[$name]:-}" ] || echo "- $name: ${WRONG[$name]%; }"
		done
	else
		echo "Answers: every configuration that finished gave the reference's answer (the local tables', exact)."
	fi
	others=$(for name in $BENCH_QUERIES; do
		[ -z "${REF[$name]:-}" ] || [ "${REF[$name]}" = local ] || printf '%s (against %s), ' "$name" "${REF[$name]}"
		[ -z "${UNCHECKED[$name]:-}" ] || printf '%s (unchecked: nothing else finished), ' "$name"
	done | sed 's/, $//')
	if [ -n "$others" ]; then
		echo "Not checked against the local tables (local did not finish): $others."
	fi
	echo
	echo "colojoin's plans (bench/results/warehouse-$STAMP/plans/): Colocated scans, join nodes left on the coordinator,"
	echo "postgres_fdw Foreign Scans outside colojoin's scans, SubPlans/InitPlans, and the Strategy lines:"
	echo
	for name in $BENCH_QUERIES; do
		echo "- $name: ${SCAN_KINDS[$name]}, ${COORD_JOINS[$name]} joins on the coordinator, ${FDW_SCANS[$name]} Foreign Scans," \
			"${SUBPLANS[$name]} SubPlans/InitPlans; ${STRATEGIES[$name]:-no colojoin scan}" | sed 's/|/; /g'
	done
	echo
	echo "Command: \`SCALE=$SCALE REPS=$REPS BENCH_CELL_SECONDS=$BENCH_CELL_SECONDS BENCH_WARM_SECONDS=$BENCH_WARM_SECONDS BENCH_TIMEOUT=$BENCH_TIMEOUT bench/warehouse.sh\`" \
		"($(($(date +%s) - T_START)) s)."
} >"$REPORT"
echo
cat "$REPORT"
say "done: $REPORT"
