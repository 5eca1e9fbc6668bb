--
-- connections: how colojoin reaches the nodes.  Connection options come from
-- the foreign server and the user mapping only; a non-superuser must log in
-- with a password (postgres_fdw's rule); failures name the node, its host
-- and port, and tell a node that did not answer from one that refused the
-- role (its own SQLSTATE) and one that had no free slot (waited for);
-- connections are reused, and retired when their server or user mapping
-- changes; remote work follows the local transaction, and cancel or
-- statement_timeout stop it on the node.  create_shards is the client.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS colojoin CASCADE;
CREATE EXTENSION IF NOT EXISTS dblink;

\getenv node1_port CJ_NODE1_PORT
\getenv node2_port CJ_NODE2_PORT
\set node1 'host=127.0.0.1 dbname=colojoin_regress user=postgres port=' :node1_port
\set node2 'host=127.0.0.1 dbname=colojoin_regress user=postgres port=' :node2_port

-- leftovers of an interrupted earlier run
SELECT dblink_exec(:'node1', 'DROP SCHEMA IF EXISTS cj_conn CASCADE');
SELECT dblink_exec(:'node2', 'DROP SCHEMA IF EXISTS cj_conn CASCADE');
SELECT dblink_exec(:'node1', 'DROP EVENT TRIGGER IF EXISTS cj_conn_slow');
DROP SCHEMA IF EXISTS cj_conn CASCADE;
DROP SERVER IF EXISTS cc_n1, cc_n2, cc_down, cc_nodb CASCADE;
DROP ROLE IF EXISTS cc_user;

-- Role colojoin_pw must log in to the nodes with a password (the cluster's
-- pg_hba.conf asks scram-sha-256 of it); everyone else is trusted.
SELECT dblink_exec(:'node1', $$
	DO 'BEGIN
		IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = ''colojoin_pw'') THEN
			CREATE ROLE colojoin_pw LOGIN;
		END IF;
	END';
	ALTER ROLE colojoin_pw PASSWORD 'cc_secret';
	CREATE SCHEMA cj_conn;
	GRANT USAGE, CREATE ON SCHEMA cj_conn TO colojoin_pw$$);
SELECT dblink_exec(:'node2', $$
	DO 'BEGIN
		IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = ''colojoin_pw'') THEN
			CREATE ROLE colojoin_pw LOGIN;
		END IF;
	END';
	ALTER ROLE colojoin_pw PASSWORD 'cc_secret' CONNECTION LIMIT -1;
	CREATE SCHEMA cj_conn;
	GRANT USAGE, CREATE ON SCHEMA cj_conn TO colojoin_pw$$);

-- postgres_fdw's own options are not libpq keywords: colojoin skips them;
-- application_name is one, and is used
CREATE SERVER cc_n1 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node1_port', dbname 'colojoin_regress',
			 application_name 'cc_app', use_remote_estimate 'true',
			 fdw_startup_cost '10', fdw_tuple_cost '0.1', updatable 'true',
			 truncatable 'true', fetch_size '500', batch_size '10',
			 async_capable 'true', parallel_commit 'true',
			 keep_connections 'on', extensions 'postgres_fdw');
CREATE SERVER cc_n2 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node2_port', dbname 'colojoin_regress');
CREATE USER MAPPING FOR CURRENT_USER SERVER cc_n1;
CREATE USER MAPPING FOR CURRENT_USER SERVER cc_n2;
CREATE SCHEMA cj_conn;
SET search_path = cj_conn, public;

