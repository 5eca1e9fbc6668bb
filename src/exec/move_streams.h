/*-------------------------------------------------------------------------
 *
 * move_streams.h
 *	  Carrying out a scan's moves with every COPY stream at once: the
 *	  sources of all moves send side by side, and the rows of a move's
 *	  sources merge into the one COPY its destination reads.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLOJOIN_MOVE_STREAMS_H
#define COLOJOIN_MOVE_STREAMS_H

#include "lib/stringinfo.h"

#include "remote/connection.h"

/* one move: its destination's table exists; its sources fill it */
typedef struct CjMoveRun
{
	Oid			dest;
	int			dest_slot;
	CjConnection *dest_conn;	/* where the table lives (and the tasks run) */
	const char *copy_in_sql;	/* COPY <table> FROM STDIN */
	bool		binary;			/* binary COPYs: every source is a node */
	bool	   *takes;			/* routed rows: takes[class] for the classes
								 * it takes (the row's last column); NULL:
								 * every row of its sources */
	int			nclasses;		/* length of takes */
	const char *context;		/* for messages: "moving ..." */
	int			nsources;
	Oid		   *source_servers; /* InvalidOid: the coordinator's own rows */
	const char **source_sql;	/* COPY (...) TO STDOUT, or the local query */
	struct CjStoredRows **source_rows;	/* the coordinator's computed rows
										 * (local_source.h), or NULL; NULL:
										 * none */
	int		   *source_slots;	/* the connection slot a source must run on
								 * (it reads temporary tables there), or -1;
								 * NULL: -1 for all */

	/* results */
	uint64		bytes;
	uint64		rows;
	double		seconds;

	StringInfoData batch;		/* private: rows not yet handed to libpq */
} CjMoveRun;

/*
 * cj_move_streams_run: fill every run's table from its sources, all at
 * once where their destinations' connections differ.  A failure is an
 * ERROR (the transaction's abort cleans up the connections).
 */
extern void cj_move_streams_run(CjMoveRun *runs, int nruns, Oid userid);

#endif							/* COLOJOIN_MOVE_STREAMS_H */
