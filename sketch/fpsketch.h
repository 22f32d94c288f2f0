/*-------------------------------------------------------------------------
 *
 * fpsketch.h
 *	  The FPSketch: approximate per-key (wts, rts) timestamp storage in a
 *	  fixed amount of shared memory.
 *
 * Two regions, after the dissertation's Algorithm 2:
 *
 *	- the foveated region, an exact hash table holding an entry
 *	  {key, word = (lock, wts, rts), refcount} for every key that an in-flight
 *	  transaction has pinned (INCREF) and, unless entries are evicted at
 *	  their last DECREF (FPS_EVICT_ON_UNPIN), for recently unpinned keys
 *	  until CLOCK needs their slot, and
 *	- the peripheral region, a count-min-style sketch of rows x cols cells of
 *	  (wts, rts); PUT is a field-wise atomic MAX into one cell per row, GET is
 *	  the field-wise MIN over the rows followed by rts = max(rts, wts);
 *	  beside it a narrower one of rows x cols/8 cells for entries' readers_rts,
 *	  so that a key evicted and reseeded keeps a readers_rts below its rts
 *	  (installs raise rts, and every read raises the cells' rts of the keys
 *	  sharing them; readers_rts is raised by the few predicate readers only).
 *
 * Invariants (tested by test_fpsketch.c):
 *	- a GET never returns less than the largest value PUT for the key, and an
 *	  entry is seeded by GET, so every key's timestamps only over-approximate;
 *	- pinned => exact: while refcount > 0 the entry's word changes only
 *	  through fps_entry_cas() by the pinning transactions;
 *	- merge before unlink: whoever unlinks an unpinned entry (the last
 *	  DECREF, or a CLOCK eviction) MAXes it into the sketch while still
 *	  holding the partition lock, so a key is never in neither region and a
 *	  concurrent INCREF of the same key reseeds from a sketch that already
 *	  holds the value;
 *	- timestamps never decrease, and wts <= rts holds by construction of the
 *	  packed word.
 *
 * Locking: the exact table is split into FPS_PARTITIONS partitions, each with
 * a spinlock protecting its bucket chains, free list, refcounts, CLOCK hand
 * and counters.  Spinlocks are held for a bounded number of instructions and
 * no code under them can fail.  An entry's word is only read and written
 * with atomics (no partition lock needed), sketch cells likewise.
 *
 * This module knows nothing about PostgreSQL's executor: keys are opaque
 * 64-bit numbers and timestamps opaque 48-bit counters.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FPSKETCH_H
#define FPSKETCH_H

#include "fps_port.h"

/*
 * The packed entry word, so that (lock, wts, rts) change as one atomic unit:
 * an rts extension by CAS fails if the key got locked meanwhile.
 *
 *	bit 63		lock (TicToc) / dirty (STO) bit
 *	bits 15-62	wts (48 bits)
 *	bits 0-14	delta = rts - wts (15 bits)
 *
 * As in TicToc's own implementation, a delta that would overflow moves wts up
 * to rts - FPS_MAX_DELTA: an over-approximation of wts that can only cause
 * extra validation failures, never a missed conflict.
 */
#define FPS_LOCK_BIT		(UINT64_C(1) << 63)
#ifndef FPS_DELTA_BITS
/* -DFPS_DELTA_BITS=4 builds a server that moves wts at nearly every extension */
#define FPS_DELTA_BITS		15
#endif
#define FPS_MAX_DELTA		((UINT64_C(1) << FPS_DELTA_BITS) - 1)
#define FPS_MAX_TS			((UINT64_C(1) << 48) - 1)

static inline fps_u64
fps_word_wts(fps_u64 word)
{
	return (word & ~FPS_LOCK_BIT) >> FPS_DELTA_BITS;
}

static inline fps_u64
fps_word_rts(fps_u64 word)
{
	return fps_word_wts(word) + (word & FPS_MAX_DELTA);
}

