/*
 * ops_attr.c - fattr4 encoding and decoding, and the attribute operations:
 * GETATTR, SETATTR, VERIFY, NVERIFY, ACCESS.
 *
 * We encode the REQUIRED attributes and the RECOMMENDED ones a POSIX
 * client uses (mode, numlinks, owner/owner_group, the times, space_*,
 * rawdev, mounted_on_fileid, maxread/maxwrite, suppattr_exclcreat...).
 * Owner strings go through idmap.h both ways: numbers for AUTH_SYS while
 * nfs4_disable_idmapping is set (knfsd's default), else name@domain; in,
 * both are accepted, and a name we cannot map is NFS4ERR_BADOWNER.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/log.h"
#include "nfs_gw/nfs4/acl.h"
#include "nfs_gw/nfs4/ops.h"
#include "nfs_gw/nfs4/ops_int.h"
#include "perm/perm.h"

#define BIT(n) (1u << ((n) % 32))
#define W(n) ((n) / 32)

static const uint8_t supported_list[] = {
	FATTR4_SUPPORTED_ATTRS, FATTR4_TYPE, FATTR4_FH_EXPIRE_TYPE, FATTR4_CHANGE, FATTR4_SIZE,
	FATTR4_LINK_SUPPORT, FATTR4_SYMLINK_SUPPORT, FATTR4_NAMED_ATTR, FATTR4_FSID,
	FATTR4_UNIQUE_HANDLES, FATTR4_LEASE_TIME, FATTR4_RDATTR_ERROR, FATTR4_ACL, FATTR4_ACLSUPPORT,
	FATTR4_CANSETTIME, FATTR4_CASE_INSENSITIVE, FATTR4_CASE_PRESERVING, FATTR4_CHOWN_RESTRICTED,
	FATTR4_FILEHANDLE, FATTR4_FILEID, FATTR4_FILES_AVAIL, FATTR4_FILES_FREE, FATTR4_FILES_TOTAL,
	FATTR4_HOMOGENEOUS, FATTR4_MAXFILESIZE, FATTR4_MAXLINK, FATTR4_MAXNAME, FATTR4_MAXREAD,
	FATTR4_MAXWRITE, FATTR4_MODE, FATTR4_NO_TRUNC, FATTR4_NUMLINKS, FATTR4_OWNER,
	FATTR4_OWNER_GROUP, FATTR4_RAWDEV, FATTR4_SPACE_AVAIL, FATTR4_SPACE_FREE, FATTR4_SPACE_TOTAL,
	FATTR4_SPACE_USED, FATTR4_TIME_ACCESS, FATTR4_TIME_ACCESS_SET, FATTR4_TIME_DELTA,
	FATTR4_TIME_METADATA, FATTR4_TIME_MODIFY, FATTR4_TIME_MODIFY_SET, FATTR4_MOUNTED_ON_FILEID,
	FATTR4_SUPPATTR_EXCLCREAT,
};

void nfs4_attr_supported(uint32_t w[3])
{
	w[0] = w[1] = w[2] = 0;
	for (size_t i = 0; i < sizeof(supported_list); i++)
		w[W(supported_list[i])] |= BIT(supported_list[i]);
}

void nfs4_attr_supported_minor(uint32_t w[3], uint32_t minor)
{
	nfs4_attr_supported(w);
	if (minor == 0)       /* RFC 7530 defines attributes 0..55 only */
		w[W(FATTR4_SUPPATTR_EXCLCREAT)] &= ~BIT(FATTR4_SUPPATTR_EXCLCREAT);
}

static bool is_set(const uint32_t *w, unsigned int n)
{
	return (w[W(n)] & BIT(n)) != 0;
}

bool nfs4_attr_write_only(const struct xdr_bitmap *req)
{
	/* RFC 7530 5.5, RFC 8881 5.5: "set-only" attributes */
	return is_set(req->w, FATTR4_TIME_ACCESS_SET) || is_set(req->w, FATTR4_TIME_MODIFY_SET);
}

