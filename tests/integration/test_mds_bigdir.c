/*
 * test_mds_bigdir.c - big directories made over the wire (issue 21.3):
 *  - listed: listed completely and correctly after MDS restarts (every name
 *    once, none that is not there), also when the listing began before the
 *    restart and resumes with its cookie after it;
 *  - lookup: after a restart, a lookup reads the name's fragment, not the
 *    directory (fragments, docs/ARCHITECTURE.md "Big directories");
 *  - splitcrash: the MDS dies halfway through writing a fragment split to
 *    the store (test hook mds_debug_split_crash_after) and nothing is lost;
 *  - trim: with mds_cache_size far below the directory, cold fragments are
 *    evicted one by one and read back right.
 *
 * The size is LOLIGO_TEST_BIGDIR_ENTRIES (default 50,000, made by 4
 * sessions in parallel: ~10 s a case here), the fragment size
 * LOLIGO_TEST_BIGDIR_SPLIT (mds_dir_split_size, default 500, so that many
 * fragments and splits happen; splitcrash uses 64).  The 1,000,000
 * runs with LOLIGO_TEST_BIGDIR_ENTRIES=1000000 (minutes; its timings are
 * tools/bench/run-bigdir.sh --mds-only).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <json-c/json.h>

#include "common/admin_sock.h"
#include "tools/bench/mds_wire.h"
#include "tests/lib/daemon.h"
#include "tests/lib/wait.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#define ROOT MDSP_ROOT_INO
#define MAKERS 4
static char parent_dir[256];
static struct mdsproc P;
static long nentries;
static uint64_t dir_ino;
static long split_size;

/* @group.@name of the MDS's @cmd ("perf dump": a group; "status",
 * "journal status": @group NULL), UINT64_MAX when it is not there */
static uint64_t asok_value(const char *cmd, const char *group, const char *name)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *g, *v;
	char path[512];
	uint64_t val = UINT64_MAX;

	snprintf(path, sizeof(path), "%s/mds.asok", P.dir);
	json_object_object_add(req, "prefix", json_object_new_string(cmd));
	if (asok_request(path, req, &rep, 5000) == 0) {
		g = rep;
		if ((!group || json_object_object_get_ex(rep, group, &g)) && json_object_object_get_ex(g, name, &v))
			val = (uint64_t)json_object_get_int64(v);
	}
	json_object_put(req);
	if (rep)
		json_object_put(rep);
	return val;
}

static uint64_t perf_value(const char *group, const char *name)
{
	return asok_value("perf dump", group, name);
}

/* every journal segment up to the one written now has expired into the
 * directory objects (the MDS runs with a short mds_journal_expire_age) */
static void wait_expired(void)
{
	uint64_t head = asok_value("journal status", NULL, "head_segment");

	ck_assert(head != UINT64_MAX);
	LT_WAIT_UNTIL(asok_value("journal status", NULL, "expire_segment") > head,
		      "journal segment %llu did not expire", (unsigned long long)head);
}

