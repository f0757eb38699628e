/*
 * row_key.c
 *		The key of a stored row, for the errors of the admin functions that
 *		scan a table's rows (ttl.enable's validation of the documents
 *		already there, ttl.set_deadline_property's check of the stored
 *		deadlines): the select-list items that fetch the primary key's
 *		columns as text (or the ctid, with its partition), an ORDER BY on
 *		that key so the row named is the first one, and the text
 *		"(k1, k2)=(v1, v2)" or "ctid (0,2)" of the row SPI returned.
 *
 * The scan runs as the table's owner (ttl_begin_owner_work), who may see
 * every value named; the caller owns the table or is a member of its
 * owning role.
 *
 * Locking: none of its own; the caller has the table open.
 */
#include "postgres.h"

#include "access/genam.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "nodes/value.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "admin/row_key.h"

/*
 * Append to cols ", (t.k)::pg_catalog.text" for each primary key column
 * of rel (or its ctid, and for a partitioned table the partition), and to
 * order " ORDER BY t.k, ..." (nothing without a primary key).
 */
void
ttl_row_key_sql(Relation rel, TtlRowKey *key, StringInfo cols, StringInfo order)
{
	Oid			pk;

	key->nkeys = 0;
	key->names = NIL;
	key->partitioned = rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE;
	/* RelationGetIndexList fills in rd_pkindex (every major) */
	list_free(RelationGetIndexList(rel));
	pk = rel->rd_pkindex;
	if (OidIsValid(pk))
	{
		Relation	index = index_open(pk, AccessShareLock);
		int			i;

		for (i = 0; i < index->rd_index->indnkeyatts; i++)
		{
			AttrNumber	attno = index->rd_index->indkey.values[i];
			char	   *name = get_attname(RelationGetRelid(rel), attno, false);

			key->names = lappend(key->names, makeString(name));
			appendStringInfo(cols, ", (t.%s)::pg_catalog.text", quote_identifier(name));
			appendStringInfo(order, "%s t.%s", key->nkeys > 0 ? "," : " ORDER BY",
							 quote_identifier(name));
			key->nkeys++;
		}
		index_close(index, AccessShareLock);
	}
	else
	{
		appendStringInfoString(cols, ", (t.ctid)::pg_catalog.text");
		if (key->partitioned)
			appendStringInfoString(cols, ", (t.tableoid::pg_catalog.regclass)::pg_catalog.text");
	}
}

/*
 * "(k1, k2)=(v1, v2)" of the first row SPI returned, its key in the
 * columns from first on (1-based), or "ctid (0,2)" ("ctid (0,2) in
 * partition p" for a partitioned table without a primary key).
 */
char *
ttl_row_key_text(const TtlRowKey *key, int first)
{
	StringInfoData buf;
	ListCell   *lc;
	int			i;

	initStringInfo(&buf);
	if (key->nkeys == 0)
	{
		appendStringInfo(&buf, "ctid %s",
						 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, first));
		if (key->partitioned)
			appendStringInfo(&buf, " in partition %s",
							 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, first + 1));
		return buf.data;
	}
	appendStringInfoChar(&buf, '(');
	foreach(lc, key->names)
	{
		if (foreach_current_index(lc) > 0)
			appendStringInfoString(&buf, ", ");
		appendStringInfoString(&buf, quote_identifier(strVal(lfirst(lc))));
	}
	appendStringInfoString(&buf, ")=(");
	for (i = 0; i < key->nkeys; i++)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, first + i);

		if (i > 0)
			appendStringInfoString(&buf, ", ");
		appendStringInfoString(&buf, v ? v : "null");
	}
	appendStringInfoChar(&buf, ')');
	return buf.data;
}
