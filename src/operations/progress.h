/*-------------------------------------------------------------------------
 *
 * progress.h
 *	  How far colojoin's long operations are (progress.c): the
 *	  colojoin.progress rows and the NOTICEs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_PROGRESS_H
#define COLOJOIN_PROGRESS_H

extern int	colojoin_progress_notice_interval;	/* ms; -1 never */

extern void cj_progress_begin(const char *command, Oid relid,
							  const char *phase, int64 total);
extern void cj_progress_phase(const char *phase, int64 total);
extern void cj_progress_advance(int64 n);
extern void cj_progress_end(void);
extern void cj_progress_init(void);

#endif							/* COLOJOIN_PROGRESS_H */
