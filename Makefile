# ttl: PGXS build.  `make && make install`; tests: test/run-all (see README).
MODULE_big = ttl
OBJS = src/ttl.o src/settings.o src/mark.o src/document.o src/numeric_read.o src/expiry.o src/item_functions.o \
       src/stamp.o src/stamp_row.o src/replace.o src/registry.o src/container_admin.o src/run_as.o src/subxact.o \
       src/live_view.o src/live_view_shape.o src/live_view_columns.o src/live_view_shard.o src/live_filter.o \
       src/purge_functions.o src/purge_batch.o src/purge_statement.o src/purge_direct.o src/purge_walk.o src/purge_rows.o src/purge_replace.o src/purge_leaves.o src/purge_round.o \
       src/ddl_events.o src/ddl_follow.o src/ddl_view.o src/stats.o src/launcher.o src/worker_slots.o src/database_commands.o src/db_states.o src/resume_store.o src/pool_views.o src/worker.o src/accessors.o src/purge_key.o src/citus_meta.o src/citus.o src/citus_copy.o src/index_count.o src/preview_leaves.o src/preview.o src/expiring.o src/deadline.o src/deadline_admin.o src/guard.o src/guard_events.o src/guard_estimate.o
EXTENSION = ttl
DATA = ttl--1.0.sql ttl--1.0--1.1.sql ttl--1.1--1.2.sql ttl--1.2--1.3.sql ttl--1.3--1.4.sql ttl--1.4--1.5.sql ttl--1.5--1.6.sql ttl--1.6--1.7.sql
PGFILEDESC = "ttl - time-to-live for JSONB document tables"

REGRESS = rules validation trigger stamping view item_functions lifecycle privileges purge accessors live_view \
          purge_security stats rls_follow schema_changes enable_edges live_view_dropped upgrade_follow pool_views purge_index stamp_bytes live_filter_forms append_only citus_absent preview deadline upgrade_deadline restore_guard live_filter_cache upgrade_append rule10 upgrade_rule10 rule10_setting
REGRESS_OPTS = --load-extension=ttl
ISOLATION = purge_vs_update purge_vs_lock purge_concurrency purge_statement_path live_view_replan purge_lock_private purge_stale_default preview_snapshot purge_vs_deadline live_filter_policy rule10_race rule10_isolation

PG_CPPFLAGS = -Wall -Werror -Wmissing-prototypes
PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies: rebuild every object when a header
# changes (document_read.h, for one, is compiled into its callers).
$(OBJS) $(OBJS:.o=.bc): $(wildcard src/*.h)
