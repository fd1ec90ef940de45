/*
 * dentry.c - the client's dentry cache.
 *
 * One cds_lfht for all directories, keyed by (parent ino, name): lookups of
 * a cached name take no lock at all, which is what a storm of stat()s
 * through FUSE on one big directory needs.  An entry maps the name to an
 * ino (0: a negative entry, the name is known not to exist) and is valid
 * until its deadline (client_entry_timeout, client_negative_timeout, or
 * client_caps_timeout while the directory holds shared caps) and while the
 * parent's dentry generation (dir->dgen) is the one it was cached under.
 * Bumping dgen invalidates every entry of a directory in O(1); the stale
 * entries are replaced on the next lookup or dropped by the trimmer.
 *
 * Entries hold no inode reference: a hit resolves the ino through the inode
 * cache, and an evicted inode simply turns the hit into a miss.
 *
 * The table is also the record of the names the frontend handed its kernel
 * (lc_dentry_timeout: kernel_until), so that a change of a directory's
 * permissions can take every one of them back (lc_dcache_revoke_dir): the
 * kernel caches a name for every user alike, and without
 * default_permissions it checks nothing itself, so a name cached while
 * everyone could search the directory must go when that is no longer so.
 * Names in directories not everyone may search are handed out with timeout
 * 0, so the kernel asks again with each caller's credentials.  An entry the
 * kernel may still hold is never dropped silently: the trimmer tells the
 * frontend first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"

struct lc_dentry {
	struct cds_lfht_node hnode;
	struct rcu_head rcu;
	uint64_t parent;
	uint64_t ino;       /* 0: negative */
	uint64_t dgen;      /* parent's dgen at insert */
	uint64_t until;     /* mono ns: valid for our own lookups until then (0: never) */
	_Atomic uint64_t kernel_until;  /* mono ns: the frontend's kernel may hold the name until then */
	char name[];
};

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
		if (d->dgen == atomic_load_explicit(&dir->dgen, memory_order_acquire) && now_mono_ns() < d->until) {
			*ino = d->ino;
			found = 1;
		}
	}
	rcu_read_unlock();
	return found;
}

static void insert(struct lclient *c, struct lc_inode *dir, const char *name, size_t nl, struct lc_dentry *d,
		   uint64_t ino, uint64_t until, uint64_t kernel_until);

void lc_dcache_add(struct lclient *c, struct lc_inode *dir, const char *name, uint64_t ino)
{
	size_t nl = strlen(name);
	struct lc_dentry *d = malloc(sizeof(*d) + nl + 1);
	uint64_t tmo;

	if (!d)
		return;
	if (ino == 0)
		tmo = lc_secs_ns(CFG_client_negative_timeout);
	else {
		pthread_mutex_lock(&dir->lock);
		bool shared = dir->caps & MDSP_CAP_SHARED;
		pthread_mutex_unlock(&dir->lock);
		tmo = lc_secs_ns(shared ? CFG_client_caps_timeout : CFG_client_entry_timeout);
	}
	/* tmo 0: not valid for our lookups, but what the kernel was told of
	 * the name is carried over */
	insert(c, dir, name, nl, d, ino, tmo ? now_mono_ns() + tmo : 0, 0);
}

/* put @d (allocated for @name) in the table, replacing the old entry but
 * keeping what the kernel was told of it */
static void insert(struct lclient *c, struct lc_inode *dir, const char *name, size_t nl, struct lc_dentry *d,
		   uint64_t ino, uint64_t until, uint64_t kernel_until)
{
	cds_lfht_node_init(&d->hnode);
	d->parent = dir->ino;
	d->ino = ino;
	d->dgen = atomic_load(&dir->dgen);
	d->until = until;
	atomic_init(&d->kernel_until, kernel_until);
	memcpy(d->name, name, nl + 1);

	struct dkey k = { .parent = dir->ino, .name = d->name };
	rcu_read_lock();
	struct cds_lfht_node *old = cds_lfht_add_replace(c->dentries, dhash(k.parent, name), dmatch, &k, &d->hnode);
	if (old) {
		struct lc_dentry *o = caa_container_of(old, struct lc_dentry, hnode);
		uint64_t ku = atomic_load(&o->kernel_until), cur = atomic_load(&d->kernel_until);

		while (ku > cur && !atomic_compare_exchange_weak(&d->kernel_until, &cur, ku))
			;
	}
	rcu_read_unlock();
	if (old)
		call_rcu(&caa_container_of(old, struct lc_dentry, hnode)->rcu, dentry_free_rcu);
	else
		atomic_fetch_add(&c->ndentries, 1);
}

