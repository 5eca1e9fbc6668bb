--
-- hints: the hint comments of issue 5 (DESIGN.md section 5).
--   ColocatedJoin(a b ...)   forces the colocated plan where it is correct,
--                            whatever the settings and the cost model say;
--   NoColocatedJoin, LocalJoin  prevent it;
--   joinOptions(is_colocated_by_join_keys='true')  trusts placement that
--                            colojoin cannot prove;
-- read from the leading comment, from one right after SELECT, next to
-- pg_hint_plan's hints (ignored silently), in prepared statements and
-- PL/pgSQL.  Malformed hints are WARNINGs and the query runs; a forcing hint
-- that cannot be honoured is an ERROR with a detail and a hint.  A hint
-- never changes an answer: every result is compared with the same query
-- over plain local tables (schema cj_hint_local).
--
\set prefix cj_hint
\i sql/include/three_nodes_begin.sql
-- the same three nodes again, under other names: colojoin cannot know
-- until it has connected to them (see below)
CREATE SERVER cj_hint_m1 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node1_port', dbname 'colojoin_regress');
CREATE SERVER cj_hint_m2 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node2_port', dbname 'colojoin_regress');
CREATE SERVER cj_hint_m3 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node3_port', dbname 'colojoin_regress');
CREATE USER MAPPING FOR CURRENT_USER SERVER cj_hint_m1;
CREATE USER MAPPING FOR CURRENT_USER SERVER cj_hint_m2;
CREATE USER MAPPING FOR CURRENT_USER SERVER cj_hint_m3;

CREATE SCHEMA cj_hint;
CREATE SCHEMA cj_hint_local;
SET search_path = cj_hint, public;

