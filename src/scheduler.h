/*
 * scheduler.h
 *		Where purges are scheduled: the launcher (launcher.c) keeps one purge
 *		worker (worker.c) per database.
 */
#ifndef TTL_SCHEDULER_H
#define TTL_SCHEDULER_H

extern void ttl_register_launcher(void);
extern bool ttl_claim_worker_slot(Oid dboid);
PGDLLEXPORT void ttl_launcher_main(Datum arg);
PGDLLEXPORT void ttl_worker_main(Datum arg);

#endif							/* TTL_SCHEDULER_H */
