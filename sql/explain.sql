--
-- explain: EXPLAIN pins the shape of a colocated join plan (DESIGN.md
-- section 5): one "Custom Scan (ColocatedJoin)" for the whole join with its
-- strategy and join keys, "Partitions: run of total (pruned, empty)", the
-- tasks per node, "Rows Moved: 0", the remote SQL of the first task (every
-- task under VERBOSE), and under ANALYZE the tasks, rows and bytes of every
-- node.  FORMAT JSON, YAML and XML give the same properties typed (numbers,
-- lists of objects), read back at the end with the json and xml functions.
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
-- Typed fields.  In JSON, YAML and XML the partitions are an object of
-- numbers, the tasks a list of one object per node, the moves a list, so a
-- program reads them without parsing strings; TEXT keeps its lines.  The
-- documents are read back with PostgreSQL's json and xml functions, and
-- every value is checked against what the TEXT plan of the same query says
-- (or against the data): nothing below is taken from the output it checks.
--
-- explain_scan(options, query): the ColocatedJoin node of EXPLAIN
-- (options, FORMAT JSON) query, parsed into jsonb.  elems(j): the elements
-- of j with their positions, none unless j is an array.  text_prop(options,
-- query, label): the value of the TEXT plan's property line "label: value".
-- unnumbered(sql): sql without the planning counter in the names of the
-- moves' tables, which differs from one plan to the next.
--
CREATE FUNCTION explain_scan(options text, query text) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE format('EXPLAIN (%s, FORMAT JSON) %s', options, query) INTO plan;
	RETURN jsonb_path_query_first(plan::jsonb,
		'strict $.**?(@."Custom Plan Provider" == "ColocatedJoin")');
END
$$;
CREATE FUNCTION elems(j jsonb, OUT e jsonb, OUT i bigint) RETURNS SETOF record
LANGUAGE sql AS $$
	SELECT value, ordinality
	FROM jsonb_array_elements(CASE WHEN jsonb_typeof(j) = 'array' THEN j ELSE '[]' END)
		 WITH ORDINALITY
$$;
CREATE FUNCTION text_prop(options text, query text, label text) RETURNS text
LANGUAGE sql AS $$
	SELECT substring(l FROM '^ *' || label || ': (.*)$')
	FROM explain_lines(format('EXPLAIN (%s) %s', options, query)) l
	WHERE l ~ ('^ *' || label || ': ')
	LIMIT 1
$$;
CREATE FUNCTION unnumbered(sql text) RETURNS text
LANGUAGE sql AS $$
	SELECT regexp_replace(sql, '"colojoin_move_\d+_', '"colojoin_move_', 'g')
