/*
 * test_fuse_failover.c - several loligo-mds daemons on one filesystem
 * (issue 19): who holds rank 0, fencing, and a FUSE mount that follows.
 *
 *   zombie        the active is SIGSTOPped past the grace, the standby
 *                 fences it and serves; the mount follows; then the new
 *                 active is stopped too, the old one woken: it must write
 *                 nothing (every object of the metadata pool, data and
 *                 omap, hashed before and after) and exit, naming the new
 *                 epoch and holder
 *   race          two standbys, the active stopped: exactly one takes the
 *                 rank, the epoch grows by exactly one
 *   damaged_map   a map object that does not parse: no daemon takes the
 *                 rank on a guess, the log says what is wrong; removed by
 *                 the operator, the standby goes on
 *   fail_and_stop `mds fail` and SIGTERM of the active: the standby takes
 *                 over without waiting for the grace
 *   sreplay_follows  a standby-replay follows a burst of creates (its
 *                 position in `fs status` reaches the active's), writes
 *                 nothing but its registration (the metadata pool but the
 *                 map object hashed before it started and once it caught
 *                 up), and a kill -9 of the active hands it the rank with
 *                 only the remainder replayed
 *   sreplay_trimmed  a follower that looks only every 3 s: health warns
 *                 MDS_STANDBY_REPLAY_LAGGING; the active expires and
 *                 removes journal segments it has not read yet: it says
 *                 so, loads afresh, follows again and takes over with
 *                 every file
 *   sreplay_kept  the same follower stopped while the active expires
 *                 segments it has not read, kept (mds_journal_keep_expired):
 *                 it reads them when it resumes, no reload
 *   sreplay_preferred  a cold standby and a standby-replay, the active
 *                 killed: the standby-replay takes the rank
 *   sreplay_undecodable  an entry out of sequence in the journal: the
 *                 follower says so and becomes a cold standby (local store)
 *   sreplay_bounded  a follower with a small mds_cache_size trims what the
 *                 active expired and drops unlinked inodes; the takeover
 *                 finds every file and none of the unlinked ones
 *
 * Each daemon stands for a machine of its own; they share the store (the
 * local store is one host's, RADOS the cluster's: the suite runs on both).
 * Tests wait for events (port files, `fs status`, exits, log lines); the
 * grace is set short so that a wait that would never end ends the test
 * through the hang bound instead.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/admin_sock.h"
#include "common/crc32c.h"
#include "store/store.h"
#include "tests/e2e/test_fuse_harness.h"
#include "tests/lib/wait.h"

static struct lfs fs;
static const char *const fast[] = { "--mds_beacon_interval=0.3", "--mds_beacon_grace=3", NULL };

static void asok_path(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/mds.%s.asok", fs.dir, name);
}

static struct json_object *asok(const char *name, const char *prefix)
{
	struct json_object *req = json_object_new_object(), *rep = NULL;
	char p[PATH_MAX + 32];

	asok_path(name, p, sizeof(p));
	json_object_object_add(req, "prefix", json_object_new_string(prefix));
	if (asok_request(p, req, &rep, 10000) != 0 && rep) {
		json_object_put(rep);
		rep = NULL;
	}
	json_object_put(req);
	return rep;
}

/* the map as daemon @name (active) shows it: epoch, live standbys */
static long map_epoch(const char *name, int *standbys)
{
	struct json_object *rep = asok(name, "fs status"), *mm, *v, *sb;
	long e = -1;

	if (standbys)
		*standbys = -1;
	if (rep && json_object_object_get_ex(rep, "mdsmap", &mm)) {
		if (json_object_object_get_ex(mm, "epoch", &v))
			e = (long)json_object_get_int64(v);
		if (standbys && json_object_object_get_ex(mm, "standbys", &sb)) {
			*standbys = 0;
			for (size_t i = 0; i < json_object_array_length(sb); i++) {
				struct json_object *st;

				if (json_object_object_get_ex(json_object_array_get_idx(sb, i), "state", &st) &&
				    !strcmp(json_object_get_string(st), "standby"))
					(*standbys)++;
			}
		}
	}
	json_object_put(rep);
	return e;
}

static void log_tail(const char *name, const char *ext, char *out, size_t len);

/* a wait that failed: the end of every daemon's log and of its stdout and
 * stderr (a daemon that exits before it logs says why there only) */
static void dump_daemons(const char *why)
{
	static const char *const names[] = { "a", "b", "c", "d" };
	char p[PATH_MAX + 32], buf[3072];

	fprintf(stderr, "test_fuse_failover: %s; the daemons:\n", why);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/mds.%s.log", fs.dir, names[i]);
		if (access(p, F_OK) != 0)
			continue;
		log_tail(names[i], "log", buf, sizeof(buf));
		fprintf(stderr, "--- mds.%s.log:\n%s", names[i], buf);
		log_tail(names[i], "out", buf, 1024);
		fprintf(stderr, "--- mds.%s.out:\n%s\n", names[i], buf);
		/* the map as this daemon sees it (the standbys' states: laggy or not) */
		struct json_object *rep = asok(names[i], "fs status");

		if (rep)
			fprintf(stderr, "--- mds.%s's fs status:\n%s\n", names[i],
				json_object_to_json_string_ext(rep, JSON_C_TO_STRING_PLAIN));
		json_object_put(rep);
	}
}

