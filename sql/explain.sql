--
-- explain: EXPLAIN pins the shape of a colocated join plan (DESIGN.md
-- section 5): one "Custom Scan (ColocatedJoin)" for the whole join with its
-- strategy and join keys, "Partitions: run of total (pruned, empty)", the
-- tasks per node, "Rows Moved: 0", the remote SQL of the first task (every
-- task under VERBOSE), the same properties in FORMAT JSON, YAML and XML,
-- and under ANALYZE the tasks, rows and bytes of every node.
--
-- The tables: orders, lineitem and ship are hash-partitioned 6 ways on
-- their keys with the same placement (class r on node r % 3 + 1, by
-- colojoin.create_shards); partial has the leaves of remainders 0..3 only;
-- cust is a plain local table.
--
\set prefix cj_exp
\i sql/include/three_nodes_begin.sql

CREATE SCHEMA cj_exp;
SET search_path = cj_exp, public;

CREATE TABLE orders (o_key bigint, o_cust int, o_total int) PARTITION BY HASH (o_key);
SELECT colojoin.create_shards('orders', '{cj_exp_n1,cj_exp_n2,cj_exp_n3}', 6);
CREATE TABLE lineitem (l_key bigint, l_line int, l_qty int) PARTITION BY HASH (l_key);
SELECT colojoin.create_shards('lineitem', '{cj_exp_n1,cj_exp_n2,cj_exp_n3}', colocate_with => 'orders');
-- an int4 key: hashes like the int8 keys, so it is colocated with them
CREATE TABLE ship (s_key int, s_mode text) PARTITION BY HASH (s_key);
SELECT colojoin.create_shards('ship', '{cj_exp_n1,cj_exp_n2,cj_exp_n3}', colocate_with => 'orders');
-- partial lacks the leaves of remainders 4 and 5: those classes are empty
CREATE TABLE partial (p_key bigint, p_val int) PARTITION BY HASH (p_key);
SELECT colojoin.create_shards('partial', '{cj_exp_n1,cj_exp_n2,cj_exp_n3}', colocate_with => 'orders');
DROP FOREIGN TABLE partial_p4, partial_p5;
CREATE TABLE cust (c_id int, c_name text);

SELECT table_name, leaf, partition_class, node
FROM colojoin.shards WHERE table_name::text IN ('orders', 'partial')
ORDER BY table_name::text, partition_class;

-- Remainders of keys 1..30 for modulus 6 (int4 and int8 hash alike):
--   0: 2 16 18 27   1: 3 7 10 21   2: 1 12 17 23 28 30
--   3: 4 6 8 15 19 20 29   4: 13 14 25 26   5: 5 9 11 22 24
INSERT INTO orders SELECT g, g % 7, g * 10 FROM generate_series(1, 30) g;
INSERT INTO lineitem SELECT g, l, g + l FROM generate_series(1, 30) g, generate_series(1, 1 + g % 3) l;
INSERT INTO ship SELECT g, CASE WHEN g % 2 = 0 THEN 'air' ELSE 'rail' END FROM generate_series(1, 30, 3) g;
INSERT INTO partial SELECT g, g FROM generate_series(1, 30) g
WHERE satisfies_hash_partition('orders'::regclass, 6, 0, g::bigint)
   OR satisfies_hash_partition('orders'::regclass, 6, 1, g::bigint)
   OR satisfies_hash_partition('orders'::regclass, 6, 2, g::bigint)
   OR satisfies_hash_partition('orders'::regclass, 6, 3, g::bigint);
INSERT INTO cust SELECT g, 'cust ' || g FROM generate_series(0, 6) g;
ANALYZE orders, lineitem, ship, partial, cust;

--
-- The plan shape of a two-table join: one scan for the whole join, 6
-- classes on 3 nodes, nothing moved, the first task's SQL.
--
EXPLAIN (COSTS OFF)
SELECT o_key, o_total, l_qty FROM orders JOIN lineitem ON o_key = l_key;
-- the keys in the strategy line are as the query names them (aliases)
EXPLAIN (COSTS OFF)
SELECT o.o_key, l.l_qty FROM orders o JOIN lineitem l ON l.l_key = o.o_key;
-- only the columns the query needs travel; a remote filter goes in the SQL
EXPLAIN (COSTS OFF)
SELECT l_qty FROM orders JOIN lineitem ON o_key = l_key WHERE o_total > 100;
-- VERBOSE: the output columns and every task, with its node and class
EXPLAIN (VERBOSE, COSTS OFF)
SELECT o_key, l_qty FROM orders JOIN lineitem ON o_key = l_key WHERE l_qty < 10;

--
-- Pruning.  A constant on the key reaches both sides through the join's
-- equality: one class runs, five are pruned.
--
EXPLAIN (COSTS OFF)
SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = 7;
-- IN lists on both sides: classes 1 and 2 only
EXPLAIN (COSTS OFF)
SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key
WHERE o_key IN (3, 7, 12) AND l_key IN (3, 7, 12);
-- An IN list on one side (PostgreSQL does not carry it to the other): the
-- classes pruned from orders cannot produce rows either, and they are
-- pruned, not empty (every table has a leaf in them).
EXPLAIN (COSTS OFF)
SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key IN (3, 7, 12);
SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key IN (3, 7, 12)
ORDER BY 1, 2;

