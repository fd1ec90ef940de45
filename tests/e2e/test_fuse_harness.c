/*
 * test_fuse_harness.c - daemons and mounts for the FUSE e2e suites (see the
 * header).  Only plain POSIX here; no check assertions, so the parent's
 * fixtures can use it too.
 */
#include "tests/e2e/test_fuse_harness.h"
#include "common/admin_sock.h"
#include "tests/test_keyring.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

const char *lfs_bin(const char *rel, char *buf, size_t len)
{
	const char *b = getenv("LOLIGO_BUILD_DIR");
	snprintf(buf, len, "%s/%s", b && *b ? b : ".", rel);
	return buf;
}

const char *lfs_path(const struct lfs *fs, const char *rel, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", fs->mnt, rel);
	return buf;
}

const char *lfs_at(const char *root, const char *rel)
{
	static __thread char buf[LFS_AT_SLOTS][PATH_MAX + 256];
	static __thread unsigned i;

	i = (i + 1) % LFS_AT_SLOTS;
	snprintf(buf[i], sizeof(buf[i]), "%.*s/%s", PATH_MAX - 1, root, rel);
	return buf[i];
}

int64_t lfs_perf(const char *asok, const char *group, const char *name)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *g, *v;
	int64_t n = -1;

	json_object_object_add(req, "prefix", json_object_new_string("perf dump"));
	if (asok_request(asok, req, &rep, 10000) == 0 && json_object_object_get_ex(rep, group, &g) &&
	    json_object_object_get_ex(g, name, &v))
		n = json_object_get_int64(v);
	json_object_put(req);
	if (rep)
		json_object_put(rep);
	return n;
}

struct json_object *lfs_mds_cmd(const struct lfs *fs, const char *prefix, const char *const *kv, const char **err)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *e;
	char p[PATH_MAX + 16];

	snprintf(p, sizeof(p), "%s/mds.asok", fs->dir);
	json_object_object_add(req, "prefix", json_object_new_string(prefix));
	for (; kv && kv[0] && kv[1]; kv += 2)
		json_object_object_add(req, kv[0], json_object_new_string(kv[1]));
	if (asok_request(p, req, &rep, 30000))
		rep = NULL;
	json_object_put(req);
	if (err)
		*err = rep && json_object_object_get_ex(rep, "error", &e) ? json_object_get_string(e) : NULL;
	return rep;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static pid_t read_pid(const char *dir, const char *name)
{
	char p[PATH_MAX + 32];
	long pid = 0;
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = 0;
	fclose(f);
	return (pid_t)pid;
}

static void write_pid(const char *dir, const char *name, pid_t pid)
{
	char p[PATH_MAX + 32], t[32];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	snprintf(t, sizeof(t), "%ld\n", (long)pid);
	write_text(p, t);
}

/*
 * fork+exec with stdout/stderr to @log (appended) and a parent-death signal.
 * @gate >= 0: the child first waits until a byte (or EOF) arrives on it (see
 * lfs_mds_prepare).
 */
