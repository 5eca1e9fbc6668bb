--
-- redistribution: joins whose partition metadata disagrees (DESIGN.md
-- section 3) still run on the nodes, by copying the partitions that refine
-- a class, repartitioning one side by the other's hash function, or
-- broadcasting a small side; and every answer equals the answer of the same
-- query over plain local tables.  A side that a join preserves never moves;
-- where nothing may move, PostgreSQL plans the join.  Temporary tables on
-- the nodes never outlive the statement.
--
-- Two schemas hold identically named tables: cj_redist_sharded (partitioned
-- tables whose leaves are postgres_fdw foreign tables on the three nodes)
-- and cj_redist_local (plain tables).  cj_redist.check(label, query,
-- expect) runs the query under each search_path, compares the results as
-- multisets, and compares the kind of plan EXPLAIN shows for the sharded
-- run with expect:
--   none         no ColocatedJoin scan (PostgreSQL's plan)
--   colocated    a ColocatedJoin that moves nothing
--   refine       partitions of one side refining the other's, copied
--   repartition  one side repartitioned by the other's hash function
--   broadcast    one side broadcast to the nodes of the other
-- (several kinds, for a plan with several moves: joined with '+', sorted).
-- The Strategy lines of the plan are printed too, so the expected output
-- says which side moved.
--
-- extensions: remember which ones this test creates, to drop only those
SELECT NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'colojoin') AS cj_redist_own_colojoin,
	   NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'postgres_fdw') AS cj_redist_own_fdw,
	   NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'dblink') AS cj_redist_own_dblink
\gset
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS colojoin CASCADE;
CREATE EXTENSION IF NOT EXISTS dblink;
RESET client_min_messages;
\getenv node1_port CJ_NODE1_PORT
\getenv node2_port CJ_NODE2_PORT
\getenv node3_port CJ_NODE3_PORT

CREATE SCHEMA cj_redist;
CREATE SCHEMA cj_redist_sharded;
CREATE SCHEMA cj_redist_local;

CREATE TABLE cj_redist.nodes (n int PRIMARY KEY, port int NOT NULL);
INSERT INTO cj_redist.nodes VALUES (1, :'node1_port'), (2, :'node2_port'), (3, :'node3_port');

CREATE SERVER cj_redist_n1 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node1_port', dbname 'colojoin_regress');
CREATE SERVER cj_redist_n2 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node2_port', dbname 'colojoin_regress');
CREATE SERVER cj_redist_n3 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '127.0.0.1', port :'node3_port', dbname 'colojoin_regress');
CREATE USER MAPPING FOR CURRENT_USER SERVER cj_redist_n1;
CREATE USER MAPPING FOR CURRENT_USER SERVER cj_redist_n2;
CREATE USER MAPPING FOR CURRENT_USER SERVER cj_redist_n3;

-- The remote shard tables live in schema cj_redist_remote of each node.
SELECT dblink_connect('cj_redist_n' || n,
		format('host=127.0.0.1 port=%s dbname=colojoin_regress', port))
FROM cj_redist.nodes ORDER BY n;
SELECT dblink_exec('cj_redist_n' || n,
		'DROP SCHEMA IF EXISTS cj_redist_remote CASCADE; CREATE SCHEMA cj_redist_remote')
FROM cj_redist.nodes ORDER BY n;

--
-- cj_redist.add_leaf: create the node's table (the columns of parent, with
-- their types and collations) and the foreign partition leaf of parent,
-- bound "bound", on node "node".
--
CREATE FUNCTION cj_redist.add_leaf(parent regclass, leaf text, bound text, node int)
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

	PERFORM dblink_exec('cj_redist_n' || node,
						format('CREATE TABLE cj_redist_remote.%I (%s)', leaf, cols));
	EXECUTE format('CREATE FOREIGN TABLE cj_redist_sharded.%I PARTITION OF %s %s '
				   'SERVER %I OPTIONS (schema_name %L, table_name %L)',
				   leaf, parent, bound, 'cj_redist_n' || node, 'cj_redist_remote', leaf);
END
$$;

