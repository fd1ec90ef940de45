/*
 * test_proto.c - the MDS wire protocol codec: round trips of every message
 * with every field set (and at the bounds), truncation at every byte,
 * single-bit corruption, crc and header checks, forward compatibility of the
 * struct envelope, and the bounds every decoder must enforce before it
 * allocates.  The blocking socket helpers are in test_proto_sock.c.
 *
 * Some tests patch encoded bytes at fixed offsets: they pin the wire format
 * too, so an accidental layout change fails here.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "mds_proto/proto.h"
#include "perm/perm.h"
#include "proto_samples.h"

#define MAX_SAMPLES 64

static uint32_t rd32le(const uint8_t *x)
{
	return (uint32_t)x[0] | (uint32_t)x[1] << 8 | (uint32_t)x[2] << 16 | (uint32_t)x[3] << 24;
}

static void wr32le(uint8_t *x, uint32_t v)
{
	x[0] = (uint8_t)v;
	x[1] = (uint8_t)(v >> 8);
	x[2] = (uint8_t)(v >> 16);
	x[3] = (uint8_t)(v >> 24);
}

/* Make the header of @f (whose payload is now @plen bytes) consistent
 * again: length and crc, so a corruption reaches the payload decoder. */
static void reframe(uint8_t *f, size_t plen)
{
	uint32_t crc;

	wr32le(f + 20, (uint32_t)plen);
	crc = crc32c(0, f + MDSP_HDR_LEN, plen);
	wr32le(f + 24, crc);
	wr32le(f + 28, crc32c(0, f, 28));
}

static void encode_ok(const struct mdsp_msg *m, struct mdsp_buf *b)
{
	mdsp_buf_init(b);
	ck_assert_int_eq(mdsp_encode(b, m), 0);
	ck_assert_uint_ge(b->len, MDSP_HDR_LEN);
}

/* Decode @f; on success check that the result encodes again and survives a
 * second round trip unchanged, then free it. */
static int decode_and_check(const uint8_t *f, size_t len, const char **why)
{
	struct mdsp_msg m, m2;
	struct mdsp_buf b;
	int r;

	r = mdsp_decode_frame(f, len, &m, why);
	if (r)
		return r;
	mdsp_buf_init(&b);
	ck_assert_int_eq(mdsp_encode(&b, &m), 0);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &m2, NULL), 0);
	ck_assert(msg_eq(&m, &m2));
	mdsp_msg_free(&m2);
	mdsp_msg_free(&m);
	mdsp_buf_free(&b);
	return 0;
}

static void roundtrip(const struct mdsp_msg *m)
{
	struct mdsp_buf b;
	struct mdsp_msg d;
	struct mdsp_hdr h;
	const char *why = NULL;

	encode_ok(m, &b);
	ck_assert_int_eq(mdsp_decode_hdr(b.data, &h, &why), 0);
	ck_assert_uint_eq(h.magic, MDSP_MAGIC);
	ck_assert_uint_eq(h.type, m->type);
	ck_assert_uint_eq(h.seq, m->seq);
	ck_assert_uint_eq(h.len, b.len - MDSP_HDR_LEN);
	ck_assert_int_eq(mdsp_decode_payload(&h, b.data + MDSP_HDR_LEN, h.len, &d, &why), 0);
	ck_assert_msg(msg_eq(m, &d), "%s does not round-trip", mdsp_msg_type_name(m->type));
	mdsp_msg_free(&d);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), 0);
	ck_assert(msg_eq(m, &d));
	mdsp_msg_free(&d);
	mdsp_buf_free(&b);
}

/* ---- round trips ------------------------------------------------------- */

START_TEST(test_roundtrip_every_message)
{
	struct mdsp_msg s[MAX_SAMPLES];
	int i, n = sample_all_small(s);
	uint32_t op;

	for (i = 0; i < n; i++) {
		roundtrip(&s[i]);
		mdsp_msg_free(&s[i]);
	}
	for (op = MDSP_SESSION_REQUEST_OPEN; op <= MDSP_SESSION_REJECT; op++) {
		sample_session(&s[0], op, op == MDSP_SESSION_RECONNECT ? 3 : 0);
		roundtrip(&s[0]);
		mdsp_msg_free(&s[0]);
	}
	for (op = MDSP_CAPS_GRANT; op < MDSP_CAPS_OP_MAX; op++) {
		sample_caps(&s[0], op);
		roundtrip(&s[0]);
		mdsp_msg_free(&s[0]);
	}
}
END_TEST

START_TEST(test_roundtrip_at_the_bounds)
{
	struct mdsp_msg m;
	uint32_t op;

	for (op = MDSP_OP_LOOKUP; op < MDSP_OP_MAX; op++) {
		sample_request(&m, op, MDSP_NAME_MAX, MDSP_MAX_GROUPS, MDSP_XATTR_SIZE_MAX);
		free(m.request.target);
		m.request.target = sample_str(MDSP_PATH_MAX, op);
		roundtrip(&m);
		mdsp_msg_free(&m);
	}
	/* a full readdir batch with long names and a full xattr value */
	sample_reply(&m, MDSP_READDIR_MAX, MDSP_NAME_MAX, MDSP_XATTR_SIZE_MAX);
	free(m.reply.link);
	m.reply.link = sample_str(MDSP_PATH_MAX, 1);
	roundtrip(&m);
	mdsp_msg_free(&m);

	sample_session(&m, MDSP_SESSION_RECONNECT, 20000);
	roundtrip(&m);
	mdsp_msg_free(&m);

	/* a lease op naming the longest name */
	sample_caps(&m, MDSP_CAPS_LEASE_REVOKE);
	free(m.caps.dname);
	m.caps.dname = sample_str(MDSP_NAME_MAX, 3);
	roundtrip(&m);
	mdsp_msg_free(&m);

	sample_command(&m, MDSP_JSON_MAX);
	roundtrip(&m);
	mdsp_msg_free(&m);
	sample_command_reply(&m, MDSP_JSON_MAX);
	roundtrip(&m);
	mdsp_msg_free(&m);
}
END_TEST

START_TEST(test_roundtrip_null_empty_and_absent)
{
	struct mdsp_msg m;

	/* NULL and "" are different on the wire and come back as sent */
	sample_request(&m, MDSP_OP_GETATTR, 0, 0, 0);
	free(m.request.name2);
	free(m.request.target);
	m.request.name2 = NULL;
	m.request.target = NULL;
	ck_assert_str_eq(m.request.name, "");
	roundtrip(&m);
	mdsp_msg_free(&m);

	/* a reply without trace, entries, link or data */
	memset(&m, 0, sizeof(m));
	m.type = MDSP_MSG_REPLY;
	m.reply.tid = 1;
	roundtrip(&m);

	sample_session(&m, MDSP_SESSION_REQUEST_RENEW, 0);
	free(m.session.reason);
	m.session.reason = NULL;
	roundtrip(&m);
	mdsp_msg_free(&m);
}
END_TEST

START_TEST(test_several_frames_in_one_buffer)
{
	struct mdsp_msg s[MAX_SAMPLES], d;
	struct mdsp_buf b;
	struct mdsp_hdr h;
	size_t off = 0;
	int i, n = sample_all_small(s);

	mdsp_buf_init(&b);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(mdsp_encode(&b, &s[i]), 0);
	for (i = 0; i < n; i++) {
		ck_assert_uint_ge(b.len - off, MDSP_HDR_LEN);
		ck_assert_int_eq(mdsp_decode_hdr(b.data + off, &h, NULL), 0);
		ck_assert_int_eq(mdsp_decode_payload(&h, b.data + off + MDSP_HDR_LEN, h.len, &d, NULL), 0);
		ck_assert(msg_eq(&s[i], &d));
		mdsp_msg_free(&d);
		mdsp_msg_free(&s[i]);
		off += MDSP_HDR_LEN + h.len;
	}
	ck_assert_uint_eq(off, b.len);
	mdsp_buf_free(&b);
}
END_TEST

START_TEST(test_inode_helpers)
{
	struct mdsp_inode in, out;
	struct mdsp_buf b;
	const uint8_t *p;

	sample_inode(&in, 5);
	mdsp_buf_init(&b);
	ck_assert_int_eq(mdsp_encode_inode(&b, &in), 0);
	ck_assert_int_eq(mdsp_encode_inode(&b, &in), 0);
	p = b.data;
	ck_assert_int_eq(mdsp_decode_inode(&p, b.data + b.len, &out), 0);
	ck_assert(inode_eq(&in, &out));
	ck_assert_ptr_eq(p, b.data + b.len / 2);
	ck_assert_int_eq(mdsp_decode_inode(&p, b.data + b.len, &out), 0);
	ck_assert_ptr_eq(p, b.data + b.len);
	/* truncated: error, and the cursor does not move */
	p = b.data;
	ck_assert_int_eq(mdsp_decode_inode(&p, b.data + b.len / 2 - 1, &out), -EBADMSG);
	ck_assert_ptr_eq(p, b.data);
	mdsp_buf_free(&b);
}
END_TEST

/* ---- truncation and corruption ----------------------------------------- */

START_TEST(test_truncated_at_every_offset)
{
	struct mdsp_msg s[MAX_SAMPLES], d;
	struct mdsp_buf b;
	uint8_t *f;
	size_t k, plen;
	int i, n = sample_all_small(s);

	for (i = 0; i < n; i++) {
		encode_ok(&s[i], &b);
		plen = b.len - MDSP_HDR_LEN;
		f = malloc(b.len);
		/* the frame cut short */
		for (k = 0; k < b.len; k++)
			ck_assert_int_ne(mdsp_decode_frame(b.data, k, &d, NULL), 0);
		/* the payload cut short with a header that agrees (so the cut
		 * reaches the struct decoders), once as is and once with the
		 * top-level struct length shrunk to match, which drives the
		 * cut into every field and nested struct */
		for (k = 0; k < plen; k++) {
			memcpy(f, b.data, MDSP_HDR_LEN + k);
			reframe(f, k);
			ck_assert_int_eq(mdsp_decode_frame(f, MDSP_HDR_LEN + k, &d, NULL), -EBADMSG);
			if (k >= 6) {
				wr32le(f + MDSP_HDR_LEN + 2, (uint32_t)(k - 6));
				reframe(f, k);
				ck_assert_msg(mdsp_decode_frame(f, MDSP_HDR_LEN + k, &d, NULL) == -EBADMSG,
					      "%s cut at %zu decoded", mdsp_msg_type_name(s[i].type), k);
			}
		}
		free(f);
		mdsp_buf_free(&b);
		mdsp_msg_free(&s[i]);
	}
}
END_TEST

