/*-------------------------------------------------------------------------
 *
 * class_split.h
 *	  What the blocking split (class_split.c) and the online one
 *	  (split_online.c) share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_CLASS_SPLIT_H
#define COLOJOIN_CLASS_SPLIT_H

#include "lib/stringinfo.h"
#include "nodes/pg_list.h"

#include "metadata/metadata.h"

/* one old leaf that splits */
typedef struct CjSplitLeaf
{
	CjTable    *table;
	CjLeaf	   *leaf;
	int			modulus;
	int			remainder;
} CjSplitLeaf;

/* one new leaf */
typedef struct CjNewLeaf
{
	CjSplitLeaf *from;
	char	   *name;			/* the local foreign table */
	char	   *remote;			/* its remote table */
	Oid			server;
	char	   *schema;			/* remote */
	int			remainder;
	char	   *comment;		/* of the remote table, or NULL */
} CjNewLeaf;

/*
 * the name of new class remainder of modulus of table relid:
 * "<table>_m<modulus>p<remainder>", the table's name cut to fit; *suffix
 * gets the part after the table's name
 */
extern char *cj_split_leaf_name(Oid relid, int modulus, int remainder,
								char **suffix);

/*
 * the CREATE TABLE of a helper table qualified on a node, partitioned by
 * hash on t's key's types, operator classes and collations: what
 * cj_split_class_test routes rows with
 */
extern char *cj_split_helper_ddl(CjTable *t, const char *qualified);

/* the test, on the node, of a row of leaf being in class (modulus, remainder) */
extern char *cj_split_class_test(CjTable *t, CjLeaf *leaf, const char *helper,
								 int modulus, int remainder);

/*
 * cj_split_online: each old class's rows replicated, row by row as the
 * coordinator would route them, into tables of the old names on other
 * nodes (one a new class, chosen from servers), writes to the tables
 * (relids) waiting only for the catch-up; the old tables dropped and the
 * new ones cleared with the caller's transaction.  The new leaves
 * (CjNewLeaf) for the switch.
 */
extern List *cj_split_online(List *splits, int new_modulus, List *servers,
							 List *relids);

#endif							/* COLOJOIN_CLASS_SPLIT_H */
