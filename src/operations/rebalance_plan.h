/*-------------------------------------------------------------------------
 *
 * rebalance_plan.h
 *	  Which partition classes to move so that nodes hold alike.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_REBALANCE_PLAN_H
#define COLOJOIN_REBALANCE_PLAN_H

#include "nodes/pg_list.h"

typedef struct CjPlannedMove
{
	Oid			relid;			/* a table of the colocation group */
	int			cls;			/* its partition class */
	Oid			from;			/* the placement's server */
	Oid			to;				/* where it goes */
	double		rows;			/* of every table of the group's class */
	double		bytes;
} CjPlannedMove;

/*
 * cj_rebalance_plan: the moves (CjPlannedMove, in order) that even out
 * rows (or bytes) per node over servers (a List of server Oids; NIL: every
 * server holding a placement), moving whole classes of colocation groups
 * and never two placements of a class onto one node; with drain valid,
 * first every placement off drain's node.
 */
extern List *cj_rebalance_plan(List *servers, bool by_bytes, Oid drain);

/* the server Oids of a name[] argument; ERROR naming one that is not a server */
extern List *cj_server_list(Datum names);

#endif							/* COLOJOIN_REBALANCE_PLAN_H */
