--
-- subquery_narrowing: a subquery (or a WITH query read once) that groups a
-- sharded table by a column the query joins to a sharded table with
-- conditions of its own is planned a second time narrowed to the rows
-- whose column that table's remaining rows hold (EXISTS over it), and the
-- cheaper plan is kept.  Every query is compared with the same query on
-- plain local tables, narrowing on and off; 'narrowed' says whether the
-- plan kept is another than the plan without narrowing.
--
\set prefix cj_nar
\i sql/include/three_nodes_begin.sql
\i sql/include/mixed_tables_begin.sql

-- pt: parts, hash 4 on pk; li: line items, hash 6 on their order lk, lp a
-- part (NULL in some); od: orders, hash 6 on ok, colocated with li; one of
-- li's partitions empty
CREATE TABLE cj_nar_s.pt (pk int, kind text, brand int) PARTITION BY HASH (pk);
CREATE TABLE cj_nar_s.li (lk int, lp int, qty int, "Tag" text) PARTITION BY HASH (lk);
CREATE TABLE cj_nar_s.od (ok int, odate date, cust int) PARTITION BY HASH (ok);
SELECT cj_nar.leaf('pt', 'pt' || r, format('FOR VALUES WITH (MODULUS 4, REMAINDER %s)', r), r % 3 + 1,
				   'pk int, kind text, brand int')
FROM generate_series(0, 3) r;
SELECT cj_nar.leaf(t, t || r, format('FOR VALUES WITH (MODULUS 6, REMAINDER %s)', r), r % 3 + 1,
				   CASE t WHEN 'li' THEN 'lk int, lp int, qty int, "Tag" text'
						  ELSE 'ok int, odate date, cust int' END)
FROM (VALUES ('li'), ('od')) tabs(t), generate_series(0, 5) r;
CREATE TABLE cj_nar_l.pt (pk int, kind text, brand int);
CREATE TABLE cj_nar_l.li (lk int, lp int, qty int, "Tag" text);
CREATE TABLE cj_nar_l.od (ok int, odate date, cust int);
-- a plain table, not sharded, in both schemas
CREATE TABLE cj_nar_s.kinds (kind text, label text);
CREATE TABLE cj_nar_l.kinds (kind text, label text);
INSERT INTO cj_nar_l.pt SELECT g, CASE WHEN g % 40 < 5 THEN (ARRAY['box', 'case', 'bag', 'jar', 'drum'])[g % 40 + 1]
										  ELSE 'other' END, g % 7
FROM generate_series(1, 2000) g;
INSERT INTO cj_nar_l.pt VALUES (NULL, 'box', 1);
INSERT INTO cj_nar_l.li SELECT (g * 7) % 900 + 1, CASE WHEN g % 31 = 0 THEN NULL ELSE (g * 13) % 2010 + 1 END,
	g % 50 + 1, (ARRAY['a', 'B', 'c'])[g % 3 + 1]
FROM generate_series(1, 60000) g WHERE (g * 7) % 900 + 1 NOT IN (SELECT ok FROM generate_series(1, 900) ok
																 WHERE satisfies_hash_partition('cj_nar_s.od'::regclass, 6, 5, ok));
INSERT INTO cj_nar_l.od SELECT g, date '2024-01-01' + g % 365, g % 40 FROM generate_series(1, 900) g;
INSERT INTO cj_nar_l.kinds VALUES ('box', 'small'), ('bag', 'soft');
INSERT INTO cj_nar_s.pt SELECT * FROM cj_nar_l.pt;
INSERT INTO cj_nar_s.li SELECT * FROM cj_nar_l.li;
INSERT INTO cj_nar_s.od SELECT * FROM cj_nar_l.od;
INSERT INTO cj_nar_s.kinds SELECT * FROM cj_nar_l.kinds;
ANALYZE cj_nar_l.pt, cj_nar_l.li, cj_nar_l.od, cj_nar_s.kinds, cj_nar_l.kinds;
SELECT dblink_exec('cj_nar_n' || n, 'ANALYZE') FROM generate_series(1, 3) n;

