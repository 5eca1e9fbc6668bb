--
-- binary_results: rows that tasks send in binary (colojoin.binary_results)
-- decode to exactly what text gives, for every type that travels in
-- binary, under session settings that change text forms (DateStyle,
-- TimeZone, IntervalStyle, extra_float_digits, client_encoding), and for
-- foreign tables that declare another type than the remote column's (the
-- task is re-read as text).  References: the same query over plain local
-- tables, and the same query with colojoin.binary_results off.
--
\set prefix cj_bin
\i sql/include/three_nodes_begin.sql

CREATE SCHEMA cj_bin;
CREATE SCHEMA cj_bin_local;
SET search_path = cj_bin, public;

-- every type that travels in binary, and a few that do not (arrays,
-- jsonb), with their edge values; vals and more are colocated
CREATE TABLE vals (
	k int, b bool, ch "char", i2 int2, i4 int4, i8 int8, o oid,
	f4 float4, f8 float8, n numeric, n52 numeric(5,2), m money,
	d date, t time, tz timetz, ts timestamp, tstz timestamptz, iv interval,
	by bytea, u uuid, ip inet, net cidr, mac macaddr, mac8 macaddr8,
	bt bit(4), vb varbit, tx text, vc varchar(12), bc char(5), nm name, js json
) PARTITION BY HASH (k);
SELECT colojoin.create_shards('vals', '{cj_bin_n1,cj_bin_n2,cj_bin_n3}', 4);
CREATE TABLE more (k int, arr int[], jb jsonb, tx text) PARTITION BY HASH (k);
SELECT colojoin.create_shards('more', '{cj_bin_n1,cj_bin_n2,cj_bin_n3}', colocate_with => 'vals');
CREATE TABLE cj_bin_local.vals (LIKE cj_bin.vals);
CREATE TABLE cj_bin_local.more (LIKE cj_bin.more);

INSERT INTO cj_bin_local.vals VALUES
	(1, true, 'a', -32768, -2147483648, -9223372036854775808, 0,
	 'NaN', 'Infinity', 'NaN', -999.99, '-92233720368547758.08',
	 '-infinity', '00:00', '00:00+14', '-infinity', '-infinity', '-178000000 years',
	 '\x', '00000000-0000-0000-0000-000000000000', '0.0.0.0', '0.0.0.0/0',
	 '00:00:00:00:00:00', '00:00:00:00:00:00:00:00', B'0000', B'', '', '', '', '', '{}'),
	(2, false, 'z', 32767, 2147483647, 9223372036854775807, 4294967295,
	 '-Infinity', '-0', 'Infinity', 999.99, '92233720368547758.07',
	 'infinity', '24:00', '23:59:59.999999-15:59', 'infinity', 'infinity', '178000000 years',
	 '\xdeadbeef00ff', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '::1', '2001:db8::/32',
	 'ff:ff:ff:ff:ff:ff', 'ff:ff:ff:ff:ff:ff:ff:ff', B'1111', B'101010101010101010',
	 'Grüße, ½ ×', 'ünïcödé', 'é', 'nämé', '{"a": [1, 2.50, null]}'),
	(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	 NULL, NULL, NULL, NULL, NULL, NULL, NULL),
	(4, true, E'\\001', 7, 7, 7, 7,
	 1.17549435e-38, 2.2250738585072014e-308, '-Infinity', 0.005, 0,
	 '4713-01-01 BC', '12:34:56.789012', '12:34:56.789012+05:30',
	 '1999-12-31 23:59:59.999999', '2000-02-29 12:00:00.000001+01',
	 '1 year 2 months 3 days 04:05:06.789 ago',
	 '\x00', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '192.168.1.7/24', '10.0.0.0/8',
	 '08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05', B'1010', B'1',
	 E'line\nbreak\ttab ''quote'' "dq" \\', 'x', 'ab', 'x y', '"just a string"'),
	(5, false, ' ', 0, 0, 0, 1,
	 3.4028235e38, 1.7976931348623157e308, '-0.000000000000000000000000000001',
	 -0.01, 0.01,
	 '5874897-12-31', '23:59:59.999999', '00:00:00-00:01',
	 '294276-12-31 23:59:59.999999', '1970-01-01 00:00:00+00', '-1 day +00:00:00.000001',
	 '\x5c27', '123e4567-e89b-12d3-a456-426614174000', '::ffff:1.2.3.4', '::/0',
	 '01:23:45:67:89:ab', '01:23:45:ff:fe:67:89:ab', B'0101', B'0000000000000000000000000000000001',
	 repeat('long text ', 500), repeat('v', 12), 'abcde', repeat('n', 63), '[1, "two", {"three": 3}]'),
	(6, true, 'q', 12, 123456, 1234567890123, 16384,
	 0.1, 0.1, 123456789012345678901234567890.123456789012345678901234567890, 1.5, 1234.56,
	 '2024-02-29', '08:00', '08:00-08', '2024-02-29 08:00', '2024-02-29 08:00-08', '36 hours',
	 convert_to('bytes', 'UTF8'), 'f47ac10b-58cc-4372-a567-0e02b2c3d479', '10.1.2.3', '10.1.2.0/24',
	 'aa:bb:cc:dd:ee:ff', 'aa:bb:cc:dd:ee:ff:00:11', B'0011', B'11',
	 'plain', 'plain', 'pl', 'plain', '1e1000');
