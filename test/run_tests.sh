#!/bin/bash
# test/run_tests.sh -- the one test command: build, install, start a fresh
# local cluster, run every pg_regress suite of test/schedule against its
# coordinator, run every TAP test of test/t, stop the cluster, and report.
#
#   test/run_tests.sh              everything
#   test/run_tests.sh NAME...      only these pg_regress suites (names from
#                                  test/schedule), TAP tests (001_loading
#                                  or test/t/001_loading.pl), "fuzz",
#                                  "write_fuzz", "layers" and "versions"
#
# After the pg_regress suites, against the same cluster, "fuzz" runs the
# randomized differential test (test/fuzz.sh) from fixed seeds: one more
# test, failed when any of its queries failed.  Then "write_fuzz" runs the
# randomized write-sequence test (test/write_fuzz.sh) from fixed seeds: one
# more test, failed when any of its sequences failed.
#
# Before the build, "layers" checks that no file of src/ includes a header
# of a layer above its own (test/check_layers.sh), and "versions" that the
# extension's version agrees in colojoin.control, META.json, the scripts
# and README.md (test/check_versions.sh): one more test each.
#
# The last line printed is "N passed, N failed" (layers, pg_regress tests,
# fuzz, write_fuzz, TAP test files).  The exit status is 0 only when every
# test passed and at least one ran.  The cluster is always stopped on exit,
# and a cluster left behind by an earlier run is stopped and recreated first.
#
# Settings (environment):
#   CJ_PORT          coordinator port, nodes on the next ports (default 26100)
#   CJ_CLUSTER_DIR   cluster, scratch and output directory
#                                   (default /tmp/colojoin-tests-$CJ_PORT)
#   CJ_NODES         number of nodes (default 3)
#   CJ_SKIP_BUILD=1  do not run make / make install (use what is installed)
#   CJ_RECOVERY_INTERVAL  colojoin.recovery_interval of the suites'
#                    coordinator (default 0: no recovery worker)
#   CJ_FUZZ_SEEDS    seeds of the fuzz test (default "1 2 3 4")
#   CJ_FUZZ_COUNT    queries per seed (default 300)
#   CJ_WRITE_FUZZ_SEEDS  seeds of the write_fuzz test (default "1 2 3")
#   CJ_WRITE_FUZZ_COUNT  write sequences per seed (default 60)
#   PG_CONFIG        pg_config of PostgreSQL 15
#                    (default /usr/lib/postgresql/15/bin/pg_config)
#
# Run it as root (make install writes under /usr/lib/postgresql/15): servers
# and TAP tests then run as user postgres.  Output is kept after the run in
# $CJ_CLUSTER_DIR/regress (results/, regression.diffs) and
# $CJ_CLUSTER_DIR/tap/tmp_check/log (TAP logs).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1

export CJ_PORT=${CJ_PORT:-26100}
# no autovacuum on the test servers: statistics steer plans (sizes, the
# groups a move would send), so a test that wants them makes them (ANALYZE)
# instead of a background worker making them at some moment
export CJ_AUTOVACUUM=${CJ_AUTOVACUUM:-off}
# no recovery worker either: it would connect to the nodes at some moment,
# beside the connections the suites count; test/t/061_recovery_worker.pl
# turns it on where it tests it
export CJ_RECOVERY_INTERVAL=${CJ_RECOVERY_INTERVAL:-0}
export CJ_CLUSTER_DIR=${CJ_CLUSTER_DIR:-/tmp/colojoin-tests-$CJ_PORT}
export CJ_NODES=${CJ_NODES:-3}

CLUSTER="$ROOT/test/cluster/cluster.sh"
passed=0
failed=0
failures=()

say() { printf '\n=== %s\n' "$*"; }

pass() { passed=$((passed + 1)); }

fail() {
	failed=$((failed + 1))
	failures+=("$1")
}

summary_and_exit() {
	local rc=0
	if [ "${#failures[@]}" -gt 0 ]; then
		echo
		echo "failed: ${failures[*]}"
	fi
	if [ "$failed" -gt 0 ]; then
		rc=1
	elif [ "$passed" -eq 0 ]; then
		echo
		echo "no test ran"
		rc=1
	fi
	[ "${1:-0}" -ne 0 ] && rc=1
	echo
	echo "$passed passed, $failed failed"
	exit $rc
}

as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# A fresh machine: install the build and test dependencies first (a no-op
# when they are there).
"$ROOT/test/install_deps.sh" || summary_and_exit 1

if [ -z "${PG_CONFIG:-}" ]; then
	if [ -x /usr/lib/postgresql/15/bin/pg_config ]; then
		PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
	else
		PG_CONFIG=pg_config
	fi
fi
export PG_CONFIG

command -v "$PG_CONFIG" >/dev/null 2>&1 ||
	{ echo "run_tests.sh: $PG_CONFIG not found (install postgresql-server-dev-15)" >&2; summary_and_exit 1; }
PG_BINDIR=$("$PG_CONFIG" --bindir)
PG_PKGLIBDIR=$("$PG_CONFIG" --pkglibdir)
PG_REGRESS="$PG_PKGLIBDIR/pgxs/src/test/regress/pg_regress"
PG_PERL_LIB="$PG_PKGLIBDIR/pgxs/src/test/perl"
export PG_BINDIR

