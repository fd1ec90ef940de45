/*
 * journal.c - the MDS journal: a redo log of omap edits with group commit.
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
 * mds_journal_max_delay can add a wait.
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
 * Expire: a sealed segment's edits are applied to their objects (one
 * compound op per object, all in parallel), then the header's expire
 * position moves past the segment and the segment object is removed.  The
 * segment's bytes stay in memory until then, so expiry reads nothing back.
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
#include "common/log.h"
#include "common/perf.h"
#include "common/time.h"
#include "mds/codec.h"
#include "mds/journal_int.h"
#include "mds/mds.h"
#include "mds/journal.h"
#include "mds/mdcache.h"
#include "mds/net.h"

struct jchunk {
	struct jchunk *next;
	uint8_t *data;
	size_t len;
};

/*
 * One segment.  The current one (j->cur) is owned by the writer thread
 * (and by replay/start before the writer runs); sealed ones are on the
 * sealed list, owned by expiry.
 */
struct jseg {
	struct jseg *next;
	uint64_t no;
	uint32_t fmt;
	size_t len;                   /* bytes written (durable) and valid */
	struct jchunk *chunks, **tail;
	uint64_t first_ns;            /* when its first EDITS entry was written (0: none yet) */
	uint64_t nentries;            /* entries of every type */
	uint64_t nedits;
	uint64_t start_seq;           /* v2: seq of its SEG_START */
	uint64_t last_seq;            /* seq of its last entry (SEG_END once sealed) */
	bool opened;                  /* v2: SEG_START is durable (else the next write starts it) */
	bool trunc;                   /* the object holds a torn tail past len: cut it with the next write */
};

struct journal {
	pthread_mutex_t lock;         /* protects the fields up to "writer" */
	pthread_cond_t cond;
	struct mdsp_buf pending;      /* encoded entries not yet written */
	uint32_t npending;
	struct jitem *items, **items_tail;
	struct jitem *writing_items;	/* the batch the writer has taken (`ops`); protected by lock */
	uint64_t next_seq;            /* last seq handed out */
	bool stop, seal_req, writing;
	bool draining;                /* shutdown: write what is queued at once (journal_drain) */
	uint64_t seg_size;
	size_t cur_len;               /* copies of cur->len, cur->nedits and cur->first_ns for journal_tick */
	uint64_t cur_nedits;
	uint64_t cur_first_ns;
	/* write failures: while werr != 0 the MDS is read-only */
	int werr;
	uint64_t werr_since_ns, werr_retries, werr_logged_ns;
	char werr_oid[64];

	pthread_t writer;
	bool writer_started;
	struct jseg *cur;             /* writer-owned (and replay) */

	_Atomic int ro_err;           /* copy of werr, read without the lock by journal_admit() */

	pthread_mutex_t hdr_lock;     /* protects hdr; held across a header write so that
				       * two writers (the journal writer naming a new head, expiry
				       * moving the expire position) never overtake each other */
	struct jheader hdr;
	/* what the header on disk says, for status (no hdr_lock: a header
	 * write may take an OSD timeout) */
	_Atomic uint64_t pub_expire_seg, pub_head_seg;
	_Atomic uint32_t pub_fmt;

	pthread_mutex_t seg_lock;     /* protects sealed list */
	struct jseg *sealed, **sealed_tail;
	uint64_t nsealed;
	pthread_mutex_t expire_lock;  /* one expiry at a time */
	uint64_t expire_seg;          /* protected by expire_lock */
	uint64_t removed_upto;        /* segment objects below this are removed; expire_lock */
	bool expire_failing;          /* expire_lock: the last expiry failed (log once) */
	_Atomic uint64_t clean_below; /* entries with a lower seq are expired (0: replayed ones are not yet) */
	uint64_t replay_last_edit;    /* seq of the last EDITS entry replayed at start (v2) */

	char damage[1536];             /* why replay refused the journal (-EUCLEAN) */

