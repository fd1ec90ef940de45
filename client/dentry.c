/*
 * dentry.c - the client's dentry cache.
 *
 * One cds_lfht for all directories, keyed by (parent ino, name): lookups of
 * a cached name take no lock at all, which is what a storm of stat()s
 * through FUSE on one big directory needs.  An entry maps the name to an
 * ino (0: a negative entry, the name is known not to exist).
 *
 * What makes an entry valid is what the MDS granted (caps.c, mds/locker.c):
 *  - a positive entry, a lease on that dentry: valid until the MDS revokes
 *    it (before anyone changes the name) or we release it (trimming);
 *  - a negative entry, Fs on the directory: valid while the directory's
 *    negative generation (dir->ngen, bumped when Fs goes) is the one it was
 *    cached under;
 *  - both, while the directory's dentry generation (dir->dgen, bumped when
 *    the session and every lease with it is lost) is unchanged.
 * Without a lease or Fs nothing is cached.  A revoked lease leaves a dead
 * entry behind that remembers the revoked sequence, so a reply that was
 * already on its way with that (older) lease cannot bring the name back.
 *
 * Entries hold no inode reference: a hit resolves the ino through the inode
 * cache, and an evicted inode simply turns the hit into a miss.
 *
 * The table is also the record of the names the frontend handed its kernel
 * (lc_dentry_timeout, lc_negative_timeout: kernel_until), so that a change
 * of a directory's permissions can take every one of them back
 * (lc_dcache_revoke_dir): the kernel caches a name for every user alike,
 * and without default_permissions it checks nothing itself, so a name
 * cached while everyone could search the directory must go when that is no
 * longer so.  Names in directories not everyone may search are handed out
 * with timeout 0, so the kernel asks again with each caller's credentials.
 * The kernel gets a positive name only while we hold its lease and a
 * negative one only while we hold the directory's Fs; when either goes the
 * kernel is told (lc_dcache_revoke_lease, lc_dcache_negatives_gone).  An
 * entry the kernel may still hold is never dropped silently: the trimmer
 * tells the frontend first.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "client/cache_int.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"

/* Every cached name pays for each byte (issue 21.4): allocated as
 * DENTRY_SIZE(name length), the name right after the last field. */
struct lc_dentry {
	struct cds_lfht_node hnode;
	struct rcu_head rcu;
	uint64_t parent;
	uint64_t ino;       /* 0: negative */
	uint64_t dgen;      /* parent's dgen at insert; 0: dead (DENTRY_DEAD) */
	union {
		uint64_t ngen;      /* negative entries (ino 0, not dead): parent's ngen at insert */
		/* positive: the lease it is cached under (moved forward in place
		 * by a newer grant, taken, 0, by the trimmer that releases it);
		 * dead: the one revoked */
		_Atomic uint64_t lease_seq;
	};
	uint64_t until;     /* mono ns: kept (and trimmed) no longer than this */
	_Atomic uint64_t kernel_until;  /* mono ns: the frontend's kernel may hold the name until then */
	char name[];
};
/* The lease was revoked: a miss, and older leases stay out.  Such a
 * tombstone is the only entry with dgen 0 (a directory's starts at 1). */
#define DENTRY_DEAD(d) ((d)->dgen == 0)
/* lease sequences from here up are ours, not the MDS's (a tombstone whose
 * lease was not known, an asynchronous create's entry): no order with it */
#define LEASE_SEQ_LOCAL (UINT64_MAX / 2)
#define DENTRY_SIZE(nl) (offsetof(struct lc_dentry, name) + (nl) + 1)

struct dkey {
	uint64_t parent;
	const char *name;
};

static unsigned long dhash(uint64_t parent, const char *name)
{
	/* FNV-1a over the name, mixed with the parent */
	uint64_t h = 0xcbf29ce484222325ull ^ (parent * 0x9e3779b97f4a7c15ull);
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ull;
	}
	return (unsigned long)(h ^ (h >> 32));
}

static int dmatch(struct cds_lfht_node *node, const void *key)
{
	const struct lc_dentry *d = caa_container_of(node, struct lc_dentry, hnode);
	const struct dkey *k = key;
	return d->parent == k->parent && strcmp(d->name, k->name) == 0;
}

