/*
 * test_fuse_fsset.c - `loligo fs set` on a running filesystem (issue 22.5),
 * through a real loligo-mds and real FUSE mounts.
 *
 *   max_file_size   lowered online: the mounted client refuses truncates and
 *                   writes past it at once (EFBIG), files already larger keep
 *                   their bytes; the value survives a kill -9 of the MDS
 *                   (journaled) and a raise lets the same truncate through.
 *   refuse          refuse_client_session: a new mount is refused with the
 *                   reason in its log, the mounted client keeps working (and
 *                   resumes its session across an MDS restart); lifted, the
 *                   new mount works.
 *   bad_values      absurd or unknown settings are refused with a message
 *                   that says what is wrong, and nothing changes.
 *   kept            session_timeout and standby_count_wanted set here win
 *                   over the config file after a restart.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/admin_sock.h"
#include "tests/e2e/test_fuse_harness.h"
#include "tests/lib/wait.h"

static struct lfs fs;

static void setup(void)
{
	ck_assert_int_eq(lfs_init_with(&fs, "mds_session_timeout = 60\n"), 0);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
}

static void teardown(void)
{
	lfs_cleanup(&fs);
}

#define P(rel) lfs_at(fs.mnt, (rel))

/* The filesystem's entry of `fs dump` (a new reference), or NULL. */
static struct json_object *fs_entry(void)
{
	struct json_object *rep = lfs_mds_cmd(&fs, "fs dump", NULL, NULL), *a, *f = NULL;

	if (rep && json_object_object_get_ex(rep, "filesystems", &a) && json_object_array_length(a) > 0)
		f = json_object_get(json_object_array_get_idx(a, 0));
	if (rep)
		json_object_put(rep);
	return f;
}

static char fs_name[128];

static const char *name_of_fs(void)
{
	struct json_object *f = fs_entry(), *n;

	ck_assert_ptr_nonnull(f);
	ck_assert(json_object_object_get_ex(f, "name", &n));
	snprintf(fs_name, sizeof(fs_name), "%s", json_object_get_string(n));
	json_object_put(f);
	return fs_name;
}

static int64_t fs_field(const char *key)
{
	struct json_object *f = fs_entry(), *v;
	int64_t n = -1;

	if (f && json_object_object_get_ex(f, key, &v))
		n = json_object_get_int64(v);
	if (f)
		json_object_put(f);
	return n;
}

/* fs set; the reply's error text copied into @err (NULL: it worked) */
static int fs_set(const char *var, const char *val, char *err, size_t len)
{
	const char *kv[] = { "fs_name", fs_name, "var", var, "val", val, NULL };
	const char *e = NULL;
	struct json_object *rep = lfs_mds_cmd(&fs, "fs set", kv, &e);

	if (err && len)
		snprintf(err, len, "%s", e ? e : "");
	if (rep)
		json_object_put(rep);
	return rep && !e ? 0 : -1;
}

/* The max_file_size the mount's client knows (its `mds_sessions`), or -1. */
static int64_t client_max_file_size(void)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *v;
	int64_t n = -1;

	json_object_object_add(req, "prefix", json_object_new_string("mds_sessions"));
	if (asok_request(fs.asok, req, &rep, 10000) == 0 && json_object_is_type(rep, json_type_array) &&
	    json_object_array_length(rep) > 0 &&
	    json_object_object_get_ex(json_object_array_get_idx(rep, 0), "max_file_size", &v))
		n = json_object_get_int64(v);
	json_object_put(req);
	if (rep)
		json_object_put(rep);
	return n;
}

/* Sessions with a connection bound (`session ls`). */
static int connected_sessions(void)
{
	struct json_object *rep = lfs_mds_cmd(&fs, "session ls", NULL, NULL), *e, *v;
	int n = 0;

	if (rep && json_object_is_type(rep, json_type_array))
		for (size_t i = 0; i < json_object_array_length(rep); i++) {
			e = json_object_array_get_idx(rep, i);
			n += json_object_object_get_ex(e, "connected", &v) && json_object_get_boolean(v);
		}
	if (rep)
		json_object_put(rep);
	return n;
}

