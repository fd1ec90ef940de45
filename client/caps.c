/*
 * caps.c - the client's half of the capabilities the MDS issues
 * (DESIGN.md section 7; mds/locker.c is the other half and has the rules).
 *
 * What the client may do with what it holds:
 *   As|Ls|Fs    every attribute is cached: getattr answers from memory and
 *               FUSE gets long attribute timeouts (client_caps_timeout);
 *               without one of them attributes come from the MDS each time
 *               and FUSE gets 0.  As alone lets the client check search
 *               permission on a directory from the cached mode.
 *   Fs (dir)    names known not to exist and the listing may be cached.
 *   lease       a name may be cached (dentry.c): long FUSE entry timeouts.
 *   Fc          file data may be cached (readahead, the kernel page cache).
 *   Fb          writes may be buffered; without it they go to the objects
 *               at once and an extended size reaches the MDS before the
 *               write returns (Ceph's synchronous I/O in the mix state).
 *   Fw          size and mtime may be changed by writing; they reach the MDS
 *               in CAPS FLUSH messages (not SETATTR): asynchronously, paired
 *               with FLUSH_ACK by flush_tid once journaled (fsync waits),
 *               sent again after a reconnect until acked.
 *
 * A revoke is queued to the flusher thread, because writing buffered data
 * back takes store I/O that the session reader thread (which delivers the
 * revoke) must not wait for.  The revoke is executed against what the MDS
 * says to keep, not against a difference with what we think we hold: a
 * reply carrying the reduced set may have been applied before the revoke,
 * and buffered data must be flushed all the same.  Then the kernel's caches
 * are invalidated through lc_callbacks (FUSE: fuse_lowlevel_notify_inval_*;
 * the NFS gateway shares this client's caches) and the revoke is acked with
 * the flushed size/mtime in it.  The work never sends an MDS request, so a
 * request waiting at the MDS for our ack cannot wait on us in turn.
 *
 * Before all that, the frontends' revoke hooks take back what they promised
 * on the strength of the caps (NFS delegations).  One that must wait for its
 * own clients defers the revoke (LC_REVOKE_DEFERRED, struct lc_revoke): the
 * flusher goes on with other work, and lc_revoke_complete() queues the
 * revoke's second half (finish_revoke) back to it.  A deferred revoke is on
 * c->deferred and in->rv_deferred until then; later revokes of that inode
 * wait on it (rv->waiting); client_revoke_defer_max, a lost session and an
 * unmount complete it without its hooks.
 *
 * Ordering: replies, grants and revokes carry the cap's sequence number; a
 * state is applied only if it is not older than what the inode has seen.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/cache_int.h"
#include "client/intr.h"
#include "common/config.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "common/time.h"

#define FILE_OPEN_BITS (MDSP_CAP_FILE_RD | MDSP_CAP_FILE_CACHE | MDSP_CAP_FILE_WR | MDSP_CAP_FILE_BUFFER)

/* MDSP_CAP_* -> LC_CAP_* (client.h) */
static uint32_t lc_bits(uint32_t caps)
{
	return ((caps & MDSP_CAP_ATTR_SHARED) == MDSP_CAP_ATTR_SHARED ? LC_CAP_ATTRS : 0) |
	       (caps & MDSP_CAP_FILE_CACHE ? LC_CAP_CACHE : 0) | (caps & MDSP_CAP_FILE_BUFFER ? LC_CAP_BUFFER : 0);
}

uint32_t lc_caps_held(struct lc_inode *in)
{
	uint32_t caps;

	pthread_mutex_lock(&in->lock);
	caps = in->caps;
	pthread_mutex_unlock(&in->lock);
	return lc_bits(caps);
}

void lclient_add_revoke_hook(struct lclient *c, struct lc_revoke_hook *h)
{
	pthread_rwlock_wrlock(&c->hooks_lock);
	h->next = c->hooks;
	c->hooks = h;
	pthread_rwlock_unlock(&c->hooks_lock);
}

void lclient_del_revoke_hook(struct lclient *c, struct lc_revoke_hook *h)
{
	struct lc_revoke_hook **pp;

	/* waits for a running call (it holds the lock shared) */
	pthread_rwlock_wrlock(&c->hooks_lock);
	for (pp = &c->hooks; *pp; pp = &(*pp)->next)
		if (*pp == h) {
			*pp = h->next;
			break;
		}
	pthread_rwlock_unlock(&c->hooks_lock);
}

/*
 * The hooks for @in going from @had to @keep (MDSP_CAP_*), if that loses an
 * LC_CAP_* bit.  @rv (NULL: none may defer) counts the hooks that deferred:
 * each gets a pending count and a reference before it is called, since it
 * may complete from another thread before it returns.
 */
static void run_hooks(struct lclient *c, struct lc_inode *in, uint32_t had, uint32_t keep, bool lost,
		      struct lc_revoke *rv)
{
	uint32_t h = lc_bits(had), k = lc_bits(keep);
	struct lc_revoke_hook *hk;

	if (!(h & ~k))
		return;
	pthread_rwlock_rdlock(&c->hooks_lock);
	for (hk = c->hooks; hk; hk = hk->next) {
		if (rv) {
			pthread_mutex_lock(&c->work_lock);
			rv->pending++;
			rv->refs++;
			pthread_mutex_unlock(&c->work_lock);
		}
		if (hk->revoke(hk->arg, in, h, k, lost, rv) == LC_REVOKE_DEFERRED && rv)
			continue;
		if (rv) {
			/* not deferred: take back what it was given (the
			 * runner's own pending count keeps the tail from running) */
			pthread_mutex_lock(&c->work_lock);
			rv->pending--;
			rv->refs--;
			pthread_mutex_unlock(&c->work_lock);
		}
	}
	pthread_rwlock_unlock(&c->hooks_lock);
}

bool lc_attrs_cached_locked(const struct lc_inode *in)
{
	return (in->caps & MDSP_CAP_ATTR_SHARED) == MDSP_CAP_ATTR_SHARED && !(in->attr_until & LC_ATTRS_STALE);
}

/* in->lock held: caps no longer cover the attributes; stale stays stale
 * (lc_attrs_forget_locked: caps do not make it the MDS's) */
static void attrs_uncached_locked(struct lc_inode *in)
{
	if (!(in->attr_until & LC_ATTRS_STALE))
		in->attr_until = 0;
}

void lc_caps_set_locked(struct lc_inode *in, uint32_t caps)
{
	static _Atomic uint64_t dc_epochs;

	if (S_ISDIR(in->mi.mode) && (caps & MDSP_CAP_DIR_CREATE) && !(in->caps & MDSP_CAP_DIR_CREATE)) {
		/* no memory for dstate: no epoch (0), nothing made here qualifies */
		struct lc_dstate *ds = lc_dstate_locked(in);
		if (ds)
			ds->dc_epoch = atomic_fetch_add(&dc_epochs, 1) + 1;
	}
	in->caps = caps;
}

