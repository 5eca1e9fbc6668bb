/*-------------------------------------------------------------------------
 *
 * conn_budget.c
 *	  The connection budget: at most colojoin.node_connection_budget
 *	  connections from all sessions of this coordinator to one database
 *	  server, counted in shared memory, so that many sessions running
 *	  fan-out joins cannot exhaust a node's max_connections.
 *
 *	  Owns: the shared table of per-node counters and its LWLock; which
 *	  counter a server's connections count in (the physical node once any
 *	  session learned it, node_identity.c, else the server itself); the
 *	  queue of sessions waiting for a connection (first come, first served,
 *	  interruptible, bounded by colojoin.connection_wait_timeout, ending in
 *	  an error that says who holds the budget); which sessions wait for a
 *	  free slot on a node that refused them as full (connection.c waits,
 *	  this module only lets the others see it); giving back what a dying
 *	  backend held; and the decision of which idle cached connections
 *	  should close (cj_budget_should_close).
 *
 *	  Deliberately does not: open, close or look at connections (that is
 *	  connection.c, which calls in here when it opens or closes one and at
 *	  transaction end), nor decide how many connections a scan wants
 *	  (executor.c asks for its extra ones as optional).
 *
 *	  Without colojoin in shared_preload_libraries there is no shared
 *	  memory: every request is granted (the session's first one warns that
 *	  the budget is off), only the per-session
 *	  colojoin.max_connections_per_node applies, and a session keeps only
 *	  its first connection to a server between transactions, since nobody
 *	  could ask it for the others back.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/backendid.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "metadata/node_identity.h"
#include "remote/conn_budget.h"
#include "remote/connection.h"

/* distinct database servers the table can count; more go uncounted */
#define CJ_BUDGET_MAX_NODES		64
/* (database, foreign server) pairs whose physical node is remembered */
#define CJ_BUDGET_MAX_SERVERS	256
#define CJ_BUDGET_KEY_LEN		64
/* a waiting session looks again this often, even if nobody woke it */
#define CJ_BUDGET_RECHECK_MS	1000
/* the token of a connection counted in this backend only */
#define CJ_BUDGET_LOCAL			(CJ_BUDGET_MAX_NODES + 1)
#define CJ_BUDGET_TRANCHE		"colojoin connection budget"

int			colojoin_node_connection_budget = 80;
int			colojoin_connection_wait_timeout = 30000;
int			colojoin_idle_connection_timeout = 60000;

/* one database server: its connections, and the sessions waiting for one */
typedef struct CjBudgetNode
{
	char		key[CJ_BUDGET_KEY_LEN]; /* "" while the entry is unused */
	int			nopen;			/* counted connections, open or opening */
	pg_atomic_uint32 nwaiting;	/* sessions waiting; read without the lock */
	pg_atomic_uint32 nslotwait; /* sessions waiting for a free slot on the
								 * server itself; read without the lock */
} CjBudgetNode;

/* what some session learned: this server of this database is that node */
typedef struct CjBudgetServer
{
	Oid			dbid;
	Oid			serverid;		/* InvalidOid while unused */
	int			node;			/* index into nodes */
} CjBudgetServer;

/* one backend (by BackendId): what it holds, what it waits for */
typedef struct CjBudgetBackend
{
	int			pid;
	int			wait_node;		/* node index + 1 waited for, 0 when none */
	uint64		wait_ticket;	/* place in that node's queue */
	int			slot_wait_node; /* node index + 1 whose server is full, 0 */
	uint16		held[CJ_BUDGET_MAX_NODES];
} CjBudgetBackend;

typedef struct CjBudgetShared
{
	LWLock	   *lock;			/* protects everything below but nwaiting's reads */
	ConditionVariable cv;		/* broadcast when a connection closes or a wait ends */
	uint64		next_ticket;
	int			nbackends;
	CjBudgetNode nodes[CJ_BUDGET_MAX_NODES];
	CjBudgetServer servers[CJ_BUDGET_MAX_SERVERS];
	CjBudgetBackend backends[FLEXIBLE_ARRAY_MEMBER];
} CjBudgetShared;

static CjBudgetShared *budget = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* connections this backend counts, under any token */
static int	local_open = 0;
static bool exit_hook_registered = false;
/* the exit callback gave everything back: later releases change nothing */
static bool budget_detached = false;
/* without shared memory: the session was told the budget is off */
static bool warned_unshared = false;

static Size
budget_size(void)
{
	return add_size(offsetof(CjBudgetShared, backends),
					mul_size(MaxBackends, sizeof(CjBudgetBackend)));
}

