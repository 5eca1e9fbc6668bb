/*-------------------------------------------------------------------------
 *
 * shared_sizes.h
 *	  Remote sizes shared by every backend of the server (shared_sizes.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_SHARED_SIZES_H
#define COLOJOIN_SHARED_SIZES_H

#include "datatype/timestamp.h"

/* the most columns of a leaf an entry holds */
#define CJ_SHARED_SIZE_COLS 32

typedef struct CjSharedColumn
{
	NameData	name;			/* the remote column's name */
	Oid			type;
	double		ndistinct;		/* as pg_stats says; 0: unknown */
	double		nullfrac;
	char		lo[40];			/* its histogram's first and last bound, */
	char		hi[40];			/* "" when none (or too long to share) */
} CjSharedColumn;

typedef struct CjSharedSize
{
	double		tuples;			/* -1: the node does not know */
	double		pages;
	TimestampTz fetched;		/* when the node was asked */
	int			ncols;
	CjSharedColumn cols[CJ_SHARED_SIZE_COLS];
} CjSharedSize;

extern int	colojoin_shared_size_entries;

extern bool cj_shared_size_get(Oid leaf, CjSharedSize *out);
extern void cj_shared_size_put(Oid leaf, const CjSharedSize *size);
extern void cj_shared_sizes_init(void);

#endif							/* COLOJOIN_SHARED_SIZES_H */