void lc_caps_apply_locked(struct lc_inode *in, uint32_t caps, uint64_t seq)
{
	if (!caps && !seq)
		return;
	if (seq < in->cap_seq)
		return; /* older than a grant/revoke we already applied */
	/* the same grant again (a request's safe reply after its unsafe one,
	 * both carrying the seq the MDS gave it): what we gave up since on
	 * our own (a close's Fr/Fw/Fb, lc_caps_update) stays given up.  The
	 * MDS took that drop (it had granted nothing newer), so bringing the
	 * bits back would have us cache under caps it has given to others,
	 * and our next ack would claim them (test_async_unlink_open_elsewhere:
	 * Fw claimed back, the orphan never purged) */
	if (seq && seq == in->cap_seq)
		caps &= in->caps;
	/* a grant (nothing taken away) is taken in at once; fewer caps than we
	 * hold is a revoke in flight, acked by its own processing (send_ack) */
	if (seq > in->acked_seq && !(in->caps & ~caps))
		in->acked_seq = seq;
	lc_caps_set_locked(in, caps);
	if (seq != in->cap_seq)
		lc_caps_moved_locked(in);       /* after any request sent before now (lc_caps_seen) */
	in->cap_seq = seq;
	if (lc_attrs_cached_locked(in)) {
		uint64_t until = now_mono_ns() + lc_secs_ns(CFG_client_caps_timeout);
		if (until > in->attr_until)
			in->attr_until = until;
	} else {
		attrs_uncached_locked(in);
	}
}

uint32_t lc_caps_wanted_locked(const struct lc_inode *in)
{
	uint32_t w = 0;

	if (in->nopen > 0)
		w |= MDSP_CAP_FILE_RD | MDSP_CAP_FILE_CACHE;
	/* buffered data not yet in the store keeps Fw/Fb after the last close
	 * (its writeback runs after the close returned, lc_wb_start): another
	 * client's open revokes them, and the revoke writes it back first */
	if (in->nwriters > 0 || lc_data_pending_locked(in))
		w |= MDSP_CAP_FILE_WR | MDSP_CAP_FILE_BUFFER;
	return w;
}

/* in->lock held: the caps message @op with our dirty size/mtime, which move
 * to flushing_meta (sent, not acked) under a new flush tid; and what the
 * data objects hold since the last acked flush, built in @send (blocks.c;
 * flush_sent_locked takes it, or the caller frees it). */
static void fill_flush_locked(struct lclient *c, struct lc_inode *in, struct mdsp_caps *m,
			      struct mdsp_extset send[2])
{
	lockdep_assert_held(&in->lock);
	m->dirty = in->dirty_meta | in->flushing_meta;
	memset(send, 0, 2 * sizeof(*send));
	if (!m->dirty)
		return;
	m->flush_tid = atomic_fetch_add(&c->flush_tid, 1) + 1;
	m->attr.ino = in->ino;
	m->attr.size = in->wsize;
	m->attr.mtime = in->wmtime;
	lc_blocks_fill_locked(in, m, send);
}

/* in->lock held: the message fill_flush_locked built was sent: what it carries is in flight */
static void flush_sent_locked(struct lc_inode *in, const struct mdsp_caps *m, struct mdsp_extset send[2])
{
	lockdep_assert_held(&in->lock);
	if (!m->flush_tid)
		return;
	in->flushing_meta |= in->dirty_meta;
	in->dirty_meta = 0;
	in->flush_tid = m->flush_tid;
	in->flushing_size = m->attr.size;
	in->flushing_mtime = m->attr.mtime;
	lc_blocks_sent_locked(in, send);
}

int lc_cap_flush(struct lclient *c, struct lc_inode *in, uint64_t *tid)
{
	struct mdsp_caps m = { .op = MDSP_CAPS_FLUSH, .ino = in->ino };
	struct mdsp_extset send[2];
	int r = 0;

	if (tid)
		*tid = 0;
	if (!c->mdsc)
		return 0;
	pthread_mutex_lock(&in->lock);
	if (!in->dirty_meta) {
		/* nothing new: wait for what is in flight, if anything */
		if (tid && in->flushing_meta)
			*tid = in->flush_tid;
		pthread_mutex_unlock(&in->lock);
		return 0;
	}
	fill_flush_locked(c, in, &m, send);
	m.caps = in->caps;
	m.wanted = lc_caps_wanted_locked(in);
	m.seq = in->acked_seq;
	/* sent under the inode lock: flushes of one inode leave in tid order,
	 * and no UPDATE computed later can overtake this one */
	r = mdsc_send_caps(c->mdsc, &m);
	if (r == 0) {
		flush_sent_locked(in, &m, send);
		in->wanted_sent = m.wanted;
		perf_inc(&c->perf.cap_flushes, 1);
		if (tid)
			*tid = m.flush_tid;
	}
	lc_blocks_send_free(send);
	pthread_mutex_unlock(&in->lock);
	if (r < 0)
		dout(CLIENT, 5, "flush of inode %" PRIx64 " waits for the session: %s", in->ino, strerror(-r));
	return r;
}

/*
 * The interrupt of the calling frontend call (lc_intr), armed once a wait
 * lasts past LC_INTR_ARM_NS, so that a ^C ends an fsync or a write whose
 * size waits for an MDS that is down, as wait_state() does for requests.
 * What was dirty stays dirty: the flusher sends it once the session is back.
 */
struct flush_intr {
	struct lc_intr *it;
	uint64_t arm_ns;
	bool watching;
};

static void flush_intr_init(struct flush_intr *fi)
{
	fi->it = lc_intr_current();
	fi->arm_ns = fi->it ? now_mono_ns() + LC_INTR_ARM_NS : 0;
	fi->watching = false;
}

/* in->lock held, before a timed wait on in->cond: -EINTR when fired. */
static int flush_intr_check_locked(struct flush_intr *fi, struct lc_inode *in)
{
	lockdep_assert_held(&in->lock);
	if (lc_intr_fired(fi->it))
		return -EINTR;
	if (fi->it && !fi->watching && now_mono_ns() >= fi->arm_ns) {
		pthread_mutex_unlock(&in->lock);
		lc_intr_watch(fi->it, &in->lock, &in->cond);
		fi->watching = true;
		pthread_mutex_lock(&in->lock);
		if (lc_intr_fired(fi->it))
			return -EINTR;
	}
	return 0;
}

static void flush_intr_done(struct flush_intr *fi)
{
	if (fi->watching)
		lc_intr_unwatch(fi->it);
}

/* @end, or the unmount's bound if that is sooner (lclient_shutdown_begin) */
static uint64_t unmount_clamp(struct lclient *c, uint64_t end)
{
	uint64_t by = atomic_load(&c->unmount_by);

	return by && by < end ? by : end;
}

/*
 * A flush is sent again after a reconnect (lc_session_event); after the
 * loss of the session it is dirty again and is sent anew under a newer tid
 * (here, or by the flusher), whose ack also ends this wait.  Until that
 * send gets through (no session yet) we keep waiting: only an ack ends the
 * wait with 0.  An evicted client's flush is never acked: -EIO, as the
 * writeback reports for its data (wb_transient).
 */
static int flush_wait(struct lclient *c, struct lc_inode *in, uint64_t tid, struct flush_intr *fi, uint64_t end)
{
	int r = 0;

	if (!tid || !c->mdsc)
		return 0;
	/* the flush may sit in the cork (lc_caps_update): we wait for it now */
	mdsc_uncork(c->mdsc);
	lc_op_wait_set(LC_WAIT_FLUSH_ACK, in->ino);
	pthread_mutex_lock(&in->lock);
	while (in->flush_acked < tid) {
		struct timespec dl = deadline_ms(fi->it && !fi->watching ? LC_INTR_ARM_NS / 1000000 : 100);

		if ((r = flush_intr_check_locked(fi, in)))
			break;
		if (now_mono_ns() >= unmount_clamp(c, end)) {
			/* as a request would (a read-only MDS answers the flush
			 * once its journal takes writes again); still dirty */
			r = -ETIMEDOUT;
			break;
		}
		if (lc_evicted(c, NULL, 0) || tid <= in->flush_dropped) {
			/* never acked: dropped with the evicted session */
			r = -EIO;
			break;
		}
		pthread_cond_timedwait(&in->cond, &in->lock, &dl);
		if (in->flush_acked < tid && in->dirty_meta && !in->flushing_meta) {
			/* dirty again (a lost session): send it now, do not wait
			 * for the flusher's next round */
			uint64_t again = 0;
			int sr;

			pthread_mutex_unlock(&in->lock);
			sr = lc_cap_flush(c, in, &again);
			pthread_mutex_lock(&in->lock);
			if (again)
				tid = again;    /* in flight: its ack covers ours */
			else if (sr == 0)
				break;          /* nothing dirty or in flight: acked meanwhile */
			/* not sent (no session yet): keep @tid, wait and try
			 * again on the next round, bounded as above */
		}
	}
	pthread_mutex_unlock(&in->lock);
	lc_op_wait_clear();
	return r;
}

