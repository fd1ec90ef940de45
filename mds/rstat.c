/*
 * rstat.c - recursive statistics of directories, exact at the MDS, and the
 * quotas that limit them (issue 22).
 *
 * Every directory inode carries what lies below it (mdsp_inode v4: rbytes,
 * rfiles, rsubdirs, rctime; rentries is rfiles + rsubdirs).  Unlike Ceph,
 * which propagates lazily and lets them lag, every op that changes them
 * adds its delta to the directory and all its ancestors in the same txn:
 * each ancestor is dirtied, so its inode (with the new absolute values)
 * rides in the same journal entry as the change itself, and a replay after
 * a crash restores exactly what was acknowledged.  Reading one is O(1): a
 * field of the cached inode.  An update costs O(depth): the walk up the
 * primary parents (in memory; an ancestor evicted from the cache is loaded
 * through its anchor, as a lookup by number would) and one inode record per
 * ancestor in the journal entry.
 *
 * What counts: rfiles counts names of non-directories (each link of a
 * hard-linked file), rsubdirs directories, both strictly below the
 * directory.  rbytes sums st_size of regular files once each, under the
 * directory of the name that counts it: the primary name, or for a
 * hard-linked file (it lives in the inode table, its names are all remote)
 * the directory recorded in in->rparent, the directory of the name it had
 * when it was first linked.  If that name goes while other links remain,
 * the bytes leave the tree (rparent 0) until a later LINK gives it a
 * counting name again.  An orphan (unlinked, still open) counts nowhere:
 * its bytes leave the tree at the unlink.  Sizes count as the MDS knows
 * them: a client's buffered writes count once its cap flush (fsync, close,
 * a revoke or client_flush_interval) reaches the MDS.
 *
 * Quotas (loligo.quota.max_bytes, max_files on a directory): max_files is
 * a limit on rentries and is exact: the MDS refuses (EDQUOT) any create,
 * mkdir, link or rename that would pass it, checking every quota'd
 * ancestor.  max_bytes is checked here for renames and links (exact) and
 * given to the clients as the room left (quota_room in a regular file's
 * trace); they enforce it on writes (client/, with a bounded overshoot).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "mds/mdcache.h"
#include "mds/rstat.h"

#define DEPTH_MAX 100000

static bool time_after(const struct mdsp_time *a, const struct mdsp_time *b)
{
	return a->sec > b->sec || (a->sec == b->sec && a->nsec > b->nsec);
}

/* The parent directory of directory @in, NULL at the root or for a
 * removed one. */
static struct minode *up(struct mds *m, struct minode *in)
{
	struct minode *p;
	int r;

	if (in->a.ino == MDSP_ROOT_INO || in->in_stray || !in->primary)
		return NULL;
	r = inode_get(m, in->primary->dir->ino, &p);
	if (r) {
		derr(MDS, "rstat: parent %" PRIx64 " of %" PRIx64 ": %s", in->primary->dir->ino, in->a.ino,
		     strerror(-r));
		return NULL;
	}
	return p;
}

uint64_t rstat_acct_dir(const struct minode *in)
{
	if (in->in_stray)
		return 0;
	if (in->primary)
		return in->primary->dir->ino;
	return in->in_table ? in->rparent : 0;
}

void rstat_of_name(const struct minode *in, bool bytes, struct rstat_delta *out)
{
	if (S_ISDIR(in->a.mode)) {
		out->bytes = (int64_t)in->a.rbytes;
		out->files = (int64_t)in->a.rfiles;
		out->subdirs = (int64_t)in->a.rsubdirs + 1;
		return;
	}
	out->bytes = bytes && S_ISREG(in->a.mode) ? (int64_t)in->a.size : 0;
	out->files = 1;
	out->subdirs = 0;
}

static uint64_t add(uint64_t v, int64_t d)
{
	if (d < 0 && (uint64_t)-d > v)
		return 0;   /* a filesystem from before rstats: never below zero */
	return v + (uint64_t)d;
}

void rstat_propagate(struct mds *m, struct txn *t, uint64_t dir_ino, const struct rstat_delta *d,
		     const struct mdsp_time *ctime)
{
	struct minode *in;
	int depth = 0;

	if (!dir_ino || inode_get(m, dir_ino, &in))
		return;
	for (; in && depth < DEPTH_MAX; in = up(m, in), depth++) {
		if (!S_ISDIR(in->a.mode))
			break;
		in->a.rbytes = add(in->a.rbytes, d->bytes);
		in->a.rfiles = add(in->a.rfiles, d->files);
		in->a.rsubdirs = add(in->a.rsubdirs, d->subdirs);
		if (ctime && time_after(ctime, &in->a.rctime))
			in->a.rctime = *ctime;
		txn_dirty(t, in);
	}
}

