--
-- rescans: a ColocatedJoin scan that moves rows and is rescanned (the
-- inner side of a Nested Loop) moves them once and reads them again on
-- every rescan; rescanned with the same parameters after a complete run,
-- it replays that run's rows without asking the nodes again (the tasks run
-- once, "Node ...: tasks=" counts them); a scan stopped early (LIMIT, a
-- rescan) leaves every remote transaction and snapshot usable by what
-- comes next in the transaction.
--
\set prefix cj_rs
\i sql/include/three_nodes_begin.sql

CREATE SCHEMA cj_rs;
CREATE SCHEMA cj_rs_s;
CREATE SCHEMA cj_rs_l;
SELECT dblink_connect('cj_rs_n' || n,
		format('host=127.0.0.1 port=%s dbname=colojoin_regress', p))
FROM (VALUES (1, :'node1_port'), (2, :'node2_port'), (3, :'node3_port')) v(n, p);
SELECT dblink_exec('cj_rs_n' || n,
		'DROP SCHEMA IF EXISTS cj_rs_r CASCADE; CREATE SCHEMA cj_rs_r')
FROM generate_series(1, 3) n;

-- h: hash on k, 6 ways over the three nodes; g: list on region, one node
-- per region, joined to h on h.k = g.ref: g moves to h's nodes
CREATE TABLE cj_rs_s.h (k int, v int) PARTITION BY HASH (k);
CREATE TABLE cj_rs_s.g (region text, ref int, w int) PARTITION BY LIST (region);
DO $$
BEGIN
	FOR r IN 0 .. 5 LOOP
		PERFORM dblink_exec('cj_rs_n' || r % 3 + 1,
							format('CREATE TABLE cj_rs_r.h%s (k int, v int)', r));
		EXECUTE format('CREATE FOREIGN TABLE cj_rs_s.h%s PARTITION OF cj_rs_s.h '
					   'FOR VALUES WITH (MODULUS 6, REMAINDER %s) SERVER cj_rs_n%s '
					   'OPTIONS (schema_name %L)', r, r, r % 3 + 1, 'cj_rs_r');
	END LOOP;
	FOR r IN 1 .. 3 LOOP
		PERFORM dblink_exec('cj_rs_n' || r,
							format('CREATE TABLE cj_rs_r.g%s (region text, ref int, w int)', r));
		EXECUTE format('CREATE FOREIGN TABLE cj_rs_s.g%s PARTITION OF cj_rs_s.g '
					   'FOR VALUES IN (%L) SERVER cj_rs_n%s OPTIONS (schema_name %L)',
					   r, 'r' || r, r, 'cj_rs_r');
	END LOOP;
END
$$;
CREATE TABLE cj_rs_l.h (k int, v int);
CREATE TABLE cj_rs_l.g (region text, ref int, w int);
INSERT INTO cj_rs_l.h SELECT g % 500, g FROM generate_series(1, 2000) g;
INSERT INTO cj_rs_l.g SELECT 'r' || (1 + g % 3), (g * 7) % 600, g FROM generate_series(1, 900) g;
INSERT INTO cj_rs_s.h SELECT * FROM cj_rs_l.h;
INSERT INTO cj_rs_s.g SELECT * FROM cj_rs_l.g;
-- the outer side of the nested loops: n numbers the planner believes are
-- one row, so that it puts the ColocatedJoin scan on the inner side
CREATE FUNCTION cj_rs.nums(n int) RETURNS SETOF int ROWS 1
LANGUAGE sql AS 'SELECT generate_series(1, n)';

