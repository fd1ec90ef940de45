/*
 * test_fuse_reclaim.c - a crashed client comes back at once (issue 19,
 * item 4; client/reclaim.c, mds/session.c session_reclaim).
 *
 * A loligo-fuse killed with kill -9 leaves its session at the MDS with its
 * caps: the directory-create cap on the directory it made.  Until
 * mds_session_timeout (600 s here, far past the tests' hang bound) every
 * other client's request on that directory waits for it.  A loligo-fuse
 * restarted with the same name on the same mount point proves the old one
 * is dead (its lock file is free) and has the MDS evict the old session at
 * mount: the other client's create goes through and the remount serves,
 * with the data the dead one had fsync'd.  A second live process with the
 * same name and mount point is refused.  The NFS gateway alone (loligo-fuse
 * --no-mount --nfs ADDR:PORT) keys on its address: a restarted gateway
 * releases at once the file locks its NFS clients held through the dead one.
 *
 * Real loligo-mds and loligo-fuse processes (tests/e2e/test_fuse_harness.c);
 * every wait is for an event (LT_WAIT_UNTIL), never for the clock.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include "common/admin_sock.h"
#include "tests/e2e/test_fuse_harness.h"
#include "tests/integration/nfs4_client.h"
#include "tests/lib/wait.h"

static struct lfs fs;

#define P(rel) lfs_at(fs.mnt, (rel))

/* a path on mount 2 */
#define P2(rel) lfs_at(fs.mnt2, (rel))

static int64_t perf_mds(const char *group, const char *name)
{
	char p[PATH_MAX + 16];
	snprintf(p, sizeof(p), "%s/mds.asok", fs.dir);
	return lfs_perf(p, group, name);
}

