/*
 * writeback.c - buffered writes, bounded in memory, and their writeback.
 *
 * A buffered write lands in the inode's list of dirty extents (sorted,
 * disjoint, never crossing an object boundary, so writeback is one atomic
 * store op per object).  Sequential writes grow the last extent in place.
 * The total of buffered bytes over all inodes is bounded by client_oc_size:
 * a writer that pushes it past the bound waits until the flusher's
 * writebacks bring it under again; past client_oc_target_dirty the flusher
 * thread starts writing in the background, and goes on at once while it
 * is still over, so a steady sequential writer keeps the store busy.
 *
 * Writeback of an inode moves its dirty list to in->flushing (readers still
 * overlay it), submits the object writes in parallel without any lock held,
 * and waits.  One writeback per inode at a time keeps two generations of
 * one range from racing in the store: in->flushing_now is that writeback,
 * a lock made of a flag and in->cond, owned by the thread that set it
 * (wb_take) until it ends it (wb_end).
 *
 * The rule that keeps writeback free of deadlocks, checked by lockdep
 * (class "inode writeback", common/lockdep.h) in the test builds:
 *
 *   A thread that owns an inode's writeback never waits for another
 *   inode's writeback, and waits for nothing but the store while it owns
 *   one (no MDS round trip, no cap, no kernel invalidation, no room in
 *   the cache).
 *
 * So a wave (flush_all, run_wbq: up to WAVE writebacks in flight together,
 * whose store ops share commits) takes its members with wb_take(try), which
 * refuses an inode whose writeback someone else owns; the wave stops there,
 * ends every member (wb_end) before it does anything else, sends the size
 * reports and cap updates owning nothing, and only then does the inode it
 * stopped at, alone, after its owner's writeback (it owns none then).  Two
 * syncs that meet on an inode so take turns on it instead of each holding
 * what the other waits for (issue
 * 24: two directory fsyncs whose waves overlapped in opposite order, and
 * the flusher's wave meeting itself through a list link reused while it
 * walked the list, hung loligo-fuse for good).  Every other writeback
 * (lc_wb_flush_data: a write through, fsync, close, truncate, a revoke)
 * is of one inode, begun owning none.  The flusher's writebacks take at
 * most a quarter of client_oc_size of an inode (whole objects, oldest
 * offsets first), so a writer fills the rest of the buffer while they fly:
 * writer and store overlap instead of taking turns (a writer that wrote
 * its own whole inode back at the bound, as before, waited for up to
 * client_oc_size of writes with the store idle while it refilled).
 * fsync and close take everything (a close under Fb by queueing the file
 * for the flusher, lc_wb_start: closed files gather for
 * client_close_wb_delay_us or until a wave is full, so that tar's files,
 * closed a few hundred us apart, share the store's commits instead of
 * costing one each).  Size and mtime follow the data to
 * the MDS (lc_wb_report: a CAPS FLUSH) on flush, fsync, release, a revoke
 * and every client_flush_interval.  Only a client holding Fb buffers (the
 * caller, lc_write, writes through otherwise).
 *
 * A writeback that fails with a transient error (an OSD that timed out,
 * a connection reset) loses nothing: its extents go back under whatever
 * was written since, the inode stays dirty and the flusher retries; the
 * fsync or close that asked gets the error, and a later one succeeds once
 * the store does (issue 9.4: a dead OSD used to cost the bytes written
 * while it was down, with a later fsync succeeding over the hole).  While
 * writebacks fail (c->wb_failing), a writer past client_oc_size gets the
 * error instead of waiting forever for space that will not come.  Other
 * errors drop the data and are reported once, at the next fsync or close.
 *
 * The flusher thread also runs queued cap revokes (they need I/O and MDS
 * round trips, which the session reader thread must never wait for) and
 * trims the caches.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/data_int.h"
#include "common/config.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "common/time.h"
#include "store/store.h"

static struct lc_extent *extent_new(uint64_t off, size_t len, size_t cap)
{
	struct lc_extent *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->buf = malloc(cap ? cap : 1);
	if (!e->buf) {
		free(e);
		return NULL;
	}
	e->off = off;
	e->len = len;
	e->cap = cap;
	return e;
}

static void extent_free(struct lc_extent *e)
{
	free(e->buf);
	free(e);
}

/* extent_free, with the buffer back to the client's pool when it is one of its sizes */
static void extent_release(struct lclient *c, struct lc_extent *e)
{
	lc_buf_put(c, e->buf, e->cap);
	free(e);
}

/*
 * The dirty list's index (in->dtails): without it, every insert walked the
 * list from its head, and 4 KiB random writes keep thousands of extents
 * dirty per file (the walk was a quarter of the client's CPU in fio
 * randwrite-4k on RADOS).  With it an insert walks the extents of its own
 * object only.  Inserts keep it up to date; anything else that changes the
 * list drops it (dtails_invalidate_locked) and the next insert rebuilds it.
 */

/* in->lock held: drop the index (the next insert rebuilds it) */
static void dtails_invalidate_locked(struct lc_inode *in)
{
	lockdep_assert_held(&in->lock);
	in->dtails_valid = false;
	in->ndtails = 0;
}

/* in->lock held: rebuild the index from the dirty list; false without memory */
static bool dtails_rebuild_locked(struct lc_inode *in, uint32_t unit)
{
	lockdep_assert_held(&in->lock);
	in->ndtails = 0;
	for (struct lc_extent *e = in->dirty; e; e = e->next) {
		uint64_t obj = e->off / unit;

		if (e->next && e->next->off / unit == obj)
			continue;
		if (in->ndtails == in->dtails_cap) {
			size_t ncap = in->dtails_cap ? in->dtails_cap * 2 : 16;
			struct lc_dtail *n = ncap > UINT32_MAX ? NULL : realloc(in->dtails, ncap * sizeof(*n));

			if (!n)
				return false;
			in->dtails = n;
			in->dtails_cap = (uint32_t)ncap;
		}
		in->dtails[in->ndtails++] = (struct lc_dtail){ .obj = obj, .tail = e };
	}
	in->dtails_valid = true;
	return true;
}

