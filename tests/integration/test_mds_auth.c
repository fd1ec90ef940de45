/*
 * test_mds_auth.c - who may talk to loligo-mds, and what a hostile peer can
 * cost it: a session is resumed only by its owner (a foreign RECONNECT is
 * refused and the live client notices nothing), session and connection
 * limits per peer address and in all, a restart does not wait for sessions
 * that held no state, and stalled frames of unauthenticated peers cost
 * almost no memory.  Hardening (issue 20): a keyring others may read stops
 * the daemons at start, a name with a key is never taken without it, and a
 * removed key cuts its connections and sessions at once.
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
#include <json-c/json.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/admin_sock.h"
#include "tests/lib/daemon.h"
#include "tests/lib/wait.h"
#include "tools/bench/mds_wire.h"

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
	/* 500 connections one after the other: under load the MDS may not have
	 * seen the earlier ones close yet, and the per-peer limit (256) would
	 * reset a new one at accept; that limit is not what this tests */
	snprintf(P.extra[P.nextra++], 256, "--mds_max_conns_per_peer=0");
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


/* ---- 11.2: authentication ---------------------------------------------------- */

/* A client without a key, with a name the MDS has no key for, or with a
 * wrong key gets no session, and each is told which. */
START_TEST(test_handshake_refusals)
{
	struct mdsw w;
	uint8_t wrong[MDSP_KEY_LEN];
	char reason[1024];
	struct mdsp_inode in;

	ck_assert_int_eq(mdsproc_start(&P), 0);

	ck_assert_int_eq(mdsw_connect_raw(&w, P.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&w, "client.admin", NULL, reason, sizeof(reason)), -EACCES);
	ck_assert_msg(strstr(reason, "requires authentication"), "%s", reason);
	ck_assert(closed_within(w.fd, 5));
	mdsw_close(&w);
	ck_assert(logged("offered no key", NULL));

	ck_assert_int_eq(mdsw_connect_raw(&w, P.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&w, "client.nobody", mdsw_test_key(), reason, sizeof(reason)), -ENOKEY);
	ck_assert_msg(strstr(reason, "get-or-create client.nobody"), "%s", reason);
	mdsw_close(&w);
	ck_assert(logged("no key for client.nobody", "peer 127.0.0.1:"));

	memcpy(wrong, mdsw_test_key(), sizeof(wrong));
	wrong[0] ^= 1;
	ck_assert_int_eq(mdsw_connect_raw(&w, P.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&w, "client.admin", wrong, reason, sizeof(reason)), -EKEYREJECTED);
	ck_assert_msg(strstr(reason, "wrong key"), "%s", reason);
	mdsw_close(&w);
	ck_assert(logged("wrong key for client.admin", "peer 127.0.0.1:"));

	/* skipping AUTH altogether: the first SESSION closes the connection */
	ck_assert_int_eq(mdsw_connect_raw(&w, P.port), 0);
	w.timeout_ms = 5000;
	ck_assert_int_lt(mdsw_open(&w, "client.sneaky"), 0);
	ck_assert(closed_within(w.fd, 5));
	mdsw_close(&w);
	ck_assert(logged("before authentication", NULL));

	/* the right key */
	ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
	ck_assert_int_eq(mdsw_open(&w, "client.good"), 0);
	ck_assert_int_eq(mdsw_getattr(&w, ROOT, &in), 0);
	mdsw_close(&w);
}
END_TEST

/* connect as client.admin with the frame MACs @alg (HMAC: a client that does not offer GMAC) */
static void connect_alg(struct mdsw *w, enum mdsp_mac_alg alg)
{
	ck_assert_int_eq(mdsw_connect_raw(w, P.port), 0);
	w->hmac_only = alg == MDSP_MAC_HMAC_SHA256;
	ck_assert_int_eq(mdsw_handshake(w), 0);
	ck_assert_int_eq(w->mac_alg, alg);
}

/* A frame whose MAC does not match (a third party's, or altered on the way)
 * closes the connection; the session stays for its owner.  Under both frame
 * MACs (_i: enum mdsp_mac_alg), and any byte of the trailer counts. */
