/*
 * deadline_admin.c
 *		The SQL functions behind ttl.set_deadline_property() (rule 9):
 *		ttl._set_deadline_property() changes the registry and the stamp
 *		trigger that validates the property on write,
 *		ttl._check_deadlines() refuses a property that stored items hold
 *		malformed (naming the first such item by its primary key, or its
 *		ctid), and ttl._is_deadline_index() tells the plpgsql wrapper
 *		which index is the current property's deadline index.
 *
 * Locking: ttl._set_deadline_property holds the container's purge lock
 * (ttl_lock_container) until commit, like every policy change, and
 * replaces the stamp trigger (CREATE OR REPLACE TRIGGER takes
 * ShareRowExclusiveLock on the table: no write runs between the trigger
 * change and ttl._check_deadlines, which the wrapper calls after it, so no
 * malformed value can slip in between).  The check runs as the table's
 * owner (a security-restricted operation with a pinned search_path) when
 * the caller is someone else, as ttl._existing_rows does.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "admin/row_key.h"
#include "admin/stamp_trigger.h"
#include "base/public_errors.h"
#include "base/run_as.h"
#include "document/deadline.h"
#include "document/document.h"
#include "document/purge_key.h"
#include "registry/policy.h"
#include "registry/registry.h"

/*
 * ttl._set_deadline_property(container, property): the checks, the
 * registry's column and the stamp trigger's argument.  The wrapper
 * ttl.set_deadline_property() builds or drops the index and checks the
 * stored items.
 */
static Datum
set_deadline_property(PG_FUNCTION_ARGS)
{
	Oid			relid;
	TtlContainer c;
	char	   *property = NULL;
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("container must not be null")));
	relid = PG_GETARG_OID(0);
	ttl_check_container_owner(relid);
	ttl_get_container(relid, &c);
	if (!PG_ARGISNULL(1))
	{
		property = text_to_cstring(PG_GETARG_TEXT_PP(1));
		ttl_check_deadline_property_name(ttl_relation_display_name(relid), property);
	}

	/* never in the middle of a purge batch that used the old policy */
	ttl_lock_container(relid);
	values[0] = ObjectIdGetDatum(relid);
	values[1] = property ? PG_GETARG_DATUM(1) : (Datum) 0;
	if (property == NULL)
		nulls[1] = 'n';
	ttl_registry_execute("UPDATE ttl.registry SET deadline_property = $2"
						 " WHERE relid OPERATOR(pg_catalog.=) $1",
						 2, argtypes, values, nulls, NULL);
	CacheInvalidateRelcacheByRelid(relid);
	CommandCounterIncrement();

	if (ttl_distribution_of(relid) == TTL_DIST_HASH)
		ttl_policy_push(relid);	/* the policy and the property (the policy door) */
	else
		ttl_stamp_trigger_write(relid, NameStr(c.doc_column), property, true);
	PG_RETURN_VOID();
}

/* ttl.set_deadline_property's step: its errors are ttl.set_deadline_property's (base/public_errors.c) */
PG_FUNCTION_INFO_V1(ttl_set_deadline_property);
Datum
ttl_set_deadline_property(PG_FUNCTION_ARGS)
{
	return ttl_call_as_public(set_deadline_property, fcinfo);
}

/*
 * ttl._check_deadlines(container): 22007 / 22023 naming the first stored
 * item (in primary key order) whose deadline property is malformed under
 * the registry's property.  The query asks for the malformed key of
 * ttl.doc_deadline_key, which the deadline index holds.
 */
