/*
 * test_mds_badinput.c - loligo-mds under bad input: a peer that sends
 * garbage, an oversized length, an unknown message type, a bad crc, a
 * message a client must not send, or disconnects mid-message loses its
 * connection with a log line naming it and the reason, while a session that
 * was already open keeps working.  Slow and stalled peers: one that reads a
 * byte a second holds up nobody else's queued replies and is dropped when
 * its queue does not drain in time; one that stalls mid-message, or never
 * opens a session, is dropped after its deadline; connections beyond
 * mds_max_conns are refused.  And start-up errors: missing store,
 * missing or broken config file, port in use, no filesystem, mkfs twice -
 * one line on stderr and a non-zero exit.
 */
#include <arpa/inet.h>
#include <check.h>
#include <json-c/json.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/admin_sock.h"
#include "store/store.h"
#include "tools/bench/mds_wire.h"
#include "tests/lib/wait.h"

#define ROOT MDSP_ROOT_INO
static char parent_dir[256];
static struct mdsproc P;
static struct mdsw W;

/* The good session works in a directory of its own: the peers that
 * misbehave look at the root, and a change in a directory another session
 * caches waits (up to mds_session_timeout) for that session's ack. */
static uint64_t GOOD;

static void good_dir(void)
{
	struct mdsp_inode in;

	ck_assert_int_eq(mdsw_mkdir(&W, ROOT, "wdir", 0755, &in), 0);
	GOOD = in.ino;
}

static void setup(void)
{
	ck_assert_int_eq(mdsproc_init(&P, parent_dir), 0);
	ck_assert_int_eq(mdsproc_mkfs(&P), 0);
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_open(&W, "client.good"), 0);
	good_dir();
}

static void teardown(void)
{
	mdsw_close(&W);
	mdsproc_cleanup(&P);
}

static void setup_bare(void)
{
	ck_assert_int_eq(mdsproc_init(&P, parent_dir), 0);
}

static void teardown_bare(void)
{
	mdsproc_cleanup(&P);
}

/* The server closed @fd: a read sees EOF or a reset (false only on a hang). */
static bool closed_by_server(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t end = lt_mono_ns() + lt_hang_ns();
	char buf[4096];
	ssize_t n;

	while (lt_mono_ns() < end) {
		if (poll(&p, 1, 100) <= 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return true;
	}
	return false;
}

/* mds.log has a line with @a and @b (@a may be ""), now. */
static bool log_has(const char *a, const char *b)
{
	char path[512], line[1024];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/mds.log", P.dir);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, a) && strstr(line, b);
	fclose(f);
	return found;
}

/* The log mentions @what for the peer on local port @port (the line may
 * still be on its way: false only on a hang). */
static bool logged(uint16_t port, const char *what)
{
	char peer[64];

	snprintf(peer, sizeof(peer), "peer 127.0.0.1:%u: ", port);
	return LT_WAITED(log_has(peer, what));
}

static uint16_t local_port(int fd)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);

	getsockname(fd, (struct sockaddr *)&sin, &sl);
	return ntohs(sin.sin_port);
}

static void good_session_still_works(void)
{
	struct mdsp_inode in;
	char name[32];
	static int n;

	snprintf(name, sizeof(name), "alive%d", n++);
	ck_assert_int_eq(mdsw_create(&W, GOOD, name, 0644, O_CREAT | O_EXCL, &in), 0);
	ck_assert_int_eq(mdsw_getattr(&W, in.ino, &in), 0);
}

/* A valid GETATTR frame from @w, for tampering. */
static void getattr_frame(struct mdsw *w, struct mdsp_buf *b)
{
	struct mdsp_msg msg;

	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_REQUEST;
	msg.request.tid = 1;
	msg.request.op = MDSP_OP_GETATTR;
	msg.request.ino = ROOT;
	ck_assert_int_eq(mdsw_encode(w, &msg, b), 0);
}


static void offender(bool with_session, void (*send_bad)(struct mdsw *), const char *reason)
{
	struct mdsw bad;
	uint16_t port;

	ck_assert_int_eq(mdsw_connect(&bad, P.port), 0);
	if (with_session)
		ck_assert_int_eq(mdsw_open(&bad, "client.bad"), 0);
	port = local_port(bad.fd);
	send_bad(&bad);
	ck_assert_msg(closed_by_server(bad.fd), "server kept the connection open (%s)", reason);
	ck_assert_msg(logged(port, reason), "no log line naming the peer with '%s'", reason);
	mdsw_close(&bad);
	good_session_still_works();
}

static void send_garbage(struct mdsw *w)
{
	static const char junk[] = "GET / HTTP/1.1\r\nHost: example\r\n\r\nmore bytes to fill a header";

	ck_assert_int_eq(mdsw_send_raw(w, junk, sizeof(junk)), 0);
}

static void send_oversized(struct mdsw *w)
{
	struct mdsp_buf b;
	uint32_t big = MDSP_MAX_PAYLOAD + 1;

	getattr_frame(w, &b);
	b.data[20] = (uint8_t)big;
	b.data[21] = (uint8_t)(big >> 8);
	b.data[22] = (uint8_t)(big >> 16);
	b.data[23] = (uint8_t)(big >> 24);
	mdsw_fix_frame(w, &b, true);    /* a well-formed header: the length itself is refused */
	ck_assert_int_eq(mdsw_send_raw(w, b.data, MDSP_HDR_LEN), 0);
	mdsp_buf_free(&b);
}

