/* colojoin--1.2--1.3.sql: from colojoin 1.2 to 1.3 (ALTER EXTENSION colojoin UPDATE) */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION colojoin UPDATE TO '1.3'" to load this file. \quit

/*
 * What colojoin's connections do on the nodes right now: one row per node
 * backend that a session of this coordinator holds, read live from every
 * node's pg_stat_activity (each physical node once), with the session's
 * pid on the coordinator and the node backends it waits for on a lock.
 */
CREATE FUNCTION colojoin.node_activity(
	OUT coordinator_pid integer,
	OUT server text,
	OUT remote_pid integer,
	OUT state text,
	OUT wait_event_type text,
	OUT wait_event text,
	OUT blocked_by integer[],
	OUT backend_start timestamptz,
	OUT xact_start timestamptz,
	OUT query_start timestamptz,
	OUT query text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'colojoin_node_activity'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW colojoin.activity AS
	SELECT * FROM colojoin.node_activity();
GRANT SELECT ON colojoin.activity TO PUBLIC;
