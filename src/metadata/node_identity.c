/*-------------------------------------------------------------------------
 *
 * node_identity.c
 *	  Which foreign servers reach the same database: the physical node
 *	  behind a server, learned from the node itself when colojoin first
 *	  connects to it, and remembered per backend.
 *
 *	  Several servers may name one database (room to move shards later, or
 *	  two addresses of one host).  Two connections of one transaction into
 *	  one database can wait on each other through its locks, which the node
 *	  cannot see as a deadlock since the coordinator holds both ends; so
 *	  DDL and writes of one transaction go through one connection per
 *	  physical node, and a server's identity is what tells.
 *
 *	  This file only records and compares identities; connection.c reads
 *	  them from the node (CJ_NODE_IDENTITY_COLUMNS) and decides what to share.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "metadata/node_identity.h"

typedef struct CjServerKey
{
	Oid			serverid;
	Oid			userid;
} CjServerKey;

typedef struct CjServerIdentity
{
	CjServerKey key;
	char		node[NAMEDATALEN + 64]; /* system identifier / database */
	char		role[NAMEDATALEN];	/* the user the mapping logs in as */
	uint64		learned;		/* order in which servers were learned */
} CjServerIdentity;

static HTAB *identities = NULL;
static uint64 learned_counter = 0;

static CjServerIdentity *
lookup(Oid serverid, Oid userid, bool create)
{
	CjServerKey key;
	bool		found;
	CjServerIdentity *e;

	if (identities == NULL)
	{
		HASHCTL		ctl;

		if (!create)
			return NULL;
		ctl.keysize = sizeof(CjServerKey);
		ctl.entrysize = sizeof(CjServerIdentity);
		ctl.hcxt = TopMemoryContext;
		identities = hash_create("colojoin node identities", 64, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	key.serverid = serverid;
	key.userid = userid;
	e = hash_search(identities, &key, create ? HASH_ENTER : HASH_FIND, &found);
	if (e != NULL && !found)
	{
		/* a new entry has learned nothing yet */
		e->learned = 0;
		e->node[0] = '\0';
		e->role[0] = '\0';
	}
	return e;
}

/*
 * cj_node_identity_learn
 *		See node_identity.h.  A server whose identity changed (a new
 *		cluster behind the same address) is learned anew, as the newest.
 */
void
cj_node_identity_learn(Oid serverid, Oid userid, const char *node,
					   const char *role)
{
	CjServerIdentity *e = lookup(serverid, userid, true);

	if (e->learned != 0 && strcmp(e->node, node) == 0 &&
		strcmp(e->role, role) == 0)
		return;
	strlcpy(e->node, node, sizeof(e->node));
	strlcpy(e->role, role, sizeof(e->role));
	e->learned = ++learned_counter;

	/* and the server's database whoever asks (the planner's question) */
	e = lookup(serverid, InvalidOid, true);
	strlcpy(e->node, node, sizeof(e->node));
	e->role[0] = '\0';
	e->learned = learned_counter;
}

const char *
cj_node_identity(Oid serverid)
{
	CjServerIdentity *e = lookup(serverid, InvalidOid, false);

	return (e != NULL && e->learned != 0) ? e->node : NULL;
}

/*
 * cj_node_same
 *		See node_identity.h: both known, and the same database.
 */
bool
cj_node_same(Oid a, Oid b)
{
	const char *ia;
	const char *ib;

	if (a == b)
		return true;
	ia = cj_node_identity(a);
	ib = cj_node_identity(b);
	return ia != NULL && ib != NULL && strcmp(ia, ib) == 0;
}

/*
 * cj_node_representative
 *		See node_identity.h: of the servers known to reach serverid's
 *		database as the same role for userid, the one learned first, so that
 *		the choice stays the same for the life of the backend's connections.
 */
Oid
cj_node_representative(Oid serverid, Oid userid)
{
	CjServerIdentity *mine = lookup(serverid, userid, false);
	HASH_SEQ_STATUS scan;
	CjServerIdentity *e;
	Oid			best = serverid;
	uint64		best_learned = PG_UINT64_MAX;

	if (mine == NULL || mine->learned == 0)
		return serverid;
	hash_seq_init(&scan, identities);
	while ((e = hash_seq_search(&scan)) != NULL)
	{
		if (e->key.userid == userid && e->learned != 0 &&
			strcmp(e->node, mine->node) == 0 &&
			strcmp(e->role, mine->role) == 0 && e->learned < best_learned)
		{
			best = e->key.serverid;
			best_learned = e->learned;
		}
	}
	return best;
}

/*
 * cj_node_identity_forget
 *		See node_identity.h.
 */
void
cj_node_identity_forget(Oid serverid)
{
	HASH_SEQ_STATUS scan;
	CjServerIdentity *e;

	if (identities == NULL)
		return;
	hash_seq_init(&scan, identities);
	while ((e = hash_seq_search(&scan)) != NULL)
	{
		if (!OidIsValid(serverid) || e->key.serverid == serverid)
			hash_search(identities, &e->key, HASH_REMOVE, NULL);
	}
}
