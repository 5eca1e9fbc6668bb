--
-- stages: multi-stage plans.  The output of a colocated group (orders
-- JOIN lineitem, read where they are) moves as a whole into the classes of
-- the next join: each node runs its part of the group, and every joined
-- row (only the columns the query reads above it, after the group's own
-- conditions) is routed by the hash of the column the next join equates
-- with a key there (o_custkey to customer's classes).  With broadcasts off,
-- nothing else runs customer JOIN orders JOIN lineitem on the nodes.  Every
-- query is compared with the same one over plain local tables holding the
-- same rows (NULL keys, empty partitions, pruned classes, quoted mixed-case
-- names, the same column name in two tables).
--
\set prefix cj_st
\i sql/include/three_nodes_begin.sql
SET colojoin.remote_size_lifetime = 0;

CREATE SCHEMA cj_st_s;
CREATE SCHEMA cj_st_l;
SET search_path = cj_st_s, public;

-- orders and lineitem colocated (hash 6); customer hash 4 and "Cust Omer"
-- hash 5 (quoted, mixed case) placed otherwise; nation a reference table
CREATE TABLE orders (o_orderkey int, o_custkey int, o_status text, note text) PARTITION BY HASH (o_orderkey);
SELECT colojoin.create_shards('orders', ARRAY[:'srv1', :'srv2', :'srv3'], 6);
CREATE TABLE lineitem (l_orderkey int, l_qty int, l_price numeric(10,2), note text) PARTITION BY HASH (l_orderkey);
SELECT colojoin.create_shards('lineitem', NULL, colocate_with => 'orders');
CREATE TABLE customer (c_custkey int, c_segment text, c_nation int) PARTITION BY HASH (c_custkey);
SELECT colojoin.create_shards('customer', ARRAY[:'srv2', :'srv3', :'srv1'], 4);
CREATE TABLE "Cust Omer" ("Cust Key" bigint, "Seg" text) PARTITION BY HASH ("Cust Key");
SELECT colojoin.create_shards('"Cust Omer"', ARRAY[:'srv3', :'srv1', :'srv2'], 5);
CREATE TABLE nation (n_nationkey int, n_name text) PARTITION BY HASH (n_nationkey);
SELECT colojoin.create_reference_table('nation', ARRAY[:'srv1', :'srv2', :'srv3']);

CREATE TABLE cj_st_l.orders (o_orderkey int, o_custkey int, o_status text, note text);
CREATE TABLE cj_st_l.lineitem (l_orderkey int, l_qty int, l_price numeric(10,2), note text);
CREATE TABLE cj_st_l.customer (c_custkey int, c_segment text, c_nation int);
CREATE TABLE cj_st_l."Cust Omer" ("Cust Key" bigint, "Seg" text);
CREATE TABLE cj_st_l.nation (n_nationkey int, n_name text);
-- o_custkey: NULL now and then, and keys 50000.. that no customer has
INSERT INTO cj_st_l.orders
SELECT g, CASE WHEN g % 17 = 0 THEN NULL WHEN g % 41 = 0 THEN 50000 + g ELSE g % 90 END,
	   (ARRAY['F', 'O', 'P'])[g % 3 + 1], 'order ' || g
FROM generate_series(1, 1200) g;
INSERT INTO cj_st_l.lineitem
SELECT CASE WHEN g % 101 = 0 THEN NULL ELSE g / 4 END, g % 13, (g % 997) / 10.0, 'line ' || g
FROM generate_series(1, 4800) g;
-- customer is large (so that PostgreSQL's join would fetch all of it),
-- and has no customer 60..89 that orders name
INSERT INTO cj_st_l.customer SELECT g, (ARRAY['AUTO', 'BUILD', 'MACH'])[g % 3 + 1], g % 4
FROM generate_series(0, 40000) g WHERE g NOT BETWEEN 60 AND 89;
INSERT INTO cj_st_l."Cust Omer" SELECT g, 'S' || (g % 2) FROM generate_series(1, 4) g;
INSERT INTO cj_st_l.nation VALUES (0, 'FRANCE'), (1, 'PERU'), (2, 'JAPAN'), (3, 'KENYA');
INSERT INTO orders SELECT * FROM cj_st_l.orders;
INSERT INTO lineitem SELECT * FROM cj_st_l.lineitem;
INSERT INTO customer SELECT * FROM cj_st_l.customer;
INSERT INTO "Cust Omer" SELECT * FROM cj_st_l."Cust Omer";
INSERT INTO nation SELECT * FROM cj_st_l.nation;
ANALYZE orders, lineitem, customer, "Cust Omer", nation;
ANALYZE cj_st_l.orders, cj_st_l.lineitem, cj_st_l.customer, cj_st_l."Cust Omer", cj_st_l.nation;

-- "Cust Omer" has empty partitions
SELECT count(*) FILTER (WHERE n = 0) > 0 AS cust_omer_has_empty_partitions
FROM (SELECT (SELECT count(*) FROM "Cust Omer_p0") AS n UNION ALL SELECT (SELECT count(*) FROM "Cust Omer_p1")
	  UNION ALL SELECT (SELECT count(*) FROM "Cust Omer_p2") UNION ALL SELECT (SELECT count(*) FROM "Cust Omer_p3")
	  UNION ALL SELECT (SELECT count(*) FROM "Cust Omer_p4")) s;

-- check(query) in these schemas (sql/include/plan_check.sql)
\i sql/include/plan_check.sql
CREATE FUNCTION cj_st_l.check(query text, OUT same boolean, OUT nrows int, OUT plan text)
LANGUAGE sql AS $$ SELECT * FROM public.plan_check(query, 'cj_st_s', 'cj_st_l') $$;

-- nothing may be broadcast: customer JOIN (orders JOIN lineitem) runs on
-- the nodes only as a stage, cheaper than fetching customer
SET colojoin.enable_broadcast = off;
SELECT label, (cj_st_l.check(q)).* FROM (VALUES
	('grouped by customer columns',
	 'SELECT c_segment, count(*), sum(l_qty), sum(l_price) FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey GROUP BY 1'),
	('customer written last, rows',
	 'SELECT c_custkey, o_orderkey, l_qty FROM orders JOIN lineitem ON l_orderkey = o_orderkey JOIN customer ON c_custkey = o_custkey WHERE l_qty = 3'),
	('conditions on the stage''s tables and on customer',
	 'SELECT c_custkey, c_segment, o_status, l_price FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey WHERE o_status <> ''P'' AND l_price > 50 AND c_segment <> ''AUTO'''),
	('a condition across the two sides',
	 'SELECT c_custkey, o_orderkey, l_qty FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey WHERE l_qty > c_nation * 3'),
	('the same column name in two of the stage''s tables',
	 'SELECT c_custkey, orders.note, lineitem.note FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey WHERE l_qty = 7'),
	('pruned classes of customer',
	 'SELECT c_custkey, count(*) FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey WHERE c_custkey IN (3, 14, 59) GROUP BY 1'),
	('NULL and unmatched keys never meet',
	 'SELECT count(*), count(o_custkey) FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey'),
	('quoted names, bigint key equated with an int column',
	 'SELECT "Seg", count(*), sum(l_qty) FROM "Cust Omer" JOIN orders ON "Cust Key" = o_custkey JOIN lineitem ON l_orderkey = o_orderkey GROUP BY 1'),
	('a reference table joined to the stage''s target',
	 'SELECT n_name, count(*) FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey JOIN nation ON n_nationkey = c_nation GROUP BY 1'),
	('grouped by the key of the classes the stage moved to',
	 'SELECT c_custkey, sum(l_qty), count(DISTINCT o_orderkey) FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey GROUP BY 1'),
	('ordered and limited',
	 'SELECT c_custkey, o_orderkey, l_price FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey ORDER BY l_price DESC, o_orderkey, c_custkey LIMIT 7'),
	-- the side a left, semi or anti join does not keep moves too
	('customer LEFT JOIN the group',
	 'SELECT c_custkey, count(l_qty) FROM customer LEFT JOIN (orders JOIN lineitem ON l_orderkey = o_orderkey) ON c_custkey = o_custkey GROUP BY 1'),
	('customer LEFT JOIN the group, a condition above the join',
	 'SELECT c_custkey, o_orderkey, l_qty FROM customer LEFT JOIN (orders JOIN lineitem ON l_orderkey = o_orderkey) ON c_custkey = o_custkey AND l_qty > 3 WHERE (l_qty IS NULL OR l_qty > 11) AND c_custkey < 100'),
	('EXISTS over the group',
	 'SELECT c_segment, count(*) FROM customer WHERE EXISTS (SELECT FROM orders JOIN lineitem ON l_orderkey = o_orderkey WHERE o_custkey = c_custkey AND l_qty > 10) GROUP BY 1'),
	('NOT EXISTS over the group',
	 'SELECT c_segment, count(*) FROM customer WHERE NOT EXISTS (SELECT FROM orders JOIN lineitem ON l_orderkey = o_orderkey WHERE o_custkey = c_custkey AND l_price > 20) GROUP BY 1'),
	-- declined: the group is the side the outer join keeps
	('the group LEFT JOIN customer',
	 'SELECT o_orderkey, l_qty, c_segment FROM (orders JOIN lineitem ON l_orderkey = o_orderkey) LEFT JOIN customer ON c_custkey = o_custkey WHERE l_qty = 5')
) v(label, q);

-- what EXPLAIN shows of a stage
SELECT plan_explain($$
SELECT c_segment, count(*), sum(l_qty)
FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey
GROUP BY 1$$);

-- a stage's rows carry only the columns read above it (here o_custkey and
-- l_qty)
SELECT line FROM plan_explain($$
SELECT c_custkey, l_qty FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey
WHERE o_status = 'F' AND l_qty > 10$$) AS line WHERE line ~ 'Strategy|Moves|Remote SQL';

-- with redistribution off too, the stage is not tried
SET colojoin.enable_redistribution = off;
SELECT (cj_st_l.check('SELECT c_segment, count(*) FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey GROUP BY 1')).*;
RESET colojoin.enable_redistribution;
-- nor with colojoin.enable_stages off
SET colojoin.enable_stages = off;
SELECT (cj_st_l.check('SELECT c_segment, count(*) FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey GROUP BY 1')).*;
RESET colojoin.enable_stages;
RESET colojoin.enable_broadcast;

-- Stages of groups that move rows themselves.  shipment (hash 4 on its
-- item, placed otherwise) and item (colocated with it) share no key with
-- orders: orders JOIN shipment runs in orders' classes with shipment
-- repartitioned by sh_orderkey, and that group's rows move on, by
-- o_custkey, to customer's classes (shipment's move is made first, one
-- level down).  item JOIN shipment moves as a stage into orders' classes,
-- and that group again into customer's: three levels.
CREATE TABLE shipment (sh_orderkey int, sh_item int, sh_qty int) PARTITION BY HASH (sh_item);
SELECT colojoin.create_shards('shipment', ARRAY[:'srv3', :'srv2', :'srv1'], 4);
CREATE TABLE item (i_item int, i_kind text) PARTITION BY HASH (i_item);
SELECT colojoin.create_shards('item', NULL, colocate_with => 'shipment');
CREATE TABLE cj_st_l.shipment (sh_orderkey int, sh_item int, sh_qty int);
CREATE TABLE cj_st_l.item (i_item int, i_kind text);
-- sh_orderkey: NULL now and then, and orders 1201.. that do not exist
INSERT INTO cj_st_l.shipment
SELECT CASE WHEN g % 23 = 0 THEN NULL ELSE g % 1300 END, g % 700, g % 9 FROM generate_series(1, 6000) g;
INSERT INTO cj_st_l.item SELECT g, (ARRAY['bolt', 'nut', 'gear', 'cog'])[g % 4 + 1] FROM generate_series(0, 650) g;
INSERT INTO shipment SELECT * FROM cj_st_l.shipment;
INSERT INTO item SELECT * FROM cj_st_l.item;
ANALYZE shipment, item, cj_st_l.shipment, cj_st_l.item;

