/*-------------------------------------------------------------------------
 *
 * gap_levels.c
 *	  Which levels of which indexes gap scans read, so that writers walk
 *	  only those (am/gap.c).
 *
 * A writer's walk costs an index descent, and a key for each entry and
 * level (prefix length p) it passes.  Most levels of most indexes are never
 * read by a gap scan: TPC-C's New-Order inserts ten order lines, which
 * Delivery, Order-Status and Stock-Level read under two of the index's four
 * prefixes, and nobody at all in a New-Order + Payment mix.  So a gap scan
 * at level p of an index marks p here, and a writer walks only the marked
 * levels; for each other level it writes that level's escalation key
 * ESC(index, p) instead, once.  Every gap scan at level p reads ESC(index,
 * p) (am/predicate.c, with the snapshot rules of a prefix key).
 *
 * Correctness does not depend on what this table says, or when: for each
 * level, a writer either walks it (always enough, gap.c's header) or
 * writes the key every reader of the level reads; a walker of p also
 * follows ESC(index, p), since its walk may stop at the entry of a writer
 * that did not walk p (gap.c's header).  A writer that read the mask just
 * before a reader marked the level wrote ESC(index, p), and the two
 * conflict there like any writer and reader of one key.  So the table
 * is read without a lock, and a lost mark only costs precision.
 *
 * A mark lasts fpsketch.gap_level_lifetime after the last gap scan of the
 * level: one ad-hoc range scan must not make every later writer of the
 * index walk until restart.  A level that expires under a reader still in
 * progress is again covered by ESC(index, p), which that reader read: the
 * cost is a possible abort, as for a writer that read the mask just before
 * the mark.  Entries themselves stay (a dropped index's entry until
 * restart; a later index given the same OID inherits live marks, which
 * only makes its writers walk more).  When the table is full, an index
 * without an entry counts as read at every level: its writers walk as if
 * this table did not exist.
 *
 * Shared state: an open-addressing table of (database, index) -> the
 * levels ever read and when each was last read, entries added under a
 * spinlock, read and refreshed without it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "am.h"
#include "../fpsketch_am.h"

/* Slots of the table; filled to three quarters at most. */
#define FPS_GAP_LEVEL_SLOTS 8192

/* Levels p = 0 .. 31: an equality prefix of fewer than INDEX_MAX_KEYS */
#define FPS_GAP_LEVELS 32

typedef struct GapLevelSlot
{
	pg_atomic_uint64 tag;		/* database << 32 | index; 0: free */
	pg_atomic_uint32 levels;	/* bit p: a gap scan read level p, ever */
	/* second (since the table's epoch) of level p's last read noted */
	pg_atomic_uint32 read_at[FPS_GAP_LEVELS];
} GapLevelSlot;

typedef struct GapLevels
{
	slock_t		mutex;			/* adding an entry */
	int			nused;
	TimestampTz epoch;			/* read_at counts seconds from here */
	GapLevelSlot slots[FPS_GAP_LEVEL_SLOTS];
} GapLevels;

static GapLevels *gap_levels = NULL;

Size
fps_gap_levels_shmem_size(void)
{
	return sizeof(GapLevels);
}

/* In shmem_startup_hook, under AddinShmemInitLock. */
void
fps_gap_levels_shmem_init(void)
{
	bool		found;

	gap_levels = ShmemInitStruct("fpsketch gap levels", sizeof(GapLevels), &found);
	if (!found)
	{
		SpinLockInit(&gap_levels->mutex);
		gap_levels->nused = 0;
		gap_levels->epoch = GetCurrentTimestamp();
		for (int i = 0; i < FPS_GAP_LEVEL_SLOTS; i++)
		{
			pg_atomic_init_u64(&gap_levels->slots[i].tag, 0);
			pg_atomic_init_u32(&gap_levels->slots[i].levels, 0);
			for (int p = 0; p < FPS_GAP_LEVELS; p++)
				pg_atomic_init_u32(&gap_levels->slots[i].read_at[p], 0);
		}
	}
}

/* Seconds since the table's epoch, now. */
static uint32
seconds_now(void)
{
	TimestampTz now = GetCurrentTimestamp();

	if (now <= gap_levels->epoch)
		return 0;
	return (uint32) Min((now - gap_levels->epoch) / USECS_PER_SEC, (int64) PG_UINT32_MAX);
}

