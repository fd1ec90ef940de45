/*
 * local_ckpt.c - checkpoints: fdatasync every object file written since the last one
 * (and objects/ when names changed) through the ring, then say which of
 * our intents are covered (ls->my_lowest; the next write transaction
 * publishes it and the covered intents can be deleted).  A failed sync
 * stops the store.  Worker thread only: no lock.
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

#include "common/log.h"
#include "common/perf.h"
#include "common/time.h"
#include "common/uring_wait.h"
#include "store/local_int.h"

#define CKPT_BYTES (16ull << 20)

/* ---- checkpoints ---------------------------------------------------- */

/* Retry every parked file (after a checkpoint closed files, or a timer). */
void local_unblock_all(struct local_store *ls)
{
	struct lfile *f, *list = ls->blocked;

	ls->blocked = NULL;
	ls->blocked_retry_ns = now_mono_ns();
	while ((f = list)) {
		list = f->bnext;
		f->blocked = false;
		local_file_kick(ls, f);   /* may park it again */
	}
}

/* A checkpoint finished: every intent of ours that landed before it began is synced. */
static void ckpt_covered(struct local_store *ls)
{
	uint64_t low = ls->ckpt_landed_first;

	if (low == UINT64_MAX && ls->fifo_head)
		low = ls->fifo_head->seq;
	ls->my_lowest = low;   /* the next write txn writes it to our owners record */
}

static void ckpt_start(struct local_store *ls)
{
	struct io_uring_sqe *sqe;
	struct lfile *f, *retry = NULL;
	struct fsync_ctx *c;

	ls->ckpt_landed_first = UINT64_MAX;
	ls->ckpt_err = 0;
	ls->ckpt_incomplete = false;
	ls->ckpt_last_ns = now_mono_ns();
	ls->bytes_since_ckpt = 0;
	ls->st_ckpts++;
	perf_inc(&ls->pc_ckpts, 1);
	while ((f = ls->dirty)) {
		ls->dirty = f->dnext;
		f->dirty = false;
		if (f->unlinked || f->fd < 0) {
			/*
			 * Unlinked after it was written: its data is gone and the unlink is committed
			 * (an intent not cleared before a later directory sync covers it), so
			 * nothing of it needs syncing.
			 */
			local_file_maybe_release(ls, f);
			continue;
		}
		c = malloc(sizeof(*c));
		if (!c) {
			/* not synced: it stays dirty for the next checkpoint, this one clears nothing */
			ls->ckpt_incomplete = true;
			f->dnext = retry;
			retry = f;
			continue;
		}
		c->u.kind = U_FSYNC;
		c->f = f;
		c->fd = f->fd;
		f->fsyncing++;   /* holds the fd open until the CQE */
		sqe = local_get_sqe(ls);
		io_uring_prep_fsync(sqe, f->fd, IORING_FSYNC_DATASYNC);
		io_uring_sqe_set_data(sqe, &c->u);
		ls->ckpt_pending++;
	}
	while ((f = retry)) {
		retry = f->dnext;
		local_file_mark_dirty(ls, f);
	}
	if (ls->dir_dirty) {
		ls->dir_dirty = false;
		c = malloc(sizeof(*c));
		if (c) {
			c->u.kind = U_FSYNC;
			c->f = NULL;
			c->fd = ls->objfd;
			sqe = local_get_sqe(ls);
			io_uring_prep_fsync(sqe, ls->objfd, 0);
			io_uring_sqe_set_data(sqe, &c->u);
			ls->ckpt_pending++;
		} else {
			ls->ckpt_incomplete = true;
			ls->dir_dirty = true;
		}
	}
	DTRACE_PROBE2(loligo_store, checkpoint_start, ls->applied_upto, ls->ckpt_pending);
	if (ls->ckpt_pending == 0 && !ls->ckpt_incomplete)
		ckpt_covered(ls);
}

/*
 * A checkpoint fdatasync completed.  A failure of the device (EIO, ENOSPC,
 * ...) stops the store: the kernel may have dropped the dirty pages and
 * marked them clean, so retrying the sync would "succeed" over lost data
 * (PostgreSQL's fsync lesson); the intents stay in LMDB for the next open
 * to replay.  EBADF, though, says the fd was not ours any more - a bug
 * here, not a disk error: it must not poison the store.  If the file was
 * unlinked meanwhile nothing of it matters; otherwise it is not known to
 * be synced, so it stays dirty and this checkpoint clears nothing.
 */
void local_fsync_cqe(struct local_store *ls, struct fsync_ctx *c, int res)
{
	struct lfile *f = c->f;

	if (f) {
		assert(f->fsyncing > 0 && f->fd == c->fd);
		f->fsyncing--;
	}
	if (res == -EBADF && f) {
		derr(STORE, "local store %s: checkpoint fsync of objects/%016" PRIx64 "%s: bad file descriptor %d (a bug)",
		     ls->path, f->fid, f->unlinked ? " (unlinked meanwhile, ignored)" : "", c->fd);
		if (!f->unlinked) {
			ls->ckpt_incomplete = true;
			local_file_mark_dirty(ls, f);
		}
	} else if (res < 0) {
		derr(STORE, "local store %s: checkpoint fsync of %s%016" PRIx64 " failed: %s", ls->path,
		     f ? "objects/" : "the objects directory ", f ? f->fid : 0, strerror(-res));
		if (ls->ckpt_err == 0)
			ls->ckpt_err = res;
	}
	if (f)
		local_file_maybe_release(ls, f);
	free(c);
	if (--ls->ckpt_pending)
		return;
	if (ls->ckpt_err) {
		/* the intents stay in LMDB and are replayed by the next open */
		derr(STORE, "local store %s: checkpoint fsync failed: %s; the store is now read-only, reopen it to replay",
		     ls->path, strerror(-ls->ckpt_err));
		atomic_store(&ls->broken, -EIO);
		return;
	}
	if (ls->ckpt_incomplete)
		return;   /* what was not synced is dirty again: the next checkpoint covers it */
	DTRACE_PROBE1(loligo_store, checkpoint_done, ls->my_lowest);
	ckpt_covered(ls);
	if (ls->blocked)
		local_unblock_all(ls);
}

/* Start a checkpoint when there are unsynced writes and it is time (or @force). */
void local_maybe_checkpoint(struct local_store *ls, bool force)
{
	if (ls->ckpt_pending || atomic_load(&ls->broken))
		return;
	if (!ls->dirty && !ls->dir_dirty) {
		/* every applied effect was covered by an earlier, finished checkpoint */
		ls->ckpt_landed_first = UINT64_MAX;
		ckpt_covered(ls);
		return;
	}
	if (force || ls->blocked || ls->bytes_since_ckpt >= CKPT_BYTES ||
	    now_mono_ns() - ls->ckpt_last_ns >= ls->ckpt_interval_ns)
		ckpt_start(ls);
}
