/*-------------------------------------------------------------------------
 *
 * setup_cache.h
 *	  What a new connection need not ask a node again: the answers other
 *	  backends' session setups got, kept in shared memory (setup_cache.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_SETUP_CACHE_H
#define COLOJOIN_SETUP_CACHE_H

#include "datatype/timestamp.h"

/* what a connection saw of the shared entry before asking the node */
typedef struct CjSetupToken
{
	TimestampTz born;			/* the entry's creation, 0 when there was none */
	uint64		doubts;			/* its count of possible doubts then */
} CjSetupToken;

extern int	colojoin_node_identity_lifetime;

/* define the settings and ask for the shared memory (at preload) */
extern void cj_setup_cache_init(void);

/*
 * cj_setup_cache_identity: what the node said about itself within
 * colojoin.node_identity_lifetime, over connection options of the same
 * fingerprint; false when it must be asked.
 */
extern bool cj_setup_cache_identity(Oid serverid, Oid userid, uint32 fingerprint,
									char *node, Size nodelen,
									char *role, Size rolelen);
extern void cj_setup_cache_put_identity(Oid serverid, Oid userid,
										uint32 fingerprint,
										const char *node, const char *role);

/*
 * cj_setup_cache_no_doubt: the node was seen holding no prepared
 * transaction of this database since any backend of the database last
 * prepared one or left one in doubt.  Otherwise false, with *token to hand to
 * cj_setup_cache_saw_none once the node has been asked.
 */
extern bool cj_setup_cache_no_doubt(Oid serverid, Oid userid, CjSetupToken *token);
extern void cj_setup_cache_saw_none(Oid serverid, Oid userid,
									const CjSetupToken *token);

/* a transaction of this database may be prepared, or left in doubt, on a node */
extern void cj_setup_cache_doubt(void);

#endif							/* COLOJOIN_SETUP_CACHE_H */
