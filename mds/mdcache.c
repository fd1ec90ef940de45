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

void mdcache_register_perf(void)
{
	int k;

	for (k = 0; k < MDS_MEM_NKINDS; k++)
		perf_register_fn("mds_mem", mds_mem_names[k], g_mem, &mds_mem_bytes[k]);
	perf_register_fn("mds_mem", "total", g_mem_total, NULL);
	perf_register_fn("mds_mem", "limit", g_mem_limit, NULL);
	perf_register_fn("mds_mem", "rss", g_rss, NULL);
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

static void txn_touch_dir(struct txn *t, struct mdir *d);
static void txn_untouch_dir(struct txn *t, struct mdir *d);

static uint32_t name_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--) {
		h ^= (uint8_t)*s++;
		h *= 16777619u;
	}
	return h;
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
	struct mdir *d = mds_obj_alloc(MDS_MEM_DIR, sizeof(*d));

	if (!d)
		return NULL;
	d->ino = ino;
	d->last_used_ns = now_mono_ns();
	d->next_cookie = COOKIE_FIRST;
	d->cookie_reserved = COOKIE_FIRST;
	if (xa_store(&m->dirs, ino, d)) {
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
	oid_dir(oid, sizeof(oid), dn->dir->ino);
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
	if (remote && t)
		emit_dentry(t, dn, NULL);
	return dn;
}

void mdir_del(struct mds *m, struct mdentry *dn, struct txn *t)
{
	char oid[64];

	if (t) {
		oid_dir(oid, sizeof(oid), dn->dir->ino);
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


int mdir_get(struct mds *m, uint64_t ino, struct mdir **out)
{
	struct mdir *d;
	struct store_omap_iter it;
	const struct store_kv *kv;
	char oid[64];
	int r = 0;

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
	store_omap_iter_init(&it, m->meta, oid, NULL, 1024);
	while (!r && (kv = store_omap_iter_next(&it)) != NULL) {
		if (!strcmp(kv->key, DIR_META_KEY)) {
			uint64_t res;

			r = mdcache_dir_meta_decode(kv->val, kv->len, &res);
			if (!r && res > d->cookie_reserved)
				d->cookie_reserved = res;
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
		mdcache_mdir_free_mem(m, d);
		return r;
	}
	if (d->cookie_reserved > d->next_cookie)
		d->next_cookie = d->cookie_reserved;
	d->cookie_reserved = d->next_cookie;
	dout(MDS, 10, "loaded directory %" PRIx64 " (%u entries)", ino, d->count);
	*out = d;
	return 0;
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
	if (!r) {
		dn = mdir_lookup(d, name);
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
	uint64_t ilimit = cfg_uint(CFG_mds_cache_size), blimit = cfg_uint(CFG_mds_cache_memory_limit);
	uint64_t idx, now = now_mono_ns(), n = 0, npinned = 0, want = 0, bytes, before = mds_mem_total();
	struct mdir *d;

	if (!cache_over(m, ilimit, blimit, false))
		return 0;
	rcu_read_lock();
	xa_for_each(&m->dirs, idx, d) {
		if (!cache_over(m, ilimit, blimit, true))
			break;
		if (d->ino == MDSP_ROOT_INO || d->last_jseq >= clean_below ||
		    mono_since(now, d->last_used_ns) < 1000000000ull)
			continue;
		if (m->cache_hooks->dir_pinned(m, d)) {
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
	if (n || want)
		dout(MDS, 5, "cache trim: evicted %" PRIu64 " directories, %" PRIu64 " pinned by clients, recalling %"
			     PRIu64 "; %" PRIu64 " inodes, %" PRIu64 " bytes cached", n, npinned, want,
		     m->ninodes_cached, bytes);
	return before > bytes ? before - bytes : 0;
}
