/*
 * purge_split.c
 *		A purge batch that fails on a row is split until its failing rows
 *		are isolated (SPEC, "After 1.8": a row that fails never stops the
 *		rest): the batch's rows are locked in key order (the statement
 *		path's candidates, ttl_batch_candidates_sql), then deleted (and
 *		archived) half by half, each half in a subtransaction; a half that
 *		fails is halved again, down to one row, which is left in place
 *		(hidden while expired) and recorded (insight/purge_failures.c), so
 *		later batches and rule 10 leave it out until its retry_after.  A
 *		bad row costs at most 2 x log2(batch size) subtransactions; the
 *		other rows of the batch commit with it.
 *
 * What is a row's failure and what is the container's: an error that
 * would fail any row of the container (privileges 42501 and the other
 * definition errors of class 42, serialization and deadlock (class 40),
 * a lock not available (55P03) or an object in use, a cancel or the
 * batch's bound (class 57), resources (53) and system errors (58, XX000),
 * a feature the archive's definition does not support (0A000)) is not
 * split: the batch fails as before, and the round backs the container off.
 * Everything else (a unique or check violation in the archive, a
 * trigger's RAISE, a cast error, an archive that took fewer rows than
 * were deleted, 27000) is a row's.
 *
 * The split deletes by TID, leaf by leaf (DELETE FROM ONLY leaf), through
 * the executor, like the statement path: what the direct deleter would
 * have done to these rows is a plain delete, the same here, and the
 * statement deleter's triggers, foreign keys and row security act.  The
 * archive's INSERT joins each DELETE (ttl_purge_archived_delete_sql) and
 * its count is checked against the rows deleted.
 *
 * Locking: the caller's (purge_batch.c): the container's purge lock and
 * RowExclusiveLock on the table and its leaves, as the owner in a
 * security-restricted operation, SPI connected.  The rows are locked FOR
 * UPDATE SKIP LOCKED in the batch's (sub)transaction, outside the split's
 * subtransactions, so a half that rolls back keeps its rows locked for
 * the next try; the failure record is written in the batch's transaction.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/syscache.h"

#include "document/due_range.h"
#include "document/purge_key.h"
#include "insight/purge_failures.h"
#include "purge/archive.h"
#include "purge/progress.h"
#include "purge/purge_internal.h"
#include "registry/registry.h"

/*
 * step(arg) in a subtransaction.  NULL when it succeeded; else everything
 * it did is rolled back and its error is returned, copied into the
 * caller's memory (also a cancel: the caller throws it on).
 */
ErrorData *
ttl_split_try(TtlSplitStep step, void *arg)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		step(arg);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return edata;
}

/* Whether edata is a row's failure, which a split isolates (see the header). */
bool
ttl_split_row_error(const ErrorData *edata)
{
	int			code = edata->sqlerrcode;
	int			class = ERRCODE_TO_CATEGORY(code);

	if (class == ERRCODE_CONNECTION_EXCEPTION ||	/* 08 */
		class == ERRCODE_INVALID_TRANSACTION_STATE ||	/* 25 */
		class == ERRCODE_TRANSACTION_ROLLBACK ||	/* 40 */
		class == ERRCODE_SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION ||	/* 42 */
		class == ERRCODE_INSUFFICIENT_RESOURCES ||	/* 53 */
		class == ERRCODE_OPERATOR_INTERVENTION ||	/* 57 */
		class == ERRCODE_SYSTEM_ERROR ||	/* 58 */
		class == ERRCODE_CONFIG_FILE_ERROR ||	/* F0 */
		code == ERRCODE_FEATURE_NOT_SUPPORTED ||
		code == ERRCODE_LOCK_NOT_AVAILABLE ||
		code == ERRCODE_OBJECT_IN_USE ||
		code == ERRCODE_INTERNAL_ERROR)
		return false;
	return true;
}

