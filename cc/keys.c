/*-------------------------------------------------------------------------
 *
 * keys.c
 *	  Row identity -> 64-bit FPSketch key.
 *
 * A row key is (database, relation OID, logical row identity).  The identity
 * is the primary key's (or the replica identity index's) column values, each
 * hashed by its type's extended hash support function, so equal values give
 * equal keys whatever version or page the row lives in.  Tables without such
 * an index fall back to the tuple version's TID; an UPDATE then writes the old
 * TID's key and the new one.  The relation OID, not the relfilenode, is used:
 * TRUNCATE, CLUSTER and VACUUM FULL change the latter.
 *
 * Per-relation key metadata is reached through rd_amcache, which the
 * relcache frees on every invalidation (so an added primary key is picked
 * up); the metadata itself outlives that until the transaction ends.  A
 * change of key scheme happens under ACCESS EXCLUSIVE lock and raises the
 * FPSketch floor at commit (see txn.c), so keys of the old scheme need not
 * be carried over.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "catalog/pg_index.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "cc.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

/* Distinct seeds keep row, TID and phantom key spaces apart. */
#define FPS_SEED_ROW_KEY	UINT64_C(0x66707320726f7720)
#define FPS_SEED_TID_KEY	UINT64_C(0x6670732074696420)
#define FPS_SEED_REL_KEY	UINT64_C(0x6670732072656c20)
#define FPS_SEED_PREFIX_KEY UINT64_C(0x6670732070726520)
#define FPS_SEED_ESCALATION_KEY UINT64_C(0x6670732065736320)
#define FPS_SEED_GROUP_KEY	UINT64_C(0x6670732067727020)
#define FPS_SEED_GAP_KEY	UINT64_C(0x6670732067617020)
#define FPS_SEED_GAP_END_KEY UINT64_C(0x6670732067656e20)
#define FPS_SEED_GAP_ESCALATION_KEY UINT64_C(0x6670732067657320)
#define FPS_SEED_KEY_CLASS	UINT64_C(0x66707320636c7320)

/*
 * Every key of a relation (rows, column groups, predicates of the relation
 * and of its indexes) is in the relation's key class, so that a floor
 * raised for the relation's untracked writes (fps_raise_class_floor) covers
 * them all and leaves the keys of nearly every other relation alone.
 */
static fps_u64 relation_hash(Oid relid, fps_u64 seed);

uint32
fps_relation_key_class(Oid relid)
{
	return fps_key_class(relation_hash(relid, FPS_SEED_KEY_CLASS));
}

/* The key of a row's column group: group 0 is the row key itself. */
fps_u64
fps_group_key(fps_u64 row_key, int group)
{
	struct
	{
		fps_u64		row_key;
		int32		group;
	}			buf;

	if (group == 0)
		return row_key;
	memset(&buf, 0, sizeof(buf));
	buf.row_key = row_key;
	buf.group = group;
	return fps_key_in_class(XXH3_64bits_withSeed(&buf, sizeof(buf), FPS_SEED_GROUP_KEY),
							fps_key_class(row_key));
}

uint64
fps_hash_value(TypeCacheEntry *type, Oid collation, Datum value, bool isnull)
{
	/* identity and index columns used here are NOT NULL or skipped */
	if (isnull)
		return UINT64_C(0x6e756c6c);
	return DatumGetUInt64(FunctionCall2Coll(&type->hash_extended_proc_finfo,
											collation, value, Int64GetDatum(0)));
}

/*
 * Which of rel's indexes can give phantom keys by equality prefix.  Others
 * still protect their scans, through the coarse relation key.
 */
