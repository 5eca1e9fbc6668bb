--
-- aggregates: aggregation pushed into the tasks of a colocated join or of a
-- single sharded table (issue 6) returns exactly what PostgreSQL returns
-- over plain local tables holding the same rows, types included, and
-- colojoin picks the intended shape, shown by EXPLAIN as the "Strategy:"
-- line of the Custom Scan:
--   grouped on the nodes              GROUP BY holds the partition key of a
--                                     table every row comes from
--   partial aggregation on the nodes  any other GROUP BY, or none; the
--                                     coordinator combines (ColocatedCombine)
--   distinct values on the nodes      DISTINCT aggregates, min, max, ...:
--                                     the nodes send distinct values
--   distinct values and partial       DISTINCT aggregates beside count(*),
--   aggregation on the nodes          sum ...: the nodes group by the
--                                     distinct columns too
--   not pushed                        no task aggregates (grouping sets,
--                                     ordered-set, user-defined, volatile)
--
-- Two schemas hold identically named tables: cj_agg_sharded (hash
-- partitioned, leaves on three nodes, made by colojoin.create_shards) and
-- cj_agg_local (plain tables).  cj_agg.check(label, query, expect, tol) runs
-- the query under each search_path, compares the results as multisets and
-- reports whether EXPLAIN of the sharded run shows the expected strategy.
--
-- Comparison: without tol, every row must be identical as text (numerics
-- digit for digit, scale included; floats to their shortest exact text).
-- With tol, the columns named f_* are float results, equal when within
-- relative tolerance tol (1e-12 for float8 results, 1e-6 where float4
-- values are summed in float4); every other column is compared exactly.
--
\set prefix cj_agg
\i sql/include/three_nodes_begin.sql

CREATE SCHEMA cj_agg;
CREATE SCHEMA cj_agg_sharded;
CREATE SCHEMA cj_agg_local;

--
-- The sharded tables: 8 hash classes on 3 nodes, all colocated with orders.
-- vals carries a column of every type the aggregates take; partial lacks
-- the leaves of classes 6 and 7 (empty classes).
--
SET search_path = cj_agg_sharded;
CREATE TABLE orders (o_key bigint, o_cust int, o_status char(1),
	o_total numeric(10,2), o_date date) PARTITION BY HASH (o_key);
SELECT colojoin.create_shards('orders', '{cj_agg_n1,cj_agg_n2,cj_agg_n3}', 8);
CREATE TABLE lineitem (l_key bigint, l_line int, l_qty int, l_price numeric(12,2),
	l_disc float8, l_flag text, l_ok boolean) PARTITION BY HASH (l_key);
SELECT colojoin.create_shards('lineitem', '{cj_agg_n1,cj_agg_n2,cj_agg_n3}', colocate_with => 'orders');
-- an int4 key, colocated with the int8 keys
CREATE TABLE shipments (s_key int, s_carrier text, s_days int2, s_cost money)
	PARTITION BY HASH (s_key);
