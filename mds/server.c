/*
 * server.c - the POSIX semantics of every MDS op.
 *
 * Each op works on the in-memory namespace (mdcache.c) under mds->lock,
 * fills the reply (result, trace of the directory and target inodes) and
 * describes its changes as edits in the txn that the caller journals.  An op
 * that fails changes nothing.  Checks follow the kernel's VFS: the caller's
 * uid/gid/groups against the mode bits, root (uid 0) bypassing everything
 * but exec on files without any x bit; search (x) on directories, write+exec
 * on the parent for create/unlink/rename, the sticky bit, write on a
 * directory that moves to another parent (its ".." changes).
 *
 * New inodes take their numbers from the creating session's preallocated
 * pool (prealloc.c); a create replayed after a crash carries the ino its
 * UNSAFE reply named and gets exactly that one, or fails (never another).
 *
 * Truncation only records the new size: data objects past it are trimmed by
 * the client that holds the write caps (it knows what it still buffers).
 * The data of a file whose last link goes is purged by the MDS (purge.c).
 *
 * Caps (locker.c): an op that changes something other clients may cache
 * first calls locker_want_caps/_dentry for it, after its checks and before
 * any change, and returns LOCKER_WAIT if revokes are in flight; it runs again
 * from the start once they are acked.  The caps and leases a reply grants
 * are filled in by server_dispatch (locker_fill_reply) after the op.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "common/log.h"
#include "common/rcu.h"
#include "common/time.h"
#include "mds/codec.h"
#include "mds/mds.h"
#include "mds/authcaps.h"
#include "mds/layout.h"
#include "mds/locker.h"
#include "mds/mdcache.h"
#include "mds/prealloc.h"
#include "mds/rstat.h"
#include "mds/server.h"
#include "perm/perm.h"

#define MAY_EXEC  MDSP_MAY_EXEC
#define MAY_WRITE MDSP_MAY_WRITE
#define MAY_READ  MDSP_MAY_READ
#define NLINK_MAX 65000u
#define XATTR_TOTAL_MAX (256u << 10)
#define XATTR_CREATE_FLAG 1
#define XATTR_REPLACE_FLAG 2
#define AS MDSP_CAP_AUTH_SHARED
#define LS MDSP_CAP_LINK_SHARED
#define FS MDSP_CAP_FILE_SHARED
#define FILE_CACHES (MDSP_CAP_FILE_SHARED | MDSP_CAP_FILE_CACHE | MDSP_CAP_FILE_BUFFER)

static void now_time(struct mdsp_time *t)
{
	uint64_t ns = now_real_ns();

	t->sec = (int64_t)(ns / 1000000000ull);
	t->nsec = (uint32_t)(ns % 1000000000ull);
}

static void touch(struct minode *in, bool mtime)
{
	now_time(&in->a.ctime);
	if (mtime)
		in->a.mtime = in->a.ctime;
	in->a.change++;
}

static bool in_group(const struct mdsp_caller *c, uint32_t gid)
{
	return mdsp_in_group(c, gid);
}

static const struct mxattr *xattr_of(const struct minode *in, const char *name)
{
	const struct mxattr *x;

	for (x = in->xattrs; x; x = x->next)
		if (!strcmp(x->name, name))
			return x;
	return NULL;
}

/* Drop xattr @name of @in, if it has one. */
static void xattr_drop(struct minode *in, const char *name)
{
	struct mxattr **pp, *x;

	for (pp = &in->xattrs; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->name, name))
			break;
	x = *pp;
	if (!x)
		return;
	*pp = x->next;
	in->xattr_bytes -= x->len + (uint32_t)strlen(x->name);
	free(x->name);
	free(x->val);
	free(x);
}

/* the permission check of every op: perm/perm.c (the client's too), with
 * the inode's access ACL */
static int may_access(const struct minode *in, const struct mdsp_caller *c, int mask)
{
	const struct mxattr *acl = xattr_of(in, MDSP_XATTR_ACL_ACCESS);

	return mdsp_may_access_acl(&in->a, acl ? acl->val : NULL, acl ? acl->len : 0, c, mask);
}

/* Attach xattr @name = @val (@len bytes, copied) to a new inode @in. */
static int xattr_add_new(struct minode *in, const char *name, const void *val, uint32_t len)
{
	struct mxattr *x = calloc(1, sizeof(*x));

	if (!x)
		return -ENOMEM;
	x->name = strdup(name);
	x->val = malloc(len ? len : 1);
	if (!x->name || !x->val) {
		free(x->name);
		free(x->val);
		free(x);
		return -ENOMEM;
	}
	memcpy(x->val, val, len);
	x->len = len;
	x->next = in->xattrs;
	in->xattrs = x;
	in->xattr_bytes += (uint32_t)strlen(name) + len;
	return 0;
}

/*
 * posix_acl_create: a new inode under @dir takes its access ACL from the
 * directory's default ACL, masked with the mode it asked for (and the mode
 * with it), instead of the umask; a new directory also keeps the default
 * as its own.  Without a default ACL the umask applies, when the client
 * left it to us (MDSP_REQ_UMASK: a FUSE mount with POSIX ACLs, where the
 * kernel does not apply it).  The ACLs are xattrs of the new inode, so they
 * are journaled with the create.
 */
static int inherit_acl(const struct mdsp_request *r, const struct minode *dir, struct minode *in,
		       uint32_t *modep)
{
	const struct mxattr *def = xattr_of(dir, MDSP_XATTR_ACL_DEFAULT);
	uint8_t *acl;
	int e = 0;

	if (!def || !mdsp_acl_count(def->len)) {
		if (r->flags & MDSP_REQ_UMASK)
			*modep &= ~(r->umask & 0777);
		return 0;
	}
	if (S_ISDIR(*modep) && (e = xattr_add_new(in, MDSP_XATTR_ACL_DEFAULT, def->val, def->len)))
		return e;
	acl = malloc(def->len);
	if (!acl)
		return -ENOMEM;
	memcpy(acl, def->val, def->len);
	if (mdsp_acl_create_masq(acl, def->len, modep))
		e = xattr_add_new(in, MDSP_XATTR_ACL_ACCESS, acl, def->len);
	free(acl);
	return e;
}

static bool is_owner(const struct minode *in, const struct mdsp_caller *c)
{
	return c->uid == 0 || c->uid == in->a.uid;
}

/* The sticky bit: only the owner of the victim or of the dir (or root) may
 * remove or rename it.  And chattr's flags, as may_delete() has them: no
 * name of an immutable or append-only inode goes, nor any name of an
 * append-only directory (an immutable one refuses the write permission). */
static int sticky_ok(const struct minode *dir, const struct minode *victim, const struct mdsp_caller *c)
{
	if ((dir->a.flags & MDSP_FL_APPEND) || (victim->a.flags & MDSP_FL_ALL))
		return -EPERM;
	return mdsp_sticky_ok(&dir->a, &victim->a, c);
}

/* 0 for a plain name, 1 for "." or "..", -errno for an invalid one. */
static int get_dir(struct mds *m, uint64_t ino, struct minode **din, struct mdir **d)
{
	int r = inode_get(m, ino, din);

	if (r)
		return r;
	if (!S_ISDIR((*din)->a.mode))
		return -ENOTDIR;
	/* a removed directory a client still has (an orphan, locker_referenced):
	 * no names in it, and none can be made (ENOENT, as Linux answers) */
	if ((*din)->in_stray && d)
		return -ENOENT;
	return d ? mdir_get(m, ino, d) : 0;
}

static int parent_of(struct mds *m, struct minode *in, struct minode **out)
{
	if (in->a.ino == MDSP_ROOT_INO) {
		*out = in;
		return 0;
	}
	if (!in->primary)
		return -ENOENT;
	return inode_get(m, in->primary->dir->ino, out);
}

/* Is directory @a @dir itself or one of its ancestors? */
static int is_ancestor(struct mds *m, struct minode *a, struct minode *dir)
{
	struct minode *cur = dir, *p;
	int depth = 0, r;

	while (depth++ < 100000) {
		if (cur == a)
			return 1;
		if (cur->a.ino == MDSP_ROOT_INO)
			return 0;
		r = parent_of(m, cur, &p);
		if (r)
			return r;
		cur = p;
	}
	return -ELOOP;
}

/* The target trace; its caps are granted after the op (locker_fill_reply). */
static void set_target(struct mdsp_reply *rep, const struct minode *in)
{
	rep->has_target = true;
	rep->target = in->a;
	rep->target.xattrs = in->xattrs ? MDSP_XATTRS_SOME : MDSP_XATTRS_NONE;
	if (S_ISREG(in->a.mode))
		rep->target.max_size = UINT64_MAX;
	rep->caps = 0;
	rep->cap_seq = 0;
}

/* A name in directory @din changes: other clients' listing and negative
 * names go (Fs on the directory), and with @nlink its link count (Ls). */
static void want_dir_change(struct mds *m, struct txn *t, struct minode *din, bool nlink)
{
	locker_want_caps(m, t, din, FS | (nlink ? LS : 0));
}

static void set_dir(struct mdsp_reply *rep, const struct minode *din, const char *name)
{
	rep->has_dir = true;
	rep->dir = din->a;
	free(rep->dname);
	rep->dname = name ? strdup(name) : NULL;
}

/*
 * A new inode for create/mknod/mkdir/symlink @r of session @s: its ino comes
 * from the session's pool, and a replay gets exactly the one its UNSAFE
 * reply named (prealloc.c) or fails.  Return: 0 with *@out, or -errno.
 */
