/*
 * ddl_view.c
 *		The <table>_live view as a catalog object, for the DDL follow-up
 *		(ddl_events.c, ddl_follow.c): finding it, its options, grants and row
 *		security, recreating it with the same name, owner, grants and
 *		comment, and running our own statements with a pinned search_path
 *		(ttl_own_ddl makes the event triggers they fire return at once).
 *
 * Rights and locking: statements run as the current role (who passed
 * ALTER TABLE's checks) with search_path pg_catalog, pg_temp; the view's
 * relacl is copied directly in pg_class; registry writes go through
 * ttl_registry_execute (as the extension's owner).
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_rewrite.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/comment.h"
#include "commands/event_trigger.h"
#include "commands/trigger.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parse_func.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "base/run_as.h"
#include "ddl/ddl.h"
#include "registry/registry.h"

/* > 0 while we run our own DDL: the event triggers it fires do nothing. */
int	ttl_own_ddl = 0;

/* ---------------------------------------------------------------------------
 * Running our statements.
 * ---------------------------------------------------------------------------
 */

/*
 * Run one statement as the current role with search_path pinned to
 * pg_catalog, pg_temp; event triggers it fires see ttl_own_ddl and return.
 */
void
ttl_run_pinned(const char *sql)
{
	int			nestlevel = ttl_pin_search_path();

	ttl_own_ddl++;
	PG_TRY();
	{
		int			rc;

		ttl_spi_connect();
		rc = SPI_execute(sql, false, 0);
		if (rc < 0)
			elog(ERROR, "ttl statement failed: %s", SPI_result_code_string(rc));
		SPI_finish();
	}
	PG_FINALLY();
	{
		ttl_own_ddl--;
	}
	PG_END_TRY();
	AtEOXact_GUC(true, nestlevel);
	CommandCounterIncrement();
}

/* The live view of a container as registered, or InvalidOid. */
Oid
ttl_registered_view(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	Oid			view = InvalidOid;
	int			nestlevel = ttl_pin_search_path();

	ttl_spi_connect();
	if (SPI_execute_with_args("SELECT r.live_view::pg_catalog.oid FROM ttl.registry r"
							  " WHERE r.relid::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
							  1, argtypes, values, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
									  1, &isnull);

		if (!isnull)
			view = DatumGetObjectId(d);
	}
	SPI_finish();
	AtEOXact_GUC(true, nestlevel);
	if (OidIsValid(view) && get_rel_relkind(view) != RELKIND_VIEW)
		view = InvalidOid;
	return view;
}

char *
ttl_qualified_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

bool
ttl_relation_has_row_security(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	bool		rls;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	rls = ((Form_pg_class) GETSTRUCT(tup))->relrowsecurity;
	ReleaseSysCache(tup);
	return rls;
}

/* The view's reloptions as the contents of a WITH (...) clause. */
char *
ttl_view_options_text(Oid view)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(view));
	Datum		d;
	bool		isnull;
	StringInfoData buf;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", view);
	initStringInfo(&buf);
	d = SysCacheGetAttr(RELOID, tup, Anum_pg_class_reloptions, &isnull);
	if (!isnull)
	{
		Datum	   *items;
		int			n;
		int			i;

		deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
						  &items, NULL, &n);
		for (i = 0; i < n; i++)
		{
			char	   *opt = TextDatumGetCString(items[i]);
			char	   *eq = strchr(opt, '=');

			if (eq == NULL)
				continue;
			*eq = '\0';
			appendStringInfo(&buf, "%s%s = %s", buf.len > 0 ? ", " : "",
							 quote_identifier(opt), quote_literal_cstr(eq + 1));
		}
	}
	ReleaseSysCache(tup);
	if (buf.len == 0)
		appendStringInfoString(&buf, "security_barrier = 'true'");
	return buf.data;
}

Acl *
ttl_relation_acl(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Datum		d;
	bool		isnull;
	Acl		   *acl = NULL;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	d = SysCacheGetAttr(RELOID, tup, Anum_pg_class_relacl, &isnull);
	if (!isnull)
		acl = DatumGetAclPCopy(d);
	ReleaseSysCache(tup);
	return acl;
}

/*
 * Give a freshly created relation the privileges its predecessor had (SQL
 * cannot copy a whole ACL with its grantors), with the shared dependencies
 * on the grantees that GRANT would record.
 */
static void
set_relation_acl(Oid relid, Acl *acl, Oid owner)
{
	Relation	rel = table_open(RelationRelationId, RowExclusiveLock);
	HeapTuple	tup = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(relid));
	Datum		values[Natts_pg_class] = {0};
	bool		nulls[Natts_pg_class] = {0};
	bool		replace[Natts_pg_class] = {0};
	HeapTuple	newtup;
	Oid		   *members;
	int			nmembers;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	replace[Anum_pg_class_relacl - 1] = true;
	values[Anum_pg_class_relacl - 1] = PointerGetDatum(acl);
	newtup = heap_modify_tuple(tup, RelationGetDescr(rel), values, nulls, replace);
	CatalogTupleUpdate(rel, &newtup->t_self, newtup);
	nmembers = aclmembers(acl, &members);
	updateAclDependencies(RelationRelationId, relid, 0, owner,
						  0, NULL, nmembers, members);
	table_close(rel, RowExclusiveLock);
	CommandCounterIncrement();
}

char *
ttl_view_definition_sql(Oid relid, const char *doc_column)
{
	return psprintf("SELECT * FROM %s WHERE ttl.live(%s, '%u'::pg_catalog.regclass)",
					ttl_qualified_name(relid), quote_identifier(doc_column), relid);
}

static void
set_registry_view(Oid relid, Oid view)
{
	Oid			argtypes[2] = {OIDOID, OIDOID};
	Datum		values[2] = {ObjectIdGetDatum(relid), ObjectIdGetDatum(view)};

	ttl_registry_execute("UPDATE ttl.registry SET live_view = $2"
						 " WHERE relid::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
						 2, argtypes, values, NULL, NULL);
}

/* Create the view dropped at ddl_command_start, as it was. */
Oid
ttl_recreate_view(PendingCommand *p, TtlContainer *c)
{
	char	   *name = quote_qualified_identifier(get_namespace_name(p->view_nsp),
												  p->view_name);
	Oid			view;
	Oid			owner = ttl_table_owner(p->relid);
	Acl		   *acl = p->view_acl;

	ttl_run_pinned(psprintf("CREATE VIEW %s WITH (%s) AS %s", name, p->view_options,
							ttl_view_definition_sql(p->relid, NameStr(c->doc_column))));
	view = get_relname_relid(p->view_name, p->view_nsp);
	if (!OidIsValid(view))
		elog(ERROR, "recreated live view %s not found", name);
	if (owner != GetUserId())
		ttl_run_pinned(psprintf("ALTER VIEW %s OWNER TO %s", name,
								quote_identifier(GetUserNameFromId(owner, false))));
	if (acl != NULL)
	{
		if (p->view_owner != owner)
			acl = aclnewowner(acl, p->view_owner, owner);
		set_relation_acl(view, acl, owner);
	}
	if (p->view_comment != NULL)
		CreateComments(view, RelationRelationId, 0, p->view_comment);
	set_registry_view(p->relid, view);
	return view;
}
