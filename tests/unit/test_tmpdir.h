/*
 * test_tmpdir.h - the per-suite temporary directory fixture shared by the
 * common/ unit tests.
 *
 * Define SUITE (a string) before including; this gives the file a
 * `static char dir[256]` and dir_setup()/dir_teardown() to pass to
 * tcase_add_unchecked_fixture(). The directory is made and removed in the
 * parent, so a failing test leaves nothing behind.
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

#endif