-- hash leaves: remainder r of modulus m on node placement[r+1]
CREATE FUNCTION cj_redist.add_hash_leaves(parent regclass, prefix text, m int,
										  placement int[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	FOR r IN 0 .. m - 1 LOOP
		PERFORM cj_redist.add_leaf(parent, prefix || '_p' || r,
								   format('FOR VALUES WITH (MODULUS %s, REMAINDER %s)', m, r),
								   placement[r + 1]);
	END LOOP;
END
$$;

--
-- The tables.  The usual placement of hash classes: remainder r on node
-- r % 3 + 1.
--
\set place4 '{1,2,3,1}'
\set place8 '{1,2,3,1,2,3,1,2}'
-- modulus 16, each remainder on the node of the class of modulus 8 it refines
\set place16_aligned '{1,2,3,1,2,3,1,2,1,2,3,1,2,3,1,2}'
-- modulus 16, the usual placement: half the remainders sit elsewhere
\set place16 '{1,2,3,1,2,3,1,2,3,1,2,3,1,2,3,1}'

-- orders and lineitem: colocated on o_key = l_key (bigint, modulus 8)
CREATE TABLE cj_redist_sharded.orders (o_key bigint, o_cust int, o_status char(1),
	o_total numeric(10,2)) PARTITION BY HASH (o_key);
SELECT cj_redist.add_hash_leaves('cj_redist_sharded.orders', 'orders', 8, :'place8');
CREATE TABLE cj_redist_sharded.lineitem (l_key bigint, l_line int, l_partkey bigint,
	l_qty int, l_price numeric(10,2)) PARTITION BY HASH (l_key);
SELECT cj_redist.add_hash_leaves('cj_redist_sharded.lineitem', 'lineitem', 8, :'place8');

-- part: an int4 key, modulus 8; lineitem refers to it by its int8 l_partkey
CREATE TABLE cj_redist_sharded.part (p_partkey int, p_brand text, p_size int)
	PARTITION BY HASH (p_partkey);
SELECT cj_redist.add_hash_leaves('cj_redist_sharded.part', 'part', 8, :'place8');

-- placement mismatch: pl_b's classes 1 and 6 sit elsewhere than pl_a's;
-- pm_b's classes all sit elsewhere
CREATE TABLE cj_redist_sharded.pl_a (k bigint, v int) PARTITION BY HASH (k);
SELECT cj_redist.add_hash_leaves('cj_redist_sharded.pl_a', 'pl_a', 8, :'place8');
CREATE TABLE cj_redist_sharded.pl_b (k bigint, w int) PARTITION BY HASH (k);
SELECT cj_redist.add_hash_leaves('cj_redist_sharded.pl_b', 'pl_b', 8, '{1,3,3,1,2,3,2,2}');
CREATE TABLE cj_redist_sharded.pm_b (k bigint, w int) PARTITION BY HASH (k);
SELECT cj_redist.add_hash_leaves('cj_redist_sharded.pm_b', 'pm_b', 8, '{2,3,1,2,3,1,2,3}');

-- moduli 4 and 16 beside orders' 8
CREATE TABLE cj_redist_sharded.m4 (k bigint, v int) PARTITION BY HASH (k);
SELECT cj_redist.add_hash_leaves('cj_redist_sharded.m4', 'm4', 4, :'place4');
CREATE TABLE cj_redist_sharded.m16a (k bigint, v int) PARTITION BY HASH (k);
SELECT cj_redist.add_hash_leaves('cj_redist_sharded.m16a', 'm16a', 16, :'place16_aligned');
CREATE TABLE cj_redist_sharded.m16 (k int, v int) PARTITION BY HASH (k);
SELECT cj_redist.add_hash_leaves('cj_redist_sharded.m16', 'm16', 16, :'place16');

-- events: partitioned by its own id; refers to shipments (int4 key) by an
-- int8 column, a numeric column and an int4 column
CREATE TABLE cj_redist_sharded.shipments (s_key int, s_carrier text, s_days int)
	PARTITION BY HASH (s_key);
SELECT cj_redist.add_hash_leaves('cj_redist_sharded.shipments', 'shipments', 8, :'place8');
CREATE TABLE cj_redist_sharded.events (e_id bigint, e_ref8 bigint, e_refnum numeric,
	e_ref4 int, e_tag text) PARTITION BY HASH (e_id);
SELECT cj_redist.add_hash_leaves('cj_redist_sharded.events', 'events', 4, :'place4');

-- text keys: tk_a partitioned by k, tk_c by an int, referring to tk_a by name
CREATE TABLE cj_redist_sharded.tk_a (k text, v int) PARTITION BY HASH (k);
SELECT cj_redist.add_hash_leaves('cj_redist_sharded.tk_a', 'tk_a', 4, :'place4');
CREATE TABLE cj_redist_sharded.tk_c (id int, name text, w int) PARTITION BY HASH (id);
SELECT cj_redist.add_hash_leaves('cj_redist_sharded.tk_c', 'tk_c', 8, :'place8');

-- nation: small, partitioned by its name on two nodes; its other columns
-- carry what COPY must escape (tabs, newlines, backslashes, "\N"), arrays,
-- bytea and a text in collation "C"
CREATE TABLE cj_redist_sharded.nation (n_key int, n_name text, n_region int,
	n_comment text, n_tags int[], n_blob bytea, n_code text COLLATE "C")
	PARTITION BY HASH (n_name);
SELECT cj_redist.add_hash_leaves('cj_redist_sharded.nation', 'nation', 2, '{1,2}');

-- region: range partitioned, so no hash function to route rows by
CREATE TABLE cj_redist_sharded.region (r_key int, r_name text) PARTITION BY RANGE (r_key);
SELECT cj_redist.add_leaf('cj_redist_sharded.region', 'region_' || i, b, n)
FROM (VALUES (0, 'FOR VALUES FROM (MINVALUE) TO (3)', 3),
			 (1, 'FOR VALUES FROM (3) TO (MAXVALUE)', 2)) parts(i, b, n)
ORDER BY i;

-- cn: placement like pl_b; its leaves name their columns otherwise, in
-- another order, on the nodes (postgres_fdw's column_name option)
CREATE TABLE cj_redist_sharded.cn (k bigint, w int) PARTITION BY HASH (k);
DO $$
DECLARE
	placement int[] := '{1,3,3,1,2,3,2,2}';
BEGIN
	FOR r IN 0 .. 7 LOOP
		PERFORM dblink_exec('cj_redist_n' || placement[r + 1],
			format('CREATE TABLE cj_redist_remote.cn_p%s (remote_w int, remote_k bigint)', r));
		EXECUTE format('CREATE FOREIGN TABLE cj_redist_sharded.cn_p%s PARTITION OF cj_redist_sharded.cn '
					   'FOR VALUES WITH (MODULUS 8, REMAINDER %s) SERVER cj_redist_n%s '
					   'OPTIONS (schema_name ''cj_redist_remote'', table_name ''cn_p%s'')',
					   r, r, placement[r + 1], r);
		EXECUTE format('ALTER FOREIGN TABLE cj_redist_sharded.cn_p%s '
					   'ALTER COLUMN k OPTIONS (column_name ''remote_k''), '
					   'ALTER COLUMN w OPTIONS (column_name ''remote_w'')', r);
	END LOOP;
END
$$;

-- dc: modulus 16, with a column dropped on the coordinator only
CREATE TABLE cj_redist_sharded.dc (k bigint, junk int, w int) PARTITION BY HASH (k);
SELECT cj_redist.add_hash_leaves('cj_redist_sharded.dc', 'dc', 16, :'place16');
ALTER TABLE cj_redist_sharded.dc DROP COLUMN junk;

-- ml: two levels, hash modulus 4 on k, then list on cat; all leaves of a
-- hash class on one node
CREATE TABLE cj_redist_sharded.ml (k bigint, cat int, v int) PARTITION BY HASH (k);
SELECT format('CREATE TABLE cj_redist_sharded.ml_p%s PARTITION OF cj_redist_sharded.ml '
			  'FOR VALUES WITH (MODULUS 4, REMAINDER %s) PARTITION BY LIST (cat)', r, r)
FROM generate_series(0, 3) r \gexec
SELECT cj_redist.add_leaf(format('cj_redist_sharded.ml_p%s', r)::regclass,
						  format('ml_p%s_%s', r, l), b, r % 3 + 1)
FROM generate_series(0, 3) r,
	 (VALUES (0, 'FOR VALUES IN (NULL, 0, 1)'), (1, 'DEFAULT')) lists(l, b)
ORDER BY r, l;

-- partial: only remainders 0..5 of modulus 8; classes 6 and 7 are empty
CREATE TABLE cj_redist_sharded.partial (p_key bigint, p_val int) PARTITION BY HASH (p_key);
SELECT cj_redist.add_leaf('cj_redist_sharded.partial', 'partial_p' || r,
						  format('FOR VALUES WITH (MODULUS 8, REMAINDER %s)', r), r % 3 + 1)
FROM generate_series(0, 5) r;

-- empty: no rows at all, modulus 16
CREATE TABLE cj_redist_sharded.empty16 (k bigint, v int) PARTITION BY HASH (k);
SELECT cj_redist.add_hash_leaves('cj_redist_sharded.empty16', 'empty16', 16, :'place16');

-- The same tables, plain and local.
DO $$
DECLARE
	t regclass;
BEGIN
	FOR t IN SELECT c.oid FROM pg_class c
			 WHERE c.relnamespace = 'cj_redist_sharded'::regnamespace
			   AND c.relkind = 'p' AND NOT c.relispartition
	LOOP
		EXECUTE format('CREATE TABLE cj_redist_local.%I (LIKE %s)',
					   (SELECT relname FROM pg_class WHERE oid = t), t);
	END LOOP;
END
$$;
SELECT c.relname, count(*) AS leaves
FROM pg_class c JOIN pg_partition_tree(c.oid) pt ON pt.isleaf
WHERE c.relnamespace = 'cj_redist_sharded'::regnamespace AND c.relkind = 'p'
  AND NOT c.relispartition
GROUP BY c.relname ORDER BY c.relname;

--
-- The rows: deterministic, with NULL keys, duplicate keys and keys without
-- a partner.  Loaded into the local tables, then copied into the sharded
-- ones (postgres_fdw routes each row to its partition).
--
INSERT INTO cj_redist_local.orders
SELECT CASE WHEN g % 29 = 0 THEN NULL ELSE g % 250 - 19 END, g % 17,
	   (ARRAY['F', 'O', 'P'])[g % 3 + 1], (g * 7.25) % 1000
FROM generate_series(1, 300) g;
INSERT INTO cj_redist_local.lineitem
SELECT CASE WHEN g % 31 = 0 THEN NULL ELSE (g * 7) % 270 - 19 END, g % 5 + 1,
	   CASE WHEN g % 23 = 0 THEN NULL ELSE (g * 11) % 130 - 5 END, g % 23, (g * 3.5) % 500
FROM generate_series(1, 900) g;
INSERT INTO cj_redist_local.part
SELECT CASE WHEN g % 37 = 0 THEN NULL ELSE g END,
	   'Brand#' || (g % 7 + 1), g % 50
FROM generate_series(1, 110) g;
INSERT INTO cj_redist_local.pl_a
SELECT CASE WHEN g % 20 = 0 THEN NULL ELSE g % 150 END, g FROM generate_series(1, 200) g;
INSERT INTO cj_redist_local.pl_b
SELECT CASE WHEN g % 18 = 0 THEN NULL ELSE (g * 3) % 160 END, g FROM generate_series(1, 200) g;
INSERT INTO cj_redist_local.pm_b
SELECT CASE WHEN g % 16 = 0 THEN NULL ELSE (g * 7) % 170 END, g FROM generate_series(1, 220) g;
INSERT INTO cj_redist_local.m4
SELECT CASE WHEN g % 25 = 0 THEN NULL ELSE (g * 9) % 240 - 19 END, g FROM generate_series(1, 200) g;
INSERT INTO cj_redist_local.m16a
SELECT CASE WHEN g % 21 = 0 THEN NULL ELSE (g * 11) % 260 - 19 END, g FROM generate_series(1, 240) g;
INSERT INTO cj_redist_local.m16
SELECT CASE WHEN g % 22 = 0 THEN NULL ELSE (g * 5) % 250 - 19 END, g FROM generate_series(1, 260) g;
INSERT INTO cj_redist_local.shipments
SELECT CASE WHEN g % 13 = 0 THEN NULL ELSE (g * 3) % 260 - 19 END,
	   (ARRAY['air', 'rail', 'ship', 'truck'])[g % 4 + 1], g % 11
FROM generate_series(1, 250) g;
INSERT INTO cj_redist_local.events
SELECT g, CASE WHEN g % 17 = 0 THEN NULL ELSE (g * 7) % 280 - 30 END,
	   CASE WHEN g % 19 = 0 THEN NULL ELSE ((g * 11) % 270 - 25)::numeric END,
	   CASE WHEN g % 15 = 0 THEN NULL ELSE (g * 13) % 265 - 20 END,
	   (ARRAY['x', 'y', 'z'])[g % 3 + 1]
FROM generate_series(1, 400) g;
INSERT INTO cj_redist_local.tk_a
SELECT CASE WHEN g % 21 = 0 THEN NULL ELSE 'k' || g % 60 END, g
FROM generate_series(1, 200) g;
INSERT INTO cj_redist_local.tk_c
SELECT g, CASE WHEN g % 16 = 0 THEN NULL ELSE 'k' || (g * 7) % 70 END, g % 9
FROM generate_series(1, 220) g;
INSERT INTO cj_redist_local.nation
SELECT CASE WHEN g = 7 THEN NULL ELSE g END, 'nation' || g, g % 5,
	   (ARRAY[E'tab\there', E'new\nline', E'back\\slash', E'\\N', NULL, '', 'plain "quoted" ''text''',
			  E'cr\rlf', 'ünïcödé €'])[g % 9 + 1],
	   CASE WHEN g % 4 = 0 THEN NULL ELSE ARRAY[g, NULL, -g] END,
	   CASE WHEN g % 5 = 0 THEN NULL ELSE decode(repeat(to_hex(g + 16), g % 4 + 1), 'hex') END,
	   (ARRAY['a', 'B', 'c', 'D', 'É'])[g % 5 + 1]
FROM generate_series(0, 24) g;
INSERT INTO cj_redist_local.cn
SELECT CASE WHEN g % 17 = 0 THEN NULL ELSE (g * 5) % 160 END, g FROM generate_series(1, 210) g;
INSERT INTO cj_redist_local.dc
SELECT CASE WHEN g % 19 = 0 THEN NULL ELSE (g * 3) % 250 - 19 END, g % 17 FROM generate_series(1, 230) g;
INSERT INTO cj_redist_local.ml
SELECT CASE WHEN g % 19 = 0 THEN NULL ELSE g % 240 - 19 END,
	   CASE WHEN g % 11 = 0 THEN NULL ELSE g % 4 END, g
FROM generate_series(1, 260) g;
-- only the rows that have a partition in the sharded table
INSERT INTO cj_redist_local.partial
SELECT k, g % 50
FROM generate_series(1, 300) g,
	 LATERAL (SELECT CASE WHEN g % 23 = 0 THEN NULL ELSE (g * 11) % 280 - 30 END::bigint AS k) s
WHERE EXISTS (SELECT FROM generate_series(0, 5) r
			  WHERE satisfies_hash_partition('cj_redist_sharded.partial'::regclass, 8, r, s.k));
INSERT INTO cj_redist_local.region
SELECT g, 'region' || g FROM generate_series(0, 4) g;

DO $$
DECLARE
	t text;
BEGIN
	FOR t IN SELECT relname FROM pg_class
			 WHERE relnamespace = 'cj_redist_local'::regnamespace AND relkind = 'r'
	LOOP
		EXECUTE format('INSERT INTO cj_redist_sharded.%I SELECT * FROM cj_redist_local.%I', t, t);
		EXECUTE format('ANALYZE cj_redist_local.%I', t);
	END LOOP;
	FOR t IN SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c
			 JOIN pg_namespace n ON n.oid = c.relnamespace
			 WHERE n.nspname = 'cj_redist_sharded' AND c.relkind IN ('p', 'f')
	LOOP
		EXECUTE 'ANALYZE ' || t;
	END LOOP;
END
$$;

-- a function no node may run
CREATE FUNCTION cj_redist.nonship(int) RETURNS boolean IMMUTABLE LANGUAGE plpgsql
AS $$ BEGIN RETURN $1 % 3 <> 0; END $$;

--
-- cj_redist.check: run query on the sharded tables and on the local ones,
-- compare the rows as multisets, and compare the kind of the sharded plan
-- with the expectation.  Errors are reported in the result, not raised, so
-- that one failing query does not hide the others.
--
CREATE FUNCTION cj_redist.run(query text, schema text) RETURNS text[]
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

CREATE FUNCTION cj_redist.plan(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	saved text := current_setting('search_path');
	line text;
	plan text := '';
BEGIN
	PERFORM set_config('search_path', 'cj_redist_sharded', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		plan := plan || line || E'\n';
	END LOOP;
	PERFORM set_config('search_path', saved, true);
	RETURN plan;
END
$$;

-- the kinds of ColocatedJoin scans in a plan, sorted, '+'-separated
CREATE FUNCTION cj_redist.plan_kind(plan text) RETURNS text
LANGUAGE sql AS $$
	SELECT coalesce(string_agg(kind, '+' ORDER BY kind), 'none')
	FROM (SELECT CASE
				 WHEN s LIKE '% refining those of %' THEN 'refine'
				 WHEN s LIKE '% repartitioned by hash of %' THEN 'repartition'
				 WHEN s LIKE '% broadcast to the nodes of %' THEN 'broadcast'
				 WHEN s LIKE 'colocated%' THEN 'colocated'
				 ELSE 'unknown strategy: ' || s END AS kind
		  FROM (SELECT btrim(substr(l, strpos(l, 'Strategy:') + 9)) AS s
				FROM regexp_split_to_table(plan, E'\n') l
				WHERE l LIKE '%Strategy:%') st) k
$$;

-- the Strategy lines of a plan, ' / '-separated
CREATE FUNCTION cj_redist.strategies(plan text) RETURNS text
LANGUAGE sql AS $$
	SELECT coalesce(string_agg(btrim(substr(l, strpos(l, 'Strategy:') + 9)), ' / '), '-')
	FROM regexp_split_to_table(plan, E'\n') l
	WHERE l LIKE '%Strategy:%'
$$;

CREATE FUNCTION cj_redist.compare(sharded text[], local text[]) RETURNS text
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

CREATE FUNCTION cj_redist.check(label text, query text, expect text,
								OUT test text, OUT nrows int, OUT result text,
								OUT plan text, OUT strategy text)
LANGUAGE plpgsql AS $$
DECLARE
	sharded text[];
	local text[];
	plan_text text;
	kind text;
BEGIN
	test := label;
	BEGIN
		plan_text := cj_redist.plan(query);
		kind := cj_redist.plan_kind(plan_text);
		plan := CASE WHEN kind = expect THEN 'plan ok'
				ELSE format('expected %s but got %s', expect, kind) END;
		strategy := cj_redist.strategies(plan_text);
		sharded := cj_redist.run(query, 'cj_redist_sharded');
	EXCEPTION WHEN OTHERS THEN
		result := 'ERROR on the sharded tables: ' || SQLERRM;
		plan := coalesce(plan, 'no plan');
		RETURN;
	END;
	local := cj_redist.run(query, 'cj_redist_local');
	nrows := cardinality(sharded);
	result := cj_redist.compare(sharded, local);
END
$$;

-- colojoin_move_% tables (temporary tables of any session) on each node
CREATE FUNCTION cj_redist.leftovers(OUT n int, OUT move_tables bigint)
RETURNS SETOF record LANGUAGE sql AS $$
	SELECT n, r.c
	FROM cj_redist.nodes,
		LATERAL dblink('cj_redist_n' || n,
			$q$SELECT count(*) FROM pg_class WHERE relname LIKE 'colojoin\_move%'$q$) AS r(c bigint)
	ORDER BY n
$$;

-- The result tables below: one line per query,
-- "test | nrows | result | plan | strategy".
\pset format unaligned
\pset fieldsep ' | '

-- the data are there, the same on both sides
SELECT c.test, c.nrows, c.result FROM (VALUES
	('orders'), ('lineitem'), ('part'), ('pl_a'), ('pl_b'), ('pm_b'), ('m4'),
	('m16a'), ('m16'), ('shipments'), ('events'), ('tk_a'), ('tk_c'),
	('nation'), ('region'), ('empty16')
) v(t), LATERAL cj_redist.check(v.t, 'SELECT * FROM ' || v.t, 'none') c;
