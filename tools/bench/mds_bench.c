/*
 * mds_bench - metadata ops/s of loligo-mds over loopback, and how many
 * mutations one journal write carries (group commit) under that load.
 *
 *   mds_bench [--spawn | --port PORT] [-n CLIENTS] [-t SECONDS] [--unsafe]
 *             [--no-auth | --keyring FILE] [--storm FILES [--release-caps]]
 *             [--caps CAPS]
 *
 * Each client is a thread with its own TCP connection and MDS session, and
 * its own directory; it loops create + getattr + unlink for T seconds.  By
 * default each mutation waits for its SAFE reply (journaled: what an fsync
 * or a sync mount waits for); --unsafe goes on at the UNSAFE reply, as
 * ceph-fuse returns to the application.  --spawn starts a private
 * loligo-mds on a temporary store (needs LOLIGO_BUILD_DIR or running from
 * the build dir) and removes it afterwards.  The journal figures come from
 * the MDS's "journal status" command, before and after the run.
 *
 * --storm FILES: the workload of mdstorm --contended straight on the wire,
 * without a FUSE client in front: one directory of FILES files, and each
 * client loops 100 x (LOOKUP of a random f%06d + GETATTR of it), then one
 * full listing (READDIR, 1024 entries a batch).  It reports MDS requests/s
 * and, with --spawn, the MDS's CPU time per request: the MDS's own capacity
 * for that mix, which the FUSE client's cost hides in mdstorm.  The storm
 * clients keep what the replies grant (caps, dentry leases) and ack
 * revokes, as loligo-fuse does (and Ceph clients: caps stay until the
 * client trims its cache or the MDS recalls them), so a listing repeated
 * by the same client finds its caps already issued.  --release-caps gives
 * everything back at once after each reply instead (mdsw's default: a
 * client that caches nothing), which costs the MDS a CAPS message per
 * entry listed.
 *
 * --fill FILES [--per-dir K]: a namespace of FILES files made over the
 * wire (issue 21.4), in directories of K files (default 1000), the
 * clients making their share of the directories in parallel; the clients
 * cache nothing (every grant released at once) and go on at the UNSAFE
 * reply.  Once a second it samples the MDS's RSS (/proc, --spawn) and
 * `cache status` (what the cache holds, counted as allocated; absent on an
 * MDS without it), and reports the peaks and the bytes per cached inode.
 * --mds-opt KEY=VAL (repeatable, with --spawn) runs the MDS with
 * --KEY=VAL, e.g. mds_cache_memory_limit=256M.
 *
 * Clients authenticate as client.admin (every frame then carries a MAC):
 * with --spawn using the key the spawned MDS was given, with --port the key
 * in --keyring FILE.  --no-auth connects the benchmark clients without a
 * key (the spawned MDS then runs with auth_required=false), to measure what
 * the MACs cost.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/bench/mds_wire.h"

static const uint8_t *bench_key;    /* client.admin's; NULL: --no-auth */
static const uint8_t *admin_key;    /* for the journal status command */

/* --caps: the clients are client.tenant, whose caps mds are CAPS (say
 * "allow rw path=/bench"), working in /bench, which client.admin makes:
 * what the MDS's caps check costs per request (with --spawn) */
static const char *bench_name = "client.admin";
static uint64_t bench_parent = MDSP_ROOT_INO;

/* Connect and authenticate with @key (NULL: without a key). */
static int bench_connect(struct mdsw *w, uint16_t port, const uint8_t *key)
{
	int r = mdsw_connect_raw(w, port);

	/* without a key, a name the keyring has no key for: client.admin has
	 * one, and a name with a key is taken only with it */
	if (!r && (r = mdsw_handshake_as(w, key ? bench_name : "client.bench-nokey", key, NULL, 0)))
		mdsw_close(w);
	return r;
}

struct client {
	pthread_t th;
	int id;
	uint16_t port;
	double seconds;
	bool unsafe;
	uint64_t loops, errors;
	uint64_t lat_ns;
	uint64_t requests;              /* --storm */
};