static void dentry_free_rcu(struct rcu_head *h)
{
	free(caa_container_of(h, struct lc_dentry, rcu));
}

int lc_dcache_init(struct lclient *c)
{
	c->dentries = cds_lfht_new(1024, 1024, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, NULL);
	return c->dentries ? 0 : -ENOMEM;
}

void lc_dcache_destroy(struct lclient *c)
{
	struct cds_lfht_iter it;
	struct lc_dentry *d;

	if (!c->dentries)
		return;
	rcu_read_lock();
	LC_LFHT_FOR_EACH(c->dentries, &it, d, hnode) {
		if (!cds_lfht_del(c->dentries, &d->hnode))
			call_rcu(&d->rcu, dentry_free_rcu);
	}
	rcu_read_unlock();
	rcu_barrier_bp();
	cds_lfht_destroy(c->dentries, NULL);
	c->dentries = NULL;
}

int lc_dcache_lookup(struct lclient *c, struct lc_inode *dir, const char *name, uint64_t *ino)
{
	struct dkey k = { .parent = dir->ino, .name = name };
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;
	int found = 0;

	rcu_read_lock();
	cds_lfht_lookup(c->dentries, dhash(k.parent, name), dmatch, &k, &it);
	node = cds_lfht_iter_get_node(&it);
	if (node) {
		struct lc_dentry *d = caa_container_of(node, struct lc_dentry, hnode);
		if (!DENTRY_DEAD(d) && d->dgen == atomic_load_explicit(&dir->dgen, memory_order_acquire) &&
		    now_mono_ns() < d->until &&
		    (d->ino || d->ngen == atomic_load_explicit(&dir->ngen, memory_order_acquire))) {
			*ino = d->ino;
			found = 1;
		}
	}
	rcu_read_unlock();
	return found;
}

/* Insert @d (replacing any entry of the name, but keeping what the kernel
 * was told of it). */
static void insert(struct lclient *c, struct lc_dentry *d)
{
	struct dkey k = { .parent = d->parent, .name = d->name };
	struct cds_lfht_node *old;

	rcu_read_lock();
	old = cds_lfht_add_replace(c->dentries, dhash(k.parent, d->name), dmatch, &k, &d->hnode);
	if (old) {
		struct lc_dentry *o = caa_container_of(old, struct lc_dentry, hnode);
		uint64_t ku = atomic_load(&o->kernel_until), cur = atomic_load(&d->kernel_until);

		while (ku > cur && !atomic_compare_exchange_weak(&d->kernel_until, &cur, ku))
			;
	}
	rcu_read_unlock();
	lc_mem_add(c, LC_MEM_DENTRY, lc_mem_size(d));
	if (old) {
		lc_mem_sub(c, LC_MEM_DENTRY, lc_mem_size(caa_container_of(old, struct lc_dentry, hnode)));
		call_rcu(&caa_container_of(old, struct lc_dentry, hnode)->rcu, dentry_free_rcu);
	} else {
		atomic_fetch_add(&c->ndentries, 1);
	}
}

static struct lc_dentry *dentry_new(struct lc_inode *dir, const char *name, uint64_t ino)
{
	size_t nl = strlen(name);
	struct lc_dentry *d = calloc(1, DENTRY_SIZE(nl));

	if (!d)
		return NULL;
	cds_lfht_node_init(&d->hnode);
	d->parent = dir->ino;
	d->ino = ino;
	d->dgen = atomic_load(&dir->dgen);
	memcpy(d->name, name, nl + 1);
	return d;
}

/* The entry of @name, if cached.  Context: rcu_read_lock() held. */
static struct lc_dentry *find_rcu(struct lclient *c, uint64_t parent, const char *name)
{
	struct dkey k = { .parent = parent, .name = name };
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;

	cds_lfht_lookup(c->dentries, dhash(parent, name), dmatch, &k, &it);
	node = cds_lfht_iter_get_node(&it);
	return node ? caa_container_of(node, struct lc_dentry, hnode) : NULL;
}

