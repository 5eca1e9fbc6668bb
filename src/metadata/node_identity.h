/*-------------------------------------------------------------------------
 *
 * node_identity.h
 *	  The physical node behind a foreign server: which servers reach the
 *	  same database, as learned from the nodes and remembered per backend.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_NODE_IDENTITY_H
#define COLOJOIN_NODE_IDENTITY_H

/*
 * What a node says about itself, two columns of a SELECT: the database
 * (its cluster's system identifier where the role may read it, else the
 * postmaster's start time, plus the database name) and the role logged in.
 */
#define CJ_NODE_IDENTITY_COLUMNS \
	"CASE WHEN pg_catalog.has_function_privilege('pg_catalog.pg_control_system()', 'EXECUTE') " \
	"THEN (SELECT system_identifier::pg_catalog.text FROM pg_catalog.pg_control_system()) " \
	"ELSE 'started ' OPERATOR(pg_catalog.||) pg_catalog.pg_postmaster_start_time()::pg_catalog.text END " \
	"OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) pg_catalog.current_database(), " \
	"current_user"

/* remember what serverid, connected to as userid, said (CJ_NODE_IDENTITY_COLUMNS) */
extern void cj_node_identity_learn(Oid serverid, Oid userid, const char *node,
								   const char *role);

/* forget what was learned of serverid (all servers with InvalidOid) */
extern void cj_node_identity_forget(Oid serverid);

/* the database serverid reaches ("<system identifier>/<database>"), or NULL when not known yet */
extern const char *cj_node_identity(Oid serverid);

/* a and b are the same server, or are both known to reach one database */
extern bool cj_node_same(Oid a, Oid b);

/*
 * cj_node_representative: the server whose connection carries the DDL and
 * writes of serverid as userid: the first server learned to reach the same
 * database as the same role; serverid itself when none other is known.
 */
extern Oid	cj_node_representative(Oid serverid, Oid userid);

#endif							/* COLOJOIN_NODE_IDENTITY_H */
