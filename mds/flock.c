/*
 * flock.c - file locks served by the MDS: fcntl byte-range locks
 * (F_GETLK/F_SETLK/F_SETLKW) and flock(2), shared by every client.
 *
 * Per file (by ino, independent of the inode cache: a locked file stays
 * known even when its inode is trimmed), two lock sets (common/rlock.h:
 * fcntl and flock locks never conflict with each other, as on Linux) and a
 * FIFO of waiters.  An owner is (session, namespace, id): FUSE's lock_owner
 * (a process for fcntl locks, an open file description for flock and OFD
 * locks) or the NFS gateway's id for an NFS lock-owner, so a FUSE process,
 * an NFS client and a process on another mount all conflict with each
 * other.  Each session keeps a list of its locks and of its waiters, so
 * that its end (close, eviction, autoclose) releases exactly them.
 *
 * A SETLK that conflicts fails with EAGAIN; with MDSP_LOCK_WAIT it waits:
 * the request is parked on the file and answered when the lock is granted
 * (on the connection it came on), never on the reader thread.  Every change
 * that can free a range (an unlock, a downgrade, an owner's close, a
 * session's end) runs the file's waiters in arrival order and grants every
 * one that no longer conflicts.  A signal in the waiting process cancels
 * the wait: the client sends SETLK with MDSP_LOCK_CANCEL naming the
 * waiting request's tid (as the Linux ceph client does on an interrupted
 * F_SETLKW), the waiter is answered EINTR and leaves no trace.  A waiter
 * whose connection closes is dropped: the client sends its request again
 * on the next connection.  F_SETLKW that would close a cycle of owners
 * waiting for each other fails with EDEADLK (Linux's posix_locks_deadlock:
 * follow "the owner holding what I want waits for ..." up to 10 steps);
 * flock waits are not checked, as on Linux.
 *
 * Locks are not journaled.  A restarted MDS gets them back from the
 * clients: every client keeps the locks the MDS granted it (the same sets,
 * client/flock.c) and re-asserts them in SESSION RECONNECT, the way Ceph's
 * clients re-send their locks in the reconnect message.  To never grant a
 * lock twice, every lock request (GETLK too: it would answer "unlocked")
 * waits while the reconnect phase runs, and the phase waits for the
 * sessions that may hold locks: those connected when the MDS stopped, and
 * those whose connection had closed while they held locks (the record
 * journaled at the close says so, SESSION_F_HELD_LOCKS).  A client that
 * does not come back within mds_reconnect_timeout loses its locks: when
 * it reconnects later, the MDS (which may have granted them to others
 * meanwhile) refuses every lock it re-asserts, and the client fails the
 * lock operations on those files with EIO until they are unlocked (it
 * cannot know whether another client held a conflicting lock meanwhile).
 * Journaling every lock would cost a journal write per lock and still not
 * cover a client that died holding one, which the restarted MDS must
 * release anyway; the client is the authority on what it holds, as in
 * Ceph.  A reconnect to the same MDS instance (a broken connection) keeps
 * the session's locks on the MDS, which checks the re-asserted ones against
 * what it has.
 *
 * Bounds: a session holds at most mds_max_locks_per_session records and
 * mds_max_lock_waiters_per_session waits (ENOLCK beyond, as Linux when
 * lock memory runs out); every operation costs what exists on the file
 * (the locks there and its waiters), never anything proportional to a
 * range a peer sent.
 *
 * Replies are built under mds->lock and sent after it (flock_flush()):
 * a grant that a session's end or the end of the reconnect phase causes is
 * queued and the caller of those flushes.  Everything else here is
 * protected by mds->lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/list.h>

#include "common/config.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "common/perf.h"
#include "common/rcu.h"
#include "common/rlock.h"
#include "common/time.h"
#include "common/xarray.h"
#include "mds/mds.h"
#include "mds/flock.h"
#include "mds/mdcache.h"
#include "mds/net.h"

#define DEADLK_MAX_STEPS 10     /* Linux's MAX_DEADLK_ITERATIONS */

struct flk_inode;

struct flk_lock {
	struct rlock rl;
	struct cds_list_head s_item;  /* flk_session.locks */
	struct flk_inode *fi;
	struct flk_session *fs;
	bool flock;
};

struct flk_waiter {
	struct cds_list_head item;    /* fi->waiters, or st.parked during the reconnect phase */
	struct cds_list_head s_item;  /* flk_session.waiters */
	struct conn *conn;            /* holds a ref: where the answer goes */
	struct flk_session *fs;
	uint64_t tid;
	uint64_t ino;
	struct flk_inode *fi;         /* NULL while parked for the reconnect phase */
	struct mdsp_request req;      /* op, flags and lock of the request (no strings) */
	struct rlock_owner owner;
	uint64_t start, end;
	int type;                     /* RLOCK_* */
	uint64_t since_ns;
	bool parked;                  /* waits for the end of the reconnect phase, not for a lock */
};

struct flk_inode {
	uint64_t ino;
	struct rlock_set posix, flock;
	struct cds_list_head waiters; /* struct flk_waiter.item, arrival order */
	uint64_t nwaiters;
	int pin;                      /* kept while a walk over its waiters runs */
};

/* One session's locks and waits (session->flk). */
struct flk_session {
	struct session *s;
	struct cds_list_head locks;   /* struct flk_lock.s_item */
	struct cds_list_head waiters; /* struct flk_waiter.s_item */
	uint64_t nlocks, nwaiters;
};

