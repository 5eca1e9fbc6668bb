--
-- create_shards: colojoin.create_shards() makes the remote shard tables and
-- the local foreign partitions of a hash-partitioned table in one call,
-- round-robin or with the placement of another table, all or nothing.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS colojoin CASCADE;
-- dblink lets this suite look at (and clean up) the nodes directly
CREATE EXTENSION IF NOT EXISTS dblink;

\getenv node1_port CJ_NODE1_PORT
\getenv node2_port CJ_NODE2_PORT
\getenv node3_port CJ_NODE3_PORT
\set node1 'host=127.0.0.1 dbname=colojoin_regress user=postgres port=' :node1_port
\set node2 'host=127.0.0.1 dbname=colojoin_regress user=postgres port=' :node2_port
\set node3 'host=127.0.0.1 dbname=colojoin_regress user=postgres port=' :node3_port

-- leftovers of an interrupted earlier run
SELECT dblink_exec(:'node1', 'DROP SCHEMA IF EXISTS cs_create, "Weird ""schema""" CASCADE');
SELECT dblink_exec(:'node2', 'DROP SCHEMA IF EXISTS cs_create, "Weird ""schema""" CASCADE');
SELECT dblink_exec(:'node3', 'DROP SCHEMA IF EXISTS cs_create, "Weird ""schema""" CASCADE');
DROP SCHEMA IF EXISTS cs_create, "Weird ""schema""" CASCADE;
DROP SERVER IF EXISTS cs_n1, cs_n2, cs_n3, cs_down, cs_other CASCADE;
DROP FOREIGN DATA WRAPPER IF EXISTS cs_dummy_fdw CASCADE;

CREATE SERVER cs_n1 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node1_port', dbname 'colojoin_regress');
CREATE SERVER cs_n2 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node2_port', dbname 'colojoin_regress');
CREATE SERVER cs_n3 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node3_port', dbname 'colojoin_regress');
CREATE USER MAPPING FOR CURRENT_USER SERVER cs_n1;
CREATE USER MAPPING FOR CURRENT_USER SERVER cs_n2;
CREATE USER MAPPING FOR CURRENT_USER SERVER cs_n3;
CREATE SCHEMA cs_create;
SET search_path = cs_create, public;

-- how the nodes see a shard table: columns, types, collation, NOT NULL, default
CREATE FUNCTION node_columns(conn text, rel text)
RETURNS TABLE (col name, type text, coll name, not_null boolean, def text)
LANGUAGE sql AS $$
	SELECT * FROM dblink(conn, format($q$
		SELECT a.attname, format_type(a.atttypid, a.atttypmod),
		       CASE WHEN a.attcollation <> t.typcollation THEN co.collname END,
		       a.attnotnull,
		       CASE a.attgenerated WHEN 's' THEN 'GENERATED ' ELSE '' END || pg_get_expr(d.adbin, d.adrelid)
		FROM pg_attribute a
		JOIN pg_type t ON t.oid = a.atttypid
		LEFT JOIN pg_collation co ON co.oid = a.attcollation
		LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE a.attrelid = %L::regclass AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attnum $q$, rel))
	AS t(col name, type text, coll name, not_null boolean, def text)
$$;

-- the tables of a schema on a node
CREATE FUNCTION node_tables(conn text, nsp text) RETURNS SETOF name
LANGUAGE sql AS $$
	SELECT * FROM dblink(conn, format(
		'SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		 WHERE n.nspname = %L AND c.relkind = ''r'' ORDER BY c.relname COLLATE "C"', nsp))
	AS t(relname name)
$$;

-- the foreign partitions of a table: bound, server and options
CREATE FUNCTION local_partitions(parent regclass)
RETURNS TABLE (leaf regclass, bound text, server name, options text[])
LANGUAGE sql AS $$
	SELECT c.oid::regclass, pg_get_expr(c.relpartbound, c.oid), s.srvname, ft.ftoptions
	FROM pg_inherits i
	JOIN pg_class c ON c.oid = i.inhrelid
	JOIN pg_foreign_table ft ON ft.ftrelid = c.oid
	JOIN pg_foreign_server s ON s.oid = ft.ftserver
	WHERE i.inhparent = parent
	ORDER BY (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'remainder (\d+)'))[1]::int
$$;

