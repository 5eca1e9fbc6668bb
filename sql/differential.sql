--
-- differential: a query over sharded tables returns exactly what the same
-- query returns over plain local tables holding the same rows, whatever
-- strategy colojoin (or PostgreSQL) chose; and colojoin chooses the
-- colocated strategy exactly where DESIGN.md section 2 says the join is
-- colocated.
--
-- Two schemas hold identically named tables: cj_diff_sharded (partitioned
-- tables whose leaves are postgres_fdw foreign tables on the three nodes)
-- and cj_diff_local (plain tables).  cj_diff.check(label, query, expect)
-- runs the query under each search_path, compares the results as
-- multisets and reports whether EXPLAIN of the sharded run shows the
-- ColocatedJoin scan as expected (expect NULL: the plan is not checked).
--
-- extensions: remember which ones this test creates, to drop only those
\set prefix cj_diff
\i sql/include/three_nodes_begin.sql

CREATE SCHEMA cj_diff;
CREATE SCHEMA cj_diff_sharded;
CREATE SCHEMA cj_diff_local;

CREATE TABLE cj_diff.nodes (n int PRIMARY KEY, port int NOT NULL);
INSERT INTO cj_diff.nodes VALUES (1, :'node1_port'), (2, :'node2_port'), (3, :'node3_port');


-- The remote shard tables live in schema cj_diff_remote of each node.
SELECT dblink_connect('cj_diff_n' || n,
		format('host=127.0.0.1 port=%s dbname=colojoin_regress', port))
FROM cj_diff.nodes ORDER BY n;
SELECT dblink_exec('cj_diff_n' || n,
		'DROP SCHEMA IF EXISTS cj_diff_remote CASCADE; CREATE SCHEMA cj_diff_remote')
FROM cj_diff.nodes ORDER BY n;

--
-- cj_diff.add_leaf: create the node's table (the columns of parent, with
-- their types and collations) and the foreign partition leaf of parent,
-- bound "bound", on node "node".  The way a user of plain postgres_fdw
-- declares shards.
--
CREATE FUNCTION cj_diff.add_leaf(parent regclass, leaf text, bound text, node int)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	cols text;
BEGIN
	SELECT string_agg(format('%I %s%s', a.attname,
							 format_type(a.atttypid, a.atttypmod),
							 CASE WHEN a.attcollation <> t.typcollation
								  THEN ' COLLATE ' || a.attcollation::regcollation::text
								  ELSE '' END),
					  ', ' ORDER BY a.attnum)
	INTO cols
	FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
	WHERE a.attrelid = parent AND a.attnum > 0 AND NOT a.attisdropped;

	PERFORM dblink_exec('cj_diff_n' || node,
						format('CREATE TABLE cj_diff_remote.%I (%s)', leaf, cols));
	EXECUTE format('CREATE FOREIGN TABLE cj_diff_sharded.%I PARTITION OF %s %s '
				   'SERVER %I OPTIONS (schema_name %L, table_name %L)',
				   leaf, parent, bound, 'cj_diff_n' || node, 'cj_diff_remote', leaf);
END
$$;

