/*
 * test_fuse_layout.c - file layouts (issue 22.4) through real FUSE mounts of
 * a real loligo-mds: the loligo.{file,dir}.layout virtual xattrs and files
 * striped over several objects, read back through a second client.
 *
 *   dir_inherit     loligo.dir.layout.* on a directory; files and
 *                   directories made below it get it (nearest ancestor
 *                   with a layout wins), a directory without one shows
 *                   none (ENODATA), bad layouts are refused (EINVAL).
 *   file_empty      loligo.file.layout.* set on an empty file, refused on
 *                   one with data (ENOTEMPTY), also data the MDS has not
 *                   heard of yet (buffered by this client).
 *   striped         a file striped over 4 objects (4 KiB units, 64 KiB
 *                   objects) written on one mount, checked byte for byte
 *                   on a second; truncated into the middle of an object
 *                   set and punched across units, checked again; then,
 *                   with the daemons stopped, the objects in the data pool
 *                   are exactly those the striping says, each as long as
 *                   store_file_obj_keep says (Ceph's file_to_extents).
 *
 *   pools           fs add_data_pool: a directory's layout names the new
 *                   pool, a file written below has its data objects there
 *                   (its object index stays in the first pool), a second
 *                   client reads it; rm_data_pool is refused while a file
 *                   uses the pool and for the first pool; the pool table
 *                   survives a kill -9 of the MDS (journaled); with the
 *                   file gone and purged, rm_data_pool works.
 *
 *   ec_pool         (only with LOLIGO_E2E_EC_POOL=POOL, an erasure-coded
 *                   RADOS pool: tests/e2e/fuse_layout_ec_rados.sh) the
 *                   pool added as a data pool, a striped file's data
 *                   written there and read back through a second client,
 *                   truncated and punched; its objects in the EC pool, its
 *                   object index (omap, which EC pools refuse) in the first.
 *
 * Runs on the local store, and on RADOS (fuse_layout_rados:
 * tests/e2e/fuse_suite_rados.sh).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <linux/falloc.h>

#include <json-c/json.h>

#include "common/admin_sock.h"
#include "store/store.h"
#include "tests/e2e/test_fuse_harness.h"
#include "tests/lib/wait.h"

static struct lfs fs;

static void setup(void)
{
	ck_assert_int_eq(lfs_init(&fs), 0);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
}

static void teardown(void)
{
	lfs_cleanup(&fs);
}

#define P(rel) lfs_at(fs.mnt, (rel))

#define P2(rel) lfs_at(fs.mnt2, (rel))

static int set(const char *path, const char *name, const char *val)
{
	return setxattr(path, name, val, strlen(val), 0) < 0 ? -errno : 0;
}

/* the xattr's text, or "" with errno set */
static const char *get(const char *path, const char *name)
{
	static char buf[4][512];
	static int i;
	ssize_t n;

	i = (i + 1) % 4;
	n = getxattr(path, name, buf[i], sizeof(buf[i]) - 1);
	buf[i][n < 0 ? 0 : n] = '\0';
	return buf[i];
}

static void assert_xattr(const char *path, const char *name, const char *want)
{
	const char *v = get(path, name);

	ck_assert_msg(!strcmp(v, want), "%s of %s: '%s' (%s), want '%s'", name, path, v, *v ? "" : strerror(errno),
		      want);
}

static void touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY, 0644);

	ck_assert_msg(fd >= 0, "create %s: %s", path, strerror(errno));
	close(fd);
}

