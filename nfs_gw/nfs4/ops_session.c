/*
 * ops_session.c - NFSv4.1 client and session operations (RFC 8881 18.33 -
 * 18.37, 18.46, 18.50, 18.51, 18.33): EXCHANGE_ID, CREATE_SESSION, DESTROY_SESSION,
 * BIND_CONN_TO_SESSION, BACKCHANNEL_CTL, DESTROY_CLIENTID, RECLAIM_COMPLETE and SEQUENCE.
 *
 * The back channel (callback.c): CREATE_SESSION with CONN_BACK_CHAN makes
 * the connection it came on the session's back channel too (granted when
 * the client offers a security flavour we can send: AUTH_NONE or
 * AUTH_SYS), BIND_CONN_TO_SESSION binds another connection to it (after a
 * reconnect: SEQUENCE reports SEQ4_STATUS_CB_PATH_DOWN until then),
 * BACKCHANNEL_CTL changes its program and security; each binding is probed
 * with CB_NULL.  State protection: SP4_NONE, and SP4_MACH_CRED over an
 * integrity-protected RPCSEC_GSS request (krb5i, krb5p; NFS4ERR_INVAL
 * otherwise, as knfsd): the client record then enforces, of what the
 * client asks, EXCHANGE_ID, CREATE_SESSION, DESTROY_CLIENTID (by the
 * principal comparison they always make, which for GSS compares the
 * principal itself: rpc_cred.gss_princ), DESTROY_SESSION and
 * BIND_CONN_TO_SESSION (NFS4ERR_WRONG_CRED from another principal), and
 * allows the machine credential for CLOSE, COMMIT, DELEGRETURN, LOCKU,
 * OPEN_DOWNGRADE, SECINFO*, TEST_STATEID and FREE_STATEID, which take any
 * principal here anyway.  SP4_SSV is not supported.
 *
 * EXCHANGE_ID and CREATE_SESSION follow the case analysis of RFC 8881
 * 18.35.4 and 18.36.4 (numbered as there): records are compared by owner,
 * verifier and principal; a confirmed record of another principal is only
 * kept (NFS4ERR_CLID_INUSE) while it holds state under an unexpired lease;
 * CREATE_SESSION checks its sequence before anything else, keeps the
 * result of every request it sequenced (errors too) for a retry, and
 * checks both channels' attributes (NFS4ERR_TOOSMALL for sizes no request
 * or reply could fit in).
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "nfs_gw/nfs4/nfs4.h"
#include "nfs_gw/nfs4/ops.h"
#include "nfs_gw/nfs4/recovery.h"

#define SERVER_MAJOR_ID "loligo-nfs-gw"
#define SERVER_SCOPE "loligo"
#define IMPL_DOMAIN "loligo.invalid"
#define IMPL_NAME "loligo NFS gateway"

#define EXCHGID4_CLIENT_FLAGS                                                                            \
	(EXCHGID4_FLAG_SUPP_MOVED_REFER | EXCHGID4_FLAG_SUPP_MOVED_MIGR | EXCHGID4_FLAG_SUPP_FENCE_OPS | \
	 EXCHGID4_FLAG_BIND_PRINC_STATEID | EXCHGID4_FLAG_MASK_PNFS | EXCHGID4_FLAG_UPD_CONFIRMED_REC_A)

/* smallest request/response a fore channel may negotiate: RPC headers, a
 * SEQUENCE and a bit */
#define MIN_CHANNEL_SIZE 256
/* ... and a back channel: a CB_COMPOUND of CB_SEQUENCE and one recall */
#define MIN_CB_REQUEST 512
#define MIN_CB_REPLY 128
#define MIN_CB_OPS 2

/* the flags CREATE_SESSION defines (RFC 8881 18.36.1) */
#define CREATE_SESSION4_FLAGS \
	(CREATE_SESSION4_FLAG_PERSIST | CREATE_SESSION4_FLAG_CONN_BACK_CHAN | CREATE_SESSION4_FLAG_CONN_RDMA)

