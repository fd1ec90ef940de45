/*
 * test_fuse_netns.c - MDS failover between daemons that stand for separate
 * machines (issue 19): mds.a and mds.b each run in a network namespace of
 * their own, reached from the root namespace (where the FUSE mount runs)
 * over a veth pair each, with addresses of a private /30 that exists only
 * on those veths.  Nothing leaves the machine (an unreachable route per /30
 * while the test runs catches what a downed veth no longer routes).  Both
 * daemons share the local store in the temp dir, as two machines would
 * share a RADOS cluster.
 *
 *   kill       mds.a is stopped while the mount waits for it, then killed
 *              (-9, in its namespace): the local store's host lock shortcut
 *              (mds/mdsmap.c: the flock on <store>/mds.active.lock dies with
 *              the process) lets mds.b take rank 0 at once - the grace is
 *              set to 600 s so that no other path could pass the test; the
 *              mount follows over the other veth, the waiting create
 *              completes, the files made before are there, the epoch grew
 *              by exactly one
 *   partition  mds.a's end of its veth goes down: the mount can no
 *              longer reach mds.a, but mds.a still renews its beacon
 *              through the shared store.  mds.b must not take over: the
 *              test waits for more renewals of mds.a than fit in the grace
 *              (and for mds.b's own registration to move: it was watching)
 *              with the epoch unchanged and the create still waiting.  With
 *              the link up again the mount resumes the same session (same
 *              id) at mds.a, after a reconnect, and the create completes.
 *              As in CephFS: an MDS cut off from its clients that still
 *              reaches the monitors keeps its rank.
 *   mds_fail   `mds fail` of mds.a while the mount is on it: mds.b takes
 *              the rank (vacant: no grace), the mount follows
 *
 * The namespaces and veths are made by the check parent's (unchecked)
 * setup and removed by its teardown, which also runs when a case failed;
 * their names carry the test's pid.  Without a usable `ip netns` (no
 * iproute2, no CAP_NET_ADMIN) the test is skipped (77) with a message.
 */
#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
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
#include "store/store.h"
#include "tests/e2e/test_fuse_harness.h"
#include "tests/lib/wait.h"

#define MDS_PORT 6800
#define GUARD_METRIC 4000

static struct lfs fs;
static const char *ip_bin;
static char ns[2][32];          /* lfsNNNNa, lfsNNNNb: the namespaces */
static char veth[2][IFNAMSIZ];  /* lvNNNNa: the root namespace's end */
static char peer[2][IFNAMSIZ];  /* lvNNNNan: the end inside the namespace */
static char mds_ip[2][16], host_ip[2][16], subnet[2][24];
static bool guard[2];           /* the unreachable route of subnet[i] is ours to remove */
static char mds_addr_arg[2][48], client_addrs[96];
static const char *const names[2] = { "a", "b" };
static pid_t mds_pid[2];

/* ---- the network --------------------------------------------------------------------------- */

static const char *find_ip(void)
{
	static const char *const cand[] = { "/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip" };

	for (size_t i = 0; i < sizeof(cand) / sizeof(cand[0]); i++)
		if (access(cand[i], X_OK) == 0)
			return cand[i];
	return NULL;
}

/* run `ip` with the space-separated words of @fmt; its exit status (its complaints go to stderr) */
static int ip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int ip(const char *fmt, ...)
{
	char line[512], *argv[24], *save = NULL, *w;
	va_list ap;
	int n = 0;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	argv[n++] = (char *)ip_bin;
	for (w = strtok_r(line, " ", &save); w && n < 23; w = strtok_r(NULL, " ", &save))
		argv[n++] = w;
	argv[n] = NULL;
	return lfs_run(argv, 20000, NULL);
}

