/*
 * perm.c - the permission rules of SETATTR, decided alike by the MDS
 * (mds/server.c op_setattr) and by a client that answers a setattr itself
 * (client/asyncdir.c lc_async_setattr: an inode it made under Dc that
 * nobody else can know yet).  One copy, so a change answered locally is
 * refused or allowed, and ends, exactly as the MDS would make it.  The
 * same for an unlink or rmdir a client answers itself (client/asyncunlink.c:
 * mdsp_may_access on the directory, mdsp_sticky_ok).
 *
 * Pure functions over struct mdsp_inode and struct mdsp_caller: no lock,
 * no allocation.
 */
#include <errno.h>
#include <sys/stat.h>

#include "perm/perm.h"

#define TIMES (MDSP_SETATTR_ATIME | MDSP_SETATTR_MTIME | MDSP_SETATTR_ATIME_NOW | MDSP_SETATTR_MTIME_NOW)
#define TOUCH_NOW (MDSP_SETATTR_ATIME_NOW | MDSP_SETATTR_MTIME_NOW)

bool mdsp_in_group(const struct mdsp_caller *c, uint32_t gid)
{
	uint32_t i;

	if (c->gid == gid)
		return true;
	for (i = 0; i < c->ngroups && i < MDSP_MAX_GROUPS; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

int mdsp_may_access(const struct mdsp_inode *in, const struct mdsp_caller *c, int mask)
{
	return mdsp_may_access_acl(in, NULL, 0, c, mask);
}

/*
 * generic_permission() and acl_permission_check(): the owner by the mode's
 * owner bits; anyone else by the access ACL when there is one and the
 * group class is not empty (Linux skips the ACL when it is: the mask then
 * grants nobody anything, and a named user falls to the other bits), else
 * by the group or other bits; root past all of it.
 */
int mdsp_may_access_acl(const struct mdsp_inode *in, const void *acl, size_t acl_len, const struct mdsp_caller *c,
			int mask)
{
	uint32_t mode = in->mode, bits;

	/* before root's pass, as inode_permission() does */
	if ((mask & MDSP_MAY_WRITE) && (in->flags & MDSP_FL_IMMUTABLE))
		return -EPERM;
	if (c->uid == 0) {
		/* root: everything, except exec of a file nobody may execute */
		if ((mask & MDSP_MAY_EXEC) && !S_ISDIR(mode) && !(mode & 0111))
			return -EACCES;
		return 0;
	}
	if (c->uid == in->uid)
		bits = (mode >> 6) & 7;
	else if (acl && mdsp_acl_count(acl_len) && (mode & S_IRWXG))
		return mdsp_acl_permission(in, acl, acl_len, c, mask);
	else if (mdsp_in_group(c, in->gid))
		bits = (mode >> 3) & 7;
	else
		bits = mode & 7;
	return ((int)bits & mask) == mask ? 0 : -EACCES;
}

static bool is_owner(const struct mdsp_inode *in, const struct mdsp_caller *c)
{
	return c->uid == 0 || c->uid == in->uid;
}

/*
 * The setuid/setgid bits a change by @c clears, as Linux decides it
 * (setattr_should_drop_sgid, setattr_should_drop_suidgid):
 *  - a write or truncate by anyone but root (CAP_FSETID) of a regular file
 *    clears S_ISUID, and S_ISGID when the group may execute or the writer is
 *    not in the file's group;
 *  - a chown of anything but a directory (also chown(-1, -1), by root too)
 *    clears S_ISUID, and S_ISGID when the group may execute or the caller is
 *    not in the file's group and not root.
 */
static uint32_t sgid_to_drop(const struct mdsp_inode *in, const struct mdsp_caller *c)
{
	if (!(in->mode & S_ISGID))
		return 0;
	if ((in->mode & S_IXGRP) || (c->uid != 0 && !mdsp_in_group(c, in->gid)))
		return S_ISGID;
	return 0;
}

uint32_t mdsp_write_kill_bits(const struct mdsp_inode *in, const struct mdsp_caller *c)
{
	if (c->uid == 0 || !S_ISREG(in->mode))
		return 0;
	return (in->mode & S_ISUID) | sgid_to_drop(in, c);
}

static uint32_t chown_kill_bits(const struct mdsp_inode *in, const struct mdsp_caller *c)
{
	if (S_ISDIR(in->mode))
		return 0;
	return (in->mode & S_ISUID) | sgid_to_drop(in, c);
}

/* the write permission the checks below ask for, with the access ACL */
struct acl_ref {
	const void *acl;
	size_t len;
};

static int may_write(const struct mdsp_inode *in, const struct acl_ref *r, const struct mdsp_caller *c)
{
	return mdsp_may_access_acl(in, r->acl, r->len, c, MDSP_MAY_WRITE);
}

/* @mode only clears setuid/setgid bits that a write by @c clears, and @c may write */
static bool kernel_kill(const struct mdsp_inode *in, const struct acl_ref *r, const struct mdsp_caller *c,
			uint32_t mode)
{
	uint32_t old = in->mode & 07777, cleared = old & ~mode & 07777;

	if (!cleared || (mode & 07777) != (old & ~cleared))
		return false;
	if (cleared & ~(mdsp_write_kill_bits(in, c) | chown_kill_bits(in, c)))
		return false;
	return may_write(in, r, c) == 0;
}

int mdsp_setattr_check(const struct mdsp_inode *in, const struct mdsp_caller *c, uint32_t mask,
		       const struct mdsp_inode *a, uint64_t max_file_size, uint32_t *killp)
{
	return mdsp_setattr_check_acl(in, NULL, 0, c, mask, a, max_file_size, killp);
}

int mdsp_setattr_check_acl(const struct mdsp_inode *in, const void *acl, size_t acl_len,
			   const struct mdsp_caller *c, uint32_t mask, const struct mdsp_inode *a,
			   uint64_t max_file_size, uint32_t *killp)
{
	const struct acl_ref ar = { acl, acl_len }, *r = &ar;
	bool chown = mask & (MDSP_SETATTR_UID | MDSP_SETATTR_GID | MDSP_SETATTR_CHOWN);
	uint32_t kill = 0, tmask;
	int e;

	if (mask & MDSP_SETATTR_FLAGS) {
		/* FS_IOC_SETFLAGS: inode_owner_or_capable, CAP_LINUX_IMMUTABLE for i and a */
		if (!is_owner(in, c))
			return -EPERM;
		if (a->flags & ~(uint32_t)MDSP_FL_ALL)
			return -EOPNOTSUPP;
		if (((a->flags ^ in->flags) & MDSP_FL_ALL) && c->uid != 0)
			return -EPERM;
	}
	/* immutable: nothing but the flags changes; append-only: nothing but the
	 * flags and the times to "now" (notify_change, do_truncate, may_open) */
	if (in->flags & MDSP_FL_ALL) {
		uint32_t other = mask & ~(uint32_t)(MDSP_SETATTR_FLAGS | MDSP_SETATTR_CLIENT_TIME | MDSP_SETATTR_FH);

		if (!(in->flags & MDSP_FL_IMMUTABLE))
			other &= ~(uint32_t)TOUCH_NOW;
		if (other)
			return -EPERM;
	}
	if (mask & MDSP_SETATTR_SIZE) {
		if (S_ISDIR(in->mode))
			return -EISDIR;
		if (!S_ISREG(in->mode))
			return -EINVAL;
		if (!(mask & MDSP_SETATTR_FH) && (e = may_write(in, r, c)))
			return e;
		/* the filesystem's limit; also refuses anything past 2^63-1 */
		if (a->size > max_file_size)
			return -EFBIG;
		kill |= mdsp_write_kill_bits(in, c);
	}
	if ((mask & MDSP_SETATTR_UID) && !(c->uid == 0 || (c->uid == in->uid && a->uid == in->uid)))
		return -EPERM;
	if ((mask & MDSP_SETATTR_GID) &&
	    !(c->uid == 0 || (c->uid == in->uid && (a->gid == in->gid || mdsp_in_group(c, a->gid)))))
		return -EPERM;
	if (chown)
		kill |= chown_kill_bits(in, c);
	if (mask & MDSP_SETATTR_KILL_SUID)
		kill |= mdsp_write_kill_bits(in, c);
	/* a mode change is the owner's, but for one shape: the FUSE kernel
	 * without HANDLE_KILLPRIV clears setuid/setgid before a write, truncate
	 * or chown by sending the caller's chmod of exactly those bits; a
	 * writer may (Linux lets a write clear them, file_remove_privs) */
	if ((mask & MDSP_SETATTR_MODE) && !is_owner(in, c) && !kernel_kill(in, r, c, a->mode))
		return -EPERM;
	/* a chown clears the bits as a chmod by the caller would: the owner
	 * may; for chown(-1, -1), which FUSE cannot tell from the kernel's
	 * clearing before a write (both arrive as an empty SETATTR), so may
	 * anyone who may write the file */
	if (chown && chown_kill_bits(in, c) && !is_owner(in, c) &&
	    ((mask & (MDSP_SETATTR_UID | MDSP_SETATTR_GID)) || may_write(in, r, c)))
		return -EPERM;
	/* "now" riding on a size change is the truncate's own mtime (ftruncate,
	 * O_TRUNC), which needs nothing more than the size change did */
	tmask = mask & TIMES;
	if ((mask & MDSP_SETATTR_SIZE) && !(tmask & ~TOUCH_NOW))
		tmask = 0;
	if (tmask) {
		if (tmask == TOUCH_NOW) {
			if (!is_owner(in, c) && (e = may_write(in, r, c)))
				return e;
		} else if (!is_owner(in, c)) {
			return -EPERM;
		}
	}
	if ((mask & MDSP_SETATTR_CTIME) && !is_owner(in, c))
		return -EPERM;
	*killp = kill;
	return 0;
}

void mdsp_setattr_apply(struct mdsp_inode *in, const struct mdsp_caller *c, uint32_t mask,
			const struct mdsp_inode *a, uint32_t kill, struct mdsp_time now)
{
	if (mask & MDSP_SETATTR_MODE) {
		uint32_t gid = (mask & MDSP_SETATTR_GID) ? a->gid : in->gid, mode;

		mode = (in->mode & S_IFMT) | (a->mode & 07777);
		if (c->uid != 0 && !mdsp_in_group(c, gid))
			mode &= ~(uint32_t)S_ISGID;
		in->mode = mode;
	}
	if (mask & MDSP_SETATTR_UID)
		in->uid = a->uid;
	if (mask & MDSP_SETATTR_GID)
		in->gid = a->gid;
	in->mode &= ~kill;
	in->ctime = now;
	in->change++;
	if ((mask & MDSP_SETATTR_SIZE) && a->size != in->size) {
		in->size = a->size;
		in->mtime = in->ctime;
	}
	if (mask & MDSP_SETATTR_ATIME_NOW)
		in->atime = in->ctime;
	else if (mask & MDSP_SETATTR_ATIME)
		in->atime = a->atime;
	if (mask & MDSP_SETATTR_MTIME_NOW)
		in->mtime = in->ctime;
	else if (mask & MDSP_SETATTR_MTIME)
		in->mtime = a->mtime;
	if (mask & MDSP_SETATTR_CTIME)
		in->ctime = a->ctime;
	if (mask & MDSP_SETATTR_FLAGS)
		in->flags = a->flags & MDSP_FL_ALL;
}

int mdsp_sticky_ok(const struct mdsp_inode *dir, const struct mdsp_inode *victim, const struct mdsp_caller *c)
{
	if (!(dir->mode & S_ISVTX) || c->uid == 0 || c->uid == victim->uid || c->uid == dir->uid)
		return 0;
	return -EPERM;
}