/* @path's text contains @needle */
static bool file_has(const char *path, const char *needle)
{
	char buf[16384];
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

/* The child's exit status once it exited, -1 while it runs. */
static int exited(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, WNOHANG) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void setup(void)
{
	/* the dead session would hold its caps for 10 minutes */
	ck_assert_int_eq(lfs_init_with(&fs, "mds_session_timeout = 600\nmds_session_autoclose = 1200\n"), 0);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
}

static void teardown(void)
{
	lfs_cleanup(&fs);
}

/*
 * Mount 1 makes directory d (it holds d's directory-create cap) and files
 * in it, fsyncs them, and is killed -9.  Mount 2's create in d waits for
 * that cap.  Mount 1 comes back (same name, same mount point): mount 2's
 * create completes and mount 1 serves, with what it had fsync'd, both long
 * before mds_session_timeout.
 */
START_TEST(test_restart_reclaims_dead_session)
{
	int64_t parked, reclaimed;
	pid_t b;
	int st;

	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	ck_assert_int_eq(lfs_mount2(&fs, NULL), 0);
	ck_assert_int_eq(mkdir(P("d"), 0755), 0);
	for (int i = 0; i < 3; i++) {
		char rel[32];

		snprintf(rel, sizeof(rel), "d/f%d", i);
		ck_assert_int_eq(lfs_write_file(P(rel), 100000 + i, 40 + (unsigned)i), 0);
		int fd = open(P(rel), O_RDWR);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(fsync(fd), 0);
		close(fd);
	}
	{
		int dfd = open(P("d"), O_RDONLY | O_DIRECTORY);

		ck_assert_int_ge(dfd, 0);
		ck_assert_int_eq(fsync(dfd), 0);
		close(dfd);
	}
	ck_assert_int_eq(kill(fs.fuse_pid, SIGKILL), 0);
	waitpid(fs.fuse_pid, NULL, 0);
	fs.fuse_pid = 0;

	/* mount 2 creates in d: it waits for the dead session's cap */
	parked = perf_mds("mds_caps", "requests_parked");
	ck_assert_int_ge(parked, 0);
	b = fork();
	ck_assert_int_ge(b, 0);
	if (b == 0) {
		int fd = open(P2("d/from-b"), O_CREAT | O_EXCL | O_WRONLY, 0644);

		_exit(fd >= 0 && close(fd) == 0 ? 0 : 1);
	}
	LT_WAIT_UNTIL(perf_mds("mds_caps", "requests_parked") > parked || exited(b) >= 0,
		      "mount 2's create in d neither waited nor completed");
	st = exited(b);
	ck_assert_msg(st < 0, "mount 2's create in d did not wait for the dead client's cap (exit %d)", st);

	/* mount 1 comes back: same name, same mount point */
	lfs_umount(&fs);   /* the dead process' FUSE connection */
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	LT_WAIT_UNTIL((st = exited(b)) >= 0,
		      "mount 2's create in d still waits for the dead client's session after its restart");
	ck_assert_int_eq(st, 0);
	reclaimed = perf_mds("mds", "sessions_reclaimed");
	ck_assert_int_eq(reclaimed, 1);

	/* the remount serves, with what the dead process had fsync'd */
	for (int i = 0; i < 3; i++) {
		char rel[32];

		snprintf(rel, sizeof(rel), "d/f%d", i);
		ck_assert_int_eq(lfs_check_file(P(rel), 100000 + i, 40 + (unsigned)i), 0);
	}
	{
		struct stat st_b;

		ck_assert_int_eq(stat(P("d/from-b"), &st_b), 0);
		ck_assert_int_eq(mkdir(P("d/after"), 0755), 0);
		ck_assert_int_eq(stat(P2("d/after"), &st_b), 0);
	}
	ck_assert_int_eq(lfs_umount2(&fs), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
}
END_TEST

/* A second live loligo-fuse with the same name and mount point is refused,
 * saying why, and the first mount goes on serving. */
START_TEST(test_second_live_process_refused)
{
	char fuse[PATH_MAX], mds[64], logo[PATH_MAX + 32], asoko[PATH_MAX + 32], out[PATH_MAX + 32];
	struct stat st;
	int r;

	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	ck_assert_int_eq(mkdir(P("x"), 0755), 0);
	snprintf(mds, sizeof(mds), "--client_mds_addr=127.0.0.1:%d", fs.mds_port);
	snprintf(logo, sizeof(logo), "--log_file=%s/client3.log", fs.dir);
	snprintf(asoko, sizeof(asoko), "--admin_socket=%s/client3.asok", fs.dir);
	snprintf(out, sizeof(out), "%s/client3.out", fs.dir);
	{
		char *argv[] = { (char *)lfs_bin("client/fuse/loligo-fuse", fuse, sizeof(fuse)), "-f", "-c", fs.conf,
				 mds, logo, asoko, fs.mnt, NULL };

		/* the bound only turns a process that runs on (old code: a second
		 * mount over the first) into a failure */
		r = lfs_run(argv, (int)(lt_hang_ns() / 1000000), out);
	}
	ck_assert_msg(r != 0 && r != -1, "a second live loligo-fuse on %s was not refused (exit %d)", fs.mnt, r);
	ck_assert_msg(file_has(out, "another live loligo client") && file_has(out, fs.mnt),
		      "the refusal does not say why (see %s)", out);
	/* the first one still serves */
	ck_assert(lfs_is_mounted(fs.mnt));
	ck_assert_int_eq(stat(P("x"), &st), 0);
	ck_assert_int_eq(lfs_write_file(P("x/y"), 4096, 7), 0);
	ck_assert_int_eq(lfs_check_file(P("x/y"), 4096, 7), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
}
END_TEST

/* ---- the NFS gateway alone ----------------------------------------------- */

static void setup_gw(void)
{
	ck_assert_int_eq(lfs_init_with(&fs, "mds_session_timeout = 600\nmds_session_autoclose = 1200\n"
					    "nfs_exports = id=1,path=/,rw,no_root_squash,insecure\n"
					    "nfs_rpcbind = false\nnfs4_grace_time = 0\n"), 0);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
}

/* kill what a failed case left of its gateways (their pid files) */
static void teardown_gw(void)
{
	for (int k = 1; k <= 3; k++) {
		char pidf[PATH_MAX + 32];
		FILE *f;
		int pid = 0;

		snprintf(pidf, sizeof(pidf), "%s/gw%d.pid", fs.dir, k);
		f = fopen(pidf, "r");
		if (f && fscanf(f, "%d", &pid) == 1 && pid > 0)
			kill(pid, SIGKILL);
		if (f)
			fclose(f);
	}
	lfs_cleanup(&fs);
}

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0), port;

	ck_assert_int_ge(s, 0);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(s, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	close(s);
	return port;
}

/*
 * loligo-fuse --no-mount --nfs 127.0.0.1:@port logging to DIR/@tag.log;
 * returns its pid once it serves (or, when it exits first, -(exit status)
 * - 1000 with its stderr in DIR/@tag.out).
 */
static pid_t gw_start(const char *tag, int port)
{
	char fuse[PATH_MAX], mds[64], logo[PATH_MAX + 32], asoko[PATH_MAX + 32], out[PATH_MAX + 32], nfs[64];
	char pidf[PATH_MAX + 32];
	pid_t pid;
	int st;

	snprintf(mds, sizeof(mds), "--client_mds_addr=127.0.0.1:%d", fs.mds_port);
	snprintf(logo, sizeof(logo), "--log_file=%s/%s.log", fs.dir, tag);
	snprintf(asoko, sizeof(asoko), "--admin_socket=%s/%s.asok", fs.dir, tag);
	snprintf(out, sizeof(out), "%s/%s.out", fs.dir, tag);
	snprintf(nfs, sizeof(nfs), "127.0.0.1:%d", port);
	lfs_bin("client/fuse/loligo-fuse", fuse, sizeof(fuse));
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *argv[] = { fuse, "-f", "-c", fs.conf, mds, logo, asoko, "--no-mount", "--nfs", nfs, NULL };
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(fuse, argv);
		_exit(127);
	}
	/* the check parent's teardown kills what the pid file names */
	snprintf(pidf, sizeof(pidf), "%s/%s.pid", fs.dir, tag);
	{
		FILE *f = fopen(pidf, "w");

		if (f) {
			fprintf(f, "%d\n", (int)pid);
			fclose(f);
		}
	}
	snprintf(logo, sizeof(logo), "%s/%s.log", fs.dir, tag);
	st = -1;
	LT_WAIT_UNTIL(file_has(logo, "NFS gateway serving") || (st = exited(pid)) >= 0,
		      "the gateway %s neither served nor exited", tag);
	return st >= 0 ? -st - 1000 : pid;
}

/* F_SETLK of a write lock on @path's [0,10): 0 or -errno */
static int try_lock(const char *path)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10 };
	int fd = open(path, O_RDWR), r;

	if (fd < 0)
		return -errno;
	r = fcntl(fd, F_SETLK, &fl) < 0 ? -errno : 0;
	close(fd);   /* gives the lock back, if it got it */
	return r;
}

