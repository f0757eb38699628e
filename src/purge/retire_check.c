/*
 * retire_check.c
 *		Whether a leaf of a partitioned container may be retired whole
 *		(purge_retire.c) instead of purged row by row: what would keep it
 *		(ttl_retire_obstacle), and whether every item in it has expired
 *		(ttl_retire_leaf_due), answered by index probes, not a scan.
 *
 * The exactness test.  The leaf's purge index (ttl.doc_purge_key, a btree:
 * document/purge_key.c) keys items inheriting the default by _ts, items
 * with their own positive ttl by _ts + ttl, in two disjoint ranges, and
 * items that never expire ("ttl": -1, or no _ts) NULL.  Every item has
 * expired at the cutoff when no visible entry of the index is
 *		NULL (an item that never expires),
 *		in the inherited range above cutoff - default (with a default of -1
 *			the whole inherited range: it never expires),
 *		in the own range above the cutoff;
 * three probes, each the first visible entry of a range, which cost the
 * entries above the cutoff (none for a due leaf) plus the dead entries met
 * on the way.  A leaf with no visible entry at all is empty and is not
 * retired: a partition made ahead of time for future rows is empty too.
 * A deadline (rule 9) only brings an item's expiry earlier, so an item
 * the probes find live may be due by its deadline: the leaf is then kept
 * and that item is purged by rows, never the other way round.  Only the
 * 1.3 btree serves the test (a BRIN gives page ranges, not the largest
 * key, and the 1.0-1.2 partial indexes do not hold the items that never
 * expire); a leaf without it is purged by rows.
 *
 * What keeps a leaf, whatever its items: what a row DELETE would run and a
 * DROP would skip (DELETE triggers, referencing foreign keys, rules,
 * row-level security: ttl_relation_obstacle, on the leaf and each
 * partitioned table above it up to the container); another owner than the
 * container's on the leaf or above it (registry/leaf_owner.c); rows
 * recorded as failing (insight/purge_failures.c); a publication while
 * ttl.mark_purge_deletes is off (a subscriber would keep the rows: pgoutput
 * does not apply a dropped table, nor ttl's messages); an archive that is
 * missing or has another owner (a retired leaf goes into the archive:
 * retire_archive.c); legal holds, unless a GIN index of the leaf answers
 * doc @> match, which is then probed for each hold.
 *
 * Locking: the caller holds the leaf (AccessShareLock for the look before
 * the retire step's lock, AccessExclusiveLock for the check that decides)
 * and runs as the container's owner in a security-restricted operation
 * with a pinned search_path (the hold probe plans a query on the leaf).
 * Indexes are opened AccessShareLock.  The probes read with a fresh
 * snapshot (GetLatestSnapshot): under the AccessExclusiveLock, every
 * writer of the leaf has ended, and the snapshot sees what it committed.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_publication.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "base/compat.h"
#include "base/run_as.h"
#include "base/settings.h"
#include "document/purge_key.h"
#include "insight/purge_failures.h"
#include "purge/mark.h"
#include "purge/purge_internal.h"
#include "registry/leaf_owner.h"
#include "registry/legal_hold.h"

/* Whether rel is in a publication (any action). */
static bool
published(Relation rel)
{
	PublicationDesc desc;

	RelationBuildPublicationDesc(rel, &desc);
	return desc.pubactions.pubinsert || desc.pubactions.pubupdate ||
		desc.pubactions.pubdelete || desc.pubactions.pubtruncate;
}

/* A GIN index of rel on its document column itself that answers @>, or InvalidOid. */
static Oid
containment_index(Relation rel, AttrNumber doc_attno)
{
	ListCell   *lc;

	foreach(lc, RelationGetIndexList(rel))
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		bool		fits;

		fits = index->rd_rel->relam == GIN_AM_OID &&
			index->rd_index->indisvalid &&
			index->rd_index->indnkeyatts >= 1 &&
			index->rd_index->indkey.values[0] == doc_attno &&
			heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL) &&
			index->rd_opcintype[0] == JSONBOID &&
			OidIsValid(get_opfamily_member(index->rd_opfamily[0], JSONBOID, JSONBOID,
										   JsonbContainsStrategyNumber));
		index_close(index, AccessShareLock);
		if (fits)
			return lfirst_oid(lc);
	}
	return InvalidOid;
}