-- lines of EXPLAIN ANALYZE of the ColocatedJoin scan that say how often it
-- ran and how often its rows moved
CREATE FUNCTION cj_rs.scan_runs(query text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	PERFORM set_config('search_path', 'cj_rs_s, public', true);
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || query LOOP
		IF line ~ 'Custom Scan \(ColocatedJoin\)' THEN
			RETURN NEXT regexp_replace(line, '.*(Custom Scan \(ColocatedJoin\)).*(loops=\d+).*', '\1 \2');
		ELSIF line ~ '^\s*(Moves|Moves Run):' THEN
			RETURN NEXT btrim(line);
		ELSIF line ~ '^\s*Node \S+: tasks=' THEN
			RETURN NEXT regexp_replace(line, '^\s*(Node \S+: tasks=\d+).*', '\1');
		END IF;
	END LOOP;
END
$$;

-- the nested loop with the scan rescanned on its inner side, nothing to
-- materialise it
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
\set nl 'SELECT o.x, h.v, g.w FROM cj_rs.nums(25) o(x) JOIN (h JOIN g ON h.k = g.ref) ON g.w % 40 = o.x - 1'
SELECT * FROM cj_rs.scan_runs(:'nl');
SELECT rows_of(:'nl', 'cj_rs_s') = rows_of(:'nl', 'cj_rs_l') AS same,
	   cardinality(rows_of(:'nl', 'cj_rs_l')) AS nrows;

-- the same in a transaction, twice (the second run starts its own moves),
-- and with a LEFT JOIN and an anti join inside
BEGIN;
SELECT rows_of(:'nl', 'cj_rs_s') = rows_of(:'nl', 'cj_rs_l') AS same;
SELECT rows_of(:'nl', 'cj_rs_s') = rows_of(:'nl', 'cj_rs_l') AS same;
COMMIT;
\set nl_anti 'SELECT o.x, count(*) FROM cj_rs.nums(30) o(x) JOIN (SELECT h.* FROM h LEFT JOIN g ON h.k = g.ref WHERE g.ref IS NULL) s ON s.v % 40 = o.x GROUP BY o.x'
SELECT * FROM cj_rs.scan_runs(:'nl_anti');
SELECT rows_of(:'nl_anti', 'cj_rs_s') = rows_of(:'nl_anti', 'cj_rs_l') AS same;

--
-- Thousands of rescans keep one temporary table per node, not one per
-- rescan: the node's lock table does not grow with them.
--
\set many 'SELECT count(*) FROM cj_rs.nums(2500) m(x) JOIN (SELECT g.w FROM h JOIN g ON h.k = g.ref WHERE h.v < 5) s ON s.w = m.x'
SELECT * FROM cj_rs.scan_runs(:'many');
BEGIN;
SET LOCAL search_path = cj_rs_s, public;
:many;
-- locks the coordinator's sessions hold on node 1 inside this transaction
SELECT n < 100 AS few_locks
FROM dblink('cj_rs_n1', $$SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
						  WHERE a.pid <> pg_backend_pid() AND a.datname = current_database()
							AND a.state LIKE 'idle in transaction%'$$) AS t(n bigint);
COMMIT;
SET search_path = cj_rs_s, public;
SELECT count(*) FROM cj_rs_l.h JOIN cj_rs_l.g ON h.k = g.ref
	JOIN generate_series(1, 2500) m(x) ON g.w = m.x WHERE h.v < 5;

--
-- A scan that moved rows and stopped early (LIMIT) leaves the remote
-- transactions usable: every later statement of the transaction runs, on
-- the snapshot the first one saw (several connections per node import it).
--
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;
SET colojoin.max_connections_per_node = 4;
SELECT 1 AS one FROM h JOIN g ON h.k = g.ref LIMIT 1;
BEGIN;
SELECT 1 AS one FROM h JOIN g ON h.k = g.ref LIMIT 1;
SELECT 1 AS one FROM g JOIN h ON h.k = g.ref LIMIT 1;
SELECT count(*) FROM h JOIN g ON h.k = g.ref;
SELECT count(*) FROM h h1 JOIN h h2 USING (k);
-- a row committed on a node meanwhile stays invisible to this transaction
SELECT dblink_exec('cj_rs_n1', 'INSERT INTO cj_rs_r.h0 VALUES (-1, -1)');
SELECT count(*) FROM h h1 JOIN h h2 USING (k);
SELECT count(*) FROM h JOIN g ON h.k = g.ref;
COMMIT;
-- the same counts from the local twins
SELECT count(*) FROM cj_rs_l.h JOIN cj_rs_l.g ON h.k = g.ref;
SELECT count(*) FROM cj_rs_l.h h1 JOIN cj_rs_l.h h2 USING (k);
SELECT dblink_exec('cj_rs_n1', 'DELETE FROM cj_rs_r.h0 WHERE k = -1');
RESET colojoin.max_connections_per_node;
RESET search_path;

-- clean up
SET client_min_messages = warning;
DROP SCHEMA cj_rs_s CASCADE;
DROP SCHEMA cj_rs_l CASCADE;
DROP SCHEMA cj_rs CASCADE;
SELECT dblink_exec('cj_rs_n' || n, 'DROP SCHEMA cj_rs_r CASCADE') FROM generate_series(1, 3) n;
SELECT dblink_disconnect('cj_rs_n' || n) FROM generate_series(1, 3) n;
\i sql/include/three_nodes_end.sql