static bool wait_active(const char *name, pid_t pid)
{
	double end = lt_now_s() + lt_hang_s_or(60);
	int st;

	while (lt_now_s() < end) {
		if (lfs_mds_daemon_port(&fs, name) > 0)
			return true;
		if (pid > 0 && waitpid(pid, &st, WNOHANG) == pid) {
			fprintf(stderr, "test_fuse_failover: mds.%s exited (%s %d) before it took a rank\n", name,
				WIFSIGNALED(st) ? "signal" : "status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
			dump_daemons("a daemon exited");
			return false;
		}
		lt_nap();
	}
	dump_daemons("no daemon took the rank");
	return false;
}

static bool wait_standbys(const char *active, int n)
{
	double end = lt_now_s() + lt_hang_s_or(60);
	int sb;

	while (lt_now_s() < end) {
		map_epoch(active, &sb);
		if (sb >= n)
			return true;
		lt_nap();
	}
	dump_daemons("too few standbys registered");
	return false;
}

/* does daemon @name's log hold @needle in more than @nth lines?  With
 * @out: the two lines before line @nth (from 0) that does (what led to
 * it, for a failure message) */
static bool log_nth_line(const char *name, const char *needle, unsigned int nth, char *out, size_t len)
{
	char p[PATH_MAX + 32], line[3][2048] = { "", "", "" };
	bool found = false;
	unsigned int n = 0;
	FILE *f;

	snprintf(p, sizeof(p), "%s/mds.%s.log", fs.dir, name);
	f = fopen(p, "r");
	if (!f)
		return false;
	while (!found && fgets(line[n % 3], sizeof(line[0]), f))
		found = strstr(line[n++ % 3], needle) != NULL && nth-- == 0;
	fclose(f);
	if (found && out)
		snprintf(out, len, "%s%s", line[n % 3], line[(n + 1) % 3]);
	return found;
}

static bool log_line(const char *name, const char *needle, char *out, size_t len)
{
	return log_nth_line(name, needle, 0, out, len);
}

/* the last lines of daemon @name's log (as many as fit @len), for a message */
/* the end of daemon @name's file @ext ("log"; "out": its stdout and stderr) */
static void log_tail(const char *name, const char *ext, char *out, size_t len)
{
	char p[PATH_MAX + 32];
	long size;
	size_t n;
	FILE *f;

	out[0] = 0;
	snprintf(p, sizeof(p), "%s/mds.%s.%s", fs.dir, name, ext);
	f = fopen(p, "r");
	if (!f)
		return;
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0) {
		fseek(f, size > (long)len - 1 ? size - ((long)len - 1) : 0, SEEK_SET);
		n = fread(out, 1, len - 1, f);
		out[n] = 0;
	}
	fclose(f);
}

/* does daemon @name's log hold @needle? */
static bool log_has(const char *name, const char *needle)
{
	return log_line(name, needle, NULL, 0);
}

static bool wait_log(const char *name, const char *needle)
{
	double end = lt_now_s() + lt_hang_s_or(60);

	while (lt_now_s() < end) {
		if (log_has(name, needle))
			return true;
		lt_nap();
	}
	return false;
}

/* until @pid exits: its wait status, or -1 (still running at the bound) */
static int wait_exit(pid_t pid)
{
	double end = lt_now_s() + lt_hang_s_or(60);
	int st;

	while (lt_now_s() < end) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
		lt_nap();
	}
	return -1;
}

static void mnt_path(const char *rel, char *buf, size_t len)
{
	lfs_path(&fs, rel, buf, len);
}

static int create_fsync(const char *rel)
{
	char p[PATH_MAX];
	int fd, r;

	mnt_path(rel, p, sizeof(p));
	fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
	if (fd < 0)
		return -errno;
	r = write(fd, rel, strlen(rel)) == (ssize_t)strlen(rel) && fsync(fd) == 0 ? 0 : -errno;
	close(fd);
	return r;
}

static bool exists(const char *rel)
{
	char p[PATH_MAX];
	struct stat st;

	mnt_path(rel, p, sizeof(p));
	return stat(p, &st) == 0;
}

static void mount_both(const int *ports, int n)
{
	static char addrs[256];
	int off = snprintf(addrs, sizeof(addrs), "--client_mds_addr=");

	for (int k = 0; k < n; k++)
		off += snprintf(addrs + off, sizeof(addrs) - (size_t)off, "%s127.0.0.1:%d", k ? "," : "", ports[k]);
	fs.fuse_args[0] = addrs;
	fs.mds_port = ports[0];
	if (lfs_mount(&fs, NULL) != 0) {
		lfs_dump_logs(&fs);
		ck_abort_msg("cannot mount loligo-fuse with %s", addrs);
	}
}

/*
 * A digest of every object of the metadata pool: name, data and omap
 * (-1: the store could not be read).
 */
static long long pool_digest_but(const char *skip);
static long long pool_digest(void)
{
	return pool_digest_but(NULL);
}

static long long pool_digest_but(const char *skip)
{
	struct store_config sc = { .backend = "local" };
	struct store *st = NULL;
	struct store_pool *p = NULL;
	char path[PATH_MAX], pool[160] = "loligo_metadata", line[512], **names = NULL;
	size_t n = 0;
	uint32_t crc = 0;
	long long out = -1;

	if (lfs_rados()) {
		/* the harness names each filesystem's pools after its fs_name */
		FILE *f = fopen(fs.conf, "r");

		while (f && fgets(line, sizeof(line), f)) {
			char v[128];

			if (sscanf(line, "fs_name = %127s", v) == 1)
				snprintf(pool, sizeof(pool), "%s_metadata", v);
		}
		if (f)
			fclose(f);
		sc.backend = "rados";
		sc.rados_conf = getenv("LOLIGO_E2E_RADOS_CONF");
		sc.rados_id = "admin";
	} else {
		snprintf(path, sizeof(path), "%s/store", fs.dir);
		sc.local_path = path;
	}
	if (store_open(&sc, &st) || store_pool_open(st, pool, NULL, &p) || store_list_objects(p, &names, &n))
		goto out;
	for (size_t i = 0; i < n; i++) {
		static char buf[1 << 20];
		struct store_omap_iter it;
		const struct store_kv *kv;
		uint64_t off = 0;
		ssize_t got;

		if (skip && !strcmp(names[i], skip)) {
			free(names[i]);
			continue;
		}
		crc = crc32c(crc, names[i], strlen(names[i]) + 1);
		while ((got = store_read(p, names[i], off, sizeof(buf), buf)) > 0) {
			crc = crc32c(crc, buf, (size_t)got);
			off += (uint64_t)got;
		}
		store_omap_iter_init(&it, p, names[i], NULL, 512);
		while ((kv = store_omap_iter_next(&it)) != NULL) {
			crc = crc32c(crc, kv->key, strlen(kv->key) + 1);
			crc = crc32c(crc, kv->val, kv->len);
		}
		store_omap_iter_end(&it);
		free(names[i]);
	}
	free(names);
	out = crc;
out:
	if (p)
		store_pool_close(p);
	if (st)
		store_close(st);
	return out;
}

/*
 * On RADOS the blocklist fences the stopped holder wherever it runs, and
 * woken up it must find out by itself and exit, having written nothing
 * (the metadata pool hashed while only it runs).  On the local store the
 * successor kills it first (mds/mdsmap.c, stonith(): a stopped process
 * may hold the store's own locks, which no fence reaches).
 */
