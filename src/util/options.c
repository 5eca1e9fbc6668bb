/*-------------------------------------------------------------------------
 *
 * options.c
 *	  Reading one option out of a foreign server's, user mapping's, foreign
 *	  table's or column's option list.  A leaf module below the catalog
 *	  readers; it validates nothing (postgres_fdw's validator did).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/defrem.h"
#include "nodes/parsenodes.h"

#include "util/options.h"

/*
 * cj_option_value
 *		The value of option name in a list of DefElem, or NULL.
 */
char *
cj_option_value(List *options, const char *name)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, name) == 0)
			return defGetString(def);
	}
	return NULL;
}
