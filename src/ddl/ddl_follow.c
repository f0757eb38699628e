/*
 * ddl_follow.c
 *		The follow-up of ddl_command_end (ddl_events.c): bring a container's
 *		objects in line with its table after ALTER TABLE (document column
 *		rename, also on a distributed container's shards, columns, row
 *		security, owner, table rename, schema), and
 *		ttl._follow_table(), the same follow-up for one container (the
 *		upgrade script calls it).
 *
 * Rights and locking: as in ddl_events.c.  ALTER TABLE holds the table's
 * lock at ddl_command_end; the statements run here (ddl_view.c) lock the
 * view as DDL does; tgargs is rewritten directly in pg_trigger (through
 * the codec, registry/trigger_args.c).
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
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
#include "commands/extension.h"
#include "commands/trigger.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parse_func.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "base/run_as.h"
#include "base/subxact.h"
#include "ddl/ddl.h"
#include "registry/policy.h"
#include "registry/registry.h"
#include "registry/trigger_args.h"

/* ---------------------------------------------------------------------------
 * ddl_command_end: bring the container's objects in line with the table.
 * ---------------------------------------------------------------------------
 */

/* A renamed document column: the registry and the stamping triggers. */
static void
follow_document_rename(Oid relid, const char *newname)
{
	Oid			argtypes[2] = {OIDOID, NAMEOID};
	Datum		values[2];
	NameData	name;
	List	   *rels;
	ListCell   *lc;
	Relation	trigrel;
	Oid			stamp_func;

	namestrcpy(&name, newname);
	values[0] = ObjectIdGetDatum(relid);
	values[1] = NameGetDatum(&name);
	ttl_registry_execute("UPDATE ttl.registry SET doc_column = $2"
						 " WHERE relid::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
						 2, argtypes, values, NULL, NULL);

	/*
	 * A distributed container's trigger carries the policy too (policy.c):
	 * replace it, which Citus does on every shard and every node's shell in
	 * this distributed transaction.  The shards' columns are renamed after
	 * this (Citus runs the ALTER TABLE on them after the coordinator's), a
	 * trigger's arguments are not checked against the columns.
	 */
	if (ttl_distribution_of(relid) == TTL_DIST_HASH)
	{
		CommandCounterIncrement();
		ttl_policy_push(relid);
		return;
	}

	/*
	 * The trigger's argument names the column: rewrite it in place (also in
	 * the clones on partitions), so that its enabled state, its place among
	 * the table's triggers and what pg_dump writes stay right.
	 */
	stamp_func = LookupFuncName(list_make2(makeString("ttl"), makeString("stamp")),
								0, NULL, true);
	rels = find_all_inheritors(relid, NoLock, NULL);
	trigrel = table_open(TriggerRelationId, RowExclusiveLock);
	foreach(lc, rels)
	{
		Oid			rel = lfirst_oid(lc);
		Oid			trigoid = get_trigger_oid(rel, TTL_STAMP_TRIGGER, true);
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	tup;

		if (!OidIsValid(trigoid))
			continue;
		ScanKeyInit(&key, Anum_pg_trigger_oid, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(trigoid));
		scan = systable_beginscan(trigrel, TriggerOidIndexId, true, NULL, 1, &key);
		tup = systable_getnext(scan);
		if (HeapTupleIsValid(tup) &&
			((Form_pg_trigger) GETSTRUCT(tup))->tgfoid == stamp_func)
		{
			Form_pg_trigger form = (Form_pg_trigger) GETSTRUCT(tup);
			Datum		values2[Natts_pg_trigger] = {0};
			bool		nulls[Natts_pg_trigger] = {0};
			bool		replace[Natts_pg_trigger] = {0};
			HeapTuple	newtup;
			bool		isnull;
			Datum		old = heap_getattr(tup, Anum_pg_trigger_tgargs,
										   RelationGetDescr(trigrel), &isnull);
			TtlTriggerArgs args;
			char	   *why;
			int16		nargs;

			/*
			 * Decoded and written again by the codec: the other arguments
			 * (the deadline property of rule 9) stay as they are, in the
			 * format of the installed SQL version.
			 */
			why = ttl_trigger_args_parse(form->tgnargs,
										 isnull ? NULL :
										 ttl_trigger_args_split(DatumGetByteaPP(old), form->tgnargs),
										 &args);
			if (why != NULL)
				ereport(ERROR,
						(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
						 errmsg("trigger \"%s\" of table %s has invalid arguments for ttl.stamp()",
								TTL_STAMP_TRIGGER,
								ttl_relation_display_name(rel)),
						 errdetail_internal("%s", why),
						 errhint("Run ttl.disable() and ttl.enable() again.")));
			namestrcpy(&args.doc_column, newname);
			replace[Anum_pg_trigger_tgargs - 1] = true;
			values2[Anum_pg_trigger_tgargs - 1] =
				PointerGetDatum(ttl_trigger_args_bytea(&args, &nargs));
			replace[Anum_pg_trigger_tgnargs - 1] = true;
			values2[Anum_pg_trigger_tgnargs - 1] = Int16GetDatum(nargs);
			newtup = heap_modify_tuple(tup, RelationGetDescr(trigrel), values2,
									   nulls, replace);
			CatalogTupleUpdate(trigrel, &newtup->t_self, newtup);
			CacheInvalidateRelcacheByRelid(rel);
		}
		systable_endscan(scan);
	}
	table_close(trigrel, RowExclusiveLock);
	CacheInvalidateRelcacheByRelid(relid);
	CommandCounterIncrement();
}

