/*
 * purge_replace.c
 *		The purge delete of one expired item that a write replaces (rule 10,
 *		replace.c finds it): a DELETE statement of that one row version, by
 *		TID, as the table's owner, so that it does what every purge delete
 *		does: the owner's triggers and foreign keys fire (an ON DELETE
 *		CASCADE child goes with it), row security applies as it applies to
 *		the owner, the expiry rule is repeated on the very version it
 *		removes, the count reaches ttl.stats and, with
 *		ttl.mark_purge_deletes on, the change stream hears of it.
 *
 * Why not the batch machinery (purge_batch.c): a batch never waits (SKIP
 * LOCKED, table_tuple_delete(wait = false)) and try-locks the whole
 * container until its commit.  A writer must wait for a busy holder and
 * re-check its newest version, and writers replacing different items must
 * not block each other.  This DELETE waits like any DELETE: of two writers
 * racing for one expired item, the second waits for the first, then (read
 * committed) re-checks the row, finds it gone and deletes nothing; its
 * INSERT then conflicts with the winner's new row as usual.
 *
 * A delete that is refused (an owner's BEFORE DELETE trigger returning
 * NULL, a DELETE policy that hides the row, a RESTRICT or NO ACTION
 * foreign key: 23503, or 23001 for RESTRICT on 18) deletes nothing: the item stays and the write
 * conflicts with it (23505) as before.  So does an item whose purge failed
 * and that is left out until its retry_after (ttl.purge_failures): it is
 * not tried here either.  The delete runs in a
 * subtransaction so a refusing foreign key undoes all of it.  A DO
 * INSTEAD rule on DELETE replaces the statement: 0A000, naming the
 * container.  Any other error of the step (a cancel too) is the owner's,
 * raised on the writer's behalf: it reaches the writer with its SQLSTATE,
 * and with its text only where ttl.stats.last_error would
 * (base/owner_error.c).
 *
 * Counting: the writer does not touch ttl.purge_stats (one row per
 * container: every replacing writer would queue on it until commit, and
 * two writers of two containers could deadlock).  It inserts one row into
 * ttl.purge_stats_pending, a table without a unique key (inserts never
 * wait for each other), in the same subtransaction as the delete, so the
 * count is exact and rolls back with it; ttl.stats adds the pending rows,
 * and the purge folds them into ttl.purge_stats when it records its own
 * (stats.c).
 *
 * Marking: the only call of mark.c's API for rule 10 is in delete_item()
 * (ttl_mark_batch, one message per replaced item, in the subtransaction of
 * its delete).  The writer's transaction carries no replication origin (an
 * origin would mark the application's own changes too).
 *
 * Ownership (1.9): the DELETE names ONLY the leaf that holds the item, and
 * a leaf another role owns (registry/leaf_owner.c) is never deleted from:
 * the replacement is refused and the write conflicts (replace_probe.c
 * says why first).
 *
 * Locking: RowExclusiveLock on the table (the writer's statement holds it
 * already, and so the leaf's owner stays as checked) and the row lock of
 * the DELETE, which waits.  The caller holds the container's replace lock
 * (registry.c).  With an archive: what archive.c takes, waiting.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/owner_error.h"
#include "base/run_as.h"
#include "base/settings.h"
#include "base/subxact.h"
#include "document/deadline.h"
#include "insight/purge_failures.h"
#include "purge/archive.h"
#include "purge/mark.h"
#include "purge/purge.h"
#include "purge/purge_internal.h"
#include "registry/leaf_owner.h"
#include "registry/registry.h"

/* One replacement delete, as a step of a subtransaction. */
typedef struct ReplaceStep
{
	Oid			container;		/* the registered table (or the Citus shard) */
	Oid			leaf;			/* the partition that holds the row */
	ItemPointerData tid;
	const TtlContainer *policy;
	int64		now_seconds;
	bool		deleted;		/* out */
} ReplaceStep;