START_TEST(test_zombie_writes_nothing)
{
	int ports[2] = { lfs_free_port(), lfs_free_port() };
	pid_t a, b;
	long ea, eb;
	long long before, after;
	int st;
	char name[32];

	a = lfs_mds_daemon_start(&fs, "a", ports[0], fast);
	ck_assert_msg(wait_active("a", a), "mds.a did not take rank 0");
	b = lfs_mds_daemon_start(&fs, "b", ports[1], fast);
	ck_assert_msg(wait_standbys("a", 1), "mds.b did not register as a standby");
	mount_both(ports, 2);
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "before.%d", i);
		ck_assert_int_eq(create_fsync(name), 0);
	}
	ea = map_epoch("a", NULL);

	/* a pauses past the grace: b fences it and takes over; the mount follows */
	ck_assert_int_eq(kill(a, SIGSTOP), 0);
	ck_assert_msg(wait_active("b", b), "mds.b did not take rank 0 from the stopped mds.a");
	ck_assert_msg(log_has("b", "fenced mds.a") || log_has("b", "killing it"),
		      "mds.b serves without having fenced mds.a");
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "after.%d", i);
		ck_assert_int_eq(create_fsync(name), 0);
	}
	eb = map_epoch("b", NULL);
	ck_assert_msg(eb > ea, "the map epoch did not move (%ld -> %ld)", ea, eb);

	if (!lfs_rados()) {
		st = wait_exit(a);
		ck_assert_msg(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && log_has("b", "killing it"),
			      "on the local store the stopped mds.a must be killed by its successor (status %#x)", st);
	} else {
		/* nothing else writes: b stopped too; then a wakes up */
		ck_assert_int_eq(kill(b, SIGSTOP), 0);
		before = pool_digest();
		ck_assert_msg(before >= 0, "cannot read the metadata pool");
		ck_assert_int_eq(kill(a, SIGCONT), 0);
		st = wait_exit(a);
		ck_assert_msg(st != -1, "the deposed mds.a still runs after waking up");
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "the deposed mds.a ended with status %#x", st);
		ck_assert_msg(log_has("a", "was deposed"), "the deposed mds.a did not say it was deposed");
		after = pool_digest();
		ck_assert_msg(before == after, "the metadata pool changed while only the deposed mds.a ran "
			      "(%llx -> %llx)", before, after);
		fprintf(stderr, "test_fuse_failover: metadata pool digest %08llx before and after the zombie woke\n",
			before);
		ck_assert_int_eq(kill(b, SIGCONT), 0);
	}
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "before.%d", i);
		ck_assert_msg(exists(name), "%s is lost", name);
		snprintf(name, sizeof(name), "after.%d", i);
		ck_assert_msg(exists(name), "%s is lost", name);
	}
	ck_assert_int_eq(create_fsync("end"), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
	kill(b, SIGTERM);
	ck_assert_int_ne(wait_exit(b), -1);
}
END_TEST

START_TEST(test_standbys_race)
{
	int ports[3] = { lfs_free_port(), lfs_free_port(), lfs_free_port() };
	pid_t a, b, c;
	long e0, e1;
	int nactive, sb;

	a = lfs_mds_daemon_start(&fs, "a", ports[0], fast);
	ck_assert_msg(wait_active("a", a), "mds.a did not take rank 0");
	b = lfs_mds_daemon_start(&fs, "b", ports[1], fast);
	c = lfs_mds_daemon_start(&fs, "c", ports[2], fast);
	ck_assert_msg(wait_standbys("a", 2), "mds.b and mds.c did not both register as standbys");
	e0 = map_epoch("a", NULL);
	/* stopped, not dead: no host lock shortcut, both standbys see the grace run out at once */
	ck_assert_int_eq(kill(a, SIGSTOP), 0);
	{
		double end = lt_now_s() + lt_hang_s_or(60);

		while (lt_now_s() < end && lfs_mds_daemon_port(&fs, "b") == 0 && lfs_mds_daemon_port(&fs, "c") == 0)
			lt_nap();
	}
	nactive = (lfs_mds_daemon_port(&fs, "b") > 0) + (lfs_mds_daemon_port(&fs, "c") > 0);
	ck_assert_msg(nactive == 1, "%d standbys serve after the race", nactive);
	{
		const char *w = lfs_mds_daemon_port(&fs, "b") > 0 ? "b" : "c", *l = *w == 'b' ? "c" : "b";

		/* the loser stays a standby of the winner, and never serves */
		ck_assert_msg(wait_standbys(w, 1), "the loser mds.%s is not a standby of mds.%s", l, w);
		e1 = map_epoch(w, &sb);
		ck_assert_msg(lfs_mds_daemon_port(&fs, l) == 0, "mds.%s serves too", l);
		ck_assert_msg(e1 == e0 + 1, "the epoch went from %ld to %ld: one takeover must add exactly one", e0, e1);
		fprintf(stderr, "test_fuse_failover: race won by mds.%s, epoch %ld -> %ld\n", w, e0, e1);
	}
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	kill(b, SIGTERM);
	kill(c, SIGTERM);
	ck_assert_int_ne(wait_exit(b), -1);
	ck_assert_int_ne(wait_exit(c), -1);
}
END_TEST

/* Every standby entry `fs status` of @active lists (live or laggy), or -1. */
static int standby_entries(const char *active)
{
	struct json_object *rep = asok(active, "fs status"), *mm, *sb;
	int n = -1;

	if (rep && json_object_object_get_ex(rep, "mdsmap", &mm) && json_object_object_get_ex(mm, "standbys", &sb))
		n = (int)json_object_array_length(sb);
	json_object_put(rep);
	return n;
}

/*
 * A standby killed with -9 leaves the map: the holder drops a registration
 * silent for three graces (before, it stayed listed as laggy for ever and
 * counted nowhere).  The holder and a live standby are left alone.
 */