	pthread_cond_t space;         /* pending shrank (throttled requests wait on it) */
	struct perf_counter writes, entries, bytes, expired, expire_errors, throttled, write_errors, refused;
	struct hist batch, write_lat, expire_lat;
};

static struct jseg *jseg_new(uint64_t no, uint32_t fmt)
{
	struct jseg *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->no = no;
	s->fmt = fmt;
	s->tail = &s->chunks;
	return s;
}

static void jseg_free(struct jseg *s)
{
	struct jchunk *c, *n;

	for (c = s->chunks; c; c = n) {
		n = c->next;
		free(c->data);
		free(c);
	}
	free(s);
}

static int jseg_add_chunk(struct jseg *s, uint8_t *data, size_t len)
{
	struct jchunk *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->data = data;
	c->len = len;
	*s->tail = c;
	s->tail = &c->next;
	s->len += len;
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
static void hdr_publish(struct journal *j)
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
static void write_failed(struct mds *m, const char *oid, int r)
{
	struct journal *j = m->j;
	uint64_t now = now_mono_ns();

	perf_inc(&j->write_errors, 1);
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
			hdr_publish(j);
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

uint64_t journal_submit_locked(struct mds *m, struct txn *t, struct jitem *item)
{
	struct journal *j = m->j;
	uint64_t seq;

	pthread_mutex_lock(&j->lock);
	if (t && t->n) {
		int i;

		seq = ++j->next_seq;
		jent_put(&j->pending, JE_EDITS, seq, t->b.data, t->b.len);
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
	}
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
	return seq;
}

void journal_throttle(struct mds *m, struct conn *c)
{
	struct journal *j = m->j;
	uint64_t max = cfg_uint(CFG_mds_journal_max_pending);

	if (!max)
		return;
	pthread_mutex_lock(&j->lock);
	if (j->pending.len > max && !j->werr && c) {
		/* about to wait: the replies of the reader's batch go first (not
		 * under the journal lock: send_lock comes before it) */
		pthread_mutex_unlock(&j->lock);
		conn_uncork(c);
		pthread_mutex_lock(&j->lock);
	}
	/* while read-only nothing drains: the request is refused (or let
	 * through) by journal_admit() instead of blocking its connection */
	while (j->pending.len > max && !j->stop && !j->werr) {
		perf_inc(&j->throttled, 1);
		pthread_cond_wait(&j->space, &j->lock);
	}
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

static bool writer_idle_locked(struct journal *j)
{
	return !j->npending && !j->items && !j->seal_req && !j->cur->trunc;
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

			if (delay > 0 && !j->stop && !j->draining && j->npending && j->npending < maxb) {
				struct timespec ts = ns_to_timespec(now_mono_ns() + (uint64_t)(delay * 1e9));

				while (j->npending < maxb && !j->stop && !j->draining &&
				       pthread_cond_timedwait(&j->cond, &j->lock, &ts) == 0)
					;
			}
		}
		buf = j->pending;
		mdsp_buf_init(&j->pending);
		pthread_cond_broadcast(&j->space);
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
			j->writing = false;
			break;
		}
		if (seal)
			seal_cur(j, next_start);
		pthread_mutex_lock(&j->lock);
		j->writing = false;
		j->cur_len = j->cur->len;
		j->cur_nedits = j->cur->nedits;
		j->cur_first_ns = j->cur->first_ns;
		pthread_cond_broadcast(&j->cond);
	}
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

/* ---- applying edits to the objects (expire, journal reset) ---------------- */

struct objop {
	char *oid;
	struct store_op *op;
	bool needs_obj;         /* op has a sub-op that fails on a missing object */
	bool create_first;      /* op creates the object first (a set follows such a sub-op) */
};

struct japply {
	struct objop *tab;
	size_t cap, n;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t inflight;
	int first_err;
};

static uint32_t str_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s) {
		h ^= (uint8_t)*s++;
		h *= 16777619u;
	}
	return h;
}

struct japply *japply_new(void)
{
	struct japply *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	pthread_mutex_init(&x->lock, NULL);
	pthread_cond_init(&x->cond, NULL);
	return x;
}

