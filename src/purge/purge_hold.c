/*
 * purge_hold.c
 *		Legal holds in the purge (1.8): what one batch knows of its
 *		container's holds (read once, under the batch's lock), the row
 *		check both direct walks make (purge_rows.c), the statement path's
 *		filter and lower bound (purge_statement.c), the floor past held
 *		rows that a keyset batch moves up as it walks (purge_direct.c) and
 *		keeps in ttl.legal_hold_floor for the next round, and rule 10's
 *		refusal to replace a held item (purge_replace.c).
 *
 * The floor: a keyset walk goes in key order from the bottom of its range;
 * held expired rows sit at the bottom (they are the oldest due rows) and
 * would be read again by every round.  While a batch walks from the floor
 * (or the bottom) and every row it meets is held or deleted by it, the
 * floor follows it; a row it has to leave (busy, or not due after all)
 * stops it.  The floor is kept only when the batch commits (it is written
 * in the batch's transaction), and never above the write horizon
 * (base/write_horizon.c): the oldest statement start among the running
 * backends of the database, since a row is stamped with its statement's
 * start, which a long statement or a procedure committing in a loop
 * keeps far behind the clock.  So no row can appear below it by the
 * trigger (a write that bypasses the trigger, a deadline property set into
 * the past, or one written under ttl.now_override is found again once a
 * hold change resets the floors, or the floor is a day old).  Only a
 * plain table's keyset walk moves the floor (a partitioned one's walk goes
 * leaf by leaf, so a prefix of one leaf says nothing of the others); every
 * path uses it as its lower bound.
 *
 * Locking: the caller's (purge_batch.c): the container's purge lock, which
 * hold changes also take (legal_hold_admin.c), so the holds read at the
 * start of a batch stand until it commits.  The state is the current
 * batch's, set at its start (ttl_purge_hold_begin) before any use.
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "base/run_as.h"
#include "base/settings.h"
#include "base/write_horizon.h"
#include "document/due_range.h"
#include "document/purge_key.h"
#include "purge/purge.h"
#include "purge/purge_internal.h"
#include "registry/legal_hold.h"
#include "registry/registry.h"

typedef struct HoldBatch
{
	Oid			relid;
	int			kind;
	TtlLegalHolds *holds;		/* NULL: none, the state is inert */
	bool		have_floor;
	int64		floor;			/* raw key of the kind (not encoded) */
	bool		have_floors[TTL_HOLD_FLOOR_KINDS];	/* every range's, for a walk */
	int64		floors[TTL_HOLD_FLOOR_KINDS];
	bool		tracking;		/* the walk started at the floor: follow it */
	bool		moved;
	int64		candidate;
	bool		last_held;		/* the last row checked was held */
} HoldBatch;

static HoldBatch batch;

/*
 * A batch of relid's key range kind starts from lower_key: read the holds
 * and the floor (in memory of the batch's transaction).
 */
void
ttl_purge_hold_begin(Oid relid, int kind, int64 lower_key)
{
	int			i;

	memset(&batch, 0, sizeof(batch));
	batch.relid = relid;
	batch.kind = kind;
	batch.holds = ttl_legal_holds_read(relid);
	if (batch.holds == NULL)
		return;
	for (i = 0; i < TTL_HOLD_FLOOR_KINDS; i++)
	{
		int			got = ttl_legal_hold_floor_get(relid, i, &batch.floors[i]);

		if (got == TTL_FLOOR_STALE)
		{
			/* kept for too long: every range walks the held rows once more */
			ttl_legal_hold_floor_reset(relid);
			memset(batch.have_floors, 0, sizeof(batch.have_floors));
			break;
		}
		batch.have_floors[i] = got == TTL_FLOOR_FRESH;
	}
	batch.have_floor = kind < TTL_HOLD_FLOOR_KINDS && batch.have_floors[kind];
	if (batch.have_floor)
		batch.floor = batch.floors[kind];
	batch.tracking = kind < TTL_HOLD_FLOOR_KINDS &&
		get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE &&
		(batch.have_floor ? lower_key <= batch.floor : lower_key == PG_INT64_MIN);
	batch.candidate = batch.have_floor ? batch.floor : PG_INT64_MIN;
}

/* Whether the batch's container has holds. */
bool
ttl_purge_hold_active(void)
{
	return batch.holds != NULL;
}

/*
 * The floor of the batch's range kind (raw walk value, not encoded), or
 * PG_INT64_MIN: every row source starts there (due_range.c's
 * ttl_due_range_from encodes it as the range's keys).  A bitmap walk never
 * moves a floor (it goes in page order, not key order); it uses those
 * keyset batches keep.
 */
