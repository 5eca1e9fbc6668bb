--
-- join_edge_cases: colocated joins where a query, a cursor or a
-- transaction makes them run differently from one plain SELECT: NULL keys
-- in outer joins, empty tables, every partition pruned, joins inside CTEs,
-- subqueries, set operations, LATERAL and correlated subqueries (rescans
-- with new parameters), two colocated scans in one query, cursors (SCROLL,
-- WITH HOLD, two open at once), INSERT ... SELECT, writes to shards earlier
-- in the transaction (never a stale result), snapshots, remote errors,
-- ORDER BY / LIMIT above the scan, plans invalidated by partition changes,
-- text keys and collations.
--
-- Every result is compared with the same query over plain local tables
-- (schema cj_edge_local) holding the same rows.
--
\set prefix cj_edge
\i sql/include/three_nodes_begin.sql

CREATE SCHEMA cj_edge;
CREATE SCHEMA cj_edge_local;
SET search_path = cj_edge, public;

-- t1, t2, t3, tempty: colocated, 6 classes, class r on cj_edge_n(r % 3 + 1)
-- (remainders for keys: 0: 2 16 18 27, 1: 3 7 10 21, 2: 1 12 17 23 28 30,
--  3: 4 6 8 15 19 20 29, 4: 13 14 25 26, 5: 5 9 11 22 24)
CREATE TABLE t1 (k bigint, v int, s text) PARTITION BY HASH (k);
SELECT colojoin.create_shards('t1', '{cj_edge_n1,cj_edge_n2,cj_edge_n3}', 6);
CREATE TABLE t2 (k bigint, w int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('t2', '{cj_edge_n1,cj_edge_n2,cj_edge_n3}', colocate_with => 't1');
CREATE TABLE t3 (k int, x text) PARTITION BY HASH (k);
SELECT colojoin.create_shards('t3', '{cj_edge_n1,cj_edge_n2,cj_edge_n3}', colocate_with => 't1');
CREATE TABLE tempty (k bigint, e int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('tempty', '{cj_edge_n1,cj_edge_n2,cj_edge_n3}', colocate_with => 't1');
-- text keys: tc and td in collation "C", colocated; tdef in the default one
CREATE TABLE tc (k text COLLATE "C", v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('tc', '{cj_edge_n1,cj_edge_n2,cj_edge_n3}', 4);
CREATE TABLE td (k text COLLATE "C", w int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('td', '{cj_edge_n1,cj_edge_n2,cj_edge_n3}', colocate_with => 'tc');
CREATE TABLE tdef (k text, w int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('tdef', '{cj_edge_n1,cj_edge_n2,cj_edge_n3}', 4);
CREATE TABLE loc (k bigint, name text);

DO $$
DECLARE
	t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['t1', 't2', 't3', 'tempty', 'tc', 'td', 'tdef', 'loc'] LOOP
		EXECUTE format('CREATE TABLE cj_edge_local.%I (LIKE cj_edge.%I INCLUDING ALL)', t, t);
	END LOOP;
END
$$;
-- NULL keys, duplicate keys, keys without partners on either side
INSERT INTO cj_edge_local.t1
SELECT CASE WHEN g % 13 = 0 THEN NULL ELSE g % 35 END, g, 's' || g FROM generate_series(1, 60) g;
INSERT INTO cj_edge_local.t2
SELECT CASE WHEN g % 11 = 0 THEN NULL ELSE (g * 7) % 40 END, g FROM generate_series(1, 80) g;
INSERT INTO cj_edge_local.t3
SELECT CASE WHEN g % 9 = 0 THEN NULL ELSE g % 25 END, 'x' || g FROM generate_series(1, 40) g;
INSERT INTO cj_edge_local.tc
SELECT chr(65 + g % 6) || chr(97 + g % 5), g FROM generate_series(1, 40) g;
INSERT INTO cj_edge_local.td
SELECT CASE WHEN g % 10 = 0 THEN NULL ELSE chr(65 + g % 7) || chr(97 + g % 4) END, g FROM generate_series(1, 40) g;
INSERT INTO cj_edge_local.tdef
SELECT chr(65 + g % 7) || chr(97 + g % 4), g FROM generate_series(1, 30) g;
INSERT INTO cj_edge_local.loc SELECT g, 'name ' || g FROM generate_series(1, 12) g;
DO $$
DECLARE
	t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['t1', 't2', 't3', 'tempty', 'tc', 'td', 'tdef', 'loc'] LOOP
		EXECUTE format('INSERT INTO cj_edge.%I SELECT * FROM cj_edge_local.%I', t, t);
		-- ANALYZE reads through postgres_fdw: the rows must be committed
		COMMIT;
		EXECUTE format('ANALYZE cj_edge.%I', t);
		EXECUTE format('ANALYZE cj_edge_local.%I', t);
	END LOOP;
END
$$;

-- check_query(query): how many colocated scans the plan has (ColocatedJoin
-- scans whose strategy is a colocated join, no data moved first), and
-- whether the rows equal those of the same query over the local tables
CREATE FUNCTION check_query(query text, OUT plan text, OUT result text)
LANGUAGE plpgsql AS $$
DECLARE
	line text;
	n int := 0;
	s text[];
	l text[];
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		IF line ~ '^ *Strategy: ([^,]*, )?colocated on ' THEN
			n := n + 1;
		END IF;
	END LOOP;
	plan := CASE n WHEN 0 THEN 'not colocated' WHEN 1 THEN 'colocated'
			ELSE n || ' colocated scans' END;
	s := rows_of(query, 'cj_edge');
	l := rows_of(query, 'cj_edge_local');
	result := CASE WHEN s = l THEN format('same (%s rows)', cardinality(s))
				   ELSE format('DIFFERENT: %s rows, %s local', cardinality(s), cardinality(l)) END;
END
$$;
-- try(query): the error a query raises (or none)
CREATE FUNCTION try(query text, OUT state text, OUT message text, OUT context text)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE query;
	state := 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
		context = PG_EXCEPTION_CONTEXT;
END
$$;

--
-- NULL keys, empty tables, every partition pruned.
--
SELECT name, (check_query(q)).* FROM (VALUES
	('inner, NULL keys never match', 'SELECT t1.k, t1.v, t2.w FROM t1 JOIN t2 ON t1.k = t2.k'),
	('left keeps NULL keys', 'SELECT t1.k, t1.v, t2.w FROM t1 LEFT JOIN t2 ON t1.k = t2.k'),
	('right keeps NULL keys', 'SELECT t1.v, t2.k, t2.w FROM t1 RIGHT JOIN t2 ON t1.k = t2.k'),
	('full keeps both', 'SELECT t1.k, t1.v, t2.k, t2.w FROM t1 FULL JOIN t2 ON t1.k = t2.k'),
	('full, NULL rows counted', 'SELECT count(*), count(t1.k), count(t2.k), count(*) FILTER (WHERE t1.v IS NULL) FROM t1 FULL JOIN t2 ON t1.k = t2.k'),
	('anti keeps NULL keys', 'SELECT t1.v FROM t1 WHERE NOT EXISTS (SELECT FROM t2 WHERE t2.k = t1.k)'),
	('semi drops NULL keys', 'SELECT t1.v FROM t1 WHERE EXISTS (SELECT FROM t2 WHERE t2.k = t1.k)'),
	('IN subquery', 'SELECT t1.v FROM t1 WHERE t1.k IN (SELECT t2.k FROM t2)'),
	('NOT IN with NULLs: nothing', 'SELECT t1.v FROM t1 WHERE t1.k NOT IN (SELECT t2.k FROM t2)'),
	('IS NULL above a left join', 'SELECT t1.v FROM t1 LEFT JOIN t2 ON t1.k = t2.k WHERE t2.k IS NULL'),
	('IS NOT DISTINCT FROM', 'SELECT t1.v, t2.w FROM t1 JOIN t2 ON t1.k IS NOT DISTINCT FROM t2.k'),
	('three tables, NULLs', 'SELECT t1.v, t2.w, t3.x FROM t1 LEFT JOIN t2 ON t1.k = t2.k FULL JOIN t3 ON t3.k = t1.k'),
	('empty inner', 'SELECT t1.v, tempty.e FROM t1 JOIN tempty ON t1.k = tempty.k'),
	('empty preserved side', 'SELECT t1.v, tempty.e FROM tempty LEFT JOIN t1 ON t1.k = tempty.k'),
	('empty nullable side', 'SELECT t1.v, tempty.e FROM t1 LEFT JOIN tempty ON t1.k = tempty.k'),
	('empty, full', 'SELECT t1.v, tempty.e FROM t1 FULL JOIN tempty ON t1.k = tempty.k'),
	('empty, anti', 'SELECT t1.v FROM t1 WHERE NOT EXISTS (SELECT FROM tempty WHERE tempty.k = t1.k)'),
	('all pruned: contradiction', 'SELECT t1.v, t2.w FROM t1 JOIN t2 ON t1.k = t2.k WHERE t1.k = 1 AND t1.k = 2'),
	('all pruned: empty IN list', 'SELECT t1.v, t2.w FROM t1 JOIN t2 ON t1.k = t2.k WHERE t1.k = ANY (''{}''::bigint[])'),
	('all pruned: NULL key', 'SELECT t1.v, t2.w FROM t1 LEFT JOIN t2 ON t1.k = t2.k WHERE t1.k = NULL'),
	('pruned to one class, left', 'SELECT t1.v, t2.w FROM t1 LEFT JOIN t2 ON t1.k = t2.k WHERE t1.k = 7'),
	('pruned, key in ON of an outer join', 'SELECT t1.v, t2.w FROM t1 LEFT JOIN t2 ON t1.k = t2.k AND t2.k = 7')
) v(name, q);

--
-- Joins inside CTEs, subqueries and set operations.
--
SELECT name, (check_query(q)).* FROM (VALUES
	('CTE', 'WITH j AS (SELECT t1.k, t2.w FROM t1 JOIN t2 ON t1.k = t2.k) SELECT * FROM j WHERE w > 10'),
	('CTE, materialized, used twice', 'WITH j AS MATERIALIZED (SELECT t1.k, t2.w FROM t1 JOIN t2 ON t1.k = t2.k) SELECT a.k, a.w, b.w FROM j a JOIN j b ON a.k = b.k AND a.w < b.w'),
	('subquery in FROM', 'SELECT s.k, s.n FROM (SELECT t1.k, count(*) AS n FROM t1 JOIN t2 ON t1.k = t2.k GROUP BY t1.k) s WHERE s.n > 1'),
	('scalar subquery', 'SELECT (SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k) AS n'),
	('UNION', 'SELECT t1.k FROM t1 JOIN t2 ON t1.k = t2.k UNION SELECT t1.k FROM t1 JOIN t3 ON t1.k = t3.k'),
	('UNION ALL', 'SELECT t1.k FROM t1 JOIN t2 ON t1.k = t2.k UNION ALL SELECT t1.k FROM t1 JOIN t3 ON t1.k = t3.k'),
	('INTERSECT', 'SELECT t1.k FROM t1 JOIN t2 ON t1.k = t2.k INTERSECT SELECT t1.k FROM t1 JOIN t3 ON t1.k = t3.k'),
	('EXCEPT ALL', 'SELECT t1.k FROM t1 JOIN t2 ON t1.k = t2.k EXCEPT ALL SELECT t1.k FROM t1 JOIN t3 ON t1.k = t3.k'),
	('in a view-like subquery with a local table', 'SELECT loc.name, j.w FROM loc LEFT JOIN (SELECT t1.k, t2.w FROM t1 JOIN t2 ON t1.k = t2.k) j ON j.k = loc.k'),
	('DISTINCT and window above', 'SELECT DISTINCT t1.k, rank() OVER (PARTITION BY t1.k ORDER BY t2.w) FROM t1 JOIN t2 ON t1.k = t2.k'),
	('ORDER BY LIMIT with ties', 'SELECT t1.k, t2.w FROM t1 JOIN t2 ON t1.k = t2.k ORDER BY t2.w DESC, t1.k, t1.v LIMIT 5'),
	('LIMIT OFFSET', 'SELECT t1.v, t2.w FROM t1 JOIN t2 ON t1.k = t2.k ORDER BY t1.v, t2.w LIMIT 4 OFFSET 3'),
	('volatile function above', 'SELECT t1.k, t2.w, random() >= 0 FROM t1 JOIN t2 ON t1.k = t2.k'),
	('whole rows: not pushed', 'SELECT t1, t2 FROM t1 JOIN t2 ON t1.k = t2.k'),
	('FOR UPDATE: not pushed', 'SELECT t1.k, t2.w FROM t1 JOIN t2 ON t1.k = t2.k FOR UPDATE')
) v(name, q);

--
-- Rescans with new parameters: LATERAL and correlated subqueries whose
-- inner query is a colocated join.
--
SELECT name, (check_query(q)).* FROM (VALUES
	('LATERAL', 'SELECT loc.k, j.w FROM loc, LATERAL (SELECT t2.w FROM t1 JOIN t2 ON t1.k = t2.k WHERE t1.v = loc.k) j'),
	('LATERAL, key parameter', 'SELECT loc.k, j.w FROM loc, LATERAL (SELECT t2.w FROM t1 JOIN t2 ON t1.k = t2.k WHERE t1.k = loc.k ORDER BY t2.w LIMIT 1) j'),
	('LEFT JOIN LATERAL', 'SELECT loc.k, j.n FROM loc LEFT JOIN LATERAL (SELECT count(*) AS n FROM t1 JOIN t2 ON t1.k = t2.k WHERE t1.k = loc.k) j ON true'),
	('correlated in the target list', 'SELECT loc.k, (SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k WHERE t1.k = loc.k) FROM loc'),
	('correlated in WHERE', 'SELECT loc.k FROM loc WHERE 1 < (SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k WHERE t2.k = loc.k)'),
	('correlated EXISTS', 'SELECT loc.k FROM loc WHERE EXISTS (SELECT FROM t1 JOIN t2 ON t1.k = t2.k WHERE t1.k = loc.k AND t2.w > 20)')
) v(name, q);
-- the inner side of a nested loop, rescanned without parameters (loc
-- is not broadcast into the join, so that the join is what is rescanned)
SET colojoin.enable_broadcast = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
SELECT name, (check_query(q)).* FROM (VALUES
	('rescanned inner side', 'SELECT loc.name, j.w FROM loc JOIN (SELECT t1.v, t2.w FROM t1 JOIN t2 ON t1.k = t2.k) j ON j.v = loc.k')
) v(name, q);
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;
RESET colojoin.enable_broadcast;
-- EXPLAIN ANALYZE of a rescanned scan counts the work of every loop:
-- key 3 runs on cj_edge_n2, key 4 on cj_edge_n1
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT loc.k, j.w
FROM loc, LATERAL (SELECT t2.w FROM t1 JOIN t2 ON t1.k = t2.k WHERE t1.k = loc.k OFFSET 0) j
WHERE loc.k IN (3, 4);
SELECT t1.k, t2.w FROM cj_edge_local.t1 JOIN cj_edge_local.t2 ON t1.k = t2.k
WHERE t1.k IN (3, 4) ORDER BY 1, 2;

--
-- Two colocated scans in one query, both reading at once: each needs its
-- own connections to the nodes.  (Without redistribution: one join's rows
-- would otherwise move into the other's classes, a stage, one scan.)
--
SET colojoin.enable_redistribution = off;
SELECT name, (check_query(q)).* FROM (VALUES
	('join of two colocated joins', 'SELECT x.k, x.w, y.x FROM (SELECT t1.k, t2.w FROM t1 JOIN t2 ON t1.k = t2.k) x JOIN (SELECT t1.k, t3.x FROM t1 JOIN t3 ON t1.k = t3.k) y ON x.w = y.k'),
	('correlated subquery under a colocated join', 'SELECT t1.k, t2.w, (SELECT count(*) FROM t1 a JOIN t3 b ON a.k = b.k WHERE a.k = t2.w) FROM t1 JOIN t2 ON t1.k = t2.k')
) v(name, q);
SET colojoin.max_connections_per_node = 1;
SELECT name, (check_query(q)).* FROM (VALUES
	('correlated subquery, one connection per node', 'SELECT t1.k, t2.w, (SELECT count(*) FROM t1 a JOIN t3 b ON a.k = b.k WHERE a.k = t2.w) FROM t1 JOIN t2 ON t1.k = t2.k')
) v(name, q);
RESET colojoin.max_connections_per_node;
RESET colojoin.enable_redistribution;

--
-- Cursors.
--
BEGIN;
DECLARE c1 SCROLL CURSOR FOR
	SELECT t1.k, t1.v, t2.w FROM t1 JOIN t2 ON t1.k = t2.k ORDER BY t1.v, t2.w;
FETCH 3 FROM c1;
FETCH BACKWARD 2 FROM c1;
FETCH ABSOLUTE 20 FROM c1;
FETCH LAST FROM c1;
FETCH PRIOR FROM c1;
FETCH FIRST FROM c1;
MOVE FORWARD ALL IN c1;
FETCH BACKWARD 1 FROM c1;
CLOSE c1;
-- no ORDER BY: the scan streams; MOVE counts what it read
DECLARE c2 SCROLL CURSOR FOR SELECT t1.k, t2.w FROM t1 JOIN t2 ON t1.k = t2.k;
MOVE FORWARD 5 IN c2;
SELECT :ROW_COUNT AS moved;
MOVE BACKWARD 5 IN c2;
SELECT :ROW_COUNT AS moved;
MOVE FORWARD ALL IN c2;
SELECT :ROW_COUNT AS moved;
MOVE BACKWARD ALL IN c2;
SELECT :ROW_COUNT AS moved;
MOVE FORWARD ALL IN c2;
SELECT :ROW_COUNT AS moved;
CLOSE c2;
-- two cursors read at once, interleaved
DECLARE c3 CURSOR FOR SELECT t1.k, t2.w FROM t1 JOIN t2 ON t1.k = t2.k;
DECLARE c4 CURSOR FOR SELECT t1.k, t3.x FROM t1 JOIN t3 ON t1.k = t3.k;
MOVE 3 IN c3;
SELECT :ROW_COUNT AS moved;
MOVE 3 IN c4;
SELECT :ROW_COUNT AS moved;
MOVE FORWARD ALL IN c3;
SELECT :ROW_COUNT AS moved;
MOVE FORWARD ALL IN c4;
SELECT :ROW_COUNT AS moved;
COMMIT;
SELECT count(*) FROM cj_edge_local.t1 JOIN cj_edge_local.t2 ON t1.k = t2.k;
SELECT count(*) FROM cj_edge_local.t1 JOIN cj_edge_local.t3 ON t1.k = t3.k;
-- a cursor left open part way, then other queries in the transaction
BEGIN;
DECLARE c5 CURSOR FOR SELECT t1.k, t2.w FROM t1 JOIN t2 ON t1.k = t2.k;
MOVE 2 IN c5;
SELECT :ROW_COUNT AS moved;
CLOSE c5;
SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k;
COMMIT;
-- WITH HOLD: materialised at commit, readable after it
BEGIN;
DECLARE c6 CURSOR WITH HOLD FOR
	SELECT t1.k, t2.w FROM t1 JOIN t2 ON t1.k = t2.k WHERE t1.k IN (3, 7, 16) ORDER BY 1, 2;
COMMIT;
FETCH ALL FROM c6;
CLOSE c6;
SELECT t1.k, t2.w FROM cj_edge_local.t1 JOIN cj_edge_local.t2 ON t1.k = t2.k
WHERE t1.k IN (3, 7, 16) ORDER BY 1, 2;

--
-- The result of a colocated join written into local tables.
--
CREATE TEMP TABLE sink (k bigint, v int, w int);
INSERT INTO sink SELECT t1.k, t1.v, t2.w FROM t1 JOIN t2 ON t1.k = t2.k;
CREATE TEMP TABLE sink2 AS SELECT t1.k, t1.v, t2.w FROM t1 LEFT JOIN t2 ON t1.k = t2.k;
SELECT (SELECT count(*) FROM sink) AS sink_rows,
	   (SELECT count(*) FROM (SELECT * FROM sink EXCEPT ALL
			SELECT t1.k, t1.v, t2.w FROM cj_edge_local.t1 JOIN cj_edge_local.t2 ON t1.k = t2.k) d) AS sink_extra,
	   (SELECT count(*) FROM sink2) AS sink2_rows,
	   (SELECT count(*) FROM (SELECT t1.k, t1.v, t2.w FROM cj_edge_local.t1 LEFT JOIN cj_edge_local.t2 ON t1.k = t2.k
			EXCEPT ALL SELECT * FROM sink2) d) AS sink2_missing;
-- a local UPDATE driven by a colocated join
UPDATE cj_edge_local.loc SET name = 'matched' WHERE k IN (SELECT t1.k FROM t1 JOIN t2 ON t1.k = t2.k);
SELECT k, name FROM cj_edge_local.loc ORDER BY k;
UPDATE cj_edge_local.loc SET name = 'name ' || k;

--
-- Writes to shards earlier in the transaction: a later join sees them (it
-- runs on the nodes through the connections that wrote, or fails clearly),
-- never a stale result.
--
BEGIN;
INSERT INTO t2 VALUES (3, 1001), (16, 1002);
INSERT INTO cj_edge_local.t2 VALUES (3, 1001), (16, 1002);
SELECT name, (check_query(q)).* FROM (VALUES
	('after INSERT', 'SELECT t1.k, t2.w FROM t1 JOIN t2 ON t1.k = t2.k'),
	('after INSERT, other tables', 'SELECT t1.k, t3.x FROM t1 JOIN t3 ON t1.k = t3.k')) v(name, q);
UPDATE t1 SET v = v + 1000 WHERE k = 7;
UPDATE cj_edge_local.t1 SET v = v + 1000 WHERE k = 7;
DELETE FROM t2 WHERE k = 10;
DELETE FROM cj_edge_local.t2 WHERE k = 10;
SELECT name, (check_query(q)).* FROM (VALUES
	('after UPDATE and DELETE', 'SELECT t1.k, t1.v, t2.w FROM t1 LEFT JOIN t2 ON t1.k = t2.k')) v(name, q);
ROLLBACK;
-- rolled back: the join is colocated again and sees none of it
SELECT name, (check_query(q)).* FROM (VALUES
	('after ROLLBACK', 'SELECT t1.k, t1.v, t2.w FROM t1 LEFT JOIN t2 ON t1.k = t2.k')) v(name, q);
-- COPY into a shard
BEGIN;
COPY t2 FROM STDIN;
7	2001
27	2002
\.
SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k WHERE t2.w > 2000;
ROLLBACK;
-- a statement planned before the write and run after it
BEGIN;
PREPARE cj_edge_before AS SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k WHERE t2.w > 1000;
EXECUTE cj_edge_before;
INSERT INTO t2 VALUES (7, 3001);
EXECUTE cj_edge_before;
ROLLBACK;
BEGIN;
EXECUTE cj_edge_before;
INSERT INTO t2 VALUES (7, 3001);
SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k WHERE t2.w > 1000;
ROLLBACK;
DEALLOCATE cj_edge_before;
-- a write in a CTE of the same statement: the join does not see it, as
-- in PostgreSQL
WITH ins AS (INSERT INTO t2 VALUES (3, 4001) RETURNING *)
SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k WHERE t2.w > 4000;
SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k WHERE t2.w > 4000;
DELETE FROM t2 WHERE w > 4000;

--
-- Snapshots: within a transaction, rows another session commits on a node
-- in between do not appear (as with postgres_fdw); after it, they do.
--
BEGIN;
SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', :'node2_port'),
				   'INSERT INTO cj_edge.t2_p1 VALUES (7, 5001)');
SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k;
COMMIT;
SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', :'node2_port'),
				   'DELETE FROM cj_edge.t2_p1 WHERE w = 5001');

--
-- A remote error reaches the user as itself, with the node and the
-- partition class it came from; the session stays usable.
--
SELECT state, message,
	   context ~ 'node "cj_edge_n\d"' AND context ~ 'partition class' AS context_names_node_and_class
FROM try('SELECT t1.k FROM t1 JOIN t2 ON t1.k = t2.k WHERE 1 / (t1.v - t1.v) > 0');
SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k;
BEGIN;
SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k;
SELECT state, message,
	   context ~ 'node "cj_edge_n\d"' AND context ~ 'partition class' AS context_names_node_and_class
FROM try('SELECT t1.k FROM t1 JOIN t2 ON t1.k = t2.k WHERE 1 / (t1.v - t1.v) > 0');
SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k;
COMMIT;
\set VERBOSITY terse
BEGIN;
SELECT t1.k FROM t1 JOIN t2 ON t1.k = t2.k WHERE 1 / (t1.v - t1.v) > 0;
SELECT 1;
ROLLBACK;
\set VERBOSITY default
SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k;

--
-- LIMIT without ORDER BY stops early; the connections stay usable, inside a
-- transaction too.
--
SELECT count(*) FROM (SELECT t1.k FROM t1 JOIN t2 ON t1.k = t2.k LIMIT 1) s;
SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k;
BEGIN;
SELECT count(*) FROM (SELECT t1.k FROM t1 JOIN t2 ON t1.k = t2.k LIMIT 2) s;
SELECT count(*) FROM (SELECT t1.k FROM t1 JOIN t2 ON t1.k = t2.k LIMIT 1) s;
SELECT count(*) FROM t1 JOIN t2 ON t1.k = t2.k;
COMMIT;

--
-- A prepared statement is planned again when the partitions change.
--
PREPARE cj_edge_count AS SELECT count(*), sum(t2.w) FROM t1 JOIN t2 ON t1.k = t2.k;
EXECUTE cj_edge_count;
ALTER TABLE t2 DETACH PARTITION t2_p1;
EXECUTE cj_edge_count;
SELECT count(*), sum(t2.w) FROM cj_edge_local.t1 JOIN cj_edge_local.t2 ON t1.k = t2.k
WHERE satisfies_hash_partition('cj_edge.t1'::regclass, 6, 1, t2.k) IS NOT TRUE;
ALTER TABLE t2 ATTACH PARTITION t2_p1 FOR VALUES WITH (MODULUS 6, REMAINDER 1);
EXECUTE cj_edge_count;
DEALLOCATE cj_edge_count;

--
-- Text keys and collations.
--
SELECT name, (check_query(q)).* FROM (VALUES
	('text keys in "C"', 'SELECT tc.k, tc.v, td.w FROM tc JOIN td ON tc.k = td.k'),
	('text keys, full join', 'SELECT tc.k, td.k, tc.v, td.w FROM tc FULL JOIN td ON tc.k = td.k'),
	('text keys, pruned', 'SELECT tc.v, td.w FROM tc JOIN td ON tc.k = td.k WHERE tc.k = ''Bc'''),
	('text keys, range filter in "C"', 'SELECT tc.v, td.w FROM tc JOIN td ON tc.k = td.k WHERE tc.k < ''C'''),
	('text keys, LIKE', 'SELECT tc.v, td.w FROM tc JOIN td ON tc.k = td.k WHERE td.k LIKE ''_a'''),
	('another collation: not colocated', 'SELECT tc.v, tdef.w FROM tc JOIN tdef ON tc.k = tdef.k COLLATE "C"'),
	('another collation, ordered', 'SELECT tc.k, tdef.w FROM tc JOIN tdef ON tc.k = tdef.k COLLATE "C" ORDER BY tdef.k COLLATE "C", tdef.w LIMIT 5'),
	('text keys, grouped', 'SELECT tc.k, count(*) FROM tc JOIN td ON tc.k = td.k GROUP BY tc.k')
) v(name, q);

--
-- Rows stream through the coordinator in bounded memory (issue 3): a join
-- returning 2,000,000 rows from 22,000 stored ones must not raise the
-- backend's peak RSS with the row count.  A run with a tenth of the rows
-- comes first, so connections, caches and buffers are already counted;
-- fetched all at once, the second run's rows raise it by about 70 MB.
--
CREATE TABLE big1 (k bigint, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('big1', '{cj_edge_n1,cj_edge_n2,cj_edge_n3}', 6);
CREATE TABLE big2 (k bigint, w int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('big2', '{cj_edge_n1,cj_edge_n2,cj_edge_n3}', colocate_with => 'big1');
INSERT INTO big1 SELECT g % 20, g FROM generate_series(1, 2000) g;
INSERT INTO big2 SELECT g % 20, g FROM generate_series(1, 20000) g;
-- OFFSET 0 keeps the aggregate on the coordinator: every joined row travels
EXPLAIN (COSTS OFF)
SELECT count(*), sum(v::bigint + w) FROM (SELECT v, w FROM big1 JOIN big2 USING (k) OFFSET 0) s;
SELECT count(*), sum(v::bigint + w) FROM (SELECT v, w FROM big1 JOIN big2 USING (k) WHERE k < 2 OFFSET 0) s;
SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\s*(\d+)')::bigint AS hwm_before \gset
SELECT count(*), sum(v::bigint + w) FROM (SELECT v, w FROM big1 JOIN big2 USING (k) OFFSET 0) s;
SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\s*(\d+)')::bigint AS hwm_after \gset
SELECT CASE WHEN :hwm_after - :hwm_before < 32768 THEN 'bounded'
			ELSE format('peak RSS grew by %s kB', :hwm_after - :hwm_before) END AS coordinator_memory;

--
-- A scan nested in the rows of a single-connection scan, on the same node.
-- The outer scan's remote transaction started without exporting its
-- snapshot; the nested scan, on a second connection, has it exported while
-- the outer scan's next batch is in flight, and must see the same data: rows
-- a node commits in between (through dblink) stay invisible to both.
--
SELECT format('host=127.0.0.1 port=%s dbname=colojoin_regress',
			  (SELECT option_value FROM pg_options_to_table(s.srvoptions) WHERE option_name = 'port')) AS k5_node,
	   format('%I.%I', coalesce((SELECT option_value FROM pg_options_to_table(ft.ftoptions) WHERE option_name = 'schema_name'), 'cj_edge'),
			  coalesce((SELECT option_value FROM pg_options_to_table(ft.ftoptions) WHERE option_name = 'table_name'), c.relname)) AS k5_leaf
FROM pg_class c JOIN pg_foreign_table ft ON ft.ftrelid = c.oid JOIN pg_foreign_server s ON s.oid = ft.ftserver
WHERE c.oid = (SELECT tableoid FROM big2 WHERE k = 5 LIMIT 1) \gset
CREATE FUNCTION add_row_and_count(key bigint, node text, leaf text) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM dblink_exec(node, format('INSERT INTO %s VALUES (%s, -1)', leaf, key));
	RETURN (SELECT count(*) FROM cj_edge.big1 JOIN cj_edge.big2 USING (k) WHERE k = key);
END
$$;
EXPLAIN (COSTS OFF) SELECT v, w FROM big1 JOIN big2 USING (k) WHERE k = 5;
SELECT count(*) AS outer_rows,
	   array_agg(DISTINCT add_row_and_count(5, :'k5_node', :'k5_leaf')) FILTER (WHERE v = 105 AND w % 250 = 5) AS nested_counts
FROM (SELECT v, w FROM big1 JOIN big2 USING (k) WHERE k = 5 OFFSET 0) s;
-- the same in a transaction block, the nested scans later in the rows
BEGIN;
SELECT count(*) AS outer_rows,
	   array_agg(DISTINCT add_row_and_count(5, :'k5_node', :'k5_leaf')) FILTER (WHERE v = 1905 AND w % 250 = 5) AS nested_counts
FROM (SELECT v, w FROM big1 JOIN big2 USING (k) WHERE k = 5 OFFSET 0) s;
SELECT count(*) AS same_snapshot_later FROM big1 JOIN big2 USING (k) WHERE k = 5;
COMMIT;
-- a new transaction sees the rows committed meanwhile (100 joined rows each)
SELECT count(*) AS after FROM big1 JOIN big2 USING (k) WHERE k = 5;

--
-- Clean up, here and on the nodes.
--
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA cj_edge CASCADE;
DROP SCHEMA cj_edge_local CASCADE;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
				   'DROP SCHEMA IF EXISTS cj_edge CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
\i sql/include/three_nodes_end.sql
