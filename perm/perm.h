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
#include <stddef.h>
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
 * mdsp_may_access_acl - mdsp_may_access with the inode's access ACL (@acl,
 * @acl_len bytes in the system.posix_acl_access xattr form; NULL: none),
 * decided as Linux's generic_permission does.  Return: 0, -EACCES or -EPERM.
 */
int mdsp_may_access_acl(const struct mdsp_inode *in, const void *acl, size_t acl_len, const struct mdsp_caller *c,
			int mask);
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
 * mdsp_setattr_check_acl - mdsp_setattr_check where the write permission
 * some changes need (a truncate by path, times to "now" by a non-owner)
 * is decided with the inode's access ACL (@acl, @acl_len; NULL: none).
 */
int mdsp_setattr_check_acl(const struct mdsp_inode *in, const void *acl, size_t acl_len,
			   const struct mdsp_caller *c, uint32_t mask, const struct mdsp_inode *a,
			   uint64_t max_file_size, uint32_t *kill);
/**
 * mdsp_setattr_apply - make the change mdsp_setattr_check allowed (@kill is
 * what it said) at time @now: every change moves ctime and the change count;
 * S_ISGID goes from a chmod by a caller outside the (new) group.
 */
void mdsp_setattr_apply(struct mdsp_inode *in, const struct mdsp_caller *c, uint32_t mask,
			const struct mdsp_inode *a, uint32_t kill, struct mdsp_time now);

/* ---- POSIX ACLs (acl.c) ---------------------------------------------------
 * An ACL is handled in the form Linux's xattrs carry it (posix_acl_xattr.h):
 * le32 version 2, then entries {le16 tag, le16 perm, le32 id}.  The mode is
 * the truth for the USER_OBJ, MASK (GROUP_OBJ without one) and OTHER entries.
 */
#define MDSP_XATTR_ACL_ACCESS  "system.posix_acl_access"
#define MDSP_XATTR_ACL_DEFAULT "system.posix_acl_default"
#define MDSP_ACL_XATTR_VERSION 2
#define MDSP_ACL_USER_OBJ  0x01
#define MDSP_ACL_USER      0x02
#define MDSP_ACL_GROUP_OBJ 0x04
#define MDSP_ACL_GROUP     0x08
#define MDSP_ACL_MASK      0x10
#define MDSP_ACL_OTHER     0x20
#define MDSP_ACL_UNDEFINED_ID 0xffffffffu
#define MDSP_ACL_MAX_ENTRIES 8191   /* what fits MDSP_XATTR_SIZE_MAX (64 KiB) */

struct mdsp_acl_entry {
	uint16_t tag, perm;
	uint32_t id;
};

/** mdsp_acl_count - entries in an ACL of @len bytes (validated: mdsp_acl_valid). */
size_t mdsp_acl_count(size_t len);
/** mdsp_acl_entry - entry @i (< mdsp_acl_count) of @acl, decoded into @e. */
void mdsp_acl_entry(const void *acl, size_t i, struct mdsp_acl_entry *e);
/**
 * mdsp_acl_valid - is @acl (@len bytes from a setxattr) a well-formed ACL?
 * posix_acl_from_xattr and posix_acl_valid: whole entries, version 2, perms
 * within rwx, exactly one USER_OBJ, GROUP_OBJ and OTHER, named USER then
 * GROUP entries after them sorted by id without repeats, a MASK whenever
 * there is a named entry, in tag order.  A header alone (no entry) is valid:
 * it removes the ACL.  Return: 0, -EINVAL, -EOPNOTSUPP (another version),
 * -E2BIG.
 */
int mdsp_acl_valid(const void *acl, size_t len);
/**
 * mdsp_acl_permission - posix_acl_permission for a caller that is not the
 * owner (nor root): named users, then the owning and named groups (any
 * that grants all of @mask, EACCES if one matched and none granted),
 * masked; then other.  The group class and other come from @in's mode.
 */
int mdsp_acl_permission(const struct mdsp_inode *in, const void *acl, size_t len, const struct mdsp_caller *c,
			int mask);
/**
 * mdsp_acl_equiv_mode - the permission bits @acl stands for, put into
 * *@modep (the group class is the mask when there is one).
 * Return: 0 when the ACL says no more than those bits (it need not be
 * kept: Linux stores only the mode), 1 otherwise.
 */
int mdsp_acl_equiv_mode(const void *acl, size_t len, uint32_t *modep);
/** mdsp_acl_chmod - a chmod to @mode rewrites USER_OBJ, MASK (or GROUP_OBJ) and OTHER. */
void mdsp_acl_chmod(void *acl, size_t len, uint32_t mode);
/**
 * mdsp_acl_create_masq - a new inode's access ACL from (a copy of) its
 * parent's default @acl, and the mode it asked for *@modep: each of the
 * ACL's USER_OBJ, GROUP_OBJ (or MASK) and OTHER and the mode's bits are
 * masked by the other (posix_acl_create_masq).
 * Return: 0 if the result is equivalent to the mode (keep no access ACL), 1.
 */
int mdsp_acl_create_masq(void *acl, size_t len, uint32_t *modep);

#endif
