/*
 * ops_dir.c - CREATE (directories, symlinks, devices, fifos, sockets),
 * REMOVE, RENAME, LINK, READLINK and READDIR.
 *
 * READDIR cookies are the client library's resume cookies plus 2 (0 is
 * "from the start"; 1 and 2 are reserved for "." and ".." by RFC 8881
 * 18.23.3, which we never return).  The library keeps cookies valid across
 * inserts and removes, so the cookie verifier is constant (zero, as knfsd
 * answers).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "common/log.h"
#include "nfs_gw/nfs4/ops.h"
#include "nfs_gw/nfs4/ops_int.h"

#define COOKIE_BASE 2

/* The current filehandle as a writable directory. */
static uint32_t cur_dir(struct nfs4_compound *cs, struct nfs4_obj *o, bool write)
{
	uint32_t st = nfs4ops_cur(cs, o);

	if (st)
		return st;
	if (!S_ISDIR(o->attr.mode))
		st = NFS4ERR_NOTDIR;
	else if (write)
		st = nfs4ops_writable(o);
	if (st)
		nfs4ops_release(cs, o);
	return st;
}

static uint64_t dir_change(struct nfs4ops_ctx *c, struct nfs4_obj *d)
{
	struct lc_attr a;

	if (d->in && !lc_getattr(c->lc, d->in, &d->cr, true, &a))
		return a.change;
	return d->attr.change;
}

NFS4_OP(create)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	char name[NFS4_MAX_NAME + 1], *target = NULL;
	uint32_t type, st, major = 0, minor = 0;
	struct nfs4_sattr sa;
	struct nfs4_obj d;
	struct lc_inode *in = NULL;
	struct lc_attr a;
	uint64_t before;
	mode_t mode;
	int r, mask;

	if (xdr_get_u32(args, &type))
		return NFS4ERR_BADXDR;
	switch (type) {
	case NF4LNK:
		target = malloc(4097);
		if (!target)
			return NFS4ERR_RESOURCE;
		if (xdr_get_string(args, target, 4097, 4096)) {
			free(target);
			return NFS4ERR_BADXDR;
		}
		if (!*target) {
			free(target);
			return NFS4ERR_INVAL;
		}
		break;
	case NF4BLK:
	case NF4CHR:
		if (xdr_get_u32(args, &major) || xdr_get_u32(args, &minor))
			return NFS4ERR_BADXDR;
		break;
	case NF4DIR:
	case NF4SOCK:
	case NF4FIFO:
		break;
	case NF4REG:
	case NF4ATTRDIR:
	case NF4NAMEDATTR:
		return NFS4ERR_BADTYPE;       /* RFC 7530 16.4.4: OPEN makes files; no named attributes */
	default:
		return NFS4ERR_BADXDR;
	}
	st = nfs4_get_component(args, name, sizeof(name));
	if (!st)
		st = nfs4_sattr_decode(args, nfs4ops_ctx(cs)->idmap, &sa);
	if (!st)
		st = cur_dir(cs, &d, true);
	if (st) {
		free(target);
		return st;
	}
	before = d.attr.change;
	mode = (sa.mask & LC_SET_MODE) ? sa.a.mode : (type == NF4DIR ? 0755 : 0644);
	switch (type) {
	case NF4DIR:
		r = lc_mkdir(c->lc, d.in, name, mode, &d.cr, &a, &in);
		break;
	case NF4LNK:
		r = lc_symlink(c->lc, d.in, name, target, &d.cr, &a, &in);
		break;
	case NF4BLK:
		r = lc_mknod(c->lc, d.in, name, S_IFBLK | mode, makedev(major, minor), &d.cr, &a, &in);
		break;
	case NF4CHR:
		r = lc_mknod(c->lc, d.in, name, S_IFCHR | mode, makedev(major, minor), &d.cr, &a, &in);
		break;
	case NF4SOCK:
		r = lc_mknod(c->lc, d.in, name, S_IFSOCK | mode, 0, &d.cr, &a, &in);
		break;
	default:
		r = lc_mknod(c->lc, d.in, name, S_IFIFO | mode, 0, &d.cr, &a, &in);
		break;
	}
	free(target);
	if (r) {
		nfs4ops_release(cs, &d);
		return nfs4_errno_to_status(r);
	}
	mask = sa.mask & ~LC_SET_MODE & ~LC_SET_SIZE;
	if (type == NF4LNK)
		mask &= ~(LC_SET_ATIME | LC_SET_MTIME | LC_SET_ATIME_NOW | LC_SET_MTIME_NOW);
	if (mask)
		lc_setattr(c->lc, in, &sa.a, mask, &d.cr, &a);
	/* an acl among the create attributes, as knfsd: set on the new
	 * object, left out of attrset when that fails (symlinks have none) */
	if (sa.has_acl) {
		struct nfs4_obj no = { .in = in, .attr = a, .cr = d.cr };

		if (nfs4ops_set_acl(cs, &no, &sa))
			sa.set[0] &= ~(1u << FATTR4_ACL);
		else
			lc_getattr(c->lc, in, &d.cr, true, &a);
	}
	nfs4ops_put_cinfo(res, before, dir_change(c, &d));
	sa.set[0] &= ~(1u << FATTR4_SIZE);
	xdr_put_bitmap(res, sa.set, 3);
	nfs4ops_set_cfh(cs, d.exp, &a);
	lc_put(c->lc, in);
	nfs4ops_release(cs, &d);
	return NFS4_OK;
}

