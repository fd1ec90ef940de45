/*
 * frame.c - the frame around every message: the fixed 28-byte header
 * (magic, frame version, type, flags, seq, payload length, crc32c) and the
 * dispatch from a message type to its payload codec.
 *
 * The crc covers the first 24 header bytes and then the payload, so a
 * receiver reads the header, checks it (mdsp_decode_hdr: bounds the length
 * before anything is allocated for the payload), reads the payload and only
 * then verifies the crc (mdsp_decode_payload).  An unknown message type is
 * not a framing error: the frame can still be skipped, so the header decoder
 * accepts it and the payload decoder answers -EOPNOTSUPP.
 */
#include <stdlib.h>

#include "common/crc32c.h"
#include "common/log.h"
#include "mds_proto/proto_int.h"

#define HDR_CRC_OFF 24

static void hdr_write(uint8_t *x, const struct mdsp_hdr *h)
{
	le32(x + 0, h->magic);
	x[4] = (uint8_t)h->version;
	x[5] = (uint8_t)(h->version >> 8);
	x[6] = (uint8_t)h->type;
	x[7] = (uint8_t)(h->type >> 8);
	le32(x + 8, h->flags);
	le64(x + 12, h->seq);
	le32(x + 20, h->len);
	le32(x + 24, h->crc);
}

static uint32_t frame_crc(const struct mdsp_hdr *h, const uint8_t *payload, size_t len)
{
	uint8_t x[MDSP_HDR_LEN];

	hdr_write(x, h);
	return crc32c(crc32c(0, x, HDR_CRC_OFF), payload, len);
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
	h.crc = 0;
	h.crc = frame_crc(&h, b->data + start + MDSP_HDR_LEN, plen);
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
	h->len = rd32(buf + 20);
	h->crc = rd32(buf + 24);
	if (h->magic != MDSP_MAGIC) {
		*why = "bad magic";
		return -EBADMSG;
	}
	if (h->version != MDSP_PROTO_VERSION) {
		*why = "unsupported frame version";
		return -EPROTONOSUPPORT;
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
	if (frame_crc(h, payload, len) != h->crc) {
		*why = "crc mismatch";
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
	memset(msg, 0, sizeof(*msg));
	if (len < MDSP_HDR_LEN) {
		*why = "truncated header";
		return -EBADMSG;
	}
	r = mdsp_decode_hdr(buf, &h, why);
	if (r)
		return r;
	if (len - MDSP_HDR_LEN != h.len) {
		*why = "frame length differs from the header";
		return -EBADMSG;
	}
	return mdsp_decode_payload(&h, buf + MDSP_HDR_LEN, len - MDSP_HDR_LEN, msg, why);
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
	case MDSP_MSG_COMMAND:
		free_command(&msg->command);
		break;
	case MDSP_MSG_COMMAND_REPLY:
		free_command_reply(&msg->command_reply);
		break;
	default:
		break;
	}
}