static void
fill_prefix_indexes(Relation rel, FpsRelInfo *info)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Relation	indexrel;
		FpsPrefixIndex *pi;
		bool		eligible;
		int			i;

		if (info->nprefix >= FPS_MAX_PREFIX_INDEXES)
		{
			info->has_coarse_indexes = true;
			break;
		}
		indexrel = index_open(lfirst_oid(lc), AccessShareLock);
		pi = &info->prefix[info->nprefix];
		memset(pi, 0, sizeof(*pi));
		pi->indexoid = RelationGetRelid(indexrel);
		pi->key_class = info->key_class;
		pi->is_hash = indexrel->rd_rel->relam == HASH_AM_OID;
		pi->is_unique = indexrel->rd_index->indisunique;
		pi->nkeys = indexrel->rd_index->indnkeyatts;
		/* am/gap.c compares leaf-page LSNs: WAL-logged pages only */
		pi->has_gaps = indexrel->rd_rel->relam == BTREE_AM_OID &&
			indexrel->rd_rel->relpersistence == RELPERSISTENCE_PERMANENT;
		eligible = (indexrel->rd_rel->relam == BTREE_AM_OID || pi->is_hash) &&
			indexrel->rd_index->indisready &&
			heap_attisnull(indexrel->rd_indextuple, Anum_pg_index_indexprs, NULL) &&
			heap_attisnull(indexrel->rd_indextuple, Anum_pg_index_indpred, NULL);
		for (i = 0; eligible && i < pi->nkeys; i++)
		{
			Oid			opcintype = indexrel->rd_opcintype[i];
			Oid			defclass = GetDefaultOpClass(opcintype, indexrel->rd_rel->relam);
			TypeCacheEntry *tce;

			pi->attnums[i] = indexrel->rd_index->indkey.values[i];
			pi->collations[i] = indexrel->rd_indcollation[i];
			/* a NULL has no place between two values that a scan can name */
			if (pi->attnums[i] > 0 &&
				!TupleDescAttr(RelationGetDescr(rel), pi->attnums[i] - 1)->attnotnull)
				pi->has_gaps = false;
			/* am/gap.c walks "after" an entry with >, the order of ASC columns */
			if (indexrel->rd_indoption[i] & INDOPTION_DESC)
				pi->has_gaps = false;

			/* equality must be the default one, which the hash support agrees with */
			if (pi->attnums[i] <= 0 || !OidIsValid(defclass) ||
				get_opclass_family(defclass) != indexrel->rd_opfamily[i])
			{
				eligible = false;
				break;
			}
			tce = lookup_type_cache(opcintype, TYPECACHE_HASH_EXTENDED_PROC_FINFO);
			if (!OidIsValid(tce->hash_extended_proc))
				eligible = false;
			pi->types[i] = tce;
		}
		index_close(indexrel, AccessShareLock);
		if (eligible)
			info->nprefix++;
		else
			info->has_coarse_indexes = true;
	}
	list_free(indexes);
}

FpsPrefixIndex *
fps_prefix_index(FpsRelInfo *info, Oid indexoid)
{
	int			i;

	for (i = 0; i < info->nprefix; i++)
		if (info->prefix[i].indexoid == indexoid)
			return &info->prefix[i];
	return NULL;
}

/* A key of index: its prefix length and nhashes value hashes, under seed. */
static fps_u64
index_key(FpsPrefixIndex *index, int nprefix, const uint64 *hashes, int nhashes,
		  fps_u64 seed)
{
	struct
	{
		Oid			dbid;
		Oid			indexoid;
		uint64		nprefix;
		uint64		hashes[INDEX_MAX_KEYS];
	}			buf;

	buf.dbid = MyDatabaseId;
	buf.indexoid = index->indexoid;
	buf.nprefix = nprefix;
	memcpy(buf.hashes, hashes, sizeof(uint64) * nhashes);
	return fps_key_in_class(XXH3_64bits_withSeed(&buf,
												 offsetof(typeof(buf), hashes) +
												 sizeof(uint64) * nhashes, seed),
							index->key_class);
}

/* The phantom key of index's equality prefix of nprefix columns. */
fps_u64
fps_prefix_key(FpsPrefixIndex *index, int nprefix, const uint64 *hashes)
{
	return index_key(index, nprefix, hashes, nprefix, FPS_SEED_PREFIX_KEY);
}

/*
 * The gap key of a btree entry, as seen by scans under an equality prefix
 * of nprefix columns (am/gap.c): the entry's whole key (hashes of all
 * nkeys columns) and the prefix length.
 */
fps_u64
fps_gap_key(FpsPrefixIndex *index, int nprefix, const uint64 *hashes)
{
	return index_key(index, nprefix, hashes, index->nkeys, FPS_SEED_GAP_KEY);
}

/* The gap after the last entry of an equality-prefix group (hashes[nprefix]). */
fps_u64
fps_gap_end_key(FpsPrefixIndex *index, int nprefix, const uint64 *hashes)
{
	return index_key(index, nprefix, hashes, nprefix, FPS_SEED_GAP_END_KEY);
}

/*
 * Every gap of the index at one level (prefix length): read by each gap
 * scan at that level, written by writers that do not walk the level (bulk
 * writers, and am/gap_levels.c).
 */
