/*
 * flock.c - file locks as the client sees them: fcntl byte ranges and
 * flock(2), served by the MDS (mds/flock.c) for every client at once.
 *
 * Every lock request goes to the MDS; what the MDS granted this client is
 * also kept here, per file, in the same sets the MDS keeps
 * (common/rlock.h, applied with the same rules after each grant), for two
 * reasons: a restarted MDS learns the locks back from SESSION RECONNECT
 * (mds_client.c asks reconnect_locks()), and an owner's close (FUSE flush
 * and release, an NFS lock-owner going away) and an unlock of nothing cost
 * no MDS round trip when the owner holds nothing on the file.
 *
 * Lost locks: when the session is lost (an eviction; with
 * client_reconnect_stale a new session follows) or the MDS refuses locks
 * we re-assert (it restarted and we came back after mds_reconnect_timeout:
 * someone else may have held them meanwhile), the locks go to the file's
 * "lost" sets.  While a file has lost locks, every lock request on it
 * other than an unlock fails with EIO, so a process that believes it holds
 * a lock learns that it may not; its unlocks and closes clear them (the
 * Linux ceph client's CEPH_I_ERROR_FILELOCK, same rule).
 *
 * A blocking request (F_SETLKW, flock without LOCK_NB) is parked at the
 * MDS and answered when granted.  A signal in the waiting process (the
 * caller's lc_intr fires: FUSE's INTERRUPT) sends SETLK|MDSP_LOCK_CANCEL
 * naming the waiting tid: the MDS answers the waiting request EINTR (or it
 * was granted already, and the grant stands: the process then holds the
 * lock, and closes it if it dies).  A request given up without an answer
 * (interrupted or timed out while the MDS did not answer) may still be
 * granted: its file is marked unsure, and its unlocks and closes then
 * always go to the MDS.
 *
 * Two requests of one owner on one file at once (two threads of a process)
 * are applied here in the order their answers come, which may not be the
 * order the MDS applied them in; the sets could then differ for the
 * overlap until the next change.  The kernel does not serialise them
 * either.
 *
 * Locking: locks->lock (a leaf, taken alone) protects every set here.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include "client/ns_int.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "common/rlock.h"
#include "common/xarray.h"

_Static_assert(LC_LOCK_NS_FUSE == MDSP_LOCK_NS_FUSE && LC_LOCK_NS_NFS == MDSP_LOCK_NS_NFS, "owner namespaces");

struct lk_file {
	uint64_t ino;
	struct rlock_set posix, flock;           /* held (granted by the MDS) */
	struct rlock_set lost_posix, lost_flock; /* the MDS no longer has them */
	bool unsure;                             /* a lock request was given up unanswered */
};

struct lc_locks {
	pthread_mutex_t lock;        /* protects everything below; a leaf */
	struct xarray files;         /* ino -> struct lk_file */
	uint64_t nheld, nlost;
	struct perf_counter grants, waits, denied, intr, lost;
};

static struct rlock *lk_alloc(void *arg)
{
	(void)arg;
	return calloc(1, sizeof(struct rlock));
}

static void lk_release(struct rlock *l, void *arg)
{
	(void)arg;
	free(l);
}

static const struct rlock_ops lk_ops = { lk_alloc, lk_release };

int lc_locks_init(struct lclient *c)
{
	struct lc_locks *k = calloc(1, sizeof(*k));

	if (!k)
		return -ENOMEM;
	pthread_mutex_init(&k->lock, NULL);
	xa_init(&k->files);
	c->locks = k;
	return 0;
}

static void set_free(struct rlock_set *s)
{
	while (s->head)
		rlock_remove(s, s->head, &lk_ops, NULL);
}

void lc_locks_destroy(struct lclient *c)
{
	struct lc_locks *k = c->locks;
	struct lk_file *f;
	uint64_t idx = 0;

	if (!k)
		return;
	rcu_read_lock();
	xa_for_each(&k->files, idx, f) {
		xa_erase(&k->files, idx);
		set_free(&f->posix);
		set_free(&f->flock);
		set_free(&f->lost_posix);
		set_free(&f->lost_flock);
		free(f);
	}
	rcu_read_unlock();
	xa_destroy(&k->files);
	pthread_mutex_destroy(&k->lock);
	free(k);
	c->locks = NULL;
}

