/*-------------------------------------------------------------------------
 *
 * metadata.h
 *	  The shard metadata of a sharded table, read from PostgreSQL's own
 *	  catalogs (partitioning, postgres_fdw foreign tables and servers) plus
 *	  colojoin.replicas, cached per backend.
 *
 *	  A "sharded table" is a partitioned table.  Its top-level partitions are
 *	  its partition classes; every leaf below a class (one leaf, or several
 *	  with multi-level partitioning) has one or more placements: the
 *	  postgres_fdw server of the foreign table, plus replicas.  A plain local
 *	  leaf sits on the pseudo-node "local" (serverid InvalidOid).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_METADATA_H
#define COLOJOIN_METADATA_H

#include "access/tupdesc.h"
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"

/* server OID of the pseudo-node "local" (the coordinator itself) */
#define CJ_LOCAL_NODE InvalidOid

typedef struct CjPlacement
{
	Oid			serverid;		/* foreign server, or CJ_LOCAL_NODE */
	char	   *remote_schema;	/* schema of the relation on that node */
	char	   *remote_table;	/* name of the relation on that node */
	bool		is_replica;		/* false for the foreign table's own server */
} CjPlacement;

typedef struct CjLeaf
{
	Oid			relid;			/* the leaf partition */
	bool		is_foreign;		/* a postgres_fdw foreign table */
	int			nplacements;	/* primary first, then replicas */
	CjPlacement *placements;

	/*
	 * Placements that missed a write (colojoin.stale_placements): not in
	 * placements, so nothing reads or writes them, until
	 * colojoin.repair_placement brings them back.
	 */
	int			nstale;
	CjPlacement *stale;

	/*
	 * Remote column name of each column of the sharded (top-level) table,
	 * indexed by the top-level table's attno - 1; NULL for dropped columns.
	 * Honours postgres_fdw's column_name option and attnos that differ
	 * between parent and leaf.  Read through cj_leaf_colnames: they are
	 * looked up at the first use, since a pruned query reads one leaf of
	 * many (looking up every leaf's columns was a third of a new session's
	 * planning of a point lookup).
	 */
	int			natts;
	char	  **remote_colnames;	/* NULL until cj_leaf_colnames */
	TupleDesc	topdesc;		/* the sharded table's, for that lookup */
	MemoryContext cxt;			/* the cached table's */
} CjLeaf;

/* leaf's remote column names, by the sharded table's attno - 1 */
extern char **cj_leaf_colnames(CjLeaf *leaf);

typedef struct CjClass
{
	Oid			partrelid;		/* the top-level partition */
	PartitionBoundSpec *bound;	/* its bound, as in pg_class.relpartbound */
	char	   *bound_text;		/* NULL until cj_class_bound_text makes it */
	int			nleaves;
	CjLeaf	   *leaves;			/* every leaf below this partition */

	/*
	 * Nodes holding every leaf of the class (intersection of the leaves'
	 * placements), primary's server first.  NIL when the leaves are spread
	 * over nodes so that no node holds the whole class.
	 */
	List	   *nodes;			/* of Oid */
} CjClass;

typedef struct CjTable
{
	Oid			relid;			/* the partitioned table */
	char		strategy;		/* PARTITION_STRATEGY_HASH, _LIST or _RANGE */
	int			partnatts;
	AttrNumber *partattrs;		/* 0 where the key column is an expression */
	Node	  **partexprs;		/* the expression of each key column whose
								 * partattrs is 0 (Vars of varno 1, the
								 * table's own attnos), else NULL */
	Oid		   *parttypid;
	int32	   *parttypmod;
	Oid		   *partopfamily;
	Oid		   *partopcintype;
	Oid		   *partcollation;
	bool		has_default;	/* a DEFAULT partition exists */
	int			nclasses;		/* in PartitionDesc order */
	CjClass    *classes;
	bool		all_foreign;	/* every leaf is a postgres_fdw foreign table */
} CjTable;

/*
 * cj_get_table: the metadata of a partitioned table, or NULL when relid is
 * not a partitioned table.  The result lives in a cache owned by this module
 * and stays valid until the end of the current transaction even if an
 * invalidation arrives meanwhile (stale entries are freed at transaction
 * end), so planner code may hold it for the whole planning.
 */
extern CjTable *cj_get_table(Oid relid);

/*
 * cj_key_text: key column col of table as SQL, e.g. "o_orderkey" or
 * "(k % 1000)", its column names qualified with qualifier when not NULL
 */
extern char *cj_key_text(CjTable *table, int col, const char *qualifier);

/* "FOR VALUES WITH (modulus 16, remainder 3)": class cls's bound, as \d+ shows it */
extern const char *cj_class_bound_text(CjTable *table, int cls);

/* index of the class whose top-level partition is partrelid, or -1 */
extern int	cj_class_index(CjTable *table, Oid partrelid);

/* index of the class holding leaf leafrelid (any level), or -1 */
extern int	cj_class_of_leaf(CjTable *table, Oid leafrelid, int *leafindex);

/* "n1" for a server, "local" for CJ_LOCAL_NODE */
extern char *cj_node_name(Oid serverid);

/* true when serverid is a server of the postgres_fdw foreign-data wrapper */
extern bool cj_is_postgres_fdw_server(Oid serverid);

/* OID of table colojoin.replicas (InvalidOid when the extension is absent) */
extern Oid	cj_replicas_relid(void);

/* OID of table colojoin.stale_placements (InvalidOid before version 1.2) */
extern Oid	cj_stale_relid(void);

/* whether any placement is stale at all (cached until the table changes) */
extern bool cj_any_stale_placement(void);

/* Invalidate cached metadata of one table (or all, with InvalidOid) */
extern void cj_metadata_invalidate(Oid relid);

/* the relcache callback that forgets cached tables (metadata.c) */
extern void cj_metadata_init(void);

#endif							/* COLOJOIN_METADATA_H */
