/*
 * test_slot_table.c - NFSv4.1 slot table (RFC 8881 2.10.6.1): new requests,
 * retries answered from the cache, the implied release of a cached reply
 * by the next seqid, RETRY_UNCACHED_REP, SEQ_MISORDERED, BADSLOT, DELAY,
 * false retries, and seqid wrap-around.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "nfs_gw/nfs4/nfs4_xdr.h"
#include "nfs_gw/nfs4/slot_table.h"

static struct slot_table t;

static void setup(void)
{
	ck_assert_int_eq(slot_table_init(&t, 4), 0);
}

static void teardown(void)
{
	slot_table_destroy(&t);
}

static int begin(uint32_t slot, uint32_t seq, bool cachethis, uint32_t opcnt, char *out)
{
	uint8_t *r;
	size_t len;
	int v = slot_table_begin(&t, slot, seq, cachethis, opcnt, &r, &len);

	if (v == SLOT_REPLAY) {
		ck_assert_ptr_nonnull(r);
		if (out) {
			memcpy(out, r, len);
			out[len] = 0;
		}
		free(r);
	} else {
		ck_assert_ptr_null(r);
	}
	return v;
}

START_TEST(first_use)
{
	/* a slot's first request carries seqid 1 */
	ck_assert_int_eq(begin(0, 0, true, 2, NULL), NFS4ERR_SEQ_MISORDERED);
	ck_assert_int_eq(begin(0, 2, true, 2, NULL), NFS4ERR_SEQ_MISORDERED);
	ck_assert_int_eq(begin(0, 1, true, 2, NULL), SLOT_NEW);
	ck_assert_int_eq(slot_table_end(&t, 0, (const uint8_t *)"r1", 2, true), 0);
}
END_TEST

START_TEST(badslot)
{
	ck_assert_int_eq(begin(4, 1, true, 2, NULL), NFS4ERR_BADSLOT);
	ck_assert_int_eq(begin(UINT32_MAX, 1, true, 2, NULL), NFS4ERR_BADSLOT);
	ck_assert_int_eq(begin(3, 1, true, 2, NULL), SLOT_NEW);
}
END_TEST

START_TEST(replay_and_implied_release)
{
	char out[32];

	ck_assert_int_eq(begin(1, 1, true, 3, NULL), SLOT_NEW);
	slot_table_end(&t, 1, (const uint8_t *)"reply-one", 9, true);
	ck_assert_uint_eq(slot_table_cached_bytes(&t), 9);
	/* the retry gets the very same bytes, as often as it comes */
	ck_assert_int_eq(begin(1, 1, true, 3, out), SLOT_REPLAY);
	ck_assert_str_eq(out, "reply-one");
	ck_assert_int_eq(begin(1, 1, true, 3, out), SLOT_REPLAY);
	ck_assert_str_eq(out, "reply-one");
	/* the next seqid acknowledges it: the cached reply is freed at once */
	ck_assert_int_eq(begin(1, 2, true, 1, NULL), SLOT_NEW);
	ck_assert_uint_eq(slot_table_cached_bytes(&t), 0);
	/* and the old seqid is now misordered, not a replay */
	ck_assert_int_eq(begin(1, 1, true, 3, NULL), NFS4ERR_SEQ_MISORDERED);
	slot_table_end(&t, 1, (const uint8_t *)"reply-two", 9, true);
	ck_assert_int_eq(begin(1, 2, true, 1, out), SLOT_REPLAY);
	ck_assert_str_eq(out, "reply-two");
	/* other slots are independent */
	ck_assert_int_eq(begin(2, 1, false, 1, NULL), SLOT_NEW);
}
END_TEST

START_TEST(in_progress)
{
	ck_assert_int_eq(begin(0, 1, true, 2, NULL), SLOT_NEW);
	/* retry of a request still running */
	ck_assert_int_eq(begin(0, 1, true, 2, NULL), NFS4ERR_DELAY);
	/* the client cannot have seen the reply: a new seqid is misordered */
	ck_assert_int_eq(begin(0, 2, true, 2, NULL), NFS4ERR_SEQ_MISORDERED);
	slot_table_end(&t, 0, (const uint8_t *)"x", 1, true);
	ck_assert_int_eq(begin(0, 2, true, 2, NULL), SLOT_NEW);
}
END_TEST

START_TEST(uncached)
{
	ck_assert_int_eq(begin(0, 1, false, 2, NULL), SLOT_NEW);
	slot_table_end(&t, 0, (const uint8_t *)"not kept", 8, false);
	ck_assert_uint_eq(slot_table_cached_bytes(&t), 0);
	ck_assert_int_eq(begin(0, 1, false, 2, NULL), SLOT_REPLAY_UNCACHED);
	ck_assert_int_eq(begin(0, 2, false, 2, NULL), SLOT_NEW);
}
END_TEST

START_TEST(false_retry)
{
	ck_assert_int_eq(begin(0, 1, true, 2, NULL), SLOT_NEW);
	slot_table_end(&t, 0, (const uint8_t *)"kept", 4, true);
	/* same slot and seqid but a different request */
	ck_assert_int_eq(begin(0, 1, true, 5, NULL), NFS4ERR_SEQ_FALSE_RETRY);
	ck_assert_int_eq(begin(0, 1, false, 2, NULL), NFS4ERR_SEQ_FALSE_RETRY);
	ck_assert_int_eq(begin(0, 1, true, 2, NULL), SLOT_REPLAY);
}
END_TEST

START_TEST(wraparound)
{
	uint32_t s;

	ck_assert_int_eq(begin(0, 1, true, 1, NULL), SLOT_NEW);
	slot_table_end(&t, 0, (const uint8_t *)"a", 1, true);
	/* drive the slot to the top of the sequence space */
	pthread_mutex_lock(&t.lock);
	t.slots[0].seqid = 0xfffffffeu;
	pthread_mutex_unlock(&t.lock);
	for (s = 0xffffffffu;; s++) {
		ck_assert_int_eq(begin(0, s, true, 1, NULL), SLOT_NEW);
		slot_table_end(&t, 0, (const uint8_t *)"b", 1, true);
		if (s == 1)
			break;
	}
	ck_assert_int_eq(begin(0, 1, true, 1, NULL), SLOT_REPLAY);
	ck_assert_int_eq(begin(0, 0xffffffffu, true, 1, NULL), NFS4ERR_SEQ_MISORDERED);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("slot_table");
	TCase *tc = tcase_create("slot_table");
	SRunner *sr;
	int nf;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, first_use);
	tcase_add_test(tc, badslot);
	tcase_add_test(tc, replay_and_implied_release);
	tcase_add_test(tc, in_progress);
	tcase_add_test(tc, uncached);
	tcase_add_test(tc, false_retry);
	tcase_add_test(tc, wraparound);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
