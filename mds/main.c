/*
 * main.c - loligo-mds: start-up, signals and shutdown.
 *
 *   loligo-mds [-c loligo.conf] [--key=value ...] [--mkfs] [--port-file PATH]
 *   loligo-mds [-c ...] --journal-inspect [--summary]
 *   loligo-mds [-c ...] journal inspect | export FILE | import FILE | reset [--yes-i-really-mean-it]
 *
 * --mkfs creates the pools and an empty filesystem (root directory, empty
 * journal) in the configured store and exits, as ceph-mds/ceph-osd --mkfs
 * do; it refuses a store that already holds a filesystem.  Without --mkfs
 * the MDS opens the existing filesystem, replays its journal, listens on
 * mds_addr:mds_port (port 0 = ephemeral; the bound port is logged and, with
 * --port-file, written to PATH) and serves until SIGTERM/SIGINT, on which it
 * stops taking connections and requests, writes what its journal holds and
 * sends those SAFE replies while the connections are still open (bounded by
 * mds_shutdown_timeout: a client would otherwise wait for a SAFE that never
 * comes, and replay), then closes them, flushes the journal into the
 * directory objects and frees everything.  SIGHUP never stops it: it
 * reopens the log file (for logrotate), as `log reopen` on the admin socket
 * does.
 *
 * The journal commands run offline (the MDS stopped) on the same config and
 * are described in journal_tool.c.  A damaged journal stops the MDS at start
 * with a message that names the segment object and offset and points at them.
 *
 * Errors the user can fix (missing store, unreadable config, port in use,
 * a damaged journal) are one line on stderr and exit status 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/admin_sock.h"
#include "common/config.h"
#include "common/log.h"
#include "common/perf.h"
#include "common/prometheus.h"
#include "common/rcu.h"
#include "common/time.h"
#include "mds/fsset.h"
#include "mds/journal_int.h"
#include "mds/mds.h"
#include "mds/admin.h"
#include "mds/auth.h"
#include "mds/blocklist.h"
#include "mds/flock.h"
#include "mds/instance.h"
#include "mds/journal.h"
#include "mds/layers.h"
#include "mds/locker.h"
#include "mds/mdcache.h"
#include "mds/mdsmap.h"
#include "mds/net.h"
#include "mds/purge.h"
#include "mds/server.h"
#include "mds/session.h"
#include "mds/standby_replay.h"


static void usage(FILE *f)
{
	fprintf(f,
		"usage: loligo-mds [-c loligo.conf] [--key=value ...] [--mkfs] [--port-file PATH]\n"
		"\n"
		"The loligo metadata server.  Reads [global] and [mds] of the config file.\n"
		"  -c, --conf FILE     config file\n"
		"  --mkfs              create the pools and an empty filesystem in the store, then exit\n"
		"  --port-file PATH    write the TCP port the MDS listens on to PATH once it serves (holds rank 0)\n"
		"  -i, --id NAME       this daemon's name (mds_name; its [mds.NAME] section of the config wins over [mds])\n"
		"  --unit CLUSTER[:NAME]  as systemd's loligo-mds@CLUSTER[:NAME]: -c /etc/loligo/CLUSTER.conf --id NAME\n"
		"  --journal-inspect   check the journal offline: header, segments, entries, the first bad one\n"
		"                      (--summary: segments only); exit status 1 if it is damaged\n"
		"  journal export FILE copy the journal (header and every segment, damaged or not) to FILE\n"
		"  journal import FILE replace the journal by FILE (--yes-i-really-mean-it)\n"
		"  journal reset       apply every good entry before the first damage to the objects and start\n"
		"                      an empty journal: later changes are lost (--yes-i-really-mean-it)\n"
		"                      (the journal commands need the MDS stopped)\n"
		"  -h, --help          this help\n"
		"  -V, --version       version\n"
		"\n"
		"Signals: SIGTERM/SIGINT stop the MDS cleanly; SIGHUP reopens the log file.\n"
		"\n"
		"MDS options (any option also works as --name=value):\n");
	cfg_print_help(f, "mds_");
	cfg_print_help(f, "auth_");
	fprintf(f, "\nStore options:\n");
	cfg_print_help(f, "store_");
	fprintf(f, "\nRADOS options (store_backend = rados):\n");
	cfg_print_help(f, "rados_");
	fprintf(f, "\nGeneral options:\n");
	cfg_print_help(f, "fs_name");
	cfg_print_help(f, "admin_socket");
	cfg_print_help(f, "prometheus_");
	cfg_print_help(f, "log_");
	cfg_print_help(f, "debug_");
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* a reason to exit: on stderr, and in the log file too where there is one
 * (a daemon started by systemd or a test shows its log first) */
