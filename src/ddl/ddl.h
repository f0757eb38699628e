/*
 * ddl.h
 *		What the files that make containers follow ALTER TABLE share:
 *		ddl_events.c (the event triggers), ddl_follow.c (the follow-up) and
 *		ddl_view.c (the view as a catalog object).  Nothing else includes it.
 */
#ifndef TTL_DDL_H
#define TTL_DDL_H

#include "nodes/parsenodes.h"
#include "utils/acl.h"

#include "registry/registry.h"

/*
 * What ddl_command_start learnt about a command, for ddl_command_end of the
 * same command (same parse tree, same transaction).  Kept in
 * TopMemoryContext; entries of an earlier transaction are stale (their
 * command failed) and are dropped.
 */
typedef struct PendingCommand
{
	Node	   *parsetree;
	LocalTransactionId lxid;
	Oid			relid;			/* the container */
	char	   *old_relname;	/* its name before the command */
	bool		rebuild;		/* the view was dropped: create it again */
	char	   *view_name;		/* the dropped view: */
	Oid			view_nsp;
	Oid			view_owner;
	Acl		   *view_acl;		/* NULL: default privileges */
	char	   *view_comment;
	char	   *view_options;	/* WITH (...) contents */
} PendingCommand;

/* ddl_triggers.c */
extern void ttl_check_trigger_order(Node *parsetree);

/* ddl_view.c */
extern int	ttl_own_ddl;
extern void ttl_run_pinned(const char *sql);
extern Oid	ttl_registered_view(Oid relid);
extern char *ttl_qualified_name(Oid relid);
extern bool ttl_relation_has_row_security(Oid relid);
extern char *ttl_view_options_text(Oid view);
extern Acl *ttl_relation_acl(Oid relid);
extern char *ttl_view_definition_sql(Oid relid, const char *doc_column);
extern Oid	ttl_recreate_view(PendingCommand *p, TtlContainer *c);

/* ddl_follow.c */
extern void ttl_follow_container(Oid relid, PendingCommand *p, Node *parsetree);

#endif							/* TTL_DDL_H */
