/*
 * callback.c - NFSv4 callbacks: the 4.1 back channel (RFC 8881 2.10.3.1,
 * 18.33, 18.34, 18.36, 20.9) and 4.0 callbacks (RFC 7530 3.3.3, 16.33).
 *
 * 4.1: a session's back channel is a connection the client opened to us
 * (CREATE_SESSION with CONN_BACK_CHAN binds the one it came on,
 * BIND_CONN_TO_SESSION another one, e.g. after a reconnect).  Calls go out
 * on it multiplexed with our replies (rpc_xprt_call(), nfs_gw/rpc/clnt.c)
 * with the program and security the client gave (CREATE_SESSION,
 * BACKCHANNEL_CTL), and every CB_COMPOUND starts with CB_SEQUENCE on a
 * back-channel slot of ours (struct nfs4_back_chan: one seqid per slot,
 * advanced when the client answered it).
 *
 * Under RPCSEC_GSS (4.1 only, RFC 8881 18.36.4) a callback is made with the
 * client's own fore-channel context (gss.h: rpc_gss_call_encode(), the
 * reply's verifier checked by rpc_gss_reply_check()); the context gone or
 * expired, or a reply that does not verify, is a path DOWN.
 *
 * 4.0: SETCLIENTID names a callback address; after SETCLIENTID_CONFIRM we
 * probe it with CB_NULL over a TCP connection of our own (rpc_tcp_call),
 * kept open for the next call.  We only connect to the host the client's
 * SETCLIENTID came from: the gateway is no tool for reaching third hosts
 * (a client behind NAT has no reachable callback address anyway, and gets
 * no callbacks: nothing it needs).
 *
 * Every call runs on one callback thread, from a queue of jobs (struct
 * nfs4_cb_job): a probe (CB_NULL) after a path is bound, a CB_SEQUENCE for
 * `nfs client callback ID`, a recall.  Each call is bounded by
 * nfs4_cb_timeout; one unanswered marks the path DOWN, a wrong answer
 * FAULT, an answer UP (knfsd's NFSD4_CB_UP/DOWN/FAULT), and SEQUENCE
 * reports them (nfs4_cb_seq_flags_locked): SEQ4_STATUS_CB_PATH_DOWN when a
 * client that wants a back channel has no working one, so the client binds
 * a connection again (BIND_CONN_TO_SESSION) or makes a new session.
 *
 * Locks: path state lives under srv->lock (sessions, clients); the job
 * queue has its own leaf lock q->lock.  No lock is held across a call.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "nfs_gw/nfs4/nfs4.h"

#define CB_MAX_REPLY (64u << 10)

struct nfs4_cb_queue {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct nfs4_cb_job *head, *tail; /* protected by lock */
	bool stopping;                   /* protected by lock */
	struct rpc_xprt *busy_xprt;      /* protected by lock: the call in progress goes on it */
	pthread_t thread;
	bool started;
};

const char *nfs4_cb_state_name(enum nfs4_cb_state st)
{
	switch (st) {
	case NFS4_CB_NONE:
		return "none";
	case NFS4_CB_UNKNOWN:
		return "unknown";
	case NFS4_CB_UP:
		return "up";
	case NFS4_CB_DOWN:
		return "down";
	case NFS4_CB_FAULT:
		return "fault";
	}
	return "?";
}

/* ---- what the client told us ------------------------------------------------- */

void nfs4_cb_sec_release(struct nfs4_cb_sec *sec)
{
	if (sec->ctx)
		rpc_gss_ctx_put(sec->gss, sec->ctx);
	sec->ctx = NULL;
}

/*
 * RPCSEC_GSS for the back channel (RFC 8881 18.36.4): usable when the call
 * itself came under RPCSEC_GSS and gcbp_handle_from_server is one of our
 * handles whose context belongs to the same principal.  Anything else (a
 * forged or stale handle, another client's context, an AUTH_SYS caller)
 * is not ours to use: the entry is skipped.
 */
static bool gss_sec_take(const struct rpc_req *req, uint32_t service, const uint8_t *hs, uint32_t hslen,
			 const uint8_t *hc, uint32_t hclen, struct nfs4_cb_sec *sec)
{
	struct gss_sctx *c;

	if (!req || !req->gss.ctx || !req->gss.g || req->call.cred.flavor != RPCSEC_GSS ||
	    service < RPC_GSS_SVC_NONE || service > RPC_GSS_SVC_PRIVACY || hclen > RPC_GSS_MAX_HANDLE)
		return false;
	c = rpc_gss_ctx_get(req->gss.g, hs, hslen, req->call.cred.gss_princ);
	if (!c)
		return false;
	sec->ok = true;
	sec->flavor = RPCSEC_GSS;
	sec->gss = req->gss.g;
	sec->ctx = c;
	sec->gss_service = service;
	memcpy(sec->gss_handle, hc, hclen);
	sec->gss_handle_len = hclen;
	return true;
}

