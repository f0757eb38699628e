/*
 * ddl_events.c
 *		Containers follow their table through ALTER TABLE: the event trigger
 *		functions ttl._ddl_start() (ddl_command_start) and ttl._ddl_end()
 *		(ddl_command_end), and ttl._follow_table() which applies the same
 *		follow-up to one container (the upgrade script calls it).
 *
 * What follows the table (all for a table that is a container):
 *   - ADD COLUMN: the column appears in <t>_live (CREATE OR REPLACE VIEW);
 *   - RENAME COLUMN: the view's column is renamed too; for the document
 *     column also ttl.registry.doc_column and the argument of the stamping
 *     trigger (pg_trigger.tgargs, on the table and its partitions);
 *   - DROP COLUMN / ALTER COLUMN TYPE of another column: the view depends
 *     on every column, so it is dropped at ddl_command_start and created
 *     again at ddl_command_end with the same name, options, owner, grants
 *     and comment (refused with a clear error when other objects depend on
 *     the view); of the document column: refused (0A000);
 *   - ENABLE/DISABLE ROW LEVEL SECURITY: the view is security_invoker
 *     exactly while the table has relrowsecurity;
 *   - OWNER TO: the view gets the same owner;
 *   - RENAME TO: <old>_live becomes <new>_live (a WARNING and no rename when
 *     that name is taken or too long);
 *   - SET SCHEMA: the view moves along (a WARNING when the name is taken).
 * Column changes recurse to partitions and inheritance children: those of
 * them that are containers follow too.
 *
 * Rights: the functions are not SECURITY DEFINER; they run as the role
 * running the ALTER TABLE, who has just passed the same permission checks
 * on the table, and every statement they run pins search_path to
 * pg_catalog, pg_temp and names everything schema-qualified (none of it
 * runs user code).  Registry writes go through ttl_registry_execute (as the
 * extension's owner); tgargs and the view's relacl are copied directly in
 * the catalogs, which SQL cannot do.
 *
 * Locking: ddl_command_start runs before ALTER TABLE locks the table; the
 * table is re-identified by OID at ddl_command_end, where ALTER TABLE holds
 * its lock.  The statements run here lock the view as DDL does.  Our own
 * DDL fires event triggers again: a counter (own_ddl) makes both functions
 * return at once while it runs.
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
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_rewrite.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "catalog/objectaddress.h"
#include "commands/comment.h"
#include "commands/event_trigger.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parse_func.h"
#include "rewrite/rewriteSupport.h"
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
#include "utils/resowner.h"
#include "utils/syscache.h"

#include "registry.h"
#include "run_as.h"

#define STAMP_TRIGGER "zzz_ttl_stamp"

/* > 0 while we run our own DDL: the event triggers it fires do nothing. */
static int	own_ddl = 0;

/*
 * What ddl_command_start learnt about a command, for ddl_command_end of the
 * same command (same parse tree, same transaction).  Kept in
 * TopMemoryContext; entries of an earlier transaction are stale (their
 * command failed) and are dropped.
 */
typedef struct PendingCommand
{
	Node	   *parsetree;
	LocalTransactionId lxid;
	Oid			relid;			/* the container */
	char	   *old_relname;	/* its name before the command */
	bool		rebuild;		/* the view was dropped: create it again */
	char	   *view_name;		/* the dropped view: */
	Oid			view_nsp;
	Oid			view_owner;
	Acl		   *view_acl;		/* NULL: default privileges */
	char	   *view_comment;
	char	   *view_options;	/* WITH (...) contents */
} PendingCommand;

static List *pending = NIL;

/* ---------------------------------------------------------------------------
 * Running our statements.
 * ---------------------------------------------------------------------------
 */

/*
 * Run one statement as the current role with search_path pinned to
 * pg_catalog, pg_temp; event triggers it fires see own_ddl and return.
 */
static void
run_pinned(const char *sql)
{
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	own_ddl++;
	PG_TRY();
	{
		int			rc;

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		rc = SPI_execute(sql, false, 0);
		if (rc < 0)
			elog(ERROR, "ttl statement failed: %s", SPI_result_code_string(rc));
		SPI_finish();
	}
	PG_FINALLY();
	{
		own_ddl--;
	}
	PG_END_TRY();
	AtEOXact_GUC(true, nestlevel);
	CommandCounterIncrement();
}

