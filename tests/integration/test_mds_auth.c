/*
 * test_mds_auth.c - who may talk to loligo-mds, and what a hostile peer can
 * cost it: a session is resumed only by its owner (a foreign RECONNECT is
 * refused and the live client notices nothing), session and connection
 * limits per peer address and in all, a restart does not wait for sessions
 * that held no state, and stalled frames of unauthenticated peers cost
 * almost no memory.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/test_mds_wire.h"

#define ROOT MDSP_ROOT_INO
static char parent_dir[256];
static struct mdsproc P;

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void setup(void)
{
	ck_assert_int_eq(mdsproc_init(&P, parent_dir), 0);
	ck_assert_int_eq(mdsproc_mkfs(&P), 0);
}

static void teardown(void)
{
	mdsproc_cleanup(&P);
}

/* The MDS log has a line with every one of the NULL-terminated needles (within 5 s). */
static bool logged(const char *a, const char *b)
{
	char path[512], line[2048];
	int i;

	snprintf(path, sizeof(path), "%s/mds.log", P.dir);
	for (i = 0; i < 50; i++) {
		FILE *f = fopen(path, "r");

		if (f) {
			while (fgets(line, sizeof(line), f))
				if (strstr(line, a) && (!b || strstr(line, b))) {
					fclose(f);
					return true;
				}
			fclose(f);
		}
		usleep(100000);
	}
	return false;
}

/* The server closed @fd: EOF or a reset within @secs. */
static bool closed_within(int fd, int secs)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char buf[4096];
	double end = mono_s() + secs;
	ssize_t n;

	while (mono_s() < end) {
		if (poll(&p, 1, 100) <= 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return true;
	}
	return false;
}

/* A raw TCP connection to the MDS from source address @src (127.0.0.x). */
static int raw_connect_from(const char *src, uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	inet_pton(AF_INET, src, &sin.sin_addr);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	sin.sin_port = htons(port);
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

/* ---- 9.5: no session can be taken over ------------------------------------ */

/* A peer that names a live client's session id in RECONNECT is refused, the
 * live client's connection stays, and its requests keep succeeding. */
START_TEST(test_foreign_reconnect_refused)
{
	struct mdsw owner, thief;
	struct mdsp_inode in;
	int r, i;

	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&owner, P.port), 0);
	ck_assert_int_eq(mdsw_open(&owner, "client.owner"), 0);
	ck_assert_int_eq(mdsw_create(&owner, ROOT, "before", 0644, O_CREAT | O_EXCL, &in), 0);

	ck_assert_int_eq(mdsw_connect(&thief, P.port), 0);
	/* it knows the id (ids are small numbers), not the secret */
	{
		uint8_t guess[MDSP_KEY_LEN];

		memset(guess, 0x42, sizeof(guess));
		r = mdsw_reconnect_secret(&thief, owner.sid, guess);
	}
	ck_assert_msg(r < 0, "a foreign RECONNECT of session %llu was accepted", (unsigned long long)owner.sid);
	ck_assert(logged("refused", "reconnect"));
	/* the thief has no session: its requests are refused */
	thief.next_tid = 5000;
	ck_assert_int_eq(mdsw_getattr(&thief, ROOT, &in), -ENOTCONN);
	mdsw_close(&thief);

	/* the owner noticed nothing: same connection, requests succeed */
	for (i = 0; i < 5; i++) {
		char name[32];

		snprintf(name, sizeof(name), "after%d", i);
		ck_assert_int_eq(mdsw_create(&owner, ROOT, name, 0644, O_CREAT | O_EXCL, &in), 0);
		ck_assert_int_eq(mdsw_getattr(&owner, in.ino, &in), 0);
	}
	ck_assert_int_eq(mdsw_renew(&owner), 0);
	mdsw_close(&owner);
}
END_TEST

/* 500 sessions whose clients went away without a close (so they hold no
 * state the MDS must wait for) do not hold a restart's mutations back for
 * mds_reconnect_timeout. */
START_TEST(test_stale_sessions_do_not_delay_restart)
{
	struct mdsw w;
	struct mdsp_inode in;
	int i;

	snprintf(P.extra[P.nextra++], 256, "--mds_reconnect_timeout=600");
	ck_assert_int_eq(mdsproc_start(&P), 0);
	for (i = 0; i < 500; i++) {
		char name[32];

		snprintf(name, sizeof(name), "client.stray%d", i);
		ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
		ck_assert_int_eq(mdsw_open(&w, name), 0);
		mdsw_close(&w);
	}
	ck_assert_int_eq(mdsproc_stop(&P, SIGTERM), 0);
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
	ck_assert_int_eq(mdsw_open(&w, "client.new"), 0);
	w.timeout_ms = 60000;
	/* a mutation: held back while the reconnect phase lasts */
	ck_assert_int_eq(mdsw_create(&w, ROOT, "after-restart", 0644, O_CREAT | O_EXCL, &in), 0);
	ck_assert(logged("reconnect phase over", NULL));
	mdsw_close(&w);
}
END_TEST

/* ---- 9.6: what stalled peers cost ------------------------------------------ */

static long rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = strtol(line + 6, NULL, 10);
	fclose(f);
	return kb;
}

/* 50 peers each announce a 16 MiB frame, send 9 MiB of it and stall: the
 * MDS's RSS does not grow by anything like 50 x 9 MiB. */
