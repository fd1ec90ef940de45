/*
 * lockwriter.c - the guest side of the gateway kill -9 measurement
 * (run-nfs-kill9.sh; built static, shipped with KCLIENT_FILES).
 *
 *   lockwriter FILE REQ
 *
 * Takes an fcntl write lock on all of FILE over NFS and writes a 64-byte
 * record every 100 ms (pwrite + fsync: each one reaches the gateway).
 * After 10 records it writes "kill" into REQ (a file the driver watches
 * through its FUSE mount) and goes on writing while the driver kills the
 * gateway with SIGKILL and starts it again; the writes block meanwhile
 * (hard mount).  Once REQ says "restarted" and 20 more records are written,
 * it reports and releases the lock.
 *
 * A child process (another lock-owner of the same NFS client: the
 * gateway and the MDS arbitrate between the two) tries F_SETLK on the
 * same file all along; it must never be granted before the writer's
 * unlock, and must be after it.
 *
 * Prints "KILL9 ..." lines: the longest stall between two records (from
 * the kill: the time the gateway was away, the client's reconnect and
 * reclaim, the grace) in ms, and the outcome.  Exit 0 when the lock held
 * throughout (every write succeeded: a lost lock makes the Linux client
 * fail them with EIO), the data reads back, and the child was never
 * granted the lock early.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int setlk(int fd, int cmd, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };

	return fcntl(fd, cmd, &fl);
}

static int req_says(const char *req, const char *word)
{
	char buf[64] = "";
	int fd = open(req, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return strncmp(buf, word, strlen(word)) == 0;
}

static void put_req(const char *req, const char *word)
{
	int fd = open(req, O_WRONLY | O_CREAT | O_TRUNC, 0666);

	if (fd < 0 || write(fd, word, strlen(word)) < 0) {
		printf("KILL9 FAIL cannot write %s: %s\n", req, strerror(errno));
		exit(1);
	}
	close(fd);
}

/* The other lock-owner: F_SETLK until granted; granted before @released exists is a failure. */
static int prober(const char *file, const char *released)
{
	unsigned long tries = 0, refused = 0;
	int fd = open(file, O_RDWR);

	if (fd < 0)
		return 2;
	for (;;) {
		int rel = access(released, F_OK) == 0;
		int r = setlk(fd, F_SETLK, F_WRLCK);

		tries++;
		if (r == 0) {
			if (!rel) {
				printf("KILL9 FAIL the other lock-owner was granted the lock while the writer held it "
				       "(after %lu refusals)\n", refused);
				fflush(stdout);
				return 1;
			}
			printf("KILL9 PROBE granted only after the writer's unlock (%lu refusals)\n", refused);
			fflush(stdout);
			setlk(fd, F_SETLK, F_UNLCK);
			return 0;
		}
		if (errno != EAGAIN && errno != EACCES)
			printf("KILL9 PROBE F_SETLK: %s\n", strerror(errno));
		refused++;
		usleep(200000);
	}
}

int main(int argc, char **argv)
{
	char rec[64], released[4096];
	uint64_t last, gap, maxgap = 0, t_kill = 0, t_first_after = 0;
	int fd, i, after = -1, bad = 0, st;
	pid_t child;

	if (argc != 3) {
		fprintf(stderr, "usage: lockwriter FILE REQ\n");
		return 2;
	}
	snprintf(released, sizeof(released), "%s.released", argv[1]);
	unlink(released);
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0666);
	if (fd < 0 || setlk(fd, F_SETLKW, F_WRLCK) < 0) {
		printf("KILL9 FAIL open/lock %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	printf("KILL9 LOCKED\n");
	fflush(stdout);
	child = fork();
	if (child == 0)
		_exit(prober(argv[1], released));
	last = now_ms();
	for (i = 0;; i++) {
		uint64_t t;

		snprintf(rec, sizeof(rec), "record %08d%*s\n", i, (int)(sizeof(rec) - 17 - 1), "");
		if (pwrite(fd, rec, 63, (off_t)i * 63) != 63 || fsync(fd) < 0) {
			printf("KILL9 FAIL write %d: %s (the lock was lost)\n", i, strerror(errno));
			bad = 1;
			break;
		}
		t = now_ms();
		gap = t - last;
		if (gap > maxgap)
			maxgap = gap;
		if (t_kill && !t_first_after && gap > 1000)
			t_first_after = t;   /* the first record after the stall */
		last = t;
		if (i == 10) {
			put_req(argv[2], "kill");
			t_kill = now_ms();
			printf("KILL9 ASKED at record 10\n");
			fflush(stdout);
		}
		if (after < 0 && t_kill && req_says(argv[2], "restarted"))
			after = i;
		if (after >= 0 && i >= after + 20)
			break;
		if (i > 100000) {
			printf("KILL9 FAIL the driver never said restarted\n");
			bad = 1;
			break;
		}
		usleep(100000);
	}
	if (!bad) {
		/* every record reads back */
		char back[64];

		for (int j = 0; j <= i; j++) {
			snprintf(rec, sizeof(rec), "record %08d%*s\n", j, (int)(sizeof(rec) - 17 - 1), "");
			if (pread(fd, back, 63, (off_t)j * 63) != 63 || memcmp(back, rec, 63)) {
				printf("KILL9 FAIL record %d does not read back\n", j);
				bad = 1;
				break;
			}
		}
	}
	printf("KILL9 RESULT records=%d longest_stall_ms=%llu kill_to_resumed_ms=%llu\n", i + 1,
	       (unsigned long long)maxgap, (unsigned long long)(t_first_after ? t_first_after - t_kill : 0));
	fflush(stdout);
	/* the marker first: a grant the prober sees before it happened while we held the lock */
	close(open(released, O_WRONLY | O_CREAT, 0666));
	setlk(fd, F_SETLK, F_UNLCK);
	if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		bad = 1;
	close(fd);
	unlink(released);
	if (!bad)
		printf("KILL9 OK\n");
	return bad;
}