uint32_t nfs4_cb_get_sec(struct xdr_dec *args, const struct rpc_req *req, struct nfs4_cb_sec *sec)
{
	uint32_t n, i, flavor, v, len, uid, gid, stamp, hslen, hclen;
	const uint8_t *hs, *hc;
	char machine[RPC_AUTHSYS_MAX_MACHINE + 1];

	memset(sec, 0, sizeof(*sec));
	if (xdr_get_u32(args, &n) || n > 16)
		return NFS4ERR_BADXDR;
	for (i = 0; i < n; i++) {
		if (xdr_get_u32(args, &flavor))
			goto badxdr;
		switch (flavor) {
		case RPC_AUTH_NONE:
			if (!sec->ok) {
				sec->ok = true;
				sec->flavor = RPC_AUTH_NONE;
			}
			break;
		case RPC_AUTH_SYS:
			xdr_get_u32(args, &stamp);
			xdr_get_string(args, machine, sizeof(machine), RPC_AUTHSYS_MAX_MACHINE);
			xdr_get_u32(args, &uid);
			xdr_get_u32(args, &gid);
			if (xdr_get_u32(args, &len) || len > RPC_AUTHSYS_MAX_GIDS)
				goto badxdr;
			xdr_skip(args, (size_t)len * 4);
			if (!args->err && !sec->ok) {
				sec->ok = true;
				sec->flavor = RPC_AUTH_SYS;
				sec->uid = uid;
				sec->gid = gid;
				snprintf(sec->machine, sizeof(sec->machine), "%s", machine);
			}
			break;
		case RPCSEC_GSS:
			/* gss_cb_handles4 */
			xdr_get_u32(args, &v);
			xdr_get_opaque(args, &hs, &hslen, NFS4_OPAQUE_LIMIT);
			xdr_get_opaque(args, &hc, &hclen, NFS4_OPAQUE_LIMIT);
			if (args->err)
				goto badxdr;
			sec->gss_offered = true;
			if (!sec->ok && !gss_sec_take(req, v, hs, hslen, hc, hclen, sec))
				dout(NFS, 5, "%s: callback RPCSEC_GSS handle (service %u) is no context of the caller's",
				     req && req->xprt ? req->xprt->peer_str : "?", v);
			break;
		default:
			goto badxdr;
		}
		if (args->err)
			goto badxdr;
	}
	return NFS4_OK;
badxdr:
	nfs4_cb_sec_release(sec);
	return NFS4ERR_BADXDR;
}

void nfs4_cb_bind_back_locked(struct nfs4_session *ses, struct rpc_xprt *x)
{
	/* caller holds srv->lock */
	struct nfs4_back_chan *b = &ses->cb;

	b->wanted = true;
	if (b->xprt != x) {
		if (b->xprt)
			rpc_xprt_put(b->xprt);
		b->xprt = rpc_xprt_get(x);
	}
	b->state = NFS4_CB_UNKNOWN;
	if (!b->nslots)
		b->nslots = ses->back.maxrequests < NFS4_CB_SLOTS ? ses->back.maxrequests : NFS4_CB_SLOTS;
	if (!b->nslots)
		b->nslots = 1;
}

void nfs4_cb_session_free_locked(struct nfs4_session *ses)
{
	/* caller holds srv->lock */
	if (ses->cb.xprt)
		rpc_xprt_put(ses->cb.xprt);
	ses->cb.xprt = NULL;
	nfs4_cb_sec_release(&ses->cb.sec);
}

/* The back channel may carry a call: bound, connection open, not known broken. */
static bool back_usable_locked(const struct nfs4_back_chan *b)
{
	return b->xprt && !atomic_load_explicit(&b->xprt->closed_at, memory_order_acquire) &&
	       (b->state == NFS4_CB_UNKNOWN || b->state == NFS4_CB_UP) &&
	       /* RPCSEC_GSS: the context destroyed or expired is a path down */
	       (!b->sec.ctx || rpc_gss_ctx_alive(b->sec.gss, b->sec.ctx));
}