START_TEST(test_bad_mac_closes)
{
	enum mdsp_mac_alg alg = (enum mdsp_mac_alg)_i;
	struct mdsw w, again;
	struct mdsp_msg msg;
	struct mdsp_buf b;
	struct mdsp_inode in;
	uint64_t sid;

	ck_assert_int_eq(mdsproc_start(&P), 0);
	connect_alg(&w, alg);
	ck_assert_int_eq(mdsw_open(&w, "client.mac"), 0);
	sid = w.sid;
	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_REQUEST;
	msg.request.tid = 100;
	msg.request.op = MDSP_OP_MKDIR;
	msg.request.ino = ROOT;
	msg.request.name = "injected";
	msg.request.mode = 0755;
	ck_assert_int_eq(mdsw_encode(&w, &msg, &b), 0);
	b.data[b.len - MDSP_MAC_LEN] ^= 0x01;      /* the MAC's first byte */
	ck_assert_int_eq(mdsw_send_raw(&w, b.data, b.len), 0);
	mdsp_buf_free(&b);
	ck_assert(closed_within(w.fd, 5));
	mdsw_close(&w);
	ck_assert(logged("bad frame MAC", NULL));

	/* its last byte (GMAC's zero half): the same */
	connect_alg(&w, alg);
	ck_assert_int_eq(mdsw_open(&w, "client.mac3"), 0);
	ck_assert_int_eq(mdsw_encode(&w, &msg, &b), 0);
	b.data[b.len - 1] ^= 0x01;
	ck_assert_int_eq(mdsw_send_raw(&w, b.data, b.len), 0);
	mdsp_buf_free(&b);
	ck_assert(closed_within(w.fd, 5));
	mdsw_close(&w);

	/* a frame with no MAC at all on an authenticated connection: the same */
	connect_alg(&w, alg);
	ck_assert_int_eq(mdsw_open(&w, "client.mac2"), 0);
	{
		struct mdsp_mac *tx = w.tx;

		w.tx = NULL;            /* encode as an unauthenticated sender would */
		ck_assert_int_eq(mdsw_encode(&w, &msg, &b), 0);
		w.tx = tx;
	}
	ck_assert_int_eq(mdsw_send_raw(&w, b.data, b.len), 0);
	mdsp_buf_free(&b);
	ck_assert(closed_within(w.fd, 5));
	mdsw_close(&w);
	ck_assert(logged("a frame without a MAC on an authenticated connection", NULL));

	/* nothing was run, and the owner resumes its session */
	ck_assert_int_eq(mdsw_connect(&again, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect(&again, sid), 0);
	again.next_tid = 1000;
	ck_assert_int_eq(mdsw_lookup(&again, ROOT, "injected", &in), -ENOENT);
	mdsw_close(&again);
}
END_TEST

/* A frame sent again byte for byte (a replay by someone on the path) closes
 * the connection and is not run twice. */
START_TEST(test_replayed_frame_rejected)
{
	enum mdsp_mac_alg alg = (enum mdsp_mac_alg)_i;
	struct mdsw w, again;
	struct mdsp_msg msg;
	struct mdsp_buf b;
	struct mdsp_reply rep;
	struct mdsp_inode in;
	const char *why;
	uint64_t sid;
	int r;

	ck_assert_int_eq(mdsproc_start(&P), 0);
	connect_alg(&w, alg);
	ck_assert_int_eq(mdsw_open(&w, "client.replay"), 0);
	sid = w.sid;
	ck_assert_int_eq(mdsw_create(&w, ROOT, "f", 0644, O_CREAT | O_EXCL, &in), 0);
	/* an unlink, sent, answered, then sent again */
	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_REQUEST;
	msg.request.tid = 500;
	msg.request.op = MDSP_OP_UNLINK;
	msg.request.ino = ROOT;
	msg.request.name = "f";
	ck_assert_int_eq(mdsw_encode(&w, &msg, &b), 0);
	ck_assert_int_eq(mdsw_send_raw(&w, b.data, b.len), 0);
	for (;;) {
		struct mdsp_msg m;

		r = mdsp_recv_auth(w.fd, &m, 10000, w.rx, &w.in_seq, &why);
		ck_assert_int_eq(r, 0);
		if (m.type == MDSP_MSG_REPLY && m.reply.tid == 500 && (m.reply.flags & MDSP_REPLY_SAFE)) {
			ck_assert_int_eq(m.reply.result, 0);
			mdsp_msg_free(&m);
			break;
		}
		mdsp_msg_free(&m);
	}
	ck_assert_int_eq(mdsw_create(&w, ROOT, "f", 0644, O_CREAT | O_EXCL, &in), 0);   /* f again */
	ck_assert_int_eq(mdsw_send_raw(&w, b.data, b.len), 0);                          /* the replay */
	mdsp_buf_free(&b);
	ck_assert(closed_within(w.fd, 5));
	mdsw_close(&w);
	ck_assert(logged("replayed frame", NULL));
	/* the second f is still there: the replay did not run */
	ck_assert_int_eq(mdsw_connect(&again, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect(&again, sid), 0);
	again.next_tid = 1000;
	ck_assert_int_eq(mdsw_lookup(&again, ROOT, "f", &in), 0);
	memset(&rep, 0, sizeof(rep));
	mdsw_close(&again);
}
END_TEST

/* Admin commands over the MDS port need an authenticated connection. */
START_TEST(test_command_needs_auth)
{
	struct mdsw w;
	char *out = NULL;

	snprintf(P.extra[P.nextra++], 256, "--auth_required=false");
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect_raw(&w, P.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&w, "client.anon", NULL, NULL, 0), 0);
	ck_assert_int_eq(mdsw_command(&w, "{\"prefix\":\"status\"}", &out), -EACCES);
	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_nonnull(strstr(out, "authenticated"));
	free(out);
	out = NULL;
	mdsw_close(&w);
	ck_assert(logged("refused an admin command", "not authenticated"));
	ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
	ck_assert_int_eq(mdsw_command(&w, "{\"prefix\":\"status\"}", &out), 0);
	free(out);
	mdsw_close(&w);
}
END_TEST

/* With auth_required off, a client without a key gets a session whose
 * secret rides in the OPEN reply, and only that secret resumes it. */
START_TEST(test_unauthenticated_session_secret)
{
	struct mdsw w, again, thief;
	struct mdsp_inode in;
	uint8_t secret[MDSP_KEY_LEN], zero[MDSP_KEY_LEN] = { 0 };
	uint64_t sid;

	snprintf(P.extra[P.nextra++], 256, "--auth_required=false");
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect_raw(&w, P.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&w, "client.anon", NULL, NULL, 0), 0);
	ck_assert_int_eq(mdsw_open(&w, "client.anon"), 0);
	ck_assert(memcmp(w.secret, zero, sizeof(zero)));
	memcpy(secret, w.secret, sizeof(secret));
	sid = w.sid;
	ck_assert_int_eq(mdsw_create(&w, ROOT, "x", 0644, O_CREAT | O_EXCL, &in), 0);

	ck_assert_int_eq(mdsw_connect_raw(&thief, P.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&thief, "client.anon", NULL, NULL, 0), 0);
	ck_assert_int_eq(mdsw_reconnect_secret(&thief, sid, zero), -EPERM);
	mdsw_close(&thief);
	ck_assert_int_eq(mdsw_getattr(&w, ROOT, &in), 0);     /* the owner noticed nothing */
	mdsw_close(&w);

	ck_assert_int_eq(mdsw_connect_raw(&again, P.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&again, "client.anon", NULL, NULL, 0), 0);
	ck_assert_int_eq(mdsw_reconnect_secret(&again, sid, secret), 0);
	again.next_tid = 100;
	ck_assert_int_eq(mdsw_getattr(&again, ROOT, &in), 0);
	mdsw_close(&again);
}
END_TEST

static int asok_auth(const char *prefix, const char *entity, struct json_object **rep)
{
	struct json_object *req = json_object_new_object();
	char path[512];
	int r;

	snprintf(path, sizeof(path), "%s/mds.asok", P.dir);
	json_object_object_add(req, "prefix", json_object_new_string(prefix));
	if (entity)
		json_object_object_add(req, "entity", json_object_new_string(entity));
	r = asok_request(path, req, rep, 5000);
	json_object_put(req);
	return r;
}

static int run_cli(const char *args)
{
	char cmd[2048];
	const char *bd = getenv("LOLIGO_BUILD_DIR");

	snprintf(cmd, sizeof(cmd), "%s/tools/cli/loligo --mds-asok %s/mds.asok %s >/dev/null 2>&1", bd ? bd : ".",
		 P.dir, args);
	return system(cmd);
}