int64
ttl_purge_hold_floor(int kind)
{
	if (batch.holds == NULL || kind < 0 || kind >= TTL_HOLD_FLOOR_KINDS ||
		!batch.have_floors[kind])
		return PG_INT64_MIN;
	return batch.floors[kind];
}

/* Whether a due document is held (the direct path's row check). */
bool
ttl_purge_hold_covers(Jsonb *doc)
{
	batch.last_held = doc != NULL && batch.holds != NULL &&
		ttl_legal_hold_covering(batch.holds, doc) != NULL;
	return batch.last_held;
}

/* Whether the last row checked was held (not due for another reason). */
bool
ttl_purge_hold_last_held(void)
{
	return batch.last_held;
}

/*
 * A keyset walk met a row of key: held or deleted (gone, left), or one
 * it has to leave in place (the floor stops below it).
 */
void
ttl_purge_hold_note(bool gone_or_held, int64 key)
{
	if (!batch.tracking)
		return;
	if (!gone_or_held)
	{
		batch.tracking = false;
		return;
	}
	if (key > batch.candidate)
	{
		batch.candidate = key;
		batch.moved = true;
	}
}

/*
 * The batch is over (before its commit): keep the floor it reached.
 * range_done: the walk met every row of its range up to cutoff.
 */
void
ttl_purge_hold_end(bool range_done, int64 cutoff)
{
	if (batch.tracking && range_done && cutoff > batch.candidate)
	{
		batch.candidate = cutoff;
		batch.moved = true;
	}
	/*
	 * Not above the write horizon: a running statement (a long one, a
	 * procedure committing in a loop) still writes rows with its start as
	 * their _ts, which a floor above it would skip (write_horizon.c).  The
	 * lifetime kinds only (a row's own expiry is its _ts plus its ttl); a
	 * purge under ttl.now_override keeps its test clock's floor.
	 */
	if (batch.tracking && batch.moved && batch.kind != TTL_DUE_DEADLINE &&
		!ttl_clock_overridden())
		batch.candidate = Min(batch.candidate, ttl_write_horizon_seconds());
	if (batch.tracking && batch.moved &&
		(!batch.have_floor || batch.candidate > batch.floor))
		ttl_legal_hold_floor_set(batch.relid, batch.kind, batch.candidate);
	batch.tracking = false;
	batch.holds = NULL;
}

/* The statement path's filter on the target t, $6 the holds' matches. */
const char *
ttl_purge_hold_filter(const char *doc)
{
	return psprintf("NOT (t.%s OPERATOR(pg_catalog.@>) ANY ($6::pg_catalog.jsonb[])) AND ", doc);
}

/* The holds' matches as the statement path's $6. */
Datum
ttl_purge_hold_matches(void)
{
	return ttl_legal_holds_array(batch.holds);
}

/*
 * Rule 10: a write would replace the expired item at tid of leaf (a
 * partition of container, or container itself).  55000 when a legal hold
 * keeps it, also under ON CONFLICT DO NOTHING (nothing is replaced, and a
 * silent skip would hide that the write did not happen for this reason).
 * The caller holds the container's replace lock, which a hold change
 * takes too, and runs as the table's owner.
 */
void
ttl_purge_hold_refuse_replace(Oid container, Oid leaf, ItemPointer tid,
							  const char *doc_column)
{
	TtlLegalHolds *holds = ttl_legal_holds_read(container);
	Oid			argtypes[1] = {TIDOID};
	Datum		values[1];
	const char *name = NULL;
	bool		isnull;

	if (holds == NULL)
		return;
	values[0] = PointerGetDatum(tid);
	ttl_spi_connect();
	if (SPI_execute_with_args(psprintf("SELECT t.%s FROM ONLY %s t"
									   " WHERE t.ctid OPERATOR(pg_catalog.=) $1",
									   quote_identifier(doc_column),
									   quote_qualified_identifier(get_namespace_name(get_rel_namespace(leaf)),
																  get_rel_name(leaf))),
							  1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "ttl legal hold check failed");
	if (SPI_processed == 1)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			name = ttl_legal_hold_covering(holds, DatumGetJsonbP(d));
	}
	if (name != NULL)
		name = MemoryContextStrdup(TopTransactionContext, name);
	SPI_finish();
	if (name != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("expired item of container %s is under legal hold %s",
						ttl_relation_display_name(container), quote_literal_cstr(name)),
				 errdetail("The write conflicts with an expired item that the legal hold keeps: rule 10 replaces no held item."),
				 errhint("Release the hold with ttl.release_legal_hold(), or write another key.")));
}
