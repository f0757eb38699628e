/*
 * run_as.h
 *		Running SQL as another role inside a restricted operation with a
 *		pinned search_path, and statements on the extension's own tables as
 *		their owner (run_as.c).
 */
#ifndef TTL_RUN_AS_H
#define TTL_RUN_AS_H

#include "executor/spi.h"

typedef struct TtlUserContext
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	bool		elevated;		/* ttl_begin_owner_work: became the owner */
} TtlUserContext;

/* SPI_connect(), which cannot fail but by a bug: one place to say so. */
extern void ttl_spi_connect(void);
extern Oid	ttl_table_owner(Oid relid);
extern int	ttl_pin_search_path(void);
extern void ttl_become_user(Oid userid, TtlUserContext *ctx);
extern void ttl_restore_user(TtlUserContext *ctx);
extern bool ttl_begin_owner_work(Oid owner, TtlUserContext *ctx);
extern void ttl_end_owner_work(TtlUserContext *ctx);
extern SPIPlanPtr ttl_kept_plan(SPIPlanPtr *saved, const char *sql, int nargs,
								Oid *argtypes);
extern void ttl_registry_execute(const char *sql, int nargs, Oid *argtypes,
								 Datum *values, const char *nulls, SPIPlanPtr *saved);
extern uint64 ttl_registry_execute_count(const char *sql, int nargs, Oid *argtypes,
										 Datum *values, const char *nulls,
										 SPIPlanPtr *saved);

#endif							/* TTL_RUN_AS_H */