static bool file_has(const char *path, const char *needle)
{
	static char buf[1 << 16];
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

START_TEST(test_max_file_size_online)
{
	struct stat st;
	char err[512];
	int fd;

	name_of_fs();
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	ck_assert_int_eq(truncate(P("big"), 0), -1);    /* not there yet */
	fd = open(P("big"), O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 3 << 20), 0);
	close(fd);

	/* lowered to 1 MiB while mounted */
	ck_assert_msg(fs_set("max_file_size", "1M", err, sizeof(err)) == 0, "fs set max_file_size 1M: %s", err);
	ck_assert_int_eq(fs_field("max_file_size"), 1 << 20);
	/* pushed to the connected client (MDSP_SESSION_CONFIG), which applies
	 * it on its reader thread: wait for that, not for the clock */
	LT_WAIT_UNTIL(client_max_file_size() == 1 << 20, "the mount was not told the new max_file_size (%lld)",
		      (long long)client_max_file_size());
	fd = open(P("f"), O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	errno = 0;
	ck_assert_int_eq(ftruncate(fd, 2 << 20), -1);
	ck_assert_int_eq(errno, EFBIG);
	errno = 0;
	ck_assert_int_eq(pwrite(fd, "x", 1, 1 << 20), -1);
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_int_eq(pwrite(fd, "x", 1, (1 << 20) - 1), 1);     /* up to the limit */
	close(fd);
	/* a file already larger keeps its bytes */
	ck_assert_int_eq(stat(P("big"), &st), 0);
	ck_assert_int_eq(st.st_size, 3 << 20);

	/* journaled: the same after a kill -9 of the MDS (the client learns it
	 * again from the OPEN of its reconnect, the MDS checks it itself) */
	lfs_mds_stop(&fs, SIGKILL);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	LT_WAIT_UNTIL(fs_field("max_file_size") == 1 << 20, "max_file_size did not survive the restart (%lld)",
		      (long long)fs_field("max_file_size"));
	errno = 0;
	ck_assert_int_eq(truncate(P("f"), 2 << 20), -1);
	ck_assert_int_eq(errno, EFBIG);
	/* (a client cut off when the setting changes learns it from the OPEN
	 * of its reconnect: change it once the mount is back) */
	LT_WAIT_UNTIL(connected_sessions() == 1, "the mount did not reconnect after the MDS restart");

	/* raised again: the same truncate goes through */
	ck_assert_msg(fs_set("max_file_size", "1T", err, sizeof(err)) == 0, "fs set max_file_size 1T: %s", err);
	LT_WAIT_UNTIL(client_max_file_size() == 1ll << 40, "the mount was not told the raise (%lld)",
		      (long long)client_max_file_size());
	ck_assert_msg(truncate(P("f"), 2 << 20) == 0, "truncate to 2 MiB after the raise: %s", strerror(errno));
	ck_assert_int_eq(stat(P("f"), &st), 0);
	ck_assert_int_eq(st.st_size, 2 << 20);
	ck_assert_int_eq(lfs_umount(&fs), 0);
}
END_TEST

START_TEST(test_refuse_client_session)
{
	char err[512], log2[PATH_MAX + 32];

	name_of_fs();
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	ck_assert_msg(fs_set("refuse_client_session", "true", err, sizeof(err)) == 0, "fs set: %s", err);

	/* a new client is refused, and told why */
	ck_assert_int_ne(lfs_mount2(&fs, NULL), 0);
	snprintf(log2, sizeof(log2), "%s/client2.log", fs.dir);
	ck_assert_msg(file_has(log2, "refuses new client sessions"), "the refused mount's log (%s) does not say why",
		      log2);

	/* the mounted one works on, also across an MDS restart (it resumes) */
	ck_assert_int_eq(lfs_write_file(P("a"), 1000, 1), 0);
	lfs_mds_stop(&fs, SIGKILL);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(lfs_write_file(P("b"), 1000, 2), 0);
	ck_assert_int_eq(lfs_check_file(P("a"), 1000, 1), 0);
	ck_assert_int_ne(lfs_mount2(&fs, NULL), 0);     /* still refused: kept with the filesystem */

	ck_assert_msg(fs_set("refuse_client_session", "false", err, sizeof(err)) == 0, "fs set: %s", err);
	ck_assert_int_eq(lfs_mount2(&fs, NULL), 0);
	ck_assert_int_eq(lfs_umount2(&fs), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
}
END_TEST

START_TEST(test_bad_values)
{
	static const char *const bad[][3] = {
		{ "max_file_size", "0", "not a size" },
		{ "max_file_size", "-1", "not a size" },
		{ "max_file_size", "12Q", "not a size" },
		{ "max_file_size", "9223372036854775808", "not a size" },
		{ "max_file_size", "99999999999P", "not a size" },
		{ "refuse_client_session", "maybe", "not true or false" },
		{ "session_timeout", "0", "seconds" },
		{ "session_timeout", "nan", "seconds" },
		{ "standby_count_wanted", "100000", "count" },
		{ "max_mds", "2", "unknown setting" },
	};
	const char *kv[] = { "fs_name", "nosuchfs", "var", "max_file_size", "val", "1G", NULL };
	const char *e = NULL;
	struct json_object *rep;
	char err[512];
	int64_t before;

	name_of_fs();
	before = fs_field("max_file_size");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(fs_set(bad[i][0], bad[i][1], err, sizeof(err)) != 0, "fs set %s %s was accepted",
			      bad[i][0], bad[i][1]);
		ck_assert_msg(strstr(err, bad[i][2]), "fs set %s %s: '%s' does not say '%s'", bad[i][0], bad[i][1],
			      err, bad[i][2]);
	}
	rep = lfs_mds_cmd(&fs, "fs set", kv, &e);
	ck_assert_ptr_nonnull(rep);
	ck_assert_msg(e && strstr(e, "no filesystem 'nosuchfs'"), "a wrong fs name: %s", e ? e : "accepted");
	json_object_put(rep);
	ck_assert_int_eq(fs_field("max_file_size"), before);
}
END_TEST

START_TEST(test_kept_over_config)
{
	struct json_object *f, *v;
	char err[512];

	name_of_fs();
	ck_assert_msg(fs_set("session_timeout", "45", err, sizeof(err)) == 0, "fs set: %s", err);
	ck_assert_msg(fs_set("standby_count_wanted", "2", err, sizeof(err)) == 0, "fs set: %s", err);
	lfs_mds_stop(&fs, SIGTERM);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);       /* the config file says 60 and 0 */
	f = fs_entry();
	ck_assert_ptr_nonnull(f);
	ck_assert(json_object_object_get_ex(f, "session_timeout", &v));
	ck_assert_msg(json_object_get_double(v) == 45.0, "session_timeout %g after a restart (set: 45)",
		      json_object_get_double(v));
	ck_assert(json_object_object_get_ex(f, "standby_count_wanted", &v));
	ck_assert_int_eq(json_object_get_int64(v), 2);
	json_object_put(f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fuse_fsset");

	lfs_suite_add(s, "max_file_size_online", test_max_file_size_online, setup, teardown, 300);
	lfs_suite_add(s, "refuse_client_session", test_refuse_client_session, setup, teardown, 300);
	lfs_suite_add(s, "bad_values", test_bad_values, setup, teardown, 120);
	lfs_suite_add(s, "kept_over_config", test_kept_over_config, setup, teardown, 120);
	return lfs_suite_main(s, "test_fuse_fsset");
}