/* anyone may search @dir: its names may be cached for all users alike */
static bool searchable_by_all(struct lc_inode *dir)
{
	pthread_mutex_lock(&dir->lock);
	uint32_t mode = dir->mi.mode;
	pthread_mutex_unlock(&dir->lock);
	return S_ISDIR(mode) && (mode & 0111) == 0111;
}

/* record that the kernel may hold @name of @dir for @secs */
static void handed(struct lclient *c, struct lc_inode *dir, const char *name, uint64_t ino, double secs)
{
	struct dkey k = { .parent = dir->ino, .name = name };
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;
	uint64_t until = now_mono_ns() + (uint64_t)(secs * 1e9);
	bool found = false;

	rcu_read_lock();
	cds_lfht_lookup(c->dentries, dhash(k.parent, name), dmatch, &k, &it);
	node = cds_lfht_iter_get_node(&it);
	if (node) {
		struct lc_dentry *d = caa_container_of(node, struct lc_dentry, hnode);
		uint64_t cur = atomic_load(&d->kernel_until);

		while (cur < until && !atomic_compare_exchange_weak(&d->kernel_until, &cur, until))
			;
		found = true;
	}
	rcu_read_unlock();
	if (!found) {
		/* our cache let it go, the kernel gets it: record it, not valid
		 * for our own lookups */
		size_t nl = strlen(name);
		struct lc_dentry *d = malloc(sizeof(*d) + nl + 1);

		if (d)
			insert(c, dir, name, nl, d, ino, 0, until);
	}
}

double lc_dentry_timeout(struct lclient *c, struct lc_inode *dir, const char *name, struct lc_inode *in)
{
	double secs;

	if (!dir || !name || !in || !searchable_by_all(dir))
		return 0;
	secs = lc_entry_timeout(c, in);
	if (secs > 0)
		handed(c, dir, name, in->ino, secs);
	return secs;
}

double lc_negative_timeout(struct lclient *c, struct lc_inode *dir, const char *name, double secs)
{
	if (!dir || !name || secs <= 0 || !searchable_by_all(dir))
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
		call_rcu(&caa_container_of(node, struct lc_dentry, hnode)->rcu, dentry_free_rcu);
	}
	rcu_read_unlock();
}

void lc_dcache_invalidate_dir(struct lc_inode *dir)
{
	atomic_fetch_add_explicit(&dir->dgen, 1, memory_order_release);
}

/*
 * The one place that takes a directory's names back: a revoke of its shared
 * caps, or a change of its mode or owner that leaves it not searchable by
 * everyone.  Drop its cached names and tell the frontend about each
 * (positive ones, and negative ones the kernel may hold), so the kernel
 * forgets them too.  Walks the whole table (rare; lookups must stay
 * lock-free).
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
		if (c->cb.inval_dentry && (d->ino || atomic_load(&d->kernel_until) > now)) {
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
 * Drop expired entries once the table is larger than the inode cache bound
 * (a dentry is tiny, but a long-running mount must not grow without end).
 * Stale-generation entries are caught by their deadline: the longest one is
 * client_caps_timeout.
 */
void lc_dcache_trim(struct lclient *c)
{
	uint64_t max = cfg_uint(CFG_client_cache_size) * 2;
	struct cds_lfht_iter it;
	struct lc_dentry *d;
	uint64_t now = now_mono_ns();
	struct { uint64_t parent; char *name; } *tell = NULL;
	size_t ntell = 0, cap = 0;

	if (atomic_load(&c->ndentries) <= max)
		return;
	for (int pass = 0; pass < 2 && atomic_load(&c->ndentries) > max - max / 8; pass++) {
		rcu_read_lock();
		LC_LFHT_FOR_EACH(c->dentries, &it, d, hnode) {
			if (atomic_load(&c->ndentries) <= max - max / 8)
				break;
			bool kernel = atomic_load(&d->kernel_until) > now;
			if (pass == 0 && (now < d->until || kernel))
				continue;
			if (kernel && c->cb.inval_dentry) {
				/* the kernel may hold it: it forgets it too */
				if (ntell == cap) {
					size_t ncap = cap ? cap * 2 : 64;
					void *nt = realloc(tell, ncap * sizeof(*tell));
					if (!nt)
						continue;   /* keep it, then */
					tell = nt;
					cap = ncap;
				}
				tell[ntell].parent = d->parent;
				if (!(tell[ntell].name = strdup(d->name)))
					continue;
				ntell++;
			}
			if (!cds_lfht_del(c->dentries, &d->hnode)) {
				atomic_fetch_sub(&c->ndentries, 1);
				call_rcu(&d->rcu, dentry_free_rcu);
			}
		}
		rcu_read_unlock();
	}
	for (size_t i = 0; i < ntell; i++) {
		c->cb.inval_dentry(c->cb_arg, tell[i].parent, tell[i].name);
		free(tell[i].name);
	}
	free(tell);
}