--
-- Round-robin placement over three nodes
--
CREATE SEQUENCE order_seq;
CREATE TABLE orders (
	o_id bigint NOT NULL,
	o_gone int,
	o_note text COLLATE "C" DEFAULT 'none',
	o_label varchar(20) NOT NULL DEFAULT upper('x' || 'y'),
	o_price numeric(12,2) DEFAULT 0.5,
	o_at timestamptz DEFAULT now(),
	o_seq bigint DEFAULT nextval('order_seq'),
	o_tags int[],
	o_twice bigint GENERATED ALWAYS AS (o_id * 2) STORED
) PARTITION BY HASH (o_id);
ALTER TABLE orders DROP COLUMN o_gone;

SELECT colojoin.create_shards('orders', ARRAY['cs_n1', 'cs_n2', 'cs_n3'], 6);
SELECT * FROM local_partitions('orders');
SELECT leaf, bound, partition_class, node, remote_relation, is_replica
FROM colojoin.shards WHERE table_name = 'orders'::regclass ORDER BY partition_class;

-- each node has its two tables, with the parent's columns; a default that
-- needs a coordinator object (the local sequence) stays on the coordinator,
-- a generated column is generated on the node (postgres_fdw leaves it there)
SELECT * FROM node_tables(:'node1', 'cs_create');
SELECT * FROM node_tables(:'node2', 'cs_create');
SELECT * FROM node_tables(:'node3', 'cs_create');
SELECT * FROM node_columns(:'node2', 'cs_create.orders_p4');

-- rows inserted on the coordinator land on the nodes and read back
INSERT INTO orders (o_id, o_label, o_tags) SELECT g, 'l' || g, ARRAY[g] FROM generate_series(1, 300) g;
SELECT count(*), sum(o_id), sum(o_twice), count(DISTINCT o_seq), min(o_note), min(o_price) FROM orders;
SELECT o_id, o_note, o_label, o_price, o_tags, o_twice FROM orders WHERE o_id IN (7, 8) ORDER BY o_id;
CREATE TEMP TABLE local_counts AS
	SELECT tableoid::regclass::text AS leaf, count(*) AS n FROM orders GROUP BY 1;
CREATE TEMP TABLE node_counts AS
	SELECT 'orders_p' || r AS leaf, n
	FROM generate_series(0, 5) r,
	     LATERAL dblink(CASE r % 3 WHEN 0 THEN :'node1' WHEN 1 THEN :'node2' ELSE :'node3' END,
	                    format('SELECT count(*) FROM cs_create.orders_p%s', r)) AS t(n bigint);
-- every partition's rows are on the node the view names, and nowhere else
SELECT l.leaf, l.n = nc.n AS same_count, l.n > 0 AS nonempty
FROM local_counts l JOIN node_counts nc ON nc.leaf = l.leaf ORDER BY l.leaf COLLATE "C";
SELECT sum(n) FROM node_counts;

-- partitions defaults to four per server
CREATE TABLE events (e_id int, e_what text) PARTITION BY HASH (e_id);
SELECT colojoin.create_shards('events', ARRAY['cs_n3', 'cs_n1']);
SELECT leaf, server FROM local_partitions('events');

--
-- colocate_with: same modulus, each remainder on the same node
--
-- an int4 key hashes like the int8 key of orders
CREATE TABLE lineitem (l_id int NOT NULL, l_qty int) PARTITION BY HASH (l_id);
SELECT colojoin.create_shards('lineitem', NULL, colocate_with => 'orders');
SELECT o.leaf AS orders_leaf, l.leaf AS lineitem_leaf, l.bound, o.server = l.server AS same_node
FROM local_partitions('orders') o JOIN local_partitions('lineitem') l ON o.bound = l.bound
ORDER BY o.bound;
INSERT INTO lineitem SELECT g, g % 7 FROM generate_series(1, 300) g;
-- each key sits in the same remainder in both tables
SELECT count(*) FILTER (WHERE replace(o.tableoid::regclass::text, 'orders', '') =
                              replace(l.tableoid::regclass::text, 'lineitem', '')) AS same_class,
       count(*) AS joined
FROM orders o JOIN lineitem l ON o.o_id = l.l_id;

