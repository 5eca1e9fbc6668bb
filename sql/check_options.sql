--
-- check_options: writes through colojoin refuse what PostgreSQL refuses on
-- one table.  A view's WITH CHECK OPTION (LOCAL and CASCADED) holds for
-- routed, batched and INSERT ... SELECT rows and for UPDATE, with
-- PostgreSQL's error; ON CONFLICT (columns) needs a unique index on every
-- leaf, as it needs one on a plain table; a table whose levels order their
-- columns differently routes its rows without leaking descriptors.  Every
-- write is also made to plain local twins (same view, same unique index)
-- and the contents compared.
--
\set prefix cj_wco
\i sql/include/three_nodes_begin.sql
SET colojoin.remote_size_lifetime = 0;

SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
	'SET client_min_messages = warning; DROP SCHEMA IF EXISTS cj_wco_s CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
CREATE SCHEMA cj_wco_s;		-- sharded
CREATE SCHEMA cj_wco_l;		-- plain twins

-- same(name): the sharded table and its twin hold the same rows
CREATE FUNCTION cj_wco_s.same(t text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	s text[] := rows_of(format('SELECT * FROM %I', t), 'cj_wco_s');
	l text[] := rows_of(format('SELECT * FROM %I', t), 'cj_wco_l');
BEGIN
	RETURN CASE WHEN s = l THEN format('same (%s rows)', cardinality(s))
		   ELSE format('differ: sharded %s, local %s', s, l) END;
END
$$;

CREATE TABLE cj_wco_s.base (a int, b int, c text) PARTITION BY HASH (a);
SELECT colojoin.create_shards('cj_wco_s.base', ARRAY[:'srv1', :'srv2', :'srv3'], 6);
CREATE TABLE cj_wco_l.base (a int, b int, c text);
CREATE TABLE cj_wco_s.src (a int, b int) PARTITION BY HASH (a);
SELECT colojoin.create_shards('cj_wco_s.src', ARRAY[:'srv1', :'srv2', :'srv3'], 6, 'cj_wco_s.base');
CREATE TABLE cj_wco_l.src (a int, b int);
INSERT INTO cj_wco_s.src SELECT g, g - 5 FROM generate_series(1, 20) g;
INSERT INTO cj_wco_l.src SELECT g, g - 5 FROM generate_series(1, 20) g;

-- the same views over both: b > 0 cascaded; b < 10 local over it; a
-- security-barrier one with a check
CREATE FUNCTION cj_wco_s.views(sch text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('CREATE VIEW %I.rw_view AS SELECT * FROM %I.base WHERE b > 0 WITH CHECK OPTION', sch, sch);
	EXECUTE format('CREATE VIEW %I.rw_local AS SELECT * FROM %I.rw_view WHERE b < 10 WITH LOCAL CHECK OPTION', sch, sch);
	EXECUTE format('CREATE VIEW %I.rw_nocheck AS SELECT * FROM %I.rw_view WHERE b < 10', sch, sch);
	EXECUTE format('CREATE VIEW %I.rw_cascaded AS SELECT * FROM %I.rw_nocheck WHERE a < 100 WITH CASCADED CHECK OPTION', sch, sch);
	EXECUTE format('CREATE VIEW %I.rw_barrier WITH (security_barrier) AS SELECT * FROM %I.base WHERE b > 0 WITH CHECK OPTION', sch, sch);
END
$$;
SELECT cj_wco_s.views('cj_wco_s'), cj_wco_s.views('cj_wco_l');

-- write(sql): run sql on the sharded schema and on the twins; what each said
CREATE FUNCTION cj_wco_s.write(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	sch text;
	said text[] := '{}';
	n bigint;
BEGIN
	FOREACH sch IN ARRAY ARRAY['cj_wco_s', 'cj_wco_l'] LOOP
		BEGIN
			PERFORM set_config('search_path', sch || ', public', true);
			EXECUTE sql;
			GET DIAGNOSTICS n = ROW_COUNT;
			said := said || ('ok ' || n);
		EXCEPTION WHEN OTHERS THEN
			said := said || (SQLSTATE || ' ' || SQLERRM);
		END;
	END LOOP;
	PERFORM set_config('search_path', 'public', true);
	RETURN CASE WHEN said[1] = said[2] THEN 'both: ' || said[1]
		   ELSE format('sharded: %s; local: %s', said[1], said[2]) END;
END
$$;

-- the error and its DETAIL, as PostgreSQL gives them
SET search_path = cj_wco_s, public;
INSERT INTO rw_view VALUES (1, -5, 'x');
INSERT INTO rw_local VALUES (2, 50, 'x');
RESET search_path;

-- routed rows, one and several (a batch), INSERT ... SELECT, COPY-sized
SELECT cj_wco_s.write('INSERT INTO rw_view VALUES (1, 5, ''one'')');
SELECT cj_wco_s.write('INSERT INTO rw_view VALUES (0, 5, ''ok''), (2, -1, ''bad'')');
SELECT cj_wco_s.write('INSERT INTO rw_view VALUES (3, 0, ''zero'')');
SELECT cj_wco_s.write('INSERT INTO rw_view VALUES (4, NULL, ''null'')');
SELECT cj_wco_s.write('INSERT INTO rw_view SELECT a, b, ''src'' FROM src');
SELECT cj_wco_s.write('INSERT INTO rw_view SELECT a + 100, b + 5, ''src'' FROM src');
SELECT cj_wco_s.write('INSERT INTO rw_view SELECT g, g, ''many'' FROM generate_series(200, 2200) g');
SELECT cj_wco_s.write('INSERT INTO rw_view SELECT g, 2300 - g, ''many'' FROM generate_series(2200, 2400) g');
SELECT cj_wco_s.same('base');
-- RETURNING gives the rows in the order they came, whichever leaf takes them
SET search_path = cj_wco_s, public;
INSERT INTO base VALUES (901, 1, 'r1'), (902, 2, 'r2'), (903, 3, 'r3'),
	(904, 4, 'r4'), (905, 5, 'r5'), (906, 6, 'r6') RETURNING a, c;
SET search_path = cj_wco_l, public;
INSERT INTO base VALUES (901, 1, 'r1'), (902, 2, 'r2'), (903, 3, 'r3'),
	(904, 4, 'r4'), (905, 5, 'r5'), (906, 6, 'r6') RETURNING a, c;
RESET search_path;
SELECT cj_wco_s.same('base');
-- LOCAL checks its own view only; CASCADED every view below it
SELECT cj_wco_s.write('INSERT INTO rw_local VALUES (5, 9, ''local'')');
SELECT cj_wco_s.write('INSERT INTO rw_local VALUES (6, 10, ''local'')');
SELECT cj_wco_s.write('INSERT INTO rw_local VALUES (7, -1, ''local'')');
SELECT cj_wco_s.write('INSERT INTO rw_cascaded VALUES (8, 9, ''cascaded'')');
SELECT cj_wco_s.write('INSERT INTO rw_cascaded VALUES (9, 20, ''cascaded'')');
SELECT cj_wco_s.write('INSERT INTO rw_cascaded VALUES (100, 5, ''cascaded'')');
SELECT cj_wco_s.write('INSERT INTO rw_nocheck VALUES (10, 20, ''nocheck'')');
SELECT cj_wco_s.write('INSERT INTO rw_nocheck VALUES (11, -20, ''nocheck'')');
SELECT cj_wco_s.write('INSERT INTO rw_barrier VALUES (12, -1, ''barrier'')');
SELECT cj_wco_s.write('INSERT INTO rw_barrier VALUES (12, 1, ''barrier'') RETURNING *');
SELECT cj_wco_s.same('base');
-- UPDATE and DELETE through the views
SELECT cj_wco_s.write('UPDATE rw_view SET b = b - 10 WHERE a = 1');
SELECT cj_wco_s.write('UPDATE rw_view SET b = b + 5 WHERE a < 20');
SELECT cj_wco_s.write('UPDATE rw_local SET b = b + 5 WHERE a < 20');
SELECT cj_wco_s.write('UPDATE rw_barrier SET b = -b WHERE a = 12');
SELECT cj_wco_s.write('UPDATE rw_barrier SET c = ''changed'' WHERE a = 12');
SELECT cj_wco_s.write('DELETE FROM rw_barrier WHERE c = ''many'' AND a > 2100');
SELECT cj_wco_s.same('base');

-- Checked on the rows as the nodes stored them: a BEFORE trigger of the
-- remote table (a := a + 10) decides, as it does through postgres_fdw.
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', :'node1_port'), $sql$
	CREATE TABLE cj_wco_s.trig_r (a int, b int);
	CREATE FUNCTION cj_wco_s.plus10() RETURNS trigger LANGUAGE plpgsql AS
		$f$BEGIN NEW.a := NEW.a + 10; RETURN NEW; END$f$;
	CREATE TRIGGER plus10 BEFORE INSERT OR UPDATE ON cj_wco_s.trig_r
		FOR EACH ROW EXECUTE FUNCTION cj_wco_s.plus10()$sql$);
CREATE TABLE cj_wco_s.trig (a int, b int) PARTITION BY RANGE (a);
CREATE FOREIGN TABLE cj_wco_s.trig_0 PARTITION OF cj_wco_s.trig FOR VALUES FROM (0) TO (100)
	SERVER :"srv1" OPTIONS (schema_name 'cj_wco_s', table_name 'trig_r');
CREATE TABLE cj_wco_l.trig (a int, b int);
CREATE FUNCTION cj_wco_l.plus10() RETURNS trigger LANGUAGE plpgsql AS
	$f$BEGIN NEW.a := NEW.a + 10; RETURN NEW; END$f$;
CREATE TRIGGER plus10 BEFORE INSERT OR UPDATE ON cj_wco_l.trig
	FOR EACH ROW EXECUTE FUNCTION cj_wco_l.plus10();
CREATE VIEW cj_wco_s.trig_view AS SELECT * FROM cj_wco_s.trig WHERE a < b WITH CHECK OPTION;
CREATE VIEW cj_wco_l.trig_view AS SELECT * FROM cj_wco_l.trig WHERE a < b WITH CHECK OPTION;
SET search_path = cj_wco_s, public;
INSERT INTO trig_view VALUES (0, 5);
RESET search_path;
SELECT cj_wco_s.write('INSERT INTO trig_view VALUES (0, 5)');
SELECT cj_wco_s.write('INSERT INTO trig_view VALUES (0, 15)');
SELECT cj_wco_s.write('INSERT INTO trig_view VALUES (1, 20), (2, 30) RETURNING *');
SELECT cj_wco_s.write('INSERT INTO trig_view VALUES (3, 40), (4, 5)');
SELECT cj_wco_s.same('trig');

-- ON CONFLICT (a): a plain table needs a unique index on a; so does every
-- leaf of a sharded one, on every node that holds it
SELECT cj_wco_s.write('INSERT INTO base VALUES (1, 1, ''up'') ON CONFLICT (a) DO NOTHING');
SET search_path = cj_wco_s, public;
INSERT INTO base VALUES (1, 1, 'up') ON CONFLICT (a) DO NOTHING;
RESET search_path;
SELECT cj_wco_s.write('DELETE FROM base WHERE a >= 200');
SELECT cj_wco_s.write('DELETE FROM base WHERE a IN (SELECT a FROM base GROUP BY a HAVING count(*) > 1)');
CREATE UNIQUE INDEX ON cj_wco_l.base (a);
-- only some leaves have the index: still refused, whichever rows come
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', :'node1_port'),
	'CREATE UNIQUE INDEX ON cj_wco_s.base_p0 (a)');
SELECT cj_wco_s.write('INSERT INTO base VALUES (1, 1, ''up'') ON CONFLICT (a) DO UPDATE SET c = excluded.c');
-- every leaf: the upsert runs on the nodes and agrees with the plain table
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', o.port),
	format('CREATE UNIQUE INDEX IF NOT EXISTS %I ON %s (a)',
		   replace(s.remote_relation, 'cj_wco_s.', '') || '_a_key', s.remote_relation))