static void send_unknown_type(struct mdsw *w)
{
	struct mdsp_buf b;

	getattr_frame(w, &b);
	b.data[6] = 99;
	b.data[7] = 0;
	mdsw_fix_frame(w, &b, true);
	ck_assert_int_eq(mdsw_send_raw(w, b.data, b.len), 0);
	mdsp_buf_free(&b);
}

static void send_bad_crc(struct mdsw *w)
{
	struct mdsp_buf b;

	getattr_frame(w, &b);
	b.data[b.len - 1 - (w->tx ? MDSP_MAC_LEN : 0)] ^= 0x5a;
	mdsw_fix_frame(w, &b, false);   /* a sender's MAC over a corrupt payload: the crc catches it */
	ck_assert_int_eq(mdsw_send_raw(w, b.data, b.len), 0);
	mdsp_buf_free(&b);
}

static void send_reply_message(struct mdsw *w)
{
	struct mdsp_msg msg;
	struct mdsp_buf b;

	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_REPLY;
	msg.reply.tid = 3;
	ck_assert_int_eq(mdsw_encode(w, &msg, &b), 0);
	ck_assert_int_eq(mdsw_send_raw(w, b.data, b.len), 0);
	mdsp_buf_free(&b);
}

static void send_half_and_hang_up(struct mdsw *w)
{
	struct mdsp_buf b;

	getattr_frame(w, &b);
	ck_assert_int_eq(mdsw_send_raw(w, b.data, MDSP_HDR_LEN + 3), 0);
	shutdown(w->fd, SHUT_WR);
	mdsp_buf_free(&b);
}

START_TEST(test_garbage)
{
	offender(false, send_garbage, "bad frame header");
}
END_TEST

START_TEST(test_oversized_length)
{
	offender(true, send_oversized, "bad frame header");
}
END_TEST

START_TEST(test_unknown_type)
{
	offender(true, send_unknown_type, "unknown message type 99");
}
END_TEST

START_TEST(test_bad_crc)
{
	offender(true, send_bad_crc, "crc");
}
END_TEST

START_TEST(test_unexpected_message)
{
	offender(true, send_reply_message, "unexpected reply message");
}
END_TEST

START_TEST(test_mid_message_disconnect)
{
	offender(true, send_half_and_hang_up, "disconnected mid-message");
}
END_TEST

START_TEST(test_request_without_session)
{
	struct mdsw w;
	struct mdsp_inode in;

	ck_assert_int_eq(mdsw_connect(&w, P.port), 0);
	ck_assert_int_eq(mdsw_getattr(&w, ROOT, &in), -ENOTCONN);
	mdsw_close(&w);
	good_session_still_works();
}
END_TEST

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

#define EXPECT_ONE_LINE_ERROR(args, needle)                                          \
	do {                                                                         \
		char err[2048];                                                      \
		int st = mdsproc_run(&P, args, err, sizeof(err));                    \
		ck_assert_msg(st != 0, "exit status 0 for %s", needle);              \
		ck_assert_msg(count_lines(err) == 1, "not one line: '%s'", err);     \
		ck_assert_msg(strstr(err, "loligo-mds: ") == err, "'%s'", err);      \
		ck_assert_msg(strstr(err, needle), "'%s' lacks '%s'", err, needle);  \
	} while (0)

