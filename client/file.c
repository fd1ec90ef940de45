/*
 * file.c - open files: read with sequential readahead, write, flush, fsync.
 *
 * Reads go straight to the data objects (objio.c) and are clamped to the
 * size the client knows (the MDS's, or larger after local buffered writes);
 * without Fs that size is fetched from the MDS first, and without Fc
 * nothing read is kept (no readahead): another client may be writing.
 * Writes are buffered only under Fb (writeback.c); otherwise they go to the
 * objects at once and, unless the file is ours alone, the new size reaches
 * the MDS before the write returns (caps.c).
 * Buffered data not yet written back is overlaid on what the store returns:
 * the overlay is copied before the store read is issued, so a writeback that
 * completes in between cannot make the read see older bytes.
 *
 * Readahead is per open handle, like the kernel's file_ra_state, and keeps
 * several store reads in flight across object boundaries, as ceph-fuse's
 * ObjectCacher does.  A read that starts where the previous one ended, or
 * inside what was already read ahead, is sequential; the window starts at
 * 128 KiB (or the read size) and doubles with each sequential read up to
 * client_readahead_max.  Once less than half a window is read ahead of the
 * reader, the next window is issued as chunks of one object extent each,
 * one store read per chunk (rados: one rados_aio_read per object extent),
 * all in flight at once.  A reader takes references on the chunks that cover
 * its range and waits for those still in flight without ra_lock (readers
 * of one handle in parallel: FUSE's async reads), and the FUSE frontend
 * replies straight from the chunks (lc_read_iov: the bytes are copied once,
 * by the kernel, into the page cache).  Chunks are tagged with the inode's
 * data_gen and dropped when a write or truncate bumped it; a chunk that
 * finishes after a bump is not served (the read goes to the store).  What
 * all handles hold read ahead is bounded by client_oc_size; past it reads
 * go straight to the store.  A stream keeps two windows behind its reader
 * for READs that come late, but what it reads ahead comes first: a top-up
 * that would pass the bound drops what lies behind the read first (with a
 * window over a third of the bound, keeping both sent every other READ to
 * the store).  A random read drops the stream and is read
 * into a buffer of its own, with one store read per object it touches.
 *
 * Where the store lends its own buffers (rados: store_aio_read_lend, the
 * reply's bufferlist) and client_read_lend is on, a chunk's bytes stay in
 * the store's buffer, kept until the chunk's last reference goes: librados'
 * C API would copy every byte read out of the reply into ours, in the one
 * messenger thread that receives every OSD reply of the client.  A short
 * read (a hole at the object's end) or a missing object takes a pool
 * buffer with the zeros instead.
 *
 * Chunk buffers of 128 KiB and more come from a per-client pool of size
 * classes (powers of two, up to 4 MiB) and go back to it, up to three
 * times client_readahead_max bytes kept (what one stream holds: a window
 * ahead, two behind for late READs; a smaller pool still faulted in a
 * third of the chunks): a fresh 4 MiB malloc is an mmap whose
 * 1024 page faults the store's reply thread paid while copying the object
 * into it (rados: librados' messenger thread, the one every OSD reply of
 * the client goes through).  Buffers idle for 10 s are freed.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "client/data_int.h"
#include "common/lockdep.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "store/store.h"

#define RA_MIN (128u << 10)
#define RA_CHUNK_MAX (4u << 20)   /* one store read of readahead, at most */

/*
 * A readahead chunk: one object extent, read with one store read.  The
 * handle's list holds a reference, every lc_rdbuf serving from it another,
 * so a chunk can leave the list while a reply still points into it.
 */
struct ra_chunk {
	struct ra_chunk *next;    /* fh->ra_chunks; under fh->ra_lock */
	struct lclient *c;
	uint64_t off;             /* file range */
	size_t len;
	size_t cap;               /* buf's size (its pool class), what ra_total counts */
	uint64_t gen;             /* in->data_gen when issued */
	char *buf;                /* the bytes (a lent chunk: NULL until its read is done, then the store's) */
	bool lend;                /* read with lc_obj_read_lend_start: aio is a lent read */
	struct store_aio *lent;   /* done: the read whose buffer buf is (store_aio_put at the end) */
	_Atomic int refs;
	/* under fh->ra_lock */
	struct store_aio *aio;    /* in flight and nobody waiting for it yet */
	bool waiting;             /* a reader waits for it; others wait on fh->ra_cond */
	bool done;
	int err;
};

static int pool_class(size_t len, size_t *cap)
{
	size_t sz = (size_t)1 << LC_RA_POOL_MIN_SHIFT;

	if (len < sz)
		return -1;   /* small: malloc'd as it is */
	for (int i = 0; i < LC_RA_POOL_CLASSES; i++, sz <<= 1)
		if (len <= sz) {
			*cap = sz;
			return i;
		}
	return -1;
}

/* a buffer of at least @len bytes for a chunk (or a write buffer: writeback.c); *@cap gets its size */
char *lc_buf_get(struct lclient *c, size_t len, size_t *cap)
{
	int cl = pool_class(len, cap);
	char *b = NULL;

	if (cl < 0) {
		*cap = len;
		return malloc(len);
	}
	pthread_mutex_lock(&c->ra_pool_lock);
	c->ra_pool_used = now_mono_ns();
	b = c->ra_pool[cl];
	if (b) {
		memcpy(&c->ra_pool[cl], b, sizeof(void *));
		c->ra_pool_bytes -= *cap;
	}
	pthread_mutex_unlock(&c->ra_pool_lock);
	if (b) {
		perf_inc(&c->perf.ra_buf_reuse, 1);
		return b;
	}
	return malloc(*cap);
}

void lc_buf_put(struct lclient *c, char *b, size_t cap)
{
	size_t sz;
	int cl = pool_class(cap, &sz);

	if (cl >= 0 && sz == cap) {
		pthread_mutex_lock(&c->ra_pool_lock);
		c->ra_pool_used = now_mono_ns();
		if (c->ra_pool_bytes + cap <= 3 * cfg_uint(CFG_client_readahead_max)) {
			memcpy(b, &c->ra_pool[cl], sizeof(void *));
			c->ra_pool[cl] = b;
			c->ra_pool_bytes += cap;
			b = NULL;
		}
		pthread_mutex_unlock(&c->ra_pool_lock);
	}
	free(b);
}

void lc_ra_pool_trim(struct lclient *c, bool all)
{
	void *lists[LC_RA_POOL_CLASSES];

	pthread_mutex_lock(&c->ra_pool_lock);
	if (!c->ra_pool_bytes || (!all && now_mono_ns() - c->ra_pool_used < 10000000000ull)) {
		pthread_mutex_unlock(&c->ra_pool_lock);
		return;
	}
	memcpy(lists, c->ra_pool, sizeof(lists));
	memset(c->ra_pool, 0, sizeof(c->ra_pool));
	c->ra_pool_bytes = 0;
	pthread_mutex_unlock(&c->ra_pool_lock);
	for (int i = 0; i < LC_RA_POOL_CLASSES; i++)
		while (lists[i]) {
			void *n;

			memcpy(&n, lists[i], sizeof(void *));
			free(lists[i]);
			lists[i] = n;
		}
}

