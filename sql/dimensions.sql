--
-- dimensions: a sharded fact joined with a table that is not sharded (a
-- plain local table, a materialized view, a foreign table of one server)
-- ships the small table once per statement to the task nodes and runs the
-- whole join in each task.  Values travel as text printed under the nodes'
-- settings, whatever the session's DateStyle says; the moved side is never
-- one an outer join preserves; a table too large to broadcast is left to
-- PostgreSQL.  Every query is compared with the same one on plain tables.
--
\set prefix cj_dim
\i sql/include/three_nodes_begin.sql

CREATE SCHEMA cj_dim_s;
CREATE SCHEMA cj_dim_l;
SET search_path = cj_dim_s, public;

-- the fact tables, colocated, hash 6 over the three nodes
CREATE TABLE f (k int, dim_id int, qty int, at timestamptz) PARTITION BY HASH (k);
SELECT colojoin.create_shards('f', ARRAY[:'srv1', :'srv2', :'srv3'], 6);
CREATE TABLE g (k int, note text) PARTITION BY HASH (k);
SELECT colojoin.create_shards('g', NULL, colocate_with => 'f');
CREATE TABLE cj_dim_l.f (k int, dim_id int, qty int, at timestamptz);
CREATE TABLE cj_dim_l.g (k int, note text);
INSERT INTO cj_dim_l.f
SELECT g % 500, CASE WHEN g % 37 = 0 THEN NULL ELSE g % 60 END, g % 17,
	   timestamptz '2024-03-01 10:00+00' + g * interval '7 hours'
FROM generate_series(1, 2000) g;
INSERT INTO cj_dim_l.g SELECT (g * 3) % 520, 'note ' || g FROM generate_series(1, 1500) g;
INSERT INTO f SELECT * FROM cj_dim_l.f;
INSERT INTO g SELECT * FROM cj_dim_l.g;

-- the dimensions, the same in both schemas: values that need escaping in
-- COPY (tabs, newlines, backslashes), NULLs, dates, intervals, floats
CREATE TABLE cj_dim_l.dim (id int, name text, born date, span interval, ratio float8, tags text[]);
INSERT INTO cj_dim_l.dim
SELECT g, CASE g % 7 WHEN 0 THEN NULL WHEN 1 THEN E'tab\there' WHEN 2 THEN E'line\nbreak'
			   WHEN 3 THEN E'back\\slash' ELSE 'name ' || g END,
	   date '2000-01-01' + g * 40, g * interval '1 day 3 hours', g / 7.0, ARRAY['t' || g, NULL]
FROM generate_series(1, 50) g;
CREATE TABLE dim (LIKE cj_dim_l.dim);
INSERT INTO dim SELECT * FROM cj_dim_l.dim;
CREATE MATERIALIZED VIEW mdim AS SELECT id, name FROM dim WHERE id % 2 = 0;
CREATE MATERIALIZED VIEW cj_dim_l.mdim AS SELECT id, name FROM cj_dim_l.dim WHERE id % 2 = 0;
-- a one-node foreign table (not a partition)
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', :'node2_port'),
		'DROP TABLE IF EXISTS public.cj_dim_remote; CREATE TABLE public.cj_dim_remote (id int, region text)');
CREATE FOREIGN TABLE fdim (id int, region text) SERVER :"srv2" OPTIONS (schema_name 'public', table_name 'cj_dim_remote');
INSERT INTO fdim SELECT g, (ARRAY['eu', 'us', 'asia'])[g % 3 + 1] FROM generate_series(1, 40) g;
CREATE TABLE cj_dim_l.fdim AS SELECT * FROM fdim;

-- check(query): same rows in both schemas, how many, and the plan's
-- Strategy line (what moved)
CREATE FUNCTION cj_dim_l.check(query text, OUT same boolean, OUT nrows int, OUT strategy text)
LANGUAGE plpgsql AS $$
DECLARE
	line text;
	s text[];
