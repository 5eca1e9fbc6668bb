--
-- writes: INSERT, UPDATE, DELETE and COPY of sharded tables through
-- colojoin's own write path.  Every write is also made to plain local
-- twins holding the same rows; after each step the sharded table must hold
-- exactly what its twin holds (wr.same), and the placements of replicated
-- leaves must hold the same rows as their primaries (wr.placements_agree).
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS colojoin CASCADE;
CREATE EXTENSION IF NOT EXISTS dblink;
DROP SCHEMA IF EXISTS wr CASCADE;
RESET client_min_messages;
-- The plans asserted here are those of partitions whose size the planner
-- does not know (colojoin.remote_size_lifetime = 0; suite remote_sizes
-- covers the sizes read from the nodes).
SET colojoin.remote_size_lifetime = 0;

\getenv node1_port CJ_NODE1_PORT
\getenv node2_port CJ_NODE2_PORT
\getenv node3_port CJ_NODE3_PORT
\getenv coord_port PGPORT

-- what an interrupted earlier run may have left on the nodes
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
	'SET client_min_messages = warning; DROP SCHEMA IF EXISTS wr, wr_shard CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;

CREATE SERVER wr_n1 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node1_port', dbname 'colojoin_regress');
CREATE SERVER wr_n2 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node2_port', dbname 'colojoin_regress');
CREATE SERVER wr_n3 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node3_port', dbname 'colojoin_regress');
CREATE USER MAPPING FOR CURRENT_USER SERVER wr_n1;
CREATE USER MAPPING FOR CURRENT_USER SERVER wr_n2;
CREATE USER MAPPING FOR CURRENT_USER SERVER wr_n3;

CREATE SCHEMA wr;
SET search_path = wr, public;

-- a and its twin hold the same rows: 'same (n rows)', else what differs
CREATE FUNCTION same(a regclass, b regclass) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	only_a bigint;
	only_b bigint;
	n bigint;
BEGIN
	EXECUTE format('SELECT count(*) FROM (SELECT * FROM %s EXCEPT ALL SELECT * FROM %s) x', a, b) INTO only_a;
	EXECUTE format('SELECT count(*) FROM (SELECT * FROM %s EXCEPT ALL SELECT * FROM %s) x', b, a) INTO only_b;
	EXECUTE format('SELECT count(*) FROM %s', a) INTO n;
	IF only_a = 0 AND only_b = 0 THEN
		RETURN format('same (%s rows)', n);
	END IF;
	RETURN format('DIFFERENT: %s rows only in %s, %s only in %s', only_a, a, only_b, b);
END $$;

-- every placement of every leaf of t holds the same rows as its primary
\i sql/include/placements_agree.sql

-- how many transactions of this coordinator are left prepared on the nodes
CREATE FUNCTION prepared_left() RETURNS bigint LANGUAGE sql AS $$
	SELECT sum(q.n) FROM pg_foreign_server fs,
		LATERAL (SELECT option_value AS port FROM pg_options_to_table(fs.srvoptions)
				 WHERE option_name = 'port') o,
		LATERAL dblink(format('host=127.0.0.1 port=%s dbname=colojoin_regress', o.port),
			'SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE ''colojoin\_%''') AS q(n bigint)
	WHERE fs.srvname LIKE 'wr\_n_'
$$;

