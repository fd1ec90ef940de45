/*
 * fuzz_proto.h - shared body of the MDS protocol fuzz targets.
 *
 * Each per-message target feeds its input as the payload of one message
 * type, under a header that is made consistent (length, crc) so mutations
 * reach the payload decoder instead of dying at the crc.  Whatever decodes
 * must also encode again and decode to the same message: a decoder that
 * accepts what the encoder cannot produce, or a lossy round trip, aborts.
 * Leaks and out-of-bounds reads are caught by ASan/LSan.
 */
#ifndef LOLIGO_TESTS_FUZZ_PROTO_H
#define LOLIGO_TESTS_FUZZ_PROTO_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "mds_proto/proto.h"
#include "../unit/proto_samples.h"

/* Header bytes for a @plen-byte payload of @type, crc included. */
static __attribute__((unused)) void fuzz_make_hdr(uint8_t *x, uint16_t type, uint64_t seq,
						  const uint8_t *payload, size_t plen)
{
	struct { uint32_t off, v; } f32[] = { { 0, MDSP_MAGIC }, { 8, 0 }, { 20, (uint32_t)plen } };
	uint32_t crc;
	unsigned i;

	memset(x, 0, MDSP_HDR_LEN);
	for (i = 0; i < 3; i++) {
		x[f32[i].off] = (uint8_t)f32[i].v;
		x[f32[i].off + 1] = (uint8_t)(f32[i].v >> 8);
		x[f32[i].off + 2] = (uint8_t)(f32[i].v >> 16);
		x[f32[i].off + 3] = (uint8_t)(f32[i].v >> 24);
	}
	x[4] = MDSP_PROTO_VERSION;
	x[6] = (uint8_t)type;
	x[7] = (uint8_t)(type >> 8);
	for (i = 0; i < 8; i++)
		x[12 + i] = (uint8_t)(seq >> (8 * i));
	crc = crc32c(0, payload, plen);
	x[24] = (uint8_t)crc;
	x[25] = (uint8_t)(crc >> 8);
	x[26] = (uint8_t)(crc >> 16);
	x[27] = (uint8_t)(crc >> 24);
	crc = crc32c(0, x, 28);
	x[28] = (uint8_t)crc;
	x[29] = (uint8_t)(crc >> 8);
	x[30] = (uint8_t)(crc >> 16);
	x[31] = (uint8_t)(crc >> 24);
}

/* A decoded message must re-encode and round-trip unchanged. */
static __attribute__((unused)) void fuzz_check_decoded(const struct mdsp_msg *m)
{
	struct mdsp_buf b;
	struct mdsp_msg d;
	int r;

	mdsp_buf_init(&b);
	r = mdsp_encode(&b, m);
	if (r) {
		fprintf(stderr, "decoded %s does not encode: %d\n", mdsp_msg_type_name(m->type), r);
		abort();
	}
	r = mdsp_decode_frame(b.data, b.len, &d, NULL);
	if (r || !msg_eq(m, &d)) {
		fprintf(stderr, "decoded %s does not round-trip: %d\n", mdsp_msg_type_name(m->type), r);
		abort();
	}
	mdsp_msg_free(&d);
	mdsp_buf_free(&b);
}

static __attribute__((unused)) int fuzz_payload(uint16_t type, const uint8_t *data, size_t size)
{
	struct mdsp_hdr h;
	struct mdsp_msg m;
	uint8_t x[MDSP_HDR_LEN];
	const char *why = NULL;
	int r;

	if (size > MDSP_MAX_PAYLOAD)
		return 0;
	fuzz_make_hdr(x, type, 1, data, size);
	if (mdsp_decode_hdr(x, &h, &why))
		abort();
	r = mdsp_decode_payload(&h, data, size, &m, &why);
	if (r == 0) {
		fuzz_check_decoded(&m);
		mdsp_msg_free(&m);
	} else if (r != -EBADMSG || !why) {
		fprintf(stderr, "unexpected decode result %d (%s)\n", r, why ? why : "no reason");
		abort();
	}
	return 0;
}

#endif