/* An answer to send once mds->lock is dropped. */
struct flk_out {
	struct flk_out *next;
	struct conn *conn;            /* holds a ref */
	uint64_t tid;
	int result;
	struct mdsp_lock lock;        /* GETLK: the conflicting lock */
};

static struct {
	struct xarray inodes;         /* ino -> struct flk_inode */
	struct cds_list_head parked;  /* requests waiting for the reconnect phase */
	uint64_t nlocks, nwaiters, ninodes;
	struct flk_out *out, **out_tail;
	bool out_pending;             /* out is not empty (read without the lock) */
	/* the reconnect phase: sessions that may hold locks and have not
	 * re-asserted them yet; lock requests wait while there are any */
	struct xarray reassert;       /* sid -> (void *)1 */
	uint64_t nreassert;
	bool init;
} st;

static struct perf_counter pc_grants, pc_denied, pc_waits, pc_wakeups, pc_cancels, pc_deadlocks,
	pc_reasserted, pc_refused, pc_released_sessions, pc_enolck;
static struct hist h_wait;

/* ---- helpers -------------------------------------------------------------- */

static int to_rtype(uint32_t t)
{
	switch (t) {
	case F_RDLCK:
		return RLOCK_RD;
	case F_WRLCK:
		return RLOCK_WR;
	case F_UNLCK:
		return RLOCK_UN;
	}
	return 0;
}

static uint32_t from_rtype(int t)
{
	return t == RLOCK_RD ? F_RDLCK : t == RLOCK_WR ? F_WRLCK : F_UNLCK;
}

/* Caller holds mds->lock. */
static struct flk_session *sess_locked(struct mds *m, struct session *s)
{
	struct flk_session *fs = s->flk;

	lockdep_assert_held(&m->lock);
	if (fs)
		return fs;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return NULL;
	fs->s = s;
	CDS_INIT_LIST_HEAD(&fs->locks);
	CDS_INIT_LIST_HEAD(&fs->waiters);
	s->flk = fs;
	return fs;
}

static struct flk_inode *fi_find(uint64_t ino)
{
	struct flk_inode *fi;

	rcu_read_lock();
	fi = xa_load(&st.inodes, ino);
	rcu_read_unlock();
	return fi;
}

static struct flk_inode *fi_get(uint64_t ino)
{
	struct flk_inode *fi = fi_find(ino);

	if (fi)
		return fi;
	fi = calloc(1, sizeof(*fi));
	if (!fi)
		return NULL;
	fi->ino = ino;
	CDS_INIT_LIST_HEAD(&fi->waiters);
	if (xa_store(&st.inodes, ino, fi)) {
		free(fi);
		return NULL;
	}
	__atomic_fetch_add(&st.ninodes, 1, __ATOMIC_RELAXED);
	return fi;
}

/* Forget @fi once nothing is left on it. */
static void fi_put(struct flk_inode *fi)
{
	if (fi->pin || fi->posix.n || fi->flock.n || !cds_list_empty(&fi->waiters))
		return;
	xa_erase(&st.inodes, fi->ino);
	__atomic_fetch_sub(&st.ninodes, 1, __ATOMIC_RELAXED);
	free(fi);
}

/* rlock records: accounted to the session whose owner takes them */
struct alloc_ctx {
	struct flk_session *fs;
	struct flk_inode *fi;
	bool flock;
};

static struct rlock *lk_alloc(void *arg)
{
	struct alloc_ctx *a = arg;
	struct flk_lock *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->fi = a->fi;
	l->fs = a->fs;
	l->flock = a->flock;
	cds_list_add_tail(&l->s_item, &a->fs->locks);
	a->fs->nlocks++;
	__atomic_fetch_add(&st.nlocks, 1, __ATOMIC_RELAXED);
	return &l->rl;
}

static void lk_release(struct rlock *rl, void *arg)
{
	struct flk_lock *l = caa_container_of(rl, struct flk_lock, rl);

	(void)arg;
	cds_list_del(&l->s_item);
	l->fs->nlocks--;
	__atomic_fetch_sub(&st.nlocks, 1, __ATOMIC_RELAXED);
	free(l);
}

static const struct rlock_ops lk_ops = { lk_alloc, lk_release };

static struct rlock_set *set_of(struct flk_inode *fi, bool flock)
{
	return flock ? &fi->flock : &fi->posix;
}

static void out_queue(struct conn *c, uint64_t tid, int result, const struct mdsp_lock *lock)
{
	struct flk_out *o = calloc(1, sizeof(*o));

	if (!o) {
		derr(MDS, "file locks: out of memory for the answer to tid %" PRIu64 " (the client waits on)", tid);
		return;
	}
	conn_get(c);
	o->conn = c;
	o->tid = tid;
	o->result = result;
	if (lock)
		o->lock = *lock;
	*st.out_tail = o;
	st.out_tail = &o->next;
	__atomic_store_n(&st.out_pending, true, __ATOMIC_RELEASE);
}

static void lock_out(const struct rlock *l, bool flock, struct mdsp_lock *out)
{
	memset(out, 0, sizeof(*out));
	out->type = from_rtype(l->type);
	out->flags = flock ? MDSP_LOCK_FLOCK : 0;
	out->start = l->start;
	out->len = rlock_len(l->start, l->end);
	out->owner = l->owner.id;
	out->owner_ns = l->owner.ns;
	out->session_id = l->owner.sid;
	out->pid = l->pid;
}

