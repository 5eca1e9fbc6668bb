/*-------------------------------------------------------------------------
 *
 * shard_create.c
 *	  colojoin.create_shards(): make the shard tables of a hash-partitioned
 *	  table on the nodes and its foreign partitions on the coordinator, in
 *	  one call; and cj_shard_table_ddl(), the CREATE TABLE that gives a
 *	  node's table the columns of a sharded table.
 *
 *	  Everything happens inside the caller's transaction: the local DDL is
 *	  transactional and the remote DDL runs in the remote transactions of
 *	  connection.c, which commit or roll back with it.  Should a node fail
 *	  to commit after others did, connection.c runs the DROP TABLEs noted
 *	  here and reports what it could not remove.
 *
 *	  Deliberately does not: move existing rows, create indexes or
 *	  constraints other than NOT NULL on the nodes, or handle range and list
 *	  partitioning (their bounds are the user's design, not a count).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/transam.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "partitioning/partdesc.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"

#include "metadata/colocation.h"
#include "metadata/node_identity.h"
#include "operations/progress.h"
#include "operations/shard_create.h"
#include "operations/shard_drop.h"
#include "remote/connection.h"

/* the most partitions create_shards makes in one call */
#define CJ_MAX_SHARD_PARTITIONS 4096

/* partitions per server when neither partitions nor colocate_with is given */
#define CJ_DEFAULT_PARTITIONS_PER_SERVER 4

PG_FUNCTION_INFO_V1(colojoin_create_shards);

/* ----------------------------------------------------------------
 *		The DDL of a node's shard table
 * ----------------------------------------------------------------
 */

/* a built-in object: created by initdb, so it exists on every node */
static bool
is_builtin(Oid oid)
{
	return oid < FirstGenbkiObjectId;
}

static bool
builtin_function_checker(Oid funcid, void *context)
{
	return !is_builtin(funcid);
}

/*
 * not_portable_walker
 *		true when the expression uses something a node may not have or that
 *		means something else there: non-built-in functions, operators, types
 *		or collations, and any reg* constant (nextval('local_seq'), say).
 *		Column references are portable only in generation expressions
 *		(*(bool *) context): the node's table has the same columns.
 */
static bool
not_portable_walker(Node *node, void *context)
{
	bool		allow_vars = *(bool *) context;

	if (node == NULL)
		return false;
	if (IsA(node, Var) && allow_vars)
		return !is_builtin(((Var *) node)->vartype) ||
			(OidIsValid(((Var *) node)->varcollid) &&
			 !is_builtin(((Var *) node)->varcollid));
	if (check_functions_in_node(node, builtin_function_checker, NULL))
		return true;
	switch (nodeTag(node))
	{
		case T_Const:
			{
				Const	   *c = (Const *) node;

				switch (c->consttype)
				{
					case REGPROCOID:
					case REGPROCEDUREOID:
					case REGOPEROID:
					case REGOPERATOROID:
					case REGCLASSOID:
					case REGTYPEOID:
					case REGCOLLATIONOID:
					case REGCONFIGOID:
					case REGDICTIONARYOID:
					case REGNAMESPACEOID:
					case REGROLEOID:
						return true;
					default:
						break;
				}
				if (!is_builtin(c->consttype))
					return true;
				break;
			}
		case T_Var:
		case T_Param:
		case T_SubLink:
		case T_SubPlan:
		case T_Aggref:
		case T_WindowFunc:
		case T_NextValueExpr:
			return true;
		default:
			break;
	}
	if (IsA(node, List))
		return expression_tree_walker(node, not_portable_walker, context);
	if (exprType(node) != InvalidOid && !is_builtin(exprType(node)))
		return true;
	if (OidIsValid(exprCollation(node)) && !is_builtin(exprCollation(node)))
		return true;
	return expression_tree_walker(node, not_portable_walker, context);
}