START_TEST(test_dir_inherit)
{
	char pool[256];

	ck_assert_int_eq(mkdir(P("d"), 0755), 0);
	ck_assert_int_eq(mkdir(P("d/before"), 0755), 0);
	/* no layout of its own: nothing to show, as CephFS */
	ck_assert_int_lt(getxattr(P("d"), "loligo.dir.layout", NULL, 0), 0);
	ck_assert_int_eq(errno, ENODATA);
	/* a file has one always: the filesystem's default */
	touch(P("plain"));
	assert_xattr(P("plain"), "loligo.file.layout.stripe_count", "1");
	assert_xattr(P("plain"), "loligo.file.layout.object_size", "4194304");
	snprintf(pool, sizeof(pool), "%s", get(P("plain"), "loligo.file.layout.pool"));
	ck_assert_msg(*pool, "a pool name");

	ck_assert_int_eq(set(P("d"), "loligo.dir.layout.stripe_unit", "65536"), 0);
	ck_assert_int_eq(set(P("d"), "loligo.dir.layout.stripe_count", "4"), 0);
	ck_assert_int_eq(set(P("d"), "loligo.dir.layout.object_size", "1048576"), 0);
	assert_xattr(P("d"), "loligo.dir.layout.stripe_count", "4");
	{
		char want[512];

		snprintf(want, sizeof(want), "stripe_unit=65536 stripe_count=4 object_size=1048576 pool=%s", pool);
		assert_xattr(P("d"), "loligo.dir.layout", want);
	}
	/* refused: a unit not dividing the object, not a multiple of 4 KiB, no objects, junk, unknown pool */
	ck_assert_int_eq(set(P("d"), "loligo.dir.layout.stripe_unit", "3000000"), -EINVAL);
	ck_assert_int_eq(set(P("d"), "loligo.dir.layout.stripe_unit", "5000"), -EINVAL);
	ck_assert_int_eq(set(P("d"), "loligo.dir.layout.stripe_count", "0"), -EINVAL);
	ck_assert_int_eq(set(P("d"), "loligo.dir.layout.object_size", "12k"), -EINVAL);
	ck_assert_int_eq(set(P("d"), "loligo.dir.layout.pool", "no_such_pool"), -EINVAL);
	ck_assert_int_eq(set(P("d"), "loligo.dir.layout.color", "1"), -EINVAL);
	assert_xattr(P("d"), "loligo.dir.layout.stripe_unit", "65536");

	/* new files and directories below get it, at any depth */
	touch(P("d/f"));
	ck_assert_int_eq(mkdir(P("d/sub"), 0755), 0);
	ck_assert_int_eq(mkdir(P("d/sub/deeper"), 0755), 0);
	touch(P("d/sub/deeper/g"));
	{
		char want[512];

		snprintf(want, sizeof(want), "stripe_unit=65536 stripe_count=4 object_size=1048576 pool=%s", pool);
		assert_xattr(P("d/f"), "loligo.file.layout", want);
		assert_xattr(P("d/sub/deeper/g"), "loligo.file.layout", want);
	}
	/* the nearest wins */
	ck_assert_int_eq(set(P("d/sub"), "loligo.dir.layout", "stripe_count=2 stripe_unit=4096"), 0);
	touch(P("d/sub/h"));
	assert_xattr(P("d/sub/h"), "loligo.file.layout.stripe_count", "2");
	assert_xattr(P("d/sub/h"), "loligo.file.layout.stripe_unit", "4096");
	assert_xattr(P("d/sub/h"), "loligo.file.layout.object_size", "1048576");
	/* a file made before keeps its own; so does the file outside */
	assert_xattr(P("d/f"), "loligo.file.layout.stripe_count", "4");
	assert_xattr(P("plain"), "loligo.file.layout.stripe_count", "1");
	/* removed: files get the parent's again */
	ck_assert_int_eq(removexattr(P("d/sub"), "loligo.dir.layout"), 0);
	touch(P("d/sub/i"));
	assert_xattr(P("d/sub/i"), "loligo.file.layout.stripe_count", "4");
	/* a second client sees what the first set */
	ck_assert_int_eq(lfs_mount2(&fs, NULL), 0);
	assert_xattr(P2("d/f"), "loligo.file.layout.stripe_unit", "65536");
	assert_xattr(P2("d"), "loligo.dir.layout.object_size", "1048576");
	touch(P2("d/from2"));
	assert_xattr(P("d/from2"), "loligo.file.layout.stripe_count", "4");
	/* here, not at teardown: the second mount's process dies with this case's */
	ck_assert_int_eq(lfs_umount2(&fs), 0);
}
END_TEST

