/*
 * nfs3_proc.c - the NFSv3 procedures (RFC 1813 section 3), NULL through
 * COMMIT, over the client library; the server's life cycle and its RPC
 * registration.
 *
 * Every procedure decodes its arguments (nfs3_xdr.c: GARBAGE_ARGS if they
 * do not parse), resolves its handles under the rules of the export they
 * name (nfs3_resolve: client address, privileged port, squashing), checks
 * the export is writable for the procedures that change something, and
 * answers with the status first and the attributes RFC 1813 asks for:
 * post-operation attributes, and for the procedures that change a file or
 * directory weak cache consistency data (its size/mtime/ctime before, from
 * the attributes cached when the request began, and its attributes after,
 * which the MDS reply's trace has just refreshed).  A v3 client that sees
 * "before" match what it cached knows the change was its own.
 *
 * The non-idempotent procedures (SETATTR, WRITE, CREATE, MKDIR, SYMLINK,
 * MKNOD, REMOVE, RMDIR, RENAME, LINK: knfsd's choice) go through the
 * duplicate reply cache; COMMIT, READ and the lookups do not.
 *
 * READDIR and READDIRPLUS return "." and ".." first (cookies 1 and 2; the
 * Linux v3 client does not make them up, unlike v4) and then the client
 * library's entries with its resume cookies plus 2, which stay valid
 * across inserts and removes: the cookie verifier is constant (zero).
 *
 * Writes: UNSTABLE is buffered in the client library; DATA_SYNC and
 * FILE_SYNC are written through before the reply; COMMIT flushes.  The
 * write verifier is the gateway's start time, so after a restart a client
 * sees a new verifier and sends its uncommitted data again.
 *
 * Every procedure is counted and timed (perf group "nfs3_ops").
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "common/config.h"
#include "client/client.h"
#include "common/log.h"
#include "common/perf.h"
#include "common/time.h"
#include "nfs_gw/nfs3/nfs3_int.h"
#include "nfs_gw/nfs4/fh.h"

#define COOKIE_BASE 2
#define NFS3_MAXFILESIZE ((uint64_t)INT64_MAX)

/* ---- shared helpers ------------------------------------------------------------ */

void nfs3_make_fh(const struct nfs_export *exp, uint64_t ino, uint64_t gen, struct nfs3_fh *fh)
{
	struct nfs4_fhinfo fi = { .kind = NFS4_FH_EXPORT, .export_id = exp->id, .fsid = exp->id, .ino = ino,
				  .gen = gen };
	struct nfs4_fh f4;

	nfs4_fh_encode(&fi, &f4);
	memcpy(fh->data, f4.data, f4.len);
	fh->len = f4.len;
}

uint32_t nfs3_export_ok(struct nfs3_req *r, const struct nfs_export *e)
{
	if (!nfs_export_allows(e, &r->req->xprt->peer)) {
		dout(NFS, 1, "%s: not allowed by export %u (%s)", r->req->xprt->peer_str, e->id, e->path);
		return NFS3ERR_ACCES;
	}
	if (!e->insecure && rpc_xprt_peer_port(r->req->xprt) >= 1024) {
		dout(NFS, 1, "%s: unprivileged port, export %u (%s) is secure", r->req->xprt->peer_str, e->id,
		     e->path);
		return NFS3ERR_PERM;
	}
	return NFS3_OK;
}

uint32_t nfs3_resolve(struct nfs3_req *r, const struct nfs3_fh *fh, struct nfs3_obj *o)
{
	struct nfs4_fhinfo fi;
	struct nfs4_fh f4;
	uint32_t st;
	int e;

	memset(o, 0, sizeof(*o));
	if (fh->len != NFS4_FH_WIRE_LEN)
		return NFS3ERR_BADHANDLE;
	memcpy(f4.data, fh->data, fh->len);
	f4.len = fh->len;
	if (nfs4_fh_decode(&f4, &fi) != NFS4_OK)
		return NFS3ERR_BADHANDLE;
	if (fi.kind != NFS4_FH_EXPORT)
		return NFS3ERR_STALE;    /* an NFSv4 pseudo-fs directory: not in v3's namespace */
	o->exp = nfs_export_by_id(r->x, fi.export_id);
	if (!o->exp || fi.fsid != o->exp->id)
		return NFS3ERR_STALE;
	st = nfs3_export_ok(r, o->exp);
	if (st)
		return st;
	if (!nfs_export_sec_ok(o->exp, &r->req->call.cred)) {
		/* knfsd: an RPC-level AUTH_TOOWEAK, so the client knows to use
		 * another flavour (MOUNT's reply lists them) */
		dout(NFS, 1, "%s: flavor %u is not one of export %u's", r->req->xprt->peer_str,
		     rpc_cred_pseudoflavor(&r->req->call.cred), o->exp->id);
		r->req->auth_stat = RPC_AUTH_TOOWEAK;
		return NFS3ERR_ACCES;
	}
	if (!r->s->lc)
		return NFS3ERR_SERVERFAULT;
	nfs_export_cred(o->exp, &r->req->call.cred, &o->cr);
	e = lc_lookup_ino(r->s->lc, fi.ino, fi.gen, &o->attr, &o->in);
	if (e) {
		o->in = NULL;
		return (e == -ENOENT || e == -ESTALE) ? NFS3ERR_STALE : nfs3_errno(e);
	}
	/* the inode must lie below the export the handle names (export/subtree.c) */
	e = nfs_export_contains(r->x, o->exp, r->s->lc, o->in, o->attr.ino);
	if (e) {
		if (e == -ESTALE)
			dout(NFS, 1, "%s: handle of inode %" PRIx64 " outside export %u (%s): STALE",
			     r->req->xprt->peer_str, o->attr.ino, o->exp->id, o->exp->path);
		lc_put(r->s->lc, o->in);
		o->in = NULL;
		return e == -ESTALE ? NFS3ERR_STALE : nfs3_errno(e);
	}
	return NFS3_OK;
}

void nfs3_release(struct nfs3_req *r, struct nfs3_obj *o)
{
	if (o->in)
		lc_put(r->s->lc, o->in);
	o->in = NULL;
}

static uint32_t ftype(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG: return NF3REG;
	case S_IFDIR: return NF3DIR;
	case S_IFBLK: return NF3BLK;
	case S_IFCHR: return NF3CHR;
	case S_IFLNK: return NF3LNK;
	case S_IFSOCK: return NF3SOCK;
	default: return NF3FIFO;
	}
}

static void time3(const struct timespec *ts, struct nfs3_time *t)
{
	t->sec = (uint32_t)ts->tv_sec;
	t->nsec = (uint32_t)ts->tv_nsec;
}

