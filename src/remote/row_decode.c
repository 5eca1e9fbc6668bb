/*-------------------------------------------------------------------------
 *
 * row_decode.c
 *	  Turns the column values a node sends back into datums of the scan's
 *	  tuple.
 *
 *	  Text is always correct, but parsing it (numeric_in, date_in, ...) is
 *	  most of what the coordinator does for a join returning many rows.  So
 *	  a scan asks for binary rows when every column is of a built-in type
 *	  whose binary form is exact and means the same on every node and under
 *	  any setting: numbers, dates and times, booleans, bytea, uuid, network
 *	  addresses, bit strings.  Types whose binary form is their text (text,
 *	  varchar, char, name, json) go through their input function, as with
 *	  text; that keeps the connection's client encoding, which is the
 *	  coordinator's database encoding, the only encoding involved.
 *	  Arrays, records, jsonb, enums, domains and anything user-defined
 *	  make the scan use text: their binary forms carry type OIDs or are
 *	  converted from the session's client encoding.
 *
 *	  A node built without integer datetimes (possible before PostgreSQL
 *	  10) is always read in text.
 *
 *	  A foreign table may declare a column with another type than the
 *	  remote one (postgres_fdw converts through text).  The binary rows of
 *	  such a column cannot be read as the local type, so every binary
 *	  result is checked against the types the node says it sent; the
 *	  executor re-runs a task in text when that fails, before any of its
 *	  rows was returned.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "utils/lsyscache.h"

#include "remote/row_decode.h"
#include "util/settings.h"

/* types whose binary form equals their text form */
static bool
binary_is_text(Oid typid)
{
	switch (typid)
	{
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case NAMEOID:
		case JSONOID:
			return true;
		default:
			return false;
	}
}

/*
 * built-in types whose receive function reads an exact value, without
 * type OIDs of the sending server or the session's encoding or settings
 */
static bool
binary_is_exact(Oid typid)
{
	switch (typid)
	{
		case BOOLOID:
		case CHAROID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
		case MONEYOID:
		case DATEOID:
		case TIMEOID:
		case TIMETZOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case INTERVALOID:
		case BYTEAOID:
		case UUIDOID:
		case INETOID:
		case CIDROID:
		case MACADDROID:
		case MACADDR8OID:
		case BITOID:
		case VARBITOID:
			return true;
		default:
			return false;
	}
}

/*
 * cj_type_travels_binary
 *		Whether values of typid mean the same in binary on every node: what
 *		a binary result or a binary COPY between nodes may carry.
 */
bool
cj_type_travels_binary(Oid typid)
{
	return binary_is_text(typid) || binary_is_exact(typid);
}

/*
 * cj_decoder_init
 *		Prepare to decode rows of the shape desc: input functions for text
 *		rows, and, when colojoin.binary_results allows and every column's
 *		type has a safe binary form, receive functions for binary rows.
 */
void
cj_decoder_init(CjRowDecoder *d, TupleDesc desc)
{
	int			n = Max(desc->natts, 1);
	int			i;

	d->natts = desc->natts;
	d->typids = palloc0(sizeof(Oid) * n);
	d->ioparams = palloc0(sizeof(Oid) * n);
	d->typmods = palloc0(sizeof(int32) * n);
	d->infuncs = palloc0(sizeof(FmgrInfo) * n);
	d->recvfuncs = palloc0(sizeof(FmgrInfo) * n);
	d->binary_how = palloc0(sizeof(CjBinaryColumn) * n);
	d->binary = colojoin_binary_results && desc->natts > 0;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Oid			func;

		d->typids[i] = att->atttypid;
		d->typmods[i] = att->atttypmod;
		getTypeInputInfo(att->atttypid, &func, &d->ioparams[i]);
		fmgr_info(func, &d->infuncs[i]);

		if (binary_is_text(att->atttypid))
			d->binary_how[i] = CJ_BIN_INPUT;
		else if (binary_is_exact(att->atttypid))
		{
			Oid			ioparam;

			d->binary_how[i] = CJ_BIN_RECEIVE;
			getTypeBinaryInputInfo(att->atttypid, &func, &ioparam);
			fmgr_info(func, &d->recvfuncs[i]);
		}
		else
			d->binary = false;
	}
}

/*
 * cj_node_binary_compatible
 *		Whether conn's node writes the binary forms this server reads.  Only
 *		date and time types ever differed: a server built without integer
 *		datetimes (possible before PostgreSQL 10) sends them as floats.
 */
bool
cj_node_binary_compatible(PGconn *conn)
{
	const char *integer_datetimes = PQparameterStatus(conn, "integer_datetimes");

	return integer_datetimes != NULL && strcmp(integer_datetimes, "on") == 0;
}

/*
 * cj_decoder_accepts
 *		Whether the rows of res can be decoded: always for text; for binary
 *		rows, when the node sent each column with the type this scan reads
 *		(or, for a column read through its input function, any type whose
 *		binary form is text).
 */
bool
cj_decoder_accepts(const CjRowDecoder *d, const PGresult *res)
{
	int			i;

	if (!PQbinaryTuples(res))
		return true;
	if (!d->binary || PQnfields(res) != d->natts)
		return false;
	for (i = 0; i < d->natts; i++)
	{
		Oid			sent = PQftype(res, i);

		if (d->binary_how[i] == CJ_BIN_INPUT ? !binary_is_text(sent)
			: sent != d->typids[i])
			return false;
	}
	return true;
}

/*
 * cj_decode_value
 *		The datum of column col of row of res, which is not NULL, in the
 *		current memory context.
 */
Datum
cj_decode_value(const CjRowDecoder *d, const PGresult *res, int row, int col)
{
	char	   *value = PQgetvalue(res, row, col);
	StringInfoData buf;

	if (!PQbinaryTuples(res) || d->binary_how[col] == CJ_BIN_INPUT)
		return InputFunctionCall((FmgrInfo *) &d->infuncs[col], value,
								 d->ioparams[col], d->typmods[col]);

	/* libpq's value is read only and NUL-terminated, as receive expects */
	buf.data = value;
	buf.len = PQgetlength(res, row, col);
	buf.maxlen = buf.len + 1;
	buf.cursor = 0;
	return ReceiveFunctionCall((FmgrInfo *) &d->recvfuncs[col], &buf,
							   d->ioparams[col], d->typmods[col]);
}
