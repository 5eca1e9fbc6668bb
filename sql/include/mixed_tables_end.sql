--
-- mixed_tables_end.sql: drops what mixed_tables_begin.sql made (and the
-- suite's helpers in schema prefix), here and on the nodes, before
-- three_nodes_end.sql.
--
SET client_min_messages = warning;
DROP SCHEMA :"sch_s" CASCADE;
DROP SCHEMA :"sch_l" CASCADE;
DROP SCHEMA :"prefix" CASCADE;
SELECT dblink_exec(:'prefix' || '_n' || n, format('DROP SCHEMA %I CASCADE', :'sch_r'))
FROM generate_series(1, 3) n;
SELECT dblink_disconnect(:'prefix' || '_n' || n) FROM generate_series(1, 3) n;
