--
-- windows: window functions whose every window partitions by a partition
-- key of a table each row comes from are computed in the tasks (each
-- window partition lives in one partition class); the others run on the
-- coordinator.  Every query is compared with the same query on plain local
-- tables, and the plan says whether the nodes computed the windows.
--
\set prefix cj_win
\i sql/include/three_nodes_begin.sql

CREATE SCHEMA cj_win;
CREATE SCHEMA cj_win_s;
CREATE SCHEMA cj_win_l;
SELECT dblink_connect('cj_win_n' || n,
		format('host=127.0.0.1 port=%s dbname=colojoin_regress', p))
FROM (VALUES (1, :'node1_port'), (2, :'node2_port'), (3, :'node3_port')) v(n, p);
SELECT dblink_exec('cj_win_n' || n,
		'DROP SCHEMA IF EXISTS cj_win_r CASCADE; CREATE SCHEMA cj_win_r')
FROM generate_series(1, 3) n;

CREATE FUNCTION cj_win.leaf(parent text, leaf text, bound text, node int, cols text)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM dblink_exec('cj_win_n' || node, format('CREATE TABLE cj_win_r.%I (%s)', leaf, cols));
	EXECUTE format('CREATE FOREIGN TABLE cj_win_s.%I PARTITION OF cj_win_s.%I %s '
				   'SERVER %I OPTIONS (schema_name %L)',
				   leaf, parent, bound, 'cj_win_n' || node, 'cj_win_r');
END
$$;

-- a: hash 8 on a bigint k; b: hash 8 on an int k, colocated with a;
-- lst, lst2: list on a text region, their regions on different nodes
CREATE TABLE cj_win_s.a (k bigint, v int) PARTITION BY HASH (k);
CREATE TABLE cj_win_s.b (k int, w int) PARTITION BY HASH (k);
SELECT cj_win.leaf(t, t || r, format('FOR VALUES WITH (MODULUS 8, REMAINDER %s)', r), r % 3 + 1,
				  CASE t WHEN 'a' THEN 'k bigint, v int' ELSE 'k int, w int' END)
FROM (VALUES ('a'), ('b')) tabs(t), generate_series(0, 7) r;
CREATE TABLE cj_win_s.lst (region text, x int) PARTITION BY LIST (region);
CREATE TABLE cj_win_s.lst2 (region text, y int) PARTITION BY LIST (region);
SELECT cj_win.leaf('lst', 'lst_' || reg, format('FOR VALUES IN (%L)', reg), n, 'region text, x int')
FROM (VALUES ('eu', 1), ('us', 2), ('asia', 3)) v(reg, n);
SELECT cj_win.leaf('lst2', 'lst2_' || reg, format('FOR VALUES IN (%L)', reg), n, 'region text, y int')
FROM (VALUES ('eu', 2), ('us', 3), ('asia', 1)) v(reg, n);
CREATE TABLE cj_win_l.a (k bigint, v int);
CREATE TABLE cj_win_l.b (k int, w int);
CREATE TABLE cj_win_l.lst (region text, x int);
CREATE TABLE cj_win_l.lst2 (region text, y int);
INSERT INTO cj_win_l.a SELECT CASE WHEN g % 23 = 0 THEN NULL ELSE g % 120 END, g FROM generate_series(1, 300) g;
INSERT INTO cj_win_l.b SELECT CASE WHEN g % 19 = 0 THEN NULL ELSE (g * 3) % 150 END, g FROM generate_series(1, 300) g;
INSERT INTO cj_win_l.lst SELECT (ARRAY['eu', 'us', 'asia'])[g % 3 + 1], g FROM generate_series(1, 30) g;
INSERT INTO cj_win_l.lst2 SELECT (ARRAY['eu', 'us'])[g % 2 + 1], g FROM generate_series(1, 20) g;
INSERT INTO cj_win_s.a SELECT * FROM cj_win_l.a;
INSERT INTO cj_win_s.b SELECT * FROM cj_win_l.b;
INSERT INTO cj_win_s.lst SELECT * FROM cj_win_l.lst;
INSERT INTO cj_win_s.lst2 SELECT * FROM cj_win_l.lst2;

-- check(query): same rows from the sharded tables and the twins, how
-- many, and whether colojoin ran (part of) it
CREATE FUNCTION cj_win.check(query text, OUT same boolean, OUT nrows int,
							OUT on_nodes boolean)
LANGUAGE plpgsql AS $$
DECLARE
	plan text := '';
	line text;
	s text[];