/* auth get-or-create / ls / rm on the admin socket and through the CLI:
 * a key made while the MDS runs works at once, survives a restart, and a
 * removed one no longer authenticates. */
START_TEST(test_auth_admin)
{
	struct json_object *rep = NULL, *v;
	struct mdsp_keyring kr;
	uint8_t key[MDSP_KEY_LEN];
	char path[512], err[512], args[1024];
	struct mdsw w;
	struct stat st;

	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(asok_auth("auth get-or-create", "client.new", &rep), 0);
	ck_assert(json_object_object_get_ex(rep, "key", &v));
	ck_assert_int_eq(mdsp_key_unbase64(json_object_get_string(v), key), 0);
	json_object_put(rep);
	ck_assert_int_eq(mdsw_connect_raw(&w, P.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&w, "client.new", key, NULL, 0), 0);
	ck_assert_int_eq(mdsw_open(&w, "client.new"), 0);
	mdsw_close(&w);
	/* written back, mode 0600 */
	snprintf(path, sizeof(path), "%s/keyring", P.dir);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(mdsp_keyring_load(path, &kr, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(mdsp_keyring_find(&kr, "client.new"));
	mdsp_keyring_free(&kr);
	/* ls lists names, never keys */
	ck_assert_int_eq(asok_auth("auth ls", NULL, &rep), 0);
	ck_assert_ptr_nonnull(strstr(json_object_to_json_string(rep), "client.new"));
	ck_assert_ptr_null(strstr(json_object_to_json_string(rep), "\"key\""));
	json_object_put(rep);
	/* the CLI: -o writes a client keyring that works */
	snprintf(path, sizeof(path), "%s/cli.keyring", P.dir);
	snprintf(args, sizeof(args), "auth get-or-create client.cli -o %s", path);
	ck_assert_int_eq(run_cli(args), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(mdsp_keyring_load(path, &kr, err, sizeof(err)), 0);
	ck_assert_uint_eq(kr.n, 1);
	memcpy(key, mdsp_keyring_find(&kr, "client.cli")->secret, sizeof(key));
	mdsp_keyring_free(&kr);
	/* after a restart too */
	ck_assert_int_eq(mdsproc_stop(&P, SIGTERM), 0);
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect_raw(&w, P.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&w, "client.cli", key, NULL, 0), 0);
	mdsw_close(&w);
	/* removed: ENOKEY */
	ck_assert_int_eq(run_cli("auth rm client.cli"), 0);
	ck_assert_int_eq(mdsw_connect_raw(&w, P.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&w, "client.cli", key, NULL, 0), -ENOKEY);
	mdsw_close(&w);
	ck_assert_int_ne(run_cli("auth get client.cli"), 0);
	ck_assert_int_ne(run_cli("auth get-or-create not-a-name"), 0);
	/* offline, on a keyring file: rm says 0 when it removed the key */
	snprintf(args, sizeof(args), "auth get-or-create client.off --keyring %s/off.keyring", P.dir);
	ck_assert_int_eq(run_cli(args), 0);
	snprintf(args, sizeof(args), "auth rm client.off --keyring %s/off.keyring", P.dir);
	ck_assert_int_eq(run_cli(args), 0);
	ck_assert_int_ne(run_cli(args), 0);        /* not there any more */
}
END_TEST

/* ---- issue 19.4: a restarted client reclaims its dead session ------------- */

/* A REQUEST_OPEN may name a session to reclaim (the client's dead
 * predecessor: client/reclaim.c).  The MDS evicts it only when its uuid
 * matches and it belongs to the name this connection authenticated as: a
 * wrong uuid reclaims nothing (the new session opens, the old one is left
 * alone), another name is refused with EPERM and opens nothing, and the
 * rightful successor's open evicts the old session first. */
START_TEST(test_reclaim_needs_same_name)
{
	struct json_object *rep = NULL, *v;
	uint8_t key[MDSP_KEY_LEN];
	struct mdsw owner, other, succ;
	struct mdsp_inode in;
	char reason[256];

	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&owner, P.port), 0);
	memset(owner.uuid, 0x5a, sizeof(owner.uuid));
	ck_assert_int_eq(mdsw_open(&owner, "client.owner"), 0);
	ck_assert_int_eq(mdsw_create(&owner, ROOT, "mine", 0644, O_CREAT | O_EXCL, &in), 0);

	/* the same name with a wrong uuid: a new session, nothing reclaimed */
	ck_assert_int_eq(mdsw_connect(&succ, P.port), 0);
	memset(succ.uuid, 0x11, sizeof(succ.uuid));
	succ.reclaim_sid = owner.sid;
	memset(succ.reclaim_uuid, 0x5b, sizeof(succ.reclaim_uuid));
	ck_assert_int_eq(mdsw_open(&succ, "client.guess"), 0);
	ck_assert(logged("nothing to reclaim", "client.guess"));
	mdsw_close(&succ);
	ck_assert_int_eq(mdsw_getattr(&owner, in.ino, &in), 0);

	/* another authenticated name, right id and uuid: EPERM, no session */
	ck_assert_int_eq(asok_auth("auth get-or-create", "client.other", &rep), 0);
	ck_assert(json_object_object_get_ex(rep, "key", &v));
	ck_assert_int_eq(mdsp_key_unbase64(json_object_get_string(v), key), 0);
	json_object_put(rep);
	ck_assert_int_eq(mdsw_connect_raw(&other, P.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&other, "client.other", key, reason, sizeof(reason)), 0);
	memset(other.uuid, 0x22, sizeof(other.uuid));
	other.reclaim_sid = owner.sid;
	memcpy(other.reclaim_uuid, owner.uuid, sizeof(other.reclaim_uuid));
	ck_assert_int_eq(mdsw_open(&other, "client.thief"), -EPERM);
	ck_assert(logged("client.thief", "another authenticated name"));
	other.next_tid = 5000;
	ck_assert_int_eq(mdsw_getattr(&other, ROOT, &in), -ENOTCONN);
	mdsw_close(&other);
	/* the owner noticed nothing */
	ck_assert_int_eq(mdsw_create(&owner, ROOT, "still-mine", 0644, O_CREAT | O_EXCL, &in), 0);
	ck_assert_int_eq(mdsw_renew(&owner), 0);

	/* its successor (same name, its id and uuid): the old session is
	 * evicted (its connection told and closed), then the new one opens */
	ck_assert_int_eq(mdsw_connect(&succ, P.port), 0);
	memset(succ.uuid, 0x33, sizeof(succ.uuid));
	succ.reclaim_sid = owner.sid;
	memcpy(succ.reclaim_uuid, owner.uuid, sizeof(succ.reclaim_uuid));
	ck_assert_int_eq(mdsw_open(&succ, "client.successor"), 0);
	ck_assert(logged("evicted", "reclaimed by its restarted client client.successor"));
	ck_assert_int_lt(mdsw_getattr(&owner, ROOT, &in), 0);
	ck_assert_int_eq(mdsw_create(&succ, ROOT, "after", 0644, O_CREAT | O_EXCL, &in), 0);
	mdsw_close(&owner);
	mdsw_close(&succ);
}
END_TEST

