/*-------------------------------------------------------------------------
 *
 * conn_open.c
 *	  Opening a connection to a node from the foreign server's and the user
 *	  mapping's options, with postgres_fdw's password rule and the session
 *	  settings remote SQL relies on, in the connection budget; telling why
 *	  one could not be opened (busy: waited for, bounded by
 *	  colojoin.connection_wait_timeout; refused: the role's error;
 *	  unreachable: the only failure failover sees).
 *
 *	  It does not cache connections (connection.c) nor begin remote
 *	  transactions (remote_xact.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "common/hashfn.h"
#include "common/pg_prng.h"
#include "foreign/foreign.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
#include "metadata/node_identity.h"
#include "remote/conn_budget.h"
#include "remote/connection.h"
#include "remote/deadlock.h"
#include "remote/node_health.h"
#include "remote/setup_cache.h"
#include "remote/twophase.h"
#include "util/options.h"
#include "util/settings.h"
#include "remote/connection_internal.h"

/*
 * is_libpq_keyword
 *		Whether an option name may be passed to libpq: a keyword libpq knows,
 *		not a debug option, and not one colojoin sets itself.  This is what
 *		drops postgres_fdw's own options (use_remote_estimate, fetch_size,
 *		...) from the connection string.
 */
static bool
is_libpq_keyword(const char *name)
{
	ListCell   *lc;

	if (cj_libpq_keywords == NIL)
	{
		PQconninfoOption *defs = PQconndefaults();
		PQconninfoOption *d;
		MemoryContext old;

		if (defs == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
		old = MemoryContextSwitchTo(TopMemoryContext);
		for (d = defs; d->keyword != NULL; d++)
		{
			if (strchr(d->dispchar, 'D') != NULL ||
				strcmp(d->keyword, "client_encoding") == 0 ||
				strcmp(d->keyword, "fallback_application_name") == 0 ||
				strcmp(d->keyword, "replication") == 0)
				continue;
			cj_libpq_keywords = lappend(cj_libpq_keywords, pstrdup(d->keyword));
		}
		MemoryContextSwitchTo(old);
		PQconninfoFree(defs);
	}
	foreach(lc, cj_libpq_keywords)
	{
		if (strcmp((char *) lfirst(lc), name) == 0)
			return true;
	}
	return false;
}

/*
 * A server option that goes into the connection: a libpq keyword, and no
 * credential (those come from the user mapping only).
 */
static bool
server_connection_option(const char *name)
{
	return is_libpq_keyword(name) &&
		strcmp(name, "user") != 0 && strcmp(name, "password") != 0;
}

/* value quoted for a libpq connection string */
static void
append_conninfo_value(StringInfo buf, const char *value)
{
	const char *p;

	appendStringInfoChar(buf, '\'');
	for (p = value; *p; p++)
	{
		if (*p == '\'' || *p == '\\')
			appendStringInfoChar(buf, '\\');
		appendStringInfoChar(buf, *p);
	}
	appendStringInfoChar(buf, '\'');
}

/*
 * cj_server_conninfo
 *		See connection.h: the connection string of the server's and user
 *		mapping's libpq options, credentials from the mapping only, as a
 *		node needs it to reach the server's node itself.
 */
char *
cj_server_conninfo(Oid serverid, Oid userid)
{
	ForeignServer *server = GetForeignServer(serverid);
	UserMapping *um = cj_lookup_user_mapping(userid, server);
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, server->options)
	{
		DefElem    *d = (DefElem *) lfirst(lc);

		if (!server_connection_option(d->defname))
			continue;
		appendStringInfo(&buf, "%s%s=", buf.len > 0 ? " " : "", d->defname);
		append_conninfo_value(&buf, defGetString(d));
	}
	foreach(lc, um->options)
	{
		DefElem    *d = (DefElem *) lfirst(lc);

		if (!is_libpq_keyword(d->defname))
			continue;
		appendStringInfo(&buf, "%s%s=", buf.len > 0 ? " " : "", d->defname);
		append_conninfo_value(&buf, defGetString(d));
	}
	return buf.data;
}

/*
 * cj_application_name_prefix
 *		"colojoin:<system identifier>": what every connection this
 *		coordinator's sessions open to a node calls itself, before ":<pid>".
 */
const char *
cj_application_name_prefix(void)
{
	static char prefix[64];

	if (prefix[0] == '\0')
		snprintf(prefix, sizeof(prefix), "colojoin:" UINT64_FORMAT,
				 GetSystemIdentifier());
	return prefix;
}