-- servers, when given with colocate_with, must cover the placement
CREATE TABLE returns (r_id bigint) PARTITION BY HASH (r_id);
SELECT colojoin.create_shards('returns', ARRAY['cs_n1', 'cs_n2'], colocate_with => 'orders');
SELECT colojoin.create_shards('returns', ARRAY['cs_n1', 'cs_n2', 'cs_n3'], 6, colocate_with => 'orders');
SELECT count(*) FROM local_partitions('returns');
-- partitions must then equal the modulus
CREATE TABLE refunds (f_id bigint) PARTITION BY HASH (f_id);
SELECT colojoin.create_shards('refunds', NULL, 12, colocate_with => 'orders');

-- mismatched schemes, each with its reason
CREATE TABLE by_numeric (k numeric) PARTITION BY HASH (k);
SELECT colojoin.create_shards('by_numeric', NULL, colocate_with => 'orders');
CREATE TABLE by_two (a bigint, b bigint) PARTITION BY HASH (a, b);
SELECT colojoin.create_shards('by_two', NULL, colocate_with => 'orders');
CREATE TABLE by_text (k text) PARTITION BY HASH (k);
CREATE TABLE by_text_c (k text COLLATE "C") PARTITION BY HASH (k);
SELECT colojoin.create_shards('by_text', ARRAY['cs_n1'], 2);
SELECT colojoin.create_shards('by_text_c', NULL, colocate_with => 'by_text');
CREATE TABLE ranged (k bigint) PARTITION BY RANGE (k);
SELECT colojoin.create_shards('refunds', NULL, colocate_with => 'ranged');
CREATE TABLE empty_hash (k bigint) PARTITION BY HASH (k);
SELECT colojoin.create_shards('refunds', NULL, colocate_with => 'empty_hash');
CREATE TABLE mixed (k bigint) PARTITION BY HASH (k);
CREATE TABLE mixed_a PARTITION OF mixed FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE mixed_b PARTITION OF mixed FOR VALUES WITH (MODULUS 4, REMAINDER 1);
SELECT colojoin.create_shards('refunds', NULL, colocate_with => 'mixed');
CREATE TABLE holey (k bigint) PARTITION BY HASH (k);
CREATE TABLE holey_0 PARTITION OF holey FOR VALUES WITH (MODULUS 2, REMAINDER 0);
SELECT colojoin.create_shards('refunds', NULL, colocate_with => 'holey');
CREATE TABLE holey_1 PARTITION OF holey FOR VALUES WITH (MODULUS 2, REMAINDER 1);
SELECT colojoin.create_shards('refunds', NULL, colocate_with => 'holey');
SELECT colojoin.create_shards('refunds', NULL, colocate_with => 'refunds');
SELECT count(*) FROM local_partitions('refunds');

--
-- Every other error path; none leaves anything behind
--
CREATE TABLE plain (k int);
SELECT colojoin.create_shards('plain', ARRAY['cs_n1']);
SELECT colojoin.create_shards('ranged', ARRAY['cs_n1']);
CREATE TABLE listed (k int) PARTITION BY LIST (k);
SELECT colojoin.create_shards('listed', ARRAY['cs_n1']);
SELECT colojoin.create_shards('orders', ARRAY['cs_n1']);
SELECT colojoin.create_shards(NULL, ARRAY['cs_n1']);
SELECT colojoin.create_shards('refunds', ARRAY['cs_n1', 'no_such_server']);
CREATE FOREIGN DATA WRAPPER cs_dummy_fdw;
CREATE SERVER cs_other FOREIGN DATA WRAPPER cs_dummy_fdw;
SELECT colojoin.create_shards('refunds', ARRAY['cs_other']);
SELECT colojoin.create_shards('refunds', NULL);
SELECT colojoin.create_shards('refunds', '{}');
SELECT colojoin.create_shards('refunds', ARRAY['cs_n1', NULL]);
SELECT colojoin.create_shards('refunds', ARRAY['cs_n1', 'cs_n1']);
SELECT colojoin.create_shards('refunds', ARRAY['cs_n1'], 0);
SELECT colojoin.create_shards('refunds', ARRAY['cs_n1'], 4097);
-- a name create_shards would use is taken
CREATE TABLE refunds_p1 (x int);
SELECT colojoin.create_shards('refunds', ARRAY['cs_n1', 'cs_n2'], 2);
DROP TABLE refunds_p1;
CREATE TABLE "a_name_long_enough_that_the_partition_suffix_will_not_fit_in_it" (k int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('"a_name_long_enough_that_the_partition_suffix_will_not_fit_in_it"', ARRAY['cs_n1'], 2);
-- a node that is down: the error names the server, its host and port
CREATE SERVER cs_down FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port '1', dbname 'colojoin_regress');
CREATE USER MAPPING FOR CURRENT_USER SERVER cs_down;
SELECT colojoin.create_shards('refunds', ARRAY['cs_n1', 'cs_down'], 4);
-- no user mapping
DROP USER MAPPING FOR CURRENT_USER SERVER cs_down;
SELECT colojoin.create_shards('refunds', ARRAY['cs_n1', 'cs_down'], 4);
-- the nodes kept nothing of the failed calls
SELECT count(*) FROM local_partitions('refunds');
SELECT * FROM node_tables(:'node1', 'cs_create') WHERE node_tables LIKE 'refunds%';