SELECT colojoin.create_shards('shipments', '{cj_agg_n1,cj_agg_n2,cj_agg_n3}', colocate_with => 'orders');
CREATE TABLE vals (k bigint, g int, i2 int2, i4 int4, i8 int8, n numeric, n2 numeric(12,2),
	n5 numeric(20,5), f4 float4, f8 float8, iv interval, m money, b boolean,
	big numeric, near int4, huge int8, nul int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('vals', '{cj_agg_n1,cj_agg_n2,cj_agg_n3}', colocate_with => 'orders');
-- tags: one row for each of a few keys (few groups on a nullable side)
CREATE TABLE tags (t_key bigint, t_name text) PARTITION BY HASH (t_key);
SELECT colojoin.create_shards('tags', '{cj_agg_n1,cj_agg_n2,cj_agg_n3}', colocate_with => 'orders');
CREATE TABLE partial (p_key bigint, p_val int) PARTITION BY HASH (p_key);
SELECT colojoin.create_shards('partial', '{cj_agg_n1,cj_agg_n2,cj_agg_n3}', colocate_with => 'orders');
DROP FOREIGN TABLE partial_p6, partial_p7;
RESET search_path;

-- The same tables, plain and local.
DO $$
DECLARE
	t text;
BEGIN
	FOR t IN SELECT c.relname FROM pg_class c
			 WHERE c.relnamespace = 'cj_agg_sharded'::regnamespace
			   AND c.relkind = 'p' ORDER BY 1
	LOOP
		EXECUTE format('CREATE TABLE cj_agg_local.%I (LIKE cj_agg_sharded.%I)', t, t);
	END LOOP;
END
$$;
SELECT c.relname, count(*) AS leaves
FROM pg_class c JOIN pg_partition_tree(c.oid) pt ON pt.isleaf
WHERE c.relnamespace = 'cj_agg_sharded'::regnamespace AND c.relkind = 'p'
GROUP BY c.relname ORDER BY c.relname;
SELECT relname FROM pg_class
WHERE relnamespace = 'cj_agg_local'::regnamespace AND relkind = 'r' ORDER BY relname;

--
-- The rows: deterministic, with NULL keys, NULL values, NULL group keys, a
-- NULL-only column (nul) and a NULL-only group (n2 of g = 3), int4 values
-- near 2^31 (near), int8 values near 2^63 (huge), numerics of scales 2, 5,
-- 20 and of up to 52 digits (n2, n5, n, big), float4/float8 values that are
-- not binary fractions.  Loaded into the local tables, then copied into the
-- sharded ones (postgres_fdw routes each row to its partition).
--
INSERT INTO cj_agg_local.orders
SELECT CASE WHEN g % 29 = 0 THEN NULL ELSE g % 2000 - 19 END,
	   CASE WHEN g % 41 = 0 THEN NULL ELSE g % 17 END,
	   (ARRAY['F', 'O', 'P'])[g % 3 + 1], (g * 7.25) % 1000, date '2024-01-01' + g % 90
FROM generate_series(1, 3000) g;
INSERT INTO cj_agg_local.lineitem
SELECT CASE WHEN g % 31 = 0 THEN NULL ELSE (g * 7) % 2003 - 19 END, g % 5 + 1,
	   CASE WHEN g % 43 = 0 THEN NULL ELSE g % 23 END, (g * 3.5) % 500,
	   (g % 11) * 0.01 + 0.003,
	   CASE WHEN g % 37 = 0 THEN NULL ELSE (ARRAY['A', 'N', 'R'])[g % 3 + 1] END,
	   CASE WHEN g % 53 = 0 THEN NULL ELSE g % 4 <> 0 END
FROM generate_series(1, 12000) g;
INSERT INTO cj_agg_local.shipments
SELECT CASE WHEN g % 13 = 0 THEN NULL ELSE (g * 3) % 2201 - 19 END,
	   (ARRAY['air', 'rail', 'ship', 'truck'])[g % 4 + 1], g % 11, (g * 1.37)::money
FROM generate_series(1, 2000) g;
INSERT INTO cj_agg_local.vals
SELECT CASE WHEN g % 97 = 0 THEN NULL ELSE g % 1000 END,
	   CASE WHEN g % 37 = 0 THEN NULL ELSE g % 10 END,
	   (g * 3) % 1000 - 500, (g::int8 * 1234567) % 100000 - 50000,
	   (g::int8 * 987654321987) % 1000000000000 - 400000000000,
	   g / 7.0, CASE WHEN g % 10 = 3 THEN NULL ELSE g * 1.25 - 300 END,
	   (g * 3.14159) % 97.5,
	   (g % 37) * 0.1, g * 1.1e3 / 7,
	   make_interval(months => g % 3, days => g % 13, secs => g * 1.5),
	   (g * 0.37)::money,
	   CASE WHEN g % 23 = 0 THEN NULL ELSE g % 5 <> 0 END,
	   123456789012345678901234567890.123456789 * g + 0.000000000000000001,
	   2147483000 + g % 600, 9223372036854775000 - g, NULL
FROM generate_series(1, 3000) g;
INSERT INTO cj_agg_local.tags SELECT g, 'tag ' || g FROM generate_series(0, 39) g;
-- only the rows that have a partition in the sharded table
INSERT INTO cj_agg_local.partial
SELECT k, g % 50
FROM generate_series(1, 2000) g,
	 LATERAL (SELECT CASE WHEN g % 23 = 0 THEN NULL ELSE (g * 11) % 1500 - 19 END::bigint AS k) s
WHERE EXISTS (SELECT FROM generate_series(0, 5) r
			  WHERE satisfies_hash_partition('cj_agg_sharded.partial'::regclass, 8, r, s.k));
DO $$
DECLARE
	t text;
BEGIN
	FOR t IN SELECT relname FROM pg_class
			 WHERE relnamespace = 'cj_agg_local'::regnamespace AND relkind = 'r' ORDER BY 1
	LOOP
		EXECUTE format('INSERT INTO cj_agg_sharded.%I SELECT * FROM cj_agg_local.%I', t, t);
		-- ANALYZE reads through postgres_fdw: the rows must be committed
		COMMIT;
		EXECUTE format('ANALYZE cj_agg_local.%I', t);
		EXECUTE format('ANALYZE cj_agg_sharded.%I', t);
	END LOOP;
END
$$;

-- a local table beside the sharded ones
CREATE TABLE cj_agg.status_names (code char(1), name text);
INSERT INTO cj_agg.status_names VALUES ('F', 'finished'), ('O', 'open'), ('P', 'pending');

-- a function no node may run
CREATE FUNCTION cj_agg.is_odd(bigint) RETURNS boolean LANGUAGE plpgsql IMMUTABLE
AS $$ BEGIN RETURN $1 % 2 = 1; END $$;

-- user-defined aggregates: no node has them
CREATE FUNCTION cj_agg.add_int(s int8, v int) RETURNS int8 LANGUAGE plpgsql IMMUTABLE
AS $$ BEGIN RETURN s + coalesce(v, 0); END $$;
CREATE AGGREGATE cj_agg.plsum(int) (SFUNC = cj_agg.add_int, STYPE = int8, INITCOND = '0');
CREATE FUNCTION cj_agg.larger(int, int) RETURNS int LANGUAGE sql IMMUTABLE STRICT
AS 'SELECT greatest($1, $2)';
CREATE AGGREGATE cj_agg.sqlmax(int) (SFUNC = cj_agg.larger, STYPE = int,
	COMBINEFUNC = cj_agg.larger, PARALLEL = SAFE);

--
-- The checking functions.
--
-- cj_agg.run: the rows of query under search_path schema, each as
-- {"t": its text, "j": its fields}
CREATE FUNCTION cj_agg.run(query text, schema text) RETURNS jsonb[]
LANGUAGE plpgsql AS $$
DECLARE
	saved text := current_setting('search_path');
	rec record;
	rows jsonb[] := '{}';
BEGIN
	PERFORM set_config('search_path', schema, true);
	FOR rec IN EXECUTE query LOOP
		rows := rows || jsonb_build_object('t', rec::text, 'j', to_jsonb(rec));
	END LOOP;
	PERFORM set_config('search_path', saved, true);
	RETURN rows;
END
$$;

CREATE FUNCTION cj_agg.plan(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	saved text := current_setting('search_path');
	line text;
	plan text := '';
BEGIN
	PERFORM set_config('search_path', 'cj_agg_sharded', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		plan := plan || line || E'\n';
	END LOOP;
	PERFORM set_config('search_path', saved, true);
	RETURN plan;
END
$$;

-- what the tasks of a plan aggregate: the strategies found, or 'not pushed'
CREATE FUNCTION cj_agg.plan_strategy(plan text) RETURNS text
LANGUAGE sql AS $$
	SELECT coalesce(string_agg(m[1], ' + '), 'not pushed')
	FROM regexp_matches(plan, 'Strategy: ([a-z ]+ on the nodes)', 'g') m
$$;

-- expect: a strategy, or several separated by '|' when either is right;
-- partial aggregation must come with its ColocatedCombine
CREATE FUNCTION cj_agg.plan_verdict(plan text, expect text) RETURNS text
LANGUAGE sql AS $$
	SELECT CASE
		WHEN expect IS NULL THEN 'plan not checked'
		WHEN NOT cj_agg.plan_strategy(plan) = ANY (string_to_array(expect, '|'))
			THEN 'expected ' || expect || ' but got ' || cj_agg.plan_strategy(plan)
		WHEN cj_agg.plan_strategy(plan) = 'partial aggregation on the nodes'
			 AND plan NOT LIKE '%Custom Scan (ColocatedCombine)%'
			THEN 'partial aggregation without a ColocatedCombine'
		ELSE 'plan ok'
	END
$$;

-- the fields of a row that are compared exactly (all but f_*)
CREATE FUNCTION cj_agg.exact_part(r jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
	SELECT r - ARRAY(SELECT k FROM jsonb_object_keys(r) k WHERE k LIKE 'f\_%')
$$;

-- two float fields (numbers, null, or strings such as "NaN") equal to
-- within relative tolerance tol
CREATE FUNCTION cj_agg.close(a jsonb, b jsonb, tol float8) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE
		WHEN a = b THEN true
		WHEN jsonb_typeof(a) = 'number' AND jsonb_typeof(b) = 'number'
			THEN abs(a::text::float8 - b::text::float8) <=
				 tol * greatest(abs(a::text::float8), abs(b::text::float8))
		ELSE false
	END
$$;

-- the rows of both sides as multisets, as described at the top
CREATE FUNCTION cj_agg.compare(sharded jsonb[], local jsonb[], tol float8) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	s jsonb[];
	l jsonb[];
	bad text;
BEGIN
	IF cardinality(sharded) <> cardinality(local) THEN
		RETURN format('MISMATCH: %s rows vs %s local', cardinality(sharded), cardinality(local));
	END IF;
	IF tol IS NULL THEN
		SELECT format('MISMATCH: only sharded: %s; only local: %s',
					  (SELECT string_agg(x, ' ') FROM (SELECT r ->> 't' FROM unnest(sharded) r EXCEPT ALL
						SELECT r ->> 't' FROM unnest(local) r ORDER BY 1 LIMIT 2) d(x)),
					  (SELECT string_agg(x, ' ') FROM (SELECT r ->> 't' FROM unnest(local) r EXCEPT ALL
						SELECT r ->> 't' FROM unnest(sharded) r ORDER BY 1 LIMIT 2) d(x)))
		INTO bad
		WHERE EXISTS (SELECT r ->> 't' FROM unnest(sharded) r EXCEPT ALL
					  SELECT r ->> 't' FROM unnest(local) r);
		RETURN coalesce(bad, 'ok');
	END IF;
	s := ARRAY(SELECT r -> 'j' FROM unnest(sharded) r
			   ORDER BY cj_agg.exact_part(r -> 'j')::text COLLATE "C");
	l := ARRAY(SELECT r -> 'j' FROM unnest(local) r
			   ORDER BY cj_agg.exact_part(r -> 'j')::text COLLATE "C");
	SELECT format('MISMATCH: sharded %s, local %s', s[i], l[i]) INTO bad
	FROM generate_subscripts(s, 1) i
	WHERE cj_agg.exact_part(s[i]) <> cj_agg.exact_part(l[i])
	   OR EXISTS (SELECT FROM jsonb_object_keys(l[i]) k
				  WHERE k LIKE 'f\_%' AND NOT cj_agg.close(s[i] -> k, l[i] -> k, tol))
	ORDER BY i LIMIT 1;
	RETURN coalesce(bad, 'ok');
END
$$;

-- Errors are reported in the result, not raised, so that one failing
-- query does not hide the others.
CREATE FUNCTION cj_agg.check(label text, query text, expect text, tol float8 DEFAULT NULL,
							 OUT test text, OUT nrows int, OUT result text, OUT plan text)
LANGUAGE plpgsql AS $$
DECLARE
	sharded jsonb[];
	local jsonb[];
BEGIN
	test := label;
	BEGIN
		plan := cj_agg.plan_verdict(cj_agg.plan(query), expect);
		sharded := cj_agg.run(query, 'cj_agg_sharded');
	EXCEPTION WHEN OTHERS THEN
		result := 'ERROR on the sharded tables: ' || SQLERRM;
		plan := coalesce(plan, 'no plan');
		RETURN;
	END;
	local := cj_agg.run(query, 'cj_agg_local');
	nrows := cardinality(sharded);
	result := cj_agg.compare(sharded, local, tol);
END
$$;

-- The result tables below: one line per query, "test | nrows | result | plan".
\pset format unaligned
\pset fieldsep ' | '

-- the checker itself can fail: a scale, a float digit, a missing row
SELECT cj_agg.compare(cj_agg.run('SELECT 1.0::numeric AS x', 'pg_catalog'),
					  cj_agg.run('SELECT 1.00::numeric AS x', 'pg_catalog'), NULL) AS scale,
	   cj_agg.compare(cj_agg.run('SELECT 0.1::float8 + 0.2 AS x', 'pg_catalog'),
					  cj_agg.run('SELECT 0.3::float8 AS x', 'pg_catalog'), NULL) AS float_exact,
	   cj_agg.compare(cj_agg.run('SELECT 0.1::float8 + 0.2 AS f_x', 'pg_catalog'),
					  cj_agg.run('SELECT 0.3::float8 AS f_x', 'pg_catalog'), 1e-12) AS float_close,
	   cj_agg.compare(cj_agg.run('SELECT 0.3001::float8 AS f_x', 'pg_catalog'),
					  cj_agg.run('SELECT 0.3::float8 AS f_x', 'pg_catalog'), 1e-12) AS float_far,
	   cj_agg.compare(cj_agg.run('SELECT 1 AS x UNION ALL SELECT 1', 'pg_catalog'),
					  cj_agg.run('SELECT 1 AS x UNION ALL SELECT 2', 'pg_catalog'), NULL) AS multiset;

-- the data are there, the same on both sides
SELECT c.* FROM (VALUES
	('orders', 'SELECT * FROM orders'),
	('lineitem', 'SELECT * FROM lineitem'),
	('shipments', 'SELECT * FROM shipments'),
	('vals', 'SELECT * FROM vals'),
	('tags', 'SELECT * FROM tags'),
	('partial', 'SELECT * FROM partial')
) v(label, q), LATERAL cj_agg.check(v.label, v.q, NULL) c;

--
-- Every aggregate over a single sharded table (vals): without GROUP BY
-- (partial), grouped by a non-key column g with a NULL group (partial),
-- grouped by the key k (grouped on the nodes).  The type of every result
-- is compared too.
--
SELECT c.* FROM (VALUES
	('int: count, sum, avg', $q$
		SELECT count(*) AS n, count(i2) AS c2, count(nul) AS cnul, sum(i2) AS s2, sum(i4) AS s4,
			   sum(i8) AS s8, avg(i2) AS a2, avg(i4) AS a4, avg(i8) AS a8,
			   concat_ws(' ', pg_typeof(count(*)), pg_typeof(sum(i2)), pg_typeof(sum(i4)),
						 pg_typeof(sum(i8)), pg_typeof(avg(i2)), pg_typeof(avg(i4)),
						 pg_typeof(avg(i8))) AS types
		FROM vals$q$, 'partial aggregation on the nodes'),
	('int: count, sum, avg by g', $q$
		SELECT g, count(*) AS n, count(i2) AS c2, sum(i2) AS s2, sum(i4) AS s4, sum(i8) AS s8,
			   avg(i2) AS a2, avg(i4) AS a4, avg(i8) AS a8,
			   concat_ws(' ', pg_typeof(sum(i2)), pg_typeof(sum(i4)), pg_typeof(sum(i8)),
						 pg_typeof(avg(i4))) AS types
		FROM vals GROUP BY g$q$, 'partial aggregation on the nodes'),
	('int: count, sum, avg by key', $q$
		SELECT k, count(*) AS n, count(i2) AS c2, sum(i2) AS s2, sum(i4) AS s4, sum(i8) AS s8,
			   avg(i2) AS a2, avg(i4) AS a4, avg(i8) AS a8,
			   concat_ws(' ', pg_typeof(sum(i2)), pg_typeof(sum(i4)), pg_typeof(sum(i8)),
						 pg_typeof(avg(i4))) AS types
		FROM vals GROUP BY k$q$, 'grouped on the nodes'),
	('int: min, max, bit_and, bit_or, bit_xor', $q$
		SELECT min(i2) AS mn2, max(i2) AS mx2, min(i4) AS mn4, max(i8) AS mx8,
			   bit_and(i2) AS ba2, bit_or(i2) AS bo2, bit_xor(i2) AS bx2,
			   bit_and(i4 + 50000) AS ba4, bit_or(i4) AS bo4, bit_and(i8) AS ba8, bit_or(i8) AS bo8,
			   concat_ws(' ', pg_typeof(min(i2)), pg_typeof(max(i8)), pg_typeof(bit_and(i2)),
						 pg_typeof(bit_or(i4)), pg_typeof(bit_xor(i8))) AS types
		FROM vals$q$, 'partial aggregation on the nodes'),
	('int: min, max, bit_and, bit_or, bit_xor by g', $q$
		SELECT g, min(i2) AS mn2, max(i2) AS mx2, min(i4) AS mn4, max(i8) AS mx8,
			   bit_and(i2) AS ba2, bit_or(i2) AS bo2, bit_xor(i4) AS bx4,
			   bit_and(i4 + 50000) AS ba4, bit_or(i8) AS bo8
		FROM vals GROUP BY g$q$, 'partial aggregation on the nodes'),
	('numeric of several scales', $q$
		SELECT count(n) AS c, sum(n) AS s, sum(n2) AS s2, sum(n5) AS s5, sum(big) AS sb,
			   avg(n) AS a, avg(n2) AS a2, avg(n5) AS a5, avg(big) AS ab,
			   min(n5) AS mn, max(big) AS mx, scale(avg(n2)) AS sc,
			   concat_ws(' ', pg_typeof(sum(n2)), pg_typeof(avg(n5)), pg_typeof(min(n2))) AS types
		FROM vals$q$, 'partial aggregation on the nodes'),
	('numeric of several scales by g', $q$
		SELECT g, count(n2) AS c, sum(n) AS s, sum(n2) AS s2, sum(n5) AS s5, sum(big) AS sb,
			   avg(n) AS a, avg(n2) AS a2, avg(n5) AS a5, avg(big) AS ab, min(n2) AS mn, max(n5) AS mx
		FROM vals GROUP BY g$q$, 'partial aggregation on the nodes'),
	('numeric of several scales by key', $q$
		SELECT k, sum(n) AS s, sum(n2) AS s2, avg(n) AS a, avg(n5) AS a5, avg(big) AS ab
		FROM vals GROUP BY k$q$, 'grouped on the nodes'),
	('interval', $q$
		SELECT count(iv) AS c, sum(iv) AS s, avg(iv) AS a, min(iv) AS mn, max(iv) AS mx,
			   concat_ws(' ', pg_typeof(sum(iv)), pg_typeof(avg(iv))) AS types
		FROM vals$q$, 'partial aggregation on the nodes'),
	('interval by g', $q$
		SELECT g, sum(iv) AS s, avg(iv) AS a, min(iv) AS mn, max(iv) AS mx
		FROM vals GROUP BY g$q$, 'partial aggregation on the nodes'),
	('money', $q$
		SELECT count(m) AS c, sum(m) AS s, min(m) AS mn, max(m) AS mx,
			   concat_ws(' ', pg_typeof(sum(m)), pg_typeof(max(m))) AS types
		FROM vals$q$, 'partial aggregation on the nodes'),
	('money by g', $q$
		SELECT g, sum(m) AS s, min(m) AS mn, max(m) AS mx FROM vals GROUP BY g$q$,
		'partial aggregation on the nodes'),
	('boolean', $q$
		SELECT bool_and(b) AS ba, bool_or(b) AS bo, every(b) AS ev, bool_and(i4 > -50001) AS ba2,
			   bool_or(i4 > 1000000) AS bo2, count(b) AS c,
			   concat_ws(' ', pg_typeof(bool_and(b)), pg_typeof(every(b))) AS types
		FROM vals$q$, 'partial aggregation on the nodes'),
	('boolean by g', $q$
		SELECT g, bool_and(b) AS ba, bool_or(b) AS bo, every(b) AS ev, bool_or(k > 150) AS bo2
		FROM vals GROUP BY g$q$, 'partial aggregation on the nodes'),
	('boolean by key', $q$
		SELECT k, bool_and(b) AS ba, bool_or(b) AS bo, every(i2 > 0) AS ev
		FROM vals GROUP BY k$q$, 'grouped on the nodes')
) v(label, q, e), LATERAL cj_agg.check(v.label, v.q, v.e) c;

-- floats: sums and averages within rounding, min and max exact (a float4
-- sum of 3,000 values adds its partial sums in the order the tasks end,
-- and float4 addition is not associative: 1e-4 of relative difference)
SELECT c.* FROM (VALUES
	('float4 and float8', $q$
		SELECT count(f4) AS c, sum(f4) AS f_s4, sum(f8) AS f_s8, avg(f4) AS f_a4, avg(f8) AS f_a8,
			   min(f4) AS mn4, max(f4) AS mx4, min(f8) AS mn8, max(f8) AS mx8,
			   concat_ws(' ', pg_typeof(sum(f4)), pg_typeof(sum(f8)), pg_typeof(avg(f4)),
						 pg_typeof(avg(f8)), pg_typeof(min(f4))) AS types
		FROM vals$q$, 'partial aggregation on the nodes', 1e-4),
	('float8', $q$
		SELECT sum(f8) AS f_s8, avg(f8) AS f_a8, avg(f4) AS f_a4, sum(f8 * f4) AS f_sp
		FROM vals$q$, 'partial aggregation on the nodes', 1e-12),
	('float4 and float8 by g', $q$
		SELECT g, sum(f4) AS f_s4, sum(f8) AS f_s8, avg(f4) AS f_a4, avg(f8) AS f_a8,
			   min(f4) AS mn4, max(f8) AS mx8
		FROM vals GROUP BY g$q$, 'partial aggregation on the nodes', 1e-6),
	('float8 by g', $q$
		SELECT g, sum(f8) AS f_s8, avg(f8) AS f_a8, avg(f4) AS f_a4, sum(f8 * f8) AS f_ss
		FROM vals GROUP BY g$q$, 'partial aggregation on the nodes', 1e-12),
	('float8 over a join', $q$
		SELECT o_status, sum(l_disc) AS f_s, avg(l_disc) AS f_a, min(l_disc) AS mn
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_status$q$,
		'partial aggregation on the nodes', 1e-12),
	('float4 and float8 by key', $q$
		SELECT k, sum(f4) AS f_s4, sum(f8) AS f_s8, avg(f4) AS f_a4, avg(f8) AS f_a8
		FROM vals GROUP BY k$q$, 'grouped on the nodes', 1e-12)
) v(label, q, e, tol), LATERAL cj_agg.check(v.label, v.q, v.e, v.tol) c;

-- variance and standard deviation, every form: exact for integer and
-- numeric input (numeric results), within rounding for float input
SELECT c.* FROM (VALUES
	('variances of int2, int4, int8', $q$
		SELECT stddev(i2) AS sd2, stddev_samp(i4) AS ss4, stddev_pop(i8) AS sp8,
			   variance(i2) AS v2, var_samp(i8) AS vs8, var_pop(i4) AS vp4,
			   stddev_pop(i2) AS sp2, var_pop(i8) AS vp8,
			   concat_ws(' ', pg_typeof(stddev(i2)), pg_typeof(var_pop(i4)),
						 pg_typeof(variance(i8))) AS types
		FROM vals$q$, 'partial aggregation on the nodes'),
	('variances of int2, int4, int8 by g', $q$
		SELECT g, stddev(i2) AS sd2, stddev_samp(i4) AS ss4, stddev_pop(i8) AS sp8,
			   variance(i2) AS v2, var_samp(i8) AS vs8, var_pop(i4) AS vp4
		FROM vals GROUP BY g$q$, 'partial aggregation on the nodes'),
	('variances of numerics', $q$
		SELECT stddev(n) AS sd, stddev_pop(n2) AS sp2, variance(n5) AS v5, var_samp(big) AS vsb,
			   var_pop(n) AS vp, stddev_samp(n5) AS ss5,
			   concat_ws(' ', pg_typeof(stddev(n)), pg_typeof(var_samp(n2))) AS types
		FROM vals$q$, 'partial aggregation on the nodes'),
	('variances of numerics by g', $q$
		SELECT g, stddev(n) AS sd, stddev_pop(n2) AS sp2, variance(n5) AS v5, var_samp(big) AS vsb,
			   var_pop(n) AS vp, stddev_samp(n5) AS ss5, stddev(big) AS sdb
		FROM vals GROUP BY g$q$, 'partial aggregation on the nodes'),
	('variances by key: one-row groups', $q$
		SELECT k, count(*) AS c, stddev(i4) AS sd, var_samp(n2) AS vs, var_pop(i8) AS vp,
			   stddev_pop(n5) AS sp
		FROM vals GROUP BY k$q$, 'grouped on the nodes')
) v(label, q, e), LATERAL cj_agg.check(v.label, v.q, v.e) c;
SELECT c.* FROM (VALUES
	('variances of floats', $q$
		SELECT stddev(f4) AS f_sd4, stddev_samp(f8) AS f_ss8, stddev_pop(f4) AS f_sp4,
			   variance(f8) AS f_v8, var_samp(f4) AS f_vs4, var_pop(f8) AS f_vp8,
			   concat_ws(' ', pg_typeof(stddev(f4)), pg_typeof(var_pop(f8))) AS types
		FROM vals$q$, 'partial aggregation on the nodes', 1e-12),
	('variances of floats by g', $q$
		SELECT g, stddev(f4) AS f_sd4, stddev_samp(f8) AS f_ss8, stddev_pop(f8) AS f_sp8,
			   variance(f4) AS f_v4, var_samp(f8) AS f_vs8, var_pop(f4) AS f_vp4
		FROM vals GROUP BY g$q$, 'partial aggregation on the nodes', 1e-12),
	('variances of floats by key', $q$
		SELECT k, stddev(f8) AS f_sd8, var_samp(f4) AS f_vs4, var_pop(f8) AS f_vp8
		FROM vals GROUP BY k$q$, 'grouped on the nodes', 1e-12)
) v(label, q, e, tol), LATERAL cj_agg.check(v.label, v.q, v.e, v.tol) c;

--
-- FILTER clauses, overflow, precision, NULL-only input and empty input.
--
SELECT c.* FROM (VALUES
	('filter clauses', $q$
		SELECT count(*) FILTER (WHERE b) AS cb, count(i4) FILTER (WHERE i2 > 0) AS c4,
			   sum(i4) FILTER (WHERE k < 100) AS s4, avg(n2) FILTER (WHERE NOT b) AS a2,
			   min(iv) FILTER (WHERE i8 > 0) AS mn, bool_or(b) FILTER (WHERE i2 < 0) AS bo,
			   stddev(i2) FILTER (WHERE k % 3 = 0) AS sd, sum(m) FILTER (WHERE b) AS sm,
			   bit_or(i4) FILTER (WHERE g = 2) AS bo4, count(*) AS n
		FROM vals$q$, 'partial aggregation on the nodes'),
	('filter clauses by g', $q$
		SELECT g, count(*) FILTER (WHERE b) AS cb, count(i4) FILTER (WHERE i2 > 0) AS c4,
			   sum(i4) FILTER (WHERE k < 100) AS s4, avg(n2) FILTER (WHERE NOT b) AS a2,
			   min(iv) FILTER (WHERE i8 > 0) AS mn, bool_or(b) FILTER (WHERE i2 < 0) AS bo,
			   var_pop(n5) FILTER (WHERE k % 3 = 0) AS vp, sum(i4) AS s
		FROM vals GROUP BY g$q$, 'partial aggregation on the nodes'),
	('filter clauses by key', $q$
		SELECT k, count(*) FILTER (WHERE b) AS cb, sum(i4) FILTER (WHERE i2 > 0) AS s4,
			   avg(n5) FILTER (WHERE g < 5) AS a5
		FROM vals GROUP BY k$q$, 'grouped on the nodes'),
	('filters matching nothing', $q$
		SELECT count(*) FILTER (WHERE i4 > 1000000) AS c, sum(i4) FILTER (WHERE i4 > 1000000) AS s,
			   avg(n) FILTER (WHERE i4 > 1000000) AS a, max(m) FILTER (WHERE i4 > 1000000) AS mx,
			   stddev(i8) FILTER (WHERE i4 > 1000000) AS sd, count(*) AS n
		FROM vals$q$, 'partial aggregation on the nodes'),
	('int4 sums beyond 2^31: exact bigint', $q$
		SELECT sum(near) AS s, avg(near) AS a, sum(near) > 2147483647 AS beyond,
			   sum((near - 2147483000)::int2) AS s2, pg_typeof(sum(near)) AS t
		FROM vals$q$, 'partial aggregation on the nodes'),
	('int4 sums beyond 2^31 by g', $q$
		SELECT g, sum(near) AS s, avg(near) AS a, sum(near + 0) - sum(near) AS zero
		FROM vals GROUP BY g$q$, 'partial aggregation on the nodes'),
	('int8 sums beyond 2^63: numeric', $q$
		SELECT sum(huge) AS s, avg(huge) AS a, sum(huge) > 9223372036854775807 AS beyond,
			   variance(huge) AS v, pg_typeof(sum(huge)) AS t
		FROM vals$q$, 'partial aggregation on the nodes'),
	('int8 sums beyond 2^63 by g', $q$
		SELECT g, sum(huge) AS s, avg(huge) AS a, stddev_pop(huge) AS sp
		FROM vals GROUP BY g$q$, 'partial aggregation on the nodes'),
	('large numerics', $q$
		SELECT sum(big) AS s, avg(big) AS a, sum(big * big) AS ss, sum(big / 3) AS s3,
			   min(big) AS mn, stddev(big) AS sd
		FROM vals$q$, 'partial aggregation on the nodes'),
	('a NULL-only column', $q$
		SELECT count(nul) AS c, sum(nul) AS s, avg(nul) AS a, min(nul) AS mn, max(nul) AS mx,
			   bit_or(nul) AS bo, bool_and(nul > 0) AS ba, stddev(nul) AS sd, var_pop(nul) AS vp,
			   count(*) AS n
		FROM vals$q$, 'partial aggregation on the nodes'),
	('a NULL-only column by g', $q$
		SELECT g, count(nul) AS c, sum(nul) AS s, avg(nul) AS a, max(nul) AS mx,
			   stddev(nul) AS sd, bool_or(nul > 0) AS bo
		FROM vals GROUP BY g$q$, 'partial aggregation on the nodes'),
	('a NULL-only group and the NULL group', $q$
		SELECT g, count(n2) AS c, sum(n2) AS s, avg(n2) AS a, min(n2) AS mn, stddev(n2) AS sd,
			   count(*) AS n
		FROM vals WHERE g IN (3, 4) OR g IS NULL GROUP BY g$q$, 'partial aggregation on the nodes'),
	('the NULL key group', $q$
		SELECT k, count(*) AS n, sum(i4) AS s, avg(n2) AS a FROM vals
		WHERE k IS NULL OR k < 5 GROUP BY k$q$, 'grouped on the nodes'),
	('empty input: count 0, sum NULL', $q$
		SELECT count(*) AS n, count(i4) AS c, sum(i4) AS s, sum(n) AS sn, avg(i8) AS a,
			   min(iv) AS mn, bool_and(b) AS ba, bit_or(i2) AS bo, stddev(n5) AS sd,
			   var_pop(f8) AS vp, sum(m) AS sm, sum(f4) AS sf
		FROM vals WHERE i4 > 10000000$q$, 'partial aggregation on the nodes'),
	('empty input by g: no group', $q$
		SELECT g, count(*) AS n, sum(i4) AS s FROM vals WHERE i4 > 10000000 GROUP BY g$q$,
		'partial aggregation on the nodes'),
	('empty input by key: no group', $q$
		SELECT k, count(*) AS n, sum(i4) AS s FROM vals WHERE i4 > 10000000 GROUP BY k$q$,
		'grouped on the nodes'),
	('empty input over a join', $q$
		SELECT count(*) AS n, sum(l_qty) AS s, avg(l_price) AS a
		FROM orders JOIN lineitem ON o_key = l_key WHERE l_qty + 0 > 1000$q$,
		'partial aggregation on the nodes')
) v(label, q, e), LATERAL cj_agg.check(v.label, v.q, v.e) c;

-- k6 and k7: keys of hash classes 6 and 7, which partial lacks
SELECT min(k) AS k6 FROM generate_series(1, 100) k
WHERE satisfies_hash_partition('cj_agg_sharded.orders'::regclass, 8, 6, k::bigint) \gset
SELECT min(k) AS k7 FROM generate_series(1, 100) k
WHERE satisfies_hash_partition('cj_agg_sharded.orders'::regclass, 8, 7, k::bigint) \gset
SELECT c.* FROM (VALUES
	('every partition pruned (empty classes)',
		format('SELECT count(*) AS n, sum(p_val) AS s, avg(p_val) AS a FROM partial WHERE p_key IN (%s, %s)',
			   :k6, :k7), 'not pushed'),
	('every partition pruned (contradiction)',
		'SELECT count(*) AS n, sum(i4) AS s, max(iv) AS mx FROM vals WHERE k = 1 AND k = 2', 'not pushed'),
	('every partition pruned, grouped',
		format('SELECT p_key, count(*) AS n FROM partial WHERE p_key = %s GROUP BY p_key', :k6),
		'not pushed'),
	('empty classes', 'SELECT count(*) AS n, sum(p_val) AS s, avg(p_val) AS a FROM partial',
		'partial aggregation on the nodes'),
	('empty classes by key', 'SELECT p_key, count(*) AS n, sum(p_val) AS s FROM partial GROUP BY p_key',
		'grouped on the nodes'),
	('empty classes, left join by key',
		'SELECT o_key, count(p_val) AS c, sum(p_val) AS s FROM orders LEFT JOIN partial ON o_key = p_key GROUP BY o_key',
		'grouped on the nodes'),
	('empty classes, inner join, no group',
		'SELECT count(*) AS n, sum(p_val) AS s, max(o_total) AS mx FROM orders JOIN partial ON o_key = p_key',
		'partial aggregation on the nodes'),
	('pruned to one class',
		'SELECT count(*) AS n, sum(l_qty) AS s, avg(l_price) AS a FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = 42',
		'partial aggregation on the nodes'),
	('pruned to some classes, by key',
		'SELECT o_key, count(*) AS n, sum(l_qty) AS s FROM orders JOIN lineitem ON o_key = l_key WHERE o_key IN (1, 2, 3, 42, -7) GROUP BY o_key',
		'grouped on the nodes|not pushed')
) v(label, q, e), LATERAL cj_agg.check(v.label, v.q, v.e) c;

--
-- GROUP BY the key, a non-key column, an expression; HAVING; ORDER BY an
-- aggregate with LIMIT; aggregates inside expressions.  2-way joins.
--
SELECT c.* FROM (VALUES
	('join, no group by', $q$
		SELECT count(*) AS n, count(l_qty) AS c, sum(l_qty) AS s, sum(l_price) AS sp,
			   avg(l_price) AS ap, avg(l_qty) AS aq, max(o_date) AS md, min(l_flag) AS mf,
			   stddev(l_qty) AS sd, bool_and(l_ok) AS ba
		FROM orders JOIN lineitem ON o_key = l_key$q$, 'partial aggregation on the nodes'),
	('join, by the key', $q$
		SELECT o_key, count(*) AS n, sum(l_qty) AS s, avg(l_price) AS a, max(l_flag) AS mf,
			   bool_and(l_ok) AS ba, var_samp(l_qty) AS vs
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_key$q$, 'grouped on the nodes'),
	('join, by the other side''s key', $q$
		SELECT l_key, count(*) AS n, sum(o_total) AS s, avg(l_qty) AS a
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY l_key$q$, 'grouped on the nodes'),
	('join, by the key and more', $q$
		SELECT o_key, l_line, count(*) AS n, sum(l_price) AS s
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_key, l_line$q$, 'grouped on the nodes'),
	('join, by a non-key column', $q$
		SELECT o_status, count(*) AS n, sum(l_qty) AS s, avg(l_price) AS a, min(l_qty) AS mn,
			   max(o_total) AS mx, bit_or(l_qty) AS bo, stddev_pop(l_price) AS sp
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_status$q$,
		'partial aggregation on the nodes'),
	('join, by non-key columns of both sides (NULL groups)', $q$
		SELECT o_cust, l_flag, count(*) AS n, sum(l_qty) AS s, avg(l_qty) AS a
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_cust, l_flag$q$,
		'partial aggregation on the nodes'),
	('join, by an expression', $q$
		SELECT extract(month FROM o_date) AS mon, count(*) AS n, sum(l_price) AS s, avg(l_qty) AS a
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY extract(month FROM o_date)$q$,
		'partial aggregation on the nodes'),
	('join, by an expression of the key', $q$
		SELECT o_key % 7 AS r, count(*) AS n, sum(l_qty) AS s
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_key % 7$q$,
		'partial aggregation on the nodes|not pushed'),
	('join, by an expression over both sides', $q$
		SELECT o_cust + l_line AS x, count(*) AS n, avg(l_price) AS a
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_cust + l_line$q$,
		'partial aggregation on the nodes'),
	('having, by the key, aggregates not selected', $q$
		SELECT o_key, count(*) AS n FROM orders JOIN lineitem ON o_key = l_key
		GROUP BY o_key HAVING count(*) > 2 AND avg(l_qty) < 12 AND max(l_price) > 100$q$,
		'grouped on the nodes'),
	('having, by a non-key column, aggregates not selected', $q$
		SELECT o_cust, count(*) AS n FROM orders JOIN lineitem ON o_key = l_key
		GROUP BY o_cust HAVING sum(l_qty) > 250 AND min(l_price) < 40 AND stddev(l_qty) > 6$q$,
		'partial aggregation on the nodes'),
	('having with a function no node may run, by the key', $q$
		SELECT o_key, count(*) AS n, sum(l_qty) AS s FROM orders JOIN lineitem ON o_key = l_key
		GROUP BY o_key HAVING cj_agg.is_odd(count(*)) AND sum(l_qty) > 20$q$, 'grouped on the nodes'),
	('having with a function no node may run, by a non-key column', $q$
		SELECT o_cust, count(*) AS n FROM orders JOIN lineitem ON o_key = l_key
		GROUP BY o_cust HAVING cj_agg.is_odd(count(*))$q$, 'partial aggregation on the nodes'),
	('having without group by', $q$
		SELECT count(*) AS n FROM orders JOIN lineitem ON o_key = l_key HAVING sum(l_qty) > 0$q$,
		'partial aggregation on the nodes'),
	('having without group by, false', $q$
		SELECT count(*) AS n FROM orders JOIN lineitem ON o_key = l_key HAVING sum(l_qty) < 0$q$,
		'partial aggregation on the nodes'),
	('having on a group column', $q$
		SELECT o_status, sum(l_qty) AS s FROM orders JOIN lineitem ON o_key = l_key
		GROUP BY o_status HAVING o_status <> 'P' AND count(*) > 1$q$,
		'partial aggregation on the nodes'),
	('order by an aggregate, limit, by the key', $q$
		SELECT o_key, sum(l_price) AS rev FROM orders JOIN lineitem ON o_key = l_key
		GROUP BY o_key ORDER BY rev DESC, o_key LIMIT 10$q$, 'grouped on the nodes'),
	('order by an aggregate, limit, by a non-key column', $q$
		SELECT o_cust, sum(l_qty) AS s FROM orders JOIN lineitem ON o_key = l_key
		GROUP BY o_cust ORDER BY sum(l_qty) DESC NULLS LAST, o_cust LIMIT 5$q$,
		'partial aggregation on the nodes'),
	('order by an aggregate not selected, limit', $q$
		SELECT o_cust FROM orders JOIN lineitem ON o_key = l_key
		GROUP BY o_cust ORDER BY avg(l_price) DESC, o_cust LIMIT 6$q$,
		'partial aggregation on the nodes'),
	('order by an aggregate, limit, ties, by the key', $q$
		SELECT count(*) AS n FROM orders JOIN lineitem ON o_key = l_key
		GROUP BY o_key ORDER BY count(*) DESC LIMIT 9$q$, 'grouped on the nodes'),
	('order by an aggregate, limit, ties, by a non-key column', $q$
		SELECT count(*) AS n FROM orders JOIN lineitem ON o_key = l_key
		GROUP BY l_qty ORDER BY 1 LIMIT 4$q$, 'partial aggregation on the nodes'),
	('aggregates in expressions', $q$
		SELECT o_status, sum(l_qty) * 2 + count(*) AS x,
			   coalesce(sum(l_qty) FILTER (WHERE l_qty > 100), -1) AS y,
			   round(avg(l_price), 3) AS z, max(l_price) - min(l_price) AS w,
			   count(*) = count(l_qty) AS all_qty, sum(l_qty) / count(l_qty) AS q
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_status$q$,
		'partial aggregation on the nodes'),
	('aggregates of expressions', $q$
		SELECT o_status, sum(l_qty * l_price) AS rev, avg(l_price * (1 - l_disc::numeric)) AS a,
			   max(l_qty + o_cust) AS mx, count(l_flag || o_status) AS c
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_status$q$,
		'partial aggregation on the nodes'),
	('the same aggregate twice', $q$
		SELECT o_status, count(*) AS n1, count(*) + 1 AS n2, sum(l_qty) AS s1, sum(l_qty) AS s2,
			   avg(l_qty) AS a
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_status$q$,
		'partial aggregation on the nodes'),
	('aggregated join in a subquery', $q$
		SELECT avg(n) AS a, max(n) AS mx, count(*) AS c
		FROM (SELECT o_key, count(*) AS n FROM orders JOIN lineitem ON o_key = l_key
			  GROUP BY o_key) s$q$, 'grouped on the nodes'),
	('limit without order by', $q$
		SELECT count(*) AS n FROM (SELECT o_key, count(*) FROM orders JOIN lineitem ON o_key = l_key
								   GROUP BY o_key LIMIT 5) s$q$, 'grouped on the nodes'),
	('a group key not selected', $q$
		SELECT count(*) AS n, sum(l_qty) AS s FROM orders JOIN lineitem ON o_key = l_key
		GROUP BY o_cust$q$, 'partial aggregation on the nodes'),
	('group by only, no aggregates', $q$
		SELECT o_cust, o_status FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_cust, o_status$q$,
		'partial aggregation on the nodes')
) v(label, q, e), LATERAL cj_agg.check(v.label, v.q, v.e) c;

--
-- DISTINCT aggregates and SELECT DISTINCT.
--
SELECT c.* FROM (VALUES
	('count(distinct) of the key by the key', $q$
		SELECT o_key, count(DISTINCT l_key) AS ck, count(DISTINCT l_qty) AS cq,
			   sum(DISTINCT l_qty) AS sq, avg(DISTINCT l_price) AS ap
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_key$q$, 'grouped on the nodes'),
	('count(distinct) of a non-key column by a non-key column', $q$
		SELECT o_status, count(DISTINCT l_qty) AS cq, sum(DISTINCT l_qty) AS sq,
			   avg(DISTINCT l_price) AS ap
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_status$q$,
		'distinct values on the nodes'),
	('count(distinct) of the key, no group by', $q$
		SELECT count(DISTINCT o_key) AS ck, count(DISTINCT l_qty) AS cq
		FROM orders JOIN lineitem ON o_key = l_key$q$, 'distinct values on the nodes'),
	('count(distinct) of the key, single table', $q$
		SELECT count(DISTINCT k) AS ck, count(DISTINCT g) AS cg FROM vals$q$,
		'distinct values on the nodes'),
	('distinct aggregates with min, max, bool_or', $q$
		SELECT o_cust, count(DISTINCT l_flag) AS cf, min(l_qty) AS mn, max(l_price) AS mx,
			   bool_or(l_ok) AS bo, bit_and(l_qty) AS ba
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_cust$q$,
		'distinct values on the nodes'),
	('distinct aggregate with a filter', $q$
		SELECT o_status, count(DISTINCT l_qty) FILTER (WHERE l_flag = 'A') AS ca,
			   count(DISTINCT l_qty) AS cq
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_status$q$,
		'distinct values on the nodes'),
	('distinct array_agg ordered by its argument', $q$
		SELECT o_status, array_agg(DISTINCT l_flag ORDER BY l_flag) AS flags
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_status$q$,
		'distinct values on the nodes'),
	('distinct string_agg ordered by its argument', $q$
		SELECT o_status, string_agg(DISTINCT l_flag, ',' ORDER BY l_flag) AS flags
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_status$q$,
		'distinct values on the nodes'),
	('distinct aggregate beside sum', $q$
		SELECT o_status, count(DISTINCT l_qty) AS cq, sum(l_qty) AS s
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_status$q$,
		'distinct values and partial aggregation on the nodes'),
	('count(*) beside distinct aggregates of three columns, with HAVING', $q$
		SELECT l_flag, count(*) AS n, count(DISTINCT o_key) AS ck, count(DISTINCT l_qty) AS cq,
			   count(DISTINCT o_cust) AS cc, avg(l_price) AS ap, max(l_price) AS mx
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY l_flag
		HAVING count(*) > 1 AND count(DISTINCT l_qty) > 1$q$,
		'distinct values and partial aggregation on the nodes'),
	('count(*) beside a distinct aggregate, no group by, no rows', $q$
		SELECT count(*) AS n, count(DISTINCT g) AS cg, sum(i4) AS s FROM vals WHERE k < 0$q$,
		'distinct values and partial aggregation on the nodes'),
	('count(*) beside a filtered distinct aggregate, single table', $q$
		SELECT g, count(*) AS n, count(DISTINCT b) FILTER (WHERE k % 2 = 0) AS cb,
			   sum(n5) AS s, stddev(i4) AS sd
		FROM vals GROUP BY g$q$,
		'distinct values and partial aggregation on the nodes'),
	('distinct aggregate beside sum, by the key', $q$
		SELECT o_key, count(DISTINCT l_qty) AS cq, sum(l_qty) AS s
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_key$q$, 'grouped on the nodes'),
	('select distinct with the key', $q$
		SELECT DISTINCT o_key, l_flag FROM orders JOIN lineitem ON o_key = l_key$q$,
		'grouped on the nodes'),
	('select distinct, non-key columns', $q$
		SELECT DISTINCT o_cust, o_status FROM orders JOIN lineitem ON o_key = l_key$q$,
		'partial aggregation on the nodes|distinct values on the nodes'),
	('select distinct, single table', $q$
		SELECT DISTINCT g, b FROM vals$q$,
		'partial aggregation on the nodes|distinct values on the nodes'),
	('select distinct over aggregates by the key', $q$
		SELECT DISTINCT count(*) AS n FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_key$q$,
		'grouped on the nodes'),
	('select distinct over aggregates by a non-key column', $q$
		SELECT DISTINCT count(*) > 10 AS big FROM orders JOIN lineitem ON o_key = l_key GROUP BY l_qty$q$,
		'partial aggregation on the nodes')
) v(label, q, e), LATERAL cj_agg.check(v.label, v.q, v.e) c;

--
-- What colojoin cannot push must fall back, with the right answer:
-- grouping sets, ordered-set aggregates, order-sensitive aggregates over
-- several classes, user-defined aggregates, volatile arguments, a local
-- table in the join.
--
SELECT c.* FROM (VALUES
	('rollup', $q$
		SELECT o_status, l_flag, count(*) AS n, sum(l_qty) AS s
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY ROLLUP (o_status, l_flag)$q$,
		'not pushed'),
	('cube with the key', $q$
		SELECT o_key, l_line, count(*) AS n, avg(l_price) AS a
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY CUBE (o_key, l_line)$q$,
		'not pushed'),
	('grouping sets', $q$
		SELECT o_key, o_status, count(*) AS n, sum(l_price) AS s, grouping(o_key, o_status) AS gr
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY GROUPING SETS ((o_key), (o_status), ())$q$,
		'not pushed'),
	('grouping sets, single table', $q$
		SELECT g, b, count(*) AS n, sum(i4) AS s FROM vals GROUP BY GROUPING SETS ((g), (b))$q$,
		'not pushed'),
	('percentile_cont by a non-key column', $q$
		SELECT o_status, percentile_cont(0.5) WITHIN GROUP (ORDER BY l_qty) AS med
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_status$q$, 'not pushed'),
	('percentile_cont, no group by', $q$
		SELECT percentile_cont(0.25) WITHIN GROUP (ORDER BY i4) AS q1, count(*) AS n FROM vals$q$,
		'not pushed'),
	('mode by a non-key column', $q$
		SELECT g, mode() WITHIN GROUP (ORDER BY i2 % 3) AS md FROM vals GROUP BY g$q$,
		'not pushed'),
	('string_agg and array_agg by the key', $q$
		SELECT o_key, string_agg(l_flag, ',' ORDER BY l_price, l_qty) AS flags,
			   array_agg(l_qty ORDER BY l_price, l_qty) AS qtys
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_key$q$, 'grouped on the nodes'),
	('string_agg and array_agg by a non-key column', $q$
		SELECT o_status, string_agg(l_flag, ',' ORDER BY l_price, l_key, l_line, l_qty, l_flag) AS flags,
			   array_agg(l_qty ORDER BY l_price, l_key, l_line, l_qty) AS qtys
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_status$q$, 'not pushed'),
	('array_agg, no group by', $q$
		SELECT array_agg(k ORDER BY k NULLS FIRST, i4) AS ks FROM vals$q$, 'not pushed'),
	('plpgsql aggregate by the key', $q$
		SELECT o_key, cj_agg.plsum(l_qty) AS s FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_key$q$,
		'not pushed'),
	('plpgsql aggregate by a non-key column', $q$
		SELECT o_status, cj_agg.plsum(l_qty) AS s, count(*) AS n
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_status$q$, 'not pushed'),
	('sql aggregate with a combine function, no group by', $q$
		SELECT cj_agg.sqlmax(i4) AS mx, sum(i4) AS s FROM vals$q$, 'not pushed'),
	('sql aggregate with a combine function, by the key', $q$
		SELECT k, cj_agg.sqlmax(i4) AS mx FROM vals GROUP BY k$q$, 'not pushed'),
	('volatile argument by the key', $q$
		SELECT o_key, sum(l_qty + (random() * 0)::int) AS s FROM orders JOIN lineitem ON o_key = l_key
		GROUP BY o_key$q$, 'not pushed'),
	('volatile filter by a non-key column', $q$
		SELECT o_status, count(*) FILTER (WHERE random() >= 0) AS n
		FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_status$q$, 'not pushed'),
	('volatile argument, no group by', $q$
		SELECT sum(i4 * (1 + floor(random() * 0))::int) AS s, count(*) AS n FROM vals$q$,
		'not pushed'),
	('volatile filter of a distinct aggregate', $q$
		SELECT g, count(DISTINCT i2) FILTER (WHERE random() >= 0) AS c FROM vals GROUP BY g$q$,
		'not pushed'),
	('volatile argument of min, distinct', $q$
		SELECT g, min(i4 + (random() * 0)::int) AS mn, count(DISTINCT i2) AS c FROM vals GROUP BY g$q$,
		'not pushed'),
	-- the small local table is broadcast into the join, which then aggregates
	('a local table in the join', $q$
		SELECT sn.name, count(*) AS n, sum(l_qty) AS s
		FROM orders JOIN lineitem ON o_key = l_key JOIN cj_agg.status_names sn ON sn.code = o_status
		GROUP BY sn.name$q$, 'partial aggregation on the nodes')
) v(label, q, e), LATERAL cj_agg.check(v.label, v.q, v.e) c;

--
-- 3-way joins, outer joins (the nullable side's key does not group rows by
-- class: its NULL group gathers unmatched rows of every class), single
-- sharded tables.
--
SELECT c.* FROM (VALUES
	('3-way, no group by', $q$
		SELECT count(*) AS n, sum(l_qty) AS s, sum(s_days) AS sd, sum(s_cost) AS sc,
			   avg(s_days) AS ad, max(s_carrier) AS mc, var_pop(s_days) AS vp,
			   concat_ws(' ', pg_typeof(sum(s_days)), pg_typeof(avg(s_days)), pg_typeof(sum(s_cost))) AS types
		FROM orders JOIN lineitem ON o_key = l_key JOIN shipments ON s_key = o_key$q$,
		'partial aggregation on the nodes'),
	('3-way, by the first key', $q$
		SELECT o_key, count(*) AS n, sum(l_qty) AS s, min(s_carrier) AS mc, sum(s_cost) AS sc
		FROM orders JOIN lineitem ON o_key = l_key JOIN shipments ON s_key = l_key GROUP BY o_key$q$,
		'grouped on the nodes'),
	('3-way, by the int4 key', $q$
		SELECT s_key, count(*) AS n, avg(l_price) AS a
		FROM orders JOIN lineitem ON o_key = l_key JOIN shipments ON s_key = o_key GROUP BY s_key$q$,
		'grouped on the nodes'),
	('3-way, by non-key columns', $q$
		SELECT s_carrier, o_status, count(*) AS n, sum(l_price) AS s, avg(s_days) AS a,
			   stddev(l_qty) AS sd
		FROM orders JOIN lineitem ON o_key = l_key JOIN shipments ON s_key = o_key
		GROUP BY s_carrier, o_status$q$, 'partial aggregation on the nodes'),
	('3-way, distinct aggregate', $q$
		SELECT s_carrier, count(DISTINCT l_qty) AS cq, max(o_total) AS mx
		FROM orders JOIN lineitem ON o_key = l_key JOIN shipments ON s_key = o_key GROUP BY s_carrier$q$,
		'distinct values on the nodes'),
	('3-way left joins, by the preserved key', $q$
		SELECT o_key, count(*) AS n, count(l_line) AS cl, count(s_key) AS cs, sum(s_days) AS sd
		FROM orders LEFT JOIN lineitem ON o_key = l_key LEFT JOIN shipments ON s_key = o_key
		GROUP BY o_key$q$, 'grouped on the nodes'),
	('3-way left joins, by a nullable key', $q$
		SELECT s_key, count(*) AS n, sum(o_total) AS s
		FROM orders LEFT JOIN lineitem ON o_key = l_key LEFT JOIN shipments ON s_key = o_key
		GROUP BY s_key$q$, 'partial aggregation on the nodes|not pushed'),
	('left join, aggregates of the nullable side by the preserved key', $q$
		SELECT o_key, count(*) AS n, count(l_key) AS cl, sum(l_qty) AS s, avg(l_price) AS a,
			   bool_or(l_ok) AS bo, max(l_flag) AS mf
		FROM orders LEFT JOIN lineitem ON o_key = l_key GROUP BY o_key$q$, 'grouped on the nodes'),
	('left join, aggregates of the nullable side, no group by', $q$
		SELECT count(*) AS n, count(l_line) AS cl, sum(l_qty) AS s, avg(l_price) AS a,
			   max(l_flag) AS mf, stddev_samp(l_qty) AS sd
		FROM orders LEFT JOIN lineitem ON o_key = l_key$q$, 'partial aggregation on the nodes'),
	('left join, by the nullable side''s key', $q$
		SELECT l_key, count(*) AS n, sum(o_total) AS s, count(l_line) AS cl
		FROM orders LEFT JOIN lineitem ON o_key = l_key GROUP BY l_key$q$,
		'partial aggregation on the nodes|not pushed'),
	('left join with a condition, by the nullable side''s key', $q$
		SELECT l_key, count(*) AS n, sum(o_total) AS s
		FROM orders LEFT JOIN lineitem ON o_key = l_key AND l_qty > 10 GROUP BY l_key$q$,
		'partial aggregation on the nodes|not pushed'),
	('left join, by both keys', $q$
		SELECT o_key, l_key, count(*) AS n FROM orders LEFT JOIN lineitem ON o_key = l_key
		GROUP BY o_key, l_key$q$, 'grouped on the nodes'),
	('right join, by the nullable side''s key', $q$
		SELECT o_key, count(*) AS n, sum(l_qty) AS s
		FROM orders RIGHT JOIN lineitem ON o_key = l_key GROUP BY o_key$q$,
		'partial aggregation on the nodes|not pushed'),
	('right join, by the preserved key', $q$
		SELECT l_key, count(*) AS n, count(o_key) AS co, sum(o_total) AS s
		FROM orders RIGHT JOIN lineitem ON o_key = l_key GROUP BY l_key$q$, 'grouped on the nodes'),
	('full join, by one key', $q$
		SELECT o_key, count(*) AS n, count(l_key) AS cl FROM orders FULL JOIN lineitem ON o_key = l_key
		GROUP BY o_key$q$, 'partial aggregation on the nodes|not pushed'),
	('full join, by coalesce of the keys', $q$
		SELECT coalesce(o_key, l_key) AS k, count(*) AS n, sum(l_qty) AS s
		FROM orders FULL JOIN lineitem ON o_key = l_key GROUP BY coalesce(o_key, l_key)$q$,
		'partial aggregation on the nodes|not pushed'),
	('left join, by the nullable side''s key, few groups', $q$
		SELECT t_key, count(*) AS n, sum(o_total) AS s, count(t_name) AS ct, max(t_name) AS mt
		FROM orders LEFT JOIN tags ON o_key = t_key GROUP BY t_key$q$,
		'partial aggregation on the nodes'),
	('left join, by the nullable side''s key and a column, few groups', $q$
		SELECT t_key, o_status, count(*) AS n, avg(o_total) AS a
		FROM orders LEFT JOIN tags ON o_key = t_key GROUP BY t_key, o_status$q$,
		'partial aggregation on the nodes'),
	('right join, by the nullable side''s key, few groups', $q$
		SELECT t_key, count(*) AS n, sum(o_total) AS s
		FROM tags RIGHT JOIN orders ON t_key = o_key GROUP BY t_key$q$,
		'partial aggregation on the nodes'),
	('full join, by one side''s key, few groups', $q$
		SELECT t_key, count(*) AS n, count(o_key) AS co, sum(o_total) AS s
		FROM tags FULL JOIN orders ON t_key = o_key GROUP BY t_key$q$,
		'partial aggregation on the nodes'),
	('3-way left joins, by the last nullable key, few groups', $q$
		SELECT t_key, count(*) AS n, sum(l_qty) AS s
		FROM orders LEFT JOIN lineitem ON o_key = l_key LEFT JOIN tags ON t_key = o_key
		GROUP BY t_key$q$, 'partial aggregation on the nodes'),
	('left join, by the preserved key, few groups', $q$
		SELECT t_key, count(*) AS n, count(o_key) AS co, sum(o_total) AS s
		FROM tags LEFT JOIN orders ON t_key = o_key GROUP BY t_key$q$,
		'grouped on the nodes'),
	('semi join, by the key', $q$
		SELECT o_key, count(*) AS n, sum(o_total) AS s FROM orders o
		WHERE EXISTS (SELECT FROM lineitem l WHERE l.l_key = o.o_key AND l.l_qty > 5) GROUP BY o_key$q$,
		'grouped on the nodes'),
	('anti join, by a non-key column', $q$
		SELECT o_status, count(*) AS n, avg(o_total) AS a FROM orders o
		WHERE NOT EXISTS (SELECT FROM lineitem l WHERE l.l_key = o.o_key) GROUP BY o_status$q$,
		'partial aggregation on the nodes'),
	('single table: count(*)', 'SELECT count(*) AS n FROM orders', 'partial aggregation on the nodes'),
	('single table: count(*), sum, avg', 'SELECT count(*) AS n, sum(l_price) AS s, avg(l_qty) AS a FROM lineitem',
		'partial aggregation on the nodes'),
	('single table by the key', 'SELECT o_key, count(*) AS n, sum(o_total) AS s FROM orders GROUP BY o_key',
		'grouped on the nodes'),
	('single table by a non-key column',
		'SELECT o_status, count(*) AS n, sum(o_total) AS s, avg(o_total) AS a, max(o_date) AS md FROM orders GROUP BY o_status',
		'partial aggregation on the nodes'),
	('single table with a filter, by a non-key column',
		'SELECT o_cust, count(*) AS n, min(o_total) AS mn FROM orders WHERE o_key IN (3, 5, 8, 13, 21, 34) OR o_total > 900 GROUP BY o_cust',
		'partial aggregation on the nodes'),
	('single table, int4 key by the key',
		'SELECT s_key, count(*) AS n, sum(s_cost) AS sc, avg(s_days) AS a FROM shipments GROUP BY s_key',
		'grouped on the nodes')
) v(label, q, e), LATERAL cj_agg.check(v.label, v.q, v.e) c;

-- colojoin.enable_aggregate_pushdown = off: rows shipped, answers the same
SET colojoin.enable_aggregate_pushdown = off;
SELECT c.* FROM (VALUES
	('off: no group by', 'SELECT count(*) AS n, sum(l_qty) AS s, avg(l_price) AS a FROM orders JOIN lineitem ON o_key = l_key',
		'not pushed'),
	('off: by the key', 'SELECT o_key, count(*) AS n, sum(l_qty) AS s FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_key',
		'not pushed'),
	('off: distinct aggregate', 'SELECT o_status, count(DISTINCT l_qty) AS c FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_status',
		'not pushed'),
	('off: single table', 'SELECT g, count(*) AS n, sum(n2) AS s FROM vals GROUP BY g', 'not pushed')
) v(label, q, e), LATERAL cj_agg.check(v.label, v.q, v.e) c;
RESET colojoin.enable_aggregate_pushdown;

--
-- Parameters: prepared statements with parameters in WHERE, run with
-- custom and generic plans; each execution is compared with the local
-- query with the value written in.
--
CREATE FUNCTION cj_agg.check_prepared(label text, stmt text, local_query text,
									  vals bigint[], expect text,
									  OUT test text, OUT runs int, OUT result text, OUT plan text)
LANGUAGE plpgsql AS $$
DECLARE
	v bigint;
	rec record;
	rows jsonb[];
	plan_text text;
	line text;
	verdict text;
BEGIN
	test := label;
	runs := 0;
	result := 'ok';
	plan := 'plan ok';
	FOREACH v IN ARRAY vals LOOP
		plan_text := '';
		FOR line IN EXECUTE format('EXPLAIN (COSTS OFF) EXECUTE %I(%s)', stmt, v) LOOP
			plan_text := plan_text || line || E'\n';
		END LOOP;
		verdict := cj_agg.plan_verdict(plan_text, expect);
		IF verdict <> 'plan ok' AND plan = 'plan ok' THEN
			plan := verdict || ' (value ' || v || ')';
		END IF;
		rows := '{}';
		FOR rec IN EXECUTE format('EXECUTE %I(%s)', stmt, v) LOOP
			rows := rows || jsonb_build_object('t', rec::text);
		END LOOP;
		runs := runs + 1;
		IF result = 'ok' THEN
			result := cj_agg.compare(rows, cj_agg.run(format(local_query, v), 'cj_agg_local'), NULL);
			IF result <> 'ok' THEN
				result := result || ' (value ' || v || ')';
			END IF;
		END IF;
	END LOOP;
END
$$;

PREPARE cj_agg_p1(int) AS
	SELECT o_status, count(*), sum(l_qty), avg(l_price), stddev(l_qty)
	FROM cj_agg_sharded.orders JOIN cj_agg_sharded.lineitem ON o_key = l_key
	WHERE l_qty > $1 GROUP BY o_status;
PREPARE cj_agg_p2(bigint) AS
	SELECT o_key, count(*), sum(l_price), max(l_flag)
	FROM cj_agg_sharded.orders JOIN cj_agg_sharded.lineitem ON o_key = l_key
	WHERE o_key = $1 GROUP BY o_key;
PREPARE cj_agg_p3(bigint) AS
	SELECT count(*), sum(l_qty), avg(l_qty), max(l_flag)
	FROM cj_agg_sharded.orders JOIN cj_agg_sharded.lineitem ON o_key = l_key
	WHERE o_key = $1 OR l_qty = $1;
PREPARE cj_agg_p4(int) AS
	SELECT o_cust, count(DISTINCT l_qty), max(l_price)
	FROM cj_agg_sharded.orders JOIN cj_agg_sharded.lineitem ON o_key = l_key
	WHERE o_date < date '2024-01-01' + $1 GROUP BY o_cust;
PREPARE cj_agg_p5(bigint) AS
	SELECT count(*), sum(i4), avg(n5), sum(huge) FROM cj_agg_sharded.vals WHERE k = $1;

SELECT c.* FROM (VALUES
	('partial, parameter in a filter', 'cj_agg_p1',
	 'SELECT o_status, count(*), sum(l_qty), avg(l_price), stddev(l_qty) FROM orders JOIN lineitem ON o_key = l_key WHERE l_qty > %s GROUP BY o_status',
	 '{0,5,10,22,100,-1,7}', 'partial aggregation on the nodes'),
	('grouped, key parameter', 'cj_agg_p2',
	 'SELECT o_key, count(*), sum(l_price), max(l_flag) FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = %s GROUP BY o_key',
	 '{5,1,2,3,4,5,6,42,-4,1000}', 'grouped on the nodes'),
	('partial, parameter twice', 'cj_agg_p3',
	 'SELECT count(*), sum(l_qty), avg(l_qty), max(l_flag) FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = %1$s OR l_qty = %1$s',
	 '{5,1,2,3,4,5,6,1000}', 'partial aggregation on the nodes'),
	('distinct values, date parameter', 'cj_agg_p4',
	 'SELECT o_cust, count(DISTINCT l_qty), max(l_price) FROM orders JOIN lineitem ON o_key = l_key WHERE o_date < date ''2024-01-01'' + %s GROUP BY o_cust',
	 '{30,60,90,20}', 'distinct values on the nodes'),
	('single table, key parameter', 'cj_agg_p5',
	 'SELECT count(*), sum(i4), avg(n5), sum(huge) FROM vals WHERE k = %s',
	 '{7,8,9,10,11,12,500}', 'partial aggregation on the nodes')
) v(label, stmt, q, vals, e),
	LATERAL cj_agg.check_prepared(v.label || ', default plans', v.stmt, v.q, v.vals::bigint[], v.e) c;
SET plan_cache_mode = force_generic_plan;
SELECT c.* FROM (VALUES
	('partial, parameter in a filter', 'cj_agg_p1',
	 'SELECT o_status, count(*), sum(l_qty), avg(l_price), stddev(l_qty) FROM orders JOIN lineitem ON o_key = l_key WHERE l_qty > %s GROUP BY o_status',
	 '{0,5,10,22,100,-1,7}', 'partial aggregation on the nodes'),
	('grouped, key parameter', 'cj_agg_p2',
	 'SELECT o_key, count(*), sum(l_price), max(l_flag) FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = %s GROUP BY o_key',
	 '{5,42,-4,1000,7}', 'grouped on the nodes'),
	('partial, parameter twice', 'cj_agg_p3',
	 'SELECT count(*), sum(l_qty), avg(l_qty), max(l_flag) FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = %1$s OR l_qty = %1$s',
	 '{5,1,1000}', 'partial aggregation on the nodes'),
	('distinct values, date parameter', 'cj_agg_p4',
	 'SELECT o_cust, count(DISTINCT l_qty), max(l_price) FROM orders JOIN lineitem ON o_key = l_key WHERE o_date < date ''2024-01-01'' + %s GROUP BY o_cust',
	 '{30,0,90}', 'distinct values on the nodes'),
	('single table, key parameter', 'cj_agg_p5',
	 'SELECT count(*), sum(i4), avg(n5), sum(huge) FROM vals WHERE k = %s',
	 '{7,8,500}', 'partial aggregation on the nodes')
) v(label, stmt, q, vals, e),
	LATERAL cj_agg.check_prepared(v.label || ', generic plan', v.stmt, v.q, v.vals::bigint[], v.e) c;
RESET plan_cache_mode;

--
-- Clean up, here and on the nodes (create_shards made schema cj_agg_sharded
-- there).
--
\pset format aligned
\pset fieldsep '|'
DEALLOCATE cj_agg_p1;
DEALLOCATE cj_agg_p2;
DEALLOCATE cj_agg_p3;
DEALLOCATE cj_agg_p4;
DEALLOCATE cj_agg_p5;
SET client_min_messages = warning;
DROP SCHEMA cj_agg_sharded CASCADE;
DROP SCHEMA cj_agg_local CASCADE;
DROP SCHEMA cj_agg CASCADE;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
				   'DROP SCHEMA IF EXISTS cj_agg_sharded CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
\i sql/include/three_nodes_end.sql
