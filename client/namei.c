/*
 * namei.c - namespace operations of client.h mapped to MDS requests.
 *
 * Each operation builds one request (op and arguments as the comments on
 * enum mdsp_op say, the caller's credentials in mdsp_caller), runs it
 * through lc_req_run, which folds the reply's trace into the caches, and
 * then fixes up what the trace cannot say (a removed name becomes a
 * negative dentry, a renamed one moves).
 *
 * The cached fast paths: lc_getattr of an inode whose attributes are still
 * valid, and lc_lookup of a name whose dentry and inode are both valid,
 * answer without the MDS and without any lock but the inode's own.  They
 * check the caller's permission locally from the cached mode, as the MDS
 * would (search permission on the directory).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "client/ns_int.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "perm/perm.h"

static int set_name(struct mds_request *req, const char *name)
{
	req->args.name = strdup(name);
	return req->args.name ? 0 : -ENOMEM;
}

/* the attributes of @in as the caller sees them, from the cache (valid or not) */
static void fill(struct lc_inode *in, struct lc_attr *attr)
{
	if (attr)
		lc_inode_fill_attr(in, attr);
}

static int refresh(struct lclient *c, struct lc_inode *in, const struct lc_cred *cr)
{
	struct mds_request *req = lc_req_new(c, MDSP_OP_GETATTR, in->ino, cr);
	struct lc_inode *t = NULL;
	int r;

	if (!req)
		return c->mdsc ? -ENOMEM : -ENOTCONN;
	r = lc_req_run(c, req, &t);
	mdsc_request_put(req);
	if (r == -ENOENT)
		r = -ESTALE;
	lc_put(c, t);
	return r;
}

int lc_getattr(struct lclient *c, struct lc_inode *in, const struct lc_cred *cr, bool force, struct lc_attr *attr)
{
	if (lc_evicted(c, NULL, 0))
		return -EIO;
	if (!force) {
		uint64_t now = now_mono_ns();
		bool valid, count = false;

		pthread_mutex_lock(&in->lock);
		valid = lc_inode_attr_valid_locked(in, now);
		if (valid && !(count = lc_obj_alloc_stale_locked(c, in))) {
			if (attr)
				lc_inode_fill_attr_locked(in, attr);
			pthread_mutex_unlock(&in->lock);
			perf_inc(&in->c->perf.attr_hit, 1);
			return 0;
		}
		pthread_mutex_unlock(&in->lock);
		if (valid) {
			/* once per version of a file: st_blocks from what its objects hold */
			lc_obj_allocated(c, in);
			fill(in, attr);
			perf_inc(&in->c->perf.attr_hit, 1);
			return 0;
		}
	}
	perf_inc(&c->perf.attr_miss, 1);
	int r = refresh(c, in, cr);
	if (r < 0)
		return r;
	lc_obj_allocated(c, in);	/* st_blocks of a sparse file */
	fill(in, attr);
	return 0;
}

/* search permission on @dir from cached attributes: 1 ok, 0 unknown, <0
 * denied.  Mode and owner are current while we hold As on it (another
 * client's chmod revokes it first). */
static int dir_search_ok(struct lc_inode *dir, const struct lc_cred *cr)
{
	struct lc_attr a;

	pthread_mutex_lock(&dir->lock);
	bool valid = dir->caps & MDSP_CAP_AUTH_SHARED;
	if (valid)
		lc_inode_fill_attr_locked(dir, &a);
	pthread_mutex_unlock(&dir->lock);
	if (!valid)
		return 0;
	if (!S_ISDIR(a.mode))
		return -ENOTDIR;
	int r = lc_perm_check(&a, 1, cr);
	if (r == LC_PERM_ASK)
		return 0;               /* an ACL decides: the MDS's lookup */
	return r < 0 ? r : 1;
}


int lc_lookup_parent(struct lclient *c, struct lc_inode *dir, struct lc_attr *attr, struct lc_inode **out)
{
	struct mds_request *req;
	int r;

	if (dir == c->root || dir->ino == MDSP_ROOT_INO || (c->root && dir->ino == c->root->ino)) {
		struct lc_inode *r0 = c->root ? c->root : dir;
		lc_get(r0);
		fill(r0, attr);
		*out = r0;
		return 0;
	}
	req = lc_req_new(c, MDSP_OP_LOOKUPPARENT, dir->ino, NULL);
	if (!req)
		return -ENOMEM;
	r = lc_req_run(c, req, out);
	mdsc_request_put(req);
	if (r == 0 && !*out)
		r = -EIO;
	if (r == 0)
		fill(*out, attr);
	return r;
}

int lc_lookup(struct lclient *c, struct lc_inode *dir, const char *name, const struct lc_cred *cr,
	      struct lc_attr *attr, struct lc_inode **out)
{
	struct mds_request *req;
	struct lc_inode *in;
	uint64_t ino;
	int r;

	*out = NULL;
	if (lc_evicted(c, NULL, 0))
		return -EIO;
	if (name && strcmp(name, ".") == 0) {
		r = lc_getattr(c, dir, cr, false, attr);
		if (r == 0) {
			lc_get(dir);
			*out = dir;
		}
		return r;
	}
	if (name && strcmp(name, "..") == 0)
		return lc_lookup_parent(c, dir, attr, out);
	r = mdsp_check_name(name);
	if (r < 0)
		return r;

	int ok = dir_search_ok(dir, cr);
	if (ok < 0)
		return ok;
	if (ok > 0 && lc_dcache_lookup(c, dir, name, &ino)) {
		if (ino == 0) {
			perf_inc(&c->perf.dentry_neg_hit, 1);
			return -ENOENT;
		}
		in = lc_ino_to_inode(c, ino);
		if (in) {
			uint64_t now = now_mono_ns();
			pthread_mutex_lock(&in->lock);
			bool valid = lc_inode_attr_valid_locked(in, now);
			if (valid && attr)
				lc_inode_fill_attr_locked(in, attr);
			pthread_mutex_unlock(&in->lock);
			if (valid) {
				if (attr)
					dout(CLIENT, 25, "lookup %" PRIx64 "/%s: hit %p ino %" PRIx64 " gen %" PRIu64 " mode 0%o",
					     dir->ino, name, (void *)in, attr->ino, attr->generation, (unsigned int)attr->mode);
				perf_inc(&c->perf.dentry_hit, 1);
				*out = in;
				return 0;
			}
			dout(CLIENT, 20, "lookup %" PRIx64 "/%s: inode %" PRIx64 " attrs expired", dir->ino, name, ino);
			lc_put(c, in);
		} else {
			dout(CLIENT, 20, "lookup %" PRIx64 "/%s: inode %" PRIx64 " not cached", dir->ino, name, ino);
		}
	} else if (ok > 0) {
		bool complete;

		pthread_mutex_lock(&dir->lock);
		complete = lc_dir_complete_locked(dir);
		pthread_mutex_unlock(&dir->lock);
		if (complete) {
			/* every name of the directory is cached (asyncdir.c) */
			perf_inc(&c->perf.dentry_neg_hit, 1);
			lc_dcache_add(c, dir, name, 0);
			return -ENOENT;
		}
		dout(CLIENT, 20, "lookup %" PRIx64 "/%s: no dentry", dir->ino, name);
	}
	perf_inc(&c->perf.dentry_miss, 1);
	dout(CLIENT, 20, "lookup %" PRIx64 "/%s: miss (dir attrs %s)", dir->ino, name, ok ? "valid" : "expired");
	lc_async_unlink_wait(c, dir, name);     /* the MDS must have run our unlink of it */
	req = lc_req_new(c, MDSP_OP_LOOKUP, dir->ino, cr);
	if (!req)
		return c->mdsc ? -ENOMEM : -ENOTCONN;
	pthread_mutex_lock(&dir->lock);
	uint64_t ngen0 = lc_dir_ngen_fs_locked(dir), change0 = dir->mi.change, rx0 = lc_dir_names_rx_locked(dir);
	pthread_mutex_unlock(&dir->lock);
	r = set_name(req, name);
	if (r == 0)
		r = lc_req_run(c, req, &in);
	mdsc_request_put(req);
	if (r == -ENOENT)
		lc_dcache_add_since(c, dir, name, 0, ngen0, change0, rx0);
	if (r < 0)
		return r;
	if (!in)
		return -EIO;
	lc_dcache_add(c, dir, name, in->ino);
	fill(in, attr);
	if (attr)
		dout(CLIENT, 25, "lookup %" PRIx64 "/%s: mds %p ino %" PRIx64 " gen %" PRIu64 " mode 0%o", dir->ino, name,
		     (void *)in, attr->ino, attr->generation, (unsigned int)attr->mode);
	*out = in;
	return 0;
}

