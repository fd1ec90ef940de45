/*
 * ops_fh.c - the ops' shared context (ops_int.h) and the filehandle
 * operations: PUTROOTFH, PUTPUBFH, PUTFH, GETFH, SAVEFH, RESTOREFH, LOOKUP,
 * LOOKUPP, including the walk through the pseudo filesystem down to the
 * exports.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "nfs_gw/nfs4/ops.h"
#include "nfs_gw/nfs4/ops_int.h"

/* ---- the context -------------------------------------------------------- */

_Atomic nfs4ops_seq_hook_fn nfs4ops_seq_hook;
_Atomic nfs4ops_mds_lock_hook_fn nfs4ops_mds_lock_hook;

/* The state hooks find the context in srv->hooks.arg (set with them). */
static void client_release_hook(struct nfs4_server *srv, struct nfs4_client *clp)
{
	struct nfs4ops_ctx *c = srv->hooks.arg;

	if (c)
		os_client_release(c->st, c->lc, clp->clientid);
}

static bool client_has_state_hook(struct nfs4_server *srv, uint64_t clientid)
{
	struct nfs4ops_ctx *c = srv->hooks.arg;

	return c && os_client_has_state(c->st, clientid);
}

static void tick_hook(struct nfs4_server *srv, uint64_t now)
{
	struct nfs4ops_ctx *c = srv->hooks.arg;

	if (c)
		nfs4ops_deleg_tick(srv, c, now);
}

int nfs4ops_ctx_create(struct nfs4_server *srv)
{
	struct nfs4ops_ctx *c = calloc(1, sizeof(*c));
	uint64_t v;

	if (!c)
		return -ENOMEM;
	c->srv = srv;
	c->lc = srv->lc;
	if (ostate_create(srv->boot, srv->grace_ns, &c->st)) {
		free(c);
		return -ENOMEM;
	}
	/* NFSv4.0 requests waiting for their seqid predecessor hold worker
	 * threads: at most a quarter of the pool (open_state.h) */
	{
		uint64_t nw = cfg_uint(CFG_nfs_workers) / 4;

		c->st->seq_wait_max = nw ? (unsigned int)(nw < 1024 ? nw : 1024) : 1;
		/* so do LOCK/LOCKU waiting for another one of their file at the MDS */
		c->st->lk_wait_max = c->st->seq_wait_max;
	}
	c->st->stats = &srv->perf.seq;
	{
		struct idmap_params ip;

		idmap_params_from_config(&ip);
		ip.stats = &srv->perf.idmap;
		if (idmap_create(&ip, &c->idmap)) {
			ostate_destroy(c->st, c->lc);
			free(c);
			return -ENOMEM;
		}
		dinfo(NFS, "nfs4 idmap: domain %s; owners go out %s", idmap_domain(c->idmap),
		      ip.numeric_sys ? "as numbers to AUTH_SYS callers (nfs4_disable_idmapping)" : "as name@domain");
	}
	v = now_real_ns();
	for (int i = 0; i < NFS4_VERIFIER_SIZE; i++)
		c->write_verf[i] = (uint8_t)(v >> (8 * i));
	srv->ops_ctx = c;
	pthread_mutex_lock(&srv->lock);
	srv->hooks.arg = c;
	srv->hooks.client_release = client_release_hook;
	srv->hooks.client_has_state = client_has_state_hook;
	srv->hooks.tick = tick_hook;
	pthread_mutex_unlock(&srv->lock);
	return 0;
}

void nfs4ops_ctx_destroy(struct nfs4_server *srv)
{
	struct nfs4ops_ctx *c = srv->ops_ctx;

	if (!c)
		return;
	pthread_mutex_lock(&srv->lock);
	memset(&srv->hooks, 0, sizeof(srv->hooks));
	pthread_mutex_unlock(&srv->lock);
	srv->ops_ctx = NULL;
	ostate_destroy(c->st, c->lc);
	idmap_destroy(c->idmap);
	free(c);
}

struct nfs4ops_ctx *nfs4ops_ctx(struct nfs4_compound *cs)
{
	return cs->srv->ops_ctx;
}