START_TEST(test_every_bit_flip_is_caught_by_the_crc)
{
	struct mdsp_msg s[MAX_SAMPLES], d;
	struct mdsp_buf b;
	size_t k;
	int i, bit, n = sample_all_small(s);

	for (i = 0; i < n; i++) {
		encode_ok(&s[i], &b);
		for (k = 0; k < b.len; k++)
			for (bit = 0; bit < 8; bit++) {
				b.data[k] ^= (uint8_t)(1 << bit);
				ck_assert_int_ne(mdsp_decode_frame(b.data, b.len, &d, NULL), 0);
				b.data[k] ^= (uint8_t)(1 << bit);
			}
		mdsp_buf_free(&b);
		mdsp_msg_free(&s[i]);
	}
}
END_TEST

START_TEST(test_bit_flips_past_the_crc)
{
	struct mdsp_msg s[MAX_SAMPLES];
	struct mdsp_buf b;
	size_t k;
	int i, bit, r, n = sample_all_small(s), ok = 0, bad = 0;

	/* the crc made to match: every flip is an error or a valid message
	 * (which then must encode and round-trip), never a crash or a leak */
	for (i = 0; i < n; i++) {
		encode_ok(&s[i], &b);
		for (k = MDSP_HDR_LEN; k < b.len; k++)
			for (bit = 0; bit < 8; bit++) {
				b.data[k] ^= (uint8_t)(1 << bit);
				reframe(b.data, b.len - MDSP_HDR_LEN);
				r = decode_and_check(b.data, b.len, NULL);
				ck_assert(r == 0 || r == -EBADMSG);
				r ? bad++ : ok++;
				b.data[k] ^= (uint8_t)(1 << bit);
			}
		mdsp_buf_free(&b);
		mdsp_msg_free(&s[i]);
	}
	ck_assert_int_gt(ok, 0);
	ck_assert_int_gt(bad, 0);
}
END_TEST

START_TEST(test_crc_mismatch)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	struct mdsp_hdr h;
	const char *why = NULL;

	sample_caps(&m, MDSP_CAPS_GRANT);
	encode_ok(&m, &b);
	b.data[MDSP_HDR_LEN + 10] ^= 0x40;
	ck_assert_int_eq(mdsp_decode_hdr(b.data, &h, &why), 0);
	ck_assert_int_eq(mdsp_decode_payload(&h, b.data + MDSP_HDR_LEN, h.len, &d, &why), -EBADMSG);
	ck_assert_str_eq(why, "payload crc mismatch");
	b.data[MDSP_HDR_LEN + 10] ^= 0x40;
	b.data[24] ^= 1;        /* the payload crc itself: the header crc covers it */
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), -EBADMSG);
	ck_assert_str_eq(why, "header crc mismatch");
	b.data[24] ^= 1;
	/* the payload length given to the decoder must be the header's */
	ck_assert_int_eq(mdsp_decode_payload(&h, b.data + MDSP_HDR_LEN, h.len - 1, &d, &why),
			 -EBADMSG);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), 0);
	mdsp_buf_free(&b);
}
END_TEST

/* ---- the header -------------------------------------------------------- */

START_TEST(test_header_checks)
{
	struct mdsp_msg m;
	struct mdsp_buf b;
	struct mdsp_hdr h;
	const char *why;

	sample_caps(&m, MDSP_CAPS_ACK);
	encode_ok(&m, &b);
	ck_assert_uint_eq(rd32le(b.data), MDSP_MAGIC);
	ck_assert(memcmp(b.data, "LOLG", 4) == 0);

	/* a corrupt length is caught by the header's own crc, before anything
	 * is read or allocated for the payload */
	b.data[22] ^= 0x10;
	why = NULL;
	ck_assert_int_eq(mdsp_decode_hdr(b.data, &h, &why), -EBADMSG);
	ck_assert_str_eq(why, "header crc mismatch");
	b.data[22] ^= 0x10;
	/* an oversized length, well formed: refused too */
	wr32le(b.data + 20, MDSP_MAX_PAYLOAD + 1);
	wr32le(b.data + 28, crc32c(0, b.data, 28));
	why = NULL;
	ck_assert_int_eq(mdsp_decode_hdr(b.data, &h, &why), -EMSGSIZE);
	ck_assert_ptr_nonnull(why);
	wr32le(b.data + 20, UINT32_MAX);
	wr32le(b.data + 28, crc32c(0, b.data, 28));
	ck_assert_int_eq(mdsp_decode_hdr(b.data, &h, &why), -EMSGSIZE);
	wr32le(b.data + 20, MDSP_MAX_PAYLOAD);
	wr32le(b.data + 28, crc32c(0, b.data, 28));
	ck_assert_int_eq(mdsp_decode_hdr(b.data, &h, &why), 0);
	ck_assert_uint_eq(h.len, MDSP_MAX_PAYLOAD);
	reframe(b.data, b.len - MDSP_HDR_LEN);

	b.data[0] ^= 0xff;
	ck_assert_int_eq(mdsp_decode_hdr(b.data, &h, &why), -EBADMSG);
	ck_assert_str_eq(why, "bad magic");
	b.data[0] ^= 0xff;

	b.data[4] = MDSP_PROTO_VERSION + 1;
	ck_assert_int_eq(mdsp_decode_hdr(b.data, &h, &why), -EPROTONOSUPPORT);
	b.data[4] = 1;
	ck_assert_int_eq(mdsp_decode_hdr(b.data, &h, &why), -EPROTONOSUPPORT);
	ck_assert_ptr_nonnull(strstr(why, "older"));
	b.data[4] = MDSP_PROTO_VERSION;

	/* unknown flag bits are ignored */
	wr32le(b.data + 8, 0x80000000u);
	reframe(b.data, b.len - MDSP_HDR_LEN);
	ck_assert_int_eq(decode_and_check(b.data, b.len, NULL), 0);
	mdsp_buf_free(&b);
}
END_TEST

START_TEST(test_unknown_type)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	struct mdsp_hdr h;
	const char *why;
	uint16_t types[] = { 0, 8, 99, 0xffff };
	unsigned i;

	sample_caps(&m, MDSP_CAPS_ACK);
	encode_ok(&m, &b);
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		b.data[6] = (uint8_t)types[i];
		b.data[7] = (uint8_t)(types[i] >> 8);
		reframe(b.data, b.len - MDSP_HDR_LEN);
		/* the frame itself is fine: a reader can skip it */
		ck_assert_int_eq(mdsp_decode_hdr(b.data, &h, &why), 0);
		ck_assert_int_eq(mdsp_decode_payload(&h, b.data + MDSP_HDR_LEN, h.len, &d, &why),
				 -EOPNOTSUPP);
		ck_assert_str_eq(why, "unknown message type");
		ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), -EOPNOTSUPP);
	}
	/* the encoder refuses to build one */
	m.type = 99;
	ck_assert_int_eq(mdsp_encode(&b, &m), -EINVAL);
	mdsp_buf_free(&b);
}
END_TEST

/* ---- the struct envelope ----------------------------------------------- */

/* Insert @n bytes at payload offset @at in the frame in @b, growing the
 * lengths of the enclosing structs whose envelopes start at payload offsets
 * @env[0..nenv), and fix the header. */
static void insert_tail(struct mdsp_buf *b, size_t at, size_t n, const size_t *env, int nenv)
{
	uint8_t *p;
	int i;

	ck_assert(b->len + n <= b->cap || (b->data = realloc(b->data, b->cap = b->len + n)));
	p = b->data + MDSP_HDR_LEN;
	memmove(p + at + n, p + at, b->len - MDSP_HDR_LEN - at);
	memset(p + at, 0xee, n);
	b->len += n;
	for (i = 0; i < nenv; i++) {
		p[env[i]] = (uint8_t)(p[env[i]] + 1);   /* a newer version */
		wr32le(p + env[i] + 2, rd32le(p + env[i] + 2) + (uint32_t)n);
	}
	reframe(b->data, b->len - MDSP_HDR_LEN);
}

/* Offsets in a request payload (ngroups groups): the caller struct follows
 * tid, oldest_tid, attempt, flags and op. */
#define REQ_CALLER_OFF 34
/* an inode struct's body (after its 6-byte envelope): v1 124 bytes, v2's blocks and flags, v3's xattrs,
 * v4's rstats (3 u64, a time), quotas (2 u64) and quota_room, v5's layout (stripe unit, count,
 * pool, flags) */
#define INODE_BODY (124 + 8 + 4 + 4 + 3 * 8 + 12 + 3 * 8 + 16)
#define CALLER_LEN(ngroups) (4 + 4 + 4 + 4 * (ngroups) + 4)

START_TEST(test_forward_compat_skips_unknown_tails)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	size_t env[2];

	/* a newer top-level struct with fields we do not know at its end */
	sample_command(&m, 0);
	encode_ok(&m, &b);
	env[0] = 0;
	insert_tail(&b, b.len - MDSP_HDR_LEN, 9, env, 1);
	ck_assert_uint_eq(b.data[MDSP_HDR_LEN], 2);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, NULL), 0);
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);

	/* a newer inode nested in a newer caps struct (the NULL dname, 4
	 * bytes, and the v3 extents follow it: has_ext, 2 added, 1 removed) */
	sample_caps(&m, MDSP_CAPS_FLUSH);
	encode_ok(&m, &b);
	env[1] = 6 + 4 + 8 + 4 + 4 + 8 + 8 + 4;
	ck_assert_uint_eq(rd32le(b.data + MDSP_HDR_LEN + env[1] + 2), INODE_BODY);
	insert_tail(&b, b.len - MDSP_HDR_LEN - 4 - (1 + 4 + 2 * 16 + 4 + 1 * 16), 7, env, 2);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, NULL), 0);
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);

	/* a newer caller in the middle of a request: fields after it still
	 * land where they belong */
	sample_request(&m, MDSP_OP_SYMLINK, 30, 5, 0);
	encode_ok(&m, &b);
	env[1] = REQ_CALLER_OFF;
	insert_tail(&b, REQ_CALLER_OFF + 6 + CALLER_LEN(5), 13, env, 2);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, NULL), 0);
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);

	/* newer dirents inside a readdir reply */
	sample_reply(&m, 1, 10, 0);
	encode_ok(&m, &b);
	{
		/* tid result flags has_dir inode dname has_target inode caps cap_seq count */
		size_t dname = 6 + 8 + 4 + 4 + 1 + 6 + INODE_BODY;
		size_t dlen = rd32le(b.data + MDSP_HDR_LEN + dname);
		size_t ent = dname + 4 + dlen + 1 + 6 + INODE_BODY + 4 + 8 + 4;
		size_t elen = rd32le(b.data + MDSP_HDR_LEN + ent + 2);

		env[1] = ent;
		insert_tail(&b, ent + 6 + elen, 21, env, 2);
	}
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, NULL), 0);
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
}
END_TEST