/*
 * A client that mounted a subtree opens by number (file handles) only what
 * is under its root: the inode's primary parents are climbed at the MDS up
 * to the root (found: yes) or the filesystem's root (no: ESTALE, as for a
 * handle that names nothing).  Only for inodes not cached yet: a cached one
 * came through the subtree or through this check.
 */
static int within_root(struct lclient *c, struct lc_inode *in)
{
	struct lc_inode *cur = in, *up = NULL;
	int r = -ESTALE;

	if (!c->root || c->root->ino == MDSP_ROOT_INO)
		return 0;
	lc_get(cur);
	for (int depth = 0; depth < PATH_MAX / 2; depth++) {
		struct mds_request *req;

		if (cur->ino == c->root->ino) {
			r = 0;
			break;
		}
		if (cur->ino == MDSP_ROOT_INO)
			break;
		req = lc_req_new(c, MDSP_OP_LOOKUPPARENT, cur->ino, NULL);
		if (!req) {
			r = -ENOMEM;
			break;
		}
		r = lc_req_run(c, req, &up);
		mdsc_request_put(req);
		if (r == 0 && !up)
			r = -EIO;
		if (r < 0) {
			if (r == -ENOENT)
				r = -ESTALE;
			break;
		}
		lc_put(c, cur);
		cur = up;
		r = -ESTALE;
	}
	lc_put(c, cur);
	if (r == -ESTALE)
		dout(CLIENT, 5, "inode %" PRIx64 " is not under this mount's root %" PRIx64, in->ino, c->root->ino);
	return r;
}

int lc_lookup_ino(struct lclient *c, uint64_t ino, uint64_t generation, struct lc_attr *attr,
		  struct lc_inode **out)
{
	struct lc_inode *in = lc_ino_to_inode(c, ino);
	struct mds_request *req;
	int r;

	*out = NULL;
	if (in) {
		uint64_t now = now_mono_ns();
		pthread_mutex_lock(&in->lock);
		/* an unlinked inode is asked about at the MDS even under caps:
		 * our caps on it may outlive it (the last close purges it) */
		bool valid = lc_inode_attr_valid_locked(in, now) && in->mi.nlink > 0;
		uint64_t gen = in->mi.generation;
		pthread_mutex_unlock(&in->lock);
		if (!valid) {
			r = refresh(c, in, NULL);
			if (r < 0) {
				lc_put(c, in);
				return r == -ENOENT ? -ESTALE : r;
			}
			pthread_mutex_lock(&in->lock);
			gen = in->mi.generation;
			pthread_mutex_unlock(&in->lock);
		}
		if (generation && gen && gen != generation) {
			lc_put(c, in);
			return -ESTALE;
		}
		fill(in, attr);
		*out = in;
		return 0;
	}
	req = lc_req_new(c, MDSP_OP_LOOKUPINO, ino, NULL);
	if (!req)
		return c->mdsc ? -ENOMEM : -ENOTCONN;
	r = lc_req_run(c, req, &in);
	mdsc_request_put(req);
	if (r == -ENOENT)
		return -ESTALE;
	if (r < 0)
		return r;
	if (!in)
		return -ESTALE;
	if (generation && in->mi.generation && in->mi.generation != generation) {
		lc_put(c, in);
		return -ESTALE;
	}
	if ((r = within_root(c, in)) < 0) {
		lc_put(c, in);
		return r;
	}
	fill(in, attr);
	*out = in;
	return 0;
}

static uint32_t map_setattr_mask(int mask)
{
	uint32_t m = 0;

	if (mask & LC_SET_MODE)
		m |= MDSP_SETATTR_MODE;
	if (mask & LC_SET_UID)
		m |= MDSP_SETATTR_UID;
	if (mask & LC_SET_GID)
		m |= MDSP_SETATTR_GID;
	if (mask & LC_SET_SIZE)
		m |= MDSP_SETATTR_SIZE;
	/* "now" wins over an explicit time that may come with it: the MDS
	 * tells utimes(NULL) (both now) from explicit times by these bits */
	if ((mask & LC_SET_ATIME) && !(mask & LC_SET_ATIME_NOW))
		m |= MDSP_SETATTR_ATIME;
	if ((mask & LC_SET_MTIME) && !(mask & LC_SET_MTIME_NOW))
		m |= MDSP_SETATTR_MTIME;
	if (mask & LC_SET_ATIME_NOW)
		m |= MDSP_SETATTR_ATIME_NOW;
	if (mask & LC_SET_MTIME_NOW)
		m |= MDSP_SETATTR_MTIME_NOW;
	if (mask & LC_SET_CHOWN)
		m |= MDSP_SETATTR_CHOWN;
	return m;
}

/* anyone may search a directory of mode @mode */
static bool all_search(uint32_t mode)
{
	return S_ISDIR(mode) && (mode & 0111) == 0111;
}

static struct mdsp_time mt(struct timespec ts)
{
	return (struct mdsp_time){ .sec = ts.tv_sec, .nsec = (uint32_t)ts.tv_nsec };
}

