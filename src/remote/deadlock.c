/*-------------------------------------------------------------------------
 *
 * deadlock.c
 *	  Deadlocks across nodes.  Two coordinator sessions that write rows on
 *	  two nodes in opposite orders wait for each other on different nodes:
 *	  each node sees one harmless lock wait, and no node's deadlock detector
 *	  can see the cycle.  Only the coordinator knows which remote backends
 *	  belong to which session.
 *
 *	  Owns: a table in shared memory, one entry per coordinator backend,
 *	  of the remote backends the session writes through (node and pid,
 *	  from its first write there until its transaction ends) and, while one
 *	  of its remote statements waits, the sessions that statement waits for;
 *	  the search for a cycle of such waits through this session; and the
 *	  choice of the one session in a cycle that gives up (the one whose
 *	  transaction started last, as the youngest has the least work to lose),
 *	  so that two sessions that see the same cycle do not both abort.
 *
 *	  Deliberately does not: ask nodes anything or cancel a statement
 *	  (connection.c asks the node which backends block its waiting
 *	  statement, once per second of waiting, and ends the wait when told
 *	  this session is the victim), nor look at waits on the coordinator's
 *	  own locks, which PostgreSQL's detector cannot combine with these.
 *
 *	  Without colojoin in shared_preload_libraries there is no shared
 *	  memory and no detection: such waits last until lock_timeout or
 *	  statement_timeout.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "metadata/node_identity.h"
#include "remote/deadlock.h"

#define CJ_DL_TRANCHE		"colojoin deadlock detection"
/* remote backends one session can be known by; more go unregistered */
#define CJ_DL_MAX_REMOTE	64
/* sessions one waiting statement can be seen to wait for */
#define CJ_DL_MAX_WAITS		16

typedef struct CjDlRemote
{
	uint64		node;			/* hash of the node's identity */
	int			pid;			/* the backend's pid on that node */
} CjDlRemote;

typedef struct CjDlBackend
{
	int			pid;			/* coordinator pid; 0 while unused */
	TimestampTz xact_start;
	int			nremote;
	CjDlRemote	remote[CJ_DL_MAX_REMOTE];
	int			nwaits;			/* > 0 while a remote statement waits */
	int			waits_for[CJ_DL_MAX_WAITS]; /* backend indexes */
	int			waits_for_pid[CJ_DL_MAX_WAITS]; /* and their pids then */
	TimestampTz waits_for_start[CJ_DL_MAX_WAITS];	/* and transactions */
	uint64		wait_node;		/* where this session waits */
} CjDlBackend;

typedef struct CjDlShared
{
	LWLock	   *lock;
	int			nbackends;
	CjDlBackend backends[FLEXIBLE_ARRAY_MEMBER];
} CjDlShared;

static CjDlShared *dl = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
/* this backend has an entry in use, or published a wait */
static bool registered = false;
static bool waiting = false;
static bool exit_hook_registered = false;

static Size
dl_size(void)
{
	return add_size(offsetof(CjDlShared, backends),
					mul_size(MaxBackends, sizeof(CjDlBackend)));
}

static void
dl_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(dl_size());
	RequestNamedLWLockTranche(CJ_DL_TRANCHE, 1);
}

static void
dl_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	dl = ShmemInitStruct(CJ_DL_TRANCHE, dl_size(), &found);
	if (!found)
	{
		memset(dl, 0, dl_size());
		dl->lock = &(GetNamedLWLockTranche(CJ_DL_TRANCHE))->lock;
		dl->nbackends = MaxBackends;
	}
	LWLockRelease(AddinShmemInitLock);
}

void
cj_deadlock_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = dl_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = dl_shmem_startup;
}

static int
my_index(void)
{
	if (dl == NULL || MyBackendId == InvalidBackendId ||
		MyBackendId > dl->nbackends)
		return -1;
	return MyBackendId - 1;
}

/*
 * node_key
 *		The same database server reached through two foreign servers is one
 *		node to the nodes' locks: key it by its identity when known.  Before
 *		it is known the server's OID stands in (of this database: another
 *		coordinator database's servers are other keys).
 */
static uint64
node_key(Oid serverid)
{
	const char *identity = cj_node_identity(serverid);
	char		buf[64];

	if (identity == NULL)
	{
		snprintf(buf, sizeof(buf), "server %u of database %u",
				 serverid, MyDatabaseId);
		identity = buf;
	}
	return hash_bytes_extended((const unsigned char *) identity,
							   strlen(identity), 0);
}

/* a dying backend leaves no entry others could mistake for it */
static void
dl_exit(int code, Datum arg)
{
	cj_deadlock_forget();
}

/*
 * cj_deadlock_note_writer
 *		See deadlock.h.
 */
void
cj_deadlock_note_writer(Oid serverid, int remote_pid)
{
	int			me = my_index();
	CjDlBackend *b;
	uint64		node;
	int			i;

	if (me < 0 || remote_pid <= 0)
		return;
	node = node_key(serverid);
	b = &dl->backends[me];
	if (registered)
	{
		/* the owner alone writes its entry: reading it needs no lock */
		for (i = 0; i < b->nremote; i++)
			if (b->remote[i].node == node && b->remote[i].pid == remote_pid)
				return;
	}
	if (!exit_hook_registered)
	{
		before_shmem_exit(dl_exit, (Datum) 0);
		exit_hook_registered = true;
	}
	LWLockAcquire(dl->lock, LW_EXCLUSIVE);
	if (!registered)
	{
		b->pid = MyProcPid;
		b->xact_start = GetCurrentTransactionStartTimestamp();
		b->nremote = 0;
		b->nwaits = 0;
	}
	if (b->nremote < CJ_DL_MAX_REMOTE)
	{
		b->remote[b->nremote].node = node;
		b->remote[b->nremote].pid = remote_pid;
		b->nremote++;
	}
	registered = true;
	LWLockRelease(dl->lock);
}