/* MDSP_OP_RECLAIM_SESSION of session @sid with @uuid, from @w's session. */
static int reclaim_req(struct mdsw *w, uint64_t sid, const uint8_t *uuid)
{
	struct mdsp_request req;
	struct mdsp_reply rep;
	uint8_t u[16];
	int r;

	memcpy(u, uuid, sizeof(u));
	memset(&req, 0, sizeof(req));
	req.op = MDSP_OP_RECLAIM_SESSION;
	req.ino = sid;
	req.data = u;
	req.data_len = sizeof(u);
	r = mdsw_call(w, &req, &rep);
	mdsw_reply_free(&rep);
	return r;
}

/* The same eviction asked for by a live session (an NFS gateway taking
 * over another's clients, which may be alive: nfs_gw/nfs4/recovery.c):
 * not its own session (EINVAL), a wrong uuid evicts nothing, another
 * authenticated name is EPERM, the right one evicts and blocklists (the
 * evicted client's uuid cannot open a session again) whatever
 * mds_session_blocklist_on_evict says. */
START_TEST(test_takeover_reclaim_request)
{
	struct json_object *rep = NULL, *v;
	uint8_t key[MDSP_KEY_LEN], wrong[16];
	struct mdsw owner, taker, other, again;
	struct mdsp_inode in;
	char reason[256];

	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsproc_config_set(&P, "mds_session_blocklist_on_evict", "false"), 0);
	ck_assert_int_eq(mdsw_connect(&owner, P.port), 0);
	memset(owner.uuid, 0x5a, sizeof(owner.uuid));
	ck_assert_int_eq(mdsw_open(&owner, "client.gwa"), 0);
	ck_assert_int_eq(mdsw_create(&owner, ROOT, "held", 0644, O_CREAT | O_EXCL, &in), 0);
	ck_assert_int_eq(mdsw_connect(&taker, P.port), 0);
	memset(taker.uuid, 0x66, sizeof(taker.uuid));
	ck_assert_int_eq(mdsw_open(&taker, "client.gwb"), 0);

	ck_assert_int_eq(reclaim_req(&taker, taker.sid, taker.uuid), -EINVAL);
	memset(wrong, 0x5b, sizeof(wrong));
	ck_assert_int_eq(reclaim_req(&taker, owner.sid, wrong), 0);        /* nothing to reclaim */
	ck_assert(logged("nothing to reclaim", "client.gwb"));
	ck_assert_int_eq(mdsw_getattr(&owner, in.ino, &in), 0);

	ck_assert_int_eq(asok_auth("auth get-or-create", "client.other", &rep), 0);
	ck_assert(json_object_object_get_ex(rep, "key", &v));
	ck_assert_int_eq(mdsp_key_unbase64(json_object_get_string(v), key), 0);
	json_object_put(rep);
	ck_assert_int_eq(mdsw_connect_raw(&other, P.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&other, "client.other", key, reason, sizeof(reason)), 0);
	memset(other.uuid, 0x22, sizeof(other.uuid));
	ck_assert_int_eq(mdsw_open(&other, "client.thief"), 0);
	ck_assert_int_eq(reclaim_req(&other, owner.sid, owner.uuid), -EPERM);
	ck_assert_int_eq(mdsw_renew(&owner), 0);
	mdsw_close(&other);

	ck_assert_int_eq(reclaim_req(&taker, owner.sid, owner.uuid), 0);
	ck_assert(logged("evicted", "the gateway taking over its NFS clients, client.gwb"));
	ck_assert_int_lt(mdsw_getattr(&owner, ROOT, &in), 0);
	mdsw_close(&owner);
	/* blocklisted although mds_session_blocklist_on_evict is off */
	ck_assert_int_eq(mdsw_connect(&again, P.port), 0);
	memset(again.uuid, 0x5a, sizeof(again.uuid));
	ck_assert_int_lt(mdsw_open(&again, "client.gwa"), 0);
	mdsw_close(&again);
	ck_assert_int_eq(mdsw_create(&taker, ROOT, "after", 0644, O_CREAT | O_EXCL, &in), 0);
	mdsw_close(&taker);
}
END_TEST

/* The MDS refuses to start without the keyring it needs, saying what to do. */
START_TEST(test_missing_mds_keyring)
{
	static const char *const args[] = { "--mds_keyring=/nonexistent/loligo.keyring", NULL };
	char err[2048];

	ck_assert_int_ne(mdsproc_run(&P, args, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "/nonexistent/loligo.keyring") && strstr(err, "get-or-create"), "%s", err);
}
END_TEST

/* ---- issue 20, hardening --------------------------------------------------- */

/* @path has a line with @a (and @b, if not NULL); read once. */
static bool file_has(const char *path, const char *a, const char *b)
{
	char line[4096];
	bool found = false;
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, a) && (!b || strstr(line, b));
	fclose(f);
	return found;
}

static bool mds_logged(const char *a, const char *b)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/mds.log", P.dir);
	return file_has(path, a, b);
}

/* Connect to P as @name, with the key the MDS holds for it (asked on its admin socket), and open a session. */
static void connect_as(struct mdsw *w, const char *name)
{
	struct json_object *rep = NULL, *v;
	uint8_t key[MDSP_KEY_LEN];
	char reason[512] = "";

	ck_assert_int_eq(asok_auth("auth get", name, &rep), 0);
	ck_assert(json_object_object_get_ex(rep, "key", &v));
	ck_assert_int_eq(mdsp_key_unbase64(json_object_get_string(v), key), 0);
	json_object_put(rep);
	ck_assert_int_eq(mdsw_connect_raw(w, P.port), 0);
	ck_assert_msg(mdsw_handshake_as(w, name, key, reason, sizeof(reason)) == 0, "%s: %s", name, reason);
	ck_assert_int_eq(mdsw_open(w, name), 0);
}