/* the application_name of this session's connections to the nodes */
const char *
cj_application_name(void)
{
	static char name[NAMEDATALEN];
	static int	for_pid = 0;

	if (for_pid != MyProcPid)
	{
		snprintf(name, sizeof(name), "%s:%d", cj_application_name_prefix(),
				 MyProcPid);
		for_pid = MyProcPid;
	}
	return name;
}

/*
 * cj_server_address
 *		"host=... port=..." of a server for messages, with libpq's defaults
 *		filled in where the options are silent.
 */
char *
cj_server_address(Oid serverid)
{
	ForeignServer *server = GetForeignServer(serverid);
	char	   *host = cj_option_value(server->options, "host");
	char	   *hostaddr = cj_option_value(server->options, "hostaddr");
	char	   *port = cj_option_value(server->options, "port");

	if (host == NULL && hostaddr == NULL)
	{
		host = getenv("PGHOST");
		if (host == NULL || host[0] == '\0')
			host = DEFAULT_PGSOCKET_DIR;
	}
	if (port == NULL)
	{
		port = getenv("PGPORT");
		if (port == NULL || port[0] == '\0')
			port = DEF_PGPORT_STR;
	}
	if (host == NULL)
		return psprintf("hostaddr=%s port=%s", hostaddr, port);
	return psprintf("host=%s port=%s", host, port);
}

/*
 * cj_lookup_user_mapping
 *		The user mapping serving userid on the server (the user's own, else
 *		PUBLIC's), with an error that names both when there is none.
 */
UserMapping *
cj_lookup_user_mapping(Oid userid, ForeignServer *server)
{
	if (!SearchSysCacheExists2(USERMAPPINGUSERSERVER,
							   ObjectIdGetDatum(userid),
							   ObjectIdGetDatum(server->serverid)) &&
		!SearchSysCacheExists2(USERMAPPINGUSERSERVER,
							   ObjectIdGetDatum(InvalidOid),
							   ObjectIdGetDatum(server->serverid)))
	{
		char	   *username = GetUserNameFromId(userid, true);

		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("user mapping not found for user \"%s\" on node \"%s\"",
						username ? username : "?", server->servername),
				 errhint("Create one with CREATE USER MAPPING FOR %s SERVER %s OPTIONS (user '...', password '...').",
						 username ? quote_identifier(username) : "CURRENT_USER",
						 quote_identifier(server->servername))));
	}
	return GetUserMapping(userid, server->serverid);
}

static bool
mapping_requires_password(UserMapping *um)
{
	ListCell   *lc;

	foreach(lc, um->options)
	{
		DefElem    *d = (DefElem *) lfirst(lc);

		if (strcmp(d->defname, "password_required") == 0)
			return defGetBoolean(d);
	}
	return true;
}

/*
 * notice_receiver
 *		Remote NOTICEs and WARNINGs ("schema ... already exists, skipping")
 *		would otherwise go to the coordinator's stderr through libpq's
 *		default; they go to the server log at DEBUG1 instead.  Never throws
 *		(it runs inside libpq).
 */
static void
notice_receiver(void *arg, const PGresult *res)
{
	CjConnection *c = (CjConnection *) arg;
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

	if (msg != NULL)
		elog(DEBUG1, "colojoin: node \"%s\": %s", NameStr(c->node_name), msg);
}

/*
 * classify_connect_error
 *		Why libpq could not connect, from its error message.  libpq keeps an
 *		error the server sent during start-up only as text; under
 *		PQERRORS_VERBOSE its line reads "SEVERITY:  SQLSTATE: message" and
 *		a "LOCATION:  " line follows.  libpq tries a host's addresses (and
 *		hosts) in turn, each attempt adding its lines: the last code found
 *		is the one that counts.  The message is given back without codes and
 *		LOCATION lines.
 */