/*
 * An older peer's struct: version @ver, without the last @drop bytes of
 * ours (the fields added since).  It must decode, with those fields 0.
 */
static void as_older(struct mdsp_buf *b, uint8_t ver, size_t drop)
	__attribute__((unused));
/* SESSION's version-5 tail: u32 nlocks, the locks, store_addr */
#define ENVELOPE 6
#define LOCK_V1_LEN 36u
#define LOCK_V2_LEN (LOCK_V1_LEN + 4 + 8 + 8 + 8)
/* the version 8 tail (deleg_tid) */
#define V8_TAIL 8
/* the version 7 and 8 tails (reclaim_sid, reclaim_uuid) */
#define V7_TAIL (8 + 16 + V8_TAIL)
/* the version 6 and 7 tails (slow_ops, slow_op) of a session without slow operations */
#define V6_TAIL (4 + 4 + V7_TAIL)
/* the version 5 and 6 tails */
#define V5_TAIL(nlocks, addr) (4 + (size_t)(nlocks) * (ENVELOPE + LOCK_V2_LEN) + 4 + ((addr) ? strlen(addr) : 0) + V6_TAIL)
static void as_older(struct mdsp_buf *b, uint8_t ver, size_t drop)
{
	uint8_t *p = b->data + MDSP_HDR_LEN;

	ck_assert_uint_ge(b->len, MDSP_HDR_LEN + 6 + drop);
	b->len -= drop;
	p[0] = ver;
	wr32le(p + 2, rd32le(p + 2) - (uint32_t)drop);
	reframe(b->data, b->len - MDSP_HDR_LEN);
}

START_TEST(test_older_versions_decode)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;

	/* a version-1 request (before want_ino and umask) */
	sample_request(&m, MDSP_OP_CREATE, 12, 1, 0);
	ck_assert_uint_ne(m.request.want_ino, 0);
	encode_ok(&m, &b);
	as_older(&b, 1, 8 + 4);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, NULL), 0);
	ck_assert_uint_eq(d.request.want_ino, 0);
	ck_assert_uint_eq(d.request.umask, 0);
	m.request.want_ino = 0;
	m.request.umask = 0;
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);

	/* a version-2 request (before umask): umask decodes as 0 */
	sample_request(&m, MDSP_OP_MKDIR, 12, 1, 0);
	ck_assert_uint_ne(m.request.umask, 0);
	encode_ok(&m, &b);
	as_older(&b, 2, 4);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, NULL), 0);
	ck_assert_uint_eq(d.request.umask, 0);
	ck_assert_uint_eq(d.request.want_ino, m.request.want_ino);
	mdsp_msg_free(&d);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);

	/* a version-3 request that stops inside umask is malformed */
	sample_request(&m, MDSP_OP_MKDIR, 12, 1, 0);
	encode_ok(&m, &b);
	b.len -= 2;
	wr32le(b.data + MDSP_HDR_LEN + 2, rd32le(b.data + MDSP_HDR_LEN + 2) - 2);
	reframe(b.data, b.len - MDSP_HDR_LEN);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, NULL), -EBADMSG);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
}
END_TEST

/* An older peer's (version 2) SESSION has no max_file_size: it decodes as
 * 0 ("not said"), and every field before it as sent. */
START_TEST(test_session_v2_has_no_max_file_size)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	const char *why = NULL;

	sample_session(&m, MDSP_SESSION_OPEN, 0);
	encode_ok(&m, &b);
	/* without the trailing u64, the v4 metadata count and the v5 tail */
	as_older(&b, 2, 12 + V5_TAIL(0, m.session.store_addr));
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), 0);
	ck_assert_uint_eq(d.session.max_file_size, 0);
	m.session.max_file_size = 0;
	free(m.session.store_addr);
	m.session.store_addr = NULL;
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	/* a version-3 struct cut before its end is truncated, not "version 2" */
	b.data[MDSP_HDR_LEN] = 3;
	reframe(b.data, b.len - MDSP_HDR_LEN);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), -EBADMSG);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
}
END_TEST

/* An older peer's (version 3) SESSION has no client metadata: it decodes
 * with none; a metadata count over its bound is refused. */
START_TEST(test_session_v3_has_no_metadata)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	const char *why = NULL;
	uint32_t i;
	size_t tail = 4, v5;

	sample_session(&m, MDSP_SESSION_REQUEST_OPEN, 0);
	ck_assert_uint_eq(m.session.nmeta, 4);
	for (i = 0; i < m.session.nmeta; i++)
		tail += 8 + strlen(m.session.meta[i].key) + strlen(m.session.meta[i].val);
	v5 = V5_TAIL(0, m.session.store_addr);
	tail += v5;                       /* the version-5 fields follow the metadata */
	encode_ok(&m, &b);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), 0);
	ck_assert(msg_eq(&m, &d));
	ck_assert_str_eq(d.session.meta[0].key, "hostname");
	mdsp_msg_free(&d);
	/* the count says 17: over MDSP_META_MAX */
	wr32le(b.data + b.len - tail, MDSP_META_MAX + 1);
	reframe(b.data, b.len - MDSP_HDR_LEN);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), -EBADMSG);
	wr32le(b.data + b.len - tail, 4);
	as_older(&b, 3, tail);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), 0);
	ck_assert_uint_eq(d.session.nmeta, 0);
	for (i = 0; i < m.session.nmeta; i++) {
		free(m.session.meta[i].key);
		free(m.session.meta[i].val);
	}
	free(m.session.meta);
	m.session.meta = NULL;
	m.session.nmeta = 0;
	free(m.session.store_addr);
	m.session.store_addr = NULL;
	m.session.reclaim_sid = 0;
	memset(m.session.reclaim_uuid, 0, 16);
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
}
END_TEST

/* Cut @n bytes at payload offset @at (the tail of the structs whose
 * envelopes start at @env), set those structs to version @v, fix the header:
 * what an older peer, which never wrote the newer fields, sends. */
static void cut_tail(struct mdsp_buf *b, size_t at, size_t n, const size_t *env, int nenv, uint8_t v)
{
	uint8_t *p = b->data + MDSP_HDR_LEN;
	int i;

	memmove(p + at, p + at + n, b->len - MDSP_HDR_LEN - at - n);
	b->len -= n;
	for (i = 0; i < nenv; i++) {
		p[env[i]] = v;
		wr32le(p + env[i] + 2, rd32le(p + env[i] + 2) - (uint32_t)n);
	}
	reframe(b->data, b->len - MDSP_HDR_LEN);
}

static void no_extents(struct mdsp_reply *r)
{
	free(r->ext);
	r->ext = NULL;
	r->n_ext = 0;
}

/* Version-1 peers (before caps were tracked): the version-2 fields decode
 * as zeros / NULL. */
START_TEST(test_older_peers_decode)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	size_t env[2] = { 0, 0 };

	/* caps without the lease name */
	sample_caps(&m, MDSP_CAPS_ACK);
	encode_ok(&m, &b);
	cut_tail(&b, b.len - MDSP_HDR_LEN - 4, 4, env, 1, 1);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, NULL), 0);
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	mdsp_buf_free(&b);

	/* a version-3 reply: no extents (n_ext and two of 16 bytes) */
	sample_reply(&m, 0, 10, 0);
	encode_ok(&m, &b);
	cut_tail(&b, b.len - MDSP_HDR_LEN - 36, 36, env, 1, 3);
	no_extents(&m.reply);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, NULL), 0);
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);

	/* a version-2 reply: no delegated inos (and no empty extent list) */
	sample_reply(&m, 0, 10, 0);
	m.reply.deleg_start = 0;
	m.reply.deleg_len = 0;
	no_extents(&m.reply);
	encode_ok(&m, &b);
	cut_tail(&b, b.len - MDSP_HDR_LEN - 20, 20, env, 1, 2);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, NULL), 0);
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);

	/* a reply without dir caps, trace flags and lease */
	sample_reply(&m, 0, 10, 0);
	m.reply.dir_caps = 0;
	m.reply.dir_cap_seq = 0;
	m.reply.trace_flags = 0;
	m.reply.lease_seq = 0;
	m.reply.deleg_start = 0;
	m.reply.deleg_len = 0;
	no_extents(&m.reply);
	encode_ok(&m, &b);
	cut_tail(&b, b.len - MDSP_HDR_LEN - 44, 44, env, 1, 1);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, NULL), 0);
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);

	/* a reconnect whose cap entry has no lease name */
	sample_session(&m, MDSP_SESSION_RECONNECT, 1);
	encode_ok(&m, &b);
	{
		/* the one entry: envelope, ino, caps, wanted, then the
		 * version-2 NULL dname and seq (12 bytes); found by its ino,
		 * wherever the session's later fields put it */
		uint8_t *p = b.data + MDSP_HDR_LEN, ino[8];
		size_t entry = 0, at, plen = b.len - MDSP_HDR_LEN;

		for (int k = 0; k < 8; k++)
			ino[k] = (uint8_t)(m.session.caps[0].ino >> (8 * k));
		for (size_t o = 6; o + 8 <= plen; o++)
			if (!memcmp(p + o, ino, 8)) {
				entry = o - 6;
				break;
			}
		ck_assert_uint_gt(entry, 0);
		at = entry + 6 + 8 + 4 + 4;

		ck_assert_uint_eq(p[entry], 2);
		m.session.caps[0].seq = 0;
		memmove(p + at, p + at + 12, b.len - MDSP_HDR_LEN - at - 12);
		b.len -= 12;
		p[entry] = 1;
		wr32le(p + entry + 2, rd32le(p + entry + 2) - 12);
		wr32le(p + 2, rd32le(p + 2) - 12);   /* the session struct keeps its version */
		reframe(b.data, b.len - MDSP_HDR_LEN);
	}
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, NULL), 0);
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
}
END_TEST

