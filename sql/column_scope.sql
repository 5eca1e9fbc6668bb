--
-- column_scope: which tables' columns the remote SQL of a task may name at
-- each place.  A semi or anti join becomes EXISTS / NOT EXISTS, whose
-- tables are out of reach outside it: an anti-joined side's columns are
-- NULL there (PostgreSQL turns LEFT JOIN ... WHERE inner.k IS NULL into an
-- anti join and may still ask for them), and a group that needs a semi
-- join's inner columns above it is left to PostgreSQL.  A moved table the
-- query needs no column of moves empty rows.  Every query is compared
-- with plain local tables, also as prepared statements under generic plans.
--
\set prefix cj_cs
\i sql/include/three_nodes_begin.sql

CREATE SCHEMA cj_cs;
CREATE SCHEMA cj_cs_s;
CREATE SCHEMA cj_cs_l;
SELECT dblink_connect('cj_cs_n' || n,
		format('host=127.0.0.1 port=%s dbname=colojoin_regress', p))
FROM (VALUES (1, :'node1_port'), (2, :'node2_port'), (3, :'node3_port')) v(n, p);
SELECT dblink_exec('cj_cs_n' || n,
		'DROP SCHEMA IF EXISTS cj_cs_r CASCADE; CREATE SCHEMA cj_cs_r')
FROM generate_series(1, 3) n;

CREATE FUNCTION cj_cs.leaf(parent text, leaf text, bound text, node int, cols text)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM dblink_exec('cj_cs_n' || node, format('CREATE TABLE cj_cs_r.%I (%s)', leaf, cols));
	EXECUTE format('CREATE FOREIGN TABLE cj_cs_s.%I PARTITION OF cj_cs_s.%I %s '
				   'SERVER %I OPTIONS (schema_name %L)',
				   leaf, parent, bound, 'cj_cs_n' || node, 'cj_cs_r');
END
$$;

-- a: hash 8 on a bigint k; b: hash 8 on an int k, colocated with a;
-- lst, lst2: list on a text region, their regions on different nodes
CREATE TABLE cj_cs_s.a (k bigint, v int) PARTITION BY HASH (k);
CREATE TABLE cj_cs_s.b (k int, w int) PARTITION BY HASH (k);
SELECT cj_cs.leaf(t, t || r, format('FOR VALUES WITH (MODULUS 8, REMAINDER %s)', r), r % 3 + 1,
				  CASE t WHEN 'a' THEN 'k bigint, v int' ELSE 'k int, w int' END)
FROM (VALUES ('a'), ('b')) tabs(t), generate_series(0, 7) r;
CREATE TABLE cj_cs_s.lst (region text, x int) PARTITION BY LIST (region);
CREATE TABLE cj_cs_s.lst2 (region text, y int) PARTITION BY LIST (region);
SELECT cj_cs.leaf('lst', 'lst_' || reg, format('FOR VALUES IN (%L)', reg), n, 'region text, x int')
FROM (VALUES ('eu', 1), ('us', 2), ('asia', 3)) v(reg, n);
SELECT cj_cs.leaf('lst2', 'lst2_' || reg, format('FOR VALUES IN (%L)', reg), n, 'region text, y int')
FROM (VALUES ('eu', 2), ('us', 3), ('asia', 1)) v(reg, n);
CREATE TABLE cj_cs_l.a (k bigint, v int);
CREATE TABLE cj_cs_l.b (k int, w int);
CREATE TABLE cj_cs_l.lst (region text, x int);
CREATE TABLE cj_cs_l.lst2 (region text, y int);
INSERT INTO cj_cs_l.a SELECT CASE WHEN g % 23 = 0 THEN NULL ELSE g % 120 END, g FROM generate_series(1, 300) g;
INSERT INTO cj_cs_l.b SELECT CASE WHEN g % 19 = 0 THEN NULL ELSE (g * 3) % 150 END, g FROM generate_series(1, 300) g;
INSERT INTO cj_cs_l.lst SELECT (ARRAY['eu', 'us', 'asia'])[g % 3 + 1], g FROM generate_series(1, 30) g;
INSERT INTO cj_cs_l.lst2 SELECT (ARRAY['eu', 'us'])[g % 2 + 1], g FROM generate_series(1, 20) g;
INSERT INTO cj_cs_s.a SELECT * FROM cj_cs_l.a;
INSERT INTO cj_cs_s.b SELECT * FROM cj_cs_l.b;
INSERT INTO cj_cs_s.lst SELECT * FROM cj_cs_l.lst;
INSERT INTO cj_cs_s.lst2 SELECT * FROM cj_cs_l.lst2;

-- check(query): same rows from the sharded tables and the twins, how
-- many, and whether colojoin ran (part of) it
CREATE FUNCTION cj_cs.check(query text, OUT same boolean, OUT nrows int,
							OUT colocated boolean)
LANGUAGE plpgsql AS $$
DECLARE
	plan text := '';
	line text;
	s text[];
