/*
 * test_store_rados.c - the rados backend fails fast: a store pointed at a
 * monitor address where nothing listens must fail store_open() within its
 * timeout, with an error, instead of hanging the daemon that opens it.
 * (The behaviour against a live cluster is the conformance suite, run by
 * tests/integration/store_rados.cmake.)
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/time.h"
#include "store/store.h"

/* A loopback port nobody listens on (bound, read back, closed). */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	remove(path);
	return 0;
}

START_TEST(t_dead_cluster)
{
	char dir[] = "/tmp/loligo-rados-dead-XXXXXX", conf[PATH_MAX];
	struct store_config cfg = { 0 };
	struct store *st = NULL;
	int port = free_port(), r;
	uint64_t t0, ms;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(conf, sizeof(conf), "%s/ceph.conf", dir);
	f = fopen(conf, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "[global]\nmon_host = [v2:127.0.0.1:%d,v1:127.0.0.1:%d]\n"
		"auth_cluster_required = none\nauth_service_required = none\nauth_client_required = none\n"
		"log_file = %s/client.log\nlog_to_stderr = false\nerr_to_stderr = false\n",
		port, port, dir);
	fclose(f);

	cfg.backend = "rados";
	cfg.rados_conf = conf;
	cfg.rados_id = "admin";
	cfg.rados_mon_op_timeout = 3;
	cfg.rados_osd_op_timeout = 3;
	t0 = now_mono_ns();
	r = store_open(&cfg, &st);
	ms = (now_mono_ns() - t0) / 1000000;
	nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
	ck_assert_msg(r < 0, "store_open on a dead cluster returned %d", r);
	ck_assert_ptr_null(st);
	ck_assert_msg(r == -ETIMEDOUT || r == -ECONNREFUSED || r == -ENOTCONN, "unexpected error %d (%s)", r,
		      strerror(-r));
	/* 3 s timeout: well under 15 s, never the default 300 s */
	ck_assert_msg(ms < 15000, "store_open took %llu ms", (unsigned long long)ms);
}
END_TEST

START_TEST(t_missing_conf)
{
	struct store_config cfg = { .backend = "rados", .rados_conf = "/nonexistent/ceph.conf", .rados_id = "admin",
				    .rados_mon_op_timeout = 3, .rados_osd_op_timeout = 3 };
	struct store *st = NULL;

	ck_assert_int_lt(store_open(&cfg, &st), 0);
	ck_assert_ptr_null(st);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("store_rados");
	TCase *tc = tcase_create("fail_fast");
	SRunner *sr;
	int failed;

	log_init("test_store_rados");
	tcase_add_test(tc, t_dead_cluster);
	tcase_add_test(tc, t_missing_conf);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
