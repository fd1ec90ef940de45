/* test_log.c - per-subsystem levels, their config options, the line format. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"

static char logpath[300];
#define SUITE "log"
#include "test_tmpdir.h"

static void setup(void)
{
	int fd;

	snprintf(logpath, sizeof(logpath), "%s/log-XXXXXX", dir);
	fd = mkstemp(logpath);
	ck_assert_int_ge(fd, 0);
	close(fd);
	cfg_init("mds");
	log_init("test_log");
	ck_assert_int_eq(log_set_file(logpath), 0);
}

static void teardown(void)
{
	log_set_file(NULL);
	unlink(logpath);
}

static char *slurp(void)
{
	static char buf[65536];
	FILE *f = fopen(logpath, "r");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

START_TEST(test_defaults_and_names)
{
	ck_assert_int_eq(log_subsys_by_name("mds"), LOG_SS_MDS);
	ck_assert_int_eq(log_subsys_by_name("nfs"), LOG_SS_NFS);
	ck_assert_int_eq(log_subsys_by_name("nope"), -1);
	ck_assert_str_eq(log_subsys_name(LOG_SS_JOURNAL), "journal");
	ck_assert(log_enabled(LOG_SS_MDS, 1));
	ck_assert(!log_enabled(LOG_SS_MDS, 2));
	ck_assert(log_enabled(LOG_SS_MDS, -1));
}
END_TEST

START_TEST(test_level_filters_output)
{
	char *s;

	dout(MDS, 1, "visible-one %d", 1);
	dout(MDS, 10, "hidden-ten");
	log_set_level(LOG_SS_MDS, 10);
	dout(MDS, 10, "visible-ten");
	dout(MDS, 11, "hidden-eleven");
	dout(STORE, 5, "hidden-store");
	derr(STORE, "an error %s", "always");
	dinfo(STORE, "info always");
	s = slurp();
	ck_assert_ptr_nonnull(strstr(s, "visible-one 1"));
	ck_assert_ptr_nonnull(strstr(s, "visible-ten"));
	ck_assert_ptr_null(strstr(s, "hidden"));
	ck_assert_ptr_nonnull(strstr(s, "an error always"));
	ck_assert_ptr_nonnull(strstr(s, "info always"));
}
END_TEST

START_TEST(test_line_format)
{
	char expect[64], *s;

	dout(JOURNAL, 0, "format check");
	s = slurp();
	/* timestamp, program, thread id, subsystem, level */
	ck_assert(s[4] == '-' && s[10] == 'T');
	ck_assert_ptr_nonnull(strstr(s, "test_log["));
	snprintf(expect, sizeof(expect), " %d journal 0: format check\n", (int)syscall(SYS_gettid));
	ck_assert_ptr_nonnull(strstr(s, expect));
}
END_TEST

START_TEST(test_config_option_drives_level)
{
	char err[256];
	char *s;

	ck_assert(!log_enabled(LOG_SS_NFS, 7));
	ck_assert_int_eq(cfg_set(CFG_debug_nfs, "7", true, err, sizeof(err)), 0);
	ck_assert(log_enabled(LOG_SS_NFS, 7));
	ck_assert(!log_enabled(LOG_SS_NFS, 8));
	dout(NFS, 7, "nfs at seven");
	s = slurp();
	ck_assert_ptr_nonnull(strstr(s, "nfs at seven"));
	/* cfg_init resets to the defaults again */
	cfg_init("mds");
	ck_assert(!log_enabled(LOG_SS_NFS, 7));
}
END_TEST

START_TEST(test_args_applied_at_start)
{
	char *argv[] = { "prog", "--debug_rpc=12", "--debug-client", "3", NULL };
	int argc = 4;
	char err[256];

	ck_assert_int_eq(cfg_parse_args(&argc, argv, err, sizeof(err)), 0);
	ck_assert_int_eq(argc, 1);
	ck_assert(log_enabled(LOG_SS_RPC, 12));
	ck_assert(log_enabled(LOG_SS_CLIENT, 3));
	ck_assert(!log_enabled(LOG_SS_CLIENT, 4));
	/* log_init after parsing keeps the configured levels */
	log_init("test_log");
	ck_assert(log_enabled(LOG_SS_RPC, 12));
}
END_TEST