static int fail(const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "loligo-mds: %s\n", msg);
	if (log_to_file())
		derr(MDS, "exiting: %s", msg);
	return 1;
}

/*
 * The journal commands and --mkfs need every MDS of a local store stopped:
 * a journal reset under a serving MDS would corrupt the filesystem.  Each
 * MDS daemon (active or standby) holds a shared flock on <store>/mds.lock,
 * the offline commands an exclusive one.  Two daemons serving at once are
 * prevented by the MDS map and fencing (mdsmap.c), not by this lock.  (On
 * RADOS nothing enforces it: stop the MDS daemons before the journal
 * commands.)
 */
static int lock_instance(const char *dir, bool exclusive, int *out)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/mds.lock", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) < 0) {
		int e = errno == EWOULDBLOCK ? -EBUSY : -errno;

		close(fd);
		return e;
	}
	*out = fd;
	return 0;
}

static int write_port_file(const char *path, unsigned port)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%u\n", port);
	if (fclose(f)) {
		unlink(tmp);
		return -EIO;
	}
	if (rename(tmp, path)) {
		int e = -errno;

		unlink(tmp);
		return e;
	}
	return 0;
}

/*
 * mds_cache_memory_limit bounds the process, not only the cache: what is
 * bounded outside the cache is charged against it at its bound (not at
 * its use of the moment, which a burst can raise at once), and the cache
 * trims to what is left (mdcache_budget, which also leaves
 * mds_memory_reserve of the limit to what has no bound of its own).
 */
static void charge_outside(void)
{
	mdcache_charge_outside(journal_queue_bound() + journal_seg_bound() + log_recent_bytes() +
			       (uint64_t)BUFPOOL_SLOTS * MDS_BIGBUF_LIMIT);
}

/*
 * malloc's free memory is in the RSS the limit bounds.  glibc gives each
 * thread that allocates under contention an arena of its own (up to 8 per
 * core), and every arena keeps the free memory of its peak: the reader
 * threads that made inodes, the journal writer's batches.  Fewer arenas
 * (mds_malloc_arena_max), and blocks of 256 KiB and more (journal
 * batches, store buffers) mapped on their own and unmapped when freed:
 * with the threshold set, glibc no longer raises it to 32 MiB after a
 * large free, which kept the next batches in the arenas for good.
 * Before any thread starts.
 */
static void malloc_setup(void)
{
	unsigned arenas = (unsigned)cfg_uint(CFG_mds_malloc_arena_max);

	if (arenas)
		mallopt(M_ARENA_MAX, (int)arenas);
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
	mallopt(M_TRIM_THRESHOLD, 1 << 20);
}

static void *ticker_main(void *arg)
{
	struct mds *m = arg;
	uint64_t next_tick = 0;

	for (;;) {
		uint64_t now = now_mono_ns(), wake, rd, freed;
		struct timespec ts;
		bool expire;

		if (!next_tick) {
			double iv = cfg_double(CFG_mds_tick_interval);

			next_tick = now + (uint64_t)((iv > 0.01 ? iv : 0.01) * 1e9);
		}
		/* the end of a reconnect phase is not left to the next tick:
		 * requests wait for it (parked, park.c) */
		wake = next_tick;
		rd = session_reconnect_deadline(m);
		if (rd && rd < wake)
			wake = rd;
		ts = ns_to_timespec(wake);
		pthread_mutex_lock(&m->tick_lock);
		if (!m->tick_stop && !m->tick_expire)
			pthread_cond_timedwait(&m->tick_cond, &m->tick_lock, &ts);
		if (m->tick_stop) {
			pthread_mutex_unlock(&m->tick_lock);
			break;
		}
		expire = m->tick_expire;
		m->tick_expire = false;
		pthread_mutex_unlock(&m->tick_lock);
		/* an event loop holds requests until the sealed segments expire
		 * (journal_over): at once, not at the next tick */
		if (expire)
			journal_expire_sealed(m);
		if (now_mono_ns() < next_tick) {
			session_reconnect_check(m);
			continue;
		}
		next_tick = 0;
		session_tick(m);
		locker_tick(m);
		blocklist_tick(m);
		journal_tick(m);
		server_space_refresh(m);
		charge_outside();
		pthread_mutex_lock(&m->lock);
		freed = mdcache_trim(m, journal_clean_below(m));
		pthread_mutex_unlock(&m->lock);
		/* what an eviction freed lies between what stays, in the arenas
		 * of the reader threads that made it: hand the whole pages of it
		 * back (glibc madvises them away), or the RSS keeps the peak */
		if (freed >= 8u << 20)
			malloc_trim(0);
	}
	return NULL;
}

static uint64_t g_rbuf_bytes(void *arg)
{
	return atomic_load_explicit(&((struct mds *)arg)->net_rbuf_bytes, memory_order_relaxed);
}