START_TEST(test_startup_errors)
{
	char conf[600], path[600], portarg[64];
	int fd, one = 1;
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	FILE *f;

	/* missing store directory */
	{
		const char *args[] = { "--store_local_path=/nonexistent/loligo-store", NULL };

		EXPECT_ONE_LINE_ERROR(args, "/nonexistent/loligo-store");
	}
	/* a store directory without a filesystem */
	snprintf(path, sizeof(path), "--store_local_path=%s", P.dir);
	{
		const char *args[] = { path, NULL };

		EXPECT_ONE_LINE_ERROR(args, "--mkfs");
	}
	/* missing config file, and a broken one */
	{
		const char *args[] = { "-c", "/nonexistent/loligo.conf", NULL };

		EXPECT_ONE_LINE_ERROR(args, "/nonexistent/loligo.conf");
	}
	snprintf(conf, sizeof(conf), "%s/bad.conf", P.dir);
	f = fopen(conf, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "[mds]\nmds_port = not-a-number\n");
	fclose(f);
	{
		const char *args[] = { "-c", conf, NULL };

		EXPECT_ONE_LINE_ERROR(args, "bad.conf");
	}
	/* port in use */
	ck_assert_int_eq(mdsproc_mkfs(&P), 0);
	{
		const char *args[] = { "--mkfs", NULL };

		EXPECT_ONE_LINE_ERROR(args, "already exists");
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(listen(fd, 1), 0);
	getsockname(fd, (struct sockaddr *)&sin, &sl);
	snprintf(portarg, sizeof(portarg), "--mds_port=%u", ntohs(sin.sin_port));
	{
		const char *args[] = { portarg, NULL };

		EXPECT_ONE_LINE_ERROR(args, "in use");
	}
	close(fd);
	/* unknown argument */
	{
		const char *args[] = { "--frobnicate", NULL };

		EXPECT_ONE_LINE_ERROR(args, "frobnicate");
	}
#ifdef LOLIGO_MODULE_DIR
	/*
	 * The rados backend is a module: a program outside the build tree
	 * without an installed module says which file it could not load, at
	 * start, before anything else (a copy of loligo-mds in our directory).
	 */
	if (access(LOLIGO_MODULE_DIR "/store_rados.so", F_OK) == 0) {
		fprintf(stderr, "test_startup_errors: %s/store_rados.so is installed; not tried without it\n",
			LOLIGO_MODULE_DIR);
	} else {
		const char *args[] = { "--store_backend=rados", "--mkfs", NULL };
		char copy[sizeof(P.dir) + 32], bin[sizeof(P.bin)], cmd[sizeof(copy) + sizeof(bin) + 16];

		snprintf(copy, sizeof(copy), "%s/loligo-mds", P.dir);
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", P.bin, copy);
		ck_assert_int_eq(system(cmd), 0);
		memcpy(bin, P.bin, sizeof(bin));
		snprintf(P.bin, sizeof(P.bin), "%s", copy);
		EXPECT_ONE_LINE_ERROR(args, "cannot load the rados backend: " LOLIGO_MODULE_DIR "/store_rados.so");
		memcpy(P.bin, bin, sizeof(bin));
		unlink(copy);
	}
#endif
}
END_TEST

/* Damaged directory entries in the store cost those entries only. */
START_TEST(test_damaged_dentries)
{
	struct store_config sc = { .backend = "local" };
	struct store *st;
	struct store_pool *pool;
	struct store_op *op;
	struct mdsp_inode in;
	struct mdsp_reply rep;
	static const uint8_t truncated[] = { 1, 1, 200, 0, 0, 0, 7 };
	char path[512];
	uint64_t sid = W.sid;
	uint32_t k;
	int good = 0;

	ck_assert_int_eq(mdsw_create(&W, ROOT, "good1", 0644, O_CREAT, &in), 0);
	ck_assert_int_eq(mdsw_mkdir(&W, ROOT, "good2", 0755, &in), 0);
	mdsw_close(&W);
	ck_assert_int_eq(mdsproc_stop(&P, SIGTERM), 0);   /* everything in the objects */

	snprintf(path, sizeof(path), "%s/store", P.dir);
	sc.local_path = path;
	ck_assert_int_eq(store_open(&sc, &st), 0);
	ck_assert_int_eq(store_pool_open(st, "loligo_metadata", NULL, &pool), 0);
	op = store_op_new();
	store_op_omap_set(op, "evil", "garbage, not a dentry", 21);
	store_op_omap_set(op, "evil2", truncated, sizeof(truncated));
	ck_assert_int_eq(store_op_exec(pool, "1.dir", op), 0);
	store_pool_close(pool);
	store_close(st);

	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect(&W, sid), 0);
	ck_assert_int_eq(mdsw_readdir(&W, ROOT, 0, 100, &rep), 0);
	for (k = 0; k < rep.nentries; k++) {
		ck_assert(strncmp(rep.entries[k].name, "evil", 4));
		good += !strncmp(rep.entries[k].name, "good", 4);
	}
	mdsw_reply_free(&rep);
	ck_assert_int_eq(good, 2);
	ck_assert_int_eq(mdsw_lookup(&W, ROOT, "evil", &in), -ENOENT);
	ck_assert_int_eq(mdsw_lookup(&W, ROOT, "good1", &in), 0);
	ck_assert_int_eq(mdsw_mkdir(&W, ROOT, "more", 0755, &in), 0);
	{
		char lp[512], line[1024];
		FILE *f;
		bool found = false;

		snprintf(lp, sizeof(lp), "%s/mds.log", P.dir);
		f = fopen(lp, "r");
		ck_assert_ptr_nonnull(f);
		while (fgets(line, sizeof(line), f))
			found |= strstr(line, "damaged entry 'evil'") != NULL;
		fclose(f);
		ck_assert(found);
	}
}
END_TEST

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A client that sends mutations and never reads its replies must not slow
 * down anyone else (its replies queue up; past a bound it is dropped). */
START_TEST(test_client_that_does_not_read)
{
	struct mdsw slow;
	struct mdsp_inode in;
	struct mdsp_msg msg;
	struct mdsp_buf b;
	double worst = 0, t0;
	char name[32];
	int i;

	ck_assert_int_eq(mdsw_create(&W, ROOT, "target", 0644, O_CREAT, &in), 0);
	ck_assert_int_eq(mdsw_connect(&slow, P.port), 0);
	ck_assert_int_eq(mdsw_open(&slow, "client.slow"), 0);
	for (i = 0; i < 30000; i++) {
		memset(&msg, 0, sizeof(msg));
		msg.type = MDSP_MSG_REQUEST;
		msg.request.tid = (uint64_t)i + 1;
		msg.request.oldest_tid = (uint64_t)i + 1;
		msg.request.op = MDSP_OP_SETATTR;
		msg.request.ino = in.ino;
		msg.request.mask = MDSP_SETATTR_MODE;
		msg.request.attr.mode = 0600 | (uint32_t)(i & 077);
		ck_assert_int_eq(mdsw_encode(&slow, &msg, &b), 0);
		ck_assert_int_eq(mdsw_send_raw(&slow, b.data, b.len), 0);
		mdsp_buf_free(&b);
		if (i % 1000 == 999) {
			/* meanwhile the good client goes on at its usual pace */
			snprintf(name, sizeof(name), "g%d", i);
			t0 = mono_s();
			ck_assert_int_eq(mdsw_create(&W, ROOT, name, 0644, O_CREAT | O_EXCL, &in), 0);
			if (mono_s() - t0 > worst)
				worst = mono_s() - t0;
			ck_assert_int_eq(mdsw_getattr(&W, ROOT, &in), 0);
			in.ino = 0;
			ck_assert_int_eq(mdsw_lookup(&W, ROOT, "target", &in), 0);
		}
	}
	/* not a latency claim: a create queued behind the peer that does not
	 * read would wait for mds_send_drain_timeout (30 s), past the hang bound */
	ck_assert_msg(worst < lt_hang_ns() / 1e9, "a create took %.2f s while another client did not read", worst);
	mdsw_close(&slow);
	good_session_still_works();
}
END_TEST

