/*
 * compound.c - NFSv4 program 100003 version 4: the COMPOUND procedure.
 *
 * A COMPOUND is a tag, a minor version and a list of operations, run in
 * order until one fails; the reply lists the result of every operation
 * run.  Operations decode their own arguments as they run (ops.h), so the
 * request is never decoded ahead into memory sized by what the client
 * claims: the op count is checked against nfs4_max_ops before anything
 * runs, and a COMPOUND of 10,000 operations is answered with
 * NFS4ERR_RESOURCE (4.0) or NFS4ERR_TOO_MANY_OPS (4.1) and one result.
 *
 * Minor version 1 adds the session rules checked here: SEQUENCE first
 * (else NFS4ERR_OP_NOT_IN_SESSION, and NFS4ERR_SEQUENCE_POS anywhere
 * else), the session-less operations alone, the slot's reply cached for
 * retries at the end, and the reply limits the session negotiated.
 * Minor version 0 compounds that change state are run through the RPC
 * layer's duplicate reply cache (nfs4_cacheable).
 *
 * Every op run is counted and timed per op (perf group "nfs4_ops", shown
 * by `perf dump` and the Prometheus endpoint).
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "common/log.h"
#include "common/perf.h"
#include "common/time.h"
#include "nfs_gw/export/export.h"
#include "nfs_gw/nfs4/nfs4.h"

/* Peek at the COMPOUND header: a minor version 0 compound may change state
 * and needs the DRC; 4.1 has its slot table instead. */
static bool nfs4_cacheable(void *priv, const struct rpc_req *req)
{
	struct xdr_dec d;
	const uint8_t *tag;
	uint32_t taglen, minor;

	if (req->call.proc != NFS4_PROC_COMPOUND)
		return false;
	xdr_dec_init(&d, req->call.args, req->call.args_len);
	if (xdr_get_opaque(&d, &tag, &taglen, NFS4_MAX_TAG) || xdr_get_u32(&d, &minor))
		return false;
	return minor == 0;
}

static bool op_is_legal(const struct nfs4_op_desc *desc, uint32_t minor)
{
	return desc && !(minor == 0 && (desc->flags & OPF_V41));
}

/* Per-op counters and latencies (perf group "nfs4_ops": <op> and <op>_lat), for
 * `perf dump` and the Prometheus endpoint; shared by every server of the process. */
static struct {
	struct perf_counter n;
	struct hist lat;
} op_stats[NFS4_OP_MAX + 1];
static pthread_once_t op_stats_once = PTHREAD_ONCE_INIT;

static void op_stats_register(void)
{
	char name[64];
	uint32_t op;

	for (op = 0; op <= NFS4_OP_MAX; op++) {
		const struct nfs4_op_desc *d = nfs4_op_lookup(op);
		size_t i;

		if (!d || !d->name)
			continue;
		snprintf(name, sizeof(name) - 4, "%s", d->name);
		for (i = 0; name[i]; i++)
			name[i] = (char)tolower((unsigned char)name[i]);
		perf_register_counter("nfs4_ops", name, &op_stats[op].n);
		strcat(name, "_lat");
		perf_register_hist("nfs4_ops", name, &op_stats[op].lat);
	}
}

void nfs4_op_stats_init(void)
{
	pthread_once(&op_stats_once, op_stats_register);
}

/* The checks the table lets us make for every op. */
static uint32_t check_op(struct nfs4_compound *cs, const struct nfs4_op_desc *desc)
{
	if (cs->minorversion >= 1) {
		if (cs->opidx == 0) {
			if (cs->op != OP_SEQUENCE && !(desc->flags & OPF_SESSIONLESS))
				return NFS4ERR_OP_NOT_IN_SESSION;
			if ((desc->flags & OPF_SESSIONLESS) && cs->opcnt > 1)
				return NFS4ERR_NOT_ONLY_OP;
		} else if (cs->op == OP_SEQUENCE) {
			return NFS4ERR_SEQUENCE_POS;
		}
		if (desc->flags & OPF_V40_ONLY)
			return NFS4ERR_NOTSUPP;
	}
	if (desc->flags & OPF_MODIFIES)
		cs->modifies = true;
	if ((desc->flags & OPF_NEED_FH) && !cs->cfh.len)
		return NFS4ERR_NOFILEHANDLE;
	if (!desc->fn)
		return NFS4ERR_NOTSUPP;
	return NFS4_OK;
}

