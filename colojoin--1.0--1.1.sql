/* colojoin--1.0--1.1.sql: from colojoin 1.0 to 1.1 (ALTER EXTENSION colojoin UPDATE) */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION colojoin UPDATE TO '1.1'" to load this file. \quit

/*
 * colojoin.shards shows the physical node behind each placement's server:
 * servers that reach the same database (the node's system identifier and
 * database name, as the node reports them) are one node.  The view's
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
	OUT physical_node text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'colojoin_shard_placements'
LANGUAGE C STABLE;

CREATE VIEW colojoin.shards AS
	SELECT * FROM colojoin.shard_placements();
COMMENT ON VIEW colojoin.shards IS
	'every placement of every leaf of every sharded table; bound and partition_class are those of the leaf''s top-level partition (its partition class); physical_node is the database the placement''s server reaches, NULL while it cannot be reached';
GRANT SELECT ON colojoin.shards TO PUBLIC;
