--
-- reference_tables: a table with one partition copied to every node
-- (colojoin.create_reference_table) joins sharded tables in the tasks,
-- reading the copy on each task's node: nothing moves.  Every query is
-- compared with the same query on plain local tables; writes reach every
-- copy.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS colojoin CASCADE;
CREATE EXTENSION IF NOT EXISTS dblink;
DROP SCHEMA IF EXISTS rt CASCADE;
RESET client_min_messages;
-- The plans asserted here are those of partitions whose size the planner
-- does not know (colojoin.remote_size_lifetime = 0; suite remote_sizes
-- covers the sizes read from the nodes).
SET colojoin.remote_size_lifetime = 0;

\getenv node1_port CJ_NODE1_PORT
\getenv node2_port CJ_NODE2_PORT
\getenv node3_port CJ_NODE3_PORT

SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
	'SET client_min_messages = warning; DROP SCHEMA IF EXISTS rt CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;

CREATE SERVER rt_n1 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node1_port', dbname 'colojoin_regress');
CREATE SERVER rt_n2 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node2_port', dbname 'colojoin_regress');
CREATE SERVER rt_n3 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node3_port', dbname 'colojoin_regress');
CREATE USER MAPPING FOR CURRENT_USER SERVER rt_n1;
CREATE USER MAPPING FOR CURRENT_USER SERVER rt_n2;
CREATE USER MAPPING FOR CURRENT_USER SERVER rt_n3;

CREATE SCHEMA rt;
CREATE SCHEMA rt_l;
SET search_path = rt, public;

CREATE TABLE orders (o_id int, o_cust int, o_nation int, o_total numeric) PARTITION BY HASH (o_id);
SELECT colojoin.create_shards('orders', ARRAY['rt_n1', 'rt_n2', 'rt_n3'], 6);
CREATE TABLE lines (l_order int, l_no int, l_qty int) PARTITION BY HASH (l_order);
SELECT colojoin.create_shards('lines', NULL, colocate_with => 'orders');
-- the reference table: any key, one partition, a copy on each server
CREATE TABLE nation (n_id int, n_name text, n_region int) PARTITION BY HASH (n_id);
SELECT colojoin.create_reference_table('nation', ARRAY['rt_n1', 'rt_n2', 'rt_n3']);
SELECT leaf, node, is_replica, state FROM colojoin.shards WHERE table_name = 'nation'::regclass ORDER BY node;
-- one not on every node
CREATE TABLE region (r_id int, r_name text) PARTITION BY HASH (r_id);
SELECT colojoin.create_reference_table('region', ARRAY['rt_n1', 'rt_n2']);

CREATE TABLE rt_l.orders (o_id int, o_cust int, o_nation int, o_total numeric);
CREATE TABLE rt_l.lines (l_order int, l_no int, l_qty int);
CREATE TABLE rt_l.nation (n_id int, n_name text, n_region int);
CREATE TABLE rt_l.region (r_id int, r_name text);
INSERT INTO rt_l.orders SELECT g, g % 50, CASE WHEN g % 13 = 0 THEN NULL ELSE g % 30 END, g * 1.5
	FROM generate_series(1, 2000) g;
INSERT INTO rt_l.lines SELECT o, n, (o + n) % 9 FROM generate_series(1, 2000) o, generate_series(1, 3) n
	WHERE o % 4 <> 0;
INSERT INTO rt_l.nation SELECT g, 'nation ' || g, g % 5 FROM generate_series(0, 24) g;
INSERT INTO rt_l.region SELECT g, 'region ' || g FROM generate_series(0, 4) g;
-- loading goes to every copy
INSERT INTO orders SELECT * FROM rt_l.orders;
INSERT INTO lines SELECT * FROM rt_l.lines;
INSERT INTO nation SELECT * FROM rt_l.nation;
INSERT INTO region SELECT * FROM rt_l.region;

-- every copy of a reference table holds the same rows
CREATE FUNCTION copies_agree(t regclass) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	r record;
	d text;
	first text;
	n int := 0;
BEGIN
	FOR r IN SELECT s.remote_relation,
			(SELECT option_value FROM pg_options_to_table(fs.srvoptions) WHERE option_name = 'port') AS port
		FROM colojoin.shards s JOIN pg_foreign_server fs ON fs.srvname = s.node
		WHERE s.table_name = t ORDER BY s.node
	LOOP
		SELECT x INTO d FROM dblink(format('host=127.0.0.1 port=%s dbname=colojoin_regress', r.port),
			format('SELECT count(*) || '':'' || md5(string_agg(y::text, '','' ORDER BY y::text)) FROM %s y',
				   r.remote_relation)) AS q(x text);
		IF first IS NULL THEN
			first := d;
		ELSIF d IS DISTINCT FROM first THEN
			RETURN 'copies differ';
		END IF;
		n := n + 1;
	END LOOP;
	RETURN format('%s copies agree', n);
END $$;
SELECT copies_agree('nation'), copies_agree('region');