static uint64_t storm_dir;          /* --storm: the directory's ino */
static long fill_files, fill_per_dir = 1000;   /* --fill, --per-dir */
static int fill_clients;
static _Atomic long fill_made;
static int storm_files;
static bool storm_release;          /* --release-caps */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	struct mdsw w;
	struct mdsp_inode dir, in;
	char name[64];
	uint64_t end, t0;

	if (bench_connect(&w, c->port, bench_key) || mdsw_open(&w, "client.bench")) {
		c->errors++;
		return NULL;
	}
	w.wait_safe = !c->unsafe;
	snprintf(name, sizeof(name), "bench.%d.%d", (int)getpid(), c->id);
	if (mdsw_mkdir(&w, bench_parent, name, 0755, &dir)) {
		c->errors++;
		mdsw_close(&w);
		return NULL;
	}
	end = mono_ns() + (uint64_t)(c->seconds * 1e9);
	while ((t0 = mono_ns()) < end) {
		snprintf(name, sizeof(name), "f%" PRIu64, c->loops);
		/* every earlier request has its final reply (or, with --unsafe,
		 * will never be resent): let the MDS trim its completed table */
		w.oldest_tid = w.next_tid > 64 && c->unsafe ? w.next_tid - 64 : w.next_tid;
		if (mdsw_create(&w, dir.ino, name, 0644, O_CREAT | O_EXCL | O_RDWR, &in) ||
		    mdsw_getattr(&w, in.ino, &in) || mdsw_unlink(&w, dir.ino, name)) {
			c->errors++;
			if (c->errors > 10)
				break;
			continue;
		}
		c->loops++;
		c->lat_ns += mono_ns() - t0;
	}
	mdsw_close(&w);
	return NULL;
}

/* --storm: 100 x (lookup + getattr of a random file), then a full listing */
static void *storm_main(void *arg)
{
	struct client *c = arg;
	unsigned int seed = 0x9e3779b9u * (unsigned int)(c->id + 1);
	struct mdsp_reply rep;
	struct mdsp_inode in;
	struct mdsw w;
	char name[32];
	uint64_t end, cookie;
	bool last;
	int k = 0;

	if (bench_connect(&w, c->port, bench_key)) {
		c->errors++;
		return NULL;
	}
	w.keep_caps = !storm_release;   /* as a real client: see the top comment */
	if (mdsw_open(&w, "client.storm")) {
		mdsw_close(&w);
		c->errors++;
		return NULL;
	}
	end = mono_ns() + (uint64_t)(c->seconds * 1e9);
	while (mono_ns() < end && c->errors < 10) {
		if (++k % 101 == 0) {
			for (cookie = 0, last = false; !last;) {
				if (mdsw_readdir(&w, storm_dir, cookie, 1024, &rep)) {
					c->errors++;
					break;
				}
				c->requests++;
				last = rep.end || !rep.nentries;
				if (rep.nentries)
					cookie = rep.entries[rep.nentries - 1].cookie;
				mdsw_reply_free(&rep);
			}
			c->loops++;
			continue;
		}
		snprintf(name, sizeof(name), "f%06d", (int)(rand_r(&seed) % (unsigned int)storm_files));
		if (mdsw_lookup(&w, storm_dir, name, &in) || mdsw_getattr(&w, in.ino, &in))
			c->errors++;
		c->requests += 2;
	}
	mdsw_close(&w);
	return NULL;
}

/* --fill: client c makes directories c, c + n, c + 2n, ... of fill_per_dir files each */
static void *fill_main(void *arg)
{
	struct client *c = arg;
	long ndirs = (fill_files + fill_per_dir - 1) / fill_per_dir;
	struct mdsp_inode dir, in;
	struct mdsw w;
	char name[64];

	if (bench_connect(&w, c->port, bench_key) || mdsw_open(&w, "client.bench-fill")) {
		c->errors++;
		return NULL;
	}
	w.wait_safe = false;
	for (long d = c->id; d < ndirs && c->errors < 10; d += fill_clients) {
		long first = d * fill_per_dir, last = first + fill_per_dir;

		if (last > fill_files)
			last = fill_files;
		snprintf(name, sizeof(name), "fill.%ld", d);
		w.oldest_tid = w.next_tid > 64 ? w.next_tid - 64 : 0;
		if (mdsw_mkdir(&w, bench_parent, name, 0755, &dir)) {
			c->errors++;
			continue;
		}
		for (long f = first; f < last; f++) {
			snprintf(name, sizeof(name), "f%ld", f);
			w.oldest_tid = w.next_tid > 64 ? w.next_tid - 64 : 0;
			if (mdsw_create(&w, dir.ino, name, 0644, O_CREAT | O_EXCL, &in)) {
				c->errors++;
				break;
			}
			c->loops++;
			fill_made++;
		}
	}
	w.wait_safe = true;
	mdsw_getattr(&w, bench_parent, &dir);    /* everything before it applied */
	mdsw_close(&w);
	return NULL;
}

