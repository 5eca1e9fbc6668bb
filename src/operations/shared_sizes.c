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
 *	  Owns the shared table and its lock; reads no node and decides
 *	  nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/hsearch.h"

#include "operations/shared_sizes.h"

#define CJ_SIZES_TRANCHE "colojoin sizes"

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

static HTAB *shared_sizes = NULL;
static LWLock *sizes_lock = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
sizes_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(hash_estimate_size(colojoin_shared_size_entries,
											  sizeof(SharedSizeEntry)));
	RequestNamedLWLockTranche(CJ_SIZES_TRANCHE, 1);
}

static void
sizes_shmem_startup(void)
{
	HASHCTL		info;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(SharedSizeKey);
	info.entrysize = sizeof(SharedSizeEntry);
	shared_sizes = ShmemInitHash(CJ_SIZES_TRANCHE, colojoin_shared_size_entries,
								 colojoin_shared_size_entries, &info,
								 HASH_ELEM | HASH_BLOBS);
	sizes_lock = &(GetNamedLWLockTranche(CJ_SIZES_TRANCHE))->lock;
	LWLockRelease(AddinShmemInitLock);
}

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

	if (shared_sizes == NULL || sizes_lock == NULL)
		return false;
	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	key.leaf = leaf;
	LWLockAcquire(sizes_lock, LW_SHARED);
	e = hash_search(shared_sizes, &key, HASH_FIND, NULL);
	if (e != NULL)
		memcpy(out, &e->size, sizeof(CjSharedSize));
	LWLockRelease(sizes_lock);
	return e != NULL;
}

/* the entry read longest ago, removed; the lock held exclusively */
static void
evict_oldest(void)
{
	HASH_SEQ_STATUS status;
	SharedSizeEntry *e;
	SharedSizeKey oldest;
	TimestampTz when = 0;
	bool		any = false;

	hash_seq_init(&status, shared_sizes);
	while ((e = hash_seq_search(&status)) != NULL)
		if (!any || e->size.fetched < when)
		{
			oldest = e->key;
			when = e->size.fetched;
			any = true;
		}
	if (any)
		hash_search(shared_sizes, &oldest, HASH_REMOVE, NULL);
}

/*
 * cj_shared_size_put
 *		Publishes what this backend read of leaf for the others.
 */
void
cj_shared_size_put(Oid leaf, const CjSharedSize *size)
{
	SharedSizeKey key;
	SharedSizeEntry *e;

	if (shared_sizes == NULL || sizes_lock == NULL ||
		size->ncols > CJ_SHARED_SIZE_COLS)
		return;
	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	key.leaf = leaf;
	LWLockAcquire(sizes_lock, LW_EXCLUSIVE);
	e = hash_search(shared_sizes, &key, HASH_ENTER_NULL, NULL);
	if (e == NULL)
	{
		evict_oldest();
		e = hash_search(shared_sizes, &key, HASH_ENTER_NULL, NULL);
	}
	if (e != NULL)
		memcpy(&e->size, size, sizeof(CjSharedSize));
	LWLockRelease(sizes_lock);
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
	if (colojoin_shared_size_entries <= 0)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = sizes_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = sizes_shmem_startup;
}