-- check(query): same rows as the plain tables with narrowing on and off,
-- how many, and whether the plan kept differs from the one without it
\i sql/include/plan_check.sql
CREATE FUNCTION cj_nar.plan_of(query text) RETURNS text LANGUAGE sql
SET search_path = cj_nar_s, public
AS $$ SELECT string_agg(l, E'\n') FROM public.plan_explain(query) l $$;
CREATE FUNCTION cj_nar.check(query text, OUT same boolean, OUT same_off boolean,
							 OUT nrows int, OUT narrowed boolean)
LANGUAGE plpgsql AS $$
DECLARE
	expected text[] := rows_of(query, 'cj_nar_l');
	plan_on text := cj_nar.plan_of(query);
	plan_off text;
BEGIN
	same := rows_of(query, 'cj_nar_s') = expected;
	nrows := cardinality(expected);
	PERFORM set_config('colojoin.enable_subquery_narrowing', 'off', true);
	plan_off := cj_nar.plan_of(query);
	same_off := rows_of(query, 'cj_nar_s') = expected;
	PERFORM set_config('colojoin.enable_subquery_narrowing', 'on', true);
	narrowed := plan_on <> plan_off;
END
$$;

SELECT q, (cj_nar.check(q)).* FROM (VALUES
	-- a WITH query grouping all line items by part, joined to the line
	-- items of two kinds of parts (the shape of bench W22)
	('WITH pq AS (SELECT lp, avg(qty) AS aq FROM li GROUP BY lp) SELECT pt.brand, count(*), sum(li.qty) FROM li JOIN pt ON pt.pk = li.lp JOIN pq ON pq.lp = pt.pk WHERE pt.kind IN (''box'', ''case'') AND li.qty < 0.6 * pq.aq GROUP BY pt.brand'),
	-- a derived table in the FROM list, the join and the condition in WHERE
	('SELECT pt.pk, t.n, t.total FROM pt, (SELECT lp, count(*) AS n, sum(qty) AS total FROM li GROUP BY lp) t WHERE t.lp = pt.pk AND pt.brand = 3'),
	-- HAVING, a condition on the subquery's rows, the subquery written first
	('SELECT pt.kind, count(*), max(t.n) FROM (SELECT lp, count(*) AS n FROM li WHERE qty > 5 GROUP BY lp HAVING count(*) > 2) t JOIN pt ON pt.pk = t.lp WHERE pt.kind = ''jar'' AND t.n < 40 GROUP BY pt.kind'),
	-- grouped by the column and another one; DISTINCT rows
	('SELECT pt.pk, t."Tag", t.n FROM pt JOIN (SELECT lp, "Tag", count(*) AS n FROM li GROUP BY lp, "Tag") t ON t.lp = pt.pk WHERE pt.brand IN (1, 2)'),
	('SELECT pt.pk, d.qty FROM pt JOIN (SELECT DISTINCT lp, qty FROM li) d ON d.lp = pt.pk WHERE pt.kind = ''bag'' AND pt.brand < 3'),
	-- narrowed by two tables at once: parts of a kind, orders of a month
	('SELECT pt.pk, od.ok, t.n FROM (SELECT lk, lp, count(*) AS n FROM li GROUP BY lk, lp) t JOIN pt ON pt.pk = t.lp JOIN od ON od.ok = t.lk WHERE pt.kind = ''drum'' AND od.odate < date ''2024-02-01'''),
	-- an expression of the table on the other side, and a cross-type equality
	('SELECT pt.pk, t.n FROM pt JOIN (SELECT lp, count(*) AS n FROM li GROUP BY lp) t ON t.lp = pt.pk + 1 WHERE pt.kind = ''case'''),
	('SELECT pt.pk, t.n FROM pt JOIN (SELECT lp::bigint AS lp8, count(*) AS n FROM li GROUP BY 1) t ON t.lp8 = pt.pk WHERE pt.kind = ''case'''),
	-- nested: the pattern inside a derived table of the query
	('SELECT x.brand, count(*) FROM (SELECT pt.brand FROM pt JOIN (SELECT lp, count(*) AS n FROM li GROUP BY lp) t ON t.lp = pt.pk WHERE pt.kind = ''box'' AND t.n > 20) x GROUP BY x.brand'),
	-- never narrowed: the subquery preserved or nullable in an outer join
	('SELECT pt.pk, t.n FROM pt LEFT JOIN (SELECT lp, count(*) AS n FROM li GROUP BY lp) t ON t.lp = pt.pk WHERE pt.kind = ''box'''),
	('SELECT t.lp, t.n, pt.kind FROM (SELECT lp, count(*) AS n FROM li GROUP BY lp) t LEFT JOIN pt ON pt.pk = t.lp AND pt.kind = ''box'''),
	-- a WITH query read twice, MATERIALIZED, or limited; a window; an
	-- aggregate over all rows; a column it does not group by
	('WITH pq AS (SELECT lp, count(*) AS n FROM li GROUP BY lp) SELECT pt.pk, pq.n FROM pt JOIN pq ON pq.lp = pt.pk WHERE pt.kind = ''box'' AND pq.n > (SELECT avg(n) FROM pq)'),
	('WITH pq AS MATERIALIZED (SELECT lp, count(*) AS n FROM li GROUP BY lp) SELECT pt.pk, pq.n FROM pt JOIN pq ON pq.lp = pt.pk WHERE pt.kind = ''box'''),
	('SELECT pt.pk, t.n FROM pt JOIN (SELECT lp, count(*) AS n FROM li GROUP BY lp ORDER BY 2 DESC, 1 LIMIT 30) t ON t.lp = pt.pk WHERE pt.kind = ''box'''),
	('SELECT pt.pk, t.r FROM pt JOIN (SELECT lp, rank() OVER (ORDER BY qty, lk, "Tag") AS r FROM li) t ON t.lp = pt.pk WHERE pt.kind = ''box'' AND pt.brand = 1'),
	('SELECT pt.pk, t.m FROM pt JOIN (SELECT max(lp) AS m FROM li) t ON t.m = pt.pk WHERE pt.kind = ''case'''),
	('SELECT pt.pk, t.s FROM pt JOIN (SELECT "Tag", sum(lp) AS s FROM li GROUP BY "Tag") t ON t.s = pt.pk WHERE pt.kind = ''box'''),
	-- a table that is not sharded, a table with no condition of its own
	('SELECT k.label, t.n FROM kinds k JOIN (SELECT "Tag", count(*) AS n FROM li GROUP BY "Tag") t ON lower(t."Tag") = k.kind WHERE k.label = ''soft'''),
	('SELECT pt.pk, t.n FROM pt JOIN (SELECT lp, count(*) AS n FROM li GROUP BY lp) t ON t.lp = pt.pk'),
	-- a text column grouped by its own collation, compared in another
	('SELECT pt.pk, t."Tag" FROM pt JOIN (SELECT "Tag", count(*) AS n FROM li GROUP BY "Tag") t ON t."Tag" = pt.kind COLLATE "C" WHERE pt.brand = 2')
) v(q);

