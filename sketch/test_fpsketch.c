/*-------------------------------------------------------------------------
 *
 * test_fpsketch.c
 *	  Standalone pthread test of the FPSketch core's invariants.
 *
 * Built with -DFPS_STANDALONE against the very fpsketch.c the server runs
 * (see fps_port.h), so the concurrent cases exercise the production code
 * paths under real parallelism.  For each variant it runs:
 *
 *	unit/<variant>				single-threaded API checks
 *	get_never_below_put/<v>		concurrent sketch PUT/GET
 *	never_decrease/<v>			concurrent INCREF/CAS/DECREF on a hot key set;
 *								catches a merge that happens after unlink
 *	pinned_stable/<v>			a pinned entry changes only by its pinner
 *	end_of_run/<v>				counters and structure after every run joins
 *	memory_bounds/<v>			everything stays in fps_shmem_size() bytes
 *
 * plus unit/word_packing once.  Each named case counts as one check in the
 * summary line; a case fails if any of its assertions failed.  Failures are
 * counted with atomics (workers never block on reporting) and the first few
 * messages of each case are printed with the key and the values involved.
 *
 * Options: -t threads (default 8), -s seconds per concurrent case
 * (default 2), -v focus_sketch|focus_sketch_clock|focus_counter|exact|all
 * (default all).  focus_sketch_clock is focus_sketch with FPS_EVICT_CLOCK:
 * the real sketch, unpinned entries kept until CLOCK needs their slot.
 *
 *-------------------------------------------------------------------------
 */
#include "fpsketch.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * The churn configuration of never_decrease and pinned_stable: 64 entries
 * make 16 partitions of 4 entries, and 64 hot keys put about 4 keys on each
 * partition, so CLOCK eviction (focus_counter, focus_sketch_clock) evicts
 * whenever a partition's live keys outnumber its entries (pinned_stable
 * keeps more keys pinned and evicts constantly; never_decrease's keys may
 * fit), exact refuses INCREFs for the keys that do not fit, and focus_sketch
 * merges at every last DECREF.
 * The 4x64 sketch makes cell collisions common but keeps a key's GET close
 * to its own value, so a value missing from the sketch shows as a GET below
 * the truth instead of being masked by a colliding key.
 */
#define HOT_KEYS			64
#define HOT_KEY_BASE		UINT64_C(0x100000)
#define CHURN_MAX_ENTRIES	64
#define CHURN_ROWS			4
#define CHURN_COLS			64

/*
 * get_never_below_put: 16 own keys per thread in a 4x256 sketch.  Few
 * enough keys per cell that GET is mostly tight (so a lost MAX shows), yet
 * enough sharing that concurrent MAXes into one cell race.
 */
#define OWN_KEYS			16
#define PUT_ROWS			4
#define PUT_COLS			256
#define NOISE_KEY_BASE		(UINT64_C(1) << 48)
#define NOISE_KEYS			100000

#define PRIVATE_KEY_BASE	(UINT64_C(1) << 56)

/* A concurrent case that has failed this often has made its point. */
#define STOP_AFTER_FAILURES 1000
#define MAX_MESSAGES		5
#define MESSAGE_LEN			320
#define MAX_THREADS			256

typedef unsigned long long ull;

/* ---- test cases and failure reporting ---- */

typedef struct TestCase
{
	char		name[64];
	volatile fps_u64 failures;	/* atomics only: workers report */
	volatile fps_u64 nmessages; /* message slots claimed, may exceed max */
	char		messages[MAX_MESSAGES][MESSAGE_LEN];
} TestCase;

static int	cases_passed;
static int	cases_failed;

static int	opt_threads = 8;
static double opt_seconds = 2.0;

/*
 * Counts the FPSketch API calls made by this thread (the "ops" figure):
 * thread-local so that counting does not add contention to what is tested.
 */
static __thread fps_u64 api_calls;

static TestCase *
case_begin(const char *fmt, const char *variant)
{
	TestCase   *tc = calloc(1, sizeof(TestCase));

	if (tc == NULL)
	{
		perror("calloc");
		exit(2);
	}
	snprintf(tc->name, sizeof(tc->name), fmt, variant);
	return tc;
}

static void
case_fail(TestCase *tc, int line, const char *fmt,...)
	__attribute__((format(printf, 3, 4)));

static void
case_fail(TestCase *tc, int line, const char *fmt,...)
{
	fps_u64		slot;

	fps_atomic_add(&tc->failures, 1);
	slot = fps_atomic_add(&tc->nmessages, 1) - 1;
	if (slot < MAX_MESSAGES)
	{
		va_list		ap;
		int			n;

		n = snprintf(tc->messages[slot], MESSAGE_LEN, "line %d: ", line);
		va_start(ap, fmt);
		vsnprintf(tc->messages[slot] + n, MESSAGE_LEN - n, fmt, ap);
		va_end(ap);
	}
}

#define CHECK(tc, cond, ...) \
	do { \
		if (!(cond)) \
			case_fail((tc), __LINE__, __VA_ARGS__); \
	} while (0)

static fps_u64
case_failures(TestCase *tc)
{
	return fps_atomic_load(&tc->failures);
}

/* Print the case's verdict, figures and first messages; then free it. */
static void
case_end(TestCase *tc, int threads, fps_u64 ops, double seconds,
		 const char *details)
{
	fps_u64		failures = case_failures(tc);
	fps_u64		i;

	printf("%s %-34s threads=%d ops=%" PRIu64 " duration=%.2fs%s%s\n",
		   failures == 0 ? "PASS" : "FAIL", tc->name, threads, ops, seconds,
		   details[0] ? "  " : "", details);
	if (failures > 0)
	{
		printf("     %" PRIu64 " failed assertion(s); first ones:\n", failures);
		for (i = 0; i < failures && i < MAX_MESSAGES; i++)
			printf("     - %s\n", tc->messages[i]);
		cases_failed++;
	}
	else
		cases_passed++;
	fflush(stdout);
	free(tc);
}

/* ---- small helpers ---- */

static double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* xorshift64*: cheap, per thread, good enough to pick keys and values */
static inline fps_u64
rng_next(fps_u64 *state)
{
	fps_u64		x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * UINT64_C(0x2545F4914F6CDD1D);
}

static inline fps_u64
max_u64(fps_u64 a, fps_u64 b)
{
	return a > b ? a : b;
}

typedef struct VariantInfo
{
	const char *name;
	FpsVariant	variant;
	FpsEviction eviction;
} VariantInfo;

static const VariantInfo variants[] = {
	{"focus_sketch", FPS_VARIANT_FOCUS_SKETCH, FPS_EVICT_ON_UNPIN},
	{"focus_sketch_clock", FPS_VARIANT_FOCUS_SKETCH, FPS_EVICT_CLOCK},
	{"focus_counter", FPS_VARIANT_FOCUS_COUNTER, FPS_EVICT_CLOCK},
	{"exact", FPS_VARIANT_EXACT, FPS_EVICT_ON_UNPIN},
};

#define NVARIANTS ((int) (sizeof(variants) / sizeof(variants[0])))

/*
 * An FPSketch in a malloc'd block of exactly fps_shmem_size() bytes, so that
 * AddressSanitizer flags any byte the core touches beyond its budget, and
 * every entry the core hands out is checked to lie inside the block.
 */
typedef struct TestSketch
{
	FpsConfig	config;
	char	   *mem;
	fps_u64		size;
	FPSketch   *fps;
	TestCase   *memory_case;	/* where out-of-block entries are reported */
} TestSketch;

static void
sketch_open(TestSketch *ts, const VariantInfo *v, fps_u32 max_entries,
			fps_u32 rows, fps_u32 cols, TestCase *memory_case)
{
	memset(ts, 0, sizeof(*ts));
	ts->config.variant = v->variant;
	ts->config.eviction = v->eviction;
	ts->config.max_entries = max_entries;
	ts->config.sketch_rows = rows;
	ts->config.sketch_cols = cols;
	ts->config.seed = UINT64_C(0x5EED0F5E7C4) + max_entries * 31 + rows * 7 + cols;
	ts->size = fps_shmem_size(&ts->config);
	ts->mem = malloc(ts->size);
	if (ts->mem == NULL)
	{
		perror("malloc");
		exit(2);
	}
	ts->memory_case = memory_case;
	ts->fps = fps_create(ts->mem, &ts->config);
	CHECK(memory_case,
		  (char *) ts->fps >= ts->mem && (char *) ts->fps < ts->mem + ts->size,
		  "fps_create returned %p outside its block [%p, %p)",
		  (void *) ts->fps, (void *) ts->mem, (void *) (ts->mem + ts->size));
	/* another process attaching to the block must find the same structure */
	CHECK(memory_case, fps_attach(ts->mem) == ts->fps,
		  "fps_attach(%p) = %p, fps_create returned %p",
		  (void *) ts->mem, (void *) fps_attach(ts->mem), (void *) ts->fps);
}

static void
sketch_close(TestSketch *ts)
{
	FpsStats	stats;

	fps_get_stats(ts->fps, &stats);
	CHECK(ts->memory_case, stats.sketch_bytes + stats.table_bytes <= ts->size,
		  "sketch_bytes %llu + table_bytes %llu exceed fps_shmem_size %llu",
		  (ull) stats.sketch_bytes, (ull) stats.table_bytes, (ull) ts->size);
	free(ts->mem);
	ts->mem = NULL;
	ts->fps = NULL;
}

/* fps_incref, plus the check that the entry lies inside the block */
static FpsEntry *
pin(TestSketch *ts, fps_u64 key)
{
	FpsEntry   *e = fps_incref(ts->fps, key);

	api_calls++;
	if (e != NULL)
		CHECK(ts->memory_case,
			  (char *) e >= ts->mem && (char *) (e + 1) <= ts->mem + ts->size,
			  "key %#llx: entry %p outside the block [%p, %p)",
			  (ull) key, (void *) e, (void *) ts->mem,
			  (void *) (ts->mem + ts->size));
	return e;
}

static void
unpin(TestSketch *ts, FpsEntry *e)
{
	api_calls++;
	fps_decref(ts->fps, e);
}

static void
put(TestSketch *ts, fps_u64 key, fps_u64 wts, fps_u64 rts)
{
	api_calls++;
	fps_sketch_put(ts->fps, key, wts, rts);
}

