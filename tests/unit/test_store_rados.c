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
#include <signal.h>
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

static pid_t read_pid(const char *dir, const char *name)
{
	char path[PATH_MAX];
	long pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/run/%s.pid", dir, name);
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "no pid file %s", path);
	ck_assert_int_eq(fscanf(f, "%ld", &pid), 1);
	fclose(f);
	return (pid_t)pid;
}

/*
 * A live cluster that dies under an open store: ops fail with -ETIMEDOUT
 * after rados_osd_op_timeout, monitor ops after rados_mon_op_timeout.
 * Needs LOLIGO_STORE_RADOS_CONF and LOLIGO_STORE_RADOS_DIR (the cluster's
 * directory): tests/integration/store_rados.sh runs it last, as it kills
 * the cluster.
 */
START_TEST(t_cluster_dies)
{
	const char *dir = getenv("LOLIGO_STORE_RADOS_DIR");
	struct store_config cfg = { .backend = "rados", .rados_conf = getenv("LOLIGO_STORE_RADOS_CONF"),
				    .rados_id = "admin", .rados_mon_op_timeout = 3, .rados_osd_op_timeout = 3 };
	struct store_pool *p;
	struct store *st;
	struct store_op *op;
	char buf[16];
	uint64_t t0, ms;
	int r;

	ck_assert_int_eq(store_open(&cfg, &st), 0);
	ck_assert_int_eq(store_pool_open(st, "rbdtest", "dies", &p), 0);
	op = store_op_new();
	store_op_write_full(op, "alive", 5);
	ck_assert_int_eq(store_op_exec(p, "o", op), 0);

	ck_assert_int_eq(kill(read_pid(dir, "osd.0"), SIGKILL), 0);
	t0 = now_mono_ns();
	op = store_op_new();
	store_op_write_full(op, "dead", 4);
	r = store_op_exec(p, "o", op);
	ms = (now_mono_ns() - t0) / 1000000;
	ck_assert_msg(r == -ETIMEDOUT, "write to a dead OSD: %d (%s)", r, strerror(-r));
	ck_assert_msg(ms < 15000, "the write took %llu ms to fail", (unsigned long long)ms);
	t0 = now_mono_ns();
	ck_assert_int_eq(store_read(p, "o", 0, sizeof(buf), buf), -ETIMEDOUT);
	ck_assert_uint_lt((now_mono_ns() - t0) / 1000000, 15000);

	ck_assert_int_eq(kill(read_pid(dir, "mon.a"), SIGKILL), 0);
	t0 = now_mono_ns();
	r = store_pool_create(st, "never");
	ms = (now_mono_ns() - t0) / 1000000;
	ck_assert_msg(r < 0, "pool create with the monitor dead returned %d", r);
	ck_assert_msg(ms < 15000, "pool create took %llu ms to fail", (unsigned long long)ms);
	store_pool_close(p);
	store_close(st);
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
	if (getenv("LOLIGO_STORE_RADOS_DIR") && getenv("LOLIGO_STORE_RADOS_CONF"))
		tcase_add_test(tc, t_cluster_dies);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