/* The rows of the split batch, in key order, and what the split needs. */
typedef struct SplitRun
{
	const TtlBatchPlan *plan;
	int			n;
	Oid		   *leaf;
	ItemPointerData *tid;
	const char *recheck;		/* the DELETE's re-check ($4, $5, $6) */
	bool		holds;
	Datum		hold_matches;
	int64		deleted;		/* rows deleted by the halves that committed */
	int			isolated;		/* rows left in place and recorded */
	int			first_code;		/* the first isolated row's SQLSTATE */
	char	   *first_message;	/* and message */
	int			tries;			/* subtransactions run */
} SplitRun;

/* One half to try: rows lo .. hi - 1. */
typedef struct SplitHalf
{
	SplitRun   *run;
	int			lo;
	int			hi;
	int64		deleted;		/* out */
} SplitHalf;

/*
 * The DELETE of the rows lo .. hi - 1 that are in one leaf, as one
 * statement per leaf; the archive takes each statement's rows, every one.
 */
static void
delete_half(void *arg)
{
	SplitHalf  *half = (SplitHalf *) arg;
	SplitRun   *run = half->run;
	const TtlBatchPlan *plan = run->plan;
	Oid			archive = plan->policy->archive;
	bool	   *done = palloc0(sizeof(bool) * (half->hi - half->lo));
	int			i;

	half->deleted = 0;
	for (i = half->lo; i < half->hi; i++)
	{
		Oid			leaf = run->leaf[i];
		Datum	   *tids = palloc(sizeof(Datum) * (half->hi - i));
		int			ntids = 0;
		int			j;
		Oid			argtypes[6] = {TIDARRAYOID, INT8OID, INT8OID, INT4OID, INT8OID,
		JSONBARRAYOID};
		Datum		values[6];
		char		nulls[7] = "      ";
		const char *from;
		const char *where;
		char	   *sql;
		bool		isnull;
		int64		deleted;

		if (done[i - half->lo])
			continue;
		for (j = i; j < half->hi; j++)
			if (run->leaf[j] == leaf)
			{
				tids[ntids++] = PointerGetDatum(&run->tid[j]);
				done[j - half->lo] = true;
			}
		from = psprintf("ONLY %s t", ttl_relation_display_name(leaf));
		where = psprintf("t.ctid OPERATOR(pg_catalog.=) ANY ($1) AND %s", run->recheck);
		if (OidIsValid(archive))
			sql = psprintf("WITH %s SELECT (SELECT pg_catalog.count(*) FROM d),"
						   " (SELECT pg_catalog.count(*) FROM a)",
						   ttl_purge_archived_delete_sql(plan->relid, archive, from, where));
		else
			sql = psprintf("WITH d AS (%s) SELECT (SELECT pg_catalog.count(*) FROM d)",
						   ttl_purge_delete_sql(from, where, "1"));
		values[0] = PointerGetDatum(construct_array(tids, ntids, TIDOID,
													sizeof(ItemPointerData), false,
													TYPALIGN_SHORT));
		values[1] = values[2] = (Datum) 0;
		nulls[1] = nulls[2] = 'n';
		values[3] = Int32GetDatum(plan->policy->default_ttl);
		values[4] = Int64GetDatum(plan->now_seconds);
		values[5] = run->hold_matches;
		if (!run->holds)
			nulls[5] = 'n';
		if ((OidIsValid(archive) ?
			 ttl_archive_execute(plan->relid, archive, sql, 6, argtypes, values, nulls, 0) :
			 SPI_execute_with_args(sql, 6, argtypes, values, nulls, false, 0)) != SPI_OK_SELECT ||
			SPI_processed != 1)
			elog(ERROR, "purge split statement failed on %s", ttl_relation_display_name(leaf));
		deleted = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											  1, &isnull));
		if (OidIsValid(archive))
			ttl_archive_check_count(plan->relid, archive, deleted,
									DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
																SPI_tuptable->tupdesc, 2,
																&isnull)));
		half->deleted += deleted;
	}
}

