/*
 * dirsync.c - what an fsync of a directory costs while other files are
 * dirty (issue 24): N files opened in DIR, SIZE bytes written to each and
 * left open (buffered, not synced), then K fsyncs of an empty directory
 * DIR/empty timed one by one; then the same K fsyncs with nothing dirty
 * (every file fsync'd and closed).  Prints the median and the max of each.
 *
 *   dirsync DIR [N] [SIZE] [K]     (defaults 900 files, 12 KiB, 20 fsyncs)
 *
 * An fsync of a directory promises its own entries, not other files' data:
 * the two medians should be the same within noise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* K fsyncs of @dir, their median and max in *@med and *@max (seconds) */
static int time_fsyncs(const char *dir, int k, double *med, double *max)
{
	double *t = calloc((size_t)k, sizeof(*t));
	int fd = open(dir, O_RDONLY | O_DIRECTORY);

	if (!t || fd < 0) {
		fprintf(stderr, "dirsync: open %s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (int i = 0; i < k; i++) {
		double t0 = now();

		if (fsync(fd) < 0) {
			fprintf(stderr, "dirsync: fsync %s: %s\n", dir, strerror(errno));
			return -1;
		}
		t[i] = now() - t0;
	}
	close(fd);
	qsort(t, (size_t)k, sizeof(*t), cmp);
	*med = t[k / 2];
	*max = t[k - 1];
	free(t);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : NULL;
	int n = argc > 2 ? atoi(argv[2]) : 900, k = argc > 4 ? atoi(argv[4]) : 20;
	size_t size = argc > 3 ? (size_t)atol(argv[3]) : 12288;
	char path[4096], *buf;
	double busy_med, busy_max, idle_med, idle_max;
	int *fds;

	if (!dir || n <= 0 || k <= 0 || !size) {
		fprintf(stderr, "usage: dirsync DIR [N] [SIZE] [K]\n");
		return 2;
	}
	fds = calloc((size_t)n, sizeof(*fds));
	buf = malloc(size);
	if (!fds || !buf)
		return 1;
	memset(buf, 'd', size);
	snprintf(path, sizeof(path), "%s/empty", dir);
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "dirsync: mkdir %s: %s\n", path, strerror(errno));
		return 1;
	}
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%d", dir, i);
		fds[i] = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
		if (fds[i] < 0 || write(fds[i], buf, size) != (ssize_t)size) {
			fprintf(stderr, "dirsync: %s: %s\n", path, strerror(errno));
			return 1;
		}
	}
	snprintf(path, sizeof(path), "%s/empty", dir);
	if (time_fsyncs(path, k, &busy_med, &busy_max))
		return 1;
	for (int i = 0; i < n; i++) {
		fsync(fds[i]);
		close(fds[i]);
	}
	if (time_fsyncs(path, k, &idle_med, &idle_max))
		return 1;
	/* microseconds: ext4 answers in well under one */
	printf("dirsync: fsync of an empty directory with %d files of %zu bytes dirty: median %.2f us, max %.2f us;"
	       " with none dirty: median %.2f us, max %.2f us\n", n, size, busy_med * 1e6, busy_max * 1e6,
	       idle_med * 1e6, idle_max * 1e6);
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%d", dir, i);
		unlink(path);
	}
	return 0;
}
