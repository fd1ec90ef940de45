/*
 * test_tmpdir.h - the per-suite temporary directory fixture shared by the
 * common/ unit tests.
 *
 * Define SUITE (a string) before including; this gives the file a
 * `static char dir[256]`, the fixture dir_setup()/dir_teardown() and
 * tmpdir_run(), which runs a test case inside it.  The directory is made
 * and removed in the parent, so a failing test leaves nothing behind.
 */
#ifndef LOLIGO_TEST_TMPDIR_H
#define LOLIGO_TEST_TMPDIR_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef SUITE
#error "define SUITE before including test_tmpdir.h"
#endif

static char dir[256];

static void dir_setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/loligo-test-%s-XXXXXX", SUITE);
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void dir_teardown(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

/*
 * tmpdir_run - run @tc (its tests and per-test fixture already added) as
 * suite @name, with the temporary dir made once around the whole case.
 * Return: EXIT_SUCCESS when every test passed, else EXIT_FAILURE.
 */
static int tmpdir_run(const char *name, TCase *tc)
{
	Suite *s = suite_create(name);
	SRunner *sr;
	int failed;

	tcase_add_unchecked_fixture(tc, dir_setup, dir_teardown);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