static int setattr(struct lclient *c, struct lc_inode *in, const struct lc_attr *set, int mask,
		   const struct lc_cred *cr, struct lc_attr *attr, bool through_writer)
{
	struct mds_request *req;
	uint64_t old_size = 0;
	int r;

	if ((mask & LC_SET_SIZE) && set->size > lc_max_file_size(c)) {
		/* past the filesystem's limit (2^64-1 from NFS too): refused here,
		 * before anything is flushed; EACCES first, as truncate(2) checks */
		r = lc_access(c, in, W_OK, cr);
		return r < 0 ? r : -EFBIG;
	}
	pthread_mutex_lock(&in->lock);
	uint32_t old_mode = in->mi.mode;
	pthread_mutex_unlock(&in->lock);
	if (!(mask & LC_SET_SIZE)) {
		/* an inode only we know (made here under Dc): answered here */
		struct mdsp_inode a = { .ino = in->ino, .mode = set->mode, .uid = set->uid, .gid = set->gid,
					.atime = mt(set->atime), .mtime = mt(set->mtime) };

		r = lc_async_setattr(c, in, map_setattr_mask(mask), &a, cr);
		if (r == 0)
			goto done;
		if (r != -EAGAIN)
			return r;
	}
	if (mask & (LC_SET_SIZE | LC_SET_MTIME | LC_SET_MTIME_NOW)) {
		/* buffered data and its pending size/mtime go first, so neither
		 * a later writeback nor a later report undoes this change */
		r = lc_wb_flush(c, in);
		if (r < 0)
			return r;
	}
	if (mask & LC_SET_SIZE) {
		pthread_mutex_lock(&in->lock);
		bool dir = S_ISDIR(in->mi.mode);
		pthread_mutex_unlock(&in->lock);
		if (dir)
			return -EISDIR;
		old_size = lc_inode_size(in);
	}
	req = lc_req_new(c, MDSP_OP_SETATTR, in->ino, cr);
	if (!req)
		return c->mdsc ? -ENOMEM : -ENOTCONN;
	req->args.mask = map_setattr_mask(mask);
	if (through_writer && (mask & LC_SET_SIZE))
		req->args.mask |= MDSP_SETATTR_FH;
	req->args.attr.ino = in->ino;
	req->args.attr.mode = set->mode;
	req->args.attr.uid = set->uid;
	req->args.attr.gid = set->gid;
	req->args.attr.size = set->size;
	req->args.attr.atime = mt(set->atime);
	req->args.attr.mtime = mt(set->mtime);
	struct lc_inode *t = NULL;
	r = lc_req_run(c, req, &t);
	mdsc_request_put(req);
	lc_put(c, t);
	if (r < 0)
		return r;
	if (mask & (LC_SET_MTIME | LC_SET_MTIME_NOW)) {
		/* the mtime our flushes carry (sent before this request, by
		 * lc_wb_flush above, maybe not acked yet) is older than the one
		 * the MDS has now: not ours to show any more (a close's
		 * writeback starts after it returned, so its flush is often
		 * still in flight when tar's futimens comes) */
		pthread_mutex_lock(&in->lock);
		in->flushing_meta &= ~(uint32_t)MDSP_DIRTY_MTIME;
		pthread_mutex_unlock(&in->lock);
	}
	if (mask & LC_SET_SIZE) {
		r = lc_truncate_data(c, in, old_size, set->size);
		if (r < 0)
			return r;
	}
done:
	if (mask & (LC_SET_MODE | LC_SET_UID | LC_SET_GID)) {
		pthread_mutex_lock(&in->lock);
		uint32_t new_mode = in->mi.mode;
		pthread_mutex_unlock(&in->lock);
		/* names the kernel cached while anyone could search the directory
		 * would let everyone through still: take them back */
		if (!c->search_unchecked_ok && all_search(old_mode) && !all_search(new_mode))
			lc_dcache_revoke_dir(c, in);
	}
	fill(in, attr);
	return 0;
}

int lc_setattr(struct lclient *c, struct lc_inode *in, const struct lc_attr *set, int mask,
	       const struct lc_cred *cr, struct lc_attr *attr)
{
	int r = setattr(c, in, set, mask, cr, attr, false);

	/* the attributes, and the pages too on a size change */
	if (r == 0)
		lc_frontends_inode_changed(c, in->ino, (mask & LC_SET_SIZE) ? 0 : -1, 0);
	return r;
}

int lc_fsetattr(struct lclient *c, struct lc_fh *fh, const struct lc_attr *set, int mask,
		const struct lc_cred *cr, struct lc_attr *attr)
{
	bool writer = (fh->flags & O_ACCMODE) != O_RDONLY;

	if ((mask & LC_SET_SIZE) && writer && set->size > lc_max_file_size(c))
		return -EFBIG;
	return setattr(c, fh->in, set, mask, cr, attr, writer);
}

int lc_set_flags(struct lclient *c, struct lc_inode *in, uint32_t flags, const struct lc_cred *cr)
{
	struct mds_request *req;
	struct lc_inode *t = NULL;
	int r;

	if (flags & ~(uint32_t)MDSP_FL_ALL)
		return -EOPNOTSUPP;
	/* what we buffered was written before the change: it lands first */
	r = lc_wb_flush(c, in);
	if (r < 0)
		return r;
	req = lc_req_new(c, MDSP_OP_SETATTR, in->ino, cr);
	if (!req)
		return c->mdsc ? -ENOMEM : -ENOTCONN;
	req->args.mask = MDSP_SETATTR_FLAGS;
	req->args.attr.ino = in->ino;
	req->args.attr.flags = flags;
	r = lc_req_run(c, req, &t);
	mdsc_request_put(req);
	lc_put(c, t);
	if (r < 0)
		return r;
	/* an MDS from before the flags takes the request and keeps nothing */
	pthread_mutex_lock(&in->lock);
	bool kept = in->mi.flags == flags;
	pthread_mutex_unlock(&in->lock);
	return kept ? 0 : -EOPNOTSUPP;
}

/* lc_access of an inode that may have an access ACL: read it (anyone may)
 * and decide by it, as perm/perm.c does at the MDS */
static int access_acl(struct lclient *c, struct lc_inode *in, const struct lc_attr *a, int mask,
		      const struct lc_cred *cr)
{
	struct mdsp_inode mi;
	struct mdsp_caller caller;
	uint8_t *acl;
	ssize_t n;
	int r;

	acl = malloc(MDSP_XATTR_SIZE_MAX);
	if (!acl)
		return -ENOMEM;
	n = lc_getxattr(c, in, MDSP_XATTR_ACL_ACCESS, acl, MDSP_XATTR_SIZE_MAX, NULL);
	if (n == -ENODATA || n == -EOPNOTSUPP)
		n = 0;
	if (n < 0) {
		free(acl);
		return (int)n;
	}
	if (n && mdsp_acl_valid(acl, (size_t)n))
		n = 0;
	memset(&mi, 0, sizeof(mi));
	mi.mode = a->mode;
	mi.uid = a->uid;
	mi.gid = a->gid;
	lc_cred_to_caller(cr, &caller);
	r = mdsp_may_access_acl(&mi, n ? acl : NULL, (size_t)n, &caller, mask & 7);
	free(acl);
	return r;
}

int lc_access(struct lclient *c, struct lc_inode *in, int mask, const struct lc_cred *cr)
{
	struct lc_attr a;
	int r = lc_getattr(c, in, cr, false, &a);

	if (r < 0)
		return r;
	if (mask == F_OK)
		return 0;
	r = lc_perm_check(&a, mask, cr);
	if (r == LC_PERM_ASK)
		r = access_acl(c, in, &a, mask, cr);
	return r;
}

/* CREATE-like ops: dir + name -> a new target */
static int make_node(struct lclient *c, struct mds_request *req, struct lc_inode *dir, const char *name,
		     struct lc_attr *attr, struct lc_inode **out)
{
	struct lc_inode *in = NULL;
	int r = set_name(req, name);

