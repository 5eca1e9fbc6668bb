/*-------------------------------------------------------------------------
 *
 * split_online.c
 *	  The online split (colojoin.split_shards(..., mode => 'online')): each
 *	  new class of an old one is a logical replication of the old tables,
 *	  filtered to the rows the coordinator would route to that class, into
 *	  tables of the same names on another node; writes go on until the
 *	  catch-up, which they wait for.
 *
 *	  Logical replication writes into the table of the publisher's name, so
 *	  each new class of an old one lives on its own node, none the old
 *	  class's: the targets come from the servers given (new class r on the
 *	  first of servers[r % n], servers[r % n + 1], ... whose node is free for
 *	  it).  A publication per new class carries every table of the
 *	  colocation group with its row filter, satisfies_hash_partition()
 *	  against a helper table on the source partitioned like the key (as the
 *	  blocking split uses); the source tables get REPLICA IDENTITY FULL, so
 *	  that the filter's columns are in the replica identity of every UPDATE
 *	  and DELETE.  The subscriptions, publications and slots are named like
 *	  a move's (CJ_MOVE_PREFIX "split_<leaf oid>_<remainder>"), and the
 *	  targets' tables and the helpers carry a move's marker comment, so
 *	  move_cleanup removes what a failed split left.
 *
 *	  It neither checks what may split nor switches the partitions
 *	  (class_split.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "metadata/metadata.h"
#include "metadata/node_identity.h"
#include "operations/class_move.h"
#include "operations/class_split.h"
#include "operations/progress.h"
#include "operations/remote_table_ddl.h"
#include "remote/connection.h"

/* one new class's replication */
typedef struct SplitRep
{
	CjReplication rep;
	Oid			from;
	Oid			to;
	CjConnection *src;			/* autocommit */
	CjConnection *dst;			/* autocommit */
	int			ntables;
	int			old_class;		/* index into the classes */
} SplitRep;

/* a class's split leaves, grouped by old remainder, in the given order */
static List *
old_classes(List *splits)
{
	List	   *classes = NIL;
	ListCell   *lc;

	foreach(lc, splits)
	{
		CjSplitLeaf *s = (CjSplitLeaf *) lfirst(lc);
		ListCell   *lk;
		bool		found = false;

		foreach(lk, classes)
		{
			CjSplitLeaf *first = (CjSplitLeaf *) linitial((List *) lfirst(lk));

			if (first->remainder == s->remainder && first->modulus == s->modulus)
			{
				lfirst(lk) = lappend((List *) lfirst(lk), s);
				found = true;
				break;
			}
		}
		if (!found)
			classes = lappend(classes, list_make1(s));
	}
	return classes;
}

/* the server of new class r: on another node than from and than taken ones */
static Oid
choose_target(List *servers, int r, Oid from, List *taken)
{
	int			n = list_length(servers);
	int			i;

	for (i = 0; i < n; i++)
	{
		Oid			s = list_nth_oid(servers, (r + i) % n);
		ListCell   *lc;
		bool		free = !cj_on_node(s, from);

		foreach(lc, taken)
			if (cj_on_node(s, lfirst_oid(lc)))
				free = false;
		if (free)
			return s;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("an online split of a class on server \"%s\" needs one server of another node per new class",
					cj_node_name(from)),
			 errdetail("Each new class is a copy of the old tables under their names, so no two can share a node, nor share the old one's."),
			 errhint("Give more servers, or split with mode => 'blocking', which splits in place.")));
	return InvalidOid;			/* keep compiler quiet */
}

/*
 * Make the new classes' tables, publications and subscriptions of one old
 * class; appends their replications to *reps and new leaves to *made.
 */
