/*
 * acl.c - the NFSv4 acl attribute over POSIX ACLs, the way knfsd maps them
 * (fs/nfsd/nfs4acl.c), so that nfs4_getfacl/nfs4_setfacl against the
 * gateway see and set what they would against a Linux server exporting
 * ext4:
 *
 *  - to NFSv4 (_posix_to_nfsv4_one): OWNER@ (a DENY of what others get and
 *    the owner does not, then its ALLOW), each named user (DENY, ALLOW,
 *    masked), GROUP@ and the named groups' ALLOWs, then their DENYs,
 *    EVERYONE@; a directory's default ACL follows as the same ACEs with
 *    FILE_INHERIT | DIRECTORY_INHERIT | INHERIT_ONLY;
 *  - from NFSv4 (nfs4_acl_nfsv4_to_posix): the ACEs folded in order into
 *    allow/deny state per principal, read back as rwx per entry, with a
 *    mask the union of the group class; what POSIX cannot say is
 *    NFS4ERR_ATTRNOTSUPP (knfsd's -EINVAL).
 *
 * The POSIX side is the xattr form perm/perm.h handles; named entries go
 * out sorted by id (the MDS wants the canonical form).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nfs_gw/nfs4/acl.h"
#include "nfs_gw/nfs4/nfs4_xdr.h"
#include "perm/perm.h"

#define ACE4_ALLOWED 0
#define ACE4_DENIED  1

#define ACE4_FILE_INHERIT      0x01
#define ACE4_DIRECTORY_INHERIT 0x02
#define ACE4_INHERIT_ONLY      0x08
#define ACE4_IDENTIFIER_GROUP  0x40
#define INHERITANCE (ACE4_FILE_INHERIT | ACE4_DIRECTORY_INHERIT)
#define SUPPORTED_FLAGS (INHERITANCE | ACE4_INHERIT_ONLY | ACE4_IDENTIFIER_GROUP)

#define ACE4_READ_DATA        0x00000001
#define ACE4_WRITE_DATA       0x00000002
#define ACE4_APPEND_DATA      0x00000004
#define ACE4_EXECUTE          0x00000020
#define ACE4_DELETE_CHILD     0x00000040
#define ACE4_READ_ATTRIBUTES  0x00000080
#define ACE4_WRITE_ATTRIBUTES 0x00000100
#define ACE4_READ_ACL         0x00020000
#define ACE4_WRITE_ACL        0x00040000
#define ACE4_SYNCHRONIZE      0x00100000

#define ANYONE_MODE (ACE4_READ_ATTRIBUTES | ACE4_READ_ACL | ACE4_SYNCHRONIZE)
#define OWNER_MODE  (ACE4_WRITE_ATTRIBUTES | ACE4_WRITE_ACL)
#define READ_MODE   ACE4_READ_DATA
#define WRITE_MODE  (ACE4_WRITE_DATA | ACE4_APPEND_DATA)
#define EXEC_MODE   ACE4_EXECUTE

enum who { WHO_NAMED, WHO_OWNER, WHO_GROUP, WHO_EVERYONE };

/* flags of the mapping */
#define F_DIR   1
#define F_OWNER 2

static uint32_t mask_from_posix(unsigned perm, unsigned flags)
{
	uint32_t m = ANYONE_MODE;

	if (flags & F_OWNER)
		m |= OWNER_MODE;
	if (perm & 4)
		m |= READ_MODE;
	if (perm & 2)
		m |= WRITE_MODE | ((flags & F_DIR) ? ACE4_DELETE_CHILD : 0);
	if (perm & 1)
		m |= EXEC_MODE;
	return m;
}

static uint32_t deny_mask_from_posix(unsigned perm, unsigned flags)
{
	uint32_t m = 0;

	if (perm & 4)
		m |= READ_MODE;
	if (perm & 2)
		m |= WRITE_MODE | ((flags & F_DIR) ? ACE4_DELETE_CHILD : 0);
	if (perm & 1)
		m |= EXEC_MODE;
	return m;
}