/* @clp holds state its lease still protects */
static bool holds_live_state_locked(struct nfs4_server *srv, const struct nfs4_client *clp)
{
	/* caller holds srv->lock; the hook takes only the state code's leaf lock */
	if (clp->courtesy)
		return false;
	return srv->hooks.client_has_state && srv->hooks.client_has_state(srv, clp->clientid);
}

static struct nfs4_client *find_owner_locked(struct nfs4_server *srv, const uint8_t *owner, uint32_t len,
					     bool confirmed)
{
	/* caller holds srv->lock */
	struct nfs4_client *clp;

	for (clp = srv->clients; clp; clp = clp->next)
		if (clp->minorversion >= 1 && clp->confirmed == confirmed && clp->owner_len == len &&
		    memcmp(clp->owner, owner, len) == 0)
			return clp;
	return NULL;
}

static uint32_t get_state_protect_ops(struct xdr_dec *args, struct xdr_bitmap *enforce, struct xdr_bitmap *allow)
{
	if (xdr_get_bitmap(args, enforce) || xdr_get_bitmap(args, allow))
		return NFS4ERR_BADXDR;
	return NFS4_OK;
}

/* SP4_MACH_CRED: what the gateway enforces of what a client asks (the
 * operations on the client record and its sessions, as knfsd), and what it
 * lets a client send with the machine credential in place of the user's */
static const uint32_t spo_enforce_ours[2] = { 0, (1u << (OP_BIND_CONN_TO_SESSION - 32)) |
						 (1u << (OP_EXCHANGE_ID - 32)) | (1u << (OP_CREATE_SESSION - 32)) |
						 (1u << (OP_DESTROY_SESSION - 32)) | (1u << (OP_DESTROY_CLIENTID - 32)) };
static const uint32_t spo_allow_ours[2] = { (1u << OP_CLOSE) | (1u << OP_COMMIT) | (1u << OP_DELEGRETURN) |
					       (1u << OP_LOCKU) | (1u << OP_OPEN_DOWNGRADE),
					   (1u << (OP_SECINFO - 32)) | (1u << (OP_SECINFO_NO_NAME - 32)) | (1u << (OP_TEST_STATEID - 32)) |
					   (1u << (OP_FREE_STATEID - 32)) };

/* RFC 8881 18.35.3: an op of @clp's spo_must_enforce from another principal */
uint32_t nfs4_mach_cred_check(const struct nfs4_compound *cs, const struct nfs4_client *clp, uint32_t op)
{
	struct nfs4_principal p;

	if (!clp || !clp->mach_cred || op >= 64 || !(clp->spo_enforce[op / 32] & (1u << (op % 32))))
		return NFS4_OK;
	nfs4_principal_of(cs->cred, &p);
	return nfs4_principal_eq(&clp->principal, &p) ? NFS4_OK : NFS4ERR_WRONG_CRED;
}

/* ---- EXCHANGE_ID (18.35) ------------------------------------------------------ */

