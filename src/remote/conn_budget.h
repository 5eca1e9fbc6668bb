/*-------------------------------------------------------------------------
 *
 * conn_budget.h
 *	  The connection budget: how many connections all sessions of this
 *	  coordinator may hold to one database server (a node), counted in
 *	  shared memory, and which idle cached connections should close.
 *
 *	  connection.c asks for a share before it opens a connection and gives
 *	  it back when the connection closes; the share is a token it keeps
 *	  with the connection.  This module never opens or closes connections.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_CONN_BUDGET_H
#define COLOJOIN_CONN_BUDGET_H

#include "datatype/timestamp.h"

/* settings, defined in colojoin.c */
extern int	colojoin_node_connection_budget;	/* per node; 0: no limit */
extern int	colojoin_connection_wait_timeout;	/* ms, for the budget or a free
													 * slot; 0: without limit */
extern int	colojoin_idle_connection_timeout;	/* ms; 0: never by time */

/*
 * Tokens: 0 is "holds no share" (what a zeroed connection entry says);
 * cj_budget_acquire never returns it.
 */
#define CJ_BUDGET_NONE		0
#define CJ_BUDGET_REFUSED	(-1)

/* from _PG_init: reserve and set up shared memory when preloaded */
extern void cj_budget_init(void);

/*
 * cj_budget_acquire: a share of serverid's node budget for one connection
 * about to be opened (server_name names it in messages).  optional: only
 * if there is room now and nobody waits, else CJ_BUDGET_REFUSED.
 * Otherwise waits its turn, interruptibly, at most
 * colojoin.connection_wait_timeout, then ERRORs (ERRCODE_TOO_MANY_CONNECTIONS).
 * Without shared memory every request is granted, the session's first with
 * a WARNING that the budget is off.
 */
extern int	cj_budget_acquire(Oid serverid, const char *server_name,
							  bool optional);

/* give the share back (*token becomes CJ_BUDGET_NONE); never throws */
extern void cj_budget_release(int *token);

/*
 * cj_budget_rekey: the connection just opened told which physical node
 * serverid reaches (node_identity.c): count it there from now on.
 */
extern void cj_budget_rekey(int *token, Oid serverid);

/* whether this backend counts any connection at all (cheap) */
extern bool cj_budget_holds_any(void);

/*
 * cj_budget_slot_wait: this backend starts (waiting) or stops waiting for a
 * free connection slot on the server of the node token counts in, which
 * refused it as full: meanwhile other sessions take no optional
 * connection there and close their idle ones to it at transaction end
 * (cj_budget_should_close), as for the budget's own waiters.  Never throws.
 */
extern void cj_budget_slot_wait(int token, bool waiting);

/*
 * cj_budget_should_close: whether an idle cached connection (slot, holding
 * token, last used at last_used) should close now: other sessions wait for
 * its node (its budget or a free slot on it), or it is one beyond a
 * server's first (slot > 0) and has been idle for
 * colojoin.idle_connection_timeout or there is no shared budget at all.
 */
extern bool cj_budget_should_close(int token, int slot, TimestampTz last_used,
								   TimestampTz now);

#endif							/* COLOJOIN_CONN_BUDGET_H */
