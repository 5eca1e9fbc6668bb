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

\i sql/include/mixed_tables_begin.sql

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
\i sql/include/mixed_tables_end.sql
\i sql/include/three_nodes_end.sql