static pid_t spawn_gated(char *const argv[], const char *log, int deathsig, int gate)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	if (deathsig) {
		prctl(PR_SET_PDEATHSIG, deathsig);
		if (getppid() != parent)
			_exit(127);
	}
	if (gate >= 0) {
		char b;
		while (read(gate, &b, 1) < 0 && errno == EINTR)
			;
	}
	if (log) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
	}
	/* Nothing of ours leaks into the daemon: a file of the mount left open
	 * in a restarted MDS would keep the mount busy forever.  Closing one
	 * sends FLUSH to loligo-fuse, which may wait for the very MDS we are
	 * starting: restart an MDS while files are open through
	 * lfs_mds_prepare(), forked before they were opened. */
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	execv(argv[0], argv);
	fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* Threads of @pid still listed: a killed process's leader is a zombie
 * before its other threads are done exiting, and the last of them is what
 * closes the files (and drops flock()s: the MDS's mds.lock). */
static int threads_left(pid_t pid)
{
	char p[64];
	DIR *d;
	struct dirent *de;
	int n = 0;

	snprintf(p, sizeof(p), "/proc/%d/task", (int)pid);
	d = opendir(p);
	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* @pid no longer runs (gone, or a zombie someone else must reap, with no
 * thread but the leader left). */
static bool gone(pid_t pid)
{
	char p[64], buf[512], *rp;
	FILE *f;
	size_t n;

	if (kill(pid, 0) < 0)
		return true;
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	f = fopen(p, "r");
	if (!f)
		return true;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X') && threads_left(pid) <= 1;
}

static pid_t spawn(char *const argv[], const char *log, int deathsig)
{
	return spawn_gated(argv, log, deathsig, -1);
}

/* waitpid with a deadline; returns the wait status or -1 on timeout.  For a
 * process that is not our child, 0 once it is gone (status unknown). */
static int wait_for(pid_t pid, int timeout_ms)
{
	long end = now_ms() + timeout_ms;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return st;
		if (r < 0 && gone(pid))
			return 0;
		if (now_ms() > end)
			return -1;
		sleep_ms(10);
	}
}

int lfs_run(char *const argv[], int timeout_ms, const char *out_file)
{
	pid_t pid = spawn(argv, out_file, SIGKILL);
	int st;

	if (pid < 0)
		return -1;
	st = wait_for(pid, timeout_ms);
	if (st == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

bool lfs_is_mounted(const char *mnt)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		/* id parent maj:min root MOUNTPOINT opts ... - FSTYPE source super */
		char mp[PATH_MAX], *sep = strstr(line, " - ");
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1 || !sep)
			continue;
		if (!strcmp(mp, mnt) && !strncmp(sep + 3, "fuse.loligo ", 12))
			found = true;
	}
	fclose(f);
	return found;
}

void lfs_suite_add(Suite *s, const char *name, const TTest *t, void (*setup)(void), void (*teardown)(void),
		   int timeout)
{
	TCase *tc = tcase_create(name);

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, timeout);
	tcase_add_test(tc, t);
	suite_add_tcase(s, tc);
}

