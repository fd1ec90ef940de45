/*
 * fuzz_rpc_call.c - libFuzzer target for what a TCP peer controls first:
 * the record-marking reassembler fed in arbitrary chunk sizes, then the
 * call-header decoder (credentials included: AUTH_SYS and RPCSEC_GSS) on every record, then the
 * reply-header encoders for whatever the decoder concluded.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nfs_gw/rpc/rpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rpc_rm rm;
	struct rpc_call c;
	enum rpc_auth_stat why;
	struct xdr_enc e;
	size_t off = 0, used, len, chunk;
	uint8_t *rec;
	int r;

	if (size < 1)
		return 0;
	/* the first byte picks the chunking, so splits are explored too */
	chunk = (size_t)data[0] + 1;
	data++;
	size--;
	rpc_rm_init(&rm, 64 * 1024, 1024);
	while (off < size) {
		size_t n = size - off < chunk ? size - off : chunk;
		r = rpc_rm_feed(&rm, data + off, n, &used);
		if (used > n)
			abort();
		off += used;
		if (r < 0)
			break;
		if (r == 0) {
			if (used != n)
				abort();
			continue;
		}
		rec = rpc_rm_take(&rm, &len);
		xdr_enc_init(&e, 4096);
		rpc_reply_begin(&e);
		switch (rpc_decode_call(rec, len, &c, &why)) {
		case RPC_DEC_OK:
			if (c.args < rec || c.args + c.args_len != rec + len)
				abort();
			if (c.cred.ngids > RPC_AUTHSYS_MAX_GIDS || strlen(c.cred.machine) > RPC_AUTHSYS_MAX_MACHINE)
				abort();
			/* RPCSEC_GSS: the handle, the MIC'd header and the verifier lie in the record */
			if (c.cred.flavor == RPCSEC_GSS &&
			    (c.gss.handle_len > RPC_GSS_MAX_HANDLE || c.gss.hdr_len > len ||
			     (c.gss.handle_len && (c.gss.handle < rec || c.gss.handle + c.gss.handle_len > rec + len)) ||
			     (c.gss.verf_len && (c.gss.verf < rec || c.gss.verf + c.gss.verf_len > rec + len)) ||
			     c.gss.service < RPC_GSS_SVC_NONE || c.gss.service > RPC_GSS_SVC_PRIVACY))
				abort();
			rpc_reply_accepted(&e, c.xid, RPC_SUCCESS);
			break;
		case RPC_DEC_RPC_MISMATCH:
			rpc_reply_rpc_mismatch(&e, c.xid);
			break;
		case RPC_DEC_AUTH_ERROR:
			rpc_reply_auth_error(&e, c.xid, why);
			break;
		case RPC_DEC_UNPARSABLE:
			break;
		}
		rpc_reply_end(&e);
		xdr_enc_free(&e);
		free(rec);
	}
	rpc_rm_free(&rm);
	return 0;
}