static void perf_register_all(struct mds *m)
{
	char name[64];
	uint32_t op;

	for (op = 1; op < MDSP_OP_MAX; op++) {
		snprintf(name, sizeof(name), "op_%s", mdsp_op_name(op));
		perf_register_counter("mds", name, &m->op_count[op]);
		snprintf(name, sizeof(name), "op_%s_lat", mdsp_op_name(op));
		perf_register_hist("mds", name, &m->op_lat[op]);
	}
	perf_register_hist("mds", "safe_reply_lat", &m->safe_lat);
	perf_register_counter("mds", "requests", &m->req_total);
	perf_register_counter("mds", "requests_replayed", &m->req_replayed);
	perf_register_counter("mds", "bad_peers", &m->bad_peers);
	perf_register_counter("mds", "bigbuf_hits", &m->bigbufs.hits);
	perf_register_counter("mds", "bigbuf_misses", &m->bigbufs.misses);
	perf_register_counter("mds", "auth_ok", &m->auth_ok);
	perf_register_counter("mds", "auth_failed", &m->auth_failed);
	perf_register_counter("mds", "auth_gmac", &m->auth_gmac);
	perf_register_counter("mds", "sessions_opened", &m->sessions_opened);
	perf_register_counter("mds", "sessions_evicted", &m->sessions_evicted);
	perf_register_counter("mds", "sessions_reclaimed", &m->sessions_reclaimed);
	perf_register_counter("mds", "sessions_stale", &m->sessions_stale);
	perf_register_counter("mds", "deleg_stale_freed", &m->deleg_stale_freed);
	perf_register_fn("mds_net", "rbuf_bytes", g_rbuf_bytes, m);
	mdcache_register_perf();
}

static char *pool_name(enum cfg_opt_id opt, const char *fs, const char *suffix)
{
	char *v = cfg_strdup(opt), *n;

	if (v && *v)
		return v;
	free(v);
	if (asprintf(&n, "%s_%s", fs, suffix) < 0)
		return NULL;
	return n;
}

static int open_pool(struct store *st, const char *name, bool create, struct store_pool **out)
{
	int r;

	if (create) {
		r = store_pool_create(st, name);
		if (r && r != -EEXIST)
			return r;
	}
	return store_pool_open(st, name, NULL, out);
}

/*
 * The data pool.  On the local backend it is in the data store that every
 * client process opens as well (store_local_data_path): the MDS opens it
 * too, so its purge queue removes the objects of deleted files there, as
 * it does on RADOS.  Made here if missing (older filesystems got it from
 * their first client).
 */
static int open_data(struct mds *m, bool local, bool mkfs)
{
	struct store_config dc;
	int r;

	if (!local) {
		r = open_pool(m->st, m->data_pool_name, mkfs, &m->data);
		if (r)
			fail("cannot open pool %s: %s", m->data_pool_name, strerror(-r));
		return r;
	}
	store_config_data_from_cfg(&dc);
	r = store_open(&dc, &m->data_st);
	if (r == -EUCLEAN) {
		fail("%s", store_open_error());
		return r;
	}
	if (r) {
		fail("cannot open the data store at %s: %s", dc.local_path,
		     *store_open_error() ? store_open_error() : strerror(-r));
		return r;
	}
	r = open_pool(m->data_st, m->data_pool_name, true, &m->data);
	if (r)
		fail("cannot open the data pool %s in %s: %s", m->data_pool_name, dc.local_path, strerror(-r));
	return r;
}

/*
 * Before the connections close, what was answered UNSAFE gets its SAFE
 * reply: no new connections or requests, the journal writes what it holds
 * at once, the replies leave the sockets.  Bounded by mds_shutdown_timeout;
 * what is not durable by then is replayed by its clients to the next MDS,
 * as after a crash.
 */
static void drain(struct mds *m)
{
	double tmo = cfg_double(CFG_mds_shutdown_timeout);
	uint64_t t0 = now_mono_ns(), deadline = t0 + (uint64_t)(tmo * 1e9);
	unsigned replies, conns;

	dinfo(MDS, "draining: no new requests; writing the journal and sending its SAFE replies (at most %g s, "
	      "mds_shutdown_timeout)", tmo);
	net_quiesce(m);
	replies = journal_drain(m, deadline);
	conns = net_flush(m, deadline);
	if (replies || conns)
		derr(MDS, "shutdown: after %.1f s (mds_shutdown_timeout) %u SAFE replies are not sent (%s) and %u "
		     "connections still have replies in flight: those clients replay what was answered UNSAFE to "
		     "the next MDS", (double)(now_mono_ns() - t0) / 1e9, replies,
		     journal_read_only(m) ? strerror(-journal_read_only(m)) : "the journal is still writing", conns);
	else
		dinfo(MDS, "drained in %.3f s: every request answered is SAFE", (double)(now_mono_ns() - t0) / 1e9);
}