START_TEST(test_stalled_big_frames_cost_little)
{
	enum { NPEERS = 50 };
	static uint8_t chunk[1 << 20];
	int fds[NPEERS], i, k;
	long before, after;

	ck_assert_int_eq(mdsproc_start(&P), 0);
	before = rss_kb(P.pid);
	ck_assert_int_gt(before, 0);
	memset(chunk, 0x5a, sizeof(chunk));
	for (i = 0; i < NPEERS; i++) {
		struct mdsp_msg msg;
		struct mdsp_buf b;
		struct mdsw w = { .fd = -1 };
		uint32_t big = MDSP_MAX_PAYLOAD;

		fds[i] = raw_connect_from("127.0.0.1", P.port);
		memset(&msg, 0, sizeof(msg));
		msg.type = MDSP_MSG_REQUEST;
		msg.request.op = MDSP_OP_GETATTR;
		msg.request.ino = ROOT;
		ck_assert_int_eq(mdsw_encode(&w, &msg, &b), 0);
		b.data[20] = (uint8_t)big;
		b.data[21] = (uint8_t)(big >> 8);
		b.data[22] = (uint8_t)(big >> 16);
		b.data[23] = (uint8_t)(big >> 24);
		mdsw_fix_frame(&w, &b, true);
		fcntl(fds[i], F_SETFL, O_NONBLOCK);
		(void)!write(fds[i], b.data, MDSP_HDR_LEN);
		mdsp_buf_free(&b);
		for (k = 0; k < 9; k++)
			if (write(fds[i], chunk, sizeof(chunk)) < 0)
				break;      /* the MDS stopped reading (or closed): fine */
	}
	usleep(500000);
	after = rss_kb(P.pid);
	ck_assert_int_gt(after, 0);
	ck_assert_msg(after - before < 100 * 1024, "50 stalled frames cost the MDS %ld MiB of RSS",
		      (after - before) / 1024);
	for (i = 0; i < NPEERS; i++)
		close(fds[i]);
}
END_TEST

/* A peer at its per-address connection limit does not lock out another
 * peer: 127.0.0.1 holds as many idle connections as it may, 127.0.0.2 still
 * opens a session and is served. */
START_TEST(test_per_peer_conn_limit)
{
	enum { NHOG = 8 };
	int hog[NHOG], i, nopen = 0;
	struct mdsw other;
	struct mdsp_inode in;

	snprintf(P.extra[P.nextra++], 256, "--mds_max_conns=8");
	snprintf(P.extra[P.nextra++], 256, "--mds_max_conns_per_peer=4");
	ck_assert_int_eq(mdsproc_start(&P), 0);
	for (i = 0; i < NHOG; i++)
		hog[i] = raw_connect_from("127.0.0.1", P.port);
	for (i = 0; i < NHOG; i++)
		nopen += !closed_within(hog[i], 1);
	ck_assert_msg(nopen <= 4, "%d connections from one address kept (limit 4)", nopen);
	ck_assert(logged("mds_max_conns_per_peer", "127.0.0.1"));

	memset(&other, 0, sizeof(other));
	other.fd = raw_connect_from("127.0.0.2", P.port);
	other.timeout_ms = 20000;
	other.next_tid = 1;
	other.wait_safe = true;
	ck_assert_int_eq(mdsw_handshake(&other), 0);
	ck_assert_int_eq(mdsw_open(&other, "client.other"), 0);
	ck_assert_int_eq(mdsw_getattr(&other, ROOT, &in), 0);
	mdsw_close(&other);
	for (i = 0; i < NHOG; i++)
		close(hog[i]);
}
END_TEST

/* Session limits refuse with a clear error and a log line. */
START_TEST(test_session_limits)
{
	struct mdsw w[3];
	int i;

	snprintf(P.extra[P.nextra++], 256, "--mds_max_sessions_per_peer=2");
	ck_assert_int_eq(mdsproc_start(&P), 0);
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(mdsw_connect(&w[i], P.port), 0);
		ck_assert_int_eq(mdsw_open(&w[i], "client.lim"), 0);
	}
	ck_assert_int_eq(mdsw_connect(&w[2], P.port), 0);
	ck_assert_int_eq(mdsw_open(&w[2], "client.lim"), -EUSERS);
	ck_assert(logged("mds_max_sessions_per_peer", "127.0.0.1"));
	for (i = 0; i < 3; i++)
		mdsw_close(&w[i]);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mds_auth");
	TCase *ts = tcase_create("sessions"), *tp = tcase_create("peers");

	tcase_add_checked_fixture(ts, setup, teardown);
	tcase_set_timeout(ts, 120);
	tcase_add_test(ts, test_foreign_reconnect_refused);
	tcase_add_test(ts, test_stale_sessions_do_not_delay_restart);
	tcase_add_test(ts, test_session_limits);
	suite_add_tcase(s, ts);
	tcase_add_checked_fixture(tp, setup, teardown);
	tcase_set_timeout(tp, 60);
	tcase_add_test(tp, test_stalled_big_frames_cost_little);
	tcase_add_test(tp, test_per_peer_conn_limit);
	suite_add_tcase(s, tp);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	signal(SIGPIPE, SIG_IGN);
	if (mdsproc_parent_init(parent_dir, sizeof(parent_dir), "test_mds_auth"))
		return 1;
	sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	mdsproc_parent_remove(parent_dir);
	return failed ? 1 : 0;
}