-- the top of a statement's plan, and for colojoin's writes how they run
CREATE FUNCTION top_node(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	line text;
	result text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		IF result IS NULL THEN
			result := line;
		ELSIF line ~ '^\s*(Routing|Statements):' THEN
			result := result || ', ' || split_part(trim(line), ':', 1);
		END IF;
	END LOOP;
	RETURN result;
END $$;

-- orders (hash 6 over three nodes), lines colocated with it, rollup too
CREATE TABLE orders (o_id int, o_cust int, o_total numeric(12,2), o_note text)
	PARTITION BY HASH (o_id);
SELECT colojoin.create_shards('orders', ARRAY['wr_n1', 'wr_n2', 'wr_n3'], 6);
CREATE TABLE lines (l_order int, l_no int, l_qty int, l_price numeric(10,2))
	PARTITION BY HASH (l_order);
SELECT colojoin.create_shards('lines', NULL, colocate_with => 'orders');
CREATE TABLE rollup (r_order int, r_sum numeric(14,2), r_n bigint)
	PARTITION BY HASH (r_order);
SELECT colojoin.create_shards('rollup', NULL, colocate_with => 'orders');
CREATE TABLE orders_l (o_id int, o_cust int, o_total numeric(12,2), o_note text);
CREATE TABLE lines_l (l_order int, l_no int, l_qty int, l_price numeric(10,2));
CREATE TABLE rollup_l (r_order int, r_sum numeric(14,2), r_n bigint);

-- ================================================================
-- INSERT: VALUES, SELECT, NULL keys, RETURNING
-- ================================================================
EXPLAIN (COSTS OFF) INSERT INTO orders VALUES (1, 1, 1.5, 'a');
INSERT INTO orders VALUES (1, 10, 1.50, 'first'), (2, 20, NULL, E'tab\there'),
	(NULL, 30, 3.00, 'null key'), (3, NULL, 0, E'back\\slash and\nnewline');
INSERT INTO orders_l VALUES (1, 10, 1.50, 'first'), (2, 20, NULL, E'tab\there'),
	(NULL, 30, 3.00, 'null key'), (3, NULL, 0, E'back\\slash and\nnewline');
INSERT INTO orders SELECT g, g % 17, g * 1.25, 'o' || g FROM generate_series(4, 3000) g;
INSERT INTO orders_l SELECT g, g % 17, g * 1.25, 'o' || g FROM generate_series(4, 3000) g;
INSERT INTO lines SELECT o, n, (o * n) % 7, n * 0.5 FROM generate_series(1, 3000) o, generate_series(1, 4) n WHERE o % 5 <> 0;
INSERT INTO lines_l SELECT o, n, (o * n) % 7, n * 0.5 FROM generate_series(1, 3000) o, generate_series(1, 4) n WHERE o % 5 <> 0;
SELECT same('orders', 'orders_l'), same('lines', 'lines_l');
-- nothing to insert
INSERT INTO orders SELECT * FROM orders_l WHERE false;
-- RETURNING, computed from the rows as the nodes stored them
INSERT INTO orders (o_id, o_total) VALUES (5001, 7), (5002, 8)
	RETURNING o_id * 2 AS twice, o_total, o_cust IS NULL AS no_cust, o_note;
INSERT INTO orders_l (o_id, o_total) VALUES (5001, 7), (5002, 8);
-- the rows of a SELECT over sharded tables (read through colojoin)
EXPLAIN (COSTS OFF) INSERT INTO rollup SELECT l_order, sum(l_qty * l_price), count(*) FROM lines GROUP BY l_order;
INSERT INTO rollup SELECT l_order, sum(l_qty * l_price), count(*) FROM lines GROUP BY l_order;
INSERT INTO rollup_l SELECT l_order, sum(l_qty * l_price), count(*) FROM lines_l GROUP BY l_order;
SELECT same('rollup', 'rollup_l');
-- colocated with the target on its key: each node inserts what it selects
CREATE TABLE rollup2 (r_order int, r_sum numeric, r_n bigint) PARTITION BY HASH (r_order);
SELECT colojoin.create_shards('rollup2', NULL, colocate_with => 'orders');
CREATE TABLE rollup2_l (r_order int, r_sum numeric, r_n bigint);
EXPLAIN (COSTS OFF) INSERT INTO rollup2
	SELECT o_id, sum(l_qty * l_price), count(*) FROM orders JOIN lines ON l_order = o_id
	WHERE o_cust < 9 GROUP BY o_id;
INSERT INTO rollup2
	SELECT o_id, sum(l_qty * l_price), count(*) FROM orders JOIN lines ON l_order = o_id
	WHERE o_cust < 9 GROUP BY o_id;
INSERT INTO rollup2_l
	SELECT o_id, sum(l_qty * l_price), count(*) FROM orders_l JOIN lines_l ON l_order = o_id
	WHERE o_cust < 9 GROUP BY o_id;
-- a left join: the preserved side's key decides
INSERT INTO rollup2 SELECT o_id, l_price, 0 FROM orders LEFT JOIN lines ON l_order = o_id AND l_no = 9 WHERE o_cust = 2;
INSERT INTO rollup2_l SELECT o_id, l_price, 0 FROM orders_l LEFT JOIN lines_l ON l_order = o_id AND l_no = 9 WHERE o_cust = 2;
-- the nullable side's key does not: its rows are routed
SELECT top_node('INSERT INTO rollup2 SELECT o_id, l_price, 0 FROM orders LEFT JOIN lines ON l_order = o_id AND l_no = 9');
SELECT top_node('INSERT INTO rollup2 SELECT l_order, o_total, 1 FROM orders LEFT JOIN lines ON l_order = o_id AND l_no = 9');
INSERT INTO rollup2 SELECT l_order, o_total, 1 FROM orders LEFT JOIN lines ON l_order = o_id AND l_no = 9 WHERE o_cust = 4;
INSERT INTO rollup2_l SELECT l_order, o_total, 1 FROM orders_l LEFT JOIN lines_l ON l_order = o_id AND l_no = 9 WHERE o_cust = 4;
-- a single table on its key: on the nodes; a key that is not the target's: routed
SELECT top_node('INSERT INTO rollup2 SELECT l_order, l_price, l_no FROM lines WHERE l_no = 3');
SELECT top_node('INSERT INTO rollup2 SELECT l_no, l_price, l_order FROM lines WHERE l_order < 50');
INSERT INTO rollup2 SELECT l_order, l_price, l_no FROM lines WHERE l_no = 3;
INSERT INTO rollup2_l SELECT l_order, l_price, l_no FROM lines_l WHERE l_no = 3;
INSERT INTO rollup2 SELECT l_no, l_price, l_order FROM lines WHERE l_order < 50;
INSERT INTO rollup2_l SELECT l_no, l_price, l_order FROM lines_l WHERE l_order < 50;
SELECT same('rollup2', 'rollup2_l');
SELECT count(*) AS misplaced FROM rollup2 r
	WHERE NOT satisfies_hash_partition('rollup2'::regclass, 6, substr(tableoid::regclass::text, 10)::int, r_order);
-- the rows go where PostgreSQL's own partitioning puts them
SELECT count(*) AS misplaced FROM (
	SELECT tableoid::regclass::text AS leaf, o_id FROM orders
	EXCEPT
	SELECT 'orders_p' || r, o_id FROM orders_l, generate_series(0, 5) r
	WHERE satisfies_hash_partition('orders'::regclass, 6, r, o_id)) x;

-- ================================================================
-- UPDATE and DELETE, alone and joined with colocated tables
-- ================================================================
EXPLAIN (COSTS OFF) UPDATE orders SET o_total = o_total * 2 WHERE o_cust = 3;
UPDATE orders SET o_total = o_total * 2 WHERE o_cust = 3;
UPDATE orders_l SET o_total = o_total * 2 WHERE o_cust = 3;
-- plan-time pruning: one leaf
EXPLAIN (COSTS OFF) UPDATE orders SET o_note = 'seven' WHERE o_id = 7;
UPDATE orders SET o_note = 'seven' WHERE o_id = 7 RETURNING o_id, o_note, o_total;
UPDATE orders_l SET o_note = 'seven' WHERE o_id = 7;
-- UPDATE ... FROM a colocated table: one statement per leaf, on its node
EXPLAIN (COSTS OFF, VERBOSE) UPDATE orders o SET o_total = o.o_total + l.l_price
	FROM lines l WHERE l.l_order = o.o_id AND l.l_no = 2 AND o.o_id < 10;
UPDATE orders o SET o_total = o.o_total + l.l_price, o_note = o_note || '+'
	FROM lines l WHERE l.l_order = o.o_id AND l.l_no = 2;
UPDATE orders_l o SET o_total = o.o_total + l.l_price, o_note = o_note || '+'
	FROM lines_l l WHERE l.l_order = o.o_id AND l.l_no = 2;
SELECT same('orders', 'orders_l');
-- DELETE ... USING, RETURNING values of both tables
DELETE FROM lines l USING orders o WHERE o.o_id = l.l_order AND o.o_cust = 5 AND l.l_no = 4
	RETURNING l.l_no, o.o_cust, o.o_cust * 2 + l.l_no AS e;
DELETE FROM lines_l l USING orders_l o WHERE o.o_id = l.l_order AND o.o_cust = 5 AND l.l_no = 4;
SELECT same('lines', 'lines_l');
-- nothing matches
UPDATE orders SET o_total = 0 WHERE o_id = -1;
DELETE FROM orders WHERE o_id IS NULL AND o_cust = -1;
-- NULL keys are rows like the others
UPDATE orders SET o_note = 'was null' WHERE o_id IS NULL;
UPDATE orders_l SET o_note = 'was null' WHERE o_id IS NULL;
SELECT same('orders', 'orders_l');
-- an UPDATE that moves rows between leaves moves them, as PostgreSQL
-- moves rows between plain partitions (row by row, row_writes.c)
UPDATE orders SET o_id = o_id + 1 WHERE o_id = 8;
UPDATE orders_l SET o_id = o_id + 1 WHERE o_id = 8;
SELECT same('orders', 'orders_l');
UPDATE orders SET o_id = o_id - 1 WHERE o_id = 9 AND o_cust = (SELECT o_cust FROM orders_l WHERE o_id = 9 LIMIT 1) RETURNING o_id;
UPDATE orders_l SET o_id = o_id - 1 WHERE o_id = 9 AND o_cust = (SELECT o_cust FROM orders_l WHERE o_id = 9 LIMIT 1);
-- assigning the key its own value is no change of key
UPDATE orders SET o_id = o_id, o_cust = 99 WHERE o_id = 8;
UPDATE orders_l SET o_id = o_id, o_cust = 99 WHERE o_id = 8;
-- what colojoin does not send (a subquery) is PostgreSQL's, and still right
SELECT top_node('UPDATE orders SET o_cust = 1 WHERE o_id IN (SELECT r_order FROM rollup WHERE r_n > 3) AND o_id < 20');
UPDATE orders SET o_cust = 1 WHERE o_id IN (SELECT r_order FROM rollup WHERE r_n > 3) AND o_id < 20;
UPDATE orders_l SET o_cust = 1 WHERE o_id IN (SELECT r_order FROM rollup_l WHERE r_n > 3) AND o_id < 20;
SELECT same('orders', 'orders_l');
-- EXPLAIN ANALYZE counts the rows written on each node
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) DELETE FROM rollup WHERE r_order % 100 = 1;
DELETE FROM rollup_l WHERE r_order % 100 = 1;
SELECT same('rollup', 'rollup_l');