START_TEST(test_file_empty)
{
	int fd;

	touch(P("e"));
	ck_assert_int_eq(set(P("e"), "loligo.file.layout.stripe_unit", "8192"), 0);
	ck_assert_int_eq(set(P("e"), "loligo.file.layout.stripe_count", "3"), 0);
	assert_xattr(P("e"), "loligo.file.layout", get(P("e"), "loligo.file.layout"));
	assert_xattr(P("e"), "loligo.file.layout.stripe_count", "3");
	/* a directory's names do not apply to a file, nor a file's to a directory */
	ck_assert_int_eq(set(P("e"), "loligo.dir.layout.stripe_count", "2"), -EINVAL);
	ck_assert_int_eq(mkdir(P("dir"), 0755), 0);
	ck_assert_int_eq(set(P("dir"), "loligo.file.layout.stripe_count", "2"), -EINVAL);

	/* data written and flushed: refused, nothing changed */
	ck_assert_int_eq(lfs_write_file(P("e"), 100000, 7), 0);
	ck_assert_int_eq(set(P("e"), "loligo.file.layout.stripe_count", "1"), -ENOTEMPTY);
	assert_xattr(P("e"), "loligo.file.layout.stripe_count", "3");
	ck_assert_int_eq(lfs_check_file(P("e"), 100000, 7), 0);

	/* buffered and not flushed yet: refused too */
	fd = open(P("b"), O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "x", 1), 1);
	ck_assert_int_eq(set(P("b"), "loligo.file.layout.stripe_count", "2"), -ENOTEMPTY);
	close(fd);

	/* written by another client: refused */
	ck_assert_int_eq(lfs_mount2(&fs, NULL), 0);
	touch(P("o"));
	ck_assert_int_eq(lfs_write_file(P2("o"), 5000, 3), 0);
	ck_assert_int_eq(set(P("o"), "loligo.file.layout.stripe_count", "2"), -ENOTEMPTY);
	/* still open there and not flushed (buffered, and written through with O_SYNC):
	 * the MDS takes the other client's caps back first, and its data with them */
	for (int sync = 0; sync < 2; sync++) {
		const char *name = sync ? "w_sync" : "w_buf";
		char path[PATH_MAX + 64];

		snprintf(path, sizeof(path), "%s", P(name));
		touch(path);
		fd = open(P2(name), O_WRONLY | (sync ? O_SYNC : 0));
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(pwrite(fd, "0123456789", 10, 4096), 10);
		ck_assert_int_eq(set(path, "loligo.file.layout.stripe_count", "2"), -ENOTEMPTY);
		close(fd);
		assert_xattr(path, "loligo.file.layout.stripe_count", "1");   /* unchanged */
	}

	/* truncated back to empty: allowed again */
	ck_assert_int_eq(truncate(P("e"), 0), 0);
	ck_assert_int_eq(set(P("e"), "loligo.file.layout.object_size", "65536"), 0);
	ck_assert_int_eq(lfs_write_file(P("e"), 300000, 9), 0);
	ck_assert_int_eq(lfs_check_file(P2("e"), 300000, 9), 0);
	ck_assert_int_eq(lfs_umount2(&fs), 0);
}
END_TEST

/* ---- the objects in the data pool ------------------------------------------ */

/* the fs_name line of the harness's config (RADOS: a filesystem per init) */
static void conf_value(const char *key, char *out, size_t len)
{
	FILE *f = fopen(fs.conf, "r");
	char line[1024];

	*out = '\0';
	while (f && fgets(line, sizeof(line), f)) {
		size_t k = strlen(key);

		if (!strncmp(line, key, k) && line[k] == ' ') {
			char *v = strchr(line, '=');

			if (v) {
				v += strspn(v + 1, " ") + 1;
				v[strcspn(v, "\n")] = '\0';
				snprintf(out, len, "%s", v);
			}
		}
	}
	if (f)
		fclose(f);
}

#define MAXOBJ 64

