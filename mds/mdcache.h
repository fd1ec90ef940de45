/*
 * mdcache.h - private to mds/: the namespace in memory (inodes, directories,
 * dentries) and the transactions that change it (txn_*) (mdcache.c,
 * mdcache_codec.c, mdcache_replay.c).  Types are in mds.h.
 */
#ifndef LOLIGO_MDS_MDCACHE_H
#define LOLIGO_MDS_MDCACHE_H

#include "common/slab.h"
#include "mds/mds.h"

/*
 * struct mdcache_hooks - what the namespace tells, or asks, the layers
 * above it: caps and leases (an inode or dentry leaves memory, who keeps
 * an orphan or a directory), the purge queue, and the tables it loads and
 * replays for them (purge, blocklist, sessions).  Called with mds->lock
 * held, as the mdcache functions that call them are (the loads: at start,
 * single-threaded).
 */
struct mdcache_hooks {
	void (*inode_drop)(struct mds *m, struct minode *in);
	void (*dentry_drop)(struct mds *m, struct mdentry *dn);
	bool (*keeps_orphan)(const struct minode *in);
	void (*note_orphan)(void);
	void (*stray_notify)(struct mds *m, struct minode *in);
	bool (*dir_pinned)(struct mds *m, struct mdir *d, uint64_t lo, uint64_t hi);
	/* ask clients for @want caps and leases back (cache pressure) */
	void (*recall)(struct mds *m, uint64_t want);
	void (*purge_inode)(struct mds *m, struct txn *t, const struct minode *in);
	int (*purge_load)(struct mds *m);
	int (*purge_replay_edit)(struct mds *m, int op, const char *key, const void *val, uint32_t len);
	int (*blocklist_load)(struct mds *m);
	int (*blocklist_replay_edit)(struct mds *m, int op, const char *key, const void *val, uint32_t len);
	int (*session_load)(struct mds *m);
	int (*session_replay_edit)(struct mds *m, int op, const char *oid, const char *key, const void *val,
				   uint32_t len, const char *key2);
};

/* mdcache_set_hooks - register @h (static storage) before mdcache_mkfs/mdcache_load. */
void mdcache_set_hooks(struct mds *m, const struct mdcache_hooks *h);

int mdcache_mkfs(struct mds *m);
/* What the cache holds in bytes, per kind (enum mds_mem_kind, mds.h). */
extern _Atomic uint64_t mds_mem_bytes[MDS_MEM_NKINDS];
extern const char *const mds_mem_names[MDS_MEM_NKINDS];
/* mds_mem_size - the heap bytes behind @p (0 for NULL). */
size_t mds_mem_size(const void *p);
static inline void mds_mem_add(enum mds_mem_kind k, const void *p)
{
	atomic_fetch_add_explicit(&mds_mem_bytes[k], mds_mem_size(p), memory_order_relaxed);
}
static inline void mds_mem_sub(enum mds_mem_kind k, const void *p)
{
	atomic_fetch_sub_explicit(&mds_mem_bytes[k], mds_mem_size(p), memory_order_relaxed);
}
/*
 * The cache's own objects (inodes, dentries, directories, caps, leases)
 * come from common/slab.c's size classes, apart from the requests'
 * short-lived buffers (slab.h says why); counted by their class's size.
 */
static inline void *mds_obj_alloc(enum mds_mem_kind k, size_t size)
{
	void *p = slab_zalloc(size);

	atomic_fetch_add_explicit(&mds_mem_bytes[k], slab_size(p, size), memory_order_relaxed);
	return p;
}
static inline void mds_obj_free(enum mds_mem_kind k, void *p, size_t size)
{
	atomic_fetch_sub_explicit(&mds_mem_bytes[k], slab_size(p, size), memory_order_relaxed);
	slab_free(p, size);
}
/* mds_mem_total - the sum over every kind. */
uint64_t mds_mem_total(void);
/* mds_rss_bytes - the process's resident set (/proc/self/statm), 0 if unknown. */
uint64_t mds_rss_bytes(void);
/* mdcache_register_perf - the mds_mem gauges: bytes per kind, total, limit, rss; the
 * mds_cache counters of directory fragments (dir_splits, dir_frags_loaded, dir_frags_evicted). */
void mdcache_register_perf(void);
/* mdcache_cookie_key_ensure - the readdir cookies' key exists (made and stored now if not). */
int mdcache_cookie_key_ensure(struct mds *m);
int mdcache_load(struct mds *m);          /* tables before journal replay */
void mdcache_after_replay(struct mds *m);
/*
 * mdcache_replay_sweep - a standby-replay applied whole journal entries:
 * the inodes whose primary name they removed and that have none again
 * (not relinked, not in the inode table, not an orphan) leave memory, as
 * mdcache_after_replay would drop them at a takeover.  Caller holds
 * mds->lock.
 */
void mdcache_replay_sweep(struct mds *m);
void mdcache_free(struct mds *m);

struct minode *minode_alloc(struct mds *m, uint64_t ino);
void minode_free(struct mds *m, struct minode *in);
int inode_get(struct mds *m, uint64_t ino, struct minode **out);
int mdir_get(struct mds *m, uint64_t ino, struct mdir **out);
/*
 * mdir_get_dir - mdir_get of an inode number a peer named (a reconnect's
 * lease, a path's component): -ESTALE unless it is a live inode, -ENOTDIR
 * unless a directory.  mdir_get itself trusts its caller: of any other
 * number it would cache an empty directory that is not there.
 */
