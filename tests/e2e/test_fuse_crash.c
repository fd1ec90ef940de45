/*
 * test_fuse_crash.c - namespace operations through a real FUSE mount while
 * the MDS is killed -9 and restarted, and a checker: every operation whose
 * syscall returned is there exactly once, nothing else is (issue 13.3: the
 * proof that replay keeps acknowledged results, with synchronous directory
 * operations now and with asynchronous ones later).
 *
 * A workload process (forked before anything of the mount is open, so the
 * test process can restart the MDS at any time; see lfs_mds_prepare) runs
 * nthreads threads (4; the failover case takes LOLIGO_FAILOVER_THREADS, at most 8).  Each thread makes names of its own ("t<T>.<seq>", never
 * reused) in NSHARED directories shared by all threads, and works on them
 * with create (a third of them also write 1-16 KiB and fsync), mkdir, rename
 * (of files and of its directories, a quarter of the file renames onto
 * another of its files), link, unlink and rmdir.  An operation is written to
 * the thread's log (in the temp dir, not on the mount) only once its
 * syscalls returned; a syscall that fails fails the test (every operation is
 * valid in the thread's model, so an error is a defect a user would see, e.g.
 * EEXIST from a replayed create).
 *
 * Meanwhile the test kills the MDS with SIGKILL NKILLS times, each after the
 * workload made progress since the last restart and a random delay; two
 * times out of three it first holds the MDS journal (the mds_journal_hold
 * hook) for a moment, so that operations are answered UNSAFE and the
 * restarted MDS has to learn them from the client's replay.  The mount reconnects, replays,
 * and the syscalls in flight return.
 *
 * At the end the workload stops (every operation in flight completes), and
 * the checker builds the model from the logs and compares the mount's tree
 * with it: names in every directory (each exactly once, none unknown), types,
 * inode numbers, link counts, sizes, and the contents of the files written.
 * Then the mount is unmounted, the MDS killed -9 once more and restarted, and
 * a fresh mount must show the same tree.
 *
 * LOLIGO_CRASH_SEED=N replays a run's random choices (the seed is printed).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/admin_sock.h"
#include "tests/e2e/test_fuse_harness.h"
#include "tests/lib/wait.h"

enum {
	MAXTHREADS = 8,
	NSHARED = 3,
	NKILLS = 8,
	MIN_PROGRESS = 40,      /* acknowledged ops between two kills */
	MAXNODES = 8192,        /* per thread; the thread stops when full */
	MAXDENTS = 16384,
	MAXDATA = 16384,
};

static struct lfs fs;
static int nthreads = 4;      /* workload threads, at most MAXTHREADS */

/* snprintf for paths and messages: they fit (short temp dir, short names);
 * a cut one shows up as a failing syscall or a cut message */