NFS4_OP(exchange_id)
{
	struct nfs4_server *srv = cs->srv;
	uint8_t verifier[NFS4_VERIFIER_SIZE];
	const uint8_t *owner, *s;
	uint32_t owner_len, flags, how, nimpl, n, st = NFS4_OK;
	struct nfs4_time date;
	struct nfs4_client *conf, *unconf, *clp = NULL, *old[2] = { NULL, NULL };
	struct nfs4_principal p;
	struct xdr_bitmap enforce, allow;
	bool update;

	memset(&enforce, 0, sizeof(enforce));
	memset(&allow, 0, sizeof(allow));
	if (xdr_get_fixed(args, verifier, sizeof(verifier)) ||
	    xdr_get_opaque(args, &owner, &owner_len, NFS4_OPAQUE_LIMIT) || xdr_get_u32(args, &flags) ||
	    xdr_get_u32(args, &how))
		return NFS4ERR_BADXDR;
	switch (how) {
	case SP4_NONE:
		break;
	case SP4_MACH_CRED:
		if (get_state_protect_ops(args, &enforce, &allow))
			return NFS4ERR_BADXDR;
		break;
	case SP4_SSV:
		return NFS4ERR_ENCR_ALG_UNSUPP;
	default:
		return NFS4ERR_BADXDR;
	}
	if (xdr_get_u32(args, &nimpl) || nimpl > 1)
		return NFS4ERR_BADXDR;
	if (nimpl) {
		if (xdr_get_opaque(args, &s, &n, NFS4_OPAQUE_LIMIT) || xdr_get_opaque(args, &s, &n, NFS4_OPAQUE_LIMIT) ||
		    nfs4_get_time(args, &date))
			return NFS4ERR_BADXDR;
	}
	/* undefined bits (CONFIRMED_R is the server's alone) are NFS4ERR_INVAL (18.35.3) */
	if (owner_len == 0 || (flags & ~EXCHGID4_CLIENT_FLAGS))
		return NFS4ERR_INVAL;
	/* machine credentials are RPCSEC_GSS principals, and the request must
	 * be integrity protected (knfsd answers the same) */
	if (how == SP4_MACH_CRED && (!cs->cred || cs->cred->flavor != RPCSEC_GSS ||
				     cs->cred->gss_service < RPC_GSS_SVC_INTEGRITY))
		return NFS4ERR_INVAL;
	update = flags & EXCHGID4_FLAG_UPD_CONFIRMED_REC_A;
	nfs4_principal_of(cs->cred, &p);

	pthread_mutex_lock(&srv->lock);
	conf = find_owner_locked(srv, owner, owner_len, true);
	unconf = find_owner_locked(srv, owner, owner_len, false);
	if (update) {
		if (!conf)
			st = NFS4ERR_NOENT;                       /* 7: leaves the unconfirmed record */
		else if (memcmp(conf->verifier, verifier, sizeof(verifier)))
			st = NFS4ERR_NOT_SAME;                    /* 8 */
		else if (!nfs4_principal_eq(&conf->principal, &p))
			st = NFS4ERR_PERM;                        /* 9 */
		else
			clp = conf;                               /* 6: the update */
	} else if (conf && !nfs4_principal_eq(&conf->principal, &p) && holds_live_state_locked(srv, conf)) {
		st = NFS4ERR_CLID_INUSE;                          /* 3, with state under a live lease */
	} else if (conf && nfs4_principal_eq(&conf->principal, &p) &&
		   !memcmp(conf->verifier, verifier, sizeof(verifier))) {
		clp = conf;                                       /* 2: the same incarnation again */
	} else {
		/* 1, 4 and 5, and 3 without live state: a new unconfirmed record;
		 * an older unconfirmed one of the owner is replaced (4), a
		 * confirmed one of another principal deleted with its state (3);
		 * a confirmed one of the same principal (5) stays until
		 * CREATE_SESSION confirms the new record */
		if (unconf) {
			nfs4_client_expire_locked(srv, unconf, false);
			old[0] = unconf;
		}
		if (conf && !nfs4_principal_eq(&conf->principal, &p)) {
			nfs4_client_expire_locked(srv, conf, false);
			old[1] = conf;
		}
		clp = nfs4_client_new_locked(srv, owner, owner_len, verifier, &p, cs->minorversion);
		nfs4_client_set_addr(clp, cs);
		if (!clp)
			st = NFS4ERR_SERVERFAULT;
		else
			clp->refs--;                      /* the table's reference is enough here */
	}
	if (clp) {
		clp->flags = EXCHGID4_FLAG_USE_NON_PNFS;
		clp->mach_cred = how == SP4_MACH_CRED;
		for (int i = 0; i < 2; i++) {
			clp->spo_enforce[i] = clp->mach_cred ? enforce.w[i] & spo_enforce_ours[i] : 0;
			clp->spo_allow[i] = clp->mach_cred ? allow.w[i] & spo_allow_ours[i] : 0;
		}
		xdr_put_u64(res, clp->clientid);
		xdr_put_u32(res, clp->cs_seqid + 1);
		xdr_put_u32(res, clp->flags | (clp->confirmed ? EXCHGID4_FLAG_CONFIRMED_R : 0));
		xdr_put_u32(res, how == SP4_MACH_CRED ? SP4_MACH_CRED : SP4_NONE);
		if (how == SP4_MACH_CRED) {
			xdr_put_bitmap(res, clp->spo_enforce, 2);
			xdr_put_bitmap(res, clp->spo_allow, 2);
		}
		xdr_put_u64(res, 0);                      /* so_minor_id */
		xdr_put_opaque(res, SERVER_MAJOR_ID, sizeof(SERVER_MAJOR_ID) - 1);
		xdr_put_opaque(res, SERVER_SCOPE, sizeof(SERVER_SCOPE) - 1);
		xdr_put_u32(res, 1);
		xdr_put_string(res, IMPL_DOMAIN);
		xdr_put_string(res, IMPL_NAME);
		xdr_put_u64(res, 0);
		xdr_put_u32(res, 0);
		dout(NFS, 5, "EXCHANGE_ID from %s: client %#llx%s", cs->req->xprt->peer_str,
		     (unsigned long long)clp->clientid, clp->confirmed ? " (confirmed)" : "");
	}
	pthread_mutex_unlock(&srv->lock);
	for (int i = 0; i < 2; i++)
		if (old[i])
			nfs4_client_release(srv, old[i]);
	return st;
}