static void setup(void)
{
	const char *e = getenv("LOLIGO_TEST_BIGDIR_ENTRIES");

	const char *sp = getenv("LOLIGO_TEST_BIGDIR_SPLIT");

	nentries = e ? atol(e) : 50000;
	ck_assert_msg(nentries > 0, "LOLIGO_TEST_BIGDIR_ENTRIES=%s", e);
	ck_assert_int_eq(mdsproc_init(&P, parent_dir), 0);
	/* fragments of a few hundred entries: many of them, many splits */
	split_size = sp ? atol(sp) : 500;
	snprintf(P.extra[P.nextra++], 256, "--mds_dir_split_size=%ld", split_size);
	snprintf(P.extra[P.nextra++], 256, "--mds_journal_expire_age=0.1");
	snprintf(P.extra[P.nextra++], 256, "--mds_tick_interval=0.05");
	snprintf(P.extra[P.nextra++], 256, "--mds_reconnect_timeout=0");
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

/* the MDS's minor page faults so far (/proc/PID/stat, field 10) */
static uint64_t mds_minflt(void)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	FILE *f;
	int field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)P.pid);
	f = fopen(path, "r");
	ck_assert_msg(f, "%s: %m", path);
	ck_assert(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')');          /* after the command name, which may hold spaces */
	ck_assert(p);
	for (field = 2; field < 10 && (p = strchr(p + 1, ' ')); field++)
		;
	ck_assert(p && sscanf(p + 1, "%llu", &v) == 1);
	return v;
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
	/* the directory is in fragments, split while it was being filled */
	ck_assert_msg(nentries <= split_size || perf_value("mds_cache", "dir_splits") >= (uint64_t)(nentries / split_size / 8),
		      "%llu fragment splits for %ld entries of at most %ld a fragment",
		      (unsigned long long)perf_value("mds_cache", "dir_splits"), nentries, split_size);
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

	/*
	 * Listed again, with every fragment in memory now: READDIRs of 1,024
	 * entries, whose buffers (~320 KB of entries, ~200 KB encoded) come
	 * from the MDS's kept ones (common/bufpool.h).  Made and freed per
	 * reply, they were mapped and unmapped each time (glibc maps blocks
	 * of 256 KiB and more on their own in the MDS): ~130 page faults per
	 * READDIR, where now the kept buffers are reused.
	 */
	{
		uint64_t hits0 = perf_value("mds", "bigbuf_hits"), flt0 = mds_minflt(), flt;
		long batches = nentries / 1024;

		memset(seen, 0, (size_t)nentries);
		memset(renamed, 0, (size_t)nentries);
		cookie = 0;
		ck_assert(list_some(&w, &cookie, 0, seen, renamed));
		flt = mds_minflt() - flt0;
		check_all(seen, renamed);
		ck_assert_msg(perf_value("mds", "bigbuf_hits") != UINT64_MAX &&
				      perf_value("mds", "bigbuf_hits") - hits0 >= (uint64_t)batches,
			      "%ld READDIRs of 1,024 entries took %llu of the MDS's kept buffers", batches,
			      (unsigned long long)(perf_value("mds", "bigbuf_hits") - hits0));
		/* (AddressSanitizer's allocator maps and faults on its own) */
		ck_assert_msg(UNDER_ASAN || flt <= 20 + (uint64_t)batches * 4,
			      "%ld READDIRs of 1,024 entries made %llu page faults in the MDS", batches,
			      (unsigned long long)flt);
	}

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


static void make_range(long from, long to)
{
	struct maker mk = { .from = from, .to = to };

	make_main(&mk);
	ck_assert_msg(mk.err == 0, "creates of f%07ld..: %d", from, mk.err);
}

static void lookup_all(struct mdsw *w, long n, const unsigned char *skip)
{
	struct mdsp_inode in;
	char name[32];

	for (long i = 0; i < n; i++) {
		if (skip && skip[i])
			continue;
		snprintf(name, sizeof(name), "f%07ld", i);
		ck_assert_msg(mdsw_lookup(w, dir_ino, name, &in) == 0, "lookup of %s failed", name);
	}
}

/*
 * A lookup after a restart reads the name's fragment, not the directory:
 * with the journal expired, the MDS starts with nothing of it in memory,
 * and random lookups bring in one fragment each (the old MDS read the
 * whole directory object at the first one).  Then a full listing (every
 * name once) and lookups of every name.
 */
