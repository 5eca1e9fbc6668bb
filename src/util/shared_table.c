/*-------------------------------------------------------------------------
 *
 * shared_table.c
 *	  Fixed-size hash tables in shared memory that colojoin's modules keep
 *	  for every backend of the server (remote sizes, planning decisions,
 *	  session setups):
 *	  asking for the memory and a lock while the library is preloaded,
 *	  attaching at startup, and making room by evicting the entry whose
 *	  timestamp is oldest.
 *
 *	  Owns the shared memory hooks of those tables; what an entry holds and
 *	  when it is read or written is each module's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

#include "util/shared_table.h"

static List *tables = NIL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
tables_shmem_request(void)
{
	ListCell   *lc;

	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	foreach(lc, tables)
	{
		CjSharedTable *t = lfirst(lc);

		RequestAddinShmemSpace(hash_estimate_size(t->nentries, t->entrysize));
		RequestNamedLWLockTranche(t->name, 1);
	}
}

static void
tables_shmem_startup(void)
{
	ListCell   *lc;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	foreach(lc, tables)
	{
		CjSharedTable *t = lfirst(lc);
		HASHCTL		info;

		memset(&info, 0, sizeof(info));
		info.keysize = t->keysize;
		info.entrysize = t->entrysize;
		t->htab = ShmemInitHash(t->name, t->nentries, t->nentries, &info,
								HASH_ELEM | HASH_BLOBS);
		t->lock = &(GetNamedLWLockTranche(t->name))->lock;
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * cj_shared_table_register
 *		t gets its memory and lock at server start: only while the library
 *		is preloaded, and only with room for at least one entry (t->htab
 *		stays NULL otherwise).  t must live as long as the process.
 */
void
cj_shared_table_register(CjSharedTable *t)
{
	MemoryContext old;

	if (!process_shared_preload_libraries_in_progress || t->nentries <= 0)
		return;
	if (tables == NIL)
	{
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = tables_shmem_request;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = tables_shmem_startup;
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	tables = lappend(tables, t);
	MemoryContextSwitchTo(old);
}

/*
 * cj_shared_table_enter
 *		The entry of key, made when missing (*found false: only its key is
 *		set); when the table holds its number of entries, the entry whose
 *		TimestampTz at byte offset stamp is oldest makes room.  NULL only when even that fails.
 *		The caller holds t->lock exclusively.
 */
void *
cj_shared_table_enter(CjSharedTable *t, const void *key, Size stamp,
					  bool *found)
{
	void	   *e = hash_search(t->htab, key, HASH_FIND, found);

	if (e != NULL)
		return e;

	/*
	 * A shared hash grows past its size while the server has memory to
	 * spare, so the bound is kept here.
	 */
	if (hash_get_num_entries(t->htab) < t->nentries)
		e = hash_search(t->htab, key, HASH_ENTER_NULL, found);
	if (e == NULL)
	{
		HASH_SEQ_STATUS status;
		char	   *x;
		char	   *oldest = NULL;

		hash_seq_init(&status, t->htab);
		while ((x = hash_seq_search(&status)) != NULL)
			if (oldest == NULL ||
				*(TimestampTz *) (x + stamp) < *(TimestampTz *) (oldest + stamp))
				oldest = x;
		if (oldest != NULL)
			hash_search(t->htab, oldest, HASH_REMOVE, NULL);
		e = hash_search(t->htab, key, HASH_ENTER_NULL, found);
	}
	if (e != NULL && !*found)
		memset((char *) e + t->keysize, 0, t->entrysize - t->keysize);
	return e;
}
