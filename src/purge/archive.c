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
 * Every table of a partitioned archive's tree passes the archive's checks
 * (1.9: owner, permanence, kind), since the INSERT routes rows to them as
 * the container's owner: a partition of another role's would run its
 * triggers with those rights, an unlogged one would lose its rows in a
 * crash.  The fit found is kept (ArchiveFit, below) until a relcache
 * invalidation of any table involved.
 *
 * Locking: the caller's, plus RowExclusiveLock on the archive and on each
 * leaf of its tree, and ShareUpdateExclusiveLock on the archive and each
 * partitioned table of its tree when it is partitioned (ATTACH PARTITION
 * takes that lock, so no partition joins the tree between the check and
 * the INSERT; OWNER TO and SET UNLOGGED wait for the RowExclusiveLock),
 * taken (by a purge batch without waiting: busy) before the fit is checked
 * and held to the end of the transaction, so the checked tree is the one
 * the INSERT sees; rule 10 releases the ShareUpdateExclusiveLocks after
 * its one-row statement (ttl_archive_release).  Runs as the container's
 * owner (the caller switches), SPI connected for ttl_archive_execute.
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
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "base/run_as.h"
#include "purge/archive.h"
#include "registry/registry.h"

/*
 * How member (the archive, or a partition of it at any depth) is named in
 * an error: "archive a of container c", "partition p of archive a of
 * container c".
 */
static char *
member_name(Oid container, Oid archive, Oid member)
{
	if (member == archive)
		return psprintf("archive %s of container %s", ttl_relation_display_name(archive),
						ttl_relation_display_name(container));
	return psprintf("partition %s of archive %s of container %s",
					ttl_relation_display_name(member), ttl_relation_display_name(archive),
					ttl_relation_display_name(container));
}

/*
 * 0A000 unless member (the archive or one of its partitions) is an
 * ordinary permanent or partitioned table: a row routed to an unlogged
 * partition is lost in a crash, one routed to a foreign table leaves the
 * database and its transaction.
 */
static void
check_kind(Oid container, Oid archive, Oid member)
{
	char		relkind = get_rel_relkind(member);
	char		persistence = get_rel_persistence(member);
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
				 errmsg("%s is %s", member_name(container, archive, member), what),
				 member == archive ?
				 errdetail("An archive must be an ordinary permanent table or a partitioned table, so that archived rows survive a crash and every session sees them.") :
				 errdetail("Every partition of an archive must be an ordinary permanent table, so that the rows routed to it survive a crash and stay in the database."),
				 member == archive ?
				 errhint("Create the archive with CREATE TABLE, not UNLOGGED or TEMPORARY.") :
				 errhint("Make the partition permanent (ALTER TABLE ... SET LOGGED), or detach it.")));
}

/*
 * 0A000 when the archive has rules: a DO INSTEAD rule rewrites the purge's
 * INSERT (DO INSTEAD NOTHING drops every row), and a rule's rewritten
 * statement tells no count of what the archive took.
 */
static void
check_no_rules(Oid container, Oid archive)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(archive));
	bool		has_rules;

	if (!HeapTupleIsValid(tup))
		return;					/* gone: the caller's check says so */
	has_rules = ((Form_pg_class) GETSTRUCT(tup))->relhasrules;
	ReleaseSysCache(tup);
	if (has_rules)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("archive %s of container %s has rules",
						ttl_relation_display_name(archive),
						ttl_relation_display_name(container)),
				 errdetail("A rule rewrites the purge's INSERT into the archive (DO INSTEAD NOTHING drops the rows), so purged rows could be in neither table."),
				 errhint("Drop the archive's rules (DROP RULE), or choose another archive with ttl.set_archive().")));
}

/*
 * A statement or chunk of a purge deleted deleted rows and the archive
 * took archived of them: unless every one, the batch fails (27000, which
 * purge_split.c isolates like any row's error), so a row is never in
 * neither table: an archive's BEFORE INSERT trigger returning NULL drops
 * the row without an error.
 */
