/*
 * owner_error.c
 *		What another role sees of an error raised while ttl acted as a
 *		table's owner on its behalf (rule 10's replacement: the DELETE, the
 *		archive INSERT, the owner's triggers, foreign-key actions and row
 *		security policies).  The error keeps its SQLSTATE, so a client can
 *		still tell a serialization failure from a constraint; its message,
 *		detail, hint and context reach the role only where
 *		ttl.stats.last_error would (the role may SELECT the table and no row
 *		security applies to it there), because all four are built as the
 *		owner and can carry rows the role may not see: a constraint's
 *		"Failing row contains (...)", an owner's RAISE '%', OLD.doc, a cast
 *		error quoting the value, the archive error of ttl_archive_execute
 *		that repeats its detail.  Anyone else gets a message ttl writes,
 *		naming the table and the SQLSTATE; the original goes to the server
 *		log only (LOG_SERVER_ONLY: never to a client, whatever its
 *		client_min_messages).
 *
 * Called as the role the work was done for, after the owner's user id and
 * security context are undone: the test is that role's.  Every error of
 * the owner's step is treated alike, ttl's own and cancels included (an
 * owner's trigger can raise any SQLSTATE with any text).
 *
 * Locking: none; catalog look-ups of a relation the caller has open.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"

#include "base/owner_error.h"

/*
 * ttl.stats.last_error's test, for the current user: SELECT on relid and
 * no row security applying (has_table_privilege AND NOT
 * row_security_active, as the view asks).
 */
bool
ttl_owner_error_visible(Oid relid)
{
	bool		is_missing = false;

	if (pg_class_aclcheck_ext(relid, GetUserId(), ACL_SELECT, &is_missing) != ACLCHECK_OK)
		return false;
	return check_enable_rls(relid, InvalidOid, true) != RLS_ENABLED;
}

/*
 * Throw edata on, raised while acting as relid's owner for the current
 * user; what names the work ("rule 10's replacement of an expired item").
 * Unchanged when the current user passes the test above; else with its
 * SQLSTATE and ttl's message, the original logged for the server only.
 */
void
ttl_owner_error_rethrow(ErrorData *edata, Oid relid, const char *what)
{
	char	   *nsp;
	char	   *rel;
	char	   *name;
	char	   *role;

	if (ttl_owner_error_visible(relid))
		ReThrowError(edata);
	nsp = get_namespace_name(get_rel_namespace(relid));
	rel = get_rel_name(relid);
	name = (nsp != NULL && rel != NULL) ? quote_qualified_identifier(nsp, rel) :
		psprintf("with OID %u", relid);
	role = GetUserNameFromId(GetUserId(), true);
	ereport(LOG_SERVER_ONLY,
			(errcode(edata->sqlerrcode),
			 errmsg("%s of container %s failed as the table's owner for role %s, which is shown only the SQLSTATE: %s",
					what, name, role ? quote_identifier(role) : "(dropped)",
					edata->message ? edata->message : "(no message)"),
			 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
			 edata->hint ? errhint("%s", edata->hint) : 0,
			 edata->context ? errcontext("%s", edata->context) : 0));
	ereport(ERROR,
			(errcode(edata->sqlerrcode),
			 errmsg("%s of container %s failed with SQLSTATE %s",
					what, name, unpack_sql_state(edata->sqlerrcode)),
			 errdetail("The error was raised while ttl acted as the table's owner for this statement. Its text can show rows you may not read, so it is shown only to roles that may read every row of the table, as ttl.stats.last_error is."),
			 errhint("The full error is in the server log.")));
}
