--
-- write_transactions: writes of sharded tables inside real transactions.
-- Every write, whatever its shape, is colojoin's (pushed whole to the
-- nodes, or row by row on its connections), so the writes, reads,
-- savepoints and the commit of one transaction meet in one remote
-- transaction per node.  Each sequence runs on the sharded tables and on
-- plain local twins (psql variable, search_path cj_wt_s or cj_wt_l), and
-- the tables, and every placement of the replicated one, are compared.
--
\set prefix cj_wt
\i sql/include/three_nodes_begin.sql
SET colojoin.remote_size_lifetime = 0;

SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
	'SET client_min_messages = warning; DROP SCHEMA IF EXISTS cj_wt_s, cj_wt_new CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
CREATE SCHEMA cj_wt_s;		-- sharded
CREATE SCHEMA cj_wt_l;		-- plain twins

-- same(name): the sharded table and its twin hold the same rows
CREATE FUNCTION cj_wt_s.same(t text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	s text[] := rows_of(format('SELECT * FROM %I', t), 'cj_wt_s');
	l text[] := rows_of(format('SELECT * FROM %I', t), 'cj_wt_l');
BEGIN
	RETURN CASE WHEN s = l THEN format('same (%s rows)', cardinality(s))
		   ELSE format('differ: sharded %s, local %s', s, l) END;
END
$$;

SET search_path = cj_wt_s;
\i sql/include/placements_agree.sql
RESET search_path;

-- each sequence (psql variable seq) runs on the sharded tables, then on
-- the twins
\set both 'SET search_path = cj_wt_s, public; :seq SET search_path = cj_wt_l, public; :seq RESET search_path;'

CREATE TABLE cj_wt_s.wp (id int, v int, c text) PARTITION BY HASH (id);
SELECT colojoin.create_shards('cj_wt_s.wp', ARRAY[:'srv1', :'srv2', :'srv3'], 3);
CREATE TABLE cj_wt_s.wo (k int, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('cj_wt_s.wo', ARRAY[:'srv1', :'srv2', :'srv3'], 3);
CREATE TABLE cj_wt_s.wr (id int, grp int) PARTITION BY HASH (id);
SELECT colojoin.create_shards('cj_wt_s.wr', ARRAY[:'srv1', :'srv2', :'srv3'], 3);
CREATE TABLE cj_wt_s.o (o_id int, o_amt int) PARTITION BY HASH (o_id);
SELECT colojoin.create_shards('cj_wt_s.o', ARRAY[:'srv1', :'srv2', :'srv3'], 4);
CREATE TABLE cj_wt_s.wl (id int, a int, b int, c text) PARTITION BY HASH (id);
SELECT colojoin.create_shards('cj_wt_s.wl', ARRAY[:'srv1', :'srv2', :'srv3'], 3);
SELECT colojoin.add_replica('cj_wt_s.wl_p0', :'srv3');
SELECT colojoin.add_replica('cj_wt_s.wl_p1', :'srv1');
-- upserts need a unique index on every leaf, as on a plain table
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
	format('CREATE UNIQUE INDEX ON cj_wt_s.wo_p%s (k)', i - 1))
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) WITH ORDINALITY u(p, i);
CREATE TABLE cj_wt_l.wp (id int, v int, c text);
CREATE TABLE cj_wt_l.wo (k int PRIMARY KEY, v int);
CREATE TABLE cj_wt_l.wr (id int, grp int);
CREATE TABLE cj_wt_l.o (o_id int, o_amt int);
CREATE TABLE cj_wt_l.wl (id int, a int, b int, c text);

\set seq 'INSERT INTO wp SELECT g, g % 40, ''c'' || g FROM generate_series(1, 300) g; INSERT INTO wo SELECT g, g FROM generate_series(1, 300, 2) g; INSERT INTO wr SELECT g, g % 7 FROM generate_series(1, 300) g; INSERT INTO o SELECT g, g * 3 FROM generate_series(1, 1000) g; INSERT INTO wl SELECT g, g % 5, g, ''x'' FROM generate_series(1, 300) g;'
:both

