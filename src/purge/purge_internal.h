/*
 * purge_internal.h
 *		What the files of the purge family share (src/purge/README.md): the
 *		plan of a batch (purge_batch.c makes it), its row sources (the
 *		keyset walk in purge_direct.c, the TID-bitmap walk in purge_walk.c),
 *		its deleters (direct and SQL forms in purge_rows.c; the statement in
 *		purge_statement.c; rule 10's one item in purge_replace.c), the one
 *		loop (purge_direct.c), what it walks (purge_leaves.c), a round
 *		(purge_round.c) and the SQL entry points (purge_functions.c).
 *		Nothing outside src/purge/ includes it.
 */
#ifndef TTL_PURGE_INTERNAL_H
#define TTL_PURGE_INTERNAL_H

#include "access/attnum.h"
#include "datatype/timestamp.h"
#include "executor/tuptable.h"
#include "nodes/pg_list.h"
#include "storage/itemptr.h"
#include "utils/jsonb.h"
#include "utils/palloc.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

#include "document/due_range.h"
#include "registry/registry.h"

/* purge_direct.c: purge without a lock pass, where it applies */
typedef struct TtlDirectBatch
{
	int64		found;			/* due rows deleted, not skipped as busy */
	int64		deleted;
	bool		range_done;		/* a walk: it is done */
	Oid			last_leaf;		/* a keyset batch: the partition and key */
	int64		last_key;		/* of the last of them */
	char	   *row_error;		/* split: the rows left in place, for
								 * last_error (purge_split.c), or NULL */
	/* due rows the direct deleter left (visit_log.c): */
	int64		skipped_locked; /* busy: another transaction holds them */
	int64		skipped_held;	/* a legal hold */
	int64		skipped_quarantined;	/* failing, before their retry_after */
} TtlDirectBatch;

typedef struct TtlWalk TtlWalk;

/* Where a batch's rows come from (see purge_direct.c). */
typedef enum TtlRowSource
{
	TTL_SOURCE_KEYSET,			/* one kind's index, in key order from where
								 * the last batch stopped: nothing is held
								 * between batches */
	TTL_SOURCE_BITMAP			/* one TID bitmap per leaf from every kind's
								 * index (BRIN: page ranges; none: every
								 * page), each page read once; the walk is
								 * kept across batches */
} TtlRowSource;

/* How a due row goes (see src/purge/README.md). */
typedef enum TtlDeleter
{
	TTL_DELETER_DIRECT,			/* table_tuple_delete, never waiting
								 * (purge_rows.c) */
	TTL_DELETER_STATEMENT		/* a DELETE statement: triggers, foreign keys,
								 * rules and row security act
								 * (purge_statement.c) */
} TtlDeleter;

/*
 * The plan of one batch: the due kinds it takes (their key ranges are
 * due_range.c's, from the policy and the clock), where its rows come from,
 * how they go, and how many.
 */
typedef struct TtlBatchPlan
{
	Oid			relid;
	const TtlContainer *policy; /* as read under the batch's locks */
	const char *deadline;		/* the deadline property (rule 9), or NULL */
	int64		now_seconds;	/* the round's clock */
	bool		kinds[TTL_DUE_KINDS];	/* the kinds taken */
	TtlDueKind	kind;			/* keyset: the one kind walked */
	Oid			start_leaf;		/* keyset: where the last batch stopped */
	int64		lower_key;		/* (its partition and walk value) */
	int64		limit;			/* rows, < 0: no limit */
	TtlRowSource source;
	TtlWalk   **walk;			/* bitmap: the walk kept across batches, or
								 * NULL for one that ends with the batch */
	MemoryContext walk_parent;	/* where a kept walk lives */
	TtlDeleter	deleter;		/* out: the one that ran */
} TtlBatchPlan;

extern const char *ttl_purge_direct(TtlBatchPlan *plan, TtlDirectBatch *out);

/* purge_leaves.c: the leaves the direct path walks */
/* One leaf with the purge indexes needed (inherited, own), ready to walk. */
typedef struct DirectLeaf
{
	Relation	rel;
	Relation	index[TTL_DUE_KINDS];	/* by TtlDueKind: the inherited kind's
										 * (doc_ts), the own kind's
										 * (doc_expiry), or the one key index
										 * for both; the deadline index
										 * (doc_deadline_key, rule 9) */
	bool		keyed[TTL_DUE_KINDS];	/* that index is the one of ttl.doc_purge_key */
	bool		brin;			/* and it is BRIN (append-only): walks only */
	bool		sweep;			/* no purge index (append-only, 1.6): a walk
								 * takes every page of the leaf */
	AttrNumber	doc_attno;
} DirectLeaf;