/* The checks, then the op itself. */
static uint32_t run_op_checked(struct nfs4_compound *cs, const struct nfs4_op_desc *desc, struct xdr_dec *args,
			       struct xdr_enc *res)
{
	uint32_t st = check_op(cs, desc);

	if (st == NFS4_OK)
		return desc->fn(cs, args, res);
	if (desc->flags & OPF_ATTRSSET) {
		/* an op that failed before it ran still owes its result's body:
		 * SETATTR4res has attrsset whatever the status (RFC 7530 16.32.3) */
		uint32_t none[1] = { 0 };

		xdr_put_bitmap(res, none, 0);
		cs->body_on_error = true;
	}
	return st;
}

/* One op, counted and timed. */
static uint32_t run_op(struct nfs4_compound *cs, const struct nfs4_op_desc *desc, struct xdr_dec *args,
		       struct xdr_enc *res)
{
	uint64_t t0 = now_mono_ns();
	uint32_t st, op = cs->op;

	st = run_op_checked(cs, desc, args, res);
	if (op <= NFS4_OP_MAX) {
		perf_inc(&op_stats[op].n, 1);
		hist_add(&op_stats[op].lat, now_mono_ns() - t0);
	}
	return st;
}

/* Write one result header; return the offset of its status word. */
static size_t put_resop(struct xdr_enc *res, uint32_t op, uint32_t status)
{
	xdr_put_u32(res, op);
	xdr_put_u32(res, status);
	return res->len - 4;
}