static int new_inode(struct mds *m, struct session *s, const struct mdsp_request *r, struct txn *t,
		     const struct minode *dir, uint32_t mode, struct mdsp_reply *rep, struct minode **out)
{
	const struct mdsp_caller *c = &r->caller;
	struct minode *in;
	uint64_t ino;
	uint8_t v[8];
	int e;

	if (!s)
		return -ENOTCONN;
	if ((e = prealloc_take_locked(m, s, r, t, &ino)))
		return e;
	/* a client that answers creates itself asks for its next inos in time */
	if ((r->flags & MDSP_REQ_WANT_INOS) && !(r->flags & (MDSP_REQ_REPLAY | MDSP_REQ_RETRY)))
		rep->deleg_start = prealloc_delegate_locked(m, s, t, &rep->deleg_len);
	in = minode_alloc(m, ino);
	if (!in)
		return -ENOMEM;
	in->a.ino = ino;
	in->a.generation = 1;
	in->a.uid = c->uid;
	in->a.gid = c->gid;
	if (dir->a.mode & S_ISGID) {
		in->a.gid = dir->a.gid;
		if (S_ISDIR(mode))
			mode |= S_ISGID;
	}
	/* a non-member creating a group-executable setgid file in a setgid
	 * directory of another group loses the bit (mode_strip_sgid) */
	if (!S_ISDIR(mode) && (mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) && (dir->a.mode & S_ISGID) &&
	    c->uid != 0 && !in_group(c, dir->a.gid))
		mode &= ~(uint32_t)S_ISGID;
	if (r->op != MDSP_OP_RENAME && !S_ISLNK(mode) && (e = inherit_acl(r, dir, in, &mode))) {
		minode_free(m, in);
		return e;
	}
	in->a.mode = mode;
	in->a.nlink = S_ISDIR(mode) ? 2 : 1;
	now_time(&in->a.ctime);
	in->a.atime = in->a.mtime = in->a.btime = in->a.ctime;
	in->a.change = 1;
	/*
	 * The layout: the directory's, which is what new files below it get
	 * (its loligo.dir.layout, or what it got from its own parent at mkdir:
	 * inherited by copy, so the nearest ancestor that had a layout when
	 * the directory was made wins).  Clients making files on their own
	 * (asyncdir.c) copy the same fields; a layout change of the directory
	 * revokes their As first.
	 */
	in->a.object_size = dir->a.object_size ? dir->a.object_size : m->object_size;
	in->a.stripe_unit = dir->a.stripe_unit;
	in->a.stripe_count = dir->a.stripe_count;
	in->a.pool = dir->a.pool;
	in->a.layout_flags = 0;
	m->nfiles++;
	le64_put(v, m->nfiles);
	txn_edit(t, EDIT_SET, OID_TABLE, "nfiles", v, 8, NULL);
	*out = in;
	return 0;
}

static int link_primary(struct mds *m, struct mdir *d, const char *name, struct minode *in, struct txn *t)
{
	struct mdentry *dn = mdir_add(m, d, name, in->a.ino, in->a.mode & S_IFMT, false, 0, t);

	if (!dn)
		return -ENOMEM;
	in->primary = dn;
	in->anchor_dirty = true;
	txn_dirty(t, in);
	return 0;
}

static void dir_changed(struct minode *din, int entries, int nlink, struct txn *t)
{
	din->a.files = (uint64_t)((int64_t)din->a.files + entries);
	din->a.nlink = (uint32_t)((int32_t)din->a.nlink + nlink);
	touch(din, true);
	txn_dirty(t, din);
}

/* ---- ops ---------------------------------------------------------------- */

static int op_lookup(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		     struct txn *t)
{
	struct minode *din, *in;
	struct mdir *d;
	struct mdentry *dn;
	int k, e;

	e = get_dir(m, r->ino, &din, NULL);
	if (e)
		return e;
	e = may_access(din, &r->caller, MAY_EXEC);
	if (e)
		return e;
	k = mdsp_check_name(r->name);
	if (k < 0)
		return k;
	if (k == 1) {
		if (!strcmp(r->name, "."))
			in = din;
		else if ((e = parent_of(m, din, &in)))
			return e;
		set_target(rep, in);
		set_dir(rep, din, r->name);
		return 0;
	}
	/* a removed directory has no names (and no object to read them from) */
	if (din->in_stray)
		return -ENOENT;
	e = mdir_get(m, r->ino, &d);
	if (e)
		return e;
	set_dir(rep, din, r->name);
	if ((e = mdir_lookup_load(m, d, r->name, &dn)))
		return e;
	if (!dn)
		return -ENOENT;
	e = inode_get(m, dn->ino, &in);
	if (e)
		return e;
	/* a directory another client fills itself: its attributes come after
	 * what it created there */
	locker_want_dir(m, t, in);
	if ((e = locker_blocked(t)))
		return e;
	set_target(rep, in);
	return 0;
}

static int op_getattr(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		      struct txn *t)
{
	struct minode *in;
	int e = inode_get(m, r->ino, &in);

	if (e)
		return e;
	set_target(rep, in);
	return 0;
}

/* A truncate to @size: the objects lose everything past it (a file whose
 * blocks were not known knows them again once nothing is left). */
static void blocks_truncated(struct minode *in, uint64_t size)
{
	if (!S_ISREG(in->a.mode))
		return;
	if (in->a.blocks == MDSP_BLOCKS_UNKNOWN) {
		if (size)
			return;
		in->a.blocks = 0;
	}
	mdsp_extset_truncate(&in->ext, size);
	inode_blocks_sync(in);
}

/*
 * SETATTR: the checks (mdsp_setattr_check_acl, perm/perm.c: Linux's
 * notify_change() and setattr_prepare() in their order) are shared with a
 * client that answers a setattr of an inode only it knows itself
 * (client/asyncdir.c), so both decide alike; every change moves ctime.
 * MDSP_SETATTR_CLIENT_TIME: such a change, made at the client's clock
 * (attr.ctime), ends here as the client showed it.
 */
static int op_setattr(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		      struct txn *t)
{
	const struct mdsp_caller *c = &r->caller;
	const struct mdsp_inode *a = &r->attr;
	const uint32_t times = MDSP_SETATTR_ATIME | MDSP_SETATTR_MTIME | MDSP_SETATTR_ATIME_NOW |
			       MDSP_SETATTR_MTIME_NOW;
	uint32_t mask = r->mask, kill = 0;
	const struct mxattr *acl;
	struct mdsp_time now;
	struct minode *in;
	uint64_t old_size;
	int e = inode_get(m, r->ino, &in);

	if (e)
		return e;
	acl = xattr_of(in, MDSP_XATTR_ACL_ACCESS);
	e = mdsp_setattr_check_acl(&in->a, acl ? acl->val : NULL, acl ? acl->len : 0, c, mask, a, m->max_file_size,
				   &kill);
	if (e)
		return e;
	/* a truncate up is growth like a write: the byte quotas above (exact
	 * here, where the MDS sees it) */
	if ((mask & MDSP_SETATTR_SIZE) && S_ISREG(in->a.mode) && a->size > in->a.size) {
		struct rstat_delta d = { (int64_t)(a->size - in->a.size), 0, 0 };

		if ((e = rstat_quota_check(m, rstat_acct_dir(in), &d, 0)))
			return e;
	}
	/* what other clients cache of it goes first */
	if ((mask & (MDSP_SETATTR_MODE | MDSP_SETATTR_UID | MDSP_SETATTR_GID | MDSP_SETATTR_KILL_SUID |
		     MDSP_SETATTR_CHOWN | MDSP_SETATTR_FLAGS)) || kill)
		locker_want_caps(m, t, in, AS);
	/* the flags: every other client checks them before it writes, and
	 * what it buffered lands before they change (as the data written
	 * before a chattr +i on ext4 is the file's) */
	if (mask & (MDSP_SETATTR_SIZE | MDSP_SETATTR_FLAGS))
		locker_want_caps(m, t, in, FILE_CACHES);
	else if (mask & (times | MDSP_SETATTR_CTIME))
		locker_want_caps(m, t, in, FS);
	if ((e = locker_blocked(t)))
		return e;

	/* checks done: apply */
	if ((mask & MDSP_SETATTR_CLIENT_TIME) && !(mask & MDSP_SETATTR_CTIME))
		now = a->ctime;
	else
		now_time(&now);
	old_size = in->a.size;
	mdsp_setattr_apply(&in->a, c, mask, a, kill, now);
	/* a chmod rewrites the access ACL's owner, mask (or group) and other
	 * entries (posix_acl_chmod); a kill of setuid/setgid leaves them */
	if (mask & MDSP_SETATTR_MODE) {
		struct mxattr *x = xattr_find(in, MDSP_XATTR_ACL_ACCESS);

		if (x)
			mdsp_acl_chmod(x->val, x->len, in->a.mode);
	}
	/* what the objects hold follows the data: a truncate cuts it */
	if ((mask & MDSP_SETATTR_SIZE) && in->a.size < old_size)
		blocks_truncated(in, in->a.size);
	/* a chown takes the file's capabilities, by whoever it is (the VFS's
	 * ATTR_KILL_PRIV from chown_common: setcap, then chown, and the
	 * program runs without them), whatever the frontend (the NFS
	 * gateway has no kernel to do it; As went from others above) */
	if ((mask & (MDSP_SETATTR_UID | MDSP_SETATTR_GID | MDSP_SETATTR_CHOWN)) && S_ISREG(in->a.mode))
		xattr_drop(in, "security.capability");
	txn_dirty(t, in);
	rstat_inode_changed(m, t, in, old_size);
	set_target(rep, in);
	return 0;
}

/* the kernel's __FMODE_EXEC in open flags: execve() opening its file */
#define OPEN_FOR_EXEC 0x20

static int open_check(struct minode *in, const struct mdsp_caller *c, uint32_t oflags)
{
	int acc = (int)(oflags & O_ACCMODE), mask = 0;

	if (S_ISLNK(in->a.mode))
		return -ELOOP;
	if (S_ISDIR(in->a.mode) && (acc != O_RDONLY || (oflags & O_TRUNC)))
		return -EISDIR;
	/* execve needs execute permission, not read (as open_exec asks) */
	if ((oflags & OPEN_FOR_EXEC) && acc == O_RDONLY && !(oflags & O_TRUNC))
		return S_ISREG(in->a.mode) ? may_access(in, c, MAY_EXEC) : -EACCES;
	if (acc == O_RDONLY || acc == O_RDWR)
		mask |= MAY_READ;
	if (acc == O_WRONLY || acc == O_RDWR || (oflags & O_TRUNC))
		mask |= MAY_WRITE;
	/* may_open: an append-only file is opened for writing only to append */
	if ((in->a.flags & MDSP_FL_APPEND) && ((acc != O_RDONLY && !(oflags & O_APPEND)) || (oflags & O_TRUNC)))
		return -EPERM;
	return mask ? may_access(in, c, mask) : 0;
}

static void open_trunc(struct mds *m, struct minode *in, uint32_t oflags, struct txn *t)
{
	if ((oflags & O_TRUNC) && S_ISREG(in->a.mode) && in->a.size) {
		uint64_t old = in->a.size;

		in->a.size = 0;
		blocks_truncated(in, 0);
		touch(in, true);
		txn_dirty(t, in);
		rstat_inode_changed(m, t, in, old);
	}
}

static int op_open(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		   struct txn *t)
{
	struct minode *in;
	int e = inode_get(m, r->ino, &in);

	if (e)
		return e;
	if ((e = open_check(in, &r->caller, r->oflags)))
		return e;
	/* an unlinked file open elsewhere, opened anew by its number (a
	 * dentry of a kernel that raced with the unlink, or with a rename
	 * over it): stale, so that the kernel looks the name up again and
	 * opens what it names now */
	if (in->in_stray && S_ISREG(in->a.mode) && !locker_open_by(in, s))
		return -ESTALE;
	locker_want_open(m, t, in, r->oflags);
	if ((e = locker_blocked(t)))
		return e;
	open_trunc(m, in, r->oflags, t);
	set_target(rep, in);
	return 0;
}

