/*
 * scheduler.h
 *		Where purges are scheduled: the launcher (launcher.c) keeps one purge
 *		worker (worker.c) per database; worker_slots.c holds their shared
 *		memory and stops a worker before DROP DATABASE and the like.
 */
#ifndef TTL_SCHEDULER_H
#define TTL_SCHEDULER_H

extern void ttl_register_launcher(void);
extern bool ttl_claim_worker_slot(Oid dboid);
PGDLLEXPORT void ttl_launcher_main(Datum arg);
PGDLLEXPORT void ttl_worker_main(Datum arg);

/* worker_slots.c, for launcher.c */
extern bool ttl_database_blocked(Oid dboid);
extern void ttl_install_worker_slot_hooks(void);

#endif							/* TTL_SCHEDULER_H */
