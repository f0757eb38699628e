/*
 * archive.h
 *		Archive before purge (1.8, archive.c): whether a table can take
 *		a container's purged rows, the INSERT that moves them there in
 *		the statement of their delete (statement deleters), and the copies
 *		the direct deleter inserts in the transaction of its deletes
 *		(archive_rows.c).
 */
#ifndef TTL_ARCHIVE_H
#define TTL_ARCHIVE_H

#include "executor/tuptable.h"
#include "nodes/pg_list.h"
#include "utils/relcache.h"

extern bool ttl_archive_check_fit(Oid container, Oid archive, bool nowait);
extern void ttl_archive_release(Oid archive);
extern void ttl_archive_invalidate(Datum arg, Oid relid);
extern void ttl_archive_check_count(Oid container, Oid archive, int64 deleted,
									int64 archived);
extern char *ttl_archive_insert_sql(Oid container, Oid archive, const char *from);
extern int	ttl_archive_execute(Oid container, Oid archive, const char *sql, int nargs,
								Oid *argtypes, Datum *values, const char *nulls, long count);

/* archive_rows.c: the direct deleter's copies and their INSERT */
typedef struct TtlArchiveRows TtlArchiveRows;

extern TtlArchiveRows *ttl_archive_rows_begin(Oid container, Oid archive);
extern void ttl_archive_rows_add(TtlArchiveRows *rows, Relation leaf, TupleTableSlot *slot);
extern void ttl_archive_rows_flush(TtlArchiveRows *rows);
extern void ttl_archive_rows_end(TtlArchiveRows *rows);

#endif							/* TTL_ARCHIVE_H */
