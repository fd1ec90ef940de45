/*
 * file.c - open files: read with sequential readahead, write, flush, fsync.
 *
 * Reads go straight to the data objects (objio.c) and are clamped to the
 * size the client knows (the MDS's, or larger after local buffered writes).
 * Buffered data not yet written back is overlaid on what the store returns:
 * the overlay is copied before the store read is issued, so a writeback that
 * completes in between cannot make the read see older bytes.
 *
 * Readahead is per open handle, like the kernel's file_ra_state: a read that
 * starts where the previous one ended is sequential; the window starts at
 * 128 KiB (or the read size) and doubles up to client_readahead_max.  A
 * sequential miss reads the whole window at once (objects in parallel) and
 * serves the following reads from it; when the reader has consumed half of
 * the buffer the next window is prefetched asynchronously, so a streaming
 * reader finds its data already there.  Buffers are tagged with the inode's
 * data_gen and dropped when a write or truncate bumped it.  Reads through
 * one handle are serialised by fh->ra_lock (the handle's stream position,
 * as Linux' f_pos_lock), which is held across the read of that handle only.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "store/store.h"

#define RA_MIN (128u << 10)

struct ra_pending {
	uint64_t off;
	size_t len;
	char *buf;
	uint64_t gen;
	struct lc_io_batch b;
};

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
	fh->ra_last_end = UINT64_MAX;
	pthread_mutex_lock(&in->lock);
	in->nopen++;
	if ((flags & O_ACCMODE) != O_RDONLY)
		in->nwriters++;
	pthread_mutex_unlock(&in->lock);
	pthread_mutex_lock(&c->fh_lock);
	fh->open_next = c->open_fhs;
	if (c->open_fhs)
		c->open_fhs->open_prev = fh;
	c->open_fhs = fh;
	pthread_mutex_unlock(&c->fh_lock);
	return fh;
}

static void ra_drop_pending(struct lc_fh *fh)
{
	struct ra_pending *p = fh->ra_next;

	if (!p)
		return;
	fh->ra_next = NULL;
	lc_io_batch_wait(&p->b);
	free(p->buf);
	free(p);
}

static void ra_drop(struct lc_fh *fh)
{
	ra_drop_pending(fh);
	free(fh->ra_buf);
	fh->ra_buf = NULL;
	fh->ra_len = 0;
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
	ra_drop(fh);
	pthread_mutex_unlock(&fh->ra_lock);
	pthread_mutex_lock(&fh->in->lock);
	if ((fh->flags & O_ACCMODE) != O_RDONLY)
		fh->in->nwriters--;
	bool purge = --fh->in->nopen == 0 && fh->in->purge_pending;
	pthread_mutex_unlock(&fh->in->lock);
	if (purge)
		lc_purge_data(c, fh->in);
	pthread_mutex_destroy(&fh->ra_lock);
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
static int read_direct(struct lclient *c, struct lc_inode *in, uint32_t osize, uint64_t off, size_t len,
		       char *buf)
{
	struct lc_extent *snap = NULL;
	int r;

	if (has_buffered(in))
		snap = lc_wb_snapshot(in, off, len);
	r = lc_obj_read(c, in->ino, osize, off, len, buf);
	lc_wb_apply_snapshot(snap, off, len, buf);
	return r;
}

static void ra_prefetch(struct lclient *c, struct lc_fh *fh, uint32_t osize, uint64_t off, size_t len, uint64_t gen)
{
	struct ra_pending *p = calloc(1, sizeof(*p));

	if (!p)
		return;
	p->buf = malloc(len);
	if (!p->buf) {
		free(p);
		return;
	}
	p->off = off;
	p->len = len;
	p->gen = gen;
	lc_io_batch_init(&p->b);
	lc_io_batch_read(c, &p->b, fh->in->ino, osize, off, len, p->buf);
	fh->ra_next = p;
}

/* fh->ra_lock held.  Try to serve the read from the readahead buffers. */
static bool ra_serve(struct lclient *c, struct lc_fh *fh, uint64_t off, size_t len, char *buf, uint64_t gen)
{
	struct ra_pending *p = fh->ra_next;

	/* the prefetch holds the start of this read: wait for it, make it current */
	if (p && off >= p->off && off < p->off + p->len) {
		fh->ra_next = NULL;
		int r = lc_io_batch_wait(&p->b);
		free(fh->ra_buf);
		fh->ra_buf = NULL;
		fh->ra_len = 0;
		if (r == 0 && p->gen == gen) {
			fh->ra_buf = p->buf;
			fh->ra_off = p->off;
			fh->ra_len = p->len;
			fh->ra_gen = p->gen;
		} else {
			free(p->buf);
		}
		free(p);
	}
	if (!fh->ra_buf || fh->ra_gen != gen)
		return false;
	if (off < fh->ra_off || off + len > fh->ra_off + fh->ra_len)
		return false;
	memcpy(buf, fh->ra_buf + (off - fh->ra_off), len);
	return true;
}

