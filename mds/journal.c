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
 * On disk, in the metadata pool:
 *   "mds_journal"                 header: expire segment (replay starts there),
 *                                 segments below removed_upto are gone
 *   "mds_journal.<seg %016x>"     append-only segments of entries:
 *        u32 magic, u32 type, u32 len, u32 crc32c(first 12 bytes, payload)
 *        payload (EDITS: u32 count, edits; SEG_END: empty)
 * A segment ends with a SEG_END entry once it is full (or old); replay then
 * moves to the next segment.  The first entry that is short or fails its crc
 * is the torn tail of a write that was never acknowledged: replay stops
 * there and truncates it away.  Positions never go backwards, so nothing
 * stale can follow a torn entry.
 *
 * Group commit: requests queue their entry (under mds->lock, so journal
 * order is the order the changes were made in memory) and go on; one writer
 * thread writes everything queued as one store write, waits for it to be
 * durable, then sends the SAFE replies that rode with those entries.  While
 * one write is in flight the next batch accumulates, so the batch size grows
 * with the load by itself; mds_journal_max_delay can add a wait.
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
#include "mds/mds.h"

#define JE_MAGIC   0x31454a4cu   /* "LJE1" */
#define JE_EDITS   1
#define JE_SEG_END 2
#define JE_HDR_LEN 16
#define V_JHEADER  1

struct jchunk {
	struct jchunk *next;
	uint8_t *data;
	size_t len;
};

struct jseg {
	struct jseg *next;
	uint64_t no;
	size_t len;                   /* bytes written (durable) */
	struct jchunk *chunks, **tail;
	uint64_t first_ns;            /* when its first entry was written */
	uint64_t nentries;
	uint64_t last_seq;            /* entries up to this are in this or older segments */
};

struct journal {
	pthread_mutex_t lock;         /* protects the fields up to "writer" */
	pthread_cond_t cond;
	struct mdsp_buf pending;      /* encoded entries not yet written */
	uint32_t npending;
	struct jitem *items, **items_tail;
	uint64_t next_seq;            /* last seq handed out */
	bool stop, seal_req, writing;
	uint64_t seg_size;
	size_t cur_len;               /* copies of cur->len and cur->first_ns for journal_tick */
	uint64_t cur_first_ns;

	pthread_t writer;
	bool writer_started;
	struct jseg *cur;             /* writer-owned (and replay) */

	pthread_mutex_t seg_lock;     /* protects sealed list */
	struct jseg *sealed, **sealed_tail;
	uint64_t nsealed;
	pthread_mutex_t expire_lock;  /* one expiry at a time */
	uint64_t expire_seg;          /* protected by expire_lock */
	uint64_t removed_upto;        /* segment objects below this are removed; expire_lock */
	_Atomic uint64_t clean_below; /* entries with a lower seq are expired (0: replayed ones are not yet) */

	pthread_cond_t space;         /* pending shrank (throttled requests wait on it) */
	struct perf_counter writes, entries, bytes, expired, expire_errors, throttled;
	struct hist batch, write_lat, expire_lat;
};

static void oid_seg(char *buf, size_t len, uint64_t no)
{
	snprintf(buf, len, OID_JOURNAL ".%016" PRIx64, no);
}

