--
-- metadata: how colojoin reads sharded tables from PostgreSQL's own catalogs
-- (partitioning, postgres_fdw foreign tables and their options), shown by
-- the view colojoin.shards, and how that picture follows catalog changes.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS colojoin CASCADE;
RESET client_min_messages;

\getenv node1_port CJ_NODE1_PORT
\getenv node2_port CJ_NODE2_PORT
\getenv node3_port CJ_NODE3_PORT
\getenv coord_port PGPORT

CREATE SERVER md_n1 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node1_port', dbname 'colojoin_regress');
CREATE SERVER md_n2 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node2_port', dbname 'colojoin_regress');
CREATE SERVER md_n3 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node3_port', dbname 'colojoin_regress');
CREATE USER MAPPING FOR CURRENT_USER SERVER md_n1;
CREATE USER MAPPING FOR CURRENT_USER SERVER md_n2;
CREATE USER MAPPING FOR CURRENT_USER SERVER md_n3;

CREATE SCHEMA md;
SET search_path = md, public;

-- A hash-partitioned table declared the plain PostgreSQL way.  Remote names
-- default to the foreign table's own schema and name; schema_name and
-- table_name override them one by one.
CREATE TABLE orders (o_orderkey bigint, o_custkey int, o_note text)
	PARTITION BY HASH (o_orderkey);
CREATE FOREIGN TABLE orders_p0 PARTITION OF orders
	FOR VALUES WITH (MODULUS 4, REMAINDER 0) SERVER md_n1;
CREATE FOREIGN TABLE orders_p1 PARTITION OF orders
	FOR VALUES WITH (MODULUS 4, REMAINDER 1) SERVER md_n2
	OPTIONS (schema_name 'shard', table_name 'orders_one');
CREATE FOREIGN TABLE orders_p2 PARTITION OF orders
	FOR VALUES WITH (MODULUS 4, REMAINDER 2) SERVER md_n3
	OPTIONS (table_name 'orders_two');
CREATE FOREIGN TABLE orders_p3 PARTITION OF orders
	FOR VALUES WITH (MODULUS 4, REMAINDER 3) SERVER md_n1
	OPTIONS (schema_name 'other');

SELECT table_name, leaf, bound, partition_class, node, remote_relation, is_replica,
	physical_node LIKE '%/colojoin_regress' AS physical_node_known
FROM colojoin.shards WHERE table_name = 'orders'::regclass;

-- Classes are numbered in bound order, whatever the creation order.
CREATE TABLE late (k int) PARTITION BY HASH (k);
CREATE FOREIGN TABLE late_r2 PARTITION OF late
	FOR VALUES WITH (MODULUS 3, REMAINDER 2) SERVER md_n1;
CREATE FOREIGN TABLE late_r0 PARTITION OF late
	FOR VALUES WITH (MODULUS 3, REMAINDER 0) SERVER md_n2;
SELECT leaf, bound, partition_class, node FROM colojoin.shards
 WHERE table_name = 'late'::regclass;

-- Range partitioning, with MINVALUE, a partition that stays on the
-- coordinator (pseudo-node "local") and a DEFAULT partition (last class).
CREATE TABLE events (at date, id int) PARTITION BY RANGE (at);
CREATE FOREIGN TABLE events_old PARTITION OF events
	FOR VALUES FROM (MINVALUE) TO ('2024-01-01') SERVER md_n1;
CREATE FOREIGN TABLE events_2024 PARTITION OF events
	FOR VALUES FROM ('2024-01-01') TO ('2025-01-01') SERVER md_n2;
CREATE TABLE events_2025 PARTITION OF events
	FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
CREATE FOREIGN TABLE events_other PARTITION OF events DEFAULT SERVER md_n3;
SELECT leaf, bound, partition_class, node, remote_relation
  FROM colojoin.shards WHERE table_name = 'events'::regclass;

-- List partitioning with a NULL-accepting partition and a default.
CREATE TABLE regions (region text, x int) PARTITION BY LIST (region);
CREATE FOREIGN TABLE regions_eu PARTITION OF regions
	FOR VALUES IN ('eu', 'uk') SERVER md_n1;
CREATE FOREIGN TABLE regions_us PARTITION OF regions
	FOR VALUES IN ('us', NULL) SERVER md_n2;
CREATE FOREIGN TABLE regions_rest PARTITION OF regions DEFAULT SERVER md_n3;
SELECT leaf, bound, partition_class, node FROM colojoin.shards
 WHERE table_name = 'regions'::regclass;