-- after ROLLBACK TO SAVEPOINT the next scan of a node keeps its cursor
\set seq 'BEGIN; UPDATE wr SET grp = grp + 1 WHERE id % 3 = 0; SAVEPOINT s1; INSERT INTO wl VALUES (1750, NULL, 0, ''val''); SELECT count(*), sum(v) FROM wp; ROLLBACK TO SAVEPOINT s1; INSERT INTO wo (k, v) SELECT o_id, o_amt FROM o WHERE o_id BETWEEN 700 AND 705 ON CONFLICT DO NOTHING; COMMIT;'
:both
SELECT cj_wt_s.same('wr'), cj_wt_s.same('wl'), cj_wt_s.same('wo');

-- a write, rolled back to its savepoint, then a read and a write: commits
\set seq 'BEGIN; SAVEPOINT s1; INSERT INTO wp VALUES (9001, 1, ''E''); ROLLBACK TO SAVEPOINT s1; SELECT count(*) FROM wo; UPDATE wp SET v = v WHERE v = 19; COMMIT;'
:both
SELECT cj_wt_s.same('wp');

-- UPDATE ... FROM a table on another key (row by row), then an upsert and reads
\set seq 'BEGIN; UPDATE wr SET grp = o.o_amt FROM o WHERE o.o_amt = wr.id * 3 AND wr.id < 40; INSERT INTO wo (k, v) SELECT o_id, o_amt FROM o WHERE o_id BETWEEN 1 AND 20 ON CONFLICT (k) DO NOTHING; SELECT count(*) FROM wo; SELECT count(*), sum(grp) FROM wr JOIN wp USING (id); COMMIT;'
:both
SELECT cj_wt_s.same('wr'), cj_wt_s.same('wo');

-- UPDATE and DELETE not on the keys after a write, with volatile
-- functions and subqueries, on a table with replicas; RETURNING
\set seq 'BEGIN; INSERT INTO wl VALUES (5000, 1, 1, ''new''); UPDATE wl SET b = b + 100 + (random() * 0)::int WHERE c = ''x'' AND id % 50 = 0 RETURNING id, b; DELETE FROM wl WHERE a = (SELECT min(grp) FROM wr) AND id % 7 = 0; UPDATE wl SET c = wp.c FROM wp WHERE wp.id = wl.id + 100 AND wl.id < 40; SELECT count(*), sum(b) FROM wl; COMMIT;'
:both
SELECT cj_wt_s.same('wl'), cj_wt_s.placements_agree('cj_wt_s.wl');

-- a key that changes moves the row to its partition, replicas included
\set seq 'BEGIN; UPDATE wl SET id = id + 1 WHERE id < 6 RETURNING id; UPDATE wp SET id = id + 1000 WHERE id BETWEEN 10 AND 14; SELECT count(*) FROM wp WHERE id > 1000; COMMIT;'
:both
SELECT cj_wt_s.same('wl'), cj_wt_s.same('wp'), cj_wt_s.placements_agree('cj_wt_s.wl');
SELECT count(*) AS misplaced FROM cj_wt_s.wp
	WHERE NOT satisfies_hash_partition('cj_wt_s.wp'::regclass, 3,
		substr(tableoid::regclass::text, length(tableoid::regclass::text))::int, id);

-- nested savepoints, each level writing, rolled back in the middle; a
-- PL/pgSQL exception block (a subtransaction) undoes only its own writes
\set seq 'BEGIN; UPDATE wp SET v = v + 1 WHERE id < 50; SAVEPOINT a; DELETE FROM wp WHERE id BETWEEN 50 AND 60; SAVEPOINT b; UPDATE wp SET c = ''b'' || random()::int WHERE id > 250; ROLLBACK TO SAVEPOINT a; SELECT count(*), sum(v) FROM wp; UPDATE wp SET c = ''after'' WHERE id = 55; DO $$ BEGIN UPDATE wp SET v = -1 WHERE id < 10; RAISE EXCEPTION ''undo''; EXCEPTION WHEN raise_exception THEN NULL; END $$; RELEASE SAVEPOINT a; COMMIT;'
:both
SELECT cj_wt_s.same('wp');

