# bench/bench_common.sh -- what the one-cluster bench scripts (writes.sh,
# star.sh, asof.sh, dual_repartition.sh, planning.sh, redistribute.sh, pre_aggregate.sh,
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
#   bench_server_options MODE
#                        servers n1..n4 with native (b)/(c)'s options
#                        (MODE tuned: async_capable, use_remote_estimate,
#                        fetch_size 10000) or none of them (any other MODE)
#   bench_in_memory      every server set up as bench/run.sh's: data in
#                        memory, no parallel workers, no JIT, no autovacuum;
#                        the servers restarted
#   bench_timed FN CFG   ms of one \timing'd run of the last statement that
#                        FN CFG prints, in a session that first runs all it
#                        prints once untimed
#   bench_nodes_analyzed NAME
#                        the nodes' tables vacuumed and analyzed, as
#                        autovacuum leaves them; stops (NAME: the script)
#                        when a foreign table of the coordinator has statistics
#   bench_same_answers NAME FN CFG...
#                        stops unless every CFG's answer (FN CFG) is the
#                        first one's
#   bench_rounds FN CFG...
#                        an untimed round, then REPS rounds of bench_timed
#                        for every CFG in turn; runs[CFG] the times, T[CFG]
#                        their median (both global)
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

bench_server_options() {
	local mode=$1 i
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
}

bench_in_memory() {
	local i
	# the coordinator's shared buffers hold its local tables; 2 cores for 5
	# servers: no parallel workers
	for i in 0 1 2 3 4; do
		runuser -u postgres -- "$PSQL" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p $((CJ_PORT + i)) -d postgres <<SQL
ALTER SYSTEM SET shared_buffers = '$([ "$i" = 0 ] && echo 1GB || echo 512MB)';
ALTER SYSTEM SET work_mem = '64MB';
ALTER SYSTEM SET maintenance_work_mem = '256MB';
ALTER SYSTEM SET max_parallel_workers_per_gather = 0;
ALTER SYSTEM SET jit = off;
ALTER SYSTEM SET autovacuum = off;
ALTER SYSTEM SET max_wal_size = '4GB';
SQL
	done
	"$CLUSTER" restart >/dev/null
}

bench_timed() {
	{
		"$1" "$2"
		echo '\o /dev/null'
		echo '\timing on'
		"$1" "$2" | tail -1
	} | q | awk '/^Time: / { print $2 }'
}

bench_nodes_analyzed() {
	local i analyzed
	for i in 1 2 3 4; do
		qn "$i" -c "VACUUM ANALYZE" >/dev/null
	done
	analyzed=$(q -At -c "SELECT count(*) FROM pg_class c WHERE c.relkind = 'f' AND (c.reltuples >= 0 OR EXISTS (SELECT FROM pg_statistic WHERE starelid = c.oid))")
	[ "$analyzed" = 0 ] || { echo "$1: the foreign tables have statistics" >&2; exit 1; }
}

bench_same_answers() {
	local name=$1 fn=$2 reference cfg
	shift 2
	reference=$("$fn" "$1" | q -At | md5sum)
	for cfg in "$@"; do
		[ "$("$fn" "$cfg" | q -At | md5sum)" = "$reference" ] ||
			{ echo "$name: the answer of $cfg differs from $1's" >&2; exit 1; }
	done
}

bench_rounds() {
	local fn=$1 cfg r
	shift
	declare -gA runs T
	for cfg in "$@"; do
		bench_timed "$fn" "$cfg" >/dev/null
		runs[$cfg]=""
	done
	for ((r = 0; r < REPS; r++)); do
		for cfg in "$@"; do
			runs[$cfg]+="$(bench_timed "$fn" "$cfg") "
		done
	done
	for cfg in "$@"; do
		T[$cfg]=$(echo "${runs[$cfg]}" | tr ' ' '\n' | grep . | median)
		echo "  $cfg: ${runs[$cfg]}-> median ${T[$cfg]} ms"
	done
}