bool nfs4_attr_want_statfs(const struct xdr_bitmap *req)
{
	static const uint8_t fs[] = { FATTR4_FILES_AVAIL, FATTR4_FILES_FREE, FATTR4_FILES_TOTAL,
				      FATTR4_SPACE_AVAIL, FATTR4_SPACE_FREE, FATTR4_SPACE_TOTAL };

	for (size_t i = 0; i < sizeof(fs); i++)
		if (is_set(req->w, fs[i]))
			return true;
	return false;
}

static uint32_t ftype(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG: return NF4REG;
	case S_IFDIR: return NF4DIR;
	case S_IFBLK: return NF4BLK;
	case S_IFCHR: return NF4CHR;
	case S_IFLNK: return NF4LNK;
	case S_IFSOCK: return NF4SOCK;
	case S_IFIFO: return NF4FIFO;
	default: return NF4REG;
	}
}

static void put_time(struct xdr_enc *e, const struct timespec *ts)
{
	xdr_put_u64(e, (uint64_t)(int64_t)ts->tv_sec);
	xdr_put_u32(e, (uint32_t)ts->tv_nsec);
}

static void put_owner(struct xdr_enc *e, const struct nfs4_attr_src *s, enum idmap_kind k, uint32_t id)
{
	char buf[IDMAP_OWNER_MAX];

	idmap_id_to_owner(s->idmap, k, id, !s->idmap, buf, sizeof(buf));
	xdr_put_string(e, buf);
}

/* Encode the value of attribute @n (supported). */
static void put_attr(struct xdr_enc *e, unsigned int n, const struct nfs4_attr_src *s)
{
	const struct lc_attr *a = s->a;
	const struct statvfs *f = s->sfs;
	uint32_t sup[3];

	switch (n) {
	case FATTR4_SUPPORTED_ATTRS:
		nfs4_attr_supported_minor(sup, s->minor);
		xdr_put_bitmap(e, sup, 3);
		break;
	case FATTR4_TYPE: xdr_put_u32(e, ftype(a->mode)); break;
	case FATTR4_FH_EXPIRE_TYPE: xdr_put_u32(e, 0); break;  /* FH4_PERSISTENT */
	case FATTR4_CHANGE: xdr_put_u64(e, a->change); break;
	case FATTR4_SIZE: xdr_put_u64(e, a->size); break;
	case FATTR4_LINK_SUPPORT: xdr_put_bool(e, true); break;
	case FATTR4_SYMLINK_SUPPORT: xdr_put_bool(e, true); break;
	case FATTR4_NAMED_ATTR: xdr_put_bool(e, false); break;
	case FATTR4_FSID:
		xdr_put_u64(e, s->fsid_major);
		xdr_put_u64(e, s->fsid_minor);
		break;
	case FATTR4_UNIQUE_HANDLES: xdr_put_bool(e, true); break;
	case FATTR4_LEASE_TIME: xdr_put_u32(e, s->lease_secs); break;
	case FATTR4_RDATTR_ERROR: xdr_put_u32(e, s->rdattr_error); break;
	case FATTR4_ACL:
		nfs4_acl_encode(e, a->mode, s->acl, s->acl_len, s->dacl, s->dacl_len, s->idmap);
		break;
	case FATTR4_ACLSUPPORT: xdr_put_u32(e, NFS4_ACLSUPPORT); break;
	case FATTR4_CANSETTIME: xdr_put_bool(e, true); break;
	case FATTR4_CASE_INSENSITIVE: xdr_put_bool(e, false); break;
	case FATTR4_CASE_PRESERVING: xdr_put_bool(e, true); break;
	case FATTR4_CHOWN_RESTRICTED: xdr_put_bool(e, true); break;
	case FATTR4_FILEHANDLE:
		if (s->fh)
			nfs4_put_fh(e, s->fh);
		else
			xdr_put_u32(e, 0);
		break;
	case FATTR4_FILEID: xdr_put_u64(e, a->ino); break;
	case FATTR4_FILES_AVAIL: xdr_put_u64(e, f ? f->f_favail : 0); break;
	case FATTR4_FILES_FREE: xdr_put_u64(e, f ? f->f_ffree : 0); break;
	case FATTR4_FILES_TOTAL: xdr_put_u64(e, f ? f->f_files : 0); break;
	case FATTR4_HOMOGENEOUS: xdr_put_bool(e, true); break;
	case FATTR4_MAXFILESIZE: xdr_put_u64(e, s->maxfilesize ? s->maxfilesize : (uint64_t)INT64_MAX); break;
	case FATTR4_MAXLINK: xdr_put_u32(e, 65000); break;
	case FATTR4_MAXNAME: xdr_put_u32(e, NFS4_MAX_NAME); break;
	case FATTR4_MAXREAD: xdr_put_u64(e, NFS4_MAXIO); break;
	case FATTR4_MAXWRITE: xdr_put_u64(e, NFS4_MAXIO); break;
	case FATTR4_MODE: xdr_put_u32(e, a->mode & 07777); break;
	case FATTR4_NO_TRUNC: xdr_put_bool(e, true); break;
	case FATTR4_NUMLINKS: xdr_put_u32(e, a->nlink); break;
	case FATTR4_OWNER: put_owner(e, s, IDMAP_USER, a->uid); break;
	case FATTR4_OWNER_GROUP: put_owner(e, s, IDMAP_GROUP, a->gid); break;
	case FATTR4_RAWDEV:
		xdr_put_u32(e, major(a->rdev));
		xdr_put_u32(e, minor(a->rdev));
		break;
	case FATTR4_SPACE_AVAIL: xdr_put_u64(e, f ? (uint64_t)f->f_bavail * f->f_frsize : 0); break;
	case FATTR4_SPACE_FREE: xdr_put_u64(e, f ? (uint64_t)f->f_bfree * f->f_frsize : 0); break;
	case FATTR4_SPACE_TOTAL: xdr_put_u64(e, f ? (uint64_t)f->f_blocks * f->f_frsize : 0); break;
	case FATTR4_SPACE_USED: xdr_put_u64(e, a->blocks * 512); break;
	case FATTR4_TIME_ACCESS: put_time(e, &a->atime); break;
	case FATTR4_TIME_DELTA: {
		struct timespec one = { 0, 1 };

		put_time(e, &one);
		break;
	}
	case FATTR4_TIME_METADATA: put_time(e, &a->ctime); break;
	case FATTR4_TIME_MODIFY: put_time(e, &a->mtime); break;
	case FATTR4_MOUNTED_ON_FILEID: xdr_put_u64(e, s->mounted_on_fileid); break;
	case FATTR4_SUPPATTR_EXCLCREAT: {
		uint32_t w[3] = { 0 };

		w[W(FATTR4_SIZE)] |= BIT(FATTR4_SIZE);
		w[W(FATTR4_MODE)] |= BIT(FATTR4_MODE);
		w[W(FATTR4_OWNER)] |= BIT(FATTR4_OWNER);
		w[W(FATTR4_OWNER_GROUP)] |= BIT(FATTR4_OWNER_GROUP);
		xdr_put_bitmap(e, w, 3);
		break;
	}
	default:
		break;
	}
}

