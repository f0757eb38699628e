/*
 * purge_direct.c
 *		The fast path of a purge batch: walk one purge index in key order and
 *		delete each expired row with table_tuple_delete(wait = false), the
 *		way the executor's DELETE would, minus what it cannot need here.
 *
 * Why: the statement path (purge.c) must first lock its batch FOR UPDATE
 * SKIP LOCKED, which writes a WAL record and dirties the page once per row
 * before the DELETE writes another, then fetches every row again by TID.
 * A delete that does not wait gives the same "skip what others hold"
 * without the lock pass: a row being updated, locked or deleted by another
 * transaction comes back as busy and is left for a later round.
 *
 * It applies only when a plain DELETE would do nothing but delete: a plain
 * table (not partitioned, no inheritance children), no DELETE triggers
 * (foreign keys pointing at the table are triggers too), no rules, no row
 * security that applies to the owner, DELETE and SELECT granted, and a
 * valid purge index of the wanted kind.  Otherwise it returns the reason
 * and the caller runs the statement, which does everything a DELETE does.
 *
 * Locking: the caller holds RowExclusiveLock on the table (taken without
 * waiting) and runs as the table's owner.  The index is locked
 * AccessShareLock without waiting; an index we cannot lock now is not used.
 * Each row is re-checked against the expiry rule on the very version that
 * is deleted; a version changed since our snapshot fails to delete.
 */
#include "ttl.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/namespace.h"
#include "commands/comment.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/primnodes.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#define TTL_PURGE_INDEX_COMMENT "ttl purge index"

/*
 * Why a DELETE statement is needed for this table, or NULL when a direct
 * delete does exactly what it would.
 */
static const char *
direct_delete_obstacle(Relation rel)
{
	TriggerDesc *trig = rel->trigdesc;

	if (rel->rd_rel->relkind != RELKIND_RELATION)
		return "it is not a plain table";
	if (rel->rd_rel->relhassubclass)
		return "it has inheritance children";
	if (trig && (trig->trig_delete_before_row || trig->trig_delete_after_row ||
				 trig->trig_delete_instead_row ||
				 trig->trig_delete_before_statement ||
				 trig->trig_delete_after_statement ||
				 trig->trig_delete_old_table))
		return "it has DELETE triggers or is referenced by a foreign key";
	if (rel->rd_rules != NULL)
		return "it has rules";
	if (check_enable_rls(RelationGetRelid(rel), InvalidOid, true) == RLS_ENABLED)
		return "row-level security applies to its owner";
	if (pg_class_aclcheck(RelationGetRelid(rel), GetUserId(), ACL_DELETE) != ACLCHECK_OK ||
		pg_class_aclcheck(RelationGetRelid(rel), GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		return "its owner lacks DELETE or SELECT on it";
	return NULL;
}

/*
 * Whether index is a ttl purge index of the wanted kind on doc_attno: a
 * valid btree, marked by ttl.enable's comment, on ttl.doc_expiry(doc) (own)
 * or ttl.doc_ts(doc) (inherited).  The comment vouches for the predicate.
 */
static bool
is_purge_index(Relation index, AttrNumber doc_attno, bool own)
{
	List	   *exprs;
	FuncExpr   *func;
	Var		   *arg;
	char	   *comment;

	if (index->rd_rel->relam != BTREE_AM_OID ||
		index->rd_index->indnatts != 1 ||
		!index->rd_index->indisvalid ||
		index->rd_index->indkey.values[0] != 0)
		return false;
	exprs = RelationGetIndexExpressions(index);
	if (list_length(exprs) != 1 || !IsA(linitial(exprs), FuncExpr))
		return false;
	func = (FuncExpr *) linitial(exprs);
	if (list_length(func->args) != 1 || !IsA(linitial(func->args), Var))
		return false;
	arg = (Var *) linitial(func->args);
	if (arg->varattno != doc_attno ||
		get_func_namespace(func->funcid) != get_namespace_oid("ttl", false) ||
		strcmp(get_func_name(func->funcid), own ? "doc_expiry" : "doc_ts") != 0)
		return false;
	comment = GetComment(RelationGetRelid(index), RelationRelationId, 0);
	return comment != NULL && strcmp(comment, TTL_PURGE_INDEX_COMMENT) == 0;
}

/* The purge index of that kind, opened and locked, or NULL. */
static Relation
open_purge_index(Relation rel, AttrNumber doc_attno, bool own)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Oid			indexoid = lfirst_oid(lc);
		Relation	index;

		if (!ConditionalLockRelationOid(indexoid, AccessShareLock))
			continue;
		index = index_open(indexoid, NoLock);
		if (is_purge_index(index, doc_attno, own))
			return index;
		index_close(index, NoLock);
	}
	return NULL;
}