/* sizes of @ino's data objects (-1: missing), daemons stopped; returns how many exist */
static int objects_of(uint64_t ino, int64_t sizes[MAXOBJ])
{
	struct store_config sc = { 0 };
	struct store *st;
	struct store_pool *pool;
	char path[PATH_MAX + 16], name[256], rconf[PATH_MAX], prefix[32], **names = NULL;
	size_t n = 0;
	int found = 0;

	for (int i = 0; i < MAXOBJ; i++)
		sizes[i] = -1;
	conf_value("fs_name", name, sizeof(name));
	if (lfs_rados()) {
		conf_value("rados_conf", rconf, sizeof(rconf));
		sc.backend = "rados";
		sc.rados_conf = rconf;
		sc.rados_id = "admin";
	} else {
		/* the data pool is a store of its own beside the metadata one (store/local.c) */
		snprintf(path, sizeof(path), "%s/store.data", fs.dir);
		sc.backend = "local";
		sc.local_path = path;
	}
	if (!name[0])
		snprintf(name, sizeof(name), "loligo");
	strncat(name, "_data", sizeof(name) - strlen(name) - 1);
	ck_assert_int_eq(store_open(&sc, &st), 0);
	ck_assert_int_eq(store_pool_open(st, name, NULL, &pool), 0);
	ck_assert_int_eq(store_list_objects(pool, &names, &n), 0);
	snprintf(prefix, sizeof(prefix), "%" PRIx64 ".", ino);
	for (size_t i = 0; i < n; i++) {
		char *end;
		uint64_t o;

		if (!strncmp(names[i], prefix, strlen(prefix)) && strcmp(names[i] + strlen(prefix), "objs")) {
			o = strtoull(names[i] + strlen(prefix), &end, 16);
			if (!*end && o < MAXOBJ) {
				struct store_stat ss;

				ck_assert_int_eq(store_stat(pool, names[i], &ss), 0);
				sizes[o] = (int64_t)ss.size;
				found++;
			} else {
				ck_abort_msg("object %s: not a data object of a small file", names[i]);
			}
		}
		free(names[i]);
	}
	free(names);
	store_pool_close(pool);
	store_close(st);
	return found;
}

/* zero [off, off+len) of the pattern file's expected bytes and compare the file with it */
static void check_against(const char *path, const unsigned char *want, size_t size)
{
	unsigned char *got = malloc(size + 1);
	int fd = open(path, O_RDONLY);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	n = pread(fd, got, size + 1, 0);
	ck_assert_int_eq(n, (ssize_t)size);
	for (size_t i = 0; i < size; i++)
		if (got[i] != want[i])
			ck_abort_msg("%s: byte %zu is 0x%02x, want 0x%02x", path, i, got[i], want[i]);
	close(fd);
	free(got);
}

START_TEST(test_striped)
{
	const uint32_t os = 65536, su = 4096, sc = 4;
	const size_t size = 3 * os * sc + 12345;     /* three object sets and a bit */
	const size_t cut = os * sc + 5 * su + 100;   /* into the second object set */
	const size_t punch_off = 2 * su + 10, punch_len = 3 * su;
	struct store_file_layout ly;
	unsigned char *want = malloc(size);
	int64_t sizes[MAXOBJ];
	struct stat sb;
	int fd, nobj;

	ck_assert_int_eq(mkdir(P("s"), 0755), 0);
	ck_assert_int_eq(set(P("s"), "loligo.dir.layout", "object_size=65536 stripe_unit=4096 stripe_count=4"), 0);
	ck_assert_int_eq(lfs_write_file(P("s/f"), (off_t)size, 42), 0);
	ck_assert_int_eq(stat(P("s/f"), &sb), 0);
	assert_xattr(P("s/f"), "loligo.file.layout.stripe_count", "4");

	/* through the second client: every byte where it was written */
	ck_assert_int_eq(lfs_mount2(&fs, NULL), 0);
	assert_xattr(P2("s/f"), "loligo.file.layout.stripe_unit", "4096");
	ck_assert_int_eq(lfs_check_file(P2("s/f"), (off_t)size, 42), 0);
	/* and a write of the second client lands where the first reads it */
	fd = open(P2("s/f"), O_WRONLY);
	ck_assert_int_ge(fd, 0);
	for (size_t i = 0; i < size; i++)
		want[i] = lfs_pat(42, (off_t)i);
	memset(want + os + 3, 0xab, 3 * su);
	{
		unsigned char *b = malloc(3 * su);

		memset(b, 0xab, 3 * su);
		ck_assert_int_eq(pwrite(fd, b, 3 * su, os + 3), (ssize_t)(3 * su));
		free(b);
	}
	ck_assert_int_eq(fsync(fd), 0);
	close(fd);
	check_against(P("s/f"), want, size);

	/* truncate into the second object set, from the second client */
	ck_assert_int_eq(truncate(P2("s/f"), (off_t)cut), 0);
	check_against(P("s/f"), want, cut);
	/* punch across three units (three objects), from the first */
	fd = open(P("s/f"), O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)punch_off,
				   (off_t)punch_len), 0);
	close(fd);
	memset(want + punch_off, 0, punch_len);
	check_against(P2("s/f"), want, cut);
	check_against(P("s/f"), want, cut);

	/* the objects: daemons stopped, the pool listed */
	ck_assert_int_eq(lfs_umount2(&fs), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
	lfs_mds_stop(&fs, SIGTERM);
	nobj = objects_of((uint64_t)sb.st_ino, sizes);
	store_file_layout_init(&ly, os, su, sc);
	for (uint64_t o = 0; o < MAXOBJ; o++) {
		uint64_t keep = store_file_obj_keep(&ly, o, cut);

		if (!keep) {
			ck_assert_msg(sizes[o] == -1, "object %" PRIu64 " holds %" PRId64 " bytes past the end", o,
				      sizes[o]);
			continue;
		}
		ck_assert_msg(sizes[o] == (int64_t)keep, "object %" PRIu64 ": %" PRId64 " bytes, the layout says %"
			      PRIu64, o, sizes[o], keep);
	}
	/* two object sets of four: the file reached 4 objects at once */
	ck_assert_int_eq(nobj, 8);
	free(want);
}
END_TEST