extern const char *ttl_open_leaves(const TtlBatchPlan *plan,
								   DirectLeaf **leaves_out, int *nleaves_out);
extern void ttl_close_leaves(DirectLeaf *leaves, int nleaves);

/* purge_rows.c: the row re-check and delete both walks of the direct path share */
/* What all the deletes of one direct batch share. */
typedef struct DirectRun
{
	Snapshot	snapshot;
	CommandId	cid;
	MemoryContext row_cxt;
	int32		default_ttl;
	const char *deadline;		/* rule 9: the deadline property, or NULL */
	int64		now_seconds;
	TtlDirectBatch *out;
	struct TtlArchiveRows *archive; /* the archive (1.8): the deleted rows' copies
									 * (archive_rows.c), or NULL */
} DirectRun;

extern bool ttl_direct_row_is_due(DirectLeaf *leaf, TupleTableSlot *slot, DirectRun *run,
								  int64 *ts, int64 *expiry, int64 *deadline);
extern bool ttl_direct_delete_row(DirectLeaf *leaf, TupleTableSlot *slot, DirectRun *run);
extern char *ttl_purge_recheck_sql(const char *doc, const char *deadline, int default_param,
								   int now_param);
extern char *ttl_purge_delete_sql(const char *from, const char *where, const char *returning);
extern char *ttl_purge_archived_delete_sql(Oid container, Oid archive, const char *from,
										   const char *where);

/*
 * A row source of the direct path: the row versions of the batch's leaves
 * that may be due, one after the other, each as the run's snapshot sees it
 * (the keyset walk in purge_direct.c, the bitmap walk in purge_walk.c).
 * purge_direct.c's one loop re-checks and deletes them.
 */
typedef struct TtlRowSourceOps TtlRowSourceOps;
struct TtlRowSourceOps
{
	bool		(*next) (TtlRowSourceOps *source, DirectRun *run, DirectLeaf **leaf,
						 TupleTableSlot **slot);
	void		(*end) (TtlRowSourceOps *source);
};

/* purge_walk.c: the walk of the direct path (one TID bitmap per leaf) */
extern TtlWalk *ttl_new_walk(const TtlBatchPlan *plan, DirectLeaf *leaves, int nleaves,
							 MemoryContext parent);
extern bool ttl_walk_wants(const TtlWalk *walk, const bool *kinds);
extern TtlRowSourceOps *ttl_walk_source(TtlWalk *walk, DirectLeaf *leaves, int nleaves,
										int64 limit);
extern bool ttl_walk_source_done(const TtlRowSourceOps *source);
extern void ttl_free_walk(TtlWalk *walk);

/* visit_log.c: a container's visit, for ttl.log_min_duration */
typedef struct TtlVisitLog
{
	int64		batches;
	int64		deleted;
	int64		archived;
	int64		locked;			/* skipped: see visit_log.c */
	int64		held;
	int64		quarantined;
	int64		elapsed_us;		/* in its batches */
	int64		throttled_us;	/* in the cost budget's sleeps after them */
	int64		wal_bytes;
} TtlVisitLog;

/* Where a stretch of a visit began. */
typedef struct TtlVisitMark
{
	TimestampTz started;
	int64		wal_bytes;
} TtlVisitMark;

extern void ttl_visit_log_begin(TtlVisitMark *mark);
extern void ttl_visit_log_end(TtlVisitLog *log, const TtlVisitMark *mark);
extern void ttl_visit_log_batch(TtlVisitLog *log, const TtlDirectBatch *batch, bool archived);
extern void ttl_visit_log_emit(Oid relid, const TtlVisitLog *log, const char *by);
extern const char *ttl_visit_log_round_by(void);

/* purge_batch.c: one batch of one container */
typedef struct PurgeCursor
{
	Oid			relid;
	Oid			owner;
	int64		now_seconds;	/* the round's clock */
	bool		done;			/* nothing left this round (or busy) */
	TtlDueKind	kind;			/* the kind being walked (keyset) */
	Oid			leaf;			/* keyset: resume where the last batch ended, */
	int64		lower_key;		/* (partition of a direct walk, key) */
	int64		deleted;
	bool		busy;			/* skipped this round: locked by someone else */
	bool		has_deadline;	/* the policy has a deadline property (rule 9) */
	bool		honour_pause;	/* automatic purge stops when paused */
	bool		use_walk;		/* direct path: batches take from one walk */
	TtlWalk    *walk;			/* that walk, */
	MemoryContext walk_cxt;		/* in the round's memory */
	bool		clear_backoff;	/* backed off before: a batch that commits
								 * ends the back-off (backoff.c) */
	char	   *leaf_note;		/* a leaf skipped, another role owns it
								 * (purge_owner.c): last_error, in walk_cxt */
	bool		retire_tried;	/* the retire step ran this round */
	int64		retired_leaves; /* leaves retired (purge_retire.c) */
	bool		count_due;		/* progress: count the due rows first (the
								 * worker and run_purge, not ttl.purge()) */
	TimestampTz progress_started;	/* progress: this purge reached it (0: not yet) */
	int64		progress_due;	/* progress: the due rows then (< 0: unknown) */
	TtlVisitLog log;			/* this visit's figures (visit_log.c) */
	char	   *row_error;		/* the last batch left failing rows in place:
								 * its last_error (purge_split.c), in the
								 * batch's memory, or NULL */
} PurgeCursor;