-- Multi-level: each top-level partition is one class, whatever lies below
-- it; bound shows the class's (top-level) bound for every leaf.
CREATE TABLE ml (k int, s text) PARTITION BY HASH (k);
CREATE TABLE ml_0 PARTITION OF ml FOR VALUES WITH (MODULUS 2, REMAINDER 0)
	PARTITION BY LIST (s);
CREATE FOREIGN TABLE ml_0_a PARTITION OF ml_0 FOR VALUES IN ('a') SERVER md_n1;
CREATE TABLE ml_0_b PARTITION OF ml_0 FOR VALUES IN ('b') PARTITION BY RANGE (k);
CREATE FOREIGN TABLE ml_0_b_lo PARTITION OF ml_0_b FOR VALUES FROM (0) TO (100) SERVER md_n1;
CREATE FOREIGN TABLE ml_0_b_hi PARTITION OF ml_0_b FOR VALUES FROM (100) TO (200) SERVER md_n2;
CREATE FOREIGN TABLE ml_1 PARTITION OF ml FOR VALUES WITH (MODULUS 2, REMAINDER 1) SERVER md_n3;
SELECT leaf, bound, partition_class, node FROM colojoin.shards
 WHERE table_name = 'ml'::regclass;
-- only top-level tables are listed, never an intermediate one
SELECT count(*) FROM colojoin.shards WHERE table_name IN ('ml_0'::regclass, 'ml_0_b'::regclass);

-- A partitioned table whose leaves are all local is not sharded: not listed.
CREATE TABLE plain (k int) PARTITION BY HASH (k);
CREATE TABLE plain_0 PARTITION OF plain FOR VALUES WITH (MODULUS 1, REMAINDER 0);
SELECT count(*) FROM colojoin.shards WHERE table_name = 'plain'::regclass;

-- Only the FDW's handler counts: a wrapper of any name using postgres_fdw's
-- handler is postgres_fdw; a leaf of another wrapper has no usable
-- placement and shows with node NULL.
CREATE FOREIGN DATA WRAPPER md_alias HANDLER postgres_fdw_handler
	VALIDATOR postgres_fdw_validator;
CREATE SERVER md_alias_srv FOREIGN DATA WRAPPER md_alias
	OPTIONS (host '127.0.0.1', port :'node2_port', dbname 'colojoin_regress');
CREATE FOREIGN DATA WRAPPER md_other;
CREATE SERVER md_other_srv FOREIGN DATA WRAPPER md_other;
CREATE TABLE mixed (k int) PARTITION BY LIST (k);
CREATE FOREIGN TABLE mixed_1 PARTITION OF mixed FOR VALUES IN (1) SERVER md_alias_srv;
CREATE FOREIGN TABLE mixed_2 PARTITION OF mixed FOR VALUES IN (2) SERVER md_other_srv;
SELECT leaf, node, remote_relation, is_replica FROM colojoin.shards
 WHERE table_name = 'mixed'::regclass;

-- Identifiers that need quoting come out quoted in remote_relation.
CREATE SCHEMA "Md Weird";
CREATE TABLE "Md Weird"."Weird ""name""; DROP" ("Weird ""col""; DROP" int)
	PARTITION BY HASH ("Weird ""col""; DROP");
CREATE FOREIGN TABLE "Md Weird"."leaf ""0""" PARTITION OF "Md Weird"."Weird ""name""; DROP"
	FOR VALUES WITH (MODULUS 2, REMAINDER 0) SERVER md_n1;
CREATE FOREIGN TABLE "Md Weird"."leaf 1" PARTITION OF "Md Weird"."Weird ""name""; DROP"
	FOR VALUES WITH (MODULUS 2, REMAINDER 1) SERVER md_n2
	OPTIONS (schema_name 'Other "S"', table_name 'T;1');
SELECT table_name, leaf, node, remote_relation FROM colojoin.shards
 WHERE table_name = '"Md Weird"."Weird ""name""; DROP"'::regclass;

--
-- The cached picture follows every kind of catalog change, in this session
-- (invalidation callbacks) ...
--
-- foreign table options
ALTER FOREIGN TABLE orders_p0 OPTIONS (ADD table_name 'orders_zero');
ALTER FOREIGN TABLE orders_p1 OPTIONS (DROP schema_name);
-- a renamed leaf changes the default remote name
ALTER FOREIGN TABLE orders_p3 RENAME TO orders_p3_renamed;
-- a renamed server changes the node name
ALTER SERVER md_n3 RENAME TO md_n3_renamed;
SELECT leaf, node, remote_relation FROM colojoin.shards
 WHERE table_name = 'orders'::regclass;