int mdir_get_dir(struct mds *m, uint64_t ino, struct mdir **out);
/* mdir_lookup - @name in what memory holds of @d (see mdir_lookup_load) */
struct mdentry *mdir_lookup(struct mdir *d, const char *name);
/*
 * Fragments (mdcache.c): mdir_get reads a directory's head, and its only
 * fragment whole; of a fragmented one each fragment is read when needed.
 * mdir_load_name - the fragment(s) @name can be in are in memory;
 * mdir_lookup_load - that, then mdir_lookup (*@out NULL: no such name);
 * mdir_load_all - every fragment; mdir_is_empty - 1 if @d has no entry, 0
 * if it has, -errno (reads fragments until one is not empty);
 * mdir_readdir_span - the fragments a READDIR from cookie @from needs for
 * @max entries are in memory, all of them up to the cookie *@end
 * (UINT64_MAX: to the end of the directory); mdir_frag_of - the leaf that
 * holds @cookie.  Callers hold mds->lock.
 */
int mdir_load_name(struct mds *m, struct mdir *d, const char *name);
int mdir_lookup_load(struct mds *m, struct mdir *d, const char *name, struct mdentry **out);
int mdir_load_all(struct mds *m, struct mdir *d);
int mdir_is_empty(struct mds *m, struct mdir *d);
int mdir_readdir_span(struct mds *m, struct mdir *d, uint64_t from, uint32_t max, uint64_t *end);
uint32_t mdir_frag_of(const struct mdir *d, uint64_t cookie);
/* oid_frag - the object of @d's leaf fragment @i ("<ino>.dir" while there is one) */
void oid_frag(char *buf, size_t len, const struct mdir *d, uint32_t i);

/*
 * mdir_cookie_find - the dentry of @d with the smallest cookie >= *@idx,
 * and *@idx set to its cookie; NULL when there is none.  Caller holds
 * mds->lock (the cookie index has no RCU readers).
 */
struct mdentry *mdir_cookie_find(struct mdir *d, uint64_t *idx);

/*
 * An in-order walk of @d's cookie treap from cookie @from on: each step is
 * amortised O(1) where mdir_cookie_find is a descent from the root (a
 * READDIR of 1024 entries made ~3 x 1024 descents, the biggest entry of
 * the MDS's profile in a listing storm).  The ancestors still to visit are
 * kept on a stack; a treap deeper than it (improbable, but not impossible)
 * falls back to mdir_cookie_find from the last cookie returned.  Valid only
 * while @d's dentries do not change: caller holds mds->lock throughout and
 * adds or removes nothing (nor loads a fragment) between init and the last
 * next.
 */
#define MDIR_ITER_DEPTH 96
struct mdir_iter {
	struct mdir *d;
	struct mdentry *stk[MDIR_ITER_DEPTH];
	uint32_t n;
	bool fallback;                /* stack overflowed: descend from the root */
	bool done;
	uint64_t next_idx;            /* fallback: the cookie to look from */
};
void mdir_iter_init(struct mdir_iter *it, struct mdir *d, uint64_t from);
struct mdentry *mdir_iter_next(struct mdir_iter *it);
struct mdentry *mdir_add(struct mds *m, struct mdir *d, const char *name, uint64_t ino, uint32_t dtype,
			 bool remote, uint64_t cookie, struct txn *t);
void mdir_del(struct mds *m, struct mdentry *dn, struct txn *t);
struct mdir *mdir_create(struct mds *m, uint64_t ino);
void mdir_destroy(struct mds *m, struct mdir *d, struct txn *t);
/* mds_grant_inos - [next_ino, max(next_ino + n, min_end)) for a session's
 * pool, journaled in @t.  Caller holds mds->lock.  Returns the start. */
uint64_t mds_grant_inos(struct mds *m, struct txn *t, uint64_t n, uint64_t min_end);

void txn_init(struct txn *t);
void txn_free(struct txn *t);
void txn_edit(struct txn *t, enum edit_op op, const char *oid, const char *key, const void *val,
	      size_t len, const char *key2);
void txn_dirty(struct txn *t, struct minode *in);
void txn_kill_inode(struct txn *t, struct minode *in);
/*
 * txn_unstray - orphan @in gets a name again (an O_TMPFILE file linked): it
 * leaves the stray table in @t's journal entry, before the dentry that
 * holds it is written at txn_finish (replay finds them in that order).  The
 * caller links it.  Caller holds mds->lock.
 */
void txn_unstray(struct txn *t, struct minode *in);
/* mdcache_trim - evict clean, unused directories (and the inodes they hold)
 * while more than mds_cache_size inodes or mds_cache_memory_limit bytes
 * are cached, and recall from clients what keeps it over.  @clean_below:
 * journal entries below it are expired.  Returns the cache bytes freed.
 * Caller holds mds->lock. */
uint64_t mdcache_trim(struct mds *m, uint64_t clean_below);
/*
 * mds_cache_memory_limit bounds the MDS's memory, not only the cache's:
 * the layers above charge what they bound outside the cache (the journal's
 * queue and segments, the log ring) with mdcache_charge_outside(), and the
 * cache trims to mdcache_budget(): the limit less those bytes and less
 * mds_memory_reserve of it (never less than half the limit; 0: no limit).
 */
void mdcache_charge_outside(uint64_t bytes);
uint64_t mdcache_outside_bytes(void);
uint64_t mdcache_budget(void);
/* txn_finish - emit the dirty inodes' edits, free dead inodes.  Caller holds mds->lock. */
void txn_finish(struct mds *m, struct txn *t);

/* journal replay: apply one edit to memory.  Caller holds mds->lock. */
int mdcache_replay_edit(struct mds *m, int op, const char *oid, const char *key, const void *val,
			uint32_t len, const char *key2);

/* inode_blocks_sync - @in->a.blocks from @in->ext (unless unknown); call after changing ext */
void inode_blocks_sync(struct minode *in);
struct mxattr *xattr_find(struct minode *in, const char *name);

#endif