/* is 10.88.@net.0/30 free: no address of the root namespace in it? */
static bool net_free(int net)
{
	struct ifaddrs *ifa, *i;
	bool used = false;

	if (getifaddrs(&ifa) < 0)
		return false;
	for (i = ifa; i && !used; i = i->ifa_next) {
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
			uint32_t a = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);

			used = (a & 0xfffffffcu) == ((10u << 24) | (88u << 16) | ((uint32_t)net << 8));
		}
	}
	freeifaddrs(ifa);
	return !used;
}

static bool ns_exists(const char *name)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "/run/netns/%s", name);
	return access(p, F_OK) == 0;
}

static void net_down(void)
{
	for (int i = 0; i < 2; i++) {
		/* the pair first (both ends go at once); a deleted namespace would
		 * take its end only when its last process is gone */
		if (*veth[i] && if_nametoindex(veth[i]))
			ip("link del %s", veth[i]);
		if (*ns[i] && ns_exists(ns[i]))
			ip("netns del %s", ns[i]);
		if (guard[i] && ip("route del unreachable %s metric %d", subnet[i], GUARD_METRIC) == 0)
			guard[i] = false;
	}
}

/*
 * Guard routes for two free /30s from 10.88.@net.0 on: nothing leaves the
 * machine, since without a veth's own route (its link down, or gone) its
 * subnet is unreachable here instead of sent to the default route.  A
 * subnet with an address here, or a guard already (another run), is
 * skipped.  0 or -1.
 */
static int net_guard(int net)
{
	for (int i = 0; i < 2; i++) {
		snprintf(subnet[i], sizeof(subnet[i]), "10.88.%d.0/30", net + i);
		if (!net_free(net + i) || ip("route add unreachable %s metric %d", subnet[i], GUARD_METRIC)) {
			if (i == 1 && ip("route del unreachable %s metric %d", subnet[0], GUARD_METRIC) == 0)
				guard[0] = false;
			return -1;
		}
		guard[i] = true;
	}
	return 0;
}

/* two namespaces, a veth pair each, 10.88.N.1 inside and 10.88.N.2 here: 0 or -1 */
static int net_up(void)
{
	int pid = (int)getpid(), net = 1;

	for (; net < 250 && net_guard(net); net += 2)
		;
	if (net >= 250)
		return -1;
	for (int i = 0; i < 2; i++) {
		snprintf(ns[i], sizeof(ns[i]), "lfs%d%c", pid, *names[i]);
		snprintf(veth[i], sizeof(veth[i]), "lv%d%c", pid, *names[i]);
		snprintf(peer[i], sizeof(peer[i]), "lv%d%cn", pid, *names[i]);
		snprintf(mds_ip[i], sizeof(mds_ip[i]), "10.88.%d.1", net + i);
		snprintf(host_ip[i], sizeof(host_ip[i]), "10.88.%d.2", net + i);
		snprintf(mds_addr_arg[i], sizeof(mds_addr_arg[i]), "--mds_addr=%s", mds_ip[i]);
		if (ip("netns add %s", ns[i]) || ip("link add %s type veth peer name %s netns %s", veth[i], peer[i], ns[i]) ||
		    ip("addr add %s/30 dev %s", host_ip[i], veth[i]) || ip("link set %s up", veth[i]) ||
		    ip("-n %s addr add %s/30 dev %s", ns[i], mds_ip[i], peer[i]) ||
		    ip("-n %s link set %s up", ns[i], peer[i]) || ip("-n %s link set lo up", ns[i]))
			return -1;
	}
	snprintf(client_addrs, sizeof(client_addrs), "--client_mds_addr=%s:%d,%s:%d", mds_ip[0], MDS_PORT, mds_ip[1],
		 MDS_PORT);
	return 0;
}

/*
 * What a run killed outright (SIGKILL of the test: no teardown) left: our
 * namespaces (lfsPIDa, lfsPIDb) and root-side veths (lvPIDa, lvPIDb) of a
 * pid that no longer runs.  Its guard routes stay (their owner cannot be
 * told); net_guard() skips those subnets.
 */
