/*
 * test_config.c - the option table: defaults, INI files, section
 * precedence, command-line overrides, runtime changes and every kind of
 * bad input a user can type.
 */
#include <check.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"

static char err[512];

#define SUITE "config"
#include "test_tmpdir.h"

static void setup(void)
{
	cfg_init("mds");
	err[0] = '\0';
}

static const char *write_conf(const char *name, const char *text)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	return path;
}

START_TEST(test_defaults)
{
	char buf[64];

	ck_assert_str_eq(cfg_str(CFG_fs_name, buf, sizeof(buf)), "loligo");
	ck_assert_int_eq(cfg_int(CFG_debug_mds), 1);
	ck_assert(cfg_double(CFG_rados_osd_op_timeout) == 10.0);
	ck_assert_str_eq(cfg_get_string(CFG_rados_osd_op_timeout, buf, sizeof(buf)), "10");
	ck_assert_str_eq(cfg_str(CFG_admin_socket, buf, sizeof(buf)), "");
	/* a short buffer truncates but stays terminated */
	ck_assert_str_eq(cfg_str(CFG_fs_name, buf, 4), "lol");
	{
		char *s = cfg_strdup(CFG_store_backend);

		ck_assert_str_eq(s, "local");
		free(s);
	}
	/* every default in the table is valid for its type */
	for (int id = 0; id < CFG_MAX; id++) {
		char e[256];

		ck_assert_msg(cfg_set(id, cfg_options[id].def, false, e, sizeof(e)) == 0,
			      "default of %s: %s", cfg_options[id].name, e);
		ck_assert_ptr_nonnull(cfg_options[id].desc);
	}
}
END_TEST

START_TEST(test_lookup)
{
	ck_assert_int_eq(cfg_lookup("debug_mds"), CFG_debug_mds);
	ck_assert_int_eq(cfg_lookup("debug-mds"), CFG_debug_mds);
	ck_assert_int_eq(cfg_lookup("debug mds"), CFG_debug_mds);
	ck_assert_int_eq(cfg_lookup("  debug_mds "), CFG_debug_mds);
	ck_assert_int_eq(cfg_lookup("debug_mdss"), -1);
	ck_assert_int_eq(cfg_lookup(""), -1);
	ck_assert_int_eq(cfg_lookup(NULL), -1);
}
END_TEST

START_TEST(test_ini_sections_precedence)
{
	const char *p = write_conf("loligo.conf",
				   "; a comment\n"
				   "[global]\n"
				   "fs_name = global_fs\n"
				   "debug_mds = 5\n"
				   "debug store = 3   # ceph style spaces\n"
				   "\n"
				   "[mds]\n"
				   "debug_mds = 20\n"
				   "\n"
				   "[client]\n"
				   "debug_mds = 7\n"
				   "client_only_option_we_do_not_know = 1\n"
				   "[global]\n"
				   "debug_journal = 4\n");
	char buf[64];

	ck_assert_int_eq(cfg_load_file(p, err, sizeof(err)), 0);
	ck_assert_str_eq(cfg_str(CFG_fs_name, buf, sizeof(buf)), "global_fs");
	/* [mds] wins over [global] whatever the order in the file */
	ck_assert_int_eq(cfg_int(CFG_debug_mds), 20);
	ck_assert_int_eq(cfg_int(CFG_debug_store), 3);
	ck_assert_int_eq(cfg_int(CFG_debug_journal), 4);

	/* the same file read by another daemon */
	cfg_init("client");
	ck_assert_int_eq(cfg_load_file(p, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "loligo.conf:12: unknown option 'client_only_option_we_do_not_know'"),
		      "%s", err);
}
END_TEST