/*
 * An NFSv4.1 client locks a file through a gateway alone (a FUSE mount's
 * F_SETLK on it is refused).  A second live gateway on the same address is
 * refused.  The gateway is killed -9 and restarted on its address: it
 * reclaims the dead one's session, and the FUSE mount gets the lock long
 * before mds_session_timeout (on the old code its open waited for it).
 */
START_TEST(test_gateway_restart_releases_locks)
{
	struct nfs4_fh d, fh;
	struct nfs4_stateid osid, lsid;
	char out[PATH_MAX + 32];
	int port = free_port(), st;
	pid_t g1, g2, g3, t;
	struct nc *n;

	ck_assert_int_eq(lfs_mount2(&fs, NULL), 0);
	ck_assert_int_eq(mkdir(P2("nd"), 0777), 0);
	ck_assert_int_eq(lfs_write_file(P2("nd/f"), 100, 3), 0);
	g1 = gw_start("gw1", port);
	ck_assert_int_gt(g1, 0);
	n = nc_connect((uint16_t)port, 1);
	nc_session(n, "reclaim-41", 1);
	nc_lookup_path(n, "nd", &d);
	ck_assert_uint_eq(nc_open(n, &d, "f", 3, 0, "o", NC_NOCREATE, NULL, &osid, &fh), NFS4_OK);
	{
		struct ncc c;
		struct nrep r;

		ncc_begin(&c, n);
		enc_putfh(&c, &fh);
		enc_lock_new(&c, NC_WRITE_LT, 0, 10, 0, &osid, 0, "lo");
		ncc_call(&c, &r);
		ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
		ck_assert_uint_eq(rep_next(&r, OP_LOCK), NFS4_OK);
		rep_stateid(&r, &lsid);
		rep_free(&r);
	}
	ck_assert_int_eq(try_lock(P2("nd/f")), -EAGAIN);

	/* a second live gateway on that address: refused, saying why */
	g2 = gw_start("gw2", port);
	ck_assert_msg(g2 < 0, "a second live gateway on 127.0.0.1:%d was not refused", port);
	snprintf(out, sizeof(out), "%s/gw2.out", fs.dir);
	ck_assert_msg(file_has(out, "another live loligo client"), "the refusal does not say why (see %s)", out);

	/* the gateway dies holding the NFS client's lock; the FUSE mount
	 * tries for it from a child (while the dead session holds caps on
	 * the file, even the open waits: that is what must end) */
	nc_close(n);
	ck_assert_int_eq(kill(g1, SIGKILL), 0);
	waitpid(g1, NULL, 0);
	t = fork();
	ck_assert_int_ge(t, 0);
	if (t == 0) {
		unsigned us = 1000;
		int r;

		while ((r = try_lock(P2("nd/f"))) == -EAGAIN)
			lt_poll_pause(&us);
		_exit(r == 0 ? 0 : 1);
	}
	/* restarted on the same address, it reclaims the dead one's session */
	g3 = gw_start("gw3", port);
	ck_assert_int_gt(g3, 0);
	LT_WAIT_UNTIL((st = exited(t)) >= 0, "the dead gateway's lock is still held after its restart");
	ck_assert_int_eq(st, 0);
	ck_assert_int_eq(perf_mds("mds", "sessions_reclaimed"), 1);
	kill(g3, SIGTERM);
	waitpid(g3, &st, 0);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the gateway's stop: status %d", st);
	ck_assert_int_eq(lfs_umount2(&fs), 0);
}
END_TEST