/* ---- slow readers, deadlines and the connection limit ------------------ */

/* Connect with a small receive buffer, so replies back up at the MDS soon. */
static void connect_small(struct mdsw *w, int rcvbuf)
{
	ck_assert_int_eq(mdsw_connect_rcvbuf(w, P.port, rcvbuf), 0);
}

/* Field @key of the session named @name in `session ls` (over the good
 * session): -2 if there is no such session, -1 if it has no such field. */
static int64_t session_field(const char *name, const char *key)
{
	struct json_object *a, *o, *v;
	int64_t q = -2;
	char *out = NULL;
	size_t i;

	ck_assert_int_eq(mdsw_command(&W, "{\"prefix\":\"session ls\"}", &out), 0);
	a = json_tokener_parse(out);
	free(out);
	ck_assert_ptr_nonnull(a);
	for (i = 0; i < json_object_array_length(a); i++) {
		o = json_object_array_get_idx(a, i);
		if (json_object_object_get_ex(o, "client_name", &v) && !strcmp(json_object_get_string(v), name))
			q = json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : -1;
	}
	json_object_put(a);
	return q;
}

/* Bytes the MDS holds queued for session @name (its socket did not take them). */
static int64_t queued_bytes(const char *name)
{
	return session_field(name, "queued_bytes");
}

/* Send GETATTRs on @w without reading, in batches, until the MDS holds
 * replies for it that its socket did not take (or, if @drop_ok, until the
 * MDS dropped the connection: with a short drain deadline that may happen
 * while a batch is still going out).  Returns how many were sent. */
static int fill_until_queued(struct mdsw *w, const char *name, bool drop_ok)
{
	struct mdsp_msg msg;
	struct mdsp_buf b;
	int n = 0, k, r;

	while (n < 400000) {
		for (k = 0; k < 2000; k++, n++) {
			memset(&msg, 0, sizeof(msg));
			msg.type = MDSP_MSG_REQUEST;
			msg.request.tid = w->next_tid++;
			msg.request.op = MDSP_OP_GETATTR;
			msg.request.ino = ROOT;
			ck_assert_int_eq(mdsw_encode(w, &msg, &b), 0);
			r = mdsw_send_raw(w, b.data, b.len);
			mdsp_buf_free(&b);
			if (r && drop_ok)
				return n;
			ck_assert_int_eq(r, 0);
		}
		/* requests of one connection run in order: once a GETATTR on
		 * another one answered, look; the MDS may still be at it */
		for (k = 0; k < 50; k++) {
			if (queued_bytes(name) > 0)
				return n;
			if (drop_ok && session_field(name, "connected") == 0)
				return n;
			usleep(20000);
		}
	}
	ck_abort_msg("the MDS never queued replies for %s", name);
	return n;
}

/* A peer that reads one byte a second until told to stop or the MDS drops it. */
struct trickle {
	int fd;
	int stop_pipe[2];
	bool reset;            /* the MDS closed or reset the connection */
	uint64_t bytes;
};

static void *trickle_main(void *arg)
{
	struct trickle *t = arg;
	struct pollfd p = { .fd = t->stop_pipe[0], .events = POLLIN };
	char c;
	ssize_t n;

	for (;;) {
		if (poll(&p, 1, 1000) != 0)
			break;
		n = recv(t->fd, &c, 1, MSG_DONTWAIT);
		if (n == 1) {
			t->bytes++;
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			__atomic_store_n(&t->reset, true, __ATOMIC_RELEASE);
			break;
		}
	}
	return NULL;
}

static void trickle_start(struct trickle *t, int fd, pthread_t *th)
{
	memset(t, 0, sizeof(*t));
	t->fd = fd;
	ck_assert_int_eq(pipe(t->stop_pipe), 0);
	ck_assert_int_eq(pthread_create(th, NULL, trickle_main, t), 0);
}

static void trickle_stop(struct trickle *t, pthread_t th)
{
	ck_assert_int_eq(write(t->stop_pipe[1], "x", 1), 1);
	pthread_join(th, NULL);
	close(t->stop_pipe[0]);
	close(t->stop_pipe[1]);
}

/*
 * H3: a peer that reads a byte a second, with megabytes of replies queued
 * at the MDS, must not hold up the queued replies of another session.  The
 * other session's replies do not fit its socket either (it pipelines
 * without reading, then reads), so they too go through the flusher, which
 * must serve it while the slow one trickles.
 */
START_TEST(test_slow_reader_delays_nobody)
{
	struct mdsw slow, piped;
	struct trickle t;
	pthread_t th;
	struct mdsp_msg msg;
	const char *why;
	double t0;
	int n, got = 0, r;

	connect_small(&slow, 4096);
	ck_assert_int_eq(mdsw_open(&slow, "client.slow"), 0);
	fill_until_queued(&slow, "client.slow", false);
	trickle_start(&t, slow.fd, &th);

	connect_small(&piped, 4096);
	ck_assert_int_eq(mdsw_open(&piped, "client.piped"), 0);
	n = fill_until_queued(&piped, "client.piped", false);
	/* now read every reply: they come, not after the slow peer (which
	 * reads 1 byte/s: behind it would be past the hang bound) */
	t0 = mono_s();
	while (got < n) {
		r = mdsp_recv_auth(piped.fd, &msg, 1000, piped.rx, &piped.in_seq, &why);
		if (r == -ETIMEDOUT) {
			ck_assert_msg(mono_s() - t0 < lt_hang_ns() / 1e9, "%d of %d replies came, behind a slow reader",
				      got, n);
			continue;
		}
		ck_assert_msg(r == 0, "reply %d of %d: %d (%s) after %.1f s", got, n, r, why ? why : "", mono_s() - t0);
		if (msg.type == MDSP_MSG_REPLY)
			got++;
		mdsp_msg_free(&msg);
	}
	/* the slow one is still connected (default drain timeout), still queued */
	ck_assert(!__atomic_load_n(&t.reset, __ATOMIC_ACQUIRE));
	ck_assert_int_gt(queued_bytes("client.slow"), 0);
	good_session_still_works();
	trickle_stop(&t, th);
	mdsw_close(&piped);
	mdsw_close(&slow);
}
END_TEST

