/*-------------------------------------------------------------------------
 *
 * options.h
 *	  Option lookup shared by the catalog readers (connection.c reads
 *	  servers and user mappings, metadata.c foreign tables and columns).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_OPTIONS_H
#define COLOJOIN_OPTIONS_H

#include "nodes/pg_list.h"

/* the value of option name in a list of DefElem, or NULL */
extern char *cj_option_value(List *options, const char *name);

#endif							/* COLOJOIN_OPTIONS_H */