static struct jseg *jseg_new(uint64_t no)
{
	struct jseg *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->no = no;
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

static void entry_put(struct mdsp_buf *b, uint32_t type, const uint8_t *payload, size_t len)
{
	uint8_t h[JE_HDR_LEN];

	le32_put(h, JE_MAGIC);
	le32_put(h + 4, type);
	le32_put(h + 8, (uint32_t)len);
	le32_put(h + 12, crc32c(crc32c(0, h, 12), payload, len));
	enc_bytes(b, h, JE_HDR_LEN);
	enc_bytes(b, payload, len);
}

/* Parse one entry at @p (@avail bytes).  Returns its total length, 0 at a
 * torn/invalid entry. */
static size_t entry_parse(const uint8_t *p, size_t avail, uint32_t *type, const uint8_t **payload, uint32_t *plen)
{
	uint32_t len;

	if (avail < JE_HDR_LEN || le32_get(p) != JE_MAGIC)
		return 0;
	len = le32_get(p + 8);
	if (len > avail - JE_HDR_LEN)
		return 0;
	if (crc32c(crc32c(0, p, 12), p + JE_HDR_LEN, len) != le32_get(p + 12))
		return 0;
	*type = le32_get(p + 4);
	*payload = p + JE_HDR_LEN;
	*plen = len;
	return JE_HDR_LEN + len;
}

typedef int (*edit_fn)(void *arg, int op, const char *oid, const char *key, const void *val, uint32_t len,
		       const char *key2);

/* Walk the edits of one EDITS payload. */
static int edits_for_each(const uint8_t *p, size_t len, edit_fn fn, void *arg)
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

/* ---- header --------------------------------------------------------------- */

static int header_write(struct mds *m, uint64_t expire_seg, uint64_t removed_upto)
{
	struct mdsp_buf b;
	struct store_op *op;
	size_t off;

	mdsp_buf_init(&b);
	off = enc_begin(&b, V_JHEADER, 1);
	enc_u64(&b, expire_seg);
	enc_u64(&b, removed_upto);
	enc_end(&b, off);
	op = store_op_new();
	if (!op || b.oom) {
		if (op)
			store_op_free(op);
		mdsp_buf_free(&b);
		return -ENOMEM;
	}
	store_op_write_full(op, b.data, b.len);
	mdsp_buf_free(&b);
	return store_op_exec(m->meta, OID_JOURNAL, op);
}

static int header_read(struct mds *m, uint64_t *expire_seg, uint64_t *removed_upto)
{
	uint8_t buf[256];
	ssize_t n = store_read(m->meta, OID_JOURNAL, 0, sizeof(buf), buf);
	struct dec c, s;

	if (n < 0)
		return (int)n;
	dec_init(&c, buf, (size_t)n);
	if (!dec_enter(&c, V_JHEADER, &s))
		return -EBADMSG;
	*expire_seg = dec_u64(&s);
	*removed_upto = dec_u64(&s);
	return s.bad ? -EBADMSG : 0;
}

int journal_mkfs(struct mds *m)
{
	return header_write(m, 0, 0);
}

/* ---- submit and the writer ------------------------------------------------ */

uint64_t journal_submit_locked(struct mds *m, struct txn *t, struct jitem *item)
{
	struct journal *j = m->j;
	uint64_t seq;

	pthread_mutex_lock(&j->lock);
	if (t && t->n) {
		int i;

		entry_put(&j->pending, JE_EDITS, t->b.data, t->b.len);
		j->npending++;
		seq = ++j->next_seq;
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

void journal_throttle(struct mds *m)
{
	struct journal *j = m->j;
	uint64_t max = cfg_uint(CFG_mds_journal_max_pending);

	if (!max)
		return;
	pthread_mutex_lock(&j->lock);
	while (j->pending.len > max && !j->stop) {
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

static void seal_cur(struct journal *j)
{
	struct jseg *s = j->cur;

	j->cur = jseg_new(s->no + 1);
	if (!j->cur) {
		derr(JOURNAL, "out of memory starting journal segment");
		_exit(2);
	}
	pthread_mutex_lock(&j->seg_lock);
	s->next = NULL;
	*j->sealed_tail = s;
	j->sealed_tail = &s->next;
	j->nsealed++;
	pthread_mutex_unlock(&j->seg_lock);
	dout(JOURNAL, 5, "sealed journal segment %" PRIx64 " (%zu bytes)", s->no, s->len);
}

static void *writer_main(void *arg)
{
	struct mds *m = arg;
	struct journal *j = m->j;
	struct mdsp_buf buf;
	struct jitem *items;
	uint32_t n;
	uint64_t last;
	bool seal, stop;
	char oid[64];

	pthread_mutex_lock(&j->lock);
	for (;;) {
		while (!j->npending && !j->items && !j->seal_req && !j->stop)
			pthread_cond_wait(&j->cond, &j->lock);
		if (j->stop && !j->npending && !j->items && !j->seal_req && !j->cur->len)
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

			if (delay > 0 && !j->stop && j->npending && j->npending < maxb) {
				struct timespec ts = ns_to_timespec(now_mono_ns() + (uint64_t)(delay * 1e9));

				while (j->npending < maxb && !j->stop &&
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
		j->items = NULL;
		j->items_tail = &j->items;
		last = j->next_seq;
		seal = j->seal_req;
		j->seal_req = false;
		stop = j->stop;
		j->writing = true;
		pthread_mutex_unlock(&j->lock);

		if (buf.oom) {
			derr(JOURNAL, "out of memory building a journal write: stopping");
			_exit(2);
		}
		if (stop || j->cur->len + buf.len >= j->seg_size)
			seal = true;
		if (j->cur->len + buf.len == 0)
			seal = false;   /* never seal an empty segment */
		if (seal)
			entry_put(&buf, JE_SEG_END, NULL, 0);
		if (buf.len) {
			struct store_op *op = store_op_new();
			uint64_t t0 = now_mono_ns();
			int r;

			oid_seg(oid, sizeof(oid), j->cur->no);
			if (!op) {
				r = -ENOMEM;
			} else {
				store_op_write(op, j->cur->len, buf.data, buf.len);
				r = store_op_exec(m->meta, oid, op);
			}
			if (r) {
				/* nothing acknowledged SAFE may be lost: we cannot go on */
				derr(JOURNAL, "journal write to %s failed (%s): stopping the MDS", oid, strerror(-r));
				_exit(2);
			}
			hist_add(&j->write_lat, now_mono_ns() - t0);
			DTRACE_PROBE3(loligo_mds, journal_write, n, buf.len, now_mono_ns() - t0);
			if (n) {
				perf_inc(&j->writes, 1);
				perf_inc(&j->entries, n);
				hist_add(&j->batch, n);
			}
			perf_inc(&j->bytes, buf.len);
			if (!j->cur->len)
				j->cur->first_ns = now_mono_ns();
			j->cur->nentries += n;
			j->cur->last_seq = last;
			if (jseg_add_chunk(j->cur, buf.data, buf.len)) {
				derr(JOURNAL, "out of memory keeping a journal segment");
				_exit(2);
			}
			dout(JOURNAL, 20, "wrote %u entries (%zu bytes) to %s", n, buf.len, oid);
		} else {
			mdsp_buf_free(&buf);
		}
		items_done(m, items, last);
		if (seal)
			seal_cur(j);
		pthread_mutex_lock(&j->lock);
		j->writing = false;
		j->cur_len = j->cur->len;
		j->cur_first_ns = j->cur->first_ns;
		pthread_cond_broadcast(&j->cond);
	}
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

/* ---- expire --------------------------------------------------------------- */

struct objop {
	char *oid;
	struct store_op *op;
	bool has_remove;
};

struct expire_ctx {
	struct objop *tab;
	size_t cap, n;
	int err;
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

static struct objop *objop_get(struct expire_ctx *x, const char *oid)
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

static int expire_edit(void *arg, int op, const char *oid, const char *key, const void *val, uint32_t len,
		       const char *key2)
{
	struct expire_ctx *x = arg;
	struct objop *o = objop_get(x, oid);

	if (!o)
		return -ENOMEM;
	switch (op) {
	case EDIT_SET:
		store_op_omap_set(o->op, key, val, len);
		break;
	case EDIT_RM:
		store_op_omap_rm(o->op, key);
		break;
	case EDIT_RMRANGE:
		store_op_omap_rm_range(o->op, key, *key2 ? key2 : NULL);
		break;
	case EDIT_CLEAR:
		store_op_omap_clear(o->op);
		break;
	case EDIT_REMOVE:
		/* the object goes: drop what was queued for it, remove it */
		store_op_free(o->op);
		o->op = store_op_new();
		if (!o->op)
			return -ENOMEM;
		store_op_remove(o->op);
		o->has_remove = true;
		break;
	default:
		return -EBADMSG;
	}
	return 0;
}

static void expire_cb(int r, void *arg)
{
	struct expire_ctx *x = arg;

	pthread_mutex_lock(&x->lock);
	if (r && r != -ENOENT && !x->first_err)
		x->first_err = r;
	x->inflight--;
	pthread_cond_signal(&x->cond);
	pthread_mutex_unlock(&x->lock);
}

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
		oid_seg(oid, sizeof(oid), j->removed_upto);
		store_op_remove(op);
		r = store_op_exec(m->meta, oid, op);
		if (r && r != -ENOENT)
			dout(JOURNAL, 1, "removing expired segment %s: %s", oid, strerror(-r));
	}
}

static int expire_one(struct mds *m, struct jseg *s)
{
	struct journal *j = m->j;
	struct expire_ctx x;
	struct jchunk *c;
	size_t i;
	int r = 0;
	uint64_t t0 = now_mono_ns();

	memset(&x, 0, sizeof(x));
	pthread_mutex_init(&x.lock, NULL);
	pthread_cond_init(&x.cond, NULL);
	for (c = s->chunks; c && !r; c = c->next) {
		size_t off = 0, l;
		uint32_t type, plen;
		const uint8_t *payload;

		while (off < c->len && !r) {
			l = entry_parse(c->data + off, c->len - off, &type, &payload, &plen);
			if (!l) {
				r = -EBADMSG;
				break;
			}
			if (type == JE_EDITS)
				r = edits_for_each(payload, plen, expire_edit, &x);
			off += l;
		}
	}
	for (i = 0; i < x.cap; i++) {
		struct objop *o = &x.tab[i];

		if (!o->oid)
			continue;
		if (!r) {
			pthread_mutex_lock(&x.lock);
			x.inflight++;
			pthread_mutex_unlock(&x.lock);
			if (store_op_submit(m->meta, o->oid, o->op, expire_cb, &x)) {
				pthread_mutex_lock(&x.lock);
				x.inflight--;
				if (!x.first_err)
					x.first_err = -EIO;
				pthread_mutex_unlock(&x.lock);
			}
		} else {
			store_op_free(o->op);
		}
		free(o->oid);
	}
	pthread_mutex_lock(&x.lock);
	while (x.inflight)
		pthread_cond_wait(&x.cond, &x.lock);
	pthread_mutex_unlock(&x.lock);
	free(x.tab);
	pthread_mutex_destroy(&x.lock);
	pthread_cond_destroy(&x.cond);
	if (!r)
		r = x.first_err;
	if (r) {
		derr(JOURNAL, "expiring journal segment %" PRIx64 " failed (%s); will retry", s->no, strerror(-r));
		perf_inc(&j->expire_errors, 1);
		return r;
	}
	r = header_write(m, s->no + 1, j->removed_upto);
	if (r) {
		derr(JOURNAL, "writing the journal header failed (%s); will retry", strerror(-r));
		return r;
	}
	j->expire_seg = s->no + 1;
	if (s->last_seq + 1 > atomic_load(&j->clean_below))
		atomic_store(&j->clean_below, s->last_seq + 1);
	remove_segments(m, j->expire_seg);
	perf_inc(&j->expired, 1);
	hist_add(&j->expire_lat, now_mono_ns() - t0);
	dout(JOURNAL, 5, "expired journal segment %" PRIx64 " (%" PRIu64 " entries, %zu objects)", s->no,
	     s->nentries, x.n);
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
	if (j->cur_len && !j->seal_req && now_mono_ns() - j->cur_first_ns > (uint64_t)(age * 1e9)) {
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

int journal_replay(struct mds *m)
{
	struct journal *j;
	uint64_t seg = 0, nentries = 0;
	int r;
	char oid[64];

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
	pthread_mutex_init(&j->seg_lock, NULL);
	pthread_mutex_init(&j->expire_lock, NULL);
	mdsp_buf_init(&j->pending);
	j->items_tail = &j->items;
	j->sealed_tail = &j->sealed;
	j->seg_size = cfg_uint(CFG_mds_journal_segment_size);
	if (j->seg_size < 4096)
		j->seg_size = 4096;
	m->j = j;

	r = header_read(m, &seg, &j->removed_upto);
	if (r) {
		derr(JOURNAL, "cannot read the journal header %s: %s", OID_JOURNAL, strerror(-r));
		return r;
	}
	j->expire_seg = seg;
	m->replaying = true;
	for (;;) {
		struct store_stat sst;
		uint8_t *data;
		size_t off = 0, l;
		uint32_t type, plen;
		const uint8_t *payload;
		bool sealed = false;
		ssize_t got;
		struct jseg *s;

		oid_seg(oid, sizeof(oid), seg);
		r = store_stat(m->meta, oid, &sst);
		if (r == -ENOENT) {
			j->cur = jseg_new(seg);
			r = j->cur ? 0 : -ENOMEM;
			break;
		}
		if (r)
			break;
		data = malloc(sst.size ? sst.size : 1);
		if (!data) {
			r = -ENOMEM;
			break;
		}
		got = sst.size ? store_read(m->meta, oid, 0, sst.size, data) : 0;
		if (got < 0) {
			free(data);
			r = (int)got;
			break;
		}
		pthread_mutex_lock(&m->lock);
		while (off < (size_t)got) {
			l = entry_parse(data + off, (size_t)got - off, &type, &payload, &plen);
			if (!l)
				break;
			off += l;
			if (type == JE_SEG_END) {
				sealed = true;
				break;
			}
			if (type == JE_EDITS) {
				edits_for_each(payload, plen, replay_edit, m);
				nentries++;
			}
		}
		pthread_mutex_unlock(&m->lock);
		s = jseg_new(seg);
		if (!s || jseg_add_chunk(s, data, off)) {
			free(data);
			free(s);
			r = -ENOMEM;
			break;
		}
		s->first_ns = now_mono_ns();
		if (sealed) {
			*j->sealed_tail = s;
			j->sealed_tail = &s->next;
			j->nsealed++;
			seg++;
			continue;
		}
		if (off < (size_t)got) {
			struct store_op *op = store_op_new();

			dinfo(JOURNAL, "journal segment %s: dropping a torn tail of %zu bytes at %zu", oid,
			      (size_t)got - off, off);
			if (op) {
				store_op_truncate(op, off);
				r = store_op_exec(m->meta, oid, op);
			} else {
				r = -ENOMEM;
			}
			if (r) {
				jseg_free(s);
				break;
			}
		}
		j->cur = s;
		break;
	}
	m->replaying = false;
	if (r) {
		derr(JOURNAL, "journal replay failed at %s: %s", oid, strerror(-r));
		return r;
	}
	j->next_seq = 0;
	j->cur_len = j->cur->len;
	j->cur_first_ns = now_mono_ns();
	dinfo(JOURNAL, "journal replayed %" PRIu64 " entries from segment %" PRIx64 " to %" PRIx64 "+%zu",
	      nentries, j->expire_seg, j->cur->no, j->cur->len);
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
	perf_register_hist("mds_journal", "batch_entries", &j->batch);
	perf_register_hist("mds_journal", "write_lat", &j->write_lat);
	perf_register_hist("mds_journal", "expire_lat", &j->expire_lat);
	/* what replay brought back from the current segment is sealed and
	 * expired with the rest before we serve: from here on, everything in
	 * memory that came from before this start is in the objects */
	if (j->cur->len) {
		struct mdsp_buf b;
		struct store_op *op = store_op_new();
		char oid[64];

		mdsp_buf_init(&b);
		entry_put(&b, JE_SEG_END, NULL, 0);
		oid_seg(oid, sizeof(oid), j->cur->no);
		if (!op || b.oom) {
			if (op)
				store_op_free(op);
			mdsp_buf_free(&b);
			return -ENOMEM;
		}
		store_op_write(op, j->cur->len, b.data, b.len);
		r = store_op_exec(m->meta, oid, op);
		if (r) {
			mdsp_buf_free(&b);
			return r;
		}
		if (jseg_add_chunk(j->cur, b.data, b.len)) {
			mdsp_buf_free(&b);
			return -ENOMEM;
		}
		seal_cur(j);
		j->cur_len = 0;
	}
	/* segments the previous run expired but left in place */
	pthread_mutex_lock(&j->expire_lock);
	remove_segments(m, j->expire_seg);
	pthread_mutex_unlock(&j->expire_lock);
	/* what was replayed gets applied to the objects now */
	expire_sealed(m);
	r = pthread_create(&j->writer, NULL, writer_main, m);
	if (r)
		return -r;
	j->writer_started = true;
	return 0;
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
	struct jitem *it, *next;

	if (!j)
		return;
	perf_unregister_group("mds_journal");
	for (s = j->sealed; s; s = n) {
		n = s->next;
		jseg_free(s);
	}
	if (j->cur)
		jseg_free(j->cur);
	for (it = j->items; it; it = next) {
		next = it->next;
		if (it->conn)
			conn_put(it->conn);
		mdsp_buf_free(&it->frame);
		free(it);
	}
	mdsp_buf_free(&j->pending);
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->cond);
	pthread_cond_destroy(&j->space);
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
	pthread_mutex_unlock(&j->lock);
	pthread_mutex_lock(&j->seg_lock);
	json_object_object_add(o, "sealed_segments", json_object_new_int64((int64_t)j->nsealed));
	pthread_mutex_unlock(&j->seg_lock);
	json_object_object_add(o, "expire_segment", json_object_new_int64((int64_t)j->expire_seg));
	json_object_object_add(o, "segment_size", json_object_new_int64((int64_t)j->seg_size));
	json_object_object_add(o, "writes", json_object_new_int64((int64_t)w));
	json_object_object_add(o, "entries", json_object_new_int64((int64_t)e));
	json_object_object_add(o, "avg_entries_per_write", json_object_new_double(w ? (double)e / (double)w : 0.0));
	return o;
}