/* A version-4 SESSION (before file locks and the store address): a
 * RECONNECT re-asserts no locks, and nothing else moves. */
START_TEST(test_session_v4_has_no_locks)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	const char *why = NULL;

	sample_session(&m, MDSP_SESSION_RECONNECT, 3);
	ck_assert_uint_eq(m.session.nlocks, 3);
	encode_ok(&m, &b);
	as_older(&b, 4, V5_TAIL(3, m.session.store_addr));
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), 0);
	ck_assert_uint_eq(d.session.nlocks, 0);
	ck_assert_ptr_null(d.session.locks);
	ck_assert_ptr_null(d.session.store_addr);
	ck_assert_uint_eq(d.session.max_file_size, m.session.max_file_size);
	ck_assert_uint_eq(d.session.ncaps, 3);
	mdsp_msg_free(&d);
	/* the same bytes claiming version 5 are truncated */
	b.data[MDSP_HDR_LEN] = 5;
	reframe(b.data, b.len - MDSP_HDR_LEN);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), -EBADMSG);
	mdsp_buf_free(&b);
	/* a lock count the bytes cannot hold is refused before allocating */
	encode_ok(&m, &b);
	ck_assert_uint_eq(rd32le(b.data + b.len - V5_TAIL(3, m.session.store_addr)), 3);
	wr32le(b.data + b.len - V5_TAIL(3, m.session.store_addr), 0x40000000u);
	reframe(b.data, b.len - MDSP_HDR_LEN);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), -EBADMSG);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
}
END_TEST

/* A version-5 SESSION (before the slow operations): a renewal says none,
 * and every field before decodes as sent. */
START_TEST(test_session_v5_has_no_slow_ops)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	const char *why = NULL;

	sample_session(&m, MDSP_SESSION_REQUEST_RENEW, 0);
	ck_assert_uint_eq(m.session.slow_ops, 3);
	encode_ok(&m, &b);
	as_older(&b, 5, 4 + 4 + strlen(m.session.slow_op) + V7_TAIL);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), 0);
	ck_assert_uint_eq(d.session.slow_ops, 0);
	ck_assert_ptr_null(d.session.slow_op);
	m.session.slow_ops = 0;
	free(m.session.slow_op);
	m.session.slow_op = NULL;
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	/* the same bytes claiming version 6 are truncated */
	b.data[MDSP_HDR_LEN] = 6;
	reframe(b.data, b.len - MDSP_HDR_LEN);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), -EBADMSG);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
	/* a description longer than the bound is refused by the encoder */
	sample_session(&m, MDSP_SESSION_REQUEST_RENEW, 0);
	free(m.session.slow_op);
	m.session.slow_op = sample_str(MDSP_SLOW_OP_MAX + 1, 1);
	mdsp_buf_init(&b);
	ck_assert_int_lt(mdsp_encode(&b, &m), 0);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
}
END_TEST

/* A version-7 SESSION (before deleg_tid): a RECONNECT bounds nothing (the
 * MDS keeps the stale delegations), every field before decodes as sent. */
START_TEST(test_session_v7_has_no_deleg_tid)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	const char *why = NULL;

	sample_session(&m, MDSP_SESSION_RECONNECT, 2);
	ck_assert_uint_ne(m.session.deleg_tid, 0);
	encode_ok(&m, &b);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), 0);
	ck_assert(msg_eq(&m, &d));
	ck_assert_uint_eq(d.session.deleg_tid, m.session.deleg_tid);
	mdsp_msg_free(&d);
	as_older(&b, 7, V8_TAIL);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), 0);
	ck_assert_uint_eq(d.session.deleg_tid, 0);
	m.session.deleg_tid = 0;
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	/* the same bytes claiming version 8 are truncated */
	b.data[MDSP_HDR_LEN] = 8;
	reframe(b.data, b.len - MDSP_HDR_LEN);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), -EBADMSG);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
}
END_TEST

/* A version-6 SESSION (before reclaims): an open reclaims nothing, every
 * field before decodes as sent, and an open cut inside the reclaim fields
 * is malformed. */
START_TEST(test_session_v6_has_no_reclaim)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	const char *why = NULL;

	sample_session(&m, MDSP_SESSION_REQUEST_OPEN, 0);
	ck_assert_uint_ne(m.session.reclaim_sid, 0);
	encode_ok(&m, &b);
	/* ours round-trips, the reclaim identity included */
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), 0);
	ck_assert(msg_eq(&m, &d));
	ck_assert_uint_eq(d.session.reclaim_sid, m.session.reclaim_sid);
	ck_assert_int_eq(memcmp(d.session.reclaim_uuid, m.session.reclaim_uuid, 16), 0);
	mdsp_msg_free(&d);
	as_older(&b, 6, V7_TAIL);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), 0);
	ck_assert_uint_eq(d.session.reclaim_sid, 0);
	m.session.reclaim_sid = 0;
	memset(m.session.reclaim_uuid, 0, 16);
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	/* the same bytes claiming version 7 are truncated */
	b.data[MDSP_HDR_LEN] = 7;
	reframe(b.data, b.len - MDSP_HDR_LEN);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), -EBADMSG);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
	/* an open that stops inside the uuid is malformed */
	sample_session(&m, MDSP_SESSION_REQUEST_OPEN, 0);
	encode_ok(&m, &b);
	b.len -= V8_TAIL + 5;
	wr32le(b.data + MDSP_HDR_LEN + 2, rd32le(b.data + MDSP_HDR_LEN + 2) - (V8_TAIL + 5));
	reframe(b.data, b.len - MDSP_HDR_LEN);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), -EBADMSG);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
}
END_TEST

/* A version-1 lock (before owner_ns, session_id, wait_tid, ino) nested in
 * a request: those decode as 0 and the request's fields after it (want_ino)
 * still land right. */
START_TEST(test_lock_v1_decodes)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	const char *why = NULL;
	uint8_t *p;
	size_t lock_off;

	sample_request(&m, MDSP_OP_SETLK, 0, 0, 0);
	encode_ok(&m, &b);
	p = b.data + MDSP_HDR_LEN;
	/* the lock struct is the last one, before want_ino (8 bytes) and umask (4) */
	lock_off = b.len - MDSP_HDR_LEN - 12 - (ENVELOPE + LOCK_V2_LEN);
	ck_assert_uint_eq(p[lock_off], 2);
	ck_assert_uint_eq(rd32le(p + lock_off + 2), LOCK_V2_LEN);
	/* cut the v2 fields out of the lock and say version 1 */
	memmove(p + lock_off + ENVELOPE + LOCK_V1_LEN, p + lock_off + ENVELOPE + LOCK_V2_LEN, 12);
	b.len -= LOCK_V2_LEN - LOCK_V1_LEN;
	p[lock_off] = 1;
	wr32le(p + lock_off + 2, LOCK_V1_LEN);
	wr32le(p + 2, rd32le(p + 2) - (LOCK_V2_LEN - LOCK_V1_LEN));
	reframe(b.data, b.len - MDSP_HDR_LEN);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), 0);
	ck_assert_uint_eq(d.request.lock.owner_ns, 0);
	ck_assert_uint_eq(d.request.lock.session_id, 0);
	ck_assert_uint_eq(d.request.lock.wait_tid, 0);
	ck_assert_uint_eq(d.request.lock.ino, 0);
	ck_assert_uint_eq(d.request.lock.owner, m.request.lock.owner);
	ck_assert_uint_eq(d.request.lock.pid, m.request.lock.pid);
	ck_assert_uint_eq(d.request.want_ino, m.request.want_ino);
	mdsp_msg_free(&d);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
}
END_TEST

START_TEST(test_newer_compat_is_rejected)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	const char *why;

	sample_request(&m, MDSP_OP_MKDIR, 8, 2, 0);
	encode_ok(&m, &b);
	b.data[MDSP_HDR_LEN + 1] = 4;           /* top-level compat (requests are version 3) */
	reframe(b.data, b.len - MDSP_HDR_LEN);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), -EBADMSG);
	ck_assert_str_eq(why, "struct needs a newer decoder (compat)");
	b.data[MDSP_HDR_LEN + 1] = 1;
	b.data[MDSP_HDR_LEN + REQ_CALLER_OFF + 1] = 2;  /* nested compat */
	reframe(b.data, b.len - MDSP_HDR_LEN);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), -EBADMSG);
	ck_assert_str_eq(why, "struct needs a newer decoder (compat)");
	/* a newer version with compat 1 is fine */
	b.data[MDSP_HDR_LEN + REQ_CALLER_OFF + 1] = 1;
	b.data[MDSP_HDR_LEN + REQ_CALLER_OFF] = 2;
	b.data[MDSP_HDR_LEN] = 3;
	reframe(b.data, b.len - MDSP_HDR_LEN);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), 0);
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	/* version 0, or below compat, is malformed */
	b.data[MDSP_HDR_LEN] = 0;
	reframe(b.data, b.len - MDSP_HDR_LEN);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), -EBADMSG);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
}
END_TEST

/* ---- decoder bounds ----------------------------------------------------- */

/* Patch a u32 at payload offset @off, fix the header, decode: must fail
 * with @why. */
static void expect_bad(struct mdsp_buf *b, size_t off, uint32_t v, const char *want)
{
	struct mdsp_msg d;
	const char *why = NULL;
	uint32_t old = rd32le(b->data + MDSP_HDR_LEN + off);

	wr32le(b->data + MDSP_HDR_LEN + off, v);
	reframe(b->data, b->len - MDSP_HDR_LEN);
	ck_assert_int_eq(mdsp_decode_frame(b->data, b->len, &d, &why), -EBADMSG);
	ck_assert_msg(why && strcmp(why, want) == 0, "want \"%s\", got \"%s\"", want, why);
	wr32le(b->data + MDSP_HDR_LEN + off, old);
	reframe(b->data, b->len - MDSP_HDR_LEN);
}

