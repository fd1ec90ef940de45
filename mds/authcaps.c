/*
 * authcaps.c - what a client name may do: its caps mds, checked on every
 * request of a session authenticated as that name.
 *
 * cephx checks a path string; we have the namespace in memory, so the
 * cheapest exact check is structural: a clause's path is resolved to its
 * directory inode by walking the dentries from the root (a handful of hash
 * lookups), then the inode the request names is "under" it if walking its
 * primary parents reaches that directory before the root.  Both walks are
 * bounded by the depth of the tree, touch no store for inodes in memory,
 * and follow renames exactly (nothing is cached across requests but the
 * parsed caps).  The inodes checked are the ones the request names by
 * number - the directory of a name-based op, the inode of an ino-based one
 * (GETATTR, OPEN, SETATTR, LOOKUPINO: NFS handles, replays, the flushes of
 * async creates, which name their directory) - plus, for RENAME and LINK,
 * the second one, and after LOOKUP ".." and LOOKUPPARENT the inode reached.
 * Names inside a covered directory are covered by it.
 *
 * So that a client can mount its directory, the directories on the way to
 * a clause's path may be looked up by the one name that leads there (the
 * client's mount names the root by number, never GETATTRs it); nothing
 * else: no listing, no other name, no GETATTR, so a mount of / fails.
 *
 * An inode with no primary link (hard-linked, in the inode table; an
 * orphan still open) has no path: it is allowed only to a session that
 * holds caps on it, i.e. that reached it through a checked name.
 *
 * The session keeps a parsed copy of its name's caps, re-read when the
 * keyring changed (mds->keys_gen): a changed caps string applies to the
 * next request.  A session whose name has lost its key is refused
 * everything (it is being evicted: auth.c's cut_name).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/lockdep.h"
#include "common/log.h"
#include "common/rcu.h"
#include "mds/mds.h"
#include "mds/authcaps.h"
#include "mds/mdcache.h"

#define DEPTH_MAX 4096

/* Refresh @s's copy of its caps if the keyring moved.  Caller holds mds->lock. */
static int refresh_locked(struct mds *m, struct session *s, const struct mdsp_mdscaps **out)
{
	uint64_t gen = atomic_load_explicit(&m->keys_gen, memory_order_acquire);
	const struct mdsp_key *k;
	char err[256];
	int r = 0;

	lockdep_assert_held(&m->lock);
	if (gen && s->authcaps_gen == gen) {
		*out = s->authcaps;
		return 0;
	}
	free(s->authcaps);
	s->authcaps = NULL;
	pthread_mutex_lock(&m->keys_lock);
	k = mdsp_keyring_find(&m->keys, s->auth_name);
	if (!k) {
		r = -ENOKEY;
	} else if (k->caps) {
		s->authcaps = malloc(sizeof(*s->authcaps));
		if (!s->authcaps)
			r = -ENOMEM;
		else if (mdsp_mdscaps_parse(k->caps, s->authcaps, err, sizeof(err)))
			r = -EINVAL;    /* cannot be: checked where it entered */
	}
	pthread_mutex_unlock(&m->keys_lock);
	if (r) {
		free(s->authcaps);
		s->authcaps = NULL;
		s->authcaps_gen = 0;
		return -EACCES;
	}
	s->authcaps_gen = gen;
	*out = s->authcaps;
	return 0;
}

/* The directory inode of @path ("/a/b"), walking dentries from the root. */
static int resolve(struct mds *m, const char *path, uint64_t *ino)
{
	char comp[256];
	const char *p = path, *e;
	struct mdir *d;
	struct mdentry *dn;
	uint64_t cur = MDSP_ROOT_INO;
	int r;

	while (*p == '/')
		p++;
	while (*p) {
		e = strchr(p, '/');
		if (!e)
			e = p + strlen(p);
		if ((size_t)(e - p) >= sizeof(comp))
			return -ENAMETOOLONG;
		memcpy(comp, p, (size_t)(e - p));
		comp[e - p] = '\0';
		if ((r = mdir_get_dir(m, cur, &d)) || (r = mdir_lookup_load(m, d, comp, &dn)))
			return r;
		if (!dn)
			return -ENOENT;
		cur = dn->ino;
		p = *e ? e + 1 : e;
	}
	*ino = cur;
	return 0;
}