static void
get(TestSketch *ts, fps_u64 key, fps_u64 *wts, fps_u64 *rts)
{
	api_calls++;
	fps_sketch_get(ts->fps, key, wts, rts);
}

static fps_u64
load(FpsEntry *e)
{
	api_calls++;
	return fps_entry_load(e);
}

static bool
cas(FpsEntry *e, fps_u64 *expected, fps_u64 desired)
{
	api_calls++;
	return fps_entry_cas(e, expected, desired);
}

/*
 * Install a value with one CAS from the word we know; single-threaded
 * helpers only, where that CAS cannot lose.
 */
static void
install(TestCase *tc, FpsEntry *e, fps_u64 word)
{
	fps_u64		expected = load(e);

	CHECK(tc, cas(e, &expected, word),
		  "key %#llx: CAS of an entry nobody else uses failed", (ull) e->key);
}

/*
 * The end-of-run relations, for a quiescent sketch (no pins held by anyone):
 *
 *	- fps_incref() counts every call in stats.increfs, and a refused one in
 *	  stats.table_full too, without a matching DECREF; so increfs ==
 *	  decrefs + table_full, and each must equal what the callers counted;
 *	- every entry is created by a seed and removed by a merge (a CLOCK
 *	  eviction also merges), so seeds - merges == entries;
 *	- focus_sketch (eviction at unpin) merges at refcount 0: nothing stays
 *	  in the table and nothing is CLOCK-evicted; exact never removes; with
 *	  CLOCK eviction (focus_counter, focus_sketch_clock) every merge is an
 *	  eviction;
 *	- the table's structure and its occupancy counters agree;
 *	- fps_max_timestamp() bounds every timestamp the callers stored.
 */
static void
check_quiescent(TestCase *tc, TestSketch *ts, const char *when,
				fps_u64 increfs, fps_u64 refused, fps_u64 decrefs,
				fps_u64 expected_lock_leaks, fps_u64 max_installed)
{
	FpsStats	s;
	const char *why = fps_check_structure(ts->fps);
	fps_u64		max_ts = fps_max_timestamp(ts->fps);

	fps_get_stats(ts->fps, &s);
	CHECK(tc, max_ts >= max_installed,
		  "%s: fps_max_timestamp %llu below the largest timestamp stored, %llu",
		  when, (ull) max_ts, (ull) max_installed);
	CHECK(tc, why == NULL, "%s: fps_check_structure: %s", when, why);
	CHECK(tc, s.pinned == 0, "%s: stats.pinned = %llu, expected 0",
		  when, (ull) s.pinned);
	CHECK(tc, s.increfs == s.decrefs + s.table_full,
		  "%s: increfs %llu != decrefs %llu + table_full %llu",
		  when, (ull) s.increfs, (ull) s.decrefs, (ull) s.table_full);
	CHECK(tc, s.increfs == increfs && s.decrefs == decrefs &&
		  s.table_full == refused,
		  "%s: stats say increfs/decrefs/table_full = %llu/%llu/%llu, "
		  "callers counted %llu/%llu/%llu",
		  when, (ull) s.increfs, (ull) s.decrefs, (ull) s.table_full,
		  (ull) increfs, (ull) decrefs, (ull) refused);
	CHECK(tc, s.seeds - s.merges == s.entries,
		  "%s: seeds %llu - merges %llu != entries %llu",
		  when, (ull) s.seeds, (ull) s.merges, (ull) s.entries);
	CHECK(tc, s.entries <= s.max_entries && s.entries_hwm <= s.max_entries,
		  "%s: entries %llu (hwm %llu) above max_entries %llu",
		  when, (ull) s.entries, (ull) s.entries_hwm, (ull) s.max_entries);
	CHECK(tc, s.lock_leaks == expected_lock_leaks,
		  "%s: lock_leaks = %llu, expected %llu",
		  when, (ull) s.lock_leaks, (ull) expected_lock_leaks);
	if (fps_evicts_by_clock(s.variant, s.eviction))
		CHECK(tc, s.merges == s.evictions,
			  "%s: CLOCK eviction: merges %llu != evictions %llu",
			  when, (ull) s.merges, (ull) s.evictions);
	else if (fps_evicts_on_unpin(s.variant, s.eviction))
	{
			CHECK(tc, s.entries == 0,
				  "%s: focus_sketch keeps %llu unpinned entries",
				  when, (ull) s.entries);
			CHECK(tc, s.evictions == 0,
				  "%s: focus_sketch CLOCK-evicted %llu entries",
				  when, (ull) s.evictions);
	}
	else
		CHECK(tc, s.merges == 0 && s.evictions == 0,
			  "%s: exact merged %llu / evicted %llu entries",
			  when, (ull) s.merges, (ull) s.evictions);
}

/* ---- unit/word_packing ---- */

static void
check_word(TestCase *tc, bool locked, fps_u64 wts, fps_u64 rts)
{
	fps_u64		word = fps_word_make(locked, wts, rts);
	fps_u64		want_rts = rts < wts ? wts : rts;
	fps_u64		want_wts;

	if (want_rts > FPS_MAX_TS)
		want_rts = FPS_MAX_TS;
	/* the delta-overflow rule: wts moves up to rts - FPS_MAX_DELTA */
	want_wts = wts;
	if (want_wts > want_rts || want_rts - want_wts > FPS_MAX_DELTA)
		want_wts = want_rts - FPS_MAX_DELTA;

	CHECK(tc, fps_word_locked(word) == locked &&
		  fps_word_wts(word) == want_wts && fps_word_rts(word) == want_rts,
		  "make(%d, %llu, %llu) = %#llx unpacks to (%d, %llu, %llu), "
		  "expected (%d, %llu, %llu)",
		  locked, (ull) wts, (ull) rts, (ull) word,
		  fps_word_locked(word), (ull) fps_word_wts(word),
		  (ull) fps_word_rts(word), locked, (ull) want_wts, (ull) want_rts);
	CHECK(tc, fps_word_wts(word) <= fps_word_rts(word),
		  "make(%d, %llu, %llu): wts %llu > rts %llu",
		  locked, (ull) wts, (ull) rts,
		  (ull) fps_word_wts(word), (ull) fps_word_rts(word));
	/* the lock bit is independent of the timestamps */
	CHECK(tc, fps_word_make(!locked, wts, rts) == (word ^ FPS_LOCK_BIT),
		  "make(%d, %llu, %llu): lock bit changes the timestamps",
		  locked, (ull) wts, (ull) rts);
	/* a packed word re-packs to itself */
	CHECK(tc, fps_word_make(locked, fps_word_wts(word), fps_word_rts(word)) == word,
		  "make(%d, %llu, %llu) = %#llx does not round-trip",
		  locked, (ull) wts, (ull) rts, (ull) word);
}

static void
test_word_packing(void)
{
	TestCase   *tc = case_begin("unit/word_packing%s", "");
	double		start = now_seconds();
	fps_u64		rng = UINT64_C(0x9E3779B97F4A7C15);
	fps_u64		n = 0;
	fps_u64		word;
	int			i;

	/* plain values */
	word = fps_word_make(false, 5, 10);
	CHECK(tc, !fps_word_locked(word) && fps_word_wts(word) == 5 &&
		  fps_word_rts(word) == 10, "make(false, 5, 10) = %#llx", (ull) word);
	word = fps_word_make(true, 5, 10);
	CHECK(tc, fps_word_locked(word) && fps_word_wts(word) == 5 &&
		  fps_word_rts(word) == 10, "make(true, 5, 10) = %#llx", (ull) word);
	CHECK(tc, fps_word_make(false, 0, 0) == 0, "make(false, 0, 0) != 0");

	/* never wts > rts: rts is raised to wts */
	word = fps_word_make(false, 10, 5);
	CHECK(tc, fps_word_wts(word) == 10 && fps_word_rts(word) == 10,
		  "make(false, 10, 5) = (%llu, %llu), expected (10, 10)",
		  (ull) fps_word_wts(word), (ull) fps_word_rts(word));

	/* the largest delta fits; one more moves wts up */
	word = fps_word_make(false, 100, 100 + FPS_MAX_DELTA);
	CHECK(tc, fps_word_wts(word) == 100 &&
		  fps_word_rts(word) == 100 + FPS_MAX_DELTA,
		  "max delta: (%llu, %llu)",
		  (ull) fps_word_wts(word), (ull) fps_word_rts(word));
	word = fps_word_make(false, 100, 101 + FPS_MAX_DELTA);
	CHECK(tc, fps_word_wts(word) == 101 &&
		  fps_word_rts(word) == 101 + FPS_MAX_DELTA,
		  "delta overflow: (%llu, %llu), expected wts = rts - FPS_MAX_DELTA = 101",
		  (ull) fps_word_wts(word), (ull) fps_word_rts(word));

	/* the 48-bit ceiling, including wts beyond it */
	word = fps_word_make(false, 0, FPS_MAX_TS);
	CHECK(tc, fps_word_rts(word) == FPS_MAX_TS &&
		  fps_word_wts(word) == FPS_MAX_TS - FPS_MAX_DELTA,
		  "make(false, 0, FPS_MAX_TS) = (%llu, %llu)",
		  (ull) fps_word_wts(word), (ull) fps_word_rts(word));
	word = fps_word_make(true, FPS_MAX_TS + 5, FPS_MAX_TS + 9);
	CHECK(tc, fps_word_locked(word) && fps_word_rts(word) == FPS_MAX_TS &&
		  fps_word_wts(word) <= fps_word_rts(word),
		  "make beyond FPS_MAX_TS = %#llx", (ull) word);

	/* edges around the delta and ceiling, then random values */
	for (i = 0; i < 64; i++)
	{
		check_word(tc, i & 1, 1000, 1000 + FPS_MAX_DELTA - 32 + i);
		check_word(tc, i & 1, FPS_MAX_TS - i, FPS_MAX_TS - 32 + i);
		check_word(tc, i & 1, FPS_MAX_TS - FPS_MAX_DELTA - 32 + i, FPS_MAX_TS);
		n += 3;
	}
	for (i = 0; i < 1000000; i++)
	{
		fps_u64		r = rng_next(&rng);
		fps_u64		wts = rng_next(&rng) & FPS_MAX_TS;
		fps_u64		rts;

		/* mostly small deltas, some huge, some negative */
		switch (r % 4)
		{
			case 0:
				rts = wts + (r >> 8) % (FPS_MAX_DELTA + 2);
				break;
			case 1:
				rts = wts + (r >> 8) % (4 * FPS_MAX_DELTA);
				break;
			case 2:
				rts = (r >> 8) & FPS_MAX_TS;
				break;
			default:
				rts = wts > 100 ? wts - (r >> 8) % 100 : wts;
				break;
		}
		if (rts > FPS_MAX_TS)
			rts = FPS_MAX_TS;
		check_word(tc, (r >> 60) & 1, wts, rts);
		n++;
		if (case_failures(tc) > 100)
			break;
	}
	case_end(tc, 1, n, now_seconds() - start, "");
}