int lc_cap_flush_wait(struct lclient *c, struct lc_inode *in, uint64_t tid)
{
	uint64_t tmo = lc_secs_ns(CFG_client_request_timeout), end = tmo ? now_mono_ns() + tmo : UINT64_MAX;
	struct flush_intr fi;
	int r;

	flush_intr_init(&fi);
	r = flush_wait(c, in, tid, &fi, end);
	flush_intr_done(&fi);
	return r;
}

int lc_cap_flush_sync(struct lclient *c, struct lc_inode *in)
{
	uint64_t tmo = lc_secs_ns(CFG_client_request_timeout), end = tmo ? now_mono_ns() + tmo : UINT64_MAX;
	struct flush_intr fi;
	uint64_t tid = 0;
	int r;

	flush_intr_init(&fi);
	/* like any request, it waits for the session to be back (a hard
	 * mount), bounded by client_request_timeout when that is set */
	while ((r = lc_cap_flush(c, in, &tid)) == -ENOTCONN) {
		struct timespec dl = deadline_ms(5);

		if (lc_evicted(c, NULL, 0)) {
			r = -EIO;       /* no session will take it (flush_wait) */
			goto out;
		}
		if (now_mono_ns() >= unmount_clamp(c, end)) {
			r = -ETIMEDOUT;
			goto out;
		}
		pthread_mutex_lock(&in->lock);
		r = flush_intr_check_locked(&fi, in);
		if (!r)
			pthread_cond_timedwait(&in->cond, &in->lock, &dl);
		pthread_mutex_unlock(&in->lock);
		if (r)
			goto out;
	}
	if (r == 0)
		r = flush_wait(c, in, tid, &fi, end);
out:
	flush_intr_done(&fi);
	return r;
}

void lc_caps_update(struct lclient *c, struct lc_inode *in)
{
	struct mdsp_caps m = { .op = MDSP_CAPS_UPDATE, .ino = in->ino };
	struct mdsp_extset send[2] = { { 0 }, { 0 } };
	uint32_t keep;

	if (!c->mdsc)
		return;
	pthread_mutex_lock(&in->lock);
	m.wanted = lc_caps_wanted_locked(in);
	keep = in->caps;
	if (!(m.wanted & MDSP_CAP_FILE_WR))
		keep &= ~(uint32_t)(MDSP_CAP_FILE_WR | MDSP_CAP_FILE_BUFFER);
	if (!m.wanted)
		keep &= ~(uint32_t)MDSP_CAP_FILE_RD;
	/* no size report over bytes the store does not have yet: it goes
	 * once they are there (run_wbq's update, the flusher's round) */
	bool meta = in->dirty_meta && !lc_data_pending_locked(in);

	if (keep == in->caps && m.wanted == in->wanted_sent && !meta) {
		pthread_mutex_unlock(&in->lock);
		return;
	}
	if (meta && (in->caps & MDSP_CAP_FILE_WR)) {
		m.op = MDSP_CAPS_FLUSH;
		fill_flush_locked(c, in, &m, send);
	}
	m.caps = keep;
	m.seq = in->acked_seq;
	/* nobody waits for this one (yet): it may share a send (flush_wait
	 * uncorks it for whoever comes to wait) */
	if (mdsc_send_caps_corked(c->mdsc, &m) == 0) {
		flush_sent_locked(in, &m, send);
		in->caps = keep;
		in->wanted_sent = m.wanted;
		if (m.op == MDSP_CAPS_FLUSH)
			perf_inc(&c->perf.cap_flushes, 1);
	}
	lc_blocks_send_free(send);
	pthread_mutex_unlock(&in->lock);
}

void lc_release_caps(struct lclient *c, struct lc_inode *in, uint32_t caps, uint64_t seq)
{
	struct mdsp_caps m = { .op = MDSP_CAPS_RELEASE, .ino = in->ino, .caps = 0, .seq = seq };

	if (!caps || !c->mdsc)
		return;
	perf_inc(&c->perf.caps_released, 1);
	mdsc_send_caps(c->mdsc, &m);
}

/* Ack a revoke of @in (NULL: not cached, nothing to give up).  Dirty size
 * and mtime ride in the ack. */
static void send_ack(struct lclient *c, struct lc_inode *in, const struct mdsp_caps *rv)
{
	struct mdsp_caps ack = { .op = MDSP_CAPS_ACK, .ino = rv->ino, .seq = rv->seq };
	struct mdsp_extset send[2];

	if (!c->mdsc)
		return;
	if (!in) {
		mdsc_send_caps(c->mdsc, &ack);
		return;
	}
	pthread_mutex_lock(&in->lock);
	if (rv->seq > in->acked_seq)
		in->acked_seq = rv->seq;
	ack.caps = in->caps;
	ack.wanted = lc_caps_wanted_locked(in);
	fill_flush_locked(c, in, &ack, send);
	if (mdsc_send_caps(c->mdsc, &ack) == 0) {
		flush_sent_locked(in, &ack, send);
		in->wanted_sent = ack.wanted;
		/* the MDS applies our flushes before the ack: from here on its
		 * size and mtime are the file's, and someone else may change them
		 * (another writer, a truncate), also while we keep Fw: what we
		 * flushed so far no longer counts over the MDS's answer, even
		 * once Fs comes back with a flush still unacked (our writes
		 * after this count again: lc_wb_note_write_locked) */
		if (!(in->caps & MDSP_CAP_FILE_SHARED))
			in->meta_given_up = true;
	}
	lc_blocks_send_free(send);
	pthread_mutex_unlock(&in->lock);
}

static void invalidate_kernel(struct lclient *c, uint64_t ino, off_t off)
{
	if (c->cb.inval_inode)
		c->cb.inval_inode(c->cb_arg, ino, off, 0);
}

/*
 * The frontend's invalidations have reached the kernel (bounded: see
 * client/fuse/inval.c), before the ack lets the other client go on.
 *
 * A file's attributes or data (a loss of As|Ls|Fs or of Fc): its inode's
 * invalidation, which FUSE delivers from a thread of its own, never behind
 * a name's; bounded by REVOKE_INODE_WAIT_MS only against a page lock held
 * by a FUSE request of ours that waits at the MDS for another client's
 * ack (the wait used to be 100 ms, and for attributes alone none: on a
 * loaded machine the other client's utimensat or O_TRUNC write returned
 * while this mount's kernel still showed the old state).
 *
 * A directory: only for a change of who may do what (As), names included,
 * within REVOKE_INVAL_WAIT_MS.  A name's or a listing's invalidation is
 * queued before the ack and delivered at once, but the kernel takes the
 * directory's lock for it, which a storm of lookups and listings of that
 * directory holds shared for long; waiting for it there made the other
 * client's create wait on this one's readers.
 */