/* "schema"."name" of a collation, always qualified */
static char *
qualified_collation_name(Oid collid)
{
	HeapTuple	tup = SearchSysCache1(COLLOID, ObjectIdGetDatum(collid));
	Form_pg_collation coll;
	char	   *result;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for collation %u", collid);
	coll = (Form_pg_collation) GETSTRUCT(tup);
	result = psprintf("%s.%s",
					  quote_identifier(get_namespace_name(coll->collnamespace)),
					  quote_identifier(NameStr(coll->collname)));
	ReleaseSysCache(tup);
	return result;
}

/*
 * cj_shard_table_ddl
 *		See shard_create.h.  Types are schema-qualified (the node resolves
 *		them with search_path = pg_catalog; a user-defined type must exist
 *		on the node under the same schema and name).  Column defaults are
 *		copied only when they use built-in objects alone: a default such as
 *		nextval('local_seq') means something only on the coordinator, where
 *		it already applies when rows are inserted through the sharded table,
 *		so the node's column gets no default; identity columns likewise
 *		become plain columns.  Stored generated columns are generated on the
 *		node too, because postgres_fdw leaves computing them to the remote
 *		table; one whose expression is not portable becomes a plain column
 *		(and reads back NULL for rows inserted through postgres_fdw).
 */
char *
cj_shard_table_ddl(Oid parent_relid, const char *remote_schema,
				   const char *remote_table, bool if_not_exists)
{
	Relation	rel = relation_open(parent_relid, AccessShareLock);
	TupleDesc	tupdesc = RelationGetDescr(rel);
	List	   *dpcontext = NIL;
	StringInfoData sql;
	bool		first = true;
	int			i;

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s%s.%s (",
					 if_not_exists ? "IF NOT EXISTS " : "",
					 quote_identifier(remote_schema),
					 quote_identifier(remote_table));

	for (i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		if (att->attisdropped)
			continue;
		appendStringInfo(&sql, "%s%s %s",
						 first ? "" : ", ",
						 quote_identifier(NameStr(att->attname)),
						 format_type_extended(att->atttypid, att->atttypmod,
											  FORMAT_TYPE_TYPEMOD_GIVEN |
											  FORMAT_TYPE_FORCE_QUALIFY));
		first = false;
		if (OidIsValid(att->attcollation) &&
			att->attcollation != get_typcollation(att->atttypid))
			appendStringInfo(&sql, " COLLATE %s",
							 qualified_collation_name(att->attcollation));
		if (att->attnotnull)
			appendStringInfoString(&sql, " NOT NULL");

		if (att->atthasdef && att->attidentity == '\0' &&
			tupdesc->constr != NULL)
		{
			bool		generated = (att->attgenerated != '\0');
			int			j;

			for (j = 0; j < tupdesc->constr->num_defval; j++)
			{
				AttrDefault *def = &tupdesc->constr->defval[j];
				Node	   *expr;

				if (def->adnum != att->attnum)
					continue;
				expr = stringToNode(def->adbin);
				if (not_portable_walker(expr, &generated))
					break;
				if (dpcontext == NIL)
					dpcontext = deparse_context_for(RelationGetRelationName(rel),
													parent_relid);
				appendStringInfo(&sql, generated ?
								 " GENERATED ALWAYS AS (%s) STORED" :
								 " DEFAULT %s",
								 deparse_expression(expr, dpcontext,
													false, false));
				break;
			}
		}
	}
	appendStringInfoChar(&sql, ')');

	relation_close(rel, AccessShareLock);
	return sql.data;
}

/* ----------------------------------------------------------------
 *		create_shards
 * ----------------------------------------------------------------
 */

/*
 * check_hash_partitioned
 *		ERROR unless rel is a hash-partitioned table; what says which
 *		argument it came from.
 */