SET colojoin.enable_broadcast = off;
-- what the costs choose first, then with PostgreSQL's own joins off (on the
-- coordinator: each level's plan on the nodes is then the only cheap one)
SELECT label, (cj_st_l.check(q)).* FROM (VALUES
	('a moved table in the stage, rows, conditions on every table',
	 'SELECT c_custkey, o_orderkey, sh_item, sh_qty FROM customer JOIN orders ON c_custkey = o_custkey JOIN shipment ON sh_orderkey = o_orderkey WHERE sh_qty > 6 AND o_status <> ''O'' AND c_segment <> ''BUILD'''),
	('three levels: item and shipment, then orders, then customer',
	 'SELECT i_kind, c_segment, count(*), sum(sh_qty) FROM item JOIN shipment ON sh_item = i_item JOIN orders ON o_orderkey = sh_orderkey JOIN customer ON c_custkey = o_custkey GROUP BY 1, 2')
) v(label, q);
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
SELECT label, (cj_st_l.check(q)).* FROM (VALUES
	('a moved table in the stage, grouped by customer columns',
	 'SELECT c_segment, count(*), sum(sh_qty) FROM customer JOIN orders ON c_custkey = o_custkey JOIN shipment ON sh_orderkey = o_orderkey GROUP BY 1'),
	('a moved table in the stage, rows, conditions on every table',
	 'SELECT c_custkey, o_orderkey, sh_item, sh_qty FROM customer JOIN orders ON c_custkey = o_custkey JOIN shipment ON sh_orderkey = o_orderkey WHERE sh_qty > 6 AND o_status <> ''O'' AND c_segment <> ''BUILD'''),
	('a moved table and lineitem in the stage',
	 'SELECT c_nation, count(*), sum(l_qty * sh_qty) FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey JOIN shipment ON sh_orderkey = o_orderkey WHERE l_qty < 4 GROUP BY 1'),
	('three levels: item and shipment, then orders, then customer',
	 'SELECT i_kind, c_segment, count(*), sum(sh_qty) FROM item JOIN shipment ON sh_item = i_item JOIN orders ON o_orderkey = sh_orderkey JOIN customer ON c_custkey = o_custkey GROUP BY 1, 2'),
	('two stages that move rows themselves, into one group',
	 'SELECT c_segment, count(*), sum(s1.sh_qty), sum(s2.sh_qty) FROM customer JOIN orders o1 ON o1.o_custkey = c_custkey JOIN shipment s1 ON s1.sh_orderkey = o1.o_orderkey JOIN orders o2 ON o2.o_custkey = c_custkey JOIN shipment s2 ON s2.sh_orderkey = o2.o_orderkey WHERE o1.o_status = ''F'' AND o2.o_status = ''F'' AND s1.sh_qty = 1 AND s2.sh_qty = 2 GROUP BY 1'),
	('three levels, ordered and limited',
	 'SELECT c_custkey, o_orderkey, i_item, sh_qty FROM item JOIN shipment ON sh_item = i_item JOIN orders ON o_orderkey = sh_orderkey JOIN customer ON c_custkey = o_custkey WHERE i_kind = ''gear'' ORDER BY sh_qty DESC, o_orderkey, i_item, c_custkey LIMIT 9')
) v(label, q);