#define REVOKE_INVAL_WAIT_MS 100
#define REVOKE_INODE_WAIT_MS 1000

static void wait_kernel(struct lclient *c, uint64_t ino, int timeout_ms, bool names)
{
	if (!c->cb.inval_wait)
		return;
	lc_op_wait_set(LC_WAIT_KERNEL, ino);
	c->cb.inval_wait(c->cb_arg, timeout_ms, names);
	lc_op_wait_clear();
}

/* ---- the cap workers ---------------------------------------------------------- */

static struct lc_capq *capq_of(struct lclient *c, uint64_t ino)
{
	return &c->capq[(ino * 0x9e3779b97f4a7c15ull >> 32) % LC_CAP_WORKERS];
}

static uint64_t work_ino(const struct cap_work *w)
{
	return w->rv ? w->rv->in->ino : w->caps.ino;
}

void lc_cap_work_queue_locked(struct lclient *c, struct cap_work *w)
{
	struct lc_capq *q = capq_of(c, work_ino(w));

	lockdep_assert_held(&c->work_lock);
	w->next = NULL;
	*q->tail = w;
	q->tail = &w->next;
	pthread_cond_signal(&q->cond);
}

static void run_list(struct lclient *c, struct cap_work *w)
{
	while (w) {
		struct cap_work *n = w->next;
		struct lc_op_slot *op = lc_op_begin(c, "client", w->rv ? "cap worker: deferred revoke" :
							      w->caps.op == MDSP_CAPS_REVOKE ? "cap worker: revoke" :
							      "cap worker: lease revoke", work_ino(w));

		lc_caps_process(c, w);
		lc_op_end(op);
		free(w);
		w = n;
	}
}

static void *capq_main(void *arg)
{
	struct lc_capq *q = arg;
	struct lclient *c = q->c;

	pthread_setname_np(pthread_self(), "lc-caps");
	pthread_mutex_lock(&c->work_lock);
	while (!c->capq_stop) {
		struct cap_work *w = q->head;

		if (!w) {
			pthread_cond_wait(&q->cond, &c->work_lock);
			continue;
		}
		q->head = NULL;
		q->tail = &q->head;
		pthread_mutex_unlock(&c->work_lock);
		run_list(c, w);
		pthread_mutex_lock(&c->work_lock);
	}
	pthread_mutex_unlock(&c->work_lock);
	return NULL;
}

int lc_cap_workers_start(struct lclient *c)
{
	int i, r = 0;

	c->capq_stop = false;
	for (i = 0; i < LC_CAP_WORKERS; i++) {
		r = pthread_create(&c->capq[i].thread, NULL, capq_main, &c->capq[i]);
		if (r)
			break;
	}
	if (r) {
		pthread_mutex_lock(&c->work_lock);
		c->capq_stop = true;
		for (int k = 0; k < i; k++)
			pthread_cond_signal(&c->capq[k].cond);
		pthread_mutex_unlock(&c->work_lock);
		while (i-- > 0)
			pthread_join(c->capq[i].thread, NULL);
		return -r;
	}
	c->capq_running = true;
	return 0;
}

void lc_cap_workers_stop(struct lclient *c)
{
	if (!c->capq_running)
		return;
	pthread_mutex_lock(&c->work_lock);
	c->capq_stop = true;
	for (int i = 0; i < LC_CAP_WORKERS; i++)
		pthread_cond_signal(&c->capq[i].cond);
	pthread_mutex_unlock(&c->work_lock);
	for (int i = 0; i < LC_CAP_WORKERS; i++)
		pthread_join(c->capq[i].thread, NULL);
	c->capq_running = false;
}

bool lc_cap_work_run_queued(struct lclient *c)
{
	bool any = false;

	for (int i = 0; i < LC_CAP_WORKERS; i++) {
		struct cap_work *w;

		pthread_mutex_lock(&c->work_lock);
		w = c->capq[i].head;
		c->capq[i].head = NULL;
		c->capq[i].tail = &c->capq[i].head;
		pthread_mutex_unlock(&c->work_lock);
		any |= w != NULL;
		run_list(c, w);
	}
	return any;
}

/* c->work_lock held: free @rv once its last reference is gone. */
static void revoke_put_locked(struct lclient *c, struct lc_revoke *rv)
{
	lockdep_assert_held(&c->work_lock);
	if (--rv->refs > 0)
		return;
	free(rv->tail);
	free(rv);
}

/* c->work_lock held: queue @rv's tail to the flusher (once). */
static void revoke_queue_tail_locked(struct lclient *c, struct lc_revoke *rv)
{
	struct cap_work *w = rv->tail;

	lockdep_assert_held(&c->work_lock);
	if (!w)
		return;                  /* queued already */
	rv->tail = NULL;
	lc_cap_work_queue_locked(c, w);
}

void lc_revoke_complete(struct lclient *c, struct lc_revoke *rv)
{
	pthread_mutex_lock(&c->work_lock);
	if (--rv->pending == 0)
		revoke_queue_tail_locked(c, rv);
	revoke_put_locked(c, rv);
	pthread_mutex_unlock(&c->work_lock);
}

/* The revoke's second half: what the frontends' clients wrote back is in
 * the objects, the kernel's caches are invalid, the MDS gets the ack. */
static void finish_revoke(struct lclient *c, struct lc_inode *in, const struct mdsp_caps *m)
{
	uint32_t keep = m->caps;
	bool dir, dirty;

	pthread_mutex_lock(&in->lock);
	dir = S_ISDIR(in->mi.mode);
	dirty = in->dirty || in->flushing;
	pthread_mutex_unlock(&in->lock);
	/* what we buffered must be in the objects before the ack */
	if (!(keep & MDSP_CAP_FILE_BUFFER) && dirty) {
		int r = c->cache_ops.flush_data(c, in);
		if (r < 0)
			derr(CLIENT, "writeback for the revoke on %" PRIx64 ": %s", m->ino, strerror(-r));
	}
	if (dir && !(keep & MDSP_CAP_AUTH_SHARED))
		/* mode/owner change: names cached below may not be searchable
		 * any more */
		lc_dcache_revoke_dir(c, in);
	if (dir && !(keep & MDSP_CAP_FILE_SHARED))
		lc_dcache_negatives_gone(c, in);
	bool inval = true;
	if (!(keep & (dir ? MDSP_CAP_FILE_SHARED : MDSP_CAP_FILE_CACHE))) {
		if (!dir)
			atomic_fetch_add(&in->data_gen, 1);   /* readahead buffers */
		invalidate_kernel(c, in->ino, 0);        /* pages (a directory's: its listing) and attributes */
	} else if ((keep & MDSP_CAP_ATTR_SHARED) != MDSP_CAP_ATTR_SHARED) {
		invalidate_kernel(c, in->ino, -1);       /* attributes only */
	} else {
		inval = false;
	}
	/*
	 * A file's invalidation is done before the ack.  A directory's only
	 * when its link count goes (Ls: it is being removed or renamed over,
	 * or a subdirectory comes or goes): the MDS changes it as soon as it
	 * has the ack, and a kernel still holding the old attributes answers
	 * from them (a directory open here and renamed over by another client
	 * kept st_nlink 2: test_fuse_semantics dir_renamed_over).  Not for
	 * Fs alone (its listing: every name another client makes in it),
	 * whose invalidation is queued and delivered at once: waiting there
	 * put every create of the other client behind this one's queue.
	 */
	if (dir && !(keep & MDSP_CAP_AUTH_SHARED))
		wait_kernel(c, in->ino, REVOKE_INVAL_WAIT_MS, true);
	else if (inval && (!dir || !(keep & MDSP_CAP_LINK_SHARED)))
		wait_kernel(c, in->ino, REVOKE_INODE_WAIT_MS, false);
	send_ack(c, in, m);
	/* what the revoke left us that we no longer want goes back too: a
	 * file closed while its Fb was being revoked kept the Fw the MDS let
	 * it keep, and with it every other client's attributes uncached, for
	 * good (test_caps chmod_chown_denies_at_once, 1 run in 7 under ASan) */
	if (!dir)
		lc_caps_update(c, in);
}

