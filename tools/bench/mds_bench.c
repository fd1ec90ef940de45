/*
 * mds_bench - metadata ops/s of loligo-mds over loopback, and how many
 * mutations one journal write carries (group commit) under that load.
 *
 *   mds_bench [--spawn | --port PORT] [-n CLIENTS] [-t SECONDS] [--unsafe]
 *             [--no-auth | --keyring FILE]
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

#include "tests/integration/test_mds_wire.h"

static const uint8_t *bench_key;    /* client.admin's; NULL: --no-auth */
static const uint8_t *admin_key;    /* for the journal status command */

/* Connect and authenticate with @key (NULL: without a key). */
static int bench_connect(struct mdsw *w, uint16_t port, const uint8_t *key)
{
	int r = mdsw_connect_raw(w, port);

	if (!r && (r = mdsw_handshake_as(w, "client.admin", key, NULL, 0)))
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
};

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
	if (mdsw_mkdir(&w, MDSP_ROOT_INO, name, 0755, &dir)) {
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

static void usage(void)
{
	fprintf(stderr, "usage: mds_bench [--spawn | --port PORT] [-n CLIENTS] [-t SECONDS] [--unsafe] "
			"[--no-auth | --keyring FILE]\n");
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct mdsproc proc;
	struct client *cl;
	bool spawn = false, unsafe = false, no_auth = false;
	const char *keyring = NULL;
	static uint8_t file_key[MDSP_KEY_LEN];
	int n = 1, i, opt, rc = 0;
	double seconds = 5;
	uint16_t port = 0;
	uint64_t w0 = 0, e0 = 0, w1 = 0, e1 = 0, loops = 0, errors = 0, lat = 0, t0, t1;

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
		default: usage(); return opt == 'h' ? 0 : 2;
		}
	}
	if (n < 1 || n > 1024 || seconds <= 0 || (!spawn && !port)) {
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
		if (mdsproc_init(&proc, NULL) ||
		    (no_auth && snprintf(proc.extra[proc.nextra++], sizeof(proc.extra[0]), "--auth_required=false") < 0) ||
		    mdsproc_mkfs(&proc) || mdsproc_start(&proc)) {
			fprintf(stderr, "mds_bench: cannot start loligo-mds (set LOLIGO_BUILD_DIR to the build dir)\n");
			mdsproc_cleanup(&proc);
			return 1;
		}
		port = proc.port;
	}
	cl = calloc((size_t)n, sizeof(*cl));
	if (!cl)
		return 1;
	journal_counts(port, &w0, &e0);
	t0 = mono_ns();
	for (i = 0; i < n; i++) {
		cl[i].id = i;
		cl[i].port = port;
		cl[i].seconds = seconds;
		cl[i].unsafe = unsafe;
		pthread_create(&cl[i].th, NULL, client_main, &cl[i]);
	}
	for (i = 0; i < n; i++) {
		pthread_join(cl[i].th, NULL);
		loops += cl[i].loops;
		errors += cl[i].errors;
		lat += cl[i].lat_ns;
	}
	t1 = mono_ns();
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
	if (errors)
		rc = 1;
	free(cl);
	if (spawn) {
		mdsproc_stop(&proc, SIGTERM);
		mdsproc_cleanup(&proc);
	}
	return rc;
}