static void put_ace(struct xdr_enc *e, uint32_t *n, uint32_t type, uint32_t flag, uint32_t mask, enum who who,
		    uint32_t id, struct idmap *map)
{
	char buf[IDMAP_OWNER_MAX];

	xdr_put_u32(e, type);
	xdr_put_u32(e, flag);
	xdr_put_u32(e, mask);
	switch (who) {
	case WHO_OWNER:
		xdr_put_string(e, "OWNER@");
		break;
	case WHO_GROUP:
		xdr_put_string(e, "GROUP@");
		break;
	case WHO_EVERYONE:
		xdr_put_string(e, "EVERYONE@");
		break;
	default:
		idmap_id_to_owner(map, (flag & ACE4_IDENTIFIER_GROUP) ? IDMAP_GROUP : IDMAP_USER, id, !map, buf,
				  sizeof(buf));
		xdr_put_string(e, buf);
		break;
	}
	(*n)++;
}

/* the three entries a mode stands for, in the xattr form */
static size_t acl_from_mode(uint32_t mode, uint8_t *b)
{
	static const uint16_t tags[3] = { MDSP_ACL_USER_OBJ, MDSP_ACL_GROUP_OBJ, MDSP_ACL_OTHER };

	b[0] = 2, b[1] = b[2] = b[3] = 0;
	for (int i = 0; i < 3; i++) {
		uint8_t *p = b + 4 + 8 * i;
		unsigned perm = (mode >> (6 - 3 * i)) & 7;

		p[0] = (uint8_t)tags[i], p[1] = 0, p[2] = (uint8_t)perm, p[3] = 0;
		memset(p + 4, 0xff, 4);
	}
	return 4 + 8 * 3;
}

/* _posix_to_nfsv4_one */
static void posix_to_nfsv4_one(struct xdr_enc *e, uint32_t *n, const void *acl, size_t len, unsigned flags,
			       uint32_t eflag, struct idmap *map)
{
	unsigned owner = 0, users = 0, group = 0, groups = 0, other = 0, mask = 7, deny;
	struct mdsp_acl_entry pa;
	size_t i, cnt = mdsp_acl_count(len), g0;

	for (i = 0; i < cnt; i++) {
		mdsp_acl_entry(acl, i, &pa);
		switch (pa.tag) {
		case MDSP_ACL_USER_OBJ: owner = pa.perm; break;
		case MDSP_ACL_GROUP_OBJ: group = pa.perm; break;
		case MDSP_ACL_USER: users |= pa.perm; break;
		case MDSP_ACL_GROUP: groups |= pa.perm; break;
		case MDSP_ACL_OTHER: other = pa.perm; break;
		case MDSP_ACL_MASK: mask = pa.perm; break;
		}
	}
	users &= mask;
	group &= mask;
	groups &= mask;

	i = 0;
	mdsp_acl_entry(acl, i, &pa);
	deny = ~owner & (users | group | groups | other) & 7;
	if (deny)
		put_ace(e, n, ACE4_DENIED, eflag, deny_mask_from_posix(deny, flags), WHO_OWNER, 0, map);
	put_ace(e, n, ACE4_ALLOWED, eflag, mask_from_posix(pa.perm, flags | F_OWNER), WHO_OWNER, 0, map);
	for (i = 1; i < cnt; i++) {
		mdsp_acl_entry(acl, i, &pa);
		if (pa.tag != MDSP_ACL_USER)
			break;
		deny = ~(pa.perm & mask) & (groups | group | other) & 7;
		if (deny)
			put_ace(e, n, ACE4_DENIED, eflag, deny_mask_from_posix(deny, flags), WHO_NAMED, pa.id, map);
		put_ace(e, n, ACE4_ALLOWED, eflag, mask_from_posix(pa.perm & mask, flags), WHO_NAMED, pa.id, map);
	}
	/* groups: the ALLOWs first, then the DENYs (one may be in several) */
	g0 = i;
	put_ace(e, n, ACE4_ALLOWED, eflag, mask_from_posix(group, flags), WHO_GROUP, 0, map);
	for (i = g0 + 1; i < cnt; i++) {
		mdsp_acl_entry(acl, i, &pa);
		if (pa.tag != MDSP_ACL_GROUP)
			break;
		put_ace(e, n, ACE4_ALLOWED, eflag | ACE4_IDENTIFIER_GROUP, mask_from_posix(pa.perm & mask, flags),
			WHO_NAMED, pa.id, map);
	}
	deny = ~group & other & 7;
	if (deny)
		put_ace(e, n, ACE4_DENIED, eflag, deny_mask_from_posix(deny, flags), WHO_GROUP, 0, map);
	for (i = g0 + 1; i < cnt; i++) {
		mdsp_acl_entry(acl, i, &pa);
		if (pa.tag != MDSP_ACL_GROUP)
			break;
		deny = ~(pa.perm & mask) & other & 7;
		if (deny)
			put_ace(e, n, ACE4_DENIED, eflag | ACE4_IDENTIFIER_GROUP, deny_mask_from_posix(deny, flags),
				WHO_NAMED, pa.id, map);
	}
	put_ace(e, n, ACE4_ALLOWED, eflag, mask_from_posix(other, flags), WHO_EVERYONE, 0, map);
}