/* The flusher: a deferred revoke's hooks are done (or it was forced). */
static void process_deferred(struct lclient *c, struct lc_revoke *rv)
{
	struct lc_inode *in = rv->in;
	struct cap_work *waiting, *last;

	if (atomic_load(&c->sess_gen) == rv->sess_gen) {
		finish_revoke(c, in, &rv->m);
	} else {
		/* the session that sent it is gone, with every cap: nothing
		 * to ack; what the kernel cached went with it (lc_session_event) */
		dout(CLIENT, 5, "deferred revoke on %" PRIx64 ": the session was lost meanwhile, no ack", in->ino);
	}
	dout(CLIENT, 10, "deferred revoke on %" PRIx64 " acked after %" PRIu64 " ms", in->ino,
	     (now_mono_ns() - rv->since) / 1000000);
	pthread_mutex_lock(&c->work_lock);
	for (struct lc_revoke **pp = &c->deferred; *pp; pp = &(*pp)->next)
		if (*pp == rv) {
			*pp = rv->next;
			break;
		}
	if (in->rv_deferred == rv)
		in->rv_deferred = NULL;
	/* the inode's later revokes go next, before anything queued since */
	waiting = rv->waiting;
	rv->waiting = NULL;
	if (waiting) {
		struct lc_capq *q = capq_of(c, in->ino);

		for (last = waiting; last->next; last = last->next)
			;
		last->next = q->head;
		if (!q->head)
			q->tail = &last->next;
		q->head = waiting;
		pthread_cond_signal(&q->cond);
	}
	pthread_cond_broadcast(&c->deferred_cond);
	revoke_put_locked(c, rv);
	pthread_mutex_unlock(&c->work_lock);
	lc_put(c, in);
}

/* A new deferred-revoke record for @m on @in (NULL without memory: the hooks may not defer). */
static struct lc_revoke *revoke_new(struct lc_inode *in, const struct mdsp_caps *m)
{
	struct lc_revoke *rv = calloc(1, sizeof(*rv));

	if (!rv || !(rv->tail = calloc(1, sizeof(*rv->tail)))) {
		free(rv);
		return NULL;
	}
	rv->in = in;
	rv->m = *m;
	rv->m.dname = NULL;
	rv->tail->rv = rv;
	rv->pending = 1;                 /* the hooks are running */
	rv->refs = 1;
	return rv;
}

/* ---- revokes of inodes not cached ------------------------------------------ */

/*
 * The session reader hands a reply to the thread that sent the request,
 * which folds its trace into the caches later.  A revoke of one of its
 * inodes that a cap worker runs meanwhile finds nothing cached and acks
 * that, and the MDS drops our cap with the ack (mds/locker.c
 * cap_client_drops: nothing held, nothing wanted).  The reply's grant,
 * applied after, would be caps the MDS no longer counts and never revokes:
 * attributes and names another client changes would be trusted.  So such a
 * revoke is noted (c->rvt, the last LC_UNCACHED_REVOKES of them), and a
 * grant applied by a requester whose request went out before the note is
 * dropped if the revoke is as new as it (lc_caps_seen).  The MDS counts
 * nothing for us there, so nothing of the grant is kept (not what the
 * revoke left); a grant newer than the revoke was made after it and holds.
 *
 * Ordering: the revoke is noted, then the inode looked up once more; a
 * requester caches the inode, then reads the table: one of the two sees
 * the other (the fences below).
 */
static void uncached_revoke_note(struct lclient *c, uint64_t ino, uint64_t seq)
{
	pthread_mutex_lock(&c->rvt_lock);
	uint64_t g = atomic_load_explicit(&c->rvt_gen, memory_order_relaxed);

	c->rvt[g % LC_UNCACHED_REVOKES].ino = ino;
	c->rvt[g % LC_UNCACHED_REVOKES].seq = seq;
	atomic_store_explicit(&c->rvt_gen, g + 1, memory_order_release);
	pthread_mutex_unlock(&c->rvt_lock);
	atomic_thread_fence(memory_order_seq_cst);   /* before the lookup that follows */
}

struct lc_caps_since lc_caps_gen(struct lclient *c)
{
	return (struct lc_caps_since){
		.rv = atomic_load_explicit(&c->rvt_gen, memory_order_acquire),
		.ev = atomic_load_explicit(&c->evt_gen, memory_order_acquire),
		.t = now_mono_ns(),
	};
}

/*
 * An inode evicted from the cache has its caps released (inode.c try_evict,
 * lc_release_caps), and the MDS deletes our cap when the release's seq is
 * at least the cap's issue_seq (mds/locker.c).  A grant on that inode that
 * came before, in a reply not applied yet (its requester still on its way,
 * a READDIR batch asked for ahead, or the batch a directory keeps, applied
 * again when a listing resumes in it), would cache it again with caps the
 * MDS does not count: never revoked, attributes trusted until they time out.
 *
 * Every grant in a reply bumps the cap's seq and issue_seq at the MDS (as
 * Ceph's does), so a release whose seq is older than the grant is ignored
 * there and the grant holds on both sides.  The release is that old unless
 * the inode's caps moved here after the request went out (the grant itself
 * applied once already, or a newer message): the grant installs nothing if
 * the inode was evicted after its caps moved at or after the request's
 * send time, whatever its seq.  Evictions are many (75,000 in an `ls -l`
 * of 200,000 files, a trim round evicts thousands at once), so they are
 * kept by ino, in sets, with that time; a note pushed out of its set
 * leaves its time, and a request older than it gets no caps on any inode
 * of the set (the next request asks again).  The old inodes a trim round
 * evicts moved their caps long before the requests in flight, so they
 * cost nothing.
 */
static struct lc_evict_set *evict_set(struct lclient *c, uint64_t ino)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ull;

	return &c->evt[(h >> 32) % LC_EVICT_SETS];
}

void lc_caps_evict_note(struct lclient *c, uint64_t ino, uint64_t caps_at)
{
	struct lc_evict_set *set = evict_set(c, ino);
	int old = 0;

	pthread_mutex_lock(&c->evt_lock);
	for (int i = 0; i < LC_EVICT_WAYS; i++) {
		if (set->w[i].ino == ino) {
			old = i;
			break;
		}
		if (set->w[i].at < set->w[old].at)
			old = i;
	}
	if (set->w[old].ino != ino && set->w[old].at > set->lost_at)
		set->lost_at = set->w[old].at;
	if (set->w[old].ino != ino || caps_at > set->w[old].at)
		set->w[old].at = caps_at;
	set->w[old].ino = ino;
	atomic_store_explicit(&c->evt_gen, atomic_load_explicit(&c->evt_gen, memory_order_relaxed) + 1,
			      memory_order_release);
	pthread_mutex_unlock(&c->evt_lock);
	atomic_thread_fence(memory_order_seq_cst);   /* before the inode leaves the hash */
}