static void fattr_of(const struct nfs_export *exp, const struct lc_attr *a, struct nfs3_fattr *f)
{
	memset(f, 0, sizeof(*f));
	f->type = ftype(a->mode);
	f->mode = a->mode & 07777;
	f->nlink = a->nlink;
	f->uid = a->uid;
	f->gid = a->gid;
	f->size = a->size;
	f->used = a->blocks * 512;
	f->rdev_major = major(a->rdev);
	f->rdev_minor = minor(a->rdev);
	f->fsid = exp->id;
	f->fileid = a->ino;
	time3(&a->atime, &f->atime);
	time3(&a->mtime, &f->mtime);
	time3(&a->ctime, &f->ctime);
}

static void wcc_of(const struct lc_attr *a, struct nfs3_wcc_attr *w)
{
	w->size = a->size;
	time3(&a->mtime, &w->mtime);
	time3(&a->ctime, &w->ctime);
}

/* Attributes of @in now (cached, or refreshed by the MDS reply just had). */
static bool attr_now(struct nfs3_req *r, struct nfs3_obj *o, struct lc_inode *in, struct nfs3_fattr *f)
{
	struct lc_attr a;

	if (!in || lc_getattr(r->s->lc, in, &o->cr, false, &a))
		return false;
	fattr_of(o->exp, &a, f);
	return true;
}

static void put_obj_attr(struct nfs3_req *r, struct xdr_enc *e, struct nfs3_obj *o)
{
	struct nfs3_fattr f;

	nfs3_put_post_op_attr(e, attr_now(r, o, o->in, &f) ? &f : NULL);
}

/* wcc_data of @o: before from o->attr (what it was when resolved), after now. */
static void put_obj_wcc(struct nfs3_req *r, struct xdr_enc *e, struct nfs3_obj *o)
{
	struct nfs3_wcc_attr pre;
	struct nfs3_fattr post;

	if (!o->in) {
		nfs3_put_wcc(e, NULL, NULL);
		return;
	}
	wcc_of(&o->attr, &pre);
	nfs3_put_wcc(e, &pre, attr_now(r, o, o->in, &post) ? &post : NULL);
}

static uint32_t writable(const struct nfs3_obj *o)
{
	return o->exp->ro ? NFS3ERR_ROFS : NFS3_OK;
}

/* A name from the wire as a C string: checks the protocol's rules. */
static uint32_t get_name(const uint8_t *p, uint32_t len, char *buf)
{
	if (len == 0)
		return NFS3ERR_ACCES;    /* knfsd: an empty name is not found... nor allowed */
	if (len > NFS3_MAXNAMLEN)
		return NFS3ERR_NAMETOOLONG;
	if (memchr(p, '/', len) || memchr(p, 0, len))
		return NFS3ERR_ACCES;
	memcpy(buf, p, len);
	buf[len] = 0;
	return NFS3_OK;
}

static void lc_attr_from_sattr(const struct nfs3_sattr *sa, struct lc_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->mode = sa->mode & 07777;
	a->uid = sa->uid;
	a->gid = sa->gid;
	a->size = sa->size;
	a->atime.tv_sec = sa->atime.sec;
	a->atime.tv_nsec = sa->atime.nsec;
	a->mtime.tv_sec = sa->mtime.sec;
	a->mtime.tv_nsec = sa->mtime.nsec;
}

/* Set what @sa asks for beyond @skip (what the create itself applied). */
static int apply_sattr(struct nfs3_req *r, struct lc_inode *in, const struct lc_cred *cr, const struct nfs3_sattr *sa,
		       int skip)
{
	struct lc_attr a;
	int mask = sa->mask & ~skip;

	if (!mask)
		return 0;
	lc_attr_from_sattr(sa, &a);
	return lc_setattr(r->s->lc, in, &a, mask, cr, NULL);
}

/* ---- procedures --------------------------------------------------------------- */

typedef int (*proc_fn)(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res);

#define GARBAGE RPC_GARBAGE_ARGS

/*
 * How every procedure opens: its arguments decoded by @decode (non-zero:
 * they do not decode, and the procedure answers GARBAGE_ARGS at once,
 * nothing resolved), then its object or directory looked up by @resolve
 * (nfs3_resolve or dir_of), whose status is the value: the procedure goes
 * on while it is NFS3_OK, puts it in its reply, and releases what
 * @resolve filled on every path (nfs3_release).
 */
#define PROC_OPEN(decode, resolve)         \
	({                                 \
		if (decode)                \
			return GARBAGE;    \
		(resolve);                 \
	})

static int p_getattr(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs3_fh fh;
	struct nfs3_obj o;
	struct nfs3_fattr f;
	uint32_t st;

	st = PROC_OPEN(nfs3_dec_fh(args, &fh), nfs3_resolve(r, &fh, &o));
	xdr_put_u32(res, st);
	if (!st) {
		fattr_of(o.exp, &o.attr, &f);
		nfs3_put_fattr(res, &f);
	}
	nfs3_release(r, &o);
	return RPC_SUCCESS;
}

static int p_setattr(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs3_setattr_args a;
	struct nfs3_obj o;
	struct lc_attr set;
	uint32_t st;
	int e;

	st = PROC_OPEN(nfs3_dec_setattr(args, &a), nfs3_resolve(r, &a.fh, &o));
	if (!st)
		st = writable(&o);
	if (!st && a.guard && ((uint32_t)o.attr.ctime.tv_sec != a.guard_ctime.sec ||
			       (uint32_t)o.attr.ctime.tv_nsec != a.guard_ctime.nsec))
		st = NFS3ERR_NOT_SYNC;
	if (!st && (a.sa.mask & LC_SET_SIZE) && !S_ISREG(o.attr.mode))
		st = S_ISDIR(o.attr.mode) ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
	if (!st && (a.sa.mask & LC_SET_SIZE) && a.sa.size > NFS3_MAXFILESIZE)
		st = NFS3ERR_FBIG;
	/* size, mode, owner: what an NFSv4 read delegation lets its holder
	 * cache; it is recalled first, and the client retries */
	if (!st && (a.sa.mask & (LC_SET_SIZE | LC_SET_MODE | LC_SET_UID | LC_SET_GID)) &&
	    lc_break_for_write(r->s->lc, lc_ino(o.in), false))
		st = NFS3ERR_JUKEBOX;
	if (!st && a.sa.mask) {
		lc_attr_from_sattr(&a.sa, &set);
		e = lc_setattr(r->s->lc, o.in, &set, a.sa.mask, &o.cr, NULL);
		st = nfs3_errno(e);
	}
	xdr_put_u32(res, st);
	put_obj_wcc(r, res, &o);
	nfs3_release(r, &o);
	return RPC_SUCCESS;
}

/* The directory @fh for a lookup-like procedure. */
static uint32_t dir_of(struct nfs3_req *r, const struct nfs3_fh *fh, struct nfs3_obj *d, bool write)
{
	uint32_t st = nfs3_resolve(r, fh, d);

	if (!st && !S_ISDIR(d->attr.mode))
		st = NFS3ERR_NOTDIR;
	if (!st && write)
		st = writable(d);
	return st;
}