static struct objop *objop_get(struct japply *x, const char *oid)
{
	size_t i;

	if ((x->n + 1) * 2 > x->cap) {
		size_t ncap = x->cap ? x->cap * 2 : 64, k;
		struct objop *nt = calloc(ncap, sizeof(*nt));

		if (!nt)
			return NULL;
		for (k = 0; k < x->cap; k++) {
			if (!x->tab[k].oid)
				continue;
			i = str_hash(x->tab[k].oid) & (ncap - 1);
			while (nt[i].oid)
				i = (i + 1) & (ncap - 1);
			nt[i] = x->tab[k];
		}
		free(x->tab);
		x->tab = nt;
		x->cap = ncap;
	}
	i = str_hash(oid) & (x->cap - 1);
	while (x->tab[i].oid) {
		if (!strcmp(x->tab[i].oid, oid))
			return &x->tab[i];
		i = (i + 1) & (x->cap - 1);
	}
	x->tab[i].oid = strdup(oid);
	x->tab[i].op = store_op_new();
	if (!x->tab[i].oid || !x->tab[i].op) {
		free(x->tab[i].oid);
		if (x->tab[i].op)
			store_op_free(x->tab[i].op);
		x->tab[i].oid = NULL;
		x->tab[i].op = NULL;
		return NULL;
	}
	x->n++;
	return &x->tab[i];
}

int japply_edit(void *arg, int op, const char *oid, const char *key, const void *val, uint32_t len,
		const char *key2)
{
	struct japply *x = arg;
	struct objop *o = objop_get(x, oid);

	if (!o)
		return -ENOMEM;
	/*
	 * One compound op per object, in journal order.  The removals (rm,
	 * rm_range, clear, remove) fail the whole op with -ENOENT on a missing
	 * object, as in RADOS, and a set after them would go down with it: a
	 * removal edit queued before a set on an object that does not exist yet
	 * (made, emptied and made again in one segment; a trim journaled before
	 * the set that creates the object, as the completed table's was until
	 * 7a86309).  Such an op creates the object first: the removals then do
	 * nothing on a missing object and the sets apply.
	 */
	switch (op) {
	case EDIT_SET:
		if (o->needs_obj && !o->create_first) {
			store_op_create_first(o->op);
			o->create_first = true;
		}
		store_op_omap_set(o->op, key, val, len);
		break;
	case EDIT_RM:
		store_op_omap_rm(o->op, key);
		o->needs_obj = true;
		break;
	case EDIT_RMRANGE:
		store_op_omap_rm_range(o->op, key, *key2 ? key2 : NULL);
		o->needs_obj = true;
		break;
	case EDIT_CLEAR:
		store_op_omap_clear(o->op);
		o->needs_obj = true;
		break;
	case EDIT_REMOVE:
		/* the object goes: drop what was queued for it, remove it */
		store_op_free(o->op);
		o->op = store_op_new();
		if (!o->op)
			return -ENOMEM;
		store_op_remove(o->op);
		o->needs_obj = true;
		o->create_first = false;
		break;
	default:
		return -EBADMSG;
	}
	return 0;
}

/*
 * -ENOENT is not an error here: with the sets guarded (japply_edit), only an
 * op of removals alone can fail so, on an object that is not there, and what
 * it was to do - those keys or that object gone - already holds: an object
 * removed by an earlier application of the same segment (an expiry cut short
 * by a crash is redone whole), or one the segment created and removed again
 * (whose edits the remove dropped).  The object was never half-applied: a
 * compound op applies whole or not at all.
 */
static void japply_cb(int r, void *arg)
{
	struct japply *x = arg;

	pthread_mutex_lock(&x->lock);
	if (r && r != -ENOENT && !x->first_err)
		x->first_err = r;
	x->inflight--;
	pthread_cond_signal(&x->cond);
	pthread_mutex_unlock(&x->lock);
}