static inline bool
fps_word_locked(fps_u64 word)
{
	return (word & FPS_LOCK_BIT) != 0;
}

static inline fps_u64
fps_word_make(bool locked, fps_u64 wts, fps_u64 rts)
{
	if (rts < wts)
		rts = wts;
	if (rts > FPS_MAX_TS)
		rts = FPS_MAX_TS;
	if (rts - wts > FPS_MAX_DELTA)
		wts = rts - FPS_MAX_DELTA;
	return (locked ? FPS_LOCK_BIT : 0) | (wts << FPS_DELTA_BITS) | (rts - wts);
}

typedef enum FpsVariant
{
	FPS_VARIANT_FOCUS_SKETCH,	/* rows x cols sketch, eviction per FpsEviction */
	FPS_VARIANT_FOCUS_COUNTER,	/* 1x1 sketch, CLOCK-evicted table */
	FPS_VARIANT_EXACT			/* no eviction: every key ever touched */
} FpsVariant;

/*
 * When focus_sketch moves an unpinned entry into the sketch (the
 * dissertation's eviction mechanism, section 3.2: "evicted immediately or
 * kept in the hash table until evicted due to space pressure").
 */
typedef enum FpsEviction
{
	FPS_EVICT_ON_UNPIN,			/* at the last DECREF (the paper's Focus-Sketch) */
	FPS_EVICT_CLOCK				/* when INCREF needs the slot, by CLOCK */
} FpsEviction;

/* focus_sketch with eviction at unpin: the last DECREF merges and unlinks */
static inline bool
fps_evicts_on_unpin(FpsVariant variant, FpsEviction eviction)
{
	return variant == FPS_VARIANT_FOCUS_SKETCH && eviction == FPS_EVICT_ON_UNPIN;
}

/* unpinned entries stay until INCREF needs their slot, then CLOCK picks one */
static inline bool
fps_evicts_by_clock(FpsVariant variant, FpsEviction eviction)
{
	return variant == FPS_VARIANT_FOCUS_COUNTER ||
		(variant == FPS_VARIANT_FOCUS_SKETCH && eviction == FPS_EVICT_CLOCK);
}

typedef struct FpsConfig
{
	FpsVariant	variant;
	FpsEviction eviction;		/* focus_sketch only */
	fps_u32		max_entries;	/* exact table capacity */
	fps_u32		sketch_rows;
	fps_u32		sketch_cols;
	fps_u32		readers_cols;	/* 0: fps_readers_cols(sketch_cols) */
	fps_u64		seed;			/* derives the table's and each row's seed */
} FpsConfig;

/*
 * The committer word of an entry, used for keys whose writers need no mutual
 * exclusion among themselves (phantom keys: every insert "writes" the same
 * predicate key).  Low 16 bits: writers between PRE_COMMIT and install;
 * high 48 bits: installs so far.  An install adds FPS_COMMITTER_DONE, which
 * ends a commit and counts its install in one atomic step.
 */
#define FPS_COMMITTER_BITS	16
#define FPS_COMMITTER_ONE	UINT64_C(1)
#define FPS_COMMITTER_DONE	((UINT64_C(1) << FPS_COMMITTER_BITS) - 1)
#define fps_committers(cword)	((cword) & ((UINT64_C(1) << FPS_COMMITTER_BITS) - 1))

