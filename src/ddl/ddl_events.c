/*
 * ddl_events.c
 *		Containers follow their table through ALTER TABLE: the event trigger
 *		functions ttl._ddl_start() (ddl_command_start) and ttl._ddl_end()
 *		(ddl_command_end).  This file holds the event trigger functions and
 *		what ddl_command_start does; the follow-up itself (also
 *		ttl._follow_table(), which the upgrade script calls) is in
 *		ddl_follow.c, and the view as a catalog object (its options, grants,
 *		recreation, our own pinned statements) in ddl_view.c.
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
 *   - SET SCHEMA: the view moves along (a WARNING when the name is taken);
 *   - RENAME TO of an index ttl made (ALTER INDEX or ALTER TABLE, at
 *     ddl_command_start, which 1.8's event trigger ttl_index_ddl_start
 *     also fires for ALTER INDEX): its row in ttl.indexes takes the new
 *     name (registry/index_owner.c).
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
 * DDL fires event triggers again: a counter (ttl_own_ddl, ddl_view.c) makes both functions
 * return at once while it runs.
 */
#include "postgres.h"
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
#include "catalog/pg_depend.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_rewrite.h"
#include "catalog/pg_type.h"
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
#include "utils/syscache.h"

#include "base/compat.h"
#include "base/run_as.h"
#include "ddl/ddl.h"
#include "registry/index_owner.h"
#include "registry/leaf_owner.h"
#include "registry/registry.h"

static List *pending = NIL;

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

		if (p->lxid != ttl_proc_lxid(MyProc) || p->parsetree == parsetree)
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

		if (p->parsetree == parsetree && p->lxid == ttl_proc_lxid(MyProc))
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
					what, doc_column, ttl_qualified_name(relid)),
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
							ttl_qualified_name(relid), ttl_qualified_name(view)),
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
	acl = ttl_relation_acl(view);
	p->view_acl = acl ? DatumGetAclPCopy(PointerGetDatum(acl)) : NULL;
	comment = GetComment(view, RelationRelationId, 0);
	p->view_comment = comment ? pstrdup(comment) : NULL;
	p->view_options = pstrdup(ttl_view_options_text(view));
	MemoryContextSwitchTo(old);
	ttl_run_pinned(psprintf("DROP VIEW %s", ttl_qualified_name(view)));
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
	if (!ttl_class_ownercheck(relid, GetUserId()))
		return;

	old = MemoryContextSwitchTo(TopMemoryContext);
	p = palloc0(sizeof(PendingCommand));
	p->parsetree = parsetree;
	p->lxid = ttl_proc_lxid(MyProc);
	p->relid = relid;
	p->old_relname = pstrdup(get_rel_name(relid));
	MemoryContextSwitchTo(old);

	if (IsA(parsetree, AlterTableStmt) &&
		needs_rebuild((AlterTableStmt *) parsetree, relid, NameStr(c.doc_column)))
	{
		Oid			view = ttl_registered_view(relid);

		if (OidIsValid(view))
			drop_view_for_rebuild(p, relid, view);
	}

	old = MemoryContextSwitchTo(TopMemoryContext);
	pending = lappend(pending, p);
	MemoryContextSwitchTo(old);
}

/*
 * ALTER INDEX / ALTER TABLE ... RENAME TO of an index: the record of the
 * indexes ttl made (registry/index_owner.c) follows, here where the old
 * name can still be matched.
 */
static void
follow_index_rename(Node *parsetree)
{
	RenameStmt *stmt;
	Oid			relid;
	char		relkind;

	if (!IsA(parsetree, RenameStmt))
		return;
	stmt = (RenameStmt *) parsetree;
	if ((stmt->renameType != OBJECT_INDEX && stmt->renameType != OBJECT_TABLE) ||
		stmt->relation == NULL || stmt->subname != NULL)
		return;
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	relkind = OidIsValid(relid) ? get_rel_relkind(relid) : '\0';
	if (relkind == RELKIND_INDEX || relkind == RELKIND_PARTITIONED_INDEX)
		ttl_follow_index_rename(relid, stmt->newname);
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
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function ttl._ddl_start() can only be called as an event trigger"),
				 errdetail("The event triggers of extension ttl run it to make containers follow ALTER TABLE; called directly it has nothing to follow.")));
	if (ttl_own_ddl > 0)
		PG_RETURN_NULL();
	forget_stale_pending(trigdata->parsetree);
	follow_index_rename(trigdata->parsetree);
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

/*
 * ATTACH PARTITION of a table another role owns, or OWNER TO on a leaf
 * (or on a container, whose leaves keep their owner): a WARNING for each
 * leaf of a container or of an archive left with another owner than the
 * container's (registry/leaf_owner.c).  Not refused: the batch checks
 * again under its lock, which is what holds (event triggers can be
 * bypassed), and skips such a leaf.
 */
static void
warn_owner_changes(Node *parsetree)
{
	AlterTableStmt *stmt;
	Oid			relid;
	char		relkind;
	ListCell   *lc;

	if (!IsA(parsetree, AlterTableStmt))
		return;
	stmt = (AlterTableStmt *) parsetree;
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	relkind = OidIsValid(relid) ? get_rel_relkind(relid) : '\0';
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		return;
	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

		if (cmd->subtype == AT_AttachPartition)
		{
			Oid			part = RangeVarGetRelid(((PartitionCmd *) cmd->def)->name,
												NoLock, true);

			if (OidIsValid(part))
				ttl_warn_foreign_leaves(part);
		}
		else if (cmd->subtype == AT_ChangeOwner)
			ttl_warn_foreign_leaves(relid);
	}
}

PG_FUNCTION_INFO_V1(ttl_ddl_end);
Datum
ttl_ddl_end(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata = (EventTriggerData *) fcinfo->context;
	List	   *mine;
	ListCell   *lc;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function ttl._ddl_end() can only be called as an event trigger"),
				 errdetail("The event triggers of extension ttl run it to make containers follow ALTER TABLE; called directly it has nothing to follow.")));
	if (ttl_own_ddl > 0)
		PG_RETURN_NULL();
	warn_owner_changes(trigdata->parsetree);
	/* no BEFORE ROW trigger fires after the stamp trigger (ddl_triggers.c) */
	ttl_check_trigger_order(trigdata->parsetree);
	mine = take_pending(trigdata->parsetree);
	foreach(lc, mine)
	{
		PendingCommand *p = lfirst(lc);

		ttl_follow_container(p->relid, p, trigdata->parsetree);
		pfree(p);
	}
	list_free(mine);
	PG_RETURN_NULL();
}