-- run a statement, return its outcome with the node ports and the time
-- waited masked (they depend on the cluster and the machine)
CREATE FUNCTION outcome(cmd text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	st text;
	msg text;
	det text;
	hnt text;
BEGIN
	EXECUTE cmd;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
		det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT;
	RETURN st || ': ' || regexp_replace(msg, 'for \d+ ms', 'for N ms')
		|| coalesce(E'\nDETAIL: ' || nullif(regexp_replace(det, 'port( |=)\d+', 'port\1N', 'g'), ''), '')
		|| coalesce(E'\nHINT: ' || nullif(hnt, ''), '');
END $$;

-- colojoin's connections to a node, as the node sees them, once their
-- number is the one expected (a closed connection's backend takes a moment
-- to exit); after 10 seconds, whatever there is
CREATE FUNCTION node_sessions(conn text, expected int)
RETURNS TABLE (pid int, app text, usename name, state text)
LANGUAGE plpgsql AS $$
DECLARE
	q text := $q$
		SELECT pid, regexp_replace(application_name, ':[0-9]+:[0-9]+$', ''), usename, state
		FROM pg_stat_activity
		WHERE application_name ~ '^(cc_app )?colojoin:[0-9]+:[0-9]+$' AND datname = current_database()
		ORDER BY pid $q$;
BEGIN
	FOR i IN 1 .. 200 LOOP
		EXIT WHEN (SELECT count(*) FROM dblink(conn, q) AS t(pid int, app text, usename name, state text)) = expected;
		PERFORM pg_sleep(0.05);
	END LOOP;
	RETURN QUERY SELECT * FROM dblink(conn, q) AS t(pid int, app text, usename name, state text);
END $$;

-- the tables of schema cj_conn on a node, with their owners
CREATE FUNCTION node_tables(conn text)
RETURNS TABLE (relname name, owner name)
LANGUAGE sql AS $$
	SELECT * FROM dblink(conn, $q$
		SELECT c.relname, pg_get_userbyid(c.relowner) FROM pg_class c
		WHERE c.relnamespace = 'cj_conn'::regnamespace AND c.relkind = 'r'
		ORDER BY c.relname COLLATE "C" $q$) AS t(relname name, owner name)
$$;

--
-- A connection: its options, its reuse
--
CREATE TABLE t1 (k int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('t1', ARRAY['cc_n1', 'cc_n2'], 2);
-- one idle connection per node, application_name the server's options'
-- and colojoin's "colojoin:<system identifier>:<pid>" after it
SELECT app, usename, state FROM node_sessions(:'node1', 1);
SELECT app, usename, state FROM node_sessions(:'node2', 1);
SELECT pid AS n1_pid FROM node_sessions(:'node1', 1) \gset
-- the next transaction reuses it
CREATE TABLE t2 (k int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('t2', ARRAY['cc_n1'], 1);
SELECT pid = :n1_pid AS reused, state FROM node_sessions(:'node1', 1);

-- a changed server is reconnected: pointing it at a port where nobody
-- listens gives the connection error with host and port
ALTER SERVER cc_n1 OPTIONS (SET port '1');
CREATE TABLE t3 (k int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('t3', ARRAY['cc_n1'], 1);
SELECT count(*) FROM node_sessions(:'node1', 0);
ALTER SERVER cc_n1 OPTIONS (SET port :'node1_port');
SELECT colojoin.create_shards('t3', ARRAY['cc_n1'], 1);
SELECT pid <> :n1_pid AS new_connection, state FROM node_sessions(:'node1', 1);

-- a node that is down, a server without user mapping
CREATE SERVER cc_down FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port '1', dbname 'colojoin_regress');
CREATE TABLE t4 (k int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('t4', ARRAY['cc_down'], 1);
CREATE USER MAPPING FOR CURRENT_USER SERVER cc_down OPTIONS (user 'nobody');
SELECT colojoin.create_shards('t4', ARRAY['cc_down'], 1);

-- a database the node does not have: the node answered, so this is an error
-- of the server's options (with the node's SQLSTATE), not a node that is down
CREATE SERVER cc_nodb FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node1_port', dbname 'cc_no_such_db');
CREATE USER MAPPING FOR CURRENT_USER SERVER cc_nodb;
SELECT outcome($$SELECT colojoin.create_shards('t4', ARRAY['cc_nodb'], 1)$$);

--
-- Non-superusers must authenticate to the node with a password
--
CREATE ROLE cc_user;
GRANT USAGE, CREATE ON SCHEMA cj_conn TO cc_user;
GRANT USAGE ON FOREIGN SERVER cc_n1, cc_n2 TO cc_user;
GRANT EXECUTE ON FUNCTION outcome(text) TO cc_user;
SET ROLE cc_user;
CREATE TABLE u1 (k int) PARTITION BY HASH (k);
-- no user mapping at all
SELECT colojoin.create_shards('u1', ARRAY['cc_n1'], 2);
RESET ROLE;
-- a mapping without a password
CREATE USER MAPPING FOR cc_user SERVER cc_n1 OPTIONS (user 'postgres');
SET ROLE cc_user;
SELECT colojoin.create_shards('u1', ARRAY['cc_n1'], 2);
RESET ROLE;
-- a password the node never asks for (it trusts user postgres)
ALTER USER MAPPING FOR cc_user SERVER cc_n1 OPTIONS (ADD password 'unused');
SET ROLE cc_user;
SELECT colojoin.create_shards('u1', ARRAY['cc_n1'], 2);
RESET ROLE;
-- unless a superuser waives the rule for this mapping
ALTER USER MAPPING FOR cc_user SERVER cc_n1 OPTIONS (ADD password_required 'false');
SET ROLE cc_user;
SELECT colojoin.create_shards('u1', ARRAY['cc_n1'], 2);
RESET ROLE;
-- colojoin_pw logs in with scram: the right password works
ALTER USER MAPPING FOR cc_user SERVER cc_n1
	OPTIONS (SET user 'colojoin_pw', SET password 'cc_secret', DROP password_required);
SET ROLE cc_user;
CREATE TABLE u2 (k int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('u2', ARRAY['cc_n1'], 2);
INSERT INTO u2 SELECT generate_series(1, 10);
SELECT count(*) FROM u2;
RESET ROLE;
SELECT * FROM node_tables(:'node1') WHERE relname LIKE 'u%';
-- a changed mapping retires the connection: a wrong password is refused
ALTER USER MAPPING FOR cc_user SERVER cc_n1 OPTIONS (SET password 'wrong');
SET ROLE cc_user;
CREATE TABLE u3 (k int) PARTITION BY HASH (k);
SELECT outcome($$SELECT colojoin.create_shards('u3', ARRAY['cc_n1'], 2)$$);
RESET ROLE;
-- PUBLIC's mapping serves users without their own
CREATE USER MAPPING FOR PUBLIC SERVER cc_n2 OPTIONS (user 'colojoin_pw', password 'cc_secret');
SET ROLE cc_user;
SELECT colojoin.create_shards('u3', ARRAY['cc_n2'], 2);
RESET ROLE;
SELECT * FROM node_tables(:'node2') WHERE relname LIKE 'u%';

-- a node that lets no more sessions of the role in (its CONNECTION LIMIT)
-- is full, not down: colojoin asks again until colojoin.connection_wait_timeout,
-- then says the node had no free slot (the changed mapping retires the
-- connection cc_user has)
SELECT dblink_exec(:'node2', 'ALTER ROLE colojoin_pw CONNECTION LIMIT 0');
ALTER USER MAPPING FOR PUBLIC SERVER cc_n2 OPTIONS (SET password 'cc_secret');
SET ROLE cc_user;
CREATE TABLE u4 (k int) PARTITION BY HASH (k);
SET colojoin.connection_wait_timeout = '50ms';
SELECT outcome($$SELECT colojoin.create_shards('u4', ARRAY['cc_n2'], 2)$$);
RESET colojoin.connection_wait_timeout;
RESET ROLE;
SELECT dblink_exec(:'node2', 'ALTER ROLE colojoin_pw CONNECTION LIMIT -1');
SET ROLE cc_user;
SELECT colojoin.create_shards('u4', ARRAY['cc_n2'], 2);
RESET ROLE;

--
-- Remote errors keep their SQLSTATE and say which node and partition
--
SELECT dblink_exec(:'node2', 'CREATE TABLE cj_conn.t5_p1 (x int)');
CREATE TABLE t5 (k int) PARTITION BY HASH (k);
SELECT outcome($$SELECT colojoin.create_shards('t5', ARRAY['cc_n1', 'cc_n2'], 2)$$);
SELECT colojoin.create_shards('t5', ARRAY['cc_n1', 'cc_n2'], 2);
SELECT dblink_exec(:'node2', 'DROP TABLE cj_conn.t5_p1');
-- the failed call left the connections idle and reusable
SELECT app, state FROM node_sessions(:'node1', 1);
SELECT colojoin.create_shards('t5', ARRAY['cc_n1', 'cc_n2'], 2);

--
-- statement_timeout (and cancel) stop a remote command that hangs, and
-- leave its connection idle and reusable
--
SELECT dblink_exec(:'node1', $$
	CREATE FUNCTION cj_conn.slow() RETURNS event_trigger LANGUAGE plpgsql
		AS 'BEGIN IF EXISTS (SELECT 1 FROM pg_event_trigger_ddl_commands()
		                     WHERE object_identity LIKE ''%slow%'') THEN
		            PERFORM pg_sleep(60); END IF; END';
	CREATE EVENT TRIGGER cj_conn_slow ON ddl_command_end WHEN TAG IN ('CREATE TABLE')
		EXECUTE FUNCTION cj_conn.slow()$$);
SELECT pid AS n1_pid FROM node_sessions(:'node1', 1) \gset
CREATE TABLE slow (k int) PARTITION BY HASH (k);
SET statement_timeout = '500ms';
SELECT colojoin.create_shards('slow', ARRAY['cc_n1'], 1);
RESET statement_timeout;
SELECT pid = :n1_pid AS reused, state FROM node_sessions(:'node1', 1);
SELECT * FROM node_tables(:'node1') WHERE relname LIKE 'slow%';
SELECT dblink_exec(:'node1', 'DROP EVENT TRIGGER cj_conn_slow');
SELECT colojoin.create_shards('slow', ARRAY['cc_n1'], 1);

--
-- A node whose connection dies after it made changes in this transaction:
-- the transaction cannot commit (it would keep only the local half)
--
BEGIN;
CREATE TABLE lost (k int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('lost', ARRAY['cc_n2'], 1);
SELECT count(*) FROM dblink(:'node2', $$
	SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	WHERE application_name LIKE 'colojoin:%' AND usename = 'postgres'$$) AS t(ok boolean);
CREATE TABLE lost2 (k int) PARTITION BY HASH (k);
DO $$
BEGIN
	PERFORM colojoin.create_shards('lost2', ARRAY['cc_n2'], 1);
EXCEPTION WHEN OTHERS THEN
	RAISE WARNING 'create_shards failed: the connection is gone';
END $$;
COMMIT;
SELECT to_regclass('lost') IS NULL AS rolled_back;
SELECT * FROM node_tables(:'node2') WHERE relname LIKE 'lost%';
-- the next transaction reconnects
CREATE TABLE lost (k int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('lost', ARRAY['cc_n2'], 1);

--
-- Clean up, here and on the nodes
--
DROP SERVER cc_n1, cc_n2, cc_down, cc_nodb CASCADE;
-- dropping the servers retired colojoin's connections to the nodes
SELECT count(*) FROM node_sessions(:'node1', 0);
SELECT count(*) FROM node_sessions(:'node2', 0);
RESET search_path;
DROP SCHEMA cj_conn CASCADE;
DROP ROLE cc_user;
SELECT dblink_exec(:'node1', 'DROP SCHEMA cj_conn CASCADE');
SELECT dblink_exec(:'node2', 'DROP SCHEMA cj_conn CASCADE');
SELECT dblink_exec(:'node1', 'DROP ROLE colojoin_pw');
SELECT dblink_exec(:'node2', 'DROP ROLE colojoin_pw');
DROP EXTENSION dblink;