START_TEST(test_dead_standby_dropped)
{
	int ports[3] = { lfs_free_port(), lfs_free_port(), lfs_free_port() };
	pid_t a, b, c;

	a = lfs_mds_daemon_start(&fs, "a", ports[0], fast);
	ck_assert_msg(wait_active("a", a), "mds.a did not take rank 0");
	b = lfs_mds_daemon_start(&fs, "b", ports[1], fast);
	c = lfs_mds_daemon_start(&fs, "c", ports[2], fast);
	ck_assert_msg(wait_standbys("a", 2), "mds.b and mds.c did not both register as standbys");
	kill(b, SIGKILL);
	waitpid(b, NULL, 0);
	ck_assert_msg(wait_log("a", "standby mds.b"), "mds.a did not drop the dead standby mds.b from the map");
	{
		double end = lt_now_s() + lt_hang_s_or(60);

		while (lt_now_s() < end && standby_entries("a") != 1)
			lt_nap();
	}
	ck_assert_int_eq(standby_entries("a"), 1);
	ck_assert_msg(wait_standbys("a", 1), "the live standby mds.c is gone too");
	ck_assert_msg(lfs_mds_daemon_port(&fs, "a") > 0, "mds.a no longer serves");
	kill(c, SIGTERM);
	ck_assert_int_ne(wait_exit(c), -1);
	kill(a, SIGTERM);
	ck_assert_int_ne(wait_exit(a), -1);
}
END_TEST