/* The next reply on @w, within the hang bound; its tid. */
static uint64_t next_reply_tid(struct mdsw *w)
{
	struct mdsp_msg msg;
	const char *why = NULL;
	double t0 = mono_s();
	uint64_t tid;
	int r;

	for (;;) {
		r = mdsp_recv_auth(w->fd, &msg, 1000, w->rx, &w->in_seq, &why);
		if (r == -ETIMEDOUT) {
			ck_assert_msg(mono_s() - t0 < lt_hang_ns() / 1e9, "no reply within the hang bound");
			continue;
		}
		ck_assert_msg(r == 0, "reply: %d (%s)", r, why ? why : "");
		if (msg.type != MDSP_MSG_REPLY) {
			mdsp_msg_free(&msg);
			continue;
		}
		tid = msg.reply.tid;
		ck_assert_int_eq(msg.reply.result, 0);
		mdsp_msg_free(&msg);
		return tid;
	}
}

/*
 * One connection's burst, cut anywhere: the reader's buffer holds several
 * frames from one recv and a part of the next, the replies it gathers go
 * out when it runs dry, and a recv that took less than the buffer holds
 * makes it wait (poll) before it reads again (net.c).  Whatever the cuts,
 * every request is answered once, in order: here one burst in random
 * pieces, then frames split across sends where the MDS must have read the
 * first piece (the reply to the frame before it came) before the rest is
 * sent, so it waits with half a frame in its buffer.
 */
START_TEST(test_burst_cut_anywhere)
{
	enum { N = 400 };
	struct mdsp_buf all, b;
	struct mdsp_msg msg;
	size_t off[N + 1], pos, cut;
	uint64_t tid0 = W.next_tid, want;
	unsigned int seed = 7;
	int i;

	mdsp_buf_init(&all);
	for (i = 0; i < N; i++) {
		memset(&msg, 0, sizeof(msg));
		msg.type = MDSP_MSG_REQUEST;
		msg.request.tid = W.next_tid++;
		msg.request.op = i % 2 ? MDSP_OP_GETATTR : MDSP_OP_LOOKUP;
		msg.request.ino = i % 2 ? GOOD : ROOT;
		msg.request.name = i % 2 ? NULL : (char *)"wdir";
		ck_assert_int_eq(mdsw_encode(&W, &msg, &b), 0);
		off[i] = all.len;
		all.data = realloc(all.data, all.len + b.len);
		ck_assert_ptr_nonnull(all.data);
		memcpy(all.data + all.len, b.data, b.len);
		all.len += b.len;
		mdsp_buf_free(&b);
	}
	off[N] = all.len;
	/* the first half at once, in random pieces */
	for (pos = 0; pos < off[N / 2]; pos += cut) {
		cut = 1 + (size_t)rand_r(&seed) % 700;
		if (cut > off[N / 2] - pos)
			cut = off[N / 2] - pos;
		ck_assert_int_eq(mdsw_send_raw(&W, all.data + pos, cut), 0);
	}
	for (want = tid0; want < tid0 + N / 2; want++)
		ck_assert_uint_eq(next_reply_tid(&W), want);
	/* then frame i-1's tail with frame i's head in one send, and i-1's
	 * reply before the rest of i goes */
	pos = off[N / 2];
	for (i = N / 2; i < N; i++) {
		size_t head = off[i] + 1 + (size_t)rand_r(&seed) % (off[i + 1] - off[i] - 1);

		ck_assert_int_eq(mdsw_send_raw(&W, all.data + pos, head - pos), 0);
		pos = head;
		if (i > N / 2)
			ck_assert_uint_eq(next_reply_tid(&W), tid0 + i - 1);
	}
	ck_assert_int_eq(mdsw_send_raw(&W, all.data + pos, off[N] - pos), 0);
	ck_assert_uint_eq(next_reply_tid(&W), tid0 + N - 1);
	mdsp_buf_free(&all);
	good_session_still_works();
}
END_TEST

/* Change a runtime option over the admin socket. */
static void config_set(const char *var, const char *val)
{
	struct json_object *req = json_object_new_object(), *rep = NULL;
	char path[512];

	json_object_object_add(req, "prefix", json_object_new_string("config set"));
	json_object_object_add(req, "var", json_object_new_string(var));
	json_object_object_add(req, "val", json_object_new_string(val));
	snprintf(path, sizeof(path), "%s/mds.asok", P.dir);
	ck_assert_int_eq(asok_request(path, req, &rep, 5000), 0);
	json_object_put(req);
	json_object_put(rep);
}

/* the "limits" fixture: short deadlines and a connection cap of 3 (the
 * frame deadline is set short only by the tests about it: a loaded machine
 * may pause a sender mid-frame for a moment) */
static void setup_limits(void)
{
	ck_assert_int_eq(mdsproc_init(&P, parent_dir), 0);
	snprintf(P.extra[P.nextra++], 256, "--mds_conn_open_timeout=2");
	snprintf(P.extra[P.nextra++], 256, "--mds_send_drain_timeout=2");
	snprintf(P.extra[P.nextra++], 256, "--mds_max_conns=3");
	ck_assert_int_eq(mdsproc_mkfs(&P), 0);
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_open(&W, "client.good"), 0);
	good_dir();
}