BEGIN
	PERFORM set_config('search_path', 'cj_cs_s, public', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		plan := plan || line || E'\n';
	END LOOP;
	s := rows_of(query, 'cj_cs_s');
	same := s = rows_of(query, 'cj_cs_l');
	nrows := cardinality(s);
	colocated := plan LIKE '%Custom Scan (ColocatedJoin)%';
	PERFORM set_config('search_path', 'public', true);
END
$$;

SELECT q, (cj_cs.check(q)).* FROM (VALUES
	-- anti joins from LEFT JOIN ... IS NULL, the inner side in the output
	('SELECT b.w FROM a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL'),
	('SELECT a.v, b.w, b.k FROM a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL'),
	('SELECT b FROM a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL'),
	('SELECT b.w, count(*) FROM a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL GROUP BY b.w'),
	('SELECT a.v, b.w FROM a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL ORDER BY a.v LIMIT 5'),
	('SELECT a.v, b2.w FROM a LEFT JOIN b ON a.k = b.k LEFT JOIN b b2 ON b2.k = b.k WHERE b.k IS NULL'),
	('SELECT coalesce(b.w, -1), a.v FROM a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL AND a.v > 100'),
	-- semi joins under outer joins, whole rows
	('SELECT z FROM lst2 z LEFT JOIN lst2 u ON z.region = u.region WHERE EXISTS (SELECT 1 FROM lst zz WHERE u.region = zz.region)'),
	('SELECT z.*, u.* FROM lst2 z LEFT JOIN lst2 u ON z.region = u.region WHERE EXISTS (SELECT 1 FROM lst zz WHERE u.region = zz.region)'),
	('SELECT a.* FROM a JOIN b ON a.k = b.k WHERE EXISTS (SELECT 1 FROM b b2 WHERE b2.k = b.k AND b2.w > 10)'),
	('SELECT a.v FROM a LEFT JOIN b ON a.k = b.k WHERE EXISTS (SELECT 1 FROM b b2 WHERE b2.k = b.k)'),
	('SELECT a.v FROM a WHERE a.k IN (SELECT k FROM b) AND NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND b.w < 50)'),
	-- moves that carry no column
	('SELECT count(*) FROM lst2 d CROSS JOIN lst2 u'),
	('SELECT count(*) FROM a CROSS JOIN lst'),
	('SELECT count(*) FROM a JOIN lst ON true WHERE a.v < 10'),
	('SELECT a.v FROM a WHERE EXISTS (SELECT 1 FROM lst WHERE lst.x = a.k)'),
	('SELECT count(*) FROM a JOIN lst ON a.k = lst.x'),
	('SELECT 1 FROM a JOIN lst ON a.k = lst.x')
) qs(q);

-- the same shapes as prepared statements, custom and generic plans
SET search_path = cj_cs_s, public;
PREPARE anti_cols(int) AS
	SELECT a.v, b.w FROM a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL AND a.v > $1;
PREPARE semi_outer(text) AS
	SELECT z FROM lst2 z LEFT JOIN lst2 u ON z.region = u.region
	WHERE EXISTS (SELECT 1 FROM lst zz WHERE u.region = zz.region AND zz.region <> $1);
PREPARE no_cols(int) AS SELECT count(*) FROM a CROSS JOIN lst WHERE a.v < $1;
CREATE FUNCTION cj_cs.run(stmt text) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
	rec record;
	result text[] := '{}';
BEGIN
	FOR rec IN EXECUTE stmt LOOP
		result := result || rec::text;
	END LOOP;
	RETURN ARRAY(SELECT r FROM unnest(result) r ORDER BY r COLLATE "C");
END
$$;
SELECT mode, cj_cs.run('EXECUTE anti_cols(150)') =
			 rows_of('SELECT a.v, b.w FROM a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL AND a.v > 150', 'cj_cs_l') AS anti_same,
			 cj_cs.run('EXECUTE semi_outer(''us'')') =
			 rows_of('SELECT z FROM lst2 z LEFT JOIN lst2 u ON z.region = u.region WHERE EXISTS (SELECT 1 FROM lst zz WHERE u.region = zz.region AND zz.region <> ''us'')', 'cj_cs_l') AS semi_same,
			 cj_cs.run('EXECUTE no_cols(20)') =
			 rows_of('SELECT count(*) FROM a CROSS JOIN lst WHERE a.v < 20', 'cj_cs_l') AS nocols_same
FROM (VALUES ('force_custom_plan'), ('force_generic_plan'), ('force_generic_plan')) m(mode),
	 LATERAL set_config('plan_cache_mode', m.mode, false);
RESET plan_cache_mode;
DEALLOCATE ALL;
RESET search_path;

-- clean up
SET client_min_messages = warning;
DROP SCHEMA cj_cs_s CASCADE;
DROP SCHEMA cj_cs_l CASCADE;
DROP SCHEMA cj_cs CASCADE;
SELECT dblink_exec('cj_cs_n' || n, 'DROP SCHEMA cj_cs_r CASCADE') FROM generate_series(1, 3) n;
SELECT dblink_disconnect('cj_cs_n' || n) FROM generate_series(1, 3) n;
\i sql/include/three_nodes_end.sql