void lc_locks_register_perf(struct lclient *c, const char *group)
{
	struct lc_locks *k = c->locks;

	perf_register_counter(group, "lock_grants", &k->grants);
	perf_register_counter(group, "lock_waits", &k->waits);
	perf_register_counter(group, "lock_denied", &k->denied);
	perf_register_counter(group, "lock_interrupted", &k->intr);
	perf_register_counter(group, "locks_lost", &k->lost);
}

/* Caller holds k->lock. */
static struct lk_file *file_find(struct lc_locks *k, uint64_t ino)
{
	struct lk_file *f;

	rcu_read_lock();
	f = xa_load(&k->files, ino);
	rcu_read_unlock();
	return f;
}

static struct lk_file *file_get(struct lc_locks *k, uint64_t ino)
{
	struct lk_file *f = file_find(k, ino);

	if (f)
		return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->ino = ino;
	if (xa_store(&k->files, ino, f)) {
		free(f);
		return NULL;
	}
	return f;
}

static void file_put(struct lc_locks *k, struct lk_file *f)
{
	if (f->posix.n || f->flock.n || f->lost_posix.n || f->lost_flock.n || f->unsure)
		return;
	xa_erase(&k->files, f->ino);
	free(f);
}

static int rtype(int t)
{
	return t == F_RDLCK ? RLOCK_RD : t == F_WRLCK ? RLOCK_WR : t == F_UNLCK ? RLOCK_UN : 0;
}

static struct rlock_owner owner_of(const struct lc_lock *lk)
{
	struct rlock_owner o = { 0, lk->owner, lk->owner_ns };
	return o;
}

/* Apply what the MDS granted to our copy.  Caller holds k->lock. */
static void apply_granted(struct lc_locks *k, struct lk_file *f, const struct lc_lock *lk, uint64_t start, uint64_t end)
{
	struct rlock_owner o = owner_of(lk);
	struct rlock_set *set = lk->flock ? &f->flock : &f->posix;
	uint64_t before = set->n;

	if (rlock_apply(set, &o, (uint32_t)lk->pid, rtype(lk->type), start, end, &lk_ops, NULL))
		derr(CLIENT, "file locks: out of memory recording a lock on ino %" PRIx64 ": it will not be "
		     "re-asserted if the mds restarts", f->ino);
	k->nheld += set->n - before;
}

/* Unlocks clear lost locks of the owner too.  Caller holds k->lock. */
static void apply_lost(struct lk_file *f, const struct lc_lock *lk, uint64_t start, uint64_t end)
{
	struct rlock_owner o = owner_of(lk);

	rlock_apply(lk->flock ? &f->lost_flock : &f->lost_posix, &o, 0, RLOCK_UN, start, end, &lk_ops, NULL);
}

static void send_cancel(struct lclient *c, uint64_t ino, uint64_t tid)
{
	struct mds_request *req = lc_req_new(c, MDSP_OP_SETLK, ino, NULL);

	if (!req)
		return;
	req->args.lock.type = F_UNLCK;
	req->args.lock.flags = MDSP_LOCK_CANCEL;
	req->args.lock.wait_tid = tid;
	/* fire and forget: the waiting request gets the answer that matters */
	if (mdsc_submit(c->mdsc, req))
		dout(CLIENT, 5, "file locks: cancel of tid %" PRIu64 " not sent", tid);
	mdsc_request_put(req);
}

static int lock_range(const struct lc_lock *lk, uint64_t *start, uint64_t *end)
{
	if (lk->flock) {
		*start = 0;
		*end = RLOCK_EOF;
		return 0;
	}
	if (!rlock_range(lk->start, lk->len, end))
		return -EINVAL;
	*start = lk->start;
	return 0;
}

int lc_getlk(struct lclient *c, struct lc_inode *in, struct lc_lock *lk)
{
	struct mds_request *req;
	uint64_t start, end;
	int r;

	if (lk->flock || (lk->type != F_RDLCK && lk->type != F_WRLCK) || lock_range(lk, &start, &end))
		return -EINVAL;
	if (lc_evicted(c, NULL, 0))
		return -EIO;
	req = lc_req_new(c, MDSP_OP_GETLK, in->ino, NULL);
	if (!req)
		return -ENOMEM;
	req->args.lock.type = (uint32_t)lk->type;
	req->args.lock.start = lk->start;
	req->args.lock.len = lk->len;
	req->args.lock.owner = lk->owner;
	req->args.lock.owner_ns = lk->owner_ns;
	req->args.lock.pid = (uint32_t)lk->pid;
	r = mdsc_do_request(c->mdsc, req);
	if (!r && req->reply) {
		const struct mdsp_lock *l = &req->reply->lock;

		if (l->type == F_UNLCK) {
			lk->type = F_UNLCK;
		} else {
			lk->type = (int)l->type;
			lk->start = l->start;
			lk->len = l->len;
			lk->pid = (pid_t)l->pid;
			lk->holder_session = l->session_id;
			lk->holder_ns = l->owner_ns;
		}
	}
	mdsc_request_put(req);
	return r;
}