static Datum
check_deadlines(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	TtlContainer c;
	Relation	rel;
	TtlRowKey	rowkey;
	StringInfoData cols;
	StringInfoData order;
	char	   *table;
	const char *doc;
	char	   *prop;
	Oid			owner;
	TtlUserContext ctx;

	ttl_check_container_owner(relid);
	if (!ttl_read_container(relid, &c) || !TTL_HAS_DEADLINE(&c))
		PG_RETURN_VOID();
	rel = relation_open(relid, AccessShareLock);
	table = ttl_container_name(rel);
	doc = quote_identifier(NameStr(c.doc_column));
	prop = quote_literal_cstr(c.deadline_property);

	/* the primary key's columns, to name the item */
	initStringInfo(&cols);
	initStringInfo(&order);
	ttl_row_key_sql(rel, &rowkey, &cols, &order);

	owner = ttl_table_owner(relid);
	ttl_begin_owner_work(owner, &ctx);
	ttl_spi_connect();
	if (SPI_execute(psprintf("SELECT t.%s%s FROM %s t"
							 " WHERE ttl.doc_deadline_key(t.%s, %s::pg_catalog.text)"
							 " OPERATOR(pg_catalog.=) '" INT64_FORMAT "'::pg_catalog.int8"
							 "%s LIMIT 1",
							 doc, cols.data, table, doc, prop,
							 (int64) TTL_DEADLINE_MALFORMED_KEY, order.data),
					true, 1) != SPI_OK_SELECT)
		elog(ERROR, "ttl deadline validation scan failed");
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		Jsonb	   *jb = DatumGetJsonbP(d);
		JsonbValue	buf;
		JsonbValue *v = getKeyJsonValueFromContainer(&jb->root, c.deadline_property,
													 strlen(c.deadline_property), &buf);
		int64		seconds;
		TtlDeadlineState state = ttl_deadline_of_value(v, &seconds);
		char	   *key = ttl_row_key_text(&rowkey, 2);

		ereport(ERROR,
				(errcode(state == TTL_DEADLINE_BAD_TEXT ?
						 ERRCODE_INVALID_DATETIME_FORMAT : ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid deadline \"%s\" in container \"%s\": %s",
						c.deadline_property, table, ttl_jsonb_value_text(v)),
				 errdetail("The item with key %s holds a deadline property that is neither an RFC 3339 timestamp with an offset, a JSON integer of Unix seconds between 0 and " INT64_FORMAT ", nor null; nothing was changed.",
						   key, ttl_deadline_max_seconds()),
				 errhint("Correct or remove the property in the stored items first.")));
	}
	SPI_finish();
	ttl_end_owner_work(&ctx);
	relation_close(rel, AccessShareLock);
	PG_RETURN_VOID();
}

/* ttl.set_deadline_property's step: its errors are ttl.set_deadline_property's (base/public_errors.c) */
PG_FUNCTION_INFO_V1(ttl_check_deadlines);
Datum
ttl_check_deadlines(PG_FUNCTION_ARGS)
{
	return ttl_call_as_public(check_deadlines, fcinfo);
}

/*
 * ttl._is_deadline_index(index, container): whether the index is the
 * deadline index of the container's current deadline property.  Owner
 * only (42501), as the public functions that call it with the caller's
 * rights; the index's definition is read as stored (definitions.c).
 */
PG_FUNCTION_INFO_V1(ttl_is_deadline_index_sql);
Datum
ttl_is_deadline_index_sql(PG_FUNCTION_ARGS)
{
	Oid			indexid = PG_GETARG_OID(0);
	Oid			relid = PG_GETARG_OID(1);
	TtlContainer c;
	Relation	index;
	bool		result;

	ttl_check_relation_exists(indexid);
	ttl_check_relation_exists(relid);
	/* its callers (set_deadline_property, deadline_index_sql) are owner-only */
	ttl_check_container_owner(relid);
	if (!ttl_read_container(relid, &c) || !TTL_HAS_DEADLINE(&c))
		PG_RETURN_BOOL(false);
	index = index_open(indexid, AccessShareLock);
	result = index->rd_index->indrelid == relid &&
		ttl_is_deadline_index(index, get_attnum(relid, NameStr(c.doc_column)),
							  c.deadline_property);
	index_close(index, AccessShareLock);
	PG_RETURN_BOOL(result);
}
