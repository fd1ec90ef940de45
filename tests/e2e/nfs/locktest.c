/*
 * locktest.c - O_EXCL create, fcntl and flock checks for the NFS e2e
 * guest (built static, shipped with KCLIENT_FILES).  A child process holds a lock; the
 * parent must see the conflict (F_GETLK names the child, F_SETLK fails,
 * LOCK_NB flock fails), and must get the lock once the child drops it.
 * Exit 0 when every check holds.
 *
 * Across clients (the driver runs it on the host's FUSE mount, the guest
 * over NFS, on the same file; the MDS arbitrates):
 *   locktest hold PATH START LEN READY RELEASE
 *       F_SETLK write START..+LEN (must be granted at once), create READY,
 *       wait (deadline 300 s) until RELEASE exists, F_UNLCK, exit 0
 *   locktest busy PATH START LEN
 *       F_SETLK write must fail with EAGAIN/EACCES and F_GETLK must report
 *       a write lock (someone else holds the range)
 *   locktest get PATH START LEN
 *       F_SETLK write must be granted at once (no retry: the other side's
 *       unlock has returned), then F_UNLCK
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(c, ...)                                                        \
	do {                                                                 \
		if (!(c)) {                                                  \
			fprintf(stderr, "locktest: FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                        \
			fprintf(stderr, " (errno %s)\n", strerror(errno));   \
			exit(1);                                             \
		}                                                            \
	} while (0)

static int setlk(int fd, int cmd, short type, off_t start, off_t len)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len };

	return fcntl(fd, cmd, &fl);
}

static int exists(const char *p)
{
	struct stat sb;

	return stat(p, &sb) == 0;
}

/* the cross-client modes (hold, busy, get); see the top comment */
static int xmode(int argc, char **argv)
{
	const char *mode = argv[1], *path = argv[2];
	off_t start, len;
	struct flock fl;
	int fd, i;

	CHECK(argc >= 5, "usage: locktest hold|busy|get PATH START LEN [READY RELEASE]");
	start = strtoll(argv[3], NULL, 10);
	len = strtoll(argv[4], NULL, 10);
	fd = open(path, O_RDWR);
	CHECK(fd >= 0, "open %s", path);
	if (!strcmp(mode, "hold")) {
		CHECK(argc == 7, "usage: locktest hold PATH START LEN READY RELEASE");
		CHECK(setlk(fd, F_SETLK, F_WRLCK, start, len) == 0, "hold: F_SETLK write %lld+%lld on %s",
		      (long long)start, (long long)len, path);
		i = open(argv[5], O_WRONLY | O_CREAT, 0644);
		CHECK(i >= 0, "create %s", argv[5]);
		close(i);
		printf("locktest: holding %s %lld+%lld\n", path, (long long)start, (long long)len);
		fflush(stdout);
		for (i = 0; !exists(argv[6]); i++) {
			CHECK(i < 300 * 50, "hold: %s never appeared (300 s)", argv[6]);
			usleep(20000);
		}
		CHECK(setlk(fd, F_SETLK, F_UNLCK, start, len) == 0, "hold: F_UNLCK");
		printf("locktest: released %s\n", path);
	} else if (!strcmp(mode, "busy")) {
		errno = 0;
		CHECK(setlk(fd, F_SETLK, F_WRLCK, start, len) < 0 && (errno == EAGAIN || errno == EACCES),
		      "busy: F_SETLK write %lld+%lld on %s was granted while another client holds it",
		      (long long)start, (long long)len, path);
		memset(&fl, 0, sizeof(fl));
		fl.l_type = F_WRLCK;
		fl.l_whence = SEEK_SET;
		fl.l_start = start;
		fl.l_len = len;
		CHECK(fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type == F_WRLCK,
		      "busy: F_GETLK does not report the other client's write lock (type %d)", fl.l_type);
		printf("locktest: busy %s %lld+%lld (F_SETLK refused, F_GETLK: write lock, pid %ld)\n", path,
		       (long long)start, (long long)len, (long)fl.l_pid);
	} else if (!strcmp(mode, "get")) {
		CHECK(setlk(fd, F_SETLK, F_WRLCK, start, len) == 0, "get: F_SETLK write %lld+%lld on %s after the other client unlocked",
		      (long long)start, (long long)len, path);
		CHECK(setlk(fd, F_SETLK, F_UNLCK, start, len) == 0, "get: F_UNLCK");
		printf("locktest: got %s %lld+%lld\n", path, (long long)start, (long long)len);
	} else {
		CHECK(0, "unknown mode %s (hold, busy, get)", mode);
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "lockfile";
	int fd, p2c[2], c2p[2];
	char b;
	pid_t pid;
	struct flock fl;

	if (argc > 1 && (!strcmp(argv[1], "hold") || !strcmp(argv[1], "busy") || !strcmp(argv[1], "get")))
		return xmode(argc, argv);
	/* exclusive create (EXCLUSIVE4_1 in 4.1, EXCLUSIVE4 in 4.0) */
	{
		char ex[512];
		struct stat sb;
		int efd;

		snprintf(ex, sizeof(ex), "%s.excl", path);
		efd = open(ex, O_WRONLY | O_CREAT | O_EXCL, 0600);
		CHECK(efd >= 0, "O_EXCL create %s", ex);
		CHECK(write(efd, "x", 1) == 1, "write to the O_EXCL file");
		close(efd);
		CHECK(stat(ex, &sb) == 0 && (sb.st_mode & 07777) == 0600 && sb.st_size == 1, "O_EXCL file mode %o size %lld",
		      sb.st_mode & 07777, (long long)sb.st_size);
		CHECK(open(ex, O_WRONLY | O_CREAT | O_EXCL, 0600) < 0 && errno == EEXIST, "second O_EXCL create must fail");
		CHECK(unlink(ex) == 0, "unlink %s", ex);
	}
	fd = open(path, O_RDWR | O_CREAT, 0644);
	CHECK(fd >= 0, "open %s", path);
	CHECK(write(fd, "0123456789", 10) == 10, "write");
	CHECK(pipe(p2c) == 0 && pipe(c2p) == 0, "pipe");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		int cfd = open(path, O_RDWR);

		CHECK(cfd >= 0, "child open");
		CHECK(setlk(cfd, F_SETLK, F_WRLCK, 0, 5) == 0, "child F_SETLK write 0-5");
		CHECK(write(c2p[1], "l", 1) == 1, "child signal");
		CHECK(read(p2c[0], &b, 1) == 1, "child wait");
		CHECK(setlk(cfd, F_SETLK, F_UNLCK, 0, 5) == 0, "child unlock");
		CHECK(write(c2p[1], "u", 1) == 1, "child signal 2");
		CHECK(read(p2c[0], &b, 1) == 1, "child wait 2");
		/* flock: whole-file lock */
		CHECK(flock(cfd, LOCK_EX) == 0, "child flock");
		CHECK(write(c2p[1], "f", 1) == 1, "child signal 3");
		CHECK(read(p2c[0], &b, 1) == 1, "child wait 3");
		CHECK(flock(cfd, LOCK_UN) == 0, "child funlock");
		CHECK(write(c2p[1], "g", 1) == 1, "child signal 4");
		close(cfd);
		_exit(0);
	}
	CHECK(read(c2p[0], &b, 1) == 1 && b == 'l', "parent wait lock");
	CHECK(setlk(fd, F_SETLK, F_WRLCK, 0, 5) < 0 && (errno == EAGAIN || errno == EACCES), "conflicting F_SETLK must fail");
	CHECK(setlk(fd, F_SETLK, F_WRLCK, 5, 5) == 0, "non-overlapping F_SETLK 5-10");
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = 0;
	fl.l_len = 1;
	CHECK(fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type == F_WRLCK, "F_GETLK sees the child's lock (type %d)", fl.l_type);
	CHECK(write(p2c[1], "x", 1) == 1, "parent signal");
	CHECK(read(c2p[0], &b, 1) == 1 && b == 'u', "parent wait unlock");
	CHECK(setlk(fd, F_SETLK, F_WRLCK, 0, 5) == 0, "F_SETLK after the child unlocked");
	CHECK(setlk(fd, F_SETLK, F_UNLCK, 0, 0) == 0, "unlock all");
	CHECK(write(p2c[1], "x", 1) == 1, "parent signal 2");
	CHECK(read(c2p[0], &b, 1) == 1 && b == 'f', "parent wait flock");
	{
		int fd2 = open(path, O_RDWR);

		CHECK(fd2 >= 0, "open 2");
		CHECK(flock(fd2, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK, "conflicting flock must fail");
		CHECK(write(p2c[1], "x", 1) == 1, "parent signal 3");
		CHECK(read(c2p[0], &b, 1) == 1 && b == 'g', "parent wait funlock");
		CHECK(flock(fd2, LOCK_EX | LOCK_NB) == 0, "flock after the child unlocked");
		CHECK(flock(fd2, LOCK_UN) == 0, "funlock");
		close(fd2);
	}
	CHECK(waitpid(pid, NULL, 0) == pid, "waitpid");
	close(fd);
	printf("locktest: ok\n");
	return 0;
}