int nfs4_acl_encode(struct xdr_enc *e, uint32_t mode, const void *acl, size_t len, const void *dacl, size_t dlen,
		    struct idmap *map)
{
	uint8_t fake[4 + 8 * 3];
	unsigned flags = S_ISDIR(mode) ? F_DIR : 0;
	uint32_t n = 0;
	long off;

	/* no ACL: the mode's three entries (posix_acl_from_mode) */
	if (!acl || mdsp_acl_count(len) < 3 || mdsp_acl_valid(acl, len)) {
		len = acl_from_mode(mode, fake);
		acl = fake;
	}
	off = xdr_reserve(e, 4);
	if (off < 0)
		return e->err;
	posix_to_nfsv4_one(e, &n, acl, len, flags, 0, map);
	if ((flags & F_DIR) && dacl && mdsp_acl_count(dlen) >= 3 && !mdsp_acl_valid(dacl, dlen))
		posix_to_nfsv4_one(e, &n, dacl, dlen, flags, INHERITANCE | ACE4_INHERIT_ONLY, map);
	xdr_patch_u32(e, (size_t)off, n);
	return e->err;
}

/* ---- NFSv4 -> POSIX (nfs4_acl_nfsv4_to_posix) ------------------------------ */

struct ace_state {
	uint32_t allow, deny;
};

struct id_state {
	uint32_t id;
	struct ace_state perms;
};

struct posix_state {
	unsigned valid;             /* MDSP_ACL_* tags seen */
	struct ace_state owner, group, other, everyone, mask;
	struct id_state *users, *groups;
	uint32_t nusers, ngroups;
};

static void allow_bits(struct ace_state *a, uint32_t m)
{
	a->allow |= m & ~a->deny;
}

static void deny_bits(struct ace_state *a, uint32_t m)
{
	a->deny |= m & ~a->allow;
}

static void deny_bits_array(struct id_state *v, uint32_t n, uint32_t m)
{
	for (uint32_t i = 0; i < n; i++)
		deny_bits(&v[i].perms, m);
}

static void allow_bits_array(struct id_state *v, uint32_t n, uint32_t m)
{
	for (uint32_t i = 0; i < n; i++)
		allow_bits(&v[i].perms, m);
}

static uint32_t find_id(struct posix_state *s, bool group, uint32_t id)
{
	struct id_state *v = group ? s->groups : s->users;
	uint32_t *n = group ? &s->ngroups : &s->nusers, i;

	for (i = 0; i < *n; i++)
		if (v[i].id == id)
			return i;
	(*n)++;
	v[i].id = id;
	v[i].perms = s->everyone;
	return i;
}

struct ace {
	uint32_t type, flag, mask;
	enum who who;
	uint32_t id;
};

static unsigned ace_tag(const struct ace *a)
{
	switch (a->who) {
	case WHO_OWNER: return MDSP_ACL_USER_OBJ;
	case WHO_GROUP: return MDSP_ACL_GROUP_OBJ;
	case WHO_EVERYONE: return MDSP_ACL_OTHER;
	default: return (a->flag & ACE4_IDENTIFIER_GROUP) ? MDSP_ACL_GROUP : MDSP_ACL_USER;
	}
}