/* A cap FLUSH of @ino growing it to @size, then a GETATTR on the same
 * connection: the MDS handles a connection's frames in order, so when
 * that answers the flush was handled.  The size the admin then sees. */
static uint64_t flush_size(struct mdsw *w, struct mdsw *adm, uint64_t ino, uint64_t size)
{
	struct mdsp_caps cm;
	struct mdsp_inode in;

	memset(&cm, 0, sizeof(cm));
	cm.op = MDSP_CAPS_FLUSH;
	cm.ino = ino;
	cm.caps = MDSP_CAP_PIN | MDSP_CAP_ATTR_SHARED;
	cm.flush_tid = 1;
	cm.dirty = MDSP_DIRTY_SIZE;
	cm.attr.size = size;
	ck_assert_int_eq(mdsw_send_caps(w, &cm), 0);
	mdsw_getattr(w, ino, &in);
	ck_assert_int_eq(mdsw_getattr(adm, ino, &in), 0);
	return in.size;
}

static int call_ino(struct mdsw *w, uint32_t op, uint64_t ino)
{
	struct mdsp_request req;
	struct mdsp_reply rep;
	int r;

	memset(&req, 0, sizeof(req));
	req.op = op;
	req.ino = ino;
	req.max_entries = 16;
	r = mdsw_call(w, &req, &rep);
	mdsw_reply_free(&rep);
	return r;
}

/*
 * The caps escape matrix over real sockets against loligo-mds: a key
 * limited to /home/alice (made with the CLI while the MDS runs) reaches
 * nothing outside by any route; allow r writes nothing; root_squash owns
 * uid 0's creates by 65534; a key without caps keeps everything; a changed
 * caps string applies to the next request.
 */
START_TEST(test_caps_escape_matrix)
{
	struct mdsw adm, a;
	struct mdsp_inode home, alice, bob, secret, in;
	struct mdsp_request req;
	struct mdsp_reply rep;
	struct json_object *o = NULL, *v, *c;

	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&adm, P.port), 0);
	ck_assert_int_eq(mdsw_open(&adm, "client.admin"), 0);
	ck_assert_int_eq(mdsw_mkdir(&adm, ROOT, "home", 0755, &home), 0);
	ck_assert_int_eq(mdsw_mkdir(&adm, home.ino, "alice", 0777, &alice), 0);
	ck_assert_int_eq(mdsw_mkdir(&adm, home.ino, "bob", 0777, &bob), 0);
	ck_assert_int_eq(mdsw_create(&adm, bob.ino, "secret", 0644, O_CREAT | O_RDWR, &secret), 0);

	ck_assert_int_eq(run_cli("auth get-or-create client.alice mds 'allow rw path=/home/alice'"), 0);
	ck_assert_int_eq(run_cli("fs authorize loligo client.ro /home/alice r"), 0);
	ck_assert_int_eq(run_cli("fs authorize loligo client.sq /home/alice rw root_squash"), 0);
	/* a bad caps string is refused before anything is written */
	ck_assert_int_ne(run_cli("auth get-or-create client.bad mds 'allow rx path=/x'"), 0);
	ck_assert_int_eq(asok_auth("auth get", "client.bad", &o), 0);
	ck_assert_msg(json_object_object_get_ex(o, "error", &v), "client.bad got a key: %s",
		      json_object_to_json_string(o));
	json_object_put(o);
	o = NULL;
	/* auth ls shows the caps */
	ck_assert_int_eq(asok_auth("auth ls", NULL, &o), 0);
	ck_assert(json_object_object_get_ex(o, "caps_mds", &c));
	ck_assert(json_object_object_get_ex(c, "client.alice", &v));
	ck_assert_str_eq(json_object_get_string(v), "allow rw path=/home/alice");
	ck_assert(json_object_object_get_ex(c, "client.ro", &v));
	ck_assert_str_eq(json_object_get_string(v), "allow r path=/home/alice");
	ck_assert(json_object_object_get_ex(c, "client.admin", &v));
	ck_assert_str_eq(json_object_get_string(v), "allow rw");
	json_object_put(o);

	connect_as(&a, "client.alice");
	ck_assert_int_eq(mdsw_create(&a, alice.ino, "mine", 0644, O_CREAT | O_RDWR, &in), 0);
	/* the way down to its directory, as a mount of /home/alice walks it */
	ck_assert_int_eq(mdsw_lookup(&a, ROOT, "home", &in), 0);
	ck_assert_int_eq(mdsw_lookup(&a, home.ino, "alice", &in), 0);
	ck_assert_int_eq(mdsw_lookup(&a, home.ino, "bob", &in), -EACCES);
	/* a mount of / lists nothing */
	memset(&rep, 0, sizeof(rep));
	ck_assert_int_eq(mdsw_readdir(&a, ROOT, 0, 16, &rep), -EACCES);
	mdsw_reply_free(&rep);
	/* .. from its root */
	ck_assert_int_eq(mdsw_lookup(&a, alice.ino, "..", &in), -EACCES);
	ck_assert_int_eq(call_ino(&a, MDSP_OP_LOOKUPPARENT, alice.ino), -EACCES);
	/* an inode outside by number (a file handle) */
	ck_assert_int_eq(call_ino(&a, MDSP_OP_LOOKUPINO, secret.ino), -EACCES);
	ck_assert_int_eq(mdsw_getattr(&a, secret.ino, &in), -EACCES);
	/* hard link and rename across the boundary */
	ck_assert_int_eq(mdsw_link(&a, alice.ino, "stolen", secret.ino, &in), -EPERM);
	ck_assert_int_eq(mdsw_rename(&a, alice.ino, "mine", bob.ino, "mine", 0), -EPERM);
	ck_assert_int_eq(mdsw_rename(&a, bob.ino, "secret", alice.ino, "got", 0), -EACCES);
	/* a create in a directory outside, and one sent as a replay */
	ck_assert_int_eq(mdsw_create(&a, bob.ino, "x", 0644, O_CREAT | O_RDWR, &in), -EACCES);
	memset(&req, 0, sizeof(req));
	req.op = MDSP_OP_CREATE;
	req.ino = bob.ino;
	req.name = "replayed";
	req.mode = S_IFREG | 0644;
	req.oflags = O_CREAT | O_RDWR;
	req.flags = MDSP_REQ_REPLAY;
	req.want_ino = secret.ino + 1000;
	ck_assert_int_eq(mdsw_call(&a, &req, &rep), -EACCES);
	mdsw_reply_free(&rep);
	ck_assert_int_eq(mdsw_lookup(&adm, bob.ino, "replayed", &in), -ENOENT);
	ck_assert_int_eq(mdsw_lookup(&adm, bob.ino, "mine", &in), -ENOENT);
	ck_assert_int_eq(mdsw_lookup(&adm, alice.ino, "stolen", &in), -ENOENT);

	/* caps changed while it runs: the next request follows them */
	ck_assert_int_eq(run_cli("auth caps client.alice mds 'allow r path=/home/alice'"), 0);
	ck_assert_int_eq(mdsw_create(&a, alice.ino, "more", 0644, O_CREAT | O_RDWR, &in), -EACCES);
	ck_assert_int_eq(mdsw_lookup(&a, alice.ino, "mine", &in), 0);
	mdsw_close(&a);

	connect_as(&a, "client.ro");
	a.keep_caps = true;
	ck_assert_int_eq(mdsw_lookup(&a, alice.ino, "mine", &in), 0);
	/* nor by a cap flush (size, mtime) of a file it holds caps on */
	ck_assert_uint_eq(flush_size(&a, &adm, in.ino, 4096), 0);
	ck_assert_int_eq(mdsw_create(&a, alice.ino, "w", 0644, O_CREAT | O_RDWR, &in), -EACCES);
	ck_assert_int_eq(mdsw_unlink(&a, alice.ino, "mine"), -EACCES);
	/* it held caps: closing its session lets them go now, not at its timeout */
	ck_assert_int_eq(mdsw_session_close(&a), 0);
	mdsw_close(&a);

	connect_as(&a, "client.sq");
	a.keep_caps = true;
	/* the same flush from a key that may write here does grow the file */
	ck_assert_int_eq(mdsw_lookup(&a, alice.ino, "mine", &in), 0);
	ck_assert_uint_eq(flush_size(&a, &adm, in.ino, 4096), 4096);
	a.caller.uid = 0;
	a.caller.gid = 0;
	ck_assert_int_eq(mdsw_create(&a, alice.ino, "squashed", 0644, O_CREAT | O_RDWR, &in), 0);
	ck_assert_uint_eq(in.uid, 65534);
	ck_assert_uint_eq(in.gid, 65534);
	mdsw_close(&a);

	/* the key without caps: everything, as before */
	ck_assert_int_eq(call_ino(&adm, MDSP_OP_LOOKUPINO, secret.ino), 0);
	ck_assert_int_eq(mdsw_create(&adm, bob.ino, "ok", 0644, O_CREAT | O_RDWR, &in), 0);
	mdsw_close(&adm);
}
END_TEST

