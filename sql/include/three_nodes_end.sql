--
-- three_nodes_end.sql: the end shared by the suites that start with
-- three_nodes_begin.sql, after they dropped their own schemas here and on
-- the nodes: rows_of, the servers (and what still uses them), the extensions the
-- suite created, and a check that nothing named after prefix is left.
--
SET client_min_messages = warning;
DROP FUNCTION public.rows_of(text, text);
DROP SERVER :"srv1", :"srv2", :"srv3" CASCADE;
\if :own_dblink
DROP EXTENSION dblink;
\endif
\if :own_colojoin
DROP EXTENSION colojoin;
\endif
\if :own_fdw
DROP EXTENSION postgres_fdw;
\endif
RESET client_min_messages;
SELECT count(*) AS leftovers FROM pg_namespace WHERE starts_with(nspname, :'prefix');
SELECT count(*) AS leftovers FROM pg_foreign_server WHERE starts_with(srvname, :'prefix');