int lfs_suite_main(Suite *s, const char *prog)
{
	SRunner *sr;
	int failed;

	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
		fprintf(stderr, "%s: needs root and /dev/fuse; skipped\n", prog);
		return 77;
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

bool lfs_rados(void)
{
	const char *rconf = getenv("LOLIGO_E2E_RADOS_CONF");

	return rconf && *rconf;
}

int lfs_init(struct lfs *fs)
{
	return lfs_init_with(fs, NULL);
}

int lfs_init_with(struct lfs *fs, const char *conf)
{
	char tmpl[] = "/tmp/loligo-e2e.XXXXXX", p[PATH_MAX + 64], mds[PATH_MAX], text[8192], dbg[256] = "";
	char backend[PATH_MAX + 128];
	const char *base, *lvl = getenv("LOLIGO_E2E_DEBUG"), *rconf = getenv("LOLIGO_E2E_RADOS_CONF");
	static int ninit;

	memset(fs, 0, sizeof(*fs));
	if (!mkdtemp(tmpl))
		return -1;
	snprintf(fs->dir, sizeof(fs->dir), "%s", tmpl);
	snprintf(fs->mnt, sizeof(fs->mnt), "%s/mnt", fs->dir);
	snprintf(fs->mnt2, sizeof(fs->mnt2), "%s/mnt2", fs->dir);
	snprintf(fs->conf, sizeof(fs->conf), "%s/loligo.conf", fs->dir);
	snprintf(fs->asok, sizeof(fs->asok), "%s/client.asok", fs->dir);
	snprintf(p, sizeof(p), "%s/store", fs->dir);
	if (mkdir(fs->mnt, 0755) < 0 || mkdir(fs->mnt2, 0755) < 0 || mkdir(p, 0755) < 0)
		return -1;
	/* the non-root test user must be able to reach the mount point */
	chmod(fs->dir, 0755);
	base = fs->dir;
	/* LOLIGO_E2E_DEBUG=20: the daemons log at that level (debugging a
	 * flaky case, with LOLIGO_E2E_KEEP=1 to keep the logs) */
	if (lvl && *lvl)
		snprintf(dbg, sizeof(dbg), "debug_mds = %s\ndebug_client = %s\ndebug_fuse = %s\n", lvl, lvl, lvl);
	/* LOLIGO_E2E_RADOS_CONF=ceph.conf (tests/e2e/fuse_suite_rados.sh): the
	 * same filesystem on RADOS, in pools of a name of its own (per init) */
	if (rconf && *rconf)
		snprintf(backend, sizeof(backend), "store_backend = rados\nrados_conf = %s\nfs_name = e2e%ld_%d\n",
			 rconf, (long)getpid(), ++ninit);
	else
		snprintf(backend, sizeof(backend), "store_backend = local\nstore_local_path = %s/store\n", fs->dir);
	snprintf(text, sizeof(text),
		 "[global]\n"
		 "%s"
		 "%s%s"
		 "[mds]\n"
		 "mds_addr = 127.0.0.1\n"
		 "log_file = %s/mds.log\n"
		 "admin_socket = %s/mds.asok\n"
		 "mds_keyring = %s/keyring\n"
		 "[client]\n"
		 "log_file = %s/client.log\n"
		 "admin_socket = %s/client.asok\n"
		 "client_keyring = %s/client.keyring\n"
		 /* the lock files of client/reclaim.c, not the host's /run/loligo */
		 "client_reclaim_dir = %s/reclaim\n",
		 backend, dbg, conf ? conf : "", base, base, base, base, base, base, base);
	write_text(fs->conf, text);
	if (test_write_keyrings(fs->dir))
		return -1;
	{
		char *argv[] = {(char *)lfs_bin("mds/loligo-mds", mds, sizeof(mds)), "-c", fs->conf,
				"--mkfs", NULL};
		snprintf(p, sizeof(p), "%s/mds.out", fs->dir);
		if (lfs_run(argv, 60000, p) != 0) {
			fprintf(stderr, "harness: loligo-mds --mkfs failed (see %s)\n", p);
			return -1;
		}
	}
	return 0;
}

static pid_t mds_spawn(struct lfs *fs, int gate)
{
	char mds[PATH_MAX], portfile[PATH_MAX + 16], out[PATH_MAX + 16], port[32];

	snprintf(portfile, sizeof(portfile), "%s/mds.port", fs->dir);
	snprintf(out, sizeof(out), "%s/mds.out", fs->dir);
	snprintf(port, sizeof(port), "--mds_port=%d", fs->mds_port);
	char *argv[] = {(char *)lfs_bin("mds/loligo-mds", mds, sizeof(mds)), "-c", fs->conf, port,
			"--port-file", portfile, NULL};
	return spawn_gated(argv, out, SIGKILL, gate);
}

int lfs_mds_prepare(struct lfs *fs)
{
	int p[2];

	if (fs->mds_gate_pid > 0 || pipe2(p, O_CLOEXEC) < 0)
		return -1;
	fs->mds_gate_pid = mds_spawn(fs, p[0]);
	close(p[0]);
	if (fs->mds_gate_pid < 0) {
		close(p[1]);
		fs->mds_gate_pid = 0;
		return -1;
	}
	fs->mds_gate_fd = p[1];
	return 0;
}

int lfs_mds_start(struct lfs *fs)
{
	char portfile[PATH_MAX + 16], out[PATH_MAX + 16];
	long end;

	snprintf(portfile, sizeof(portfile), "%s/mds.port", fs->dir);
	snprintf(out, sizeof(out), "%s/mds.out", fs->dir);
	unlink(portfile);
	if (fs->mds_gate_pid > 0) {
		fs->mds_pid = fs->mds_gate_pid;
		fs->mds_gate_pid = 0;
		if (write(fs->mds_gate_fd, "g", 1) != 1) {
			/* EOF from the close below opens the gate too */
		}
		close(fs->mds_gate_fd);
	} else {
		fs->mds_pid = mds_spawn(fs, -1);
	}
	if (fs->mds_pid < 0)
		return -1;
	write_pid(fs->dir, "mds.pid", fs->mds_pid);
	/* the port file appears once it listens; a restart on the old port may
	 * need a moment for the kernel to let go of it */
	end = now_ms() + 30000; /* generous: the machine may be busy with fsyncs of others */
	while (now_ms() < end) {
		FILE *f = fopen(portfile, "r");
		int pn = 0;
		if (f) {
			if (fscanf(f, "%d", &pn) != 1)
				pn = 0;
			fclose(f);
		}
		if (pn > 0) {
			fs->mds_port = pn;
			return 0;
		}
		if (waitpid(fs->mds_pid, NULL, WNOHANG) == fs->mds_pid) {
			fprintf(stderr, "harness: loligo-mds exited at start-up:\n");
			fs->mds_pid = 0;
			lfs_dump_logs(fs);
			return -1;
		}
		sleep_ms(20);
	}
	fprintf(stderr, "harness: loligo-mds did not write %s in 30 s:\n", portfile);
	lfs_dump_logs(fs);
	return -1;
}

/* the lowest port the kernel hands out to connect() and bind(0) */
static int ephemeral_low(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
	int low = 32768, high;

	if (f) {
		if (fscanf(f, "%d %d", &low, &high) != 2)
			low = 32768;
		fclose(f);
	}
	return low;
}

/*
 * A port below the ephemeral range: a daemon restarted on the port it had
 * (failover tests) must find it free, and a port from that range, once its
 * daemon exited, can be taken meanwhile by any outgoing connection (a
 * client's, RADOS's messenger's): the standby that takes the rank then
 * fails to listen (EADDRINUSE) and exits.  Below the range, only an
 * explicit bind takes it; random, and checked free now.
 */
int lfs_free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timespec ts;
	int low = ephemeral_low(), base = low - 12288 > 1024 ? low - 12288 : 1024, span = low - base;
	uint64_t x;

	clock_gettime(CLOCK_REALTIME, &ts);
	x = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ 0x9e3779b97f4a7c15ull;
	for (int tries = 0; span > 0 && tries < 256; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port, ok;

		if (fd < 0)
			return -1;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		port = base + (int)(x % (uint64_t)span);
		sa.sin_port = htons((uint16_t)port);
		ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		close(fd);
		if (ok)
			return port;
	}
	return -1;
}