/* A keyring whose caps line does not parse stops loligo-mds at start, naming the line. */
START_TEST(test_mds_keyring_bad_caps)
{
	static const char *const run_args[] = { "--mds_port=0", NULL };
	char path[512], err[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/keyring", P.dir);
	f = fopen(path, "a");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "\tcaps mds = \"allow rw path=relative\"\n");
	fclose(f);
	ck_assert_int_eq(mdsproc_run(&P, run_args, err, sizeof(err)), 1);
	ck_assert_msg(strstr(err, "line ") && strstr(err, "absolute path") && strstr(err, "mds_keyring"), "%s", err);
}
END_TEST

/* The MDS closed @fd (EOF or a reset); what it sent before is read and dropped. */
static bool peer_closed(int fd)
{
	char buf[4096];
	ssize_t n;

	do
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	while (n > 0);
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* A keyring group or others may access stops loligo-mds at start (exit 1),
 * whatever auth_required says, with the file, its mode and the chmod that
 * fixes it; 0600 starts. */
START_TEST(test_mds_keyring_too_open)
{
	static const char *const run_args[] = { "--mds_port=0", NULL };
	static const char *const run_noauth[] = { "--mds_port=0", "--auth_required=false", NULL };
	char path[512], err[4096], want[700];

	snprintf(path, sizeof(path), "%s/keyring", P.dir);
	ck_assert_int_eq(chmod(path, 0644), 0);
	ck_assert_msg(mdsproc_start(&P) != 0, "loligo-mds started with a keyring of mode 0644");
	ck_assert_int_eq(mdsproc_run(&P, run_args, err, sizeof(err)), 1);
	snprintf(want, sizeof(want), "Permissions 0644 for '%s' are too open", path);
	ck_assert_msg(strstr(err, want) && strstr(err, "mds_keyring"), "%s", err);
	snprintf(want, sizeof(want), "chmod 600 %s", path);
	ck_assert_msg(strstr(err, want), "%s", err);
	/* not more permissive without auth_required */
	ck_assert_int_eq(mdsproc_run(&P, run_noauth, err, sizeof(err)), 1);
	ck_assert_msg(strstr(err, "Permissions 0644"), "%s", err);
	/* others may not write it either */
	ck_assert_int_eq(chmod(path, 0620), 0);
	ck_assert_int_eq(mdsproc_run(&P, run_args, err, sizeof(err)), 1);
	ck_assert_msg(strstr(err, "Permissions 0620"), "%s", err);
	ck_assert_int_eq(chmod(path, 0600), 0);
	ck_assert_int_eq(mdsproc_start(&P), 0);
}
END_TEST

/* The same for the client: loligo-fuse (and its NFS gateway) stops at start
 * on a client keyring group or others may read, before it connects. */
START_TEST(test_client_keyring_too_open)
{
	char bin[512], kr[512], mnt[512], out[512], a_kr[600], a_log[600], want[700], text[8192];
	const char *bd = getenv("LOLIGO_BUILD_DIR");
	size_t n;
	FILE *f;
	int st;

	snprintf(bin, sizeof(bin), "%s/client/fuse/loligo-fuse", bd ? bd : ".");
	if (access(bin, X_OK)) {
		fprintf(stderr, "test_client_keyring_too_open: no %s (built without FUSE): skipped\n", bin);
		return;
	}
	snprintf(kr, sizeof(kr), "%s/client.keyring", P.dir);
	snprintf(mnt, sizeof(mnt), "%s/mnt", P.dir);
	snprintf(out, sizeof(out), "%s/fuse.out", P.dir);
	ck_assert_int_eq(mkdir(mnt, 0755), 0);
	ck_assert_int_eq(chmod(kr, 0644), 0);
	snprintf(a_kr, sizeof(a_kr), "--client_keyring=%s", kr);
	snprintf(a_log, sizeof(a_log), "--log_file=%s/fuse.log", P.dir);
	{
		/* no MDS at that address: a client that did not check would fail
		 * there instead, in client_mount_timeout */
		char *argv[] = { bin, "-f", "--client_mds_addr=127.0.0.1:1", a_kr, a_log, "--client_mount_timeout=2",
				 "--admin_socket=", mnt, NULL };

		st = lt_run(argv, out);
	}
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "loligo-fuse: wait status %d", st);
	f = fopen(out, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = 0;
	fclose(f);
	snprintf(want, sizeof(want), "Permissions 0644 for '%s' are too open", kr);
	ck_assert_msg(strstr(text, want) && strstr(text, "client_keyring"), "%s", text);
	snprintf(want, sizeof(want), "chmod 600 %s", kr);
	ck_assert_msg(strstr(text, want), "%s", text);
}
END_TEST

/* With auth_required off, a peer without a key may use a name that has no
 * key, never one that has: refused at HELLO, saying why.  A name that gets
 * a key is taken from the anonymous peers using it at once. */
START_TEST(test_keyed_name_needs_its_key)
{
	struct json_object *rep = NULL, *v;
	struct mdsw w, anon;
	struct mdsp_inode in;
	uint8_t key[MDSP_KEY_LEN];
	char reason[1024];

	snprintf(P.extra[P.nextra++], 256, "--auth_required=false");
	ck_assert_int_eq(mdsproc_start(&P), 0);

	ck_assert_int_eq(mdsw_connect_raw(&w, P.port), 0);
	reason[0] = 0;
	ck_assert_int_eq(mdsw_handshake_as(&w, "client.admin", NULL, reason, sizeof(reason)), -EACCES);
	ck_assert_msg(strstr(reason, "client.admin has a key") && strstr(reason, "client_keyring"), "%s", reason);
	LT_WAIT_UNTIL(peer_closed(w.fd), "the keyless claim of client.admin was not closed");
	mdsw_close(&w);
	LT_WAIT_UNTIL(mds_logged("client.admin offered no key, but the name has one", "peer 127.0.0.1:"),
		      "no log line for the refused claim");

	/* a name without a key: served */
	ck_assert_int_eq(mdsw_connect_raw(&anon, P.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&anon, "client.anon", NULL, NULL, 0), 0);
	ck_assert_int_eq(mdsw_open(&anon, "client.anon"), 0);
	ck_assert_int_eq(mdsw_getattr(&anon, ROOT, &in), 0);

	/* the name gets a key: the keyless peer loses it at once */
	ck_assert_int_eq(asok_auth("auth get-or-create", "client.anon", &rep), 0);
	ck_assert(json_object_object_get_ex(rep, "key", &v));
	ck_assert_int_eq(mdsp_key_unbase64(json_object_get_string(v), key), 0);
	json_object_put(rep);
	LT_WAIT_UNTIL(peer_closed(anon.fd), "the keyless peer of client.anon kept its connection");
	mdsw_close(&anon);
	LT_WAIT_UNTIL(mds_logged("client.anon got a key", "closed 1 connection(s)"), "no log line for the cut");

	/* and from now on only with it */
	ck_assert_int_eq(mdsw_connect_raw(&anon, P.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&anon, "client.anon", NULL, NULL, 0), -EACCES);
	mdsw_close(&anon);
	ck_assert_int_eq(mdsw_connect_raw(&w, P.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&w, "client.anon", key, NULL, 0), 0);
	ck_assert_int_eq(mdsw_open(&w, "client.anon"), 0);
	ck_assert_int_eq(mdsw_getattr(&w, ROOT, &in), 0);
	mdsw_close(&w);
}
END_TEST

/* `auth rm NAME` cuts NAME off at once: its connections are closed (with a
 * session or without), its sessions evicted, so nothing the old key derived
 * serves: not the MAC keys, not the session secret (a RECONNECT proving it,
 * even over a connection authenticated with the name's next key, fails).
 * Everyone else notices nothing. */
START_TEST(test_auth_rm_cuts_the_name_off)
{
	struct json_object *rep = NULL, *v;
	struct mdsw w, idle, by, again;
	struct mdsp_inode in;
	uint8_t key[MDSP_KEY_LEN], key2[MDSP_KEY_LEN], secret[MDSP_KEY_LEN];
	uint64_t sid;

	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(asok_auth("auth get-or-create", "client.victim", &rep), 0);
	ck_assert(json_object_object_get_ex(rep, "key", &v));
	ck_assert_int_eq(mdsp_key_unbase64(json_object_get_string(v), key), 0);
	json_object_put(rep);

	ck_assert_int_eq(mdsw_connect_raw(&w, P.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&w, "client.victim", key, NULL, 0), 0);
	ck_assert_int_eq(mdsw_open(&w, "client.victim"), 0);
	ck_assert_int_eq(mdsw_create(&w, ROOT, "v1", 0644, O_CREAT | O_EXCL, &in), 0);
	sid = w.sid;
	memcpy(secret, w.secret, sizeof(secret));
	ck_assert_int_eq(mdsw_connect_raw(&idle, P.port), 0);     /* authenticated, no session */
	ck_assert_int_eq(mdsw_handshake_as(&idle, "client.victim", key, NULL, 0), 0);
	ck_assert_int_eq(mdsw_connect(&by, P.port), 0);           /* client.admin, a bystander */
	ck_assert_int_eq(mdsw_open(&by, "client.bystander"), 0);

	ck_assert_int_eq(asok_auth("auth rm", "client.victim", &rep), 0);
	LT_WAIT_UNTIL(peer_closed(w.fd), "the session's connection of a removed key stays open");
	LT_WAIT_UNTIL(peer_closed(idle.fd), "an authenticated connection of a removed key stays open");
	ck_assert_msg(json_object_object_get_ex(rep, "sessions_evicted", &v) && json_object_get_int(v) == 1, "%s",
		      json_object_to_json_string(rep));
	ck_assert_msg(json_object_object_get_ex(rep, "connections_closed", &v) && json_object_get_int(v) == 2, "%s",
		      json_object_to_json_string(rep));
	json_object_put(rep);
	mdsw_close(&w);
	mdsw_close(&idle);
	LT_WAIT_UNTIL(mds_logged("client.victim lost its key (auth rm)", "closed 2 connection(s) and evicted 1"),
		      "no log line for the cut");
	LT_WAIT_UNTIL(mds_logged("session", "evicted: client.victim lost its key"), "no eviction logged");

	/* the bystander noticed nothing */
	ck_assert_int_eq(mdsw_getattr(&by, ROOT, &in), 0);
	ck_assert_int_eq(mdsw_create(&by, ROOT, "b1", 0644, O_CREAT | O_EXCL, &in), 0);

	/* the old key opens nothing */
	ck_assert_int_eq(mdsw_connect_raw(&again, P.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&again, "client.victim", key, NULL, 0), -ENOKEY);
	mdsw_close(&again);
	/* the name's next key authenticates, but what the old key derived (the
	 * session secret) resumes nothing */
	ck_assert_int_eq(asok_auth("auth get-or-create", "client.victim", &rep), 0);
	ck_assert(json_object_object_get_ex(rep, "key", &v));
	ck_assert_int_eq(mdsp_key_unbase64(json_object_get_string(v), key2), 0);
	json_object_put(rep);
	ck_assert(memcmp(key, key2, sizeof(key)));
	ck_assert_int_eq(mdsw_connect_raw(&again, P.port), 0);
	ck_assert_int_eq(mdsw_handshake_as(&again, "client.victim", key2, NULL, 0), 0);
	ck_assert_int_lt(mdsw_reconnect_secret(&again, sid, secret), 0);
	mdsw_close(&again);
	ck_assert_int_eq(mdsw_getattr(&by, ROOT, &in), 0);
	mdsw_close(&by);
}
END_TEST

/* A dead client's session (connected when the MDS was killed, so waited
 * for) costs one reconnect phase, not one per restart. */
START_TEST(test_dead_session_waited_for_once)
{
	struct mdsw w;
	struct mdsp_inode in;
	char path[512], line[2048];
	int waits = 0, i;
	FILE *f;

	snprintf(P.extra[P.nextra++], 256, "--mds_reconnect_timeout=1");
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
	ck_assert_int_eq(mdsw_open(&w, "client.doomed"), 0);
	ck_assert_int_eq(mdsw_create(&w, ROOT, "d", 0644, O_CREAT | O_EXCL, &in), 0);
	/* killed while the client is connected: it may have had UNSAFE replies */
	ck_assert_int_eq(mdsproc_stop(&P, SIGKILL), 128 + SIGKILL);
	mdsw_close(&w);
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(mdsproc_start(&P), 0);
		ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
		ck_assert_int_eq(mdsw_open(&w, "client.next"), 0);
		ck_assert_int_eq(mdsw_mkdir(&w, ROOT, i ? "m1" : "m0", 0755, &in), 0);
		ck_assert_int_eq(mdsw_session_close(&w), 0);
		mdsw_close(&w);
		ck_assert_int_eq(mdsproc_stop(&P, SIGTERM), 0);
	}
	snprintf(path, sizeof(path), "%s/mds.log", P.dir);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		waits += strstr(line, "reconnect phase: waiting") != NULL;
	fclose(f);
	ck_assert_int_eq(waits, 1);
}
END_TEST