/*
 * Whether a document of leaf contains a hold's match, probed through the
 * leaf's GIN index (the caller checked there is one), as the owner.
 */
static bool
holds_something(Oid leaf, const char *doc_column, const TtlLegalHolds *holds)
{
	Oid			argtypes[1] = {JSONBOID};
	Datum		values[1];
	char	   *sql;
	bool		found = false;
	int			i;

	sql = psprintf("SELECT FROM %s WHERE %s OPERATOR(pg_catalog.@>) $1 LIMIT 1",
				   ttl_only_name(leaf), quote_identifier(doc_column));
	ttl_spi_connect();
	for (i = 0; i < holds->n && !found; i++)
	{
		values[0] = JsonbPGetDatum(holds->matches[i]);
		if (SPI_execute_with_args(sql, 1, argtypes, values, NULL, false, 1) != SPI_OK_SELECT)
			elog(ERROR, "the hold probe of a leaf failed");
		found = SPI_processed > 0;
	}
	SPI_finish();
	return found;
}

/*
 * Whether archive exists and it and every table of its tree have the
 * container's owner: a retired leaf goes into the archive as the
 * container's owner (ATTACH needs to own both tables, the copy inserts
 * with the owner's rights), so an archive of another role's keeps the
 * leaf, whose rows the row purge then refuses to archive, recording why
 * (archive.c).  The retire step checks the archive's whole fit again
 * under its locks (ttl_archive_check_fit).
 */
static bool
archive_owned_alike(Oid container, Oid archive)
{
	Oid			owner = ttl_table_owner(container);
	ListCell   *lc;

	if (get_rel_relkind(archive) == '\0' || ttl_table_owner(archive) != owner)
		return false;
	if (get_rel_relkind(archive) != RELKIND_PARTITIONED_TABLE)
		return true;
	/* unlocked: a partition dropped meanwhile is passed over */
	foreach(lc, find_all_inheritors(archive, NoLock, NULL))
		if (get_rel_relkind(lfirst_oid(lc)) != '\0' &&
			ttl_table_owner(lfirst_oid(lc)) != owner)
			return false;
	return true;
}

/*
 * Why leaf of container must not be retired, whatever its items, or NULL.
 * The caller holds leaf locked and runs as the container's owner.
 */
const char *
ttl_retire_obstacle(Oid container, Oid leaf, const TtlContainer *policy)
{
	Relation	rel;
	const char *obstacle = NULL;
	List	   *ancestors;
	ListCell   *lc;
	TtlLegalHolds *holds;

	if (get_rel_relkind(leaf) != RELKIND_RELATION)
		return "it is not a plain table";
	if (!ttl_leaf_owner_fits(container, leaf))
		return "another role owns it or a partitioned table above it";
	if (OidIsValid(policy->archive) && !archive_owned_alike(container, policy->archive))
		return "the container's archive is missing or another role owns it or one of its partitions";
	if (policy->append_only)
		return "the container is append-only: its BRIN index cannot tell that every item has expired";
	rel = table_open(leaf, NoLock);
	obstacle = ttl_relation_obstacle(rel);
	if (obstacle == NULL && !ttl_mark_applies(container) && published(rel))
		obstacle = "it is in a publication and the container's purge deletes are not marked (ttl.mark_purge_deletes, ttl.set_mark_purge_deletes)";
	if (obstacle == NULL)
	{
		holds = ttl_legal_holds_read(container);
		if (holds != NULL && holds->n > 0)
		{
			AttrNumber	doc_attno = get_attnum(leaf, NameStr(policy->doc_column));

			if (!OidIsValid(containment_index(rel, doc_attno)))
				obstacle = "the container has legal holds and the leaf no GIN index on its documents to probe them";
			else if (holds_something(leaf, NameStr(policy->doc_column), holds))
				obstacle = "it holds an item a legal hold keeps";
		}
	}
	table_close(rel, NoLock);
	if (obstacle != NULL)
		return obstacle;
	/* what a DELETE through the partitioned tables above it would run */
	ancestors = get_partition_ancestors(leaf);
	foreach(lc, ancestors)
	{
		Oid			up = lfirst_oid(lc);

		rel = relation_open(up, AccessShareLock);
		obstacle = ttl_relation_obstacle(rel);
		relation_close(rel, NoLock);
		if (obstacle != NULL || up == container)
			break;
	}
	if (obstacle != NULL)
		return obstacle;
	if (ttl_failures_available() && ttl_failures_in_leaf(container, leaf))
		return "it has rows recorded as failing (ttl.purge_failures)";
	return NULL;
}