-- ================================================================
-- ON CONFLICT (unique indexes on the nodes' leaves)
-- ================================================================
CREATE TABLE kv (k int NOT NULL, v text, n int DEFAULT 0) PARTITION BY HASH (k);
SELECT colojoin.create_shards('kv', ARRAY['wr_n1', 'wr_n2', 'wr_n3'], 4);
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p), $$
	DO $d$ DECLARE t text; BEGIN
		FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'wr' AND tablename LIKE 'kv\_p%' LOOP
			EXECUTE format('CREATE UNIQUE INDEX ON wr.%I (k)', t);
		END LOOP; END $d$ $$)
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
CREATE TABLE kv_l (k int NOT NULL PRIMARY KEY, v text, n int DEFAULT 0);
INSERT INTO kv SELECT g, 'v' || g FROM generate_series(1, 100) g;
INSERT INTO kv_l SELECT g, 'v' || g FROM generate_series(1, 100) g;
INSERT INTO kv VALUES (5, 'again'), (500, 'new') ON CONFLICT DO NOTHING;
INSERT INTO kv_l VALUES (5, 'again'), (500, 'new') ON CONFLICT DO NOTHING;
INSERT INTO kv SELECT g, 'up' || g FROM generate_series(95, 105) g
	ON CONFLICT (k) DO UPDATE SET v = excluded.v || '/' || kv.v, n = kv.n + 1 WHERE kv.k <> 100
	RETURNING k, v, n;