-- hash leaves: remainders rems of modulus m, remainder r on node placement[r+1]
CREATE FUNCTION cj_diff.add_hash_leaves(parent regclass, prefix text, m int,
										placement int[], rems int[] DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	FOR r IN 0 .. m - 1 LOOP
		CONTINUE WHEN rems IS NOT NULL AND NOT r = ANY (rems);
		PERFORM cj_diff.add_leaf(parent, prefix || '_p' || r,
								 format('FOR VALUES WITH (MODULUS %s, REMAINDER %s)', m, r),
								 placement[r + 1]);
	END LOOP;
END
$$;

--
-- The tables.  Placement of hash classes: remainder r on node r % 3 + 1,
-- the same for every table, so tables of equal moduli are colocated.
--
\set place8 '{1,2,3,1,2,3,1,2}'
\set place4 '{1,2,3,1}'

-- orders and lineitem: bigint keys, 8 hash classes, colocated
CREATE TABLE cj_diff_sharded.orders (o_key bigint, o_cust int, o_status char(1),
	o_total numeric(10,2), o_date date) PARTITION BY HASH (o_key);
SELECT cj_diff.add_hash_leaves('cj_diff_sharded.orders', 'orders', 8, :'place8');
CREATE TABLE cj_diff_sharded.lineitem (l_key bigint, l_line int, l_qty int,
	l_price numeric(10,2), l_flag text) PARTITION BY HASH (l_key);
SELECT cj_diff.add_hash_leaves('cj_diff_sharded.lineitem', 'lineitem', 8, :'place8');

-- shipments: an int4 key, hashed like the int8 keys above, colocated
CREATE TABLE cj_diff_sharded.shipments (s_key int, s_carrier text, s_days int)
	PARTITION BY HASH (s_key);
SELECT cj_diff.add_hash_leaves('cj_diff_sharded.shipments', 'shipments', 8, :'place8');

-- partial: only remainders 0..5 of 8 exist; classes 6 and 7 are empty
CREATE TABLE cj_diff_sharded.partial (p_key bigint, p_val int)
	PARTITION BY HASH (p_key);
SELECT cj_diff.add_hash_leaves('cj_diff_sharded.partial', 'partial', 8, :'place8',
							   '{0,1,2,3,4,5}');

-- a table and a column whose names need quoting everywhere
CREATE TABLE cj_diff_sharded."Weird ""tbl""; DROP" ("Weird ""name""; DROP" bigint,
	"Val" int) PARTITION BY HASH ("Weird ""name""; DROP");
SELECT cj_diff.add_hash_leaves('cj_diff_sharded."Weird ""tbl""; DROP"',
							   'Weird "tbl"; DROP', 8, :'place8');

-- a two-column hash key
CREATE TABLE cj_diff_sharded.mc_a (a int, b text, v int) PARTITION BY HASH (a, b);
SELECT cj_diff.add_hash_leaves('cj_diff_sharded.mc_a', 'mc_a', 4, :'place4');
CREATE TABLE cj_diff_sharded.mc_b (a int, b text, w int) PARTITION BY HASH (a, b);
SELECT cj_diff.add_hash_leaves('cj_diff_sharded.mc_b', 'mc_b', 4, :'place4');

-- a text hash key
CREATE TABLE cj_diff_sharded.tk_a (k text, v int) PARTITION BY HASH (k);
SELECT cj_diff.add_hash_leaves('cj_diff_sharded.tk_a', 'tk_a', 4, :'place4');
CREATE TABLE cj_diff_sharded.tk_b (k text, w int) PARTITION BY HASH (k);
SELECT cj_diff.add_hash_leaves('cj_diff_sharded.tk_b', 'tk_b', 4, :'place4');

-- a text range key in collation "C" (no default partition, so no NULL keys)
CREATE TABLE cj_diff_sharded.tr_a (k text COLLATE "C", v int) PARTITION BY RANGE (k);
CREATE TABLE cj_diff_sharded.tr_b (k text COLLATE "C", w int) PARTITION BY RANGE (k);
SELECT cj_diff.add_leaf(format('cj_diff_sharded.%s', t)::regclass, t || '_' || i, b, n)
FROM (VALUES ('tr_a'), ('tr_b')) tabs(t),
	 (VALUES (0, 'FOR VALUES FROM (MINVALUE) TO (''H'')', 1),
			 (1, 'FOR VALUES FROM (''H'') TO (''a'')', 2),
			 (2, 'FOR VALUES FROM (''a'') TO (''n'')', 3),
			 (3, 'FOR VALUES FROM (''n'') TO (MAXVALUE)', 1)) parts(i, b, n)
ORDER BY t, i;

-- an int range key with a default partition (NULL and out-of-range keys)
CREATE TABLE cj_diff_sharded.rg_a (k int, v int) PARTITION BY RANGE (k);
CREATE TABLE cj_diff_sharded.rg_b (k int, w int) PARTITION BY RANGE (k);
SELECT cj_diff.add_leaf(format('cj_diff_sharded.%s', t)::regclass, t || '_' || i, b, n)
FROM (VALUES ('rg_a'), ('rg_b')) tabs(t),
	 (VALUES (0, 'FOR VALUES FROM (MINVALUE) TO (0)', 1),
			 (1, 'FOR VALUES FROM (0) TO (100)', 2),
			 (2, 'FOR VALUES FROM (100) TO (200)', 3),
			 (3, 'FOR VALUES FROM (200) TO (300)', 1),
			 (4, 'DEFAULT', 2)) parts(i, b, n)
ORDER BY t, i;

-- a list key, NULL in one list
CREATE TABLE cj_diff_sharded.ls_a (k int, region text, v int) PARTITION BY LIST (region);
CREATE TABLE cj_diff_sharded.ls_b (k int, region text, w int) PARTITION BY LIST (region);
SELECT cj_diff.add_leaf(format('cj_diff_sharded.%s', t)::regclass, t || '_' || i, b, n)
FROM (VALUES ('ls_a'), ('ls_b')) tabs(t),
	 (VALUES (0, 'FOR VALUES IN (''north'', ''northeast'')', 1),
			 (1, 'FOR VALUES IN (''south'')', 2),
			 (2, 'FOR VALUES IN (''east'', ''west'')', 3),
			 (3, 'FOR VALUES IN (NULL, ''other'')', 1)) parts(i, b, n)
ORDER BY t, i;

-- two levels: hash on k, then list on cat; all leaves of a hash class on one node
CREATE TABLE cj_diff_sharded.ml_a (k int, cat int, v int) PARTITION BY HASH (k);
CREATE TABLE cj_diff_sharded.ml_b (k int, cat int, w int) PARTITION BY HASH (k);
DO $$
DECLARE
	t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['ml_a', 'ml_b'] LOOP
		FOR r IN 0 .. 3 LOOP
			EXECUTE format('CREATE TABLE cj_diff_sharded.%I PARTITION OF cj_diff_sharded.%I '
						   'FOR VALUES WITH (MODULUS 4, REMAINDER %s) PARTITION BY LIST (cat)',
						   t || '_p' || r, t, r);
			PERFORM cj_diff.add_leaf(format('cj_diff_sharded.%I', t || '_p' || r)::regclass,
									 t || '_p' || r || '_' || l, b, r % 3 + 1)
			FROM (VALUES (0, 'FOR VALUES IN (NULL, 0, 1)'), (1, 'FOR VALUES IN (2, 3)'),
						 (2, 'DEFAULT')) lists(l, b);
		END LOOP;
	END LOOP;
END
$$;

-- not colocated: classes 1 and 6 of pl_b sit on other nodes than pl_a's
CREATE TABLE cj_diff_sharded.pl_a (k bigint, v int) PARTITION BY HASH (k);
SELECT cj_diff.add_hash_leaves('cj_diff_sharded.pl_a', 'pl_a', 8, :'place8');
CREATE TABLE cj_diff_sharded.pl_b (k bigint, w int) PARTITION BY HASH (k);
SELECT cj_diff.add_hash_leaves('cj_diff_sharded.pl_b', 'pl_b', 8, '{1,3,3,1,2,3,2,2}');

-- not colocated with orders: modulus 4
CREATE TABLE cj_diff_sharded.m4 (k bigint, v int) PARTITION BY HASH (k);
SELECT cj_diff.add_hash_leaves('cj_diff_sharded.m4', 'm4', 4, :'place4');

-- The same tables, plain and local.
DO $$
DECLARE
	t regclass;
BEGIN
	FOR t IN SELECT c.oid FROM pg_class c
			 WHERE c.relnamespace = 'cj_diff_sharded'::regnamespace
			   AND c.relkind = 'p' AND NOT c.relispartition
	LOOP
		EXECUTE format('CREATE TABLE cj_diff_local.%I (LIKE %s)',
					   (SELECT relname FROM pg_class WHERE oid = t), t);
	END LOOP;
END
$$;
SELECT c.relname, count(*) AS leaves
FROM pg_class c JOIN pg_partition_tree(c.oid) pt ON pt.isleaf
WHERE c.relnamespace = 'cj_diff_sharded'::regnamespace AND c.relkind = 'p'
  AND NOT c.relispartition
GROUP BY c.relname ORDER BY c.relname;
SELECT relname FROM pg_class
WHERE relnamespace = 'cj_diff_local'::regnamespace AND relkind = 'r' ORDER BY relname;

--
-- The rows: deterministic, with NULL keys, duplicate keys, negative keys and
-- keys that have no partner in the other table.  Loaded into the local
-- tables, then copied into the sharded ones (postgres_fdw routes each row
-- to its partition).
--
INSERT INTO cj_diff_local.orders
SELECT CASE WHEN g % 29 = 0 THEN NULL ELSE g % 250 - 19 END, g % 17,
	   (ARRAY['F', 'O', 'P'])[g % 3 + 1], (g * 7.25) % 1000, date '2024-01-01' + g % 90
FROM generate_series(1, 300) g;
INSERT INTO cj_diff_local.lineitem
SELECT CASE WHEN g % 31 = 0 THEN NULL ELSE (g * 7) % 270 - 19 END, g % 5 + 1, g % 23,
	   (g * 3.5) % 500, CASE WHEN g % 37 = 0 THEN NULL ELSE (ARRAY['A', 'N', 'R'])[g % 3 + 1] END
FROM generate_series(1, 600) g;
INSERT INTO cj_diff_local.shipments
SELECT CASE WHEN g % 13 = 0 THEN NULL ELSE (g * 3) % 260 - 19 END,
	   (ARRAY['air', 'rail', 'ship', 'truck'])[g % 4 + 1], g % 11
FROM generate_series(1, 250) g;
-- only the rows that have a partition in the sharded table
INSERT INTO cj_diff_local.partial
SELECT k, g % 50
FROM generate_series(1, 300) g,
	 LATERAL (SELECT CASE WHEN g % 23 = 0 THEN NULL ELSE (g * 11) % 240 - 19 END::bigint AS k) s
WHERE EXISTS (SELECT FROM generate_series(0, 5) r
			  WHERE satisfies_hash_partition('cj_diff_sharded.partial'::regclass, 8, r, s.k));
INSERT INTO cj_diff_local."Weird ""tbl""; DROP"
SELECT CASE WHEN g % 19 = 0 THEN NULL ELSE (g * 5) % 230 - 19 END, g
FROM generate_series(1, 200) g;
INSERT INTO cj_diff_local.mc_a
SELECT CASE WHEN g % 23 = 0 THEN NULL ELSE g % 20 END,
	   CASE WHEN g % 19 = 0 THEN NULL ELSE 'x' || g % 7 END, g
FROM generate_series(1, 250) g;
INSERT INTO cj_diff_local.mc_b
SELECT CASE WHEN g % 17 = 0 THEN NULL ELSE (g * 3) % 22 END,
	   CASE WHEN g % 13 = 0 THEN NULL ELSE 'x' || (g * 5) % 8 END, g
FROM generate_series(1, 250) g;
INSERT INTO cj_diff_local.tk_a
SELECT CASE WHEN g % 21 = 0 THEN NULL ELSE 'k' || g % 60 END, g
FROM generate_series(1, 200) g;
INSERT INTO cj_diff_local.tk_b
SELECT CASE WHEN g % 16 = 0 THEN NULL ELSE 'k' || (g * 7) % 70 END, g
FROM generate_series(1, 220) g;
INSERT INTO cj_diff_local.tr_a
SELECT chr(65 + (g * 7) % 58) || g % 5, CASE WHEN g % 9 = 0 THEN NULL ELSE g END
FROM generate_series(1, 200) g;
INSERT INTO cj_diff_local.tr_b
SELECT chr(65 + (g * 11) % 58) || g % 4, g
FROM generate_series(1, 200) g;
INSERT INTO cj_diff_local.rg_a
SELECT CASE WHEN g % 17 = 0 THEN NULL ELSE (g * 7) % 400 - 50 END, g
FROM generate_series(1, 250) g;
INSERT INTO cj_diff_local.rg_b
SELECT CASE WHEN g % 14 = 0 THEN NULL ELSE (g * 13) % 380 - 40 END, g
FROM generate_series(1, 250) g;
INSERT INTO cj_diff_local.ls_a
SELECT g % 40, (ARRAY['north', 'northeast', 'south', 'east', 'west', 'other', NULL])[g % 7 + 1], g
FROM generate_series(1, 120) g;
INSERT INTO cj_diff_local.ls_b
SELECT (g * 3) % 40, (ARRAY['north', 'south', 'east', 'other', NULL, 'west'])[g % 6 + 1], g
FROM generate_series(1, 110) g;
INSERT INTO cj_diff_local.ml_a
SELECT CASE WHEN g % 19 = 0 THEN NULL ELSE g % 60 END,
	   CASE WHEN g % 11 = 0 THEN NULL ELSE g % 6 END, g
FROM generate_series(1, 200) g;
INSERT INTO cj_diff_local.ml_b
SELECT CASE WHEN g % 15 = 0 THEN NULL ELSE (g * 7) % 64 END,
	   CASE WHEN g % 13 = 0 THEN NULL ELSE g % 5 END, g
FROM generate_series(1, 200) g;
INSERT INTO cj_diff_local.pl_a
SELECT CASE WHEN g % 20 = 0 THEN NULL ELSE g % 150 END, g FROM generate_series(1, 200) g;
INSERT INTO cj_diff_local.pl_b
SELECT CASE WHEN g % 18 = 0 THEN NULL ELSE (g * 3) % 160 END, g FROM generate_series(1, 200) g;
INSERT INTO cj_diff_local.m4
SELECT CASE WHEN g % 25 = 0 THEN NULL ELSE (g * 9) % 240 - 19 END, g FROM generate_series(1, 200) g;

DO $$
DECLARE
	t text;
BEGIN
	FOR t IN SELECT relname FROM pg_class
			 WHERE relnamespace = 'cj_diff_local'::regnamespace AND relkind = 'r'
	LOOP
		EXECUTE format('INSERT INTO cj_diff_sharded.%I SELECT * FROM cj_diff_local.%I', t, t);
		-- ANALYZE reads through postgres_fdw: the rows must be committed
		COMMIT;
		EXECUTE format('ANALYZE cj_diff_local.%I', t);
	END LOOP;
	FOR t IN SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c
			 JOIN pg_namespace n ON n.oid = c.relnamespace
			 WHERE n.nspname = 'cj_diff_sharded' AND c.relkind IN ('p', 'f')
	LOOP
		EXECUTE 'ANALYZE ' || t;
	END LOOP;
END
$$;

-- a local table beside the sharded ones, and a function no node may run
CREATE TABLE cj_diff.status_names (code char(1), name text);
INSERT INTO cj_diff.status_names VALUES ('F', 'finished'), ('O', 'open');
CREATE FUNCTION cj_diff.nonship(int) RETURNS boolean IMMUTABLE LANGUAGE plpgsql
AS $$ BEGIN RETURN $1 % 3 <> 0; END $$;

--
-- cj_diff.check: run query on the sharded tables and on the local ones,
-- compare the rows as multisets, and compare the sharded plan with the
-- expectation.  Errors are reported in the result, not raised, so that one
-- failing query does not hide the others.
--
CREATE FUNCTION cj_diff.run(query text, schema text) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
	saved text := current_setting('search_path');
	rec record;
	rows text[] := '{}';
BEGIN
	PERFORM set_config('search_path', schema, true);
	FOR rec IN EXECUTE query LOOP
		rows := rows || rec::text;
	END LOOP;
	PERFORM set_config('search_path', saved, true);
	RETURN ARRAY(SELECT r FROM unnest(rows) r ORDER BY r COLLATE "C");
END
$$;

CREATE FUNCTION cj_diff.plan(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	saved text := current_setting('search_path');
	line text;
	plan text := '';
BEGIN
	PERFORM set_config('search_path', 'cj_diff_sharded', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		plan := plan || line || E'\n';
	END LOOP;
	PERFORM set_config('search_path', saved, true);
	RETURN plan;
END
$$;

CREATE FUNCTION cj_diff.plan_verdict(plan text, expect_colojoin boolean) RETURNS text
LANGUAGE sql AS $$
	SELECT CASE
		WHEN expect_colojoin IS NULL THEN 'plan not checked'
		WHEN (plan LIKE '%ColocatedJoin%') = expect_colojoin THEN 'plan ok'
		WHEN expect_colojoin THEN 'expected colojoin but got ' || btrim(split_part(plan, E'\n', 1))
		ELSE 'unexpected colojoin'
	END
$$;

CREATE FUNCTION cj_diff.compare(sharded text[], local text[]) RETURNS text
LANGUAGE sql AS $$
	SELECT CASE WHEN sharded = local THEN 'ok'
		ELSE format('MISMATCH: %s rows vs %s local; only sharded: %s; only local: %s',
					cardinality(sharded), cardinality(local),
					(SELECT string_agg(x, ' ') FROM (SELECT unnest(sharded) EXCEPT ALL
						SELECT unnest(local) ORDER BY 1 LIMIT 3) d(x)),
					(SELECT string_agg(x, ' ') FROM (SELECT unnest(local) EXCEPT ALL
						SELECT unnest(sharded) ORDER BY 1 LIMIT 3) d(x)))
	END
$$;

CREATE FUNCTION cj_diff.check(label text, query text, expect_colojoin boolean,
							  OUT test text, OUT nrows int, OUT result text, OUT plan text)
LANGUAGE plpgsql AS $$
DECLARE
	sharded text[];
	local text[];
BEGIN
	test := label;
	BEGIN
		plan := cj_diff.plan_verdict(cj_diff.plan(query), expect_colojoin);
		sharded := cj_diff.run(query, 'cj_diff_sharded');
	EXCEPTION WHEN OTHERS THEN
		result := 'ERROR on the sharded tables: ' || SQLERRM;
		plan := coalesce(plan, 'no plan');
		RETURN;
	END;
	local := cj_diff.run(query, 'cj_diff_local');
	nrows := cardinality(sharded);
	result := cj_diff.compare(sharded, local);
END
$$;

-- The result tables below: one line per query, "test | nrows | result | plan".
\pset format unaligned
\pset fieldsep ' | '

-- the data are there, the same on both sides
SELECT c.* FROM (VALUES
	('orders', 'SELECT * FROM orders'),
	('lineitem', 'SELECT * FROM lineitem'),
	('shipments', 'SELECT * FROM shipments'),
	('partial', 'SELECT * FROM partial'),
	('weird', 'SELECT * FROM "Weird ""tbl""; DROP"'),
	('mc_a', 'SELECT * FROM mc_a'), ('mc_b', 'SELECT * FROM mc_b'),
	('tk_a', 'SELECT * FROM tk_a'), ('tk_b', 'SELECT * FROM tk_b'),
	('tr_a', 'SELECT * FROM tr_a'), ('tr_b', 'SELECT * FROM tr_b'),
	('rg_a', 'SELECT * FROM rg_a'), ('rg_b', 'SELECT * FROM rg_b'),
	('ls_a', 'SELECT * FROM ls_a'), ('ls_b', 'SELECT * FROM ls_b'),
	('ml_a', 'SELECT * FROM ml_a'), ('ml_b', 'SELECT * FROM ml_b'),
	('pl_a', 'SELECT * FROM pl_a'), ('pl_b', 'SELECT * FROM pl_b'),
	('m4', 'SELECT * FROM m4')
) v(label, q), LATERAL cj_diff.check(v.label, v.q, NULL) c;
-- and really on the nodes: tables and rows per node
SELECT n, r.tables, r.rows
FROM cj_diff.nodes,
	LATERAL dblink('cj_diff_n' || n, $$
		SELECT count(*), sum((xpath('/row/c/text()', query_to_xml(
				format('SELECT count(*) AS c FROM cj_diff_remote.%I', tablename),
				false, true, '')))[1]::text::int)
		FROM pg_tables WHERE schemaname = 'cj_diff_remote'$$) AS r(tables bigint, rows bigint)
ORDER BY n;
SELECT sum(cardinality(cj_diff.run('SELECT * FROM ' || quote_ident(relname), 'cj_diff_local')))
	AS local_rows
FROM pg_class WHERE relnamespace = 'cj_diff_local'::regnamespace AND relkind = 'r';

--
-- Join types on the key: colocated.
--
SELECT c.* FROM (VALUES
	('inner', 'SELECT o_key, o_cust, l_line, l_qty FROM orders JOIN lineitem ON o_key = l_key', true),
	('inner, comma syntax', 'SELECT o.o_key, l.l_line FROM orders o, lineitem l WHERE o.o_key = l.l_key', true),
	('inner, commuted equality', 'SELECT o_key, l_line FROM orders JOIN lineitem ON l_key = o_key', true),
	('inner, extra join condition', 'SELECT o_key, l_line, l_qty FROM orders JOIN lineitem ON o_key = l_key AND l_qty > o_cust', true),
	('inner, filters on both sides', 'SELECT o_key, o_status, l_flag FROM orders JOIN lineitem ON o_key = l_key WHERE o_status = ''F'' AND l_flag <> ''R''', true),
	('inner, all columns', 'SELECT * FROM orders JOIN lineitem ON o_key = l_key', true),
	('inner, expressions in the target list', 'SELECT o_key * 2, l_price * l_qty, upper(l_flag) FROM orders JOIN lineitem ON o_key = l_key', true),
	('self join', 'SELECT a.o_key, a.o_cust, b.o_cust FROM orders a JOIN orders b ON a.o_key = b.o_key', true),
	('left', 'SELECT o_key, o_cust, l_line FROM orders LEFT JOIN lineitem ON o_key = l_key', true),
	('left, condition on the nullable side', 'SELECT o_key, l_line, l_qty FROM orders LEFT JOIN lineitem ON o_key = l_key AND l_qty > 10', true),
	('left, where on the nullable side', 'SELECT o_key, l_line FROM orders LEFT JOIN lineitem ON o_key = l_key WHERE l_flag = ''A''', true),
	('left, is null on the nullable side', 'SELECT o_key, o_cust FROM orders LEFT JOIN lineitem ON o_key = l_key WHERE l_key IS NULL', true),
	('left reduced to inner by where', 'SELECT o_key, l_line FROM orders LEFT JOIN lineitem ON true WHERE o_key = l_key AND l_qty < 3', true),
	('right', 'SELECT o_key, l_key, l_line FROM orders RIGHT JOIN lineitem ON o_key = l_key', true),
	('full', 'SELECT o_key, o_cust, l_key, l_line FROM orders FULL JOIN lineitem ON o_key = l_key', true),
	('full, extra join condition', 'SELECT o_key, l_key, l_qty FROM orders FULL JOIN lineitem ON o_key = l_key AND l_qty < 10', true),
	('semi, exists', 'SELECT o_key, o_cust FROM orders o WHERE EXISTS (SELECT FROM lineitem l WHERE l.l_key = o.o_key)', true),
	('semi, exists with a condition', 'SELECT o_key FROM orders o WHERE EXISTS (SELECT FROM lineitem l WHERE l.l_key = o.o_key AND l.l_qty > 20)', true),
	('semi, in', 'SELECT o_key, o_status FROM orders WHERE o_key IN (SELECT l_key FROM lineitem WHERE l_flag = ''N'')', true),
	('anti, not exists', 'SELECT o_key, o_cust FROM orders o WHERE NOT EXISTS (SELECT FROM lineitem l WHERE l.l_key = o.o_key)', true),
	('anti, not exists with a condition', 'SELECT l_key, l_line FROM lineitem l WHERE NOT EXISTS (SELECT FROM orders o WHERE o.o_key = l.l_key AND o.o_status = ''O'')', true),
	('null keys kept by the outer side', 'SELECT o_key, o_cust, l_line FROM orders LEFT JOIN lineitem ON o_key = l_key WHERE o_key IS NULL', true),
	('not in (null-aware, not a join)', 'SELECT o_key FROM orders WHERE o_key NOT IN (SELECT l_key FROM lineitem WHERE l_qty > 15 AND l_key IS NOT NULL)', false)
) v(label, q, e), LATERAL cj_diff.check(v.label, v.q, v.e) c;

--
-- Several tables on the same key, other key types and partitionings.
--
SELECT c.* FROM (VALUES
	('int4 key joined to int8 key', 'SELECT o_key, s_key, s_carrier FROM orders JOIN shipments ON o_key = s_key', true),
	('int4 key, left join', 'SELECT s_key, s_days, o_cust FROM shipments LEFT JOIN orders ON s_key = o_key', true),
	('int4 key, semi join', 'SELECT s_key FROM shipments s WHERE EXISTS (SELECT FROM lineitem l WHERE l.l_key = s.s_key)', true),
	('3-way inner', 'SELECT o_key, l_line, s_carrier FROM orders JOIN lineitem ON o_key = l_key JOIN shipments ON l_key = s_key', true),
	('3-way, keys equated through the first table', 'SELECT o_key, l_line, s_days FROM orders, lineitem, shipments WHERE o_key = l_key AND o_key = s_key', true),
	('3-way left joins', 'SELECT o_key, l_line, s_carrier FROM orders LEFT JOIN lineitem ON o_key = l_key LEFT JOIN shipments ON o_key = s_key', true),
	('3-way inner and full', 'SELECT o_key, l_key, p_key FROM orders JOIN lineitem ON o_key = l_key FULL JOIN partial ON p_key = o_key', true),
	('4-way inner', 'SELECT o_key, l_line, s_carrier, w."Val" FROM orders JOIN lineitem ON o_key = l_key JOIN shipments ON s_key = o_key JOIN "Weird ""tbl""; DROP" w ON w."Weird ""name""; DROP" = o_key', true),
	('4-way with a semi join', 'SELECT o_key, l_line, s_days FROM orders JOIN lineitem ON o_key = l_key JOIN shipments ON s_key = l_key WHERE EXISTS (SELECT FROM partial WHERE p_key = o_key)', true),
	('colocated pair joined to a local table', 'SELECT o_key, l_line, sn.name FROM orders JOIN lineitem ON o_key = l_key JOIN cj_diff.status_names sn ON sn.code = o_status', true),
	('two-column key', 'SELECT a.a, a.b, v, w FROM mc_a a JOIN mc_b b ON a.a = b.a AND a.b = b.b', true),
	('two-column key, reversed order', 'SELECT a.a, a.b, v, w FROM mc_a a JOIN mc_b b ON b.b = a.b AND b.a = a.a', true),
	('two-column key, full join', 'SELECT a.a, a.b, b.a, b.b FROM mc_a a FULL JOIN mc_b b ON a.a = b.a AND a.b = b.b', true),
	('two-column key, pruned', 'SELECT a.a, a.b, v, w FROM mc_a a JOIN mc_b b ON a.a = b.a AND a.b = b.b WHERE a.a = 3 AND a.b = ''x3''', true),
	('text key', 'SELECT a.k, v, w FROM tk_a a JOIN tk_b b ON a.k = b.k', true),
	('text key, left join, in list', 'SELECT a.k, v, w FROM tk_a a LEFT JOIN tk_b b ON a.k = b.k WHERE a.k IN (''k1'', ''k2'', ''k12'', ''k59'')', true),
	('text key, anti join', 'SELECT a.k, v FROM tk_a a WHERE NOT EXISTS (SELECT FROM tk_b b WHERE b.k = a.k)', true),
	('text range "C"', 'SELECT a.k, v, w FROM tr_a a JOIN tr_b b ON a.k = b.k', true),
	('text range "C", full join', 'SELECT a.k, b.k, v, w FROM tr_a a FULL JOIN tr_b b ON a.k = b.k', true),
	('text range "C", pruned by a range', 'SELECT a.k, v, w FROM tr_a a JOIN tr_b b ON a.k = b.k WHERE a.k >= ''b'' AND a.k < ''p''', true),
	('int range with default', 'SELECT a.k, v, w FROM rg_a a JOIN rg_b b ON a.k = b.k', true),
	('int range, left join with nulls', 'SELECT a.k, v, w FROM rg_a a LEFT JOIN rg_b b ON a.k = b.k WHERE a.k IS NULL OR a.k < 50', true),
	('int range, pruned by between', 'SELECT a.k, v, w FROM rg_a a JOIN rg_b b ON a.k = b.k WHERE a.k BETWEEN 90 AND 110', true),
	('int range, anti join', 'SELECT a.k, v FROM rg_a a WHERE NOT EXISTS (SELECT FROM rg_b b WHERE b.k = a.k)', true),
	('list', 'SELECT a.k, a.region, v, w FROM ls_a a JOIN ls_b b ON a.region = b.region', true),
	('list, full join (null lists never match)', 'SELECT a.region, b.region, v, w FROM ls_a a FULL JOIN ls_b b ON a.region = b.region AND a.k = b.k', true),
	('list, pruned by in', 'SELECT a.region, v, w FROM ls_a a JOIN ls_b b ON a.region = b.region WHERE a.region IN (''north'', ''south'')', true),
	('two levels, top key', 'SELECT a.k, a.cat, b.cat, v, w FROM ml_a a JOIN ml_b b ON a.k = b.k', true),
	('two levels, both keys', 'SELECT a.k, a.cat, v, w FROM ml_a a JOIN ml_b b ON a.k = b.k AND a.cat = b.cat', true),
	('two levels, left join, pruned below', 'SELECT a.k, a.cat, v, w FROM ml_a a LEFT JOIN ml_b b ON a.k = b.k WHERE a.cat = 2', true),
	('weird identifiers', 'SELECT o_key, w."Weird ""name""; DROP", w."Val" FROM orders JOIN "Weird ""tbl""; DROP" w ON w."Weird ""name""; DROP" = o_key', true),
	('weird identifiers, left join', 'SELECT w."Val", l_line FROM "Weird ""tbl""; DROP" w LEFT JOIN lineitem ON l_key = w."Weird ""name""; DROP"', true)
) v(label, q, e), LATERAL cj_diff.check(v.label, v.q, v.e) c;

--
-- Pruning and empty classes.  k6 and k7: keys of hash classes 6 and 7,
-- which partial lacks.
--
SELECT min(k) AS k6 FROM generate_series(1, 100) k
WHERE satisfies_hash_partition('cj_diff_sharded.orders'::regclass, 8, 6, k::bigint) \gset
SELECT min(k) AS k7 FROM generate_series(1, 100) k
WHERE satisfies_hash_partition('cj_diff_sharded.orders'::regclass, 8, 7, k::bigint) \gset
SELECT c.* FROM (VALUES
	('pruned to one class', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = 5', true),
	('pruned through the other side', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE l_key = 42', true),
	('pruned on both sides', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = 7 AND l_key = 7', true),
	('pruned, contradictory (no join left)', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = 7 AND l_key = 8', false),
	('pruned by an in list', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key IN (1, 2, 3, 17, -4)', true),
	('pruned by = any', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE l_key = ANY (ARRAY[10, 20, 30])', true),
	('range filter on a hash key', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key BETWEEN 10 AND 40', true),
	('or of keys', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = 5 OR o_key = 6', true),
	('class pruned on one side only (outer join)', 'SELECT o_key, l_line FROM orders LEFT JOIN lineitem ON o_key = l_key AND l_key = 7', true),
	('pruned, left join, key is null', 'SELECT o_key, l_line FROM orders LEFT JOIN lineitem ON o_key = l_key WHERE o_key IS NULL OR o_key = 3', true),
	('empty classes, inner', 'SELECT o_key, p_val FROM orders JOIN partial ON o_key = p_key', true),
	('empty classes, left keeps the preserved side', 'SELECT o_key, o_cust, p_val FROM orders LEFT JOIN partial ON o_key = p_key', true),
	('empty classes, right', 'SELECT o_key, p_key, p_val FROM partial RIGHT JOIN orders ON o_key = p_key', true),
	('empty classes, full', 'SELECT o_key, p_key FROM orders FULL JOIN partial ON o_key = p_key', true),
	('empty classes, anti', 'SELECT o_key FROM orders o WHERE NOT EXISTS (SELECT FROM partial WHERE p_key = o.o_key)', true),
	('empty classes, pruned to a missing class, left', format('SELECT o_key, o_cust, p_val FROM orders LEFT JOIN partial ON o_key = p_key WHERE o_key = %s', :k6), true),
	('empty classes, pruned to a missing class, inner (no join left)', format('SELECT o_key, p_val FROM orders JOIN partial ON o_key = p_key WHERE o_key = %s', :k6), false),
	('empty classes, two missing classes, full', format('SELECT o_key, p_key FROM orders FULL JOIN partial ON o_key = p_key WHERE o_key IN (%s, %s, 3)', :k6, :k7), true)
) v(label, q, e), LATERAL cj_diff.check(v.label, v.q, v.e) c;

--
-- Quals the nodes must not run, and queries around the join.
--
SELECT c.* FROM (VALUES
	('volatile function in a filter', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE random() > -1', true),
	('stable function in a filter', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_date < now()::date', true),
	('plpgsql function in a filter', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE cj_diff.nonship(l_qty)', true),
	('plpgsql function in an inner join condition', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key AND cj_diff.nonship(l_qty + o_cust)', true),
	('plpgsql function in an outer join condition', 'SELECT o_key, l_line FROM orders LEFT JOIN lineitem ON o_key = l_key AND cj_diff.nonship(l_qty + o_cust)', false),
	('sublink in a filter', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE l_qty > (SELECT avg(l_qty) FROM lineitem)', true),
	('aggregate over the join', 'SELECT o_status, count(*), sum(l_qty), sum(l_price) FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_status', true),
	('distinct over the join', 'SELECT DISTINCT o_cust, l_flag FROM orders JOIN lineitem ON o_key = l_key', true),
	('order by, limit', 'SELECT o_key, l_line, l_qty FROM orders JOIN lineitem ON o_key = l_key ORDER BY o_key, l_line, l_qty LIMIT 15', true),
	('join in a cte', 'WITH j AS MATERIALIZED (SELECT o_key, l_qty FROM orders JOIN lineitem ON o_key = l_key) SELECT o_key, sum(l_qty) FROM j GROUP BY o_key', true),
	('join in a subquery', 'SELECT s.o_key, s.n FROM (SELECT o_key, count(*) AS n FROM orders JOIN lineitem ON o_key = l_key GROUP BY o_key) s WHERE s.n > 2', true)
) v(label, q, e), LATERAL cj_diff.check(v.label, v.q, v.e) c;

--
-- Filters the nodes run: constants of many types, operators, functions and
-- collations written into the remote SQL.  Run under unusual DateStyle,
-- IntervalStyle, float and time zone settings: the text of a constant must
-- mean the same on the node whatever the coordinator session prints.
--
SET datestyle = 'SQL, DMY';
SET intervalstyle = 'sql_standard';
SET extra_float_digits = 0;
SET timezone = 'America/New_York';
SELECT c.* FROM (VALUES
	('date constants', 'SELECT o_key, o_date, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_date BETWEEN ''2024-01-10'' AND ''2024-02-01''', true),
	('date arithmetic', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_date + 30 > date ''2024-03-01''', true),
	('timestamp and interval', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_date + interval ''1 day 2 hours'' < timestamp ''2024-01-20 10:00''', true),
	('timestamptz constant', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_date::timestamp AT TIME ZONE ''UTC'' < timestamptz ''2024-01-15 00:00:00+00''', true),
	('numeric and float constants', 'SELECT o_key, o_total, l_price FROM orders JOIN lineitem ON o_key = l_key WHERE o_total > 100.50 AND l_price::float8 < 299.75::float8 AND l_price > -1.5', true),
	('bigint, smallint and negative constants', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key > -10::bigint AND l_line <> 2::smallint AND o_key < 5000000000', true),
	('bpchar and text', 'SELECT o_key, o_status, l_flag FROM orders JOIN lineitem ON o_key = l_key WHERE o_status = ''F'' AND l_flag IN (''A'', ''N'')', true),
	('like, or, is null', 'SELECT o_key, l_flag FROM orders JOIN lineitem ON o_key = l_key WHERE l_flag LIKE ''A%'' OR l_flag IS NULL', true),
	('quotes and backslashes in a literal', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE l_flag <> E''O''''Br\\ien'' AND l_flag <> ''\\''', true),
	('case, coalesce, nullif, greatest', 'SELECT o_key, l_qty FROM orders JOIN lineitem ON o_key = l_key WHERE CASE WHEN l_qty > 10 THEN ''big'' ELSE coalesce(l_flag, ''none'') END <> ''N'' AND nullif(l_qty, 0) IS NOT NULL AND greatest(o_cust, l_qty) > 8', true),
	('boolean tests', 'SELECT o_key, l_qty FROM orders JOIN lineitem ON o_key = l_key WHERE (l_qty > 5) IS NOT TRUE AND NOT (o_cust = 3)', true),
	('casts and functions', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key::text LIKE ''1%'' AND abs(l_qty - 10) < 5 AND length(upper(l_flag)) = 1', true),
	('text in collation "C"', 'SELECT a.k, v, w FROM tr_a a JOIN tr_b b ON a.k = b.k WHERE a.k < ''b'' AND b.k > ''B'' AND a.k <> ''Z0''', true),
	('text, functions on the key', 'SELECT a.k, v, w FROM tk_a a JOIN tk_b b ON a.k = b.k WHERE lower(a.k) > ''k3'' AND substr(b.k, 2) <> ''5''', true),
	('array constants', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE l_qty = ANY (''{1,2,3,5,8,13}''::int[]) AND o_cust <> ALL (ARRAY[1, 2])', true)
) v(label, q, e), LATERAL cj_diff.check(v.label, v.q, v.e) c;
RESET datestyle;
RESET intervalstyle;
RESET extra_float_digits;
RESET timezone;

--
-- Not colocated: with moving rows disabled (sql/redistribution.sql covers
-- the moves), colojoin leaves these to PostgreSQL, and the answers are still
-- right.
--
SET colojoin.enable_redistribution = off;
SET colojoin.enable_broadcast = off;
SELECT c.* FROM (VALUES
	('expression join a - b = 0', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key - l_key = 0', false),
	('expression join a = b + 0', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key + 0', false),
	('inequality join', 'SELECT o_key, l_key FROM orders JOIN lineitem ON o_key < l_key WHERE o_key < 5 AND l_key < 8', false),
	('or join', 'SELECT o_key, l_key, l_line FROM orders JOIN lineitem ON o_key = l_key OR o_cust = l_qty', false),
	('join on a non-key column', 'SELECT o_key, l_key FROM orders JOIN lineitem ON o_cust = l_qty WHERE o_key < 0', false),
	('key to non-key column', 'SELECT o_key, l_key FROM orders JOIN lineitem ON o_key = l_qty', false),
	('two-column key, one column joined', 'SELECT a.a, a.b, b.b FROM mc_a a JOIN mc_b b ON a.a = b.a', false),
	('text key, expression join', 'SELECT a.k, b.k FROM tk_a a JOIN tk_b b ON lower(a.k) = lower(b.k)', false),
	('different placement', 'SELECT a.k, v, w FROM pl_a a JOIN pl_b b ON a.k = b.k', false),
	('different placement, left join', 'SELECT a.k, v, w FROM pl_a a LEFT JOIN pl_b b ON a.k = b.k', false),
	('different moduli', 'SELECT o_key, v FROM orders JOIN m4 ON o_key = m4.k', false),
	('different moduli, full join', 'SELECT o_key, m4.k FROM orders FULL JOIN m4 ON o_key = m4.k', false),
	('different strategies (hash and range)', 'SELECT o_key, v FROM orders JOIN rg_a ON o_key = rg_a.k', false)
) v(label, q, e), LATERAL cj_diff.check(v.label, v.q, v.e) c;
RESET colojoin.enable_redistribution;
RESET colojoin.enable_broadcast;

--
-- Parameters: a prepared statement run with custom and generic plans, and
-- PL/pgSQL.  Each execution is compared with the local query with the
-- value written in.
--
CREATE FUNCTION cj_diff.check_prepared(label text, stmt text, local_query text,
									   vals bigint[], expect_colojoin boolean,
									   OUT test text, OUT runs int, OUT result text, OUT plan text)
LANGUAGE plpgsql AS $$
DECLARE
	v bigint;
	rec record;
	rows text[];
	plan_text text;
	line text;
	verdict text;
BEGIN
	test := label;
	runs := 0;
	result := 'ok';
	plan := 'plan ok';
	FOREACH v IN ARRAY vals LOOP
		plan_text := '';
		FOR line IN EXECUTE format('EXPLAIN (COSTS OFF) EXECUTE %I(%s)', stmt, v) LOOP
			plan_text := plan_text || line || E'\n';
		END LOOP;
		verdict := cj_diff.plan_verdict(plan_text, expect_colojoin);
		IF verdict <> 'plan ok' AND plan = 'plan ok' THEN
			plan := verdict || ' (value ' || v || ')';
		END IF;
		rows := '{}';
		FOR rec IN EXECUTE format('EXECUTE %I(%s)', stmt, v) LOOP
			rows := rows || rec::text;
		END LOOP;
		rows := ARRAY(SELECT r FROM unnest(rows) r ORDER BY r COLLATE "C");
		runs := runs + 1;
		IF result = 'ok' THEN
			result := cj_diff.compare(rows, cj_diff.run(format(local_query, v), 'cj_diff_local'));
			IF result <> 'ok' THEN
				result := result || ' (value ' || v || ')';
			END IF;
		END IF;
	END LOOP;
END
$$;

PREPARE cj_diff_key(bigint) AS
	SELECT o_key, o_cust, l_line FROM cj_diff_sharded.orders
	JOIN cj_diff_sharded.lineitem ON o_key = l_key WHERE o_key = $1;
PREPARE cj_diff_left(bigint) AS
	SELECT o_key, l_line, l_qty FROM cj_diff_sharded.orders
	LEFT JOIN cj_diff_sharded.lineitem ON o_key = l_key AND l_qty > $1 WHERE o_key < 30;
PREPARE cj_diff_partial(bigint) AS
	SELECT o_key, p_key, p_val FROM cj_diff_sharded.orders
	LEFT JOIN cj_diff_sharded.partial ON o_key = p_key WHERE o_key = $1;

SELECT c.* FROM (VALUES
	('key parameter', 'cj_diff_key',
	 'SELECT o_key, o_cust, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = %s'),
	('parameter in an outer join condition', 'cj_diff_left',
	 'SELECT o_key, l_line, l_qty FROM orders LEFT JOIN lineitem ON o_key = l_key AND l_qty > %s WHERE o_key < 30'),
	('key parameter, empty classes', 'cj_diff_partial',
	 'SELECT o_key, p_key, p_val FROM orders LEFT JOIN partial ON o_key = p_key WHERE o_key = %s')
) v(label, stmt, q),
	LATERAL cj_diff.check_prepared(v.label || ', default plans', v.stmt, v.q,
								   '{5,1,2,3,4,5,6,7,42,-4,1000}', true) c;
SET plan_cache_mode = force_generic_plan;
SELECT c.* FROM (VALUES
	('key parameter', 'cj_diff_key',
	 'SELECT o_key, o_cust, l_line FROM orders JOIN lineitem ON o_key = l_key WHERE o_key = %s'),
	('parameter in an outer join condition', 'cj_diff_left',
	 'SELECT o_key, l_line, l_qty FROM orders LEFT JOIN lineitem ON o_key = l_key AND l_qty > %s WHERE o_key < 30'),
	('key parameter, empty classes', 'cj_diff_partial',
	 'SELECT o_key, p_key, p_val FROM orders LEFT JOIN partial ON o_key = p_key WHERE o_key = %s')
) v(label, stmt, q),
	LATERAL cj_diff.check_prepared(v.label || ', generic plan', v.stmt, v.q,
								   '{5,42,-4,1000,7,13}', true) c;
RESET plan_cache_mode;

-- PL/pgSQL: the same static query with a variable, called often enough to
-- reach its generic plan
CREATE FUNCTION cj_diff.pl_join(k bigint, sharded boolean) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
	IF sharded THEN
		RETURN QUERY SELECT format('%s %s %s', o_key, l_line, l_qty)
			FROM cj_diff_sharded.orders JOIN cj_diff_sharded.lineitem ON o_key = l_key
			WHERE o_key = k OR o_key = k + 1;
	ELSE
		RETURN QUERY SELECT format('%s %s %s', o_key, l_line, l_qty)
			FROM cj_diff_local.orders JOIN cj_diff_local.lineitem ON o_key = l_key
			WHERE o_key = k OR o_key = k + 1;
	END IF;
END
$$;
SELECT k,
	(SELECT count(*) FROM cj_diff.pl_join(k, true)) AS nrows,
	ARRAY(SELECT x FROM cj_diff.pl_join(k, true) x ORDER BY x) =
	ARRAY(SELECT x FROM cj_diff.pl_join(k, false) x ORDER BY x) AS same
FROM unnest('{1,5,9,13,17,21,25,29,-3,400}'::bigint[]) k;

--
-- Clean up, here and on the nodes.
--
RESET client_min_messages;
\pset format aligned
\pset fieldsep '|'
DEALLOCATE cj_diff_key;
DEALLOCATE cj_diff_left;
DEALLOCATE cj_diff_partial;
SET client_min_messages = warning;
DROP SCHEMA cj_diff_sharded CASCADE;
DROP SCHEMA cj_diff_local CASCADE;
SELECT dblink_exec('cj_diff_n' || n, 'DROP SCHEMA cj_diff_remote CASCADE')
FROM cj_diff.nodes ORDER BY n;
SELECT dblink_disconnect('cj_diff_n' || n) FROM cj_diff.nodes ORDER BY n;
DROP SCHEMA cj_diff CASCADE;
\i sql/include/three_nodes_end.sql