/* first index whose object is >= @obj */
static size_t dtails_find(const struct lc_inode *in, uint64_t obj)
{
	size_t lo = 0, hi = in->ndtails;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (in->dtails[mid].obj < obj)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * in->lock held: where the walk for an insert into object @obj starts (after
 * the last extent of the nearest object below it); *@pos gets its index in
 * dtails, SIZE_MAX without an index (out of memory: from the head).
 */
static struct lc_extent **dirty_start_locked(struct lc_inode *in, uint32_t unit, uint64_t obj, size_t *pos)
{
	lockdep_assert_held(&in->lock);
	if (!in->dtails_valid && !dtails_rebuild_locked(in, unit)) {
		dtails_invalidate_locked(in);
		*pos = SIZE_MAX;
		return &in->dirty;
	}
	*pos = dtails_find(in, obj);
	return *pos ? &in->dtails[*pos - 1].tail->next : &in->dirty;
}

/* in->lock held: @n is now the last extent of @obj, whose index slot is @pos */
static void dtails_set_locked(struct lc_inode *in, size_t pos, uint64_t obj, struct lc_extent *n)
{
	lockdep_assert_held(&in->lock);
	if (pos == SIZE_MAX)
		return;
	if (pos < in->ndtails && in->dtails[pos].obj == obj) {
		in->dtails[pos].tail = n;
		return;
	}
	if (in->ndtails == in->dtails_cap) {
		size_t ncap = in->dtails_cap ? in->dtails_cap * 2 : 16;
		struct lc_dtail *nt = ncap > UINT32_MAX ? NULL : realloc(in->dtails, ncap * sizeof(*nt));

		if (!nt) {
			dtails_invalidate_locked(in);
			return;
		}
		in->dtails = nt;
		in->dtails_cap = (uint32_t)ncap;
	}
	memmove(&in->dtails[pos + 1], &in->dtails[pos], (in->ndtails - pos) * sizeof(in->dtails[0]));
	in->dtails[pos] = (struct lc_dtail){ .obj = obj, .tail = n };
	in->ndtails++;
}

/*
 * in->lock held.  Insert [off, off+len) (inside one object) into the dirty
 * list, merging with overlapping or adjacent extents of the same object.
 * *@delta gets the change in buffered capacity.
 */
static int insert_locked(struct lclient *c, struct lc_inode *in, uint32_t unit, uint64_t off, size_t len,
			 const char *buf, bool seq, int64_t *delta)
{
	uint64_t obj = off / unit;
	uint64_t end = off + len;
	size_t pos;
	struct lc_extent **pp = dirty_start_locked(in, unit, obj, &pos), *e;

	lockdep_assert_held(&in->lock);
	/* first extent of this object that ends at or after off (adjacent counts) */
	while (*pp && ((*pp)->off + (*pp)->len < off || (*pp)->off / unit < obj))
		pp = &(*pp)->next;
	e = *pp;
	*delta = 0;

	if (!e || e->off > end || e->off / unit != obj) {
		/* touches nothing: a new extent of just this write (a sequential
		 * writer grows it below, doubling).  Capacity is what counts
		 * against client_oc_size: room reserved ahead for a 4 KiB random
		 * write would count 16 times its bytes, so the flusher and the
		 * bound would see batches 16 times smaller than they are.  A
		 * sequential stream is different: it fills the object, so it gets
		 * the room to the object's end at once (no realloc and copy per
		 * doubling), from the client's buffer pool when that is a whole
		 * object (a fresh 4 MiB buffer costs 1024 page faults, which were
		 * a fifth of the client's CPU in a 1 MiB sequential write).  Only
		 * where it shows it will fill the object: it enters the object at
		 * its first byte, or writes a quarter object at a time.  An
		 * appender's write after its fsync continues the last one too,
		 * but reserving the rest of the object for it counted ~4 MiB per
		 * 4 KiB append against client_oc_size. */
		size_t cap = len;
		struct lc_extent *n;
		if (seq && c && (off % unit == 0 || len >= unit / 4)) {
			size_t room = (size_t)(unit - off % unit);

			n = calloc(1, sizeof(*n));
			if (n && !(n->buf = room == unit ? lc_buf_get(c, room, &cap) : malloc(cap = room))) {
				free(n);
				n = NULL;
			}
			if (n) {
				n->off = off;
				n->len = len;
				n->cap = cap;
			}
		} else {
			n = extent_new(off, len, cap);
		}
		if (!n)
			return -ENOMEM;
		memcpy(n->buf, buf, len);
		n->next = e;
		*pp = n;
		if (!e || e->off / unit != obj)
			dtails_set_locked(in, pos, obj, n);
		*delta = (int64_t)cap;
		return 0;
	}
	/* fast path: e contains or extends at its end, and nothing after overlaps */
	if (e->off <= off && e->off / unit == obj &&
	    (!e->next || e->next->off > end || e->next->off / unit != obj)) {
		size_t need = (size_t)(end > e->off + e->len ? end - e->off : e->len);
		if (need > e->cap) {
			size_t ncap = e->cap * 2 < 65536 ? 65536 : e->cap * 2;
			uint64_t room = unit - e->off % unit;
			if (ncap < need)
				ncap = need;
			if (ncap > room)
				ncap = (size_t)room;
			if (ncap < need)
				ncap = need;
			char *nb = realloc(e->buf, ncap);
			if (!nb)
				return -ENOMEM;
			*delta = (int64_t)(ncap - e->cap);
			e->buf = nb;
			e->cap = ncap;
		}
		memcpy(e->buf + (off - e->off), buf, len);
		if (need > e->len)
			e->len = need;
		return 0;
	}
	/* general case: union of [off, end) and every touching extent of this object */
	uint64_t lo = off < e->off ? off : e->off;
	uint64_t hi = end;
	struct lc_extent *last = e;
	int64_t freed = 0;
	for (struct lc_extent *x = e; x && x->off <= end && x->off / unit == obj; x = x->next) {
		if (x->off + x->len > hi)
			hi = x->off + x->len;
		last = x;
	}
	struct lc_extent *n = extent_new(lo, (size_t)(hi - lo), (size_t)(hi - lo));
	if (!n)
		return -ENOMEM;
	struct lc_extent *x = e, *stop = last->next;
	while (x != stop) {
		struct lc_extent *nx = x->next;
		memcpy(n->buf + (x->off - lo), x->buf, x->len);
		freed += (int64_t)x->cap;
		extent_free(x);
		x = nx;
	}
	memcpy(n->buf + (off - lo), buf, len);
	n->next = stop;
	*pp = n;
	if (!stop || stop->off / unit != obj)
		dtails_set_locked(in, pos, obj, n);   /* the last one was among those merged */
	*delta = (int64_t)n->cap - freed;
	return 0;
}

static void oc_account(struct lclient *c, int64_t delta)
{
	if (delta >= 0) {
		atomic_fetch_add(&c->oc_dirty, (uint64_t)delta);
		return;
	}
	atomic_fetch_sub(&c->oc_dirty, (uint64_t)-delta);
	pthread_mutex_lock(&c->oc_lock);
	pthread_cond_broadcast(&c->oc_cond);
	pthread_mutex_unlock(&c->oc_lock);
}

/* Errors after which the store may work again: the data is kept and retried.
 * Not for an evicted client: its store instance is fenced (ESHUTDOWN for
 * good), and what it buffered is dropped with EIO, as Ceph drops it. */
static bool wb_transient(struct lclient *c, int r)
{
	if (r == -ESHUTDOWN && lc_evicted(c, NULL, 0))
		return false;
	return r == -ETIMEDOUT || r == -EAGAIN || r == -ENOTCONN || r == -ECONNRESET || r == -ESHUTDOWN;
}

int lc_wb_write(struct lclient *c, struct lc_inode *in, uint64_t *offp, size_t *lenp, const char *buf,
		const struct lc_cred *cr, bool append, uint64_t limit)
{
	int64_t total = 0, delta;
	uint64_t bound = cfg_uint(CFG_client_oc_size);
	size_t len = *lenp;
	int r = 0;

	/* the store is failing and the buffer is full: buffer nothing more
	 * (memory stays bounded), try once to make room, else report */
	if (bound && atomic_load(&c->wb_failing) && atomic_load(&c->oc_dirty) + len > bound) {
		r = lc_wb_flush_data(c, in);
		if (r < 0)
			return r;
		r = atomic_load(&c->wb_failing);
		if (r && atomic_load(&c->oc_dirty) + len > bound)
			return r;
	}

	pthread_mutex_lock(&in->lock);
	if (append) {
		uint64_t sz = in->mi.size;
		if (lc_meta_ours_locked(in) && in->wsize > sz)
			sz = in->wsize;
		*offp = sz;
	}
	uint64_t off = *offp;
	if (off >= limit) {
		pthread_mutex_unlock(&in->lock);
		return -EFBIG;
	}
	if (len > limit - off)
		*lenp = len = (size_t)(limit - off);
	/* buffered extents never cross a stripe unit (in the plain layout: an
	 * object), so each goes to one object in one piece (store_file_map) */
	struct store_file_layout ly;

	lc_mi_layout(c, &in->mi, &ly);
	uint32_t unit = ly.stripe_unit;
	/* a stripe's worth dirty is what a writeback keeps stripe_count objects busy with */
	size_t kick_at = 2 * (size_t)ly.stripe_unit * ly.stripe_count;
	uint64_t o = off;
	size_t left = len;
	const char *p = buf;
	/* a stream: this write begins where the last one ended (the first write
	 * of a file is not one yet: an untar's small files must not reserve a
	 * whole object each) */
	bool seq = off && off == in->wb_last_end;
	while (left > 0) {
		size_t n = unit - o % unit;
		if (n > left)
			n = left;
		r = insert_locked(c, in, unit, o, n, p, seq, &delta);
		if (r < 0)
			break;
		total += delta;
		o += n;
		p += n;
		left -= n;
	}
	if (o > off) {
		in->wb_seq = seq;
		in->wb_last_end = o;
		lc_wb_note_write_locked(in, o);
		in->wmtime = lc_now_mdsp();
		in->dirty_meta |= MDSP_DIRTY_SIZE | MDSP_DIRTY_MTIME;
		lc_inode_note_write_locked(in);
		atomic_fetch_add(&in->data_gen, 1);
		lc_mark_dirty_locked(c, in);
	}
	in->dirty_bytes += (size_t)total;
	size_t in_dirty = in->dirty_bytes;
	pthread_mutex_unlock(&in->lock);
	oc_account(c, total);
	if (r < 0)
		return r;

	uint64_t target = cfg_uint(CFG_client_oc_target_dirty);
	uint64_t now_dirty = atomic_load(&c->oc_dirty);
	if (bound && now_dirty > bound) {
		/* over the bound: wait for the flusher's writebacks to make room
		 * (this write is buffered; if writebacks fail, the next write past
		 * the bound gets the error, above) */
		perf_inc(&c->perf.wb_throttle, 1);
		lc_op_wait_set(LC_WAIT_CACHE_ROOM, now_dirty);
		pthread_mutex_lock(&c->oc_lock);
		while (atomic_load(&c->oc_dirty) > bound && !atomic_load(&c->wb_failing)) {
			lc_flusher_kick(c);
			struct timespec dl = deadline_ms(100);
			pthread_cond_timedwait(&c->oc_cond, &c->oc_lock, &dl);
		}
		pthread_mutex_unlock(&c->oc_lock);
		lc_op_wait_clear();
		return 0;
	}
	if ((target && now_dirty > target) || in_dirty >= kick_at)
		lc_flusher_kick(c);
	return 0;
}

struct lc_extent *lc_wb_snapshot(struct lc_inode *in, uint64_t off, size_t len)
{
	struct lc_extent *head = NULL, **tail = &head;
	uint64_t end = off + len;

	pthread_mutex_lock(&in->lock);
	struct lc_extent *lists[2] = { in->flushing, in->dirty };
	for (int i = 0; i < 2; i++) {
		for (struct lc_extent *e = lists[i]; e; e = e->next) {
			if (e->off >= end)
				break;
			if (e->off + e->len <= off)
				continue;
			uint64_t lo = e->off > off ? e->off : off;
			uint64_t hi = e->off + e->len < end ? e->off + e->len : end;
			struct lc_extent *s = extent_new(lo, (size_t)(hi - lo), (size_t)(hi - lo));
			if (!s)
				continue; /* best effort under OOM */
			memcpy(s->buf, e->buf + (lo - e->off), (size_t)(hi - lo));
			*tail = s;
			tail = &s->next;
		}
	}
	pthread_mutex_unlock(&in->lock);
	return head;
}

void lc_wb_apply_snapshot(struct lc_extent *snap, uint64_t off, size_t len, char *buf)
{
	while (snap) {
		struct lc_extent *n = snap->next;
		if (snap->off >= off && snap->off + snap->len <= off + len)
			memcpy(buf + (snap->off - off), snap->buf, snap->len);
		extent_free(snap);
		snap = n;
	}
}

/*
 * in->lock held.  A failed writeback of @list (@bytes of capacity): put it
 * back as the dirty list, with what was written since on top (newer bytes
 * win).  *@delta gets the change in buffered capacity.  Return: 0, or
 * -ENOMEM (newer extents that did not fit are lost; the caller says so).
 */
static int requeue_locked(struct lc_inode *in, uint32_t unit, struct lc_extent *list, size_t bytes,
			  int64_t *delta)
{
	struct lc_extent *newer = in->dirty, *e, *n;
	size_t newer_bytes = in->dirty_bytes;
	int64_t d;
	int r = 0;

	lockdep_assert_held(&in->lock);
	in->dirty = list;
	in->dirty_bytes = bytes;
	dtails_invalidate_locked(in);
	for (e = newer; e; e = n) {
		n = e->next;
		if (!r)
			r = insert_locked(NULL, in, unit, e->off, e->len, e->buf, false, &d);
		if (!r)
			in->dirty_bytes += (size_t)d;
		extent_free(e);
	}
	*delta = (int64_t)in->dirty_bytes - (int64_t)(bytes + newer_bytes);
	return r;
}

/* objects of a sequential stream indexed ahead of its writes (at most; fewer with a small client_oc_size) */
#define LC_INDEX_AHEAD 16

/*
 * Writeback errors, the way Linux's errseq_t keeps them (lib/errseq.c,
 * file->f_wb_err): one error value and a sequence per inode, a sample per
 * open handle.  An error bumps the sequence only if the previous one was
 * seen (else it just replaces it: nobody has been told either yet); a
 * handle reports an error iff the sequence moved since its sample, then
 * takes the new value, marking it seen.  So every handle hears each error
 * once, whoever's writeback hit it (its own, the flusher's, another
 * handle's fsync), and an error no handle saw yet (a writeback after the
 * last close) goes to the next handle opened.
 */
#define ESEQ_SEEN 1u   /* as in lc_err_record_locked (inode.c) */

uint32_t lc_wb_err_sample_locked(const struct lc_inode *in)
{
	return (in->wb_eseq & ESEQ_SEEN) ? in->wb_eseq : 0;
}

int lc_wb_err_check(struct lc_inode *in, uint32_t *since)
{
	int err = 0;

	pthread_mutex_lock(&in->lock);
	if (in->wb_eseq != *since) {
		in->wb_eseq |= ESEQ_SEEN;
		*since = in->wb_eseq;
		err = in->wb_err;
	}
	pthread_mutex_unlock(&in->lock);
	return err;
}

/* One inode's writeback in flight: wb_begin() submits, wb_end() waits and settles. */
struct wb_flight {
	struct lc_io_batch b;        /* the data writes */
	struct lc_io_batch ib;       /* the object index's update, before them */
	int ierr;                    /* submitting it failed (-ENOMEM) */
	uint64_t ahead_from, ahead_to;  /* a stream's objects indexed ahead: [from, to) */
	struct lc_extent *list;      /* in->flushing */
	size_t bytes;                /* its capacity */
	uint32_t unit;               /* extents never cross one: the layout's stripe unit */
	struct store_file_layout ly;
	uint64_t t0, nbytes, nops;
	bool active;                 /* something was submitted: wb_end() must run */
};

/* @f's objects (those of its extents, then the stream's ahead of them), in runs of at most 64, each given to @fn */
static int for_objs(struct lclient *c, struct lc_inode *in, struct wb_flight *f,
		    int (*fn)(struct lclient *, struct lc_inode *, struct wb_flight *, const uint64_t *, size_t))
{
	uint64_t objs[64];
	size_t n = 0;
	int r = 0;

	for (struct lc_extent *e = f->list; e && r >= 0; e = e->next) {
		uint64_t o, ooff;

		store_file_map(&f->ly, e->off, &o, &ooff);
		if (n && objs[n - 1] == o)
			continue;
		if (n == sizeof(objs) / sizeof(objs[0])) {
			r = fn(c, in, f, objs, n);
			n = 0;
		}
		objs[n++] = o;
	}
	for (uint64_t o = f->ahead_from; o < f->ahead_to && r >= 0; o++) {
		if (n == sizeof(objs) / sizeof(objs[0])) {
			r = fn(c, in, f, objs, n);
			n = 0;
		}
		objs[n++] = o;
	}
	if (r >= 0 && n)
		r = fn(c, in, f, objs, n);
	return r;
}

static int index_submit(struct lclient *c, struct lc_inode *in, struct wb_flight *f, const uint64_t *objs, size_t n)
{
	return lc_obj_index_submit(c, &f->ib, in, objs, n);
}

static int index_present(struct lclient *c, struct lc_inode *in, struct wb_flight *f, const uint64_t *objs, size_t n)
{
	(void)f;
	return lc_obj_index_present(c, in, objs, n);
}

static int index_known(struct lclient *c, struct lc_inode *in, struct wb_flight *f, const uint64_t *objs, size_t n)
{
	(void)c;
	(void)f;
	lc_obj_index_known(in, objs, n);
	return 0;
}

/*
 * Move @in's dirty extents to in->flushing, whole objects from the lowest
 * offset up to @max bytes (at least one object; SIZE_MAX: all), and submit
 * the object index's update for the objects new to it, without waiting
 * (wb_submit waits for it, then submits one compound write per object:
 * every extent of that object).  Waits first for a writeback of @in
 * already in flight (one per inode at a time).  The index ops of a wave
 * of inodes are in flight together: on the local store they share one
 * commit, and the wave's data writes the next (an untar's closed files
 * cost an index commit each, then a data commit each).
 *
 * A partial writeback (@max < SIZE_MAX: the flusher's, under memory
 * pressure) leaves a sequential stream's tail object alone while the
 * writer is still filling it, unless the client is past client_oc_size
 * (a writer waits for room): taken half-full, that object would go to the
 * store as two writes (ceph-fuse's ObjectCacher writes each object once,
 * 4 MiB at a time, and so do we now).  An object dirty from its first to
 * its last byte goes as one write_full; the data is not copied on its way
 * into the op (store_op_write_nocopy: librados copies it at submit).
 */
static LOCKDEP_CLASS(wb_class, "inode writeback (in->flushing_now)");

/* in->lock held: wait until nobody owns @in's writeback (the caller owns none: see the top) */
static void wb_wait_idle_locked(struct lc_inode *in)
{
	lockdep_assert_held(&in->lock);
	if (!in->flushing_now)
		return;
	lc_op_wait_set(LC_WAIT_WRITEBACK, in->ino);
	while (in->flushing_now)
		pthread_cond_wait(&in->cond, &in->lock);
	lc_op_wait_clear();
}

/*
 * @try: a wave's member; if another thread owns @in's writeback, take
 * nothing and return false (the wave comes back for it: see the top).
 * Otherwise wait for that writeback to end; the caller owns none.
 */
static bool wb_take(struct lclient *c, struct lc_inode *in, struct wb_flight *f, size_t max, bool try)
{
	uint64_t ahead_from = 0, ahead_to = 0;   /* a stream's objects to index ahead: [from, to) */

	f->active = false;
	f->nbytes = f->nops = 0;
	if (!try)
		lockdep_wait(&wb_class, &in->flushing_now);
	pthread_mutex_lock(&in->lock);
	if (in->flushing_now && try) {
		pthread_mutex_unlock(&in->lock);
		return false;
	}
	wb_wait_idle_locked(in);
	if (!in->dirty) {
		pthread_mutex_unlock(&in->lock);
		return true;
	}
	lc_mi_layout(c, &in->mi, &f->ly);
	f->unit = f->ly.stripe_unit;
	{
		struct lc_extent **pp = &in->dirty;
		size_t took = 0;
		uint64_t bound = cfg_uint(CFG_client_oc_size);
		/* the object a sequential writer is filling: left to fill (a
		 * stream past its first object, on a file still open: a closed
		 * file's tail is not coming) */
		bool hold = max != SIZE_MAX && in->wb_seq && in->wb_last_end > f->unit &&
			    in->wb_last_end % f->unit && in->nwriters > 0 &&
			    !(bound && atomic_load(&c->oc_dirty) > bound);
		uint64_t hold_obj = in->wb_last_end / f->unit;

		while (*pp && (took == 0 || took < max)) {
			uint64_t obj = (*pp)->off / f->unit;
			struct lc_extent **start = pp;
			size_t otook = 0;

			while (*pp && (*pp)->off / f->unit == obj) {
				otook += (*pp)->cap;
				pp = &(*pp)->next;
			}
			if (hold && obj == hold_obj && !*pp) {
				pp = start;   /* the stream's tail, last in the list: not this time */
				break;
			}
			took += otook;
		}
		if (!took) {
			pthread_mutex_unlock(&in->lock);
			return true;
		}
		f->list = in->dirty;
		in->dirty = *pp;
		*pp = NULL;
		dtails_invalidate_locked(in);
		f->bytes = took;
		in->dirty_bytes -= took;
		/* (objects ahead by number: in the plain layout only, where a
		 * unit is an object) */
		if (in->wb_seq && max != SIZE_MAX && store_file_layout_plain(&f->ly)) {
			/* a sequential stream still being written (not an fsync or
			 * close: nothing comes after those): the objects after these up to
			 * LC_INDEX_AHEAD past its tail get their index keys in the
			 * same op, so that is one index op per LC_INDEX_AHEAD objects
			 * rather than one per writeback (a key for an object never
			 * written costs a trim one removal of nothing) */
			uint64_t tail = in->wb_last_end ? (in->wb_last_end - 1) / f->unit : 0;
			uint64_t n = bound ? bound / f->unit / 2 : LC_INDEX_AHEAD;
			bool need = false;

			n = n < 1 ? 1 : n > LC_INDEX_AHEAD ? LC_INDEX_AHEAD : n;
			for (struct lc_extent *e = f->list; e; e = e->next)
				ahead_from = e->off / f->unit + 1;
			/* only once the stream reaches objects not indexed yet: in
			 * steps of n objects, not one more object per writeback */
			for (uint64_t o = ahead_from; o <= tail && o < ahead_from + 2 * LC_INDEX_AHEAD && !need; o++)
				need = !lc_obj_indexed(in, o);
			ahead_to = need ? tail + 1 + n : 0;
			if (ahead_to > ahead_from + 2 * LC_INDEX_AHEAD)
				ahead_to = ahead_from + 2 * LC_INDEX_AHEAD;
		}
	}
	in->flushing = f->list;
	in->flushing_now = true;
	lockdep_acquired(&wb_class, &in->flushing_now, true);   /* waited for above, if at all */
	pthread_mutex_unlock(&in->lock);
	f->active = true;

	f->t0 = now_mono_ns();
	f->ahead_from = ahead_from;
	f->ahead_to = ahead_to;
	/* the object index first: no object may exist that it does not list */
	lc_io_batch_init(&f->ib);
	f->ierr = for_objs(c, in, f, index_submit);
	return true;
}

/*
 * Wait for wb_take()'s index update, then submit one compound write per
 * object (every extent of that object), without waiting.
 */
/* client_debug_writeback_delay: hold this writeback (a slow store), until the option says otherwise */
static void debug_delay(struct lc_inode *in)
{
	uint64_t t0 = now_mono_ns(), d;

	if (!(d = lc_secs_ns(CFG_client_debug_writeback_delay)))
		return;
	lc_op_wait_set(LC_WAIT_STORE, in->ino);
	while ((d = lc_secs_ns(CFG_client_debug_writeback_delay)) && now_mono_ns() - t0 < d)
		usleep(20000);
	lc_op_wait_clear();
}

static void wb_submit(struct lclient *c, struct lc_inode *in, struct wb_flight *f)
{
	uint32_t unit = f->unit;
	char oid[64];
	int r;

	if (!f->active)
		return;
	debug_delay(in);
	r = lc_io_batch_wait(&f->ib);
	if (f->ierr < 0)
		r = f->ierr;
	/* a full store: the keys may be there (fallocated objects), and the
	 * writes into reserved space land */
	if (r == -ENOSPC)
		r = for_objs(c, in, f, index_present);
	if (r < 0)
		derr(CLIENT, "object index of %" PRIx64 ": %s", in->ino, strerror(-r));
	else
		for_objs(c, in, f, index_known);
	/* the file's data pool (the index above is in the first) */
	if (r >= 0 && (r = lc_layout_resolve(c, in->ino, &f->ly)) < 0)
		derr(CLIENT, "writeback of %" PRIx64 ": its data pool: %s", in->ino, strerror(-r));
	/* its session was evicted meanwhile (wb_drop_evicted): the bytes
	 * are not ours to write any more, whoever has the file now */
	if (r >= 0) {
		pthread_mutex_lock(&in->lock);
		if (in->wb_dropped)
			r = -EIO;
		pthread_mutex_unlock(&in->lock);
	}
	lc_io_batch_init(&f->b);
	f->b.pool = f->ly.pool;
	if (r < 0) {
		/* write nothing: the batch reports the error */
		pthread_mutex_lock(&f->b.m);
		f->b.err = r;
		pthread_mutex_unlock(&f->b.m);
	}
	for (struct lc_extent *e = r < 0 ? NULL : f->list; e;) {
		/* one atomic op per object extent (stripe unit): every extent of it */
		uint64_t obj = e->off / unit, objno, ooff;
		struct store_op *op = store_op_new();
		if (!op) {
			pthread_mutex_lock(&f->b.m);
			if (!f->b.err)
				f->b.err = -ENOMEM;
			pthread_mutex_unlock(&f->b.m);
			break;
		}
		store_file_map(&f->ly, e->off, &objno, &ooff);
		if (ooff == 0 && e->len == f->ly.object_size) {
			/* the whole object (extents never cross one, so this is all of it) */
			store_op_write_full_nocopy(op, e->buf, e->len);
			f->nbytes += e->len;
			perf_inc(&c->perf.wb_full_ops, 1);
			e = e->next;
		}
		while (e && e->off / unit == obj) {
			store_file_map(&f->ly, e->off, &objno, &ooff);
			store_op_write_nocopy(op, ooff, e->buf, e->len);
			f->nbytes += e->len;
			e = e->next;
		}
		lc_obj_name(oid, sizeof(oid), in->ino, objno);   /* every extent of the unit: one object */
		lc_io_batch_submit_op(c, &f->b, oid, op);
		f->nops++;
	}
}

/* wb_take() and wb_submit() of one inode, owning no other writeback */
static void wb_begin(struct lclient *c, struct lc_inode *in, struct wb_flight *f, size_t max)
{
	wb_take(c, in, f, max, false);
	wb_submit(c, in, f);
}

/* Wait for wb_begin()'s writes and settle: keep the extents on a transient error, else free them. */
static int wb_end(struct lclient *c, struct lc_inode *in, struct wb_flight *f)
{
	struct lc_extent *list = f->list;
	size_t bytes = f->bytes;
	uint32_t unit = f->unit;
	uint64_t nbytes = f->nbytes;
	bool dropped;
	int r;

	if (!f->active)
		return 0;
	r = lc_io_batch_wait(&f->b);
	hist_add(&c->perf.flush_lat, now_mono_ns() - f->t0);
	perf_inc(&c->perf.wb_bytes, nbytes);
	perf_inc(&c->perf.wb_ops, f->nops);

	pthread_mutex_lock(&in->lock);
	in->flushing = NULL;
	in->flushing_now = false;
	lockdep_released(&in->flushing_now);
	dropped = in->wb_dropped;
	in->wb_dropped = false;
	if (dropped) {
		/* evicted while it flew (wb_drop_evicted, which counted,
		 * logged and recorded the EIO): whatever the store said, the
		 * extents go, never dirty again, never reported as blocks */
		r = -EIO;
	} else if (r < 0 && wb_transient(c, r)) {
		int64_t delta;
		int was = atomic_exchange(&c->wb_failing, r);
		int rq = requeue_locked(in, unit, list, bytes, &delta);

		list = NULL;   /* in->dirty again */
		lc_mark_dirty_locked(c, in);
		pthread_cond_broadcast(&in->cond);
		pthread_mutex_unlock(&in->lock);
		oc_account(c, delta);
		if (rq)
			derr(CLIENT, "writeback of inode %" PRIx64 ": out of memory keeping newer writes after a "
			     "failed writeback: some bytes lost", in->ino);
		if (!was)
			derr(CLIENT, "writeback of inode %" PRIx64 " failed: %s; %" PRIu64 " bytes kept and retried "
			     "(fsync reports the error until a retry succeeds)", in->ino, strerror(-r), nbytes);
		else
			dout(CLIENT, 5, "writeback of inode %" PRIx64 " failed again: %s", in->ino, strerror(-r));
		return r;
	}
	if (r == 0 && nbytes && atomic_load(&c->wb_failing)) {
		atomic_store(&c->wb_failing, 0);
		dinfo(CLIENT, "writeback works again (inode %" PRIx64 ")", in->ino);
	}
	if (r < 0 && !dropped) {
		derr(CLIENT, "writeback of inode %" PRIx64 " failed: %s (%" PRIu64 " bytes lost)", in->ino,
		     strerror(-r), nbytes);
		/* every handle open for it learns it at its next fsync or close,
		 * even when the flusher thread was the one that failed */
		lc_err_record_locked(in, r);
	}
	int err = r < 0 ? r : 0;
	/* what the objects hold now: reported with the next flush (blocks.c) */
	for (struct lc_extent *e = r == 0 ? list : NULL; e; e = e->next)
		lc_blocks_added_locked(c, in, e->off, e->len);
	pthread_cond_broadcast(&in->cond);
	pthread_mutex_unlock(&in->lock);

	while (list) {
		struct lc_extent *n = list->next;
		extent_release(c, list);
		list = n;
	}
	oc_account(c, -(int64_t)bytes);
	return err;
}

/*
 * The session whose caps let us buffer @in's data is gone (evicted: the
 * cache core calls this from lc_session_event through cache_ops): the
 * bytes are not ours to write any more.  The MDS may have given the file
 * to another client, who wrote since; with no fence in the store
 * (mds_session_blocklist_on_evict or _on_timeout off, or the blocklist
 * entry lifted while the data waited here) our writeback, once a new
 * session (client_reconnect_stale) or just the flusher let it run, put the
 * old bytes over theirs.  As Ceph drops an evicted client's dirty buffers:
 * dropped, and EIO to every handle once (the errseq).  A writeback in
 * flight is marked (wb_dropped): it submits nothing if it has not yet
 * (wb_submit), and its end (wb_end) neither puts the extents back dirty
 * after a transient error nor reports them as blocks; what it submitted
 * before is beyond recall without a fence.  Return: the bytes dropped
 * (dirty, and in flight).
 */
static uint64_t wb_drop_evicted(struct lclient *c, struct lc_inode *in)
{
	struct lc_extent *list, *n;
	uint64_t bytes = 0;
	size_t cap;

	pthread_mutex_lock(&in->lock);
	list = in->dirty;
	cap = in->dirty_bytes;
	in->dirty = NULL;
	in->dirty_bytes = 0;
	dtails_invalidate_locked(in);
	for (struct lc_extent *e = list; e; e = e->next)
		bytes += e->len;
	if (in->flushing_now) {
		in->wb_dropped = true;
		for (struct lc_extent *e = in->flushing; e; e = e->next)
			bytes += e->len;
	}
	if (bytes) {
		lc_err_record_locked(in, -EIO);
		pthread_cond_broadcast(&in->cond);
	}
	pthread_mutex_unlock(&in->lock);
	for (; list; list = n) {
		n = list->next;
		extent_release(c, list);
	}
	if (cap)
		oc_account(c, -(int64_t)cap);
	return bytes;
}

int lc_wb_flush_data(struct lclient *c, struct lc_inode *in)
{
	struct wb_flight f;

	wb_begin(c, in, &f, SIZE_MAX);
	return wb_end(c, in, &f);
}

void lc_wb_note_write_locked(struct lc_inode *in, uint64_t end)
{
	uint64_t cur = ((in->dirty_meta | in->flushing_meta) & MDSP_DIRTY_SIZE) && !in->meta_given_up ? in->wsize : 0;

	in->meta_given_up = false;
	/* the cached size counts only while Fs says it is current: the MDS
	 * takes the largest size it is sent, so a stale one would undo
	 * another client's truncate */
	if ((in->caps & MDSP_CAP_FILE_SHARED) && in->mi.size > cur)
		cur = in->mi.size;
	in->wsize = end > cur ? end : cur;
}

/*
 * The size and mtime of our writes go to the MDS in a CAPS FLUSH (the
 * writer's right to write was checked at open; no SETATTR, whose explicit
 * mtime a non-owner could not set).  Asynchronous: lc_fsync waits for the
 * FLUSH_ACK.  Without a session the metadata stays dirty and goes with the
 * next flush.
 */
int lc_wb_report(struct lclient *c, struct lc_inode *in)
{
	int r = lc_cap_flush(c, in, NULL);

	if (r == 0)
		perf_inc(&c->perf.size_reports, 1);
	return r == -ENOTCONN ? 0 : r;
}

int lc_wb_flush(struct lclient *c, struct lc_inode *in)
{
	int r = lc_wb_flush_data(c, in);

	/* data kept after a transient failure: no size report over bytes the
	 * store does not have yet (a later flush sends it with them) */
	if (r < 0 && wb_transient(c, r))
		return r;
	/* a lasting error is in the error sequence (wb_end): each handle
	 * hears it from there, nothing is taken here */
	int r2 = lc_wb_report(c, in);
	return r < 0 ? r : r2;
}

/*
 * A wave: up to WAVE writebacks of distinct inodes in flight together (the
 * store commits a wave's ops in few batches: an untar's closes share their
 * syncs).  Members are taken with wb_take(try): an inode whose writeback
 * another thread owns ends the wave there; the caller runs the wave to its
 * end (owning nothing then) and does that inode next, alone, after its
 * owner (see the top).  Collisions are rare, so waves stay full.
 */
enum { WAVE = 16 };

/*
 * Queue @in's writeback after its close.  The flusher lets closed files
 * gather for client_close_wb_delay_us from the first (flusher_main), so
 * the flusher is woken once a gathering, by its first close or by the one
 * that fills a wave, not once a close.
 */
bool lc_wb_start(struct lclient *c, struct lc_inode *in)
{
	pthread_mutex_lock(&c->work_lock);
	if (!c->flusher_running || c->stop) {
		pthread_mutex_unlock(&c->work_lock);
		return false;
	}
	if (!in->wbq_queued) {
		lc_get(in);
		if (!c->wbq)
			c->wbq_since = now_mono_ns();
		in->wbq_queued = true;
		in->wbq_next = c->wbq;
		c->wbq = in;
		if (++c->wbq_n == 1 || c->wbq_n == WAVE)
			pthread_cond_signal(&c->work_cond);
	}
	pthread_mutex_unlock(&c->work_lock);
	return true;
}

struct wave {
	struct lc_inode *in[WAVE];
	struct wb_flight f[WAVE];
	int r[WAVE];
	int n;
};

/* Take @in into @w.  Return: false if its writeback is someone else's (nothing taken). */
static bool wave_add(struct lclient *c, struct wave *w, struct lc_inode *in, size_t max)
{
	if (!wb_take(c, in, &w->f[w->n], max, true))
		return false;
	w->in[w->n++] = in;
	return true;
}

/* Submit every member's writes, then end every member: on return this thread owns no writeback. */
static void wave_run(struct lclient *c, struct wave *w, uint64_t *wrote)
{
	for (int i = 0; i < w->n; i++)
		wb_submit(c, w->in[i], &w->f[i]);
	for (int i = 0; i < w->n; i++) {
		if (wrote && w->f[i].active)
			*wrote += w->f[i].nbytes;
		w->r[i] = wb_end(c, w->in[i], &w->f[i]);
	}
	assert(lockdep_nheld_class(&wb_class) == 0);
}

/*
 * The files lc_wb_start queued: all of each written back, in waves, then
 * the size/mtime report and the caps (Fw/Fb go back now if nobody writes
 * any more), sent owning no writeback.
 */
static void wbq_after(struct lclient *c, struct lc_inode *in, int r)
{
	/* kept for a retry: the flusher's rounds go on with it (no size
	 * report before the bytes are in the store) */
	if (!(r < 0 && wb_transient(c, r)))
		lc_caps_update(c, in);
	lc_put(c, in);
}

/*
 * Whether the closed files queued go now: a wave's worth, the first of them
 * queued @delay ns ago (0: at once), or the flusher stopping or kicked for
 * room.  work_lock held.
 */
static bool wbq_ready_locked(struct lclient *c, uint64_t delay)
{
	return c->wbq && (c->wbq_n >= WAVE || c->stop || c->kick || !delay || now_mono_ns() >= c->wbq_since + delay);
}

/* client_close_wb_delay_us in ns (an hour at most) */
static uint64_t wbq_delay(void)
{
	uint64_t us = cfg_uint(CFG_client_close_wb_delay_us);

	return (us < 3600000000ull ? us : 3600000000ull) * 1000ull;
}

/*
 * Write back the closed files queued, in waves.  @delay: as long as the
 * queue is ready (wbq_ready_locked); files closed while a wave runs gather
 * for the next instead of going one or two a wave, each wave a commit of
 * the store's.  0: all of them (the flusher's stop).
 */
static void run_wbq(struct lclient *c, uint64_t delay)
{
	struct lc_inode *in, *busy;
	struct wave w;

	busy = NULL;
	do {
		/* a wave cut short by an inode another thread writes back goes on
		 * with the rest of what was ready */
		pthread_mutex_lock(&c->work_lock);
		bool go = busy || wbq_ready_locked(c, delay);
		pthread_mutex_unlock(&c->work_lock);
		if (!go)
			break;
		w.n = 0;
		busy = NULL;
		/* one at a time off c->wbq, so that wbq_next is only ever the
		 * link of the one list the inode is on: lc_wb_start may queue an
		 * inode again as soon as it is off (its link reused while this
		 * walk still followed it made a wave meet one inode twice, and
		 * wait for its own writeback forever) */
		while (w.n < WAVE) {
			pthread_mutex_lock(&c->work_lock);
			in = c->wbq;
			if (in) {
				c->wbq = in->wbq_next;
				c->wbq_n--;
				in->wbq_next = NULL;
				in->wbq_queued = false;
			}
			pthread_mutex_unlock(&c->work_lock);
			if (!in)
				break;
			if (!wave_add(c, &w, in, SIZE_MAX)) {
				busy = in;
				break;
			}
		}
		if (w.n) {
			perf_inc(&c->perf.close_waves, 1);
			perf_inc(&c->perf.close_wb_files, (uint64_t)w.n);
		}
		wave_run(c, &w, NULL);
		for (int i = 0; i < w.n; i++)
			wbq_after(c, w.in[i], w.r[i]);
		/* another thread was writing it back: after it, owning none */
		if (busy)
			wbq_after(c, busy, lc_wb_flush_data(c, busy));
	} while (w.n || busy);
}

void lc_wb_discard_past(struct lclient *c, struct lc_inode *in, uint64_t size)
{
	int64_t freed = 0;

	lockdep_wait(&wb_class, &in->flushing_now);
	pthread_mutex_lock(&in->lock);
	wb_wait_idle_locked(in);
	struct lc_extent **pp = &in->dirty;
	dtails_invalidate_locked(in);
	while (*pp) {
		struct lc_extent *e = *pp;
		if (e->off >= size) {
			*pp = e->next;
			freed += (int64_t)e->cap;
			extent_free(e);
			continue;
		}
		if (e->off + e->len > size)
			e->len = (size_t)(size - e->off);
		pp = &e->next;
	}
	in->dirty_bytes -= (size_t)freed;
	in->wsize = size;
	if (in->wb_last_end > size)
		in->wb_last_end = size;   /* a stream past the new end is no stream */
	atomic_fetch_add(&in->data_gen, 1);
	pthread_mutex_unlock(&in->lock);
	if (freed)
		oc_account(c, -freed);
}

/* flush_all: after @in's writeback (result @r), its size report; it goes back on the dirty list if dirty again */
static int flush_all_after(struct lclient *c, struct lc_inode *in, int r, bool report)
{
	if (report && !(r < 0 && wb_transient(c, r))) {
		int r2 = lc_wb_flush(c, in);   /* what was written since, and the size report */

		if (r == 0)
			r = r2;
	}
	pthread_mutex_lock(&in->lock);
	if (in->dirty || in->dirty_meta)
		lc_mark_dirty_locked(c, in);
	pthread_mutex_unlock(&in->lock);
	lc_put(c, in);
	return r;
}

/*
 * Take the whole dirty list and write everything back; with @report, also
 * send the sizes/mtimes.  Memory-pressure rounds pass false: a streaming
 * writer would otherwise cost the MDS a journaled SETATTR per round.  An
 * inode whose writeback another thread owns is done after the wave, alone,
 * once that writeback ended (see the top): a sync still covers everything
 * that was dirty when it began.
 */
static int flush_all(struct lclient *c, bool report, uint64_t *wrote)
{
	struct lc_inode *list, *in, *busy;
	struct wave w;
	uint64_t bound = cfg_uint(CFG_client_oc_size);
	size_t gen_max = report || !bound ? SIZE_MAX : (size_t)(bound / 4);
	int err = 0, r;

	pthread_mutex_lock(&c->dirty_lock);
	list = c->dirty_list;
	c->dirty_list = NULL;
	pthread_mutex_unlock(&c->dirty_lock);
	/* in waves of inodes whose writebacks are all in flight at once: one
	 * writer's objects after another's would leave the store idle between
	 * them (4 files written at once were flushed one after the other) */
	while (list) {
		w.n = 0;
		busy = NULL;
		while ((in = list) && w.n < WAVE) {
			list = in->dirty_next;
			pthread_mutex_lock(&in->lock);
			in->on_dirty_list = false;
			in->dirty_next = NULL;
			pthread_mutex_unlock(&in->lock);
			if (!wave_add(c, &w, in, gen_max)) {
				busy = in;
				break;
			}
		}
		wave_run(c, &w, wrote);
		for (int i = 0; i < w.n; i++) {
			r = flush_all_after(c, w.in[i], w.r[i], report);
			if (r < 0 && !err)
				err = r;
		}
		if (busy) {
			struct wb_flight f;

			wb_begin(c, busy, &f, gen_max);
			if (f.active)
				*wrote += f.nbytes;
			r = flush_all_after(c, busy, wb_end(c, busy, &f), report);
			if (r < 0 && !err)
				err = r;
		}
	}
	return err;
}

int lc_flush_all(struct lclient *c, bool report)
{
	uint64_t wrote = 0;

	return flush_all(c, report, &wrote);
}

void lc_flusher_kick(struct lclient *c)
{
	pthread_mutex_lock(&c->work_lock);
	if (!c->kick) {
		c->kick = true;
		pthread_cond_signal(&c->work_cond);
	}
	pthread_mutex_unlock(&c->work_lock);
}

void lc_caps_update_later(struct lclient *c, struct lc_inode *in)
{
	pthread_mutex_lock(&c->work_lock);
	if (!in->capupd_queued && c->flusher_running && !c->stop) {
		lc_get(in);
		in->capupd_queued = true;
		in->capupd_next = c->capupd;
		c->capupd = in;
		pthread_mutex_unlock(&c->work_lock);
		return;
	}
	bool queued = in->capupd_queued;
	pthread_mutex_unlock(&c->work_lock);
	if (!queued)
		lc_caps_update(c, in);
}

static void run_capupd(struct lclient *c);

void lc_caps_update_pending(struct lclient *c, uint64_t ino)
{
	struct lc_inode *in = ino ? lc_ino_to_inode(c, ino) : NULL;
	bool queued;

	if (!in) {
		/* which file the name is, we do not know: all of them */
		pthread_mutex_lock(&c->work_lock);
		queued = c->capupd != NULL;
		pthread_mutex_unlock(&c->work_lock);
		if (queued)
			run_capupd(c);
		return;
	}
	pthread_mutex_lock(&c->work_lock);
	queued = in->capupd_queued;
	pthread_mutex_unlock(&c->work_lock);
	if (queued)
		lc_caps_update(c, in);   /* the flusher's turn finds nothing more to say */
	lc_put(c, in);
}

/* Send the cap updates queued by lc_caps_update_later. */
static void run_capupd(struct lclient *c)
{
	struct lc_inode *list, *in;

	pthread_mutex_lock(&c->work_lock);
	list = c->capupd;
	c->capupd = NULL;
	for (in = list; in; in = in->capupd_next)
		in->capupd_queued = false;
	pthread_mutex_unlock(&c->work_lock);
	while ((in = list)) {
		list = in->capupd_next;
		lc_caps_update(c, in);
		lc_put(c, in);
	}
}

static void *flusher_main(void *arg)
{
	struct lclient *c = arg;
	uint64_t last_flush = now_mono_ns();

	pthread_setname_np(pthread_self(), "lc-flusher");
	pthread_mutex_lock(&c->work_lock);
	while (!c->stop) {
		if (!c->kick && !c->wbq && !c->orphan_wake) {
			struct timespec dl = deadline_ms(250);
			pthread_cond_timedwait(&c->work_cond, &c->work_lock, &dl);
		}
		/* closed files gather until a wave is full or the delay since the
		 * first has passed: one wake-up of ours, one store commit and one
		 * send of size reports for the lot, where each close alone cost
		 * all three (tar's files, a close every few hundred us) */
		uint64_t delay = wbq_delay(), slice = now_mono_ns() + 250 * 1000000ull;

		/* in slices of a round at most, so that a long delay holds up
		 * none of the flusher's other work, and a delay changed at run
		 * time counts from the next slice */
		while (c->wbq && !wbq_ready_locked(c, delay) && !c->orphan_wake && now_mono_ns() < slice) {
			uint64_t until = c->wbq_since + delay;
			struct timespec dl = ns_to_timespec(until < slice ? until : slice);

			pthread_cond_timedwait(&c->work_cond, &c->work_lock, &dl);
			delay = wbq_delay();
		}
		c->orphan_wake = false;
		bool kicked = c->kick;
		c->kick = false;
		pthread_mutex_unlock(&c->work_lock);

		/* the flusher's work is in `ops` too (frontend "client"): a stuck
		 * writeback here shows there (cap messages run on the cap workers) */
		struct lc_op_slot *op;

		op = lc_op_begin(c, "client", "flusher: closed files' writeback", 0);
		run_wbq(c, kicked ? 0 : delay);   /* kicked for room: what is closed goes too */
		run_capupd(c);
		lc_revoke_expire(c);
		lc_op_end(op);
		uint64_t now = now_mono_ns();
		uint64_t ival = lc_secs_ns(CFG_client_flush_interval);
		uint64_t wrote = 0;
		if (ival && now - last_flush >= ival) {
			op = lc_op_begin(c, "client", "flusher: periodic writeback", 0);
			flush_all(c, true, &wrote);
			lc_op_end(op);
			last_flush = now;
		} else if (kicked) {
			op = lc_op_begin(c, "client", "flusher: writeback for room", 0);
			flush_all(c, false, &wrote);
			lc_op_end(op);
		}
		/* still over the target with inodes left dirty (a writeback takes
		 * at most gen_max of each): the next round at once, if this one
		 * wrote anything (what it left may be streams' tails, which the
		 * next write or the bound moves on) */
		uint64_t target = cfg_uint(CFG_client_oc_target_dirty);
		bool more = false;
		if (wrote && target && atomic_load(&c->oc_dirty) > target) {
			pthread_mutex_lock(&c->dirty_lock);
			more = c->dirty_list != NULL;
			pthread_mutex_unlock(&c->dirty_lock);
		}
		lc_orphans_evict(c);
		lc_icache_trim(c);
		lc_dcache_trim(c);
		lc_ra_pool_trim(c, false);
		pthread_mutex_lock(&c->work_lock);
		if (more)
			c->kick = true;
	}
	pthread_mutex_unlock(&c->work_lock);
	return NULL;
}

int lc_flusher_start(struct lclient *c)
{
	int r = lc_cap_workers_start(c);

	if (r < 0)
		return r;
	r = pthread_create(&c->flusher, NULL, flusher_main, c);
	if (r) {
		lc_cap_workers_stop(c);
		return -r;
	}
	c->flusher_running = true;
	return 0;
}

void lc_flusher_stop(struct lclient *c)
{
	if (!c->flusher_running)
		return;
	lc_revoke_drain(c);   /* revokes a hook deferred: answered before we stop */
	lc_cap_workers_stop(c);
	pthread_mutex_lock(&c->work_lock);
	c->stop = true;
	pthread_cond_signal(&c->work_cond);
	pthread_mutex_unlock(&c->work_lock);
	pthread_join(c->flusher, NULL);
	c->flusher_running = false;
	run_wbq(c, 0);   /* closes whose writeback the flusher had not started */
	run_capupd(c);
	/* run what is still queued, with the tails of revokes deferred since
	 * the drain (no hook may defer now: lc_caps_process sees no cap workers) */
	do
		lc_revoke_drain(c);
	while (lc_cap_work_run_queued(c));
}

int lc_wait_flushes(struct lclient *c, uint64_t timeout_ns)
{
	uint64_t end = now_mono_ns() + timeout_ns;
	struct cds_lfht_iter it;
	struct lc_inode *in;
	int busy;

	do {
		busy = 0;
		rcu_read_lock();
		LC_LFHT_FOR_EACH(c->inodes, &it, in, hnode) {
			pthread_mutex_lock(&in->lock);
			if (in->flushing_meta)
				busy++;
			pthread_mutex_unlock(&in->lock);
		}
		rcu_read_unlock();
		if (busy)
			usleep(5000);
	} while (busy && now_mono_ns() < end);
	return busy ? -ETIMEDOUT : 0;
}

void lc_data_register(struct lclient *c)
{
	c->cache_ops.flush_data = lc_wb_flush_data;
	c->cache_ops.drop_data = wb_drop_evicted;
}