fps_u64
fps_gap_escalation_key(FpsPrefixIndex *index, int nprefix)
{
	struct
	{
		Oid			dbid;
		Oid			indexoid;
		uint64		nprefix;
	}			buf;

	buf.dbid = MyDatabaseId;
	buf.indexoid = index->indexoid;
	buf.nprefix = nprefix;
	return fps_key_in_class(XXH3_64bits_withSeed(&buf, sizeof(buf),
												 FPS_SEED_GAP_ESCALATION_KEY),
							index->key_class);
}

/* A hash of relid in this database, under seed. */
static fps_u64
relation_hash(Oid relid, fps_u64 seed)
{
	struct
	{
		Oid			dbid;
		Oid			relid;
	}			buf;

	buf.dbid = MyDatabaseId;
	buf.relid = relid;
	return XXH3_64bits_withSeed(&buf, sizeof(buf), seed);
}

static fps_u64
relation_key(Oid relid, fps_u64 seed)
{
	return fps_key_in_class(relation_hash(relid, seed), fps_relation_key_class(relid));
}

static void
fill_identity(Relation rel, FpsRelInfo *info)
{
	Oid			indexoid = RelationGetPrimaryKeyIndex(rel);
	Relation	indexrel;
	int			i;

	if (!OidIsValid(indexoid))
		indexoid = RelationGetReplicaIndex(rel);
	info->by_tid = true;
	if (!OidIsValid(indexoid))
		return;

	indexrel = relation_open(indexoid, AccessShareLock);
	info->nkeys = indexrel->rd_index->indnkeyatts;
	for (i = 0; i < info->nkeys; i++)
	{
		AttrNumber	attnum = indexrel->rd_index->indkey.values[i];
		Form_pg_attribute att;
		TypeCacheEntry *tce;

		if (attnum <= 0)		/* expression: cannot happen for a PK */
		{
			relation_close(indexrel, AccessShareLock);
			return;
		}
		att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
		tce = lookup_type_cache(att->atttypid, TYPECACHE_HASH_EXTENDED_PROC_FINFO);
		if (!OidIsValid(tce->hash_extended_proc))
		{
			/* a type without hashing: identity by TID is still correct */
			relation_close(indexrel, AccessShareLock);
			return;
		}
		info->attnums[i] = attnum;
		info->collations[i] = att->attcollation;
		info->types[i] = tce;
	}
	relation_close(indexrel, AccessShareLock);
	info->by_tid = false;
}

/*
 * Column groups declared for rel in the extension's fpsketch_column_group
 * table (which lives in the schema of the access method's handler).  Only
 * tables with a logical identity have groups: a TID key changes with every
 * version.  A change takes ACCESS EXCLUSIVE lock and raises the floor (see
 * fpsketch_set_column_group and fpsketch_column_group_restore), so backends
 * never disagree on a mapping while a transaction on the table runs.
 */
Oid
fps_column_group_table(Relation rel)
{
	Oid			nsp = get_func_namespace(rel->rd_amhandler);

	return OidIsValid(nsp) ? get_relname_relid("fpsketch_column_group", nsp) : InvalidOid;
}

