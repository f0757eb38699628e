/*
 * replace_leaf.c
 *		Rule 10's leaf cache: per leaf (a container's table or partition),
 *		its unique btree indexes ready to probe (IndexInfo, predicate), the
 *		row type, its ancestors, the expressions of its stored generated
 *		columns, kept across statements and transactions and dropped by the
 *		leaf's relcache invalidation (ttl.c's callback).  Backend-local: it
 *		holds definitions (and its floor slot's address), never rows.
 *
 * Locking: the indexes are opened with RowExclusiveLock while the entry
 * is built (the statement holds the table); nothing kept holds a lock, a
 * pin or a relation reference.  An entry dropped while a statement uses
 * it is retired and freed at the end of the transaction.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/partition.h"
#include "catalog/pg_am.h"
#include "executor/executor.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "base/compat.h"
#include "stamp/replace.h"
#include "stamp/replace_floor.h"
#include "stamp/replace_leaf.h"

/* ---- the leaf's cache ---- */

/*
 * Per leaf (hash on its OID).  Building an entry costs a one-row INSERT
 * more than its probe (catalog look-ups for every key's operator), so it
 * is kept across statements.  A dropped entry may still serve a running
 * statement (an inner write of the same leaf from a trigger can rebuild
 * it meanwhile), so it is retired, and freed at the end of the transaction.
 */
typedef struct LeafEntry
{
	Oid			relid;			/* hash key */
	LeafInfo   *info;
} LeafEntry;

static HTAB *leaf_cache = NULL;
static LeafInfo *retired = NULL;

static void
retire_entry(LeafEntry *entry)
{
	entry->info->next = retired;
	retired = entry->info;
	hash_search(leaf_cache, &entry->relid, HASH_REMOVE, NULL);
}

/* A relcache callback (ttl.c registers it): cached leaves go stale. */
void
ttl_replace_invalidate(Datum arg, Oid relid)
{
	LeafEntry  *entry;

	/* rule 10's floor of the leaf is unknown from now on (replace_floor.c) */
	if (relid != InvalidOid)
		ttl_floor_reset(relid);
	if (leaf_cache == NULL)
		return;
	if (relid != InvalidOid)
	{
		entry = hash_search(leaf_cache, &relid, HASH_FIND, NULL);
		if (entry != NULL)
			retire_entry(entry);
	}
	else
	{
		HASH_SEQ_STATUS status;

		hash_seq_init(&status, leaf_cache);
		while ((entry = hash_seq_search(&status)) != NULL)
			retire_entry(entry);
	}
}

/* At the end of a transaction no statement uses a retired entry any more. */
void
ttl_leaf_free_retired(void)
{
	while (retired != NULL)
	{
		LeafInfo   *info = retired;

		retired = info->next;
		MemoryContextDelete(info->mcxt);
	}
}

/* The unique btree indexes of rel, with what the probe needs. */
static void
load_indexes(LeafInfo *leaf, Relation rel)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;

	leaf->indexes = palloc0(sizeof(ReplaceIndex) * Max(list_length(indexes), 1));
	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), RowExclusiveLock);
		Form_pg_index form = index->rd_index;
		ReplaceIndex *u = &leaf->indexes[leaf->nindexes];

		if (form->indisunique && form->indisvalid && form->indisready &&
			!form->indisexclusion && index->rd_rel->relam == BTREE_AM_OID)
		{
			u->indexoid = RelationGetRelid(index);
			u->info = BuildIndexInfo(index);
			BuildSpeculativeIndexInfo(index, u->info);
			if (u->info->ii_Predicate != NIL)
				u->predicate = ExecPrepareQual(u->info->ii_Predicate, leaf->estate);
			leaf->nindexes++;
		}
		index_close(index, NoLock);
	}
	list_free(indexes);
}

static LeafInfo *
build_leaf(Relation rel)
{
	MemoryContext mcxt = AllocSetContextCreate(CacheMemoryContext, "ttl rule 10 leaf",
											   ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(mcxt);
	LeafInfo   *leaf = palloc0(sizeof(LeafInfo));
	List	   *ancestors = rel->rd_rel->relispartition ?
		get_partition_ancestors(RelationGetRelid(rel)) : NIL;
	ListCell   *lc;

	leaf->mcxt = mcxt;
	leaf->ancestors = palloc(sizeof(Oid) * (list_length(ancestors) + 1));
	leaf->ancestors[leaf->nancestors++] = RelationGetRelid(rel);
	foreach(lc, ancestors)
		leaf->ancestors[leaf->nancestors++] = lfirst_oid(lc);
	leaf->estate = CreateExecutorState();
	leaf->desc = CreateTupleDescCopy(RelationGetDescr(rel));
	leaf->table_ops = table_slot_callbacks(rel);
	load_indexes(leaf, rel);
	/*
	 * A unique key may be (or read) a stored generated column, which the
	 * executor computes only after the BEFORE triggers: the probe computes
	 * them on its copy of the row (replace.c) with expressions prepared
	 * here, in the leaf's EState.  The ResultRelInfo names the statement's
	 * relation only while it is used.
	 */
	if (leaf->nindexes > 0 && RelationGetDescr(rel)->constr != NULL &&
		RelationGetDescr(rel)->constr->has_generated_stored)
	{
		leaf->generated = makeNode(ResultRelInfo);
		leaf->generated->ri_RelationDesc = rel;
		ttl_init_stored_generated(leaf->generated, leaf->estate);
		leaf->generated->ri_RelationDesc = NULL;
	}
	MemoryContextSwitchTo(old);
	return leaf;
}

/* The leaf's cached entry, built if missing. */
LeafInfo *
ttl_leaf_info(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	LeafEntry  *entry;
	bool		found;
	LeafInfo   *leaf;

	if (leaf_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(LeafEntry);
		leaf_cache = hash_create("ttl rule 10 leaves", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	entry = hash_search(leaf_cache, &relid, HASH_FIND, NULL);
	if (entry != NULL)
		return entry->info;
	/* built first: building may take invalidations, which edit the hash */
	leaf = build_leaf(rel);
	entry = hash_search(leaf_cache, &relid, HASH_ENTER, &found);
	if (found)
	{
		entry->info->next = retired;	/* cannot happen; keep it safe */
		retired = entry->info;
	}
	entry->info = leaf;
	return leaf;
}
