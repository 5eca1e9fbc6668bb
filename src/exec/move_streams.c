/*-------------------------------------------------------------------------
 *
 * move_streams.c
 *	  Carrying out a scan's moves: every COPY stream at once.  A move fills
 *	  one temporary table on one node (its destination) from the rows of
 *	  several sources (nodes, or the coordinator's own table); a scan may
 *	  have several moves.  Run one after another, each source's COPY would
 *	  wait for the one before it, and a move's sources would scan their
 *	  tables one at a time.  Here every source of every move sends at once,
 *	  on connections of its own, and the coordinator merges the rows of a
 *	  move's sources into the one COPY its destination reads (a COPY takes
 *	  rows in any order), so the nodes work side by side and the moved rows
 *	  cross the coordinator once.  Sources of several moves with the same
 *	  SQL (a broadcast's, a repartitioning's) are one stream: its rows go
 *	  to every such move, or, routed by the class in their last column, to
 *	  the one that takes that class; so a node reads its rows once.  Binary
 *	  COPY streams lose their header and trailer on the way, and each
 *	  destination gets one of each.
 *
 *	  Owns: the order the streams run in (moves whose destinations share a
 *	  connection run one after another, as a temporary table lives on its
 *	  connection; the rest at once), which connection each source stream
 *	  uses (one of its own where the connection budget has room, else it
 *	  waits for another stream of its node to end and takes over that
 *	  connection), and merging rows into the destinations in bounded
 *	  memory.
 *
 *	  Deliberately does not: decide what moves (the plan does, planner.c),
 *	  pick the destination's connection (executor.c: the tasks that read the
 *	  table must run on it), or talk libpq beyond waiting on sockets
 *	  (connection.c runs every command and reports every failure).  A
 *	  failure is an ERROR; the transaction's abort brings every connection
 *	  still copying back to idle.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "port/pg_bswap.h"
#include "portability/instr_time.h"
#include "storage/latch.h"
#include "utils/wait_event.h"

#include "exec/local_source.h"
#include "exec/move_streams.h"
#include "operations/progress.h"
#include "remote/connection.h"
#include "remote/row_decode.h"

/* rows gathered for a destination before they are handed to libpq */
#define CJ_MOVE_BATCH_BYTES		(64 * 1024)
/* rows taken from one source before the others get a turn */
#define CJ_MOVE_TURN_ROWS		1000

/*
 * Binary COPY: the signature, a flags word and a header extension length
 * before the first row, a field count of -1 after the last.  A
 * destination's COPY reads one stream made of several sources' rows: their
 * headers and trailers are taken off, and one of each is written.
 */
#define CJ_COPY_HEADER_LEN		19
static const char copy_signature[11] = "PGCOPY\n\377\r\n";

typedef struct Stream
{
	CjMoveRun  *run;			/* the first move it fills (for messages) */
	CjMoveRun **targets;		/* every move it fills: a broadcast's rows */
	int			ntargets;		/* go once from the node to all of them */
	Oid			serverid;
	const char *sql;			/* COPY ... TO STDOUT */
	CjConnection *conn;			/* while it runs */
	int			slot;			/* conn's slot */
	int			fixed_slot;		/* the slot it must run on, or -1 */
	bool		readable;		/* its socket said so */
	bool		more;			/* rows wait in libpq's buffer */
	bool		done;
	/* binary COPY: its header, read before the first row */
	int			header_have;	/* bytes of header[] read */
	int			header_skip;	/* header extension bytes still to skip */
	bool		header_done;
	char		header[CJ_COPY_HEADER_LEN];
} Stream;

/*
 * source_connection
 *		A connection to serverid for a stream, at slot *from or after it
 *		(never avoid_slot, the destination's connection there), moving *from
 *		past it so that the node's next stream gets another: the first of
 *		the node as always (connection.c's rules for a scan's first
 *		connection), the others only when the budget has room now, else
 *		NULL and the stream waits for another stream of its node to end.
 */
