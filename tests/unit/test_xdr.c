/* test_xdr.c - bounded XDR primitives, record marking and call headers. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nfs_gw/rpc/rpc.h"
#include "nfs_gw/rpc/xdr.h"

START_TEST(roundtrip)
{
	struct xdr_enc e;
	struct xdr_dec d;
	uint32_t u, n, bm[3] = { 0x1, 0, 0x80000000u };
	uint64_t q;
	bool b;
	const uint8_t *p;
	char s[16];
	struct xdr_bitmap xb;

	xdr_enc_init(&e, 4096);
	xdr_put_u32(&e, 0xdeadbeef);
	xdr_put_u64(&e, 0x0102030405060708ull);
	xdr_put_bool(&e, true);
	xdr_put_opaque(&e, "abcde", 5);
	xdr_put_string(&e, "hello");
	xdr_put_bitmap(&e, bm, 3);
	xdr_put_fixed(&e, "xyz", 3);
	ck_assert_int_eq(e.err, 0);
	ck_assert_uint_eq(e.len % 4, 0);

	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_int_eq(xdr_get_u32(&d, &u), 0);
	ck_assert_uint_eq(u, 0xdeadbeef);
	ck_assert_int_eq(xdr_get_u64(&d, &q), 0);
	ck_assert(q == 0x0102030405060708ull);
	ck_assert_int_eq(xdr_get_bool(&d, &b), 0);
	ck_assert(b);
	ck_assert_int_eq(xdr_get_opaque(&d, &p, &n, 16), 0);
	ck_assert_uint_eq(n, 5);
	ck_assert(memcmp(p, "abcde", 5) == 0);
	ck_assert_int_eq(xdr_get_string(&d, s, sizeof(s), 15), 0);
	ck_assert_str_eq(s, "hello");
	ck_assert_int_eq(xdr_get_bitmap(&d, &xb), 0);
	ck_assert_uint_eq(xb.nwords, 3);
	ck_assert_uint_eq(xb.w[0], 1);
	ck_assert_uint_eq(xb.w[2], 0x80000000u);
	ck_assert(!xb.extra);
	ck_assert_int_eq(xdr_get_fixed_ptr(&d, &p, 3), 0);
	ck_assert(memcmp(p, "xyz", 3) == 0);
	ck_assert_uint_eq(xdr_dec_left(&d), 0);
	ck_assert_int_eq(xdr_get_u32(&d, &u), -EBADMSG);
	xdr_enc_free(&e);
}
END_TEST

/* Every prefix of a valid encoding must fail cleanly, never read past the end. */
START_TEST(truncated)
{
	struct xdr_enc e;
	size_t cut;
	uint32_t bm[2] = { 7, 9 };

	xdr_enc_init(&e, 4096);
	xdr_put_u32(&e, 1);
	xdr_put_u64(&e, 2);
	xdr_put_opaque(&e, "abcdefg", 7);
	xdr_put_string(&e, "str");
	xdr_put_bitmap(&e, bm, 2);
	for (cut = 0; cut < e.len; cut++) {
		/* copy to an exact-size heap buffer so ASan sees any overread */
		uint8_t *buf = malloc(cut ? cut : 1);
		struct xdr_dec d;
		uint32_t u, n;
		uint64_t q;
		const uint8_t *p;
		char s[8];
		struct xdr_bitmap xb;

		memcpy(buf, e.buf, cut);
		xdr_dec_init(&d, buf, cut);
		xdr_get_u32(&d, &u);
		xdr_get_u64(&d, &q);
		xdr_get_opaque(&d, &p, &n, 64);
		xdr_get_string(&d, s, sizeof(s), 7);
		xdr_get_bitmap(&d, &xb);
		ck_assert_int_eq(d.err, -EBADMSG);
		free(buf);
	}
	xdr_enc_free(&e);
}
END_TEST

