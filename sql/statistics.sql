--
-- statistics: colojoin.refresh_statistics reads the sizes of the leaves'
-- remote tables from the nodes' catalogs into the foreign partitions'
-- statistics, so that plans of foreign tables nobody ANALYZEd move the
-- small side, not the large one.
--
\set prefix cj_st
\i sql/include/three_nodes_begin.sql

CREATE SCHEMA cj_st;
SET search_path = cj_st, public;
SELECT dblink_connect('cj_st_d' || n,
		format('host=127.0.0.1 port=%s dbname=colojoin_regress', p))
FROM (VALUES (1, :'node1_port'), (2, :'node2_port'), (3, :'node3_port')) v(n, p);

-- big: 6 hash partitions, 30,000 rows; small: a list table of 60 rows
-- whose join column is not big's key; neither is ANALYZEd here
CREATE TABLE big (k int, ref int, pad text) PARTITION BY HASH (k);
SELECT colojoin.create_shards('big', ARRAY[:'srv1', :'srv2', :'srv3'], 6);
CREATE TABLE small (region text, id int, name text) PARTITION BY LIST (region);
SELECT dblink_exec('cj_st_d' || n, format('CREATE TABLE cj_st.small_%s (region text, id int, name text)', r))
FROM (VALUES (1, 'eu'), (2, 'us')) v(n, r);
CREATE FOREIGN TABLE small_eu PARTITION OF small FOR VALUES IN ('eu') SERVER :"srv1";
CREATE FOREIGN TABLE small_us PARTITION OF small FOR VALUES IN ('us') SERVER :"srv2";
INSERT INTO big SELECT g, g % 60, repeat('x', 40) FROM generate_series(1, 30000) g;
INSERT INTO small SELECT (ARRAY['eu', 'us'])[1 + g % 2], g, 'n' || g FROM generate_series(1, 60) g;
-- the nodes counted some of their tables (VACUUM), not others
SELECT dblink_exec('cj_st_d1', 'VACUUM cj_st.big_p0, cj_st.small_eu');

-- never analyzed: the planner knows nothing of the sizes
SELECT relname, reltuples FROM pg_class
WHERE relnamespace = 'cj_st'::regnamespace AND relkind = 'f' ORDER BY relname;
SELECT colojoin.refresh_statistics('big') AS big_leaves,
	   colojoin.refresh_statistics('small') AS small_leaves;
-- the sizes now: exact where the node counted, estimated from pages elsewhere
SELECT c.relname, c.reltuples = n.actual AS exact,
	   c.reltuples BETWEEN n.actual / 5 AND n.actual * 5 AS close
FROM pg_class c,
	 LATERAL (SELECT CASE WHEN c.relname LIKE 'big%'
						  THEN (SELECT count(*) FROM big WHERE satisfies_hash_partition('big'::regclass, 6,
									substr(c.relname, 6)::int, k))
						  ELSE (SELECT count(*) FROM small WHERE region = substr(c.relname, 7)) END AS actual) n
WHERE c.relnamespace = 'cj_st'::regnamespace AND c.relkind = 'f'
ORDER BY c.relname;
-- the plan moves small, the smaller side, to big's nodes
CREATE FUNCTION cj_st.strategy(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		IF line ~ 'Strategy:' THEN
			RETURN regexp_replace(line, '^\s*Strategy: ', '');
		END IF;
	END LOOP;
	RETURN 'not run by colojoin';
END
$$;
SELECT cj_st.strategy('SELECT small.name, count(*) FROM big JOIN small ON big.ref = small.id GROUP BY 1');
-- all sharded tables at once
SELECT colojoin.refresh_statistics() >= 8 AS refreshed_all;
-- and the answer is right
SELECT (SELECT count(*) FROM big JOIN small ON big.ref = small.id) AS joined,
	   (SELECT count(*) FROM big WHERE ref BETWEEN 1 AND 60) AS expected;

-- clean up
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA cj_st CASCADE;
SELECT dblink_exec('cj_st_d' || n, 'DROP SCHEMA IF EXISTS cj_st CASCADE') FROM generate_series(1, 3) n;
SELECT dblink_disconnect('cj_st_d' || n) FROM generate_series(1, 3) n;
\i sql/include/three_nodes_end.sql