uint32_t nfs4_cb_seq_flags_locked(const struct nfs4_session *ses)
{
	/* caller holds srv->lock */
	const struct nfs4_session *s;
	bool wanted = false, up = false;
	uint32_t f = 0;

	for (s = ses->clp->sessions; s; s = s->cl_next) {
		wanted |= s->cb.wanted;
		up |= back_usable_locked(&s->cb);
	}
	if (wanted && !up)
		f |= SEQ4_STATUS_CB_PATH_DOWN;
	if (ses->cb.wanted && !back_usable_locked(&ses->cb))
		f |= SEQ4_STATUS_CB_PATH_DOWN_SESSION;
	if (ses->cb.state == NFS4_CB_FAULT)
		f |= SEQ4_STATUS_BACKCHANNEL_FAULT;
	return f;
}

/* "h1.h2.h3.h4.p1.p2" (tcp) or "v6addr.p1.p2" (tcp6): 0 or -EINVAL */
static int parse_uaddr(const char *netid, const char *uaddr, struct sockaddr_storage *ss, socklen_t *sl)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *p1, *p2;
	unsigned int hi, lo;
	size_t hl;

	p2 = strrchr(uaddr, '.');
	if (!p2 || p2 == uaddr)
		return -EINVAL;
	for (p1 = p2 - 1; p1 > uaddr && *p1 != '.'; p1--)
		;
	if (*p1 != '.' || sscanf(p1 + 1, "%u", &hi) != 1 || sscanf(p2 + 1, "%u", &lo) != 1 || hi > 255 || lo > 255)
		return -EINVAL;
	hl = (size_t)(p1 - uaddr);
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, uaddr, hl);
	host[hl] = 0;
	memset(ss, 0, sizeof(*ss));
	if (!strcmp(netid, "tcp")) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
			return -EINVAL;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)(hi << 8 | lo));
		*sl = sizeof(*sin);
		return 0;
	}
	if (!strcmp(netid, "tcp6")) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			return -EINVAL;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)(hi << 8 | lo));
		*sl = sizeof(*sin6);
		return 0;
	}
	return -EINVAL;
}

/* The IP of @ss, v4-mapped v6 as v4: 16 bytes + family into @key. */
static void host_of(const struct sockaddr_storage *ss, uint8_t key[17])
{
	memset(key, 0, 17);
	if (ss->ss_family == AF_INET) {
		key[0] = 4;
		memcpy(key + 1, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a)) {
			key[0] = 4;
			memcpy(key + 1, a->s6_addr + 12, 4);
		} else {
			key[0] = 6;
			memcpy(key + 1, a, 16);
		}
	}
}

void nfs4_cb_set_addr40_locked(struct nfs4_client *clp, const char *netid, const char *uaddr,
			       const struct sockaddr_storage *peer)
{
	/* caller holds srv->lock */
	struct sockaddr_storage ss;
	socklen_t sl = 0;
	uint8_t a[17], b[17];

	memset(&clp->cb_ss, 0, sizeof(clp->cb_ss));
	clp->cb_sl = 0;
	clp->cb_state = NFS4_CB_DOWN;
	if (parse_uaddr(netid, uaddr, &ss, &sl)) {
		snprintf(clp->cb_why, sizeof(clp->cb_why), "callback address '%.40s' (%s) is not tcp/tcp6", uaddr,
			 netid);
		return;
	}
	host_of(&ss, a);
	host_of(peer, b);
	if (memcmp(a, b, sizeof(a))) {
		snprintf(clp->cb_why, sizeof(clp->cb_why), "callback address %.40s is not the client's host", uaddr);
		return;
	}
	clp->cb_ss = ss;
	clp->cb_sl = sl;
	clp->cb_state = NFS4_CB_UNKNOWN;
	clp->cb_why[0] = 0;
}

bool nfs4_cb_path_up(struct nfs4_server *srv, uint64_t clientid)
{
	struct nfs4_client *clp;
	struct nfs4_session *s;
	bool up = false;

	pthread_mutex_lock(&srv->lock);
	for (clp = srv->clients; clp; clp = clp->next)
		if (clp->clientid == clientid && !clp->dead)
			break;
	if (clp && clp->minorversion == 0) {
		up = clp->cb_state == NFS4_CB_UP;
	} else if (clp) {
		for (s = clp->sessions; s && !up; s = s->cl_next)
			up = back_usable_locked(&s->cb) && s->cb.state == NFS4_CB_UP;
	}
	pthread_mutex_unlock(&srv->lock);
	return up;
}

void nfs4_cb_recall(struct nfs4_server *srv, uint64_t clientid, const struct nfs4_stateid *sid,
		    const struct nfs4_fh *fh)
{
	struct nfs4_cb_job *job = calloc(1, sizeof(*job));

	if (!job)
		return;                  /* not recalled: revoked after a lease like an unanswered recall */
	job->kind = NFS4_CBJ_RECALL;
	job->clientid = clientid;
	job->stateid = *sid;
	job->fh = *fh;
	nfs4_cb_queue(srv, job);
}