static CjConnection *
source_connection(Oid serverid, Oid userid, bool first_of_node, int *from,
				  int avoid_slot)
{
	int			slot = cj_first_free_slot(serverid, userid, *from);
	CjConnection *conn;

	if (slot == avoid_slot)
		slot = cj_first_free_slot(serverid, userid, slot + 1);
	if (first_of_node)
		conn = cj_get_connection(serverid, userid, slot);
	else
		conn = cj_get_connection_optional(serverid, userid, slot);
	if (conn != NULL)
		*from = slot + 1;
	return conn;
}

/* the binary header a destination's COPY reads first */
static void
put_binary_header(CjMoveRun *run)
{
	uint32		zero = 0;

	appendBinaryStringInfo(&run->batch, copy_signature, sizeof(copy_signature));
	appendBinaryStringInfo(&run->batch, (char *) &zero, 4);	/* flags */
	appendBinaryStringInfo(&run->batch, (char *) &zero, 4);	/* no extension */
}

/*
 * binary_row_data
 *		Of a message of a binary source, the bytes that are rows: past the
 *		header (which the first messages carry) and not the trailer.  A
 *		source that does not send PostgreSQL's signature is an error.
 */
static void
binary_row_data(Stream *s, const char **data, int *len)
{
	while (!s->header_done && *len > 0)
	{
		if (s->header_have < CJ_COPY_HEADER_LEN)
		{
			int			n = Min(*len, CJ_COPY_HEADER_LEN - s->header_have);

			memcpy(s->header + s->header_have, *data, n);
			s->header_have += n;
			*data += n;
			*len -= n;
			if (s->header_have < CJ_COPY_HEADER_LEN)
				return;
			if (memcmp(s->header, copy_signature, sizeof(copy_signature)) != 0)
				ereport(ERROR,
						(errcode(ERRCODE_PROTOCOL_VIOLATION),
						 errmsg("node sent no binary COPY header while %s",
								s->run->context),
						 errhint("Set colojoin.binary_moves to off for nodes that do not send PostgreSQL's binary COPY format.")));
			{
				uint32		ext;

				memcpy(&ext, s->header + 15, 4);
				s->header_skip = (int) pg_ntoh32(ext);
			}
		}
		else
		{
			int			n = Min(*len, s->header_skip);

			s->header_skip -= n;
			*data += n;
			*len -= n;
		}
		if (s->header_have == CJ_COPY_HEADER_LEN && s->header_skip == 0)
			s->header_done = true;
	}

	/* the trailer: a field count of -1 (a row's is never negative) */
	if (*len == 2 && (unsigned char) (*data)[0] == 0xff &&
		(unsigned char) (*data)[1] == 0xff)
		*len = 0;
}

/*
 * row_class
 *		The class of a routed row: its last column (colojoin_class, never
 *		NULL), in text or binary.  A row that does not end in one is an
 *		error: routing it anywhere would be a guess.
 */
static int
row_class(Stream *s, const char *data, int len)
{
	long		cls = -1;

	if (s->run->binary)
	{
		int16		nfields;
		int32		flen = -1;
		int			pos = 2;
		int			f;

		if (len >= 2)
		{
			memcpy(&nfields, data, 2);
			nfields = (int16) pg_ntoh16(nfields);
			for (f = 0; f < nfields && pos + 4 <= len; f++)
			{
				memcpy(&flen, data + pos, 4);
				flen = (int32) pg_ntoh32(flen);
				pos += 4;
				if (f < nfields - 1 && flen > 0)
					pos += flen;
			}
			if (f == nfields && flen == 4 && pos + 4 <= len)
			{
				uint32		v;

				memcpy(&v, data + pos, 4);
				cls = (int32) pg_ntoh32(v);
			}
		}
	}
	else
	{
		const char *end = data + len;
		const char *p;

		/* "...\t<class>\n" (or the class alone when nothing else moves) */
		if (end > data && end[-1] == '\n')
			end--;
		for (p = end; p > data && p[-1] != '\t'; p--)
			;
		if (p < end)
		{
			char	   *stop;
			char		digits[16];
			int			n = Min((int) (end - p), (int) sizeof(digits) - 1);

			memcpy(digits, p, n);
			digits[n] = '\0';
			cls = strtol(digits, &stop, 10);
			if (*stop != '\0')
				cls = -1;
		}
	}
	if (cls < 0 || cls > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("a row moved by colojoin has no class while %s", s->run->context)));
	return (int) cls;
}