START_TEST(bounds)
{
	uint8_t buf[64];
	struct xdr_dec d;
	const uint8_t *p;
	uint32_t n;
	char s[8];
	struct xdr_bitmap xb;
	bool b;

	memset(buf, 0, sizeof(buf));
	/* opaque over its max */
	xdr_store_u32(buf, 9);
	xdr_dec_init(&d, buf, sizeof(buf));
	ck_assert_int_eq(xdr_get_opaque(&d, &p, &n, 8), -EBADMSG);
	/* a huge length must not wrap */
	xdr_store_u32(buf, 0xfffffffdu);
	xdr_dec_init(&d, buf, sizeof(buf));
	ck_assert_int_eq(xdr_get_opaque(&d, &p, &n, UINT32_MAX), -EBADMSG);
	/* string with an embedded NUL */
	xdr_store_u32(buf, 3);
	memcpy(buf + 4, "a\0b", 3);
	xdr_dec_init(&d, buf, sizeof(buf));
	ck_assert_int_eq(xdr_get_string(&d, s, sizeof(s), 7), -EBADMSG);
	/* string max must fit the buffer */
	xdr_dec_init(&d, buf, sizeof(buf));
	ck_assert_int_eq(xdr_get_string(&d, s, sizeof(s), 8), -EBADMSG);
	/* bitmap with too many words */
	xdr_store_u32(buf, XDR_BITMAP_MAX_WORDS + 1);
	xdr_dec_init(&d, buf, sizeof(buf));
	ck_assert_int_eq(xdr_get_bitmap(&d, &xb), -EBADMSG);
	/* bitmap words beyond what we know are flagged */
	memset(buf, 0, sizeof(buf));
	xdr_store_u32(buf, 5);
	xdr_store_u32(buf + 4 + 4 * 4, 1);
	xdr_dec_init(&d, buf, sizeof(buf));
	ck_assert_int_eq(xdr_get_bitmap(&d, &xb), 0);
	ck_assert(xb.extra);
	/* bool must be 0 or 1 */
	xdr_store_u32(buf, 2);
	xdr_dec_init(&d, buf, sizeof(buf));
	ck_assert_int_eq(xdr_get_bool(&d, &b), -EBADMSG);
	/* errors are sticky */
	ck_assert_int_eq(xdr_get_u32(&d, &n), -EBADMSG);
}
END_TEST

START_TEST(encoder_bound)
{
	struct xdr_enc e;
	size_t off;

	xdr_enc_init(&e, 16);
	ck_assert_int_eq(xdr_put_u64(&e, 1), 0);
	ck_assert_int_eq(xdr_put_u64(&e, 2), 0);
	ck_assert_int_eq(xdr_put_u32(&e, 3), -EMSGSIZE);
	ck_assert_int_eq(e.err, -EMSGSIZE);
	xdr_enc_truncate(&e, 8);
	ck_assert_int_eq(e.err, 0);
	off = e.len;
	ck_assert_int_eq(xdr_put_u32(&e, 0), 0);
	xdr_patch_u32(&e, off, 42);
	ck_assert_uint_eq(xdr_load_u32(e.buf + off), 42);
	ck_assert_int_eq(xdr_put_opaque(&e, "abcdefgh", 8), -EMSGSIZE);
	xdr_enc_free(&e);
}
END_TEST

START_TEST(record_marking)
{
	struct rpc_rm rm;
	uint8_t stream[64], *rec;
	size_t used, len, i, off;
	int r, records = 0;

	/* record "abcdefgh" in 3 fragments, then record "xy" in one */
	xdr_store_u32(stream, 3);
	memcpy(stream + 4, "abc", 3);
	xdr_store_u32(stream + 7, 0);                     /* empty fragment */
	xdr_store_u32(stream + 11, RPC_RM_LAST | 5);
	memcpy(stream + 15, "defgh", 5);
	xdr_store_u32(stream + 20, RPC_RM_LAST | 2);
	memcpy(stream + 24, "xy", 2);
	/* byte by byte */
	rpc_rm_init(&rm, 1024, 0);
	for (i = 0; i < 26; i++) {
		r = rpc_rm_feed(&rm, stream + i, 1, &used);
		ck_assert_int_ge(r, 0);
		ck_assert_uint_eq(used, 1);
		if (r == 1) {
			rec = rpc_rm_take(&rm, &len);
			if (records == 0)
				ck_assert(len == 8 && memcmp(rec, "abcdefgh", 8) == 0);
			else
				ck_assert(len == 2 && memcmp(rec, "xy", 2) == 0);
			free(rec);
			records++;
		}
	}
	ck_assert_int_eq(records, 2);
	rpc_rm_free(&rm);
	/* all at once: stops after each record */
	rpc_rm_init(&rm, 1024, 0);
	off = 0;
	records = 0;
	while (off < 26) {
		r = rpc_rm_feed(&rm, stream + off, 26 - off, &used);
		off += used;
		if (r == 1) {
			free(rpc_rm_take(&rm, &len));
			records++;
		}
	}
	ck_assert_int_eq(records, 2);
	ck_assert_uint_eq(off, 26);
	rpc_rm_free(&rm);
}
END_TEST