/*
 * The key of the row a reader sees in ttl.purge_failures: the container's
 * primary key as text (one column: its value; several: the row of them),
 * read as the owner; without a primary key, or when it cannot be read,
 * the row's place, "leaf (block,offset)".
 */
typedef struct KeyStep
{
	Oid			container;
	Oid			leaf;
	ItemPointerData tid;
	char	   *key;			/* out */
} KeyStep;

static char *
primary_key_sql(Oid container)
{
	Relation	rel = table_open(container, NoLock);	/* locked by the batch */
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	char	   *sql = NULL;

	foreach(lc, indexes)
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index index;
		StringInfoData cols;
		int			i;

		if (!HeapTupleIsValid(tup))
			continue;
		index = (Form_pg_index) GETSTRUCT(tup);
		if (!index->indisprimary)
		{
			ReleaseSysCache(tup);
			continue;
		}
		initStringInfo(&cols);
		for (i = 0; i < index->indnkeyatts; i++)
			appendStringInfo(&cols, "%st.%s", i > 0 ? ", " : "",
							 quote_identifier(get_attname(container, index->indkey.values[i],
														  false)));
		sql = index->indnkeyatts == 1 ? psprintf("%s::pg_catalog.text", cols.data) :
			psprintf("ROW(%s)::pg_catalog.text", cols.data);
		ReleaseSysCache(tup);
		break;
	}
	list_free(indexes);
	table_close(rel, NoLock);
	return sql;
}

