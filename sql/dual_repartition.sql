--
-- dual_repartition: a join of two sharded tables on columns neither is
-- partitioned by moves both sides, each row once, into one hash class
-- per node (the hash of its join column, computed where the row lives),
-- and every class joins on its node.  It is chosen when nothing else runs
-- the join on the nodes, or when broadcasting the smaller side would move
-- more rows; Redistribute(a b) asks for it.  Every join type is correct:
-- each row of each side lands in exactly one class, a NULL key of a side
-- the join keeps in class 0.  Every query is compared with the same query
-- on plain local tables holding the same rows.
--
\set prefix cj_dual
\i sql/include/three_nodes_begin.sql
-- the plans asserted here follow the ANALYZEd sizes, not sizes read from
-- the nodes (suite remote_sizes covers those)
SET colojoin.remote_size_lifetime = 0;

CREATE SCHEMA cj_dual_s;
CREATE SCHEMA cj_dual_l;
SET search_path = cj_dual_s, public;

-- orders: keyed by o_orderkey, 6 shards on the three nodes
CREATE TABLE orders (o_orderkey bigint, o_custkey int, o_status text, o_total numeric)
	PARTITION BY HASH (o_orderkey);
SELECT colojoin.create_shards('orders', ARRAY[:'srv1', :'srv2', :'srv3'], 6);
-- lines: keyed by l_id, 4 shards on two of the nodes; l_custkey is int8
CREATE TABLE lines (l_id int, l_custkey bigint, l_qty int)
	PARTITION BY HASH (l_id);
SELECT colojoin.create_shards('lines', ARRAY[:'srv2', :'srv3'], 4);
-- quoted, mixed-case names, keyed by a text column, on nodes 1 and 3
CREATE TABLE "Mixed Case" ("Key Col" int, "vAl" text)
	PARTITION BY HASH ("vAl");
