--
-- pre_aggregate: aggregation before a move.  A query that aggregates,
-- over inner joins, only columns of the table a join moves has that
-- table's nodes group its rows by the columns the rest of the query reads
-- and send partial aggregates instead of rows, when the nodes' statistics
-- say grouping shrinks them.  Every answer is compared with the same query
-- on plain local tables, with colojoin.enable_pre_aggregation on and off;
-- EXPLAIN says when the moved rows are grouped first.
--
\set prefix cj_pa
\i sql/include/three_nodes_begin.sql

CREATE SCHEMA cj_pa;
CREATE SCHEMA cj_pa_local;
SET search_path = cj_pa, public;

-- visits: hash 6 on vid, 300 pages (NULL every 97th row); pages: hash 6 on
-- page, 3,000 of them.  A join on page moves visits (grouped by page, 300
-- groups a leaf) or broadcasts pages.  hits: hash 3 on n, few pages.
CREATE TABLE visits (vid int, page int, dur int, amt numeric, f float8,
	ok bool, bits int, "Odd ""Col""" int) PARTITION BY HASH (vid);
SELECT colojoin.create_shards('visits', '{cj_pa_n1,cj_pa_n2,cj_pa_n3}', 6);
CREATE TABLE pages (page int, cat text, w int) PARTITION BY HASH (page);
SELECT colojoin.create_shards('pages', '{cj_pa_n1,cj_pa_n2,cj_pa_n3}', 6);
CREATE TABLE hits (n int, page int, cnt int) PARTITION BY HASH (n);
SELECT colojoin.create_shards('hits', '{cj_pa_n1,cj_pa_n2,cj_pa_n3}', 3);
-- fresh: like hits, on nodes that never analyze it
CREATE TABLE fresh (n int, page int, cnt int) PARTITION BY HASH (n);
SELECT colojoin.create_shards('fresh', '{cj_pa_n1,cj_pa_n2,cj_pa_n3}', 3);
CREATE TABLE cj_pa_local.visits (LIKE cj_pa.visits);
CREATE TABLE cj_pa_local.pages (LIKE cj_pa.pages);
CREATE TABLE cj_pa_local.hits (LIKE cj_pa.hits);
CREATE TABLE cj_pa_local.fresh (LIKE cj_pa.fresh);
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
	$$DO $do$ DECLARE r record; BEGIN
	  FOR r IN SELECT c.oid::regclass AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	           WHERE n.nspname = 'cj_pa' AND c.relname LIKE 'fresh%' AND c.relkind = 'r' LOOP
	    EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = false)', r.t);
	  END LOOP; END $do$ $$)
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;

INSERT INTO cj_pa_local.visits
SELECT g, CASE WHEN g % 97 = 0 THEN NULL ELSE g % 300 END, g % 37,
	   CASE WHEN g % 11 = 0 THEN NULL ELSE (g % 1000) / 8.0 END, g / 4.0,
	   g % 5 <> 0, g % 16, g % 7
FROM generate_series(1, 30000) g;
INSERT INTO cj_pa_local.pages
SELECT g, 'cat ' || (g % 7), CASE WHEN g % 13 = 0 THEN NULL ELSE g % 5 END
FROM generate_series(1, 3000) g;
INSERT INTO cj_pa_local.hits SELECT g, g % 40, g % 9 FROM generate_series(1, 6000) g;
INSERT INTO cj_pa_local.fresh SELECT * FROM cj_pa_local.hits;
INSERT INTO visits SELECT * FROM cj_pa_local.visits;
INSERT INTO pages SELECT * FROM cj_pa_local.pages;
INSERT INTO hits SELECT * FROM cj_pa_local.hits;
INSERT INTO fresh SELECT * FROM cj_pa_local.fresh;
ANALYZE cj_pa_local.visits, cj_pa_local.pages, cj_pa_local.hits, cj_pa_local.fresh;
-- the nodes analyze their tables (as autovacuum would), fresh excepted
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
	$$DO $do$ DECLARE r record; BEGIN
	  FOR r IN SELECT c.oid::regclass AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	           WHERE n.nspname = 'cj_pa' AND c.relname NOT LIKE 'fresh%' AND c.relkind = 'r' LOOP
	    EXECUTE format('ANALYZE %s', r.t);
	  END LOOP; END $do$ $$)
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
-- a new session: no sizes cached from before the nodes' statistics
\c
SET search_path = cj_pa, public;