-- a rolled back transaction leaves nothing, on any placement
\set seq 'BEGIN; UPDATE wl SET a = a + (random() * 0)::int + 1; DELETE FROM wl WHERE id % 3 = 0; ROLLBACK;'
:both
SELECT cj_wt_s.same('wl'), cj_wt_s.placements_agree('cj_wt_s.wl');

-- a trigger on the coordinator: PostgreSQL's executor fires it, colojoin
-- writes the rows it returns
CREATE FUNCTION public.cj_wt_stamp() RETURNS trigger LANGUAGE plpgsql AS
	$$ BEGIN NEW.c := NEW.c || '!'; RETURN NEW; END $$;
CREATE TRIGGER stamp BEFORE UPDATE ON cj_wt_s.wp FOR EACH ROW EXECUTE FUNCTION public.cj_wt_stamp();
CREATE TRIGGER stamp BEFORE UPDATE ON cj_wt_l.wp FOR EACH ROW EXECUTE FUNCTION public.cj_wt_stamp();
\set seq 'UPDATE wp SET v = v * 2 WHERE id % 25 = 0;'
:both
SELECT cj_wt_s.same('wp');
DROP TRIGGER stamp ON cj_wt_s.wp;
DROP TRIGGER stamp ON cj_wt_l.wp;
-- and on INSERT, into a table with replicas (rows routed by PostgreSQL,
-- written on every placement by colojoin)
CREATE TRIGGER stamp BEFORE INSERT ON cj_wt_s.wl FOR EACH ROW EXECUTE FUNCTION public.cj_wt_stamp();
CREATE TRIGGER stamp BEFORE INSERT ON cj_wt_l.wl FOR EACH ROW EXECUTE FUNCTION public.cj_wt_stamp();
\set seq 'BEGIN; INSERT INTO wl VALUES (1000, 1, 1, ''a''), (1001, 2, 2, ''b''), (1003, 3, 3, NULL); INSERT INTO wl SELECT id + 2000, a, b, c FROM wl WHERE id < 30; SELECT count(*), sum(a), count(c) FROM wl WHERE id >= 1000; COMMIT;'
:both
SELECT cj_wt_s.same('wl'), cj_wt_s.placements_agree('cj_wt_s.wl');
DROP TRIGGER stamp ON cj_wt_s.wl;
DROP TRIGGER stamp ON cj_wt_l.wl;

-- writes inside WITH, and TRUNCATE, among other writes and reads
\set seq 'BEGIN; WITH u AS (UPDATE wp SET v = v + 1 WHERE id < 20 RETURNING *) SELECT count(*), sum(v) FROM u; WITH d AS (DELETE FROM wr WHERE id < 10 RETURNING *) INSERT INTO wo SELECT id + 5000, grp FROM d; SAVEPOINT t; TRUNCATE wl; SELECT count(*) FROM wl; ROLLBACK TO SAVEPOINT t; TRUNCATE wr; INSERT INTO wr SELECT k, v FROM wo WHERE k > 5000; SELECT count(*), sum(grp) FROM wr; COMMIT;'
:both
SELECT cj_wt_s.same('wp'), cj_wt_s.same('wo'), cj_wt_s.same('wr'), cj_wt_s.same('wl'),
	cj_wt_s.placements_agree('cj_wt_s.wl');

-- COPY that colojoin does not route itself (WHERE): PostgreSQL routes
-- the rows, colojoin writes them, on every placement
SET search_path = cj_wt_s, public;
COPY wl FROM STDIN WHERE id > 4000;
4001	1	1	a
3000	2	2	b
4002	\N	3	\N
4003	1	1	a
4006	1	1	a
\.
SET search_path = cj_wt_l, public;
COPY wl FROM STDIN WHERE id > 4000;
4001	1	1	a
3000	2	2	b
4002	\N	3	\N
4003	1	1	a
4006	1	1	a
\.
RESET search_path;
SELECT cj_wt_s.same('wl'), cj_wt_s.placements_agree('cj_wt_s.wl');