START_TEST(record_limit)
{
	struct rpc_rm rm;
	uint8_t s[16];
	size_t used;

	rpc_rm_init(&rm, 100, 0);
	xdr_store_u32(s, RPC_RM_LAST | 0x7fffffffu);
	ck_assert_int_eq(rpc_rm_feed(&rm, s, 4, &used), -EMSGSIZE);
	ck_assert_uint_eq(rm.bad_mark, 0x7fffffffu);
	rpc_rm_free(&rm);
	/* fragments that are each small but add up over the limit */
	rpc_rm_init(&rm, 100, 0);
	xdr_store_u32(s, 60);
	ck_assert_int_eq(rpc_rm_feed(&rm, s, 4, &used), 0);
	{
		uint8_t body[60] = { 0 };
		ck_assert_int_eq(rpc_rm_feed(&rm, body, 60, &used), 0);
	}
	xdr_store_u32(s, RPC_RM_LAST | 60);
	ck_assert_int_eq(rpc_rm_feed(&rm, s, 4, &used), -EMSGSIZE);
	rpc_rm_free(&rm);
}
END_TEST

/* A record of more than max_frags fragments is refused (-E2BIG): a flood
 * of empty fragments stops after max_frags marks; a record of exactly
 * max_frags fragments, and the next record, are fine. */
START_TEST(record_fragment_limit)
{
	struct rpc_rm rm;
	uint8_t s[4 * 8];
	size_t used, len;
	int i;

	rpc_rm_init(&rm, 1024, 4);
	for (i = 0; i < 3; i++)
		xdr_store_u32(s + 4 * i, 0);              /* 3 empty fragments */
	xdr_store_u32(s + 12, RPC_RM_LAST | 0);          /* and the last: 4 */
	ck_assert(rpc_rm_idle(&rm));
	ck_assert_int_eq(rpc_rm_feed(&rm, s, 2, &used), 0);
	ck_assert(!rpc_rm_idle(&rm));                    /* half a mark is a record begun */
	ck_assert_int_eq(rpc_rm_feed(&rm, s + 2, 14, &used), 1);
	free(rpc_rm_take(&rm, &len));
	ck_assert(rpc_rm_idle(&rm));
	ck_assert_uint_eq(len, 0);
	for (i = 0; i < 8; i++)
		xdr_store_u32(s + 4 * i, 0);              /* 8 empty, never the last */
	ck_assert_int_eq(rpc_rm_feed(&rm, s, sizeof(s), &used), -E2BIG);
	ck_assert_uint_eq(used, 4 * 4 + 4);              /* refused at the fifth mark */
	rpc_rm_free(&rm);
}
END_TEST

static size_t mk_call(uint8_t *buf, uint32_t rpcvers, uint32_t cflavor, uint32_t ngids, uint32_t vflavor)
{
	struct xdr_enc e, cred;
	size_t len;
	uint32_t i;

	xdr_enc_init(&cred, 1024);
	xdr_put_u32(&cred, 7);          /* stamp */
	xdr_put_string(&cred, "host");
	xdr_put_u32(&cred, 1000);
	xdr_put_u32(&cred, 100);
	xdr_put_u32(&cred, ngids);
	for (i = 0; i < ngids; i++)
		xdr_put_u32(&cred, 200 + i);
	xdr_enc_init(&e, 2048);
	xdr_put_u32(&e, 0x1234);
	xdr_put_u32(&e, RPC_CALL);
	xdr_put_u32(&e, rpcvers);
	xdr_put_u32(&e, 100003);
	xdr_put_u32(&e, 4);
	xdr_put_u32(&e, 1);
	xdr_put_u32(&e, cflavor);
	if (cflavor == RPC_AUTH_SYS)
		xdr_put_opaque(&e, cred.buf, (uint32_t)cred.len);
	else
		xdr_put_opaque(&e, NULL, 0);
	xdr_put_u32(&e, vflavor);
	xdr_put_opaque(&e, NULL, 0);
	xdr_put_u32(&e, 0xaabbccdd);    /* args */
	memcpy(buf, e.buf, e.len);
	len = e.len;
	xdr_enc_free(&e);
	xdr_enc_free(&cred);
	return len;
}

