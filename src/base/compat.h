/*
 * compat.h
 *		Every difference between the PostgreSQL majors ttl builds on (15 to
 *		18), in one place: thin macros and static inline wrappers, each guard
 *		at the release that made the change.  No other file tests
 *		PG_VERSION_NUM.
 *
 * Tested majors: 15, 17, 18.  16 is expected to build (every change below
 * that 16 introduced is guarded at 160000) but is not tested.
 *
 * Include it after postgres.h and the PostgreSQL headers a file needs; it
 * includes only PostgreSQL headers, never a ttl one (no include loop).
 */
#ifndef TTL_COMPAT_H
#define TTL_COMPAT_H

#include "miscadmin.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "lib/dshash.h"
#include "catalog/pg_class.h"
#include "executor/nodeModifyTable.h"
#include "nodes/parsenodes.h"
#include "nodes/tidbitmap.h"
#include "parser/parsetree.h"
#include "replication/message.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "rewrite/prs2lock.h"
#include "rewrite/rewriteManip.h"
#include "storage/proc.h"
#include "utils/backend_status.h"
#include "utils/acl.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/wait_event.h"

#if PG_VERSION_NUM >= 170000
#include "storage/dsm_registry.h"
#endif

#if PG_VERSION_NUM >= 160000
#include "catalog/pg_database.h"
#include "catalog/pg_tablespace.h"
#include "parser/parse_relation.h"
/* 16 moved the varlena header macros out of postgres.h */
#include "varatt.h"
#endif

/* ---- 16: pg_<class>_ownercheck/aclcheck became object_*(classid, ...) ---- */
#if PG_VERSION_NUM >= 160000
#define ttl_class_ownercheck(relid, roleid) \
	object_ownercheck(RelationRelationId, (relid), (roleid))
#define ttl_database_ownercheck(dbid, roleid) \
	object_ownercheck(DatabaseRelationId, (dbid), (roleid))
#define ttl_tablespace_aclcheck(spcid, roleid, mode) \
	object_aclcheck(TableSpaceRelationId, (spcid), (roleid), (mode))
#else
#define ttl_class_ownercheck(relid, roleid) \
	pg_class_ownercheck((relid), (roleid))
#define ttl_database_ownercheck(dbid, roleid) \
	pg_database_ownercheck((dbid), (roleid))
#define ttl_tablespace_aclcheck(spcid, roleid, mode) \
	pg_tablespace_aclcheck((spcid), (roleid), (mode))
#endif

/* ---- 16: DecodeDateTime reports details through a DateTimeErrorExtra ---- */
static inline int
ttl_decode_datetime(char **field, int *ftype, int nf, int *dtype,
					struct pg_tm *tm, fsec_t *fsec, int *tzp)
{
#if PG_VERSION_NUM >= 160000
	DateTimeErrorExtra extra;

	return DecodeDateTime(field, ftype, nf, dtype, tm, fsec, tzp, &extra);
#else
	return DecodeDateTime(field, ftype, nf, dtype, tm, fsec, tzp);
#endif
}

/* ---- 16: stringToQualifiedNameList reports syntax errors to an escontext ---- */
#if PG_VERSION_NUM >= 160000
#define ttl_string_to_qualified_name_list(s) stringToQualifiedNameList((s), NULL)
#else
#define ttl_string_to_qualified_name_list(s) stringToQualifiedNameList(s)
#endif

/*
 * ---- 16: a GUC check hook's extra is released with guc_free(), so it must
 * come from guc_malloc() (LOG: return NULL rather than throw, as the check
 * hook protocol wants); before 16 GUC memory was plain malloc/free.
 */
#if PG_VERSION_NUM >= 160000
#define ttl_guc_malloc(size) guc_malloc(LOG, (size))
#else
#define ttl_guc_malloc(size) malloc(size)
#endif

/* ---- 17: IsBackgroundWorker became AmBackgroundWorkerProcess() ---- */
#if PG_VERSION_NUM >= 170000
#define ttl_am_background_worker() AmBackgroundWorkerProcess()
#else
#define ttl_am_background_worker() IsBackgroundWorker
#endif

/* ---- 17: PGPROC's lxid moved into its vxid ---- */
#if PG_VERSION_NUM >= 170000
#define ttl_proc_lxid(proc) ((proc)->vxid.lxid)
#else
#define ttl_proc_lxid(proc) ((proc)->lxid)
#endif

/*
 * ---- 17: custom wait events.  A wait named by ttl shows in
 * pg_stat_activity.wait_event (type Extension) under its own name; the id is
 * allocated in shared memory on first use and cached by the caller in
 * *cached (0: not yet).  Before 17 every extension wait is "Extension".
 */
