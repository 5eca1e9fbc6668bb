--
-- lateral: LATERAL subqueries that PostgreSQL keeps as subqueries (LIMIT,
-- aggregates, DISTINCT, ORDER BY), reading only sharded tables colocated
-- with the tables they are joined to and correlated with them on the
-- partition key, run inside the tasks: one ColocatedJoin instead of a
-- nested loop with a round trip per outer row.  Every query is compared
-- with the same query on plain local tables holding the same rows, and
-- the plan says whether the tasks ran the subquery.
--
\set prefix cj_lat
\i sql/include/three_nodes_begin.sql
-- The plans asserted here are those of partitions whose size the planner
-- does not know (colojoin.remote_size_lifetime = 0; suite remote_sizes
-- covers the sizes read from the nodes).
SET colojoin.remote_size_lifetime = 0;

\i sql/include/mixed_tables_begin.sql

-- o, li and "Ship Log": hash 6 on the order key, colocated; NULL keys in
-- all three
CREATE TABLE cj_lat_s.o (ok int, od date, oc int) PARTITION BY HASH (ok);
CREATE TABLE cj_lat_s.li (lk int, ls date, lq int) PARTITION BY HASH (lk);
CREATE TABLE cj_lat_s."Ship Log" ("OrdKey" int, "When" date, "Qty" int) PARTITION BY HASH ("OrdKey");
SELECT cj_lat.leaf(t, t || r, format('FOR VALUES WITH (MODULUS 6, REMAINDER %s)', r), r % 3 + 1,
				  CASE t WHEN 'o' THEN 'ok int, od date, oc int'
						 WHEN 'li' THEN 'lk int, ls date, lq int'
						 ELSE '"OrdKey" int, "When" date, "Qty" int' END)
FROM (VALUES ('o'), ('li'), ('Ship Log')) tabs(t), generate_series(0, 5) r;
-- rng_o and rng_l: range on k; rng_l's [100, 200) is empty and it has no
-- partition for [200, 300) at all
CREATE TABLE cj_lat_s.rng_o (k int, v int) PARTITION BY RANGE (k);
CREATE TABLE cj_lat_s.rng_l (k int, w int) PARTITION BY RANGE (k);
SELECT cj_lat.leaf('rng_o', 'rng_o' || n, format('FOR VALUES FROM (%s) TO (%s)', (n - 1) * 100, n * 100), n, 'k int, v int')
FROM generate_series(1, 3) n;
SELECT cj_lat.leaf('rng_l', 'rng_l' || n, format('FOR VALUES FROM (%s) TO (%s)', (n - 1) * 100, n * 100), n, 'k int, w int')
FROM generate_series(1, 2) n;
-- rng_m: range on k like rng_o, its [0, 100) sub-partitioned by hash on w
-- (two leaves on node 1), no partition for [200, 300)
CREATE TABLE cj_lat_s.rng_m (k int, w int) PARTITION BY RANGE (k);
CREATE TABLE cj_lat_s.rng_m1 PARTITION OF cj_lat_s.rng_m FOR VALUES FROM (0) TO (100) PARTITION BY HASH (w);
SELECT cj_lat.leaf('rng_m1', 'rng_m1_' || r, format('FOR VALUES WITH (MODULUS 2, REMAINDER %s)', r), 1, 'k int, w int')
FROM generate_series(0, 1) r;
SELECT cj_lat.leaf('rng_m', 'rng_m2', 'FOR VALUES FROM (100) TO (200)', 2, 'k int, w int');
-- rates: a reference table (one partition that takes every row, a copy on
-- every node, added below)
CREATE TABLE cj_lat_s.rates (rd date, rate int) PARTITION BY HASH (rd);
SELECT cj_lat.leaf('rates', 'rates0', 'FOR VALUES WITH (MODULUS 1, REMAINDER 0)', 1, 'rd date, rate int');