\i sql/include/plan_lines.sql
-- how the plan moves rows: 'grouped first' when it aggregates before a move
CREATE FUNCTION plan_moves(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN SELECT * FROM plan_lines(query) LOOP
		IF line ~ 'Strategy: ' THEN
			RETURN CASE WHEN line ~ 'on its nodes first' THEN 'grouped first'
						WHEN line ~ 'broadcast' THEN 'broadcast'
						WHEN line ~ 'repartitioned' THEN 'repartitioned'
						ELSE 'no move' END;
		END IF;
	END LOOP;
	RETURN 'not on the nodes';
END
$$;
-- the query's rows against the local tables' (NULL: the same)
CREATE FUNCTION differs(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	l text[] := rows_of(regexp_replace(query, '^/\*\+[^*]*\*/', ''), 'cj_pa_local');
	s text[] := rows_of(query, 'cj_pa');
BEGIN
	RETURN CASE WHEN s = l THEN NULL
		   ELSE format('DIFFERENT: %s rows, %s local', cardinality(s), cardinality(l)) END;
END
$$;
-- the plan, and the rows with pre-aggregation on and off
CREATE FUNCTION pre_check(query text, OUT plan text, OUT plan_off text, OUT result text)
LANGUAGE plpgsql AS $$
BEGIN
	plan := plan_moves(query);
	result := COALESCE(differs(query), 'same');
	PERFORM set_config('colojoin.enable_pre_aggregation', 'off', true);
	plan_off := plan_moves(query);
	result := result || ', ' || COALESCE(differs(query) || ' when off', 'same when off');
	PERFORM set_config('colojoin.enable_pre_aggregation', 'on', true);
END
$$;

-- What the nodes compute and what the tasks combine
EXPLAIN (VERBOSE, COSTS OFF)
SELECT p.cat, count(*), sum(v.dur), avg(v.amt) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.cat;

-- grouped first: every aggregate colojoin splits, over the moved table
SELECT name, (pre_check(q)).* FROM (VALUES
	('01 count, sum, avg by an in-place column',
	 'SELECT p.cat, count(*), count(v.amt), sum(v.dur), sum(v.amt), avg(v.amt), avg(v.dur) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.cat'),
	('02 min, max, bool and bit aggregates',
	 'SELECT p.w, min(v.dur), max(v.amt), min(v.f), bool_and(v.ok), bool_or(v.ok), every(v.ok), bit_and(v.bits), bit_or(v.bits), bit_xor(v.bits) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.w'),
	('03 variances',
	 'SELECT p.cat, variance(v.dur), stddev(v.amt), var_pop(v.dur), stddev_pop(v.amt) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.cat'),
	('04 float sums, rounded after',
	 'SELECT p.cat, round(sum(v.f)::numeric, 3), round(avg(v.f)::numeric, 6) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.cat'),
	('05 no GROUP BY',
	 'SELECT count(*), sum(v.dur), avg(v.amt), max(v.vid) FROM visits v JOIN pages p ON v.page = p.page'),
	('06 no row joins',
	 'SELECT count(*), sum(v.dur), min(v.amt) FROM visits v JOIN pages p ON v.page = p.page WHERE p.w = 99'),
	('07 no row joins, grouped',
	 'SELECT p.cat, count(*) FROM visits v JOIN pages p ON v.page = p.page WHERE p.w = 99 GROUP BY p.cat'),
	('08 conditions on both tables',
	 'SELECT p.cat, count(*), sum(v.amt) FROM visits v JOIN pages p ON v.page = p.page WHERE v.dur < 30 AND v.amt > 10 AND p.cat <> ''cat 3'' GROUP BY p.cat'),
	('09 FILTER',
	 'SELECT p.cat, count(*) FILTER (WHERE v.dur > 30), sum(v.amt) FILTER (WHERE v.ok), avg(v.dur) FILTER (WHERE v.f > 1000) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.cat'),
	('10 HAVING and ORDER BY an aggregate',
	 'SELECT p.cat, count(*) AS n FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.cat HAVING sum(v.dur) > 1000 AND avg(v.amt) < 70 ORDER BY n DESC, p.cat LIMIT 4'),
	('11 grouped by a moved column too',
	 'SELECT p.w, v.ok, count(*), sum(v.amt) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.w, v.ok'),
	('12 an expression of a moved column',
	 'SELECT NOT v.ok AS m, count(*), max(v.amt) FROM visits v JOIN pages p ON v.page = p.page GROUP BY NOT v.ok'),
	('13 grouped by the join key',
	 'SELECT p.page, count(*), sum(v.dur) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.page'),
	('14 an odd identifier',
	 'SELECT p.cat, sum(v."Odd ""Col"""), count(v."Odd ""Col""") FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.cat'),
	('15 a join condition beyond the keys',
	 'SELECT p.cat, count(*) FROM visits v JOIN pages p ON v.page = p.page AND v.ok = (p.w > 2) GROUP BY p.cat'),
	('16 a subquery in FROM',
	 'SELECT s.cat, s.n * 2 FROM (SELECT p.cat, count(*) AS n FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.cat) s'),
	('17 a window over the groups',
	 'SELECT p.cat, count(*), rank() OVER (ORDER BY count(*) DESC, p.cat) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.cat'),
	('18 a table that groups well, many rows a page',
	 'SELECT p.cat, count(*), sum(h.cnt) FROM hits h JOIN pages p ON h.page = p.page GROUP BY p.cat'),
	('19 broadcast, grouped first',
	 '/*+ BroadcastJoin(h) */ SELECT p.cat, count(*), sum(h.cnt), max(h.n) FROM hits h JOIN pages p ON h.page = p.page GROUP BY p.cat')
) v(name, q) ORDER BY name;

-- not grouped first: what the tasks could not combine, or nothing to weigh it by
SELECT name, (pre_check(q)).* FROM (VALUES
	('20 an aggregate of the in-place table',
	 'SELECT p.cat, count(*), sum(p.w) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.cat'),
	('21 DISTINCT aggregate',
	 'SELECT p.cat, count(DISTINCT v.dur) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.cat'),
	('22 LEFT JOIN',
	 'SELECT p.cat, count(v.vid), sum(v.dur) FROM pages p LEFT JOIN visits v ON v.page = p.page GROUP BY p.cat'),
	('23 min of text',
	 'SELECT p.w, min(v.page::text), count(*) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.w'),
	('24 an aggregate mixing both tables',
	 'SELECT p.cat, sum(v.dur * p.w) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.cat'),
	('25 string_agg',
	 'SELECT p.cat, length(string_agg(v.dur::text, '','' ORDER BY v.dur)) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.cat'),
	('26 nodes without statistics',
	 'SELECT p.cat, count(*), sum(x.cnt) FROM fresh x JOIN pages p ON x.page = p.page GROUP BY p.cat'),
	('27 grouped by a column of many values: no rows saved',
	 'SELECT p.w, v.dur, count(*) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.w, v.dur'),
	('28 no aggregate at all',
	 'SELECT p.cat, v.dur FROM visits v JOIN pages p ON v.page = p.page WHERE v.vid < 50')
) v(name, q) ORDER BY name;

-- PreAggregate(alias): grouped first where the cost would not, or the
-- statistics are missing; an ERROR that says why where it cannot be
SELECT name, (pre_check(q)).* FROM (VALUES
	('30 hinted, nodes without statistics',
	 '/*+ PreAggregate(x) */ SELECT p.cat, count(*), sum(x.cnt) FROM fresh x JOIN pages p ON x.page = p.page GROUP BY p.cat'),
	('31 hinted, grouping saves nothing',
	 '/*+ PreAggregate(v) */ SELECT p.w, v.dur, count(*), avg(v.amt) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.w, v.dur'),
	('32 hinted, the other side moves grouped',
	 '/*+ PreAggregate(p) */ SELECT v.bits, count(*), sum(p.w), max(p.page) FROM visits v JOIN pages p ON v.page = p.page GROUP BY v.bits')
) v(name, q) ORDER BY name;
SELECT l AS hinted_plan
FROM plan_lines('/*+ PreAggregate(x) */ SELECT p.cat, count(*), sum(x.cnt) FROM fresh x JOIN pages p ON x.page = p.page GROUP BY p.cat') l
WHERE l ~ 'Strategy|Hints';
/*+ PreAggregate(v) */ SELECT p.cat, sum(p.w) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.cat;
/*+ PreAggregate(v) */ SELECT p.cat, v.dur FROM visits v JOIN pages p ON v.page = p.page LIMIT 1;
/*+ PreAggregate(v) */ SELECT p.cat, count(v.vid) FROM pages p LEFT JOIN visits v ON v.page = p.page GROUP BY p.cat;
/*+ PreAggregate(v) */ SELECT count(*) FROM visits v JOIN visits w ON v.vid = w.vid;

-- the groups travel, not the rows: one per page, leaf and class reached
SELECT m AS grouped_moved, n AS rows_there, m * 10 < n AS groups_not_rows
FROM rows_moved('SELECT p.cat, count(*) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.cat') m,
	 (SELECT count(*) AS n FROM visits WHERE page IS NOT NULL) c;
SET colojoin.enable_pre_aggregation = off;
SELECT plan_moves('SELECT p.cat, count(*) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.cat') AS off_plan;
RESET colojoin.enable_pre_aggregation;

-- prepared, with a parameter in the in-place table's condition
PREPARE q(int) AS SELECT p.cat, count(*), sum(v.amt) FROM visits v JOIN pages p ON v.page = p.page WHERE p.w = $1 GROUP BY p.cat ORDER BY p.cat;
EXECUTE q(1);
SELECT p.cat, count(*), sum(v.amt) FROM cj_pa_local.visits v JOIN cj_pa_local.pages p ON v.page = p.page WHERE p.w = 1 GROUP BY p.cat ORDER BY p.cat;
DEALLOCATE q;

-- in a transaction that wrote through colojoin
BEGIN;
INSERT INTO visits VALUES (100001, 5, 1000, 1000, 1, true, 1, 1);
INSERT INTO cj_pa_local.visits VALUES (100001, 5, 1000, 1000, 1, true, 1, 1);
SELECT differs('SELECT p.cat, count(*), sum(v.dur), max(v.amt) FROM visits v JOIN pages p ON v.page = p.page GROUP BY p.cat') AS after_write;
ROLLBACK;

-- A subquery grouping visits by page, joined to pages on pages' key: the
-- tasks compute it over visits repartitioned by page into pages' classes,
-- and visits' nodes group it first (partial groups per node; the task
-- combines them in the subquery's own GROUP BY).  Every aggregate that
-- splits, conditions applied before the move, HAVING, a second grouping
-- column, NULL pages (dropped: they join nothing).
SELECT name, plan_moves(q) AS plan, COALESCE(differs(q), 'same') AS result FROM (VALUES
	('21 counts, sums, avg, min, max, bool_and',
	 'SELECT p.cat, count(*), sum(s.n), sum(s.nd), sum(s.d), sum(s.a), min(s.lo), max(s.hi), sum(s.fa), bool_and(s.allok) FROM pages p JOIN (SELECT page, count(*) AS n, count(amt) AS nd, sum(dur) AS d, avg(amt) AS a, min(dur) AS lo, max(amt) AS hi, avg(dur) AS fa, bool_and(ok) AS allok FROM visits GROUP BY page) s ON s.page = p.page GROUP BY p.cat'),
	('22 conditions before the move, HAVING, FILTER',
	 'SELECT p.page, s.n, s.d, s.m FROM pages p JOIN (SELECT page, count(*) AS n, sum(amt) FILTER (WHERE ok) AS d, max(bits) AS m FROM visits WHERE dur < 30 AND amt > 10 GROUP BY page HAVING count(*) > 60) s ON s.page = p.page WHERE p.w <> 2'),
	('23 two grouping columns, an expression of them',
	 'SELECT p.cat, s.bits * 2 + 1, sum(s.n), max(s.d) FROM pages p JOIN (SELECT page, bits, count(*) AS n, avg(dur) AS d FROM visits GROUP BY page, bits) s ON s.page = p.page GROUP BY 1, 2'),
	('24 joined to the output of the grouping, by the key',
	 'SELECT p.page, p.cat, s.n FROM pages p JOIN (SELECT page, count(*) AS n FROM visits GROUP BY page) s ON s.page = p.page AND s.n > p.page % 7 + 95'),
	('25 an aggregate that does not split: rows move',
	 'SELECT p.cat, sum(s.n) FROM pages p JOIN (SELECT page, count(DISTINCT dur) AS n FROM visits GROUP BY page) s ON s.page = p.page GROUP BY p.cat'),
	('26 variance: combined by a function the nodes lack, not grouped',
	 'SELECT p.cat, sum(s.v) FROM pages p JOIN (SELECT page, variance(dur) AS v, stddev_pop(amt) AS sd FROM visits GROUP BY page) s ON s.page = p.page AND s.sd IS NOT NULL GROUP BY p.cat'),
	('27 a condition the nodes cannot run first: not grouped',
	 'SELECT p.cat, sum(s.n) FROM pages p JOIN (SELECT page, count(*) AS n FROM visits WHERE dur < 30 AND random() < 2 GROUP BY page) s ON s.page = p.page GROUP BY p.cat')
) v(name, q);
SET colojoin.enable_pre_aggregation = off;
SELECT plan_moves('SELECT p.cat, sum(s.n) FROM pages p JOIN (SELECT page, count(*) AS n FROM visits GROUP BY page) s ON s.page = p.page GROUP BY p.cat') AS subquery_off_plan;
RESET colojoin.enable_pre_aggregation;
-- the groups travel, not the rows
SELECT m * 10 < n AS subquery_groups_not_rows
FROM rows_moved('SELECT p.cat, sum(s.n) FROM pages p JOIN (SELECT page, count(*) AS n FROM visits GROUP BY page) s ON s.page = p.page GROUP BY p.cat') m,
	 (SELECT count(*) AS n FROM visits WHERE page IS NOT NULL) c;

--
-- Clean up, here and on the nodes.
--
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA cj_pa CASCADE;
DROP SCHEMA cj_pa_local CASCADE;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
				   'DROP SCHEMA IF EXISTS cj_pa CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
\set prefix cj_pa
\i sql/include/three_nodes_end.sql
