--
-- rebalance: colojoin.rebalance_plan chooses class moves that even out
-- rows per node over the servers given (a new empty one included), moving
-- a class of a colocation group as one and never onto a node that holds a
-- placement of it; drain => empties a node first.  Sizes are the nodes'
-- own (ANALYZEd here, so that they are exact).  rebalance() records a job
-- that its background worker runs (test/t/101_rebalance.pl runs jobs);
-- here: a balanced cluster's job has nothing to move, and the errors.
--
\set prefix cj_rb
\i sql/include/three_nodes_begin.sql
SET colojoin.progress_notice_interval = -1;
CREATE SCHEMA cj_rb_s;
SET search_path = cj_rb_s, public;

CREATE FUNCTION node_sql(port text, query text) RETURNS SETOF text
LANGUAGE sql AS $$
	SELECT x FROM dblink(format('host=127.0.0.1 port=%s dbname=colojoin_regress', port), query) AS t(x text)
$$;

-- orders and items colocated (8 classes, nodes 1 and 2, classes 0-3
-- bigger); small (4 classes, node 1 only); one replica of small's class 1
-- on node 2
CREATE TABLE orders (o_id int NOT NULL, o_cust int) PARTITION BY HASH (o_id);
SELECT colojoin.create_shards('orders', ARRAY[:'srv1', :'srv2'], 8);
CREATE TABLE items (i_order int, i_qty int) PARTITION BY HASH (i_order);
SELECT colojoin.create_shards('items', NULL, colocate_with => 'orders');
CREATE TABLE small (k int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('small', ARRAY[:'srv1'], 4);
INSERT INTO orders SELECT g, g % 7 FROM generate_series(1, 4000) g;
INSERT INTO items SELECT g / 4, g % 5 FROM generate_series(1, 16000) g
	WHERE satisfies_hash_partition('orders'::regclass, 8, 0, g / 4)
	   OR satisfies_hash_partition('orders'::regclass, 8, 1, g / 4)
	   OR g % 3 = 0;
INSERT INTO small SELECT g FROM generate_series(1, 2000) g;
SELECT colojoin.add_replica(leaf, :'srv2') FROM colojoin.shards
WHERE table_name = 'small'::regclass AND partition_class = 1;
SELECT node_sql(p, 'ANALYZE; SELECT ''analyzed''')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;

-- the class sizes the plans weigh, per node
SELECT node, count(*) AS placements FROM colojoin.shards
WHERE table_name::text IN ('orders', 'items', 'small') GROUP BY 1 ORDER BY 1;

-- onto node 3 (and between the others): classes of both groups, each
-- once, none onto a node that holds a placement of it already
SELECT * FROM colojoin.rebalance_plan(ARRAY[:'srv1', :'srv2', :'srv3']);
SELECT count(*) AS moves, count(DISTINCT (table_name, partition_class)) AS classes,
	   count(*) FILTER (WHERE to_server::text = :'srv3') AS to_node3
FROM colojoin.rebalance_plan(ARRAY[:'srv1', :'srv2', :'srv3']);
-- the default: the servers that hold placements now
SELECT * FROM colojoin.rebalance_plan();
-- by bytes: the same kind of plan
SELECT count(*) > 0 AS moves, count(DISTINCT (table_name, partition_class)) = count(*) AS each_once
FROM colojoin.rebalance_plan(ARRAY[:'srv1', :'srv2', :'srv3'], 'bytes');
-- draining node 1: everything of it goes, small's class 1 not to node 2,
-- which has its replica
SELECT * FROM colojoin.rebalance_plan(ARRAY[:'srv2', :'srv3'], drain => :'srv1');
-- every class placed on node 1 moves once: 4 of orders and items, 4 of small
SELECT count(*) AS moves, count(*) FILTER (WHERE from_server::text <> :'srv1') AS from_elsewhere
FROM colojoin.rebalance_plan(ARRAY[:'srv2', :'srv3'], drain => :'srv1');
-- nowhere to go: with node 2 alone left, small's class 1 (replica there)
SELECT * FROM colojoin.rebalance_plan(ARRAY[:'srv2'], drain => :'srv1');

-- errors
SELECT * FROM colojoin.rebalance_plan(ARRAY[:'srv1'], 'pages');
SELECT * FROM colojoin.rebalance_plan(ARRAY['cj_rb_nowhere']);
SELECT * FROM colojoin.rebalance_plan(ARRAY[NULL::name]);
SELECT colojoin.rebalance(ARRAY[:'srv1', :'srv2'], mode => 'fast');
-- nothing unfinished to resume or cancel
SELECT colojoin.rebalance_resume() IS NULL AS nothing_to_resume;
SELECT colojoin.rebalance_cancel() AS cancelled;

-- clean up
SELECT colojoin.drop_shards('orders') + colojoin.drop_shards('items') + colojoin.drop_shards('small') AS dropped;
SELECT node_sql(p, 'DROP SCHEMA IF EXISTS cj_rb_s CASCADE; SELECT ''gone''')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
DROP SCHEMA cj_rb_s CASCADE;
\i sql/include/three_nodes_end.sql