static void reap_stale(void)
{
	struct if_nameindex *ifs = if_nameindex();
	DIR *d = opendir("/run/netns");
	struct dirent *de;
	char c, rest;
	int pid;

	while (d && (de = readdir(d)))
		if (sscanf(de->d_name, "lfs%d%c%c", &pid, &c, &rest) == 2 && (c == 'a' || c == 'b') && pid > 0 &&
		    kill(pid, 0) < 0 && errno == ESRCH)
			ip("netns del %s", de->d_name);
	if (d)
		closedir(d);
	for (struct if_nameindex *i = ifs; i && i->if_index; i++)
		if (sscanf(i->if_name, "lv%d%c%c", &pid, &c, &rest) == 2 && (c == 'a' || c == 'b') && pid > 0 &&
		    kill(pid, 0) < 0 && errno == ESRCH)
			ip("link del %s", i->if_name);
	if (ifs)
		if_freenameindex(ifs);
}

/* ---- the daemons ----------------------------------------------------------------------------- */

/* mds.a (@i 0) or mds.b (1) in its namespace, listening on its veth's address */
static pid_t start_mds(int i, const char *interval, const char *grace)
{
	const char *extra[] = { mds_addr_arg[i], interval, grace, NULL };
	pid_t pid;

	fs.mds_wrap[0] = ip_bin;
	fs.mds_wrap[1] = "netns";
	fs.mds_wrap[2] = "exec";
	fs.mds_wrap[3] = ns[i];
	fs.mds_wrap[4] = NULL;
	pid = lfs_mds_daemon_start(&fs, names[i], MDS_PORT, extra);
	fs.mds_wrap[0] = NULL;
	mds_pid[i] = pid;
	return pid;
}

static struct json_object *asok(const char *path, const char *prefix)
{
	struct json_object *req = json_object_new_object(), *rep = NULL;

	json_object_object_add(req, "prefix", json_object_new_string(prefix));
	if (asok_request(path, req, &rep, 10000) != 0 && rep) {
		json_object_put(rep);
		rep = NULL;
	}
	json_object_put(req);
	return rep;
}

static struct json_object *mds_asok(int i, const char *prefix)
{
	char p[PATH_MAX + 32];

