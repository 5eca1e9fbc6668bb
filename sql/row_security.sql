--
-- row_security: row-level security policies and security-barrier views keep
-- PostgreSQL's order through colojoin.  A user's function that is not
-- leakproof never sees a row a policy hides: the policy's quals run first,
-- on the node or on the coordinator, and a condition that could leak runs
-- after them on the coordinator (EXPLAIN shows it in the scan's Filter), or
-- the join is left to PostgreSQL.  Every query is also run on plain local
-- twins with the same policy, and the function records what it saw.
--
\set prefix cj_rls
\i sql/include/three_nodes_begin.sql
SET colojoin.remote_size_lifetime = 0;

SET client_min_messages = warning;
DROP ROLE IF EXISTS cj_rls_user;
RESET client_min_messages;
CREATE ROLE cj_rls_user LOGIN;
-- a non-superuser needs a password for the nodes, unless a superuser says not
CREATE USER MAPPING FOR cj_rls_user SERVER :"srv1" OPTIONS (user 'postgres', password_required 'false');
CREATE USER MAPPING FOR cj_rls_user SERVER :"srv2" OPTIONS (user 'postgres', password_required 'false');
CREATE USER MAPPING FOR cj_rls_user SERVER :"srv3" OPTIONS (user 'postgres', password_required 'false');

SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
	'SET client_min_messages = warning; DROP SCHEMA IF EXISTS cj_rls_s CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;

CREATE SCHEMA cj_rls_s;		-- sharded
CREATE SCHEMA cj_rls_l;		-- plain twins
GRANT USAGE ON SCHEMA cj_rls_s, cj_rls_l TO cj_rls_user;

-- docs: k, the owner, a secret (numeric text for the owner's rows only, so
-- that a cast of a hidden row's secret fails); notes: colocated with docs;
-- tags: sharded on another column (joins on k move rows)
CREATE TABLE cj_rls_s.docs (k int, owner_name text, secret text, grp int) PARTITION BY HASH (k);
CREATE TABLE cj_rls_s.notes (k int, v int) PARTITION BY HASH (k);
CREATE TABLE cj_rls_s.tags (t int, k int, tag text) PARTITION BY HASH (t);
SELECT colojoin.create_shards('cj_rls_s.docs', ARRAY[:'srv1', :'srv2', :'srv3'], 6);
SELECT colojoin.create_shards('cj_rls_s.notes', ARRAY[:'srv1', :'srv2', :'srv3'], 6, 'cj_rls_s.docs');
SELECT colojoin.create_shards('cj_rls_s.tags', ARRAY[:'srv1', :'srv2', :'srv3'], 6);
CREATE TABLE cj_rls_l.docs (k int, owner_name text, secret text, grp int);
CREATE TABLE cj_rls_l.notes (k int, v int);
CREATE TABLE cj_rls_l.tags (t int, k int, tag text);

INSERT INTO cj_rls_s.docs
SELECT g, CASE WHEN g % 3 = 0 THEN 'cj_rls_user' ELSE 'someone_else' END,
	   CASE WHEN g % 3 = 0 THEN (g * 7)::text ELSE 'hidden-' || g END, g % 4
FROM generate_series(1, 60) g;
INSERT INTO cj_rls_s.notes SELECT g, g * 10 FROM generate_series(1, 60) g;
INSERT INTO cj_rls_s.notes VALUES (NULL, 1);
INSERT INTO cj_rls_s.tags SELECT g + 1000, g, 'tag' || g FROM generate_series(1, 60, 2) g;
INSERT INTO cj_rls_l.docs SELECT * FROM cj_rls_s.docs;
INSERT INTO cj_rls_l.notes SELECT * FROM cj_rls_s.notes;
INSERT INTO cj_rls_l.tags SELECT * FROM cj_rls_s.tags;

-- the same policies on both: the owner sees their own rows; k even too
ALTER TABLE cj_rls_s.docs ENABLE ROW LEVEL SECURITY;
ALTER TABLE cj_rls_l.docs ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON cj_rls_s.docs USING (owner_name = current_user);
CREATE POLICY own ON cj_rls_l.docs USING (owner_name = current_user);
GRANT SELECT ON ALL TABLES IN SCHEMA cj_rls_s, cj_rls_l TO cj_rls_user;
GRANT UPDATE ON cj_rls_s.notes, cj_rls_l.notes TO cj_rls_user;

-- leak(x): not leakproof and cheap (so PostgreSQL would like to run it
-- early); notes every value it is shown in setting cj_rls.seen
CREATE FUNCTION public.cj_rls_leak(text) RETURNS boolean
LANGUAGE plpgsql COST 0.0000001 AS $$
BEGIN
	PERFORM set_config('cj_rls.seen', current_setting('cj_rls.seen', true) || ',' || coalesce($1, '?'), false);
	RETURN true;
END
$$;
CREATE FUNCTION public.cj_rls_leak2(text, int) RETURNS boolean
LANGUAGE plpgsql COST 0.0000001 AS $$
BEGIN
	RETURN public.cj_rls_leak($1);
END
$$;
-- hidden_seen(): how many hidden secrets the function saw since the last call
CREATE FUNCTION public.cj_rls_hidden_seen() RETURNS bigint
LANGUAGE sql AS $$
	SELECT count(*) FROM unnest(string_to_array(current_setting('cj_rls.seen', true), ',')) s
	WHERE s LIKE 'hidden-%'
$$;
CREATE FUNCTION public.cj_rls_reset() RETURNS void
LANGUAGE sql AS $$ SELECT set_config('cj_rls.seen', '', false) $$;
GRANT EXECUTE ON FUNCTION public.cj_rls_leak(text), public.cj_rls_leak2(text, int),
	public.cj_rls_hidden_seen(), public.cj_rls_reset() TO cj_rls_user;

-- same(query): the query gives the same rows on the shards and the twins,
-- and neither showed the function a hidden row
CREATE FUNCTION public.cj_rls_same(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	s text[];
	l text[];
	hs bigint;
	hl bigint;
BEGIN
	PERFORM public.cj_rls_reset();
	s := rows_of(query, 'cj_rls_s');
	hs := public.cj_rls_hidden_seen();
	PERFORM public.cj_rls_reset();
	l := rows_of(query, 'cj_rls_l');
	hl := public.cj_rls_hidden_seen();
	RETURN format('rows %s, equal %s, hidden rows seen: sharded %s, local %s',
				  cardinality(s), s = l, hs, hl);
END
$$;
GRANT EXECUTE ON FUNCTION public.cj_rls_same(text), public.rows_of(text, text) TO cj_rls_user;

\set explain 'EXPLAIN (COSTS OFF)'
SET ROLE cj_rls_user;
SET search_path = cj_rls_s, public;

-- The policy's qual (not for the nodes: current_user differs there) runs
-- first, the user's function after it, both on the coordinator.
:explain SELECT count(*) FROM docs a JOIN notes b ON a.k = b.k WHERE cj_rls_leak(a.secret);
SELECT cj_rls_same('SELECT count(*) FROM docs a JOIN notes b ON a.k = b.k WHERE cj_rls_leak(a.secret)');
SELECT cj_rls_same('SELECT a.k, a.secret, b.v FROM docs a JOIN notes b ON a.k = b.k WHERE cj_rls_leak(a.secret) AND b.v > 100');

-- A built-in condition that is not leakproof (a cast that fails on a
-- hidden row's secret) does not go to the node with the policy either.
:explain SELECT a.k, b.v FROM docs a JOIN notes b ON a.k = b.k WHERE a.secret::int > 100;
SELECT cj_rls_same('SELECT a.k, b.v FROM docs a JOIN notes b ON a.k = b.k WHERE a.secret::int > 100');
-- leakproof conditions still go to the nodes
:explain SELECT a.k, b.v FROM docs a JOIN notes b ON a.k = b.k WHERE a.grp = 1 AND b.v > 50;
SELECT cj_rls_same('SELECT a.k, b.v FROM docs a JOIN notes b ON a.k = b.k WHERE a.grp = 1 AND b.v > 50');

-- A join condition that could leak a secured table's values runs after
-- the policy too.
:explain SELECT count(*) FROM docs a JOIN notes b ON a.k = b.k AND cj_rls_leak2(a.secret, b.v);
SELECT cj_rls_same('SELECT count(*) FROM docs a JOIN notes b ON a.k = b.k AND cj_rls_leak2(a.secret, b.v)');
SELECT cj_rls_same('SELECT a.k, b.v FROM docs a JOIN notes b ON a.k = b.k AND a.secret::int < b.v');

-- On the nullable side of an outer join there is no later place for the
-- policy's quals: PostgreSQL runs the join.
SELECT cj_rls_same('SELECT b.k, b.v, a.secret FROM notes b LEFT JOIN (SELECT * FROM docs WHERE cj_rls_leak(secret)) a ON a.k = b.k');
SELECT cj_rls_same('SELECT b.k, a.secret FROM notes b FULL JOIN docs a ON a.k = b.k WHERE cj_rls_leak(coalesce(a.secret, ''x''))');
SELECT cj_rls_same('SELECT a.k, count(b.v) FROM docs a LEFT JOIN notes b ON a.k = b.k WHERE cj_rls_leak(a.secret) GROUP BY a.k');

-- semi and anti joins, aggregates, ORDER BY ... LIMIT over the join
SELECT cj_rls_same('SELECT a.k FROM docs a WHERE cj_rls_leak(a.secret) AND EXISTS (SELECT 1 FROM notes b WHERE b.k = a.k)');
SELECT cj_rls_same('SELECT a.k FROM docs a WHERE cj_rls_leak(a.secret) AND NOT EXISTS (SELECT 1 FROM notes b WHERE b.k = a.k AND b.v > 300)');
SELECT cj_rls_same('SELECT a.grp, count(*), sum(b.v) FROM docs a JOIN notes b ON a.k = b.k WHERE cj_rls_leak(a.secret) GROUP BY a.grp');
SELECT cj_rls_same('SELECT a.k, b.v FROM docs a JOIN notes b ON a.k = b.k WHERE cj_rls_leak(a.secret) ORDER BY b.v DESC LIMIT 3');

-- a join that moves rows (tags is sharded on another column)
SELECT cj_rls_same('SELECT a.k, t.tag FROM docs a JOIN tags t ON t.k = a.k WHERE cj_rls_leak(a.secret)');
SELECT cj_rls_same('SELECT a.k, t.tag FROM docs a JOIN tags t ON t.k = a.k AND cj_rls_leak2(a.secret, t.t)');
RESET ROLE;

-- Expressions the query computes from a secured table's columns run on the
-- coordinator after the policy too, never on the node over every row: a
-- cast in the select list, a division in a join condition that a hidden
-- row's values would make fail.
SET ROLE cj_rls_user;
SELECT cj_rls_same('SELECT a.secret::int AS n FROM docs a JOIN notes b ON a.k = b.k');
SELECT cj_rls_same('SELECT count(*) FROM docs a JOIN notes b ON a.k = b.k WHERE b.v / (a.k - 4) > 0');
SELECT cj_rls_same('SELECT a.k, sum(a.secret::int) FROM docs a JOIN notes b ON a.k = b.k GROUP BY a.k');
RESET ROLE;

-- A policy colojoin can send to the nodes runs there, and a leakproof
-- condition with it; one that could leak still waits for it.
ALTER POLICY own ON cj_rls_s.docs USING (owner_name = 'cj_rls_user');
ALTER POLICY own ON cj_rls_l.docs USING (owner_name = 'cj_rls_user');
SET ROLE cj_rls_user;
:explain SELECT a.k, b.v FROM docs a JOIN notes b ON a.k = b.k WHERE a.secret::int > 100 AND a.grp = 1;
SELECT cj_rls_same('SELECT a.k, b.v FROM docs a JOIN notes b ON a.k = b.k WHERE a.secret::int > 100');
SELECT cj_rls_same('SELECT a.k, b.v FROM docs a JOIN notes b ON a.k = b.k WHERE cj_rls_leak(a.secret) AND a.grp = 1');
SELECT cj_rls_same('SELECT a.grp, count(*) FROM docs a JOIN notes b ON a.k = b.k GROUP BY a.grp');
-- the secured table moved (broadcast): its policy runs where its rows are
-- read, and the conditions that could leak after the move, on the coordinator
:explain SELECT a.k, t.tag FROM tags t JOIN docs a ON a.grp + 1000 = t.t WHERE cj_rls_leak(a.secret);
SELECT cj_rls_same('SELECT a.k, t.tag FROM tags t JOIN docs a ON a.grp + 1000 = t.t WHERE cj_rls_leak(a.secret)');
SELECT cj_rls_same('SELECT a.k, t.tag FROM tags t JOIN docs a ON a.grp + 1000 = t.t WHERE a.secret::int > 100');
RESET ROLE;

-- A security-barrier view over a table without a policy: its condition
-- runs before the query's.
SET search_path = public;
CREATE VIEW cj_rls_s.visible WITH (security_barrier) AS
	SELECT k, secret, grp FROM cj_rls_s.docs WHERE secret NOT LIKE 'hidden-%';
CREATE VIEW cj_rls_l.visible WITH (security_barrier) AS
	SELECT k, secret, grp FROM cj_rls_l.docs WHERE secret NOT LIKE 'hidden-%';
ALTER TABLE cj_rls_s.docs DISABLE ROW LEVEL SECURITY;
ALTER TABLE cj_rls_l.docs DISABLE ROW LEVEL SECURITY;
GRANT SELECT ON cj_rls_s.visible, cj_rls_l.visible TO cj_rls_user;
SET ROLE cj_rls_user;
SELECT cj_rls_same('SELECT v.k, n.v FROM visible v JOIN notes n ON v.k = n.k WHERE cj_rls_leak(v.secret)');
SELECT cj_rls_same('SELECT v.k, n.v FROM visible v JOIN notes n ON v.k = n.k WHERE v.secret::int > 100');
RESET ROLE;
ALTER TABLE cj_rls_s.docs ENABLE ROW LEVEL SECURITY;
ALTER TABLE cj_rls_l.docs ENABLE ROW LEVEL SECURITY;

-- Writes read through the policy as PostgreSQL reads: an UPDATE ... FROM
-- the secured table changes only the rows the policy lets it join.
SET ROLE cj_rls_user;
UPDATE cj_rls_s.notes n SET v = n.v + 1 FROM cj_rls_s.docs d WHERE d.k = n.k AND cj_rls_leak(d.secret);
SELECT cj_rls_hidden_seen() AS hidden_seen;
UPDATE cj_rls_l.notes n SET v = n.v + 1 FROM cj_rls_l.docs d WHERE d.k = n.k AND cj_rls_leak(d.secret);
SELECT cj_rls_same('SELECT k, v FROM notes');
SELECT cj_rls_reset();
RESET ROLE;

SET client_min_messages = warning;
DROP SCHEMA cj_rls_s, cj_rls_l CASCADE;
SELECT dblink_exec(format('host=127.0.0.1 port=%s dbname=colojoin_regress', p),
	'SET client_min_messages = warning; DROP SCHEMA IF EXISTS cj_rls_s CASCADE')
FROM unnest(ARRAY[:'node1_port', :'node2_port', :'node3_port']) p;
DROP FUNCTION public.cj_rls_leak(text), public.cj_rls_leak2(text, int),
	public.cj_rls_hidden_seen(), public.cj_rls_reset(), public.cj_rls_same(text);
REVOKE EXECUTE ON FUNCTION public.rows_of(text, text) FROM cj_rls_user;
DROP USER MAPPING FOR cj_rls_user SERVER :"srv1";
DROP USER MAPPING FOR cj_rls_user SERVER :"srv2";
DROP USER MAPPING FOR cj_rls_user SERVER :"srv3";
DROP ROLE cj_rls_user;
RESET client_min_messages;
\i sql/include/three_nodes_end.sql
