/*
 * ttl.h
 *		Shared declarations of the ttl extension: settings, the clock, the
 *		document accessors, the container registry and purge.
 *
 * Every .c file of the extension includes this header and nothing of the
 * other files' internals.
 */
#ifndef TTL_H
#define TTL_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "utils/jsonb.h"
#include "executor/spi.h"
#include "utils/relcache.h"

/* Seconds from the Unix epoch to the PostgreSQL epoch (2000-01-01). */
#define TTL_UNIX_EPOCH_OFFSET \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY)

/* ttl.c: settings */
extern bool ttl_enabled;
extern int	ttl_naptime;
extern int	ttl_batch_size;
extern int	ttl_batch_timeout;
extern int	ttl_cost_limit;
extern double ttl_cost_delay;

/* ttl.c: the clock every rule uses */
extern TimestampTz ttl_current_time(void);
extern int64 ttl_current_unix_seconds(void);

/* expiry.c: reading _ts and ttl out of a document, the expiry rules */
typedef enum TtlItemState
{
	TTL_ITEM_ABSENT,			/* no root ttl */
	TTL_ITEM_VALID,				/* -1 or 1..INT32_MAX */
	TTL_ITEM_INVALID			/* present but not a valid ttl */
} TtlItemState;

extern bool ttl_numeric_to_int64(Numeric num, int64 *result);
extern TtlItemState ttl_item_ttl_value(const JsonbValue *v, int32 *ttl);
extern bool ttl_is_valid_ttl(int64 ttl);
extern char *ttl_jsonb_value_text(const JsonbValue *v);
extern bool ttl_doc_expiry(Jsonb *doc, int32 default_ttl, int64 *ts, int64 *expiry);

/* trigger.c */
extern void ttl_validate_document(Relation rel, const char *doc_column,
								  Datum doc, bool isnull);

/* catalog.c: the registry of containers and its backend-local cache */
typedef struct TtlContainer
{
	Oid			relid;
	bool		default_is_null;
	int32		default_ttl;
	bool		paused;
	NameData	doc_column;
} TtlContainer;

extern bool ttl_lookup_container(Oid relid, TtlContainer *out);
extern bool ttl_read_container(Oid relid, TtlContainer *out);
extern List *ttl_list_containers(bool due_only);
extern void ttl_get_container(Oid relid, TtlContainer *out);
extern void ttl_register_cache_callbacks(void);
extern void ttl_check_container_owner(Oid relid);
extern Oid	ttl_table_owner(Oid relid);
extern bool ttl_try_lock_container(Oid relid);

/* catalog.c: running SQL as another role inside a restricted operation */
typedef struct TtlUserContext
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
} TtlUserContext;

extern void ttl_become_user(Oid userid, TtlUserContext *ctx);
extern void ttl_restore_user(TtlUserContext *ctx);
extern SPIPlanPtr ttl_kept_plan(SPIPlanPtr *saved, const char *sql, int nargs,
								Oid *argtypes);
extern void ttl_registry_execute(const char *sql, int nargs, Oid *argtypes,
								 Datum *values, const char *nulls, SPIPlanPtr *saved);

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
									const bool *want, Oid start_leaf, int64 lower_key,
									int64 limit, TtlWalk **walk, MemoryContext walk_parent,
									int32 default_ttl, int64 now_seconds,
									TtlDirectBatch *out);
extern void ttl_free_walk(TtlWalk *walk);

/* purge.c */
extern int64 ttl_purge_container(Oid relid, int64 max_rows, bool *skipped);
extern void ttl_record_purge(Oid relid, int64 deleted, const char *error);

/*
 * A purge round over every due container, one batch per container in turn
 * (fair), each batch committed by the caller's callback, which also decides
 * whether the round goes on (the worker stops when ttl.enabled goes off).
 */
typedef struct TtlRoundOps
{
	bool		(*next_transaction) (void *arg);	/* commit, start another */
	void		(*report) (void *arg, const char *activity);
	void	   *arg;
	bool		all_owners;		/* worker: every container; else the caller's */
	bool		walks;			/* direct path: one bitmap walk per container
								 * for the round (CALL ttl.run_purge) */
	int			max_round_ms;	/* > 0: end the round after this long */
	bool		unfinished;		/* out: the round ended with work left */
	struct HTAB *resume;		/* where unfinished containers stopped */
} TtlRoundOps;

extern struct HTAB *ttl_create_resume_map(void);

extern int64 ttl_purge_round(TtlRoundOps *ops);
extern void ttl_cost_sleep(void);
extern void ttl_install_purge_hooks(void);

/* live_view.c: <table>_live planned as the table with a security qual
 * (post-parse, planner and ProcessUtility hooks) */
extern void ttl_install_live_view_hooks(void);

/* launcher.c / worker.c */
extern void ttl_register_launcher(void);
extern bool ttl_claim_worker_slot(Oid dboid);
PGDLLEXPORT void ttl_launcher_main(Datum arg);
PGDLLEXPORT void ttl_worker_main(Datum arg);

#endif							/* TTL_H */
