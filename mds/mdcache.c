/*
 * mdcache.c - the namespace in memory and its layout in the store.
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
 * Eviction keeps that true: past mds_cache_size inodes, mdcache_trim()
 * evicts (mdir_evict) only directories whose last journaled change is
 * below the expired mark (clean_below: their objects are current), unused
 * for a second, and cached by no client (a pinned one is recalled from its
 * clients first and evicted on a later pass); the root never goes.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "common/config.h"
#include "common/log.h"
#include "common/siphash.h"
#include "common/rcu.h"
#include "common/time.h"
#include "mds/codec.h"
#include "mds/mds.h"
#include "mds/mdcache.h"

#define V_INODE_BLOB 3        /* 2: flags; 3: the data extents (minode.ext) */
#define BLOB_LINKABLE 0x1     /* minode.linkable */
#define V_DENTRY     1
#define V_DIRMETA    1
#define V_ANCHOR     1
#define INO_FIRST    0x1000ull
#define COOKIE_PREALLOC 1024
#define ANCHOR_SHARDS 64
#define ANCHOR_DEPTH_MAX 4096

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

/* ---- inodes ------------------------------------------------------------- */

static void xattrs_free(struct minode *in)
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
	struct minode *in = calloc(1, sizeof(*in));

	if (!in)
		return NULL;
	in->a.ino = ino;
	CDS_INIT_LIST_HEAD(&in->caps);
	if (xa_store(&m->inodes, ino, in)) {
		free(in);
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
	xattrs_free(in);
	free(in->symlink);
	mdsp_extset_free(&in->ext);
	free(in);
}

struct mxattr *xattr_find(struct minode *in, const char *name)
{
	struct mxattr *x;

	for (x = in->xattrs; x; x = x->next)
		if (!strcmp(x->name, name))
			return x;
	return NULL;
}

int inode_blob_encode(struct mdsp_buf *b, const struct minode *in)
{
	size_t off = enc_begin(b, V_INODE_BLOB, 1);
	const struct mxattr *x;
	uint32_t n = 0;

	mdsp_encode_inode(b, &in->a);
	enc_str(b, in->symlink);
	for (x = in->xattrs; x; x = x->next)
		n++;
	enc_u32(b, n);
	for (x = in->xattrs; x; x = x->next) {
		enc_str(b, x->name);
		enc_blob(b, x->val, x->len);
	}
	/* v2: an older MDS steps over this: it never lets an nlink-0 inode
	 * be linked anyway */
	enc_u32(b, in->linkable ? BLOB_LINKABLE : 0);
	/* v3: what the data objects hold (none while blocks is unknown) */
	n = in->a.blocks == MDSP_BLOCKS_UNKNOWN ? 0 : in->ext.n;
	enc_u32(b, n);
	for (uint32_t i = 0; i < n; i++) {
		enc_u64(b, in->ext.v[i].off);
		enc_u64(b, in->ext.v[i].len);
	}
	enc_end(b, off);
	return b->oom ? -ENOMEM : 0;
}

void inode_blocks_sync(struct minode *in)
{
	if (in->a.blocks != MDSP_BLOCKS_UNKNOWN)
		in->a.blocks = mdsp_extset_bytes(&in->ext);
}

