/*
 * svc.c - the RPC service: program table, worker pool, and the path of one
 * call from a reassembled record to a reply on the transport.
 *
 * A worker decodes the call header (msg.c), answers at the RPC level what
 * needs no program (RPC_MISMATCH, AUTH_ERROR, PROG_UNAVAIL, PROG_MISMATCH
 * and the NULL procedure), consults the duplicate reply cache when the
 * program says the call is non-idempotent, runs the program's dispatch
 * function and hands the encoded reply back to the transport.  A record
 * that is not even a call (no xid, a REPLY, garbage) has nobody to answer
 * to: the connection is closed, which is what a client that desynchronised
 * its record stream needs anyway.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "nfs_gw/rpc/drc.h"
#include "nfs_gw/rpc/rpc.h"

#define MAX_PROGRAMS 16

struct rpc_svc {
	struct rpc_svc_params p;
	struct drc *drc;
	struct rpc_program progs[MAX_PROGRAMS];  /* fixed before start */
	int nprogs;
	rpc_port_check_fn port_check;
	void *port_check_arg;
	struct rpc_gss *gss;             /* RPCSEC_GSS, or NULL: AUTH_BADCRED */
	struct rpc_transport *t;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct rpc_req *qhead, *qtail;   /* protected by lock */
	bool stopping;                   /* protected by lock */
	pthread_t *workers;
	unsigned int nworkers;
	bool stopped;
};

void rpc_svc_params_from_config(struct rpc_svc_params *p)
{
	memset(p, 0, sizeof(*p));
	p->max_record = cfg_uint(CFG_nfs_max_record_size);
	p->max_inflight = (unsigned int)cfg_uint(CFG_nfs_max_inflight);
	p->max_conns = (unsigned int)cfg_uint(CFG_nfs_max_conns);
	p->max_conns_per_host = (unsigned int)cfg_uint(CFG_nfs_max_conns_per_host);
	p->max_frags = (unsigned int)cfg_uint(CFG_nfs_max_record_fragments);
	p->record_timeout_ns = (uint64_t)(cfg_double(CFG_nfs_record_timeout) * 1e9);
	p->workers = (unsigned int)cfg_uint(CFG_nfs_workers);
	p->max_reply = cfg_uint(CFG_nfs_max_reply_size);
	p->max_queued = cfg_uint(CFG_nfs_max_queued_reply);
	p->idle_timeout_ns = (uint64_t)(cfg_double(CFG_nfs_idle_timeout) * 1e9);
	p->send_timeout_ns = (uint64_t)(cfg_double(CFG_nfs_send_timeout) * 1e9);
}

int rpc_svc_create(const struct rpc_svc_params *p, struct drc *drc, struct rpc_svc **out)
{
	struct rpc_svc *svc = calloc(1, sizeof(*svc));

	if (!svc)
		return -ENOMEM;
	svc->p = *p;
	if (!svc->p.max_record)
		svc->p.max_record = 1056 * 1024;
	if (!svc->p.max_inflight)
		svc->p.max_inflight = 1;
	if (!svc->p.max_conns)
		svc->p.max_conns = 1;
	if (!svc->p.workers)
		svc->p.workers = 1;
	if (svc->p.max_reply < 4096)
		svc->p.max_reply = 4096;
	if (!svc->p.max_queued)
		svc->p.max_queued = 4u << 20;
	svc->drc = drc;
	pthread_mutex_init(&svc->lock, NULL);
	pthread_cond_init(&svc->cond, NULL);
	*out = svc;
	return 0;
}

int rpc_svc_register(struct rpc_svc *svc, const struct rpc_program *prog)
{
	if (svc->nprogs >= MAX_PROGRAMS || prog->vers_lo > prog->vers_hi || !prog->dispatch)
		return -EINVAL;
	svc->progs[svc->nprogs++] = *prog;
	return 0;
}

void rpc_svc_set_port_check(struct rpc_svc *svc, rpc_port_check_fn fn, void *arg)
{
	svc->port_check = fn;
	svc->port_check_arg = arg;
}