NFS4_OP(remove)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	char name[NFS4_MAX_NAME + 1];
	struct nfs4_obj d;
	struct lc_inode *in;
	struct lc_attr a;
	uint64_t before;
	uint32_t st;
	int r;

	st = nfs4_get_component(args, name, sizeof(name));
	if (!st)
		st = cur_dir(cs, &d, true);
	if (st)
		return st;
	before = d.attr.change;
	r = lc_lookup(c->lc, d.in, name, &d.cr, &a, &in);
	if (!r && !S_ISDIR(a.mode) && (st = nfs4ops_deleg_conflict(cs, a.ino, 0, NULL))) {
		/* another client's delegation: recalled, the client retries */
		lc_put(c->lc, in);
		nfs4ops_release(cs, &d);
		return st;
	}
	if (!r) {
		r = S_ISDIR(a.mode) ? lc_rmdir(c->lc, d.in, name, &d.cr) : lc_unlink(c->lc, d.in, name, &d.cr);
		lc_put(c->lc, in);
	}
	if (!r)
		nfs4ops_put_cinfo(res, before, dir_change(c, &d));
	nfs4ops_release(cs, &d);
	return nfs4_errno_to_status(r);
}

/* RENAME: a delegation on what @name in @d names now (not a directory) is in the way. */
static uint32_t rename_conflict(struct nfs4_compound *cs, struct nfs4_obj *d, const char *name)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct lc_inode *in;
	struct lc_attr a;
	uint32_t st = NFS4_OK;

	if (lc_lookup(c->lc, d->in, name, &d->cr, &a, &in))
		return NFS4_OK;          /* lc_rename says what is wrong with it */
	if (!S_ISDIR(a.mode))
		st = nfs4ops_deleg_conflict(cs, a.ino, 0, NULL);
	lc_put(c->lc, in);
	return st;
}

NFS4_OP(rename)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	char oldname[NFS4_MAX_NAME + 1], newname[NFS4_MAX_NAME + 1];
	struct nfs4_obj src, dst;
	uint64_t sb, db;
	uint32_t st;
	int r;

	st = nfs4_get_component(args, oldname, sizeof(oldname));
	if (!st)
		st = nfs4_get_component(args, newname, sizeof(newname));
	if (st)
		return st;
	if (!cs->sfh.len)
		return NFS4ERR_NOFILEHANDLE;
	st = nfs4ops_resolve(cs, &cs->sfh, &src);
	if (st)
		return st;
	if (!S_ISDIR(src.attr.mode) || nfs4ops_writable(&src)) {
		st = !S_ISDIR(src.attr.mode) ? NFS4ERR_NOTDIR : NFS4ERR_ROFS;
		nfs4ops_release(cs, &src);
		return st;
	}
	st = cur_dir(cs, &dst, true);
	if (st) {
		nfs4ops_release(cs, &src);
		return st;
	}
	if (src.exp != dst.exp) {
		nfs4ops_release(cs, &src);
		nfs4ops_release(cs, &dst);
		return NFS4ERR_XDEV;
	}
	/* the file renamed and one it replaces: other clients' delegations go first */
	st = rename_conflict(cs, &src, oldname);
	if (!st)
		st = rename_conflict(cs, &dst, newname);
	if (st) {
		nfs4ops_release(cs, &src);
		nfs4ops_release(cs, &dst);
		return st;
	}
	sb = src.attr.change;
	db = dst.attr.change;
	r = lc_rename(c->lc, src.in, oldname, dst.in, newname, 0, &dst.cr);
	if (!r) {
		nfs4ops_put_cinfo(res, sb, dir_change(c, &src));
		nfs4ops_put_cinfo(res, db, dir_change(c, &dst));
	}
	nfs4ops_release(cs, &src);
	nfs4ops_release(cs, &dst);
	return nfs4_errno_to_status(r);
}