/* hand a destination the rows gathered for it */
static void
flush_batch(CjMoveRun *run)
{
	if (run->batch.len == 0)
		return;
	cj_copy_in_put(run->dest_conn, run->batch.data, run->batch.len,
				   run->context);
	resetStringInfo(&run->batch);
}

/* what one turn of a stream found */
typedef enum TurnResult
{
	TURN_WAIT,					/* nothing more has arrived */
	TURN_MORE,					/* more rows are already here */
	TURN_ENDED					/* the stream's COPY has ended */
} TurnResult;

/*
 * take_rows
 *		The rows that arrived on s, up to a turn's worth, into its move's
 *		destination; consume: read the socket first (it was readable).
 *		A turn that stops at its limit leaves rows in libpq's buffer, where
 *		no socket event will announce them: TURN_MORE says come back.
 */
static TurnResult
take_rows(Stream *s, bool consume)
{
	CjMoveRun  *run = s->run;
	int			taken = 0;

	if (consume)
		cj_conn_consume(s->conn, run->context);
	while (taken < CJ_MOVE_TURN_ROWS)
	{
		char	   *buf;
		int			n = cj_copy_out_next(s->conn, s->sql, &buf, run->context);
		const char *data = buf;
		int			len = n;
		int			t;

		if (n == 0)
			return TURN_WAIT;
		if (n < 0)
			return TURN_ENDED;
		if (run->binary)
			binary_row_data(s, &data, &len);
		if (len > 0)
		{
			int			cls = run->takes ? row_class(s, data, len) : -1;

			for (t = 0; t < s->ntargets; t++)
			{
				CjMoveRun  *target = s->targets[t];

				if (cls >= 0 && (cls >= target->nclasses || !target->takes[cls]))
					continue;
				target->bytes += n;
				appendBinaryStringInfo(&target->batch, data, len);
				if (target->batch.len >= CJ_MOVE_BATCH_BYTES)
					flush_batch(target);
			}
		}
		PQfreemem(buf);
		taken++;
	}
	return TURN_MORE;
}

/* whether s fills run */
static bool
stream_fills(Stream *s, CjMoveRun *run)
{
	int			t;

	for (t = 0; t < s->ntargets; t++)
		if (s->targets[t] == run)
			return true;
	return false;
}

/*
 * check_binary_nodes
 *		A binary move needs nodes that write dates and times as this server
 *		reads them (row_decode.c): a node built without integer datetimes
 *		is an error, not a wrong value.
 */
static void
check_binary_nodes(CjMoveRun *run, Stream *streams, int nstreams)
{
	int			i;

	for (i = -1; i < nstreams; i++)
	{
		CjConnection *conn = i < 0 ? run->dest_conn : streams[i].conn;

		if (i >= 0 && (conn == NULL || !stream_fills(&streams[i], run)))
			continue;
		if (!cj_node_binary_compatible(cj_conn_pgconn(conn)))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot move rows in binary while %s", run->context),
					 errdetail("A node of the move was built without integer datetimes."),
					 errhint("Set colojoin.binary_moves to off.")));
	}
}

/*
 * run_wave
 *		Every stream of these moves at once (their destinations' connections
 *		are all different).  The destinations' COPYs start only once every
 *		source connection has its remote transaction, as a new connection
 *		to a node may need the snapshot of another connection there.
 */