/* The server closes @fd (reading and dropping what comes); false only on a hang. */
static bool closed_within(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	double end = mono_s() + lt_hang_ns() / 1e9;
	char buf[4096];
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

/* M3: half a header, then silence: dropped after mds_frame_timeout (1 s). */
START_TEST(test_stall_mid_header)
{
	struct mdsw bad;
	struct mdsp_buf b;
	uint16_t port;
	double t0;

	config_set("mds_frame_timeout", "1");
	ck_assert_int_eq(mdsw_connect(&bad, P.port), 0);
	ck_assert_int_eq(mdsw_open(&bad, "client.stall"), 0);
	port = local_port(bad.fd);
	getattr_frame(&bad, &b);
	t0 = mono_s();
	ck_assert_int_eq(mdsw_send_raw(&bad, b.data, MDSP_HDR_LEN / 2), 0);
	mdsp_buf_free(&b);
	ck_assert_msg(closed_within(bad.fd), "a peer that stalled mid-header kept its connection");
	ck_assert_msg(mono_s() - t0 >= 0.9, "dropped before the frame deadline");
	ck_assert(logged(port, "stalled mid-message"));
	mdsw_close(&bad);
	good_session_still_works();
}
END_TEST

/* ... and in the middle of a payload. */
START_TEST(test_stall_mid_payload)
{
	struct mdsw bad;
	struct mdsp_buf b;
	uint16_t port;

	config_set("mds_frame_timeout", "1");
	ck_assert_int_eq(mdsw_connect(&bad, P.port), 0);
	ck_assert_int_eq(mdsw_open(&bad, "client.stall"), 0);
	port = local_port(bad.fd);
	getattr_frame(&bad, &b);
	ck_assert_int_gt(b.len, MDSP_HDR_LEN + 2);
	ck_assert_int_eq(mdsw_send_raw(&bad, b.data, MDSP_HDR_LEN + 2), 0);
	mdsp_buf_free(&b);
	ck_assert_msg(closed_within(bad.fd), "a peer that stalled mid-payload kept its connection");
	ck_assert(logged(port, "stalled mid-message"));
	mdsw_close(&bad);
	good_session_still_works();
}
END_TEST

/* M3: a connection that never opens a session goes after mds_conn_open_timeout. */
START_TEST(test_no_session_deadline)
{
	struct mdsw idle;
	char *out = NULL;
	uint16_t port;
	double t0 = mono_s();

	ck_assert_int_eq(mdsw_connect(&idle, P.port), 0);
	port = local_port(idle.fd);
	/* a read-only command is fine without a session, but does not count as one */
	ck_assert_int_eq(mdsw_command(&idle, "{\"prefix\":\"status\"}", &out), 0);
	free(out);
	ck_assert_msg(closed_within(idle.fd), "a connection without a session was kept");
	ck_assert_msg(mono_s() - t0 >= 1.9, "dropped before mds_conn_open_timeout");
	ck_assert(logged(port, "opened no session"));
	mdsw_close(&idle);
	/* W has a session and is older than the open deadline: still served */
	good_session_still_works();
}
END_TEST

/* A session as client.c on a new connection: true when the MDS took it. */
static bool open_client_c(struct mdsw *w)
{
	if (mdsw_connect(w, P.port) == 0 && mdsw_open(w, "client.c") == 0)
		return true;
	mdsw_close(w);
	return false;
}

/* M3: beyond mds_max_conns (3) connections are refused; the sessions that
 * are open keep working, and a slot that frees up is usable again. */
START_TEST(test_max_conns)
{
	struct mdsw a, b, over;
	struct mdsp_inode in;

	ck_assert_int_eq(mdsw_connect(&a, P.port), 0);
	ck_assert_int_eq(mdsw_open(&a, "client.a"), 0);
	ck_assert_int_eq(mdsw_connect(&b, P.port), 0);
	ck_assert_int_eq(mdsw_open(&b, "client.b"), 0);
	/* W, a and b: full */
	ck_assert_int_eq(mdsw_connect_raw(&over, P.port), 0);
	ck_assert_msg(closed_within(over.fd), "a connection beyond mds_max_conns was served");
	mdsw_close(&over);
	ck_assert_msg(LT_WAITED(log_has("", "refused: mds_max_conns (3)")), "no log line for the refused connection");
	ck_assert_int_eq(mdsw_getattr(&a, ROOT, &in), 0);
	ck_assert_int_eq(mdsw_getattr(&b, ROOT, &in), 0);
	good_session_still_works();
	/* b goes: its slot frees once the MDS saw it go */
	mdsw_session_close(&b);
	mdsw_close(&b);
	LT_WAIT_UNTIL(open_client_c(&over), "b's slot never freed");
	ck_assert_int_eq(mdsw_getattr(&over, ROOT, &in), 0);
	mdsw_close(&over);
	mdsw_close(&a);
}
END_TEST

/* H3: a peer that does not drain its queue within mds_send_drain_timeout
 * (2 s) is dropped, with a reset; its session stays for a reconnect. */
START_TEST(test_slow_reader_dropped)
{
	struct mdsw slow, again;
	struct trickle t;
	struct mdsp_inode in;
	pthread_t th;
	uint16_t port;
	uint64_t sid;
	double end;

	connect_small(&slow, 4096);
	ck_assert_int_eq(mdsw_open(&slow, "client.slow"), 0);
	sid = slow.sid;
	port = local_port(slow.fd);
	fill_until_queued(&slow, "client.slow", true);
	trickle_start(&t, slow.fd, &th);
	LT_WAIT_UNTIL(session_field("client.slow", "connected") == 0, "a peer reading 1 byte/s was never dropped");
	ck_assert(logged(port, "reads its replies too slowly"));
	/* the MDS reset the connection rather than keep the unsent bytes */
	end = mono_s() + lt_hang_ns() / 1e9;
	for (;;) {
		struct tcp_info ti;
		socklen_t sl = sizeof(ti);

		ck_assert_int_eq(getsockopt(slow.fd, IPPROTO_TCP, TCP_INFO, &ti, &sl), 0);
		if (ti.tcpi_state == TCP_CLOSE)
			break;
		ck_assert_msg(mono_s() < end, "the dropped connection was not reset (tcp state %d)", ti.tcpi_state);
		usleep(50000);
	}
	trickle_stop(&t, th);
	mdsw_close(&slow);
	good_session_still_works();
	ck_assert_int_eq(mdsw_connect(&again, P.port), 0);
	ck_assert_int_eq(mdsw_reconnect(&again, sid), 0);
	again.next_tid = 1000000;
	ck_assert_int_eq(mdsw_getattr(&again, ROOT, &in), 0);
	mdsw_close(&again);
}
END_TEST

/*
 * A peer that keeps its socket full (a gateway under load, or a hostile
 * one that pipelines GETATTRs and reads the replies) shares an event loop
 * with everyone else (mds_net_loops=1 here: every connection on it).  The
 * loop serves it a few reads per turn, not for as long as it keeps
 * sending: another connection's request is answered while the flood is
 * still going (the flooder is told to stop only after).
 */
static void setup_oneloop(void)
{
	ck_assert_int_eq(mdsproc_init(&P, parent_dir), 0);
	snprintf(P.extra[P.nextra++], sizeof(P.extra[0]), "--mds_net_loops=1");
	ck_assert_int_eq(mdsproc_mkfs(&P), 0);
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_open(&W, "client.good"), 0);
	good_dir();
}

