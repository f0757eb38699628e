/*
 * purge_owner.c
 *		The leaves a purge batch leaves alone because another role owns
 *		them (registry/leaf_owner.c has the rule): each path of a batch
 *		(the direct leaves, purge_leaves.c; the statement's leaf by leaf,
 *		purge_statement.c) asks here before it touches a leaf, and the
 *		first leaf skipped in a batch is noted for the batch's caller
 *		(purge_batch.c), which keeps it in the cursor, warns once per
 *		visit and records it as the container's last_error while the rest
 *		of the container is purged.
 *
 * Locking: the caller holds the leaf in RowExclusiveLock (taken without
 * waiting with the rest of the tree, purge_batch.c, or by the statement
 * for a leaf attached since), so its owner, and the owners of the
 * partitioned tables above it, which ALTER TABLE ... OWNER TO changes
 * under AccessExclusiveLock, stay as checked until the batch commits.
 * The note is backend-local and lives for one batch.
 */
#include "postgres.h"

#include "purge/purge_internal.h"
#include "registry/leaf_owner.h"

/* The batch's note: what the first leaf skipped says (no row data). */
static char foreign_note[1024];

/* A batch starts with no leaf skipped. */
void
ttl_batch_owner_reset(void)
{
	foreign_note[0] = '\0';
}

/*
 * Whether the batch of container may touch leaf (held in RowExclusiveLock):
 * false, noted, when leaf or a partitioned table above it has another
 * owner than container.
 */
bool
ttl_batch_leaf_fits(Oid container, Oid leaf)
{
	if (ttl_leaf_owner_fits(container, leaf))
		return true;
	if (foreign_note[0] == '\0')
		strlcpy(foreign_note, ttl_foreign_leaf_text(container, leaf), sizeof(foreign_note));
	return false;
}

/* The batch's note, or NULL when it skipped no leaf. */
const char *
ttl_batch_owner_note(void)
{
	return foreign_note[0] != '\0' ? foreign_note : NULL;
}