-- a table that already exists on a node: the node's error, with node and
-- partition, and the tables already made on other nodes are rolled back
SELECT dblink_exec(:'node2', 'CREATE TABLE cs_create.refunds_p1 (x int)');
SELECT colojoin.create_shards('refunds', ARRAY['cs_n1', 'cs_n2'], 4);
SELECT count(*) FROM local_partitions('refunds');
SELECT * FROM node_tables(:'node1', 'cs_create') WHERE node_tables LIKE 'refunds%';
SELECT dblink_exec(:'node2', 'DROP TABLE cs_create.refunds_p1');

--
-- Transactions: the nodes follow the coordinator
--
BEGIN;
SELECT colojoin.create_shards('refunds', ARRAY['cs_n1', 'cs_n2'], 2);
ROLLBACK;
SELECT count(*) FROM local_partitions('refunds');
SELECT * FROM node_tables(:'node1', 'cs_create') WHERE node_tables LIKE 'refunds%';

-- a rolled-back savepoint takes its tables with it, what came before stays
CREATE TABLE credits (c_id bigint) PARTITION BY HASH (c_id);
BEGIN;
SELECT colojoin.create_shards('refunds', ARRAY['cs_n1', 'cs_n2'], 2);
SAVEPOINT s1;
SELECT colojoin.create_shards('credits', ARRAY['cs_n1', 'cs_n2'], 2);
ROLLBACK TO SAVEPOINT s1;
COMMIT;
SELECT leaf, server FROM local_partitions('refunds');
SELECT count(*) FROM local_partitions('credits');
SELECT * FROM node_tables(:'node1', 'cs_create') WHERE node_tables ~ '^(refunds|credits)';
SELECT * FROM node_tables(:'node2', 'cs_create') WHERE node_tables ~ '^(refunds|credits)';

-- a failure inside a savepoint (the node rejects a table) does not cost
-- the changes made before it on that node
SELECT dblink_exec(:'node2', 'CREATE TABLE cs_create.credits_p1 (x int)');
BEGIN;
CREATE TABLE debits (d_id bigint) PARTITION BY HASH (d_id);
SELECT colojoin.create_shards('debits', ARRAY['cs_n1', 'cs_n2'], 2);
SAVEPOINT s1;
SELECT colojoin.create_shards('credits', ARRAY['cs_n1', 'cs_n2'], 2);
ROLLBACK TO SAVEPOINT s1;
SELECT colojoin.create_shards('credits', ARRAY['cs_n1', 'cs_n3'], 2);
COMMIT;
SELECT dblink_exec(:'node2', 'DROP TABLE cs_create.credits_p1');
SELECT leaf, server FROM local_partitions('debits');
SELECT leaf, server FROM local_partitions('credits');
SELECT * FROM node_tables(:'node1', 'cs_create') WHERE node_tables ~ '^(debits|credits)';
SELECT * FROM node_tables(:'node2', 'cs_create') WHERE node_tables ~ '^(debits|credits)';
SELECT * FROM node_tables(:'node3', 'cs_create') WHERE node_tables ~ '^(debits|credits)';
INSERT INTO debits SELECT generate_series(1, 10);
INSERT INTO credits SELECT generate_series(1, 10);
SELECT (SELECT count(*) FROM debits) AS debits, (SELECT count(*) FROM credits) AS credits;

