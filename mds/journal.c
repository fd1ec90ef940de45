/*
 * journal.c - the MDS journal: a redo log of omap edits with group commit;
 * this file is its writer.
 *
 * Every mutation becomes one entry: the list of omap edits (set, rm,
 * rm-range, clear, remove-object) that bring the store's objects from the
 * old state to the new one - dentries, inodes, allocators, session records
 * and the request's completed-table entry, so the change and its
 * exactly-once record are durable together.  Edits carry absolute values, so
 * applying an entry twice is harmless: that is what makes replay simple.
 *
 * The on-disk format (checksummed, sequence-numbered entries in segment
 * objects, a header naming where replay starts and which segment is the
 * newest) and the rules that tell a torn tail from damage are in
 * journal_int.h; journal_fmt.c implements them.  A damaged journal stops the
 * MDS at start with the segment, the offset and what to do (see
 * journal_tool.c for --journal-inspect, export, import and reset).
 *
 * Group commit: requests queue their entry (under mds->lock, so journal
 * order is the order the changes were made in memory, and the sequence
 * numbers follow it) and go on; one writer thread writes everything queued
 * as one store write, waits for it to be durable, then sends the SAFE
 * replies that rode with those entries.  While one write is in flight the
 * next batch accumulates, so the batch size grows with the load by itself;
 * mds_journal_max_delay can add a wait, as Ceph's journaler_batch_interval:
 * only while nobody waits for the batch.  A mutation answered UNSAFE is
 * queued lazily (journal_submit_lazy_locked: its client went on); anything
 * else queued (a failed request's only reply, a session's, a cap flush's
 * ack, the MDS's own entries), a request throttled for room in the queue
 * and a client that starts to wait for SAFE
 * (fsync: SESSION REQUEST_FLUSH_JOURNAL, journal_flush_hint, as Ceph's
 * REQUEST_FLUSH_MDLOG) end the wait.
 *
 * Write errors make the MDS read-only, not dead.  A failed write (ENOSPC,
 * EIO, an OSD timeout) is retried, the same bytes at the same offset (so a
 * write that timed out but landed after all is harmless), with backoff up to
 * mds_journal_retry_interval, until it succeeds.  Meanwhile
 * journal_read_only() is the error: new mutations are refused with it before
 * they change anything (journal_admit()), reads go on, and the requests in
 * the failed write - applied in memory and answered UNSAFE - keep waiting:
 * they get their SAFE reply when the retry succeeds, never before, and a
 * client that waits for them (fsync) waits (interruptibly, on the client
 * side).  If the MDS stops before then they are not durable, and their
 * clients replay them after the restart, as after any crash.  Requests that
 * resend work already acknowledged (replays) and, when the store is full,
 * unlinks and rmdirs (which can free space) are still let through.  The
 * state is in `status` (read_only, health) and in the log; once a write
 * succeeds the MDS is read-write again by itself.
 *
 * The journal is three files over journal_priv.h (struct journal and its
 * lock order): this one (submit, the writer thread, the read-only state,
 * start, drain and stop, status), journal_expire.c (applying sealed
 * segments to their objects) and journal_replay.c (replay at start).
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <unistd.h>

#include "common/config.h"
#include "common/crc32c.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "common/perf.h"
#include "common/time.h"
#include "mds/codec.h"
#include "mds/journal_int.h"
#include "mds/journal_priv.h"
#include "mds/mds.h"
#include "mds/journal.h"
#include "mds/mdcache.h"
#include "mds/net.h"

_Atomic uint64_t journal_seg_mem;

struct jseg *jseg_new(uint64_t no, uint32_t fmt)
{
	struct jseg *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->no = no;
	s->fmt = fmt;
	s->tail = &s->chunks;
	return s;
}

void jseg_free(struct jseg *s)
{
	struct jchunk *c, *n;

	atomic_fetch_sub(&journal_seg_mem, s->len);
	for (c = s->chunks; c; c = n) {
		n = c->next;
		free(c->data);
		free(c);
	}
	free(s);
}

int jseg_add_chunk(struct jseg *s, uint8_t *data, size_t len)
{
	struct jchunk *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->data = data;
	c->len = len;
	*s->tail = c;
	s->tail = &c->next;
	s->len += len;
	atomic_fetch_add(&journal_seg_mem, len);
	return 0;
}

/* ---- edits ------------------------------------------------------------------ */

int jedits_for_each(const uint8_t *p, size_t len, jedit_fn fn, void *arg)
{
	struct dec c;
	uint32_t n, i, l;
	char oid[STORE_OID_MAX + 1], key[STORE_OMAP_KEY_MAX + 1], key2[STORE_OMAP_KEY_MAX + 1];
	const char *s;
	const void *val;
	int r = 0;

	dec_init(&c, p, len);
	n = dec_u32(&c);
	for (i = 0; i < n && !c.bad; i++) {
		uint8_t op = dec_u8(&c);
		uint32_t vlen = 0;

		val = NULL;
		key2[0] = 0;
		s = dec_str_ref(&c, STORE_OID_MAX, &l);
		if (c.bad)
			break;
		memcpy(oid, s, l);
		oid[l] = 0;
		s = dec_str_ref(&c, STORE_OMAP_KEY_MAX, &l);
		if (c.bad)
			break;
		memcpy(key, s, l);
		key[l] = 0;
		if (op == EDIT_SET) {
			val = dec_blob_ref(&c, 1u << 28, &vlen);
		} else if (op == EDIT_RMRANGE) {
			s = dec_str_ref(&c, STORE_OMAP_KEY_MAX, &l);
			if (c.bad)
				break;
			memcpy(key2, s, l);
			key2[l] = 0;
		}
		if (c.bad)
			break;
		r = fn(arg, op, oid, key, val, vlen, key2);
		if (r)
			return r;
	}
	return c.bad ? -EBADMSG : 0;
}

/* ---- header ------------------------------------------------------------------ */