int lc_setlk(struct lclient *c, struct lc_inode *in, const struct lc_lock *lk, bool wait)
{
	struct lc_locks *k = c->locks;
	struct rlock_owner o = owner_of(lk);
	struct mds_request *req;
	struct lk_file *f;
	uint64_t start, end;
	bool held_flock = false, unsure = false;
	int r, type = rtype(lk->type);

	if (!type || lk->owner_ns > LC_LOCK_NS_NFS || (r = lock_range(lk, &start, &end)))
		return -EINVAL;
	if (lc_evicted(c, NULL, 0))
		return -EIO;
	pthread_mutex_lock(&k->lock);
	f = file_find(k, in->ino);
	if (f && (f->lost_posix.n || f->lost_flock.n)) {
		if (type != RLOCK_UN) {
			pthread_mutex_unlock(&k->lock);
			dout(CLIENT, 1, "file locks: ino %" PRIx64 " has locks the mds lost: lock requests fail with "
			     "EIO until they are unlocked", in->ino);
			return -EIO;
		}
		apply_lost(f, lk, start, end);
	}
	if (type == RLOCK_UN && (!f || (!f->unsure && !rlock_owner_holds(lk->flock ? &f->flock : &f->posix, &o)))) {
		/* nothing held: nothing for the MDS to do */
		if (f)
			file_put(k, f);
		pthread_mutex_unlock(&k->lock);
		return 0;
	}
	held_flock = lk->flock && f && rlock_owner_holds(&f->flock, &o);
	pthread_mutex_unlock(&k->lock);

	req = lc_req_new(c, MDSP_OP_SETLK, in->ino, NULL);
	if (!req)
		return -ENOMEM;
	req->args.lock.type = (uint32_t)lk->type;
	req->args.lock.flags = (wait ? MDSP_LOCK_WAIT : 0) | (lk->flock ? MDSP_LOCK_FLOCK : 0);
	req->args.lock.start = lk->start;
	req->args.lock.len = lk->len;
	req->args.lock.owner = lk->owner;
	req->args.lock.owner_ns = lk->owner_ns;
	req->args.lock.pid = (uint32_t)lk->pid;
	lc_async_order(c, req);
	if (wait) {
		r = mdsc_submit(c->mdsc, req);
		if (!r) {
			perf_inc(&k->waits, 1);
			r = mdsc_wait_reply(c->mdsc, req, 0, true);
		}
		if (r == -EINTR) {
			/* a signal: cancel the wait at the MDS, whose answer to
			 * the waiting request says whether we got the lock */
			uint64_t tmo = lc_secs_ns(CFG_client_request_timeout);

			send_cancel(c, in->ino, req->args.tid);
			r = mdsc_wait_reply(c->mdsc, req, tmo ? now_mono_ns() + tmo : 0, false);
			if (r == -ETIMEDOUT) {
				r = -EINTR;
				unsure = true;
			}
		}
	} else {
		/* given up unanswered (interrupted, client_request_timeout):
		 * the MDS may still grant it */
		r = mdsc_do_request(c->mdsc, req);
		unsure = r == -EINTR || r == -ETIMEDOUT;
	}
	mdsc_request_put(req);

	pthread_mutex_lock(&k->lock);
	f = file_get(k, in->ino);
	if (f && !r) {
		apply_granted(k, f, lk, start, end);
		if (type != RLOCK_UN)
			perf_inc(&k->grants, 1);
	} else if (f && unsure && type != RLOCK_UN) {
		/* we may hold it at the MDS without knowing: this file's
		 * unlocks and closes go to the MDS from now on */
		f->unsure = true;
	}
	if (f && held_flock && r && (r == -EAGAIN || r == -EINTR || r == -ENOLCK)) {
		/* the MDS dropped our flock before trying the conversion (Linux's rule) */
		struct lc_lock un = *lk;

		un.type = F_UNLCK;
		apply_granted(k, f, &un, 0, RLOCK_EOF);
	}
	if (f)
		file_put(k, f);
	pthread_mutex_unlock(&k->lock);
	if (r == -EAGAIN)
		perf_inc(&k->denied, 1);
	else if (r == -EINTR)
		perf_inc(&k->intr, 1);
	dout(CLIENT, 15, "file lock ino %" PRIx64 " %s %s [%" PRIu64 " +%" PRIu64 "] owner %u:%" PRIx64 "%s: %d", in->ino,
	     lk->flock ? "flock" : "fcntl", rlock_type_name(type), lk->start, lk->len, lk->owner_ns, lk->owner,
	     wait ? " (wait)" : "", r);
	return r;
}