/* ---- data pools ------------------------------------------------------------ */

/* An MDS admin command with string arguments; 0, or -1 with its error text in @err. */
static int mds_cmd(const char *prefix, const char *const *kv, char *err, size_t len)
{
	const char *e = "no answer";
	struct json_object *rep = lfs_mds_cmd(&fs, prefix, kv, &e);
	int r = rep && !e ? 0 : -1;

	if (err && len)
		snprintf(err, len, "%s", rep && !e ? "" : e ? e : "no answer");
	if (rep)
		json_object_put(rep);
	return r;
}

/* data pool names of `fs dump`, as one string "a,b," */
static void dump_pools(char *out, size_t len)
{
	struct json_object *rep = lfs_mds_cmd(&fs, "fs dump", NULL, NULL), *a, *f, *dp;
	size_t o = 0;

	*out = '\0';
	if (rep && json_object_object_get_ex(rep, "filesystems", &a) && json_object_array_length(a) > 0 &&
	    json_object_object_get_ex((f = json_object_array_get_idx(a, 0)), "data_pools", &dp))
		for (size_t i = 0; i < json_object_array_length(dp) && o < len; i++)
			o += (size_t)snprintf(out + o, len - o, "%s,",
					      json_object_get_string(json_object_array_get_idx(dp, i)));
	if (rep)
		json_object_put(rep);
}

/* `df`: the objects pool @name holds, -1 when it is not listed */
static long long df_objects(const char *name)
{
	struct json_object *rep = lfs_mds_cmd(&fs, "df", NULL, NULL), *a, *e, *v, *st;
	long long n = -1;

	if (rep && json_object_object_get_ex(rep, "pools", &a))
		for (size_t i = 0; i < json_object_array_length(a); i++) {
			e = json_object_array_get_idx(a, i);
			if (json_object_object_get_ex(e, "name", &v) && !strcmp(json_object_get_string(v), name) &&
			    json_object_object_get_ex(e, "stats", &st) && json_object_object_get_ex(st, "objects", &v))
				n = json_object_get_int64(v);
		}
	if (rep)
		json_object_put(rep);
	return n;
}

/* objects of file @ino in pool @pool (daemons stopped): data objects, and whether its index is there */
static int objects_in(const char *pool, uint64_t ino, bool *index)
{
	struct store_config sc = { 0 };
	struct store *st;
	struct store_pool *p;
	char path[PATH_MAX + 16], rconf[PATH_MAX], prefix[32], idx[64], **names = NULL;
	size_t n = 0;
	int found = 0;

	if (lfs_rados()) {
		conf_value("rados_conf", rconf, sizeof(rconf));
		sc.backend = "rados";
		sc.rados_conf = rconf;
		sc.rados_id = "admin";
	} else {
		snprintf(path, sizeof(path), "%s/store.data", fs.dir);
		sc.backend = "local";
		sc.local_path = path;
	}
	ck_assert_int_eq(store_open(&sc, &st), 0);
	ck_assert_int_eq(store_pool_open(st, pool, NULL, &p), 0);
	ck_assert_int_eq(store_list_objects(p, &names, &n), 0);
	snprintf(prefix, sizeof(prefix), "%" PRIx64 ".", ino);
	snprintf(idx, sizeof(idx), "%" PRIx64 ".objs", ino);
	*index = false;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(names[i], idx))
			*index = true;
		else if (!strncmp(names[i], prefix, strlen(prefix)))
			found++;
		free(names[i]);
	}
	free(names);
	store_pool_close(p);
	store_close(st);
	return found;
}