/* ---- unit/<variant> ---- */

/* Counts what the single-threaded unit checks did, for check_quiescent. */
typedef struct UnitCounts
{
	fps_u64		increfs;
	fps_u64		refused;
	fps_u64		decrefs;
} UnitCounts;

static FpsEntry *
unit_pin(TestSketch *ts, UnitCounts *c, fps_u64 key)
{
	FpsEntry   *e = pin(ts, key);

	c->increfs++;
	if (e == NULL)
		c->refused++;
	return e;
}

static void
unit_unpin(TestSketch *ts, UnitCounts *c, FpsEntry *e)
{
	unpin(ts, e);
	c->decrefs++;
}

static FpsStats
stats_of(TestSketch *ts)
{
	FpsStats	s;

	fps_get_stats(ts->fps, &s);
	return s;
}

/* GET of untouched keys on a fresh sketch; then GET >= every PUT. */
static void
unit_sketch(TestCase *tc, const VariantInfo *v, TestCase *memory_case)
{
	TestSketch	ts;
	fps_u64		rng = 12345;
	fps_u64		max_wts[1000] = {0};
	fps_u64		max_rts[1000] = {0};
	fps_u64		key,
				wts,
				rts;
	int			i;

	sketch_open(&ts, v, 64, 4, 64, memory_case);
	for (key = 0; key < 1000; key++)
	{
		get(&ts, key, &wts, &rts);
		CHECK(tc, wts == 0 && rts == 0,
			  "fresh sketch: GET(%llu) = (%llu, %llu), expected (0, 0)",
			  (ull) key, (ull) wts, (ull) rts);
	}
	for (i = 0; i < 20000; i++)
	{
		fps_u64		r = rng_next(&rng);

		key = r % 1000;
		wts = (r >> 10) % 1000000;
		rts = wts + (r >> 40) % 100000;
		put(&ts, key, wts, rts);
		max_wts[key] = max_u64(max_wts[key], wts);
		max_rts[key] = max_u64(max_rts[key], rts);
	}
	for (key = 0; key < 1000; key++)
	{
		get(&ts, key, &wts, &rts);
		CHECK(tc, wts >= max_wts[key] && rts >= max_rts[key] && wts <= rts,
			  "GET(%llu) = (%llu, %llu) below the largest PUT (%llu, %llu)",
			  (ull) key, (ull) wts, (ull) rts,
			  (ull) max_wts[key], (ull) max_rts[key]);
	}
	sketch_close(&ts);
}

/*
 * INCREF of a new key seeds from the sketch, INCREF/DECREF of one key share
 * one entry, CAS semantics, and what the last DECREF does per variant.
 */
static void
unit_entry_lifecycle(TestCase *tc, const VariantInfo *v, TestCase *memory_case)
{
	TestSketch	ts;
	UnitCounts	c = {0};
	const fps_u64 key = 4242;
	fps_u64		gwts,
				grts,
				word,
				expected;
	FpsEntry   *e,
			   *e2;
	FpsStats	s;

	sketch_open(&ts, v, 64, 4, 64, memory_case);
	put(&ts, key, 1000, 1500);
	get(&ts, key, &gwts, &grts);
	e = unit_pin(&ts, &c, key);
	CHECK(tc, e != NULL, "INCREF(%llu) on an empty table refused", (ull) key);
	if (e == NULL)
	{
		sketch_close(&ts);
		return;
	}
	word = load(e);
	CHECK(tc, word == fps_word_make(false, gwts, grts) &&
		  fps_word_wts(word) >= 1000 && fps_word_rts(word) >= 1500,
		  "key %llu: seeded word (%llu, %llu), sketch GET (%llu, %llu), PUT (1000, 1500)",
		  (ull) key, (ull) fps_word_wts(word), (ull) fps_word_rts(word),
		  (ull) gwts, (ull) grts);
	CHECK(tc, e->key == key && e->refcount == 1, "key %llu: entry key %llu refcount %u",
		  (ull) key, (ull) e->key, e->refcount);
	s = stats_of(&ts);
	CHECK(tc, s.seeds == 1 && s.entries == 1 && s.pinned == 1,
		  "after first INCREF: seeds %llu entries %llu pinned %llu, expected 1/1/1",
		  (ull) s.seeds, (ull) s.entries, (ull) s.pinned);

	/* a second pin of the same key shares the entry and does not reseed */
	e2 = unit_pin(&ts, &c, key);
	CHECK(tc, e2 == e, "key %llu: second INCREF returned %p, first %p",
		  (ull) key, (void *) e2, (void *) e);
	s = stats_of(&ts);
	CHECK(tc, s.seeds == 1 && s.pinned == 1 && e->refcount == 2,
		  "after second INCREF: seeds %llu pinned %llu refcount %u",
		  (ull) s.seeds, (ull) s.pinned, e->refcount);
	if (e2 != NULL)
		unit_unpin(&ts, &c, e2);
	CHECK(tc, load(e) == word && e->refcount == 1,
		  "key %llu: entry changed by a non-final DECREF", (ull) key);

	/* CAS installs from the right expected value, refreshes a stale one */
	expected = word;
	CHECK(tc, cas(e, &expected, fps_word_make(false, 2000, 2500)),
		  "key %llu: CAS from the current word failed", (ull) key);
	expected = word;
	CHECK(tc, !cas(e, &expected, fps_word_make(false, 1, 1)) &&
		  expected == fps_word_make(false, 2000, 2500),
		  "key %llu: CAS from a stale word succeeded or did not refresh it",
		  (ull) key);
	unit_unpin(&ts, &c, e);

	s = stats_of(&ts);
	if (fps_evicts_on_unpin(v->variant, v->eviction))
	{
		CHECK(tc, s.entries == 0 && s.merges == 1 && s.pinned == 0,
			  "focus_sketch after last DECREF: entries %llu merges %llu pinned %llu, "
			  "expected 0/1/0",
			  (ull) s.entries, (ull) s.merges, (ull) s.pinned);
		get(&ts, key, &gwts, &grts);
		CHECK(tc, gwts >= 2000 && grts >= 2500,
			  "key %llu: merged (2000, 2500) but sketch GET is (%llu, %llu)",
			  (ull) key, (ull) gwts, (ull) grts);
	}
	else
	{
		/* exact and CLOCK eviction keep the unpinned entry, exactly */
		CHECK(tc, s.entries == 1 && s.merges == 0 && s.pinned == 0,
			  "%s after last DECREF: entries %llu merges %llu pinned %llu, "
			  "expected 1/0/0",
			  v->name, (ull) s.entries, (ull) s.merges, (ull) s.pinned);
		e2 = unit_pin(&ts, &c, key);
		CHECK(tc, e2 == e && e2 != NULL &&
			  load(e2) == fps_word_make(false, 2000, 2500),
			  "%s: re-INCREF of a kept key returned %p (was %p) word %#llx",
			  v->name, (void *) e2, (void *) e,
			  (ull) (e2 ? load(e2) : 0));
		if (e2 != NULL)
			unit_unpin(&ts, &c, e2);
	}
	check_quiescent(tc, &ts, "entry lifecycle", c.increfs, c.refused, c.decrefs,
					0, 2500);
	sketch_close(&ts);
}

/*
 * A table of 4 entries is one partition (fpsketch.c gives every partition at
 * least 4), so we know exactly when it is full.
 */