pid_t lfs_mds_daemon_start(struct lfs *fs, const char *name, int port, const char *const *extra)
{
	char mds[PATH_MAX], pf[PATH_MAX + 32], out[PATH_MAX + 32], portarg[32], nm[64], asok[PATH_MAX + 32],
	     log[PATH_MAX + 32], pidf[64];
	char *argv[30];
	int i = 0;
	pid_t pid;

	snprintf(pf, sizeof(pf), "%s/mds.%s.port", fs->dir, name);
	snprintf(out, sizeof(out), "%s/mds.%s.out", fs->dir, name);
	snprintf(portarg, sizeof(portarg), "--mds_port=%d", port);
	snprintf(nm, sizeof(nm), "--mds_name=%s", name);
	snprintf(asok, sizeof(asok), "--admin_socket=%s/mds.%s.asok", fs->dir, name);
	snprintf(log, sizeof(log), "--log_file=%s/mds.%s.log", fs->dir, name);
	unlink(pf);
	for (int k = 0; k < 6 && fs->mds_wrap[k]; k++)
		argv[i++] = (char *)fs->mds_wrap[k];
	argv[i++] = (char *)lfs_bin("mds/loligo-mds", mds, sizeof(mds));
	argv[i++] = "-c";
	argv[i++] = fs->conf;
	argv[i++] = portarg;
	argv[i++] = nm;
	argv[i++] = asok;
	argv[i++] = log;
	argv[i++] = "--port-file";
	argv[i++] = pf;
	for (int k = 0; extra && extra[k] && i < 29; k++)
		argv[i++] = (char *)extra[k];
	argv[i] = NULL;
	pid = spawn_gated(argv, out, SIGKILL, -1);
	snprintf(pidf, sizeof(pidf), "mds.%s.pid", name);
	if (pid > 0)
		write_pid(fs->dir, pidf, pid);
	return pid;
}