/*
 * Walk the index from lower_key to cutoff (inclusive) and delete each
 * expired row, stopping after limit (< 0: no limit) rows not skipped as
 * busy.  Returns NULL when it ran, else why it did not apply (nothing done).
 */
const char *
ttl_purge_direct(Oid relid, const char *doc_column, bool own,
				 int64 lower_key, int64 cutoff, int64 limit,
				 int32 default_ttl, int64 now_seconds, TtlDirectBatch *out)
{
	Relation	rel;
	Relation	index;
	AttrNumber	doc_attno;
	const char *obstacle;
	Snapshot	snapshot;
	IndexScanDesc scan;
	ScanKeyData keys[2];
	TupleTableSlot *slot;
	MemoryContext row_cxt;
	MemoryContext oldcxt;
	CommandId	cid;

	memset(out, 0, sizeof(TtlDirectBatch));
	out->last_key = lower_key;

	/* the caller holds RowExclusiveLock */
	rel = table_open(relid, NoLock);
	obstacle = direct_delete_obstacle(rel);
	doc_attno = get_attnum(relid, doc_column);
	if (obstacle == NULL && doc_attno == InvalidAttrNumber)
		obstacle = "its document column is missing";
	index = (obstacle == NULL) ? open_purge_index(rel, doc_attno, own) : NULL;
	if (obstacle == NULL && index == NULL)
		obstacle = "its purge index is missing, invalid or locked";
	if (obstacle != NULL)
	{
		table_close(rel, NoLock);
		return obstacle;
	}
	/* a published table without a replica identity cannot DELETE either */
	CheckCmdReplicaIdentity(rel, CMD_DELETE);

	/* a statement's snapshot and command id, as SPI gives the statement path */
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	snapshot = GetActiveSnapshot();
	cid = GetCurrentCommandId(true);

	ScanKeyInit(&keys[0], 1, BTGreaterEqualStrategyNumber, F_INT8GE,
				Int64GetDatum(lower_key));
	ScanKeyInit(&keys[1], 1, BTLessEqualStrategyNumber, F_INT8LE,
				Int64GetDatum(cutoff));
	scan = index_beginscan(rel, index, snapshot, 2, 0);
	index_rescan(scan, keys, 2, NULL, 0);
	slot = table_slot_create(rel, NULL);
	row_cxt = AllocSetContextCreate(CurrentMemoryContext, "ttl purge row",
									ALLOCSET_SMALL_SIZES);

	while ((limit < 0 || out->found < limit) &&
		   index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		doc;
		int64		ts;
		int64		expiry;
		bool		expires;
		TM_Result	result;
		TM_FailureData tmfd;

		CHECK_FOR_INTERRUPTS();
		doc = slot_getattr(slot, doc_attno, &isnull);
		if (isnull)
			continue;			/* cannot be in a purge index */
		oldcxt = MemoryContextSwitchTo(row_cxt);
		expires = ttl_doc_expiry(DatumGetJsonbP(doc), default_ttl, &ts, &expiry);
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(row_cxt);

		if (!expires || expiry > now_seconds)
		{
			/* not due after all (it cannot be, unless the index lies) */
			out->found++;
			out->last_key = own ? (expires ? expiry : ts) : ts;
			continue;
		}
		result = table_tuple_delete(rel, &slot->tts_tid, cid, snapshot,
									InvalidSnapshot, false, &tmfd, false);
		if (result == TM_Ok)
			out->deleted++;
		else if (result != TM_BeingModified && result != TM_Updated &&
				 result != TM_Deleted && result != TM_SelfModified)
			elog(ERROR, "unexpected table_tuple_delete status %d", (int) result);
		if (result == TM_Ok || result == TM_SelfModified)
		{
			out->found++;
			out->last_key = own ? expiry : ts;
		}
		/* else: busy (locked, being changed, or changed since): skipped */
	}

	MemoryContextDelete(row_cxt);
	ExecDropSingleTupleTableSlot(slot);
	index_endscan(scan);
	index_close(index, NoLock);
	table_close(rel, NoLock);
	PopActiveSnapshot();
	CommandCounterIncrement();
	return NULL;
}
