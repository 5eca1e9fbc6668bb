/*-------------------------------------------------------------------------
 *
 * row_writes_internal.h
 *	  What row_writes.c (the routine, the changes, the executor hooks) and
 *	  row_scans.c (the scans) share; nothing outside src/write/ uses it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_ROW_WRITES_INTERNAL_H
#define COLOJOIN_ROW_WRITES_INTERNAL_H

#include "foreign/fdwapi.h"

/* appended to fdw_private (scans) or alone in it (changes): colojoin's plan */
#define ROW_WRITES_MARK "colojoin row writes"

/* postgres_fdw's routine, whose planning the scans keep */
extern FdwRoutine *cj_rw_pg_routine;

/* a value as the nodes read it (under cj_pin_node_output_settings) */
extern char *cj_rw_value_text(Datum value, Oid typid);

/* the scan callbacks (row_scans.c) */
extern ForeignScan *cj_rw_get_plan(PlannerInfo *root, RelOptInfo *baserel,
								   Oid foreigntableid, ForeignPath *best_path,
								   List *tlist, List *scan_clauses,
								   Plan *outer_plan);
extern void cj_rw_begin_scan(ForeignScanState *node, int eflags);
extern TupleTableSlot *cj_rw_iterate_scan(ForeignScanState *node);
extern void cj_rw_rescan(ForeignScanState *node);
extern void cj_rw_end_scan(ForeignScanState *node);
extern void cj_rw_explain_scan(ForeignScanState *node, ExplainState *es);

#endif							/* COLOJOIN_ROW_WRITES_INTERNAL_H */
