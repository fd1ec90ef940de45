/*
 * test_mds_store_damage.c - loligo-mds on a damaged local store: a
 * truncated data.mdb, a zeroed meta page (either), a store of another
 * format version, a missing objects/ directory, a missing or emptied
 * data.mdb next to object data, and damage in the data store rather than
 * the MDS's own.  Each must give one line on stderr that names the file and
 * says what to do, a plain non-zero exit (never a signal), and never the
 * advice to run --mkfs (which would make a new, empty filesystem over what
 * is left).  The same refusals at the store API (store_open() returns
 * -EUCLEAN, also with create set, as clients open the data store) are
 * checked from a forked child, so a signal is seen as one.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lmdb.h>

#include "store/store.h"
#include "tools/bench/mds_wire.h"

static char parent_dir[256];
static struct mdsproc P;
static struct mdsw W;

/* A filesystem with some files, cleanly stopped. */
static void setup(void)
{
	struct mdsp_inode in;
	char name[48];

	ck_assert_int_eq(mdsproc_init(&P, parent_dir), 0);
	ck_assert_int_eq(mdsproc_mkfs(&P), 0);
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_open(&W, "client.damage"), 0);
	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "file-with-a-longer-name-%d", i);
		ck_assert_int_eq(mdsw_create(&W, MDSP_ROOT_INO, name, 0644, O_CREAT, &in), 0);
	}
	mdsw_close(&W);
	ck_assert_int_eq(mdsproc_stop(&P, SIGTERM), 0);
}

static void teardown(void)
{
	mdsw_close(&W);
	mdsproc_cleanup(&P);
}

static const char *path(const char *rel)
{
	static char buf[4][600];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", P.dir, rel);
	return buf[i];
}

/* Start loligo-mds on the (damaged) store: one clear line, exit 1, no signal, no --mkfs. */
static void expect_refused(const char *file)
{
	const char *args[] = { NULL };
	char err[4096];
	int st = mdsproc_run(&P, args, err, sizeof(err));
	char *nl = strchr(err, '\n');

	ck_assert_msg(st > 0 && st < 128, "loligo-mds exited %d (a signal is 128+N): %s", st, err);
	ck_assert_msg(nl && nl[1] == 0, "not one line: '%s'", err);
	ck_assert_msg(strstr(err, file), "'%s' does not name %s", err, file);
	ck_assert_msg(!strstr(err, "--mkfs"), "'%s' advises --mkfs on a damaged store", err);
	ck_assert_msg(strstr(err, "restore") || strstr(err, "version"), "'%s' does not say what to do", err);
}

/* store_open() in a child, with and without create: -EUCLEAN, never a signal. */
static void expect_store_refused(const char *rel, const char *file)
{
	for (int create = 0; create < 2; create++) {
		int status;
		pid_t pid = fork();

		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			struct store_config sc = { .backend = "local", .local_path = path(rel), .create = create,
						   .local_map_size = 1ull << 30 };
			struct store *st;
			int r = store_open(&sc, &st);
			if (r == 0)
				_exit(10);
			if (r != -EUCLEAN)
				_exit(11);
			if (!strstr(store_open_error(), file))
				_exit(12);
			_exit(0);
		}
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFEXITED(status), "store_open(create=%d) died by signal %d", create,
			      WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		ck_assert_msg(WEXITSTATUS(status) == 0, "store_open(create=%d): %s", create,
			      WEXITSTATUS(status) == 10 ? "opened the damaged store" :
			      WEXITSTATUS(status) == 11 ? "not -EUCLEAN" : "the message does not name the file");
	}
}

static off_t file_size(const char *p)
{
	struct stat sb;
	ck_assert_int_eq(stat(p, &sb), 0);
	return sb.st_size;
}

static void zero_range(const char *p, off_t off, size_t len)
{
	char *z = calloc(1, len);
	int fd = open(p, O_WRONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, z, len, off), (ssize_t)len);
	close(fd);
	free(z);
}

START_TEST(test_truncated)
{
	const char *db = path("store/data.mdb");

	ck_assert_int_gt(file_size(db), 8 * 4096);
	ck_assert_int_eq(truncate(db, file_size(db) / 2 / 4096 * 4096), 0);
	expect_store_refused("store", "data.mdb");
	expect_refused("data.mdb");
}
END_TEST

START_TEST(test_zeroed_meta_page)
{
	/* the newer meta page may be either; both are refused */
	zero_range(path("store/data.mdb"), _i ? 4096 : 0, 4096);
	expect_store_refused("store", "data.mdb");
	expect_refused("data.mdb");
}
END_TEST

START_TEST(test_other_format)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	uint32_t v99 = 99;
	MDB_val k = { 6, "format" }, v = { 4, &v99 };

	ck_assert_int_eq(mdb_env_create(&env), 0);
	ck_assert_int_eq(mdb_env_set_maxdbs(env, 8), 0);
	ck_assert_int_eq(mdb_env_set_mapsize(env, 1ull << 30), 0);
	ck_assert_int_eq(mdb_env_open(env, path("store"), 0, 0644), 0);
	ck_assert_int_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
	ck_assert_int_eq(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
	ck_assert_int_eq(mdb_put(txn, dbi, &k, &v, 0), 0);
	ck_assert_int_eq(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
	expect_store_refused("store", "format 99");
	expect_refused("format 99");
}
END_TEST

START_TEST(test_objects_missing)
{
	ck_assert_int_eq(rename(path("store/objects"), path("objects.moved")), 0);
	expect_store_refused("store", "objects/");
	expect_refused("objects/");
}
END_TEST

START_TEST(test_metadata_gone)
{
	/* data.mdb deleted, or emptied, next to object data: never a new empty store */
	if (_i)
		ck_assert_int_eq(truncate(path("store/data.mdb"), 0), 0);
	else
		ck_assert_int_eq(unlink(path("store/data.mdb")), 0);
	expect_store_refused("store", "data.mdb");
	expect_refused("data.mdb");
}
END_TEST

START_TEST(test_data_store_damaged)
{
	/* the data store the clients share: made at mkfs, damaged the same way */
	const char *db = path("store.data/data.mdb");

	zero_range(db, 0, 4096);
	expect_store_refused("store.data", "data.mdb");
	expect_refused("store.data/data.mdb");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mds_store_damage");
	TCase *tc = tcase_create("damage");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_truncated);
	tcase_add_loop_test(tc, test_zeroed_meta_page, 0, 2);
	tcase_add_test(tc, test_other_format);
	tcase_add_test(tc, test_objects_missing);
	tcase_add_loop_test(tc, test_metadata_gone, 0, 2);
	tcase_add_test(tc, test_data_store_damaged);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	if (mdsproc_parent_init(parent_dir, sizeof(parent_dir), "test_mds_damage") != 0)
		return 1;
	sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	mdsproc_parent_remove(parent_dir);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