void nfs4ops_cred(const struct nfs4_compound *cs, const struct nfs_export *exp, struct lc_cred *cr)
{
	const struct rpc_cred *rc = cs->cred;

	memset(cr, 0, sizeof(*cr));
	cr->uid = rc->uid;
	cr->gid = rc->gid;
	cr->ngroups = (int)(rc->ngids > LC_MAX_GROUPS ? LC_MAX_GROUPS : rc->ngids);
	for (int i = 0; i < cr->ngroups; i++)
		cr->groups[i] = rc->gids[i];
	if (exp && (exp->all_squash || (exp->root_squash && rc->uid == 0))) {
		cr->uid = exp->anon_uid;
		cr->gid = exp->anon_gid;
		cr->ngroups = 0;
	}
	if (exp && exp->all_squash)
		cr->ngroups = 0;
}

static void pseudo_attr(struct nfs4_server *srv, uint32_t node, struct lc_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = node;
	a->generation = 0;
	a->change = (uint64_t)srv->boot_sec;
	a->mode = S_IFDIR | 0555;
	a->nlink = 2;
	a->blksize = 4096;
	a->atime.tv_sec = a->mtime.tv_sec = a->ctime.tv_sec = a->btime.tv_sec = srv->boot_sec;
}

/*
 * RFC 8881 2.6.3.1: the operations that only set or look for a filehandle
 * (and SECINFO, which says what the right flavour is) never answer
 * NFS4ERR_WRONGSEC; the first operation that uses a filehandle of an
 * export whose sec= list lacks the caller's flavour does.  The pseudo
 * filesystem serves every flavour.
 */
static bool sec_exempt(const struct nfs4_compound *cs)
{
	switch (cs->op) {
	case OP_PUTFH:
	case OP_PUTPUBFH:
	case OP_PUTROOTFH:
	case OP_LOOKUP:
	case OP_LOOKUPP:
	case OP_SAVEFH:
	case OP_RESTOREFH:
	case OP_GETFH:
	case OP_SECINFO:
	case OP_SECINFO_NO_NAME:
		return true;
	default:
		return false;
	}
}

uint32_t nfs4ops_resolve(struct nfs4_compound *cs, const struct nfs4_fh *fh, struct nfs4_obj *o)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	uint32_t st;
	int r;

	memset(o, 0, sizeof(*o));
	if (!c)
		return NFS4ERR_SERVERFAULT;
	st = nfs4_fh_decode(fh, &o->fi);
	if (st)
		return st;
	if (o->fi.kind == NFS4_FH_PSEUDO) {
		if (cs->exports->root || !nfs_pnode_get(cs->exports, (uint32_t)o->fi.ino) || o->fi.fsid != 0)
			return NFS4ERR_STALE;
		pseudo_attr(cs->srv, (uint32_t)o->fi.ino, &o->attr);
		nfs4ops_cred(cs, NULL, &o->cr);
		return NFS4_OK;
	}
	o->exp = nfs_export_by_id(cs->exports, o->fi.export_id);
	if (!o->exp || o->fi.fsid != o->exp->id)
		return NFS4ERR_STALE;
	if (!nfs_export_allows(o->exp, &cs->req->xprt->peer)) {
		dout(NFS, 1, "%s: not allowed by export %s", cs->req->xprt->peer_str, o->exp->path);
		return NFS4ERR_ACCESS;
	}
	if (!o->exp->insecure && rpc_xprt_peer_port(cs->req->xprt) >= 1024)
		return NFS4ERR_PERM;
	if (!sec_exempt(cs) && cs->cred && !nfs_export_sec_ok(o->exp, cs->cred)) {
		dout(NFS, 5, "%s: op %u: flavor %u is not one of export %s's: WRONGSEC", cs->req->xprt->peer_str, cs->op,
		     rpc_cred_pseudoflavor(cs->cred), o->exp->path);
		return NFS4ERR_WRONGSEC;
	}
	if (!c->lc)
		return NFS4ERR_SERVERFAULT;
	nfs4ops_cred(cs, o->exp, &o->cr);
	r = lc_lookup_ino(c->lc, o->fi.ino, o->fi.gen, &o->attr, &o->in);
	if (r == -ENOENT || r == -ESTALE) {
		/* Removed, or renamed over, while open: the file lives on as long
		 * as it is open (RFC 7530 9.10, POSIX unlink), and its opens keep
		 * the inode for us.  Its cached attributes are what there is. */
		o->in = os_open_inode(c->st, o->fi.ino);
		if (o->in) {
			if (lc_getattr(c->lc, o->in, &o->cr, false, &o->attr))
				lc_cached_attr(o->in, &o->attr);
			if (o->fi.gen && o->attr.generation && o->attr.generation != o->fi.gen) {
				lc_put(c->lc, o->in);
				o->in = NULL;
				return NFS4ERR_STALE;
			}
			return NFS4_OK;
		}
	}
	if (r) {
		o->in = NULL;
		return (r == -ENOENT || r == -ESTALE) ? NFS4ERR_STALE : nfs4_errno_to_status(r);
	}
	/* the inode must lie below the export the handle names (subtree.c) */
	r = nfs_export_contains(cs->exports, o->exp, c->lc, o->in, o->attr.ino);
	if (r) {
		if (r == -ESTALE)
			dout(NFS, 1, "%s: handle of inode %" PRIx64 " outside export %u (%s): STALE",
			     cs->req->xprt->peer_str, o->attr.ino, o->exp->id, o->exp->path);
		lc_put(c->lc, o->in);
		o->in = NULL;
		return r == -ESTALE ? NFS4ERR_STALE : nfs4_errno_to_status(r);
	}
	return NFS4_OK;
}

