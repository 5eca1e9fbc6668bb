#!/bin/bash
# bench/writes_floor.sh -- the floor under bench/writes.sh's INS: the same
# INSERT ... SELECT run directly on the 4 nodes, all at once, each node's 4
# leaves one after the other (what colojoin sends them), in transactions
# that are rolled back; no coordinator at all.  Whatever runs the statement
# on the nodes cannot be faster than this on the same machine.  Run it after
# bench/writes.sh (it reuses that run's cluster and data):
#
#   bench/writes.sh && bench/writes_floor.sh
#
# Settings: REPS (default 5), CJ_PORT (default 22632), CJ_CLUSTER_DIR
# (default /tmp/cj-bench-writes).  Prints the median wall time.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPS=${REPS:-5}
export CJ_PORT=${CJ_PORT:-22632}
export CJ_CLUSTER_DIR=${CJ_CLUSTER_DIR:-/tmp/cj-bench-writes}
export CJ_NODES=4
export CJ_DB=bench
CLUSTER="$ROOT/test/cluster/cluster.sh"
PSQL=/usr/lib/postgresql/15/bin/psql
[ -d "$CJ_CLUSTER_DIR" ] || { echo "run bench/writes.sh first" >&2; exit 1; }
trap '"$CLUSTER" stop >/dev/null 2>&1 || true' EXIT
"$CLUSTER" start >/dev/null

# each node's leaves, as colojoin.shards names them
leaves() {
	runuser -u postgres -- "$PSQL" -X -At -h 127.0.0.1 -p "$CJ_PORT" -d bench -c \
		"SELECT node || ' ' || substring(remote_relation from '[^.]+\$') FROM colojoin.shards
		 WHERE table_name = 'orders'::regclass ORDER BY node, leaf"
}
one_round() {
	local i pids=()
	for i in 1 2 3 4; do
		{
			echo "BEGIN;"
			leaves | awk -v n="n$i" '$1 == n { print $2 }' | while read -r o; do
				l=${o/orders/lineitem}
				r=${o/orders/rollup}
				echo "INSERT INTO public.$r SELECT o_orderkey, sum(l_extendedprice) FROM public.$o JOIN public.$l ON l_orderkey = o_orderkey WHERE o_orderdate < '1993-01-01' GROUP BY 1;"
			done
			echo "ROLLBACK;"
		} | runuser -u postgres -- "$PSQL" -X -q -h 127.0.0.1 -p $((CJ_PORT + i)) -d bench >/dev/null &
		pids+=($!)
	done
	wait "${pids[@]}"
}
one_round						# warm
times=()
for r in $(seq 1 "$REPS"); do
	t0=$(date +%s.%N)
	one_round
	t1=$(date +%s.%N)
	times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')")
done
median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
echo "INS on the nodes alone, all 4 at once: ${times[*]} -> median $median s"
