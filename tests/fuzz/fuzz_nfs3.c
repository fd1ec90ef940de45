/*
 * fuzz_nfs3.c - libFuzzer target for the NFSv3 and MOUNT v3 decoders and
 * their dispatch.  The first byte picks what the rest is:
 *   0..14   the arguments of one procedure, given to its decoder
 *           (nfs3_dec_*): any result is fine, a read past the input is not;
 *   15..255 a record-marked stream of RPC calls, each run through
 *           rpc_svc_run() (call header, auth, program table, the DRC) into
 *           the NFSv3 or MOUNT dispatcher of a server without a client
 *           library (filesystem procedures resolve nothing and answer an
 *           error; MOUNT's EXPORT, DUMP, UMNT and UMNTALL run for real).
 * Replies must be well-formed records.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "nfs_gw/export/export.h"
#include "nfs_gw/nfs3/nfs3.h"
#include "nfs_gw/nfs3/nfs3_xdr.h"
#include "nfs_gw/rpc/drc.h"
#include "nfs_gw/rpc/rpc.h"

static struct nfs_export_set exports;
static struct nfs3_server *srv;

static void fx_release(struct rpc_xprt *x)
{
	free(x);
}

static void fx_complete(struct rpc_xprt *x, uint8_t *buf, size_t len, struct drc_entry *drc)
{
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
	struct nfs3_params p;
	struct nfs_exports *x;
	char err[256];

	log_init("fuzz_nfs3");
	log_set_level(LOG_SS_RPC, -1);
	log_set_level(LOG_SS_NFS, -1);
	cfg_init("nfs");
	if (nfs_exports_parse("id=1,path=/,rw,insecure;id=2,path=/x,pseudo=/y,clients=127.0.0.0/8,insecure", &x, err,
			      sizeof(err)))
		abort();
	nfs_export_set_init(&exports, x);
	nfs3_params_from_config(&p, 128 * 1024, 256 * 1024);
	p.exports = &exports;
	if (nfs3_server_create(&p, NULL, &srv))
		abort();
	return 0;
}

static void decode(uint8_t which, const uint8_t *data, size_t size)
{
	union {
		struct nfs3_fh fh;
		struct nfs3_sattr sa;
		struct nfs3_diropargs dir;
		struct nfs3_setattr_args setattr;
		struct nfs3_access_args access;
		struct nfs3_read_args read;
		struct nfs3_write_args write;
		struct nfs3_create_args create;
		struct nfs3_mkdir_args mkdir;
		struct nfs3_symlink_args symlink;
		struct nfs3_mknod_args mknod;
		struct nfs3_rename_args rename;
		struct nfs3_link_args link;
		struct nfs3_readdir_args readdir;
		struct nfs3_commit_args commit;
	} a;
	const uint8_t *path;
	uint32_t len;
	struct xdr_dec d;

	xdr_dec_init(&d, data, size);
	switch (which) {
	case 0: nfs3_dec_fh(&d, &a.fh); break;
	case 1: nfs3_dec_setattr(&d, &a.setattr); break;
	case 2: nfs3_dec_diropargs(&d, &a.dir); break;
	case 3: nfs3_dec_access(&d, &a.access); break;
	case 4: nfs3_dec_read(&d, &a.read); break;
	case 5:
		if (!nfs3_dec_write(&d, &a.write) && a.write.data_len &&
		    (a.write.data < data || a.write.data + a.write.data_len > data + size))
			abort();                 /* the data must lie inside the record */
		break;
	case 6: nfs3_dec_create(&d, &a.create); break;
	case 7: nfs3_dec_mkdir(&d, &a.mkdir); break;
	case 8:
		if (!nfs3_dec_symlink(&d, &a.symlink) && a.symlink.path_len > NFS3_MAXPATHLEN)
			abort();
		break;
	case 9: nfs3_dec_mknod(&d, &a.mknod); break;
	case 10: nfs3_dec_rename(&d, &a.rename); break;
	case 11: nfs3_dec_link(&d, &a.link); break;
	case 12: nfs3_dec_readdir(&d, size & 1, &a.readdir); break;
	case 13: nfs3_dec_commit(&d, &a.commit); break;
	default:
		if (!nfs3_dec_dirpath(&d, &path, &len) && len > MNTPATHLEN)
			abort();
		break;
	}
	if (d.p > d.end)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rpc_svc_params sp;
	struct drc_params dp;
	struct rpc_svc *svc;
	struct drc *drc;
	struct rpc_xprt *x;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(700) };
	struct rpc_rm rm;
	size_t off = 1, used, len;
	uint8_t *rec;
	uint64_t now = 1000;
	int r;

	if (!size)
		return 0;
	if (data[0] < 15) {
		decode(data[0], data + 1, size - 1);
		return 0;
	}
	rpc_svc_params_from_config(&sp);
	sp.max_record = 128 * 1024;
	sp.max_reply = 256 * 1024;
	drc_params_from_config(&dp);
	dp.perf_group = NULL;
	dp.buckets = 16;
	if (drc_create(&dp, &drc))
		return 0;
	if (rpc_svc_create(&sp, drc, &svc)) {
		drc_destroy(drc);
		return 0;
	}
	nfs3_register(srv, svc);
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
		atomic_store(&x->rx_parsed, ++now);
		atomic_store(&x->tx_acked, 1);
		rpc_svc_run(svc, rpc_xprt_get(x), rec, len, now);
	}
	rpc_rm_free(&rm);
	rpc_xprt_put(x);
	rpc_svc_destroy(svc);
	drc_destroy(drc);
	return 0;
}