uint32_t nfs4ops_cur(struct nfs4_compound *cs, struct nfs4_obj *o)
{
	if (!cs->cfh.len) {
		memset(o, 0, sizeof(*o));
		return NFS4ERR_NOFILEHANDLE;
	}
	return nfs4ops_resolve(cs, &cs->cfh, o);
}

void nfs4ops_release(struct nfs4_compound *cs, struct nfs4_obj *o)
{
	if (o->in) {
		struct nfs4ops_ctx *c = nfs4ops_ctx(cs);

		lc_put(c->lc, o->in);
		o->in = NULL;
	}
}

void nfs4ops_set_cfh(struct nfs4_compound *cs, const struct nfs_export *exp, const struct lc_attr *a)
{
	struct nfs4_fhinfo fi = {
		.kind = NFS4_FH_EXPORT,
		.export_id = exp->id,
		.fsid = exp->id,
		.ino = a->ino,
		.gen = a->generation,
	};

	nfs4_fh_encode(&fi, &cs->cfh);
	cs->has_cur_stateid = false;
}

static void set_cfh_pseudo(struct nfs4_compound *cs, uint32_t node)
{
	struct nfs4_fhinfo fi = { .kind = NFS4_FH_PSEUDO, .ino = node };

	nfs4_fh_encode(&fi, &cs->cfh);
	cs->has_cur_stateid = false;
}

uint32_t nfs4ops_writable(const struct nfs4_obj *o)
{
	if (!o->exp || o->exp->ro)
		return NFS4ERR_ROFS;
	return NFS4_OK;
}

uint32_t nfs4ops_stateid_in(struct nfs4_compound *cs, struct nfs4_stateid *sid, enum os_sid_kind *kind)
{
	enum os_sid_kind k = os_sid_classify(sid, cs->minorversion);

	if (k == OS_SID_CURRENT) {
		if (!cs->has_cur_stateid)
			return NFS4ERR_BAD_STATEID;
		*sid = cs->cur_stateid;
		k = os_sid_classify(sid, cs->minorversion);
	}
	if (kind)
		*kind = k;
	return k == OS_SID_BAD || k == OS_SID_CURRENT ? NFS4ERR_BAD_STATEID : NFS4_OK;
}

uint32_t nfs4ops_stateid_real(struct nfs4_compound *cs, struct nfs4_stateid *sid)
{
	enum os_sid_kind k;
	uint32_t st = nfs4ops_stateid_in(cs, sid, &k);

	/* RFC 7530 9.1.4.4: valid in general, not in this context */
	return st ? st : k != OS_SID_REGULAR ? NFS4ERR_BAD_STATEID : NFS4_OK;
}