	lc_async_unlink_wait(c, dir, name);     /* an unlink of the name answered here runs first */
	if (r == 0) {
		lc_deleg_want(c, req);          /* only when its reply comes (lc_deleg_reply) */
		r = lc_req_run(c, req, &in);
	}
	mdsc_request_put(req);
	if (r < 0)
		return r;
	if (!in)
		return -EIO;
	lc_dcache_add(c, dir, name, in->ino);
	if (S_ISDIR(in->mi.mode)) {
		/* a directory we just made, ours alone (Dc): empty, and every
		 * name that comes into it will be ours (asyncdir.c) */
		pthread_mutex_lock(&in->lock);
		if ((in->caps & MDSP_CAP_DIR_CREATE) && in->mi.files == 0)
			lc_dir_set_complete_locked(in);
		pthread_mutex_unlock(&in->lock);
	}
	fill(in, attr);
	if (out)
		*out = in;
	else
		lc_put(c, in);
	return 0;
}

static int mknod_node(struct lclient *c, struct lc_inode *dir, const char *name, mode_t mode, dev_t rdev,
		      const struct lc_cred *cr, struct lc_attr *attr, struct lc_inode **out)
{
	struct mds_request *req;
	int r = mdsp_check_name(name);

	if (r < 0)
		return r;
	req = lc_req_new(c, MDSP_OP_MKNOD, dir->ino, cr);
	if (!req)
		return -ENOTCONN;
	req->args.mode = mode;
	req->args.rdev = rdev;
	return make_node(c, req, dir, name, attr, out);
}

static int mkdir_node(struct lclient *c, struct lc_inode *dir, const char *name, mode_t mode, const struct lc_cred *cr,
		      struct lc_attr *attr, struct lc_inode **out)
{
	struct mds_request *req;
	int r = mdsp_check_name(name);

	if (r < 0)
		return r;
	r = lc_async_create(c, dir, name, mode, 0, true, cr, attr, out, NULL);
	if (r != -EAGAIN)
		return r;
	req = lc_req_new(c, MDSP_OP_MKDIR, dir->ino, cr);
	if (!req)
		return -ENOTCONN;
	req->args.mode = (mode & 07777) | S_IFDIR;
	return make_node(c, req, dir, name, attr, out);
}

static int symlink_node(struct lclient *c, struct lc_inode *dir, const char *name, const char *target,
			const struct lc_cred *cr, struct lc_attr *attr, struct lc_inode **out)
{
	struct mds_request *req;
	int r = mdsp_check_name(name);

	if (r < 0)
		return r;
	if (!target || strlen(target) >= MDSP_PATH_MAX)
		return -ENAMETOOLONG;
	req = lc_req_new(c, MDSP_OP_SYMLINK, dir->ino, cr);
	if (!req)
		return -ENOTCONN;
	req->args.target = strdup(target);
	if (!req->args.target) {
		mdsc_request_put(req);
		return -ENOMEM;
	}
	return make_node(c, req, dir, name, attr, out);
}

static int link_node(struct lclient *c, struct lc_inode *in, struct lc_inode *newdir, const char *name,
		     const struct lc_cred *cr, struct lc_attr *attr)
{
	struct mds_request *req;
	int r = mdsp_check_name(name);

	if (r < 0)
		return r;
	lc_async_forget(c, in->ino);   /* a second name: its setattrs go to the MDS */
	req = lc_req_new(c, MDSP_OP_LINK, newdir->ino, cr);
	if (!req)
		return -ENOTCONN;
	req->args.ino2 = in->ino;
	r = make_node(c, req, newdir, name, NULL, NULL);
	if (r < 0)
		return r;
	/* an O_TMPFILE file has a name now: its data stays at its last close */
	pthread_mutex_lock(&in->lock);
	in->purge_pending = false;
	pthread_mutex_unlock(&in->lock);
	/* nlink and ctime changed; the trace normally refreshed them already */
	fill(in, attr);
	return 0;
}

static int remove_name(struct lclient *c, uint32_t op, struct lc_inode *dir, const char *name,
		       const struct lc_cred *cr)
{
	struct mds_request *req;
	uint64_t ino = 0;
	int r = mdsp_check_name(name);

	if (r < 0)
		return r;
	r = lc_async_remove(c, dir, name, op == MDSP_OP_RMDIR, cr);
	if (r != -EAGAIN)
		return r;
	lc_dcache_lookup(c, dir, name, &ino);
	lc_caps_update_pending(c, ino);
	if (op == MDSP_OP_RMDIR && ino)
		lc_async_unlink_wait_ino(c, ino);       /* emptied here: the MDS has run those unlinks */
	req = lc_req_new(c, op, dir->ino, cr);
	if (!req)
		return -ENOTCONN;
	r = set_name(req, name);
	struct lc_inode *t = NULL;
	pthread_mutex_lock(&dir->lock);
	uint64_t ngen0 = lc_dir_ngen_fs_locked(dir), rx0 = lc_dir_names_rx_locked(dir);
	pthread_mutex_unlock(&dir->lock);
	if (r == 0)
		r = lc_req_run(c, req, &t);
	/*
	 * The name is not there as of our change (its own place in the order)
	 * or, for ENOENT, as of when we asked: a create or rename of ours
	 * into it that the MDS made after, whose requester got here first,
	 * must not be undone, nor one of another client's (ngen: Fs held
	 * since the request went out).  A failed change is answered only
	 * when journaled, after the UNSAFE replies of later ones.
	 */
	uint64_t rx = r == 0 ? req->rx_seq : rx0;
	/* an orphan open in another session: its data stays until the last
	 * close there (the MDS purges it then); open only here, it goes at our
	 * own last close (lc_purge_data waits for it) */
	bool orphan = req->reply && (req->reply->trace_flags & MDSP_TRACE_ORPHAN);
	mdsc_request_put(req);
	if (t) {
		ino = t->ino;
		pthread_mutex_lock(&t->lock);
		bool gone = S_ISREG(t->mi.mode) && t->mi.nlink == 0;
		pthread_mutex_unlock(&t->lock);
		/* the last link went and nobody else has it open: its data
		 * goes too (at our last close, if open here) */
		if (gone && !orphan)
			lc_purge_data(c, t);
		lc_put(c, t);
	}
	if (r < 0 && r != -ENOENT)
		return r;
	lc_dcache_add_since(c, dir, name, 0, ngen0, LC_CHANGE_ANY, rx);
	if (ino) {
		/* nlink dropped: cached attributes of the victim are stale */
		struct lc_inode *victim = lc_ino_to_inode(c, ino);
		if (victim) {
			lc_inode_invalidate(victim);
			lc_put(c, victim);
		}
	}
	return r;
}

/* remove_name, told to the other frontends: the name, its directory and the
 * inode it named (its nlink and ctime), when cached */
static int remove_told(struct lclient *c, uint32_t op, struct lc_inode *dir, const char *name,
		       const struct lc_cred *cr)
{
	uint64_t victim = 0;
	int r;

	if (lc_frontends_to_tell(c))
		lc_dcache_lookup(c, dir, name, &victim);
	r = remove_name(c, op, dir, name, cr);
	if (r == 0) {
		lc_ns_changed(c);       /* a hard link's other names may be all that is left */
		lc_frontends_entry_changed(c, dir, name);
		lc_frontends_inode_changed(c, victim, -1, 0);
	}
	return r;
}

int lc_unlink(struct lclient *c, struct lc_inode *dir, const char *name, const struct lc_cred *cr)
{
	return remove_told(c, MDSP_OP_UNLINK, dir, name, cr);
}

