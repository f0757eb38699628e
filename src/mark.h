/*
 * mark.h
 *		Purge deletes marked in the change stream (mark.c): a logical
 *		decoding message per purge batch, and a replication origin on the
 *		transactions a purger owns, when ttl.mark_purge_deletes is on.
 */
#ifndef TTL_MARK_H
#define TTL_MARK_H

/* Who purges: names the path in the message, and decides the origin. */
typedef enum TtlMarkBy
{
	TTL_MARK_BY_PURGE,			/* ttl.purge(), ttl._purge_placements(): the
								 * caller's transaction, messages only */
	TTL_MARK_BY_WORKER,			/* the background worker: origin + messages */
	TTL_MARK_BY_RUN_PURGE		/* CALL ttl.run_purge(): origin + messages */
} TtlMarkBy;

/* Commit the current transaction and start another (the purger's own). */
typedef void (*TtlMarkRestart) (void);

extern void ttl_mark_begin(TtlMarkBy by, TtlMarkRestart restart);
extern void ttl_mark_end(TtlMarkRestart restart);
extern void ttl_mark_abandon(void);
extern void ttl_mark_batch(Oid relid, int64 rows);

#endif							/* TTL_MARK_H */