NFS4_OP(link)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	char name[NFS4_MAX_NAME + 1];
	struct nfs4_obj src, dst;
	struct lc_attr a;
	uint64_t db;
	uint32_t st;
	int r;

	st = nfs4_get_component(args, name, sizeof(name));
	if (st)
		return st;
	if (!cs->sfh.len)
		return NFS4ERR_NOFILEHANDLE;
	st = nfs4ops_resolve(cs, &cs->sfh, &src);
	if (st)
		return st;
	if (!src.in || S_ISDIR(src.attr.mode)) {
		nfs4ops_release(cs, &src);
		return NFS4ERR_ISDIR;
	}
	st = cur_dir(cs, &dst, true);
	if (st) {
		nfs4ops_release(cs, &src);
		return st;
	}
	if (src.exp != dst.exp) {
		nfs4ops_release(cs, &src);
		nfs4ops_release(cs, &dst);
		return NFS4ERR_XDEV;
	}
	/* a new name changes the file's nlink and ctime: another client's delegation goes first */
	st = nfs4ops_deleg_conflict(cs, src.attr.ino, 0, NULL);
	if (st) {
		nfs4ops_release(cs, &src);
		nfs4ops_release(cs, &dst);
		return st;
	}
	db = dst.attr.change;
	r = lc_link(c->lc, src.in, dst.in, name, &dst.cr, &a);
	if (!r)
		nfs4ops_put_cinfo(res, db, dir_change(c, &dst));
	nfs4ops_release(cs, &src);
	nfs4ops_release(cs, &dst);
	return nfs4_errno_to_status(r);
}

NFS4_OP(readlink)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct nfs4_obj o;
	char buf[4097];
	uint32_t st;
	ssize_t n;

	(void)args;
	st = nfs4ops_cur(cs, &o);
	if (st)
		return st;
	if (!S_ISLNK(o.attr.mode)) {
		nfs4ops_release(cs, &o);
		return NFS4ERR_INVAL;
	}
	n = lc_readlink(c->lc, o.in, buf, sizeof(buf), &o.cr);
	nfs4ops_release(cs, &o);
	if (n < 0)
		return nfs4_errno_to_status((int)n);
	if ((size_t)n >= sizeof(buf))
		return NFS4ERR_NAMETOOLONG;
	xdr_put_opaque(res, buf, (uint32_t)n);
	return NFS4_OK;
}

/* ---- READDIR ------------------------------------------------------------------- */

struct rd {
	struct nfs4_compound *cs;
	struct nfs4_obj *dir;
	struct xdr_enc *res;
	const struct xdr_bitmap *bm;
	size_t limit;                    /* res->len may not pass this */
	unsigned int n;
	bool full;
	uint64_t epoch;                  /* lc_ns_epoch() before the listing (the subtree check's notes) */
};

static int rd_entry(struct rd *rd, const char *name, const struct lc_attr *a, struct lc_inode *in, uint64_t cookie,
		    const struct nfs4_fh *fh, bool pseudo)
{
	struct xdr_enc *e = rd->res;
	size_t mark = e->len;
	struct nfs4_acl_bufs ab = { 0 };
	struct nfs4_attr_src s;
	struct nfs4_obj o;

	memset(&o, 0, sizeof(o));
	o.attr = *a;
	o.exp = rd->dir->exp;
	o.fi.kind = pseudo ? NFS4_FH_PSEUDO : NFS4_FH_EXPORT;
	nfs4ops_fill_src(rd->cs, &o, fh, &s);
	/* acl asked for: an entry that may have one reads it (no lock held here) */
	if (in && a->may_acl && (rd->bm->w[0] & (1u << FATTR4_ACL))) {
		o.in = in;
		o.cr = rd->dir->cr;
		nfs4ops_fetch_acls(rd->cs, &o, &ab, &s);
	}
	xdr_put_u32(e, 1);               /* value follows */
	xdr_put_u64(e, cookie);
	xdr_put_string(e, name);
	nfs4_attr_encode(e, rd->bm, &s);
	nfs4ops_acl_bufs_free(&ab);
	if (e->err || e->len > rd->limit) {
		xdr_enc_truncate(e, mark);
		rd->full = true;
		return 1;
	}
	rd->n++;
	return 0;
}

static int rd_cb(void *arg, const char *name, struct lc_inode *in, const struct lc_attr *attr, uint64_t next)
{
	struct rd *rd = arg;
	struct nfs4ops_ctx *c = nfs4ops_ctx(rd->cs);
	struct nfs4_fhinfo fi = {
		.kind = NFS4_FH_EXPORT,
		.export_id = rd->dir->exp->id,
		.fsid = rd->dir->exp->id,
		.ino = attr->ino,
		.gen = attr->generation,
	};
	struct nfs4_fh fh;
	int r;

	nfs4_fh_encode(&fi, &fh);
	/* a handle found by name in a checked directory: inside (hard links too) */
	if (strcmp(name, ".") && strcmp(name, ".."))
		nfs_export_note_inside(rd->cs->exports, rd->dir->exp, attr->ino, rd->epoch, rd->dir->attr.ino, name);
	r = rd_entry(rd, name, attr, in, next + COOKIE_BASE, &fh, false);
	if (!r && in)
		lc_put(c->lc, in);
	return r;
}

