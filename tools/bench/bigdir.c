/*
 * bigdir - a big directory of loligo-mds, made, listed, looked up in and
 * created into over the wire (no FUSE client in front): the MDS's side of
 * issue 21's big directories, for tools/bench/run-bigdir.sh.
 *
 *   bigdir --port PORT --keyring FILE [--dir NAME] [-j THREADS] CMD ARG
 *
 *   make N      mkdir /NAME (or find it) and create f0000000 .. f<N-1> in it,
 *               THREADS sessions in parallel (default 4), each create
 *               answered UNSAFE; the last request of each waits for SAFE
 *   list N      READDIR the whole directory (1024 entries a batch) and check
 *               that it holds f0000000 .. f<N-1> each once and nothing else
 *               (g* names that `create` made are counted apart); exit 1 if not
 *   lookup K    K LOOKUPs of random f* names (of the N that `list`/`make`
 *               made: give N with --files)
 *   create K    K creates of new names g<pid><seq> (one session, each waiting
 *               for SAFE, as mds_bench does), then unlinks them again
 *
 * Each command prints one line "bigdir CMD n=... secs=... ops_s=..." (and
 * list: entries=, extra=).  The client caches nothing (mdsw releases what a
 * reply grants at once), except list, which keeps the entries' caps as
 * loligo-fuse would (--release-caps: give them back, a CAPS message each).
 * Authenticates as client.admin with the key in FILE.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/bench/mds_wire.h"

static uint8_t key[MDSP_KEY_LEN];
static uint16_t port;
static const char *dirname_ = "bigdir";
static uint64_t dir_ino;
static long nfiles;
static bool release_caps;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int session(struct mdsw *w, const char *name)
{
	int r = mdsw_connect_raw(w, port);

	if (r)
		return r;
	if ((r = mdsw_handshake_as(w, "client.admin", key, NULL, 0)) || (r = mdsw_open(w, name))) {
		mdsw_close(w);
		return r;
	}
	return 0;
}

/* the session closed, not only the connection: what a list kept (caps on
 * every entry, leases) would otherwise hold up the next creates in the
 * directory until the MDS times the session out */
static void end_session(struct mdsw *w)
{
	mdsw_session_close(w);
	mdsw_close(w);
}

static int find_dir(bool make)
{
	struct mdsp_inode in;
	struct mdsw w;
	int r = session(&w, "client.bigdir");

	if (r)
		return r;
	r = mdsw_lookup(&w, MDSP_ROOT_INO, dirname_, &in);
	if (r == -ENOENT && make)
		r = mdsw_mkdir(&w, MDSP_ROOT_INO, dirname_, 0755, &in);
	if (!r)
		dir_ino = in.ino;
	end_session(&w);
	return r;
}

struct maker {
	pthread_t th;
	long from, to;
	int err;
};

static void *make_main(void *arg)
{
	struct maker *m = arg;
	struct mdsp_inode in;
	struct mdsw w;
	char name[32];

	if ((m->err = session(&w, "client.bigdir-make")))
		return NULL;
	w.wait_safe = false;
	for (long i = m->from; i < m->to && !m->err; i++) {
		snprintf(name, sizeof(name), "f%07ld", i);
		w.oldest_tid = w.next_tid > 64 ? w.next_tid - 64 : 0;
		w.wait_safe = i == m->to - 1;        /* the last one: everything is journaled */
		m->err = mdsw_create(&w, dir_ino, name, 0644, O_CREAT | O_EXCL, &in);
	}
	end_session(&w);
	return NULL;
}

static int cmd_make(long n, int threads)
{
	struct maker *m = calloc((size_t)threads, sizeof(*m));
	int err = 0;

	if (!m)
		return -ENOMEM;
	for (int t = 0; t < threads; t++) {
		m[t].from = n * t / threads;
		m[t].to = n * (t + 1) / threads;
		pthread_create(&m[t].th, NULL, make_main, &m[t]);
	}
	for (int t = 0; t < threads; t++) {
		pthread_join(m[t].th, NULL);
		if (m[t].err && !err)
			err = m[t].err;
	}
	free(m);
	return err;
}

static int cmd_list(long n, long *entries, long *extra)
{
	unsigned char *seen = calloc((size_t)n + 1, 1);
	struct mdsp_reply rep;
	struct mdsw w;
	uint64_t cookie = 0;
	bool last = false;
	int r;

	if (!seen)
		return -ENOMEM;
	if ((r = session(&w, "client.bigdir-list"))) {
		free(seen);
		return r;
	}
	w.keep_caps = !release_caps;
	*entries = *extra = 0;
	while (!last && !(r = mdsw_readdir(&w, dir_ino, cookie, 1024, &rep))) {
		for (uint32_t i = 0; i < rep.nentries; i++) {
			const char *nm = rep.entries[i].name;
			char *end;
			long k;

			(*entries)++;
			if (nm[0] == 'f' && strlen(nm) == 8 && (k = strtol(nm + 1, &end, 10)) >= 0 && k < n && !*end) {
				if (seen[k]++) {
					fprintf(stderr, "bigdir: %s listed twice\n", nm);
					r = -EEXIST;
				}
			} else if (nm[0] == 'g') {
				(*extra)++;
			} else {
				fprintf(stderr, "bigdir: %s should not be there\n", nm);
				r = -EINVAL;
			}
		}
		last = rep.end || !rep.nentries;
		if (rep.nentries)
			cookie = rep.entries[rep.nentries - 1].cookie;
		mdsw_reply_free(&rep);
	}
	for (long k = 0; !r && k < n; k++)
		if (!seen[k]) {
			fprintf(stderr, "bigdir: f%07ld missing\n", k);
			r = -ENOENT;
		}
	end_session(&w);
	free(seen);
	return r;
}

