/*
 * test_fuse_memlim.c - loligo-fuse's caches bounded in bytes (issue 21.4):
 * under a stat storm of many more files than client_cache_memory_limit
 * holds, what the client's caches hold (perf client.cache_bytes, counted as
 * allocated) comes back under the limit, every file still answers stat
 * correctly, and the inodes the kernel held through the names it cached
 * were let go (the client invalidated those names, the kernel forgot them);
 * then a listing of the whole directory, whose cached READDIR batches go
 * too.
 *
 * The mount runs with client_cache_memory_limit = LIMIT and
 * client_flush_interval = 1 (the trimmer runs with the flusher); FILES
 * files at ~1 KB of cache each are several times LIMIT.  The waits are for
 * the counter (LT_WAIT_UNTIL), the bound only turns a hang into a failure.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/admin_sock.h"
#include "tests/e2e/test_fuse_harness.h"
#include "tests/lib/wait.h"

#define FILES 8000
#define LIMIT (2u << 20)
#define STORMERS 4

static struct lfs fs;

static void setup(void)
{
	char conf[256];

	snprintf(conf, sizeof(conf), "client_cache_memory_limit = %u\nclient_flush_interval = 1\n", LIMIT);
	ck_assert_int_eq(lfs_init_with(&fs, conf), 0);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
}

static void teardown(void)
{
	lfs_cleanup(&fs);
}

/* perf dump of the client process: client.@name */
static int64_t perf(const char *name)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *g, *v;
	int64_t n = -1;
	int r;

	json_object_object_add(req, "prefix", json_object_new_string("perf dump"));
	r = asok_request(fs.asok, req, &rep, 10000);
	json_object_put(req);
	ck_assert_msg(r == 0, "admin socket of the mount: %s", strerror(-r));
	if (json_object_object_get_ex(rep, "client", &g) && json_object_object_get_ex(g, name, &v))
		n = json_object_get_int64(v);
	json_object_put(rep);
	ck_assert_msg(n >= 0, "no counter client.%s", name);
	return n;
}

struct stormer {
	pthread_t th;
	int id, bad;
};

static void *storm_main(void *arg)
{
	struct stormer *s = arg;
	char rel[64], p[PATH_MAX + 64];
	struct stat st;

	for (int i = 0; i < FILES; i++) {
		int k = (i * 7 + s->id * (FILES / STORMERS)) % FILES;

		snprintf(rel, sizeof(rel), "d/f%05d", k);
		if (stat(lfs_path(&fs, rel, p, sizeof(p)), &st) || st.st_size != k % 100)
			s->bad++;
	}
	return NULL;
}

static void storm(void)
{
	struct stormer s[STORMERS];

	for (int t = 0; t < STORMERS; t++) {
		s[t].id = t;
		s[t].bad = 0;
		ck_assert_int_eq(pthread_create(&s[t].th, NULL, storm_main, &s[t]), 0);
	}
	for (int t = 0; t < STORMERS; t++) {
		pthread_join(s[t].th, NULL);
		ck_assert_msg(s[t].bad == 0, "stormer %d: %d stats failed or saw the wrong size", t, s[t].bad);
	}
}

START_TEST(test_stat_storm_bounded)
{
	char rel[64], p[PATH_MAX + 64], buf[128];
	int64_t bytes, peak = 0, inodes;

	ck_assert_int_eq(mkdir(lfs_path(&fs, "d", p, sizeof(p)), 0755), 0);
	for (int i = 0; i < FILES; i++) {
		int fd;

		snprintf(rel, sizeof(rel), "d/f%05d", i);
		fd = open(lfs_path(&fs, rel, p, sizeof(p)), O_CREAT | O_EXCL | O_WRONLY, 0644);
		ck_assert_msg(fd >= 0, "create %s: %s", rel, strerror(errno));
		memset(buf, 'x', sizeof(buf));
		ck_assert_int_eq(write(fd, buf, (size_t)(i % 100)), i % 100);
		ck_assert_int_eq(close(fd), 0);
		if (i % 1000 == 0 && (bytes = perf("cache_bytes")) > peak)
			peak = bytes;
	}
	storm();
	bytes = perf("cache_bytes");
	inodes = perf("inodes");
	fprintf(stderr, "memlim: after the storm %" PRId64 " bytes cached (%" PRId64 " inodes), peak seen %" PRId64
		", limit %u\n", bytes, inodes, peak, LIMIT);
	/* the trimmer (every flusher round) brings it under the limit; the
	 * names the kernel held are invalidated for it */
	LT_WAIT_UNTIL((bytes = perf("cache_bytes")) <= LIMIT, "client cache at %" PRId64 " bytes, limit %u", bytes,
		      LIMIT);
	inodes = perf("inodes");
	fprintf(stderr, "memlim: trimmed to %" PRId64 " bytes (%" PRId64 " inodes, %" PRId64 " bytes each)\n", bytes,
		inodes, inodes ? perf("cache_bytes_inodes") / inodes : 0);
	ck_assert_msg(inodes < FILES / 2, "%" PRId64 " inodes still cached: the kernel's were not let go", inodes);
	/* issue 21.4's 1 KB per cached inode: struct lc_inode with malloc's
	 * header (the count is what malloc gave) is 752 bytes (it was 928),
	 * 832 with the lc_irare of a file written here; the rest of the KB is
	 * its dentry and its share of the listings */
	ck_assert_msg(inodes > 0 && perf("cache_bytes_inodes") / inodes <= 864,
		      "%" PRId64 " bytes per cached inode (at most 864)", inodes ? perf("cache_bytes_inodes") / inodes : 0);

	/* a second storm: every file still right, and the bound holds again */
	storm();
	LT_WAIT_UNTIL((bytes = perf("cache_bytes")) <= LIMIT, "client cache at %" PRId64 " bytes after a second storm",
		      bytes);

	/* a listing of the whole directory (readdirplus: the client keeps the
	 * READDIR batches, every entry's attributes again): listed
	 * completely, and the bound holds with those too */
	{
		DIR *dp = opendir(lfs_path(&fs, "d", p, sizeof(p)));
		struct dirent *de;
		int n = 0;

		ck_assert_ptr_nonnull(dp);
		while ((de = readdir(dp)))
			n += de->d_name[0] == 'f';
		closedir(dp);
		ck_assert_int_eq(n, FILES);
	}
	fprintf(stderr, "memlim: after a listing %" PRId64 " bytes cached (%" PRId64 " in listings)\n",
		perf("cache_bytes"), perf("cache_bytes_dirlists"));
	LT_WAIT_UNTIL((bytes = perf("cache_bytes")) <= LIMIT, "client cache at %" PRId64 " bytes after a listing",
		      bytes);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fuse_memlim");

	lfs_suite_add(s, "stat_storm_bounded", test_stat_storm_bounded, setup, teardown, 300);
	return lfs_suite_main(s, "test_fuse_memlim");
}
