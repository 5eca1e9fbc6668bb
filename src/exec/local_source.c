/*-------------------------------------------------------------------------
 *
 * local_source.c
 *	  Rows the coordinator holds itself, sent to a node: the source side of
 *	  a broadcast of a table that is not sharded (a plain local table, a
 *	  materialized view, a foreign table of one server), read with SPI in
 *	  the statement's snapshot, or of rows a child plan of the scan
 *	  computed here (a WITH query, a subquery, VALUES, a function: the
 *	  executor keeps them in a tuplestore), written as COPY text into the
 *	  node's temporary table.
 *
 *	  It formats and sends rows; connection.c owns the libpq side of the
 *	  COPY, and the planner decided what moves.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "executor/tuptable.h"
#include "lib/stringinfo.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include "exec/local_source.h"
#include "remote/connection.h"
#include "deparse/deparse.h"

/* send COPY data once this much has gathered */
#define CJ_LOCAL_COPY_CHUNK 65536

/* one column of a COPY text row: value (freed), or NULL when NULL */
static void
append_value(StringInfo buf, int attno, char *value)
{
	if (attno > 1)
		appendStringInfoChar(buf, '\t');
	if (value == NULL)
		appendStringInfoString(buf, "\\N");
	else
	{
		cj_append_copy_value(buf, value);
		pfree(value);
	}
}

/* the end of a row, handed to libpq once a chunk gathered */
static void
end_row(StringInfo buf, CjConnection *dst, uint64 *bytes, const char *context)
{
	appendStringInfoChar(buf, '\n');
	if (buf->len >= CJ_LOCAL_COPY_CHUNK)
	{
		cj_copy_in_put(dst, buf->data, buf->len, context);
		*bytes += buf->len;
		resetStringInfo(buf);
	}
}

/* the rows still gathered, then the end of the COPY */
static void
finish_copy(StringInfo buf, CjConnection *dst, uint64 *bytes,
			const char *copy_in_sql, const char *context)
{
	if (buf->len > 0)
	{
		cj_copy_in_put(dst, buf->data, buf->len, context);
		*bytes += buf->len;
	}
	cj_copy_in_finish(dst, copy_in_sql, context);
}

/*
 * cj_copy_local_rows
 *		See local_source.h.  Values are printed in the forms the nodes'
 *		sessions read them in (colojoin sets DateStyle ISO, IntervalStyle
 *		postgres and extra_float_digits 3 there): the same settings apply
 *		here while the rows are printed, whatever the user's session says.
 */
uint64
cj_copy_local_rows(const char *select_sql, CjConnection *dst,
				   const char *copy_in_sql, const char *context)
{
	int			nestlevel;
	SPIPlanPtr	plan;
	Portal		portal;
	StringInfoData buf;
	uint64		bytes = 0;

	nestlevel = cj_pin_node_output_settings();

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	plan = SPI_prepare(select_sql, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "colojoin: could not prepare the rows to move: %s", select_sql);
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);

	cj_copy_in_start(dst, copy_in_sql, context);
	initStringInfo(&buf);
	for (;;)
	{
		uint64		i;

		SPI_cursor_fetch(portal, true, 1000);
		if (SPI_processed == 0)
			break;
		for (i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			int			a;

			for (a = 1; a <= desc->natts; a++)
				append_value(&buf, a, SPI_getvalue(tup, desc, a));
			end_row(&buf, dst, &bytes, context);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	finish_copy(&buf, dst, &bytes, copy_in_sql, context);
	SPI_cursor_close(portal);
	SPI_finish();
	AtEOXact_GUC(true, nestlevel);
	return bytes;
}

/*
 * cj_copy_stored_rows
 *		See local_source.h.  Printed under the nodes' sessions' settings, as
 *		cj_copy_local_rows prints a table's rows.
 */
uint64
cj_copy_stored_rows(CjStoredRows *rows, CjConnection *dst,
					const char *copy_in_sql, const char *context)
{
	TupleTableSlot *slot = rows->slot;
	TupleDesc	desc = slot->tts_tupleDescriptor;
	FmgrInfo   *outfuncs = palloc(sizeof(FmgrInfo) * Max(desc->natts, 1));
	StringInfoData buf;
	uint64		bytes = 0;
	int			nestlevel;
	int			a;

	for (a = 0; a < desc->natts; a++)
	{
		Oid			outfunc;
		bool		varlena;

		getTypeOutputInfo(TupleDescAttr(desc, a)->atttypid, &outfunc, &varlena);
		fmgr_info(outfunc, &outfuncs[a]);
	}
	nestlevel = cj_pin_node_output_settings();
	cj_copy_in_start(dst, copy_in_sql, context);
	initStringInfo(&buf);
	tuplestore_rescan(rows->store);
	while (tuplestore_gettupleslot(rows->store, true, false, slot))
	{
		slot_getallattrs(slot);
		for (a = 0; a < desc->natts; a++)
			append_value(&buf, a + 1, slot->tts_isnull[a] ? NULL :
						 OutputFunctionCall(&outfuncs[a], slot->tts_values[a]));
		end_row(&buf, dst, &bytes, context);
	}
	ExecClearTuple(slot);
	finish_copy(&buf, dst, &bytes, copy_in_sql, context);
	AtEOXact_GUC(true, nestlevel);
	pfree(buf.data);
	pfree(outfuncs);
	return bytes;
}