static void
read_key(void *arg)
{
	KeyStep    *step = (KeyStep *) arg;
	char	   *expr = primary_key_sql(step->container);
	Oid			argtypes[1] = {TIDOID};
	Datum		values[1];
	bool		isnull;
	Datum		d;

	if (expr == NULL)
		return;
	values[0] = PointerGetDatum(&step->tid);
	if (SPI_execute_with_args(psprintf("SELECT %s FROM ONLY %s t WHERE t.ctid OPERATOR(pg_catalog.=) $1",
									   expr, ttl_relation_display_name(step->leaf)),
							  1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		return;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
		step->key = TextDatumGetCString(d);
}

static char *
row_key(Oid container, Oid leaf, ItemPointer tid)
{
	KeyStep		step;
	ErrorData  *edata;

	step.container = container;
	step.leaf = leaf;
	step.tid = *tid;
	step.key = NULL;
	edata = ttl_split_try(read_key, &step);
	if (edata != NULL)
	{
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
			ReThrowError(edata);
		FreeErrorData(edata);
		step.key = NULL;
	}
	if (step.key == NULL)
		step.key = psprintf("%s (%u,%u)", ttl_relation_display_name(leaf),
							ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid));
	return step.key;
}

/* Row i failed alone with edata: left in place, recorded, logged. */
static void
isolate_row(SplitRun *run, int i, ErrorData *edata)
{
	const TtlBatchPlan *plan = run->plan;
	char	   *key = row_key(plan->relid, run->leaf[i], &run->tid[i]);

	/* the whole text for the server log only: it can carry row data */
	ereport(LOG_SERVER_ONLY,
			(errmsg("ttl purge of container %s left row %s in place: %s",
					ttl_relation_display_name(plan->relid), key, edata->message),
			 edata->detail ? errdetail_internal("%s", edata->detail) : 0));
	ttl_failure_record(plan->relid, run->leaf[i], &run->tid[i], key, edata->sqlerrcode,
					   edata->message, plan->now_seconds);
	if (run->isolated++ == 0)
	{
		run->first_code = edata->sqlerrcode;
		run->first_message = pstrdup(edata->message);
	}
}

/*
 * Rows lo .. hi - 1 in a subtransaction; when it fails on a row, each half
 * again, down to the one row that fails.  A container's failure ends the
 * split (the batch fails).
 */
static void
split_range(SplitRun *run, int lo, int hi)
{
	SplitHalf	half;
	ErrorData  *edata;

	if (lo >= hi)
		return;
	CHECK_FOR_INTERRUPTS();
	half.run = run;
	half.lo = lo;
	half.hi = hi;
	run->tries++;
	edata = ttl_split_try(delete_half, &half);
	if (edata == NULL)
	{
		run->deleted += half.deleted;
		return;
	}
	if (!ttl_split_row_error(edata))
		ReThrowError(edata);
	if (hi - lo == 1)
	{
		isolate_row(run, lo, edata);
		FreeErrorData(edata);
		return;
	}
	FreeErrorData(edata);
	split_range(run, lo, lo + (hi - lo) / 2);
	split_range(run, lo + (hi - lo) / 2, hi);
}

/*
 * The batch of plan failed with first, a row's error: lock its rows (the
 * plan's kind, in key order from its keyset, at most its limit, without
 * the rows others hold, held or left out), split them until the failing
 * ones are isolated, and say in *out what a statement batch says: the rows
 * taken (found), deleted, and the last key (the next keyset).
 */
void
ttl_split_batch(const TtlBatchPlan *plan, const char *relname, const ErrorData *first,
				TtlDirectBatch *out)
{
	const char *doc = quote_identifier(NameStr(plan->policy->doc_column));
	bool		holds = ttl_purge_hold_active();
	bool		failures = ttl_failures_active();
	Oid			argtypes[8] = {INT8OID, INT8OID, INT8OID, INT4OID, INT8OID, JSONBARRAYOID,
	OIDARRAYOID, TIDARRAYOID};
	Datum		values[8];
	char		nulls[9] = "        ";
	int			nargs = failures ? 8 : holds ? 6 : 5;
	char	   *table = quote_qualified_identifier(get_namespace_name(get_rel_namespace(plan->relid)),
												   relname);
	SplitRun	run;
	int			guc_level;
	int			room = 64;
	uint64		i;
	bool		isnull;
	Oid			last_leaf = plan->start_leaf;
	int64		last_key = plan->lower_key;
	ListCell   *lc;

	memset(&run, 0, sizeof(run));
	ttl_progress_phase(TTL_PHASE_DELETING);
	run.plan = plan;
	run.holds = holds;
	run.recheck = ttl_purge_recheck_sql(doc, plan->deadline, 4, 5);
	if (holds)
	{
		run.recheck = psprintf("%s%s", ttl_purge_hold_filter(doc), run.recheck);
		run.hold_matches = ttl_purge_hold_matches();
	}
	run.leaf = palloc(sizeof(Oid) * room);
	run.tid = palloc(sizeof(ItemPointerData) * room);

	/*
	 * The batch's rows, locked in the batch's transaction, leaf by leaf in
	 * the order the statement path takes them (from where the last batch
	 * stopped), on ONLY each leaf the container's owner owns
	 * (purge_owner.c): a query on the parent would plan, and lock, rows of
	 * a leaf another role owns as the container's owner.
	 */
	values[3] = Int32GetDatum(plan->policy->default_ttl);
	values[4] = Int64GetDatum(plan->now_seconds);
	values[5] = run.hold_matches;
	if (!holds)
		nulls[5] = 'n';
	if (failures)
		ttl_failures_arrays(&values[6], &values[7]);
	nulls[nargs] = '\0';
	foreach(lc, ttl_statement_leaves(plan->relid))
	{
		Oid			leaf = lfirst_oid(lc);
		bool		keyed = plan->kind != TTL_DUE_DEADLINE &&
			ttl_has_purge_key_index(leaf, NameStr(plan->policy->doc_column));
		TtlDueRange range = ttl_due_range(plan->kind, keyed, plan->policy->default_ttl,
										  plan->now_seconds);
		int64		max_key = 0;
		bool		have_key = false;

		if (OidIsValid(plan->start_leaf) && leaf < plan->start_leaf)
			continue;			/* done by earlier batches of this kind */
		if (plan->limit >= 0 && run.n >= plan->limit)
			break;
		if (!ConditionalLockRelationOid(leaf, RowExclusiveLock) ||
			!ttl_batch_leaf_fits(plan->relid, leaf) ||
			ttl_retire_defers(plan->relid, leaf))	/* purge_retire.c */
			continue;
		ttl_due_range_from(&range, leaf == plan->start_leaf ? plan->lower_key : PG_INT64_MIN);
		ttl_due_range_from(&range, ttl_purge_hold_floor(plan->kind));
		values[0] = Int64GetDatum(range.low);
		values[1] = Int64GetDatum(range.high);
		values[2] = Int64GetDatum(plan->limit < 0 ? -1 : plan->limit - run.n);
		nulls[2] = plan->limit < 0 ? 'n' : ' ';
		guc_level = NewGUCNestLevel();
		ttl_set_purge_plan_options();
		if (SPI_execute_with_args(ttl_batch_candidates_sql(psprintf("ONLY %s", ttl_relation_display_name(leaf)),
														   doc, plan->kind, keyed,
														   plan->deadline, holds, failures),
								  nargs, argtypes, values, nulls, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "purge split could not lock the rows of %s", table);
		AtEOXact_GUC(true, guc_level);
		for (i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			Datum		k;

			if (run.n == room)
			{
				room *= 2;
				run.leaf = repalloc(run.leaf, sizeof(Oid) * room);
				run.tid = repalloc(run.tid, sizeof(ItemPointerData) * room);
			}
			run.leaf[run.n] = DatumGetObjectId(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
			ItemPointerCopy((ItemPointer) DatumGetPointer(SPI_getbinval(tup, SPI_tuptable->tupdesc,
																		2, &isnull)),
							&run.tid[run.n]);
			run.n++;
			k = SPI_getbinval(tup, SPI_tuptable->tupdesc, 3, &isnull);
			if (!isnull && (!have_key || DatumGetInt64(k) > max_key))
			{
				max_key = DatumGetInt64(k);
				have_key = true;
			}
		}
		SPI_freetuptable(SPI_tuptable);
		if (have_key)
		{
			/* where the next batch starts: this leaf, past its last key */
			last_leaf = leaf;
			last_key = ttl_due_seconds(&range, max_key);
		}
	}

	/* the whole batch failed: start with its halves */
	if (run.n > 1)
	{
		split_range(&run, 0, run.n / 2);
		split_range(&run, run.n / 2, run.n);
	}
	else
		split_range(&run, 0, run.n);

	memset(out, 0, sizeof(*out));
	out->found = run.n;
	out->deleted = run.deleted;
	out->last_leaf = last_leaf;
	out->last_key = last_key;
	ereport(DEBUG1,
			(errmsg_internal("ttl purge of %s: %d rows split in %d tries, %d left in place",
							 table, run.n, run.tries, run.isolated)));
	if (run.isolated > 0)
		out->row_error = psprintf("%d failing row%s left in place (ttl.purge_failures): %s",
								  run.isolated, run.isolated == 1 ? "" : "s",
								  run.first_message);
	if (run.isolated > 0)
		ereport(WARNING,
				(errmsg("ttl purge of container %s left %d failing row%s in place (SQLSTATE %s) and purged %lld",
						ttl_relation_display_name(plan->relid), run.isolated,
						run.isolated == 1 ? "" : "s", unpack_sql_state(run.first_code),
						(long long) run.deleted),
				 errdetail("Each failing row is recorded in ttl.purge_failures and left out of purges until its retry_after."),
				 errhint("Repair what fails (the archive's constraint or trigger, the owner's trigger), or delete the rows yourself.")));
	else
		ereport(DEBUG1,
				(errmsg_internal("ttl purge of %s: split after %s, no row failed alone",
								 table, first->message)));
}
