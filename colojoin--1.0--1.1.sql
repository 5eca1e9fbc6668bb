/* colojoin--1.0--1.1.sql: from colojoin 1.0 to 1.1 (ALTER EXTENSION colojoin UPDATE) */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION colojoin UPDATE TO '1.1'" to load this file. \quit

/*
 * colojoin.shards shows the physical node behind each placement's server
 * (servers that reach the same database, by the node's system identifier
 * and database name as the node reports them, are one node) and the
 * table's partition key, expressions included.  The view's
 * function gains that column, so both are made again; the replicas and
 * every sharded table are untouched.
 */
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
	OUT partition_key text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'colojoin_shard_placements'
LANGUAGE C STABLE;

CREATE VIEW colojoin.shards AS
	SELECT * FROM colojoin.shard_placements();
COMMENT ON VIEW colojoin.shards IS
	'every placement of every leaf of every sharded table; bound and partition_class are those of the leaf''s top-level partition (its partition class); physical_node is the database the placement''s server reaches, NULL while it cannot be reached; partition_key the table''s partitioning, as psql \d+ shows it';
GRANT SELECT ON colojoin.shards TO PUBLIC;

/*
 * The remote tables colojoin created (create_shards, add_replica), so that
 * drop_shards and DROP TABLE drop exactly those and never a table someone
 * else made.  Tables made under 1.0 are not recorded and are never dropped.
 */
CREATE TABLE colojoin.shard_origins (
	leaf regclass NOT NULL,
	server name NOT NULL,
	remote_schema text NOT NULL,
	remote_table text NOT NULL,
	PRIMARY KEY (leaf, server)
);
COMMENT ON TABLE colojoin.shard_origins IS
	'remote tables colojoin created for leaf partitions, which drop_shards and DROP TABLE may drop';
SELECT pg_catalog.pg_extension_config_dump('colojoin.shard_origins', '');
GRANT SELECT ON colojoin.shard_origins TO PUBLIC;

CREATE FUNCTION colojoin.drop_shards(parent regclass)
RETURNS integer
AS 'MODULE_PATHNAME', 'colojoin_drop_shards'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION colojoin.drop_shards(regclass) IS
	'drop the remote tables colojoin made for the partitions of a table (and their replicas), then those partitions';

CREATE FUNCTION colojoin.drop_remote_shards()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'colojoin_drop_remote_shards'
LANGUAGE C;
-- before colojoin_forget_dropped_replicas: event triggers fire in name order
CREATE EVENT TRIGGER colojoin_drop_remote_shards ON sql_drop
	EXECUTE FUNCTION colojoin.drop_remote_shards();

CREATE FUNCTION colojoin.refresh_statistics(table_name regclass DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'colojoin_refresh_statistics'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION colojoin.refresh_statistics(regclass) IS
	'read the sizes of the remote tables of a sharded table''s partitions (of all, with NULL) from the nodes into the partitions'' statistics';
