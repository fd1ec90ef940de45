/*
 * ops_v40.c - the NFSv4.0 client operations: SETCLIENTID,
 * SETCLIENTID_CONFIRM and RENEW (RFC 7530 16.33, 16.34, 16.29).
 *
 * 4.0 clients live in the same table as 4.1 ones (nfs4.h), with
 * minorversion 0.  SETCLIENTID makes an unconfirmed record, or refreshes
 * the confirm verifier of a confirmed one with the same verifier (a
 * callback update); SETCLIENTID_CONFIRM confirms it and, when a client
 * rebooted (same id, new verifier), expires the previous incarnation and
 * its state.  The confirm verifier is derived from the client id and the
 * server's boot verifier, so it needs no storage.  Owner seqids and
 * OPEN_CONFIRM are in ops_open.c; RELEASE_LOCKOWNER in ops_lock.c.
 */
#include <string.h>

#include "common/log.h"
#include "nfs_gw/nfs4/ops.h"
#include "nfs_gw/nfs4/ops_int.h"

static void confirm_verf(const struct nfs4_server *srv, uint64_t clientid, uint8_t out[NFS4_VERIFIER_SIZE])
{
	uint64_t v = clientid * 0x9e3779b97f4a7c15ULL;

	for (int i = 0; i < NFS4_VERIFIER_SIZE; i++)
		out[i] = (uint8_t)(v >> (8 * i)) ^ srv->boot_verifier[i];
}

static bool same_owner(const struct nfs4_client *clp, const uint8_t *id, uint32_t len)
{
	return clp->minorversion == 0 && clp->owner_len == len && !memcmp(clp->owner, id, len);
}

NFS4_OP(setclientid)
{
	struct nfs4_server *srv = cs->srv;
	uint8_t verifier[NFS4_VERIFIER_SIZE], cverf[NFS4_VERIFIER_SIZE];
	const uint8_t *id, *p;
	uint32_t idlen, n, cb_prog, cb_ident;
	struct nfs4_client *clp, *conf = NULL, *unconf = NULL, *gone = NULL;
	uint64_t clientid;

	if (xdr_get_fixed(args, verifier, sizeof(verifier)) || xdr_get_opaque(args, &id, &idlen, NFS4_OPAQUE_LIMIT) ||
	    xdr_get_u32(args, &cb_prog) || xdr_get_opaque(args, &p, &n, 64) || xdr_get_opaque(args, &p, &n, 128) ||
	    xdr_get_u32(args, &cb_ident))
		return NFS4ERR_BADXDR;
	pthread_mutex_lock(&srv->lock);
	for (clp = srv->clients; clp; clp = clp->next) {
		if (clp->dead || !same_owner(clp, id, idlen))
			continue;
		if (clp->confirmed)
			conf = clp;
		else
			unconf = clp;
	}
	if (conf && !memcmp(conf->verifier, verifier, sizeof(verifier))) {
		/* the same incarnation again (callback update): keep its id */
		clientid = conf->clientid;
		if (unconf) {
			nfs4_client_expire_locked(srv, unconf);
			gone = unconf;
		}
	} else {
		/* a new client, or a rebooted one: a new unconfirmed record */
		if (unconf) {
			nfs4_client_expire_locked(srv, unconf);
			gone = unconf;
		}
		clp = nfs4_client_new_locked(srv, id, idlen, verifier, cs->cred->uid, 0);
		nfs4_client_set_addr(clp, cs);
		if (!clp) {
			pthread_mutex_unlock(&srv->lock);
			if (gone)
				nfs4_client_release(srv, gone);
			return NFS4ERR_RESOURCE;
		}
		clientid = clp->clientid;
		clp->refs--;            /* the caller's reference: we keep none */
	}
	pthread_mutex_unlock(&srv->lock);
	if (gone)
		nfs4_client_release(srv, gone);
	confirm_verf(srv, clientid, cverf);
	xdr_put_u64(res, clientid);
	xdr_put_fixed(res, cverf, sizeof(cverf));
	dout(NFS, 5, "%s: SETCLIENTID -> %#llx", cs->req->xprt->peer_str, (unsigned long long)clientid);
	return NFS4_OK;
}

NFS4_OP(setclientid_confirm)
{
	struct nfs4_server *srv = cs->srv;
	uint8_t verf[NFS4_VERIFIER_SIZE], want[NFS4_VERIFIER_SIZE];
	struct nfs4_client *clp, *c, *gone = NULL;
	uint64_t clientid;
	uint32_t st;

	(void)res;
	if (xdr_get_u64(args, &clientid) || xdr_get_fixed(args, verf, sizeof(verf)))
		return NFS4ERR_BADXDR;
	st = nfs4_client_find(srv, clientid, &clp);
	if (st)
		return st;
	confirm_verf(srv, clientid, want);
	if (memcmp(verf, want, sizeof(want)) || clp->minorversion != 0) {
		nfs4_client_put(srv, clp);
		return NFS4ERR_STALE_CLIENTID;
	}
	pthread_mutex_lock(&srv->lock);
	if (!clp->confirmed) {
		for (c = srv->clients; c; c = c->next)
			if (c != clp && !c->dead && c->confirmed && same_owner(c, clp->owner, clp->owner_len)) {
				/* the client rebooted: its old incarnation's state goes */
				nfs4_client_expire_locked(srv, c);
				gone = c;
				break;
			}
		clp->confirmed = true;
	}
	pthread_mutex_unlock(&srv->lock);
	nfs4_client_renew(clp);
	nfs4_client_put(srv, clp);
	if (gone)
		nfs4_client_release(srv, gone);
	return NFS4_OK;
}

NFS4_OP(renew)
{
	struct nfs4_client *clp;
	uint64_t clientid;
	uint32_t st;

	(void)res;
	if (xdr_get_u64(args, &clientid))
		return NFS4ERR_BADXDR;
	st = nfs4_client_find(cs->srv, clientid, &clp);
	if (st)
		return st;
	nfs4_client_renew(clp);
	nfs4_client_put(cs->srv, clp);
	return NFS4_OK;
}
