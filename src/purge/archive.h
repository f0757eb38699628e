/*
 * archive.h
 *		Archive before purge (issue 31, archive.c): whether a table can take
 *		a container's purged rows, and the INSERT that moves them there in
 *		the statement of their delete.
 */
#ifndef TTL_ARCHIVE_H
#define TTL_ARCHIVE_H

#include "nodes/pg_list.h"

extern bool ttl_archive_check_fit(Oid container, Oid archive, bool nowait);
extern char *ttl_archive_insert_sql(Oid container, Oid archive, const char *from);
extern int	ttl_archive_execute(Oid container, Oid archive, const char *sql, int nargs,
								Oid *argtypes, Datum *values, const char *nulls, long count);

#endif							/* TTL_ARCHIVE_H */