void
ttl_archive_check_count(Oid container, Oid archive, int64 deleted, int64 archived)
{
	if (deleted == archived)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_TRIGGERED_DATA_CHANGE_VIOLATION),
			 errmsg("archive %s of container %s took %lld of %lld purged rows",
					ttl_relation_display_name(archive),
					ttl_relation_display_name(container),
					(long long) archived, (long long) deleted),
			 errdetail("Every row the purge deletes must be inserted into the archive; the deletes are rolled back and the rows stay in the container."),
			 errhint("Check the archive's BEFORE INSERT triggers: one that returns NULL drops the row.")));
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

/*
 * 42501 unless member (the archive or one of its partitions) has the
 * container's owner: the purge inserts as that owner, and another role's
 * triggers or rules on the member would run with those rights.
 */
static void
check_owner(Oid container, Oid archive, Oid member)
{
	if (ttl_table_owner(member) != ttl_table_owner(container))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s has another owner", member_name(container, archive, member)),
				 member == archive ?
				 errdetail("The purge inserts into the archive as the container's owner, who must own the archive too.") :
				 errdetail("The purge inserts into the archive as the container's owner, who must own every partition of the archive too: %s is owned by %s.",
						   ttl_relation_display_name(member),
						   quote_identifier(GetUserNameFromId(ttl_table_owner(member), false))),
				 errhint("ALTER TABLE %s OWNER TO %s.",
						 ttl_relation_display_name(member),
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

/* ---- the fit, cached ---- */

/*
 * A fit found (per container): the archive and every table in its tree.
 * Deriving it costs every column's coercion and a walk of the archive's
 * partitions, before every batch; kept instead, and dropped by the
 * relcache invalidation of the container, the archive or any table of its
 * tree (ttl.c registers ttl_archive_invalidate): an ATTACH, DETACH, OWNER
 * TO, SET LOGGED / UNLOGGED or column change on any of them sends one.
 * Misfits are not kept: they raise their error each time.
 */
typedef struct ArchiveFit
{
	Oid			container;		/* hash key */
	Oid			archive;
	int			nmembers;		/* the archive's partitions, any depth */
	Oid		   *members;		/* (CacheMemoryContext) */
} ArchiveFit;

static HTAB *fits = NULL;

/* The relcache callback (ttl.c): a fit that involves relid is dropped. */
void
ttl_archive_invalidate(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	ArchiveFit *fit;

	if (fits == NULL)
		return;
	hash_seq_init(&status, fits);
	while ((fit = hash_seq_search(&status)) != NULL)
	{
		bool		hit = !OidIsValid(relid) || fit->container == relid ||
			fit->archive == relid;
		int			i;

		for (i = 0; i < fit->nmembers && !hit; i++)
			hit = fit->members[i] == relid;
		if (!hit)
			continue;
		if (fit->members)
			pfree(fit->members);
		hash_search(fits, &fit->container, HASH_REMOVE, NULL);
	}
}

static ArchiveFit *
fit_lookup(Oid container, Oid archive)
{
	ArchiveFit *fit;

	if (fits == NULL)
		return NULL;
	fit = hash_search(fits, &container, HASH_FIND, NULL);
	return fit != NULL && fit->archive == archive ? fit : NULL;
}

static void
fit_store(Oid container, Oid archive, List *members)
{
	ArchiveFit *fit;
	bool		found;
	ListCell   *lc;

	if (fits == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(ArchiveFit);
		fits = hash_create("ttl archive fits", 16, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	fit = hash_search(fits, &container, HASH_ENTER, &found);
	if (found && fit->members)
		pfree(fit->members);
	fit->archive = archive;
	fit->nmembers = 0;
	fit->members = MemoryContextAlloc(CacheMemoryContext,
									  sizeof(Oid) * Max(list_length(members), 1));
	foreach(lc, members)
		fit->members[fit->nmembers++] = lfirst_oid(lc);
}

/* ---- the locks of the archive's tree ---- */

/*
 * The partitioned tables of the archive's tree locked ShareUpdateExclusive
 * by the last waiting check (rule 10 releases them after its statement,
 * ttl_archive_release).
 */
#define HELD_MAX 64
static Oid	held[HELD_MAX];
static int	nheld = 0;

/*
 * Lock one table of the archive's tree: ShareUpdateExclusiveLock for a
 * partitioned one (ATTACH PARTITION takes it on the table it attaches to,
 * so no leaf joins the tree between the check and the INSERT), else
 * RowExclusiveLock (OWNER TO and SET LOGGED / UNLOGGED wait for it).
 * With nowait, false when someone holds a conflicting lock.
 */
static bool
lock_member(Oid member, bool nowait)
{
	LOCKMODE	mode = get_rel_relkind(member) == RELKIND_PARTITIONED_TABLE ?
		ShareUpdateExclusiveLock : RowExclusiveLock;

	if (!nowait)
		LockRelationOid(member, mode);
	else if (!ConditionalLockRelationOid(member, mode))
		return false;
	if (!nowait && mode == ShareUpdateExclusiveLock && nheld < HELD_MAX)
		held[nheld++] = member;
	return true;
}

/*
 * After rule 10's one-row statement (purge_replace.c): the waiting check's
 * ShareUpdateExclusiveLocks go, so that writers replacing items of
 * containers that share this archive queue on them only for a statement,
 * not to commit.  The INSERT's RowExclusiveLocks stay.
 */
void
ttl_archive_release(Oid archive)
{
	while (nheld > 0)
		UnlockRelationOid(held[--nheld], ShareUpdateExclusiveLock);
}

/*
 * Whether archive can take container's purged rows (SPEC, "After 1.6";
 * 1.9: every table of its tree): it exists (42P01), is an ordinary
 * permanent or partitioned table without rules (a rule rewrites the
 * INSERT; 0A000) and so is every partition of it, at any
 * depth, no unlogged or foreign one (0A000), is neither the container nor
 * one of its partitions (0A000), has the container's owner and so has
 * every partition of it (42501), and fits column by column (42703,
 * 42804).  The chain of archives is ttl.set_archive's to check
 * (archive_admin.c).  Takes the locks of lock_member on the archive and
 * every table of its tree (see the file header), then checks under them
 * (a fit found before is kept: see ArchiveFit); with nowait, false when
 * another holds a conflicting lock (DDL, or a purge of another container
 * into the same partitioned archive): a purge batch never waits, it skips
 * the container as busy.
 */
bool
ttl_archive_check_fit(Oid container, Oid archive, bool nowait)
{
	ArchiveFit *fit;
	List	   *members = NIL;
	ListCell   *lc;
	int			i;

	nheld = 0;
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
	if (!lock_member(archive, nowait))
		return false;
	/* a fit found before: its tree locked, and still kept after the locks */
	fit = fit_lookup(container, archive);
	if (fit != NULL)
	{
		int			n = fit->nmembers;
		Oid		   *copy = palloc(sizeof(Oid) * Max(n, 1));

		memcpy(copy, fit->members, sizeof(Oid) * n);	/* locking may drop it */
		for (i = 0; i < n; i++)
			if (!lock_member(copy[i], nowait))
				return false;
		if (fit_lookup(container, archive) != NULL)
			return true;
	}
	check_kind(container, archive, archive);
	check_no_rules(container, archive);
	check_not_itself(container, archive);
	check_owner(container, archive, archive);
	check_columns(container, archive);
	/*
	 * a partitioned archive routes rows to its partitions (an INSERT into
	 * a plain table never reaches its inheritance children)
	 */
	foreach(lc, get_rel_relkind(archive) == RELKIND_PARTITIONED_TABLE ?
			find_all_inheritors(archive, NoLock, NULL) : NIL)
	{
		Oid			member = lfirst_oid(lc);

		if (member == archive)
			continue;
		if (!lock_member(member, nowait))
			return false;
		check_kind(container, archive, member);
		check_owner(container, archive, member);
		members = lappend_oid(members, member);
	}
	fit_store(container, archive, members);
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
