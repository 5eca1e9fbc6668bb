--
-- remote_sizes: foreign partitions nobody ANALYZEd get their sizes from
-- their nodes (cached per backend for colojoin.remote_size_lifetime), so
-- that estimates and the choice of what moves follow the data without
-- ANALYZE or use_remote_estimate.  Every answer is compared with plain
-- local tables.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS colojoin CASCADE;
CREATE EXTENSION IF NOT EXISTS dblink;
DROP SCHEMA IF EXISTS rs CASCADE;
RESET client_min_messages;

\getenv node1_port CJ_NODE1_PORT
\getenv node2_port CJ_NODE2_PORT
\getenv node3_port CJ_NODE3_PORT

SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
	'SET client_min_messages = warning; DROP SCHEMA IF EXISTS rs CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;

CREATE SERVER rs_n1 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node1_port', dbname 'colojoin_regress');
CREATE SERVER rs_n2 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node2_port', dbname 'colojoin_regress');
CREATE SERVER rs_n3 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node3_port', dbname 'colojoin_regress');
CREATE USER MAPPING FOR CURRENT_USER SERVER rs_n1;
CREATE USER MAPPING FOR CURRENT_USER SERVER rs_n2;
CREATE USER MAPPING FOR CURRENT_USER SERVER rs_n3;

CREATE SCHEMA rs;
SET search_path = rs, public;
CREATE TABLE big (k int, v int, pad text) PARTITION BY HASH (k);
SELECT colojoin.create_shards('big', ARRAY['rs_n1', 'rs_n2', 'rs_n3'], 6);
CREATE TABLE small (k int, name text) PARTITION BY HASH (k);
SELECT colojoin.create_shards('small', ARRAY['rs_n1', 'rs_n2', 'rs_n3'], 3);
CREATE TABLE big_l (k int, v int, pad text);
CREATE TABLE small_l (k int, name text);
INSERT INTO big_l SELECT g, g % 60, repeat('x', 20) FROM generate_series(1, 30000) g;
INSERT INTO small_l SELECT g, 'name ' || g FROM generate_series(0, 59) g;
INSERT INTO big SELECT * FROM big_l;
INSERT INTO small SELECT * FROM small_l;
-- the nodes count their rows (as autovacuum would); the coordinator's
-- foreign tables stay unanalyzed
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p), 'ANALYZE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
SELECT count(*) AS analyzed_on_the_coordinator FROM pg_class
WHERE relnamespace = 'rs'::regnamespace AND relkind = 'f' AND reltuples >= 0;