void rstat_inode_changed(struct mds *m, struct txn *t, struct minode *in, uint64_t old_size)
{
	struct rstat_delta d = { 0, 0, 0 };

	if (S_ISDIR(in->a.mode)) {
		/* a directory's own ctime: itself and above */
		if (time_after(&in->a.ctime, &in->a.rctime)) {
			in->a.rctime = in->a.ctime;
			txn_dirty(t, in);
		}
		rstat_propagate(m, t, rstat_acct_dir(in), &d, &in->a.ctime);
		return;
	}
	if (S_ISREG(in->a.mode))
		d.bytes = (int64_t)in->a.size - (int64_t)old_size;
	rstat_propagate(m, t, rstat_acct_dir(in), &d, &in->a.ctime);
}

/* Is @ino on @chain (the inos of a directory and its ancestors)? */
static bool on_chain(const uint64_t *chain, int n, uint64_t ino)
{
	for (int i = 0; i < n; i++)
		if (chain[i] == ino)
			return true;
	return false;
}

int rstat_quota_check(struct mds *m, uint64_t dir_ino, const struct rstat_delta *d, uint64_t from_ino)
{
	uint64_t *chain = NULL;
	struct minode *in;
	int n = 0, cap = 0, depth = 0, r = 0;

	if (!m->quotas_seen || (d->files + d->subdirs <= 0 && d->bytes <= 0))
		return 0;
	if (from_ino && !inode_get(m, from_ino, &in)) {
		for (; in && depth < DEPTH_MAX; in = up(m, in), depth++) {
			if (n == cap) {
				uint64_t *v = realloc(chain, (size_t)(cap = cap ? cap * 2 : 16) * sizeof(*v));

				if (!v) {
					free(chain);
					return -ENOMEM;
				}
				chain = v;
			}
			chain[n++] = in->a.ino;
		}
	}
	if (inode_get(m, dir_ino, &in))
		in = NULL;
	for (depth = 0; in && depth < DEPTH_MAX && !r; in = up(m, in), depth++) {
		const struct mdsp_inode *a = &in->a;

		if (!a->quota_max_files && !a->quota_max_bytes)
			continue;
		if (on_chain(chain, n, a->ino))
			continue;
		if (a->quota_max_files && d->files + d->subdirs > 0 &&
		    a->rfiles + a->rsubdirs + (uint64_t)(d->files + d->subdirs) > a->quota_max_files)
			r = -EDQUOT;
		if (a->quota_max_bytes && d->bytes > 0 && a->rbytes + (uint64_t)d->bytes > a->quota_max_bytes)
			r = -EDQUOT;
		if (r)
			dout(MDS, 10, "quota of %" PRIx64 " refuses %+" PRId64 " entries %+" PRId64 " bytes", a->ino,
			     d->files + d->subdirs, d->bytes);
	}
	free(chain);
	return r;
}

uint64_t rstat_quota_room(struct mds *m, const struct minode *in)
{
	uint64_t room = MDSP_QUOTA_NONE;
	struct minode *d;
	int depth = 0;

	if (!m->quotas_seen || !rstat_acct_dir(in) || inode_get(m, rstat_acct_dir(in), &d))
		return room;
	for (; d && depth < DEPTH_MAX; d = up(m, d), depth++) {
		const struct mdsp_inode *a = &d->a;

		if (a->quota_max_bytes) {
			uint64_t left = a->rbytes >= a->quota_max_bytes ? 0 : a->quota_max_bytes - a->rbytes;

			if (left < room)
				room = left;
		}
	}
	return room;
}

bool rstat_quota_statfs(struct mds *m, uint64_t ino, uint64_t *max_bytes, uint64_t *used_bytes,
			uint64_t *max_files, uint64_t *used_files)
{
	uint64_t room_b = UINT64_MAX, room_f = UINT64_MAX;
	struct minode *d;
	bool any = false;
	int depth = 0;

	*max_bytes = *used_bytes = *max_files = *used_files = 0;
	if (!m->quotas_seen || inode_get(m, ino, &d) || !S_ISDIR(d->a.mode))
		return false;
	for (; d && depth < DEPTH_MAX; d = up(m, d), depth++) {
		const struct mdsp_inode *a = &d->a;

		if (a->quota_max_bytes) {
			uint64_t left = a->rbytes >= a->quota_max_bytes ? 0 : a->quota_max_bytes - a->rbytes;

			if (left < room_b) {
				room_b = left;
				*max_bytes = a->quota_max_bytes;
				*used_bytes = a->rbytes;
			}
			any = true;
		}
		if (a->quota_max_files) {
			uint64_t used = a->rfiles + a->rsubdirs;
			uint64_t left = used >= a->quota_max_files ? 0 : a->quota_max_files - used;

			if (left < room_f) {
				room_f = left;
				*max_files = a->quota_max_files;
				*used_files = used;
			}
			any = true;
		}
	}
	return any;
}

bool rstat_quota_above(struct mds *m, struct minode *in)
{
	int depth = 0;

	if (!m->quotas_seen)
		return false;
	for (; in && depth < DEPTH_MAX; in = up(m, in), depth++)
		if (in->a.quota_max_files || in->a.quota_max_bytes)
			return true;
	return false;
}

bool rstat_is_below(struct mds *m, struct minode *in, const struct minode *anc)
{
	int depth = 0;

	for (; in && depth < DEPTH_MAX; in = up(m, in), depth++)
		if (in == anc)
			return true;
	return false;
}