/* ---- CREATE_SESSION (18.36) --------------------------------------------------- */

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* Channel attributes no request or reply fits in (RFC 8881 18.36.3: NFS4ERR_TOOSMALL) */
static bool fore_too_small(const struct nfs4_channel_attrs *a)
{
	return a->maxrequestsize < MIN_CHANNEL_SIZE || a->maxresponsesize < MIN_CHANNEL_SIZE ||
	       a->maxoperations < 1 || a->maxrequests < 1;
}

static bool back_too_small(const struct nfs4_channel_attrs *a)
{
	return a->maxrequestsize < MIN_CB_REQUEST || a->maxresponsesize < MIN_CB_REPLY ||
	       a->maxoperations < MIN_CB_OPS || a->maxrequests < 1;
}

/* Keep the result of the CREATE_SESSION that used the client's sequence
 * slot, whatever it was, for a retry (18.36.4 phase 2). */
static void cs_cache_locked(struct nfs4_client *clp, uint32_t status, const uint8_t *body, size_t len)
{
	uint8_t *copy = len ? malloc(len) : NULL;

	if (len && !copy) {
		clp->cs_cached = false;     /* a retry then gets NFS4ERR_SEQ_MISORDERED */
		return;
	}
	if (len)
		memcpy(copy, body, len);
	free(clp->cs_body);
	clp->cs_body = copy;
	clp->cs_body_len = len;
	clp->cs_status = status;
	clp->cs_cached = true;
}

