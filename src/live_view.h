/*
 * live_view.h
 *		Where expired items are hidden: <table>_live planned as the table
 *		with a security qual (live_view.c: post-parse, planner and
 *		ProcessUtility hooks) and its filter ttl.live() (live_filter.c).
 */
#ifndef TTL_LIVE_VIEW_H
#define TTL_LIVE_VIEW_H

extern void ttl_install_live_view_hooks(void);

#endif							/* TTL_LIVE_VIEW_H */