static void waiter_free(struct flk_waiter *w)
{
	cds_list_del(&w->item);
	cds_list_del(&w->s_item);
	w->fs->nwaiters--;
	__atomic_fetch_sub(&st.nwaiters, 1, __ATOMIC_RELAXED);
	if (w->fi) {
		w->fi->nwaiters--;
		fi_put(w->fi);
	}
	conn_put(w->conn);
	free(w);
}

/* ---- deadlock detection --------------------------------------------------- */

/* A waiting fcntl request of @o (any file), or NULL. */
static struct flk_waiter *waiter_of(const struct rlock_owner *o)
{
	uint64_t idx = 0;
	struct flk_inode *fi;
	struct flk_waiter *w;

	rcu_read_lock();
	xa_for_each(&st.inodes, idx, fi) {
		cds_list_for_each_entry(w, &fi->waiters, item)
			if (!(w->req.lock.flags & MDSP_LOCK_FLOCK) && rlock_owner_eq(&w->owner, o)) {
				rcu_read_unlock();
				return w;
			}
	}
	rcu_read_unlock();
	return NULL;
}

/*
 * Would @o waiting for @blocker's owner close a cycle?  As Linux: the
 * holder of what we want may itself wait for a lock whose holder waits ...
 * followed up to DEADLK_MAX_STEPS.
 */
static bool would_deadlock(const struct rlock_owner *o, const struct rlock *blocker)
{
	struct rlock_owner cur = blocker->owner;
	int i;

	for (i = 0; i < DEADLK_MAX_STEPS; i++) {
		struct flk_waiter *w;
		const struct rlock *b;

		if (rlock_owner_eq(&cur, o))
			return true;
		w = waiter_of(&cur);
		if (!w)
			return false;
		b = rlock_conflict(&w->fi->posix, &w->owner, w->type, w->start, w->end);
		if (!b)
			return false;
		cur = b->owner;
	}
	return false;
}

/* ---- granting ------------------------------------------------------------- */

static void note_grant(const struct flk_waiter *w)
{
	perf_inc(&pc_grants, 1);
	if (w) {
		perf_inc(&pc_wakeups, 1);
		hist_add(&h_wait, now_mono_ns() - w->since_ns);
	}
}

/* Grant @w if it no longer conflicts.  Return: true if it was (and freed). */
static bool waiter_try(struct flk_waiter *w)
{
	bool flock = w->req.lock.flags & MDSP_LOCK_FLOCK;
	struct rlock_set *set = set_of(w->fi, flock);
	struct alloc_ctx a = { w->fs, w->fi, flock };
	int r;

	if (rlock_conflict(set, &w->owner, w->type, w->start, w->end))
		return false;
	r = rlock_apply(set, &w->owner, w->req.lock.pid, w->type, w->start, w->end, &lk_ops, &a);
	/* to the session's connection now: it may have moved since */
	out_queue(w->fs->s->conn ? w->fs->s->conn : w->conn, w->tid, r, NULL);
	if (!r)
		note_grant(w);
	dout(MDS, 10, "file lock: session %" PRIu64 " tid %" PRIu64 " %s %s [%" PRIu64 ", %" PRIu64 "] of ino %" PRIx64
		      " granted after waiting: %d", w->owner.sid, w->tid, flock ? "flock" : "fcntl",
	     rlock_type_name(w->type), w->start, w->end, w->ino, r);
	waiter_free(w);
	return true;
}

/* Something on @fi was freed: grant what waits and no longer conflicts.
 * @fi stays (the caller puts it). */
static void run_waiters(struct flk_inode *fi)
{
	struct flk_waiter *w, *n;

	fi->pin++;
	cds_list_for_each_entry_safe(w, n, &fi->waiters, item)
		waiter_try(w);
	fi->pin--;
}

static void wake_inode(struct flk_inode *fi)
{
	run_waiters(fi);
	fi_put(fi);
}

/* ---- requests ------------------------------------------------------------- */

/* The type of @o's flock in @set (an owner has at most one), or 0. */
static int flock_type_held(const struct rlock_set *set, const struct rlock_owner *o)
{
	const struct rlock *l;

	for (l = set->head; l; l = l->next)
		if (rlock_owner_eq(&l->owner, o))
			return l->type;
	return 0;
}

static int check_lock(const struct mdsp_request *req, int *type, uint64_t *start, uint64_t *end)
{
	const struct mdsp_lock *l = &req->lock;
	bool flock = l->flags & MDSP_LOCK_FLOCK;

	if (l->flags & ~(MDSP_LOCK_WAIT | MDSP_LOCK_FLOCK | MDSP_LOCK_CANCEL))
		return -EINVAL;
	if (l->owner_ns > MDSP_LOCK_NS_MAX)
		return -EINVAL;
	*type = to_rtype(l->type);
	if (!*type)
		return -EINVAL;
	if (flock) {
		*start = 0;
		*end = RLOCK_EOF;
		return 0;
	}
	/* offsets are u64 (NFS locks go up to 2^64-1); FUSE's are within off_t */
	if (!rlock_range(l->start, l->len, end))
		return -EINVAL;
	*start = l->start;
	return 0;
}