static void
unit_table_full(TestCase *tc, const VariantInfo *v, TestCase *memory_case)
{
	TestSketch	ts;
	UnitCounts	c = {0};
	FpsEntry   *e[6] = {0};
	fps_u64		words[6] = {0};
	FpsEntry   *f;
	FpsStats	s;
	int			i;

	sketch_open(&ts, v, 4, 4, 64, memory_case);
	for (i = 0; i < 4; i++)
	{
		e[i] = unit_pin(&ts, &c, 100 + i);
		CHECK(tc, e[i] != NULL, "INCREF %d of 4 refused", i + 1);
		if (e[i] == NULL)
		{
			sketch_close(&ts);
			return;
		}
		words[i] = fps_word_make(false, 100 + i, 110 + i);
		install(tc, e[i], words[i]);
	}

	if (fps_evicts_by_clock(v->variant, v->eviction))
	{
		/*
		 * Keys 100..102 stay pinned, 103 is released with (5000, 5000): the
		 * only evictable entry.  CLOCK clears its reference bit on the
		 * first sweep and evicts it on the second.
		 */
		words[3] = fps_word_make(false, 5000, 5000);
		install(tc, e[3], words[3]);
		unit_unpin(&ts, &c, e[3]);
		f = unit_pin(&ts, &c, 104);
		s = stats_of(&ts);
		CHECK(tc, f == e[3] && s.evictions == 1 && s.merges == 1,
			  "full table, one unpinned entry %p: INCREF(104) got %p, "
			  "evictions %llu merges %llu",
			  (void *) e[3], (void *) f, (ull) s.evictions, (ull) s.merges);
		if (f != NULL)
		{
			fps_u64		gwts,
						grts;

			/* the evicted (5000, 5000) reached the sketch before the slot was reused */
			get(&ts, 103, &gwts, &grts);
			CHECK(tc, gwts >= 5000 && grts >= 5000,
				  "key 103 evicted with (5000, 5000), sketch GET (%llu, %llu)",
				  (ull) gwts, (ull) grts);
			/* a 1x1 sketch shares its one cell with key 104 */
			if (v->variant == FPS_VARIANT_FOCUS_COUNTER)
				CHECK(tc, fps_word_wts(load(f)) >= 5000 && fps_word_rts(load(f)) >= 5000,
					  "key 104 seeded (%llu, %llu) after evicting (5000, 5000)",
					  (ull) fps_word_wts(load(f)), (ull) fps_word_rts(load(f)));
			e[4] = f;
			words[4] = load(f);
		}
		for (i = 0; i < 3; i++)
			CHECK(tc, e[i]->key == (fps_u64) (100 + i) && load(e[i]) == words[i],
				  "pinned key %d changed by an eviction: key %llu word %#llx",
				  100 + i, (ull) e[i]->key, (ull) load(e[i]));

		/* now every entry is pinned: nothing may be evicted */
		f = unit_pin(&ts, &c, 105);
		s = stats_of(&ts);
		CHECK(tc, f == NULL && s.table_full == 1 && s.evictions == 1,
			  "all pinned: INCREF(105) got %p, table_full %llu evictions %llu",
			  (void *) f, (ull) s.table_full, (ull) s.evictions);
		if (f != NULL)
			unit_unpin(&ts, &c, f);
		for (i = 0; i < 5; i++)
			if (i != 3 && e[i] != NULL)
				CHECK(tc, load(e[i]) == words[i],
					  "pinned entry %d changed by a refused INCREF", i);

		/* releasing key 100 makes exactly its entry the victim */
		unit_unpin(&ts, &c, e[0]);
		f = unit_pin(&ts, &c, 105);
		s = stats_of(&ts);
		CHECK(tc, f == e[0] && s.evictions == 2,
			  "after releasing key 100: INCREF(105) got %p, expected %p; "
			  "evictions %llu",
			  (void *) f, (void *) e[0], (ull) s.evictions);
		CHECK(tc, e[1]->key == 101 && e[2]->key == 102 && e[4] && e[4]->key == 104,
			  "a pinned entry was evicted");
		if (f != NULL)
			unit_unpin(&ts, &c, f);
		unit_unpin(&ts, &c, e[1]);
		unit_unpin(&ts, &c, e[2]);
		if (e[4] != NULL)
			unit_unpin(&ts, &c, e[4]);
	}
	else if (fps_evicts_on_unpin(v->variant, v->eviction))
	{
		f = unit_pin(&ts, &c, 104);
		s = stats_of(&ts);
		CHECK(tc, f == NULL && s.table_full == 1,
			  "4 of 4 pinned: INCREF(104) got %p, table_full %llu",
			  (void *) f, (ull) s.table_full);
		if (f != NULL)
			unit_unpin(&ts, &c, f);
		/* a merge frees the entry */
		unit_unpin(&ts, &c, e[3]);
		f = unit_pin(&ts, &c, 104);
		CHECK(tc, f == e[3], "after a merge: INCREF(104) got %p, expected %p",
			  (void *) f, (void *) e[3]);
		if (f != NULL)
			unit_unpin(&ts, &c, f);
		for (i = 0; i < 3; i++)
			unit_unpin(&ts, &c, e[i]);
	}
	else
	{
		/* exact never evicts, not even unpinned entries */
		for (i = 0; i < 4; i++)
			unit_unpin(&ts, &c, e[i]);
		f = unit_pin(&ts, &c, 104);
		s = stats_of(&ts);
		CHECK(tc, f == NULL && s.table_full == 1 && s.entries == 4,
			  "4 of 4 used: INCREF(104) got %p, table_full %llu entries %llu",
			  (void *) f, (ull) s.table_full, (ull) s.entries);
		if (f != NULL)
			unit_unpin(&ts, &c, f);
		for (i = 0; i < 4; i++)
		{
			f = unit_pin(&ts, &c, 100 + i);
			CHECK(tc, f == e[i] && f != NULL && load(f) == words[i],
				  "exact: re-INCREF(%d) got %p (was %p)",
				  100 + i, (void *) f, (void *) e[i]);
			if (f != NULL)
				unit_unpin(&ts, &c, f);
		}
	}
	check_quiescent(tc, &ts, "table full", c.increfs, c.refused, c.decrefs,
					0, fps_evicts_by_clock(v->variant, v->eviction) ? 5000 : 113);
	sketch_close(&ts);
}

/*
 * fps_raise_floor: new and re-pinned unpinned keys get wts >= floor, while
 * a pinned entry is left alone (pinned => exact).
 */
static void
unit_floor(TestCase *tc, const VariantInfo *v, TestCase *memory_case)
{
	TestSketch	ts;
	UnitCounts	c = {0};
	const fps_u64 floor_ts = 10000;
	FpsEntry   *x,
			   *y,
			   *z;
	fps_u64		yword,
				word;

	sketch_open(&ts, v, 64, 4, 64, memory_case);
	x = unit_pin(&ts, &c, 1);
	y = unit_pin(&ts, &c, 2);
	if (x == NULL || y == NULL)
	{
		CHECK(tc, false, "INCREF refused on an empty table");
		sketch_close(&ts);
		return;
	}
	install(tc, x, fps_word_make(false, 100, 200));
	yword = fps_word_make(false, 50, 60);
	install(tc, y, yword);
	unit_unpin(&ts, &c, x);

	fps_raise_floor(ts.fps, floor_ts);
	fps_raise_floor(ts.fps, floor_ts / 2);
	CHECK(tc, fps_floor(ts.fps) == floor_ts && stats_of(&ts).floor_ts == floor_ts,
		  "floor %llu after raising to %llu then %llu",
		  (ull) fps_floor(ts.fps), (ull) floor_ts, (ull) floor_ts / 2);
	CHECK(tc, load(y) == yword, "pinned key 2 changed by fps_raise_floor: %#llx",
		  (ull) load(y));

	z = unit_pin(&ts, &c, 3);
	word = z ? load(z) : 0;
	CHECK(tc, z != NULL && fps_word_wts(word) >= floor_ts &&
		  fps_word_wts(word) <= fps_word_rts(word),
		  "new key 3 seeded (%llu, %llu) under floor %llu",
		  (ull) fps_word_wts(word), (ull) fps_word_rts(word), (ull) floor_ts);
	x = unit_pin(&ts, &c, 1);
	word = x ? load(x) : 0;
	CHECK(tc, x != NULL && fps_word_wts(word) >= floor_ts &&
		  fps_word_rts(word) >= 200,
		  "re-pinned key 1 (was (100, 200)) has (%llu, %llu) under floor %llu",
		  (ull) fps_word_wts(word), (ull) fps_word_rts(word), (ull) floor_ts);
	if (x != NULL)
		unit_unpin(&ts, &c, x);
	if (z != NULL)
		unit_unpin(&ts, &c, z);
	unit_unpin(&ts, &c, y);
	check_quiescent(tc, &ts, "floor", c.increfs, c.refused, c.decrefs,
					0, floor_ts);
	sketch_close(&ts);
}

/*
 * fps_raise_class_floor: only the keys of that class (the top bits) are
 * raised, new or re-pinned; the global floor still covers every class, and
 * fps_max_timestamp sees the class floor.
 */
static void
unit_class_floor(TestCase *tc, const VariantInfo *v, TestCase *memory_case)
{
	TestSketch	ts;
	UnitCounts	c = {0};
	const fps_u64 class_floor = 20000;
	const fps_u64 global_floor = 300;
	const fps_u32 raised = 7;
	const fps_u64 in_raised = fps_key_in_class(UINT64_C(0x1234567), raised);
	const fps_u64 in_raised_new = fps_key_in_class(UINT64_C(0x7654321), raised);
	const fps_u64 in_other = fps_key_in_class(UINT64_C(0x1234567), raised + 1);
	const fps_u64 in_other_new = fps_key_in_class(UINT64_C(0x7654321), raised + 1);
	FpsEntry   *e;
	fps_u64		word;

	sketch_open(&ts, v, 64, 4, 64, memory_case);
	CHECK(tc, fps_key_class(in_raised) == raised && fps_key_class(in_other) == raised + 1,
		  "key classes %u and %u", fps_key_class(in_raised), fps_key_class(in_other));
	for (int i = 0; i < 2; i++)
	{
		e = unit_pin(&ts, &c, i == 0 ? in_raised : in_other);
		if (e == NULL)
		{
			CHECK(tc, false, "INCREF refused on an empty table");
			sketch_close(&ts);
			return;
		}
		install(tc, e, fps_word_make(false, 100, 200));
		unit_unpin(&ts, &c, e);
	}

	fps_raise_class_floor(ts.fps, raised, class_floor);
	fps_raise_floor(ts.fps, global_floor);
	CHECK(tc, fps_key_floor(ts.fps, in_raised) == class_floor &&
		  fps_key_floor(ts.fps, in_other) == global_floor &&
		  fps_max_floor(ts.fps) == class_floor && fps_floor(ts.fps) == global_floor,
		  "floors: class %u %llu, class %u %llu, max %llu, global %llu",
		  raised, (ull) fps_key_floor(ts.fps, in_raised), raised + 1,
		  (ull) fps_key_floor(ts.fps, in_other), (ull) fps_max_floor(ts.fps),
		  (ull) fps_floor(ts.fps));
	CHECK(tc, fps_max_timestamp(ts.fps) >= class_floor,
		  "max timestamp %llu below the class floor %llu",
		  (ull) fps_max_timestamp(ts.fps), (ull) class_floor);

	for (int i = 0; i < 4; i++)
	{
		fps_u64		key = i == 0 ? in_raised : i == 1 ? in_raised_new :
			i == 2 ? in_other : in_other_new;
		bool		in_class = i < 2;

		e = unit_pin(&ts, &c, key);
		word = e ? load(e) : 0;
		if (in_class)
			CHECK(tc, e != NULL && fps_word_wts(word) >= class_floor &&
				  fps_entry_written_wts(e, word) >= class_floor,
				  "key %d of the raised class has (%llu, %llu) under its floor %llu",
				  i, (ull) fps_word_wts(word), (ull) fps_word_rts(word), (ull) class_floor);
		else
			CHECK(tc, e != NULL && fps_word_wts(word) >= global_floor &&
				  fps_word_wts(word) < class_floor,
				  "key %d of another class has (%llu, %llu): raised by class %u's floor",
				  i, (ull) fps_word_wts(word), (ull) fps_word_rts(word), raised);
		if (e != NULL)
			unit_unpin(&ts, &c, e);
	}
	check_quiescent(tc, &ts, "class floor", c.increfs, c.refused, c.decrefs,
					0, class_floor);
	sketch_close(&ts);
}

/*
 * The install record: a read of a version knows whether the entry was
 * overwritten since (fps_entry_overwritten), and whether the install that
 * replaced it came after a given timestamp; a second install, or a fresh
 * entry, forgets it.  An rts extension past FPS_MAX_DELTA moves the word's
 * wts with no install: that is neither an overwrite nor a forgotten version
 * (a row every transaction reads and none writes would otherwise fail every
 * reader validating across such an extension).
 */
