/*
 * ops_v40.c - the NFSv4.0 client operations: SETCLIENTID,
 * SETCLIENTID_CONFIRM and RENEW (RFC 7530 16.33, 16.34, 16.28).
 *
 * 4.0 clients live in the same table as 4.1 ones (nfs4.h), with
 * minorversion 0.  The record processing is RFC 7530's case analysis,
 * with its notation: a client record is { v, x, c, k, s } (verifier, id
 * string, client id, callback, confirm verifier) and has a principal.
 *
 *   SETCLIENTID { v, x, k }:
 *   - a confirmed record of x with another principal that holds state
 *     under an unexpired lease: NFS4ERR_CLID_INUSE (with the address the
 *     client id is used from); without state, or with the lease expired,
 *     x is free for the new principal (9.1.2);
 *   - a confirmed { v, x, c, l, s } (same verifier): a callback update,
 *     recorded as unconfirmed { v, x, c, k, t } beside it, t != s;
 *   - otherwise a new unconfirmed { v, x, d, k, t } replaces any
 *     unconfirmed record of x (the confirmed one stays until confirmed).
 *
 *   SETCLIENTID_CONFIRM { c, s }:
 *   - the callback update { c, s } of a confirmed record: it takes effect;
 *   - a confirmed { *, x, c, *, s } again: a retry, NFS4_OK;
 *   - an unconfirmed { *, x, c, k, s }: confirmed, and the previous
 *     incarnation of x, if any, is removed with all its state;
 *   - a principal other than the record's: NFS4ERR_CLID_INUSE, nothing
 *     changes; no such record: NFS4ERR_STALE_CLIENTID.
 *
 * Confirm verifiers are fresh for every record and every update
 * (nfs4_new_verifier_locked), so an update's can never confirm the record
 * it updates.  Neither operation renews a lease (9.5).  A confirmed
 * callback address (the record's, or an update's) is probed with CB_NULL
 * (callback.c; only on the host the SETCLIENTID came from).  Owner seqids and
 * OPEN_CONFIRM are in ops_open.c; RELEASE_LOCKOWNER in ops_lock.c.
 */
#include <string.h>

#include "common/log.h"
#include "nfs_gw/nfs4/ops.h"
#include "nfs_gw/nfs4/ops_int.h"
#include "nfs_gw/nfs4/recovery.h"

static bool same_owner(const struct nfs4_client *clp, const uint8_t *id, uint32_t len)
{
	return clp->minorversion == 0 && clp->owner_len == len && !memcmp(clp->owner, id, len);
}

/* a cb_client4 string into @buf (truncated: it only identifies the client in CLID_INUSE) */
static void keep_str(char *buf, size_t bufsz, const uint8_t *p, uint32_t n)
{
	size_t m = n < bufsz - 1 ? n : bufsz - 1;

	memcpy(buf, p, m);
	buf[m] = 0;
}

/* @clp holds state its lease still protects (RFC 7530 9.1.2) */
static bool holds_live_state_locked(struct nfs4_server *srv, const struct nfs4_client *clp)
{
	/* caller holds srv->lock; the hook takes only the state code's leaf lock */
	if (clp->courtesy)
		return false;
	return srv->hooks.client_has_state && srv->hooks.client_has_state(srv, clp->clientid);
}

