--
-- coordinator_rows: a join of a colocated group with rows the coordinator
-- computes (a WITH query PostgreSQL materializes, a subquery the tasks
-- cannot run, VALUES, a set-returning function) runs on the nodes: the
-- scan runs PostgreSQL's own plan of those rows here, as a child plan,
-- and broadcasts them to the group's nodes before its tasks start.  Every
-- query is compared with the same one on plain tables; the Strategy line
-- says what moved.
--
\set prefix cj_cr
\i sql/include/three_nodes_begin.sql

CREATE SCHEMA cj_cr_s;
CREATE SCHEMA cj_cr_l;
SET search_path = cj_cr_s, public;

-- orders and their lines, colocated on the order key (hash 6 over three
-- nodes); suppliers sharded by their own key; the same rows in plain twins
CREATE TABLE ord (k int, cust int, placed date) PARTITION BY HASH (k);
SELECT colojoin.create_shards('ord', ARRAY[:'srv1', :'srv2', :'srv3'], 6);
CREATE TABLE line (k int, n int, supp int, qty int, price numeric(10,2), note text) PARTITION BY HASH (k);
SELECT colojoin.create_shards('line', NULL, colocate_with => 'ord');
CREATE TABLE supp (id int, name text) PARTITION BY HASH (id);
SELECT colojoin.create_shards('supp', ARRAY[:'srv1', :'srv2', :'srv3'], 3);
CREATE TABLE cj_cr_l.ord (k int, cust int, placed date);
CREATE TABLE cj_cr_l.line (k int, n int, supp int, qty int, price numeric(10,2), note text);
CREATE TABLE cj_cr_l.supp (id int, name text);
INSERT INTO cj_cr_l.ord
SELECT g, CASE WHEN g % 29 = 0 THEN NULL ELSE g % 40 END, date '2024-01-01' + g % 300
FROM generate_series(1, 600) g;
INSERT INTO cj_cr_l.line
SELECT g % 640, g % 5, CASE WHEN g % 31 = 0 THEN NULL ELSE g % 45 END, g % 23,
	   (g % 97) * 1.25,
	   CASE g % 6 WHEN 0 THEN NULL WHEN 1 THEN E'tab\there' WHEN 2 THEN E'line\nbreak'
				  WHEN 3 THEN E'back\\slash' ELSE 'note ' || g END
FROM generate_series(1, 2400) g;
INSERT INTO cj_cr_l.supp
SELECT g, CASE WHEN g % 9 = 0 THEN NULL ELSE 'supplier ' || g END FROM generate_series(0, 50) g;
INSERT INTO ord SELECT * FROM cj_cr_l.ord;
INSERT INTO line SELECT * FROM cj_cr_l.line;
INSERT INTO supp SELECT * FROM cj_cr_l.supp;

-- check(query): same rows in both schemas, how many, and the Strategy
-- line of the plan's scan that reads the query's first sharded table
CREATE FUNCTION cj_cr_l.check(query text, OUT same boolean, OUT nrows int, OUT strategy text)
LANGUAGE plpgsql AS $$
DECLARE
	line text;
	s text[];