START_TEST(test_pools)
{
	char fsname[256], first[300], second[300], err[1024], list[1024];
	const char *kv[5];
	struct stat sb;
	bool index;
	int fd;

	conf_value("fs_name", fsname, sizeof(fsname));
	if (!fsname[0])
		snprintf(fsname, sizeof(fsname), "loligo");
	snprintf(first, sizeof(first), "%s_data", fsname);
	snprintf(second, sizeof(second), "%s_second", fsname);   /* ours alone on a shared cluster */
	kv[0] = "fs_name", kv[1] = fsname, kv[2] = "pool", kv[3] = second, kv[4] = NULL;

	/* not one of ours yet: a layout cannot name it */
	ck_assert_int_eq(mkdir(P("p"), 0755), 0);
	ck_assert_int_eq(set(P("p"), "loligo.dir.layout.pool", second), -EINVAL);
	{
		/* through the CLI, as an operator does it */
		char cli[PATH_MAX], out[PATH_MAX + 16];
		char *argv[] = { (char *)lfs_bin("tools/cli/loligo", cli, sizeof(cli)), "-c", fs.conf, "fs",
				 "add_data_pool", fsname, second, NULL };

		snprintf(out, sizeof(out), "%s/cli.out", fs.dir);
		ck_assert_msg(lfs_run(argv, 30000, out) == 0, "loligo fs add_data_pool failed (see %s)", out);
	}
	dump_pools(list, sizeof(list));
	ck_assert_msg(strstr(list, second), "fs dump data_pools: %s", list);
	ck_assert_int_eq(set(P("p"), "loligo.dir.layout.pool", second), 0);
	assert_xattr(P("p"), "loligo.dir.layout.pool", second);
	/* a file below: its data in the second pool, striped there too */
	ck_assert_int_eq(set(P("p"), "loligo.dir.layout", "stripe_unit=65536 stripe_count=2 object_size=262144"), 0);
	ck_assert_int_eq(lfs_write_file(P("p/f"), 3 << 20, 11), 0);
	assert_xattr(P("p/f"), "loligo.file.layout.pool", second);
	ck_assert_int_eq(stat(P("p/f"), &sb), 0);
	ck_assert_int_eq(lfs_mount2(&fs, NULL), 0);
	ck_assert_int_eq(lfs_check_file(P2("p/f"), 3 << 20, 11), 0);
	/* written through the second client, read through the first */
	ck_assert_int_eq(lfs_write_file(P2("p/g"), 700000, 12), 0);
	ck_assert_int_eq(lfs_check_file(P("p/g"), 700000, 12), 0);
	ck_assert_int_eq(lfs_umount2(&fs), 0);
	/* `loligo df` lists it with what it holds (RADOS: the pool's own statistics, which lag) */
	if (!lfs_rados())
		ck_assert_int_ge(df_objects(second), 12);
	else
		ck_assert_int_ge(df_objects(second), 0);

	/* in use: refused, with a reason; the first pool never */
	ck_assert_int_ne(mds_cmd("fs rm_data_pool", kv, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "in use") || strstr(err, "files use it"), "rm_data_pool of a used pool: %s", err);
	kv[3] = first;
	ck_assert_int_ne(mds_cmd("fs rm_data_pool", kv, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "first data pool"), "rm_data_pool of the first pool: %s", err);
	kv[3] = second;

	/* journaled: after a kill -9 the table (and the layouts) are back */
	lfs_mds_stop(&fs, SIGKILL);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	dump_pools(list, sizeof(list));
	ck_assert_msg(strstr(list, second), "fs dump data_pools after a restart: %s", list);
	assert_xattr(P("p/f"), "loligo.file.layout.pool", second);
	ck_assert_int_eq(lfs_check_file(P("p/f"), 3 << 20, 11), 0);

	/* the objects: in the second pool, the index in the first */
	fd = open(P("p/f"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(lfs_umount(&fs), 0);
	lfs_mds_stop(&fs, SIGTERM);
	ck_assert_int_eq(objects_in(second, (uint64_t)sb.st_ino, &index), 12);   /* 3 MiB / 256 KiB */
	ck_assert_msg(!index, "the object index is in the first pool");
	ck_assert_int_eq(objects_in(first, (uint64_t)sb.st_ino, &index), 0);
	ck_assert_msg(index, "the object index is in the first pool");

	/* nothing uses it any more (the files gone and purged, the directory's
	 * layout back to the first pool): removed */
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	ck_assert_int_eq(unlink(P("p/f")), 0);
	ck_assert_int_eq(unlink(P("p/g")), 0);
	ck_assert_int_eq(set(P("p"), "loligo.dir.layout.pool", first), 0);
	LT_WAIT_UNTIL(mds_cmd("fs rm_data_pool", kv, err, sizeof(err)) == 0,
		      "rm_data_pool after the files are gone: %s", err);
	dump_pools(list, sizeof(list));
	ck_assert_msg(!strstr(list, second), "fs dump data_pools after rm: %s", list);
	ck_assert_int_eq(set(P("p"), "loligo.dir.layout.pool", second), -EINVAL);
}
END_TEST

START_TEST(test_ec_pool)
{
	const char *ec = getenv("LOLIGO_E2E_EC_POOL");
	char fsname[256], err[1024];
	const char *kv[5];
	const size_t size = (3 << 20) + 4321, cut = (1 << 20) + 77;
	struct stat sb;
	bool index;
	int fd;

	ck_assert_ptr_nonnull(ec);
	ck_assert(lfs_rados());
	conf_value("fs_name", fsname, sizeof(fsname));
	kv[0] = "fs_name", kv[1] = fsname, kv[2] = "pool", kv[3] = ec, kv[4] = NULL;
	ck_assert_msg(mds_cmd("fs add_data_pool", kv, err, sizeof(err)) == 0, "add_data_pool %s: %s", ec, err);
	ck_assert_int_eq(mkdir(P("ec"), 0755), 0);
	ck_assert_int_eq(set(P("ec"), "loligo.dir.layout", "object_size=1048576 stripe_unit=65536 stripe_count=4"), 0);
	ck_assert_int_eq(set(P("ec"), "loligo.dir.layout.pool", ec), 0);
	ck_assert_int_eq(lfs_write_file(P("ec/f"), (off_t)size, 21), 0);
	assert_xattr(P("ec/f"), "loligo.file.layout.pool", ec);
	ck_assert_int_eq(stat(P("ec/f"), &sb), 0);
	ck_assert_int_eq(lfs_mount2(&fs, NULL), 0);
	ck_assert_int_eq(lfs_check_file(P2("ec/f"), (off_t)size, 21), 0);
	/* partial overwrites (allow_ec_overwrites), a truncate and a punch */
	ck_assert_int_eq(truncate(P2("ec/f"), (off_t)cut), 0);
	{
		unsigned char *want = malloc(cut);

		for (size_t i = 0; i < cut; i++)
			want[i] = lfs_pat(21, (off_t)i);
		fd = open(P("ec/f"), O_RDWR);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 70000, 200000), 0);
		ck_assert_int_eq(pwrite(fd, "overwrite", 9, 300001), 9);
		ck_assert_int_eq(fsync(fd), 0);
		close(fd);
		memset(want + 70000, 0, 200000);
		memcpy(want + 300001, "overwrite", 9);
		check_against(P2("ec/f"), want, cut);
		free(want);
	}
	ck_assert_int_eq(lfs_umount2(&fs), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
	lfs_mds_stop(&fs, SIGTERM);
	/* 1 MiB + 77 bytes over 4 objects of the first set */
	ck_assert_int_eq(objects_in(ec, (uint64_t)sb.st_ino, &index), 4);
	ck_assert_msg(!index, "an object index in the EC pool");
	{
		char first[300];

		snprintf(first, sizeof(first), "%s_data", fsname);
		objects_in(first, (uint64_t)sb.st_ino, &index);
		ck_assert_msg(index, "the object index is in the first pool");
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fuse_layout");

	lfs_suite_add(s, "dir_inherit", test_dir_inherit, setup, teardown, 300);
	lfs_suite_add(s, "file_empty", test_file_empty, setup, teardown, 300);
	lfs_suite_add(s, "striped", test_striped, setup, teardown, 300);
	lfs_suite_add(s, "pools", test_pools, setup, teardown, 300);
	/* on a cluster with an erasure-coded pool only (fuse_layout_ec_rados.sh) */
	if (getenv("LOLIGO_E2E_EC_POOL"))
		lfs_suite_add(s, "ec_pool", test_ec_pool, setup, teardown, 300);
	return lfs_suite_main(s, "test_fuse_layout");
}