static void chunk_put(struct ra_chunk *k)
{
	if (atomic_fetch_sub(&k->refs, 1) != 1)
		return;
	if (k->aio && k->lend)   /* never waited for */
		store_aio_put(k->aio);
	else if (k->aio)         /* never waited for: the store still writes into buf */
		lc_obj_read_end(k->aio, k->buf, k->len);
	atomic_fetch_sub(&k->c->ra_total, k->cap);
	if (k->lent)
		store_aio_put(k->lent);
	else if (k->buf)
		lc_buf_put(k->c, k->buf, k->cap);
	free(k);
}

static void chunks_put(struct ra_chunk *list)
{
	while (list) {
		struct ra_chunk *n = list->next;
		chunk_put(list);
		list = n;
	}
}

struct lc_fh *lc_fh_new(struct lclient *c, struct lc_inode *in, int flags, const struct lc_cred *cr)
{
	struct lc_fh *fh = calloc(1, sizeof(*fh));

	if (!fh)
		return NULL;
	lc_get(in);
	fh->in = in;
	fh->flags = flags;
	if (cr)
		fh->cred = *cr;
	pthread_mutex_init(&fh->ra_lock, NULL);
	pthread_cond_init(&fh->ra_cond, NULL);
	fh->ra_last_end = 0;   /* a first read at 0 starts a stream, as in the kernel */
	pthread_mutex_lock(&in->lock);
	in->nopen++;
	if ((flags & O_ACCMODE) != O_RDONLY)
		in->nwriters++;
	fh->wb_since = lc_wb_err_sample_locked(in);
	pthread_mutex_unlock(&in->lock);
	pthread_mutex_lock(&c->fh_lock);
	fh->open_next = c->open_fhs;
	if (c->open_fhs)
		c->open_fhs->open_prev = fh;
	c->open_fhs = fh;
	pthread_mutex_unlock(&c->fh_lock);
	return fh;
}

struct lc_inode *lc_fh_inode(const struct lc_fh *fh)
{
	return fh->in;
}

void lc_fh_free(struct lclient *c, struct lc_fh *fh)
{
	pthread_mutex_lock(&c->fh_lock);
	if (fh->open_prev)
		fh->open_prev->open_next = fh->open_next;
	else
		c->open_fhs = fh->open_next;
	if (fh->open_next)
		fh->open_next->open_prev = fh->open_prev;
	pthread_mutex_unlock(&c->fh_lock);
	pthread_mutex_lock(&fh->ra_lock);
	struct ra_chunk *ra = fh->ra_chunks;   /* no reader left: nobody waits for one */
	fh->ra_chunks = NULL;
	pthread_mutex_unlock(&fh->ra_lock);
	chunks_put(ra);
	pthread_mutex_lock(&fh->in->lock);
	if ((fh->flags & O_ACCMODE) != O_RDONLY)
		fh->in->nwriters--;
	bool purge = --fh->in->nopen == 0 && fh->in->purge_pending;
	pthread_mutex_unlock(&fh->in->lock);
	if (purge)
		lc_purge_data(c, fh->in);
	/* what is not needed any more goes back to the MDS (Fw/Fb after the
	 * last writer, with the dirty size/mtime at once; what we want, soon) */
	pthread_mutex_lock(&fh->in->lock);
	/* an unlinked file's last close: the MDS purges its orphan as soon as
	 * it hears, and its handles go stale then */
	bool dirty = fh->in->dirty_meta || fh->in->mi.nlink == 0;
	pthread_mutex_unlock(&fh->in->lock);
	if (dirty || purge)
		lc_caps_update(c, fh->in);
	else
		lc_caps_update_later(c, fh->in);
	pthread_mutex_destroy(&fh->ra_lock);
	pthread_cond_destroy(&fh->ra_cond);
	free(fh->lock_owners);   /* released already when the frontend said so (lc_fh_release_lock_owners) */
	lc_put(c, fh->in);
	free(fh);
}

static bool has_buffered(struct lc_inode *in)
{
	pthread_mutex_lock(&in->lock);
	bool b = in->dirty || in->flushing;
	pthread_mutex_unlock(&in->lock);
	return b;
}

/* read [off, off+len) from the objects with the buffered overlay */
static int read_direct(struct lclient *c, struct lc_inode *in, const struct store_file_layout *ly, uint64_t off,
		       size_t len, char *buf)
{
	struct lc_extent *snap = NULL;
	int r;

	if (has_buffered(in))
		snap = lc_wb_snapshot(in, off, len);
	r = lc_obj_read(c, in->ino, ly, off, len, buf);
	lc_wb_apply_snapshot(snap, off, len, buf);
	return r;
}

/*
 * fh->ra_lock held.  Read [@from, @to) ahead, one chunk per object extent
 * (a stripe unit: store_file_map),
 * appended to the handle's list (every chunk in it ends at or before
 * fh->ra_next == @from).  Stops early past the client's readahead bound,
 * counting @credit bytes of chunks the caller unlinked and frees after it.
 */
static void ra_issue_locked(struct lclient *c, struct lc_fh *fh, const struct store_file_layout *ly, uint64_t from,
			    uint64_t to, uint64_t gen, uint64_t credit)
{
	uint64_t bound = cfg_uint(CFG_client_oc_size);
	struct ra_chunk **tail = &fh->ra_chunks;

	lockdep_assert_held(&fh->ra_lock);
	while (*tail)
		tail = &(*tail)->next;
	while (from < to) {
		uint64_t objno, ooff;
		size_t n = (size_t)store_file_map(ly, from, &objno, &ooff);
		struct ra_chunk *k;

		if (n > to - from)
			n = (size_t)(to - from);
		if (n > RA_CHUNK_MAX)
			n = RA_CHUNK_MAX;
		if (bound && atomic_load(&c->ra_total) + n > bound + credit)
			break;
		k = calloc(1, sizeof(*k));
		if (!k)
			break;
		int r = lc_obj_read_lend_start(c, fh->in->ino, ly, from, n, &k->aio);
		if (r == 0) {
			k->lend = true;
			k->cap = n;   /* what ra_total counts: the store's buffer holds n bytes */
		} else if (r != -EOPNOTSUPP) {
			free(k);
			break;
		} else {
			k->buf = lc_buf_get(c, n, &k->cap);
			if (!k->buf || lc_obj_read_start(c, fh->in->ino, ly, from, n, k->buf, &k->aio) < 0) {
				if (k->buf)
					lc_buf_put(c, k->buf, k->cap);
				free(k);
				break;
			}
		}
		k->c = c;
		k->off = from;
		k->len = n;
		k->gen = gen;
		atomic_init(&k->refs, 1);
		atomic_fetch_add(&c->ra_total, k->cap);
		perf_inc(&c->perf.ra_bytes, n);
		*tail = k;
		tail = &k->next;
		from += n;
	}
	fh->ra_next = from;
}