/* Encode just the attrlist values of @mask (already limited to what we support). */
static void put_vals(struct xdr_enc *e, const uint32_t mask[3], const struct nfs4_attr_src *s)
{
	for (unsigned int n = 0; n < 96; n++)
		if (is_set(mask, n) && n != FATTR4_TIME_ACCESS_SET && n != FATTR4_TIME_MODIFY_SET)
			put_attr(e, n, s);
}

int nfs4_attr_encode(struct xdr_enc *e, const struct xdr_bitmap *req, const struct nfs4_attr_src *s)
{
	uint32_t sup[3], mask[3];
	long len_off;
	size_t start;

	nfs4_attr_supported_minor(sup, s->minor);
	for (int i = 0; i < 3; i++)
		mask[i] = req->w[i] & sup[i];
	/* write-only attributes are never returned (GETATTR and READDIR refuse them first) */
	mask[W(FATTR4_TIME_ACCESS_SET)] &= ~BIT(FATTR4_TIME_ACCESS_SET);
	mask[W(FATTR4_TIME_MODIFY_SET)] &= ~BIT(FATTR4_TIME_MODIFY_SET);
	xdr_put_bitmap(e, mask, 3);
	len_off = xdr_reserve(e, 4);
	if (len_off < 0)
		return e->err;
	start = e->len;
	put_vals(e, mask, s);
	if (e->err)
		return e->err;
	xdr_patch_u32(e, (size_t)len_off, (uint32_t)(e->len - start));
	return 0;
}