/* ---- a live client whose connection broke keeps its session ---------------- */

/* The id of loligo-fuse @pid's session at the MDS (client_name ends ".PID"), 0 if none;
 * *@connected (may be NULL): whether a connection is bound to it. */
static uint64_t session_of(pid_t pid, bool *connected)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *e, *v;
	char p[PATH_MAX + 16], suffix[32];
	uint64_t sid = 0;

	snprintf(p, sizeof(p), "%s/mds.asok", fs.dir);
	snprintf(suffix, sizeof(suffix), ".%d", (int)pid);
	json_object_object_add(req, "prefix", json_object_new_string("session ls"));
	if (asok_request(p, req, &rep, 10000) == 0 && json_object_is_type(rep, json_type_array))
		for (size_t i = 0; i < json_object_array_length(rep); i++) {
			const char *name;

			e = json_object_array_get_idx(rep, i);
			if (!json_object_object_get_ex(e, "client_name", &v))
				continue;
			name = json_object_get_string(v);
			if (strlen(name) > strlen(suffix) && !strcmp(name + strlen(name) - strlen(suffix), suffix) &&
			    json_object_object_get_ex(e, "id", &v)) {
				sid = (uint64_t)json_object_get_int64(v);
				if (connected)
					*connected = json_object_object_get_ex(e, "connected", &v) &&
						     json_object_get_boolean(v);
			}
		}
	json_object_put(req);
	if (rep)
		json_object_put(rep);
	return sid;
}

/* latency_proxy to the MDS on 127.0.0.1:@port (0: ephemeral); returns its pid, *@port set. */
static pid_t proxy_start(int *port)
{
	char proxy[PATH_MAX], portfile[PATH_MAX + 16], target[16], listen_[16];
	pid_t px;

	snprintf(portfile, sizeof(portfile), "%s/proxy.port", fs.dir);
	unlink(portfile);
	snprintf(target, sizeof(target), "%d", fs.mds_port);
	snprintf(listen_, sizeof(listen_), "%d", *port);
	lfs_bin("tools/proxy/latency_proxy", proxy, sizeof(proxy));
	px = fork();
	ck_assert_int_ge(px, 0);
	if (px == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(proxy, "latency_proxy", "--target", target, "--delay-ms", "0", "--listen", listen_,
		      "--port-file", portfile, (char *)NULL);
		_exit(127);
	}
	{
		int pp = 0;

		LT_WAIT_UNTIL(({
				      FILE *f = fopen(portfile, "r");

				      if (f) {
					      if (fscanf(f, "%d", &pp) != 1)
						      pp = 0;
					      fclose(f);
				      }
				      pp > 0;
			      }) || exited(px) >= 0,
			      "the proxy did not start");
		ck_assert_int_gt(pp, 0);
		*port = pp;
	}
	return px;
}