/* What the command line asks for. */
struct args {
	const char *port_file, *jcmd, *jfile;
	bool mkfs, confirmed, summary;
};

/*
 * Parse the command line (config options first, by cfg_parse_args).
 * Return: -1 to go on, else the exit status (--help, --version, a bad
 * argument).
 */
static int parse_args(int argc, char **argv, struct args *a)
{
	char err[512];
	int i;

	memset(a, 0, sizeof(*a));
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
			printf("loligo-mds (loligo) %s\n", LOLIGO_VERSION);
			return 0;
		}
	}
	if (cfg_parse_args(&argc, argv, err, sizeof(err)))
		return fail("%s", err);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mkfs")) {
			a->mkfs = true;
		} else if (!strcmp(argv[i], "--port-file") && i + 1 < argc) {
			a->port_file = argv[++i];
		} else if (!strncmp(argv[i], "--port-file=", 12)) {
			a->port_file = argv[i] + 12;
		} else if (!strcmp(argv[i], "--journal-inspect")) {
			a->jcmd = "inspect";
		} else if (!strcmp(argv[i], "--summary")) {
			a->summary = true;
		} else if (!strcmp(argv[i], "--yes-i-really-mean-it")) {
			a->confirmed = true;
		} else if (!strcmp(argv[i], "journal") && !a->jcmd) {
			if (i + 1 >= argc)
				return fail("journal: which command? inspect, export FILE, import FILE or reset (try --help)");
			a->jcmd = argv[++i];
			if (!strcmp(a->jcmd, "export") || !strcmp(a->jcmd, "import")) {
				if (i + 1 >= argc)
					return fail("journal %s needs a FILE", a->jcmd);
				a->jfile = argv[++i];
			} else if (strcmp(a->jcmd, "inspect") && strcmp(a->jcmd, "reset")) {
				return fail("unknown journal command '%s' (inspect, export FILE, import FILE, reset)",
					    a->jcmd);
			}
		} else if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--foreground") || !strcmp(argv[i], "-d")) {
			/* always in the foreground */
		} else {
			return fail("unknown argument '%s' (try --help)", argv[i]);
		}
	}
	return -1;
}


/* The settings a new filesystem takes from the config.  Return: 0 or the exit status. */
static int mds_configure(struct mds *m)
{
	m->object_size = (uint32_t)cfg_uint(CFG_mds_default_object_size);
	if (!m->object_size)
		m->object_size = 4u << 20;
	/* a new filesystem's limit; an existing one's comes from its table */
	m->max_file_size = cfg_uint(CFG_mds_max_file_size);
	if (m->max_file_size == 0 || m->max_file_size > (uint64_t)INT64_MAX)
		return fail("mds_max_file_size must be between 1 and 2^63-1 bytes (e.g. 1T, the default)");
	m->fs_name = cfg_strdup(CFG_fs_name);
	m->meta_pool_name = pool_name(CFG_store_metadata_pool, m->fs_name, "metadata");
	m->data_pool_name = pool_name(CFG_store_data_pool, m->fs_name, "data");
	return 0;
}

/* Signals are handled by sigwait() in the main thread only (serve()). */
static void block_signals(sigset_t *sigs)
{
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(sigs);
	sigaddset(sigs, SIGTERM);
	sigaddset(sigs, SIGINT);
	sigaddset(sigs, SIGHUP);	/* reopens the log, never stops us */
	pthread_sigmask(SIG_BLOCK, sigs, NULL);
	log_install_crash_dump();
}

/*
 * Open the object store and the pools (for the local backend: check the
 * directory and take the instance lock, *@lockfd, first).  Return: 0 or
 * the exit status; m->st is set once the store is open (the caller closes
 * what was opened).
 */
