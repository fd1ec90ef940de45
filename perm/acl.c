/*
 * acl.c - POSIX ACLs (POSIX.1e draft 17, as Linux has them): the checks of
 * the xattr form, the permission decision, and the interplay with the mode
 * bits, in one copy for the MDS (mds/server.c stores and inherits them),
 * the client library and, through it, the NFS gateway.
 *
 * An ACL travels and is stored exactly as Linux's system.posix_acl_access
 * and system.posix_acl_default xattrs hold it (include/uapi/linux/
 * posix_acl_xattr.h): a little-endian u32 version (2), then 8-byte entries
 * {u16 tag, u16 perm, u32 id}.  The functions follow fs/posix_acl.c:
 * mdsp_acl_valid is posix_acl_valid over posix_acl_from_xattr,
 * mdsp_acl_permission is posix_acl_permission, mdsp_acl_equiv_mode,
 * mdsp_acl_chmod and mdsp_acl_create_masq are posix_acl_equiv_mode,
 * __posix_acl_chmod and posix_acl_create_masq.
 *
 * The mode is the truth for the owner, the group class and other: the ACL's
 * USER_OBJ, MASK (GROUP_OBJ without a mask) and OTHER entries are kept equal
 * to it by every chmod (mdsp_acl_chmod) and set from it by every ACL change,
 * and the decision reads the mode for them, so a client whose cached mode is
 * newer than its cached ACL still decides as the MDS does.
 *
 * Pure functions over byte buffers: no lock, no allocation.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "perm/perm.h"

#define HDR 4u
#define ENT 8u

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

size_t mdsp_acl_count(size_t len)
{
	return len < HDR ? 0 : (len - HDR) / ENT;
}

void mdsp_acl_entry(const void *acl, size_t i, struct mdsp_acl_entry *e)
{
	const uint8_t *p = (const uint8_t *)acl + HDR + i * ENT;

	e->tag = get16(p);
	e->perm = get16(p + 2);
	e->id = get32(p + 4);
}

static void set_perm(void *acl, size_t i, uint16_t perm)
{
	put16((uint8_t *)acl + HDR + i * ENT + 2, perm);
}

int mdsp_acl_valid(const void *acl, size_t len)
{
	enum { S_USER_OBJ, S_USER, S_GROUP, S_OTHER, S_DONE } state = S_USER_OBJ;
	bool needs_mask = false, have_id = false;
	struct mdsp_acl_entry e;
	uint32_t prev = 0;
	size_t i, n;

	if (len < HDR || (len - HDR) % ENT)
		return -EINVAL;
	if (get32(acl) != MDSP_ACL_XATTR_VERSION)
		return -EOPNOTSUPP;     /* posix_acl_from_xattr */
	n = mdsp_acl_count(len);
	if (n > MDSP_ACL_MAX_ENTRIES)
		return -E2BIG;
	for (i = 0; i < n; i++) {
		mdsp_acl_entry(acl, i, &e);
		if (e.perm & ~(uint16_t)7)
			return -EINVAL;
		switch (e.tag) {
		case MDSP_ACL_USER_OBJ:
			if (state != S_USER_OBJ)
				return -EINVAL;
			state = S_USER;
			break;
		case MDSP_ACL_USER:
		case MDSP_ACL_GROUP:
			if (state != (e.tag == MDSP_ACL_USER ? S_USER : S_GROUP))
				return -EINVAL;
			/* sorted by id, no id twice (posix_acl_valid) */
			if (e.id == MDSP_ACL_UNDEFINED_ID || (have_id && e.id <= prev))
				return -EINVAL;
			prev = e.id;
			have_id = true;
			needs_mask = true;
			break;
		case MDSP_ACL_GROUP_OBJ:
			if (state != S_USER)
				return -EINVAL;
			state = S_GROUP;
			have_id = false;
			break;
		case MDSP_ACL_MASK:
			if (state != S_GROUP)
				return -EINVAL;
			state = S_OTHER;
			break;
		case MDSP_ACL_OTHER:
			if (state == S_OTHER || (state == S_GROUP && !needs_mask)) {
				state = S_DONE;
				break;
			}
			return -EINVAL;
		default:
			return -EINVAL;
		}
	}
	/* a header alone is no ACL: setting it removes the ACL, as Linux does */
	return n == 0 || state == S_DONE ? 0 : -EINVAL;
}

/* the index of the first entry tagged @tag, or -1 */
static long find_tag(const void *acl, size_t len, uint16_t tag)
{
	struct mdsp_acl_entry e;
	size_t i, n = mdsp_acl_count(len);

	for (i = 0; i < n; i++) {
		mdsp_acl_entry(acl, i, &e);
		if (e.tag == tag)
			return (long)i;
	}
	return -1;
}

