/*-------------------------------------------------------------------------
 *
 * node_health.h
 *	  Which nodes failed moments ago, so that plans and scans go around
 *	  them while another placement can serve; and which had no free
 *	  connection slot moments ago, so that scans do not ask them for more
 *	  connections than they need.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_NODE_HEALTH_H
#define COLOJOIN_NODE_HEALTH_H

#include "postgres.h"

/* setting colojoin.node_failure_memory: how long a failure counts, in ms */
extern int	colojoin_node_failure_memory;

/* serverid could not be reached (or its connection died) just now */
extern void cj_node_note_failure(Oid serverid);

/* serverid answered: forget an earlier failure */
extern void cj_node_note_success(Oid serverid);

/* serverid failed less than colojoin.node_failure_memory ago */
extern bool cj_node_failed_recently(Oid serverid);

/*
 * serverid answered a connection attempt with "no free slot" or "starting
 * up": it is up, but optional connections keep away for a moment
 */
extern void cj_node_note_busy(Oid serverid);
extern bool cj_node_busy_recently(Oid serverid);

#endif							/* COLOJOIN_NODE_HEALTH_H */
