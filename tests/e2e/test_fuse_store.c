/*
 * test_fuse_store.c - the embedded local store as users of FUSE mounts see
 * it: several client processes on one filesystem.
 *
 *   two_mounts   two loligo-fuse processes mount one filesystem on the local
 *                backend (they share its data store with the MDS): what one
 *                writes and closes the other reads, both ways; a file one
 *                deletes loses its data objects (the MDS purges them from the
 *                shared data store)
 *
 * Every case gets a fresh filesystem (temp dir, loligo-mds on an ephemeral
 * port) from an unchecked fixture, so teardown runs even when a case fails.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/e2e/test_fuse_harness.h"

#define MiB (1024 * 1024)

static struct lfs fs;

/* a failed check shows the daemons' logs */
#define EXPECT(cond, ...)                                  \
	do {                                               \
		if (!(cond)) {                             \
			lfs_dump_logs(&fs);                \
			ck_abort_msg(__VA_ARGS__);         \
		}                                          \
	} while (0)

static void setup_fs(void)
{
	if (lfs_init(&fs) != 0) {
		lfs_cleanup(&fs);
		fprintf(stderr, "e2e setup failed\n");
		exit(1);
	}
}

static void teardown(void)
{
	lfs_cleanup(&fs);
}

static const char *at(const char *mnt, const char *rel)
{
	static __thread char buf[4][PATH_MAX + 64];
	static __thread int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", mnt, rel);
	return buf[i];
}

/* Object files in the data store (DIR/store.data/objects). */
static int data_objects(void)
{
	char p[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(p, sizeof(p), "%s/store.data/objects", fs.dir);
	d = opendir(p);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

START_TEST(test_two_mounts)
{
	char name[32];

	EXPECT(lfs_mds_start(&fs) == 0 && lfs_mount(&fs, NULL) == 0 && lfs_mount2(&fs, NULL) == 0,
	       "cannot start loligo-mds and two loligo-fuse mounts");
	/* A writes and closes, B reads; then the other way round */
	EXPECT(lfs_write_file(at(fs.mnt, "from-a"), 5 * MiB + 123, 1) == 0, "A writes from-a");
	EXPECT(lfs_check_file(at(fs.mnt2, "from-a"), 5 * MiB + 123, 1) == 0, "B reads from-a");
	EXPECT(lfs_write_file(at(fs.mnt2, "from-b"), 3 * MiB, 2) == 0, "B writes from-b");
	EXPECT(lfs_check_file(at(fs.mnt, "from-b"), 3 * MiB, 2) == 0, "A reads from-b");
	/* both write, each reads the other's */
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "both-%d", i);
		EXPECT(lfs_write_file(at(i % 2 ? fs.mnt : fs.mnt2, name), MiB + i, 10 + i) == 0, "write %s", name);
	}
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "both-%d", i);
		EXPECT(lfs_check_file(at(i % 2 ? fs.mnt2 : fs.mnt, name), MiB + i, 10 + i) == 0, "read %s", name);
	}
	/* deleting frees the data: no object file of the deleted files is left */
	int before = data_objects();
	EXPECT(before > 0, "no object files in the data store after writing 6 files");
	EXPECT(unlink(at(fs.mnt2, "from-a")) == 0, "B unlinks from-a: %s", strerror(errno));
	EXPECT(unlink(at(fs.mnt, "from-b")) == 0, "A unlinks from-b: %s", strerror(errno));
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "both-%d", i);
		EXPECT(unlink(at(fs.mnt, name)) == 0, "unlink %s: %s", name, strerror(errno));
	}
	int left = -1;
	for (int i = 0; i < 500 && (left = data_objects()) != 0; i++)
		usleep(20000);
	EXPECT(left == 0, "%d object files left of %d after deleting every file", left, before);
	EXPECT(lfs_umount2(&fs) == 0, "the second mount exits 0 at unmount");
	EXPECT(lfs_umount(&fs) == 0, "the first mount exits 0 at unmount");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("fuse_store_e2e");
	TCase *tc;

	tc = tcase_create("two_mounts");
	tcase_add_unchecked_fixture(tc, setup_fs, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_two_mounts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
		fprintf(stderr, "test_fuse_store: needs root and /dev/fuse; skipped\n");
		return 77;
	}
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