BEGIN
	PERFORM set_config('search_path', 'cj_win_s, public', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		plan := plan || line || E'\n';
	END LOOP;
	s := rows_of(query, 'cj_win_s');
	same := s = rows_of(query, 'cj_win_l');
	nrows := cardinality(s);
	on_nodes := plan LIKE '%windows computed on the nodes%';
	PERFORM set_config('search_path', 'public', true);
END
$$;

SELECT q, (cj_win.check(q)).* FROM (VALUES
	-- partitioned by the key of a, of b, of both: computed on the nodes
	('SELECT a.k, b.w, rank() OVER (PARTITION BY a.k ORDER BY b.w) FROM a JOIN b ON a.k = b.k'),
	('SELECT a.k, b.w, dense_rank() OVER (PARTITION BY b.k ORDER BY b.w DESC NULLS LAST), row_number() OVER (PARTITION BY a.k ORDER BY b.w, a.v) FROM a JOIN b ON a.k = b.k'),
	('SELECT k, v, lag(v) OVER w, lead(v, 2, -1) OVER w, first_value(v) OVER w, last_value(v) OVER w, nth_value(v, 2) OVER w FROM a WINDOW w AS (PARTITION BY k ORDER BY v)'),
	('SELECT k, v, ntile(3) OVER w, percent_rank() OVER w, cume_dist() OVER w FROM a WINDOW w AS (PARTITION BY k ORDER BY v)'),
	('SELECT k, v, sum(v) OVER (PARTITION BY k ORDER BY v ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM a'),
	('SELECT k, v, sum(v) OVER (PARTITION BY k ORDER BY v RANGE BETWEEN 10 PRECEDING AND CURRENT ROW) FROM a'),
	('SELECT k, v, count(*) OVER (PARTITION BY k ORDER BY v GROUPS BETWEEN UNBOUNDED PRECEDING AND 1 FOLLOWING EXCLUDE CURRENT ROW) FROM a'),
	('SELECT k, v, avg(v) OVER (PARTITION BY k), max(v) FILTER (WHERE v % 2 = 0) OVER (PARTITION BY k) FROM a'),
	('SELECT k, v, sum(v) OVER (PARTITION BY k, v % 3 ORDER BY v) FROM a'),
	('SELECT a.k, a.v, sum(b.w) OVER (PARTITION BY a.k) FROM a LEFT JOIN b ON a.k = b.k'),
	('SELECT * FROM (SELECT a.k, b.w, rank() OVER (PARTITION BY a.k ORDER BY b.w) AS r FROM a JOIN b ON a.k = b.k) s WHERE r <= 2'),
	('SELECT a.k, b.w, rank() OVER (PARTITION BY a.k ORDER BY b.w) FROM a JOIN b ON a.k = b.k WHERE a.v > 100 ORDER BY 1, 2, 3 LIMIT 7'),
	-- lst on one node per region: partitioned by its key
	('SELECT region, x, sum(x) OVER (PARTITION BY region ORDER BY x) FROM lst'),
	-- not by a key, or by the nullable side''s key, or over everything: the coordinator
	('SELECT k, v, sum(v) OVER (PARTITION BY v % 5) FROM a'),
	('SELECT k, v, row_number() OVER (ORDER BY v, k) FROM a'),
	('SELECT a.k, b.k, count(*) OVER (PARTITION BY b.k) FROM a LEFT JOIN b ON a.k = b.k'),
	('SELECT k, v, sum(v) OVER (PARTITION BY k), sum(v) OVER () FROM a'),
	-- windows over aggregated rows stay on the coordinator
	('SELECT k, count(*), rank() OVER (ORDER BY count(*) DESC, k) FROM a GROUP BY k')
) qs(q);

-- a prepared statement, custom and generic plans
SET search_path = cj_win_s, public;
PREPARE win(int) AS
	SELECT a.k, b.w, rank() OVER (PARTITION BY a.k ORDER BY b.w) FROM a JOIN b ON a.k = b.k WHERE a.v > $1;
CREATE FUNCTION cj_win.run(stmt text) RETURNS text[] LANGUAGE plpgsql AS $$
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
SELECT mode, cj_win.run('EXECUTE win(150)') =
			 rows_of('SELECT a.k, b.w, rank() OVER (PARTITION BY a.k ORDER BY b.w) FROM a JOIN b ON a.k = b.k WHERE a.v > 150', 'cj_win_l') AS same
FROM (VALUES ('force_custom_plan'), ('force_generic_plan')) m(mode),
	 LATERAL set_config('plan_cache_mode', m.mode, false);
RESET plan_cache_mode;
DEALLOCATE ALL;
RESET search_path;

-- clean up
SET client_min_messages = warning;
DROP SCHEMA cj_win_s CASCADE;
DROP SCHEMA cj_win_l CASCADE;
DROP SCHEMA cj_win CASCADE;
SELECT dblink_exec('cj_win_n' || n, 'DROP SCHEMA cj_win_r CASCADE') FROM generate_series(1, 3) n;
SELECT dblink_disconnect('cj_win_n' || n) FROM generate_series(1, 3) n;
\i sql/include/three_nodes_end.sql
