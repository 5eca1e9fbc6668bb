#!/bin/bash
# test/cluster/cluster.sh -- start, stop or inspect a local colojoin cluster:
# one coordinator (colojoin preloaded) and N nodes, real PostgreSQL 15
# servers listening on loopback only.
#
#   test/cluster/cluster.sh start | stop | status | env | restart | destroy
#
#   start    create (initdb) what is missing, start what is down, create the
#            database CJ_DB on every server; safe to repeat
#   stop     stop every server under CJ_CLUSTER_DIR, whatever state a failed
#            run left them in (fast shutdown, then immediate)
#   status   one line per server; exits 1 when any server is down
#   env      shell "export" lines for PGHOST/PGPORT/... and CJ_NODE<i>_PORT,
#            the variables the pg_regress suites read with \getenv:
#                eval "$(test/cluster/cluster.sh env)"
#   restart  stop, then start
#   destroy  stop, then delete CJ_CLUSTER_DIR (only a directory this script
#            created: it carries the marker file .colojoin-cluster)
#
# Settings (environment):
#   CJ_CLUSTER_DIR   data directory root          (default /tmp/colojoin-cluster)
#   CJ_PORT          coordinator port; node i listens on CJ_PORT + i
#                                                  (default 25432)
#   CJ_NODES         number of nodes              (default 3)
#   CJ_DB            database created on every server (default colojoin_regress)
#   PG_BINDIR        PostgreSQL binaries          (default: pg_config --bindir
#                                                  of PostgreSQL 15)
#   CJ_WAL_LEVEL     wal_level of the servers     (default logical: online class moves)
#   CJ_AUTOVACUUM    autovacuum on the servers    (default on; test/run_tests.sh
#                                                  sets off: statistics, which
#                                                  steer plans, then appear only
#                                                  where a test makes them)
#   CJ_RECOVERY_INTERVAL  colojoin.recovery_interval of the coordinator
#                                                 (default 1min; test/run_tests.sh
#                                                  sets 0: no background worker
#                                                  connects to the nodes while
#                                                  suites count connections)
#
# Run as root, the servers run as user postgres.  Every server is initialised
# with encoding UTF8 and locale C.UTF-8, so test output does not depend on the
# caller's locale.  Role colojoin_pw must log in with a password over TCP (to
# test that path); every other role is trusted, on loopback only.
set -euo pipefail

CJ_CLUSTER_DIR=${CJ_CLUSTER_DIR:-/tmp/colojoin-cluster}
CJ_PORT=${CJ_PORT:-25432}
CJ_NODES=${CJ_NODES:-3}
CJ_DB=${CJ_DB:-colojoin_regress}
if [ -z "${PG_BINDIR:-}" ]; then
	if [ -x /usr/lib/postgresql/15/bin/pg_config ]; then
		PG_BINDIR=$(/usr/lib/postgresql/15/bin/pg_config --bindir)
	else
		PG_BINDIR=$(pg_config --bindir)
	fi
fi
MARKER=.colojoin-cluster

# true when CJ_CLUSTER_DIR is a cluster of this script (or does not exist yet);
# clusters made before the marker existed are recognised by their coordinator
ours() {
	[ ! -e "$CJ_CLUSTER_DIR" ] || [ -e "$CJ_CLUSTER_DIR/$MARKER" ] ||
		[ -f "$CJ_CLUSTER_DIR/coordinator/PG_VERSION" ] ||
		[ -z "$(ls -A "$CJ_CLUSTER_DIR")" ]
}

die() {
	echo "cluster.sh: $*" >&2
	exit 1
}

as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

server_dirs() {
	echo "$CJ_CLUSTER_DIR/coordinator"
	for i in $(seq 1 "$CJ_NODES"); do echo "$CJ_CLUSTER_DIR/node$i"; done
}

