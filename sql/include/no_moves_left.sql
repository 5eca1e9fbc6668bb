--
-- no_moves_left.sql: no temporary table of a move is left on the nodes
-- (the suites that move rows end with it, before their clean-up).
--
SELECT n, (SELECT count(*) FROM dblink(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
		'SELECT relname FROM pg_class WHERE relname LIKE ''colojoin_move%''') AS t(relname name)) AS leftover_moves
FROM (VALUES (1, :'node1_port'), (2, :'node2_port'), (3, :'node3_port')) v(n, p);