static struct flk_waiter *waiter_new(struct conn *c, struct flk_session *fs, const struct mdsp_request *req,
				     const struct rlock_owner *o, int type, uint64_t start, uint64_t end)
{
	struct flk_waiter *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	conn_get(c);
	w->conn = c;
	w->fs = fs;
	w->tid = req->tid;
	w->ino = req->ino;
	w->req.op = req->op;
	w->req.ino = req->ino;
	w->req.lock = req->lock;
	w->owner = *o;
	w->type = type;
	w->start = start;
	w->end = end;
	w->since_ns = now_mono_ns();
	cds_list_add_tail(&w->s_item, &fs->waiters);
	CDS_INIT_LIST_HEAD(&w->item);
	fs->nwaiters++;
	__atomic_fetch_add(&st.nwaiters, 1, __ATOMIC_RELAXED);
	return w;
}

static int waiters_room(const struct flk_session *fs)
{
	uint64_t max = cfg_uint(CFG_mds_max_lock_waiters_per_session);

	if (max && fs->nwaiters >= max) {
		perf_inc(&pc_enolck, 1);
		dinfo(MDS, "session %" PRIu64 ": %" PRIu64 " file lock waits parked (mds_max_lock_waiters_per_session): "
			   "ENOLCK", fs->s->id, fs->nwaiters);
		return -ENOLCK;
	}
	return 0;
}

/* A SETLK/GETLK of @fs (not cancel) evaluated now.  *@w_out: the waiter made
 * for it (the answer comes later).  Caller holds mds->lock. */
static int lock_eval(struct conn *c, struct flk_session *fs, const struct mdsp_request *req, struct mdsp_lock *reply,
		     struct flk_waiter **w_out)
{
	bool flock = req->lock.flags & MDSP_LOCK_FLOCK, wait = req->lock.flags & MDSP_LOCK_WAIT;
	struct rlock_owner o = { fs->s->id, req->lock.owner, req->lock.owner_ns };
	uint64_t start, end, max = cfg_uint(CFG_mds_max_locks_per_session);
	struct flk_inode *fi;
	struct rlock_set *set;
	const struct rlock *cf;
	struct alloc_ctx a;
	int type, r, d;

	*w_out = NULL;
	if ((r = check_lock(req, &type, &start, &end)))
		return r;
	if (req->op == MDSP_OP_GETLK) {
		if (type == RLOCK_UN || flock)
			return -EINVAL;
		fi = fi_find(req->ino);
		cf = fi ? rlock_conflict(&fi->posix, &o, type, start, end) : NULL;
		if (cf) {
			lock_out(cf, false, reply);
		} else {
			memset(reply, 0, sizeof(*reply));
			reply->type = F_UNLCK;
		}
		return 0;
	}
	fi = type == RLOCK_UN ? fi_find(req->ino) : fi_get(req->ino);
	if (!fi)
		return type == RLOCK_UN ? 0 : -ENOMEM;
	set = set_of(fi, flock);
	if (flock && type != RLOCK_UN && rlock_owner_holds(set, &o)) {
		if (flock_type_held(set, &o) == type) {
			fi_put(fi);
			return 0;               /* already held so */
		}
		/* converting a flock drops the old lock first (Linux's
		 * flock_lock_inode), so two shared holders that both upgrade
		 * do not deadlock; a failed LOCK_NB conversion has lost it */
		a = (struct alloc_ctx){ fs, fi, flock };
		rlock_apply(set, &o, req->lock.pid, RLOCK_UN, 0, RLOCK_EOF, &lk_ops, &a);
		run_waiters(fi);
	}
	cf = rlock_conflict(set, &o, type, start, end);
	if (cf) {
		if (!wait) {
			perf_inc(&pc_denied, 1);
			fi_put(fi);
			return -EAGAIN;
		}
		if (!flock && would_deadlock(&o, cf)) {
			perf_inc(&pc_deadlocks, 1);
			dout(MDS, 5, "session %" PRIu64 " tid %" PRIu64 ": F_SETLKW on ino %" PRIx64 " would deadlock",
			     fs->s->id, req->tid, req->ino);
			fi_put(fi);
			return -EDEADLK;
		}
		if ((r = waiters_room(fs))) {
			fi_put(fi);
			return r;
		}
		*w_out = waiter_new(c, fs, req, &o, type, start, end);
		if (!*w_out) {
			fi_put(fi);
			return -ENOMEM;
		}
		(*w_out)->fi = fi;
		fi->nwaiters++;
		cds_list_add_tail(&(*w_out)->item, &fi->waiters);
		perf_inc(&pc_waits, 1);
		return 0;
	}
	d = rlock_delta(set, &o, type, start, end);
	if (d > 0 && max && fs->nlocks + (uint64_t)d > max) {
		perf_inc(&pc_enolck, 1);
		dinfo(MDS, "session %" PRIu64 " holds %" PRIu64 " file locks (mds_max_locks_per_session): ENOLCK",
		      fs->s->id, fs->nlocks);
		fi_put(fi);
		return -ENOLCK;
	}
	a = (struct alloc_ctx){ fs, fi, flock };
	r = rlock_apply(set, &o, req->lock.pid, type, start, end, &lk_ops, &a);
	if (!r && type != RLOCK_UN)
		note_grant(NULL);
	/* an unlock, a downgrade or a shrink may have freed what others wait for */
	wake_inode(fi);
	return r;
}

/* The waiting request @tid of @fs stops waiting: EINTR to it.  Return: 0, or
 * -ENOENT (granted or answered already: the client takes that answer). */
static int lock_cancel(struct flk_session *fs, uint64_t tid)
{
	struct flk_waiter *w;

	cds_list_for_each_entry(w, &fs->waiters, s_item)
		if (w->tid == tid) {
			out_queue(fs->s->conn ? fs->s->conn : w->conn, w->tid, -EINTR, NULL);
			perf_inc(&pc_cancels, 1);
			dout(MDS, 10, "session %" PRIu64 ": wait of tid %" PRIu64 " on ino %" PRIx64 " cancelled", fs->s->id,
			     tid, w->ino);
			waiter_free(w);
			return 0;
		}
	return -ENOENT;
}