void japply_free(struct japply *x)
{
	size_t i;

	if (!x)
		return;
	for (i = 0; i < x->cap; i++) {
		if (x->tab[i].op)
			store_op_free(x->tab[i].op);
		free(x->tab[i].oid);
	}
	free(x->tab);
	pthread_mutex_destroy(&x->lock);
	pthread_cond_destroy(&x->cond);
	free(x);
}

int japply_run(struct japply *x, struct store_pool *pool, size_t *nobjects)
{
	size_t i;
	int r;

	if (nobjects)
		*nobjects = x->n;
	for (i = 0; i < x->cap; i++) {
		struct objop *o = &x->tab[i];

		if (!o->oid)
			continue;
		pthread_mutex_lock(&x->lock);
		x->inflight++;
		pthread_mutex_unlock(&x->lock);
		r = store_op_submit(pool, o->oid, o->op, japply_cb, x);
		o->op = NULL;   /* consumed */
		if (r) {
			pthread_mutex_lock(&x->lock);
			x->inflight--;
			if (!x->first_err)
				x->first_err = r;
			pthread_mutex_unlock(&x->lock);
		}
	}
	pthread_mutex_lock(&x->lock);
	while (x->inflight)
		pthread_cond_wait(&x->cond, &x->lock);
	r = x->first_err;
	pthread_mutex_unlock(&x->lock);
	japply_free(x);
	return r;
}

/* ---- expire --------------------------------------------------------------- */

/*
 * Remove the objects of expired segments below @below.  Nothing depends on
 * the removal; the header's removed_upto lets a restart finish what a
 * failed removal left.  Caller holds expire_lock.
 */
static void remove_segments(struct mds *m, uint64_t below)
{
	struct journal *j = m->j;
	char oid[64];
	int r;

	for (; j->removed_upto < below; j->removed_upto++) {
		struct store_op *op = store_op_new();

		if (!op)
			return;
		journal_oid_seg(oid, sizeof(oid), j->removed_upto);
		store_op_remove(op);
		r = store_op_exec(m->meta, oid, op);
		if (r && r != -ENOENT)
			dout(JOURNAL, 1, "removing expired segment %s: %s", oid, strerror(-r));
	}
}

static int expire_one(struct mds *m, struct jseg *s)
{
	struct journal *j = m->j;
	struct japply *x = japply_new();
	struct jchunk *c;
	size_t nobj = 0;
	int r = x ? 0 : -ENOMEM;
	uint64_t t0 = now_mono_ns();

	for (c = s->chunks; c && !r; c = c->next) {
		size_t off = 0;
		struct jentry e;

		while (off < c->len && !r) {
			if (jent_parse(s->fmt, c->data + off, c->len - off, &e) != JP_OK) {
				r = -EBADMSG;
				break;
			}
			if (e.type == JE_EDITS)
				r = jedits_for_each(e.payload, e.plen, japply_edit, x);
			off += e.len;
		}
	}
	if (r)
		japply_free(x);
	else
		r = japply_run(x, m->meta, &nobj);
	if (!r) {
		pthread_mutex_lock(&j->hdr_lock);
		j->hdr.expire_seg = s->no + 1;
		j->hdr.expire_seq = s->last_seq + 1;
		if (j->hdr.head_seg < s->no)
			j->hdr.head_seg = s->no;   /* it exists; expire may not pass head + 1 */
		j->hdr.removed_upto = j->removed_upto;
		r = journal_header_write(m->meta, &j->hdr);
		if (!r)
			hdr_publish(j);
		pthread_mutex_unlock(&j->hdr_lock);
	}
	if (r) {
		/* retried at every tick: logged once per failing stretch */
		if (!j->expire_failing)
			derr(JOURNAL, "expiring journal segment %" PRIx64 " failed (%s); will retry", s->no, strerror(-r));
		else
			dout(JOURNAL, 5, "expiring journal segment %" PRIx64 " failed again (%s)", s->no, strerror(-r));
		j->expire_failing = true;
		perf_inc(&j->expire_errors, 1);
		return r;
	}
	if (j->expire_failing)
		dinfo(JOURNAL, "expiring journal segment %" PRIx64 " succeeded again", s->no);
	j->expire_failing = false;
	j->expire_seg = s->no + 1;
	if (s->last_seq >= j->replay_last_edit && s->last_seq + 1 > atomic_load(&j->clean_below))
		atomic_store(&j->clean_below, s->last_seq + 1);
	remove_segments(m, j->expire_seg);
	perf_inc(&j->expired, 1);
	hist_add(&j->expire_lat, now_mono_ns() - t0);
	dout(JOURNAL, 5, "expired journal segment %" PRIx64 " (%" PRIu64 " entries, %zu objects)", s->no,
	     s->nentries, nobj);
	return 0;
}

