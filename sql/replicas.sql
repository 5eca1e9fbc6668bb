--
-- replicas: extra placements of leaf partitions (colojoin.replicas),
-- managed by colojoin.add_replica and colojoin.drop_replica.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS colojoin CASCADE;
RESET client_min_messages;

\getenv node1_port CJ_NODE1_PORT
\getenv node2_port CJ_NODE2_PORT
\getenv node3_port CJ_NODE3_PORT
\getenv coord_port PGPORT

-- The primaries' tables, created by hand on the nodes (after removing what
-- an interrupted earlier run may have left).
\c - - 127.0.0.1 :node1_port
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS rp_shard, "Rp ""S""" CASCADE;
RESET client_min_messages;
CREATE SCHEMA rp_shard;
CREATE TABLE rp_shard.t_0 (id int NOT NULL, "Val" text, amount numeric(10,2) DEFAULT 0);
CREATE TABLE rp_shard.u_0 (a int, remote_b text);
CREATE SCHEMA "Rp ""S""";
CREATE TABLE "Rp ""S"""."T;1" ("Weird ""col""; DROP" int, "x y" text);
-- not empty: a replica cannot be copied into it
CREATE TABLE rp_shard.t_1 (id int NOT NULL, "Val" text, amount numeric(10,2) DEFAULT 0);
INSERT INTO rp_shard.t_1 VALUES (-1, 'stray', 0);
\c - - 127.0.0.1 :node2_port
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS rp_shard, "Rp ""S""" CASCADE;
DROP SCHEMA IF EXISTS rp CASCADE;
RESET client_min_messages;
CREATE SCHEMA rp_shard;
CREATE TABLE rp_shard.t_1 (id int NOT NULL, "Val" text, amount numeric(10,2) DEFAULT 0);
\c - - 127.0.0.1 :node3_port
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS rp_shard CASCADE;
RESET client_min_messages;
-- already there and empty: a replica is copied into it
CREATE SCHEMA rp_shard;
CREATE TABLE rp_shard.t_1 (id int NOT NULL, "Val" text, amount numeric(10,2) DEFAULT 0);
\c - - 127.0.0.1 :coord_port

CREATE SERVER rp_n1 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node1_port', dbname 'colojoin_regress');
CREATE SERVER rp_n2 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node2_port', dbname 'colojoin_regress');
CREATE SERVER rp_n3 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node3_port', dbname 'colojoin_regress');
CREATE USER MAPPING FOR CURRENT_USER SERVER rp_n1;
CREATE USER MAPPING FOR CURRENT_USER SERVER rp_n2;
CREATE USER MAPPING FOR CURRENT_USER SERVER rp_n3;

CREATE SCHEMA rp;
SET search_path = rp, public;

CREATE TABLE t (id int NOT NULL, "Val" text, amount numeric(10,2) DEFAULT 0)
	PARTITION BY HASH (id);
CREATE FOREIGN TABLE t_0 PARTITION OF t FOR VALUES WITH (MODULUS 2, REMAINDER 0)
	SERVER rp_n1 OPTIONS (schema_name 'rp_shard');
CREATE FOREIGN TABLE t_1 PARTITION OF t FOR VALUES WITH (MODULUS 2, REMAINDER 1)
	SERVER rp_n2 OPTIONS (schema_name 'rp_shard');
INSERT INTO t SELECT g, 'v' || g, g / 4.0 FROM generate_series(1, 100) g;

-- check(schema, table, server): count and checksum of a remote table
CREATE FUNCTION check_remote(sch text, tab text, srv text,
							 OUT n bigint, OUT checksum text) LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('CREATE FOREIGN TABLE rp.peek (id int, "Val" text, amount numeric)'
				   ' SERVER %I OPTIONS (schema_name %L, table_name %L)', srv, sch, tab);
	SELECT count(*), md5(string_agg(format('%s/%s/%s', id, "Val", amount), ',' ORDER BY id))
	  INTO n, checksum FROM rp.peek;
	DROP FOREIGN TABLE rp.peek;
END $$;