/* A request sent again (a new connection) replaces its old wait. */
static void drop_same_tid(struct flk_session *fs, uint64_t tid)
{
	struct flk_waiter *w, *n;

	cds_list_for_each_entry_safe(w, n, &fs->waiters, s_item)
		if (w->tid == tid)
			waiter_free(w);
}

/* Park @req until the reconnect phase is over (then it is evaluated). */
static int lock_park(struct conn *c, struct flk_session *fs, const struct mdsp_request *req)
{
	struct rlock_owner o = { fs->s->id, req->lock.owner, req->lock.owner_ns };
	struct flk_waiter *w;
	uint64_t start, end;
	int type, r;

	if ((r = check_lock(req, &type, &start, &end)) || (r = waiters_room(fs)))
		return r;
	w = waiter_new(c, fs, req, &o, type, start, end);
	if (!w)
		return -ENOMEM;
	w->parked = true;
	cds_list_add_tail(&w->item, &st.parked);
	dout(MDS, 10, "session %" PRIu64 " tid %" PRIu64 ": %s waits for the end of the reconnect phase", fs->s->id,
	     req->tid, mdsp_op_name(req->op));
	return 0;
}

/* Run a request that was parked for the reconnect phase.  @w is freed. */
static void parked_run(struct flk_waiter *w)
{
	struct mdsp_request req;
	struct mdsp_lock reply;
	struct flk_session *fs = w->fs;
	struct flk_waiter *nw;
	struct conn *c = w->conn;
	int r;

	memset(&req, 0, sizeof(req));
	req.tid = w->tid;
	req.op = w->req.op;
	req.ino = w->req.ino;
	req.lock = w->req.lock;
	conn_get(c);
	waiter_free(w);
	r = lock_eval(fs->s->conn ? fs->s->conn : c, fs, &req, &reply, &nw);
	if (!nw)
		out_queue(fs->s->conn ? fs->s->conn : c, req.tid, r, req.op == MDSP_OP_GETLK && !r ? &reply : NULL);
	conn_put(c);
}

void flock_request(struct mds *m, struct conn *c, struct mdsp_request *req)
{
	struct mdsp_lock reply;
	struct flk_waiter *w = NULL;
	struct flk_session *fs;
	struct session *s;
	uint64_t t0 = now_mono_ns();
	bool answered = false;
	int r;

	pthread_mutex_lock(&m->lock);
	s = c->session_id ? xa_load(&m->sessions, c->session_id) : NULL;
	if (!s) {
		out_queue(c, req->tid, -ENOTCONN, NULL);
		goto out;
	}
	s->nreq++;
	fs = sess_locked(m, s);
	if (!fs) {
		out_queue(c, req->tid, -ENOMEM, NULL);
		goto out;
	}
	if (req->op == MDSP_OP_SETLK && (req->lock.flags & MDSP_LOCK_CANCEL)) {
		r = lock_cancel(fs, req->lock.wait_tid);
	} else if (m->flock_ops->reconnect_hold_locked(m, s, req)) {
		/* locks are being re-asserted: nothing may be granted (nor
		 * reported free) before they all are */
		drop_same_tid(fs, req->tid);
		r = lock_park(c, fs, req);
		answered = !r;
	} else {
		drop_same_tid(fs, req->tid);
		r = lock_eval(c, fs, req, &reply, &w);
		answered = w != NULL;
	}
	if (!answered)
		out_queue(c, req->tid, r, req->op == MDSP_OP_GETLK && !r ? &reply : NULL);
	dout(MDS, 15, "session %" PRIu64 " tid %" PRIu64 " %s ino %" PRIx64 " %s owner %u:%" PRIx64 " [%" PRIu64
		      " +%" PRIu64 "] flags %#x -> %s", s->id, req->tid, mdsp_op_name(req->op), req->ino,
	     req->lock.type == F_RDLCK ? "read" : req->lock.type == F_WRLCK ? "write" : "unlock", req->lock.owner_ns,
	     req->lock.owner, req->lock.start, req->lock.len, req->lock.flags, answered ? "waits" : strerror(-r));
out:
	pthread_mutex_unlock(&m->lock);
	flock_flush(m);
	if (req->op < MDSP_OP_MAX) {
		hist_add(&m->op_lat[req->op], now_mono_ns() - t0);
		perf_inc(&m->op_count[req->op], 1);
	}
}

/* ---- sessions, connections, the reconnect phase ---------------------------- */

static void reassert_done(struct mds *m, uint64_t sid);

void flock_session_open_locked(struct mds *m, struct session *s)
{
	sess_locked(m, s);
}