/* One more name in @din: refused (EDQUOT) where a file quota above is full. */
static int quota_one_more(struct mds *m, struct minode *din)
{
	struct rstat_delta d = { 0, 1, 0 };

	return rstat_quota_check(m, din->a.ino, &d, 0);
}

/* A name of @in was added to (@sign 1) or removed from (-1) directory @din,
 * counting its bytes if @bytes: the statistics of @din and everything above. */
static void rstat_name(struct mds *m, struct txn *t, struct minode *din, const struct minode *in, bool bytes,
		       int sign)
{
	struct rstat_delta d;

	rstat_of_name(in, bytes, &d);
	d.bytes *= sign;
	d.files *= sign;
	d.subdirs *= sign;
	rstat_propagate(m, t, din->a.ino, &d, &din->a.ctime);
}

/* Does the name @dn in @din count @in's bytes? */
static bool name_counts_bytes(const struct mdentry *dn, const struct minode *din, const struct minode *in)
{
	return !dn->remote || (in->in_table && in->rparent == din->a.ino);
}

/* Common part of create/mknod/mkdir/symlink: the dir, the name, permissions. */
static int prep_new(struct mds *m, struct mdsp_request *r, struct minode **din, struct mdir **d,
		    struct mdsp_reply *rep)
{
	int e = get_dir(m, r->ino, din, d), k;
	struct mdentry *dn;

	if (e)
		return e;
	if ((e = may_access(*din, &r->caller, MAY_EXEC)))
		return e;
	k = mdsp_check_name(r->name);
	if (k < 0)
		return k;
	set_dir(rep, *din, r->name);
	if (k == 1)
		return -EEXIST;
	if ((e = mdir_lookup_load(m, *d, r->name, &dn)))
		return e;
	if (dn)
		return -EEXIST;
	if ((*din)->a.nlink == 0)
		return -ENOENT;   /* removed directory */
	if ((e = may_access(*din, &r->caller, MAY_WRITE | MAY_EXEC)))
		return e;
	return quota_one_more(m, *din);
}

static int finish_new(struct mds *m, struct mdir *d, struct minode *din, struct minode *in,
		      const char *name, struct mdsp_reply *rep, struct txn *t)
{
	int e = link_primary(m, d, name, in, t);

	if (e)
		return e;
	dir_changed(din, 1, S_ISDIR(in->a.mode) ? 1 : 0, t);
	in->a.rctime = in->a.ctime;
	rstat_name(m, t, din, in, true, 1);
	set_dir(rep, din, name);
	set_target(rep, in);
	return 0;
}

static int op_create(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		     struct txn *t)
{
	struct minode *din, *in;
	struct mdir *d;
	struct mdentry *dn;
	int e, k;

	e = get_dir(m, r->ino, &din, &d);
	if (e)
		return e;
	if ((e = may_access(din, &r->caller, MAY_EXEC)))
		return e;
	k = mdsp_check_name(r->name);
	if (k < 0)
		return k;
	set_dir(rep, din, r->name);
	dn = NULL;
	if (k != 1 && (e = mdir_lookup_load(m, d, r->name, &dn)))
		return e;
	if (k == 1 || dn) {
		if (r->oflags & O_EXCL)
			return -EEXIST;
		if (k == 1)
			return -EISDIR;
		if (r->want_ino && dn->ino != r->want_ino)
			return -EEXIST;   /* a replay whose name someone else took meanwhile */
		if ((e = inode_get(m, dn->ino, &in)))
			return e;
		if ((e = open_check(in, &r->caller, r->oflags)))
			return e;
		locker_want_open(m, t, in, r->oflags);
		if ((e = locker_blocked(t)))
			return e;
		open_trunc(m, in, r->oflags, t);
		set_target(rep, in);
		return 0;
	}
	if (din->a.nlink == 0)
		return -ENOENT;
	if ((e = may_access(din, &r->caller, MAY_WRITE | MAY_EXEC)))
		return e;
	if ((e = quota_one_more(m, din)))
		return e;
	want_dir_change(m, t, din, false);
	if ((e = locker_blocked(t)))
		return e;
	if ((e = new_inode(m, s, r, t, din, S_IFREG | (r->mode & 07777), rep, &in)))
		return e;
	return finish_new(m, d, din, in, r->name, rep, t);
}

/*
 * O_TMPFILE: a regular file with no name, open by the caller.  The directory
 * is only its permission context, as for a create (search and write on it,
 * its setgid group), and nothing in it changes: no revokes, no Dc.  The file
 * is an orphan from birth, in the stray table in this same journal entry,
 * so the machinery of a file unlinked while open carries it: it stays while
 * open (also across an MDS restart, re-asserted at reconnect), and its last
 * close purges it (purge_unused_strays).  Made without O_EXCL it is
 * linkable: a LINK may give it a name (op_link).
 */
static int op_tmpfile(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		      struct txn *t)
{
	struct minode *din, *in;
	int e;

	if ((e = get_dir(m, r->ino, &din, NULL)))
		return e;
	if ((e = may_access(din, &r->caller, MAY_EXEC)))
		return e;
	if (din->in_stray || din->a.nlink == 0)
		return -ENOENT;   /* a removed directory, as Linux answers */
	if ((e = may_access(din, &r->caller, MAY_WRITE | MAY_EXEC)))
		return e;
	/* the kernel opens it for writing (O_TMPFILE needs it) */
	if ((r->oflags & O_ACCMODE) == O_RDONLY)
		return -EINVAL;
	if ((e = new_inode(m, s, r, t, din, S_IFREG | (r->mode & 07777), rep, &in)))
		return e;
	in->a.nlink = 0;
	in->in_stray = true;
	in->linkable = !(r->oflags & O_EXCL);
	txn_dirty(t, in);
	locker_note_orphan();
	set_target(rep, in);
	return 0;
}

static int op_mknod(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		    struct txn *t)
{
	struct minode *din, *in;
	struct mdir *d;
	uint32_t type = r->mode & S_IFMT;
	int e = prep_new(m, r, &din, &d, rep);

	if (e)
		return e;
	if (!type)
		type = S_IFREG;
	switch (type) {
	case S_IFREG:
	case S_IFIFO:
	case S_IFSOCK:
		break;
	case S_IFCHR:
	case S_IFBLK:
		if (r->caller.uid != 0)
			return -EPERM;
		break;
	case S_IFDIR:
		return -EPERM;
	default:
		return -EINVAL;
	}
	want_dir_change(m, t, din, false);
	if ((e = locker_blocked(t)))
		return e;
	if ((e = new_inode(m, s, r, t, din, type | (r->mode & 07777), rep, &in)))
		return e;
	if (type == S_IFCHR || type == S_IFBLK)
		in->a.rdev = r->rdev;
	return finish_new(m, d, din, in, r->name, rep, t);
}

static int op_mkdir(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		    struct txn *t)
{
	struct minode *din, *in;
	struct mdir *d;
	int e = prep_new(m, r, &din, &d, rep);

	if (e)
		return e;
	if (din->a.nlink >= NLINK_MAX)
		return -EMLINK;
	want_dir_change(m, t, din, true);
	if ((e = locker_blocked(t)))
		return e;
	if ((e = new_inode(m, s, r, t, din, S_IFDIR | (r->mode & 07777), rep, &in)))
		return e;
	if (!mdir_create(m, in->a.ino))
		return -ENOMEM;
	return finish_new(m, d, din, in, r->name, rep, t);
}

static int op_symlink(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		      struct txn *t)
{
	struct minode *din, *in;
	struct mdir *d;
	int e;

	if (!r->target || !*r->target)
		return -ENOENT;
	if (strlen(r->target) >= MDSP_PATH_MAX)
		return -ENAMETOOLONG;
	if ((e = prep_new(m, r, &din, &d, rep)))
		return e;
	want_dir_change(m, t, din, false);
	if ((e = locker_blocked(t)))
		return e;
	if ((e = new_inode(m, s, r, t, din, S_IFLNK | 0777, rep, &in)))
		return e;
	in->symlink = strdup(r->target);
	if (!in->symlink)
		return -ENOMEM;
	in->a.size = strlen(r->target);
	return finish_new(m, d, din, in, r->name, rep, t);
}

/*
 * LINK of an inode with no name: only an O_TMPFILE file made without O_EXCL
 * (linkable), still open by the session that links it, as linkat(2) of an
 * O_TMPFILE descriptor on ext4 (the kernel already refuses one made with
 * O_EXCL: I_LINKABLE; this is the MDS's own word on it, for every client).
 * Anything else unlinked stays unlinked: ENOENT, as Linux answers.  It
 * leaves the stray table and becomes the primary inode of its new name in
 * one journal entry, as if created there.
 */
static int link_tmpfile(struct mds *m, struct session *s, struct mdsp_request *r, struct minode *din,
			struct mdir *d, struct minode *in, struct mdsp_reply *rep, struct txn *t)
{
	int e;

	if (!in->in_stray || !in->linkable || !locker_open_by(in, s))
		return -ENOENT;
	want_dir_change(m, t, din, false);
	if ((e = locker_blocked(t)))
		return e;
	/* the name first: if it cannot be made, the orphan stays as it was */
	if ((e = link_primary(m, d, r->name, in, t)))
		return e;
	txn_unstray(t, in);
	in->a.nlink = 1;
	touch(in, false);
	dir_changed(din, 1, 0, t);
	rstat_name(m, t, din, in, true, 1);
	dinfo(MDS, "O_TMPFILE inode %" PRIx64 " linked as '%s' in %" PRIx64, in->a.ino, r->name, din->a.ino);
	set_dir(rep, din, r->name);
	set_target(rep, in);
	return 0;
}

