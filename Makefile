# fpsketch: PGXS build.  Tests: make installcheck (pg_regress, isolation
# specs, and the standalone sketch tests) against a running server that has
# shared_preload_libraries = 'fpsketch'.

MODULE_big = fpsketch
OBJS = \
	$(WIN32RES) \
	fpsketch.o \
	fpsketch_am.o \
	am/gap.o \
	am/gap_levels.o \
	am/membership.o \
	am/point_lookup.o \
	am/predicate.o \
	am/reevaluate.o \
	am/rowlock.o \
	am/statement.o \
	am/track.o \
	am/versions.o \
	am/visibility.o \
	am/volatility.o \
	column_groups.o \
	relation_stats.o \
	cc/commit_ts.o \
	cc/keys.o \
	cc/prepared.o \
	cc/sto.o \
	cc/tictoc.o \
	cc/txn.o \
	sketch/fpsketch.o

EXTENSION = fpsketch
DATA = fpsketch--1.0.sql
PGFILEDESC = "fpsketch - serializable heap tables with FPSketch timestamps"

REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
ISOLATION = $(patsubst specs/%.spec,%,$(sort $(wildcard specs/*.spec)))
ISOLATION_OPTS = --load-extension=fpsketch
REGRESS_OPTS = --load-extension=fpsketch

PG_CPPFLAGS = -I$(srcdir)
SHLIB_LINK =

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

.PHONY: sketch-test
sketch-test:
	$(MAKE) -C sketch test test-broken

installcheck: sketch-test

# The pieces of installcheck on their own, for scripts/test.sh's accounting.
.PHONY: installcheck-regress-only installcheck-isolation-only
installcheck-regress-only:
	$(pg_regress_installcheck) $(REGRESS_OPTS) $(REGRESS)

installcheck-isolation-only:
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) $(ISOLATION)

# PGXS tracks no header dependencies (without --enable-depend): a changed
# struct in a header must rebuild every object, or backends smash stacks.
$(OBJS): $(wildcard $(srcdir)/am/*.h $(srcdir)/cc/*.h $(srcdir)/sketch/*.h $(srcdir)/*.h)
