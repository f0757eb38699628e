/*
 * row_key.h
 *		Naming a stored row in an admin function's error: its primary key
 *		as "(k1, k2)=(v1, v2)", or its ctid (row_key.c).  Internal to
 *		admin/.
 */
#ifndef TTL_ROW_KEY_H
#define TTL_ROW_KEY_H

#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/relcache.h"

typedef struct TtlRowKey
{
	int			nkeys;			/* primary key columns; 0: the ctid names it */
	List	   *names;			/* their names (String nodes) */
	bool		partitioned;	/* the ctid comes with its partition */
} TtlRowKey;

extern void ttl_row_key_sql(Relation rel, TtlRowKey *key, StringInfo cols,
							StringInfo order);
extern char *ttl_row_key_text(const TtlRowKey *key, int first);

#endif							/* TTL_ROW_KEY_H */