static void
classify_connect_error(const char *msg, CjConnectError *err)
{
	StringInfoData clean;
	const char *line = msg;

	initStringInfo(&clean);
	err->sqlstate[0] = '\0';
	while (*line != '\0')
	{
		const char *eol = strchr(line, '\n');
		int			len = eol ? eol - line : strlen(line);
		int			i;
		int			code_at = -1;

		if (strncmp(line, "LOCATION:  ", 11) != 0)
		{
			/* ":  " then five code characters then ": " */
			for (i = 0; i + 10 <= len; i++)
			{
				int			j;

				if (strncmp(line + i, ":  ", 3) != 0 ||
					strncmp(line + i + 8, ": ", 2) != 0)
					continue;
				for (j = 3; j < 8; j++)
					if (!((line[i + j] >= '0' && line[i + j] <= '9') ||
						  (line[i + j] >= 'A' && line[i + j] <= 'Z')))
						break;
				if (j == 8)
				{
					code_at = i + 3;
					break;
				}
			}
			if (code_at >= 0)
			{
				memcpy(err->sqlstate, line + code_at, 5);
				err->sqlstate[5] = '\0';
				appendBinaryStringInfo(&clean, line, code_at);
				appendBinaryStringInfo(&clean, line + code_at + 7,
									   len - code_at - 7);
			}
			else
				appendBinaryStringInfo(&clean, line, len);
			appendStringInfoChar(&clean, '\n');
		}
		line += len;
		if (*line == '\n')
			line++;
	}
	while (clean.len > 0 && (clean.data[clean.len - 1] == '\n' ||
							 clean.data[clean.len - 1] == ' '))
		clean.data[--clean.len] = '\0';
	if (clean.len > 0)
		err->message = clean.data;
	else
	{
		pfree(clean.data);
		err->message = pstrdup("connection failed without a message");
	}

	if (err->sqlstate[0] == '\0')
		err->kind = CJ_CONNECT_UNREACHABLE;
	else if (strcmp(err->sqlstate, "53300") == 0 ||
			 strcmp(err->sqlstate, "57P03") == 0)
		err->kind = CJ_CONNECT_BUSY;
	else
		err->kind = CJ_CONNECT_REFUSED;
}

/*
 * libpq_connect
 *		One attempt: start a libpq connection with these options and poll it
 *		until it is up or failed, interruptibly (cancel, statement_timeout).
 *		On failure, NULL with *err filled in.
 */
static PGconn *
libpq_connect(const char *const *keywords, const char *const *values,
			  const char *servername, CjConnectError *err)
{
	PGconn	   *volatile conn;
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;

	conn = PQconnectStartParams(keywords, values, false);
	if (conn == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory while connecting to node \"%s\"",
						servername)));
	/* so that the server's SQLSTATE reaches the message (above) */
	PQsetErrorVerbosity(conn, PQERRORS_VERBOSE);

	PG_TRY();
	{
		if (PQstatus(conn) == CONNECTION_BAD)
			st = PGRES_POLLING_FAILED;
		while (st != PGRES_POLLING_OK && st != PGRES_POLLING_FAILED)
		{
			pgsocket	sock = PQsocket(conn);
			int			events;
			int			rc;

			if (sock == PGINVALID_SOCKET)
			{
				st = PGRES_POLLING_FAILED;
				break;
			}
			events = (st == PGRES_POLLING_READING) ?
				WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE;
			rc = WaitLatchOrSocket(MyLatch,
								   WL_LATCH_SET | WL_EXIT_ON_PM_DEATH | events,
								   sock, -1L, PG_WAIT_EXTENSION);
			if (rc & WL_LATCH_SET)
			{
				ResetLatch(MyLatch);
				CHECK_FOR_INTERRUPTS();
			}
			if (rc & events)
				st = PQconnectPoll(conn);
		}
	}
	PG_CATCH();
	{
		PQfinish(conn);
		PG_RE_THROW();
	}
	PG_END_TRY();

	if (st == PGRES_POLLING_OK && PQstatus(conn) == CONNECTION_OK)
	{
		/* remote errors are read field by field; messages as by default */
		PQsetErrorVerbosity(conn, PQERRORS_DEFAULT);
		return conn;
	}
	classify_connect_error(PQerrorMessage(conn), err);
	PQfinish(conn);
	return NULL;
}

/*
 * wait_for_slot
 *		libpq_connect until the node lets this session in.  A node that is
 *		full (or starting up) is asked again after a short, growing, jittered
 *		sleep on the latch, for at most colojoin.connection_wait_timeout, and
 *		only in the modes that wait; meanwhile the connection budget lets
 *		the other sessions of this coordinator see the wait, so that they
 *		close their idle connections to the node, and this one closes its
 *		own.  NULL with *err when it gives up or the failure is another.
 */
