# colojoin -- PGXS build
#
# make && make install            build and install the extension
# make installcheck               pg_regress suites against a running coordinator
#                                 (test/run_tests.sh starts the cluster first)
# test/run_tests.sh               everything: build, install, cluster, pg_regress, TAP

MODULE_big = colojoin
OBJS = \
	src/colojoin.o \
	src/options.o \
	src/catalog_query.o \
	src/metadata.o \
	src/colocation.o \
	src/shard_views.o \
	src/shard_create.o \
	src/shard_drop.o \
	src/remote_stats.o \
	src/replicas.o \
	src/connection.o \
	src/conn_budget.o \
	src/deadlock.o \
	src/move_streams.o \
	src/node_identity.o \
	src/node_health.o \
	src/deparse.o \
	src/planner.o \
	src/key_match.o \
	src/repartition_key.o \
	src/move_choice.o \
	src/dual_repartition.o \
	src/plan_create.o \
	src/remote_sql.o \
	src/executor.o \
	src/local_source.o \
	src/row_decode.o \
	src/explain.o \
	src/hints.o \
	src/aggregates.o \
	src/combine.o \
	src/ordering.o \
	src/windows.o \
	src/pre_aggregate.o \
	src/lateral.o \
	src/write_guard.o \
	src/twophase.o \
	src/recovery_worker.o \
	src/modify.o \
	src/modify_exec.o \
	src/insert_route.o \
	src/copy_from.o \
	src/read_after_write.o \
	src/placement_health.o \
	src/size_cache.o

EXTENSION = colojoin
DATA = colojoin--1.0.sql colojoin--1.0--1.1.sql colojoin--1.1--1.2.sql
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
$(OBJS): $(wildcard src/*.h)

# Replace the installed library by a new file instead of writing over it:
# servers that have it loaded keep their mapping of the old file, where an
# in-place rewrite would crash them.
install-lib-shared: unlink-installed-library
.PHONY: unlink-installed-library
unlink-installed-library: installdirs-lib
	rm -f '$(DESTDIR)$(pkglibdir)/$(shlib)'