FROM colojoin.shards s
	 JOIN pg_foreign_server fs ON fs.srvname = s.node
	 CROSS JOIN LATERAL (SELECT option_value AS port FROM pg_options_to_table(fs.srvoptions)
						 WHERE option_name = 'port') o
WHERE s.table_name = 'cj_wco_s.base'::regclass AND s.leaf <> 'cj_wco_s.base_p0'::regclass
ORDER BY s.leaf;
SELECT cj_wco_s.write('INSERT INTO base VALUES (1, 1, ''up'') ON CONFLICT (a) DO UPDATE SET c = excluded.c');
SELECT cj_wco_s.write('INSERT INTO base SELECT a, b, ''from src'' FROM src ON CONFLICT (a) DO UPDATE SET b = excluded.b, c = excluded.c');
SELECT cj_wco_s.write('INSERT INTO base SELECT a + 1, b, ''again'' FROM src ON CONFLICT (a) DO NOTHING');
SELECT cj_wco_s.write('INSERT INTO base VALUES (500, 1, ''new''), (1, 2, ''old'') ON CONFLICT (a) DO UPDATE SET b = base.b + excluded.b WHERE base.c <> ''never''');
SELECT cj_wco_s.write('INSERT INTO base VALUES (600, 1, ''x'') ON CONFLICT DO NOTHING');
-- a conflict target without the partition key is refused (each leaf would
-- check uniqueness among its own rows only)
SELECT cj_wco_s.write('INSERT INTO base VALUES (1, 1, ''up'') ON CONFLICT (b) DO NOTHING');
SELECT cj_wco_s.same('base');
-- an upsert through a view with a check option: checked on the new rows
SELECT cj_wco_s.write('INSERT INTO rw_view VALUES (700, -1, ''v'') ON CONFLICT (a) DO NOTHING');
SELECT cj_wco_s.write('INSERT INTO rw_view VALUES (700, 1, ''v'') ON CONFLICT (a) DO NOTHING');
SELECT cj_wco_s.same('base');

