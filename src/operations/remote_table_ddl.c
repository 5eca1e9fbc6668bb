/*-------------------------------------------------------------------------
 *
 * remote_table_ddl.c
 *	  Reads a table on one node and writes the statements that make its
 *	  empty twin on another: columns (types, collations, defaults, stored
 *	  generated columns, NOT NULL), storage parameters, statistics targets,
 *	  constraints, indexes, replica identity, owner, table and column
 *	  privileges, row security and its policies, triggers, extended
 *	  statistics and comments.
 *
 *	  The node describes its own table, with its own catalog functions
 *	  (pg_get_constraintdef, pg_get_indexdef, ...), in one query: the
 *	  node's table is the truth, not the coordinator's foreign table, which
 *	  may name fewer columns.  Identity columns become plain columns (their
 *	  sequence would not come along), as create_shards makes them.  A twin
 *	  under another name (a split's, on the same node) gets its indexes and
 *	  the constraints that own one renamed with a suffix, as index names
 *	  are unique in a schema; extended statistics are left out then.
 *
 *	  It writes statements and runs them where it is told (cj_twin_create,
 *	  cj_twin_finish); class_move.c and class_split.c decide where and when.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/builtins.h"

#include "operations/remote_table_ddl.h"

/*
 * One row per statement: (part, ordinal, statement).  part 0 is made before
 * the rows are copied, part 1 after; ordinal orders statements within a
 * part.  %1$s is the schema's literal, %2$s the table's, %3$s the twin's
 * name (NULL: the same) and %4$s the suffix of its indexes.  The session's
 * search_path on a node is pg_catalog only, so every name the catalog
 * functions print is schema-qualified.
 */