static int op_link(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		   struct txn *t)
{
	struct minode *din, *in;
	struct mdir *d;
	struct mdentry *dn;
	bool bytes;
	int e;

	if ((e = inode_get(m, r->ino2, &in)))
		return e;
	if (S_ISDIR(in->a.mode))
		return -EPERM;
	if (in->a.flags & MDSP_FL_ALL)
		return -EPERM;   /* vfs_link: IS_APPEND || IS_IMMUTABLE */
	if ((e = prep_new(m, r, &din, &d, rep)))
		return e;
	if (in->a.nlink == 0)
		return link_tmpfile(m, s, r, din, d, in, rep, t);
	if (in->a.nlink >= NLINK_MAX)
		return -EMLINK;
	want_dir_change(m, t, din, false);
	locker_want_caps(m, t, in, LS);
	if ((e = locker_blocked(t)))
		return e;
	if (!in->in_table) {
		/* its bytes stay counted where its name was (rstat.c) */
		in->rparent = in->primary ? in->primary->dir->ino : 0;
		/* first hard link: the inode moves to the inode table and its
		 * primary dentry becomes a remote one like the new link (same
		 * name, same target: its leases stay valid and move with it) */
		struct mdentry *old = in->primary;

		if (old) {
			struct mdir *od = old->dir;
			char *oname = strdup(old->name);
			uint64_t ocookie = old->cookie;
			struct mdentry tmp;

			if (!oname)
				return -ENOMEM;
			memset(&tmp, 0, sizeof(tmp));
			locker_dentry_move(old, &tmp);
			mdir_del(m, old, NULL);
			dn = mdir_add(m, od, oname, in->a.ino, in->a.mode & S_IFMT, true, ocookie, t);
			free(oname);
			if (!dn) {
				locker_dentry_drop(m, &tmp);
				return -ENOMEM;
			}
			locker_dentry_move(&tmp, dn);
		}
		in->primary = NULL;
		in->in_table = true;
	}
	dn = mdir_add(m, d, r->name, in->a.ino, in->a.mode & S_IFMT, true, 0, t);
	if (!dn)
		return -ENOMEM;
	in->a.nlink++;
	touch(in, false);
	/* a file whose counting name went is counted here from now on */
	bytes = !in->rparent;
	if (bytes)
		in->rparent = din->a.ino;
	txn_dirty(t, in);
	dir_changed(din, 1, 0, t);
	rstat_name(m, t, din, in, bytes, 1);
	set_dir(rep, din, r->name);
	set_target(rep, in);
	return 0;
}

/* Drop one link of @in (its dentry is already gone). */
static void drop_link(struct minode *in, struct txn *t)
{
	if (in->a.nlink)
		in->a.nlink--;
	touch(in, false);
	if (in->a.nlink == 0)
		txn_kill_inode(t, in);
	else
		txn_dirty(t, in);
}

static int op_unlink(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		     struct txn *t)
{
	struct minode *din, *in;
	struct mdir *d;
	struct mdentry *dn;
	bool bytes;
	int e, k;

	if ((e = get_dir(m, r->ino, &din, &d)))
		return e;
	if ((e = may_access(din, &r->caller, MAY_EXEC)))
		return e;
	k = mdsp_check_name(r->name);
	if (k < 0)
		return k;
	if (k == 1)
		return -EISDIR;
	set_dir(rep, din, r->name);
	if ((e = mdir_lookup_load(m, d, r->name, &dn)))
		return e;
	if (!dn)
		return -ENOENT;
	if ((e = may_access(din, &r->caller, MAY_WRITE | MAY_EXEC)))
		return e;
	if ((e = inode_get(m, dn->ino, &in)))
		return e;
	if (S_ISDIR(in->a.mode))
		return -EISDIR;
	if ((e = sticky_ok(din, in, &r->caller)))
		return e;
	want_dir_change(m, t, din, false);
	locker_want_dentry(m, t, dn);
	locker_want_caps(m, t, in, LS);
	if ((e = locker_blocked(t)))
		return e;
	bytes = name_counts_bytes(dn, din, in);
	if (bytes && dn->remote)
		in->rparent = 0;   /* its other names do not count its bytes */
	mdir_del(m, dn, t);
	drop_link(in, t);
	dir_changed(din, -1, 0, t);
	rstat_name(m, t, din, in, bytes, -1);
	set_dir(rep, din, r->name);
	set_target(rep, in);   /* the victim, with its new nlink (0: gone) */
	return 0;
}

static int remove_dir_inode(struct mds *m, struct minode *in, struct txn *t)
{
	struct mdir *td;
	int e = mdir_get(m, in->a.ino, &td);

	if (e)
		return e;
	mdir_destroy(m, td, t);
	in->a.nlink = 0;
	touch(in, false);
	txn_kill_inode(t, in);
	return 0;
}

static int op_rmdir(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		    struct txn *t)
{
	struct minode *din, *in;
	struct mdir *d, *td;
	struct mdentry *dn;
	int e, k;

	if ((e = get_dir(m, r->ino, &din, &d)))
		return e;
	if ((e = may_access(din, &r->caller, MAY_EXEC)))
		return e;
	k = mdsp_check_name(r->name);
	if (k < 0)
		return k;
	if (k == 1)
		return strcmp(r->name, ".") ? -ENOTEMPTY : -EINVAL;
	set_dir(rep, din, r->name);
	if ((e = mdir_lookup_load(m, d, r->name, &dn)))
		return e;
	if (!dn)
		return -ENOENT;
	if ((e = may_access(din, &r->caller, MAY_WRITE | MAY_EXEC)))
		return e;
	if ((e = inode_get(m, dn->ino, &in)))
		return e;
	if (!S_ISDIR(in->a.mode))
		return -ENOTDIR;
	if ((e = sticky_ok(din, in, &r->caller)))
		return e;
	if ((e = mdir_get(m, in->a.ino, &td)))
		return e;
	if ((e = mdir_is_empty(m, td)) <= 0)
		return e ? e : -ENOTEMPTY;
	want_dir_change(m, t, din, true);
	locker_want_dentry(m, t, dn);
	locker_want_caps(m, t, in, LS | FS);
	if ((e = locker_blocked(t)))
		return e;
	mdir_del(m, dn, t);
	if ((e = remove_dir_inode(m, in, t)))
		return e;
	dir_changed(din, -1, -1, t);
	rstat_name(m, t, din, in, true, -1);
	set_dir(rep, din, r->name);
	set_target(rep, in);
	return 0;
}

static int op_rename(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		     struct txn *t)
{
	const struct mdsp_caller *c = &r->caller;
	uint32_t flags = r->oflags;
	struct minode *sdin, *ddin, *src, *dst = NULL, *wo = NULL;
	struct mdir *sd, *dd;
	struct mdentry *sdn, *ddn, *ndn;
	bool sdir, ddir = false, s_bytes, d_bytes = false;
	struct rstat_delta cs, cd = { 0, 0, 0 }, q;
	int e, k;

	if (flags & ~(uint32_t)(MDSP_RENAME_NOREPLACE | MDSP_RENAME_EXCHANGE | MDSP_RENAME_WHITEOUT))
		return -EINVAL;
	if ((flags & MDSP_RENAME_EXCHANGE) && (flags & (MDSP_RENAME_NOREPLACE | MDSP_RENAME_WHITEOUT)))
		return -EINVAL;
	if ((k = mdsp_check_name(r->name)) < 0)
		return k;
	if (k == 1)
		return -EBUSY;
	if ((k = mdsp_check_name(r->name2)) < 0)
		return k;
	if (k == 1)
		return -EBUSY;
	if ((e = get_dir(m, r->ino, &sdin, &sd)) || (e = get_dir(m, r->ino2, &ddin, &dd)))
		return e;
	if ((e = may_access(sdin, c, MAY_EXEC)) || (e = may_access(ddin, c, MAY_EXEC)))
		return e;
	if ((e = mdir_lookup_load(m, sd, r->name, &sdn)))
		return e;
	if (!sdn)
		return -ENOENT;
	if ((e = inode_get(m, sdn->ino, &src)))
		return e;
	if ((e = mdir_lookup_load(m, dd, r->name2, &ddn)))
		return e;
	if (ddn && (e = inode_get(m, ddn->ino, &dst)))
		return e;
	if ((flags & MDSP_RENAME_EXCHANGE) && !ddn)
		return -ENOENT;
	if ((flags & MDSP_RENAME_NOREPLACE) && ddn)
		return -EEXIST;
	if ((e = may_access(sdin, c, MAY_WRITE | MAY_EXEC)) || (e = may_access(ddin, c, MAY_WRITE | MAY_EXEC)))
		return e;
	if (ddin->a.nlink == 0)
		return -ENOENT;
	set_dir(rep, ddin, r->name2);
	if (ddn && ddn->ino == sdn->ino) {
		set_target(rep, src);   /* same inode: POSIX says do nothing */
		return 0;
	}
	sdir = S_ISDIR(src->a.mode);
	if (dst)
		ddir = S_ISDIR(dst->a.mode);
	if ((e = sticky_ok(sdin, src, c)))
		return e;
	if (dst && (e = sticky_ok(ddin, dst, c)))
		return e;
	/* what each name adds to its directory's statistics (rstat.c) */
	s_bytes = name_counts_bytes(sdn, sdin, src);
	rstat_of_name(src, s_bytes, &cs);
	if (dst) {
		d_bytes = name_counts_bytes(ddn, ddin, dst);
		rstat_of_name(dst, d_bytes, &cd);
	}
	if (sdir && sdin != ddin) {
		if ((e = is_ancestor(m, src, ddin)) < 0)
			return e;
		if (e)
			return -EINVAL;
		if ((e = may_access(src, c, MAY_WRITE)))
			return e;
	}
	if (flags & MDSP_RENAME_EXCHANGE) {
		uint64_t s_ino = sdn->ino, d_ino = ddn->ino;
		uint32_t s_type = sdn->dtype, d_type = ddn->dtype;
		bool s_rem = sdn->remote, d_rem = ddn->remote;
		char *sname = r->name, *dname = r->name2;

		if (ddir && sdin != ddin) {
			if ((e = is_ancestor(m, dst, sdin)) < 0)
				return e;
			if (e)
				return -EINVAL;
			if ((e = may_access(dst, c, MAY_WRITE)))
				return e;
		}
		if (ddin != sdin) {
			q = (struct rstat_delta){ cs.bytes - cd.bytes, cs.files - cd.files, cs.subdirs - cd.subdirs };
			if ((e = rstat_quota_check(m, ddin->a.ino, &q, sdin->a.ino)))
				return e;
			q = (struct rstat_delta){ -q.bytes, -q.files, -q.subdirs };
			if ((e = rstat_quota_check(m, sdin->a.ino, &q, ddin->a.ino)))
				return e;
		}
		want_dir_change(m, t, sdin, sdir != ddir);
		if (ddin != sdin)
			want_dir_change(m, t, ddin, sdir != ddir);
		locker_want_dentry(m, t, sdn);
		locker_want_dentry(m, t, ddn);
		if ((e = locker_blocked(t)))
			return e;
		mdir_del(m, sdn, t);
		mdir_del(m, ddn, t);
		ndn = mdir_add(m, sd, sname, d_ino, d_type, d_rem, 0, t);
		if (!ndn)
			return -ENOMEM;
		if (!d_rem) {
			dst->primary = ndn;
			dst->anchor_dirty = true;
		}
		ndn = mdir_add(m, dd, dname, s_ino, s_type, s_rem, 0, t);
		if (!ndn)
			return -ENOMEM;
		if (!s_rem) {
			src->primary = ndn;
			src->anchor_dirty = true;
		}
		if (sdin != ddin && sdir != ddir) {
			int delta = sdir ? 1 : -1;

			ddin->a.nlink = (uint32_t)((int32_t)ddin->a.nlink + delta);
			sdin->a.nlink = (uint32_t)((int32_t)sdin->a.nlink - delta);
		}
		/* the names that counted bytes still do, in their new places */
		if (s_rem && s_bytes)
			src->rparent = ddin->a.ino;
		if (d_rem && d_bytes)
			dst->rparent = sdin->a.ino;
		touch(src, false);
		touch(dst, false);
		txn_dirty(t, src);
		txn_dirty(t, dst);
		dir_changed(sdin, 0, 0, t);
		if (ddin != sdin)
			dir_changed(ddin, 0, 0, t);
		q = (struct rstat_delta){ cd.bytes - cs.bytes, cd.files - cs.files, cd.subdirs - cs.subdirs };
		rstat_propagate(m, t, sdin->a.ino, &q, &sdin->a.ctime);
		q = (struct rstat_delta){ -q.bytes, -q.files, -q.subdirs };
		rstat_propagate(m, t, ddin->a.ino, &q, &ddin->a.ctime);
		set_dir(rep, ddin, r->name2);
		set_target(rep, src);
		return 0;
	}
	if (dst) {
		if (sdir && !ddir)
			return -ENOTDIR;
		if (!sdir && ddir)
			return -EISDIR;
		if (ddir) {
			struct mdir *td;

			if ((e = mdir_get(m, dst->a.ino, &td)))
				return e;
			if ((e = mdir_is_empty(m, td)) <= 0)
				return e ? e : -ENOTEMPTY;
		}
	} else if (sdir && sdin != ddin && ddin->a.nlink >= NLINK_MAX) {
		return -EMLINK;
	}
	/* the quotas of the trees it moves into (net of what it replaces) */
	q = (struct rstat_delta){ cs.bytes - cd.bytes, cs.files - cd.files, cs.subdirs - cd.subdirs };
	if (sdin != ddin && (e = rstat_quota_check(m, ddin->a.ino, &q, sdin->a.ino)))
		return e;
	if ((flags & MDSP_RENAME_WHITEOUT) && (e = quota_one_more(m, sdin)))
		return e;
	/* checks done: what other clients cache of it goes first */
	want_dir_change(m, t, sdin, sdir || ddir);
	if (ddin != sdin)
		want_dir_change(m, t, ddin, sdir || ddir);
	locker_want_dentry(m, t, sdn);
	if (ddn)
		locker_want_dentry(m, t, ddn);
	if (dst)
		locker_want_caps(m, t, dst, LS | (ddir ? FS : 0));
	if ((e = locker_blocked(t)))
		return e;
	/* RENAME_WHITEOUT: the whiteout is made before anything moves, so
	 * that a failure to make it changes nothing; it takes the source name
	 * in the same journal entry (nobody sees the name missing, as on ext4) */
	if ((flags & MDSP_RENAME_WHITEOUT) && (e = new_inode(m, s, r, t, sdin, S_IFCHR, rep, &wo)))
		return e;
	/* apply */
	if (dst) {
		if (d_bytes && ddn->remote)
			dst->rparent = 0;   /* its other names do not count its bytes */
		mdir_del(m, ddn, t);
		if (ddir) {
			if ((e = remove_dir_inode(m, dst, t)))
				return e;
			ddin->a.nlink--;
		} else {
			drop_link(dst, t);
		}
		ddin->a.files--;
	}
	{
		uint64_t ino = sdn->ino;
		uint32_t dtype = sdn->dtype;
		bool rem = sdn->remote;

		mdir_del(m, sdn, t);
		ndn = mdir_add(m, dd, r->name2, ino, dtype, rem, 0, t);
		if (!ndn)
			return -ENOMEM;
		if (!rem) {
			src->primary = ndn;
			src->anchor_dirty = true;
		} else if (s_bytes) {
			src->rparent = ddin->a.ino;
		}
	}
	if (wo && (e = link_primary(m, sd, r->name, wo, t)))
		return e;
	touch(src, false);
	txn_dirty(t, src);
	if (sdir && sdin != ddin) {
		sdin->a.nlink--;
		ddin->a.nlink++;
	}
	dir_changed(sdin, wo ? 0 : -1, 0, t);
	dir_changed(ddin, 1, 0, t);
	/* out of the source's tree (a whiteout stays there), into the target's */
	q = (struct rstat_delta){ -cs.bytes, (wo ? 1 : 0) - cs.files, -cs.subdirs };
	rstat_propagate(m, t, sdin->a.ino, &q, &sdin->a.ctime);
	q = (struct rstat_delta){ cs.bytes - cd.bytes, cs.files - cd.files, cs.subdirs - cd.subdirs };
	rstat_propagate(m, t, ddin->a.ino, &q, &ddin->a.ctime);
	set_dir(rep, ddin, r->name2);
	set_target(rep, src);
	return 0;
}

