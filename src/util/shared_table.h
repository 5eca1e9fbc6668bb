/*-------------------------------------------------------------------------
 *
 * shared_table.h
 *	  Fixed-size hash tables in shared memory (shared_table.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_SHARED_TABLE_H
#define COLOJOIN_SHARED_TABLE_H

#include "storage/lwlock.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

typedef struct CjSharedTable
{
	const char *name;			/* of the memory and of its lock's tranche */
	int			nentries;
	Size		keysize;		/* the entry starts with its key */
	Size		entrysize;
	HTAB	   *htab;			/* NULL: not in shared memory */
	LWLock	   *lock;
} CjSharedTable;

extern void cj_shared_table_register(CjSharedTable *t);
extern void *cj_shared_table_enter(CjSharedTable *t, const void *key,
								   Size stamp, bool *found);

#endif							/* COLOJOIN_SHARED_TABLE_H */