/* ---- the queue ---------------------------------------------------------------- */

void nfs4_cb_queue(struct nfs4_server *srv, struct nfs4_cb_job *job)
{
	struct nfs4_cb_queue *q = srv->cbq;
	bool stopped;

	job->next = NULL;
	if (!q) {
		stopped = true;
	} else {
		pthread_mutex_lock(&q->lock);
		stopped = q->stopping || !q->started;
		if (!stopped) {
			if (q->tail)
				q->tail->next = job;
			else
				q->head = job;
			q->tail = job;
			pthread_cond_signal(&q->cond);
		}
		pthread_mutex_unlock(&q->lock);
	}
	if (stopped) {
		if (job->done)
			job->done(srv, job, -ECANCELED, 0);
		else
			free(job);
	}
}

void nfs4_cb_probe(struct nfs4_server *srv, uint64_t clientid, const struct nfs4_session *ses)
{
	struct nfs4_cb_job *job = calloc(1, sizeof(*job));

	if (!job)
		return;
	job->kind = NFS4_CBJ_NULL;
	job->clientid = clientid;
	if (ses) {
		job->has_session = true;
		memcpy(job->sessionid, ses->id, NFS4_SESSIONID_SIZE);
	}
	nfs4_cb_queue(srv, job);
}

/* ---- one call --------------------------------------------------------------- */

static void sec_hdr(struct rpc_call_hdr *h, const struct nfs4_cb_sec *sec)
{
	h->flavor = sec->flavor;
	h->uid = sec->uid;
	h->gid = sec->gid;
	h->stamp = (uint32_t)(now_real_ns() / 1000000000ull);
	snprintf(h->machine, sizeof(h->machine), "%s", sec->machine[0] ? sec->machine : "loligo");
}

static uint64_t cb_timeout(const struct nfs4_server *srv)
{
	return srv->p.cb_timeout_ns ? srv->p.cb_timeout_ns : 5000000000ull;
}

/* Encode the call for @job into @e. */
static int encode_call(struct xdr_enc *e, uint32_t xid, const struct rpc_call_hdr *h, const struct nfs4_cb_job *job,
		       const struct nfs4_cb_args *a)
{
	rpc_call_begin(e, xid, h);
	if (h->proc == NFS4_CB_PROC_COMPOUND)
		nfs4_cb_put_compound(e, a);
	(void)job;
	return rpc_reply_end(e);
}

/* The same call under RPCSEC_GSS with @sec's context (4.1 back channel). */
static int encode_gss_call(struct xdr_enc *e, uint32_t xid, const struct rpc_call_hdr *h,
			   const struct nfs4_cb_args *a, const struct nfs4_cb_sec *sec, uint32_t *gseq)
{
	struct xdr_enc args;
	int r;

	xdr_enc_init(&args, CB_MAX_REPLY);
	if (h->proc == NFS4_CB_PROC_COMPOUND)
		nfs4_cb_put_compound(&args, a);
	r = args.err;
	if (!r)
		r = rpc_gss_call_encode(sec->gss, sec->ctx, e, xid, h, sec->gss_handle, sec->gss_handle_len,
					sec->gss_service, args.buf, args.len, gseq);
	xdr_enc_free(&args);
	return r ? r : rpc_reply_end(e);
}

/*
 * Decode the reply of a call; @err the transport's result.  Return what the
 * job's done() gets: 0 and *@status, or -errno; *@fault: the client
 * answered, wrongly.
 */