int journal_header_write(struct store_pool *meta, const struct jheader *h)
{
	struct mdsp_buf b;
	struct store_op *op;

	mdsp_buf_init(&b);
	jheader_encode(&b, h);
	op = store_op_new();
	if (!op || b.oom) {
		if (op)
			store_op_free(op);
		mdsp_buf_free(&b);
		return -ENOMEM;
	}
	store_op_write_full(op, b.data, b.len);
	mdsp_buf_free(&b);
	return store_op_exec(meta, OID_JOURNAL, op);
}

/* Caller holds hdr_lock; @j->hdr was just written. */
void journal_hdr_publish(struct journal *j)
{
	atomic_store(&j->pub_expire_seg, j->hdr.expire_seg);
	atomic_store(&j->pub_head_seg, j->hdr.head_seg);
	atomic_store(&j->pub_fmt, j->hdr.fmt);
}

int journal_header_read(struct store_pool *meta, struct jheader *h, const char **why)
{
	uint8_t buf[256];
	ssize_t n = store_read(meta, OID_JOURNAL, 0, sizeof(buf), buf);

	*why = NULL;
	if (n < 0)
		return (int)n;
	return jheader_decode(buf, (size_t)n, h, why);
}

static int store_read_seg(void *arg, uint64_t no, uint8_t **data, size_t *len)
{
	struct store_pool *meta = arg;
	struct store_stat sst;
	char oid[64];
	ssize_t got;
	int r;

	journal_oid_seg(oid, sizeof(oid), no);
	r = store_stat(meta, oid, &sst);
	if (r)
		return r;
	*data = malloc(sst.size ? sst.size : 1);
	if (!*data)
		return -ENOMEM;
	got = sst.size ? store_read(meta, oid, 0, sst.size, *data) : 0;
	if (got < 0) {
		free(*data);
		return (int)got;
	}
	*len = (size_t)got;
	return 0;
}

void journal_store_reader(struct store_pool *meta, struct jreader *rd)
{
	rd->read = store_read_seg;
	rd->arg = meta;
}

int journal_mkfs(struct mds *m)
{
	struct jheader h = { .fmt = JFMT_V2, .expire_seg = 0, .expire_seq = 1, .removed_upto = 0, .head_seg = 0 };
	struct mdsp_buf b;
	struct store_op *op;
	uint8_t no[8];
	char oid[64];
	int r;

	/* segment 0 first (with its SEG_START), then the header naming it */
	mdsp_buf_init(&b);
	le64_put(no, 0);
	jent_put(&b, JE_SEG_START, 1, no, 8);
	op = store_op_new();
	if (!op || b.oom) {
		if (op)
			store_op_free(op);
		mdsp_buf_free(&b);
		return -ENOMEM;
	}
	store_op_write_full(op, b.data, b.len);
	mdsp_buf_free(&b);
	journal_oid_seg(oid, sizeof(oid), 0);
	r = store_op_exec(m->meta, oid, op);
	return r ? r : journal_header_write(m->meta, &h);
}

/* ---- read-only state ------------------------------------------------------------ */

uint64_t journal_last_seq(struct mds *m)
{
	struct journal *j = m->j;
	uint64_t v;

	if (!j)
		return 0;
	pthread_mutex_lock(&j->lock);
	v = j->written_seq;
	pthread_mutex_unlock(&j->lock);
	return v;
}

int journal_read_only(struct mds *m)
{
	return m->j ? atomic_load_explicit(&m->j->ro_err, memory_order_relaxed) : 0;
}

int journal_admit(struct mds *m, const struct mdsp_request *req)
{
	int err = journal_read_only(m);

	if (!err)
		return 0;
	/* a replay redoes what was acknowledged UNSAFE before a restart */
	if (req->flags & MDSP_REQ_REPLAY)
		return 0;
	/* with the store full, what can free space goes on (it waits for
	 * durability with everything else) */
	if (err == -ENOSPC && (req->op == MDSP_OP_UNLINK || req->op == MDSP_OP_RMDIR))
		return 0;
	perf_inc(&m->j->refused, 1);
	return err;
}

/* A journal write to @oid failed with @r: read-only until one succeeds. */
void journal_space_freed_locked(struct mds *m)
{
	struct journal *j = m->j;

	lockdep_assert_held(&j->lock);
	pthread_cond_broadcast(&j->space);
	if (m->journal_hooks && m->journal_hooks->space_freed)
		m->journal_hooks->space_freed(m);
}

static void write_failed(struct mds *m, const char *oid, int r)
{
	struct journal *j = m->j;
	uint64_t now = now_mono_ns();

	perf_inc(&j->write_errors, 1);
	if (r == -ESHUTDOWN) {
		/*
		 * The store fenced this MDS: another daemon took rank 0 and
		 * replays the journal (mds/mdsmap.c).  Nothing more of ours
		 * may land, and no client may hear an error from a daemon that
		 * no longer serves: exit before a request sees the read-only
		 * state (their clients resend to the new holder).
		 */
		derr(JOURNAL, "journal write to %s refused: the store fenced this MDS, which was deposed (another daemon "
		     "holds rank 0 now); exiting at once, answering nothing more", oid);
		_exit(1);
	}
	pthread_mutex_lock(&j->lock);
	j->werr_retries++;
	if (!j->werr) {
		j->werr_since_ns = now;
		j->werr_logged_ns = now;
		derr(JOURNAL, "journal write to %s failed (%s): the MDS is READ-ONLY until journal writes succeed "
		     "again; mutations fail with that error, reads go on, the write is retried", oid, strerror(-r));
	} else if (j->werr != r) {
		derr(JOURNAL, "journal write to %s now fails with %s (was %s); still read-only", oid, strerror(-r),
		     strerror(-j->werr));
		j->werr_logged_ns = now;
	} else if (now - j->werr_logged_ns >= 60ull * 1000000000ull) {
		derr(JOURNAL, "journal writes still fail (%s at %s) after %.0f s and %" PRIu64
		     " attempts: the MDS is read-only", strerror(-r), oid, (double)(now - j->werr_since_ns) / 1e9,
		     j->werr_retries);
		j->werr_logged_ns = now;
	}
	j->werr = r;
	snprintf(j->werr_oid, sizeof(j->werr_oid), "%s", oid);
	atomic_store(&j->ro_err, r);
	/* read-only: requests waiting for the queue's space go on, to be
	 * refused (or let through) by journal_admit() rather than wait out
	 * the outage (held ones too: the loops look again) */
	journal_space_freed_locked(m);
	pthread_mutex_unlock(&j->lock);
}

