# bench/bench_common.sh -- what the one-cluster bench scripts (writes.sh,
# star.sh, asof.sh, dual_repartition.sh, planning.sh, redistribute.sh,
# point_lookup.sh) share.  Sourced after
# the script has set ROOT, CJ_PORT and CJ_CLUSTER_DIR; defines:
#   q ARGS...            psql as postgres on the coordinator's database bench
#   qn I ARGS...         the same on node I (1..4)
#   median               the median of the numbers on stdin, one a line
#   ratio A B            A / B to two decimals ("-" when B is 0)
#   say TEXT             a section heading
#   bench_fresh_cluster  build and install colojoin (unless BENCH_SKIP_BUILD=1),
#                        then a fresh coordinator and 4 nodes, stopped on exit
#                        (left running with BENCH_KEEP=1, to look around)
#   bench_servers [OPT]  the SQL of servers n1..n4 (extra OPTIONS text OPT)
#                        and their user mappings
# and CLUSTER, PG_CONFIG (default PostgreSQL 15's), PG_BINDIR, PSQL.

export CJ_NODES=4
export CJ_DB=bench
CLUSTER="$ROOT/test/cluster/cluster.sh"
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
export PG_BINDIR=${PG_BINDIR:-$("$PG_CONFIG" --bindir)}
PSQL="$PG_BINDIR/psql"

q() { runuser -u postgres -- "$PSQL" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$CJ_PORT" -d bench "$@"; }
qn() { local i=$1; shift; runuser -u postgres -- "$PSQL" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p $((CJ_PORT + i)) -d bench "$@"; }
say() { printf '\n=== %s\n' "$*"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

bench_cleanup() { [ "${BENCH_KEEP:-0}" = 1 ] || "$CLUSTER" stop >/dev/null 2>&1 || true; }

bench_fresh_cluster() {
	trap bench_cleanup EXIT
	if [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
		say "build and install colojoin"
		make -C "$ROOT" -s PG_CONFIG="$PG_CONFIG" >/dev/null
		make -C "$ROOT" -s PG_CONFIG="$PG_CONFIG" install >/dev/null
	fi
	say "fresh cluster on $CJ_PORT..$((CJ_PORT + 4))"
	"$CLUSTER" destroy >/dev/null 2>&1 || true
	"$CLUSTER" start >/dev/null
}

bench_servers() {
	local extra=${1:+, $1}
	local i
	for i in 1 2 3 4; do
		echo "CREATE SERVER n$i FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', port '$((CJ_PORT + i))', dbname 'bench'$extra);"
		echo "CREATE USER MAPPING FOR CURRENT_USER SERVER n$i;"
	done
}