BEGIN
	strategy := 'not run by colojoin';
	PERFORM set_config('search_path', 'cj_cr_s, public', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		IF line ~ 'Strategy:' AND (strategy = 'not run by colojoin' OR line ~ 'computed on the coordinator') THEN
			strategy := regexp_replace(line, '^\s*Strategy: ', '');
		END IF;
	END LOOP;
	s := rows_of(query, 'cj_cr_s');
	same := s = rows_of(query, 'cj_cr_l');
	nrows := cardinality(s);
	PERFORM set_config('search_path', 'public', true);
END
$$;

SELECT q, (cj_cr_l.check(q)).* FROM (VALUES
	-- a WITH query read twice (PostgreSQL materializes it): its
	-- aggregate runs on the nodes, its rows join the suppliers there
	('WITH rev AS (SELECT supp AS s, sum(price * qty) AS total FROM line GROUP BY supp)
	  SELECT supp.id, supp.name, rev.total FROM supp JOIN rev ON rev.s = supp.id
	  WHERE rev.total >= 0.9 * (SELECT max(total) FROM rev WHERE s IS NOT NULL)'),
	-- a subquery grouped by a column no table is partitioned by, joined
	-- back to the lines: each line against its supplier''s average
	('WITH avg_qty AS (SELECT supp AS s, avg(qty) AS a FROM line GROUP BY supp)
	  SELECT line.k, line.n, line.qty FROM line JOIN avg_qty ON avg_qty.s = line.supp
	  WHERE line.qty < 0.2 * avg_qty.a'),
	('SELECT ord.k, line.n, x.a FROM ord JOIN line ON line.k = ord.k
	  JOIN (SELECT supp, avg(qty) AS a FROM line GROUP BY supp) x ON x.supp = line.supp
	  WHERE ord.placed < date ''2024-02-01'' AND line.qty > x.a'),
	-- VALUES, with NULLs and values COPY must escape
	('SELECT ord.k, ord.cust, v.label FROM ord JOIN (VALUES (3, E''tab\there''), (7, NULL), (8, E''back\\slash''), (NULL, ''none''), (600, E''line\nbreak'')) v(k, label) ON ord.k = v.k'),
	-- a set-returning function
	('SELECT g, count(*) FROM line JOIN generate_series(10, 40, 3) g ON line.k = g GROUP BY g'),
	-- the side a left join does not keep
	('SELECT ord.k, v.label FROM ord LEFT JOIN (VALUES (3, ''three''), (4, ''four''), (4, ''four again'')) v(k, label) ON ord.k = v.k WHERE ord.k < 12'),
	-- the side it keeps is not moved; the answer is the same
	('SELECT v.k, ord.cust FROM (VALUES (3), (4), (1000), (NULL)) v(k) LEFT JOIN ord ON ord.k = v.k'),
	-- semi and anti joins
	('SELECT ord.k FROM ord WHERE ord.k IN (SELECT g * 7 FROM generate_series(1, 20) g)'),
	('SELECT count(*) FROM ord WHERE NOT EXISTS (SELECT FROM generate_series(1, 300) g WHERE g = ord.k)'),
	-- an empty WITH query, and one of NULLs only
	('WITH e AS MATERIALIZED (SELECT supp FROM line WHERE qty > 1000)
	  SELECT count(*) FROM line JOIN e ON e.supp = line.supp'),
	('WITH e AS MATERIALIZED (SELECT NULL::int AS k FROM generate_series(1, 3))
	  SELECT count(*) FROM ord JOIN e ON e.k = ord.k'),
	-- a WITH query over a colocated join, joined to a third sharded table
	('WITH big AS MATERIALIZED (SELECT line.supp, count(*) AS lines FROM ord JOIN line ON line.k = ord.k
	                             WHERE ord.cust < 10 GROUP BY line.supp)
	  SELECT supp.name, big.lines FROM supp JOIN big ON big.supp = supp.id')
) t(q);

-- above colojoin.broadcast_threshold the rows are not broadcast: the same
-- answer from PostgreSQL's join
SET colojoin.broadcast_threshold = 3;
SELECT (cj_cr_l.check('SELECT g, count(*) FROM line JOIN generate_series(10, 40, 3) g ON line.k = g GROUP BY g')).*;
RESET colojoin.broadcast_threshold;
SET colojoin.enable_coordinator_rows = off;
SELECT (cj_cr_l.check('SELECT g, count(*) FROM line JOIN generate_series(10, 40, 3) g ON line.k = g GROUP BY g')).*;
RESET colojoin.enable_coordinator_rows;

-- the plan: the child plan under the scan, what moved
EXPLAIN (COSTS OFF)
WITH rev AS (SELECT supp AS s, sum(price * qty) AS total FROM line GROUP BY supp)
SELECT supp.id, supp.name, rev.total FROM supp JOIN rev ON rev.s = supp.id
WHERE rev.total >= 0.9 * (SELECT max(total) FROM rev WHERE s IS NOT NULL);

-- the rows computed again for every run of a subquery that reads the
-- query's values: the same answer as the plain tables for each
SELECT x, (SELECT count(*) FROM ord JOIN (VALUES (x), (x + 1), (x * 2)) v(k) ON ord.k = v.k) AS n
FROM generate_series(1, 6) x ORDER BY x;
SET search_path = cj_cr_l, public;
SELECT x, (SELECT count(*) FROM ord JOIN (VALUES (x), (x + 1), (x * 2)) v(k) ON ord.k = v.k) AS n
FROM generate_series(1, 6) x ORDER BY x;
SET search_path = cj_cr_s, public;
EXPLAIN (COSTS OFF)
SELECT x, (SELECT count(*) FROM ord JOIN (VALUES (x), (x + 1), (x * 2)) v(k) ON ord.k = v.k) AS n
FROM generate_series(1, 6) x ORDER BY x;

-- a generic plan: the parameter is read on the coordinator, by the child
PREPARE crq(int) AS
	WITH c AS MATERIALIZED (SELECT g FROM generate_series(1, $1) g)
	SELECT count(*) FROM ord JOIN c ON ord.k = c.g;
SET plan_cache_mode = force_generic_plan;
EXECUTE crq(10);
EXECUTE crq(250);
RESET plan_cache_mode;
DEALLOCATE crq;

-- row security stays the coordinator's: a security-barrier view hides
-- rows from a function that is not leakproof, which fails if it sees one
CREATE TABLE cj_cr_l.secret (k int, hidden boolean);
INSERT INTO cj_cr_l.secret SELECT g, g % 4 = 0 FROM generate_series(1, 60) g;
CREATE VIEW cj_cr_l.visible WITH (security_barrier) AS
	SELECT k, hidden FROM cj_cr_l.secret WHERE NOT hidden;
CREATE FUNCTION cj_cr_l.peek(h boolean) RETURNS boolean LANGUAGE plpgsql COST 0.0001 AS $$
BEGIN
	IF h THEN
		RAISE EXCEPTION 'a hidden row was seen';
	END IF;
	RETURN true;
END
$$;
SELECT (cj_cr_l.check('SELECT ord.k, ord.cust FROM ord JOIN cj_cr_l.visible v ON v.k = ord.k WHERE cj_cr_l.peek(v.hidden)')).*;

-- a statement that writes in a WITH query: no rows computed ahead of the
-- moves (reading the WITH query would write before them); PostgreSQL's
-- join, the same answer
CREATE TEMP TABLE cj_cr_written (k int);
EXPLAIN (COSTS OFF)
WITH w AS (INSERT INTO cj_cr_written VALUES (1) RETURNING k)
SELECT (SELECT count(*) FROM w) AS written, count(*) FROM ord JOIN (VALUES (3), (4)) v(k) ON ord.k = v.k;
WITH w AS (INSERT INTO cj_cr_written VALUES (1) RETURNING k)
SELECT (SELECT count(*) FROM w) AS written, count(*) FROM ord JOIN (VALUES (3), (4)) v(k) ON ord.k = v.k;
-- a recursive WITH query's own reference joined to a sharded table
SELECT (cj_cr_l.check('WITH RECURSIVE r(k, depth) AS (SELECT 1, 0 UNION ALL
	SELECT ord.k * 2, r.depth + 1 FROM r JOIN ord ON ord.k = r.k WHERE r.depth < 8)
	SELECT * FROM r')).*;

-- decisions: why rows were not broadcast
SET colojoin.log_decisions = on;
SET client_min_messages = log;
SET colojoin.broadcast_threshold = 3;
SELECT count(*) FROM line JOIN generate_series(10, 40, 3) g ON line.k = g;
RESET colojoin.broadcast_threshold;
RESET client_min_messages;
RESET colojoin.log_decisions;

-- clean up
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA cj_cr_s CASCADE;
DROP SCHEMA cj_cr_l CASCADE;
\i sql/include/three_nodes_end.sql