static void write_ok(struct mds *m)
{
	struct journal *j = m->j;

	if (!atomic_load_explicit(&j->ro_err, memory_order_relaxed))
		return;
	pthread_mutex_lock(&j->lock);
	if (j->werr)
		dinfo(JOURNAL, "journal writes succeed again after %.1f s and %" PRIu64 " attempts (%s): the MDS is "
		      "read-write", (double)(now_mono_ns() - j->werr_since_ns) / 1e9, j->werr_retries,
		      strerror(-j->werr));
	j->werr = 0;
	j->werr_retries = 0;
	atomic_store(&j->ro_err, 0);
	pthread_mutex_unlock(&j->lock);
}

/* Wait before retry @attempt (50 ms doubling up to mds_journal_retry_interval).
 * Return: -ESHUTDOWN if the journal is stopping (give up), else 0. */
static int retry_wait(struct journal *j, unsigned attempt)
{
	double max = cfg_double(CFG_mds_journal_retry_interval), d = 0.05;
	struct timespec ts;
	bool stop;

	while (attempt-- && d < max)
		d *= 2;
	if (d > max)
		d = max;
	if (d < 0.001)
		d = 0.001;
	ts = ns_to_timespec(now_mono_ns() + (uint64_t)(d * 1e9));
	pthread_mutex_lock(&j->lock);
	while (!j->stop && pthread_cond_timedwait(&j->cond, &j->lock, &ts) == 0)
		;
	stop = j->stop;
	pthread_mutex_unlock(&j->lock);
	return stop ? -ESHUTDOWN : 0;
}

/*
 * Write @len bytes at @off of segment @no (@full: the whole object;
 * @trunc: cut the object at @off first) and retry until it is durable.
 * Return: 0, or the store's error if the journal stops meanwhile.
 * Context: the writer thread, no lock held.
 */
static int seg_write(struct mds *m, uint64_t no, uint64_t off, const uint8_t *data, size_t len, bool full,
		     bool trunc)
{
	char oid[64];
	unsigned attempt;
	int r;

	journal_oid_seg(oid, sizeof(oid), no);
	for (attempt = 0;; attempt++) {
		struct store_op *op = store_op_new();

		r = -ENOMEM;
		if (op) {
			if (full) {
				store_op_write_full(op, data, len);
			} else {
				/* only a first attempt cuts: a retry rewrites the same
				 * bytes, so an earlier attempt that lands late is harmless */
				if (trunc && !attempt)
					store_op_truncate(op, off);
				if (len)
					store_op_write(op, off, data, len);
			}
			r = store_op_exec(m->meta, oid, op);
		}
		if (!r) {
			write_ok(m);
			return 0;
		}
		write_failed(m, oid, r);
		if (retry_wait(m->j, attempt))
			return r;
	}
}

/* The header names @head as the newest segment; retried like a segment write. */
static int header_set_head(struct mds *m, uint64_t head)
{
	struct journal *j = m->j;
	unsigned attempt;
	int r;

	for (attempt = 0;; attempt++) {
		pthread_mutex_lock(&j->hdr_lock);
		if (j->hdr.head_seg >= head) {
			pthread_mutex_unlock(&j->hdr_lock);
			return 0;
		}
		j->hdr.head_seg = head;
		r = journal_header_write(m->meta, &j->hdr);
		if (!r)
			journal_hdr_publish(j);
		pthread_mutex_unlock(&j->hdr_lock);
		if (!r) {
			write_ok(m);
			return 0;
		}
		write_failed(m, OID_JOURNAL, r);
		if (retry_wait(j, attempt))
			return r;
	}
}

/* ---- submit and the writer ------------------------------------------------ */

/* What a reply waiting for its SAFE holds: the jitem and its frame. */
static size_t jitem_bytes(const struct jitem *it)
{
	return sizeof(*it) + it->frame.cap;
}

uint64_t journal_queue_bound(void)
{
	uint64_t max = cfg_uint(CFG_mds_journal_max_pending), lim = cfg_uint(CFG_mds_cache_memory_limit);
	uint64_t share = lim / 16;

	/* a share of the MDS's memory limit, which counts it (mdcache.c,
	 * cache_budget): 1/16, not below 1 MiB unless asked for less */
	if (share < (1u << 20))
		share = 1u << 20;
	if (max && lim && max > share)
		max = share;
	return max;
}

uint64_t journal_seg_bound(void)
{
	uint64_t q = journal_queue_bound(), seg = cfg_uint(CFG_mds_journal_segment_size);

	/* the current segment (up to a segment and one batch) and the sealed
	 * ones waiting for expiry: twice the queue, never so little that the
	 * current segment alone could fill it before it is sealed */
	if (!q)
		return 0;
	return 2 * q > 2 * seg + q ? 2 * q : 2 * seg + q;
}

uint64_t journal_seg_bytes(void)
{
	return atomic_load(&journal_seg_mem);
}