NFS4_OP(setclientid)
{
	struct nfs4_server *srv = cs->srv;
	uint8_t verifier[NFS4_VERIFIER_SIZE], cverf[NFS4_VERIFIER_SIZE];
	const uint8_t *id, *netid, *addr;
	uint32_t idlen, netid_len, addr_len, cb_prog, cb_ident;
	struct nfs4_client *clp, *conf = NULL, *unconf = NULL, *gone[2] = { NULL, NULL };
	struct nfs4_principal p;
	uint64_t clientid;
	uint32_t st = NFS4_OK;

	if (xdr_get_fixed(args, verifier, sizeof(verifier)) || xdr_get_opaque(args, &id, &idlen, NFS4_OPAQUE_LIMIT) ||
	    xdr_get_u32(args, &cb_prog) || xdr_get_opaque(args, &netid, &netid_len, 64) ||
	    xdr_get_opaque(args, &addr, &addr_len, 128) || xdr_get_u32(args, &cb_ident))
		return NFS4ERR_BADXDR;
	nfs4_principal_of(cs->cred, &p);
	pthread_mutex_lock(&srv->lock);
	for (clp = srv->clients; clp; clp = clp->next) {
		if (clp->dead || !same_owner(clp, id, idlen))
			continue;
		if (clp->confirmed)
			conf = clp;
		else
			unconf = clp;
	}
	if (conf && !nfs4_principal_eq(&conf->principal, &p)) {
		if (holds_live_state_locked(srv, conf)) {
			/* clientaddr4 client_using */
			cs->body_on_error = true;
			xdr_put_string(res, conf->cb_netid);
			xdr_put_string(res, conf->cb_addr);
			st = NFS4ERR_CLID_INUSE;
			goto out;
		}
		/* no state, or a lease that has expired: x is free (9.1.2); the old
		 * record goes once the new one is confirmed */
	}
	if (conf && nfs4_principal_eq(&conf->principal, &p) && !memcmp(conf->verifier, verifier, sizeof(verifier))) {
		/* a callback update of the confirmed record: { v, x, c, k, t }, t != s */
		if (unconf) {
			nfs4_client_expire_locked(srv, unconf, false);
			gone[0] = unconf;
		}
		conf->upd_pending = true;
		conf->upd_principal = p;
		conf->upd_cb_prog = cb_prog;
		conf->upd_cb_ident = cb_ident;
		keep_str(conf->upd_cb_netid, sizeof(conf->upd_cb_netid), netid, netid_len);
		keep_str(conf->upd_cb_addr, sizeof(conf->upd_cb_addr), addr, addr_len);
		nfs4_new_verifier_locked(srv, conf->upd_verf);
		clientid = conf->clientid;
		memcpy(cverf, conf->upd_verf, sizeof(cverf));
	} else {
		/* a new client, a rebooted one or a new principal: a new unconfirmed record */
		if (unconf) {
			nfs4_client_expire_locked(srv, unconf, false);
			gone[0] = unconf;
		}
		clp = nfs4_client_new_locked(srv, id, idlen, verifier, &p, 0);
		nfs4_client_set_addr(clp, cs);
		if (!clp) {
			st = NFS4ERR_RESOURCE;
			goto out;
		}
		keep_str(clp->cb_netid, sizeof(clp->cb_netid), netid, netid_len);
		keep_str(clp->cb_addr, sizeof(clp->cb_addr), addr, addr_len);
		clp->cb_prog = cb_prog;
		clp->cb_ident = cb_ident;
		nfs4_cb_set_addr40_locked(clp, clp->cb_netid, clp->cb_addr, &cs->req->xprt->peer);
		clientid = clp->clientid;
		memcpy(cverf, clp->confirm_verf, sizeof(cverf));
		clp->refs--;            /* the caller's reference: we keep none */
	}
	xdr_put_u64(res, clientid);
	xdr_put_fixed(res, cverf, sizeof(cverf));
	dout(NFS, 5, "%s: SETCLIENTID -> %#llx", cs->req->xprt->peer_str, (unsigned long long)clientid);
out:
	pthread_mutex_unlock(&srv->lock);
	for (int i = 0; i < 2; i++)
		if (gone[i])
			nfs4_client_release(srv, gone[i]);
	return st;
}

