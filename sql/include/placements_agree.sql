--
-- placements_agree.sql: function placements_agree(t regclass), created in
-- the first schema of search_path: 'N replicas agree' when every replica
-- placement of every leaf of sharded table t holds exactly its primary's
-- rows, read on the nodes (dblink, colojoin.shards), else which differ.
--
CREATE FUNCTION placements_agree(t regclass) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	r record;
	digest text;
	primary_digest text;
	bad text := '';
	n int := 0;
BEGIN
	FOR r IN SELECT s.leaf, s.node, s.remote_relation, s.is_replica,
			(SELECT option_value FROM pg_options_to_table(fs.srvoptions) WHERE option_name = 'port') AS port
		FROM colojoin.shards s JOIN pg_foreign_server fs ON fs.srvname = s.node
		WHERE s.table_name = t ORDER BY s.leaf, s.is_replica, s.node
	LOOP
		SELECT d INTO digest FROM dblink(format('host=127.0.0.1 port=%s dbname=colojoin_regress', r.port),
			format('SELECT count(*) || '':'' || coalesce(md5(string_agg(x::text, '','' ORDER BY x::text)), '''') FROM %s x',
				   r.remote_relation)) AS q(d text);
		IF NOT r.is_replica THEN
			primary_digest := digest;
		ELSIF digest IS DISTINCT FROM primary_digest THEN
			bad := bad || format(' %s on %s', r.leaf, r.node);
		ELSE
			n := n + 1;
		END IF;
	END LOOP;
	IF bad <> '' THEN
		RETURN 'replicas differ:' || bad;
	END IF;
	RETURN format('%s replicas agree', n);
END $$;