int lc_rmdir(struct lclient *c, struct lc_inode *dir, const char *name, const struct lc_cred *cr)
{
	return remove_told(c, MDSP_OP_RMDIR, dir, name, cr);
}

static int rename_names(struct lclient *c, struct lc_inode *olddir, const char *oldname, struct lc_inode *newdir,
			const char *newname, unsigned int flags, const struct lc_cred *cr)
{
	struct mds_request *req;
	uint64_t src = 0, dst = 0;
	int r;

	if ((r = mdsp_check_name(oldname)) < 0 || (r = mdsp_check_name(newname)) < 0)
		return r;
	if (flags & ~(unsigned int)(MDSP_RENAME_NOREPLACE | MDSP_RENAME_EXCHANGE | MDSP_RENAME_WHITEOUT))
		return -EINVAL;
	if ((flags & MDSP_RENAME_EXCHANGE) && (flags & (MDSP_RENAME_NOREPLACE | MDSP_RENAME_WHITEOUT)))
		return -EINVAL;
	lc_dcache_lookup(c, olddir, oldname, &src);
	lc_dcache_lookup(c, newdir, newname, &dst);
	lc_caps_update_pending(c, dst);
	/* moved names: their setattrs go to the MDS (who may know them by another directory now) */
	lc_async_forget(c, src);
	lc_async_forget(c, dst);
	lc_async_unlink_wait(c, newdir, newname);
	if (src)
		lc_async_unlink_wait_ino(c, src);       /* a directory moved with its unlinks done */
	req = lc_req_new(c, MDSP_OP_RENAME, olddir->ino, cr);
	if (!req)
		return -ENOTCONN;
	pthread_mutex_lock(&olddir->lock);
	uint64_t ngen0 = lc_dir_ngen_fs_locked(olddir);
	pthread_mutex_unlock(&olddir->lock);
	req->args.ino2 = newdir->ino;
	req->args.oflags = flags;
	r = set_name(req, oldname);
	if (r == 0) {
		req->args.name2 = strdup(newname);
		if (!req->args.name2)
			r = -ENOMEM;
	}
	struct lc_inode *t = NULL;
	if (r == 0)
		r = lc_req_run(c, req, &t);
	/* both directories depend on it until it is SAFE (the trace names one):
	 * an fsync of either waits for it */
	if (r == 0 && mdsc_request_safe_state(req) == 0) {
		lc_track_unsafe(olddir, req);
		if (newdir != olddir)
			lc_track_unsafe(newdir, req);
	}
	uint64_t rx = req->rx_seq;
	mdsc_request_put(req);
	uint64_t carried = t ? t->ino : 0;      /* the reply's target: the moved inode, as the MDS has it now */
	lc_put(c, t);
	if (r < 0)
		return r;
	/* both names changed; what they point to now is known only for the moved ones */
	lc_dcache_remove(c, olddir->ino, oldname);
	lc_dcache_remove(c, newdir->ino, newname);
	if (flags & MDSP_RENAME_EXCHANGE) {
		if (dst)
			lc_dcache_add(c, olddir, oldname, dst);
	} else if (flags & MDSP_RENAME_WHITEOUT) {
		/* the old name is the whiteout now, whose ino the reply does
		 * not carry: a lookup asks, also in a directory whose every
		 * name we knew */
		lc_dir_not_complete(c, olddir->ino);
	} else {
		/* gone as of the rename: unless a change of ours the MDS made
		 * after it (a rename back into the name) was applied first */
		lc_dcache_add_since(c, olddir, oldname, 0, ngen0, LC_CHANGE_ANY, rx);
	}
	if (src)
		lc_dcache_add(c, newdir, newname, src);
	uint64_t touched[2] = { src, dst };
	for (int i = 0; i < 2; i++) {
		struct lc_inode *x = touched[i] ? lc_ino_to_inode(c, touched[i]) : NULL;
		if (!x)
			continue;
		/* the reply carried the moved one; not the one it replaced */
		if (touched[i] != carried)
			lc_inode_invalidate(x);
		/* a file replaced by the rename may have lost its last link */
		if (i == 1 && src != dst && !(flags & MDSP_RENAME_EXCHANGE)) {
			pthread_mutex_lock(&x->lock);
			bool reg = S_ISREG(x->mi.mode);
			pthread_mutex_unlock(&x->lock);
			/* gone (ESTALE): nobody had it open; an orphan's data
			 * goes when the MDS sees the last close */
			if (reg && refresh(c, x, NULL) == -ESTALE)
				lc_purge_data(c, x);
		}
		lc_put(c, x);
	}
	/* the reply brought the target directory's new attributes (its kept
	 * listing went with its mtime), not the source's: the source's link
	 * count, times and change are stale now (lc_attrs_forget_locked), its
	 * listing goes here, and its change attribute is "not known" until
	 * the MDS says, so a READDIR or an ENOENT of it still on its way is
	 * not kept */
	if (olddir != newdir) {
		pthread_mutex_lock(&olddir->lock);
		lc_attrs_forget_locked(olddir);
		lc_dir_rd_drop_locked(olddir);
		olddir->mi.change = 0;
		pthread_mutex_unlock(&olddir->lock);
	}
	/* the kernel moved its dentry, with the time it may cache it for, into
	 * a directory not everyone may search: it must come back and ask */
	pthread_mutex_lock(&newdir->lock);
	uint32_t nmode = newdir->mi.mode;
	pthread_mutex_unlock(&newdir->lock);
	if (!all_search(nmode) && c->cb.inval_dentry)
		c->cb.inval_dentry(c->cb_arg, newdir->ino, newname);
	return 0;
}

ssize_t lc_readlink(struct lclient *c, struct lc_inode *in, char *buf, size_t size, const struct lc_cred *cr)
{
	struct mds_request *req;
	char *target = NULL;
	int r;

	pthread_mutex_lock(&in->lock);
	if (!S_ISLNK(in->mi.mode)) {
		pthread_mutex_unlock(&in->lock);
		return -EINVAL;
	}
	if (in->rare && in->rare->symlink)
		target = strdup(in->rare->symlink);
	pthread_mutex_unlock(&in->lock);
	if (!target) {
		req = lc_req_new(c, MDSP_OP_READLINK, in->ino, cr);
		if (!req)
			return -ENOTCONN;
		r = lc_req_run(c, req, NULL);
		if (r == 0 && req->reply && req->reply->link)
			target = strdup(req->reply->link);
		else if (r == 0)
			r = -EIO;
		mdsc_request_put(req);
		if (r < 0)
			return r;
		if (!target)
			return -ENOMEM;
		pthread_mutex_lock(&in->lock);
		struct lc_irare *rare = lc_rare_locked(in);
		if (rare && !rare->symlink)
			rare->symlink = strdup(target); /* a symlink's target never changes */
		pthread_mutex_unlock(&in->lock);
	}
	size_t n = strlen(target);
	if (size) {
		size_t cp = n < size ? n : size;
		memcpy(buf, target, cp);
		if (n < size)
			buf[n] = 0;
	}
	free(target);
	return (ssize_t)n;
}

/* The last answer, if there is one: 0 and @st, or -ENOENT. */
static int statfs_cached(struct lclient *c, struct statvfs *st)
{
	int r = -ENOENT;

	pthread_mutex_lock(&c->statfs_lock);
	if (c->statfs_valid) {
		*st = c->statfs_last;
		r = 0;
	}
	pthread_mutex_unlock(&c->statfs_lock);
	return r;
}

