/*-------------------------------------------------------------------------
 *
 * fpsketch.c
 *	  FPSketch core: exact table of pinned keys + count-min timestamp sketch.
 *
 * See fpsketch.h for the invariants and the locking protocol.  In short:
 * partition spinlock => bucket chains, free list, refcount, in_use, CLOCK
 * state and partition counters; atomics => entry words, sketch cells, the
 * floor and the global occupancy counters.
 *
 *-------------------------------------------------------------------------
 */
#include "fpsketch.h"

#include <string.h>
#ifdef FPS_BROKEN_MERGE_ORDER
#include <sched.h>
#endif

#define XXH_INLINE_ALL
#include <xxhash.h>

#define FPS_PARTITIONS		64
#define FPS_MAX_ROWS		16
#define FPS_CACHELINE		64

typedef struct FpsCell
{
	volatile fps_u64 wts;
	volatile fps_u64 rts;
} FpsCell;

typedef struct FpsPartition
{
	fps_spinlock mutex;
	fps_i32		freelist;
	fps_u32		first;			/* first entry index owned */
	fps_u32		nentries;		/* entries owned */
	fps_u32		clock_hand;		/* offset within the owned entries */
	fps_u32		nbuckets;		/* power of two */
	fps_i32    *buckets;
	/* counters, under mutex */
	fps_u64		increfs;
	fps_u64		decrefs;
	fps_u64		seeds;
	fps_u64		merges;
	fps_u64		evictions;
	fps_u64		table_full;
	fps_u64		lock_leaks;
	char		pad[FPS_CACHELINE];
} FpsPartition;

struct FPSketch
{
	FpsConfig	config;
	fps_u32		npartitions;
	fps_u64		table_seed;
	fps_u64		row_seed[FPS_MAX_ROWS];
	FpsPartition *partitions;
	FpsEntry   *entries;
	FpsCell    *cells;
	volatile fps_u64 *readers;	/* rows x readers_cols readers_rts cells */
	/* atomics */
	volatile fps_u64 floor_ts;
	volatile fps_u64 class_floor_max;	/* the largest class floor */
	volatile fps_u64 class_floor[FPS_KEY_CLASSES];
	volatile fps_u64 nused;
	volatile fps_u64 nused_hwm;
	volatile fps_u64 npinned;
	volatile fps_u64 npinned_hwm;
};

static fps_u64
align_up(fps_u64 n)
{
	return (n + FPS_CACHELINE - 1) & ~((fps_u64) FPS_CACHELINE - 1);
}

static fps_u32
partitions_for(const FpsConfig *config)
{
	fps_u32		n = FPS_PARTITIONS;

	/*
	 * Free entries are per partition, so a partition must own enough of them
	 * that a few unlucky hashes cannot exhaust it while the table as a whole
	 * has room: at least 64 each.
	 */
	while (n > 1 && config->max_entries / n < 64)
		n /= 2;
	return n;
}

/*
 * At least two buckets per entry: a table that keeps unpinned entries is
 * always full, and every lookup of a new key walks a whole chain, every
 * eviction its victim's chain up to the victim, each step a cache miss.
 */
static fps_u32
buckets_per_partition(const FpsConfig *config, fps_u32 npart)
{
	fps_u32		per = (config->max_entries + npart - 1) / npart;
	fps_u32		nb = 1;

	while (nb < 2 * per)
		nb <<= 1;
	return nb;
}

static fps_u32
rows_of(const FpsConfig *config)
{
	if (config->variant == FPS_VARIANT_FOCUS_COUNTER)
		return 1;
	return config->sketch_rows < FPS_MAX_ROWS ? config->sketch_rows : FPS_MAX_ROWS;
}

static fps_u32
cols_of(const FpsConfig *config)
{
	if (config->variant == FPS_VARIANT_FOCUS_COUNTER)
		return 1;
	return config->sketch_cols > 0 ? config->sketch_cols : 1;
}

