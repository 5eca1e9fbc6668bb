#!/bin/bash
# bench/warehouse.sh -- our own decision-support benchmark: 8 tables of a
# warehouse schema sharded over a coordinator and 4 nodes, 25 queries
# (W01..W25: single-table aggregates, 3- to 6-way joins on different keys,
# subqueries, CTEs, window functions, ORDER BY ... LIMIT), each answered by
# colojoin, by the best native PostgreSQL + postgres_fdw plan, and by the
# same rows in plain local tables of the coordinator, in one run.  Every
# answer is checked against the local tables' before anything is timed: the
# script stops (exit 1), naming the query, when one differs.  Prints a table
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
# first runs the query once untimed, or only EXPLAINs it when it takes more
# than 2 s, then times it with \timing):
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
#   BENCH_TIMEOUT       statement_timeout in seconds of every run (default
#                       300); a configuration that exceeds it is reported as
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
BENCH_TIMEOUT=${BENCH_TIMEOUT:-300}
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
	for t in $TABLES; do
		echo "\\echo load $t"
		echo "INSERT INTO $t SELECT * FROM local.$t;"
	done
}

# server options of native_b and native_c ("tuned"), or none ("plain")
SERVERS_NOW=""
set_servers() {
	local mode=$1 i
	[ "$mode" != "$SERVERS_NOW" ] || return 0
	for i in 1 2 3 4; do
		q <<SQL
DO \$\$
DECLARE
	opt text;
	have text[] := (SELECT coalesce(array_agg(split_part(o, '=', 1)), '{}')
	                FROM pg_foreign_server, unnest(srvoptions) o WHERE srvname = 'n$i');
BEGIN
	FOREACH opt IN ARRAY ARRAY['async_capable', 'use_remote_estimate', 'fetch_size'] LOOP
		IF opt = ANY (have) THEN
			EXECUTE format('ALTER SERVER n$i OPTIONS (DROP %I)', opt);
		END IF;
	END LOOP;
	IF '$mode' = 'tuned' THEN
		ALTER SERVER n$i OPTIONS (ADD async_capable 'true', ADD use_remote_estimate 'true',
		                          ADD fetch_size '10000');
	END IF;
END
\$\$;
SQL
	done
	SERVERS_NOW=$mode
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
	set_servers tuned # whatever an interrupted run left, then plain
	set_servers plain
else
	bench_fresh_cluster
	bench_in_memory
	say "generate the local twins (SCALE=$SCALE: $N_ORD orders, $N_CUST customers, $N_PART parts, $N_SUPP suppliers)"
	generate_sql >"$OUT/raw/generate.sql"
	q -f "$OUT/raw/generate.sql" >/dev/null
	say "sharded tables, loaded through colojoin"
	shard_sql >"$OUT/raw/shard.sql"
	q -f "$OUT/raw/shard.sql" | sed 's/^/  /'
	SERVERS_NOW=plain
	say "primary keys and lineitem (l_partkey, l_suppkey) on the nodes and the twins; VACUUM ANALYZE"
	# every placement of every table, the reference tables' copies too
	for i in 1 2 3 4; do : >"$OUT/raw/node$i-index.sql"; done
	while IFS='|' read -r tab node rel; do
		index_sql "$tab" "$rel" >>"$OUT/raw/${node/n/node}-index.sql"
	done < <(q -At -c "SELECT table_name::text, node, remote_relation FROM colojoin.shards ORDER BY 1, 2, 3")
	pids=()
	for i in 1 2 3 4; do
		qn "$i" -f "$OUT/raw/node$i-index.sql" >/dev/null &
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
# the sharded tables: no statistics on the coordinator, parents included
analyzed=$(q -At -c "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = 'public' AND c.relkind IN ('f', 'p')
	AND (c.reltuples >= 0 OR EXISTS (SELECT FROM pg_statistic WHERE starelid = c.oid))")
[ "$analyzed" = 0 ] || die "the sharded tables have statistics on the coordinator"

say "check the load: every table's rows through postgres_fdw (colojoin off) against the twins"
for t in $TABLES; do
	n_local=$(q -At -c "SELECT count(*) FROM local.$t")
	n_shard=$(q -At -c "SET colojoin.enable = off; SET enable_partitionwise_aggregate = on; SELECT count(*) FROM public.$t" | tail -1)
	printf '  %-9s %9s rows\n' "$t" "$n_local"
	[ "$n_local" = "$n_shard" ] && [ "$n_local" -gt 0 ] || die "$t: $n_shard rows sharded, $n_local in local.$t"
	ROWS[$t]=$n_local
done 2>/dev/null || true
declare -A ROWS
for t in $TABLES; do ROWS[$t]=$(q -At -c "SELECT count(*) FROM local.$t"); done