static void
check_hash_partitioned(Relation rel, const char *what)
{
	PartitionKey key;

	if (rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("%s \"%s\" is not partitioned", what,
						RelationGetRelationName(rel)),
				 errhint("create_shards needs a table created with PARTITION BY HASH (...).")));
	key = RelationGetPartitionKey(rel);
	if (key->strategy != PARTITION_STRATEGY_HASH)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("%s \"%s\" is partitioned by %s, create_shards needs HASH",
						what, RelationGetRelationName(rel),
						cj_strategy_name(key->strategy))));
}

static char *
server_name(Oid serverid)
{
	return GetForeignServer(serverid)->servername;
}

/* the foreign server of a postgres_fdw server name, with permission checks */
static Oid
lookup_shard_server(const char *name)
{
	ForeignServer *server = GetForeignServerByName(name, true);
	ForeignDataWrapper *fdw;
	AclResult	aclresult;

	if (server == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("server \"%s\" does not exist", name),
				 errhint("Create it with CREATE SERVER %s FOREIGN DATA WRAPPER postgres_fdw OPTIONS (...).",
						 quote_identifier(name))));
	fdw = GetForeignDataWrapper(server->fdwid);
	if (strcmp(fdw->fdwname, "postgres_fdw") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("server \"%s\" is not a postgres_fdw server", name),
				 errdetail("It uses foreign-data wrapper \"%s\".", fdw->fdwname)));
	aclresult = pg_foreign_server_aclcheck(server->serverid, GetUserId(),
										   ACL_USAGE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FOREIGN_SERVER, server->servername);
	return server->serverid;
}

/* the hash bound of a partition, from pg_class.relpartbound */
static PartitionBoundSpec *
partition_bound(Oid partrelid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(partrelid));
	Datum		datum;
	bool		isnull;
	PartitionBoundSpec *spec;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", partrelid);
	datum = SysCacheGetAttr(RELOID, tup, Anum_pg_class_relpartbound, &isnull);
	if (isnull)
		elog(ERROR, "relation %u has no partition bound", partrelid);
	spec = castNode(PartitionBoundSpec,
					stringToNode(TextDatumGetCString(datum)));
	ReleaseSysCache(tup);
	return spec;
}

/*
 * colocated_placement
 *		The server of each remainder of the colocate_with table, checking
 *		that its scheme matches the parent's: HASH on as many key columns,
 *		keys that hash alike (same hash operator family, same collation),
 *		one modulus for all partitions, every remainder present, each a
 *		postgres_fdw foreign table.  Sets *modulus.
 */
