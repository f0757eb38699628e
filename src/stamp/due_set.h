/*
 * due_set.h
 *		Rule 10's shared due sets (due_set.c): the hashes of the keys of a
 *		leaf's due items, as one statement's due filter listed them, kept in
 *		shared memory for the next statements (in any backend) while the
 *		leaf's due writes, the policy epoch and the leaf's definition say
 *		nothing changed.
 */
#ifndef TTL_DUE_SET_H
#define TTL_DUE_SET_H

#include "stamp/due_floor.h"

#define TTL_DUE_SET_INDEXES	4		/* unique indexes a set can hold */

/* What a set was made under: it serves only a look that matches it all. */
typedef struct TtlDueSetKey
{
	Oid			relid;
	TtlLookMark mark;			/* the look's slot, due writes, epoch, generation */
	int32		default_ttl;
	int			nindexes;
	Oid			indexes[TTL_DUE_SET_INDEXES];
} TtlDueSetKey;

/* ttl.c's steps: shmem_request, shmem_startup */
extern void ttl_due_set_shmem_request(void);
extern void ttl_due_set_shmem_startup(void);

extern bool ttl_due_set_fetch(const TtlDueSetKey *key, int64 *made_seconds,
							  int *counts, uint32 **hashes, MemoryContext mcxt);
extern void ttl_due_set_publish(const TtlDueSetKey *key, int64 made_seconds,
								const int *counts, uint32 *const *hashes);

#endif							/* TTL_DUE_SET_H */