uint32_t nfs4ops_stateid_verdict(struct nfs4_compound *cs, const struct nfs4_stateid *sid, uint32_t st)
{
	if (st == NFS4ERR_BAD_STATEID && !os_is_special(sid) &&
	    xdr_load_u32(sid->other) == cs->srv->boot && nfs4_client_expired32(cs->srv, os_sid_client32(sid)))
		return NFS4ERR_EXPIRED;
	return st;
}

bool nfs4ops_courtesy_break(struct nfs4_compound *cs, uint64_t clientid)
{
	if (cs->clp && cs->clp->clientid == clientid)
		return false;      /* our own state: a real conflict */
	return nfs4_client_cancel_courtesy(cs->srv, clientid);
}

bool nfs4ops_courtesy_candidate(struct nfs4_compound *cs, uint64_t clientid)
{
	if ((cs->clp && cs->clp->clientid == clientid) || cs->ncourtesy_kept >= 8)
		return false;
	for (unsigned int i = 0; i < cs->ncourtesy_kept; i++)
		if (cs->courtesy_kept[i] == clientid)
			return false;
	cs->courtesy_cid = clientid;
	return true;
}

bool nfs4ops_courtesy_retry(struct nfs4_compound *cs)
{
	if (nfs4ops_courtesy_break(cs, cs->courtesy_cid))
		return true;
	if (cs->ncourtesy_kept < 8)
		cs->courtesy_kept[cs->ncourtesy_kept++] = cs->courtesy_cid;
	return false;
}

uint32_t nfs4ops_file_type(const struct nfs4_compound *cs, mode_t mode)
{
	if (S_ISREG(mode))
		return NFS4_OK;
	if (S_ISDIR(mode))
		return NFS4ERR_ISDIR;
	if (S_ISLNK(mode))
		return NFS4ERR_SYMLINK;
	return cs->minorversion ? NFS4ERR_WRONG_TYPE : NFS4ERR_INVAL;
}

void nfs4ops_stateid_out(struct nfs4_compound *cs, const struct nfs4_stateid *sid)
{
	cs->cur_stateid = *sid;
	cs->has_cur_stateid = true;
}

void nfs4ops_put_cinfo(struct xdr_enc *e, uint64_t before, uint64_t after)
{
	/* not atomic: another client may have changed the directory in between */
	xdr_put_bool(e, false);
	xdr_put_u64(e, before);
	xdr_put_u64(e, after);
}

/* ---- the operations ---------------------------------------------------------- */

/* The current filehandle becomes export @e's root. */
static uint32_t enter_export(struct nfs4_compound *cs, const struct nfs_export *e)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct lc_attr a = { 0 };
	int r;

	if (!c->lc)
		return NFS4ERR_SERVERFAULT;
	r = nfs_export_root(cs->exports, e, c->lc, &a.ino, &a.generation);
	if (r) {
		derr(NFS, "export %s: cannot resolve its path: %s", e->path, strerror(-r));
		return nfs4_errno_to_status(r);
	}
	nfs4ops_set_cfh(cs, e, &a);
	return NFS4_OK;
}

NFS4_OP(putrootfh)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);

	(void)args;
	(void)res;
	if (!c)
		return NFS4ERR_SERVERFAULT;
	if (cs->exports->root)
		return enter_export(cs, cs->exports->root);
	set_cfh_pseudo(cs, NFS_PSEUDO_ROOT);
	return NFS4_OK;
}

NFS4_OP(putpubfh)
{
	return nfs4_op_putrootfh(cs, args, res);
}

NFS4_OP(putfh)
{
	struct nfs4_fh fh;
	struct nfs4_obj o;
	uint32_t st;

	(void)res;
	if (nfs4_get_fh(args, &fh))
		return NFS4ERR_BADXDR;
	st = nfs4ops_resolve(cs, &fh, &o);
	nfs4ops_release(cs, &o);
	if (st)
		return st;
	cs->cfh = fh;
	cs->has_cur_stateid = false;
	return NFS4_OK;
}

NFS4_OP(getfh)
{
	(void)args;
	return nfs4_put_fh(res, &cs->cfh) ? NFS4ERR_RESOURCE : NFS4_OK;
}

NFS4_OP(savefh)
{
	(void)args;
	(void)res;
	cs->sfh = cs->cfh;
	cs->saved_stateid = cs->cur_stateid;
	cs->has_saved_stateid = cs->has_cur_stateid;
	return NFS4_OK;
}