static bool holds_caps(struct session *s, struct minode *in)
{
	struct mcap *cap;

	cds_list_for_each_entry(cap, &in->caps, in_item)
		if (cap->s == s)
			return true;
	return false;
}

/* Is @in the directory @dir or under it?  1, 0, or -errno. */
static int under(struct mds *m, struct session *s, struct minode *in, uint64_t dir)
{
	struct minode *cur = in;
	int depth, r;

	if (dir == MDSP_ROOT_INO)
		return 1;
	for (depth = 0; depth < DEPTH_MAX; depth++) {
		if (cur->a.ino == dir)
			return 1;
		if (cur->a.ino == MDSP_ROOT_INO)
			return 0;
		if (!cur->primary)      /* table or stray inode: no path */
			return cur == in && holds_caps(s, in) ? 1 : 0;
		if ((r = inode_get(m, cur->primary->dir->ino, &cur)))
			return r;
	}
	return -ELOOP;
}

/* Does some clause of @caps cover @ino for @req (path, ids, access)?
 * *@squash: the covering clause asks for root_squash. */
static int covered(struct mds *m, struct session *s, const struct mdsp_mdscaps *caps,
		   const struct mdsp_caller *caller, uint64_t ino, bool write, bool *squash, bool *path_ok)
{
	struct minode *in;
	uint64_t dir;
	uint32_t i;
	int r;

	if ((r = inode_get(m, ino, &in)))
		return r;
	*path_ok = false;
	for (i = 0; i < caps->n; i++) {
		const struct mdsp_mdscap *c = &caps->c[i];

		if (resolve(m, c->path, &dir))
			continue;
		if ((r = under(m, s, in, dir)) < 0)
			return r;
		if (!r)
			continue;
		*path_ok = true;
		if (!mdsp_mdscap_admits(c, caller))
			continue;
		if (write && !c->write)
			continue;
		if (squash)
			*squash = c->root_squash;
		return 1;
	}
	return 0;
}

/* LOOKUP of @name in @dir on the way down to a clause's path (a mount). */
static bool on_the_way(struct mds *m, const struct mdsp_mdscaps *caps, uint64_t dir, const char *name)
{
	struct mdir *d;
	struct mdentry *dn;
	uint32_t i;
	uint64_t ino;

	if (!name || mdir_get_dir(m, dir, &d) || mdir_lookup_load(m, d, name, &dn) || !dn)
		return false;
	for (i = 0; i < caps->n; i++) {
		char prefix[sizeof(caps->c[i].path)], *slash;

		snprintf(prefix, sizeof(prefix), "%s", caps->c[i].path);
		/* dn must be one of the path's directories: try each prefix */
		while ((slash = strrchr(prefix, '/')) && slash != prefix) {
			if (!resolve(m, prefix, &ino) && ino == dn->ino)
				return true;
			*slash = '\0';
		}
		if (!resolve(m, prefix, &ino) && ino == dn->ino)
			return true;
	}
	return false;
}

static bool is_write(const struct mdsp_request *req)
{
	if (req->op == MDSP_OP_OPEN)
		return (req->oflags & O_ACCMODE) != O_RDONLY || (req->oflags & O_TRUNC);
	return mdsp_op_is_write(req->op) || req->op == MDSP_OP_SETLK;
}

static void refused(struct session *s, const struct mdsp_request *req, uint64_t ino, const char *why)
{
	dout(MDS, 1, "session %" PRIu64 " (%s) tid %" PRIu64 " %s ino %" PRIx64 " '%s': refused: %s", s->id,
	     s->auth_name, req->tid, mdsp_op_name(req->op), ino, req->name ? req->name : "", why);
}

