/*
 * purge_internal.h
 *		What the files of the purge family share: purge_batch.c (one batch),
 *		purge_statement.c (its statement path), purge_direct.c (the direct
 *		path), purge_walk.c (its TID-bitmap walk), purge_rows.c (the row
 *		re-check and delete of both), purge_leaves.c (what it walks),
 *		purge_round.c (a round) and purge_functions.c (the SQL entry
 *		points).  Nothing outside purge_*.c includes it.
 */
#ifndef TTL_PURGE_INTERNAL_H
#define TTL_PURGE_INTERNAL_H

#include "access/attnum.h"
#include "executor/tuptable.h"
#include "nodes/pg_list.h"
#include "utils/palloc.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

/* purge_direct.c: purge without a lock pass, where it applies */
typedef struct TtlDirectBatch
{
	int64		found;			/* due rows deleted, not skipped as busy */
	int64		deleted;
	bool		range_done;		/* a walk: it is done */
	Oid			last_leaf;		/* a keyset batch: the partition and key */
	int64		last_key;		/* of the last of them */
} TtlDirectBatch;

typedef struct TtlWalk TtlWalk;

extern const char *ttl_purge_direct(Oid relid, const char *doc_column,
									bool index_free, const bool *want, Oid start_leaf, int64 lower_key,
									int64 limit, TtlWalk **walk, MemoryContext walk_parent,
									int32 default_ttl, const char *deadline,
									int64 now_seconds, TtlDirectBatch *out);

/* purge_leaves.c: the leaves the direct path walks */
/* One leaf with the purge indexes needed (inherited, own), ready to walk. */
/* The kinds of due rows: 0 inherited, 1 own ttl, 2 deadline (PurgeKind). */
#define TTL_PURGE_KINDS 3

typedef struct DirectLeaf
{
	Relation	rel;
	Relation	index[TTL_PURGE_KINDS];	/* [0]: inherited (doc_ts), [1]: own
										 * (doc_expiry), [2]: deadline
										 * (doc_deadline_key, rule 9) */
	bool		keyed[TTL_PURGE_KINDS];	/* that index is the one of ttl.doc_purge_key */
	bool		brin;			/* and it is BRIN (append-only): walks only */
	bool		sweep;			/* no purge index (append-only, 1.6): a walk
								 * takes every page of the leaf */
	AttrNumber	doc_attno;
} DirectLeaf;

extern const char *ttl_open_leaves(Oid relid, const char *doc_column, bool index_free,
								   const bool *want,
								   const char *deadline,
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
} DirectRun;

extern bool ttl_direct_row_is_due(DirectLeaf *leaf, TupleTableSlot *slot, DirectRun *run,
								  int64 *ts, int64 *expiry, int64 *deadline);
extern bool ttl_direct_delete_row(DirectLeaf *leaf, TupleTableSlot *slot, DirectRun *run);

/* purge_walk.c: the walk of the direct path (one TID bitmap per leaf) */
extern TtlWalk *ttl_new_walk(Oid relid, DirectLeaf *leaves, int nleaves, const bool *want,
							 const int64 *cutoff, MemoryContext parent);
extern bool ttl_walk_wants(const TtlWalk *walk, const bool *want);
extern bool ttl_take_walk(TtlWalk *walk, DirectLeaf *leaves, int nleaves, int64 limit,
						  DirectRun *run);
extern void ttl_free_walk(TtlWalk *walk);

/* purge_batch.c: one batch of one container */
typedef enum PurgeKind
{
	PURGE_INHERITED,			/* items without their own ttl: key _ts */
	PURGE_OWN,					/* items with their own ttl: key _ts + ttl */
	PURGE_DEADLINE,				/* items with a deadline (rule 9): key deadline */
	PURGE_DONE
} PurgeKind;

typedef struct PurgeCursor
{
	Oid			relid;
	Oid			owner;
	int64		now_seconds;	/* the round's clock */
	PurgeKind	kind;
	Oid			leaf;			/* keyset: resume where the last batch ended, */
	int64		lower_key;		/* (partition of a direct walk, key) */
	int64		deleted;
	bool		busy;			/* skipped this round: locked by someone else */
	bool		has_deadline;	/* the policy has a deadline property (rule 9) */
	bool		honour_pause;	/* automatic purge stops when paused */
	bool		use_walk;		/* direct path: batches take from one walk */
	TtlWalk    *walk;			/* that walk, */
	MemoryContext walk_cxt;		/* in the round's memory */
} PurgeCursor;

extern void ttl_cursor_init(PurgeCursor *cur, Oid relid, Oid owner, int64 now_seconds,
							bool honour_pause, bool use_walk);
extern int64 ttl_purge_batch_immediate(PurgeCursor *cur, int64 limit);
extern int64 ttl_purge_container(Oid relid, int64 max_rows, bool *skipped);

/* purge_statement.c: the statement path of a batch */
extern char *ttl_batch_statement(const char *table, const char *doc, PurgeKind kind,
								 bool partitioned, bool keyed, const char *deadline,
								 const char *archive_insert);
extern void ttl_set_purge_plan_options(void);
extern void ttl_statement_batch(PurgeCursor *cur, const char *relname, const char *doc_name,
								int64 limit, int64 cutoff, int32 default_ttl,
								const char *deadline, Oid archive, TtlDirectBatch *out);

/* purge_round.c */
extern List *ttl_list_due_containers(bool all_owners);

#endif							/* TTL_PURGE_INTERNAL_H */
