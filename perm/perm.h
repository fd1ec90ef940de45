/*
 * perm.h - the POSIX permission policy, decided alike by the MDS, a
 * client answering an operation itself, and (through the client library)
 * the NFS gateway: access by mode bits, the sticky bit, the setuid/setgid
 * bits a change clears, and the checks and effects of SETATTR.
 *
 * It decides over the MDS protocol's inode and caller structs (struct
 * mdsp_inode, struct mdsp_caller, MDSP_SETATTR_*), so it sits on
 * mds_proto's headers; it is not part of the wire format and lives apart
 * from it (library loligo_perm).  Pure functions: no lock, no allocation.
 */
#ifndef LOLIGO_PERM_PERM_H
#define LOLIGO_PERM_PERM_H

#include <stdbool.h>
#include <stdint.h>

#include "mds_proto/proto.h"

#define MDSP_MAY_EXEC  1
#define MDSP_MAY_WRITE 2
#define MDSP_MAY_READ  4

/** mdsp_in_group - @gid is @c's primary group or one of its groups. */
bool mdsp_in_group(const struct mdsp_caller *c, uint32_t gid);
/**
 * mdsp_may_access - may @c access @in for @mask (MDSP_MAY_*) by its mode
 * bits?  Root may do everything but exec a non-directory without any x bit.
 * Nobody may write an immutable inode (Linux's inode_permission: opens for
 * writing, names made or removed in an immutable directory).
 * Return: 0, -EACCES or -EPERM.
 */
int mdsp_may_access(const struct mdsp_inode *in, const struct mdsp_caller *c, int mask);
/**
 * mdsp_sticky_ok - may @c remove or rename @victim's name in @dir?  0, or
 * -EPERM when @dir is sticky and @c owns neither (nor is root).
 */
int mdsp_sticky_ok(const struct mdsp_inode *dir, const struct mdsp_inode *victim, const struct mdsp_caller *c);
/** mdsp_write_kill_bits - the setuid/setgid bits a write by @c to @in clears. */
uint32_t mdsp_write_kill_bits(const struct mdsp_inode *in, const struct mdsp_caller *c);
/**
 * mdsp_setattr_check - may @c make the SETATTR change @mask (MDSP_SETATTR_*)
 * with the values in @a to @in?  The checks of Linux's notify_change() and
 * setattr_prepare() in their order (ext4 is the reference):
 *  - chown: only root, or the owner giving the file to itself (uid) or to a
 *    group it is in (gid); the same value by anyone else is EPERM too.
 *    A chown with neither (chown(-1, -1), MDSP_SETATTR_CHOWN alone) needs
 *    nothing but, when it clears setuid/setgid, the right to chmod;
 *  - chmod: the owner or root (and a writer clearing setuid/setgid);
 *  - size: write permission, or a handle open for writing (MDSP_SETATTR_FH),
 *    never past @max_file_size;
 *  - times: "now" for both needs ownership or write permission (EACCES);
 *    explicit times, or "now" for one of them, ownership (EPERM);
 *  - flags (chattr): the owner or root, immutable and append-only root only
 *    (CAP_LINUX_IMMUTABLE), other bits -EOPNOTSUPP; an immutable inode
 *    refuses every other change with EPERM, an append-only one every change
 *    but of the flags and the times to "now" (notify_change, may_open).
 * On success *@kill holds the setuid/setgid bits the change clears.
 * Pure; used by the MDS (op_setattr) and by the client answering a setattr
 * itself (asyncdir.c), so both decide alike.
 * Return: 0, -EISDIR, -EINVAL, -EACCES, -EPERM, -EOPNOTSUPP or -EFBIG.
 */
int mdsp_setattr_check(const struct mdsp_inode *in, const struct mdsp_caller *c, uint32_t mask,
		       const struct mdsp_inode *a, uint64_t max_file_size, uint32_t *kill);
/**
 * mdsp_setattr_apply - make the change mdsp_setattr_check allowed (@kill is
 * what it said) at time @now: every change moves ctime and the change count;
 * S_ISGID goes from a chmod by a caller outside the (new) group.
 */
void mdsp_setattr_apply(struct mdsp_inode *in, const struct mdsp_caller *c, uint32_t mask,
			const struct mdsp_inode *a, uint32_t kill, struct mdsp_time now);

#endif