INSERT INTO kv_l SELECT g, 'up' || g FROM generate_series(95, 105) g
	ON CONFLICT (k) DO UPDATE SET v = excluded.v || '/' || kv_l.v, n = kv_l.n + 1 WHERE kv_l.k <> 100;
SELECT same('kv', 'kv_l');
-- a conflict target without the partition key is refused
INSERT INTO kv VALUES (1, 'x') ON CONFLICT (v) DO NOTHING;
-- a unique violation on a node rolls the whole statement back
INSERT INTO kv VALUES (1000, 'ok'), (1, 'duplicate');
SELECT same('kv', 'kv_l');

-- ================================================================
-- prepared statements (custom and generic plans), PL/pgSQL
-- ================================================================
PREPARE ins(int, text) AS INSERT INTO kv VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = $2 || '!';
PREPARE ins_l(int, text) AS INSERT INTO kv_l VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = $2 || '!';
PREPARE upd(int, int) AS UPDATE kv SET n = n + $2 WHERE k = $1;
PREPARE upd_l(int, int) AS UPDATE kv_l SET n = n + $2 WHERE k = $1;
EXECUTE ins(201, 'a'); EXECUTE ins(202, 'b'); EXECUTE ins(203, 'c'); EXECUTE ins(204, 'd');
EXECUTE ins(205, 'e'); EXECUTE ins(206, 'f'); EXECUTE ins(201, 'g'); EXECUTE ins(202, 'h');
EXECUTE ins_l(201, 'a'); EXECUTE ins_l(202, 'b'); EXECUTE ins_l(203, 'c'); EXECUTE ins_l(204, 'd');
EXECUTE ins_l(205, 'e'); EXECUTE ins_l(206, 'f'); EXECUTE ins_l(201, 'g'); EXECUTE ins_l(202, 'h');
EXECUTE upd(1, 1); EXECUTE upd(2, 2); EXECUTE upd(3, 3); EXECUTE upd(4, 4);
EXECUTE upd(5, 5); EXECUTE upd(6, 6); EXECUTE upd(1, 7); EXECUTE upd(2, 8);
EXECUTE upd_l(1, 1); EXECUTE upd_l(2, 2); EXECUTE upd_l(3, 3); EXECUTE upd_l(4, 4);
EXECUTE upd_l(5, 5); EXECUTE upd_l(6, 6); EXECUTE upd_l(1, 7); EXECUTE upd_l(2, 8);
SELECT same('kv', 'kv_l');