/* ---- settable attributes ------------------------------------------------------- */

static uint32_t get_settime(struct xdr_dec *d, struct timespec *ts, bool *now)
{
	uint32_t how;
	struct nfs4_time t;

	*now = false;
	if (xdr_get_u32(d, &how))
		return NFS4ERR_BADXDR;
	if (how == 0) {             /* SET_TO_SERVER_TIME4 */
		*now = true;
		return NFS4_OK;
	}
	if (how != 1)
		return NFS4ERR_BADXDR;
	if (xdr_get_i64(d, &t.seconds) || xdr_get_u32(d, &t.nseconds))
		return NFS4ERR_BADXDR;
	/* well-formed XDR, but not a time: RFC 7530 2.2.2, nseconds < 10^9 */
	if (t.nseconds >= 1000000000u)
		return NFS4ERR_INVAL;
	ts->tv_sec = (time_t)t.seconds;
	ts->tv_nsec = (long)t.nseconds;
	return NFS4_OK;
}

uint32_t nfs4_sattr_decode(struct xdr_dec *d, struct idmap *map, struct nfs4_sattr *s)
{
	struct xdr_bitmap bm;
	struct xdr_dec v;
	const uint8_t *vals;
	uint32_t vlen, sup[3], st = NFS4_OK;
	char buf[NFS4_OPAQUE_LIMIT + 1];
	bool now;

	memset(s, 0, sizeof(*s));
	if (xdr_get_bitmap(d, &bm) || xdr_get_opaque(d, &vals, &vlen, UINT32_MAX))
		return NFS4ERR_BADXDR;
	nfs4_attr_supported(sup);
	if (bm.extra)
		return NFS4ERR_ATTRNOTSUPP;
	for (int i = 0; i < 3; i++)
		if (bm.w[i] & ~sup[i])
			return NFS4ERR_ATTRNOTSUPP;
	xdr_dec_init(&v, vals, vlen);
	for (unsigned int n = 0; n < 96 && !st; n++) {
		if (!is_set(bm.w, n))
			continue;
		switch (n) {
		case FATTR4_SIZE:
			if (xdr_get_u64(&v, &s->a.size))
				return NFS4ERR_BADXDR;
			s->mask |= LC_SET_SIZE;
			break;
		case FATTR4_MODE: {
			uint32_t m;

			if (xdr_get_u32(&v, &m))
				return NFS4ERR_BADXDR;
			s->a.mode = m & 07777;
			s->mask |= LC_SET_MODE;
			break;
		}
		case FATTR4_OWNER:
		case FATTR4_OWNER_GROUP: {
			uint32_t id;
			int r;

			if (xdr_get_string(&v, buf, sizeof(buf), NFS4_OPAQUE_LIMIT))
				return NFS4ERR_BADXDR;
			if (!buf[0])
				return NFS4ERR_INVAL;      /* a zero-length utf8string (RFC 7530 12.7) */
			/* strict: a setter of an unknown name is told so, not given nobody */
			r = idmap_owner_to_id(map, n == FATTR4_OWNER ? IDMAP_USER : IDMAP_GROUP, buf, true, &id);
			if (r == -EAGAIN)
				return NFS4ERR_DELAY;
			if (r)
				return NFS4ERR_BADOWNER;
			if (n == FATTR4_OWNER) {
				s->a.uid = id;
				s->mask |= LC_SET_UID;
			} else {
				s->a.gid = id;
				s->mask |= LC_SET_GID;
			}
			break;
		}
		case FATTR4_ACL: {
			/* kept to be mapped once the object is known (a directory
			 * may have inheritable ACEs); its XDR checked here */
			uint32_t cnt, u;

			s->acl = v;
			s->has_acl = true;
			if (xdr_get_u32(&v, &cnt))
				return NFS4ERR_BADXDR;
			if (cnt > NFS4_ACL_MAX_ACES)
				return NFS4ERR_INVAL;
			for (uint32_t i = 0; i < cnt; i++)
				if (xdr_get_u32(&v, &u) || xdr_get_u32(&v, &u) || xdr_get_u32(&v, &u) ||
				    xdr_get_string(&v, buf, sizeof(buf), NFS4_OPAQUE_LIMIT))
					return NFS4ERR_BADXDR;
			break;
		}
		case FATTR4_TIME_ACCESS_SET:
			st = get_settime(&v, &s->a.atime, &now);
			s->mask |= now ? LC_SET_ATIME_NOW | LC_SET_ATIME : LC_SET_ATIME;
			break;
		case FATTR4_TIME_MODIFY_SET:
			st = get_settime(&v, &s->a.mtime, &now);
			s->mask |= now ? LC_SET_MTIME_NOW | LC_SET_MTIME : LC_SET_MTIME;
			break;
		default:
			return NFS4ERR_INVAL;   /* a read-only attribute */
		}
	}
	if (st)
		return st;
	if (v.err || xdr_dec_left(&v))
		return NFS4ERR_BADXDR;
	for (int i = 0; i < 3; i++)
		s->set[i] = bm.w[i];
	return NFS4_OK;
}

