/*-------------------------------------------------------------------------
 *
 * extension.h
 *	  Whether colojoin is installed in the current database.  The library
 *	  may be loaded everywhere (shared_preload_libraries); it must change
 *	  nothing where CREATE EXTENSION colojoin has not been run.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_EXTENSION_H
#define COLOJOIN_EXTENSION_H

#define COLOJOIN_SCHEMA "colojoin"

/*
 * colojoin_is_active: true when the extension is installed in the current
 * database.  Cheap: cached, and reset by invalidation.
 */
extern bool colojoin_is_active(void);

/* ERROR unless the extension is installed: for its SQL functions */
extern void colojoin_require_active(void);

/* ask again at the next colojoin_is_active() */
extern void cj_forget_active_state(void);

extern void cj_extension_init(void);

#endif							/* COLOJOIN_EXTENSION_H */