/*
 * statfs is what df, shells and desktop file managers call to draw a
 * mount; it must not hang them while the MDS is away (item 9.7).  With no
 * session, or no answer within client_statfs_timeout, the last answer is
 * given again (the numbers are what the MDS last said; nothing is known to
 * be better).  Only before any answer at all does it wait like any request.
 */
int lc_statfs(struct lclient *c, struct lc_inode *in, struct statvfs *st)
{
	struct mds_request *req;
	uint64_t tmo = lc_secs_ns(CFG_client_statfs_timeout);
	int r;

	if (c->mdsc && !mdsc_is_open(c->mdsc) && statfs_cached(c, st) == 0) {
		dout(CLIENT, 10, "statfs: no MDS session: the last answer");
		return 0;
	}
	req = lc_req_new(c, MDSP_OP_STATFS, in ? in->ino : MDSP_ROOT_INO, NULL);
	if (!req)
		return -ENOTCONN;
	if (tmo) {
		pthread_mutex_lock(&c->statfs_lock);
		if (c->statfs_valid)
			req->timeout_ns = tmo;   /* else: wait, there is nothing to answer with */
		pthread_mutex_unlock(&c->statfs_lock);
	}
	r = lc_req_run(c, req, NULL);
	if ((r == -ETIMEDOUT || r == -EINTR) && req->timeout_ns && statfs_cached(c, st) == 0) {
		dout(CLIENT, 5, "statfs: no answer from the MDS within %.1f s: the last answer", (double)tmo / 1e9);
		mdsc_request_put(req);
		return 0;
	}
	if (r == 0 && req->reply) {
		const struct mdsp_statfs *s = &req->reply->statfs;
		memset(st, 0, sizeof(*st));
		st->f_bsize = s->bsize ? s->bsize : 4096;
		st->f_frsize = st->f_bsize;
		st->f_blocks = s->blocks;
		st->f_bfree = s->bfree;
		st->f_bavail = s->bavail;
		st->f_files = s->files;
		st->f_ffree = s->ffree;
		st->f_favail = s->ffree;
		st->f_namemax = s->namemax ? s->namemax : MDSP_NAME_MAX;
		pthread_mutex_lock(&c->statfs_lock);
		c->statfs_last = *st;
		c->statfs_valid = true;
		pthread_mutex_unlock(&c->statfs_lock);
	}
	mdsc_request_put(req);
	return r;
}

/* ---- xattrs ----------------------------------------------------------------- */

static ssize_t xattr_data(struct lclient *c, struct mds_request *req, void *buf, size_t size)
{
	int r = lc_req_run(c, req, NULL);
	ssize_t ret = r;

	if (r == 0) {
		uint32_t n = req->reply ? req->reply->data_len : 0;
		ret = n;
		if (size) {
			if (n > size)
				ret = -ERANGE;
			else if (n)
				memcpy(buf, req->reply->data, n);
		}
	}
	mdsc_request_put(req);
	return ret;
}

/*
 * The data path's c->data_ops.pool_name: the pool file @ino's layout names,
 * from the MDS (the name of a pool id is the MDS's table: fs add_data_pool).
 */
static int pool_name(struct lclient *c, uint64_t ino, char *buf, size_t len)
{
	struct mds_request *req = lc_req_new(c, MDSP_OP_GETXATTR, ino, NULL);
	ssize_t n;

	if (!req)
		return -ENOTCONN;
	if (set_name(req, "loligo.file.layout.pool") < 0) {
		mdsc_request_put(req);
		return -ENOMEM;
	}
	n = xattr_data(c, req, buf, len - 1);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	return 0;
}

/*
 * security.capability is asked for before every write, truncate and
 * fallocate (the kernel's file_remove_privs, which FUSE does not cache), so
 * its absence is remembered: an MDS answer of "none" holds while we keep As
 * at the cap sequence we had when we asked, because the MDS revokes others'
 * As before it sets that xattr (mds/server.c op_setxattr), and a revoke or
 * grant moves the sequence.  Its presence is never cached: a file with
 * capabilities asks each time, and the write removes them anyway.
 */
static bool is_fcaps(const char *name)
{
	return strcmp(name, "security.capability") == 0;
}

static void fcaps_forget(struct lc_inode *in)
{
	pthread_mutex_lock(&in->lock);
	if (in->rare)
		in->rare->fcaps_none = false;
	in->fcaps_gen++;
	pthread_mutex_unlock(&in->lock);
}

/*
 * Whether @in has no xattr at all, as far as we may know without asking:
 * the last trace of it said so (MDSP_XATTRS_NONE) and we hold As, which
 * the MDS revokes from every other client before any xattr of the inode
 * changes (mds/server.c op_setxattr, op_removexattr).  ls -l asks for
 * security.selinux (and the ACL names) of every file it lists: with this
 * a listing costs the readdirplus batches only.  Our own change's reply
 * brings the new state in its trace.
 */
static bool xattrs_none(struct lc_inode *in)
{
	pthread_mutex_lock(&in->lock);
	bool none = (in->caps & MDSP_CAP_AUTH_SHARED) && in->mi.xattrs == MDSP_XATTRS_NONE;
	pthread_mutex_unlock(&in->lock);
	return none;
}

/* getxattr of @name of an inode without xattrs (xattrs_none): what the
 * MDS's op_getxattr would answer, or 1 where only it can tell (a user.*
 * name we may not read, a namespace it refuses) */
static int getxattr_none(struct lc_inode *in, const char *name, const struct lc_cred *cr)
{
	if (!strncmp(name, "security.", 9) || !strncmp(name, "trusted.", 8))
		return -ENODATA;
	if (!strcmp(name, MDSP_XATTR_ACL_ACCESS) || !strcmp(name, MDSP_XATTR_ACL_DEFAULT)) {
		struct lc_attr a;

		lc_inode_fill_attr(in, &a);
		return S_ISLNK(a.mode) ? 1 : -ENODATA;
	}
	if (!strncmp(name, "user.", 5)) {
		struct lc_attr a;

		lc_inode_fill_attr(in, &a);
		if (!S_ISREG(a.mode) && !S_ISDIR(a.mode))
			return -ENODATA;
		return lc_perm_check(&a, 4, cr) == 0 ? -ENODATA : 1;
	}
	return 1;
}