/*
 * The MDS's anonymous resident memory (RssAnon: its heap, what the cache
 * holds); the file-backed part (RssFile) is the local store's LMDB map and
 * the binaries, page cache the kernel takes back under pressure, in *@file.
 */
static uint64_t proc_rss(pid_t pid, uint64_t *file)
{
	char path[64], line[256];
	uint64_t kb = 0, fkb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "RssAnon:", 8))
			kb = strtoull(line + 8, NULL, 10);
		if (!strncmp(line, "RssFile:", 8))
			fkb = strtoull(line + 8, NULL, 10);
	}
	fclose(f);
	if (file)
		*file = fkb * 1024;
	return kb * 1024;
}

static uint64_t json_u64(const char *out, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(out, k);
	return p ? strtoull(p + strlen(k), NULL, 10) : 0;
}

/* `cache status`: total bytes, inodes cached and the limit (0s on an MDS without it) */
static int cache_status(struct mdsw *w, uint64_t *total, uint64_t *inodes, uint64_t *limit)
{
	char *out = NULL;
	int r = mdsw_command(w, "{\"prefix\":\"cache status\"}", &out);

	*total = *inodes = *limit = 0;
	if (!r && out) {
		*total = json_u64(out, "total_bytes");
		*inodes = json_u64(out, "inodes_cached");
		*limit = json_u64(out, "limit_bytes");
	}
	free(out);
	return r;
}

/* the directory and its files, made with one session, not timed */
static int storm_setup(uint16_t port, int files)
{
	struct mdsp_inode dir, in;
	struct mdsw w;
	char name[32];
	int i, r;

	if ((r = bench_connect(&w, port, bench_key)) || (r = mdsw_open(&w, "client.storm-setup")))
		return r;
	w.wait_safe = false;
	r = mdsw_mkdir(&w, MDSP_ROOT_INO, "storm", 0755, &dir);
	for (i = 0; !r && i < files; i++) {
		snprintf(name, sizeof(name), "f%06d", i);
		w.oldest_tid = w.next_tid > 64 ? w.next_tid - 64 : 0;
		r = mdsw_create(&w, dir.ino, name, 0644, O_CREAT | O_EXCL, &in);
	}
	w.wait_safe = true;
	if (!r)
		r = mdsw_getattr(&w, dir.ino, &dir);   /* (and everything before it applied) */
	mdsw_close(&w);
	storm_dir = dir.ino;
	return r;
}

/* CPU time (user + system) of process @pid so far, in ns; 0 if unknown */
static uint64_t proc_cpu_ns(pid_t pid)
{
	char path[64];
	unsigned long ut = 0, st = 0;
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	ok = fscanf(f, "%*d %*s %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2;
	fclose(f);
	return ok ? (uint64_t)(ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK)) : 0;
}

static int journal_counts(uint16_t port, uint64_t *writes, uint64_t *entries)
{
	struct mdsw w;
	char *out = NULL, *p;
	int r;

	if (bench_connect(&w, port, admin_key))
		return -1;
	r = mdsw_command(&w, "{\"prefix\":\"journal status\"}", &out);
	mdsw_close(&w);
	if (r || !out) {
		free(out);
		return -1;
	}
	p = strstr(out, "\"writes\":");
	*writes = p ? strtoull(p + 9, NULL, 10) : 0;
	p = strstr(out, "\"entries\":");
	*entries = p ? strtoull(p + 10, NULL, 10) : 0;
	free(out);
	return 0;
}

/* --caps: client.tenant, with admin's secret and @caps, in the spawned MDS's keyring */
static int add_tenant(struct mdsproc *p, const uint8_t *key, const char *caps)
{
	struct mdsp_keyring kr;
	char path[512], err[2048];
	int r;

	snprintf(path, sizeof(path), "%s/keyring", p->dir);
	r = mdsp_keyring_load(path, &kr, err, sizeof(err));
	if (!r && !(r = mdsp_keyring_add(&kr, "client.tenant", key)) &&
	    !(r = mdsp_keyring_set_caps(&kr, "client.tenant", caps, err, sizeof(err))))
		r = mdsp_keyring_save(path, &kr, err, sizeof(err));
	if (r)
		fprintf(stderr, "mds_bench: --caps: %s\n", err);
	mdsp_keyring_free(&kr);
	return r;
}

