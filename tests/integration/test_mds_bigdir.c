/*
 * test_mds_bigdir.c - a big directory made over the wire is listed
 * completely and correctly after MDS restarts (issue 21.3): every name once,
 * none that is not there, also when the listing began before the restart
 * and resumes with its cookie after it.
 *
 * The size is LOLIGO_TEST_BIGDIR_ENTRIES (default 50,000, made by 4
 * sessions in parallel: ~10 s here).  The 1,000,000 runs with
 * LOLIGO_TEST_BIGDIR_ENTRIES=1000000 (2 min 37 s on the 2-core dev machine,
 * passed at 3f00b8f; the MDS then holds the whole directory in memory,
 * ~0.9 GB: see docs/ARCHITECTURE.md, "Big directories"), too long and too
 * big for the ASan suite; its timings are tools/bench/run-bigdir.sh
 * --mds-only.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench/mds_wire.h"
#include "tests/lib/daemon.h"

#define ROOT MDSP_ROOT_INO
#define MAKERS 4
static char parent_dir[256];
static struct mdsproc P;
static long nentries;
static uint64_t dir_ino;

static void setup(void)
{
	const char *e = getenv("LOLIGO_TEST_BIGDIR_ENTRIES");

	nentries = e ? atol(e) : 50000;
	ck_assert_msg(nentries > 0, "LOLIGO_TEST_BIGDIR_ENTRIES=%s", e);
	ck_assert_int_eq(mdsproc_init(&P, parent_dir), 0);
	ck_assert_int_eq(mdsproc_mkfs(&P), 0);
	ck_assert_int_eq(mdsproc_start(&P), 0);
}

static void teardown(void)
{
	mdsproc_cleanup(&P);
}

struct maker {
	pthread_t th;
	long from, to;
	int err;
};

/* f<from> .. f<to - 1>, answered UNSAFE but the last, which waits for SAFE:
 * the journal then holds them all */
static void *make_main(void *arg)
{
	struct maker *m = arg;
	struct mdsp_inode in;
	struct mdsw w;
	char name[32];

	if ((m->err = mdsw_connect(&w, P.port)) || (m->err = mdsw_open(&w, "client.bigdir-make")))
		return NULL;
	for (long i = m->from; i < m->to && !m->err; i++) {
		snprintf(name, sizeof(name), "f%07ld", i);
		w.oldest_tid = w.next_tid > 64 ? w.next_tid - 64 : 0;
		w.wait_safe = i == m->to - 1;
		m->err = mdsw_create(&w, dir_ino, name, 0644, O_CREAT | O_EXCL, &in);
	}
	mdsw_close(&w);
	return NULL;
}

static bool removed(long i)
{
	return i % 997 == 5;
}

/*
 * A listing from @*cookie on, @max batches at most (0: to the end), the
 * names it brings counted in @seen (f<i>) and @renamed (r<i>); any other
 * name, or one twice, fails the test.  Returns true at the end.
 */
static bool list_some(struct mdsw *w, uint64_t *cookie, int max, unsigned char *seen, unsigned char *renamed)
{
	struct mdsp_reply rep;
	int batches = 0;

	for (;;) {
		int r = mdsw_readdir(w, dir_ino, *cookie, 1024, &rep);

		ck_assert_msg(r == 0, "READDIR after cookie %llu: %d", (unsigned long long)*cookie, r);
		for (uint32_t i = 0; i < rep.nentries; i++) {
			const char *nm = rep.entries[i].name;
			char *end;
			long k = strtol(nm + 1, &end, 10);

			ck_assert_msg((nm[0] == 'f' || nm[0] == 'r') && !*end && k >= 0 && k < nentries,
				      "%s listed: no such name was made", nm);
			unsigned char *set = nm[0] == 'f' ? seen : renamed;
			ck_assert_msg(!set[k]++, "%s listed twice", nm);
		}
		bool end = rep.end || !rep.nentries;
		if (rep.nentries)
			*cookie = rep.entries[rep.nentries - 1].cookie;
		mdsw_reply_free(&rep);
		if (end)
			return true;
		if (max && ++batches == max)
			return false;
	}
}