static void
unit_install_record(TestCase *tc, const VariantInfo *v, TestCase *memory_case)
{
	TestSketch	ts;
	UnitCounts	c = {0};
	FpsEntry   *e;
	fps_u64		first,
				observed,
				extended,
				later;

	sketch_open(&ts, v, 64, 4, 64, memory_case);
	e = unit_pin(&ts, &c, 42);
	if (e == NULL)
	{
		CHECK(tc, false, "INCREF refused on an empty table");
		sketch_close(&ts);
		return;
	}
	first = fps_word_wts(load(e));
	CHECK(tc, !fps_entry_replaced_after(e, first, first),
		  "a fresh entry claims its version %llu was replaced", (ull) first);

	install(tc, e, fps_word_make(true, first, first));
	fps_entry_install(e, first + 10, first + 10);
	observed = load(e);
	CHECK(tc, !fps_word_locked(observed) && fps_word_wts(observed) == first + 10,
		  "after fps_entry_install: word %#llx", (ull) observed);
	CHECK(tc, fps_entry_overwritten(e, fps_word_make(false, first, first), observed),
		  "the seeded version %llu not overwritten by an install at %llu",
		  (ull) first, (ull) first + 10);

	/* readers extend rts far past the version's wts: the word's wts moves */
	extended = fps_word_make(false, first + 10, first + 10 + FPS_MAX_DELTA + 5);
	install(tc, e, extended);
	CHECK(tc, fps_word_wts(load(e)) == first + 15,
		  "rts extended %llu past wts %llu left wts at %llu",
		  (ull) FPS_MAX_DELTA + 5, (ull) first + 10, (ull) fps_word_wts(load(e)));
	CHECK(tc, !fps_entry_overwritten(e, observed, load(e)),
		  "version %llu seen overwritten after an rts extension that moved wts to %llu",
		  (ull) first + 10, (ull) fps_word_wts(load(e)));

	later = first + 10 + FPS_MAX_DELTA + 100;
	install(tc, e, fps_word_make(true, fps_word_wts(extended), fps_word_rts(extended)));
	fps_entry_install(e, later, later);
	CHECK(tc, fps_entry_overwritten(e, observed, load(e)),
		  "version %llu not seen overwritten by an install at %llu",
		  (ull) first + 10, (ull) later);
	CHECK(tc, fps_entry_replaced_after(e, first + 10, later - 1),
		  "version %llu replaced at %llu (after an extension moved wts): "
		  "not seen as current at %llu", (ull) first + 10, (ull) later, (ull) later - 1);
	CHECK(tc, !fps_entry_replaced_after(e, first + 10, later),
		  "version %llu replaced at %llu: seen as current at %llu",
		  (ull) first + 10, (ull) later, (ull) later);
	CHECK(tc, !fps_entry_replaced_after(e, first, first + 1),
		  "version %llu, two installs ago, seen as current", (ull) first);

	install(tc, e, fps_word_make(true, later, later));
	fps_entry_install(e, later + 10, later + 10);
	CHECK(tc, !fps_entry_replaced_after(e, first + 10, first + 11),
		  "version %llu still seen as current after a second install",
		  (ull) first + 10);
	unit_unpin(&ts, &c, e);
	check_quiescent(tc, &ts, "install record", c.increfs, c.refused, c.decrefs,
					0, later + 10);
	sketch_close(&ts);
}

/*
 * readers_rts survives eviction on its own cells: a key reseeded after
 * installs raised its rts far above its readers keeps the readers' value,
 * never less (a later writer must still follow every reader), and not the
 * rts (or every writer of an evicted predicate key would follow the last).
 */
static void
unit_readers_rts(TestCase *tc, const VariantInfo *v, TestCase *memory_case)
{
	TestSketch	ts;
	UnitCounts	c = {0};
	FpsEntry   *e;
	fps_u64		readers,
				word;

	sketch_open(&ts, v, 64, 4, 64, memory_case);
	CHECK(tc, stats_of(&ts).readers_cols == (v->variant == FPS_VARIANT_FOCUS_COUNTER ? 1 : 8),
		  "%llu readers columns for 64 sketch columns",
		  (ull) stats_of(&ts).readers_cols);
	e = unit_pin(&ts, &c, 7);
	if (e == NULL)
	{
		CHECK(tc, false, "INCREF refused on an empty table");
		sketch_close(&ts);
		return;
	}
	CHECK(tc, fps_entry_readers_rts_load(e) == 0,
		  "fresh readers_rts %llu on an empty sketch", (ull) fps_entry_readers_rts_load(e));
	fps_atomic_max(&e->readers_rts, 500);
	install(tc, e, fps_word_make(true, fps_word_wts(load(e)), fps_word_rts(load(e))));
	fps_entry_install(e, 9000, 9000);
	unit_unpin(&ts, &c, e);

	e = unit_pin(&ts, &c, 7);
	if (e == NULL)
	{
		CHECK(tc, false, "INCREF refused on a table with one free entry");
		sketch_close(&ts);
		return;
	}
	readers = fps_entry_readers_rts_load(e);
	word = load(e);
	CHECK(tc, readers >= 500, "re-pinned readers_rts %llu below the 500 raised", (ull) readers);
	CHECK(tc, readers < fps_word_rts(word),
		  "re-pinned readers_rts %llu follows rts %llu, not the readers",
		  (ull) readers, (ull) fps_word_rts(word));
	CHECK(tc, fps_word_wts(word) >= 9000, "re-pinned wts %llu below the install at 9000",
		  (ull) fps_word_wts(word));
	unit_unpin(&ts, &c, e);
	if (fps_evicts_on_unpin(v->variant, v->eviction))
	{
		readers = fps_readers_get(ts.fps, 7);
		CHECK(tc, readers >= 500 && readers < 9000,
			  "readers cells give %llu for a key merged with readers_rts 500, rts 9000",
			  (ull) readers);
	}
	check_quiescent(tc, &ts, "readers_rts", c.increfs, c.refused, c.decrefs,
					0, 9000);
	sketch_close(&ts);
}

/* A lock bit left at the last DECREF is counted and never survives. */
static void
unit_lock_leak(TestCase *tc, const VariantInfo *v, TestCase *memory_case)
{
	TestSketch	ts;
	UnitCounts	c = {0};
	FpsEntry   *e;
	fps_u64		word,
				wts,
				rts;

	sketch_open(&ts, v, 64, 4, 64, memory_case);
	e = unit_pin(&ts, &c, 77);
	if (e == NULL)
	{
		CHECK(tc, false, "INCREF refused on an empty table");
		sketch_close(&ts);
		return;
	}
	install(tc, e, fps_word_make(true, 300, 400));
	unit_unpin(&ts, &c, e);
	CHECK(tc, stats_of(&ts).lock_leaks == 1, "lock_leaks %llu after a leak, expected 1",
		  (ull) stats_of(&ts).lock_leaks);
	get(&ts, 77, &wts, &rts);
	if (fps_evicts_on_unpin(v->variant, v->eviction))
		CHECK(tc, wts >= 300 && rts >= 400,
			  "leaked entry merged as (%llu, %llu), expected >= (300, 400)",
			  (ull) wts, (ull) rts);
	e = unit_pin(&ts, &c, 77);
	word = e ? load(e) : FPS_LOCK_BIT;
	CHECK(tc, !fps_word_locked(word) && fps_word_wts(word) >= 300 &&
		  fps_word_rts(word) >= 400,
		  "re-pinned leaked key: word %#llx, expected unlocked >= (300, 400)",
		  (ull) word);
	if (e != NULL)
		unit_unpin(&ts, &c, e);
	check_quiescent(tc, &ts, "lock leak", c.increfs, c.refused, c.decrefs,
					1, 400);
	sketch_close(&ts);
}

/*
 * The written wts (fps_entry_written_wts), which STO's and MVTO's too-late
 * checks compare a transaction's ts with: rts extensions past FPS_MAX_DELTA
 * move the word's wts with no write, and a transaction older than the
 * row's newest readers by that much must not find a write there.  Never
 * below the last write's wts, though: a write announced before its CAS, a
 * seed whose rts the delta cannot reach, the floor.  TicToc's install
 * record does not take a seed's written wts for an install.
 */