/* The live view of a container as registered, or InvalidOid. */
static Oid
registered_view(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	Oid			view = InvalidOid;
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
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

static char *
qualified_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

static char *
display_name(Oid relid)
{
	return qualified_name(relid);
}

static bool
relation_has_row_security(Oid relid)
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
static char *
view_options_text(Oid view)
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

static Acl *
relation_acl(Oid relid)
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

/* ---------------------------------------------------------------------------
 * Identifying the command's table.
 * ---------------------------------------------------------------------------
 */

/* The relation an ALTER TABLE-tagged command names, or NULL. */
static RangeVar *
command_relation(Node *parsetree)
{
	switch (nodeTag(parsetree))
	{
		case T_AlterTableStmt:
			return ((AlterTableStmt *) parsetree)->relation;
		case T_RenameStmt:
			return ((RenameStmt *) parsetree)->relation;
		case T_AlterObjectSchemaStmt:
			return ((AlterObjectSchemaStmt *) parsetree)->relation;
		default:
			return NULL;
	}
}

/*
 * Forget entries of earlier transactions and any entry of this parse tree
 * (a command that failed inside a subtransaction left it; its memory may
 * now hold another command): ddl_command_start always comes first.
 */
static void
forget_stale_pending(Node *parsetree)
{
	ListCell   *lc;

	foreach(lc, pending)
	{
		PendingCommand *p = lfirst(lc);

		if (p->lxid != MyProc->lxid || p->parsetree == parsetree)
		{
			pending = foreach_delete_current(pending, lc);
			pfree(p);
		}
	}
}

/* The entries of this command, taken off the list. */
static List *
take_pending(Node *parsetree)
{
	ListCell   *lc;
	List	   *mine = NIL;

	foreach(lc, pending)
	{
		PendingCommand *p = lfirst(lc);

		if (p->parsetree == parsetree && p->lxid == MyProc->lxid)
		{
			pending = foreach_delete_current(pending, lc);
			mine = lappend(mine, p);
		}
	}
	return mine;
}

/* ---------------------------------------------------------------------------
 * ddl_command_start: refuse what cannot be followed, drop the view when a
 * column it depends on is dropped or retyped.
 * ---------------------------------------------------------------------------
 */

static void
refuse_document_change(Oid relid, const char *doc_column, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot %s the document column \"%s\" of ttl container \"%s\"",
					what, doc_column, display_name(relid)),
			 errdetail("The stamping trigger, the purge indexes and the live view of the container use it."),
			 errhint("Run ttl.disable() on the table first.")));
}

/*
 * The view can be dropped and created again only if nothing but its own
 * rule and row type depends on it (a user's view, function, trigger or rule
 * on it would be lost or block the drop).
 */
static void
check_view_droppable(Oid relid, Oid view)
{
	Oid			rowtype = get_rel_type_id(view);
	Oid			refs[2] = {view, rowtype};
	Oid			refclasses[2] = {RelationRelationId, TypeRelationId};
	Relation	dep = table_open(DependRelationId, AccessShareLock);
	int			i;

	for (i = 0; i < 2; i++)
	{
		ScanKeyData key[2];
		SysScanDesc scan;
		HeapTuple	tup;

		ScanKeyInit(&key[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber,
					F_OIDEQ, ObjectIdGetDatum(refclasses[i]));
		ScanKeyInit(&key[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber,
					F_OIDEQ, ObjectIdGetDatum(refs[i]));
		scan = systable_beginscan(dep, DependReferenceIndexId, true, NULL, 2, key);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			Form_pg_depend d = (Form_pg_depend) GETSTRUCT(tup);
			ObjectAddress obj;

			/* the row type and its array type belong to the view */
			if (d->classid == TypeRelationId && d->deptype == DEPENDENCY_INTERNAL)
				continue;
			/* the view's own _RETURN rule */
			if (d->classid == RewriteRelationId &&
				get_rewrite_oid(view, ViewSelectRuleName, true) == d->objid)
				continue;
			obj.classId = d->classid;
			obj.objectId = d->objid;
			obj.objectSubId = d->objsubid;
			ereport(ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("cannot change the columns of ttl container \"%s\" because other objects depend on its live view %s",
							display_name(relid), display_name(view)),
					 errdetail("%s depends on the view, which must be created again for this change.",
							   getObjectDescription(&obj, false)),
					 errhint("Drop the dependent objects first, or run ttl.disable() before the change and ttl.enable() after it.")));
		}
		systable_endscan(scan);
	}
	table_close(dep, AccessShareLock);
}

/* Does an ALTER TABLE drop or retype a column? Refuse it for the document. */
static bool
needs_rebuild(AlterTableStmt *stmt, Oid relid, const char *doc_column)
{
	ListCell   *lc;
	bool		rebuild = false;

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst(lc);

		if (cmd->subtype != AT_DropColumn && cmd->subtype != AT_AlterColumnType)
			continue;
		if (cmd->name != NULL && strcmp(cmd->name, doc_column) == 0)
			refuse_document_change(relid, doc_column,
								   cmd->subtype == AT_DropColumn ? "drop" : "change the type of");
		rebuild = true;
	}
	return rebuild;
}