/*
 * A listing is sized before it is filled: a first walk over the cookies
 * finds where this chunk ends (max entries or half a frame of them) and how
 * many name bytes it holds, then one allocation takes the entry array and
 * every name (rep->names_inline: free_reply frees it once).  A 1024-entry
 * READDIR used to be 1025 allocations and 1025 frees, most of the MDS's
 * malloc time in a listing storm.
 */
static int op_readdir(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		      struct txn *t)
{
	struct minode *din, *in;
	struct mdir *d;
	struct mdentry *dn;
	struct mdir_iter it;
	uint32_t max = r->max_entries ? r->max_entries : 1024, n = 0, want = 0;
	uint64_t last = 0, bytes = 0, end;
	size_t names = 0, need;
	char *np;
	bool more = false;
	int e, skipped = 0;

	if ((e = get_dir(m, r->ino, &din, NULL)))
		return e;
	if ((e = may_access(din, &r->caller, MAY_READ)))
		return e;
	if (din->in_stray) {
		/* removed while a client has it open: it lists nothing, as on Linux */
		set_dir(rep, din, NULL);
		rep->end = true;
		return 0;
	}
	if ((e = mdir_get(m, r->ino, &d)))
		return e;
	if (max > MDSP_READDIR_MAX)
		max = MDSP_READDIR_MAX;
	set_dir(rep, din, NULL);
	rep->end = true;
	if (r->cookie == UINT64_MAX)
		return 0;
	/* the chunk: entries [cookie + 1, last], from the fragments in
	 * memory up to @end (the ones after it are read by later READDIRs) */
	if ((e = mdir_readdir_span(m, d, r->cookie + 1, max, &end)))
		return e;
	mdir_iter_init(&it, d, r->cookie + 1);
	while ((dn = mdir_iter_next(&it))) {
		if (dn->cookie >= end) {
			more = true;
			break;
		}
		if (want == max || bytes > (MDSP_MAX_PAYLOAD / 2)) {
			more = true;
			break;
		}
		want++;
		names += dn->namelen + 1;
		bytes += dn->namelen + 200;
		last = dn->cookie;
	}
	if (end != UINT64_MAX)
		more = true;      /* fragments past @end, not read yet */
	if (!want) {
		rep->end = !more;
		return 0;
	}
	/* entries, then what they were listed from (t->listed), then names;
	 * a big block comes from the kept ones, and goes back to them once
	 * the reply is sent (request.c) */
	need = want * (sizeof(*rep->entries) + sizeof(*t->listed)) + names;
	rep->entries = bufpool_get(&m->bigbufs, need, &t->entries_cap);
	if (!rep->entries && (rep->entries = malloc(need)))
		t->entries_cap = need;
	if (!rep->entries)
		return -ENOMEM;
	rep->names_inline = true;
	t->listed = (struct txn_listed *)(rep->entries + want);
	np = (char *)(t->listed + want);
	/* first the dentries and what the inode table has of their inodes,
	 * each inode's first lines prefetched: the copies below then find
	 * them in the cache instead of missing on each in turn (an inode
	 * per entry, scattered: most of a listing's time when it missed) */
	mdir_iter_init(&it, d, r->cookie + 1);
	rcu_read_lock();      /* for the inode table's lookups */
	while (n < want && (dn = mdir_iter_next(&it)) && dn->cookie <= last) {
		in = xa_load(&m->inodes, dn->ino);
		if (in) {
			__builtin_prefetch(&in->a);
			__builtin_prefetch((char *)&in->a + 64);
			__builtin_prefetch((char *)&in->a + 128);
		}
		t->listed[n].dn = dn;
		t->listed[n++].in = in;
	}
	/* then the entries; an inode not in memory (a hard link's) is read
	 * here, which may load other fragments (the walk is done by then) */
	want = n;
	n = 0;
	for (uint32_t k = 0; k < want; k++) {
		struct mdsp_dirent *de = &rep->entries[n];

		dn = t->listed[k].dn;
		in = t->listed[k].in;
		if (!in && (e = inode_get(m, dn->ino, &in))) {
			skipped = e;          /* an entry whose inode cannot be read is left out */
			continue;
		}
		t->listed[n].dn = dn;
		t->listed[n++].in = in;
		memcpy(np, dn->name, dn->namelen + 1);
		de->name = np;
		np += dn->namelen + 1;
		de->cookie = dn->cookie;
		de->inode = in->a;
		de->inode.xattrs = in->xattrs ? MDSP_XATTRS_SOME : MDSP_XATTRS_NONE;
	}
	rcu_read_unlock();
	rep->nentries = n;
	rep->end = !more;
	/* nothing to hand back but more to come: the client would ask for the
	 * same cookie again; say why instead */
	if (!n && more)
		return skipped ? skipped : -EIO;
	return 0;
}

static int op_readlink(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		       struct txn *t)
{
	struct minode *in;
	int e = inode_get(m, r->ino, &in);

	if (e)
		return e;
	if (!S_ISLNK(in->a.mode) || !in->symlink)
		return -EINVAL;
	rep->link = strdup(in->symlink);
	if (!rep->link)
		return -ENOMEM;
	set_target(rep, in);
	return 0;
}

/*
 * statfs: the space is the data store's (where file bytes go: on local the
 * filesystem of store_local_data_path, on rados the cluster), the inodes
 * are the filesystem's own count.  Inodes have no fixed table, so "free
 * inodes" is what the free space could hold at one block each: df -i shows
 * the real count as IUsed and a use in proportion to the space.
 */
void server_space_refresh(struct mds *m)
{
	struct store_space sp;
	int r = store_space(m->data_st ? m->data_st : m->st, &sp);

	pthread_mutex_lock(&m->space_lock);
	if (!r && sp.total) {
		m->space = sp;
		m->space_known = true;
	}
	pthread_mutex_unlock(&m->space_lock);
}