-- the rows the planner expects, from a plan's top line
CREATE FUNCTION est(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	EXECUTE 'EXPLAIN ' || q INTO line;
	RETURN substring(line FROM 'rows=([0-9]+)')::bigint;
END $$;
-- the top node of the plan of q
CREATE FUNCTION top_node(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	EXECUTE 'EXPLAIN (COSTS OFF) ' || q INTO line;
	RETURN line;
END $$;
-- what moves in the plan of q
CREATE FUNCTION moves(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		IF line ~ 'Strategy:' THEN
			RETURN regexp_replace(trim(line), '^Strategy: ', '');
		END IF;
	END LOOP;
	RETURN 'not on the nodes';
END $$;

-- off: the planner's default for never-analyzed foreign tables (10 pages)
SET colojoin.remote_size_lifetime = 0;
SELECT est('SELECT * FROM big') AS big_without, est('SELECT * FROM small') AS small_without;
-- on: the nodes' counts
RESET colojoin.remote_size_lifetime;
SELECT est('SELECT * FROM big') AS big_with, est('SELECT * FROM small') AS small_with;
SELECT sum(estimated_rows) AS big_in_shards_view FROM colojoin.shards WHERE table_name = 'big'::regclass;

-- the choice of what moves follows: the small side is broadcast, and the
-- answer is right either way
SET colojoin.remote_size_lifetime = 0;
SELECT moves('SELECT b.k, s.name FROM big b JOIN small s ON s.k = b.v') AS without_sizes;
RESET colojoin.remote_size_lifetime;
SELECT moves('SELECT b.k, s.name FROM big b JOIN small s ON s.k = b.v') AS with_sizes;
SELECT (SELECT count(*) FROM (SELECT b.k, s.name FROM big b JOIN small s ON s.k = b.v
		EXCEPT ALL SELECT b.k, s.name FROM big_l b JOIN small_l s ON s.k = b.v) x) AS only_sharded,
	(SELECT count(*) FROM (SELECT b.k, s.name FROM big_l b JOIN small_l s ON s.k = b.v
		EXCEPT ALL SELECT b.k, s.name FROM big b JOIN small s ON s.k = b.v) x) AS only_local;

-- EXPLAIN ANALYZE: the rows the plan expected to move (Rows Moved) next to
-- those that moved (small, 60 rows, to each of the 3 nodes)
CREATE FUNCTION moved(q text, OUT estimate bigint, OUT actual bigint) LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
		IF line ~ '^\s*Rows Moved:' THEN
			estimate := substring(line FROM '([0-9]+)')::bigint;
		ELSIF line ~ '^\s*Actual Rows Moved:' THEN
			actual := substring(line FROM '([0-9]+)')::bigint;
		END IF;
	END LOOP;
END $$;
SELECT * FROM moved('SELECT b.k, s.name FROM big b JOIN small s ON s.k = b.v');

-- a table grouped alone by columns its nodes have statistics of: the groups
-- the tasks send follow those (60 values of v, one of pad, per leaf), not
-- PostgreSQL's guess of 200 values a column, which priced the final
-- aggregation as if it spilled and left the query to PostgreSQL
SELECT est('SELECT v, pad, count(*), sum(k) FROM big GROUP BY v, pad') BETWEEN 60 AND 360 AS groups_from_the_nodes;
SELECT top_node('SELECT v, pad, count(*), sum(k) FROM big GROUP BY v, pad') AS grouped_on_the_nodes;
SELECT count(*) AS differ FROM (
	(SELECT v, pad, count(*), sum(k) FROM big GROUP BY v, pad
	 EXCEPT ALL SELECT v, pad, count(*), sum(k) FROM big_l GROUP BY v, pad)
	UNION ALL
	(SELECT v, pad, count(*), sum(k) FROM big_l GROUP BY v, pad
	 EXCEPT ALL SELECT v, pad, count(*), sum(k) FROM big GROUP BY v, pad)) d;

-- join estimates follow the nodes' statistics of each column too (their
-- pg_stats null fraction and distinct values): big.v has 60 values, as
-- small.k (its partition key, whose values the partitions split), so the
-- planner expects 30,000 rows of big JOIN small ON s.k = b.v and 15 million
-- of big JOIN big ON v, where PostgreSQL's 200 values a column would say
-- 9,000 and 4.5 million; on big's key (distinct in every partition) 30,000
SELECT est('SELECT * FROM big b JOIN small s ON s.k = b.v') BETWEEN 25000 AND 36000 AS join_on_the_small_key,
	est('SELECT * FROM big a JOIN big b ON a.v = b.v') BETWEEN 12000000 AND 18000000 AS join_on_a_column,
	est('SELECT * FROM big a JOIN big b ON a.k = b.k') BETWEEN 25000 AND 36000 AS join_on_the_key;
-- and range conditions: the lowest and highest value the nodes' histograms
-- give (a histogram of two bounds) let the planner interpolate, where it
-- would otherwise take a third of the rows for any inequality
SELECT est('SELECT * FROM big WHERE k < 3000') BETWEEN 2000 AND 4500 AS range_from_the_nodes,
	est('SELECT * FROM big WHERE k BETWEEN 1000 AND 1600') BETWEEN 300 AND 1200 AS between_from_the_nodes;
-- a column of few values (v: 60 of them) has most common values on its
-- nodes and no histogram; its lowest and highest values come from those:
-- 11 of 60 values are 5,500 rows, where PostgreSQL's guess for a range
-- without bounds is a half per cent of them (150), and 6 values 3,000 rows
-- (a third, 10,000, without bounds)
SELECT est('SELECT * FROM big WHERE v BETWEEN 10 AND 20') BETWEEN 4000 AND 7500 AS few_values_between,
	est('SELECT * FROM big WHERE v < 6') BETWEEN 2000 AND 4500 AS few_values_below;
-- without the nodes' statistics, PostgreSQL's defaults (10 pages a
-- partition, 200 values a column)
SET colojoin.remote_size_lifetime = 0;
SELECT est('SELECT * FROM big a JOIN big b ON a.k = b.k') AS join_on_the_key_by_default;
RESET colojoin.remote_size_lifetime;

-- a node that cannot be reached gives no size: the default applies
ALTER SERVER rs_n3 OPTIONS (SET port '1');
SELECT est('SELECT * FROM big') > 0 AS still_planned;
ALTER SERVER rs_n3 OPTIONS (SET port :'node3_port');

-- with colojoin in shared_preload_libraries, the sizes one session read
-- serve the server's other sessions while they are younger than
-- colojoin.remote_size_lifetime: a new session plans with them, here with
-- no node to ask at all
ALTER SERVER rs_n1 OPTIONS (SET port '1');
ALTER SERVER rs_n2 OPTIONS (SET port '1');
ALTER SERVER rs_n3 OPTIONS (SET port '1');
\c
SET search_path = rs, public;
-- (entries older than the lifetime are not taken)
SET colojoin.remote_size_lifetime = 1;
SELECT est('SELECT * FROM big') <> 30000 AS stale_sizes_unused;
RESET colojoin.remote_size_lifetime;
SELECT est('SELECT * FROM big') AS big_from_another_session;
ALTER SERVER rs_n1 OPTIONS (SET port :'node1_port');
ALTER SERVER rs_n2 OPTIONS (SET port :'node2_port');
ALTER SERVER rs_n3 OPTIONS (SET port :'node3_port');

-- refresh_statistics records the sizes in pg_class, which win from then on
SELECT colojoin.refresh_statistics('big') AS leaves_recorded;
SELECT est('SELECT * FROM big') AS big_recorded;

DROP SCHEMA rs CASCADE;
DROP SERVER rs_n1, rs_n2, rs_n3 CASCADE;
