/*
 * mark.h
 *		Purge deletes marked in the change stream (mark.c): a logical
 *		decoding message per purge batch, and a replication origin on the
 *		transactions a purger owns, when ttl.mark_purge_deletes is on.
 */
#ifndef TTL_MARK_H
#define TTL_MARK_H

#include "access/xact.h"

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
/*
 * A round (worker, run_purge) starts a batch of container relid, first
 * thing in the batch's own transaction: the origin follows relid's mode
 * (ttl.set_mark_purge_deletes) for this transaction.
 */
extern void ttl_mark_container(Oid relid);
extern void ttl_mark_end(TtlMarkRestart restart);
extern void ttl_mark_abandon(void);
extern void ttl_mark_xact_callback(XactEvent event, void *arg);
/*
 * The one call of a purge deleter (a batch of the worker, run_purge or
 * ttl.purge(), rule 10's replacing writer, ...): rows items of container
 * relid (its partitions' included) were deleted because they expired, in
 * the current (sub)transaction.  Call it once per batch, after its deletes
 * and in the same (sub)transaction, so the message is decoded after them
 * and rolls back with them; rows <= 0 writes nothing.  It writes the
 * transactional message (prefix "ttl", {"container", "rows", "by"}) when
 * marking applies: relid's mode 'on' or 'off' (ttl.set_mark_purge_deletes)
 * if it has one, else ttl.mark_purge_deletes, read when the round began
 * inside a worker or run_purge round, now anywhere else; never when
 * wal_level was (is) below logical.  "by" names the round (worker, run_purge),
 * else "purge".  It never sets or changes a replication origin (a deleter
 * in a caller's transaction gets the message only; one inside a round's
 * transaction is under the round's origin anyway).  Any current user, also
 * inside a security-restricted operation; no locks of its own (the caller
 * holds relid locked).
 */
extern void ttl_mark_batch(Oid relid, int64 rows);

/*
 * The retire step's call (1.9): a whole leaf of container relid left, in
 * the current (sub)transaction, after its DETACH (and DROP): one
 * transactional message, prefix "ttl", {"container", "retired" (the leaf's
 * qualified name), "bound" (its partition bound as pg_get_expr prints it),
 * "mode" ("drop" or "detach"), "rows", "by"}, when marking applies as for
 * ttl_mark_batch; never per row.
 */
extern bool ttl_mark_applies(Oid relid);
extern void ttl_mark_retired(Oid relid, const char *leaf, const char *bound,
							 const char *mode, int64 rows);

#endif							/* TTL_MARK_H */