void nfs4ops_fill_src(struct nfs4_compound *cs, const struct nfs4_obj *o, const struct nfs4_fh *fh,
		      struct nfs4_attr_src *s)
{
	memset(s, 0, sizeof(*s));
	s->a = &o->attr;
	s->fh = fh;
	if (o->fi.kind == NFS4_FH_PSEUDO) {
		s->fsid_major = 1;
		s->fsid_minor = 0;
	} else {
		s->fsid_major = 0x4c4f4c49;  /* "LOLI" */
		s->fsid_minor = o->exp ? o->exp->id : 0;
	}
	s->mounted_on_fileid = o->attr.ino;
	s->lease_secs = (uint32_t)(cs->srv->p.lease_ns / 1000000000ull);
	{
		/* the filesystem's limit, which WRITE and SETATTR enforce (NFS4ERR_FBIG) */
		struct nfs4ops_ctx *c = nfs4ops_ctx(cs);

		s->maxfilesize = c && c->lc ? lc_max_file_size(c->lc) : 0;
	}
	s->minor = cs->minorversion;
	{
		struct nfs4ops_ctx *c = nfs4ops_ctx(cs);

		/* NULL: numeric strings (AUTH_SYS under nfs4_disable_idmapping) */
		if (c && c->idmap && !idmap_numeric_for(c->idmap, cs->cred ? cs->cred->flavor : RPC_AUTH_NONE))
			s->idmap = c->idmap;
	}
}

/* ---- ACLs ------------------------------------------------------------------------ */

void nfs4ops_fetch_acls(struct nfs4_compound *cs, const struct nfs4_obj *o, struct nfs4_acl_bufs *b,
			struct nfs4_attr_src *s)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	ssize_t n;

	memset(b, 0, sizeof(*b));
	if (!o->in || !c || !c->lc || S_ISLNK(o->attr.mode))
		return;
	/* anyone may read them (the MDS's xattr_perm) */
	b->acl = malloc(MDSP_XATTR_SIZE_MAX);
	if (b->acl && (n = lc_getxattr(c->lc, o->in, MDSP_XATTR_ACL_ACCESS, b->acl, MDSP_XATTR_SIZE_MAX, &o->cr)) > 0) {
		s->acl = b->acl;
		s->acl_len = (size_t)n;
	}
	if (!S_ISDIR(o->attr.mode))
		return;
	b->dacl = malloc(MDSP_XATTR_SIZE_MAX);
	if (b->dacl &&
	    (n = lc_getxattr(c->lc, o->in, MDSP_XATTR_ACL_DEFAULT, b->dacl, MDSP_XATTR_SIZE_MAX, &o->cr)) > 0) {
		s->dacl = b->dacl;
		s->dacl_len = (size_t)n;
	}
}

void nfs4ops_acl_bufs_free(struct nfs4_acl_bufs *b)
{
	free(b->acl);
	free(b->dacl);
}

/*
 * SETATTR of acl (nfsd4_set_nfs4_acl): mapped to an access ACL and, for a
 * directory, a default ACL (none given: the default goes), set as the
 * caller, so that the MDS checks ownership, keeps an ACL the mode can say
 * as the mode only and updates the mode's group class.
 */