void flock_session_drop_locked(struct mds *m, struct session *s)
{
	struct flk_session *fs = s->flk;
	struct flk_inode *fi, *wake[16];
	struct flk_waiter *w, *wn;
	struct flk_lock *l;
	uint64_t nlocks;
	int nwake = 0, i;

	if (!fs) {
		reassert_done(m, s->id);   /* gone: nothing to wait for */
		return;
	}
	nlocks = fs->nlocks;
	cds_list_for_each_entry_safe(w, wn, &fs->waiters, s_item)
		waiter_free(w);
	/* release every lock; the files they were on run their waiters
	 * (pinned meanwhile; in rounds of 16 files) */
	while (!cds_list_empty(&fs->locks)) {
		l = cds_list_first_entry(&fs->locks, struct flk_lock, s_item);
		fi = l->fi;
		for (i = 0; i < nwake && wake[i] != fi; i++)
			;
		if (i == nwake) {
			if (nwake == 16) {
				for (i = 0; i < nwake; i++) {
					wake[i]->pin--;
					wake_inode(wake[i]);
				}
				nwake = 0;
			}
			fi->pin++;
			wake[nwake++] = fi;
		}
		rlock_remove(set_of(fi, l->flock), &l->rl, &lk_ops, NULL);
	}
	for (i = 0; i < nwake; i++) {
		wake[i]->pin--;
		wake_inode(wake[i]);
	}
	if (nlocks) {
		perf_inc(&pc_released_sessions, 1);
		dinfo(MDS, "session %" PRIu64 " (%s) ended holding %" PRIu64 " file lock(s): released", s->id,
		      s->client_name ? s->client_name : "", nlocks);
	}
	s->flk = NULL;
	free(fs);
	reassert_done(m, s->id);       /* gone: nothing to wait for (after its waits went) */
}

bool flock_session_has_locks_locked(const struct session *s)
{
	return s->flk && s->flk->nlocks;
}

void flock_conn_closed_locked(struct mds *m, struct conn *c)
{
	struct flk_waiter *w, *n;
	uint64_t idx = 0;
	struct flk_inode *fi;

	(void)m;
	cds_list_for_each_entry_safe(w, n, &st.parked, item)
		if (w->conn == c)
			waiter_free(w);
	rcu_read_lock();
	xa_for_each(&st.inodes, idx, fi) {
		fi->pin++;
		cds_list_for_each_entry_safe(w, n, &fi->waiters, item)
			if (w->conn == c)
				waiter_free(w);
		fi->pin--;
		fi_put(fi);
	}
	rcu_read_unlock();
}

void flock_reconnect_phase_start_locked(struct mds *m, struct session *s)
{
	(void)m;
	if (xa_store(&st.reassert, s->id, (void *)1) == 0)
		st.nreassert++;
}

bool flock_reassert_pending_locked(struct mds *m)
{
	(void)m;
	return st.nreassert != 0;
}

static void reassert_done(struct mds *m, uint64_t sid)
{
	if (!xa_erase(&st.reassert, sid))
		return;
	if (--st.nreassert == 0) {
		dinfo(MDS, "every session that may hold file locks re-asserted them: lock requests run again");
		flock_reconnect_over_locked(m);
	}
}

void flock_reconnect_over_locked(struct mds *m)
{
	struct flk_waiter *w;
	uint64_t n = 0, idx = 0;
	void *v;

	(void)m;
	/* the phase is over: sessions that did not come back lose their locks */
	rcu_read_lock();
	xa_for_each(&st.reassert, idx, v)
		xa_erase(&st.reassert, idx);
	rcu_read_unlock();
	st.nreassert = 0;
	while (!cds_list_empty(&st.parked)) {
		w = cds_list_first_entry(&st.parked, struct flk_waiter, item);
		parked_run(w);
		n++;
	}
	if (n)
		dinfo(MDS, "reconnect phase over: %" PRIu64 " file lock request(s) held back run now", n);
}

/* @o holds [@start, @end] as @type entirely in @set. */
static bool covered(const struct rlock_set *set, const struct rlock_owner *o, int type, uint64_t start,
		    uint64_t end)
{
	unsigned __int128 want = (unsigned __int128)end - start + 1, have = 0;
	const struct rlock *l;

	for (l = set->head; l; l = l->next) {
		uint64_t a, z;

		if (!rlock_owner_eq(&l->owner, o) || l->type != type || l->end < start || l->start > end)
			continue;
		a = l->start > start ? l->start : start;
		z = l->end < end ? l->end : end;
		have += (unsigned __int128)z - a + 1;
	}
	return have == want;
}

static int reassert_locked(struct mds *m, struct session *s, bool known, bool may_reassert,
			   const struct mdsp_lock *locks, uint32_t n, struct mdsp_lock **refused, uint32_t *nrefused);

int flock_reconnect_locked(struct mds *m, struct session *s, const struct mdsp_lock *locks, uint32_t n,
			   struct mdsp_lock **refused, uint32_t *nrefused)
{
	bool known = s->flk != NULL, may_reassert;
	int r;

	/* locks come back only from a session this start's reconnect phase
	 * waits for: one that may have held them when the MDS stopped */
	rcu_read_lock();
	may_reassert = xa_load(&st.reassert, s->id) != NULL;
	rcu_read_unlock();
	r = reassert_locked(m, s, known, may_reassert, locks, n, refused, nrefused);
	reassert_done(m, s->id);
	return r;
}

