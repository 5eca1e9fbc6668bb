--
-- cross_joins: joins of sharded tables without an equality of partition
-- keys (CROSS JOIN, comma joins, ON true, <, <>, BETWEEN) run as one
-- ColocatedJoin scan by broadcasting the smaller side, when it is small
-- (colojoin.broadcast_threshold) and the join does not preserve it; else
-- PostgreSQL plans them; a join of small tables on the inner side of an
-- outer, semi or anti join is broadcast table by table.  A full join moves
-- neither side.  Every query is
-- compared with the same one over plain local tables holding the same rows
-- (NULLs in every joined column, tables with empty partitions, an empty
-- table, quoted mixed-case names).
--
\set prefix cj_cross
\i sql/include/three_nodes_begin.sql
SET colojoin.remote_size_lifetime = 0;

CREATE SCHEMA cj_cross_s;
CREATE SCHEMA cj_cross_l;
SET search_path = cj_cross_s, public;

-- "Fact" and f2 colocated (hash 6 over the three nodes), other not (hash
-- 4, other placement), tiny (2 rows: most partitions empty), nothing (no
-- row at all)
CREATE TABLE "Fact" ("Key" int, x int, "odd Col" text) PARTITION BY HASH ("Key");
SELECT colojoin.create_shards('"Fact"', ARRAY[:'srv1', :'srv2', :'srv3'], 6);
CREATE TABLE f2 (k int, y int, lo int, hi int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('f2', NULL, colocate_with => '"Fact"');
CREATE TABLE other (k int, y int, lo int, hi int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('other', ARRAY[:'srv3', :'srv1', :'srv2'], 4);
CREATE TABLE tiny (k int, y int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('tiny', ARRAY[:'srv2', :'srv3'], 6);
CREATE TABLE nothing (k int, y int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('nothing', ARRAY[:'srv1', :'srv2', :'srv3'], 3);

CREATE TABLE cj_cross_l."Fact" ("Key" int, x int, "odd Col" text);
CREATE TABLE cj_cross_l.f2 (k int, y int, lo int, hi int);
CREATE TABLE cj_cross_l.other (k int, y int, lo int, hi int);
CREATE TABLE cj_cross_l.tiny (k int, y int);
CREATE TABLE cj_cross_l.nothing (k int, y int);
INSERT INTO cj_cross_l."Fact"
SELECT CASE WHEN g % 41 = 0 THEN NULL ELSE g END, CASE WHEN g % 11 = 0 THEN NULL ELSE g % 50 END,
	   CASE WHEN g % 13 = 0 THEN NULL ELSE E'row\t' || g END
FROM generate_series(1, 300) g;
INSERT INTO cj_cross_l.f2
SELECT CASE WHEN g % 17 = 0 THEN NULL ELSE g END, CASE WHEN g % 7 = 0 THEN NULL ELSE g % 40 END,
	   g % 30, CASE WHEN g % 9 = 0 THEN NULL ELSE g % 30 + 3 END
FROM generate_series(1, 40) g;
INSERT INTO cj_cross_l.other SELECT k + 1000, y, lo, hi FROM cj_cross_l.f2;
INSERT INTO cj_cross_l.tiny VALUES (7, 20), (8, NULL);
INSERT INTO "Fact" SELECT * FROM cj_cross_l."Fact";
INSERT INTO f2 SELECT * FROM cj_cross_l.f2;
INSERT INTO other SELECT * FROM cj_cross_l.other;
INSERT INTO tiny SELECT * FROM cj_cross_l.tiny;
ANALYZE "Fact", f2, other, tiny, nothing;
ANALYZE cj_cross_l."Fact", cj_cross_l.f2, cj_cross_l.other, cj_cross_l.tiny, cj_cross_l.nothing;

-- tiny really has empty partitions, nothing has no row
SELECT count(*) FILTER (WHERE n = 0) > 0 AS tiny_has_empty_partitions
FROM (SELECT (SELECT count(*) FROM tiny_p0) AS n UNION ALL SELECT (SELECT count(*) FROM tiny_p1)
	  UNION ALL SELECT (SELECT count(*) FROM tiny_p2) UNION ALL SELECT (SELECT count(*) FROM tiny_p3)) s;

-- check(query) in these schemas (sql/include/plan_check.sql)
\i sql/include/plan_check.sql
CREATE FUNCTION cj_cross_l.check(query text, OUT same boolean, OUT nrows int, OUT plan text)
LANGUAGE sql AS $$ SELECT * FROM public.plan_check(query, 'cj_cross_s', 'cj_cross_l') $$;

-- the smaller side is broadcast to the other's nodes, colocated or not
SELECT label, (cj_cross_l.check(q)).* FROM (VALUES
	('cross join, colocated', 'SELECT "Fact"."Key", f2.k FROM "Fact" CROSS JOIN f2'),
	('cross join, not colocated', 'SELECT "Fact"."Key", other.k, other.y FROM "Fact" CROSS JOIN other'),
	('comma join', 'SELECT "Fact"."odd Col", other.hi FROM "Fact", other WHERE "Fact".x > 40'),
	('on true', 'SELECT "Fact"."Key", f2.k FROM "Fact" JOIN f2 ON true'),
	('less than', 'SELECT "Fact"."Key", f2.k FROM "Fact" JOIN f2 ON "Fact".x < f2.y'),
	('not equal, keys', 'SELECT "Fact"."Key", f2.k FROM "Fact" JOIN f2 ON "Fact"."Key" <> f2.k WHERE "Fact"."Key" < 30'),
	('key less than key', 'SELECT "Fact"."Key", other.k FROM "Fact" JOIN other ON "Fact"."Key" + 1000 < other.k'),
	('between', 'SELECT "Fact"."Key", f2.k FROM "Fact" JOIN f2 ON "Fact".x BETWEEN f2.lo AND f2.hi'),
	('between, not colocated', 'SELECT "Fact"."Key", other.k FROM "Fact" JOIN other ON "Fact".x BETWEEN other.lo AND other.hi'),
	('or of equalities', 'SELECT "Fact"."Key", other.k FROM "Fact" JOIN other ON "Fact".x = other.y OR "Fact"."Key" = other.lo'),
	('left join', 'SELECT "Fact"."Key", f2.k FROM "Fact" LEFT JOIN f2 ON "Fact".x < f2.y'),
	('left join, not colocated', 'SELECT "Fact"."Key", other.k FROM "Fact" LEFT JOIN other ON "Fact".x BETWEEN other.lo AND other.hi'),
	('left join on true', 'SELECT "Fact"."Key", tiny.k FROM "Fact" LEFT JOIN tiny ON true'),
	('left join, condition on the kept side only', 'SELECT "Fact"."Key", f2.k FROM "Fact" LEFT JOIN f2 ON "Fact".x < 5 AND f2.y > 35'),
	('right join: the small side kept, the other moves', 'SELECT "Fact"."Key", f2.k FROM "Fact" RIGHT JOIN f2 ON "Fact".x < f2.y - 30'),
	('semi join', 'SELECT * FROM "Fact" WHERE EXISTS (SELECT FROM other WHERE other.y > "Fact".x)'),
	('anti join', 'SELECT * FROM "Fact" WHERE NOT EXISTS (SELECT FROM other WHERE other.y < "Fact".x)'),
	('anti join, small side outside', 'SELECT * FROM tiny WHERE NOT EXISTS (SELECT FROM "Fact" WHERE "Fact".x > tiny.y)'),
	('tiny side with empty partitions', 'SELECT "Fact"."Key", tiny.y FROM "Fact" JOIN tiny ON "Fact".x <= tiny.y'),
	('empty table', 'SELECT "Fact"."Key", nothing.k FROM "Fact" CROSS JOIN nothing'),
	('empty table, left join', 'SELECT "Fact"."Key", nothing.k FROM "Fact" LEFT JOIN nothing ON "Fact".x < nothing.y'),
	('self join', 'SELECT a."Key", b."Key" FROM "Fact" a JOIN "Fact" b ON a.x < b.x - 45'),
	('three tables', 'SELECT "Fact"."Key", f2.k, other.k FROM "Fact" CROSS JOIN f2 JOIN other ON other.y > f2.y + 35 WHERE "Fact"."Key" < 20'),
	('pruned classes', 'SELECT "Fact"."Key", other.k FROM "Fact" CROSS JOIN other WHERE "Fact"."Key" IN (3, 17) AND other.k = 1005'),
	('count of a cross join', 'SELECT count(*) FROM "Fact" CROSS JOIN other'),
	('grouped by the moved side', 'SELECT other.k, count(*), sum("Fact".x) FROM "Fact" JOIN other ON "Fact".x < other.y GROUP BY other.k'),
	('grouped by the anchor key', 'SELECT "Fact"."Key", count(other.k) FROM "Fact" LEFT JOIN other ON "Fact".x < other.y GROUP BY 1'),
	('distinct', 'SELECT DISTINCT f2.y FROM "Fact" JOIN f2 ON "Fact".x < f2.y'),
	('ordered and limited', 'SELECT "Fact"."Key", other.k FROM "Fact" CROSS JOIN other ORDER BY 1, 2 LIMIT 7'),
	-- the inner side a join itself: all its tables broadcast
	('left join of a pair', 'SELECT "Fact"."Key", f2.k, other.k FROM "Fact" LEFT JOIN (f2 JOIN other ON f2.y = other.y) ON "Fact".x < f2.lo + other.lo'),
	('semi join of a pair', 'SELECT * FROM "Fact" WHERE EXISTS (SELECT FROM f2 a JOIN f2 b ON a.k = b.k WHERE a.lo + b.hi > "Fact".x)'),
	('anti join of a pair', 'SELECT * FROM "Fact" WHERE NOT EXISTS (SELECT FROM f2 JOIN tiny ON f2.k = tiny.k WHERE f2.y BETWEEN "Fact".x AND tiny.y)'),
	-- declined: a condition PostgreSQL evaluates once above the join, a
	-- full join (neither side may move)
	('one-time condition', 'SELECT "Fact"."Key", f2.k FROM "Fact" JOIN f2 ON now() > ''2000-01-01'''),
	('full join on true', 'SELECT "Fact"."Key", f2.k FROM "Fact" FULL JOIN f2 ON true'),
	('full join on other columns', 'SELECT "Fact"."Key", other.k FROM "Fact" FULL JOIN other ON "Fact".x = other.y'),
	('left join keeping the small side: the other moves', 'SELECT tiny.k, "Fact"."Key" FROM tiny LEFT JOIN "Fact" ON "Fact".x < tiny.y')
) v(label, q);

-- both sides too large to broadcast: PostgreSQL joins them
SET colojoin.broadcast_threshold = 10;
SELECT label, (cj_cross_l.check(q)).* FROM (VALUES
	('cross join', 'SELECT "Fact"."Key", f2.k FROM "Fact" CROSS JOIN f2'),
	('less than', 'SELECT "Fact"."Key", other.k FROM "Fact" JOIN other ON "Fact".x < other.y'),
	('left join', 'SELECT "Fact"."Key", f2.k FROM "Fact" LEFT JOIN f2 ON "Fact".x BETWEEN f2.lo AND f2.hi'),
	('the tiny one still moves', 'SELECT "Fact"."Key", tiny.k FROM "Fact" LEFT JOIN tiny ON "Fact".x < tiny.y'),
	('a pair too large', 'SELECT "Fact"."Key", f2.k, other.k FROM "Fact" LEFT JOIN (f2 JOIN other ON f2.y = other.y) ON "Fact".x < f2.lo + other.lo'),
	('but not when kept', 'SELECT tiny.k, "Fact"."Key" FROM tiny LEFT JOIN "Fact" ON "Fact".x < tiny.y'),
	-- a hint asks for the broadcast anyway
	('hinted', '/*+ BroadcastJoin(other) */ SELECT "Fact"."Key", other.k FROM "Fact" JOIN other ON "Fact".x < other.y')
) v(label, q);
RESET colojoin.broadcast_threshold;

-- broadcast disabled: PostgreSQL joins
SET colojoin.enable_broadcast = off;
SELECT (cj_cross_l.check('SELECT "Fact"."Key", f2.k FROM "Fact" CROSS JOIN f2')).*;
RESET colojoin.enable_broadcast;

-- the whole join in one scan, as EXPLAIN shows it
SELECT plan_explain('SELECT "Fact"."Key", other.k FROM "Fact" JOIN other ON "Fact".x BETWEEN other.lo AND other.hi');

-- prepared statements, generic plans: a parameter on the side that stays
-- travels with the task; one on the side that would move cannot (COPY takes
-- none), so PostgreSQL joins
CREATE FUNCTION cj_cross_l.run_prepared(stmt text) RETURNS text[] LANGUAGE plpgsql AS $$
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
SET plan_cache_mode = force_generic_plan;
PREPARE kept_param(int) AS
	SELECT "Fact"."Key", other.k FROM "Fact" JOIN other ON "Fact".x < other.y WHERE "Fact".x > $1;
SELECT count(*) FILTER (WHERE p ~ 'ColocatedJoin') AS colojoin_scans, count(*) FILTER (WHERE p ~ 'Nested Loop') AS nested_loops
FROM unnest(cj_cross_l.run_prepared('EXPLAIN (COSTS OFF) EXECUTE kept_param(30)')) p;
SELECT cj_cross_l.run_prepared('EXECUTE kept_param(30)') =
	   rows_of('SELECT "Fact"."Key", other.k FROM "Fact" JOIN other ON "Fact".x < other.y WHERE "Fact".x > 30', 'cj_cross_l') AS generic_same,
	   cardinality(cj_cross_l.run_prepared('EXECUTE kept_param(30)')) AS nrows;
PREPARE both_params(int, int) AS
	SELECT "Fact"."Key", other.k FROM "Fact" JOIN other ON "Fact".x < other.y
	WHERE "Fact".x > $1 AND other.y < $2;
SELECT count(*) FILTER (WHERE p ~ 'ColocatedJoin') AS colojoin_scans, count(*) FILTER (WHERE p ~ 'Nested Loop') AS nested_loops
FROM unnest(cj_cross_l.run_prepared('EXPLAIN (COSTS OFF) EXECUTE both_params(30, 38)')) p;
SELECT cj_cross_l.run_prepared('EXECUTE both_params(30, 38)') =
	   rows_of('SELECT "Fact"."Key", other.k FROM "Fact" JOIN other ON "Fact".x < other.y WHERE "Fact".x > 30 AND other.y < 38', 'cj_cross_l') AS generic_same,
	   cardinality(cj_cross_l.run_prepared('EXECUTE both_params(30, 38)')) AS nrows;
RESET plan_cache_mode;
DEALLOCATE kept_param;
DEALLOCATE both_params;

\i sql/include/no_moves_left.sql

-- clean up
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA cj_cross_s CASCADE;
DROP SCHEMA cj_cross_l CASCADE;
DROP FUNCTION public.plan_check(text, text, text), public.plan_explain(text);
\i sql/include/three_nodes_end.sql