/* The view's owner is the table's. */
static void
follow_owner(Oid relid, Oid view)
{
	Oid			owner = ttl_table_owner(relid);

	if (ttl_table_owner(view) != owner)
		ttl_run_pinned(psprintf("ALTER VIEW %s OWNER TO %s", ttl_qualified_name(view),
								quote_identifier(GetUserNameFromId(owner, false))));
}

/*
 * The view's columns are the table's: rename those whose name differs at
 * the same position, and add those the table has beyond the view's.
 */
static void
follow_columns(Oid relid, Oid view, TtlContainer *c)
{
	Relation	table = relation_open(relid, AccessShareLock);
	Relation	vrel = relation_open(view, AccessShareLock);
	TupleDesc	td = RelationGetDescr(table);
	TupleDesc	vd = RelationGetDescr(vrel);
	int			t = 0;
	int			v;
	List	   *from = NIL;		/* view column names to change, */
	List	   *to = NIL;		/* and the table's names for them */
	bool		grow;
	ListCell   *lc1;
	ListCell   *lc2;
	char	   *view_name = ttl_qualified_name(view);

	for (v = 0; v < vd->natts; v++)
	{
		Form_pg_attribute va = TupleDescAttr(vd, v);

		while (t < td->natts && TupleDescAttr(td, t)->attisdropped)
			t++;
		if (t >= td->natts || va->atttypid != TupleDescAttr(td, t)->atttypid)
		{
			/* not the table's columns: a view redefined by hand, left alone */
			relation_close(vrel, AccessShareLock);
			relation_close(table, AccessShareLock);
			return;
		}
		if (strcmp(NameStr(va->attname), NameStr(TupleDescAttr(td, t)->attname)) != 0)
		{
			from = lappend(from, pstrdup(NameStr(va->attname)));
			to = lappend(to, pstrdup(NameStr(TupleDescAttr(td, t)->attname)));
		}
		t++;
	}
	while (t < td->natts && TupleDescAttr(td, t)->attisdropped)
		t++;
	grow = (t < td->natts);
	relation_close(vrel, AccessShareLock);
	relation_close(table, AccessShareLock);

	/*
	 * One rename is the usual case.  Several (names swapped by renames not
	 * followed, before 1.1) go through temporary names, so that no step
	 * collides with a name another step frees.
	 */
	if (list_length(from) > 1)
	{
		int			i = 0;

		foreach(lc1, from)
		{
			char	   *tmp = psprintf("ttl_rename_%d", ++i);

			ttl_run_pinned(psprintf("ALTER VIEW %s RENAME COLUMN %s TO %s", view_name,
									quote_identifier(lfirst(lc1)), tmp));
			lfirst(lc1) = tmp;
		}
	}
	forboth(lc1, from, lc2, to)
		ttl_run_pinned(psprintf("ALTER VIEW %s RENAME COLUMN %s TO %s", view_name,
								quote_identifier(lfirst(lc1)),
								quote_identifier(lfirst(lc2))));

	/*
	 * Not from an extension script (the upgrade): CREATE OR REPLACE there
	 * would try to make the user's view a member of the extension.
	 */
	if (grow && !creating_extension)
		ttl_run_pinned(psprintf("CREATE OR REPLACE VIEW %s WITH (%s) AS %s",
								ttl_qualified_name(view), ttl_view_options_text(view),
								ttl_view_definition_sql(relid, NameStr(c->doc_column))));
}

/* security_invoker exactly while the table has row-level security on. */
static void
follow_row_security(Oid relid, Oid view)
{
	Relation	vrel = relation_open(view, AccessShareLock);
	bool		invoker = RelationHasSecurityInvoker(vrel);
	bool		rls = ttl_relation_has_row_security(relid);

	relation_close(vrel, AccessShareLock);
	if (invoker == rls)
		return;
	ttl_run_pinned(psprintf(rls ? "ALTER VIEW %s SET (security_invoker = true)"
							: "ALTER VIEW %s RESET (security_invoker)",
							ttl_qualified_name(view)));
}

/*
 * Is a relation name taken in a schema?  A view's row type has its name,
 * so a type of that name blocks it as well.
 */
static bool
relation_name_taken(const char *name, Oid nsp)
{
	return OidIsValid(get_relname_relid(name, nsp)) ||
		OidIsValid(GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
								   CStringGetDatum(name), ObjectIdGetDatum(nsp)));
}