/*
 * CAPS v3 extents from a peer: a count over MDSP_FLUSH_EXT_MAX, extents
 * that overlap or are not on MDSP_EXT_ALIGN are refused (the MDS would
 * count them into st_blocks), the well-formed ones decode.
 */
START_TEST(test_caps_extents_bounds)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	/* envelope, op ino caps wanted seq flush_tid dirty, inode, NULL dname, has_ext */
	size_t add_off = 6 + 4 + 8 + 4 + 4 + 8 + 8 + 4 + 6 + INODE_BODY + 4 + 1;
	size_t rm_off = add_off + 4 + 2 * 16;

	sample_caps(&m, MDSP_CAPS_FLUSH);
	encode_ok(&m, &b);
	ck_assert_uint_eq(rd32le(b.data + MDSP_HDR_LEN + add_off), 2);
	ck_assert_uint_eq(rd32le(b.data + MDSP_HDR_LEN + rm_off), 1);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, NULL), 0);
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	expect_bad(&b, add_off, MDSP_FLUSH_EXT_MAX + 1, "count over its bound");
	expect_bad(&b, rm_off, 0xffffffff, "count over its bound");
	/* the first added extent moved onto the second: they overlap */
	expect_bad(&b, add_off + 4, 1u << 20, "extents not sorted, disjoint and aligned");
	/* the removed one not on a block boundary, or empty */
	expect_bad(&b, rm_off + 4, 65536 + 512, "extents not sorted, disjoint and aligned");
	expect_bad(&b, rm_off + 4 + 8, 0, "extents not sorted, disjoint and aligned");
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
}
END_TEST

/*
 * REPLY v4 extents (EXTENTS, lseek's SEEK_DATA/SEEK_HOLE): a full set of
 * MDSP_INODE_EXT_MAX goes through, one more is refused by the encoder and
 * by the decoder (a count over its bound); extents that overlap or are not
 * on MDSP_EXT_ALIGN are refused (a client would answer data as a hole).
 */
START_TEST(test_reply_extents_bounds)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	size_t n_off;

	sample_reply(&m, 0, 10, 0);
	no_extents(&m.reply);
	m.reply.ext = calloc(MDSP_INODE_EXT_MAX + 1, sizeof(*m.reply.ext));
	for (uint32_t i = 0; i <= MDSP_INODE_EXT_MAX; i++)
		m.reply.ext[i] = (struct mdsp_extent){ (uint64_t)i * 3 * MDSP_EXT_ALIGN, MDSP_EXT_ALIGN };
	m.reply.n_ext = MDSP_INODE_EXT_MAX + 1;
	mdsp_buf_init(&b);
	ck_assert_int_eq(mdsp_encode(&b, &m), -EINVAL);
	mdsp_buf_free(&b);
	m.reply.n_ext = MDSP_INODE_EXT_MAX;
	roundtrip(&m);
	m.reply.n_ext = 2;
	encode_ok(&m, &b);
	n_off = b.len - MDSP_HDR_LEN - 4 - 2 * 16;   /* the tail: count, two extents */
	ck_assert_uint_eq(rd32le(b.data + MDSP_HDR_LEN + n_off), 2);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, NULL), 0);
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	expect_bad(&b, n_off, MDSP_INODE_EXT_MAX + 1, "count over its bound");
	/* the second extent moved onto the first: they overlap */
	expect_bad(&b, n_off + 4 + 16, 0, "extents not sorted, disjoint and aligned");
	/* the first one's length not a multiple of the alignment */
	expect_bad(&b, n_off + 4 + 8, 512, "extents not sorted, disjoint and aligned");
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
}
END_TEST

START_TEST(test_decoder_bounds)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	size_t name_off = REQ_CALLER_OFF + 6 + CALLER_LEN(0) + 8;
	size_t groups_off = REQ_CALLER_OFF + 6 + 8;

	sample_request(&m, MDSP_OP_LOOKUP, MDSP_NAME_MAX, 0, 0);
	encode_ok(&m, &b);
	ck_assert_uint_eq(rd32le(b.data + MDSP_HDR_LEN + name_off), MDSP_NAME_MAX);
	expect_bad(&b, name_off, MDSP_NAME_MAX + 1, "string over its bound");
	expect_bad(&b, name_off, 0xfffffffe, "string over its bound");
	expect_bad(&b, groups_off, MDSP_MAX_GROUPS + 1, "count over its bound");
	/* a NUL inside a name */
	b.data[MDSP_HDR_LEN + name_off + 4 + 100] = 0;
	reframe(b.data, b.len - MDSP_HDR_LEN);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, NULL), -EBADMSG);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);

	/* the readdir count: over the bound, and over what the bytes can hold
	 * (refused before the array is allocated) */
	memset(&m, 0, sizeof(m));
	m.type = MDSP_MSG_REPLY;
	encode_ok(&m, &b);
	{
		size_t count_off = 6 + 8 + 4 + 4 + 1 + 4 + 1 + 4 + 8;

		ck_assert_uint_eq(rd32le(b.data + MDSP_HDR_LEN + count_off), 0);
		expect_bad(&b, count_off, MDSP_READDIR_MAX + 1, "count over its bound");
		expect_bad(&b, count_off, MDSP_READDIR_MAX, "count larger than the message");
		/* two: the empty reply's tail (lock v2, statfs, the caps
		 * fields) is longer than one minimal entry */
		expect_bad(&b, count_off, 2, "count larger than the message");
		/* a bool that is neither 0 nor 1 */
		b.data[MDSP_HDR_LEN + 6 + 8 + 4 + 4] = 2;
		reframe(b.data, b.len - MDSP_HDR_LEN);
		ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, NULL), -EBADMSG);
	}
	mdsp_buf_free(&b);

	/* reconnect caps: a huge claimed count allocates nothing */
	sample_session(&m, MDSP_SESSION_RECONNECT, 0);
	free(m.session.client_name);
	free(m.session.reason);
	m.session.client_name = m.session.reason = NULL;
	encode_ok(&m, &b);
	expect_bad(&b, 6 + 4 + 8 + 8 + 4 + 16 + 4 + 4 + 4 + 8, 0xffffffff,
		   "count larger than the message");
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);

	/* a string that claims more than is there; trailing bytes */
	sample_command(&m, 0);
	encode_ok(&m, &b);
	expect_bad(&b, 6 + 8, 1000, "truncated string");
	expect_bad(&b, 2, rd32le(b.data + MDSP_HDR_LEN + 2) + 1, "struct length past the end");
	ck_assert(b.len < b.cap || (b.data = realloc(b.data, b.cap = b.len + 1)));
	b.data[b.len++] = 0;
	reframe(b.data, b.len - MDSP_HDR_LEN);
	{
		const char *why;

		ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), -EBADMSG);
		ck_assert_str_eq(why, "trailing bytes after the payload");
	}
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
}
END_TEST

START_TEST(test_encoder_bounds)
{
	struct mdsp_msg m;
	struct mdsp_buf b;
	size_t before;

	mdsp_buf_init(&b);
	sample_caps(&m, MDSP_CAPS_GRANT);
	ck_assert_int_eq(mdsp_encode(&b, &m), 0);
	before = b.len;

	sample_request(&m, MDSP_OP_CREATE, MDSP_NAME_MAX + 1, 0, 0);
	ck_assert_int_eq(mdsp_encode(&b, &m), -EINVAL);
	mdsp_msg_free(&m);
	sample_request(&m, MDSP_OP_CREATE, 10, MDSP_MAX_GROUPS, 0);
	m.request.caller.ngroups = MDSP_MAX_GROUPS + 1;
	ck_assert_int_eq(mdsp_encode(&b, &m), -EINVAL);
	mdsp_msg_free(&m);
	sample_request(&m, MDSP_OP_SETXATTR, 10, 0, MDSP_XATTR_SIZE_MAX + 1);
	ck_assert_int_eq(mdsp_encode(&b, &m), -EINVAL);
	free(m.request.data);
	m.request.data = NULL;
	m.request.data_len = 1;          /* a length without data */
	ck_assert_int_eq(mdsp_encode(&b, &m), -EINVAL);
	mdsp_msg_free(&m);
	sample_reply(&m, 2, 10, 0);
	m.reply.nentries = MDSP_READDIR_MAX + 1;
	ck_assert_int_eq(mdsp_encode(&b, &m), -EINVAL);
	m.reply.nentries = 2;
	free(m.reply.entries[1].name);
	m.reply.entries[1].name = sample_str(MDSP_NAME_MAX + 1, 0);
	ck_assert_int_eq(mdsp_encode(&b, &m), -EINVAL);
	mdsp_msg_free(&m);
	sample_session(&m, MDSP_SESSION_REQUEST_OPEN, 0);
	free(m.session.client_name);
	m.session.client_name = sample_str(MDSP_CLIENT_NAME_MAX + 1, 0);
	ck_assert_int_eq(mdsp_encode(&b, &m), -EINVAL);
	mdsp_msg_free(&m);
	sample_command(&m, MDSP_JSON_MAX + 1);
	ck_assert_int_eq(mdsp_encode(&b, &m), -EINVAL);
	mdsp_msg_free(&m);

	/* a payload over MDSP_MAX_PAYLOAD */
	sample_session(&m, MDSP_SESSION_RECONNECT, MDSP_MAX_PAYLOAD / 34 + 1);
	ck_assert_int_eq(mdsp_encode(&b, &m), -E2BIG);
	mdsp_msg_free(&m);

	/* a failed encode leaves the buffer as it was */
	ck_assert_uint_eq(b.len, before);
	ck_assert(!b.oom);
	mdsp_buf_free(&b);
}
END_TEST

/* ---- names ---------------------------------------------------------------- */

/*
 * The setattr rules both sides decide by (perm.c): the cases where Linux
 * says no, and what a change leaves (setgid stripped, setuid/setgid cleared
 * by a chown, ctime and change moved, *_NOW at the given time).
 */