INSERT INTO cj_bin_local.vals (k, n, tx)
SELECT g, (g * 1.01)::numeric, 'row ' || g FROM generate_series(10, 5009) g;
INSERT INTO cj_bin_local.more
SELECT k, ARRAY[k, -k], jsonb_build_object('k', k, 'tx', tx), tx
FROM cj_bin_local.vals;
INSERT INTO cj_bin.vals SELECT * FROM cj_bin_local.vals;
INSERT INTO cj_bin.more SELECT * FROM cj_bin_local.more;
ANALYZE cj_bin.vals, cj_bin.more, cj_bin_local.vals, cj_bin_local.more;

-- plan_of(query): whether colojoin runs it (a
-- ColocatedJoin scan in the plan).  check_rows(query): that, and whether
-- its rows equal the local ones, with binary results on and off.
CREATE FUNCTION plan_of(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		IF line ~ 'Custom Scan \(ColocatedJoin\)' THEN
			RETURN 'colojoin';
		END IF;
	END LOOP;
	RETURN 'not colojoin';
END
$$;
CREATE FUNCTION check_rows(query text, OUT plan text, OUT binary_on text, OUT binary_off text)
LANGUAGE plpgsql AS $$
DECLARE
	l text[] := rows_of(query, 'cj_bin_local');
	s text[];
BEGIN
	plan := plan_of(query);
	PERFORM set_config('colojoin.binary_results', 'on', true);
	s := rows_of(query, 'cj_bin');
	binary_on := CASE WHEN s = l THEN format('same (%s rows)', cardinality(s))
				 ELSE format('DIFFERENT: %s rows, %s local', cardinality(s), cardinality(l)) END;
	PERFORM set_config('colojoin.binary_results', 'off', true);
	s := rows_of(query, 'cj_bin');
	binary_off := CASE WHEN s = l THEN format('same (%s rows)', cardinality(s))
				  ELSE format('DIFFERENT: %s rows, %s local', cardinality(s), cardinality(l)) END;
	PERFORM set_config('colojoin.binary_results', 'on', true);
END
$$;
-- bytes_per_row(query): the bytes the nodes sent per row, from EXPLAIN ANALYZE
CREATE FUNCTION bytes_per_row(query text) RETURNS numeric
LANGUAGE plpgsql AS $$
DECLARE
	line text;
	rows numeric := 0;
	bytes numeric := 0;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || query LOOP
		IF line ~ 'Node \S+: tasks=' THEN
			rows := rows + substring(line from 'rows=(\d+)')::numeric;
			bytes := bytes + substring(line from 'bytes=(\d+)')::numeric;
		END IF;
	END LOOP;
	RETURN round(bytes / nullif(rows, 0), 2);
END
$$;

-- Binary rows really travel: an int8 column is 8 bytes a value in binary,
-- its digits in text.
SET colojoin.binary_results = on;
SELECT bytes_per_row('SELECT i8 FROM vals JOIN more USING (k) WHERE i8 IS NOT NULL') AS int8_binary;
SELECT bytes_per_row('SELECT k FROM vals JOIN more USING (k) WHERE k < 10') AS int4_binary;
SET colojoin.binary_results = off;
SELECT bytes_per_row('SELECT k FROM vals JOIN more USING (k) WHERE k < 10') AS int4_text;
RESET colojoin.binary_results;
-- a column of a type without a safe binary form makes the scan use text
SELECT bytes_per_row('SELECT k, arr FROM vals JOIN more USING (k) WHERE k < 10') AS with_array \gset
SET colojoin.binary_results = off;
SELECT bytes_per_row('SELECT k, arr FROM vals JOIN more USING (k) WHERE k < 10') = :with_array
	AS arrays_make_text;
RESET colojoin.binary_results;

-- every type, on the join and on the table alone, under the default
-- settings and under settings that change their text forms
CREATE TABLE queries (name text, q text);
INSERT INTO queries VALUES
	('all columns, join', 'SELECT v.*, m.tx AS mtx FROM vals v JOIN more m USING (k)'),
	('left join, NULL side', 'SELECT v.k, v.tstz, m.k AS mk, m.tx FROM vals v LEFT JOIN more m ON m.k = v.k AND m.k < 3'),
	('expressions', 'SELECT k, n * 2 AS n2, extract(year FROM d) AS dy, ts + iv AS tsi, vals.tx || ''!'' AS tx1, length(by) AS lb, f8 / 3 AS f83, upper(nm) AS unm, m.jb->>''tx'' AS jtx FROM vals JOIN more m USING (k) WHERE k < 10'),
	('with arrays, jsonb', 'SELECT v.k, v.n, v.tx, m.arr, m.jb FROM vals v JOIN more m USING (k)'),
	('aggregates by key', 'SELECT k, count(*), sum(n), avg(i8), min(tstz), max(iv), bool_and(b), string_agg(vals.tx, '','') FROM vals JOIN more USING (k) GROUP BY k'),
	('aggregates', 'SELECT count(*), sum(n), avg(n), min(d), max(ts), sum(i8), avg(f8), max(m), max(u::text), bit_or(bt) FROM vals'),
	('aggregates by text', 'SELECT left(tx, 3) AS p, count(*), sum(n), max(vc) FROM vals GROUP BY 1'),
	('distinct', 'SELECT DISTINCT d, iv FROM vals'),
	('order by limit', 'SELECT k, n, tstz FROM vals ORDER BY n DESC NULLS LAST, k LIMIT 7');
SELECT name, (check_rows(q)).* FROM queries ORDER BY name;
BEGIN;
SET LOCAL DateStyle = 'SQL, DMY';
SET LOCAL TimeZone = 'America/St_Johns';
SET LOCAL IntervalStyle = 'sql_standard';
SET LOCAL extra_float_digits = -3;
SET LOCAL lc_monetary = 'C';
SELECT name, (check_rows(q)).* FROM queries ORDER BY name;
COMMIT;
BEGIN;
SET LOCAL client_encoding = 'LATIN1';
SELECT name, (check_rows(q)).* FROM queries WHERE name IN ('all columns, join', 'expressions') ORDER BY name;
COMMIT;

-- A prepared statement, generic plan, parameter on the key.
PREPARE one(int) AS SELECT v.k, v.n, v.tstz, v.tx, m.jb FROM vals v JOIN more m USING (k) WHERE k = $1;
SET plan_cache_mode = force_generic_plan;
EXECUTE one(2);
EXECUTE one(4);
SELECT v.k, v.n, v.tstz, v.tx, m.jb FROM cj_bin_local.vals v JOIN cj_bin_local.more m USING (k) WHERE k IN (2, 4) ORDER BY k;
RESET plan_cache_mode;
DEALLOCATE one;

--
-- Foreign tables that declare other types than the remote columns: the
-- nodes' binary rows are not of the scan's types, so the tasks are read as
-- text, like postgres_fdw does.  The reference is postgres_fdw itself
-- (colojoin off).  Plain declarations: remote tables made with dblink.
--
CREATE TYPE cj_bin.mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN cj_bin.posint AS int CHECK (VALUE > 0);
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p), $$
	CREATE SCHEMA IF NOT EXISTS cj_bin;
	CREATE TYPE cj_bin.mood AS ENUM ('sad', 'ok', 'happy');
	CREATE TABLE cj_bin.mixed_a (k int, small int4, stamp timestamp, feeling cj_bin.mood, ratio float8, label varchar(20), pos int);
	CREATE TABLE cj_bin.mixed_b (k int, w int)$$)