static void
start_class(List *leaves, int new_modulus, List *servers, int ci,
			List **reps, List **made)
{
	CjSplitLeaf *first = (CjSplitLeaf *) linitial(leaves);
	CjPlacement *pl = &first->leaf->placements[0];
	Oid			from = pl->serverid;
	Oid			userid = GetUserId();
	CjConnection *src = cj_get_autocommit_connection(from, userid, CJ_MOVE_SLOT);
	char	   *base = psprintf(CJ_MOVE_PREFIX "split_%u", first->leaf->relid);
	char	   *context = psprintf("splitting class %d of %s online", first->remainder,
								   quote_identifier(get_rel_name(first->table->relid)));
	List	   *helpers = NIL;
	List	   *taken = NIL;
	ListCell   *lc;
	int			k;

	cj_move_check_source(src, cj_node_name(from));

	/* where the new classes go, before anything is made */
	for (k = 0; k < new_modulus / first->modulus; k++)
		taken = lappend_oid(taken, choose_target(servers, first->remainder + k * first->modulus,
												 from, taken));
	if (!cj_move_try_lock(base))
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("another session is splitting class %d of %s", first->remainder,
						quote_identifier(get_rel_name(first->table->relid)))));
	(void) cj_move_remove_remains(from, from, base);

	/* the helpers (marked, for cleanup) and the replica identity */
	foreach(lc, leaves)
	{
		CjSplitLeaf *s = (CjSplitLeaf *) lfirst(lc);
		CjPlacement *p = &s->leaf->placements[0];
		char	   *helper = quote_qualified_identifier(p->remote_schema,
														psprintf("colojoin_split_%u", s->leaf->relid));

		cj_exec_command(src, cj_split_helper_ddl(s->table, helper), context);
		cj_exec_command(src, cj_twin_comment_sql(helper, cj_move_marker(base)), context);
		cj_exec_command(src, psprintf("ALTER TABLE %s REPLICA IDENTITY FULL",
									  quote_qualified_identifier(p->remote_schema, p->remote_table)),
						context);
		helpers = lappend(helpers, helper);
	}

	for (k = 0; k < new_modulus / first->modulus; k++)
	{
		int			r = first->remainder + k * first->modulus;
		Oid			to = list_nth_oid(taken, k);
		SplitRep   *sr = palloc0(sizeof(SplitRep));
		StringInfoData tables;
		ListCell   *lh;

		sr->rep.name = psprintf("%s_%d", base, r);
		sr->rep.from_name = cj_node_name(from);
		sr->rep.to_name = cj_node_name(to);
		sr->from = from;
		sr->to = to;
		sr->src = src;
		sr->old_class = ci;
		if (!cj_move_try_lock(sr->rep.name))
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("another session is splitting class %d of %s", first->remainder,
							quote_identifier(get_rel_name(first->table->relid)))));
		(void) cj_move_remove_remains(from, to, sr->rep.name);
		sr->dst = cj_get_autocommit_connection(to, userid, CJ_MOVE_SLOT);
		*reps = lappend(*reps, sr);

		initStringInfo(&tables);
		forboth(lc, leaves, lh, helpers)
		{
			CjSplitLeaf *s = (CjSplitLeaf *) lfirst(lc);
			CjPlacement *p = &s->leaf->placements[0];
			char	   *qualified = quote_qualified_identifier(p->remote_schema, p->remote_table);
			CjRemoteTableDdl *ddl = cj_remote_table_ddl(src, cj_node_name(from),
														p->remote_schema, p->remote_table,
														NULL, NULL);
			CjNewLeaf  *nl = palloc(sizeof(CjNewLeaf));

			cj_twin_create(sr->dst, ddl, qualified, cj_move_marker(sr->rep.name), context);
			cj_twin_finish(sr->dst, ddl, qualified, cj_move_marker(sr->rep.name), context);
			appendStringInfo(&tables, "%s%s WHERE (%s)", tables.len > 0 ? ", " : "",
							 qualified,
							 cj_split_class_test(s->table, s->leaf, (char *) lfirst(lh),
												 new_modulus, r));
			sr->ntables++;

			nl->from = s;
			nl->name = cj_split_leaf_name(s->table->relid, new_modulus, r, NULL);
			nl->remote = p->remote_table;
			nl->server = to;
			nl->schema = p->remote_schema;
			nl->remainder = r;
			nl->comment = ddl->comment;
			*made = lappend(*made, nl);
		}
		cj_move_replication_start(&sr->rep, src, sr->dst, from, tables.data, context);
	}
}

/* everything of a failed online split, as far as the nodes can be reached */
static void
remove_all(List *reps, List *classes)
{
	ListCell   *lc;

	foreach(lc, reps)
	{
		SplitRep   *sr = (SplitRep *) lfirst(lc);

		(void) cj_move_remove_remains(sr->from, sr->to, sr->rep.name);
	}
	foreach(lc, classes)
	{
		CjSplitLeaf *first = (CjSplitLeaf *) linitial((List *) lfirst(lc));
		Oid			from = first->leaf->placements[0].serverid;

		(void) cj_move_remove_remains(from, from,
									  psprintf(CJ_MOVE_PREFIX "split_%u", first->leaf->relid));
	}
}