void lc_dcache_add_lease(struct lclient *c, struct lc_inode *dir, const char *name, uint64_t ino, uint64_t seq)
{
	struct lc_dentry *d, *old;

	rcu_read_lock();
	old = find_rcu(c, dir->ino, name);
	if (old && DENTRY_DEAD(old) && seq <= old->lease_seq) {
		/* that lease was revoked before this reply was applied */
		rcu_read_unlock();
		return;
	}
	if (old && !DENTRY_DEAD(old) && old->ino && old->lease_seq > seq && old->lease_seq < LEASE_SEQ_LOCAL &&
	    old->dgen == atomic_load_explicit(&dir->dgen, memory_order_acquire)) {
		/* a newer lease's word on the name came first (the MDS gives a
		 * session's leases in order; requesters apply them in any) */
		rcu_read_unlock();
		return;
	}
	if (old && !DENTRY_DEAD(old) && old->ino == ino && old->until == UINT64_MAX && seq < LEASE_SEQ_LOCAL &&
	    old->dgen == atomic_load_explicit(&dir->dgen, memory_order_acquire)) {
		/*
		 * The same name, the same inode, a newer lease (every listing
		 * and lookup brings one): move the live entry's lease forward
		 * in place instead of a new entry and a hash replace.  Against
		 * the trimmer, which takes the lease (0) before it drops the
		 * entry and releases what it took: either it takes ours and
		 * releases it, or we see 0 and insert anew (its release then
		 * names the older lease, which the MDS ignores).  A revoke
		 * replaces the entry: a move that comes after is lost, a miss.
		 */
		uint64_t cur = atomic_load(&old->lease_seq);

		while (cur && cur < LEASE_SEQ_LOCAL) {
			if (cur >= seq || atomic_compare_exchange_weak(&old->lease_seq, &cur, seq)) {
				rcu_read_unlock();
				perf_inc(&c->perf.dn_lease_moved, 1);
				return;
			}
		}
	}
	rcu_read_unlock();
	d = dentry_new(dir, name, ino);
	if (!d)
		return;
	d->lease_seq = seq;
	d->until = UINT64_MAX;
	insert(c, d);
}

bool lc_dcache_leased(struct lclient *c, struct lc_inode *dir, const char *name)
{
	struct lc_dentry *d;
	bool leased;

	rcu_read_lock();
	d = find_rcu(c, dir->ino, name);
	leased = d && !DENTRY_DEAD(d) && d->ino && d->lease_seq &&
		 d->dgen == atomic_load_explicit(&dir->dgen, memory_order_acquire);
	rcu_read_unlock();
	return leased;
}

void lc_dcache_add(struct lclient *c, struct lc_inode *dir, const char *name, uint64_t ino)
{
	lc_dcache_add_since(c, dir, name, ino, atomic_load(&dir->ngen), LC_CHANGE_ANY, LC_RX_ANY);
}

uint64_t lc_dir_ngen_fs_locked(const struct lc_inode *dir)
{
	return (dir->caps & MDSP_CAP_FILE_SHARED) ? atomic_load(&dir->ngen) : LC_NGEN_NO_FS;
}

uint64_t lc_dir_names_rx_locked(const struct lc_inode *dir)
{
	return dir->dstate ? dir->dstate->names_rx : 0;
}

uint64_t lc_dir_names_rx(struct lc_inode *dir)
{
	uint64_t rx;

	pthread_mutex_lock(&dir->lock);
	rx = lc_dir_names_rx_locked(dir);
	pthread_mutex_unlock(&dir->lock);
	return rx;
}

void lc_dir_names_changed(struct lclient *c, uint64_t dir_ino, uint64_t rx)
{
	struct lc_inode *dir = lc_ino_to_inode(c, dir_ino);
	struct lc_dstate *ds;

	if (!dir)
		return;         /* nothing of it cached (its names die with it: dgen) */
	pthread_mutex_lock(&dir->lock);
	ds = rx ? lc_dstate_locked(dir) : NULL;
	if (ds) {
		if (rx > ds->names_rx)
			ds->names_rx = rx;
	} else {
		/* no place in the order (a reply from the MDS's completed
		 * table), or no memory to note it: every negative entry and
		 * listing of the directory goes, as when Fs goes */
		atomic_fetch_add_explicit(&dir->ngen, 1, memory_order_release);
	}
	lc_dir_rd_drop_locked(dir);
	pthread_mutex_unlock(&dir->lock);
	lc_put(c, dir);
}