static void
run_wave(CjMoveRun **runs, int nruns, Oid userid)
{
	Stream	   *streams;
	int			nstreams = 0;
	int			nrunning = 0;
	int			i,
				j;

	for (i = 0; i < nruns; i++)
		nstreams += runs[i]->nsources;
	streams = palloc0(sizeof(Stream) * Max(nstreams, 1));
	nstreams = 0;
	for (i = 0; i < nruns; i++)
	{
		CjMoveRun  *run = runs[i];

		/* the coordinator's own rows first, through COPYs of their own */
		for (j = 0; j < run->nsources; j++)
		{
			if (OidIsValid(run->source_servers[j]))
				continue;
			if (run->source_rows != NULL && run->source_rows[j] != NULL)
				run->bytes += cj_copy_stored_rows(run->source_rows[j], run->dest_conn,
												  run->copy_in_sql, run->context);
			else
				run->bytes += cj_copy_local_rows(run->source_sql[j], run->dest_conn,
												 run->copy_in_sql, run->context);
			run->rows += cj_copy_last_rows();
		}
		for (j = 0; j < run->nsources; j++)
		{
			Stream	   *s = NULL;
			int			k;

			if (!OidIsValid(run->source_servers[j]))
				continue;

			/*
			 * A broadcast reads the same rows of a node for every
			 * destination: one COPY of them feeds them all.
			 */
			for (k = 0; k < nstreams && s == NULL; k++)
				if (streams[k].serverid == run->source_servers[j] &&
					strcmp(streams[k].sql, run->source_sql[j]) == 0)
					s = &streams[k];
			if (s == NULL)
			{
				s = &streams[nstreams++];
				s->run = run;
				s->serverid = run->source_servers[j];
				s->sql = run->source_sql[j];
				s->fixed_slot = run->source_slots ? run->source_slots[j] : -1;
				s->targets = palloc(sizeof(CjMoveRun *) * nruns);
			}
			s->targets[s->ntargets++] = run;
		}
	}

	/*
	 * Connections (and remote transactions) for as many streams as may:
	 * first those reading temporary tables on the connection holding them.
	 */
	for (i = 0; i < nstreams; i++)
	{
		Stream	   *s = &streams[i];
		bool		taken = false;

		if (s->fixed_slot < 0)
			continue;
		s->slot = s->fixed_slot;

		/*
		 * Two stages' sources on one connection wait for each other (their
		 * moves go to the same destinations, so the waves of
		 * cj_move_streams_run keep them apart already; this holds even if
		 * they did not).
		 */
		for (j = 0; j < i; j++)
			if (streams[j].conn != NULL && streams[j].serverid == s->serverid &&
				streams[j].slot == s->slot)
				taken = true;
		if (!taken)
			s->conn = cj_get_connection(s->serverid, userid, s->fixed_slot);
	}
	for (i = 0; i < nstreams; i++)
	{
		Stream	   *s = &streams[i];
		int			avoid = -1;
		int			from = 0;
		bool		first = true;

		if (s->fixed_slot >= 0)
			continue;
		for (j = 0; j < nruns; j++)
			if (runs[j]->dest == s->serverid)
				avoid = runs[j]->dest_slot;
		for (j = 0; j < nstreams; j++)
			if (j != i && streams[j].serverid == s->serverid && streams[j].conn != NULL)
			{
				first = false;
				from = Max(from, streams[j].slot + 1);
			}
		s->conn = source_connection(s->serverid, userid, first, &from, avoid);
		s->slot = from - 1;
	}
	for (i = 0; i < nruns; i++)
	{
		if (runs[i]->binary)
			check_binary_nodes(runs[i], streams, nstreams);
		cj_copy_in_start(runs[i]->dest_conn, runs[i]->copy_in_sql,
						 runs[i]->context);
		initStringInfo(&runs[i]->batch);
		if (runs[i]->binary)
			put_binary_header(runs[i]);
	}
	for (i = 0; i < nstreams; i++)
	{
		if (streams[i].conn == NULL)
			continue;
		cj_copy_out_start(streams[i].conn, streams[i].sql, streams[i].run->context);
		/* starting may have read rows already: look before waiting */
		streams[i].more = true;
		nrunning++;
	}

	while (nrunning > 0)
	{
		WaitEventSet *set;
		WaitEvent  *events;
		int			nevents;
		bool		more = false;

		for (i = 0; i < nstreams; i++)
			if (streams[i].more)
				more = true;

		/* with rows already buffered, only look whether sockets have more */
		set = CreateWaitEventSet(CurrentMemoryContext, nrunning + 2);
		events = palloc(sizeof(WaitEvent) * (nrunning + 2));
		AddWaitEventToSet(set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
		AddWaitEventToSet(set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
		for (i = 0; i < nstreams; i++)
			if (streams[i].conn != NULL && !streams[i].done)
				AddWaitEventToSet(set, WL_SOCKET_READABLE,
								  PQsocket(cj_conn_pgconn(streams[i].conn)),
								  NULL, &streams[i]);
		nevents = WaitEventSetWait(set, more ? 0L : -1L, events, nrunning + 2,
								   PG_WAIT_EXTENSION);
		FreeWaitEventSet(set);
		for (i = 0; i < nevents; i++)
		{
			if (events[i].events & WL_LATCH_SET)
				ResetLatch(MyLatch);
			else if (events[i].user_data != NULL &&
					 (events[i].events & WL_SOCKET_READABLE))
				((Stream *) events[i].user_data)->readable = true;
		}
		pfree(events);
		CHECK_FOR_INTERRUPTS();

		for (i = 0; i < nstreams; i++)
		{
			Stream	   *s = &streams[i];
			TurnResult	r;
			int			k;

			if (s->conn == NULL || s->done || !(s->readable || s->more))
				continue;
			r = take_rows(s, s->readable);
			s->readable = false;
			s->more = (r == TURN_MORE);
			if (r != TURN_ENDED)
				continue;
			s->done = true;
			nrunning--;

			/* a stream of the same node waiting for a connection takes it */
			for (k = 0; k < nstreams; k++)
			{
				Stream	   *w = &streams[k];

				if (w->conn != NULL || w->serverid != s->serverid ||
					(w->fixed_slot >= 0 && w->fixed_slot != s->slot))
					continue;
				w->conn = s->conn;
				w->slot = s->slot;
				cj_copy_out_start(w->conn, w->sql, w->run->context);
				w->more = true;
				nrunning++;
				break;
			}
		}
	}

	for (i = 0; i < nruns; i++)
	{
		if (runs[i]->binary)
		{
			int16		trailer = -1;

			appendBinaryStringInfo(&runs[i]->batch, (char *) &trailer, 2);
		}
		flush_batch(runs[i]);
		cj_copy_in_finish(runs[i]->dest_conn, runs[i]->copy_in_sql,
						  runs[i]->context);
		runs[i]->rows += cj_copy_last_rows();
		pfree(runs[i]->batch.data);
	}
	pfree(streams);
}

/*
 * cj_move_streams_run
 *		See move_streams.h.  Moves whose destinations share a connection
 *		(two tables moved to one node) go in successive waves.
 */
void
cj_move_streams_run(CjMoveRun *runs, int nruns, Oid userid)
{
	bool	   *ran = palloc0(sizeof(bool) * Max(nruns, 1));
	CjMoveRun **wave = palloc(sizeof(CjMoveRun *) * Max(nruns, 1));
	int			left = nruns;

	/* colojoin.progress: the moves of this scan, one destination a unit */
	cj_progress_begin("move", InvalidOid, "moving rows between nodes", nruns);
	while (left > 0)
	{
		int			nwave = 0;
		int			i,
					j;
		instr_time	start,
					end;

		for (i = 0; i < nruns; i++)
		{
			bool		clash = false;

			if (ran[i])
				continue;
			for (j = 0; j < nwave; j++)
				if (wave[j]->dest_conn == runs[i].dest_conn)
					clash = true;
			if (clash)
				continue;
			wave[nwave++] = &runs[i];
			ran[i] = true;
			left--;
		}
		INSTR_TIME_SET_CURRENT(start);
		run_wave(wave, nwave, userid);
		INSTR_TIME_SET_CURRENT(end);
		INSTR_TIME_SUBTRACT(end, start);
		for (j = 0; j < nwave; j++)
			wave[j]->seconds += INSTR_TIME_GET_DOUBLE(end);
		cj_progress_advance(nwave);
	}
	cj_progress_end();
	pfree(ran);
	pfree(wave);
}