/*
 * The DELETE of one row version, by TID, repeating the expiry rule on the
 * version it removes.  $1 tid, $2 the default, $3 now (Unix seconds).  It
 * names ONLY the leaf that holds the row (a partition of a partitioned
 * container): a DELETE on the parent would plan every partition as the
 * owner, another role's among them (purge_owner.c), so the leaf's own
 * triggers, foreign keys and row security apply, as in a purge batch.
 *
 * Where later work plugs in (SPEC, "After 1.6"; src/purge/README.md): a
 * legal hold refuses the replacement of a held item with 55000 before this
 * runs (delete_item, ttl_purge_hold_refuse_replace: nothing to filter
 * here, a held item is never reached), and a container with an archive
 * runs WITH d AS (DELETE ... RETURNING t.*), a AS (INSERT INTO archive
 * ...) (ttl_purge_archived_delete_sql).
 */
static char *
replace_statement(Oid container, Oid leaf, const TtlContainer *policy)
{
	char	   *table = quote_qualified_identifier(get_namespace_name(get_rel_namespace(leaf)),
												   get_rel_name(leaf));
	const char *doc = quote_identifier(NameStr(policy->doc_column));
	/* the whole rule and the delete, as every purge deleter (purge_rows.c) */
	char	   *recheck = ttl_purge_recheck_sql(doc, TTL_HAS_DEADLINE(policy) ?
											  policy->deadline_property : NULL, 2, 3);
	const char *from = psprintf("ONLY %s t", table);
	const char *where = psprintf("t.ctid OPERATOR(pg_catalog.=) $1 AND %s", recheck);

	/* archive: the deleted row goes to the archive in this statement */
	if (OidIsValid(policy->archive))
		return psprintf("WITH %s SELECT (SELECT pg_catalog.count(*) FROM d),"
						" (SELECT pg_catalog.count(*) FROM a)",
						ttl_purge_archived_delete_sql(container, policy->archive, from, where));
	return ttl_purge_delete_sql(from, where, NULL);
}

/* The count for ttl.stats (see the file header), as the extension's owner. */
static void
record_pending(Oid container, int64 rows)
{
	static SPIPlanPtr plan = NULL;
	Oid			argtypes[2] = {OIDOID, INT8OID};
	Datum		values[2] = {ObjectIdGetDatum(container), Int64GetDatum(rows)};

	ttl_registry_execute("INSERT INTO ttl.purge_stats_pending (relid, rows_purged, purged_at)"
						 " VALUES ($1, $2, ttl.now())",
						 2, argtypes, values, NULL, &plan);
}

static void
delete_item(void *arg)
{
	ReplaceStep *step = (ReplaceStep *) arg;
	Oid			argtypes[3] = {TIDOID, INT4OID, INT8OID};
	Datum		values[3];
	int			rc;
	char	   *sql;

	values[0] = PointerGetDatum(&step->tid);
	values[1] = Int32GetDatum(step->policy->default_ttl);
	values[2] = Int64GetDatum(step->now_seconds);
	/* legal hold: a held item is never replaced, 55000 (purge_hold.c) */
	ttl_purge_hold_refuse_replace(step->container, step->leaf, &step->tid,
								  NameStr(step->policy->doc_column));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	sql = replace_statement(step->container, step->leaf, step->policy);
	if (OidIsValid(step->policy->archive))
	{
		/*
		 * archive: checked again, every leaf of it included, its leaf set
		 * held for this statement (archive.c); its errors name it
		 */
		(void) ttl_archive_check_fit(step->container, step->policy->archive, false);
		rc = ttl_archive_execute(step->container, step->policy->archive, sql,
								 3, argtypes, values, NULL, 0);
		ttl_archive_release(step->policy->archive);
		if (rc == SPI_OK_SELECT && SPI_processed == 1)
		{
			bool		isnull;
			int64		deleted = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
															  SPI_tuptable->tupdesc, 1, &isnull));
			int64		archived = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
															   SPI_tuptable->tupdesc, 2, &isnull));

			/* the row deleted is in the archive, or nothing is deleted */
			ttl_archive_check_count(step->container, step->policy->archive, deleted, archived);
			rc = SPI_OK_DELETE;
			SPI_processed = (uint64) deleted;
		}
	}
	else
		rc = SPI_execute_with_args(sql, 3, argtypes, values, NULL, false, 0);
	/* a DO INSTEAD rule on DELETE replaced the statement: nothing deleted */
	if (rc == SPI_OK_REWRITTEN)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("container %s has a DO INSTEAD rule on DELETE: rule 10 cannot replace its expired items",
						ttl_relation_display_name(step->container)),
				 errdetail("Rule 10 deletes the expired item that holds the key with a DELETE, which the rule replaces."),
				 errhint("Drop the rule, or turn rule 10 off with ttl.set_replace_expired(%s, false).",
						 quote_literal_cstr(ttl_relation_display_name(step->container)))));
	if (rc != SPI_OK_DELETE)
		elog(ERROR, "ttl replacement delete failed: %s", SPI_result_code_string(rc));
	step->deleted = SPI_processed > 0;
	SPI_finish();
	if (!step->deleted)
		return;
	record_pending(step->container, 1);
	/* the one place rule 10 marks its deletes (mark.c) */
	ttl_mark_batch(step->container, 1);
}