START_TEST(test_bigdir_lookup_reads_one_fragment)
{
	struct mdsp_inode d, in;
	struct mdsw w;
	unsigned char *seen = calloc((size_t)nentries, 1), *renamed = calloc((size_t)nentries, 1);
	uint64_t cookie = 0, loaded0, cached;
	char name[32];
	int nlook = 20;

	ck_assert(seen && renamed);
	ck_assert_msg(nentries >= 16 * split_size, "LOLIGO_TEST_BIGDIR_ENTRIES %ld: at least 16 fragments' worth", nentries);
	ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
	ck_assert_int_eq(mdsw_open(&w, "client.bigdir"), 0);
	ck_assert_int_eq(mdsw_mkdir(&w, ROOT, "big", 0755, &d), 0);
	dir_ino = d.ino;
	mdsw_close(&w);
	make_range(0, nentries);
	wait_expired();
	restart(SIGTERM);
	loaded0 = perf_value("mds_cache", "dir_frags_loaded");
	ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
	ck_assert_int_eq(mdsw_open(&w, "client.bigdir-look"), 0);
	srandom(42);
	for (int k = 0; k < nlook; k++) {
		long i = random() % nentries;

		snprintf(name, sizeof(name), "f%07ld", i);
		ck_assert_msg(mdsw_lookup(&w, dir_ino, name, &in) == 0, "lookup of %s failed", name);
	}
	ck_assert_int_eq(mdsw_lookup(&w, dir_ino, "never-made", &in), -ENOENT);
	cached = asok_value("status", NULL, "inodes_cached");
	/* each lookup reads at most the two fragments its name's cookie may be in */
	ck_assert_msg(perf_value("mds_cache", "dir_frags_loaded") - loaded0 <= 2 * (uint64_t)(nlook + 1),
		      "%llu fragments read for %d lookups",
		      (unsigned long long)(perf_value("mds_cache", "dir_frags_loaded") - loaded0), nlook + 1);
	ck_assert_msg(cached < (uint64_t)nentries / 2, "%llu inodes in memory after %d lookups in a directory of %ld",
		      (unsigned long long)cached, nlook + 1, nentries);
	ck_assert(list_some(&w, &cookie, 0, seen, renamed));
	for (long i = 0; i < nentries; i++)
		ck_assert_msg(seen[i] == 1 && !renamed[i], "f%07ld listed %d times", i, seen[i]);
	lookup_all(&w, nentries, NULL);
	mdsw_close(&w);
	free(seen);
	free(renamed);
}
END_TEST

/*
 * A crash in the middle of a split loses nothing.  The split is in the
 * journal entry of the create that made the fragment too big; the test
 * hook mds_debug_split_crash_after makes the MDS exit (as kill -9) after
 * applying @after objects of the segment with that entry to the store, so
 * some of the split's objects are written and some are not (the head
 * emptied, the new fragments not there yet, or the other way round).  The
 * restart replays it; every name acknowledged is listed once and found,
 * also after a later clean restart that reads the objects alone.  Rounds:
 * the first split of a directory (its head emptied) and a later one (a
 * fragment's object removed), each at several points.
 */