/*
 * Wait for a lent chunk's read @a (its only waiter, without ra_lock): on
 * success k->buf is the store's buffer, kept with k->lent.  A short read (a
 * hole at the object's end) or a missing object gets a buffer of the
 * client's with the zeros, as lc_obj_read_end() gives them.
 */
static int chunk_lent_end(struct ra_chunk *k, struct store_aio *a)
{
	const char *data;
	ssize_t r = store_aio_wait_lent(a, &data);
	size_t cap;
	char *b;

	if (r == -ENOENT)
		r = 0;          /* never written: a hole */
	if (r >= 0 && (size_t)r == k->len) {
		k->buf = (char *)data;   /* served read-only (lc_read_iov) */
		k->lent = a;
		perf_inc(&k->c->perf.ra_lent, 1);
		return 0;
	}
	if (r < 0) {
		store_aio_put(a);
		return (int)r;
	}
	b = lc_buf_get(k->c, k->len, &cap);
	if (!b) {
		store_aio_put(a);
		return -ENOMEM;
	}
	if (r)
		memcpy(b, data, (size_t)r);
	memset(b + r, 0, k->len - (size_t)r);   /* past the object's end: zeros */
	store_aio_put(a);
	atomic_fetch_add(&k->c->ra_total, cap - k->cap);
	k->cap = cap;
	k->buf = b;
	return 0;
}

/* fh->ra_lock held (dropped while waiting).  Wait until @k's read is done. */
static int chunk_wait_locked(struct lc_fh *fh, struct ra_chunk *k, bool *waited)
{
	lockdep_assert_held(&fh->ra_lock);
	while (!k->done) {
		*waited = true;
		if (k->waiting) {
			pthread_cond_wait(&fh->ra_cond, &fh->ra_lock);
			continue;
		}
		struct store_aio *a = k->aio;

		k->aio = NULL;
		k->waiting = true;
		pthread_mutex_unlock(&fh->ra_lock);
		int r = k->lend ? chunk_lent_end(k, a) : lc_obj_read_end(a, k->buf, k->len);
		pthread_mutex_lock(&fh->ra_lock);
		k->err = r;
		k->done = true;
		k->waiting = false;
		pthread_cond_broadcast(&fh->ra_cond);
	}
	return k->err;
}

/* fh->ra_lock held.  Unlink the chunks @keep rejects onto *@drop. */
static void ra_unlink_locked(struct lc_fh *fh, bool (*keep)(const struct ra_chunk *, uint64_t), uint64_t arg,
			     struct ra_chunk **drop)
{
	struct ra_chunk **pp = &fh->ra_chunks;

	lockdep_assert_held(&fh->ra_lock);
	while (*pp) {
		struct ra_chunk *k = *pp;

		if (keep(k, arg)) {
			pp = &k->next;
			continue;
		}
		*pp = k->next;
		k->next = *drop;
		*drop = k;
	}
}

static bool keep_gen(const struct ra_chunk *k, uint64_t gen) { return k->gen == gen; }
static bool keep_none(const struct ra_chunk *k, uint64_t arg) { (void)k; (void)arg; return false; }
static bool keep_ahead(const struct ra_chunk *k, uint64_t off) { return k->off + k->len > off; }

void lc_rdbuf_release(struct lclient *c, struct lc_rdbuf *rb)
{
	(void)c;
	for (int i = 0; i < rb->nhold; i++)
		chunk_put(rb->hold[i]);
	rb->nhold = 0;
	rb->niov = 0;
	free(rb->own);
	rb->own = NULL;
}

/*
 * Serve [off, off+len) from readahead chunks (issuing what the stream
 * needs).  Return: 1 served (rb filled), 0 not (read it directly).
 */
static int ra_read(struct lclient *c, struct lc_fh *fh, const struct store_file_layout *ly, uint64_t size,
		   uint64_t off, size_t len, struct lc_rdbuf *rb)
{
	struct lc_inode *in = fh->in;
	uint64_t ramax = cfg_uint(CFG_client_readahead_max);
	uint64_t end = off + len, pos;
	struct ra_chunk *drop = NULL;
	bool waited = false;
	int served = 0;

	pthread_mutex_lock(&fh->ra_lock);
	uint64_t gen = atomic_load(&in->data_gen);
	ra_unlink_locked(fh, keep_gen, gen, &drop);
	/* sequential: where the stream's reads ended, or near it: the kernel's
	 * own readahead sends several READs at once, which FUSE workers take
	 * out of order by up to its window (ra_last_end is the furthest end) */
	uint64_t behind = 2 * (uint64_t)fh->ra_win;
	bool seq = off == fh->ra_last_end ||
		   (fh->ra_win && off + behind >= fh->ra_last_end && off <= fh->ra_next + fh->ra_win);
	if (!seq) {
		/* random access: no readahead, forget the stream */
		dout(CLIENT, 20, "read %" PRIx64 " %" PRIu64 "~%zu: not sequential (last end %" PRIu64 ", ahead to %"
		     PRIu64 ", window %zu)", in->ino, off, len, fh->ra_last_end, fh->ra_next, fh->ra_win);
		fh->ra_win = 0;
		ra_unlink_locked(fh, keep_none, 0, &drop);
		fh->ra_last_end = end;
		goto out_unlock;
	}
	if (!fh->ra_chunks)
		fh->ra_next = off;   /* else from where it stopped: READs for a gap are on their way too */
	if (fh->ra_next > off + len + 2 * (uint64_t)ramax)
		fh->ra_next = off;   /* a stream that went back (a re-read): start again here */
	/* the window grows with the stream, as the kernel's ondemand readahead */
	size_t win = fh->ra_win ? fh->ra_win * 2 : RA_MIN;
	if (win < len)
		win = len;
	if (win > ramax)
		win = ramax > len ? (size_t)ramax : len;
	fh->ra_win = win;
	/* less than half a window ahead: issue up to a window past this read,
	 * so each top-up is whole object extents rather than one read's worth */
	if (fh->ra_next < size && (fh->ra_next < end || fh->ra_next - end < win / 2)) {
		uint64_t to = end + win < size ? end + win : size, bound = cfg_uint(CFG_client_oc_size), credit = 0;

		/* what the stream read ahead comes before what it keeps behind for
		 * late READs: with a window over a third of client_oc_size, both
		 * do not fit, and keeping them sent every other READ to the store */
		if (bound && atomic_load(&c->ra_total) + (to - fh->ra_next) > bound) {
			ra_unlink_locked(fh, keep_ahead, off, &drop);
			for (struct ra_chunk *k = drop; k; k = k->next)
				credit += k->cap;   /* freed after ra_lock (unless a reader holds it) */
		}
		ra_issue_locked(c, fh, ly, fh->ra_next, to, gen, credit);
	}
	/* the chunks that cover the read, referenced */
	pos = off;
	for (struct ra_chunk *k = fh->ra_chunks; k && pos < end; k = k->next) {
		if (k->off + k->len <= pos)
			continue;
		if (k->off > pos || rb->nhold == LC_RDBUF_IOV)
			break;
		atomic_fetch_add(&k->refs, 1);
		rb->hold[rb->nhold++] = k;
		pos = k->off + k->len < end ? k->off + k->len : end;
	}
	if (pos < end) {
		/* a gap (bound reached, no memory): read it directly */
		dout(CLIENT, 20, "read %" PRIx64 " %" PRIu64 "~%zu: readahead has a gap at %" PRIu64, in->ino, off,
		     len, pos);
		goto out_release;
	}
	for (int i = 0; i < rb->nhold; i++)
		if (chunk_wait_locked(fh, rb->hold[i], &waited) < 0)
			goto out_release;   /* the direct read reports the error, or succeeds */
	/* a write or truncate meanwhile: the chunks may hold older bytes */
	if (atomic_load(&in->data_gen) != gen)
		goto out_release;
	pos = off;
	for (int i = 0; i < rb->nhold; i++) {
		struct ra_chunk *k = rb->hold[i];
		uint64_t hi = k->off + k->len < end ? k->off + k->len : end;

		rb->iov[i].iov_base = k->buf + (pos - k->off);
		rb->iov[i].iov_len = (size_t)(hi - pos);
		pos = hi;
	}
	rb->niov = rb->nhold;
	served = 1;
	if (end > fh->ra_last_end)
		fh->ra_last_end = end;
	/* drop what the stream left behind (kept two windows for READs that
	 * come late) */
	ra_unlink_locked(fh, keep_ahead, fh->ra_last_end > behind ? fh->ra_last_end - behind : 0, &drop);
	perf_inc(waited ? &c->perf.ra_wait : &c->perf.ra_hit, 1);
	goto out_unlock;

out_release:
	for (int i = 0; i < rb->nhold; i++)
		chunk_put(rb->hold[i]);   /* the list still holds each */
	rb->nhold = 0;
	if (end > fh->ra_last_end)
		fh->ra_last_end = end;
out_unlock:
	pthread_mutex_unlock(&fh->ra_lock);
	chunks_put(drop);
	return served;
}