void rpc_svc_set_gss(struct rpc_svc *svc, struct rpc_gss *g)
{
	svc->gss = g;
}

static void req_free(struct rpc_req *req)
{
	rpc_gss_req_done(req);
	free(req->rec);
	free(req);
}

/* Finish @req: hand @e's buffer (or nothing) to the transport. */
static void req_complete(struct rpc_req *req, struct xdr_enc *e, struct drc_entry *de)
{
	uint8_t *buf = NULL;
	size_t len = 0;

	if (e) {
		if (rpc_reply_end(e) == 0) {
			buf = xdr_enc_steal(e, &len);
		} else {
			derr(RPC, "xprt %llu %s: xid %#x: reply could not be encoded (%d)",
			     (unsigned long long)req->xprt->id, req->xprt->peer_str, req->call.xid, e->err);
			xdr_enc_free(e);
		}
	}
	rpc_xprt_complete(req->xprt, buf, len, de);   /* passes the xprt reference */
	req->xprt = NULL;
	req_free(req);
}

static const struct rpc_program *find_prog(struct rpc_svc *svc, uint32_t prog, uint32_t vers, bool *prog_known,
					   uint32_t *lo, uint32_t *hi)
{
	int i;

	*prog_known = false;
	*lo = UINT32_MAX;
	*hi = 0;
	for (i = 0; i < svc->nprogs; i++) {
		const struct rpc_program *p = &svc->progs[i];
		if (p->prog != prog)
			continue;
		*prog_known = true;
		if (vers >= p->vers_lo && vers <= p->vers_hi)
			return p;
		if (p->vers_lo < *lo)
			*lo = p->vers_lo;
		if (p->vers_hi > *hi)
			*hi = p->vers_hi;
	}
	return NULL;
}

/* An accepted reply header: with the RPCSEC_GSS verifier for a GSS call. */
static void reply_accepted(struct rpc_req *req, struct xdr_enc *e, enum rpc_accept_stat st)
{
	if (req->gss.ctx)
		rpc_gss_reply_accepted(req, e, st);
	else
		rpc_reply_accepted(e, req->call.xid, st);
}

/*
 * RPCSEC_GSS: authenticate the call (gss.c).  Return true to go on with
 * the call (a verified DATA call, arguments unwrapped), false when it has
 * been answered (or dropped) here.
 */
static bool gss_gate(struct rpc_svc *svc, struct rpc_req *req, struct xdr_enc *e)
{
	struct rpc_call *c = &req->call;
	uint32_t why = RPC_AUTH_BADCRED;

	if (!svc->gss) {
		rpc_reply_auth_error(e, c->xid, RPC_AUTH_BADCRED);
		req_complete(req, e, NULL);
		return false;
	}
	e->max += 1024;                  /* the verifier and the wrapping around the results */
	switch (rpc_gss_accept(svc->gss, req, e, &why)) {
	case RPC_GSS_DISPATCH:
		return true;
	case RPC_GSS_REPLIED:
		req_complete(req, e, NULL);
		return false;
	case RPC_GSS_DROP:
		xdr_enc_free(e);
		req_complete(req, NULL, NULL);
		return false;
	case RPC_GSS_GARBAGE:
		reply_accepted(req, e, RPC_GARBAGE_ARGS);
		req_complete(req, e, NULL);
		return false;
	case RPC_GSS_AUTH_ERROR:
	default:
		dout(RPC, 5, "xprt %llu %s: xid %#x: RPCSEC_GSS auth error %u", (unsigned long long)req->xprt->id,
		     req->xprt->peer_str, c->xid, why);
		rpc_reply_auth_error(e, c->xid, (enum rpc_auth_stat)why);
		req_complete(req, e, NULL);
		return false;
	}
}

/* Results from @body_off to the end of @e: wrap them (GSS integrity or
 * privacy); on failure answer SYSTEM_ERR instead. */
