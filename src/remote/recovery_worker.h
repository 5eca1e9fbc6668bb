/*-------------------------------------------------------------------------
 *
 * recovery_worker.h
 *	  The background workers that resolve prepared transactions left in
 *	  doubt, with colojoin in shared_preload_libraries (recovery_worker.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_RECOVERY_WORKER_H
#define COLOJOIN_RECOVERY_WORKER_H

/* colojoin.recovery_interval: ms between rounds; 0 or -1 turns them off */
extern int	colojoin_recovery_interval;

/* registers the launcher, while shared libraries are being preloaded */
extern void cj_recovery_worker_init(void);

#endif							/* COLOJOIN_RECOVERY_WORKER_H */