int lfs_mds_daemon_port(const struct lfs *fs, const char *name)
{
	char pf[PATH_MAX + 32];
	FILE *f;
	int pn = 0;

	snprintf(pf, sizeof(pf), "%s/mds.%s.port", fs->dir, name);
	f = fopen(pf, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%d", &pn) != 1)
		pn = 0;
	fclose(f);
	return pn;
}

void lfs_mds_stop(struct lfs *fs, int sig)
{
	if (fs->mds_pid <= 0)
		return;
	kill(fs->mds_pid, sig);
	if (wait_for(fs->mds_pid, 10000) == -1) {
		kill(fs->mds_pid, SIGKILL);
		waitpid(fs->mds_pid, NULL, 0);
	}
	fs->mds_pid = 0;
	write_pid(fs->dir, "mds.pid", 0);
}

/* loligo-fuse -f on @mnt; @tag names its files (client: client.out; client2: client2.out, .log, .asok) */
static int mount_one(struct lfs *fs, const char *mnt, const char *tag, pid_t *pidp, const char *opts)
{
	char fuse[PATH_MAX], out[PATH_MAX + 16], mds[64], o[1024], logo[PATH_MAX + 32], asoko[PATH_MAX + 32];
	char pidf[64];
	long end;
	int i = 0;
	char *argv[20];

	snprintf(out, sizeof(out), "%s/%s.out", fs->dir, tag);
	snprintf(mds, sizeof(mds), "--client_mds_addr=127.0.0.1:%d", fs->mds_port);
	argv[i++] = (char *)lfs_bin("client/fuse/loligo-fuse", fuse, sizeof(fuse));
	argv[i++] = "-f";
	argv[i++] = "-c";
	argv[i++] = fs->conf;
	argv[i++] = mds;
	if (strcmp(tag, "client") != 0) {
		snprintf(logo, sizeof(logo), "--log_file=%s/%s.log", fs->dir, tag);
		snprintf(asoko, sizeof(asoko), "--admin_socket=%s/%s.asok", fs->dir, tag);
		argv[i++] = logo;
		argv[i++] = asoko;
	}
	if (opts && *opts) {
		snprintf(o, sizeof(o), "%s", opts);
		argv[i++] = "-o";
		argv[i++] = o;
	}
	for (int k = 0; k < 4 && fs->fuse_args[k]; k++)
		argv[i++] = (char *)fs->fuse_args[k];
	argv[i++] = (char *)mnt;
	argv[i] = NULL;
	*pidp = spawn(argv, out, SIGTERM);
	if (*pidp < 0)
		return -1;
	snprintf(pidf, sizeof(pidf), strcmp(tag, "client") ? "fuse2.pid" : "fuse.pid");
	write_pid(fs->dir, pidf, *pidp);
	end = now_ms() + 30000;
	while (now_ms() < end) {
		if (lfs_is_mounted(mnt))
			return 0;
		if (waitpid(*pidp, NULL, WNOHANG) == *pidp) {
			fprintf(stderr, "harness: loligo-fuse (%s) exited before mounting:\n", tag);
			*pidp = 0;
			lfs_dump_logs(fs);
			return -1;
		}
		sleep_ms(20);
	}
	fprintf(stderr, "harness: %s not mounted after 30 s:\n", mnt);
	lfs_dump_logs(fs);
	return -1;
}

int lfs_mount(struct lfs *fs, const char *opts)
{
	return mount_one(fs, fs->mnt, "client", &fs->fuse_pid, opts);
}

int lfs_mount2(struct lfs *fs, const char *opts)
{
	return mount_one(fs, fs->mnt2, "client2", &fs->fuse2_pid, opts);
}

int lfs_nfs_port(const struct lfs *fs)
{
	char p[PATH_MAX + 16], line[1024];
	int port = -1;
	FILE *f;

	snprintf(p, sizeof(p), "%s/client.log", fs->dir);
	for (int tries = 0; tries < 500 && port < 0; tries++) {
		f = fopen(p, "r");
		if (f) {
			while (fgets(line, sizeof(line), f)) {
				/* "NFS gateway serving NFSv4.1 and NFSv4.0 on ADDR:PORT (port N)" */
				char *q = strstr(line, "NFS gateway serving");
				if (q && (q = strstr(q, "(port ")))
					port = atoi(q + 6);
			}
			fclose(f);
		}
		if (port < 0)
			sleep_ms(20);
	}
	return port;
}

static void fusermount(const char *mnt, bool lazy)
{
	char *argv[] = {"/usr/bin/fusermount3", lazy ? "-uz" : "-u", (char *)mnt, NULL};
	char *argv2[] = {"/bin/fusermount3", lazy ? "-uz" : "-u", (char *)mnt, NULL};

	char out[PATH_MAX + 32];
	int st;

	/* its messages go next to the mount point (DIR/fusermount.out) */
	snprintf(out, sizeof(out), "%s.fusermount.out", mnt);
	st = lfs_run(access(argv[0], X_OK) == 0 ? argv : argv2, 10000, out);
	if (st != 0) {
		char msg[512] = "";
		FILE *f = fopen(out, "r");
		if (f) {
			size_t n = fread(msg, 1, sizeof(msg) - 1, f);
			msg[n] = '\0';
			fclose(f);
		}
		fprintf(stderr, "harness: fusermount3 %s %s: exit %d: %s", argv[1], mnt, st, msg);
	}
	unlink(out);
}

static int umount_one(struct lfs *fs, const char *mnt, pid_t *pidp, const char *pidf)
{
	int st = 0;

	if (lfs_is_mounted(mnt)) {
		fusermount(mnt, false);
		if (lfs_is_mounted(mnt))
			fusermount(mnt, true);
	}
	if (*pidp > 0) {
		/* its unmount is bounded by client_unmount_timeout (10 s) plus the
		 * writeback of what is dirty: generous, for a loaded machine (it
		 * was 15 s, and a slow unmount read as a bad exit status) */
		st = wait_for(*pidp, 60000);
		if (st == -1) {
			fprintf(stderr, "harness: loligo-fuse did not exit after unmount; killing it\n");
			if (getenv("LOLIGO_E2E_GDB")) { /* where it hangs, for the report */
				char cmd[128];
				snprintf(cmd, sizeof(cmd), "gdb -p %d -batch -ex 'thread apply all bt' >&2 2>/dev/null",
					 (int)*pidp);
				if (system(cmd) != 0) {
					/* no gdb: nothing more to show */
				}
			}
			kill(*pidp, SIGKILL);
			waitpid(*pidp, NULL, 0);
		}
		*pidp = 0;
		write_pid(fs->dir, pidf, 0);
	}
	if (st == -1)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int lfs_umount(struct lfs *fs)
{
	return umount_one(fs, fs->mnt, &fs->fuse_pid, "fuse.pid");
}

int lfs_umount2(struct lfs *fs)
{
	return umount_one(fs, fs->mnt2, &fs->fuse2_pid, "fuse2.pid");
}

static void kill_pidfile(const char *dir, const char *name, int sig)
{
	pid_t pid = read_pid(dir, name);

	if (pid <= 0 || gone(pid))
		return;
	kill(pid, sig);
	for (int i = 0; i < 500 && !gone(pid); i++) {
		waitpid(pid, NULL, WNOHANG); /* reaps it if it is our child */
		sleep_ms(10);
	}
	if (!gone(pid))
		kill(pid, SIGKILL);
	waitpid(pid, NULL, WNOHANG);
}

static void rm_rf(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *de;

	if (lstat(path, &st) < 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlink(path);
		return;
	}
	d = opendir(path);
	if (d) {
		while ((de = readdir(d))) {
			char p[PATH_MAX];
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
			rm_rf(p);
		}
		closedir(d);
	}
	rmdir(path);
}

void lfs_cleanup(struct lfs *fs)
{
	struct stat st;

	if (!fs->dir[0])
		return;
	/* a mount whose loligo-fuse died under the test (ENOTCONN): its log
	 * ends with what it said before (the crash handler's ring too), and
	 * the directory is removed below, so show it now */
	for (int k = 0; k < 2; k++) {
		const char *mnt = k ? fs->mnt2 : fs->mnt;
		if (lfs_is_mounted(mnt) && stat(mnt, &st) < 0 && errno == ENOTCONN) {
			fprintf(stderr, "harness: the loligo-fuse of %s died during the test; its logs:\n", mnt);
			lfs_dump_logs(fs);
			break;
		}
	}
	/* unmount first so nothing can hang on a dead daemon */
	for (int k = 0; k < 2; k++) {
		const char *mnt = k ? fs->mnt2 : fs->mnt;
		if (!lfs_is_mounted(mnt))
			continue;
		fusermount(mnt, false);
		if (lfs_is_mounted(mnt))
			fusermount(mnt, true);
		if (lfs_is_mounted(mnt))
			umount2(mnt, MNT_DETACH);
	}
	kill_pidfile(fs->dir, "fuse.pid", SIGTERM);
	kill_pidfile(fs->dir, "fuse2.pid", SIGTERM);
	if (fs->fuse2_pid > 0)
		waitpid(fs->fuse2_pid, NULL, WNOHANG);
	kill_pidfile(fs->dir, "mds.pid", SIGKILL);
	/* lfs_mds_daemon_start's, by the names the suites use */
	for (const char *n = "abcd"; *n; n++) {
		char pidf[32];

		snprintf(pidf, sizeof(pidf), "mds.%c.pid", *n);
		kill_pidfile(fs->dir, pidf, SIGKILL);
	}
	if (fs->fuse_pid > 0)
		waitpid(fs->fuse_pid, NULL, WNOHANG);
	if (fs->mds_pid > 0)
		waitpid(fs->mds_pid, NULL, WNOHANG);
	if (!getenv("LOLIGO_E2E_KEEP"))
		rm_rf(fs->dir);
	else
		fprintf(stderr, "harness: kept %s\n", fs->dir);
	fs->dir[0] = '\0';
}

/* The last @lines lines of @path to stderr.  In C, not system("tail"): a
 * forked shell would inherit files of the mount, and closing them can block
 * on a dead MDS. */
static void tail_file(const char *path, int lines)
{
	static char buf[64 * 1024];
	FILE *f = fopen(path, "r");
	size_t n;
	long off;
	char *p;

	fprintf(stderr, "---- %s\n", path);
	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	off = ftell(f) - (long)sizeof(buf) + 1;
	fseek(f, off > 0 ? off : 0, SEEK_SET);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = buf + n;
	for (int k = 0; p > buf && k <= lines; p--)
		if (p[-1] == '\n' && ++k > lines)
			break;
	fputs(p, stderr);
}

void lfs_dump_logs(const struct lfs *fs)
{
	static const char *names[] = {"mds.out", "mds.log", "client.out", "client.log", "client2.out", "client2.log"};
	char p[PATH_MAX + 16];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", fs->dir, names[i]);
		if (i >= 4 && access(p, F_OK) != 0)
			continue;   /* no second mount */
		tail_file(p, 15);
	}
}

/* ---- file content ------------------------------------------------------- */

unsigned char lfs_pat(unsigned seed, off_t off)
{
	uint64_t x = (uint64_t)off * 0x9E3779B97F4A7C15ull + seed * 0x632BE59BD9B4E019ull;
	x ^= x >> 29;
	return (unsigned char)(x ^ (x >> 17) ^ ((uint64_t)off >> 12));
}

int lfs_write_file(const char *path, off_t size, unsigned seed)
{
	const size_t chunk = 1 << 20;
	unsigned char *buf = malloc(chunk);
	int fd, r = 0;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	for (off_t off = 0; off < size;) {
		size_t n = (size_t)(size - off) < chunk ? (size_t)(size - off) : chunk;
		for (size_t i = 0; i < n; i++)
			buf[i] = lfs_pat(seed, off + (off_t)i);
		ssize_t w = pwrite(fd, buf, n, off);
		if (w <= 0) {
			r = w < 0 ? -errno : -EIO;
			break;
		}
		off += w;
	}
	if (close(fd) < 0 && !r)
		r = -errno;
	free(buf);
	return r;
}

int lfs_check_file(const char *path, off_t size, unsigned seed)
{
	const size_t chunk = 1 << 20;
	unsigned char *buf = malloc(chunk);
	struct stat st;
	int fd, r = 0;
	off_t off = 0;

	if (!buf)
		return -1;
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "check %s: %s\n", path, strerror(errno));
		free(buf);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (st.st_size != size) {
		fprintf(stderr, "check %s: size %lld, expected %lld\n", path, (long long)st.st_size,
			(long long)size);
		r = -1;
	}
	while (!r) {
		ssize_t n = pread(fd, buf, chunk, off);
		if (n < 0) {
			fprintf(stderr, "check %s: read at %lld: %s\n", path, (long long)off, strerror(errno));
			r = -1;
			break;
		}
		if (n == 0)
			break;
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != lfs_pat(seed, off + i)) {
				fprintf(stderr, "check %s: byte %lld is 0x%02x, expected 0x%02x\n", path,
					(long long)(off + i), buf[i], lfs_pat(seed, off + i));
				r = -1;
				break;
			}
		}
		off += n;
	}
	if (!r && off != size) {
		fprintf(stderr, "check %s: read %lld bytes, expected %lld\n", path, (long long)off,
			(long long)size);
		r = -1;
	}
	close(fd);
	free(buf);
	return r;
}
