/*
 * caps.c - capabilities the MDS grants on inodes (DESIGN.md section 7).
 *
 * Replies carry the caps granted on their target (mdsp_reply.caps with a
 * per-inode sequence); CAPS messages grant more or revoke.  What the client
 * does with them:
 *   SHARED     cached attributes and dentries stay valid for
 *              client_caps_timeout instead of client_attr/entry_timeout,
 *              and FUSE is told the longer timeouts;
 *   WR|BUFFER  writes may be buffered (they are anyway, bounded; a revoke
 *              of these forces writeback and a size/mtime report first).
 * A revoke is queued to the flusher thread, because writing data back and
 * reporting sizes takes store I/O and MDS round trips that the session
 * reader thread (which delivers the revoke) must not wait for.  Once done,
 * the kernel's caches are invalidated through lc_callbacks and the revoke is
 * acknowledged.
 *
 * Ordering: a reply's caps are applied only if its cap_seq is not older
 * than what the inode has seen, so a revoke that overtook a slow reply is
 * not undone by it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"

void lc_caps_apply_locked(struct lc_inode *in, uint32_t caps, uint64_t seq)
{
	if (!caps && !seq)
		return;
	if (seq && seq < in->cap_seq)
		return; /* older than a grant/revoke we already applied */
	in->caps |= caps;
	if (seq > in->cap_seq)
		in->cap_seq = seq;
	if (in->caps & MDSP_CAP_SHARED) {
		uint64_t until = now_mono_ns() + lc_secs_ns(CFG_client_caps_timeout);
		if (until > in->attr_until)
			in->attr_until = until;
	}
}

static void send_ack(struct lclient *c, struct lc_inode *in, const struct mdsp_caps *m)
{
	struct mdsp_caps ack = {
		.op = MDSP_CAPS_ACK,
		.ino = m->ino,
		.caps = m->caps,
		.wanted = 0,
		.seq = m->seq,
	};
	if (in) {
		pthread_mutex_lock(&in->lock);
		ack.caps = in->caps;
		ack.attr = in->mi;
		pthread_mutex_unlock(&in->lock);
	}
	if (c->mdsc)
		mdsc_send_caps(c->mdsc, &ack);
}

static void invalidate_kernel(struct lclient *c, struct lc_inode *in)
{
	if (c->cb.inval_inode)
		c->cb.inval_inode(c->cb_arg, in->ino, 0, 0);
}

void lc_caps_process(struct lclient *c, struct cap_work *w)
{
	const struct mdsp_caps *m = &w->caps;
	struct lc_inode *in = lc_ino_to_inode(c, m->ino);

	if (m->op != MDSP_CAPS_REVOKE) {
		lc_put(c, in);
		return;
	}
	perf_inc(&c->perf.caps_revoke, 1);
	if (!in) {
		send_ack(c, NULL, m);
		return;
	}
	pthread_mutex_lock(&in->lock);
	uint32_t revoked = in->caps & ~m->caps;
	in->caps &= m->caps;
	if (m->seq > in->cap_seq)
		in->cap_seq = m->seq;
	bool dir = S_ISDIR(in->mi.mode);
	pthread_mutex_unlock(&in->lock);
	dout(CLIENT, 10, "revoke on %" PRIx64 ": caps 0x%x revoked 0x%x", m->ino, m->caps, revoked);

	/* the writer's data and size must be at the MDS/store before the ack */
	if (revoked & (MDSP_CAP_WR | MDSP_CAP_BUFFER | MDSP_CAP_EXCL)) {
		int r = lc_wb_flush(c, in);
		if (r < 0)
			derr(CLIENT, "flush for revoke on %" PRIx64 ": %s", m->ino, strerror(-r));
	}
	if (revoked & (MDSP_CAP_SHARED | MDSP_CAP_RD | MDSP_CAP_EXCL)) {
		pthread_mutex_lock(&in->lock);
		in->attr_until = 0;
		if (in->rd) {
			lc_rd_batch_put(in->rd);
			in->rd = NULL;
		}
		pthread_mutex_unlock(&in->lock);
		atomic_fetch_add(&in->data_gen, 1);
		if (dir)
			lc_dcache_revoke_dir(c, in);
		invalidate_kernel(c, in);
	}
	send_ack(c, in, m);
	lc_put(c, in);
}

/* on the session reader thread: never block here */
void lc_handle_caps(void *arg, const struct mdsp_caps *m)
{
	struct lclient *c = arg;
	struct lc_inode *in;

	switch (m->op) {
	case MDSP_CAPS_GRANT:
		perf_inc(&c->perf.caps_grant, 1);
		in = lc_ino_to_inode(c, m->ino);
		if (!in)
			return;
		if (m->attr.ino == m->ino)
			lc_inode_refresh(in, &m->attr);
		pthread_mutex_lock(&in->lock);
		if (m->seq >= in->cap_seq) {
			uint32_t lost = in->caps & ~m->caps;
			in->caps = m->caps;
			in->cap_seq = m->seq;
			if (lost & MDSP_CAP_SHARED)
				in->attr_until = 0;
		}
		lc_caps_apply_locked(in, 0, 0);
		pthread_mutex_unlock(&in->lock);
		lc_put(c, in);
		break;
	case MDSP_CAPS_REVOKE:
		lc_queue_cap_work(c, m);
		break;
	case MDSP_CAPS_FLUSH_ACK:
		break;
	default:
		dout(CLIENT, 5, "ignoring caps op %u for %" PRIx64, m->op, m->ino);
		break;
	}
}

/* session went stale or was evicted: every cap is gone */
void lc_session_event(void *arg, uint32_t op)
{
	struct lclient *c = arg;
	struct cds_lfht_iter it;
	struct lc_inode *in;

	if (op != MDSP_SESSION_STALE && op != MDSP_SESSION_EVICTED && op != MDSP_SESSION_CLOSE)
		return;
	dinfo(CLIENT, "session %s: dropping caps and cached attributes", mdsp_session_op_name(op));
	rcu_read_lock();
	LC_LFHT_FOR_EACH(c->inodes, &it, in, hnode) {
		pthread_mutex_lock(&in->lock);
		in->caps = 0;
		in->attr_until = 0;
		pthread_mutex_unlock(&in->lock);
		atomic_fetch_add(&in->dgen, 1);
	}
	rcu_read_unlock();
}

/* session thread, after a lost connection: the caps we hold, for RECONNECT */
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
		uint32_t caps = in->caps;
		bool want_wr = in->nwriters > 0 || in->dirty || in->dirty_meta;
		pthread_mutex_unlock(&in->lock);
		if (!caps)
			continue;
		if (n == cap) {
			struct mdsp_cap_reconnect *nv = realloc(v, cap * 2 * sizeof(*v));
			if (!nv)
				break;
			v = nv;
			cap *= 2;
		}
		v[n].ino = in->ino;
		v[n].caps = caps;
		v[n].wanted = caps & (want_wr ? ~0u : ~(uint32_t)(MDSP_CAP_WR | MDSP_CAP_BUFFER));
		n++;
	}
	rcu_read_unlock();
	*out = v;
	*nout = (uint32_t)n;
	return 0;
}
