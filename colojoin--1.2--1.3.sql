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
	OUT node text,
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

/*
 * How each query (by PostgreSQL's query id) was planned: how often, how
 * often each strategy ran part of it on the nodes, how often none of it
 * did, and the first reason something was left to PostgreSQL.  Needs
 * colojoin in shared_preload_libraries.
 */
CREATE FUNCTION colojoin.query_decisions(
	OUT queryid bigint,
	OUT plans bigint,
	OUT colocated bigint,
	OUT redistributed bigint,
	OUT broadcast bigint,
	OUT dual_repartition bigint,
	OUT steps_on_nodes bigint,
	OUT left_to_postgresql bigint,
	OUT first_reason text,
	OUT last_seen timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'colojoin_decisions'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW colojoin.decisions AS
	SELECT * FROM colojoin.query_decisions();
GRANT SELECT ON colojoin.decisions TO PUBLIC;

CREATE FUNCTION colojoin.decisions_reset() RETURNS void
AS 'MODULE_PATHNAME', 'colojoin_decisions_reset'
LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION colojoin.decisions_reset() FROM PUBLIC;

/*
 * How far along colojoin's long operations are (create_shards, drop_shards,
 * repair_placement): one row per session running one, with colojoin in
 * shared_preload_libraries.
 */
CREATE FUNCTION colojoin.progress_info(
	OUT pid integer,
	OUT command text,
	OUT relid regclass,
	OUT phase text,
	OUT units_done bigint,
	OUT units_total bigint,
	OUT started timestamptz,
	OUT percent_done float8)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'colojoin_progress_info'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW colojoin.progress AS
	SELECT * FROM colojoin.progress_info();
GRANT SELECT ON colojoin.progress TO PUBLIC;