START_TEST(test_setattr_rules)
{
	const struct mdsp_inode f = { .ino = 5, .mode = S_IFREG | 06755, .uid = 1000, .gid = 1000, .change = 3 };
	const struct mdsp_caller owner = { .uid = 1000, .gid = 1000 };
	const struct mdsp_caller other = { .uid = 1001, .gid = 1001 };
	const struct mdsp_caller member = { .uid = 1001, .gid = 1001, .ngroups = 1, .groups = { 1000 } };
	const struct mdsp_caller root = { 0 };
	struct mdsp_inode a = { .mode = 0644, .uid = 1000, .gid = 0 }, in;
	struct mdsp_time now = { .sec = 77, .nsec = 5 };
	uint32_t kill = 0;

	/* chmod: the owner or root */
	ck_assert_int_eq(mdsp_setattr_check(&f, &owner, MDSP_SETATTR_MODE, &a, 1 << 20, &kill), 0);
	ck_assert_int_eq(mdsp_setattr_check(&f, &other, MDSP_SETATTR_MODE, &a, 1 << 20, &kill), -EPERM);
	ck_assert_int_eq(mdsp_setattr_check(&f, &root, MDSP_SETATTR_MODE, &a, 1 << 20, &kill), 0);
	/* chown to a group the owner is not in: EPERM; root may, and setuid/setgid go */
	ck_assert_int_eq(mdsp_setattr_check(&f, &owner, MDSP_SETATTR_GID | MDSP_SETATTR_CHOWN, &a, 1 << 20, &kill),
			 -EPERM);
	ck_assert_int_eq(mdsp_setattr_check(&f, &root, MDSP_SETATTR_GID | MDSP_SETATTR_CHOWN, &a, 1 << 20, &kill), 0);
	ck_assert_uint_eq(kill, S_ISUID | S_ISGID);
	in = f;
	mdsp_setattr_apply(&in, &root, MDSP_SETATTR_GID | MDSP_SETATTR_CHOWN, &a, kill, now);
	ck_assert_uint_eq(in.mode, S_IFREG | 0755);
	ck_assert_uint_eq(in.gid, 0);
	ck_assert_int_eq(in.ctime.sec, 77);
	ck_assert_uint_eq(in.change, 4);
	/* times: explicit ones the owner's (EPERM), both "now" also a writer's (EACCES otherwise) */
	ck_assert_int_eq(mdsp_setattr_check(&f, &member, MDSP_SETATTR_MTIME, &a, 1 << 20, &kill), -EPERM);
	ck_assert_int_eq(mdsp_setattr_check(&f, &other, MDSP_SETATTR_ATIME_NOW | MDSP_SETATTR_MTIME_NOW, &a, 1 << 20,
					    &kill), -EACCES);
	in = f;
	in.mode = S_IFREG | 0775;
	ck_assert_int_eq(mdsp_setattr_check(&in, &member, MDSP_SETATTR_ATIME_NOW | MDSP_SETATTR_MTIME_NOW, &a,
					    1 << 20, &kill), 0);
	mdsp_setattr_apply(&in, &member, MDSP_SETATTR_ATIME_NOW | MDSP_SETATTR_MTIME_NOW, &a, kill, now);
	ck_assert(in.mtime.sec == 77 && in.mtime.nsec == 5 && in.atime.sec == 77);
	/* a chmod to setgid by an owner outside the group keeps the rest */
	in = f;
	in.gid = 2000;
	a.mode = 02750;
	ck_assert_int_eq(mdsp_setattr_check(&in, &owner, MDSP_SETATTR_MODE, &a, 1 << 20, &kill), 0);
	mdsp_setattr_apply(&in, &owner, MDSP_SETATTR_MODE, &a, kill, now);
	ck_assert_uint_eq(in.mode, S_IFREG | 0750);
	/* size: write permission, a regular file, the filesystem's limit */
	a.size = 10;
	ck_assert_int_eq(mdsp_setattr_check(&f, &other, MDSP_SETATTR_SIZE, &a, 1 << 20, &kill), -EACCES);
	ck_assert_int_eq(mdsp_setattr_check(&f, &owner, MDSP_SETATTR_SIZE, &a, 5, &kill), -EFBIG);
	in = f;
	in.mode = S_IFDIR | 0755;
	ck_assert_int_eq(mdsp_setattr_check(&in, &owner, MDSP_SETATTR_SIZE, &a, 1 << 20, &kill), -EISDIR);
}
END_TEST

static int acc(uint32_t mode, uint32_t uid, uint32_t gid, const struct mdsp_caller *c, int mask)
{
	struct mdsp_inode in = { .mode = mode, .uid = uid, .gid = gid };

	return mdsp_may_access(&in, c, mask);
}

static int sticky(uint32_t dir_mode, uint32_t dir_uid, uint32_t victim_uid, const struct mdsp_caller *c)
{
	struct mdsp_inode d = { .mode = dir_mode, .uid = dir_uid }, v = { .uid = victim_uid };

	return mdsp_sticky_ok(&d, &v, c);
}

/* the namespace's permission rules (perm.c), shared by the MDS and asyncunlink.c */
START_TEST(test_perm_rules)
{
	struct mdsp_caller root = { .uid = 0 }, u1 = { .uid = 1001, .gid = 1001 },
			   u2 = { .uid = 1002, .gid = 1002, .ngroups = 1, .groups = { 3000 } };

	/* owner, group (primary and supplementary), other */
	ck_assert_int_eq(acc(S_IFDIR | 0700, 1001, 1, &u1, MDSP_MAY_WRITE | MDSP_MAY_EXEC), 0);
	ck_assert_int_eq(acc(S_IFDIR | 0700, 1001, 1, &u2, MDSP_MAY_EXEC), -EACCES);
	ck_assert_int_eq(acc(S_IFDIR | 0070, 0, 3000, &u2, MDSP_MAY_WRITE | MDSP_MAY_EXEC), 0);
	ck_assert_int_eq(acc(S_IFDIR | 0070, 0, 3000, &u1, MDSP_MAY_EXEC), -EACCES);
	ck_assert_int_eq(acc(S_IFDIR | 0706, 1001, 0, &u2, MDSP_MAY_WRITE | MDSP_MAY_EXEC), -EACCES);
	ck_assert_int_eq(acc(S_IFDIR | 0707, 1001, 0, &u2, MDSP_MAY_WRITE | MDSP_MAY_EXEC), 0);
	/* the owner's bits decide for the owner, even when others may more */
	ck_assert_int_eq(acc(S_IFDIR | 0077, 1001, 1001, &u1, MDSP_MAY_EXEC), -EACCES);
	/* root: all but executing a file nobody may execute */
	ck_assert_int_eq(acc(S_IFDIR | 0000, 1, 1, &root, MDSP_MAY_WRITE | MDSP_MAY_EXEC), 0);
	ck_assert_int_eq(acc(S_IFREG | 0644, 1, 1, &root, MDSP_MAY_EXEC), -EACCES);
	ck_assert_int_eq(acc(S_IFREG | 0744, 1, 1, &root, MDSP_MAY_EXEC), 0);
	/* sticky: the victim's owner, the directory's owner, root */
	ck_assert_int_eq(sticky(S_IFDIR | 01777, 0, 1001, &u2), -EPERM);
	ck_assert_int_eq(sticky(S_IFDIR | 01777, 0, 1002, &u2), 0);
	ck_assert_int_eq(sticky(S_IFDIR | 01777, 1002, 1001, &u2), 0);
	ck_assert_int_eq(sticky(S_IFDIR | 01777, 0, 1001, &root), 0);
	ck_assert_int_eq(sticky(S_IFDIR | 0777, 0, 1001, &u2), 0);
	ck_assert(mdsp_in_group(&u2, 3000) && mdsp_in_group(&u2, 1002) && !mdsp_in_group(&u2, 1001));
}
END_TEST

START_TEST(test_names)
{
	uint32_t op, op2;

	ck_assert_str_eq(mdsp_op_name(MDSP_OP_LOOKUP), "lookup");
	ck_assert_str_eq(mdsp_op_name(MDSP_OP_LOOKUPPARENT), "lookupparent");
	for (op = 1; op < MDSP_OP_MAX; op++) {
		ck_assert_str_ne(mdsp_op_name(op), "unknown");
		for (op2 = 1; op2 < op; op2++)
			ck_assert_str_ne(mdsp_op_name(op), mdsp_op_name(op2));
	}
	ck_assert_str_eq(mdsp_op_name(0), "unknown");
	ck_assert_str_eq(mdsp_op_name(MDSP_OP_MAX), "unknown");
	ck_assert_str_eq(mdsp_op_name(UINT32_MAX), "unknown");
	ck_assert_str_eq(mdsp_msg_type_name(MDSP_MSG_COMMAND_REPLY), "command_reply");
	ck_assert_str_eq(mdsp_msg_type_name(MDSP_MSG_AUTH), "auth");
	ck_assert_str_eq(mdsp_msg_type_name(8), "unknown");
	ck_assert_str_eq(mdsp_auth_op_name(MDSP_AUTH_REJECT), "reject");
	ck_assert_str_eq(mdsp_auth_op_name(6), "unknown");
	ck_assert_str_eq(mdsp_session_op_name(MDSP_SESSION_RECONNECT), "reconnect");
	ck_assert_str_eq(mdsp_session_op_name(MDSP_SESSION_REJECT), "reject");
	ck_assert_str_eq(mdsp_session_op_name(MDSP_SESSION_CONFIG), "config");
	ck_assert_str_eq(mdsp_session_op_name(MDSP_SESSION_REQUEST_FLUSH_JOURNAL), "request_flush_journal");
	ck_assert_str_eq(mdsp_session_op_name(13), "unknown");
	for (op = 1; op < MDSP_CAPS_OP_MAX; op++)
		ck_assert_str_ne(mdsp_caps_op_name(op), "unknown");
	ck_assert_str_eq(mdsp_caps_op_name(MDSP_CAPS_LEASE_RELEASE), "lease_release");
	ck_assert_str_eq(mdsp_caps_op_name(MDSP_CAPS_OP_MAX), "unknown");
	{
		char cs[24];

		ck_assert_str_eq(mdsp_caps_str(MDSP_CAP_ALL, cs, sizeof(cs)), "pAsLsXsFscrwbDc");
		ck_assert_str_eq(mdsp_caps_str(MDSP_CAP_PIN | MDSP_CAP_FILE_RD, cs, sizeof(cs)), "pFr");
		ck_assert_str_eq(mdsp_caps_str(0, cs, sizeof(cs)), "-");
		ck_assert_str_eq(mdsp_caps_str(MDSP_CAP_ALL, cs, 4), "pAs");
	}

	ck_assert(mdsp_op_is_write(MDSP_OP_CREATE));
	ck_assert(mdsp_op_is_write(MDSP_OP_RENAME));
	ck_assert(mdsp_op_is_write(MDSP_OP_SETXATTR));
	ck_assert(mdsp_op_is_write(MDSP_OP_SETATTR));
	ck_assert(!mdsp_op_is_write(MDSP_OP_LOOKUP));
	ck_assert(!mdsp_op_is_write(MDSP_OP_READDIR));
	ck_assert(!mdsp_op_is_write(MDSP_OP_GETXATTR));
	ck_assert(!mdsp_op_is_write(0));
	ck_assert(!mdsp_op_is_write(MDSP_OP_MAX));
}
END_TEST