ssize_t lc_read(struct lclient *c, struct lc_fh *fh, off_t offset, size_t len, void *vbuf)
{
	struct lc_inode *in = fh->in;
	char *buf = vbuf;
	uint64_t off = (uint64_t)offset;
	uint64_t t0 = now_mono_ns();
	int r = 0;

	if (offset < 0)
		return -EINVAL;
	if ((fh->flags & O_ACCMODE) == O_WRONLY)
		return -EBADF;
	uint64_t size = lc_inode_size(in);
	if (off >= size || len == 0)
		return 0;
	if (len > size - off)
		len = (size_t)(size - off);
	uint32_t osize = lc_inode_object_size(in);
	uint64_t ramax = cfg_uint(CFG_client_readahead_max);

	if (!ramax || has_buffered(in)) {
		r = read_direct(c, in, osize, off, len, buf);
		goto out;
	}

	pthread_mutex_lock(&fh->ra_lock);
	uint64_t gen = atomic_load(&in->data_gen);
	bool seq = off == fh->ra_last_end ||
		   (fh->ra_buf && off >= fh->ra_off && off < fh->ra_off + fh->ra_len);
	if (ra_serve(c, fh, off, len, buf, gen)) {
		perf_inc(&c->perf.ra_hit, 1);
	} else if (seq) {
		/* sequential miss: read a whole window, keep it */
		perf_inc(&c->perf.ra_miss, 1);
		size_t win = fh->ra_win ? fh->ra_win * 2 : RA_MIN;
		if (win < len)
			win = len;
		if (win > ramax)
			win = ramax > len ? (size_t)ramax : len;
		fh->ra_win = win;
		uint64_t want = win;
		if (want > size - off)
			want = size - off;
		ra_drop(fh);
		char *nb = malloc(want);
		if (!nb) {
			r = read_direct(c, in, osize, off, len, buf);
		} else {
			r = lc_obj_read(c, in->ino, osize, off, want, nb);
			if (r == 0) {
				memcpy(buf, nb, len);
				fh->ra_buf = nb;
				fh->ra_off = off;
				fh->ra_len = want;
				fh->ra_gen = gen;
				perf_inc(&c->perf.ra_bytes, want - len);
			} else {
				free(nb);
			}
		}
	} else {
		/* random access: no readahead, shrink the window */
		fh->ra_win = 0;
		r = read_direct(c, in, osize, off, len, buf);
	}
	fh->ra_last_end = off + len;
	/* keep one window ahead of a sequential reader */
	if (r == 0 && seq && fh->ra_buf && !fh->ra_next && fh->ra_win) {
		uint64_t bend = fh->ra_off + fh->ra_len;
		if (bend < size && bend - (off + len) <= fh->ra_win / 2) {
			size_t n = fh->ra_win;
			if (n > size - bend)
				n = (size_t)(size - bend);
			ra_prefetch(c, fh, osize, bend, n, gen);
			perf_inc(&c->perf.ra_bytes, n);
		}
	}
	pthread_mutex_unlock(&fh->ra_lock);
out:
	if (r < 0)
		return r;
	perf_inc(&c->perf.rd_bytes, len);
	hist_add(&c->perf.read_lat, now_mono_ns() - t0);
	return (ssize_t)len;
}