void server_statfs(struct mds *m, struct mdsp_statfs *sf)
{
	struct store_space sp;
	bool known;

	memset(sf, 0, sizeof(*sf));
	sf->bsize = 4096;
	sf->namemax = MDSP_NAME_MAX;
	pthread_mutex_lock(&m->space_lock);
	sp = m->space;
	known = m->space_known;
	pthread_mutex_unlock(&m->space_lock);
	if (known) {
		sf->blocks = sp.total / sf->bsize;
		sf->bavail = sp.avail / sf->bsize;
		sf->bfree = sp.total > sp.used ? (sp.total - sp.used) / sf->bsize : 0;
		if (sf->bfree < sf->bavail)
			sf->bfree = sf->bavail;
	} else {
		sf->blocks = sf->bfree = sf->bavail = 1ull << 40;   /* cannot tell (yet): 4 PiB */
	}
	sf->ffree = sf->bavail;
	sf->files = m->nfiles + sf->ffree;
}

static int op_statfs(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		     struct txn *t)
{
	uint64_t maxb, usedb, maxf, usedf;

	server_statfs(m, &rep->statfs);
	/* a mount of a directory under a quota sees the quota as its size */
	if (r->ino && r->ino != MDSP_ROOT_INO && rstat_quota_statfs(m, r->ino, &maxb, &usedb, &maxf, &usedf)) {
		struct mdsp_statfs *sf = &rep->statfs;
		uint64_t bs = sf->bsize ? sf->bsize : 4096;

		if (maxb) {
			uint64_t total = (maxb + bs - 1) / bs, used = (usedb + bs - 1) / bs;
			uint64_t left = used >= total ? 0 : total - used;

			sf->blocks = total;
			sf->bfree = left < sf->bfree ? left : sf->bfree;
			sf->bavail = left < sf->bavail ? left : sf->bavail;
		}
		if (maxf) {
			sf->files = maxf;
			sf->ffree = usedf >= maxf ? 0 : maxf - usedf;
		}
	}
	return 0;
}

/*
 * The virtual xattrs of directories (rstat.c): loligo.dir.* read the
 * statistics, loligo.quota.* read and set the quotas.  They are not stored
 * and not listed (as Ceph's ceph.dir.*); reading them costs O(1).
 */
#define VX_DIR   "loligo.dir."
#define VX_QUOTA "loligo.quota."

static bool is_vxattr(const char *name)
{
	return name && !strncmp(name, "loligo.", 7);
}

static int vxattr_get(struct minode *in, const char *name, struct mdsp_reply *rep)
{
	const struct mdsp_inode *a = &in->a;
	uint64_t subdirs = a->nlink > 2 ? a->nlink - 2 : 0, v;
	char buf[48];
	int n;

	if (!S_ISDIR(a->mode))
		return -ENODATA;
	if (!strcmp(name, VX_DIR "rctime")) {
		n = snprintf(buf, sizeof(buf), "%" PRId64 ".%09u", a->rctime.sec, a->rctime.nsec);
		goto out;
	}
	if (!strcmp(name, VX_DIR "rbytes"))
		v = a->rbytes;
	else if (!strcmp(name, VX_DIR "rfiles"))
		v = a->rfiles;
	else if (!strcmp(name, VX_DIR "rsubdirs"))
		v = a->rsubdirs;
	else if (!strcmp(name, VX_DIR "rentries"))
		v = a->rfiles + a->rsubdirs;
	else if (!strcmp(name, VX_DIR "entries"))
		v = a->files;
	else if (!strcmp(name, VX_DIR "subdirs"))
		v = subdirs;
	else if (!strcmp(name, VX_DIR "files"))
		v = a->files > subdirs ? a->files - subdirs : 0;
	else if (!strcmp(name, VX_QUOTA "max_bytes"))
		v = a->quota_max_bytes;
	else if (!strcmp(name, VX_QUOTA "max_files"))
		v = a->quota_max_files;
	else
		return -ENODATA;
	n = snprintf(buf, sizeof(buf), "%" PRIu64, v);
out:
	rep->data = (uint8_t *)strdup(buf);
	if (!rep->data)
		return -ENOMEM;
	rep->data_len = (uint32_t)n;
	return 0;
}

/*
 * Revoke Dc from every cached directory at or below @top (locker.c
 * locker_want_no_dir_create: other sessions' waited for, the caller's own
 * not).  O(cached directories), once per quota set.
 */
static int revoke_dc_below(struct mds *m, struct minode *top, struct txn *t)
{
	unsigned long idx;
	struct mdir *d;

	rcu_read_lock();
	xa_for_each(&m->dirs, idx, d) {
		struct minode *din = xa_load(&m->inodes, d->ino);
		struct mcap *cap;
		bool dc = false;

		if (!din)
			continue;
		cds_list_for_each_entry(cap, &din->caps, in_item)
			if ((cap->issued | cap->pending) & MDSP_CAP_DIR_CREATE)
				dc = true;
		if (dc && rstat_is_below(m, din, top))
			locker_want_no_dir_create(m, t, din);
	}
	rcu_read_unlock();
	return locker_blocked(t);
}

/*
 * Set (or with @remove clear) a quota of directory @in.  Root only, after
 * the key's root_squash (authcaps.c): a key that squashes root cannot.
 * The value is a decimal number; 0 removes the quota, as in Ceph.
 */
static int vxattr_set(struct mds *m, struct minode *in, const struct mdsp_request *r, bool remove,
		      struct mdsp_reply *rep, struct txn *t)
{
	uint64_t *field, v = 0;
	char buf[32], *end;
	int e;

	if (strncmp(r->name, VX_QUOTA, strlen(VX_QUOTA)))
		return -EPERM;   /* the statistics are read-only */
	if (!S_ISDIR(in->a.mode))
		return -EINVAL;
	if (!strcmp(r->name, VX_QUOTA "max_bytes"))
		field = &in->a.quota_max_bytes;
	else if (!strcmp(r->name, VX_QUOTA "max_files"))
		field = &in->a.quota_max_files;
	else
		return -EINVAL;
	if (r->caller.uid != 0)
		return -EPERM;
	if (!remove) {
		if (!r->data_len || r->data_len >= sizeof(buf))
			return -EINVAL;
		memcpy(buf, r->data, r->data_len);
		buf[r->data_len] = 0;
		if (buf[r->data_len - 1] == '\n')
			buf[r->data_len - 1] = 0;
		errno = 0;
		v = strtoull(buf, &end, 10);
		if (errno || end == buf || *end || buf[0] == '-')
			return -EINVAL;
	} else if (!*field) {
		return -ENODATA;
	}
	/* a quota counts every create at the MDS, and gives each new file its
	 * room: clients that answer creates themselves below (Dc) give that
	 * up first */
	if (v && (e = revoke_dc_below(m, in, t)))
		return e;
	*field = v;
	if (v)
		m->quotas_seen = true;
	touch(in, false);
	txn_dirty(t, in);
	rstat_inode_changed(m, t, in, in->a.size);
	dinfo(MDS, "quota %s of directory %" PRIx64 " set to %" PRIu64, r->name + strlen(VX_QUOTA), in->a.ino, v);
	set_target(rep, in);
	return 0;
}

static bool is_acl_name(const char *name)
{
	return !strcmp(name, MDSP_XATTR_ACL_ACCESS) || !strcmp(name, MDSP_XATTR_ACL_DEFAULT);
}

/*
 * xattr namespaces as Linux has them.  system.posix_acl_{access,default}
 * are POSIX ACLs: anyone reads them (xattr_permission leaves system.* to
 * the filesystem), the owner or root sets them (set_posix_acl); symlinks
 * have none.  Other system.* names are not supported.
 */
static int xattr_perm(struct minode *in, const struct mdsp_caller *c, const char *name, bool write)
{
	size_t n = name ? strlen(name) : 0;

	if (!n || n > MDSP_XATTR_NAME_MAX)
		return -ERANGE;
	/* xattr_permission: nothing of an immutable or append-only inode changes */
	if (write && (in->a.flags & MDSP_FL_ALL))
		return -EPERM;
	if (!strncmp(name, "user.", 5)) {
		if (!S_ISREG(in->a.mode) && !S_ISDIR(in->a.mode))
			return write ? -EPERM : -ENODATA;
		/* user.* of a sticky directory: its owner's (xattr_permission) */
		if (write && S_ISDIR(in->a.mode) && (in->a.mode & S_ISVTX) && !is_owner(in, c))
			return -EPERM;
		return may_access(in, c, write ? MAY_WRITE : MAY_READ);
	}
	if (!strncmp(name, "trusted.", 8))
		return c->uid == 0 ? 0 : (write ? -EPERM : -ENODATA);
	if (!strncmp(name, "security.", 9))
		return !write || is_owner(in, c) ? 0 : -EPERM;
	if (is_acl_name(name)) {
		if (S_ISLNK(in->a.mode))
			return -EOPNOTSUPP;
		return !write || is_owner(in, c) ? 0 : -EPERM;
	}
	return -EOPNOTSUPP;
}

/* security.capability: file capabilities, which the kernel checks before
 * every write and which clients remember the absence of under As. */
static bool is_fcaps(const char *name)
{
	return !strcmp(name, "security.capability");
}

/* ---- loligo.{file,dir}.layout (mds/layout.c) ------------------------------ */

/* does @name fit @in's type: the file names on files, the dir names on directories */
static int layout_fits(const struct minode *in, bool dir)
{
	if (dir ? !S_ISDIR(in->a.mode) : !S_ISREG(in->a.mode))
		return -EINVAL;
	return 0;
}

static int layout_getxattr(struct mds *m, struct minode *in, bool dir, enum layout_field field,
			   struct mdsp_reply *rep)
{
	struct mlayout ly;
	char buf[512];
	size_t n;
	int e;

	if ((e = layout_fits(in, dir)))
		return e == -EINVAL ? -ENODATA : e;
	/* a directory without its own layout has none to show (as Ceph) */
	if (dir && !(in->a.layout_flags & MDSP_LAYOUT_DIR_SET))
		return -ENODATA;
	layout_of(&in->a, m->object_size, &ly);
	n = layout_format(m, &ly, field, buf, sizeof(buf));
	if (n >= sizeof(buf))
		return -ERANGE;
	rep->data = malloc(n);
	if (!rep->data)
		return -ENOMEM;
	memcpy(rep->data, buf, n);
	rep->data_len = (uint32_t)n;
	return 0;
}

/*
 * Set a layout: a directory's at any time (files made later get it), a
 * file's only while it has no data (Ceph's ENOTEMPTY): its bytes would be
 * read from the wrong objects.  Other clients' buffered data of the file
 * comes back first (the revoke makes them flush), so "no data" is true of
 * what every client wrote, not only of what the MDS heard of.
 */
