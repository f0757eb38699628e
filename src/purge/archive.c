/*
 * archive.c
 *		Archive before purge (1.8): the fit of an archive to its
 *		container (ttl.set_archive checks it, and every purge statement of
 *		an archived container checks it again before it runs), the INSERT
 *		that moves the deleted rows into the archive in the statement of
 *		their delete (WITH d AS (DELETE ... RETURNING t.*) INSERT INTO
 *		archive (cols) SELECT cols FROM d), and the run of such a statement,
 *		whose error names the container and the archive.
 *
 * Why through the executor: the archive's triggers, constraints and,
 * when it is a container, ttl's stamp trigger fire, and a failing insert
 * fails the delete with it (the same statement for a statement deleter;
 * the same batch, in one transaction, for the direct deleter, whose
 * copies archive_rows.c inserts with the INSERT written here): a row is in
 * the container or in the archive, never both, never neither.
 *
 * DDL afterwards is not refused: a purge checks the fit before each
 * statement, and an archive that was dropped or no longer fits fails the
 * batch with an error naming what broke (ttl.stats.last_error, a WARNING
 * from the round): the container keeps its rows until the owner repairs
 * the archive or calls ttl.set_archive(container, NULL).
 *
 * Locking: the caller's, plus RowExclusiveLock on the archive, taken
 * (by a purge batch without waiting) before the fit is checked (the INSERT takes it anyway) and held to the
 * end of the transaction, so the checked definition is the one the INSERT
 * sees.  Runs as the container's owner (the caller switches), SPI
 * connected for ttl_archive_execute.
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "parser/parse_coerce.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "base/run_as.h"
#include "purge/archive.h"
#include "registry/registry.h"

/* 0A000 unless the archive is an ordinary permanent or partitioned table. */
static void
check_kind(Oid container, Oid archive)
{
	char		relkind = get_rel_relkind(archive);
	char		persistence = get_rel_persistence(archive);
	const char *what = NULL;

	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		what = relkind == RELKIND_VIEW ? "a view" :
			relkind == RELKIND_MATVIEW ? "a materialized view" :
			relkind == RELKIND_FOREIGN_TABLE ? "a foreign table" : "not a table";
	else if (persistence == RELPERSISTENCE_UNLOGGED)
		what = "unlogged";
	else if (persistence == RELPERSISTENCE_TEMP)
		what = "temporary";
	if (what != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("archive %s of container %s is %s",
						ttl_relation_display_name(archive),
						ttl_relation_display_name(container), what),
				 errdetail("An archive must be an ordinary permanent table or a partitioned table, so that archived rows survive a crash and every session sees them."),
				 errhint("Create the archive with CREATE TABLE, not UNLOGGED or TEMPORARY.")));
}

/* 0A000 when the archive is the container, one of its partitions or holds it. */
static void
check_not_itself(Oid container, Oid archive)
{
	List	   *below = find_all_inheritors(container, NoLock, NULL);
	List	   *above = find_all_inheritors(archive, NoLock, NULL);

	if (list_member_oid(below, archive) || list_member_oid(above, container))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("archive %s of container %s is the container, one of its partitions or a table that holds it",
						ttl_relation_display_name(archive),
						ttl_relation_display_name(container)),
				 errdetail("Purged rows would be inserted back into the table they were deleted from.")));
}

static void
check_owner(Oid container, Oid archive)
{
	if (ttl_table_owner(archive) != ttl_table_owner(container))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("archive %s of container %s has another owner",
						ttl_relation_display_name(archive),
						ttl_relation_display_name(container)),
				 errdetail("The purge inserts into the archive as the container's owner, who must own the archive too."),
				 errhint("ALTER TABLE %s OWNER TO %s.",
						 ttl_relation_display_name(archive),
						 quote_identifier(GetUserNameFromId(ttl_table_owner(container), false)))));
}

static void
column_misfit(Oid container, Oid archive, int sqlstate, const char *column,
			  const char *detail)
{
	ereport(ERROR,
			(errcode(sqlstate),
			 errmsg("archive %s of container %s does not fit at column \"%s\"",
					ttl_relation_display_name(archive),
					ttl_relation_display_name(container), column),
			 errdetail_internal("%s", detail)));
}

/*
 * Every column of the container has a column of the same name in the
 * archive that its value can be assigned to (42703, 42804); the archive's
 * other columns have defaults; no column of the archive is GENERATED ALWAYS
 * (42804).
 */
