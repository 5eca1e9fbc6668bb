#!/bin/bash
# bench/moves.sh -- what moving a partition class costs: the time
# colojoin.move_class takes for a class of about 250k rows (orders and
# items together), online and blocking, and the latency of writes to that
# class while it moves, against the same writes before the move, in one
# run on one cluster (a coordinator and 4 nodes; the class moves from n1 to
# n4 and back).  Prints a table and writes it to
# bench/results/moves-<timestamp>.md.
#
#   bench/moves.sh                    ROWS=250000 (rows of the moved class)
#   ROWS=20000 SECONDS_PER_MOVE=10 bench/moves.sh   a quick check
#
# Writers: pgbench, 4 clients at RATE transactions per second in all (default
# 200), each transaction an UPDATE of one row of the moving class and an
# INSERT into it (the rows are found through a local table of the class's
# keys), logged per transaction (pgbench -l).  "before" is every transaction
# that started more than a second before the move, "during" every one that
# started while the move ran; the table shows their median, 99th percentile
# and maximum latency, and how many ended in an error (there must be none).
#
# Settings: ROWS, RATE, SECONDS_PER_MOVE (default 40: pgbench's run around
# each move), CJ_PORT (default 22732), CJ_CLUSTER_DIR (default
# /tmp/cj-bench-moves), BENCH_SKIP_BUILD=1.  Run as root; the servers run as
# user postgres and are stopped on exit.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
ROWS=${ROWS:-250000}
RATE=${RATE:-200}
SECONDS_PER_MOVE=${SECONDS_PER_MOVE:-40}
export CJ_PORT=${CJ_PORT:-22732}
export CJ_CLUSTER_DIR=${CJ_CLUSTER_DIR:-/tmp/cj-bench-moves}
. "$BENCH/bench_common.sh"
STAMP=$(date +%Y%m%d-%H%M%S)
REPORT="$BENCH/results/moves-$STAMP.md"
OUT="$BENCH/results/moves-$STAMP"
mkdir -p "$OUT"
chown postgres "$OUT"
# 8 classes; each holds ROWS / 5 orders and 4 items per order
N_ORDERS=$((ROWS / 5 * 8))

bench_fresh_cluster
bench_in_memory

say "schema and data: $N_ORDERS orders, $((N_ORDERS * 4)) items, 8 classes on n1..n3"
{
	echo "CREATE EXTENSION colojoin CASCADE;"
	bench_servers
	cat <<SQL
CREATE TABLE orders (o_id int NOT NULL, o_cust int, o_total numeric(12,2)) PARTITION BY HASH (o_id);
SELECT colojoin.create_shards('orders', ARRAY['n1', 'n2', 'n3'], 8);
CREATE TABLE items (i_order int NOT NULL, i_line int, i_qty int, i_note text) PARTITION BY HASH (i_order);
SELECT colojoin.create_shards('items', NULL, colocate_with => 'orders');
INSERT INTO orders SELECT g, g % 1000, 0 FROM generate_series(1, $N_ORDERS) g;
INSERT INTO items SELECT o, n, n, 'line ' || n FROM generate_series(1, $N_ORDERS) o, generate_series(1, 4) n;
-- the keys of class 0 (on n1), for the writers
CREATE TABLE class0 (n serial PRIMARY KEY, id int);
INSERT INTO class0 (id) SELECT o_id FROM orders_p0;
ANALYZE class0;
SQL
} | q >/dev/null
for i in 1 2 3; do
	qn "$i" -c "ALTER TABLE orders_p0 ADD PRIMARY KEY (o_id)" >/dev/null 2>&1 || true
	qn "$i" -c "VACUUM ANALYZE" >/dev/null
done
KEYS=$(q -At -c "SELECT count(*) FROM class0")
CLASS_ROWS=$(q -At -c "SELECT (SELECT count(*) FROM orders_p0) + (SELECT count(*) FROM items_p0)")
say "class 0: $KEYS orders, $CLASS_ROWS rows with its items"