CREATE FUNCTION bump(t regclass, lo int, hi int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	i int;
	done int := 0;
BEGIN
	FOR i IN lo .. hi LOOP
		BEGIN
			EXECUTE format('INSERT INTO %s VALUES ($1, $2)', t) USING i, 'f' || i;
			done := done + 1;
		EXCEPTION WHEN unique_violation THEN
			EXECUTE format('UPDATE %s SET n = n + 100 WHERE k = $1', t) USING i;
		END;
	END LOOP;
	RETURN done;
END $$;
SELECT bump('kv', 95, 110), bump('kv_l', 95, 110);
SELECT same('kv', 'kv_l');

-- ================================================================
-- transactions: rollback, savepoints, reading what was written
-- ================================================================
BEGIN;
DELETE FROM orders WHERE o_id < 100;
INSERT INTO orders VALUES (-5, 1, 1, 'rolled back');
SELECT count(*) FROM orders WHERE o_id < 100;
ROLLBACK;
SELECT same('orders', 'orders_l');
BEGIN;
INSERT INTO kv VALUES (300, 'kept');
SAVEPOINT s1;
INSERT INTO kv VALUES (301, 'undone');
UPDATE kv SET v = 'undone too' WHERE k = 300;
ROLLBACK TO s1;
INSERT INTO kv VALUES (302, 'kept too');
RELEASE s1;
COMMIT;
INSERT INTO kv_l VALUES (300, 'kept'), (302, 'kept too');
SELECT same('kv', 'kv_l');
-- a failed statement inside a savepoint, then more writes
BEGIN;
SAVEPOINT s2;
INSERT INTO kv VALUES (303, 'x'), (1, 'duplicate');
ROLLBACK TO s2;
INSERT INTO kv VALUES (304, 'after');
COMMIT;
INSERT INTO kv_l VALUES (304, 'after');
SELECT same('kv', 'kv_l');
-- reads in the transaction see its writes: joins, single tables, aggregates
BEGIN;
INSERT INTO orders VALUES (7000, 1, 10, 'new');
INSERT INTO lines VALUES (7000, 1, 2, 3.5), (7000, 2, 4, 1.25);
UPDATE orders SET o_total = o_total + 1 WHERE o_id = 7000;
SELECT o.o_id, o.o_total, count(*), sum(l.l_qty * l.l_price) FROM orders o JOIN lines l ON l.l_order = o.o_id
	WHERE o.o_id = 7000 GROUP BY 1, 2;
SELECT count(*) FROM orders;
SELECT * FROM orders WHERE o_id = 7000;
EXPLAIN (COSTS OFF) SELECT * FROM orders WHERE o_cust = 1;
-- a foreign partition read directly sees the writes: once the transaction
-- wrote, PostgreSQL's scans of the leaves run on colojoin's connections
UPDATE orders SET o_note = o_note WHERE o_id < 10;
SELECT count(*) = (SELECT count(*) FROM orders WHERE tableoid = 'orders_p0'::regclass) AS partition_sees_writes
FROM orders_p0;
ROLLBACK;
-- TRUNCATE goes through colojoin's connections, with the writes
BEGIN;
INSERT INTO kv VALUES (7002, 'x');
TRUNCATE kv;
SELECT count(*) FROM kv;
ROLLBACK;
SELECT count(*) > 0 AS rows_back FROM kv;
-- colojoin.enable_writes = off: postgres_fdw writes, as before
SET colojoin.enable_writes = off;
SELECT top_node('INSERT INTO orders VALUES (1, 1, 1, ''x'')');
SELECT top_node('UPDATE orders SET o_cust = 1 WHERE o_id = 1');
RESET colojoin.enable_writes;
-- ANALYZE samples through postgres_fdw too: it says that it misses the writes
BEGIN;
INSERT INTO orders VALUES (7001, 1, 1, 'x');
ANALYZE orders;
ROLLBACK;
BEGIN;
INSERT INTO orders VALUES (7000, 1, 10, 'new');
INSERT INTO lines VALUES (7000, 1, 2, 3.5);
SELECT count(*), sum(o_total) FROM orders o JOIN lines l ON l.l_order = o.o_id;
COMMIT;
INSERT INTO orders_l VALUES (7000, 1, 10, 'new');
INSERT INTO lines_l VALUES (7000, 1, 2, 3.5);
SELECT count(*), sum(o_total) FROM orders_l o JOIN lines_l l ON l.l_order = o.o_id;
SELECT same('orders', 'orders_l'), same('lines', 'lines_l');
-- After a write only the writing connection of a node sees it, so two
-- scans of the same nodes in one statement (a join not on the keys, a
-- scan nested in another's rows) take turns on it: a scan that gives it
-- up reads the rest of its cursor first.  twin(q): q's rows against the
-- same query over the local twins (which get the same writes), and how
-- many colojoin scans the plan has.
CREATE FUNCTION twin(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	lq text := regexp_replace(q, '\m(orders|lines)\M', '\1_l', 'g');
	s text[];
	l text[];
	scans int := 0;
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		IF line ~ 'Custom Scan \(ColocatedJoin\)' THEN
			scans := scans + 1;
		END IF;
	END LOOP;
	EXECUTE format('SELECT array_agg(r::text ORDER BY r::text) FROM (%s) r', q) INTO s;
	EXECUTE format('SELECT array_agg(r::text ORDER BY r::text) FROM (%s) r', lq) INTO l;
	RETURN format('%s scans, ', scans) ||
		CASE WHEN s IS NOT DISTINCT FROM l THEN format('same (%s rows)', coalesce(cardinality(s), 0))
		ELSE format('DIFFERENT: %s rows, %s local', cardinality(s), cardinality(l)) END;
END
$$;
BEGIN;
INSERT INTO orders VALUES (7100, 3, 5, 'turns'), (7101, 7000, 6, 'turns');
INSERT INTO orders_l VALUES (7100, 3, 5, 'turns'), (7101, 7000, 6, 'turns');
INSERT INTO lines VALUES (7100, 1, 1, 2.5), (3, 9, 9, 9);
INSERT INTO lines_l VALUES (7100, 1, 1, 2.5), (3, 9, 9, 9);
SELECT twin('SELECT o.o_id, l.l_no, l.l_qty FROM orders o JOIN lines l ON l.l_order = o.o_cust') AS hash_join;
SELECT twin('SELECT a.o_id, b.o_id AS b_id, b.o_note FROM orders a JOIN orders b ON b.o_id = a.o_cust') AS self_join;
SELECT twin('SELECT o.o_id FROM orders o WHERE EXISTS (SELECT FROM lines l WHERE l.l_order = o.o_cust AND l.l_qty > 1)') AS semi_join;
SET LOCAL enable_hashjoin = off;
SELECT twin('SELECT o.o_id, l.l_no, l.l_qty FROM orders o JOIN lines l ON l.l_order = o.o_cust') AS merge_join;
SET LOCAL enable_mergejoin = off;
SET LOCAL enable_material = off;
SELECT twin('SELECT o.o_id, l.l_no, l.l_qty FROM orders o JOIN lines l ON l.l_order = o.o_cust AND o.o_id > 7000') AS nested_loop;
SELECT twin('SELECT a.o_id, b.o_id AS b_id FROM orders a JOIN orders b ON b.o_id = a.o_cust AND a.o_id > 6990') AS nested_self_join;
-- a scan of more than a batch (15,000 rows of one key, one task) whose
-- rows run a subquery now and then: its cursor is still open when the
-- subquery's scan needs the connection, so it is read to its end first
INSERT INTO lines SELECT 10000, g, g % 13, g % 100 FROM generate_series(1, 15000) g;
INSERT INTO lines_l SELECT 10000, g, g % 13, g % 100 FROM generate_series(1, 15000) g;
SELECT twin('SELECT l.l_no, CASE WHEN l.l_no % 5000 = 1 THEN (SELECT count(*) FROM orders o WHERE o.o_cust = l.l_qty) END AS c FROM lines l WHERE l.l_order = 10000') AS long_scan_with_subquery;
-- a write whose rows come from a scan of the nodes it writes on (the
-- scan reads everything it needs there first: it never sees the write);
-- into the same table too
INSERT INTO lines SELECT l_order + 30000, l_no, l_qty, l_price FROM lines WHERE l_order < 60;
INSERT INTO lines_l SELECT l_order + 30000, l_no, l_qty, l_price FROM lines_l WHERE l_order < 60;
INSERT INTO orders SELECT o_id + 20000, o_cust, o_total, 'copy' FROM orders WHERE o_id < 50 OR o_id > 7000;
INSERT INTO orders_l SELECT o_id + 20000, o_cust, o_total, 'copy' FROM orders_l WHERE o_id < 50 OR o_id > 7000;
SELECT same('orders', 'orders_l') AS orders_now, same('lines', 'lines_l') AS lines_now;
-- UPDATE ... FROM and DELETE ... USING colocated tables, after writes
UPDATE orders SET o_total = o_total + l.l_qty FROM lines l WHERE l.l_order = orders.o_id AND l.l_no = 1;
UPDATE orders_l SET o_total = o_total + l.l_qty FROM lines_l l WHERE l.l_order = orders_l.o_id AND l.l_no = 1;
DELETE FROM lines USING orders o WHERE o.o_id = lines.l_order AND o.o_id < 30 AND o.o_total > 2;
DELETE FROM lines_l USING orders_l o WHERE o.o_id = lines_l.l_order AND o.o_id < 30 AND o.o_total > 2;
SELECT same('orders', 'orders_l') AS orders_now, same('lines', 'lines_l') AS lines_now;
-- whole rows, of a table and of the null-extended side of a join
SELECT twin('SELECT o FROM orders o WHERE o.o_id > 6990') AS whole_rows;
SELECT twin('SELECT o.o_id, l FROM orders o LEFT JOIN lines l ON l.l_order = o.o_cust WHERE o.o_id > 6990') AS whole_rows_outer;
-- rows found by a join colojoin does not run (by ctid): row by row, on
-- colojoin's connections; rolled back to the savepoint
SAVEPOINT s_ctid;
DELETE FROM orders WHERE o_id IN (SELECT l_qty FROM lines);
SELECT count(*) FROM orders WHERE o_id IN (SELECT l_qty FROM lines);
ROLLBACK TO s_ctid;
-- and a write after such reads still commits with them
UPDATE orders SET o_note = 'turned' WHERE o_id = 7100;
UPDATE orders_l SET o_note = 'turned' WHERE o_id = 7100;
COMMIT;
SELECT same('orders', 'orders_l'), same('lines', 'lines_l');
-- nothing is left prepared on the nodes, and recovery finds nothing to do
SELECT prepared_left();
SELECT * FROM colojoin.recover_prepared_transactions();

-- ================================================================
-- COPY FROM
-- ================================================================
COPY orders (o_id, o_cust, o_note) FROM STDIN;
8001	1	copied
8002	\N	with\ttab
\N	3	null key
8004	4	back\\slash
\.
COPY orders_l (o_id, o_cust, o_note) FROM STDIN;
8001	1	copied
8002	\N	with\ttab
\N	3	null key
8004	4	back\\slash
\.
COPY lines FROM STDIN (FORMAT csv);
8001,1,5,2.50
8002,1,,1.00
\.
COPY lines_l FROM STDIN (FORMAT csv);
8001,1,5,2.50
8002,1,,1.00
\.
SELECT same('orders', 'orders_l'), same('lines', 'lines_l');

-- ================================================================
-- replicas: every placement gets every write
-- ================================================================
CREATE TABLE rep (k int, v int, t text) PARTITION BY HASH (k);
SELECT colojoin.create_shards('rep', ARRAY['wr_n1', 'wr_n2', 'wr_n3'], 3);
SELECT colojoin.add_replica(format('rep_p%s', r)::regclass, 'wr_n' || ((r + 1) % 3 + 1))
FROM generate_series(0, 2) r;
CREATE TABLE rep_l (k int, v int, t text);
INSERT INTO rep SELECT g, g % 10, 'r' || g FROM generate_series(1, 500) g;
INSERT INTO rep_l SELECT g, g % 10, 'r' || g FROM generate_series(1, 500) g;
SELECT same('rep', 'rep_l'), placements_agree('rep');
UPDATE rep SET v = v + 1, t = t || '!' WHERE v = 3;
UPDATE rep_l SET v = v + 1, t = t || '!' WHERE v = 3;
SELECT same('rep', 'rep_l'), placements_agree('rep');
DELETE FROM rep WHERE k % 7 = 0 RETURNING k % 1 AS zero;
DELETE FROM rep_l WHERE k % 7 = 0;
SELECT same('rep', 'rep_l'), placements_agree('rep');
COPY rep FROM STDIN;
9001	1	copied
9002	2	copied
\.
INSERT INTO rep_l VALUES (9001, 1, 'copied'), (9002, 2, 'copied');
-- a join colojoin cannot run on the nodes (the tables do not line up) is
-- PostgreSQL's plan, whose rows colojoin writes on every placement
UPDATE rep r SET v = r.v + o.o_cust FROM orders o WHERE o.o_id = r.k;
UPDATE rep_l r SET v = r.v + o.o_cust FROM orders_l o WHERE o.o_id = r.k;
SELECT same('rep', 'rep_l'), placements_agree('rep');
BEGIN;
INSERT INTO rep VALUES (9100, 0, 'in a transaction');
UPDATE rep SET t = 'updated in it' WHERE k = 9100;
COMMIT;
INSERT INTO rep_l VALUES (9100, 0, 'updated in it');
SELECT same('rep', 'rep_l'), placements_agree('rep');
-- a replica that already differs from its primary stops the write
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', :'node2_port'),
	'INSERT INTO wr.rep_p0 VALUES (-1, 3, ''stray'')');
UPDATE rep SET v = v WHERE v = 3;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', :'node2_port'),
	'DELETE FROM wr.rep_p0 WHERE k = -1');
SELECT same('rep', 'rep_l'), placements_agree('rep');

-- ================================================================
-- other declarations: LIST with DEFAULT, RANGE over two levels,
-- expression keys; routing follows PostgreSQL's rules
-- ================================================================
\c - - - :node1_port
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS wr_shard CASCADE;
RESET client_min_messages;
CREATE SCHEMA wr_shard;
CREATE TABLE wr_shard.ls_eu (region text, id int, v int);
CREATE TABLE wr_shard.ls_other (region text, id int, v int);
CREATE TABLE wr_shard.rg_2020_a (d date, id int, v int);
CREATE TABLE wr_shard.ex_0 (a int, b int);
\c - - - :node2_port
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS wr_shard CASCADE;
RESET client_min_messages;
CREATE SCHEMA wr_shard;
CREATE TABLE wr_shard.ls_us (region text, id int, v int);
CREATE TABLE wr_shard.rg_2020_b (d date, id int, v int);
CREATE TABLE wr_shard.rg_2021 (d date, id int, v int);
CREATE TABLE wr_shard.ex_1 (a int, b int);
\c - - - :coord_port
SET search_path = wr, public;
SET colojoin.remote_size_lifetime = 0;
CREATE TABLE ls (region text, id int, v int) PARTITION BY LIST (region);
CREATE FOREIGN TABLE ls_eu PARTITION OF ls FOR VALUES IN ('de', 'fr', NULL)
	SERVER wr_n1 OPTIONS (schema_name 'wr_shard');
CREATE FOREIGN TABLE ls_us PARTITION OF ls FOR VALUES IN ('us')
	SERVER wr_n2 OPTIONS (schema_name 'wr_shard');
CREATE FOREIGN TABLE ls_other PARTITION OF ls DEFAULT
	SERVER wr_n1 OPTIONS (schema_name 'wr_shard');
CREATE TABLE ls_l (region text, id int, v int);
INSERT INTO ls VALUES ('de', 1, 1), ('us', 2, 2), (NULL, 3, 3), ('jp', 4, 4), ('fr', 5, 5);
INSERT INTO ls_l VALUES ('de', 1, 1), ('us', 2, 2), (NULL, 3, 3), ('jp', 4, 4), ('fr', 5, 5);
SELECT tableoid::regclass, * FROM ls ORDER BY id;
UPDATE ls SET v = v * 10 WHERE region IS NULL OR region = 'jp';
UPDATE ls_l SET v = v * 10 WHERE region IS NULL OR region = 'jp';
SELECT same('ls', 'ls_l');

CREATE TABLE rg (d date, id int, v int) PARTITION BY RANGE (d);
CREATE TABLE rg_2020 PARTITION OF rg FOR VALUES FROM ('2020-01-01') TO ('2021-01-01')
	PARTITION BY HASH (id);
CREATE FOREIGN TABLE rg_2020_a PARTITION OF rg_2020 FOR VALUES WITH (MODULUS 2, REMAINDER 0)
	SERVER wr_n1 OPTIONS (schema_name 'wr_shard');
CREATE FOREIGN TABLE rg_2020_b PARTITION OF rg_2020 FOR VALUES WITH (MODULUS 2, REMAINDER 1)
	SERVER wr_n2 OPTIONS (schema_name 'wr_shard');
CREATE FOREIGN TABLE rg_2021 PARTITION OF rg FOR VALUES FROM ('2021-01-01') TO ('2022-01-01')
	SERVER wr_n2 OPTIONS (schema_name 'wr_shard');
CREATE TABLE rg_l (d date, id int, v int);
INSERT INTO rg SELECT DATE '2020-01-01' + g * 7, g, g FROM generate_series(0, 100) g;
INSERT INTO rg_l SELECT DATE '2020-01-01' + g * 7, g, g FROM generate_series(0, 100) g;
SELECT tableoid::regclass, count(*) FROM rg GROUP BY 1 ORDER BY 1;
SELECT same('rg', 'rg_l');
-- a row no partition takes: the error PostgreSQL gives, nothing written
INSERT INTO rg VALUES ('2020-02-02', 1000, 0), ('2030-01-01', 1001, 0);
SELECT same('rg', 'rg_l');
DELETE FROM rg WHERE d >= '2021-01-01' AND v % 2 = 0;
DELETE FROM rg_l WHERE d >= '2021-01-01' AND v % 2 = 0;
SELECT same('rg', 'rg_l');

CREATE TABLE ex (a int, b int) PARTITION BY HASH ((a + b));
CREATE FOREIGN TABLE ex_0 PARTITION OF ex FOR VALUES WITH (MODULUS 2, REMAINDER 0)
	SERVER wr_n1 OPTIONS (schema_name 'wr_shard');
CREATE FOREIGN TABLE ex_1 PARTITION OF ex FOR VALUES WITH (MODULUS 2, REMAINDER 1)
	SERVER wr_n2 OPTIONS (schema_name 'wr_shard');
CREATE TABLE ex_l (a int, b int);
INSERT INTO ex SELECT g, g * 3 % 11 FROM generate_series(1, 200) g;
INSERT INTO ex_l SELECT g, g * 3 % 11 FROM generate_series(1, 200) g;
SELECT count(*) AS misplaced FROM ex
	WHERE NOT satisfies_hash_partition('ex'::regclass, 2, CASE WHEN tableoid = 'ex_0'::regclass THEN 0 ELSE 1 END, a + b);
UPDATE ex SET a = a + 1 WHERE b = 2;
UPDATE ex_l SET a = a + 1 WHERE b = 2;
UPDATE ex SET b = b WHERE b = 2;
SELECT same('ex', 'ex_l');
SELECT count(*) AS misplaced FROM ex
	WHERE NOT satisfies_hash_partition('ex'::regclass, 2, CASE WHEN tableoid = 'ex_0'::regclass THEN 0 ELSE 1 END, a + b);

-- ================================================================
-- triggers on the coordinator: PostgreSQL's executor, colojoin's writes
-- ================================================================
CREATE TABLE trg (k int, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('trg', ARRAY['wr_n1', 'wr_n2'], 2);
CREATE TABLE trg_log (what text, k int);
CREATE FUNCTION trg_fn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO trg_log VALUES (TG_OP, NEW.k); RETURN NEW; END $$;
CREATE TRIGGER trg_ins AFTER INSERT ON trg FOR EACH ROW EXECUTE FUNCTION trg_fn();
SELECT top_node('INSERT INTO trg VALUES (1, 1)');
INSERT INTO trg VALUES (1, 1), (2, 2);
SELECT * FROM trg_log ORDER BY k;
-- with replicas, such a write reaches every placement
SELECT colojoin.add_replica('trg_p0', 'wr_n3');
INSERT INTO trg VALUES (3, 3);
SELECT placements_agree('trg');

-- ================================================================
-- two-phase commit needs max_prepared_transactions on the nodes: the
-- cluster has it; the commit records table is the extension's
-- ================================================================
SELECT count(*) >= 0 AS records_readable FROM colojoin.prepared_xacts;
SELECT prepared_left();

DROP SCHEMA wr CASCADE;
\c - - - :node1_port
DROP SCHEMA wr_shard CASCADE;
\c - - - :node2_port
DROP SCHEMA wr_shard CASCADE;