START_TEST(test_damaged_map)
{
	int port = lfs_free_port();
	struct store_config sc = { .backend = "local" };
	struct store *st = NULL;
	struct store_pool *p = NULL;
	struct store_op *op;
	char path[PATH_MAX];
	pid_t a, d;

	if (lfs_rados())
		return;         /* the damage is written with the local store's API */
	a = lfs_mds_daemon_start(&fs, "a", port, fast);
	ck_assert_msg(wait_active("a", a), "mds.a did not take rank 0");
	kill(a, SIGTERM);
	ck_assert_int_ne(wait_exit(a), -1);

	snprintf(path, sizeof(path), "%s/store", fs.dir);
	sc.local_path = path;
	ck_assert_int_eq(store_open(&sc, &st), 0);
	ck_assert_int_eq(store_pool_open(st, "loligo_metadata", NULL, &p), 0);
	op = store_op_new();
	store_op_omap_set(op, "map", "{\"v\":1,\"epo", 11);
	ck_assert_int_eq(store_op_exec(p, "mds_map", op), 0);

	d = lfs_mds_daemon_start(&fs, "d", port, fast);
	ck_assert_msg(wait_log("d", "is damaged"), "mds.d did not report the damaged map");
	ck_assert_msg(lfs_mds_daemon_port(&fs, "d") == 0, "mds.d took rank 0 over a damaged map");
	ck_assert_msg(waitpid(d, NULL, WNOHANG) == 0, "mds.d exited instead of waiting for the repair");

	/* the operator removes the object: the standby goes on and serves */
	op = store_op_new();
	store_op_remove(op);
	ck_assert_int_eq(store_op_exec(p, "mds_map", op), 0);
	store_pool_close(p);
	store_close(st);
	ck_assert_msg(wait_active("d", d), "mds.d did not take rank 0 after the repair");
	mount_both(&port, 1);
	ck_assert_int_eq(create_fsync("x"), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
	kill(d, SIGTERM);
	ck_assert_int_ne(wait_exit(d), -1);
}
END_TEST

START_TEST(test_fail_and_stop)
{
	/* a grace the test would notice: the takeovers below must not wait for it */
	static const char *const slow[] = { "--mds_beacon_interval=0.2", "--mds_beacon_grace=600", NULL };
	int ports[2] = { lfs_free_port(), lfs_free_port() };
	struct json_object *rep;
	pid_t a, b;
	int st;

	a = lfs_mds_daemon_start(&fs, "a", ports[0], slow);
	ck_assert_msg(wait_active("a", a), "mds.a did not take rank 0");
	b = lfs_mds_daemon_start(&fs, "b", ports[1], slow);
	ck_assert_msg(wait_standbys("a", 1), "mds.b did not register as a standby");
	mount_both(ports, 2);
	ck_assert_int_eq(create_fsync("one"), 0);

	rep = asok("a", "mds fail");
	ck_assert_msg(rep != NULL, "mds fail: no answer");
	json_object_put(rep);
	st = wait_exit(a);
	ck_assert_msg(st != -1 && WIFEXITED(st), "mds.a did not exit after mds fail");
	ck_assert_msg(wait_active("b", b), "mds.b did not take rank 0 after mds fail");
	ck_assert_int_eq(create_fsync("two"), 0);

	/* a clean stop leaves the rank vacant: the restarted mds.a takes it at once */
	a = lfs_mds_daemon_start(&fs, "a", ports[0], slow);
	ck_assert_msg(wait_standbys("b", 1), "mds.a did not come back as a standby");
	kill(b, SIGTERM);
	ck_assert_int_ne(wait_exit(b), -1);
	if (!wait_active("a", a)) {
		char why[4096] = "", out[2048] = "";

		log_tail("a", "log", why, sizeof(why));
		log_tail("a", "out", out, sizeof(out));
		ck_abort_msg("mds.a did not take the rank mds.b left; its log:\n%s\nits stdout and stderr:\n%s", why,
			     out);
	}
	ck_assert_int_eq(create_fsync("three"), 0);
	ck_assert(exists("one") && exists("two"));
	ck_assert_int_eq(lfs_umount(&fs), 0);
	kill(a, SIGTERM);
	ck_assert_int_ne(wait_exit(a), -1);
}
END_TEST

/* ---- standby-replay ------------------------------------------------------------------ */

/*
 * Daemon @name's entry in the standbys of the active @active's `fs status`:
 * its state (copied into @state), its replay position and the active's
 * last journal entry.  False: not listed.
 */
static bool sreplay_entry(const char *active, const char *name, char *state, size_t len, long *seq, long *aseq)
{
	struct json_object *rep = asok(active, "fs status"), *mm, *sb, *v, *rp;
	char full[64];
	bool found = false;

	snprintf(full, sizeof(full), "mds.%s", name);
	*seq = *aseq = -1;
	if (rep && json_object_object_get_ex(rep, "mdsmap", &mm) && json_object_object_get_ex(mm, "standbys", &sb)) {
		for (size_t i = 0; i < json_object_array_length(sb); i++) {
			struct json_object *e = json_object_array_get_idx(sb, i);

			if (!json_object_object_get_ex(e, "name", &v) || strcmp(json_object_get_string(v), full))
				continue;
			found = true;
			if (json_object_object_get_ex(e, "state", &v))
				snprintf(state, len, "%s", json_object_get_string(v));
			if (json_object_object_get_ex(e, "replay", &rp)) {
				if (json_object_object_get_ex(rp, "seq", &v))
					*seq = (long)json_object_get_int64(v);
				if (json_object_object_get_ex(rp, "active_seq", &v))
					*aseq = (long)json_object_get_int64(v);
			}
		}
	}
	json_object_put(rep);
	return found;
}

/*
 * the standby-replay @name's cached inodes at its last trim, as @active's
 * map shows them, if it had applied entry @seq by then (else UINT64_MAX)
 */
static uint64_t sreplay_inodes(const char *active, const char *name, long seq)
{
	struct json_object *rep = asok(active, "fs status"), *mm, *sb, *v, *rp;
	uint64_t n = UINT64_MAX;
	char full[64];

	snprintf(full, sizeof(full), "mds.%s", name);
	if (rep && json_object_object_get_ex(rep, "mdsmap", &mm) && json_object_object_get_ex(mm, "standbys", &sb))
		for (size_t i = 0; i < json_object_array_length(sb); i++) {
			struct json_object *e = json_object_array_get_idx(sb, i);

			if (json_object_object_get_ex(e, "name", &v) && !strcmp(json_object_get_string(v), full) &&
			    json_object_object_get_ex(e, "replay", &rp) &&
			    json_object_object_get_ex(rp, "cache_at_seq", &v) && json_object_get_int64(v) >= seq &&
			    json_object_object_get_ex(rp, "inodes_cached", &v))
				n = (uint64_t)json_object_get_int64(v);
		}
	json_object_put(rep);
	return n;
}

/* until the standby-replay @name's position (as @active shows it) reaches @active's last journal entry */
static bool wait_caught_up(const char *active, const char *name)
{
	double end = lt_now_s() + lt_hang_s_or(60);
	char st[64] = "";
	long seq, aseq;

	while (lt_now_s() < end) {
		if (sreplay_entry(active, name, st, sizeof(st), &seq, &aseq) && !strcmp(st, "standby-replay") &&
		    seq > 0 && seq >= aseq)
			return true;
		lt_nap();
	}
	fprintf(stderr, "test_fuse_failover: mds.%s is at %s, entry %ld of %ld\n", name, st, seq, aseq);
	return false;
}

/* how many lines of daemon @name's log hold @needle */
static int log_count(const char *name, const char *needle)
{
	char p[PATH_MAX + 32], line[4096];
	int n = 0;
	FILE *f;

	snprintf(p, sizeof(p), "%s/mds.%s.log", fs.dir, name);
	f = fopen(p, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

/* the last standby-replay takeover in @name's log: entries its cache held, entries applied at the takeover */
static bool takeover_counts(const char *name, long *had, long *applied)
{
	char p[PATH_MAX + 32], line[4096];
	bool found = false;
	FILE *f;

	snprintf(p, sizeof(p), "%s/mds.%s.log", fs.dir, name);
	f = fopen(p, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		const char *q = strstr(line, "standby-replay had applied ");

		if (q && sscanf(q, "standby-replay had applied %ld of them (up to entry %*d), %ld applied", had,
				applied) == 2)
			found = true;
	}
	fclose(f);
	return found;
}

/* the metadata pool but the map object (which standbys register in), once it stops changing */
static long long settled_digest(void)
{
	double end = lt_now_s() + lt_hang_s_or(60);
	long long d = pool_digest_but("mds_map"), prev = -2;

	while (d != prev && lt_now_s() < end) {
		/* across a housekeeping tick of the active */
		struct timespec ts = { 1, 200 * 1000000L };

		nanosleep(&ts, NULL);
		prev = d;
		d = pool_digest_but("mds_map");
	}
	return d == prev ? d : -1;
}

static const char *const sr_active[] = { "--mds_beacon_interval=0.3", "--mds_beacon_grace=3",
					  "--mds_journal_expire_age=3600", NULL };
static const char *const sr_follow[] = { "--mds_beacon_interval=0.3", "--mds_beacon_grace=3",
					  "--mds_standby_replay=true", NULL };

START_TEST(test_sreplay_follows)
{
	int ports[2] = { lfs_free_port(), lfs_free_port() };
	long long d0, d1;
	long had = 0, applied = 0;
	char name[32];
	pid_t a, b;

	a = lfs_mds_daemon_start(&fs, "a", ports[0], sr_active);
	ck_assert_msg(wait_active("a", a), "mds.a did not take rank 0");
	mount_both(ports, 2);
	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "early.%d", i);
		ck_assert_int_eq(create_fsync(name), 0);
	}
	ck_assert_int_eq(lfs_umount(&fs), 0);

	/* mds.a idle (no client, no segment sealed by age): only the map object changes */
	d0 = settled_digest();
	ck_assert_msg(d0 >= 0, "the metadata pool does not settle with mds.a idle");
	b = lfs_mds_daemon_start(&fs, "b", ports[1], sr_follow);
	ck_assert_msg(wait_caught_up("a", "b"), "mds.b did not catch up with mds.a's journal");
	ck_assert_msg(wait_log("b", "caught up with the journal"), "mds.b did not log its catch-up");
	d1 = pool_digest_but("mds_map");
	ck_assert_msg(d0 == d1, "the metadata pool changed while the standby-replay loaded and followed "
		      "(%llx -> %llx)", d0, d1);
	fprintf(stderr, "test_fuse_failover: metadata pool digest %08llx before and after the standby-replay "
		"caught up\n", d0);

	/* a burst of creates through the mount: the follower's position reaches the active's */
	mount_both(ports, 2);
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "burst.%d", i);
		ck_assert_int_eq(create_fsync(name), 0);
	}
	ck_assert_msg(wait_caught_up("a", "b"), "mds.b did not follow the burst");

	/* the active dies: the follower applies only what it had not */
	ck_assert_int_eq(create_fsync("last"), 0);
	ck_assert_int_eq(kill(a, SIGKILL), 0);
	waitpid(a, NULL, 0);
	ck_assert_msg(wait_active("b", b), "mds.b did not take rank 0");
	ck_assert_msg(takeover_counts("b", &had, &applied), "mds.b took over cold");
	fprintf(stderr, "test_fuse_failover: standby-replay takeover: %ld entries held, %ld applied at takeover\n",
		had, applied);
	ck_assert_msg(had >= 350 && applied < 50, "the takeover replayed %ld entries, the cache held %ld", applied,
		      had);
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "burst.%d", i);
		ck_assert_msg(exists(name), "%s is lost", name);
	}
	ck_assert_msg(exists("early.49") && exists("last"), "a file is lost");
	ck_assert_int_eq(create_fsync("after"), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
	kill(b, SIGTERM);
	ck_assert_int_ne(wait_exit(b), -1);
}
END_TEST