ssize_t lc_getxattr(struct lclient *c, struct lc_inode *in, const char *name, void *buf, size_t size,
		    const struct lc_cred *cr)
{
	struct mds_request *req;
	bool fcaps, as_held = false;
	uint64_t seq = 0;
	uint32_t gen = 0;
	ssize_t n;

	if (!name || !name[0] || strlen(name) > MDSP_XATTR_NAME_MAX)
		return -ERANGE;
	fcaps = is_fcaps(name);
	if (xattrs_none(in)) {
		int r = getxattr_none(in, name, cr);

		if (r <= 0) {
			perf_inc(&c->perf.xattr_cached, 1);
			if (fcaps && r == -ENODATA) {
				/*
				 * Remembered as an MDS answer would be: the
				 * trace's "no xattrs" goes with the next CAPS
				 * message (they carry no xattr state), and every
				 * write asks again; an evicted client that does
				 * not know yet must still get its write to the
				 * data store, which refuses it.
				 */
				pthread_mutex_lock(&in->lock);
				struct lc_irare *ra;
				/* (no memory: not noted, the next write asks) */
				if ((in->caps & MDSP_CAP_AUTH_SHARED) && in->mi.xattrs == MDSP_XATTRS_NONE &&
				    (ra = lc_rare_locked(in))) {
					ra->fcaps_none = true;
					ra->fcaps_seq = in->cap_seq;
				}
				pthread_mutex_unlock(&in->lock);
			}
			return r;
		}
	}
	if (fcaps) {
		pthread_mutex_lock(&in->lock);
		as_held = in->caps & MDSP_CAP_AUTH_SHARED;
		seq = in->cap_seq;
		gen = in->fcaps_gen;
		bool none = as_held && in->rare && in->rare->fcaps_none && in->rare->fcaps_seq == seq;
		pthread_mutex_unlock(&in->lock);
		if (none)
			return -ENODATA;
	}
	req = lc_req_new(c, MDSP_OP_GETXATTR, in->ino, cr);
	if (!req)
		return -ENOTCONN;
	if (set_name(req, name) < 0) {
		mdsc_request_put(req);
		return -ENOMEM;
	}
	n = xattr_data(c, req, buf, size);
	if (fcaps && n == -ENODATA && as_held) {
		pthread_mutex_lock(&in->lock);
		struct lc_irare *ra;
		if ((in->caps & MDSP_CAP_AUTH_SHARED) && in->cap_seq == seq && in->fcaps_gen == gen &&
		    (ra = lc_rare_locked(in))) {
			ra->fcaps_none = true;
			ra->fcaps_seq = seq;
		}
		pthread_mutex_unlock(&in->lock);
	}
	return n;
}

/* (client.h) the data layer's setuid kill, then the capability by name */
int lc_kill_privs(struct lclient *c, struct lc_inode *in, const struct lc_cred *cr)
{
	ssize_t n;
	int r;

	pthread_mutex_lock(&in->lock);
	bool reg = S_ISREG(in->mi.mode);
	pthread_mutex_unlock(&in->lock);
	if (!reg)
		return 0;
	r = lc_kill_suid(c, in, cr);
	if (r < 0)
		return r;
	/* by anyone, root too (cap_inode_need_killpriv); free while the
	 * absence is known (lc_getxattr remembers it under As) */
	n = lc_getxattr(c, in, "security.capability", NULL, 0, cr);
	if (n == -ENODATA || n == -EOPNOTSUPP)
		return 0;
	if (n < 0)
		return (int)n;
	r = lc_removexattr(c, in, "security.capability", cr);
	if (r == -ENODATA)
		r = 0;   /* someone else's write took it first */
	if (r == 0 && c->cb.inval_inode)
		c->cb.inval_inode(c->cb_arg, in->ino, -1, 0);
	return r;
}

ssize_t lc_listxattr(struct lclient *c, struct lc_inode *in, char *buf, size_t size, const struct lc_cred *cr)
{
	if (xattrs_none(in)) {
		perf_inc(&c->perf.xattr_cached, 1);
		return 0;
	}
	struct mds_request *req = lc_req_new(c, MDSP_OP_LISTXATTR, in->ino, cr);

	if (!req)
		return -ENOTCONN;
	return xattr_data(c, req, buf, size);
}

static bool is_acl_name(const char *name)
{
	return !strcmp(name, MDSP_XATTR_ACL_ACCESS) || !strcmp(name, MDSP_XATTR_ACL_DEFAULT);
}

int lc_setxattr(struct lclient *c, struct lc_inode *in, const char *name, const void *val, size_t size, int flags,
		const struct lc_cred *cr)
{
	struct mds_request *req;
	int r;

	if (!name || !name[0] || strlen(name) > MDSP_XATTR_NAME_MAX)
		return -ERANGE;
	if (size > MDSP_XATTR_SIZE_MAX)
		return -E2BIG;
	/* an ACL changes what its setattrs may do and do (perm/acl.c): the
	 * MDS decides them from now on, not asyncdir.c */
	if (is_acl_name(name))
		lc_async_forget(c, in->ino);
	req = lc_req_new(c, MDSP_OP_SETXATTR, in->ino, cr);
	if (!req)
		return -ENOTCONN;
	r = set_name(req, name);
	if (r == 0 && size) {
		req->args.data = malloc(size);
		if (!req->args.data)
			r = -ENOMEM;
		else {
			memcpy(req->args.data, val, size);
			req->args.data_len = (uint32_t)size;
		}
	}
	req->args.oflags = (uint32_t)flags;
	if (r == 0 && is_fcaps(name))
		fcaps_forget(in);   /* before: a getxattr answered meanwhile may say "none" */
	/* a file's layout is set only while it has no data (mds/server.c
	 * layout_setxattr, which sees what other clients buffered once it
	 * revoked their caps): what we wrote and the MDS may not know yet
	 * says no here */
	if (r == 0 && !strncmp(name, "loligo.file.layout", 18)) {
		pthread_mutex_lock(&in->lock);
		if (in->dirty || in->flushing || in->wsize || in->mi.size)
			r = -ENOTEMPTY;
		pthread_mutex_unlock(&in->lock);
	}
	if (r == 0)
		r = lc_req_run(c, req, NULL);
	if (r == 0 && is_fcaps(name))
		fcaps_forget(in);
	mdsc_request_put(req);
	return r;
}

int lc_removexattr(struct lclient *c, struct lc_inode *in, const char *name, const struct lc_cred *cr)
{
	struct mds_request *req;
	int r;

	if (!name || !name[0] || strlen(name) > MDSP_XATTR_NAME_MAX)
		return -ERANGE;
	req = lc_req_new(c, MDSP_OP_REMOVEXATTR, in->ino, cr);
	if (!req)
		return -ENOTCONN;
	r = set_name(req, name);
	if (r == 0)
		r = lc_req_run(c, req, NULL);
	mdsc_request_put(req);
	return r;
}

/* ---- open and create ------------------------------------------------------- */

/* O_TRUNC is done here, not by the MDS: the client knows the old size and trims the objects */
static int open_truncate(struct lclient *c, struct lc_inode *in, int flags, const struct lc_cred *cr)
{
	if (!(flags & O_TRUNC) || (flags & O_ACCMODE) == O_RDONLY)
		return 0;
	if (lc_inode_size(in) == 0)
		return 0;
	struct lc_attr set = { .size = 0 };
	return setattr(c, in, &set, LC_SET_SIZE, cr, NULL, false);
}

int lc_open(struct lclient *c, struct lc_inode *in, int flags, const struct lc_cred *cr, struct lc_fh **fh)
{
	struct mds_request *req;
	struct lc_inode *t = NULL;
	int r;

	*fh = NULL;
	req = lc_req_new(c, MDSP_OP_OPEN, in->ino, cr);
	if (!req)
		return -ENOTCONN;
	/* the handle counts before the MDS hears of the open: a close of
	 * another handle meanwhile must not tell it we want nothing */
	struct lc_fh *nfh = lc_fh_new(c, in, flags, cr);
	if (!nfh) {
		mdsc_request_put(req);
		return -ENOMEM;
	}
	req->args.oflags = (uint32_t)(flags & ~O_TRUNC);
	r = lc_req_run(c, req, &t); /* close-to-open: fresh attributes, caps */
	mdsc_request_put(req);
	lc_put(c, t);
	if (r == 0)
		r = open_truncate(c, in, flags, cr);
	if (r < 0) {
		lc_fh_free(c, nfh);
		return r;
	}
	pthread_mutex_lock(&in->lock);
	in->wanted_sent |= lc_caps_wanted_locked(in);   /* the MDS took the open's wants */
	pthread_mutex_unlock(&in->lock);
	*fh = nfh;
	return 0;
}