struct flood {
	struct mdsw w;
	_Atomic bool stop;
	_Atomic uint64_t got;           /* reply bytes read */
	int err;
};

static void *flood_send_main(void *arg)
{
	struct flood *f = arg;
	struct mdsp_msg msg;
	struct mdsp_buf b;
	static uint8_t batch[256 << 10];
	size_t len;

	/* frames 256 KiB at a time: far faster than the MDS can answer them,
	 * so the socket stays full */
	while (!atomic_load(&f->stop)) {
		for (len = 0; len + 512 < sizeof(batch);) {
			memset(&msg, 0, sizeof(msg));
			msg.type = MDSP_MSG_REQUEST;
			msg.request.tid = f->w.next_tid++;
			msg.request.op = MDSP_OP_GETATTR;
			msg.request.ino = ROOT;
			if (mdsw_encode(&f->w, &msg, &b) || b.len > 512) {
				f->err = -ENOMEM;
				return NULL;
			}
			memcpy(batch + len, b.data, b.len);
			len += b.len;
			mdsp_buf_free(&b);
		}
		f->err = mdsw_send_raw(&f->w, batch, len);
		if (f->err)
			break;
	}
	return NULL;
}

static void *flood_read_main(void *arg)
{
	struct flood *f = arg;
	static char buf[1 << 16];
	ssize_t n;

	/* the replies, read as fast as they come (not decoded): the MDS never
	 * has a reason to drop this peer for not reading */
	while ((n = read(f->w.fd, buf, sizeof(buf))) > 0)
		atomic_fetch_add(&f->got, (uint64_t)n);
	return NULL;
}