static int decode_reply(int err, const uint8_t *rep, size_t len, const struct rpc_call_hdr *h,
			const struct nfs4_cb_args *a, struct nfs4_cb_job *job, uint32_t *status, bool *fault,
			bool *seq_done, char *why, size_t whylen, const struct nfs4_cb_sec *sec, uint32_t gseq,
			void **plain)
{
	struct rpc_reply rr;
	struct nfs4_cb_res cr;
	int r;

	*status = NFS4_OK;
	*fault = false;
	*seq_done = false;
	if (err) {
		snprintf(why, whylen, "%s", err == -ETIMEDOUT ? "no answer" : strerror(-err));
		return err;
	}
	if (rpc_decode_reply(rep, len, &rr)) {
		snprintf(why, whylen, "garbage reply");
		*fault = true;
		return -EPROTO;
	}
	if (sec && sec->ctx) {
		/* RPCSEC_GSS: nothing of the reply counts before its verifier
		 * (and, with integrity or privacy, its body) verifies */
		r = rpc_gss_reply_check(sec->gss, sec->ctx, gseq, sec->gss_service, &rr, plain);
		if (r) {
			snprintf(why, whylen, "%s", r == -EKEYEXPIRED ? "RPCSEC_GSS context expired"
							   : "reply's RPCSEC_GSS verifier or body does not verify");
			return r == -EKEYEXPIRED ? r : -EACCES;   /* not believed: the path is down */
		}
	}
	r = rpc_reply_errno(&rr);
	if (r) {
		snprintf(why, whylen, "RPC error (reply_stat %u, stat %u)", rr.reply_stat, rr.stat);
		*fault = true;
		return -EPROTO;
	}
	if (h->proc != NFS4_CB_PROC_COMPOUND)
		return 0;
	if (nfs4_cb_get_compound_res(rr.res, rr.res_len, &cr)) {
		snprintf(why, whylen, "CB_COMPOUND reply does not parse");
		*fault = true;
		return -EPROTO;
	}
	*status = cr.status;
	if (a->sequence) {
		if (!cr.has_seq) {
			snprintf(why, whylen, "CB_COMPOUND status %u without a CB_SEQUENCE result", cr.status);
			*fault = true;
			return -EPROTO;
		}
		if (cr.seq_status == NFS4_OK) {
			if (memcmp(cr.sessionid, a->sessionid, NFS4_SESSIONID_SIZE) || cr.seqid != a->seqid ||
			    cr.slotid != a->slotid) {
				snprintf(why, whylen, "CB_SEQUENCE answered for another session, slot or seqid");
				*fault = true;
				return -EPROTO;
			}
			*seq_done = true;
		} else {
			snprintf(why, whylen, "CB_SEQUENCE: error %u", cr.seq_status);
			/* the slot's seqid did move if the client saw it misordered */
			*seq_done = cr.seq_status == NFS4ERR_SEQ_MISORDERED;
			*fault = cr.seq_status != NFS4ERR_DELAY;
			return cr.seq_status == NFS4ERR_DELAY ? -EAGAIN : -EPROTO;
		}
	}
	if (a->recall && cr.has_recall)
		*status = cr.recall_status;
	if (a->getattr) {
		if (!cr.has_getattr && cr.status == NFS4_OK) {
			snprintf(why, whylen, "CB_COMPOUND without a CB_GETATTR result");
			*fault = true;
			return -EPROTO;
		}
		if (cr.has_getattr)
			*status = cr.getattr_status;
		if (cr.has_getattr && cr.getattr_status == NFS4_OK) {
			job->attr_mask = cr.getattr_mask;
			job->attr_change = cr.change;
			job->attr_size = cr.size;
		}
	}
	return 0;
}

static void set_busy(struct nfs4_cb_queue *q, struct rpc_xprt *x)
{
	pthread_mutex_lock(&q->lock);
	q->busy_xprt = x;
	if (x && q->stopping)
		rpc_xprt_fail_calls(x, -ECANCELED);   /* stopping already: do not wait */
	pthread_mutex_unlock(&q->lock);
}

/* The operation after CB_SEQUENCE that @job sends, into @a. */
static void cb_job_args(const struct nfs4_cb_job *job, struct nfs4_cb_args *a)
{
	if (job->kind == NFS4_CBJ_RECALL) {
		a->recall = true;
		a->stateid = job->stateid;
		a->truncate = job->truncate;
		a->fh = job->fh;
	} else if (job->kind == NFS4_CBJ_GETATTR) {
		a->getattr = true;
		a->getattr_mask = NFS4_CB_GETATTR_CHANGE | NFS4_CB_GETATTR_SIZE;
		a->fh = job->fh;
	}
}

