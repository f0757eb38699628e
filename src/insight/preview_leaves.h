/*
 * preview_leaves.h
 *		ttl.preview() (preview.c) and ttl.expiring() (expiring.c): what a
 *		container's items look like under its present default and a
 *		proposed one, and which items expire within a window, answered from
 *		the purge btree (index_count.c) where the fast path applies, else by
 *		an exact scan.  What both share is in preview_leaves.c.
 */
#ifndef TTL_PREVIEW_LEAVES_H
#define TTL_PREVIEW_LEAVES_H

#include "fmgr.h"
#include "datatype/timestamp.h"
#include "utils/relcache.h"

#include "registry/registry.h"

/* One leaf of a container: a table with storage, its document column. */
typedef struct TtlPreviewLeaf
{
	Relation	rel;
	AttrNumber	doc_attno;
	Relation	key_index;		/* the 1.3 purge btree (fast path), or NULL */
} TtlPreviewLeaf;

extern bool ttl_preview_fast_path_applies(const TtlContainer *c);
extern int64 ttl_unix_floor_seconds(TimestampTz t);
extern void ttl_preview_null_argument(const char *name);
extern TimestampTz ttl_preview_at_arg(FunctionCallInfo fcinfo, int argno);
extern Oid	ttl_preview_container_arg(FunctionCallInfo fcinfo, const char *fname,
									  TtlContainer *c);
extern TtlPreviewLeaf *ttl_preview_open_leaves(Oid relid, const TtlContainer *c, bool fast,
											   int *nleaves);
extern void ttl_preview_close_leaves(TtlPreviewLeaf *leaves, int nleaves);

#endif							/* TTL_PREVIEW_LEAVES_H */
