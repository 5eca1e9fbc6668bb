--
-- activity: colojoin.activity shows, live from each node's
-- pg_stat_activity, the node backends this coordinator's sessions hold:
-- every connection colojoin opens names its session in application_name.
-- Each physical node once, however many servers reach it; a node that
-- cannot be reached is a WARNING naming it.
--
\set prefix cj_act
\i sql/include/three_nodes_begin.sql

CREATE SCHEMA cj_act_s;
SET search_path = cj_act_s, public;
CREATE TABLE a (k int, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('a', ARRAY[:'srv1', :'srv2', :'srv3'], 6);
CREATE TABLE b (k int, w int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('b', ARRAY[:'srv1', :'srv2', :'srv3'], colocate_with => 'a');
INSERT INTO a SELECT g, g FROM generate_series(1, 300) g;
INSERT INTO b SELECT g % 100, g FROM generate_series(1, 300) g;

-- a colocated join inside an open transaction: this session holds a
-- backend on each node until it ends
BEGIN;
SELECT count(*) FROM a JOIN b ON a.k = b.k;
SET LOCAL client_min_messages = error;	-- other suites' servers may be gone
SELECT count(DISTINCT server) AS nodes, count(*) >= 3 AS backends,
	   bool_and(state IS NOT NULL) AS with_state,
	   bool_and(backend_start <= clock_timestamp() AND query_start >= backend_start) AS with_times,
	   bool_and(blocked_by = '{}') AS nobody_waits,
	   bool_or(query ~ 'colojoin_cursor|FROM') AS with_queries
FROM colojoin.activity WHERE coordinator_pid = pg_backend_pid();
-- the view knows each row's session: this one's, none of another
SELECT count(*) AS rows_of_no_session FROM colojoin.activity
WHERE coordinator_pid IS NULL OR coordinator_pid <= 0;
COMMIT;

-- a second server reaching node 1: the node is shown once
CREATE SERVER cj_act_alias FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node1_port', dbname 'colojoin_regress');
CREATE USER MAPPING FOR CURRENT_USER SERVER cj_act_alias;
SELECT count(*) FROM a JOIN b ON a.k = b.k;
SET client_min_messages = error;
SELECT count(*) AS rows_per_backend FROM colojoin.activity
WHERE coordinator_pid = pg_backend_pid()
GROUP BY remote_pid HAVING count(*) > 1;
RESET client_min_messages;

-- a node that cannot be reached: a WARNING naming it, the others shown
ALTER SERVER cj_act_alias OPTIONS (SET port '1');
SELECT count(DISTINCT server) >= 3 AS the_others_shown FROM colojoin.activity
WHERE coordinator_pid = pg_backend_pid() AND server LIKE 'cj_act_n%';

DROP SERVER cj_act_alias CASCADE;
DROP SCHEMA cj_act_s CASCADE;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
				   'DROP SCHEMA IF EXISTS cj_act_s CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
RESET search_path;
\i sql/include/three_nodes_end.sql