typedef struct FpsEntry
{
	fps_u64		key;			/* fixed while the entry is in use */
	volatile fps_u64 word;		/* packed (lock, wts, rts); atomics only */
	volatile fps_u64 committers;	/* committer word; atomics only */
	/*
	 * Keys whose writers register as committers: raised by readers only (to
	 * the wts they observe and the commit_ts they validate at), never by
	 * installs, unlike rts.  Merged into and seeded from the readers cells,
	 * not from rts: the writers of a relation's escalation key would
	 * otherwise be ordered after one another whenever it was evicted.
	 */
	volatile fps_u64 readers_rts;
	/*
	 * The last fps_entry_install(): the wts it replaced, and its own.
	 * installed_wts is also the entry's written wts, never below the wts of
	 * its last write: unlike the word's wts, rts extensions never move it
	 * (fps_entry_written_wts).
	 */
	volatile fps_u64 replaced_wts;
	volatile fps_u64 installed_wts;
	fps_u32		refcount;		/* partition lock */
	fps_i32		next;			/* bucket chain or free list; partition lock */
	fps_u16		partition;		/* owner partition, fixed */
	char		in_use;			/* partition lock */
	char		clock_ref;		/* partition lock */

	/*
	 * Who holds the lock bit, as the caller numbers its lockers, plus one
	 * (0: not known).  Stored by the locker after it takes the lock bit and
	 * cleared before it releases it: a hint that lets a waiter wait for the
	 * holder instead of polling.
	 */
	volatile fps_u32 lock_owner;
} FpsEntry;

typedef struct FpsStats
{
	/* configuration */
	FpsVariant	variant;
	FpsEviction eviction;		/* as configured; focus_sketch only */
	fps_u64		max_entries;
	fps_u64		sketch_rows;
	fps_u64		sketch_cols;
	fps_u64		readers_cols;
	fps_u64		sketch_bytes;	/* both kinds of cells */
	fps_u64		table_bytes;
	/* occupancy */
	fps_u64		entries;		/* entries in the exact table now */
	fps_u64		entries_hwm;
	fps_u64		pinned;			/* entries with refcount > 0 now */
	fps_u64		pinned_hwm;
	fps_u64		sketch_cells_used;	/* cells with a nonzero rts */
	fps_u64		floor_ts;		/* the highest floor of any key class */
	/* event counts since reset */
	fps_u64		increfs;
	fps_u64		decrefs;
	fps_u64		seeds;			/* entries created from a sketch GET */
	fps_u64		merges;			/* entries merged into the sketch */
	fps_u64		evictions;		/* of which CLOCK evictions */
	fps_u64		table_full;		/* INCREFs refused: no free entry */
	fps_u64		lock_leaks;		/* lock bits found at the last DECREF */
} FpsStats;

typedef struct FPSketch FPSketch;

extern fps_u32 fps_readers_cols(fps_u32 sketch_cols);
extern fps_u32 fps_sketch_cols_for_bytes(fps_u64 bytes, fps_u32 rows);
extern fps_u64 fps_shmem_size(const FpsConfig *config);
extern FPSketch *fps_create(void *mem, const FpsConfig *config);
extern FPSketch *fps_attach(void *mem);

extern FpsEntry *fps_incref(FPSketch *fps, fps_u64 key);
extern void fps_decref(FPSketch *fps, FpsEntry *entry);

extern void fps_sketch_put(FPSketch *fps, fps_u64 key, fps_u64 wts, fps_u64 rts);
extern void fps_sketch_get(FPSketch *fps, fps_u64 key, fps_u64 *wts, fps_u64 *rts);
extern fps_u64 fps_readers_get(FPSketch *fps, fps_u64 key);

/*
 * Floors.  A writer that bypassed per-key tracking raises a floor under
 * the timestamps of every key it may have written that nobody pins
 * (apply_floor): the floor stands for a write at that timestamp.  The
 * global floor covers every key; a class floor only the keys of one class,
 * the top FPS_KEY_CLASS_BITS bits of a key, which the caller gives a
 * meaning (fpsketch: the relation a key belongs to, so that DDL on one
 * table leaves the keys of the others alone).
 */
#define FPS_KEY_CLASS_BITS	12
#define FPS_KEY_CLASSES		(1U << FPS_KEY_CLASS_BITS)
#define fps_key_class(key)	((fps_u32) ((key) >> (64 - FPS_KEY_CLASS_BITS)))
#define fps_key_in_class(hash, key_class) \
	(((hash) & (UINT64_MAX >> FPS_KEY_CLASS_BITS)) | \
	 ((fps_u64) (key_class) << (64 - FPS_KEY_CLASS_BITS)))

