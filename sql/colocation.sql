--
-- colocation: colojoin.colocation(a, b) says whether a join of two sharded
-- tables on their partition keys runs where the partitions live and, if not,
-- gives every reason (partitioning, key, bounds, foreign tables, placement).
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS colojoin CASCADE;
RESET client_min_messages;

\getenv node1_port CJ_NODE1_PORT
\getenv node2_port CJ_NODE2_PORT
\getenv node3_port CJ_NODE3_PORT

CREATE SERVER co_n1 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node1_port', dbname 'colojoin_regress');
CREATE SERVER co_n2 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node2_port', dbname 'colojoin_regress');
CREATE SERVER co_n3 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node3_port', dbname 'colojoin_regress');

CREATE SCHEMA co;
SET search_path = co, public;

-- make_hash(table, key type, modulus, servers, remainders): a hash-partitioned
-- table with one foreign partition per remainder, placed round-robin.
CREATE FUNCTION make_hash(tab text, keytype text, modulus int, servers text[],
						  remainders int[] DEFAULT NULL) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	r int;
	i int := 0;
BEGIN
	EXECUTE format('CREATE TABLE co.%I (k %s, v text) PARTITION BY HASH (k)', tab, keytype);
	FOR r IN SELECT unnest(coalesce(remainders, array(SELECT generate_series(0, modulus - 1)))) LOOP
		EXECUTE format('CREATE FOREIGN TABLE co.%I PARTITION OF co.%I'
					   ' FOR VALUES WITH (MODULUS %s, REMAINDER %s) SERVER %I',
					   tab || '_' || r, tab, modulus, r,
					   servers[i % array_length(servers, 1) + 1]);
		i := i + 1;
	END LOOP;
END $$;

-- Equal schemes, bounds and placement: colocated, in one row.
SELECT make_hash('orders', 'bigint', 8, '{co_n1,co_n2,co_n3}');
SELECT make_hash('lineitem', 'bigint', 8, '{co_n1,co_n2,co_n3}');
SELECT * FROM colojoin.colocation('orders', 'lineitem');
SELECT * FROM colojoin.colocation('lineitem', 'orders');
SELECT * FROM colojoin.colocation('orders', 'orders');

-- int4, int2 and int8 keys hash alike (one operator family): compatible.
SELECT make_hash('orders_int4', 'integer', 8, '{co_n1,co_n2,co_n3}');
SELECT make_hash('orders_int2', 'smallint', 8, '{co_n1,co_n2,co_n3}');
SELECT * FROM colojoin.colocation('orders_int4', 'lineitem');
SELECT * FROM colojoin.colocation('orders_int2', 'orders_int4');

-- int4 and numeric do not.
SELECT make_hash('orders_num', 'numeric', 8, '{co_n1,co_n2,co_n3}');
SELECT * FROM colojoin.colocation('orders_int4', 'orders_num');

-- Different moduli: one reason, naming both.
SELECT make_hash('lineitem16', 'bigint', 16, '{co_n1,co_n2,co_n3}');
SELECT * FROM colojoin.colocation('orders', 'lineitem16');

-- Missing remainders are fine: a class one table lacks is empty there.
SELECT make_hash('some', 'bigint', 8, '{co_n1,co_n2,co_n2}', '{0,4,7}');
SELECT * FROM colojoin.colocation('orders', 'some');
-- ... even with another modulus, as long as no partitions overlap
-- (remainder 2 of 16 can only meet remainder 2 of 8, which "some" lacks).
SELECT make_hash('sparse16', 'bigint', 16, '{co_n1}', '{2}');
SELECT * FROM colojoin.colocation('some', 'sparse16');

-- Placement: one row per class that no node holds for both tables.
SELECT make_hash('moved', 'bigint', 8, '{co_n2,co_n3,co_n1}');
SELECT * FROM colojoin.colocation('orders', 'moved');
SELECT make_hash('moved_one', 'bigint', 8, '{co_n1,co_n2,co_n3}');
DROP FOREIGN TABLE moved_one_5;
CREATE FOREIGN TABLE moved_one_5 PARTITION OF moved_one
	FOR VALUES WITH (MODULUS 8, REMAINDER 5) SERVER co_n1;
