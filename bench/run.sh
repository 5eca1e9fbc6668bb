#!/bin/bash
# bench/run.sh -- the colojoin benchmark: one command that builds and installs
# colojoin, starts its own coordinator and 4 nodes, loads TPC-H-like tables
# sharded 16 ways (4 partitions per node) directly on the nodes, and times,
# in one run on the same servers and data, colojoin against native
# PostgreSQL + postgres_fdw in three configurations.  It writes
# bench/results/<timestamp>.md (and the raw material under
# bench/results/<timestamp>/) and prints the table.  It is not a test: it
# fails only when something breaks or when a query's answer differs between
# configurations.
#
#   bench/run.sh                     SCALE=1: 1M orders, ~4M lineitem
#   SCALE=0.05 REPS=3 bench/run.sh   a quick check
#
# Settings (environment):
#   SCALE            row counts relative to 1M orders / ~4M lineitem / 200k part
#                    (default 1)
#   REPS             timed runs per query and configuration; the median is
#                    reported (default 5; every session first runs the query
#                    once more, untimed, for the checksum and warm caches)
#   P1_N             fresh sessions timed for P1 per configuration (default 20)
#   P2_N             executions of P2 per configuration, in warm sessions
#                    (default 200); P1 and P2 run interleaved in 5 rounds
#   CJ_PORT          coordinator port; nodes on CJ_PORT+1..+4 (default 22432)
#   CJ_CLUSTER_DIR   the cluster's data (default /tmp/cj-bench); recreated
#   BENCH_SKIP_BUILD=1      use the colojoin that is installed
#   BENCH_REUSE=1           keep a cluster loaded by an earlier run at the same
#                           SCALE (development only; default: fresh cluster)
#   BENCH_EXPLAIN_ANALYZE   colojoin (default) | all | none: configurations
#                           whose EXPLAIN ANALYZE is saved under plans/
#   BENCH_CELL_SECONDS  time budget of the timed runs of one query in one
#                    configuration (default 60): a query whose first run
#                    took longer than BENCH_CELL_SECONDS / REPS runs fewer
#                    times, at least 3 (the report says how many)
#   BENCH_QUERIES    the queries to run (default all:
#                    "J1 P C1 Q2 Q3 R1 R2 S1 W1 PLAN")
#
# The queries, configurations and what is measured are described in
# bench/README.md.
#
# Run as root (make install writes into PostgreSQL's directories); the servers
# run as user postgres.  The cluster is stopped on exit, whatever happens.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)

SCALE=${SCALE:-1}
REPS=${REPS:-5}
P1_N=${P1_N:-20}
P2_N=${P2_N:-200}
export CJ_PORT=${CJ_PORT:-22432}
export CJ_CLUSTER_DIR=${CJ_CLUSTER_DIR:-/tmp/cj-bench}
export CJ_NODES=4
export CJ_DB=bench
BENCH_EXPLAIN_ANALYZE=${BENCH_EXPLAIN_ANALYZE:-colojoin}
BENCH_QUERIES=${BENCH_QUERIES:-J1 P C1 Q2 Q3 R1 R2 S1 W1 PLAN}
BENCH_CELL_SECONDS=${BENCH_CELL_SECONDS:-60}
# bench_server_options; this script's own q, qn, say, median and ratio,
# defined below, replace the common ones
. "$BENCH/bench_common.sh"

CLUSTER="$ROOT/test/cluster/cluster.sh"
if [ -z "${PG_CONFIG:-}" ]; then
	if [ -x /usr/lib/postgresql/15/bin/pg_config ]; then
		PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
	else
		PG_CONFIG=pg_config
	fi
fi
PG_BINDIR=$("$PG_CONFIG" --bindir)
PSQL="$PG_BINDIR/psql"
PGBENCH="$PG_BINDIR/pgbench"
[ -x "$PGBENCH" ] || PGBENCH=$(command -v pgbench)

STAMP=$(date +%Y%m%d-%H%M%S)
OUT="$BENCH/results/$STAMP"
REPORT="$BENCH/results/$STAMP.md"
mkdir -p "$OUT/plans" "$OUT/check" "$OUT/raw" "$OUT/sql"

# sizes
N_ORDERS=$(awk -v s="$SCALE" 'BEGIN { printf "%d", 1000000 * s }')
N_PART=$(awk -v s="$SCALE" 'BEGIN { n = int(200000 * s); if (n < 100) n = 100; printf "%d", n }')
N_CUST=$(awk -v s="$SCALE" 'BEGIN { n = int(150000 * s); if (n < 100) n = 100; printf "%d", n }')
N_SUPP=$(awk -v s="$SCALE" 'BEGIN { n = int(10000 * s); if (n < 100) n = 100; printf "%d", n }')
[ "$N_ORDERS" -ge 1000 ] || { echo "run.sh: SCALE=$SCALE is too small" >&2; exit 2; }

T_START=$(date +%s)
say() { printf '\n=== [%4ds] %s\n' $(($(date +%s) - T_START)) "$*"; }
die() {
	echo "run.sh: $*" >&2
	exit 1
}

node_port() { echo $((CJ_PORT + $1)); }
# node (1..4) holding remainder r: partitions are dealt round robin, the way
# colojoin.create_shards places them
node_of() { echo $(($1 % 4 + 1)); }