NFS4_OP(setclientid_confirm)
{
	struct nfs4_server *srv = cs->srv;
	uint8_t verf[NFS4_VERIFIER_SIZE];
	struct nfs4_client *clp, *c, *gone = NULL;
	struct nfs4_principal p;
	uint64_t clientid;
	uint32_t st;
	bool probe = false;

	(void)res;
	if (xdr_get_u64(args, &clientid) || xdr_get_fixed(args, verf, sizeof(verf)))
		return NFS4ERR_BADXDR;
	nfs4_principal_of(cs->cred, &p);
	st = nfs4_client_find(srv, clientid, &clp);
	if (st)
		return NFS4ERR_STALE_CLIENTID;  /* no record { *, *, c, *, s } (a tombstone is none) */
	pthread_mutex_lock(&srv->lock);
	if (clp->dead || clp->minorversion != 0) {
		st = NFS4ERR_STALE_CLIENTID;
	} else if (clp->confirmed && clp->upd_pending && !memcmp(verf, clp->upd_verf, sizeof(verf))) {
		/* the callback update { v, x, c, k, s } of a confirmed record */
		if (!nfs4_principal_eq(&clp->upd_principal, &p) || !nfs4_principal_eq(&clp->principal, &p)) {
			st = NFS4ERR_CLID_INUSE;
		} else {
			memcpy(clp->confirm_verf, clp->upd_verf, sizeof(verf));
			clp->upd_pending = false;
			/* the new callback takes effect: probe it */
			memcpy(clp->cb_netid, clp->upd_cb_netid, sizeof(clp->cb_netid));
			memcpy(clp->cb_addr, clp->upd_cb_addr, sizeof(clp->cb_addr));
			clp->cb_prog = clp->upd_cb_prog;
			clp->cb_ident = clp->upd_cb_ident;
			nfs4_cb_set_addr40_locked(clp, clp->cb_netid, clp->cb_addr, &cs->req->xprt->peer);
			probe = clp->cb_sl != 0;
			st = NFS4_OK;
		}
	} else if (memcmp(verf, clp->confirm_verf, sizeof(verf))) {
		st = NFS4ERR_STALE_CLIENTID;
	} else if (!nfs4_principal_eq(&clp->principal, &p)) {
		st = NFS4ERR_CLID_INUSE;
	} else if (clp->confirmed) {
		st = NFS4_OK;               /* a retry whose first reply was lost */
	} else {
		for (c = srv->clients; c; c = c->next)
			if (c != clp && !c->dead && c->confirmed && same_owner(c, clp->owner, clp->owner_len)) {
				/* the client rebooted (or x changed hands): the old
				 * incarnation's state goes */
				nfs4_client_expire_locked(srv, c, false);
				gone = c;
				break;
			}
		clp->confirmed = true;
		nfs4_forget_expired_locked(srv, clp->owner, clp->owner_len, 0);
		probe = clp->cb_sl != 0;
		st = NFS4_OK;
	}
	pthread_mutex_unlock(&srv->lock);
	if (probe)
		nfs4_cb_probe(srv, clientid, NULL);
	/* on stable storage before it can open anything (OPEN records it
	 * too, should this fail) */
	if (st == NFS4_OK)
		nfs4_rec_record(srv, clp);
	nfs4_client_put(srv, clp);
	if (gone)
		nfs4_client_release(srv, gone);
	return st;
}

/*
 * RENEW (RFC 7530 16.28): the client id's lease, if its principal is the
 * one that established it (NFS4ERR_ACCESS otherwise; the RFC also allows a
 * principal with a file open, which AUTH_SYS clients do not need).  A
 * courtesy client is back; a cancelled lease is NFS4ERR_EXPIRED.
 */
NFS4_OP(renew)
{
	struct nfs4_client *clp;
	struct nfs4_principal p;
	uint64_t clientid;
	uint32_t st;
	bool confirmed, mine;

	(void)res;
	if (xdr_get_u64(args, &clientid))
		return NFS4ERR_BADXDR;
	st = nfs4_client_find(cs->srv, clientid, &clp);
	if (st)
		return st;
	nfs4_principal_of(cs->cred, &p);
	pthread_mutex_lock(&cs->srv->lock);
	confirmed = clp->confirmed && clp->minorversion == 0;
	mine = nfs4_principal_eq(&clp->principal, &p);
	pthread_mutex_unlock(&cs->srv->lock);
	if (!confirmed)
		st = NFS4ERR_STALE_CLIENTID;
	else if (!mine)
		st = NFS4ERR_ACCESS;
	else
		nfs4_client_renew(cs->srv, clp);
	nfs4_client_put(cs->srv, clp);
	return st;
}