-- copy_data (the default): the replica's table is created on the server,
-- in the same schema and under the same name, and filled.
SELECT colojoin.add_replica('t_0', 'rp_n2');
SELECT * FROM colojoin.replicas WHERE leaf = 't_0'::regclass;
SELECT leaf, node, remote_relation, is_replica FROM colojoin.shards
 WHERE table_name = 't'::regclass;
SELECT (SELECT n FROM check_remote('rp_shard', 't_0', 'rp_n2')) AS copied,
	   (SELECT count(*) FROM t_0) AS primary_rows,
	   check_remote('rp_shard', 't_0', 'rp_n2') = check_remote('rp_shard', 't_0', 'rp_n1') AS same;
-- into a table that already exists and is empty
SELECT colojoin.add_replica('t_1', 'rp_n3');
SELECT (SELECT n FROM check_remote('rp_shard', 't_1', 'rp_n3')) AS copied,
	   check_remote('rp_shard', 't_1', 'rp_n3') = check_remote('rp_shard', 't_1', 'rp_n2') AS same;
-- but not into one that holds rows
SELECT colojoin.add_replica('t_1', 'rp_n1');
-- without copy_data the replica is only registered; its rows are left alone
SELECT colojoin.add_replica('t_1', 'rp_n1', copy_data => false);
SELECT n FROM check_remote('rp_shard', 't_1', 'rp_n1');
SELECT leaf, node, remote_relation, is_replica FROM colojoin.shards
 WHERE table_name = 't'::regclass;

-- Remote column names: a leaf attached after a column was dropped from the
-- parent (attribute numbers differ) with a column_name option.  The copy
-- gets the remote names, so the same remote SQL serves every placement.
CREATE TABLE u (a int, dropme int, b text) PARTITION BY HASH (a);
ALTER TABLE u DROP COLUMN dropme;
CREATE FOREIGN TABLE u_0 (a int, b text OPTIONS (column_name 'remote_b'))
	SERVER rp_n1 OPTIONS (schema_name 'rp_shard');
ALTER TABLE u ATTACH PARTITION u_0 FOR VALUES WITH (MODULUS 1, REMAINDER 0);
INSERT INTO u SELECT g, 'b' || g FROM generate_series(1, 10) g;
SELECT colojoin.add_replica('u_0', 'rp_n3');
CREATE FOREIGN TABLE u_0_on_n3 (a int, remote_b text)
	SERVER rp_n3 OPTIONS (schema_name 'rp_shard', table_name 'u_0');
SELECT * FROM u_0_on_n3 ORDER BY a LIMIT 3;
SELECT count(*) FROM u_0_on_n3 WHERE remote_b = 'b' || a;

-- Identifiers that need quoting, and a remote schema the replica's server
-- does not have yet.
CREATE TABLE "Weird ""name""; DROP" ("Weird ""col""; DROP" int, "x y" text)
	PARTITION BY HASH ("Weird ""col""; DROP");
CREATE FOREIGN TABLE "Weird leaf" PARTITION OF "Weird ""name""; DROP"
	FOR VALUES WITH (MODULUS 1, REMAINDER 0)
	SERVER rp_n1 OPTIONS (schema_name 'Rp "S"', table_name 'T;1');
INSERT INTO "Weird ""name""; DROP" SELECT g, 'x' || g FROM generate_series(1, 7) g;
SELECT colojoin.add_replica('"Weird leaf"', 'rp_n2');
SELECT leaf, node, remote_relation, is_replica FROM colojoin.shards
 WHERE table_name = '"Weird ""name""; DROP"'::regclass;
CREATE FOREIGN TABLE weird_on_n2 ("Weird ""col""; DROP" int, "x y" text)
	SERVER rp_n2 OPTIONS (schema_name 'Rp "S"', table_name 'T;1');
SELECT count(*), sum("Weird ""col""; DROP"), min("x y") FROM weird_on_n2;
SELECT colojoin.drop_replica('"Weird leaf"', 'rp_n2');
-- drop_replica leaves the table on the server in place
SELECT count(*) FROM weird_on_n2;