/* The readers cells take an eighth of the columns: few keys have readers. */
fps_u32
fps_readers_cols(fps_u32 sketch_cols)
{
	return sketch_cols >= 16 ? sketch_cols / 8 : 1;
}

static fps_u32
readers_cols_of(const FpsConfig *config)
{
	if (config->variant == FPS_VARIANT_FOCUS_COUNTER)
		return 1;
	return config->readers_cols > 0 ? config->readers_cols :
		fps_readers_cols(cols_of(config));
}

static fps_u64
cells_bytes(fps_u32 rows, fps_u32 cols, fps_u32 readers_cols)
{
	return (fps_u64) rows * (sizeof(FpsCell) * cols + sizeof(fps_u64) * readers_cols);
}

/*
 * The widest sketch (both kinds of cells, readers_cols from
 * fps_readers_cols) that fits in bytes; at least one column.
 */
fps_u32
fps_sketch_cols_for_bytes(fps_u64 bytes, fps_u32 rows)
{
	fps_u64		cols = bytes / ((fps_u64) rows * (sizeof(FpsCell) + sizeof(fps_u64)));

	if (cols < 1)
		cols = 1;
	while (cols < UINT32_MAX &&
		   cells_bytes(rows, (fps_u32) cols + 1, fps_readers_cols((fps_u32) cols + 1)) <= bytes)
		cols++;
	return (fps_u32) cols;
}

fps_u64
fps_shmem_size(const FpsConfig *config)
{
	fps_u32		npart = partitions_for(config);
	fps_u64		size;

	size = align_up(sizeof(FPSketch));
	size += align_up(sizeof(FpsPartition) * npart);
	size += align_up(sizeof(fps_i32) * (fps_u64) buckets_per_partition(config, npart) * npart);
	size += align_up(sizeof(FpsEntry) * (fps_u64) config->max_entries);
	size += align_up(sizeof(FpsCell) * (fps_u64) rows_of(config) * cols_of(config));
	size += align_up(sizeof(fps_u64) * (fps_u64) rows_of(config) * readers_cols_of(config));
	return size + FPS_CACHELINE;	/* slack to align the start */
}