/* lc_read_iov, with direct reads into @dst (NULL: a buffer of its own) */
static ssize_t do_read(struct lclient *c, struct lc_fh *fh, off_t offset, size_t len, struct lc_rdbuf *rb, char *dst)
{
	struct lc_inode *in = fh->in;
	uint64_t off = (uint64_t)offset;
	uint64_t t0 = now_mono_ns();
	int r = 0;

	rb->niov = rb->nhold = 0;
	rb->own = NULL;
	if (offset < 0)
		return -EINVAL;
	if ((fh->flags & O_ACCMODE) == O_WRONLY)
		return -EBADF;
	if (lc_evicted(c, NULL, 0))
		return -EIO;
	pthread_mutex_lock(&in->lock);
	uint32_t caps = in->caps;
	pthread_mutex_unlock(&in->lock);
	if (!c->mdsc)
		caps = MDSP_CAP_ALL;    /* no MDS (tests): the file is ours alone */
	if (!(caps & MDSP_CAP_FILE_SHARED) && len) {
		/* another client may be changing the size: ask.  Also while a
		 * size of ours is flushing (a write under Fw): it is only a floor
		 * (lc_inode_size takes the larger), another writer may have
		 * grown the file past it meanwhile */
		r = c->data_ops.getattr(c, in, NULL, true, NULL);
		if (r < 0)
			return r;
	}
	uint64_t size = lc_inode_size(in);
	if (off >= size || len == 0)
		return 0;
	if (len > size - off)
		len = (size_t)(size - off);
	struct store_file_layout ly;
	/* without Fc another client may be writing: nothing read is kept */
	uint64_t ramax = (caps & MDSP_CAP_FILE_CACHE) ? cfg_uint(CFG_client_readahead_max) : 0;

	lc_inode_layout(in, &ly);
	if ((r = lc_layout_resolve(c, in->ino, &ly)) < 0)
		return r;
	if (ramax && !has_buffered(in) && ra_read(c, fh, &ly, size, off, len, rb))
		goto out;
	/* random, or buffered data to overlay: straight into the caller's
	 * buffer, or one of its own */
	perf_inc(&c->perf.ra_miss, 1);
	if (!dst && !(dst = rb->own = malloc(len)))
		return -ENOMEM;
	r = read_direct(c, in, &ly, off, len, dst);
	if (r < 0)
		return r;
	rb->iov[0].iov_base = dst;
	rb->iov[0].iov_len = len;
	rb->niov = 1;
out:
	perf_inc(&c->perf.rd_bytes, len);
	hist_add(&c->perf.read_lat, now_mono_ns() - t0);
	return (ssize_t)len;
}

ssize_t lc_read_iov(struct lclient *c, struct lc_fh *fh, off_t offset, size_t len, struct lc_rdbuf *rb)
{
	return do_read(c, fh, offset, len, rb, NULL);
}

ssize_t lc_read(struct lclient *c, struct lc_fh *fh, off_t offset, size_t len, void *vbuf)
{
	struct lc_rdbuf rb;
	char *p = vbuf;
	ssize_t n = do_read(c, fh, offset, len, &rb, vbuf);

	for (int i = 0; n > 0 && i < rb.niov; i++) {
		if (rb.iov[i].iov_base != p)
			memcpy(p, rb.iov[i].iov_base, rb.iov[i].iov_len);
		p += rb.iov[i].iov_len;
	}
	lc_rdbuf_release(c, &rb);
	return n;
}

/*
 * The flags chattr set (MDSP_FL_*), as the MDS has them now: cached under
 * As (a change of them takes As back first: mds/server.c op_setattr), else
 * asked for.  Return: the flags, or -errno.
 */
static int64_t inode_flags(struct lclient *c, struct lc_inode *in)
{
	pthread_mutex_lock(&in->lock);
	bool cached = !c->mdsc || (in->caps & MDSP_CAP_AUTH_SHARED);
	uint32_t flags = in->mi.flags;
	pthread_mutex_unlock(&in->lock);
	if (!cached) {
		int r = c->data_ops.getattr(c, in, NULL, true, NULL);

		if (r < 0)
			return r;
		pthread_mutex_lock(&in->lock);
		flags = in->mi.flags;
		pthread_mutex_unlock(&in->lock);
	}
	return flags;
}

/*
 * A write (or fallocate) by anyone but root clears setuid, and setgid when
 * the group may execute or the writer is not in the file's group, as
 * file_remove_privs() does; FUSE leaves it to us (FUSE_CAP_HANDLE_KILLPRIV).
 * The MDS makes the change; the frontend's kernel learns of the new mode
 * through lc_callbacks.  Costs nothing for files without those bits.
 */