static const char *describe_sql =
"WITH t AS ("
" SELECT c.oid, c.relkind, c.relowner, c.relacl, c.relrowsecurity,"
"  c.relforcerowsecurity, c.relreplident, c.reloptions,"
"  pg_catalog.format('%%I.%%I', n.nspname, COALESCE(%3$s, c.relname)) AS qn,"
"  pg_catalog.format('%%I.%%I', n.nspname, c.relname) AS oldqn,"
"  %4$s::pg_catalog.text AS sfx"
" FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
" WHERE n.nspname = %1$s AND c.relname = %2$s),"
" cols AS ("
" SELECT a.*, d.adbin, ty.typcollation, co.collname, cn.nspname AS collnsp"
" FROM t JOIN pg_catalog.pg_attribute a ON a.attrelid = t.oid"
" JOIN pg_catalog.pg_type ty ON ty.oid = a.atttypid"
" LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
" LEFT JOIN pg_catalog.pg_collation co ON co.oid = a.attcollation"
" LEFT JOIN pg_catalog.pg_namespace cn ON cn.oid = co.collnamespace"
" WHERE a.attnum > 0 AND NOT a.attisdropped),"
" acl AS ("
" SELECT NULL::name AS col, x.* FROM t, pg_catalog.aclexplode(t.relacl) x"
" UNION ALL"
" SELECT c.attname, x.* FROM cols c, pg_catalog.aclexplode(c.attacl) x)"
" SELECT 0, 0, pg_catalog.format('CREATE SCHEMA IF NOT EXISTS %%I', %1$s) FROM t"
" UNION ALL"
" SELECT 0, 1, pg_catalog.format('CREATE TABLE %%s (%%s)%%s', t.qn,"
"  (SELECT pg_catalog.string_agg(pg_catalog.format('%%I %%s%%s%%s%%s', c.attname,"
"     pg_catalog.format_type(c.atttypid, c.atttypmod),"
"     CASE WHEN c.attcollation <> 0 AND c.attcollation <> c.typcollation"
"      THEN pg_catalog.format(' COLLATE %%I.%%I', c.collnsp, c.collname) ELSE '' END,"
"     CASE WHEN c.attgenerated = 's'"
"      THEN ' GENERATED ALWAYS AS (' || pg_catalog.pg_get_expr(c.adbin, t.oid) || ') STORED'"
"      WHEN c.adbin IS NOT NULL AND c.attidentity = ''"
"      THEN ' DEFAULT ' || pg_catalog.pg_get_expr(c.adbin, t.oid) ELSE '' END,"
"     CASE WHEN c.attnotnull THEN ' NOT NULL' ELSE '' END), ', ' ORDER BY c.attnum)"
"   FROM cols c),"
"  CASE WHEN t.reloptions IS NULL THEN ''"
"   ELSE ' WITH (' || pg_catalog.array_to_string(t.reloptions, ', ') || ')' END)"
" FROM t"
" UNION ALL"
" SELECT 0, 2, pg_catalog.format('ALTER TABLE %%s ALTER COLUMN %%I SET STATISTICS %%s',"
"  t.qn, c.attname, c.attstattarget)"
" FROM t, cols c WHERE c.attstattarget >= 0"
" UNION ALL"
" SELECT 1, CASE WHEN x.contype = 'f' THEN 30 ELSE 10 END,"
"  pg_catalog.format('ALTER TABLE %%s ADD CONSTRAINT %%I %%s', t.qn,"
"  CASE WHEN t.sfx <> '' AND x.contype IN ('p', 'u', 'x') THEN pg_catalog.left(x.conname, 50) || t.sfx ELSE x.conname END,"
"  pg_catalog.pg_get_constraintdef(x.oid))"
" FROM t JOIN pg_catalog.pg_constraint x ON x.conrelid = t.oid"
" WHERE x.contype IN ('p', 'u', 'x', 'c', 'f')"
" UNION ALL"
" SELECT 1, 20, CASE WHEN t.sfx = '' THEN pg_catalog.pg_get_indexdef(i.indexrelid)"
"  ELSE pg_catalog.format('CREATE %%sINDEX %%I ON %%s %%s', CASE WHEN i.indisunique THEN 'UNIQUE ' END,"
"   pg_catalog.left(ic.relname, 50) || t.sfx, t.qn,"
"   pg_catalog.substr(pg_catalog.pg_get_indexdef(i.indexrelid), pg_catalog.length(pg_catalog.format("
"    'CREATE %%sINDEX %%I ON %%s ', CASE WHEN i.indisunique THEN 'UNIQUE ' END, ic.relname, t.oldqn)) + 1)) END"
" FROM t JOIN pg_catalog.pg_index i ON i.indrelid = t.oid"
" JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid"
" WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_constraint x"
"  WHERE x.conrelid = t.oid AND x.conindid = i.indexrelid)"
" UNION ALL"
" SELECT 1, 40, pg_catalog.format('ALTER TABLE %%s REPLICA IDENTITY %%s', t.qn,"
"  CASE t.relreplident WHEN 'f' THEN 'FULL' WHEN 'n' THEN 'NOTHING'"
"  ELSE (SELECT pg_catalog.format('USING INDEX %%I', CASE WHEN t.sfx = '' THEN ic.relname"
"    ELSE pg_catalog.left(ic.relname, 50) || t.sfx END)"
"   FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid"
"   WHERE i.indrelid = t.oid AND i.indisreplident) END)"
" FROM t WHERE t.relreplident <> 'd'"
" UNION ALL"
" SELECT 1, 50, pg_catalog.format('ALTER TABLE %%s OWNER TO %%I', t.qn,"
"  pg_catalog.pg_get_userbyid(t.relowner))"
" FROM t"
" UNION ALL"
" SELECT 1, 60, pg_catalog.format('REVOKE ALL ON TABLE %%s FROM %%I', t.qn,"
"  pg_catalog.pg_get_userbyid(t.relowner))"
" FROM t WHERE t.relacl IS NOT NULL"
" UNION ALL"
" SELECT 1, 61, pg_catalog.format('GRANT %%s%%s ON TABLE %%s TO %%s%%s', a.privilege_type,"
"  CASE WHEN a.col IS NULL THEN '' ELSE pg_catalog.format(' (%%I)', a.col) END, t.qn,"
"  CASE WHEN a.grantee = 0 THEN 'PUBLIC'"
"   ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END,"
"  CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)"
" FROM t, acl a"
" UNION ALL"
" SELECT 1, 70, pg_catalog.format('ALTER TABLE %%s ENABLE ROW LEVEL SECURITY', t.qn)"
" FROM t WHERE t.relrowsecurity"
" UNION ALL"
" SELECT 1, 71, pg_catalog.format('ALTER TABLE %%s FORCE ROW LEVEL SECURITY', t.qn)"
" FROM t WHERE t.relforcerowsecurity"
" UNION ALL"
" SELECT 1, 72, pg_catalog.format('CREATE POLICY %%I ON %%s AS %%s FOR %%s TO %%s%%s%%s',"
"  p.polname, t.qn, CASE WHEN p.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END,"
"  CASE p.polcmd WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT' WHEN 'w' THEN 'UPDATE'"
"   WHEN 'd' THEN 'DELETE' ELSE 'ALL' END,"
"  (SELECT pg_catalog.string_agg(CASE WHEN r = 0 THEN 'PUBLIC'"
"    ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(r)) END, ', ')"
"   FROM pg_catalog.unnest(p.polroles) r),"
"  CASE WHEN p.polqual IS NULL THEN ''"
"   ELSE ' USING (' || pg_catalog.pg_get_expr(p.polqual, t.oid) || ')' END,"
"  CASE WHEN p.polwithcheck IS NULL THEN ''"
"   ELSE ' WITH CHECK (' || pg_catalog.pg_get_expr(p.polwithcheck, t.oid) || ')' END)"
" FROM t JOIN pg_catalog.pg_policy p ON p.polrelid = t.oid"
" UNION ALL"
" SELECT 1, 80, pg_catalog.replace(pg_catalog.pg_get_triggerdef(g.oid), ' ON ' || t.oldqn || ' ',"
"  ' ON ' || t.qn || ' ')"
" FROM t JOIN pg_catalog.pg_trigger g ON g.tgrelid = t.oid WHERE NOT g.tgisinternal"
" UNION ALL"
" SELECT 1, 81, pg_catalog.format('ALTER TABLE %%s %%s TRIGGER %%I', t.qn,"
"  CASE g.tgenabled WHEN 'D' THEN 'DISABLE' WHEN 'R' THEN 'ENABLE REPLICA'"
"   ELSE 'ENABLE ALWAYS' END, g.tgname)"
" FROM t JOIN pg_catalog.pg_trigger g ON g.tgrelid = t.oid"
" WHERE NOT g.tgisinternal AND g.tgenabled <> 'O'"
" UNION ALL"
" SELECT 1, 90, pg_catalog.pg_get_statisticsobjdef(s.oid)"
" FROM t JOIN pg_catalog.pg_statistic_ext s ON s.stxrelid = t.oid WHERE t.sfx = ''"
" UNION ALL"
" SELECT 1, 91, pg_catalog.format('COMMENT ON COLUMN %%s.%%I IS %%L', t.qn, c.attname,"
"  pg_catalog.col_description(t.oid, c.attnum))"
" FROM t, cols c WHERE pg_catalog.col_description(t.oid, c.attnum) IS NOT NULL"
" UNION ALL"
" SELECT 2, 0, (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(c.attname), ', '"
"  ORDER BY c.attnum) FROM cols c WHERE c.attgenerated = '')"
" FROM t"
" UNION ALL"
" SELECT 3, 0, pg_catalog.obj_description(t.oid, 'pg_class') FROM t"
" UNION ALL"
" SELECT 4, 0, (t.relreplident = 'f' OR (t.relreplident <> 'n' AND EXISTS ("
"  SELECT FROM pg_catalog.pg_index i WHERE i.indrelid = t.oid AND"
"  (i.indisprimary OR i.indisreplident))))::text FROM t"
" UNION ALL"
" SELECT 5, 0, t.relkind::text FROM t"
" ORDER BY 1, 2, 3";