NFS4_OP(create_session)
{
	struct nfs4_server *srv = cs->srv;
	struct nfs4_channel_attrs fore, back;
	struct nfs4_principal p;
	uint64_t clientid;
	uint32_t seq, flags, cb_program, st;
	struct nfs4_client *clp, *c, *next, *expired = NULL;
	struct nfs4_session *ses = NULL;
	struct nfs4_cb_sec sec;
	size_t body = res->len;
	bool probe = false;

	if (xdr_get_u64(args, &clientid) || xdr_get_u32(args, &seq) || xdr_get_u32(args, &flags) ||
	    nfs4_get_channel_attrs(args, &fore) || nfs4_get_channel_attrs(args, &back) ||
	    xdr_get_u32(args, &cb_program))
		return NFS4ERR_BADXDR;
	st = nfs4_cb_get_sec(args, cs->req, &sec);
	if (st)
		return st;
	nfs4_principal_of(cs->cred, &p);

	/* 1. the client record */
	st = nfs4_client_find(srv, clientid, &clp);
	if (st) {
		nfs4_cb_sec_release(&sec);
		return NFS4ERR_STALE_CLIENTID;   /* a tombstone is no record either */
	}
	pthread_mutex_lock(&srv->lock);
	if (clp->dead || clp->minorversion < 1) {
		st = NFS4ERR_STALE_CLIENTID;
		goto out_unlock;
	}
	/* 2. its sequence: a retry gets the cached result, whatever it was */
	if (seq == clp->cs_seqid) {
		if (clp->cs_cached) {
			xdr_put_fixed(res, clp->cs_body, clp->cs_body_len);
			cs->body_on_error = true;
			st = clp->cs_status;
		} else {
			st = NFS4ERR_SEQ_MISORDERED;    /* the contrived initial entry */
		}
		goto out_unlock;
	}
	if (seq != clp->cs_seqid + 1) {
		st = NFS4ERR_SEQ_MISORDERED;
		goto out_unlock;
	}
	clp->cs_seqid = seq;
	/* 3. confirmation: not by another principal */
	if (!nfs4_principal_eq(&clp->principal, &p)) {
		st = NFS4ERR_CLID_INUSE;
		goto out_cache;
	}
	/* 4. the session */
	if (flags & ~CREATE_SESSION4_FLAGS) {
		st = NFS4ERR_INVAL;
		goto out_cache;
	}
	if (fore_too_small(&fore) || back_too_small(&back)) {
		st = NFS4ERR_TOOSMALL;
		goto out_cache;
	}
	ses = calloc(1, sizeof(*ses));
	if (!ses) {
		st = NFS4ERR_SERVERFAULT;
		goto out_cache;
	}
	fore.headerpadsize = 0;
	fore.maxrequestsize = min_u32(fore.maxrequestsize, srv->p.max_req);
	fore.maxresponsesize = min_u32(fore.maxresponsesize, srv->p.max_resp);
	fore.maxresponsesize_cached = min_u32(fore.maxresponsesize_cached, srv->p.max_resp_cached);
	fore.maxoperations = min_u32(fore.maxoperations, srv->p.max_ops);
	fore.maxrequests = min_u32(fore.maxrequests, srv->p.slots);
	fore.nrdma_ird = 0;
	/* the back channel: maxoperations and maxrequests as offered (MUST NOT change) */
	back.headerpadsize = 0;
	back.nrdma_ird = 0;
	if (slot_table_init(&ses->slots, fore.maxrequests)) {
		free(ses);
		st = NFS4ERR_SERVERFAULT;
		goto out_cache;
	}
	ses->fore = fore;
	ses->back = back;
	ses->flags = 0;          /* no persistence, no RDMA */
	ses->cb.program = cb_program;
	ses->cb.sec = sec;
	sec.ctx = NULL;          /* the session's reference now */
	if ((flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN) && sec.ok) {
		/* this connection carries our callbacks too */
		ses->flags |= CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
		nfs4_cb_bind_back_locked(ses, cs->req->xprt);
		probe = true;
	} else if ((flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN) && sec.gss_offered) {
		/* wanted, but only RPCSEC_GSS handles we cannot use (no context
		 * of this principal): the back channel is down from the start,
		 * and SEQUENCE says so (CB_PATH_DOWN); no delegations */
		ses->cb.wanted = true;
		ses->cb.state = NFS4_CB_DOWN;
	}
	ses->clp = clp;
	clp->refs++;
	ses->refs = 1;           /* the table's */
	xdr_store_u32(ses->id, (uint32_t)(clientid >> 32));
	xdr_store_u32(ses->id + 4, (uint32_t)clientid);
	xdr_store_u32(ses->id + 8, srv->boot);
	xdr_store_u32(ses->id + 12, ++srv->next_sessionid);
	ses->conns[ses->nconns++] = cs->req->xprt->id;
	ses->next = srv->sessions;
	srv->sessions = ses;
	ses->cl_next = clp->sessions;
	clp->sessions = ses;

	if (!clp->confirmed) {
		/* case 5 of EXCHANGE_ID completes here: the rebooted client's
		 * new record replaces the old incarnation and its state */
		for (c = srv->clients; c; c = next) {
			next = c->next;
			if (c != clp && c->confirmed && c->minorversion >= 1 && c->owner_len == clp->owner_len &&
			    memcmp(c->owner, clp->owner, c->owner_len) == 0) {
				nfs4_client_expire_locked(srv, c, false);
				c->next = expired;
				expired = c;
			}
		}
		clp->confirmed = true;
		nfs4_forget_expired_locked(srv, clp->owner, clp->owner_len, clp->minorversion);
	}
	nfs4_client_renew(srv, clp);

	xdr_put_fixed(res, ses->id, NFS4_SESSIONID_SIZE);
	xdr_put_u32(res, seq);
	xdr_put_u32(res, ses->flags);
	nfs4_put_channel_attrs(res, &fore);
	nfs4_put_channel_attrs(res, &back);
	dout(NFS, 5, "CREATE_SESSION from %s: client %#llx, %u slots, %u ops%s", cs->req->xprt->peer_str,
	     (unsigned long long)clientid, fore.maxrequests, fore.maxoperations,
	     probe ? ", back channel on this connection"
		   : (flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN)
			? ", no back channel (no AUTH_NONE/AUTH_SYS, no RPCSEC_GSS handle of this principal)"
			: "");
	st = NFS4_OK;
out_cache:
	if (res->err)
		clp->cs_cached = false;
	else
		cs_cache_locked(clp, st, st ? NULL : res->buf + body, st ? 0 : res->len - body);
out_unlock:
	if (probe && st == NFS4_OK)
		nfs4_cb_probe(srv, clientid, ses);   /* only reads ses->id: no reference needed */
	pthread_mutex_unlock(&srv->lock);
	while ((c = expired)) {
		expired = c->next;
		c->next = NULL;
		nfs4_client_release(srv, c);
	}
	nfs4_client_put(srv, clp);
	nfs4_cb_sec_release(&sec);       /* unless a session took it */
	return st;
}