static void gss_finish(struct rpc_req *req, struct xdr_enc *e, size_t stat_off, size_t body_off)
{
	if (!req->gss.ctx || rpc_gss_wrap(req, e, body_off) == 0)
		return;
	derr(RPC, "xprt %llu %s: xid %#x: RPCSEC_GSS could not wrap the reply", (unsigned long long)req->xprt->id,
	     req->xprt->peer_str, req->call.xid);
	xdr_enc_truncate(e, stat_off);
	xdr_put_u32(e, RPC_SYSTEM_ERR);
}

static void process(struct rpc_svc *svc, struct rpc_req *req)
{
	struct rpc_call *c = &req->call;
	enum rpc_auth_stat why;
	enum rpc_decode_result dr;
	const struct rpc_program *prog;
	struct drc_entry *de = NULL;
	struct drc_key key;
	struct xdr_enc e;
	struct xdr_dec args;
	bool known;
	uint32_t lo, hi;
	size_t stat_off, body_off;
	int st;

	xdr_enc_init(&e, svc->p.max_reply);
	rpc_reply_begin(&e);
	dr = rpc_decode_call(req->rec, req->rec_len, c, &why);
	switch (dr) {
	case RPC_DEC_UNPARSABLE:
		dout(RPC, 1, "xprt %llu %s: record of %zu bytes is not an RPC call; closing",
		     (unsigned long long)req->xprt->id, req->xprt->peer_str, req->rec_len);
		rpc_xprt_close(req->xprt);
		xdr_enc_free(&e);
		req_complete(req, NULL, NULL);
		return;
	case RPC_DEC_RPC_MISMATCH:
		rpc_reply_rpc_mismatch(&e, c->xid);
		req_complete(req, &e, NULL);
		return;
	case RPC_DEC_AUTH_ERROR:
		dout(RPC, 5, "xprt %llu %s: xid %#x: auth error %d", (unsigned long long)req->xprt->id,
		     req->xprt->peer_str, c->xid, why);
		rpc_reply_auth_error(&e, c->xid, why);
		req_complete(req, &e, NULL);
		return;
	case RPC_DEC_OK:
		break;
	}
	if (c->cred.flavor == RPCSEC_GSS && !gss_gate(svc, req, &e))
		return;
	dout(RPC, 15, "xprt %llu: call xid %#x prog %u vers %u proc %u", (unsigned long long)req->xprt->id,
	     c->xid, c->prog, c->vers, c->proc);

	prog = find_prog(svc, c->prog, c->vers, &known, &lo, &hi);
	if (!prog) {
		if (known) {
			reply_accepted(req, &e, RPC_PROG_MISMATCH);
			xdr_put_u32(&e, lo);
			xdr_put_u32(&e, hi);
		} else {
			reply_accepted(req, &e, RPC_PROG_UNAVAIL);
		}
		req_complete(req, &e, NULL);
		return;
	}
	if (svc->port_check && rpc_xprt_peer_port(req->xprt) >= 1024 &&
	    !svc->port_check(svc->port_check_arg, req)) {
		rpc_reply_auth_error(&e, c->xid, RPC_AUTH_TOOWEAK);
		req_complete(req, &e, NULL);
		return;
	}
	if (c->proc == 0) {             /* NULL: every program, every version */
		reply_accepted(req, &e, RPC_SUCCESS);
		stat_off = e.len - 4;
		xdr_reserve(&e, rpc_gss_body_reserve(req));
		gss_finish(req, &e, stat_off, e.len);
		req_complete(req, &e, NULL);
		return;
	}

	if (svc->drc && prog->cacheable && prog->cacheable(prog->priv, req)) {
		uint8_t *cached;
		size_t clen;

		drc_make_key(svc->drc, c, req->xprt, &key);
		switch (drc_lookup(svc->drc, req->xprt, &key, &de, &cached, &clen)) {
		case DRC_HIT:
			dout(RPC, 5, "xprt %llu %s: xid %#x: replay from the DRC", (unsigned long long)req->xprt->id,
			     req->xprt->peer_str, c->xid);
			if (req->gss.ctx) {
				/* the results are kept unwrapped: a retransmission has a
				 * new seq_num, so a new verifier and wrapping */
				reply_accepted(req, &e, RPC_SUCCESS);
				stat_off = e.len - 4;
				xdr_reserve(&e, rpc_gss_body_reserve(req));
				body_off = e.len;
				xdr_put_fixed(&e, cached, clen);
				free(cached);
				gss_finish(req, &e, stat_off, body_off);
				req_complete(req, &e, de);
				return;
			}
			xdr_enc_free(&e);
			rpc_xprt_complete(req->xprt, cached, clen, de);
			req->xprt = NULL;
			req_free(req);
			return;
		case DRC_INPROGRESS:
			dout(RPC, 5, "xprt %llu %s: xid %#x: in progress, dropping the duplicate",
			     (unsigned long long)req->xprt->id, req->xprt->peer_str, c->xid);
			xdr_enc_free(&e);
			req_complete(req, NULL, NULL);
			return;
		case DRC_MISS:
			break;
		}
	}

	reply_accepted(req, &e, RPC_SUCCESS);
	stat_off = e.len - 4;
	xdr_reserve(&e, rpc_gss_body_reserve(req));
	body_off = e.len;
	xdr_dec_init(&args, c->args, c->args_len);
	st = prog->dispatch(prog->priv, req, &args, &e);
	if (st == RPC_SUCCESS && e.err) {
		derr(RPC, "xprt %llu %s: xid %#x: reply over %zu bytes", (unsigned long long)req->xprt->id,
		     req->xprt->peer_str, c->xid, svc->p.max_reply);
		st = RPC_SYSTEM_ERR;
	}
	if (st == RPC_AUTH_ERR_REPLY) {
		if (de)
			drc_abort(svc->drc, de);
		xdr_enc_truncate(&e, RPC_RM_HDR);
		rpc_reply_auth_error(&e, c->xid, (enum rpc_auth_stat)req->auth_stat);
		req_complete(req, &e, NULL);
		return;
	}
	if (st == RPC_DROP_REPLY) {
		if (de)
			drc_abort(svc->drc, de);
		xdr_enc_free(&e);
		req_complete(req, NULL, NULL);
		return;
	}
	if (st != RPC_SUCCESS) {
		xdr_enc_truncate(&e, stat_off);
		xdr_put_u32(&e, (uint32_t)st);
	}
	if (de) {
		/* a GSS call's cache entry keeps the results alone (see the hit) */
		if (req->drc_nocache || st != RPC_SUCCESS || (!req->gss.ctx && rpc_reply_end(&e))) {
			drc_abort(svc->drc, de);
			de = NULL;
		} else if (req->gss.ctx ? drc_finish(svc->drc, de, e.buf + body_off, e.len - body_off)
					: drc_finish(svc->drc, de, e.buf, e.len)) {
			dout(RPC, 10, "xprt %llu: xid %#x: reply of %zu bytes not kept in the DRC",
			     (unsigned long long)req->xprt->id, c->xid, e.len);
		}
	}
	if (st == RPC_SUCCESS)
		gss_finish(req, &e, stat_off, body_off);
	req_complete(req, &e, de);
}