int lc_kill_suid(struct lclient *c, struct lc_inode *in, const struct lc_cred *cr)
{
	bool member;
	int r;

	if (cr->uid == 0)
		return 0;
	pthread_mutex_lock(&in->lock);
	uint32_t mode = in->mi.mode;
	gid_t gid = in->mi.gid;
	pthread_mutex_unlock(&in->lock);
	if (!S_ISREG(mode) || !(mode & (S_ISUID | S_ISGID)))
		return 0;
	member = cr->gid == gid;
	for (int i = 0; i < cr->ngroups && i < LC_MAX_GROUPS && !member; i++)
		member = cr->groups[i] == gid;
	if (!(mode & S_ISUID) && (mode & S_IXGRP) == 0 && member)
		return 0;   /* a setgid file without group execute keeps it for a member */
	struct mds_request *req = lc_req_new(c, MDSP_OP_SETATTR, in->ino, cr);
	struct lc_inode *t = NULL;

	if (!req)
		return c->mdsc ? -ENOMEM : 0;
	req->args.mask = MDSP_SETATTR_KILL_SUID;
	r = lc_req_run(c, req, &t);
	mdsc_request_put(req);
	lc_put(c, t);
	if (r < 0)
		return r;
	if (c->cb.inval_inode)
		c->cb.inval_inode(c->cb_arg, in->ino, -1, 0);   /* attributes only */
	return 0;
}

/* the kill of the opener's write: the FUSE kernel removed security.capability itself */
static int kill_privs(struct lclient *c, struct lc_fh *fh)
{
	return lc_kill_suid(c, fh->in, &fh->cred);
}

/*
 * The filesystem's limit, as generic_write_check_limits() applies s_maxbytes:
 * a write starting at or past it is -EFBIG, one crossing it is cut short
 * there (the caller returns the short count; the next write gets -EFBIG).
 */
static int clamp_to_limit(struct lclient *c, uint64_t off, size_t *len)
{
	uint64_t max = lc_max_file_size(c);

	if (off >= max)
		return -EFBIG;
	if (*len > max - off)
		*len = (size_t)(max - off);
	return 0;
}

/*
 * Byte quotas (loligo.quota.max_bytes, mds/rstat.c): the MDS counts a file's
 * size once a cap flush brings it, and says in each trace of a regular file
 * how far it may grow (quota_room, from the size it knew: quota_base).  A
 * write, or a fallocate, that grows the file past quota_base + quota_room
 * is cut short there (EDQUOT if it starts past it), as ext4 cuts a write at
 * a quota.  The room others used meanwhile is seen by asking again: before
 * refusing, and whenever the file has grown by an object since the MDS last
 * said, our size goes to the MDS first (lc_wb_flush, cap flush) and a
 * GETATTR brings the room back.  So what the MDS does not know of our
 * growth is under one object size, and with N clients writing into one
 * quota the tree may pass max_bytes by less than N object sizes.  A quota
 * set while a file is open for writing is seen at the next trace of it
 * (an open, a stat that reaches the MDS).  @whole: all or nothing
 * (fallocate).
 */
static int quota_allow(struct lclient *c, struct lc_inode *in, uint64_t off, size_t *len, bool whole)
{
	uint32_t osize = lc_inode_object_size(in);
	bool asked = false;
	int r;

	if (!c->mdsc)
		return 0;
	for (;;) {
		uint64_t end = off + *len, size = lc_inode_size(in), room, base, limit;

		pthread_mutex_lock(&in->lock);
		room = in->rare ? in->rare->quota_room : MDSP_QUOTA_NONE;
		base = in->rare ? in->rare->quota_base : 0;
		bool nomem = in->quota_nomem;
		pthread_mutex_unlock(&in->lock);
		if (nomem && end > size)
			return -ENOMEM;     /* a quota above we could not note */
		if (room == MDSP_QUOTA_NONE || room == MDSP_QUOTA_UNSAID || end <= size)
			return 0;
		limit = base > UINT64_MAX - room ? UINT64_MAX : base + room;
		if (!asked && (end > limit || end - base > osize)) {
			r = lc_wb_flush(c, in);
			if (r == 0)
				r = lc_cap_flush_sync(c, in);
			if (r == 0)
				r = c->data_ops.getattr(c, in, NULL, true, NULL);
			if (r < 0)
				return r;
			asked = true;
			continue;
		}
		if (end <= limit)
			return 0;
		if (limit < size)
			limit = size;
		if (off >= limit || whole) {
			perf_inc(&c->perf.quota_refused, 1);
			return -EDQUOT;
		}
		*len = (size_t)(limit - off);
		return 0;
	}
}

/*
 * A write while the data store is full: object by object, straight to the
 * store, which takes what lands in space reserved for it (fallocate:
 * store_op_allocate) and refuses the rest with ENOSPC before writing
 * anything of it.  Cut short at the first refused object (*@len: what was
 * written), ENOSPC when it was the first.
 */
static int write_while_full(struct lclient *c, struct lc_inode *in, const struct store_file_layout *ly, uint64_t off,
			    size_t *len, const char *buf)
{
	size_t done = 0;
	int r = 0;

	while (done < *len) {
		uint64_t objno, ooff;
		size_t n = (size_t)store_file_map(ly, off + done, &objno, &ooff);

		if (n > *len - done)
			n = *len - done;
		r = lc_obj_write(c, in->ino, ly, off + done, n, buf + done);
		if (r < 0)
			break;
		done += n;
	}
	if (r < 0 && !done)
		return r;
	*len = done;
	return 0;
}