void lc_dcache_add_since(struct lclient *c, struct lc_inode *dir, const char *name, uint64_t ino, uint64_t ngen0,
			 uint64_t change0, uint64_t rx)
{
	struct lc_dentry *d;
	uint64_t ngen;
	bool fs;

	if (ino) {
		bool keep;

		/* a name is cached under a lease only (lc_dcache_add_lease) */
		rcu_read_lock();
		d = find_rcu(c, dir->ino, name);
		keep = d && !DENTRY_DEAD(d) && d->ino == ino && d->lease_seq;
		rcu_read_unlock();
		if (!keep)
			lc_dcache_remove(c, dir->ino, name);
		return;
	}
	pthread_mutex_lock(&dir->lock);
	/* Fs held since @ngen0 (when the caller learned the name is not
	 * there): an ENOENT that a revoke of Fs overtook may predate another
	 * client's create of the name, whatever caps the directory has now;
	 * and nothing of ours changed the directory since @change0 (a rename
	 * of ours into it may have made the name meanwhile), nor a reply of
	 * ours newer than @rx (one applied before an older one's requester
	 * got here: a rename of ours into it, the MDS's next change) */
	ngen = atomic_load(&dir->ngen);
	fs = (dir->caps & MDSP_CAP_FILE_SHARED) && ngen == ngen0 &&
	     (change0 == LC_CHANGE_ANY || (change0 && dir->mi.change == change0)) &&
	     (rx == LC_RX_ANY || lc_dir_names_rx_locked(dir) <= rx);
	pthread_mutex_unlock(&dir->lock);
	if (!fs || !lc_secs_ns(CFG_client_negative_timeout)) {
		rcu_read_lock();
		d = find_rcu(c, dir->ino, name);
		fs = d && DENTRY_DEAD(d);    /* keep what a revoke left behind */
		rcu_read_unlock();
		if (!fs)
			lc_dcache_remove(c, dir->ino, name);
		return;
	}
	d = dentry_new(dir, name, 0);
	if (!d)
		return;
	d->ngen = ngen;
	d->until = now_mono_ns() + lc_secs_ns(CFG_client_caps_timeout);
	insert(c, d);
}

/* anyone may search @dir: its names may be cached for all users alike */
static bool searchable_by_all(struct lc_inode *dir)
{
	if (dir->c->search_unchecked_ok)
		return true;    /* every caller passes the search check anyway */
	pthread_mutex_lock(&dir->lock);
	uint32_t mode = dir->mi.mode;
	pthread_mutex_unlock(&dir->lock);
	return S_ISDIR(mode) && (mode & 0111) == 0111;
}

/* record that the kernel may hold @name of @dir (-> @ino, 0: negative) for @secs */
static void handed(struct lclient *c, struct lc_inode *dir, const char *name, uint64_t ino, double secs)
{
	struct lc_dentry *d;
	uint64_t until = now_mono_ns() + (uint64_t)(secs * 1e9);
	bool found = false;

	if (!ino)
		atomic_store(&dir->kernel_negatives, true);
	rcu_read_lock();
	d = find_rcu(c, dir->ino, name);
	if (d) {
		uint64_t cur = atomic_load(&d->kernel_until);

		while (cur < until && !atomic_compare_exchange_weak(&d->kernel_until, &cur, until))
			;
		found = true;
	}
	rcu_read_unlock();
	if (!found && (d = dentry_new(dir, name, ino))) {
		/* our cache let it go, the kernel gets it: record it, not valid
		 * for our own lookups (until 0) */
		atomic_init(&d->kernel_until, until);
		insert(c, d);
	}
}

double lc_dentry_timeout(struct lclient *c, struct lc_inode *dir, const char *name, struct lc_inode *in)
{
	double secs;

	if (dir)
		lc_kernel_promise(dir);
	/* a name only under its lease: the MDS revokes it before anyone
	 * changes the name, and the revoke takes it back from the kernel */
	if (!dir || !name || !in || !searchable_by_all(dir) || !lc_dcache_leased(c, dir, name))
		return 0;
	secs = lc_secs(CFG_client_caps_timeout);
	if (secs > 0)
		handed(c, dir, name, in->ino, secs);
	return secs;
}

