--
-- scalar_subqueries: a correlated scalar subquery over a sharded table in
-- WHERE or a select list (an aggregate with no GROUP BY, so always one
-- row) is rewritten as
-- a LATERAL subquery before PostgreSQL plans the query
-- (src/plan/scalar_subquery.c); correlated on the partition key, the
-- tasks run it next to the rows it is correlated to instead of a SubPlan
-- asking a node once per row.  Every query is compared with the same one
-- over plain local tables holding the same rows (orders without lines,
-- NULL keys, quoted names), and so is each shape left as it was.
--
\set prefix cj_sq
\i sql/include/three_nodes_begin.sql
SET colojoin.remote_size_lifetime = 0;

CREATE SCHEMA cj_sq_s;
CREATE SCHEMA cj_sq_l;
SET search_path = cj_sq_s, public;

CREATE TABLE orders (o_orderkey int, o_custkey int, o_status text, o_total numeric(10,2)) PARTITION BY HASH (o_orderkey);
SELECT colojoin.create_shards('orders', ARRAY[:'srv1', :'srv2', :'srv3'], 6);
CREATE TABLE "Line Item" ("Order" int, l_qty int, l_price numeric(10,2)) PARTITION BY HASH ("Order");
SELECT colojoin.create_shards('"Line Item"', NULL, colocate_with => 'orders');
CREATE TABLE customer (c_custkey int, c_segment text) PARTITION BY HASH (c_custkey);
SELECT colojoin.create_shards('customer', ARRAY[:'srv2', :'srv3', :'srv1'], 4);

CREATE TABLE cj_sq_l.orders (o_orderkey int, o_custkey int, o_status text, o_total numeric(10,2));
CREATE TABLE cj_sq_l."Line Item" ("Order" int, l_qty int, l_price numeric(10,2));
CREATE TABLE cj_sq_l.customer (c_custkey int, c_segment text);
-- orders 1..600 (and three of NULL key); orders 500.. have no lines
INSERT INTO cj_sq_l.orders
SELECT g, CASE WHEN g % 19 = 0 THEN NULL ELSE g % 70 END, (ARRAY['F', 'O', 'P'])[g % 3 + 1], (g % 300) * 1.5
FROM generate_series(1, 600) g;
INSERT INTO cj_sq_l.orders VALUES (NULL, 1, 'F', 10), (NULL, 2, 'O', 20), (NULL, NULL, 'P', 30);
INSERT INTO cj_sq_l."Line Item"
SELECT CASE WHEN g % 97 = 0 THEN NULL ELSE g / 4 END, g % 13, (g % 997) / 10.0
FROM generate_series(4, 1999) g;
-- customers 0..49 only: orders of customers 50..69 have none
INSERT INTO cj_sq_l.customer SELECT g, (ARRAY['AUTO', 'BUILD'])[g % 2 + 1] FROM generate_series(0, 49) g;
INSERT INTO orders SELECT * FROM cj_sq_l.orders;
INSERT INTO "Line Item" SELECT * FROM cj_sq_l."Line Item";
INSERT INTO customer SELECT * FROM cj_sq_l.customer;
ANALYZE orders, "Line Item", customer;
ANALYZE cj_sq_l.orders, cj_sq_l."Line Item", cj_sq_l.customer;

\i sql/include/plan_check.sql
CREATE FUNCTION cj_sq_l.check(query text, OUT same boolean, OUT nrows int, OUT plan text)
LANGUAGE sql AS $$ SELECT * FROM public.plan_check(query, 'cj_sq_s', 'cj_sq_l') $$;

