/*
 * legal_hold_admin.c
 *		The SQL functions that set, replace and release a legal hold
 *		(1.8): ttl.set_legal_hold(container, name, match) and
 *		ttl.release_legal_hold(container, name).  What a hold does is
 *		registry/legal_hold.c's (the table read in C) and purge_hold.c's
 *		(purge and rule 10 leave held items alone).
 *
 * Locking: the caller must own the table; the change is made under the
 * container's purge and replace locks (ttl_lock_container, held until
 * commit), which every purge batch and every rule 10 writer hold while
 * they read the holds: a batch that started before the hold has committed
 * before it is set (its deletes are done), and every batch after it reads
 * it.  The row is written as the extension's owner (ttl_registry_execute),
 * since users have no write privilege on ttl.legal_hold.  The container's
 * floors (ttl.legal_hold_floor) are reset in the same transaction.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"

#include "base/run_as.h"
#include "base/sql_version.h"
#include "registry/legal_hold.h"
#include "registry/policy.h"
#include "registry/registry.h"

/*
 * The checks both functions share: arguments not null, the caller owns a
 * container that is not distributed, the extension's SQL has holds; then
 * the container's lock.
 */
static Oid
begin_hold_change(FunctionCallInfo fcinfo, char **name)
{
	Oid			relid;
	TtlContainer c;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("container must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("legal hold name must not be null")));
	relid = PG_GETARG_OID(0);
	ttl_check_relation_exists(relid);
	ttl_check_container_owner(relid);
	ttl_get_container(relid, &c);
	*name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if ((*name)[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("legal hold name of container %s must not be empty",
						ttl_relation_display_name(relid))));
	if (ttl_distribution_of(relid) == TTL_DIST_HASH)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("container %s is a distributed table: legal holds are not supported there",
						ttl_relation_display_name(relid)),
				 errdetail("The nodes purge their shards with the policy their stamp triggers carry, which has no place for legal holds."),
				 errhint("Pause the container with ttl.pause() to keep all of its items instead.")));
	if (!ttl_sql_at_least(1, 8))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("legal holds need version 1.8 of extension \"ttl\""),
				 errhint("Run ALTER EXTENSION ttl UPDATE.")));
	/* never in the middle of a purge batch or of a rule 10 replacement */
	ttl_lock_container(relid);
	return relid;
}

/*
 * 42622 for a name longer than an identifier (NAMEDATALEN - 1 bytes): the
 * name is in every 55000 of a held item and in ttl.legal_holds.  Only new
 * names are checked (set); a longer one held from 1.8 can be released.
 */
static void
check_hold_name_length(Oid relid, const char *name)
{
	int			len = strlen(name);

	if (len > NAMEDATALEN - 1)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("legal hold name of container %s is too long: %s...",
						ttl_relation_display_name(relid),
						quote_literal_cstr(pnstrdup(name, pg_mbcliplen(name, len, 20)))),
				 errdetail("A legal hold name has at most %d bytes, like an identifier; this one has %d.",
						   NAMEDATALEN - 1, len),
				 errhint("Choose a shorter name; the hold's match says what it keeps.")));
}

/* ttl.set_legal_hold(container regclass, name text, match jsonb) */
PG_FUNCTION_INFO_V1(ttl_set_legal_hold);
Datum
ttl_set_legal_hold(PG_FUNCTION_ARGS)
{
	char	   *name;
	Oid			relid;
	Jsonb	   *match;
	Oid			argtypes[4] = {OIDOID, TEXTOID, JSONBOID, NAMEOID};
	Datum		values[4];

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("legal hold match must not be null")));
	match = PG_GETARG_JSONB_P(2);
	if (!JB_ROOT_IS_OBJECT(match) || JB_ROOT_IS_SCALAR(match))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("legal hold match must be a JSON object, not %s",
						JsonbToCString(NULL, &match->root, VARSIZE(match))),
				 errdetail("A hold keeps the items whose document contains the object (doc @> match)."),
				 errhint("For example: '{\"case\": \"X\"}'.")));
	relid = begin_hold_change(fcinfo, &name);
	check_hold_name_length(relid, name);
	values[0] = ObjectIdGetDatum(relid);
	values[1] = PG_GETARG_DATUM(1);
	values[2] = JsonbPGetDatum(match);
	values[3] = CStringGetDatum(GetUserNameFromId(GetUserId(), false));
	values[3] = DirectFunctionCall1(namein, values[3]);
	ttl_registry_execute("INSERT INTO ttl.legal_hold AS h (container, name, match, held_at, held_by)"
						 " VALUES ($1, $2, $3, pg_catalog.now(), $4)"
						 " ON CONFLICT (container, name) DO UPDATE"
						 " SET match = excluded.match, held_at = excluded.held_at,"
						 " held_by = excluded.held_by",
						 4, argtypes, values, NULL, NULL);
	ttl_legal_hold_floor_reset(relid);
	PG_RETURN_VOID();
}

/* ttl.release_legal_hold(container regclass, name text) */
PG_FUNCTION_INFO_V1(ttl_release_legal_hold);
Datum
ttl_release_legal_hold(PG_FUNCTION_ARGS)
{
	char	   *name;
	Oid			relid = begin_hold_change(fcinfo, &name);
	TtlLegalHolds *holds = ttl_legal_holds_read(relid);
	bool		found = false;
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		values[2];
	int			i;

	for (i = 0; holds != NULL && i < holds->n; i++)
		found |= strcmp(holds->names[i], name) == 0;
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("container %s has no legal hold %s",
						ttl_relation_display_name(relid), quote_literal_cstr(name))));
	values[0] = ObjectIdGetDatum(relid);
	values[1] = PG_GETARG_DATUM(1);
	ttl_registry_execute("DELETE FROM ttl.legal_hold"
						 " WHERE container OPERATOR(pg_catalog.=) $1::pg_catalog.regclass"
						 " AND name OPERATOR(pg_catalog.=) $2",
						 2, argtypes, values, NULL, NULL);
	/* rows below the floors may be free now */
	ttl_legal_hold_floor_reset(relid);
	PG_RETURN_VOID();
}
