/*
 * local_space.c - space admission: the store's filesystem usage (statvfs, refreshed
 * at most every SPACE_REFRESH_NS) and its nearfull / full / failsafe
 * state, what a write op may add to the disk, and reserving file space
 * before a batch commits so that applying it afterwards cannot run out.
 * The sp_ fields are atomics any thread may refresh (local_space); the
 * batch room and admission belong to the worker thread.
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

/* ---- space ---------------------------------------------------------- */

#define SPACE_REFRESH_NS (100ull * 1000 * 1000)
#define OP_OVERHEAD 4096              /* LMDB pages an op may dirty, beyond its payload */
#define FULL_HEADROOM (1u << 20)      /* closer than this to the full ratio is full */

/*
 * statvfs of the store's filesystem, and the state it puts the store in.
 * Any thread; a transition is logged once (nearfull: a warning; full and
 * failsafe: an error, with what to do).
 */
void local_space_refresh(struct local_store *ls)
{
	struct statvfs v;
	uint64_t f, total, avail, used;
	double ratio;
	int state = STORE_SPACE_OK, was;

	if (fstatvfs(ls->dirfd, &v) < 0)
		return;
	f = v.f_frsize ? v.f_frsize : v.f_bsize;
	total = (uint64_t)v.f_blocks * f;
	avail = (uint64_t)v.f_bavail * f;
	used = total > avail ? total - avail : 0;
	ratio = total ? (double)used / (double)total : 0;
	/* less than FULL_HEADROOM short of a ratio counts as past it: no write of any size fits there */
	if (used + FULL_HEADROOM >= (uint64_t)((double)total * ls->failsafe_ratio))
		state = STORE_SPACE_FAILSAFE;
	else if (used + FULL_HEADROOM >= (uint64_t)((double)total * ls->full_ratio))
		state = STORE_SPACE_FULL;
	else if (ratio >= ls->nearfull_ratio)
		state = STORE_SPACE_NEARFULL;
	atomic_store(&ls->sp_total, total);
	atomic_store(&ls->sp_avail, avail);
	atomic_store(&ls->sp_state, state);
	atomic_store(&ls->sp_ns, now_mono_ns());
	was = atomic_exchange(&ls->sp_logged, state);
	if (was == state)
		return;
	if (state == STORE_SPACE_OK)
		dinfo(STORE, "local store %s: %.0f%% of its filesystem in use: no longer nearfull", ls->path, ratio * 100);
	else if (state == STORE_SPACE_NEARFULL)
		dinfo(STORE, "local store %s: warning: nearfull: %.0f%% of its filesystem in use (%" PRIu64 " MiB free); writes "
		      "fail with ENOSPC past %.0f%%", ls->path, ratio * 100, avail >> 20, ls->full_ratio * 100);
	else
		derr(STORE, "local store %s: %s: %.0f%% of its filesystem in use (%" PRIu64 " MiB free): writes that "
		     "need space fail with ENOSPC%s; delete files or add space", ls->path,
		     state == STORE_SPACE_FULL ? "full" : "past its failsafe ratio", ratio * 100, avail >> 20,
		     state == STORE_SPACE_FULL ? " (removes and the MDS's metadata still pass)" : "");
}

int local_space(struct store *st, struct store_space *out)
{
	struct local_store *ls = LS(st);

	if (now_mono_ns() - atomic_load(&ls->sp_ns) >= SPACE_REFRESH_NS)
		local_space_refresh(ls);
	out->total = atomic_load(&ls->sp_total);
	out->avail = atomic_load(&ls->sp_avail);
	out->used = out->total > out->avail ? out->total - out->avail : 0;
	out->state = (enum store_space_state)atomic_load(&ls->sp_state);
	out->nearfull_ratio = ls->nearfull_ratio;
	out->full_ratio = ls->full_ratio;
	out->failsafe_ratio = ls->failsafe_ratio;
	out->enospc = perf_get(&ls->pc_enospc);
	return 0;
}

/* What an op may add to the filesystem: its data twice (intent, file), its omap, some pages. */
uint64_t local_op_growth(const struct store_op *op)
{
	uint64_t g = 0;
	bool grows = false;

	for (size_t i = 0; i < op->n; i++) {
		const struct store_subop *s = &op->v[i];
		switch (s->kind) {
		case SOP_WRITE:
		case SOP_WRITE_FULL:
		case SOP_APPEND:
			g += 2 * s->len;
			grows = true;
			break;
		case SOP_OMAP_SET:
			g += strlen(s->key) + s->len;
			grows = true;
			break;
		case SOP_CREATE:
			grows = true;
			break;
		case SOP_ALLOCATE:
			g += s->len;   /* file blocks; nothing in the redo log */
			grows = true;
			break;
		default:
			break;   /* removes, truncates, zeroes and omap removals free space or keep it */
		}
	}
	return grows ? g + OP_OVERHEAD : 0;
}

/* The room a write batch has: up to the full ratio (failsafe for full_try stores). */
void local_batch_room_init(struct local_store *ls)
{
	double ratio = ls->full_try ? ls->failsafe_ratio : ls->full_ratio;
	uint64_t total, used;

	local_space_refresh(ls);
	total = atomic_load(&ls->sp_total);
	used = total - atomic_load(&ls->sp_avail);
	ls->batch_room = (int64_t)((double)total * ratio) - (int64_t)used - (int64_t)ls->unlanded;
	ls->batch_room_resv = (int64_t)((double)total * ls->failsafe_ratio) - (int64_t)used - (int64_t)ls->unlanded;
}

/*
 * Reserve file space before the op commits: the range of each write once
 * nearfull, and what store_op_allocate asks for always (@sync: made durable
 * now, as the op's completion promises).
 */
