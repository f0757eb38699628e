/*
 * purge_key.h
 *		The key of the single purge index (purge_key.c): one bigint that
 *		orders items inheriting the container default by their _ts and items
 *		with their own positive ttl by their expiry second, in two disjoint
 *		ranges of one btree.
 */
#ifndef TTL_PURGE_KEY_H
#define TTL_PURGE_KEY_H

#include "access/attnum.h"
#include "utils/jsonb.h"
#include "utils/relcache.h"

/* Which range of the key: items inheriting the default, or with their own ttl. */
#define TTL_KEY_INHERITED	0
#define TTL_KEY_OWN			1

extern int64 ttl_purge_key_encode(int kind, int64 seconds);
extern int64 ttl_purge_key_decode(int kind, int64 key);
extern int64 ttl_purge_key_low(int kind);
extern bool ttl_doc_purge_key(const char *root, int64 *key);

/* What an index of a container is to purge. */
typedef enum TtlPurgeIndexKind
{
	TTL_INDEX_OTHER,			/* not a purge index (or not valid) */
	TTL_INDEX_TS,				/* 1.0-1.2: ttl.doc_ts(doc), inherited items */
	TTL_INDEX_EXPIRY,			/* 1.0-1.2: ttl.doc_expiry(doc), own ttl */
	TTL_INDEX_KEY,				/* 1.3: btree on ttl.doc_purge_key(doc), both */
	TTL_INDEX_KEY_BRIN			/* 1.3, append-only: BRIN on the same key */
} TtlPurgeIndexKind;

extern TtlPurgeIndexKind ttl_purge_index_kind(Relation index, AttrNumber doc_attno);
extern bool ttl_has_purge_key_index(Oid relid, const char *doc_column);
extern bool ttl_index_has_expressions(Oid indexoid);

/* 1.5, rule 9: the deadline index on ttl.doc_deadline_key(doc, 'property') */
extern char *ttl_deadline_index_property(Relation index, AttrNumber doc_attno);
extern bool ttl_is_deadline_index(Relation index, AttrNumber doc_attno,
								  const char *property);

#endif							/* TTL_PURGE_KEY_H */
