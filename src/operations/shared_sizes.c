/*-------------------------------------------------------------------------
 *
 * shared_sizes.c
 *	  The remote sizes one backend read from the nodes (size_cache.c), kept
 *	  in shared memory for every backend of the server, so that a new
 *	  session plans its first query without asking the nodes again: a
 *	  point lookup in a fresh psql would otherwise open a connection to a
 *	  node just to learn sizes that another session read a second ago.
 *
 *	  Only with colojoin in shared_preload_libraries; without, every
 *	  backend keeps its own (size_cache.c works alone).  A fixed number of
 *	  entries (colojoin.shared_size_entries), keyed by database and leaf;
 *	  when full, the entry read longest ago makes room.  An entry carries
 *	  the time its node was asked, and size_cache.c takes it only while it
 *	  is younger than colojoin.remote_size_lifetime, as its own.  A table
 *	  of more columns than an entry holds is not shared.
 *
 *	  Owns what the shared table (util/shared_table.c) holds; reads no node
 *	  and decides nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "miscadmin.h"
#include "utils/guc.h"

#include "operations/shared_sizes.h"
#include "util/shared_table.h"

typedef struct SharedSizeKey
{
	Oid			dbid;
	Oid			leaf;
} SharedSizeKey;

typedef struct SharedSizeEntry
{
	SharedSizeKey key;
	CjSharedSize size;
} SharedSizeEntry;

int			colojoin_shared_size_entries = 1024;

static CjSharedTable sizes = {
	"colojoin sizes", 0, sizeof(SharedSizeKey), sizeof(SharedSizeEntry)
};

/*
 * cj_shared_size_get
 *		Copies the shared entry of leaf into *out; false when there is none.
 *		Whether it is fresh enough is the caller's to judge (its fetched).
 */
bool
cj_shared_size_get(Oid leaf, CjSharedSize *out)
{
	SharedSizeKey key;
	SharedSizeEntry *e;

	if (sizes.htab == NULL)
		return false;
	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	key.leaf = leaf;
	LWLockAcquire(sizes.lock, LW_SHARED);
	e = hash_search(sizes.htab, &key, HASH_FIND, NULL);
	if (e != NULL)
		memcpy(out, &e->size, sizeof(CjSharedSize));
	LWLockRelease(sizes.lock);
	return e != NULL;
}

/*
 * cj_shared_size_put
 *		Publishes what this backend read of leaf for the others; the entry
 *		read longest ago makes room when the table is full.
 */
void
cj_shared_size_put(Oid leaf, const CjSharedSize *size)
{
	SharedSizeKey key;
	SharedSizeEntry *e;
	bool		found;

	if (sizes.htab == NULL || size->ncols > CJ_SHARED_SIZE_COLS)
		return;
	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	key.leaf = leaf;
	LWLockAcquire(sizes.lock, LW_EXCLUSIVE);
	e = cj_shared_table_enter(&sizes, &key,
							  offsetof(SharedSizeEntry, size) + offsetof(CjSharedSize, fetched),
							  &found);
	if (e != NULL)
		memcpy(&e->size, size, sizeof(CjSharedSize));
	LWLockRelease(sizes.lock);
}

void
cj_shared_sizes_init(void)
{
	/* a setting of server start exists only where it can take effect */
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomIntVariable("colojoin.shared_size_entries",
							"How many foreign partitions' remote sizes the server keeps in shared memory for all its sessions.",
							"Needs colojoin in shared_preload_libraries; 0 keeps sizes per session only.",
							&colojoin_shared_size_entries,
							1024, 0, INT_MAX / 4096,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	sizes.nentries = colojoin_shared_size_entries;
	cj_shared_table_register(&sizes);
}