static void
unit_written_wts(TestCase *tc, const VariantInfo *v, TestCase *memory_case)
{
	TestSketch	ts;
	UnitCounts	c = {0};
	FpsEntry   *e;
	const fps_u64 seeded = 100;
	fps_u64		observed,
				word,
				w,
				later,
				floor_ts,
				top;

	sketch_open(&ts, v, 64, 4, 64, memory_case);

	/* a seed whose rts (perhaps another key's, sharing cells) is far ahead */
	put(&ts, 7, seeded, seeded + FPS_MAX_DELTA + 50);
	e = unit_pin(&ts, &c, 7);
	if (e == NULL)
	{
		CHECK(tc, false, "INCREF refused on an empty table");
		sketch_close(&ts);
		return;
	}
	observed = load(e);
	CHECK(tc, fps_word_wts(observed) == seeded + 50 &&
		  fps_entry_written_wts(e, observed) == seeded,
		  "seeded (%llu, %llu): word wts %llu, written wts %llu; expected %llu, %llu",
		  (ull) seeded, (ull) seeded + FPS_MAX_DELTA + 50,
		  (ull) fps_word_wts(observed), (ull) fps_entry_written_wts(e, observed),
		  (ull) seeded + 50, (ull) seeded);
	install(tc, e, fps_word_make(false, fps_word_wts(observed), fps_word_rts(observed) + 10));
	CHECK(tc, !fps_entry_overwritten(e, observed, load(e)),
		  "an rts extension of a seeded entry (wts %llu -> %llu) seen as an overwrite",
		  (ull) fps_word_wts(observed), (ull) fps_word_wts(load(e)));

	/* an STO write: announced, marked dirty by CAS, committed */
	w = fps_word_rts(load(e)) + 1;
	fps_entry_raise_written(e, w);
	install(tc, e, fps_word_make(true, w, w));
	install(tc, e, fps_word_make(false, w, w));
	CHECK(tc, fps_entry_written_wts(e, load(e)) == w,
		  "written wts %llu after a write at %llu",
		  (ull) fps_entry_written_wts(e, load(e)), (ull) w);

	/* younger readers, FPS_MAX_DELTA + 1000 past it: the word's wts moves */
	install(tc, e, fps_word_make(false, w, w + FPS_MAX_DELTA + 1000));
	word = load(e);
	CHECK(tc, fps_word_wts(word) == w + 1000 && fps_entry_written_wts(e, word) == w,
		  "rts extended to %llu over a write at %llu: word wts %llu (expected %llu), "
		  "written wts %llu", (ull) fps_word_rts(word), (ull) w,
		  (ull) fps_word_wts(word), (ull) w + 1000,
		  (ull) fps_entry_written_wts(e, word));

	/* a write announced, not yet in the word: no bound below the word's */
	later = w + 5000;
	fps_entry_raise_written(e, later);
	CHECK(tc, fps_entry_written_wts(e, word) >= w &&
		  fps_entry_written_wts(e, word) <= fps_word_wts(word),
		  "announced write at %llu over word wts %llu: written wts %llu",
		  (ull) later, (ull) fps_word_wts(word), (ull) fps_entry_written_wts(e, word));
	install(tc, e, fps_word_make(true, later, fps_word_rts(word)));
	CHECK(tc, fps_entry_written_wts(e, load(e)) == later,
		  "the word shows the write at %llu, written wts %llu",
		  (ull) later, (ull) fps_entry_written_wts(e, load(e)));
	install(tc, e, fps_word_make(false, later, fps_word_rts(word)));

	/* moved again; then the floor, between the write and the moved wts */
	top = later + FPS_MAX_DELTA + 500;
	install(tc, e, fps_word_make(false, later, top));
	unit_unpin(&ts, &c, e);
	floor_ts = later + 100;
	fps_raise_floor(ts.fps, floor_ts);
	e = unit_pin(&ts, &c, 7);
	if (e == NULL)
	{
		CHECK(tc, false, "INCREF of key 7 refused on a nearly empty table");
		sketch_close(&ts);
		return;
	}
	word = load(e);

	/*
	 * An entry kept in the table has its written wts raised to the floor,
	 * though the word's (moved) wts is above it; one evicted at unpin comes
	 * back with the wts the sketch merged, the word's.
	 */
	CHECK(tc, fps_word_wts(word) == later + 500 && fps_word_rts(word) >= top &&
		  fps_entry_written_wts(e, word) ==
		  (fps_evicts_on_unpin(v->variant, v->eviction) ? later + 500 : floor_ts),
		  "re-pinned over floor %llu: word (%llu, %llu), written wts %llu; "
		  "last write at %llu, rts %llu", (ull) floor_ts,
		  (ull) fps_word_wts(word), (ull) fps_word_rts(word),
		  (ull) fps_entry_written_wts(e, word), (ull) later, (ull) top);
	unit_unpin(&ts, &c, e);
	check_quiescent(tc, &ts, "written wts", c.increfs, c.refused, c.decrefs,
					0, top);
	sketch_close(&ts);
}

static void
test_unit(const VariantInfo *v, TestCase *memory_case)
{
	TestCase   *tc = case_begin("unit/%s", v->name);
	double		start = now_seconds();

	api_calls = 0;
	unit_sketch(tc, v, memory_case);
	unit_entry_lifecycle(tc, v, memory_case);
	unit_table_full(tc, v, memory_case);
	unit_floor(tc, v, memory_case);
	unit_class_floor(tc, v, memory_case);
	unit_lock_leak(tc, v, memory_case);
	unit_install_record(tc, v, memory_case);
	unit_written_wts(tc, v, memory_case);
	unit_readers_rts(tc, v, memory_case);
	case_end(tc, 1, api_calls, now_seconds() - start, "");
}

/* ---- the concurrent harness ---- */

typedef struct Run
{
	TestSketch *ts;
	TestCase   *tc;				/* the case being run */
	int			nthreads;
	volatile fps_u64 stop;
	pthread_barrier_t barrier;	/* workers' setup done; main starts clock */

	/* get_never_below_put: largest (wts, rts) each owner has PUT */
	volatile fps_u64 *published_wts;
	volatile fps_u64 *published_rts;

	/* never_decrease, pinned_stable */
	volatile fps_u64 truth[HOT_KEYS];	/* largest rts ever installed */
	volatile fps_u64 readers_truth[HOT_KEYS];	/* largest readers_rts raised */
	volatile fps_u64 clock;		/* source of fresh timestamps */
} Run;

typedef struct Worker
{
	Run		   *run;
	int			id;
	pthread_t	thread;
	fps_u64		rng;
	/* results, read by main after join */
	fps_u64		ops;			/* API calls */
	fps_u64		increfs;		/* fps_incref calls, refused included */
	fps_u64		refused;
	fps_u64		decrefs;
	fps_u64		installs;		/* successful CASes */
	fps_u64		cas_lost;		/* CASes lost to a concurrent pinner */
} Worker;

static bool
stopping(Run *run)
{
	return fps_atomic_load(&run->stop) != 0;
}

/*
 * Start nthreads workers, let them run opt_seconds (less if the case has
 * already failed plenty), stop and join them.  Returns the wall time from
 * the start barrier to the last join.
 */
static double
run_workers(Run *run, Worker *workers, void *(*body) (void *))
{
	double		start;
	int			i;

	if (pthread_barrier_init(&run->barrier, NULL, run->nthreads + 1) != 0)
	{
		perror("pthread_barrier_init");
		exit(2);
	}
	for (i = 0; i < run->nthreads; i++)
	{
		memset(&workers[i], 0, sizeof(Worker));
		workers[i].run = run;
		workers[i].id = i;
		workers[i].rng = UINT64_C(0x243F6A8885A308D3) * (i + 1);
		if (pthread_create(&workers[i].thread, NULL, body, &workers[i]) != 0)
		{
			perror("pthread_create");
			exit(2);
		}
	}
	pthread_barrier_wait(&run->barrier);
	start = now_seconds();
	while (now_seconds() - start < opt_seconds &&
		   case_failures(run->tc) < STOP_AFTER_FAILURES)
	{
		struct timespec nap = {0, 5 * 1000 * 1000};

		nanosleep(&nap, NULL);
	}
	fps_atomic_store(&run->stop, 1);
	for (i = 0; i < run->nthreads; i++)
		pthread_join(workers[i].thread, NULL);
	pthread_barrier_destroy(&run->barrier);
	return now_seconds() - start;
}

/* What end_of_run/<variant> reports: the runs whose ends it checked. */
typedef struct EndFigures
{
	fps_u64		ops;
	double		seconds;
	int			runs;
} EndFigures;

typedef struct Totals
{
	fps_u64		ops;
	fps_u64		increfs;
	fps_u64		refused;
	fps_u64		decrefs;
	fps_u64		installs;
	fps_u64		cas_lost;
} Totals;

static Totals
sum_workers(Worker *workers, int n)
{
	Totals		t = {0};
	int			i;

	for (i = 0; i < n; i++)
	{
		t.ops += workers[i].ops;
		t.increfs += workers[i].increfs;
		t.refused += workers[i].refused;
		t.decrefs += workers[i].decrefs;
		t.installs += workers[i].installs;
		t.cas_lost += workers[i].cas_lost;
	}
	return t;
}

/*
 * The end-of-run checks every concurrent case ends with, and the figures it
 * prints about the table's activity.
 */
static void
finish_run(Run *run, Totals *t, TestCase *end_case, const char *when,
		   char *details, size_t details_len)
{
	FpsStats	s;
	fps_u64		max_installed = 0;
	int			i;

	for (i = 0; i < HOT_KEYS; i++)
		max_installed = max_u64(max_installed, fps_atomic_load(&run->truth[i]));
	if (run->published_rts != NULL)
		for (i = 0; i < run->nthreads * OWN_KEYS; i++)
			max_installed = max_u64(max_installed,
									fps_atomic_load(&run->published_rts[i]));
	check_quiescent(end_case, run->ts, when, t->increfs, t->refused,
					t->decrefs, 0, max_installed);
	fps_get_stats(run->ts->fps, &s);
	if (s.increfs == 0)
	{
		/* a sketch-only case */
		snprintf(details, details_len, "sketch=%llux%llu cells_used=%llu",
				 (ull) s.sketch_rows, (ull) s.sketch_cols,
				 (ull) s.sketch_cells_used);
		return;
	}
	snprintf(details, details_len,
			 "increfs=%llu refused=%llu installs=%llu cas_lost=%llu "
			 "seeds=%llu merges=%llu evictions=%llu entries_hwm=%llu pinned_hwm=%llu",
			 (ull) t->increfs, (ull) t->refused, (ull) t->installs,
			 (ull) t->cas_lost, (ull) s.seeds, (ull) s.merges,
			 (ull) s.evictions, (ull) s.entries_hwm, (ull) s.pinned_hwm);
}

/* ---- get_never_below_put ---- */

static fps_u64
own_key(int thread, int k)
{
	return ((fps_u64) (thread + 1) << 32) | (fps_u64) k;
}

/*
 * Each thread PUTs increasing (wts, rts) into its own keys and checks its
 * GET right after; it also PUTs noise into random keys (values in the same
 * range as its own, so collisions matter), and checks other threads' keys
 * against what they have published.  A PUT is published only after it
 * returned, so the GET that follows the load must not be below it.
 */