static void process_ace(struct posix_state *s, const struct ace *a)
{
	unsigned tag = ace_tag(a);
	bool allow = a->type == ACE4_ALLOWED;
	uint32_t m = a->mask, i;

	s->valid |= tag;
	switch (tag) {
	case MDSP_ACL_USER_OBJ:
		if (allow)
			allow_bits(&s->owner, m);
		else
			deny_bits(&s->owner, m);
		break;
	case MDSP_ACL_USER:
		i = find_id(s, false, a->id);
		if (allow) {
			allow_bits(&s->users[i].perms, m);
		} else {
			deny_bits(&s->users[i].perms, m);
			deny_bits(&s->owner, s->users[i].perms.deny);
		}
		break;
	case MDSP_ACL_GROUP_OBJ:
		if (allow) {
			allow_bits(&s->group, m);
		} else {
			deny_bits(&s->group, m);
			m = s->group.deny;
			deny_bits(&s->owner, m);
			deny_bits(&s->everyone, m);
			deny_bits_array(s->users, s->nusers, m);
			deny_bits_array(s->groups, s->ngroups, m);
		}
		break;
	case MDSP_ACL_GROUP:
		i = find_id(s, true, a->id);
		if (allow) {
			allow_bits(&s->groups[i].perms, m);
		} else {
			deny_bits(&s->groups[i].perms, m);
			m = s->groups[i].perms.deny;
			deny_bits(&s->owner, m);
			deny_bits(&s->group, m);
			deny_bits(&s->everyone, m);
			deny_bits_array(s->users, s->nusers, m);
			deny_bits_array(s->groups, s->ngroups, m);
		}
		break;
	case MDSP_ACL_OTHER:
		if (allow) {
			allow_bits(&s->owner, m);
			allow_bits(&s->group, m);
			allow_bits(&s->other, m);
			allow_bits(&s->everyone, m);
			allow_bits_array(s->users, s->nusers, m);
			allow_bits_array(s->groups, s->ngroups, m);
		} else {
			deny_bits(&s->owner, m);
			deny_bits(&s->group, m);
			deny_bits(&s->other, m);
			deny_bits(&s->everyone, m);
			deny_bits_array(s->users, s->nusers, m);
			deny_bits_array(s->groups, s->ngroups, m);
		}
		break;
	}
}

static unsigned low_mode(uint32_t perm, bool isdir)
{
	uint32_t wm = WRITE_MODE | (isdir ? ACE4_DELETE_CHILD : 0);
	unsigned m = 0;

	if ((perm & READ_MODE) == READ_MODE)
		m |= 4;
	if ((perm & wm) == wm)
		m |= 2;
	if ((perm & EXEC_MODE) == EXEC_MODE)
		m |= 1;
	return m;
}

static size_t put_entry(uint8_t *b, size_t off, unsigned tag, unsigned perm, uint32_t id)
{
	uint8_t *p = b + off;

	p[0] = (uint8_t)tag, p[1] = 0, p[2] = (uint8_t)perm, p[3] = 0;
	p[4] = (uint8_t)id, p[5] = (uint8_t)(id >> 8), p[6] = (uint8_t)(id >> 16), p[7] = (uint8_t)(id >> 24);
	return off + 8;
}

static int cmp_id(const void *a, const void *b)
{
	uint32_t x = ((const struct id_state *)a)->id, y = ((const struct id_state *)b)->id;

	return x < y ? -1 : x > y;
}

/* posix_state_to_acl; 0 bytes for a default ACL with no ACE */
static size_t state_to_acl(struct posix_state *s, bool isdir, bool dflt, uint8_t *b)
{
	size_t off = 4;
	uint32_t i;

	if (!s->valid && dflt)
		return 0;
	b[0] = 2, b[1] = b[2] = b[3] = 0;
	/* canonical order: named entries sorted by id */
	qsort(s->users, s->nusers, sizeof(*s->users), cmp_id);
	qsort(s->groups, s->ngroups, sizeof(*s->groups), cmp_id);
	off = put_entry(b, off, MDSP_ACL_USER_OBJ, low_mode(s->owner.allow, isdir), MDSP_ACL_UNDEFINED_ID);
	for (i = 0; i < s->nusers; i++) {
		off = put_entry(b, off, MDSP_ACL_USER, low_mode(s->users[i].perms.allow, isdir), s->users[i].id);
		s->mask.allow |= s->users[i].perms.allow;
	}
	off = put_entry(b, off, MDSP_ACL_GROUP_OBJ, low_mode(s->group.allow, isdir), MDSP_ACL_UNDEFINED_ID);
	s->mask.allow |= s->group.allow;
	for (i = 0; i < s->ngroups; i++) {
		off = put_entry(b, off, MDSP_ACL_GROUP, low_mode(s->groups[i].perms.allow, isdir), s->groups[i].id);
		s->mask.allow |= s->groups[i].perms.allow;
	}
	if (s->nusers || s->ngroups)
		off = put_entry(b, off, MDSP_ACL_MASK, low_mode(s->mask.allow, isdir), MDSP_ACL_UNDEFINED_ID);
	off = put_entry(b, off, MDSP_ACL_OTHER, low_mode(s->other.allow, isdir), MDSP_ACL_UNDEFINED_ID);
	return off;
}