double lc_negative_timeout(struct lclient *c, struct lc_inode *dir, const char *name, double secs)
{
	bool fs;

	if (dir)
		lc_kernel_promise(dir);
	if (!dir || !name || secs <= 0 || !searchable_by_all(dir))
		return 0;
	/* "no such name" only under the directory's Fs (another client's
	 * create revokes it first), or without an MDS (no other client) */
	pthread_mutex_lock(&dir->lock);
	fs = !c->mdsc || (dir->caps & MDSP_CAP_FILE_SHARED);
	pthread_mutex_unlock(&dir->lock);
	if (!fs)
		return 0;
	handed(c, dir, name, 0, secs);
	return secs;
}

void lc_dcache_remove(struct lclient *c, uint64_t dir_ino, const char *name)
{
	struct dkey k = { .parent = dir_ino, .name = name };
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;

	rcu_read_lock();
	cds_lfht_lookup(c->dentries, dhash(dir_ino, name), dmatch, &k, &it);
	node = cds_lfht_iter_get_node(&it);
	if (node && !cds_lfht_del(c->dentries, node)) {
		atomic_fetch_sub(&c->ndentries, 1);
		lc_mem_sub(c, LC_MEM_DENTRY, lc_mem_size(caa_container_of(node, struct lc_dentry, hnode)));
		call_rcu(&caa_container_of(node, struct lc_dentry, hnode)->rcu, dentry_free_rcu);
	}
	rcu_read_unlock();
	/* the name may exist: the directory's cached names are not all of them */
	if (node)
		lc_dir_not_complete(c, dir_ino);
}

void lc_dcache_invalidate_dir(struct lc_inode *dir)
{
	atomic_fetch_add_explicit(&dir->dgen, 1, memory_order_release);
}

void lc_dcache_drop_all(struct lclient *c)
{
	struct cds_lfht_iter it;
	struct lc_dentry *d;

	rcu_read_lock();
	LC_LFHT_FOR_EACH(c->dentries, &it, d, hnode) {
		if (!DENTRY_DEAD(d) && d->ino && d->lease_seq && c->cb.inval_dentry)
			c->cb.inval_dentry(c->cb_arg, d->parent, d->name);
		if (!cds_lfht_del(c->dentries, &d->hnode)) {
			atomic_fetch_sub(&c->ndentries, 1);
			lc_mem_sub(c, LC_MEM_DENTRY, lc_mem_size(d));
			call_rcu(&d->rcu, dentry_free_rcu);
		}
	}
	rcu_read_unlock();
}

void lc_dcache_negatives_gone(struct lclient *c, struct lc_inode *dir)
{
	struct cds_lfht_iter it;
	struct lc_dentry *d;
	char **names = NULL;
	size_t n = 0, cap = 0;
	uint64_t now;

	atomic_fetch_add_explicit(&dir->ngen, 1, memory_order_release);
	/* and the kernel's, if it was given any (rare: fuse_negative_timeout) */
	if (!atomic_exchange(&dir->kernel_negatives, false) || !c->cb.inval_dentry)
		return;
	now = now_mono_ns();
	rcu_read_lock();
	LC_LFHT_FOR_EACH(c->dentries, &it, d, hnode) {
		if (d->parent != dir->ino || d->ino || atomic_load(&d->kernel_until) <= now)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			char **nn = realloc(names, ncap * sizeof(*nn));
			if (!nn)
				break;
			names = nn;
			cap = ncap;
		}
		if ((names[n] = strdup(d->name)))
			n++;
	}
	rcu_read_unlock();
	for (size_t i = 0; i < n; i++) {
		c->cb.inval_dentry(c->cb_arg, dir->ino, names[i]);
		free(names[i]);
	}
	free(names);
}

