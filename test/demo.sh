#!/bin/bash
# test/demo.sh -- a first look at colojoin: build and install it, start a
# local cluster (a coordinator and three nodes), shard two tables across the
# nodes with colojoin.create_shards, load rows through the coordinator, and
# show the shards, the colocation check and a join with its plan.
#
#   test/demo.sh          (re)create and start the demo cluster, run the demo;
#                         the cluster keeps running afterwards
#   test/demo.sh stop     stop the demo cluster and delete its data
#
# Settings (environment):
#   CJ_DEMO_PORT     coordinator port; nodes on the next three (default 24432)
#   CJ_DEMO_DIR      data directory (default /tmp/colojoin-demo-$CJ_DEMO_PORT)
#   CJ_SKIP_BUILD=1  use the installed colojoin, do not run make / make install
#
# Run it as root (make install writes under /usr/lib/postgresql/15); the
# servers run as user postgres.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

PORT=${CJ_DEMO_PORT:-24432}
DIR=${CJ_DEMO_DIR:-/tmp/colojoin-demo-$PORT}
DB=demo

cluster() {
	CJ_PORT=$PORT CJ_CLUSTER_DIR=$DIR CJ_NODES=3 CJ_DB=$DB \
		PG_BINDIR=/usr/lib/postgresql/15/bin "$ROOT/test/cluster/cluster.sh" "$@"
}

case "${1:-start}" in
stop)
	cluster destroy
	echo "demo cluster stopped, $DIR deleted"
	exit 0
	;;
start) ;;
*)
	echo "usage: $0 [start|stop]" >&2
	exit 2
	;;
esac

step() { printf '\n=== %s\n\n' "$*"; }

trap 'echo >&2; echo "demo.sh: a step failed (above); the cluster may still be running: test/demo.sh stop" >&2' ERR

"$ROOT/test/install_deps.sh"
if [ "${CJ_SKIP_BUILD:-0}" != 1 ]; then
	step "Building and installing colojoin (make && make install)"
	make -s -j"$(nproc 2>/dev/null || echo 2)" PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
	make -s install PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config >/dev/null
fi

step "Starting a fresh demo cluster: coordinator on port $PORT, nodes on $((PORT + 1))-$((PORT + 3))"
cluster destroy
cluster start

# Every statement is echoed (psql -a) before its output, comments included,
# so the transcript reads as a tutorial.
psql_demo() {
	/usr/lib/postgresql/15/bin/psql -X -a -v ON_ERROR_STOP=1 -P pager=off \
		-h 127.0.0.1 -p "$PORT" -U postgres -d "$DB"
}

step "Declaring the nodes and sharding two tables"
psql_demo <<SQL
-- colojoin builds on postgres_fdw: CASCADE installs it too.
CREATE EXTENSION colojoin CASCADE;

-- A node is a foreign server; credentials come from user mappings.
CREATE SERVER node1 FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '127.0.0.1', port '$((PORT + 1))', dbname 'demo');
CREATE SERVER node2 FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '127.0.0.1', port '$((PORT + 2))', dbname 'demo');
CREATE SERVER node3 FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '127.0.0.1', port '$((PORT + 3))', dbname 'demo');
CREATE USER MAPPING FOR CURRENT_USER SERVER node1;
CREATE USER MAPPING FOR CURRENT_USER SERVER node2;
CREATE USER MAPPING FOR CURRENT_USER SERVER node3;

-- Sharded tables are ordinary hash-partitioned tables on the coordinator.
CREATE TABLE orders (
    o_orderkey    bigint NOT NULL,
    o_custkey     integer NOT NULL,
    o_orderdate   date NOT NULL,
    o_totalprice  numeric(12,2) NOT NULL
) PARTITION BY HASH (o_orderkey);

CREATE TABLE lineitem (
    l_orderkey       bigint NOT NULL,
    l_linenumber     integer NOT NULL,
    l_quantity       integer NOT NULL,
    l_extendedprice  numeric(12,2) NOT NULL,
    l_shipdate       date NOT NULL
) PARTITION BY HASH (l_orderkey);

-- create_shards makes the shard tables on the nodes and the foreign
-- partitions here: 6 partitions, round-robin over the three nodes ...
SELECT colojoin.create_shards('orders', ARRAY['node1', 'node2', 'node3'], 6);

-- ... and lineitem's partition i on the same node as orders' partition i.
SELECT colojoin.create_shards('lineitem', ARRAY['node1', 'node2', 'node3'],
                              colocate_with => 'orders');

-- Rows inserted on the coordinator are routed to their node by postgres_fdw.
INSERT INTO orders
SELECT o, 1 + o % 150, date '2024-01-01' + o % 366, 10 * (1 + o % 997)
FROM generate_series(1, 3000) AS o;

INSERT INTO lineitem
SELECT o, l, 1 + (o * l) % 50, (1 + (o * l) % 50) * 2.5, date '2024-01-03' + (o + l) % 366
FROM generate_series(1, 3000) AS o, generate_series(1, 4) AS l;

ANALYZE orders, lineitem;
SQL

step "Where the shards are"
psql_demo <<'SQL'
SELECT table_name, partition_key, leaf, partition_class, node, remote_relation, is_replica
FROM colojoin.shards ORDER BY table_name::text, partition_class, is_replica, node;

-- How many rows each node holds, asked through the coordinator.
SELECT 'orders' AS table_name, tableoid::regclass AS partition, count(*)
FROM orders GROUP BY 2
UNION ALL
SELECT 'lineitem', tableoid::regclass, count(*)
FROM lineitem GROUP BY 2
ORDER BY 1 DESC, 2;
SQL

step "Are orders and lineitem colocated?"
psql_demo <<'SQL'
SELECT * FROM colojoin.colocation('orders', 'lineitem');
SQL

step "A join on the shard keys: every partition pair joins on its own node, all at once"
psql_demo <<'SQL'
EXPLAIN (VERBOSE, COSTS OFF)
SELECT o_orderkey, o_orderdate, l_linenumber, l_quantity, l_extendedprice
FROM orders JOIN lineitem ON l_orderkey = o_orderkey
WHERE o_orderdate = date '2024-03-01'
ORDER BY o_orderkey, l_linenumber;

SELECT o_orderkey, o_orderdate, l_linenumber, l_quantity, l_extendedprice
FROM orders JOIN lineitem ON l_orderkey = o_orderkey
WHERE o_orderdate = date '2024-03-01'
ORDER BY o_orderkey, l_linenumber;

SELECT count(*) AS joined_rows, sum(l_extendedprice) AS revenue
FROM orders JOIN lineitem ON l_orderkey = o_orderkey;
SQL

cat <<EOF

=== The demo cluster is running

Connect to the coordinator (tables orders and lineitem, database $DB):

    psql -h 127.0.0.1 -p $PORT -U postgres $DB

The nodes listen on ports $((PORT + 1)), $((PORT + 2)) and $((PORT + 3)); data in $DIR.
Stop the cluster (and delete its data) with:

    test/demo.sh stop
EOF