uint32_t nfs4ops_set_acl(struct nfs4_compound *cs, const struct nfs4_obj *o, struct nfs4_sattr *sa)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	bool isdir = S_ISDIR(o->attr.mode);
	uint8_t *acl, *dacl;
	size_t len = 0, dlen = 0;
	uint32_t st;
	int r;

	if (S_ISLNK(o->attr.mode))
		return NFS4ERR_ATTRNOTSUPP;
	acl = malloc(NFS4_ACL_XATTR_MAX);
	dacl = malloc(NFS4_ACL_XATTR_MAX);
	if (!acl || !dacl) {
		st = NFS4ERR_RESOURCE;
		goto out;
	}
	st = nfs4_acl_decode(&sa->acl, isdir, c->idmap, acl, &len, dacl, &dlen);
	if (st)
		goto out;
	r = lc_setxattr(c->lc, o->in, MDSP_XATTR_ACL_ACCESS, acl, len, 0, &o->cr);
	if (!r && isdir) {
		if (dlen)
			r = lc_setxattr(c->lc, o->in, MDSP_XATTR_ACL_DEFAULT, dacl, dlen, 0, &o->cr);
		else if ((r = lc_removexattr(c->lc, o->in, MDSP_XATTR_ACL_DEFAULT, &o->cr)) == -ENODATA)
			r = 0;
	}
	st = r == -EINVAL ? NFS4ERR_ATTRNOTSUPP : nfs4_errno_to_status(r);
out:
	free(acl);
	free(dacl);
	return st;
}

/* ---- operations ------------------------------------------------------------------- */

NFS4_OP(getattr)
{
	struct nfs4_acl_bufs ab = { 0 };
	struct nfs4ops_ctx *c;
	struct xdr_bitmap bm;
	struct nfs4_obj o;
	struct nfs4_attr_src s;
	struct statvfs sfs;
	uint32_t st;

	if (xdr_get_bitmap(args, &bm))
		return NFS4ERR_BADXDR;
	if (nfs4_attr_write_only(&bm))
		return NFS4ERR_INVAL;
	st = nfs4ops_cur(cs, &o);
	if (st)
		return st;
	c = nfs4ops_ctx(cs);
	nfs4ops_fill_src(cs, &o, &cs->cfh, &s);
	if (nfs4_attr_want_statfs(&bm) && o.in && !lc_statfs(c->lc, o.in, &sfs))
		s.sfs = &sfs;
	if (is_set(bm.w, FATTR4_ACL))
		nfs4ops_fetch_acls(cs, &o, &ab, &s);
	if (o.in && (bm.w[0] & (BIT(FATTR4_CHANGE) | BIT(FATTR4_SIZE)))) {
		/* the cached attributes may lag a FUSE write of the same process: ask again */
		struct lc_attr fresh;

		if (!lc_getattr(c->lc, o.in, &o.cr, false, &fresh))
			o.attr = fresh;
		/* another client's write delegation: its holder knows better (CB_GETATTR) */
		if (S_ISREG(o.attr.mode))
			nfs4ops_deleg_getattr(cs, &o.attr);
	}
	nfs4_attr_encode(res, &bm, &s);
	nfs4ops_acl_bufs_free(&ab);
	nfs4ops_release(cs, &o);
	return res->err ? NFS4ERR_RESOURCE : NFS4_OK;
}

/*
 * A SETATTR of the size writes the file (RFC 7530 9.1.4.6, 16.32.4): a
 * real stateid must be an open for writing of this file (or its lock
 * stateid); a special one is refused by an open that denies writes
 * (NFS4ERR_LOCKED), not by the grace period (as the I/O in ops_io.c).
 */