-- the narrowed plan: the WITH query reads only the line items of the parts
-- of the two kinds, which are broadcast into the line items' group
\set VERBOSITY terse
SET colojoin.log_decisions = on;
SET client_min_messages = notice;
SET search_path = cj_nar_s, public;
CREATE TEMP TABLE narrowed_plan AS
SELECT regexp_replace(p, '\d+', 'N', 'g') AS line
FROM cj_nar.plan_of('WITH pq AS (SELECT lp, avg(qty) AS aq FROM li GROUP BY lp) SELECT pt.brand, count(*) FROM li JOIN pt ON pt.pk = li.lp JOIN pq ON pq.lp = pt.pk WHERE pt.kind IN (''box'', ''case'') AND li.qty < 0.6 * pq.aq GROUP BY pt.brand') p;
RESET colojoin.log_decisions;
SELECT count(*) > 1 AS pt_read_twice FROM regexp_matches((SELECT line FROM narrowed_plan), 'pt broadcast', 'g');

-- the groups of a column joined (inner or semi) to a table are no more
-- than that table's rows after its conditions: the estimate the query
-- above sees (what made the WITH query above look too large to broadcast);
-- through a left join the column keeps all its values
CREATE FUNCTION cj_nar.est(query text) RETURNS float8 LANGUAGE plpgsql
SET search_path = cj_nar_s, public AS $$
DECLARE
	j json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO j;
	RETURN (j->0->'Plan'->>'Plan Rows')::float8;
