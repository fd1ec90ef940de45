/*
 * churn - the writer of the two-client metadata storm: creates and removes
 * files in one directory for a while, so that a second client storming the
 * same directory (../shared/bench/mdstorm.c) has its cached listing and
 * names revoked all the time (docs/BENCHMARKS.md, tools/bench/run-mdstorm.sh
 * --writer).
 *
 *   churn DIR SECONDS [FILES]
 *
 * Keeps FILES (default 16) names "churn.N" cycling: create one (open
 * O_CREAT|O_EXCL, close), remove the oldest.  The last line is
 *   RESULT op=churn secs=... creates=... unlinks=... ops_s=... p50_us=... p99_us=... errors=...
 * (an op is one create or one unlink; the latencies are of both).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *dir;
	double secs, t0, end, *lat = NULL;
	size_t nlat = 0, cap = 0;
	long creates = 0, unlinks = 0, errors = 0, next = 0, oldest = 0;
	int files;
	char p[4096];

	if (argc < 3) {
		fprintf(stderr, "usage: %s DIR SECONDS [FILES]\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	secs = atof(argv[2]);
	files = argc > 3 ? atoi(argv[3]) : 16;
	if (files < 1)
		files = 1;
	t0 = now_s();
	end = t0 + secs;
	while (now_s() < end) {
		double a = now_s();
		int fd;

		if (next - oldest >= files) {
			snprintf(p, sizeof(p), "%s/churn.%ld", dir, oldest++);
			if (unlink(p) < 0) {
				fprintf(stderr, "unlink %s: %s\n", p, strerror(errno));
				errors++;
			} else {
				unlinks++;
			}
		} else {
			snprintf(p, sizeof(p), "%s/churn.%ld", dir, next++);
			fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
			if (fd < 0) {
				fprintf(stderr, "create %s: %s\n", p, strerror(errno));
				errors++;
			} else {
				close(fd);
				creates++;
			}
		}
		if (nlat == cap) {
			double *nl = realloc(lat, (cap = cap ? cap * 2 : 4096) * sizeof(*nl));

			if (!nl)
				return 1;
			lat = nl;
		}
		lat[nlat++] = now_s() - a;
	}
	/* leave the directory as it was */
	while (oldest < next) {
		snprintf(p, sizeof(p), "%s/churn.%ld", dir, oldest++);
		unlink(p);
	}
	qsort(lat, nlat, sizeof(*lat), cmp);
	secs = now_s() - t0;
	printf("RESULT op=churn secs=%.2f creates=%ld unlinks=%ld ops_s=%.0f p50_us=%.1f p99_us=%.1f errors=%ld\n",
	       secs, creates, unlinks, (creates + unlinks) / secs, nlat ? lat[nlat / 2] * 1e6 : 0,
	       nlat ? lat[nlat * 99 / 100] * 1e6 : 0, errors);
	free(lat);
	return errors ? 1 : 0;
}
