/*
 * live_view_parts.h
 *		The helpers of live_view.c's flattening that live in files of their
 *		own: the recognition of a live view's query (live_view_shape.c),
 *		the column mapping over dropped columns (live_view_columns.c) and
 *		the recognition of Citus shard reads (live_view_shard.c).
 *		Private to the live view module; neither file calls live_view.c.
 */
#ifndef TTL_LIVE_VIEW_PARTS_H
#define TTL_LIVE_VIEW_PARTS_H

#include "nodes/parsenodes.h"

/* live_view_shape.c */
extern int	ttl_live_view_table_index(Query *view);

/* live_view_columns.c */
extern bool ttl_only_dropped_between(Oid relid, AttrNumber from, AttrNumber to);
extern bool ttl_identity_columns(Query *view);
extern Alias *ttl_live_table_eref(RangeTblEntry *view_rte, RangeTblEntry *table, Query *view);

/* live_view_shard.c */
extern bool ttl_is_shipped_shard_read(Query *query, int rti, Query *view, int table_rti);
extern void ttl_name_shipped_outputs(RangeTblEntry *rte);

#endif							/* TTL_LIVE_VIEW_PARTS_H */
