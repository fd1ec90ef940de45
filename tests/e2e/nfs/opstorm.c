/*
 * opstorm.c - one open-owner and one lock-owner busy on many files at once:
 * for the NFS e2e guest (built static, shipped with KCLIENT_FILES).
 *
 *   opstorm DIR THREADS ROUNDS
 *
 * THREADS threads of this one process (one credential: one open-owner in
 * the Linux client; one files_struct: one POSIX lock-owner) each open,
 * write-lock, write, unlock and close a file of their own ROUNDS times, at
 * the same time, so the client sends OPEN, LOCK, LOCKU and CLOSE of one
 * owner concurrently.  Under NFSv4.1 none of them may wait for another on
 * an owner seqid (the driver checks the gateway's seqid_waits counter in
 * `perf dump` afterwards).  Exit 0 when every call succeeded.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dir;
static int rounds;
static int failures;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char *what, int i)
{
	pthread_mutex_lock(&mu);
	fprintf(stderr, "opstorm: thread %d: %s: %s\n", i, what, strerror(errno));
	failures++;
	pthread_mutex_unlock(&mu);
}

static void *worker(void *arg)
{
	int i = (int)(long)arg;
	char path[512];

	snprintf(path, sizeof(path), "%s/storm%d", dir, i);
	for (int r = 0; r < rounds; r++) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
		int fd = open(path, O_RDWR | O_CREAT, 0644);

		if (fd < 0) {
			fail("open", i);
			return NULL;
		}
		if (fcntl(fd, F_SETLKW, &fl) < 0)
			fail("lock", i);
		if (write(fd, "x", 1) != 1)
			fail("write", i);
		fl.l_type = F_UNLCK;
		if (fcntl(fd, F_SETLK, &fl) < 0)
			fail("unlock", i);
		if (close(fd) < 0)
			fail("close", i);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[64];
	int n;

	if (argc != 4) {
		fprintf(stderr, "usage: opstorm DIR THREADS ROUNDS\n");
		return 2;
	}
	dir = argv[1];
	n = atoi(argv[2]);
	rounds = atoi(argv[3]);
	if (n < 1 || n > 64 || rounds < 1)
		return 2;
	for (long i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i))
			return 2;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	if (failures)
		return 1;
	printf("opstorm: ok\n");
	return 0;
}