static ssize_t write_fh(struct lclient *c, struct lc_fh *fh, off_t offset, size_t len, const void *buf)
{
	struct lc_inode *in = fh->in;
	uint64_t off = (uint64_t)offset;
	uint64_t t0 = now_mono_ns();
	bool append = fh->flags & O_APPEND, full;
	int64_t flags;
	int r;

	if (offset < 0)
		return -EINVAL;
	if ((fh->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	if (len == 0)
		return 0;
	/* evicted: the MDS gave this file to others, the store refuses us */
	if (lc_evicted(c, NULL, 0))
		return -EIO;
	/* past the limit: EFBIG first, as generic_write_checks() says it */
	if (!append && off >= lc_max_file_size(c))
		return -EFBIG;
	/* chattr: nothing written to an immutable file (also through a handle
	 * opened before), only appends to an append-only one */
	flags = inode_flags(c, in);
	if (flags < 0)
		return (int)flags;
	if ((flags & MDSP_FL_IMMUTABLE) || ((flags & MDSP_FL_APPEND) && !append))
		return -EPERM;
	{
		/* the file's data pool open before anything is buffered: the
		 * writeback (which may run on a revoke) then never asks the MDS */
		struct store_file_layout ly;

		lc_inode_layout(in, &ly);
		if ((r = lc_layout_resolve(c, in->ino, &ly)) < 0)
			return r;
	}
	/* the data store is full: the store says now whether the write lands
	 * in space fallocate reserved, as a local filesystem would, not at
	 * writeback (write_while_full) */
	full = lc_data_full(c);
	r = kill_privs(c, fh);
	if (r < 0)
		return r;
	r = quota_allow(c, in, append ? lc_inode_size(in) : off, &len, false);
	if (r < 0)
		return r;
	pthread_mutex_lock(&in->lock);
	uint32_t caps = in->caps;
	pthread_mutex_unlock(&in->lock);
	if (append && !(caps & MDSP_CAP_FILE_SHARED) && c->mdsc) {
		/* the end of the file is where another client may be writing */
		r = c->data_ops.getattr(c, in, NULL, true, NULL);
		if (r < 0)
			return r;
	}
	if (full || (fh->flags & (O_SYNC | O_DSYNC | O_DIRECT)) || (c->mdsc && !(caps & MDSP_CAP_FILE_BUFFER))) {
		/* write through: buffered data of this inode goes first */
		r = lc_wb_flush_data(c, in);
		if (r < 0)
			return r;
		struct store_file_layout ly;

		lc_inode_layout(in, &ly);
		if ((r = lc_layout_resolve(c, in->ino, &ly)) < 0)
			return r;
		if (append)
			off = lc_inode_size(in);
		r = clamp_to_limit(c, off, &len);
		if (r < 0)
			return r;
		r = lc_obj_index_range(c, in, &ly, off, len);
		if (r == 0)
			r = full ? write_while_full(c, in, &ly, off, &len, buf) : lc_obj_write(c, in->ino, &ly, off, len, buf);
		if (r < 0)
			return r;
		pthread_mutex_lock(&in->lock);
		lc_blocks_added_locked(c, in, off, len);
		lc_wb_note_write_locked(in, off + len);
		in->wmtime = lc_now_mdsp();
		in->dirty_meta |= MDSP_DIRTY_SIZE | MDSP_DIRTY_MTIME;
		lc_inode_note_write_locked(in);
		atomic_fetch_add(&in->data_gen, 1);
		lc_mark_dirty_locked(c, in);
		/* not ours alone (no Fb): others read the size at the MDS */
		bool shared = !(in->caps & MDSP_CAP_FILE_BUFFER);
		pthread_mutex_unlock(&in->lock);
		if ((fh->flags & (O_SYNC | O_DSYNC)) || (shared && c->mdsc)) {
			r = lc_cap_flush_sync(c, in);
			if (r == 0 && (fh->flags & (O_SYNC | O_DSYNC)))
				r = lc_wait_unsafe(c, in);
			if (r < 0)
				return r;
		}
	} else {
		r = lc_wb_write(c, in, &off, &len, buf, &fh->cred, append, lc_max_file_size(c));
		if (r < 0)
			return r;
	}
	fh->wrote = true;
	perf_inc(&c->perf.wr_bytes, len);
	hist_add(&c->perf.write_lat, now_mono_ns() - t0);
	return (ssize_t)len;
}

ssize_t lc_write(struct lclient *c, struct lc_fh *fh, off_t offset, size_t len, const void *buf)
{
	ssize_t n = write_fh(c, fh, offset, len, buf);

	/* another frontend wrote: the registered one drops its pages and attributes of the range */
	if (n > 0)
		lc_frontends_inode_changed(c, fh->in->ino, offset, (off_t)n);
	return n;
}

/*
 * Buffered under Fb (or with no MDS to share it with): nobody else has the
 * file's data, and another client's open revokes Fb, which writes it back
 * before the ack, so close-to-open holds without waiting here.
 */
static bool buffered_alone(struct lclient *c, struct lc_inode *in)
{
	pthread_mutex_lock(&in->lock);
	bool alone = !c->mdsc || (in->caps & MDSP_CAP_FILE_BUFFER);
	pthread_mutex_unlock(&in->lock);
	return alone;
}

/*
 * Start the writeback of what @fh's file buffers, as a close does: under Fb
 * without waiting for it (ceph-fuse's Client::_flush), else synchronously.
 * Return: the error of a synchronous writeback that kept the data (a
 * transient one), else 0.
 */
static int close_writeback(struct lclient *c, struct lc_fh *fh)
{
	pthread_mutex_lock(&fh->in->lock);
	bool pending = lc_data_pending_locked(fh->in);
	pthread_mutex_unlock(&fh->in->lock);
	if (!pending)
		return 0;   /* a FLUSH before took it; lc_fh_free updates the caps */
	if (buffered_alone(c, fh->in) && lc_wb_start(c, fh->in))
		return 0;
	return lc_wb_flush_data(c, fh->in);
}

int lc_flush(struct lclient *c, struct lc_fh *fh)
{
	int r, e;

	/* the requests made for this file that nobody waits for (its
	 * asynchronous create, setattrs) leave the cork before close()
	 * returns: once closed, a file is at the MDS as without the cork */
	if (c->mdsc)
		mdsc_uncork(c->mdsc);
	if ((fh->flags & O_ACCMODE) == O_RDONLY && !fh->wrote)
		return 0;
	/* a writeback error recorded since this handle last reported one, not
	 * the one this writeback may meet: that goes to the next fsync or
	 * close of every handle (fsync is where an application learns its
	 * data is safe; close only says what is already known, as on NFS
	 * with the kernel's async writeback, and as ceph-fuse) */
	pthread_mutex_lock(&fh->in->lock);
	bool pending = lc_data_pending_locked(fh->in) || fh->in->dirty_meta;
	pthread_mutex_unlock(&fh->in->lock);
	if (!pending)
		r = 0;          /* nothing to start: no flusher wakeup per close of an empty file */
	else if (buffered_alone(c, fh->in) && lc_wb_start(c, fh->in))
		r = 0;
	else
		r = lc_wb_flush(c, fh->in);   /* written through: the size report */
	e = lc_wb_err_check(fh->in, &fh->wb_since);
	return e ? e : r;
}

int lc_fsync(struct lclient *c, struct lc_fh *fh, bool datasync)
{
	/* the data, and a writeback error recorded since this handle's last
	 * fsync or close (its own, the flusher's or another handle's
	 * writeback: every handle hears it once) */
	int r = lc_evicted(c, NULL, 0) ? -EIO : lc_wb_flush(c, fh->in);
	int e = lc_wb_err_check(fh->in, &fh->wb_since);

	if (e)
		return e;
	if (r < 0)
		return r;
	/* the size and mtime must be journaled (FLUSH_ACK) */
	r = lc_cap_flush_sync(c, fh->in);
	if (r < 0)
		return r;
	/*
	 * Every MDS request the file depends on must be SAFE: its create,
	 * setattrs, a rename into place.  Its parents' changes need no wait of
	 * their own: the MDS journals in the order it applies, so the SAFE
	 * reply of the file's own latest request covers every earlier change
	 * (and a lost parent takes the file's create with it, which fails here).
	 */
	return lc_wait_unsafe(c, fh->in);
}

int lc_release(struct lclient *c, struct lc_fh *fh)
{
	bool purged;
	int r = 0, e;

	/* the last open of a file whose last link went: lc_fh_free purges its
	 * data, so writing it back first is only work (an rm of big files just
	 * written took their writeback into the RELEASEs, and an unmount waits
	 * for those) */
	pthread_mutex_lock(&fh->in->lock);
	purged = fh->in->purge_pending && fh->in->nopen == 1;
	pthread_mutex_unlock(&fh->in->lock);
	/* the data now (under Fb: started, and the flusher gives back Fw/Fb
	 * with the size and mtime once it is in the store); the size and
	 * mtime go with the caps we give back */
	if (!purged && ((fh->flags & O_ACCMODE) != O_RDONLY || fh->wrote))
		r = close_writeback(c, fh);
	e = lc_wb_err_check(fh->in, &fh->wb_since);
	lc_fh_free(c, fh);
	return e ? e : r;
}

int lc_sync_inode(struct lclient *c, struct lc_inode *in)
{
	int r = lc_evicted(c, NULL, 0) ? -EIO : lc_wb_flush(c, in);

	if (r == 0)
		r = lc_cap_flush_sync(c, in);
	if (r == 0)
		r = lc_wait_unsafe(c, in);
	return r;
}

int lc_fsync_dir(struct lclient *c, struct lc_inode *dir)
{
	if (lc_evicted(c, NULL, 0))
		return -EIO;
	/*
	 * What fsync(2) of a directory promises: the changes of its entries
	 * are durable (creates, unlinks, renames into or out of it, links) and
	 * its own attributes.  The Linux ceph client waits for the directory's
	 * unsafe requests (unsafe_dirop_wait) and so do we: those answered
	 * here under Dc first reach the MDS (async_submitting: between their
	 * Dc check and their send, microseconds), then every request the
	 * directory depends on is SAFE.  Other files' dirty data is theirs to
	 * fsync (an fsync of a directory used to write back the whole mount).
	 */
	pthread_mutex_lock(&dir->lock);
	lc_async_submit_wait_locked(dir);
	pthread_mutex_unlock(&dir->lock);
	/* its own size/times, if a flush of them is in flight */
	int r = lc_cap_flush_sync(c, dir);

	if (r < 0 && r != -ENOTCONN)
		return r;
	return lc_wait_unsafe(c, dir);
}

int lc_sync_fs(struct lclient *c)
{
	int r = lc_flush_all(c, true);
	if (c->mdsc) {
		int r2 = mdsc_sync(c->mdsc);
		if (r == 0)
			r = r2;
	}
	return r;
}

void lc_purge_data(struct lclient *c, struct lc_inode *in)
{
	pthread_mutex_lock(&in->lock);
	if (in->nopen > 0) {
		in->purge_pending = true;
		pthread_mutex_unlock(&in->lock);
		return;
	}
	in->purge_pending = false;
	uint64_t size = in->mi.size;
	if (((in->dirty_meta | in->flushing_meta) & MDSP_DIRTY_SIZE) && in->wsize > size)
		size = in->wsize;
	/* a create the MDS refused (asyncdir.c): the MDS never heard of a size */
	if (in->async_failed) {
		if (in->wsize > size)
			size = in->wsize;
		if (in->flushing_size > size)
			size = in->flushing_size;
	}
	struct store_file_layout ly;

	lc_mi_layout(c, &in->mi, &ly);
	pthread_mutex_unlock(&in->lock);

	lc_wb_discard_past(c, in, 0);
	pthread_mutex_lock(&in->lock);
	in->dirty_meta = 0; /* nothing left to report about a file that is gone */
	pthread_mutex_unlock(&in->lock);
	lc_obj_index_forget(in, 0);
	/* the store work is the purge thread's, never this caller's (a FUSE
	 * worker, the NFS gateway's lease reaper closing expired opens, or
	 * the MDS session's reader: an asynchronous unlink's reply) */
	if (size)
		lc_purge_enqueue(c, in->ino, &ly, size);
}

int lc_truncate_data(struct lclient *c, struct lc_inode *in, uint64_t old_size, uint64_t new_size)
{
	struct store_file_layout ly;

	lc_inode_layout(in, &ly);
	lc_wb_discard_past(c, in, new_size);
	pthread_mutex_lock(&in->lock);
	in->mi.size = new_size;
	/* the MDS has the new size, set after any size we flushed before:
	 * nothing of ours may raise it again (a flush sent again after an MDS
	 * restart arrives after the replayed setattr) */
	in->dirty_meta &= ~(uint32_t)MDSP_DIRTY_SIZE;
	in->flushing_meta &= ~(uint32_t)MDSP_DIRTY_SIZE;
	if (new_size < old_size)
		lc_blocks_truncated_locked(in, new_size);
	pthread_mutex_unlock(&in->lock);
	if (new_size >= old_size)
		return 0;
	lc_obj_index_forget(in, store_file_obj_first(&ly, new_size));
	int r = lc_layout_resolve(c, in->ino, &ly);

	return r < 0 ? r : lc_obj_truncate(c, in->ino, &ly, old_size, new_size);
}

int lc_get_flags(struct lclient *c, struct lc_inode *in, uint32_t *flags)
{
	int64_t f = lc_evicted(c, NULL, 0) ? -EIO : inode_flags(c, in);

	if (f < 0)
		return (int)f;
	*flags = (uint32_t)f;
	return 0;
}

/*
 * Submit one op per object extent (a stripe unit, store_file_map) of
 * [@off, @off+@len) built by @build, wait for them all.
 */
static int per_object(struct lclient *c, struct lc_inode *in, uint64_t off, uint64_t len, bool maybe_missing,
		      void (*build)(struct store_op *op, uint64_t ooff, uint64_t n, uint64_t osize))
{
	struct store_file_layout ly;
	uint64_t end = off + len;
	struct lc_io_batch b;
	char oid[64];

	int r;

	lc_inode_layout(in, &ly);
	if ((r = lc_layout_resolve(c, in->ino, &ly)) < 0)
		return r;
	lc_io_batch_init(&b);
	b.pool = ly.pool;
	for (uint64_t o = off; o < end;) {
		uint64_t objno, ooff, n = store_file_map(&ly, o, &objno, &ooff);
		struct store_op *op = store_op_new();

		if (n > end - o)
			n = end - o;
		if (!op) {
			pthread_mutex_lock(&b.m);
			if (!b.err)
				b.err = -ENOMEM;
			pthread_mutex_unlock(&b.m);
			break;
		}
		build(op, ooff, n, ly.object_size);
		lc_obj_name(oid, sizeof(oid), in->ino, objno);
		if (maybe_missing)
			lc_io_batch_submit_maybe(c, &b, oid, op);
		else
			lc_io_batch_submit_op(c, &b, oid, op);
		o += n;
	}
	return lc_io_batch_wait(&b);
}

static void build_zero(struct store_op *op, uint64_t ooff, uint64_t n, uint64_t osize)
{
	(void)osize;
	/* a hole in an object that does not exist is already a hole */
	store_op_assert_exists(op);
	store_op_zero(op, ooff, n);
}

static void build_alloc(struct store_op *op, uint64_t ooff, uint64_t n, uint64_t osize)
{
	(void)osize;
	store_op_allocate(op, ooff, n);
}

/*
 * Reservations are made from the start of each object: the local store
 * promises a write space only in an object whose every byte up to its size
 * has its blocks (OBJ_F_ALLOC), so a range starting inside an object takes
 * that object's head too (free when it holds data, as it usually does:
 * fallocate after the end of what was written).
 */
static void build_alloc_from_start(struct store_op *op, uint64_t ooff, uint64_t n, uint64_t osize)
{
	(void)osize;
	store_op_allocate(op, 0, ooff + n);
}

/*
 * Zero [off, end) of the data (inside @size: past it the objects hold
 * nothing), after writing back what is buffered there so that no
 * writeback brings it back.  What the objects held there is freed.
 */
static int zero_data(struct lclient *c, struct lc_inode *in, uint64_t off, uint64_t end, uint64_t size)
{
	int r = lc_wb_flush_data(c, in);

	if (r < 0)
		return r;
	if (end > size)
		end = size;
	if (off >= end)
		return 0;
	r = per_object(c, in, off, end - off, true, build_zero);
	pthread_mutex_lock(&in->lock);
	/* (also after an error: some objects were punched, claiming less is safer) */
	lc_blocks_removed_locked(c, in, off, end - off);
	pthread_mutex_unlock(&in->lock);
	return r;
}

/*
 * Space for [off, end) in the store (fallocate mode 0, KEEP_SIZE, and
 * ZERO_RANGE's after the zeroing).  The local store reserves it in the
 * object files; RADOS cannot (store_op_allocate: -EOPNOTSUPP).  Checked
 * against the store's free space up to its full ratio first, so that a
 * range that cannot fit fails with ENOSPC before anything is reserved.
 */
static int alloc_data(struct lclient *c, struct lc_inode *in, uint64_t off, uint64_t end, bool from_start)
{
	struct store_file_layout ly;
	uint64_t first, lo;
	struct store_space sp;
	int r;

	lc_inode_layout(in, &ly);
	if ((r = lc_layout_resolve(c, in->ino, &ly)) < 0)
		return r;
	/* from the object's start: in the plain layout that is a file range; a
	 * striped object's head holds other units (their index keys are set by
	 * the range's own, and their blocks are not counted) */
	first = store_file_layout_plain(&ly) ? off / ly.object_size * ly.object_size : off;
	lo = from_start ? first : off;
	if (c->store && store_space(c->store, &sp) == 0 && sp.total && sp.full_ratio > 0 &&
	    !strcmp(store_backend_name(c->store), "local")) {
		double room = (double)sp.total * sp.full_ratio - (double)sp.used;

		if (room < (double)(end - lo))
			return -ENOSPC;
	}
	r = lc_obj_index_range(c, in, &ly, lo, (size_t)(end - lo));
	if (r == 0)
		r = per_object(c, in, off, end - off, false, from_start ? build_alloc_from_start : build_alloc);
	if (r < 0)
		return r;
	pthread_mutex_lock(&in->lock);
	lc_blocks_added_locked(c, in, lo, end - lo);
	pthread_mutex_unlock(&in->lock);
	return 0;
}

/* the data changed without a write: mtime and ctime move, readahead and the NFS change attribute follow */
static void data_changed(struct lclient *c, struct lc_inode *in)
{
	atomic_fetch_add(&in->data_gen, 1);
	pthread_mutex_lock(&in->lock);
	in->wmtime = lc_now_mdsp();
	in->dirty_meta |= MDSP_DIRTY_MTIME;
	lc_inode_note_write_locked(in);
	lc_mark_dirty_locked(c, in);
	pthread_mutex_unlock(&in->lock);
}

int lc_fallocate(struct lclient *c, struct lc_fh *fh, int mode, off_t offset, off_t length)
{
	const int supported = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE;
	struct lc_inode *in = fh->in;
	uint64_t off = (uint64_t)offset, len = (uint64_t)length, end, size;
	int64_t flags;
	int r, r2;

	/* vfs_fallocate()'s checks, in its order */
	if (offset < 0 || length <= 0)
		return -EINVAL;
	if (mode & ~supported)
		return -EOPNOTSUPP;
	if ((mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
		return -EOPNOTSUPP;
	if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE))
		return -EOPNOTSUPP;   /* as Linux: a hole is punched inside the size only */
	if ((fh->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	/* chattr: append-only allows a reservation only, immutable nothing */
	flags = inode_flags(c, in);
	if (flags < 0)
		return (int)flags;
	if ((flags & MDSP_FL_APPEND) && (mode & ~FALLOC_FL_KEEP_SIZE))
		return -EPERM;
	if (flags & MDSP_FL_IMMUTABLE)
		return -EPERM;
	if (len > lc_max_file_size(c) || off > lc_max_file_size(c) - len)
		return -EFBIG;
	end = off + len;
	r = kill_privs(c, fh);
	if (r < 0)
		return r;
	size = lc_inode_size(in);
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		r = zero_data(c, in, off, end, size);
		data_changed(c, in);
		/* what the objects hold, at the MDS now: other clients' st_blocks */
		r2 = lc_cap_flush_sync(c, in);
		return r < 0 ? r : r2;
	}
	if (mode & FALLOC_FL_ZERO_RANGE) {
		/* zeros that keep their blocks, as ext4's unwritten extents:
		 * punched, then reserved again (on RADOS only punched) */
		r = zero_data(c, in, off, end, size);
		if (r == 0) {
			r = alloc_data(c, in, off, end, false);
			if (r == -EOPNOTSUPP)
				r = 0;
		}
		if (r == 0 && !(mode & FALLOC_FL_KEEP_SIZE) && end > lc_inode_size(in)) {
			struct lc_attr set = { .size = end };

			r = c->data_ops.fsetattr(c, fh, &set, LC_SET_SIZE, &fh->cred, NULL);
		}
		data_changed(c, in);
		r2 = lc_cap_flush_sync(c, in);
		return r < 0 ? r : r2;
	}
	/* mode 0 and KEEP_SIZE: the range's space, then the size (ext4's order:
	 * a reservation that fails leaves the size as it was) */
	if (!(mode & FALLOC_FL_KEEP_SIZE) && end > size) {
		size_t n = (size_t)len;

		if ((r = quota_allow(c, in, off, &n, true)) < 0)
			return r;
	}
	r = alloc_data(c, in, off, end, true);
	if (r == 0 && !(mode & FALLOC_FL_KEEP_SIZE) && end > size) {
		struct lc_attr set = { .size = end };

		r = c->data_ops.fsetattr(c, fh, &set, LC_SET_SIZE, &fh->cred, NULL);
	}
	r2 = lc_cap_flush_sync(c, in);
	return r < 0 ? r : r2;
}