ALTER SERVER md_n3_renamed RENAME TO md_n3;
-- a renamed schema changes the default remote schema
ALTER SCHEMA md RENAME TO md_renamed;
SELECT leaf, remote_relation FROM colojoin.shards
 WHERE leaf::text LIKE '%orders_p0';
ALTER SCHEMA md_renamed RENAME TO md;
SELECT leaf, remote_relation FROM colojoin.shards
 WHERE leaf::text LIKE '%orders_p0';

-- partitions detached, attached, dropped and added (at any level)
ALTER TABLE orders DETACH PARTITION orders_p2;
SELECT leaf, partition_class FROM colojoin.shards WHERE table_name = 'orders'::regclass;
ALTER TABLE orders ATTACH PARTITION orders_p2 FOR VALUES WITH (MODULUS 4, REMAINDER 2);
SELECT leaf, partition_class FROM colojoin.shards WHERE table_name = 'orders'::regclass;
DROP FOREIGN TABLE ml_0_b_hi;
CREATE FOREIGN TABLE ml_0_b_mid PARTITION OF ml_0_b FOR VALUES FROM (100) TO (150) SERVER md_n3;
SELECT leaf, partition_class, node FROM colojoin.shards WHERE table_name = 'ml'::regclass;

-- a change rolled back is forgotten again
BEGIN;
ALTER FOREIGN TABLE orders_p2 OPTIONS (SET table_name 'in_flight');
SELECT remote_relation FROM colojoin.shards WHERE leaf = 'orders_p2'::regclass;
ROLLBACK;
SELECT remote_relation FROM colojoin.shards WHERE leaf = 'orders_p2'::regclass;

-- ... and in other sessions.  A loopback server reads the view through a
-- second backend that keeps its connection (and its cache) between queries.
CREATE SERVER md_self FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'coord_port', dbname 'colojoin_regress');
CREATE USER MAPPING FOR CURRENT_USER SERVER md_self;
CREATE VIEW orders_shards AS
	SELECT leaf::text AS leaf, node::text AS node, remote_relation,
		   pg_backend_pid() AS pid
	  FROM colojoin.shards WHERE table_name = 'md.orders'::regclass;
CREATE FOREIGN TABLE remote_orders_shards (leaf text, node text, remote_relation text, pid int)
	SERVER md_self OPTIONS (schema_name 'md', table_name 'orders_shards');
CREATE TEMP TABLE seen AS SELECT 1 AS step, * FROM remote_orders_shards;
-- step 2: a relcache invalidation only (no foreign table catalog changes)
ALTER TABLE orders DETACH PARTITION orders_p2;
INSERT INTO seen SELECT 2, * FROM remote_orders_shards;
-- step 3: foreign table options, partitions replaced
ALTER TABLE orders ATTACH PARTITION orders_p2 FOR VALUES WITH (MODULUS 4, REMAINDER 2);
ALTER FOREIGN TABLE orders_p0 OPTIONS (SET table_name 'orders_zero_v2');
DROP FOREIGN TABLE orders_p3_renamed;
CREATE FOREIGN TABLE orders_p3_new PARTITION OF orders
	FOR VALUES WITH (MODULUS 4, REMAINDER 3) SERVER md_n2;
INSERT INTO seen SELECT 3, * FROM remote_orders_shards;
-- step 4: a server renamed
ALTER SERVER md_n2 RENAME TO md_n2_renamed;
INSERT INTO seen SELECT 4, * FROM remote_orders_shards;
ALTER SERVER md_n2_renamed RENAME TO md_n2;
SELECT step, leaf, node, remote_relation FROM seen ORDER BY step, leaf;
-- the same remote backend answered every time
SELECT count(DISTINCT pid) AS backends FROM seen;

-- Clean up.
SET client_min_messages = warning;
DROP SERVER md_self CASCADE;
DROP SCHEMA md CASCADE;
DROP SCHEMA "Md Weird" CASCADE;
DROP SERVER md_n1, md_n2, md_n3, md_alias_srv, md_other_srv CASCADE;
DROP FOREIGN DATA WRAPPER md_alias, md_other;
RESET client_min_messages;