static void
fill_column_groups(Relation rel, FpsRelInfo *info)
{
	Oid			cfgoid;
	Relation	cfg;
	Oid			indexoid = InvalidOid;
	ListCell   *lc;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;

	if (info->by_tid || !fps_column_groups_enabled)
		return;
	cfgoid = fps_column_group_table(rel);
	if (!OidIsValid(cfgoid))
		return;
	cfg = table_open(cfgoid, AccessShareLock);

	/*
	 * Every relcache build of an fpsketch table comes here: through the
	 * extension's btree index on rel (fpsketch--1.0.sql; column_groups.c
	 * looks for it the same way), not a scan of every table's groups.
	 * Without a usable one, the heap scan finds the same rows.
	 */
	foreach(lc, RelationGetIndexList(cfg))
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);

		if (idx->rd_rel->relam == BTREE_AM_OID && idx->rd_index->indisvalid &&
			idx->rd_index->indkey.values[0] == 1 &&
			heap_attisnull(idx->rd_indextuple, Anum_pg_index_indpred, NULL))
			indexoid = RelationGetRelid(idx);
		index_close(idx, AccessShareLock);
		if (OidIsValid(indexoid))
			break;
	}

	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(info->relid));
	scan = systable_beginscan(cfg, indexoid, OidIsValid(indexoid), NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, 4, RelationGetDescr(cfg), &isnull);
		int			groupno;
		ArrayType  *arr;
		int16	   *attnums;
		int			n;
		int			i;

		if (isnull)
			continue;
		groupno = DatumGetInt16(heap_getattr(tup, 3, RelationGetDescr(cfg), &isnull));
		if (isnull || groupno < 1 || groupno >= FPS_MAX_COLUMN_GROUPS)
			continue;
		arr = DatumGetArrayTypeP(d);
		if (ARR_HASNULL(arr) || ARR_ELEMTYPE(arr) != INT2OID)
			continue;
		attnums = (int16 *) ARR_DATA_PTR(arr);
		n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
		for (i = 0; i < n; i++)
			if (attnums[i] > 0 && attnums[i] <= info->natts)
				info->attgroup[attnums[i]] = groupno;
		info->ngroups = Max(info->ngroups, groupno + 1);

		/* column 6, source: 'declared' or 'learned' (column_groups.c) */
		if (RelationGetDescr(cfg)->natts >= 6)
		{
			d = heap_getattr(tup, 6, RelationGetDescr(cfg), &isnull);
			if (isnull || strcmp(TextDatumGetCString(d), "learned") != 0)
				info->groups_declared = true;
		}
		else
			info->groups_declared = true;
	}
	systable_endscan(scan);
	table_close(cfg, AccessShareLock);
}

/*
 * Opening an index or the groups' table processes invalidation messages,
 * and one for the relation being described means the index list or the
 * groups read so far may be those of before a concurrent change (DROP or
 * CREATE INDEX CONCURRENTLY, REPLICA IDENTITY): fps_relinfo then starts
 * over, instead of caching a key scheme that other backends no longer use.
 */
#define FPS_MAX_RELINFO_DEPTH 8
static Oid	relinfo_building[FPS_MAX_RELINFO_DEPTH];
static bool relinfo_invalidated[FPS_MAX_RELINFO_DEPTH];
static int	relinfo_depth = 0;

/*
 * rd_amcache holds only a handle to the metadata, not the metadata itself.
 * The relcache frees rd_amcache at every invalidation of the relation, and
 * one can arrive at any catalog access: a syscache miss, an opclass support
 * function looked up for the first time, a relation's first read at ts.
 * Callers keep an FpsRelInfo across such accesses (a scan computing keys,
 * the gap walks at pre-commit), so the metadata is owned here, by relation
 * OID, and is never freed while a transaction may hold it:
 *
 * - a rebuild that finds the same metadata (GRANT, ANALYZE, TRUNCATE: most
 *   invalidations change nothing of it) keeps the old copy, so a loop of
 *   invalidations and reads in one transaction allocates nothing;
 * - metadata that changed, or whose relation is gone, is retired: freed at
 *   the end of the top-level transaction.
 *
 * A relation is found gone at the next build after its invalidation, or
 * after a reset (InvalidOid), which may stand for lost drop messages: the
 * invalidation itself cannot read the catalog.
 */
typedef struct RelInfoHandle
{
	FpsRelInfo *info;
} RelInfoHandle;

typedef struct RelInfoEntry
{
	Oid			relid;			/* hash key */
	FpsRelInfo *info;
	bool		invalidated;	/* since the last build or check: gone? */
} RelInfoEntry;

static HTAB *relinfo_by_relid = NULL;
static int	relinfo_ninvalidated = 0;

/*
 * Relcache invalidations this backend has processed, and how many it had
 * at the end of its last transaction (am/membership.c: a transaction that
 * processed none since cannot have planned with a catalog newer than its
 * first snapshot).
 */
uint64		fps_relcache_invalidations = 0;
uint64		fps_relcache_invalidations_at_xact_end = 0;
static FpsRelInfo *relinfo_retired = NULL;

/*
 * Each copy has a block of its own (chunks this size are not pooled), so
 * a freed one goes back to malloc rather than staying on a free list.
 */
static MemoryContext relinfo_context = NULL;

static void
retire_relinfo(RelInfoEntry *entry)
{
	if (entry->info == NULL)
		return;
	entry->info->retired_next = relinfo_retired;
	relinfo_retired = entry->info;
	entry->info = NULL;
}

/*
 * Registered before the other transaction callbacks (_PG_init), so it runs
 * after them: none of them may use metadata once this has run.
 */
