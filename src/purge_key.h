/*
 * purge_key.h
 *		The key of the single purge index (purge_key.c): one bigint that
 *		orders items inheriting the container default by their _ts and items
 *		with their own positive ttl by their expiry second, in two disjoint
 *		ranges of one btree.
 */
#ifndef TTL_PURGE_KEY_H
#define TTL_PURGE_KEY_H

#include "utils/jsonb.h"

/* Which range of the key: items inheriting the default, or with their own ttl. */
#define TTL_KEY_INHERITED	0
#define TTL_KEY_OWN			1

extern int64 ttl_purge_key_encode(int kind, int64 seconds);
extern int64 ttl_purge_key_decode(int kind, int64 key);
extern int64 ttl_purge_key_low(int kind);
extern bool ttl_doc_purge_key(Jsonb *doc, int64 *key);

#endif							/* TTL_PURGE_KEY_H */