/* Caller holds mds->lock. */
static int reassert_locked(struct mds *m, struct session *s, bool known, bool may_reassert,
			   const struct mdsp_lock *locks, uint32_t n, struct mdsp_lock **refused, uint32_t *nrefused)
{
	uint64_t max = cfg_uint(CFG_mds_max_locks_per_session), ngranted = 0;
	struct flk_session *fs;
	uint32_t i, nr = 0;
	const char *why = NULL;

	lockdep_assert_held(&m->lock);
	(void)m;
	*refused = NULL;
	*nrefused = 0;
	fs = sess_locked(m, s);
	if (!fs)
		return -ENOMEM;
	if (!n)
		return 0;
	*refused = calloc(n, sizeof(**refused));
	if (!*refused)
		return -ENOMEM;
	if (!known && !may_reassert)
		why = "the mds restarted and the session did not come back within mds_reconnect_timeout "
		      "(the locks may have been granted to others meanwhile)";
	for (i = 0; i < n; i++) {
		const struct mdsp_lock *l = &locks[i];
		struct mdsp_request req = { .op = MDSP_OP_SETLK, .ino = l->ino, .lock = *l };
		struct rlock_owner o = { s->id, l->owner, l->owner_ns };
		bool flock = l->flags & MDSP_LOCK_FLOCK;
		struct flk_inode *fi;
		struct alloc_ctx a;
		uint64_t start, end;
		int type, d;
		bool ok = false;

		req.lock.flags &= MDSP_LOCK_FLOCK;
		if (check_lock(&req, &type, &start, &end) || type == RLOCK_UN) {
			ok = false;
		} else if (known) {
			/* the same MDS instance: it knows what the session holds */
			fi = fi_find(l->ino);
			ok = fi && covered(set_of(fi, flock), &o, type, start, end);
		} else if (!why && (fi = fi_get(l->ino))) {
			struct rlock_set *set = set_of(fi, flock);
			const struct rlock *cf = rlock_conflict(set, &o, type, start, end);

			d = rlock_delta(set, &o, type, start, end);
			a = (struct alloc_ctx){ fs, fi, flock };
			if (cf) {
				derr(MDS, "session %" PRIu64 " re-asserts a %s lock on ino %" PRIx64 " [%" PRIu64 ", %" PRIu64
					  "] that session %" PRIu64 " holds too: refused", s->id, rlock_type_name(type),
				     l->ino, start, end, cf->owner.sid);
			} else if (!(d > 0 && max && fs->nlocks + (uint64_t)d > max) &&
				   !rlock_apply(set, &o, l->pid, type, start, end, &lk_ops, &a)) {
				ok = true;
				ngranted++;
			}
			fi_put(fi);
		}
		if (!ok)
			(*refused)[nr++] = *l;
	}
	perf_inc(&pc_reasserted, ngranted);
	perf_inc(&pc_refused, nr);
	if (nr)
		derr(MDS, "session %" PRIu64 " (%s) re-asserted %u file lock(s), %u refused%s%s: the client fails "
			  "lock operations on those files with EIO", s->id, s->client_name ? s->client_name : "", n, nr,
		     why ? ": " : "", why ? why : "");
	else if (!known)
		dinfo(MDS, "session %" PRIu64 " re-asserted %u file lock(s)", s->id, n);
	*nrefused = nr;
	if (!nr) {
		free(*refused);
		*refused = NULL;
	}
	return 0;
}

/* ---- answers ---------------------------------------------------------------- */

void flock_flush(struct mds *m)
{
	struct flk_out *o, *next;

	if (!__atomic_load_n(&st.out_pending, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&m->lock);
	o = st.out;
	st.out = NULL;
	st.out_tail = &st.out;
	__atomic_store_n(&st.out_pending, false, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&m->lock);
	for (; o; o = next) {
		struct mdsp_msg msg;
		struct mdsp_buf b;

		next = o->next;
		memset(&msg, 0, sizeof(msg));
		msg.type = MDSP_MSG_REPLY;
		msg.reply.tid = o->tid;
		msg.reply.result = o->result;
		msg.reply.flags = MDSP_REPLY_SAFE;
		msg.reply.lock = o->lock;
		mdsp_buf_init(&b);
		if (!mdsp_encode(&b, &msg))
			conn_send_frame(o->conn, &b);
		mdsp_buf_free(&b);
		conn_put(o->conn);
		free(o);
	}
}

/* ---- set-up, observability --------------------------------------------------- */

void flock_set_ops(struct mds *m, const struct flock_ops *ops)
{
	m->flock_ops = ops;
}

void flock_init(struct mds *m)
{
	(void)m;
	if (st.init)
		return;
	xa_init(&st.inodes);
	xa_init(&st.reassert);
	CDS_INIT_LIST_HEAD(&st.parked);
	st.out = NULL;
	st.out_tail = &st.out;
	st.init = true;
}

void flock_free_locked(struct mds *m)
{
	struct flk_waiter *w, *n;
	struct flk_out *o, *on;

	(void)m;
	if (!st.init)
		return;
	cds_list_for_each_entry_safe(w, n, &st.parked, item)
		waiter_free(w);
	for (o = st.out; o; o = on) {
		on = o->next;
		conn_put(o->conn);
		free(o);
	}
	st.out = NULL;
	st.out_tail = &st.out;
	flock_reconnect_over_locked(m);
	/* sessions were freed first (session_free_all): nothing holds a lock */
	xa_destroy(&st.inodes);
	xa_destroy(&st.reassert);
	st.init = false;
	perf_unregister_group("mds_locks");
}

static uint64_t g_held(void *arg)
{
	(void)arg;
	return __atomic_load_n(&st.nlocks, __ATOMIC_RELAXED);
}

static uint64_t g_waiting(void *arg)
{
	(void)arg;
	return __atomic_load_n(&st.nwaiters, __ATOMIC_RELAXED);
}

static uint64_t g_files(void *arg)
{
	(void)arg;
	return __atomic_load_n(&st.ninodes, __ATOMIC_RELAXED);
}

void flock_register_perf(struct mds *m)
{
	(void)m;
	perf_register_fn("mds_locks", "held", g_held, NULL);
	perf_register_fn("mds_locks", "waiting", g_waiting, NULL);
	perf_register_fn("mds_locks", "files", g_files, NULL);
	perf_register_counter("mds_locks", "grants", &pc_grants);
	perf_register_counter("mds_locks", "denied", &pc_denied);
	perf_register_counter("mds_locks", "waits", &pc_waits);
	perf_register_counter("mds_locks", "wakeups", &pc_wakeups);
	perf_register_counter("mds_locks", "cancels", &pc_cancels);
	perf_register_counter("mds_locks", "deadlocks", &pc_deadlocks);
	perf_register_counter("mds_locks", "enolck", &pc_enolck);
	perf_register_counter("mds_locks", "reasserted", &pc_reasserted);
	perf_register_counter("mds_locks", "reassert_refused", &pc_refused);
	perf_register_counter("mds_locks", "released_by_session_end", &pc_released_sessions);
	perf_register_hist("mds_locks", "wait_lat", &h_wait);
}

static struct json_object *lock_json(const struct rlock *l)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "type", json_object_new_string(rlock_type_name(l->type)));
	json_object_object_add(o, "start", json_object_new_uint64(l->start));
	json_object_object_add(o, "end", l->end == RLOCK_EOF ? json_object_new_string("eof")
							      : json_object_new_uint64(l->end));
	json_object_object_add(o, "session", json_object_new_uint64(l->owner.sid));
	json_object_object_add(o, "owner", json_object_new_uint64(l->owner.id));
	json_object_object_add(o, "owner_ns", json_object_new_string(l->owner.ns == MDSP_LOCK_NS_NFS ? "nfs" : "fuse"));
	json_object_object_add(o, "pid", json_object_new_int64(l->pid));
	return o;
}