/* Decode into @in, replacing its attributes, symlink and xattrs. */
int inode_blob_decode(const void *p, size_t len, struct minode *in)
{
	struct dec c, s;
	struct mdsp_inode a;
	struct mdsp_extset ext = { 0 };
	const uint8_t *q;
	char *symlink = NULL;
	struct mxattr *xs = NULL, **tail = &xs, *x;
	uint32_t n, i, bytes = 0, flags = 0;
	uint8_t ver;

	dec_init(&c, p, len);
	if (!(ver = dec_enter(&c, V_INODE_BLOB, &s)))
		return -EBADMSG;
	q = s.p;
	if (mdsp_decode_inode(&q, s.end, &a))
		return -EBADMSG;
	s.p = q;
	symlink = dec_str(&s, MDSP_PATH_MAX);
	n = dec_u32(&s);
	for (i = 0; i < n && !s.bad; i++) {
		uint32_t vlen;
		const void *v;

		x = calloc(1, sizeof(*x));
		if (!x) {
			s.bad = true;
			break;
		}
		*tail = x;
		tail = &x->next;
		x->name = dec_str(&s, MDSP_XATTR_NAME_MAX);
		v = dec_blob_ref(&s, MDSP_XATTR_SIZE_MAX, &vlen);
		if (s.bad)
			break;
		x->val = malloc(vlen ? vlen : 1);
		if (!x->val) {
			s.bad = true;
			break;
		}
		if (vlen)
			memcpy(x->val, v, vlen);
		x->len = vlen;
		bytes += vlen + (uint32_t)strlen(x->name);
	}
	if (ver >= 2)
		flags = dec_u32(&s);
	if (ver >= 3 && !s.bad) {
		/* the data extents; ones that make no sense (damage) make the
		 * blocks unknown, as for a file from before they were kept */
		n = dec_u32(&s);
		if (!s.bad && n && (size_t)(s.end - s.p) >= (size_t)n * 16) {
			struct mdsp_extent *v = malloc((size_t)n * sizeof(*v));

			for (i = 0; v && i < n; i++) {
				v[i].off = dec_u64(&s);
				v[i].len = dec_u64(&s);
			}
			if (!v || !mdsp_extset_valid(v, n) || mdsp_extset_set(&ext, v, n))
				a.blocks = MDSP_BLOCKS_UNKNOWN;
			free(v);
		} else if (n) {
			a.blocks = MDSP_BLOCKS_UNKNOWN;
		}
	}
	if (s.bad) {
		struct minode tmp = { .xattrs = xs };

		xattrs_free(&tmp);
		free(symlink);
		mdsp_extset_free(&ext);
		return -EBADMSG;
	}
	xattrs_free(in);
	free(in->symlink);
	mdsp_extset_free(&in->ext);
	in->ext = ext;
	in->a = a;
	if (ver < 3 || !S_ISREG(a.mode))
		mdsp_extset_clear(&in->ext);
	inode_blocks_sync(in);
	if (symlink && !*symlink) {
		free(symlink);
		symlink = NULL;
	}
	in->symlink = symlink;
	in->xattrs = xs;
	in->xattr_bytes = bytes;
	in->linkable = flags & BLOB_LINKABLE;
	return 0;
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

static void dentry_value_encode(struct mdsp_buf *b, const struct mdentry *dn, const struct minode *in)
{
	size_t off = enc_begin(b, V_DENTRY, 1);

	enc_u64(b, dn->cookie);
	enc_u8(b, dn->remote ? 1 : 0);
	enc_u64(b, dn->ino);
	enc_u32(b, dn->dtype);
	if (!dn->remote && in) {
		struct mdsp_buf ib;

		mdsp_buf_init(&ib);
		inode_blob_encode(&ib, in);
		if (ib.oom)
			b->oom = true;
		enc_blob(b, ib.data, (uint32_t)ib.len);
		mdsp_buf_free(&ib);
	} else {
		enc_blob(b, NULL, 0);
	}
	enc_end(b, off);
}

struct dentry_val {
	uint64_t cookie, ino;
	uint32_t dtype;
	bool remote;
	const void *blob;
	uint32_t bloblen;
};

static int dentry_value_decode(const void *p, size_t len, struct dentry_val *v)
{
	struct dec c, s;

	dec_init(&c, p, len);
	if (!dec_enter(&c, V_DENTRY, &s))
		return -EBADMSG;
	v->cookie = dec_u64(&s);
	v->remote = dec_u8(&s) != 0;
	v->ino = dec_u64(&s);
	v->dtype = dec_u32(&s);
	v->blob = dec_blob_ref(&s, 1u << 24, &v->bloblen);
	if (s.bad || (!v->remote && !v->bloblen))
		return -EBADMSG;
	return 0;
}

static void dir_rehash(struct mdir *d)
{
	uint32_t nb = d->nbuckets ? d->nbuckets * 4 : 16, i;
	struct mdentry **b = calloc(nb, sizeof(*b)), *dn, *next;

	if (!b)
		return;             /* keep the old table: slower, still correct */
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
	struct mdir *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->ino = ino;
	d->last_used_ns = now_mono_ns();
	d->next_cookie = COOKIE_FIRST;
	d->cookie_reserved = COOKIE_FIRST;
	xa_init(&d->by_cookie);
	if (xa_store(&m->dirs, ino, d)) {
		xa_destroy(&d->by_cookie);
		free(d);
		return NULL;
	}
	m->ndirs_cached++;
	return d;
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
	xa_erase(&d->by_cookie, dn->cookie);
	d->count--;
	if (!dn->remote) {
		in = xa_load(&m->inodes, dn->ino);
		if (in && in->primary == dn)
			in->primary = NULL;
	}
}

static void mdir_free_mem(struct mds *m, struct mdir *d)
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
			xa_erase(&d->by_cookie, dn->cookie);
			m->cache_hooks->dentry_drop(m, dn);
			free(dn);
		}
	free(d->buckets);
	xa_destroy(&d->by_cookie);
	if (xa_load(&m->dirs, d->ino) == d) {
		xa_erase(&m->dirs, d->ino);
		m->ndirs_cached--;
	}
	free(d);
}

