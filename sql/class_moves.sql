--
-- class_moves: colojoin.move_class moves a partition class (the partitions
-- with the same bounds of every table colocated with the given one, on the
-- class's node) to another server, 'blocking' (COPY between the nodes in
-- the caller's transaction) or 'online' (the nodes' logical replication,
-- then a short switch); a class on another node, or of a table partitioned
-- otherwise, stays.  After every move the joins are still colocated and
-- every answer equals the same query over plain local tables fed the same
-- statements.  Also: the remote tables' indexes, keys, comments,
-- privileges and row security come along; a move rolled back with its
-- transaction; moves between servers of one database (no copy); replicas;
-- range partitions; quoted names; keeping the old tables; the errors; and
-- what a failed online move leaves (nothing, once it cleaned up).
--
\set prefix cj_mv
\i sql/include/three_nodes_begin.sql
SET colojoin.remote_size_lifetime = 0;
SET colojoin.progress_notice_interval = -1;

CREATE SCHEMA cj_mv_s;
CREATE SCHEMA cj_mv_l;
SET search_path = cj_mv_s, public;

-- a second server reaching node 1's database
CREATE SERVER cj_mv_n1b FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node1_port', dbname 'colojoin_regress');
CREATE USER MAPPING FOR CURRENT_USER SERVER cj_mv_n1b;

-- what a node holds: node_sql(node, query) runs a one-column query there
CREATE FUNCTION node_sql(port text, query text) RETURNS SETOF text
LANGUAGE sql AS $$
	SELECT x FROM dblink(format('host=127.0.0.1 port=%s dbname=colojoin_regress', port), query) AS t(x text)
$$;

-- orders and "Line Items" colocated (hash 4 on nodes 1 and 2), customer
-- hash 4 placed the other way round: its class 0 is on node 2
CREATE TABLE orders (o_id int NOT NULL, o_cust int, "Note" text) PARTITION BY HASH (o_id);
SELECT colojoin.create_shards('orders', ARRAY[:'srv1', :'srv2'], 4);
CREATE TABLE "Line Items" ("Order" int, qty int, price numeric) PARTITION BY HASH ("Order");
SELECT colojoin.create_shards('"Line Items"', NULL, colocate_with => 'orders');
CREATE TABLE customer (c_id int, c_name text) PARTITION BY HASH (c_id);
SELECT colojoin.create_shards('customer', ARRAY[:'srv2', :'srv1'], 4);

CREATE TABLE cj_mv_l.orders (o_id int NOT NULL, o_cust int, "Note" text);
CREATE TABLE cj_mv_l."Line Items" ("Order" int, qty int, price numeric);
CREATE TABLE cj_mv_l.customer (c_id int, c_name text);
INSERT INTO cj_mv_l.orders SELECT g, g % 50, CASE WHEN g % 9 = 0 THEN NULL ELSE 'note ' || g END
FROM generate_series(1, 800) g;
INSERT INTO cj_mv_l."Line Items" SELECT CASE WHEN g % 97 = 0 THEN NULL ELSE g / 3 END, g % 11, g * 1.5
FROM generate_series(1, 2400) g;
INSERT INTO cj_mv_l.customer SELECT g, 'cust ' || g FROM generate_series(0, 60) g;
INSERT INTO orders SELECT * FROM cj_mv_l.orders;
INSERT INTO "Line Items" SELECT * FROM cj_mv_l."Line Items";
INSERT INTO customer SELECT * FROM cj_mv_l.customer;