static int p_lookup(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs3_diropargs a;
	struct nfs3_obj d;
	struct lc_inode *in = NULL;
	struct lc_attr at;
	struct nfs3_fattr f;
	struct nfs3_fh fh;
	char name[NFS3_MAXNAMLEN + 1];
	uint32_t st;
	int e = 0;

	st = PROC_OPEN(nfs3_dec_diropargs(args, &a), dir_of(r, &a.dir, &d, false));
	if (!st)
		st = get_name(a.name, a.name_len, name);
	if (!st) {
		if (!strcmp(name, ".")) {
			lc_get(d.in);
			in = d.in;
			at = d.attr;
		} else if (!strcmp(name, "..")) {
			uint64_t rino = 0, rgen = 0;

			/* never above the export's root */
			if (!nfs_export_root(r->x, d.exp, r->s->lc, &rino, &rgen) && rino == d.attr.ino) {
				lc_get(d.in);
				in = d.in;
				at = d.attr;
			} else {
				e = lc_lookup_parent(r->s->lc, d.in, &at, &in);
			}
		} else {
			uint64_t epoch = lc_ns_epoch(r->s->lc);

			e = lc_lookup(r->s->lc, d.in, name, &d.cr, &at, &in);
			/* found by name in a checked directory: inside (a hard link too) */
			if (!e)
				nfs_export_note_inside(r->x, d.exp, at.ino, epoch, d.attr.ino, name);
		}
		st = nfs3_errno(e);
	}
	xdr_put_u32(res, st);
	if (!st) {
		nfs3_make_fh(d.exp, at.ino, at.generation, &fh);
		nfs3_put_fh(res, &fh);
		fattr_of(d.exp, &at, &f);
		nfs3_put_post_op_attr(res, &f);
	}
	put_obj_attr(r, res, &d);
	if (in)
		lc_put(r->s->lc, in);
	nfs3_release(r, &d);
	return RPC_SUCCESS;
}

static int p_access(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs3_access_args a;
	struct nfs3_obj o;
	struct nfs3_fattr f;
	uint32_t st, got = 0;
	bool rd, wr, ex;

	st = PROC_OPEN(nfs3_dec_access(args, &a), nfs3_resolve(r, &a.fh, &o));
	if (!st) {
		struct lclient *lc = r->s->lc;

		rd = !lc_access(lc, o.in, R_OK, &o.cr);
		wr = !lc_access(lc, o.in, W_OK, &o.cr) && !o.exp->ro;
		ex = !lc_access(lc, o.in, X_OK, &o.cr);
		if (S_ISDIR(o.attr.mode)) {
			got |= rd ? ACCESS3_READ : 0;
			got |= ex ? ACCESS3_LOOKUP : 0;
			got |= wr ? ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE : 0;
		} else {
			got |= rd ? ACCESS3_READ : 0;
			got |= wr ? ACCESS3_MODIFY | ACCESS3_EXTEND : 0;
			got |= ex ? ACCESS3_EXECUTE : 0;
		}
		got &= a.access;
	}
	xdr_put_u32(res, st);
	if (!st) {
		fattr_of(o.exp, &o.attr, &f);
		nfs3_put_post_op_attr(res, &f);
		xdr_put_u32(res, got);
	} else {
		nfs3_put_post_op_attr(res, NULL);
	}
	nfs3_release(r, &o);
	return RPC_SUCCESS;
}

static int p_readlink(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs3_fh fh;
	struct nfs3_obj o;
	char *buf = NULL;
	ssize_t n = 0;
	uint32_t st;

	st = PROC_OPEN(nfs3_dec_fh(args, &fh), nfs3_resolve(r, &fh, &o));
	if (!st && !S_ISLNK(o.attr.mode))
		st = NFS3ERR_INVAL;
	if (!st) {
		buf = malloc(NFS3_MAXPATHLEN + 1);
		n = buf ? lc_readlink(r->s->lc, o.in, buf, NFS3_MAXPATHLEN + 1, &o.cr) : -ENOMEM;
		if (n < 0)
			st = nfs3_errno((int)n);
		else if (n > NFS3_MAXPATHLEN)
			st = NFS3ERR_NAMETOOLONG;
	}
	xdr_put_u32(res, st);
	put_obj_attr(r, res, &o);
	if (!st)
		xdr_put_opaque(res, buf, (uint32_t)n);
	free(buf);
	nfs3_release(r, &o);
	return RPC_SUCCESS;
}

/* May the caller read (or write) @o's data?  Owners always may, as knfsd
 * allows (a file created 0444 is written by its creator); reading is also
 * allowed to who may execute (clients page executables in). */
static uint32_t io_perm(struct nfs3_req *r, struct nfs3_obj *o, bool write)
{
	if (o->cr.uid == o->attr.uid)
		return NFS3_OK;
	if (!lc_access(r->s->lc, o->in, write ? W_OK : R_OK, &o->cr))
		return NFS3_OK;
	if (!write && !lc_access(r->s->lc, o->in, X_OK, &o->cr))
		return NFS3_OK;
	return NFS3ERR_ACCES;
}

static int p_read(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	/* post_op_attr with attributes, count, eof and the opaque's length */
	const size_t hdr = 4 + 84 + 4 + 4 + 4;
	struct nfs3_read_args a;
	struct nfs3_obj o;
	struct nfs3_fc_entry *fe = NULL;
	struct nfs3_fattr f;
	ssize_t n = 0;
	uint32_t st, count;
	size_t mark;
	long at;
	bool eof, have;
	int e;

	st = PROC_OPEN(nfs3_dec_read(args, &a), nfs3_resolve(r, &a.fh, &o));
	if (!st && !S_ISREG(o.attr.mode))
		st = S_ISDIR(o.attr.mode) ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
	if (!st)
		st = io_perm(r, &o, false);
	if (!st) {
		e = nfs3_fcache_get(&r->s->fc, o.in, false, &fe);
		st = nfs3_errno(e);
	}
	/* an NFSv4 client's write delegation: recalled (what it buffered is
	 * written back first), and the client retries */
	if (!st && lc_break_for_read(r->s->lc, lc_ino(o.in), false))
		st = NFS3ERR_JUKEBOX;
	if (st) {
		xdr_put_u32(res, st);
		put_obj_attr(r, res, &o);
		goto out;
	}
	count = a.count > r->s->p.max_io ? r->s->p.max_io : a.count;
	if (a.offset > (uint64_t)INT64_MAX)
		count = 0;
	xdr_put_u32(res, NFS3_OK);
	mark = res->len;
	/* read straight into the reply, behind room for the header, which is
	 * written once the read is done and the size (eof) is known */
	at = xdr_reserve(res, hdr + XDR_PAD(count));
	if (at < 0) {
		xdr_enc_truncate(res, mark - 4);
		xdr_put_u32(res, NFS3ERR_IO);
		put_obj_attr(r, res, &o);
		goto out;
	}
	n = count ? lc_read(r->s->lc, fe->fh, (off_t)a.offset, count, xdr_at(res, mark + hdr)) : 0;
	if (n < 0) {
		xdr_enc_truncate(res, mark - 4);
		xdr_put_u32(res, nfs3_errno((int)n));
		put_obj_attr(r, res, &o);
		goto out;
	}
	have = attr_now(r, &o, o.in, &f);
	eof = have ? a.offset + (uint64_t)n >= f.size : (n < (ssize_t)count);
	xdr_enc_truncate(res, mark);     /* the data stays where it is */
	nfs3_put_post_op_attr(res, have ? &f : NULL);
	xdr_put_u32(res, (uint32_t)n);
	xdr_put_bool(res, eof);
	xdr_put_u32(res, (uint32_t)n);
	if (res->len != mark + hdr)      /* no attributes: the data moves up */
		memmove(xdr_at(res, res->len), xdr_at(res, mark + hdr), (size_t)n);
	at = xdr_reserve(res, XDR_PAD((size_t)n));
	if (at >= 0)
		memset(xdr_at(res, (size_t)at + (size_t)n), 0, XDR_PAD((size_t)n) - (size_t)n);
out:
	nfs3_fcache_put(&r->s->fc, fe);
	nfs3_release(r, &o);
	return RPC_SUCCESS;
}