/* kill -9 the active mds.a (@a): the follower mds.b (@b) takes rank 0 */
static void follower_takes_over(pid_t a, pid_t b)
{
	ck_assert_int_eq(kill(a, SIGKILL), 0);
	waitpid(a, NULL, 0);
	ck_assert_msg(wait_active("b", b), "mds.b did not take rank 0");
}

/* every file @prefix.0 .. @prefix.(@n - 1) is there; then unmount and stop mds.b (@b) */
static void all_there_then_stop(const char *prefix, int n, pid_t b)
{
	char name[64];

	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s.%d", prefix, i);
		ck_assert_msg(exists(name), "%s is lost", name);
	}
	ck_assert_int_eq(lfs_umount(&fs), 0);
	kill(b, SIGTERM);
	ck_assert_int_ne(wait_exit(b), -1);
}

START_TEST(test_sreplay_trimmed)
{
	/* small segments expired at every tick and removed at once (none kept
	 * for followers); the follower looks only every 3 s */
	static const char *const act[] = { "--mds_beacon_interval=0.3", "--mds_beacon_grace=3",
					   "--mds_journal_segment_size=4096", "--mds_journal_expire_age=0.1",
					   "--mds_journal_keep_expired=0", "--mds_standby_replay_lag_warn=1", NULL };
	static const char *const lazy[] = { "--mds_beacon_interval=0.3", "--mds_beacon_grace=3",
					    "--mds_standby_replay=true", "--mds_standby_replay_interval=3", NULL };
	int ports[2] = { lfs_free_port(), lfs_free_port() };
	double end;
	long had = 0, applied = 0;
	char name[32];
	pid_t a, b;
	int n = 0;

	a = lfs_mds_daemon_start(&fs, "a", ports[0], act);
	ck_assert_msg(wait_active("a", a), "mds.a did not take rank 0");
	b = lfs_mds_daemon_start(&fs, "b", ports[1], lazy);
	ck_assert_msg(wait_log("b", "caught up with the journal"), "mds.b did not catch up");
	/* between two looks 3 s apart it has not caught up for longer than the 1 s warning */
	{
		double e1 = lt_now_s() + lt_hang_s_or(60);
		bool warned = false;

		while (!warned && lt_now_s() < e1) {
			struct json_object *h = asok("a", "health"), *checks;

			warned = h && json_object_object_get_ex(h, "checks", &checks) &&
				 json_object_object_get_ex(checks, "MDS_STANDBY_REPLAY_LAGGING", NULL);
			json_object_put(h);
			if (!warned)
				lt_nap();
		}
		ck_assert_msg(warned, "no MDS_STANDBY_REPLAY_LAGGING for a standby-replay looking every 3 s");
	}
	mount_both(ports, 2);
	/* the journal moves on and is expired under the follower between two of its looks */
	end = lt_now_s() + lt_hang_s_or(60);
	while (!log_has("b", "was expired and removed before this standby read it") && lt_now_s() < end) {
		for (int i = 0; i < 10; i++, n++) {
			snprintf(name, sizeof(name), "f.%d", n);
			ck_assert_int_eq(create_fsync(name), 0);
		}
	}
	ck_assert_msg(log_has("b", "was expired and removed before this standby read it"),
		      "mds.b did not see the journal trimmed under it");
	/* it starts again (the same process, exec), loads afresh and follows */
	ck_assert_msg(wait_log("b", "standby-replay: starting again"), "mds.b did not start again");
	{
		double e2 = lt_now_s() + lt_hang_s_or(60);

		while (log_count("b", "caught up with the journal") < 2 && lt_now_s() < e2)
			lt_nap();
	}
	ck_assert_msg(log_count("b", "caught up with the journal") >= 2, "mds.b did not catch up again");
	ck_assert_msg(lfs_mds_daemon_port(&fs, "b") == 0, "mds.b serves beside mds.a");
	ck_assert_msg(wait_caught_up("a", "b"), "mds.b does not follow after its reload");
	follower_takes_over(a, b);
	ck_assert_msg(takeover_counts("b", &had, &applied), "mds.b took over cold");
	fprintf(stderr, "test_fuse_failover: %d files; after the trim: %ld entries held, %ld applied at takeover\n",
		n, had, applied);
	all_there_then_stop("f", n, b);
}
END_TEST

/* the active's journal: the first segment it has not expired */
static long expire_segment(const char *active)
{
	struct json_object *o = asok(active, "journal status"), *v;
	long seg = -1;

	if (o && json_object_object_get_ex(o, "expire_segment", &v))
		seg = (long)json_object_get_int64(v);
	json_object_put(o);
	return seg;
}

/*
 * mds_journal_keep_expired: a follower stopped while the active expires
 * segments it has not read (64 KB segments, expired at every tick) reads
 * them when it resumes, because the active kept their objects: it follows
 * on, no reload (sreplay_trimmed is the same without them kept).
 */
START_TEST(test_sreplay_kept)
{
	static const char *const act[] = { "--mds_beacon_interval=0.3", "--mds_beacon_grace=30",
					   "--mds_journal_segment_size=65536", "--mds_journal_expire_age=0.1",
					   "--mds_journal_keep_expired=120", NULL };
	static const char *const sr[] = { "--mds_beacon_interval=0.3", "--mds_beacon_grace=30",
					  "--mds_standby_replay=true", NULL };
	int ports[2] = { lfs_free_port(), lfs_free_port() };
	long seg0, seg = -1;
	double end;
	char name[32];
	pid_t a, b;
	int n = 0;

	a = lfs_mds_daemon_start(&fs, "a", ports[0], act);
	ck_assert_msg(wait_active("a", a), "mds.a did not take rank 0");
	b = lfs_mds_daemon_start(&fs, "b", ports[1], sr);
	ck_assert_msg(wait_caught_up("a", "b"), "mds.b did not follow");
	mount_both(ports, 2);
	seg0 = expire_segment("a");
	ck_assert_int_ge(seg0, 0);
	ck_assert_int_eq(kill(b, SIGSTOP), 0);
	/* the active expires three segments the stopped follower has not read */
	end = lt_now_s() + lt_hang_s_or(60);
	while ((seg = expire_segment("a")) < seg0 + 3 && lt_now_s() < end) {
		snprintf(name, sizeof(name), "k.%d", n++);
		ck_assert_int_eq(create_fsync(name), 0);
	}
	ck_assert_int_eq(kill(b, SIGCONT), 0);
	ck_assert_msg(seg >= seg0 + 3, "mds.a expired segments %ld to %ld only", seg0, seg);
	ck_assert_msg(wait_caught_up("a", "b"), "mds.b did not follow after it resumed");
	{
		char why[4096] = "";

		ck_assert_msg(!log_nth_line("b", "standby-replay: starting again", 0, why, sizeof(why)),
			      "mds.b reloaded; its log before that:\n%s", why);
	}
	follower_takes_over(a, b);
	all_there_then_stop("k", n, b);
}
END_TEST