/* @ino was evicted after its caps moved at or after @since->t, or may have been */
static bool evicted_since(struct lclient *c, uint64_t ino, const struct lc_caps_since *since)
{
	struct lc_evict_set *set = evict_set(c, ino);
	bool ev;

	if (atomic_load_explicit(&c->evt_gen, memory_order_acquire) == since->ev)
		return false;
	pthread_mutex_lock(&c->evt_lock);
	ev = set->lost_at >= since->t;
	for (int i = 0; i < LC_EVICT_WAYS && !ev; i++)
		ev = set->w[i].ino == ino && set->w[i].at >= since->t;
	pthread_mutex_unlock(&c->evt_lock);
	return ev;
}

uint32_t lc_caps_seen(struct lclient *c, uint64_t ino, uint32_t caps, uint64_t *seq,
		      const struct lc_caps_since *since)
{
	bool drop = false;
	uint64_t now;

	atomic_thread_fence(memory_order_seq_cst);   /* after the inode was cached */
	if (!caps)
		return caps;
	if (evicted_since(c, ino, since)) {
		dout(CLIENT, 10, "inode %" PRIx64 ": grant seq %" PRIu64 " not installed: evicted (caps released) "
		     "while its reply was out", ino, *seq);
		perf_inc(&c->perf.caps_grant_dropped, 1);
		*seq = 0;
		return 0;
	}
	if (atomic_load_explicit(&c->rvt_gen, memory_order_acquire) == since->rv)
		return caps;
	pthread_mutex_lock(&c->rvt_lock);
	now = atomic_load_explicit(&c->rvt_gen, memory_order_relaxed);
	if (now - since->rv > LC_UNCACHED_REVOKES) {
		drop = true;             /* notes lost: safe is none (the client asks again) */
	} else {
		for (uint64_t g = since->rv; g != now && !drop; g++)
			drop = c->rvt[g % LC_UNCACHED_REVOKES].ino == ino &&
			       c->rvt[g % LC_UNCACHED_REVOKES].seq >= *seq;
	}
	pthread_mutex_unlock(&c->rvt_lock);
	if (!drop)
		return caps;
	dout(CLIENT, 10, "inode %" PRIx64 ": grant seq %" PRIu64 " not installed: revoked while its reply waited (%s)",
	     ino, *seq, now - since->rv > LC_UNCACHED_REVOKES ? "table overflowed" : "acked as not cached");
	perf_inc(&c->perf.caps_grant_dropped, 1);
	*seq = 0;
	return 0;
}

/* test hook: a not-cached ack of c->debug_apply_wait_ino went out */
static void debug_note_uncached_ack(struct lclient *c, uint64_t ino)
{
	if (atomic_load(&c->debug_apply_wait_ino) != ino)
		return;
	pthread_mutex_lock(&c->rvt_lock);
	atomic_store(&c->debug_apply_wait_ino, 0);
	atomic_fetch_add(&c->debug_apply_waited, 1);
	pthread_cond_broadcast(&c->rvt_cond);
	pthread_mutex_unlock(&c->rvt_lock);
}

void lc_caps_debug_apply_wait(struct lclient *c, uint64_t ino)
{
	struct timespec dl;

	if (!ino || atomic_load(&c->debug_apply_wait_ino) != ino)
		return;
	dl = ns_to_timespec(now_mono_ns() + 10000000000ull);   /* bounded: a test that fails, not hangs */
	pthread_mutex_lock(&c->rvt_lock);
	atomic_fetch_add(&c->debug_apply_waiting, 1);
	while (atomic_load(&c->debug_apply_wait_ino) == ino)
		if (pthread_cond_timedwait(&c->rvt_cond, &c->rvt_lock, &dl) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&c->rvt_lock);
}

static void process_revoke(struct lclient *c, struct cap_work *w)
{
	const struct mdsp_caps *m = &w->caps;
	struct lc_inode *in = lc_ino_to_inode(c, m->ino);
	uint32_t keep = m->caps, had;
	struct lc_revoke *rv;
	bool dc_lost = false;
	char ks[24];

	if (!in) {
		/* noted before we look again: a requester caching it meanwhile
		 * either is found now or finds the note (lc_caps_seen) */
		uncached_revoke_note(c, m->ino, m->seq);
		in = lc_ino_to_inode(c, m->ino);
	}
	if (!in) {
		perf_inc(&c->perf.caps_revoke, 1);
		send_ack(c, NULL, m);
		debug_note_uncached_ack(c, m->ino);
		return;
	}
	pthread_mutex_lock(&c->work_lock);
	if (in->rv_deferred) {
		/* an earlier revoke of this inode is still with a hook: this
		 * one follows it (its ack would answer the earlier one too) */
		struct cap_work *cw = malloc(sizeof(*cw)), **pp;

		if (cw) {
			*cw = *w;
			cw->next = NULL;
			w->caps.dname = NULL;   /* moved */
			for (pp = &in->rv_deferred->waiting; *pp; pp = &(*pp)->next)
				;
			*pp = cw;
			pthread_mutex_unlock(&c->work_lock);
			lc_put(c, in);
			return;
		}
		/* no memory: handle it now, out of order (acks carry seqs) */
	}
	pthread_mutex_unlock(&c->work_lock);
	perf_inc(&c->perf.caps_revoke, 1);
	if (S_ISDIR(in->mi.mode))
		lc_ns_changed(c);   /* its names may be changing (rename, unlink) */
	/* an orphan now (mds locker_stray_notify): the attributes say nlink 0,
	 * and the inode goes as soon as nothing here uses it */
	if (m->attr.ino == m->ino && m->attr.nlink == 0)
		lc_inode_refresh(in, &m->attr);
	/* give up the bits first: from here on writes go through, reads and
	 * getattr go to the store and the MDS */
	pthread_mutex_lock(&in->lock);
	had = in->caps;
	in->caps &= keep;
	/* stale replies (seq below the revoke's) no longer change the caps;
	 * but our messages carry in->acked_seq, which moves to the revoke's
	 * only with its ack (send_ack): a cap update or flush sent meanwhile
	 * (the flusher's, for a file just closed) is not taken by the MDS as
	 * the ack, so the other client cannot go on before our kernel has
	 * dropped what it cached */
	if (m->seq > in->cap_seq) {
		in->cap_seq = m->seq;
		lc_caps_moved_locked(in);
	}
	if (!lc_attrs_cached_locked(in))
		attrs_uncached_locked(in);
	if (S_ISDIR(in->mi.mode) && (had & MDSP_CAP_DIR_CREATE) && !(keep & MDSP_CAP_DIR_CREATE)) {
		/* the creates we answered ourselves go out before the ack
		 * (asyncdir.c): those that saw Dc are being sent; wait for them */
		lc_async_submit_wait_locked(in);
		dc_lost = true;
	}
	if (S_ISDIR(in->mi.mode) && !(keep & (MDSP_CAP_DIR_CREATE | MDSP_CAP_FILE_SHARED)))
		in->dir_complete = false;
	if (!(keep & MDSP_CAP_FILE_SHARED))
		lc_dir_rd_drop_locked(in);
	pthread_mutex_unlock(&in->lock);
	dout(CLIENT, 10, "revoke on %" PRIx64 ": keep %s (had 0x%x) seq %" PRIu64, m->ino,
	     mdsp_caps_str(keep, ks, sizeof(ks)), had, m->seq);
	/* a frontend's own promises (NFS delegations) go back first: what its
	 * clients write back meanwhile goes through, and is flushed after;
	 * a hook that has to wait for its clients defers the rest */
	rv = c->capq_running ? revoke_new(in, m) : NULL;   /* none once the cap workers stopped */
	if (rv)
		rv->sess_gen = atomic_load(&c->sess_gen);
	run_hooks(c, in, had, had & keep, false, rv);
	if (dc_lost && !rv)
		c->cache_ops.async_unlink_wait(c, in, NULL);
	if (dc_lost && rv) {
		/* the unlinks we answered ourselves must have run at the MDS
		 * (they may park there, unlike creates): acked after their
		 * replies (asyncunlink.c) */
		pthread_mutex_lock(&c->work_lock);
		rv->pending++;
		rv->refs++;
		pthread_mutex_unlock(&c->work_lock);
		if (!c->cache_ops.async_unlink_defer(c, in, rv))
			lc_revoke_complete(c, rv);
	}
	if (rv) {
		pthread_mutex_lock(&c->work_lock);
		if (--rv->pending > 0) {
			rv->since = now_mono_ns();
			rv->deadline = rv->since + lc_secs_ns(CFG_client_revoke_defer_max);
			rv->next = c->deferred;
			c->deferred = rv;
			in->rv_deferred = rv;
			perf_inc(&c->perf.caps_revoke_deferred, 1);
			pthread_mutex_unlock(&c->work_lock);
			dout(CLIENT, 10, "revoke on %" PRIx64 " deferred by a hook", m->ino);
			return;                  /* the inode's reference goes with rv */
		}
		revoke_put_locked(c, rv);
		pthread_mutex_unlock(&c->work_lock);
	}
	finish_revoke(c, in, m);
	lc_put(c, in);
}

