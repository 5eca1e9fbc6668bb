/*-------------------------------------------------------------------------
 *
 * decision_stats.h
 *	  colojoin.decisions: how each query was planned, counted per query id
 *	  in shared memory (decision_stats.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_DECISION_STATS_H
#define COLOJOIN_DECISION_STATS_H

/* how one planning went (decision_log.c's cj_decision_summary) */
typedef struct CjDecisionSummary
{
	bool		considered;		/* a join or step of colojoin's tables */
	bool		colocated;
	bool		redistributed;
	bool		broadcast;
	bool		dual_repartition;
	bool		steps_on_nodes;	/* aggregation, DISTINCT, ORDER BY ... LIMIT
								 * or windows on the nodes */
	bool		left_to_postgresql; /* nothing of it on the nodes */
	const char *reason;			/* the first reason something was left */
} CjDecisionSummary;

extern int	colojoin_decisions_max;

extern bool cj_decision_summary(CjDecisionSummary *out);
extern bool cj_decisions_enabled(void);
extern void cj_decisions_record(uint64 queryid, const CjDecisionSummary *s);
extern void cj_decision_stats_init(void);

#endif							/* COLOJOIN_DECISION_STATS_H */