static inline uint32
ttl_wait_event(uint32 *cached, const char *name)
{
#if PG_VERSION_NUM >= 170000
	if (*cached == 0)
		*cached = WaitEventExtensionNew(name);
	return *cached;
#else
	(void) cached;
	(void) name;
	return PG_WAIT_EXTENSION;
#endif
}

/*
 * ---- 17: shared memory by name at run time (the DSM registry), for what
 * ttl shows without shared_preload_libraries: the segment name is made
 * once per cluster, of size bytes, by the first backend to ask (init runs
 * there, under the registry's lock), and attached by the others.  Before
 * 17 there is none: NULL.
 */
static inline void *
ttl_named_shmem(const char *name, size_t size, void (*init) (void *ptr), bool *found)
{
#if PG_VERSION_NUM >= 170000
	return GetNamedDSMSegment(name, size, init, found);
#else
	(void) name;
	(void) size;
	(void) init;
	*found = false;
	return NULL;
#endif
}

/*
 * ---- 16: a range table entry's permission check (requiredPerms,
 * checkAsUser, selectedCols...) moved out of the entry into an
 * RTEPermissionInfo in Query->rteperminfos, found by rte->perminfoindex
 * (1-based; 0: no check; one entry per RTE).
 */

/* The columns query reads of the relation of rte (for its SELECT check). */
static inline Bitmapset *
ttl_rte_selected_cols(Query *query, RangeTblEntry *rte)
{
#if PG_VERSION_NUM >= 160000
	if (rte->perminfoindex == 0)
		return NULL;
	return getRTEPermissionInfo(query->rteperminfos, rte)->selectedCols;
#else
	(void) query;
	return rte->selectedCols;
#endif
}

/* Does rte carry a permission check? */
static inline bool
ttl_rte_checks_perms(RangeTblEntry *rte)
{
#if PG_VERSION_NUM >= 160000
	return rte->perminfoindex != 0;
#else
	return rte->requiredPerms != 0;
#endif
}

/*
 * copy, a copy of rte (an entry of query src), is to be added to the range
 * table of query dst: on 16+ rte's permission info is copied into dst's
 * rteperminfos and copy points at it (as CombineRangeTables does for a
 * pulled-up subquery).  15 keeps the check on the entry itself.
 */
static inline void
ttl_copy_perminfo_to(Query *dst, Query *src, RangeTblEntry *rte, RangeTblEntry *copy)
{
#if PG_VERSION_NUM >= 160000
	if (rte->perminfoindex != 0)
	{
		RTEPermissionInfo *perminfo = getRTEPermissionInfo(src->rteperminfos, rte);

		dst->rteperminfos = lappend(dst->rteperminfos, copyObject(perminfo));
		copy->perminfoindex = list_length(dst->rteperminfos);
	}
#else
	(void) dst;
	(void) src;
	(void) rte;
	(void) copy;
#endif
}

/*
 * A shallow copy of a relation entry (memcpy) shares its pointers; on 15
 * those include the permission check's column sets, which belong to the
 * entry: give copy its own (16+ keeps them in RTEPermissionInfo, copied by
 * ttl_copy_perminfo_to).
 */
static inline void
ttl_own_rte_perm_columns(RangeTblEntry *copy)
{
#if PG_VERSION_NUM < 160000
	copy->selectedCols = bms_copy(copy->selectedCols);
	copy->insertedCols = bms_copy(copy->insertedCols);
	copy->updatedCols = bms_copy(copy->updatedCols);
	copy->extraUpdatedCols = bms_copy(copy->extraUpdatedCols);
#else
	(void) copy;
#endif
}

/* A deep copy of rte, an entry of query src, for the range table of dst. */
static inline RangeTblEntry *
ttl_copy_rte_to(Query *dst, Query *src, RangeTblEntry *rte)
{
	RangeTblEntry *copy = copyObject(rte);

	ttl_copy_perminfo_to(dst, src, rte, copy);
	return copy;
}

/*
 * ---- 16: views lost their OLD/NEW range table entries.
 *
 * A security_barrier view that the rewriter expanded into the subquery
 * entry rte of query: returns the entry that carries the reader's
 * permission check on the view, as a relation entry that query can keep in
 * its range table (unreferenced, as PostgreSQL keeps a pulled-up view's),
 * and sets *selected to the view's columns the query reads.  NULL when rte
 * is no view's expansion.
 *
 * 15: the rewriter moved the check to the view query's OLD entry
 * (PRS2_OLD_VARNO), a relation entry of the view.  16+: the subquery entry
 * itself keeps relid, relkind, rellockmode and perminfoindex (its
 * permission info stays in query->rteperminfos, so the copy keeps the same
 * index and the info is still referenced exactly once once rte is
 * replaced).  ttl_view_old_varno is the view query's OLD entry, 0 if none.
 */