/* <old>_live follows a renamed table, unless the new name is taken. */
static void
follow_table_rename(Oid relid, Oid view, const char *old_relname)
{
	char	   *expected = psprintf("%s_live", old_relname);
	const char *relname = get_rel_name(relid);
	char	   *newname = psprintf("%s_live", relname);
	Oid			nsp = get_rel_namespace(view);

	if (strcmp(get_rel_name(view), expected) != 0 || strcmp(expected, newname) == 0)
		return;
	if (strlen(newname) >= NAMEDATALEN)
	{
		ereport(WARNING,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("live view %s of ttl container \"%s\" keeps its name",
						ttl_qualified_name(view), ttl_qualified_name(relid)),
				 errdetail("The name \"%s\" would be longer than %d bytes.",
						   newname, NAMEDATALEN - 1)));
		return;
	}
	if (relation_name_taken(newname, nsp))
	{
		ereport(WARNING,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("live view %s of ttl container \"%s\" keeps its name",
						ttl_qualified_name(view), ttl_qualified_name(relid)),
				 errdetail("A relation or type \"%s\" already exists in schema \"%s\".",
						   newname, get_namespace_name(nsp))));
		return;
	}
	ttl_run_pinned(psprintf("ALTER VIEW %s RENAME TO %s", ttl_qualified_name(view),
							quote_identifier(newname)));
}

/* The view lives in the table's schema. */
static void
follow_schema(Oid relid, Oid view)
{
	Oid			nsp = get_rel_namespace(relid);
	char	   *name = get_rel_name(view);

	if (get_rel_namespace(view) == nsp)
		return;
	if (relation_name_taken(name, nsp))
	{
		ereport(WARNING,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("live view %s of ttl container \"%s\" stays in its schema",
						ttl_qualified_name(view), ttl_qualified_name(relid)),
				 errdetail("A relation or type \"%s\" already exists in schema \"%s\".",
						   name, get_namespace_name(nsp))));
		return;
	}
	ttl_run_pinned(psprintf("ALTER VIEW %s SET SCHEMA %s", ttl_qualified_name(view),
							quote_identifier(get_namespace_name(nsp))));
}

/* Everything that follows the table, for one container. */
void
ttl_follow_container(Oid relid, PendingCommand *p, Node *parsetree)
{
	TtlContainer c;
	Oid			view;

	if (get_rel_relkind(relid) == '\0' || !ttl_lookup_container(relid, &c))
		return;
	if (parsetree != NULL && IsA(parsetree, RenameStmt) &&
		((RenameStmt *) parsetree)->renameType == OBJECT_COLUMN &&
		strcmp(((RenameStmt *) parsetree)->subname, NameStr(c.doc_column)) == 0)
	{
		follow_document_rename(relid, ((RenameStmt *) parsetree)->newname);
		namestrcpy(&c.doc_column, ((RenameStmt *) parsetree)->newname);
	}
	if (p != NULL && p->rebuild)
		view = ttl_recreate_view(p, &c);
	else
		view = ttl_registered_view(relid);
	if (!OidIsValid(view))
		return;
	follow_owner(relid, view);
	follow_columns(relid, view, &c);
	follow_row_security(relid, view);
	if (p != NULL && parsetree != NULL && IsA(parsetree, RenameStmt) &&
		((RenameStmt *) parsetree)->renameType == OBJECT_TABLE)
		follow_table_rename(relid, view, p->old_relname);
	if (parsetree != NULL && IsA(parsetree, AlterObjectSchemaStmt))
		follow_schema(relid, view);
}

static void
follow_step(void *arg)
{
	ttl_follow_container(*(Oid *) arg, NULL, NULL);
}

/*
 * ttl._follow_table(container): the same follow-up outside an ALTER TABLE
 * (the upgrade script brings containers enabled under 1.0 in line).  The
 * caller must own the table.
 */
PG_FUNCTION_INFO_V1(ttl_follow_table);
Datum
ttl_follow_table(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	ErrorData  *edata;

	ttl_check_container_owner(relid);
	if (!creating_extension)
	{
		ttl_follow_container(relid, NULL, NULL);
		PG_RETURN_VOID();
	}

	/*
	 * From the upgrade script: a container that cannot be brought in line
	 * must not stop ALTER EXTENSION UPDATE; it gets a WARNING, and follows
	 * its table from its next ALTER TABLE on.
	 */
	if (!ttl_run_in_subtransaction(follow_step, &relid, &edata))
	{
		ereport(WARNING,
				(errmsg("live view of ttl container \"%s\" not brought in line: %s",
						ttl_qualified_name(relid), edata->message),
				 errhint("Check its view by hand, e.g. ALTER VIEW ... SET (security_invoker = true) when the table has row-level security.")));
		FreeErrorData(edata);
	}
	PG_RETURN_VOID();
}