static PGconn *
wait_for_slot(CjConnection *c, ForeignServer *server,
			  const char *const *keywords, const char *const *values,
			  CjConnectMode mode, CjConnectError *err, long *waited_ms)
{
	PGconn	   *volatile conn = NULL;
	volatile bool registered = false;
	TimestampTz start = GetCurrentTimestamp();
	long		delay_ms = CJ_BUSY_FIRST_RETRY_MS;

	*waited_ms = 0;
	err->message = NULL;
	PG_TRY();
	{
		for (;;)
		{
			long		sleep_ms;
			long		secs;
			int			usecs;

			/* a long wait keeps only the last attempt's message */
			if (err->message != NULL)
			{
				pfree(err->message);
				err->message = NULL;
			}
			conn = libpq_connect(keywords, values, server->servername, err);
			if (conn != NULL || err->kind != CJ_CONNECT_BUSY)
				break;
			cj_node_note_busy(server->serverid);
			if (mode != CJ_CONNECT_WAIT && mode != CJ_CONNECT_PROBE)
				break;
			TimestampDifference(start, GetCurrentTimestamp(), &secs, &usecs);
			*waited_ms = secs * 1000 + usecs / 1000;
			/* jittered, so that sessions refused together do not ask together */
			sleep_ms = delay_ms / 2 +
				(long) (pg_prng_double(&pg_global_prng_state) * (delay_ms / 2));
			if (colojoin_connection_wait_timeout > 0)
			{
				if (*waited_ms >= colojoin_connection_wait_timeout)
					break;
				sleep_ms = Min(sleep_ms,
							   colojoin_connection_wait_timeout - *waited_ms);
			}
			if (!registered)
			{
				cj_budget_slot_wait(c->budget_token, true);
				registered = true;
			}
			cj_conn_close_idle();
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 Max(sleep_ms, 1), PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
			delay_ms = Min(delay_ms * 2, CJ_BUSY_MAX_RETRY_MS);
		}
	}
	PG_FINALLY();
	{
		if (registered)
			cj_budget_slot_wait(c->budget_token, false);
	}
	PG_END_TRY();
	if (conn != NULL && err->message != NULL)
	{
		pfree(err->message);
		err->message = NULL;
	}
	return conn;
}

/*
 * report_connect_failure
 *		ERROR for a connection the node did not let us open, by what it met:
 *		an unreachable node is a connection failure (failover and stale
 *		placements start from that code), a full one a timeout, a refusal
 *		the node's own error, which names the role: nothing about the node
 *		or its placements follows from it.
 */
static void
report_connect_failure(CjConnection *c, ForeignServer *server,
					   CjConnectError *err, long waited_ms)
{
	char	   *where = cj_server_address(server->serverid);

	if (err->kind == CJ_CONNECT_UNREACHABLE)
		ereport(ERROR,
				(errcode(ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION),
				 errmsg("could not connect to node \"%s\"", server->servername),
				 errdetail_internal("%s: %s", where, err->message)));
	if (err->kind == CJ_CONNECT_BUSY && strcmp(err->sqlstate, "57P03") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_CANNOT_CONNECT_NOW),
				 errmsg("node \"%s\" did not accept connections for %ld ms",
						server->servername, waited_ms),
				 errdetail_internal("%s: %s", where, err->message),
				 errhint("The node is starting up or shutting down; raise colojoin.connection_wait_timeout to wait longer.")));
	if (err->kind == CJ_CONNECT_BUSY)
		ereport(ERROR,
				(errcode(ERRCODE_TOO_MANY_CONNECTIONS),
				 errmsg("node \"%s\" had no free connection slot for %ld ms",
						server->servername, waited_ms),
				 errdetail_internal("%s: %s", where, err->message),
				 errhint("Raise the node's max_connections (or the CONNECTION LIMIT of the role or database there), lower colojoin.max_connections_per_node or colojoin.node_connection_budget so that this coordinator's sessions leave room for each other and for other clients, or raise colojoin.connection_wait_timeout.")));
	{
		char	   *role = GetUserNameFromId(c->key.userid, true);
		const char *s = err->sqlstate;

		ereport(ERROR,
				(errcode(MAKE_SQLSTATE(s[0], s[1], s[2], s[3], s[4])),
				 errmsg("node \"%s\" refused the connection of role \"%s\"",
						server->servername, role ? role : "?"),
				 errdetail_internal("%s: %s", where, err->message),
				 strncmp(s, "28", 2) == 0 ?
				 errhint("Check the user and password of the user mapping of role \"%s\" for server \"%s\", and the node's pg_hba.conf.",
						 role ? role : "?", server->servername) :
				 strcmp(s, "3D000") == 0 ?
				 errhint("Check the dbname option of server \"%s\".",
						 server->servername) : 0));
	}
}

/*
 * options_fingerprint
 *		A hash of the libpq options a connection is opened with: another
 *		address, database or user is another fingerprint, so what was
 *		learned over the old ones is not taken for the new.
 */