/* ... and in all (mds_max_sessions), whoever asks. */
START_TEST(test_session_limit_in_all)
{
	struct mdsw w[3];
	int i;

	snprintf(P.extra[P.nextra++], 256, "--mds_max_sessions=2");
	ck_assert_int_eq(mdsproc_start(&P), 0);
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(mdsw_connect(&w[i], P.port), 0);
		ck_assert_int_eq(mdsw_open(&w[i], "client.all"), 0);
	}
	ck_assert_int_eq(mdsw_connect(&w[2], P.port), 0);
	ck_assert_int_eq(mdsw_open(&w[2], "client.all"), -EUSERS);
	ck_assert(logged("session open by client.all refused", "mds_max_sessions (2)"));
	/* a closed session frees its place */
	ck_assert_int_eq(mdsw_session_close(&w[0]), 0);
	ck_assert_int_eq(mdsw_open(&w[2], "client.all"), 0);
	for (i = 0; i < 3; i++)
		mdsw_close(&w[i]);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mds_auth");
	TCase *ts = tcase_create("sessions"), *tp = tcase_create("peers"), *ta;

	tcase_add_checked_fixture(ts, setup, teardown);
	tcase_set_timeout(ts, 120);
	tcase_add_test(ts, test_foreign_reconnect_refused);
	tcase_add_test(ts, test_stale_sessions_do_not_delay_restart);
	tcase_add_test(ts, test_session_limits);
	tcase_add_test(ts, test_session_limit_in_all);
	tcase_add_test(ts, test_dead_session_waited_for_once);
	tcase_add_test(ts, test_reclaim_needs_same_name);
	tcase_add_test(ts, test_takeover_reclaim_request);
	suite_add_tcase(s, ts);
	ta = tcase_create("auth");
	tcase_add_checked_fixture(ta, setup, teardown);
	tcase_set_timeout(ta, 60);
	tcase_add_test(ta, test_handshake_refusals);
	tcase_add_loop_test(ta, test_bad_mac_closes, MDSP_MAC_HMAC_SHA256, MDSP_MAC_GMAC_AES256 + 1);
	tcase_add_loop_test(ta, test_replayed_frame_rejected, MDSP_MAC_HMAC_SHA256, MDSP_MAC_GMAC_AES256 + 1);
	tcase_add_test(ta, test_command_needs_auth);
	tcase_add_test(ta, test_unauthenticated_session_secret);
	tcase_add_test(ta, test_auth_admin);
	tcase_add_test(ta, test_missing_mds_keyring);
	tcase_add_test(ta, test_mds_keyring_too_open);
	tcase_add_test(ta, test_client_keyring_too_open);
	tcase_add_test(ta, test_keyed_name_needs_its_key);
	tcase_add_test(ta, test_auth_rm_cuts_the_name_off);
	tcase_add_test(ta, test_caps_escape_matrix);
	tcase_add_test(ta, test_mds_keyring_bad_caps);
	suite_add_tcase(s, ta);
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