void mdir_destroy(struct mds *m, struct mdir *d, struct txn *t)
{
	char oid[64];

	if (t) {
		oid_dir(oid, sizeof(oid), d->ino);
		txn_edit(t, EDIT_REMOVE, oid, NULL, NULL, 0, NULL);
		txn_untouch_dir(t, d);
	}
	mdir_free_mem(m, d);
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
	dentry_value_encode(&b, dn, in);
	oid_dir(oid, sizeof(oid), dn->dir->ino);
	txn_edit(t, EDIT_SET, oid, dn->name, b.data, b.len, NULL);
	mdsp_buf_free(&b);
	txn_touch_dir(t, dn->dir);
}

struct mdentry *mdir_add(struct mds *m, struct mdir *d, const char *name, uint64_t ino, uint32_t dtype,
			 bool remote, uint64_t cookie, struct txn *t)
{
	size_t n = strlen(name);
	struct mdentry *dn = calloc(1, sizeof(*dn) + n + 1);

	if (!dn)
		return NULL;
	if (!cookie && m && m->have_cookie_key) {
		/* from the name: stable across a remove and a make again */
		uint64_t h = siphash24(m->cookie_key, name, n) & (COOKIE_HASHED - 1);

		for (uint32_t probe = 0; probe < 64; probe++) {
			uint64_t c = COOKIE_HASHED | ((h + probe) & (COOKIE_HASHED - 1));

			if (!xa_load(&d->by_cookie, c)) {
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
	if (xa_insert(&d->by_cookie, cookie, dn)) {
		free(dn);
		return NULL;
	}
	dn->dir = d;
	dn->cookie = cookie;
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
	free(dn);
}

/* Add a loaded or replayed dentry to @d; for a primary link, create or
 * refresh its inode from the embedded blob. */
static int dentry_install(struct mds *m, struct mdir *d, const char *name, const struct dentry_val *v)
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
	}
	dn = mdir_add(m, d, name, v->ino, v->dtype, v->remote, v->cookie, NULL);
	if (!dn)
		return -ENOMEM;
	if (in) {
		in->primary = dn;
		in->in_table = false;
		/* an O_TMPFILE orphan given its name (txn_unstray): the stray
		 * table's removal comes first in that entry, but a name is
		 * what counts whatever the order */
		in->in_stray = false;
	}
	return 0;
}

static int dir_meta_decode(const void *p, size_t len, uint64_t *reserved)
{
	struct dec c, s;

	dec_init(&c, p, len);
	if (!dec_enter(&c, V_DIRMETA, &s))
		return -EBADMSG;
	*reserved = dec_u64(&s);
	return s.bad ? -EBADMSG : 0;
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

			r = dir_meta_decode(kv->val, kv->len, &res);
			if (!r && res > d->cookie_reserved)
				d->cookie_reserved = res;
		} else {
			struct dentry_val v;

			r = dentry_value_decode(kv->val, kv->len, &v);
			if (!r)
				r = dentry_install(m, d, kv->key, &v);
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
		mdir_free_mem(m, d);
		return r;
	}
	if (d->cookie_reserved > d->next_cookie)
		d->next_cookie = d->cookie_reserved;
	d->cookie_reserved = d->next_cookie;
	dout(MDS, 10, "loaded directory %" PRIx64 " (%u entries)", ino, d->count);
	*out = d;
	return 0;
}

static int anchor_decode(const void *p, size_t len, uint64_t *parent, char **name)
{
	struct dec c, s;

	dec_init(&c, p, len);
	if (!dec_enter(&c, V_ANCHOR, &s))
		return -EBADMSG;
	*parent = dec_u64(&s);
	*name = dec_str(&s, MDSP_NAME_MAX);
	return s.bad ? -EBADMSG : 0;
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
	r = anchor_decode(val, len, &parent, &name);
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
	mdsp_buf_init(&t->b);
	enc_u32(&t->b, 0);
}

