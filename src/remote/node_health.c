/*-------------------------------------------------------------------------
 *
 * node_health.c
 *	  A short memory of node failures: a server whose connection could not
 *	  be opened, or died under a task, is avoided by the planner and by
 *	  the executor for colojoin.node_failure_memory, wherever another
 *	  placement of the same partition class can serve.
 *
 *	  And a shorter one of busy nodes: a server that answered a connection
 *	  attempt with "no free slot" (or "starting up") is up, never a
 *	  failure; for CJ_BUSY_MEMORY_MS this session opens no connection there
 *	  that it can do without, so that it neither makes the node fork
 *	  backends only to refuse them nor takes a freed slot from a session
 *	  that waits for its first one.
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

/* how long a node's "no free slot" keeps optional connections away */
#define CJ_BUSY_MEMORY_MS	1000

typedef struct CjNodeFailure
{
	Oid			serverid;
	TimestampTz failed_at;
} CjNodeFailure;

static HTAB *failures = NULL;
/* the same entries, for nodes that said they had no free slot */
static HTAB *busy = NULL;

static HTAB *
node_table(HTAB **table, const char *name)
{
	if (*table == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(CjNodeFailure);
		ctl.hcxt = TopMemoryContext;
		*table = hash_create(name, 16, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	return *table;
}

static HTAB *
failure_table(void)
{
	return node_table(&failures, "colojoin node failures");
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

void
cj_node_note_busy(Oid serverid)
{
	bool		found;
	CjNodeFailure *f = hash_search(node_table(&busy, "colojoin busy nodes"),
								   &serverid, HASH_ENTER, &found);

	f->failed_at = GetCurrentTimestamp();
}

bool
cj_node_busy_recently(Oid serverid)
{
	CjNodeFailure *f;

	if (busy == NULL)
		return false;
	f = hash_search(busy, &serverid, HASH_FIND, NULL);
	if (f == NULL)
		return false;
	if (TimestampDifferenceExceeds(f->failed_at, GetCurrentTimestamp(),
								   CJ_BUSY_MEMORY_MS))
	{
		hash_search(busy, &serverid, HASH_REMOVE, NULL);
		return false;
	}
	return true;
}