/* The delete with its deferred triggers made immediate (purge_batch.c). */
static void
delete_item_immediate(void *arg)
{
	ttl_with_immediate_triggers(delete_item, arg);
}

/*
 * Delete the expired row version tid of leaf (a partition of container, or
 * container itself) as a purge delete, waiting for whoever holds it.
 * true: it is gone; false: the delete was refused, or the row changed
 * meanwhile and is no longer expired or no longer there (the caller looks
 * again).  Errors other than a refusing foreign key are thrown, as the
 * writer may see them (owner_error.c).
 */
bool
ttl_purge_replaced_item(Oid container, Oid leaf, ItemPointer tid,
						const TtlContainer *policy, int64 now_seconds)
{
	ReplaceStep step;
	TtlUserContext ctx;
	ErrorData  *edata;

	/*
	 * A row whose purge failed and is left out until its retry_after
	 * (purge_failures.c) is not replaced: the write conflicts (23505), and
	 * the failing delete does not run again in the writer's statement.
	 */
	if (ttl_failure_quarantined(container, leaf, tid, now_seconds))
		return false;
	step.container = container;
	step.leaf = leaf;
	step.tid = *tid;
	step.policy = policy;
	step.now_seconds = now_seconds;
	step.deleted = false;
	/*
	 * Another role's leaf is never touched as the container's owner (the
	 * writer's statement holds the leaf, so its owner stays as checked):
	 * refused, the write conflicts.  replace_probe.c says why first; this
	 * holds for any caller.
	 */
	if (!ttl_leaf_owner_fits(container, leaf))
		return false;
	ttl_become_user(ttl_table_owner(container), &ctx);
	/* a cancel too: an owner's trigger can raise 57014 with any text */
	edata = ttl_subxact_run(delete_item_immediate, &step, CurrentMemoryContext, true);
	ttl_restore_user(&ctx);
	if (edata == NULL)
		return step.deleted;
	/*
	 * 18 reports a RESTRICT action as 23001, earlier majors as 23503.  Any
	 * other error was raised as the owner for the writer, who sees its text
	 * only where ttl.stats.last_error would show it (owner_error.c).
	 */
	if (edata->sqlerrcode != ERRCODE_FOREIGN_KEY_VIOLATION &&
		edata->sqlerrcode != ERRCODE_RESTRICT_VIOLATION)
		ttl_owner_error_rethrow(edata, container,
								"rule 10's replacement of an expired item");
	/* a RESTRICT / NO ACTION child refuses: the write conflicts as before */
	FreeErrorData(edata);
	return false;
}
