/*
 * local_file.c - object files and the work on them: the file table (struct lfile,
 * one per object file with queued work, I/O in flight or unsynced
 * writes), each file's FIFO of works (writes, punches, truncates,
 * unlinks, reads, allocations) submitted through the io_uring ring, and
 * what happens when a request's works are all done (its callback, its
 * budget returned, the FIFO of applied intents advanced).
 *
 * Locks: everything here belongs to the worker thread, except the
 * budget, returned under ls->lock (budget_return).
 */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#include <lmdb.h>
#include <sys/sdt.h>

#include "common/io.h"
#include "common/log.h"
#include "common/perf.h"
#include "common/time.h"
#include "common/uring_wait.h"
#include "store/local_int.h"

/* ---- files ---------------------------------------------------------- */

void local_fid_name(uint64_t fid, char *buf)
{
	snprintf(buf, 17, "%016" PRIx64, fid);
}

/* Zero [off, off+len) keeping the size: punch a hole, or write zeros where that is not supported. */
int local_zero_range_sync(int fd, uint64_t off, uint64_t len)
{
	static const char zeros[65536];

	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
		return 0;
	if (errno != EOPNOTSUPP)
		return -errno;
	while (len) {
		size_t n = len < sizeof(zeros) ? len : sizeof(zeros);
		int r = io_pwrite_all(fd, zeros, n, off);
		if (r)
			return r;
		off += n;
		len -= n;
	}
	return 0;
}

static struct lfile *file_get(struct local_store *ls, uint64_t fid)
{
	size_t h = (size_t)(fid * 0x9e3779b97f4a7c15ull) & ls->ftab_mask;
	struct lfile *f;

