/*
 * frame.c - the frame around every message: the fixed 32-byte header
 * (magic, frame version, type, flags, seq, payload length, payload crc32c,
 * header crc32c), the optional MAC trailer, and the dispatch from a message
 * type to its payload codec.
 *
 * The header carries a crc of its own, so a receiver reads 32 bytes, checks
 * them (mdsp_decode_hdr: magic, version, header crc, length bound) and only
 * then reserves memory for the payload: a flipped length bit or a hostile
 * peer's made-up length costs nothing.  The payload crc is checked once the
 * payload is in (mdsp_decode_payload), the MAC of an authenticated
 * connection by mdsp_frame_verify.  An unknown message type is not a
 * framing error: the frame can still be skipped, so the header decoder
 * accepts it and the payload decoder answers -EOPNOTSUPP.
 *
 * Frames are encoded ahead of time with seq 0; the connection's sequence
 * number is only known when the frame goes out, so mdsp_frame_seal() writes
 * it, both crcs and the MAC then.
 */
#include <stdlib.h>

#include "common/crc32c.h"
#include "common/log.h"
#include "mds_proto/proto_int.h"

#define OFF_FLAGS    8
#define OFF_SEQ      12
#define OFF_LEN      20
#define OFF_CRC      24
#define OFF_HDR_CRC  28
#define V1_CRC_OFF   24

static void hdr_write(uint8_t *x, const struct mdsp_hdr *h)
{
	le32(x + 0, h->magic);
	x[4] = (uint8_t)h->version;
	x[5] = (uint8_t)(h->version >> 8);
	x[6] = (uint8_t)h->type;
	x[7] = (uint8_t)(h->type >> 8);
	le32(x + OFF_FLAGS, h->flags);
	le64(x + OFF_SEQ, h->seq);
	le32(x + OFF_LEN, h->len);
	le32(x + OFF_CRC, h->crc);
	le32(x + OFF_HDR_CRC, crc32c(0, x, OFF_HDR_CRC));
}

static int frame_seal(uint8_t *frame, size_t len, uint64_t seq, struct mdsp_mac *mac, uint8_t *mac_out,
		      bool payload_crc)
{
	uint32_t plen, flags;

	if (len < MDSP_HDR_LEN || rd32(frame) != MDSP_MAGIC)
		return -EINVAL;
	plen = rd32(frame + OFF_LEN);
	if (plen != len - MDSP_HDR_LEN)
		return -EINVAL;
	flags = rd32(frame + OFF_FLAGS) & ~(uint32_t)MDSP_FRAME_MAC;
	if (mac)
		flags |= MDSP_FRAME_MAC;
	le32(frame + OFF_FLAGS, flags);
	le64(frame + OFF_SEQ, seq);
	if (payload_crc)
		le32(frame + OFF_CRC, crc32c(0, frame + MDSP_HDR_LEN, plen));
	le32(frame + OFF_HDR_CRC, crc32c(0, frame, OFF_HDR_CRC));
	if (mac)
		return mdsp_mac_compute(mac, seq, frame, MDSP_HDR_LEN, frame + MDSP_HDR_LEN, plen, mac_out);
	return 0;
}

int mdsp_frame_mac(struct mdsp_mac *mac, const uint8_t *hdr, const uint8_t *payload, size_t plen,
		   uint8_t out[MDSP_MAC_LEN])
{
	return mdsp_mac_compute(mac, rd64(hdr + OFF_SEQ), hdr, MDSP_HDR_LEN, payload, plen, out);
}

int mdsp_frame_seal(uint8_t *frame, size_t len, uint64_t seq, struct mdsp_mac *mac, uint8_t *mac_out)
{
	return frame_seal(frame, len, seq, mac, mac_out, true);
}

int mdsp_frame_seal_encoded(uint8_t *frame, size_t len, uint64_t seq, struct mdsp_mac *mac, uint8_t *mac_out)
{
	return frame_seal(frame, len, seq, mac, mac_out, false);
}

int mdsp_frame_verify(struct mdsp_mac *mac, const struct mdsp_hdr *h, const uint8_t *hdr_bytes,
		      const uint8_t *payload, const uint8_t *mac_in, uint64_t *last_seq, const char **why)
{
	uint8_t want[MDSP_MAC_LEN];

	if (!(h->flags & MDSP_FRAME_MAC) || !mac_in) {
		*why = "frame without a MAC on an authenticated connection";
		return -EBADMSG;
	}
	if (mdsp_mac_compute(mac, h->seq, hdr_bytes, MDSP_HDR_LEN, payload, h->len, want) ||
	    !mdsp_mac_equal(want, mac_in)) {
		*why = "bad frame MAC";
		return -EBADMSG;
	}
	if (h->seq != *last_seq + 1) {
		*why = h->seq <= *last_seq ? "replayed frame (seq not after the last one)"
					   : "frame out of order (seq skips ahead)";
		return -EBADMSG;
	}
	*last_seq = h->seq;
	return 0;
}