static uint32
options_fingerprint(const char **keywords, const char **values, int n)
{
	uint32		h = 0;
	int			i;

	for (i = 0; i < n; i++)
	{
		h = hash_combine(h, hash_bytes((const unsigned char *) keywords[i],
									   strlen(keywords[i])));
		h = hash_combine(h, hash_bytes((const unsigned char *) values[i],
									   strlen(values[i])));
	}
	return h;
}

/*
 * session_setup
 *		The session's settings, in the connection's first round trip, and
 *		with them what only the node can say, unless another connection
 *		said it already (setup_cache.c): which database this really is,
 *		and whether transactions this database prepared may wait there.  A
 *		fresh node backend pays for that question's catalog lookups, and a
 *		new session's first query waits for them.
 */
static void
session_setup(CjConnection *c, uint32 fingerprint)
{
	Oid			serverid = c->key.serverid;
	Oid			userid = c->key.userid;
	char		node[NAMEDATALEN + 64];
	char		role[NAMEDATALEN];
	bool		ask_identity;
	bool		ask_pending;
	CjSetupToken token = {0, 0};
	StringInfoData sql;
	PGresult   *res;
	int			want;
	bool		answered;

	ask_identity = !cj_setup_cache_identity(serverid, userid, fingerprint,
											node, sizeof(node),
											role, sizeof(role));
	ask_pending = !cj_twophase_resolved(serverid) &&
		!cj_setup_cache_no_doubt(serverid, userid, &token);

	initStringInfo(&sql);
	appendStringInfoString(&sql, CJ_SESSION_SETUP);
	if (ask_identity || ask_pending)
		appendStringInfo(&sql, "; SELECT %s%s%s",
						 ask_identity ? CJ_NODE_IDENTITY_COLUMNS : "",
						 ask_identity && ask_pending ? ", " : "",
						 ask_pending ? cj_twophase_pending_sql() : "");
	want = (ask_identity ? 2 : 0) + (ask_pending ? 1 : 0);
	res = cj_exec_sql(c, sql.data, "session setup", true);
	pfree(sql.data);

	answered = want > 0 && res != NULL && PQresultStatus(res) == PGRES_TUPLES_OK &&
		PQntuples(res) == 1 && PQnfields(res) == want;

	/* a node that cannot answer is taken to hold what it might */
	c->twophase_pending = ask_pending;
	if (answered && ask_pending)
	{
		c->twophase_pending = (strcmp(PQgetvalue(res, 0, want - 1), "f") != 0);
		if (!c->twophase_pending)
			cj_setup_cache_saw_none(serverid, userid, &token);
	}
	if (answered && ask_identity)
	{
		strlcpy(node, PQgetvalue(res, 0, 0), sizeof(node));
		strlcpy(role, PQgetvalue(res, 0, 1), sizeof(role));
		cj_setup_cache_put_identity(serverid, userid, fingerprint, node, role);
	}
	if (answered || !ask_identity)
		cj_node_identity_learn(serverid, userid, node, role);
	PQclear(res);
}

/*
 * connect_node_raw
 *		Open a libpq connection for userid to the server, from the server's
 *		and user mapping's libpq options only, polling so that cancel and
 *		statement_timeout interrupt a slow connect.  Enforces the password
 *		rule for non-superusers and applies the session settings.  What a
 *		failure to connect does depends on mode (CjConnectMode); NULL, with
 *		the reason in *reason, only where mode says so.
 */