/* ---- DESTROY_SESSION (18.37) -------------------------------------------------- */

NFS4_OP(destroy_session)
{
	struct nfs4_server *srv = cs->srv;
	uint8_t id[NFS4_SESSIONID_SIZE];
	struct nfs4_session *ses;

	if (xdr_get_fixed(args, id, sizeof(id)))
		return NFS4ERR_BADXDR;
	ses = nfs4_session_find(srv, id);
	if (!ses)
		return NFS4ERR_BADSESSION;
	if (ses == cs->session && cs->opidx + 1 != cs->opcnt) {
		nfs4_session_put(srv, ses);
		return NFS4ERR_NOT_ONLY_OP;
	}
	if (nfs4_mach_cred_check(cs, ses->clp, OP_DESTROY_SESSION)) {
		nfs4_session_put(srv, ses);
		return NFS4ERR_WRONG_CRED;
	}
	/* RFC 8881 18.37.3: from a connection of that session only */
	{
		bool bound = false;

		pthread_mutex_lock(&srv->lock);
		for (unsigned int i = 0; i < ses->nconns; i++)
			bound |= ses->conns[i] == cs->req->xprt->id;
		pthread_mutex_unlock(&srv->lock);
		if (!bound) {
			nfs4_session_put(srv, ses);
			return NFS4ERR_CONN_NOT_BOUND_TO_SESSION;
		}
	}
	nfs4_session_destroy(srv, ses);
	nfs4_session_put(srv, ses);
	return NFS4_OK;
}

/* ---- BIND_CONN_TO_SESSION (18.34) --------------------------------------------- */

