/*
 * mdcache.c - the namespace in memory and its layout in the store.
 * The records' encodings are in mdcache_codec.c; mkfs, the loading of the
 * tables at start and journal replay in mdcache_replay.c; what the three
 * share in mdcache_priv.h.
 *
 * Layout (DESIGN.md section 4), all in the metadata pool:
 *   "<ino hex>.dir"      a directory: omap name -> dentry (cookie, ino, type,
 *                        and for a primary link the whole inode embedded);
 *                        key "/meta" (never a valid name) holds the cookie
 *                        high-water mark.
 *   "mds_table"          omap: root inode, the inode-number high-water mark
 *                        (ranges are granted to sessions, prealloc.c), the
 *                        session-id allocator, file count.
 *   "mds_inotable"       omap ino -> inode, for inodes that were ever
 *                        hard-linked: all their dentries are then remote
 *                        (ino + type), so no dentry owns the inode and
 *                        unlinking any of them needs no migration.
 *   "mds_anchor.<xx>"    omap ino -> (parent ino, name) of primary links, 64
 *                        shards: LOOKUPINO (NFS file handles) of an inode not
 *                        in memory walks these up to something that is.
 *   "mds_stray"          omap ino -> inode: orphans, files whose last link
 *                        went while a client had them open (locker.c).  All
 *                        loaded at start, like the inode table.
 *
 * Directories are loaded on first use.  Changes are made in memory and
 * described as omap edits in a struct txn, which the journal writes; the
 * objects themselves are brought up to date when the journal segment
 * expires.  So an object in the store may lag behind memory, but only for
 * things that are in memory: anything loaded later from the store has no
 * unexpired edit, and at start-up the replay loads every directory the
 * journal touches.  Inodes of the inode table are all loaded at start.
 *
 * Eviction keeps that true: past mds_cache_size inodes or
 * mds_cache_memory_limit bytes, mdcache_trim() evicts (mdir_evict) only
 * directories whose last journaled change is below the expired mark
 * (clean_below: their objects are current), unused for a second, and
 * cached by no client (what clients pin is recalled from them, paced,
 * locker.c locker_recall, and evicted on a later pass once they let go);
 * the root never goes.
 *
 * readdir cookies are stored with the dentry, and a listing resumes "after
 * cookie c" whatever was inserted or removed meanwhile.  A new name's cookie
 * comes from the name (a SipHash of it under the filesystem's key, in
 * [2^61, 2^62), the next free one on the rare collision), as ext4's htree
 * hash does: a name removed and made again (renamed away and back while a
 * listing runs) lands where it was, so a listing returns it at most once
 * per pass.  With sequence numbers, which dentries of filesystems made
 * before keep, it came back after the cursor every time (issue 25.8: 15,000
 * entries from a 5,000-entry directory, without end).  The key is random
 * per filesystem, so a peer cannot choose names that pile up on one cookie.
 *
 * Everything here runs under mds->lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "common/perf.h"
#include "common/log.h"
#include "common/siphash.h"
#include "common/rcu.h"
#include "common/time.h"
#include "mds/codec.h"
#include "mds/mds.h"
#include "mds/mdcache.h"
#include "mds/mdcache_priv.h"


void oid_dir(char *buf, size_t len, uint64_t ino)
{
	snprintf(buf, len, "%" PRIx64 ".dir", ino);
}

void oid_completed(char *buf, size_t len, uint64_t sid)
{
	snprintf(buf, len, "mds_completed.%016" PRIx64, sid);
}

static void oid_anchor(char *buf, size_t len, uint64_t ino)
{
	snprintf(buf, len, "mds_anchor.%02x", (unsigned)(ino % ANCHOR_SHARDS));
}

static void key_ino(char *buf, size_t len, uint64_t ino)
{
	snprintf(buf, len, "%016" PRIx64, ino);
}

/* ---- what the cache holds in bytes (mds.h) -------------------------------- */

_Atomic uint64_t mds_mem_bytes[MDS_MEM_NKINDS];
const char *const mds_mem_names[MDS_MEM_NKINDS] = {
	[MDS_MEM_INODE] = "inodes", [MDS_MEM_INODE_DATA] = "inode_data", [MDS_MEM_XATTR] = "xattrs",
	[MDS_MEM_DENTRY] = "dentries", [MDS_MEM_DIR] = "dirs", [MDS_MEM_CAP] = "caps",
	[MDS_MEM_LEASE] = "leases",
};

size_t mds_mem_size(const void *p)
{
	/* what glibc's malloc gave, and the size word before it */
	return p ? malloc_usable_size((void *)p) + sizeof(size_t) : 0;
}

uint64_t mds_mem_total(void)
{
	uint64_t t = 0;
	int k;

	for (k = 0; k < MDS_MEM_NKINDS; k++)
		t += atomic_load_explicit(&mds_mem_bytes[k], memory_order_relaxed);
	return t;
}

static uint64_t g_mem(void *arg)
{
	return atomic_load_explicit((_Atomic uint64_t *)arg, memory_order_relaxed);
}

static uint64_t g_mem_total(void *arg)
{
	(void)arg;
	return mds_mem_total();
}

static uint64_t g_mem_limit(void *arg)
{
	(void)arg;
	return cfg_uint(CFG_mds_cache_memory_limit);
}

/* what the layers above bound outside the cache (mdcache_charge_outside) */
static _Atomic uint64_t cache_charged;

void mdcache_charge_outside(uint64_t bytes)
{
	atomic_store_explicit(&cache_charged, bytes, memory_order_relaxed);
}

uint64_t mdcache_outside_bytes(void)
{
	return atomic_load_explicit(&cache_charged, memory_order_relaxed);
}

uint64_t mdcache_budget(void)
{
	uint64_t lim = cfg_uint(CFG_mds_cache_memory_limit), c = mdcache_outside_bytes();
	double r = cfg_double(CFG_mds_memory_reserve);

	if (!lim)
		return 0;
	if (r > 0 && r < 1)
		c += (uint64_t)((double)lim * r);
	/* a limit too small for what it is charged with still leaves the
	 * cache half of it (what is over shows in the RSS) */
	return c < lim / 2 ? lim - c : lim - lim / 2;
}

static uint64_t g_budget(void *arg)
{
	(void)arg;
	return mdcache_budget();
}

static uint64_t g_rss(void *arg)
{
	(void)arg;
	return mds_rss_bytes();
}

uint64_t mds_rss_bytes(void)
{
	unsigned long long size, rss;
	FILE *f = fopen("/proc/self/statm", "r");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "%llu %llu", &size, &rss);
	fclose(f);
	return n == 2 ? rss * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

static void register_frag_perf(void);

void mdcache_register_perf(void)
{
	int k;

	for (k = 0; k < MDS_MEM_NKINDS; k++)
		perf_register_fn("mds_mem", mds_mem_names[k], g_mem, &mds_mem_bytes[k]);
	perf_register_fn("mds_mem", "total", g_mem_total, NULL);
	perf_register_fn("mds_mem", "limit", g_mem_limit, NULL);
	perf_register_fn("mds_mem", "budget", g_budget, NULL);
	perf_register_fn("mds_mem", "rss", g_rss, NULL);
	register_frag_perf();
}