static void expire_sealed(struct mds *m)
{
	struct journal *j = m->j;
	struct jseg *s;

	pthread_mutex_lock(&j->expire_lock);
	for (;;) {
		pthread_mutex_lock(&j->seg_lock);
		s = j->sealed;
		pthread_mutex_unlock(&j->seg_lock);
		if (!s || expire_one(m, s))
			break;
		pthread_mutex_lock(&j->seg_lock);
		j->sealed = s->next;
		if (!j->sealed)
			j->sealed_tail = &j->sealed;
		j->nsealed--;
		pthread_mutex_unlock(&j->seg_lock);
		jseg_free(s);
	}
	pthread_mutex_unlock(&j->expire_lock);
}

uint64_t journal_clean_below(struct mds *m)
{
	return atomic_load(&m->j->clean_below);
}

void journal_tick(struct mds *m)
{
	struct journal *j = m->j;
	double age = cfg_double(CFG_mds_journal_expire_age);

	pthread_mutex_lock(&j->lock);
	if (j->cur_nedits && j->cur_first_ns && !j->seal_req &&
	    now_mono_ns() - j->cur_first_ns > (uint64_t)(age * 1e9)) {
		j->seal_req = true;
		pthread_cond_signal(&j->cond);
	}
	pthread_mutex_unlock(&j->lock);
	expire_sealed(m);
}

/* ---- replay and start ------------------------------------------------------ */

static int replay_edit(void *arg, int op, const char *oid, const char *key, const void *val, uint32_t len,
		       const char *key2)
{
	struct mds *m = arg;
	int r = mdcache_replay_edit(m, op, oid, key, val, len, key2);

	if (r)
		derr(JOURNAL, "replay: edit %d of %s/%s failed: %s (skipped)", op, oid, key, strerror(-r));
	return 0;
}

/* jent_fn of replay: apply an entry to memory.  Caller holds mds->lock. */
static int replay_entry(void *arg, uint64_t segno, size_t off, const struct jentry *e)
{
	struct mds *m = arg;
	int r;

	if (e->type != JE_EDITS)
		return 0;
	r = jedits_for_each(e->payload, e->plen, replay_edit, m);
	if (r)
		derr(JOURNAL, "replay: entry %" PRIu64 " at %" PRIx64 "+%zu does not decode (%s); skipped", e->seq,
		     segno, off, strerror(-r));
	m->j->replay_last_edit = e->seq;
	return 0;
}

/* jseg_fn of replay: keep a segment's bytes for expiry (or as the current one). */
static int replay_segment(void *arg, const struct jseg_info *si, uint8_t *data)
{
	struct mds *m = arg;
	struct journal *j = m->j;
	struct jseg *s = jseg_new(si->no, j->hdr.fmt);

	if (!s || jseg_add_chunk(s, data, si->valid)) {
		free(data);
		free(s);
		return -ENOMEM;
	}
	s->first_ns = si->nedits ? now_mono_ns() : 0;
	s->nentries = si->nentries;
	s->nedits = si->nedits;
	s->start_seq = si->first_seq;
	s->last_seq = si->last_seq;
	s->opened = si->nentries > 0;
	s->trunc = si->valid < si->size;
	if (si->sealed) {
		*j->sealed_tail = s;
		j->sealed_tail = &s->next;
		j->nsealed++;
	} else {
		j->cur = s;
	}
	return 0;
}

