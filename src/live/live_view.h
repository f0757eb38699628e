/*
 * live_view.h
 *		Where expired items are hidden: <table>_live planned as the table
 *		with a security qual (live_view.c: post-parse, planner and
 *		ProcessUtility hooks) and its filter ttl.live() (live_filter.c).
 */
#ifndef TTL_LIVE_VIEW_H
#define TTL_LIVE_VIEW_H

#include "nodes/parsenodes.h"

#include "base/hooks.h"

/* ttl.c's hooks: planner, post_parse_analyze, ProcessUtility */
extern void ttl_live_view_plan(Query *parse);
extern void ttl_live_view_analyzed(Query *query);
extern void ttl_live_view_utility(TTL_UTILITY_PARAMS, TtlUtilityNext next);

#endif							/* TTL_LIVE_VIEW_H */