# --- which tests ----------------------------------------------------------

# test/schedule: one pg_regress test name per line; '#' starts a comment.
all_suites=()
if [ -f test/schedule ]; then
	while read -r name; do
		[ -n "$name" ] && all_suites+=("$name")
	done < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' test/schedule)
fi
all_taps=()
for f in test/t/*.pl; do
	[ -e "$f" ] && all_taps+=("$f")
done

suites=()
taps=()
run_fuzz=0
run_write_fuzz=0
run_layers=0
run_versions=0
if [ $# -eq 0 ]; then
	suites=("${all_suites[@]}")
	taps=("${all_taps[@]}")
	run_fuzz=1
	run_write_fuzz=1
	run_layers=1
	run_versions=1
else
	for arg in "$@"; do
		base=$(basename "$arg" .pl)
		found=0
		[ "$base" = fuzz ] && { run_fuzz=1; found=1; }
		[ "$base" = write_fuzz ] && { run_write_fuzz=1; found=1; }
		[ "$base" = layers ] && { run_layers=1; found=1; }
		[ "$base" = versions ] && { run_versions=1; found=1; }
		for s in "${all_suites[@]}"; do
			[ "$s" = "$base" ] && { suites+=("$s"); found=1; }
		done
		for t in "${all_taps[@]}"; do
			[ "$(basename "$t" .pl)" = "$base" ] && { taps+=("$t"); found=1; }
		done
		[ $found = 1 ] || { echo "run_tests.sh: no suite in test/schedule, no test/t/*.pl and no fuzz or write_fuzz named $arg" >&2; fail "$arg"; }
	done
fi

# --- layers: no source file includes a layer above its own ---------------

if [ "$run_layers" = 1 ]; then
	say "layers: the include graph of src/"
	if test/check_layers.sh; then pass; else fail layers; fi
fi
if [ "$run_versions" = 1 ]; then
	say "versions: colojoin.control, META.json, the scripts and README agree"
	if test/check_versions.sh; then pass; else fail versions; fi
fi

# --- build and install ----------------------------------------------------

if [ "${CJ_SKIP_BUILD:-0}" != 1 ]; then
	say "build"
	make -j"$(nproc 2>/dev/null || echo 2)" PG_CONFIG="$PG_CONFIG" ||
		{ echo "run_tests.sh: make failed" >&2; summary_and_exit 1; }
	say "install"
	make install PG_CONFIG="$PG_CONFIG" >/dev/null ||
		{ echo "run_tests.sh: make install failed" >&2; summary_and_exit 1; }
fi

# --- the cluster ----------------------------------------------------------

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	"$CLUSTER" stop >&2 || true
}
trap cleanup EXIT
trap 'echo "run_tests.sh: interrupted" >&2; exit 130' INT TERM HUP

run_regress() {
	local out="$CJ_CLUSTER_DIR/regress" runnable=() name log status line
	if [ ${#suites[@]} -eq 0 ]; then
		return
	fi
	# A listed test without its files would make pg_regress stop short:
	# count it as failed and run the others.
	for name in "${suites[@]}"; do
		if [ ! -f "sql/$name.sql" ]; then
			echo "run_tests.sh: test/schedule lists $name but sql/$name.sql does not exist" >&2
			fail "$name"
		elif ! compgen -G "expected/$name.out" >/dev/null &&
			! compgen -G "expected/${name}_[0-9].out" >/dev/null; then
			echo "run_tests.sh: test/schedule lists $name but expected/$name.out does not exist" >&2
			fail "$name"
		else
			runnable+=("$name")
		fi
	done
	[ ${#runnable[@]} -eq 0 ] && return

	say "pg_regress: ${#runnable[@]} suites against the coordinator on port $CJ_PORT"
	rm -rf "$out"
	mkdir -p "$out"
	log="$out/pg_regress.log"
	(
		eval "$("$CLUSTER" env)"
		"$PG_REGRESS" --use-existing --dbname=colojoin_regress \
			--bindir="$PG_BINDIR" --inputdir="$ROOT" --outputdir="$out" \
			"${runnable[@]}"
	) 2>&1 | tee "$log"
	status=${PIPESTATUS[0]}

	# PostgreSQL 15's pg_regress prints "test NAME ... ok|FAILED|failed (ignored)".
	for name in "${runnable[@]}"; do
		line=$(grep -E "^test $name +\.\.\. " "$log" | tail -1)
		case "$line" in
		*"... ok"*) pass ;;
		"") echo "run_tests.sh: pg_regress did not run $name" >&2; fail "$name" ;;
		*) fail "$name" ;;
		esac
	done
	if [ -s "$out/regression.diffs" ]; then
		say "regression.diffs ($out/regression.diffs)"
		cat "$out/regression.diffs"
	elif [ "$status" -ne 0 ]; then
		echo "run_tests.sh: pg_regress exited with status $status" >&2
	fi
}

run_tap() {
	local scratch="$CJ_CLUSTER_DIR/tap" t name rc
	if [ ${#taps[@]} -eq 0 ]; then
		return
	fi
	say "TAP: ${#taps[@]} test files"
	# TAP tests run initdb, which refuses to run as root, and write their
	# data under TESTDIR: give them a copy of test/ owned by their user.
	rm -rf "$scratch"
	mkdir -p "$scratch"
	cp -r test/t "$scratch/t"
	[ -d test/perl ] && cp -r test/perl "$scratch/perl"
	mkdir -p "$scratch/perl"
	[ "$(id -u)" = 0 ] && chown -R postgres: "$scratch"
	for t in "${taps[@]}"; do
		name=$(basename "$t")
		(
			cd "$scratch" &&
				as_pg env -i \
					HOME="$scratch" \
					PATH="$PG_BINDIR:/usr/local/bin:/usr/bin:/bin" \
					LANG=C.UTF-8 \
					TESTDIR="$scratch" \
					PG_REGRESS="$PG_REGRESS" \
					PG_TEST_PORT_DIR="$scratch" \
					PERL5LIB="$scratch/perl:$PG_PERL_LIB" \
					COLOJOIN_SRCDIR="$ROOT" \
					prove --timer "t/$name"
		)
		rc=$?
		if [ $rc -eq 0 ]; then
			pass
		else
			fail "$name"
			# prove printed the failed assertions; add any server crash,
			# which only the servers' logs tell.
			local slog
			for slog in "$scratch/tmp_check/log/${name%.pl}"_*.log; do
				[ -f "$slog" ] || continue
				if grep -qE 'PANIC|TRAP:|terminated by signal' "$slog"; then
					say "server crash in $slog"
					tail -40 "$slog"
				fi
			done
			echo "logs of $name: $scratch/tmp_check/log/"
		fi
	done
}

# A seeded randomized test from fixed seeds, against the cluster the suites
# used: one test, passed when every seed's run reported no failure; its
# output is kept in $CJ_CLUSTER_DIR/NAME.log.
# Each line of PINNED is "SEED COUNT OPTION..." of a run that once found a
# defect, run again after the seeds.
#   seeded_test NAME SCRIPT "SEEDS" COUNT WHAT [PINNED]
seeded_test() {
	local name=$1 script=$2 seeds=$3 count=$4 what=$5 pinned=${6:-}
	local log="$CJ_CLUSTER_DIR/$name.log" seed rc=0 line
	say "$name: seeds $seeds, $count $what each"
	: >"$log"
	for seed in $seeds; do
		"$ROOT/test/$script" "$seed" "$count" 2>&1 | tee -a "$log"
		[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
	done
	while read -r line; do
		[ -n "$line" ] || continue
		say "$name: pinned run $line"
		# shellcheck disable=SC2086
		"$ROOT/test/$script" $line 2>&1 | tee -a "$log"
		[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
	done <<<"$pinned"
	if [ $rc -eq 0 ]; then
		pass
	else
		echo "run_tests.sh: $name failed (output in $log)" >&2
		fail "$name"
	fi
}

# the randomized differential test of reads (test/fuzz.sh, test/fuzz/fuzz.py)
# Pinned: seed 37 crashed the coordinator (rows a scan read ahead for
# another scan of the write connection were listed in that scan's per-tuple
# memory; write_turns.c).
fuzz_test() {
	seeded_test fuzz fuzz.sh "${CJ_FUZZ_SEEDS:-1 2 3 4}" "${CJ_FUZZ_COUNT:-300}" queries \
		"37 104 --table-agg-share 0.2 --multi-share 0.2 --subquery-share 0.5"
}

# the randomized test of write transactions (test/write_fuzz.sh,
# test/fuzz/write_fuzz.py)
write_fuzz_test() {
	seeded_test write_fuzz write_fuzz.sh "${CJ_WRITE_FUZZ_SEEDS:-1 2 3}" \
		"${CJ_WRITE_FUZZ_COUNT:-60}" "write sequences"
}

if [ ${#suites[@]} -gt 0 ] || [ $run_fuzz = 1 ] || [ $run_write_fuzz = 1 ]; then
	say "cluster: $CJ_NODES nodes, coordinator on port $CJ_PORT, in $CJ_CLUSTER_DIR"
	# Whatever an earlier run left behind is stopped and thrown away, so every
	# run starts from freshly initialised servers.
	"$CLUSTER" destroy || summary_and_exit 1
	"$CLUSTER" start || summary_and_exit 1
	run_regress
	[ $run_fuzz = 1 ] && fuzz_test
	[ $run_write_fuzz = 1 ] && write_fuzz_test
	"$CLUSTER" stop
else
	# the TAP scratch directory lives under CJ_CLUSTER_DIR too
	"$CLUSTER" destroy || summary_and_exit 1
fi
if [ ${#taps[@]} -gt 0 ]; then
	mkdir -p "$CJ_CLUSTER_DIR"
	touch "$CJ_CLUSTER_DIR/.colojoin-cluster"
	[ "$(id -u)" = 0 ] && chown postgres: "$CJ_CLUSTER_DIR"
	run_tap
fi

summary_and_exit 0
