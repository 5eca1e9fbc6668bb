--
-- declarations: every way PostgreSQL lets a user declare a sharded table
-- gives the same answers as plain local tables holding the same rows, and
-- never an error PostgreSQL would not raise.  Each declaration is either
-- run on the nodes (colocated column: t) or left to PostgreSQL (f); which
-- one is part of what this suite checks.  Then: writes that would reach
-- only the primary placement of a leaf with replicas are refused.
--
-- Schemas: cj_decl_s holds the sharded tables (leaves on the three nodes,
-- in schema cj_decl_r there), cj_decl_l their plain local twins of the same
-- names.  cj_decl.check(query) runs the query under each search_path and
-- compares the results as multisets.
--
\set prefix cj_decl
\i sql/include/three_nodes_begin.sql

CREATE SCHEMA cj_decl;
CREATE SCHEMA cj_decl_s;
CREATE SCHEMA cj_decl_l;
CREATE TABLE cj_decl.nodes (n int PRIMARY KEY, port int NOT NULL);
INSERT INTO cj_decl.nodes VALUES (1, :'node1_port'), (2, :'node2_port'), (3, :'node3_port');
SELECT dblink_connect('cj_decl_n' || n,
		format('host=127.0.0.1 port=%s dbname=colojoin_regress', port))
FROM cj_decl.nodes ORDER BY n;
SELECT dblink_exec('cj_decl_n' || n,
		'DROP SCHEMA IF EXISTS cj_decl_r CASCADE; CREATE SCHEMA cj_decl_r')
FROM cj_decl.nodes ORDER BY n;

-- run sql on node n
CREATE FUNCTION cj_decl.on_node(n int, sql text) RETURNS void
LANGUAGE sql AS $$ SELECT dblink_exec('cj_decl_n' || n, sql) $$;

--
-- cj_decl.leaf: the node's table (cols, written out, since some
-- declarations give the node other names or another column order) and
-- the foreign partition of parent on that node.
--
CREATE FUNCTION cj_decl.leaf(parent regclass, leaf text, bound text, node int,
							 cols text)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM cj_decl.on_node(node, format('CREATE TABLE cj_decl_r.%I (%s)', leaf, cols));
	EXECUTE format('CREATE FOREIGN TABLE cj_decl_s.%I PARTITION OF %s %s '
				   'SERVER %I OPTIONS (schema_name %L, table_name %L)',
				   leaf, parent, bound, 'cj_decl_n' || node, 'cj_decl_r', leaf);
END
$$;

-- hash leaves 0..m-1, remainder r on node r % 3 + 1 (+ shift)
CREATE FUNCTION cj_decl.hash_leaves(parent regclass, prefix text, m int, cols text,
									shift int DEFAULT 0)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	FOR r IN 0 .. m - 1 LOOP
		PERFORM cj_decl.leaf(parent, prefix || r,
							 format('FOR VALUES WITH (MODULUS %s, REMAINDER %s)', m, r),
							 (r + shift) % 3 + 1, cols);
	END LOOP;
END
$$;