const char *journal_damage_msg(struct mds *m)
{
	return m->j && m->j->damage[0] ? m->j->damage : NULL;
}

int journal_replay(struct mds *m)
{
	struct journal *j;
	struct jscan_result res;
	struct jreader rd;
	const char *why;
	int r;

	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	pthread_mutex_init(&j->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&j->cond, &ca);
		pthread_cond_init(&j->space, NULL);
		pthread_condattr_destroy(&ca);
	}
	pthread_mutex_init(&j->hdr_lock, NULL);
	pthread_mutex_init(&j->seg_lock, NULL);
	pthread_mutex_init(&j->expire_lock, NULL);
	mdsp_buf_init(&j->pending);
	j->items_tail = &j->items;
	j->sealed_tail = &j->sealed;
	j->seg_size = cfg_uint(CFG_mds_journal_segment_size);
	if (j->seg_size < 4096)
		j->seg_size = 4096;
	m->j = j;

	r = journal_header_read(m->meta, &j->hdr, &why);
	if (r == -ENOENT)
		why = "the object is missing";
	if (r == -EBADMSG || r == -ENOENT) {
		snprintf(j->damage, sizeof(j->damage),
			 "the journal header %s is damaged: %s.  The MDS does not start on a damaged journal: "
			 "see `loligo-mds --journal-inspect`; `loligo-mds journal reset --yes-i-really-mean-it` "
			 "writes a new one (the changes still in the journal are lost)", OID_JOURNAL, why);
		derr(JOURNAL, "%s", j->damage);
		return -EUCLEAN;
	}
	if (r) {
		derr(JOURNAL, "cannot read the journal header %s: %s", OID_JOURNAL, strerror(-r));
		return r;
	}
	j->expire_seg = j->hdr.expire_seg;
	j->removed_upto = j->hdr.removed_upto;
	hdr_publish(j);
	journal_store_reader(m->meta, &rd);
	m->replaying = true;
	pthread_mutex_lock(&m->lock);
	r = jscan(&j->hdr, &rd, replay_entry, replay_segment, m, &res);
	pthread_mutex_unlock(&m->lock);
	m->replaying = false;
	if (r == -EUCLEAN) {
		char ent[48] = "";

		if (res.bad_seq)
			snprintf(ent, sizeof(ent), " (entry %" PRIu64 ")", res.bad_seq);
		snprintf(j->damage, sizeof(j->damage),
			 "the journal is damaged: segment object %s, offset %zu%s: %s.  This is not the torn tail "
			 "of a crash (that can only be at the end of the newest segment), so the MDS does not start: "
			 "replaying past it would serve a filesystem that silently lost changes.  See "
			 "`loligo-mds --journal-inspect`, save the journal with `loligo-mds journal export FILE`, "
			 "then repair or restore the object, or run `loligo-mds journal reset --yes-i-really-mean-it` "
			 "(applies every entry before the damage and drops the rest: the changes from there on are lost)",
			 res.bad_oid, res.bad_off, ent, res.why);
		derr(JOURNAL, "%s", j->damage);
		return r;
	}
	if (r) {
		derr(JOURNAL, "journal replay failed: %s", strerror(-r));
		return r;
	}
	if (!j->cur) {
		/* the newest segment is sealed, or there is none: the next one
		 * starts with the next write */
		j->cur = jseg_new(res.next_seg, j->hdr.fmt);
		if (!j->cur)
			return -ENOMEM;
	}
	if (!j->cur->opened)
		j->cur->start_seq = res.next_seq;
	if (res.torn_bytes)
		dinfo(JOURNAL, "journal segment %" PRIx64 ": cutting a torn tail of %zu bytes at %zu (a write that "
		      "was in flight at a crash, never acknowledged)", res.newest_seg, res.torn_bytes,
		      res.newest_valid);
	/* the last seq handed out: the current segment's last entry, or its
	 * SEG_START's if that is still to be written */
	j->next_seq = j->cur->opened ? j->cur->last_seq : j->cur->start_seq;
	j->cur_len = j->cur->len;
	j->cur_nedits = j->cur->nedits;
	j->cur_first_ns = j->cur->first_ns;
	dinfo(JOURNAL, "journal (format %u) replayed %" PRIu64 " entries from segment %" PRIx64 " to %" PRIx64
	      "+%zu", j->hdr.fmt, res.nedits, j->hdr.expire_seg, j->cur->no, j->cur->len);
	return 0;
}