START_TEST(test_log_file_option)
{
	char other[320], err[256], *s;
	int fd;

	snprintf(other, sizeof(other), "%s/other-XXXXXX", dir);
	fd = mkstemp(other);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(cfg_set(CFG_log_file, other, true, err, sizeof(err)), 0);
	dinfo(COMMON, "to the other file");
	ck_assert_int_eq(cfg_set(CFG_log_file, logpath, true, err, sizeof(err)), 0);
	s = slurp();
	ck_assert_ptr_null(strstr(s, "to the other file"));
	{
		FILE *f = fopen(other, "r");
		char buf[1024];
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);

		buf[n] = '\0';
		fclose(f);
		ck_assert_ptr_nonnull(strstr(buf, "to the other file"));
	}
	unlink(other);
	ck_assert_int_lt(log_set_file("/nonexistent-dir/x.log"), 0);
}
END_TEST

/* Ceph's N/M: N is written, up to M is kept in memory and written by a dump. */
START_TEST(test_memory_level_and_dump)
{
	char err[256], *s, *begin;

	ck_assert_int_eq(cfg_set(CFG_debug_mds, "1/10", true, err, sizeof(err)), 0);
	ck_assert(log_enabled(LOG_SS_MDS, 10));
	dout(MDS, 1, "written-and-kept");
	dout(MDS, 7, "kept-only-seven");
	dout(MDS, 11, "neither-eleven");
	s = slurp();
	ck_assert_ptr_nonnull(strstr(s, "written-and-kept"));
	ck_assert_ptr_null(strstr(s, "kept-only-seven"));
	ck_assert_uint_ge(log_dump_recent(), 2);
	s = slurp();
	begin = strstr(s, "--- begin dump of recent events ---");
	ck_assert_ptr_nonnull(begin);
	ck_assert_ptr_nonnull(strstr(begin, "kept-only-seven"));
	ck_assert_ptr_nonnull(strstr(begin, "--- end dump of recent events ---"));
	ck_assert_ptr_null(strstr(s, "neither-eleven"));
	cfg_init("mds");
}
END_TEST

/* logrotate: the file is renamed away, log_reopen() starts a new one by name. */
START_TEST(test_reopen_after_rename)
{
	char moved[340], *s;
	FILE *f;
	char buf[4096];
	size_t n;

	dinfo(COMMON, "before-rotate");
	snprintf(moved, sizeof(moved), "%s.1", logpath);
	ck_assert_int_eq(rename(logpath, moved), 0);
	dinfo(COMMON, "still-old-file");
	ck_assert_int_eq(log_reopen(), 0);
	dinfo(COMMON, "after-rotate");
	s = slurp();
	ck_assert_ptr_nonnull(strstr(s, "after-rotate"));
	ck_assert_ptr_null(strstr(s, "before-rotate"));
	f = fopen(moved, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "before-rotate"));
	ck_assert_ptr_nonnull(strstr(buf, "still-old-file"));
	ck_assert_ptr_null(strstr(buf, "after-rotate"));
	unlink(moved);
}
END_TEST

/* $name, $pid, $cluster in log_file/admin_socket (Ceph's metavariables). */
START_TEST(test_metavariables)
{
	char out[256], expect[256], err[256];

	cfg_set_identity("client", "client.alice");
	ck_assert_int_eq(cfg_set(CFG_fs_name, "cephfs", false, err, sizeof(err)), 0);
	cfg_expand("/run/$cluster-$name.$pid.asok", out, sizeof(out));
	snprintf(expect, sizeof(expect), "/run/cephfs-client.alice.%d.asok", (int)getpid());
	ck_assert_str_eq(out, expect);
	cfg_expand("$type/$id/$nope/$namex/$", out, sizeof(out));
	ck_assert_str_eq(out, "client/alice/$nope/$namex/$");
	cfg_expand("$cluster$cluster", out, 8);
	ck_assert_str_eq(out, "cephfsc");	/* truncated, terminated */
	cfg_set_identity("", "");
}
END_TEST

START_TEST(test_long_line)
{
	char big[5000], *s;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	dinfo(COMMON, "long:%s:end", big);
	s = slurp();
	ck_assert_ptr_nonnull(strstr(s, "xxx:end\n"));
}
END_TEST

int main(void)
{
	TCase *tc = tcase_create("log");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_defaults_and_names);
	tcase_add_test(tc, test_level_filters_output);
	tcase_add_test(tc, test_line_format);
	tcase_add_test(tc, test_config_option_drives_level);
	tcase_add_test(tc, test_args_applied_at_start);
	tcase_add_test(tc, test_log_file_option);
	tcase_add_test(tc, test_long_line);
	tcase_add_test(tc, test_memory_level_and_dump);
	tcase_add_test(tc, test_reopen_after_rename);
	tcase_add_test(tc, test_metavariables);
	return tmpdir_run("log", tc);
}