NFS4_OP(bind_conn_to_session)
{
	struct nfs4_server *srv = cs->srv;
	uint8_t id[NFS4_SESSIONID_SIZE];
	uint32_t dir, got;
	bool rdma, back;
	struct nfs4_session *ses;

	if (xdr_get_fixed(args, id, sizeof(id)) || xdr_get_u32(args, &dir) || xdr_get_bool(args, &rdma))
		return NFS4ERR_BADXDR;
	if (dir != CDFC4_FORE && dir != CDFC4_BACK && dir != CDFC4_FORE_OR_BOTH && dir != CDFC4_BACK_OR_BOTH)
		return NFS4ERR_INVAL;
	ses = nfs4_session_find(srv, id);
	if (!ses)
		return NFS4ERR_BADSESSION;
	if (nfs4_mach_cred_check(cs, ses->clp, OP_BIND_CONN_TO_SESSION)) {
		nfs4_session_put(srv, ses);
		return NFS4ERR_WRONG_CRED;
	}
	/* the back channel needs a flavour we can call with (CREATE_SESSION's
	 * or BACKCHANNEL_CTL's); without one *_OR_BOTH binds the fore channel */
	pthread_mutex_lock(&srv->lock);
	back = dir != CDFC4_FORE && ses->cb.sec.ok && !ses->dead;
	if (dir == CDFC4_BACK && !back) {
		pthread_mutex_unlock(&srv->lock);
		nfs4_session_put(srv, ses);
		return NFS4ERR_INVAL;
	}
	if (back)
		nfs4_cb_bind_back_locked(ses, cs->req->xprt);
	pthread_mutex_unlock(&srv->lock);
	if (dir != CDFC4_BACK)
		nfs4_session_bind_conn(srv, ses, cs->req->xprt->id);
	got = dir == CDFC4_BACK ? CDFS4_BACK : back ? CDFS4_BOTH : CDFS4_FORE;
	nfs4_client_renew(srv, ses->clp);
	if (back)
		nfs4_cb_probe(srv, ses->clp->clientid, ses);
	dout(NFS, 5, "BIND_CONN_TO_SESSION from %s: direction %u, bound %u", cs->req->xprt->peer_str, dir, got);
	xdr_put_fixed(res, id, sizeof(id));
	xdr_put_u32(res, got);
	xdr_put_bool(res, false);
	nfs4_session_put(srv, ses);
	return NFS4_OK;
}

/* ---- BACKCHANNEL_CTL (18.33) -------------------------------------------------- */

NFS4_OP(backchannel_ctl)
{
	struct nfs4_server *srv = cs->srv;
	struct nfs4_cb_sec sec;
	uint32_t prog, st;
	bool probe;

	(void)res;
	if (xdr_get_u32(args, &prog))
		return NFS4ERR_BADXDR;
	st = nfs4_cb_get_sec(args, cs->req, &sec);
	if (st)
		return st;
	if (!sec.ok)
		return NFS4ERR_INVAL;    /* only RPCSEC_GSS handles we cannot use */
	pthread_mutex_lock(&srv->lock);
	cs->session->cb.program = prog;
	nfs4_cb_sec_release(&cs->session->cb.sec);
	cs->session->cb.sec = sec;
	probe = cs->session->cb.xprt != NULL;
	if (probe)
		cs->session->cb.state = NFS4_CB_UNKNOWN;
	pthread_mutex_unlock(&srv->lock);
	if (probe)
		nfs4_cb_probe(srv, cs->clp->clientid, cs->session);
	return NFS4_OK;
}

/* ---- DESTROY_CLIENTID (18.50) ------------------------------------------------- */

NFS4_OP(destroy_clientid)
{
	struct nfs4_server *srv = cs->srv;
	struct nfs4_principal p;
	struct nfs4_client *clp;
	uint64_t clientid;
	uint32_t st;
	bool expired = false;

	if (xdr_get_u64(args, &clientid))
		return NFS4ERR_BADXDR;
	st = nfs4_client_find(srv, clientid, &clp);
	if (st)
		return NFS4ERR_STALE_CLIENTID;
	nfs4_principal_of(cs->cred, &p);
	pthread_mutex_lock(&srv->lock);
	if (clp->sessions || (srv->hooks.client_has_state && srv->hooks.client_has_state(srv, clientid))) {
		st = NFS4ERR_CLIENTID_BUSY;
	} else if (!nfs4_principal_eq(&clp->principal, &p)) {
		st = NFS4ERR_CLID_INUSE;
	} else {
		/* false if the reaper got there first: it releases it then */
		expired = nfs4_client_expire_locked(srv, clp, false);
	}
	pthread_mutex_unlock(&srv->lock);
	if (expired)
		nfs4_client_release(srv, clp);
	nfs4_client_put(srv, clp);
	return st;
}

/* ---- RECLAIM_COMPLETE (18.51) ------------------------------------------------- */