static int prealloc_one(struct local_store *ls, uint64_t fid, uint64_t off, uint64_t len, bool sync)
{
	char name[17];
	int fd, r = 0;

	local_fid_name(fid, name);
	fd = openat(ls->objfd, name, O_RDWR | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		fd = openat(ls->objfd, name, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		ls->dir_dirty = true;
	}
	if (fd < 0)
		return -errno;
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) < 0 && errno != EOPNOTSUPP)
		r = -errno;
	else if (sync && fdatasync(fd) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int prealloc_op(struct local_store *ls, const struct store_op *op, const struct objrec *rec, bool writes)
{
	bool exists = rec->exists;
	uint64_t fid = rec->fid, size = rec->size, nf = ls->next_fid;
	int r = 0;

#define MAKE()                           \
	do {                             \
		if (!exists) {           \
			exists = true;   \
			fid = nf++;      \
			size = 0;        \
		}                        \
	} while (0)

	for (size_t i = 0; i < op->n && r == 0; i++) {
		const struct store_subop *s = &op->v[i];
		switch (s->kind) {
		case SOP_CREATE:
		case SOP_OMAP_SET:
			MAKE();
			break;
		case SOP_WRITE:
			MAKE();
			if (s->len && writes)
				r = prealloc_one(ls, fid, s->off, s->len, false);
			if (s->off + s->len > size)
				size = s->off + s->len;
			break;
		case SOP_WRITE_FULL:
			MAKE();
			if (s->len && writes)
				r = prealloc_one(ls, fid, 0, s->len, false);
			size = s->len;
			break;
		case SOP_APPEND:
			MAKE();
			if (s->len && writes)
				r = prealloc_one(ls, fid, size, s->len, false);
			size += s->len;
			break;
		case SOP_ALLOCATE:
			MAKE();
			r = prealloc_one(ls, fid, s->off, s->len, true);
			if (s->off + s->len > size)
				size = s->off + s->len;
			break;
		case SOP_TRUNCATE:
			if (exists)
				size = s->off;
			break;
		case SOP_REMOVE:
			exists = false;
			break;
		default:
			break;
		}
	}
#undef MAKE
	return r;
}

/*
 * Does @op only write inside @rec, an object whose every byte has its
 * blocks (OBJ_F_ALLOC)?  Then its file needs no new space: what it needs
 * is its bytes in the redo log until the next checkpoint (*@log).
 */
static bool writes_in_allocated(const struct store_op *op, const struct objrec *rec, uint64_t *log)
{
	*log = 0;
	if (!rec->exists || rec->inl || !rec->alloc)
		return false;
	for (size_t i = 0; i < op->n; i++) {
		const struct store_subop *s = &op->v[i];

		switch (s->kind) {
		case SOP_WRITE:
			if (s->off > rec->size || s->len > rec->size - s->off)
				return false;
			*log += s->len;
			break;
		case SOP_WRITE_FULL:   /* cut to its length, then written: see exec_write */
			if (s->len > rec->size)
				return false;
			*log += s->len;
			break;
		case SOP_ASSERT_EXISTS:
		case SOP_OMAP_CMP:
			break;
		case SOP_CREATE:
			if (s->excl)
				return false;
			break;
		default:
			return false;
		}
	}
	return true;
}

/*
 * May @req take the space it needs?  Ops that free or keep space always
 * may.  Past nearfull the file space of its writes is reserved now, so
 * applying them after the commit cannot run out of space.  -ENOSPC, with
 * nothing of the op written, when not.
 */
int local_admit(struct local_store *ls, const struct lreq *req, const struct objrec *rec, bool inl)
{
	/* an inline object that spills writes its bytes to its file too */
	uint64_t spill = !inl && rec->exists && rec->inl ? rec->size : 0;
	uint64_t grow = req->grow + 2 * spill, log;
	bool nearfull = atomic_load(&ls->sp_state) >= STORE_SPACE_NEARFULL, allocates = false;
	int r;

	if (!grow)
		return 0;
	/*
	 * Counted as new space, though an intent may reuse pages LMDB freed
	 * after the last checkpoint: whether a page is free to reuse depends on
	 * the readers of every process, so only what statvfs shows is trusted.
	 * A write into space allocated for it (store_op_allocate, or written
	 * before) needs only its redo log bytes, and may use the room up to
	 * the failsafe ratio: that is what fallocate(2) promised the writer.
	 */
	if (!inl && (int64_t)grow > ls->batch_room && writes_in_allocated(req->op, rec, &log)) {
		grow = log + OP_OVERHEAD;
		if ((int64_t)grow > ls->batch_room_resv) {
			perf_inc(&ls->pc_enospc, 1);
			return -ENOSPC;
		}
	} else if ((int64_t)grow > ls->batch_room) {
		perf_inc(&ls->pc_enospc, 1);
		return -ENOSPC;
	}
	ls->batch_room -= (int64_t)grow;
	ls->batch_room_resv -= (int64_t)grow;
	for (size_t i = 0; i < req->op->n; i++)
		allocates |= req->op->v[i].kind == SOP_ALLOCATE;
	/* an op applied inline writes no file: nothing to reserve (and no file to make) */
	if (!inl && (nearfull || allocates) &&
	    ((spill && nearfull && (r = prealloc_one(ls, rec->fid, 0, spill, false))) ||
	     (r = prealloc_op(ls, req->op, rec, nearfull)))) {
		if (r == -ENOSPC || r == -EDQUOT)
			perf_inc(&ls->pc_enospc, 1);
		return r == -EDQUOT ? -ENOSPC : r;
	}
	return 0;
}
