--
-- shared_nodes: several foreign servers that reach one database are one
-- physical node.  Shard creation through them finishes (two connections of
-- one transaction into one database would wait on each other's locks),
-- joins across them are colocated, a replica on the same database is
-- refused, colojoin.shards shows the physical node, and a wait of one of
-- colojoin's connections on another of the same transaction that sharing
-- cannot avoid (another role) ends in an error naming both servers.
-- statement_timeout is only a safety net: a hang fails the suite by it.
--
\set prefix cj_sn
\i sql/include/three_nodes_begin.sql
-- The plans asserted here are those of partitions whose size the planner
-- does not know (colojoin.remote_size_lifetime = 0; suite remote_sizes
-- covers the sizes read from the nodes).
SET colojoin.remote_size_lifetime = 0;
SET statement_timeout = '120s';

-- two more servers per node: cj_sn_n1 .. cj_sn_n3 (from the include) and
-- cj_sn_a1 .. a3, cj_sn_b1 .. b3 reaching the same three databases
SELECT set_config('cj_sn.port1', :'node1_port', false),
	   set_config('cj_sn.port2', :'node2_port', false),
	   set_config('cj_sn.port3', :'node3_port', false) \gset
DO $$
BEGIN
	FOR n IN 1 .. 3 LOOP
		EXECUTE format('CREATE SERVER cj_sn_a%s FOREIGN DATA WRAPPER postgres_fdw '
					   'OPTIONS (host %L, port %L, dbname %L)', n, 'localhost',
					   current_setting('cj_sn.port' || n), 'colojoin_regress');
		EXECUTE format('CREATE SERVER cj_sn_b%s FOREIGN DATA WRAPPER postgres_fdw '
					   'OPTIONS (host %L, port %L, dbname %L)', n, '127.0.0.1',
					   current_setting('cj_sn.port' || n), 'colojoin_regress');
		EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER cj_sn_a%s', n);
		EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER cj_sn_b%s', n);
	END LOOP;
END
$$;

SELECT dblink_connect('cj_sn_d' || n,
		format('host=127.0.0.1 port=%s dbname=colojoin_regress', p))
FROM (VALUES (1, :'node1_port'), (2, :'node2_port'), (3, :'node3_port')) v(n, p);
-- nothing of this suite on the nodes yet: create_shards makes the schema
SELECT dblink_exec('cj_sn_d' || n, 'DROP SCHEMA IF EXISTS cj_sn_s CASCADE')
FROM generate_series(1, 3) n;

CREATE SCHEMA cj_sn_s;
CREATE SCHEMA cj_sn_l;
SET search_path = cj_sn_s, public;

-- 9 servers over 3 databases, 18 partitions: the servers of one node get
-- partitions in one transaction, each needing the node's schema cj_sn_s
CREATE TABLE a (k bigint, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('a',
	ARRAY['cj_sn_n1', 'cj_sn_n2', 'cj_sn_n3', 'cj_sn_a1', 'cj_sn_a2', 'cj_sn_a3',
		  'cj_sn_b1', 'cj_sn_b2', 'cj_sn_b3'], 18);
-- every partition's table exists on its node
SELECT n, count(*) AS tables
FROM generate_series(1, 3) n,
	 LATERAL dblink('cj_sn_d' || n,
		$$SELECT relname FROM pg_class WHERE relnamespace = 'cj_sn_s'::regnamespace AND relkind = 'r'$$)
		AS t(relname name)
GROUP BY n ORDER BY n;

-- b: the same classes, but every partition on the *other* server of the
-- same node (n1's classes on a1, a1's on b1, b1's on n1, ...)
CREATE TABLE b (k bigint, w int) PARTITION BY HASH (k);
DO $$
DECLARE
	servers text[] := ARRAY['cj_sn_n1', 'cj_sn_n2', 'cj_sn_n3', 'cj_sn_a1', 'cj_sn_a2',
							'cj_sn_a3', 'cj_sn_b1', 'cj_sn_b2', 'cj_sn_b3'];
BEGIN
	FOR r IN 0 .. 17 LOOP
		PERFORM dblink_exec('cj_sn_d' || (r % 3) + 1,
							format('CREATE TABLE cj_sn_s.b_p%s (k bigint, w int)', r));
		EXECUTE format('CREATE FOREIGN TABLE b_p%s PARTITION OF b FOR VALUES WITH '
					   '(MODULUS 18, REMAINDER %s) SERVER %I OPTIONS (schema_name %L)',
					   r, r, servers[(r + 3) % 9 + 1], 'cj_sn_s');
	END LOOP;
END
$$;
-- the servers of a's and b's class 0: different names, one database
SELECT node FROM colojoin.shards WHERE leaf IN ('a_p0'::regclass, 'b_p0'::regclass) ORDER BY node;
SELECT count(DISTINCT node) AS servers, count(DISTINCT physical_node) AS physical_nodes
FROM colojoin.shards WHERE table_name IN ('a'::regclass, 'b'::regclass);
SELECT bool_and(physical_node LIKE '%/colojoin_regress') AS all_known FROM colojoin.shards
WHERE table_name IN ('a'::regclass, 'b'::regclass);

CREATE TABLE cj_sn_l.a (k bigint, v int);
CREATE TABLE cj_sn_l.b (k bigint, w int);
INSERT INTO cj_sn_l.a SELECT CASE WHEN g % 31 = 0 THEN NULL ELSE g % 400 END, g FROM generate_series(1, 1200) g;
INSERT INTO cj_sn_l.b SELECT (g * 7) % 450, g FROM generate_series(1, 1200) g;
INSERT INTO a SELECT * FROM cj_sn_l.a;
INSERT INTO b SELECT * FROM cj_sn_l.b;

-- joins across the aliases run colocated, no row moved
CREATE FUNCTION cj_sn_plan(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		IF line ~ '(Custom Scan|Strategy|Rows Moved)' THEN
			RETURN NEXT btrim(line);
		END IF;
	END LOOP;
END
$$;
SELECT * FROM cj_sn_plan('SELECT * FROM a JOIN b USING (k)');
-- colocation() says so, naming the servers that share a database
SELECT colocated, aspect, regexp_replace(detail, ' \(.*\)$', '') AS detail
FROM colojoin.colocation('a', 'b') ORDER BY aspect, detail;
SELECT q, rows_of(q, 'cj_sn_s') = rows_of(q, 'cj_sn_l') AS same,
	   cardinality(rows_of(q, 'cj_sn_l')) AS nrows
FROM (VALUES ('SELECT * FROM a JOIN b USING (k)'),
			 ('SELECT * FROM a FULL JOIN b USING (k)'),
			 ('SELECT k, count(*), sum(w) FROM a JOIN b USING (k) GROUP BY k'),
			 ('SELECT * FROM a WHERE NOT EXISTS (SELECT FROM b WHERE b.k = a.k)'),
			 ('SELECT * FROM a JOIN b ON a.v = b.w')) qs(q);

-- one transaction creating the shards of two tables over the aliases
BEGIN;
CREATE TABLE c (k bigint, x int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('c', NULL, colocate_with => 'a');
CREATE TABLE e (k bigint, y int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('e', NULL, colocate_with => 'b');
COMMIT;
INSERT INTO c SELECT k, v FROM cj_sn_l.a WHERE v % 3 = 0;
SELECT * FROM cj_sn_plan('SELECT count(*) FROM a JOIN c USING (k) JOIN b USING (k)');
SELECT (SELECT count(*) FROM a JOIN c USING (k) JOIN b USING (k)) =
	   (SELECT count(*) FROM cj_sn_l.a JOIN (SELECT k, v AS x FROM cj_sn_l.a WHERE v % 3 = 0) c USING (k)
			JOIN cj_sn_l.b USING (k)) AS same;

-- a replica on a server of the same database would be the primary itself
\set VERBOSITY default
SELECT colojoin.add_replica('a_p0', 'cj_sn_a1');
\set VERBOSITY terse

--
-- Another role cannot share the connection: the second connection's
-- CREATE SCHEMA waits for the first one's, uncommitted, in the same
-- database.  colojoin notices that its own connection holds the lock, and
-- the wait ends in an error naming both servers.
--
SELECT dblink_exec('cj_sn_d1', 'DROP ROLE IF EXISTS cj_sn_other; CREATE ROLE cj_sn_other LOGIN SUPERUSER');
CREATE SERVER cj_sn_o1 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node1_port', dbname 'colojoin_regress');
CREATE USER MAPPING FOR CURRENT_USER SERVER cj_sn_o1 OPTIONS (user 'cj_sn_other');
SELECT dblink_exec('cj_sn_d1', 'DROP SCHEMA IF EXISTS cj_sn_t CASCADE');
CREATE SCHEMA cj_sn_t;
CREATE TABLE cj_sn_t.d (k bigint, v int) PARTITION BY HASH (k);
\set VERBOSITY default
SELECT colojoin.create_shards('cj_sn_t.d', ARRAY['cj_sn_n1', 'cj_sn_o1'], 2);
\set VERBOSITY terse
-- and nothing of it stayed, here or there
SELECT count(*) AS partitions FROM pg_inherits WHERE inhparent = 'cj_sn_t.d'::regclass;
SELECT * FROM dblink('cj_sn_d1', $$SELECT count(*) FROM pg_namespace WHERE nspname = 'cj_sn_t'$$) AS t(n bigint);

-- clean up
RESET statement_timeout;
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA cj_sn_s CASCADE;
DROP SCHEMA cj_sn_t CASCADE;
DROP SCHEMA cj_sn_l CASCADE;
DROP SERVER cj_sn_a1, cj_sn_a2, cj_sn_a3, cj_sn_b1, cj_sn_b2, cj_sn_b3, cj_sn_o1 CASCADE;
SELECT dblink_exec('cj_sn_d' || n, 'DROP SCHEMA IF EXISTS cj_sn_s CASCADE') FROM generate_series(1, 3) n;
SELECT dblink_exec('cj_sn_d1', 'DROP ROLE cj_sn_other');
SELECT dblink_disconnect('cj_sn_d' || n) FROM generate_series(1, 3) n;
\i sql/include/three_nodes_end.sql
