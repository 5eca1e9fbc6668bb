/*-------------------------------------------------------------------------
 *
 * setup_cache.c
 *	  What a new connection need not ask a node again.  Every connection's
 *	  session setup (conn_open.c) used to ask the node who it is (system
 *	  identifier and database, the role logged in) and whether it holds
 *	  transactions this database prepared: two catalog lookups a fresh node
 *	  backend pays for, a good part of a new session's first point lookup.
 *	  The answers are the same for every backend of the coordinator, so
 *	  they are kept here, in shared memory, per database, server and user.
 *
 *	  - A node's identity is taken from here while it is younger than
 *		colojoin.node_identity_lifetime and was learned over connection
 *		options of the same fingerprint (an ALTER SERVER or USER MAPPING
 *		that points elsewhere asks again at once).  A node replaced behind
 *		the same address is noticed when the entry ages out.
 *	  - "No transaction of ours prepared there" holds from the moment a
 *		connection saw none until any backend of the database records a
 *		new two-phase commit (twophase.c, before it prepares anything) or
 *		leaves one in doubt: each bumps every entry of the database.  A
 *		connection reads the entry's count before it asks the node and
 *		marks it clean only when the count did not move meanwhile, so a
 *		prepare racing with the question is never lost.  A restart of the
 *		coordinator (a crash included) starts with nothing known.
 *
 *	  Only with colojoin in shared_preload_libraries; without, every
 *	  connection asks, as before.  Owns the shared entries; asks no node
 *	  and resolves nothing (conn_open.c, twophase.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "remote/setup_cache.h"
#include "util/shared_table.h"

/* room for every (database, server, user) a server's sessions use at once */
#define CJ_SETUP_CACHE_ENTRIES 512

typedef struct SetupKey
{
	Oid			dbid;
	Oid			serverid;
	Oid			userid;
} SetupKey;

typedef struct SetupEntry
{
	SetupKey	key;
	TimestampTz used;			/* last written: the oldest makes room */
	TimestampTz born;			/* tells a new entry from an evicted one */
	uint64		doubts;			/* prepares and doubts recorded since born */
	bool		no_doubt;		/* the node held none at doubts == clean_at */
	uint64		clean_at;
	TimestampTz learned;		/* identity: 0 when not known */
	uint32		fingerprint;
	char		node[NAMEDATALEN + 64];
	char		role[NAMEDATALEN];
} SetupEntry;

int			colojoin_node_identity_lifetime = 300000;

static CjSharedTable setups = {
	"colojoin session setups", 0, sizeof(SetupKey), sizeof(SetupEntry)
};

static void
make_key(SetupKey *key, Oid serverid, Oid userid)
{
	memset(key, 0, sizeof(*key));
	key->dbid = MyDatabaseId;
	key->serverid = serverid;
	key->userid = userid;
}

/* the entry of key, made if need be; the caller holds the lock exclusively */
static SetupEntry *
enter(const SetupKey *key)
{
	bool		found;
	SetupEntry *e = cj_shared_table_enter(&setups, key,
										  offsetof(SetupEntry, used), &found);

	if (e != NULL)
	{
		e->used = GetCurrentTimestamp();
		if (!found)
			e->born = e->used;
	}
	return e;
}

bool
cj_setup_cache_identity(Oid serverid, Oid userid, uint32 fingerprint,
						char *node, Size nodelen, char *role, Size rolelen)
{
	SetupKey	key;
	SetupEntry *e;
	bool		known = false;

	if (setups.htab == NULL || colojoin_node_identity_lifetime <= 0)
		return false;
	make_key(&key, serverid, userid);
	LWLockAcquire(setups.lock, LW_SHARED);
	e = hash_search(setups.htab, &key, HASH_FIND, NULL);
	if (e != NULL && e->learned != 0 && e->fingerprint == fingerprint &&
		!TimestampDifferenceExceeds(e->learned, GetCurrentTimestamp(),
									colojoin_node_identity_lifetime))
	{
		strlcpy(node, e->node, nodelen);
		strlcpy(role, e->role, rolelen);
		known = true;
	}
	LWLockRelease(setups.lock);
	return known;
}

void
cj_setup_cache_put_identity(Oid serverid, Oid userid, uint32 fingerprint,
							const char *node, const char *role)
{
	SetupKey	key;
	SetupEntry *e;

	if (setups.htab == NULL)
		return;
	make_key(&key, serverid, userid);
	LWLockAcquire(setups.lock, LW_EXCLUSIVE);
	e = enter(&key);
	if (e != NULL)
	{
		e->learned = e->used;
		e->fingerprint = fingerprint;
		strlcpy(e->node, node, sizeof(e->node));
		strlcpy(e->role, role, sizeof(e->role));
	}
	LWLockRelease(setups.lock);
}

bool
cj_setup_cache_no_doubt(Oid serverid, Oid userid, CjSetupToken *token)
{
	SetupKey	key;
	SetupEntry *e;
	bool		clean = false;

	token->born = 0;
	token->doubts = 0;
	if (setups.htab == NULL)
		return false;
	make_key(&key, serverid, userid);
	LWLockAcquire(setups.lock, LW_EXCLUSIVE);
	e = enter(&key);
	if (e != NULL)
	{
		clean = e->no_doubt && e->clean_at == e->doubts;
		token->born = e->born;
		token->doubts = e->doubts;
	}
	LWLockRelease(setups.lock);
	return clean;
}

void
cj_setup_cache_saw_none(Oid serverid, Oid userid, const CjSetupToken *token)
{
	SetupKey	key;
	SetupEntry *e;

	if (setups.htab == NULL || token->born == 0)
		return;
	make_key(&key, serverid, userid);
	LWLockAcquire(setups.lock, LW_EXCLUSIVE);
	e = hash_search(setups.htab, &key, HASH_FIND, NULL);
	/* nothing prepared since the question was asked, in the same entry */
	if (e != NULL && e->born == token->born && e->doubts == token->doubts)
	{
		e->no_doubt = true;
		e->clean_at = e->doubts;
	}
	LWLockRelease(setups.lock);
}

void
cj_setup_cache_doubt(void)
{
	HASH_SEQ_STATUS scan;
	SetupEntry *e;

	if (setups.htab == NULL)
		return;
	LWLockAcquire(setups.lock, LW_EXCLUSIVE);
	hash_seq_init(&scan, setups.htab);
	while ((e = hash_seq_search(&scan)) != NULL)
	{
		if (e->key.dbid == MyDatabaseId)
		{
			e->doubts++;
			e->no_doubt = false;
		}
	}
	LWLockRelease(setups.lock);
}

void
cj_setup_cache_init(void)
{
	DefineCustomIntVariable("colojoin.node_identity_lifetime",
							"How long a new connection takes a node's identity from what an earlier connection of any session learned.",
							"0 asks the node at every connection. Needs colojoin in shared_preload_libraries.",
							&colojoin_node_identity_lifetime,
							300000, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	setups.nentries = CJ_SETUP_CACHE_ENTRIES;
	cj_shared_table_register(&setups);
}
