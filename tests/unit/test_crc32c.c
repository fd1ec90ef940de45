/* test_crc32c.c - known vectors, hardware vs table on random data, chaining. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"

/* RFC 3720 (iSCSI) B.4 vectors and the usual check value */
static void check_vectors(uint32_t (*f)(uint32_t, const void *, size_t))
{
	unsigned char buf[48];
	int i;

	ck_assert_uint_eq(f(0, "123456789", 9), 0xe3069283u);
	ck_assert_uint_eq(f(0, "", 0), 0);
	memset(buf, 0, 32);
	ck_assert_uint_eq(f(0, buf, 32), 0x8a9136aau);
	memset(buf, 0xff, 32);
	ck_assert_uint_eq(f(0, buf, 32), 0x62a8ab43u);
	for (i = 0; i < 32; i++)
		buf[i] = (unsigned char)i;
	ck_assert_uint_eq(f(0, buf, 32), 0x46dd794eu);
	for (i = 0; i < 32; i++)
		buf[i] = (unsigned char)(31 - i);
	ck_assert_uint_eq(f(0, buf, 32), 0x113fdb5cu);
	/* an iSCSI SCSI Read (10) command PDU */
	{
		static const unsigned char pdu[48] = {
			0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
			0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
			0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
			0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		};
		ck_assert_uint_eq(f(0, pdu, sizeof(pdu)), 0xd9963a56u);
	}
}

START_TEST(test_sw_vectors)
{
	check_vectors(crc32c_sw);
}
END_TEST

START_TEST(test_hw_vectors)
{
	if (!crc32c_hw_available())
		return;	/* nothing to compare on this CPU; the sw path is tested */
	check_vectors(crc32c_hw);
}
END_TEST

START_TEST(test_default_vectors)
{
	check_vectors(crc32c);
}
END_TEST

START_TEST(test_hw_vs_sw_random)
{
	unsigned char *buf = malloc(70000);
	unsigned int seed = 12345;
	int iter;

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < 70000; i++)
		buf[i] = (unsigned char)rand_r(&seed);
	for (iter = 0; iter < 2000; iter++) {
		/* every alignment and tail length, some long buffers */
		size_t off = (size_t)rand_r(&seed) % 64;
		size_t len = iter < 300 ? (size_t)iter : (size_t)rand_r(&seed) % 65536;
		uint32_t init = iter % 3 ? (uint32_t)rand_r(&seed) : 0;
		/* around the three-chain blocks of the hardware path (3 x 256, 3 x 8192) */
		static const size_t edges[] = { 767, 768, 769, 775, 776, 1536, 1543, 24575, 24576, 24577,
						24583, 25344, 25351, 49152, 49159, 65535 };

		if (iter >= 300 && iter < 300 + (int)(sizeof(edges) / sizeof(edges[0])))
			len = edges[iter - 300];
		uint32_t sw = crc32c_sw(init, buf + off, len);

		ck_assert_uint_eq(crc32c(init, buf + off, len), sw);
		if (crc32c_hw_available())
			ck_assert_uint_eq(crc32c_hw(init, buf + off, len), sw);
	}
	free(buf);
}
END_TEST

START_TEST(test_chaining)
{
	const char *s = "The quick brown fox jumps over the lazy dog";
	size_t len = strlen(s), cut;
	uint32_t whole = crc32c(0, s, len);

	ck_assert_uint_eq(whole, 0x22620404u);
	for (cut = 0; cut <= len; cut++) {
		ck_assert_uint_eq(crc32c(crc32c(0, s, cut), s + cut, len - cut), whole);
		ck_assert_uint_eq(crc32c_sw(crc32c_sw(0, s, cut), s + cut, len - cut), whole);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("crc32c");
	TCase *tc = tcase_create("crc32c");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_sw_vectors);
	tcase_add_test(tc, test_hw_vectors);
	tcase_add_test(tc, test_default_vectors);
	tcase_add_test(tc, test_hw_vs_sw_random);
	tcase_add_test(tc, test_chaining);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