NFS4_OP(restorefh)
{
	(void)args;
	(void)res;
	if (!cs->sfh.len)
		return NFS4ERR_RESTOREFH;
	cs->cfh = cs->sfh;
	cs->cur_stateid = cs->saved_stateid;
	cs->has_cur_stateid = cs->has_saved_stateid;
	return NFS4_OK;
}

NFS4_OP(lookup_name)
{
	struct nfs4ops_ctx *c;
	char name[NFS4_MAX_NAME + 1];
	struct nfs4_obj o;
	struct lc_inode *child = NULL;
	struct lc_attr a;
	uint64_t epoch;
	uint32_t st;
	int r;

	(void)res;
	st = nfs4_get_component(args, name, sizeof(name));
	if (st)
		return st;
	st = nfs4ops_cur(cs, &o);
	if (st)
		return st;
	c = nfs4ops_ctx(cs);
	if (o.fi.kind == NFS4_FH_PSEUDO) {
		const struct nfs_pnode *pn = nfs_pnode_child(cs->exports, (uint32_t)o.fi.ino, name);

		if (!pn)
			return NFS4ERR_NOENT;
		if (pn->exp) {
			if (!nfs_export_allows(pn->exp, &cs->req->xprt->peer))
				return NFS4ERR_NOENT;
			return enter_export(cs, pn->exp);
		}
		set_cfh_pseudo(cs, pn->id);
		return NFS4_OK;
	}
	if (S_ISLNK(o.attr.mode))
		st = NFS4ERR_SYMLINK;
	else if (!S_ISDIR(o.attr.mode))
		st = NFS4ERR_NOTDIR;
	if (st) {
		nfs4ops_release(cs, &o);
		return st;
	}
	epoch = lc_ns_epoch(c->lc);
	r = lc_lookup(c->lc, o.in, name, &o.cr, &a, &child);
	if (!r) {
		/* found by name in a checked directory: inside (a hard link too) */
		nfs_export_note_inside(cs->exports, o.exp, a.ino, epoch, o.attr.ino, name);
		nfs4ops_set_cfh(cs, o.exp, &a);
		lc_put(c->lc, child);
	}
	nfs4ops_release(cs, &o);
	return nfs4_errno_to_status(r);
}

NFS4_OP(lookupp)
{
	struct nfs4ops_ctx *c;
	struct nfs4_obj o;
	struct lc_inode *parent = NULL;
	struct lc_attr a;
	uint64_t rino = 0, rgen = 0;
	uint32_t st;
	int r;

	(void)args;
	(void)res;
	st = nfs4ops_cur(cs, &o);
	if (st)
		return st;
	c = nfs4ops_ctx(cs);
	if (o.fi.kind == NFS4_FH_PSEUDO) {
		const struct nfs_pnode *pn = nfs_pnode_get(cs->exports, (uint32_t)o.fi.ino);

		if (!pn || pn->parent == 0)
			return NFS4ERR_NOENT;
		set_cfh_pseudo(cs, pn->parent);
		return NFS4_OK;
	}
	if (!S_ISDIR(o.attr.mode)) {
		nfs4ops_release(cs, &o);
		return S_ISLNK(o.attr.mode) ? NFS4ERR_SYMLINK : NFS4ERR_NOTDIR;
	}
	r = nfs_export_root(cs->exports, o.exp, c->lc, &rino, &rgen);
	if (!r && rino == o.attr.ino) {
		/* the export's root: up into the pseudo fs, or nowhere */
		const struct nfs_pnode *pn = nfs_pnode_get(cs->exports, o.exp->pnode);

		nfs4ops_release(cs, &o);
		if (!pn || pn->parent == 0)
			return NFS4ERR_NOENT;
		set_cfh_pseudo(cs, pn->parent);
		return NFS4_OK;
	}
	r = lc_lookup_parent(c->lc, o.in, &a, &parent);
	if (!r) {
		nfs4ops_set_cfh(cs, o.exp, &a);
		lc_put(c->lc, parent);
	}
	nfs4ops_release(cs, &o);
	return nfs4_errno_to_status(r);
}