START_TEST(call_header)
{
	uint8_t buf[2048];
	struct rpc_call c;
	enum rpc_auth_stat why;
	size_t len, cut;

	len = mk_call(buf, 2, RPC_AUTH_SYS, 3, RPC_AUTH_NONE);
	ck_assert_int_eq(rpc_decode_call(buf, len, &c, &why), RPC_DEC_OK);
	ck_assert_uint_eq(c.xid, 0x1234);
	ck_assert_uint_eq(c.prog, 100003);
	ck_assert_uint_eq(c.cred.uid, 1000);
	ck_assert_uint_eq(c.cred.ngids, 3);
	ck_assert_uint_eq(c.cred.gids[2], 202);
	ck_assert_str_eq(c.cred.machine, "host");
	ck_assert_uint_eq(c.args_len, 4);

	len = mk_call(buf, 2, RPC_AUTH_NONE, 0, RPC_AUTH_NONE);
	ck_assert_int_eq(rpc_decode_call(buf, len, &c, &why), RPC_DEC_OK);
	ck_assert_uint_eq(c.cred.uid, 65534);

	len = mk_call(buf, 3, RPC_AUTH_SYS, 0, RPC_AUTH_NONE);
	ck_assert_int_eq(rpc_decode_call(buf, len, &c, &why), RPC_DEC_RPC_MISMATCH);
	ck_assert_uint_eq(c.xid, 0x1234);

	len = mk_call(buf, 2, RPC_AUTH_SYS, 17, RPC_AUTH_NONE);   /* gids<16> */
	ck_assert_int_eq(rpc_decode_call(buf, len, &c, &why), RPC_DEC_AUTH_ERROR);
	ck_assert_int_eq(why, RPC_AUTH_BADCRED);

	len = mk_call(buf, 2, RPC_AUTH_DH, 0, RPC_AUTH_NONE);
	ck_assert_int_eq(rpc_decode_call(buf, len, &c, &why), RPC_DEC_AUTH_ERROR);
	ck_assert_int_eq(why, RPC_AUTH_BADCRED);

	len = mk_call(buf, 2, RPC_AUTH_SYS, 0, RPC_AUTH_SYS);
	ck_assert_int_eq(rpc_decode_call(buf, len, &c, &why), RPC_DEC_AUTH_ERROR);
	ck_assert_int_eq(why, RPC_AUTH_BADVERF);

	/* a REPLY is not a call */
	len = mk_call(buf, 2, RPC_AUTH_NONE, 0, RPC_AUTH_NONE);
	xdr_store_u32(buf + 4, RPC_REPLY);
	ck_assert_int_eq(rpc_decode_call(buf, len, &c, &why), RPC_DEC_UNPARSABLE);

	/* every truncation: never OK before the args, never a crash */
	len = mk_call(buf, 2, RPC_AUTH_SYS, 16, RPC_AUTH_NONE);
	for (cut = 0; cut < len - 4; cut++) {
		uint8_t *t = malloc(cut ? cut : 1);
		memcpy(t, buf, cut);
		ck_assert_int_ne(rpc_decode_call(t, cut, &c, &why), RPC_DEC_OK);
		free(t);
	}
}
END_TEST

START_TEST(reply_headers)
{
	struct xdr_enc e;

	xdr_enc_init(&e, 1024);
	rpc_reply_begin(&e);
	rpc_reply_prog_mismatch(&e, 9, 4, 4);
	ck_assert_int_eq(rpc_reply_end(&e), 0);
	ck_assert_uint_eq(e.len, 4 + 4 * 8);
	ck_assert_uint_eq(xdr_load_u32(e.buf), RPC_RM_LAST | 32);
	ck_assert_uint_eq(xdr_load_u32(e.buf + 4), 9);
	ck_assert_uint_eq(xdr_load_u32(e.buf + 8), RPC_REPLY);
	ck_assert_uint_eq(xdr_load_u32(e.buf + 12), RPC_MSG_ACCEPTED);
	ck_assert_uint_eq(xdr_load_u32(e.buf + 24), RPC_PROG_MISMATCH);
	ck_assert_uint_eq(xdr_load_u32(e.buf + 28), 4);
	xdr_enc_free(&e);
	xdr_enc_init(&e, 1024);
	rpc_reply_begin(&e);
	rpc_reply_auth_error(&e, 9, RPC_AUTH_TOOWEAK);
	rpc_reply_end(&e);
	ck_assert_uint_eq(xdr_load_u32(e.buf + 12), RPC_MSG_DENIED);
	ck_assert_uint_eq(xdr_load_u32(e.buf + 16), RPC_AUTH_ERROR);
	ck_assert_uint_eq(xdr_load_u32(e.buf + 20), RPC_AUTH_TOOWEAK);
	xdr_enc_free(&e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xdr");
	TCase *tc = tcase_create("xdr");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, roundtrip);
	tcase_add_test(tc, truncated);
	tcase_add_test(tc, bounds);
	tcase_add_test(tc, encoder_bound);
	tcase_add_test(tc, record_marking);
	tcase_add_test(tc, record_limit);
	tcase_add_test(tc, record_fragment_limit);
	tcase_add_test(tc, call_header);
	tcase_add_test(tc, reply_headers);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