# psql on the coordinator (q) or on node i (qn i); scripts stop at the first error
q() { "$PSQL" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$CJ_PORT" -U postgres -d bench "$@"; }
qn() {
	local i=$1
	shift
	"$PSQL" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$(node_port "$i")" -U postgres -d bench "$@"
}

# the p-th percentile (nearest rank) of the numbers on stdin
percentile() { sort -g | awk -v p="$1" '{ v[NR] = $1 } END { if (NR == 0) print "NA"; else { i = int((NR * p + 99) / 100); if (i < 1) i = 1; printf "%.3f\n", v[i] } }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "NA"; else if (NR % 2) printf "%.3f\n", v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# --- build ------------------------------------------------------------------

if [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
	say "build and install colojoin"
	make -C "$ROOT" -j2 PG_CONFIG="$PG_CONFIG" >"$OUT/raw/build.log" 2>&1 ||
		{ tail -30 "$OUT/raw/build.log" >&2; die "make failed (log: $OUT/raw/build.log)"; }
	make -C "$ROOT" install PG_CONFIG="$PG_CONFIG" >>"$OUT/raw/build.log" 2>&1 ||
		{ tail -30 "$OUT/raw/build.log" >&2; die "make install failed"; }
fi
# what was built: the commit and how many files of src/ differ from it
BUILT_FROM="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?') plus $(git -C "$ROOT" status --short -- src 2>/dev/null | wc -l) changed files in src/"
[ "${BENCH_SKIP_BUILD:-0}" != 1 ] || BUILT_FROM="the colojoin installed before the run (BENCH_SKIP_BUILD=1; the tree is at $BUILT_FROM)"
cc -O2 -Wall -I"$("$PG_CONFIG" --includedir)" -o "$OUT/limit" "$BENCH/limit.c" \
	-L"$("$PG_CONFIG" --libdir)" -lpq || die "cannot build bench/limit.c (needs libpq-dev)"

# --- cluster ----------------------------------------------------------------

cleanup() {
	"$CLUSTER" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'echo "run.sh: interrupted" >&2; exit 130' INT TERM HUP

LOADED_MARK="$CJ_CLUSTER_DIR/.bench-loaded"
reuse=0
if [ "${BENCH_REUSE:-0}" = 1 ] && [ -f "$LOADED_MARK" ] && [ "$(cat "$LOADED_MARK")" = "$SCALE" ]; then
	reuse=1
fi

if [ $reuse = 0 ]; then
	say "fresh cluster: coordinator on $CJ_PORT, nodes on $((CJ_PORT + 1))-$((CJ_PORT + 4)), data in $CJ_CLUSTER_DIR"
	"$CLUSTER" destroy
	"$CLUSTER" start >/dev/null
	# Benchmark settings (ALTER SYSTEM, so cluster.sh's own file stays as is).
	# Everything fits in memory; 2 cores are shared by 5 servers, so no
	# parallel workers (16 concurrent per-partition queries already use
	# both cores, and postgres_fdw scans are not parallel-safe anyway) and
	# no JIT (its compile time would dominate the shorter queries and
	# differ between plans).  The data is static: autovacuum off, every
	# table vacuumed and analyzed after the load.
	for i in 0 1 2 3 4; do
		# the coordinator also holds the local twins (configuration local)
		if [ "$i" = 0 ]; then sb=1GB; else sb=512MB; fi
		"$PSQL" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p $((CJ_PORT + i)) -U postgres -d bench <<SQL
ALTER SYSTEM SET shared_buffers = '$sb';
ALTER SYSTEM SET work_mem = '64MB';
ALTER SYSTEM SET maintenance_work_mem = '256MB';
ALTER SYSTEM SET effective_cache_size = '4GB';
ALTER SYSTEM SET random_page_cost = 1.1;
ALTER SYSTEM SET max_parallel_workers_per_gather = 0;
ALTER SYSTEM SET jit = off;
ALTER SYSTEM SET autovacuum = off;
ALTER SYSTEM SET max_wal_size = '4GB';
ALTER SYSTEM SET checkpoint_timeout = '30min';
SQL
	done
fi
say "restart (loads the colojoin just installed and the settings)"
"$CLUSTER" restart >/dev/null

# --- schema and data ----------------------------------------------------------

# columns (names and types are the same on the nodes and the coordinator)
ORDERS_COLS="o_orderkey bigint NOT NULL, o_custkey int, o_orderstatus text, o_totalprice numeric(15,2),
    o_orderdate date, o_orderpriority text, o_clerk text, o_shippriority int, o_comment text"
LINEITEM_COLS="l_orderkey bigint NOT NULL, l_partkey int, l_suppkey int, l_linenumber int NOT NULL,
    l_quantity numeric(15,2), l_extendedprice numeric(15,2), l_discount numeric(15,2), l_tax numeric(15,2),
    l_returnflag text, l_linestatus text, l_shipdate date, l_commitdate date, l_receiptdate date,
    l_shipinstruct text, l_shipmode text, l_comment text"
PART_COLS="p_partkey int NOT NULL, p_name text, p_mfgr text, p_brand text, p_type text, p_size int,
    p_container text, p_retailprice numeric(15,2), p_comment text"
T256_COLS="k bigint NOT NULL, v int"

# Deterministic pseudo-random values (the same on every server, every run).
RND_FUNC="CREATE OR REPLACE FUNCTION bench_rnd(k bigint, seed int, m int) RETURNS int
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS \$\$ SELECT (((hashint8extended(k, seed) % m) + m) % m)::int \$\$;"

# orders row for key k, from generate_series(...) k
orders_select() {
	cat <<SQL
SELECT k, 1 + bench_rnd(k, 1, $N_CUST),
       (ARRAY['F','O','P'])[1 + bench_rnd(k, 2, 3)],
       (1000 + bench_rnd(k, 3, 50000000) / 100.0)::numeric(15,2),
       date '1992-01-01' + bench_rnd(k, 4, 2405),
       (ARRAY['1-URGENT','2-HIGH','3-MEDIUM','4-NOT SPECIFIED','5-LOW'])[1 + bench_rnd(k, 5, 5)],
       'Clerk#' || lpad((1 + bench_rnd(k, 6, 1000))::text, 9, '0'),
       0,
       substr(md5(k::text) || md5((-k)::text), 1, 19 + bench_rnd(k, 7, 40))
FROM generate_series(1, $N_ORDERS::bigint) k
SQL
}

# lineitem rows of the orders in table $1 (1 to 7 lines an order, 4 on average)
lineitem_select() {
	cat <<SQL
SELECT o_orderkey, 1 + bench_rnd(lk, 11, $N_PART), 1 + bench_rnd(lk, 12, $N_SUPP), j,
       qty, (qty * (900 + bench_rnd(lk, 14, 100000) / 100.0))::numeric(15,2),
       (bench_rnd(lk, 15, 11) / 100.0)::numeric(15,2), (bench_rnd(lk, 16, 9) / 100.0)::numeric(15,2),
       (ARRAY['A','N','R'])[1 + bench_rnd(lk, 17, 3)], (ARRAY['F','O'])[1 + bench_rnd(lk, 18, 2)],
       o_orderdate + 1 + bench_rnd(lk, 19, 121),
       o_orderdate + 30 + bench_rnd(lk, 20, 61),
       o_orderdate + 1 + bench_rnd(lk, 19, 121) + 1 + bench_rnd(lk, 21, 30),
       (ARRAY['DELIVER IN PERSON','COLLECT COD','NONE','TAKE BACK RETURN'])[1 + bench_rnd(lk, 22, 4)],
       (ARRAY['REG AIR','AIR','RAIL','SHIP','TRUCK','MAIL','FOB'])[1 + bench_rnd(lk, 23, 7)],
       substr(md5(lk::text), 1, 10 + bench_rnd(lk, 24, 23))
FROM (SELECT o_orderkey, o_orderdate, j, o_orderkey * 8 + j AS lk,
             (1 + bench_rnd(o_orderkey * 8 + j, 13, 50))::numeric(15,2) AS qty
      FROM $1, generate_series(1, 1 + bench_rnd(o_orderkey, 8, 7)) j) s
SQL
}

part_select() {
	cat <<SQL
SELECT k, 'part ' || md5(k::text),
       'Manufacturer#' || (1 + bench_rnd(k, 31, 5)),
       'Brand#' || (1 + bench_rnd(k, 31, 5)) || (1 + bench_rnd(k, 32, 5)),
       (ARRAY['STANDARD','SMALL','MEDIUM','LARGE','ECONOMY','PROMO'])[1 + bench_rnd(k, 33, 6)]
           || ' ' || (ARRAY['ANODIZED','BURNISHED','PLATED','POLISHED','BRUSHED'])[1 + bench_rnd(k, 34, 5)]
           || ' ' || (ARRAY['TIN','NICKEL','BRASS','STEEL','COPPER'])[1 + bench_rnd(k, 35, 5)],
       1 + bench_rnd(k, 36, 50),
       (ARRAY['SM','LG','MED','JUMBO','WRAP'])[1 + bench_rnd(k, 37, 5)] || ' '
           || (ARRAY['CASE','BOX','BAG','JAR','PKG','PACK','CAN','DRUM'])[1 + bench_rnd(k, 38, 8)],
       (900 + k % 1000 + bench_rnd(k, 39, 100) / 100.0)::numeric(15,2),
       substr(md5((k * 3)::text), 1, 5 + bench_rnd(k, 40, 18))
FROM generate_series(1, $N_PART) k
SQL
}

# the SQL that creates and fills node i's tables
node_load_sql() {
	local i=$1 r
	echo "SET synchronous_commit = off;"
	echo "$RND_FUNC"
	# partitioned parents (no partitions) that only lend their hash partition
	# function to satisfies_hash_partition(): the same as the coordinator's
	echo "CREATE TABLE bench_hashkey_int8 (k bigint) PARTITION BY HASH (k);"
	echo "CREATE TABLE bench_hashkey_int4 (k int) PARTITION BY HASH (k);"
	for r in $(seq 0 15); do
		[ "$(node_of "$r")" = "$i" ] || continue
		echo "CREATE TABLE orders_p$r ($ORDERS_COLS);"
		echo "INSERT INTO orders_p$r $(orders_select)"
		echo "  WHERE satisfies_hash_partition('bench_hashkey_int8'::regclass, 16, $r, k);"
		echo "CREATE TABLE lineitem_p$r ($LINEITEM_COLS);"
		echo "INSERT INTO lineitem_p$r $(lineitem_select "orders_p$r");"
		echo "CREATE TABLE part_p$r ($PART_COLS);"
		echo "INSERT INTO part_p$r $(part_select)"
		echo "  WHERE satisfies_hash_partition('bench_hashkey_int4'::regclass, 16, $r, k::int);"
		echo "ALTER TABLE orders_p$r ADD PRIMARY KEY (o_orderkey);"
		echo "ALTER TABLE lineitem_p$r ADD PRIMARY KEY (l_orderkey, l_linenumber);"
		echo "ALTER TABLE part_p$r ADD PRIMARY KEY (p_partkey);"
	done
	# orders with modulus 8: remainder r of 8 holds the keys of remainders r
	# and r + 8 of 16, which this node holds too (r % 4 = (r + 8) % 4)
	for r in $(seq 0 7); do
		[ "$(node_of "$r")" = "$i" ] || continue
		echo "CREATE TABLE orders8_p$r ($ORDERS_COLS);"
		echo "INSERT INTO orders8_p$r SELECT * FROM orders_p$r UNION ALL SELECT * FROM orders_p$((r + 8));"
		echo "ALTER TABLE orders8_p$r ADD PRIMARY KEY (o_orderkey);"
	done
	# two small 256-way tables for the planning-time measurement
	for r in $(seq 0 255); do
		[ "$(node_of "$r")" = "$i" ] || continue
		for t in t256a t256b; do
			echo "CREATE TABLE ${t}_p$r ($T256_COLS);"
			echo "INSERT INTO ${t}_p$r SELECT k, (k * 7 + length('$t')) % 100 FROM generate_series(1, 2560::bigint) k"
			echo "  WHERE satisfies_hash_partition('bench_hashkey_int8'::regclass, 256, $r, k);"
		done
	done
	echo "VACUUM (FREEZE, ANALYZE);"
}

coordinator_sql() {
	local r i t
	echo "CREATE EXTENSION colojoin CASCADE;"
	echo "$RND_FUNC"
	for i in 1 2 3 4; do
		echo "CREATE SERVER n$i FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', port '$(node_port "$i")', dbname 'bench');"
		echo "CREATE USER MAPPING FOR postgres SERVER n$i OPTIONS (user 'postgres');"
	done
	echo "CREATE TABLE orders ($ORDERS_COLS) PARTITION BY HASH (o_orderkey);"
	echo "CREATE TABLE lineitem ($LINEITEM_COLS) PARTITION BY HASH (l_orderkey);"
	echo "CREATE TABLE part ($PART_COLS) PARTITION BY HASH (p_partkey);"
	echo "CREATE TABLE orders8 ($ORDERS_COLS) PARTITION BY HASH (o_orderkey);"
	echo "CREATE TABLE t256a ($T256_COLS) PARTITION BY HASH (k);"
	echo "CREATE TABLE t256b ($T256_COLS) PARTITION BY HASH (k);"
	# two small plain tables on the coordinator: the dimensions of S1
	echo "CREATE TABLE segment_dim (c_custkey int PRIMARY KEY, c_segment text);"
	echo "INSERT INTO segment_dim SELECT g, (ARRAY['AUTOMOBILE','BUILDING','FURNITURE','HOUSEHOLD','MACHINERY'])[1 + g % 5]"
	echo "  FROM generate_series(1, least($N_CUST, 10000)) g;"
	echo "CREATE TABLE priority_dim (p_priority text PRIMARY KEY, p_rank int);"
	echo "INSERT INTO priority_dim VALUES ('1-URGENT', 1), ('2-HIGH', 2), ('3-MEDIUM', 3), ('4-NOT SPECIFIED', 4), ('5-LOW', 5);"
	echo "ANALYZE segment_dim, priority_dim;"
	for r in $(seq 0 15); do
		for t in orders lineitem part; do
			echo "CREATE FOREIGN TABLE ${t}_p$r PARTITION OF $t FOR VALUES WITH (MODULUS 16, REMAINDER $r)"
			echo "  SERVER n$(node_of "$r") OPTIONS (table_name '${t}_p$r');"
		done
	done
	for r in $(seq 0 7); do
		echo "CREATE FOREIGN TABLE orders8_p$r PARTITION OF orders8 FOR VALUES WITH (MODULUS 8, REMAINDER $r)"
		echo "  SERVER n$(node_of "$r") OPTIONS (table_name 'orders8_p$r');"
	done
	for r in $(seq 0 255); do
		for t in t256a t256b; do
			echo "CREATE FOREIGN TABLE ${t}_p$r PARTITION OF $t FOR VALUES WITH (MODULUS 256, REMAINDER $r)"
			echo "  SERVER n$(node_of "$r") OPTIONS (table_name '${t}_p$r');"
		done
	done
}

# server options of the native (b)/(c) configurations, and the defaults
set_server_options() { bench_server_options "$1"; }

if [ $reuse = 0 ]; then
	say "load: every node generates its own partitions (N_ORDERS=$N_ORDERS, N_PART=$N_PART), in parallel"
	pids=()
	for i in 1 2 3 4; do
		node_load_sql "$i" >"$OUT/sql/node$i.sql"
		qn "$i" -f "$OUT/sql/node$i.sql" >"$OUT/raw/load_node$i.log" 2>&1 &
		pids+=($!)
	done
	for i in 1 2 3 4; do
		wait "${pids[$((i - 1))]}" || { cat "$OUT/raw/load_node$i.log" >&2; die "loading node $i failed"; }
	done
	say "coordinator: servers, sharded tables, foreign partitions"
	coordinator_sql >"$OUT/sql/coordinator.sql"
	q -f "$OUT/sql/coordinator.sql" >"$OUT/raw/coordinator.log"
else
	say "reusing the data loaded at SCALE=$SCALE in $CJ_CLUSTER_DIR"
fi
set_server_options default

# --- verification -------------------------------------------------------------

say "verify: row counts, and sampled keys found through the coordinator's own routing"
# Every partition's row count must equal what the coordinator's own tuple
# routing sends to that partition (temporary partitioned tables with the same
# bounds, filled with the generator's keys); and for 200 sampled keys, a lookup on the parent (which PostgreSQL prunes to the one
# partition its routing picks) must find the rows: a row generated into the
# wrong remainder would be missed.
routing_tables() {
	local r
	# local (temporary) partitioned tables with the same keys and bounds: the
	# coordinator's tuple routing says how many rows each partition must hold
	echo "CREATE TEMP TABLE route16 (k bigint, lines int) PARTITION BY HASH (k);"
	echo "CREATE TEMP TABLE route8 (k bigint) PARTITION BY HASH (k);"
	echo "CREATE TEMP TABLE route16i (k int) PARTITION BY HASH (k);"
	for r in $(seq 0 15); do
		echo "CREATE TEMP TABLE route16_p$r PARTITION OF route16 FOR VALUES WITH (MODULUS 16, REMAINDER $r);"
		echo "CREATE TEMP TABLE route16i_p$r PARTITION OF route16i FOR VALUES WITH (MODULUS 16, REMAINDER $r);"
	done
	for r in $(seq 0 7); do
		echo "CREATE TEMP TABLE route8_p$r PARTITION OF route8 FOR VALUES WITH (MODULUS 8, REMAINDER $r);"
	done
	echo "INSERT INTO route16 SELECT g, 1 + bench_rnd(g, 8, 7) FROM generate_series(1, $N_ORDERS::bigint) g;"
	echo "INSERT INTO route8 SELECT g FROM generate_series(1, $N_ORDERS::bigint) g;"
	echo "INSERT INTO route16i SELECT g FROM generate_series(1, $N_PART) g;"
}
{
	echo "SET colojoin.enable = off;"
	routing_tables
} >"$OUT/sql/verify.sql"
q -At -f - <<SQL 2>&1 | tee "$OUT/raw/verify.log"
\i $OUT/sql/verify.sql
DO \$\$
DECLARE
	n bigint;
	expect bigint;
	k bigint;
	total bigint;
	t text;
	r int;
	bad int := 0;
BEGIN
	-- counted partition by partition: postgres_fdw pushes count(*) of one
	-- foreign table to its node, but would fetch every row through the parent
	FOREACH t IN ARRAY ARRAY['orders', 'lineitem', 'part', 'orders8'] LOOP
		total := 0;
		FOR r IN 0 .. CASE WHEN t = 'orders8' THEN 7 ELSE 15 END LOOP
			EXECUTE format('SELECT count(*) FROM %I', t || '_p' || r) INTO n;
			EXECUTE format(CASE t WHEN 'orders' THEN 'SELECT count(*) FROM route16_p%s'
			                      WHEN 'lineitem' THEN 'SELECT sum(lines) FROM route16_p%s'
			                      WHEN 'part' THEN 'SELECT count(*) FROM route16i_p%s'
			                      ELSE 'SELECT count(*) FROM route8_p%s' END, r) INTO expect;
			IF n <> expect OR n = 0 THEN
				RAISE EXCEPTION 'partition %_p% holds % rows, the coordinator routes % rows to it', t, r, n, expect;
			END IF;
			total := total + n;
		END LOOP;
		RAISE NOTICE '% rows: %, every partition as the coordinator routes them', t, total;
	END LOOP;
	FOR i IN 1 .. 200 LOOP
		k := 1 + bench_rnd(i, 99, $N_ORDERS);
		EXECUTE format('SELECT count(*) FROM orders WHERE o_orderkey = %s', k) INTO n;
		IF n <> 1 THEN bad := bad + 1; RAISE WARNING 'orders key % found % times', k, n; END IF;
		EXECUTE format('SELECT count(*) FROM orders8 WHERE o_orderkey = %s', k) INTO n;
		IF n <> 1 THEN bad := bad + 1; RAISE WARNING 'orders8 key % found % times', k, n; END IF;
		EXECUTE format('SELECT count(*) FROM lineitem WHERE l_orderkey = %s', k) INTO n;
		IF n <> 1 + bench_rnd(k, 8, 7) THEN bad := bad + 1; RAISE WARNING 'lineitem key % found % times', k, n; END IF;
		k := 1 + bench_rnd(i, 98, $N_PART);
		EXECUTE format('SELECT count(*) FROM part WHERE p_partkey = %s', k) INTO n;
		IF n <> 1 THEN bad := bad + 1; RAISE WARNING 'part key % found % times', k, n; END IF;
		k := 1 + bench_rnd(i, 97, 2560);
		EXECUTE format('SELECT count(*) FROM t256a WHERE k = %s', k) INTO n;
		IF n <> 1 THEN bad := bad + 1; RAISE WARNING 't256a key % found % times', k, n; END IF;
	END LOOP;
	IF bad > 0 THEN RAISE EXCEPTION '% sampled keys were not where the coordinator routes them', bad; END IF;
	RAISE NOTICE 'placement: 200 sampled keys of each table found through partition pruning';
END
\$\$;
SQL

if [ $reuse = 0 ]; then
	echo "$SCALE" >"$LOADED_MARK"
fi
# Benchmarked the way users run: nobody ANALYZEs the coordinator's sharded
# tables or their foreign partitions (and the servers carry no
# use_remote_estimate while colojoin runs).
analyzed=$(q -At -c "SELECT count(*) FROM pg_statistic s JOIN pg_class c ON c.oid = s.starelid
WHERE c.relname ~ '^(orders|lineitem|part|orders8|t256a|t256b)(_p[0-9]+)?\$' AND c.relnamespace = 'public'::regnamespace")
[ "$analyzed" = 0 ] || die "the sharded tables have statistics on the coordinator (an older run.sh analyzed them): run without BENCH_REUSE"

# The local twins: the same rows in plain tables of the coordinator (schema
# local), the reference of configuration "local" (one server doing all the
# work).  Copied through postgres_fdw with colojoin off, then keyed and
# analyzed; made again whenever their row counts are not the sharded ones'.
local_ok=$(q -At -c "SELECT to_regclass('local.t256b') IS NOT NULL" 2>/dev/null || echo f)
if [ "$local_ok" = t ]; then
	local_ok=$(PGOPTIONS="-c colojoin.enable=off" q -At -c "SELECT (SELECT count(*) FROM local.orders) = (SELECT count(*) FROM orders)
	AND (SELECT count(*) FROM local.lineitem) = (SELECT count(*) FROM lineitem)
	AND (SELECT count(*) FROM local.part) = (SELECT count(*) FROM part)")
fi
if [ "$local_ok" != t ]; then
	say "local twins: the same rows in plain tables of the coordinator"
	set_server_options default
	q <<SQL
ALTER SERVER n1 OPTIONS (ADD fetch_size '10000');
ALTER SERVER n2 OPTIONS (ADD fetch_size '10000');
ALTER SERVER n3 OPTIONS (ADD fetch_size '10000');
ALTER SERVER n4 OPTIONS (ADD fetch_size '10000');
SET colojoin.enable = off;
DROP SCHEMA IF EXISTS local CASCADE;
CREATE SCHEMA local;
CREATE TABLE local.orders (LIKE orders);
CREATE TABLE local.lineitem (LIKE lineitem);
CREATE TABLE local.part (LIKE part);
CREATE TABLE local.orders8 (LIKE orders8);
CREATE TABLE local.t256a (LIKE t256a);
CREATE TABLE local.t256b (LIKE t256b);
INSERT INTO local.orders SELECT * FROM orders;
INSERT INTO local.lineitem SELECT * FROM lineitem;
INSERT INTO local.part SELECT * FROM part;
INSERT INTO local.orders8 SELECT * FROM orders8;
INSERT INTO local.t256a SELECT * FROM t256a;
INSERT INTO local.t256b SELECT * FROM t256b;
ALTER TABLE local.orders ADD PRIMARY KEY (o_orderkey);
ALTER TABLE local.lineitem ADD PRIMARY KEY (l_orderkey, l_linenumber);
ALTER TABLE local.part ADD PRIMARY KEY (p_partkey);
ALTER TABLE local.orders8 ADD PRIMARY KEY (o_orderkey);
ALTER TABLE local.t256a ADD PRIMARY KEY (k);
ALTER TABLE local.t256b ADD PRIMARY KEY (k);
VACUUM (FREEZE, ANALYZE) local.orders, local.lineitem, local.part, local.orders8, local.t256a, local.t256b;
SQL
	set_server_options default
fi

N_LINEITEM=$(q -At -c "SELECT $(for r in $(seq 0 15); do printf '%s(SELECT count(*) FROM lineitem_p%d)' "$([ "$r" = 0 ] || echo ' + ')" "$r"; done)")

# --- queries ------------------------------------------------------------------

# J1's range holds ~30k orders (72 of 2405 days), ~120k joined rows at SCALE 1
J1_RANGE="o_orderdate BETWEEN date '1995-01-01' AND date '1995-03-13'"
P_KEY=$((1 + 104729 % N_ORDERS))
declare -A SQLQ LIMITQ TITLE
TITLE[J1]="J1 join, ~120k rows"
SQLQ[J1]="SELECT o_orderkey, o_orderdate, o_orderpriority, l_linenumber, l_quantity, l_extendedprice, l_discount, l_shipdate
FROM orders JOIN lineitem ON o_orderkey = l_orderkey WHERE $J1_RANGE"
LIMITQ[J1]="SELECT o_orderkey, o_orderdate, o_orderpriority, l_linenumber, l_quantity, l_extendedprice, l_discount, l_shipdate FROM orders_p{r} JOIN lineitem_p{r} ON o_orderkey = l_orderkey WHERE $J1_RANGE"
TITLE[P]="P point lookup (key = $P_KEY)"
P_TEMPLATE="SELECT o_orderkey, o_orderdate, o_totalprice, l_linenumber, l_quantity, l_extendedprice
FROM orders JOIN lineitem ON o_orderkey = l_orderkey WHERE o_orderkey ="
SQLQ[P]="$P_TEMPLATE $P_KEY"
TITLE[C1]="C1 = Q1 count(*), sum over the full join"
SQLQ[C1]="SELECT count(*), sum(l_extendedprice) FROM orders JOIN lineitem ON o_orderkey = l_orderkey"
LIMITQ[C1]="SELECT count(*), sum(l_extendedprice) FROM orders_p{r} JOIN lineitem_p{r} ON o_orderkey = l_orderkey"
Q2_FILTER="o_orderdate >= date '1995-01-01' AND o_orderdate < date '1996-01-01'"
TITLE[Q2]="Q2 top 10 orders by revenue, 1 year"
SQLQ[Q2]="SELECT o_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM orders JOIN lineitem ON o_orderkey = l_orderkey WHERE $Q2_FILTER
GROUP BY o_orderkey ORDER BY revenue DESC, o_orderkey LIMIT 10"
LIMITQ[Q2]="SELECT o_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue FROM orders_p{r} JOIN lineitem_p{r} ON o_orderkey = l_orderkey WHERE $Q2_FILTER GROUP BY o_orderkey ORDER BY revenue DESC, o_orderkey LIMIT 10"
Q3_FILTER="l_shipdate >= date '1996-01-01' AND l_shipdate < date '1997-01-01'"
TITLE[Q3]="Q3 revenue by o_orderpriority, 1 year shipped"
SQLQ[Q3]="SELECT o_orderpriority, count(*), sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM orders JOIN lineitem ON o_orderkey = l_orderkey WHERE $Q3_FILTER
GROUP BY o_orderpriority ORDER BY o_orderpriority"
LIMITQ[Q3]="SELECT o_orderpriority, count(*), sum(l_extendedprice * (1 - l_discount)) AS revenue FROM orders_p{r} JOIN lineitem_p{r} ON o_orderkey = l_orderkey WHERE $Q3_FILTER GROUP BY o_orderpriority"
TITLE[R1]="R1 lineitem x part on l_partkey, by p_brand"
SQLQ[R1]="SELECT p_brand, sum(l_quantity) FROM lineitem JOIN part ON l_partkey = p_partkey GROUP BY p_brand ORDER BY p_brand"
TITLE[R2]="R2 J1 on orders8 (modulus 8) x lineitem (16)"
SQLQ[R2]="SELECT o_orderkey, o_orderdate, o_orderpriority, l_linenumber, l_quantity, l_extendedprice, l_discount, l_shipdate
FROM orders8 JOIN lineitem ON o_orderkey = l_orderkey WHERE $J1_RANGE"
# refinement: fine partition r of lineitem joins coarse partition r % 8
LIMITQ[R2]="SELECT o_orderkey, o_orderdate, o_orderpriority, l_linenumber, l_quantity, l_extendedprice, l_discount, l_shipdate FROM orders8_p{r8} JOIN lineitem_p{r} ON o_orderkey = l_orderkey WHERE $J1_RANGE"
TITLE[S1]="S1 star: orders x lineitem x two local dimensions, by segment and priority"
SQLQ[S1]="SELECT s.c_segment, p.p_rank, count(*), sum(l_extendedprice)
FROM orders JOIN lineitem ON o_orderkey = l_orderkey
JOIN segment_dim s ON s.c_custkey = o_custkey JOIN priority_dim p ON p.p_priority = o_orderpriority
GROUP BY 1, 2 ORDER BY 1, 2"
TITLE[W1]="W1 rank() over each order's lines, J1's orders, summed"
SQLQ[W1]="SELECT count(*), sum(r) FROM (SELECT rank() OVER (PARTITION BY o_orderkey ORDER BY l_quantity, l_linenumber) AS r
FROM orders JOIN lineitem ON o_orderkey = l_orderkey WHERE $J1_RANGE) s"
TITLE[PLAN]="PLAN planning time, 256 x 256 partitions"
SQLQ[PLAN]="SELECT a.k, a.v, b.v FROM t256a a JOIN t256b b ON a.k = b.k"

CONFIGS="colojoin a b c local"
declare -A CFG_OPTS CFG_SERVERS
CFG_OPTS[colojoin]=""
CFG_OPTS[a]="-c colojoin.enable=off"
CFG_OPTS[b]="-c colojoin.enable=off -c enable_partitionwise_join=on -c enable_partitionwise_aggregate=on"
CFG_OPTS[c]="-c colojoin.enable=off -c enable_partitionwise_join=on -c enable_partitionwise_aggregate=off"
CFG_OPTS[local]="-c colojoin.enable=off -c search_path=local,public"
CFG_SERVERS[colojoin]=default
CFG_SERVERS[local]=default
CFG_SERVERS[a]=default
CFG_SERVERS[b]=tuned
CFG_SERVERS[c]=tuned

# a slow query runs fewer times: as many as fit in BENCH_CELL_SECONDS after
# its first run, at least 3 (or REPS when smaller), an odd number
min_reps() { if [ "$REPS" -lt 3 ]; then echo "$REPS"; else echo 3; fi; }

want() { case " $BENCH_QUERIES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

hwm_sql="SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\\s*(\\d+)') AS hwm \\gset"

# One session of configuration $1 for query $2: EXPLAIN (VERBOSE) saved, one
# untimed run whose output is the checksum (and whose peak RSS is read from
# /proc/self/status of the backend before and after), REPS timed runs
# (psql's \timing: send to last row received, before printing), then
# EXPLAIN ANALYZE when asked.
run_session() {
	local cfg=$1 name=$2 sql=${SQLQ[$2]} script="$OUT/sql/${1}_$2.psql" j
	{
		echo '\pset format unaligned'
		echo '\pset tuples_only on'
		echo "$hwm_sql"
		echo '\echo HWM0 :hwm'
		echo "\\o $OUT/plans/${cfg}_$name.txt"
		echo "EXPLAIN (VERBOSE) $sql;"
		echo "\\o $OUT/check/${cfg}_$name.txt"
		echo "SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset"
		echo "$sql;"
		echo '\o'
		echo "$hwm_sql"
		echo '\echo HWM1 :hwm'
		# how many timed runs fit in BENCH_CELL_SECONDS (at least 3, odd)
		echo "SELECT least($REPS, greatest(3, floor($BENCH_CELL_SECONDS / greatest(extract(epoch FROM clock_timestamp()) - :t0, 0.001))))::int AS n \\gset"
		echo "SELECT CASE WHEN :n % 2 = 0 AND :n < $REPS THEN :n - 1 ELSE :n END AS n \\gset"
		echo "SELECT $(for j in $(seq 1 "$REPS"); do printf '%s:n >= %d AS r%d' "$([ "$j" = 1 ] || echo ', ')" "$j" "$j"; done) \\gset"
		echo '\o /dev/null'
		echo '\timing on'
		for j in $(seq 1 "$REPS"); do
			echo "\\if :r$j"
			echo "$sql;"
			echo '\endif'
		done
		echo '\timing off'
		echo '\o'
		if [ "$BENCH_EXPLAIN_ANALYZE" = all ] || [ "$BENCH_EXPLAIN_ANALYZE" = "$cfg" ]; then
			echo "\\o $OUT/plans/${cfg}_$name.analyze.txt"
			echo "EXPLAIN (ANALYZE, VERBOSE) $sql;"
			echo '\o'
		fi
	} >"$script"
	run_psql "$cfg" "$name" "$script" || return 0
	grep '^Time:' "$OUT/raw/${cfg}_$name.log" | awk '{ print $2 }' >"$OUT/raw/${cfg}_$name.times"
	[ "$(wc -l <"$OUT/raw/${cfg}_$name.times")" -ge "$(min_reps)" ] || die "$cfg $name: too few timings"
}

# Runs a session script; when it fails (a query error), keeps the error in
# raw/<cfg>_<name>.error for the report, leaves no timings, and returns 1: the
# benchmark goes on and fails at the end.
run_psql() {
	local cfg=$1 name=$2 script=$3
	: >"$OUT/raw/${cfg}_$name.times"
	rm -f "$OUT/raw/${cfg}_$name.error"
	if ! PGOPTIONS="${CFG_OPTS[$cfg]}" q -f "$script" >"$OUT/raw/${cfg}_$name.log" 2>"$OUT/raw/${cfg}_$name.stderr"; then
		grep -m1 'ERROR' "$OUT/raw/${cfg}_$name.stderr" | sed 's/^psql:[^ ]* //' >"$OUT/raw/${cfg}_$name.error"
		[ -s "$OUT/raw/${cfg}_$name.error" ] || echo "psql failed" >"$OUT/raw/${cfg}_$name.error"
		echo "  $name FAILED in configuration $cfg: $(cat "$OUT/raw/${cfg}_$name.error")" >&2
		return 1
	fi
	return 0
}

# planning time: EXPLAIN's "Planning Time", REPS times after one warm-up
run_plan() {
	local cfg=$1 script="$OUT/sql/${1}_PLAN.psql" j
	{
		echo '\pset format unaligned'
		echo '\pset tuples_only on'
		echo "\\o $OUT/check/${cfg}_PLAN.txt"
		echo "${SQLQ[PLAN]};"
		echo "\\o $OUT/plans/${cfg}_PLAN.txt"
		echo "EXPLAIN (VERBOSE) ${SQLQ[PLAN]};"
		echo '\o'
		for j in $(seq 1 "$REPS"); do echo "EXPLAIN (SUMMARY ON, COSTS OFF) ${SQLQ[PLAN]};"; done
	} >"$script"
	run_psql "$cfg" PLAN "$script" || return 0
	grep 'Planning Time:' "$OUT/raw/${cfg}_PLAN.log" | awk '{ print $3 }' >"$OUT/raw/${cfg}_PLAN.times"
	[ "$(wc -l <"$OUT/raw/${cfg}_PLAN.times")" = "$REPS" ] || die "$cfg PLAN: expected $REPS timings"
}

# The point lookups take a millisecond or so, and a busy machine drifts over
# minutes: so they run interleaved, in P_ROUNDS rounds, each round running
# every configuration in turn (server options switched as for the others),
# and the medians are over all rounds.
P_ROUNDS=5

# P1: P1_N fresh sessions per configuration, each a new psql process and
# connection running one lookup (different keys, the same ones for every
# configuration).  P1 is the query's own time in that session (psql's
# \timing: it includes what a first query pays, catalog caches and the
# connection to the node); P1c is the whole psql run (start, connect, query,
# exit), measured outside.
run_p1() {
	local cfg=$1 round=$2 j k t0 t1 per=$(((P1_N + P_ROUNDS - 1) / P_ROUNDS))
	[ ! -s "$OUT/raw/${cfg}_P1.error" ] || return 0
	for j in $(seq $((round * per + 1)) $(((round + 1) * per))); do
		[ "$j" -le "$P1_N" ] || break
		k=$((1 + (j * 7919 + 13) % N_ORDERS))
		t0=$(date +%s%N)
		if ! PGOPTIONS="${CFG_OPTS[$cfg]}" q -At -o /dev/null -c '\timing on' -c "$P_TEMPLATE $k" \
			>"$OUT/raw/${cfg}_P1.out" 2>"$OUT/raw/${cfg}_P1.stderr"; then
			grep -m1 ERROR "$OUT/raw/${cfg}_P1.stderr" >"$OUT/raw/${cfg}_P1.error" || echo "psql failed" >"$OUT/raw/${cfg}_P1.error"
			cp "$OUT/raw/${cfg}_P1.error" "$OUT/raw/${cfg}_P1c.error"
			return 0
		fi
		t1=$(date +%s%N)
		awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) / 1e6 }' >>"$OUT/raw/${cfg}_P1c.times"
		awk '/^Time:/ { print $2 }' "$OUT/raw/${cfg}_P1.out" >>"$OUT/raw/${cfg}_P1.times"
	done
}

# P2: P2_N lookups of random keys per configuration, in one warm session per
# round (pgbench's per-transaction latencies, -l; the same keys for every
# configuration)
run_p2() {
	local cfg=$1 round=$2 n=$(((P2_N + P_ROUNDS - 1) / P_ROUNDS)) log
	[ ! -s "$OUT/raw/${cfg}_P2.error" ] || return 0
	printf '\\set k random(1, %s)\n%s :k;\n' "$N_ORDERS" "$P_TEMPLATE" >"$OUT/sql/P2.pgbench"
	log="${cfg}_P2_$round.log"
	(cd "$OUT/raw" && PGOPTIONS="${CFG_OPTS[$cfg]}" "$PGBENCH" -n -h 127.0.0.1 -p "$CJ_PORT" -U postgres \
		-t "$n" -f "$OUT/sql/P2.pgbench" --random-seed=$((42 + round)) -l --log-prefix="$log" bench \
		>"$OUT/raw/${cfg}_P2.pgbench.out" 2>&1) || {
		grep -m1 ERROR "$OUT/raw/${cfg}_P2.pgbench.out" >"$OUT/raw/${cfg}_P2.error" || echo "pgbench failed" >"$OUT/raw/${cfg}_P2.error"
		return 0
	}
	cat "$OUT/raw/$log".* | awk '{ printf "%.3f\n", $3 / 1000 }' >>"$OUT/raw/${cfg}_P2.times"
}

# the limit: each partition's SQL sent straight to its node, all 16 at once
run_limit() {
	local name=$1 r tmpl=${LIMITQ[$1]} sql
	: >"$OUT/sql/limit_$name.tasks"
	for r in $(seq 0 15); do
		sql=${tmpl//\{r8\}/$((r % 8))}
		sql=${sql//\{r\}/$r}
		printf 'host=127.0.0.1 port=%s user=postgres dbname=bench\t%s\n' \
			"$(node_port "$(node_of "$r")")" "$sql" >>"$OUT/sql/limit_$name.tasks"
	done
	"$OUT/limit" "$OUT/sql/limit_$name.tasks" "$REPS" >"$OUT/raw/limit_$name.out"
	awk '{ print $1 }' "$OUT/raw/limit_$name.out" >"$OUT/raw/limit_$name.times"
}

# The client hop: J1's rows (kept in a plain table) sent from the
# coordinator to psql, REPS times.  Every configuration pays it on top of
# what the limit measures, so J1's floor is limit + hop.
run_hop() {
	local j
	q -q -c "DROP TABLE IF EXISTS local.j1_rows" \
		-c "CREATE TABLE local.j1_rows AS $(echo "${SQLQ[J1]}" | sed 's/FROM orders JOIN lineitem/FROM local.orders JOIN local.lineitem/')" \
		-c "VACUUM ANALYZE local.j1_rows" >/dev/null
	{
		echo '\o /dev/null'
		echo 'SELECT * FROM local.j1_rows;'
		echo '\timing on'
		for j in $(seq 1 "$REPS"); do echo 'SELECT * FROM local.j1_rows;'; done
	} >"$OUT/sql/hop_J1.psql"
	q -f "$OUT/sql/hop_J1.psql" | awk '/^Time:/ { print $2 }' >"$OUT/raw/hop_J1.times"
}

uptime >"$OUT/raw/load_before.txt"
# Query by query, every configuration in turn: the machine drifts over
# minutes, and a configuration measured a quarter of an hour after another
# (as when each configuration ran every query before the next) met another
# machine.  Now the configurations of one query are at most a minute or
# two apart.
for name in J1 P C1 Q2 Q3 R1 R2 S1 W1; do
	want "$name" || continue
	for cfg in $CONFIGS; do
		set_server_options "${CFG_SERVERS[$cfg]}"
		t0=$(date +%s)
		run_session "$cfg" "$name"
		echo "  $name $cfg: median $(median <"$OUT/raw/${cfg}_$name.times") ms ($(($(date +%s) - t0))s)"
		# the limit right after colojoin's runs of the same query, so that
		# both see the machine in the same state
		if [ "$cfg" = colojoin ] && [ -n "${LIMITQ[$name]:-}" ]; then
			run_limit "$name"
			echo "  $name limit: median $(median <"$OUT/raw/limit_$name.times") ms"
			if [ "$name" = J1 ]; then
				run_hop
				echo "  J1 client hop: median $(median <"$OUT/raw/hop_J1.times") ms"
			fi
		fi
	done
done
if want PLAN; then
	for cfg in $CONFIGS; do
		set_server_options "${CFG_SERVERS[$cfg]}"
		run_plan "$cfg"
		echo "  PLAN $cfg: median planning $(median <"$OUT/raw/${cfg}_PLAN.times") ms"
	done
fi
if want P; then
	say "point lookups, interleaved: $P_ROUNDS rounds of every configuration"
	for cfg in $CONFIGS; do
		: >"$OUT/raw/${cfg}_P1.times"
		: >"$OUT/raw/${cfg}_P1c.times"
		: >"$OUT/raw/${cfg}_P2.times"
	done
	for round in $(seq 0 $((P_ROUNDS - 1))); do
		for cfg in $CONFIGS; do
			set_server_options "${CFG_SERVERS[$cfg]}"
			run_p1 "$cfg" "$round"
			run_p2 "$cfg" "$round"
		done
	done
	for cfg in $CONFIGS; do
		for t in P1 P1c P2; do
			if [ -s "$OUT/raw/${cfg}_$t.error" ]; then : >"$OUT/raw/${cfg}_$t.times"; fi
		done
		echo "  $cfg: P1 median $(median <"$OUT/raw/${cfg}_P1.times") ms (first query of a fresh session)," \
			"P1c $(median <"$OUT/raw/${cfg}_P1c.times") ms (whole psql run), P2 $(median <"$OUT/raw/${cfg}_P2.times") ms"
	done
fi
set_server_options default

uptime >"$OUT/raw/load_after.txt"

# --- report ---------------------------------------------------------------------

say "report"
failed=0
checksum() { LC_ALL=C sort "$OUT/check/$1_$2.txt" | md5sum | cut -c1-12; }

# ratio a/b with 2 decimals, or "-"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "NA" || b == "NA" || a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f\n", a / b }'; }
min_of() { printf '%s\n' "$@" | grep -v '^NA$' | sort -g | head -1; }
fmt() { awk -v v="$1" 'BEGIN { if (v == "NA" || v == "-") print "-"; else if (v >= 100) printf "%.0f\n", v; else if (v >= 10) printf "%.1f\n", v; else printf "%.2f\n", v }'; }

# rows: label, times-file suffix, checksum name, limit name
rows=()
want J1 && rows+=("J1|J1|J1|J1|${TITLE[J1]}")
want P && rows+=("P1|P1|P|-|P1 point lookup, first query of a fresh session (\\timing)")
want P && rows+=("P1c|P1c|P|-|P1c the same, whole psql run (start, connect, query, exit)")
want P && rows+=("P2|P2|P|-|P2 point lookup, warm session (pgbench, $P2_N random keys)")
want P && rows+=("P2p10|P2|P|-|P2 the same, 10th percentile (less sensitive to a busy machine)|p10")
want C1 && rows+=("C1/Q1|C1|C1|C1|${TITLE[C1]}")
want Q2 && rows+=("Q2|Q2|Q2|Q2|${TITLE[Q2]}")
want Q3 && rows+=("Q3|Q3|Q3|Q3|${TITLE[Q3]}")
want R1 && rows+=("R1|R1|R1|-|${TITLE[R1]}")
want R2 && rows+=("R2|R2|R2|R2|${TITLE[R2]}")
want S1 && rows+=("S1|S1|S1|-|${TITLE[S1]}")
want W1 && rows+=("W1|W1|W1|-|${TITLE[W1]}")
want PLAN && rows+=("PLAN|PLAN|PLAN|-|${TITLE[PLAN]}")

# targets of issues 3, 4 and 6 (ratio best native / colojoin; colojoin / limit)
declare -A TARGET_SPEEDUP TARGET_LIMIT TARGET_LOCAL
TARGET_SPEEDUP[J1]=1.5
TARGET_SPEEDUP[P2]=2
TARGET_SPEEDUP[P2p10]=2
TARGET_SPEEDUP[C1/Q1]=4
TARGET_SPEEDUP[Q3]=4
TARGET_SPEEDUP[R1]=2
TARGET_SPEEDUP[R2]=2
TARGET_SPEEDUP[S1]=3
TARGET_LIMIT[C1/Q1]=1.2
TARGET_LIMIT[Q3]=1.2
TARGET_LIMIT[Q2]=1.1
# issue 27: the non-key join no slower than one local server
TARGET_LOCAL[R1]=1

{
	echo "# colojoin benchmark $STAMP"
	echo
	echo "\`SCALE=$SCALE REPS=$REPS P1_N=$P1_N P2_N=$P2_N bench/run.sh\`, $(date '+%Y-%m-%d %H:%M'), $(nproc) cores;"
	echo "colojoin: $BUILT_FROM;"
	echo "orders $N_ORDERS rows, lineitem $N_LINEITEM rows, part $N_PART rows;"
	echo "load average before: $(sed 's/.*load average: //' "$OUT/raw/load_before.txt"), after: $(sed 's/.*load average: //' "$OUT/raw/load_after.txt")."
	echo
	echo "Median milliseconds (PLAN: planning time only). Native: (a) PostgreSQL defaults;"
	echo "(b) partitionwise join + aggregate, servers async_capable, use_remote_estimate, fetch_size 10000;"
	echo "(c) as (b) without partitionwise aggregate. ratio = best native / colojoin (above 1: colojoin faster)."
	echo "local = the same rows in plain tables of the coordinator (schema local): one server doing all the work."
	echo "limit = the per-partition SQL run straight on the nodes, 16 at once, combine ignored (for J1 and R2 it also"
	echo "leaves out sending the rows on to a client, which every configuration pays: J1's client hop is that alone,"
	echo "its rows read from a plain table of the coordinator by psql, and J1's floor is limit + client hop)."
	echo "(n=...): a slow query ran fewer times than REPS=$REPS (BENCH_CELL_SECONDS=$BENCH_CELL_SECONDS)."
	echo
	echo "| query | colojoin | native a | native b | native c | best native | ratio | limit | colojoin / limit | local | colojoin / local | ColocatedJoin in plan | same result | target |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |"
} >"$REPORT"

errors=()
for row in "${rows[@]}"; do
	IFS='|' read -r label tf ck lim title stat <<<"$row"
	declare -A med=() shown=() bad=()
	for cfg in $CONFIGS; do
		bad[$cfg]=""
		for f in "$OUT/raw/${cfg}_$tf.error" "$OUT/raw/${cfg}_$ck.error"; do
			if [ -s "$f" ] && [ -z "${bad[$cfg]}" ]; then
				bad[$cfg]=$(head -1 "$f")
				errors+=("$label in configuration $cfg: ${bad[$cfg]}")
				failed=1
			fi
		done
		if [ "$stat" = p10 ]; then
			med[$cfg]=$(percentile 10 <"$OUT/raw/${cfg}_$tf.times")
		else
			med[$cfg]=$(median <"$OUT/raw/${cfg}_$tf.times")
		fi
		shown[$cfg]=$(fmt "${med[$cfg]}")
		n=$(wc -l <"$OUT/raw/${cfg}_$tf.times")
		if [ -n "${bad[$cfg]}" ]; then
			med[$cfg]=NA
			shown[$cfg]=ERROR
		else
			case $tf in
			P1 | P1c) [ "$n" = "$P1_N" ] || shown[$cfg]="${shown[$cfg]} (n=$n)" ;;
			P2) [ "$n" = $((P_ROUNDS * ((P2_N + P_ROUNDS - 1) / P_ROUNDS))) ] || shown[$cfg]="${shown[$cfg]} (n=$n)" ;;
			*) [ "$n" = "$REPS" ] || shown[$cfg]="${shown[$cfg]} (n=$n)" ;;
			esac
		fi
	done
	best=$(min_of "${med[a]}" "${med[b]}" "${med[c]}")
	[ -n "$best" ] || best=NA
	bestcfg=-
	for cfg in c b a; do
		if [ "${med[$cfg]}" = "$best" ]; then bestcfg=$cfg; fi
	done
	rat=$(ratio "$best" "${med[colojoin]}")
	limv="-"
	limr="-"
	if [ "$lim" != "-" ] && [ -s "$OUT/raw/limit_$lim.times" ]; then
		limv=$(median <"$OUT/raw/limit_$lim.times")
		limr=$(ratio "${med[colojoin]}" "$limv")
	fi
	# plan: colojoin's must be checked, natives must not have it
	used=no
	if grep -q ColocatedJoin "$OUT/plans/colojoin_$ck.txt" 2>/dev/null; then used=yes; fi
	for cfg in a b c local; do
		if grep -q ColocatedJoin "$OUT/plans/${cfg}_$ck.txt" 2>/dev/null; then
			used="$used (BUG: also in native $cfg)"
			failed=1
		fi
	done
	# checksums of the configurations that ran: all must be equal
	same=""
	c0=""
	for cfg in $CONFIGS; do
		[ -z "${bad[$cfg]}" ] || continue
		if [ ! -s "$OUT/check/${cfg}_$ck.txt" ]; then
			same="NO ($cfg: empty result)"
			failed=1
			continue
		fi
		c=$(checksum "$cfg" "$ck")
		if [ -z "$c0" ]; then
			c0=$c
		elif [ "$c" != "$c0" ]; then
			same="NO ($cfg differs)"
			failed=1
		fi
	done
	[ -n "$same" ] || same="yes ($c0)"
	tgt=""
	if [ -n "${TARGET_SPEEDUP[$label]:-}" ]; then
		tgt="ratio >= ${TARGET_SPEEDUP[$label]}: $(awk -v r="$rat" -v t="${TARGET_SPEEDUP[$label]}" 'BEGIN { print (r != "-" && r + 0 >= t) ? "met" : "NOT met" }')"
	fi
	if [ -n "${TARGET_LIMIT[$label]:-}" ]; then
		[ -z "$tgt" ] || tgt="$tgt; "
		tgt="${tgt}colojoin / limit <= ${TARGET_LIMIT[$label]}: $(awk -v r="$limr" -v t="${TARGET_LIMIT[$label]}" 'BEGIN { print (r != "-" && r + 0 <= t) ? "met" : "NOT met" }')"
	fi
	if [ "$label" = J1 ] && [ -s "$OUT/raw/hop_J1.times" ] && [ "$limv" != "-" ]; then
		hop=$(median <"$OUT/raw/hop_J1.times")
		floor=$(awk -v a="$limv" -v b="$hop" 'BEGIN { print a + b }')
		[ -z "$tgt" ] || tgt="$tgt; "
		tgt="${tgt}floor = limit + client hop $(fmt "$hop") = $(fmt "$floor"), colojoin / floor $(ratio "${med[colojoin]}" "$floor"): $(awk -v r="$(ratio "${med[colojoin]}" "$floor")" 'BEGIN { print (r != "-" && r + 0 <= 1.1) ? "<= 1.1 met" : "<= 1.1 NOT met" }')"
	fi
	if [ -n "${TARGET_LOCAL[$label]:-}" ]; then
		[ -z "$tgt" ] || tgt="$tgt; "
		locr=$(ratio "${med[colojoin]}" "${med[local]}")
		tgt="${tgt}colojoin / local <= ${TARGET_LOCAL[$label]}: $(awk -v r="$locr" -v t="${TARGET_LOCAL[$label]}" 'BEGIN { print (r != "-" && r + 0 <= t) ? "met" : "NOT met" }')"
	fi
	echo "| $title | ${shown[colojoin]} | ${shown[a]} | ${shown[b]} | ${shown[c]} | $(fmt "$best") ($bestcfg) | $rat | $(fmt "$limv") | $limr | ${shown[local]} | $(ratio "${med[colojoin]}" "${med[local]}") | $used | $same | $tgt |" >>"$REPORT"
	unset med shown bad
done
if [ ${#errors[@]} -gt 0 ]; then
	{
		echo
		echo "Errors:"
		echo
		for e in "${errors[@]}"; do echo "- $e"; done
	} >>"$REPORT"
fi

# what colojoin's plans say they do
{
	echo
	echo "colojoin's plans (the Strategy lines of EXPLAIN; the whole plans are in plans/colojoin_*.txt):"
	echo
	for name in J1 P C1 Q2 Q3 R1 R2 S1 W1 PLAN; do
		want "$name" || continue
		strat=$(grep -m1 -o 'Strategy: .*' "$OUT/plans/colojoin_$name.txt" 2>/dev/null | sed 's/^Strategy: //' || true)
		echo "- $name: ${strat:-no colojoin scan}"
	done
} >>"$REPORT"

# memory: the coordinator backend's peak RSS
{
	echo
	echo "Coordinator backend peak RSS (VmHWM of the backend, kB: at session start -> after one run of the query;"
	echo "includes the shared buffers the backend touched):"
	echo
	echo "| query | colojoin | native a | native b | native c | local |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: |"
	for name in J1 C1 Q2 Q3 R1 R2 S1 W1; do
		want "$name" || continue
		line="| $name |"
		for cfg in $CONFIGS; do
			h0=$(awk '$1 == "HWM0" { print $2 }' "$OUT/raw/${cfg}_$name.log")
			h1=$(awk '$1 == "HWM1" { print $2 }' "$OUT/raw/${cfg}_$name.log")
			if [ -n "$h1" ]; then line="$line $h0 -> $h1 |"; else line="$line - |"; fi
		done
		echo "$line"
	done
	echo
	echo "Raw timings, plans (EXPLAIN VERBOSE per configuration; EXPLAIN ANALYZE for: $BENCH_EXPLAIN_ANALYZE),"
	echo "result files and the SQL run: bench/results/$STAMP/."
} >>"$REPORT"

echo
cat "$REPORT"
if [ $failed != 0 ]; then
	echo
	echo "run.sh: FAILED: a query failed, results differ between configurations, or a native plan used colojoin (see the report above and $OUT/)" >&2
	exit 1
fi
say "done: $REPORT"