/*
 * A write (or fallocate) by anyone but root clears setuid, and setgid when
 * the group may execute or the writer is not in the file's group, as
 * file_remove_privs() does; FUSE leaves it to us (FUSE_CAP_HANDLE_KILLPRIV).
 * The MDS makes the change; the frontend's kernel learns of the new mode
 * through lc_callbacks.  Costs nothing for files without those bits.
 */
static int kill_privs(struct lclient *c, struct lc_fh *fh)
{
	struct lc_inode *in = fh->in;
	const struct lc_cred *cr = &fh->cred;
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

ssize_t lc_write(struct lclient *c, struct lc_fh *fh, off_t offset, size_t len, const void *buf)
{
	struct lc_inode *in = fh->in;
	uint64_t off = (uint64_t)offset;
	uint64_t t0 = now_mono_ns();
	bool append = fh->flags & O_APPEND;
	int r;

	if (offset < 0)
		return -EINVAL;
	if ((fh->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	if (len == 0)
		return 0;
	/* past the limit: EFBIG first, as generic_write_checks() says it */
	if (!append && off >= lc_max_file_size(c))
		return -EFBIG;
	/* the data store is full: say so now, as a local filesystem would, not at writeback */
	if (lc_data_full(c))
		return -ENOSPC;
	r = kill_privs(c, fh);
	if (r < 0)
		return r;
	if (fh->flags & (O_SYNC | O_DSYNC | O_DIRECT)) {
		/* write through: buffered data of this inode goes first */
		r = lc_wb_flush_data(c, in);
		if (r < 0)
			return r;
		uint32_t osize = lc_inode_object_size(in);
		if (append)
			off = lc_inode_size(in);
		r = clamp_to_limit(c, off, &len);
		if (r < 0)
			return r;
		r = lc_obj_index_range(c, in, osize, off, len);
		if (r == 0)
			r = lc_obj_write(c, in->ino, osize, off, len, buf);
		if (r < 0)
			return r;
		pthread_mutex_lock(&in->lock);
		uint64_t cur = in->mi.size;
		if ((in->dirty_meta & MDSP_DIRTY_SIZE) && in->wsize > cur)
			cur = in->wsize;
		in->wsize = off + len > cur ? off + len : cur;
		in->wmtime = lc_now_mdsp();
		in->dirty_meta |= MDSP_DIRTY_SIZE | MDSP_DIRTY_MTIME;
		in->wcred = fh->cred;
		atomic_fetch_add(&in->data_gen, 1);
		lc_mark_dirty_locked(c, in);
		pthread_mutex_unlock(&in->lock);
		if (fh->flags & (O_SYNC | O_DSYNC)) {
			r = lc_wb_report(c, in);
			if (r == 0)
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

int lc_flush(struct lclient *c, struct lc_fh *fh)
{
	if ((fh->flags & O_ACCMODE) == O_RDONLY && !fh->wrote)
		return 0;
	return lc_wb_flush(c, fh->in);
}

int lc_fsync(struct lclient *c, struct lc_fh *fh, bool datasync)
{
	int r = lc_wb_flush(c, fh->in);

	if (r < 0)
		return r;
	/*
	 * Every MDS request the file depends on must be SAFE: its create, the
	 * size report just sent, setattrs, a rename into place.  Its parents'
	 * changes need no wait of their own: the MDS journals in the order it
	 * applies, so the SAFE reply of the file's own latest request covers
	 * every earlier change (and a lost parent takes the file's create
	 * with it, which fails here).
	 */
	return lc_wait_unsafe(c, fh->in);
}

int lc_release(struct lclient *c, struct lc_fh *fh)
{
	int r = 0;

	if ((fh->flags & O_ACCMODE) != O_RDONLY || fh->wrote)
		r = lc_wb_flush(c, fh->in);
	lc_fh_free(c, fh);
	return r;
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
	if ((in->dirty_meta & MDSP_DIRTY_SIZE) && in->wsize > size)
		size = in->wsize;
	uint32_t osize = in->mi.object_size ? in->mi.object_size : c->default_object_size;
	pthread_mutex_unlock(&in->lock);

	lc_wb_discard_past(c, in, 0);
	pthread_mutex_lock(&in->lock);
	in->dirty_meta = 0; /* nothing left to report about a file that is gone */
	pthread_mutex_unlock(&in->lock);
	lc_obj_index_forget(in, 0);
	/* the store work is the purge thread's, never this caller's (a FUSE
	 * worker, or the NFS gateway's lease reaper closing expired opens) */
	if (size)
		lc_purge_enqueue(c, in->ino, osize, size);
}

int lc_truncate_data(struct lclient *c, struct lc_inode *in, uint64_t old_size, uint64_t new_size)
{
	uint32_t osize = lc_inode_object_size(in);

	lc_wb_discard_past(c, in, new_size);
	pthread_mutex_lock(&in->lock);
	in->mi.size = new_size;
	pthread_mutex_unlock(&in->lock);
	if (new_size >= old_size)
		return 0;
	lc_obj_index_forget(in, new_size / osize + (new_size % osize ? 1 : 0));
	return lc_obj_truncate(c, in->ino, osize, old_size, new_size);
}

int lc_fallocate(struct lclient *c, struct lc_fh *fh, int mode, off_t offset, off_t length)
{
	struct lc_inode *in = fh->in;
	uint64_t off = (uint64_t)offset, len = (uint64_t)length;
	int r;

	if (offset < 0 || length <= 0)
		return -EINVAL;
	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE))
		return -EOPNOTSUPP;
	if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE))
		return -EOPNOTSUPP;   /* as Linux: a hole is punched inside the size only */
	if ((fh->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	if (len > lc_max_file_size(c) || off > lc_max_file_size(c) - len)
		return -EFBIG;
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		uint32_t osize = lc_inode_object_size(in);
		uint64_t size = lc_inode_size(in), end = off + len;
		struct lc_io_batch b;
		char oid[64];

		r = kill_privs(c, fh);
		if (r < 0)
			return r;
		/* buffered data of the range must not come back after the punch */
		r = lc_wb_flush_data(c, in);
		if (r < 0)
			return r;
		if (end > size)
			end = size;
		lc_io_batch_init(&b);
		for (uint64_t o = off; o < end;) {
			uint64_t objno = o / osize, ooff = o % osize, n = osize - ooff;
			struct store_op *op = store_op_new();

			if (n > end - o)
				n = end - o;
			if (!op)
				break;
			/* a hole in an object that does not exist is already a hole */
			store_op_assert_exists(op);
			store_op_zero(op, ooff, n);
			lc_obj_name(oid, sizeof(oid), in->ino, objno);
			lc_io_batch_submit_maybe(c, &b, oid, op);
			o += n;
		}
		r = lc_io_batch_wait(&b);
		atomic_fetch_add(&in->data_gen, 1);
		pthread_mutex_lock(&in->lock);
		in->wmtime = lc_now_mdsp();   /* a punch changes the data: mtime and ctime move */
		in->dirty_meta |= MDSP_DIRTY_MTIME;
		lc_mark_dirty_locked(c, in);
		pthread_mutex_unlock(&in->lock);
		return r;
	}
	if ((mode & FALLOC_FL_KEEP_SIZE) || off + len <= lc_inode_size(in))
		return 0;   /* objects are sparse: there is nothing to reserve */
	struct lc_attr set = { .size = off + len };
	r = kill_privs(c, fh);
	return r < 0 ? r : lc_fsetattr(c, fh, &set, LC_SET_SIZE, &fh->cred, NULL);
}