static void mem_adjust(enum mds_mem_kind k, uint32_t *was, size_t now)
{
	if (now > UINT32_MAX)
		now = UINT32_MAX;
	atomic_fetch_add_explicit(&mds_mem_bytes[k], now, memory_order_relaxed);
	atomic_fetch_sub_explicit(&mds_mem_bytes[k], *was, memory_order_relaxed);
	*was = (uint32_t)now;
}

/*
 * Count again what @in's symlink, extents and xattrs hold: after a decode
 * and at every journaled change (txn_finish), the only places they change.
 */
void mdcache_inode_mem_sync(struct minode *in)
{
	size_t x = 0;
	struct mxattr *xa;

	for (xa = in->xattrs; xa; xa = xa->next)
		x += mds_mem_size(xa) + mds_mem_size(xa->name) + mds_mem_size(xa->val);
	mem_adjust(MDS_MEM_INODE_DATA, &in->mem_data, mds_mem_size(in->symlink) + mds_mem_size(in->ext.v));
	mem_adjust(MDS_MEM_XATTR, &in->mem_xattr, x);
}

/* ---- inodes ------------------------------------------------------------- */

void mdcache_xattrs_free(struct minode *in)
{
	struct mxattr *x, *n;

	for (x = in->xattrs; x; x = n) {
		n = x->next;
		free(x->name);
		free(x->val);
		free(x);
	}
	in->xattrs = NULL;
	in->xattr_bytes = 0;
}

struct minode *minode_alloc(struct mds *m, uint64_t ino)
{
	struct minode *in = mds_obj_alloc(MDS_MEM_INODE, sizeof(*in));

	if (!in)
		return NULL;
	in->a.ino = ino;
	in->a.quota_room = MDSP_QUOTA_UNSAID;   /* said by the traces only (server.c) */
	CDS_INIT_LIST_HEAD(&in->caps);
	if (xa_store(&m->inodes, ino, in)) {
		mds_obj_free(MDS_MEM_INODE, in, sizeof(*in));
		return NULL;
	}
	m->ninodes_cached++;
	return in;
}

void minode_free(struct mds *m, struct minode *in)
{
	m->cache_hooks->inode_drop(m, in);
	if (xa_load(&m->inodes, in->a.ino) == in) {
		xa_erase(&m->inodes, in->a.ino);
		m->ninodes_cached--;
	}
	mdcache_xattrs_free(in);
	free(in->symlink);
	mdsp_extset_free(&in->ext);
	mem_adjust(MDS_MEM_INODE_DATA, &in->mem_data, 0);
	mem_adjust(MDS_MEM_XATTR, &in->mem_xattr, 0);
	mds_obj_free(MDS_MEM_INODE, in, sizeof(*in));
}

struct mxattr *xattr_find(struct minode *in, const char *name)
{
	struct mxattr *x;

	for (x = in->xattrs; x; x = x->next)
		if (!strcmp(x->name, name))
			return x;
	return NULL;
}


void inode_blocks_sync(struct minode *in)
{
	if (in->a.blocks != MDSP_BLOCKS_UNKNOWN)
		in->a.blocks = mdsp_extset_bytes(&in->ext);
}


/* ---- dentries and directories -------------------------------------------- */

static struct perf_counter c_dir_splits, c_frags_loaded, c_frags_evicted;

static void txn_touch_dir(struct txn *t, struct mdir *d);
static void txn_untouch_dir(struct txn *t, struct mdir *d);
static void frag_evict(struct mds *m, struct mdir *d, uint32_t i);
static void mdir_split_full(struct mds *m, struct mdir *d, struct txn *t);

static uint32_t name_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--) {
		h ^= (uint8_t)*s++;
		h *= 16777619u;
	}
	return h;
}


/* ---- fragments: where a dentry is stored -------------------------------------
 *
 * A directory's dentries are stored by cookie: a leaf fragment holds the
 * keys [lo, next leaf's lo) (mds.h struct mfrag), the key of a cookie
 * being its offset from 2^61 (hashed cookies are in [2^61, 2^62)) and 0
 * for the sequence-number cookies of older filesystems, so cookie order is
 * fragment order and a listing walks the fragments in turn.  A cookie is
 * the name's SipHash, so the fragments fill evenly; a cookie never changes
 * when its fragment splits, so readdir positions given out stay valid.
 */
static uint64_t frag_key(uint64_t cookie)
{
	if (cookie < COOKIE_HASHED)
		return 0;
	if (cookie >= 2 * COOKIE_HASHED)
		return COOKIE_HASHED - 1;
	return cookie - COOKIE_HASHED;
}