SELECT colojoin.create_shards('"Mixed Case"', ARRAY[:'srv1', :'srv3'], 3);
-- empty6: no rows at all; tiny: five rows (broadcast is cheaper)
CREATE TABLE empty6 (k int, c int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('empty6', ARRAY[:'srv1', :'srv2', :'srv3'], 6);
CREATE TABLE tiny (t_id int, t_cust int) PARTITION BY HASH (t_id);
SELECT colojoin.create_shards('tiny', ARRAY[:'srv1', :'srv2'], 2);
-- sparse: 8 shards, rows in two of them only (the others are empty)
CREATE TABLE sparse (s_id int, s_cust int) PARTITION BY HASH (s_id);
SELECT colojoin.create_shards('sparse', ARRAY[:'srv1', :'srv2', :'srv3'], 8);

CREATE TABLE cj_dual_l.orders (LIKE orders);
CREATE TABLE cj_dual_l.lines (LIKE lines);
CREATE TABLE cj_dual_l."Mixed Case" (LIKE "Mixed Case");
CREATE TABLE cj_dual_l.empty6 (LIKE empty6);
CREATE TABLE cj_dual_l.tiny (LIKE tiny);
CREATE TABLE cj_dual_l.sparse (LIKE sparse);

-- NULL join keys on every side, duplicate keys, keys without a partner
INSERT INTO cj_dual_l.orders
SELECT g, CASE WHEN g % 23 = 0 THEN NULL ELSE g % 97 END,
	   (ARRAY['F', 'O', 'P'])[g % 3 + 1], (g * 1.25) % 140
FROM generate_series(1, 600) g;
INSERT INTO cj_dual_l.lines
SELECT g, CASE WHEN g % 31 = 0 THEN NULL ELSE (g * 7) % 120 - 10 END, g % 40
FROM generate_series(1, 900) g;
INSERT INTO cj_dual_l."Mixed Case"
SELECT CASE WHEN g % 11 = 0 THEN NULL ELSE g % 130 END, 'v' || g
FROM generate_series(1, 250) g;
INSERT INTO cj_dual_l.tiny VALUES (1, 5), (2, 7), (3, NULL), (4, 5), (5, 200);
INSERT INTO cj_dual_l.sparse
SELECT s, CASE WHEN g % 9 = 0 THEN NULL ELSE g % 50 END
FROM generate_series(1, 200) g, LATERAL (SELECT 1 + g % 2 AS s) x;

INSERT INTO orders SELECT * FROM cj_dual_l.orders;
INSERT INTO lines SELECT * FROM cj_dual_l.lines;
INSERT INTO "Mixed Case" SELECT * FROM cj_dual_l."Mixed Case";
INSERT INTO tiny SELECT * FROM cj_dual_l.tiny;
INSERT INTO sparse SELECT * FROM cj_dual_l.sparse;
ANALYZE orders, lines, "Mixed Case", empty6, tiny, sparse;
ANALYZE cj_dual_l.orders, cj_dual_l.lines, cj_dual_l."Mixed Case", cj_dual_l.empty6,
	cj_dual_l.tiny, cj_dual_l.sparse;
-- the sparse table's rows sit in two of its eight partitions
SELECT (SELECT count(DISTINCT tableoid) FROM sparse) AS nonempty,
	   (SELECT count(*) FROM pg_inherits WHERE inhparent = 'sparse'::regclass) AS partitions;

-- check(query): the same rows (as a multiset) from the sharded tables and
-- the local twins, how many, and the plan's Strategy line
CREATE FUNCTION cj_dual_l.check(query text, OUT same boolean, OUT nrows int,
								OUT strategy text)
LANGUAGE plpgsql AS $$
DECLARE
	line text;
	s text[];
BEGIN
	strategy := 'not run by colojoin';
	PERFORM set_config('search_path', 'cj_dual_s, public', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		IF line ~ 'Strategy:' THEN
			strategy := regexp_replace(line, '^\s*Strategy: ', '');
		END IF;
	END LOOP;
	s := rows_of(query, 'cj_dual_s');
	-- a forcing hint is a plain comment over the local tables
	same := s = rows_of(replace(query, '/*+', '/* '), 'cj_dual_l');
	nrows := cardinality(s);
	PERFORM set_config('search_path', 'public', true);
END
$$;

-- explain(query): EXPLAIN (COSTS OFF), the temporary tables' numbers (a
-- counter of the session) masked
CREATE FUNCTION cj_dual_l.explain(query text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		RETURN NEXT regexp_replace(line, 'colojoin_move_(d?)[0-9]+_', 'colojoin_move_\1N_', 'g');
	END LOOP;
END
$$;

--
-- The self-join of orders on o_custkey: broadcasting a side moves 600 rows
-- to each of 3 nodes (1800), dual repartition moves both sides once (1200).
--
SELECT cj_dual_l.explain('SELECT count(*) FROM orders a JOIN orders b ON a.o_custkey = b.o_custkey');
SELECT cj_dual_l.explain('SELECT a.o_orderkey, b.o_orderkey FROM orders a FULL JOIN orders b ON a.o_custkey = b.o_custkey');

\pset format unaligned
\pset fieldsep ' | '
SELECT q, (cj_dual_l.check(q)).* FROM (VALUES
	-- every join type
	('SELECT a.o_orderkey, b.o_orderkey FROM orders a JOIN orders b ON a.o_custkey = b.o_custkey'),
	('SELECT a.o_orderkey, b.o_orderkey, b.o_status FROM orders a LEFT JOIN orders b ON a.o_custkey = b.o_custkey AND b.o_status = ''F'''),
	('SELECT a.o_orderkey, b.o_orderkey FROM orders b RIGHT JOIN orders a ON a.o_custkey = b.o_custkey AND a.o_total > b.o_total'),
	('SELECT a.o_orderkey, b.o_orderkey FROM orders a FULL JOIN orders b ON a.o_custkey = b.o_custkey AND b.o_status = ''F'''),
	('SELECT a.o_orderkey FROM orders a WHERE EXISTS (SELECT FROM orders b WHERE b.o_custkey = a.o_custkey AND b.o_orderkey > a.o_orderkey)'),
	('SELECT a.o_orderkey FROM orders a WHERE a.o_custkey IN (SELECT b.o_custkey FROM orders b WHERE b.o_status = ''P'')'),
	('SELECT a.o_orderkey FROM orders a WHERE NOT EXISTS (SELECT FROM orders b WHERE b.o_custkey = a.o_custkey AND b.o_orderkey <> a.o_orderkey)'),
	('SELECT a.o_orderkey, b.o_orderkey FROM orders a LEFT JOIN orders b ON a.o_custkey = b.o_custkey WHERE b.o_orderkey IS NULL'),
	-- aggregates on top, filters on both sides, several equalities
	('SELECT count(*), count(b.o_orderkey), sum(a.o_total) FROM orders a JOIN orders b ON a.o_custkey = b.o_custkey'),
	('SELECT a.o_status, count(*), max(b.o_total) FROM orders a JOIN orders b ON a.o_custkey = b.o_custkey GROUP BY a.o_status'),
	('SELECT a.o_custkey, count(*) FROM orders a FULL JOIN orders b ON a.o_custkey = b.o_custkey GROUP BY a.o_custkey'),
	('SELECT a.o_orderkey, b.o_orderkey FROM orders a JOIN orders b ON a.o_custkey = b.o_custkey WHERE a.o_total > 100 AND b.o_status <> ''O'''),
	('SELECT a.o_orderkey, b.o_orderkey FROM orders a JOIN orders b ON a.o_custkey = b.o_custkey AND a.o_status = b.o_status'),
	('SELECT a.o_status, count(*) FROM orders a JOIN orders b ON a.o_status = b.o_status GROUP BY 1'),
	('SELECT a.o_orderkey, b.o_orderkey FROM orders a JOIN orders b ON a.o_custkey + 1 = b.o_custkey'),
	('SELECT a.o_orderkey, b.o_orderkey FROM orders a FULL JOIN orders b ON a.o_custkey = b.o_custkey WHERE a.o_orderkey < 0 OR b.o_orderkey < 0'),
	-- filtered to nothing on one side
	('SELECT a.o_orderkey, b.o_orderkey FROM orders a FULL JOIN (SELECT * FROM orders WHERE o_total < 0) b ON a.o_custkey = b.o_custkey'),
	-- int4 = int8, numeric = int4, tables of other shard counts and nodes
	('SELECT l.l_id, b.l_id FROM lines l JOIN lines b ON l.l_custkey = b.l_custkey WHERE l.l_qty < 3'),
	('SELECT o_orderkey, l_id FROM orders FULL JOIN lines ON o_custkey = l_custkey'),
	('SELECT o_orderkey, l_id FROM lines RIGHT JOIN orders ON o_custkey = l_custkey'),
	('SELECT o_orderkey, l_id FROM orders JOIN lines ON o_total = l_qty'),
	('SELECT o_orderkey FROM orders WHERE NOT EXISTS (SELECT FROM lines WHERE l_custkey = o_custkey)'),
	-- quoted, mixed-case identifiers
	('SELECT o_orderkey, m."vAl" FROM orders FULL JOIN "Mixed Case" m ON o_custkey = m."Key Col"'),
	('SELECT m."vAl", count(o_orderkey) FROM "Mixed Case" m LEFT JOIN orders ON o_custkey = m."Key Col" GROUP BY 1'),
	-- empty partitions, an empty table
	('SELECT s_id, o_orderkey FROM sparse FULL JOIN orders ON s_cust = o_custkey'),
	('SELECT a.s_id, b.s_cust FROM sparse a LEFT JOIN sparse b ON a.s_cust = b.s_id'),
	('SELECT o_orderkey, e.k FROM orders FULL JOIN empty6 e ON o_custkey = e.c'),
	('SELECT o_orderkey FROM orders WHERE NOT EXISTS (SELECT FROM empty6 e WHERE e.c = o_custkey)'),
	-- a small side is broadcast instead (5 rows to 3 nodes)
	('SELECT o_orderkey, t_id FROM orders JOIN tiny ON o_custkey = t_cust'),
	('SELECT o_orderkey, t_id FROM orders LEFT JOIN tiny ON o_custkey = t_cust'),
	-- pruned to the partitions of three orders: only those move, in a full join too
	('SELECT a.o_orderkey, b.o_orderkey FROM (SELECT * FROM orders WHERE o_orderkey IN (1, 2, 3)) a FULL JOIN orders b ON a.o_custkey = b.o_custkey'),
	('SELECT a.o_orderkey, b.o_orderkey FROM (SELECT * FROM orders WHERE o_orderkey = 4) a FULL JOIN (SELECT * FROM orders WHERE o_orderkey IN (4, 101, 198)) b ON a.o_custkey = b.o_custkey'),
	-- pruned to a few orders: broadcasting them is cheaper
	('SELECT a.o_orderkey, b.o_orderkey FROM orders a JOIN orders b ON a.o_custkey = b.o_custkey WHERE a.o_orderkey IN (1, 2, 3)'),
	-- lines (900 rows) with orders (600): orders to lines'' 2 nodes moves 1200, both once 1500
	('SELECT o_orderkey, l_id FROM orders JOIN lines ON o_custkey = l_custkey'),
	-- joined on their keys: colocated, nothing moves
	('SELECT a.o_orderkey, b.o_custkey FROM orders a JOIN orders b ON a.o_orderkey = b.o_orderkey'),
	-- rescanned with a parameter in the join condition: the moved rows are read again
	('SELECT g, (SELECT count(*) FROM orders a JOIN orders b ON a.o_custkey = b.o_custkey AND a.o_total > b.o_total + g) FROM generate_series(0, 300, 100) g'),
	-- a third table joins above the moved pair, on the coordinator
	('SELECT a.o_orderkey, b.o_orderkey, t_id FROM orders a JOIN orders b ON a.o_custkey = b.o_custkey JOIN tiny ON t_cust = b.o_orderkey')
) qs(q);

-- the moved pair with a subquery over a reference table in its tasks: the
-- tasks are those of the pair's hash classes (there were none: found by
-- the fuzzer, a wrong empty answer)
CREATE TABLE ref (r_cust int, r_flag int) PARTITION BY HASH (r_cust);
SELECT colojoin.create_reference_table('ref', ARRAY[:'srv1', :'srv2', :'srv3']);
CREATE TABLE cj_dual_l.ref (LIKE ref);
INSERT INTO cj_dual_l.ref SELECT g % 40, g % 3 FROM generate_series(1, 60) g;
INSERT INTO ref SELECT * FROM cj_dual_l.ref;
CREATE TABLE reference_empty (r_cust int) PARTITION BY HASH (r_cust);
SELECT colojoin.create_reference_table('reference_empty', ARRAY[:'srv1', :'srv2', :'srv3']);
CREATE TABLE cj_dual_l.reference_empty (LIKE reference_empty);
SELECT q, (cj_dual_l.check(q)).* FROM (VALUES
	('SELECT a.o_orderkey, b.o_orderkey FROM orders a LEFT JOIN orders b ON a.o_custkey = b.o_custkey WHERE NOT EXISTS (SELECT FROM (SELECT r_cust, count(*) FROM ref GROUP BY r_cust) e WHERE e.r_cust = b.o_custkey AND a.o_orderkey < 300)'),
	('SELECT a.o_orderkey, b.o_orderkey FROM orders a JOIN orders b ON a.o_custkey = b.o_custkey WHERE EXISTS (SELECT FROM (SELECT r_cust, max(r_flag) AS f FROM ref GROUP BY r_cust) e WHERE e.r_cust = b.o_custkey AND e.f = 2)'),
	('SELECT a.o_orderkey, b.o_custkey FROM orders a LEFT JOIN orders b ON a.o_custkey = b.o_custkey WHERE NOT EXISTS (SELECT FROM (SELECT r_cust, count(*) FROM reference_empty GROUP BY r_cust) e WHERE e.r_cust = b.o_custkey)')
) qs(q);

--
-- Hints: Redistribute(a b) moves both sides, BroadcastJoin(b) one.
--
SELECT q, (cj_dual_l.check(q)).* FROM (VALUES
	('/*+ Redistribute(orders lines) */ SELECT o_orderkey, l_id FROM orders JOIN lines ON o_custkey = l_custkey'),
	('/*+ Redistribute(lines orders) */ SELECT o_orderkey, l_id FROM orders LEFT JOIN lines ON o_custkey = l_custkey'),
	('/*+ Redistribute(a b) */ SELECT a.o_orderkey, b.o_custkey FROM orders a JOIN orders b ON a.o_orderkey = b.o_orderkey'),
	('/*+ Redistribute(orders tiny) */ SELECT o_orderkey, t_id FROM orders JOIN tiny ON o_custkey = t_cust'),
	('/*+ BroadcastJoin(b) */ SELECT count(*) FROM orders a JOIN orders b ON a.o_custkey = b.o_custkey'),
	-- lines lives on two nodes: two hash classes
	('/*+ Redistribute(l b) */ SELECT l.l_id, b.l_id FROM lines l FULL JOIN lines b ON l.l_custkey = b.l_custkey AND b.l_qty < 10')
) qs(q);
-- with dual repartition off, only the hint moves both sides
SET colojoin.enable_dual_repartition = off;
SELECT q, (cj_dual_l.check(q)).* FROM (VALUES
	('SELECT a.o_orderkey, b.o_orderkey FROM orders a FULL JOIN orders b ON a.o_custkey = b.o_custkey'),
	('/*+ Redistribute(a b) */ SELECT a.o_orderkey, b.o_orderkey FROM orders a FULL JOIN orders b ON a.o_custkey = b.o_custkey')
) qs(q);
RESET colojoin.enable_dual_repartition;
\pset format aligned
\pset fieldsep '|'
SELECT cj_dual_l.explain('/*+ Redistribute(orders lines) */ SELECT o_orderkey, l_id FROM orders JOIN lines ON o_custkey = l_custkey');
SELECT cj_dual_l.explain('SELECT o_orderkey, l_id FROM orders JOIN lines ON o_custkey = l_custkey');
-- a hint that cannot be honoured is an error
/*+ Redistribute(a b) */ SELECT count(*) FROM orders a JOIN orders b ON a.o_custkey < b.o_custkey;

--
-- PostgreSQL plans the join itself: redistribution off, a parameter in a
-- moved side's conditions.
--
SET colojoin.enable_redistribution = off;
SELECT (cj_dual_l.check('SELECT a.o_orderkey, b.o_orderkey FROM orders a FULL JOIN orders b ON a.o_custkey = b.o_custkey')).*;
RESET colojoin.enable_redistribution;
PREPARE dualq(int) AS
	SELECT a.o_status, count(*) FROM orders a JOIN orders b ON a.o_custkey = b.o_custkey
	WHERE b.o_total > $1 GROUP BY 1;
SET plan_cache_mode = force_generic_plan;
CREATE FUNCTION cj_dual_l.run_prepared() RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
	rec record;
	result text[] := '{}';
BEGIN
	FOR rec IN EXECUTE 'EXECUTE dualq(50)' LOOP
		result := result || rec::text;
	END LOOP;
	RETURN ARRAY(SELECT r FROM unnest(result) r ORDER BY r COLLATE "C");
END
$$;
SELECT cj_dual_l.run_prepared() =
	rows_of('SELECT a.o_status, count(*) FROM orders a JOIN orders b ON a.o_custkey = b.o_custkey WHERE b.o_total > 50 GROUP BY 1', 'cj_dual_l')
	AS generic_same;
RESET plan_cache_mode;
DEALLOCATE dualq;

-- the decision log says what moved and why
SET colojoin.log_decisions = on;
SELECT count(*) FROM orders a JOIN orders b ON a.o_custkey = b.o_custkey;
RESET colojoin.log_decisions;

-- the temporary tables of the moves are gone from the nodes
SELECT n, r.c AS move_tables
FROM (VALUES (1, :'node1_port'), (2, :'node2_port'), (3, :'node3_port')) nodes(n, port),
	LATERAL dblink(format('host=127.0.0.1 port=%s dbname=colojoin_regress', port),
		$q$SELECT count(*) FROM pg_class WHERE relname LIKE 'colojoin\_move%'$q$) AS r(c bigint)
ORDER BY n;

-- clean up
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA cj_dual_s CASCADE;
DROP SCHEMA cj_dual_l CASCADE;
-- create_shards made the schema on the nodes too
SELECT n, dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', port),
		'DROP SCHEMA IF EXISTS cj_dual_s CASCADE')
FROM (VALUES (1, :'node1_port'), (2, :'node2_port'), (3, :'node3_port')) nodes(n, port)
ORDER BY n;
\i sql/include/three_nodes_end.sql
