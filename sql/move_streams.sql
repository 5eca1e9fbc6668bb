--
-- move_streams: how rows move between nodes.  A move is binary COPY when
-- every moved column is of a type whose binary form means the same on
-- every node and the remote tables have the declared types (text
-- otherwise); a broadcast reads each source node once for all its
-- destinations; repartitioned rows leave each source once and are routed
-- by their class, only to the destination that reads it.  References: the
-- same query on plain local tables, with colojoin.binary_moves on and off;
-- for foreign tables that declare other types than the remote columns,
-- postgres_fdw itself.
--
\set prefix cj_mv
\i sql/include/three_nodes_begin.sql

CREATE SCHEMA cj_mv;
CREATE SCHEMA cj_mv_local;
SET search_path = cj_mv, public;

-- facts: hash 6 on k over the three nodes, with a column of every type that
-- travels in binary; r joins dims (hash 6 on r), so a join on it moves rows
CREATE TABLE facts (
	k int, r int, b bool, ch "char", i2 int2, i8 int8, o oid,
	f4 float4, f8 float8, n numeric, n52 numeric(5,2), m money,
	d date, t time, tz timetz, ts timestamp, tstz timestamptz, iv interval,
	by bytea, u uuid, ip inet, net cidr, mac macaddr, mac8 macaddr8,
	bt bit(4), vb varbit, tx text, vc varchar(12), bc char(5), nm name, js json
) PARTITION BY HASH (k);
SELECT colojoin.create_shards('facts', '{cj_mv_n1,cj_mv_n2,cj_mv_n3}', 6);
CREATE TABLE dims (r int, label text) PARTITION BY HASH (r);
SELECT colojoin.create_shards('dims', '{cj_mv_n1,cj_mv_n2,cj_mv_n3}', 6);
-- others: types without a safe binary form (arrays, jsonb)
CREATE TABLE others (k int, r int, arr int[], jb jsonb) PARTITION BY HASH (k);
SELECT colojoin.create_shards('others', '{cj_mv_n1,cj_mv_n2,cj_mv_n3}', colocate_with => 'facts');
CREATE TABLE cj_mv_local.facts (LIKE cj_mv.facts);
CREATE TABLE cj_mv_local.dims (LIKE cj_mv.dims);
CREATE TABLE cj_mv_local.others (LIKE cj_mv.others);

INSERT INTO cj_mv_local.facts VALUES
	(1, 1, true, 'a', -32768, -9223372036854775808, 0,
	 'NaN', 'Infinity', 'NaN', -999.99, '-92233720368547758.08',
	 '-infinity', '00:00', '00:00+14', '-infinity', '-infinity', '-178000000 years',
	 '\x', '00000000-0000-0000-0000-000000000000', '0.0.0.0', '0.0.0.0/0',
	 '00:00:00:00:00:00', '00:00:00:00:00:00:00:00', B'0000', B'', '', '', '', '', '{}'),
	(2, 2, false, 'z', 32767, 9223372036854775807, 4294967295,
	 '-Infinity', '-0', 'Infinity', 999.99, '92233720368547758.07',
	 'infinity', '24:00', '23:59:59.999999-15:59', 'infinity', 'infinity', '178000000 years',
	 '\xdeadbeef00ff', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '::1', '2001:db8::/32',
	 'ff:ff:ff:ff:ff:ff', 'ff:ff:ff:ff:ff:ff:ff:ff', B'1111', B'101010101010101010',
	 E'Grüße\ttab\nline \\ ½', 'ünïcödé', 'é', 'nämé', '{"a": [1, 2.50, null]}'),
	(3, 3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	 NULL, NULL, NULL, NULL, NULL, NULL, NULL),
	(4, NULL, true, 'q', 7, 7, 7, 0.1, 0.30000000000000004, 1e-30, 0.005, 1234.56,
	 '4713-01-01 BC', '12:34:56.789012', '12:34:56.789012+05:30',
	 '1999-12-31 23:59:59.999999', '2000-02-29 12:00:00.000001+01',
	 '1 year 2 months 3 days 04:05:06.789 ago',
	 '\x00', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '192.168.1.7/24', '10.0.0.0/8',
	 '08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05', B'1010', B'1',
	 repeat('long text ', 500), repeat('v', 12), 'ab', repeat('n', 63), '"just a string"');
INSERT INTO cj_mv_local.facts (k, r, n, i8, tx, d, tstz)
SELECT g, g % 97, g * 1.01, g::int8 * 1000003, 'row ' || g, date '2000-01-01' + g,
	   timestamptz '2024-03-10 01:30:00+00' + g * interval '7 hours'