-- correlated on the partition key: one scan, the subquery in the tasks
SELECT label, (cj_sq_l.check(q)).* FROM (VALUES
	('max of the order''s lines',
	 'SELECT o_orderkey, o_status FROM orders WHERE (SELECT max(l_price) FROM "Line Item" WHERE "Order" = o_orderkey) > 60'),
	('compared with a column of the row',
	 'SELECT o_orderkey FROM orders WHERE o_total < (SELECT sum(l_price) FROM "Line Item" l WHERE l."Order" = orders.o_orderkey)'),
	('count = 0 keeps orders without lines and NULL keys',
	 'SELECT o_orderkey, o_status FROM orders WHERE (SELECT count(*) FROM "Line Item" WHERE "Order" = o_orderkey) = 0'),
	('max IS NULL: the same orders',
	 'SELECT o_orderkey FROM orders WHERE (SELECT max(l_qty) FROM "Line Item" WHERE "Order" = o_orderkey) IS NULL'),
	('avg, with conditions inside and outside',
	 'SELECT o_orderkey, o_total FROM orders WHERE o_status <> ''P'' AND (SELECT avg(l_qty) FROM "Line Item" WHERE "Order" = o_orderkey AND l_price > 10) > 6'),
	('aggregated above',
	 'SELECT o_status, count(*), sum(o_total) FROM orders WHERE (SELECT sum(l_qty) FROM "Line Item" WHERE "Order" = o_orderkey) > 20 GROUP BY 1'),
	('two subqueries',
	 'SELECT o_orderkey FROM orders WHERE (SELECT min(l_qty) FROM "Line Item" WHERE "Order" = o_orderkey) < 3 AND (SELECT max(l_qty) FROM "Line Item" WHERE "Order" = o_orderkey) > 10'),
	('in an OR',
	 'SELECT o_orderkey FROM orders WHERE o_status = ''F'' OR (SELECT count(*) FROM "Line Item" WHERE "Order" = o_orderkey AND l_qty > 9) > 1'),
	('pruned to one order',
	 'SELECT o_orderkey, o_total FROM orders WHERE o_orderkey = 42 AND (SELECT count(*) FROM "Line Item" WHERE "Order" = o_orderkey) > 0'),
	('in a subquery in FROM',
	 'SELECT o_status, count(*) FROM (SELECT * FROM orders WHERE (SELECT sum(l_price) FROM "Line Item" WHERE "Order" = o_orderkey) > 100) s GROUP BY 1'),
	('in the select list',
	 'SELECT o_orderkey, (SELECT count(*) FROM "Line Item" WHERE "Order" = o_orderkey), o_status FROM orders WHERE o_orderkey < 50 OR o_orderkey IS NULL'),
	('in the select list and WHERE, ordered',
	 'SELECT o_orderkey, (SELECT sum(l_price) FROM "Line Item" WHERE "Order" = o_orderkey) AS total FROM orders WHERE (SELECT max(l_qty) FROM "Line Item" WHERE "Order" = o_orderkey) > 11 ORDER BY 2 DESC NULLS LAST'),
	('in a WITH query',
	 'WITH big AS (SELECT o_orderkey, o_custkey FROM orders WHERE (SELECT count(*) FROM "Line Item" WHERE "Order" = o_orderkey) >= 4) SELECT count(*), count(DISTINCT o_custkey) FROM big')
) AS t(label, q);