static int cmd_lookup(long k)
{
	unsigned int seed = (unsigned int)getpid();
	struct mdsp_inode in;
	struct mdsw w;
	char name[32];
	int r;

	if (nfiles < 1)
		return -EINVAL;
	if ((r = session(&w, "client.bigdir-lookup")))
		return r;
	for (long i = 0; i < k && !r; i++) {
		snprintf(name, sizeof(name), "f%07ld", (long)(rand_r(&seed) % (unsigned long)nfiles));
		r = mdsw_lookup(&w, dir_ino, name, &in);
	}
	end_session(&w);
	return r;
}

static int cmd_create(long k)
{
	struct mdsp_inode in;
	struct mdsw w;
	char name[48];
	int r;

	if ((r = session(&w, "client.bigdir-create")))
		return r;
	for (long i = 0; i < k && !r; i++) {
		snprintf(name, sizeof(name), "g%d.%ld", (int)getpid(), i);
		r = mdsw_create(&w, dir_ino, name, 0644, O_CREAT | O_EXCL, &in);
	}
	for (long i = 0; i < k && !r; i++) {
		snprintf(name, sizeof(name), "g%d.%ld", (int)getpid(), i);
		r = mdsw_unlink(&w, dir_ino, name);
	}
	end_session(&w);
	return r;
}

static void usage(void)
{
	fprintf(stderr, "usage: bigdir --port PORT --keyring FILE [--dir NAME] [-j THREADS] [--files N]\n"
			"              [--release-caps] make N | list N | lookup K | create K\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "keyring", required_argument, NULL, 'k' },
		{ "dir", required_argument, NULL, 'd' },
		{ "files", required_argument, NULL, 'f' },
		{ "release-caps", no_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	const char *keyring = NULL;
	int threads = 4, c, r;
	long n, entries = 0, extra = 0;

	while ((c = getopt_long(argc, argv, "j:", opts, NULL)) != -1) {
		switch (c) {
		case 'p': port = (uint16_t)atoi(optarg); break;
		case 'k': keyring = optarg; break;
		case 'd': dirname_ = optarg; break;
		case 'f': nfiles = atol(optarg); break;
		case 'R': release_caps = true; break;
		case 'j': threads = atoi(optarg); break;
		default: usage();
		}
	}
	if (!port || !keyring || threads < 1 || threads > 256 || argc - optind != 2)
		usage();
	n = atol(argv[optind + 1]);
	if (n < 0 || n > 100000000)
		usage();
	{
		struct mdsp_keyring kr;
		const struct mdsp_key *k;
		char err[1024] = "";

		if (mdsp_keyring_load(keyring, &kr, err, sizeof(err)) || !(k = mdsp_keyring_find(&kr, "client.admin"))) {
			fprintf(stderr, "bigdir: %s\n", *err ? err : "the keyring has no key for client.admin");
			return 2;
		}
		memcpy(key, k->secret, sizeof(key));
		mdsp_keyring_free(&kr);
	}
	const char *cmd = argv[optind];
	bool make = !strcmp(cmd, "make");
	if ((r = find_dir(make))) {
		fprintf(stderr, "bigdir: /%s: %s\n", dirname_, strerror(r < -1000 ? -(r + 1000) : -r));
		return 1;
	}
	uint64_t t0 = mono_ns();
	if (make)
		r = cmd_make(n, threads);
	else if (!strcmp(cmd, "list"))
		r = cmd_list(n, &entries, &extra);
	else if (!strcmp(cmd, "lookup"))
		r = cmd_lookup(n);
	else if (!strcmp(cmd, "create"))
		r = cmd_create(n);
	else
		usage();
	double secs = (double)(mono_ns() - t0) / 1e9;
	long ops = !strcmp(cmd, "create") ? 2 * n : !strcmp(cmd, "list") ? entries : n;
	printf("bigdir %s n=%ld secs=%.3f ops_s=%.0f", cmd, n, secs, secs > 0 ? (double)ops / secs : 0.0);
	if (!strcmp(cmd, "list"))
		printf(" entries=%ld extra=%ld", entries, extra);
	printf(" result=%d\n", r);
	if (r)
		fprintf(stderr, "bigdir %s: %s\n", cmd, strerror(r < -1000 ? -(r + 1000) : -r));
	return r ? 1 : 0;
}