FROM unnest(ARRAY[:'node1_port', :'node2_port']) p;
CREATE TABLE mixed_a (k int, small int8, stamp timestamptz, feeling text, ratio numeric, label text, pos cj_bin.posint)
	PARTITION BY LIST (k);
CREATE TABLE mixed_b (k int, w int) PARTITION BY LIST (k);
CREATE FOREIGN TABLE mixed_a_odd PARTITION OF mixed_a FOR VALUES IN (1, 3, 5, 7, 9)
	SERVER cj_bin_n1 OPTIONS (schema_name 'cj_bin', table_name 'mixed_a');
CREATE FOREIGN TABLE mixed_a_even PARTITION OF mixed_a FOR VALUES IN (2, 4, 6, 8, 10)
	SERVER cj_bin_n2 OPTIONS (schema_name 'cj_bin', table_name 'mixed_a');
CREATE FOREIGN TABLE mixed_b_odd PARTITION OF mixed_b FOR VALUES IN (1, 3, 5, 7, 9)
	SERVER cj_bin_n1 OPTIONS (schema_name 'cj_bin', table_name 'mixed_b');
CREATE FOREIGN TABLE mixed_b_even PARTITION OF mixed_b FOR VALUES IN (2, 4, 6, 8, 10)
	SERVER cj_bin_n2 OPTIONS (schema_name 'cj_bin', table_name 'mixed_b');