static void
budget_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(budget_size());
	RequestNamedLWLockTranche(CJ_BUDGET_TRANCHE, 1);
}

static void
budget_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	budget = ShmemInitStruct(CJ_BUDGET_TRANCHE, budget_size(), &found);
	if (!found)
	{
		int			i;

		memset(budget, 0, budget_size());
		budget->lock = &(GetNamedLWLockTranche(CJ_BUDGET_TRANCHE))->lock;
		ConditionVariableInit(&budget->cv);
		budget->nbackends = MaxBackends;
		for (i = 0; i < CJ_BUDGET_MAX_NODES; i++)
		{
			pg_atomic_init_u32(&budget->nodes[i].nwaiting, 0);
			pg_atomic_init_u32(&budget->nodes[i].nslotwait, 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * cj_budget_init
 *		Only a preloaded library may have shared memory; loaded later (LOAD,
 *		session_preload_libraries) colojoin runs without the budget.
 */
void
cj_budget_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = budget_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = budget_shmem_startup;
}

/* this backend's entry, or NULL when there is no budget for it */
static CjBudgetBackend *
my_entry(void)
{
	if (budget == NULL || budget_detached ||
		MyBackendId == InvalidBackendId || MyBackendId > budget->nbackends)
		return NULL;
	return &budget->backends[MyBackendId - 1];
}

/*
 * budget_exit
 *		before_shmem_exit: a backend on its way out gives back every share it
 *		holds and leaves any queue, whatever path it exits by; its sockets
 *		close with the process.
 */
static void
budget_exit(int code, Datum arg)
{
	CjBudgetBackend *me = my_entry();
	int			i;

	if (me == NULL)
		return;
	LWLockAcquire(budget->lock, LW_EXCLUSIVE);
	for (i = 0; i < CJ_BUDGET_MAX_NODES; i++)
	{
		budget->nodes[i].nopen -= me->held[i];
		me->held[i] = 0;
	}
	if (me->wait_node > 0)
		pg_atomic_fetch_sub_u32(&budget->nodes[me->wait_node - 1].nwaiting, 1);
	me->wait_node = 0;
	if (me->slot_wait_node > 0)
		pg_atomic_fetch_sub_u32(&budget->nodes[me->slot_wait_node - 1].nslotwait, 1);
	me->slot_wait_node = 0;
	me->pid = 0;
	LWLockRelease(budget->lock);
	budget_detached = true;
	ConditionVariableBroadcast(&budget->cv);
}

/*
 * node_key
 *		The key of the physical node serverid reaches, when this backend
 *		knows it: the database server, i.e. the identity without its
 *		database (max_connections is the server's, not a database's).
 */
static bool
node_key(Oid serverid, char *key)
{
	const char *identity = cj_node_identity(serverid);
	const char *slash;
	int			len;

	if (identity == NULL)
		return false;
	slash = strchr(identity, '/');
	len = slash ? slash - identity : strlen(identity);
	snprintf(key, CJ_BUDGET_KEY_LEN, "node %.*s", len, identity);
	return true;
}

/*
 * find_node_locked
 *		The entry for key, made if need be (reusing one nobody counts or
 *		waits in when the table is full); -1 when there is none to be had.
 */
static int
find_node_locked(const char *key)
{
	int			i;
	int			unused = -1;
	int			idle = -1;

	for (i = 0; i < CJ_BUDGET_MAX_NODES; i++)
	{
		CjBudgetNode *n = &budget->nodes[i];

		if (strcmp(n->key, key) == 0)
			return i;
		if (n->key[0] == '\0' && unused < 0)
			unused = i;
		else if (n->nopen == 0 && pg_atomic_read_u32(&n->nwaiting) == 0 &&
				 pg_atomic_read_u32(&n->nslotwait) == 0 && idle < 0)
			idle = i;
	}
	if (unused < 0 && idle >= 0)
	{
		/* forget the servers that pointed at the entry reused */
		for (i = 0; i < CJ_BUDGET_MAX_SERVERS; i++)
			if (budget->servers[i].node == idle)
				budget->servers[i].serverid = InvalidOid;
		unused = idle;
	}
	if (unused >= 0)
		strlcpy(budget->nodes[unused].key, key, CJ_BUDGET_KEY_LEN);
	return unused;
}

/* remember (where there is room) that serverid of this database is node */
static void
publish_server_locked(Oid serverid, int node)
{
	int			i;
	int			free_entry = -1;

	for (i = 0; i < CJ_BUDGET_MAX_SERVERS; i++)
	{
		CjBudgetServer *s = &budget->servers[i];

		if (s->serverid == serverid && s->dbid == MyDatabaseId)
		{
			s->node = node;
			return;
		}
		if (s->serverid == InvalidOid && free_entry < 0)
			free_entry = i;
	}
	if (free_entry >= 0)
	{
		budget->servers[free_entry].dbid = MyDatabaseId;
		budget->servers[free_entry].serverid = serverid;
		budget->servers[free_entry].node = node;
	}
}

/*
 * node_for_server_locked
 *		The entry serverid's connections count in: its physical node as this
 *		backend or any other learned it, else one of the server's own.
 */
static int
node_for_server_locked(Oid serverid)
{
	char		key[CJ_BUDGET_KEY_LEN];
	int			i;

	if (node_key(serverid, key))
		return find_node_locked(key);
	for (i = 0; i < CJ_BUDGET_MAX_SERVERS; i++)
	{
		CjBudgetServer *s = &budget->servers[i];

		if (s->serverid == serverid && s->dbid == MyDatabaseId)
			return s->node;
	}
	snprintf(key, sizeof(key), "server %u/%u", MyDatabaseId, serverid);
	return find_node_locked(key);
}

static void
grant_locked(CjBudgetBackend *me, int node)
{
	budget->nodes[node].nopen++;
	me->held[node]++;
	me->pid = MyProcPid;
	local_open++;
}

/* whether a request (ticket 0: a new one) may take a connection of node */
static bool
may_take_locked(int node, uint64 ticket)
{
	CjBudgetNode *n = &budget->nodes[node];
	int			ahead = 0;
	int			i;

	if (colojoin_node_connection_budget == 0)
		return true;
	if (ticket == 0)
		return n->nopen < colojoin_node_connection_budget &&
			pg_atomic_read_u32(&n->nwaiting) == 0;
	/* first come, first served: those that waited longer go first */
	for (i = 0; i < budget->nbackends; i++)
	{
		CjBudgetBackend *b = &budget->backends[i];

		if (b->wait_node == node + 1 && b->wait_ticket < ticket)
			ahead++;
	}
	return n->nopen + ahead < colojoin_node_connection_budget;
}

static void
leave_queue_locked(CjBudgetBackend *me)
{
	if (me->wait_node > 0)
		pg_atomic_fetch_sub_u32(&budget->nodes[me->wait_node - 1].nwaiting, 1);
	me->wait_node = 0;
	me->wait_ticket = 0;
}

/*
 * report_timeout
 *		The wait for node ran out: say what the budget is and who holds it.
 */
static void
report_timeout(CjBudgetBackend *me, int node, const char *server_name,
			   long waited_ms)
{
	int			nopen;
	int			nwaiting;
	int			nholders = 0;
	int			top_pid[3] = {0, 0, 0};
	int			top_n[3] = {0, 0, 0};
	StringInfoData who;
	int			i;

	LWLockAcquire(budget->lock, LW_EXCLUSIVE);
	nopen = budget->nodes[node].nopen;
	nwaiting = pg_atomic_read_u32(&budget->nodes[node].nwaiting);
	leave_queue_locked(me);
	for (i = 0; i < budget->nbackends; i++)
	{
		CjBudgetBackend *b = &budget->backends[i];
		int			h = b->held[node];
		int			j;

		if (h == 0)
			continue;
		nholders++;
		for (j = 0; j < 3; j++)
		{
			if (h > top_n[j])
			{
				memmove(&top_n[j + 1], &top_n[j], sizeof(int) * (2 - j));
				memmove(&top_pid[j + 1], &top_pid[j], sizeof(int) * (2 - j));
				top_n[j] = h;
				top_pid[j] = b->pid;
				break;
			}
		}
	}
	LWLockRelease(budget->lock);
	ConditionVariableBroadcast(&budget->cv);

	initStringInfo(&who);
	for (i = 0; i < 3 && top_n[i] > 0; i++)
		appendStringInfo(&who, "%sPID %d holds %d", i > 0 ? ", " : "",
						 top_pid[i], top_n[i]);
	if (nholders > 3)
		appendStringInfo(&who, ", and %d more sessions hold the rest",
						 nholders - 3);
	if (who.len == 0)
		appendStringInfoString(&who, "no session holds any now");
	ereport(ERROR,
			(errcode(ERRCODE_TOO_MANY_CONNECTIONS),
			 errmsg("timed out waiting for a connection to node \"%s\"",
					server_name),
			 errdetail("The sessions of this coordinator may hold %d connections to the node's database server (colojoin.node_connection_budget), and %d are open: %s.  Sessions waiting: %d, this one for %ld ms.",
					   colojoin_node_connection_budget, nopen, who.data,
					   nwaiting, waited_ms),
			 errhint("Raise colojoin.node_connection_budget (staying below the node's max_connections), lower colojoin.max_connections_per_node, or raise colojoin.connection_wait_timeout.")));
}

/*
 * wait_turn
 *		Queue for a connection of node until one is granted.  Before each
 *		sleep this backend closes its own idle connections that others wait
 *		for (cj_conn_close_idle), so that two sessions each holding what the
 *		other waits for do not wait for each other.  An interrupt (cancel,
 *		statement_timeout) leaves the queue with the error.
 */
static void
wait_turn(CjBudgetBackend *me, int node, const char *server_name)
{
	TimestampTz start = GetCurrentTimestamp();
	volatile bool granted = false;
	long		waited = 0;

	ConditionVariableBroadcast(&budget->cv);	/* a new waiter: look again */
	PG_TRY();
	{
		ConditionVariablePrepareToSleep(&budget->cv);
		for (;;)
		{
			long		sleep_ms = CJ_BUDGET_RECHECK_MS;
			long		secs;
			int			usecs;

			LWLockAcquire(budget->lock, LW_EXCLUSIVE);
			if (may_take_locked(node, me->wait_ticket))
			{
				leave_queue_locked(me);
				grant_locked(me, node);
				granted = true;
			}
			LWLockRelease(budget->lock);
			if (granted)
				break;

			cj_conn_close_idle();
			TimestampDifference(start, GetCurrentTimestamp(), &secs, &usecs);
			waited = secs * 1000 + usecs / 1000;
			if (colojoin_connection_wait_timeout > 0)
			{
				if (waited >= colojoin_connection_wait_timeout)
					break;
				sleep_ms = Min(sleep_ms, colojoin_connection_wait_timeout - waited);
			}
			(void) ConditionVariableTimedSleep(&budget->cv, sleep_ms,
											   PG_WAIT_EXTENSION);
		}
	}
	PG_CATCH();
	{
		ConditionVariableCancelSleep();
		LWLockAcquire(budget->lock, LW_EXCLUSIVE);
		leave_queue_locked(me);
		LWLockRelease(budget->lock);
		ConditionVariableBroadcast(&budget->cv);
		PG_RE_THROW();
	}
	PG_END_TRY();
	ConditionVariableCancelSleep();

	if (!granted)
		report_timeout(me, node, server_name, waited);
	/* the queue moved: the next in line may fit as well */
	ConditionVariableBroadcast(&budget->cv);
}

/*
 * cj_budget_acquire
 *		See conn_budget.h.
 */
int
cj_budget_acquire(Oid serverid, const char *server_name, bool optional)
{
	CjBudgetBackend *me = my_entry();
	int			node;

	if (budget == NULL && !warned_unshared)
	{
		warned_unshared = true;
		ereport(WARNING,
				(errmsg("the shared connection budget is off because colojoin is not in shared_preload_libraries"),
				 errdetail("Each session opens its own connections to the nodes, up to colojoin.max_connections_per_node per node whatever the other sessions hold, and keeps only its first one to each node between transactions; colojoin.node_connection_budget does not apply."),
				 errhint("Add colojoin to shared_preload_libraries and restart the server.")));
	}
	if (me == NULL)
	{
		local_open++;
		return CJ_BUDGET_LOCAL;
	}
	if (!exit_hook_registered)
	{
		before_shmem_exit(budget_exit, (Datum) 0);
		exit_hook_registered = true;
	}

	LWLockAcquire(budget->lock, LW_EXCLUSIVE);
	node = node_for_server_locked(serverid);
	if (node < 0)
	{
		/* more database servers than the table holds: not counted */
		LWLockRelease(budget->lock);
		local_open++;
		return CJ_BUDGET_LOCAL;
	}
	/* a session waiting for a free slot on the server goes first */
	if (optional && pg_atomic_read_u32(&budget->nodes[node].nslotwait) > 0)
	{
		LWLockRelease(budget->lock);
		return CJ_BUDGET_REFUSED;
	}
	if (may_take_locked(node, 0))
	{
		grant_locked(me, node);
		LWLockRelease(budget->lock);
		return node + 1;
	}
	if (optional)
	{
		LWLockRelease(budget->lock);
		return CJ_BUDGET_REFUSED;
	}
	me->pid = MyProcPid;
	me->wait_node = node + 1;
	me->wait_ticket = ++budget->next_ticket;
	pg_atomic_fetch_add_u32(&budget->nodes[node].nwaiting, 1);
	LWLockRelease(budget->lock);

	wait_turn(me, node, server_name);
	return node + 1;
}

/*
 * cj_budget_release
 *		See conn_budget.h.  Runs in abort processing: never throws.
 */
void
cj_budget_release(int *token)
{
	int			t = *token;
	CjBudgetBackend *me;
	bool		waiters = false;

	*token = CJ_BUDGET_NONE;
	if (t <= 0)
		return;
	if (local_open > 0)
		local_open--;
	me = my_entry();
	if (t == CJ_BUDGET_LOCAL || me == NULL)
		return;
	LWLockAcquire(budget->lock, LW_EXCLUSIVE);
	if (me->held[t - 1] > 0)
	{
		me->held[t - 1]--;
		budget->nodes[t - 1].nopen--;
	}
	waiters = pg_atomic_read_u32(&budget->nodes[t - 1].nwaiting) > 0;
	LWLockRelease(budget->lock);
	if (waiters)
		ConditionVariableBroadcast(&budget->cv);
}

/*
 * cj_budget_rekey
 *		See conn_budget.h.  The move may leave the physical node's counter
 *		above the budget for as long as the connection lives; that happens
 *		only to connections opened before any session knew where the server
 *		leads, the first after a restart of the coordinator.
 */
void
cj_budget_rekey(int *token, Oid serverid)
{
	CjBudgetBackend *me = my_entry();
	char		key[CJ_BUDGET_KEY_LEN];
	int			old = *token - 1;
	int			node;
	bool		waiters = false;

	if (me == NULL || *token <= 0 || *token == CJ_BUDGET_LOCAL ||
		!node_key(serverid, key))
		return;
	LWLockAcquire(budget->lock, LW_EXCLUSIVE);
	node = find_node_locked(key);
	if (node >= 0)
	{
		publish_server_locked(serverid, node);
		if (node != old && me->held[old] > 0)
		{
			me->held[old]--;
			budget->nodes[old].nopen--;
			me->held[node]++;
			budget->nodes[node].nopen++;
			*token = node + 1;
			waiters = pg_atomic_read_u32(&budget->nodes[old].nwaiting) > 0;
		}
	}
	LWLockRelease(budget->lock);
	if (waiters)
		ConditionVariableBroadcast(&budget->cv);
}

bool
cj_budget_holds_any(void)
{
	return local_open > 0;
}

/*
 * cj_budget_slot_wait
 *		See conn_budget.h.  Counted apart from the budget's own waiters: the
 *		budget's queue does not wait for them, and its timeout's message
 *		does not count them.
 */
void
cj_budget_slot_wait(int token, bool waiting)
{
	CjBudgetBackend *me = my_entry();

	if (me == NULL || token <= 0 || token == CJ_BUDGET_LOCAL)
		return;
	LWLockAcquire(budget->lock, LW_EXCLUSIVE);
	if (waiting && me->slot_wait_node == 0)
	{
		me->slot_wait_node = token;
		pg_atomic_fetch_add_u32(&budget->nodes[token - 1].nslotwait, 1);
	}
	else if (!waiting && me->slot_wait_node > 0)
	{
		pg_atomic_fetch_sub_u32(&budget->nodes[me->slot_wait_node - 1].nslotwait, 1);
		me->slot_wait_node = 0;
	}
	LWLockRelease(budget->lock);
}

/*
 * cj_budget_should_close
 *		See conn_budget.h.  The waiters are counted without the lock: a
 *		stale answer only delays a close to the next transaction end, or to
 *		the next look of a waiting session.
 */
bool
cj_budget_should_close(int token, int slot, TimestampTz last_used,
					   TimestampTz now)
{
	/*
	 * Without shared memory no waiting session can ask for a connection
	 * back, and a node's slots taken by the extra connections of sessions
	 * that keep running queries would never come free for a session that
	 * waits for its first one.
	 */
	if (budget == NULL)
		return slot > 0;
	if (token > 0 && token != CJ_BUDGET_LOCAL && my_entry() != NULL &&
		(pg_atomic_read_u32(&budget->nodes[token - 1].nwaiting) > 0 ||
		 pg_atomic_read_u32(&budget->nodes[token - 1].nslotwait) > 0))
		return true;
	return slot > 0 && colojoin_idle_connection_timeout > 0 &&
		TimestampDifferenceExceeds(last_used, now,
								   colojoin_idle_connection_timeout);
}