/*
 * A format-1 journal (replayed with its own rules) is applied to the
 * objects and replaced by an empty format-2 one before the MDS serves.
 * Crash-safe: until the format-2 header is written, a restart replays the
 * format-1 journal again (edits are idempotent).
 */
static int upgrade_v1(struct mds *m)
{
	struct journal *j = m->j;
	struct jseg *cur = j->cur;
	uint64_t next = cur->no + (cur->nentries ? 1 : 0);

	if (!next)
		next = 1;   /* head_seg = next - 1 must be a number below it */
	int r;

	dinfo(JOURNAL, "journal format 1: applying it to the objects and starting a format-2 journal at segment %"
	      PRIx64, next);
	if (cur->nentries) {
		pthread_mutex_lock(&j->seg_lock);
		*j->sealed_tail = cur;
		j->sealed_tail = &cur->next;
		j->nsealed++;
		pthread_mutex_unlock(&j->seg_lock);
		j->cur = NULL;
	} else {
		jseg_free(cur);
		j->cur = NULL;
	}
	expire_sealed(m);
	if (j->sealed) {
		derr(JOURNAL, "cannot convert the format-1 journal: expiring segment %" PRIx64 " failed; fix the "
		     "store and start again", j->sealed->no);
		return -EIO;
	}
	pthread_mutex_lock(&j->hdr_lock);
	j->hdr.fmt = JFMT_V2;
	j->hdr.expire_seg = next;
	j->hdr.expire_seq = 1;
	j->hdr.removed_upto = j->removed_upto;
	j->hdr.head_seg = next - 1;
	r = journal_header_write(m->meta, &j->hdr);
	if (!r)
		hdr_publish(j);
	pthread_mutex_unlock(&j->hdr_lock);
	if (r) {
		derr(JOURNAL, "cannot convert the format-1 journal: writing the header failed: %s", strerror(-r));
		return r;
	}
	j->expire_seg = next;
	j->cur = jseg_new(next, JFMT_V2);
	if (!j->cur)
		return -ENOMEM;
	j->cur->start_seq = 1;
	j->next_seq = 1;
	j->replay_last_edit = 0;
	atomic_store(&j->clean_below, 1);
	j->cur_len = 0;
	j->cur_nedits = 0;
	j->cur_first_ns = 0;
	return 0;
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
	perf_register_counter("mds_journal", "write_errors", &j->write_errors);
	perf_register_counter("mds_journal", "refused_read_only", &j->refused);
	perf_register_hist("mds_journal", "batch_entries", &j->batch);
	perf_register_hist("mds_journal", "write_lat", &j->write_lat);
	perf_register_hist("mds_journal", "expire_lat", &j->expire_lat);
	if (j->hdr.fmt == JFMT_V1) {
		r = upgrade_v1(m);
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
	remove_segments(m, j->expire_seg);
	pthread_mutex_unlock(&j->expire_lock);
	/* what was replayed gets applied to the objects now (a failure is
	 * retried at every tick) */
	expire_sealed(m);
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

void journal_stop(struct mds *m)
{
	struct journal *j = m->j;

	if (!j)
		return;
	if (j->writer_started) {
		pthread_mutex_lock(&j->lock);
		j->stop = true;
		pthread_cond_broadcast(&j->cond);
		pthread_cond_broadcast(&j->space);
		pthread_mutex_unlock(&j->lock);
		pthread_join(j->writer, NULL);
		j->writer_started = false;
	}
	expire_sealed(m);
	pthread_mutex_lock(&j->expire_lock);
	remove_segments(m, j->expire_seg);
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