/* A 4.1 job: on a session's back channel. */
static int run41(struct nfs4_server *srv, struct nfs4_cb_job *job, uint32_t *status)
{
	struct nfs4_client *clp;
	struct nfs4_session *ses = NULL, *s;
	struct rpc_call_hdr h = { 0 };
	struct nfs4_cb_args a = { .minorversion = 1 };
	struct nfs4_cb_sec sec;
	struct rpc_xprt *x = NULL;
	struct xdr_enc e;
	uint8_t *rep = NULL;
	void *plain = NULL;
	size_t rlen = 0, len;
	uint32_t slot = 0, xid, gseq = 0;
	bool fault, seq_done;
	char why[128];
	int r;

	pthread_mutex_lock(&srv->lock);
	for (clp = srv->clients; clp; clp = clp->next)
		if (clp->clientid == job->clientid && !clp->dead)
			break;
	if (clp) {
		for (s = clp->sessions; s; s = s->cl_next) {
			if (job->has_session ? !memcmp(s->id, job->sessionid, NFS4_SESSIONID_SIZE)
					     : back_usable_locked(&s->cb)) {
				ses = s;
				break;
			}
		}
	}
	if (!ses || !ses->cb.xprt || atomic_load(&ses->cb.xprt->closed_at)) {
		if (ses && ses->cb.wanted)
			ses->cb.state = NFS4_CB_DOWN;
		pthread_mutex_unlock(&srv->lock);
		return -ENOTCONN;
	}
	for (slot = 0; slot < ses->cb.nslots && ses->cb.busy[slot]; slot++)
		;
	if (slot == ses->cb.nslots) {
		pthread_mutex_unlock(&srv->lock);
		return -EAGAIN;
	}
	ses->cb.busy[slot] = true;
	ses->refs++;
	x = rpc_xprt_get(ses->cb.xprt);
	h.prog = ses->cb.program;
	h.vers = NFS4_CB_VERSION;
	h.proc = job->kind == NFS4_CBJ_NULL ? NFS4_CB_PROC_NULL : NFS4_CB_PROC_COMPOUND;
	sec_hdr(&h, &ses->cb.sec);
	sec = ses->cb.sec;
	if (sec.ctx)
		rpc_gss_ctx_hold(sec.gss, sec.ctx);   /* ours for the call */
	a.sequence = true;
	memcpy(a.sessionid, ses->id, NFS4_SESSIONID_SIZE);
	a.seqid = ses->cb.seqid[slot] + 1;
	a.slotid = slot;
	a.highest_slotid = ses->cb.nslots - 1;
	cb_job_args(job, &a);
	ses->cb.calls++;
	pthread_mutex_unlock(&srv->lock);

	xid = rpc_new_xid();
	xdr_enc_init(&e, CB_MAX_REPLY);
	if (sec.ctx)
		r = encode_gss_call(&e, xid, &h, &a, &sec, &gseq);
	else
		r = encode_call(&e, xid, &h, job, &a);
	if (!r) {
		uint8_t *buf = xdr_enc_steal(&e, &len);

		set_busy(srv->cbq, x);
		r = rpc_xprt_call(x, buf, len, xid, cb_timeout(srv), &rep, &rlen);
		set_busy(srv->cbq, NULL);
	}
	xdr_enc_free(&e);
	r = decode_reply(r, rep, rlen, &h, &a, job, status, &fault, &seq_done, why, sizeof(why), &sec, gseq,
			 &plain);
	free(plain);
	free(rep);
	nfs4_cb_sec_release(&sec);

	pthread_mutex_lock(&srv->lock);
	ses->cb.busy[slot] = false;
	if (seq_done)
		ses->cb.seqid[slot] = a.seqid;
	if (ses->cb.xprt == x) {   /* still the same connection: its state is ours to say */
		if (!r)
			ses->cb.state = NFS4_CB_UP;
		else if (fault)
			ses->cb.state = NFS4_CB_FAULT;
		else if (r != -EAGAIN && r != -ECANCELED)
			ses->cb.state = NFS4_CB_DOWN;
	}
	if (r && r != -ECANCELED)
		ses->cb.failures++;
	pthread_mutex_unlock(&srv->lock);
	if (r)
		dout(NFS, 1, "client %#llx: callback (%s) on %s failed: %s", (unsigned long long)job->clientid,
		     h.proc == NFS4_CB_PROC_NULL ? "CB_NULL" : "CB_COMPOUND", x->peer_str, why);
	else
		dout(NFS, 5, "client %#llx: callback (%s) on %s: status %u", (unsigned long long)job->clientid,
		     h.proc == NFS4_CB_PROC_NULL ? "CB_NULL" : "CB_COMPOUND", x->peer_str, *status);
	rpc_xprt_put(x);
	nfs4_session_put(srv, ses);
	return r;
}

