#!/bin/bash
# bench/planning.sh -- planning time of a colocated two-table join at 64,
# 256 and 1,024 hash partitions spread over 16 servers (4 per node of a
# 4-node cluster), colojoin against PostgreSQL's own partitionwise planning
# of the same join (colojoin.enable = off, enable_partitionwise_join on, no
# remote estimates) and against PostgreSQL without partitionwise join (the
# floor: planning the two Appends of foreign scans), in one run.  The
# foreign tables are never ANALYZEd, as users leave them.  Prints a table
# of medians and ratios and writes it to bench/results/planning-<stamp>.md.
#
#   bench/planning.sh            REPS=30 EXPLAINs per cell (median)
#
# Each cell runs in one warm session: two EXPLAINs untimed (catalog caches,
# and colojoin's remote size lookups), then REPS timed EXPLAINs whose
# "Planning Time" is read.  The cells are interleaved (every configuration
# at one size before the next size).
#
# Settings: REPS (default 30), CJ_PORT (default 22732), CJ_CLUSTER_DIR
# (default /tmp/cj-bench-planning), BENCH_SKIP_BUILD=1.  Run as root; the
# servers run as user postgres and are stopped on exit.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
REPS=${REPS:-30}
export CJ_PORT=${CJ_PORT:-22732}
export CJ_CLUSTER_DIR=${CJ_CLUSTER_DIR:-/tmp/cj-bench-planning}
. "$BENCH/bench_common.sh"
STAMP=$(date +%Y%m%d-%H%M%S)
REPORT="$BENCH/results/planning-$STAMP.md"
SIZES="64 256 1024"
mkdir -p "$BENCH/results"


bench_fresh_cluster

say "16 servers (4 per node); tables of $SIZES partitions"
{
	echo "CREATE EXTENSION colojoin CASCADE;"
	for s in $(seq 1 16); do
		node=$(( (s - 1) % 4 + 1 ))
		echo "CREATE SERVER s$s FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', port '$((CJ_PORT + node))', dbname 'bench');"
		echo "CREATE USER MAPPING FOR CURRENT_USER SERVER s$s;"
	done
	for n in $SIZES; do
		cat <<SQL
CREATE TABLE a$n (k int, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('a$n', (SELECT array_agg('s' || i ORDER BY i) FROM generate_series(1, 16) i), $n);
CREATE TABLE b$n (k int, w int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('b$n', NULL, colocate_with => 'a$n');
SQL
	done
} | q >/dev/null

CONFIGS=("colojoin|"
	"native partitionwise|SET colojoin.enable = off; SET enable_partitionwise_join = on;"
	"native plain|SET colojoin.enable = off;")

# the median Planning Time (ms) of REPS EXPLAINs of the join of size n
cell() {
	local n=$1 setup=$2
	local sql="EXPLAIN (COSTS OFF, SUMMARY ON) SELECT a.k, a.v, b.w FROM a$n a JOIN b$n b ON a.k = b.k"
	{
		echo "$setup"
		echo "$sql;"
		echo "$sql;"
		for _ in $(seq 1 "$REPS"); do echo "$sql;"; done
	} | q -At | grep '^Planning Time' | tail -n "$REPS" |
		awk '{ print $3 }' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# every plan is what the configuration claims
for n in $SIZES; do
	q -At -c "EXPLAIN (COSTS OFF) SELECT a.k, a.v, b.w FROM a$n a JOIN b$n b ON a.k = b.k" |
		grep -q 'ColocatedJoin' || { echo "colojoin did not plan a$n JOIN b$n" >&2; exit 1; }
	q -At -c "SET colojoin.enable = off; SET enable_partitionwise_join = on;" \
		-c "EXPLAIN (COSTS OFF) SELECT a.k, a.v, b.w FROM a$n a JOIN b$n b ON a.k = b.k" |
		grep -q 'ColocatedJoin' && { echo "native plan shows colojoin" >&2; exit 1; }
done

say "planning times (median of $REPS, ms)"
declare -A T
for n in $SIZES; do
	for c in "${CONFIGS[@]}"; do
		name=${c%%|*}
		T[$name,$n]=$(cell "$n" "${c#*|}")
		echo "$n partitions, $name: ${T[$name,$n]} ms"
	done
done

{
	echo "# Planning time, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
	echo
	echo "\`bench/planning.sh\` (REPS=$REPS): \`SELECT a.k, a.v, b.w FROM aN a JOIN bN b ON a.k = b.k\`,"
	echo "N hash partitions each, over 16 servers on 4 nodes, foreign tables never ANALYZEd,"
	echo "no \`use_remote_estimate\`. Median \"Planning Time\" of warm EXPLAINs, ms."
	echo
	echo "| partitions | colojoin | native partitionwise | native plain | colojoin / partitionwise | colojoin per partition (us) |"
	echo "| ---: | ---: | ---: | ---: | ---: | ---: |"
	for n in $SIZES; do
		awk -v n="$n" -v c="${T[colojoin,$n]}" -v p="${T[native partitionwise,$n]}" -v f="${T[native plain,$n]}" \
			'BEGIN { printf "| %d | %.2f | %.2f | %.2f | %.2fx | %.1f |\n", n, c, p, f, c / p, 1000 * c / n }'
	done
} | tee "$REPORT"
echo
echo "report: $REPORT"