	snprintf(p, sizeof(p), "%s/mds.%s.asok", fs.dir, names[i]);
	return asok(p, prefix);
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

/* `fs status` of the active daemon @i: the map's epoch, and why it took rank 0 into @why */
static long map_epoch(int i, char *why, size_t len)
{
	struct json_object *rep = mds_asok(i, "fs status"), *mm = NULL, *ranks;
	long e = -1;

	if (why)
		snprintf(why, len, "?");
	if (rep && json_object_object_get_ex(rep, "mdsmap", &mm)) {
		e = (long)jint(mm, "epoch");
		if (why && json_object_object_get_ex(mm, "ranks", &ranks) && json_object_array_length(ranks) > 0)
			snprintf(why, len, "%s", jstr(json_object_array_get_idx(ranks, 0), "took_over_because"));
	}
	json_object_put(rep);
	return e;
}

static bool wait_active(int i)
{
	double end = lt_now_s() + lt_hang_s_or(60);

	while (lt_now_s() < end) {
		if (lfs_mds_daemon_port(&fs, names[i]) > 0)
			return true;
		if (waitpid(mds_pid[i], NULL, WNOHANG) == mds_pid[i])
			return false;
		lt_nap();
	}
	return false;
}

/* the active (@i) lists @n live standbys */
static bool wait_standbys(int i, int n)
{
	double end = lt_now_s() + lt_hang_s_or(60);

	while (lt_now_s() < end) {
		struct json_object *rep = mds_asok(i, "fs status"), *mm, *sb;
		int live = 0;

		if (rep && json_object_object_get_ex(rep, "mdsmap", &mm) && json_object_object_get_ex(mm, "standbys", &sb))
			for (size_t k = 0; k < json_object_array_length(sb); k++)
				live += !strcmp(jstr(json_object_array_get_idx(sb, k), "state"), "standby");
		json_object_put(rep);
		if (live >= n)
			return true;
		lt_nap();
	}
	return false;
}

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

/* ---- the MDS map, read from the shared store as a third machine would ------------------------ */

struct mapview {
	uint64_t epoch;
	char gid[64];           /* rank 0's holder */
	uint64_t beacon;        /* its renewal counter */
	uint64_t standby_beacon; /* the (first) standby's registration counter */
};

static struct store *st;
static struct store_pool *meta;

static char *omap_str(const char *key)
{
	void *val = NULL;
	size_t len = 0;
	char *s;

	if (store_omap_get(meta, "mds_map", key, &val, &len) != 0)
		return NULL;
	s = malloc(len + 1);
	if (s) {
		memcpy(s, val, len);
		s[len] = '\0';
	}
	free(val);
	return s;
}

static bool read_map(struct mapview *v)
{
	struct json_object *map, *act;
	char *s, key[96];

	memset(v, 0, sizeof(*v));
	if (!meta) {
		char path[PATH_MAX];
		struct store_config sc = { .backend = "local" };

		snprintf(path, sizeof(path), "%s/store", fs.dir);
		sc.local_path = path;
		if (store_open(&sc, &st) || store_pool_open(st, "loligo_metadata", NULL, &meta))
			return false;
	}
	if (!(s = omap_str("epoch")))
		return false;
	v->epoch = strtoull(s, NULL, 10);
	free(s);
	if (!(s = omap_str("map")))
		return false;
	map = json_tokener_parse(s);
	free(s);
	if (map && json_object_object_get_ex(map, "active", &act))
		snprintf(v->gid, sizeof(v->gid), "%s", jstr(act, "gid"));
	json_object_put(map);
	snprintf(key, sizeof(key), "beacon.%s", v->gid);
	if ((s = omap_str(key))) {
		v->beacon = strtoull(s, NULL, 10);
		free(s);
	}
	/* a standby's registration: {"beacon": N, ...} under standby.<gid> */
	{
		struct store_omap_iter it;
		const struct store_kv *kv;

		store_omap_iter_init(&it, meta, "mds_map", NULL, 64);
		while ((kv = store_omap_iter_next(&it)) != NULL) {
			if (!strncmp(kv->key, "standby.", 8)) {
				char *t = strndup(kv->val, kv->len);
				struct json_object *reg = t ? json_tokener_parse(t) : NULL;

				if (reg)
					v->standby_beacon = (uint64_t)jint(reg, "beacon");
				json_object_put(reg);
				free(t);
			}
		}
		store_omap_iter_end(&it);
	}
	return true;
}

static void map_close(void)
{
	if (meta)
		store_pool_close(meta);
	if (st)
		store_close(st);
	meta = NULL;
	st = NULL;
}

/* ---- the mount ------------------------------------------------------------------------------ */

static struct json_object *client_session(void)
{
	struct json_object *rep = asok(fs.asok, "mds_sessions"), *e = NULL;