extern void ttl_cursor_init(PurgeCursor *cur, Oid relid, Oid owner, int64 now_seconds,
							bool honour_pause, bool use_walk);
extern int64 ttl_purge_batch_immediate(PurgeCursor *cur, int64 limit);
extern void ttl_cursor_show_progress(PurgeCursor *cur);
extern int64 ttl_purge_container(Oid relid, int64 max_rows, bool *skipped);

/* purge_statement.c: the statement path of a batch */
extern char *ttl_batch_candidates_sql(const char *table, const char *doc, TtlDueKind kind,
									  bool keyed, const char *deadline, bool holds,
									  bool failures);
extern List *ttl_statement_leaves(Oid relid);
extern char *ttl_batch_statement(const char *table, const char *doc, TtlDueKind kind,
								 bool partitioned, bool keyed, const char *deadline,
								 bool holds, bool failures, Oid container, Oid archive);
extern void ttl_set_purge_plan_options(void);
extern void ttl_statement_batch(const TtlBatchPlan *plan, const char *relname,
								TtlDirectBatch *out);

/* purge_hold.c: legal holds (1.8) in a batch and in rule 10 */
extern void ttl_purge_hold_begin(Oid relid, int kind, int64 lower_key);
extern bool ttl_purge_hold_active(void);
extern int64 ttl_purge_hold_floor(int kind);
extern bool ttl_purge_hold_covers(Jsonb *doc);
extern bool ttl_purge_hold_last_held(void);
extern void ttl_purge_hold_note(bool gone_or_held, int64 key);
extern void ttl_purge_hold_end(bool range_done, int64 cutoff);
extern const char *ttl_purge_hold_filter(const char *doc);
extern Datum ttl_purge_hold_matches(void);
extern void ttl_purge_hold_refuse_replace(Oid container, Oid leaf, ItemPointer tid,
										  const char *doc_column);

/* purge_owner.c: the leaves a batch leaves alone (another role owns them) */
extern void ttl_batch_owner_reset(void);
extern bool ttl_batch_leaf_fits(Oid container, Oid leaf);
extern const char *ttl_batch_owner_note(void);
/* purge_split.c: a failing batch split until its failing rows are isolated */
struct ErrorData;
typedef void (*TtlSplitStep) (void *arg);
extern struct ErrorData *ttl_split_try(TtlSplitStep step, void *arg);
extern bool ttl_split_row_error(const struct ErrorData *edata);
extern void ttl_split_batch(const TtlBatchPlan *plan, const char *relname,
							const struct ErrorData *first, TtlDirectBatch *out);

/* purge_leaves.c: what a DELETE of a table would run besides deleting */
extern const char *ttl_relation_obstacle(Relation rel);

/* retire_check.c: whether a leaf may be retired whole, and is due */
extern const char *ttl_retire_obstacle(Oid container, Oid leaf, const TtlContainer *policy);
extern const char *ttl_retire_leaf_due(Oid leaf, const TtlContainer *policy, int64 now_seconds);

/* retire_archive.c: a retired leaf into the container's archive */
extern const char *ttl_retire_attach_misfit(Oid archive, Oid leaf);
extern void ttl_retire_attach(Oid archive, Oid leaf, const char *bound);
extern int64 ttl_retire_copy(Oid container, Oid archive, Oid leaf);

/* purge_retire.c: the retire step of a batch or a ttl.purge() */
extern int	ttl_retire_step(PurgeCursor *cur, bool *busy);
extern int	ttl_retire_drop_pending(PurgeCursor *cur);
extern bool ttl_retire_defers(Oid container, Oid leaf);
extern void ttl_retire_forget(Oid container);

/* purge_round.c */
extern List *ttl_list_due_containers(bool all_owners);

#endif							/* TTL_PURGE_INTERNAL_H */