CREATE TABLE cj_lat_l.o (ok int, od date, oc int);
CREATE TABLE cj_lat_l.li (lk int, ls date, lq int);
CREATE TABLE cj_lat_l."Ship Log" ("OrdKey" int, "When" date, "Qty" int);
CREATE TABLE cj_lat_l.rng_o (k int, v int);
CREATE TABLE cj_lat_l.rng_l (k int, w int);
CREATE TABLE cj_lat_l.rng_m (k int, w int);
CREATE TABLE cj_lat_l.rates (rd date, rate int);
INSERT INTO cj_lat_l.o SELECT CASE WHEN g % 17 = 0 THEN NULL ELSE g END, date '2024-01-01' + (g * 7) % 90, g % 5 FROM generate_series(1, 80) g;
INSERT INTO cj_lat_l.li SELECT CASE WHEN g % 29 = 0 THEN NULL ELSE (g * 13) % 70 + 1 END, date '2024-01-01' + (g * 11) % 150, g % 7 FROM generate_series(1, 400) g;
INSERT INTO cj_lat_l."Ship Log" SELECT CASE WHEN g % 23 = 0 THEN NULL ELSE (g * 7) % 60 + 1 END, date '2024-01-01' + (g * 5) % 120, g % 4 FROM generate_series(1, 200) g;
INSERT INTO cj_lat_l.rng_o SELECT (g * 5) % 300, g FROM generate_series(1, 120) g;
INSERT INTO cj_lat_l.rng_l SELECT (g * 7) % 100, g FROM generate_series(1, 150) g;
INSERT INTO cj_lat_s.o SELECT * FROM cj_lat_l.o;
INSERT INTO cj_lat_s.li SELECT * FROM cj_lat_l.li;
INSERT INTO cj_lat_s."Ship Log" SELECT * FROM cj_lat_l."Ship Log";
INSERT INTO cj_lat_s.rng_o SELECT * FROM cj_lat_l.rng_o;
INSERT INTO cj_lat_s.rng_l SELECT * FROM cj_lat_l.rng_l;
INSERT INTO cj_lat_l.rng_m SELECT (g * 3) % 200, g FROM generate_series(1, 150) g;
INSERT INTO cj_lat_s.rng_m SELECT * FROM cj_lat_l.rng_m;
INSERT INTO cj_lat_l.rates SELECT date '2023-12-01' + g * 2, (g * 7) % 50 FROM generate_series(1, 80) g;
INSERT INTO cj_lat_s.rates SELECT * FROM cj_lat_l.rates;
SELECT colojoin.add_replica('cj_lat_s.rates0', :'srv2'), colojoin.add_replica('cj_lat_s.rates0', :'srv3');
ANALYZE cj_lat_l.o, cj_lat_l.li, cj_lat_l."Ship Log", cj_lat_l.rng_o, cj_lat_l.rng_l, cj_lat_l.rng_m;

-- check(query[, marker]): same rows from the sharded tables and the twins,
-- how many, and whether one ColocatedJoin ran the subquery (its Strategy
-- says marker; no join, subquery scan or postgres_fdw scan left)
CREATE FUNCTION cj_lat.check(query text, marker text DEFAULT 'with LATERAL',
							 OUT same boolean, OUT nrows int, OUT in_tasks boolean)
LANGUAGE plpgsql AS $$
DECLARE
	plan text := '';
	line text;
	s text[];
