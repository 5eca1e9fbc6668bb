--
-- settings: the GUCs that steer colojoin per session (issue 5):
-- colojoin.enable and colojoin.enable_colocated_join switch the colocated
-- plan off (PostgreSQL's own plan runs, with the same rows);
-- colojoin.log_decisions says, in a NOTICE, why a join of sharded tables
-- was not colocated; colojoin.max_connections_per_node = 1 still runs every
-- task.  Each can be set per session, with SET LOCAL, per role and per
-- database.
--
SELECT current_user AS cj_set_me \gset
\set prefix cj_set
\i sql/include/three_nodes_begin.sql

CREATE SCHEMA cj_set;
CREATE SCHEMA cj_set_local;
SET search_path = cj_set, public;

-- a and b colocated (class r on node r % 3 + 1); m4 has another modulus;
-- pl has a's scheme but every class on another node
CREATE TABLE a (k bigint, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('a', '{cj_set_n1,cj_set_n2,cj_set_n3}', 6);
CREATE TABLE b (k bigint, w int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('b', '{cj_set_n1,cj_set_n2,cj_set_n3}', colocate_with => 'a');
CREATE TABLE m4 (k bigint, q int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('m4', '{cj_set_n1,cj_set_n2,cj_set_n3}', 4);
CREATE TABLE pl (k bigint, r int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('pl', '{cj_set_n2,cj_set_n3,cj_set_n1}', 6);
CREATE TABLE loc (k bigint, name text);
SELECT table_name, partition_class, node FROM colojoin.shards
WHERE table_name::text IN ('a', 'pl') AND partition_class < 2 ORDER BY 1, 2;

CREATE TABLE cj_set_local.a (LIKE a);
CREATE TABLE cj_set_local.b (LIKE b);
CREATE TABLE cj_set_local.m4 (LIKE m4);
CREATE TABLE cj_set_local.pl (LIKE pl);
CREATE TABLE cj_set_local.loc (LIKE loc);
INSERT INTO cj_set_local.a SELECT CASE WHEN g % 11 = 0 THEN NULL ELSE g END, g % 4 FROM generate_series(1, 50) g;
INSERT INTO cj_set_local.b SELECT g % 40, g FROM generate_series(1, 100) g;
INSERT INTO cj_set_local.m4 SELECT g, g FROM generate_series(1, 30) g;
INSERT INTO cj_set_local.pl SELECT g * 2, g FROM generate_series(1, 30) g;
INSERT INTO cj_set_local.loc SELECT g, 'name ' || g FROM generate_series(1, 8) g;
INSERT INTO a SELECT * FROM cj_set_local.a;
INSERT INTO b SELECT * FROM cj_set_local.b;
INSERT INTO m4 SELECT * FROM cj_set_local.m4;
INSERT INTO pl SELECT * FROM cj_set_local.pl;
INSERT INTO loc SELECT * FROM cj_set_local.loc;
ANALYZE a, b, m4, pl, loc;

-- check_query(query): the plan (colocated: a ColocatedJoin scan whose
-- strategy is a colocated join, no data moved first) and whether the rows
-- equal those of the same query over the local tables
CREATE FUNCTION check_query(query text, OUT plan text, OUT result text)
LANGUAGE plpgsql AS $$
DECLARE
	line text;
	s text[];
	l text[];
BEGIN
	plan := 'not colocated';
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		IF line ~ '^ *Strategy: ([^,]*, )?colocated on ' THEN
			plan := 'colocated';
		END IF;
	END LOOP;
	s := rows_of(query, 'cj_set');
	l := rows_of(query, 'cj_set_local');
	result := CASE WHEN s = l THEN format('same (%s rows)', cardinality(s))
				   ELSE format('DIFFERENT: %s rows, %s local', cardinality(s), cardinality(l)) END;
END
$$;
CREATE TABLE queries (name text PRIMARY KEY, q text);
INSERT INTO queries VALUES
	('inner', 'SELECT a.k, a.v, b.w FROM a JOIN b ON a.k = b.k'),
	('left', 'SELECT a.k, b.w FROM a LEFT JOIN b ON a.k = b.k'),
	('full', 'SELECT a.k, b.k, b.w FROM a FULL JOIN b ON a.k = b.k'),
	('semi', 'SELECT a.k FROM a WHERE EXISTS (SELECT FROM b WHERE b.k = a.k)'),
	('anti', 'SELECT a.k FROM a WHERE NOT EXISTS (SELECT FROM b WHERE b.k = a.k)'),
	('pruned', 'SELECT a.k, b.w FROM a JOIN b ON a.k = b.k WHERE a.k IN (3, 4, 5)'),
	('with local', 'SELECT a.k, b.w, loc.name FROM a JOIN b ON a.k = b.k JOIN loc ON loc.k = a.k');

-- the defaults (but colojoin.recovery_interval, 0 in the test cluster:
-- test/run_tests.sh turns the recovery worker off)
SELECT name, setting FROM pg_settings WHERE name LIKE 'colojoin.%' ORDER BY name;
-- the recovery worker's interval: 60s by default, reloaded, -1 and 0 off
SELECT boot_val, unit, context, min_val, max_val FROM pg_settings
WHERE name = 'colojoin.recovery_interval';
SELECT name, (check_query(q)).* FROM queries ORDER BY name;

--
-- colojoin.enable = off, then colojoin.enable_colocated_join = off:
-- PostgreSQL's plans, the same rows.
--
SET colojoin.enable = off;
EXPLAIN (COSTS OFF) SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
SELECT name, (check_query(q)).* FROM queries ORDER BY name;
RESET colojoin.enable;
SET colojoin.enable_colocated_join = off;
EXPLAIN (COSTS OFF) SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
SELECT name, (check_query(q)).* FROM queries ORDER BY name;
RESET colojoin.enable_colocated_join;
-- values are checked
SET colojoin.enable = maybe;
SET colojoin.max_connections_per_node = 0;
SET colojoin.max_connections_per_node = 65;
-- the connection budget is the same for every session (postgresql.conf);
-- the two timeouts are a session's own
SHOW colojoin.node_connection_budget;
SET colojoin.node_connection_budget = 10;
SET colojoin.connection_wait_timeout = -1;
SET colojoin.connection_wait_timeout = '2s';
SHOW colojoin.connection_wait_timeout;
RESET colojoin.connection_wait_timeout;
SET colojoin.idle_connection_timeout = '5min';
SHOW colojoin.idle_connection_timeout;
RESET colojoin.idle_connection_timeout;
SHOW colojoin.idle_connection_timeout;

--
-- SET LOCAL lasts for its transaction; a rolled back SET is undone.
--
BEGIN;
SET LOCAL colojoin.enable_colocated_join = off;
SHOW colojoin.enable_colocated_join;
SELECT name, (check_query(q)).* FROM queries WHERE name IN ('inner', 'left') ORDER BY name;
COMMIT;
SHOW colojoin.enable_colocated_join;
SELECT (check_query(q)).plan FROM queries WHERE name = 'inner';
BEGIN;
SET colojoin.enable = off;
ROLLBACK;
SHOW colojoin.enable;
SELECT (check_query(q)).plan FROM queries WHERE name = 'inner';

--
-- colojoin.log_decisions: a NOTICE says why each join of sharded tables
-- was not colocated, once per join.  Colocated joins, and joins with
-- plain tables, say nothing.  (Redistribution and broadcast are off here:
-- this is about the colocated strategy alone.)
--
SET colojoin.enable_redistribution = off;
SET colojoin.enable_broadcast = off;
SET colojoin.log_decisions = on;
-- colocated: no notice
SELECT count(*) FROM a JOIN b ON a.k = b.k;
SELECT count(*) FROM a JOIN b ON a.k = b.k AND a.v < b.w;
-- a plain table: no notice about it
SELECT count(*) FROM a JOIN loc ON a.k = loc.k;
-- joins on expressions
SELECT count(*) FROM a JOIN b ON a.k - b.k = 0;
SELECT count(*) FROM a JOIN b ON a.k = b.k + 0;
-- an inequality
SELECT count(*) FROM a JOIN b ON a.k < b.k AND b.k < 5;
-- an OR
SELECT count(*) FROM a JOIN b ON a.k = b.k OR a.v = b.w;
-- a column that is not the partition key
SELECT count(*) FROM a JOIN b ON a.v = b.k;
-- an outer join whose equality is not in its ON clause
SELECT count(*) FROM a LEFT JOIN b ON a.v = b.w WHERE a.k = b.k OR b.k IS NULL;
-- different moduli
SELECT count(*) FROM a JOIN m4 ON a.k = m4.k;
-- placement: the same classes on other nodes
SELECT count(*) FROM a JOIN pl ON a.k = pl.k;
-- the steps above the tables say why they do not run on the nodes too
-- (aggregation, DISTINCT, ORDER BY ... LIMIT, windowing), also over one
-- table; one that does says nothing
SELECT v, count(*) FROM a GROUP BY ROLLUP (v) ORDER BY 1 LIMIT 1;
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY v) FROM a;
SELECT DISTINCT ON (v) v, k FROM a ORDER BY v, k LIMIT 1;
SELECT k, rank() OVER (PARTITION BY v ORDER BY k) FROM a ORDER BY 1 LIMIT 1;
SELECT k, rank() OVER (PARTITION BY k ORDER BY v) FROM a ORDER BY 1 LIMIT 1;
SELECT a.k, count(*) FROM a JOIN b ON a.k = b.k GROUP BY a.k ORDER BY 2 DESC, 1 LIMIT 1;
-- and a join with what is not a table of theirs: a function's rows (which
-- only a broadcast would take to the nodes, off here: no notice, as for
-- the plain table), a subquery aggregating all its rows
SELECT count(*) FROM a JOIN generate_series(1, 3) g ON a.k = g;
SELECT count(*) FROM a WHERE a.k IN (SELECT count(*) FROM b);
-- off again: silence
SET colojoin.log_decisions = off;
SELECT count(*) FROM a JOIN m4 ON a.k = m4.k;
-- the rows are right all the same
SELECT name, (check_query(q)).* FROM (VALUES
	('expression', 'SELECT a.k, b.w FROM a JOIN b ON a.k - b.k = 0'),
	('or', 'SELECT a.k, b.w FROM a JOIN b ON a.k = b.k OR a.v = b.w'),
	('non-key', 'SELECT a.k, b.w FROM a JOIN b ON a.v = b.k'),
	('moduli', 'SELECT a.k, m4.q FROM a JOIN m4 ON a.k = m4.k'),
	('placement', 'SELECT a.k, pl.r FROM a JOIN pl ON a.k = pl.k')) v(name, q);
RESET colojoin.enable_redistribution;
RESET colojoin.enable_broadcast;
SELECT name, (check_query(q)).* FROM (VALUES
	('expression', 'SELECT a.k, b.w FROM a JOIN b ON a.k - b.k = 0'),
	('moduli', 'SELECT a.k, m4.q FROM a JOIN m4 ON a.k = m4.k'),
	('placement', 'SELECT a.k, pl.r FROM a JOIN pl ON a.k = pl.k')) v(name, q);

--
-- colojoin.max_connections_per_node = 1: the two tasks of each node run
-- one after the other on one connection; nothing is lost.
--
SET colojoin.max_connections_per_node = 1;
SELECT name, (check_query(q)).* FROM queries ORDER BY name;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
RESET colojoin.max_connections_per_node;

--
-- Per role: ALTER ROLE ... SET applies to the role's new sessions.
--
CREATE ROLE cj_set_role LOGIN;
GRANT USAGE ON SCHEMA cj_set TO cj_set_role;
GRANT SELECT ON ALL TABLES IN SCHEMA cj_set TO cj_set_role;
CREATE USER MAPPING FOR cj_set_role SERVER cj_set_n1;
CREATE USER MAPPING FOR cj_set_role SERVER cj_set_n2;
CREATE USER MAPPING FOR cj_set_role SERVER cj_set_n3;
ALTER ROLE cj_set_role SET colojoin.enable_colocated_join = off;
\c - cj_set_role
SET search_path = cj_set, public;
SHOW colojoin.enable_colocated_join;
EXPLAIN (COSTS OFF) SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
-- the session may still change it
SET colojoin.enable_colocated_join = on;
EXPLAIN (COSTS OFF) SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
\c - :cj_set_me
SET search_path = cj_set, public;
SHOW colojoin.enable_colocated_join;
ALTER ROLE cj_set_role RESET ALL;

--
-- Per database: ALTER DATABASE ... SET, in a database of its own whose
-- sharded tables read the same shards.
--
CREATE DATABASE cj_set_db;
ALTER DATABASE cj_set_db SET colojoin.enable_colocated_join = off;
ALTER DATABASE cj_set_db SET colojoin.log_decisions = on;
\c cj_set_db
SET client_min_messages = warning;
CREATE EXTENSION colojoin CASCADE;
RESET client_min_messages;
CREATE SERVER cj_set_n1 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node1_port', dbname 'colojoin_regress');
CREATE SERVER cj_set_n2 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node2_port', dbname 'colojoin_regress');
CREATE SERVER cj_set_n3 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node3_port', dbname 'colojoin_regress');
CREATE USER MAPPING FOR CURRENT_USER SERVER cj_set_n1;
CREATE USER MAPPING FOR CURRENT_USER SERVER cj_set_n2;
CREATE USER MAPPING FOR CURRENT_USER SERVER cj_set_n3;
CREATE TABLE a (k bigint, v int) PARTITION BY HASH (k);
CREATE TABLE b (k bigint, w int) PARTITION BY HASH (k);
DO $$
BEGIN
	FOR r IN 0 .. 5 LOOP
		EXECUTE format('CREATE FOREIGN TABLE a_p%s PARTITION OF a FOR VALUES WITH (MODULUS 6, REMAINDER %s) '
					   'SERVER cj_set_n%s OPTIONS (schema_name ''cj_set'', table_name ''a_p%s'')',
					   r, r, r % 3 + 1, r);
		EXECUTE format('CREATE FOREIGN TABLE b_p%s PARTITION OF b FOR VALUES WITH (MODULUS 6, REMAINDER %s) '
					   'SERVER cj_set_n%s OPTIONS (schema_name ''cj_set'', table_name ''b_p%s'')',
					   r, r, r % 3 + 1, r);
	END LOOP;
END
$$;
ANALYZE a, b;
SHOW colojoin.enable_colocated_join;
-- the database's setting: PostgreSQL's plan, and no NOTICE for a join
-- that was not even tried
EXPLAIN (COSTS OFF) SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
SELECT count(*), sum(b.w) FROM a JOIN b ON a.k = b.k;
SET colojoin.enable_colocated_join = on;
EXPLAIN (COSTS OFF) SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
SELECT count(*), sum(b.w) FROM a JOIN b ON a.k = b.k;
-- a role-and-database setting wins over the database's
\c colojoin_regress
ALTER ROLE :"cj_set_me" IN DATABASE cj_set_db SET colojoin.enable_colocated_join = on;
\c cj_set_db
SHOW colojoin.enable_colocated_join;
\c colojoin_regress
ALTER ROLE :"cj_set_me" IN DATABASE cj_set_db RESET ALL;
DROP DATABASE cj_set_db WITH (FORCE);
SELECT count(*), sum(b.w) FROM cj_set_local.a JOIN cj_set_local.b ON a.k = b.k;

--
-- Clean up, here and on the nodes.
--
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA cj_set CASCADE;
DROP SCHEMA cj_set_local CASCADE;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
				   'DROP SCHEMA IF EXISTS cj_set CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
\i sql/include/three_nodes_end.sql
DROP ROLE cj_set_role;
SELECT count(*) AS leftovers FROM pg_roles WHERE rolname = 'cj_set_role';
SELECT count(*) AS leftovers FROM pg_database WHERE datname = 'cj_set_db';