static uint32_t size_stateid(struct nfs4_compound *cs, const struct nfs4_stateid *sid, enum os_sid_kind kind,
			     const struct nfs4_obj *o)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct os_stid *s, *x;
	uint32_t st = NFS4_OK;

	pthread_mutex_lock(&c->st->lock);
	for (;;) {
		if (kind == OS_SID_REGULAR) {
			st = os_stid_check_locked(c->st, sid, cs->minorversion, cs->clp ? cs->clp->clientid : 0,
						  OS_KIND_ALL, &s);
			if (!st && s->file->ino != o->attr.ino)
				st = NFS4ERR_BAD_STATEID;
			if (!st && s->kind == OS_LOCK)
				s = s->open;
			if (!st && (!s || (cs->minorversion == 0 && !s->owner->confirmed)))
				st = NFS4ERR_BAD_STATEID;
			if (!st && !(s->access & OS_SHARE_ACCESS_WRITE))
				st = NFS4ERR_OPENMODE;
			break;
		}
		x = os_deny_conflict_locked(os_file_get_locked(c->st, o->attr.ino, false), NULL, OS_SHARE_ACCESS_WRITE);
		if (x && nfs4ops_courtesy_candidate(cs, x->clientid)) {
			pthread_mutex_unlock(&c->st->lock);
			nfs4ops_courtesy_retry(cs);
			pthread_mutex_lock(&c->st->lock);
			continue;
		}
		st = x ? NFS4ERR_LOCKED : NFS4_OK;
		break;
	}
	pthread_mutex_unlock(&c->st->lock);
	return nfs4ops_stateid_verdict(cs, sid, st);
}

NFS4_OP(setattr)
{
	struct nfs4ops_ctx *c;
	enum os_sid_kind kind;
	struct nfs4_stateid sid;
	struct nfs4_sattr sa;
	struct nfs4_obj o;
	struct lc_attr out;
	uint32_t st, zero[3] = { 0 };
	int r;

	cs->body_on_error = true;
	if (nfs4_get_stateid(args, &sid)) {
		xdr_put_bitmap(res, zero, 3);
		return NFS4ERR_BADXDR;
	}
	st = nfs4_sattr_decode(args, nfs4ops_ctx(cs)->idmap, &sa);
	if (st) {
		xdr_put_bitmap(res, zero, 3);
		return st;
	}
	st = nfs4ops_stateid_in(cs, &sid, &kind);
	if (st) {
		xdr_put_bitmap(res, zero, 3);
		return st;
	}
	st = nfs4ops_cur(cs, &o);
	if (!st)
		st = nfs4ops_writable(&o);
	if (!st && (sa.mask & LC_SET_SIZE)) {
		if (S_ISDIR(o.attr.mode))
			st = NFS4ERR_ISDIR;
		else if (!S_ISREG(o.attr.mode))
			st = NFS4ERR_INVAL;
	}
	if (!st && (sa.mask & LC_SET_SIZE))
		st = size_stateid(cs, &sid, kind, &o);
	/* size, mode, owner: what a delegation lets its holder cache; another
	 * client's is recalled first (the holder's own change is its own) */
	if (!st && o.in && (sa.mask & (LC_SET_SIZE | LC_SET_MODE | LC_SET_UID | LC_SET_GID)))
		st = nfs4ops_deleg_conflict(cs, o.attr.ino, 0, &sid);
	if (!st && sa.mask) {
		c = nfs4ops_ctx(cs);
		r = lc_setattr(c->lc, o.in, &sa.a, sa.mask, &o.cr, &out);
		st = nfs4_errno_to_status(r);
	}
	/* after the mode, as knfsd (nfsd_setattr, then the ACLs) */
	if (!st && sa.has_acl)
		st = o.in ? nfs4ops_set_acl(cs, &o, &sa) : NFS4ERR_ATTRNOTSUPP;
	nfs4ops_release(cs, &o);
	xdr_put_bitmap(res, st ? zero : sa.set, 3);
	return st;
}