BEGIN
	PERFORM set_config('search_path', 'cj_lat_s, public', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		plan := plan || line || E'\n';
	END LOOP;
	s := rows_of(query, 'cj_lat_s');
	same := s = rows_of(query, 'cj_lat_l');
	nrows := cardinality(s);
	in_tasks := plan LIKE '%' || marker || '%' AND
		plan !~ '(Nested Loop|Hash Join|Merge Join|Hash Semi|Hash Anti|Subquery Scan|Foreign Scan)' AND
		(length(plan) - length(replace(plan, 'ColocatedJoin', ''))) / length('ColocatedJoin') = 1;
	PERFORM set_config('search_path', 'public', true);
END
$$;

-- explain_lines(query): its EXPLAIN (COSTS OFF), line by line
CREATE FUNCTION cj_lat.explain_lines(query text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		RETURN NEXT line;
	END LOOP;
END
$$;

SELECT q, (cj_lat.check(q)).* FROM (VALUES
	-- the closest earlier line item, inner and left, LIMIT 1 and 3, DESC and ASC
	('SELECT o.ok, x.ls FROM o CROSS JOIN LATERAL (SELECT ls FROM li l WHERE l.lk = o.ok AND l.ls <= o.od + 10 ORDER BY ls DESC LIMIT 1) x'),
	('SELECT o.ok, o.od, x.ls FROM o LEFT JOIN LATERAL (SELECT ls FROM li l WHERE l.lk = o.ok AND l.ls <= o.od + 10 ORDER BY ls DESC LIMIT 1) x ON true'),
	('SELECT o.ok, x.ls, x.lq FROM o CROSS JOIN LATERAL (SELECT ls, lq FROM li WHERE li.lk = o.ok ORDER BY ls, lq LIMIT 3) x'),
	('SELECT o.ok, x.ls, x.lq FROM o LEFT JOIN LATERAL (SELECT ls, lq FROM li WHERE li.lk = o.ok ORDER BY ls DESC NULLS LAST, lq DESC LIMIT 3) x ON true'),
	('SELECT o.ok, x.ls FROM o JOIN LATERAL (SELECT ls FROM li WHERE li.lk = o.ok ORDER BY ls LIMIT 2 OFFSET 1) x ON x.ls > o.od'),
	('SELECT o.ok, x.ls FROM o LEFT JOIN LATERAL (SELECT ls FROM li WHERE li.lk = o.ok ORDER BY ls LIMIT 2) x ON x.ls > o.od AND o.oc < 3'),
	('SELECT o.ok, x.lq FROM o CROSS JOIN LATERAL (SELECT lq FROM li WHERE li.lk = o.ok ORDER BY lq FETCH FIRST 1 ROWS WITH TIES) x'),
	('SELECT o.ok, x.ls FROM o CROSS JOIN LATERAL (SELECT ls FROM li WHERE o.ok = li.lk ORDER BY lq * 2 + 1, ls LIMIT 1) x'),
	-- the order key appears in its select list, computed expressions too
	('SELECT o.ok, x.* FROM o CROSS JOIN LATERAL (SELECT lk, ls - o.od AS days, lq + o.oc AS s FROM li WHERE lk = o.ok ORDER BY ls DESC, lq LIMIT 1) x'),
	-- aggregates, with and without GROUP BY; count of nothing is 0
	('SELECT o.ok, x.n, x.total, x.first FROM o CROSS JOIN LATERAL (SELECT count(*) AS n, sum(lq) AS total, min(ls) AS first FROM li WHERE li.lk = o.ok AND li.ls > o.od) x'),
	('SELECT o.ok, x.n FROM o LEFT JOIN LATERAL (SELECT count(*) AS n, max(ls) AS last FROM li WHERE li.lk = o.ok) x ON true'),
	('SELECT o.ok, x.lq, x.n FROM o CROSS JOIN LATERAL (SELECT lq, count(*) AS n FROM li WHERE li.lk = o.ok GROUP BY lq HAVING count(*) > 1) x'),
	('SELECT o.ok, x.lq, x.n FROM o LEFT JOIN LATERAL (SELECT lq, count(DISTINCT ls) AS n FROM li WHERE li.lk = o.ok GROUP BY lq ORDER BY 2 DESC, 1 LIMIT 1) x ON true'),
	-- DISTINCT
	('SELECT o.ok, x.lq FROM o CROSS JOIN LATERAL (SELECT DISTINCT lq FROM li WHERE li.lk = o.ok AND li.lq <> o.oc) x'),
	('SELECT o.ok, x.lq FROM o LEFT JOIN LATERAL (SELECT DISTINCT lq FROM li WHERE li.lk = o.ok ORDER BY lq DESC LIMIT 2) x ON true'),
	-- pruned classes: a condition on the key
	('SELECT o.ok, x.ls FROM o CROSS JOIN LATERAL (SELECT ls FROM li WHERE li.lk = o.ok ORDER BY ls DESC LIMIT 1) x WHERE o.ok IN (3, 5, 40)'),
	('SELECT o.ok, x.n FROM o LEFT JOIN LATERAL (SELECT count(*) AS n FROM li WHERE li.lk = o.ok) x ON true WHERE o.ok = 12'),
	-- a condition on its rows, with LIMIT (PostgreSQL keeps it on the subquery''s output)
	('SELECT o.ok, x.ls FROM o CROSS JOIN LATERAL (SELECT ls, lq FROM li WHERE li.lk = o.ok ORDER BY ls DESC, lq LIMIT 3) x WHERE x.lq > 2'),
	-- joined to another colocated table, correlated through it
	('SELECT o.ok, s."When", x.ls FROM o JOIN "Ship Log" s ON s."OrdKey" = o.ok CROSS JOIN LATERAL (SELECT ls FROM li WHERE li.lk = s."OrdKey" AND li.ls < s."When" ORDER BY ls DESC LIMIT 1) x'),
	('SELECT o.ok, x.ls FROM o LEFT JOIN li ON li.lk = o.ok AND li.lq = 1 LEFT JOIN LATERAL (SELECT "When" AS ls FROM "Ship Log" s WHERE s."OrdKey" = li.lk ORDER BY 1 LIMIT 1) x ON true'),
	-- two tables in the subquery, one correlated through the other
	('SELECT o.ok, x.ls, x.w FROM o CROSS JOIN LATERAL (SELECT li.ls, s."When" AS w FROM li, "Ship Log" s WHERE s."OrdKey" = li.lk AND li.lk = o.ok ORDER BY li.ls DESC, s."When" DESC LIMIT 1) x'),
	-- the quoted, mixed-case table inside the subquery, and its columns outside
	('SELECT o.ok, x."Last", x."Qty" FROM o LEFT JOIN LATERAL (SELECT "When" AS "Last", "Qty" FROM "Ship Log" WHERE "Ship Log"."OrdKey" = o.ok ORDER BY "When" DESC, "Qty" LIMIT 1) x ON true'),
	-- two LATERAL subqueries on one table: the ASOF idiom, earlier and later match
	('SELECT o.ok, o.od, e.ls AS earlier, l.ls AS later FROM o LEFT JOIN LATERAL (SELECT ls FROM li WHERE li.lk = o.ok AND li.ls <= o.od ORDER BY ls DESC LIMIT 1) e ON true LEFT JOIN LATERAL (SELECT ls FROM li WHERE li.lk = o.ok AND li.ls >= o.od ORDER BY ls LIMIT 1) l ON true'),
	-- a LATERAL subquery reading the one before it
	('SELECT o.ok, x1.ls, x2.ls FROM o CROSS JOIN LATERAL (SELECT ls FROM li WHERE li.lk = o.ok ORDER BY ls LIMIT 1) x1 LEFT JOIN LATERAL (SELECT ls FROM li WHERE li.lk = o.ok AND li.ls > x1.ls ORDER BY ls LIMIT 1) x2 ON true'),
	-- joined further, its columns in the next join''s condition; inside an outer join''s nullable side
	('SELECT o.ok, x.ls, s."When" FROM o CROSS JOIN LATERAL (SELECT ls FROM li WHERE li.lk = o.ok ORDER BY ls LIMIT 1) x JOIN "Ship Log" s ON s."OrdKey" = o.ok AND s."When" > x.ls'),
	('SELECT s."OrdKey", s."When", x.ls FROM "Ship Log" s LEFT JOIN (o CROSS JOIN LATERAL (SELECT ls FROM li WHERE li.lk = o.ok ORDER BY ls LIMIT 1) x) ON s."OrdKey" = o.ok AND x.ls > s."When"'),
	-- empty partitions and a class with no partition of the subquery''s table
	('SELECT r.k, x.w FROM rng_o r CROSS JOIN LATERAL (SELECT w FROM rng_l l WHERE l.k = r.k ORDER BY w DESC LIMIT 1) x'),
	('SELECT r.k, r.v, x.n, x.top FROM rng_o r LEFT JOIN LATERAL (SELECT count(*) AS n, max(w) AS top FROM rng_l l WHERE l.k = r.k AND l.w < r.v) x ON true'),
	-- a sub-partitioned partition: its leaves together
	('SELECT r.k, x.w, x.n FROM rng_o r LEFT JOIN LATERAL (SELECT max(w) AS w, count(*) AS n FROM rng_m m WHERE m.k = r.k) x ON true'),
	('SELECT r.k, x.w FROM rng_o r CROSS JOIN LATERAL (SELECT m.w FROM rng_m m, rng_l l WHERE m.k = r.k AND l.k = m.k AND l.w < m.w ORDER BY m.w DESC LIMIT 2) x'),
	-- a reference table, read whole from the task's node: alone (ASOF on
	-- its own column) and with a correlated sharded table
	('SELECT o.ok, o.od, x.rate FROM o LEFT JOIN LATERAL (SELECT rate FROM rates WHERE rates.rd <= o.od ORDER BY rd DESC LIMIT 1) x ON true'),
	('SELECT o.ok, x.ls, x.rate FROM o CROSS JOIN LATERAL (SELECT li.ls, r.rate FROM li, rates r WHERE li.lk = o.ok AND r.rd <= li.ls ORDER BY li.ls DESC, r.rd DESC LIMIT 1) x'),
	-- keys of different integer types (a bigint, b int)
	('SELECT a.k, a.v, x.w FROM a LEFT JOIN LATERAL (SELECT w FROM b WHERE b.k = a.k ORDER BY w LIMIT 1) x ON true'),
	-- aggregated and ordered above the join: still the same tasks
	('SELECT count(*), sum(x.lq) FROM o CROSS JOIN LATERAL (SELECT lq FROM li WHERE li.lk = o.ok ORDER BY ls DESC, lq LIMIT 2) x'),
	('SELECT o.ok, x.ls FROM o CROSS JOIN LATERAL (SELECT ls FROM li WHERE li.lk = o.ok ORDER BY ls DESC LIMIT 1) x ORDER BY x.ls, o.ok LIMIT 5')
) qs(q);

-- not correlated on the key, or reading what the tasks cannot: PostgreSQL's
-- plan, still right
SELECT q, (cj_lat.check(q)).* FROM (VALUES
	('SELECT o.ok, x.ls FROM o CROSS JOIN LATERAL (SELECT ls FROM li WHERE li.lq = o.oc ORDER BY ls DESC, lk LIMIT 1) x'),
	('SELECT o.ok, x.ls FROM o CROSS JOIN LATERAL (SELECT ls FROM li WHERE li.lk = o.oc ORDER BY ls DESC LIMIT 1) x'),
	('SELECT o.ok, x.ls FROM o CROSS JOIN LATERAL (SELECT ls FROM li WHERE li.lk = o.ok OR li.lq = 1 ORDER BY ls DESC, lk LIMIT 1) x'),
	('SELECT o.ok, x.ls FROM o CROSS JOIN LATERAL (SELECT ls FROM li WHERE li.lk = o.ok AND random() >= 0 ORDER BY ls DESC LIMIT 1) x'),
	('SELECT o.ok, x.w FROM o CROSS JOIN LATERAL (SELECT w FROM b WHERE b.k = o.ok ORDER BY w LIMIT 1) x'),
	('SELECT o.ok, x.ls FROM o CROSS JOIN LATERAL (SELECT ls FROM li WHERE li.lk = o.ok ORDER BY ls DESC LIMIT (SELECT 1)) x'),
	('SELECT o.ok, x.n FROM o CROSS JOIN LATERAL (SELECT count(*) AS n FROM li WHERE li.lk = o.ok) x WHERE x.n > 3')
) qs(q);

-- one ColocatedJoin does all of it: the plan and a task's SQL
SET search_path = cj_lat_s, public;
EXPLAIN (COSTS OFF)
SELECT o.ok, x.ls FROM o
CROSS JOIN LATERAL (SELECT ls FROM li l WHERE l.lk = o.ok AND l.ls <= o.od + 100
					ORDER BY ls DESC LIMIT 1) x;
EXPLAIN (COSTS OFF)
SELECT o.ok, x.n, x.last FROM o
LEFT JOIN LATERAL (SELECT count(*) AS n, max(ls) AS last FROM li
				   WHERE li.lk = o.ok AND li.ls > o.od) x ON true
WHERE o.ok = 12;
-- a reference table in the subquery: its copy on the task's node
EXPLAIN (COSTS OFF)
SELECT o.ok, x.ls, x.rate FROM o
CROSS JOIN LATERAL (SELECT li.ls, r.rate FROM li, rates r
					WHERE li.lk = o.ok AND r.rd <= li.ls
					ORDER BY li.ls DESC, r.rd DESC LIMIT 1) x;
-- the declined case: PostgreSQL's nested loop, and the decision log's reason
SET colojoin.log_decisions = on;
EXPLAIN (COSTS OFF)
SELECT o.ok, x.ls FROM o
CROSS JOIN LATERAL (SELECT ls FROM li WHERE li.lq = o.oc ORDER BY ls DESC LIMIT 1) x;
RESET colojoin.log_decisions;
-- declined, the subquery runs once per row with that row's values as
-- parameters, written as the nodes read them whatever this session's
-- DateStyle
SET DateStyle = 'German';
SELECT q, (cj_lat.check(q)).* FROM (VALUES
	('SELECT o.ok, x.ls FROM o CROSS JOIN LATERAL (SELECT ls FROM li WHERE li.ls = o.od ORDER BY ls LIMIT 1) x'),
	('SELECT o.ok, x.n FROM o CROSS JOIN LATERAL (SELECT count(*) AS n FROM li WHERE li.ls > o.od AND li.lq = o.oc) x')
) qs(q);
RESET DateStyle;

-- as the inner side of a nested loop: rescanned with each outer row's key
-- as a parameter, which prunes the tasks to that row's class
SELECT rows_of(q, 'cj_lat_s') = rows_of(q, 'cj_lat_l') AS same,
	   cardinality(rows_of(q, 'cj_lat_s')) AS nrows,
	   (SELECT count(*) FROM cj_lat.explain_lines(q) l WHERE l ~ 'with LATERAL') AS colocated_lines
FROM (VALUES ('SELECT t.ok, y.ls FROM cj_lat_l.o t CROSS JOIN LATERAL (SELECT x.ls FROM o CROSS JOIN LATERAL (SELECT ls FROM li WHERE li.lk = o.ok ORDER BY ls DESC LIMIT 1) x WHERE o.ok = t.ok OFFSET 0) y WHERE t.ok < 30')) v(q);

-- parameters inside the subquery, custom and generic plans
PREPARE lat(int, int) AS
	SELECT o.ok, x.ls FROM o LEFT JOIN LATERAL (SELECT ls FROM li WHERE li.lk = o.ok AND li.lq > $1 ORDER BY ls DESC LIMIT $2) x ON true;
CREATE FUNCTION cj_lat.run(stmt text) RETURNS text[] LANGUAGE plpgsql AS $$
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
SELECT mode, cj_lat.run('EXECUTE lat(2, 2)') =
			 rows_of('SELECT o.ok, x.ls FROM o LEFT JOIN LATERAL (SELECT ls FROM li WHERE li.lk = o.ok AND li.lq > 2 ORDER BY ls DESC LIMIT 2) x ON true', 'cj_lat_l') AS same
FROM (VALUES ('force_custom_plan'), ('force_generic_plan')) m(mode),
	 LATERAL set_config('plan_cache_mode', m.mode, false);
SET plan_cache_mode = force_generic_plan;
SELECT count(*) AS colocated_lines FROM cj_lat.explain_lines('EXECUTE lat(2, 2)') l WHERE l ~ 'with LATERAL';
RESET plan_cache_mode;
DEALLOCATE ALL;

--
-- Subqueries that are not LATERAL, joined on a key they group by (an IN or
-- EXISTS over an aggregate, a CTE PostgreSQL inlines, a derived table):
-- each of their rows comes from one partition class, so the tasks run
-- them over their class's partitions like a LATERAL subquery.
--
SELECT q, (cj_lat.check(q, 'with subquery')).* FROM (VALUES
	-- IN over an aggregate grouped by the key (PostgreSQL may make it an
	-- inner join of the unique keys), with and without more conditions
	('SELECT o.ok, o.od FROM o WHERE o.ok IN (SELECT lk FROM li GROUP BY lk HAVING sum(lq) > 8)'),
	('SELECT count(*), sum(o.oc) FROM o WHERE o.ok IN (SELECT lk FROM li WHERE lq > 1 GROUP BY lk HAVING count(*) >= 2) AND o.oc < 4'),
	-- EXISTS and NOT EXISTS over DISTINCT and grouped subqueries
	('SELECT o.ok FROM o WHERE EXISTS (SELECT FROM (SELECT DISTINCT lk FROM li WHERE lq > 3) d WHERE d.lk = o.ok)'),
	('SELECT o.ok FROM o WHERE NOT EXISTS (SELECT FROM (SELECT lk, max(ls) AS last FROM li GROUP BY lk) d WHERE d.lk = o.ok AND d.last > o.od)'),
	-- a CTE PostgreSQL inlines, joined on its grouping key; left joined
	('WITH t AS (SELECT lk, count(*) AS n, sum(lq) AS q FROM li GROUP BY lk) SELECT o.ok, t.n, t.q FROM o JOIN t ON t.lk = o.ok'),
	('WITH t AS (SELECT lk, count(*) AS n FROM li GROUP BY lk) SELECT o.ok, t.n FROM o LEFT JOIN t ON t.lk = o.ok AND t.n > 1'),
	-- grouped by the key and another column; the subquery written first
	('SELECT o.ok, t.lq, t.n FROM (SELECT lk, lq, count(*) AS n FROM li GROUP BY lk, lq) t JOIN o ON o.ok = t.lk'),
	-- over a colocated join of its own, and a third table joined outside
	('SELECT o.ok, t.n FROM o JOIN (SELECT lk, count(*) AS n FROM li JOIN "Ship Log" s ON s."OrdKey" = li.lk GROUP BY lk) t ON t.lk = o.ok'),
	('SELECT o.ok, t.n, s."Qty" FROM o JOIN (SELECT lk, count(*) AS n FROM li GROUP BY lk) t ON t.lk = o.ok JOIN "Ship Log" s ON s."OrdKey" = o.ok'),
	-- aggregated over the join, grouped by a column of the outer table
	('SELECT o.oc, count(*), sum(t.q) FROM o JOIN (SELECT lk, sum(lq) AS q FROM li GROUP BY lk) t ON t.lk = o.ok GROUP BY o.oc'),
	-- range partitions with empty and missing ranges
	('SELECT rng_o.k, t.n FROM rng_o JOIN (SELECT k, count(*) AS n FROM rng_l GROUP BY k) t ON t.k = rng_o.k'),
	-- pruned classes
	('SELECT o.ok, t.n FROM o JOIN (SELECT lk, count(*) AS n FROM li GROUP BY lk) t ON t.lk = o.ok WHERE o.ok IN (3, 14, 40)'),
	-- conditions of the query on its rows alone (PostgreSQL moves them
	-- into its own copy of the subquery): the task filters its rows with them
	('SELECT o.ok, t.n FROM o JOIN (SELECT lk, count(*) AS n FROM li GROUP BY lk) t ON t.lk = o.ok WHERE t.n > 5'),
	('SELECT o.ok, t.n, t.q FROM o JOIN (SELECT lk, count(*) AS n, sum(lq) AS q FROM li GROUP BY lk) t ON t.lk = o.ok AND t.q BETWEEN 5 AND 20 WHERE t.n <> 3 AND o.oc < 4'),
	-- one in the ON clause of a left join it is kept by decides matches,
	-- not rows: not a filter of the subquery
	('SELECT o.ok, t.n, s."Qty" FROM o JOIN (SELECT lk, count(*) AS n FROM li GROUP BY lk) t ON t.lk = o.ok LEFT JOIN "Ship Log" s ON s."OrdKey" = o.ok AND t.n > 2'),
	-- in EXISTS (a semi join PostgreSQL may make inner, the subquery being
	-- unique on its key), NOT EXISTS, and a left join's ON clause, a
	-- condition on the subquery alone filters its rows
	('SELECT count(*) FROM o WHERE EXISTS (SELECT FROM (SELECT lk, count(*) AS n FROM li GROUP BY lk) e WHERE e.lk = o.ok AND e.n > 6)'),
	('SELECT count(*) FROM o WHERE NOT EXISTS (SELECT FROM (SELECT lk, count(*) AS n FROM li GROUP BY lk) e WHERE e.lk = o.ok AND e.n > 6)'),
	('WITH t AS (SELECT lk, count(*) AS n FROM li GROUP BY lk) SELECT o.ok, t.n FROM o LEFT JOIN t ON t.lk = o.ok AND t.n > 6')
) v(q);

--
-- Subqueries grouped by a column that is not their table's key (or
-- computing each row from one row), joined on the key of a table of the
-- group: their table is repartitioned by that column to the group's
-- classes, so every group of it is whole in the one task whose rows it can
-- meet, and the task runs the subquery over those rows.
--
SELECT q, (cj_lat.check(q, 'repartitioned by hash of')).* FROM (VALUES
	('SELECT o.ok, t.n FROM o JOIN (SELECT lq, count(*) AS n FROM li GROUP BY lq) t ON t.lq = o.ok'),
	-- a condition on its table (it filters the rows before they move), HAVING, as IN
	('SELECT o.ok, o.od FROM o WHERE o.ok IN (SELECT lq FROM li WHERE ls > date ''2024-02-01'' GROUP BY lq HAVING count(*) > 3)'),
	-- NOT EXISTS and EXISTS
	('SELECT count(*) FROM o WHERE NOT EXISTS (SELECT FROM (SELECT lq, max(ls) AS last FROM li GROUP BY lq) d WHERE d.lq = o.ok AND d.last > o.od)'),
	('SELECT o.ok FROM o WHERE EXISTS (SELECT FROM (SELECT lq, count(*) AS n FROM li GROUP BY lq) d WHERE d.lq = o.ok AND d.n > 50)'),
	-- a CTE of a quoted table, left joined
	('WITH t AS (SELECT "Qty", count(*) AS n, min("When") AS w FROM "Ship Log" GROUP BY "Qty") SELECT o.ok, t.n, t.w FROM o LEFT JOIN t ON t."Qty" = o.ok'),
	-- DISTINCT
	('SELECT o.ok, d.ls FROM o JOIN (SELECT DISTINCT lq, ls FROM li) d ON d.lq = o.ok'),
	-- the same table joined again outside on its key, all aggregated
	('SELECT o.oc, count(*), sum(li.lq) FROM o JOIN li ON li.lk = o.ok JOIN (SELECT lq, avg(ls - date ''2024-01-01'') AS a, count(*) AS n FROM li GROUP BY lq) t ON t.lq = o.ok WHERE li.lq <= t.n GROUP BY o.oc'),
	-- a reference table inside
	('SELECT o.ok, t.n FROM o JOIN (SELECT lq, count(*) AS n FROM li, rates WHERE rates.rd = li.ls GROUP BY lq) t ON t.lq = o.ok')
) v(q);