SELECT * FROM colojoin.colocation('orders', 'moved_one');

-- Replicas count: a copy of the partition on the other table's node fixes it.
SELECT colojoin.add_replica('moved_one_5', 'co_n3', copy_data => false);
SELECT * FROM colojoin.colocation('orders', 'moved_one');
-- and a class with a choice of nodes is reported as such
SELECT colojoin.add_replica('orders_0', 'co_n2', copy_data => false);
SELECT colojoin.add_replica('lineitem_0', 'co_n2', copy_data => false);
SELECT * FROM colojoin.colocation('orders', 'lineitem');
SELECT colojoin.drop_replica('moved_one_5', 'co_n3');
SELECT * FROM colojoin.colocation('orders', 'moved_one');

-- Strategy, key count, expression keys, collations.
CREATE TABLE by_range (k bigint, v text) PARTITION BY RANGE (k);
SELECT * FROM colojoin.colocation('orders', 'by_range');
CREATE TABLE two_keys (k bigint, j int) PARTITION BY HASH (k, j);
SELECT * FROM colojoin.colocation('orders', 'two_keys');
CREATE TABLE by_expr (k bigint) PARTITION BY HASH ((k + 1));
SELECT * FROM colojoin.colocation('orders', 'by_expr');
CREATE TABLE by_text_c (t text COLLATE "C") PARTITION BY HASH (t);
CREATE TABLE by_text_posix (t text COLLATE "POSIX") PARTITION BY HASH (t);
SELECT * FROM colojoin.colocation('by_text_c', 'by_text_posix');
CREATE TABLE by_text_c2 (s text COLLATE "C") PARTITION BY HASH (s);
SELECT * FROM colojoin.colocation('by_text_c', 'by_text_c2');
CREATE TABLE two_keys_b (a bigint, b numeric) PARTITION BY HASH (a, b);
SELECT * FROM colojoin.colocation('two_keys', 'two_keys_b');

-- Not partitioned at all: one row per table.
CREATE TABLE flat (k bigint);
SELECT * FROM colojoin.colocation('orders', 'flat');
SELECT * FROM colojoin.colocation('flat', 'orders_0');
-- Not a table: an error.
CREATE VIEW a_view AS SELECT 1 AS k;
SELECT * FROM colojoin.colocation('orders', 'a_view');
CREATE SEQUENCE a_seq;
SELECT * FROM colojoin.colocation('a_seq', 'orders');
SELECT * FROM colojoin.colocation('orders', 0);