	for (f = ls->ftab[h]; f; f = f->hnext)
		if (f->fid == fid)
			return f;
	if (ls->nfiles >= ls->ftab_mask + 1) {
		/* grow the table (x2) */
		size_t nsize = (ls->ftab_mask + 1) * 2;
		struct lfile **nt = calloc(nsize, sizeof(*nt));
		if (nt) {
			for (size_t i = 0; i <= ls->ftab_mask; i++) {
				while ((f = ls->ftab[i])) {
					ls->ftab[i] = f->hnext;
					size_t nh = (size_t)(f->fid * 0x9e3779b97f4a7c15ull) & (nsize - 1);
					f->hnext = nt[nh];
					nt[nh] = f;
				}
			}
			free(ls->ftab);
			ls->ftab = nt;
			ls->ftab_mask = nsize - 1;
			h = (size_t)(fid * 0x9e3779b97f4a7c15ull) & ls->ftab_mask;
		}
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->fid = fid;
	f->fd = -1;
	f->hnext = ls->ftab[h];
	ls->ftab[h] = f;
	ls->nfiles++;
	return f;
}

/* Close and forget @f when nothing refers to it any more. */
void local_file_maybe_release(struct local_store *ls, struct lfile *f)
{
	struct lfile **pp;

	if (f->head || f->busy || f->dirty || f->fsyncing || f->blocked)
		return;
	pp = &ls->ftab[(size_t)(f->fid * 0x9e3779b97f4a7c15ull) & ls->ftab_mask];
	while (*pp != f)
		pp = &(*pp)->hnext;
	*pp = f->hnext;
	ls->nfiles--;
	if (f->fd >= 0) {
		close(f->fd);
		ls->open_fds--;
	}
	free(f);
}

/* Close @f's fd now if no SQE on it is in flight; else local_file_maybe_release() closes it later. */
static void file_close_fd(struct local_store *ls, struct lfile *f)
{
	if (f->fd < 0 || f->busy || f->fsyncing)
		return;
	close(f->fd);
	f->fd = -1;
	ls->open_fds--;
}

static int file_open(struct local_store *ls, struct lfile *f, bool create)
{
	char name[17];
	int fd;

	if (f->unlinked)
		return -ENOENT;   /* fids are never reused: only a read can get here (zeros) */
	if (f->fd >= 0 && (f->rw || !create))
		return 0;
	if (f->fd < 0 && ls->open_fds >= ls->max_fds)
		return -EMFILE;   /* our own cap: wait for a checkpoint to close files */
	local_fid_name(f->fid, name);
	if (create) {
		fd = openat(ls->objfd, name, O_RDWR | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT) {
			fd = openat(ls->objfd, name, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
			ls->dir_dirty = true;   /* a new directory entry: the checkpoint syncs objects/ */
		}
	} else {
		fd = openat(ls->objfd, name, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	if (f->fd >= 0) {
		/* read-only -> read-write, at the head of the FIFO (not busy); only a
		 * written, so read-write, file is ever fsynced */
		assert(!f->busy && !f->fsyncing);
		close(f->fd);
	} else {
		ls->open_fds++;
	}
	f->fd = fd;
	f->rw = create;
	return 0;
}

void local_file_mark_dirty(struct local_store *ls, struct lfile *f)
{
	if (!f->dirty) {
		f->dirty = true;
		f->dnext = ls->dirty;
		ls->dirty = f;
	}
}

struct io_uring_sqe *local_get_sqe(struct local_store *ls)
{
	struct io_uring_sqe *sqe;

	while (!(sqe = io_uring_get_sqe(&ls->ring)))
		io_uring_submit(&ls->ring);
	return sqe;
}

/* ---- request completion --------------------------------------------- */

static void budget_return(struct local_store *ls, size_t charge)
{
	pthread_mutex_lock(&ls->lock);
	ls->budget -= charge;
	pthread_cond_broadcast(&ls->space);
	pthread_mutex_unlock(&ls->lock);
}

void local_req_free(struct local_store *ls, struct lreq *req)
{
	struct fwork *w, *n;

	for (w = req->fw_head; w; w = n) {   /* planned but never queued (failed batch) */
		n = w->next;
		free(w);
	}
	budget_return(ls, req->charge);
	store_op_free(req->op);
	free(req->spill);
	free(req->oid);
	free(req);
	ls->busy_reqs--;
}

void local_req_callback(struct local_store *ls, struct lreq *req)
{
	if (!req->cb_done) {
		if (req->kind == LR_WRITE && req->r == 0)
			hist_add(&ls->h_write, now_mono_ns() - req->t0);
		req->cb_done = true;
		req->cb(req->r, req->arg);
	}
}

/* Pop finished write requests off the FIFO head: their intents are applied. */
static void fifo_advance(struct local_store *ls)
{
	struct lreq *req;

	while ((req = ls->fifo_head) && req->finished && req->cb_done) {
		ls->fifo_head = req->fnext;
		if (!ls->fifo_head)
			ls->fifo_tail = NULL;
		ls->applied_upto = req->seq;
		if (ls->ckpt_landed_first == UINT64_MAX)
			ls->ckpt_landed_first = req->seq;   /* the running checkpoint does not cover it */
		local_req_free(ls, req);
	}
}

/* Every file work of @req is done. */
static void req_works_done(struct local_store *ls, struct lreq *req)
{
	req->finished = true;
	ls->works_reqs--;
	if (req->kind == LR_READ) {
		local_req_callback(ls, req);
		local_req_free(ls, req);
	} else if (req->seq) {
		fifo_advance(ls);
	} else if (req->cb_done) {
		local_req_free(ls, req);
	}
}

static void fwork_done(struct local_store *ls, struct fwork *w, int r)
{
	struct lfile *f = w->f;
	struct lreq *req = w->req;

	assert(f->head == w);
	f->head = w->next;
	if (!f->head)
		f->tail = NULL;
	if (w->kind == FW_WRITE)
		ls->unlanded -= w->len;
	if (r < 0) {
		if (w->kind == FW_READ) {
			req->r = r;
		} else if (w->kind == FW_ALLOC) {
			/* the data is whole; only the promise of space is weaker
			 * (the next write's admission reserves again, or says ENOSPC) */
			derr(STORE, "local store %s: reserving space in objects/%016" PRIx64 " again after the "
			     "effects before it: %s", ls->path, w->fid, strerror(-r));
		} else {
			int expected = 0;
			derr(STORE, "local store %s: applying a committed write to objects/%016" PRIx64
			     " failed: %s; the store is now read-only, reopen it to replay",
			     ls->path, w->fid, strerror(-r));
			atomic_compare_exchange_strong(&ls->broken, &expected, -EIO);
		}
	}
	free(w);
	if (--req->pending == 0)
		req_works_done(ls, req);
}

/*
 * Out of file descriptors (our cap or the process'): park @f, its work stays
 * queued, and have a checkpoint run so synced files can be closed.
 */
static bool fd_starved(struct local_store *ls, struct lfile *f, int r)
{
	if (r != -EMFILE && r != -ENFILE)
		return false;
	if (!f->blocked) {
		f->blocked = true;
		f->bnext = ls->blocked;
		ls->blocked = f;
	}
	return true;
}

/* Start the work at the head of @f (synchronous ones run right here). */
void local_file_kick(struct local_store *ls, struct lfile *f)
{
	struct io_uring_sqe *sqe;
	struct fwork *w;
	int r;

	while ((w = f->head) && !f->busy && !f->blocked) {
		switch (w->kind) {
		case FW_TRUNC:
			r = file_open(ls, f, true);
			if (fd_starved(ls, f, r))
				return;
			if (r == 0 && ftruncate(f->fd, (off_t)w->off) < 0)
				r = -errno;
			local_file_mark_dirty(ls, f);
			fwork_done(ls, w, r);
			continue;
		case FW_UNLINK: {
			char name[17];
			/* a checkpoint fsync may still be in flight on the fd: it stays open until that
			 * completes (local_file_maybe_release); the data is gone, later checkpoints skip it */
			f->unlinked = true;
			file_close_fd(ls, f);
			local_fid_name(f->fid, name);
			r = unlinkat(ls->objfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
			ls->dir_dirty = true;
			fwork_done(ls, w, r);
			continue;
		}
		case FW_READ:
			if (atomic_load(&ls->broken)) {
				/* a committed effect failed: this file may lack it (a failed write
				 * precedes this read in its FIFO); reads of object data fail now */
				fwork_done(ls, w, -EIO);
				continue;
			}
			r = file_open(ls, f, false);
			if (fd_starved(ls, f, r))
				return;
			if (r == -ENOENT) {   /* no data written yet: all zeros */
				memset(w->data, 0, w->len);
				fwork_done(ls, w, 0);
				continue;
			}
			if (r) {
				fwork_done(ls, w, r);
				continue;
			}
			sqe = local_get_sqe(ls);
			io_uring_prep_read(sqe, f->fd, w->data + w->done, (unsigned)(w->len - w->done), w->off + w->done);
			break;
		case FW_WRITE:
			r = file_open(ls, f, true);
			if (fd_starved(ls, f, r))
				return;
			if (r == 0 && ls->test_fail_apply && --ls->test_fail_apply == 0)
				r = -EIO;   /* test hook: as if the disk failed this write */
			if (r) {
				fwork_done(ls, w, r);
				continue;
			}
			local_file_mark_dirty(ls, f);
			sqe = local_get_sqe(ls);
			io_uring_prep_write(sqe, f->fd, w->data + w->done, (unsigned)(w->len - w->done), w->off + w->done);
			break;
		case FW_ZERO:
			r = file_open(ls, f, true);
			if (fd_starved(ls, f, r))
				return;
			if (r) {
				fwork_done(ls, w, r);
				continue;
			}
			local_file_mark_dirty(ls, f);
			sqe = local_get_sqe(ls);
			io_uring_prep_fallocate(sqe, f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
						(off_t)w->off, (off_t)w->len);
			break;
		case FW_ALLOC:
			/* in order after the effects before it (a punch or truncate
			 * queued earlier would free what local_admit() reserved) */
			r = file_open(ls, f, true);
			if (fd_starved(ls, f, r))
				return;
			if (r) {
				fwork_done(ls, w, r);
				continue;
			}
			local_file_mark_dirty(ls, f);
			sqe = local_get_sqe(ls);
			io_uring_prep_fallocate(sqe, f->fd, FALLOC_FL_KEEP_SIZE, (off_t)w->off, (off_t)w->len);
			break;
		default:
			abort();
		}
		io_uring_sqe_set_data(sqe, &w->u);
		f->busy = true;
	}
	local_file_maybe_release(ls, f);
}

void local_fwork_cqe(struct local_store *ls, struct fwork *w, int res)
{
	struct lfile *f = w->f;

	f->busy = false;
	if (res == -EINTR || res == -EAGAIN) {
		local_file_kick(ls, f);   /* retry as is */
		return;
	}
	switch (w->kind) {
	case FW_READ:
		if (res < 0)
			break;
		if (res == 0) {   /* the file is shorter than the object: the rest is a hole */
			memset(w->data + w->done, 0, w->len - w->done);
			w->done = w->len;
		} else {
			lg_uring_mark_defined(w->data + w->done, (size_t)res);
			w->done += (uint64_t)res;
		}
		if (w->done < w->len) {
			local_file_kick(ls, f);
			return;
		}
		res = 0;
		break;
	case FW_WRITE:
		if (res < 0)
			break;
		w->done += (uint64_t)res;
		if (res > 0 && w->done < w->len) {
			local_file_kick(ls, f);
			return;
		}
		res = w->done < w->len ? -EIO : 0;
		break;
	case FW_ZERO:
		if (res == -EOPNOTSUPP)
			res = local_zero_range_sync(f->fd, w->off, w->len);
		break;
	case FW_ALLOC:
		if (res == -EOPNOTSUPP)
			res = 0;   /* a filesystem without fallocate: nothing could be reserved before either */
		break;
	default:
		break;
	}
	fwork_done(ls, w, res);
	local_file_kick(ls, f);
}

/* Queue the planned works of @req on their files (after the commit). */
void local_req_queue_works(struct local_store *ls, struct lreq *req)
{
	struct fwork *w = req->fw_head, *n;

	/* @req may be freed by the last work completing synchronously: do not touch it after */
	req->fw_head = req->fw_tail = NULL;
	ls->works_reqs++;   /* LOCK_EFFECTS is held until it is done */
	for (; w; w = n) {
		n = w->next;
		w->next = NULL;
		w->f = file_get(ls, w->fid);
		if (!w->f) {
			/* cannot even track the file: treat as a failed effect */
			derr(STORE, "local store %s: out of memory applying a write", ls->path);
			atomic_store(&ls->broken, -EIO);
			free(w);
			if (--req->pending == 0)
				req_works_done(ls, req);
			continue;
		}
		if (w->f->tail)
			w->f->tail->next = w;
		else
			w->f->head = w;
		w->f->tail = w;
		if (w->kind == FW_WRITE) {
			ls->bytes_since_ckpt += w->len;
			ls->unlanded += w->len;
		}
		local_file_kick(ls, w->f);
	}
}

int local_plan_work(struct lreq *req, enum fw_kind kind, uint64_t fid, uint64_t off, uint64_t len, void *data)
{
	struct fwork *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->u.kind = U_FWORK;
	w->kind = kind;
	w->fid = fid;
	w->req = req;
	w->off = off;
	w->len = len;
	w->data = data;
	if (req->fw_tail)
		req->fw_tail->next = w;
	else
		req->fw_head = w;
	req->fw_tail = w;
	req->pending++;
	return 0;
}

void local_drop_planned(struct lreq *req)
{
	struct fwork *w, *n;

	for (w = req->fw_head; w; w = n) {
		n = w->next;
		free(w);
	}
	req->fw_head = req->fw_tail = NULL;
	req->pending = 0;
}
