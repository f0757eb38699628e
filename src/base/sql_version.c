/*
 * sql_version.c
 *		Owns the one read of the installed SQL version of ttl in the current
 *		database: pg_extension.extversion of "ttl", parsed as major.minor
 *		and kept in a backend-local number.  A backend is connected to one
 *		database for its life, so one number is the current database's.
 *		Every version gate of the library (rule 10 from 1.7, ttl.indexes
 *		and legal holds from 1.8, the trigger arguments' format from 1.9,
 *		...) compares against it instead of looking for an object a script
 *		creates: one catalog read per change of pg_extension instead of one
 *		lookup per gate, and a gate cannot be fooled by a table renamed or
 *		dropped by hand.
 *
 * Invalidation: ttl.c registers ttl_sql_version_forget as a syscache
 * callback on EXTENSIONOID, which fires for every change of a pg_extension
 * row (CREATE, ALTER ... UPDATE, DROP EXTENSION, in this backend at the
 * next command, in the others when they next accept invalidations; an
 * aborted change is undone the same way).  Inside ALTER EXTENSION UPDATE
 * the row carries the version being installed before that step's script
 * runs, so the script's own statements see the new version.
 *
 * Locking: none; the catalog is read through the syscache.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

#include "base/sql_version.h"

/* -1: not read since the last change of pg_extension */
static int	cached_version = -1;

/* A syscache callback on EXTENSIONOID (ttl.c registers it). */
void
ttl_sql_version_forget(Datum arg, int cacheid, uint32 hashvalue)
{
	cached_version = -1;
}

/*
 * "1.9" as 109.  A string that is not major.minor was not written by one
 * of ttl's scripts (only a hand edit of the catalog makes one): it counts
 * as this library's own version, so that no feature is turned off by it.
 */
static int
parse_version(const char *s)
{
	int			major;
	int			minor;
	char		rest;

	if (sscanf(s, "%d.%d%c", &major, &minor, &rest) != 2 ||
		major < 0 || minor < 0 || minor > 99 || major > 9999)
		return TTL_SQL_VERSION(9999, 99);
	return TTL_SQL_VERSION(major, minor);
}

static int
read_version(void)
{
	Oid			ext = get_extension_oid("ttl", true);
	HeapTuple	tup;
	Datum		d;
	bool		isnull;
	int			version = 0;

	if (!OidIsValid(ext))
		return 0;
	tup = SearchSysCache1(EXTENSIONOID, ObjectIdGetDatum(ext));
	if (!HeapTupleIsValid(tup))
		return 0;
	d = SysCacheGetAttr(EXTENSIONOID, tup, Anum_pg_extension_extversion, &isnull);
	if (!isnull)
	{
		char	   *s = TextDatumGetCString(d);

		version = parse_version(s);
		pfree(s);
	}
	ReleaseSysCache(tup);
	return version;
}

/* The installed version (major * 100 + minor), 0 when ttl is not installed. */
int
ttl_sql_version(void)
{
	while (cached_version < 0)
	{
		int			version;

		/* a change accepted while the catalog is read sets it back to -1 */
		cached_version = -2;
		version = read_version();
		if (cached_version == -2)
			cached_version = version;
	}
	return cached_version;
}

/* Is the installed SQL at least major.minor (false when not installed)? */
bool
ttl_sql_at_least(int major, int minor)
{
	return ttl_sql_version() >= TTL_SQL_VERSION(major, minor);
}