--
-- Range partitioning.  Bounds are compared with the operator family's
-- cross-type comparison, so int4 bounds meet int8 bounds.
--
CREATE TABLE r_int (k int, v text) PARTITION BY RANGE (k);
CREATE FOREIGN TABLE r_int_lo PARTITION OF r_int FOR VALUES FROM (MINVALUE) TO (0) SERVER co_n1;
CREATE FOREIGN TABLE r_int_a PARTITION OF r_int FOR VALUES FROM (0) TO (100) SERVER co_n2;
CREATE FOREIGN TABLE r_int_b PARTITION OF r_int FOR VALUES FROM (100) TO (200) SERVER co_n3;
CREATE TABLE r_big (k bigint, v text) PARTITION BY RANGE (k);
CREATE FOREIGN TABLE r_big_b PARTITION OF r_big FOR VALUES FROM (100) TO (200) SERVER co_n3;
CREATE FOREIGN TABLE r_big_a PARTITION OF r_big FOR VALUES FROM (0) TO (100) SERVER co_n2;
CREATE FOREIGN TABLE r_big_hi PARTITION OF r_big FOR VALUES FROM (200) TO (MAXVALUE) SERVER co_n1;
SELECT * FROM colojoin.colocation('r_int', 'r_big');
-- overlapping ranges that do not pair one to one: r_shifted_a overlaps two
CREATE TABLE r_shifted (k int) PARTITION BY RANGE (k);
CREATE FOREIGN TABLE r_shifted_a PARTITION OF r_shifted FOR VALUES FROM (0) TO (150) SERVER co_n2;
CREATE FOREIGN TABLE r_shifted_b PARTITION OF r_shifted FOR VALUES FROM (150) TO (300) SERVER co_n3;
SELECT * FROM colojoin.colocation('r_int', 'r_shifted');
-- ranges that touch without overlapping are separate classes
CREATE TABLE r_touch (k int) PARTITION BY RANGE (k);
CREATE FOREIGN TABLE r_touch_a PARTITION OF r_touch FOR VALUES FROM (200) TO (300) SERVER co_n1;
SELECT * FROM colojoin.colocation('r_int', 'r_touch');
-- multi-column ranges with MINVALUE / MAXVALUE; (2, 0) to (2, 5) overlaps
-- only (2, 0) to (2, 10), so the two pair up like equal bounds
CREATE TABLE r2a (a int, b int) PARTITION BY RANGE (a, b);
CREATE FOREIGN TABLE r2a_1 PARTITION OF r2a FOR VALUES FROM (1, MINVALUE) TO (1, MAXVALUE) SERVER co_n1;
CREATE FOREIGN TABLE r2a_2 PARTITION OF r2a FOR VALUES FROM (2, 0) TO (2, 10) SERVER co_n2;
CREATE TABLE r2b (a bigint, b smallint) PARTITION BY RANGE (a, b);
CREATE FOREIGN TABLE r2b_1 PARTITION OF r2b FOR VALUES FROM (1, MINVALUE) TO (1, MAXVALUE) SERVER co_n1;
CREATE FOREIGN TABLE r2b_2 PARTITION OF r2b FOR VALUES FROM (2, 0) TO (2, 5) SERVER co_n2;
SELECT * FROM colojoin.colocation('r2a', 'r2b');
DROP FOREIGN TABLE r2b_2;
CREATE FOREIGN TABLE r2b_2 PARTITION OF r2b FOR VALUES FROM (2, 0) TO (2, 10) SERVER co_n2;
SELECT * FROM colojoin.colocation('r2a', 'r2b');

--
-- List partitioning: value sets compare as sets; NULL matches NULL.
--
CREATE TABLE l_a (c text COLLATE "C", v int) PARTITION BY LIST (c);
CREATE FOREIGN TABLE l_a_eu PARTITION OF l_a FOR VALUES IN ('eu', 'uk') SERVER co_n1;
CREATE FOREIGN TABLE l_a_us PARTITION OF l_a FOR VALUES IN ('us', NULL) SERVER co_n2;
CREATE TABLE l_b (c text COLLATE "C", w int) PARTITION BY LIST (c);
CREATE FOREIGN TABLE l_b_us PARTITION OF l_b FOR VALUES IN (NULL, 'us') SERVER co_n2;
CREATE FOREIGN TABLE l_b_eu PARTITION OF l_b FOR VALUES IN ('uk', 'eu') SERVER co_n1;
CREATE FOREIGN TABLE l_b_jp PARTITION OF l_b FOR VALUES IN ('jp') SERVER co_n3;
SELECT * FROM colojoin.colocation('l_a', 'l_b');
CREATE TABLE l_c (c text COLLATE "C") PARTITION BY LIST (c);
CREATE FOREIGN TABLE l_c_eu PARTITION OF l_c FOR VALUES IN ('eu') SERVER co_n1;
CREATE FOREIGN TABLE l_c_uk PARTITION OF l_c FOR VALUES IN ('uk', 'us') SERVER co_n1;
-- l_c_uk overlaps both of l_a's partitions
SELECT * FROM colojoin.colocation('l_a', 'l_c');