uint32_t mdir_frag_of(const struct mdir *d, uint64_t cookie)
{
	uint64_t k = frag_key(cookie);
	uint32_t lo = 0, hi = d->nfrags;

	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (d->frags[mid].lo <= k)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* the first cookie of fragment @i, and the first past it (UINT64_MAX: none) */
static uint64_t frag_first(const struct mdir *d, uint32_t i)
{
	return i ? COOKIE_HASHED + d->frags[i].lo : 0;
}

static uint64_t frag_end(const struct mdir *d, uint32_t i)
{
	return i + 1 < d->nfrags ? COOKIE_HASHED + d->frags[i + 1].lo : UINT64_MAX;
}

static bool mdir_fragmented(const struct mdir *d)
{
	return d->frags[0].bits != 0;
}

void oid_frag(char *buf, size_t len, const struct mdir *d, uint32_t i)
{
	if (!d->frags[i].bits)
		oid_dir(buf, len, d->ino);
	else
		snprintf(buf, len, "%" PRIx64 ".%u-%" PRIx64 ".dir", d->ino, d->frags[i].bits, d->frags[i].value);
}

static void dir_rehash(struct mdir *d)
{
	uint32_t nb = d->nbuckets ? d->nbuckets * 4 : 16, i;
	struct mdentry **b = calloc(nb, sizeof(*b)), *dn, *next;

	if (!b)
		return;             /* keep the old table: slower, still correct */
	mds_mem_add(MDS_MEM_DIR, b);
	mds_mem_sub(MDS_MEM_DIR, d->buckets);
	for (i = 0; i < d->nbuckets; i++)
		for (dn = d->buckets[i]; dn; dn = next) {
			next = dn->hnext;
			dn->hnext = b[dn->hash & (nb - 1)];
			b[dn->hash & (nb - 1)] = dn;
		}
	free(d->buckets);
	d->buckets = b;
	d->nbuckets = nb;
}

struct mdentry *mdir_lookup(struct mdir *d, const char *name)
{
	size_t n = strlen(name);
	uint32_t h = name_hash(name, n);
	struct mdentry *dn;

	if (!d->nbuckets)
		return NULL;
	for (dn = d->buckets[h & (d->nbuckets - 1)]; dn; dn = dn->hnext)
		if (dn->hash == h && dn->namelen == n && !memcmp(dn->name, name, n))
			return dn;
	return NULL;
}

struct mdir *mdir_create(struct mds *m, uint64_t ino)
{
	struct mdir *d = mds_obj_alloc(MDS_MEM_DIR, sizeof(*d)), *old;

	if (!d)
		return NULL;
	d->ino = ino;
	d->last_used_ns = now_mono_ns();
	d->next_cookie = COOKIE_FIRST;
	d->cookie_reserved = COOKIE_FIRST;
	d->frags = calloc(1, sizeof(*d->frags));
	if (!d->frags) {
		mds_obj_free(MDS_MEM_DIR, d, sizeof(*d));
		return NULL;
	}
	mds_mem_add(MDS_MEM_DIR, d->frags);
	d->nfrags = 1;
	d->frags[0].loaded = true;          /* a new directory: nothing to read */
	d->frags[0].last_used_ns = d->last_used_ns;
	if ((old = xa_load(&m->dirs, ino)) != NULL) {
		/* a new inode number has no directory yet: one cached is a
		 * phantom some caller made of a number that was not one */
		derr(MDS, "directory %" PRIx64 " was cached before it was made (%u entries): dropped", ino,
		     old->count);
		mdcache_mdir_free_mem(m, old);
	}
	if (xa_store(&m->dirs, ino, d)) {
		mds_mem_sub(MDS_MEM_DIR, d->frags);
		free(d->frags);
		mds_obj_free(MDS_MEM_DIR, d, sizeof(*d));
		return NULL;
	}
	m->ndirs_cached++;
	return d;
}

/*
 * The cookie index: a treap (a binary search tree by cookie, heap-ordered by
 * a priority) threaded through the dentries.  The priority is a mix of the
 * cookie, so a directory of sequence-number cookies (filesystems made
 * before hashed cookies) is as balanced as one of hashed ones: expected
 * depth ~2 ln n, 28 at a million entries.  Under mds->lock, like the rest.
 */
static uint64_t cookie_prio(uint64_t c)
{
	/* splitmix64's finaliser */
	c = (c ^ (c >> 30)) * 0xbf58476d1ce4e5b9ull;
	c = (c ^ (c >> 27)) * 0x94d049bb133111ebull;
	return c ^ (c >> 31);
}

static struct mdentry *treap_insert(struct mdentry *t, struct mdentry *n)
{
	struct mdentry *c;

	if (!t)
		return n;
	if (n->cookie < t->cookie) {
		t->cl = treap_insert(t->cl, n);
		if (cookie_prio(t->cl->cookie) > cookie_prio(t->cookie)) {
			c = t->cl;                  /* rotate right */
			t->cl = c->cr;
			c->cr = t;
			t = c;
		}
	} else {
		t->cr = treap_insert(t->cr, n);
		if (cookie_prio(t->cr->cookie) > cookie_prio(t->cookie)) {
			c = t->cr;                  /* rotate left */
			t->cr = c->cl;
			c->cl = t;
			t = c;
		}
	}
	return t;
}

/* the treap of every entry of @a and @b, all of @a's cookies below @b's */
static struct mdentry *treap_merge(struct mdentry *a, struct mdentry *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (cookie_prio(a->cookie) > cookie_prio(b->cookie)) {
		a->cr = treap_merge(a->cr, b);
		return a;
	}
	b->cl = treap_merge(a, b->cl);
	return b;
}

static struct mdentry *treap_erase(struct mdentry *t, const struct mdentry *dn)
{
	if (!t)
		return NULL;
	if (dn->cookie < t->cookie)
		t->cl = treap_erase(t->cl, dn);
	else if (dn->cookie > t->cookie)
		t->cr = treap_erase(t->cr, dn);
	else if (t == dn)
		return treap_merge(t->cl, t->cr);
	return t;
}

static struct mdentry *cookie_load(struct mdir *d, uint64_t cookie)
{
	struct mdentry *t = d->by_cookie;

	while (t && t->cookie != cookie)
		t = cookie < t->cookie ? t->cl : t->cr;
	return t;
}

static void cookie_erase(struct mdir *d, struct mdentry *dn)
{
	d->by_cookie = treap_erase(d->by_cookie, dn);
	dn->cl = dn->cr = NULL;
}

struct mdentry *mdir_cookie_find(struct mdir *d, uint64_t *idx)
{
	struct mdentry *t = d->by_cookie, *best = NULL;

	while (t) {
		if (t->cookie >= *idx) {
			best = t;
			t = t->cl;
		} else {
			t = t->cr;
		}
	}
	if (best)
		*idx = best->cookie;
	return best;
}

/* Push @t and its left spine; false (and fallback mode) if the stack is full. */
static bool iter_push_left(struct mdir_iter *it, struct mdentry *t)
{
	for (; t; t = t->cl) {
		if (it->n == MDIR_ITER_DEPTH) {
			it->fallback = true;
			return false;
		}
		it->stk[it->n++] = t;
	}
	return true;
}

void mdir_iter_init(struct mdir_iter *it, struct mdir *d, uint64_t from)
{
	struct mdentry *t = d->by_cookie;

	it->d = d;
	it->n = 0;
	it->fallback = false;
	it->done = false;
	it->next_idx = from;
	/* the ancestors where the walk goes left are the ones >= @from, in
	 * order from the top of the stack */
	while (t) {
		if (t->cookie >= from) {
			if (it->n == MDIR_ITER_DEPTH) {
				it->fallback = true;
				return;
			}
			it->stk[it->n++] = t;
			t = t->cl;
		} else {
			t = t->cr;
		}
	}
}

struct mdentry *mdir_iter_next(struct mdir_iter *it)
{
	struct mdentry *t;

	if (it->done)
		return NULL;
	if (it->fallback) {
		uint64_t idx = it->next_idx;

		t = mdir_cookie_find(it->d, &idx);
		if (!t || idx == UINT64_MAX)
			it->done = true;
		else
			it->next_idx = idx + 1;
		return t;
	}
	if (!it->n) {
		it->done = true;
		return NULL;
	}
	t = it->stk[--it->n];
	it->next_idx = t->cookie + 1;
	if (t->cookie == UINT64_MAX)
		it->done = true;
	else if (!iter_push_left(it, t->cr))
		it->n = 0;              /* fallback from next_idx on */
	return t;
}

static void dentry_unlink_mem(struct mds *m, struct mdentry *dn)
{
	struct mdir *d = dn->dir;
	struct mdentry **pp = &d->buckets[dn->hash & (d->nbuckets - 1)];
	struct minode *in;

	while (*pp && *pp != dn)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = dn->hnext;
	cookie_erase(d, dn);
	d->count--;
	d->frags[mdir_frag_of(d, dn->cookie)].count--;
	if (!dn->remote) {
		in = xa_load(&m->inodes, dn->ino);
		if (in && in->primary == dn)
			in->primary = NULL;
	}
}

void mdcache_mdir_free_mem(struct mds *m, struct mdir *d)
{
	uint32_t i;
	struct mdentry *dn, *next;

	for (i = 0; i < d->nbuckets; i++)
		for (dn = d->buckets[i]; dn; dn = next) {
			next = dn->hnext;
			if (!dn->remote) {
				struct minode *in = xa_load(&m->inodes, dn->ino);

				if (in && in->primary == dn)
					in->primary = NULL;
			}
			m->cache_hooks->dentry_drop(m, dn);
			mds_obj_free(MDS_MEM_DENTRY, dn, sizeof(*dn) + dn->namelen + 1);
		}
	d->by_cookie = NULL;   /* its nodes were the dentries */
	mds_mem_sub(MDS_MEM_DIR, d->buckets);
	free(d->buckets);
	mds_mem_sub(MDS_MEM_DIR, d->frags);
	free(d->frags);
	if (xa_load(&m->dirs, d->ino) == d) {
		xa_erase(&m->dirs, d->ino);
		m->ndirs_cached--;
	}
	mds_obj_free(MDS_MEM_DIR, d, sizeof(*d));
}

void mdir_destroy(struct mds *m, struct mdir *d, struct txn *t)
{
	char oid[64];

	if (t) {
		/* the fragments' objects, then the head (replay frees the
		 * directory at the head's removal) */
		for (uint32_t i = 0; i < d->nfrags && d->frags[0].bits; i++) {
			oid_frag(oid, sizeof(oid), d, i);
			txn_edit(t, EDIT_REMOVE, oid, NULL, NULL, 0, NULL);
		}
		oid_dir(oid, sizeof(oid), d->ino);
		txn_edit(t, EDIT_REMOVE, oid, NULL, NULL, 0, NULL);
		txn_untouch_dir(t, d);
	}
	mdcache_mdir_free_mem(m, d);
}

static void txn_touch_dir(struct txn *t, struct mdir *d)
{
	int i;

	for (i = 0; i < t->ndirs; i++)
		if (t->dirs[i] == d)
			return;
	if (t->ndirs < (int)(sizeof(t->dirs) / sizeof(t->dirs[0])))
		t->dirs[t->ndirs++] = d;
	else
		d->last_jseq = UINT64_MAX;   /* cannot track it: never trim it */
}

static void txn_untouch_dir(struct txn *t, struct mdir *d)
{
	int i;

	for (i = 0; i < t->ndirs; i++)
		if (t->dirs[i] == d) {
			t->dirs[i] = t->dirs[--t->ndirs];
			return;
		}
}

static void emit_dir_meta(struct txn *t, struct mdir *d)
{
	struct mdsp_buf b;
	size_t off;
	char oid[64];

	mdsp_buf_init(&b);
	off = enc_begin(&b, V_DIRMETA, 1);
	enc_u64(&b, d->cookie_reserved);
	enc_end(&b, off);
	oid_dir(oid, sizeof(oid), d->ino);
	txn_edit(t, EDIT_SET, oid, DIR_META_KEY, b.data, b.len, NULL);
	mdsp_buf_free(&b);
	txn_touch_dir(t, d);
}

static void emit_dentry(struct txn *t, struct mdentry *dn, struct minode *in)
{
	struct mdsp_buf b;
	char oid[64];

	mdsp_buf_init(&b);
	mdcache_dentry_value_encode(&b, dn, in);
	oid_frag(oid, sizeof(oid), dn->dir, mdir_frag_of(dn->dir, dn->cookie));
	txn_edit(t, EDIT_SET, oid, dn->name, b.data, b.len, NULL);
	mdsp_buf_free(&b);
	txn_touch_dir(t, dn->dir);
}

struct mdentry *mdir_add(struct mds *m, struct mdir *d, const char *name, uint64_t ino, uint32_t dtype,
			 bool remote, uint64_t cookie, struct txn *t)
{
	size_t n = strlen(name);
	struct mdentry *dn = mds_obj_alloc(MDS_MEM_DENTRY, sizeof(*dn) + n + 1);

	if (!dn)
		return NULL;
	if (!cookie && m && m->have_cookie_key) {
		/* from the name: stable across a remove and a make again */
		uint64_t h = siphash24(m->cookie_key, name, n) & (COOKIE_HASHED - 1);

		for (uint32_t probe = 0; probe < 64; probe++) {
			uint64_t c = COOKIE_HASHED | ((h + probe) & (COOKIE_HASHED - 1));

			if (!cookie_load(d, c)) {
				cookie = c;
				break;
			}
		}
	}
	if (!cookie) {
		cookie = d->next_cookie++;
		if (d->next_cookie > d->cookie_reserved) {
			d->cookie_reserved = d->next_cookie + COOKIE_PREALLOC;
			if (t)
				emit_dir_meta(t, d);
		}
	} else if (cookie >= d->next_cookie && cookie < COOKIE_HASHED) {
		d->next_cookie = cookie + 1;
		if (d->cookie_reserved < d->next_cookie)
			d->cookie_reserved = d->next_cookie;
	}
	if (cookie_load(d, cookie)) {
		mds_obj_free(MDS_MEM_DENTRY, dn, sizeof(*dn) + n + 1);
		return NULL;
	}
	dn->dir = d;
	dn->cookie = cookie;
	d->by_cookie = treap_insert(d->by_cookie, dn);
	dn->ino = ino;
	dn->dtype = dtype;
	dn->remote = remote;
	dn->namelen = (uint32_t)n;
	memcpy(dn->name, name, n + 1);
	dn->hash = name_hash(name, n);
	if (d->count + 1 > d->nbuckets)
		dir_rehash(d);
	dn->hnext = d->buckets[dn->hash & (d->nbuckets - 1)];
	d->buckets[dn->hash & (d->nbuckets - 1)] = dn;
	d->count++;
	{
		struct mfrag *f = &d->frags[mdir_frag_of(d, cookie)];
		uint64_t split = t ? cfg_uint(CFG_mds_dir_split_size) : 0;

		f->count++;
		if (split && f->count > split && f->bits + 1 <= FRAG_KEY_BITS) {
			d->split_pending = true;   /* txn_finish splits it */
			txn_touch_dir(t, d);
		}
	}
	if (remote && t)
		emit_dentry(t, dn, NULL);
	return dn;
}

void mdir_del(struct mds *m, struct mdentry *dn, struct txn *t)
{
	char oid[64];

	if (t) {
		oid_frag(oid, sizeof(oid), dn->dir, mdir_frag_of(dn->dir, dn->cookie));
		txn_edit(t, EDIT_RM, oid, dn->name, NULL, 0, NULL);
		txn_touch_dir(t, dn->dir);
	}
	dentry_unlink_mem(m, dn);
	m->cache_hooks->dentry_drop(m, dn);
	mds_obj_free(MDS_MEM_DENTRY, dn, sizeof(*dn) + dn->namelen + 1);
}

/* Add a loaded or replayed dentry to @d; for a primary link, create or
 * refresh its inode from the embedded blob. */
int mdcache_dentry_install(struct mds *m, struct mdir *d, const char *name, const struct dentry_val *v)
{
	struct mdentry *dn, *old = mdir_lookup(d, name);
	struct minode *in = NULL;
	bool fresh = false;

	if (old)
		mdir_del(m, old, NULL);
	if (!v->remote) {
		in = xa_load(&m->inodes, v->ino);
		if (!in) {
			in = minode_alloc(m, v->ino);
			fresh = true;
		}
		if (!in)
			return -ENOMEM;
		if (inode_blob_decode(v->blob, v->bloblen, in) || in->a.ino != v->ino) {
			if (fresh)
				minode_free(m, in);
			return -EBADMSG;
		}
		if (in->a.quota_max_bytes || in->a.quota_max_files)
			m->quotas_seen = true;
	}
	dn = mdir_add(m, d, name, v->ino, v->dtype, v->remote, v->cookie, NULL);
	if (!dn)
		return -ENOMEM;
	if (in) {
		mdcache_inode_mem_sync(in);
		in->primary = dn;
		in->in_table = false;
		/* an O_TMPFILE orphan given its name (txn_unstray): the stray
		 * table's removal comes first in that entry, but a name is
		 * what counts whatever the order */
		in->in_stray = false;
	}
	return 0;
}


/* ---- fragments: loading, splitting, evicting ----------------------------- */

/*
 * Read fragment @i's object into memory.  A damaged entry costs that entry;
 * on any other error what was read of it goes again and @i stays unloaded.
 */
static int frag_load(struct mds *m, struct mdir *d, uint32_t i)
{
	struct store_omap_iter it;
	const struct store_kv *kv;
	char oid[64];
	int r = 0;

	oid_frag(oid, sizeof(oid), d, i);
	store_omap_iter_init(&it, m->meta, oid, NULL, 1024);
	while (!r && (kv = store_omap_iter_next(&it)) != NULL) {
		if (kv->key[0] == '/') {
			uint64_t res;

			/* "/meta" (the head only); "/frags" is read by mdir_get */
			if (!strcmp(kv->key, DIR_META_KEY)) {
				r = mdcache_dir_meta_decode(kv->val, kv->len, &res);
				if (!r && res > d->cookie_reserved)
					d->cookie_reserved = res;
			}
		} else {
			struct dentry_val v;

			r = mdcache_dentry_value_decode(kv->val, kv->len, &v);
			if (!r)
				r = mdcache_dentry_install(m, d, kv->key, &v);
		}
		if (r == -EBADMSG) {
			/* a damaged entry costs that entry, not the directory */
			derr(MDS, "directory object %s: damaged entry '%s' skipped", oid, kv->key);
			r = 0;
		} else if (r) {
			derr(MDS, "directory object %s: entry '%s': %s", oid, kv->key, strerror(-r));
		}
	}
	if (store_omap_iter_end(&it))
		r = it.err;
	if (r) {
		frag_evict(m, d, i);
		return r;
	}
	d->frags[i].loaded = true;
	d->frags[i].last_used_ns = now_mono_ns();
	perf_inc(&c_frags_loaded, 1);
	dout(MDS, 10, "loaded directory fragment %s (%u entries)", oid, d->frags[i].count);
	return 0;
}

static int frag_want(struct mds *m, struct mdir *d, uint32_t i)
{
	d->frags[i].last_used_ns = d->last_used_ns;
	return d->frags[i].loaded ? 0 : frag_load(m, d, i);
}

/* Replace @d's leaves by the encoded tree @p (a "/frags" value); every new
 * leaf is loaded if @loaded, and counts what memory holds of it. */
static int frags_set(struct mdir *d, const void *p, size_t len, bool loaded)
{
	struct mfrag *f = NULL;
	uint32_t n = 0, i;
	uint64_t idx;
	struct mdentry *dn;
	int r = mdcache_dir_frags_decode(p, len, &f, &n);

	if (r)
		return r;
	for (i = 0; i < n; i++)
		f[i].loaded = loaded;
	mds_mem_sub(MDS_MEM_DIR, d->frags);
	free(d->frags);
	d->frags = f;
	mds_mem_add(MDS_MEM_DIR, d->frags);
	d->nfrags = n;
	idx = 0;
	while ((dn = mdir_cookie_find(d, &idx))) {
		d->frags[mdir_frag_of(d, idx)].count++;
		if (idx == UINT64_MAX)
			break;
		idx++;
	}
	return 0;
}

int mdir_get(struct mds *m, uint64_t ino, struct mdir **out)
{
	struct mdir *d;
	char oid[64];
	void *val = NULL;
	size_t len = 0;
	int r;

	rcu_read_lock();
	d = xa_load(&m->dirs, ino);
	rcu_read_unlock();
	if (d) {
		d->last_used_ns = now_mono_ns();
		*out = d;
		return 0;
	}
	d = mdir_create(m, ino);
	if (!d)
		return -ENOMEM;
	oid_dir(oid, sizeof(oid), ino);
	r = store_omap_get(m->meta, oid, DIR_FRAGS_KEY, &val, &len);
	if (r == -ENOENT) {
		/* one fragment, the head itself (every directory of an older
		 * filesystem): read whole, as always */
		d->frags[0].loaded = false;
		r = frag_load(m, d, 0);
	} else if (!r) {
		/* fragments, loaded on demand; the head keeps "/meta" */
		r = frags_set(d, val, len, false);
		free(val);
		val = NULL;
		if (!r) {
			uint64_t res;

			r = store_omap_get(m->meta, oid, DIR_META_KEY, &val, &len);
			if (!r && !mdcache_dir_meta_decode(val, len, &res) && res > d->cookie_reserved)
				d->cookie_reserved = res;
			if (r == -ENOENT)
				r = 0;
			free(val);
		} else {
			derr(MDS, "directory %" PRIx64 ": damaged fragment tree", ino);
		}
	}
	if (r) {
		mdcache_mdir_free_mem(m, d);
		return r;
	}
	if (d->cookie_reserved > d->next_cookie)
		d->next_cookie = d->cookie_reserved;
	d->cookie_reserved = d->next_cookie;
	dout(MDS, 10, "opened directory %" PRIx64 " (%u fragments, %u entries in memory)", ino, d->nfrags, d->count);
	*out = d;
	return 0;
}

int mdir_get_dir(struct mds *m, uint64_t ino, struct mdir **out)
{
	struct minode *in;
	int r = inode_get(m, ino, &in);

	if (r)
		return r;
	if (!S_ISDIR(in->a.mode))
		return -ENOTDIR;
	return mdir_get(m, ino, out);
}

int mdir_load_all(struct mds *m, struct mdir *d)
{
	int r = 0;

	for (uint32_t i = 0; i < d->nfrags && !r; i++)
		r = frag_want(m, d, i);
	return r;
}

int mdir_load_name(struct mds *m, struct mdir *d, const char *name)
{
	uint64_t h;
	uint32_t a, b;
	int r;

	d->last_used_ns = now_mono_ns();
	if (d->nfrags == 1)
		return frag_want(m, d, 0);
	if (!m->have_cookie_key)
		return mdir_load_all(m, d);
	/* the name's cookie is its hash, or one of the next 63 after a
	 * collision (mdir_add): the fragments of both ends */
	h = siphash24(m->cookie_key, name, strlen(name)) & (COOKIE_HASHED - 1);
	a = mdir_frag_of(d, COOKIE_HASHED | h);
	b = mdir_frag_of(d, COOKIE_HASHED | ((h + 63) & (COOKIE_HASHED - 1)));
	r = frag_want(m, d, a);
	if (!r && b != a)
		r = frag_want(m, d, b);
	return r;
}

int mdir_lookup_load(struct mds *m, struct mdir *d, const char *name, struct mdentry **out)
{
	int r = mdir_load_name(m, d, name);

	*out = r ? NULL : mdir_lookup(d, name);
	return r;
}

int mdir_is_empty(struct mds *m, struct mdir *d)
{
	for (uint32_t i = 0; i < d->nfrags; i++) {
		int r = frag_want(m, d, i);

		if (r)
			return r;
		if (d->frags[i].count)
			return 0;
	}
	return 1;
}

int mdir_readdir_span(struct mds *m, struct mdir *d, uint64_t from, uint32_t max, uint64_t *end)
{
	uint32_t i = mdir_frag_of(d, from), n = 0;
	int r;

	d->last_used_ns = now_mono_ns();
	for (; i < d->nfrags; i++) {
		uint64_t idx = from > frag_first(d, i) ? from : frag_first(d, i);
		struct mdentry *dn;
		struct mdir_iter it;

		if ((r = frag_want(m, d, i)))
			return r;
		/* what this fragment adds from @from on */
		mdir_iter_init(&it, d, idx);
		while (n < max && (dn = mdir_iter_next(&it)) && dn->cookie < frag_end(d, i))
			n++;
		if (n >= max)
			break;
	}
	*end = i + 1 < d->nfrags ? frag_end(d, i) : UINT64_MAX;
	return 0;
}

/* Drop fragment @i's dentries and their inodes from memory (nothing journaled). */
static void frag_evict(struct mds *m, struct mdir *d, uint32_t i)
{
	uint64_t idx = frag_first(d, i), end = frag_end(d, i);
	struct mdentry *dn;

	while ((dn = mdir_cookie_find(d, &idx)) && idx < end) {
		if (!dn->remote) {
			struct minode *in = xa_load(&m->inodes, dn->ino);

			if (in && in->primary == dn)
				minode_free(m, in);
		}
		mdir_del(m, dn, NULL);
		if (idx == UINT64_MAX)
			break;
		idx++;
	}
	d->frags[i].loaded = false;
	d->frags[i].count = 0;
}

static void register_frag_perf(void)
{
	perf_register_counter("mds_cache", "dir_splits", &c_dir_splits);
	perf_register_counter("mds_cache", "dir_frags_loaded", &c_frags_loaded);
	perf_register_counter("mds_cache", "dir_frags_evicted", &c_frags_evicted);
}

static void emit_frags(struct txn *t, struct mdir *d)
{
	struct mdsp_buf b;
	char oid[64];

	mdsp_buf_init(&b);
	mdcache_dir_frags_encode(&b, d->frags, d->nfrags);
	oid_dir(oid, sizeof(oid), d->ino);
	txn_edit(t, EDIT_SET, oid, DIR_FRAGS_KEY, b.data, b.len, NULL);
	mdsp_buf_free(&b);
	txn_touch_dir(t, d);
}

/*
 * Split loaded fragment @i into 2^bits, all in @t's journal entry: the old
 * object emptied (the head, which keeps "/meta") or removed, the new leaf
 * list in the head's "/frags", and every dentry of it written whole into
 * its new fragment's object.  One journal entry, so a crash leaves the
 * split done or not begun: replay (mdcache_replay_edit) treats the
 * emptying and the removal as moves, not as removed names.
 */
static int frag_split(struct mds *m, struct mdir *d, uint32_t i, uint32_t bits, struct txn *t)
{
	uint32_t nb = 1u << bits, k;
	struct mfrag old = d->frags[i], *nf;
	uint64_t idx = frag_first(d, i), end = frag_end(d, i);
	struct mdentry *dn;
	char oid[64];

	if (old.bits + bits > FRAG_KEY_BITS)
		return -ERANGE;
	mds_mem_sub(MDS_MEM_DIR, d->frags);
	nf = realloc(d->frags, (d->nfrags + nb - 1) * sizeof(*nf));
	if (!nf) {
		mds_mem_add(MDS_MEM_DIR, d->frags);
		return -ENOMEM;
	}
	mds_mem_add(MDS_MEM_DIR, nf);
	d->frags = nf;
	oid_frag(oid, sizeof(oid), d, i);
	if (old.bits) {
		txn_edit(t, EDIT_REMOVE, oid, NULL, NULL, 0, NULL);
	} else {
		txn_edit(t, EDIT_CLEAR, oid, NULL, NULL, 0, NULL);
		emit_dir_meta(t, d);
	}
	memmove(&nf[i + nb], &nf[i + 1], (d->nfrags - i - 1) * sizeof(*nf));
	for (k = 0; k < nb; k++) {
		nf[i + k] = old;
		nf[i + k].bits = old.bits + bits;
		nf[i + k].value = (old.value << bits) | k;
		nf[i + k].lo = nf[i + k].value << (FRAG_KEY_BITS - nf[i + k].bits);
		nf[i + k].count = 0;
	}
	d->nfrags += nb - 1;
	emit_frags(t, d);
	while ((dn = mdir_cookie_find(d, &idx)) && idx < end) {
		struct minode *in = NULL;

		if (!dn->remote) {
			in = xa_load(&m->inodes, dn->ino);
			if (in && in->primary != dn)
				in = NULL;
		}
		d->frags[mdir_frag_of(d, idx)].count++;
		emit_dentry(t, dn, in);
		if (idx == UINT64_MAX)
			break;
		idx++;
	}
	dout(MDS, 5, "directory %" PRIx64 ": fragment %s (%u entries) split in %u", d->ino, oid, old.count, nb);
	perf_inc(&c_dir_splits, 1);
	return 0;
}

/* Split every loaded fragment of @d past mds_dir_split_size, in @t. */
static void mdir_split_full(struct mds *m, struct mdir *d, struct txn *t)
{
	uint64_t max = cfg_uint(CFG_mds_dir_split_size);
	uint32_t bits = cfg_uint(CFG_mds_dir_split_bits), i;

	d->split_pending = false;
	if (!max)
		return;
	if (bits < 1)
		bits = 1;
	if (bits > 8)
		bits = 8;
	for (i = 0; i < d->nfrags; i++) {
		struct mfrag *f = &d->frags[i];

		if (f->loaded && f->count > max && f->bits + bits <= FRAG_KEY_BITS) {
			if (frag_split(m, d, i, bits, t))
				break;
			i--;    /* its first child may need splitting again */
		}
	}
}

int mdcache_frags_replay(struct mds *m, struct mdir *d, const void *val, uint32_t len)
{
	(void)m;
	/* replay holds every fragment of a directory it touches */
	return frags_set(d, val, len, true);
}


static int inode_get_depth(struct mds *m, uint64_t ino, struct minode **out, int depth)
{
	struct minode *in, *pin;
	struct mdir *d;
	struct mdentry *dn;
	char oid[64], key[32], *name = NULL;
	void *val = NULL;
	size_t len;
	uint64_t parent;
	int r;

	rcu_read_lock();
	in = xa_load(&m->inodes, ino);
	rcu_read_unlock();
	if (in) {
		*out = in;
		return 0;
	}
	if (depth > ANCHOR_DEPTH_MAX || ino < MDSP_ROOT_INO)
		return -ESTALE;
	oid_anchor(oid, sizeof(oid), ino);
	key_ino(key, sizeof(key), ino);
	r = store_omap_get(m->meta, oid, key, &val, &len);
	if (r == -ENOENT)
		return -ESTALE;
	if (r)
		return r;
	r = mdcache_anchor_decode(val, len, &parent, &name);
	free(val);
	if (r) {
		free(name);
		return -ESTALE;
	}
	r = inode_get_depth(m, parent, &pin, depth + 1);
	if (!r && !S_ISDIR(pin->a.mode))
		r = -ESTALE;
	if (!r)
		r = mdir_get(m, parent, &d);
	if (!r)
		r = mdir_lookup_load(m, d, name, &dn);
	if (!r) {
		rcu_read_lock();
		in = (dn && dn->ino == ino && !dn->remote) ? xa_load(&m->inodes, ino) : NULL;
		rcu_read_unlock();
		r = in ? 0 : -ESTALE;
	}
	free(name);
	if (!r)
		*out = in;
	return r;
}

int inode_get(struct mds *m, uint64_t ino, struct minode **out)
{
	return inode_get_depth(m, ino, out, 0);
}

/*
 * Grant the inode numbers [next_ino, max(next_ino + n, min_end)) (to a
 * session's pool, see prealloc.c): they are never handed out again.  The
 * new high-water mark rides in @t, the same journal entry as the grant, and
 * is not reserved ahead: after a crash next_ino is exactly the durable mark,
 * so an ino above it was never durably given to anyone (which is what lets
 * a replay take an ino whose grant was lost in the crash).
 * Caller holds mds->lock.  Returns the first ino of the grant.
 */
uint64_t mds_grant_inos(struct mds *m, struct txn *t, uint64_t n, uint64_t min_end)
{
	uint64_t start = m->next_ino, end = start + n;
	uint8_t v[8];

	if (end < min_end)
		end = min_end;
	m->next_ino = m->ino_reserved = end;
	le64_put(v, end);
	txn_edit(t, EDIT_SET, OID_TABLE, "next_ino", v, 8, NULL);
	return start;
}

/* ---- transactions --------------------------------------------------------- */

void txn_init(struct txn *t)
{
	memset(t, 0, sizeof(*t));
	t->dirty = t->dirty_inline;
	t->dirty_cap = TXN_INLINE_DIRTY;
	mdsp_buf_init(&t->b);
	enc_u32(&t->b, 0);
}

void txn_free(struct txn *t)
{
	mdsp_buf_free(&t->b);
	if (t->dirty != t->dirty_inline)
		free(t->dirty);
	t->dirty = t->dirty_inline;
	t->dirty_cap = TXN_INLINE_DIRTY;
}

void txn_edit(struct txn *t, enum edit_op op, const char *oid, const char *key, const void *val,
	      size_t len, const char *key2)
{
	enc_u8(&t->b, (uint8_t)op);
	enc_str(&t->b, oid);
	enc_str(&t->b, key);
	if (op == EDIT_SET)
		enc_blob(&t->b, val, (uint32_t)len);
	else if (op == EDIT_RMRANGE)
		enc_str(&t->b, key2);
	t->n++;
	if (!t->b.oom)
		le32_put(t->b.data, t->n);
}

void txn_dirty(struct txn *t, struct minode *in)
{
	if (in->dirty)
		return;
	if (t->ndirty == t->dirty_cap) {
		int cap = t->dirty_cap * 2;
		struct minode **v = malloc((size_t)cap * sizeof(*v));

		if (!v) {
			/* its edit would be lost: stop the MDS rather than
			 * acknowledge a change it cannot journal */
			derr(MDS, "txn: out of memory for %d dirty inodes", cap);
			abort();
		}
		memcpy(v, t->dirty, (size_t)t->ndirty * sizeof(*v));
		if (t->dirty != t->dirty_inline)
			free(t->dirty);
		t->dirty = v;
		t->dirty_cap = cap;
	}
	in->dirty = true;
	t->dirty[t->ndirty++] = in;
}

void txn_kill_inode(struct txn *t, struct minode *in)
{
	if (t->ndead < (int)(sizeof(t->dead) / sizeof(t->dead[0])))
		t->dead[t->ndead++] = in;
}

void txn_unstray(struct txn *t, struct minode *in)
{
	char key[32];

	key_ino(key, sizeof(key), in->a.ino);
	txn_edit(t, EDIT_RM, OID_STRAY, key, NULL, 0, NULL);
	in->in_stray = false;
	in->linkable = false;
}

static void emit_anchor(struct txn *t, struct minode *in)
{
	struct mdsp_buf b;
	size_t off;
	char oid[64], key[32];

	mdsp_buf_init(&b);
	off = enc_begin(&b, V_ANCHOR, 1);
	enc_u64(&b, in->primary->dir->ino);
	enc_str(&b, in->primary->name);
	enc_end(&b, off);
	oid_anchor(oid, sizeof(oid), in->a.ino);
	key_ino(key, sizeof(key), in->a.ino);
	txn_edit(t, EDIT_SET, oid, key, b.data, b.len, NULL);
	mdsp_buf_free(&b);
}

static void emit_inode(struct mds *m, struct txn *t, struct minode *in)
{
	struct mdsp_buf b;
	char key[32];

	if (in->a.ino == MDSP_ROOT_INO) {
		mdsp_buf_init(&b);
		inode_blob_encode(&b, in);
		txn_edit(t, EDIT_SET, OID_TABLE, "root", b.data, b.len, NULL);
		mdsp_buf_free(&b);
	} else if (in->in_table || in->in_stray) {
		mdsp_buf_init(&b);
		inode_blob_encode(&b, in);
		key_ino(key, sizeof(key), in->a.ino);
		txn_edit(t, EDIT_SET, in->in_stray ? OID_STRAY : OID_INOTABLE, key, b.data, b.len, NULL);
		mdsp_buf_free(&b);
	} else if (in->primary) {
		emit_dentry(t, in->primary, in);
		if (in->anchor_dirty)
			emit_anchor(t, in);
	}
	in->anchor_dirty = false;
	(void)m;
}

void txn_finish(struct mds *m, struct txn *t)
{
	int i, k;
	char oid[64], key[32];

	for (i = 0; i < t->ndirty; i++) {
		struct minode *in = t->dirty[i];
		bool dead = false;

		for (k = 0; k < t->ndead; k++)
			if (t->dead[k] == in)
				dead = true;
		in->dirty = false;
		if (!dead) {
			emit_inode(m, t, in);
			mdcache_inode_mem_sync(in);
		}
	}
	t->ndirty = 0;
	for (k = 0; k < t->ndead; k++) {
		struct minode *in = t->dead[k];
		bool orphan = m->cache_hooks->keeps_orphan(in);

		key_ino(key, sizeof(key), in->a.ino);
		if (in->in_table)
			txn_edit(t, EDIT_RM, OID_INOTABLE, key, NULL, 0, NULL);
		oid_anchor(oid, sizeof(oid), in->a.ino);
		txn_edit(t, EDIT_RM, oid, key, NULL, 0, NULL);
		if (orphan) {
			/* a client has it (a file open, anything else cached): it
			 * lives on in the stray table until the last session lets
			 * it go (locker.c); those that only cache it hear so now */
			in->in_table = false;
			in->in_stray = true;
			in->primary = NULL;
			emit_inode(m, t, in);
			m->cache_hooks->note_orphan();
			m->cache_hooks->stray_notify(m, in);
			dout(MDS, 5, "inode %" PRIx64 " lost its last link while a client has it: an orphan now",
			     in->a.ino);
			t->dead[k] = NULL;
			continue;
		}
		m->cache_hooks->purge_inode(m, t, in);
		if (m->nfiles)
			m->nfiles--;
		minode_free(m, in);
	}
	for (k = 0; k < t->ndead && !t->dead[k]; k++)
		;
	if (k < t->ndead) {
		uint8_t v[8];

		le64_put(v, m->nfiles);
		txn_edit(t, EDIT_SET, OID_TABLE, "nfiles", v, 8, NULL);
	}
	t->ndead = 0;
	/* fragments that grew past the split size: split in this entry
	 * (after the dirty inodes, so the moved dentries carry them) */
	for (i = 0; i < t->ndirs; i++)
		if (t->dirs[i]->split_pending)
			mdir_split_full(m, t->dirs[i], t);
}

void mdcache_set_hooks(struct mds *m, const struct mdcache_hooks *h)
{
	m->cache_hooks = h;
}

void mdcache_free(struct mds *m)
{
	uint64_t idx;
	struct mdir *d;
	struct minode *in;

	rcu_read_lock();
	xa_for_each(&m->dirs, idx, d)
		mdcache_mdir_free_mem(m, d);
	xa_for_each(&m->inodes, idx, in)
		minode_free(m, in);
	rcu_read_unlock();
	m->root = NULL;
	free(m->replay_unlinked);
	m->replay_unlinked = NULL;
	m->nreplay_unlinked = m->replay_unlinked_cap = 0;
}

/* ---- cache trimming ---------------------------------------------------------- */

/*
 * A directory may leave memory once nothing about it is only in the
 * journal: its object has no edit in an unexpired segment (which also
 * covers its children's inodes and anchors, journaled with their dentries).
 * Its primary children go with it and come back through the anchors or a
 * lookup; directories of its children that are loaded stay.  The root and
 * the inode table stay.
 */
static void mdir_evict(struct mds *m, struct mdir *d)
{
	uint32_t i;
	struct mdentry *dn;

	for (i = 0; i < d->nbuckets; i++)
		for (dn = d->buckets[i]; dn; dn = dn->hnext) {
			struct minode *in;

			if (dn->remote)
				continue;
			in = xa_load(&m->inodes, dn->ino);
			if (in && in->primary == dn)
				minode_free(m, in);
		}
	mdcache_mdir_free_mem(m, d);
}

/* Is the cache past its bounds (@lo: past where trimming stops)? */
static bool cache_over(struct mds *m, uint64_t ilimit, uint64_t blimit, bool lo)
{
	if (ilimit && m->ninodes_cached > (lo ? ilimit - ilimit / 10 : ilimit))
		return true;
	return blimit && mds_mem_total() > (lo ? blimit - blimit / 10 : blimit - blimit / 20);
}

/*
 * Past mds_cache_size inodes or 95% of mds_cache_memory_limit bytes, evict
 * clean unused directories down to 90%; what is still over after that is
 * what clients pin (caps, leases on the names): ask them for that many
 * caps and leases back, each tick as long as it lasts (the recall paces
 * itself, locker.c locker_recall), and evict what they let go of at a
 * later tick.
 */
uint64_t mdcache_trim(struct mds *m, uint64_t clean_below)
{
	uint64_t ilimit = cfg_uint(CFG_mds_cache_size), blimit = mdcache_budget();
	uint64_t idx, now = now_mono_ns(), n = 0, nfrags = 0, npinned = 0, want = 0, bytes, before = mds_mem_total();
	struct mdir *d;

	if (!cache_over(m, ilimit, blimit, false))
		return 0;
	rcu_read_lock();
	xa_for_each(&m->dirs, idx, d) {
		if (!cache_over(m, ilimit, blimit, true))
			break;
		if (d->last_jseq >= clean_below)
			continue;
		if (mdir_fragmented(d)) {
			/* fragment by fragment: the directory stays, its cold
			 * fragments go (read again when a name in them is
			 * wanted); a pinned one counts for the recall */
			for (uint32_t i = 0; i < d->nfrags && cache_over(m, ilimit, blimit, true); i++) {
				struct mfrag *f = &d->frags[i];

				if (!f->loaded || mono_since(now, f->last_used_ns) < 1000000000ull)
					continue;
				if (m->cache_hooks->dir_pinned(m, d, frag_first(d, i), frag_end(d, i))) {
					npinned++;
					continue;
				}
				frag_evict(m, d, i);
				perf_inc(&c_frags_evicted, 1);
				nfrags++;
			}
			continue;
		}
		if (d->ino == MDSP_ROOT_INO || mono_since(now, d->last_used_ns) < 1000000000ull)
			continue;
		if (m->cache_hooks->dir_pinned(m, d, 0, UINT64_MAX)) {
			npinned++;
			continue;
		}
		mdir_evict(m, d);
		n++;
	}
	rcu_read_unlock();
	bytes = mds_mem_total();
	if (npinned && cache_over(m, ilimit, blimit, true)) {
		/* how many inodes' worth we are over, at the cache's own
		 * average bytes per inode */
		if (ilimit && m->ninodes_cached > ilimit - ilimit / 10)
			want = m->ninodes_cached - (ilimit - ilimit / 10);
		if (blimit && bytes > blimit - blimit / 10 && m->ninodes_cached) {
			uint64_t per = bytes / m->ninodes_cached;
			uint64_t w = (bytes - (blimit - blimit / 10)) / (per ? per : 1) + 1;

			if (w > want)
				want = w;
		}
		m->cache_hooks->recall(m, want);
	}
	if (n || nfrags || want)
		dout(MDS, 5, "cache trim: evicted %" PRIu64 " directories and %" PRIu64 " fragments, %" PRIu64
			     " pinned by clients, recalling %" PRIu64 "; %" PRIu64 " inodes, %" PRIu64 " bytes cached",
		     n, nfrags, npinned, want, m->ninodes_cached, bytes);
	return before > bytes ? before - bytes : 0;
}