static int layout_setxattr(struct mds *m, struct minode *in, bool dir, enum layout_field field,
			   const struct mdsp_request *r, struct mdsp_reply *rep, struct txn *t)
{
	struct mlayout ly;
	int e;

	if ((e = layout_fits(in, dir)))
		return e;
	if (in->a.flags & MDSP_FL_ALL)
		return -EPERM;
	if (!is_owner(in, &r->caller) && (e = may_access(in, &r->caller, MAY_WRITE)))
		return e;
	if (r->oflags & ~(uint32_t)(XATTR_CREATE_FLAG | XATTR_REPLACE_FLAG))
		return -EINVAL;
	layout_of(&in->a, m->object_size, &ly);
	if ((e = layout_parse(m, &ly, field, (const char *)r->data, r->data_len)))
		return e;
	locker_want_caps(m, t, in, AS | (dir ? 0 : FILE_CACHES));
	if ((e = locker_blocked(t)))
		return e;
	if (!dir && (in->a.size || (in->a.blocks != MDSP_BLOCKS_UNKNOWN && in->a.blocks)))
		return -ENOTEMPTY;
	layout_store(&in->a, &ly);
	if (dir)
		in->a.layout_flags |= MDSP_LAYOUT_DIR_SET;
	touch(in, false);
	txn_dirty(t, in);
	set_target(rep, in);
	return 0;
}

/* removexattr loligo.dir.layout: files made here get the parent's layout again */
static int layout_removexattr(struct mds *m, struct minode *in, bool dir, enum layout_field field,
			      const struct mdsp_request *r, struct mdsp_reply *rep, struct txn *t)
{
	struct minode *parent = NULL;
	int e;

	if (!dir || field != LAYOUT_ALL || !S_ISDIR(in->a.mode))
		return -EINVAL;   /* a file always has a layout (Ceph refuses it too) */
	if (!is_owner(in, &r->caller) && (e = may_access(in, &r->caller, MAY_WRITE)))
		return e;
	if (!(in->a.layout_flags & MDSP_LAYOUT_DIR_SET))
		return -ENODATA;
	locker_want_caps(m, t, in, AS);
	if ((e = locker_blocked(t)))
		return e;
	if (in->primary && inode_get(m, in->primary->dir->ino, &parent) == 0 && parent) {
		in->a.object_size = parent->a.object_size;
		in->a.stripe_unit = parent->a.stripe_unit;
		in->a.stripe_count = parent->a.stripe_count;
		in->a.pool = parent->a.pool;
	} else {
		in->a.object_size = m->object_size;
		in->a.stripe_unit = in->a.stripe_count = in->a.pool = 0;
	}
	in->a.layout_flags &= ~(uint32_t)MDSP_LAYOUT_DIR_SET;
	touch(in, false);
	txn_dirty(t, in);
	set_target(rep, in);
	return 0;
}

static int op_getxattr(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		       struct txn *t)
{
	struct minode *in;
	struct mxattr *x;
	enum layout_field lf;
	bool ldir;
	int e = inode_get(m, r->ino, &in);

	if (e)
		return e;
	if (r->name && (e = layout_xattr(r->name, &ldir, &lf)))
		return e < 0 ? -ENODATA : layout_getxattr(m, in, ldir, lf, rep);
	if (is_vxattr(r->name))
		return vxattr_get(in, r->name, rep);
	if ((e = xattr_perm(in, &r->caller, r->name, false)))
		return e;
	x = xattr_find(in, r->name);
	if (!x)
		return -ENODATA;
	if (x->len) {
		rep->data = malloc(x->len);
		if (!rep->data)
			return -ENOMEM;
		memcpy(rep->data, x->val, x->len);
	}
	rep->data_len = x->len;
	return 0;
}

/*
 * setxattr of a POSIX ACL (set_posix_acl, posix_acl_update_mode): checked
 * (EINVAL for a malformed one, whatever the client checked before), a
 * default ACL on directories only (EACCES), an access ACL the mode can say
 * alone is kept as the mode only, and the mode's group class becomes the
 * mask (or the owning group's entry); setgid goes when the caller is
 * neither in the group nor root.  An ACL with no entry removes it.
 */
static int set_acl(struct mds *m, struct minode *in, struct mdsp_request *r, struct mdsp_reply *rep,
		   struct txn *t)
{
	bool access = !strcmp(r->name, MDSP_XATTR_ACL_ACCESS), keep = true;
	uint32_t mode = in->a.mode, len = r->data_len;
	struct mxattr *x;
	uint8_t *val;
	int e;

	if (len && (e = mdsp_acl_valid(r->data, len)))
		return e;
	if (!len || !mdsp_acl_count(len))
		keep = false;           /* no ACL: as removing it */
	if (!access && !S_ISDIR(in->a.mode))
		return keep ? -EACCES : 0;
	x = xattr_find(in, r->name);
	if (x && (r->oflags & XATTR_CREATE_FLAG))
		return -EEXIST;
	if (!x && (r->oflags & XATTR_REPLACE_FLAG))
		return -ENODATA;
	if (access && keep) {
		if (!mdsp_acl_equiv_mode(r->data, len, &mode))
			keep = false;
		if (r->caller.uid != 0 && !in_group(&r->caller, in->a.gid))
			mode &= ~(uint32_t)S_ISGID;
	}
	locker_want_caps(m, t, in, AS);
	if (keep && S_ISDIR(in->a.mode))
		locker_want_no_dir_create(m, t, in);
	if ((e = locker_blocked(t)))
		return e;
	if (keep) {
		if (in->xattr_bytes - (x ? x->len + strlen(x->name) : 0) + len + strlen(r->name) > XATTR_TOTAL_MAX)
			return -ENOSPC;
		val = malloc(len);
		if (!val)
			return -ENOMEM;
		memcpy(val, r->data, len);
		if (!x) {
			if ((e = xattr_add_new(in, r->name, val, len))) {
				free(val);
				return e;
			}
			free(val);
		} else {
			in->xattr_bytes -= x->len;
			free(x->val);
			x->val = val;
			x->len = len;
			in->xattr_bytes += len;
		}
		/* the owner, mask and other entries are the mode's from now on */
		if (access)
			mdsp_acl_chmod(xattr_find(in, r->name)->val, len, mode);
	} else {
		xattr_drop(in, r->name);
	}
	in->a.mode = mode;
	touch(in, false);
	txn_dirty(t, in);
	set_target(rep, in);
	return 0;
}

static int op_setxattr(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		       struct txn *t)
{
	struct minode *in;
	struct mxattr *x;
	uint8_t *val;
	enum layout_field lf;
	bool ldir;
	int e = inode_get(m, r->ino, &in);

	if (e)
		return e;
	if (r->name && (e = layout_xattr(r->name, &ldir, &lf)))
		return e < 0 ? e : layout_setxattr(m, in, ldir, lf, r, rep, t);
	if (is_vxattr(r->name))
		return vxattr_set(m, in, r, false, rep, t);
	if ((e = xattr_perm(in, &r->caller, r->name, true)))
		return e;
	if (r->data_len > MDSP_XATTR_SIZE_MAX)
		return -E2BIG;
	if (r->oflags & ~(uint32_t)(XATTR_CREATE_FLAG | XATTR_REPLACE_FLAG))
		return -EINVAL;
	if (is_acl_name(r->name))
		return set_acl(m, in, r, rep, t);
	x = xattr_find(in, r->name);
	if (x && (r->oflags & XATTR_CREATE_FLAG))
		return -EEXIST;
	/*
	 * What others know of the xattrs goes first: clients answer
	 * getxattr/listxattr of an inode that had none in their last trace
	 * from that trace while they hold As (MDSP_XATTRS_NONE; a file
	 * capability's absence likewise), and an ACL is part of who may do
	 * what.  Ceph revokes Xs here; As stands for it (no Xs is issued).
	 */
	locker_want_caps(m, t, in, AS);
	if ((e = locker_blocked(t)))
		return e;
	if (!x && (r->oflags & XATTR_REPLACE_FLAG))
		return -ENODATA;
	if (in->xattr_bytes - (x ? x->len + strlen(x->name) : 0) + r->data_len + strlen(r->name) >
	    XATTR_TOTAL_MAX)
		return -ENOSPC;
	val = malloc(r->data_len ? r->data_len : 1);
	if (!val)
		return -ENOMEM;
	if (r->data_len)
		memcpy(val, r->data, r->data_len);
	if (!x) {
		x = calloc(1, sizeof(*x));
		if (!x || !(x->name = strdup(r->name))) {
			free(x);
			free(val);
			return -ENOMEM;
		}
		x->next = in->xattrs;
		in->xattrs = x;
		in->xattr_bytes += (uint32_t)strlen(x->name);
	} else {
		in->xattr_bytes -= x->len;
		free(x->val);
	}
	x->val = val;
	x->len = r->data_len;
	in->xattr_bytes += x->len;
	touch(in, false);
	txn_dirty(t, in);
	set_target(rep, in);
	return 0;
}

static int op_listxattr(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
			struct txn *t)
{
	struct minode *in;
	struct mxattr *x;
	size_t len = 0, off = 0;
	int e = inode_get(m, r->ino, &in);

	if (e)
		return e;
	for (x = in->xattrs; x; x = x->next)
		if (r->caller.uid == 0 || strncmp(x->name, "trusted.", 8))
			len += strlen(x->name) + 1;
	if (len) {
		rep->data = malloc(len);
		if (!rep->data)
			return -ENOMEM;
		for (x = in->xattrs; x; x = x->next)
			if (r->caller.uid == 0 || strncmp(x->name, "trusted.", 8)) {
				size_t n = strlen(x->name) + 1;

				memcpy(rep->data + off, x->name, n);
				off += n;
			}
	}
	rep->data_len = (uint32_t)len;
	return 0;
}

static int op_removexattr(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
			  struct txn *t)
{
	struct minode *in;
	struct mxattr **pp, *x;
	enum layout_field lf;
	bool ldir;
	int e = inode_get(m, r->ino, &in);