/*
 * Mount 1 talks to the MDS through a proxy, makes d and a file in it
 * (holding d's directory-create cap) and is cut off when the proxy dies.
 * Its process is alive: a second one with its name and mount point is
 * refused, so nothing can reclaim its session.  The proxy comes back on its
 * port: mount 1 resumes the same session (RECONNECT), nothing was evicted
 * or reclaimed, and its caps work as before: mount 2's create in d is
 * served once mount 1 gives the cap back.
 */
START_TEST(test_broken_connection_keeps_session)
{
	char addr[64], fuse[PATH_MAX], mds[64], logo[PATH_MAX + 32], asoko[PATH_MAX + 32], out[PATH_MAX + 32];
	int64_t evicted;
	uint64_t sid;
	bool conn = true;
	int pport = 0, r;
	pid_t px;

	px = proxy_start(&pport);
	snprintf(addr, sizeof(addr), "--client_mds_addr=127.0.0.1:%d", pport);
	fs.fuse_args[0] = addr;
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	fs.fuse_args[0] = NULL;
	ck_assert_int_eq(lfs_mount2(&fs, NULL), 0);
	sid = session_of(fs.fuse_pid, NULL);
	ck_assert_uint_ne(sid, 0);
	ck_assert_int_eq(mkdir(P("d"), 0755), 0);
	ck_assert_int_eq(lfs_write_file(P("d/f0"), 5000, 9), 0);
	evicted = perf_mds("mds", "sessions_evicted");

	/* its connection breaks; the process lives on */
	kill(px, SIGKILL);
	waitpid(px, NULL, 0);
	LT_WAIT_UNTIL(session_of(fs.fuse_pid, &conn) == sid && !conn, "the MDS did not see the connection close");

	/* a second process with its name and mount point: refused, it is alive */
	snprintf(mds, sizeof(mds), "--client_mds_addr=127.0.0.1:%d", fs.mds_port);
	snprintf(logo, sizeof(logo), "--log_file=%s/client3.log", fs.dir);
	snprintf(asoko, sizeof(asoko), "--admin_socket=%s/client3.asok", fs.dir);
	snprintf(out, sizeof(out), "%s/client3.out", fs.dir);
	{
		char *argv[] = { (char *)lfs_bin("client/fuse/loligo-fuse", fuse, sizeof(fuse)), "-f", "-c", fs.conf,
				 mds, logo, asoko, fs.mnt, NULL };

		r = lfs_run(argv, (int)(lt_hang_ns() / 1000000), out);
	}
	ck_assert_msg(r != 0 && r != -1 && file_has(out, "another live loligo client"),
		      "a second process took over a live client cut off from the MDS (exit %d, see %s)", r, out);

	/* the connection comes back: the same session, nothing evicted or reclaimed */
	px = proxy_start(&pport);
	LT_WAIT_UNTIL(session_of(fs.fuse_pid, &conn) == sid && conn, "mount 1 did not resume session %llu",
		      (unsigned long long)sid);
	ck_assert_int_eq(perf_mds("mds", "sessions_evicted"), evicted);
	ck_assert_int_eq(perf_mds("mds", "sessions_reclaimed"), 0);
	ck_assert_int_eq(lfs_check_file(P("d/f0"), 5000, 9), 0);
	/* its cap on d is revoked and given back as usual */
	ck_assert_int_eq(lfs_write_file(P2("d/from-b"), 10, 4), 0);
	ck_assert_int_eq(lfs_check_file(P("d/from-b"), 10, 4), 0);
	ck_assert_uint_eq(session_of(fs.fuse_pid, NULL), sid);
	ck_assert_int_eq(lfs_umount2(&fs), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
	kill(px, SIGKILL);
	waitpid(px, NULL, 0);
}
END_TEST

/*
 * A revoke the MDS could not send while a live client was cut off goes out
 * again when the client resumes its session, and is answered.  Mount 2's
 * create in d waits for mount 1's cap while mount 1's connection is down;
 * when it comes back, the MDS re-sends the revoke on the new connection.
 * Before, it went ahead of the OPEN reply and the client, still in its
 * handshake, dropped it ("CAPS before the session opened: ignored"); an ack
 * made before the session was marked open was refused (ENOTCONN) and lost
 * too: mount 2 waited for mds_session_timeout and mount 1 was evicted.
 */
static void revoke_across_reconnect(const char *gate_delay)
{
	char addr[64];
	int64_t evicted, parked;
	uint64_t sid;
	bool conn = true;
	int pport = 0, st;
	pid_t px, b;

	px = proxy_start(&pport);
	snprintf(addr, sizeof(addr), "--client_mds_addr=127.0.0.1:%d", pport);
	fs.fuse_args[0] = addr;
	fs.fuse_args[1] = gate_delay;
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	fs.fuse_args[0] = fs.fuse_args[1] = NULL;
	ck_assert_int_eq(lfs_mount2(&fs, NULL), 0);
	sid = session_of(fs.fuse_pid, NULL);
	ck_assert_uint_ne(sid, 0);
	ck_assert_int_eq(mkdir(P("d"), 0755), 0);
	ck_assert_int_eq(lfs_write_file(P("d/f0"), 5000, 9), 0);
	evicted = perf_mds("mds", "sessions_evicted");

	kill(px, SIGKILL);
	waitpid(px, NULL, 0);
	LT_WAIT_UNTIL(session_of(fs.fuse_pid, &conn) == sid && !conn, "the MDS did not see the connection close");

	/* mount 2 creates in d: the revoke of mount 1's cap cannot be sent */
	parked = perf_mds("mds_caps", "requests_parked");
	ck_assert_int_ge(parked, 0);
	b = fork();
	ck_assert_int_ge(b, 0);
	if (b == 0) {
		int fd = open(P2("d/from-b"), O_CREAT | O_EXCL | O_WRONLY, 0644);

		_exit(fd >= 0 && close(fd) == 0 ? 0 : 1);
	}
	LT_WAIT_UNTIL(perf_mds("mds_caps", "requests_parked") > parked || exited(b) >= 0,
		      "mount 2's create in d neither waited nor completed");
	st = exited(b);
	ck_assert_msg(st < 0, "mount 2's create did not wait for the cut-off client's cap (exit %d)", st);

	/* the connection comes back: the revoke goes again and is answered */
	px = proxy_start(&pport);
	LT_WAIT_UNTIL(session_of(fs.fuse_pid, &conn) == sid && conn, "mount 1 did not resume session %llu",
		      (unsigned long long)sid);
	LT_WAIT_UNTIL((st = exited(b)) >= 0 || perf_mds("mds", "sessions_evicted") != evicted,
		      "mount 2's create in d still waits for a cap of the resumed session");
	ck_assert_msg(st >= 0 && perf_mds("mds", "sessions_evicted") == evicted,
		      "mount 2's create was served only by evicting mount 1: the re-sent revoke was lost");
	ck_assert_int_eq(st, 0);
	ck_assert_int_eq(lfs_check_file(P("d/f0"), 5000, 9), 0);
	ck_assert_int_eq(access(P("d/from-b"), F_OK), 0);
	ck_assert_uint_eq(session_of(fs.fuse_pid, NULL), sid);
	ck_assert_int_eq(lfs_umount2(&fs), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
	kill(px, SIGKILL);
	waitpid(px, NULL, 0);
}

START_TEST(test_revoke_across_reconnect)
{
	revoke_across_reconnect(NULL);
}
END_TEST

/*
 * The same with mount 1 holding its gate shut for 2 s after its replays
 * (a test hook): the re-sent revoke now reaches it through the reader while
 * the session is still being set up, and the ack must wait for the gate
 * rather than be refused (ENOTCONN) and lost.
 */
START_TEST(test_revoke_ack_during_setup)
{
	revoke_across_reconnect("--client_debug_reconnect_gate_delay=2");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fuse_reclaim");

	lfs_suite_add(s, "restart_reclaims_dead_session", test_restart_reclaims_dead_session, setup, teardown, 300);
	lfs_suite_add(s, "second_live_process_refused", test_second_live_process_refused, setup, teardown, 300);
	lfs_suite_add(s, "broken_connection_keeps_session", test_broken_connection_keeps_session, setup, teardown,
		      300);
	lfs_suite_add(s, "revoke_across_reconnect", test_revoke_across_reconnect, setup, teardown, 300);
	lfs_suite_add(s, "revoke_ack_during_setup", test_revoke_ack_during_setup, setup, teardown, 300);
	lfs_suite_add(s, "gateway_restart_releases_locks", test_gateway_restart_releases_locks, setup_gw, teardown_gw,
		      300);
	return lfs_suite_main(s, "test_fuse_reclaim");
}