static void
check_columns(Oid container, Oid archive)
{
	Relation	crel = relation_open(container, NoLock);
	Relation	arel = relation_open(archive, NoLock);
	TupleDesc	cdesc = RelationGetDescr(crel);
	TupleDesc	adesc = RelationGetDescr(arel);
	int			i;

	for (i = 0; i < cdesc->natts; i++)
	{
		Form_pg_attribute catt = TupleDescAttr(cdesc, i);
		AttrNumber	anum;
		Form_pg_attribute aatt;
		Oid			from = catt->atttypid;

		if (catt->attisdropped)
			continue;
		anum = get_attnum(archive, NameStr(catt->attname));
		if (anum == InvalidAttrNumber || anum < 0)
			column_misfit(container, archive, ERRCODE_UNDEFINED_COLUMN, NameStr(catt->attname),
						  "The archive has no column of that name.");
		aatt = TupleDescAttr(adesc, anum - 1);
		if (!can_coerce_type(1, &from, &aatt->atttypid, COERCION_ASSIGNMENT))
			column_misfit(container, archive, ERRCODE_DATATYPE_MISMATCH, NameStr(catt->attname),
						  psprintf("A value of type %s cannot be assigned to the archive's column of type %s.",
								   format_type_be(catt->atttypid),
								   format_type_be(aatt->atttypid)));
	}
	for (i = 0; i < adesc->natts; i++)
	{
		Form_pg_attribute aatt = TupleDescAttr(adesc, i);
		bool		shared;

		if (aatt->attisdropped)
			continue;
		shared = get_attnum(container, NameStr(aatt->attname)) > 0;
		if (aatt->attgenerated != '\0' || aatt->attidentity == ATTRIBUTE_IDENTITY_ALWAYS)
			column_misfit(container, archive, ERRCODE_DATATYPE_MISMATCH, NameStr(aatt->attname),
						  "The archive's column is GENERATED ALWAYS: an archived row could not keep its value, nor would the column get one.");
		if (!shared && !aatt->atthasdef && aatt->attidentity == '\0')
			column_misfit(container, archive, ERRCODE_DATATYPE_MISMATCH, NameStr(aatt->attname),
						  "The archive's column is not one of the container's and has no default.");
	}
	relation_close(arel, NoLock);
	relation_close(crel, NoLock);
}

/*
 * Whether archive can take container's purged rows (SPEC, "After 1.6"):
 * it exists (42P01), is an ordinary permanent or partitioned table (0A000),
 * is neither the container nor one of its partitions (0A000), has the
 * container's owner (42501) and fits column by column (42703, 42804).
 * The chain of archives is ttl.set_archive's to check (archive_admin.c).
 * Takes RowExclusiveLock on the archive (see the file header); with nowait,
 * false when another holds a conflicting lock (DDL): a purge batch never
 * waits, it skips the container as busy.
 */
bool
ttl_archive_check_fit(Oid container, Oid archive, bool nowait)
{
	if (!nowait)
		LockRelationOid(archive, RowExclusiveLock);
	else if (!ConditionalLockRelationOid(archive, RowExclusiveLock))
		return false;
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(archive)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("archive of container %s (OID %u) does not exist",
						ttl_relation_display_name(container), archive),
				 errdetail("The container's purge moves its rows into the archive; it deletes nothing while the archive is missing."),
				 errhint("Set a new archive with ttl.set_archive(), or stop archiving with ttl.set_archive(container, NULL).")));
	check_kind(container, archive);
	check_not_itself(container, archive);
	check_owner(container, archive);
	check_columns(container, archive);
	return true;
}

/*
 * "INSERT INTO archive (cols) SELECT cols FROM <from>": every live column
 * of the container, by name, each name quoted once from pg_attribute.
 */
char *
ttl_archive_insert_sql(Oid container, Oid archive, const char *from)
{
	Relation	crel = relation_open(container, NoLock);
	TupleDesc	cdesc = RelationGetDescr(crel);
	StringInfoData cols;
	int			i;

	initStringInfo(&cols);
	for (i = 0; i < cdesc->natts; i++)
	{
		Form_pg_attribute catt = TupleDescAttr(cdesc, i);

		if (catt->attisdropped)
			continue;
		appendStringInfo(&cols, "%s%s", cols.len > 0 ? ", " : "",
						 quote_identifier(NameStr(catt->attname)));
	}
	relation_close(crel, NoLock);
	return psprintf("INSERT INTO %s (%s) SELECT %s FROM %s",
					quote_qualified_identifier(get_namespace_name(get_rel_namespace(archive)),
											   get_rel_name(archive)),
					cols.data, cols.data, from);
}

/*
 * SPI_execute_with_args of a purge statement that archives: an error
 * (the archive's constraint, trigger, a full disk) is raised again with
 * its SQLSTATE, naming the container and the archive, its detail (for a
 * constraint: the row or its key) carried into the message, which is what
 * ttl.stats.last_error keeps.  Cancels pass unchanged (the batch bound).
 */
int
ttl_archive_execute(Oid container, Oid archive, const char *sql, int nargs,
					Oid *argtypes, Datum *values, const char *nulls, long count)
{
	MemoryContext cxt = CurrentMemoryContext;
	int			rc = 0;

	PG_TRY();
	{
		rc = SPI_execute_with_args(sql, nargs, argtypes, values, nulls, false, count);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED ||
			edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
			PG_RE_THROW();
		FlushErrorState();
		ereport(ERROR,
				(errcode(edata->sqlerrcode),
				 errmsg("purge of container %s into archive %s failed: %s%s%s%s",
						ttl_relation_display_name(container),
						ttl_relation_display_name(archive), edata->message,
						edata->detail ? " (" : "", edata->detail ? edata->detail : "",
						edata->detail ? ")" : ""),
				 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
				 edata->hint ? errhint("%s", edata->hint) : 0,
				 edata->context ? errcontext("%s", edata->context) : 0));
	}
	PG_END_TRY();
	return rc;
}