port_of() {
	case "$(basename "$1")" in
	coordinator) echo "$CJ_PORT" ;;
	node*) echo $((CJ_PORT + ${1##*node})) ;;
	esac
}

# true when something accepts TCP connections on 127.0.0.1:$1
port_busy() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

is_running() {
	as_pg "$PG_BINDIR/pg_ctl" -D "$1" status >/dev/null 2>&1
}

init_server() {
	local dir=$1 port=$2 preload=$3
	as_pg mkdir -p "$dir"
	as_pg "$PG_BINDIR/initdb" -D "$dir" -U postgres -A trust --no-sync \
		-E UTF8 --locale=C.UTF-8 >"$dir.initdb.log" 2>&1 ||
		{ cat "$dir.initdb.log" >&2; die "initdb failed for $dir"; }
	cat >>"$dir/postgresql.conf" <<CONF

# colojoin test cluster (test/cluster/cluster.sh)
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$CJ_CLUSTER_DIR'
max_connections = 200
max_prepared_transactions = 20
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 128MB
log_min_messages = warning
log_line_prefix = '%m [%p] %d '
autovacuum = ${CJ_AUTOVACUUM:-on}
# class moves (colojoin.move_class, mode online) replicate from node to node
wal_level = ${CJ_WAL_LEVEL:-logical}
CONF
	if [ -n "$preload" ]; then
		echo "shared_preload_libraries = '$preload'" >>"$dir/postgresql.conf"
		echo "colojoin.recovery_interval = '${CJ_RECOVERY_INTERVAL:-1min}'" >>"$dir/postgresql.conf"
	fi
	cat >"$dir/pg_hba.conf" <<HBA
local all all trust
host all colojoin_pw 127.0.0.1/32 scram-sha-256
host all all 127.0.0.1/32 trust
HBA
}

start() {
	[ -x "$PG_BINDIR/postgres" ] || die "no PostgreSQL server in $PG_BINDIR (install postgresql-15)"
	ours || die "$CJ_CLUSTER_DIR exists and was not made by cluster.sh; choose another CJ_CLUSTER_DIR"
	mkdir -p "$CJ_CLUSTER_DIR"
	touch "$CJ_CLUSTER_DIR/$MARKER"
	if [ "$(id -u)" = 0 ]; then
		chown postgres: "$CJ_CLUSTER_DIR"
	fi
	local dir port preload
	for dir in $(server_dirs); do
		port=$(port_of "$dir")
		preload=""
		[ "$(basename "$dir")" = coordinator ] && preload=colojoin
		if ! is_running "$dir" && port_busy "$port"; then
			die "port $port is taken by another program; set CJ_PORT to a free range (it needs $((CJ_NODES + 1)) ports)"
		fi
		if [ ! -f "$dir/PG_VERSION" ]; then
			init_server "$dir" "$port" "$preload"
		fi
		if ! is_running "$dir"; then
			as_pg "$PG_BINDIR/pg_ctl" -D "$dir" -l "$dir.log" -w -t 60 start >/dev/null ||
				{ tail -20 "$dir.log" >&2; die "$(basename "$dir") did not start (log: $dir.log)"; }
		fi
		as_pg "$PG_BINDIR/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -At \
			-c "SELECT 1 FROM pg_database WHERE datname = '$CJ_DB'" | grep -q 1 ||
			as_pg "$PG_BINDIR/createdb" -h 127.0.0.1 -p "$port" -U postgres "$CJ_DB"
	done
	echo "colojoin cluster up: coordinator 127.0.0.1:$CJ_PORT, nodes on ports $((CJ_PORT + 1))-$((CJ_PORT + CJ_NODES)), data in $CJ_CLUSTER_DIR"
}

stop() {
	[ -d "$CJ_CLUSTER_DIR" ] || return 0
	local dir
	for dir in "$CJ_CLUSTER_DIR"/*/; do
		dir=${dir%/}
		[ -f "$dir/postmaster.pid" ] || continue
		as_pg "$PG_BINDIR/pg_ctl" -D "$dir" -m fast -w -t 60 stop >/dev/null 2>&1 ||
			as_pg "$PG_BINDIR/pg_ctl" -D "$dir" -m immediate -w -t 60 stop >/dev/null 2>&1 || true
	done
}

destroy() {
	stop
	[ -e "$CJ_CLUSTER_DIR" ] || return 0
	ours || die "$CJ_CLUSTER_DIR was not made by cluster.sh; not deleting it"
	rm -rf "$CJ_CLUSTER_DIR"
}

status() {
	local dir down=0
	for dir in $(server_dirs); do
		printf '%-12s port %-6s ' "$(basename "$dir")" "$(port_of "$dir")"
		if is_running "$dir"; then echo up; else echo down; down=1; fi
	done
	return $down
}

# Variables the test suites read (psql \getenv) to reach the nodes.
print_env() {
	echo "export PGHOST=127.0.0.1 PGPORT=$CJ_PORT PGUSER=postgres PGDATABASE=$CJ_DB"
	echo "export CJ_PORT=$CJ_PORT CJ_NODES=$CJ_NODES CJ_DB=$CJ_DB CJ_CLUSTER_DIR=$(printf %q "$CJ_CLUSTER_DIR")"
	for i in $(seq 1 "$CJ_NODES"); do echo "export CJ_NODE${i}_PORT=$((CJ_PORT + i))"; done
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
env) print_env ;;
restart) stop; start ;;
destroy) destroy ;;
*) echo "usage: $0 start|stop|status|env|restart|destroy" >&2; exit 2 ;;
esac