--
-- Empty classes: partial has no leaf for remainders 4 and 5.  An inner join
-- skips them; an outer join that preserves orders runs them; an outer join
-- that preserves partial skips them again.
--
EXPLAIN (COSTS OFF)
SELECT o_key, p_val FROM orders JOIN partial ON o_key = p_key;
EXPLAIN (COSTS OFF)
SELECT o_key, p_val FROM orders LEFT JOIN partial ON o_key = p_key;
EXPLAIN (COSTS OFF)
SELECT o_key, p_val FROM partial LEFT JOIN orders ON o_key = p_key;
-- an empty class of partial, pruned on orders as well
EXPLAIN (COSTS OFF)
SELECT o_key, p_val FROM orders LEFT JOIN partial ON o_key = p_key WHERE o_key = 13;
SELECT o_key, p_val FROM orders LEFT JOIN partial ON o_key = p_key WHERE o_key = 13;

--
-- Multi-way joins on the same key are ONE scan, one remote query per class.
--
EXPLAIN (COSTS OFF)
SELECT o_key, l_line, s_mode
FROM orders JOIN lineitem ON o_key = l_key JOIN ship ON s_key = o_key;
EXPLAIN (COSTS OFF)
SELECT o_key, l_line, s_mode, p_val
FROM orders JOIN lineitem ON o_key = l_key JOIN ship ON s_key = l_key
	 JOIN partial ON p_key = o_key;
SELECT count(*), sum(l_qty), sum(p_val)
FROM orders JOIN lineitem ON o_key = l_key JOIN ship ON s_key = l_key
	 JOIN partial ON p_key = o_key;
-- a mix of join types in one scan
EXPLAIN (COSTS OFF)
SELECT o_key, l_line, s_mode
FROM orders LEFT JOIN lineitem ON o_key = l_key FULL JOIN ship ON s_key = o_key;

--
-- A colocated pair joined with a local table: the pair stays pushed down
-- as one scan, and the coordinator joins cust with its result.
--
EXPLAIN (COSTS OFF)
SELECT c_name, count(*)
FROM orders JOIN lineitem ON o_key = l_key JOIN cust ON c_id = o_cust
GROUP BY c_name ORDER BY c_name;
SELECT c_name, count(*)
FROM orders JOIN lineitem ON o_key = l_key JOIN cust ON c_id = o_cust
GROUP BY c_name ORDER BY c_name;

--
-- The same properties in every structured format.
--
EXPLAIN (COSTS OFF, FORMAT JSON)
SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = 7;
EXPLAIN (COSTS OFF, FORMAT YAML)
SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = 7;
EXPLAIN (COSTS OFF, FORMAT XML)
SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = 7;
-- VERBOSE in JSON: one object per task
EXPLAIN (COSTS OFF, VERBOSE, FORMAT JSON)
SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key IN (7, 12) AND l_key IN (7, 12);

--
-- ANALYZE: per-node tasks, rows and bytes (without TIMING the output is
-- deterministic); rows of the nodes add up to the scan's actual rows.
--
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = 7;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT o_key, p_val FROM orders JOIN partial ON o_key = p_key;
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key IN (7, 12) AND l_key IN (7, 12);
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON)
SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = 7;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT YAML)
SELECT o_key, s_mode FROM orders JOIN ship ON o_key = s_key WHERE s_key = 4;
-- with TIMING, every node reports a time (not pinned: it varies)
CREATE FUNCTION explain_lines(query text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE query LOOP
		RETURN NEXT line;
	END LOOP;
END
$$;
SELECT count(*) FILTER (WHERE l ~ '^ *Node cj_exp_n\d: tasks=2 rows=\d+ bytes=\d+ time=\d+\.\d{3} ms$') AS nodes_with_time,
	   count(*) FILTER (WHERE l ~ '^ *Node ') AS nodes
FROM explain_lines('EXPLAIN (ANALYZE, COSTS OFF) SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key') l;
-- the node rows add up to the scan's rows, whatever the data
SELECT (SELECT count(*) FROM orders JOIN lineitem ON o_key = l_key) AS join_rows,
	   (SELECT sum((regexp_match(l, 'rows=(\d+) bytes'))[1]::int)
		FROM explain_lines('EXPLAIN (ANALYZE, COSTS OFF) SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key') l) AS node_rows;

--
-- A generic plan with a parameter on the key: the plan holds every task,
-- the executor runs only the one the value hashes to.
--
SET plan_cache_mode = force_generic_plan;
PREPARE cj_exp_by_key(bigint) AS
	SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = $1;
EXPLAIN (COSTS OFF) EXECUTE cj_exp_by_key(7);
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE cj_exp_by_key(7);
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE cj_exp_by_key(13);
-- NULL matches no key: no task runs
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE cj_exp_by_key(NULL);
EXECUTE cj_exp_by_key(7);
EXECUTE cj_exp_by_key(13);
EXECUTE cj_exp_by_key(NULL);
-- an int4 parameter on the int4 side prunes too
PREPARE cj_exp_ship(int) AS
	SELECT o_key, s_mode FROM orders JOIN ship ON o_key = s_key WHERE s_key = $1;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON) EXECUTE cj_exp_ship(4);
EXECUTE cj_exp_ship(4);
-- a custom plan prunes at planning time instead
SET plan_cache_mode = force_custom_plan;
EXPLAIN (COSTS OFF) EXECUTE cj_exp_by_key(7);
EXECUTE cj_exp_by_key(7);
RESET plan_cache_mode;
DEALLOCATE cj_exp_by_key;
DEALLOCATE cj_exp_ship;

--
-- Clean up, here and on the nodes (create_shards made schema cj_exp there).
--
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA cj_exp CASCADE;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
				   'DROP SCHEMA IF EXISTS cj_exp CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
\i sql/include/three_nodes_end.sql