START_TEST(test_ini_section_after_global_override)
{
	const char *p = write_conf("b.conf", "[mds]\ndebug_mds = 9\n[global]\ndebug_mds = 2\n");

	ck_assert_int_eq(cfg_load_file(p, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_int(CFG_debug_mds), 9);
}
END_TEST

/* loligo-fuse is the client and the NFS gateway: it reads [client] and [nfs],
 * not [mds], and a name that only prefixes ours ([clientx]) is not ours. */
START_TEST(test_ini_several_sections)
{
	const char *p = write_conf("c.conf",
				   "[global]\nnfs4_grace_time = 1\ndebug_nfs = 1\n"
				   "[nfs]\nnfs4_grace_time = 7\n"
				   "[client]\ndebug_nfs = 6\n"
				   "[mds]\ndebug_nfs = 20\nnfs4_grace_time = 30\n"
				   "[clientx]\ndebug_nfs = 21\n");

	cfg_init("client,nfs");
	ck_assert_int_eq(cfg_load_file(p, err, sizeof(err)), 0);
	ck_assert(cfg_double(CFG_nfs4_grace_time) == 7.0);
	ck_assert_int_eq(cfg_int(CFG_debug_nfs), 6);
}
END_TEST

START_TEST(test_ini_unknown_option)
{
	const char *p = write_conf("u.conf", "[global]\nfs_name = a\n\ndebug_msd = 10\n");
	char buf[64];

	ck_assert_int_eq(cfg_load_file(p, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "u.conf:4: unknown option 'debug_msd'"), "%s", err);
	/* nothing of a bad file is applied */
	ck_assert_str_eq(cfg_str(CFG_fs_name, buf, sizeof(buf)), "loligo");
}
END_TEST

START_TEST(test_ini_bad_values)
{
	static const struct {
		const char *text;
		const char *msg;
	} cases[] = {
		{ "[global]\ndebug_mds = ten\n", "x.conf:2: invalid value 'ten' for option 'debug_mds'" },
		{ "[mds]\ndebug_mds = 1x\n", "x.conf:2: invalid value '1x'" },
		{ "[global]\nrados_osd_op_timeout = soon\n", "expected a number of seconds" },
		{ "[global]\nrados_osd_op_timeout = -1\n", "out of range" },
		{ "[global]\ndebug_mds = 99999999999999999999\n", "out of range" },
		{ "[global]\nthis is not an assignment\n", "x.conf:2: syntax error" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *p = write_conf("x.conf", cases[i].text);

		err[0] = '\0';
		ck_assert_int_eq(cfg_load_file(p, err, sizeof(err)), -EINVAL);
		ck_assert_msg(strstr(err, cases[i].msg), "case %zu: got '%s'", i, err);
	}
	ck_assert_int_eq(cfg_int(CFG_debug_mds), 1);
}
END_TEST

START_TEST(test_missing_file)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/nope.conf", dir);
	ck_assert_int_eq(cfg_load_file(path, err, sizeof(err)), -ENOENT);
	ck_assert_msg(strstr(err, "nope.conf") && strstr(err, "No such file"), "%s", err);
}
END_TEST

START_TEST(test_types)
{
	const char *p = write_conf("t.conf", "[global]\nfs_name = myfs\n");
	int64_t v;

	(void)p;
	/* INT: decimal, hex, negative */
	ck_assert_int_eq(cfg_set(CFG_mds_port, "0x10", false, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_int(CFG_mds_port), 16);
	ck_assert_int_eq(cfg_set(CFG_mds_port, " -3 ", false, err, sizeof(err)), 0);
	v = cfg_int(CFG_mds_port);
	ck_assert_int_eq(v, -3);
	ck_assert_int_eq(cfg_set(CFG_mds_port, "010", false, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_int(CFG_mds_port), 10);	/* not octal */
	ck_assert_int_eq(cfg_set(CFG_mds_port, "", false, err, sizeof(err)), -EINVAL);
	/* LOGLEVEL: "N" or Ceph's "N/M" (log level / memory level) */
	{
		int l, m;
		char buf[32];

		ck_assert_int_eq(cfg_set(CFG_debug_mds, "010", false, err, sizeof(err)), 0);
		ck_assert_int_eq(cfg_int(CFG_debug_mds), 10);	/* not octal */
		cfg_loglevel(CFG_debug_mds, &l, &m);
		ck_assert_int_eq(l, 10);
		ck_assert_int_eq(m, 10);
		ck_assert_int_eq(cfg_set(CFG_debug_mds, " 1/20 ", false, err, sizeof(err)), 0);
		cfg_loglevel(CFG_debug_mds, &l, &m);
		ck_assert_int_eq(l, 1);
		ck_assert_int_eq(m, 20);
		ck_assert_int_eq(cfg_int(CFG_debug_mds), 1);
		ck_assert_str_eq(cfg_get_string(CFG_debug_mds, buf, sizeof(buf)), "1/20");
		ck_assert_int_eq(cfg_set(CFG_debug_mds, "5/", false, err, sizeof(err)), -EINVAL);
		ck_assert_msg(strstr(err, "N/M"), "%s", err);
		ck_assert_int_eq(cfg_set(CFG_debug_mds, "1/x", false, err, sizeof(err)), -EINVAL);
		ck_assert_int_eq(cfg_set(CFG_debug_mds, "-3", false, err, sizeof(err)), -EINVAL);
		ck_assert_int_eq(cfg_set(CFG_debug_mds, "1/31", false, err, sizeof(err)), -EINVAL);
		ck_assert_msg(strstr(err, "0..30"), "%s", err);
		ck_assert_int_eq(cfg_set(CFG_debug_mds, "", false, err, sizeof(err)), -EINVAL);
		ck_assert_int_eq(cfg_int(CFG_debug_mds), 1);	/* a bad value changes nothing */
	}
	/* SECS: doubles */
	ck_assert_int_eq(cfg_set(CFG_rados_mon_op_timeout, "0.25", false, err, sizeof(err)), 0);
	ck_assert(cfg_double(CFG_rados_mon_op_timeout) == 0.25);
	ck_assert_int_eq(cfg_set(CFG_rados_mon_op_timeout, "1e400", false, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(cfg_set(CFG_rados_mon_op_timeout, "nan", false, err, sizeof(err)), -EINVAL);
	/* STR: anything, kept verbatim */
	ck_assert_int_eq(cfg_set(CFG_fs_name, "a b=c", false, err, sizeof(err)), 0);
	{
		char buf[64];

		ck_assert_str_eq(cfg_str(CFG_fs_name, buf, sizeof(buf)), "a b=c");
	}
	ck_assert_int_eq(cfg_set(-1, "1", false, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(cfg_set(CFG_MAX, "1", false, err, sizeof(err)), -EINVAL);
}
END_TEST

/* Find an option of @type in the table, or -1 (the table grows over time). */
static int find_type(enum cfg_type type)
{
	for (int id = 0; id < CFG_MAX; id++)
		if (cfg_options[id].type == type)
			return id;
	return -1;
}

START_TEST(test_size_bool_uint)
{
	int size_id = find_type(CFG_T_SIZE), bool_id = find_type(CFG_T_BOOL);
	int uint_id = find_type(CFG_T_UINT);

	if (size_id >= 0) {
		ck_assert_int_eq(cfg_set(size_id, "4096", false, err, sizeof(err)), 0);
		ck_assert_uint_eq(cfg_uint(size_id), 4096);
		ck_assert_int_eq(cfg_set(size_id, "64K", false, err, sizeof(err)), 0);
		ck_assert_uint_eq(cfg_uint(size_id), 65536);
		ck_assert_int_eq(cfg_set(size_id, "4M", false, err, sizeof(err)), 0);
		ck_assert_uint_eq(cfg_uint(size_id), 4u << 20);
		ck_assert_int_eq(cfg_set(size_id, "2G", false, err, sizeof(err)), 0);
		ck_assert_uint_eq(cfg_uint(size_id), 2ull << 30);
		ck_assert_int_eq(cfg_set(size_id, "1.5MiB", false, err, sizeof(err)), 0);
		ck_assert_uint_eq(cfg_uint(size_id), 3u << 19);
		ck_assert_int_eq(cfg_set(size_id, "4X", false, err, sizeof(err)), -EINVAL);
		ck_assert_int_eq(cfg_set(size_id, "-1K", false, err, sizeof(err)), -EINVAL);
		ck_assert_int_eq(cfg_set(size_id, "K", false, err, sizeof(err)), -EINVAL);
		ck_assert_msg(strstr(err, "64K"), "%s", err);
	}
	if (bool_id >= 0) {
		ck_assert_int_eq(cfg_set(bool_id, "yes", false, err, sizeof(err)), 0);
		ck_assert(cfg_bool(bool_id));
		ck_assert_int_eq(cfg_set(bool_id, "False", false, err, sizeof(err)), 0);
		ck_assert(!cfg_bool(bool_id));
		ck_assert_int_eq(cfg_set(bool_id, "maybe", false, err, sizeof(err)), -EINVAL);
	}
	if (uint_id >= 0) {
		ck_assert_int_eq(cfg_set(uint_id, "-5", false, err, sizeof(err)), -EINVAL);
		ck_assert_int_eq(cfg_set(uint_id, "18446744073709551615", false, err, sizeof(err)), 0);
		ck_assert_uint_eq(cfg_uint(uint_id), UINT64_MAX);
	}
}
END_TEST

START_TEST(test_runtime_only)
{
	/* fs_name is read at start-up only */
	ck_assert(!cfg_options[CFG_fs_name].runtime);
	ck_assert_int_eq(cfg_set(CFG_fs_name, "x", true, err, sizeof(err)), -EPERM);
	ck_assert_msg(strstr(err, "fs_name") && strstr(err, "runtime"), "%s", err);
	ck_assert_int_eq(cfg_set(CFG_debug_mds, "15", true, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_int(CFG_debug_mds), 15);
}
END_TEST

START_TEST(test_args)
{
	const char *p = write_conf("a.conf", "[global]\ndebug_mds = 5\nfs_name = fromfile\n[mds]\ndebug_store = 6\n");
	char conf[600];
	char *argv[16];
	int argc = 0;
	char buf[64];

	snprintf(conf, sizeof(conf), "%s", p);
	/* overrides win over the file even when they come before -c */
	argv[argc++] = "loligo-mds";
	argv[argc++] = "--debug_mds=11";
	argv[argc++] = "-f";
	argv[argc++] = "-c";
	argv[argc++] = conf;
	argv[argc++] = "--debug-store";
	argv[argc++] = "8";
	argv[argc++] = "--unknown-thing";
	argv[argc++] = "positional";
	argv[argc++] = "--";
	argv[argc++] = "--debug_mds=99";
	argv[argc] = NULL;
	ck_assert_int_eq(cfg_parse_args(&argc, argv, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_int(CFG_debug_mds), 11);
	ck_assert_int_eq(cfg_int(CFG_debug_store), 8);
	ck_assert_str_eq(cfg_str(CFG_fs_name, buf, sizeof(buf)), "fromfile");
	ck_assert_int_eq(argc, 6);
	ck_assert_str_eq(argv[0], "loligo-mds");
	ck_assert_str_eq(argv[1], "-f");
	ck_assert_str_eq(argv[2], "--unknown-thing");
	ck_assert_str_eq(argv[3], "positional");
	ck_assert_str_eq(argv[4], "--");
	ck_assert_str_eq(argv[5], "--debug_mds=99");
	ck_assert_ptr_null(argv[6]);
}
END_TEST

START_TEST(test_args_conf_forms)
{
	const char *p = write_conf("c.conf", "[global]\ndebug_mds = 4\n");
	char a1[600];
	char *argv[4];
	int argc = 2;

	snprintf(a1, sizeof(a1), "--conf=%s", p);
	argv[0] = "x";
	argv[1] = a1;
	argv[2] = NULL;
	ck_assert_int_eq(cfg_parse_args(&argc, argv, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_int(CFG_debug_mds), 4);
	ck_assert_int_eq(argc, 1);
}
END_TEST

START_TEST(test_args_errors)
{
	char *a1[] = { "x", "--debug_mds=abc", NULL };
	char *a2[] = { "x", "--debug_mds", NULL };
	char *a3[] = { "x", "-c", "/nonexistent/loligo.conf", NULL };
	char *a4[] = { "x", "--conf", NULL };
	int argc;

	argc = 2;
	ck_assert_int_eq(cfg_parse_args(&argc, a1, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "invalid value 'abc' for option 'debug_mds'"), "%s", err);
	argc = 2;
	ck_assert_int_eq(cfg_parse_args(&argc, a2, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "needs a value"), "%s", err);
	argc = 3;
	ck_assert_int_eq(cfg_parse_args(&argc, a3, err, sizeof(err)), -ENOENT);
	ck_assert_msg(strstr(err, "/nonexistent/loligo.conf"), "%s", err);
	argc = 2;
	ck_assert_int_eq(cfg_parse_args(&argc, a4, err, sizeof(err)), -EINVAL);
}
END_TEST

static int observed;

static void observer(int id, void *arg)
{
	observed = (int)cfg_int(id) + (int)(long)arg;
}

START_TEST(test_observe_and_show)
{
	struct json_object *o, *v;
	FILE *f;
	char *text = NULL;
	size_t len = 0;

	cfg_observe(CFG_debug_tools, observer, (void *)1000L);
	ck_assert_int_eq(cfg_set(CFG_debug_tools, "17", true, err, sizeof(err)), 0);
	ck_assert_int_eq(observed, 1017);

	o = cfg_show_json();
	ck_assert_ptr_nonnull(o);
	ck_assert(json_object_object_get_ex(o, "debug_tools", &v));
	ck_assert_int_eq(json_object_get_int(v), 17);
	ck_assert(json_object_object_get_ex(o, "fs_name", &v));
	ck_assert_str_eq(json_object_get_string(v), "loligo");
	ck_assert_int_eq(json_object_object_length(o), CFG_MAX);
	json_object_put(o);

	f = open_memstream(&text, &len);
	cfg_print_help(f, "debug_");
	fclose(f);
	ck_assert_ptr_nonnull(strstr(text, "--debug_mds=<level[/memlevel]>"));
	ck_assert_ptr_null(strstr(text, "--fs_name"));
	free(text);
}
END_TEST

/* Where values came from, and reading one option again from the file for
 * a reload: the file's new value, [mds] over [global], the default when it
 * is gone; the command line and `config set` still win; a check can refuse
 * the new value and a broken file changes nothing. */
static int refuse_20(const char *value, void *arg, char *e, size_t elen)
{
	*(int *)arg += 1;
	if (!strcmp(value, "20")) {
		snprintf(e, elen, "20 is refused");
		return -EINVAL;
	}
	return 0;
}

START_TEST(test_reload_option)
{
	const char *p = write_conf("loligo.conf", "[global]\ndebug_mds = 5\n[mds]\ndebug_store = 3\n");
	int calls = 0;

	ck_assert_int_eq(cfg_source(CFG_debug_mds), CFG_SRC_DEFAULT);
	ck_assert_int_eq(cfg_reload_option(CFG_debug_mds, NULL, NULL, err, sizeof(err)), 0);  /* no file yet */
	ck_assert_int_eq(cfg_load_file(p, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_source(CFG_debug_mds), CFG_SRC_FILE);
	ck_assert_int_eq(cfg_reload_option(CFG_debug_mds, NULL, NULL, err, sizeof(err)), 0);  /* unchanged */
	write_conf("loligo.conf", "[global]\ndebug_mds = 5\n[mds]\ndebug_mds = 7\ndebug_store = 9\n");
	ck_assert_int_eq(cfg_reload_option(CFG_debug_mds, refuse_20, &calls, err, sizeof(err)), 1);
	ck_assert_int_eq(calls, 1);
	ck_assert_int_eq(cfg_int(CFG_debug_mds), 7);            /* [mds] over [global] */
	ck_assert_int_eq(cfg_int(CFG_debug_store), 3);          /* only the option asked for */
	write_conf("loligo.conf", "[mds]\ndebug_mds = 20\n");
	ck_assert_int_eq(cfg_reload_option(CFG_debug_mds, refuse_20, &calls, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "20 is refused");
	ck_assert_int_eq(cfg_int(CFG_debug_mds), 7);
	write_conf("loligo.conf", "[mds]\ndebug_mds = lots\n");
	ck_assert_int_eq(cfg_reload_option(CFG_debug_mds, NULL, NULL, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "loligo.conf:2:"), "%s", err);
	ck_assert_int_eq(cfg_int(CFG_debug_mds), 7);
	write_conf("loligo.conf", "[mds]\ndebug_store = 1\n");   /* gone from the file: the default */
	ck_assert_int_eq(cfg_reload_option(CFG_debug_mds, NULL, NULL, err, sizeof(err)), 1);
	ck_assert_int_eq(cfg_int(CFG_debug_mds), 1);
	ck_assert_int_eq(cfg_source(CFG_debug_mds), CFG_SRC_DEFAULT);
	/* the command line and `config set` win over the file */
	write_conf("loligo.conf", "[mds]\ndebug_mds = 9\n");
	ck_assert_int_eq(cfg_set(CFG_debug_mds, "4", true, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_source(CFG_debug_mds), CFG_SRC_RUNTIME);
	ck_assert_int_eq(cfg_reload_option(CFG_debug_mds, NULL, NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_int(CFG_debug_mds), 4);
	ck_assert_int_eq(cfg_set(CFG_debug_store, "2", false, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_source(CFG_debug_store), CFG_SRC_CMDLINE);
}
END_TEST

int main(void)
{
	TCase *tc = tcase_create("config");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_lookup);
	tcase_add_test(tc, test_ini_sections_precedence);
	tcase_add_test(tc, test_ini_section_after_global_override);
	tcase_add_test(tc, test_ini_several_sections);
	tcase_add_test(tc, test_ini_unknown_option);
	tcase_add_test(tc, test_ini_bad_values);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_types);
	tcase_add_test(tc, test_size_bool_uint);
	tcase_add_test(tc, test_runtime_only);
	tcase_add_test(tc, test_args);
	tcase_add_test(tc, test_args_conf_forms);
	tcase_add_test(tc, test_args_errors);
	tcase_add_test(tc, test_observe_and_show);
	tcase_add_test(tc, test_reload_option);
	return tmpdir_run("config", tc);
}
