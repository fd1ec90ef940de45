/*
 * test_mds_blob.c - the MDS's inode blob (mds/mdcache.c), the record of an
 * inode in a primary dentry, the inode table and the stray table: round
 * trips, the v1 blob an older MDS wrote, truncations.
 *
 * v2 added a flags word (linkable: an O_TMPFILE file made without O_EXCL,
 * which a LINK may still give its first name); a restarted MDS must read it
 * back from the stray table, and read the v1 blobs already on disk as "not
 * linkable".
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mds/codec.h"
#include "mds/mds.h"

static struct minode sample(bool linkable)
{
	struct minode in;

	memset(&in, 0, sizeof(in));
	in.a.ino = 0x1234;
	in.a.mode = S_IFREG | 0600;
	in.a.nlink = 0;
	in.a.size = 4097;
	in.a.uid = 65534;
	in.linkable = linkable;
	return in;
}

START_TEST(test_round_trip)
{
	for (int linkable = 0; linkable < 2; linkable++) {
		struct minode in = sample(linkable), out;
		struct mdsp_buf b;

		mdsp_buf_init(&b);
		ck_assert_int_eq(inode_blob_encode(&b, &in), 0);
		memset(&out, 0, sizeof(out));
		out.linkable = !linkable;   /* decoding replaces it */
		ck_assert_int_eq(inode_blob_decode(b.data, b.len, &out), 0);
		ck_assert_uint_eq(out.a.ino, 0x1234);
		ck_assert_uint_eq(out.a.size, 4097);
		ck_assert_uint_eq(out.a.nlink, 0);
		ck_assert_int_eq(out.linkable, linkable);
		ck_assert_ptr_null(out.symlink);
		ck_assert_ptr_null(out.xattrs);
		/* every truncation is refused, never read past */
		for (size_t len = 0; len < b.len; len++) {
			void *copy = malloc(len ? len : 1);

			memcpy(copy, b.data, len);
			ck_assert_int_eq(inode_blob_decode(copy, len, &out), -EBADMSG);
			free(copy);
		}
		mdsp_buf_free(&b);
	}
}
END_TEST

/* what an MDS before v2 wrote: no flags word; never linkable */
START_TEST(test_v1_blob)
{
	struct minode in = sample(true), out;
	struct mdsp_buf b;
	size_t off;

	mdsp_buf_init(&b);
	off = enc_begin(&b, 1, 1);
	mdsp_encode_inode(&b, &in.a);
	enc_str(&b, NULL);
	enc_u32(&b, 0);
	enc_end(&b, off);
	memset(&out, 0, sizeof(out));
	out.linkable = true;
	ck_assert_int_eq(inode_blob_decode(b.data, b.len, &out), 0);
	ck_assert_uint_eq(out.a.ino, 0x1234);
	ck_assert(!out.linkable);
	mdsp_buf_free(&b);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mds_blob");
	TCase *tc = tcase_create("blob");

	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_v1_blob);
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
