/*
 * scheduler.h
 *		Where purges are scheduled: the launcher (launcher.c) hands the
 *		databases, most urgent first, to a pool of at most ttl.max_workers
 *		purge workers (worker.c), each of which serves one database for a
 *		round and leaves.  db_states.c holds what is known of each database
 *		and resume_store.c the containers' resume points, in dynamic shared
 *		memory (shared_area.c) with no fixed cap; worker_slots.c holds the
 *		workers' slots and stops a worker before DROP DATABASE and the
 *		like.
 */
#ifndef TTL_SCHEDULER_H
#define TTL_SCHEDULER_H

#include "access/xact.h"
#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/dsa.h"

#include "base/hooks.h"

#include "base/visit.h"

struct HTAB;
struct TtlResumePoint;

extern void ttl_register_launcher(void);
extern bool ttl_claim_worker_slot(Oid dboid);
PGDLLEXPORT void ttl_launcher_main(Datum arg);
PGDLLEXPORT void ttl_worker_main(Datum arg);

/* worker_slots.c, for launcher.c */
extern bool ttl_database_blocked(Oid dboid);
/* worker_slots.c: ttl.c's hooks (shared memory, ProcessUtility, xact) */
extern void ttl_scheduler_shmem_request(void);
extern void ttl_scheduler_shmem_startup(void);
extern void ttl_scheduler_utility(TTL_UTILITY_PARAMS, TtlUtilityNext next);
extern void ttl_scheduler_xact_callback(XactEvent event, void *arg);

/* database_commands.c, for worker_slots.c */
extern Oid	ttl_database_needed_alone(Node *stmt);

/* shared_area.c: the dynamic shared memory of db_states.c and resume_store.c */
extern Size ttl_sched_area_size(void);
extern dsa_area *ttl_sched_area_create(int tranche_id, bool *created);
extern void ttl_sched_area_created(void);
extern dsa_area *ttl_sched_area(void);

/* db_states.c: the databases, in shared memory */
extern Size ttl_db_states_size(void);
extern void ttl_db_states_request(void);
extern void ttl_db_states_attach(void);
extern void ttl_db_launcher_started(void);
extern void ttl_db_sync(List *dboids, bool rescan);
extern Oid	ttl_db_pick(TimestampTz now, int naptime_ms, bool (*is_blocked) (Oid dboid),
						long *wait_ms);
extern void ttl_db_worker_gone(Oid dboid);
extern void ttl_db_worker_arrived(Oid dboid);
extern void ttl_db_worker_left(Oid dboid);
extern int64 ttl_db_visits(Oid dboid);
extern void ttl_db_mark_has_ttl(Oid dboid);
extern uint32 ttl_db_ext_marks(Oid dboid);
extern void ttl_db_set_has_ttl(Oid dboid, bool has_ttl, uint32 marks_before);
extern void ttl_db_publish_backlog(Oid dboid, int64 due_rows, bool due_rows_capped,
								   TimestampTz oldest_due);
extern void ttl_db_publish_error(Oid dboid, const char *message);

/*
 * db_states.c: the in-flight record a worker left when it exited in the
 * middle of a statement on a user table (worker_slots.c hands it over),
 * for the next worker of that database (worker.c); and the launcher's
 * terminations (launcher.c).
 */
typedef struct TtlInterrupted
{
	Oid			relid;			/* InvalidOid: none */
	TtlStep		step;
	bool		by_bound;		/* the launcher ended it: ttl.max_visit_time */
	int64		bound_ms;
	uint32		seq;			/* tells one record from the next */
} TtlInterrupted;

extern void ttl_db_note_interrupted(Oid dboid, Oid relid, TtlStep step, bool by_bound,
									int64 bound_ms);
extern bool ttl_db_take_interrupted(Oid dboid, TtlInterrupted *rec);
extern void ttl_db_forget_interrupted(Oid dboid, uint32 seq);
extern void ttl_db_note_termination(Oid dboid, Oid relid, TtlStep step, int64 bound_ms);

/* resume_store.c: where each container's next batch starts, between visits */
extern void ttl_resume_store_request(void);
extern void ttl_resume_store_attach(dsa_area *area, int tranche_id);
extern void ttl_db_forget_resume_points(Oid dboid);
extern void ttl_db_load_resume_points(Oid dboid, struct HTAB *map);
extern void ttl_db_save_resume_points(Oid dboid, struct HTAB *map);
extern void ttl_db_save_resume_point(Oid dboid, Oid relid, const struct TtlResumePoint *point);

/* db_states.c, for the views of pool_views.c: a copy of one database's state */
#define TTL_ERROR_LEN 256

typedef struct TtlDbReport
{
	Oid			dboid;
	bool		has_ttl_known;	/* false: not visited yet */
	bool		has_ttl;
	int			pid;			/* its worker now, 0: none */
	TimestampTz last_served;	/* 0: never */
	int64		due_rows;
	bool		due_rows_capped;	/* a count stopped at its cap */
	TimestampTz oldest_due;		/* 0: none due */
	char		last_error[TTL_ERROR_LEN];
	int64		visits;
	int64		terminations;	/* visits the launcher ended */
	char		last_termination[TTL_ERROR_LEN];
} TtlDbReport;

extern TtlDbReport *ttl_db_report(int *n);
extern bool ttl_db_pool_counts(int *running, int *high_water, int64 *terminations);

/* worker_slots.c, for launcher.c and pool_views.c: each worker's visit */
extern void ttl_visit_publish_bound(int64 bound_ms);
extern bool ttl_visit_overstayed(pid_t pid, TimestampTz now, int64 bound_ms,
								 long *left_ms, Oid *relid, TtlStep *step);
extern void ttl_visit_inflight_of(pid_t pid, Oid *relid, TtlStep *step);

#endif							/* TTL_SCHEDULER_H */