-- a, b, c: colocated (6 classes, class r on cj_hint_n(r % 3 + 1))
CREATE TABLE a (k bigint, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('a', '{cj_hint_n1,cj_hint_n2,cj_hint_n3}', 6);
CREATE TABLE b (k int, w int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('b', '{cj_hint_n1,cj_hint_n2,cj_hint_n3}', colocate_with => 'a');
CREATE TABLE c (k bigint, x int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('c', '{cj_hint_n1,cj_hint_n2,cj_hint_n3}', colocate_with => 'a');
-- m4: another modulus
CREATE TABLE m4 (k bigint, q int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('m4', '{cj_hint_n1,cj_hint_n2,cj_hint_n3}', 4);
-- e: class r on cj_hint_m(r % 3 + 1), the very node of a's class r
CREATE TABLE e (k bigint, z int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('e', '{cj_hint_m1,cj_hint_m2,cj_hint_m3}', 6);
-- loc: a plain table
CREATE TABLE loc (k bigint, name text);

CREATE TABLE cj_hint_local.a (LIKE a);
CREATE TABLE cj_hint_local.b (LIKE b);
CREATE TABLE cj_hint_local.c (LIKE c);
CREATE TABLE cj_hint_local.m4 (LIKE m4);
CREATE TABLE cj_hint_local.e (LIKE e);
CREATE TABLE cj_hint_local.loc (LIKE loc);
INSERT INTO cj_hint_local.a SELECT CASE WHEN g % 17 = 0 THEN NULL ELSE g END, g % 5 FROM generate_series(1, 40) g;
INSERT INTO cj_hint_local.b SELECT CASE WHEN g % 13 = 0 THEN NULL ELSE g % 30 END, g FROM generate_series(1, 90) g;
INSERT INTO cj_hint_local.c SELECT g * 2, g FROM generate_series(1, 25) g;
INSERT INTO cj_hint_local.m4 SELECT g, g * 3 FROM generate_series(1, 35) g;
INSERT INTO cj_hint_local.e SELECT g, g * 7 FROM generate_series(5, 45) g;
INSERT INTO cj_hint_local.loc SELECT g, 'name ' || g FROM generate_series(1, 10) g;
INSERT INTO a SELECT * FROM cj_hint_local.a;
INSERT INTO b SELECT * FROM cj_hint_local.b;
INSERT INTO c SELECT * FROM cj_hint_local.c;
INSERT INTO m4 SELECT * FROM cj_hint_local.m4;
INSERT INTO e SELECT * FROM cj_hint_local.e;
INSERT INTO loc SELECT * FROM cj_hint_local.loc;
ANALYZE a, b, c, m4, e, loc;
ANALYZE cj_hint_local.a, cj_hint_local.b, cj_hint_local.c, cj_hint_local.m4,
	cj_hint_local.e, cj_hint_local.loc;

--
-- same(query): the query's rows over the sharded tables and over the local
-- ones, compared as multisets; 'same' or what differs.  The query text,
-- hint comments included, is run by EXECUTE, so hints reach the planner
-- as written; over the local tables, the hint comments are made plain
-- comments (a forcing hint naming plain tables is an error).
--
CREATE FUNCTION same(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	s text[] := rows_of(query, 'cj_hint');
	l text[] := rows_of(replace(query, '/*+', '/* '), 'cj_hint_local');
BEGIN
	IF s = l THEN
		RETURN format('same (%s rows)', cardinality(s));
	END IF;
	RETURN format('DIFFERENT: %s rows, %s local', cardinality(s), cardinality(l));
END
$$;
-- plan(query): "colocated" when its plan has a ColocatedJoin scan whose
-- strategy is a colocated join (not data moved between nodes first), else
-- "not colocated", plus every "Hints:" line of the plan
CREATE FUNCTION plan(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
	found boolean := false;
	hints text := '';
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		found := found OR line ~ '^ *Strategy: ([^,]*, )?colocated on ';
		IF line ~ '^ *Hints: ' THEN
			hints := hints || '; ' || btrim(line);
		END IF;
	END LOOP;
	RETURN CASE WHEN found THEN 'colocated' ELSE 'not colocated' END || hints;
END
$$;
-- try(query): the error a query raises, field by field (or none)
CREATE FUNCTION try(query text, OUT state text, OUT message text,
					OUT detail text, OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE query;
	state := 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
		detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
END
$$;

\set q_ab 'SELECT a.k, a.v, b.w FROM a JOIN b ON a.k = b.k'

-- Without hints, the default settings pick the colocated plan.
SELECT plan(:'q_ab'), same(:'q_ab');

--
-- ColocatedJoin forces the colocated plan where the settings forbid it.
--
SET colojoin.enable_colocated_join = off;
EXPLAIN (COSTS OFF) SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
EXPLAIN (COSTS OFF) /*+ ColocatedJoin(a b) */ SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
-- the leading comment before EXPLAIN, and right after SELECT (Pinot style)
/*+ ColocatedJoin(a b) */ EXPLAIN (COSTS OFF) SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
EXPLAIN (COSTS OFF) SELECT /*+ ColocatedJoin(a b) */ a.k, b.w FROM a JOIN b ON a.k = b.k;
SELECT plan('/*+ ColocatedJoin(a b) */ ' || :'q_ab'), same('/*+ ColocatedJoin(a b) */ ' || :'q_ab');
SELECT plan(q), same(q) FROM (VALUES
	('SELECT /*+ ColocatedJoin(a b) */ a.k, b.w FROM a JOIN b ON a.k = b.k'),
	('/*+ ColocatedJoin(a b) */ SELECT a.k, b.w FROM a LEFT JOIN b ON a.k = b.k'),
	('/*+ ColocatedJoin(a b) */ SELECT a.k, b.w FROM a FULL JOIN b ON a.k = b.k'),
	('/*+ ColocatedJoin(a b) */ SELECT a.k FROM a WHERE EXISTS (SELECT FROM b WHERE b.k = a.k)'),
	('/*+ ColocatedJoin(a b) */ SELECT a.k FROM a WHERE NOT EXISTS (SELECT FROM b WHERE b.k = a.k)'),
	('/*+ ColocatedJoin(a b) */ WITH j AS (SELECT a.k, b.w FROM a JOIN b ON a.k = b.k) SELECT * FROM j'),
	('/*+ ColocatedJoin(a b) */ SELECT a.k, b.w FROM a JOIN b ON a.k = b.k WHERE a.k IN (3, 4, 5)')
) v(q);
-- colojoin.enable = off too: the hint still applies to its query only
SET colojoin.enable = off;
SELECT plan('/*+ ColocatedJoin(a b) */ ' || :'q_ab'), same('/*+ ColocatedJoin(a b) */ ' || :'q_ab');
SELECT plan(:'q_ab');
RESET colojoin.enable;
-- three tables: the hint names all of them, one scan joins all three
EXPLAIN (COSTS OFF) /*+ ColocatedJoin(a b c) */
SELECT a.k, b.w, c.x FROM a JOIN b ON a.k = b.k JOIN c ON c.k = a.k;
SELECT same('/*+ ColocatedJoin(a b c) */ SELECT a.k, b.w, c.x FROM a JOIN b ON a.k = b.k JOIN c ON c.k = a.k');
-- or only two of them: that pair runs colocated, the coordinator adds c
SELECT plan(q), same(q) FROM (VALUES
	('/*+ ColocatedJoin(a b) */ SELECT a.k, b.w, c.x FROM a JOIN b ON a.k = b.k JOIN c ON c.k = a.k')) v(q);
-- two joins in one statement, a hint for each
EXPLAIN (COSTS OFF) /*+ ColocatedJoin(a b) ColocatedJoin(a c) */
SELECT a.k FROM a JOIN b ON a.k = b.k UNION ALL SELECT a.k FROM a JOIN c ON a.k = c.k;
SELECT same('/*+ ColocatedJoin(a b) ColocatedJoin(a c) */ SELECT a.k FROM a JOIN b ON a.k = b.k UNION ALL SELECT a.k FROM a JOIN c ON a.k = c.k');
RESET colojoin.enable_colocated_join;

--
-- Relations are named by alias, or by table name.
--
SET colojoin.enable_colocated_join = off;
SELECT plan(q), same(q) FROM (VALUES
	('/*+ ColocatedJoin(x y) */ SELECT x.k, y.w FROM a x JOIN b y ON x.k = y.k'),
	('/*+ ColocatedJoin(a b) */ SELECT x.k, y.w FROM a x JOIN b y ON x.k = y.k'),
	('/*+ ColocatedJoin(x b) */ SELECT x.k, b.w FROM a x JOIN b ON x.k = b.k'),
	('/*+ ColocatedJoin("X" y) */ SELECT "X".k, y.w FROM a "X" JOIN b y ON "X".k = y.k'),
	-- a self-join: the aliases tell the two sides apart
	('/*+ ColocatedJoin(a1 a2) */ SELECT a1.k, a2.v FROM a a1 JOIN a a2 ON a1.k = a2.k')
) v(q);
-- an unquoted name is folded to lower case, as in SQL: no such alias
EXPLAIN (COSTS OFF) /*+ ColocatedJoin(X y) */ SELECT "X".k, y.w FROM a "X" JOIN b y ON "X".k = y.k;
RESET colojoin.enable_colocated_join;

--
-- NoColocatedJoin and LocalJoin keep PostgreSQL's plan.
--
EXPLAIN (COSTS OFF) /*+ NoColocatedJoin(a b) */ SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
EXPLAIN (COSTS OFF) /*+ LocalJoin(a b) */ SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
SELECT plan(q), same(q) FROM (VALUES
	('/*+ NoColocatedJoin(a b) */ ' || :'q_ab'),
	('/*+ LocalJoin(a b) */ ' || :'q_ab'),
	('SELECT /*+ NoColocatedJoin(b a) */ a.k, b.w FROM a LEFT JOIN b ON a.k = b.k'),
	('/*+ NoColocatedJoin(x y) */ SELECT x.k, y.w FROM a x JOIN b y ON x.k = y.k'),
	-- only the join of a and b is excluded: a and c still run colocated
	('/*+ NoColocatedJoin(a b) */ SELECT a.k, b.w, c.x FROM a JOIN b ON a.k = b.k JOIN c ON c.k = a.k')
) v(q);

--
-- pg_hint_plan's hints may stand beside colojoin's: ignored, no warning.
--
SET colojoin.enable_colocated_join = off;
EXPLAIN (COSTS OFF)
/*+ HashJoin(a b) SeqScan(a) Leading((a b)) Set(enable_hashjoin off) Rows(a b #10)
    IndexScan(b b_pkey) NestLoop(a b) ColocatedJoin(a b) MergeJoin(b a) */
SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
SELECT same('/*+ Leading(b a) ColocatedJoin(a b) NoSeqScan(a) */ ' || :'q_ab');
-- colojoin's hints in a comment of their own after SELECT, pg_hint_plan's
-- in the leading comment (the combination README.md shows)
SELECT plan(q), same(q) FROM (VALUES
	('/*+ SeqScan(a) HashJoin(a b) */ SELECT /*+ ColocatedJoin(a b) */ a.k, b.w FROM a JOIN b ON a.k = b.k')) v(q);
RESET colojoin.enable_colocated_join;
-- RedistributeJoin, Redistribute and BroadcastJoin are read without a
-- warning (what they do is the redistribution suite's business)
SELECT same('/*+ RedistributeJoin(a b) */ ' || :'q_ab');
SELECT same('/*+ Redistribute(b) */ ' || :'q_ab');
SELECT same('/*+ BroadcastJoin(b) */ ' || :'q_ab');
SELECT same('/*+ redistributejoin(A B) BROADCASTJOIN(c) */ SELECT a.k, b.w, c.x FROM a JOIN b ON a.k = b.k JOIN c ON c.k = a.k');
-- comments that are not hints, and hint text inside literals, are nothing
SELECT same('/* ColocatedJoin(a b) Bogus(a) */ ' || :'q_ab');
SELECT same('SELECT a.k, b.w FROM a JOIN b ON a.k = b.k WHERE ''/*+ Bogus(a) */'' <> ''''');

--
-- Malformed hints are WARNINGs that quote the text and its position; the
-- query runs as if they were not there.
--
SET colojoin.enable_colocated_join = off;
-- an unknown hint name
SELECT /*+ Bogus(a b) */ count(*) FROM a JOIN b ON a.k = b.k;
-- the rest of the comment still applies
EXPLAIN (COSTS OFF) /*+ ColocatedJoin(a b) NoSuchHint(a) */ SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
-- a misspelled alias
EXPLAIN (COSTS OFF) /*+ ColocatedJoin(a bb) */ SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
-- syntax errors
EXPLAIN (COSTS OFF) /*+ ColocatedJoin(a b */ SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
/*+ ColocatedJoin a b */ SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
/*+ ColocatedJoin(a) */ SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
/*+ ColocatedJoin() */ SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
/*+ RedistributeJoin(a b c) */ SELECT count(*) FROM a JOIN b ON a.k = b.k JOIN c ON c.k = a.k;
/*+ ColocatedJoin(a, b) */ SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
/*+ joinOptions(is_colocated_by_join_keys = 'maybe') */ SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
/*+ joinOptions(no_such_option = 'true') */ SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
/*+ joinOptions(is_colocated_by_join_keys) */ SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
-- the position counts from the start of the statement
SELECT count(*) FROM a /*+ NoColocatedJoin(a zz) */ JOIN b ON a.k = b.k;
RESET colojoin.enable_colocated_join;

--
-- Conflicting hints: a WARNING naming both; the later one is used.
--
EXPLAIN (COSTS OFF) /*+ ColocatedJoin(a b) NoColocatedJoin(b a) */ SELECT a.k, b.w FROM a JOIN b ON a.k = b.k;
SET colojoin.enable_colocated_join = off;
EXPLAIN (COSTS OFF) /*+ LocalJoin(a b) */ SELECT /*+ ColocatedJoin(b a) */ a.k, b.w FROM a JOIN b ON a.k = b.k;
RESET colojoin.enable_colocated_join;

--
-- A forcing hint that cannot be honoured is an ERROR that says why (its
-- detail names what stands in the way, once) and what would work.
--
-- The detail of each is checked for what it must say; messages are shown
-- tersely.
\set VERBOSITY terse
-- different moduli
/*+ ColocatedJoin(a m4) */ SELECT count(*) FROM a JOIN m4 ON a.k = m4.k;
SELECT state, hint,
	   detail LIKE '%modulus 6%' AND detail LIKE '%modulus 4%' AS detail_names_moduli,
	   detail NOT LIKE '%;%' AS detail_says_it_once
FROM try('/*+ ColocatedJoin(a m4) */ SELECT count(*) FROM a JOIN m4 ON a.k = m4.k');
-- a join that is not on the partition keys
/*+ ColocatedJoin(a b) */ SELECT count(*) FROM a JOIN b ON a.v = b.k;
SELECT state,
	   detail LIKE '%a.k%' AND detail LIKE '%b.k%' AS detail_names_keys,
	   detail NOT LIKE '%;%' AS detail_says_it_once
FROM try('/*+ ColocatedJoin(a b) */ SELECT count(*) FROM a JOIN b ON a.v = b.k');
-- a join whose condition is an expression
/*+ ColocatedJoin(a b) */ SELECT count(*) FROM a JOIN b ON a.k = b.k + 0;
-- a plain local table: the detail names it as the query does
/*+ ColocatedJoin(a loc) */ SELECT count(*) FROM a JOIN loc ON a.k = loc.k;
SELECT state,
	   detail ~ '\mloc\M' AND detail ~ 'not a sharded table' AS detail_names_loc,
	   detail !~ 'Loc' AS detail_keeps_its_case
FROM try('/*+ ColocatedJoin(a loc) */ SELECT count(*) FROM a JOIN loc ON a.k = loc.k');
SELECT state,
	   detail ~ '\mlOc\M' AS detail_keeps_its_case
FROM try('/*+ ColocatedJoin(a "lOc") */ SELECT count(*) FROM a JOIN loc "lOc" ON a.k = "lOc".k');
-- placement colojoin cannot prove (use joinOptions for that, below): e's
-- servers reach a's databases, which colojoin learns when it first connects
-- to them, so a new session, which has not, cannot know it
\c -
SET search_path = cj_hint, public;
\set VERBOSITY terse
/*+ ColocatedJoin(a e) */ SELECT count(*) FROM a JOIN e ON a.k = e.k;
SELECT state,
	   detail LIKE '%cj_hint_n1%' AND detail LIKE '%cj_hint_m1%' AS detail_names_servers,
	   detail NOT LIKE '%;%' AS detail_says_it_once
FROM try('/*+ ColocatedJoin(a e) */ SELECT count(*) FROM a JOIN e ON a.k = e.k');
-- two relations the query does not join on their own key
/*+ ColocatedJoin(b c) */ SELECT count(*) FROM a JOIN b ON a.k = b.k JOIN loc ON loc.k = a.k JOIN c ON c.x = loc.k;
\set VERBOSITY default

--
-- joinOptions(is_colocated_by_join_keys='true'): e's servers have other
-- names than a's, but reach the same nodes; the user vouches for it.
--
SELECT plan('SELECT a.k, a.v, e.z FROM a JOIN e ON a.k = e.k');
SELECT plan(q), same(q) FROM (VALUES
	('/*+ joinOptions(is_colocated_by_join_keys=''true'') */ SELECT a.k, a.v, e.z FROM a JOIN e ON a.k = e.k'),
	('SELECT /*+ joinOptions(is_colocated_by_join_keys=''TRUE'') */ a.k, e.z FROM a LEFT JOIN e ON a.k = e.k'),
	('/*+ joinOptions(is_colocated_by_join_keys=''true'') */ SELECT a.k, e.z FROM a JOIN e ON a.k = e.k WHERE e.k IN (7, 8, 30)'),
	('/*+ joinOptions(is_colocated_by_join_keys=''true'') */ SELECT a.k, b.w, e.z FROM a JOIN b ON a.k = b.k JOIN e ON e.k = b.k'),
	-- what colojoin can prove still counts: these joins are not colocated
	('/*+ joinOptions(is_colocated_by_join_keys=''true'') */ SELECT a.k, e.z FROM a JOIN e ON a.v * 10 = e.k'),
	('/*+ joinOptions(is_colocated_by_join_keys=''true'') */ SELECT m4.k, e.z FROM m4 JOIN e ON m4.k = e.k'),
	-- without the trust, what colojoin knows: the moves above connected to
	-- e's servers, so it now knows they reach a's databases
	('/*+ joinOptions(is_colocated_by_join_keys=''false'') */ SELECT a.k, e.z FROM a JOIN e ON a.k = e.k')
) v(q);
SELECT /*+ joinOptions(is_colocated_by_join_keys='true') */ count(*), sum(e.z), sum(a.v)
FROM a JOIN e ON a.k = e.k;
SELECT count(*), sum(e.z), sum(a.v) FROM cj_hint_local.a JOIN cj_hint_local.e ON a.k = e.k;

--
-- Hints in prepared statements, custom and generic plans.
--
SET colojoin.enable_colocated_join = off;
PREPARE cj_hint_p(bigint) AS /*+ ColocatedJoin(a b) */
	SELECT a.k, b.w FROM a JOIN b ON a.k = b.k WHERE a.k = $1 ORDER BY b.w;
EXPLAIN (COSTS OFF) EXECUTE cj_hint_p(4);
EXECUTE cj_hint_p(4);
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE cj_hint_p(4);
EXECUTE cj_hint_p(4);
EXECUTE cj_hint_p(5);
PREPARE cj_hint_q AS SELECT /*+ ColocatedJoin(a b) */ a.k, b.w FROM a JOIN b ON a.k = b.k WHERE b.w > 80 ORDER BY 1, 2;
EXPLAIN (COSTS OFF) EXECUTE cj_hint_q;
EXECUTE cj_hint_q;
SELECT a.k, b.w FROM cj_hint_local.a JOIN cj_hint_local.b ON a.k = b.k WHERE b.w > 80 ORDER BY 1, 2;
-- a forcing hint that cannot be honoured fails when the statement is planned
\set VERBOSITY terse
PREPARE cj_hint_bad AS /*+ ColocatedJoin(a m4) */ SELECT count(*) FROM a JOIN m4 ON a.k = m4.k;
EXECUTE cj_hint_bad;
\set VERBOSITY default
DEALLOCATE cj_hint_bad;
RESET plan_cache_mode;
DEALLOCATE cj_hint_p;
DEALLOCATE cj_hint_q;

--
-- Hints in PL/pgSQL: in a static statement (a hint comment after SELECT;
-- PL/pgSQL drops comments before a statement's first word) and in EXECUTE.
--
CREATE FUNCTION hinted_count(key bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	SELECT /*+ ColocatedJoin(a b) */ count(*) INTO n FROM a JOIN b ON a.k = b.k WHERE a.k = key;
	RETURN n;
END
$$;
CREATE FUNCTION hinted_plan() RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXPLAIN (COSTS OFF) SELECT /*+ ColocatedJoin(a b) */ a.k, b.w FROM a JOIN b ON a.k = b.k LOOP
		IF line ~ 'ColocatedJoin|Hints' THEN
			RETURN NEXT btrim(line);
		END IF;
	END LOOP;
END
$$;
CREATE FUNCTION bad_hint() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	SELECT /*+ ColocatedJoin(a m4) */ count(*) INTO n FROM a JOIN m4 ON a.k = m4.k;
	RETURN n;
END
$$;
SET colojoin.enable_colocated_join = off;
SELECT hinted_plan();
-- more than five calls: PL/pgSQL's cached plan turns generic
SELECT key_value, hinted_count(key_value) AS n,
	   (SELECT count(*) FROM cj_hint_local.a JOIN cj_hint_local.b ON a.k = b.k
		WHERE a.k = key_value) AS local_n
FROM generate_series(1, 8) key_value;
\set VERBOSITY terse
SELECT bad_hint();
\set VERBOSITY default
DO $$
DECLARE
	n bigint;
BEGIN
	EXECUTE '/*+ ColocatedJoin(a b) */ SELECT count(*) FROM a JOIN b ON a.k = b.k' INTO n;
	RAISE NOTICE 'EXECUTE with a leading hint: % rows', n;
END
$$;
RESET colojoin.enable_colocated_join;

--
-- EXPLAIN shows the hints a scan follows.
--
EXPLAIN (COSTS OFF, FORMAT JSON) /*+ ColocatedJoin(a b) */ SELECT a.k FROM a JOIN b ON a.k = b.k WHERE a.k = 4;
EXPLAIN (COSTS OFF, FORMAT YAML) /*+ joinOptions(is_colocated_by_join_keys='true') */ SELECT a.k FROM a JOIN b ON a.k = b.k WHERE a.k = 4;

--
-- Clean up, here and on the nodes.
--
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA cj_hint CASCADE;
DROP SCHEMA cj_hint_local CASCADE;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
				   'DROP SCHEMA IF EXISTS cj_hint CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
DROP SERVER cj_hint_m1, cj_hint_m2, cj_hint_m3 CASCADE;
\i sql/include/three_nodes_end.sql
