/*
 * test_fuse_follow.c - a real FUSE mount whose client_mds_addr lists
 * several MDS addresses follows the MDS by itself (issue 19.3).
 *
 *  - dead_first: the first address has nothing listening; the mount works
 *    through the second, and says which one it uses.  A list with a bad
 *    entry is refused at start with the entry named.
 *  - failover_term, failover_kill9: the MDS is stopped (SIGTERM; kill -9)
 *    and a new loligo-mds starts on the same store on another port, both
 *    ports in the client's list from the start.  The client moves there by
 *    itself and resumes its session (same id); the files made before
 *    (fsync'd, and acknowledged while the journal was held, i.e. UNSAFE and
 *    known to the new MDS only through the replay) are all there exactly
 *    once, and the mount keeps working.
 *  - probe: the MDS is SIGSTOPped (its connection stays open, nothing
 *    answers) while a mkdir waits for it.  A plain listening socket on the
 *    second address stands for a new active MDS: the client probes it,
 *    declares the silent connection dead and goes there.  Then the stopped
 *    MDS is killed, the stand-in closed and a real MDS started on that
 *    address: the session resumes, the waiting mkdir completes once.
 *
 * Everything is waited for as an event (LT_WAIT_UNTIL on the client's
 * admin socket, on the socket of the stand-in), never for the clock.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <json-c/json.h>

#include "common/admin_sock.h"
#include "tests/e2e/test_fuse_harness.h"
#include "tests/lib/wait.h"

enum { NSYNCED = 8, NUNSAFE = 8 };

static struct lfs fs;
static int standin_fd = -1;     /* the probe case's listening socket */

/* a TCP port on 127.0.0.1 with nothing listening (bound, then closed);
 * @listen_fd non-NULL: keep it bound and listening instead */
static int local_port(int *listen_fd)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, port;

	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	if (listen_fd) {
		ck_assert_int_eq(listen(fd, 16), 0);
		*listen_fd = fd;
	} else {
		close(fd);
	}
	return port;
}

/* the client's mds_sessions entry, or NULL (admin socket not answering) */
static struct json_object *client_session(void)
{
	struct json_object *req = json_object_new_object(), *rep = NULL, *e;

	json_object_object_add(req, "prefix", json_object_new_string("mds_sessions"));
	if (asok_request(fs.asok, req, &rep, 10000) != 0)
		rep = NULL;
	json_object_put(req);
	if (!rep)
		return NULL;
	if (!json_object_is_type(rep, json_type_array) || json_object_array_length(rep) < 1) {
		json_object_put(rep);
		return NULL;
	}
	e = json_object_get(json_object_array_get_idx(rep, 0));
	json_object_put(rep);
	return e;
}

static const char *jstr(struct json_object *o, const char *k)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : "";
}

static int64_t jint(struct json_object *o, const char *k)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : -1;
}

/* the session is open, at MDS address @addr; *@id gets its id */
static bool session_open_at(const char *addr, uint64_t *id)
{
	struct json_object *s = client_session();
	bool ok = s && !strcmp(jstr(s, "state"), "open") && !strcmp(jstr(s, "mds"), addr);

	if (ok && id)
		*id = (uint64_t)jint(s, "session_id");
	json_object_put(s);
	return ok;
}

static bool session_str_is(const char *k, const char *want)
{
	struct json_object *s = client_session();
	bool ok = !strcmp(jstr(s, k), want);

	json_object_put(s);
	return ok;
}

static int64_t session_field(const char *k)
{
	struct json_object *s = client_session();
	int64_t v = jint(s, k);

	json_object_put(s);
	return v;
}

static long client_counter(const char *group, const char *name)
{
	return lfs_perf(fs.asok, group, name);
}

static int mds_config_set(const char *var, const char *val)
{
	struct json_object *req = json_object_new_object(), *rep = NULL;
	char path[PATH_MAX + 16];
	int r;

	snprintf(path, sizeof(path), "%s/mds.asok", fs.dir);
	json_object_object_add(req, "prefix", json_object_new_string("config set"));
	json_object_object_add(req, "var", json_object_new_string(var));
	json_object_object_add(req, "val", json_object_new_string(val));
	r = asok_request(path, req, &rep, 10000);
	json_object_put(req);
	json_object_put(rep);
	return r;
}