static void
drop_view_for_rebuild(PendingCommand *p, Oid relid, Oid view)
{
	MemoryContext old;
	char	   *comment;
	Acl		   *acl;

	check_view_droppable(relid, view);
	old = MemoryContextSwitchTo(TopMemoryContext);
	p->view_name = pstrdup(get_rel_name(view));
	p->view_nsp = get_rel_namespace(view);
	p->view_owner = ttl_table_owner(view);
	acl = relation_acl(view);
	p->view_acl = acl ? DatumGetAclPCopy(PointerGetDatum(acl)) : NULL;
	comment = GetComment(view, RelationRelationId, 0);
	p->view_comment = comment ? pstrdup(comment) : NULL;
	p->view_options = pstrdup(view_options_text(view));
	MemoryContextSwitchTo(old);
	run_pinned(psprintf("DROP VIEW %s", qualified_name(view)));
	p->rebuild = true;
}

/* Note what ddl_command_end needs about one container the command alters. */
static void
start_container(Node *parsetree, Oid relid)
{
	TtlContainer c;
	PendingCommand *p;
	MemoryContext old;

	if (!ttl_lookup_container(relid, &c))
		return;
	/* someone who may not alter the table gets ALTER TABLE's own error */
	if (!pg_class_ownercheck(relid, GetUserId()))
		return;

	old = MemoryContextSwitchTo(TopMemoryContext);
	p = palloc0(sizeof(PendingCommand));
	p->parsetree = parsetree;
	p->lxid = MyProc->lxid;
	p->relid = relid;
	p->old_relname = pstrdup(get_rel_name(relid));
	MemoryContextSwitchTo(old);

	if (IsA(parsetree, AlterTableStmt) &&
		needs_rebuild((AlterTableStmt *) parsetree, relid, NameStr(c.doc_column)))
	{
		Oid			view = registered_view(relid);

		if (OidIsValid(view))
			drop_view_for_rebuild(p, relid, view);
	}

	old = MemoryContextSwitchTo(TopMemoryContext);
	pending = lappend(pending, p);
	MemoryContextSwitchTo(old);
}

/*
 * The containers a command may change: the table it names and, as column
 * changes recurse to partitions and inheritance children, those of them
 * that are containers.
 */
PG_FUNCTION_INFO_V1(ttl_ddl_start);
Datum
ttl_ddl_start(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata = (EventTriggerData *) fcinfo->context;
	RangeVar   *rv;
	Oid			relid;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "ttl._ddl_start() must be called as an event trigger");
	if (own_ddl > 0)
		PG_RETURN_NULL();
	forget_stale_pending(trigdata->parsetree);
	rv = command_relation(trigdata->parsetree);
	if (rv == NULL)
		PG_RETURN_NULL();
	relid = RangeVarGetRelid(rv, NoLock, true);
	if (!OidIsValid(relid))
		PG_RETURN_NULL();
	if (rv->inh && has_subclass(relid))
	{
		ListCell   *lc;

		foreach(lc, find_all_inheritors(relid, NoLock, NULL))
			start_container(trigdata->parsetree, lfirst_oid(lc));
	}
	else
		start_container(trigdata->parsetree, relid);
	PG_RETURN_NULL();
}

/* ---------------------------------------------------------------------------
 * ddl_command_end: bring the container's objects in line with the table.
 * ---------------------------------------------------------------------------
 */