static int create_file(struct lclient *c, struct lc_inode *dir, const char *name, mode_t mode, int flags,
		       const struct lc_cred *cr, struct lc_attr *attr, struct lc_inode **out, struct lc_fh **fh)
{
	struct mds_request *req;
	struct lc_inode *in = NULL;
	int r = mdsp_check_name(name);

	*out = NULL;
	*fh = NULL;
	if (r < 0)
		return r;
	r = lc_async_create(c, dir, name, mode, flags, false, cr, attr, out, fh);
	if (r != -EAGAIN)
		return r;
	req = lc_req_new(c, MDSP_OP_CREATE, dir->ino, cr);
	if (!req)
		return -ENOTCONN;
	req->args.mode = (mode & 07777) | S_IFREG;
	req->args.oflags = (uint32_t)((flags | O_CREAT) & ~O_TRUNC);
	r = set_name(req, name);
	if (r == 0) {
		lc_deleg_want(c, req);
		r = lc_req_run(c, req, &in);
	}
	mdsc_request_put(req);
	if (r < 0)
		return r;
	if (!in)
		return -EIO;
	lc_dcache_add(c, dir, name, in->ino);
	r = open_truncate(c, in, flags, cr);
	if (r == 0) {
		*fh = lc_fh_new(c, in, flags & ~(O_CREAT | O_EXCL | O_TRUNC), cr);
		if (!*fh)
			r = -ENOMEM;
	}
	if (r < 0) {
		lc_put(c, in);
		return r;
	}
	pthread_mutex_lock(&in->lock);
	in->wanted_sent |= lc_caps_wanted_locked(in);
	pthread_mutex_unlock(&in->lock);
	/* a close of another handle racing with the create may have told the
	 * MDS we want less than we do now */
	lc_caps_update(c, in);
	fill(in, attr);
	*out = in;
	return 0;
}

/*
 * O_TMPFILE: the MDS makes an orphan open by us (MDSP_OP_TMPFILE), nothing
 * in @dir changes, so no dentry is cached and the asynchronous create path
 * (which needs a name) is not taken.  Its data goes at our last close unless
 * a LINK gives it a name first (lc_link clears that).
 */
int lc_tmpfile(struct lclient *c, struct lc_inode *dir, mode_t mode, int flags, const struct lc_cred *cr,
	       struct lc_attr *attr, struct lc_inode **out, struct lc_fh **fh)
{
	struct mds_request *req;
	struct lc_inode *in = NULL;
	int r;

	*out = NULL;
	*fh = NULL;
	req = lc_req_new(c, MDSP_OP_TMPFILE, dir->ino, cr);
	if (!req)
		return -ENOTCONN;
	req->args.mode = (mode & 07777) | S_IFREG;
	req->args.oflags = (uint32_t)(flags & ~(O_CREAT | O_TRUNC | O_TMPFILE));
	r = lc_req_run(c, req, &in);
	mdsc_request_put(req);
	if (r < 0)
		return r;
	if (!in)
		return -EIO;
	*fh = lc_fh_new(c, in, flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_TMPFILE), cr);
	if (!*fh) {
		lc_put(c, in);
		return -ENOMEM;
	}
	pthread_mutex_lock(&in->lock);
	in->wanted_sent |= lc_caps_wanted_locked(in);
	pthread_mutex_unlock(&in->lock);
	lc_purge_data(c, in);   /* open: only marks it for the last close */
	fill(in, attr);
	*out = in;
	return 0;
}

/* ---- the namespace operations as frontends call them ------------------------ */
/*
 * Each change is told to the frontend that registered lc_callbacks when
 * another frontend made it (frontend.c): the names and their directories'
 * attributes, and the inode a link or a rename changed (nlink, ctime).
 */

int lc_mknod(struct lclient *c, struct lc_inode *dir, const char *name, mode_t mode, dev_t rdev,
	     const struct lc_cred *cr, struct lc_attr *attr, struct lc_inode **out)
{
	int r = mknod_node(c, dir, name, mode, rdev, cr, attr, out);

	if (r == 0)
		lc_frontends_entry_changed(c, dir, name);
	return r;
}

int lc_mkdir(struct lclient *c, struct lc_inode *dir, const char *name, mode_t mode, const struct lc_cred *cr,
	     struct lc_attr *attr, struct lc_inode **out)
{
	int r = mkdir_node(c, dir, name, mode, cr, attr, out);

	if (r == 0)
		lc_frontends_entry_changed(c, dir, name);
	return r;
}

int lc_symlink(struct lclient *c, struct lc_inode *dir, const char *name, const char *target,
	       const struct lc_cred *cr, struct lc_attr *attr, struct lc_inode **out)
{
	int r = symlink_node(c, dir, name, target, cr, attr, out);

	if (r == 0)
		lc_frontends_entry_changed(c, dir, name);
	return r;
}

int lc_link(struct lclient *c, struct lc_inode *in, struct lc_inode *newdir, const char *name,
	    const struct lc_cred *cr, struct lc_attr *attr)
{
	int r = link_node(c, in, newdir, name, cr, attr);

	if (r == 0) {
		lc_frontends_entry_changed(c, newdir, name);
		lc_frontends_inode_changed(c, in->ino, -1, 0);
	}
	return r;
}

int lc_rename(struct lclient *c, struct lc_inode *olddir, const char *oldname, struct lc_inode *newdir,
	      const char *newname, unsigned int flags, const struct lc_cred *cr)
{
	uint64_t moved = 0;
	int r;

	if (lc_frontends_to_tell(c))
		lc_dcache_lookup(c, olddir, oldname, &moved);
	r = rename_names(c, olddir, oldname, newdir, newname, flags, cr);
	if (r == 0) {
		lc_ns_changed(c);
		lc_frontends_entry_changed(c, olddir, oldname);
		lc_frontends_entry_changed(c, newdir, newname);
		lc_frontends_inode_changed(c, moved, -1, 0);
	}
	return r;
}

int lc_create(struct lclient *c, struct lc_inode *dir, const char *name, mode_t mode, int flags,
	      const struct lc_cred *cr, struct lc_attr *attr, struct lc_inode **out, struct lc_fh **fh)
{
	int r = create_file(c, dir, name, mode, flags, cr, attr, out, fh);

	if (r == 0)
		lc_frontends_entry_changed(c, dir, name);
	return r;
}

/* ---- registration with the layers below ----------------------------------- */

void lc_ns_register(struct lclient *c)
{
	c->cache_ops.dir_batch_put = lc_rd_batch_put;
	c->cache_ops.async_unlink_wait = lc_async_unlink_wait;
	c->cache_ops.async_unlink_defer = lc_async_unlink_defer;
	c->cache_ops.async_unlink_drop = lc_async_unlink_drop;
	c->data_ops.getattr = lc_getattr;
	c->data_ops.pool_name = pool_name;
	c->data_ops.fsetattr = lc_fsetattr;
}