-- Levels that order their columns differently (a, b, c) -> (c, a, b) ->
-- foreign (b, c, a): rows route right, and no descriptor is left pinned
-- (PostgreSQL would warn of a TupleDesc reference leak at commit).
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
	'CREATE TABLE cj_wco_s.leaf_r (b int, c text, a int)')
FROM unnest(ARRAY[:'node1_port', :'node2_port']) p;
CREATE TABLE cj_wco_s.parent_tbl (a int, b int, c text) PARTITION BY RANGE (a);
CREATE TABLE cj_wco_s.mid (c text, a int, b int) PARTITION BY HASH (a);
ALTER TABLE cj_wco_s.parent_tbl ATTACH PARTITION cj_wco_s.mid FOR VALUES FROM (0) TO (100);
CREATE FOREIGN TABLE cj_wco_s.leaf0 (b int, c text, a int) SERVER :"srv1"
	OPTIONS (schema_name 'cj_wco_s', table_name 'leaf_r');
CREATE FOREIGN TABLE cj_wco_s.leaf1 (b int, c text, a int) SERVER :"srv2"
	OPTIONS (schema_name 'cj_wco_s', table_name 'leaf_r');
ALTER TABLE cj_wco_s.mid ATTACH PARTITION cj_wco_s.leaf0 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
ALTER TABLE cj_wco_s.mid ATTACH PARTITION cj_wco_s.leaf1 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE TABLE cj_wco_l.parent_tbl (a int, b int, c text);
SELECT cj_wco_s.write('INSERT INTO parent_tbl (a) VALUES (1), (5)');
SELECT cj_wco_s.write('INSERT INTO parent_tbl VALUES (2, 3, ''x''), (7, NULL, ''y'')');
SELECT cj_wco_s.write('INSERT INTO parent_tbl (c, a) SELECT ''s'' || a, a FROM src WHERE a < 5');
SELECT cj_wco_s.same('parent_tbl');

SET client_min_messages = warning;
DROP SCHEMA cj_wco_s, cj_wco_l CASCADE;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
	'SET client_min_messages = warning; DROP SCHEMA IF EXISTS cj_wco_s CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
RESET client_min_messages;
\i sql/include/three_nodes_end.sql