int authcaps_check_locked(struct mds *m, struct session *s, struct mdsp_request *req)
{
	const struct mdsp_mdscaps *caps;
	bool write = is_write(req), squash = false, path_ok = false, path2_ok = false;
	int r, r2;

	lockdep_assert_held(&m->lock);
	if (!s || !s->auth_name[0])
		return 0;       /* opened without authentication: no name, no caps */
	if ((r = refresh_locked(m, s, &caps))) {
		refused(s, req, req->ino, "its name has no key any more");
		return r;
	}
	if (!caps || req->op == MDSP_OP_STATFS)
		return 0;       /* no caps: allow rw on everything */
	/* root_squash is judged on the caller as sent: squash, then check */
	r = covered(m, s, caps, &req->caller, req->ino, false, &squash, &path_ok);
	if (r > 0 && squash && req->caller.uid == 0) {
		req->caller.uid = MDSP_ANON_ID;
		if (req->caller.gid == 0)
			req->caller.gid = MDSP_ANON_ID;
	}
	if (r > 0 && write)
		r = covered(m, s, caps, &req->caller, req->ino, true, NULL, &path_ok);
	if (r < 0 && r != -ENOENT && r != -ESTALE)
		return r;
	if (r == -ENOENT || r == -ESTALE)
		return 0;       /* the op answers that itself */
	if (r == 0 && req->op == MDSP_OP_LOOKUP && on_the_way(m, caps, req->ino, req->name))
		r = 1;
	if (r == 0) {
		refused(s, req, req->ino, path_ok ? (write ? "a write where its caps allow reads only, or other ids"
							   : "its caps do not admit the caller's ids")
						  : "outside the paths its caps grant");
		return -EACCES;
	}
	if ((req->op == MDSP_OP_RENAME || req->op == MDSP_OP_LINK) && req->ino2) {
		/* LINK: ino2 is the file (read is enough to name it, as a
		 * hard link needs no write on the file itself) */
		r2 = covered(m, s, caps, &req->caller, req->ino2, req->op == MDSP_OP_RENAME, NULL, &path2_ok);
		if (r2 == -ENOENT || r2 == -ESTALE)
			return 0;
		if (r2 < 0)
			return r2;
		if (!r2) {
			refused(s, req, req->ino2, "across the boundary of the paths its caps grant");
			return path2_ok ? -EACCES : -EPERM;
		}
	}
	return 0;
}

bool authcaps_may_write_locked(struct mds *m, struct session *s, struct minode *in)
{
	const struct mdsp_mdscaps *caps;
	uint64_t dir;
	uint32_t i;

	lockdep_assert_held(&m->lock);
	if (!s || !s->auth_name[0])
		return true;
	if (refresh_locked(m, s, &caps))
		return false;
	if (!caps)
		return true;
	for (i = 0; i < caps->n; i++)
		if (caps->c[i].write && !resolve(m, caps->c[i].path, &dir) && under(m, s, in, dir) == 1)
			return true;
	return false;
}

int authcaps_check_target_locked(struct mds *m, struct session *s, const struct mdsp_request *req, uint64_t ino)
{
	const struct mdsp_caller *caller = &req->caller;
	const struct mdsp_mdscaps *caps;
	bool path_ok;
	int r;

	lockdep_assert_held(&m->lock);
	if (!s || !s->auth_name[0])
		return 0;
	if ((r = refresh_locked(m, s, &caps)))
		return r;
	if (!caps)
		return 0;
	r = covered(m, s, caps, caller, ino, false, NULL, &path_ok);
	if (r < 0)
		return r == -ENOENT || r == -ESTALE ? 0 : r;
	if (!r) {
		refused(s, req, ino, "it leads out of the paths its caps grant");
		return -EACCES;
	}
	return 0;
}