START_TEST(test_flooder_starves_nobody)
{
	struct flood f;
	struct mdsw other;
	struct mdsp_inode in;
	pthread_t ts, tr;
	uint64_t got_then;
	int r;

	memset(&f, 0, sizeof(f));
	ck_assert_int_eq(mdsw_connect(&f.w, P.port), 0);
	ck_assert_int_eq(mdsw_open(&f.w, "client.flood"), 0);
	{
		/* megabytes in flight: the MDS's socket never runs dry, even
		 * when the sender is not scheduled for a while (a loaded CI) */
		int sz = 16 << 20;

		if (setsockopt(f.w.fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
			setsockopt(f.w.fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	}
	ck_assert_int_eq(mdsw_connect(&other, P.port), 0);
	ck_assert_int_eq(mdsw_open(&other, "client.other"), 0);
	ck_assert_int_eq(pthread_create(&tr, NULL, flood_read_main, &f), 0);
	ck_assert_int_eq(pthread_create(&ts, NULL, flood_send_main, &f), 0);
	/* the flood is on: the MDS answers it (1 MiB of replies came) */
	LT_WAIT_UNTIL(atomic_load(&f.got) > (1u << 20) || f.err, "the flood got no replies (%" PRIu64 " bytes)",
		      (uint64_t)atomic_load(&f.got));
	ck_assert_int_eq(f.err, 0);
	/* another connection on the same loop is answered meanwhile (a loop
	 * that served the flooder until its socket ran dry would not come
	 * back to it before the flood ends, i.e. after the hang bound) */
	other.timeout_ms = (int)(lt_hang_ns() / 1000000);
	r = mdsw_getattr(&other, ROOT, &in);
	ck_assert_msg(r == 0, "a GETATTR beside a flooding peer: %d (starved?)", r);
	/* and the flood was still on: its sender never failed, and the MDS
	 * goes on answering it */
	got_then = atomic_load(&f.got);
	ck_assert_int_eq(f.err, 0);
	LT_WAIT_UNTIL(atomic_load(&f.got) > got_then || f.err, "the flooder is no longer answered");
	ck_assert_int_eq(f.err, 0);
	good_session_still_works();
	atomic_store(&f.stop, true);
	pthread_join(ts, NULL);
	shutdown(f.w.fd, SHUT_RDWR);
	pthread_join(tr, NULL);
	mdsw_close(&other);
	mdsw_close(&f.w);
}
END_TEST

static uint32_t rd_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void wr_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* mds_net.rbuf_bytes now (every connection's receive buffer at the MDS) */
static uint64_t rbuf_bytes(void)
{
	uint64_t v = 0;

	ck_assert_int_eq(mdsproc_perf(&P, "mds_net", "rbuf_bytes", &v), 0);
	return v;
}

/*
 * A loop's receive buffer grows for a big frame (doubling as it arrives)
 * and goes back to its usual size once that frame is served: 16 MiB frames
 * from many peers must not stay pinned for their connections' lives.  The
 * frame is a GETATTR whose request struct carries 8 MiB the decoder skips
 * (what a newer client's fields look like to this MDS).
 */
START_TEST(test_big_frame_buffer_released)
{
	const size_t pad = 8u << 20;
	struct mdsp_msg msg;
	struct mdsp_buf b, big;
	uint64_t base, grown, tid;
	uint8_t *pl;
	size_t plen, half;
	bool mac = W.tx != NULL;

	base = rbuf_bytes();
	ck_assert_uint_gt(base, 0);
	memset(&msg, 0, sizeof(msg));
	msg.type = MDSP_MSG_REQUEST;
	msg.request.tid = tid = W.next_tid++;
	msg.request.op = MDSP_OP_GETATTR;
	msg.request.ino = ROOT;
	ck_assert_int_eq(mdsw_encode(&W, &msg, &b), 0);
	plen = b.len - MDSP_HDR_LEN - (mac ? MDSP_MAC_LEN : 0);
	memset(&big, 0, sizeof(big));
	big.len = b.len + pad;
	big.data = calloc(1, big.len);
	ck_assert_ptr_nonnull(big.data);
	memcpy(big.data, b.data, MDSP_HDR_LEN + plen);
	mdsp_buf_free(&b);
	/* the padding goes at the end of the outermost struct (the whole
	 * payload): its length, the frame's, the payload crc, then the header
	 * crc and MAC as a sender would */
	pl = big.data + MDSP_HDR_LEN;
	wr_le32(pl + 2, rd_le32(pl + 2) + (uint32_t)pad);
	wr_le32(big.data + 20, (uint32_t)(plen + pad));
	wr_le32(big.data + 24, crc32c(0, pl, plen + pad));
	mdsw_fix_frame(&W, &big, true);

	/* half of it: the buffer has grown past its usual size */
	half = big.len / 2;
	ck_assert_int_eq(mdsw_send_raw(&W, big.data, half), 0);
	LT_WAIT_UNTIL((grown = rbuf_bytes()) >= base + pad / 4, "the receive buffers did not grow for a big frame (%" PRIu64 " bytes, %" PRIu64 " before)",
		      grown, base);
	/* the rest: it is served, and the buffer shrinks back */
	ck_assert_int_eq(mdsw_send_raw(&W, big.data + half, big.len - half), 0);
	ck_assert_uint_eq(next_reply_tid(&W), tid);
	LT_WAIT_UNTIL((grown = rbuf_bytes()) <= base,
		      "the receive buffers kept %" PRIu64 " bytes after the big frame was served (%" PRIu64 " before)", grown, base);
	free(big.data);
	good_session_still_works();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mds_badinput");
	TCase *tc = tcase_create("peers"), *tb = tcase_create("startup"), *tl;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_garbage);
	tcase_add_test(tc, test_oversized_length);
	tcase_add_test(tc, test_unknown_type);
	tcase_add_test(tc, test_bad_crc);
	tcase_add_test(tc, test_unexpected_message);
	tcase_add_test(tc, test_mid_message_disconnect);
	tcase_add_test(tc, test_request_without_session);
	tcase_add_test(tc, test_damaged_dentries);
	tcase_add_test(tc, test_client_that_does_not_read);
	tcase_add_test(tc, test_slow_reader_delays_nobody);
	tcase_add_test(tc, test_burst_cut_anywhere);
	suite_add_tcase(s, tc);
	tl = tcase_create("limits");
	tcase_add_checked_fixture(tl, setup_limits, teardown);
	tcase_set_timeout(tl, 60);
	tcase_add_test(tl, test_stall_mid_header);
	tcase_add_test(tl, test_stall_mid_payload);
	tcase_add_test(tl, test_no_session_deadline);
	tcase_add_test(tl, test_max_conns);
	tcase_add_test(tl, test_slow_reader_dropped);
	suite_add_tcase(s, tl);
	tl = tcase_create("oneloop");
	tcase_add_checked_fixture(tl, setup_oneloop, teardown);
	tcase_set_timeout(tl, 60);
	tcase_add_test(tl, test_flooder_starves_nobody);
	tcase_add_test(tl, test_big_frame_buffer_released);
	suite_add_tcase(s, tl);
	tcase_add_checked_fixture(tb, setup_bare, teardown_bare);
	tcase_set_timeout(tb, 60);
	tcase_add_test(tb, test_startup_errors);
	suite_add_tcase(s, tb);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	signal(SIGPIPE, SIG_IGN);
	if (mdsproc_parent_init(parent_dir, sizeof(parent_dir), "test_mds_bad"))
		return 1;
	sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	mdsproc_parent_remove(parent_dir);
	return failed ? 1 : 0;
}