START_TEST(test_sreplay_preferred)
{
	int ports[3] = { lfs_free_port(), lfs_free_port(), lfs_free_port() };
	char st[64] = "";
	long seq, aseq;
	pid_t a, b, c;

	a = lfs_mds_daemon_start(&fs, "a", ports[0], fast);
	ck_assert_msg(wait_active("a", a), "mds.a did not take rank 0");
	c = lfs_mds_daemon_start(&fs, "c", ports[2], fast);          /* cold, registered first */
	ck_assert_msg(wait_standbys("a", 1), "mds.c did not register as a standby");
	b = lfs_mds_daemon_start(&fs, "b", ports[1], sr_follow);
	ck_assert_msg(wait_caught_up("a", "b"), "mds.b did not follow");
	ck_assert_int_eq(kill(a, SIGKILL), 0);
	waitpid(a, NULL, 0);
	{
		double end = lt_now_s() + lt_hang_s_or(60);

		while (lt_now_s() < end && lfs_mds_daemon_port(&fs, "b") == 0 && lfs_mds_daemon_port(&fs, "c") == 0)
			lt_nap();
	}
	ck_assert_msg(lfs_mds_daemon_port(&fs, "b") > 0, "the standby-replay mds.b did not win the rank");
	ck_assert_msg(wait_standbys("b", 1), "the cold mds.c is not a standby of mds.b");
	ck_assert_msg(lfs_mds_daemon_port(&fs, "c") == 0, "mds.c serves too");
	ck_assert_msg(!sreplay_entry("b", "b", st, sizeof(st), &seq, &aseq), "mds.b lists itself as a standby");
	kill(b, SIGTERM);
	kill(c, SIGTERM);
	ck_assert_int_ne(wait_exit(b), -1);
	ck_assert_int_ne(wait_exit(c), -1);
}
END_TEST

/*
 * An entry with the wrong sequence number appended to the journal's newest
 * segment (a valid checksum: not a torn tail): the follower must not
 * guess, but say so and start again as a cold standby; the next write of
 * the active overwrites it (it writes at its own end of the segment), and
 * the cold standby's takeover loads and replays everything.
 */
/*
 * The follower's cache is bounded like the active's: directories whose
 * edits the active has expired leave it, and inodes whose names the
 * journal removed do not stay until the takeover; the takeover still
 * finds every file, and none of the removed ones.  The active keeps the
 * objects of expired segments 60 s (mds_journal_keep_expired): without
 * them a follower one 64 KB segment behind under this load reloaded (as
 * Ceph's does), which happened on this 2-core machine on RADOS and made
 * the "it followed" check fail.
 */
START_TEST(test_sreplay_bounded)
{
	static const char *const act[] = { "--mds_beacon_interval=0.3", "--mds_beacon_grace=3",
					   "--mds_journal_segment_size=65536", "--mds_journal_expire_age=5",
					   "--mds_journal_keep_expired=60", NULL };
	static const char *const small[] = { "--mds_beacon_interval=0.3", "--mds_beacon_grace=3",
					     "--mds_standby_replay=true", "--mds_cache_size=120", NULL };
	enum { NDIRS = 12, NFILES = 25, NGONE = 10 };
	int ports[2] = { lfs_free_port(), lfs_free_port() };
	long had = 0, applied = 0, aseq = 0;
	uint64_t cached = UINT64_MAX;
	char name[64], p[PATH_MAX];
	int reloads;
	double end;
	pid_t a, b;

	a = lfs_mds_daemon_start(&fs, "a", ports[0], act);
	ck_assert_msg(wait_active("a", a), "mds.a did not take rank 0");
	b = lfs_mds_daemon_start(&fs, "b", ports[1], small);
	ck_assert_msg(wait_log("b", "caught up with the journal"), "mds.b did not catch up");
	/* a follower that starts while the active expires the segment it
	 * begins with reloads once before it follows (seen under ASan): what
	 * counts is that it does not reload under the load below */
	reloads = log_count("b", "standby-replay: starting again");
	mount_both(ports, 2);
	for (int d = 0; d < NDIRS; d++) {
		snprintf(name, sizeof(name), "d.%d", d);
		mnt_path(name, p, sizeof(p));
		ck_assert_int_eq(mkdir(p, 0755), 0);
		for (int f = 0; f < NFILES; f++) {
			snprintf(name, sizeof(name), "d.%d/f.%d", d, f);
			ck_assert_int_eq(create_fsync(name), 0);
		}
	}
	for (int d = 0; d < NDIRS; d++)
		for (int f = 0; f < NGONE; f++) {
			snprintf(name, sizeof(name), "d.%d/f.%d", d, f);
			mnt_path(name, p, sizeof(p));
			ck_assert_int_eq(unlink(p), 0);
		}
	ck_assert_int_eq(create_fsync("last"), 0);
	ck_assert_msg(wait_caught_up("a", "b"), "mds.b did not follow the load");
	{
		char st[64];
		long seq;

		ck_assert(sreplay_entry("a", "b", st, sizeof(st), &seq, &aseq) && aseq > 0);
	}
	/* the follower had every file's inode in memory (NDIRS * NFILES > 2 x
	 * mds_cache_size): once the active expires the entries, it trims */
	end = lt_now_s() + lt_hang_s_or(60);
	while (lt_now_s() < end) {
		cached = sreplay_inodes("a", "b", aseq);
		if (cached <= 120)
			break;
		lt_nap();
	}
	fprintf(stderr, "test_fuse_failover: the standby-replay holds %llu inodes (mds_cache_size 120, %d files made)\n",
		(unsigned long long)cached, NDIRS * NFILES);
	/* it followed (a reload would start it with an empty cache) */
	{
		char why[4096] = "";

		ck_assert_msg(!log_nth_line("b", "standby-replay: starting again", (unsigned int)reloads, why, sizeof(why)),
			      "mds.b fell behind and reloaded; its log before that:\n%s", why);
	}
	ck_assert_msg(cached <= 120, "the standby-replay's cache holds %llu inodes, past mds_cache_size 120",
		      (unsigned long long)cached);

	ck_assert_int_eq(kill(a, SIGKILL), 0);
	waitpid(a, NULL, 0);
	ck_assert_msg(wait_active("b", b), "mds.b did not take rank 0");
	ck_assert_msg(takeover_counts("b", &had, &applied), "mds.b took over cold");
	for (int d = 0; d < NDIRS; d++)
		for (int f = 0; f < NFILES; f++) {
			snprintf(name, sizeof(name), "d.%d/f.%d", d, f);
			ck_assert_msg(exists(name) == (f >= NGONE), "%s %s after the takeover", name,
				      f >= NGONE ? "is lost" : "is back");
		}
	ck_assert_msg(exists("last"), "last is lost");
	ck_assert_int_eq(create_fsync("after"), 0);
	ck_assert_int_eq(lfs_umount(&fs), 0);
	kill(b, SIGTERM);
	ck_assert_int_ne(wait_exit(b), -1);
}
END_TEST