FROM generate_series(10, 3009) g;
INSERT INTO cj_mv_local.dims SELECT g, 'label ' || g FROM generate_series(0, 90) g;
INSERT INTO cj_mv_local.dims VALUES (NULL, 'no key'), (5, 'five again');
INSERT INTO cj_mv_local.others SELECT k, r, ARRAY[k, -k], jsonb_build_object('k', k) FROM cj_mv_local.facts;
INSERT INTO cj_mv.facts SELECT * FROM cj_mv_local.facts;
INSERT INTO cj_mv.dims SELECT * FROM cj_mv_local.dims;
INSERT INTO cj_mv.others SELECT * FROM cj_mv_local.others;
ANALYZE cj_mv.facts, cj_mv.dims, cj_mv.others, cj_mv_local.facts, cj_mv_local.dims, cj_mv_local.others;

-- move_format(query): EXPLAIN VERBOSE's Move Format, or 'no move'.
-- move_check(query): that, and whether its rows equal the local ones with
-- binary moves on and off.  rows_moved(query): EXPLAIN ANALYZE's count.
CREATE FUNCTION move_format(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || query LOOP
		IF line ~ 'Move Format: ' THEN
			RETURN substring(line from 'Move Format: (.*)$');
		END IF;
	END LOOP;
	RETURN 'no move';
END
$$;
CREATE FUNCTION same_rows(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	l text[] := rows_of(regexp_replace(query, '^/\*\+[^*]*\*/', ''), 'cj_mv_local');
	s text[] := rows_of(query, 'cj_mv');
BEGIN
	RETURN CASE WHEN s = l THEN format('same (%s rows)', cardinality(s))
		   ELSE format('DIFFERENT: %s rows, %s local', cardinality(s), cardinality(l)) END;
END
$$;
CREATE FUNCTION move_check(query text, OUT format text, OUT binary_on text, OUT binary_off text)
LANGUAGE plpgsql AS $$
BEGIN
	format := move_format(query);
	binary_on := same_rows(query);
	PERFORM set_config('colojoin.binary_moves', 'off', true);
	binary_off := same_rows(query);
	IF move_format(query) NOT IN ('text', 'no move') THEN
		binary_off := binary_off || ', but binary with binary_moves off';
	END IF;
	PERFORM set_config('colojoin.binary_moves', 'on', true);
END
$$;
\i sql/include/plan_lines.sql

-- every shape of move, every type, NULLs and edge values
SELECT name, (move_check(q)).* FROM (VALUES
	('broadcast, every column', '/*+ BroadcastJoin(f) */ SELECT f.*, d.label FROM facts f JOIN dims d ON d.r = f.r'),
	('repartition, every column', '/*+ Redistribute(f) */ SELECT f.*, d.label FROM facts f JOIN dims d ON d.r = f.r'),
	('repartition, left join keeps dims', '/*+ Redistribute(f) */ SELECT d.r, d.label, f.k, f.tx, f.tstz FROM dims d LEFT JOIN facts f ON f.r = d.r'),
	('repartition, some classes only', '/*+ Redistribute(f) */ SELECT f.k, f.n, f.d, d.label FROM facts f JOIN dims d ON d.r = f.r WHERE d.r IN (1, 2, 5)'),
	('repartition, no column but the key', '/*+ Redistribute(f) */ SELECT d.label, count(*) FROM facts f JOIN dims d ON d.r = f.r GROUP BY d.label'),
	('repartition, no row', '/*+ Redistribute(f) */ SELECT f.k, f.n, d.label FROM facts f JOIN dims d ON d.r = f.r WHERE f.k < 0'),
	('broadcast, no row', '/*+ BroadcastJoin(f) */ SELECT f.k, f.n, d.label FROM facts f JOIN dims d ON d.r = f.r WHERE f.k < 0'),
	('broadcast of dims', '/*+ BroadcastJoin(d) */ SELECT f.k, f.m, d.label FROM facts f JOIN dims d ON d.r = f.r'),
	('arrays and jsonb travel as text', '/*+ BroadcastJoin(o) */ SELECT o.k, o.arr, o.jb, d.label FROM others o JOIN dims d ON d.r = o.r'),
	('binary and text moves in one scan', '/*+ BroadcastJoin(f) BroadcastJoin(o) */ SELECT f.k, f.n, o.arr, d.label FROM dims d JOIN facts f ON f.r = d.r JOIN others o ON o.r = d.r AND o.k = f.k')
) v(name, q) ORDER BY name;

-- settings that change text forms change nothing in binary or in text
BEGIN;
SET LOCAL DateStyle = 'SQL, DMY';
SET LOCAL TimeZone = 'America/St_Johns';
SET LOCAL IntervalStyle = 'sql_standard';
SET LOCAL extra_float_digits = -3;
SELECT (move_check('/*+ Redistribute(f) */ SELECT f.*, d.label FROM facts f JOIN dims d ON d.r = f.r')).*;
COMMIT;

-- Repartitioned rows leave their node once: the rows moved are the rows
-- with a key, whichever the number of destinations.  A broadcast carries
-- every row to each of the nodes that read it (dims is on all three).
SELECT rows_moved('/*+ Redistribute(f) */ SELECT f.k, d.label FROM facts f JOIN dims d ON d.r = f.r')
	   = (SELECT count(*) FROM cj_mv_local.facts WHERE r IS NOT NULL) AS repartitioned_once;
SELECT rows_moved('/*+ BroadcastJoin(f) */ SELECT f.k, d.label FROM facts f JOIN dims d ON d.r = f.r')
	   = 3 * (SELECT count(*) FROM cj_mv_local.facts) AS broadcast_to_each_node;
-- only the classes some task reads travel
SELECT rows_moved('/*+ Redistribute(f) */ SELECT f.k, d.label FROM facts f JOIN dims d ON d.r = f.r WHERE d.r = 5')
	   < (SELECT count(*) FROM cj_mv_local.facts WHERE r IS NOT NULL) / 2 AS pruned_classes_stay;

-- a prepared statement under a generic plan moves the same way
PREPARE one(int) AS /*+ Redistribute(f) */ SELECT f.k, f.n, f.tstz, d.label FROM facts f JOIN dims d ON d.r = f.r WHERE d.r <= $1 AND f.k < 100 ORDER BY 1, 4;
SET plan_cache_mode = force_generic_plan;
EXECUTE one(4);
SELECT move_format('EXECUTE one(4)') AS prepared_format;
SELECT f.k, f.n, f.tstz, d.label FROM cj_mv_local.facts f JOIN cj_mv_local.dims d ON d.r = f.r WHERE d.r <= 4 AND f.k < 100 ORDER BY 1, 4;
RESET plan_cache_mode;
DEALLOCATE one;

--
-- Foreign tables that declare other types than their remote columns: the
-- move is text (binary forms would be misread), and the rows are those
-- postgres_fdw reads.  The same remote tables declared with their own
-- types move in binary.
--
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p), $$
	CREATE SCHEMA IF NOT EXISTS cj_mv;
	CREATE TABLE cj_mv.mixed (k int, r int, small int4, ratio float8, label varchar(20), stamp timestamp)$$)