-- a stage's rows grouped on their nodes before they move (the query
-- aggregates over the whole join, partials of the stage's columns only),
-- and an aggregate that reads the other side too, whose rows move ungrouped
SELECT label, (cj_st_l.check(q)).* FROM (VALUES
	('count, sum, min, max by a customer column',
	 'SELECT c_segment, count(*), sum(l_qty), min(l_price), max(l_price) FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey GROUP BY 1'),
	('avg and bool_or by customer, HAVING',
	 'SELECT c_custkey, avg(l_price), bool_or(l_qty > 11) FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey GROUP BY 1 HAVING count(*) > 20'),
	('no GROUP BY, nothing matches',
	 'SELECT count(*), sum(l_qty), max(o_status) FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey WHERE l_price < 0'),
	('an aggregate of both sides',
	 'SELECT c_segment, sum(l_qty * c_nation), count(*) FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey GROUP BY 1'),
	('a moved table in the stage, grouped first',
	 'SELECT c_nation, sum(sh_qty), count(*) FROM customer JOIN orders ON c_custkey = o_custkey JOIN shipment ON sh_orderkey = o_orderkey GROUP BY 1')
) v(label, q);

-- the moves of every level, deepest listed last
SELECT line FROM plan_explain($$
SELECT i_kind, c_segment, count(*) FROM item JOIN shipment ON sh_item = i_item JOIN orders ON o_orderkey = sh_orderkey
JOIN customer ON c_custkey = o_custkey GROUP BY 1, 2$$) AS line WHERE line ~ 'Strategy|Moves';

