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