static uint64_t submit_locked(struct mds *m, struct txn *t, struct jitem *item, bool urgent)
{
	struct journal *j = m->j;
	uint64_t seq;

	pthread_mutex_lock(&j->lock);
	if (urgent)
		j->urgent = true;
	if (t && t->n) {
		size_t before = j->pending.len;
		int i;

		seq = ++j->next_seq;
		jent_put(&j->pending, JE_EDITS, seq, t->b.data, t->b.len);
		j->qbytes += j->pending.len - before;
		j->npending++;
		for (i = 0; i < t->ndirs; i++)
			if (t->dirs[i]->last_jseq != UINT64_MAX)
				t->dirs[i]->last_jseq = seq;
	} else {
		seq = j->next_seq;   /* rides after everything queued so far */
	}
	if (item) {
		item->jseq = seq;
		item->next = NULL;
		*j->items_tail = item;
		j->items_tail = &item->next;
		j->qbytes += jitem_bytes(item);
	}
	if (j->qbytes > j->qbytes_peak)
		j->qbytes_peak = j->qbytes;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
	return seq;
}

uint64_t journal_submit_locked(struct mds *m, struct txn *t, struct jitem *item)
{
	return submit_locked(m, t, item, true);
}

uint64_t journal_submit_lazy_locked(struct mds *m, struct txn *t, struct jitem *item)
{
	return submit_locked(m, t, item, false);
}

