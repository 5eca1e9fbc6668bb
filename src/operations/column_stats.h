/*-------------------------------------------------------------------------
 *
 * column_stats.h
 *	  Column statistics of unanalyzed sharded tables from their nodes'
 *	  (column_stats.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_COLUMN_STATS_H
#define COLOJOIN_COLUMN_STATS_H

extern void cj_column_stats_init(void);

#endif							/* COLOJOIN_COLUMN_STATS_H */