static void *
put_get_worker(void *arg)
{
	Worker	   *w = arg;
	Run		   *run = w->run;
	TestCase   *tc = run->tc;
	TestSketch *ts = run->ts;
	fps_u64		cur_wts[OWN_KEYS] = {0};
	fps_u64		cur_rts[OWN_KEYS] = {0};
	fps_u64		gwts,
				grts;

	api_calls = 0;
	pthread_barrier_wait(&run->barrier);
	while (!stopping(run))
	{
		fps_u64		r = rng_next(&w->rng);
		int			k = (r >> 8) % OWN_KEYS;

		switch (r % 4)
		{
			case 0:
			case 1:
				{
					fps_u64		key = own_key(w->id, k);
					int			slot = w->id * OWN_KEYS + k;

					cur_wts[k] += 1 + (r >> 16) % 4;
					cur_rts[k] = max_u64(cur_rts[k], cur_wts[k] + (r >> 24) % 64);
					put(ts, key, cur_wts[k], cur_rts[k]);
					get(ts, key, &gwts, &grts);
					CHECK(tc, gwts >= cur_wts[k] && grts >= cur_rts[k] && gwts <= grts,
						  "thread %d key %#llx: GET (%llu, %llu) right after own PUT (%llu, %llu)",
						  w->id, (ull) key, (ull) gwts, (ull) grts,
						  (ull) cur_wts[k], (ull) cur_rts[k]);
					fps_atomic_store(&run->published_wts[slot], cur_wts[k]);
					fps_atomic_store(&run->published_rts[slot], cur_rts[k]);
					break;
				}
			case 2:
				{
					fps_u64		key = NOISE_KEY_BASE + (r >> 16) % NOISE_KEYS;
					fps_u64		wts = (r >> 32) % (cur_wts[k] + 1);

					put(ts, key, wts, wts + (r >> 48) % 64);
					break;
				}
			default:
				{
					int			other = (r >> 16) % run->nthreads;
					int			slot = other * OWN_KEYS + k;
					fps_u64		key = own_key(other, k);
					fps_u64		pwts = fps_atomic_load(&run->published_wts[slot]);
					fps_u64		prts = fps_atomic_load(&run->published_rts[slot]);

					get(ts, key, &gwts, &grts);
					CHECK(tc, gwts >= pwts && grts >= prts && gwts <= grts,
						  "thread %d key %#llx of thread %d: GET (%llu, %llu) below published PUT (%llu, %llu)",
						  w->id, (ull) key, other, (ull) gwts, (ull) grts,
						  (ull) pwts, (ull) prts);
					break;
				}
		}
	}
	w->ops = api_calls;
	return NULL;
}

static void
test_get_never_below_put(const VariantInfo *v, TestCase *end_case, EndFigures *end_figures,
						 TestCase *memory_case)
{
	TestCase   *tc = case_begin("get_never_below_put/%s", v->name);
	TestSketch	ts;
	Run			run;
	Worker		workers[MAX_THREADS];
	Totals		t;
	double		seconds;
	char		details[512];
	size_t		nslots = (size_t) opt_threads * OWN_KEYS;

	memset(&run, 0, sizeof(run));
	sketch_open(&ts, v, CHURN_MAX_ENTRIES, PUT_ROWS, PUT_COLS, memory_case);
	run.ts = &ts;
	run.tc = tc;
	run.nthreads = opt_threads;
	run.published_wts = calloc(nslots, sizeof(fps_u64));
	run.published_rts = calloc(nslots, sizeof(fps_u64));
	if (run.published_wts == NULL || run.published_rts == NULL)
	{
		perror("calloc");
		exit(2);
	}
	seconds = run_workers(&run, workers, put_get_worker);
	t = sum_workers(workers, run.nthreads);
	finish_run(&run, &t, end_case, tc->name, details, sizeof(details));
	free((void *) run.published_wts);
	free((void *) run.published_rts);
	sketch_close(&ts);
	end_figures->ops += t.ops;
	end_figures->seconds += seconds;
	end_figures->runs++;
	case_end(tc, run.nthreads, t.ops, seconds, details);
}

/* ---- never_decrease and the hot-key churn ---- */

/*
 * One INCREF / a few CAS installs / DECREF round on a random hot key,
 * checking:
 *	- the word seen at INCREF is not below the largest rts any thread had
 *	  installed (and published in truth[]) before this INCREF began: a key
 *	  is always in the table or already in the sketch (merge before unlink);
 *	- while pinned, the word never decreases, and a word we locked changes
 *	  only through us.
 * Writes lock the word, then install and unlock with one CAS (TicToc's
 * write); reads extend rts with one CAS (TicToc's rts extension, which
 * exercises the delta-overflow rule as the clock runs ahead of wts).
 */
static void
hot_key_round(Worker *w, TestCase *tc)
{
	Run		   *run = w->run;
	TestSketch *ts = run->ts;
	fps_u64		r = rng_next(&w->rng);
	int			k = r % HOT_KEYS;
	fps_u64		key = HOT_KEY_BASE + k;
	fps_u64		before = fps_atomic_load(&run->truth[k]);
	fps_u64		readers_before = fps_atomic_load(&run->readers_truth[k]);
	FpsEntry   *e;
	fps_u64		seen;
	int			n,
				i;

	w->increfs++;
	e = pin(ts, key);
	if (e == NULL)
	{
		w->refused++;
		return;
	}
	seen = load(e);
	CHECK(tc, fps_word_rts(seen) >= before &&
		  fps_word_wts(seen) <= fps_word_rts(seen) && e->key == key,
		  "key %#llx: INCREF gave (wts %llu, rts %llu) but rts %llu was installed before "
		  "(entry key %#llx)",
		  (ull) key, (ull) fps_word_wts(seen), (ull) fps_word_rts(seen),
		  (ull) before, (ull) e->key);
	CHECK(tc, fps_entry_readers_rts_load(e) >= readers_before,
		  "key %#llx: INCREF gave readers_rts %llu but %llu was raised before",
		  (ull) key, (ull) fps_entry_readers_rts_load(e), (ull) readers_before);

	n = 1 + (r >> 8) % 3;
	for (i = 0; i < n; i++)
	{
		fps_u64		cur = load(e);
		fps_u64		ts_new,
					expected,
					desired;

		CHECK(tc, fps_word_wts(cur) >= fps_word_wts(seen) &&
			  fps_word_rts(cur) >= fps_word_rts(seen),
			  "key %#llx: pinned word went from (%llu, %llu) to (%llu, %llu)",
			  (ull) key, (ull) fps_word_wts(seen), (ull) fps_word_rts(seen),
			  (ull) fps_word_wts(cur), (ull) fps_word_rts(cur));
		seen = cur;
		if (fps_word_locked(cur))
			continue;			/* another pinner is writing: leave it */

		ts_new = max_u64(fps_atomic_add(&run->clock, 1), fps_word_rts(cur) + 1);
		if ((r >> (16 + i)) & 1)
		{
			expected = cur;
			if (!cas(e, &expected, cur | FPS_LOCK_BIT))
			{
				w->cas_lost++;
				continue;
			}
			/* we hold the lock bit: nobody else may change the word now */
			expected = cur | FPS_LOCK_BIT;
			desired = fps_word_make(false, ts_new, ts_new);
			if (!cas(e, &expected, desired))
			{
				CHECK(tc, false,
					  "key %#llx: locked word %#llx changed under its holder to %#llx",
					  (ull) key, (ull) (cur | FPS_LOCK_BIT), (ull) expected);
				/* never leave our lock behind, whatever happened */
				while (fps_word_locked(expected) &&
					   !cas(e, &expected, expected & ~FPS_LOCK_BIT))
					;
				continue;
			}
		}
		else
		{
			expected = cur;
			desired = fps_word_make(false, fps_word_wts(cur), ts_new);
			if (!cas(e, &expected, desired))
			{
				w->cas_lost++;
				continue;
			}
			/* a predicate reader too: readers_rts lags rts, on its own cells */
			if ((r >> (24 + i)) & 1)
			{
				fps_atomic_max(&e->readers_rts, ts_new - 1);
				fps_atomic_max(&run->readers_truth[k], ts_new - 1);
			}
		}
		w->installs++;
		/* published only after the install, and before the DECREF */
		fps_atomic_max(&run->truth[k], ts_new);
		seen = desired;
	}
	unpin(ts, e);
	w->decrefs++;
}

static void *
never_decrease_worker(void *arg)
{
	Worker	   *w = arg;
	Run		   *run = w->run;

	api_calls = 0;
	pthread_barrier_wait(&run->barrier);
	while (!stopping(run))
		hot_key_round(w, run->tc);
	w->ops = api_calls;
	return NULL;
}

static void
test_never_decrease(const VariantInfo *v, TestCase *end_case, EndFigures *end_figures,
					TestCase *memory_case)
{
	TestCase   *tc = case_begin("never_decrease/%s", v->name);
	TestSketch	ts;
	Run			run;
	Worker		workers[MAX_THREADS];
	Totals		t;
	double		seconds;
	char		details[512];

	memset(&run, 0, sizeof(run));
	sketch_open(&ts, v, CHURN_MAX_ENTRIES, CHURN_ROWS, CHURN_COLS,
				memory_case);
	run.ts = &ts;
	run.tc = tc;
	run.nthreads = opt_threads;
	run.clock = 1;
	seconds = run_workers(&run, workers, never_decrease_worker);
	t = sum_workers(workers, run.nthreads);
	finish_run(&run, &t, end_case, tc->name, details, sizeof(details));
	CHECK(tc, fps_atomic_load(&run.clock) < FPS_MAX_TS / 2,
		  "clock ran to %llu", (ull) fps_atomic_load(&run.clock));
	sketch_close(&ts);
	end_figures->ops += t.ops;
	end_figures->seconds += seconds;
	end_figures->runs++;
	case_end(tc, run.nthreads, t.ops, seconds, details);
}

/* ---- pinned_stable ---- */

/*
 * INCREF that retries while the key's partition is full of pinned entries;
 * gives up (NULL) only once the run is stopping.
 */
static FpsEntry *
pin_retrying(Worker *w, fps_u64 key)
{
	FpsEntry   *e;

	for (;;)
	{
		w->increfs++;
		e = pin(w->run->ts, key);
		if (e != NULL)
			return e;
		w->refused++;
		if (stopping(w->run))
			return NULL;
		sched_yield();
	}
}

/*
 * Each thread pins a private key nobody else touches, stamps it, and then
 * hammers the hot keys (merges, CLOCK evictions, reseeds, sketch PUTs into
 * random cells) while checking that its entry keeps its key and exactly the
 * word it last installed.  Every 16 rounds it changes the word itself (the
 * CAS from the word it knows must succeed), and every 512 rounds it releases
 * and re-pins the key, which must come back not below what it installed.
 */