-- a node that fails at commit, after another node committed: the tables
-- committed there are dropped again and the error says so
SELECT dblink_exec(:'node2', $$
	CREATE TABLE cs_create.commit_gate (x int);
	CREATE FUNCTION cs_create.refuse() RETURNS trigger LANGUAGE plpgsql
		AS 'BEGIN RAISE EXCEPTION ''node refuses to commit''; END';
	CREATE CONSTRAINT TRIGGER refuse AFTER INSERT ON cs_create.commit_gate
		DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION cs_create.refuse();
	CREATE FUNCTION cs_create.on_create() RETURNS event_trigger LANGUAGE plpgsql
		AS 'BEGIN IF EXISTS (SELECT 1 FROM pg_event_trigger_ddl_commands()
		                     WHERE object_identity LIKE ''%gated%'') THEN
		            INSERT INTO cs_create.commit_gate VALUES (1); END IF; END';
	CREATE EVENT TRIGGER cs_create_gate ON ddl_command_end WHEN TAG IN ('CREATE TABLE')
		EXECUTE FUNCTION cs_create.on_create()$$);
CREATE TABLE gated (g_id bigint) PARTITION BY HASH (g_id);
SELECT colojoin.create_shards('gated', ARRAY['cs_n1', 'cs_n2', 'cs_n3'], 6);
SELECT dblink_exec(:'node2', 'DROP EVENT TRIGGER cs_create_gate');
SELECT count(*) FROM local_partitions('gated');
SELECT * FROM node_tables(:'node1', 'cs_create') WHERE node_tables LIKE 'gated%';
SELECT * FROM node_tables(:'node2', 'cs_create') WHERE node_tables LIKE 'gated%';
SELECT * FROM node_tables(:'node3', 'cs_create') WHERE node_tables LIKE 'gated%';
-- and the same call works once the node agrees
SELECT colojoin.create_shards('gated', ARRAY['cs_n1', 'cs_n2', 'cs_n3'], 6);

-- PREPARE TRANSACTION cannot carry remote transactions
BEGIN;
SELECT colojoin.create_shards('by_numeric', ARRAY['cs_n1'], 2);
PREPARE TRANSACTION 'cs_create';
SELECT count(*) FROM local_partitions('by_numeric');

--
-- Identifiers that need quoting, in schema, table and column names
--
CREATE SCHEMA "Weird ""schema""";
CREATE TABLE "Weird ""schema"""."Weird ""name""; DROP" (
	"Weird ""name""; DROP" int NOT NULL,
	"select" text DEFAULT 'it''s'
) PARTITION BY HASH ("Weird ""name""; DROP");
SELECT colojoin.create_shards('"Weird ""schema"""."Weird ""name""; DROP"', ARRAY['cs_n1', 'cs_n2'], 2);
SELECT * FROM local_partitions('"Weird ""schema"""."Weird ""name""; DROP"');
SELECT * FROM node_columns(:'node2', '"Weird ""schema"""."Weird ""name""; DROP_p1"');
INSERT INTO "Weird ""schema"""."Weird ""name""; DROP" ("Weird ""name""; DROP")
	SELECT generate_series(1, 20);
SELECT count(*), sum("Weird ""name""; DROP"), min("select")
FROM "Weird ""schema"""."Weird ""name""; DROP";
SELECT tableoid::regclass, count(*) FROM "Weird ""schema"""."Weird ""name""; DROP" GROUP BY 1 ORDER BY 1;

--
-- Clean up, here and on the nodes
--
RESET search_path;
DROP SCHEMA cs_create, "Weird ""schema""" CASCADE;
DROP SERVER cs_n1, cs_n2, cs_n3, cs_down, cs_other CASCADE;
DROP FOREIGN DATA WRAPPER cs_dummy_fdw;
SELECT dblink_exec(:'node1', 'DROP SCHEMA IF EXISTS cs_create, "Weird ""schema""" CASCADE');
SELECT dblink_exec(:'node2', 'DROP SCHEMA IF EXISTS cs_create, "Weird ""schema""" CASCADE');
SELECT dblink_exec(:'node3', 'DROP SCHEMA IF EXISTS cs_create, "Weird ""schema""" CASCADE');
DROP EXTENSION dblink;
