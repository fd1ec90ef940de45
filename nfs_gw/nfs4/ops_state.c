/*
 * ops_state.c - FREE_STATEID, TEST_STATEID, DELEGRETURN, SECINFO and
 * SECINFO_NO_NAME.
 *
 * DELEGRETURN ends a read delegation (ops_deleg.c); a stateid that is no
 * delegation is NFS4ERR_BAD_STATEID, a revoked one NFS4ERR_DELEG_REVOKED
 * (FREE_STATEID frees it, and with the client's last one the
 * RECALLABLE_STATE_REVOKED flag clears).
 */
#include <string.h>

#include "common/log.h"
#include "nfs_gw/nfs4/ops.h"
#include "nfs_gw/nfs4/ops_int.h"

uint32_t nfs4ops_v40_client(struct nfs4_compound *cs, uint64_t clientid);   /* ops_open.c */

NFS4_OP(free_stateid)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct os_putlist pl = { 0 };
	struct nfs4_stateid sid;
	struct os_stid *s;
	uint32_t st;

	(void)res;
	if (!c)
		return NFS4ERR_SERVERFAULT;
	if (nfs4_get_stateid(args, &sid))
		return NFS4ERR_BADXDR;
	st = nfs4ops_stateid_real(cs, &sid);
	if (st)
		return st;
	pthread_mutex_lock(&c->st->lock);
	st = os_stid_check_locked(c->st, &sid, 1, cs->clp ? cs->clp->clientid : 0, OS_KIND_ALL, &s);
	if (st == NFS4ERR_DELEG_REVOKED) {
		uint64_t cid = s->clientid;

		os_stid_free_locked(c->st, s, &pl);
		pthread_mutex_unlock(&c->st->lock);
		os_putlist_run(c->lc, &pl);
		nfs4ops_deleg_freed(cs, cid);
		return NFS4_OK;
	}
	if (!st || st == NFS4ERR_OLD_STATEID) {
		if (s->kind == OS_OPEN || s->kind == OS_DELEG || os_stid_has_locks_locked(s)) {
			st = NFS4ERR_LOCKS_HELD;
		} else {
			struct os_file *f = s->file;

			os_stid_free_locked(c->st, s, &pl);
			os_file_put_locked(c->st, f);
			st = NFS4_OK;
		}
	}
	pthread_mutex_unlock(&c->st->lock);
	os_putlist_run(c->lc, &pl);
	return nfs4ops_stateid_verdict(cs, &sid, st);
}

NFS4_OP(test_stateid)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	uint32_t n;
	long at;

	if (!c)
		return NFS4ERR_SERVERFAULT;
	if (xdr_get_u32(args, &n) || n > xdr_dec_left(args) / 16)
		return NFS4ERR_BADXDR;
	xdr_put_u32(res, n);
	for (uint32_t i = 0; i < n; i++) {
		struct nfs4_stateid sid;
		struct os_stid *s;
		uint32_t st;

		if (nfs4_get_stateid(args, &sid))
			return NFS4ERR_BADXDR;
		pthread_mutex_lock(&c->st->lock);
		st = os_stid_check_locked(c->st, &sid, 1, cs->clp ? cs->clp->clientid : 0, OS_KIND_ALL, &s);
		pthread_mutex_unlock(&c->st->lock);
		st = nfs4ops_stateid_verdict(cs, &sid, st);
		at = xdr_reserve(res, 4);
		if (at < 0)
			return NFS4ERR_RESOURCE;
		xdr_patch_u32(res, (size_t)at, st);
	}
	return NFS4_OK;
}

NFS4_OP(delegreturn)
{
	struct nfs4ops_ctx *c = nfs4ops_ctx(cs);
	struct os_putlist pl = { 0 };
	struct nfs4_stateid sid;
	struct nfs4_obj o;
	struct os_stid *s;
	uint64_t cid = 0;
	uint32_t st;

	(void)res;
	if (!c)
		return NFS4ERR_SERVERFAULT;
	if (nfs4_get_stateid(args, &sid))
		return NFS4ERR_BADXDR;
	st = nfs4ops_stateid_real(cs, &sid);
	if (st)
		return st;
	st = nfs4ops_cur(cs, &o);
	if (st)
		return st;
	pthread_mutex_lock(&c->st->lock);
	st = os_stid_check_locked(c->st, &sid, cs->minorversion, cs->clp ? cs->clp->clientid : 0, OS_KIND_ALL, &s);
	if ((!st || st == NFS4ERR_OLD_STATEID) && s->kind != OS_DELEG)
		st = NFS4ERR_BAD_STATEID;        /* not a delegation */
	if (!st && (!o.in || s->file->ino != o.attr.ino))
		st = NFS4ERR_BAD_STATEID;        /* not this file's */
	if (!st) {
		struct os_file *f = s->file;

		cid = s->clientid;
		dout(NFS, 5, "client %#llx: delegation returned%s", (unsigned long long)s->clientid,
		     s->recalled ? " (recalled)" : "");
		os_stid_free_locked(c->st, s, &pl);
		os_file_put_locked(c->st, f);
		perf_inc(&cs->srv->perf.delegs_returned, 1);
	}
	pthread_mutex_unlock(&c->st->lock);
	os_putlist_run(c->lc, &pl);
	nfs4ops_release(cs, &o);
	if (!st && cs->minorversion == 0)
		nfs4ops_v40_client(cs, cid);     /* RFC 7530 9.5: a stateid of the client renews it */
	return nfs4ops_stateid_verdict(cs, &sid, st);
}