/* c->work_lock held: ack @rv without waiting for its hooks any longer. */
static void revoke_force_locked(struct lclient *c, struct lc_revoke *rv, const char *why)
{
	lockdep_assert_held(&c->work_lock);
	if (!rv->tail)
		return;                  /* queued already */
	dinfo(CLIENT, "revoke on %" PRIx64 " held by a hook for %" PRIu64 " ms: %s, acked now", rv->in->ino,
	      (now_mono_ns() - rv->since) / 1000000, why);
	revoke_queue_tail_locked(c, rv);
}

void lc_revoke_expire(struct lclient *c)
{
	uint64_t now = now_mono_ns();

	pthread_mutex_lock(&c->work_lock);
	for (struct lc_revoke *rv = c->deferred; rv; rv = rv->next)
		if (now >= rv->deadline)
			revoke_force_locked(c, rv, "past client_revoke_defer_max");
	pthread_mutex_unlock(&c->work_lock);
}

void lc_revoke_drain(struct lclient *c)
{
	pthread_mutex_lock(&c->work_lock);
	while (c->deferred && c->capq_running) {
		uint64_t now = now_mono_ns(), until = UINT64_MAX;
		struct timespec dl;

		for (struct lc_revoke *rv = c->deferred; rv; rv = rv->next) {
			if (now >= rv->deadline)
				revoke_force_locked(c, rv, "unmount");
			else if (rv->deadline < until)
				until = rv->deadline;
		}
		if (until == UINT64_MAX)
			until = now + 100000000ull;   /* all queued: wait for the cap workers */
		dl = ns_to_timespec(until);
		pthread_cond_timedwait(&c->deferred_cond, &c->work_lock, &dl);
	}
	/* no cap workers: lc_flusher_stop runs what is queued */
	for (struct lc_revoke *rv = c->deferred; rv; rv = rv->next)
		revoke_force_locked(c, rv, "unmount");
	pthread_mutex_unlock(&c->work_lock);
}

static void process_lease_revoke(struct lclient *c, const struct mdsp_caps *m)
{
	struct mdsp_caps ack = { .op = MDSP_CAPS_LEASE_ACK, .ino = m->ino, .seq = m->seq, .dname = m->dname };

	perf_inc(&c->perf.lease_revoke, 1);
	lc_ns_changed(c);       /* the name may be renamed or removed (before the ack goes) */
	if (m->dname)
		lc_dcache_revoke_lease(c, m->ino, m->dname);
	if (c->mdsc)
		mdsc_send_caps(c->mdsc, &ack);
}

void lc_caps_process(struct lclient *c, struct cap_work *w)
{
	if (w->rv) {
		process_deferred(c, w->rv);
		return;
	}
	switch (w->caps.op) {
	case MDSP_CAPS_REVOKE:
		process_revoke(c, w);
		break;
	case MDSP_CAPS_LEASE_REVOKE:
		process_lease_revoke(c, &w->caps);
		break;
	default:
		break;
	}
	free(w->caps.dname);
}

static void handle_grant(struct lclient *c, const struct mdsp_caps *m)
{
	struct lc_inode *in = lc_ino_to_inode(c, m->ino);

	perf_inc(&c->perf.caps_grant, 1);
	if (!in)
		return;
	/* the attributes as the MDS has them, then the caps over them */
	if (m->attr.ino == m->ino)
		lc_inode_refresh(in, &m->attr);
	pthread_mutex_lock(&in->lock);
	lc_caps_apply_locked(in, m->caps, m->seq);
	pthread_mutex_unlock(&in->lock);
	lc_put(c, in);
}

static void handle_flush_ack(struct lclient *c, const struct mdsp_caps *m)
{
	struct lc_inode *in = lc_ino_to_inode(c, m->ino);

	if (!in)
		return;
	/* the inode as the flush left it; a newer reply (a truncate sent after
	 * the flush, answered before this ack) wins by its change counter */
	if (m->attr.ino == m->ino)
		lc_inode_refresh(in, &m->attr);
	pthread_mutex_lock(&in->lock);
	if (m->flush_tid > in->flush_acked)
		in->flush_acked = m->flush_tid;
	if (in->flushing_meta && m->flush_tid >= in->flush_tid) {
		in->flushing_meta = 0;
		lc_blocks_acked_locked(in);
	}
	pthread_cond_broadcast(&in->cond);
	if (m->seq > in->cap_seq)
		lc_caps_apply_locked(in, m->caps, m->seq);
	pthread_mutex_unlock(&in->lock);
	lc_put(c, in);
}

/* on the session reader thread: never block here */
void lc_handle_caps(void *arg, const struct mdsp_caps *m)
{
	struct lclient *c = arg;

	switch (m->op) {
	case MDSP_CAPS_GRANT:
		handle_grant(c, m);
		break;
	case MDSP_CAPS_REVOKE:
	case MDSP_CAPS_LEASE_REVOKE:
		lc_queue_cap_work(c, m);
		break;
	case MDSP_CAPS_FLUSH_ACK:
		handle_flush_ack(c, m);
		break;
	default:
		dout(CLIENT, 5, "ignoring caps op %s for %" PRIx64, mdsp_caps_op_name(m->op), m->ino);
		break;
	}
}

/* After a resumed session: flushes the MDS may not have journaled go again. */
static void resend_flushes(struct lclient *c)
{
	struct cds_lfht_iter it;
	struct lc_inode *in;

	rcu_read_lock();
	LC_LFHT_FOR_EACH(c->inodes, &it, in, hnode) {
		struct mdsp_caps m = { .op = MDSP_CAPS_FLUSH, .ino = in->ino };

		pthread_mutex_lock(&in->lock);
		if (in->flushing_meta) {
			m.dirty = in->flushing_meta;
			m.flush_tid = in->flush_tid;
			m.attr.ino = in->ino;
			m.attr.size = in->flushing_size;
			m.attr.mtime = in->flushing_mtime;
			lc_blocks_resend_locked(in, &m);
			m.caps = in->caps;
			m.wanted = lc_caps_wanted_locked(in);
			m.seq = in->acked_seq;
			mdsc_send_caps(c->mdsc, &m);
		}
		pthread_mutex_unlock(&in->lock);
	}
	rcu_read_unlock();
}

