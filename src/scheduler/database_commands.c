/*
 * database_commands.c
 *		Which database commands need a database to themselves (no other
 *		connection: DROP DATABASE, ALTER DATABASE ... RENAME, ALTER
 *		DATABASE ... SET TABLESPACE, CREATE DATABASE ... TEMPLATE), and
 *		whether core would let the current user run that command: the
 *		permission checks core makes before it looks for other connections,
 *		mirrored (commands/dbcommands.c), so that worker_slots.c stops a
 *		ttl worker only for a command that will really run.  No role may
 *		stop a worker with a command it is not allowed to run.
 *
 * Locking: none of its own; catalog look-ups through the syscaches.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "catalog/pg_tablespace.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "commands/tablespace.h"
#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/acl.h"
#include "utils/syscache.h"

#include "base/compat.h"
#include "scheduler/scheduler.h"

/*
 * Core's have_createdb_privilege(), read here: it is exported by 15.20 and
 * 16+ but not by 15.19 and older minors, which a library built against
 * newer headers must still load into.
 */
static bool
may_create_databases(void)
{
	HeapTuple	tup;
	bool		result;

	if (superuser())
		return true;
	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(GetUserId()));
	if (!HeapTupleIsValid(tup))
		return false;
	result = ((Form_pg_authid) GETSTRUCT(tup))->rolcreatedb;
	ReleaseSysCache(tup);
	return result;
}

static bool
database_is_template(Oid dboid)
{
	HeapTuple	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(dboid));
	bool		istemplate;

	if (!HeapTupleIsValid(tup))
		return false;
	istemplate = ((Form_pg_database) GETSTRUCT(tup))->datistemplate;
	ReleaseSysCache(tup);
	return istemplate;
}

/* Whether an option is given twice (core refuses such a command). */
static bool
has_duplicate_option(List *options)
{
	ListCell   *lc;
	ListCell   *lc2;

	foreach(lc, options)
	{
		for_each_cell(lc2, options, lnext(options, lc))
		{
			if (strcmp(((DefElem *) lfirst(lc))->defname,
					   ((DefElem *) lfirst(lc2))->defname) == 0)
				return true;
		}
	}
	return false;
}

/*
 * Whether core would let the current user clone dboid with this CREATE
 * DATABASE: the checks of createdb() that come before it looks for other
 * connections to the template (commands/dbcommands.c).  CREATEDB; the
 * right to become the new database's owner; and, for a template not marked
 * datistemplate, owning it (a superuser passes both).
 */
static bool
may_clone_database(CreatedbStmt *stmt, Oid dboid)
{
	ListCell   *lc;

	if (!may_create_databases())
		return false;
	foreach(lc, stmt->options)
	{
		DefElem    *opt = (DefElem *) lfirst(lc);

		if (strcmp(opt->defname, "owner") == 0 && opt->arg != NULL)
		{
			Oid			owner = get_role_oid(defGetString(opt), true);

			if (!OidIsValid(owner) || !is_member_of_role(GetUserId(), owner))
				return false;
		}
	}
	return database_is_template(dboid) || ttl_database_ownercheck(dboid, GetUserId());
}

/*
 * Whether core would let the current user drop or rename dboid: the
 * checks of dropdb() and RenameDatabase() that come before they look for
 * other connections.  Both need ownership and refuse the current
 * database; dropping refuses a template; renaming also needs CREATEDB and
 * a free new name.
 */
static bool
may_drop_or_rename_database(Node *stmt, Oid dboid)
{
	if (dboid == MyDatabaseId || !ttl_database_ownercheck(dboid, GetUserId()))
		return false;
	if (IsA(stmt, RenameStmt))
		return may_create_databases() &&
			!OidIsValid(get_database_oid(((RenameStmt *) stmt)->newname, true));
	return !database_is_template(dboid);
}

/*
 * Whether core would let the current user move dboid to another
 * tablespace with ALTER DATABASE ... SET TABLESPACE: the checks of
 * movedb() that come before it looks for other connections.  Ownership,
 * not the current database, CREATE on an existing tablespace other than
 * pg_global, and a real move (the same tablespace returns at once).
 */
static bool
may_move_database(AlterDatabaseStmt *stmt, Oid dboid)
{
	const char *spcname = defGetString((DefElem *) linitial(stmt->options));
	Oid			spcoid = get_tablespace_oid(spcname, true);
	HeapTuple	tup;
	Oid			current;

	if (dboid == MyDatabaseId || !ttl_database_ownercheck(dboid, GetUserId()))
		return false;
	if (!OidIsValid(spcoid) || spcoid == GLOBALTABLESPACE_OID ||
		ttl_tablespace_aclcheck(spcoid, GetUserId(), ACL_CREATE) != ACLCHECK_OK)
		return false;
	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(dboid));
	if (!HeapTupleIsValid(tup))
		return false;
	current = ((Form_pg_database) GETSTRUCT(tup))->dattablespace;
	ReleaseSysCache(tup);
	return current != spcoid;
}

/* ALTER DATABASE ... SET TABLESPACE: the only option of its statement. */
static bool
is_set_tablespace(Node *stmt)
{
	AlterDatabaseStmt *alter = (AlterDatabaseStmt *) stmt;

	return IsA(stmt, AlterDatabaseStmt) && list_length(alter->options) == 1 &&
		strcmp(((DefElem *) linitial(alter->options))->defname, "tablespace") == 0 &&
		((DefElem *) linitial(alter->options))->arg != NULL;
}

/*
 * The database a utility command needs to itself (no other connection),
 * when the current user may run that command on it; else InvalidOid.
 */
Oid
ttl_database_needed_alone(Node *stmt)
{
	const char *dbname = NULL;
	Oid			dboid;

	if (IsA(stmt, DropdbStmt))
		dbname = ((DropdbStmt *) stmt)->dbname;
	else if (IsA(stmt, RenameStmt) &&
			 ((RenameStmt *) stmt)->renameType == OBJECT_DATABASE)
		dbname = ((RenameStmt *) stmt)->subname;
	else if (is_set_tablespace(stmt))
		dbname = ((AlterDatabaseStmt *) stmt)->dbname;
	else if (IsA(stmt, CreatedbStmt))
	{
		ListCell   *lc;

		foreach(lc, ((CreatedbStmt *) stmt)->options)
		{
			DefElem    *opt = (DefElem *) lfirst(lc);

			if (strcmp(opt->defname, "template") == 0 && opt->arg != NULL)
				dbname = defGetString(opt);
		}
		if (has_duplicate_option(((CreatedbStmt *) stmt)->options))
			return InvalidOid;	/* conflicting options: core refuses */
	}
	if (dbname == NULL || IsTransactionBlock())
		return InvalidOid;		/* not ours, or it will fail anyway */
	dboid = get_database_oid(dbname, true);
	if (!OidIsValid(dboid))
		return InvalidOid;

	/*
	 * Never let a role stop the worker for a command that core will refuse
	 * it: a role with CREATEDB alone could otherwise kill any database's
	 * worker again and again with CREATE DATABASE x TEMPLATE victim.
	 */
	if (IsA(stmt, CreatedbStmt) ?
		!may_clone_database((CreatedbStmt *) stmt, dboid) :
		IsA(stmt, AlterDatabaseStmt) ?
		!may_move_database((AlterDatabaseStmt *) stmt, dboid) :
		!may_drop_or_rename_database(stmt, dboid))
		return InvalidOid;
	return dboid;
}
