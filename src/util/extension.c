/*-------------------------------------------------------------------------
 *
 * extension.c
 *	  Whether CREATE EXTENSION colojoin has run in the current database
 *	  (extension.h), cached per backend.
 *
 *	  This file does not load or register anything else.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "commands/extension.h"
#include "utils/inval.h"
#include "utils/syscache.h"

#include "util/extension.h"

/* cached answer of colojoin_is_active; reset by namespace invalidations */
typedef enum
{
	CJ_ACTIVE_UNKNOWN,
	CJ_ACTIVE_YES,
	CJ_ACTIVE_NO
} CjActiveState;

static CjActiveState active_state = CJ_ACTIVE_UNKNOWN;

static void
reset_active_state(Datum arg, int cacheid, uint32 hashvalue)
{
	active_state = CJ_ACTIVE_UNKNOWN;
}

/*
 * cj_forget_active_state: ask again at the next colojoin_is_active().  DROP
 * EXTENSION leaves schema colojoin (CREATE EXTENSION did not make it a
 * member), so the namespace callback alone does not see it go: metadata.c
 * calls this when the relcache of colojoin.replicas is invalidated, which
 * dropping it does in every backend.
 */
void
cj_forget_active_state(void)
{
	active_state = CJ_ACTIVE_UNKNOWN;
}

/*
 * colojoin_is_active
 *		Whether CREATE EXTENSION colojoin has run in this database.
 *
 * The extension owns schema colojoin, so a schema lookup (a syscache probe)
 * answers cheaply; the pg_extension scan runs only when the schema exists and
 * the cached answer was reset, which happens on any change to pg_namespace.
 */
bool
colojoin_is_active(void)
{
	if (active_state == CJ_ACTIVE_UNKNOWN)
	{
		if (!IsTransactionState())
			return false;
		if (OidIsValid(get_namespace_oid(COLOJOIN_SCHEMA, true)) &&
			OidIsValid(get_extension_oid("colojoin", true)))
			active_state = CJ_ACTIVE_YES;
		else
			active_state = CJ_ACTIVE_NO;
	}
	return active_state == CJ_ACTIVE_YES;
}

void
cj_extension_init(void)
{
	CacheRegisterSyscacheCallback(NAMESPACEOID, reset_active_state, (Datum) 0);
}

/*
 * colojoin_require_active
 *		See extension.h.  The library's functions can be called from a
 *		database where the library is loaded but the extension is not.
 */
void
colojoin_require_active(void)
{
	if (!colojoin_is_active())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"colojoin\" is not installed in this database")));
}
