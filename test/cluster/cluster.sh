#!/bin/bash
# test/cluster/cluster.sh -- start, stop or inspect a local colojoin cluster:
# one coordinator (colojoin preloaded) and N nodes, real PostgreSQL 15
# servers listening on loopback only.
#
#   test/cluster/cluster.sh start | stop | status | env
#
# Settings (environment):
#   CJ_CLUSTER_DIR   data directory root          (default /tmp/colojoin-cluster)
#   CJ_PORT          coordinator port; node i listens on CJ_PORT + i
#                                                  (default 25432)
#   CJ_NODES         number of nodes              (default 3)
#   CJ_DB            database created on every server (default colojoin_regress)
#   PG_BINDIR        PostgreSQL binaries          (default: pg_config --bindir)
#
# Run as root, the servers run as user postgres.  "stop" stops every server
# under CJ_CLUSTER_DIR, whatever state a failed run left them in.
set -euo pipefail

CJ_CLUSTER_DIR=${CJ_CLUSTER_DIR:-/tmp/colojoin-cluster}
CJ_PORT=${CJ_PORT:-25432}
CJ_NODES=${CJ_NODES:-3}
CJ_DB=${CJ_DB:-colojoin_regress}
PG_BINDIR=${PG_BINDIR:-$(pg_config --bindir)}

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

init_server() {
	local dir=$1 port=$2 preload=$3
	as_pg "$PG_BINDIR/initdb" -D "$dir" -U postgres -A trust --no-sync >"$dir.initdb.log" 2>&1 ||
		{ cat "$dir.initdb.log"; exit 1; }
	cat >>"$dir/postgresql.conf" <<CONF
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
CONF
	if [ -n "$preload" ]; then
		echo "shared_preload_libraries = '$preload'" >>"$dir/postgresql.conf"
	fi
	# Role colojoin_pw must log in with a password (to test that path);
	# everyone else is trusted, loopback only.
	cat >"$dir/pg_hba.conf" <<HBA
local all all trust
host all colojoin_pw 127.0.0.1/32 scram-sha-256
host all all 127.0.0.1/32 trust
HBA
}

start() {
	mkdir -p "$CJ_CLUSTER_DIR"
	[ "$(id -u)" = 0 ] && chown postgres: "$CJ_CLUSTER_DIR"
	for dir in $(server_dirs); do
		local port preload=""
		port=$(port_of "$dir")
		[ "$(basename "$dir")" = coordinator ] && preload=colojoin
		if [ ! -f "$dir/PG_VERSION" ]; then
			as_pg mkdir -p "$dir"
			init_server "$dir" "$port" "$preload"
		fi
		if ! as_pg "$PG_BINDIR/pg_ctl" -D "$dir" status >/dev/null 2>&1; then
			as_pg "$PG_BINDIR/pg_ctl" -D "$dir" -l "$dir.log" -w -t 60 start >/dev/null ||
				{ tail -20 "$dir.log"; exit 1; }
		fi
		as_pg "$PG_BINDIR/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d postgres \
			-c "SELECT 1 FROM pg_database WHERE datname = '$CJ_DB'" -At | grep -q 1 ||
			as_pg "$PG_BINDIR/createdb" -h 127.0.0.1 -p "$port" -U postgres "$CJ_DB"
	done
	echo "colojoin cluster up: coordinator 127.0.0.1:$CJ_PORT, nodes on ports $((CJ_PORT + 1))-$((CJ_PORT + CJ_NODES)), data in $CJ_CLUSTER_DIR"
}

stop() {
	[ -d "$CJ_CLUSTER_DIR" ] || return 0
	for dir in "$CJ_CLUSTER_DIR"/*/; do
		dir=${dir%/}
		[ -f "$dir/postmaster.pid" ] || continue
		as_pg "$PG_BINDIR/pg_ctl" -D "$dir" -m fast -w -t 60 stop >/dev/null 2>&1 ||
			as_pg "$PG_BINDIR/pg_ctl" -D "$dir" -m immediate -w stop >/dev/null 2>&1 || true
	done
}

status() {
	for dir in $(server_dirs); do
		printf '%-12s port %-6s ' "$(basename "$dir")" "$(port_of "$dir")"
		as_pg "$PG_BINDIR/pg_ctl" -D "$dir" status >/dev/null 2>&1 && echo up || echo down
	done
}

# Variables the test suites read (psql \getenv) to reach the nodes.
print_env() {
	echo "export PGHOST=127.0.0.1 PGPORT=$CJ_PORT PGUSER=postgres PGDATABASE=$CJ_DB"
	echo "export CJ_NODES=$CJ_NODES CJ_DB=$CJ_DB"
	for i in $(seq 1 "$CJ_NODES"); do echo "export CJ_NODE${i}_PORT=$((CJ_PORT + i))"; done
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
env) print_env ;;
restart) stop; start ;;
*) echo "usage: $0 start|stop|status|env|restart" >&2; exit 2 ;;
esac