void lc_dcache_revoke_lease(struct lclient *c, uint64_t dir_ino, const char *name)
{
	struct lc_dentry *d, *old;
	uint64_t seq = 0;
	size_t nl = strlen(name);

	lc_dir_not_complete(c, dir_ino);
	rcu_read_lock();
	old = find_rcu(c, dir_ino, name);
	if (old && (old->ino || DENTRY_DEAD(old)))   /* (a negative entry's is its ngen) */
		seq = old->lease_seq;
	rcu_read_unlock();
	/* the tombstone keeps replies with this lease (or an older one) out */
	d = calloc(1, DENTRY_SIZE(nl));
	if (d) {
		cds_lfht_node_init(&d->hnode);
		d->parent = dir_ino;
		/* dead: dgen 0, as calloc left it */
		d->lease_seq = seq ? seq : LEASE_SEQ_LOCAL;
		d->until = now_mono_ns() + lc_secs_ns(CFG_client_caps_timeout);
		memcpy(d->name, name, nl + 1);
		insert(c, d);
		/* the kernel is told right below */
		atomic_store(&d->kernel_until, 0);
	} else {
		lc_dcache_remove(c, dir_ino, name);
	}
	/* the kernel may hold the name even if we no longer do */
	if (c->cb.inval_dentry)
		c->cb.inval_dentry(c->cb_arg, dir_ino, name);
}

int lc_dcache_reconnect_leases(struct lclient *c, struct mdsp_cap_reconnect **vp, uint32_t *np, size_t cap)
{
	struct mdsp_cap_reconnect *v = *vp;
	struct cds_lfht_iter it;
	struct lc_dentry *d;
	size_t n = *np;
	int r = 0;

	rcu_read_lock();
	LC_LFHT_FOR_EACH(c->dentries, &it, d, hnode) {
		/* a name we made ourselves (LEASE_SEQ_LOCAL, an async create's
		 * marker) holds no lease of the MDS's to claim: its directory's
		 * caps cover it */
		if (DENTRY_DEAD(d) || !d->ino || !d->lease_seq || d->lease_seq >= LEASE_SEQ_LOCAL)
			continue;
		if (n == cap) {
			struct mdsp_cap_reconnect *nv = realloc(v, cap * 2 * sizeof(*v));

			if (!nv) {
				r = -ENOMEM;
				break;
			}
			v = nv;
			cap *= 2;
		}
		memset(&v[n], 0, sizeof(v[n]));
		v[n].ino = d->parent;
		v[n].seq = d->lease_seq;
		v[n].dname = strdup(d->name);
		if (!v[n].dname) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	rcu_read_unlock();
	*vp = v;
	*np = (uint32_t)n;
	return r;
}

/*
 * The one place that takes a directory's names back: a revoke of its As
 * (another client changed its mode or owner), or a change of its mode or
 * owner here that leaves it not searchable by everyone.  Drop its cached
 * names and tell the frontend about each (positive ones, and negative ones
 * the kernel may hold), so the kernel forgets them too.  Walks the whole
 * table (rare; lookups must stay lock-free).
 */
void lc_dcache_revoke_dir(struct lclient *c, struct lc_inode *dir)
{
	struct cds_lfht_iter it;
	struct lc_dentry *d;
	char **names = NULL;
	size_t n = 0, cap = 0;
	uint64_t now = now_mono_ns();

	lc_dcache_invalidate_dir(dir);
	rcu_read_lock();
	LC_LFHT_FOR_EACH(c->dentries, &it, d, hnode) {
		if (d->parent != dir->ino)
			continue;
		if (c->cb.inval_dentry && !DENTRY_DEAD(d) && (d->ino || atomic_load(&d->kernel_until) > now)) {
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 16;
				char **nn = realloc(names, ncap * sizeof(*nn));
				if (nn) {
					names = nn;
					cap = ncap;
				}
			}
			if (n < cap && (names[n] = strdup(d->name)))
				n++;
		}
		if (!cds_lfht_del(c->dentries, &d->hnode)) {
			atomic_fetch_sub(&c->ndentries, 1);
			lc_mem_sub(c, LC_MEM_DENTRY, lc_mem_size(d));
			call_rcu(&d->rcu, dentry_free_rcu);
		}
	}
	rcu_read_unlock();
	/* outside the read section: the callback may block (it queues to FUSE) */
	for (size_t i = 0; i < n; i++) {
		c->cb.inval_dentry(c->cb_arg, dir->ino, names[i]);
		free(names[i]);
	}
	free(names);
}

/*
 * Drop entries once the table is larger than the inode cache bound (a
 * dentry is tiny, but a long-running mount must not grow without end):
 * first the expired and dead ones, then any the kernel does not cache (a
 * name it caches holds its inode here anyway, and is let go once the
 * kernel's timeout for it passes).  A name still leased is released at
 * the MDS, so nobody waits to revoke it from us.
 */
