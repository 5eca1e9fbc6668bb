--
-- multi_stage: a colocated group (orders and lineitem) joined with tables
-- that must move, one after the other, in one ColocatedJoin scan: a small
-- table broadcast, a table repartitioned by the classes' hash function, a
-- table whose partitions refine the classes, a plain local table shipped
-- from the coordinator, and two or three of them in a row.  A moved table
-- may be joined with the key of any table the group reads in place, not
-- only its first one (an outer, semi or anti join above the group often
-- names lineitem's key); a join of small tables on the inner side of an
-- outer, semi or anti join is broadcast table by table.  A side the join keeps, or either side of a full
-- join, never moves: PostgreSQL joins it with the group's scan.  Every
-- query is compared with the same one over plain local tables holding the
-- same rows (NULL keys, empty partitions, quoted mixed-case names).
--
\set prefix cj_ms
\i sql/include/three_nodes_begin.sql
SET colojoin.remote_size_lifetime = 0;

CREATE SCHEMA cj_ms_s;
CREATE SCHEMA cj_ms_l;
SET search_path = cj_ms_s, public;

-- orders and lineitem colocated, hash 6 over the three nodes; part (hash
-- 4), supplier (hash 2 on two nodes) and "Ship Ments" (hash 4, keyed by
-- the order) placed otherwise; returns hash 12 (refining orders' 6), its
-- partitions on other nodes than their classes'; nation a plain local table
CREATE TABLE orders (o_orderkey int, o_custkey int, o_status text) PARTITION BY HASH (o_orderkey);
SELECT colojoin.create_shards('orders', ARRAY[:'srv1', :'srv2', :'srv3'], 6);
CREATE TABLE lineitem (l_orderkey int, l_partkey int, l_suppkey int, l_qty int) PARTITION BY HASH (l_orderkey);
SELECT colojoin.create_shards('lineitem', NULL, colocate_with => 'orders');
CREATE TABLE part (p_partkey int, p_brand text) PARTITION BY HASH (p_partkey);
SELECT colojoin.create_shards('part', ARRAY[:'srv2', :'srv3', :'srv1'], 4);
CREATE TABLE supplier (s_suppkey int, s_nation text) PARTITION BY HASH (s_suppkey);
SELECT colojoin.create_shards('supplier', ARRAY[:'srv3', :'srv1'], 2);
CREATE TABLE "Ship Ments" ("Order Key" int, "Mode" text) PARTITION BY HASH ("Order Key");
SELECT colojoin.create_shards('"Ship Ments"', ARRAY[:'srv3', :'srv1', :'srv2'], 4);
CREATE TABLE returns (r_orderkey int, r_reason text) PARTITION BY HASH (r_orderkey);
SELECT colojoin.create_shards('returns', ARRAY[:'srv2', :'srv3', :'srv1'], 12);
CREATE TABLE nation (n_name text, n_region text);
CREATE TABLE customer (c_custkey int, c_segment text) PARTITION BY HASH (c_custkey);
SELECT colojoin.create_shards('customer', ARRAY[:'srv1', :'srv2', :'srv3'], 3);

CREATE TABLE cj_ms_l.orders (o_orderkey int, o_custkey int, o_status text);
CREATE TABLE cj_ms_l.lineitem (l_orderkey int, l_partkey int, l_suppkey int, l_qty int);
CREATE TABLE cj_ms_l.part (p_partkey int, p_brand text);
CREATE TABLE cj_ms_l.supplier (s_suppkey int, s_nation text);
CREATE TABLE cj_ms_l."Ship Ments" ("Order Key" int, "Mode" text);
CREATE TABLE cj_ms_l.returns (r_orderkey int, r_reason text);
CREATE TABLE cj_ms_l.nation (n_name text, n_region text);
CREATE TABLE cj_ms_l.customer (c_custkey int, c_segment text);
INSERT INTO cj_ms_l.orders
SELECT g, g % 97, CASE WHEN g % 29 = 0 THEN NULL ELSE (ARRAY['F', 'O', 'P'])[g % 3 + 1] END
FROM generate_series(1, 1500) g;
INSERT INTO cj_ms_l.lineitem
SELECT CASE WHEN g % 101 = 0 THEN NULL ELSE g / 4 END, CASE WHEN g % 23 = 0 THEN NULL ELSE g % 400 END,
	   CASE WHEN g % 31 = 0 THEN NULL ELSE g % 50 END, g % 13
FROM generate_series(1, 6000) g;
INSERT INTO cj_ms_l.part SELECT g, 'Brand#' || (g % 9) FROM generate_series(1, 380) g;
INSERT INTO cj_ms_l.supplier SELECT g, (ARRAY['FRANCE', 'GERMANY', 'PERU', 'JAPAN'])[g % 4 + 1] FROM generate_series(1, 45) g;
INSERT INTO cj_ms_l."Ship Ments"
SELECT CASE WHEN g % 37 = 0 THEN NULL ELSE g * 2 END, (ARRAY['AIR', 'RAIL', 'SHIP', 'G'])[g % 4 + 1]
FROM generate_series(1, 800) g;
INSERT INTO cj_ms_l.returns SELECT g * 67, (ARRAY['damaged', 'late', 'F'])[g % 3 + 1] FROM generate_series(1, 20) g;
INSERT INTO cj_ms_l.customer SELECT g, (ARRAY['AUTO', 'BUILD', 'MACH'])[g % 3 + 1] FROM generate_series(0, 96) g;
INSERT INTO cj_ms_l.nation VALUES ('FRANCE', 'EUROPE'), ('GERMANY', 'EUROPE'), ('PERU', 'AMERICA'), ('JAPAN', 'ASIA');
INSERT INTO orders SELECT * FROM cj_ms_l.orders;
INSERT INTO lineitem SELECT * FROM cj_ms_l.lineitem;
INSERT INTO part SELECT * FROM cj_ms_l.part;
INSERT INTO supplier SELECT * FROM cj_ms_l.supplier;
INSERT INTO "Ship Ments" SELECT * FROM cj_ms_l."Ship Ments";
INSERT INTO returns SELECT * FROM cj_ms_l.returns;
INSERT INTO nation SELECT * FROM cj_ms_l.nation;
INSERT INTO customer SELECT * FROM cj_ms_l.customer;
ANALYZE orders, lineitem, part, supplier, "Ship Ments", returns, nation, customer;
ANALYZE cj_ms_l.orders, cj_ms_l.lineitem, cj_ms_l.part, cj_ms_l.supplier, cj_ms_l."Ship Ments",
	cj_ms_l.returns, cj_ms_l.nation, cj_ms_l.customer;

-- returns has empty partitions
SELECT count(*) FILTER (WHERE n = 0) > 0 AS returns_has_empty_partitions
FROM (SELECT (SELECT count(*) FROM returns_p0) AS n UNION ALL SELECT (SELECT count(*) FROM returns_p1)
	  UNION ALL SELECT (SELECT count(*) FROM returns_p2) UNION ALL SELECT (SELECT count(*) FROM returns_p3)
	  UNION ALL SELECT (SELECT count(*) FROM returns_p4) UNION ALL SELECT (SELECT count(*) FROM returns_p5)) s;

-- check(query) in these schemas (sql/include/plan_check.sql)
\i sql/include/plan_check.sql
CREATE FUNCTION cj_ms_l.check(query text, OUT same boolean, OUT nrows int, OUT plan text)
LANGUAGE sql AS $$ SELECT * FROM public.plan_check(query, 'cj_ms_s', 'cj_ms_l') $$;

-- one, two and three moves into the colocated group
SELECT label, (cj_ms_l.check(q)).* FROM (VALUES
	('part broadcast',
	 'SELECT o_orderkey, l_qty, p_brand FROM orders JOIN lineitem ON o_orderkey = l_orderkey JOIN part ON l_partkey = p_partkey'),
	('part and supplier broadcast, grouped',
	 'SELECT p_brand, s_nation, sum(l_qty), count(*) FROM orders JOIN lineitem ON o_orderkey = l_orderkey JOIN part ON l_partkey = p_partkey JOIN supplier ON l_suppkey = s_suppkey GROUP BY 1, 2'),
	('repartitioned, then broadcast',
	 'SELECT o_status, "Mode", s_nation, count(*) FROM orders JOIN lineitem ON o_orderkey = l_orderkey JOIN "Ship Ments" ON "Order Key" = o_orderkey JOIN supplier ON l_suppkey = s_suppkey GROUP BY 1, 2, 3'),
	('star: two moved tables and a local one',
	 'SELECT n_region, p_brand, sum(l_qty) FROM orders JOIN lineitem ON o_orderkey = l_orderkey JOIN part ON l_partkey = p_partkey JOIN supplier ON l_suppkey = s_suppkey JOIN nation ON n_name = s_nation GROUP BY 1, 2'),
	('refining partitions, then broadcast',
	 'SELECT o_orderkey, r_reason, p_brand FROM orders JOIN lineitem ON o_orderkey = l_orderkey JOIN returns ON r_orderkey = o_orderkey JOIN part ON p_partkey = l_partkey'),
	('moved tables joined with each other',
	 'SELECT o_orderkey, p_brand, s_nation FROM orders JOIN lineitem ON o_orderkey = l_orderkey JOIN part ON l_partkey = p_partkey JOIN supplier ON s_suppkey = p_partkey % 50 WHERE o_custkey < 20'),
	('left joins of moved tables',
	 'SELECT o_orderkey, l_qty, p_brand, s_nation FROM orders JOIN lineitem ON o_orderkey = l_orderkey LEFT JOIN part ON l_partkey = p_partkey LEFT JOIN supplier ON l_suppkey = s_suppkey AND s_nation <> ''PERU'' WHERE o_orderkey < 400'),
	('semi and anti joins of moved tables',
	 'SELECT o_orderkey, l_qty FROM orders JOIN lineitem ON o_orderkey = l_orderkey WHERE EXISTS (SELECT FROM part WHERE p_partkey = l_partkey AND p_brand = ''Brand#3'') AND NOT EXISTS (SELECT FROM supplier WHERE s_suppkey = l_suppkey AND s_nation = ''JAPAN'')'),
	('right join: the group kept, part moves',
	 'SELECT o_orderkey, p_brand FROM part RIGHT JOIN (orders JOIN lineitem ON o_orderkey = l_orderkey) ON l_partkey = p_partkey WHERE o_custkey < 10'),
	('left join above a left join',
	 'SELECT o_orderkey, l_qty, "Mode" FROM orders LEFT JOIN lineitem ON o_orderkey = l_orderkey AND l_qty > 5 LEFT JOIN "Ship Ments" ON "Order Key" = o_orderkey'),
	('pruned classes',
	 'SELECT o_orderkey, p_brand, "Mode" FROM orders JOIN lineitem ON o_orderkey = l_orderkey JOIN part ON l_partkey = p_partkey JOIN "Ship Ments" ON "Order Key" = l_orderkey WHERE o_orderkey IN (2, 36, 200)'),
	('NULL keys never meet',
	 'SELECT count(*), count(l_orderkey), count("Order Key") FROM orders JOIN lineitem ON o_orderkey = l_orderkey JOIN "Ship Ments" ON "Order Key" = l_orderkey'),
	-- the inner side of an outer, semi or anti join is itself a join of
	-- small tables: each of them is broadcast, their join runs in the tasks
	('left join of a joined pair of small tables',
	 'SELECT o_orderkey, l_qty, p_brand, s_nation FROM orders JOIN lineitem ON o_orderkey = l_orderkey LEFT JOIN (part JOIN supplier ON p_partkey % 45 = s_suppkey) ON l_partkey = p_partkey AND l_suppkey = s_suppkey WHERE o_custkey < 30'),
	('anti join with a joined pair',
	 'SELECT o_orderkey, l_qty FROM orders JOIN lineitem ON o_orderkey = l_orderkey WHERE NOT EXISTS (SELECT FROM part JOIN supplier ON p_partkey % 45 = s_suppkey WHERE p_partkey = l_partkey AND s_nation = ''PERU'')'),
	('part kept by a left join: the group''s rows move to part''s classes',
	 'SELECT p_brand, count(l_qty) FROM part LEFT JOIN (orders JOIN lineitem ON o_orderkey = l_orderkey) ON l_partkey = p_partkey GROUP BY 1'),
	('left join of a full join',
	 'SELECT count(*), count(p_brand), count(s_nation) FROM orders JOIN lineitem ON o_orderkey = l_orderkey LEFT JOIN (part FULL JOIN "Ship Ments" ON p_partkey = "Order Key") ON l_partkey = coalesce(p_partkey, "Order Key") LEFT JOIN supplier ON s_suppkey = l_suppkey'),
	-- every pair of inputs of a three-table join builds its own group
	-- (customer JOIN orders with lineitem moved to it, or orders JOIN
	-- lineitem with customer moved to it): the cheapest is kept, here the
	-- one moving customer's 97 rows, not orders and then all of lineitem
	('the cheapest pair of inputs: customer moves, not lineitem',
	 'SELECT c_segment, count(*), sum(l_qty) FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey WHERE o_status <> ''P'' GROUP BY 1'),
	('the same, customer written last',
	 'SELECT c_segment, l_qty FROM orders JOIN lineitem ON l_orderkey = o_orderkey JOIN customer ON c_custkey = o_custkey WHERE l_qty = 3'),
	-- declined moves: PostgreSQL joins the group's scan with the table
	('part in a full join',
	 'SELECT o_orderkey, p_partkey FROM (orders JOIN lineitem ON o_orderkey = l_orderkey) FULL JOIN part ON l_partkey = p_partkey WHERE coalesce(o_custkey, 0) < 5')
) v(label, q);

-- a table too large to broadcast moves by the key of any table the group
-- reads in place: here conditions on orders keep "Ship Ments" and returns
-- above the group, joined with lineitem's key
SET colojoin.broadcast_threshold = 100;
SELECT label, (cj_ms_l.check(q)).* FROM (VALUES
	('left join on lineitem''s key',
	 'SELECT o_orderkey, l_qty, "Mode" FROM orders JOIN lineitem ON o_orderkey = l_orderkey LEFT JOIN "Ship Ments" ON "Order Key" = l_orderkey AND "Mode" > o_status WHERE o_custkey < 10'),
	('anti join on lineitem''s key',
	 'SELECT o_orderkey, l_qty FROM orders JOIN lineitem ON o_orderkey = l_orderkey WHERE NOT EXISTS (SELECT FROM "Ship Ments" WHERE "Order Key" = l_orderkey AND "Mode" > o_status)'),
	('semi join on lineitem''s key, lineitem nullable',
	 'SELECT o_orderkey, l_qty FROM orders LEFT JOIN lineitem ON o_orderkey = l_orderkey WHERE EXISTS (SELECT FROM "Ship Ments" WHERE "Order Key" = l_orderkey AND "Mode" > o_status)'),
	('full join below',
	 'SELECT o_orderkey, l_qty, "Mode" FROM orders FULL JOIN lineitem ON o_orderkey = l_orderkey JOIN "Ship Ments" ON "Order Key" = l_orderkey AND "Mode" > coalesce(o_status, ''A'')'),
	('refining partitions on lineitem''s key',
	 'SELECT o_orderkey, l_qty, r_reason FROM orders JOIN lineitem ON o_orderkey = l_orderkey LEFT JOIN returns ON r_orderkey = l_orderkey AND r_reason <> o_status'),
	('anti join, refining partitions',
	 'SELECT count(*) FROM orders JOIN lineitem ON o_orderkey = l_orderkey WHERE NOT EXISTS (SELECT FROM returns WHERE r_orderkey = l_orderkey AND r_reason <> o_status)'),
	('part kept by a left join, the group''s rows move (no broadcast)',
	 'SELECT p_brand, count(l_qty) FROM part LEFT JOIN (orders JOIN lineitem ON o_orderkey = l_orderkey) ON l_partkey = p_partkey GROUP BY 1'),
	('a joined pair too large to broadcast',
	 'SELECT o_orderkey, l_qty, p_brand, s_nation FROM orders JOIN lineitem ON o_orderkey = l_orderkey LEFT JOIN (part JOIN supplier ON p_partkey % 45 = s_suppkey) ON l_partkey = p_partkey AND l_suppkey = s_suppkey WHERE o_custkey < 30'),
	-- part joins on no key and is too large to broadcast now: PostgreSQL
	-- joins it (the group's rows could move to part's classes, a stage,
	-- but with this little data that costs more)
	('part too large to broadcast',
	 'SELECT p_brand, count(*) FROM orders JOIN lineitem ON o_orderkey = l_orderkey JOIN part ON l_partkey = p_partkey GROUP BY 1'),
	('part too large, supplier still broadcast',
	 'SELECT p_brand, s_nation, count(*) FROM orders JOIN lineitem ON o_orderkey = l_orderkey JOIN part ON l_partkey = p_partkey JOIN supplier ON l_suppkey = s_suppkey GROUP BY 1, 2')
) v(label, q);
-- with redistribution off too, "Ship Ments" cannot move
SET colojoin.enable_redistribution = off;
SELECT (cj_ms_l.check('SELECT o_orderkey, l_qty, "Mode" FROM orders JOIN lineitem ON o_orderkey = l_orderkey LEFT JOIN "Ship Ments" ON "Order Key" = l_orderkey AND "Mode" > o_status WHERE o_custkey < 10')).*;
RESET colojoin.enable_redistribution;
RESET colojoin.broadcast_threshold;

-- two moves in a row, as EXPLAIN shows them: one scan
SELECT plan_explain($$
SELECT o_status, "Mode", s_nation, count(*)
FROM orders JOIN lineitem ON o_orderkey = l_orderkey
	 JOIN "Ship Ments" ON "Order Key" = o_orderkey
	 JOIN supplier ON l_suppkey = s_suppkey
GROUP BY 1, 2, 3$$);

\i sql/include/no_moves_left.sql

-- clean up
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA cj_ms_s CASCADE;
DROP SCHEMA cj_ms_l CASCADE;
DROP FUNCTION public.plan_check(text, text, text), public.plan_explain(text);
\i sql/include/three_nodes_end.sql