static void *worker(void *arg)
{
	struct rpc_svc *svc = arg;
	struct rpc_req *req;

	for (;;) {
		pthread_mutex_lock(&svc->lock);
		while (!svc->qhead && !svc->stopping)
			pthread_cond_wait(&svc->cond, &svc->lock);
		req = svc->qhead;
		if (!req) {
			pthread_mutex_unlock(&svc->lock);
			break;
		}
		svc->qhead = req->next;
		if (!svc->qhead)
			svc->qtail = NULL;
		pthread_mutex_unlock(&svc->lock);
		process(svc, req);
	}
	return NULL;
}

void rpc_svc_enqueue(struct rpc_svc *svc, struct rpc_xprt *x, uint8_t *rec, size_t len, uint64_t now)
{
	struct rpc_req *req = calloc(1, sizeof(*req));

	if (!req) {
		free(rec);
		rpc_xprt_complete(x, NULL, 0, NULL);
		return;
	}
	req->svc = svc;
	req->xprt = x;
	req->rec = rec;
	req->rec_len = len;
	req->recv_ns = now;
	pthread_mutex_lock(&svc->lock);
	if (svc->qtail)
		svc->qtail->next = req;
	else
		svc->qhead = req;
	svc->qtail = req;
	pthread_cond_signal(&svc->cond);
	pthread_mutex_unlock(&svc->lock);
}