-- the local twin of a sharded table: its columns, plain
CREATE FUNCTION cj_decl.twin(t text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('CREATE TABLE cj_decl_l.%I (LIKE cj_decl_s.%I)', t, t);
END
$$;

-- the same rows in a sharded table and its twin
CREATE FUNCTION cj_decl.load(t text, rows_sql text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('INSERT INTO cj_decl_l.%I %s', t, rows_sql);
	EXECUTE format('INSERT INTO cj_decl_s.%I SELECT * FROM cj_decl_l.%I', t, t);
END
$$;

--
-- check(query): the same rows from the sharded tables as from the twins
-- (same), how many (rows), and whether colojoin ran it (colocated: a
-- ColocatedJoin scan in the plan)
--
CREATE FUNCTION cj_decl.check(query text, OUT same boolean, OUT nrows int,
							  OUT colocated boolean)
LANGUAGE plpgsql AS $$
DECLARE
	plan text := '';
	line text;
	s text[];
	l text[];
BEGIN
	PERFORM set_config('search_path', 'cj_decl_s, public', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		plan := plan || line || E'\n';
	END LOOP;
	s := rows_of(query, 'cj_decl_s');
	l := rows_of(query, 'cj_decl_l');
	PERFORM set_config('search_path', 'public', true);
	same := s = l;
	nrows := cardinality(l);
	colocated := plan LIKE '%Custom Scan (ColocatedJoin)%';
END
$$;

--
-- 1. Expression keys.  ex_a and ex_b: the same expression over columns of
-- other names; ex_c: another expression; exn_a and exn_b: numeric, whose equality is
-- not identity (1.0 = 1.00), so joining on it proves nothing.
--
CREATE TABLE cj_decl_s.ex_a (k int, v int) PARTITION BY HASH ((k % 100));
SELECT cj_decl.hash_leaves('cj_decl_s.ex_a', 'ex_a', 4, 'k int, v int');
CREATE TABLE cj_decl_s.ex_b (j int, w int) PARTITION BY HASH ((j % 100));
SELECT cj_decl.hash_leaves('cj_decl_s.ex_b', 'ex_b', 4, 'j int, w int');
CREATE TABLE cj_decl_s.ex_c (k int, v int) PARTITION BY HASH ((k % 10));
SELECT cj_decl.hash_leaves('cj_decl_s.ex_c', 'ex_c', 4, 'k int, v int');
CREATE TABLE cj_decl_s.exn_a (k numeric, v int) PARTITION BY HASH ((k * 2));
SELECT cj_decl.hash_leaves('cj_decl_s.exn_a', 'exn_a', 4, 'k numeric, v int');
CREATE TABLE cj_decl_s.exn_b (k numeric, v int) PARTITION BY HASH ((k * 2));
SELECT cj_decl.hash_leaves('cj_decl_s.exn_b', 'exn_b', 4, 'k numeric, v int');
-- list on lower(region), NULL and a DEFAULT partition
CREATE TABLE cj_decl_s.lx_a (region text, v int) PARTITION BY LIST (lower(region));
CREATE TABLE cj_decl_s.lx_b (place text, w int) PARTITION BY LIST (lower(place));
SELECT cj_decl.leaf(format('cj_decl_s.%s', t)::regclass, t || '_' || i, b, n,
					CASE t WHEN 'lx_a' THEN 'region text, v int' ELSE 'place text, w int' END)
FROM (VALUES ('lx_a'), ('lx_b')) tabs(t),
	 (VALUES (0, 'FOR VALUES IN (''eu'')', 1), (1, 'FOR VALUES IN (''us'', NULL)', 2),
			 (2, 'FOR VALUES IN (''asia'')', 3), (3, 'DEFAULT', 1)) parts(i, b, n)
ORDER BY t, i;
-- range on (a + b), and on (x + y) in the other table
CREATE TABLE cj_decl_s.rx_a (a int, b int, v int) PARTITION BY RANGE ((a + b));
CREATE TABLE cj_decl_s.rx_b (x int, y int, w int) PARTITION BY RANGE ((x + y));
SELECT cj_decl.leaf(format('cj_decl_s.%s', t)::regclass, t || '_' || i,
					format('FOR VALUES FROM (%s) TO (%s)', i * 100, (i + 1) * 100), i % 3 + 1,
					CASE t WHEN 'rx_a' THEN 'a int, b int, v int' ELSE 'x int, y int, w int' END)
FROM (VALUES ('rx_a'), ('rx_b')) tabs(t), generate_series(0, 3) i
ORDER BY t, i;

SELECT cj_decl.twin(t) FROM unnest('{ex_a,ex_b,ex_c,exn_a,exn_b,lx_a,lx_b,rx_a,rx_b}'::text[]) t;
SELECT cj_decl.load('ex_a', $$SELECT CASE WHEN g % 17 = 0 THEN NULL ELSE g % 300 END, g FROM generate_series(1, 400) g$$);
SELECT cj_decl.load('ex_b', $$SELECT (g * 7) % 320, g FROM generate_series(1, 400) g$$);
SELECT cj_decl.load('ex_c', $$SELECT g % 250, g FROM generate_series(1, 300) g$$);
SELECT cj_decl.load('exn_a', $$SELECT (g % 40)::numeric / (1 + g % 2), g FROM generate_series(1, 100) g$$);
SELECT cj_decl.load('exn_b', $$SELECT round((g % 40)::numeric, 1 + g % 2), g FROM generate_series(1, 100) g$$);
SELECT cj_decl.load('lx_a', $$SELECT (ARRAY['EU', 'us', 'Asia', 'mars', NULL, 'eu'])[g % 6 + 1], g FROM generate_series(1, 120) g$$);
SELECT cj_decl.load('lx_b', $$SELECT (ARRAY['eu', 'US', 'asia', 'Mars', NULL])[g % 5 + 1], g FROM generate_series(1, 100) g$$);
SELECT cj_decl.load('rx_a', $$SELECT g, g % 50, g FROM generate_series(1, 340) g$$);
SELECT cj_decl.load('rx_b', $$SELECT g % 200, g % 120, g FROM generate_series(1, 300) g$$);

-- the shards view says how each table is partitioned, expressions included
SELECT DISTINCT table_name, partition_key FROM colojoin.shards
WHERE table_name::text IN ('cj_decl_s.ex_a', 'cj_decl_s.ex_b', 'cj_decl_s.exn_a', 'cj_decl_s.lx_a', 'cj_decl_s.rx_b')
ORDER BY 1;
SELECT * FROM colojoin.colocation('cj_decl_s.ex_a', 'cj_decl_s.ex_b');
SELECT * FROM colojoin.colocation('cj_decl_s.ex_a', 'cj_decl_s.ex_c');
SELECT * FROM colojoin.colocation('cj_decl_s.rx_a', 'cj_decl_s.rx_b');
SELECT * FROM colojoin.colocation('cj_decl_s.ex_a', 'cj_decl_s.rx_a');

SELECT q, (cj_decl.check(q)).* FROM (VALUES
	('SELECT count(*) FROM ex_a'),
	('SELECT * FROM ex_a WHERE k = 5'),
	('SELECT * FROM ex_a WHERE k % 100 = 5'),
	('SELECT k % 100, count(*), sum(v) FROM ex_a GROUP BY 1'),
	('SELECT k, count(*) FROM ex_a GROUP BY k'),
	('SELECT * FROM ex_a JOIN ex_b ON k = j'),
	('SELECT * FROM ex_a LEFT JOIN ex_b ON k = j'),
	('SELECT * FROM ex_a RIGHT JOIN ex_b ON k = j'),
	('SELECT * FROM ex_a FULL JOIN ex_b ON k = j'),
	('SELECT * FROM ex_a WHERE EXISTS (SELECT FROM ex_b WHERE k = j)'),
	('SELECT * FROM ex_a WHERE NOT EXISTS (SELECT FROM ex_b WHERE k = j)'),
	('SELECT k, count(*) FROM ex_a JOIN ex_b ON k = j GROUP BY k'),
	('SELECT * FROM ex_a JOIN ex_b ON k % 100 = j % 100 WHERE v < 20'),
	('SELECT * FROM ex_a JOIN ex_b ON k + 0 = j'),
	('SELECT * FROM ex_a JOIN ex_b ON k = j WHERE k % 100 = 7'),
	('SELECT * FROM ex_a JOIN ex_c ON ex_a.k = ex_c.k'),
	('SELECT * FROM ex_a FULL JOIN ex_c ON ex_a.k = ex_c.k'),
	('SELECT * FROM exn_a JOIN exn_b ON exn_a.k = exn_b.k'),
	('SELECT * FROM exn_a LEFT JOIN exn_b ON exn_a.k = exn_b.k'),
	('SELECT * FROM lx_a JOIN lx_b ON region = place'),
	('SELECT * FROM lx_a FULL JOIN lx_b ON region = place'),
	('SELECT * FROM lx_a FULL JOIN lx_b ON lower(region) = lower(place)'),
	('SELECT lower(region), count(*) FROM lx_a GROUP BY 1'),
	('SELECT * FROM lx_a WHERE lower(region) = ''us'''),
	('SELECT * FROM lx_a WHERE region IS NULL'),
	('SELECT * FROM rx_a JOIN rx_b ON a = x AND b = y'),
	('SELECT * FROM rx_a LEFT JOIN rx_b ON a = x AND b = y'),
	('SELECT * FROM rx_a JOIN rx_b ON a = x'),
	('SELECT * FROM rx_a JOIN rx_b ON a + b = x + y'),
	('SELECT a + b, count(*) FROM rx_a GROUP BY 1'),
	('SELECT * FROM rx_a JOIN ex_a ON a = k')
) qs(q);

-- keys that are not alike: ex_c's rows are repartitioned by ex_a's key
-- expression, computed on ex_c's nodes over the column the join equates
CREATE FUNCTION cj_decl.strategy(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	PERFORM set_config('search_path', 'cj_decl_s, public', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		IF line ~ 'Strategy:' THEN
			RETURN regexp_replace(line, '^\s*Strategy: ', '');
		END IF;
	END LOOP;
	RETURN 'not run by colojoin';
END
$$;
SET colojoin.enable_broadcast = off;
SELECT q, (cj_decl.check(q)).*, cj_decl.strategy(q) FROM (VALUES
	('SELECT * FROM ex_a JOIN ex_c ON ex_a.k = ex_c.k'),
	('SELECT * FROM ex_a LEFT JOIN ex_c ON ex_a.k = ex_c.k'),
	('SELECT count(*) FROM ex_c JOIN ex_a ON ex_a.k = ex_c.v'),
	('SELECT * FROM ex_a JOIN rx_a ON ex_a.k = rx_a.a'),
	-- numeric equality is not identity: nothing to route one side by (both
	-- sides are repartitioned by their hash instead)
	('SELECT count(*) FROM exn_a JOIN exn_b ON exn_a.k = exn_b.v')
) qs(q);
RESET colojoin.enable_broadcast;

--
-- 2. Multi-level partitioning with mixed strategies: list on region, then
-- hash on k (mm_a, mm_b alike; every leaf of a class on one node), and
-- range on d, then list on region (mr_a), whose class is spread over two
-- nodes in mr_b.
--
CREATE TABLE cj_decl_s.mm_a (region text, k int, v int) PARTITION BY LIST (region);
CREATE TABLE cj_decl_s.mm_b (region text, k int, w int) PARTITION BY LIST (region);
DO $$
DECLARE
	t text;
	r record;
BEGIN
	FOREACH t IN ARRAY ARRAY['mm_a', 'mm_b'] LOOP
		FOR r IN SELECT * FROM (VALUES (0, 'eu', 1), (1, 'us', 2), (2, 'asia', 3)) v(i, reg, n) LOOP
			EXECUTE format('CREATE TABLE cj_decl_s.%I PARTITION OF cj_decl_s.%I '
						   'FOR VALUES IN (%L) PARTITION BY HASH (k)', t || '_' || r.reg, t, r.reg);
			FOR h IN 0 .. 1 LOOP
				PERFORM cj_decl.leaf(format('cj_decl_s.%I', t || '_' || r.reg)::regclass,
									 t || '_' || r.reg || h,
									 format('FOR VALUES WITH (MODULUS 2, REMAINDER %s)', h), r.n,
									 CASE t WHEN 'mm_a' THEN 'region text, k int, v int'
										 ELSE 'region text, k int, w int' END);
			END LOOP;
		END LOOP;
	END LOOP;
END
$$;
CREATE TABLE cj_decl_s.mr_a (d date, region text, v int) PARTITION BY RANGE (d);
CREATE TABLE cj_decl_s.mr_b (d date, region text, w int) PARTITION BY RANGE (d);
DO $$
DECLARE
	t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['mr_a', 'mr_b'] LOOP
		FOR i IN 0 .. 1 LOOP
			EXECUTE format('CREATE TABLE cj_decl_s.%I PARTITION OF cj_decl_s.%I '
						   'FOR VALUES FROM (%L) TO (%L) PARTITION BY LIST (region)',
						   t || '_' || i, t, date '2024-01-01' + 30 * i, date '2024-01-31' + 30 * i);
			PERFORM cj_decl.leaf(format('cj_decl_s.%I', t || '_' || i)::regclass,
								 t || '_' || i || '_eu', 'FOR VALUES IN (''eu'')', i + 1,
								 CASE t WHEN 'mr_a' THEN 'd date, region text, v int' ELSE 'd date, region text, w int' END);
			-- mr_b keeps the other list partition of class 0 on node 3
			PERFORM cj_decl.leaf(format('cj_decl_s.%I', t || '_' || i)::regclass,
								 t || '_' || i || '_def', 'DEFAULT',
								 CASE WHEN t = 'mr_b' AND i = 0 THEN 3 ELSE i + 1 END,
								 CASE t WHEN 'mr_a' THEN 'd date, region text, v int' ELSE 'd date, region text, w int' END);
		END LOOP;
	END LOOP;
END
$$;
SELECT cj_decl.twin(t) FROM unnest('{mm_a,mm_b,mr_a,mr_b}'::text[]) t;
SELECT cj_decl.load('mm_a', $$SELECT (ARRAY['eu', 'us', 'asia'])[g % 3 + 1], CASE WHEN g % 13 = 0 THEN NULL ELSE g % 40 END, g FROM generate_series(1, 200) g$$);
SELECT cj_decl.load('mm_b', $$SELECT (ARRAY['us', 'eu', 'asia'])[g % 3 + 1], (g * 3) % 45, g FROM generate_series(1, 200) g$$);
SELECT cj_decl.load('mr_a', $$SELECT date '2024-01-01' + g % 59, (ARRAY['eu', 'us', NULL])[g % 3 + 1], g FROM generate_series(1, 150) g$$);
SELECT cj_decl.load('mr_b', $$SELECT date '2024-01-01' + (g * 7) % 59, (ARRAY['us', 'eu'])[g % 2 + 1], g FROM generate_series(1, 150) g$$);
SELECT q, (cj_decl.check(q)).* FROM (VALUES
	('SELECT * FROM mm_a JOIN mm_b USING (region, k)'),
	('SELECT * FROM mm_a FULL JOIN mm_b USING (region, k)'),
	('SELECT * FROM mm_a JOIN mm_b USING (region)'),
	('SELECT region, count(*) FROM mm_a GROUP BY region'),
	('SELECT * FROM mm_a JOIN mm_b USING (k)'),
	('SELECT * FROM mr_a JOIN mr_b USING (d)'),
	('SELECT * FROM mr_a JOIN mr_b USING (d) WHERE d < ''2024-01-31'''),
	('SELECT * FROM mr_a LEFT JOIN mr_b USING (d) WHERE d >= ''2024-01-31''')
) qs(q);

--
-- 3. Bounds that do not match one to one.  ro_b's ranges each overlap one
-- range of ro_a (joined pair by pair, on the same nodes); ro_c's middle
-- range overlaps two of ro_a's.  List partitions: lo_a (1,2) with lo_b
-- (1,2,3), (4) with (4,5).
--
CREATE TABLE cj_decl_s.ro_a (k int, v int) PARTITION BY RANGE (k);
CREATE TABLE cj_decl_s.ro_b (k int, w int) PARTITION BY RANGE (k);
CREATE TABLE cj_decl_s.ro_c (k int, w int) PARTITION BY RANGE (k);
SELECT cj_decl.leaf('cj_decl_s.ro_a', 'ro_a' || i, format('FOR VALUES FROM (%s) TO (%s)', i * 100, i * 100 + 100), i + 1, 'k int, v int')
FROM generate_series(0, 2) i;
SELECT cj_decl.leaf('cj_decl_s.ro_b', 'ro_b' || i, format('FOR VALUES FROM (%s) TO (%s)', i * 100 + 20, i * 100 + 70), i + 1, 'k int, w int')
FROM generate_series(0, 2) i;
SELECT cj_decl.leaf('cj_decl_s.ro_c', 'ro_c' || i, b, i + 1, 'k int, w int')
FROM (VALUES (0, 'FOR VALUES FROM (0) TO (50)'), (1, 'FOR VALUES FROM (50) TO (150)'),
			 (2, 'FOR VALUES FROM (150) TO (300)')) v(i, b);
CREATE TABLE cj_decl_s.lo_a (k int, v int) PARTITION BY LIST (k);
CREATE TABLE cj_decl_s.lo_b (k int, w int) PARTITION BY LIST (k);
SELECT cj_decl.leaf('cj_decl_s.lo_a', 'lo_a' || i, b, i + 1, 'k int, v int')
FROM (VALUES (0, 'FOR VALUES IN (1, 2)'), (1, 'FOR VALUES IN (4)')) v(i, b);
SELECT cj_decl.leaf('cj_decl_s.lo_b', 'lo_b' || i, b, i + 1, 'k int, w int')
FROM (VALUES (0, 'FOR VALUES IN (1, 2, 3)'), (1, 'FOR VALUES IN (4, 5)'), (2, 'FOR VALUES IN (6, NULL)')) v(i, b);
SELECT cj_decl.twin(t) FROM unnest('{ro_a,ro_b,ro_c,lo_a,lo_b}'::text[]) t;
SELECT cj_decl.load('ro_a', $$SELECT g % 300, g FROM generate_series(1, 300) g$$);
SELECT cj_decl.load('ro_b', $$SELECT k, g FROM generate_series(1, 300) g, LATERAL (SELECT (g * 7) % 300 AS k) s WHERE k % 100 BETWEEN 20 AND 69$$);
SELECT cj_decl.load('ro_c', $$SELECT (g * 3) % 300, g FROM generate_series(1, 200) g$$);
SELECT cj_decl.load('lo_a', $$SELECT (ARRAY[1, 2, 4])[g % 3 + 1], g FROM generate_series(1, 30) g$$);
SELECT cj_decl.load('lo_b', $$SELECT (ARRAY[1, 3, 4, 5, 6, NULL])[g % 6 + 1], g FROM generate_series(1, 36) g$$);
SELECT * FROM colojoin.colocation('cj_decl_s.ro_a', 'cj_decl_s.ro_b');
SELECT * FROM colojoin.colocation('cj_decl_s.ro_a', 'cj_decl_s.ro_c');
SELECT q, (cj_decl.check(q)).* FROM (VALUES
	('SELECT * FROM ro_a JOIN ro_b USING (k)'),
	('SELECT * FROM ro_a LEFT JOIN ro_b USING (k)'),
	('SELECT * FROM ro_a FULL JOIN ro_b USING (k)'),
	('SELECT * FROM ro_b LEFT JOIN ro_a USING (k)'),
	('SELECT * FROM ro_a WHERE NOT EXISTS (SELECT FROM ro_b WHERE ro_b.k = ro_a.k)'),
	('SELECT * FROM ro_a JOIN ro_b USING (k) WHERE k < 100'),
	('SELECT * FROM ro_a JOIN ro_c USING (k)'),
	('SELECT * FROM ro_a FULL JOIN ro_c USING (k)'),
	('SELECT * FROM lo_a JOIN lo_b USING (k)'),
	('SELECT * FROM lo_a FULL JOIN lo_b USING (k)'),
	('SELECT * FROM lo_b LEFT JOIN lo_a USING (k)')
) qs(q);

--
-- 4. Columns: a parent with a dropped column whose leaves are attached
-- after the fact, with their columns in another order and another attnum
-- layout; remote tables whose columns and names differ (column_name,
-- schema_name, table_name); a generated column; collations on text keys;
-- a domain-typed key.
--
CREATE TABLE cj_decl_s.dc_a (gone int, k int, v text) PARTITION BY HASH (k);
ALTER TABLE cj_decl_s.dc_a DROP COLUMN gone;
CREATE TABLE cj_decl_s.dc_b (k int, w text) PARTITION BY HASH (k);
DO $$
BEGIN
	FOR r IN 0 .. 3 LOOP
		PERFORM cj_decl.on_node(r % 3 + 1,
			format('CREATE TABLE cj_decl_r.dc_a%s ("V" text, "K" int)', r));
		EXECUTE format('CREATE FOREIGN TABLE cj_decl_s.dc_a%s (v text OPTIONS (column_name %L), '
					   'k int OPTIONS (column_name %L)) SERVER cj_decl_n%s '
					   'OPTIONS (schema_name %L, table_name %L)',
					   r, 'V', 'K', r % 3 + 1, 'cj_decl_r', 'dc_a' || r);
		EXECUTE format('ALTER TABLE cj_decl_s.dc_a ATTACH PARTITION cj_decl_s.dc_a%s '
					   'FOR VALUES WITH (MODULUS 4, REMAINDER %s)', r, r);
	END LOOP;
END
$$;
SELECT cj_decl.hash_leaves('cj_decl_s.dc_b', 'dc_b', 4, 'k int, w text');
CREATE TABLE cj_decl_s.gc_a (k int, v int, twice int GENERATED ALWAYS AS (v * 2) STORED)
	PARTITION BY HASH (k);
-- the node computes the generated column itself: postgres_fdw does not send it
SELECT cj_decl.hash_leaves('cj_decl_s.gc_a', 'gc_a', 4,
						   'k int, v int, twice int GENERATED ALWAYS AS (v * 2) STORED');
CREATE TABLE cj_decl_s.tc_a (k text COLLATE "C", v int) PARTITION BY HASH (k);
SELECT cj_decl.hash_leaves('cj_decl_s.tc_a', 'tc_a', 4, 'k text COLLATE "C", v int');
CREATE TABLE cj_decl_s.tc_b (k text COLLATE "C", w int) PARTITION BY HASH (k);
SELECT cj_decl.hash_leaves('cj_decl_s.tc_b', 'tc_b', 4, 'k text COLLATE "C", w int');
CREATE TABLE cj_decl_s.tc_p (k text COLLATE "POSIX", w int) PARTITION BY HASH (k);
SELECT cj_decl.hash_leaves('cj_decl_s.tc_p', 'tc_p', 4, 'k text COLLATE "POSIX", w int');
CREATE DOMAIN cj_decl.posint AS int CHECK (VALUE > 0);
CREATE TABLE cj_decl_s.dm_a (k cj_decl.posint, v int) PARTITION BY HASH (k);
SELECT cj_decl.hash_leaves('cj_decl_s.dm_a', 'dm_a', 4, 'k int, v int');
SELECT cj_decl.twin(t) FROM unnest('{dc_a,dc_b,tc_a,tc_b,tc_p,dm_a}'::text[]) t;
CREATE TABLE cj_decl_l.gc_a (k int, v int, twice int GENERATED ALWAYS AS (v * 2) STORED);
SELECT cj_decl.load('dc_a', $$SELECT g % 70, 'v' || g FROM generate_series(1, 150) g$$);
SELECT cj_decl.load('dc_b', $$SELECT (g * 3) % 80, 'w' || g FROM generate_series(1, 150) g$$);
INSERT INTO cj_decl_l.gc_a (k, v) SELECT g % 60, g FROM generate_series(1, 120) g;
INSERT INTO cj_decl_s.gc_a (k, v) SELECT k, v FROM cj_decl_l.gc_a;
SELECT cj_decl.load('tc_a', $$SELECT chr(65 + g % 40), g FROM generate_series(1, 100) g$$);
SELECT cj_decl.load('tc_b', $$SELECT chr(65 + (g * 3) % 45), g FROM generate_series(1, 100) g$$);
SELECT cj_decl.load('tc_p', $$SELECT chr(65 + (g * 5) % 45), g FROM generate_series(1, 100) g$$);
SELECT cj_decl.load('dm_a', $$SELECT 1 + g % 60, g FROM generate_series(1, 100) g$$);
-- date keys: a range table joined to a hash one cannot be repartitioned
-- by date's hash function (declared on int4, which date does not cast to)
CREATE TABLE cj_decl_s.dt_r (d date, v int) PARTITION BY RANGE (d);
SELECT cj_decl.leaf('cj_decl_s.dt_r', 'dt_r' || i, b, i + 1, 'd date, v int')
FROM (VALUES (0, 'FOR VALUES FROM (MINVALUE) TO (''2024-02-01'')'),
			 (1, 'FOR VALUES FROM (''2024-02-01'') TO (MAXVALUE)')) v(i, b);
CREATE TABLE cj_decl_s.dt_h (d date, w int) PARTITION BY HASH (d);
SELECT cj_decl.hash_leaves('cj_decl_s.dt_h', 'dt_h', 4, 'd date, w int');
SELECT cj_decl.twin(t) FROM unnest('{dt_r,dt_h}'::text[]) t;
SELECT cj_decl.load('dt_r', $$SELECT date '2024-01-01' + g % 70, g FROM generate_series(1, 140) g$$);
SELECT cj_decl.load('dt_h', $$SELECT date '2024-01-01' + (g * 3) % 80, g FROM generate_series(1, 160) g$$);
SELECT * FROM colojoin.colocation('cj_decl_s.tc_a', 'cj_decl_s.tc_p');
SELECT q, (cj_decl.check(q)).* FROM (VALUES
	('SELECT * FROM dc_a'),
	('SELECT * FROM dc_a JOIN dc_b USING (k)'),
	('SELECT * FROM dc_a FULL JOIN dc_b USING (k) WHERE v IS NULL OR v > ''v5'''),
	('SELECT k, string_agg(v, '','' ORDER BY v) FROM dc_a GROUP BY k'),
	('SELECT * FROM gc_a JOIN dc_b USING (k) WHERE twice > 100'),
	('SELECT twice, count(*) FROM gc_a GROUP BY twice'),
	('SELECT * FROM tc_a JOIN tc_b USING (k)'),
	('SELECT * FROM tc_a JOIN tc_p ON tc_a.k = tc_p.k COLLATE "C"'),
	('SELECT * FROM tc_a LEFT JOIN tc_p ON tc_a.k = tc_p.k COLLATE "POSIX"'),
	('SELECT count(*) FROM dt_r JOIN dt_h USING (d)'),
	('SELECT * FROM dt_r JOIN dt_h USING (d) WHERE v < 30'),
	('SELECT * FROM dt_h LEFT JOIN dt_r USING (d)'),
	('SELECT * FROM dm_a JOIN dc_b USING (k)'),
	('SELECT * FROM dm_a LEFT JOIN dc_b ON dm_a.k = dc_b.k')
) qs(q);

--
-- 5. Leaves colojoin cannot run on a node: a plain local table (the class
-- lives on the coordinator) and a leaf of another foreign-data wrapper
-- (file_fdw).  Joins that need them are left to PostgreSQL; joins that
-- pruning keeps away from them still run on the nodes.
--
CREATE TABLE cj_decl_s.ll_a (k int, v int) PARTITION BY LIST (k);
CREATE TABLE cj_decl_s.ll_b (k int, w int) PARTITION BY LIST (k);
SELECT cj_decl.leaf('cj_decl_s.ll_a', 'll_a1', 'FOR VALUES IN (1)', 1, 'k int, v int');
SELECT cj_decl.leaf('cj_decl_s.ll_b', 'll_b1', 'FOR VALUES IN (1)', 1, 'k int, w int');
CREATE TABLE cj_decl_s.ll_a2 PARTITION OF cj_decl_s.ll_a FOR VALUES IN (2);
SELECT cj_decl.leaf('cj_decl_s.ll_b', 'll_b2', 'FOR VALUES IN (2)', 2, 'k int, w int');
SELECT NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'file_fdw') AS own_file_fdw
\gset
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS file_fdw;
RESET client_min_messages;
CREATE SERVER cj_decl_files FOREIGN DATA WRAPPER file_fdw;
DO $$
DECLARE
	f text := current_setting('data_directory') || '/cj_decl_file.csv';
BEGIN
	EXECUTE format('COPY (SELECT 3, g FROM generate_series(1, 5) g) TO %L WITH (FORMAT csv)', f);
	EXECUTE format('CREATE FOREIGN TABLE cj_decl_s.ll_a3 PARTITION OF cj_decl_s.ll_a FOR VALUES IN (3) '
				   'SERVER cj_decl_files OPTIONS (filename %L, format %L)', f, 'csv');
END
$$;
SELECT cj_decl.leaf('cj_decl_s.ll_b', 'll_b3', 'FOR VALUES IN (3)', 3, 'k int, w int');
SELECT cj_decl.twin(t) FROM unnest('{ll_a,ll_b}'::text[]) t;
INSERT INTO cj_decl_l.ll_a SELECT 1 + g % 2, g FROM generate_series(1, 20) g;
INSERT INTO cj_decl_s.ll_a SELECT * FROM cj_decl_l.ll_a;
INSERT INTO cj_decl_l.ll_a SELECT 3, g FROM generate_series(1, 5) g;
SELECT cj_decl.load('ll_b', $$SELECT 1 + g % 3, g FROM generate_series(1, 30) g$$);
SELECT table_name, leaf, bound, partition_class, node, remote_relation, is_replica,
	physical_node IS NOT NULL AS physical_node_known
FROM colojoin.shards WHERE table_name = 'cj_decl_s.ll_a'::regclass ORDER BY leaf::text, node;
SELECT q, (cj_decl.check(q)).* FROM (VALUES
	('SELECT * FROM ll_a'),
	('SELECT * FROM ll_a JOIN ll_b USING (k)'),
	('SELECT * FROM ll_a FULL JOIN ll_b USING (k)'),
	('SELECT k, count(*) FROM ll_a GROUP BY k'),
	('SELECT * FROM ll_a JOIN ll_b USING (k) WHERE k = 1'),
	('SELECT * FROM ll_b WHERE k IN (SELECT k FROM ll_a)')
) qs(q);

--
-- 6. Replicas never lie.  Reads of a table whose every leaf has a replica
-- elsewhere come out right whichever copy they read; writes through the
-- coordinator that could reach a leaf with replicas are refused, naming the
-- leaf and its replicas, before anything is written; writes that cannot
-- reach one still work.
--
CREATE TABLE cj_decl_s.rp_a (k int, v int) PARTITION BY HASH (k);
SELECT cj_decl.hash_leaves('cj_decl_s.rp_a', 'rp_a', 3, 'k int, v int');
CREATE TABLE cj_decl_s.rp_b (k int, w int) PARTITION BY HASH (k);
SELECT cj_decl.hash_leaves('cj_decl_s.rp_b', 'rp_b', 3, 'k int, w int', 1);
SELECT cj_decl.twin(t) FROM unnest('{rp_a,rp_b}'::text[]) t;
SELECT cj_decl.load('rp_a', $$SELECT g % 90, g FROM generate_series(1, 300) g$$);
SELECT cj_decl.load('rp_b', $$SELECT (g * 7) % 100, g FROM generate_series(1, 300) g$$);
-- copies of rp_b's leaves on rp_a's nodes, made and filled by add_replica
SELECT colojoin.add_replica(format('cj_decl_s.rp_b%s', r)::regclass, 'cj_decl_n' || (r % 3) + 1)
FROM generate_series(0, 2) r;
SELECT q, (cj_decl.check(q)).* FROM (VALUES
	('SELECT * FROM rp_a JOIN rp_b USING (k)'),
	('SELECT * FROM rp_a LEFT JOIN rp_b USING (k)'),
	('SELECT count(*), sum(w) FROM rp_b')
) qs(q);
\set VERBOSITY default
-- writes through the sharded table go to every placement (colojoin's write
-- path); the twin gets the same writes
INSERT INTO cj_decl_s.rp_b VALUES (1, 1);
INSERT INTO cj_decl_l.rp_b VALUES (1, 1);
UPDATE cj_decl_s.rp_b SET w = w + 1 WHERE w < 10;
UPDATE cj_decl_l.rp_b SET w = w + 1 WHERE w < 10;
DELETE FROM cj_decl_s.rp_b WHERE k = 5;
DELETE FROM cj_decl_l.rp_b WHERE k = 5;
COPY cj_decl_s.rp_b FROM '/dev/null';
CREATE FUNCTION cj_decl.sneaky() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	UPDATE cj_decl_s.rp_b SET w = 0 WHERE k = 7;
END
$$;
SELECT cj_decl.sneaky();
UPDATE cj_decl_l.rp_b SET w = 0 WHERE k = 7;
-- a leaf written directly, a write in a CTE and TRUNCATE (PostgreSQL's
-- plans, colojoin's callbacks) reach every placement too
INSERT INTO cj_decl_s.rp_b1 SELECT k, 1 FROM generate_series(1000, 1020) k
	WHERE satisfies_hash_partition('cj_decl_s.rp_b'::regclass, 3, 1, k);
INSERT INTO cj_decl_l.rp_b SELECT k, 1 FROM generate_series(1000, 1020) k
	WHERE satisfies_hash_partition('cj_decl_s.rp_b'::regclass, 3, 1, k);
WITH gone AS (DELETE FROM cj_decl_s.rp_b WHERE k > 1010 RETURNING *) SELECT count(*) FROM gone;
DELETE FROM cj_decl_l.rp_b WHERE k > 1010;
BEGIN;
TRUNCATE cj_decl_s.rp_b;
SELECT count(*) FROM cj_decl_s.rp_b;
ROLLBACK;
\set VERBOSITY terse
-- the copies agree with the twin
SELECT q, (cj_decl.check(q)).* FROM (VALUES
	('SELECT * FROM rp_a JOIN rp_b USING (k)'),
	('SELECT count(*), sum(w) FROM rp_b')
) qs(q);
-- the replica of rp_b2 on node 1 holds exactly the twin's rows of that class
SELECT (SELECT (n, s) FROM dblink('cj_decl_n1', 'SELECT count(*), sum(w) FROM cj_decl_r.rp_b2')
			AS t(n bigint, s bigint)) =
	   (SELECT (count(*), sum(w)) FROM cj_decl_l.rp_b
		WHERE satisfies_hash_partition('cj_decl_s.rp_b'::regclass, 3, 2, k)) AS replica_same;
-- writes that reach no replicated leaf go on: rp_a has no replicas
UPDATE cj_decl_s.rp_a SET v = v + 1 WHERE k = 3;
UPDATE cj_decl_l.rp_a SET v = v + 1 WHERE k = 3;
SELECT (cj_decl.check('SELECT * FROM rp_a')).*;
-- without its replicas, rp_b takes writes as before
SELECT colojoin.drop_replica(format('cj_decl_s.rp_b%s', r)::regclass, 'cj_decl_n' || (r % 3) + 1)
FROM generate_series(0, 2) r;
INSERT INTO cj_decl_s.rp_b VALUES (1, 1);
INSERT INTO cj_decl_l.rp_b VALUES (1, 1);
SELECT (cj_decl.check('SELECT * FROM rp_a JOIN rp_b USING (k)')).*;

--
-- Clean up, here and on the nodes.
--
SET client_min_messages = warning;
DROP SCHEMA cj_decl_s CASCADE;
DROP SCHEMA cj_decl_l CASCADE;
DROP SERVER cj_decl_files;
\if :own_file_fdw
DROP EXTENSION file_fdw;
\endif
SELECT dblink_exec('cj_decl_n' || n, 'DROP SCHEMA cj_decl_r CASCADE')
FROM cj_decl.nodes ORDER BY n;
SELECT dblink_disconnect('cj_decl_n' || n) FROM cj_decl.nodes ORDER BY n;
DROP SCHEMA cj_decl CASCADE;
\i sql/include/three_nodes_end.sql
