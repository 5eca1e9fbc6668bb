# colojoin -- PGXS build
#
# make && make install            build and install the extension
# make installcheck               pg_regress suites against a running coordinator
#                                 (test/run_tests.sh starts the cluster first)
# test/run_tests.sh               everything: build, install, cluster, pg_regress, TAP

MODULE_big = colojoin
OBJS = \
	src/colojoin.o \
	src/util/catalog_query.o \
	src/util/extension.o \
	src/util/fdw_writes.o \
	src/util/options.o \
	src/util/settings.o \
	src/util/shared_table.o \
	src/deparse/deparse.o \
	src/deparse/shippable.o \
	src/metadata/colocation.o \
	src/metadata/metadata.o \
	src/metadata/node_identity.o \
	src/remote/conn_budget.o \
	src/remote/conn_io.o \
	src/remote/conn_open.o \
	src/remote/connection.o \
	src/remote/copy_stream.o \
	src/remote/deadlock.o \
	src/remote/node_health.o \
	src/remote/recovery_worker.o \
	src/remote/remote_xact.o \
	src/remote/row_decode.o \
	src/remote/setup_cache.o \
	src/remote/twophase.o \
	src/operations/placement_health.o \
	src/operations/remote_stats.o \
	src/operations/replicas.o \
	src/operations/shard_create.o \
	src/operations/shard_drop.o \
	src/operations/shard_views.o \
	src/operations/size_cache.o \
	src/operations/activity.o \
	src/operations/progress.o \
	src/operations/shared_sizes.o \
	src/operations/column_stats.o \
	src/operations/remote_table_ddl.o \
	src/operations/class_move.o \
	src/operations/class_split.o \
	src/operations/split_online.o \
	src/operations/move_cleanup.o \
	src/operations/rebalance_plan.o \
	src/operations/rebalance_worker.o \
	src/plan/aggregates.o \
	src/plan/combine.o \
	src/plan/decision_log.o \
	src/plan/decision_stats.o \
	src/plan/dual_repartition.o \
	src/plan/group.o \
	src/plan/group_bound.o \
	src/plan/hints.o \
	src/plan/key_match.o \
	src/plan/lateral.o \
	src/plan/lateral_sql.o \
	src/plan/move_choice.o \
	src/plan/ordering.o \
	src/plan/plan_create.o \
	src/plan/planner.o \
	src/plan/pre_aggregate.o \
	src/plan/remote_sql.o \
	src/plan/move_sql.o \
	src/plan/repartition_key.o \
	src/plan/scalar_subquery.o \
	src/plan/subquery_narrowing.o \
	src/plan/qual_placement.o \
	src/plan/stage_move.o \
	src/plan/coordinator_rows.o \
	src/plan/upper.o \
	src/plan/windows.o \
	src/exec/executor.o \
	src/exec/explain.o \
	src/exec/failover.o \
	src/exec/local_source.o \
	src/exec/move_streams.o \
	src/exec/write_turns.o \
	src/write/conflict_arbiter.o \
	src/write/copy_from.o \
	src/write/insert_route.o \
	src/write/modify.o \
	src/write/modify_exec.o \
	src/write/read_after_write.o \
	src/write/row_scans.o \
	src/write/row_writes.o \
	src/write/truncate.o \
	src/write/write_guard.o

EXTENSION = colojoin
DATA = colojoin--1.0.sql colojoin--1.0--1.1.sql colojoin--1.1--1.2.sql colojoin--1.2--1.3.sql colojoin--1.3--1.4.sql
PGFILEDESC = "colojoin - colocated joins over postgres_fdw shards"

# The suites need the multi-node cluster of test/cluster and colojoin preloaded,
# so they run against it (installcheck), never against a temporary instance.
# test/schedule lists them, one name per line, in order; '#' starts a comment.
REGRESS = $(shell sed -e 's/\#.*//' test/schedule 2>/dev/null)
REGRESS_OPTS = --use-existing --dbname=colojoin_regress
EXTRA_CLEAN = results regression.diffs regression.out tmp_check log

SHLIB_LINK_INTERNAL = $(libpq)
PG_CPPFLAGS = -I$(libpq_srcdir) -Isrc
PG_CFLAGS = -Wall -Wmissing-prototypes -Werror

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# make test: the whole test run of README.md (build, install, cluster,
# pg_regress suites, TAP tests); needs root for the install step.
.PHONY: test
test:
	test/run_tests.sh

# PGXS tracks no header dependencies here: rebuild every object when a
# header changes, so that no object is left compiled against an old struct.
$(OBJS): $(wildcard src/*/*.h)

# Replace the installed library by a new file instead of writing over it:
# servers that have it loaded keep their mapping of the old file, where an
# in-place rewrite would crash them.
install-lib-shared: unlink-installed-library
.PHONY: unlink-installed-library
unlink-installed-library: installdirs-lib
	rm -f '$(DESTDIR)$(pkglibdir)/$(shlib)'
