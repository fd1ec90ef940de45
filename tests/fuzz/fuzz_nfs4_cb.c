/*
 * fuzz_nfs4_cb.c - libFuzzer target for what an NFSv4 client controls in
 * its answers to our callbacks and in the callback security it offers:
 * the RPC reply header (rpc_decode_reply), the CB_COMPOUND4res walk
 * (nfs4_cb_get_compound_res) over the results it points at - CB_SEQUENCE,
 * CB_RECALL and CB_GETATTR's fattr4 (only change and size may come back) -
 * and a
 * callback_sec_parms4<> list (nfs4_cb_get_sec, CREATE_SESSION and
 * BACKCHANNEL_CTL).  Checks that results stay inside the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nfs_gw/nfs4/nfs4.h"

/* what a parsed CB_COMPOUND4res may say */
static void check_res(int r, const struct nfs4_cb_res *cr)
{
	if (r != 0)
		return;
	if (cr->getattr_mask & ~(uint32_t)(NFS4_CB_GETATTR_CHANGE | NFS4_CB_GETATTR_SIZE))
		abort();
	if (cr->getattr_mask && (!cr->has_getattr || cr->getattr_status != NFS4_OK))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rpc_reply rr;
	struct nfs4_cb_res cr;
	struct nfs4_cb_sec sec;
	struct xdr_dec d;

	if (rpc_decode_reply(data, size, &rr) == 0) {
		if (rr.reply_stat == RPC_MSG_ACCEPTED &&
		    (rr.res < data || rr.res + rr.res_len != data + size))
			abort();
		if (rr.reply_stat == RPC_MSG_ACCEPTED && (rr.verf < data || rr.verf + rr.verf_len > rr.res))
			abort();         /* the verifier (RPCSEC_GSS checks it) lies inside the record */
		if (rr.reply_stat == RPC_MSG_ACCEPTED && rpc_reply_errno(&rr) == 0)
			check_res(nfs4_cb_get_compound_res(rr.res, rr.res_len, &cr), &cr);
	}
	check_res(nfs4_cb_get_compound_res(data, size, &cr), &cr);
	xdr_dec_init(&d, data, size);
	/* no RPCSEC_GSS call: an RPCSEC_GSS entry is never usable, no context is taken */
	if (nfs4_cb_get_sec(&d, NULL, &sec) == NFS4_OK && (sec.ctx ||
	    (sec.ok && (strnlen(sec.machine, sizeof(sec.machine)) >= sizeof(sec.machine) ||
			(sec.flavor != RPC_AUTH_NONE && sec.flavor != RPC_AUTH_SYS)))))
		abort();
	return 0;
}
