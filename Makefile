# ttl: PGXS build.  `make && make install`; tests: test/run-all (see README);
# the tests are sql/ + expected/ (pg_regress, PGXS's own places),
# test/specs + test/expected (isolation) and test/t (TAP).
#
# Also (issue 33):
#   make installcheck  the regression and isolation suites against an already
#                      running server (PGHOST/PGPORT/PGUSER, a superuser),
#                      without shared_preload_libraries; every REGRESS and
#                      ISOLATION test but those of INSTALLCHECK_SKIP below.
#   make dist          ttl-<semver>.zip (the PGXN distribution) from
#                      `git archive HEAD`.
# Out-of-tree builds work (`make -f SRC/Makefile VPATH=SRC`, pg_buildext):
# every path below is relative to $(srcdir).
MODULE_big = ttl
# Every .c file under src/, one folder per subsystem (src/README.md).
# Recursively expanded: $(srcdir) is set by PGXS, included below.
OBJS = $(patsubst $(srcdir)/%.c,%.o,$(sort $(wildcard $(srcdir)/src/*.c $(srcdir)/src/*/*.c)))
EXTENSION = ttl
DATA = ttl--1.0.sql ttl--1.0--1.1.sql ttl--1.1--1.2.sql ttl--1.2--1.3.sql ttl--1.3--1.4.sql ttl--1.4--1.5.sql ttl--1.5--1.6.sql ttl--1.6--1.7.sql ttl--1.7--1.8.sql ttl--1.8--1.9.sql
PGFILEDESC = "ttl - time-to-live for JSONB document tables"

REGRESS = rules validation trigger stamping view item_functions lifecycle privileges purge accessors live_view \
          purge_security stats rls_follow schema_changes enable_edges live_view_dropped upgrade_follow pool_views purge_index stamp_bytes live_filter_forms append_only citus_absent preview deadline upgrade_deadline restore_guard live_filter_cache upgrade_append definitions_gate quoting regclass_errors upgrade_quoting internal_privileges stats_privacy visit_bound rule10 upgrade_rule10 rule10_setting index_owner legal_hold upgrade_legal_hold archive upgrade_archive leaf_owner rule10_exact purge_failures trigger_args rule10_redact error_messages mark_purge_deletes purge_window retire purge_progress stats_capped retire_archive retire_round
# --no-locale --encoding=UTF8 as test/run-all runs them (for installcheck:
# the test database pg_regress creates on the running server).
REGRESS_OPTS = --inputdir=$(srcdir) --load-extension=ttl --no-locale --encoding=UTF8
ISOLATION_OPTS = --inputdir=$(srcdir)/test --load-extension=ttl --no-locale --encoding=UTF8
ISOLATION = purge_vs_update purge_vs_lock purge_concurrency purge_statement_path live_view_replan purge_lock_private purge_stale_default preview_snapshot purge_vs_deadline live_filter_policy stats_dropped rule10_race rule10_isolation legal_hold_race archive_ddl archive_busy owner_race rule10_policy_fresh legal_hold_horizon rule10_window retire_race retire_default_lock
# with shared_preload_libraries = 'ttl' (test/run-all's isolation-preload):
# rule 10 with the worker loaded (it needs no shared memory since 1.9)
ISOLATION_PRELOAD = rule10_floor rule10_gap_deadline rule10_gap_old rule10_policy_fresh rule10_window rule10_floor_old rule10_floor_raise rule10_floor_policy
REGRESS_PRELOAD = rule10_floor_rows legal_hold_floor rule10_due_set purge_failures_worker purge_progress_self

# installcheck makes its scratch databases itself (see below)
REGRESS_PREP = ttl-installcheck-databases

PG_CPPFLAGS = -I$(srcdir)/src -Wall -Werror -Wmissing-prototypes
PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies: rebuild every object when a header
# changes (document_read.h, for one, is compiled into its callers).
$(OBJS) $(OBJS:.o=.bc): $(wildcard $(srcdir)/src/*.h $(srcdir)/src/*/*.h)

# Out of tree, the objects' folders (src/base, ...) must exist in the build
# directory before the compiler writes into them.
ifneq ($(srcdir),.)
$(shell mkdir -p $(sort $(dir $(OBJS))))
endif

# installcheck: the tests that can't pass against a server that is already
# running (none today; see docs/testing.md) are left out by name.  On a
# server that preloads ttl the background worker would purge the tests'
# rows under them: the scratch databases are made here, with
# ttl.worker_enabled off (the worker leaves them alone; ttl.purge() and
# run_purge work as ever), and the preload-only tests are added.
INSTALLCHECK_SKIP =
# pool_views and visit_bound read ttl.worker_pool and ttl.databases as a
# server without the preload shows them (empty); TAP 013 and 040 test the
# pool of a preloaded server.  purge_failures_worker needs the worker that
# installcheck keeps out (test/run-all runs it on a preloaded temp instance).
INSTALLCHECK_PRELOADED_SKIP = pool_views visit_bound purge_failures_worker
REGRESS_ALL := $(REGRESS)
ISOLATION_ALL := $(ISOLATION)
comma := ,
ic_psql = $(bindir)/psql -X -q -v ON_ERROR_STOP=1
ic_preloaded = $(filter t,$(shell $(ic_psql) -At -d postgres -c "SELECT 'ttl' = ANY (string_to_array(replace(current_setting('shared_preload_libraries'), ' ', ''), ','))" 2>/dev/null))
installcheck: REGRESS = $(filter-out $(INSTALLCHECK_SKIP) $(if $(ic_preloaded),$(INSTALLCHECK_PRELOADED_SKIP)),$(REGRESS_ALL) $(if $(ic_preloaded),$(REGRESS_PRELOAD)))
installcheck: ISOLATION = $(filter-out $(INSTALLCHECK_SKIP),$(ISOLATION_ALL) $(if $(ic_preloaded),$(ISOLATION_PRELOAD)))
installcheck: REGRESS_OPTS += --use-existing
installcheck: ISOLATION_OPTS += --use-existing
.PHONY: ttl-installcheck-databases
ttl-installcheck-databases:
	@echo "installcheck: the server $(if $(ic_preloaded),preloads ttl: the preload-only tests run too$(comma) not $(INSTALLCHECK_PRELOADED_SKIP),does not preload ttl)"
	@for db in $(CONTRIB_TESTDB) $(ISOLATION_TESTDB); do \
	    $(ic_psql) -d postgres -c "DROP DATABASE IF EXISTS $$db" \
	        -c "CREATE DATABASE $$db TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'" \
	        -c "ALTER DATABASE $$db SET ttl.worker_enabled = off" || exit 1; \
	    for i in $$(seq 1 300); do \
	        n=$$($(ic_psql) -At -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl worker' AND datname = '$$db'") || exit 1; \
	        [ "$$n" = 0 ] && break; sleep 0.1; \
	    done; \
	    [ "$$n" = 0 ] || { echo "installcheck: a ttl worker is still in $$db" >&2; exit 1; }; \
	    $(ic_psql) -d $$db -c "CREATE EXTENSION ttl" || exit 1; \
	done

# make dist: the PGXN zip, ttl-1.8.0.zip for default_version '1.8'.
SEMVER = $(shell sed -n "s/^default_version *= *'\([0-9]*\.[0-9]*\)'.*/\1.0/p" $(srcdir)/ttl.control)
.PHONY: dist
dist:
	git -C $(srcdir) archive --format=zip --prefix=ttl-$(SEMVER)/ \
	    -o $(abspath ttl-$(SEMVER).zip) HEAD