static int p_write(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs3_write_args a;
	struct nfs3_obj o;
	struct nfs3_fc_entry *fe = NULL;
	uint32_t st, committed = NFS3_UNSTABLE;
	ssize_t n = 0;
	int e;

	st = PROC_OPEN(nfs3_dec_write(args, &a), nfs3_resolve(r, &a.fh, &o));
	if (!st)
		st = writable(&o);
	if (!st && !S_ISREG(o.attr.mode))
		st = S_ISDIR(o.attr.mode) ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
	if (!st && (a.offset > NFS3_MAXFILESIZE || NFS3_MAXFILESIZE - a.offset < a.data_len))
		st = NFS3ERR_FBIG;
	if (!st && a.data_len > r->s->p.max_io)
		st = NFS3ERR_INVAL;
	if (!st)
		st = io_perm(r, &o, true);
	if (!st) {
		e = nfs3_fcache_get(&r->s->fc, o.in, true, &fe);
		st = nfs3_errno(e);
	}
	/* an NFSv4 client's read delegation: recalled, and the client retries
	 * (after the open above: a delegation granted meanwhile sees the writer) */
	if (!st && lc_break_for_write(r->s->lc, lc_ino(o.in), false))
		st = NFS3ERR_JUKEBOX;
	/* setuid and file capabilities go as the caller's write removes them
	 * (the cached handle is root's: lc_write's own kill would keep them) */
	if (!st && a.data_len)
		st = nfs3_errno(lc_kill_privs(r->s->lc, o.in, &o.cr));
	if (!st && a.data_len) {
		n = lc_write(r->s->lc, fe->fh, (off_t)a.offset, a.data_len, a.data);
		if (n < 0)
			st = nfs3_errno((int)n);
	}
	if (!st && a.stable != NFS3_UNSTABLE) {
		e = lc_fsync(r->s->lc, fe->fh, a.stable == NFS3_DATA_SYNC);
		st = nfs3_errno(e);
		if (!st)
			committed = a.stable;
	}
	xdr_put_u32(res, st);
	put_obj_wcc(r, res, &o);
	if (!st) {
		xdr_put_u32(res, (uint32_t)n);
		xdr_put_u32(res, committed);
		xdr_put_fixed(res, r->s->write_verf, NFS3_WRITEVERFSIZE);
	}
	nfs3_fcache_put(&r->s->fc, fe);
	nfs3_release(r, &o);
	return RPC_SUCCESS;
}

/* The result of CREATE, MKDIR, SYMLINK, MKNOD: status, [post_op_fh3,
 * post_op_attr], and the directory's wcc_data either way. */
static void put_created(struct nfs3_req *r, struct xdr_enc *res, uint32_t st, struct nfs3_obj *d,
			const struct lc_attr *a)
{
	struct nfs3_fh fh;
	struct nfs3_fattr f;

	xdr_put_u32(res, st);
	if (!st) {
		nfs3_make_fh(d->exp, a->ino, a->generation, &fh);
		nfs3_put_post_op_fh(res, &fh);
		fattr_of(d->exp, a, &f);
		nfs3_put_post_op_attr(res, &f);
	}
	put_obj_wcc(r, res, d);
}

/* An exclusive create's verifier lives in the new file's atime and mtime
 * (as knfsd keeps it) until the client's SETATTR replaces them. */
static void verf_times(const uint8_t *v, struct lc_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->atime.tv_sec = (time_t)xdr_load_u32(v);
	a->mtime.tv_sec = (time_t)xdr_load_u32(v + 4);
}

static int p_create(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs3_create_args a;
	struct nfs3_obj d;
	struct lc_inode *in = NULL;
	struct lc_fh *fh = NULL;
	struct lc_attr at = { 0 }, vt;
	char name[NFS3_MAXNAMLEN + 1];
	mode_t mode;
	uint32_t st;
	int e = 0, flags;

	st = PROC_OPEN(nfs3_dec_create(args, &a), dir_of(r, &a.where.dir, &d, true));
	if (!st)
		st = get_name(a.where.name, a.where.name_len, name);
	if (st)
		goto out;
	mode = (a.mode != NFS3_EXCLUSIVE && (a.sa.mask & LC_SET_MODE)) ? (a.sa.mode & 07777) : 0644;
	flags = O_RDWR | O_CREAT | (a.mode == NFS3_UNCHECKED ? 0 : O_EXCL);
	e = lc_create(r->s->lc, d.in, name, a.mode == NFS3_EXCLUSIVE ? 0 : mode, flags, &d.cr, &at, &in, &fh);
	if (e == -EEXIST && a.mode == NFS3_EXCLUSIVE) {
		/* a retransmission of our own exclusive create succeeds */
		e = lc_lookup(r->s->lc, d.in, name, &d.cr, &at, &in);
		verf_times(a.verf, &vt);
		if (!e && (!S_ISREG(at.mode) || at.atime.tv_sec != vt.atime.tv_sec ||
			   at.mtime.tv_sec != vt.mtime.tv_sec)) {
			lc_put(r->s->lc, in);
			in = NULL;
			e = -EEXIST;
		}
	} else if (!e && a.mode == NFS3_EXCLUSIVE) {
		verf_times(a.verf, &vt);
		e = lc_setattr(r->s->lc, in, &vt, LC_SET_ATIME | LC_SET_MTIME, &d.cr, &at);
	} else if (!e) {
		/* UNCHECKED on an existing file: only the size may be set (RFC 1813 3.3.8) */
		e = apply_sattr(r, in, &d.cr, &a.sa, LC_SET_MODE);
		if (!e)
			e = lc_getattr(r->s->lc, in, &d.cr, false, &at);
	}
	if (fh)
		lc_release(r->s->lc, fh);
	st = nfs3_errno(e);
out:
	put_created(r, res, st, &d, &at);
	if (in)
		lc_put(r->s->lc, in);
	nfs3_release(r, &d);
	return RPC_SUCCESS;
}