static int make_bench_dir(uint16_t port)
{
	struct mdsw w;
	struct mdsp_inode dir;
	int r;

	if (bench_connect(&w, port, bench_key) || mdsw_open(&w, "client.bench-setup"))
		return -1;
	r = mdsw_mkdir(&w, MDSP_ROOT_INO, "bench", 0755, &dir);
	mdsw_close(&w);
	if (r)
		return -1;
	bench_parent = dir.ino;
	bench_name = "client.tenant";
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: mds_bench [--spawn | --port PORT] [-n CLIENTS] [-t SECONDS] [--unsafe] "
			"[--no-auth | --keyring FILE] [--storm FILES [--release-caps]] [--caps CAPS (with --spawn)]\n"
			"       [--fill FILES [--per-dir K]] [--mds-opt KEY=VAL ... (with --spawn)]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "spawn", no_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' },
		{ "clients", required_argument, NULL, 'n' },
		{ "time", required_argument, NULL, 't' },
		{ "unsafe", no_argument, NULL, 'u' },
		{ "no-auth", no_argument, NULL, 'A' },
		{ "keyring", required_argument, NULL, 'k' },
		{ "storm", required_argument, NULL, 'S' },
		{ "release-caps", no_argument, NULL, 'R' },
		{ "caps", required_argument, NULL, 'C' },
		{ "fill", required_argument, NULL, 'F' },
		{ "per-dir", required_argument, NULL, 'D' },
		{ "mds-opt", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct mdsproc proc;
	struct client *cl;
	bool spawn = false, unsafe = false, no_auth = false;
	const char *keyring = NULL, *caps = NULL;
	static uint8_t file_key[MDSP_KEY_LEN];
	int n = 1, i, opt, rc = 0;
	double seconds = 5;
	uint16_t port = 0;
	uint64_t w0 = 0, e0 = 0, w1 = 0, e1 = 0, loops = 0, errors = 0, lat = 0, t0, t1, requests = 0;
	uint64_t cpu0 = 0, cpu1 = 0;
	const char *mds_opts[6];
	int nmds_opts = 0;

	signal(SIGPIPE, SIG_IGN);
	while ((opt = getopt_long(argc, argv, "sp:n:t:uh", opts, NULL)) != -1) {
		switch (opt) {
		case 's': spawn = true; break;
		case 'p': port = (uint16_t)atoi(optarg); break;
		case 'n': n = atoi(optarg); break;
		case 't': seconds = atof(optarg); break;
		case 'u': unsafe = true; break;
		case 'A': no_auth = true; break;
		case 'k': keyring = optarg; break;
		case 'S': storm_files = atoi(optarg); break;
		case 'R': storm_release = true; break;
		case 'C': caps = optarg; break;
		case 'F': fill_files = atol(optarg); break;
		case 'D': fill_per_dir = atol(optarg); break;
		case 'O':
			if (nmds_opts == 6) {
				usage();
				return 2;
			}
			mds_opts[nmds_opts++] = optarg;
			break;
		default: usage(); return opt == 'h' ? 0 : 2;
		}
	}
	if (n < 1 || n > 1024 || seconds <= 0 || (!spawn && !port) || storm_files < 0 || storm_files > 1000000 ||
	    (caps && (!spawn || no_auth || storm_files)) || fill_files < 0 || fill_per_dir < 1 ||
	    (fill_files && storm_files) || (nmds_opts && !spawn)) {
		usage();
		return 2;
	}
	if (keyring) {
		struct mdsp_keyring kr;
		const struct mdsp_key *k;
		char err[1024];

		if (mdsp_keyring_load(keyring, &kr, err, sizeof(err)) || !(k = mdsp_keyring_find(&kr, "client.admin"))) {
			fprintf(stderr, "mds_bench: %s\n", *err ? err : "the keyring has no key for client.admin");
			return 2;
		}
		memcpy(file_key, k->secret, sizeof(file_key));
		mdsp_keyring_free(&kr);
		admin_key = file_key;
	} else {
		admin_key = mdsw_test_key();
	}
	bench_key = no_auth ? NULL : admin_key;
	if (spawn) {
		if (!getenv("LOLIGO_BUILD_DIR"))
			setenv("LOLIGO_BUILD_DIR", ".", 0);
		if (mdsproc_init(&proc, NULL)) {
			fprintf(stderr, "mds_bench: cannot make the MDS's directory\n");
			return 1;
		}
		for (i = 0; i < nmds_opts; i++)
			snprintf(proc.extra[proc.nextra++], sizeof(proc.extra[0]), "--%s", mds_opts[i]);
		if ((no_auth && snprintf(proc.extra[proc.nextra++], sizeof(proc.extra[0]), "--auth_required=false") < 0) ||
		    mdsproc_mkfs(&proc) || (caps && add_tenant(&proc, admin_key, caps)) || mdsproc_start(&proc)) {
			fprintf(stderr, "mds_bench: cannot start loligo-mds (set LOLIGO_BUILD_DIR to the build dir)\n");
			mdsproc_cleanup(&proc);
			return 1;
		}
		port = proc.port;
		if (caps && make_bench_dir(port)) {
			fprintf(stderr, "mds_bench: cannot make /bench\n");
			mdsproc_cleanup(&proc);
			return 1;
		}
	}
	cl = calloc((size_t)n, sizeof(*cl));
	if (!cl)
		return 1;
	if (storm_files && storm_setup(port, storm_files)) {
		fprintf(stderr, "mds_bench: cannot make the storm directory\n");
		rc = 1;
		goto out;
	}
	if (fill_files) {
		struct mdsw mon;
		uint64_t rss0 = spawn ? proc_rss(proc.pid, NULL) : 0, rss, rss_max = 0, tot, tot_max = 0, ino, lim, rfile = 0;
		uint64_t all_max = 0;   /* anon + file (the store's LMDB map): what the memory limit bounds */
		long last = 0;

		fill_clients = n;
		if (bench_connect(&mon, port, admin_key) || mdsw_open(&mon, "client.bench-monitor")) {
			fprintf(stderr, "mds_bench: cannot connect the monitor\n");
			rc = 1;
			goto out;
		}
		t0 = mono_ns();
		cpu0 = spawn ? proc_cpu_ns(proc.pid) : 0;
		for (i = 0; i < n; i++) {
			cl[i].id = i;
			cl[i].port = port;
			pthread_create(&cl[i].th, NULL, fill_main, &cl[i]);
		}
		/* sample once a second until every maker is done (the last
		 * sample after they are) */
		for (;;) {
			bool done = fill_made >= fill_files;

			usleep(1000000);
			rss = spawn ? proc_rss(proc.pid, &rfile) : 0;
			cache_status(&mon, &tot, &ino, &lim);
			if (rss > rss_max)
				rss_max = rss;
			if (rss + rfile > all_max)
				all_max = rss + rfile;
			if (tot > tot_max)
				tot_max = tot;
			fprintf(stderr, "fill: %ld files (%.0f/s) rss anon %.1f MB (file %.1f MB) cache %.1f MB (%" PRIu64
				" inodes) limit %.0f MB\n", (long)fill_made, (double)(fill_made - last), (double)rss / 1048576.0,
				(double)rfile / 1048576.0,
				(double)tot / 1048576.0, ino, (double)lim / 1048576.0);
			last = fill_made;
			if (done)
				break;
			for (i = 0; i < n && cl[i].errors < 10; i++)
				;
			if (i < n)
				break;
		}
		for (i = 0; i < n; i++) {
			pthread_join(cl[i].th, NULL);
			loops += cl[i].loops;
			errors += cl[i].errors;
		}
		t1 = mono_ns();
		cpu1 = spawn ? proc_cpu_ns(proc.pid) : 0;
		rss = spawn ? proc_rss(proc.pid, &rfile) : 0;
		cache_status(&mon, &tot, &ino, &lim);
		{
			/* the journal's backpressure (an MDS without it: zeros) */
			char *js = NULL;

			if (!mdsw_command(&mon, "{\"prefix\":\"journal status\"}", &js) && js)
				printf("RESULT mds_bench fill_journal throttled=%" PRIu64 " queued_bytes_max=%" PRIu64
				       " queued_bytes_bound=%" PRIu64 " segment_bytes_bound=%" PRIu64 "\n",
				       json_u64(js, "throttled"), json_u64(js, "queued_bytes_max"),
				       json_u64(js, "queued_bytes_bound"), json_u64(js, "segment_bytes_bound"));
			free(js);
		}
		mdsw_close(&mon);
		printf("RESULT mds_bench fill clients=%d files=%" PRIu64 " per_dir=%ld seconds=%.1f creates_s=%.0f "
		       "mds_cpu_us_per_create=%.1f rss_anon_start_mb=%.1f rss_anon_max_mb=%.1f rss_anon_end_mb=%.1f rss_max_mb=%.1f rss_end_mb=%.1f "
		       "cache_max_mb=%.1f cache_end_mb=%.1f inodes_cached=%" PRIu64 " cache_bytes_per_inode=%.0f limit_mb=%.0f errors=%" PRIu64 "\n",
		       n, loops, fill_per_dir, (double)(t1 - t0) / 1e9, (double)loops / ((double)(t1 - t0) / 1e9),
		       loops && cpu1 ? (double)(cpu1 - cpu0) / 1e3 / (double)loops : 0.0, (double)rss0 / 1048576.0,
		       (double)rss_max / 1048576.0, (double)rss / 1048576.0, (double)all_max / 1048576.0,
		       (double)(rss + rfile) / 1048576.0, (double)tot_max / 1048576.0,
		       (double)tot / 1048576.0, ino, ino ? (double)tot / (double)ino : 0.0, (double)lim / 1048576.0, errors);
		goto out;
	}
	journal_counts(port, &w0, &e0);
	cpu0 = spawn ? proc_cpu_ns(proc.pid) : 0;
	t0 = mono_ns();
	for (i = 0; i < n; i++) {
		cl[i].id = i;
		cl[i].port = port;
		cl[i].seconds = seconds;
		cl[i].unsafe = unsafe;
		pthread_create(&cl[i].th, NULL, storm_files ? storm_main : client_main, &cl[i]);
	}
	for (i = 0; i < n; i++) {
		pthread_join(cl[i].th, NULL);
		loops += cl[i].loops;
		errors += cl[i].errors;
		lat += cl[i].lat_ns;
		requests += cl[i].requests;
	}
	t1 = mono_ns();
	cpu1 = spawn ? proc_cpu_ns(proc.pid) : 0;
	if (storm_files) {
		double el = (double)(t1 - t0) / 1e9;

		printf("clients=%d seconds=%.1f mode=storm files=%d auth=%s caps=%s\n", n, el, storm_files,
		       bench_key ? "on (frame MACs)" : "off", storm_release ? "released at once" : "kept");
		printf("RESULT mds_bench storm clients=%d files=%d requests=%" PRIu64 " requests_s=%.0f listings=%" PRIu64
		       " mds_cpu_us_per_req=%.1f errors=%" PRIu64 "\n", n, storm_files, requests, (double)requests / el,
		       loops, requests && cpu1 ? (double)(cpu1 - cpu0) / 1e3 / (double)requests : 0.0, errors);
		goto out;
	}
	usleep(200000);   /* let the last SAFE writes land */
	journal_counts(port, &w1, &e1);
	{
		double el = (double)(t1 - t0) / 1e9;

		printf("clients=%d seconds=%.1f mode=%s auth=%s\n", n, el, unsafe ? "unsafe" : "safe",
		       bench_key ? "on (frame MACs)" : "off");
		printf("loops=%" PRIu64 " (create+getattr+unlink) loops/s=%.0f ops/s=%.0f errors=%" PRIu64 "\n", loops,
		       (double)loops / el, 3.0 * (double)loops / el, errors);
		printf("avg loop latency=%.1f us\n", loops ? (double)lat / (double)loops / 1e3 : 0.0);
		printf("journal writes=%" PRIu64 " entries=%" PRIu64 " avg entries/write=%.2f\n", w1 - w0, e1 - e0,
		       w1 > w0 ? (double)(e1 - e0) / (double)(w1 - w0) : 0.0);
	}
out:
	if (errors)
		rc = 1;
	free(cl);
	if (spawn) {
		mdsproc_stop(&proc, SIGTERM);
		mdsproc_cleanup(&proc);
	}
	return rc;
}