static fps_u64
splitmix64(fps_u64 *state)
{
	fps_u64		z = (*state += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

FPSketch *
fps_create(void *mem, const FpsConfig *config)
{
	char	   *p = (char *) align_up((fps_u64) (uintptr_t) mem);
	FPSketch   *fps = (FPSketch *) p;
	fps_u32		npart = partitions_for(config);
	fps_u32		nbuckets = buckets_per_partition(config, npart);
	fps_u64		seed = config->seed;
	fps_u32		i;

	memset(fps, 0, sizeof(FPSketch));
	fps->config = *config;
	fps->config.sketch_rows = rows_of(config);
	fps->config.sketch_cols = cols_of(config);
	fps->config.readers_cols = readers_cols_of(config);
	fps->npartitions = npart;
	fps->table_seed = splitmix64(&seed);
	for (i = 0; i < FPS_MAX_ROWS; i++)
		fps->row_seed[i] = splitmix64(&seed);

	p += align_up(sizeof(FPSketch));
	fps->partitions = (FpsPartition *) p;
	p += align_up(sizeof(FpsPartition) * npart);
	{
		fps_i32    *buckets = (fps_i32 *) p;

		p += align_up(sizeof(fps_i32) * (fps_u64) nbuckets * npart);
		fps->entries = (FpsEntry *) p;
		p += align_up(sizeof(FpsEntry) * (fps_u64) config->max_entries);
		fps->cells = (FpsCell *) p;
		memset(fps->cells, 0,
			   sizeof(FpsCell) * (fps_u64) fps->config.sketch_rows * fps->config.sketch_cols);
		p += align_up(sizeof(FpsCell) * (fps_u64) fps->config.sketch_rows * fps->config.sketch_cols);
		fps->readers = (volatile fps_u64 *) p;
		memset((void *) fps->readers, 0,
			   sizeof(fps_u64) * (fps_u64) fps->config.sketch_rows * fps->config.readers_cols);

		for (i = 0; i < npart; i++)
		{
			FpsPartition *part = &fps->partitions[i];
			fps_u32		first = (fps_u32) ((fps_u64) config->max_entries * i / npart);
			fps_u32		last = (fps_u32) ((fps_u64) config->max_entries * (i + 1) / npart);
			fps_u32		j;

			memset(part, 0, sizeof(FpsPartition));
			fps_spin_init(&part->mutex);
			part->first = first;
			part->nentries = last - first;
			part->nbuckets = nbuckets;
			part->buckets = buckets + (fps_u64) nbuckets * i;
			for (j = 0; j < nbuckets; j++)
				part->buckets[j] = -1;
			part->freelist = -1;
			for (j = last; j > first; j--)
			{
				FpsEntry   *e = &fps->entries[j - 1];

				memset(e, 0, sizeof(FpsEntry));
				e->partition = i;
				e->next = part->freelist;
				part->freelist = (fps_i32) (j - 1);
			}
		}
	}
	return fps;
}

/* The structure fps_create() placed in mem (for processes that attach). */
FPSketch *
fps_attach(void *mem)
{
	return (FPSketch *) align_up((fps_u64) (uintptr_t) mem);
}

/* ---- the peripheral region ---- */

static inline fps_u64
row_hash(FPSketch *fps, fps_u32 row, fps_u64 key)
{
	return XXH3_64bits_withSeed(&key, sizeof(key), fps->row_seed[row]);
}

static inline FpsCell *
sketch_cell(FPSketch *fps, fps_u32 row, fps_u64 h)
{
	return &fps->cells[(fps_u64) row * fps->config.sketch_cols + h % fps->config.sketch_cols];
}

static inline volatile fps_u64 *
readers_cell(FPSketch *fps, fps_u32 row, fps_u64 h)
{
	return &fps->readers[(fps_u64) row * fps->config.readers_cols + h % fps->config.readers_cols];
}

void
fps_sketch_put(FPSketch *fps, fps_u64 key, fps_u64 wts, fps_u64 rts)
{
	fps_u32		r;

	for (r = 0; r < fps->config.sketch_rows; r++)
	{
		FpsCell    *cell = sketch_cell(fps, r, row_hash(fps, r, key));

		fps_atomic_max(&cell->wts, wts);
		fps_atomic_max(&cell->rts, rts);
	}
}

/* PUT of an entry: its word into the cells, its readers_rts beside them. */
static void
sketch_merge(FPSketch *fps, fps_u64 key, fps_u64 word, fps_u64 readers_rts)
{
	fps_u32		r;

	for (r = 0; r < fps->config.sketch_rows; r++)
	{
		fps_u64		h = row_hash(fps, r, key);
		FpsCell    *cell = sketch_cell(fps, r, h);

		fps_atomic_max(&cell->wts, fps_word_wts(word));
		fps_atomic_max(&cell->rts, fps_word_rts(word));
		fps_atomic_max(readers_cell(fps, r, h), readers_rts);
	}
}

void
fps_sketch_get(FPSketch *fps, fps_u64 key, fps_u64 *wts, fps_u64 *rts)
{
	fps_u64		w = UINT64_MAX;
	fps_u64		r = UINT64_MAX;
	fps_u32		row;

	for (row = 0; row < fps->config.sketch_rows; row++)
	{
		FpsCell    *cell = sketch_cell(fps, row, row_hash(fps, row, key));
		fps_u64		cw = fps_atomic_load(&cell->wts);
		fps_u64		cr = fps_atomic_load(&cell->rts);

		if (cw < w)
			w = cw;
		if (cr < r)
			r = cr;
	}
	/* per-field minima may come from different cells: restore wts <= rts */
	if (r < w)
		r = w;
	*wts = w;
	*rts = r;
}

/* GET of a key's readers_rts: the MIN over the rows of its readers cells. */
fps_u64
fps_readers_get(FPSketch *fps, fps_u64 key)
{
	fps_u64		r = UINT64_MAX;
	fps_u32		row;

	for (row = 0; row < fps->config.sketch_rows; row++)
	{
		fps_u64		c = fps_atomic_load(readers_cell(fps, row, row_hash(fps, row, key)));

		if (c < r)
			r = c;
	}
	return r;
}

void
fps_raise_floor(FPSketch *fps, fps_u64 ts)
{
	fps_atomic_max(&fps->floor_ts, ts);
}

/*
 * The class's floor first: a pin that sees the new class_floor_max then
 * finds the class floor raised (key_floor loads them in the other order).
 */
void
fps_raise_class_floor(FPSketch *fps, fps_u32 key_class, fps_u64 ts)
{
	fps_atomic_max(&fps->class_floor[key_class % FPS_KEY_CLASSES], ts);
	fps_atomic_max(&fps->class_floor_max, ts);
}

/* The floor under key's timestamps: the global one or its class's. */
static inline fps_u64
key_floor(FPSketch *fps, fps_u64 key)
{
	fps_u64		floor_ts = fps_atomic_load(&fps->floor_ts);

	if (fps_atomic_load(&fps->class_floor_max) > floor_ts)
	{
		fps_u64		class_floor = fps_atomic_load(&fps->class_floor[fps_key_class(key)]);

		if (class_floor > floor_ts)
			floor_ts = class_floor;
	}
	return floor_ts;
}

fps_u64
fps_key_floor(FPSketch *fps, fps_u64 key)
{
	return key_floor(fps, key);
}

/* The largest floor of any key. */
fps_u64
fps_max_floor(FPSketch *fps)
{
	fps_u64		floor_ts = fps_atomic_load(&fps->floor_ts);
	fps_u64		class_floor = fps_atomic_load(&fps->class_floor_max);

	return class_floor > floor_ts ? class_floor : floor_ts;
}

/* The exact table's number of entries (max_entries). */
fps_u64
fps_capacity(FPSketch *fps)
{
	return fps->config.max_entries;
}

fps_u64
fps_floor(FPSketch *fps)
{
	return fps_atomic_load(&fps->floor_ts);
}

/*
 * An upper bound of every timestamp stored anywhere right now.  Scans the
 * whole structure: only for rare events (DDL, bulk loads).
 */
fps_u64
fps_max_timestamp(FPSketch *fps)
{
	fps_u64		max_ts = fps_max_floor(fps);
	fps_u64		ncells = (fps_u64) fps->config.sketch_rows * fps->config.sketch_cols;
	fps_u64		nreaders = (fps_u64) fps->config.sketch_rows * fps->config.readers_cols;
	fps_u64		i;

	for (i = 0; i < ncells; i++)
		if (fps_atomic_load(&fps->cells[i].rts) > max_ts)
			max_ts = fps_atomic_load(&fps->cells[i].rts);
	for (i = 0; i < nreaders; i++)
		if (fps_atomic_load(&fps->readers[i]) > max_ts)
			max_ts = fps_atomic_load(&fps->readers[i]);
	for (i = 0; i < fps->config.max_entries; i++)
	{
		fps_u64		rts = fps_word_rts(fps_entry_load(&fps->entries[i]));
		fps_u64		readers_rts = fps_entry_readers_rts_load(&fps->entries[i]);

		if (rts > max_ts)
			max_ts = rts;
		if (readers_rts > max_ts)
			max_ts = readers_rts;
	}
	return max_ts;
}

/* ---- the foveated region ---- */

static inline fps_u64
table_hash(FPSketch *fps, fps_u64 key)
{
	return XXH3_64bits_withSeed(&key, sizeof(key), fps->table_seed);
}

static inline void
note_max(volatile fps_u64 *hwm, fps_u64 v)
{
	fps_atomic_max(hwm, v);
}

/*
 * Timestamps of an unpinned key must be at least the floor (raised by
 * transactions whose writes bypassed per-key tracking).  Only called while
 * nobody pins the entry, so a plain store is enough.
 *
 * The floor stands for a write at floor_ts, so the written wts goes up to
 * it even when the word's wts is above it already: a wts moved by rts
 * extensions (fps_word_make) is no write, and fps_entry_written_wts() must
 * not find one below the floor.  Raised first, as a write does.
 */
static void
apply_floor(FPSketch *fps, FpsEntry *e)
{
	fps_u64		floor_ts = key_floor(fps, e->key);
	fps_u64		word = fps_atomic_load(&e->word);
	fps_u64		wts = fps_word_wts(word);
	fps_u64		rts = fps_word_rts(word);

	fps_entry_raise_written(e, floor_ts);
	if (wts < floor_ts)
	{
		fps_atomic_store(&e->word, fps_word_make(false, floor_ts, rts > floor_ts ? rts : floor_ts));
		fps_atomic_max(&e->readers_rts, floor_ts);
	}
}

/*
 * Merge an unpinned entry into the sketch and unlink it.  Partition lock held.
 *
 * FPS_BROKEN_MERGE_ORDER exists only for the standalone test's proof that it
 * has teeth: it skips the merge here, and fps_decref() merges after releasing
 * the lock, reopening the window in which a key is in neither region.
 */
static void
merge_and_unlink(FPSketch *fps, FpsPartition *part, FpsEntry *e, fps_u32 bucket)
{
	fps_i32		idx = (fps_i32) (e - fps->entries);
	fps_i32    *link = &part->buckets[bucket];

#ifndef FPS_BROKEN_MERGE_ORDER
	/* merge first: from now on a reseed sees at least these values */
	sketch_merge(fps, e->key, fps_atomic_load(&e->word),
				 fps_atomic_load(&e->readers_rts));
#endif
	part->merges++;

	while (*link != idx)
		link = &fps->entries[*link].next;
	*link = e->next;
	e->in_use = 0;
	e->next = part->freelist;
	part->freelist = idx;
	fps_atomic_sub(&fps->nused, 1);
}

/* CLOCK over the partition's unpinned entries (fps_evicts_by_clock). */
static bool
clock_evict(FPSketch *fps, FpsPartition *part)
{
	fps_u32		sweep;

	for (sweep = 0; sweep < 2 * part->nentries; sweep++)
	{
		FpsEntry   *e = &fps->entries[part->first + part->clock_hand];

		part->clock_hand = (part->clock_hand + 1) % part->nentries;
		if (!e->in_use || e->refcount > 0)
			continue;
		if (e->clock_ref)
		{
			e->clock_ref = 0;
			continue;
		}
		merge_and_unlink(fps, part, e,
						 (fps_u32) (table_hash(fps, e->key) >> 32) & (part->nbuckets - 1));
		part->evictions++;
		return true;
	}
	return false;
}

FpsEntry *
fps_incref(FPSketch *fps, fps_u64 key)
{
	fps_u64		h = table_hash(fps, key);
	FpsPartition *part = &fps->partitions[h % fps->npartitions];
	fps_u32		bucket = (fps_u32) (h >> 32) & (part->nbuckets - 1);
	fps_i32		idx;
	FpsEntry   *e;
	fps_u64		wts,
				rts,
				floor_ts;

	fps_spin_acquire(&part->mutex);
	part->increfs++;
	for (idx = part->buckets[bucket]; idx >= 0; idx = fps->entries[idx].next)
	{
		e = &fps->entries[idx];
		if (e->key == key)
		{
			if (e->refcount++ == 0)
			{
				apply_floor(fps, e);
				note_max(&fps->npinned_hwm, fps_atomic_add(&fps->npinned, 1));
			}
			e->clock_ref = 1;
			fps_spin_release(&part->mutex);
			return e;
		}
	}

	if (part->freelist < 0 &&
		!(fps_evicts_by_clock(fps->config.variant, fps->config.eviction) &&
		  clock_evict(fps, part)))
	{
		part->table_full++;
		fps_spin_release(&part->mutex);
		return NULL;
	}

	idx = part->freelist;
	e = &fps->entries[idx];
	part->freelist = e->next;

	/* seed from the sketch: an over-approximation, never less than PUT */
	fps_sketch_get(fps, key, &wts, &rts);
	floor_ts = key_floor(fps, key);
	if (wts < floor_ts)
		wts = floor_ts;
	e->key = key;
	fps_atomic_store(&e->replaced_wts, FPS_NO_WTS);

	/*
	 * The written wts: the seeded wts, before fps_word_make() moves it up
	 * for an rts the delta cannot reach (the rts GET found may be another
	 * key's that shares the cells): an over-approximation of the key's last
	 * write all the same (fps_entry_written_wts).
	 */
	fps_atomic_store(&e->installed_wts, wts);
	fps_atomic_store(&e->word, fps_word_make(false, wts, rts));
	fps_atomic_store(&e->committers, 0);
	wts = fps_readers_get(fps, key);
	fps_atomic_store(&e->readers_rts, wts > floor_ts ? wts : floor_ts);
	fps_entry_set_lock_owner(e, 0);
	e->refcount = 1;
	e->in_use = 1;
	e->clock_ref = 1;
	e->next = part->buckets[bucket];
	part->buckets[bucket] = idx;
	part->seeds++;
	note_max(&fps->nused_hwm, fps_atomic_add(&fps->nused, 1));
	note_max(&fps->npinned_hwm, fps_atomic_add(&fps->npinned, 1));
	fps_spin_release(&part->mutex);
	return e;
}

void
fps_decref(FPSketch *fps, FpsEntry *e)
{
	FpsPartition *part = &fps->partitions[e->partition];
#ifdef FPS_BROKEN_MERGE_ORDER
	fps_u64		late_key = 0,
				late_word = 0,
				late_readers = 0;
	bool		late_merge = false;
#endif

	fps_spin_acquire(&part->mutex);
	part->decrefs++;
	if (--e->refcount == 0)
	{
		fps_u64		word = fps_atomic_load(&e->word);

		fps_atomic_sub(&fps->npinned, 1);

		/*
		 * A lock bit must not outlive the last pin (the protocols release
		 * before unpinning); count it as a leak and never let it reach the
		 * sketch.
		 */
		if (fps_word_locked(word))
		{
			part->lock_leaks++;
			fps_entry_set_lock_owner(e, 0);
			fps_atomic_store(&e->word, word & ~FPS_LOCK_BIT);
		}
		if (fps_committers(fps_atomic_load(&e->committers)) != 0)
		{
			part->lock_leaks++;
			fps_atomic_store(&e->committers, 0);
		}
		if (fps_evicts_on_unpin(fps->config.variant, fps->config.eviction))
		{
#ifdef FPS_BROKEN_MERGE_ORDER
			late_merge = true;
			late_key = e->key;
			late_word = fps_atomic_load(&e->word);
			late_readers = fps_atomic_load(&e->readers_rts);
#endif
			merge_and_unlink(fps, part, e,
							 (fps_u32) (table_hash(fps, e->key) >> 32) & (part->nbuckets - 1));
		}
	}
	fps_spin_release(&part->mutex);
#ifdef FPS_BROKEN_MERGE_ORDER
	if (late_merge)
	{
		sched_yield();
		sketch_merge(fps, late_key, late_word, late_readers);
	}
#endif
}

/* ---- statistics and checks ---- */

void
fps_get_stats(FPSketch *fps, FpsStats *s)
{
	fps_u32		i;
	fps_u64		ncells = (fps_u64) fps->config.sketch_rows * fps->config.sketch_cols;

	memset(s, 0, sizeof(*s));
	s->variant = fps->config.variant;
	s->eviction = fps->config.eviction;
	s->max_entries = fps->config.max_entries;
	s->sketch_rows = fps->config.sketch_rows;
	s->sketch_cols = fps->config.sketch_cols;
	s->readers_cols = fps->config.readers_cols;
	s->sketch_bytes = cells_bytes(fps->config.sketch_rows, fps->config.sketch_cols,
								  fps->config.readers_cols);
	s->table_bytes = sizeof(FpsEntry) * (fps_u64) fps->config.max_entries +
		sizeof(fps_i32) * (fps_u64) fps->partitions[0].nbuckets * fps->npartitions +
		sizeof(FpsPartition) * fps->npartitions;
	s->entries = fps_atomic_load(&fps->nused);
	s->entries_hwm = fps_atomic_load(&fps->nused_hwm);
	s->pinned = fps_atomic_load(&fps->npinned);
	s->pinned_hwm = fps_atomic_load(&fps->npinned_hwm);
	s->floor_ts = fps_max_floor(fps);
	for (i = 0; i < ncells; i++)
		if (fps_atomic_load(&fps->cells[i].rts) != 0)
			s->sketch_cells_used++;
	for (i = 0; i < fps->npartitions; i++)
	{
		FpsPartition *part = &fps->partitions[i];

		fps_spin_acquire(&part->mutex);
		s->increfs += part->increfs;
		s->decrefs += part->decrefs;
		s->seeds += part->seeds;
		s->merges += part->merges;
		s->evictions += part->evictions;
		s->table_full += part->table_full;
		s->lock_leaks += part->lock_leaks;
		fps_spin_release(&part->mutex);
	}
}

void
fps_reset_stats(FPSketch *fps)
{
	fps_u32		i;

	for (i = 0; i < fps->npartitions; i++)
	{
		FpsPartition *part = &fps->partitions[i];

		fps_spin_acquire(&part->mutex);
		part->increfs = part->decrefs = part->seeds = 0;
		part->merges = part->evictions = part->table_full = 0;
		part->lock_leaks = 0;
		fps_spin_release(&part->mutex);
	}
	fps_atomic_store(&fps->nused_hwm, fps_atomic_load(&fps->nused));
	fps_atomic_store(&fps->npinned_hwm, fps_atomic_load(&fps->npinned));
}

const char *
fps_check_structure(FPSketch *fps)
{
	fps_u32		i;
	fps_u64		used = 0,
				pinned = 0;

	for (i = 0; i < fps->npartitions; i++)
	{
		FpsPartition *part = &fps->partitions[i];
		fps_u32		b,
					chained = 0,
					free_count = 0,
					in_use = 0,
					j;
		fps_i32		idx;

		fps_spin_acquire(&part->mutex);
		for (b = 0; b < part->nbuckets; b++)
			for (idx = part->buckets[b]; idx >= 0; idx = fps->entries[idx].next)
			{
				FpsEntry   *e = &fps->entries[idx];

				if (e->partition != i || !e->in_use ||
					((table_hash(fps, e->key) >> 32) & (part->nbuckets - 1)) != b ||
					fps->partitions[table_hash(fps, e->key) % fps->npartitions].first != part->first)
				{
					fps_spin_release(&part->mutex);
					return "entry chained in the wrong bucket or partition";
				}
				if (++chained > part->nentries)
				{
					fps_spin_release(&part->mutex);
					return "bucket chain longer than the partition";
				}
				if (e->refcount > 0)
					pinned++;
			}
		for (idx = part->freelist; idx >= 0; idx = fps->entries[idx].next)
		{
			if (fps->entries[idx].in_use || ++free_count > part->nentries)
			{
				fps_spin_release(&part->mutex);
				return "free list holds an entry in use or loops";
			}
		}
		for (j = 0; j < part->nentries; j++)
			if (fps->entries[part->first + j].in_use)
				in_use++;
		fps_spin_release(&part->mutex);
		if (in_use != chained || in_use + free_count != part->nentries)
			return "entries lost: neither chained nor free";
		used += in_use;
	}
	if (used != fps_atomic_load(&fps->nused))
		return "occupancy counter disagrees with the table";
	if (pinned != fps_atomic_load(&fps->npinned))
		return "pinned counter disagrees with the table";
	return NULL;
}
