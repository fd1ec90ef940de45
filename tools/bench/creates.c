/*
 * creates - file creates per second from one thread, the way an untar makes
 * its small files (issue 13.3: tools/bench/run-untar.sh, docs/BENCHMARKS.md).
 *
 *   creates [--untar] DIR N
 *   creates --unlink DIR N
 *
 * Makes N new files DIR/c.0 .. c.N-1, one after the other, each with
 * openat(O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600) + close.  With --untar,
 * each file also gets what GNU tar -x does as root between the two: a write
 * of 1-4 KiB (1024 + 1031 * i % 3073 bytes), futimens(fd, {omit, mtime})
 * , fchown(fd, uid, gid) and fchmod(fd, 0644).  DIR must exist and
 * not hold c.* names.  --unlink removes DIR/c.0 .. c.N-1 again (unlinkat, in
 * creation order).  The last line is
 *   RESULT op=create|untar|unlink n=N secs=S ops_s=R p50_us=.. p99_us=.. max_us=..
 * (an op is one file's whole sequence).  Exit 1 at the first failing call,
 * with its name and errno on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static void result(const char *op, long n, double secs, double *lat)
{
	qsort(lat, (size_t)n, sizeof(*lat), cmp);
	printf("RESULT op=%s n=%ld secs=%.3f ops_s=%.0f p50_us=%.1f p99_us=%.1f max_us=%.1f\n", op, n, secs,
	       secs > 0 ? n / secs : 0, n ? lat[n / 2] * 1e6 : 0, n ? lat[n * 99 / 100] * 1e6 : 0,
	       n ? lat[n - 1] * 1e6 : 0);
	fflush(stdout);
}

static int fail(const char *what, long i)
{
	fprintf(stderr, "creates: %s of c.%ld: %s\n", what, i, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	static char data[4096];
	bool untar = false, unlink_too = false;
	const char *dir;
	double t0, *lat;
	long n;
	int dfd, a = 1;
	char name[32];

	for (; a < argc && argv[a][0] == '-'; a++) {
		if (!strcmp(argv[a], "--untar"))
			untar = true;
		else if (!strcmp(argv[a], "--unlink"))
			unlink_too = true;
		else
			break;
	}
	if (argc - a != 2 || (n = atol(argv[a + 1])) <= 0 || (untar && unlink_too)) {
		fprintf(stderr, "usage: %s [--untar] DIR N   (makes N >= 1 files DIR/c.I)\n"
				"       %s --unlink DIR N    (removes them)\n", argv[0], argv[0]);
		return 2;
	}
	dir = argv[a];
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		fprintf(stderr, "creates: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	lat = calloc((size_t)n, sizeof(*lat));
	if (!lat)
		return 1;
	for (size_t k = 0; k < sizeof(data); k++)
		data[k] = (char)('a' + k % 26);

	if (unlink_too) {
		t0 = now_s();
		for (long i = 0; i < n; i++) {
			double s = now_s();

			snprintf(name, sizeof(name), "c.%ld", i);
			if (unlinkat(dfd, name, 0) < 0)
				return fail("unlinkat", i);
			lat[i] = now_s() - s;
		}
		result("unlink", n, now_s() - t0, lat);
		goto out;
	}
	t0 = now_s();
	for (long i = 0; i < n; i++) {
		double s = now_s();
		int fd;

		snprintf(name, sizeof(name), "c.%ld", i);
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			return fail("openat(O_CREAT|O_EXCL)", i);
		if (untar) {
			size_t len = 1024 + (size_t)(1031 * i % 3073);
			struct timespec ts[2] = {{0, UTIME_OMIT}, {1700000000 + i, 0}};

			if (write(fd, data, len) != (ssize_t)len)
				return fail("write", i);
			if (futimens(fd, ts) < 0)
				return fail("futimens", i);
			if (fchown(fd, getuid(), getgid()) < 0)
				return fail("fchown", i);
			if (fchmod(fd, 0644) < 0)
				return fail("fchmod", i);
		}
		if (close(fd) < 0)
			return fail("close", i);
		lat[i] = now_s() - s;
	}
	result(untar ? "untar" : "create", n, now_s() - t0, lat);

out:
	free(lat);
	close(dfd);
	return 0;
}