int mdsp_encode(struct mdsp_buf *b, const struct mdsp_msg *msg)
{
	size_t start = b->len, plen;
	struct mdsp_hdr h;
	uint8_t zero[MDSP_HDR_LEN] = { 0 };
	int r;

	if (b->oom)
		return -ENOMEM;
	put_bytes(b, zero, sizeof(zero));
	switch (msg->type) {
	case MDSP_MSG_SESSION:
		r = enc_session(b, &msg->session);
		break;
	case MDSP_MSG_REQUEST:
		r = enc_request(b, &msg->request);
		break;
	case MDSP_MSG_REPLY:
		r = enc_reply(b, &msg->reply);
		break;
	case MDSP_MSG_CAPS:
		r = enc_caps(b, &msg->caps);
		break;
	case MDSP_MSG_COMMAND:
		r = enc_command(b, &msg->command);
		break;
	case MDSP_MSG_COMMAND_REPLY:
		r = enc_command_reply(b, &msg->command_reply);
		break;
	case MDSP_MSG_AUTH:
		r = enc_auth(b, &msg->auth);
		break;
	default:
		derr(PROTO, "mdsp encode: unknown message type %u", msg->type);
		r = -EINVAL;
		break;
	}
	if (!r && b->oom)
		r = -ENOMEM;
	if (r)
		goto fail;
	plen = b->len - start - MDSP_HDR_LEN;
	if (plen > MDSP_MAX_PAYLOAD) {
		derr(PROTO, "mdsp encode: %s payload of %zu bytes over %u",
		     mdsp_msg_type_name(msg->type), plen, MDSP_MAX_PAYLOAD);
		r = -E2BIG;
		goto fail;
	}
	h.magic = MDSP_MAGIC;
	h.version = MDSP_PROTO_VERSION;
	h.type = msg->type;
	h.flags = 0;
	h.seq = msg->seq;
	h.len = (uint32_t)plen;
	h.crc = crc32c(0, b->data + start + MDSP_HDR_LEN, plen);
	hdr_write(b->data + start, &h);
	return 0;
fail:
	if (b->len > start)
		b->len = start;
	return r;
}

int mdsp_decode_hdr(const uint8_t *buf, struct mdsp_hdr *h, const char **why)
{
	const char *dummy;

	if (!why)
		why = &dummy;
	h->magic = rd32(buf);
	h->version = (uint16_t)(buf[4] | buf[5] << 8);
	h->type = (uint16_t)(buf[6] | buf[7] << 8);
	h->flags = rd32(buf + 8);
	h->seq = rd64(buf + 12);
	h->len = rd32(buf + OFF_LEN);
	h->crc = rd32(buf + OFF_CRC);
	h->hdr_crc = rd32(buf + OFF_HDR_CRC);
	if (h->magic != MDSP_MAGIC) {
		*why = "bad magic";
		return -EBADMSG;
	}
	if (h->version != MDSP_PROTO_VERSION) {
		*why = h->version == 1 ? "frame version 1 (a loligo older than this one: upgrade it)"
				       : "unsupported frame version";
		return -EPROTONOSUPPORT;
	}
	if (crc32c(0, buf, OFF_HDR_CRC) != h->hdr_crc) {
		*why = "header crc mismatch";
		return -EBADMSG;
	}
	if (h->len > MDSP_MAX_PAYLOAD) {
		*why = "payload length over the bound";
		return -EMSGSIZE;
	}
	return 0;
}

int mdsp_decode_payload(const struct mdsp_hdr *h, const uint8_t *payload, size_t len,
			struct mdsp_msg *msg, const char **why)
{
	static const uint8_t empty[1];
	const char *dummy;
	struct cur c;
	int r;