static char *
view_definition_sql(Oid relid, const char *doc_column)
{
	return psprintf("SELECT * FROM %s WHERE ttl.live(%s, '%u'::pg_catalog.regclass)",
					qualified_name(relid), quote_identifier(doc_column), relid);
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
static Oid
recreate_view(PendingCommand *p, TtlContainer *c)
{
	char	   *name = quote_qualified_identifier(get_namespace_name(p->view_nsp),
												  p->view_name);
	Oid			view;
	Oid			owner = ttl_table_owner(p->relid);
	Acl		   *acl = p->view_acl;

	run_pinned(psprintf("CREATE VIEW %s WITH (%s) AS %s", name, p->view_options,
						view_definition_sql(p->relid, NameStr(c->doc_column))));
	view = get_relname_relid(p->view_name, p->view_nsp);
	if (!OidIsValid(view))
		elog(ERROR, "recreated live view %s not found", name);
	if (owner != GetUserId())
		run_pinned(psprintf("ALTER VIEW %s OWNER TO %s", name,
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
		Oid			trigoid = get_trigger_oid(rel, STAMP_TRIGGER, true);
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
			Datum		values2[Natts_pg_trigger] = {0};
			bool		nulls[Natts_pg_trigger] = {0};
			bool		replace[Natts_pg_trigger] = {0};
			Size		len = strlen(newname) + 1;	/* with its terminator */
			bytea	   *args = palloc(VARHDRSZ + len);
			HeapTuple	newtup;

			SET_VARSIZE(args, VARHDRSZ + len);
			memcpy(VARDATA(args), newname, len);
			replace[Anum_pg_trigger_tgargs - 1] = true;
			values2[Anum_pg_trigger_tgargs - 1] = PointerGetDatum(args);
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
		run_pinned(psprintf("ALTER VIEW %s OWNER TO %s", qualified_name(view),
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
	char	   *view_name = qualified_name(view);

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

			run_pinned(psprintf("ALTER VIEW %s RENAME COLUMN %s TO %s", view_name,
								quote_identifier(lfirst(lc1)), tmp));
			lfirst(lc1) = tmp;
		}
	}
	forboth(lc1, from, lc2, to)
		run_pinned(psprintf("ALTER VIEW %s RENAME COLUMN %s TO %s", view_name,
							quote_identifier(lfirst(lc1)),
							quote_identifier(lfirst(lc2))));

	/*
	 * Not from an extension script (the upgrade): CREATE OR REPLACE there
	 * would try to make the user's view a member of the extension.
	 */
	if (grow && !creating_extension)
		run_pinned(psprintf("CREATE OR REPLACE VIEW %s WITH (%s) AS %s",
							qualified_name(view), view_options_text(view),
							view_definition_sql(relid, NameStr(c->doc_column))));
}

/* security_invoker exactly while the table has row-level security on. */
static void
follow_row_security(Oid relid, Oid view)
{
	Relation	vrel = relation_open(view, AccessShareLock);
	bool		invoker = RelationHasSecurityInvoker(vrel);
	bool		rls = relation_has_row_security(relid);

	relation_close(vrel, AccessShareLock);
	if (invoker == rls)
		return;
	run_pinned(psprintf(rls ? "ALTER VIEW %s SET (security_invoker = true)"
						: "ALTER VIEW %s RESET (security_invoker)",
						qualified_name(view)));
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
						display_name(view), display_name(relid)),
				 errdetail("The name \"%s\" would be longer than %d bytes.",
						   newname, NAMEDATALEN - 1)));
		return;
	}
	if (relation_name_taken(newname, nsp))
	{
		ereport(WARNING,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("live view %s of ttl container \"%s\" keeps its name",
						display_name(view), display_name(relid)),
				 errdetail("A relation or type \"%s\" already exists in schema \"%s\".",
						   newname, get_namespace_name(nsp))));
		return;
	}
	run_pinned(psprintf("ALTER VIEW %s RENAME TO %s", qualified_name(view),
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
						display_name(view), display_name(relid)),
				 errdetail("A relation or type \"%s\" already exists in schema \"%s\".",
						   name, get_namespace_name(nsp))));
		return;
	}
	run_pinned(psprintf("ALTER VIEW %s SET SCHEMA %s", qualified_name(view),
						quote_identifier(get_namespace_name(nsp))));
}

/* Everything that follows the table, for one container. */
static void
follow_table(Oid relid, PendingCommand *p, Node *parsetree)
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
		view = recreate_view(p, &c);
	else
		view = registered_view(relid);
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

PG_FUNCTION_INFO_V1(ttl_ddl_end);
Datum
ttl_ddl_end(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata = (EventTriggerData *) fcinfo->context;
	List	   *mine;
	ListCell   *lc;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "ttl._ddl_end() must be called as an event trigger");
	if (own_ddl > 0)
		PG_RETURN_NULL();
	mine = take_pending(trigdata->parsetree);
	foreach(lc, mine)
	{
		PendingCommand *p = lfirst(lc);

		follow_table(p->relid, p, trigdata->parsetree);
		pfree(p);
	}
	list_free(mine);
	PG_RETURN_NULL();
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
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	ttl_check_container_owner(relid);
	if (!creating_extension)
	{
		follow_table(relid, NULL, NULL);
		PG_RETURN_VOID();
	}

	/*
	 * From the upgrade script: a container that cannot be brought in line
	 * must not stop ALTER EXTENSION UPDATE; it gets a WARNING, and follows
	 * its table from its next ALTER TABLE on.
	 */
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		follow_table(relid, NULL, NULL);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		ereport(WARNING,
				(errmsg("live view of ttl container \"%s\" not brought in line: %s",
						display_name(relid), edata->message),
				 errhint("Check its view by hand, e.g. ALTER VIEW ... SET (security_invoker = true) when the table has row-level security.")));
	}
	PG_END_TRY();
	PG_RETURN_VOID();
}