/* A 4.0 job: on our own connection to the client's callback address. */
static int run40(struct nfs4_server *srv, struct nfs4_client *clp, struct nfs4_cb_job *job, uint32_t *status)
{
	struct rpc_call_hdr h = { 0 };
	struct nfs4_cb_args a = { .minorversion = 0 };
	struct nfs4_cb_sec sec = { .ok = true, .flavor = RPC_AUTH_SYS };
	struct sockaddr_storage ss;
	socklen_t sl;
	struct xdr_enc e;
	uint8_t *rep = NULL;
	void *plain = NULL;
	size_t rlen = 0;
	uint32_t xid;
	bool fault, seq_done;
	char why[96];
	int r;

	pthread_mutex_lock(&srv->lock);
	ss = clp->cb_ss;
	sl = clp->cb_sl;
	h.prog = clp->cb_prog;
	a.ident = clp->cb_ident;
	if (clp->principal.flavor == RPC_AUTH_NONE)
		sec.flavor = RPC_AUTH_NONE;
	pthread_mutex_unlock(&srv->lock);
	if (!sl)
		return -ENOTCONN;
	h.vers = NFS4_CB_VERSION;
	/* 4.0 has no CB_SEQUENCE: a "sequence" job is a CB_NULL */
	h.proc = job->kind == NFS4_CBJ_RECALL || job->kind == NFS4_CBJ_GETATTR ? NFS4_CB_PROC_COMPOUND
									      : NFS4_CB_PROC_NULL;
	sec_hdr(&h, &sec);
	cb_job_args(job, &a);
	xid = rpc_new_xid();
	xdr_enc_init(&e, CB_MAX_REPLY);
	r = encode_call(&e, xid, &h, job, &a);
	if (!r) {
		/* the queue's stop cannot interrupt this one: it is bounded by
		 * the timeout (connect included) */
		bool reused = clp->cb_fd >= 0;

		r = rpc_tcp_call(&clp->cb_fd, (struct sockaddr *)&ss, sl, e.buf, e.len, xid, CB_MAX_REPLY,
				 cb_timeout(srv), &rep, &rlen);
		if (reused && (r == -ECONNRESET || r == -EPIPE || r == -ENOTCONN))
			/* the client closed the connection we kept: once more on a new one */
			r = rpc_tcp_call(&clp->cb_fd, (struct sockaddr *)&ss, sl, e.buf, e.len, xid, CB_MAX_REPLY,
					 cb_timeout(srv), &rep, &rlen);
	}
	xdr_enc_free(&e);
	r = decode_reply(r, rep, rlen, &h, &a, job, status, &fault, &seq_done, why, sizeof(why), NULL, 0, &plain);
	free(plain);
	free(rep);
	pthread_mutex_lock(&srv->lock);
	if (!r)
		clp->cb_state = NFS4_CB_UP;
	else if (fault)
		clp->cb_state = NFS4_CB_FAULT;
	else if (r != -ECANCELED)
		clp->cb_state = NFS4_CB_DOWN;
	if (r)
		memcpy(clp->cb_why, why, sizeof(clp->cb_why));
	else
		clp->cb_why[0] = 0;
	pthread_mutex_unlock(&srv->lock);
	if (r)
		dout(NFS, 1, "client %#llx: 4.0 callback to %s failed: %s", (unsigned long long)clp->clientid,
		     clp->cb_addr, why);
	return r;
}

static void run_job(struct nfs4_server *srv, struct nfs4_cb_job *job)
{
	struct nfs4_client *clp = NULL;
	uint32_t status = 0;
	int r;

	if (nfs4_client_find(srv, job->clientid, &clp)) {
		r = -ENOENT;
	} else if (clp->minorversion >= 1) {
		r = run41(srv, job, &status);
	} else {
		r = run40(srv, clp, job, &status);
	}
	nfs4_client_put(srv, clp);
	if (job->done)
		job->done(srv, job, r, status);
	else
		free(job);
}

static void *cb_thread(void *arg)
{
	struct nfs4_server *srv = arg;
	struct nfs4_cb_queue *q = srv->cbq;
	struct nfs4_cb_job *job;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (!q->head && !q->stopping)
			pthread_cond_wait(&q->cond, &q->lock);
		if (q->stopping)
			break;
		job = q->head;
		q->head = job->next;
		if (!q->head)
			q->tail = NULL;
		pthread_mutex_unlock(&q->lock);
		run_job(srv, job);
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int nfs4_cb_start(struct nfs4_server *srv)
{
	struct nfs4_cb_queue *q = calloc(1, sizeof(*q));
	int r;

	if (!q)
		return -ENOMEM;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	srv->cbq = q;
	r = -pthread_create(&q->thread, NULL, cb_thread, srv);
	if (r) {
		srv->cbq = NULL;
		pthread_cond_destroy(&q->cond);
		pthread_mutex_destroy(&q->lock);
		free(q);
		return r;
	}
	q->started = true;
	return 0;
}

void nfs4_cb_stop(struct nfs4_server *srv)
{
	struct nfs4_cb_queue *q = srv->cbq;
	struct nfs4_cb_job *job;

	if (!q || !q->started)
		return;
	pthread_mutex_lock(&q->lock);
	q->stopping = true;
	if (q->busy_xprt)
		rpc_xprt_fail_calls(q->busy_xprt, -ECANCELED);
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->thread, NULL);
	q->started = false;
	while ((job = q->head)) {
		q->head = job->next;
		if (job->done)
			job->done(srv, job, -ECANCELED, 0);
		else
			free(job);
	}
	q->tail = NULL;
}

void nfs4_cb_free(struct nfs4_server *srv)
{
	struct nfs4_cb_queue *q = srv->cbq;

	if (!q)
		return;
	nfs4_cb_stop(srv);
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	free(q);
	srv->cbq = NULL;
}