static uint32_t readdir_pseudo(struct nfs4_compound *cs, struct rd *rd, uint64_t cookie, bool *eof)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	const struct nfs_exports *x = cs->exports;
	uint32_t id = (uint32_t)rd->dir->fi.ino;

	*eof = true;
	for (unsigned int i = 0; i < x->npnodes; i++) {
		const struct nfs_pnode *pn = &x->pn[i];
		struct lc_attr a;
		struct nfs4_fh fh;
		struct nfs4_fhinfo fi = { .kind = NFS4_FH_PSEUDO, .ino = pn->id };

		if (pn->parent != id || pn->id == id || i + 1 + COOKIE_BASE <= cookie)
			continue;
		memset(&a, 0, sizeof(a));
		a.ino = pn->id;
		a.mode = S_IFDIR | 0555;
		a.nlink = 2;
		a.change = (uint64_t)cs->srv->boot_sec;
		a.atime.tv_sec = a.mtime.tv_sec = a.ctime.tv_sec = cs->srv->boot_sec;
		if (pn->exp) {
			uint64_t ino = 0, gen = 0;
			struct lc_inode *in;

			if (!c->lc || !nfs_export_allows(pn->exp, &cs->req->xprt->peer))
				continue;
			if (!nfs_export_root(cs->exports, pn->exp, c->lc, &ino, &gen) &&
			    !lc_lookup_ino(c->lc, ino, gen, &a, &in))
				lc_put(c->lc, in);
			fi.kind = NFS4_FH_EXPORT;
			fi.export_id = pn->exp->id;
			fi.fsid = pn->exp->id;
			fi.ino = ino;
			fi.gen = gen;
		}
		nfs4_fh_encode(&fi, &fh);
		if (rd_entry(rd, pn->name, &a, NULL, i + 1 + COOKIE_BASE, &fh, !pn->exp)) {
			*eof = false;
			break;
		}
	}
	return NFS4_OK;
}

NFS4_OP(readdir)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	uint8_t verf[NFS4_VERIFIER_SIZE];
	static const uint8_t zero[NFS4_VERIFIER_SIZE];
	uint64_t cookie;
	uint32_t dircount, maxcount, st;
	struct xdr_bitmap bm;
	struct nfs4_obj d;
	struct rd rd;
	size_t start;
	bool eof = false;
	int r;

	if (xdr_get_u64(args, &cookie) || xdr_get_fixed(args, verf, sizeof(verf)) || xdr_get_u32(args, &dircount) ||
	    xdr_get_u32(args, &maxcount) || xdr_get_bitmap(args, &bm))
		return NFS4ERR_BADXDR;
	if (nfs4_attr_write_only(&bm))
		return NFS4ERR_INVAL;
	if (cookie == 1 || cookie == 2)
		return NFS4ERR_BAD_COOKIE;
	if (cookie != 0 && memcmp(verf, zero, sizeof(verf)))
		return NFS4ERR_NOT_SAME;
	st = cur_dir(cs, &d, false);
	if (st)
		return st;
	start = res->len;
	if (maxcount > res->max - start)
		maxcount = (uint32_t)(res->max - start);
	if (maxcount < 16) {
		nfs4ops_release(cs, &d);
		return NFS4ERR_TOOSMALL;
	}
	xdr_put_fixed(res, zero, sizeof(zero));
	memset(&rd, 0, sizeof(rd));
	rd.cs = cs;
	rd.dir = &d;
	rd.res = res;
	rd.bm = &bm;
	rd.limit = start + maxcount - 8; /* room for the list end and eof */
	rd.epoch = c->lc ? lc_ns_epoch(c->lc) : 0;
	if (d.fi.kind == NFS4_FH_PSEUDO) {
		st = readdir_pseudo(cs, &rd, cookie, &eof);
	} else {
		r = lc_readdir(c->lc, d.in, cookie ? cookie - COOKIE_BASE : 0, true, &d.cr, rd_cb, &rd, &eof);
		st = nfs4_errno_to_status(r);
		if (rd.full)
			eof = false;
	}
	nfs4ops_release(cs, &d);
	if (st)
		return st;
	if (rd.n == 0 && !eof)
		return NFS4ERR_TOOSMALL;
	xdr_put_u32(res, 0);
	xdr_put_bool(res, eof);
	return res->err ? NFS4ERR_RESOURCE : NFS4_OK;
}