static int open_store(struct mds *m, const struct args *a, struct store_config *sc, int *lockfd)
{
	int r;

	store_config_from_cfg(sc);
	sc->create = a->mkfs;
	sc->local_full_try = true;   /* the journal entries that free space must pass when clients cannot write */
	if (!strcmp(sc->backend, "local")) {
		struct stat st;

		if (!sc->local_path || !*sc->local_path)
			return fail("store_local_path is not set (in [global] of the config or --store_local_path=DIR)");
		m->store_path = strdup(sc->local_path);
		if (!a->mkfs && stat(sc->local_path, &st))
			return fail("store directory %s: %s (create a filesystem with loligo-mds --mkfs)", sc->local_path,
				    strerror(errno));
		if (!a->mkfs && (!S_ISDIR(st.st_mode) || access(sc->local_path, R_OK | W_OK | X_OK)))
			return fail("store directory %s is not a readable and writable directory", sc->local_path);
	}
	if (!a->mkfs && !strcmp(sc->backend, "local")) {
		r = lock_instance(sc->local_path, a->jcmd != NULL, lockfd);
		if (r)
			return fail("%s: %s is using this store%s", sc->local_path,
				    a->jcmd ? "a loligo-mds daemon" : "a journal command",
				    a->jcmd ? "; the journal commands need every MDS daemon stopped" : "");
	}
	r = store_open(sc, &m->st);
	if (r) {
		/* a damaged store (-EUCLEAN) says why and what to do; never advise --mkfs over it */
		const char *why = *store_open_error() ? store_open_error() : strerror(-r);
		bool at = sc->local_path && *sc->local_path;

		if (r == -EUCLEAN)
			return fail("%s", why);
		return fail("cannot open the %s object store%s%s: %s%s", sc->backend, at ? " at " : "",
			    at ? sc->local_path : "", why,
			    r == -ENOENT && !a->mkfs ? " (create a filesystem with loligo-mds --mkfs)" : "");
	}
	r = open_pool(m->st, m->meta_pool_name, a->mkfs, &m->meta);
	if (r) {
		if (r == -ENOENT)
			return fail("no loligo filesystem in the store (pool %s missing): run loligo-mds --mkfs first",
				    m->meta_pool_name);
		return fail("cannot open pool %s: %s", m->meta_pool_name, strerror(-r));
	}
	r = open_data(m, !strcmp(sc->backend, "local"), a->mkfs);
	if (r)
		return 1;
	return 0;
}

/* --mkfs: an empty filesystem in the pools just opened.  Return: the exit status. */
static int mkfs(struct mds *m)
{
	char err[MDS_ERR_LEN];

	if (mds_mkfs(m, err, sizeof(err)))
		return fail("%s", err);
	printf("loligo-mds: created filesystem '%s' (pools %s, %s)\n", m->fs_name, m->meta_pool_name,
	       m->data_pool_name);
	return 0;
}

/*
 * The keyring, and the socket bound to @addr (not listening yet: a standby
 * refuses connections until it holds the rank).  Return: 0 or the exit status.
 */
static int auth_and_bind(struct mds *m, char *addr, size_t addrlen)
{
	char aerr[1024] = "", ep[300];
	int r;

	r = auth_load(m, aerr, sizeof(aerr));
	if (r)
		return fail("%s", *aerr ? aerr : strerror(-r));
	cfg_str(CFG_mds_addr, addr, addrlen);
	r = net_bind(m, addr, (int)cfg_int(CFG_mds_port));
	if (r)
		return fail("cannot listen on %s:%" PRId64 ": %s", addr, cfg_int(CFG_mds_port), strerror(-r));
	r = mdsmap_init(m, aerr, sizeof(aerr));
	if (r)
		return fail("%s", aerr);
	snprintf(ep, sizeof(ep), "%s:%u", addr, m->port);
	mdsmap_set_addr(m, ep);
	return 0;
}

/*
 * Wait as a standby until this daemon holds rank 0 and has fenced the old
 * holder (mdsmap.c), then listen.  Return: 0 (active), -1 (a signal
 * stopped the wait: exit 0), -2 (start again: sreplay_restart_wanted()),
 * or the exit status.
 */
static int become_active(struct mds *m, sigset_t *sigs)
{
	char err[MDS_ERR_LEN] = "";
	int r, sig = 0;

	r = mdsmap_join(m, sigs, &sig, err, sizeof(err));
	if (r == 1) {
		dinfo(MDS, "signal %d while standby: stopping", sig);
		return -1;
	}
	if (r == 2)
		return -2;      /* the standby-replay follower asks for a restart */
	if (r)
		return fail("%s", *err ? err : strerror(-r));
	/* from here on, renew the hold: a replay longer than the grace must not look like a death */
	r = mdsmap_start(m);
	if (r)
		return fail("cannot start the beacon thread: %s", strerror(-r));
	r = net_listen_now(m);
	if (r)
		return fail("cannot listen on port %u: %s", m->port, strerror(-r));
	return 0;
}

/* The filesystem's tables into memory, before the journal replays.  Return: 0 or the exit status. */
static int load_tables(struct mds *m)
{
	char err[MDS_ERR_LEN];

	return mds_load(m, err, sizeof(err)) ? fail("%s", err) : 0;
}

/*
 * mds_standby_replay: read where the journal starts, load the tables
 * without writing, and follow the journal (standby_replay.c).  A journal
 * it cannot follow leaves a cold standby.  *@warm: the tables are loaded
 * (also on failure: the caller unwinds them).  Return: 0 or the exit status.
 */