-- the node's own table of orders' class 0 has an owner of its own, a key,
-- an index, a comment, a column privilege and row security with a policy
-- (the owner's role exists on every node, as roles must for a move)
SELECT node_sql(p, 'CREATE ROLE cj_mv_keeper; SELECT ''made''')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
SELECT node_sql(:'node1_port', $$
	ALTER TABLE cj_mv_s.orders_p0 OWNER TO cj_mv_keeper;
	ALTER TABLE cj_mv_s.orders_p0 ADD PRIMARY KEY (o_id);
	CREATE INDEX orders_p0_cust ON cj_mv_s.orders_p0 (o_cust) WHERE o_cust > 0;
	COMMENT ON TABLE cj_mv_s.orders_p0 IS 'class zero';
	GRANT SELECT ("Note") ON cj_mv_s.orders_p0 TO PUBLIC;
	ALTER TABLE cj_mv_s.orders_p0 ENABLE ROW LEVEL SECURITY;
	CREATE POLICY everyone ON cj_mv_s.orders_p0 USING (o_cust >= 0 OR o_cust IS NULL);
	ALTER TABLE cj_mv_s.orders_p0 ALTER COLUMN o_cust SET STATISTICS 321;
	SELECT 'ok'$$);

-- same_rows(): every table and a few joins equal their twins
CREATE FUNCTION same_rows() RETURNS TABLE (what text, same boolean)
LANGUAGE sql AS $$
	SELECT q, rows_of(q, 'cj_mv_s') = rows_of(q, 'cj_mv_l')
	FROM unnest(ARRAY[
		'SELECT * FROM orders',
		'SELECT * FROM "Line Items"',
		'SELECT * FROM customer',
		'SELECT o_id, "Note", qty, price FROM orders JOIN "Line Items" ON "Order" = o_id',
		'SELECT o_cust, count(*), sum(price) FROM orders LEFT JOIN "Line Items" ON "Order" = o_id GROUP BY o_cust',
		'SELECT c_name, count(*) FROM customer JOIN orders ON o_cust = c_id GROUP BY c_name'
	]) q
$$;

SELECT table_name, partition_class, node, is_replica FROM colojoin.shards
WHERE table_name::text IN ('orders', '"Line Items"', 'customer') ORDER BY 1, 2, 3;

-- blocking: class 0 of orders and "Line Items" (on node 1) to node 3;
-- customer's class 0 is on node 2 and stays
SELECT colojoin.move_class('orders', 0, :'srv3', 'blocking');
SELECT table_name, partition_class, node FROM colojoin.shards
WHERE table_name::text IN ('orders', '"Line Items"', 'customer') ORDER BY 1, 2, 3;
SELECT * FROM same_rows();
EXPLAIN (COSTS OFF) SELECT count(*) FROM orders JOIN "Line Items" ON "Order" = o_id;

-- the node's table came along whole; the old one is gone
SELECT node_sql(:'node3_port', $$
	SELECT string_agg(pg_get_indexdef(indexrelid), '; ' ORDER BY 1) FROM pg_index
	WHERE indrelid = 'cj_mv_s.orders_p0'::regclass
	UNION ALL SELECT obj_description('cj_mv_s.orders_p0'::regclass)
	UNION ALL SELECT relrowsecurity || ' ' || coalesce(relacl::text, 'default privileges') FROM pg_class WHERE oid = 'cj_mv_s.orders_p0'::regclass
	UNION ALL SELECT attacl::text || ' ' || (SELECT attstattarget FROM pg_attribute
		WHERE attrelid = 'cj_mv_s.orders_p0'::regclass AND attname = 'o_cust')
		FROM pg_attribute WHERE attrelid = 'cj_mv_s.orders_p0'::regclass AND attname = 'Note'
	UNION ALL SELECT polname || ': ' || pg_get_expr(polqual, polrelid) FROM pg_policy
	WHERE polrelid = 'cj_mv_s.orders_p0'::regclass
	UNION ALL SELECT 'owner ' || pg_get_userbyid(relowner) FROM pg_class WHERE oid = 'cj_mv_s.orders_p0'::regclass$$);
SELECT node_sql(:'node1_port', $$SELECT string_agg(relname, ', ' ORDER BY relname) FROM pg_class
	WHERE relnamespace = 'cj_mv_s'::regnamespace AND relkind = 'r'$$);

-- writes reach the new placement
INSERT INTO orders VALUES (1000, 7, 'new'), (1004, 7, 'new too');
INSERT INTO cj_mv_l.orders VALUES (1000, 7, 'new'), (1004, 7, 'new too');
UPDATE orders SET "Note" = 'changed' WHERE o_id % 4 = 0;
UPDATE cj_mv_l.orders SET "Note" = 'changed' WHERE o_id % 4 = 0;
DELETE FROM "Line Items" WHERE qty = 3;
DELETE FROM cj_mv_l."Line Items" WHERE qty = 3;
SELECT * FROM same_rows();

-- online: class 1 (node 2) to node 3, and writes in the same transaction
BEGIN;
SELECT colojoin.move_class('orders', 1, :'srv3');
INSERT INTO "Line Items" SELECT o_id, 99, 1.25 FROM orders WHERE o_id < 40;
INSERT INTO cj_mv_l."Line Items" SELECT o_id, 99, 1.25 FROM cj_mv_l.orders WHERE o_id < 40;
COMMIT;
SELECT table_name, partition_class, node FROM colojoin.shards
WHERE table_name::text IN ('orders', '"Line Items"') ORDER BY 1, 2, 3;
SELECT * FROM same_rows();
-- replication is over on both nodes
SELECT node_sql(:'node2_port', $$SELECT count(*)::text FROM pg_publication
	UNION ALL SELECT count(*)::text FROM pg_replication_slots$$);
SELECT node_sql(:'node3_port', $$SELECT count(*)::text FROM pg_subscription$$);

-- a move rolled back with its transaction leaves the class where it was;
-- an online one leaves its target tables, which move_cleanup removes
BEGIN;
SELECT colojoin.move_class('orders', 3, :'srv3', 'blocking');
ROLLBACK;
BEGIN;
SELECT colojoin.move_class('orders', 3, :'srv3', 'online');
ROLLBACK;
SELECT table_name, partition_class, node FROM colojoin.shards
WHERE table_name::text = 'orders' ORDER BY 1, 2, 3;
SELECT colojoin.move_cleanup();
SELECT colojoin.move_cleanup();
SELECT node_sql(:'node3_port', $$SELECT string_agg(relname, ', ' ORDER BY relname) FROM pg_class
	WHERE relnamespace = 'cj_mv_s'::regnamespace AND relkind = 'r'$$);
SELECT * FROM same_rows();

-- servers of one database: the leaves are repointed, nothing is copied
SELECT colojoin.move_class('orders', 2, 'cj_mv_n1b');
SELECT table_name, partition_class, node FROM colojoin.shards
WHERE table_name::text IN ('orders', '"Line Items"') AND partition_class = 2 ORDER BY 1, 2, 3;
SELECT * FROM same_rows();

-- a replica placement moves when named by from_server
SELECT colojoin.add_replica(leaf, :'srv2') FROM colojoin.shards
WHERE table_name::text IN ('orders', '"Line Items"') AND partition_class = 2;
SELECT colojoin.move_class('orders', 2, :'srv3', 'online', from_server => :'srv2');
SELECT table_name, partition_class, node, is_replica FROM colojoin.shards
WHERE table_name::text IN ('orders', '"Line Items"') AND partition_class = 2 ORDER BY 1, 2, 3;
SELECT * FROM same_rows();

-- errors
SELECT colojoin.move_class('orders', 4, :'srv3');
SELECT colojoin.move_class('orders', -1, :'srv3');
SELECT colojoin.move_class('orders', 0, :'srv3');
SELECT colojoin.move_class('orders', 0, :'srv1', 'fast');
SELECT colojoin.move_class('orders', 0, 'no_such_server');
SELECT colojoin.move_class('cj_mv_l.orders', 0, :'srv3');
SELECT colojoin.move_class('orders', 0, NULL);
-- class 2 has a replica on node 3: its primary cannot go there
SELECT colojoin.move_class('orders', 2, :'srv3', 'blocking');
-- a table of that name on the target already
SELECT node_sql(:'node1_port', $$CREATE TABLE cj_mv_s.orders_p3 (x int); SELECT 'made'$$);
SELECT colojoin.move_class('orders', 3, :'srv1', 'online');
SELECT colojoin.move_class('orders', 3, :'srv1', 'blocking');
SELECT node_sql(:'node1_port', $$DROP TABLE cj_mv_s.orders_p3; SELECT 'dropped'$$);

-- an online move that fails half way (the target has no role to own the
-- table) removes what it made
SELECT node_sql(:'node2_port', $$CREATE ROLE cj_mv_owner; ALTER TABLE cj_mv_s."Line Items_p3" OWNER TO cj_mv_owner; SELECT 'owned'$$);
SELECT colojoin.move_class('orders', 3, :'srv1', 'online');
SELECT colojoin.move_cleanup();
SELECT node_sql(:'node1_port', $$SELECT count(*)::text FROM pg_class WHERE relname IN ('orders_p3', 'Line Items_p3')
	UNION ALL SELECT count(*)::text FROM pg_subscription$$);
SELECT node_sql(:'node2_port', $$SELECT count(*)::text FROM pg_publication
	UNION ALL SELECT count(*)::text FROM pg_replication_slots$$);
SELECT node_sql(:'node2_port', $$ALTER TABLE cj_mv_s."Line Items_p3" OWNER TO CURRENT_USER; DROP ROLE cj_mv_owner; SELECT 'back'$$);
SELECT * FROM same_rows();

-- keeping the old tables
SET colojoin.move_keep_source = on;
SELECT colojoin.move_class('orders', 3, :'srv1', 'blocking');
RESET colojoin.move_keep_source;
SELECT node_sql(:'node2_port', $$SELECT string_agg(relname, ', ' ORDER BY relname) FROM pg_class
	WHERE relnamespace = 'cj_mv_s'::regnamespace AND relkind = 'r'$$);
SELECT * FROM same_rows();

-- range partitions made by hand, two tables partitioned alike
SELECT node_sql(:'node1_port', $$CREATE TABLE cj_mv_s.ev_2020 (day date, k int, v text);
	CREATE TABLE cj_mv_s.evn_2020 (day date, note text); SELECT 'made'$$);
SELECT node_sql(:'node2_port', $$CREATE TABLE cj_mv_s.ev_2021 (day date, k int, v text);
	CREATE TABLE cj_mv_s.evn_2021 (day date, note text); SELECT 'made'$$);
CREATE TABLE events (day date, k int, v text) PARTITION BY RANGE (day);
CREATE FOREIGN TABLE ev_2020 PARTITION OF events FOR VALUES FROM ('2020-01-01') TO ('2021-01-01')
	SERVER :"srv1" OPTIONS (schema_name 'cj_mv_s');
CREATE FOREIGN TABLE ev_2021 PARTITION OF events FOR VALUES FROM ('2021-01-01') TO ('2022-01-01')
	SERVER :"srv2" OPTIONS (schema_name 'cj_mv_s');
CREATE TABLE event_notes (day date, note text) PARTITION BY RANGE (day);
CREATE FOREIGN TABLE evn_2020 PARTITION OF event_notes FOR VALUES FROM ('2020-01-01') TO ('2021-01-01')
	SERVER :"srv1" OPTIONS (schema_name 'cj_mv_s');
CREATE FOREIGN TABLE evn_2021 PARTITION OF event_notes FOR VALUES FROM ('2021-01-01') TO ('2022-01-01')
	SERVER :"srv2" OPTIONS (schema_name 'cj_mv_s');
INSERT INTO events SELECT DATE '2020-01-01' + g, g, 'v' || g FROM generate_series(0, 700, 7) g;
INSERT INTO event_notes SELECT DATE '2020-01-01' + g, 'n' || g FROM generate_series(0, 700, 5) g;
SELECT colojoin.move_class('events', 0, :'srv3', 'online');
SELECT table_name, partition_class, node FROM colojoin.shards
WHERE table_name::text IN ('events', 'event_notes') ORDER BY 1, 2, 3;
SELECT count(*), sum(k) FROM events JOIN event_notes USING (day);
SELECT count(*), sum(g) FROM generate_series(0, 700, 7) g WHERE g % 5 = 0;
EXPLAIN (COSTS OFF) SELECT count(*) FROM events JOIN event_notes USING (day);

-- splitting: every class of orders and "Line Items" to modulus 8.  Not
-- while a class has a replica; not to a modulus that is no multiple; one
-- class in place first (moduli 4 and 8 side by side join colocated), one
-- online onto two other nodes, then the rest onto the servers given
SELECT colojoin.split_shards('orders', 8);
SELECT colojoin.drop_replica(leaf, node) FROM colojoin.shards
WHERE table_name::text IN ('orders', '"Line Items"') AND is_replica;
SELECT colojoin.split_shards('orders', 6);
SELECT colojoin.split_shards('events', 4);
SELECT colojoin.split_shards('orders', 8, partition_class => 0);
SELECT table_name, bound, node FROM colojoin.shards
WHERE table_name::text IN ('orders', '"Line Items"') ORDER BY 1, 2, 3;
SELECT * FROM same_rows();
EXPLAIN (COSTS OFF) SELECT count(*) FROM orders JOIN "Line Items" ON "Order" = o_id;
-- online: each new class on a node of its own, none the old one's
SELECT colojoin.split_shards('orders', 8, mode => 'online');
SELECT colojoin.split_shards('orders', 8, ARRAY[:'srv3'], partition_class => 0, mode => 'online');
SELECT colojoin.split_shards('orders', 8, mode => 'sideways');
SELECT bound, node FROM colojoin.shards WHERE table_name = 'orders'::regclass AND partition_class = 0;
SELECT colojoin.split_shards('orders', 8, ARRAY[:'srv1', :'srv2'], partition_class => 0, mode => 'online');
SELECT table_name, bound, node FROM colojoin.shards
WHERE table_name::text IN ('orders', '"Line Items"') ORDER BY 1, 2, 3;
SELECT * FROM same_rows();
SELECT node_sql(p, $$SELECT (SELECT count(*) FROM pg_subscription) + (SELECT count(*) FROM pg_publication)
	+ (SELECT count(*) FROM pg_replication_slots) + (SELECT count(*) FROM pg_class WHERE relname LIKE 'colojoin_split%')$$)
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
SELECT colojoin.split_shards('"Line Items"', 8, ARRAY[:'srv1', :'srv2', :'srv3']);
SELECT table_name, bound, node FROM colojoin.shards
WHERE table_name::text IN ('orders', '"Line Items"') ORDER BY 1, 2, 3;
SELECT * FROM same_rows();
EXPLAIN (COSTS OFF) SELECT count(*) FROM orders JOIN "Line Items" ON "Order" = o_id;
-- the split tables keep their key and index, renamed on the node
SELECT node_sql(:'node3_port', $$SELECT string_agg(c.relname || ':' || i.relname, ', ' ORDER BY 1)
	FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid
	WHERE c.relnamespace = 'cj_mv_s'::regnamespace$$);
-- writes route to the new partitions
INSERT INTO orders SELECT g, g % 5, 'split' FROM generate_series(2000, 2100) g;
INSERT INTO cj_mv_l.orders SELECT g, g % 5, 'split' FROM generate_series(2000, 2100) g;
DELETE FROM "Line Items" WHERE qty = 5;
DELETE FROM cj_mv_l."Line Items" WHERE qty = 5;
SELECT * FROM same_rows();

-- clean up
DROP TABLE events, event_notes;
SELECT colojoin.drop_shards('orders') + colojoin.drop_shards('"Line Items"') + colojoin.drop_shards('customer') AS dropped;
SELECT node_sql(p, 'DROP SCHEMA IF EXISTS cj_mv_s CASCADE; DROP ROLE cj_mv_keeper; SELECT ''gone''')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
DROP SCHEMA cj_mv_s, cj_mv_l CASCADE;
DROP SERVER cj_mv_n1b CASCADE;
\i sql/include/three_nodes_end.sql