static uint32_t verify_common(struct nfs4_compound *cs, struct xdr_dec *args, bool *same)
{
	struct nfs4_acl_bufs ab = { 0 };
	struct nfs4ops_ctx *c;
	struct xdr_bitmap bm;
	const uint8_t *vals;
	uint32_t vlen, sup[3], st;
	struct nfs4_obj o;
	struct nfs4_attr_src s;
	struct statvfs sfs;
	struct xdr_enc e;

	if (xdr_get_bitmap(args, &bm) || xdr_get_opaque(args, &vals, &vlen, UINT32_MAX))
		return NFS4ERR_BADXDR;
	nfs4_attr_supported(sup);
	if (bm.extra)
		return NFS4ERR_ATTRNOTSUPP;
	for (int i = 0; i < 3; i++)
		if (bm.w[i] & ~sup[i])
			return NFS4ERR_ATTRNOTSUPP;
	if (is_set(bm.w, FATTR4_RDATTR_ERROR) || is_set(bm.w, FATTR4_TIME_ACCESS_SET) ||
	    is_set(bm.w, FATTR4_TIME_MODIFY_SET))
		return NFS4ERR_INVAL;
	st = nfs4ops_cur(cs, &o);
	if (st)
		return st;
	c = nfs4ops_ctx(cs);
	nfs4ops_fill_src(cs, &o, &cs->cfh, &s);
	if (nfs4_attr_want_statfs(&bm) && o.in && !lc_statfs(c->lc, o.in, &sfs))
		s.sfs = &sfs;
	if (is_set(bm.w, FATTR4_ACL))
		nfs4ops_fetch_acls(cs, &o, &ab, &s);
	xdr_enc_init(&e, 64 * 1024);
	put_vals(&e, bm.w, &s);
	*same = !e.err && e.len == vlen && (vlen == 0 || !memcmp(e.buf, vals, vlen));
	xdr_enc_free(&e);
	nfs4ops_acl_bufs_free(&ab);
	nfs4ops_release(cs, &o);
	return NFS4_OK;
}

NFS4_OP(verify)
{
	bool same = false;
	uint32_t st = verify_common(cs, args, &same);

	(void)res;
	if (st)
		return st;
	return same ? NFS4_OK : NFS4ERR_NOT_SAME;
}

NFS4_OP(nverify)
{
	bool same = false;
	uint32_t st = verify_common(cs, args, &same);

	(void)res;
	if (st)
		return st;
	return same ? NFS4ERR_SAME : NFS4_OK;
}

#define ACCESS4_READ 0x01
#define ACCESS4_LOOKUP 0x02
#define ACCESS4_MODIFY 0x04
#define ACCESS4_EXTEND 0x08
#define ACCESS4_DELETE 0x10
#define ACCESS4_EXECUTE 0x20

/* rwx bits @o's caller has on it: the client library's check, the MDS's
 * own (perm/perm.c), with the access ACL (root: rw always, x if anyone
 * has it) */
static unsigned int perm_bits(struct nfs4_compound *cs, const struct nfs4_obj *o)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	unsigned int p = 0;

	if (!o->in || !c || !c->lc) {
		/* the pseudo filesystem: mode bits */
		struct mdsp_inode mi = { .mode = o->attr.mode, .uid = o->attr.uid, .gid = o->attr.gid };
		struct mdsp_caller mc = { .uid = o->cr.uid, .gid = o->cr.gid };

		for (int i = 0; i < o->cr.ngroups && i < LC_MAX_GROUPS && i < MDSP_MAX_GROUPS; i++)
			mc.groups[mc.ngroups++] = o->cr.groups[i];
		for (int b = 4; b; b >>= 1)
			if (mdsp_may_access(&mi, &mc, b) == 0)
				p |= (unsigned int)b;
		return p;
	}
	for (int b = 4; b; b >>= 1)
		if (lc_access(c->lc, o->in, b, &o->cr) == 0)
			p |= (unsigned int)b;
	return p;
}

NFS4_OP(access)
{
	struct nfs4_obj o;
	uint32_t want, sup, got = 0, st;
	unsigned int p;

	if (xdr_get_u32(args, &want))
		return NFS4ERR_BADXDR;
	st = nfs4ops_cur(cs, &o);
	if (st)
		return st;
	if (S_ISDIR(o.attr.mode))
		sup = ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_DELETE;
	else
		sup = ACCESS4_READ | ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_EXECUTE;
	sup &= want;
	p = perm_bits(cs, &o);
	if (p & 4)
		got |= ACCESS4_READ;
	if (p & 1)
		got |= ACCESS4_LOOKUP | ACCESS4_EXECUTE;
	if ((p & 2) && !nfs4ops_writable(&o))
		got |= ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_DELETE;
	nfs4ops_release(cs, &o);
	xdr_put_u32(res, sup);
	xdr_put_u32(res, sup & got);
	return NFS4_OK;
}
