/* colojoin--1.3--1.4.sql: moving partition classes between servers */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION colojoin UPDATE TO '1.4'" to load this file. \quit

/*
 * Move one partition class (the partitions with the same bounds of every
 * table colocated with table_name, on from_server's node) to to_server:
 * 'online' through the nodes' logical replication (writes go on until a
 * short cut-over), or 'blocking' (writes to the class wait while the rows
 * are copied).  Returns the rows moved.
 */
CREATE FUNCTION colojoin.move_class(table_name regclass, partition_class integer,
	to_server name, mode text DEFAULT 'online', from_server name DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'colojoin_move_class'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION colojoin.move_class(regclass, integer, name, text, name) IS
	'move a partition class of a table and of every table colocated with it to another server';
REVOKE ALL ON FUNCTION colojoin.move_class(regclass, integer, name, text, name) FROM PUBLIC;

/* what moves that failed left on the nodes: subscriptions, publications, slots, target tables */
CREATE FUNCTION colojoin.move_cleanup()
RETURNS integer
AS 'MODULE_PATHNAME', 'colojoin_move_cleanup'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION colojoin.move_cleanup() IS
	'remove what failed class moves left on the nodes';
REVOKE ALL ON FUNCTION colojoin.move_cleanup() FROM PUBLIC;