static int p_mkdir(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs3_mkdir_args a;
	struct nfs3_obj d;
	struct lc_inode *in = NULL;
	struct lc_attr at;
	char name[NFS3_MAXNAMLEN + 1];
	uint32_t st;
	int e;

	st = PROC_OPEN(nfs3_dec_mkdir(args, &a), dir_of(r, &a.where.dir, &d, true));
	if (!st)
		st = get_name(a.where.name, a.where.name_len, name);
	if (!st) {
		e = lc_mkdir(r->s->lc, d.in, name, (a.sa.mask & LC_SET_MODE) ? (a.sa.mode & 07777) : 0755, &d.cr, &at,
			     &in);
		if (!e)
			e = apply_sattr(r, in, &d.cr, &a.sa, LC_SET_MODE);
		if (!e)
			e = lc_getattr(r->s->lc, in, &d.cr, false, &at);
		st = nfs3_errno(e);
	}
	put_created(r, res, st, &d, &at);
	if (in)
		lc_put(r->s->lc, in);
	nfs3_release(r, &d);
	return RPC_SUCCESS;
}

static int p_symlink(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs3_symlink_args a;
	struct nfs3_obj d;
	struct lc_inode *in = NULL;
	struct lc_attr at;
	char name[NFS3_MAXNAMLEN + 1], *target = NULL;
	uint32_t st;
	int e;

	st = PROC_OPEN(nfs3_dec_symlink(args, &a), dir_of(r, &a.where.dir, &d, true));
	if (!st)
		st = get_name(a.where.name, a.where.name_len, name);
	if (!st && (a.path_len == 0 || memchr(a.path, 0, a.path_len)))
		st = NFS3ERR_INVAL;
	if (!st && !(target = strndup((const char *)a.path, a.path_len)))
		st = NFS3ERR_SERVERFAULT;
	if (!st) {
		e = lc_symlink(r->s->lc, d.in, name, target, &d.cr, &at, &in);
		st = nfs3_errno(e);
	}
	put_created(r, res, st, &d, &at);
	free(target);
	if (in)
		lc_put(r->s->lc, in);
	nfs3_release(r, &d);
	return RPC_SUCCESS;
}

static int p_mknod(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs3_mknod_args a;
	struct nfs3_obj d;
	struct lc_inode *in = NULL;
	struct lc_attr at;
	char name[NFS3_MAXNAMLEN + 1];
	mode_t mode, fmt = 0;
	uint32_t st;
	int e;

	st = PROC_OPEN(nfs3_dec_mknod(args, &a), dir_of(r, &a.where.dir, &d, true));
	if (!st)
		st = get_name(a.where.name, a.where.name_len, name);
	if (!st) {
		switch (a.type) {
		case NF3CHR: fmt = S_IFCHR; break;
		case NF3BLK: fmt = S_IFBLK; break;
		case NF3SOCK: fmt = S_IFSOCK; break;
		case NF3FIFO: fmt = S_IFIFO; break;
		default: st = NFS3ERR_BADTYPE; break;
		}
	}
	if (!st) {
		mode = (a.sa.mask & LC_SET_MODE) ? (a.sa.mode & 07777) : 0644;
		e = lc_mknod(r->s->lc, d.in, name, fmt | mode, makedev(a.major, a.minor), &d.cr, &at, &in);
		if (!e)
			e = apply_sattr(r, in, &d.cr, &a.sa, LC_SET_MODE);
		if (!e)
			e = lc_getattr(r->s->lc, in, &d.cr, false, &at);
		st = nfs3_errno(e);
	}
	put_created(r, res, st, &d, &at);
	if (in)
		lc_put(r->s->lc, in);
	nfs3_release(r, &d);
	return RPC_SUCCESS;
}

/* The inode @name names in @dir now (0 if none): to let go of its cached open. */
static uint64_t ino_of(struct nfs3_req *r, struct nfs3_obj *d, const char *name)
{
	struct lc_inode *in = NULL;
	struct lc_attr a;
	uint64_t ino = 0;

	if (!lc_lookup(r->s->lc, d->in, name, &d->cr, &a, &in)) {
		ino = a.ino;
		lc_put(r->s->lc, in);
	}
	return ino;
}

static int remove_common(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res, bool dir)
{
	struct nfs3_diropargs a;
	struct nfs3_obj d;
	char name[NFS3_MAXNAMLEN + 1];
	uint64_t ino = 0;
	uint32_t st;
	int e;

	st = PROC_OPEN(nfs3_dec_diropargs(args, &a), dir_of(r, &a.dir, &d, true));
	if (!st)
		st = get_name(a.name, a.name_len, name);
	if (!st && (!strcmp(name, ".") || !strcmp(name, "..")))
		st = dir ? NFS3ERR_INVAL : NFS3ERR_ACCES;
	if (!st) {
		if (!dir)
			ino = ino_of(r, &d, name);
		/* an NFSv4 delegation on the file: recalled, the client retries */
		if (ino && lc_break_for_write(r->s->lc, ino, false)) {
			st = NFS3ERR_JUKEBOX;
			e = -EAGAIN;
		} else {
			e = dir ? lc_rmdir(r->s->lc, d.in, name, &d.cr) : lc_unlink(r->s->lc, d.in, name, &d.cr);
			st = nfs3_errno(e);
		}
		if (!e && ino)
			nfs3_fcache_drop(&r->s->fc, ino);   /* no open keeps it alive */
	}
	xdr_put_u32(res, st);
	put_obj_wcc(r, res, &d);
	nfs3_release(r, &d);
	return RPC_SUCCESS;
}

static int p_remove(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	return remove_common(r, args, res, false);
}

static int p_rmdir(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	return remove_common(r, args, res, true);
}

