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

/*
 * Every backend caches placements; any change to colojoin.replicas, whoever
 * makes it, invalidates those caches through this trigger.
 */
CREATE FUNCTION colojoin.replicas_changed()
RETURNS trigger
AS 'MODULE_PATHNAME', 'colojoin_replicas_changed'
LANGUAGE C;
CREATE TRIGGER replicas_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON colojoin.replicas
	FOR EACH STATEMENT EXECUTE FUNCTION colojoin.replicas_changed();

/*
 * A replica row names its leaf by OID and its server by name, neither of
 * which PostgreSQL tracks as a dependency: forget the rows of dropped leaves
 * and servers, so that a later object reusing the OID or the name does not
 * inherit them.  The DELETE runs only when a row matches, since any change
 * invalidates every cached placement.
 */
CREATE FUNCTION colojoin.forget_dropped_replicas()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM colojoin.replicas r
				 JOIN pg_event_trigger_dropped_objects() d
				   ON (d.classid = 'pg_class'::regclass AND d.objsubid = 0
					   AND d.objid = r.leaf::oid)
				   OR (d.object_type = 'server' AND d.object_name = r.server::text))
	THEN
		DELETE FROM colojoin.replicas r
		 USING pg_event_trigger_dropped_objects() d
		 WHERE (d.classid = 'pg_class'::regclass AND d.objsubid = 0
				AND d.objid = r.leaf::oid)
			OR (d.object_type = 'server' AND d.object_name = r.server::text);
	END IF;
END
$$;
CREATE EVENT TRIGGER colojoin_forget_dropped_replicas ON sql_drop
	EXECUTE FUNCTION colojoin.forget_dropped_replicas();

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
	'forget a replica placement of a leaf partition (the table on that server is left in place)';

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
	'every placement of every leaf of every sharded table; bound and partition_class are those of the leaf''s top-level partition (its partition class)';

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

/*
 * Used by plans that combine partial aggregates computed on the nodes: the
 * variance or standard deviation of n values from their exact sum and sum
 * of squares, with PostgreSQL's own numeric steps.  kind: 0 var_samp,
 * 1 var_pop, 2 stddev_samp, 3 stddev_pop.
 */
CREATE FUNCTION colojoin.variance_final(n numeric, sum_x numeric,
										sum_xx numeric, kind integer)
RETURNS numeric
AS 'MODULE_PATHNAME', 'colojoin_variance_final'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