FROM unnest(ARRAY[:'node1_port', :'node2_port']) p;
CREATE TABLE mixed (k int, r int, small int8, ratio numeric, label text, stamp timestamp) PARTITION BY LIST (k);
CREATE FOREIGN TABLE mixed_odd PARTITION OF mixed FOR VALUES IN (1, 3, 5, 7, 9)
	SERVER cj_mv_n1 OPTIONS (schema_name 'cj_mv', table_name 'mixed');
CREATE FOREIGN TABLE mixed_even PARTITION OF mixed FOR VALUES IN (2, 4, 6, 8, 10)
	SERVER cj_mv_n2 OPTIONS (schema_name 'cj_mv', table_name 'mixed');
CREATE TABLE exact (k int, r int, small int4, ratio float8, label varchar(20), stamp timestamp) PARTITION BY LIST (k);
CREATE FOREIGN TABLE exact_odd PARTITION OF exact FOR VALUES IN (1, 3, 5, 7, 9)
	SERVER cj_mv_n1 OPTIONS (schema_name 'cj_mv', table_name 'mixed');
CREATE FOREIGN TABLE exact_even PARTITION OF exact FOR VALUES IN (2, 4, 6, 8, 10)
	SERVER cj_mv_n2 OPTIONS (schema_name 'cj_mv', table_name 'mixed');
INSERT INTO exact SELECT g, g % 4, g * 1000, (g / 7.0) + 0.1, 'label ' || g,
	timestamp '2024-03-10 01:30:00' + g * interval '7 hours' FROM generate_series(1, 10) g;
CREATE FUNCTION fdw_check(query text, OUT format text, OUT result text)
LANGUAGE plpgsql AS $$
DECLARE
	s text[];
	f text[];
BEGIN
	format := move_format(query);
	s := rows_of(query, 'cj_mv');
	PERFORM set_config('colojoin.enable', 'off', true);
	f := rows_of(query, 'cj_mv');
	PERFORM set_config('colojoin.enable', 'on', true);
	result := CASE WHEN s = f THEN format('same as postgres_fdw (%s rows)', cardinality(s))
			  ELSE format('DIFFERENT: %s rows, %s through postgres_fdw', cardinality(s), cardinality(f)) END;
END
$$;
SELECT name, (fdw_check(q)).* FROM (VALUES
	('declared with other types', '/*+ BroadcastJoin(x) */ SELECT x.k, x.small, x.ratio, x.label, x.stamp, d.label AS dl FROM mixed x JOIN dims d ON d.r = x.r'),
	('declared with the remote types', '/*+ BroadcastJoin(x) */ SELECT x.k, x.small, x.ratio, x.label, x.stamp, d.label AS dl FROM exact x JOIN dims d ON d.r = x.r')
) v(name, q) ORDER BY name;

--
-- Clean up, here and on the nodes.
--
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA cj_mv CASCADE;
DROP SCHEMA cj_mv_local CASCADE;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
				   'DROP SCHEMA IF EXISTS cj_mv CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
\i sql/include/three_nodes_end.sql
