/*
 * trigger_args.h
 *		The one codec of the stamp trigger's arguments (trigger_args.c):
 *		every C reader and writer of ttl.stamp()'s argument list goes
 *		through it, and the SQL writers call it (ttl._trigger_args,
 *		ttl._stamp_trigger).  The trigger's name is defined here only.
 *
 * The formats:
 *
 *   format 2 (written from 1.9 on, when the database's SQL is 1.9 or
 *   later): a first argument 'format=2', then one 'key=value' argument per
 *   field that is set, in this order:
 *     doc=<document column>          always
 *     default=<seconds> | default=   the policy a distributed container's
 *     state=active | state=paused    piece carries (registry/policy.c);
 *                                    both or neither ('default=' is a NULL
 *                                    default)
 *     deadline=<property>            rule 9's deadline property, if any
 *     archive=<qualified name>       a distributed container's archive
 *     mark=on | mark=off             a distributed container's marking of
 *                                    purge deletes (ttl.set_mark_purge_deletes;
 *                                    absent: follow ttl.mark_purge_deletes)
 *   A value is everything after the first '=' (a key never holds one), so
 *   any column or property name travels unchanged.  A key the decoder
 *   does not know is skipped: a later round adds its per-container state
 *   (retire mode, purge window, marking) as new keys without a new format,
 *   and a node whose library is older still reads the rest.  A new format
 *   number is only for a change of an existing key's meaning; a list in
 *   a format above 2 is refused.
 *
 *   format 1 (1.0 to 1.8, still read, and written while the database's
 *   SQL is older than 1.9, so that a node still on an older library reads
 *   what a newer one wrote): positional,
 *     (doc)  (doc, deadline)                       a container of one node
 *     (doc, default, state[, deadline[, archive]]) a distributed piece
 *   with '' for a NULL default and for no deadline before an archive.
 *
 * Telling them apart: a list is format 2 when its first argument starts
 * with "format=" and every other one is a key=value, one of them doc=.  A
 * format 1 list looks like that only for a container of one node whose
 * document column is named "format=..." and whose deadline property starts
 * with "doc=" (a distributed piece's second argument is a number or ''):
 * such a 1.5-1.8 container would be misread until its trigger is written
 * again (ttl.set_deadline_property), which writes format 2.
 */
#ifndef TTL_TRIGGER_ARGS_H
#define TTL_TRIGGER_ARGS_H

#include "commands/trigger.h"
#include "nodes/pg_list.h"

#include "registry/registry.h"

/* The stamp trigger of a container and of each of its pieces and leaves. */
#define TTL_STAMP_TRIGGER "zzz_ttl_stamp"

#define TTL_TRIGGER_ARGS_POSITIONAL 1	/* 1.0 to 1.8 */
#define TTL_TRIGGER_ARGS_KEYED 2	/* 1.9 */

typedef struct TtlTriggerArgs
{
	int			format;			/* the format read (writers: ignored) */
	NameData	doc_column;
	/* rule 9's deadline property, "" for none */
	char		deadline_property[TTL_DEADLINE_PROPERTY_MAX + 1];
	/* a distributed container's piece carries its policy: */
	bool		has_policy;
	bool		default_is_null;
	int32		default_ttl;
	bool		paused;
	/* the archive's qualified name as written (palloc'd), NULL for none */
	char	   *archive;
	/* marking of purge deletes, TTL_MARK_* (registry.h); format 2 only */
	char		mark;
} TtlTriggerArgs;

extern void ttl_trigger_args_init(TtlTriggerArgs *args, const char *doc_column);
extern char *ttl_trigger_args_parse(int nargs, char *const *argv, TtlTriggerArgs *out);
extern void ttl_trigger_args_read(Relation rel, const Trigger *trigger, TtlTriggerArgs *out);
extern char **ttl_trigger_args_split(bytea *tgargs, int nargs);
extern int	ttl_trigger_args_format(void);
extern List *ttl_trigger_args_encode(const TtlTriggerArgs *args, int format);
extern char *ttl_trigger_args_sql(const TtlTriggerArgs *args);
extern bytea *ttl_trigger_args_bytea(const TtlTriggerArgs *args, int16 *nargs);
extern char *ttl_stamp_trigger_sql(Oid relid, const TtlTriggerArgs *args, bool or_replace);

#endif							/* TTL_TRIGGER_ARGS_H */