	if (e)
		return e;
	if (r->name && (e = layout_xattr(r->name, &ldir, &lf)))
		return e < 0 ? -ENODATA : layout_removexattr(m, in, ldir, lf, r, rep, t);
	if (is_vxattr(r->name))
		return vxattr_set(m, in, r, true, rep, t);
	/*
	 * A file's capabilities go with any write to it, by whoever may write
	 * it: the kernel removes them on the writer's behalf before a write,
	 * truncate or fallocate (security_inode_killpriv), and through FUSE that
	 * is a REMOVEXATTR as the writer.  The kernel itself refuses an explicit
	 * removexattr(2) of it to callers without CAP_SETFCAP before it reaches
	 * us, so letting a writer remove it grants nothing a write would not.
	 */
	if (is_fcaps(r->name ? r->name : "") && S_ISREG(in->a.mode) && !is_owner(in, &r->caller))
		e = may_access(in, &r->caller, MAY_WRITE) ? -EPERM : 0;
	else
		e = xattr_perm(in, &r->caller, r->name, true);
	if (e)
		return e;
	for (pp = &in->xattrs; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->name, r->name))
			break;
	x = *pp;
	if (!x)
		return -ENODATA;
	locker_want_caps(m, t, in, AS);    /* as op_setxattr: others' "none" stays true */
	if ((e = locker_blocked(t)))
		return e;
	*pp = x->next;
	in->xattr_bytes -= x->len + (uint32_t)strlen(x->name);
	free(x->name);
	free(x->val);
	free(x);
	touch(in, false);
	txn_dirty(t, in);
	set_target(rep, in);
	return 0;
}

static int op_lookupino(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
			struct txn *t)
{
	struct minode *in;
	int e = inode_get(m, r->ino, &in);

	if (e)
		return e == -ENOENT ? -ESTALE : e;
	set_target(rep, in);
	return 0;
}

static int op_lookupparent(struct mds *m, struct session *s, struct mdsp_request *r,
			   struct mdsp_reply *rep, struct txn *t)
{
	struct minode *in, *p;
	int e = inode_get(m, r->ino, &in);

	if (e)
		return e == -ENOENT ? -ESTALE : e;
	if ((e = parent_of(m, in, &p)))
		return e;
	if (in->primary)
		set_dir(rep, p, in->primary->name);
	set_target(rep, p);
	return 0;
}

/*
 * EXTENTS: what a regular file's objects hold, for lseek's SEEK_DATA and
 * SEEK_HOLE.  No permission check beyond GETATTR's: lseek needs only an
 * open file (also one open for writing only), and st_blocks shows the same
 * in less detail to anyone who may stat it.  What another client buffered
 * is written back first (Fb, as an open for reading takes it): its cap ack
 * brings the extents it stored, so no data it wrote is answered as a hole.
 */
static int op_extents(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		      struct txn *t)
{
	struct minode *in;
	int e = inode_get(m, r->ino, &in);

	if (e)
		return e == -ENOENT ? -ESTALE : e;
	if (!S_ISREG(in->a.mode))
		return -EINVAL;
	locker_want_caps(m, t, in, MDSP_CAP_FILE_BUFFER);
	if ((e = locker_blocked(t)))
		return e;
	set_target(rep, in);
	if (in->a.blocks == MDSP_BLOCKS_UNKNOWN || !in->ext.n)
		return 0;
	/* the set stays within MDSP_INODE_EXT_MAX (mdsp_extset_add merges past
	 * it); should one ever not, its cover says no less than it */
	if (in->ext.n > MDSP_INODE_EXT_MAX) {
		rep->ext = malloc(sizeof(*rep->ext));
		if (!rep->ext)
			return -ENOMEM;
		rep->ext[0].off = in->ext.v[0].off;
		rep->ext[0].len = in->ext.v[in->ext.n - 1].off + in->ext.v[in->ext.n - 1].len - in->ext.v[0].off;
		rep->n_ext = 1;
		return 0;
	}
	rep->ext = malloc(in->ext.n * sizeof(*rep->ext));
	if (!rep->ext)
		return -ENOMEM;
	memcpy(rep->ext, in->ext.v, in->ext.n * sizeof(*rep->ext));
	rep->n_ext = in->ext.n;
	return 0;
}

static int op_nosys(struct mds *m, struct session *s, struct mdsp_request *r, struct mdsp_reply *rep,
		    struct txn *t)
{
	return -ENOSYS;
}

typedef int (*op_fn)(struct mds *, struct session *, struct mdsp_request *, struct mdsp_reply *,
		     struct txn *);

static const op_fn op_table[MDSP_OP_MAX] = {
	[MDSP_OP_LOOKUP] = op_lookup,
	[MDSP_OP_GETATTR] = op_getattr,
	[MDSP_OP_SETATTR] = op_setattr,
	[MDSP_OP_CREATE] = op_create,
	[MDSP_OP_OPEN] = op_open,
	[MDSP_OP_MKNOD] = op_mknod,
	[MDSP_OP_MKDIR] = op_mkdir,
	[MDSP_OP_SYMLINK] = op_symlink,
	[MDSP_OP_LINK] = op_link,
	[MDSP_OP_UNLINK] = op_unlink,
	[MDSP_OP_RMDIR] = op_rmdir,
	[MDSP_OP_RENAME] = op_rename,
	[MDSP_OP_READDIR] = op_readdir,
	[MDSP_OP_READLINK] = op_readlink,
	[MDSP_OP_STATFS] = op_statfs,
	[MDSP_OP_GETXATTR] = op_getxattr,
	[MDSP_OP_SETXATTR] = op_setxattr,
	[MDSP_OP_LISTXATTR] = op_listxattr,
	[MDSP_OP_REMOVEXATTR] = op_removexattr,
	[MDSP_OP_GETLK] = op_nosys,
	[MDSP_OP_SETLK] = op_nosys,
	[MDSP_OP_LOOKUPINO] = op_lookupino,
	[MDSP_OP_LOOKUPPARENT] = op_lookupparent,
	[MDSP_OP_TMPFILE] = op_tmpfile,
	[MDSP_OP_EXTENTS] = op_extents,
};

/*
 * The directories @req names (ino, and ino2 of a rename or link) may be
 * filled by another client itself (Dc, locker.c): before anything looks at
 * them, what it created must be here.  LOCKER_WAIT while it flushes.
 */
static int want_dirs(struct mds *m, struct mdsp_request *req, struct txn *t)
{
	struct minode *in;

	rcu_read_lock();
	in = req->ino ? xa_load(&m->inodes, req->ino) : NULL;
	rcu_read_unlock();
	if (in)
		locker_want_dir(m, t, in);
	if (req->op == MDSP_OP_RENAME || req->op == MDSP_OP_LINK) {
		rcu_read_lock();
		in = req->ino2 ? xa_load(&m->inodes, req->ino2) : NULL;
		rcu_read_unlock();
		if (in)
			locker_want_dir(m, t, in);
	}
	return locker_blocked(t);
}

bool server_op_journaled(const struct mdsp_request *req)
{
	return mdsp_op_is_write(req->op) || (req->op == MDSP_OP_OPEN && (req->oflags & O_TRUNC));
}

/*
 * A full store (store_space: full, past store_local_full_ratio): what makes
 * new things fails with ENOSPC, as Ceph's MDS does when the cluster is full;
 * unlink, rmdir, rename, truncate and setattr pass, so space can be freed
 * (the MDS's own journal writes pass up to the failsafe ratio).
 */
static bool needs_space(uint32_t op)
{
	return op == MDSP_OP_CREATE || op == MDSP_OP_MKNOD || op == MDSP_OP_MKDIR || op == MDSP_OP_SYMLINK ||
	       op == MDSP_OP_LINK || op == MDSP_OP_SETXATTR || op == MDSP_OP_TMPFILE;
}

static bool stores_full(struct mds *m)
{
	struct store_space sp;

	return (store_space(m->st, &sp) == 0 && sp.state >= STORE_SPACE_FULL) ||
	       (m->data_st && store_space(m->data_st, &sp) == 0 && sp.state >= STORE_SPACE_FULL);
}

void server_dispatch(struct mds *m, struct session *s, struct mdsp_request *req, struct mdsp_reply *rep,
		     struct txn *t)
{
	op_fn fn = req->op < MDSP_OP_MAX ? op_table[req->op] : NULL;
	int r;

	rep->tid = req->tid;
	if (!fn) {
		rep->result = -EOPNOTSUPP;
		return;
	}
	t->s = s;
	/* the key's caps first: a request outside them learns nothing else */
	if ((r = authcaps_check_locked(m, s, req)))
		;
	else if (needs_space(req->op) && stores_full(m))
		r = -ENOSPC;
	else if ((r = want_dirs(m, req, t)) == 0)
		r = fn(m, s, req, rep, t);
	/* the ops that go up the tree: what they reached must be covered too */
	if (!r && rep->has_target &&
	    (req->op == MDSP_OP_LOOKUPPARENT || (req->op == MDSP_OP_LOOKUP && req->name && !strcmp(req->name, ".."))))
		r = authcaps_check_target_locked(m, s, req, rep->target.ino);
	if (r == LOCKER_WAIT) {
		/* nothing changed; the caller parks it (locker_park) */
		rep->result = r;
		return;
	}
	/* it ran: whatever it waited for before is over, and nothing new */
	locker_gather_release(m, t);
	locker_gather_free(&t->g);
	if (r && req->want_ino && (req->flags & MDSP_REQ_REPLAY))
		derr(MDS, "session %" PRIu64 " tid %" PRIu64 ": replay of %s '%s', answered UNSAFE with ino %" PRIx64
		     " before the restart, failed: %s; the client is told its change is lost", s ? s->id : 0,
		     req->tid, mdsp_op_name(req->op), req->name ? req->name : "", req->want_ino, strerror(-r));
	if (r) {
		/* a failed op changes nothing: drop any trace of a target it
		 * may have looked at, keep the dir trace */
		rep->has_target = false;
		rep->caps = 0;
	}
	rep->result = r;
	/* a regular file's trace says how far it may grow under byte quotas */
	if (!r && rep->has_target && S_ISREG(rep->target.mode)) {
		struct minode *in;

		rep->target.quota_room = inode_get(m, rep->target.ino, &in) ? MDSP_QUOTA_NONE
									: rstat_quota_room(m, in);
	}
	locker_fill_reply(m, s, req, rep, t);
	/* changes at 10 (a stress failure's log ties names to inodes with
	 * them), reads at 15 (most of the requests) */
	if (server_op_journaled(req))
		dout(MDS, 10, "session %" PRIu64 " tid %" PRIu64 " %s ino %" PRIx64 " '%s' ino2 %" PRIx64
			      " '%s' -> %d target %" PRIx64,
		     s ? s->id : 0, req->tid, mdsp_op_name(req->op), req->ino, req->name ? req->name : "", req->ino2,
		     req->name2 ? req->name2 : "", r, rep->has_target ? rep->target.ino : 0);
	else
		dout(MDS, 15, "session %" PRIu64 " tid %" PRIu64 " %s ino %" PRIx64 " '%s' -> %d", s ? s->id : 0,
		     req->tid, mdsp_op_name(req->op), req->ino, req->name ? req->name : "", r);
}