bool
cj_deadlock_registered(void)
{
	return registered;
}

void
cj_deadlock_forget(void)
{
	int			me = my_index();

	if (me < 0 || (!registered && !waiting))
		return;
	LWLockAcquire(dl->lock, LW_EXCLUSIVE);
	dl->backends[me].pid = 0;
	dl->backends[me].nremote = 0;
	dl->backends[me].nwaits = 0;
	LWLockRelease(dl->lock);
	registered = false;
	waiting = false;
}

void
cj_deadlock_end_wait(void)
{
	int			me = my_index();

	if (me < 0 || !waiting)
		return;
	LWLockAcquire(dl->lock, LW_EXCLUSIVE);
	dl->backends[me].nwaits = 0;
	LWLockRelease(dl->lock);
	waiting = false;
}

/* the session whose remote backend pid on node is, or -1 */
static int
owner_of(uint64 node, int pid)
{
	int			i,
				r;

	for (i = 0; i < dl->nbackends; i++)
	{
		CjDlBackend *b = &dl->backends[i];

		if (b->pid == 0)
			continue;
		for (r = 0; r < b->nremote; r++)
			if (b->remote[r].node == node && b->remote[r].pid == pid)
				return i;
	}
	return -1;
}

/*
 * find_cycle
 *		Depth first from me along the published waits; true when a path
 *		comes back to me, with parent[] leading back along it.  A wait
 *		counts only while its target is still in the transaction it was
 *		(pid and start), so that a wait published a moment before it ended
 *		cannot be mistaken for one on the session's next transaction.
 */
static bool
find_cycle(int me, int *parent, int *last)
{
	int		   *stack = palloc(sizeof(int) * dl->nbackends);
	bool	   *seen = palloc0(sizeof(bool) * dl->nbackends);
	int			depth = 0;
	bool		found = false;

	stack[depth++] = me;
	seen[me] = true;
	while (depth > 0 && !found)
	{
		int			cur = stack[--depth];
		CjDlBackend *b = &dl->backends[cur];
		int			w;

		for (w = 0; w < b->nwaits; w++)
		{
			int			next = b->waits_for[w];

			if (dl->backends[next].pid != b->waits_for_pid[w] ||
				dl->backends[next].xact_start != b->waits_for_start[w])
				continue;
			if (next == me)
			{
				*last = cur;
				found = true;
				break;
			}
			if (seen[next] || dl->backends[next].nwaits == 0)
				continue;
			seen[next] = true;
			parent[next] = cur;
			stack[depth++] = next;
		}
	}
	pfree(stack);
	pfree(seen);
	return found;
}

/*
 * cj_deadlock_note_wait
 *		See deadlock.h.
 */
bool
cj_deadlock_note_wait(Oid serverid, const int *blockers, int nblockers,
					  char **detail)
{
	int			me = my_index();
	uint64		node;
	CjDlBackend *b;
	int		   *parent;
	int			last = -1;
	int			i;
	bool		victim = false;

	*detail = NULL;
	if (me < 0 || !registered)
		return false;
	node = node_key(serverid);
	b = &dl->backends[me];
	parent = palloc(sizeof(int) * dl->nbackends);

	LWLockAcquire(dl->lock, LW_EXCLUSIVE);
	b->nwaits = 0;
	b->wait_node = node;
	for (i = 0; i < nblockers && b->nwaits < CJ_DL_MAX_WAITS; i++)
	{
		int			o = owner_of(node, blockers[i]);

		if (o < 0 || o == me)
			continue;
		b->waits_for[b->nwaits] = o;
		b->waits_for_pid[b->nwaits] = dl->backends[o].pid;
		b->waits_for_start[b->nwaits] = dl->backends[o].xact_start;
		b->nwaits++;
	}
	waiting = true;

	if (b->nwaits > 0 && find_cycle(me, parent, &last))
	{
		StringInfoData buf;
		int			youngest = me;
		int			cur;

		/* the cycle is me -> ... -> last -> me, read back from last */
		initStringInfo(&buf);
		for (cur = last; cur != me; cur = parent[cur])
		{
			CjDlBackend *o = &dl->backends[cur];

			if (o->xact_start > dl->backends[youngest].xact_start ||
				(o->xact_start == dl->backends[youngest].xact_start &&
				 o->pid > dl->backends[youngest].pid))
				youngest = cur;
			appendStringInfo(&buf, "%sprocess %d", buf.len ? ", " : "", o->pid);
		}
		victim = (youngest == me);
		if (victim)
			*detail = psprintf("Process %d waits on a node for a transaction of a coordinator session (%s) that waits, on another node, for this one.",
							   MyProcPid, buf.data);
		pfree(buf.data);
	}
	LWLockRelease(dl->lock);
	pfree(parent);
	return victim;
}