/* ---- a call someone waits for (`nfs client callback ID`) ----------------------- */

struct sync_wait {
	pthread_mutex_t m;
	pthread_cond_t c;
	bool done;
	int err;
	uint32_t status;
};

static void sync_done(struct nfs4_server *srv, struct nfs4_cb_job *job, int err, uint32_t status)
{
	struct sync_wait *w = job->arg;

	(void)srv;
	free(job);
	pthread_mutex_lock(&w->m);
	w->done = true;
	w->err = err;
	w->status = status;
	pthread_cond_signal(&w->c);
	pthread_mutex_unlock(&w->m);
}

int nfs4_cb_call_sync(struct nfs4_server *srv, uint64_t clientid, enum nfs4_cb_kind kind, uint32_t *status)
{
	struct nfs4_cb_job *job = calloc(1, sizeof(*job));
	struct sync_wait w = { .done = false };

	*status = 0;
	if (!job)
		return -ENOMEM;
	pthread_mutex_init(&w.m, NULL);
	pthread_cond_init(&w.c, NULL);
	job->kind = kind;
	job->clientid = clientid;
	job->done = sync_done;
	job->arg = &w;
	nfs4_cb_queue(srv, job);
	/* every job is bounded by nfs4_cb_timeout, so this wait is too */
	pthread_mutex_lock(&w.m);
	while (!w.done)
		pthread_cond_wait(&w.c, &w.m);
	pthread_mutex_unlock(&w.m);
	pthread_cond_destroy(&w.c);
	pthread_mutex_destroy(&w.m);
	*status = w.status;
	return w.err;
}

/* ---- CB_GETATTR: a bounded wait (the waiter may leave before the call ends) ---- */

struct getattr_wait {
	pthread_mutex_t m;
	pthread_cond_t c;                /* CLOCK_MONOTONIC */
	int refs;                        /* the waiter's and the job's; under m */
	bool done;
	int err;
	uint32_t status, mask;
	uint64_t change, size;
};

static void getattr_wait_put(struct getattr_wait *w)
{
	bool last;

	pthread_mutex_lock(&w->m);
	last = --w->refs == 0;
	pthread_mutex_unlock(&w->m);
	if (last) {
		pthread_cond_destroy(&w->c);
		pthread_mutex_destroy(&w->m);
		free(w);
	}
}

static void getattr_done(struct nfs4_server *srv, struct nfs4_cb_job *job, int err, uint32_t status)
{
	struct getattr_wait *w = job->arg;

	(void)srv;
	pthread_mutex_lock(&w->m);
	w->done = true;
	w->err = err;
	w->status = status;
	w->mask = job->attr_mask;
	w->change = job->attr_change;
	w->size = job->attr_size;
	pthread_cond_signal(&w->c);
	pthread_mutex_unlock(&w->m);
	free(job);
	getattr_wait_put(w);
}

int nfs4_cb_getattr(struct nfs4_server *srv, uint64_t clientid, const struct nfs4_fh *fh, uint64_t wait_ns,
		    uint32_t *mask, uint64_t *change, uint64_t *size)
{
	struct nfs4_cb_job *job = calloc(1, sizeof(*job));
	struct getattr_wait *w = calloc(1, sizeof(*w));
	pthread_condattr_t ca;
	uint64_t until = now_mono_ns() + wait_ns;
	struct timespec ts = { .tv_sec = (time_t)(until / 1000000000ull), .tv_nsec = (long)(until % 1000000000ull) };
	int r;

	*mask = 0;
	if (!job || !w) {
		free(job);
		free(w);
		return -ENOMEM;
	}
	pthread_mutex_init(&w->m, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->c, &ca);
	pthread_condattr_destroy(&ca);
	w->refs = 2;
	job->kind = NFS4_CBJ_GETATTR;
	job->clientid = clientid;
	job->fh = *fh;
	job->done = getattr_done;
	job->arg = w;
	nfs4_cb_queue(srv, job);         /* done() runs even if the queue is stopped */
	pthread_mutex_lock(&w->m);
	while (!w->done)
		if (pthread_cond_timedwait(&w->c, &w->m, &ts) == ETIMEDOUT)
			break;
	if (!w->done)
		r = -ETIMEDOUT;
	else if (w->err)
		r = w->err;
	else if (w->status != NFS4_OK)
		r = -EREMOTEIO;
	else
		r = 0;
	if (!r) {
		*mask = w->mask;
		*change = w->change;
		*size = w->size;
	}
	pthread_mutex_unlock(&w->m);
	getattr_wait_put(w);
	return r;
}
