/*-------------------------------------------------------------------------
 *
 * row_decode.h
 *	  Turning the column values a node sends back into datums of the
 *	  scan's tuple: binary where that is safe, text otherwise.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_ROW_DECODE_H
#define COLOJOIN_ROW_DECODE_H

#include "access/tupdesc.h"
#include "fmgr.h"
#include "libpq-fe.h"

/* how one column of a binary result becomes a datum */
typedef enum CjBinaryColumn
{
	CJ_BIN_RECEIVE,				/* the type's receive function */
	CJ_BIN_INPUT				/* binary form is the text form: input function */
} CjBinaryColumn;

typedef struct CjRowDecoder
{
	int			natts;
	Oid		   *typids;
	Oid		   *ioparams;
	int32	   *typmods;
	FmgrInfo   *infuncs;		/* every column */
	FmgrInfo   *recvfuncs;		/* CJ_BIN_RECEIVE columns */
	CjBinaryColumn *binary_how;
	bool		binary;			/* ask the nodes for binary rows */
} CjRowDecoder;

extern void cj_decoder_init(CjRowDecoder *d, TupleDesc desc);
extern bool cj_node_binary_compatible(PGconn *conn);
extern bool cj_type_travels_binary(Oid typid);
extern bool cj_decoder_accepts(const CjRowDecoder *d, const PGresult *res);
extern Datum cj_decode_value(const CjRowDecoder *d, const PGresult *res,
							 int row, int col);

#endif							/* COLOJOIN_ROW_DECODE_H */