-- The copy happens in the current transaction: rolled back, it leaves
-- neither a registration nor a table behind.
BEGIN;
SELECT colojoin.add_replica('t_0', 'rp_n3');
SELECT leaf, node, is_replica FROM colojoin.shards WHERE leaf = 't_0'::regclass;
ROLLBACK;
SELECT leaf, node, is_replica FROM colojoin.shards WHERE leaf = 't_0'::regclass;
SELECT count(*) FROM colojoin.replicas WHERE leaf = 't_0'::regclass AND server = 'rp_n3';
CREATE FOREIGN TABLE t_0_on_n3 (id int) SERVER rp_n3 OPTIONS (schema_name 'rp_shard', table_name 't_0');
\set VERBOSITY terse
SELECT count(*) FROM t_0_on_n3;
\set VERBOSITY default

-- A remote failure names the node and what was being done, and undoes all.
CREATE TABLE v (k int) PARTITION BY HASH (k);
CREATE FOREIGN TABLE v_0 PARTITION OF v FOR VALUES WITH (MODULUS 1, REMAINDER 0)
	SERVER rp_n1 OPTIONS (table_name 'no_such_table');
SELECT colojoin.add_replica('v_0', 'rp_n2');
SELECT count(*) FROM colojoin.replicas WHERE leaf = 'v_0'::regclass;

--
-- Every error path.
--
CREATE TABLE flat (id int);
SELECT colojoin.add_replica('flat', 'rp_n2');
SELECT colojoin.add_replica('t', 'rp_n2');
CREATE TABLE ml (k int, s text) PARTITION BY HASH (k);
CREATE TABLE ml_0 PARTITION OF ml FOR VALUES WITH (MODULUS 1, REMAINDER 0) PARTITION BY LIST (s);
CREATE TABLE ml_0_local PARTITION OF ml_0 FOR VALUES IN ('local');
CREATE FOREIGN DATA WRAPPER rp_other;
CREATE SERVER rp_other_srv FOREIGN DATA WRAPPER rp_other;
CREATE FOREIGN TABLE ml_0_other PARTITION OF ml_0 FOR VALUES IN ('other') SERVER rp_other_srv;
CREATE FOREIGN TABLE ml_0_remote PARTITION OF ml_0 FOR VALUES IN ('remote') SERVER rp_n1;
SELECT colojoin.add_replica('ml_0', 'rp_n2');
SELECT colojoin.add_replica('ml_0_local', 'rp_n2');
SELECT colojoin.add_replica('ml_0_other', 'rp_n2');
SELECT colojoin.add_replica('ml_0_remote', 'no_such_server', false);
SELECT colojoin.add_replica('ml_0_remote', 'rp_other_srv', false);
SELECT colojoin.add_replica('ml_0_remote', 'rp_n1', false);
-- leaves at any level are fine
SELECT colojoin.add_replica('ml_0_remote', 'rp_n2', false);
SELECT colojoin.add_replica('ml_0_remote', 'rp_n2', false);
SELECT colojoin.add_replica('no_such_table', 'rp_n2');
SELECT colojoin.add_replica(NULL, 'rp_n2') IS NULL AS strict;
SELECT colojoin.drop_replica('ml_0_remote', 'rp_n3');
SELECT colojoin.drop_replica('ml_0_remote', 'no_such_server');
SELECT colojoin.drop_replica('ml_0_remote', 'rp_n2');
SELECT colojoin.drop_replica('ml_0_remote', 'rp_n2');

-- Privileges: only superusers may call the functions unless granted; then
-- the caller must own the leaf and may use the server.
CREATE ROLE regress_cj_rp_user;
GRANT USAGE ON SCHEMA rp TO regress_cj_rp_user;
SET ROLE regress_cj_rp_user;
SELECT colojoin.add_replica('ml_0_remote', 'rp_n2', false);
RESET ROLE;
GRANT EXECUTE ON FUNCTION colojoin.add_replica(regclass, name, boolean),
	colojoin.drop_replica(regclass, name) TO regress_cj_rp_user;
