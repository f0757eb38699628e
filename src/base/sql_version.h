/*
 * sql_version.h
 *		The version of ttl's SQL installed in the current database
 *		(pg_extension.extversion), read once and kept until pg_extension
 *		changes (sql_version.c).  The library serves a database whose SQL
 *		is older unchanged: every feature that needs objects of a later
 *		script asks ttl_sql_at_least() first, never whether one of those
 *		objects exists.
 */
#ifndef TTL_SQL_VERSION_H
#define TTL_SQL_VERSION_H

/* A version as one number: major * 100 + minor (1.9 is 109); 0: not installed. */
#define TTL_SQL_VERSION(major, minor) ((major) * 100 + (minor))

extern int	ttl_sql_version(void);
extern bool ttl_sql_at_least(int major, int minor);
extern void ttl_sql_version_forget(Datum arg, int cacheid, uint32 hashvalue);

#endif							/* TTL_SQL_VERSION_H */