/* every name made is there once: f<i>, less the removed ones, which were
 * renamed to r<i> when i % 3 == 0 */
static void check_all(const unsigned char *seen, const unsigned char *renamed)
{
	for (long i = 0; i < nentries; i++) {
		bool gone = removed(i), moved = gone && i % 3 == 0;

		ck_assert_msg(seen[i] == !gone, "f%07ld listed %d times", i, seen[i]);
		ck_assert_msg(renamed[i] == moved, "r%07ld listed %d times", i, renamed[i]);
	}
}

static void restart(int sig)
{
	int st = mdsproc_stop(&P, sig);

	ck_assert_int_eq(st, sig == SIGKILL ? 128 + SIGKILL : 0);
	ck_assert_int_eq(mdsproc_start(&P), 0);
}

START_TEST(test_bigdir_listed_after_restart)
{
	struct maker m[MAKERS];
	struct mdsp_inode d;
	struct mdsw w;
	char name[32], name2[32];
	unsigned char *seen = calloc((size_t)nentries, 1), *renamed = calloc((size_t)nentries, 1);
	uint64_t cookie = 0;

	ck_assert(seen && renamed);
	ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
	ck_assert_int_eq(mdsw_open(&w, "client.bigdir"), 0);
	ck_assert_int_eq(mdsw_mkdir(&w, ROOT, "big", 0755, &d), 0);
	dir_ino = d.ino;
	mdsw_close(&w);
	for (int t = 0; t < MAKERS; t++) {
		m[t].from = nentries * t / MAKERS;
		m[t].to = nentries * (t + 1) / MAKERS;
		m[t].err = 0;
		pthread_create(&m[t].th, NULL, make_main, &m[t]);
	}
	for (int t = 0; t < MAKERS; t++) {
		pthread_join(m[t].th, NULL);
		ck_assert_msg(m[t].err == 0, "creates of f%07ld..: %d", m[t].from, m[t].err);
	}
	/* some go, a third of those under another name */
	ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
	ck_assert_int_eq(mdsw_open(&w, "client.bigdir"), 0);
	for (long i = 0; i < nentries; i++) {
		if (!removed(i))
			continue;
		snprintf(name, sizeof(name), "f%07ld", i);
		if (i % 3 == 0) {
			snprintf(name2, sizeof(name2), "r%07ld", i);
			ck_assert_int_eq(mdsw_rename(&w, dir_ino, name, dir_ino, name2, 0), 0);
		} else {
			ck_assert_int_eq(mdsw_unlink(&w, dir_ino, name), 0);
		}
	}
	mdsw_close(&w);

	/* a crash: the directory comes back from the journal */
	restart(SIGKILL);
	ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
	ck_assert_int_eq(mdsw_open(&w, "client.bigdir-list"), 0);
	ck_assert(list_some(&w, &cookie, 0, seen, renamed));
	check_all(seen, renamed);

	/* a listing half done when the MDS stops (clean: the directory objects
	 * written) resumes after the restart at its cookie */
	memset(seen, 0, (size_t)nentries);
	memset(renamed, 0, (size_t)nentries);
	cookie = 0;
	long half = (nentries / 1024) / 2;
	bool done = list_some(&w, &cookie, half > 0 ? (int)half : 1, seen, renamed);
	mdsw_close(&w);
	restart(SIGTERM);
	ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
	ck_assert_int_eq(mdsw_open(&w, "client.bigdir-list"), 0);
	if (!done)
		ck_assert(list_some(&w, &cookie, 0, seen, renamed));
	check_all(seen, renamed);
	mdsw_close(&w);
	free(seen);
	free(renamed);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mds_bigdir");
	TCase *tc = tcase_create("bigdir");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 1800);
	tcase_add_test(tc, test_bigdir_listed_after_restart);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return lt_suite_main(suite(), "test_mds_bigdir", parent_dir, sizeof(parent_dir));
}
