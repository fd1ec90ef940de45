/*
 * rstat.h - private to mds/: recursive statistics of directories and the
 * quotas that limit them (rstat.c).  Everything here runs under mds->lock
 * and changes inodes only through the caller's txn, so a change and its
 * propagation to every ancestor are journaled in one entry.
 */
#ifndef LOLIGO_MDS_RSTAT_H
#define LOLIGO_MDS_RSTAT_H

#include "mds/mds.h"

/* What one name adds to the statistics of the directories above it. */
struct rstat_delta {
	int64_t bytes, files, subdirs;
};

/*
 * rstat_acct_dir - the directory whose tree counts @in's bytes: the
 * directory of its primary name, for a hard-linked file the one recorded
 * in in->rparent; 0 for an orphan (its bytes count nowhere) or a table
 * inode whose counting link went.
 */
uint64_t rstat_acct_dir(const struct minode *in);

/*
 * rstat_of_name - what a name of @in adds to its directory's statistics:
 * a directory its own recursive statistics and itself as a subdirectory;
 * anything else one file, and its size if it is a regular file and
 * @bytes (the name is the one counting its bytes).
 */
void rstat_of_name(const struct minode *in, bool bytes, struct rstat_delta *out);

/*
 * rstat_propagate - add @d to directory @dir_ino and every ancestor up to
 * the root, moving their rctime up to @ctime; each one is dirtied in @t.
 * O(depth); an ancestor not in memory is loaded (as lookups do).
 */
void rstat_propagate(struct mds *m, struct txn *t, uint64_t dir_ino, const struct rstat_delta *d,
		     const struct mdsp_time *ctime);

/*
 * rstat_inode_changed - @in's size or ctime changed (setattr, truncate, a
 * cap flush): its bytes delta (from @old_size) and ctime go up the tree.
 */
void rstat_inode_changed(struct mds *m, struct txn *t, struct minode *in, uint64_t old_size);

/*
 * rstat_quota_check - may @d be added under directory @dir_ino?  Every
 * directory from @dir_ino up to the root that has a quota is checked,
 * except those that are also ancestors of (or equal to) @from_ino (a
 * rename inside their tree changes nothing there; 0: none).  Only growth
 * is refused.  Returns 0 or -EDQUOT.
 */
int rstat_quota_check(struct mds *m, uint64_t dir_ino, const struct rstat_delta *d, uint64_t from_ino);

/*
 * rstat_quota_room - bytes @in may still grow by before the tightest byte
 * quota above it is reached (MDSP_QUOTA_NONE: no byte quota above it).
 */
uint64_t rstat_quota_room(struct mds *m, const struct minode *in);

/*
 * rstat_quota_above - has directory @in or an ancestor a quota (files or
 * bytes)?  Then no client answers creates in it itself (no Dc, locker.c):
 * the MDS must count each one, and give each new file its quota_room in
 * the create's trace (a file made by a client alone could not know it).
 * O(depth).
 */
bool rstat_quota_above(struct mds *m, struct minode *in);

/* rstat_is_below - is @in @anc or below it?  O(depth). */
bool rstat_is_below(struct mds *m, struct minode *in, const struct minode *anc);

/*
 * rstat_quota_statfs - the tightest byte and file quotas on @ino and its
 * ancestors, with their use: what df shows on a mount of that directory.
 * Returns false when there is none.
 */
bool rstat_quota_statfs(struct mds *m, uint64_t ino, uint64_t *max_bytes, uint64_t *used_bytes,
			uint64_t *max_files, uint64_t *used_files);

#endif
