/*-------------------------------------------------------------------------
 *
 * node_health.c
 *	  A short memory of node failures: a server whose connection could not
 *	  be opened, or died under a task, is avoided by the planner and by
 *	  the executor for colojoin.node_failure_memory, wherever another
 *	  placement of the same partition class can serve.
 *
 *	  The memory is per backend: each session learns of a failure the first
 *	  time it meets it, pays for it once (a refused connection, or one task
 *	  re-run), and then goes around the node until the memory fades and it
 *	  tries again.  It decides nothing itself; planner.c and executor.c
 *	  consult it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "remote/node_health.h"

int			colojoin_node_failure_memory = 30000;

typedef struct CjNodeFailure
{
	Oid			serverid;
	TimestampTz failed_at;
} CjNodeFailure;

static HTAB *failures = NULL;

static HTAB *
failure_table(void)
{
	if (failures == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(CjNodeFailure);
		ctl.hcxt = TopMemoryContext;
		failures = hash_create("colojoin node failures", 16, &ctl,
							   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	return failures;
}

void
cj_node_note_failure(Oid serverid)
{
	bool		found;
	CjNodeFailure *f = hash_search(failure_table(), &serverid, HASH_ENTER, &found);

	f->failed_at = GetCurrentTimestamp();
}

void
cj_node_note_success(Oid serverid)
{
	if (failures != NULL)
		hash_search(failures, &serverid, HASH_REMOVE, NULL);
}

bool
cj_node_failed_recently(Oid serverid)
{
	CjNodeFailure *f;

	if (failures == NULL || colojoin_node_failure_memory <= 0)
		return false;
	f = hash_search(failures, &serverid, HASH_FIND, NULL);
	if (f == NULL)
		return false;
	if (TimestampDifferenceExceeds(f->failed_at, GetCurrentTimestamp(),
								   colojoin_node_failure_memory))
	{
		hash_search(failures, &serverid, HASH_REMOVE, NULL);
		return false;
	}
	return true;
}