SET ROLE regress_cj_rp_user;
SELECT colojoin.add_replica('ml_0_remote', 'rp_n2', false);
RESET ROLE;
ALTER FOREIGN TABLE ml_0_remote OWNER TO regress_cj_rp_user;
SET ROLE regress_cj_rp_user;
SELECT colojoin.add_replica('ml_0_remote', 'rp_n2', false);
RESET ROLE;
GRANT USAGE ON FOREIGN SERVER rp_n2 TO regress_cj_rp_user;
SET ROLE regress_cj_rp_user;
SELECT colojoin.add_replica('ml_0_remote', 'rp_n2', false);
-- the table itself stays read-only for ordinary users
DELETE FROM colojoin.replicas;
SELECT colojoin.drop_replica('ml_0_remote', 'rp_n2');
RESET ROLE;

--
-- Every backend follows changes to colojoin.replicas, however they are made.
-- A loopback server reads the view through a second backend that keeps its
-- connection (and its metadata cache) between queries.
--
CREATE SERVER rp_self FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'coord_port', dbname 'colojoin_regress');
CREATE USER MAPPING FOR CURRENT_USER SERVER rp_self;
CREATE VIEW t_shards AS
	SELECT leaf::text AS leaf, node::text AS node, pg_backend_pid() AS pid
	  FROM colojoin.shards WHERE table_name = 'rp.t'::regclass;
CREATE FOREIGN TABLE remote_t_shards (leaf text, node text, pid int)
	SERVER rp_self OPTIONS (schema_name 'rp', table_name 't_shards');
CREATE TEMP TABLE seen AS SELECT 1 AS step, * FROM remote_t_shards;
SELECT colojoin.drop_replica('t_1', 'rp_n1');
INSERT INTO seen SELECT 2, * FROM remote_t_shards;
-- by hand: the table's trigger tells every backend
DELETE FROM colojoin.replicas WHERE leaf = 't_0'::regclass;
INSERT INTO seen SELECT 3, * FROM remote_t_shards;
INSERT INTO colojoin.replicas VALUES ('t_0', 'rp_n3', 'rp_shard', 't_0');
INSERT INTO seen SELECT 4, * FROM remote_t_shards;
SELECT step, leaf, string_agg(node, ', ' ORDER BY node) AS nodes
  FROM seen GROUP BY step, leaf ORDER BY step, leaf;
SELECT count(DISTINCT pid) AS backends FROM seen;
-- and this backend too
SELECT leaf, node, is_replica FROM colojoin.shards WHERE table_name = 't'::regclass;

-- Dropping a leaf or a server forgets its replicas.
SELECT leaf, server FROM colojoin.replicas WHERE server LIKE 'rp\_%' ORDER BY 1, 2;
DROP FOREIGN TABLE t_0;
SELECT leaf, server FROM colojoin.replicas WHERE server LIKE 'rp\_%' ORDER BY 1, 2;
SELECT colojoin.add_replica('t_1', 'rp_n1', false);
SET client_min_messages = warning;
DROP SERVER rp_n1 CASCADE;
RESET client_min_messages;
SELECT leaf, server FROM colojoin.replicas WHERE server LIKE 'rp\_%' ORDER BY 1, 2;

-- Clean up, here and on the nodes.
SET client_min_messages = warning;
DROP SERVER rp_self CASCADE;
DROP SCHEMA rp CASCADE;
DROP SERVER rp_n2, rp_n3, rp_other_srv CASCADE;
DROP FOREIGN DATA WRAPPER rp_other;
DROP OWNED BY regress_cj_rp_user;
DROP ROLE regress_cj_rp_user;
RESET client_min_messages;
SELECT count(*) AS replicas_left FROM colojoin.replicas WHERE server LIKE 'rp\_%';
\c - - 127.0.0.1 :node1_port
SET client_min_messages = warning;
DROP SCHEMA rp_shard, "Rp ""S""" CASCADE;
\c - - 127.0.0.1 :node2_port
SET client_min_messages = warning;
-- the failed copy left nothing behind
SELECT to_regnamespace('rp') AS leftover_schema, to_regclass('rp.no_such_table') AS leftover_table;
DROP SCHEMA rp_shard, "Rp ""S""" CASCADE;
\c - - 127.0.0.1 :node3_port
SET client_min_messages = warning;
DROP SCHEMA rp_shard CASCADE;
\c - - 127.0.0.1 :coord_port
