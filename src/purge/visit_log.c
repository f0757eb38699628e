/*
 * visit_log.c
 *		ttl.log_min_duration (1.9): one LOG line per container a purge
 *		visited, as log_autovacuum_min_duration gives one per table
 *		autovacuum visited.  A visit is a container's share of one purge:
 *		of a worker's round or a CALL ttl.run_purge() (its batches, taken
 *		in turn with the other containers', and the cost budget's sleeps
 *		after them), or of one ttl.purge() call.  Its figures are summed in
 *		the container's cursor (TtlVisitLog, purge_internal.h) by the batch
 *		(purge_batch.c: rows deleted, archived and skipped, as the direct
 *		deleter's loop counts them in purge_direct.c), the round
 *		(purge_round.c: elapsed time, WAL, throttled time) and
 *		ttl_purge_container, and said here once the visit is over.
 *
 * What "skipped" counts: rows the direct deleter found due but left,
 * locked (busy: another transaction holds or changed them), held (a legal
 * hold) or quarantined (isolated earlier as failing, waiting for their
 * retry_after); the statement path's FOR UPDATE SKIP LOCKED and filters
 * leave rows without counting them.  WAL bytes are this backend's
 * (pgWalUsage) while the visit's batches ran.
 *
 * Locking: none; figures of the calling backend only.
 */
#include "postgres.h"

#include "executor/instrument.h"
#include "miscadmin.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/settings.h"
#include "purge/purge_internal.h"
#include "registry/registry.h"

/* A stretch of a visit begins: its clock and the backend's WAL so far. */
void
ttl_visit_log_begin(TtlVisitMark *mark)
{
	mark->started = GetCurrentTimestamp();
	mark->wal_bytes = pgWalUsage.wal_bytes;
}

/* ... and ends: its time and WAL into log. */
void
ttl_visit_log_end(TtlVisitLog *log, const TtlVisitMark *mark)
{
	log->elapsed_us += GetCurrentTimestamp() - mark->started;
	log->wal_bytes += pgWalUsage.wal_bytes - mark->wal_bytes;
}

/* What one batch that ran did, into log. */
void
ttl_visit_log_batch(TtlVisitLog *log, const TtlDirectBatch *batch, bool archived)
{
	log->batches++;
	log->deleted += batch->deleted;
	if (archived)
		log->archived += batch->deleted;	/* every row deleted, or none */
	log->locked += batch->skipped_locked;
	log->held += batch->skipped_held;
	log->quarantined += batch->skipped_quarantined;
}

/*
 * The visit of relid by `by` is over: its line, when ttl.log_min_duration
 * asks for it (elapsed counts the sleeps).
 */
void
ttl_visit_log_emit(Oid relid, const TtlVisitLog *log, const char *by)
{
	int64		total_us = log->elapsed_us + log->throttled_us;

	if (ttl_log_min_duration < 0 || log->batches == 0 ||
		total_us < (int64) ttl_log_min_duration * 1000)
		return;
	ereport(LOG,
			(errmsg("ttl purge of %s by %s: " INT64_FORMAT " rows deleted, " INT64_FORMAT " archived, "
					INT64_FORMAT " skipped (locked " INT64_FORMAT ", held " INT64_FORMAT
					", quarantined " INT64_FORMAT "), " INT64_FORMAT " batches, elapsed %.3f s, throttled %.3f s, WAL "
					INT64_FORMAT " bytes",
					ttl_relation_display_name(relid), by, log->deleted, log->archived,
					log->locked + log->held + log->quarantined, log->locked, log->held,
					log->quarantined, log->batches, total_us / 1000000.0,
					log->throttled_us / 1000000.0, log->wal_bytes)));
}

/* Who purges: the worker or a CALL ttl.run_purge() (a round's caller). */
const char *
ttl_visit_log_round_by(void)
{
	return ttl_am_background_worker() ? "the worker" : "ttl.run_purge()";
}
