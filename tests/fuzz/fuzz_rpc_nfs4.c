/*
 * fuzz_rpc_nfs4.c - libFuzzer target for the whole call path of the NFS
 * gateway short of the socket: a record-marked stream of calls, each run
 * through rpc_svc_run() (call header, auth, program table, DRC) into the
 * NFSv4 COMPOUND dispatcher and the session operations.  Every input gets
 * a fresh server whose boot time is fixed, so seeds can name the client id
 * (0x5eed << 32 | 1) and session id the first EXCHANGE_ID/CREATE_SESSION
 * of the input produce, and the fuzzer reaches SEQUENCE and the slot
 * table.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "nfs_gw/nfs4/nfs4.h"
#include "nfs_gw/rpc/drc.h"
#include "nfs_gw/rpc/rpc.h"

static void fx_release(struct rpc_xprt *x)
{
	free(x);
}

static void fx_complete(struct rpc_xprt *x, uint8_t *buf, size_t len, struct drc_entry *drc)
{
	/* a reply is a record: its mark must say how long it is */
	if (buf && (len < 4 || (xdr_load_u32(buf) & ~RPC_RM_LAST) != len - 4))
		abort();
	free(buf);
	drc_reply_sent(drc, 1, 0);
	drc_entry_put(drc);
	rpc_xprt_put(x);
}

static void fx_close(struct rpc_xprt *x)
{
	atomic_store(&x->closed_at, 1);
}

static const struct rpc_xprt_ops fx_ops = { .release = fx_release, .complete = fx_complete, .close = fx_close };

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	log_init("fuzz_rpc_nfs4");
	log_set_level(LOG_SS_RPC, -1);
	log_set_level(LOG_SS_NFS, -1);
	cfg_init("nfs");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rpc_svc_params sp;
	struct drc_params dp;
	struct nfs4_params np;
	struct rpc_svc *svc;
	struct drc *drc;
	struct nfs4_server *srv;
	struct rpc_xprt *x;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(700) };
	struct rpc_rm rm;
	size_t off = 0, used, len;
	uint8_t *rec;
	uint64_t now = 1000;
	int r;

	rpc_svc_params_from_config(&sp);
	sp.max_record = 128 * 1024;
	sp.max_reply = 256 * 1024;
	drc_params_from_config(&dp);
	dp.perf_group = NULL;
	dp.buckets = 16;
	nfs4_params_from_config(&np, sp.max_record, sp.max_reply);
	if (drc_create(&dp, &drc))
		return 0;
	if (rpc_svc_create(&sp, drc, &svc)) {
		drc_destroy(drc);
		return 0;
	}
	if (nfs4_server_create(&np, NULL, &srv)) {
		rpc_svc_destroy(svc);
		drc_destroy(drc);
		return 0;
	}
	srv->boot = 0x5eed;
	nfs4_register(srv, svc);
	x = malloc(sizeof(*x));
	sin.sin_addr.s_addr = htonl(0x7f000001);
	rpc_xprt_init(x, true, (struct sockaddr *)&sin, sizeof(sin), &fx_ops);

	rpc_rm_init(&rm, sp.max_record, sp.max_frags);
	while (off < size && !atomic_load(&x->closed_at)) {
		r = rpc_rm_feed(&rm, data + off, size - off, &used);
		off += used;
		if (r <= 0)
			break;
		rec = rpc_rm_take(&rm, &len);
		atomic_store(&x->last_recv, ++now);
		/* every reply "sent" at offset 1 and acknowledged, and each
		 * record newer: the implied-ACK eviction runs too */
		atomic_store(&x->rx_parsed, now);
		atomic_store(&x->tx_acked, 1);
		rpc_svc_run(svc, rpc_xprt_get(x), rec, len, now);
	}
	rpc_rm_free(&rm);
	rpc_xprt_put(x);
	rpc_svc_destroy(svc);
	nfs4_server_destroy(srv);
	drc_destroy(drc);
	return 0;
}