static void *
pinned_stable_worker(void *arg)
{
	Worker	   *w = arg;
	Run		   *run = w->run;
	TestCase   *tc = run->tc;
	TestSketch *ts = run->ts;
	fps_u64		key = 0;
	fps_u64		mine = 0;
	fps_u64		round = 0;
	FpsEntry   *e = NULL;
	int			attempt;

	api_calls = 0;

	/*
	 * Pin before the churn starts, so that even exact finds room.  Only
	 * private keys are pinned so far; should this one's partition be full
	 * of them, another private key will do.
	 */
	for (attempt = 0; attempt < 64 && e == NULL; attempt++)
	{
		key = PRIVATE_KEY_BASE + w->id + (fps_u64) attempt * MAX_THREADS;
		w->increfs++;
		e = pin(ts, key);
		if (e == NULL)
			w->refused++;
	}
	CHECK(tc, e != NULL, "thread %d: no private key could be pinned", w->id);
	if (e != NULL)
	{
		mine = fps_word_make(false, 1000 * (w->id + 1), 1000 * (w->id + 1) + w->id);
		install(tc, e, mine);
	}
	pthread_barrier_wait(&run->barrier);
	if (e == NULL)
	{
		w->ops = api_calls;
		return NULL;
	}

	while (!stopping(run))
	{
		fps_u64		word = load(e);
		fps_u64		r;

		CHECK(tc, e->key == key && word == mine,
			  "thread %d private key %#llx: entry has key %#llx word %#llx (%llu, %llu), "
			  "expected %#llx (%llu, %llu)",
			  w->id, (ull) key, (ull) e->key, (ull) word,
			  (ull) fps_word_wts(word), (ull) fps_word_rts(word),
			  (ull) mine, (ull) fps_word_wts(mine), (ull) fps_word_rts(mine));

		r = rng_next(&w->rng);
		if (r % 4 == 0)
		{
			fps_u64		wts = fps_atomic_load(&run->clock);

			put(ts, NOISE_KEY_BASE + (r >> 8) % NOISE_KEYS, wts, wts + (r >> 40) % 64);
		}
		else
			hot_key_round(w, tc);

		if (++round % 16 == 0)
		{
			fps_u64		expected = mine;
			fps_u64		next = fps_word_make(false, fps_word_rts(mine) + 1,
											 fps_word_rts(mine) + 1 + r % 5);

			CHECK(tc, cas(e, &expected, next),
				  "thread %d private key %#llx: CAS from %#llx failed, word was %#llx",
				  w->id, (ull) key, (ull) mine, (ull) expected);
			mine = next;
			word = load(e);
			CHECK(tc, word == mine,
				  "thread %d private key %#llx: installed %#llx, then read %#llx",
				  w->id, (ull) key, (ull) mine, (ull) word);
		}
		if (round % 512 == 0)
		{
			unpin(ts, e);
			w->decrefs++;
			e = pin_retrying(w, key);
			if (e == NULL)
				break;
			word = load(e);
			CHECK(tc, e->key == key &&
				  fps_word_wts(word) >= fps_word_wts(mine) &&
				  fps_word_rts(word) >= fps_word_rts(mine),
				  "thread %d private key %#llx: re-pinned (%llu, %llu) below installed (%llu, %llu)",
				  w->id, (ull) key, (ull) fps_word_wts(word), (ull) fps_word_rts(word),
				  (ull) fps_word_wts(mine), (ull) fps_word_rts(mine));
			mine = word;
		}
	}
	if (e != NULL)
	{
		unpin(ts, e);
		w->decrefs++;
	}
	w->ops = api_calls;
	return NULL;
}

static void
test_pinned_stable(const VariantInfo *v, TestCase *end_case, EndFigures *end_figures,
				   TestCase *memory_case)
{
	TestCase   *tc = case_begin("pinned_stable/%s", v->name);
	TestSketch	ts;
	Run			run;
	Worker		workers[MAX_THREADS];
	Totals		t;
	double		seconds;
	char		details[512];

	memset(&run, 0, sizeof(run));
	sketch_open(&ts, v, CHURN_MAX_ENTRIES, CHURN_ROWS, CHURN_COLS,
				memory_case);
	run.ts = &ts;
	run.tc = tc;
	run.nthreads = opt_threads;
	run.clock = 1000000;
	seconds = run_workers(&run, workers, pinned_stable_worker);
	t = sum_workers(workers, run.nthreads);
	finish_run(&run, &t, end_case, tc->name, details, sizeof(details));
	sketch_close(&ts);
	end_figures->ops += t.ops;
	end_figures->seconds += seconds;
	end_figures->runs++;
	case_end(tc, run.nthreads, t.ops, seconds, details);
}

/* ---- memory_bounds ---- */

/*
 * fps_create() aligns its start to a cache line out of the 64 bytes of
 * slack in fps_shmem_size(): give it blocks at every misalignment, fill the
 * table, and check no byte around the block changed.  The concurrent cases
 * add their own entry-in-block checks (pin()) and stats bounds
 * (sketch_close()) to the same case.
 */
static void
test_memory_layout(const VariantInfo *v, TestCase *tc, fps_u64 *ops)
{
	static const fps_u32 sizes[] = {1, 4, 64, 1000};
	const size_t guard = 128;
	size_t		si;
	size_t		offset;

	for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
	{
		for (offset = 0; offset < 64; offset += 7)
		{
			TestSketch	ts;
			char	   *block;
			size_t		total;
			size_t		i;
			FpsEntry  **pinned;
			fps_u32		npinned = 0;
			fps_u64		key;

			memset(&ts, 0, sizeof(ts));
			ts.config.variant = v->variant;
			ts.config.eviction = v->eviction;
			ts.config.max_entries = sizes[si];
			ts.config.sketch_rows = 4;
			ts.config.sketch_cols = 100 + si;
			ts.config.seed = offset;
			ts.size = fps_shmem_size(&ts.config);
			ts.memory_case = tc;
			total = guard + offset + ts.size + guard;
			block = malloc(total);
			pinned = calloc(sizes[si] + 1, sizeof(FpsEntry *));
			if (block == NULL || pinned == NULL)
			{
				perror("malloc");
				exit(2);
			}
			memset(block, 0xA5, total);
			ts.mem = block + guard + offset;
			ts.fps = fps_create(ts.mem, &ts.config);

			/* fill the table, one more to see it refused, then release */
			for (key = 0; npinned <= sizes[si] && key < 4 * sizes[si] + 64; key++)
			{
				FpsEntry   *e = pin(&ts, key);

				if (e != NULL)
				{
					install(tc, e, fps_word_make(false, key, key + 1));
					pinned[npinned++] = e;
				}
				put(&ts, key + 1000000, key, key);
			}
			CHECK(tc, npinned == sizes[si],
				  "max_entries %u: %u keys could be pinned", sizes[si], npinned);
			while (npinned > 0)
				unpin(&ts, pinned[--npinned]);

			for (i = 0; i < total; i++)
			{
				bool		inside = i >= guard + offset && i < guard + offset + ts.size;

				if (!inside && (unsigned char) block[i] != 0xA5)
				{
					CHECK(tc, false,
						  "max_entries %u, block misaligned by %zu: byte %zd from "
						  "the block start written outside fps_shmem_size %llu",
						  sizes[si], (size_t) ((uintptr_t) ts.mem % 64),
						  (ssize_t) i - (ssize_t) (guard + offset), (ull) ts.size);
					break;
				}
			}
			{
				FpsStats	s = stats_of(&ts);
				const char *why = fps_check_structure(ts.fps);

				CHECK(tc, s.sketch_bytes + s.table_bytes <= ts.size && why == NULL,
					  "max_entries %u: sketch %llu + table %llu bytes vs size %llu; "
					  "structure: %s",
					  sizes[si], (ull) s.sketch_bytes, (ull) s.table_bytes,
					  (ull) ts.size, why ? why : "ok");
			}
			free(pinned);
			free(block);
		}
	}
	*ops += api_calls;
}

/* ---- main ---- */

static void
usage(const char *progname)
{
	fprintf(stderr,
			"usage: %s [-t threads] [-s seconds] [-v focus_sketch|focus_counter|exact|all]\n"
			"  -t  worker threads per concurrent case (default 8, max %d)\n"
			"  -s  seconds per concurrent case (default 2)\n"
			"  -v  variant to test (default all)\n",
			progname, MAX_THREADS);
	exit(2);
}

int
main(int argc, char **argv)
{
	const char *variant_opt = "all";
	double		start = now_seconds();
	int			opt;
	int			i;
	bool		any = false;

	while ((opt = getopt(argc, argv, "t:s:v:h")) != -1)
	{
		switch (opt)
		{
			case 't':
				opt_threads = atoi(optarg);
				if (opt_threads < 1 || opt_threads > MAX_THREADS)
					usage(argv[0]);
				break;
			case 's':
				opt_seconds = strtod(optarg, NULL);
				if (!(opt_seconds > 0))
					usage(argv[0]);
				break;
			case 'v':
				variant_opt = optarg;
				break;
			default:
				usage(argv[0]);
		}
	}
	if (optind != argc)
		usage(argv[0]);

	printf("test_fpsketch: threads=%d seconds=%.2f variant=%s%s\n",
		   opt_threads, opt_seconds, variant_opt,
#ifdef FPS_BROKEN_MERGE_ORDER
		   " (built with FPS_BROKEN_MERGE_ORDER)"
#else
		   ""
#endif
		);
	test_word_packing();

	for (i = 0; i < NVARIANTS; i++)
	{
		const VariantInfo *v = &variants[i];
		TestCase   *end_case;
		TestCase   *memory_case;
		EndFigures	end_figures = {0};
		char		end_details[64];
		double		mem_start;
		fps_u64		mem_ops = 0;

		if (strcmp(variant_opt, "all") != 0 && strcmp(variant_opt, v->name) != 0)
			continue;
		any = true;
		end_case = case_begin("end_of_run/%s", v->name);
		memory_case = case_begin("memory_bounds/%s", v->name);

		test_unit(v, memory_case);
		test_get_never_below_put(v, end_case, &end_figures, memory_case);
		test_never_decrease(v, end_case, &end_figures, memory_case);
		test_pinned_stable(v, end_case, &end_figures, memory_case);
		snprintf(end_details, sizeof(end_details),
				 "(checked after each of the %d runs above)", end_figures.runs);
		case_end(end_case, opt_threads, end_figures.ops, end_figures.seconds,
				 end_details);

		mem_start = now_seconds();
		api_calls = 0;
		test_memory_layout(v, memory_case, &mem_ops);
		case_end(memory_case, 1, mem_ops, now_seconds() - mem_start,
				 "(plus every entry returned by the cases above)");
	}
	if (!any)
		usage(argv[0]);

	printf("test_fpsketch: %d passed, %d failed (%.1fs)\n",
		   cases_passed, cases_failed, now_seconds() - start);
	return cases_failed > 0 ? 1 : 0;
}