END
$$;
SELECT v.shape, cj_nar.est(v.q) <= cj_nar.est('SELECT * FROM pt WHERE kind = ''box''') + 1 AS bounded
FROM (VALUES
	('semi', 'SELECT lp, count(*) FROM li WHERE EXISTS (SELECT 1 FROM pt WHERE pt.pk = li.lp AND pt.kind = ''box'') GROUP BY lp'),
	('inner', 'SELECT lp, count(*) FROM li JOIN pt ON pt.pk = li.lp WHERE pt.kind = ''box'' GROUP BY lp'),
	('left', 'SELECT lp, count(*) FROM li LEFT JOIN pt ON pt.pk = li.lp AND pt.kind = ''box'' GROUP BY lp'),
	('none', 'SELECT lp, count(*) FROM li GROUP BY lp'),
	-- plain tables keep PostgreSQL's estimate
	('plain semi', 'SELECT lp, count(*) FROM cj_nar_l.li l WHERE EXISTS (SELECT 1 FROM cj_nar_l.pt p WHERE p.pk = l.lp AND p.kind = ''box'') GROUP BY lp')
) v(shape, q);

-- a parameter of a generic plan in the table's condition
SET plan_cache_mode = force_generic_plan;
PREPARE cj_nar_p(text) AS SELECT pt.pk, t.n FROM pt JOIN (SELECT lp, count(*) AS n FROM li GROUP BY lp) t ON t.lp = pt.pk WHERE pt.kind = $1 AND pt.brand > 4;
SELECT rows_of('EXECUTE cj_nar_p(''jar'')', 'cj_nar_s') =
	   rows_of('SELECT pt.pk, t.n FROM pt JOIN (SELECT lp, count(*) AS n FROM li GROUP BY lp) t ON t.lp = pt.pk WHERE pt.kind = ''jar'' AND pt.brand > 4', 'cj_nar_l') AS generic_same;
DEALLOCATE cj_nar_p;
RESET plan_cache_mode;

-- row security on the narrowing table: never narrowed, so a function of
-- the query never sees a part the policy hides
CREATE ROLE cj_nar_reader;
GRANT USAGE ON SCHEMA cj_nar_s, cj_nar TO cj_nar_reader;
GRANT SELECT ON cj_nar_s.pt, cj_nar_s.li TO cj_nar_reader;
ALTER TABLE cj_nar_s.pt ENABLE ROW LEVEL SECURITY;
CREATE POLICY brand_low ON cj_nar_s.pt TO cj_nar_reader USING (brand < 3);
CREATE FUNCTION cj_nar.peek(int) RETURNS boolean LANGUAGE plpgsql COST 0.0001 AS $$
BEGIN
	IF $1 >= 3 THEN
		RAISE NOTICE 'peeked at brand %', $1;
	END IF;
	RETURN true;
END
$$;
GRANT EXECUTE ON FUNCTION cj_nar.peek(int) TO cj_nar_reader;
SELECT format('CREATE USER MAPPING FOR cj_nar_reader SERVER %I OPTIONS (user %L, password_required ''false'')',
			  'cj_nar_n' || n, current_user)
FROM generate_series(1, 3) n \gexec
SET ROLE cj_nar_reader;
SELECT count(*), sum(t.n) FROM pt JOIN (SELECT lp, count(*) AS n FROM li GROUP BY lp) t ON t.lp = pt.pk
WHERE pt.kind = 'box' AND cj_nar.peek(pt.brand);
RESET ROLE;
SELECT count(*), sum(t.n) FROM cj_nar_l.pt JOIN (SELECT lp, count(*) AS n FROM cj_nar_l.li GROUP BY lp) t ON t.lp = pt.pk
WHERE pt.kind = 'box' AND pt.brand < 3;
RESET client_min_messages;
\set VERBOSITY default
RESET search_path;

-- clean up
DROP FUNCTION public.plan_check(text, text, text), public.plan_explain(text);
DROP OWNED BY cj_nar_reader;
DROP ROLE cj_nar_reader;
\i sql/include/mixed_tables_end.sql
\i sql/include/three_nodes_end.sql
