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
-- Each line also shows what moved, as the Strategy lines name it, and how
-- many temporary tables the Moves line lists.  A hint comment in a query
-- applies to the sharded run only.
--
-- extensions: remember which ones this test creates, to drop only those
\set prefix cj_redist
\i sql/include/three_nodes_begin.sql
-- Both sides repartitioned has a suite of its own (dual_repartition):
-- here one side moves, or none.
SET colojoin.enable_dual_repartition = off;

CREATE SCHEMA cj_redist;
CREATE SCHEMA cj_redist_sharded;
CREATE SCHEMA cj_redist_local;

CREATE TABLE cj_redist.nodes (n int PRIMARY KEY, port int NOT NULL);
INSERT INTO cj_redist.nodes VALUES (1, :'node1_port'), (2, :'node2_port'), (3, :'node3_port');


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
-- pm_b's classes all sit elsewhere (both smaller than pl_a, so they move)
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
SELECT CASE WHEN g % 18 = 0 THEN NULL ELSE (g * 3) % 160 END, g FROM generate_series(1, 120) g;
INSERT INTO cj_redist_local.pm_b
SELECT CASE WHEN g % 16 = 0 THEN NULL ELSE (g * 7) % 170 END, g FROM generate_series(1, 130) g;
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
SELECT CASE WHEN g % 17 = 0 THEN NULL ELSE (g * 5) % 160 END, g FROM generate_series(1, 110) g;
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
		-- ANALYZE reads through postgres_fdw: the rows must be committed
		COMMIT;
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

