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

/*
 * Rebalancing: the moves that even out rows (or bytes) per node, and jobs
 * that run them one class at a time in a background worker.
 */
CREATE FUNCTION colojoin.rebalance_plan(servers name[] DEFAULT NULL, by text DEFAULT 'rows',
	drain name DEFAULT NULL,
	OUT move integer, OUT table_name regclass, OUT partition_class integer,
	OUT from_server name, OUT to_server name, OUT rows bigint, OUT bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'colojoin_rebalance_plan'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION colojoin.rebalance_plan(name[], text, name) IS
	'the class moves that even out rows or bytes per node over servers (all by default), or empty the node of drain first';

CREATE SEQUENCE colojoin.rebalance_job_seq;
CREATE TABLE colojoin.rebalance_jobs (
	job bigint PRIMARY KEY,
	servers name[],
	by text NOT NULL,
	mode text NOT NULL,
	state text NOT NULL CHECK (state IN ('running', 'done', 'failed', 'cancelled')),
	worker_pid integer,
	created timestamptz NOT NULL DEFAULT pg_catalog.now(),
	finished timestamptz,
	error text
);
CREATE TABLE colojoin.rebalance_moves (
	job bigint NOT NULL REFERENCES colojoin.rebalance_jobs ON DELETE CASCADE,
	move integer NOT NULL,
	table_name regclass NOT NULL,
	partition_class integer NOT NULL,
	from_server name NOT NULL,
	to_server name NOT NULL,
	rows bigint,
	bytes bigint,
	state text NOT NULL CHECK (state IN ('planned', 'moving', 'done', 'failed', 'cancelled')),
	started timestamptz,
	finished timestamptz,
	moved_rows bigint,
	error text,
	PRIMARY KEY (job, move)
);
COMMENT ON TABLE colojoin.rebalance_jobs IS 'rebalance jobs (colojoin.rebalance) and their state';
COMMENT ON TABLE colojoin.rebalance_moves IS 'the class moves of each rebalance job and their state';
GRANT SELECT ON colojoin.rebalance_jobs, colojoin.rebalance_moves TO PUBLIC;

CREATE FUNCTION colojoin.rebalance(servers name[] DEFAULT NULL, by text DEFAULT 'rows',
	mode text DEFAULT 'online', drain name DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'colojoin_rebalance'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION colojoin.rebalance(name[], text, text, name) IS
	'start a background job that runs the moves of colojoin.rebalance_plan, one class at a time';
REVOKE ALL ON FUNCTION colojoin.rebalance(name[], text, text, name) FROM PUBLIC;

CREATE FUNCTION colojoin.rebalance_resume()
RETURNS bigint
AS 'MODULE_PATHNAME', 'colojoin_rebalance_resume'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION colojoin.rebalance_resume() IS
	'start the worker of the unfinished rebalance job again (after a restart)';
REVOKE ALL ON FUNCTION colojoin.rebalance_resume() FROM PUBLIC;

CREATE FUNCTION colojoin.rebalance_cancel()
RETURNS boolean
AS 'MODULE_PATHNAME', 'colojoin_rebalance_cancel'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION colojoin.rebalance_cancel() IS
	'end the unfinished rebalance job, cancelling its running move';
REVOKE ALL ON FUNCTION colojoin.rebalance_cancel() FROM PUBLIC;

/* every move of every job, with the running one's phase */
CREATE VIEW colojoin.rebalance_status AS
	SELECT m.job, j.state AS job_state, m.move, m.table_name, m.partition_class,
		m.from_server, m.to_server, j.mode, m.state, m.rows AS planned_rows,
		m.moved_rows, m.started, m.finished,
		CASE WHEN m.state = 'moving' THEN p.phase END AS phase,
		CASE WHEN m.state = 'moving' THEN p.units_done END AS units_done,
		CASE WHEN m.state = 'moving' THEN p.units_total END AS units_total,
		m.error
	FROM colojoin.rebalance_moves m
	JOIN colojoin.rebalance_jobs j USING (job)
	LEFT JOIN colojoin.progress p ON p.pid = j.worker_pid AND p.command = 'move_class';
COMMENT ON VIEW colojoin.rebalance_status IS
	'each move of each rebalance job: planned, moving (with its phase), done, failed or cancelled';
GRANT SELECT ON colojoin.rebalance_status TO PUBLIC;

/*
 * Split the hash classes of a table and of every table colocated with it
 * to a finer modulus, in place or onto servers, blocking; or online (the
 * nodes' logical replication, each new class on another node); one class
 * or all.
 */
CREATE FUNCTION colojoin.split_shards(table_name regclass, new_modulus integer,
	servers name[] DEFAULT NULL, partition_class integer DEFAULT NULL,
	mode text DEFAULT 'blocking')
RETURNS integer
AS 'MODULE_PATHNAME', 'colojoin_split_shards'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION colojoin.split_shards(regclass, integer, name[], integer, text) IS
	'split the hash classes of a table and every table colocated with it to a finer modulus';
REVOKE ALL ON FUNCTION colojoin.split_shards(regclass, integer, name[], integer, text) FROM PUBLIC;