#if PG_VERSION_NUM >= 160000
#define ttl_view_old_varno 0
#else
#define ttl_view_old_varno PRS2_OLD_VARNO
#endif

static inline RangeTblEntry *
ttl_view_perm_rte(Query *query, RangeTblEntry *rte, Bitmapset **selected)
{
	RangeTblEntry *perm;

#if PG_VERSION_NUM >= 160000
	if (!OidIsValid(rte->relid) || rte->relkind != RELKIND_VIEW ||
		rte->perminfoindex == 0)
		return NULL;
	*selected = ttl_rte_selected_cols(query, rte);
	perm = copyObject(rte);
	perm->rtekind = RTE_RELATION;
	perm->subquery = NULL;
	perm->security_barrier = false;
#else
	RangeTblEntry *old = rt_fetch(PRS2_OLD_VARNO, rte->subquery->rtable);

	(void) query;
	if (old->rtekind != RTE_RELATION || old->relkind != RELKIND_VIEW)
		return NULL;
	*selected = old->selectedCols;
	perm = copyObject(old);
#endif
	perm->inFromCl = false;
	return perm;
}

/* ---- 18: ReplaceVarsFromTargetList takes the result relation (RETURNING old/new) ---- */
static inline Node *
ttl_replace_vars_from_tlist(Node *node, int target_varno, int sublevels_up,
							RangeTblEntry *target_rte, List *targetlist,
							ReplaceVarsNoMatchOption nomatch_option,
							int nomatch_varno, bool *outer_hasSubLinks)
{
#if PG_VERSION_NUM >= 180000
	return ReplaceVarsFromTargetList(node, target_varno, sublevels_up,
									 target_rte, targetlist, 0,
									 nomatch_option, nomatch_varno,
									 outer_hasSubLinks);
#else
	return ReplaceVarsFromTargetList(node, target_varno, sublevels_up,
									 target_rte, targetlist,
									 nomatch_option, nomatch_varno,
									 outer_hasSubLinks);
#endif
}

/*
 * ---- 18: ExecutorRun (and its hook) lost the execute_once argument.
 * TTL_EXECUTOR_RUN_PARAMS declares a hook's parameters, queryDesc,
 * direction, count (and execute_once before 18); TTL_EXECUTOR_RUN_ARGS
 * passes them on.
 */
#if PG_VERSION_NUM >= 180000
#define TTL_EXECUTOR_RUN_PARAMS \
	QueryDesc *queryDesc, ScanDirection direction, uint64 count
#define TTL_EXECUTOR_RUN_ARGS queryDesc, direction, count
#else
#define TTL_EXECUTOR_RUN_PARAMS \
	QueryDesc *queryDesc, ScanDirection direction, uint64 count, bool execute_once
#define TTL_EXECUTOR_RUN_ARGS queryDesc, direction, count, execute_once
#endif

/*
 * ---- 18: index_beginscan and index_beginscan_bitmap take an
 * IndexScanInstrumentation (NULL: none).
 */
#if PG_VERSION_NUM >= 180000
#define ttl_index_beginscan(heap, index, snap, nkeys, norderbys) \
	index_beginscan((heap), (index), (snap), NULL, (nkeys), (norderbys))
#define ttl_index_beginscan_bitmap(index, snap, nkeys) \
	index_beginscan_bitmap((index), (snap), NULL, (nkeys))
#else
#define ttl_index_beginscan(heap, index, snap, nkeys, norderbys) \
	index_beginscan((heap), (index), (snap), (nkeys), (norderbys))
#define ttl_index_beginscan_bitmap(index, snap, nkeys) \
	index_beginscan_bitmap((index), (snap), (nkeys))
#endif

/*
 * ---- 18: the TID bitmap's iterator API.  18 made the backend-local
 * iterator a TBMPrivateIterator, tbm_private_iterate() fills a caller's
 * TBMIterateResult (lossy flag; offsets come from tbm_extract_page_tuple).
 * TtlTbmPage is one page of the bitmap either way: its block and its
 * offsets (ntuples < 0: lossy, every offset of the page may match).
 */
typedef struct TtlTbmPage
{
	BlockNumber blockno;
	int			ntuples;
	OffsetNumber offsets[MaxHeapTuplesPerPage];
} TtlTbmPage;

#if PG_VERSION_NUM >= 180000
typedef TBMPrivateIterator TtlTbmIterator;
#define ttl_tbm_begin_iterate(tbm) tbm_begin_private_iterate(tbm)
#define ttl_tbm_end_iterate(it) tbm_end_private_iterate(it)
#else
typedef TBMIterator TtlTbmIterator;
#define ttl_tbm_begin_iterate(tbm) tbm_begin_iterate(tbm)
#define ttl_tbm_end_iterate(it) tbm_end_iterate(it)
#endif