static int p_rename(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs3_rename_args a;
	struct nfs3_obj from, to;
	char fname[NFS3_MAXNAMLEN + 1], tname[NFS3_MAXNAMLEN + 1];
	uint64_t replaced = 0;
	uint32_t st;
	int e;

	memset(&to, 0, sizeof(to));
	st = PROC_OPEN(nfs3_dec_rename(args, &a), dir_of(r, &a.from.dir, &from, true));
	if (!st)
		st = dir_of(r, &a.to.dir, &to, true);
	if (!st && from.exp != to.exp)
		st = NFS3ERR_XDEV;
	if (!st)
		st = get_name(a.from.name, a.from.name_len, fname);
	if (!st)
		st = get_name(a.to.name, a.to.name_len, tname);
	if (!st && (!strcmp(fname, ".") || !strcmp(fname, "..") || !strcmp(tname, ".") || !strcmp(tname, "..")))
		st = NFS3ERR_INVAL;
	if (!st) {
		uint64_t moved = ino_of(r, &from, fname);

		replaced = ino_of(r, &to, tname);
		/* NFSv4 delegations on the file renamed or the one replaced:
		 * recalled, the client retries (directories have none) */
		if ((moved && lc_break_for_write(r->s->lc, moved, false)) ||
		    (replaced && lc_break_for_write(r->s->lc, replaced, false))) {
			st = NFS3ERR_JUKEBOX;
			e = -EAGAIN;
		} else {
			e = lc_rename(r->s->lc, from.in, fname, to.in, tname, 0, &from.cr);
			st = nfs3_errno(e);
		}
		if (!e && replaced && replaced != ino_of(r, &to, tname))
			nfs3_fcache_drop(&r->s->fc, replaced);
	}
	xdr_put_u32(res, st);
	put_obj_wcc(r, res, &from);
	put_obj_wcc(r, res, &to);
	nfs3_release(r, &to);
	nfs3_release(r, &from);
	return RPC_SUCCESS;
}

static int p_link(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs3_link_args a;
	struct nfs3_obj o, d;
	char name[NFS3_MAXNAMLEN + 1];
	uint32_t st;
	int e;

	memset(&d, 0, sizeof(d));
	st = PROC_OPEN(nfs3_dec_link(args, &a), nfs3_resolve(r, &a.fh, &o));
	if (!st)
		st = dir_of(r, &a.link.dir, &d, true);
	if (!st && o.exp != d.exp)
		st = NFS3ERR_XDEV;
	if (!st && S_ISDIR(o.attr.mode))
		st = NFS3ERR_ISDIR;
	if (!st)
		st = get_name(a.link.name, a.link.name_len, name);
	if (!st && lc_break_for_write(r->s->lc, lc_ino(o.in), false))
		st = NFS3ERR_JUKEBOX;    /* an NFSv4 delegation (nlink, ctime): recalled, retry */
	if (!st) {
		e = lc_link(r->s->lc, o.in, d.in, name, &d.cr, NULL);
		st = nfs3_errno(e);
	}
	xdr_put_u32(res, st);
	put_obj_attr(r, res, &o);
	put_obj_wcc(r, res, &d);
	nfs3_release(r, &d);
	nfs3_release(r, &o);
	return RPC_SUCCESS;
}

/* ---- READDIR, READDIRPLUS ------------------------------------------------------- */

struct rd {
	struct nfs3_req *r;
	struct nfs3_obj *dir;
	struct xdr_enc *res;
	bool plus;
	size_t limit;                    /* res->len may not pass this (maxcount) */
	uint32_t dir_bytes, dircount;    /* READDIRPLUS: the directory part only */
	unsigned int n;
	bool full;
	uint64_t epoch;                  /* lc_ns_epoch() before the listing (the subtree check's notes) */
};

/* One entry; 1 if it did not fit (nothing of it is left in res). */
static int rd_entry(struct rd *rd, const char *name, const struct lc_attr *a, uint64_t cookie)
{
	struct xdr_enc *e = rd->res;
	size_t mark = e->len, nlen = strlen(name);
	uint32_t dbytes = (uint32_t)(8 + 4 + XDR_PAD(nlen) + 8);

	if (rd->plus && rd->n && rd->dir_bytes + dbytes > rd->dircount) {
		rd->full = true;
		return 1;
	}
	xdr_put_bool(e, true);           /* value follows */
	xdr_put_u64(e, a->ino);
	xdr_put_string(e, name);
	xdr_put_u64(e, cookie);
	if (rd->plus) {
		struct nfs3_fattr f;
		struct nfs3_fh fh;

		fattr_of(rd->dir->exp, a, &f);
		nfs3_put_post_op_attr(e, &f);
		nfs3_make_fh(rd->dir->exp, a->ino, a->generation, &fh);
		nfs3_put_post_op_fh(e, &fh);
		/* a handle found by name in a checked directory: inside (hard links too) */
		if (cookie > 2 && strcmp(name, ".") && strcmp(name, ".."))
			nfs_export_note_inside(rd->r->x, rd->dir->exp, a->ino, rd->epoch, rd->dir->attr.ino, name);
	}
	if (e->err || e->len > rd->limit) {
		xdr_enc_truncate(e, mark);
		rd->full = true;
		return 1;
	}
	rd->dir_bytes += dbytes;
	rd->n++;
	return 0;
}

static int rd_cb(void *arg, const char *name, struct lc_inode *in, const struct lc_attr *attr, uint64_t next)
{
	struct rd *rd = arg;
	int r = rd_entry(rd, name, attr, next + COOKIE_BASE);

	if (!r && in)
		lc_put(rd->r->s->lc, in);
	return r;
}

static int readdir_common(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res, bool plus)
{
	static const uint8_t zero[NFS3_COOKIEVERFSIZE];
	struct nfs3_readdir_args a;
	struct nfs3_obj d;
	struct rd rd;
	size_t start;
	uint32_t st;
	bool eof = false;
	int e;

	st = PROC_OPEN(nfs3_dec_readdir(args, plus, &a), dir_of(r, &a.dir, &d, false));
	if (!st && lc_access(r->s->lc, d.in, R_OK, &d.cr))
		st = NFS3ERR_ACCES;
	start = res->len;
	xdr_put_u32(res, st);
	put_obj_attr(r, res, &d);
	if (st)
		goto out;
	xdr_put_fixed(res, zero, sizeof(zero));
	memset(&rd, 0, sizeof(rd));
	rd.r = r;
	rd.dir = &d;
	rd.res = res;
	rd.plus = plus;
	rd.epoch = lc_ns_epoch(r->s->lc);
	rd.dircount = plus ? a.dircount : UINT32_MAX;
	/* count/maxcount bound the whole resok; keep 8 bytes for the end
	 * of the list and eof, and never more than the RPC reply allows */
	if (a.count > res->max - start)
		a.count = (uint32_t)(res->max - start);
	rd.limit = start + (a.count > 8 ? a.count - 8 : 0);
	if (a.cookie < 1) {
		if (rd_entry(&rd, ".", &d.attr, 1))
			goto toosmall;
	}
	if (a.cookie < 2) {
		struct lc_inode *p = NULL;
		struct lc_attr pa = d.attr;
		uint64_t rino = 0, rgen = 0;

		/* "..": the parent, but never above the export's root */
		if (nfs_export_root(r->x, d.exp, r->s->lc, &rino, &rgen) || rino != d.attr.ino) {
			if (lc_lookup_parent(r->s->lc, d.in, &pa, &p))
				pa = d.attr;
			else
				lc_put(r->s->lc, p);
		}
		if (rd_entry(&rd, "..", &pa, 2))
			goto partial;
	}
	e = lc_readdir(r->s->lc, d.in, a.cookie > COOKIE_BASE ? a.cookie - COOKIE_BASE : 0, plus, &d.cr, rd_cb, &rd,
		       &eof);
	if (e == -EINVAL || e == -ENOENT) {
		/* a cookie the library does not know */
		xdr_enc_truncate(res, start);
		xdr_put_u32(res, NFS3ERR_BAD_COOKIE);
		put_obj_attr(r, res, &d);
		goto out;
	}
	if (e) {
		xdr_enc_truncate(res, start);
		xdr_put_u32(res, nfs3_errno(e));
		put_obj_attr(r, res, &d);
		goto out;
	}
partial:
	if (rd.full)
		eof = false;
	if (rd.n == 0 && !eof)
		goto toosmall;
	xdr_put_bool(res, false);        /* no more entries */
	xdr_put_bool(res, eof);
	goto out;
toosmall:
	xdr_enc_truncate(res, start);
	xdr_put_u32(res, NFS3ERR_TOOSMALL);
	put_obj_attr(r, res, &d);
out:
	nfs3_release(r, &d);
	return RPC_SUCCESS;
}