START_TEST(test_bigdir_split_crash)
{
	static const unsigned afters[] = { 1, 2, 4, 7 };
	const long S = 64;               /* a small fragment: splits come quickly */
	long n = 16 * S;
	unsigned char *seen = calloc((size_t)n, 1), *renamed = calloc((size_t)n, 1);

	ck_assert(seen && renamed);
	for (unsigned round = 0; round < 2 * sizeof(afters) / sizeof(afters[0]); round++) {
		unsigned after = afters[round % 4];
		bool later = round >= 4;   /* rounds 4..: the head was split before the hook is armed */
		struct mdsp_inode d, in;
		struct mdsw w;
		char dname[32], name[32];
		uint64_t cookie = 0, splits0;
		long made, i;
		int st, err = 0;

		snprintf(dname, sizeof(dname), "big%u", round);
		ck_assert_int_eq(mdsproc_config_set(&P, "mds_dir_split_size", "64"), 0);
		ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
		ck_assert_int_eq(mdsw_open(&w, "client.bigdir"), 0);
		ck_assert_int_eq(mdsw_mkdir(&w, ROOT, dname, 0755, &d), 0);
		dir_ino = d.ino;
		mdsw_close(&w);
		made = later ? 2 * S : S;
		make_range(0, made);
		wait_expired();
		splits0 = perf_value("mds_cache", "dir_splits");
		ck_assert(splits0 != UINT64_MAX);
		char v[16];
		snprintf(v, sizeof(v), "%u", after);
		ck_assert_int_eq(mdsproc_config_set(&P, "mds_debug_split_crash_after", v), 0);
		/* creates, each waiting for SAFE, until one splits a fragment and
		 * the expiry of its segment takes the MDS down */
		ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
		ck_assert_int_eq(mdsw_open(&w, "client.bigdir-split"), 0);
		for (i = made; i < n && !err; i++) {
			snprintf(name, sizeof(name), "f%07ld", i);
			w.wait_safe = true;
			err = mdsw_create(&w, dir_ino, name, 0644, O_CREAT | O_EXCL, &in);
		}
		mdsw_close(&w);
		if (err) {
			made = i - 1;      /* f<made> was in flight: there or not */
			ck_assert_int_eq(waitpid(P.pid, &st, 0), P.pid);
		} else {
			/* the split came with one of the last creates: its
			 * segment expires (and the MDS dies) after the loop */
			ck_assert_msg(perf_value("mds_cache", "dir_splits") > splits0,
				      "round %u: %ld creates and no fragment split", round, n - made);
			made = n;          /* every create acknowledged */
			LT_WAIT_UNTIL(waitpid(P.pid, &st, WNOHANG) == P.pid,
				      "round %u: the split's expiry did not take the MDS down", round);
		}
		P.pid = 0;
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 99, "round %u: MDS ended with status %#x", round, st);
		ck_assert_int_eq(mdsproc_start(&P), 0);
		for (int pass = 0; pass < 2; pass++) {
			memset(seen, 0, (size_t)n);
			memset(renamed, 0, (size_t)n);
			cookie = 0;
			ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
			ck_assert_int_eq(mdsw_open(&w, "client.bigdir-check"), 0);
			long save = nentries;
			nentries = n;
			ck_assert(list_some(&w, &cookie, 0, seen, renamed));
			nentries = save;
			for (i = 0; i < n; i++)
				ck_assert_msg(seen[i] == (i < made) || (i == made && seen[i] <= 1),
					      "round %u pass %d: f%07ld listed %d times (%ld acknowledged)",
					      round, pass, i, seen[i], made);
			lookup_all(&w, made, NULL);
			mdsw_close(&w);
			/* then from the objects alone: the replayed split expired */
			if (pass == 0) {
				wait_expired();
				restart(SIGTERM);
				ck_assert_int_eq(mdsproc_config_set(&P, "mds_dir_split_size", "64"), 0);
			}
		}
	}
	free(seen);
	free(renamed);
}
END_TEST

/*
 * Bounded memory: with mds_cache_size far below the directory, the
 * trimmer evicts its cold fragments one by one (the old MDS could only
 * evict it whole, and read it whole again at the next request), and what
 * is read again afterwards is right: a full listing, lookups of every name,
 * creates and unlinks into evicted fragments, then the same after a restart.
 */