extern void fps_raise_floor(FPSketch *fps, fps_u64 ts);
extern void fps_raise_class_floor(FPSketch *fps, fps_u32 key_class, fps_u64 ts);
extern fps_u64 fps_floor(FPSketch *fps);
extern fps_u64 fps_key_floor(FPSketch *fps, fps_u64 key);
extern fps_u64 fps_max_floor(FPSketch *fps);
extern fps_u64 fps_capacity(FPSketch *fps);
extern fps_u64 fps_max_timestamp(FPSketch *fps);

extern void fps_get_stats(FPSketch *fps, FpsStats *stats);
extern void fps_reset_stats(FPSketch *fps);

/* Consistency check of the table's structure; NULL if fine, else a reason. */
extern const char *fps_check_structure(FPSketch *fps);

static inline fps_u64
fps_entry_load(const FpsEntry *entry)
{
	return fps_atomic_load((volatile fps_u64 *) &entry->word);
}

static inline fps_u64
fps_entry_committers_load(const FpsEntry *entry)
{
	return fps_atomic_load((volatile fps_u64 *) &entry->committers);
}

/* Returns the committer word after adding delta. */
static inline fps_u64
fps_entry_committers_add(FpsEntry *entry, fps_u64 delta)
{
	return fps_atomic_add(&entry->committers, delta);
}

/* The only way a pinned entry changes.  On failure *expected is refreshed. */
static inline bool
fps_entry_cas(FpsEntry *entry, fps_u64 *expected, fps_u64 desired)
{
	return fps_atomic_cas(&entry->word, expected, desired);
}

static inline fps_u64
fps_entry_readers_rts_load(const FpsEntry *entry)
{
	return fps_atomic_load((volatile fps_u64 *) &entry->readers_rts);
}

static inline void
fps_entry_set_lock_owner(FpsEntry *entry, fps_u32 owner)
{
	*(volatile fps_u32 *) &entry->lock_owner = owner;
}

static inline fps_u32
fps_entry_lock_owner(const FpsEntry *entry)
{
	return *(volatile const fps_u32 *) &entry->lock_owner;
}

/* replaced_wts of an entry no install has replaced a version of yet */
#define FPS_NO_WTS			UINT64_MAX

/*
 * Install a new version over an entry whose lock bit the caller holds,
 * leaving a record of the version it replaces: a reader of that version can
 * then tell whether it was still current at a timestamp after its rts (see
 * fps_entry_replaced_after).  The record is stored before the word, and
 * installs over one entry are serialized by its lock bit.
 *
 * The word's wts is not the record: an rts extension past FPS_MAX_DELTA
 * moves it up with no new version (fps_word_make).  installed_wts is the
 * wts this install gave.  A seed stores the wts it seeds before any move,
 * the floor raises it with the word's (apply_floor), and a writer that
 * does not install raises it before its CAS (fps_entry_raise_written): in
 * an entry that only installs change, as TicToc's row keys, it never
 * exceeds the word's wts.
 */
static inline void
fps_entry_install(FpsEntry *entry, fps_u64 wts, fps_u64 rts)
{
	fps_atomic_store(&entry->replaced_wts, fps_atomic_load(&entry->installed_wts));
	fps_atomic_store(&entry->installed_wts, wts);
	fps_atomic_store(&entry->word, fps_word_make(false, wts, rts));
}

