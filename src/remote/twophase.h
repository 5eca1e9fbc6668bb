/*-------------------------------------------------------------------------
 *
 * twophase.h
 *	  Atomic commit of a transaction that wrote on several nodes: the
 *	  names of its prepared transactions, the commit record on the
 *	  coordinator, and the resolution of transactions left in doubt.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_TWOPHASE_H
#define COLOJOIN_TWOPHASE_H

#include "libpq-fe.h"

/*
 * cj_twophase_gid: the name of the transaction prepared on (serverid,
 * userid, slot) for the current local transaction, which gets an xid now
 * if it had none.  It names this coordinator (system identifier, database)
 * and the local transaction, so that recovery can tell its fate.
 */
extern char *cj_twophase_gid(Oid serverid, Oid userid, int slot);

/*
 * cj_twophase_log: write the commit records of gids (char *) in the local
 * transaction, before any of them is prepared: they become visible exactly
 * when the local transaction commits.  ERROR when the extension's record
 * table is missing (an older version installed).
 */
extern void cj_twophase_log(List *gids, List *serverids);

/*
 * cj_twophase_forget: gid was committed on its node; its record can go
 * (removed at this backend's next two-phase commit, or by recovery).
 */
extern void cj_twophase_forget(const char *gid);

/*
 * cj_twophase_resolve: on conn (a connection to serverid outside any
 * transaction), commit or roll back the transactions this coordinator
 * prepared there whose local transaction has ended: committed when its
 * commit record exists.  Only those that role owner prepared, unless owner
 * is InvalidOid.  Never throws for the node's failures when quiet; returns
 * how many it resolved, each appended to report (may be NULL) as a list of
 * node, gid and "committed" or "rolled back".
 */
extern int	cj_twophase_resolve(PGconn *conn, Oid serverid, const char *node,
								bool quiet, Oid owner, List **report);

/*
 * cj_twophase_recover_server: what recovery does for one node (in a
 * transaction): resolve as cj_twophase_resolve does, then delete the commit
 * records of transactions no longer prepared there.  With as_user, through
 * that role's user mapping (nothing when it has none); with InvalidOid,
 * each transaction through the mapping of the role that prepared it, so
 * that the node lets it finish them (superusers only: it reads every
 * role's mappings).  A node that cannot be reached is a WARNING.
 */
extern void cj_twophase_recover_server(Oid serverid, Oid as_user, bool quiet,
									   List **report);

/* the postgres_fdw servers of this database, by name (recovery's nodes) */
extern List *cj_twophase_servers(void);

/*
 * cj_twophase_resolve_once: cj_twophase_resolve at the first connection
 * of this backend to serverid (and again after a commit there failed), so
 * that transactions left in doubt are resolved at the next use of a node.
 * pending is what cj_twophase_pending_sql said on that connection: when it
 * saw nothing this coordinator prepared, there is nothing to list.
 */
extern void cj_twophase_resolve_once(PGconn *conn, Oid serverid,
									 const char *node, bool pending);

/*
 * cj_twophase_pending_sql: a boolean expression, true when the node may
 * hold a transaction this coordinator prepared (or cannot tell); it rides
 * along with the session setup, which spares a new session's first query
 * a round trip and the view's planning on every node it touches.
 */
extern const char *cj_twophase_pending_sql(void);

/* a COMMIT PREPARED on serverid failed: check it again at the next connection */
extern void cj_twophase_recheck(Oid serverid);

/* this backend has resolved what serverid held (and need not ask again) */
extern bool cj_twophase_resolved(Oid serverid);

/*
 * cj_twophase_available: the installed extension has the commit records
 * (version 1.2 on); colojoin's write path needs them.
 */
extern bool cj_twophase_available(void);

/* the setting for tests (colojoin.debug_pause_after_prepare) and its wait */
extern void cj_twophase_init(void);
extern void cj_twophase_debug_pause(void);

/*
 * cj_twophase_hold: before the transaction prepares on its nodes, mark its
 * gids as being finished by this session, so that no other backend's
 * resolution touches them; cj_twophase_release once they are finished.
 */
extern void cj_twophase_hold(void);
extern void cj_twophase_release(void);

#endif							/* COLOJOIN_TWOPHASE_H */