static int start_follower(struct mds *m, bool *warm)
{
	char err[MDS_ERR_LEN] = "";
	int r;

	r = sreplay_begin(m, err, sizeof(err));
	if (r) {
		derr(MDS, "standby-replay: %s: this daemon waits as a cold standby", err);
		return 0;
	}
	*warm = true;
	if (mds_load_readonly(m, err, sizeof(err)))
		return fail("%s", err);
	r = sreplay_start(m);
	if (r)
		return fail("cannot start the standby-replay thread: %s", strerror(-r));
	return 0;
}

/*
 * Replay the journal (a standby-replay: only what follows @applied), open
 * the reconnect phase and start the journal writer.  Return: 0, -1 (the
 * standby-replay's cache cannot be used: start again), or the exit status.
 */
static int replay_and_start_journal(struct mds *m, uint64_t applied)
{
	char err[MDS_ERR_LEN];
	int r;

	r = mds_replay_from(m, applied, err, sizeof(err));
	if (r == -ESTALE && applied) {
		derr(MDS, "standby-replay: %s: leaving rank 0 vacant and starting again", err);
		return -1;
	}
	if (r)
		return fail("%s", err);
	/* `fs set` values kept with the filesystem win over the config file */
	if (fsset_apply_loaded(m, err, sizeof(err)))
		return fail("%s", err);
	session_reconnect_phase_start(m);
	server_space_refresh(m);
	perf_register_all(m);
	purge_register_perf(m);
	locker_register_perf(m);
	flock_register_perf(m);
	blocklist_register_perf(m);
	r = journal_start(m);
	if (r)
		return fail("cannot start the journal: %s", strerror(-r));
	return 0;
}

/*
 * The admin socket (admin_socket, expanded).  A holder this daemon just
 * deposed (a new instance of the same name) may still have it for up to
 * a beacon interval before it sees that and exits: wait for it, bounded.
 * Return: 0 or the exit status.
 */
static int start_admin(struct mds *m)
{
	char raw[4096], asok[4096];
	uint64_t until = now_mono_ns() + (uint64_t)(cfg_double(CFG_mds_beacon_grace) * 2e9) + 1000000000ull;
	int r;

	cfg_str(CFG_admin_socket, raw, sizeof(raw));
	cfg_expand(raw, asok, sizeof(asok));
	while ((r = admin_start(m, asok)) == -EADDRINUSE && now_mono_ns() < until) {
		struct timespec ts = { 0, 50 * 1000000L };

		nanosleep(&ts, NULL);
	}
	if (r)
		return fail("admin socket %s: %s", asok, strerror(-r));
	return 0;
}

/* The Prometheus endpoint (mds_prometheus_port; 0: none).  Return: 0 or the exit status. */
static int start_prometheus(struct prom **prom)
{
	char paddr[256], perr[512];
	int r;

	cfg_str(CFG_prometheus_addr, paddr, sizeof(paddr));
	r = prom_start(paddr, (int)cfg_int(CFG_mds_prometheus_port), "mds.0", prom, perr, sizeof(perr));
	if (r)
		return fail("the Prometheus endpoint (mds_prometheus_port, prometheus_addr): %s", perr);
	return 0;
}

/* Wait for SIGTERM or SIGINT (SIGHUP reopens the log); the signal that stops us. */
static int serve(sigset_t *sigs)
{
	int sig;

	for (;;) {
		if (sigwait(sigs, &sig))
			continue;
		if (sig == SIGTERM || sig == SIGINT)
			return sig;
		if (sig == SIGHUP) {
			dinfo(MDS, "SIGHUP: reopening the log file");
			log_reopen();
		}
	}
}

static void stop_ticker(struct mds *m)
{
	pthread_mutex_lock(&m->tick_lock);
	m->tick_stop = true;
	pthread_cond_signal(&m->tick_cond);
	pthread_mutex_unlock(&m->tick_lock);
	pthread_join(m->ticker, NULL);
}