static Oid *
colocated_placement(Relation parent, Relation other, int *modulus)
{
	PartitionKey pkey = RelationGetPartitionKey(parent);
	PartitionKey okey;
	PartitionDesc odesc;
	Oid		   *servers;
	int			m = 0;
	int			i;

	check_hash_partitioned(other, "colocate_with table");
	okey = RelationGetPartitionKey(other);
	if (okey->partnatts != pkey->partnatts)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot colocate \"%s\" with \"%s\": partition keys have %d and %d columns",
						RelationGetRelationName(parent),
						RelationGetRelationName(other),
						pkey->partnatts, okey->partnatts)));
	for (i = 0; i < pkey->partnatts; i++)
	{
		if (pkey->partopfamily[i] != okey->partopfamily[i])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("cannot colocate \"%s\" with \"%s\": partition key column %d has types %s and %s, which hash differently",
							RelationGetRelationName(parent),
							RelationGetRelationName(other), i + 1,
							format_type_be(pkey->parttypid[i]),
							format_type_be(okey->parttypid[i])),
					 errdetail("Key types must belong to the same hash operator family, as int2, int4 and int8 do.")));
		if (pkey->partcollation[i] != okey->partcollation[i])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("cannot colocate \"%s\" with \"%s\": partition key column %d has collations %s and %s",
							RelationGetRelationName(parent),
							RelationGetRelationName(other), i + 1,
							OidIsValid(pkey->partcollation[i]) ?
							get_collation_name(pkey->partcollation[i]) : "none",
							OidIsValid(okey->partcollation[i]) ?
							get_collation_name(okey->partcollation[i]) : "none")));
	}

	odesc = RelationGetPartitionDesc(other, false);
	if (odesc->nparts == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("colocate_with table \"%s\" has no partitions",
						RelationGetRelationName(other))));

	for (i = 0; i < odesc->nparts; i++)
	{
		PartitionBoundSpec *spec = partition_bound(odesc->oids[i]);

		if (m == 0)
			m = spec->modulus;
		else if (spec->modulus != m)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("colocate_with table \"%s\" mixes hash moduli %d and %d",
							RelationGetRelationName(other), m, spec->modulus),
					 errdetail("create_shards copies placement only from a table whose partitions all share one modulus.")));
	}
	if (odesc->nparts != m)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("colocate_with table \"%s\" has partitions for %d of the %d remainders of modulus %d",
						RelationGetRelationName(other), odesc->nparts, m, m),
				 errdetail("create_shards copies placement only from a table that has a partition for every remainder.")));

	servers = palloc0(sizeof(Oid) * m);
	for (i = 0; i < odesc->nparts; i++)
	{
		Oid			partrelid = odesc->oids[i];
		PartitionBoundSpec *spec = partition_bound(partrelid);
		char		relkind = get_rel_relkind(partrelid);
		ForeignTable *ft;

		if (relkind != RELKIND_FOREIGN_TABLE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partition \"%s\" of colocate_with table \"%s\" is not a foreign table",
							get_rel_name(partrelid),
							RelationGetRelationName(other)),
					 errdetail("create_shards copies placement only from partitions that are postgres_fdw foreign tables.")));
		ft = GetForeignTable(partrelid);
		servers[spec->remainder] = ft->serverid;
	}
	*modulus = m;
	return servers;
}

/* name[] argument as an array of C strings, refusing NULLs and duplicates */
static char **
server_names(ArrayType *arr, int *n)
{
	Datum	   *elems;
	bool	   *nulls;
	char	  **names;
	int			i,
				j;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("servers must be a one-dimensional array")));
	deconstruct_array(arr, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR,
					  &elems, &nulls, n);
	names = palloc(sizeof(char *) * Max(*n, 1));
	for (i = 0; i < *n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("servers must not contain NULL")));
		names[i] = NameStr(*DatumGetName(elems[i]));
		for (j = 0; j < i; j++)
			if (strcmp(names[i], names[j]) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("server \"%s\" appears twice in servers",
								names[i])));
	}
	return names;
}

/*
 * colojoin_create_shards
 *		colojoin.create_shards(parent regclass, servers name[],
 *							   partitions integer DEFAULT NULL,
 *							   colocate_with regclass DEFAULT NULL)
 *
 * Creates, for remainder r of modulus m, the foreign partition
 * <parent>_p<r> in the parent's schema and, on its server, the table of the
 * same schema and name (creating the schema there when it is missing).
 * Returns the number of partitions created.
 *
 * Without colocate_with, partition r goes to servers[r % n] and partitions
 * defaults to 4 per server.  With colocate_with, the modulus and every
 * partition's server are copied from that table (partitions, if given, must
 * equal its modulus); servers may then be NULL, and if given must include
 * every server colocate_with uses, so a caller can state where data may go.
 */