int lc_lock_release_owner(struct lclient *c, struct lc_inode *in, uint32_t owner_ns, uint64_t owner, bool flock)
{
	struct lc_lock lk = { .type = F_UNLCK, .owner = owner, .owner_ns = owner_ns, .flock = flock };
	struct lc_locks *k = c->locks;
	bool any;

	if (!k)
		return 0;
	/* the common close: nothing held, nothing lost, no round trip */
	pthread_mutex_lock(&k->lock);
	any = file_find(k, in->ino) != NULL;
	pthread_mutex_unlock(&k->lock);
	if (!any)
		return 0;
	return lc_setlk(c, in, &lk, false);
}

void lc_fh_note_lock_owner(struct lc_fh *fh, uint32_t owner_ns, uint64_t owner)
{
	pthread_mutex_lock(&fh->ra_lock);
	for (uint32_t i = 0; i < fh->nlock_owners; i++)
		if (fh->lock_owners[i].owner == owner && fh->lock_owners[i].ns == owner_ns) {
			pthread_mutex_unlock(&fh->ra_lock);
			return;
		}
	if (fh->nlock_owners == fh->lock_owners_cap) {
		uint32_t ncap = fh->lock_owners_cap ? fh->lock_owners_cap * 2 : 4;
		void *n = realloc(fh->lock_owners, ncap * sizeof(*fh->lock_owners));

		if (!n) {
			pthread_mutex_unlock(&fh->ra_lock);
			derr(CLIENT, "no memory to note a lock owner: an OFD lock of inode %" PRIx64
			     " may outlive its open file (until the session ends)", fh->in->ino);
			return;
		}
		fh->lock_owners = n;
		fh->lock_owners_cap = ncap;
	}
	fh->lock_owners[fh->nlock_owners].ns = owner_ns;
	fh->lock_owners[fh->nlock_owners].owner = owner;
	fh->nlock_owners++;
	pthread_mutex_unlock(&fh->ra_lock);
}

void lc_fh_release_lock_owners(struct lclient *c, struct lc_fh *fh)
{
	for (uint32_t i = 0; i < fh->nlock_owners; i++) {
		int r = lc_lock_release_owner(c, fh->in, fh->lock_owners[i].ns, fh->lock_owners[i].owner, false);

		if (r < 0)
			derr(CLIENT, "release of inode %" PRIx64 ": dropping the locks of owner %" PRIx64 ": %s",
			     fh->in->ino, fh->lock_owners[i].owner, strerror(-r));
	}
	pthread_mutex_lock(&fh->ra_lock);
	free(fh->lock_owners);
	fh->lock_owners = NULL;
	fh->nlock_owners = fh->lock_owners_cap = 0;
	pthread_mutex_unlock(&fh->ra_lock);
}

/* ---- the session layer's hooks ------------------------------------------------- */

static int push_set(const struct rlock_set *set, uint64_t ino, bool flock, struct mdsp_lock **v, uint32_t *n,
		    uint32_t *cap)
{
	const struct rlock *l;

	for (l = set->head; l; l = l->next) {
		struct mdsp_lock *x;

		if (*n == *cap) {
			uint32_t ncap = *cap ? *cap * 2 : 64;
			struct mdsp_lock *nv = realloc(*v, ncap * sizeof(**v));

			if (!nv)
				return -ENOMEM;
			*v = nv;
			*cap = ncap;
		}
		x = &(*v)[(*n)++];
		memset(x, 0, sizeof(*x));
		x->ino = ino;
		x->type = l->type == RLOCK_RD ? F_RDLCK : F_WRLCK;
		x->flags = flock ? MDSP_LOCK_FLOCK : 0;
		x->start = l->start;
		x->len = rlock_len(l->start, l->end);
		x->owner = l->owner.id;
		x->owner_ns = l->owner.ns;
		x->pid = l->pid;
	}
	return 0;
}

