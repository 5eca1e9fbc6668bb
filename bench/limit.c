/*-------------------------------------------------------------------------
 *
 * limit.c
 *	  "The limit" of the benchmark: runs a set of per-partition queries
 *	  directly on the nodes, every one on its own connection and all at
 *	  once, and reports the wall time from the first send to the last row
 *	  received.  This is the floor a coordinator that dispatches the same
 *	  SQL to the nodes could reach; combining the tasks' results on the
 *	  coordinator is deliberately ignored (rows are read and discarded).
 *
 *	  It does not plan, combine or check anything: the task SQL comes from
 *	  bench/run.sh.
 *
 *	  usage: limit TASKFILE RUNS
 *	  TASKFILE: one task a line, "conninfo<TAB>sql".  Connections are opened
 *	  before the first run; run 0 is a warm-up that is not reported.  Prints
 *	  one line per timed run: "<milliseconds> <rows received>".
 *	  LIMIT_SINGLE_ROW=1 receives rows in libpq's single-row mode instead of
 *	  whole results (to compare the cost of that mode).
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <time.h>

#include <libpq-fe.h>

#define MAX_TASKS 1024

/* LIMIT_SINGLE_ROW=1: receive in libpq's single-row mode (for comparison) */
static int	single_row = 0;

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static void
die(const char *what, PGconn *conn)
{
	fprintf(stderr, "limit: %s: %s\n", what, conn ? PQerrorMessage(conn) : "");
	exit(1);
}

/* run every task once, all at once; returns the number of rows received */
static long
run_all(PGconn **conns, char **sqls, int ntasks)
{
	struct pollfd fds[MAX_TASKS];
	int			done[MAX_TASKS];
	int			remaining = ntasks;
	long		rows = 0;
	int			i;

	for (i = 0; i < ntasks; i++)
	{
		if (!PQsendQuery(conns[i], sqls[i]))
			die("send", conns[i]);
		if (single_row && !PQsetSingleRowMode(conns[i]))
			die("single-row mode", conns[i]);
		done[i] = 0;
	}
	while (remaining > 0)
	{
		int			n = 0;
		int			map[MAX_TASKS];

		for (i = 0; i < ntasks; i++)
		{
			if (done[i])
				continue;
			fds[n].fd = PQsocket(conns[i]);
			fds[n].events = POLLIN;
			fds[n].revents = 0;
			map[n++] = i;
		}
		if (poll(fds, n, -1) < 0)
			die("poll", NULL);
		for (i = 0; i < n; i++)
		{
			PGconn	   *c = conns[map[i]];

			if (!(fds[i].revents & (POLLIN | POLLERR | POLLHUP)))
				continue;
			if (!PQconsumeInput(c))
				die("receive", c);
			while (!PQisBusy(c))
			{
				PGresult   *res = PQgetResult(c);

				if (res == NULL)
				{
					done[map[i]] = 1;
					remaining--;
					break;
				}
				if (PQresultStatus(res) == PGRES_TUPLES_OK ||
					PQresultStatus(res) == PGRES_SINGLE_TUPLE)
					rows += PQntuples(res);
				else if (PQresultStatus(res) != PGRES_COMMAND_OK)
				{
					fprintf(stderr, "limit: task %d failed: %s", map[i],
							PQresultErrorMessage(res));
					exit(1);
				}
				PQclear(res);
			}
		}
	}
	return rows;
}

int
main(int argc, char **argv)
{
	FILE	   *f;
	PGconn	   *conns[MAX_TASKS];
	char	   *sqls[MAX_TASKS];
	int			ntasks = 0;
	int			runs;
	int			r;
	char	   *line = NULL;
	size_t		cap = 0;
	ssize_t		len;

	if (argc != 3)
	{
		fprintf(stderr, "usage: limit TASKFILE RUNS\n");
		return 2;
	}
	runs = atoi(argv[2]);
	single_row = getenv("LIMIT_SINGLE_ROW") && atoi(getenv("LIMIT_SINGLE_ROW")) == 1;
	if ((f = fopen(argv[1], "r")) == NULL)
	{
		perror(argv[1]);
		return 1;
	}
	while ((len = getline(&line, &cap, f)) > 0)
	{
		char	   *tab = strchr(line, '\t');

		if (line[len - 1] == '\n')
			line[len - 1] = '\0';
		if (tab == NULL || line[0] == '\0')
			continue;
		if (ntasks == MAX_TASKS)
			die("too many tasks", NULL);
		*tab = '\0';
		conns[ntasks] = PQconnectdb(line);
		if (PQstatus(conns[ntasks]) != CONNECTION_OK)
			die("connect", conns[ntasks]);
		sqls[ntasks] = strdup(tab + 1);
		ntasks++;
	}
	fclose(f);
	if (ntasks == 0)
		die("no tasks", NULL);

	for (r = 0; r <= runs; r++)
	{
		double		t0 = now_ms();
		long		rows = run_all(conns, sqls, ntasks);
		double		t1 = now_ms();

		if (r > 0)
			printf("%.3f %ld\n", t1 - t0, rows);
	}
	for (r = 0; r < ntasks; r++)
		PQfinish(conns[r]);
	return 0;
}
