--
-- windows: window functions whose every window partitions by a partition
-- key of a table each row comes from are computed in the tasks (each
-- window partition lives in one partition class); the others run on the
-- coordinator.  Every query is compared with the same query on plain local
-- tables, and the plan says whether the nodes computed the windows.
--
\set prefix cj_win
\i sql/include/three_nodes_begin.sql
-- The plans asserted here are those of partitions whose size the planner
-- does not know (colojoin.remote_size_lifetime = 0; suite remote_sizes
-- covers the sizes read from the nodes).
SET colojoin.remote_size_lifetime = 0;

\i sql/include/mixed_tables_begin.sql

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
\i sql/include/mixed_tables_end.sql
\i sql/include/three_nodes_end.sql