struct released {
	uint64_t parent, seq;
	char *name;
	bool positive;
};

void lc_dcache_trim(struct lclient *c)
{
	uint64_t max = cfg_uint(CFG_client_cache_size) * 2;
	struct cds_lfht_iter it;
	struct lc_dentry *d;
	uint64_t now = now_mono_ns();
	struct released *rel = NULL;
	size_t nrel = 0, crel = 0;

	uint64_t n = atomic_load(&c->ndentries);

	lc_lfht_fit(c->dentries, &c->dentries_fit, n);
	/* past client_cache_memory_limit what the cache holds is mostly
	 * inodes the kernel holds through the names it caches: those names
	 * go too (invalidated in the kernel, which then forgets the inodes,
	 * and lc_icache_trim evicts them), down to 90% of the limit */
	bool mem = lc_mem_over(c, false);
	if (n <= max && !mem)
		return;
	/*
	 * A walk visits every name, and those the kernel caches stay: during
	 * the `ls -l` of 200,000 files (every name handed to the kernel) each
	 * flusher round walked the whole table twice for nothing (cds_lfht_next
	 * 17 % of loligo-fuse's CPU).  So, as the inode trim: at most one walk
	 * a second, and after one that could not get under the bound none until
	 * the table has grown by an eighth of what it left, or 10 s have passed
	 * (the kernel's timeouts for its names run out meanwhile); over the
	 * byte limit, a walk every round.
	 */
	if (!mem && c->dtrim_ns && mono_since(now, c->dtrim_ns) < 1000000000ull) {
		perf_inc(&c->perf.dn_trim_skipped, 1);
		return;
	}
	if (!mem && c->dtrim_left && n < c->dtrim_left + (c->dtrim_left > max ? c->dtrim_left : max) / 8 &&
	    mono_since(now, c->dtrim_ns) < 10000000000ull) {
		perf_inc(&c->perf.dn_trim_skipped, 1);
		return;
	}
	c->dtrim_ns = now;
	perf_inc(&c->perf.dn_trim_walks, 1);
	for (int pass = 0; pass < 2 && (atomic_load(&c->ndentries) > max - max / 8 || (mem && lc_mem_over(c, true)));
	     pass++) {
		rcu_read_lock();
		LC_LFHT_FOR_EACH(c->dentries, &it, d, hnode) {
			bool leased = !DENTRY_DEAD(d) && d->ino && d->lease_seq;
			bool kernel = atomic_load(&d->kernel_until) > now;

			if (atomic_load(&c->ndentries) <= max - max / 8 && !(mem && lc_mem_over(c, true)))
				break;
			/* a name the kernel caches stays: dropping it here expired
			 * it in the kernel too, and a `ls -l` of a directory bigger
			 * than the bound then looked up again what its readdirplus
			 * had just given the kernel (issue 21.3).  It becomes
			 * evictable when the kernel's timeout for it runs out.
			 * Past the bound in bytes it goes all the same (second
			 * pass): memory first. */
			if ((kernel && !(mem && pass == 1)) || (pass == 0 && now < d->until))
				continue;
			if (leased || kernel) {
				if (nrel == crel) {
					size_t nc = crel ? crel * 2 : 64;
					struct released *nr = realloc(rel, nc * sizeof(*nr));

					if (!nr)
						continue;   /* keep it: it cannot be released */
					rel = nr;
					crel = nc;
				}
				rel[nrel].name = strdup(d->name);
				if (!rel[nrel].name)
					continue;
				rel[nrel].parent = d->parent;
				/* taken: a grant now makes a new entry (lc_dcache_add_lease) */
				rel[nrel].seq = leased ? atomic_exchange(&d->lease_seq, 0) : 0;
				rel[nrel].positive = d->ino != 0;
				nrel++;
			}
			if (!cds_lfht_del(c->dentries, &d->hnode)) {
				atomic_fetch_sub(&c->ndentries, 1);
				lc_mem_sub(c, LC_MEM_DENTRY, lc_mem_size(d));
				call_rcu(&d->rcu, dentry_free_rcu);
			}
		}
		rcu_read_unlock();
	}
	for (size_t i = 0; i < nrel; i++) {
		struct mdsp_caps m = { .op = MDSP_CAPS_LEASE_RELEASE, .ino = rel[i].parent, .seq = rel[i].seq,
				       .dname = rel[i].name };

		if (c->cb.inval_dentry)
			c->cb.inval_dentry(c->cb_arg, rel[i].parent, rel[i].name);
		if (rel[i].positive)
			lc_dir_not_complete(c, rel[i].parent);
		if (c->mdsc && rel[i].seq)
			mdsc_send_caps(c->mdsc, &m);
		free(rel[i].name);
	}
	free(rel);
	n = atomic_load(&c->ndentries);
	c->dtrim_left = n > max - max / 8 ? n : 0;
}

