/*
 * test_mdscaps.c - the caps mds parser (mds_proto/mdscaps.c) and caps in
 * keyring files: what parses, what each error says, garbage, and a
 * keyring whose caps line is bad naming its line.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mds_proto/proto.h"

static struct mdsp_mdscaps caps;
static char err[1024];

static int parse(const char *s)
{
	err[0] = '\0';
	return mdsp_mdscaps_parse(s, &caps, err, sizeof(err));
}

START_TEST(t_parse_good)
{
	ck_assert_int_eq(parse("allow rw path=/home/alice"), 0);
	ck_assert_uint_eq(caps.n, 1);
	ck_assert(caps.c[0].write);
	ck_assert_str_eq(caps.c[0].path, "/home/alice");
	ck_assert_int_eq(parse("allow r"), 0);
	ck_assert(!caps.c[0].write);
	ck_assert_str_eq(caps.c[0].path, "/");
	ck_assert_int_eq(parse("allow *"), 0);
	ck_assert(caps.c[0].write);
	ck_assert_int_eq(parse("allow rw path=//home//alice/ root_squash"), 0);
	ck_assert_str_eq(caps.c[0].path, "/home/alice");
	ck_assert(caps.c[0].root_squash);
	ck_assert_int_eq(parse("allow rw path=/a uid=1000 gids=1000,1001, allow r path=\"/b c\""), 0);
	ck_assert_uint_eq(caps.n, 2);
	ck_assert(caps.c[0].has_uid && caps.c[0].uid == 1000);
	ck_assert_uint_eq(caps.c[0].ngids, 2);
	ck_assert_uint_eq(caps.c[0].gids[1], 1001);
	ck_assert_str_eq(caps.c[1].path, "/b c");
	ck_assert(!caps.c[1].write);
	ck_assert_int_eq(parse("allow r;allow rw path=/x"), 0);
	ck_assert_uint_eq(caps.n, 2);
}
END_TEST

START_TEST(t_parse_bad)
{
	static const char *const bad[] = {
		"", "allow", "allow ", "allow rx", "deny rw", "allowrw", "allow rw path=home",
		"allow rw path=/a/../b", "allow rw path=/a/./b", "allow rw path=", "allow rw path=\"/a",
		"allow rw uid=", "allow rw uid=x", "allow rw uid=99999999999", "allow rw gids=1,",
		"allow rw root_squash=1", "allow rw, ", "allow rw,,allow r", "allow rw path=/a\n[client.x]",
		"allow rw frobnicate", "\xff\xfe", "allow rw path=/a extra",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse(bad[i]) == -EINVAL, "'%s' parsed", bad[i]);
		ck_assert_msg(strstr(err, "expected") || strstr(err, "at most"), "'%s': %s", bad[i], err);
	}
	ck_assert_int_eq(parse("allow rx"), -EINVAL);
	ck_assert_msg(strstr(err, "offset 6") && strstr(err, "r, rw or *"), "%s", err);
	ck_assert_int_eq(parse("allow rw path=home"), -EINVAL);
	ck_assert_msg(strstr(err, "absolute path"), "%s", err);
}
END_TEST

/* random bytes never crash the parser, and what it accepts is sane */
START_TEST(t_parse_garbage)
{
	char buf[256];
	const char alpha[] = "alowrw *,;=/\"path=uid=gids=root_squash0123456789.\x01\xff";

	srand(42);
	for (int i = 0; i < 20000; i++) {
		size_t n = (size_t)(rand() % 80);

		for (size_t j = 0; j < n; j++)
			buf[j] = i % 2 ? (char)(1 + rand() % 255) : alpha[rand() % (sizeof(alpha) - 1)];
		buf[n] = '\0';
		if (parse(buf) == 0) {
			ck_assert_uint_ge(caps.n, 1);
			for (uint32_t k = 0; k < caps.n; k++)
				ck_assert(caps.c[k].path[0] == '/');
		} else {
			ck_assert(err[0]);
		}
	}
}
END_TEST

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

START_TEST(t_keyring)
{
	char dir[] = "/tmp/test_mdscaps.XXXXXX", path[64], e[1024];
	struct mdsp_keyring kr = { 0 }, back;
	uint8_t secret[MDSP_KEY_LEN] = { 7 };
	FILE *f;
	char line[256];
	bool header = false;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/keyring", dir);
	ck_assert_int_eq(mdsp_keyring_add(&kr, "client.alice", secret), 0);
	ck_assert_int_eq(mdsp_keyring_add(&kr, "client.admin", secret), 0);
	ck_assert_int_eq(mdsp_keyring_set_caps(&kr, "client.alice", "allow rw path=/home/alice", e, sizeof(e)), 0);
	ck_assert_int_eq(mdsp_keyring_set_caps(&kr, "client.bob", "allow r", e, sizeof(e)), -ENOENT);
	ck_assert_int_eq(mdsp_keyring_set_caps(&kr, "client.admin", "allow rx", e, sizeof(e)), -EINVAL);
	ck_assert_int_eq(mdsp_keyring_save(path, &kr, e, sizeof(e)), 0);
	/* versioned: a keyring with caps says so first */
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		header |= strstr(line, "version = 2") != NULL;
	fclose(f);
	ck_assert(header);
	ck_assert_msg(mdsp_keyring_load(path, &back, e, sizeof(e)) == 0, "%s", e);
	ck_assert_str_eq(mdsp_keyring_find(&back, "client.alice")->caps, "allow rw path=/home/alice");
	ck_assert_ptr_null(mdsp_keyring_find(&back, "client.admin")->caps);
	mdsp_keyring_free(&back);
	mdsp_keyring_free(&kr);

	/* an old keyring (no version, no caps) loads: no caps, allow rw */
	write_file(path, "[client.old]\n\tkey = AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\n");
	ck_assert_msg(mdsp_keyring_load(path, &back, e, sizeof(e)) == 0, "%s", e);
	ck_assert_ptr_null(mdsp_keyring_find(&back, "client.old")->caps);
	mdsp_keyring_free(&back);
	/* a bad caps line is refused with its line number */
	write_file(path, "[keyring]\n\tversion = 2\n[client.x]\n\tkey = AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\n"
			 "\tcaps mds = \"allow rw path=nothome\"\n");
	ck_assert_int_eq(mdsp_keyring_load(path, &back, e, sizeof(e)), -EINVAL);
	ck_assert_msg(strstr(e, "line 5") && strstr(e, "absolute path"), "%s", e);
	/* a newer version is refused, not misread */
	write_file(path, "[keyring]\n\tversion = 3\n");
	ck_assert_int_eq(mdsp_keyring_load(path, &back, e, sizeof(e)), -EINVAL);
	ck_assert_msg(strstr(e, "newer"), "%s", e);
	unlink(path);
	rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mdscaps");
	TCase *tc = tcase_create("mdscaps");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, t_parse_good);
	tcase_add_test(tc, t_parse_bad);
	tcase_add_test(tc, t_parse_garbage);
	tcase_add_test(tc, t_keyring);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