int lc_reconnect_locks(void *arg, struct mdsp_lock **out, uint32_t *nout)
{
	struct lclient *c = arg;
	struct lc_locks *k = c->locks;
	struct mdsp_lock *v = NULL;
	uint32_t n = 0, cap = 0;
	struct lk_file *f;
	uint64_t idx = 0;
	int r = 0;

	*out = NULL;
	*nout = 0;
	pthread_mutex_lock(&k->lock);
	rcu_read_lock();
	xa_for_each(&k->files, idx, f) {
		if ((r = push_set(&f->posix, f->ino, false, &v, &n, &cap)) ||
		    (r = push_set(&f->flock, f->ino, true, &v, &n, &cap)))
			break;
	}
	rcu_read_unlock();
	pthread_mutex_unlock(&k->lock);
	if (r) {
		free(v);
		derr(CLIENT, "file locks: out of memory listing them for the reconnect: the mds will not know them");
		return r;
	}
	if (n)
		dinfo(CLIENT, "file locks: re-asserting %u lock(s) to the mds", n);
	*out = v;
	*nout = n;
	return 0;
}

/* Move [start, end] of @o from @from to @to (the lost set).  Caller holds k->lock. */
static void lose_range(struct rlock_set *from, struct rlock_set *to, const struct rlock_owner *o, int type,
		       uint32_t pid, uint64_t start, uint64_t end)
{
	rlock_apply(from, o, pid, RLOCK_UN, start, end, &lk_ops, NULL);
	rlock_apply(to, o, pid, type, start, end, &lk_ops, NULL);
}

void lc_locks_refused(void *arg, const struct mdsp_lock *locks, uint32_t n)
{
	struct lclient *c = arg;
	struct lc_locks *k = c->locks;
	uint32_t i;

	pthread_mutex_lock(&k->lock);
	for (i = 0; i < n; i++) {
		const struct mdsp_lock *l = &locks[i];
		struct lk_file *f = file_find(k, l->ino);
		struct rlock_owner o = { 0, l->owner, l->owner_ns };
		bool flock = l->flags & MDSP_LOCK_FLOCK;
		uint64_t end;

		if (!f || !rlock_range(l->start, l->len, &end) || (l->type != F_RDLCK && l->type != F_WRLCK))
			continue;
		lose_range(flock ? &f->flock : &f->posix, flock ? &f->lost_flock : &f->lost_posix, &o,
			   l->type == F_RDLCK ? RLOCK_RD : RLOCK_WR, l->pid, l->start, end);
		derr(CLIENT, "file locks: the mds did not grant back the %s %s lock on ino %" PRIx64 " [%" PRIu64
		     " +%" PRIu64 "] of pid %u: lock requests on that file fail with EIO until it is unlocked",
		     flock ? "flock" : "fcntl", l->type == F_RDLCK ? "read" : "write", l->ino, l->start, l->len, l->pid);
	}
	perf_inc(&k->lost, n);
	pthread_mutex_unlock(&k->lock);
}

/* The session is gone (evicted): every lock we held is lost. */
void lc_locks_session_lost(struct lclient *c)
{
	struct lc_locks *k = c->locks;
	struct lk_file *f;
	uint64_t idx = 0, n = 0;

	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	rcu_read_lock();
	xa_for_each(&k->files, idx, f) {
		struct rlock *l;

		while ((l = f->posix.head)) {
			struct rlock_owner o = l->owner;

			lose_range(&f->posix, &f->lost_posix, &o, l->type, l->pid, l->start, l->end);
			n++;
		}
		while ((l = f->flock.head)) {
			struct rlock_owner o = l->owner;

			lose_range(&f->flock, &f->lost_flock, &o, l->type, l->pid, l->start, l->end);
			n++;
		}
	}
	rcu_read_unlock();
	k->nheld = 0;
	perf_inc(&k->lost, n);
	pthread_mutex_unlock(&k->lock);
	if (n)
		derr(CLIENT, "file locks: the session with the mds is lost: %" PRIu64 " lock(s) are gone; lock "
		     "requests on those files fail with EIO until their holders unlock them", n);
}