START_TEST(test_bigdir_fragments_trimmed)
{
	struct mdsp_inode d, in;
	struct mdsw w;
	unsigned char *seen = calloc((size_t)nentries, 1), *renamed = calloc((size_t)nentries, 1);
	uint64_t cookie = 0, limit = (uint64_t)nentries / 8;
	char v[32], name[32];

	ck_assert(seen && renamed);
	ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
	ck_assert_int_eq(mdsw_open(&w, "client.bigdir"), 0);
	ck_assert_int_eq(mdsw_mkdir(&w, ROOT, "big", 0755, &d), 0);
	dir_ino = d.ino;
	mdsw_close(&w);
	make_range(0, nentries);
	wait_expired();
	snprintf(v, sizeof(v), "%llu", (unsigned long long)limit);
	ck_assert_int_eq(mdsproc_config_set(&P, "mds_cache_size", v), 0);
	/* the trimmer runs at every tick: fragments go until the cache fits */
	LT_WAIT_UNTIL(asok_value("status", NULL, "inodes_cached") <= limit,
		      "%llu inodes cached, mds_cache_size %llu",
		      (unsigned long long)asok_value("status", NULL, "inodes_cached"), (unsigned long long)limit);
	ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
	ck_assert_int_eq(mdsw_open(&w, "client.bigdir-trim"), 0);
	/* a lookup brings back its fragment, not the directory */
	for (int k = 0; k < 10; k++) {
		snprintf(name, sizeof(name), "f%07ld", (long)(random() % nentries));
		ck_assert_int_eq(mdsw_lookup(&w, dir_ino, name, &in), 0);
	}
	ck_assert_msg(asok_value("status", NULL, "inodes_cached") < limit + (uint64_t)nentries / 4,
		      "%llu inodes cached after 10 lookups (mds_cache_size %llu, %ld entries)",
		      (unsigned long long)asok_value("status", NULL, "inodes_cached"), (unsigned long long)limit,
		      nentries);
	ck_assert(perf_value("mds_cache", "dir_frags_evicted") != UINT64_MAX);
	ck_assert_uint_gt(perf_value("mds_cache", "dir_frags_evicted"), 0);
	ck_assert(list_some(&w, &cookie, 0, seen, renamed));
	for (long i = 0; i < nentries; i++)
		ck_assert_msg(seen[i] == 1 && !renamed[i], "f%07ld listed %d times", i, seen[i]);
	lookup_all(&w, nentries, NULL);
	/* changes in fragments read back after an eviction */
	for (long i = 0; i < nentries; i += 7) {
		snprintf(name, sizeof(name), "f%07ld", i);
		ck_assert_int_eq(mdsw_unlink(&w, dir_ino, name), 0);
		snprintf(name, sizeof(name), "g%07ld", i);
		ck_assert_int_eq(mdsw_create(&w, dir_ino, name, 0644, O_CREAT | O_EXCL, &in), 0);
	}
	mdsw_close(&w);
	wait_expired();
	LT_WAIT_UNTIL(asok_value("status", NULL, "inodes_cached") <= limit, "cache not trimmed again");
	for (int pass = 0; pass < 2; pass++) {
		struct mdsp_reply rep;
		long nf = 0, ng = 0;

		ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
		ck_assert_int_eq(mdsw_open(&w, "client.bigdir-trim2"), 0);
		cookie = 0;
		for (;;) {
			ck_assert_int_eq(mdsw_readdir(&w, dir_ino, cookie, 1024, &rep), 0);
			for (uint32_t k = 0; k < rep.nentries; k++) {
				long i = atol(rep.entries[k].name + 1);

				if (rep.entries[k].name[0] == 'g') {
					ck_assert_msg(i % 7 == 0, "%s listed", rep.entries[k].name);
					ng++;
				} else {
					ck_assert_msg(i % 7 != 0, "%s listed after its unlink", rep.entries[k].name);
					nf++;
				}
			}
			bool end = rep.end || !rep.nentries;
			if (rep.nentries)
				cookie = rep.entries[rep.nentries - 1].cookie;
			mdsw_reply_free(&rep);
			if (end)
				break;
		}
		ck_assert_int_eq(ng, (nentries + 6) / 7);
		ck_assert_int_eq(nf, nentries - (nentries + 6) / 7);
		for (long i = 0; i < nentries; i += 7) {
			snprintf(name, sizeof(name), "g%07ld", i);
			ck_assert_int_eq(mdsw_lookup(&w, dir_ino, name, &in), 0);
			snprintf(name, sizeof(name), "f%07ld", i);
			ck_assert_int_eq(mdsw_lookup(&w, dir_ino, name, &in), -ENOENT);
		}
		mdsw_close(&w);
		if (pass == 0)
			restart(SIGKILL);
	}
	free(seen);
	free(renamed);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mds_bigdir");
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{ "listed", test_bigdir_listed_after_restart },
		{ "lookup", test_bigdir_lookup_reads_one_fragment },
		{ "splitcrash", test_bigdir_split_crash },
		{ "trim", test_bigdir_fragments_trimmed },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TCase *tc = tcase_create(cases[i].name);

		tcase_add_checked_fixture(tc, setup, teardown);
		tcase_set_timeout(tc, 1800);
		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	return s;
}

int main(void)
{
	return lt_suite_main(suite(), "test_mds_bigdir", parent_dir, sizeof(parent_dir));
}