NFS4_OP(reclaim_complete)
{
	bool one_fs;
	uint32_t st = NFS4_OK;

	if (xdr_get_bool(args, &one_fs))
		return NFS4ERR_BADXDR;
	if (one_fs)
		return cs->cfh.len ? NFS4_OK : NFS4ERR_NOFILEHANDLE;   /* one filesystem: nothing per fs */
	pthread_mutex_lock(&cs->srv->lock);
	if (cs->clp->reclaim_complete)
		st = NFS4ERR_COMPLETE_ALREADY;
	pthread_mutex_unlock(&cs->srv->lock);
	if (st)
		return st;
	/* from here on it opens and locks anew: on stable storage first */
	if (nfs4_rec_record(cs->srv, cs->clp))
		return NFS4ERR_DELAY;
	pthread_mutex_lock(&cs->srv->lock);
	if (cs->clp->reclaim_complete)
		st = NFS4ERR_COMPLETE_ALREADY;      /* a concurrent one won */
	else
		cs->clp->reclaim_complete = true;
	pthread_mutex_unlock(&cs->srv->lock);
	if (st == NFS4_OK)
		nfs4_rec_reclaim_complete(cs->srv, cs->clp);
	return st;
}

/* ---- SEQUENCE (18.46) --------------------------------------------------------- */

NFS4_OP(sequence)
{
	struct nfs4_server *srv = cs->srv;
	uint8_t id[NFS4_SESSIONID_SIZE];
	uint32_t seqid, slotid, highest, top;
	bool cachethis, dead;
	struct nfs4_session *ses;
	uint8_t *reply;
	size_t len;
	int v;

	if (xdr_get_fixed(args, id, sizeof(id)) || xdr_get_u32(args, &seqid) || xdr_get_u32(args, &slotid) ||
	    xdr_get_u32(args, &highest) || xdr_get_bool(args, &cachethis))
		return NFS4ERR_BADXDR;
	ses = nfs4_session_find(srv, id);
	if (!ses)
		return NFS4ERR_BADSESSION;
	pthread_mutex_lock(&srv->lock);
	dead = ses->dead || ses->clp->dead;
	pthread_mutex_unlock(&srv->lock);
	if (dead) {
		nfs4_session_put(srv, ses);
		return NFS4ERR_BADSESSION;
	}
	if (cs->opcnt > ses->fore.maxoperations) {
		nfs4_session_put(srv, ses);
		return NFS4ERR_TOO_MANY_OPS;
	}
	if (cs->req->rec_len > ses->fore.maxrequestsize) {
		nfs4_session_put(srv, ses);
		return NFS4ERR_REQ_TOO_BIG;
	}
	v = slot_table_begin(&ses->slots, slotid, seqid, cachethis, cs->opcnt, &reply, &len);
	switch (v) {
	case SLOT_NEW:
		cs->slot_held = true;
		break;
	case SLOT_REPLAY:
		dout(NFS, 5, "%s: SEQUENCE slot %u seqid %u: replay from the slot cache", cs->req->xprt->peer_str,
		     slotid, seqid);
		cs->session = ses;
		cs->replay = reply;
		cs->replay_len = len;
		return NFS4_OK;
	case SLOT_REPLAY_UNCACHED:
		cs->replay_uncached = true;
		break;
	default:
		dout(NFS, 5, "%s: SEQUENCE slot %u seqid %u: error %d", cs->req->xprt->peer_str, slotid, seqid, v);
		nfs4_session_put(srv, ses);
		return (uint32_t)v;
	}
	cs->session = ses;
	cs->clp = ses->clp;
	cs->slotid = slotid;
	cs->cachethis = cachethis;
	/* SP4_NONE: a connection used with a session is bound to it */
	nfs4_session_bind_conn(srv, ses, cs->req->xprt->id);
	nfs4_client_renew(srv, ses->clp);

	top = ses->slots.nslots - 1;
	xdr_put_fixed(res, id, sizeof(id));
	xdr_put_u32(res, seqid);
	xdr_put_u32(res, slotid);
	xdr_put_u32(res, top);              /* sr_highest_slotid */
	xdr_put_u32(res, top);              /* sr_target_highest_slotid */
	pthread_mutex_lock(&srv->lock);
	xdr_put_u32(res, atomic_load_explicit(&ses->clp->seq_flags, memory_order_relaxed) |
			 nfs4_cb_seq_flags_locked(ses));
	pthread_mutex_unlock(&srv->lock);
	return NFS4_OK;
}
