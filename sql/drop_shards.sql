--
-- drop_shards: colojoin.drop_shards and DROP TABLE remove the remote tables
-- colojoin made (create_shards, add_replica), in the caller's transaction,
-- and never a remote table colojoin did not make.
--
\set prefix cj_ds
\i sql/include/three_nodes_begin.sql

SELECT dblink_connect('cj_ds_d' || n,
		format('host=127.0.0.1 port=%s dbname=colojoin_regress', p))
FROM (VALUES (1, :'node1_port'), (2, :'node2_port'), (3, :'node3_port')) v(n, p);
SELECT dblink_exec('cj_ds_d' || n, 'DROP SCHEMA IF EXISTS cj_ds CASCADE')
FROM generate_series(1, 3) n;
CREATE SCHEMA cj_ds;
SET search_path = cj_ds, public;

-- the remote tables of schema cj_ds on every node
CREATE FUNCTION remote_tables() RETURNS TABLE (node int, relname name)
LANGUAGE sql AS $$
	SELECT n, t.relname
	FROM generate_series(1, 3) n,
		 LATERAL dblink('cj_ds_d' || n,
			$q$SELECT relname FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
			   WHERE s.nspname = 'cj_ds' AND c.relkind = 'r'$q$) AS t(relname name)
	ORDER BY 1, 2
$$;

CREATE TABLE t1 (k int, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('t1', ARRAY[:'srv1', :'srv2', :'srv3'], 3);
SELECT colojoin.add_replica('t1_p0', :'srv2');
INSERT INTO t1 SELECT g, g FROM generate_series(1, 30) g;
SELECT leaf, server, remote_schema, remote_table FROM colojoin.shard_origins ORDER BY 1, 2;
SELECT * FROM remote_tables();

-- drop_shards: every recorded remote table, replica included, then the
-- foreign partitions; the parent stays and create_shards can run again
SELECT colojoin.drop_shards('t1');
SELECT * FROM remote_tables();
SELECT count(*) AS partitions FROM pg_inherits WHERE inhparent = 't1'::regclass;
SELECT count(*) AS replicas FROM colojoin.replicas;
SELECT count(*) AS recorded FROM colojoin.shard_origins;
SELECT colojoin.create_shards('t1', ARRAY[:'srv1', :'srv2', :'srv3'], 3);
INSERT INTO t1 SELECT g, g FROM generate_series(1, 30) g;
SELECT count(*) FROM t1;

-- in a transaction that rolls back, nothing is dropped on the nodes
BEGIN;
SELECT colojoin.drop_shards('t1');
ROLLBACK;
SELECT * FROM remote_tables();
SELECT count(*) FROM t1;

-- DROP TABLE drops the remote tables too, and a rollback keeps them
CREATE TABLE t2 (k bigint, w text) PARTITION BY HASH (k);
SELECT colojoin.create_shards('t2', NULL, colocate_with => 't1');
BEGIN;
DROP TABLE t2;
ROLLBACK;
SELECT count(*) AS t2_tables FROM remote_tables() WHERE relname LIKE 't2%';
DROP TABLE t2;
SELECT count(*) AS t2_tables FROM remote_tables() WHERE relname LIKE 't2%';
SELECT count(*) AS recorded FROM colojoin.shard_origins WHERE remote_table LIKE 't2%';

-- DROP SCHEMA ... CASCADE reaches the leaves the same way
CREATE SCHEMA cj_ds_other;
CREATE TABLE cj_ds_other.t5 (k int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('cj_ds_other.t5', ARRAY[:'srv1', :'srv2'], 2);
SELECT count(*) AS t5_tables FROM generate_series(1, 3) n,
	LATERAL dblink('cj_ds_d' || n, $q$SELECT relname FROM pg_class WHERE relname LIKE 't5_p%'$q$) AS t(relname name);
SET client_min_messages = warning;
DROP SCHEMA cj_ds_other CASCADE;
RESET client_min_messages;
SELECT count(*) AS t5_tables FROM generate_series(1, 3) n,
	LATERAL dblink('cj_ds_d' || n, $q$SELECT relname FROM pg_class WHERE relname LIKE 't5_p%'$q$) AS t(relname name);
SELECT dblink_exec('cj_ds_d' || n, 'DROP SCHEMA IF EXISTS cj_ds_other CASCADE') FROM generate_series(1, 3) n;

-- with colojoin.drop_remote_shards off, DROP TABLE leaves them
CREATE TABLE t3 (k int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('t3', ARRAY[:'srv1'], 2);
SET colojoin.drop_remote_shards = off;
DROP TABLE t3;
RESET colojoin.drop_remote_shards;
SELECT relname FROM remote_tables() WHERE relname LIKE 't3%';
SELECT count(*) AS recorded FROM colojoin.shard_origins WHERE remote_table LIKE 't3%';
SELECT dblink_exec('cj_ds_d1', 'DROP TABLE cj_ds.t3_p0, cj_ds.t3_p1');

-- a table whose remote tables someone else made: never dropped
SELECT dblink_exec('cj_ds_d1', 'CREATE TABLE cj_ds.mine (k int)');
CREATE TABLE t4 (k int) PARTITION BY HASH (k);
CREATE FOREIGN TABLE t4_p0 PARTITION OF t4 FOR VALUES WITH (MODULUS 1, REMAINDER 0)
	SERVER :"srv1" OPTIONS (schema_name 'cj_ds', table_name 'mine');
SELECT colojoin.drop_shards('t4');
SELECT count(*) AS partitions FROM pg_inherits WHERE inhparent = 't4'::regclass;
DROP TABLE t4;
SELECT relname FROM remote_tables() WHERE relname = 'mine';

-- a node that cannot be reached: a warning names it, the rest goes on
CREATE SERVER cj_ds_dead FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port '1', dbname 'colojoin_regress');
CREATE USER MAPPING FOR CURRENT_USER SERVER cj_ds_dead;
CREATE TABLE t6 (k int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('t6', ARRAY[:'srv1', :'srv2'], 2);
INSERT INTO colojoin.shard_origins VALUES ('t6_p1', 'cj_ds_dead', 'cj_ds', 't6_p1');
\set VERBOSITY terse
SELECT colojoin.drop_shards('t6');
\set VERBOSITY default
SELECT count(*) AS t6_tables FROM remote_tables() WHERE relname LIKE 't6%';
DROP SERVER cj_ds_dead CASCADE;

-- clean up
DROP TABLE t1, t6;
SELECT count(*) AS recorded FROM colojoin.shard_origins;
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA cj_ds CASCADE;
SELECT dblink_exec('cj_ds_d' || n, 'DROP SCHEMA IF EXISTS cj_ds CASCADE') FROM generate_series(1, 3) n;
SELECT dblink_disconnect('cj_ds_d' || n) FROM generate_series(1, 3) n;
\i sql/include/three_nodes_end.sql