INSERT INTO mixed_a SELECT g, g * 1000, timestamptz '2024-03-10 01:30:00+00' + g * interval '7 hours',
	(ARRAY['sad', 'ok', 'happy'])[g % 3 + 1], g / 7.0, 'label ' || g, g FROM generate_series(1, 10) g;
INSERT INTO mixed_b SELECT g, g * 10 FROM generate_series(1, 10) g;
INSERT INTO mixed_b SELECT g, g * 100 FROM generate_series(1, 10, 2) g;
ANALYZE mixed_a, mixed_b;
CREATE FUNCTION fdw_check(query text, OUT plan text, OUT result text)
LANGUAGE plpgsql AS $$
DECLARE
	s text[];
	f text[];
BEGIN
	plan := plan_of(query);
	s := rows_of(query, 'cj_bin');
	PERFORM set_config('colojoin.enable', 'off', true);
	f := rows_of(query, 'cj_bin');
	PERFORM set_config('colojoin.enable', 'on', true);
	result := CASE WHEN s = f THEN format('same as postgres_fdw (%s rows)', cardinality(s))
			  ELSE format('DIFFERENT: %s rows, %s through postgres_fdw', cardinality(s), cardinality(f)) END;
END
$$;
SELECT name, (fdw_check(q)).* FROM (VALUES
	('int4 read as int8', 'SELECT a.k, a.small, b.w FROM mixed_a a JOIN mixed_b b USING (k)'),
	('timestamp read as timestamptz', 'SELECT a.k, a.stamp, b.w FROM mixed_a a JOIN mixed_b b USING (k)'),
	('enum read as text', 'SELECT a.k, a.feeling, b.w FROM mixed_a a JOIN mixed_b b USING (k)'),
	('float8 read as numeric', 'SELECT a.k, a.ratio, b.w FROM mixed_a a JOIN mixed_b b USING (k)'),
	('int read as a domain over int', 'SELECT a.k, a.pos, b.w FROM mixed_a a JOIN mixed_b b USING (k)'),
	('varchar read as text (binary)', 'SELECT a.k, a.label, b.w FROM mixed_a a JOIN mixed_b b USING (k)'),
	('all of them', 'SELECT * FROM mixed_a a JOIN mixed_b b USING (k)')
) v(name, q) ORDER BY name;
SET TimeZone = 'Asia/Kolkata';
SELECT a.k, a.stamp, a.small, a.feeling FROM mixed_a a JOIN mixed_b b USING (k) WHERE b.w < 30 ORDER BY 1;
SELECT (fdw_check('SELECT a.k, a.stamp, b.w FROM mixed_a a JOIN mixed_b b USING (k)')).*;
RESET TimeZone;
-- text read as text stays binary; the re-read as text shows in the bytes
SELECT bytes_per_row('SELECT a.label FROM mixed_a a JOIN mixed_b b USING (k)') AS varchar_as_text,
	   bytes_per_row('SELECT a.small FROM mixed_a a JOIN mixed_b b USING (k)') AS int4_as_int8_in_text;
-- more rows than one batch (2000), every task re-read as text
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p), $$
	INSERT INTO cj_bin.mixed_b SELECT k, g FROM cj_bin.mixed_b, generate_series(1, 1000) g$$)
FROM unnest(ARRAY[:'node1_port', :'node2_port']) p;
SELECT (fdw_check('SELECT a.k, a.small, a.stamp, b.w FROM mixed_a a JOIN mixed_b b USING (k)')).*;

--
-- Clean up, here and on the nodes.
--
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA cj_bin CASCADE;
DROP SCHEMA cj_bin_local CASCADE;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
				   'DROP SCHEMA IF EXISTS cj_bin CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
\i sql/include/three_nodes_end.sql