void journal_flush_hint(struct mds *m)
{
	struct journal *j = m->j;

	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	j->urgent = true;
	perf_inc(&j->flush_hints, 1);
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

/* Caller holds j->lock.  Is the request of @w to wait, and for what. */
static bool throttle_over_locked(struct journal *j, struct jwaiter *w, uint64_t qmax, uint64_t smax)
{
	lockdep_assert_held(&j->lock);
	if (j->stop || j->werr || !qmax)
		return false;
	w->segments = false;
	if (j->qbytes > qmax)
		return true;
	w->segments = smax && atomic_load(&journal_seg_mem) > smax;
	return w->segments;
}

/* Caller holds j->lock.  @w waits for space from now on: listed (`ops`,
 * `journal status`) and counted. */
static void waiter_add_locked(struct journal *j, struct jwaiter *w)
{
	lockdep_assert_held(&j->lock);
	w->start_ns = now_mono_ns();
	w->next = j->waiters;
	j->waiters = w;
	j->nwaiting++;
	perf_inc(&j->throttled, 1);
	if (w->segments)
		perf_inc(&j->throttled_segments, 1);
	/* a request waits for a write to make room: no batch delay */
	j->urgent = true;
	pthread_cond_signal(&j->cond);
}

/* Caller holds j->lock.  @w waits no more. */
static void waiter_remove_locked(struct journal *j, struct jwaiter *w)
{
	lockdep_assert_held(&j->lock);
	for (struct jwaiter **pp = &j->waiters; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	j->nwaiting--;
	hist_add(&j->throttle_lat, now_mono_ns() - w->start_ns);
}

bool journal_over(struct mds *m)
{
	struct journal *j = m->j;
	uint64_t qmax = journal_queue_bound(), smax = journal_seg_bound();
	struct jwaiter w = { 0 };
	bool over;

	if (!j || !qmax)
		return false;
	pthread_mutex_lock(&j->lock);
	over = throttle_over_locked(j, &w, qmax, smax);
	pthread_mutex_unlock(&j->lock);
	if (over && w.segments) {
		/* only expiry frees segments, and it writes every object the
		 * segments touched: not on an event loop, which serves many
		 * connections.  The ticker expires now rather than at its next
		 * tick; the expiry's space_freed wakes the loops. */
		pthread_mutex_lock(&m->tick_lock);
		m->tick_expire = true;
		pthread_cond_signal(&m->tick_cond);
		pthread_mutex_unlock(&m->tick_lock);
	}
	return over;
}

struct jwaiter *journal_hold(struct mds *m, struct conn *c, const struct mdsp_request *req)
{
	struct journal *j = m->j;
	struct jwaiter *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->tid = req->tid;
	w->op = req->op;
	w->sid = c->session_id;       /* read as journal_throttle does */
	pthread_mutex_lock(&j->lock);
	throttle_over_locked(j, w, journal_queue_bound(), journal_seg_bound());   /* what it waits for */
	waiter_add_locked(j, w);
	pthread_mutex_unlock(&j->lock);
	return w;
}

void journal_unhold(struct mds *m, struct jwaiter *w)
{
	struct journal *j = m->j;

	if (!w)
		return;
	pthread_mutex_lock(&j->lock);
	waiter_remove_locked(j, w);
	pthread_mutex_unlock(&j->lock);
	free(w);
}

void journal_throttle(struct mds *m, struct conn *c, const struct mdsp_request *req)
{
	struct journal *j = m->j;
	uint64_t qmax = journal_queue_bound(), smax = journal_seg_bound();
	struct jwaiter w = { .tid = req ? req->tid : 0, .op = req ? req->op : 0 };
	bool tried = false;

	if (!qmax)
		return;
	pthread_mutex_lock(&j->lock);
	if (!throttle_over_locked(j, &w, qmax, smax)) {
		pthread_mutex_unlock(&j->lock);
		return;
	}
	if (c) {
		/* about to wait: the replies of the reader's batch go first (not
		 * under the journal lock: send_lock comes before it) */
		pthread_mutex_unlock(&j->lock);
		conn_uncork(c);
		pthread_mutex_lock(&j->lock);
		w.sid = c->session_id;
	}
	/* while read-only nothing drains: the request is refused (or let
	 * through) by journal_admit() instead of blocking its connection */
	waiter_add_locked(j, &w);
	while (throttle_over_locked(j, &w, qmax, smax)) {
		if (w.segments && !tried) {
			/* only expiry frees segments, and this request waits
			 * for it anyway: expire the sealed ones now rather than
			 * at the next tick (expire_lock makes it one at a time;
			 * a failure is retried at the tick, whose expiry wakes
			 * us) */
			tried = true;
			pthread_mutex_unlock(&j->lock);
			journal_expire_sealed(m);
			pthread_mutex_lock(&j->lock);
			continue;
		}
		tried = false;
		pthread_cond_wait(&j->space, &j->lock);
		qmax = journal_queue_bound();    /* `config set` may have raised it */
		smax = journal_seg_bound();
	}
	waiter_remove_locked(j, &w);
	pthread_mutex_unlock(&j->lock);
}

/* Send the frames of a durable batch.  One pass under mds->lock picks each
 * item's connection (its session's current one, if it has moved), so the
 * lock is taken once per journal write, not once per reply. */
static void items_done(struct mds *m, struct jitem *items, uint64_t last)
{
	struct jitem *it, *next;
	uint64_t now;

	pthread_mutex_lock(&m->lock);
	m->committed_jseq = last;
	for (it = items; it; it = it->next) {
		struct session *s = it->sid ? xa_load(&m->sessions, it->sid) : NULL;

		if (s && s->conn && s->conn != it->conn) {
			conn_get(s->conn);
			if (it->conn)
				conn_put(it->conn);
			it->conn = s->conn;
		}
	}
	pthread_mutex_unlock(&m->lock);
	now = now_mono_ns();
	for (it = items; it; it = next) {
		next = it->next;
		if (it->conn && it->frame.len) {
			conn_send_frame(it->conn, &it->frame);
			if (it->op)
				hist_add(&m->safe_lat, now - it->start_ns);
		}
		if (it->conn)
			conn_put(it->conn);
		mdsp_buf_free(&it->frame);
		free(it);
	}
}

/* Items whose entries will never be durable (shutdown during a write
 * failure): no reply; their clients replay them at the next start. */
static void items_drop(struct jitem *items)
{
	struct jitem *it, *next;

	for (it = items; it; it = next) {
		next = it->next;
		if (it->conn)
			conn_put(it->conn);
		mdsp_buf_free(&it->frame);
		free(it);
	}
}

/* Move the current segment to the sealed list and start @no + 1, whose
 * SEG_START has sequence number @start_seq (written with its first batch). */
static void seal_cur(struct journal *j, uint64_t start_seq)
{
	struct jseg *s = j->cur;

	j->cur = jseg_new(s->no + 1, JFMT_V2);
	if (!j->cur) {
		derr(JOURNAL, "out of memory starting journal segment");
		_exit(2);
	}
	j->cur->start_seq = start_seq;
	pthread_mutex_lock(&j->seg_lock);
	s->next = NULL;
	*j->sealed_tail = s;
	j->sealed_tail = &s->next;
	j->nsealed++;
	pthread_mutex_unlock(&j->seg_lock);
	dout(JOURNAL, 5, "sealed journal segment %" PRIx64 " (%zu bytes, entries to %" PRIu64 ")", s->no, s->len,
	     s->last_seq);
}

/* Caller holds j->lock. */
static bool writer_idle_locked(struct journal *j)
{
	lockdep_assert_held(&j->lock);
	return !j->npending && !j->items && !j->seal_req && !j->cur->trunc;
}

/* Caller holds j->lock.  The writer's batch and its replies are gone:
 * throttled requests may go on. */
static void batch_freed_locked(struct mds *m, struct journal *j)
{
	lockdep_assert_held(&j->lock);
	j->qbytes -= j->qbytes_batch;
	j->qbytes_batch = 0;
	journal_space_freed_locked(m);
}

/* The writer is done with its batch: `ops` must not look at it any more. */
static void writing_done(struct journal *j)
{
	pthread_mutex_lock(&j->lock);
	j->writing_items = NULL;
	pthread_mutex_unlock(&j->lock);
}

static void *writer_main(void *arg)
{
	struct mds *m = arg;
	struct journal *j = m->j;
	struct mdsp_buf buf;
	struct jitem *items;
	uint32_t n;
	uint64_t last, next_start = 0;
	bool seal, stop;

	pthread_mutex_lock(&j->lock);
	for (;;) {
		struct jseg *cur = j->cur;
		bool open;

		while (writer_idle_locked(j) && !j->stop)
			pthread_cond_wait(&j->cond, &j->lock);
		if (j->stop && writer_idle_locked(j) && !j->cur->nedits)
			break;
		/* the test hook: nothing is written (so nothing is SAFE) while it
		 * is set; `config set` does not signal us, so look every 10 ms */
		while (cfg_bool(CFG_mds_journal_hold) && !j->stop) {
			struct timespec ts = ns_to_timespec(now_mono_ns() + 10000000ull);

			pthread_cond_timedwait(&j->cond, &j->lock, &ts);
		}
		{
			double delay = cfg_double(CFG_mds_journal_max_delay);
			uint64_t maxb = cfg_uint(CFG_mds_journal_max_batch);

			/* only while nobody waits for the batch: what is queued
			 * was answered UNSAFE (journal_submit_lazy_locked), and a
			 * client that starts to wait for its SAFE says so */
			if (delay > 0 && !j->urgent && !j->stop && !j->draining && j->npending && j->npending < maxb) {
				struct timespec ts = ns_to_timespec(now_mono_ns() + (uint64_t)(delay * 1e9));

				while (j->npending < maxb && !j->urgent && !j->stop && !j->draining &&
				       pthread_cond_timedwait(&j->cond, &j->lock, &ts) == 0)
					;
			}
		}
		j->urgent = false;      /* for what comes after this batch */
		buf = j->pending;
		mdsp_buf_init(&j->pending);
		j->qbytes_batch = j->qbytes;   /* freed once its replies are sent */
		n = j->npending;
		j->npending = 0;
		items = j->items;
		j->writing_items = items;
		j->items = NULL;
		j->items_tail = &j->items;
		stop = j->stop;
		seal = j->seal_req || stop || cur->len + buf.len >= j->seg_size;
		if (!cur->nedits && !n)
			seal = false;   /* never seal a segment without edits */
		if (seal) {
			/* SEG_END ends this batch; the next segment's SEG_START
			 * takes the sequence number after it */
			jent_put(&buf, JE_SEG_END, ++j->next_seq, NULL, 0);
			next_start = ++j->next_seq;
			last = next_start - 1;
		} else {
			last = j->next_seq;
		}
		j->seal_req = false;
		j->writing = true;
		pthread_mutex_unlock(&j->lock);

		if (buf.oom) {
			derr(JOURNAL, "out of memory building a journal write: stopping");
			_exit(2);
		}
		open = !cur->opened && buf.len;
		if (open) {
			/* the segment's first write starts with its SEG_START */
			struct mdsp_buf w;
			uint8_t no[8];

			mdsp_buf_init(&w);
			le64_put(no, cur->no);
			jent_put(&w, JE_SEG_START, cur->start_seq, no, 8);
			enc_bytes(&w, buf.data, buf.len);
			mdsp_buf_free(&buf);
			buf = w;
			if (buf.oom) {
				derr(JOURNAL, "out of memory building a journal write: stopping");
				_exit(2);
			}
		}
		/* segment N may exist only while the header names N - 1 (a start
		 * after a crash between creating a segment and naming it finds
		 * the header one behind: catch up before going further) */
		if (open && cur->no && header_set_head(m, cur->no - 1)) {
			mdsp_buf_free(&buf);
			writing_done(j);
			items_drop(items);
			pthread_mutex_lock(&j->lock);
			batch_freed_locked(m, j);
			j->writing = false;
			break;
		}
		if (buf.len || cur->trunc) {
			uint64_t t0 = now_mono_ns();
			int r;

			r = seg_write(m, cur->no, open ? 0 : cur->len, buf.data, buf.len, open, cur->trunc);
			if (r) {
				derr(JOURNAL, "journal stopping while its writes fail (%s): %u entries not durable; "
				     "their clients replay what was answered UNSAFE at the next start", strerror(-r), n);
				mdsp_buf_free(&buf);
				writing_done(j);
				items_drop(items);
				pthread_mutex_lock(&j->lock);
				batch_freed_locked(m, j);
				j->writing = false;
				break;
			}
			cur->trunc = false;
			hist_add(&j->write_lat, now_mono_ns() - t0);
			DTRACE_PROBE3(loligo_mds, journal_write, n, buf.len, now_mono_ns() - t0);
			if (n) {
				perf_inc(&j->writes, 1);
				perf_inc(&j->entries, n);
				hist_add(&j->batch, n);
				if (!cur->first_ns)
					cur->first_ns = now_mono_ns();
			}
			perf_inc(&j->bytes, buf.len);
			if (open) {
				cur->opened = true;
				cur->nentries++;
			}
			cur->nentries += n + (seal ? 1 : 0);
			cur->nedits += n;
			if (buf.len)
				cur->last_seq = last;
			if (!buf.len) {
				mdsp_buf_free(&buf);
			} else if (jseg_add_chunk(cur, buf.data, buf.len)) {
				derr(JOURNAL, "out of memory keeping a journal segment");
				_exit(2);
			}
			dout(JOURNAL, 20, "wrote %u entries (%zu bytes) to segment %" PRIx64, n, buf.len, cur->no);
		} else {
			mdsp_buf_free(&buf);
		}
		writing_done(j);
		items_done(m, items, last);
		if (open && header_set_head(m, cur->no)) {
			pthread_mutex_lock(&j->lock);
			batch_freed_locked(m, j);
			j->writing = false;
			break;
		}
		if (seal)
			seal_cur(j, next_start);
		pthread_mutex_lock(&j->lock);
		batch_freed_locked(m, j);
		j->writing = false;
		if (last > j->written_seq)
			j->written_seq = last;
		j->cur_len = j->cur->len;
		j->cur_nedits = j->cur->nedits;
		j->cur_first_ns = j->cur->first_ns;
		pthread_cond_broadcast(&j->cond);
	}
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

static uint64_t g_queued(void *arg)
{
	struct journal *j = arg;
	uint64_t v;

	pthread_mutex_lock(&j->lock);
	v = j->qbytes;
	pthread_mutex_unlock(&j->lock);
	return v;
}

static uint64_t g_queued_peak(void *arg)
{
	struct journal *j = arg;
	uint64_t v;

	pthread_mutex_lock(&j->lock);
	v = j->qbytes_peak;
	pthread_mutex_unlock(&j->lock);
	return v;
}

static uint64_t g_waiting(void *arg)
{
	struct journal *j = arg;
	uint64_t v;

	pthread_mutex_lock(&j->lock);
	v = j->nwaiting;
	pthread_mutex_unlock(&j->lock);
	return v;
}

static uint64_t g_queue_bound(void *arg)
{
	(void)arg;
	return journal_queue_bound();
}

static uint64_t g_seg_bytes(void *arg)
{
	(void)arg;
	return journal_seg_bytes();
}

static uint64_t g_seg_bound(void *arg)
{
	(void)arg;
	return journal_seg_bound();
}

int journal_start(struct mds *m)
{
	struct journal *j = m->j;
	int r;

	perf_register_counter("mds_journal", "writes", &j->writes);
	perf_register_counter("mds_journal", "entries", &j->entries);
	perf_register_counter("mds_journal", "bytes", &j->bytes);
	perf_register_counter("mds_journal", "expired_segments", &j->expired);
	perf_register_counter("mds_journal", "expire_errors", &j->expire_errors);
	perf_register_counter("mds_journal", "throttled", &j->throttled);
	perf_register_counter("mds_journal", "throttled_segments", &j->throttled_segments);
	perf_register_counter("mds_journal", "flush_hints", &j->flush_hints);
	perf_register_hist("mds_journal", "throttle_lat", &j->throttle_lat);
	perf_register_fn("mds_journal", "queued_bytes", g_queued, j);
	perf_register_fn("mds_journal", "queued_bytes_max", g_queued_peak, j);
	perf_register_fn("mds_journal", "queued_bytes_bound", g_queue_bound, NULL);
	perf_register_fn("mds_journal", "throttle_waiting", g_waiting, j);
	perf_register_fn("mds_journal", "segment_bytes", g_seg_bytes, NULL);
	perf_register_fn("mds_journal", "segment_bytes_bound", g_seg_bound, NULL);
	perf_register_counter("mds_journal", "write_errors", &j->write_errors);
	perf_register_counter("mds_journal", "refused_read_only", &j->refused);
	perf_register_hist("mds_journal", "batch_entries", &j->batch);
	perf_register_hist("mds_journal", "write_lat", &j->write_lat);
	perf_register_hist("mds_journal", "expire_lat", &j->expire_lat);
	if (j->hdr.fmt == JFMT_V1) {
		r = journal_upgrade_v1(m);
		if (r)
			return r;
	} else if (j->cur->nedits) {
		/* what replay brought back from the current segment is sealed
		 * (by the writer's first write, which also cuts a torn tail) and
		 * expired with the rest */
		j->seal_req = true;
	}
	/* segments the previous run expired but left in place */
	pthread_mutex_lock(&j->expire_lock);
	journal_remove_segments(m, j->expire_seg);
	pthread_mutex_unlock(&j->expire_lock);
	/* what was replayed gets applied to the objects now (a failure is
	 * retried at every tick) */
	journal_expire_sealed(m);
	r = pthread_create(&j->writer, NULL, writer_main, m);
	if (r)
		return -r;
	j->writer_started = true;
	return 0;
}

static unsigned items_count(const struct jitem *it)
{
	unsigned n = 0;

	for (; it; it = it->next)
		n++;
	return n;
}

unsigned journal_drain(struct mds *m, uint64_t deadline_ns)
{
	struct journal *j = m->j;
	struct timespec ts = ns_to_timespec(deadline_ns);
	unsigned left;

	if (!j || !j->writer_started)
		return 0;
	pthread_mutex_lock(&j->lock);
	j->draining = true;
	pthread_cond_broadcast(&j->cond);
	/* the writer broadcasts cond after each batch, once its replies are sent */
	while (!j->stop && (j->writing || !writer_idle_locked(j)))
		if (pthread_cond_timedwait(&j->cond, &j->lock, &ts) == ETIMEDOUT)
			break;
	left = items_count(j->items) + (j->writing ? items_count(j->writing_items) : 0);
	pthread_mutex_unlock(&j->lock);
	return left;
}

int journal_wait_written(struct mds *m, uint64_t seq, uint64_t deadline_ns)
{
	struct journal *j = m->j;
	struct timespec ts = ns_to_timespec(deadline_ns);
	int r = 0;

	if (!j || !j->writer_started)
		return -ENOTCONN;
	lockdep_might_wait("a journal write");
	pthread_mutex_lock(&j->lock);
	j->urgent = true;                        /* a batch delay need not run out for us */
	pthread_cond_broadcast(&j->cond);
	while (j->written_seq < seq) {
		if (j->stop) {
			r = -ESHUTDOWN;
			break;
		}
		/* a failing write is retried: the entry may still land */
		if (pthread_cond_timedwait(&j->cond, &j->lock, &ts) == ETIMEDOUT) {
			r = j->written_seq >= seq ? 0 : j->werr ? j->werr : -ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&j->lock);
	return r;
}

void journal_stop(struct mds *m)
{
	struct journal *j = m->j;

	if (!j)
		return;
	if (j->writer_started) {
		pthread_mutex_lock(&j->lock);
		j->stop = true;
		pthread_cond_broadcast(&j->cond);
		journal_space_freed_locked(m);
		pthread_mutex_unlock(&j->lock);
		pthread_join(j->writer, NULL);
		j->writer_started = false;
	}
	journal_expire_sealed(m);
	pthread_mutex_lock(&j->expire_lock);
	journal_remove_segments(m, j->expire_seg);
	pthread_mutex_unlock(&j->expire_lock);
}

void journal_free(struct mds *m)
{
	struct journal *j = m->j;
	struct jseg *s, *n;

	if (!j)
		return;
	perf_unregister_group("mds_journal");
	for (s = j->sealed; s; s = n) {
		n = s->next;
		jseg_free(s);
	}
	if (j->cur)
		jseg_free(j->cur);
	items_drop(j->items);
	mdsp_buf_free(&j->pending);
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->cond);
	pthread_cond_destroy(&j->space);
	pthread_mutex_destroy(&j->hdr_lock);
	pthread_mutex_destroy(&j->seg_lock);
	pthread_mutex_destroy(&j->expire_lock);
	free(j);
	m->j = NULL;
}

struct json_object *journal_status_json(struct mds *m)
{
	struct journal *j = m->j;
	struct json_object *o = json_object_new_object();
	uint64_t w = perf_get(&j->writes), e = perf_get(&j->entries);

	pthread_mutex_lock(&j->lock);
	json_object_object_add(o, "write_offset", json_object_new_int64((int64_t)j->cur_len));
	json_object_object_add(o, "pending_entries", json_object_new_int64(j->npending));
	json_object_object_add(o, "queued_bytes", json_object_new_uint64(j->qbytes));
	json_object_object_add(o, "queued_bytes_max", json_object_new_uint64(j->qbytes_peak));
	json_object_object_add(o, "queued_bytes_bound", json_object_new_uint64(journal_queue_bound()));
	json_object_object_add(o, "throttle_waiting", json_object_new_uint64(j->nwaiting));
	json_object_object_add(o, "throttled", json_object_new_uint64(perf_get(&j->throttled)));
	json_object_object_add(o, "throttled_segments", json_object_new_uint64(perf_get(&j->throttled_segments)));
	json_object_object_add(o, "segment_bytes", json_object_new_uint64(journal_seg_bytes()));
	json_object_object_add(o, "segment_bytes_bound", json_object_new_uint64(journal_seg_bound()));
	json_object_object_add(o, "last_seq", json_object_new_int64((int64_t)j->next_seq));
	json_object_object_add(o, "read_only", json_object_new_boolean(j->werr != 0));
	if (j->werr) {
		json_object_object_add(o, "write_error", json_object_new_string(strerror(-j->werr)));
		json_object_object_add(o, "write_errno", json_object_new_int(-j->werr));
		json_object_object_add(o, "write_error_object", json_object_new_string(j->werr_oid));
		json_object_object_add(o, "write_error_since_s",
				       json_object_new_double((double)(now_mono_ns() - j->werr_since_ns) / 1e9));
		json_object_object_add(o, "write_attempts", json_object_new_int64((int64_t)j->werr_retries));
	}
	pthread_mutex_unlock(&j->lock);
	pthread_mutex_lock(&j->seg_lock);
	json_object_object_add(o, "sealed_segments", json_object_new_int64((int64_t)j->nsealed));
	pthread_mutex_unlock(&j->seg_lock);
	json_object_object_add(o, "format", json_object_new_int((int)atomic_load(&j->pub_fmt)));
	json_object_object_add(o, "expire_segment", json_object_new_int64((int64_t)atomic_load(&j->pub_expire_seg)));
	json_object_object_add(o, "head_segment", json_object_new_int64((int64_t)atomic_load(&j->pub_head_seg)));
	json_object_object_add(o, "segment_size", json_object_new_int64((int64_t)j->seg_size));
	json_object_object_add(o, "writes", json_object_new_int64((int64_t)w));
	json_object_object_add(o, "entries", json_object_new_int64((int64_t)e));
	json_object_object_add(o, "avg_entries_per_write", json_object_new_double(w ? (double)e / (double)w : 0.0));
	return o;
}

int journal_health(struct mds *m, char *msg, size_t len)
{
	struct journal *j = m->j;
	int err;

	pthread_mutex_lock(&j->lock);
	err = j->werr;
	if (err)
		snprintf(msg, len, "MDS is read-only: journal writes to %s fail with %s since %.0f s (%" PRIu64
			 " attempts); mutations are refused with that error until a write succeeds (retried every "
			 "%.1f s at most)", j->werr_oid, strerror(-err), (double)(now_mono_ns() - j->werr_since_ns) / 1e9,
			 j->werr_retries, cfg_double(CFG_mds_journal_retry_interval));
	pthread_mutex_unlock(&j->lock);
	return err;
}

static void ops_add(struct json_object *a, const struct jitem *it, uint64_t now, const char *state)
{
	struct json_object *o;

	if (!it->op)
		return;	/* a session frame, not a request */
	o = json_object_new_object();
	json_object_object_add(o, "session", json_object_new_int64((int64_t)it->sid));
	json_object_object_add(o, "tid", json_object_new_int64((int64_t)it->tid));
	json_object_object_add(o, "op", json_object_new_string(mdsp_op_name(it->op)));
	json_object_object_add(o, "state", json_object_new_string(state));
	json_object_object_add(o, "age_ms", json_object_new_double((double)mono_since(now, it->start_ns) / 1e6));
	json_object_array_add(a, o);
}

/* A request throttled before it starts: why, and against what. */
static void waiter_add(struct json_object *a, const struct jwaiter *w, uint64_t now, uint64_t qbytes)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "session", json_object_new_int64((int64_t)w->sid));
	json_object_object_add(o, "tid", json_object_new_int64((int64_t)w->tid));
	json_object_object_add(o, "op", json_object_new_string(mdsp_op_name(w->op)));
	json_object_object_add(o, "state", json_object_new_string(w->segments ?
		"throttled: journal segments in memory over their bound (waiting for expiry)" :
		"throttled: journal queue over mds_journal_max_pending (waiting for a write)"));
	if (w->segments) {
		json_object_object_add(o, "segment_bytes", json_object_new_uint64(journal_seg_bytes()));
		json_object_object_add(o, "bound", json_object_new_uint64(journal_seg_bound()));
	} else {
		json_object_object_add(o, "queued_bytes", json_object_new_uint64(qbytes));
		json_object_object_add(o, "bound", json_object_new_uint64(journal_queue_bound()));
	}
	json_object_object_add(o, "age_ms", json_object_new_double((double)mono_since(now, w->start_ns) / 1e6));
	json_object_array_add(a, o);
}

void journal_set_hooks(struct mds *m, const struct journal_hooks *h)
{
	m->journal_hooks = h;
}

struct json_object *journal_ops_json(struct mds *m)
{
	struct journal *j = m->j;
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();
	const struct jitem *it;
	uint64_t now = now_mono_ns();

	/* requests parked for revokes first (mds->lock, then alone the journal's) */
	pthread_mutex_lock(&m->lock);
	m->journal_hooks->waiters_json(m, a);
	pthread_mutex_unlock(&m->lock);
	if (j) {
		pthread_mutex_lock(&j->lock);
		for (it = j->writing_items; it; it = it->next)
			ops_add(a, it, now, "journal write in progress");
		for (it = j->items; it; it = it->next)
			ops_add(a, it, now, "waiting for the journal");
		for (const struct jwaiter *w = j->waiters; w; w = w->next)
			waiter_add(a, w, now, j->qbytes);
		if (j->werr)
			json_object_object_add(o, "journal_write_error", json_object_new_string(strerror(-j->werr)));
		pthread_mutex_unlock(&j->lock);
	}
	json_object_object_add(o, "num_ops", json_object_new_int64((int64_t)json_object_array_length(a)));
	json_object_object_add(o, "ops", a);
	return o;
}

uint64_t journal_oldest_op_ns(struct mds *m)
{
	struct journal *j = m->j;
	const struct jitem *it;
	uint64_t t = 0;

	if (!j)
		return 0;
	pthread_mutex_lock(&j->lock);
	for (it = j->writing_items; it && !t; it = it->next)
		if (it->op)
			t = it->start_ns;
	for (it = j->items; it && !t; it = it->next)
		if (it->op)
			t = it->start_ns;
	pthread_mutex_unlock(&j->lock);
	return t;
}

uint64_t journal_segments_behind(struct mds *m)
{
	struct journal *j = m->j;
	uint64_t head, exp;

	if (!j)
		return 0;
	head = atomic_load(&j->pub_head_seg);
	exp = atomic_load(&j->pub_expire_seg);
	return head > exp ? head - exp : 0;
}