static int p_readdir(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	return readdir_common(r, args, res, false);
}

static int p_readdirplus(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	return readdir_common(r, args, res, true);
}

/* ---- FSSTAT, FSINFO, PATHCONF, COMMIT ------------------------------------------ */

static int p_fsstat(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs3_fh fh;
	struct nfs3_obj o;
	struct statvfs sv;
	uint32_t st;
	uint64_t fr;

	st = PROC_OPEN(nfs3_dec_fh(args, &fh), nfs3_resolve(r, &fh, &o));
	if (!st)
		st = nfs3_errno(lc_statfs(r->s->lc, o.in, &sv));
	xdr_put_u32(res, st);
	put_obj_attr(r, res, &o);
	if (!st) {
		fr = sv.f_frsize ? sv.f_frsize : sv.f_bsize;
		xdr_put_u64(res, (uint64_t)sv.f_blocks * fr);
		xdr_put_u64(res, (uint64_t)sv.f_bfree * fr);
		xdr_put_u64(res, (uint64_t)sv.f_bavail * fr);
		xdr_put_u64(res, sv.f_files);
		xdr_put_u64(res, sv.f_ffree);
		xdr_put_u64(res, sv.f_favail);
		xdr_put_u32(res, 0);     /* invarsec: it changes */
	}
	nfs3_release(r, &o);
	return RPC_SUCCESS;
}

static int p_fsinfo(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs3_fh fh;
	struct nfs3_obj o;
	uint32_t st, io = r->s->p.max_io;

	st = PROC_OPEN(nfs3_dec_fh(args, &fh), nfs3_resolve(r, &fh, &o));
	xdr_put_u32(res, st);
	put_obj_attr(r, res, &o);
	if (!st) {
		xdr_put_u32(res, io);    /* rtmax */
		xdr_put_u32(res, io);    /* rtpref */
		xdr_put_u32(res, 4096);  /* rtmult */
		xdr_put_u32(res, io);    /* wtmax */
		xdr_put_u32(res, io);    /* wtpref */
		xdr_put_u32(res, 4096);  /* wtmult */
		xdr_put_u32(res, 65536); /* dtpref */
		/* the filesystem's max_file_size (`fs set` changes it) */
		xdr_put_u64(res, r->s->lc && lc_max_file_size(r->s->lc) ? lc_max_file_size(r->s->lc) : NFS3_MAXFILESIZE);
		xdr_put_u32(res, 0);     /* time_delta: 1 ns */
		xdr_put_u32(res, 1);
		xdr_put_u32(res, FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME);
	}
	nfs3_release(r, &o);
	return RPC_SUCCESS;
}

static int p_pathconf(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs3_fh fh;
	struct nfs3_obj o;
	uint32_t st;

	st = PROC_OPEN(nfs3_dec_fh(args, &fh), nfs3_resolve(r, &fh, &o));
	xdr_put_u32(res, st);
	put_obj_attr(r, res, &o);
	if (!st) {
		xdr_put_u32(res, 65000);         /* linkmax */
		xdr_put_u32(res, NFS3_MAXNAMLEN);
		xdr_put_bool(res, true);         /* no_trunc */
		xdr_put_bool(res, true);         /* chown_restricted */
		xdr_put_bool(res, false);        /* case_insensitive */
		xdr_put_bool(res, true);         /* case_preserving */
	}
	nfs3_release(r, &o);
	return RPC_SUCCESS;
}

static int p_commit(struct nfs3_req *r, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs3_commit_args a;
	struct nfs3_obj o;
	struct nfs3_fc_entry *fe = NULL;
	uint32_t st;
	int e;

	st = PROC_OPEN(nfs3_dec_commit(args, &a), nfs3_resolve(r, &a.fh, &o));
	if (!st && !S_ISREG(o.attr.mode))
		st = S_ISDIR(o.attr.mode) ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
	if (!st) {
		/* dirty data is per inode in the client library: any handle flushes it */
		e = nfs3_fcache_get(&r->s->fc, o.in, false, &fe);
		if (!e)
			e = lc_fsync(r->s->lc, fe->fh, false);
		st = nfs3_errno(e);
	}
	xdr_put_u32(res, st);
	put_obj_wcc(r, res, &o);
	if (!st)
		xdr_put_fixed(res, r->s->write_verf, NFS3_WRITEVERFSIZE);
	nfs3_fcache_put(&r->s->fc, fe);
	nfs3_release(r, &o);
	return RPC_SUCCESS;
}

/* ---- dispatch --------------------------------------------------------------------- */

static const struct {
	const char *name;
	proc_fn fn;
	bool cacheable;                  /* non-idempotent: through the DRC */
} procs[NFS3PROC_MAX] = {
	[NFS3PROC_GETATTR] = { "GETATTR", p_getattr, false },
	[NFS3PROC_SETATTR] = { "SETATTR", p_setattr, true },
	[NFS3PROC_LOOKUP] = { "LOOKUP", p_lookup, false },
	[NFS3PROC_ACCESS] = { "ACCESS", p_access, false },
	[NFS3PROC_READLINK] = { "READLINK", p_readlink, false },
	[NFS3PROC_READ] = { "READ", p_read, false },
	[NFS3PROC_WRITE] = { "WRITE", p_write, true },
	[NFS3PROC_CREATE] = { "CREATE", p_create, true },
	[NFS3PROC_MKDIR] = { "MKDIR", p_mkdir, true },
	[NFS3PROC_SYMLINK] = { "SYMLINK", p_symlink, true },
	[NFS3PROC_MKNOD] = { "MKNOD", p_mknod, true },
	[NFS3PROC_REMOVE] = { "REMOVE", p_remove, true },
	[NFS3PROC_RMDIR] = { "RMDIR", p_rmdir, true },
	[NFS3PROC_RENAME] = { "RENAME", p_rename, true },
	[NFS3PROC_LINK] = { "LINK", p_link, true },
	[NFS3PROC_READDIR] = { "READDIR", p_readdir, false },
	[NFS3PROC_READDIRPLUS] = { "READDIRPLUS", p_readdirplus, false },
	[NFS3PROC_FSSTAT] = { "FSSTAT", p_fsstat, false },
	[NFS3PROC_FSINFO] = { "FSINFO", p_fsinfo, false },
	[NFS3PROC_PATHCONF] = { "PATHCONF", p_pathconf, false },
	[NFS3PROC_COMMIT] = { "COMMIT", p_commit, false },
};