static struct json_object *waiter_json(const struct flk_waiter *w, uint64_t now)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "ino", json_object_new_uint64(w->ino));
	json_object_object_add(o, "session", json_object_new_uint64(w->owner.sid));
	json_object_object_add(o, "tid", json_object_new_uint64(w->tid));
	json_object_object_add(o, "kind", json_object_new_string(w->req.op == MDSP_OP_GETLK ? "getlk" :
								 (w->req.lock.flags & MDSP_LOCK_FLOCK) ? "flock" : "fcntl"));
	json_object_object_add(o, "type", json_object_new_string(rlock_type_name(w->type)));
	json_object_object_add(o, "start", json_object_new_uint64(w->start));
	json_object_object_add(o, "end", w->end == RLOCK_EOF ? json_object_new_string("eof")
							      : json_object_new_uint64(w->end));
	json_object_object_add(o, "owner", json_object_new_uint64(w->owner.id));
	json_object_object_add(o, "pid", json_object_new_int64(w->req.lock.pid));
	json_object_object_add(o, "waiting_s", json_object_new_double((double)mono_since(now, w->since_ns) / 1e9));
	json_object_object_add(o, "for", json_object_new_string(w->parked ? "reconnect phase" : "lock"));
	return o;
}

static struct json_object *fi_json(const struct flk_inode *fi, uint64_t now)
{
	struct json_object *o = json_object_new_object(), *a;
	const struct flk_waiter *w;
	const struct rlock *l;

	json_object_object_add(o, "ino", json_object_new_uint64(fi->ino));
	a = json_object_new_array();
	for (l = fi->posix.head; l; l = l->next)
		json_object_array_add(a, lock_json(l));
	json_object_object_add(o, "fcntl", a);
	a = json_object_new_array();
	for (l = fi->flock.head; l; l = l->next)
		json_object_array_add(a, lock_json(l));
	json_object_object_add(o, "flock", a);
	a = json_object_new_array();
	cds_list_for_each_entry(w, &fi->waiters, item)
		json_object_array_add(a, waiter_json(w, now));
	json_object_object_add(o, "waiters", a);
	return o;
}

struct json_object *flock_dump_json(struct mds *m)
{
	struct json_object *o = json_object_new_object(), *a = json_object_new_array(), *p = json_object_new_array();
	uint64_t idx = 0, now = now_mono_ns();
	const struct flk_waiter *w;
	struct flk_inode *fi;

	pthread_mutex_lock(&m->lock);
	rcu_read_lock();
	xa_for_each(&st.inodes, idx, fi)
		json_object_array_add(a, fi_json(fi, now));
	rcu_read_unlock();
	cds_list_for_each_entry(w, &st.parked, item)
		json_object_array_add(p, waiter_json(w, now));
	json_object_object_add(o, "held", json_object_new_uint64(st.nlocks));
	json_object_object_add(o, "waiting", json_object_new_uint64(st.nwaiters));
	json_object_object_add(o, "reconnect_phase", json_object_new_boolean(m->reconnecting));
	pthread_mutex_unlock(&m->lock);
	json_object_object_add(o, "files", a);
	json_object_object_add(o, "held_back", p);
	return o;
}

void flock_inode_json_locked(uint64_t ino, struct json_object *o)
{
	struct flk_inode *fi = fi_find(ino);

	if (fi)
		json_object_object_add(o, "file_locks", fi_json(fi, now_mono_ns()));
}

void flock_session_json_locked(const struct session *s, struct json_object *o)
{
	json_object_object_add(o, "file_locks", json_object_new_uint64(s->flk ? s->flk->nlocks : 0));
	json_object_object_add(o, "lock_waits", json_object_new_uint64(s->flk ? s->flk->nwaiters : 0));
}