void rpc_svc_run(struct rpc_svc *svc, struct rpc_xprt *x, uint8_t *rec, size_t len, uint64_t now)
{
	struct rpc_req *req = calloc(1, sizeof(*req));

	if (!req) {
		free(rec);
		rpc_xprt_complete(x, NULL, 0, NULL);
		return;
	}
	req->svc = svc;
	req->xprt = x;
	req->rec = rec;
	req->rec_len = len;
	req->recv_ns = now;
	process(svc, req);
}

void rpc_svc_tick(struct rpc_svc *svc, uint64_t now)
{
	if (svc->drc)
		drc_prune(svc->drc);
	if (svc->gss)
		rpc_gss_prune(svc->gss);
}

int rpc_svc_start(struct rpc_svc *svc, const char *addr_port)
{
	unsigned int i;
	int r;

	svc->workers = calloc(svc->p.workers, sizeof(*svc->workers));
	if (!svc->workers)
		return -ENOMEM;
	for (i = 0; i < svc->p.workers; i++) {
		r = -pthread_create(&svc->workers[i], NULL, worker, svc);
		if (r)
			goto out_stop;
		svc->nworkers++;
	}
	r = rpc_transport_start(svc, &svc->p, addr_port, &svc->t);
	if (r)
		goto out_stop;
	return 0;

out_stop:
	rpc_svc_stop(svc);
	return r;
}

uint16_t rpc_svc_port(const struct rpc_svc *svc)
{
	return svc->t ? rpc_transport_port(svc->t) : 0;
}

unsigned int rpc_svc_conns(struct rpc_svc *svc)
{
	return svc->t ? rpc_transport_conns(svc->t) : 0;
}

size_t rpc_svc_queued(struct rpc_svc *svc)
{
	return svc->t ? rpc_transport_queued(svc->t) : 0;
}

void rpc_svc_listen_addr(struct rpc_svc *svc, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (svc->t)
		rpc_transport_listen_addr(svc->t, ss);
}

unsigned int rpc_svc_max_conns(struct rpc_svc *svc)
{
	return svc->t ? rpc_transport_max_conns(svc->t) : svc->p.max_conns;
}

void rpc_svc_stop(struct rpc_svc *svc)
{
	struct rpc_req *req;
	unsigned int i;

	if (svc->stopped)
		return;
	svc->stopped = true;
	/* 1. no more input: the ring closes every connection and exits */
	rpc_transport_stop(svc->t);
	/* 2. finish what is queued or running; replies go nowhere now */
	pthread_mutex_lock(&svc->lock);
	svc->stopping = true;
	pthread_cond_broadcast(&svc->cond);
	pthread_mutex_unlock(&svc->lock);
	for (i = 0; i < svc->nworkers; i++)
		pthread_join(svc->workers[i], NULL);
	svc->nworkers = 0;
	while ((req = svc->qhead)) {   /* only if there were no workers */
		svc->qhead = req->next;
		rpc_xprt_complete(req->xprt, NULL, 0, NULL);
		req_free(req);
	}
	svc->qtail = NULL;
	/* 3. free the completions the workers handed back */
	rpc_transport_destroy(svc->t);
	svc->t = NULL;
	free(svc->workers);
	svc->workers = NULL;
}

void rpc_svc_destroy(struct rpc_svc *svc)
{
	if (!svc)
		return;
	rpc_svc_stop(svc);
	pthread_cond_destroy(&svc->cond);
	pthread_mutex_destroy(&svc->lock);
	free(svc);
}