static uint32_t get_ace(struct xdr_dec *d, struct idmap *map, struct ace *a)
{
	char who[NFS4_OPAQUE_LIMIT + 1];
	int r;

	if (xdr_get_u32(d, &a->type) || xdr_get_u32(d, &a->flag) || xdr_get_u32(d, &a->mask) ||
	    xdr_get_string(d, who, sizeof(who), NFS4_OPAQUE_LIMIT))
		return NFS4ERR_BADXDR;
	a->id = 0;
	if (!strcmp(who, "OWNER@")) {
		a->who = WHO_OWNER;
	} else if (!strcmp(who, "GROUP@")) {
		a->who = WHO_GROUP;
	} else if (!strcmp(who, "EVERYONE@")) {
		a->who = WHO_EVERYONE;
	} else {
		if (!who[0])
			return NFS4ERR_INVAL;
		a->who = WHO_NAMED;
		r = idmap_owner_to_id(map, (a->flag & ACE4_IDENTIFIER_GROUP) ? IDMAP_GROUP : IDMAP_USER, who, true,
				      &a->id);
		if (r == -EAGAIN)
			return NFS4ERR_DELAY;
		/* (uid_t)-1 names nobody a POSIX ACL can hold */
		if (r || a->id == MDSP_ACL_UNDEFINED_ID)
			return NFS4ERR_BADOWNER;
	}
	return NFS4_OK;
}

uint32_t nfs4_acl_decode(struct xdr_dec *d, bool isdir, struct idmap *map, uint8_t *acl, size_t *len,
			 uint8_t *dacl, size_t *dlen)
{
	struct posix_state eff, def;
	struct id_state *v;
	uint32_t n, st = NFS4_OK;
	struct ace a;

	if (xdr_get_u32(d, &n))
		return NFS4ERR_BADXDR;
	if (n > NFS4_ACL_MAX_ACES)
		return NFS4ERR_INVAL;
	/* every ACE names at most one principal: room for all of them */
	v = calloc(4 * (size_t)n + 4, sizeof(*v));
	if (!v)
		return NFS4ERR_RESOURCE;
	memset(&eff, 0, sizeof(eff));
	memset(&def, 0, sizeof(def));
	eff.users = v, eff.groups = v + n + 1;
	def.users = v + 2 * (size_t)n + 2, def.groups = v + 3 * (size_t)n + 3;
	for (uint32_t i = 0; i < n && !st; i++) {
		if ((st = get_ace(d, map, &a)))
			break;
		/* what POSIX cannot say (knfsd: -EINVAL, nfserr_attrnotsupp) */
		if ((a.type != ACE4_ALLOWED && a.type != ACE4_DENIED) || (a.flag & ~(uint32_t)SUPPORTED_FLAGS)) {
			st = NFS4ERR_ATTRNOTSUPP;
			break;
		}
		if (!(a.flag & INHERITANCE)) {
			process_ace(&eff, &a);
			continue;
		}
		if (!isdir) {
			st = NFS4ERR_ATTRNOTSUPP;
			break;
		}
		/* one of FILE_INHERIT or DIRECTORY_INHERIT stands for both (RFC 3530) */
		process_ace(&def, &a);
		if (!(a.flag & ACE4_INHERIT_ONLY))
			process_ace(&eff, &a);
	}
	if (!st) {
		/* setfacl's rule: a default ACL with no owner, group or other
		 * entry takes the access ACL's */
		if (def.valid) {
			if (!(def.valid & MDSP_ACL_USER_OBJ))
				def.owner = eff.owner;
			if (!(def.valid & MDSP_ACL_GROUP_OBJ))
				def.group = eff.group;
			if (!(def.valid & MDSP_ACL_OTHER))
				def.other = eff.other;
		}
		*len = state_to_acl(&eff, isdir, false, acl);
		*dlen = state_to_acl(&def, isdir, true, dacl);
	}
	free(v);
	return st;
}