/* The export @fh is in (NULL: a pseudo-filesystem directory, or garbage). */
static const struct nfs_export *fh_export(struct nfs4_compound *cs, const struct nfs4_fh *fh)
{
	struct nfs4_fhinfo fi;

	if (nfs4_fh_decode(fh, &fi) != NFS4_OK || fi.kind != NFS4_FH_EXPORT)
		return NULL;
	return nfs_export_by_id(cs->exports, fi.export_id);
}

/* The Kerberos v5 mechanism's OID, 1.2.840.113554.1.2.2, as the Linux
 * client and server put it in a secinfo4 (DER contents, no tag). */
static const uint8_t krb5_oid[] = { 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02 };

static void put_flavor(struct xdr_enc *res, uint32_t fl)
{
	if (fl == RPC_AUTH_SYS) {
		xdr_put_u32(res, RPC_AUTH_SYS);
		return;
	}
	xdr_put_u32(res, RPCSEC_GSS);
	xdr_put_opaque(res, krb5_oid, sizeof(krb5_oid));
	xdr_put_u32(res, 0);                         /* qop: the default */
	xdr_put_u32(res, fl == RPC_FLAVOR_KRB5P ? RPC_GSS_SVC_PRIVACY
			 : fl == RPC_FLAVOR_KRB5I ? RPC_GSS_SVC_INTEGRITY : RPC_GSS_SVC_NONE);
}

/*
 * SECINFO4resok: @e's sec= flavours in its order; for a pseudo-filesystem
 * directory (@e NULL) every flavour some export has, in the order first
 * met, so a client mounting the root with sec=krb5p finds it.
 */
static void put_secinfo(struct nfs4_compound *cs, const struct nfs_export *e, struct xdr_enc *res)
{
	uint32_t fl[NFS_EXPORT_SEC_MAX];
	unsigned int n = 0;

	if (e) {
		for (n = 0; n < e->nsec; n++)
			fl[n] = e->sec[n];
	} else {
		for (unsigned int i = 0; i < cs->exports->n; i++)
			for (unsigned int j = 0; j < cs->exports->e[i].nsec; j++) {
				uint32_t f = cs->exports->e[i].sec[j];
				unsigned int k;

				for (k = 0; k < n && fl[k] != f; k++)
					;
				if (k == n && n < NFS_EXPORT_SEC_MAX)
					fl[n++] = f;
			}
		if (!n)
			fl[n++] = RPC_AUTH_SYS;
	}
	xdr_put_u32(res, n);
	for (unsigned int i = 0; i < n; i++)
		put_flavor(res, fl[i]);
}

NFS4_OP(secinfo)
{
	char name[NFS4_MAX_NAME + 1];
	uint32_t st;
	uint64_t before = res->len;
	struct nfs4_fh saved = cs->cfh;
	const struct nfs_export *exp;

	st = nfs4_get_component(args, name, sizeof(name));
	if (st)
		return st;
	/* the name must exist: LOOKUP does the walk (pseudo fs included) */
	{
		struct xdr_dec d;
		uint8_t buf[4 + NFS4_MAX_NAME + 4];
		size_t n = strlen(name);

		memset(buf, 0, sizeof(buf));
		xdr_store_u32(buf, (uint32_t)n);
		memcpy(buf + 4, name, n);
		xdr_dec_init(&d, buf, 4 + XDR_PAD(n));
		st = nfs4_op_lookup_name(cs, &d, res);
		xdr_enc_truncate(res, (size_t)before);
	}
	exp = st ? NULL : fh_export(cs, &cs->cfh);
	cs->cfh = saved;
	if (st)
		return st;
	put_secinfo(cs, exp, res);
	/* RFC 8881 2.6.3.1.1.8: SECINFO consumes the current filehandle */
	if (cs->minorversion >= 1)
		cs->cfh.len = 0;
	return NFS4_OK;
}

enum { SECINFO_STYLE4_CURRENT_FH = 0, SECINFO_STYLE4_PARENT = 1 };

/*
 * RFC 8881 18.45: the flavors of the current filehandle, or of its parent
 * (found the way LOOKUPP does: NFS4ERR_NOENT above the root, NFS4ERR_NOTDIR
 * for a file); the current filehandle is consumed on success.  Every
 * object has the same flavors here, but the object must be there.
 */
NFS4_OP(secinfo_no_name)
{
	uint32_t style, st;
	const struct nfs_export *exp = NULL;

	if (xdr_get_u32(args, &style))
		return NFS4ERR_BADXDR;
	if (style == SECINFO_STYLE4_PARENT) {
		struct nfs4_fh saved = cs->cfh;
		bool had = cs->has_cur_stateid;
		struct nfs4_stateid cur = cs->cur_stateid;

		st = nfs4_op_lookupp(cs, args, res);
		if (!st)
			exp = fh_export(cs, &cs->cfh);
		cs->cfh = saved;
		cs->has_cur_stateid = had;
		cs->cur_stateid = cur;
		if (st)
			return st;
	} else if (style == SECINFO_STYLE4_CURRENT_FH) {
		struct nfs4_obj o;

		st = nfs4ops_cur(cs, &o);
		exp = o.exp;
		nfs4ops_release(cs, &o);
		if (st)
			return st;
	} else {
		return NFS4ERR_INVAL;      /* not a secinfo_style4 (knfsd answers the same) */
	}
	put_secinfo(cs, exp, res);
	cs->cfh.len = 0;
	return NFS4_OK;
}