/* ---- complete directories (asyncdir.c makes them, lookups trust them) ------ */

#define DIR_COMPLETE_CAPS (MDSP_CAP_DIR_CREATE | MDSP_CAP_FILE_SHARED)

bool lc_dir_complete_locked(struct lc_inode *dir)
{
	/* dir_complete is set only with dstate made */
	return dir->dir_complete && (dir->caps & DIR_COMPLETE_CAPS) == DIR_COMPLETE_CAPS &&
	       dir->dstate->complete_dgen == atomic_load(&dir->dgen) &&
	       dir->dstate->complete_ngen == atomic_load(&dir->ngen);
}

void lc_dir_set_complete_locked(struct lc_inode *dir)
{
	struct lc_dstate *ds = lc_dstate_locked(dir);

	/* no memory: not marked complete, lookups ask the MDS */
	if (!ds)
		return;
	dir->dir_complete = true;
	ds->complete_dgen = atomic_load(&dir->dgen);
	ds->complete_ngen = atomic_load(&dir->ngen);
}

void lc_dir_not_complete(struct lclient *c, uint64_t dir_ino)
{
	struct lc_inode *dir = lc_ino_to_inode(c, dir_ino);

	if (!dir)
		return;
	pthread_mutex_lock(&dir->lock);
	dir->dir_complete = false;
	pthread_mutex_unlock(&dir->lock);
	lc_put(c, dir);
}

/* ---- the namespace epoch (lc_ns_epoch) ---------------------------------------- */

uint64_t lc_ns_epoch(struct lclient *c)
{
	return atomic_load_explicit(&c->ns_epoch, memory_order_acquire);
}

/* A name may have moved: lc_ns_epoch readers must look again. */
void lc_ns_changed(struct lclient *c)
{
	atomic_fetch_add_explicit(&c->ns_epoch, 1, memory_order_acq_rel);
}

struct json_object *lc_dcache_dump_dir(struct lclient *c, struct lc_inode *dir)
{
	struct json_object *arr = json_object_new_array();
	struct cds_lfht_iter it;
	struct lc_dentry *d;
	uint64_t now = now_mono_ns(), dgen = atomic_load(&dir->dgen), ngen = atomic_load(&dir->ngen);

	rcu_read_lock();
	LC_LFHT_FOR_EACH(c->dentries, &it, d, hnode) {
		struct json_object *o;
		uint64_t ku = atomic_load(&d->kernel_until);

		if (d->parent != dir->ino)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "name", json_object_new_string(d->name));
		json_object_object_add(o, "ino", json_object_new_uint64(d->ino));
		json_object_object_add(o, "state", json_object_new_string(DENTRY_DEAD(d) ? "revoked" :
									    d->ino ? "positive" : "negative"));
		if (!DENTRY_DEAD(d))
			json_object_object_add(o, "dgen_ok", json_object_new_boolean(d->dgen == dgen));
		if (!DENTRY_DEAD(d) && !d->ino)
			json_object_object_add(o, "ngen_ok", json_object_new_boolean(d->ngen == ngen));
		else
			json_object_object_add(o, "lease_seq", json_object_new_uint64(d->lease_seq));
		/* -1: until the lease is revoked */
		json_object_object_add(o, "valid_for_s", json_object_new_double(d->until >= UINT64_MAX / 2 ? -1 :
										 d->until > now ? (double)(d->until - now) / 1e9 : 0));
		json_object_object_add(o, "kernel_for_s", json_object_new_double(ku > now ? (double)(ku - now) / 1e9 : 0));
		json_object_array_add(arr, o);
	}
	rcu_read_unlock();
	return arr;
}
