/*
 * fuzz_nfs4ops.c - libFuzzer target for the argument decoders and checks
 * of the NFSv4 filesystem operations (nfs_gw/nfs4/ops_*.c), without a
 * filesystem: the gateway exports /a at pseudo path /x/a, so the pseudo
 * root and /x resolve without a client library, and every operation runs
 * with a pseudo-fs directory as its current and saved filehandle.
 *
 * Input: byte 0 picks the operation, byte 1 the minor version (bit 0)
 * and whether the current filehandle is a raw client one (bit 1: the next
 * 32 bytes), the rest are the operation's XDR arguments.  Several ops may
 * follow in one input (byte 0x00 separator), like a COMPOUND.  The whole
 * input is also decoded as an NFSv4 client record (recovery.h) and as an
 * acl attribute (acl.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/config.h"
#include "common/log.h"
#include "nfs_gw/export/export.h"
#include "nfs_gw/nfs4/acl.h"
#include "nfs_gw/nfs4/fh.h"
#include "nfs_gw/nfs4/nfs4.h"
#include "nfs_gw/nfs4/ops.h"
#include "nfs_gw/nfs4/recovery.h"
#include "perm/perm.h"

static const nfs4_op_fn fns[] = {
	nfs4_op_putrootfh, nfs4_op_putpubfh, nfs4_op_putfh, nfs4_op_getfh, nfs4_op_savefh, nfs4_op_restorefh,
	nfs4_op_lookup_name, nfs4_op_lookupp, nfs4_op_getattr, nfs4_op_setattr, nfs4_op_verify, nfs4_op_nverify,
	nfs4_op_access, nfs4_op_open, nfs4_op_open_confirm, nfs4_op_open_downgrade, nfs4_op_close, nfs4_op_read,
	nfs4_op_write, nfs4_op_commit, nfs4_op_create, nfs4_op_remove, nfs4_op_rename, nfs4_op_link,
	nfs4_op_readlink, nfs4_op_readdir, nfs4_op_lock, nfs4_op_lockt, nfs4_op_locku, nfs4_op_release_lockowner,
	nfs4_op_free_stateid, nfs4_op_test_stateid, nfs4_op_delegreturn, nfs4_op_secinfo, nfs4_op_secinfo_no_name,
	nfs4_op_setclientid, nfs4_op_setclientid_confirm, nfs4_op_renew,
};
#define NFNS (sizeof(fns) / sizeof(fns[0]))

static struct nfs4_server *srv;
static struct nfs4_client *clp;
static struct rpc_xprt xprt;
static struct rpc_req req;
static struct rpc_cred cred = { .flavor = 1 };

static void noop_release(struct rpc_xprt *x)
{
	(void)x;
}

static void noop_complete(struct rpc_xprt *x, uint8_t *buf, size_t len, struct drc_entry *drc)
{
	(void)x;
	(void)len;
	(void)drc;
	free(buf);
}

static const struct rpc_xprt_ops noop_ops = { .release = noop_release, .complete = noop_complete };

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct nfs4_params p = { .lease_ns = 90000000000ull, .max_ops = 64, .slots = 8, .max_req = 1 << 20,
				 .max_resp = 1 << 20, .max_resp_cached = 65536 };
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(800) };
	uint8_t verf[NFS4_VERIFIER_SIZE] = { 0 };
	char err[128];
	int id;

	(void)argc;
	(void)argv;
	log_set_level(LOG_SS_NFS, -1);
	id = cfg_lookup("nfs_exports");
	cfg_set(id, "id=1,path=/a,pseudo=/x/a,rw,no_root_squash,insecure", false, err, sizeof(err));
	cfg_set(cfg_lookup("nfs4_grace_time"), "0", false, err, sizeof(err));
	if (nfs4_server_create(&p, NULL, &srv))
		abort();
	pthread_mutex_lock(&srv->lock);
	clp = nfs4_client_new_locked(srv, (const uint8_t *)"fuzz", 4, verf, &(struct nfs4_principal){ .flavor = 1 }, 1);
	clp->confirmed = true;
	pthread_mutex_unlock(&srv->lock);
	sin.sin_addr.s_addr = htonl(0x7f000001);
	rpc_xprt_init(&xprt, true, (struct sockaddr *)&sin, sizeof(sin), &noop_ops);
	req.xprt = &xprt;
	req.call.cred = cred;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nfs4_compound cs;
	struct nfs4_fhinfo fi = { .kind = NFS4_FH_PSEUDO, .ino = NFS_PSEUDO_ROOT };
	struct xdr_enc res;

	/* every input is also a client record (recovery.c) as read at start:
	 * a record that decodes re-encodes to one that decodes the same */
	{
		static struct nfs4_rec r, r2;
		static uint8_t buf[NFS4_REC_MAX];
		char key[NFS4_REC_KEY_MAX + 1];

		if (nfs4_rec_decode(data, size, &r) == 0) {
			size_t n = nfs4_rec_encode(&r, buf);

			if (nfs4_rec_decode(buf, n, &r2) || r2.owner_len != r.owner_len ||
			    memcmp(r2.owner, r.owner, r.owner_len) || r2.clientid != r.clientid)
				abort();
			nfs4_rec_key(r.owner, r.owner_len, key);
		}
	}
	/* and an acl attribute (acl.c): what it maps to is an ACL the MDS
	 * takes (mdsp_acl_valid), and maps back without fault */
	{
		static uint8_t acl[NFS4_ACL_XATTR_MAX], dacl[NFS4_ACL_XATTR_MAX];
		size_t n, dn;
		struct xdr_dec d;
		struct xdr_enc e;

		for (int dir = 0; dir < 2; dir++) {
			xdr_dec_init(&d, data, size);
			if (nfs4_acl_decode(&d, dir, NULL, acl, &n, dacl, &dn) != NFS4_OK)
				continue;
			if (mdsp_acl_valid(acl, n) || (dn && mdsp_acl_valid(dacl, dn)))
				abort();
			xdr_enc_init(&e, 1 << 20);
			nfs4_acl_encode(&e, dir ? S_IFDIR | 0755 : S_IFREG | 0644, acl, n, dn ? dacl : NULL, dn, NULL);
			xdr_enc_free(&e);
		}
	}
	memset(&cs, 0, sizeof(cs));
	cs.srv = srv;
	cs.req = &req;
	cs.cred = &cred;
	cs.exports = nfs_export_set_get(srv->exports);
	nfs4_fh_encode(&fi, &cs.cfh);
	cs.sfh = cs.cfh;
	xdr_enc_init(&res, 1 << 20);
	while (size >= 2) {
		const uint8_t *end = memchr(data + 2, 0, size - 2);
		size_t n = end ? (size_t)(end - data) : size;
		struct xdr_dec args;

		cs.minorversion = data[1] & 1;
		cs.clp = cs.minorversion ? clp : NULL;
		if ((data[1] & 2) && n >= 2 + NFS4_FH_WIRE_LEN) {
			memcpy(cs.cfh.data, data + 2, NFS4_FH_WIRE_LEN);
			cs.cfh.len = NFS4_FH_WIRE_LEN;
		}
		cs.op = data[0];
		cs.body_on_error = false;
		xdr_dec_init(&args, data + 2, n - 2);
		if (cs.cfh.len || fns[data[0] % NFNS] == nfs4_op_putrootfh || fns[data[0] % NFNS] == nfs4_op_putfh)
			fns[data[0] % NFNS](&cs, &args, &res);
		if (!end)
			break;
		size -= n + 1;
		data += n + 1;
	}
	xdr_enc_free(&res);
	nfs_exports_put(cs.exports);
	return 0;
}