	if (rep && json_object_is_type(rep, json_type_array) && json_object_array_length(rep) > 0)
		e = json_object_get(json_object_array_get_idx(rep, 0));
	json_object_put(rep);
	return e;
}

/* the session is open at mds @i; its id, or 0 */
static uint64_t session_at(int i)
{
	struct json_object *s = client_session();
	char want[48];
	uint64_t id = 0;

	snprintf(want, sizeof(want), "%s:%d", mds_ip[i], MDS_PORT);
	if (s && !strcmp(jstr(s, "state"), "open") && !strcmp(jstr(s, "mds"), want))
		id = (uint64_t)jint(s, "session_id");
	json_object_put(s);
	return id;
}

static uint64_t wait_session_at(int i)
{
	double end = lt_now_s() + lt_hang_s_or(60);
	uint64_t id;

	while (lt_now_s() < end) {
		if ((id = session_at(i)) != 0)
			return id;
		lt_nap();
	}
	return 0;
}

static int64_t session_field(const char *k)
{
	struct json_object *s = client_session();
	int64_t v = jint(s, k);

	json_object_put(s);
	return v;
}

/*
 * An operation of the mount waits for the MDS (`ops`: the only thread
 * that uses the mount now is the waiter; with delegated inodes its create
 * may be done at once and its fsync be what waits).
 */
static bool op_waits_for_mds(void)
{
	struct json_object *rep = asok(fs.asok, "ops"), *arr;
	bool found = false;

	if (rep && json_object_object_get_ex(rep, "ops", &arr))
		for (size_t k = 0; !found && k < json_object_array_length(arr); k++)
			found = strstr(jstr(json_object_array_get_idx(arr, k), "waiting_for"), "MDS") != NULL;
	json_object_put(rep);
	return found;
}

static bool wait_op_waiting(void)
{
	double end = lt_now_s() + lt_hang_s_or(60);

	while (lt_now_s() < end) {
		if (op_waits_for_mds())
			return true;
		lt_nap();
	}
	return false;
}

static int create_fsync(const char *rel)
{
	char p[PATH_MAX];
	int fd, r;

	lfs_path(&fs, rel, p, sizeof(p));
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
	struct stat sb;

	lfs_path(&fs, rel, p, sizeof(p));
	return stat(p, &sb) == 0;
}

/* a create that waits for the MDS, in a thread of its own */
struct waiter {
	pthread_t th;
	const char *name;
	atomic_int done;
	int r;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	sigset_t all;

	/*
	 * No signal of the test process lands here: one that does makes the
	 * kernel send FUSE_INTERRUPT and the wait ends with EINTR, as designed
	 * (client/fuse/ops.c).  Without this, about one run in 30 of `kill`
	 * saw EINTR; handlers on every catchable signal but SIGCHLD recorded
	 * none, so it is likely the SIGCHLD of the killed mds.a, our child.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	w->r = create_fsync(w->name);
	atomic_store(&w->done, 1);
	return NULL;
}

static void waiter_start(struct waiter *w, const char *name)
{
	w->name = name;
	atomic_store(&w->done, 0);
	ck_assert_int_eq(pthread_create(&w->th, NULL, waiter_main, w), 0);
}

static bool waiter_wait(struct waiter *w)
{
	double end = lt_now_s() + lt_hang_s_or(60);

	while (lt_now_s() < end) {
		if (atomic_load(&w->done)) {
			pthread_join(w->th, NULL);
			return true;
		}
		lt_nap();
	}
	return false;
}

/* both daemons up (a active, b its standby), the mount on a; files before.0-4 */
static void start_all(const char *interval, const char *grace, const char *client_opt)
{
	char name[32];

	start_mds(0, interval, grace);
	ck_assert_msg(wait_active(0), "mds.a did not take rank 0 in namespace %s", ns[0]);
	start_mds(1, interval, grace);
	ck_assert_msg(wait_standbys(0, 1), "mds.b (namespace %s) did not register as a standby", ns[1]);
	fs.fuse_args[0] = client_addrs;
	fs.fuse_args[1] = client_opt;
	if (lfs_mount(&fs, NULL) != 0) {
		lfs_dump_logs(&fs);
		ck_abort_msg("cannot mount loligo-fuse with %s", client_addrs);
	}
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "before.%d", i);
		ck_assert_int_eq(create_fsync(name), 0);
	}
}

static void check_before(void)
{
	char name[32];

	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "before.%d", i);
		ck_assert_msg(exists(name), "%s is lost", name);
	}
}