/* Per-procedure counters and latencies (perf group "nfs3_ops"), shared by every server of the process. */
static struct {
	struct perf_counter n;
	struct hist lat;
} proc_stats[NFS3PROC_MAX];
static pthread_once_t proc_stats_once = PTHREAD_ONCE_INIT;

static void proc_stats_register(void)
{
	char name[64];
	uint32_t p;

	for (p = 0; p < NFS3PROC_MAX; p++) {
		size_t i;

		if (!procs[p].name)
			continue;
		snprintf(name, sizeof(name) - 4, "%s", procs[p].name);
		for (i = 0; name[i]; i++)
			name[i] = (char)tolower((unsigned char)name[i]);
		perf_register_counter("nfs3_ops", name, &proc_stats[p].n);
		strcat(name, "_lat");
		perf_register_hist("nfs3_ops", name, &proc_stats[p].lat);
	}
}

static int nfs3_dispatch(void *priv, struct rpc_req *req, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs3_server *s = priv;
	struct nfs3_req r = { .s = s, .req = req };
	uint32_t proc = req->call.proc;
	uint64_t t0 = now_mono_ns();
	int st;

	if (proc >= NFS3PROC_MAX || !procs[proc].fn)
		return RPC_PROC_UNAVAIL;
	/* one exports table from start to end, whatever a reload does meanwhile */
	r.x = nfs_export_set_get(s->exports);
	{
		/* in the client's operations in flight (`ops`), with what it waits for */
		struct lc_op_slot *slot = s->lc ? lc_op_begin(s->lc, "nfs3", procs[proc].name, 0) : NULL;

		st = procs[proc].fn(&r, args, res);
		lc_op_end(slot);
	}
	if (req->auth_stat && st == RPC_SUCCESS)
		st = RPC_AUTH_ERR_REPLY;  /* a flavour the export does not take (nfs3_resolve) */
	perf_inc(&proc_stats[proc].n, 1);
	hist_add(&proc_stats[proc].lat, now_mono_ns() - t0);
	dout(NFS, 15, "%s: v3 %s -> %d", req->xprt->peer_str, procs[proc].name, st);
	nfs_exports_put(r.x);
	return st;
}

static bool nfs3_cacheable(void *priv, const struct rpc_req *req)
{
	return req->call.proc < NFS3PROC_MAX && procs[req->call.proc].cacheable;
}

/* ---- the server -------------------------------------------------------------------- */

void nfs3_params_from_config(struct nfs3_params *p, size_t max_record, size_t max_reply)
{
	size_t io = cfg_uint(CFG_nfs3_max_io);

	memset(p, 0, sizeof(*p));
	/* a WRITE's data and a READ's reply must fit the RPC limits with room
	 * for their headers */
	if (io + 1024 > max_record)
		io = max_record > 2048 ? max_record - 1024 : 1024;
	if (io + 1024 > max_reply)
		io = max_reply > 2048 ? max_reply - 1024 : 1024;
	p->max_io = (uint32_t)(io & ~(size_t)4095 ? io & ~(size_t)4095 : io);
	p->fcache_idle_ns = (uint64_t)(cfg_double(CFG_nfs3_file_cache_idle) * 1e9);
	p->fcache_max = (unsigned int)cfg_uint(CFG_nfs3_file_cache_max);
}

static void *reaper(void *arg)
{
	struct nfs3_server *s = arg;
	struct timespec ts;

	pthread_mutex_lock(&s->reaper_lock);
	while (!s->stopping) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&s->reaper_cond, &s->reaper_lock, &ts);
		if (s->stopping)
			break;
		pthread_mutex_unlock(&s->reaper_lock);
		nfs3_fcache_expire(&s->fc, now_mono_ns());
		pthread_mutex_lock(&s->reaper_lock);
	}
	pthread_mutex_unlock(&s->reaper_lock);
	return NULL;
}

int nfs3_server_create(const struct nfs3_params *p, struct lclient *lc, struct nfs3_server **out)
{
	struct nfs3_server *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;
	uint64_t boot = now_real_ns();
	int r;

	if (!s)
		return -ENOMEM;
	if (!p->exports) {
		free(s);
		return -EINVAL;
	}
	pthread_once(&proc_stats_once, proc_stats_register);
	s->p = *p;
	if (!s->p.max_io)
		s->p.max_io = 65536;
	s->lc = lc;
	s->exports = p->exports;
	for (int i = 0; i < NFS3_WRITEVERFSIZE; i++)
		s->write_verf[i] = (uint8_t)(boot >> (8 * i));
	nfs3_fcache_init(&s->fc, lc, p->fcache_max, p->fcache_idle_ns);
	pthread_mutex_init(&s->mounts_lock, NULL);
	pthread_mutex_init(&s->reaper_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->reaper_cond, &ca);
	pthread_condattr_destroy(&ca);
	r = -pthread_create(&s->reaper, NULL, reaper, s);
	if (r) {
		nfs3_server_destroy(s);
		return r;
	}
	s->reaper_started = true;
	*out = s;
	return 0;
}

int nfs3_register(struct nfs3_server *s, struct rpc_svc *svc)
{
	struct rpc_program nfs = {
		.prog = NFS3_PROGRAM, .vers_lo = 3, .vers_hi = 3, .name = "nfs3",
		.dispatch = nfs3_dispatch, .cacheable = nfs3_cacheable, .priv = s,
	};
	struct rpc_program mnt = {
		.prog = MOUNT_PROGRAM, .vers_lo = 3, .vers_hi = 3, .name = "mount3",
		.dispatch = nfs3_mount_dispatch, .priv = s,
	};
	int r = rpc_svc_register(svc, &nfs);

	return r ? r : rpc_svc_register(svc, &mnt);
}

void nfs3_server_destroy(struct nfs3_server *s)
{
	if (!s)
		return;
	if (s->reaper_started) {
		pthread_mutex_lock(&s->reaper_lock);
		s->stopping = true;
		pthread_cond_broadcast(&s->reaper_cond);
		pthread_mutex_unlock(&s->reaper_lock);
		pthread_join(s->reaper, NULL);
	}
	nfs3_fcache_fini(&s->fc);
	nfs3_mounts_free(s);
	pthread_cond_destroy(&s->reaper_cond);
	pthread_mutex_destroy(&s->reaper_lock);
	pthread_mutex_destroy(&s->mounts_lock);
	free(s);
}