static void
free_retired_relinfos(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			while (relinfo_retired != NULL)
			{
				FpsRelInfo *info = relinfo_retired;

				relinfo_retired = info->retired_next;
				pfree(info);
			}
			fps_relcache_invalidations_at_xact_end = fps_relcache_invalidations;
			break;
		default:
			break;
	}
}

/* Retire the metadata of invalidated relations that no longer exist. */
static void
retire_dropped_relinfos(void)
{
	HASH_SEQ_STATUS seq;
	RelInfoEntry *entry;
	Oid		   *relids;
	int			n = 0;

	if (relinfo_ninvalidated == 0)
		return;

	/*
	 * The catalog lookups below may invalidate more: collect, then look.
	 * A flag is cleared just before its relation is looked at, so an
	 * invalidation during the lookup, or an ERROR, leaves it to the next
	 * build.
	 */
	relids = palloc(sizeof(Oid) * hash_get_num_entries(relinfo_by_relid));
	hash_seq_init(&seq, relinfo_by_relid);
	while ((entry = hash_seq_search(&seq)) != NULL)
		if (entry->invalidated)
			relids[n++] = entry->relid;

	for (int i = 0; i < n; i++)
	{
		entry = hash_search(relinfo_by_relid, &relids[i], HASH_FIND, NULL);
		if (entry == NULL || !entry->invalidated)
			continue;
		entry->invalidated = false;
		relinfo_ninvalidated--;
		if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relids[i])))
			continue;
		entry = hash_search(relinfo_by_relid, &relids[i], HASH_FIND, NULL);
		if (entry == NULL)
			continue;
		if (entry->invalidated)
			relinfo_ninvalidated--;
		retire_relinfo(entry);
		(void) hash_search(relinfo_by_relid, &relids[i], HASH_REMOVE, NULL);
	}
	pfree(relids);
}

static void
note_relcache_invalidation(Datum arg, Oid relid)
{
	fps_relcache_invalidations++;
	if (relinfo_by_relid != NULL)
	{
		RelInfoEntry *entry;

		if (relid != InvalidOid)
		{
			entry = hash_search(relinfo_by_relid, &relid, HASH_FIND, NULL);
			if (entry != NULL && !entry->invalidated)
			{
				entry->invalidated = true;
				relinfo_ninvalidated++;
			}
		}
		else
		{
			/* a reset may stand for drops whose messages were lost */
			HASH_SEQ_STATUS seq;

			hash_seq_init(&seq, relinfo_by_relid);
			while ((entry = hash_seq_search(&seq)) != NULL)
				if (!entry->invalidated)
				{
					entry->invalidated = true;
					relinfo_ninvalidated++;
				}
		}
	}

	/*
	 * Under debug_discard_caches every AcceptInvalidationMessages() resets
	 * all caches, and every build would start over for ever: as core's
	 * RelationBuildDesc() does, take those resets for no change.
	 */
	if (relid == InvalidOid && debug_discard_caches > 0)
		return;
	for (int i = 0; i < relinfo_depth; i++)
		if (relid == InvalidOid || relid == relinfo_building[i])
			relinfo_invalidated[i] = true;
}

/*
 * In _PG_init, where running out of callback slots stops the server's
 * start rather than a query; a backend that loaded the library otherwise
 * registers at its first build.
 */
static bool relinfo_callback_registered = false;

void
fps_relinfo_register_callback(void)
{
	if (relinfo_callback_registered)
		return;
	CacheRegisterRelcacheCallback(note_relcache_invalidation, (Datum) 0);
	RegisterXactCallback(free_retired_relinfos, NULL);
	relinfo_callback_registered = true;
}

static Size
relinfo_size(int natts)
{
	return offsetof(FpsRelInfo, attgroup) + natts + 1;
}

/* In the caller's memory context: an ERROR during the build leaks nothing. */
static FpsRelInfo *
build_relinfo(Relation rel)
{
	FpsRelInfo *info;

	info = palloc0(relinfo_size(RelationGetNumberOfAttributes(rel)));
	info->natts = RelationGetNumberOfAttributes(rel);
	info->ngroups = 1;
	info->relid = RelationGetRelid(rel);
	info->key_class = fps_relation_key_class(info->relid);
	info->tracked = rel->rd_rel->relpersistence != RELPERSISTENCE_TEMP &&
		rel->rd_rel->relkind == RELKIND_RELATION;
	info->by_tid = true;
	info->relation_key = relation_key(info->relid, FPS_SEED_REL_KEY);
	info->escalation_key = relation_key(info->relid, FPS_SEED_ESCALATION_KEY);
	if (info->tracked)
	{
		fill_identity(rel, info);
		fill_prefix_indexes(rel, info);
		fill_column_groups(rel, info);
	}
	return info;
}