$$;
CREATE TABLE typed_cases (name text PRIMARY KEY, query text NOT NULL);
INSERT INTO typed_cases VALUES
	('1 all', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key'),
	('2 one key', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = 7'),
	('3 in list', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key IN (3, 7, 12)'),
	('4 empty classes', 'SELECT o_key, p_val FROM orders JOIN partial ON o_key = p_key'),
	('5 three tables', 'SELECT o_key, l_line, s_mode FROM orders JOIN lineitem ON o_key = l_key JOIN ship ON s_key = o_key'),
	('6 repartitioned', 'SELECT o_key, l_qty FROM orders JOIN lineitem ON o_key = l_line'),
	('7 broadcast', 'SELECT /*+ BroadcastJoin(ship) */ o_key, s_mode FROM orders JOIN ship ON o_cust = s_key');
-- what each case plans, in TEXT
SELECT name, text_prop('COSTS OFF', query, 'Partitions') AS partitions,
	   text_prop('COSTS OFF', query, 'Tasks') AS tasks,
	   text_prop('COSTS OFF', query, 'Moves') AS moves
FROM typed_cases ORDER BY name;
-- JSON: the kinds of values (Partitions an object of numbers, Tasks an
-- array of objects, every object with a string Node and a number Tasks)
SELECT c.name, jsonb_typeof(s->'Partitions') AS partitions,
	   (SELECT string_agg(key || ' ' || jsonb_typeof(value), ', ')
		FROM jsonb_each(CASE WHEN jsonb_typeof(s->'Partitions') = 'object'
							 THEN s->'Partitions' END)) AS partition_fields,
	   jsonb_typeof(s->'Tasks') AS tasks,
	   (SELECT string_agg(DISTINCT f.key || ' ' || jsonb_typeof(f.value), ', ')
		FROM elems(s->'Tasks') t, jsonb_each(t.e) f) AS task_fields,
	   jsonb_typeof(s->'Rows Moved') AS rows_moved,
	   jsonb_typeof(s->'Moves') AS moves,
	   (SELECT string_agg(DISTINCT jsonb_typeof(m.e), ', ') FROM elems(s->'Moves') m) AS move_items
FROM typed_cases c, explain_scan('COSTS OFF', c.query) s
ORDER BY c.name;
-- JSON: the values say what TEXT says; the classes planned, pruned and
-- empty add up to the total, and the tasks of the nodes to the classes
-- planned (a plan that moves rows runs one task per node, for all the
-- node's classes)
SELECT c.name, p.*,
	   p.planned + p.pruned + p.empty = p.total AS adds_up,
	   format('%s of %s (%s pruned, %s empty)', p.planned, p.total, p.pruned, p.empty)
		 = text_prop('COSTS OFF', c.query, 'Partitions') AS partitions_as_text,
	   (SELECT sum((t.e->>'Tasks')::int) FROM elems(s->'Tasks') t)
		 = CASE WHEN s ? 'Moves' THEN (SELECT count(*) FROM elems(s->'Tasks')) ELSE p.planned END AS tasks_add_up,
	   (SELECT string_agg(format('%s %s', t.e->>'Node', t.e->'Tasks'), ', ' ORDER BY t.i)
		FROM elems(s->'Tasks') t) = text_prop('COSTS OFF', c.query, 'Tasks') AS tasks_as_text,
	   (s->'Rows Moved')::text = text_prop('COSTS OFF', c.query, 'Rows Moved') AS rows_moved_as_text,
	   (SELECT string_agg(m.e #>> '{}', '; ' ORDER BY m.i) FROM elems(s->'Moves') m)
		 IS NOT DISTINCT FROM text_prop('COSTS OFF', c.query, 'Moves') AS moves_as_text,
	   unnumbered(s->>'Remote SQL')
		 = unnumbered(text_prop('COSTS OFF', c.query, 'Remote SQL')) AS sql_as_text
FROM typed_cases c, explain_scan('COSTS OFF', c.query) s,
	 LATERAL (SELECT (s #>> '{Partitions,Total}')::int AS total,
					 (s #>> '{Partitions,Planned}')::int AS planned,
					 (s #>> '{Partitions,Pruned}')::int AS pruned,
					 (s #>> '{Partitions,Empty}')::int AS empty) p
ORDER BY c.name;
-- the tasks of a whole join are the placements of the classes: per node,
-- as many as orders has leaves there
SELECT (SELECT jsonb_object_agg(t.e->>'Node', t.e->'Tasks')
		FROM elems(explain_scan('COSTS OFF', query)->'Tasks') t)
	   = (SELECT jsonb_object_agg(node, n)
		  FROM (SELECT node::text, count(*) AS n FROM colojoin.shards
				WHERE table_name = 'orders'::regclass GROUP BY node) x) AS tasks_are_placements
FROM typed_cases WHERE name = '1 all';

-- VERBOSE: Remote Tasks, one object per task (its node, partition classes
-- separated by "; " and SQL, all strings), covering the classes planned;
-- per node they are the Tasks counts, and they are TEXT's "Task i on node
-- (class): sql" lines
SELECT c.name, jsonb_typeof(s->'Remote Tasks') AS remote_tasks,
	   (SELECT string_agg(DISTINCT f.key || ' ' || jsonb_typeof(f.value), ', ')
		FROM elems(s->'Remote Tasks') t, jsonb_each(t.e) f) AS task_fields,
	   (SELECT sum(cardinality(string_to_array(t.e->>'Partition Class', '; ')))
		FROM elems(s->'Remote Tasks') t) = (s #>> '{Partitions,Planned}')::int AS one_per_class,
	   (SELECT jsonb_object_agg(node, n)
		FROM (SELECT t.e->>'Node' AS node, count(*) AS n FROM elems(s->'Remote Tasks') t GROUP BY 1) x)
	   = (SELECT jsonb_object_agg(t.e->>'Node', t.e->'Tasks') FROM elems(s->'Tasks') t) AS per_node,
	   (SELECT unnumbered(string_agg(format('Task %s on %s (%s): %s', t.i, t.e->>'Node',
											t.e->>'Partition Class', t.e->>'Remote SQL'),
									 E'\n' ORDER BY t.i))
		FROM elems(s->'Remote Tasks') t)
	   = (SELECT unnumbered(string_agg(btrim(l), E'\n'))
		  FROM explain_lines('EXPLAIN (VERBOSE, COSTS OFF) ' || c.query) l
		  WHERE l ~ '^ *Task \d+ on ') AS tasks_as_text
FROM typed_cases c, explain_scan('VERBOSE, COSTS OFF', c.query) s
ORDER BY c.name;

-- ANALYZE (TIMING OFF): every Tasks object also has the node's tasks run,
-- rows and bytes, all numbers, and no time; the rows add up to the scan's
-- actual rows, which are the rows of the query; the objects are TEXT's
-- "Node ..." lines; under VERBOSE the tasks' rows add up too
SELECT c.name,
	   (SELECT string_agg(DISTINCT f.key || ' ' || jsonb_typeof(f.value), ', ')
		FROM elems(s->'Tasks') t, jsonb_each(t.e) f) AS task_fields,
	   (SELECT sum((t.e->>'Tasks Run')::int) FROM elems(s->'Tasks') t)
		 = CASE WHEN s ? 'Moves' THEN (SELECT count(*) FROM elems(s->'Tasks'))
				ELSE (s #>> '{Partitions,Planned}')::int END AS all_ran,
	   (SELECT sum((t.e->>'Rows')::numeric) FROM elems(s->'Tasks') t) AS node_rows,
	   s->'Actual Rows' AS actual_rows,
	   cardinality(rows_of(c.query, 'cj_exp')) AS query_rows,
	   (SELECT string_agg(format('Node %s: tasks=%s rows=%s bytes=%s', t.e->>'Node',
								 t.e->'Tasks Run', t.e->'Rows', t.e->'Bytes'), E'\n' ORDER BY t.i)
		FROM elems(s->'Tasks') t)
	   = (SELECT string_agg(btrim(l), E'\n')
		  FROM explain_lines('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || c.query) l
		  WHERE l ~ '^ *Node \S+: ') AS nodes_as_text,
	   (SELECT sum((t.e->>'Rows')::numeric)
		FROM elems(explain_scan('ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF',
								c.query)->'Remote Tasks') t) AS task_rows,
	   jsonb_typeof(s->'Bytes Moved') AS bytes_moved
FROM typed_cases c, explain_scan('ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF', c.query) s
ORDER BY c.name;
-- with TIMING, a time in ms on every node and every task, and on the moves
SELECT c.name,
	   (SELECT bool_and(jsonb_typeof(t.e->'Time') = 'number' AND (t.e->>'Time')::numeric >= 0)
		FROM elems(s->'Tasks') t) AS node_times,
	   (SELECT bool_and(jsonb_typeof(t.e->'Time') = 'number' AND (t.e->>'Time')::numeric >= 0)
		FROM elems(s->'Remote Tasks') t) AS task_times,
	   jsonb_typeof(s->'Move Time') AS move_time
FROM typed_cases c, explain_scan('ANALYZE, VERBOSE, COSTS OFF', c.query) s
ORDER BY c.name;

-- Run-time pruning: Partitions gets Run, the tasks run (the Tasks Run of
-- TEXT), which are the nodes' tasks run; a NULL key runs none
SET plan_cache_mode = force_generic_plan;
PREPARE cj_exp_typed(bigint) AS
	SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = $1;
SELECT k, jsonb_typeof(s #> '{Partitions,Run}') AS run_type,
	   s #> '{Partitions,Run}' AS run,
	   (s #>> '{Partitions,Run}') = text_prop('ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF',
											  'EXECUTE cj_exp_typed(' || k || ')', 'Tasks Run') AS run_as_text,
	   (SELECT sum((t.e->>'Tasks Run')::int) FROM elems(s->'Tasks') t) AS node_tasks_run,
	   (SELECT sum((t.e->>'Rows')::numeric) FROM elems(s->'Tasks') t) AS node_rows,
	   s->'Actual Rows' AS actual_rows
FROM (VALUES ('7'), ('13'), ('NULL')) v(k),
	 explain_scan('ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF', 'EXECUTE cj_exp_typed(' || k || ')') s;
-- without ANALYZE there is no Run: nothing ran
SELECT explain_scan('COSTS OFF', 'EXECUTE cj_exp_typed(7)') #> '{Partitions}' ? 'Run' AS has_run;
DEALLOCATE cj_exp_typed;
RESET plan_cache_mode;

-- XML, read with xpath(): the same numbers, as elements
CREATE FUNCTION explain_xml(options text, query text) RETURNS xml
LANGUAGE plpgsql AS $$
DECLARE
	plan xml;
BEGIN
	EXECUTE format('EXPLAIN (%s, FORMAT XML) %s', options, query) INTO plan;
	RETURN plan;
END
$$;
-- xp(expr, doc): xpath() of expr, where $scan is the ColocatedJoin Plan
-- element and e the namespace of EXPLAIN's XML
CREATE FUNCTION xp(expr text, doc xml) RETURNS text[]
LANGUAGE sql AS $$
	SELECT xpath(replace(expr, '$scan', '//e:Plan[e:Custom-Plan-Provider="ColocatedJoin"]'), doc,
				 ARRAY[ARRAY['e', 'http://www.postgresql.org/2009/explain']])::text[]
$$;
SELECT c.name,
	   xp('$scan/e:Partitions/e:Total/text()', x) = ARRAY[s #>> '{Partitions,Total}'] AS total,
	   xp('$scan/e:Partitions/e:Planned/text()', x) = ARRAY[s #>> '{Partitions,Planned}'] AS planned,
	   xp('$scan/e:Partitions/e:Pruned/text()', x) = ARRAY[s #>> '{Partitions,Pruned}'] AS pruned,
	   xp('$scan/e:Partitions/e:Empty/text()', x) = ARRAY[s #>> '{Partitions,Empty}'] AS empty,
	   xp('$scan/e:Partitions/text()[normalize-space()]', x) = '{}' AS partitions_no_text,
	   xp('$scan/e:Tasks/e:Node-Tasks/e:Node/text()', x)
		 = ARRAY(SELECT t.e->>'Node' FROM elems(s->'Tasks') t ORDER BY t.i) AS nodes,
	   xp('$scan/e:Tasks/e:Node-Tasks/e:Tasks/text()', x)
		 = ARRAY(SELECT t.e->>'Tasks' FROM elems(s->'Tasks') t ORDER BY t.i) AS tasks,
	   xp('sum($scan/e:Tasks/e:Node-Tasks/e:Tasks)', x)
		 = ARRAY[CASE WHEN s ? 'Moves' THEN (SELECT count(*) FROM elems(s->'Tasks'))::text
					  ELSE s #>> '{Partitions,Planned}' END] AS tasks_add_up,
	   xp('$scan/e:Rows-Moved/text()', x) = ARRAY[s->>'Rows Moved'] AS rows_moved,
	   xp('$scan/e:Moves/e:Item/text()', x)
		 = ARRAY(SELECT m.e #>> '{}' FROM elems(s->'Moves') m ORDER BY m.i) AS moves
FROM typed_cases c, explain_xml('COSTS OFF', c.query) x, explain_scan('COSTS OFF', c.query) s
ORDER BY c.name;
-- XML under ANALYZE: the nodes' rows add up to the scan's
SELECT c.name,
	   xp('sum($scan/e:Tasks/e:Node-Tasks/e:Rows)', x) = xp('$scan/e:Actual-Rows/text()', x) AS rows_add_up,
	   xp('$scan/e:Tasks/e:Node-Tasks/e:Bytes/text()', x)
		 = ARRAY(SELECT t.e->>'Bytes' FROM elems(s->'Tasks') t ORDER BY t.i) AS bytes
FROM typed_cases c,
	 explain_xml('ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF', c.query) x,
	 explain_scan('ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF', c.query) s
ORDER BY c.name;

-- YAML, by its lines: Partitions is a mapping of four numbers one level
-- deeper, Tasks a sequence of mappings whose Node and Tasks are the JSON
-- values, Moves a sequence of the JSON moves
CREATE FUNCTION explain_yaml(options text, query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	plan text;
BEGIN
	EXECUTE format('EXPLAIN (%s, FORMAT YAML) %s', options, query) INTO plan;
	RETURN plan;
END
$$;
SELECT c.name,
	   y ~ '\n( +)Partitions: *\n\1  Total: \d+\n\1  Planned: \d+\n\1  Pruned: \d+\n\1  Empty: \d+\n' AS partitions_mapping,
	   (regexp_match(y, '\n +Partitions: *\n +Total: (\d+)\n +Planned: (\d+)\n +Pruned: (\d+)\n +Empty: (\d+)\n'))::int[]
		 = ARRAY[(s #>> '{Partitions,Total}')::int, (s #>> '{Partitions,Planned}')::int,
				 (s #>> '{Partitions,Pruned}')::int, (s #>> '{Partitions,Empty}')::int] AS partitions,
	   y ~ '\n( +)Tasks: *\n\1  - Node: ' AS tasks_sequence,
	   ARRAY(SELECT r[2] || ' ' || r[3]
			 FROM regexp_matches(y, '\n( +)- Node: "([^"]*)"\n\1  Tasks: (\d+)(?=\n)', 'g') r)
		 = ARRAY(SELECT format('%s %s', t.e->>'Node', t.e->'Tasks') FROM elems(s->'Tasks') t ORDER BY t.i) AS tasks,
	   ARRAY(SELECT r[2] FROM regexp_matches(y, '\n( +)- "([^"]*)"(?=\n)', 'g') r)
		 = ARRAY(SELECT m.e #>> '{}' FROM elems(s->'Moves') m ORDER BY m.i) AS moves
FROM typed_cases c, explain_yaml('COSTS OFF', c.query) y, explain_scan('COSTS OFF', c.query) s
ORDER BY c.name;

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
