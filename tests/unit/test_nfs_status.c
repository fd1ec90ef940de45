/* test_nfs_status.c - nfs_gw/status.c: one errno table, NFSv3 and NFSv4 columns. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "nfs_gw/nfs3/nfs3_xdr.h"
#include "nfs_gw/nfs4/nfs4_xdr.h"
#include "nfs_gw/status.h"

START_TEST(test_same_error_both_versions)
{
	ck_assert_uint_eq(nfs3_errno(0), NFS3_OK);
	ck_assert_uint_eq(nfs4_errno_to_status(0), NFS4_OK);
	ck_assert_uint_eq(nfs3_errno(-ENOENT), NFS3ERR_NOENT);
	ck_assert_uint_eq(nfs4_errno_to_status(-ENOENT), NFS4ERR_NOENT);
	ck_assert_uint_eq(nfs3_errno(-EACCES), NFS3ERR_ACCES);
	ck_assert_uint_eq(nfs4_errno_to_status(-EACCES), NFS4ERR_ACCESS);
	ck_assert_uint_eq(nfs3_errno(-ERANGE), NFS3ERR_INVAL);
	ck_assert_uint_eq(nfs4_errno_to_status(-ERANGE), NFS4ERR_INVAL);
	ck_assert_uint_eq(nfs3_errno(-ENOSYS), NFS3ERR_NOTSUPP);
	ck_assert_uint_eq(nfs4_errno_to_status(-ENOSYS), NFS4ERR_NOTSUPP);
	/* a positive errno is taken as its negative */
	ck_assert_uint_eq(nfs3_errno(ESTALE), NFS3ERR_STALE);
	ck_assert_uint_eq(nfs4_errno_to_status(ESTALE), NFS4ERR_STALE);
}
END_TEST

START_TEST(test_transient_errors_retry)
{
	static const int transient[] = { EAGAIN, EBUSY, ETIMEDOUT, EINTR, ENOMEM, ENOTCONN };

	/* an MDS that is away (no session) or busy: the client retries, in both versions */
	for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++) {
		ck_assert_uint_eq(nfs3_errno(-transient[i]), NFS3ERR_JUKEBOX);
		ck_assert_uint_eq(nfs4_errno_to_status(-transient[i]), NFS4ERR_DELAY);
	}
}
END_TEST

START_TEST(test_per_version_exceptions)
{
	ck_assert_uint_eq(nfs3_errno(-ENODEV), NFS3ERR_NODEV);
	ck_assert_uint_eq(nfs4_errno_to_status(-ENODEV), NFS4ERR_IO);   /* no NODEV in NFSv4 */
	ck_assert_uint_eq(nfs3_errno(-ELOOP), NFS3ERR_IO);              /* no SYMLINK in NFSv3 */
	ck_assert_uint_eq(nfs4_errno_to_status(-ELOOP), NFS4ERR_SYMLINK);
	/* unknown: IO */
	ck_assert_uint_eq(nfs3_errno(-EPROTO), NFS3ERR_IO);
	ck_assert_uint_eq(nfs4_errno_to_status(-EPROTO), NFS4ERR_IO);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nfs_status");
	TCase *tc = tcase_create("nfs_status");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_same_error_both_versions);
	tcase_add_test(tc, test_transient_errors_retry);
	tcase_add_test(tc, test_per_version_exceptions);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