/* The leaf's 1.3 btree purge index, opened, or NULL. */
static Relation
open_key_index(Relation rel, AttrNumber doc_attno)
{
	ListCell   *lc;

	foreach(lc, RelationGetIndexList(rel))
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		if (ttl_purge_index_kind(index, doc_attno) == TTL_INDEX_KEY)
			return index;
		index_close(index, AccessShareLock);
	}
	return NULL;
}

/*
 * Whether the index has a visible entry in [low, high] (nulls: a NULL
 * entry), the first one met being enough.
 */
static bool
any_visible(Relation rel, Relation index, Snapshot snapshot, bool nulls,
			int64 low, int64 high)
{
	IndexScanDesc scan;
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	ScanKeyData keys[2];
	int			nkeys;
	bool		found;

	if (nulls)
	{
		ScanKeyEntryInitialize(&keys[0], SK_ISNULL | SK_SEARCHNULL, 1,
							   InvalidStrategy, InvalidOid, InvalidOid,
							   InvalidOid, (Datum) 0);
		nkeys = 1;
	}
	else
	{
		ScanKeyInit(&keys[0], 1, BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(low));
		ScanKeyInit(&keys[1], 1, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(high));
		nkeys = 2;
	}
	scan = ttl_index_beginscan(rel, index, snapshot, nkeys, 0);
	index_rescan(scan, keys, nkeys, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	return found;
}

/*
 * NULL when every item of leaf has expired at now_seconds under policy
 * (and there is at least one), else why not.  Index probes only, with a
 * fresh snapshot; the caller holds the leaf locked.
 */
const char *
ttl_retire_leaf_due(Oid leaf, const TtlContainer *policy, int64 now_seconds)
{
	Relation	rel;
	Relation	index;
	Snapshot	snapshot;
	const char *why = NULL;
	int64		inherited_top = ttl_purge_key_encode(TTL_KEY_INHERITED, PG_INT64_MAX);
	int64		own_top = ttl_purge_key_encode(TTL_KEY_OWN, PG_INT64_MAX);
	AttrNumber	doc_attno;

	if (policy->default_is_null)
		return "time-to-live is off";
	rel = table_open(leaf, NoLock);
	doc_attno = get_attnum(leaf, NameStr(policy->doc_column));
	index = doc_attno == InvalidAttrNumber ? NULL : open_key_index(rel, doc_attno);
	if (index == NULL)
	{
		table_close(rel, NoLock);
		return "it has no valid btree purge index";
	}
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	if (any_visible(rel, index, snapshot, true, 0, 0))
		why = "an item never expires";
	else if (any_visible(rel, index, snapshot, false,
						 policy->default_ttl > 0 ?
						 ttl_purge_key_encode(TTL_KEY_INHERITED,
											  now_seconds - policy->default_ttl) + 1 :
						 ttl_purge_key_low(TTL_KEY_INHERITED),
						 inherited_top))
		why = "an item inheriting the default has not expired";
	else if (any_visible(rel, index, snapshot, false,
						 ttl_purge_key_encode(TTL_KEY_OWN, now_seconds) + 1, own_top))
		why = "an item with its own ttl has not expired";
	else if (!any_visible(rel, index, snapshot, false, PG_INT64_MIN, PG_INT64_MAX))
		why = "it is empty";
	UnregisterSnapshot(snapshot);
	index_close(index, AccessShareLock);
	table_close(rel, NoLock);
	return why;
}
