/* colojoin--1.0.sql: the SQL objects of colojoin 1.0, in schema colojoin */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION colojoin" to load this file. \quit

/*
 * Replica placements: extra copies of a leaf partition on other servers.
 * The leaf's own foreign server is its primary placement and is not listed.
 * Any placement may serve a query.
 */
CREATE TABLE colojoin.replicas (
	leaf regclass NOT NULL,
	server name NOT NULL,
	remote_schema text NOT NULL,
	remote_table text NOT NULL,
	PRIMARY KEY (leaf, server)
);
COMMENT ON TABLE colojoin.replicas IS
	'extra placements of leaf partitions on other foreign servers';
SELECT pg_catalog.pg_extension_config_dump('colojoin.replicas', '');

CREATE FUNCTION colojoin.add_replica(leaf regclass, server name,
									 copy_data boolean DEFAULT true)
RETURNS void
AS 'MODULE_PATHNAME', 'colojoin_add_replica'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION colojoin.add_replica(regclass, name, boolean) IS
	'register a copy of a leaf partition on another server, copying its rows when asked';

CREATE FUNCTION colojoin.drop_replica(leaf regclass, server name)
RETURNS void
AS 'MODULE_PATHNAME', 'colojoin_drop_replica'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION colojoin.drop_replica(regclass, name) IS
	'forget a replica placement of a leaf partition';

CREATE FUNCTION colojoin.create_shards(parent regclass, servers name[],
									   partitions integer DEFAULT NULL,
									   colocate_with regclass DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'colojoin_create_shards'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION colojoin.create_shards(regclass, name[], integer, regclass) IS
	'create the remote shard tables and the foreign partitions of a hash-partitioned table';

CREATE FUNCTION colojoin.shard_placements(
	OUT table_name regclass,
	OUT leaf regclass,
	OUT bound text,
	OUT partition_class integer,
	OUT node name,
	OUT remote_relation text,
	OUT is_replica boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'colojoin_shard_placements'
LANGUAGE C STABLE;

CREATE VIEW colojoin.shards AS
	SELECT * FROM colojoin.shard_placements();
COMMENT ON VIEW colojoin.shards IS
	'every placement of every leaf of every sharded table';

CREATE FUNCTION colojoin.colocation(a regclass, b regclass,
									OUT colocated boolean,
									OUT aspect text,
									OUT detail text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'colojoin_colocation'
LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION colojoin.colocation(regclass, regclass) IS
	'whether a join of two sharded tables on their partition keys is colocated and, if not, why';

GRANT USAGE ON SCHEMA colojoin TO PUBLIC;
GRANT SELECT ON colojoin.replicas, colojoin.shards TO PUBLIC;
REVOKE EXECUTE ON FUNCTION colojoin.add_replica(regclass, name, boolean),
	colojoin.drop_replica(regclass, name) FROM PUBLIC;