/*
 * cj_remote_table_ddl
 *		See remote_table_ddl.h.
 */
CjRemoteTableDdl *
cj_remote_table_ddl(CjConnection *src, const char *node, const char *schema,
					const char *table, const char *new_table, const char *suffix)
{
	CjRemoteTableDdl *ddl = palloc0(sizeof(CjRemoteTableDdl));
	char	   *qualified = quote_qualified_identifier(schema, table);
	char	   *context = psprintf("describing table %s on node \"%s\"",
								   qualified, node);
	char	   *relkind = NULL;
	PGresult   *res;
	int			r;

	res = cj_exec_query(src, psprintf(describe_sql, quote_literal_cstr(schema),
									  quote_literal_cstr(table),
									  new_table ? quote_literal_cstr(new_table) : "NULL::pg_catalog.name",
									  quote_literal_cstr(new_table ? suffix : "")),
						context);
	for (r = 0; r < PQntuples(res); r++)
	{
		int			part = atoi(PQgetvalue(res, r, 0));
		char	   *value = PQgetisnull(res, r, 2) ? NULL :
			pstrdup(PQgetvalue(res, r, 2));

		switch (part)
		{
			case 0:
				ddl->create = lappend(ddl->create, value);
				break;
			case 1:
				ddl->finish = lappend(ddl->finish, value);
				break;
			case 2:
				ddl->columns = value;
				break;
			case 3:
				ddl->comment = value;
				break;
			case 4:
				ddl->has_identity = (value != NULL && strcmp(value, "true") == 0);
				break;
			case 5:
				relkind = value;
				break;
		}
	}
	PQclear(res);

	if (relkind == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table %s does not exist on node \"%s\"", qualified, node),
				 errdetail("A placement names a remote table the node does not have.")));
	if (strcmp(relkind, "r") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("%s on node \"%s\" is not a plain table", qualified, node),
				 errdetail("Only plain tables can be moved; this one has relkind '%s'.",
						   relkind),
				 errhint("Move its rows by hand, or place a plain table there.")));
	if (ddl->columns == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table %s on node \"%s\" has no columns to copy",
						qualified, node)));
	return ddl;
}

/* see remote_table_ddl.h */
void
cj_twin_create(CjConnection *dst, const CjRemoteTableDdl *ddl, const char *qualified,
			   const char *marker, const char *context)
{
	ListCell   *lc;

	foreach(lc, ddl->create)
		cj_exec_command(dst, (char *) lfirst(lc), context);
	if (marker != NULL)
		cj_exec_command(dst, cj_twin_comment_sql(qualified, marker), context);
}

/* see remote_table_ddl.h */
void
cj_twin_finish(CjConnection *dst, const CjRemoteTableDdl *ddl, const char *qualified,
			   const char *marker, const char *context)
{
	ListCell   *lc;

	foreach(lc, ddl->finish)
		cj_exec_command(dst, (char *) lfirst(lc), context);
	if (marker == NULL && ddl->comment != NULL)
		cj_exec_command(dst, cj_twin_comment_sql(qualified, ddl->comment), context);
}

/* see remote_table_ddl.h */
char *
cj_twin_comment_sql(const char *qualified, const char *comment)
{
	return psprintf("COMMENT ON TABLE %s IS %s", qualified,
					comment ? quote_literal_cstr(comment) : "NULL");
}
