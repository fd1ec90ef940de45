/*
 * fuzz_proto_frame.c - libFuzzer target: whole frames, header included.
 *
 * The first input byte is a mode, the rest a frame.  Mode bit 0 set: the
 * crc is recomputed first, so mutated headers (type, flags, seq, length)
 * and payloads reach the decoders; clear: the frame is decoded as is, which
 * exercises the header checks and the crc.  Both the one-buffer decoder
 * (mdsp_decode_frame) and the two-step path a socket reader takes
 * (mdsp_decode_hdr, then mdsp_decode_payload on the bytes that follow) run.
 */
#include "fuzz_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_result(int r, struct mdsp_msg *m, const char *why)
{
	if (r == 0) {
		fuzz_check_decoded(m);
		mdsp_msg_free(m);
		return;
	}
	if (!why || (r != -EBADMSG && r != -EOPNOTSUPP && r != -EPROTONOSUPPORT &&
		     r != -EMSGSIZE)) {
		fprintf(stderr, "unexpected decode result %d (%s)\n", r, why ? why : "no reason");
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mdsp_hdr h;
	struct mdsp_msg m;
	const char *why = NULL;
	uint8_t *f;
	size_t len;
	uint32_t crc;
	int r;

	if (size < 1)
		return 0;
	len = size - 1;
	f = malloc(len ? len : 1);
	if (!f)
		return 0;
	memcpy(f, data + 1, len);
	if ((data[0] & 1) && len >= MDSP_HDR_LEN) {
		crc = crc32c(crc32c(0, f, 24), f + MDSP_HDR_LEN, len - MDSP_HDR_LEN);
		f[24] = (uint8_t)crc;
		f[25] = (uint8_t)(crc >> 8);
		f[26] = (uint8_t)(crc >> 16);
		f[27] = (uint8_t)(crc >> 24);
	}

	r = mdsp_decode_frame(f, len, &m, &why);
	check_result(r, &m, why);

	if (len >= MDSP_HDR_LEN) {
		why = NULL;
		r = mdsp_decode_hdr(f, &h, &why);
		if (r == 0) {
			size_t avail = len - MDSP_HDR_LEN;

			why = NULL;
			r = mdsp_decode_payload(&h, f + MDSP_HDR_LEN, avail < h.len ? avail : h.len,
						&m, &why);
		}
		check_result(r, &m, why);
	}
	free(f);
	return 0;
}