Datum
colojoin_create_shards(PG_FUNCTION_ARGS)
{
	Oid			parent_relid;
	Relation	parent;
	PartitionDesc pdesc;
	Oid			nspid;
	char	   *nspname;
	char	   *relname;
	int			nnames = 0;
	char	  **names = NULL;
	Oid		   *name_servers = NULL;
	Oid		   *placement;
	int			modulus;
	int			r;
	int			i;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("parent must not be NULL")));
	parent_relid = PG_GETARG_OID(0);

	/* the lock a partition's creation takes anyway; taken first, held on */
	parent = table_open(parent_relid, AccessExclusiveLock);
	nspid = RelationGetNamespace(parent);
	nspname = get_namespace_name(nspid);
	relname = pstrdup(RelationGetRelationName(parent));

	if (!pg_class_ownercheck(parent_relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER,
					   get_relkind_objtype(parent->rd_rel->relkind), relname);
	check_hash_partitioned(parent, "table");
	pdesc = RelationGetPartitionDesc(parent, false);
	if (pdesc->nparts > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" already has partitions", relname),
				 errdetail_plural("It has %d partition; create_shards creates every partition of a partitioned table that has none.",
								  "It has %d partitions; create_shards creates every partition of a partitioned table that has none.",
								  pdesc->nparts, pdesc->nparts)));

	if (!PG_ARGISNULL(1))
	{
		names = server_names(PG_GETARG_ARRAYTYPE_P(1), &nnames);
		name_servers = palloc(sizeof(Oid) * Max(nnames, 1));
		for (i = 0; i < nnames; i++)
			name_servers[i] = lookup_shard_server(names[i]);
	}

	if (!PG_ARGISNULL(3))
	{
		Relation	other = table_open(PG_GETARG_OID(3), AccessShareLock);

		if (RelationGetRelid(other) == parent_relid)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a table cannot be colocated with itself")));
		placement = colocated_placement(parent, other, &modulus);
		if (!PG_ARGISNULL(2) && PG_GETARG_INT32(2) != modulus)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partitions (%d) differs from the modulus of colocate_with table \"%s\" (%d)",
							PG_GETARG_INT32(2),
							RelationGetRelationName(other), modulus),
					 errhint("Leave partitions NULL to copy the modulus.")));
		for (r = 0; r < modulus; r++)
		{
			AclResult	aclresult;

			if (names != NULL)
			{
				for (i = 0; i < nnames; i++)
					if (name_servers[i] == placement[r])
						break;
				if (i == nnames)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("colocate_with table \"%s\" places remainder %d on server \"%s\", which servers does not list",
									RelationGetRelationName(other), r,
									server_name(placement[r])),
							 errhint("Pass servers => NULL to use the placement of the colocate_with table as it is.")));
			}
			aclresult = pg_foreign_server_aclcheck(placement[r], GetUserId(),
												   ACL_USAGE);
			if (aclresult != ACLCHECK_OK)
				aclcheck_error(aclresult, OBJECT_FOREIGN_SERVER,
							   server_name(placement[r]));
		}
		table_close(other, AccessShareLock);
	}
	else
	{
		if (names == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("servers must not be NULL unless colocate_with is given")));
		if (nnames == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("servers must name at least one server")));
		modulus = PG_ARGISNULL(2) ?
			nnames * CJ_DEFAULT_PARTITIONS_PER_SERVER : PG_GETARG_INT32(2);
		if (modulus < 1 || modulus > CJ_MAX_SHARD_PARTITIONS)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partitions must be between 1 and %d",
							CJ_MAX_SHARD_PARTITIONS)));
		placement = palloc(sizeof(Oid) * modulus);
		for (r = 0; r < modulus; r++)
			placement[r] = name_servers[r % nnames];
	}

	/* every name first, so a clash fails before anything is created */
	for (r = 0; r < modulus; r++)
	{
		char	   *leaf = psprintf("%s_p%d", relname, r);

		if (strlen(leaf) >= NAMEDATALEN)
			ereport(ERROR,
					(errcode(ERRCODE_NAME_TOO_LONG),
					 errmsg("partition name \"%s\" would be longer than %d bytes",
							leaf, NAMEDATALEN - 1),
					 errhint("Rename table \"%s\" to something shorter.", relname)));
		if (OidIsValid(get_relname_relid(leaf, nspid)))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_TABLE),
					 errmsg("relation \"%s.%s\" already exists", nspname, leaf),
					 errdetail("create_shards names the partition of remainder %d \"%s\".",
							   r, leaf)));
	}

	/*
	 * Keep the lock, drop the reference: PARTITION OF refuses a parent this
	 * session still has open.
	 */
	table_close(parent, NoLock);

	/* the local foreign partitions */
	cj_progress_begin("create_shards", parent_relid,
					  "creating the foreign partitions", modulus);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	for (r = 0; r < modulus; r++)
	{
		char	   *leaf = psprintf("%s_p%d", relname, r);
		char	   *sql;

		sql = psprintf("CREATE FOREIGN TABLE %s.%s PARTITION OF %s.%s "
					   "FOR VALUES WITH (MODULUS %d, REMAINDER %d) "
					   "SERVER %s OPTIONS (schema_name %s, table_name %s)",
					   quote_identifier(nspname), quote_identifier(leaf),
					   quote_identifier(nspname), quote_identifier(relname),
					   modulus, r,
					   quote_identifier(server_name(placement[r])),
					   quote_literal_cstr(nspname), quote_literal_cstr(leaf));
		if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not create partition \"%s\"", leaf);
		pfree(sql);
		cj_progress_advance(1);
	}
	SPI_finish();
	cj_progress_phase("creating the tables on the nodes", modulus);

	/* the tables on the nodes, in each node's remote transaction */
	for (r = 0; r < modulus; r++)
	{
		char	   *leaf = psprintf("%s_p%d", relname, r);
		char	   *qualified = psprintf("%s.%s", quote_identifier(nspname),
										 quote_identifier(leaf));
		char	   *context = psprintf("creating partition %s", leaf);
		Oid			node;
		CjConnection *conn;
		bool		schema_done = false;
		char	   *why;

		/* connected, the server's database is known (node_identity.c) */
		if (!cj_conn_try_connect(placement[r], GetUserId(), 0, &why))
			(void) cj_get_connection(placement[r], GetUserId(), 0);
		node = cj_node_representative(placement[r], GetUserId());

		/*
		 * The DDL goes through the transaction's write connection of the
		 * node, where the rows written next in this transaction go too (a
		 * table created and loaded in one transaction).  Servers that reach
		 * one database share it: two connections of this transaction there
		 * would wait on each other's locks (CREATE SCHEMA), and the node
		 * cannot tell.
		 */
		conn = cj_get_write_connection(node, GetUserId());

		/*
		 * The schema, once per node.  Looked up first: CREATE SCHEMA IF NOT
		 * EXISTS demands CREATE on the node's database even when the schema
		 * is there, which a node's application role rarely has.
		 */
		for (i = 0; i < r; i++)
			if (cj_node_representative(placement[i], GetUserId()) == node)
				schema_done = true;
		if (!schema_done)
		{
			char	   *sql = psprintf("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = %s",
									   quote_literal_cstr(nspname));
			PGresult   *res = cj_exec_query(conn, sql, context);
			bool		exists = (PQntuples(res) > 0);

			PQclear(res);
			if (!exists)
			{
				cj_exec_command(conn,
								psprintf("CREATE SCHEMA IF NOT EXISTS %s",
										 quote_identifier(nspname)),
								context);
				cj_conn_note_write(conn,
								   psprintf("DROP SCHEMA IF EXISTS %s",
											quote_identifier(nspname)),
								   psprintf("schema %s", quote_identifier(nspname)));
			}
		}
		cj_exec_command(conn, cj_shard_table_ddl(parent_relid, nspname, leaf,
												 false),
						context);
		cj_conn_note_write(conn,
						   psprintf("DROP TABLE IF EXISTS %s", qualified),
						   psprintf("table %s", qualified));
		/* made by colojoin, so drop_shards and DROP TABLE may drop it */
		cj_record_shard_origin(get_relname_relid(leaf, nspid), placement[r],
							   nspname, leaf);
		cj_progress_advance(1);
	}
	cj_progress_end();

	PG_RETURN_INT32(modulus);
}
