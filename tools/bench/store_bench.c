/*
 * store_bench - throughput and latency of small compound ops.
 *
 *   store_bench [-d DIR] [-b local|rados] [-c ceph.conf] [-p POOL]
 *               [-t SECONDS] [-q INFLIGHT] [-s BYTES] [-n OBJECTS]
 *
 * Each op writes BYTES (default 4096) into one of OBJECTS objects and sets
 * one omap key (64-byte value) on it, as one atomic compound op; INFLIGHT
 * ops (default 1) are kept in flight.  With the local backend, a completion
 * means durable, so at INFLIGHT 1 this measures the commit latency, and at
 * higher depths how well group commit shares the sync: the local backend's
 * perf counters give ops per commit and latency quantiles.  DIR defaults to a temporary
 * directory that is removed afterwards.
 */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/log.h"
#include "common/perf.h"
#include "common/time.h"
#include "store/store.h"

struct bench {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int inflight;          /* protected by lock */
	uint64_t done;         /* protected by lock */
	uint64_t lat_sum_ns;   /* protected by lock */
	int err;               /* protected by lock */
};

struct req {
	struct bench *b;
	uint64_t t0;
};

static void done_cb(int r, void *arg)
{
	struct req *q = arg;
	struct bench *b = q->b;
	uint64_t lat = now_mono_ns() - q->t0;

	free(q);
	pthread_mutex_lock(&b->lock);
	if (r < 0 && !b->err)
		b->err = r;
	b->inflight--;
	b->done++;
	b->lat_sum_ns += lat;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	remove(path);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *backend = "local", *conf = NULL, *poolname = "bench";
	double secs = 5;
	int depth = 1, nobj = 1024, c;
	size_t size = 4096;
	char tmp[] = "/tmp/store-bench-XXXXXX";
	struct store_config cfg = { 0 };
	struct bench b = { .inflight = 0 };
	struct store_pool *p;
	struct store *st;
	char *buf, val[64];
	int r;

	while ((c = getopt(argc, argv, "d:b:c:p:t:q:s:n:h")) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'b': backend = optarg; break;
		case 'c': conf = optarg; break;
		case 'p': poolname = optarg; break;
		case 't': secs = atof(optarg); break;
		case 'q': depth = atoi(optarg); break;
		case 's': size = (size_t)atol(optarg); break;
		case 'n': nobj = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-d DIR] [-b local|rados] [-c ceph.conf] [-p POOL] [-t SECONDS]"
				" [-q INFLIGHT] [-s BYTES] [-n OBJECTS]\n", argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (depth < 1 || nobj < 1 || secs <= 0) {
		fprintf(stderr, "store_bench: -q, -n and -t must be positive\n");
		return 2;
	}
	log_init("store_bench");
	if (!dir && strcmp(backend, "local") == 0) {
		if (!mkdtemp(tmp)) {
			perror("mkdtemp");
			return 1;
		}
		dir = tmp;
	}
	cfg.backend = backend;
	cfg.local_path = dir;
	cfg.create = true;
	cfg.rados_conf = conf;
	cfg.rados_id = "admin";
	cfg.rados_mon_op_timeout = 10;
	cfg.rados_osd_op_timeout = 10;
	if ((r = store_open(&cfg, &st))) {
		fprintf(stderr, "store_bench: store_open: %s\n", strerror(-r));
		return 1;
	}
	r = store_pool_create(st, poolname);
	if (r && r != -EEXIST) {
		fprintf(stderr, "store_bench: pool create: %s\n", strerror(-r));
		return 1;
	}
	if ((r = store_pool_open(st, poolname, NULL, &p))) {
		fprintf(stderr, "store_bench: pool open: %s\n", strerror(-r));
		return 1;
	}
	buf = malloc(size ? size : 1);
	memset(buf, 0xab, size);
	memset(val, 'v', sizeof(val));
	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.cond, NULL);

	uint64_t t0 = now_mono_ns(), end = t0 + (uint64_t)(secs * 1e9), submitted = 0;
	while (now_mono_ns() < end) {
		char oid[32], key[32];
		struct store_op *op = store_op_new();
		struct req *q = malloc(sizeof(*q));

		pthread_mutex_lock(&b.lock);
		while (b.inflight >= depth)
			pthread_cond_wait(&b.cond, &b.lock);
		if (b.err) {
			pthread_mutex_unlock(&b.lock);
			break;
		}
		b.inflight++;
		pthread_mutex_unlock(&b.lock);
		snprintf(oid, sizeof(oid), "obj.%d", (int)(submitted % (uint64_t)nobj));
		snprintf(key, sizeof(key), "key.%" PRIu64, submitted);
		store_op_write(op, (submitted / (uint64_t)nobj % 64) * size, buf, size);
		store_op_omap_set(op, key, val, sizeof(val));
		q->b = &b;
		q->t0 = now_mono_ns();
		if ((r = store_op_submit(p, oid, op, done_cb, q))) {
			fprintf(stderr, "store_bench: submit: %s\n", strerror(-r));
			free(q);
			pthread_mutex_lock(&b.lock);
			b.inflight--;
			if (!b.err)
				b.err = r;
			pthread_mutex_unlock(&b.lock);
			break;
		}
		submitted++;
	}
	pthread_mutex_lock(&b.lock);
	while (b.inflight)
		pthread_cond_wait(&b.cond, &b.lock);
	pthread_mutex_unlock(&b.lock);
	double el = (double)(now_mono_ns() - t0) / 1e9;
	if (b.err) {
		fprintf(stderr, "store_bench: an op failed: %s\n", strerror(-b.err));
		store_pool_close(p);
		store_close(st);
		return 1;
	}
	printf("backend=%s inflight=%d size=%zu objects=%d: %" PRIu64 " ops in %.2f s = %.0f ops/s, avg latency %.3f ms\n",
	       backend, depth, size, nobj, b.done, el, (double)b.done / el,
	       b.done ? (double)b.lat_sum_ns / (double)b.done / 1e6 : 0.0);
	struct json_object *pd = perf_dump_json(), *g, *v;
	if (pd && json_object_object_get_ex(pd, "store_local", &g)) {
		uint64_t ops = 0, commits = 0;
		if (json_object_object_get_ex(g, "write_ops", &v))
			ops = (uint64_t)json_object_get_int64(v);
		if (json_object_object_get_ex(g, "commits", &v))
			commits = (uint64_t)json_object_get_int64(v);
		printf("  %.1f ops per commit (%" PRIu64 " commits)", commits ? (double)ops / (double)commits : 0.0,
		       commits);
		if (json_object_object_get_ex(g, "commit_lat", &v)) {
			struct json_object *q;
			if (json_object_object_get_ex(v, "p50_ns", &q))
				printf(", commit p50 %.2f ms", (double)json_object_get_int64(q) / 1e6);
			if (json_object_object_get_ex(v, "p99_ns", &q))
				printf(" p99 %.2f ms", (double)json_object_get_int64(q) / 1e6);
		}
		if (json_object_object_get_ex(g, "write_lat", &v)) {
			struct json_object *q;
			if (json_object_object_get_ex(v, "p50_ns", &q))
				printf(", op latency p50 %.2f ms", (double)json_object_get_int64(q) / 1e6);
			if (json_object_object_get_ex(v, "p99_ns", &q))
				printf(" p99 %.2f ms", (double)json_object_get_int64(q) / 1e6);
		}
		printf("\n");
	}
	json_object_put(pd);
	fflush(stdout);
	store_pool_close(p);
	store_close(st);
	if (dir == tmp)
		nftw(tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(buf);
	return 0;
}