/*
 * cj_split_online
 *		See class_split.h.
 */
List *
cj_split_online(List *splits, int new_modulus, List *servers, List *relids)
{
	List	   *classes = old_classes(splits);
	List	   *reps = NIL;
	List	   *made = NIL;
	MemoryContext cxt = CurrentMemoryContext;
	Oid			userid = GetUserId();
	ListCell   *lc;
	int			ci;

	if (servers == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("an online split needs servers => for the new classes"),
				 errhint("Each new class goes to a node other than the old class's; or split with mode => 'blocking', in place.")));

	PG_TRY();
	{
		ci = 0;
		foreach(lc, classes)
			start_class((List *) lfirst(lc), new_modulus, servers, ci++, &reps, &made);
		foreach(lc, reps)
		{
			SplitRep   *sr = (SplitRep *) lfirst(lc);

			cj_move_wait_for_copy(&sr->rep, sr->dst, sr->ntables);
		}
		cj_move_debug_pause("split_copied");

		/* writes to the tables wait from here until the caller commits */
		cj_progress_phase("waiting for writes to end", 0);
		cj_lock_together(relids, ExclusiveLock);
		ci = 0;
		foreach(lc, classes)
		{
			List	   *leaves = (List *) lfirst(lc);
			CjSplitLeaf *first = (CjSplitLeaf *) linitial(leaves);
			CjConnection *src = cj_get_autocommit_connection(first->leaf->placements[0].serverid,
															 userid, CJ_MOVE_SLOT);
			List	   *names = NIL;
			ListCell   *ll;
			char	   *lsn;

			foreach(ll, leaves)
			{
				CjPlacement *p = &((CjSplitLeaf *) lfirst(ll))->leaf->placements[0];

				names = lappend(names, quote_qualified_identifier(p->remote_schema, p->remote_table));
			}
			cj_move_wait_for_prepared(names, src, "splitting a class online");
			lsn = cj_move_source_position(src, "splitting a class online");
			foreach(ll, reps)
			{
				SplitRep   *sr = (SplitRep *) lfirst(ll);

				if (sr->old_class == ci)
					cj_move_wait_for_lsn(&sr->rep, src, sr->dst, lsn);
			}
			ci++;
		}
		cj_move_debug_pause("split_caught_up");

		/* replication ends; the helpers go */
		cj_progress_phase("ending replication", 0);
		foreach(lc, reps)
		{
			SplitRep   *sr = (SplitRep *) lfirst(lc);

			cj_move_replication_end(&sr->rep, sr->src, sr->dst, "splitting a class online");
		}
		foreach(lc, splits)
		{
			CjSplitLeaf *s = (CjSplitLeaf *) lfirst(lc);
			CjPlacement *p = &s->leaf->placements[0];

			cj_exec_command(cj_get_autocommit_connection(p->serverid, userid, CJ_MOVE_SLOT),
							psprintf("DROP TABLE %s",
									 quote_qualified_identifier(p->remote_schema,
																psprintf("colojoin_split_%u", s->leaf->relid))),
							"splitting a class online");
		}
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		remove_all(reps, classes);
		ReThrowError(edata);
	}
	PG_END_TRY();

	/*
	 * With the caller's transaction: the targets' comments cleared (their
	 * own, if any, back) and the old tables dropped.
	 */
	foreach(lc, made)
	{
		CjNewLeaf  *nl = (CjNewLeaf *) lfirst(lc);
		CjConnection *dst = cj_get_write_connection(cj_node_representative(nl->server, userid),
													userid);

		cj_conn_note_dml(dst);
		cj_exec_command(dst, cj_twin_comment_sql(quote_qualified_identifier(nl->schema, nl->remote),
												 nl->comment),
						"splitting a class online");
	}
	foreach(lc, splits)
	{
		CjSplitLeaf *s = (CjSplitLeaf *) lfirst(lc);
		CjPlacement *p = &s->leaf->placements[0];
		CjConnection *src = cj_get_write_connection(cj_node_representative(p->serverid, userid),
													userid);

		cj_conn_note_dml(src);
		cj_exec_command(src, psprintf("DROP TABLE %s",
									  quote_qualified_identifier(p->remote_schema, p->remote_table)),
						"splitting a class online");
	}
	return made;
}
