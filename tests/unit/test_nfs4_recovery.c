/*
 * test_nfs4_recovery.c - the NFSv4 client record format and keys
 * (nfs_gw/nfs4/recovery.h): round trips, truncated and corrupted records,
 * a newer version's tail skipped, an incompatible one refused, and keys
 * of short and over-long client owners.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "nfs_gw/nfs4/recovery.h"

static void sample(struct nfs4_rec *r, uint32_t owner_len)
{
	memset(r, 0, sizeof(*r));
	r->clientid = 0x6b136d7400000007ull;
	r->boot = 0x6b136d74;
	r->minorversion = 1;
	memcpy(r->verifier, "verifier", NFS4_VERIFIER_SIZE);
	r->flavor = 1;
	r->uid = 1000;
	r->gid = 100;
	r->owner_len = owner_len;
	for (uint32_t i = 0; i < owner_len; i++)
		r->owner[i] = (uint8_t)(i * 7 + 1);
}

START_TEST(round_trip)
{
	static const uint32_t lens[] = { 1, 23, NFS4_OPAQUE_LIMIT };
	uint8_t buf[NFS4_REC_MAX];
	struct nfs4_rec a, b;

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t n;

		sample(&a, lens[i]);
		n = nfs4_rec_encode(&a, buf);
		ck_assert_uint_le(n, NFS4_REC_MAX);
		ck_assert_int_eq(nfs4_rec_decode(buf, n, &b), 0);
		ck_assert(a.clientid == b.clientid && a.boot == b.boot && a.minorversion == b.minorversion);
		ck_assert(!memcmp(a.verifier, b.verifier, NFS4_VERIFIER_SIZE));
		ck_assert(a.flavor == b.flavor && a.uid == b.uid && a.gid == b.gid);
		ck_assert_uint_eq(a.owner_len, b.owner_len);
		ck_assert(!memcmp(a.owner, b.owner, a.owner_len));
	}
}
END_TEST

START_TEST(truncated_and_corrupted)
{
	uint8_t buf[NFS4_REC_MAX];
	struct nfs4_rec a, b;
	size_t n;

	sample(&a, 40);
	n = nfs4_rec_encode(&a, buf);
	for (size_t k = 0; k < n; k++)
		ck_assert_int_eq(nfs4_rec_decode(buf, k, &b), -EINVAL);
	/* an owner length past the body */
	buf[4 + 36] = 0xff;
	ck_assert_int_eq(nfs4_rec_decode(buf, n, &b), -EINVAL);
	nfs4_rec_encode(&a, buf);
	/* an empty owner */
	memset(buf + 4 + 36, 0, 4);
	ck_assert_int_eq(nfs4_rec_decode(buf, n, &b), -EINVAL);
	/* a body length shorter than the fixed fields */
	nfs4_rec_encode(&a, buf);
	buf[2] = 0, buf[3] = 10;
	ck_assert_int_eq(nfs4_rec_decode(buf, n, &b), -EINVAL);
}
END_TEST

START_TEST(versions)
{
	uint8_t buf[NFS4_REC_MAX + 8];
	struct nfs4_rec a, b;
	size_t n, body;

	sample(&a, 12);
	n = nfs4_rec_encode(&a, buf);
	/* version 2, readable by 1, with 8 more bytes in its body: skipped */
	memset(buf + n, 0xee, 8);
	body = n - 4 + 8;
	buf[0] = 2, buf[2] = (uint8_t)(body >> 8), buf[3] = (uint8_t)body;
	ck_assert_int_eq(nfs4_rec_decode(buf, n + 8, &b), 0);
	ck_assert_uint_eq(b.owner_len, 12);
	ck_assert(b.clientid == a.clientid);
	/* one that version 1 cannot read */
	buf[1] = 2;
	ck_assert_int_eq(nfs4_rec_decode(buf, n + 8, &b), -EINVAL);
}
END_TEST

START_TEST(keys)
{
	uint8_t owner[NFS4_OPAQUE_LIMIT], other[NFS4_OPAQUE_LIMIT];
	char k1[NFS4_REC_KEY_MAX + 1], k2[NFS4_REC_KEY_MAX + 1];

	nfs4_rec_key((const uint8_t *)"Linux NFSv4.1 h\x01", 16, k1);
	ck_assert_str_eq(k1, "4c696e7578204e465376342e31206801");
	for (size_t i = 0; i < sizeof(owner); i++)
		owner[i] = other[i] = (uint8_t)i;
	other[sizeof(other) - 1] ^= 1;          /* differs only past the hex prefix */
	nfs4_rec_key(owner, sizeof(owner), k1);
	nfs4_rec_key(other, sizeof(other), k2);
	ck_assert_uint_le(strlen(k1), NFS4_REC_KEY_MAX);
	ck_assert_str_ne(k1, k2);
	ck_assert_ptr_nonnull(strchr(k1, '.'));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("nfs4_recovery");
	TCase *tc = tcase_create("format");

	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, truncated_and_corrupted);
	tcase_add_test(tc, versions);
	tcase_add_test(tc, keys);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