/* ---- authentication: HMAC, frame MACs, keyrings ----------------------------- */

START_TEST(test_hmac_known_answer)
{
	/* RFC 4231 test case 2 */
	static const uint8_t want[32] = {
		0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24, 0x26, 0x08, 0x95, 0x75, 0xc7,
		0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27, 0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43,
	};
	const void *parts[] = { "what do ya ", "want for nothing?" };
	const size_t lens[] = { 11, 17 };
	uint8_t out[32];

	ck_assert_int_eq(mdsp_hmac((const uint8_t *)"Jefe", 4, parts, lens, 2, out), 0);
	ck_assert(memcmp(out, want, 32) == 0);
	ck_assert(mdsp_mac_equal(out, want));
	out[31] ^= 1;
	ck_assert(!mdsp_mac_equal(out, want));
}
END_TEST

/* both frame MACs (_i: enum mdsp_mac_alg) */
START_TEST(test_frame_mac)
{
	enum mdsp_mac_alg alg = (enum mdsp_mac_alg)_i;
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	struct mdsp_hdr h;
	struct mdsp_mac *tx, *rx, *other, *otheralg;
	uint8_t key[MDSP_KEY_LEN], key2[MDSP_KEY_LEN], tag[MDSP_MAC_LEN], tag2[MDSP_MAC_LEN];
	uint64_t last = 4;
	const char *why;

	memset(key, 7, sizeof(key));
	memset(key2, 8, sizeof(key2));
	ck_assert_int_eq(mdsp_mac_new(&tx, alg, key), 0);
	ck_assert_int_eq(mdsp_mac_new(&rx, alg, key), 0);
	ck_assert_int_eq(mdsp_mac_new(&other, alg, key2), 0);
	ck_assert_int_eq(mdsp_mac_new(&otheralg, alg == MDSP_MAC_GMAC_AES256 ? MDSP_MAC_HMAC_SHA256
									      : MDSP_MAC_GMAC_AES256, key), 0);
	ck_assert_int_eq(mdsp_mac_new(&tx, (enum mdsp_mac_alg)7, key), -EINVAL);
	sample_caps(&m, MDSP_CAPS_FLUSH);
	encode_ok(&m, &b);
	ck_assert_int_eq(mdsp_frame_seal(b.data, b.len, 5, tx, tag), 0);
	/* the same key computes the same MAC again (the context is reused) */
	ck_assert_int_eq(mdsp_frame_seal(b.data, b.len, 5, tx, tag2), 0);
	ck_assert(memcmp(tag, tag2, sizeof(tag)) == 0);
	/* what tools re-MAC an altered frame with is the same */
	ck_assert_int_eq(mdsp_frame_mac(tx, b.data, b.data + MDSP_HDR_LEN, b.len - MDSP_HDR_LEN, tag2), 0);
	ck_assert(memcmp(tag, tag2, sizeof(tag)) == 0);
	if (alg == MDSP_MAC_GMAC_AES256) {
		/* a 16-byte tag and 16 zero bytes; another seq (the IV), another tag */
		static const uint8_t zero[16];

		ck_assert(memcmp(tag + 16, zero, 16) == 0);
		ck_assert(memcmp(tag, zero, 16) != 0);
		ck_assert_int_eq(mdsp_frame_seal(b.data, b.len, 6, tx, tag2), 0);
		ck_assert(memcmp(tag, tag2, 16) != 0);
		ck_assert_int_eq(mdsp_frame_seal(b.data, b.len, 5, tx, tag2), 0);
	}
	ck_assert_int_eq(mdsp_decode_hdr(b.data, &h, &why), 0);
	ck_assert(h.flags & MDSP_FRAME_MAC);
	ck_assert_uint_eq(h.seq, 5);
	/* the wrong key, a changed payload byte, a changed tag: refused */
	ck_assert_int_eq(mdsp_frame_verify(other, &h, b.data, b.data + MDSP_HDR_LEN, tag, &last, &why), -EBADMSG);
	ck_assert_str_eq(why, "bad frame MAC");
	/* the same key under the other algorithm: refused */
	ck_assert_int_eq(mdsp_frame_verify(otheralg, &h, b.data, b.data + MDSP_HDR_LEN, tag, &last, &why), -EBADMSG);
	/* any bit of the trailer counts, GMAC's zero half too */
	tag[MDSP_MAC_LEN - 1] ^= 0x80;
	ck_assert_int_eq(mdsp_frame_verify(rx, &h, b.data, b.data + MDSP_HDR_LEN, tag, &last, &why), -EBADMSG);
	tag[MDSP_MAC_LEN - 1] ^= 0x80;
	/* a header byte (the seq: GMAC's IV) changed: refused */
	b.data[12] ^= 1;
	ck_assert_int_eq(mdsp_decode_hdr(b.data, &h, &why), -EBADMSG);
	ck_assert_int_eq(mdsp_frame_verify(rx, &h, b.data, b.data + MDSP_HDR_LEN, tag, &last, &why), -EBADMSG);
	b.data[12] ^= 1;
	ck_assert_int_eq(mdsp_decode_hdr(b.data, &h, &why), 0);
	b.data[MDSP_HDR_LEN + 3] ^= 1;
	ck_assert_int_eq(mdsp_frame_verify(rx, &h, b.data, b.data + MDSP_HDR_LEN, tag, &last, &why), -EBADMSG);
	b.data[MDSP_HDR_LEN + 3] ^= 1;
	tag[0] ^= 1;
	ck_assert_int_eq(mdsp_frame_verify(rx, &h, b.data, b.data + MDSP_HDR_LEN, tag, &last, &why), -EBADMSG);
	tag[0] ^= 1;
	ck_assert_int_eq(mdsp_frame_verify(rx, &h, b.data, b.data + MDSP_HDR_LEN, NULL, &last, &why), -EBADMSG);
	ck_assert_uint_eq(last, 4);
	/* the right one passes once; the same frame again is a replay */
	ck_assert_int_eq(mdsp_frame_verify(rx, &h, b.data, b.data + MDSP_HDR_LEN, tag, &last, &why), 0);
	ck_assert_uint_eq(last, 5);
	ck_assert_int_eq(mdsp_frame_verify(rx, &h, b.data, b.data + MDSP_HDR_LEN, tag, &last, &why), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(why, "replayed"));
	/* a later frame that skips one: out of order */
	ck_assert_int_eq(mdsp_frame_seal(b.data, b.len, 7, tx, tag), 0);
	ck_assert_int_eq(mdsp_decode_hdr(b.data, &h, &why), 0);
	ck_assert_int_eq(mdsp_frame_verify(rx, &h, b.data, b.data + MDSP_HDR_LEN, tag, &last, &why), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(why, "out of order"));
	/* sealed without a key: no flag, and the frame decodes as before */
	ck_assert_int_eq(mdsp_frame_seal(b.data, b.len, 6, NULL, NULL), 0);
	ck_assert_int_eq(mdsp_decode_hdr(b.data, &h, &why), 0);
	ck_assert(!(h.flags & MDSP_FRAME_MAC));
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len, &d, &why), 0);
	ck_assert(msg_eq(&m, &d) || d.seq == 6);
	mdsp_msg_free(&d);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
	mdsp_mac_free(tx);
	mdsp_mac_free(rx);
	mdsp_mac_free(other);
	mdsp_mac_free(otheralg);
}
END_TEST