START_TEST(test_sreplay_undecodable)
{
	int ports[2] = { lfs_free_port(), lfs_free_port() };
	struct store_config sc = { .backend = "local" };
	struct store *st = NULL;
	struct store_pool *p = NULL;
	struct store_op *op;
	struct store_stat sst;
	char path[PATH_MAX], newest[128] = "", **names = NULL, state[64] = "";
	uint8_t e[24];
	size_t n = 0;
	long seq, aseq, had, applied;
	uint64_t bogus = 999999999;
	pid_t a, b;

	if (lfs_rados())
		return;         /* the bad entry is written with the local store's API */
	a = lfs_mds_daemon_start(&fs, "a", ports[0], sr_active);
	ck_assert_msg(wait_active("a", a), "mds.a did not take rank 0");
	mount_both(ports, 2);
	ck_assert_int_eq(create_fsync("one"), 0);
	b = lfs_mds_daemon_start(&fs, "b", ports[1], sr_follow);
	ck_assert_msg(wait_caught_up("a", "b"), "mds.b did not follow");

	snprintf(path, sizeof(path), "%s/store", fs.dir);
	sc.local_path = path;
	ck_assert_int_eq(store_open(&sc, &st), 0);
	ck_assert_int_eq(store_pool_open(st, "loligo_metadata", NULL, &p), 0);
	ck_assert_int_eq(store_list_objects(p, &names, &n), 0);
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(names[i], "mds_journal.", 12) && strcmp(names[i], newest) > 0)
			snprintf(newest, sizeof(newest), "%s", names[i]);
		free(names[i]);
	}
	free(names);
	ck_assert_msg(*newest, "no journal segment");
	ck_assert_int_eq(store_stat(p, newest, &sst), 0);
	/* "LJE2", EDITS, seq, no payload, crc32c of the 20 bytes before it */
	memcpy(e, "LJE2", 4);
	e[4] = 1, e[5] = e[6] = e[7] = 0;
	for (int i = 0; i < 8; i++)
		e[8 + i] = (uint8_t)(bogus >> (8 * i));
	memset(e + 16, 0, 4);
	{
		uint32_t c = crc32c(0, e, 20);

		for (int i = 0; i < 4; i++)
			e[20 + i] = (uint8_t)(c >> (8 * i));
	}
	op = store_op_new();
	store_op_write(op, sst.size, e, sizeof(e));
	ck_assert_int_eq(store_op_exec(p, newest, op), 0);
	store_pool_close(p);
	store_close(st);

	ck_assert_msg(wait_log("b", "where entry"), "mds.b did not report the entry out of sequence");
	ck_assert_msg(wait_log("b", "starting again as a cold standby"), "mds.b did not fall back to a cold standby");
	ck_assert_msg(wait_standbys("a", 1), "mds.b is not a (cold) standby after its fallback");
	ck_assert_msg(sreplay_entry("a", "b", state, sizeof(state), &seq, &aseq) && !strcmp(state, "standby"),
		      "mds.b is listed as '%s', not a cold standby", state);
	ck_assert_int_eq(create_fsync("two"), 0);
	ck_assert_int_eq(kill(a, SIGKILL), 0);
	waitpid(a, NULL, 0);
	ck_assert_msg(wait_active("b", b), "the cold mds.b did not take rank 0");
	ck_assert_msg(!takeover_counts("b", &had, &applied), "the cold mds.b took over as a standby-replay");
	ck_assert_msg(exists("one") && exists("two"), "a file is lost");
	ck_assert_int_eq(lfs_umount(&fs), 0);
	kill(b, SIGTERM);
	ck_assert_int_ne(wait_exit(b), -1);
}
END_TEST

static void setup(void)
{
	if (lfs_init(&fs) != 0) {
		lfs_cleanup(&fs);
		fprintf(stderr, "e2e setup failed\n");
		exit(1);
	}
}

static void teardown(void)
{
	lfs_cleanup(&fs);
}

static Suite *suite(void)
{
	Suite *s = suite_create("fuse_failover");

	lfs_suite_add(s, "zombie", test_zombie_writes_nothing, setup, teardown, 180);
	lfs_suite_add(s, "race", test_standbys_race, setup, teardown, 180);
	lfs_suite_add(s, "dead_standby_dropped", test_dead_standby_dropped, setup, teardown, 180);
	lfs_suite_add(s, "damaged_map", test_damaged_map, setup, teardown, 180);
	lfs_suite_add(s, "fail_and_stop", test_fail_and_stop, setup, teardown, 180);
	lfs_suite_add(s, "sreplay_follows", test_sreplay_follows, setup, teardown, 180);
	lfs_suite_add(s, "sreplay_trimmed", test_sreplay_trimmed, setup, teardown, 180);
	lfs_suite_add(s, "sreplay_kept", test_sreplay_kept, setup, teardown, 180);
	lfs_suite_add(s, "sreplay_preferred", test_sreplay_preferred, setup, teardown, 180);
	lfs_suite_add(s, "sreplay_undecodable", test_sreplay_undecodable, setup, teardown, 180);
	lfs_suite_add(s, "sreplay_bounded", test_sreplay_bounded, setup, teardown, 180);
	return s;
}

int main(void)
{
	return lfs_suite_main(suite(), "test_fuse_failover");
}