-- A WITH query read twice, which PostgreSQL materializes and computes
-- once: grouped by the key, the tasks compute it again for the join, and
-- PostgreSQL's scan of it serves the rest.
CREATE FUNCTION cj_lat.plan_of(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	plan text := '';
	line text;
BEGIN
	PERFORM set_config('search_path', 'cj_lat_s, public', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		plan := plan || line || E'\n';
	END LOOP;
	PERFORM set_config('search_path', 'public', true);
	RETURN plan;
END
$$;
SELECT q, c.same, c.nrows,
	   p LIKE '%with WITH query%' AND
	   p !~ '(Nested Loop|Hash Join|Merge Join|Hash Semi|Hash Anti|Subquery Scan|Foreign Scan)' AS in_tasks
FROM (VALUES
	('WITH t AS (SELECT lk, count(*) AS n FROM li GROUP BY lk) SELECT o.ok, t.n FROM o JOIN t ON t.lk = o.ok WHERE t.n >= (SELECT avg(n) FROM t)'),
	('WITH t AS (SELECT lk, count(*) AS n FROM li GROUP BY lk) SELECT count(*) FROM o WHERE o.ok IN (SELECT lk FROM t WHERE n > 2) AND o.oc < (SELECT count(*) FROM t)')
) v(q), LATERAL cj_lat.check(q, 'with WITH query') c, LATERAL cj_lat.plan_of(q) p;

-- A subquery the join keeps only the rows of that meet a table with
-- conditions of its own, joined on a column it groups by (or keeps row for
-- row): the task first narrows its rows to the keys that table's rows
-- passing their conditions hold (EXISTS over the table, 'narrowed by a
-- semi-join'), so that it groups no rows the join throws away.  A group is
-- kept whole or dropped, so its aggregates are PostgreSQL's.
SELECT q, c.same, c.nrows, c.in_tasks, p LIKE '%narrowed by a semi-join with%' AS narrowed
FROM (VALUES
	('SELECT o.ok, t.n, t.q FROM o JOIN (SELECT lk, count(*) AS n, sum(lq) AS q FROM li GROUP BY lk) t ON t.lk = o.ok WHERE o.od < date ''2024-02-01'''),
	-- a WITH query with its own condition and HAVING, aggregated above the join
	('WITH t AS (SELECT lk, count(*) AS n FROM li WHERE lq > 1 GROUP BY lk HAVING count(*) > 1) SELECT o.oc, count(*), sum(t.n) FROM o JOIN t ON t.lk = o.ok WHERE o.oc IN (1, 2) GROUP BY o.oc'),
	-- the subquery the nullable side of a left join; a condition on its rows
	('SELECT o.ok, t.n FROM o LEFT JOIN (SELECT lk, count(*) AS n FROM li GROUP BY lk) t ON t.lk = o.ok WHERE o.oc = 3'),
	('SELECT o.ok, t.n FROM o JOIN (SELECT lk, count(*) AS n, max(ls) AS last FROM li GROUP BY lk) t ON t.lk = o.ok WHERE o.od > date ''2024-03-01'' AND t.last > o.od'),
	-- IN over a grouped subquery, and EXISTS over DISTINCT rows of two columns
	('SELECT o.ok FROM o WHERE o.oc < 2 AND o.ok IN (SELECT lk FROM li GROUP BY lk HAVING sum(lq) > 8)'),
	('SELECT o.ok, d.lq FROM o JOIN (SELECT DISTINCT lk, lq FROM li) d ON d.lk = o.ok WHERE o.od > date ''2024-03-01'''),
	-- the quoted table narrows, written after the subquery
	('SELECT s."OrdKey", t.n FROM (SELECT lk, count(*) AS n FROM li GROUP BY lk) t JOIN "Ship Log" s ON t.lk = s."OrdKey" WHERE s."Qty" = 2'),
	-- range partitions, one empty, one missing
	('SELECT rng_o.k, t.n FROM rng_o JOIN (SELECT k, count(*) AS n FROM rng_l GROUP BY k) t ON t.k = rng_o.k WHERE rng_o.v < 40'),
	-- not narrowed: an anti join needs the rows it does not meet; no
	-- condition on o, or one that keeps nearly all its rows
	('SELECT count(*) FROM o WHERE o.oc < 2 AND NOT EXISTS (SELECT FROM (SELECT lk, count(*) AS n FROM li GROUP BY lk) e WHERE e.lk = o.ok AND e.n > 6)'),
	('SELECT o.ok, t.n FROM o JOIN (SELECT lk, count(*) AS n FROM li GROUP BY lk) t ON t.lk = o.ok'),
	('SELECT o.ok, t.n FROM o JOIN (SELECT lk, count(*) AS n FROM li GROUP BY lk) t ON t.lk = o.ok WHERE o.oc <> 1')
) v(q), LATERAL cj_lat.check(q, 'with subquery') c, LATERAL cj_lat.plan_of(q) p;
-- the task's SQL: EXISTS over o's partition of the class with o's
-- condition, a parameter of a generic plan written once
SET plan_cache_mode = force_generic_plan;
PREPARE cj_lat_narrow(date) AS SELECT o.ok, t.n FROM o JOIN (SELECT lk, count(*) AS n FROM li GROUP BY lk) t ON t.lk = o.ok WHERE o.od < $1 ORDER BY 1;
SELECT regexp_replace(l, '_p?[0-9]+', '_N', 'g') FROM cj_lat.explain_lines('EXECUTE cj_lat_narrow(date ''2024-02-01'')') l
WHERE l ~ '(Strategy|Remote SQL)' LIMIT 2;
EXECUTE cj_lat_narrow(date '2024-02-01');
SELECT o.ok, t.n FROM cj_lat_l.o JOIN (SELECT lk, count(*) AS n FROM cj_lat_l.li GROUP BY lk) t ON t.lk = o.ok WHERE o.od < date '2024-02-01' ORDER BY 1;
DEALLOCATE cj_lat_narrow;
RESET plan_cache_mode;

-- one aggregate of all rows, limited over all partitions, preserved by an
-- outer join, a WITH query MATERIALIZED on purpose or read twice and
-- grouped by a non-key: PostgreSQL's plan, still right, and the decision
-- log says why
SELECT q, (cj_lat.check(q, 'with subquery')).same FROM (VALUES
	('WITH t AS MATERIALIZED (SELECT lk, count(*) AS n FROM li GROUP BY lk) SELECT o.ok, t.n FROM o JOIN t ON t.lk = o.ok'),
	-- read twice and grouped by a non-key (bench W21's shape): its rows are
	-- at hand, not computed again with its table moved
	('WITH t AS (SELECT lq, sum(lk) AS total FROM li WHERE ls < date ''2024-04-01'' GROUP BY lq) SELECT o.ok, t.total FROM o JOIN t ON t.lq = o.ok WHERE t.total >= 0.5 * (SELECT max(total) FROM t) ORDER BY t.total DESC, o.ok'),
	('SELECT o.ok, t.n FROM o JOIN (SELECT count(*) AS n FROM li) t ON t.n = o.ok'),
	('SELECT o.ok FROM o WHERE o.ok IN (SELECT lk FROM li ORDER BY ls LIMIT 5)'),
	('SELECT t.lk, o.ok FROM (SELECT lk, count(*) AS n FROM li GROUP BY lk) t LEFT JOIN o ON o.ok = t.lk'),
	-- a condition PostgreSQL derived (t.lk = 14 from o.ok = 14) is nowhere to read
	('SELECT o.ok, t.n FROM o JOIN (SELECT lk, count(*) AS n FROM li GROUP BY lk) t ON t.lk = o.ok WHERE o.ok = 14'),
	-- a condition above the left join that makes it nullable reads
	-- NULL-extended rows: not a filter of the subquery
	('WITH t AS (SELECT lk, count(*) AS n FROM li GROUP BY lk) SELECT o.ok, t.n FROM o LEFT JOIN t ON t.lk = o.ok WHERE t.n IS NULL OR t.n > 6')
) v(q);
SET colojoin.log_decisions = on;
SELECT count(*) FROM o JOIN (SELECT count(*) AS n FROM li) t ON t.n = o.ok;
SELECT count(*) FROM o WHERE o.ok IN (SELECT lk FROM li ORDER BY ls LIMIT 5);
RESET colojoin.log_decisions;
-- one scan, the subquery in each task's SQL
SELECT regexp_replace(l, '_p?[0-9]+', '_N', 'g') FROM cj_lat.explain_lines('SELECT o.ok FROM o WHERE o.ok IN (SELECT lk FROM li GROUP BY lk HAVING sum(lq) > 8)') l
WHERE l ~ '(Custom Scan|Strategy|Remote SQL)' LIMIT 3;
-- and with its table repartitioned first
SELECT regexp_replace(l, '_p?[0-9]+', '_N', 'g') FROM cj_lat.explain_lines('SELECT o.ok, t.n FROM o JOIN (SELECT lq, count(*) AS n FROM li WHERE lq > 2 GROUP BY lq) t ON t.lq = o.ok') l
WHERE l ~ '(Custom Scan|Strategy|Moves)';

-- the subquery's tables are permission-checked like any other
CREATE ROLE cj_lat_reader;
GRANT USAGE ON SCHEMA cj_lat_s TO cj_lat_reader;
GRANT SELECT ON cj_lat_s.o TO cj_lat_reader;
SET ROLE cj_lat_reader;
SELECT o.ok, x.ls FROM o CROSS JOIN LATERAL (SELECT ls FROM li WHERE li.lk = o.ok ORDER BY ls DESC LIMIT 1) x;
SELECT o.ok FROM o WHERE o.ok IN (SELECT lk FROM li GROUP BY lk HAVING sum(lq) > 8);
RESET ROLE;
RESET search_path;

-- clean up
DROP OWNED BY cj_lat_reader;
DROP ROLE cj_lat_reader;
\i sql/include/mixed_tables_end.sql
\i sql/include/three_nodes_end.sql
