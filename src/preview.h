/*
 * preview.h
 *		ttl.preview() and ttl.expiring() (preview.c): what a container's
 *		items look like under its present default and a proposed one, and
 *		which items expire within a window, answered from the purge index
 *		(index_count.c) where the fast path applies, else by an exact scan.
 */
#ifndef TTL_PREVIEW_H
#define TTL_PREVIEW_H

#include "registry.h"

extern bool ttl_preview_fast_path_applies(const TtlContainer *c);

#endif							/* TTL_PREVIEW_H */