static int spr(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int spr(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n;
}

/* ---- the model: what the acknowledged operations made -------------------- */

/* a directory entry's parent: a shared directory (-1 - k) or a node of the thread */
struct node {
	char type;              /* 'f' file, 'd' directory */
	bool live;
	uint64_t ino;
	int nlink;              /* files: names of it alive */
	int size;
	unsigned seed;          /* content: lfs_pat(seed, off) for size bytes */
	int mode, uid, gid;     /* files: what the create's fchmod/fchown left (mode -1: not set) */
	long long mtime_s;      /* and its futimens (mtime_ns: the nanoseconds) */
	long mtime_ns;
	int children;           /* directories: live entries in it */
};

struct dent {
	int parent;
	int node;
	bool live;
	char name[24];
};

struct model {
	int t;
	int nnodes, ndents, seq;
	struct node nodes[MAXNODES];
	struct dent dents[MAXDENTS];
};

static const char *shared_name(int k)
{
	static const char *n[NSHARED] = {"d0", "d1", "d2"};
	return n[k];
}

/* path of a parent (a shared dir or a directory node) below @root */
static int parent_path(const struct model *m, int parent, const char *root, char *buf, size_t len)
{
	if (parent < 0)
		return spr(buf, len, "%s/%s", root, shared_name(-1 - parent));
	/* the thread's directories live only in shared ones: one step up */
	for (int i = 0; i < m->ndents; i++) {
		const struct dent *d = &m->dents[i];
		if (d->live && d->node == parent)
			return spr(buf, len, "%s/%s/%s", root, shared_name(-1 - d->parent), d->name);
	}
	return spr(buf, len, "%s/<lost dir %d>", root, parent);
}

static void dent_path(const struct model *m, int di, const char *root, char *buf, size_t len)
{
	char p[PATH_MAX];

	parent_path(m, m->dents[di].parent, root, p, sizeof(p));
	spr(buf, len, "%s/%s", p, m->dents[di].name);
}

static int new_dent(struct model *m, int parent, const char *name, int node)
{
	struct dent *d = &m->dents[m->ndents];

	d->parent = parent;
	d->node = node;
	d->live = true;
	spr(d->name, sizeof(d->name), "%s", name);
	if (parent >= 0)
		m->nodes[parent].children++;
	return m->ndents++;
}

static void drop_dent(struct model *m, int di)
{
	struct dent *d = &m->dents[di];

	d->live = false;
	if (d->parent >= 0)
		m->nodes[d->parent].children--;
}

/*
 * Apply one log record to @m; the worker applies what it logs, the checker
 * what it reads, so both have the same model.  0, or -1 for a record that
 * does not parse or does not fit the model (a corrupt log).
 *   c PARENT NAME INO SIZE SEED MODE UID GID MTIME_S MTIME_NS
 *                                 create (+ write SIZE bytes + fsync, + as
 *                                 tar: futimens, fchown, fchmod; MODE -1: none)
 *   m PARENT NAME INO             mkdir
 *   r DENT PARENT NAME VICTIM     rename (VICTIM: the dent replaced, or -1)
 *   l DENT PARENT NAME            link
 *   u DENT                        unlink
 *   d DENT                        rmdir
 */
static int apply(struct model *m, const char *rec)
{
	char op, name[24];
	int parent, di, victim, size, n, mode, uid, gid;
	unsigned long long ino;
	long long mts;
	long mtns;
	unsigned seed;

	if (m->ndents >= MAXDENTS || m->nnodes >= MAXNODES)
		return -1;
	switch (rec[0]) {
	case 'c':
		if (sscanf(rec, "%c %d %23s %llu %d %u %d %d %d %lld %ld", &op, &parent, name, &ino, &size, &seed,
			   &mode, &uid, &gid, &mts, &mtns) != 11)
			return -1;
		n = m->nnodes++;
		m->nodes[n] = (struct node){.type = 'f', .live = true, .ino = ino, .nlink = 1, .size = size,
					    .seed = seed, .mode = mode, .uid = uid, .gid = gid, .mtime_s = mts,
					    .mtime_ns = mtns};
		new_dent(m, parent, name, n);
		return 0;
	case 'm':
		if (sscanf(rec, "%c %d %23s %llu", &op, &parent, name, &ino) != 4)
			return -1;
		n = m->nnodes++;
		m->nodes[n] = (struct node){.type = 'd', .live = true, .ino = ino};
		new_dent(m, parent, name, n);
		return 0;
	case 'r':
		if (sscanf(rec, "%c %d %d %23s %d", &op, &di, &parent, name, &victim) != 5 || di < 0 ||
		    di >= m->ndents || victim >= m->ndents)
			return -1;
		if (victim >= 0) {
			drop_dent(m, victim);
			if (--m->nodes[m->dents[victim].node].nlink == 0)
				m->nodes[m->dents[victim].node].live = false;
		}
		drop_dent(m, di);
		new_dent(m, parent, name, m->dents[di].node);
		return 0;
	case 'l':
		if (sscanf(rec, "%c %d %d %23s", &op, &di, &parent, name) != 4 || di < 0 || di >= m->ndents)
			return -1;
		m->nodes[m->dents[di].node].nlink++;
		new_dent(m, parent, name, m->dents[di].node);
		return 0;
	case 'u':
	case 'd':
		if (sscanf(rec, "%c %d", &op, &di) != 2 || di < 0 || di >= m->ndents)
			return -1;
		drop_dent(m, di);
		if (rec[0] == 'd' || --m->nodes[m->dents[di].node].nlink == 0)
			m->nodes[m->dents[di].node].live = false;
		return 0;
	}
	return -1;
}

/* ---- the workload --------------------------------------------------------- */

struct shared {                 /* MAP_SHARED between the test and the workload */
	atomic_long acked[MAXTHREADS];
	atomic_int stop;
	atomic_int failed;
	atomic_long max_op_ns;          /* the longest any operation's syscalls took */
};

static struct shared *S;

struct worker {
	pthread_t th;
	struct model *m;
	unsigned rnd;
	int log_fd;
	char err[512];
};

static unsigned rnd(struct worker *w, unsigned n)
{
	return (unsigned)rand_r(&w->rnd) % n;
}

/* log and apply one acknowledged op */
static int ack(struct worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int ack(struct worker *w, const char *fmt, ...)
{
	char rec[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(rec, sizeof(rec) - 1, fmt, ap);
	va_end(ap);
	if (apply(w->m, rec) < 0) {
		spr(w->err, sizeof(w->err), "model rejects its own record '%s'", rec);
		return -1;
	}
	rec[n++] = '\n';
	if (write(w->log_fd, rec, (size_t)n) != n) {
		spr(w->err, sizeof(w->err), "log write: %s", strerror(errno));
		return -1;
	}
	atomic_fetch_add(&S->acked[w->m->t], 1);
	return 0;
}

static int failw(struct worker *w, const char *what, const char *path)
{
	spr(w->err, sizeof(w->err), "%s %s: %s", what, path, strerror(errno));
	return -1;
}

/* a random live dent of type @type ('f', 'd', or 0 for any); -1 if none */
static int pick(struct worker *w, char type, bool empty_dir)
{
	int n = w->m->ndents;

	for (int tries = 0; tries < 32 && n > 0; tries++) {
		int di = (int)rnd(w, (unsigned)n);
		const struct dent *d = &w->m->dents[di];
		const struct node *nd = &w->m->nodes[d->node];
		if (!d->live || (type && nd->type != type) || (empty_dir && nd->children))
			continue;
		return di;
	}
	return -1;
}

/* a parent for a new entry: a shared directory, or (@files) one of the thread's */
static int pick_parent(struct worker *w, bool files)
{
	if (files && rnd(w, 3) == 0) {
		int di = pick(w, 'd', false);
		if (di >= 0)
			return w->m->dents[di].node;
	}
	return -1 - (int)rnd(w, NSHARED);
}

static void fresh_name(struct worker *w, char *name, size_t len)
{
	spr(name, len, "t%d.%d", w->m->t, w->m->seq++);
}

static int op_create(struct worker *w)
{
	static __thread unsigned char buf[MAXDATA];
	char path[PATH_MAX], pp[PATH_MAX], name[24];
	static const int modes[] = { 0600, 0640, 0755, 0700, 0444, 02755 };
	static const int ids[] = { 0, 1000, 1001 };
	int parent = pick_parent(w, true), size = 0, fd, mode = -1, uid = 0, gid = 0;
	struct timespec ts[2] = { { 0, 0 }, { 0, 0 } };
	unsigned seed = 0;
	struct stat st;

	fresh_name(w, name, sizeof(name));
	parent_path(w->m, parent, fs.mnt, pp, sizeof(pp));
	spr(path, sizeof(path), "%s/%s", pp, name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return failw(w, "create", path);
	if (rnd(w, 3) == 0) {
		size = 1 + (int)rnd(w, MAXDATA);
		seed = 1 + rnd(w, 1u << 30);
		for (int i = 0; i < size; i++)
			buf[i] = lfs_pat(seed, i);
		if (write(fd, buf, (size_t)size) != size || fsync(fd) < 0) {
			failw(w, "write+fsync", path);
			close(fd);
			return -1;
		}
	}
	if (rnd(w, 2) == 0) {
		/* as tar leaves a file: times, owner, mode (answered by the
		 * client itself, in flight when the MDS dies) */
		ts[0].tv_sec = 1000000000 + (time_t)rnd(w, 100000000);
		ts[1].tv_sec = 1000000000 + (time_t)rnd(w, 100000000);
		ts[1].tv_nsec = (long)rnd(w, 1000000000);
		uid = ids[rnd(w, 3)];
		gid = ids[rnd(w, 3)];
		mode = modes[rnd(w, 6)];
		if (futimens(fd, ts) < 0 || fchown(fd, (uid_t)uid, (gid_t)gid) < 0 || fchmod(fd, (mode_t)mode) < 0) {
			failw(w, "futimens+fchown+fchmod", path);
			close(fd);
			return -1;
		}
	}
	if (fstat(fd, &st) < 0) {
		failw(w, "fstat", path);
		close(fd);
		return -1;
	}
	if (close(fd) < 0)
		return failw(w, "close", path);
	return ack(w, "c %d %s %llu %d %u %d %d %d %lld %ld", parent, name, (unsigned long long)st.st_ino, size, seed,
		   mode, uid, gid, (long long)ts[1].tv_sec, ts[1].tv_nsec);
}

static int op_mkdir(struct worker *w)
{
	char path[PATH_MAX], pp[PATH_MAX], name[24];
	int parent = pick_parent(w, false);
	struct stat st;

	fresh_name(w, name, sizeof(name));
	parent_path(w->m, parent, fs.mnt, pp, sizeof(pp));
	spr(path, sizeof(path), "%s/%s", pp, name);
	if (mkdir(path, 0755) < 0)
		return failw(w, "mkdir", path);
	if (stat(path, &st) < 0)
		return failw(w, "stat", path);
	return ack(w, "m %d %s %llu", parent, name, (unsigned long long)st.st_ino);
}

static int op_rename(struct worker *w)
{
	char from[PATH_MAX], to[PATH_MAX], pp[PATH_MAX], name[24];
	int di = pick(w, 0, false), parent, victim = -1;
	bool dir;

	if (di < 0)
		return op_create(w);
	dir = w->m->nodes[w->m->dents[di].node].type == 'd';
	parent = pick_parent(w, !dir);
	if (!dir && rnd(w, 4) == 0) {
		victim = pick(w, 'f', false);
		if (victim == di || (victim >= 0 && w->m->dents[victim].node == w->m->dents[di].node))
			victim = -1;
	}
	dent_path(w->m, di, fs.mnt, from, sizeof(from));
	if (victim >= 0) {
		dent_path(w->m, victim, fs.mnt, to, sizeof(to));
		parent = w->m->dents[victim].parent;
		spr(name, sizeof(name), "%s", w->m->dents[victim].name);
	} else {
		fresh_name(w, name, sizeof(name));
		parent_path(w->m, parent, fs.mnt, pp, sizeof(pp));
		spr(to, sizeof(to), "%s/%s", pp, name);
	}
	if (rename(from, to) < 0)
		return failw(w, "rename to", from);
	return ack(w, "r %d %d %s %d", di, parent, name, victim);
}

static int op_link(struct worker *w)
{
	char from[PATH_MAX], to[PATH_MAX], pp[PATH_MAX], name[24];
	int di = pick(w, 'f', false), parent;

	if (di < 0 || w->m->nodes[w->m->dents[di].node].nlink >= 4)
		return op_create(w);
	parent = pick_parent(w, true);
	fresh_name(w, name, sizeof(name));
	dent_path(w->m, di, fs.mnt, from, sizeof(from));
	parent_path(w->m, parent, fs.mnt, pp, sizeof(pp));
	spr(to, sizeof(to), "%s/%s", pp, name);
	if (link(from, to) < 0)
		return failw(w, "link", from);
	return ack(w, "l %d %d %s", di, parent, name);
}

static int op_unlink(struct worker *w)
{
	char path[PATH_MAX];
	int di = pick(w, 'f', false);

	if (di < 0)
		return op_create(w);
	dent_path(w->m, di, fs.mnt, path, sizeof(path));
	if (unlink(path) < 0)
		return failw(w, "unlink", path);
	return ack(w, "u %d", di);
}

static int op_rmdir(struct worker *w)
{
	char path[PATH_MAX];
	int di = pick(w, 'd', true);

	if (di < 0)
		return op_mkdir(w);
	dent_path(w->m, di, fs.mnt, path, sizeof(path));
	if (rmdir(path) < 0)
		return failw(w, "rmdir", path);
	return ack(w, "d %d", di);
}

static void *worker_main(void *p)
{
	struct worker *w = p;

	while (!atomic_load(&S->stop) && !atomic_load(&S->failed)) {
		unsigned r = rnd(w, 100);
		struct timespec t0, t1;
		long dt, prev;
		int e;

		if (w->m->ndents > MAXDENTS - 8 || w->m->nnodes > MAXNODES - 8)
			break;  /* full: the others go on */
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (r < 30)
			e = op_create(w);
		else if (r < 40)
			e = op_mkdir(w);
		else if (r < 60)
			e = op_rename(w);
		else if (r < 70)
			e = op_link(w);
		else if (r < 90)
			e = op_unlink(w);
		else
			e = op_rmdir(w);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		dt = (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec);
		prev = atomic_load(&S->max_op_ns);
		while (dt > prev && !atomic_compare_exchange_weak(&S->max_op_ns, &prev, dt))
			;
		if (e < 0) {
			atomic_store(&S->failed, 1);
			break;
		}
	}
	return NULL;
}

/* the workload process: exit 0, or 1 with the failing syscall on stderr */
static void workload(unsigned seed)
{
	static struct model models[MAXTHREADS];
	struct worker w[MAXTHREADS];
	int bad = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (int t = 0; t < nthreads; t++) {
		char p[PATH_MAX];

		memset(&w[t], 0, sizeof(w[t]));
		models[t].t = t;
		w[t].m = &models[t];
		w[t].rnd = seed * 7919u + (unsigned)t;
		spr(p, sizeof(p), "%s/ops.%d", fs.dir, t);
		w[t].log_fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
		if (w[t].log_fd < 0)
			_exit(1);
	}
	for (int t = 0; t < nthreads; t++)
		pthread_create(&w[t].th, NULL, worker_main, &w[t]);
	for (int t = 0; t < nthreads; t++) {
		pthread_join(w[t].th, NULL);
		if (w[t].err[0]) {
			fprintf(stderr, "workload thread %d: %s\n", t, w[t].err);
			bad = 1;
		}
		close(w[t].log_fd);
	}
	_exit(bad);
}

/* ---- the test --------------------------------------------------------------- */

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
	nanosleep(&ts, NULL);
}

static long acked_total(void)
{
	long n = 0;
	for (int t = 0; t < nthreads; t++)
		n += atomic_load(&S->acked[t]);
	return n;
}

static int asok_call(const char *path, const char *prefix, const char *var, const char *val,
		     struct json_object **out)
{
	struct json_object *req = json_object_new_object(), *rep = NULL;
	int r;

	json_object_object_add(req, "prefix", json_object_new_string(prefix));
	if (var) {
		json_object_object_add(req, "var", json_object_new_string(var));
		json_object_object_add(req, "val", json_object_new_string(val));
	}
	r = asok_request(path, req, &rep, 10000);
	json_object_put(req);
	if (out)
		*out = rep;
	else if (rep)
		json_object_put(rep);
	return r;
}

/* a counter of the client's perf group @group, or -1 (no such counter) */
static long client_counter(const char *group, const char *name)
{
	struct json_object *rep = NULL, *g, *v;
	long n = -1;

	if (asok_call(fs.asok, "perf dump", NULL, NULL, &rep) == 0 && json_object_object_get_ex(rep, group, &g) &&
	    json_object_object_get_ex(g, name, &v))
		n = (long)json_object_get_int64(v);
	if (rep)
		json_object_put(rep);
	return n;
}

/* wait until the workload acknowledged @n more ops than @base; false on failure or after @secs */
static bool wait_progress(long base, long n, double secs, pid_t child)
{
	double end = lt_now_s() + secs;

	while (lt_now_s() < end) {
		if (acked_total() >= base + n)
			return true;
		siginfo_t si = {0};
		/* WNOWAIT: the caller reaps it and reads its status */
		if (atomic_load(&S->failed) ||
		    (waitid(P_PID, (id_t)child, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == child))
			return false;
		sleep_s(0.02);
	}
	return false;
}

/* ---- the checker ---------------------------------------------------------- */

struct check {
	char msg[4096];
	int errors;
};

static void report(struct check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(struct check *c, const char *fmt, ...)
{
	size_t l = strlen(c->msg);
	va_list ap;

	if (c->errors++ < 12 && l < sizeof(c->msg) - 2) {
		va_start(ap, fmt);
		vsnprintf(c->msg + l, sizeof(c->msg) - l - 1, fmt, ap);
		va_end(ap);
		strcat(c->msg, "\n");
	}
}

/* the live dent of @models named @name in @parent of thread @t (parsed from the name), or -1 */
static int find_dent(struct model *models, int t, int parent, const char *name)
{
	struct model *m = &models[t];

	for (int i = 0; i < m->ndents; i++)
		if (m->dents[i].live && m->dents[i].parent == parent && !strcmp(m->dents[i].name, name))
			return i;
	return -1;
}

/*
 * One directory: each name it lists must be a live entry of the model (in
 * this parent), listed once; each live entry of the model there must be
 * listed.  @t_only >= 0: the directory belongs to that thread.
 */
static void check_dir(struct check *c, struct model *models, const char *path, int parent, int t_only)
{
	static unsigned char seen[MAXTHREADS][MAXDENTS];
	DIR *d = opendir(path);
	struct dirent *de;

	memset(seen, 0, sizeof(seen));
	if (!d) {
		report(c, "opendir %s: %s", path, strerror(errno));
		return;
	}
	while ((de = readdir(d))) {
		int t, di;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (sscanf(de->d_name, "t%d.", &t) != 1 || t < 0 || t >= nthreads || (t_only >= 0 && t != t_only)) {
			report(c, "%s/%s: a name no thread made", path, de->d_name);
			continue;
		}
		di = find_dent(models, t, parent, de->d_name);
		if (di < 0) {
			report(c, "%s/%s: there, but no acknowledged operation left it there", path, de->d_name);
			continue;
		}
		if (seen[t][di]++)
			report(c, "%s/%s: listed twice", path, de->d_name);
	}
	closedir(d);
	for (int t = 0; t < nthreads; t++) {
		if (t_only >= 0 && t != t_only)
			continue;
		for (int i = 0; i < models[t].ndents; i++) {
			const struct dent *e = &models[t].dents[i];
			if (e->live && e->parent == parent && !seen[t][i])
				report(c, "%s/%s: acknowledged, but not listed", path, e->name);
		}
	}
}

static void check_tree(struct check *c, struct model *models, const char *root)
{
	char p[PATH_MAX];
	DIR *d;
	struct dirent *de;
	int n = 0;

	/* the root holds the shared directories and nothing else */
	d = opendir(root);
	if (!d) {
		report(c, "opendir %s: %s", root, strerror(errno));
		return;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	if (n != NSHARED)
		report(c, "%s lists %d entries, expected the %d shared directories", root, n, NSHARED);
	for (int k = 0; k < NSHARED; k++) {
		int subdirs = 0;
		struct stat st;

		spr(p, sizeof(p), "%s/%s", root, shared_name(k));
		check_dir(c, models, p, -1 - k, -1);
		for (int t = 0; t < nthreads; t++)
			for (int i = 0; i < models[t].ndents; i++) {
				const struct dent *e = &models[t].dents[i];
				subdirs += e->live && e->parent == -1 - k && models[t].nodes[e->node].type == 'd';
			}
		if (stat(p, &st) < 0)
			report(c, "stat %s: %s", p, strerror(errno));
		else if (st.st_nlink != (nlink_t)(2 + subdirs))
			report(c, "%s: %lu links, expected %d (2 + its %d subdirectories)", p, (unsigned long)st.st_nlink,
			       2 + subdirs, subdirs);
	}
	for (int t = 0; t < nthreads; t++) {
		struct model *m = &models[t];

		for (int i = 0; i < m->ndents; i++) {
			const struct dent *e = &m->dents[i];
			const struct node *nd = &m->nodes[e->node];
			struct stat st;

			if (!e->live)
				continue;
			dent_path(m, i, root, p, sizeof(p));
			if (lstat(p, &st) < 0) {
				report(c, "%s: %s (acknowledged)", p, strerror(errno));
				continue;
			}
			if ((nd->type == 'd') != S_ISDIR(st.st_mode) || (nd->type == 'f' && !S_ISREG(st.st_mode)))
				report(c, "%s: mode %o, expected a %s", p, st.st_mode,
				       nd->type == 'd' ? "directory" : "regular file");
			if (st.st_ino != nd->ino)
				report(c, "%s: ino %llu, the operation that made it saw %llu", p,
				       (unsigned long long)st.st_ino, (unsigned long long)nd->ino);
			if (nd->type == 'd') {
				if (st.st_nlink != 2)
					report(c, "%s: %lu links, expected 2", p, (unsigned long)st.st_nlink);
				check_dir(c, models, p, e->node, t);
				continue;
			}
			if (st.st_nlink != (nlink_t)nd->nlink)
				report(c, "%s: %lu links, expected %d", p, (unsigned long)st.st_nlink, nd->nlink);
			if (nd->mode >= 0 &&
			    ((int)(st.st_mode & 07777) != nd->mode || (int)st.st_uid != nd->uid ||
			     (int)st.st_gid != nd->gid || st.st_mtim.tv_sec != nd->mtime_s ||
			     st.st_mtim.tv_nsec != nd->mtime_ns))
				report(c, "%s: mode 0%o owner %u:%u mtime %lld.%09ld, the acknowledged fchmod/fchown/futimens "
				       "left 0%o %d:%d %lld.%09ld", p, st.st_mode & 07777, st.st_uid, st.st_gid,
				       (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, nd->mode, nd->uid, nd->gid,
				       nd->mtime_s, nd->mtime_ns);
			if (lfs_check_file(p, nd->size, nd->seed) != 0)
				report(c, "%s: content is not the %d bytes written and fsynced (seed %u)", p, nd->size,
				       nd->seed);
		}
	}
}

/* the model from the workload's logs */
static int load_models(struct model *models)
{
	for (int t = 0; t < nthreads; t++) {
		char p[PATH_MAX], line[256];
		FILE *f;

		memset(&models[t], 0, sizeof(models[t]));
		models[t].t = t;
		spr(p, sizeof(p), "%s/ops.%d", fs.dir, t);
		f = fopen(p, "r");
		if (!f)
			return -1;
		while (fgets(line, sizeof(line), f)) {
			if (apply(&models[t], line) < 0) {
				fprintf(stderr, "%s: bad record '%s'\n", p, line);
				fclose(f);
				return -1;
			}
		}
		fclose(f);
	}
	return 0;
}

START_TEST(test_namespace_ops_survive_mds_kill9)
{
	static struct model models[MAXTHREADS];
	const char *env = getenv("LOLIGO_CRASH_SEED");
	unsigned seed = env && *env ? (unsigned)strtoul(env, NULL, 0) : (unsigned)time(NULL) ^ (unsigned)getpid();
	unsigned r = seed;
	char mds_asok[PATH_MAX + 16];
	struct check c = {0};
	long before_replays, replays, base;
	double t0 = lt_now_s();
	pid_t child;
	int st, holds = 0;

	fprintf(stderr, "test_fuse_crash: seed %u (LOLIGO_CRASH_SEED=%u replays it)\n", seed, seed);
	spr(mds_asok, sizeof(mds_asok), "%s/mds.asok", fs.dir);
	S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert(S != MAP_FAILED);
	memset(S, 0, sizeof(*S));
	if (lfs_mds_start(&fs) != 0 || lfs_mount(&fs, NULL) != 0) {
		lfs_dump_logs(&fs);
		ck_abort_msg("cannot start loligo-mds and mount loligo-fuse");
	}
	for (int k = 0; k < NSHARED; k++) {
		char p[PATH_MAX];
		ck_assert_int_eq(mkdir(lfs_path(&fs, shared_name(k), p, sizeof(p)), 0755), 0);
	}
	before_replays = client_counter("mds_client", "replays");

	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0)
		workload(seed);

	base = acked_total();
	for (int k = 0; k < NKILLS; k++) {
		bool hold = k % 3 != 0;

		if (!wait_progress(base, MIN_PROGRESS, 60, child)) {
			atomic_store(&S->stop, 1);
			waitpid(child, &st, 0);
			lfs_dump_logs(&fs);
			if (atomic_load(&S->failed))
				ck_abort_msg("before kill %d: a syscall of the workload failed (its message is above; "
					     "%ld ops acknowledged)", k, acked_total());
			ck_abort_msg("before kill %d: the workload made no progress for 60 s (%ld ops acknowledged)", k,
				     acked_total());
		}
		sleep_s((double)(rand_r(&r) % 400) / 1000.0);
		if (hold) {
			/* answered UNSAFE from here on, never journaled: the restarted MDS
			 * learns these only from the replay */
			ck_assert_int_eq(asok_call(mds_asok, "config set", "mds_journal_hold", "true", NULL), 0);
			long h = acked_total();
			wait_progress(h, 5, 5, child);
			sleep_s((double)(rand_r(&r) % 200) / 1000.0);
			holds++;
		}
		lfs_mds_stop(&fs, SIGKILL);
		sleep_s((double)(rand_r(&r) % 300) / 1000.0);
		ck_assert_msg(lfs_mds_start(&fs) == 0, "restart %d of loligo-mds failed", k);
		base = acked_total();
		fprintf(stderr, "test_fuse_crash: kill %d%s at %.1f s, %ld ops acknowledged\n", k,
			hold ? " (journal held)" : "", lt_now_s() - t0, base);
	}
	ck_assert_msg(wait_progress(base, MIN_PROGRESS, 60, child), "no progress after the last restart");
	atomic_store(&S->stop, 1);
	{
		double end = lt_now_s() + 60;
		pid_t w;
		while ((w = waitpid(child, &st, WNOHANG)) == 0 && lt_now_s() < end)
			sleep_s(0.05);
		if (w != child) {
			kill(child, SIGKILL);
			waitpid(child, &st, 0);
			lfs_dump_logs(&fs);
			ck_abort_msg("the workload's syscalls did not return within 60 s of the stop");
		}
	}
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "a syscall of the workload failed (its message is on stderr above)");
	replays = client_counter("mds_client", "replays") - before_replays;
	fprintf(stderr, "test_fuse_crash: %ld ops acknowledged by %d threads, %d kills (%d with the journal held), "
		"%ld requests replayed, %.1f s\n", acked_total(), nthreads, NKILLS, holds, replays, lt_now_s() - t0);
	/* with asynchronous directory operations: how many the client answered itself */
	if (client_counter("client", "async_creates") >= 0)
		fprintf(stderr, "test_fuse_crash: client answered %ld creates/mkdirs itself (%ld went synchronous)\n",
			client_counter("client", "async_creates"), client_counter("client", "async_sync"));
	if (client_counter("client", "async_setattrs") >= 0)
		fprintf(stderr, "test_fuse_crash: client answered %ld setattrs itself\n",
			client_counter("client", "async_setattrs"));
	/* and how many unlinks/rmdirs (asyncunlink.c): the checker below then
	 * proves each of those names is gone exactly once after the kills */
	if (client_counter("client", "async_unlinks") >= 0) {
		fprintf(stderr, "test_fuse_crash: client answered %ld unlinks and %ld rmdirs itself\n",
			client_counter("client", "async_unlinks"), client_counter("client", "async_rmdirs"));
		ck_assert_msg(client_counter("client", "async_unlinks") > 0,
			      "no unlink was answered by the client: the kills did not test asynchronous unlinks");
	}
	/* held journals leave UNSAFE requests: a run that replayed none did not test replay */
	ck_assert_msg(replays > 0, "no request was replayed: the kills did not hit UNSAFE operations");

	ck_assert_int_eq(load_models(models), 0);
	check_tree(&c, models, fs.mnt);
	ck_assert_msg(c.errors == 0, "the mount's tree differs from the acknowledged operations (%d differences):\n%s",
		      c.errors, c.msg);

	/* the same from a fresh mount, after one more kill -9 of the MDS */
	ck_assert_int_eq(lfs_umount(&fs), 0);
	lfs_mds_stop(&fs, SIGKILL);
	ck_assert_int_eq(lfs_mds_start(&fs), 0);
	ck_assert_int_eq(lfs_mount(&fs, NULL), 0);
	check_tree(&c, models, fs.mnt);
	ck_assert_msg(c.errors == 0, "a fresh mount's tree differs from the acknowledged operations (%d differences):\n%s",
		      c.errors, c.msg);
	munmap(S, sizeof(*S));
}
END_TEST


/* ---- failover: an active and a standby, the active killed -9 each round ----------- */

enum { NFAILOVERS = 6 };

/* the standbys are standby-replay daemons (LOLIGO_FAILOVER_STANDBY_REPLAY=1) */
static bool sreplay_mode;

/*
 * The new active's last takeover line of a standby-replay: how many journal
 * entries its cache held already (*@had) and how many it applied at the
 * takeover (*@now).  False: there is none (the takeover was cold).
 */
static bool sreplay_takeover(const char *name, long *had, long *now)
{
	char p[PATH_MAX + 32], line[4096];
	bool found = false;
	FILE *f;

	spr(p, sizeof(p), "%s/mds.%s.log", fs.dir, name);
	f = fopen(p, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		const char *q = strstr(line, "standby-replay had applied ");
		long a, b;

		if (q && sscanf(q, "standby-replay had applied %ld of them (up to entry %*d), %ld applied", &a, &b) == 2) {
			*had = a;
			*now = b;
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* the active's `fs status`: its map epoch, and how many live standbys it sees (-1: no answer) */
static int mds_map_status(const char *asok, long *epoch)
{
	struct json_object *rep = NULL, *mm, *sb, *v;
	int n = -1;

	if (asok_call(asok, "fs status", NULL, NULL, &rep) == 0 && json_object_object_get_ex(rep, "mdsmap", &mm) &&
	    json_object_object_get_ex(mm, "standbys", &sb)) {
		n = 0;
		for (size_t i = 0; i < json_object_array_length(sb); i++) {
			struct json_object *e = json_object_array_get_idx(sb, i), *st;
			if (json_object_object_get_ex(e, "state", &st) &&
			    !strcmp(json_object_get_string(st), sreplay_mode ? "standby-replay" : "standby"))
				n++;
		}
		if (epoch && json_object_object_get_ex(mm, "epoch", &v))
			*epoch = (long)json_object_get_int64(v);
	}
	if (rep)
		json_object_put(rep);
	return n;
}

/* until daemon @name serves (its port file) or @pid dies; false on either failure or after @secs */
static bool wait_active(const char *name, pid_t pid, double secs)
{
	double end = lt_now_s() + secs;

	while (lt_now_s() < end) {
		if (lfs_mds_daemon_port(&fs, name) > 0)
			return true;
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return false;
		sleep_s(0.005);
	}
	return false;
}

/* until the active (@asok) sees a live standby */
static bool wait_standby(const char *asok, double secs)
{
	double end = lt_now_s() + secs;

	while (lt_now_s() < end) {
		if (mds_map_status(asok, NULL) >= 1)
			return true;
		sleep_s(0.05);
	}
	return false;
}

static int env_int(const char *name, int dflt, int lo, int hi)
{
	const char *e = getenv(name);
	int v = e && *e ? atoi(e) : dflt;

	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * Issue 19: two loligo-mds daemons on one filesystem, the mount given both
 * addresses.  Each round kills the active with SIGKILL (two rounds in
 * three with its journal held first, so the new active learns those
 * operations only from the client's replay); the standby takes rank 0,
 * fences the old holder and serves; the client follows by itself; the
 * killed daemon comes back as the new standby.  The checker then proves
 * every acknowledged operation is there exactly once.  Printed: per round
 * the time from the kill to the new active serving and to the first
 * operation acknowledged after it, and the longest any syscall took.
 *
 * tools/bench/run-failover.sh runs it with LOLIGO_FAILOVERS (rounds, 6),
 * LOLIGO_FAILOVER_THREADS (4), LOLIGO_FAILOVER_HOLD=0 (no journal holds:
 * a held journal stalls syscalls on purpose), LOLIGO_FAILOVER_SIGNAL=STOP
 * (the active is stopped instead: the standby waits out the grace, and the
 * woken old holder must exit, deposed, with status 1) and
 * LOLIGO_FAILOVER_MDS_ARGS (options for both daemons, e.g. the grace);
 * LOLIGO_FAILOVER_STANDBY_REPLAY=1 makes the standby a standby-replay
 * (mds_standby_replay): each takeover must then have applied only what
 * the follower had not (its log line), far less than what it held.
 */
START_TEST(test_namespace_ops_survive_mds_failover)
{
	static struct model models[MAXTHREADS];
	const char *env = getenv("LOLIGO_CRASH_SEED"), *sigenv = getenv("LOLIGO_FAILOVER_SIGNAL");
	unsigned seed = env && *env ? (unsigned)strtoul(env, NULL, 0) : (unsigned)time(NULL) ^ (unsigned)getpid();
	unsigned r = seed;
	const char *names[2] = { "a", "b" };
	int ports[2], nfail = env_int("LOLIGO_FAILOVERS", 6, 1, 1000);
	bool stop_mode = sigenv && !strcmp(sigenv, "STOP"), holds_on = env_int("LOLIGO_FAILOVER_HOLD", 1, 0, 1);
	pid_t pids[2];
	char asok[2][PATH_MAX + 32], addrs[128], margs[512];
	struct check c = {0};
	long before_replays, replays, base, epoch0 = 0, epoch1 = 0;
	double t0 = lt_now_s(), worst_serve = 0, worst_ack = 0, sum_serve = 0;
	const char *extra[10] = { "--mds_beacon_interval=0.5", "--mds_beacon_grace=3", NULL };
	int act = 0, st, holds = 0, nkilled = 0;
	long sr_had = 0, sr_now = 0;
	pid_t child;

	nthreads = env_int("LOLIGO_FAILOVER_THREADS", 4, 1, MAXTHREADS);
	if (getenv("LOLIGO_FAILOVER_MDS_ARGS")) {
		int k = 0;
		char *save, *tok;

		snprintf(margs, sizeof(margs), "%s", getenv("LOLIGO_FAILOVER_MDS_ARGS"));
		for (tok = strtok_r(margs, " ", &save); tok && k < 7; tok = strtok_r(NULL, " ", &save))
			extra[k++] = tok;
		extra[k] = NULL;
	}
	sreplay_mode = env_int("LOLIGO_FAILOVER_STANDBY_REPLAY", 0, 0, 1);
	if (sreplay_mode) {
		int k = 0;

		while (extra[k])
			k++;
		extra[k++] = "--mds_standby_replay=true";
		extra[k] = NULL;
	}
	fprintf(stderr, "test_fuse_failover: seed %u (LOLIGO_CRASH_SEED=%u replays it), %d rounds of SIG%s, %d "
		"threads\n", seed, seed, nfail, stop_mode ? "STOP" : "KILL", nthreads);
	S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert(S != MAP_FAILED);
	memset(S, 0, sizeof(*S));
	for (int k = 0; k < 2; k++) {
		ports[k] = lfs_free_port();
		ck_assert_int_gt(ports[k], 0);
		spr(asok[k], sizeof(asok[k]), "%s/mds.%s.asok", fs.dir, names[k]);
	}
	pids[0] = lfs_mds_daemon_start(&fs, names[0], ports[0], extra);
	ck_assert_msg(pids[0] > 0 && wait_active(names[0], pids[0], 60), "the first MDS did not take rank 0");
	pids[1] = lfs_mds_daemon_start(&fs, names[1], ports[1], extra);
	ck_assert_msg(pids[1] > 0 && wait_standby(asok[0], 60), "the second MDS did not register as a standby");
	ck_assert_msg(lfs_mds_daemon_port(&fs, names[1]) == 0, "the standby serves too: two active MDS daemons");
	spr(addrs, sizeof(addrs), "--client_mds_addr=127.0.0.1:%d,127.0.0.1:%d", ports[0], ports[1]);
	fs.fuse_args[0] = addrs;
	fs.mds_port = ports[0];
	if (lfs_mount(&fs, NULL) != 0) {
		lfs_dump_logs(&fs);
		ck_abort_msg("cannot mount loligo-fuse");
	}
	for (int k = 0; k < NSHARED; k++) {
		char p[PATH_MAX];
		ck_assert_int_eq(mkdir(lfs_path(&fs, shared_name(k), p, sizeof(p)), 0755), 0);
	}
	before_replays = client_counter("mds_client", "replays");
	mds_map_status(asok[act], &epoch0);

	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0)
		workload(seed);

	base = acked_total();
	for (int k = 0; k < nfail; k++) {
		bool hold = holds_on && !stop_mode && k % 3 != 0;
		double tk, ts, ta;
		int sb = 1 - act;

		ck_assert_msg(wait_progress(base, MIN_PROGRESS, 60, child),
			      "before failover %d: no progress (%ld acknowledged, failed=%d)", k, acked_total(),
			      atomic_load(&S->failed));
		sleep_s((double)(rand_r(&r) % 300) / 1000.0);
		if (hold) {
			ck_assert_int_eq(asok_call(asok[act], "config set", "mds_journal_hold", "true", NULL), 0);
			wait_progress(acked_total(), 5, 5, child);
			holds++;
		}
		tk = lt_now_s();
		kill(pids[act], stop_mode ? SIGSTOP : SIGKILL);
		if (!stop_mode)
			waitpid(pids[act], NULL, 0);
		base = acked_total();
		ck_assert_msg(wait_active(names[sb], pids[sb], 60), "failover %d: the standby %s did not take rank 0",
			      k, names[sb]);
		ts = lt_now_s() - tk;
		ck_assert_msg(wait_progress(base, 1, 60, child), "failover %d: nothing acknowledged after it", k);
		ta = lt_now_s() - tk;
		if (sreplay_mode) {
			long had = 0, now = 0;

			ck_assert_msg(sreplay_takeover(names[sb], &had, &now),
				      "failover %d: mds.%s took over cold: no standby-replay takeover in its log", k,
				      names[sb]);
			fprintf(stderr, "test_fuse_failover: failover %d: the standby-replay held %ld journal entries, "
				"applied %ld at the takeover\n", k, had, now);
			sr_had += had;
			sr_now += now;
		}
		worst_serve = ts > worst_serve ? ts : worst_serve;
		worst_ack = ta > worst_ack ? ta : worst_ack;
		sum_serve += ts;
		fprintf(stderr, "test_fuse_failover: failover %d%s: mds.%s serves %.3f s after the %s of mds.%s, "
			"first op acknowledged after %.3f s\n", k, hold ? " (journal held)" : "", names[sb], ts,
			stop_mode ? "SIGSTOP" : "kill -9", names[act], ta);
		if (stop_mode) {
			/* the old holder wakes up deposed: it must see it and exit */
			double end = lt_now_s() + 60;
			pid_t w = 0;

			kill(pids[act], SIGCONT);
			while ((w = waitpid(pids[act], &st, WNOHANG)) == 0 && lt_now_s() < end)
				sleep_s(0.01);
			/* exit 1, deposed; or SIGKILL: stopped inside the local store's write lock, the
			 * new holder had to kill it (mdsmap.c, stonith) */
			ck_assert_msg(w == pids[act] && ((WIFEXITED(st) && WEXITSTATUS(st) == 1) ||
							 (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)),
				      "failover %d: the deposed mds.%s did not exit after SIGCONT", k, names[act]);
			if (WIFSIGNALED(st))
				nkilled++;
		}
		/* the old holder comes back as the standby */
		pids[act] = lfs_mds_daemon_start(&fs, names[act], ports[act], extra);
		ck_assert_int_gt(pids[act], 0);
		act = sb;
		ck_assert_msg(wait_standby(asok[act], 60), "failover %d: the restarted daemon did not become a standby",
			      k);
		base = acked_total();
	}
	ck_assert_msg(wait_progress(base, MIN_PROGRESS, 60, child), "no progress after the last failover");
	atomic_store(&S->stop, 1);
	ck_assert_msg(waitpid(child, &st, 0) == child && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "a syscall of the workload failed (its message is on stderr above)");
	replays = client_counter("mds_client", "replays") - before_replays;
	mds_map_status(asok[act], &epoch1);
	fprintf(stderr, "test_fuse_failover: %ld ops acknowledged by %d threads, %d failovers (%d with the journal "
		"held), %ld requests replayed, map epoch %ld -> %ld, to serve: mean %.3f s, longest %.3f s; to the "
		"first ack: longest %.3f s; longest syscall %.3f s; %d stopped holders killed by their successor, %.1f s\n",
		acked_total(), nthreads, nfail, holds, replays, epoch0, epoch1, sum_serve / nfail, worst_serve, worst_ack,
		(double)atomic_load(&S->max_op_ns) / 1e9, nkilled, lt_now_s() - t0);
	if (sreplay_mode)
		ck_assert_msg(sr_had > 0 && sr_now * 2 < sr_had, "the standby-replays applied %ld entries at their "
			      "takeovers, against %ld they held already: they did not keep up", sr_now, sr_had);
	if (holds)
		ck_assert_msg(replays > 0, "no request was replayed: the failovers did not hit UNSAFE operations");
	ck_assert_msg(epoch1 >= epoch0 + nfail, "the map epoch grew by %ld over %d failovers", epoch1 - epoch0, nfail);
	ck_assert_int_eq(load_models(models), 0);
	check_tree(&c, models, fs.mnt);
	ck_assert_msg(c.errors == 0, "the mount's tree differs from the acknowledged operations (%d differences):\n%s",
		      c.errors, c.msg);
	fprintf(stderr, "test_fuse_failover: checker: every acknowledged operation is there exactly once\n");
	ck_assert_int_eq(lfs_umount(&fs), 0);
	for (int k = 0; k < 2; k++) {
		kill(pids[k], SIGTERM);
		waitpid(pids[k], NULL, 0);
	}
	munmap(S, sizeof(*S));
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

int main(void)
{
	Suite *s = suite_create("fuse_crash");
	TCase *tc = tcase_create("namespace_kill9");
	SRunner *sr;
	int failed;

	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
		fprintf(stderr, "test_fuse_crash: needs root and /dev/fuse; skipped\n");
		return 77;
	}
	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_namespace_ops_survive_mds_kill9);
	suite_add_tcase(s, tc);
	tc = tcase_create("failover");
	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_namespace_ops_survive_mds_failover);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
