/*
 * fcache.c - open handles kept between NFSv3 READ/WRITE/COMMIT calls
 * (nfs3_int.h): one per inode, opened as root read-write (read-only if
 * that fails, upgraded when a write needs it), refcounted so a handle in
 * use is never closed under a request, and closed when idle, when its
 * inode is removed through the gateway, or to make room.
 *
 * Opens and closes go to the client library (an MDS round trip, and a
 * flush of dirty data at the close) with fc->lock released; the lock only
 * guards the table.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/time.h"
#include "nfs_gw/nfs3/nfs3_int.h"

static unsigned int bucket(uint64_t ino)
{
	return (unsigned int)((ino * 0x9e3779b97f4a7c15ull) >> 56) % NFS3_FC_BUCKETS;
}

void nfs3_fcache_init(struct nfs3_fcache *fc, struct lclient *lc, unsigned int max, uint64_t idle_ns)
{
	memset(fc, 0, sizeof(*fc));
	fc->lc = lc;
	fc->max = max ? max : 1;
	fc->idle_ns = idle_ns;
	pthread_mutex_init(&fc->lock, NULL);
}

static void entry_close(struct nfs3_fcache *fc, struct nfs3_fc_entry *e)
{
	int r = lc_release(fc->lc, e->fh);

	if (r)
		derr(NFS, "nfs3: closing ino %#llx: %s (unstable writes a client did not COMMIT may be lost)",
		     (unsigned long long)e->ino, strerror(-r));
	free(e);
}

/* Take @e out of the table; caller holds fc->lock.  Return: closed by the caller now? */
static bool unhash_locked(struct nfs3_fcache *fc, struct nfs3_fc_entry *e)
{
	struct nfs3_fc_entry **pp;

	for (pp = &fc->b[bucket(e->ino)]; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	}
	e->next = NULL;
	e->dead = true;
	fc->n--;
	return --e->refs == 0;           /* the table's reference */
}

/* The least recently used entry nobody uses; caller holds fc->lock. */
static struct nfs3_fc_entry *lru_idle_locked(struct nfs3_fcache *fc)
{
	struct nfs3_fc_entry *e, *best = NULL;

	for (unsigned int i = 0; i < NFS3_FC_BUCKETS; i++)
		for (e = fc->b[i]; e; e = e->next)
			if (e->refs == 1 && (!best || e->last_used < best->last_used))
				best = e;
	return best;
}

int nfs3_fcache_get(struct nfs3_fcache *fc, struct lc_inode *in, bool write, struct nfs3_fc_entry **ep)
{
	static const struct lc_cred root = { 0 };
	struct nfs3_fc_entry *e, *old = NULL, *victim = NULL;
	uint64_t ino = lc_ino(in), now = now_mono_ns();
	struct lc_fh *fh = NULL;
	bool writable = true;
	int r;

	pthread_mutex_lock(&fc->lock);
	for (e = fc->b[bucket(ino)]; e; e = e->next)
		if (e->ino == ino)
			break;
	if (e && (e->writable || !write)) {
		e->refs++;
		e->last_used = now;
		pthread_mutex_unlock(&fc->lock);
		*ep = e;
		return 0;
	}
	pthread_mutex_unlock(&fc->lock);

	/* open without the lock; a racing open of the same inode loses below */
	r = lc_open(fc->lc, in, O_RDWR, &root, &fh);
	if ((r == -EACCES || r == -EPERM || r == -EROFS || r == -ETXTBSY) && !write) {
		writable = false;
		r = lc_open(fc->lc, in, O_RDONLY, &root, &fh);
	}
	if (r)
		return r;
	e = calloc(1, sizeof(*e));
	if (!e) {
		lc_release(fc->lc, fh);
		return -ENOMEM;
	}
	e->ino = ino;
	e->fh = fh;
	e->writable = writable;
	e->refs = 2;                     /* the table's and the caller's */
	e->last_used = now;

	pthread_mutex_lock(&fc->lock);
	for (old = fc->b[bucket(ino)]; old; old = old->next)
		if (old->ino == ino)
			break;
	if (old && (old->writable || !writable)) {
		/* someone else's open won: use theirs */
		old->refs++;
		old->last_used = now;
		pthread_mutex_unlock(&fc->lock);
		e->refs = 0;
		entry_close(fc, e);
		*ep = old;
		return 0;
	}
	if (old && !unhash_locked(fc, old))
		old = NULL;              /* (in use: its last user closes it) */
	if (fc->n >= fc->max && (victim = lru_idle_locked(fc)) && !unhash_locked(fc, victim))
		victim = NULL;
	e->next = fc->b[bucket(ino)];
	fc->b[bucket(ino)] = e;
	fc->n++;
	pthread_mutex_unlock(&fc->lock);
	if (old)
		entry_close(fc, old);    /* a read-only open replaced by a read-write one */
	if (victim)
		entry_close(fc, victim);
	*ep = e;
	return 0;
}

void nfs3_fcache_put(struct nfs3_fcache *fc, struct nfs3_fc_entry *e)
{
	bool last;

	if (!e)
		return;
	pthread_mutex_lock(&fc->lock);
	last = --e->refs == 0;
	pthread_mutex_unlock(&fc->lock);
	if (last)
		entry_close(fc, e);
}

void nfs3_fcache_drop(struct nfs3_fcache *fc, uint64_t ino)
{
	struct nfs3_fc_entry *e;
	bool close_it = false;

	pthread_mutex_lock(&fc->lock);
	for (e = fc->b[bucket(ino)]; e; e = e->next)
		if (e->ino == ino)
			break;
	if (e)
		close_it = unhash_locked(fc, e);
	pthread_mutex_unlock(&fc->lock);
	if (close_it)
		entry_close(fc, e);
}

unsigned int nfs3_fcache_expire(struct nfs3_fcache *fc, uint64_t now)
{
	struct nfs3_fc_entry *e, *next, *closing = NULL;
	unsigned int n = 0;

	pthread_mutex_lock(&fc->lock);
	for (unsigned int i = 0; i < NFS3_FC_BUCKETS; i++) {
		for (e = fc->b[i]; e; e = next) {
			next = e->next;
			if (e->refs == 1 && mono_since(now, e->last_used) >= fc->idle_ns && unhash_locked(fc, e)) {
				e->next = closing;
				closing = e;
			}
		}
	}
	pthread_mutex_unlock(&fc->lock);
	while ((e = closing)) {
		closing = e->next;
		entry_close(fc, e);
		n++;
	}
	return n;
}

void nfs3_fcache_fini(struct nfs3_fcache *fc)
{
	nfs3_fcache_expire(fc, UINT64_MAX);
	pthread_mutex_destroy(&fc->lock);
}
