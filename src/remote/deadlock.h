/*-------------------------------------------------------------------------
 *
 * deadlock.h
 *	  Deadlocks across nodes: which remote backends belong to which
 *	  coordinator session, who waits for whom, and which session of a
 *	  cycle gives up.  connection.c registers writers, asks the nodes and
 *	  ends the victim's wait; this module only keeps the shared table and
 *	  finds cycles.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_DEADLOCK_H
#define COLOJOIN_DEADLOCK_H

/* from _PG_init: reserve and set up shared memory when preloaded */
extern void cj_deadlock_init(void);

/*
 * cj_deadlock_note_writer: this session is about to write through its
 * backend remote_pid of serverid's node (kept until the transaction ends).
 */
extern void cj_deadlock_note_writer(Oid serverid, int remote_pid);

/* whether this session wrote through colojoin in this transaction */
extern bool cj_deadlock_registered(void);

/*
 * cj_deadlock_note_wait: a statement of this session waits on serverid's
 * node for the backends blockers (pg_blocking_pids there).  Publishes the
 * sessions they belong to as this session's wait, and returns true when
 * that closes a cycle of waits in which this session is the one to give up
 * (*detail then describes the cycle).
 */
extern bool cj_deadlock_note_wait(Oid serverid, const int *blockers,
								  int nblockers, char **detail);

/* the statement stopped waiting (its result arrived) */
extern void cj_deadlock_end_wait(void);

/* the transaction ended: nothing of it is left in the table */
extern void cj_deadlock_forget(void);

#endif							/* COLOJOIN_DEADLOCK_H */
