/*
 * ddl_triggers.c
 *		No BEFORE ROW trigger of a container fires after ttl's stamp
 *		trigger: checked at ddl_command_end of CREATE TRIGGER, ALTER
 *		TRIGGER ... RENAME and ALTER TABLE ... ATTACH PARTITION (ttl._ddl_end,
 *		ddl_events.c), which also covers ttl.enable (its CREATE TRIGGER of
 *		the stamp trigger fires the same event trigger).
 *
 * Why: rule 10 judges a row's unique keys in the stamp trigger (stamp/);
 * a BEFORE ROW INSERT or UPDATE trigger that fires after it (triggers
 * fire in the byte order of their names) could change the row after it
 * was judged, so the keys stored would not be the keys probed.  Nothing of
 * ttl can run after the last BEFORE ROW trigger, so such a trigger is
 * refused (0A000) on the table, each of its partitions and each table
 * they are partitions of; disabled triggers too (they may be enabled
 * later without DDL this sees).  Statement triggers, AFTER and INSTEAD
 * OF triggers and BEFORE DELETE triggers never see a row ttl judges.
 *
 * Locking: runs where the command holds its lock on the table; the
 * partitions and pg_trigger are read with AccessShareLock.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

#include "ddl/ddl.h"

/* A BEFORE ROW trigger for INSERT or UPDATE: it sees the row ttl stamps. */
static bool
sees_stamped_row(Form_pg_trigger t)
{
	return TRIGGER_FOR_ROW(t->tgtype) && TRIGGER_FOR_BEFORE(t->tgtype) &&
		(TRIGGER_FOR_INSERT(t->tgtype) || TRIGGER_FOR_UPDATE(t->tgtype));
}

/* Refuse a trigger of relid that fires after its stamp trigger, if it has one. */
static void
check_relation(Oid relid, Oid stamp)
{
	Relation	trigrel = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	NameData	stamp_name;
	List	   *candidates = NIL;
	ListCell   *lc;
	bool		stamped = false;

	ScanKeyInit(&key, Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	/* in name order, the order triggers fire in */
	scan = systable_beginscan(trigrel, TriggerRelidNameIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_trigger t = (Form_pg_trigger) GETSTRUCT(tup);

		if (t->tgfoid == stamp && sees_stamped_row(t) && !stamped)
		{
			stamp_name = t->tgname;
			stamped = true;
		}
		else if (stamped && sees_stamped_row(t))
			candidates = lappend(candidates, pstrdup(NameStr(t->tgname)));
	}
	systable_endscan(scan);
	table_close(trigrel, AccessShareLock);

	foreach(lc, candidates)
	{
		const char *name = lfirst(lc);

		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("trigger \"%s\" of container table %s fires after ttl's trigger \"%s\"",
						name, quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
														 get_rel_name(relid)),
						NameStr(stamp_name)),
				 errdetail("A BEFORE ROW trigger for INSERT or UPDATE that fires after \"%s\" could change the row after ttl judged its unique keys (rule 10).",
						   NameStr(stamp_name)),
				 errhint("Name the trigger so that it sorts before \"%s\": triggers fire in the byte order of their names.",
						 NameStr(stamp_name))));
	}
	list_free_deep(candidates);
}

/*
 * Check relid, its partitions and the tables it is a partition of (the
 * stamp trigger of a partitioned container is cloned onto each leaf).
 */
static void
check_tree(Oid relid)
{
	Oid			stamp;
	List	   *rels;
	ListCell   *lc;

	stamp = LookupFuncName(list_make2(makeString("ttl"), makeString("stamp")), 0, NULL, true);
	if (!OidIsValid(stamp) || get_rel_relkind(relid) == '\0')
		return;
	rels = find_all_inheritors(relid, AccessShareLock, NULL);
	if (get_rel_relispartition(relid))
		rels = list_concat(rels, get_partition_ancestors(relid));
	foreach(lc, rels)
		check_relation(lfirst_oid(lc), stamp);
	list_free(rels);
}

/* At ddl_command_end (ttl._ddl_end): the commands that can add such a trigger. */
void
ttl_check_trigger_order(Node *parsetree)
{
	RangeVar   *rv = NULL;
	Oid			relid;

	if (IsA(parsetree, CreateTrigStmt))
		rv = ((CreateTrigStmt *) parsetree)->relation;
	else if (IsA(parsetree, RenameStmt) &&
			 ((RenameStmt *) parsetree)->renameType == OBJECT_TRIGGER)
		rv = ((RenameStmt *) parsetree)->relation;
	else if (IsA(parsetree, AlterTableStmt))
	{
		ListCell   *lc;

		foreach(lc, ((AlterTableStmt *) parsetree)->cmds)
		{
			AlterTableCmd *cmd = lfirst(lc);

			if (cmd->subtype == AT_AttachPartition)
			{
				relid = RangeVarGetRelid(((PartitionCmd *) cmd->def)->name, NoLock, true);
				if (OidIsValid(relid))
					check_tree(relid);
			}
		}
		return;
	}
	if (rv == NULL)
		return;
	relid = RangeVarGetRelid(rv, NoLock, true);
	if (OidIsValid(relid))
		check_tree(relid);
}
