--
-- decisions: colojoin.decisions counts, per query id (as
-- pg_stat_statements computes it), how each planning went: the strategies
-- that ran part of the query on the nodes, how often none of it did, and
-- the first reason something was left to PostgreSQL, in the decision
-- log's words.  The coordinator has colojoin in shared_preload_libraries;
-- the query id is PostgreSQL's, here by compute_query_id.
--
\set prefix cj_dec
\i sql/include/three_nodes_begin.sql

SET compute_query_id = on;
CREATE SCHEMA cj_dec_s;
SET search_path = cj_dec_s, public;
CREATE TABLE a (k int, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('a', ARRAY[:'srv1', :'srv2', :'srv3'], 6);
CREATE TABLE b (k int, w int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('b', ARRAY[:'srv1', :'srv2', :'srv3'], colocate_with => 'a');
CREATE TABLE c (k int, x int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('c', ARRAY[:'srv2', :'srv3'], 4);
INSERT INTO a SELECT g, g % 20 FROM generate_series(1, 300) g;
INSERT INTO b SELECT g % 100, g FROM generate_series(1, 300) g;
INSERT INTO c SELECT g, g FROM generate_series(1, 40) g;

-- qid(query): its query id, from EXPLAIN VERBOSE
CREATE FUNCTION qid(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP
		IF line ~ '^Query Identifier: ' THEN
			RETURN substring(line FROM '-?[0-9]+$')::bigint;
		END IF;
	END LOOP;
	RETURN NULL;
END $$;
CREATE TEMP TABLE queries AS SELECT name, q, qid(q) AS id FROM (VALUES
	('colocated', 'SELECT count(*) FROM a JOIN b ON a.k = b.k'),
	('moved', 'SELECT count(*) FROM a JOIN c ON a.v = c.k'),
	('left', 'SELECT v, percentile_disc(0.5) WITHIN GROUP (ORDER BY k) FROM a GROUP BY v'),
	('not colojoin''s', 'SELECT count(*) FROM pg_class')
) v(name, q);
SELECT name, id IS NOT NULL AS has_id FROM queries ORDER BY name;

SELECT colojoin.decisions_reset();
SELECT count(*) FROM a JOIN b ON a.k = b.k;
SELECT count(*) FROM a JOIN b ON a.k = b.k WHERE a.v > 3;
SELECT count(*) FROM a JOIN b ON a.k = b.k;
SELECT count(*) FROM a JOIN c ON a.v = c.k;
SELECT v, percentile_disc(0.5) WITHIN GROUP (ORDER BY k) FROM a GROUP BY v ORDER BY v LIMIT 2;
SELECT v, percentile_disc(0.5) WITHIN GROUP (ORDER BY k) FROM a GROUP BY v;
SELECT count(*) > 0 AS some FROM pg_class;

SELECT q.name, d.plans, d.colocated, d.redistributed + d.broadcast + d.dual_repartition AS moved,
	   d.steps_on_nodes, d.left_to_postgresql, d.first_reason, d.last_seen <= now() AS seen
FROM queries q LEFT JOIN colojoin.decisions d ON d.queryid = q.id ORDER BY q.name;
-- a query the planner never brought near colojoin's tables is not counted
SELECT count(*) AS entries FROM colojoin.decisions;
SELECT colojoin.decisions_reset();
SELECT count(*) AS after_reset FROM colojoin.decisions;
-- resetting is for whom it was granted to
CREATE ROLE cj_dec_user;
SET ROLE cj_dec_user;
SELECT colojoin.decisions_reset();
RESET ROLE;
DROP ROLE cj_dec_user;

DROP SCHEMA cj_dec_s CASCADE;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
				   'DROP SCHEMA IF EXISTS cj_dec_s CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
RESET search_path;
RESET compute_query_id;
\i sql/include/three_nodes_end.sql
