# ttl: PGXS build.  `make && make install`; tests: test/run-all (see README);
# the tests are test/sql + test/expected (pg_regress), test/specs
# (isolation) and test/t (TAP).
MODULE_big = ttl
# Every .c file under src/, one folder per subsystem (src/README.md).
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c src/*/*.c)))
EXTENSION = ttl
DATA = ttl--1.0.sql ttl--1.0--1.1.sql ttl--1.1--1.2.sql ttl--1.2--1.3.sql ttl--1.3--1.4.sql ttl--1.4--1.5.sql ttl--1.5--1.6.sql ttl--1.6--1.7.sql
PGFILEDESC = "ttl - time-to-live for JSONB document tables"

REGRESS = rules validation trigger stamping view item_functions lifecycle privileges purge accessors live_view \
          purge_security stats rls_follow schema_changes enable_edges live_view_dropped upgrade_follow pool_views purge_index stamp_bytes live_filter_forms append_only citus_absent preview deadline upgrade_deadline restore_guard live_filter_cache upgrade_append definitions_gate quoting regclass_errors upgrade_quoting internal_privileges stats_privacy visit_bound
REGRESS_OPTS = --inputdir=test --load-extension=ttl
ISOLATION_OPTS = --inputdir=test
ISOLATION = purge_vs_update purge_vs_lock purge_concurrency purge_statement_path live_view_replan purge_lock_private purge_stale_default preview_snapshot purge_vs_deadline live_filter_policy stats_dropped

PG_CPPFLAGS = -I$(srcdir)/src -Wall -Werror -Wmissing-prototypes
PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies: rebuild every object when a header
# changes (document_read.h, for one, is compiled into its callers).
$(OBJS) $(OBJS:.o=.bc): $(wildcard src/*.h src/*/*.h)