BEGIN
	strategy := 'not run by colojoin';
	PERFORM set_config('search_path', 'cj_dim_s, public', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		IF line ~ 'Strategy:' THEN
			strategy := regexp_replace(line, '^\s*Strategy: ', '');
		END IF;
	END LOOP;
	s := rows_of(query, 'cj_dim_s');
	-- over the plain tables a forcing hint would be an error: a comment there
	same := s = rows_of(replace(query, '/*+', '/* '), 'cj_dim_l');
	nrows := cardinality(s);
	PERFORM set_config('search_path', 'public', true);
END
$$;

-- the session prints dates and intervals its own way: the nodes read ISO
SET datestyle = 'SQL, DMY';
SET intervalstyle = 'sql_standard';
SET extra_float_digits = -2;

SELECT q, (cj_dim_l.check(q)).* FROM (VALUES
	('SELECT f.k, f.qty, dim.* FROM f JOIN dim ON f.dim_id = dim.id'),
	('SELECT f.k, dim.name, dim.born FROM f LEFT JOIN dim ON f.dim_id = dim.id'),
	('SELECT dim.name, count(*), sum(f.qty) FROM f JOIN dim ON f.dim_id = dim.id GROUP BY dim.name'),
	('SELECT dim.born, dim.span, count(*) FROM f JOIN g USING (k) JOIN dim ON f.dim_id = dim.id GROUP BY 1, 2'),
	('SELECT f.k FROM f WHERE EXISTS (SELECT FROM dim WHERE dim.id = f.dim_id AND dim.ratio > 3)'),
	('SELECT f.k FROM f WHERE NOT EXISTS (SELECT FROM dim WHERE dim.id = f.dim_id AND dim.name IS NOT NULL)'),
	('SELECT f.k, mdim.name FROM f JOIN mdim ON f.dim_id = mdim.id'),
	('SELECT fdim.region, count(*) FROM f JOIN fdim ON f.dim_id = fdim.id GROUP BY 1'),
	('SELECT fdim.region, dim.name, count(*) FROM f JOIN dim ON f.dim_id = dim.id JOIN fdim ON fdim.id = dim.id GROUP BY 1, 2'),
	('SELECT f.k, dim.name FROM f JOIN dim ON f.dim_id = dim.id WHERE dim.born > ''2002-01-01'' AND f.at < ''2024-04-01'''),
	('SELECT f.k, dim.id FROM f JOIN dim ON f.dim_id < dim.id WHERE f.k < 20'),
	('SELECT count(*) FROM f CROSS JOIN mdim'),
	-- the preserved side of an outer join never moves
	('SELECT dim.id, f.k FROM dim LEFT JOIN f ON f.dim_id = dim.id'),
	('SELECT dim.id, f.k FROM dim FULL JOIN f ON f.dim_id = dim.id')
) qs(q);

-- asked for by hint, and refused when too large
SELECT (cj_dim_l.check('/*+ BroadcastJoin(dim) */ SELECT f.k, dim.name FROM f JOIN dim ON f.dim_id = dim.id')).*;
SET colojoin.broadcast_threshold = 10;
SELECT (cj_dim_l.check('SELECT f.k, dim.name FROM f JOIN dim ON f.dim_id = dim.id')).*;
RESET colojoin.broadcast_threshold;
-- a prepared statement, custom and generic plans
PREPARE dimq(int) AS SELECT dim.name, count(*) FROM f JOIN dim ON f.dim_id = dim.id WHERE f.qty > $1 GROUP BY 1;
SET plan_cache_mode = force_generic_plan;
CREATE FUNCTION cj_dim_l.run_prepared() RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
	rec record;
	result text[] := '{}';
BEGIN
	FOR rec IN EXECUTE 'EXECUTE dimq(5)' LOOP
		result := result || rec::text;
	END LOOP;
	RETURN ARRAY(SELECT r FROM unnest(result) r ORDER BY r COLLATE "C");
END
$$;
SELECT cj_dim_l.run_prepared() = rows_of('SELECT dim.name, count(*) FROM f JOIN dim ON f.dim_id = dim.id WHERE f.qty > 5 GROUP BY 1', 'cj_dim_l') AS generic_same;
RESET plan_cache_mode;
DEALLOCATE dimq;
RESET datestyle;
RESET intervalstyle;
RESET extra_float_digits;

-- clean up
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA cj_dim_s CASCADE;
DROP SCHEMA cj_dim_l CASCADE;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', :'node2_port'),
		'DROP TABLE public.cj_dim_remote');
\i sql/include/three_nodes_end.sql