-- check(q): the query on the sharded tables and on the local twins (the
-- same text with schema rt_l first) give the same rows; and what the plan is
CREATE FUNCTION chk(q text, OUT same boolean, OUT nrows bigint, OUT plan text)
LANGUAGE plpgsql AS $$
DECLARE
	a text[];
	b text[];
	line text;
BEGIN
	EXECUTE format('SELECT array_agg(x::text ORDER BY x::text) FROM (%s) x', q) INTO a;
	SET LOCAL search_path = rt_l, public;
	EXECUTE format('SELECT array_agg(x::text ORDER BY x::text) FROM (%s) x', q) INTO b;
	SET LOCAL search_path = rt, public;
	same := a IS NOT DISTINCT FROM b;
	nrows := coalesce(cardinality(a), 0);
	plan := 'not on the nodes';
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		IF line ~ 'Strategy:.*with reference table' AND line !~ 'moved|broadcast|repartition' THEN
			plan := 'on the nodes, reference read in place';
		ELSIF line ~ 'Strategy:' AND plan = 'not on the nodes' THEN
			plan := 'on the nodes: ' || regexp_replace(trim(line), '^Strategy: ', '');
		END IF;
	END LOOP;
END $$;

SELECT label, (chk(q)).* FROM (VALUES
	('inner join', 'SELECT o_id, n_name FROM orders JOIN nation ON n_id = o_nation WHERE o_cust < 5'),
	('left join, the reference nullable', 'SELECT o_id, n_name FROM orders LEFT JOIN nation ON n_id = o_nation WHERE o_cust = 3'),
	('semi join', 'SELECT o_id FROM orders WHERE EXISTS (SELECT FROM nation WHERE n_id = o_nation AND n_region = 2)'),
	('anti join', 'SELECT o_id FROM orders WHERE NOT EXISTS (SELECT FROM nation WHERE n_id = o_nation AND n_region = 2)'),
	('colocated tables and a reference', 'SELECT o_id, l_no, n_name FROM orders JOIN lines ON l_order = o_id JOIN nation ON n_id = o_nation WHERE l_qty = 3'),
	('two references', 'SELECT o_id, n_name, r_name FROM orders JOIN nation ON n_id = o_nation JOIN region ON r_id = n_region WHERE o_cust = 7'),
	('aggregate by a reference column', 'SELECT n_name, count(*), sum(o_total) FROM orders JOIN nation ON n_id = o_nation GROUP BY n_name'),
	('aggregate by the reference''s key', 'SELECT n_id, count(*) FROM orders JOIN nation ON n_id = o_nation GROUP BY n_id'),
	('aggregate by the fact''s key', 'SELECT o_id, count(*) FROM orders JOIN lines ON l_order = o_id JOIN nation ON n_id = o_nation GROUP BY o_id'),
	('a non-equi join', 'SELECT count(*) FROM orders JOIN nation ON n_id < o_nation WHERE o_cust = 1'),
	('the reference preserved: not read in place', 'SELECT n_id, o_id FROM nation LEFT JOIN orders ON o_nation = n_id AND o_cust = 2'),
	('full join: not read in place', 'SELECT n_id, o_id FROM nation FULL JOIN orders ON o_nation = n_id AND o_cust = 2 WHERE coalesce(o_cust, 2) = 2'),
	('reference on fewer nodes: moved or left to PostgreSQL', 'SELECT o_id, r_name FROM orders JOIN region ON r_id = o_cust % 5 WHERE o_cust < 3'),
	('the reference alone', 'SELECT n_region, count(*) FROM nation GROUP BY 1')
) v(label, q), LATERAL chk(v.q);

EXPLAIN (COSTS OFF) SELECT o_id, n_name FROM orders JOIN nation ON n_id = o_nation WHERE o_cust < 5;
SELECT * FROM colojoin.colocation('orders', 'nation');
SELECT * FROM colojoin.colocation('region', 'orders');

-- writes reach every copy; joins see them
UPDATE nation SET n_name = n_name || '!' WHERE n_region = 1;
UPDATE rt_l.nation SET n_name = n_name || '!' WHERE n_region = 1;
DELETE FROM nation WHERE n_id = 24;
DELETE FROM rt_l.nation WHERE n_id = 24;
INSERT INTO nation VALUES (30, 'new nation', 0);
INSERT INTO rt_l.nation VALUES (30, 'new nation', 0);
UPDATE orders SET o_nation = 30 WHERE o_id % 100 = 1;
UPDATE rt_l.orders SET o_nation = 30 WHERE o_id % 100 = 1;
SELECT copies_agree('nation');
SELECT (chk('SELECT n_name, count(*) FROM orders JOIN nation ON n_id = o_nation GROUP BY n_name')).*;
BEGIN;
INSERT INTO nation VALUES (31, 'in a transaction', 3);
UPDATE orders SET o_nation = 31 WHERE o_id = 5;
SELECT o_id, n_name FROM orders JOIN nation ON n_id = o_nation WHERE o_id = 5;
ROLLBACK;
SELECT copies_agree('nation');

DROP SCHEMA rt CASCADE;
DROP SCHEMA rt_l CASCADE;
DROP SERVER rt_n1, rt_n2, rt_n3 CASCADE;