static void stop_all(void)
{
	ck_assert_int_eq(lfs_umount(&fs), 0);
	for (int i = 0; i < 2; i++) {
		if (mds_pid[i] > 0 && waitpid(mds_pid[i], NULL, WNOHANG) == 0) {
			kill(mds_pid[i], SIGTERM);
			ck_assert_int_ne(wait_exit(mds_pid[i]), -1);
		}
		mds_pid[i] = 0;
	}
	map_close();
}

/* ---- the cases ------------------------------------------------------------------------------ */

START_TEST(test_kill_active)
{
	struct waiter w;
	char why[160];
	uint64_t sid, sid2;
	long e0, e1;
	int stt;

	/* a grace no test waits for: only the host lock can explain a quick takeover */
	start_all("--mds_beacon_interval=0.3", "--mds_beacon_grace=600", NULL);
	sid = wait_session_at(0);
	ck_assert_msg(sid != 0, "the mount has no session at mds.a (%s)", mds_ip[0]);
	e0 = map_epoch(0, NULL, 0);
	ck_assert_int_gt(e0, 0);
	{
		char comm[64] = "", p[64];
		FILE *f;

		/* `ip netns exec` execs: the pid is the daemon's, in its namespace */
		snprintf(p, sizeof(p), "/proc/%d/comm", (int)mds_pid[0]);
		if ((f = fopen(p, "r"))) {
			if (!fgets(comm, sizeof(comm), f))
				*comm = '\0';
			fclose(f);
		}
		ck_assert_msg(!strncmp(comm, "loligo-mds", 10), "pid %d is %s, not loligo-mds", (int)mds_pid[0], comm);
	}

	/* the create waits for the stopped mds.a, which then dies */
	ck_assert_int_eq(kill(mds_pid[0], SIGSTOP), 0);
	waiter_start(&w, "during");
	ck_assert_msg(wait_op_waiting(), "the create and fsync of \"during\" never waited for the MDS");
	ck_assert_msg(!atomic_load(&w.done), "the create completed while mds.a was stopped");
	ck_assert_int_eq(kill(mds_pid[0], SIGKILL), 0);
	stt = wait_exit(mds_pid[0]);
	ck_assert_msg(stt != -1 && WIFSIGNALED(stt), "mds.a did not die of SIGKILL");
	mds_pid[0] = 0;

	ck_assert_msg(wait_active(1), "mds.b did not take rank 0 after mds.a was killed");
	sid2 = wait_session_at(1);
	ck_assert_msg(sid2 != 0, "the mount did not follow to mds.b at %s", mds_ip[1]);
	ck_assert_msg(sid2 == sid, "the session was not resumed at mds.b (%llu, was %llu)", (unsigned long long)sid2,
		      (unsigned long long)sid);
	ck_assert_msg(waiter_wait(&w), "the waiting create did not complete at mds.b");
	ck_assert_msg(w.r == 0, "the waiting create failed: %s", strerror(-w.r));
	e1 = map_epoch(1, why, sizeof(why));
	ck_assert_msg(e1 == e0 + 1, "the epoch went from %ld to %ld: one takeover adds exactly one", e0, e1);
	ck_assert_msg(strstr(why, "host lock") != NULL, "mds.b took rank 0 because \"%s\", not by the host lock", why);
	fprintf(stderr, "test_fuse_netns: kill: mds.b (%s) took rank 0 (%s), epoch %ld -> %ld, session %llu followed\n",
		mds_ip[1], why, e0, e1, (unsigned long long)sid);
	check_before();
	ck_assert(exists("during"));
	ck_assert_int_eq(create_fsync("after"), 0);
	stop_all();
}
END_TEST