START_TEST(test_auth_derive_distinct)
{
	uint8_t k[MDSP_KEY_LEN], cn[MDSP_NONCE_LEN], sn[MDSP_NONCE_LEN], out[7][MDSP_MAC_LEN], o2[MDSP_MAC_LEN];
	int i, j;

	memset(k, 1, sizeof(k));
	memset(cn, 2, sizeof(cn));
	memset(sn, 3, sizeof(sn));
	for (i = 0; i < 7; i++)
		ck_assert_int_eq(mdsp_auth_derive(k, (enum mdsp_derive)i, "client.a", cn, sn, out[i]), 0);
	ck_assert_int_eq(mdsp_auth_derive(k, (enum mdsp_derive)7, "client.a", cn, sn, o2), -EINVAL);
	for (i = 0; i < 7; i++)
		for (j = 0; j < i; j++)
			ck_assert(memcmp(out[i], out[j], MDSP_MAC_LEN));
	/* another nonce, another name: another proof */
	sn[0] ^= 1;
	ck_assert_int_eq(mdsp_auth_derive(k, MDSP_DERIVE_CLIENT_PROOF, "client.a", cn, sn, o2), 0);
	ck_assert(memcmp(o2, out[0], MDSP_MAC_LEN));
	sn[0] ^= 1;
	ck_assert_int_eq(mdsp_auth_derive(k, MDSP_DERIVE_CLIENT_PROOF, "client.b", cn, sn, o2), 0);
	ck_assert(memcmp(o2, out[0], MDSP_MAC_LEN));
	ck_assert_int_eq(mdsp_reconnect_proof(k, 1, cn, sn, o2), 0);
	ck_assert_int_eq(mdsp_reconnect_proof(k, 2, cn, sn, out[0]), 0);
	ck_assert(memcmp(o2, out[0], MDSP_MAC_LEN));
}
END_TEST

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(test_keyring_files)
{
	char dir[] = "/tmp/test_keyringXXXXXX", path[256], err[512];
	struct mdsp_keyring kr = { 0 }, back;
	uint8_t a[MDSP_KEY_LEN], b[MDSP_KEY_LEN];
	struct stat st;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/keyring", dir);
	memset(a, 0xa5, sizeof(a));
	memset(b, 0x00, sizeof(b));
	ck_assert_int_eq(mdsp_keyring_add(&kr, "client.admin", a), 0);
	ck_assert_int_eq(mdsp_keyring_add(&kr, "client.b-1.x_y", b), 0);
	ck_assert_int_eq(mdsp_keyring_add(&kr, "mds.0", a), -EINVAL);
	ck_assert_int_eq(mdsp_keyring_add(&kr, "client.", a), -EINVAL);
	ck_assert_int_eq(mdsp_keyring_add(&kr, "client.a b", a), -EINVAL);
	ck_assert_int_eq(mdsp_keyring_save(path, &kr, err, sizeof(err)), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(mdsp_keyring_load(path, &back, err, sizeof(err)), 0);
	ck_assert_uint_eq(back.n, 2);
	mdsp_keyring_free(&back);
	/* what the daemons ask: nobody but the owner may access it */
	ck_assert_int_eq(mdsp_keyring_load_flags(path, MDSP_KEYRING_PRIVATE, &back, err, sizeof(err)), 0);
	ck_assert_uint_eq(back.n, 2);
	mdsp_keyring_free(&back);
	{
		static const mode_t open_modes[] = { 0644, 0640, 0604, 0620, 0602, 0610, 0601, 0660 };
		char want[300];
		size_t i;

		for (i = 0; i < sizeof(open_modes) / sizeof(open_modes[0]); i++) {
			ck_assert_int_eq(chmod(path, open_modes[i]), 0);
			ck_assert_int_eq(mdsp_keyring_load_flags(path, MDSP_KEYRING_PRIVATE, &back, err, sizeof(err)),
					 -EPERM);
			ck_assert_uint_eq(back.n, 0);
			snprintf(want, sizeof(want), "Permissions %04o for '%s' are too open", (unsigned)open_modes[i],
				 path);
			ck_assert_msg(strstr(err, want), "%s", err);
			snprintf(want, sizeof(want), "chmod 600 %s", path);
			ck_assert_msg(strstr(err, want), "%s", err);
			/* the parser alone does not judge the mode */
			ck_assert_int_eq(mdsp_keyring_load(path, &back, err, sizeof(err)), 0);
			mdsp_keyring_free(&back);
		}
		ck_assert_int_eq(chmod(path, 0400), 0);
		ck_assert_int_eq(mdsp_keyring_load_flags(path, MDSP_KEYRING_PRIVATE, &back, err, sizeof(err)), 0);
		mdsp_keyring_free(&back);
		ck_assert_int_eq(chmod(path, 0600), 0);
		ck_assert_int_eq(mdsp_keyring_load_flags(dir, MDSP_KEYRING_PRIVATE, &back, err, sizeof(err)),
				 -EINVAL);
		ck_assert_msg(strstr(err, "not a regular file"), "%s", err);
	}
	ck_assert_int_eq(mdsp_keyring_load(path, &back, err, sizeof(err)), 0);
	ck_assert(memcmp(mdsp_keyring_find(&back, "client.admin")->secret, a, 32) == 0);
	ck_assert(memcmp(mdsp_keyring_find(&back, "client.b-1.x_y")->secret, b, 32) == 0);
	ck_assert_ptr_null(mdsp_keyring_find(&back, "client.nobody"));
	ck_assert_int_eq(mdsp_keyring_remove(&back, "client.admin"), 0);
	ck_assert_int_eq(mdsp_keyring_remove(&back, "client.admin"), -ENOENT);
	ck_assert_uint_eq(back.n, 1);
	mdsp_keyring_free(&back);
	mdsp_keyring_free(&kr);

	/* Ceph-style extras are skipped; comments too */
	write_file(path, "# a comment\n[client.x]\n\tkey = AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
			 "\tcaps mds = \"allow *\"\n");
	ck_assert_int_eq(mdsp_keyring_load(path, &back, err, sizeof(err)), 0);
	ck_assert_uint_eq(back.n, 1);
	mdsp_keyring_free(&back);
	/* what is wrong is said, with the line */
	write_file(path, "[client.x]\n\tkey = not-base64\n");
	ck_assert_int_eq(mdsp_keyring_load(path, &back, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "line 2"));
	ck_assert_uint_eq(back.n, 0);
	write_file(path, "[client.x]\n");
	ck_assert_int_eq(mdsp_keyring_load(path, &back, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "has no key"));
	write_file(path, "[osd.1]\nkey = AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n");
	ck_assert_int_eq(mdsp_keyring_load(path, &back, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "not an entity name"));
	write_file(path, "key = AAAA\n");
	ck_assert_int_eq(mdsp_keyring_load(path, &back, err, sizeof(err)), -EINVAL);
	unlink(path);
	ck_assert_int_eq(mdsp_keyring_load(path, &back, err, sizeof(err)), -ENOENT);
	rmdir(dir);
}
END_TEST

/* A reply stored by an older MDS (frame version 1: a 28-byte header whose
 * one crc covers 24 header bytes and the payload) still decodes. */
START_TEST(test_stored_v1_frame)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	uint8_t *f;
	size_t plen;

	sample_reply(&m, 2, 8, 0);
	encode_ok(&m, &b);
	plen = b.len - MDSP_HDR_LEN;
	f = malloc(MDSP_HDR_LEN_V1 + plen);
	memcpy(f, b.data, 24);
	f[4] = 1;
	f[5] = 0;
	memcpy(f + MDSP_HDR_LEN_V1, b.data + MDSP_HDR_LEN, plen);
	wr32le(f + 24, crc32c(crc32c(0, f, 24), f + MDSP_HDR_LEN_V1, plen));
	ck_assert_int_eq(mdsp_decode_frame(f, MDSP_HDR_LEN_V1 + plen, &d, NULL), 0);
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	f[MDSP_HDR_LEN_V1 + 2] ^= 1;
	ck_assert_int_eq(mdsp_decode_frame(f, MDSP_HDR_LEN_V1 + plen, &d, NULL), -EBADMSG);
	free(f);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
}
END_TEST

/* A version-1 SESSION struct (no secret, no proof) decodes with both zero. */
START_TEST(test_session_v1_struct)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	uint8_t zero[MDSP_KEY_LEN] = { 0 };
	size_t plen;

	sample_session(&m, MDSP_SESSION_RECONNECT, 2);
	encode_ok(&m, &b);
	plen = b.len - MDSP_HDR_LEN;
	/* drop the 64 bytes of version 2 and say version 1 */
	b.data[MDSP_HDR_LEN] = 1;
	wr32le(b.data + MDSP_HDR_LEN + 2, (uint32_t)(plen - 6 - 64));
	reframe(b.data, plen - 64);
	ck_assert_int_eq(mdsp_decode_frame(b.data, b.len - 64, &d, NULL), 0);
	ck_assert_uint_eq(d.session.session_id, m.session.session_id);
	ck_assert_uint_eq(d.session.ncaps, 2);
	ck_assert(memcmp(d.session.proof, zero, MDSP_MAC_LEN) == 0);
	ck_assert(memcmp(d.session.secret, zero, MDSP_KEY_LEN) == 0);
	mdsp_msg_free(&d);
	mdsp_buf_free(&b);
	mdsp_msg_free(&m);
}
END_TEST

static Suite *proto_suite(void)
{
	Suite *s = suite_create("proto");
	TCase *tc;

	tc = tcase_create("auth");
	tcase_add_test(tc, test_hmac_known_answer);
	tcase_add_loop_test(tc, test_frame_mac, MDSP_MAC_HMAC_SHA256, MDSP_MAC_GMAC_AES256 + 1);
	tcase_add_test(tc, test_auth_derive_distinct);
	tcase_add_test(tc, test_keyring_files);
	tcase_add_test(tc, test_stored_v1_frame);
	tcase_add_test(tc, test_session_v1_struct);
	suite_add_tcase(s, tc);

	tc = tcase_create("roundtrip");
	tcase_add_test(tc, test_roundtrip_every_message);
	tcase_add_test(tc, test_roundtrip_at_the_bounds);
	tcase_add_test(tc, test_roundtrip_null_empty_and_absent);
	tcase_add_test(tc, test_several_frames_in_one_buffer);
	tcase_add_test(tc, test_inode_helpers);
	suite_add_tcase(s, tc);

	tc = tcase_create("corruption");
	tcase_add_test(tc, test_truncated_at_every_offset);
	tcase_add_test(tc, test_every_bit_flip_is_caught_by_the_crc);
	tcase_add_test(tc, test_bit_flips_past_the_crc);
	tcase_add_test(tc, test_crc_mismatch);
	suite_add_tcase(s, tc);

	tc = tcase_create("format");
	tcase_add_test(tc, test_header_checks);
	tcase_add_test(tc, test_unknown_type);
	tcase_add_test(tc, test_forward_compat_skips_unknown_tails);
	tcase_add_test(tc, test_older_versions_decode);
	tcase_add_test(tc, test_newer_compat_is_rejected);
	tcase_add_test(tc, test_session_v2_has_no_max_file_size);
	tcase_add_test(tc, test_session_v3_has_no_metadata);
	tcase_add_test(tc, test_older_peers_decode);
	tcase_add_test(tc, test_session_v4_has_no_locks);
	tcase_add_test(tc, test_session_v5_has_no_slow_ops);
	tcase_add_test(tc, test_session_v6_has_no_reclaim);
	tcase_add_test(tc, test_session_v7_has_no_deleg_tid);
	tcase_add_test(tc, test_lock_v1_decodes);
	tcase_add_test(tc, test_decoder_bounds);
	tcase_add_test(tc, test_caps_extents_bounds);
	tcase_add_test(tc, test_reply_extents_bounds);
	tcase_add_test(tc, test_encoder_bounds);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_setattr_rules);
	tcase_add_test(tc, test_perm_rules);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(proto_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
