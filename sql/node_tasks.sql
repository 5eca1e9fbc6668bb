--
-- node_tasks: a join that moves rows runs one task per node, over all the
-- classes that node holds (each table read in place as a UNION ALL of its
-- classes under the coordinator's column names), since its tasks would
-- run one after another on the node's one connection anyway.  Tables
-- declared by hand, with leaves whose remote tables order and name their
-- columns otherwise; one whose leaves declare another type than the remote
-- column keeps a task per class.  Every answer is compared with plain
-- local tables.
--
\set prefix cj_nt
\i sql/include/three_nodes_begin.sql

CREATE SCHEMA cj_nt;
CREATE SCHEMA cj_nt_local;
SET search_path = cj_nt, public;

-- on the nodes: f's leaves as colojoin makes them, g's with columns in
-- another order and other names, h's with a bigint column declared int
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
	'SET client_min_messages = warning; DROP SCHEMA IF EXISTS cj_nt CASCADE; CREATE SCHEMA cj_nt')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
	format('CREATE TABLE cj_nt.g_%s ("Remote W" text, extra int, rk int, rr int);
	        CREATE TABLE cj_nt.h_%s (k int, big bigint)', r, r))
FROM (VALUES (0, :'node1_port'), (1, :'node2_port'), (2, :'node3_port'),
			 (3, :'node1_port'), (4, :'node2_port'), (5, :'node3_port')) v(r, p);

CREATE TABLE f (k int, r int, v numeric) PARTITION BY HASH (k);
SELECT colojoin.create_shards('f', '{cj_nt_n1,cj_nt_n2,cj_nt_n3}', 6);
CREATE TABLE g (k int, r int, w text) PARTITION BY HASH (k);
CREATE TABLE h (k int, big int) PARTITION BY HASH (k);
DO $$
DECLARE
	r int;
BEGIN
	FOR r IN 0..5 LOOP
		EXECUTE format('CREATE FOREIGN TABLE g_%s PARTITION OF g FOR VALUES WITH (modulus 6, remainder %s)
						SERVER cj_nt_n%s OPTIONS (schema_name %L, table_name %L)', r, r, r % 3 + 1, 'cj_nt', 'g_' || r);
		EXECUTE format('ALTER FOREIGN TABLE g_%s ALTER k OPTIONS (column_name %L), ALTER r OPTIONS (column_name %L),
						ALTER w OPTIONS (column_name %L)', r, 'rk', 'rr', 'Remote W');
		EXECUTE format('CREATE FOREIGN TABLE h_%s PARTITION OF h FOR VALUES WITH (modulus 6, remainder %s)
						SERVER cj_nt_n%s OPTIONS (schema_name %L, table_name %L)', r, r, r % 3 + 1, 'cj_nt', 'h_' || r);
	END LOOP;
END
$$;
CREATE TABLE d (id int, name text) PARTITION BY HASH (id);
SELECT colojoin.create_shards('d', '{cj_nt_n1,cj_nt_n2,cj_nt_n3}', 3);
CREATE TABLE cj_nt_local.f (LIKE cj_nt.f);
CREATE TABLE cj_nt_local.g (LIKE cj_nt.g);
CREATE TABLE cj_nt_local.h (LIKE cj_nt.h);
CREATE TABLE cj_nt_local.d (LIKE cj_nt.d);
INSERT INTO cj_nt_local.f SELECT g, CASE WHEN g % 17 = 0 THEN NULL ELSE g % 40 END, g / 3.0 FROM generate_series(1, 3000) g;
INSERT INTO cj_nt_local.g SELECT g, g % 45, 'w' || (g % 7) FROM generate_series(1, 3000, 2) g;
INSERT INTO cj_nt_local.h SELECT g, g * 1000 FROM generate_series(1, 3000, 3) g;
INSERT INTO cj_nt_local.d SELECT g, 'd' || g FROM generate_series(0, 35) g;
INSERT INTO f SELECT * FROM cj_nt_local.f;
INSERT INTO g SELECT * FROM cj_nt_local.g;
INSERT INTO h SELECT * FROM cj_nt_local.h;
INSERT INTO d SELECT * FROM cj_nt_local.d;

\i sql/include/plan_lines.sql
-- the tasks per node and whether the rows are those of the local tables
CREATE FUNCTION node_check(query text, OUT tasks text, OUT result text)
LANGUAGE plpgsql AS $$
DECLARE
	line text;
	l text[] := rows_of(regexp_replace(query, '^/\*\+[^*]*\*/', ''), 'cj_nt_local');
	s text[] := rows_of(query, 'cj_nt');
BEGIN
	tasks := 'not on the nodes';
	FOR line IN SELECT * FROM plan_lines(query) LOOP
		IF line ~ '^Tasks: ' THEN
			tasks := regexp_replace(line, '^Tasks: ', '');
		END IF;
	END LOOP;
	result := CASE WHEN s = l THEN format('same (%s rows)', cardinality(s))
			  ELSE format('DIFFERENT: %s rows, %s local', cardinality(s), cardinality(l)) END;
END
$$;

SELECT name, (node_check(q)).* FROM (VALUES
	('1 broadcast into one table', '/*+ BroadcastJoin(d) */ SELECT f.k, f.v, d.name FROM f JOIN d ON f.r = d.id'),
	('2 broadcast into a colocated pair, leaves renamed', '/*+ BroadcastJoin(d) */ SELECT f.k, g.w, d.name FROM f JOIN g ON f.k = g.k JOIN d ON g.r = d.id'),
	('3 the same, aggregated', '/*+ BroadcastJoin(d) */ SELECT d.name, count(*), sum(f.v), min(g.w) FROM f JOIN g ON f.k = g.k JOIN d ON g.r = d.id GROUP BY d.name'),
	('4 grouped by the key', '/*+ BroadcastJoin(d) */ SELECT f.k, count(*) FROM f JOIN g ON f.k = g.k JOIN d ON f.r = d.id GROUP BY f.k'),
	('5 left join of the pair, broadcast inner', '/*+ BroadcastJoin(d) */ SELECT f.k, g.w, d.name FROM f LEFT JOIN g ON f.k = g.k LEFT JOIN d ON f.r = d.id'),
	('6 semi and anti joins', '/*+ BroadcastJoin(d) */ SELECT f.k FROM f JOIN d ON f.r = d.id WHERE EXISTS (SELECT FROM g WHERE g.k = f.k) AND NOT EXISTS (SELECT FROM g WHERE g.k = f.k AND g.w = ''w3'')'),
	('7 top rows', '/*+ BroadcastJoin(d) */ SELECT f.k, d.name FROM f JOIN d ON f.r = d.id ORDER BY f.v DESC, f.k LIMIT 7'),
	('8 repartitioned', '/*+ Redistribute(g) */ SELECT f.k, g.k, g.w FROM f JOIN g ON f.k = g.r'),
	('9 declared int, remote bigint: a task per class', '/*+ BroadcastJoin(d) */ SELECT h.k, h.big, d.name FROM h JOIN d ON h.k % 36 = d.id')
) v(name, q) ORDER BY name;

-- EXPLAIN VERBOSE lists every class of a node's task
SELECT regexp_replace(l, ': SELECT .*$', '') AS task
FROM plan_lines('/*+ BroadcastJoin(d) */ SELECT f.k, d.name FROM f JOIN d ON f.r = d.id', 'VERBOSE, COSTS OFF') l
WHERE l ~ '^Task \d+ on ';
SELECT regexp_replace(l, '^Partitions: ', '') AS partitions
FROM plan_lines('/*+ BroadcastJoin(d) */ SELECT f.k, d.name FROM f JOIN d ON f.r = d.id') l
WHERE l ~ '^Partitions: ';

-- INSERT ... SELECT of a join that moves rows (one task per node) into a
-- table colocated with f: the rows land where a local INSERT puts them
CREATE TABLE t (k int, name text) PARTITION BY HASH (k);
SELECT colojoin.create_shards('t', NULL, colocate_with => 'f');
CREATE TABLE cj_nt_local.t (LIKE cj_nt.t);
SELECT tasks FROM node_check('/*+ BroadcastJoin(d) */ SELECT f.k, d.name FROM f JOIN d ON f.r = d.id');
INSERT INTO t SELECT /*+ BroadcastJoin(d) */ f.k, d.name FROM f JOIN d ON f.r = d.id;
INSERT INTO cj_nt_local.t SELECT f.k, d.name FROM cj_nt_local.f f JOIN cj_nt_local.d d ON f.r = d.id;
SELECT result FROM node_check('SELECT k, name FROM t');
-- each row in its key's partition: lookups pruned to the keys' classes
SELECT (node_check(format('SELECT k, name FROM t WHERE k = ANY (%L::int[])',
						  (SELECT array_agg(g)::text FROM generate_series(1, 3000, 37) g)))).*;

--
-- Clean up, here and on the nodes.
--
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA cj_nt CASCADE;
DROP SCHEMA cj_nt_local CASCADE;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
				   'DROP SCHEMA IF EXISTS cj_nt CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
\i sql/include/three_nodes_end.sql