	if (!why)
		why = &dummy;
	*why = NULL;
	memset(msg, 0, sizeof(*msg));
	if (!payload) {
		if (len) {
			*why = "no payload";
			return -EBADMSG;
		}
		payload = empty;        /* no arithmetic on a null pointer */
	}
	c.p = payload;
	c.end = payload + len;
	c.why = NULL;
	if (len != h->len || len > MDSP_MAX_PAYLOAD) {
		*why = "payload length differs from the header";
		return -EBADMSG;
	}
	if (h->version == 1) {
		/* stored by an older MDS: one crc over 24 header bytes and the payload */
		uint8_t x[MDSP_HDR_LEN_V1];

		le32(x, h->magic);
		x[4] = 1;
		x[5] = 0;
		x[6] = (uint8_t)h->type;
		x[7] = (uint8_t)(h->type >> 8);
		le32(x + OFF_FLAGS, h->flags);
		le64(x + OFF_SEQ, h->seq);
		le32(x + OFF_LEN, h->len);
		if (crc32c(crc32c(0, x, V1_CRC_OFF), payload, len) != h->crc) {
			*why = "crc mismatch";
			return -EBADMSG;
		}
	} else if (crc32c(0, payload, len) != h->crc) {
		*why = "payload crc mismatch";
		return -EBADMSG;
	}
	msg->type = h->type;
	msg->seq = h->seq;
	switch (h->type) {
	case MDSP_MSG_SESSION:
		r = dec_session(&c, &msg->session);
		break;
	case MDSP_MSG_REQUEST:
		r = dec_request(&c, &msg->request);
		break;
	case MDSP_MSG_REPLY:
		r = dec_reply(&c, &msg->reply);
		break;
	case MDSP_MSG_CAPS:
		r = dec_caps(&c, &msg->caps);
		break;
	case MDSP_MSG_COMMAND:
		r = dec_command(&c, &msg->command);
		break;
	case MDSP_MSG_COMMAND_REPLY:
		r = dec_command_reply(&c, &msg->command_reply);
		break;
	case MDSP_MSG_AUTH:
		r = dec_auth(&c, &msg->auth);
		break;
	default:
		*why = "unknown message type";
		memset(msg, 0, sizeof(*msg));
		return -EOPNOTSUPP;
	}
	if (!r && c.p != c.end) {
		mdsp_msg_free(msg);
		r = dec_bad(&c, "trailing bytes after the payload");
	}
	if (r) {
		*why = r == -ENOMEM ? "out of memory" : (c.why ? c.why : "malformed");
		memset(msg, 0, sizeof(*msg));
	}
	return r;
}

int mdsp_decode_frame(const uint8_t *buf, size_t len, struct mdsp_msg *msg, const char **why)
{
	struct mdsp_hdr h;
	const char *dummy;
	int r;

	if (!why)
		why = &dummy;
	size_t hl = MDSP_HDR_LEN, tail;

	memset(msg, 0, sizeof(*msg));
	if (len >= MDSP_HDR_LEN_V1 && rd32(buf) == MDSP_MAGIC && buf[4] == 1 && buf[5] == 0) {
		h.magic = MDSP_MAGIC;
		h.version = 1;
		h.type = (uint16_t)(buf[6] | buf[7] << 8);
		h.flags = rd32(buf + OFF_FLAGS);
		h.seq = rd64(buf + OFF_SEQ);
		h.len = rd32(buf + OFF_LEN);
		h.crc = rd32(buf + V1_CRC_OFF);
		h.hdr_crc = 0;
		hl = MDSP_HDR_LEN_V1;
		if (h.len > MDSP_MAX_PAYLOAD) {
			*why = "payload length over the bound";
			return -EMSGSIZE;
		}
	} else {
		if (len < MDSP_HDR_LEN) {
			*why = "truncated header";
			return -EBADMSG;
		}
		r = mdsp_decode_hdr(buf, &h, why);
		if (r)
			return r;
	}
	tail = h.version > 1 && (h.flags & MDSP_FRAME_MAC) ? MDSP_MAC_LEN : 0;
	if (len - hl != h.len && len - hl != (size_t)h.len + tail) {
		*why = "frame length differs from the header";
		return -EBADMSG;
	}
	return mdsp_decode_payload(&h, buf + hl, h.len, msg, why);
}

void mdsp_msg_free(struct mdsp_msg *msg)
{
	switch (msg->type) {
	case MDSP_MSG_SESSION:
		free_session(&msg->session);
		break;
	case MDSP_MSG_REQUEST:
		free_request(&msg->request);
		break;
	case MDSP_MSG_REPLY:
		free_reply(&msg->reply);
		break;
	case MDSP_MSG_CAPS:
		free_caps(&msg->caps);
		break;
	case MDSP_MSG_COMMAND:
		free_command(&msg->command);
		break;
	case MDSP_MSG_COMMAND_REPLY:
		free_command_reply(&msg->command_reply);
		break;
	case MDSP_MSG_AUTH:
		free_auth(&msg->auth);
		break;
	default:
		break;
	}
}
