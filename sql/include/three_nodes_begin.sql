--
-- three_nodes_begin.sql: the start shared by the suites that use the test
-- cluster's three nodes.  Set psql variable prefix first (\set prefix
-- cj_edge).  Notes which extensions already exist (three_nodes_end.sql
-- drops only the others), creates colojoin and dblink, reads the nodes'
-- ports (node1_port..node3_port) and creates servers prefix_n1..prefix_n3
-- (psql variables srv1..srv3) with a user mapping each, and function
-- rows_of, which the suites compare results with.
--
SELECT NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'colojoin') AS own_colojoin,
	   NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'postgres_fdw') AS own_fdw,
	   NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'dblink') AS own_dblink
\gset
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS colojoin CASCADE;
CREATE EXTENSION IF NOT EXISTS dblink;
RESET client_min_messages;
\getenv node1_port CJ_NODE1_PORT
\getenv node2_port CJ_NODE2_PORT
\getenv node3_port CJ_NODE3_PORT
\set srv1 :prefix '_n1'
\set srv2 :prefix '_n2'
\set srv3 :prefix '_n3'
CREATE SERVER :"srv1" FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node1_port', dbname 'colojoin_regress');
CREATE SERVER :"srv2" FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node2_port', dbname 'colojoin_regress');
CREATE SERVER :"srv3" FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node3_port', dbname 'colojoin_regress');
CREATE USER MAPPING FOR CURRENT_USER SERVER :"srv1";
CREATE USER MAPPING FOR CURRENT_USER SERVER :"srv2";
CREATE USER MAPPING FOR CURRENT_USER SERVER :"srv3";

-- rows_of(query, schema): the query's rows as text, sorted, run with
-- search_path set to schema (then public): comparing two arrays compares
-- the results as multisets
CREATE FUNCTION public.rows_of(query text, schema text) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
	saved text := current_setting('search_path');
	rec record;
	result text[] := '{}';
BEGIN
	PERFORM set_config('search_path', schema || ', public', true);
	FOR rec IN EXECUTE query LOOP
		result := result || rec::text;
	END LOOP;
	PERFORM set_config('search_path', saved, true);
	RETURN ARRAY(SELECT r FROM unnest(result) r ORDER BY r COLLATE "C");
END
$$;
