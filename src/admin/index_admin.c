/*
 * index_admin.c
 *		The SQL functions that record and tell apart ttl's indexes (1.8):
 *		ttl._own_index(index, purpose) records a purge or deadline index
 *		as made by ttl (ttl.enable, ttl.set_append_only and
 *		ttl.set_deadline_property call it after CREATE INDEX; the
 *		statements of ttl.upgrade_purge_index_sql and ttl.deadline_index_sql
 *		end with it), and ttl._purge_index_kind(index, container) tells the
 *		plpgsql functions which purge index an index is, by its shape.  The
 *		record itself is registry/index_owner.c.
 *
 * Rights: both are callable by PUBLIC because the public functions call
 * them with the caller's rights.  ttl._own_index checks that the caller
 * owns the container first (42501); ttl._purge_index_kind, which
 * ttl.upgrade_purge_index_sql calls for anyone (as before 1.8), tells no
 * more than pg_get_indexdef.  Both read the index's definition as stored
 * (definitions.c), never through the relcache functions that fold it, so
 * nothing of the table's owner runs.
 *
 * Locking: AccessShareLock on the index while its definition is read.
 */
#include "postgres.h"

#include "access/genam.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "document/purge_key.h"
#include "registry/index_owner.h"
#include "registry/registry.h"

/*
 * The index's table, after the checks both functions share: the index
 * exists and is an index, and the caller owns its table.
 */
static Oid
owned_index_table(Oid indexid)
{
	char		relkind;

	ttl_check_relation_exists(indexid);
	relkind = get_rel_relkind(indexid);
	if (relkind != RELKIND_INDEX && relkind != RELKIND_PARTITIONED_INDEX)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an index", ttl_relation_display_name(indexid))));
	return IndexGetRelation(indexid, false);
}

/* What the index is to purge on doc_attno, or NULL. */
static const char *
purge_kind_name(Relation index, AttrNumber doc_attno)
{
	switch (ttl_purge_index_kind(index, doc_attno))
	{
		case TTL_INDEX_KEY:
			return "btree";
		case TTL_INDEX_KEY_BRIN:
			return "brin";
		case TTL_INDEX_TS:
			return "ts";
		case TTL_INDEX_EXPIRY:
			return "expiry";
		case TTL_INDEX_OTHER:
			break;
	}
	return NULL;
}

/*
 * ttl._own_index(index, purpose): record that ttl made the index, a purge
 * index ('purge', of either layout) or a deadline index ('deadline', of
 * any property: ttl.deadline_index_sql builds one before
 * ttl.set_deadline_property switches to it) on a container itself (not a
 * partition: its indexes belong to the container's).
 */
PG_FUNCTION_INFO_V1(ttl_own_index);
Datum
ttl_own_index(PG_FUNCTION_ARGS)
{
	Oid			indexid = PG_GETARG_OID(0);
	char	   *purpose = text_to_cstring(PG_GETARG_TEXT_PP(1));
	Oid			relid = owned_index_table(indexid);
	TtlContainer c;
	Relation	index;
	AttrNumber	attno;
	bool		fits;

	if (strcmp(purpose, "purge") != 0 && strcmp(purpose, "deadline") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid purpose for index \"%s\": \"%s\"",
						ttl_relation_display_name(indexid), purpose),
				 errdetail("The purpose of a ttl index is 'purge' or 'deadline'.")));
	ttl_check_container_owner(relid);
	ttl_get_container(relid, &c);
	attno = get_attnum(relid, NameStr(c.doc_column));
	index = index_open(indexid, AccessShareLock);
	fits = strcmp(purpose, "purge") == 0 ?
		purge_kind_name(index, attno) != NULL :
		ttl_deadline_index_property(index, attno) != NULL;
	index_close(index, AccessShareLock);
	if (!fits)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("index \"%s\" is not a valid %s index of container \"%s\"",
						ttl_relation_display_name(indexid), purpose,
						ttl_relation_display_name(relid)),
				 errdetail("Only an index of the shape ttl builds (its expression, predicate and access method), and valid, is recorded as ttl's."),
				 errhint("Build it with the statements of ttl.upgrade_purge_index_sql() or ttl.deadline_index_sql().")));
	ttl_record_index_owner(relid, get_rel_name(indexid), purpose);
	PG_RETURN_VOID();
}

/*
 * ttl._purge_index_kind(index, container): 'btree' or 'brin' for the 1.3
 * purge index, 'ts' or 'expiry' for 1.0-1.2's, by its shape (whoever made
 * it); NULL for any other index, one on another table, or when the table
 * is no container.
 */
PG_FUNCTION_INFO_V1(ttl_purge_index_kind_sql);
Datum
ttl_purge_index_kind_sql(PG_FUNCTION_ARGS)
{
	Oid			indexid = PG_GETARG_OID(0);
	Oid			relid = PG_GETARG_OID(1);
	TtlContainer c;
	Relation	index;
	const char *kind;

	ttl_check_relation_exists(relid);
	if (owned_index_table(indexid) != relid)
		PG_RETURN_NULL();
	if (!ttl_read_container(relid, &c))
		PG_RETURN_NULL();
	index = index_open(indexid, AccessShareLock);
	kind = purge_kind_name(index, get_attnum(relid, NameStr(c.doc_column)));
	index_close(index, AccessShareLock);
	if (kind == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(kind));
}