int mdsp_acl_permission(const struct mdsp_inode *in, const void *acl, size_t len, const struct mdsp_caller *c,
			int mask)
{
	uint32_t mode = in->mode;
	uint32_t maskbits = (mode >> 3) & 7, grp_obj = (mode >> 3) & 7;
	struct mdsp_acl_entry e;
	bool found = false, has_mask = find_tag(acl, len, MDSP_ACL_MASK) >= 0;
	size_t i, n = mdsp_acl_count(len);

	mask &= 7;
	if (has_mask) {
		long g = find_tag(acl, len, MDSP_ACL_GROUP_OBJ);

		if (g >= 0) {
			mdsp_acl_entry(acl, (size_t)g, &e);
			grp_obj = e.perm;
		}
	} else {
		maskbits = 7;
	}
	/* USER_OBJ and OTHER are the mode's; the caller handled the owner */
	for (i = 0; i < n; i++) {
		uint32_t perm;

		mdsp_acl_entry(acl, i, &e);
		switch (e.tag) {
		case MDSP_ACL_USER:
			if (e.id != c->uid)
				continue;
			return ((e.perm & maskbits & (uint32_t)mask) == (uint32_t)mask) ? 0 : -EACCES;
		case MDSP_ACL_GROUP_OBJ:
		case MDSP_ACL_GROUP:
			if (!mdsp_in_group(c, e.tag == MDSP_ACL_GROUP ? e.id : in->gid))
				continue;
			found = true;
			perm = e.tag == MDSP_ACL_GROUP ? e.perm : grp_obj;
			if ((perm & maskbits & (uint32_t)mask) == (uint32_t)mask)
				return 0;
			continue;
		default:
			continue;
		}
	}
	if (found)
		return -EACCES;
	return ((mode & 7 & (uint32_t)mask) == (uint32_t)mask) ? 0 : -EACCES;
}

int mdsp_acl_equiv_mode(const void *acl, size_t len, uint32_t *modep)
{
	struct mdsp_acl_entry e;
	uint32_t mode = *modep;
	size_t i, n = mdsp_acl_count(len);
	int not_equiv = 0;

	for (i = 0; i < n; i++) {
		mdsp_acl_entry(acl, i, &e);
		switch (e.tag) {
		case MDSP_ACL_USER_OBJ:
			mode = (mode & ~(uint32_t)S_IRWXU) | (uint32_t)(e.perm & 7) << 6;
			break;
		case MDSP_ACL_GROUP_OBJ:
			mode = (mode & ~(uint32_t)S_IRWXG) | (uint32_t)(e.perm & 7) << 3;
			break;
		case MDSP_ACL_OTHER:
			mode = (mode & ~(uint32_t)S_IRWXO) | (uint32_t)(e.perm & 7);
			break;
		case MDSP_ACL_MASK:
			/* the mask is the group class: it is what the mode shows */
			mode = (mode & ~(uint32_t)S_IRWXG) | (uint32_t)(e.perm & 7) << 3;
			not_equiv = 1;
			break;
		default:
			not_equiv = 1;
			break;
		}
	}
	/* a MASK may come before GROUP_OBJ only in an invalid ACL; redo it last */
	if (not_equiv) {
		long m = find_tag(acl, len, MDSP_ACL_MASK);

		if (m >= 0) {
			mdsp_acl_entry(acl, (size_t)m, &e);
			mode = (mode & ~(uint32_t)S_IRWXG) | (uint32_t)(e.perm & 7) << 3;
		}
	}
	*modep = mode;
	return not_equiv;
}

void mdsp_acl_chmod(void *acl, size_t len, uint32_t mode)
{
	long m = find_tag(acl, len, MDSP_ACL_MASK), i;

	if ((i = find_tag(acl, len, MDSP_ACL_USER_OBJ)) >= 0)
		set_perm(acl, (size_t)i, (uint16_t)((mode >> 6) & 7));
	if ((i = m >= 0 ? m : find_tag(acl, len, MDSP_ACL_GROUP_OBJ)) >= 0)
		set_perm(acl, (size_t)i, (uint16_t)((mode >> 3) & 7));
	if ((i = find_tag(acl, len, MDSP_ACL_OTHER)) >= 0)
		set_perm(acl, (size_t)i, (uint16_t)(mode & 7));
}

int mdsp_acl_create_masq(void *acl, size_t len, uint32_t *modep)
{
	struct mdsp_acl_entry e;
	uint32_t mode = *modep;
	long group_obj = -1, mask_obj = -1;
	size_t i, n = mdsp_acl_count(len);
	int not_equiv = 0;

	for (i = 0; i < n; i++) {
		uint32_t perm;

		mdsp_acl_entry(acl, i, &e);
		perm = e.perm;
		switch (e.tag) {
		case MDSP_ACL_USER_OBJ:
			perm &= (mode >> 6) | ~(uint32_t)S_IRWXO;
			set_perm(acl, i, (uint16_t)perm);
			mode &= (perm << 6) | ~(uint32_t)S_IRWXU;
			break;
		case MDSP_ACL_USER:
		case MDSP_ACL_GROUP:
			not_equiv = 1;
			break;
		case MDSP_ACL_GROUP_OBJ:
			group_obj = (long)i;
			break;
		case MDSP_ACL_OTHER:
			perm &= mode | ~(uint32_t)S_IRWXO;
			set_perm(acl, i, (uint16_t)perm);
			mode &= perm | ~(uint32_t)S_IRWXO;
			break;
		case MDSP_ACL_MASK:
			mask_obj = (long)i;
			not_equiv = 1;
			break;
		}
	}
	i = (size_t)(mask_obj >= 0 ? mask_obj : group_obj);
	if (mask_obj >= 0 || group_obj >= 0) {
		uint32_t perm;

		mdsp_acl_entry(acl, i, &e);
		perm = e.perm & ((mode >> 3) | ~(uint32_t)S_IRWXO);
		set_perm(acl, i, (uint16_t)perm);
		mode &= (perm << 3) | ~(uint32_t)S_IRWXG;
	}
	*modep = mode;
	return not_equiv;
}