-- a grouped stage: its rows carry the key and the partial aggregates
SELECT line FROM plan_explain($$
SELECT c_segment, count(*), sum(l_qty) FROM customer JOIN orders ON c_custkey = o_custkey
JOIN lineitem ON l_orderkey = o_orderkey GROUP BY 1$$) AS line WHERE line ~ 'Strategy|Moves|Remote SQL';

-- one connection a node for the tasks: each level still has its own
SET colojoin.max_connections_per_node = 1;
SELECT (cj_st_l.check('SELECT i_kind, c_segment, count(*), sum(sh_qty) FROM item JOIN shipment ON sh_item = i_item JOIN orders ON o_orderkey = sh_orderkey JOIN customer ON c_custkey = o_custkey GROUP BY 1, 2')).*;
RESET colojoin.max_connections_per_node;

-- run twice in one transaction; and a correlated subquery (its parameter
-- keeps its join from moving as a stage: PostgreSQL joins the scans)
BEGIN;
SELECT (cj_st_l.check('SELECT c_segment, count(*), sum(sh_qty) FROM customer JOIN orders ON c_custkey = o_custkey JOIN shipment ON sh_orderkey = o_orderkey GROUP BY 1')).same;
SELECT (cj_st_l.check('SELECT c_segment, count(*), sum(sh_qty) FROM customer JOIN orders ON c_custkey = o_custkey JOIN shipment ON sh_orderkey = o_orderkey GROUP BY 1')).same;
COMMIT;
SELECT (cj_st_l.check('SELECT n_name, (SELECT count(*) FROM customer JOIN orders ON c_custkey = o_custkey JOIN shipment ON sh_orderkey = o_orderkey WHERE c_nation = n_nationkey AND sh_qty > n_nationkey) FROM nation')).*;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_nestloop;
RESET colojoin.enable_broadcast;

\i sql/include/no_moves_left.sql

-- clean up
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA cj_st_s CASCADE;
DROP SCHEMA cj_st_l CASCADE;
DROP FUNCTION public.plan_check(text, text, text), public.plan_explain(text);
\i sql/include/three_nodes_end.sql