cat >"$OUT/writes.sql" <<SCRIPT
\\set k random(1, $KEYS)
SELECT id FROM class0 WHERE n = :k \\gset
BEGIN;
UPDATE orders SET o_total = o_total + 1 WHERE o_id = :id;
INSERT INTO items VALUES (:id, 100, 1, 'bench');
END;
SCRIPT
chown postgres "$OUT/writes.sql"

# one move under writes: prints "mode seconds before_p50 before_p99 during_p50 during_p99 during_max errors"
move_under_writes() {
	local mode=$1 to=$2 tag=$3 start end
	rm -f "$OUT/$tag".*
	runuser -u postgres -- "$PG_BINDIR/pgbench" -n -h 127.0.0.1 -p "$CJ_PORT" -c 4 -j 2 \
		-R "$RATE" -T "$SECONDS_PER_MOVE" -l --log-prefix="$OUT/$tag" \
		-f "$OUT/writes.sql" bench >"$OUT/$tag.pgbench" 2>&1 &
	local pgb=$!
	sleep 5
	start=$(date +%s.%N)
	q -c "SELECT colojoin.move_class('orders', (SELECT partition_class FROM colojoin.shards WHERE leaf = 'orders_p0'::regclass), '$to', '$mode')" >/dev/null
	end=$(date +%s.%N)
	wait "$pgb" || true
	# client txno latency_us script epoch_s epoch_us: a transaction started
	# at its end less its latency
	cat "$OUT/$tag".[0-9]* 2>/dev/null | awk -v s="$start" -v e="$end" -v b="$OUT/$tag.before" -v d="$OUT/$tag.during" '
		{ t = $5 + $6 / 1e6 - $3 / 1e6; l = $3 / 1000.0
		  if (t < s - 1) print l > b; else if (t >= s && t <= e) print l > d }'
	touch "$OUT/$tag.before" "$OUT/$tag.during"
	echo "$mode $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')" \
		"$(pct "$OUT/$tag.before" 0.5) $(pct "$OUT/$tag.before" 0.99)" \
		"$(pct "$OUT/$tag.during" 0.5) $(pct "$OUT/$tag.during" 0.99) $(pct "$OUT/$tag.during" 1)" \
		"$(wc -l <"$OUT/$tag.during") $(grep -c 'error' "$OUT/$tag.pgbench" || true)"
}

# the p-th fraction of the numbers in a file (one a line), to 0.1
pct() {
	sort -g "$1" | awk -v p="$2" '{ v[NR] = $1 } END { if (NR == 0) print "-"; else printf "%.1f\n", v[int((NR - 1) * p) + 1] }'
}

say "moves of class 0 under $RATE writes/s"
RESULTS=()
RESULTS+=("$(move_under_writes online n4 online)")
RESULTS+=("$(move_under_writes blocking n1 blocking)")

# the moves left every row where it was
q -At -c "SELECT count(*) FROM colojoin.shards WHERE leaf = 'orders_p0'::regclass AND node = 'n1'" | grep -qx 1 ||
	{ echo "moves.sh: class 0 is not back on n1" >&2; exit 1; }

{
	echo "# Class moves ($STAMP)"
	echo
	echo "Class 0 of orders and items ($CLASS_ROWS rows, $KEYS orders) moved n1 -> n4 online, then n4 -> n1 blocking,"
	echo "while pgbench wrote to that class ($RATE transactions/s, 4 clients: an UPDATE and an INSERT each)."
	echo "Latencies in ms, of the transactions that started before the move and during it."
	echo
	echo "| mode | move (s) | before p50 | before p99 | during p50 | during p99 | during max | transactions during | errors |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	for r in "${RESULTS[@]}"; do
		set -- $r
		echo "| $1 | $2 | $3 | $4 | $5 | $6 | $7 | $8 | $9 |"
	done
} | tee "$REPORT"