START_TEST(test_partition)
{
	/* renewals of mds.a that, at >= 0.3 s apart, span more than the grace of 3 s */
	const uint64_t renewals = 3 / 0.3 + 5;
	struct mapview v0, v;
	struct waiter w;
	uint64_t sid, sid2;
	int64_t rc0;
	char why[160];
	double end;

	start_all("--mds_beacon_interval=0.3", "--mds_beacon_grace=3", "--client_session_timeout=2");
	sid = wait_session_at(0);
	ck_assert_msg(sid != 0, "the mount has no session at mds.a (%s)", mds_ip[0]);
	ck_assert_msg(read_map(&v0), "cannot read the MDS map from the store");
	rc0 = session_field("reconnects");

	/* the mount loses mds.a (its packets are dropped: connects time out); the store does not */
	ck_assert_int_eq(ip("-n %s link set %s down", ns[0], peer[0]), 0);
	waiter_start(&w, "during");
	ck_assert_msg(wait_op_waiting(), "the create and fsync of \"during\" never waited for the MDS");
	ck_assert_msg(read_map(&v0), "cannot read the MDS map from the store");
	end = lt_now_s() + lt_hang_s_or(60);
	for (;;) {
		ck_assert_msg(read_map(&v), "cannot read the MDS map from the store");
		ck_assert_msg(v.epoch == v0.epoch && !strcmp(v.gid, v0.gid),
			      "the map moved (epoch %llu -> %llu) while mds.a still renewed its beacon",
			      (unsigned long long)v0.epoch, (unsigned long long)v.epoch);
		ck_assert_msg(lfs_mds_daemon_port(&fs, "b") == 0, "mds.b serves while mds.a holds the rank");
		ck_assert_msg(!atomic_load(&w.done), "the create completed while mds.a was unreachable (%s)",
			      strerror(-w.r));
		if (v.beacon >= v0.beacon + renewals && v.standby_beacon >= v0.standby_beacon + 2)
			break;
		ck_assert_msg(lt_now_s() < end, "mds.a's beacon went from %llu to %llu only (want +%llu), mds.b's from "
			      "%llu to %llu", (unsigned long long)v0.beacon, (unsigned long long)v.beacon,
			      (unsigned long long)renewals, (unsigned long long)v0.standby_beacon,
			      (unsigned long long)v.standby_beacon);
		ck_assert_msg(waitpid(mds_pid[0], NULL, WNOHANG) == 0 && waitpid(mds_pid[1], NULL, WNOHANG) == 0,
			      "a daemon exited during the partition");
		lt_nap();
	}
	fprintf(stderr, "test_fuse_netns: partition: epoch %llu kept over mds.a's renewals %llu -> %llu "
		"(mds.b registered %llu -> %llu)\n", (unsigned long long)v.epoch, (unsigned long long)v0.beacon,
		(unsigned long long)v.beacon, (unsigned long long)v0.standby_beacon,
		(unsigned long long)v.standby_beacon);

	ck_assert_int_eq(ip("-n %s link set %s up", ns[0], peer[0]), 0);
	ck_assert_msg(waiter_wait(&w), "the waiting create did not complete once mds.a was reachable again");
	ck_assert_msg(w.r == 0, "the waiting create failed: %s", strerror(-w.r));
	sid2 = wait_session_at(0);
	ck_assert_msg(sid2 == sid, "the session at mds.a is %llu, was %llu", (unsigned long long)sid2,
		      (unsigned long long)sid);
	ck_assert_msg(session_field("reconnects") > rc0, "the mount never lost its connection to mds.a");
	ck_assert_msg(lfs_mds_daemon_port(&fs, "b") == 0, "mds.b serves");
	ck_assert_msg(map_epoch(0, why, sizeof(why)) == (long)v0.epoch, "the epoch moved");
	fprintf(stderr, "test_fuse_netns: partition: session %llu resumed at mds.a after %lld reconnect(s)\n",
		(unsigned long long)sid, (long long)(session_field("reconnects") - rc0));
	check_before();
	ck_assert(exists("during"));
	ck_assert_int_eq(create_fsync("after"), 0);
	stop_all();
}
END_TEST