static int nfs4_dispatch(void *priv, struct rpc_req *req, struct xdr_dec *args, struct xdr_enc *res)
{
	struct nfs4_server *srv = priv;
	struct nfs4_compound cs;
	const struct nfs4_op_desc *desc;
	const uint8_t *tag;
	uint32_t taglen, status = NFS4_OK, nres = 0, op;
	size_t status_off, count_off, op_status_off, body_off, sz;

	if (req->call.proc != NFS4_PROC_COMPOUND)
		return RPC_PROC_UNAVAIL;
	memset(&cs, 0, sizeof(cs));
	cs.srv = srv;
	cs.req = req;
	cs.cred = &req->call.cred;
	if (xdr_get_opaque(args, &tag, &taglen, NFS4_MAX_TAG) || xdr_get_u32(args, &cs.minorversion) ||
	    xdr_get_u32(args, &cs.opcnt))
		return RPC_GARBAGE_ARGS;

	/* one exports table from start to end, whatever a reload does meanwhile */
	cs.exports = nfs_export_set_get(srv->exports);
	cs.res_start = res->len;
	xdr_put_u32(res, NFS4_OK);
	status_off = res->len - 4;
	xdr_put_opaque(res, tag, taglen);
	xdr_put_u32(res, 0);
	count_off = res->len - 4;
	if (res->err) {
		nfs_exports_put(cs.exports);
		return RPC_SYSTEM_ERR;
	}

	if (cs.minorversion > 1) {
		status = NFS4ERR_MINOR_VERS_MISMATCH;
		goto out;
	}
	if (cs.opcnt > srv->p.max_ops) {
		/* answer with the first operation's result, nothing run */
		status = cs.minorversion == 0 ? NFS4ERR_RESOURCE : NFS4ERR_TOO_MANY_OPS;
		dout(NFS, 1, "%s: COMPOUND of %u operations (limit %u): %s", req->xprt->peer_str, cs.opcnt,
		     srv->p.max_ops, cs.minorversion == 0 ? "NFS4ERR_RESOURCE" : "NFS4ERR_TOO_MANY_OPS");
		if (!xdr_get_u32(args, &op)) {
			put_resop(res, op_is_legal(nfs4_op_lookup(op), cs.minorversion) ? op : OP_ILLEGAL, status);
			nres = 1;
		}
		goto out;
	}

	for (cs.opidx = 0; cs.opidx < cs.opcnt; cs.opidx++) {
		if (xdr_get_u32(args, &op)) {
			put_resop(res, OP_ILLEGAL, NFS4ERR_BADXDR);
			nres++;
			status = NFS4ERR_BADXDR;
			break;
		}
		cs.op = op;
		cs.body_on_error = false;
		desc = nfs4_op_lookup(op);
		if (!op_is_legal(desc, cs.minorversion)) {
			put_resop(res, OP_ILLEGAL, NFS4ERR_OP_ILLEGAL);
			nres++;
			status = NFS4ERR_OP_ILLEGAL;
			break;
		}
		op_status_off = put_resop(res, op, NFS4_OK);
		body_off = res->len;
		nres++;
		{
			/* in the client's operations in flight (`ops`), with what it waits for */
			struct lc_op_slot *slot = srv->lc ? lc_op_begin(srv->lc, "nfs4", desc->name, 0) : NULL;

			status = run_op(&cs, desc, args, res);
			lc_op_end(slot);
		}
		dout(NFS, 15, "%s: %s -> %u", req->xprt->peer_str, desc->name, status);

		if (cs.replay) {
			/* SEQUENCE found this request's reply in the slot: send it as it was */
			xdr_enc_truncate(res, cs.res_start);
			xdr_put_fixed(res, cs.replay, cs.replay_len);
			free(cs.replay);
			cs.replay = NULL;
			if (cs.session)
				nfs4_session_put(srv, cs.session);
			nfs_exports_put(cs.exports);
			return res->err ? RPC_SYSTEM_ERR : RPC_SUCCESS;
		}
		if (res->err) {
			/* the reply outgrew the RPC reply limit */
			status = cs.minorversion ? NFS4ERR_REP_TOO_BIG : NFS4ERR_RESOURCE;
			xdr_enc_truncate(res, body_off);
		} else if (status != NFS4_OK && !cs.body_on_error) {
			xdr_enc_truncate(res, body_off);
		} else if (cs.session) {
			sz = res->len - cs.res_start;
			if (sz > cs.session->fore.maxresponsesize) {
				status = NFS4ERR_REP_TOO_BIG;
				xdr_enc_truncate(res, body_off);
			} else if (cs.cachethis && sz > cs.session->fore.maxresponsesize_cached) {
				status = NFS4ERR_REP_TOO_BIG_TO_CACHE;
				xdr_enc_truncate(res, body_off);
			}
		}
		xdr_patch_u32(res, op_status_off, status);
		if (status != NFS4_OK)
			break;
		if (cs.replay_uncached) {
			/* a retry of a reply that was not kept: SEQUENCE succeeds, the
			 * next operation says so (RFC 8881 2.10.6.1.3) */
			if (cs.opidx + 1 < cs.opcnt && !xdr_get_u32(args, &op)) {
				desc = nfs4_op_lookup(op);
				put_resop(res, op_is_legal(desc, cs.minorversion) ? op : OP_ILLEGAL,
					  NFS4ERR_RETRY_UNCACHED_REP);
				nres++;
				status = NFS4ERR_RETRY_UNCACHED_REP;
			}
			break;
		}
	}
out:
	xdr_patch_u32(res, status_off, status);
	xdr_patch_u32(res, count_off, nres);
	if (cs.slot_held) {
		slot_table_end(&cs.session->slots, cs.slotid, res->buf + cs.res_start, res->len - cs.res_start,
			       cs.cachethis && !res->err);
		cs.slot_held = false;
	}
	if (cs.session)
		nfs4_session_put(srv, cs.session);
	if (cs.minorversion == 0 && !cs.modifies)
		req->drc_nocache = true;
	nfs_exports_put(cs.exports);
	return res->err ? RPC_SYSTEM_ERR : RPC_SUCCESS;
}

int nfs4_register(struct nfs4_server *srv, struct rpc_svc *svc)
{
	struct rpc_program p = {
		.prog = NFS4_PROGRAM,
		.vers_lo = NFS4_VERSION,
		.vers_hi = NFS4_VERSION,
		.name = "nfs4",
		.dispatch = nfs4_dispatch,
		.cacheable = nfs4_cacheable,
		.priv = srv,
	};

	return rpc_svc_register(svc, &p);
}