/*
 * in->lock held: the session that held @in's Fw is gone for good (evicted,
 * or not resumable): the size and mtime we never got acked are not ours to
 * report any more.  The MDS may have given the caps to someone else since,
 * who set another size; a new session (client_reconnect_stale) that sent
 * ours would undo theirs.  As Ceph drops an evicted session's dirty caps:
 * dropped, and said once to each handle (fsync, close: EIO); a flush_wait
 * for them ends with EIO.  Return: 1 (counted), for the caller's sum.
 */
static unsigned int drop_meta_locked(struct lclient *c, struct lc_inode *in)
{
	lockdep_assert_held(&in->lock);
	in->dirty_meta &= ~(uint32_t)(MDSP_DIRTY_SIZE | MDSP_DIRTY_MTIME);
	in->flush_dropped = atomic_load(&c->flush_tid);
	in->meta_given_up = false;
	lc_err_record_locked(in, -EIO);
	pthread_cond_broadcast(&in->cond);
	return 1;
}

/* session went stale or was lost: every cap is gone */
void lc_session_event(void *arg, uint32_t op)
{
	struct lclient *c = arg;
	struct cds_lfht_iter it;
	struct lc_inode *in;
	unsigned int dropped = 0, dfiles = 0;
	uint64_t dbytes = 0;

	/* the MDS may have lost the grant of what it delegated (asyncdir.c) */
	if (op == MDSP_SESSION_RECONNECT || op == MDSP_SESSION_EVICTED || op == MDSP_SESSION_OPEN ||
	    op == MDSP_SESSION_CLOSE)
		lc_deleg_reset(c);
	if (op == MDSP_SESSION_RECONNECT) {
		if (c->mdsc)
			resend_flushes(c);
		return;
	}
	if (op != MDSP_SESSION_STALE && op != MDSP_SESSION_EVICTED && op != MDSP_SESSION_CLOSE &&
	    op != MDSP_SESSION_OPEN)
		return;
	if (op != MDSP_SESSION_STALE) {
		/* revokes the hooks deferred were the lost session's: no ack,
		 * and the hooks (called with lost below) let go at once */
		atomic_fetch_add(&c->sess_gen, 1);
		pthread_mutex_lock(&c->work_lock);
		for (struct lc_revoke *rv = c->deferred; rv; rv = rv->next)
			revoke_force_locked(c, rv, "the session was lost");
		pthread_mutex_unlock(&c->work_lock);
	}
	dinfo(CLIENT, "session %s: dropping %s", mdsp_session_op_name(op),
	      op == MDSP_SESSION_STALE ? "cached names, attributes and data (the caps stay until the MDS says)"
				       : "caps, leases and cached attributes");
	rcu_read_lock();
	LC_LFHT_FOR_EACH(c->inodes, &it, in, hnode) {
		uint32_t had = 0;

		pthread_mutex_lock(&in->lock);
		in->attr_until = 0;
		if (in->rare)
			in->rare->fcaps_none = false;   /* a new session's sequences start again */
		if (op != MDSP_SESSION_STALE) {
			had = in->caps;
			in->caps = 0;
			/* a new session: the MDS knows nothing of ours */
			in->cap_seq = 0;
			in->acked_seq = 0;
			in->wanted_sent = 0;
			if (in->flushing_meta) {
				in->dirty_meta |= in->flushing_meta;
				in->flushing_meta = 0;
				lc_blocks_lost_locked(in);
				pthread_cond_broadcast(&in->cond);
			}
			if (op == MDSP_SESSION_EVICTED && (in->dirty_meta & (MDSP_DIRTY_SIZE | MDSP_DIRTY_MTIME)))
				dropped += drop_meta_locked(c, in);
		}
		lc_dir_rd_drop_locked(in);
		pthread_mutex_unlock(&in->lock);
		/* and the data it buffered under those caps (writeback.c):
		 * written by a new session, or through no fence, it would go
		 * over what the file's next holder wrote */
		if (op == MDSP_SESSION_EVICTED) {
			uint64_t b = c->cache_ops.drop_data(c, in);

			if (b) {
				dbytes += b;
				dfiles++;
			}
		}
		run_hooks(c, in, had, 0, true, NULL);
		atomic_fetch_add(&in->dgen, 1);
		atomic_fetch_add(&in->ngen, 1);
		atomic_fetch_add(&in->data_gen, 1);
		/* what the kernel caches on the strength of our caps goes too
		 * (the callbacks only queue) */
		if (c->cb.inval_inode)
			c->cb.inval_inode(c->cb_arg, in->ino, 0, 0);
	}
	rcu_read_unlock();
	lc_dcache_drop_all(c);
	if (dropped) {
		perf_inc(&c->perf.meta_dropped, dropped);
		derr(CLIENT, "session lost (evicted): dropped the size/mtime of %u file(s) the mds never acknowledged; "
		     "their next fsync or close reports EIO", dropped);
	}
	if (dfiles) {
		perf_inc(&c->perf.data_dropped, dbytes);
		perf_inc(&c->perf.data_dropped_files, dfiles);
		derr(CLIENT, "session lost (evicted): dropped %" PRIu64 " buffered bytes of %u file(s) not written "
		     "back yet (the files may have other writers now); their next fsync or close reports EIO",
		     dbytes, dfiles);
	}
}

/* session thread, after a lost connection: the caps and leases we hold, for RECONNECT */
int lc_reconnect_caps(void *arg, struct mdsp_cap_reconnect **out, uint32_t *nout)
{
	struct lclient *c = arg;
	struct cds_lfht_iter it;
	struct lc_inode *in;
	size_t n = 0, cap = 64;
	struct mdsp_cap_reconnect *v = malloc(cap * sizeof(*v));

	*out = NULL;
	*nout = 0;
	if (!v)
		return -ENOMEM;
	rcu_read_lock();
	LC_LFHT_FOR_EACH(c->inodes, &it, in, hnode) {
		if (atomic_load(&in->unhashed))
			continue;
		pthread_mutex_lock(&in->lock);
		uint32_t caps = in->caps, wanted = lc_caps_wanted_locked(in);
		pthread_mutex_unlock(&in->lock);
		if (!caps && !wanted)
			continue;
		if (n == cap) {
			struct mdsp_cap_reconnect *nv = realloc(v, cap * 2 * sizeof(*v));
			if (!nv)
				break;
			v = nv;
			cap *= 2;
		}
		memset(&v[n], 0, sizeof(v[n]));
		v[n].ino = in->ino;
		v[n].caps = caps;
		v[n].wanted = wanted;
		v[n].seq = in->cap_seq;
		n++;
	}
	rcu_read_unlock();
	*out = v;
	*nout = (uint32_t)n;
	/* best effort: a lease we cannot report is one the MDS will not revoke
	 * from us, and the name's kernel timeout bounds how long that lasts */
	lc_dcache_reconnect_leases(c, out, nout, cap);
	return 0;
}

void lc_queue_cap_work(struct lclient *c, const struct mdsp_caps *caps)
{
	struct cap_work *w = calloc(1, sizeof(*w));

	if (!w) {
		derr(CLIENT, "no memory for a cap message of inode %" PRIx64, caps->ino);
		return;
	}
	w->caps = *caps;
	w->caps.dname = NULL;
	if (caps->dname && !(w->caps.dname = strdup(caps->dname))) {
		free(w);
		derr(CLIENT, "no memory for a lease revoke in %" PRIx64, caps->ino);
		return;
	}
	pthread_mutex_lock(&c->work_lock);
	lc_cap_work_queue_locked(c, w);
	pthread_mutex_unlock(&c->work_lock);
}