START_TEST(test_mds_fail)
{
	struct json_object *rep;
	uint64_t sid;
	char why[160];
	long e0, e1;
	int stt;

	/* a grace the test would notice: `mds fail` must not wait for it */
	start_all("--mds_beacon_interval=0.3", "--mds_beacon_grace=600", NULL);
	sid = wait_session_at(0);
	ck_assert_msg(sid != 0, "the mount has no session at mds.a (%s)", mds_ip[0]);
	e0 = map_epoch(0, NULL, 0);
	rep = mds_asok(0, "mds fail");
	ck_assert_msg(rep != NULL, "mds fail: no answer");
	json_object_put(rep);
	stt = wait_exit(mds_pid[0]);
	ck_assert_msg(stt != -1 && WIFEXITED(stt), "mds.a did not exit after mds fail");
	mds_pid[0] = 0;
	ck_assert_msg(wait_active(1), "mds.b did not take rank 0 after mds fail");
	ck_assert_int_eq(create_fsync("two"), 0);
	ck_assert_msg(wait_session_at(1) == sid, "the mount did not resume its session at mds.b (%s)", mds_ip[1]);
	e1 = map_epoch(1, why, sizeof(why));
	ck_assert_msg(e1 > e0, "the epoch did not move (%ld -> %ld)", e0, e1);
	fprintf(stderr, "test_fuse_netns: mds_fail: mds.b took rank 0 (%s), epoch %ld -> %ld\n", why, e0, e1);
	check_before();
	stop_all();
}
END_TEST

/* unchecked, in the check parent: also after a failed case */
static void setup(void)
{
	if (lfs_init(&fs) != 0 || net_up() != 0) {
		fprintf(stderr, "e2e setup failed (temp dir, mkfs or the namespaces)\n");
		lfs_cleanup(&fs);
		net_down();
		exit(1);
	}
}

static void teardown(void)
{
	/* the daemons first: a namespace (and its veth) lives as long as they do */
	lfs_cleanup(&fs);
	net_down();
}

/* can we make a namespace and a veth pair into it here? */
static bool netns_usable(void)
{
	char name[32], v[IFNAMSIZ], pv[IFNAMSIZ];
	bool ok;

	if (!(ip_bin = find_ip())) {
		fprintf(stderr, "test_fuse_netns: SKIP: no `ip` (iproute2) found\n");
		return false;
	}
	snprintf(name, sizeof(name), "lfs%dprobe", (int)getpid());
	snprintf(v, sizeof(v), "lv%dp", (int)getpid());
	snprintf(pv, sizeof(pv), "lv%dq", (int)getpid());
	if (ip("netns add %s", name) != 0) {
		fprintf(stderr, "test_fuse_netns: SKIP: `ip netns add` does not work here (CAP_SYS_ADMIN, /run/netns?)\n");
		return false;
	}
	ok = ip("link add %s type veth peer name %s netns %s", v, pv, name) == 0;
	if (ok)
		ip("link del %s", v);
	ip("netns del %s", name);
	if (ok)
		reap_stale();
	if (!ok)
		fprintf(stderr, "test_fuse_netns: SKIP: cannot make a veth pair into a namespace (CAP_NET_ADMIN, "
			"veth module?)\n");
	return ok;
}

static Suite *suite(void)
{
	Suite *s = suite_create("fuse_netns");

	lfs_suite_add(s, "kill", test_kill_active, setup, teardown, 180);
	lfs_suite_add(s, "partition", test_partition, setup, teardown, 180);
	lfs_suite_add(s, "mds_fail", test_mds_fail, setup, teardown, 180);
	return s;
}

int main(void)
{
	if (getuid() == 0 && !netns_usable())
		return 77;
	if (lfs_rados()) {
		fprintf(stderr, "test_fuse_netns: SKIP: runs on the local store only\n");
		return 77;
	}
	return lfs_suite_main(suite(), "test_fuse_netns");
}