-- DEFAULT partitions: two defaults pair up when the other partitions match
-- exactly; a default facing a partition it has no equal of could hold the
-- same values, which is a reason.
CREATE TABLE d_a (c int) PARTITION BY LIST (c);
CREATE FOREIGN TABLE d_a_1 PARTITION OF d_a FOR VALUES IN (1) SERVER co_n1;
CREATE FOREIGN TABLE d_a_def PARTITION OF d_a DEFAULT SERVER co_n3;
CREATE TABLE d_b (c bigint) PARTITION BY LIST (c);
CREATE FOREIGN TABLE d_b_1 PARTITION OF d_b FOR VALUES IN (1) SERVER co_n1;
CREATE FOREIGN TABLE d_b_def PARTITION OF d_b DEFAULT SERVER co_n3;
SELECT * FROM colojoin.colocation('d_a', 'd_b');
CREATE FOREIGN TABLE d_b_2 PARTITION OF d_b FOR VALUES IN (2, 3) SERVER co_n2;
SELECT * FROM colojoin.colocation('d_a', 'd_b');
-- a table without default whose partitions the other one all has: fine
CREATE TABLE d_c (c int) PARTITION BY LIST (c);
CREATE FOREIGN TABLE d_c_1 PARTITION OF d_c FOR VALUES IN (1) SERVER co_n1;
SELECT * FROM colojoin.colocation('d_b', 'd_c');
CREATE FOREIGN TABLE d_c_4 PARTITION OF d_c FOR VALUES IN (4) SERVER co_n1;
SELECT * FROM colojoin.colocation('d_b', 'd_c');

--
-- Leaves colojoin cannot run joins on, and classes split over nodes.
--
-- a local partition (on the coordinator) and one of another wrapper
CREATE FOREIGN DATA WRAPPER co_other;
CREATE SERVER co_other_srv FOREIGN DATA WRAPPER co_other;
CREATE TABLE partly (k bigint, v text) PARTITION BY HASH (k);
CREATE FOREIGN TABLE partly_0 PARTITION OF partly FOR VALUES WITH (MODULUS 8, REMAINDER 0) SERVER co_n1;
CREATE TABLE partly_1 PARTITION OF partly FOR VALUES WITH (MODULUS 8, REMAINDER 1);
CREATE FOREIGN TABLE partly_2 PARTITION OF partly FOR VALUES WITH (MODULUS 8, REMAINDER 2) SERVER co_other_srv;
SELECT * FROM colojoin.colocation('orders', 'partly');
-- sub-partitioned classes: colocated only when one node holds all leaves
CREATE TABLE sub (k bigint, s text) PARTITION BY HASH (k);
CREATE TABLE sub_0 PARTITION OF sub FOR VALUES WITH (MODULUS 8, REMAINDER 0) PARTITION BY LIST (s);
CREATE FOREIGN TABLE sub_0_a PARTITION OF sub_0 FOR VALUES IN ('a') SERVER co_n1;
CREATE FOREIGN TABLE sub_0_b PARTITION OF sub_0 FOR VALUES IN ('b') SERVER co_n1;
CREATE TABLE sub_1 PARTITION OF sub FOR VALUES WITH (MODULUS 8, REMAINDER 1) PARTITION BY LIST (s);
CREATE FOREIGN TABLE sub_1_a PARTITION OF sub_1 FOR VALUES IN ('a') SERVER co_n2;
CREATE FOREIGN TABLE sub_1_b PARTITION OF sub_1 FOR VALUES IN ('b') SERVER co_n3;
SELECT * FROM colojoin.colocation('orders', 'sub');
-- a replica of the stray leaf on the other leaf's node reunites the class
SELECT colojoin.add_replica('sub_1_b', 'co_n2', copy_data => false);
SELECT * FROM colojoin.colocation('orders', 'sub');

-- Identifiers that need quoting are quoted in every reason.
CREATE TABLE "Weird ""name""; DROP" ("Weird ""col""; DROP" int) PARTITION BY HASH ("Weird ""col""; DROP");
CREATE FOREIGN TABLE "Weird ""leaf""" PARTITION OF "Weird ""name""; DROP"
	FOR VALUES WITH (MODULUS 8, REMAINDER 3) SERVER co_n1;
SELECT * FROM colojoin.colocation('orders', '"Weird ""name""; DROP"');
SELECT * FROM colojoin.colocation('orders_num', '"Weird ""name""; DROP"');

-- Clean up.
SET client_min_messages = warning;
DROP SCHEMA co CASCADE;
DROP SERVER co_n1, co_n2, co_n3, co_other_srv CASCADE;
DROP FOREIGN DATA WRAPPER co_other;
RESET client_min_messages;
SELECT count(*) AS replicas_left FROM colojoin.replicas WHERE server LIKE 'co\_%';