/* The next page of iterator into *page; false at the end. */
static inline bool
ttl_tbm_iterate(TtlTbmIterator *iterator, TtlTbmPage *page)
{
#if PG_VERSION_NUM >= 180000
	TBMIterateResult res;

	if (!tbm_private_iterate(iterator, &res))
		return false;
	page->blockno = res.blockno;
	page->ntuples = res.lossy ? -1 :
		tbm_extract_page_tuple(&res, page->offsets, MaxHeapTuplesPerPage);
#else
	TBMIterateResult *res = tbm_iterate(iterator);

	if (res == NULL)
		return false;
	page->blockno = res->blockno;
	page->ntuples = res->ntuples;
	if (res->ntuples > 0)
		memcpy(page->offsets, res->offsets, res->ntuples * sizeof(OffsetNumber));
#endif
	return true;
}

/*
 * ---- 16: replorigin_session_setup() takes acquired_by (0: this session
 * takes the origin alone, as on 15).
 */
static inline void
ttl_replorigin_session_setup(RepOriginId origin)
{
#if PG_VERSION_NUM >= 160000
	replorigin_session_setup(origin, 0);
#else
	replorigin_session_setup(origin);
#endif
}

/*
 * ---- 18: the replication origins' state slots have their own setting,
 * max_active_replication_origins; before, max_replication_slots.
 */
#if PG_VERSION_NUM >= 180000
#define ttl_origin_capacity() (max_active_replication_origins)
#define ttl_origin_capacity_name "max_active_replication_origins"
#else
#define ttl_origin_capacity() (max_replication_slots)
#define ttl_origin_capacity_name "max_replication_slots"
#endif

/* ---- 17: LogLogicalMessage() can flush; ttl's messages never do. ---- */
static inline XLogRecPtr
ttl_log_logical_message(const char *prefix, const char *message, size_t size,
						bool transactional)
{
#if PG_VERSION_NUM >= 170000
	return LogLogicalMessage(prefix, message, size, transactional, false);
#else
	return LogLogicalMessage(prefix, message, size, transactional);
#endif
}

/*
 * ---- 16: a replication slot's invalidation became a cause
 * (data.invalidated); 15 kept the restart_lsn it had (data.invalidated_at).
 * For replication_lag.c, which reads a copy of a slot's data. ----
 */
static inline bool
ttl_slot_invalidated(const ReplicationSlotPersistentData *data)
{
#if PG_VERSION_NUM >= 160000
	return data->invalidated != RS_INVAL_NONE;
#else
	return !XLogRecPtrIsInvalid(data->invalidated_at);
#endif
}

/*
 * ---- 16: the local copy of the backends' status (what pg_stat_activity
 * reads) is walked with pgstat_get_local_beentry_by_index (1-based), no
 * longer pgstat_fetch_stat_local_beentry. ----
 */
static inline LocalPgBackendStatus *
ttl_local_beentry(int index)
{
#if PG_VERSION_NUM >= 160000
	return pgstat_get_local_beentry_by_index(index);
#else
	return pgstat_fetch_stat_local_beentry(index);
#endif
}

/*
 * ---- 17: dshash_parameters gained copy_function (how a key is copied in);
 * ttl's keys are plain bytes. ----
 */
static inline dshash_parameters
ttl_dshash_params(size_t key_size, size_t entry_size, int tranche_id)
{
	dshash_parameters params;

	memset(&params, 0, sizeof(params));
	params.key_size = key_size;
	params.entry_size = entry_size;
	params.compare_function = dshash_memcmp;
	params.hash_function = dshash_memhash;
#if PG_VERSION_NUM >= 170000
	params.copy_function = dshash_memcpy;
#endif
	params.tranche_id = tranche_id;
	return params;
}

/*
 * ---- 18: ExecInitStoredGenerated became ExecInitGenerated (virtual
 * generated columns came); both prepare the stored generated columns'
 * expressions of a ResultRelInfo for ExecComputeStoredGenerated. ----
 */
#if PG_VERSION_NUM >= 180000
#define ttl_init_stored_generated(rri, estate) \
	ExecInitGenerated((rri), (estate), CMD_INSERT)
#else
#define ttl_init_stored_generated(rri, estate) \
	ExecInitStoredGenerated((rri), (estate), CMD_INSERT)
#endif

/*
 * ---- 16: build_attrmap_by_name takes missing_ok (false: a column of
 * outdesc missing from indesc is an error, as before 16). ----
 */
#if PG_VERSION_NUM >= 160000
#define ttl_build_attrmap_by_name(indesc, outdesc) \
	build_attrmap_by_name((indesc), (outdesc), false)
#else
#define ttl_build_attrmap_by_name(indesc, outdesc) \
	build_attrmap_by_name((indesc), (outdesc))
#endif

#endif							/* TTL_COMPAT_H */