static inline uint64
level_tag(Oid indexoid)
{
	return ((uint64) MyDatabaseId << 32) | indexoid;
}

/* The index's slot, or NULL; add: create it if there is room. */
static GapLevelSlot *
find_slot(Oid indexoid, bool add)
{
	uint64		tag = level_tag(indexoid);
	uint32		start = hash_bytes_uint32((uint32) (tag ^ (tag >> 32))) % FPS_GAP_LEVEL_SLOTS;
	uint32		i = start;

	for (;;)
	{
		GapLevelSlot *slot = &gap_levels->slots[i];
		uint64		seen = pg_atomic_read_u64(&slot->tag);

		if (seen == tag)
			return slot;
		if (seen == 0)
			break;
		i = (i + 1) % FPS_GAP_LEVEL_SLOTS;
		if (i == start)
			return NULL;
	}
	if (!add)
		return NULL;

	SpinLockAcquire(&gap_levels->mutex);
	for (i = start;; i = (i + 1) % FPS_GAP_LEVEL_SLOTS)
	{
		GapLevelSlot *slot = &gap_levels->slots[i];
		uint64		seen = pg_atomic_read_u64(&slot->tag);

		if (seen == tag)
			break;
		if (seen == 0)
		{
			if (gap_levels->nused >= FPS_GAP_LEVEL_SLOTS / 4 * 3)
			{
				SpinLockRelease(&gap_levels->mutex);
				return NULL;
			}
			gap_levels->nused++;
			/* levels before tag: a reader that finds the tag finds levels */
			pg_atomic_write_u32(&slot->levels, 0);
			for (int p = 0; p < FPS_GAP_LEVELS; p++)
				pg_atomic_write_u32(&slot->read_at[p], 0);
			pg_write_barrier();
			pg_atomic_write_u64(&slot->tag, tag);
			break;
		}
	}
	SpinLockRelease(&gap_levels->mutex);
	return &gap_levels->slots[i];
}

/*
 * A gap scan reads level nprefix of the index: mark it, so that writers
 * walk it for fpsketch.gap_level_lifetime from now on.  The time is
 * rewritten only once it is a second old (its resolution), so that scans
 * of one level by many backends do not all write one cache line.  Not
 * later: each writer judges it by its own session's lifetime, which may
 * be shorter than the scanner's (a scanner with a day would otherwise
 * leave the time of its scans unnoted for three hours).
 */
void
fps_gap_level_read(Oid indexoid, int nprefix)
{
	GapLevelSlot *slot;
	uint32		bit = (uint32) 1 << nprefix;
	uint32		now;

	Assert(nprefix >= 0 && nprefix < FPS_GAP_LEVELS);
	if (gap_levels == NULL)
		return;
	slot = find_slot(indexoid, true);
	if (slot == NULL)
		return;
	/* 0 means never: second 0 of the epoch is noted as 1 */
	now = Max(seconds_now(), 1);
	if ((int64) now - (int64) pg_atomic_read_u32(&slot->read_at[nprefix]) >= 1)
		pg_atomic_write_u32(&slot->read_at[nprefix], now);
	if ((pg_atomic_read_u32(&slot->levels) & bit) == 0)
		pg_atomic_fetch_or_u32(&slot->levels, bit);
}

/*
 * The levels of the index that a writer walks: those gap scans have read
 * within fpsketch.gap_level_lifetime (ever, if it is -1), or all of them if
 * the table has no room for the index.
 */
uint32
fps_gap_levels_walked(Oid indexoid)
{
	GapLevelSlot *slot;
	uint32		levels;
	uint32		live = 0;
	uint32		now;

	if (gap_levels == NULL)
		return ~(uint32) 0;
	slot = find_slot(indexoid, true);
	if (slot == NULL)
		return ~(uint32) 0;
	levels = pg_atomic_read_u32(&slot->levels);
	if (levels == 0 || fps_gap_level_lifetime_s < 0)
		return levels;
	/* as fps_gap_level_read notes it: lifetime 0 then never walks */
	now = Max(seconds_now(), 1);
	for (int p = 0; p < FPS_GAP_LEVELS; p++)
	{
		if ((levels & ((uint32) 1 << p)) == 0)
			continue;
		/* a read noted after our clock reading counts as live too */
		if ((int64) now - (int64) pg_atomic_read_u32(&slot->read_at[p]) <
			(int64) fps_gap_level_lifetime_s)
			live |= (uint32) 1 << p;
	}
	return live;
}