-- not in the tasks (correlated on another column: left a SubPlan;
-- rewritten, but PostgreSQL joins): the answer is PostgreSQL's still
SELECT label, (cj_sq_l.check(q)).same, (cj_sq_l.check(q)).nrows FROM (VALUES
	('correlated on a column that is not the key',
	 'SELECT o_orderkey FROM orders WHERE (SELECT count(*) FROM "Line Item" WHERE l_qty = o_custkey % 13 AND "Order" < 20) > 2'),
	('correlated to the side a left join does not keep',
	 'SELECT c_custkey, o_orderkey FROM customer LEFT JOIN orders ON o_custkey = c_custkey WHERE (SELECT count(*) FROM "Line Item" WHERE "Order" = o_orderkey) = 0'),
	('with the subquery''s table joined outside too',
	 'SELECT c_segment, count(*) FROM customer JOIN orders ON o_custkey = c_custkey WHERE (SELECT max(l_price) FROM "Line Item" WHERE "Order" = o_orderkey) > 50 GROUP BY 1'),
	-- (its LATERAL form, written by hand, failed with "the table LATERAL
	-- subquery follows is not read in place" when a join above moved it)
	('inside an IN subquery, correlated on its key',
	 'SELECT o_orderkey FROM orders WHERE o_orderkey IN (SELECT l."Order" FROM "Line Item" l WHERE l.l_qty > 10 AND (SELECT count(*) FROM orders o2 WHERE o2.o_orderkey = l."Order" AND o2.o_status = ''F'') > 0)'),
	('inside an EXISTS, correlated otherwise',
	 'SELECT c_custkey FROM customer WHERE EXISTS (SELECT FROM orders WHERE o_custkey = c_custkey AND (SELECT sum(l_qty) FROM "Line Item" WHERE l_qty = o_custkey % 13 AND "Order" < 30) > 5)')
) AS t(label, q);
-- correlated on another column than the key: still a SubPlan
SELECT count(*) FILTER (WHERE line ~ 'SubPlan') AS subplans,
	   count(*) FILTER (WHERE line ~ 'scalar_subquery') AS rewritten
FROM plan_explain($$
SELECT o_orderkey FROM orders WHERE (SELECT count(*) FROM "Line Item" WHERE l_qty = o_custkey % 13 AND "Order" < 20) > 2$$) AS line;
-- those nested in IN and EXISTS are rewritten in their own level
SELECT count(*) AS rewritten FROM plan_explain($$
SELECT o_orderkey FROM orders WHERE o_orderkey IN (SELECT l."Order" FROM "Line Item" l WHERE l.l_qty > 10 AND (SELECT count(*) FROM orders o2 WHERE o2.o_orderkey = l."Order" AND o2.o_status = 'F') > 0)$$) AS line
WHERE line ~ 'scalar_subquery';

-- left as written (a SubPlan): shapes that need not yield one row, or
-- that PostgreSQL runs once anyway, or a select list computed after a
-- grouping or a LIMIT
SELECT label, (cj_sq_l.check(q)).* FROM (VALUES
	('HAVING may leave no row',
	 'SELECT o_orderkey FROM orders WHERE o_orderkey < 50 AND (SELECT count(*) FROM "Line Item" WHERE "Order" = o_orderkey HAVING count(*) > 3) IS NULL'),
	('GROUP BY',
	 'SELECT o_orderkey FROM orders WHERE o_orderkey < 50 AND (SELECT count(*) FROM "Line Item" WHERE "Order" = o_orderkey GROUP BY "Order") IS NULL'),
	('LIMIT',
	 'SELECT o_orderkey FROM orders WHERE o_orderkey < 50 AND (SELECT l_qty FROM "Line Item" WHERE "Order" = o_orderkey ORDER BY l_qty LIMIT 1) = 4'),
	('no aggregate',
	 'SELECT o_orderkey FROM orders WHERE o_orderkey < 50 AND (SELECT o_total FROM orders o2 WHERE o2.o_orderkey = orders.o_orderkey) > 20'),
	('in the select list, with LIMIT',
	 'SELECT o_orderkey, (SELECT count(*) FROM "Line Item" WHERE "Order" = o_orderkey) FROM orders ORDER BY o_orderkey LIMIT 5'),
	('in the select list of a grouped query',
	 'SELECT o_status, (SELECT count(*) FROM "Line Item" WHERE "Order" = min(o_orderkey)) FROM orders GROUP BY o_status'),
	('uncorrelated: an InitPlan',
	 'SELECT o_orderkey FROM orders WHERE o_total > (SELECT avg(l_price) FROM "Line Item") * 5')
) AS t(label, q);
SELECT (cj_sq_l.check('SELECT o_orderkey FROM orders WHERE o_orderkey < 50 AND (SELECT count(*) FROM "Line Item" WHERE "Order" = o_orderkey AND random() < 2) > 1')).plan
	AS volatile_inside;

-- what EXPLAIN shows
SELECT line FROM plan_explain($$
SELECT o_orderkey FROM orders WHERE (SELECT max(l_price) FROM "Line Item" WHERE "Order" = o_orderkey) > 60$$) AS line
WHERE line ~ 'Custom Scan|Strategy|SubPlan';

-- colojoin.enable_lateral_subqueries = off: the SubPlan again, the same rows
SET colojoin.enable_lateral_subqueries = off;
SELECT (cj_sq_l.check('SELECT o_orderkey, o_status FROM orders WHERE (SELECT max(l_price) FROM "Line Item" WHERE "Order" = o_orderkey) > 60')).*;
RESET colojoin.enable_lateral_subqueries;

-- a security-barrier view: the subquery never sees a row the view hides.
-- seen() fails on an order the view hides (not leakproof, stable: the
-- rewrite takes it)
CREATE FUNCTION cj_sq_l.seen(k int) RETURNS boolean LANGUAGE plpgsql STABLE COST 0.0001 AS $$
BEGIN
	IF EXISTS (SELECT FROM cj_sq_l.orders WHERE o_orderkey = k AND o_status <> 'O') THEN
		RAISE EXCEPTION 'seen() saw hidden order %', k;
	END IF;
	RETURN true;
END $$;
CREATE VIEW open_orders WITH (security_barrier) AS SELECT * FROM orders WHERE o_status = 'O';
-- the query over the view is rewritten too
SELECT count(*) > 0 AS rewritten FROM plan_explain($$
SELECT count(*) FROM open_orders
WHERE (SELECT count(*) FROM "Line Item" WHERE "Order" = o_orderkey AND cj_sq_l.seen(o_orderkey)) > 2$$) AS line
WHERE line ~ 'scalar_subquery';
SELECT count(*) FROM open_orders
WHERE (SELECT count(*) FROM "Line Item" WHERE "Order" = o_orderkey AND cj_sq_l.seen(o_orderkey)) > 2;
SELECT count(*) FROM cj_sq_l.orders o WHERE o_status = 'O'
	AND (SELECT count(*) FROM cj_sq_l."Line Item" WHERE "Order" = o_orderkey) > 2;
-- the same condition on the table itself does see them
SELECT count(*) FROM orders
WHERE (SELECT count(*) FROM "Line Item" WHERE "Order" = o_orderkey AND cj_sq_l.seen(o_orderkey)) > 2;

-- clean up
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA cj_sq_s CASCADE;
DROP SCHEMA cj_sq_l CASCADE;
DROP FUNCTION public.plan_check(text, text, text), public.plan_explain(text);
\i sql/include/three_nodes_end.sql