-- the lines of a statement's output (EXPLAIN), run as it is
CREATE FUNCTION cj_redist.plan_lines(stmt text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE stmt;
END
$$;

-- What moves in a plan, as the Strategy lines say it: "X refining",
-- "X repartitioned" or "X broadcast" for every moved table, sorted.
CREATE FUNCTION cj_redist.moved(plan text) RETURNS text[]
LANGUAGE sql AS $$
	SELECT coalesce(array_agg(x ORDER BY x), '{}')
	FROM (SELECT coalesce(m[1] || ' refining', m[2] || ' repartitioned', m[3] || ' broadcast')
		  FROM regexp_matches(plan,
							  'partitions of (\S+) refining those of|(\S+) repartitioned by hash of|(\S+) broadcast to the nodes of',
							  'g') AS r(m)) moves(x)
$$;

-- The kind of a plan: none, colocated, or the sorted kinds of its moves.
CREATE FUNCTION cj_redist.plan_kind(plan text) RETURNS text
LANGUAGE sql AS $$
	SELECT CASE
		WHEN plan NOT LIKE '%Custom Scan (ColocatedJoin)%' THEN 'none'
		WHEN cardinality(cj_redist.moved(plan)) = 0 THEN 'colocated'
		ELSE (SELECT string_agg(k, '+' ORDER BY k)
			  FROM (SELECT CASE WHEN x LIKE '% refining' THEN 'refine'
								WHEN x LIKE '% repartitioned' THEN 'repartition'
								ELSE 'broadcast' END
					FROM unnest(cj_redist.moved(plan)) x) kinds(k))
	END
$$;

-- The number of moves (temporary tables filled) the Moves lines list.
CREATE FUNCTION cj_redist.nmoves(plan text) RETURNS int
LANGUAGE sql AS $$
	SELECT coalesce(sum(cardinality(string_to_array(
				btrim(substr(l, strpos(l, 'Moves:') + 6)), '; '))), 0)::int
	FROM regexp_split_to_table(plan, E'\n') l
	WHERE l LIKE '%Moves:%'
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

--
-- cj_redist.check: the query (hints and all) on the sharded tables, the
-- same query without its hint comment on the local ones.  Columns:
-- test, nrows, result (ok or how the rows differ), plan (ok or what kind
-- was expected and what came), moved (what the Strategy lines say moves),
-- moves (how many temporary tables the plan fills).
--
CREATE FUNCTION cj_redist.check(label text, query text, expect text,
								OUT test text, OUT nrows int, OUT result text,
								OUT plan text, OUT moved text, OUT moves int)
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
		moved := coalesce(nullif(array_to_string(cj_redist.moved(plan_text), ', '), ''), '-');
		moves := cj_redist.nmoves(plan_text);
		sharded := cj_redist.run(query, 'cj_redist_sharded');
	EXCEPTION WHEN OTHERS THEN
		result := 'ERROR on the sharded tables: ' || SQLERRM;
		plan := coalesce(plan, 'no plan');
		RETURN;
	END;
	local := cj_redist.run(regexp_replace(query, '/\*\+.*?\*/', ''), 'cj_redist_local');
	nrows := cardinality(sharded);
	result := cj_redist.compare(sharded, local);
END
$$;

-- colojoin_move_% tables (temporary tables of any session) on each node
CREATE FUNCTION cj_redist.leftovers(OUT n int, OUT move_tables bigint)
RETURNS SETOF record LANGUAGE sql SET search_path FROM CURRENT AS $$
	SELECT n, r.c
	FROM cj_redist.nodes,
		LATERAL dblink('cj_redist_n' || n,
			$q$SELECT count(*) FROM pg_class WHERE relname LIKE 'colojoin\_move%'$q$) AS r(c bigint)
	ORDER BY n
$$;

-- The result tables below: one line per query,
-- "test | nrows | result | plan | moved | moves".
\pset format unaligned
\pset fieldsep ' | '

-- the data are there, the same on both sides
SELECT c.test, c.nrows, c.result FROM (VALUES
	('orders'), ('lineitem'), ('part'), ('pl_a'), ('pl_b'), ('pm_b'), ('cn'), ('m4'),
	('m16a'), ('m16'), ('dc'), ('ml'), ('partial'), ('shipments'), ('events'),
	('tk_a'), ('tk_c'), ('nation'), ('region'), ('empty16')
) v(t), LATERAL cj_redist.check(v.t, 'SELECT * FROM ' || v.t, 'none') c;

--
-- Placement mismatch: the same modulus, some classes (pl_b, cn) or all of
-- them (pm_b) on other nodes.  The mismatched classes of the moved side
-- are copied to the anchor's nodes, one temporary table per class; the
-- others join in place.
--
SELECT c.* FROM (VALUES
	('mismatch on two classes, inner', 'SELECT a.k, v, w FROM pl_a a JOIN pl_b b ON a.k = b.k', 'refine'),
	('mismatch on two classes, left, moved side nullable', 'SELECT a.k, v, w FROM pl_a a LEFT JOIN pl_b b ON a.k = b.k', 'refine'),
	('mismatch on two classes, right', 'SELECT a.k, v, w FROM pl_b b RIGHT JOIN pl_a a ON a.k = b.k', 'refine'),
	('mismatch on two classes, semi (exists)', 'SELECT a.k, v FROM pl_a a WHERE EXISTS (SELECT FROM pl_b b WHERE b.k = a.k)', 'refine'),
	('mismatch on two classes, semi (in)', 'SELECT a.k, v FROM pl_a a WHERE a.k IN (SELECT b.k FROM pl_b b WHERE w > 50)', 'refine'),
	('mismatch on two classes, anti', 'SELECT a.k, v FROM pl_a a WHERE NOT EXISTS (SELECT FROM pl_b b WHERE b.k = a.k)', 'refine'),
	('mismatch, extra join condition', 'SELECT a.k, v, w FROM pl_a a JOIN pl_b b ON a.k = b.k AND v < w', 'refine'),
	('mismatch, pruned by an in list', 'SELECT a.k, v, w FROM pl_a a JOIN pl_b b ON a.k = b.k WHERE a.k IN (1, 2, 3)', 'refine'),
	('mismatch, leaves with column_name options', 'SELECT a.k, v, w FROM pl_a a JOIN cn ON a.k = cn.k', 'refine'),
	('mismatch, leaves with column_name options, left', 'SELECT a.k, v, w FROM pl_a a LEFT JOIN cn ON a.k = cn.k AND w % 2 = 0', 'refine'),
	('mismatch on all classes, inner', 'SELECT a.k, v, w FROM pl_a a JOIN pm_b b ON a.k = b.k', 'refine'),
	('mismatch on all classes, left', 'SELECT b.k, v, w FROM pm_b b LEFT JOIN pl_a a ON a.k = b.k', 'refine'),
	('mismatch on all classes, anti', 'SELECT b.k, w FROM pm_b b WHERE NOT EXISTS (SELECT FROM pl_a a WHERE a.k = b.k)', 'refine'),
	('mismatch, full join: nothing moves', 'SELECT a.k, b.k, v, w FROM pl_a a FULL JOIN pl_b b ON a.k = b.k', 'none'),
	('mismatch, three tables', 'SELECT a.k, b.w, c.w FROM pl_a a JOIN pl_b b ON a.k = b.k JOIN pm_b c ON c.k = a.k', 'refine+refine'),
	('mismatch, three tables, left joins', 'SELECT a.k, b.w, c.w FROM pl_a a LEFT JOIN pl_b b ON a.k = b.k LEFT JOIN pm_b c ON c.k = a.k', 'refine+refine')
) v(label, q, e), LATERAL cj_redist.check(v.label, v.q, v.e) c;

--
-- Moduli 4, 8 and 16: the finer side's partitions refine the coarser
-- side's classes.  m16a's remainders sit on the nodes of the classes of 8
-- they refine (nothing to copy); m16's do not.
--
SELECT c.* FROM (VALUES
	('8 and 16, aligned: nothing copied', 'SELECT o_key, v FROM orders JOIN m16a ON o_key = m16a.k', 'refine'),
	('8 and 16, aligned, left', 'SELECT o_key, o_cust, v FROM orders LEFT JOIN m16a ON o_key = m16a.k', 'refine'),
	('8 and 16 (int4 key), inner', 'SELECT o_key, v FROM orders JOIN m16 ON o_key = m16.k', 'refine'),
	('8 and 16, left, moved side nullable', 'SELECT o_key, o_status, v FROM orders LEFT JOIN m16 ON o_key = m16.k', 'refine'),
	('8 and 16, semi', 'SELECT o_key FROM orders WHERE EXISTS (SELECT FROM m16 WHERE m16.k = o_key AND v > 100)', 'refine'),
	('8 and 16, anti', 'SELECT o_key FROM orders WHERE NOT EXISTS (SELECT FROM m16 WHERE m16.k = o_key)', 'refine'),
	('4 as anchor, 8 refining', 'SELECT m4.k, v, o_cust FROM m4 JOIN orders ON o_key = m4.k', 'repartition'),
	('4 as anchor, 8 refining, left', 'SELECT m4.k, v, o_cust FROM m4 LEFT JOIN orders ON o_key = m4.k', 'refine'),
	('4 as anchor, 16 refining', 'SELECT m4.k, m4.v, m16.v FROM m4 JOIN m16 ON m4.k = m16.k', 'repartition'),
	('4 as anchor, 16 refining, left with a condition', 'SELECT m4.k, m4.v, m16.v FROM m4 LEFT JOIN m16 ON m4.k = m16.k AND m16.v > 20', 'refine'),
	('8 preserved, 4 nullable: 4 repartitioned', 'SELECT o_key, v FROM orders LEFT JOIN m4 ON o_key = m4.k', 'repartition'),
	('16 preserved, 8 nullable', 'SELECT m16.k, v, o_cust FROM m16 LEFT JOIN orders ON o_key = m16.k', 'repartition'),
	('8 and 16, full join: nothing moves', 'SELECT o_key, m16.k FROM orders FULL JOIN m16 ON o_key = m16.k', 'none'),
	('16 with a dropped column', 'SELECT o_key, dc.k, w FROM orders JOIN dc ON o_key = dc.k', 'refine'),
	('two levels (4 by hash, then list) as anchor', 'SELECT ml.k, cat, v, o_cust FROM ml JOIN orders ON o_key = ml.k', 'repartition'),
	('two levels, left, preserved', 'SELECT ml.k, cat, o_status FROM ml LEFT JOIN orders ON o_key = ml.k AND cat = 1', 'refine'),
	('empty table refining', 'SELECT o_key, e.k FROM orders JOIN empty16 e ON o_key = e.k', 'refine'),
	('empty table refining, left', 'SELECT o_key, e.k FROM orders LEFT JOIN empty16 e ON o_key = e.k', 'refine'),
	('empty table refining, anti', 'SELECT o_key FROM orders WHERE NOT EXISTS (SELECT FROM empty16 e WHERE e.k = o_key)', 'refine')
) v(label, q, e), LATERAL cj_redist.check(v.label, v.q, v.e) c;

--
-- Join on one side's partition key only: the other side is repartitioned
-- by the first side's hash function and sent to its nodes.  int4 and int8
-- hash alike; numeric does not (see the broadcast section).  Broadcast is
-- off here: at these sizes, broadcasting part would move fewer rows.
--
SET colojoin.enable_broadcast = off;
SELECT c.* FROM (VALUES
	('int4 key, int8 column, inner', 'SELECT p_partkey, p_brand, l_key, l_line FROM part JOIN lineitem ON l_partkey = p_partkey', 'repartition'),
	('int4 key, int8 column, left, moved side nullable', 'SELECT p_partkey, p_brand, l_key FROM part LEFT JOIN lineitem ON l_partkey = p_partkey', 'repartition'),
	('int4 key, int8 column, right', 'SELECT p_partkey, p_brand, l_key FROM lineitem RIGHT JOIN part ON l_partkey = p_partkey', 'repartition'),
	('semi (exists)', 'SELECT p_partkey, p_brand FROM part WHERE EXISTS (SELECT FROM lineitem WHERE l_partkey = p_partkey)', 'repartition'),
	('semi (in) with a filter on the moved side', 'SELECT p_partkey, p_size FROM part WHERE p_partkey IN (SELECT l_partkey FROM lineitem WHERE l_qty > 15)', 'repartition'),
	('anti', 'SELECT p_partkey, p_brand FROM part WHERE NOT EXISTS (SELECT FROM lineitem WHERE l_partkey = p_partkey)', 'repartition'),
	('extra join condition', 'SELECT p_partkey, l_line FROM part JOIN lineitem ON l_partkey = p_partkey AND l_qty > p_size', 'repartition'),
	('anchor pruned', 'SELECT p_partkey, l_line, l_qty FROM part JOIN lineitem ON l_partkey = p_partkey WHERE p_partkey IN (1, 2, 3, 50)', 'repartition'),
	('key filter on the moved side', 'SELECT p_partkey, l_line FROM part JOIN lineitem ON l_partkey = p_partkey WHERE l_partkey = 42', 'repartition'),
	('filter empties the moved side', 'SELECT p_partkey, l_line FROM part JOIN lineitem ON l_partkey = p_partkey WHERE l_qty < 0', 'repartition'),
	('filter empties the moved side, left', 'SELECT p_partkey, p_brand, l_line FROM part LEFT JOIN lineitem ON l_partkey = p_partkey AND l_qty < 0', 'repartition'),
	('filter empties the moved side, anti', 'SELECT p_partkey FROM part WHERE NOT EXISTS (SELECT FROM lineitem WHERE l_partkey = p_partkey AND l_qty < 0)', 'repartition'),
	('filter the nodes cannot run, inner: above the join', 'SELECT p_partkey, l_line FROM part JOIN lineitem ON l_partkey = p_partkey WHERE cj_redist.nonship(l_qty)', 'repartition'),
	('filter the nodes cannot run, on the nullable side', 'SELECT p_partkey, l_line FROM part LEFT JOIN lineitem ON l_partkey = p_partkey AND cj_redist.nonship(l_qty)', 'none'),
	('int4 key, int8 column (events.e_ref8)', 'SELECT s_key, s_carrier, e_id, e_tag FROM shipments JOIN events ON s_key = e_ref8', 'repartition'),
	('int8 key, int4 column (events.e_ref4)', 'SELECT o_key, o_cust, e_id FROM orders JOIN events ON o_key = e_ref4', 'repartition'),
	('int8 key, int4 column, left', 'SELECT o_key, e_id, e_tag FROM orders LEFT JOIN events ON o_key = e_ref4', 'repartition'),
	('int4 key, numeric column: no repartition', 'SELECT s_key, e_id, e_refnum FROM shipments JOIN events ON s_key = e_refnum', 'none'),
	('int4 key, numeric column, left: no repartition', 'SELECT s_key, e_id, e_refnum FROM shipments LEFT JOIN events ON s_key = e_refnum', 'none'),
	('text key, text column', 'SELECT a.k, v, id, w FROM tk_a a JOIN tk_c c ON a.k = c.name', 'repartition'),
	('text key, text column, left', 'SELECT a.k, v, id FROM tk_a a LEFT JOIN tk_c c ON a.k = c.name', 'repartition'),
	('text key, text column, anti', 'SELECT a.k, v FROM tk_a a WHERE NOT EXISTS (SELECT FROM tk_c c WHERE c.name = a.k)', 'repartition'),
	('anchor lacks classes 6 and 7', 'SELECT p_key, p_val, e_id FROM partial JOIN events ON p_key = e_ref8', 'repartition'),
	('anchor lacks classes 6 and 7, left', 'SELECT p_key, p_val, e_id FROM partial LEFT JOIN events ON p_key = e_ref8', 'repartition'),
	('two levels, repartitioned like orders', 'SELECT o_key, ml.cat, ml.v FROM orders LEFT JOIN ml ON o_key = ml.k', 'repartition'),
	('empty table repartitioned', 'SELECT p_partkey, e.v FROM part JOIN empty16 e ON p_partkey = e.v', 'repartition'),
	('preserved side would have to move: no move', 'SELECT l_key, l_partkey, p_brand FROM lineitem LEFT JOIN part ON l_partkey = p_partkey AND p_size > 5', 'none'),
	('full join: nothing moves', 'SELECT l_key, l_partkey, p_partkey FROM lineitem FULL JOIN part ON l_partkey = p_partkey', 'none')
) v(label, q, e), LATERAL cj_redist.check(v.label, v.q, v.e) c;
RESET colojoin.enable_broadcast;

--
-- Broadcast: a small side (by estimate, at most
-- colojoin.broadcast_threshold rows) copied whole to every node of the
-- other side; it serves joins that are not on a partition key, and
-- inner joins that are not equi-joins at all.
--
SELECT c.* FROM (VALUES
	('equi-join on no partition key', 'SELECT o_key, o_cust, n_name FROM orders JOIN nation ON o_cust = n_key', 'broadcast'),
	('fewer rows than repartitioning the other side', 'SELECT p_partkey, p_brand, l_key, l_line FROM part JOIN lineitem ON l_partkey = p_partkey', 'broadcast'),
	('preserved side stays, the small side is broadcast', 'SELECT l_key, l_partkey, p_brand FROM lineitem LEFT JOIN part ON l_partkey = p_partkey AND p_size > 5', 'broadcast'),
	('int4 key, numeric column', 'SELECT s_key, e_id, e_refnum FROM shipments JOIN events ON s_key = e_refnum', 'broadcast'),
	('int4 key, numeric column, left', 'SELECT s_key, e_id, e_refnum FROM shipments LEFT JOIN events ON s_key = e_refnum', 'broadcast'),
	('non-equi inner join', 'SELECT o_key, o_cust, n_key FROM orders JOIN nation ON o_cust < n_key WHERE o_key < 20', 'broadcast'),
	('non-equi inner join with a second condition', 'SELECT o_key, n_key FROM orders JOIN nation ON o_cust > n_key AND n_region = o_cust % 5', 'broadcast'),
	('left, big side preserved', 'SELECT o_key, o_cust, n_name FROM orders LEFT JOIN nation ON o_cust = n_key', 'broadcast'),
	('left, big side preserved, non-equi', 'SELECT o_key, o_cust, n_name FROM orders LEFT JOIN nation ON o_cust < n_key AND n_region = 2', 'broadcast'),
	('right, big side preserved', 'SELECT o_key, n_name FROM nation RIGHT JOIN orders ON o_cust = n_key', 'broadcast'),
	('semi', 'SELECT o_key, o_cust FROM orders WHERE EXISTS (SELECT FROM nation WHERE n_key = o_cust AND n_region < 3)', 'broadcast'),
	('anti', 'SELECT o_key, o_cust FROM orders WHERE NOT EXISTS (SELECT FROM nation WHERE n_key = o_cust)', 'broadcast'),
	('every column type through COPY', 'SELECT o_key, n_key, n_name, n_comment, n_tags, n_blob, n_code FROM orders JOIN nation ON o_cust = n_key', 'broadcast'),
	('collation "C" of a moved column', 'SELECT o_key, n_code FROM orders JOIN nation ON o_cust = n_key WHERE n_code < ''a''', 'broadcast'),
	('range partitioned small side', 'SELECT o_key, r_name FROM orders JOIN region ON o_cust = r_key', 'broadcast'),
	('range partitioned small side, left, expression', 'SELECT o_key, r_name FROM orders LEFT JOIN region ON o_cust % 5 = r_key', 'broadcast'),
	('two small sides', 'SELECT o_key, n_name, r_name FROM orders JOIN nation ON o_cust = n_key JOIN region ON n_region = r_key', 'broadcast+broadcast'),
	('join on an expression of the key', 'SELECT p_partkey, l_line FROM part JOIN lineitem ON l_partkey = p_partkey + 0', 'broadcast'),
	('or join', 'SELECT p_partkey, l_line FROM part JOIN lineitem ON l_partkey = p_partkey OR l_qty = p_size', 'broadcast'),
	('16 with a dropped column, on a non-key column', 'SELECT o_key, dc.k, w FROM orders JOIN dc ON o_cust = dc.w', 'broadcast'),
	('small side preserved: the big nullable side moves', 'SELECT n_key, n_name, o_key FROM nation LEFT JOIN orders ON o_cust = n_key', 'broadcast'),
	('full join: nothing moves', 'SELECT o_key, n_key FROM nation FULL JOIN orders ON o_cust = n_key', 'none'),
	('not in (null-aware): not a join colojoin runs', 'SELECT o_key FROM orders WHERE o_cust NOT IN (SELECT n_key FROM nation WHERE n_key IS NOT NULL)', 'none')
) v(label, q, e), LATERAL cj_redist.check(v.label, v.q, v.e) c;

--
-- Three tables: a colocated pair and a moved third one; and queries
-- around a redistributed join (repartitioned ones with broadcast off).
--
SELECT c.* FROM (VALUES
	('colocated pair, part broadcast', 'SELECT o_key, l_line, p_brand FROM orders JOIN lineitem ON o_key = l_key JOIN part ON l_partkey = p_partkey', 'broadcast'),
	('colocated pair, part broadcast, left', 'SELECT o_key, l_line, p_brand FROM orders JOIN lineitem ON o_key = l_key LEFT JOIN part ON l_partkey = p_partkey', 'broadcast'),
	('aggregate by brand (broadcast)', 'SELECT p_brand, count(*), sum(l_qty) FROM lineitem JOIN part ON l_partkey = p_partkey GROUP BY p_brand', 'broadcast'),
	('aggregate over a refined join', 'SELECT o_status, count(*), sum(v) FROM orders JOIN m16 ON o_key = m16.k GROUP BY o_status', 'refine'),
	('count over a mismatched join', 'SELECT count(*), count(w), sum(v) FROM pl_a a LEFT JOIN pm_b b ON a.k = b.k', 'refine'),
	('correlated subquery, rescanned; part has the parameter, so lineitem moves', 'SELECT g, (SELECT count(*) FROM part JOIN lineitem ON l_partkey = p_partkey WHERE p_size = g) FROM generate_series(1, 4) g', 'repartition')
) v(label, q, e), LATERAL cj_redist.check(v.label, v.q, v.e) c;
SET colojoin.enable_broadcast = off;
SELECT c.* FROM (VALUES
	('colocated pair, lineitem repartitioned', 'SELECT p_partkey, l_line, s_carrier FROM part JOIN shipments ON s_key = p_partkey JOIN lineitem ON l_partkey = s_key', 'repartition'),
	('repartitioned pair, then colocated', 'SELECT p_partkey, l_line, s_carrier FROM part JOIN lineitem ON l_partkey = p_partkey JOIN shipments ON s_key = p_partkey', 'repartition'),
	('aggregate by brand (repartition)', 'SELECT p_brand, count(*), sum(l_qty), sum(l_price) FROM part JOIN lineitem ON l_partkey = p_partkey GROUP BY p_brand', 'repartition'),
	('aggregate by the anchor key', 'SELECT p_partkey, count(l_key), max(l_qty) FROM part LEFT JOIN lineitem ON l_partkey = p_partkey GROUP BY p_partkey', 'repartition'),
	('distinct', 'SELECT DISTINCT p_brand, l_qty FROM part JOIN lineitem ON l_partkey = p_partkey', 'repartition'),
	('order by, limit', 'SELECT p_partkey, l_line, l_qty, l_key FROM part JOIN lineitem ON l_partkey = p_partkey ORDER BY p_partkey, l_line, l_qty, l_key LIMIT 12', 'repartition'),
	('in a materialized cte used twice', 'WITH j AS MATERIALIZED (SELECT p_brand, l_qty FROM part JOIN lineitem ON l_partkey = p_partkey) SELECT a.p_brand, a.n, b.q FROM (SELECT p_brand, count(*) n FROM j GROUP BY 1) a JOIN (SELECT p_brand, sum(l_qty) q FROM j GROUP BY 1) b USING (p_brand)', 'repartition'),
	('two redistributed joins in one query', 'SELECT x.p_brand, x.n, y.n FROM (SELECT p_brand, count(*) n FROM part JOIN lineitem ON l_partkey = p_partkey GROUP BY 1) x JOIN (SELECT p_brand, count(*) n FROM part JOIN pl_b ON p_partkey = pl_b.w GROUP BY 1) y USING (p_brand)', 'repartition+repartition')
) v(label, q, e), LATERAL cj_redist.check(v.label, v.q, v.e) c;
RESET colojoin.enable_broadcast;

--
-- Grouping and DISTINCT over moved tables.  A class holds all rows of a
-- key value of the anchor, of a table whose partitions refine it, and of
-- the column a table was repartitioned by; not of a broadcast table's own
-- partition key (every node has all its rows), nor of a repartitioned
-- table's own partition key.  Grouping by those must combine groups
-- across classes.
--
SELECT c.* FROM (VALUES
	('group by the broadcast table''s partition key', 'SELECT n_name, count(*), sum(o_key) FROM orders JOIN nation ON o_cust = n_key GROUP BY n_name', 'broadcast'),
	('group by it and another column', 'SELECT n_name, n_key, count(*) FROM orders JOIN nation ON o_cust = n_key GROUP BY n_name, n_key', 'broadcast'),
	('distinct on the broadcast table''s partition key', 'SELECT DISTINCT n_name FROM orders JOIN nation ON o_cust = n_key', 'broadcast'),
	('group by a broadcast range key', 'SELECT r_key, count(*) FROM orders JOIN region ON o_cust = r_key GROUP BY r_key', 'broadcast'),
	('distinct on a broadcast range key', 'SELECT DISTINCT r_key FROM orders JOIN region ON o_cust = r_key', 'broadcast'),
	('group by the key of a big broadcast side', '/*+ BroadcastJoin(orders) */ SELECT o_key, count(*) FROM nation JOIN orders ON o_cust = n_key GROUP BY o_key', 'broadcast'),
	('group by the broadcast key in three tables', 'SELECT p_partkey, count(*) FROM orders JOIN lineitem ON o_key = l_key JOIN part ON l_partkey = p_partkey GROUP BY p_partkey', 'broadcast'),
	('group by the anchor key, broadcast side', 'SELECT o_key, n_name, count(*) FROM orders JOIN nation ON o_cust = n_key GROUP BY o_key, n_name', 'broadcast'),
	('group by a refining table''s key', 'SELECT b.k, count(*) FROM pl_a a JOIN pm_b b ON a.k = b.k GROUP BY b.k', 'refine'),
	('group by a refining table''s key, nullable', 'SELECT m16.k, count(*) FROM orders LEFT JOIN m16 ON o_key = m16.k GROUP BY m16.k', 'refine'),
	('group by the coarse anchor''s key', 'SELECT m4.k, count(*), sum(o_cust) FROM m4 JOIN orders ON o_key = m4.k GROUP BY m4.k', 'repartition')
) v(label, q, e), LATERAL cj_redist.check(v.label, v.q, v.e) c;
SET colojoin.enable_broadcast = off;
SELECT c.* FROM (VALUES
	('group by the repartitioned table''s partition key', 'SELECT l_key, count(*), sum(p_size) FROM part JOIN lineitem ON l_partkey = p_partkey GROUP BY l_key', 'repartition'),
	('same, with having', 'SELECT l_key, sum(l_qty) FROM part JOIN lineitem ON l_partkey = p_partkey GROUP BY l_key HAVING sum(l_qty) > 40', 'repartition'),
	('distinct on the repartitioned table''s partition key', 'SELECT DISTINCT l_key FROM part JOIN lineitem ON l_partkey = p_partkey', 'repartition'),
	('same, three tables', 'SELECT l_key, count(*) FROM part JOIN shipments ON s_key = p_partkey JOIN lineitem ON l_partkey = s_key GROUP BY l_key', 'repartition'),
	('group by the column repartitioned by', 'SELECT l_partkey, count(*) FROM part JOIN lineitem ON l_partkey = p_partkey GROUP BY l_partkey', 'repartition'),
	('group by the column repartitioned by, nullable', 'SELECT l_partkey, count(*) FROM part LEFT JOIN lineitem ON l_partkey = p_partkey GROUP BY l_partkey', 'repartition'),
	('group by the text column repartitioned by', 'SELECT c.name, count(*) FROM tk_a a JOIN tk_c c ON a.k = c.name GROUP BY c.name', 'repartition')
) v(label, q, e), LATERAL cj_redist.check(v.label, v.q, v.e) c;
RESET colojoin.enable_broadcast;

--
-- Settings: each strategy can be turned off, and then nothing moves that
-- way.
--
SET colojoin.enable_redistribution = off;
SELECT c.* FROM (VALUES
	('redistribution off: mismatch, broadcast instead', 'SELECT a.k, v, w FROM pl_a a JOIN pl_b b ON a.k = b.k', 'broadcast'),
	('redistribution off: moduli, broadcast instead', 'SELECT o_key, v FROM orders JOIN m16 ON o_key = m16.k', 'broadcast'),
	('redistribution off: nullable side broadcast instead', 'SELECT m4.k, v, o_key FROM m4 LEFT JOIN orders ON o_key = m4.k', 'broadcast'),
	('redistribution off: part still broadcast', 'SELECT p_partkey, l_line FROM part JOIN lineitem ON l_partkey = p_partkey', 'broadcast')
) v(label, q, e), LATERAL cj_redist.check(v.label, v.q, v.e) c;
SET colojoin.enable_broadcast = off;
SELECT c.* FROM (VALUES
	('both off: nothing moves', 'SELECT p_partkey, l_line FROM part JOIN lineitem ON l_partkey = p_partkey', 'none'),
	('both off: mismatch', 'SELECT a.k, v, w FROM pl_a a LEFT JOIN pl_b b ON a.k = b.k', 'none'),
	('both off: moduli', 'SELECT m4.k, v, o_cust FROM m4 JOIN orders ON o_key = m4.k', 'none'),
	('both off: colocated joins still run', 'SELECT o_key, l_line FROM orders JOIN lineitem ON o_key = l_key', 'colocated')
) v(label, q, e), LATERAL cj_redist.check(v.label, v.q, v.e) c;
RESET colojoin.enable_redistribution;
SELECT c.* FROM (VALUES
	('broadcast off: no broadcast', 'SELECT o_key, n_name FROM orders JOIN nation ON o_cust = n_key', 'none'),
	('broadcast off: non-equi join', 'SELECT o_key, n_key FROM orders JOIN nation ON o_cust < n_key WHERE o_key < 20', 'none'),
	('broadcast off: numeric column', 'SELECT s_key, e_id FROM shipments JOIN events ON s_key = e_refnum', 'none'),
	('broadcast off: preserved side would have to move', 'SELECT l_key, l_partkey, p_brand FROM lineitem LEFT JOIN part ON l_partkey = p_partkey', 'none'),
	('broadcast off: repartition instead', 'SELECT l_key, p_brand FROM lineitem JOIN part ON l_partkey = p_partkey', 'repartition'),
	('broadcast off: three tables, lineitem repartitioned', 'SELECT p_partkey, l_line, s_carrier FROM part JOIN shipments ON s_key = p_partkey JOIN lineitem ON l_partkey = s_key', 'repartition')
) v(label, q, e), LATERAL cj_redist.check(v.label, v.q, v.e) c;
RESET colojoin.enable_broadcast;
SET colojoin.broadcast_threshold = 10;
SELECT c.* FROM (VALUES
	('threshold 10: nation is too big', 'SELECT o_key, n_name FROM orders JOIN nation ON o_cust = n_key', 'none'),
	('threshold 10: a filtered nation is not', 'SELECT o_key, n_name FROM orders JOIN nation ON o_cust = n_key WHERE n_key < 3', 'broadcast'),
	('threshold 10: small preserved, big nullable', 'SELECT n_key, o_key FROM nation LEFT JOIN orders ON o_cust = n_key', 'none')
) v(label, q, e), LATERAL cj_redist.check(v.label, v.q, v.e) c;
RESET colojoin.broadcast_threshold;
SET colojoin.enable = off;
SELECT c.* FROM (VALUES
	('colojoin off', 'SELECT p_partkey, l_line FROM part JOIN lineitem ON l_partkey = p_partkey', 'none')
) v(label, q, e), LATERAL cj_redist.check(v.label, v.q, v.e) c;
RESET colojoin.enable;

--
-- Hints force a move where the planner would choose another way, or none.
--
SELECT c.* FROM (VALUES
	('BroadcastJoin of the bigger side', '/*+ BroadcastJoin(lineitem) */ SELECT p_partkey, l_line FROM part JOIN lineitem ON l_partkey = p_partkey', 'broadcast'),
	('BroadcastJoin instead of refinement', '/*+ BroadcastJoin(b) */ SELECT a.k, v, w FROM pl_a a JOIN pl_b b ON a.k = b.k', 'broadcast'),
	('Redistribute instead of broadcast', '/*+ Redistribute(lineitem) */ SELECT l_key, p_brand FROM lineitem JOIN part ON l_partkey = p_partkey', 'repartition'),
	('RedistributeJoin instead of broadcast', '/*+ RedistributeJoin(lineitem part) */ SELECT l_key, p_brand FROM lineitem JOIN part ON l_partkey = p_partkey', 'repartition'),
	('Redistribute, left', '/*+ Redistribute(lineitem) */ SELECT p_partkey, l_key FROM part LEFT JOIN lineitem ON l_partkey = p_partkey', 'repartition'),
	('Redistribute in a three-way join', '/*+ Redistribute(lineitem) */ SELECT p_partkey, l_line, s_carrier FROM part JOIN shipments ON s_key = p_partkey JOIN lineitem ON l_partkey = s_key', 'repartition')
) v(label, q, e), LATERAL cj_redist.check(v.label, v.q, v.e) c;
-- a hint beats the settings
SET colojoin.enable_redistribution = off;
SET colojoin.enable_broadcast = off;
SELECT c.* FROM (VALUES
	('Redistribute with redistribution off', '/*+ Redistribute(lineitem) */ SELECT p_partkey, l_line FROM part JOIN lineitem ON l_partkey = p_partkey', 'repartition'),
	('BroadcastJoin with broadcast off', '/*+ BroadcastJoin(nation) */ SELECT o_key, n_name FROM orders JOIN nation ON o_cust = n_key', 'broadcast')
) v(label, q, e), LATERAL cj_redist.check(v.label, v.q, v.e) c;
RESET colojoin.enable_redistribution;
RESET colojoin.enable_broadcast;
SET colojoin.broadcast_threshold = 10;
SELECT c.* FROM (VALUES
	('BroadcastJoin over the threshold', '/*+ BroadcastJoin(nation) */ SELECT o_key, n_name FROM orders LEFT JOIN nation ON o_cust = n_key', 'broadcast')
) v(label, q, e), LATERAL cj_redist.check(v.label, v.q, v.e) c;
RESET colojoin.broadcast_threshold;
-- A moved table's own conditions run where its rows are read, once: its
-- tasks do not repeat them, and its rows carry only the columns the query
-- reads after the move.  A condition the nodes cannot run (a function of
-- this database alone) runs on the coordinator over the moved rows, which
-- carry its column for it.
CREATE FUNCTION cj_redist.not_third(int) RETURNS bool
LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN $1 % 3 <> 0; END $$;
CREATE TABLE cj_redist.source_filtered (label text, q text, cols text);
INSERT INTO cj_redist.source_filtered VALUES
	('repartitioned, filtered', '/*+ Redistribute(lineitem) */ SELECT p_partkey, l_key FROM part JOIN lineitem ON l_partkey = p_partkey WHERE l_qty > 10 AND l_price < 500', 'l_qty|l_price'),
	('repartitioned, coordinator condition', '/*+ Redistribute(lineitem) */ SELECT p_partkey, l_key FROM part JOIN lineitem ON l_partkey = p_partkey WHERE l_qty > 10 AND cj_redist.not_third(l_line)', 'l_qty'),
	('repartitioned, coordinator condition''s column', '/*+ Redistribute(lineitem) */ SELECT p_partkey, l_key FROM part JOIN lineitem ON l_partkey = p_partkey WHERE l_qty > 10 AND cj_redist.not_third(l_line)', 'l_line'),
	('broadcast, filtered', '/*+ BroadcastJoin(nation) */ SELECT o_key, n_name FROM orders JOIN nation ON o_cust = n_key WHERE n_region < 3', 'n_region'),
	('broadcast into a left join', '/*+ BroadcastJoin(nation) */ SELECT o_key, n_name FROM orders LEFT JOIN nation ON o_cust = n_key AND n_region < 3', 'n_region');
SELECT c.* FROM cj_redist.source_filtered v,
	LATERAL cj_redist.check(v.label, v.q, CASE WHEN v.q LIKE '%Broadcast%' THEN 'broadcast' ELSE 'repartition' END) c
ORDER BY v.label;
-- whether the tasks' SQL reads those columns (only the coordinator's
-- condition's column should travel)
SET search_path = cj_redist_sharded;
SELECT v.label, v.cols, bool_or(l ~ v.cols) AS tasks_read_them
FROM cj_redist.source_filtered v,
	LATERAL cj_redist.plan_lines('EXPLAIN (VERBOSE, COSTS OFF) ' || v.q) l
WHERE l ~ '^ *Task \d+ on'
GROUP BY v.label, v.cols ORDER BY v.label;
RESET search_path;
\pset format aligned
\pset fieldsep '|'
-- a hint that cannot be followed is an error that says why
SET search_path = cj_redist_sharded;
/*+ BroadcastJoin(orders) */ SELECT count(*) FROM orders LEFT JOIN nation ON o_cust = n_key;
/*+ Redistribute(part) */ SELECT count(*) FROM lineitem FULL JOIN part ON l_partkey = p_partkey;
/*+ Redistribute(nation) */ SELECT count(*) FROM orders JOIN nation ON o_cust = n_key;
/*+ RedistributeJoin(part lineitem) */ SELECT count(*) FROM part JOIN lineitem ON l_partkey < p_partkey WHERE p_partkey < 3;
/*+ BroadcastJoin(part) */ SELECT count(*) FROM part JOIN (VALUES (1), (2)) v(x) ON p_partkey = x;
/*+ Redistribute(lineitem) */ SELECT count(*) FROM lineitem JOIN part ON l_partkey = p_partkey WHERE l_qty = (SELECT 5);
SET search_path = cj_redist_local;
/*+ RedistributeJoin(lineitem part) */ SELECT count(*) FROM lineitem JOIN part ON l_partkey = p_partkey;
RESET search_path;

--
-- Several redistributed scans open at once in one session: cursors read
-- in turns, and the same cached plan run again inside its own rows (the
-- same move table names, so each run needs its own node sessions).
--
CREATE FUNCTION cj_redist.interleaved(schema text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	c1 refcursor;
	c2 refcursor;
	c3 refcursor;
	x bigint;
	n bigint[] := '{0,0,0}';
	s bigint[] := '{0,0,0}';
	done boolean[] := '{f,f,f}';
BEGIN
	PERFORM set_config('search_path', schema, true);
	OPEN c1 FOR EXECUTE 'SELECT p_partkey + l_line FROM part JOIN lineitem ON l_partkey = p_partkey';
	OPEN c2 FOR EXECUTE 'SELECT o_key + n_key FROM orders JOIN nation ON o_cust = n_key';
	OPEN c3 FOR EXECUTE 'SELECT a.k + w FROM pl_a a LEFT JOIN pm_b b ON a.k = b.k';
	WHILE NOT (done[1] AND done[2] AND done[3]) LOOP
		IF NOT done[1] THEN
			FETCH c1 INTO x;
			done[1] := NOT FOUND;
			n[1] := n[1] + FOUND::int;
			s[1] := s[1] + coalesce(x, 0);
		END IF;
		IF NOT done[2] THEN
			FETCH c2 INTO x;
			done[2] := NOT FOUND;
			n[2] := n[2] + FOUND::int;
			s[2] := s[2] + coalesce(x, 0);
		END IF;
		IF NOT done[3] THEN
			FETCH c3 INTO x;
			done[3] := NOT FOUND;
			n[3] := n[3] + FOUND::int;
			s[3] := s[3] + coalesce(x, 0);
		END IF;
	END LOOP;
	CLOSE c1;
	CLOSE c2;
	CLOSE c3;
	RETURN format('%s rows, %s rows, %s rows; sums %s', n[1], n[2], n[3], s);
END
$$;
CREATE FUNCTION cj_redist.nested(depth int, schema text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	r record;
	n bigint := 0;
BEGIN
	IF schema = 'cj_redist_sharded' THEN
		FOR r IN SELECT p_partkey, l_line FROM cj_redist_sharded.part
				 JOIN cj_redist_sharded.lineitem ON l_partkey = p_partkey LOOP
			n := n + 1;
			IF depth > 0 AND n = 1 THEN
				n := n + cj_redist.nested(depth - 1, schema);
			END IF;
		END LOOP;
	ELSE
		FOR r IN SELECT p_partkey, l_line FROM cj_redist_local.part
				 JOIN cj_redist_local.lineitem ON l_partkey = p_partkey LOOP
			n := n + 1;
			IF depth > 0 AND n = 1 THEN
				n := n + cj_redist.nested(depth - 1, schema);
			END IF;
		END LOOP;
	END IF;
	RETURN n;
END
$$;
SELECT cj_redist.interleaved('cj_redist_sharded') AS sharded,
	   cj_redist.interleaved('cj_redist_sharded') = cj_redist.interleaved('cj_redist_local') AS same;
SELECT d, cj_redist.nested(d, 'cj_redist_sharded') AS sharded,
	   cj_redist.nested(d, 'cj_redist_sharded') = cj_redist.nested(d, 'cj_redist_local') AS same
FROM generate_series(0, 2) d;
SELECT * FROM cj_redist.leftovers();

--
-- Errors.  A remote error names its node and, while rows move, the move;
-- temporary tables never outlive the statement, whatever happens: not
-- after an error while rows move, in a task, or on the coordinator; not
-- after a savepoint or a PL/pgSQL exception block rolled back; not after
-- a cursor left open at commit or a LIMIT that stops early.  Other
-- sessions see a node's temporary tables in pg_class once the remote
-- transaction that made them commits.
--
-- a function that fails on the coordinator, in the middle of the rows
CREATE FUNCTION cj_redist.boom(int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	IF $1 = 22 THEN
		RAISE EXCEPTION 'boom at %', $1;
	END IF;
	RETURN true;
END
$$;
-- the error of a statement: its message, the node it names, and where
CREATE FUNCTION cj_redist.error_of(stmt text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	msg text;
	ctx text;
BEGIN
	EXECUTE stmt;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, ctx = PG_EXCEPTION_CONTEXT;
	RETURN format('%s | node %s | %s', msg,
				  coalesce(substring(ctx FROM 'node "([^"]+)"'), 'not named'),
				  CASE WHEN ctx LIKE '%(moving %' THEN 'moving ' || substring(ctx FROM '\(moving (\S+)')
					   WHEN ctx LIKE '%partition class%' THEN 'in a task'
					   ELSE 'on the coordinator' END);
END
$$;
SET search_path = cj_redist_sharded;
\set VERBOSITY terse
-- at the top level: the remote transactions roll back
-- an error on a node while rows move (the moved side's filter)
/*+ Redistribute(lineitem) */ SELECT count(*) FROM part JOIN lineitem ON l_partkey = p_partkey WHERE 1 / (l_qty - 22) > -100;
-- an error on the node a class is copied from
SELECT count(*) FROM pl_a a JOIN pm_b b ON a.k = b.k WHERE 1 / (w - 5) > -100;
-- an error on a node in a task, after the moves
/*+ Redistribute(lineitem) */ SELECT count(*) FROM part JOIN lineitem ON l_partkey = p_partkey WHERE 1 / (p_partkey - 49) > -100;
-- an error on the coordinator while the tasks' rows arrive
/*+ Redistribute(lineitem) */ SELECT count(*) FROM part JOIN lineitem ON l_partkey = p_partkey WHERE cj_redist.boom(l_qty);
\set VERBOSITY default
SELECT * FROM cj_redist.leftovers();
-- the session goes on
SELECT count(*) FROM part JOIN lineitem ON l_partkey = p_partkey;
SELECT count(*), sum(w) FROM pl_a a JOIN pm_b b ON a.k = b.k;
SELECT * FROM cj_redist.leftovers();
-- inside savepoints: each failed level is rolled back, the transaction goes on
\set VERBOSITY terse
BEGIN;
SELECT count(*) FROM part JOIN lineitem ON l_partkey = p_partkey;
SAVEPOINT s1;
/*+ Redistribute(lineitem) */ SELECT count(*) FROM part JOIN lineitem ON l_partkey = p_partkey WHERE 1 / (l_qty - 22) > -100;
ROLLBACK TO s1;
SELECT count(*), sum(w) FROM pl_a a JOIN pl_b b ON a.k = b.k;
SAVEPOINT s2;
SELECT count(*) FROM pl_a a JOIN pm_b b ON a.k = b.k WHERE 1 / (w - 5) > -100;
ROLLBACK TO s2;
SELECT count(*), sum(w) FROM pl_a a JOIN pm_b b ON a.k = b.k;
SAVEPOINT s3;
/*+ Redistribute(lineitem) */ SELECT count(*) FROM part JOIN lineitem ON l_partkey = p_partkey WHERE cj_redist.boom(l_qty);
ROLLBACK TO s3;
SELECT count(*), sum(w) FROM pl_a a JOIN pl_b b ON a.k = b.k;
COMMIT;
\set VERBOSITY default
SELECT * FROM cj_redist.leftovers();
-- in PL/pgSQL exception blocks: the error names the node and the move
SELECT e.error FROM (VALUES
	(1, '/*+ Redistribute(lineitem) */ SELECT count(*) FROM part JOIN lineitem ON l_partkey = p_partkey WHERE 1 / (l_qty - 22) > -100'),
	(2, 'SELECT count(*) FROM pl_a a JOIN pm_b b ON a.k = b.k WHERE 1 / (w - 5) > -100'),
	(3, '/*+ Redistribute(lineitem) */ SELECT count(*) FROM part JOIN lineitem ON l_partkey = p_partkey WHERE 1 / (p_partkey - 49) > -100'),
	(4, '/*+ BroadcastJoin(nation) */ SELECT count(*) FROM orders JOIN nation ON o_cust = n_key WHERE 1 / (n_region - 4) > -100'),
	(5, '/*+ Redistribute(lineitem) */ SELECT count(*) FROM part JOIN lineitem ON l_partkey = p_partkey WHERE cj_redist.boom(l_qty)')
) v(i, q), LATERAL cj_redist.error_of(v.q) e(error) ORDER BY v.i;
SELECT * FROM cj_redist.leftovers();
-- cursors and LIMIT
BEGIN;
DECLARE c1 CURSOR FOR SELECT p_partkey, l_line FROM part JOIN lineitem ON l_partkey = p_partkey;
MOVE 2 IN c1;
COMMIT;
BEGIN;
DECLARE c2 CURSOR WITH HOLD FOR SELECT o_key, n_name FROM orders JOIN nation ON o_cust = n_key;
MOVE 1 IN c2;
COMMIT;
SELECT count(*) AS nodes_with_move_tables FROM cj_redist.leftovers() WHERE move_tables > 0;
MOVE ALL IN c2;
CLOSE c2;
SELECT count(*) FROM (SELECT p_partkey FROM part JOIN lineitem ON l_partkey = p_partkey LIMIT 1) s;
-- the right answers of the counts above
SELECT count(*) FROM cj_redist_local.part JOIN cj_redist_local.lineitem ON l_partkey = p_partkey;
SELECT count(*), sum(w) FROM cj_redist_local.pl_a a JOIN cj_redist_local.pl_b b ON a.k = b.k;
SELECT count(*), sum(w) FROM cj_redist_local.pl_a a JOIN cj_redist_local.pm_b b ON a.k = b.k;
SELECT count(*) FROM cj_redist_local.orders JOIN cj_redist_local.nation ON o_cust = n_key;
-- EXPLAIN ANALYZE moves the rows too, and counts the bytes
SELECT bool_or(l LIKE '%Bytes Moved: %' AND l NOT LIKE '%Bytes Moved: 0') AS bytes_counted
FROM cj_redist.plan_lines('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT p_partkey, l_line FROM part JOIN lineitem ON l_partkey = p_partkey') l;
RESET search_path;
-- nothing left on any node after all of the above
SELECT * FROM cj_redist.leftovers();

--
-- Clean up, here and on the nodes.
--
SET client_min_messages = warning;
DROP SCHEMA cj_redist_sharded CASCADE;
DROP SCHEMA cj_redist_local CASCADE;
SELECT dblink_exec('cj_redist_n' || n, 'DROP SCHEMA cj_redist_remote CASCADE')
FROM cj_redist.nodes ORDER BY n;
SELECT dblink_disconnect('cj_redist_n' || n) FROM cj_redist.nodes ORDER BY n;
DROP SCHEMA cj_redist CASCADE;
\i sql/include/three_nodes_end.sql