static PGconn *
connect_node_raw(CjConnection *c, ForeignServer *server, UserMapping *um,
				 CjConnectMode mode, char **reason)
{
	Oid			userid = c->key.userid;
	bool		check_password;
	const char **keywords;
	const char **values;
	int			n = 0;
	ListCell   *lc;
	PGconn	   *volatile conn;
	CjConnectError err;
	long		waited_ms;
	uint32		fingerprint;

	check_password = !superuser_arg(userid) && mapping_requires_password(um);

	keywords = palloc0(sizeof(char *) *
					   (list_length(server->options) + list_length(um->options) + 3));
	values = palloc0(sizeof(char *) *
					 (list_length(server->options) + list_length(um->options) + 3));
	foreach(lc, server->options)
	{
		DefElem    *d = (DefElem *) lfirst(lc);

		if (!server_connection_option(d->defname))
			continue;
		keywords[n] = d->defname;
		values[n++] = defGetString(d);
	}
	foreach(lc, um->options)
	{
		DefElem    *d = (DefElem *) lfirst(lc);

		if (!is_libpq_keyword(d->defname))
			continue;
		keywords[n] = d->defname;
		values[n++] = defGetString(d);
	}

	if (check_password)
	{
		const char *password = cj_option_value(um->options, "password");

		if (password == NULL || password[0] == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED),
					 errmsg("password is required to connect to node \"%s\"",
							server->servername),
					 errdetail("Non-superusers must provide a password in the user mapping."),
					 errhint("Set a password in the user mapping for server \"%s\".",
							 server->servername)));
	}

	/* what the node's identity is remembered under (setup_cache.c) */
	fingerprint = options_fingerprint(keywords, values, n);

	/*
	 * Last, so that it wins: colojoin.activity finds its backends by it; an
	 * application_name of the server's or mapping's options comes first.
	 */
	{
		const char *own = cj_option_value(um->options, "application_name");

		if (own == NULL)
			own = cj_option_value(server->options, "application_name");
		keywords[n] = "application_name";
		values[n++] = own == NULL ? cj_application_name() :
			psprintf("%.*s %s", (int) (NAMEDATALEN - 2 - strlen(cj_application_name())),
					 own, cj_application_name());
	}
	keywords[n] = "client_encoding";
	values[n++] = GetDatabaseEncodingName();
	keywords[n] = NULL;
	values[n] = NULL;

	conn = wait_for_slot(c, server, keywords, values, mode, &err, &waited_ms);
	pfree(keywords);
	pfree(values);
	if (conn == NULL)
	{
		if (mode == CJ_CONNECT_QUIET ||
			(mode == CJ_CONNECT_SKIP_BUSY && err.kind == CJ_CONNECT_BUSY) ||
			(mode == CJ_CONNECT_PROBE && err.kind == CJ_CONNECT_UNREACHABLE))
		{
			*reason = psprintf("could not connect to node \"%s\": %s: %s",
							   server->servername,
							   cj_server_address(server->serverid),
							   err.message);
			return NULL;
		}
		report_connect_failure(c, server, &err, waited_ms);
	}

	PG_TRY();
	{
		if (check_password && !PQconnectionUsedPassword(conn))
			ereport(ERROR,
					(errcode(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED),
					 errmsg("password is required to connect to node \"%s\"",
							server->servername),
					 errdetail("Node \"%s\" did not ask for the password, and non-superusers must authenticate to nodes with one.",
							   server->servername),
					 errhint("Make the node require password authentication for this user, or have a superuser set password_required 'false' in the user mapping.")));

		/* the entry owns the connection from here on */
		PQsetNoticeReceiver(conn, notice_receiver, c);
		c->conn = conn;
		session_setup(c, fingerprint);
	}
	PG_CATCH();
	{
		cj_forget_wait_set(c);
		c->conn = NULL;
		c->in_flight = false;
		PQfinish(conn);
		PG_RE_THROW();
	}
	PG_END_TRY();

	return conn;
}

/*
 * cj_connect_node
 *		connect_node_raw within the node's connection budget (conn_budget.c):
 *		the connection counts from before it is opened until
 *		close_connection, or until the attempt fails.  A caller that already
 *		took the share (an optional connection, get_connection) leaves it in
 *		budget_token.  May wait for the budget, and for a free slot on a
 *		full node; their timeouts are ERRORs (ERRCODE_TOO_MANY_CONNECTIONS),
 *		never ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION, which is
 *		kept for a node that could not be reached.  NULL (the share given
 *		back) where mode allows it; see CjConnectMode.
 */
PGconn *
cj_connect_node(CjConnection *c, ForeignServer *server, UserMapping *um,
			 CjConnectMode mode, char **reason)
{
	PGconn	   *conn;

	if (c->budget_token == CJ_BUDGET_NONE)
		c->budget_token = cj_budget_acquire(server->serverid,
											server->servername, false);
	PG_TRY();
	{
		conn = connect_node_raw(c, server, um, mode, reason);
	}
	PG_CATCH();
	{
		cj_budget_release(&c->budget_token);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (conn == NULL)
	{
		cj_budget_release(&c->budget_token);
		return NULL;
	}
	cj_budget_rekey(&c->budget_token, c->key.serverid);
	c->max_prepared = -1;

	/* transactions left in doubt there are resolved at the next use */
	if (!cj_opening_raw)
		cj_twophase_resolve_once(conn, c->key.serverid, NameStr(c->node_name),
								 c->twophase_pending);
	return conn;
}
