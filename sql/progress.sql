--
-- progress: colojoin.progress shows how far a long operation of any
-- session is (create_shards, drop_shards, repair_placement), with colojoin
-- in shared_preload_libraries, and the operation says so in a NOTICE every
-- colojoin.progress_notice_interval.
--
\set prefix cj_prog
\i sql/include/three_nodes_begin.sql
CREATE SCHEMA cj_prog_s;
SET search_path = cj_prog_s, public;

-- while create_shards runs, an event trigger on the partitions it creates
-- reads this session's row of colojoin.progress
CREATE FUNCTION cj_prog_s.watch() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT command, relid, phase, units_done, units_total, percent_done
			 FROM colojoin.progress WHERE pid = pg_backend_pid() LOOP
		RAISE NOTICE 'progress: % of %: %, % of % (% %%)', r.command, r.relid, r.phase,
			r.units_done, r.units_total, round(r.percent_done);
	END LOOP;
END $$;
CREATE EVENT TRIGGER cj_prog_watch ON ddl_command_end
	WHEN TAG IN ('CREATE FOREIGN TABLE') EXECUTE FUNCTION cj_prog_s.watch();

CREATE TABLE t (k int, v text) PARTITION BY HASH (k);
SELECT colojoin.create_shards('t', ARRAY[:'srv1', :'srv2', :'srv3'], 3);
DROP EVENT TRIGGER cj_prog_watch;
-- over: no row left
SELECT count(*) AS rows_after FROM colojoin.progress WHERE pid = pg_backend_pid();

-- the NOTICE, here at every step
SET colojoin.progress_notice_interval = 0;
CREATE TABLE u (k int, v text) PARTITION BY HASH (k);
SELECT colojoin.create_shards('u', ARRAY[:'srv1', :'srv2'], 2);
SELECT colojoin.drop_shards('u');
-- a scan's moves, a destination at a time: t (3 nodes) joined on a non-key
-- with w (one node) moves w's rows to t's nodes
CREATE TABLE w2 (k int, v text) PARTITION BY HASH (k);
SELECT colojoin.create_shards('w2', ARRAY[:'srv1'], 1);
INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 30) g;
INSERT INTO w2 SELECT g, 'v' || g FROM generate_series(1, 10) g;
SET colojoin.enable_dual_repartition = off;
SELECT count(*) FROM t JOIN w2 ON t.v = w2.v;
RESET colojoin.enable_dual_repartition;
RESET colojoin.progress_notice_interval;
-- by default only an operation longer than 5 seconds says anything
CREATE TABLE w (k int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('w', ARRAY[:'srv1'], 2);

-- a failed operation leaves no row: a node that cannot be reached in the
-- middle of create_shards
ALTER SERVER :"srv3" OPTIONS (SET port '1');
CREATE TABLE x (k int) PARTITION BY HASH (k);
SET client_min_messages = error;
SELECT colojoin.create_shards('x', ARRAY[:'srv1', :'srv3'], 2);
RESET client_min_messages;
SELECT count(*) AS rows_after_failure FROM colojoin.progress WHERE pid = pg_backend_pid();
ALTER SERVER :"srv3" OPTIONS (SET port :'node3_port');

DROP SCHEMA cj_prog_s CASCADE;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
				   'DROP SCHEMA IF EXISTS cj_prog_s CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
RESET search_path;
\i sql/include/three_nodes_end.sql