/*
 * Was the version a reader observed as the word observed replaced since,
 * given the word cur it loads now?  A wts that moved is not enough: an rts
 * extension past FPS_MAX_DELTA moves it with no install, and on a row that
 * every transaction reads and none writes (a warehouse's tax) that happens
 * at every extension once the timestamps have gone FPS_MAX_DELTA past the
 * last write.  An install since the observation gave the entry a wts above
 * the rts observed (its writer locked the key after the read, which waits
 * out a locked key, and commits above the rts it then finds), while every
 * install before it gave at most the wts observed.  cur is loaded first:
 * an install that cur shows has stored installed_wts before it.
 */
static inline bool
fps_entry_overwritten(const FpsEntry *entry, fps_u64 observed, fps_u64 cur)
{
	if (fps_word_wts(cur) == fps_word_wts(observed))
		return false;
	return fps_atomic_load((volatile fps_u64 *) &entry->installed_wts) >
		fps_word_wts(observed);
}

/*
 * The wts the entry's last write gave, at most: what a timestamp-ordering
 * check (STO's read or write too late) compares a transaction's ts with,
 * given the word it loaded.  The word's wts is at least that too, but an rts
 * extension past FPS_MAX_DELTA moves it up with no write (fps_word_make):
 * on a row that younger transactions read and none writes, every older
 * transaction would fail at the row once its readers had gone FPS_MAX_DELTA
 * past the last write.  installed_wts is never below the wts of any write
 * that the word shows (each raises it before the word shows the write, and
 * word is loaded first), nor below a seed's wts (an over-approximation of
 * the sketch's) or the floor applied; the word's wts is never below either:
 * the smaller of the two bounds the last write all the same.  A write that
 * raised installed_wts but lost its CAS stays in it: conservative, like an
 * aborted writer's wts that STO keeps in the word.  Only for entries whose
 * every write announces itself so (STO's and MVTO's all do); TicToc's
 * committing inserters raise the word's wts alone, and TicToc asks
 * fps_entry_overwritten() instead.
 */
static inline fps_u64
fps_entry_written_wts(const FpsEntry *entry, fps_u64 word)
{
	fps_u64		written;

	/*
	 * A move leaves the delta full, and only a write empties it again: below
	 * that, the word's wts is a write's (and STO reads every row through here)
	 */
	if ((word & FPS_MAX_DELTA) != FPS_MAX_DELTA)
		return fps_word_wts(word);
	written = fps_atomic_load((volatile fps_u64 *) &entry->installed_wts);
	return written < fps_word_wts(word) ? written : fps_word_wts(word);
}

/*
 * A write that does not go through fps_entry_install() (STO's dirty mark,
 * its commit, a predicate write, a prepared transaction's relock) announces
 * its wts here before the CAS that shows it in the word, so that whoever
 * loads that word then finds installed_wts at least as high.  Atomic max:
 * writers of predicate keys do not exclude one another.
 */
static inline void
fps_entry_raise_written(FpsEntry *entry, fps_u64 wts)
{
	fps_atomic_max(&entry->installed_wts, wts);
}

/*
 * Was the version whose wts a reader observed as version_wts replaced by a
 * version with wts > ts, so that it was the entry's version at ts?  Asked of
 * an entry fps_entry_overwritten() found overwritten since, with ts at least
 * version_wts.  The last install replaced the version observed if the
 * version it replaced was installed at no more than version_wts (later
 * installs give more than the rts observed; a seed counts as installed at
 * the wts it seeded, at most the word's wts, as does the floor applied).
 * The loads run in the reverse order of fps_entry_install's stores: a torn
 * read pairs an older installed_wts with a newer replaced_wts, which is that
 * older install's wts; if that is at most version_wts, the older install
 * came before the observation and ts, at least version_wts, is not below it.
 */
static inline bool
fps_entry_replaced_after(const FpsEntry *entry, fps_u64 version_wts, fps_u64 ts)
{
	fps_u64		installed = fps_atomic_load((volatile fps_u64 *) &entry->installed_wts);

	return fps_atomic_load((volatile fps_u64 *) &entry->replaced_wts) <= version_wts &&
		ts < installed;
}

#endif							/* FPSKETCH_H */