/*
 * The cached metadata for rel.  "tracked" is false for relations whose reads
 * and writes no other session can race with (temporary tables).
 */
FpsRelInfo *
fps_relinfo(Relation rel)
{
	RelInfoHandle *handle = (RelInfoHandle *) rel->rd_amcache;
	FpsRelInfo *info;
	FpsRelInfo *cached;
	RelInfoEntry *entry;
	bool		found;
	int			depth = relinfo_depth;

	if (likely(handle != NULL))
		return handle->info;

	fps_relinfo_register_callback();
	if (relinfo_by_relid == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(RelInfoEntry);
		ctl.hcxt = CacheMemoryContext;
		relinfo_by_relid = hash_create("fpsketch relation metadata by OID",
									   64, &ctl,
									   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		relinfo_context = AllocSetContextCreate(CacheMemoryContext,
												"fpsketch relation metadata",
												ALLOCSET_SMALL_SIZES);
	}
	retire_dropped_relinfos();

	/* no build reads another fpsketch table's metadata: no real nesting */
	if (depth >= FPS_MAX_RELINFO_DEPTH)
		elog(ERROR, "fpsketch: relation metadata builds nested too deeply");
	relinfo_building[depth] = RelationGetRelid(rel);
	relinfo_depth = depth + 1;
	PG_TRY();
	{
		for (;;)
		{
			relinfo_invalidated[depth] = false;
			info = build_relinfo(rel);
			if (!relinfo_invalidated[depth])
				break;
			pfree(info);
		}
	}
	PG_FINALLY();
	{
		relinfo_depth = depth;
	}
	PG_END_TRY();

	handle = MemoryContextAlloc(CacheMemoryContext, sizeof(RelInfoHandle));
	entry = hash_search(relinfo_by_relid, &info->relid, HASH_ENTER, &found);
	if (!found)
	{
		entry->info = NULL;
		entry->invalidated = false;
	}

	if (entry->info != NULL &&
		memcmp(entry->info, info, relinfo_size(info->natts)) == 0)
		cached = entry->info;
	else
	{
		/* it holds no pointer to memory of the build: a copy will do */
		cached = MemoryContextAlloc(relinfo_context, relinfo_size(info->natts));
		memcpy(cached, info, relinfo_size(info->natts));
		/* what it replaces may still be held: retire, do not free */
		retire_relinfo(entry);
		entry->info = cached;
	}
	pfree(info);
	handle->info = cached;

	/* the rebuild that an invalidation makes resets rd_amcache */
	if (rel->rd_amcache != NULL)
		pfree(rel->rd_amcache);
	rel->rd_amcache = handle;
	return cached;
}

fps_u64
fps_key_from_slot(Relation rel, FpsRelInfo *info, TupleTableSlot *slot)
{
	struct
	{
		Oid			dbid;
		Oid			relid;
		uint64		hashes[INDEX_MAX_KEYS];
	}			buf;
	int			i;

	if (info->by_tid)
		return fps_key_from_tid(info, &slot->tts_tid);

	buf.dbid = MyDatabaseId;
	buf.relid = info->relid;
	for (i = 0; i < info->nkeys; i++)
	{
		bool		isnull;
		Datum		value = slot_getattr(slot, info->attnums[i], &isnull);

		buf.hashes[i] = fps_hash_value(info->types[i], info->collations[i],
									   value, isnull);
	}
	return fps_key_in_class(XXH3_64bits_withSeed(&buf,
												 offsetof(typeof(buf), hashes) +
												 sizeof(uint64) * info->nkeys,
												 FPS_SEED_ROW_KEY),
							info->key_class);
}

fps_u64
fps_key_from_tid(FpsRelInfo *info, ItemPointer tid)
{
	struct
	{
		Oid			dbid;
		Oid			relid;
		BlockNumber block;
		uint32		offset;
	}			buf;

	buf.dbid = MyDatabaseId;
	buf.relid = info->relid;
	buf.block = ItemPointerGetBlockNumber(tid);
	buf.offset = ItemPointerGetOffsetNumber(tid);
	return fps_key_in_class(XXH3_64bits_withSeed(&buf, sizeof(buf), FPS_SEED_TID_KEY),
							info->key_class);
}