void txn_free(struct txn *t)
{
	mdsp_buf_free(&t->b);
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
	if (t->ndirty == TXN_MAX_DIRTY) {
		/* no op touches more than a handful of inodes: a bug if hit */
		derr(MDS, "txn: too many dirty inodes");
		return;
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
		if (!dead)
			emit_inode(m, t, in);
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

/* ---- replay ----------------------------------------------------------------- */

static bool parse_dir_oid(const char *oid, uint64_t *ino)
{
	char *end;
	unsigned long long v;

	if (!*oid)
		return false;
	v = strtoull(oid, &end, 16);
	if (strcmp(end, ".dir"))
		return false;
	*ino = v;
	return true;
}

static int replay_table(struct mds *m, int op, const char *key, const void *val, uint32_t len)
{
	if (op != EDIT_SET)
		return 0;
	if (!strcmp(key, "root"))
		return inode_blob_decode(val, len, m->root);
	if (len != 8)
		return -EBADMSG;
	if (!strcmp(key, "next_ino")) {
		uint64_t v = le64_get(val);

		if (v > m->ino_reserved)
			m->ino_reserved = v;
	} else if (!strcmp(key, "next_sid")) {
		uint64_t v = le64_get(val);

		if (v > m->next_sid)
			m->next_sid = v;
	} else if (!strcmp(key, "nfiles")) {
		m->nfiles = le64_get(val);
	} else if (!strcmp(key, "max_file_size")) {
		m->max_file_size = le64_get(val);
	} else if (!strcmp(key, "cookie_key0") || !strcmp(key, "cookie_key1")) {
		memcpy(m->cookie_key + (key[10] == '1' ? 8 : 0), val, 8);
		m->have_cookie_key = true;   /* both are written together */
	}
	return 0;
}

/*
 * The readdir cookies' key: made at mkfs, or at the first start of a
 * filesystem made before it (written before the MDS serves, so every
 * cookie from a name is under it).
 */
int mdcache_cookie_key_ensure(struct mds *m)
{
	struct store_op *op;
	uint8_t k[16];
	ssize_t got = 0;

	if (m->have_cookie_key)
		return 0;
	while (got < 16) {
		ssize_t r = getrandom(k + got, sizeof(k) - (size_t)got, 0);

		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0)
			got += r;
	}
	op = store_op_new();
	if (!op)
		return -ENOMEM;
	store_op_omap_set(op, "cookie_key0", k, 8);
	store_op_omap_set(op, "cookie_key1", k + 8, 8);
	int r = store_op_exec(m->meta, OID_TABLE, op);
	if (r)
		return r;
	memcpy(m->cookie_key, k, 16);
	m->have_cookie_key = true;
	return 0;
}

/* Which inode table an edit is for: the same records, a different flag. */
enum ino_table { INO_TABLE, INO_STRAY };

/*
 * The inode table (hard-linked inodes) and the stray table (orphans, loaded
 * at start and kept in memory): one inode blob per key, the key its ino.
 */
static int replay_ino_table(struct mds *m, enum ino_table which, int op, const char *key, const void *val,
			    uint32_t len)
{
	uint64_t ino = strtoull(key, NULL, 16);
	struct minode *in = xa_load(&m->inodes, ino);
	bool fresh = false;
	int r;

	if (op == EDIT_RM) {
		if (in && (which == INO_STRAY ? in->in_stray : in->in_table))
			minode_free(m, in);
		return 0;
	}
	if (op != EDIT_SET)
		return 0;
	if (!in) {
		in = minode_alloc(m, ino);
		if (!in)
			return -ENOMEM;
		fresh = true;
	}
	r = inode_blob_decode(val, len, in);
	if (!r && in->a.ino != ino)
		r = -EBADMSG;
	if (r) {
		if (fresh)
			minode_free(m, in);
		return r;
	}
	if (which == INO_STRAY) {
		in->in_stray = true;
		in->in_table = false;
		m->strays_unchecked = true;
	} else {
		in->in_table = true;
	}
	in->primary = NULL;
	return 0;
}

int mdcache_replay_edit(struct mds *m, int op, const char *oid, const char *key, const void *val,
			uint32_t len, const char *key2)
{
	uint64_t ino;
	struct mdir *d;
	struct mdentry *dn;
	int r;

	if (parse_dir_oid(oid, &ino)) {
		if (op == EDIT_REMOVE || op == EDIT_CLEAR) {
			rcu_read_lock();
			d = xa_load(&m->dirs, ino);
			rcu_read_unlock();
			if (d)
				mdir_free_mem(m, d);
			return 0;
		}
		r = mdir_get(m, ino, &d);
		if (r)
			return r;
		if (op == EDIT_RM) {
			dn = mdir_lookup(d, key);
			if (dn)
				mdir_del(m, dn, NULL);
			return 0;
		}
		if (op != EDIT_SET)
			return 0;
		if (!strcmp(key, DIR_META_KEY)) {
			uint64_t res;

			r = dir_meta_decode(val, len, &res);
			if (!r && res > d->cookie_reserved)
				d->cookie_reserved = res;
			if (!r && res > d->next_cookie)
				d->next_cookie = res;
			return r;
		}
		{
			struct dentry_val v;

			r = dentry_value_decode(val, len, &v);
			if (!r)
				r = dentry_install(m, d, key, &v);
			return r;
		}
	}
	if (!strcmp(oid, OID_TABLE))
		return replay_table(m, op, key, val, len);
	if (!strcmp(oid, OID_INOTABLE))
		return replay_ino_table(m, INO_TABLE, op, key, val, len);
	if (!strcmp(oid, OID_STRAY))
		return replay_ino_table(m, INO_STRAY, op, key, val, len);
	if (!strncmp(oid, "mds_anchor.", 11))
		return 0;
	if (!strcmp(oid, OID_PURGE))
		return m->cache_hooks->purge_replay_edit(m, op, key, val, len);
	if (!strcmp(oid, OID_BLOCKLIST))
		return m->cache_hooks->blocklist_replay_edit(m, op, key, val, len);
	if (!strcmp(oid, OID_SESSIONS) || !strncmp(oid, "mds_completed.", 14))
		return m->cache_hooks->session_replay_edit(m, op, oid, key, val, len, key2);
	dout(JOURNAL, 1, "replay: edit of unknown object %s ignored", oid);
	return 0;
}

void mdcache_after_replay(struct mds *m)
{
	uint64_t idx;
	struct minode *in;

	/* Inodes whose primary dentry went and that no later edit re-linked are
	 * gone (unlinked, or the loser of a rename over them). */
	rcu_read_lock();
	xa_for_each(&m->inodes, idx, in) {
		if (in->a.ino != MDSP_ROOT_INO && !in->primary && !in->in_table && !in->in_stray)
			minode_free(m, in);
	}
	rcu_read_unlock();
	m->next_ino = m->ino_reserved;
	dinfo(MDS, "replay done: %" PRIu64 " inodes, %" PRIu64 " directories in memory, next ino %" PRIx64,
	      m->ninodes_cached, m->ndirs_cached, m->next_ino);
}

/* ---- start-up and mkfs ---------------------------------------------------- */

static void root_init(struct mds *m, struct minode *root)
{
	uint64_t now = now_real_ns();
	struct mdsp_time t = { .sec = (int64_t)(now / 1000000000ull), .nsec = (uint32_t)(now % 1000000000ull) };

	root->a.ino = MDSP_ROOT_INO;
	root->a.generation = 1;
	root->a.mode = S_IFDIR | 0755;
	root->a.nlink = 2;
	root->a.atime = root->a.mtime = root->a.ctime = root->a.btime = t;
	root->a.change = 1;
	root->a.object_size = m->object_size;
}

int mdcache_mkfs(struct mds *m)
{
	struct store_op *op;
	struct mdsp_buf b;
	struct minode root;
	uint8_t v[8];
	void *val;
	size_t len;
	int r;

	r = store_omap_get(m->meta, OID_TABLE, "root", &val, &len);
	if (r == 0) {
		free(val);
		return -EEXIST;
	}
	memset(&root, 0, sizeof(root));
	root_init(m, &root);
	mdsp_buf_init(&b);
	inode_blob_encode(&b, &root);
	if (b.oom)
		return -ENOMEM;
	op = store_op_new();
	if (!op) {
		mdsp_buf_free(&b);
		return -ENOMEM;
	}
	le64_put(v, INO_FIRST);
	store_op_omap_set(op, "next_ino", v, 8);
	le64_put(v, 1);
	store_op_omap_set(op, "next_sid", v, 8);
	le64_put(v, 1);
	store_op_omap_set(op, "nfiles", v, 8);
	le64_put(v, m->max_file_size);
	store_op_omap_set(op, "max_file_size", v, 8);
	store_op_omap_set(op, "root", b.data, b.len);
	mdsp_buf_free(&b);
	return store_op_exec(m->meta, OID_TABLE, op);
}

/* Load the inode or the stray table; a damaged record costs that inode only. */
static int load_ino_table(struct mds *m, enum ino_table which)
{
	struct store_omap_iter it;
	const struct store_kv *kv;
	int r = 0;

	store_omap_iter_init(&it, m->meta, which == INO_STRAY ? OID_STRAY : OID_INOTABLE, NULL, 1024);
	while (!r && (kv = store_omap_iter_next(&it)) != NULL) {
		r = replay_ino_table(m, which, EDIT_SET, kv->key, kv->val, (uint32_t)kv->len);
		if (r == -EBADMSG) {
			derr(MDS, "%s table: damaged inode %s skipped", which == INO_STRAY ? "stray" : "inode",
			     kv->key);
			r = 0;
		}
	}
	return store_omap_iter_end(&it) ? it.err : r;
}

void mdcache_set_hooks(struct mds *m, const struct mdcache_hooks *h)
{
	m->cache_hooks = h;
}

int mdcache_load(struct mds *m)
{
	struct store_kv *kvs = NULL;
	size_t n = 0, i;
	bool more = true;
	int r;
	bool have_root = false;

	m->root = minode_alloc(m, MDSP_ROOT_INO);
	if (!m->root)
		return -ENOMEM;
	r = store_omap_list(m->meta, OID_TABLE, NULL, NULL, 64, &kvs, &n, &more);
	if (r)
		return r == -ENOENT ? -ENODEV : r;
	for (i = 0; i < n && !r; i++) {
		if (!strcmp(kvs[i].key, "root"))
			have_root = true;
		r = replay_table(m, EDIT_SET, kvs[i].key, kvs[i].val, (uint32_t)kvs[i].len);
	}
	store_kv_free(kvs, n);
	if (r)
		return r;
	if (!have_root)
		return -ENODEV;
	m->next_ino = m->ino_reserved;
	/* the inode table: every hard-linked inode */
	r = load_ino_table(m, INO_TABLE);
	if (r)
		return r;
	/* the stray table: orphans, purged once nobody has them open */
	r = load_ino_table(m, INO_STRAY);
	if (r)
		return r;
	r = m->cache_hooks->purge_load(m);
	if (r)
		return r;
	r = m->cache_hooks->blocklist_load(m);
	if (r)
		return r;
	return m->cache_hooks->session_load(m);
}

void mdcache_free(struct mds *m)
{
	uint64_t idx;
	struct mdir *d;
	struct minode *in;

	rcu_read_lock();
	xa_for_each(&m->dirs, idx, d)
		mdir_free_mem(m, d);
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
	mdir_free_mem(m, d);
}

void mdcache_trim(struct mds *m, uint64_t clean_below)
{
	uint64_t limit = cfg_uint(CFG_mds_cache_size), idx, now = now_mono_ns(), n = 0;
	struct mdir *d;
	int nrecall = 0;

	if (!limit || m->ninodes_cached <= limit)
		return;
	rcu_read_lock();
	xa_for_each(&m->dirs, idx, d) {
		if (m->ninodes_cached <= limit - limit / 10)
			break;
		if (d->ino == MDSP_ROOT_INO || d->last_jseq >= clean_below ||
		    mono_since(now, d->last_used_ns) < 1000000000ull)
			continue;
		if (m->cache_hooks->dir_pinned(m, d)) {
			/* clients cache it: recall it, evict it once they let go */
			if (nrecall < 64 && m->cache_hooks->recall_dir(m, d))
				nrecall++;
			continue;
		}
		mdir_evict(m, d);
		n++;
	}
	rcu_read_unlock();
	if (n || nrecall)
		dout(MDS, 5, "cache trim: evicted %" PRIu64 " directories, recalled %d from clients; %" PRIu64
			     " inodes cached", n, nrecall, m->ninodes_cached);
}