-- the one refusal that is postgres_fdw's: a row an UPDATE moves out of a
-- local partition into a foreign one the same UPDATE changes
CREATE TABLE cj_wt_s.mixed (k int, v int) PARTITION BY RANGE (k);
CREATE TABLE cj_wt_s.mixed_local PARTITION OF cj_wt_s.mixed FOR VALUES FROM (0) TO (100);
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', :'node1_port'),
	'CREATE TABLE cj_wt_s.mixed_far (k int, v int)');
CREATE FOREIGN TABLE cj_wt_s.mixed_far PARTITION OF cj_wt_s.mixed FOR VALUES FROM (100) TO (200)
	SERVER :"srv1" OPTIONS (schema_name 'cj_wt_s', table_name 'mixed_far');
INSERT INTO cj_wt_s.mixed VALUES (1, 1), (150, 2);
\set VERBOSITY terse
UPDATE cj_wt_s.mixed SET k = k + 100 WHERE v > 0;
\set VERBOSITY default
SELECT * FROM cj_wt_s.mixed ORDER BY k;

-- a table created and loaded in one transaction, through its own and a
-- colocated table's functions, COPY included
BEGIN;
CREATE SCHEMA cj_wt_new;
CREATE TABLE cj_wt_new.t (k int, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('cj_wt_new.t', ARRAY[:'srv1', :'srv2', :'srv3'], 3);
INSERT INTO cj_wt_new.t SELECT g, g FROM generate_series(1, 30) g;
CREATE TABLE cj_wt_new.u (k int, w int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('cj_wt_new.u', ARRAY[:'srv1', :'srv2', :'srv3'], 3, colocate_with => 'cj_wt_new.t');
INSERT INTO cj_wt_new.u SELECT k, v * 10 FROM cj_wt_new.t WHERE k < 10;
COPY cj_wt_new.u FROM STDIN;
40	400
41	410
\.
SELECT colojoin.add_replica('cj_wt_new.t_p0', :'srv2');
UPDATE cj_wt_new.t SET v = v + 1 WHERE k % 2 = 0;
SELECT count(*), sum(v), sum(w) FROM cj_wt_new.t JOIN cj_wt_new.u USING (k);
COMMIT;
SELECT count(*), sum(v) FROM cj_wt_new.t;
SELECT count(*), sum(w) FROM cj_wt_new.u;
SELECT cj_wt_s.placements_agree('cj_wt_new.t');
-- and rolled back: nothing remains on the nodes
BEGIN;
CREATE TABLE cj_wt_new.gone (k int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('cj_wt_new.gone', ARRAY[:'srv1', :'srv2', :'srv3'], 3);
INSERT INTO cj_wt_new.gone SELECT generate_series(1, 10);
ROLLBACK;
SELECT sum(n) AS tables_left FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p,
	LATERAL dblink(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
		'SELECT count(*) FROM pg_tables WHERE tablename LIKE ''gone%''') AS q(n bigint);

-- an upsert whose rows come from a join that moves rows, first in its
-- transaction (its arbiter is asked of the nodes after the rows are read)
\set seq 'BEGIN; INSERT INTO wo (k, v) SELECT DISTINCT ON (o.o_id) o.o_id + 20000, wr.grp FROM o JOIN wr ON wr.grp = o.o_id ORDER BY o.o_id, wr.grp ON CONFLICT (k) DO UPDATE SET v = excluded.v; COMMIT;'
:both
SELECT cj_wt_s.same('wo');

-- a write pruned to no partition, as the first statement of a session
\c
DELETE FROM cj_wt_s.wp WHERE id = 1 AND id = 2;
UPDATE cj_wt_s.wl SET a = 0 WHERE id IS NULL;

SET client_min_messages = warning;
DROP SCHEMA cj_wt_s, cj_wt_l, cj_wt_new CASCADE;
DROP FUNCTION public.cj_wt_stamp();
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
	'SET client_min_messages = warning; DROP SCHEMA IF EXISTS cj_wt_s, cj_wt_new CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
RESET client_min_messages;
\i sql/include/three_nodes_end.sql
