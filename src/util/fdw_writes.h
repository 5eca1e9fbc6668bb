/*-------------------------------------------------------------------------
 *
 * fdw_writes.h
 *	  Whether this transaction wrote to shards through postgres_fdw
 *	  (fdw_writes.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_FDW_WRITES_H
#define COLOJOIN_FDW_WRITES_H

/*
 * cj_xact_wrote_to_shards: a statement of this transaction wrote to a
 * foreign or partitioned table through PostgreSQL's executor (not through
 * colojoin's write path), COPY FROM or TRUNCATE.
 */
extern bool cj_xact_wrote_to_shards(void);

/*
 * Set by the write layer: whether a plan PostgreSQL executes writes through
 * colojoin's callbacks (row by row), so that it is no postgres_fdw write.
 */
struct PlannedStmt;
extern bool (*cj_statement_is_colojoins) (struct PlannedStmt *stmt);

/*
 * Set by the write layer while PostgreSQL writes through colojoin's
 * callbacks outside the executor (COPY): no postgres_fdw write.
 */
extern bool cj_writes_through_colojoin;

extern void cj_fdw_writes_init(void);

#endif							/* COLOJOIN_FDW_WRITES_H */
