/* colojoin--1.1--1.2.sql: from colojoin 1.1 to 1.2 (ALTER EXTENSION colojoin UPDATE) */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION colojoin UPDATE TO '1.2'" to load this file. \quit

/*
 * Commit records of two-phase commits: one row per transaction prepared on a
 * node, written in the coordinator's transaction before the nodes prepare,
 * so that a row exists exactly when that transaction committed.  Recovery
 * commits the prepared transactions that have a row and rolls back those
 * that have none once their coordinator transaction has ended.  Rows go
 * once their transaction is committed everywhere.
 */
CREATE TABLE colojoin.prepared_xacts (
	gid text NOT NULL,
	server oid NOT NULL,
	recorded_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
REVOKE ALL ON colojoin.prepared_xacts FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('colojoin.prepared_xacts', '');

/*
 * Resolve, on every node the current user can reach, the transactions this
 * coordinator prepared whose coordinator transaction has ended: commit
 * those with a commit record, roll back the others.  Also done by each
 * backend at its first connection to a node.
 */
CREATE FUNCTION colojoin.recover_prepared_transactions(
	OUT node name,
	OUT gid text,
	OUT action text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'colojoin_recover_prepared_transactions'
LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION colojoin.recover_prepared_transactions() FROM PUBLIC;

/*
 * Placements that missed a write: their node could not be reached while a
 * write went to every placement of the leaf and the others took it.  A row
 * is written in the same transaction as that write; such a placement is
 * never read or written until colojoin.repair_placement() copies the leaf
 * back into it and removes the row.
 */
CREATE TABLE colojoin.stale_placements (
	leaf regclass NOT NULL,
	server name NOT NULL,
	since timestamptz NOT NULL DEFAULT pg_catalog.now(),
	reason text,
	PRIMARY KEY (leaf, server)
);
REVOKE ALL ON colojoin.stale_placements FROM PUBLIC;
GRANT SELECT ON colojoin.stale_placements TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('colojoin.stale_placements', '');
CREATE TRIGGER stale_placements_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON colojoin.stale_placements
	FOR EACH STATEMENT EXECUTE FUNCTION colojoin.replicas_changed();

CREATE FUNCTION colojoin.repair_placement(leaf regclass, server name)
RETURNS bigint
AS 'MODULE_PATHNAME', 'colojoin_repair_placement'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION colojoin.repair_placement(regclass, name) IS
	'copy a leaf from a healthy placement into its stale placement on server, and read and write it again';

/* the shards view gains each placement's state */
DROP VIEW colojoin.shards;
DROP FUNCTION colojoin.shard_placements();

CREATE FUNCTION colojoin.shard_placements(
	OUT table_name regclass,
	OUT leaf regclass,
	OUT bound text,
	OUT partition_class integer,
	OUT node name,
	OUT remote_relation text,
	OUT is_replica boolean,
	OUT physical_node text,
	OUT partition_key text,
	OUT state text,
	OUT estimated_rows double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'colojoin_shard_placements'
LANGUAGE C STABLE;

CREATE VIEW colojoin.shards AS
	SELECT * FROM colojoin.shard_placements();
COMMENT ON VIEW colojoin.shards IS
	'every placement of every leaf of every sharded table; bound and partition_class are those of the leaf''s top-level partition (its partition class); physical_node is the database the placement''s server reaches, NULL while it cannot be reached; partition_key the table''s partitioning, as psql \d+ shows it; state healthy, or stale (missed a write, see colojoin.stale_placements); estimated_rows the leaf''s size the planner uses (pg_class after ANALYZE or refresh_statistics, else what the node says, cached per backend for colojoin.remote_size_lifetime)';
GRANT SELECT ON colojoin.shards TO PUBLIC;

/*
 * A reference table: a hash-partitioned table (any key) with one partition
 * that takes every row, copied to every server.  Joins of sharded tables
 * with it read the copy on each task's node and move nothing; writes reach
 * every copy.
 */
CREATE FUNCTION colojoin.create_reference_table(parent regclass, servers name[] DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
	targets name[] := servers;
	leaf regclass;
	s name;
BEGIN
	IF targets IS NULL THEN
		SELECT array_agg(fs.srvname ORDER BY fs.srvname) INTO targets
		FROM pg_foreign_server fs JOIN pg_foreign_data_wrapper w ON w.oid = fs.srvfdw
		WHERE w.fdwname = 'postgres_fdw'
		  AND EXISTS (SELECT FROM pg_user_mappings um
					  WHERE um.srvid = fs.oid AND um.usename IN (current_user, 'public'));
	END IF;
	IF targets IS NULL OR cardinality(targets) = 0 THEN
		RAISE EXCEPTION 'no server to put the reference table % on', parent
			USING HINT = 'Name the servers, or create postgres_fdw servers and user mappings first.';
	END IF;
	PERFORM colojoin.create_shards(parent, targets[1:1], 1);
	SELECT inhrelid::regclass INTO leaf FROM pg_inherits WHERE inhparent = parent;
	FOREACH s IN ARRAY targets[2:] LOOP
		PERFORM colojoin.add_replica(leaf, s);
	END LOOP;
	RETURN cardinality(targets);
END
$$;
COMMENT ON FUNCTION colojoin.create_reference_table(regclass, name[]) IS
	'make an empty hash-partitioned table a reference table: one partition, a copy on each server';
