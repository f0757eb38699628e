/*
 * registry.h
 *		The registry of containers (table ttl.registry): its backend-local
 *		cache, reads, the list of containers and the purge/policy lock
 *		(registry.c).  container_admin.c, the SQL functions that change it,
 *		belongs to this family.
 */
#ifndef TTL_REGISTRY_H
#define TTL_REGISTRY_H

#include "nodes/pg_list.h"

#include "base/purge_window.h"
/* 1.9: what the purge does with a leaf whose every item has expired. */
typedef enum TtlRetireMode
{
	TTL_RETIRE_OFF,				/* delete its rows (the default) */
	TTL_RETIRE_DROP,			/* detach it, then drop it */
	TTL_RETIRE_DETACH			/* detach it and record it (ttl.retired) */
} TtlRetireMode;

/* The longest deadline property name (bytes), as kept in the cache. */
#define TTL_DEADLINE_PROPERTY_MAX 255

typedef struct TtlContainer
{
	Oid			relid;
	bool		default_is_null;
	int32		default_ttl;
	bool		paused;
	bool		append_only;	/* 1.3: the purge index is BRIN (purge walks) */
	bool		index_free;		/* 1.6: append-only without a purge index
								 * (purge sweeps every page) */
	NameData	doc_column;
	/* 1.5, rule 9: the deadline property, "" for none (deadline.c) */
	char		deadline_property[TTL_DEADLINE_PROPERTY_MAX + 1];
	/* 1.5: the restore guard holds it (held_since is set; guard.c) */
	bool		held;
	/* 1.7, rule 10: a write replaces an expired holder of its key (replace.c) */
	bool		replace_expired;
	/* 1.5: where the container is at home and its hold's fraction (guard.c) */
	bool		has_home;
	int64		home_system;
	Oid			home_database;
	float4		hold_fraction;
	/* 1.8, the archive: purged rows go to this table first, or InvalidOid */
	Oid			archive;
	/* 1.9: ttl.set_purge_window's text, "" for none (base/purge_window.c) */
	char		purge_window[TTL_WINDOW_MAX_TEXT + 1];
	/* 1.9, ttl.set_retire: whole leaves retired (purge_retire.c) */
	TtlRetireMode retire;
	/* 1.9: ttl.set_mark_purge_deletes, one of TTL_MARK_* (purge/mark.c) */
	char		mark_purge_deletes;
} TtlContainer;

/*
 * A container's marking of purge deletes in the change stream: follow the
 * setting ttl.mark_purge_deletes (zero, so that a zeroed policy follows
 * it), or always on, or always off.
 */
#define TTL_MARK_DEFAULT	'\0'
#define TTL_MARK_ON			'y'
#define TTL_MARK_OFF		'n'

#define TTL_HAS_DEADLINE(c) ((c)->deadline_property[0] != '\0')

extern void ttl_registry_invalidate(Datum arg, Oid relid);
extern const TtlContainer *ttl_container_ref(Oid relid);
extern bool ttl_lookup_container(Oid relid, TtlContainer *out);
extern bool ttl_read_container(Oid relid, TtlContainer *out);
extern List *ttl_list_containers(bool due_only);
extern bool ttl_registry_lock_first(bool wait);
extern void ttl_get_container(Oid relid, TtlContainer *out);
extern char *ttl_relation_display_name(Oid relid);
extern const char *ttl_retire_mode_name(TtlRetireMode mode);
extern bool ttl_retire_mode_parse(const char *name, TtlRetireMode *mode);
extern void ttl_check_relation_exists(Oid relid);
extern void ttl_check_container_owner(Oid relid);
extern void ttl_lock_container(Oid relid);
extern bool ttl_try_lock_container(Oid relid);
extern void ttl_lock_container_for_replace(Oid relid);
extern bool ttl_try_lock_container_for_replace(Oid relid, bool *was_held);
extern void ttl_unlock_container_for_replace(Oid relid);
extern void (*ttl_policy_change_hook) (Oid relid);

#endif							/* TTL_REGISTRY_H */