/* mount with client_mds_addr = @list (after the harness's own --client_mds_addr) */
static int mount_list(const char *list, const char *extra)
{
	static char arg[512];

	snprintf(arg, sizeof(arg), "--client_mds_addr=%s", list);
	fs.fuse_args[0] = arg;
	fs.fuse_args[1] = extra;
	return lfs_mount(&fs, NULL);
}

static void make_file(const char *name, unsigned seed, bool sync)
{
	char p[PATH_MAX];
	int fd;

	lfs_path(&fs, name, p, sizeof(p));
	if (!sync) {
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
		ck_assert_msg(fd >= 0, "create %s: %s", name, strerror(errno));
		ck_assert_int_eq(close(fd), 0);
		return;
	}
	ck_assert_int_eq(lfs_write_file(p, 4096 + seed, seed), 0);
	fd = open(p, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(fsync(fd) == 0, "fsync %s: %s", name, strerror(errno));
	close(fd);
}

/* d/ holds exactly s0..s<NSYNCED-1> (their contents) and u0..u<NUNSAFE-1>, each once */
static void check_files(void)
{
	int seen_s[NSYNCED] = {0}, seen_u[NUNSAFE] = {0}, others = 0;
	char p[PATH_MAX], n[64];
	struct dirent *de;
	DIR *d;

	d = opendir(lfs_path(&fs, "d", p, sizeof(p)));
	ck_assert_msg(d != NULL, "opendir d: %s", strerror(errno));
	while ((de = readdir(d))) {
		int k;
		char c;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (sscanf(de->d_name, "s%d%c", &k, &c) == 1 && k >= 0 && k < NSYNCED)
			seen_s[k]++;
		else if (sscanf(de->d_name, "u%d%c", &k, &c) == 1 && k >= 0 && k < NUNSAFE)
			seen_u[k]++;
		else
			others++;
	}
	closedir(d);
	ck_assert_msg(others == 0, "%d unexpected name(s) in d/", others);
	for (int k = 0; k < NSYNCED; k++) {
		ck_assert_msg(seen_s[k] == 1, "d/s%d (fsync'd) listed %d times", k, seen_s[k]);
		snprintf(n, sizeof(n), "d/s%d", k);
		ck_assert_msg(lfs_check_file(lfs_path(&fs, n, p, sizeof(p)), 4096 + k, (unsigned)k) == 0,
			      "d/s%d: wrong content after the failover", k);
	}
	for (int k = 0; k < NUNSAFE; k++)
		ck_assert_msg(seen_u[k] == 1, "d/u%d (acknowledged UNSAFE) listed %d times", k, seen_u[k]);
}

/* the mount still works: a new file, fsync'd, read back */
static void check_works(const char *name)
{
	char p[PATH_MAX];

	make_file(name, 77, true);
	ck_assert_int_eq(lfs_check_file(lfs_path(&fs, name, p, sizeof(p)), 4096 + 77, 77), 0);
}

/* ---- cases ----------------------------------------------------------------- */

START_TEST(test_dead_address_first)
{
	char list[128], addr[64], p[PATH_MAX];
	uint64_t id;

	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", fs.mds_port);
	snprintf(list, sizeof(list), "127.0.0.1:%d, %s", local_port(NULL), addr);
	if (mount_list(list, NULL) != 0)
		ck_abort_msg("mount with client_mds_addr = '%s' failed", list);
	LT_WAIT_UNTIL(session_open_at(addr, &id), "the session is not open at %s", addr);
	check_works("f");
	ck_assert_int_eq(mkdir(lfs_path(&fs, "dir", p, sizeof(p)), 0755), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);

	/* a bad entry: refused at start, the entry named */
	{
		char fuse[PATH_MAX], out[PATH_MAX + 16], bad[160], msg[2048] = "";
		FILE *f;
		size_t n;

		snprintf(bad, sizeof(bad), "--client_mds_addr=%s,127.0.0.1:http", addr);
		snprintf(out, sizeof(out), "%s/bad.out", fs.dir);
		char *argv[] = {(char *)lfs_bin("client/fuse/loligo-fuse", fuse, sizeof(fuse)), "-f", "-c", fs.conf,
				bad, fs.mnt, NULL};
		ck_assert_int_ne(lfs_run(argv, 30000, out), 0);
		f = fopen(out, "r");
		ck_assert(f != NULL);
		n = fread(msg, 1, sizeof(msg) - 1, f);
		msg[n] = '\0';
		fclose(f);
		ck_assert_msg(strstr(msg, "entry 2 '127.0.0.1:http'"), "the bad entry is not named: %s", msg);
		ck_assert(!lfs_is_mounted(fs.mnt));
	}
}
END_TEST

/*
 * The MDS at port A goes (@sig), a new one starts on the same store at
 * port B; both are in the client's list (B first: any order works).
 */
static void failover(int sig)
{
	char list[128], a_addr[64], b_addr[64], p[PATH_MAX], n[32];
	uint64_t id, id2;
	long replays0;
	int b_port;

	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	b_port = local_port(NULL);
	snprintf(a_addr, sizeof(a_addr), "127.0.0.1:%d", fs.mds_port);
	snprintf(b_addr, sizeof(b_addr), "127.0.0.1:%d", b_port);
	snprintf(list, sizeof(list), "%s,%s", b_addr, a_addr);
	if (mount_list(list, NULL) != 0)
		ck_abort_msg("mount with client_mds_addr = '%s' failed", list);
	LT_WAIT_UNTIL(session_open_at(a_addr, &id), "the session is not open at %s", a_addr);

	ck_assert_int_eq(mkdir(lfs_path(&fs, "d", p, sizeof(p)), 0755), 0);
	for (int k = 0; k < NSYNCED; k++) {
		snprintf(n, sizeof(n), "d/s%d", k);
		make_file(n, (unsigned)k, true);
	}
	/* from here on answered UNSAFE and never journaled: the new MDS learns
	 * these creates only from the client's replay */
	ck_assert_int_eq(mds_config_set("mds_journal_hold", "true"), 0);
	for (int k = 0; k < NUNSAFE; k++) {
		snprintf(n, sizeof(n), "d/u%d", k);
		make_file(n, 0, false);
	}
	replays0 = client_counter("mds_client", "replays");

	lfs_mds_stop(&fs, sig);                 /* reaped: its mds.lock is free */
	fs.mds_port = b_port;
	ck_assert_msg(lfs_mds_start(&fs) == 0, "a new loligo-mds on port %d did not start", b_port);

	LT_WAIT_UNTIL(session_open_at(b_addr, &id2), "the client did not follow the MDS to %s", b_addr);
	ck_assert_msg(id2 == id, "the session was not resumed: id %llu at %s, %llu before",
		      (unsigned long long)id2, b_addr, (unsigned long long)id);
	ck_assert_int_ge(session_field("reconnects"), 1);
	ck_assert_int_eq(session_field("address_moves"), 1);
	ck_assert_msg(client_counter("mds_client", "replays") > replays0,
		      "no request was replayed: the UNSAFE creates were not tested");
	check_files();
	check_works("after");
	/* and what the new MDS has is durable: a fresh mount sees it */
	ck_assert_int_eq(lfs_umount(&fs), 0);
	ck_assert_int_eq(mount_list(list, NULL), 0);
	check_files();
	ck_assert_int_eq(lfs_umount(&fs), 0);
}

START_TEST(test_failover_sigterm)
{
	failover(SIGTERM);
}
END_TEST

START_TEST(test_failover_kill9)
{
	failover(SIGKILL);
}
END_TEST

/* A connection waiting on the stand-in: read what it says and answer with
 * one byte, as a live MDS answers the probe's HELLO.  Returns 1 if one was
 * answered. */
static int standin_answer(void)
{
	struct pollfd pfd = { .fd = standin_fd, .events = POLLIN };
	char buf[512];
	int c, n = 0;

	if (poll(&pfd, 1, 0) != 1 || (c = accept(standin_fd, NULL, NULL)) < 0)
		return 0;
	pfd = (struct pollfd){ .fd = c, .events = POLLIN };
	if (poll(&pfd, 1, 2000) == 1 && read(c, buf, sizeof(buf)) > 0)
		n = write(c, "x", 1) == 1;
	close(c);
	return n;
}

START_TEST(test_probe_follows_silent_mds)
{
	char list[128], a_addr[64], b_addr[64], p[PATH_MAX];
	struct pollfd pfd;
	uint64_t id, id2;
	pid_t child;
	int b_port, st, conns = 0;

	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	b_port = local_port(&standin_fd);
	snprintf(a_addr, sizeof(a_addr), "127.0.0.1:%d", fs.mds_port);
	snprintf(b_addr, sizeof(b_addr), "127.0.0.1:%d", b_port);
	snprintf(list, sizeof(list), "%s,%s", a_addr, b_addr);
	/* the stand-in listens but is never asked while the MDS answers */
	if (mount_list(list, "--client_mds_probe_after=0.5") != 0)
		ck_abort_msg("mount with client_mds_addr = '%s' failed", list);
	LT_WAIT_UNTIL(session_open_at(a_addr, &id), "the session is not open at %s", a_addr);
	check_works("before");

	/* the MDS stops answering, its sockets open: a mkdir waits for it */
	ck_assert_int_eq(kill(fs.mds_pid, SIGSTOP), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		close(standin_fd);      /* or the stand-in's port stays taken */
		_exit(mkdir(lfs_path(&fs, "during", p, sizeof(p)), 0755) == 0 ? 0 : 1);
	}

	/* the client probes the stand-in (a connect and a HELLO, which it
	 * answers as a live MDS would), then connects to it for good and
	 * sends its handshake */
	LT_WAIT_UNTIL((conns += standin_answer(), session_field("probe_moves") == 1 &&
						   session_str_is("mds", b_addr)),
		      "the client did not leave the silent MDS for %s", b_addr);
	pfd = (struct pollfd){ .fd = standin_fd, .events = POLLIN };
	LT_WAIT_UNTIL(poll(&pfd, 1, 0) == 1, "nothing connected to the stand-in");
	{
		int c = accept(standin_fd, NULL, NULL);

		ck_assert_int_ge(c, 0);
		close(c);
		conns++;
	}

	/* the real new MDS takes the address: the stopped one goes first (it
	 * holds mds.lock) */
	lfs_mds_stop(&fs, SIGKILL);
	close(standin_fd);
	standin_fd = -1;
	fs.mds_port = b_port;
	ck_assert_msg(lfs_mds_start(&fs) == 0, "a new loligo-mds on port %d did not start", b_port);
	LT_WAIT_UNTIL(session_open_at(b_addr, &id2), "the session did not come back at %s", b_addr);
	ck_assert_msg(id2 == id, "the session was not resumed: id %llu, %llu before", (unsigned long long)id2,
		      (unsigned long long)id);
	LT_WAIT_UNTIL(waitpid(child, &st, WNOHANG) == child, "the mkdir did not return");
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the mkdir that waited for the MDS failed");
	{
		struct stat sb;

		ck_assert_int_eq(stat(lfs_path(&fs, "during", p, sizeof(p)), &sb), 0);
		ck_assert(S_ISDIR(sb.st_mode));
	}
	check_works("after");
	ck_assert_int_ge(conns, 1);
	ck_assert_int_eq(lfs_umount(&fs), 0);
}
END_TEST

static void setup(void)
{
	/* a SIGTERM'd MDS with the journal held gives up on it quickly */
	if (lfs_init_with(&fs, "mds_shutdown_timeout = 1\n") != 0) {
		lfs_cleanup(&fs);
		fprintf(stderr, "e2e setup failed\n");
		exit(1);
	}
}

static void teardown(void)
{
	/* a case's own process died with its sockets; a SIGSTOPped MDS is
	 * SIGKILLed from its pid file like any other */
	lfs_cleanup(&fs);
}

int main(void)
{
	Suite *s = suite_create("fuse_follow");

	lfs_suite_add(s, "dead_first", test_dead_address_first, setup, teardown, 120);
	lfs_suite_add(s, "failover_term", test_failover_sigterm, setup, teardown, 180);
	lfs_suite_add(s, "failover_kill9", test_failover_kill9, setup, teardown, 180);
	lfs_suite_add(s, "probe", test_probe_follows_silent_mds, setup, teardown, 180);
	return lfs_suite_main(s, "test_fuse_follow");
}
