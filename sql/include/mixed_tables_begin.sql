--
-- mixed_tables_begin.sql: after three_nodes_begin.sql, the sharded tables
-- and plain twins shared by the suites column_scope and windows.  Creates
-- schemas prefix (for the suite's helpers), prefix_s (the sharded tables)
-- and prefix_l (plain tables holding the same rows), schema prefix_r on
-- the nodes and dblink connections prefix_n1..prefix_n3.  a: hash 8 on a
-- bigint k; b: hash 8 on an int k, colocated with a; lst, lst2: list on a
-- text region, their regions on different nodes; NULL keys in a and b.
-- mixed_tables_end.sql drops it all.
--
\set sch_s :prefix '_s'
\set sch_l :prefix '_l'
\set sch_r :prefix '_r'
SELECT set_config('cj_fixture.prefix', :'prefix', false) AS fixture_prefix;
CREATE SCHEMA :"prefix";
CREATE SCHEMA :"sch_s";
CREATE SCHEMA :"sch_l";
SELECT dblink_connect(:'prefix' || '_n' || n,
		format('host=127.0.0.1 port=%s dbname=colojoin_regress', p))
FROM (VALUES (1, :'node1_port'), (2, :'node2_port'), (3, :'node3_port')) v(n, p);
SELECT dblink_exec(:'prefix' || '_n' || n,
		format('DROP SCHEMA IF EXISTS %I CASCADE; CREATE SCHEMA %I', :'sch_r', :'sch_r'))
FROM generate_series(1, 3) n;

-- leaf(parent, leaf, bound, node, cols): leaf of parent, its table on node
CREATE FUNCTION :"prefix".leaf(parent text, leaf text, bound text, node int, cols text)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	p text := current_setting('cj_fixture.prefix');
BEGIN
	PERFORM dblink_exec(p || '_n' || node,
						format('CREATE TABLE %I.%I (%s)', p || '_r', leaf, cols));
	EXECUTE format('CREATE FOREIGN TABLE %I.%I PARTITION OF %I.%I %s '
				   'SERVER %I OPTIONS (schema_name %L)',
				   p || '_s', leaf, p || '_s', parent, bound, p || '_n' || node, p || '_r');
END
$$;

CREATE TABLE :"sch_s".a (k bigint, v int) PARTITION BY HASH (k);
CREATE TABLE :"sch_s".b (k int, w int) PARTITION BY HASH (k);
SELECT :"prefix".leaf(t, t || r, format('FOR VALUES WITH (MODULUS 8, REMAINDER %s)', r), r % 3 + 1,
				  CASE t WHEN 'a' THEN 'k bigint, v int' ELSE 'k int, w int' END)
FROM (VALUES ('a'), ('b')) tabs(t), generate_series(0, 7) r;
CREATE TABLE :"sch_s".lst (region text, x int) PARTITION BY LIST (region);
CREATE TABLE :"sch_s".lst2 (region text, y int) PARTITION BY LIST (region);
SELECT :"prefix".leaf('lst', 'lst_' || reg, format('FOR VALUES IN (%L)', reg), n, 'region text, x int')
FROM (VALUES ('eu', 1), ('us', 2), ('asia', 3)) v(reg, n);
SELECT :"prefix".leaf('lst2', 'lst2_' || reg, format('FOR VALUES IN (%L)', reg), n, 'region text, y int')
FROM (VALUES ('eu', 2), ('us', 3), ('asia', 1)) v(reg, n);
CREATE TABLE :"sch_l".a (k bigint, v int);
CREATE TABLE :"sch_l".b (k int, w int);
CREATE TABLE :"sch_l".lst (region text, x int);
CREATE TABLE :"sch_l".lst2 (region text, y int);
INSERT INTO :"sch_l".a SELECT CASE WHEN g % 23 = 0 THEN NULL ELSE g % 120 END, g FROM generate_series(1, 300) g;
INSERT INTO :"sch_l".b SELECT CASE WHEN g % 19 = 0 THEN NULL ELSE (g * 3) % 150 END, g FROM generate_series(1, 300) g;
INSERT INTO :"sch_l".lst SELECT (ARRAY['eu', 'us', 'asia'])[g % 3 + 1], g FROM generate_series(1, 30) g;
INSERT INTO :"sch_l".lst2 SELECT (ARRAY['eu', 'us'])[g % 2 + 1], g FROM generate_series(1, 20) g;
INSERT INTO :"sch_s".a SELECT * FROM :"sch_l".a;
INSERT INTO :"sch_s".b SELECT * FROM :"sch_l".b;
INSERT INTO :"sch_s".lst SELECT * FROM :"sch_l".lst;
INSERT INTO :"sch_s".lst2 SELECT * FROM :"sch_l".lst2;