/* a name for a config file or a daemon: letters, digits, '_', '-' */
static bool plain_name(const char *s, size_t n)
{
	if (!n || n > 48)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

/*
 * Which daemon this is, before the config is read: `--id NAME` (-i, as
 * ceph-mds) is mds_name NAME and reads the config's [mds.NAME] section
 * over [mds]; `--unit CLUSTER[:NAME]` (the systemd units: loligo-mds@%i)
 * is also `-c $LOLIGO_CONF_DIR/CLUSTER.conf` (/etc/loligo).  Both are
 * rewritten in @argv to the options they mean.  Return: 0, or the exit
 * status for a bad one.
 */
static int daemon_args(int *argc, char ***argv, char *section, size_t len)
{
	static char conf[4096], name_opt[80], *nargv[256];
	const char *unit = NULL, *id = NULL, *dir = getenv("LOLIGO_CONF_DIR");
	int n = 0;

	snprintf(section, len, "mds");
	for (int i = 1; i < *argc; i++) {
		const char *a = (*argv)[i];

		if ((!strcmp(a, "--unit") || !strcmp(a, "-i") || !strcmp(a, "--id")) && i + 1 < *argc) {
			if (!strcmp(a, "--unit"))
				unit = (*argv)[++i];
			else
				id = (*argv)[++i];
		} else if (!strncmp(a, "--unit=", 7)) {
			unit = a + 7;
		} else if (!strncmp(a, "--id=", 5)) {
			id = a + 5;
		}
	}
	if (!unit && !id)
		return 0;
	if (unit) {
		const char *colon = strchr(unit, ':');
		size_t cl = colon ? (size_t)(colon - unit) : strlen(unit);

		if (!plain_name(unit, cl) || (colon && !plain_name(colon + 1, strlen(colon + 1))))
			return fail("--unit '%s': expected CLUSTER or CLUSTER:NAME (letters, digits, '_', '-'), as in "
				    "loligo-mds@loligo or loligo-mds@loligo:b", unit);
		snprintf(conf, sizeof(conf), "%s/%.*s.conf", dir && *dir ? dir : "/etc/loligo", (int)cl, unit);
		if (colon)
			id = colon + 1;
	}
	if (id && !plain_name(id, strlen(id)))
		return fail("--id '%s': a daemon name is 1 to 48 letters, digits, '_' or '-'", id);
	nargv[n++] = (*argv)[0];
	if (unit) {
		nargv[n++] = "-c";
		nargv[n++] = conf;
	}
	if (id) {
		snprintf(name_opt, sizeof(name_opt), "--mds_name=%s", id);
		nargv[n++] = name_opt;
		snprintf(section, len, "mds,mds.%s", id);
	}
	for (int i = 1; i < *argc && n < 255; i++) {
		const char *a = (*argv)[i];

		if (!strcmp(a, "--unit") || !strcmp(a, "-i") || !strcmp(a, "--id")) {
			i++;
			continue;
		}
		if (!strncmp(a, "--unit=", 7) || !strncmp(a, "--id=", 5))
			continue;
		nargv[n++] = (*argv)[i];
	}
	nargv[n] = NULL;
	*argc = n;
	*argv = nargv;
	return 0;
}

/*
 * A standby-replay that cannot go on with its cache (the journal was
 * trimmed past it, or it cannot read it) starts again as the same
 * program with the same arguments, everything closed (@cold: as a cold
 * standby).  Return: the exit status if exec fails.
 */
static int restart_self(int argc, char **argv, bool cold)
{
	char **nargv = calloc((size_t)argc + 2, sizeof(*nargv));
	int i;

	if (!nargv)
		return fail("out of memory");
	for (i = 0; i < argc; i++)
		nargv[i] = argv[i];
	if (cold)
		nargv[i++] = "--mds_standby_replay=false";
	nargv[i] = NULL;
	dinfo(MDS, "standby-replay: starting again%s", cold ? " as a cold standby" : "");
	execv("/proc/self/exe", nargv);
	free(nargv);
	return fail("cannot start again (exec /proc/self/exe): %s", strerror(errno));
}

/*
 * main - the steps above in order; each failure unwinds, in reverse, what
 * the steps before it started (the labels).
 */
int main(int argc, char **argv)
{
	struct mds *m;
	struct prom *prom = NULL;
	struct store_config sc;
	struct args a;
	char addr[256];
	bool served = false;
	int lockfd = -1;
	sigset_t sigs;
	char section[96];
	int r, rc, sig, reexec = 0, argc0 = argc;
	static char **argv0;          /* static: reachable on the early returns */
	bool warm = false;

	argv0 = calloc((size_t)argc + 1, sizeof(*argv0));   /* the parsers below shuffle argv */
	if (argv0)
		memcpy(argv0, argv, (size_t)argc * sizeof(*argv0));
	log_init("loligo-mds");
	rc = daemon_args(&argc, &argv, section, sizeof(section));
	if (rc)
		return rc;
	cfg_init(section);
	cfg_set_identity("mds", "mds.0");
	rc = parse_args(argc, argv, &a);
	if (rc >= 0)
		return rc;
	malloc_setup();
	charge_outside();

	m = mds_new();
	if (!m)
		return fail("out of memory");
	rc = mds_configure(m);
	if (rc)
		goto out_free;
	block_signals(&sigs);
	rc = open_store(m, &a, &sc, &lockfd);
	if (rc) {
		if (m->st)
			goto out_store;
		goto out_free;
	}

	if (a.jcmd) {
		rc = a.mkfs ? fail("--mkfs and a journal command do not go together")
			    : journal_tool_main(m, a.jcmd, a.jfile, a.confirmed, !a.summary);
		goto out_store;
	}
	if (a.mkfs) {
		rc = mkfs(m);
		goto out_store;
	}

	/* the map is read before the identity matters: mds_name names the admin socket and log */
	{
		char nm[64];

		cfg_str(CFG_mds_name, nm, sizeof(nm));
		if (strcmp(nm, "0")) {
			char id[80];

			snprintf(id, sizeof(id), "mds.%s", nm);
			cfg_set_identity("mds", id);
		}
	}
	rc = auth_and_bind(m, addr, sizeof(addr));
	if (rc)
		goto out_map;
	if (cfg_bool(CFG_mds_standby_replay)) {
		rc = start_follower(m, &warm);
		if (rc)
			goto out_journal;
	}
	rc = become_active(m, &sigs);
	if (rc) {
		if (rc == -2)
			reexec = sreplay_restart_wanted(m);
		rc = rc < 0 ? 0 : rc;
		if (warm)
			goto out_journal;
		goto out_map;
	}
	if (warm) {
		char err[MDS_ERR_LEN];
		uint64_t applied;

		if (sreplay_stop(m, &applied)) {
			/* it gave up following after its last look at the map */
			reexec = sreplay_restart_wanted(m);
			if (!reexec)
				reexec = SREPLAY_RELOAD;
			mdsmap_stop(m, true);
			goto out_journal;
		}
		rc = mds_load_finish(m, err, sizeof(err)) ? fail("%s", err) : 0;
		if (rc)
			goto out_journal;
		rc = replay_and_start_journal(m, applied);
	} else {
		rc = load_tables(m);
		if (rc)
			goto out_cache;
		rc = replay_and_start_journal(m, 0);
	}
	if (rc == -1) {
		reexec = SREPLAY_RELOAD;
		rc = 0;
		mdsmap_stop(m, true);
		goto out_journal;
	}
	if (rc)
		goto out_journal;
	rc = start_admin(m);
	if (rc)
		goto out_jstop;
	r = purge_start(m);
	if (r) {
		rc = fail("cannot start the purge thread: %s", strerror(-r));
		goto out_admin;
	}
	rc = start_prometheus(&prom);
	if (rc)
		goto out_purge;
	r = net_start(m);
	if (r) {
		rc = fail("cannot start the listener: %s", strerror(-r));
		goto out_purge;
	}
	if (pthread_create(&m->ticker, NULL, ticker_main, m)) {
		rc = fail("cannot start the ticker thread");
		goto out_net;
	}
	dinfo(MDS, "loligo-mds %s serving filesystem '%s' as rank 0 on %s:%u (MDS map epoch %" PRIu64 ", instance %"
	      PRIu64 ", max_file_size %" PRIu64 ")", mdsmap_name(m), m->fs_name, addr, m->port, mdsmap_epoch(m), m->epoch,
	      m->max_file_size);
	if (a.port_file) {
		r = write_port_file(a.port_file, m->port);
		if (r) {
			rc = fail("cannot write the port file %s: %s", a.port_file, strerror(-r));
			goto out_tick;
		}
	}

	sig = serve(&sigs);
	dinfo(MDS, "signal %d: shutting down", sig);
	rc = 0;
	served = true;
	/* first: a long purge stops within a slice, and resumes at the next start */
	purge_stop(m);
	drain(m);
	/* drained: a standby may take the rank at once, with nothing of ours to fence */
	mdsmap_stop(m, !journal_read_only(m));
out_tick:
	stop_ticker(m);
out_net:
	session_reconnect_phase_cancel(m);
	net_stop(m);
out_purge:
	purge_stop(m);
out_admin:
	prom_stop(prom);
	admin_stop(m);
out_jstop:
	journal_stop(m);
	perf_unregister_group("mds");
	perf_unregister_group("mds_caps");
	perf_unregister_group("mds_mem");
	perf_unregister_group("mds_net");
out_journal:
	sreplay_free(m);
	mds_free_state(m);
out_cache:
	pthread_mutex_lock(&m->lock);
	mdcache_free(m);
	pthread_mutex_unlock(&m->lock);
	journal_free(m);
out_map:
	mdsmap_stop(m, false);
	mdsmap_free(m);
	if (m->listen_fd >= 0)
		close(m->listen_fd);
out_store:
	mds_close_store(m);
out_free:
	if (lockfd >= 0)
		close(lockfd);
	mds_destroy(m);
	if (served)
		dinfo(MDS, "loligo-mds stopped");
	if (reexec && argv0)
		rc = restart_self(argc0, argv0, reexec == SREPLAY_COLD);
	free(argv0);
	return rc;
}
