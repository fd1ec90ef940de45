/*
 * heldopen.c - a file removed by someone else while this guest holds it
 * open stays usable until the last close (RFC 7530 9.10, POSIX unlink):
 * for the NFS e2e guest (built static, shipped with KCLIENT_FILES).
 *
 *   heldopen PATH REQFILE WORD
 *
 * Creates PATH and writes to it, prints "HELD READY", then waits until
 * REQFILE reads WORD (the driver removed PATH through the FUSE mount
 * meanwhile).  Then, through the descriptor it still holds: overwrites the
 * data (within the old size: growing an unlinked file needs the MDS's
 * orphan list as well), fsync()s (WRITE and COMMIT must reach the gateway,
 * whose handle resolves although the MDS no longer finds the inode),
 * drops the page cache and pread()s it back from the server (READ),
 * fstat()s it (GETATTR) and closes it (CLOSE).  Exit 0 when all of it
 * works; the failing step is printed otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHECK(c, ...)                                                                  \
	do {                                                                           \
		if (!(c)) {                                                            \
			fprintf(stderr, "heldopen: FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                                  \
			fprintf(stderr, " (errno %s)\n", strerror(errno));             \
			exit(1);                                                       \
		}                                                                      \
	} while (0)

static int req_is(const char *req, const char *word)
{
	char b[64];
	ssize_t n;
	int fd = open(req, O_RDONLY);

	if (fd < 0)
		return 0;
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	b[n] = 0;
	if (n > 0 && b[n - 1] == '\n')
		b[n - 1] = 0;
	return strcmp(b, word) == 0;
}

int main(int argc, char **argv)
{
	char buf[64];
	struct stat sb;
	int fd, i;

	if (argc != 4) {
		fprintf(stderr, "usage: heldopen PATH REQFILE WORD\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0, "open %s", argv[1]);
	CHECK(write(fd, "first data\n", 11) == 11, "write");
	CHECK(fsync(fd) == 0, "fsync before the removal");
	printf("HELD READY\n");
	fflush(stdout);
	for (i = 0; !req_is(argv[2], argv[3]); i++) {
		CHECK(i < 600, "the driver never wrote '%s' into %s", argv[3], argv[2]);
		usleep(100000);
	}
	CHECK(access(argv[1], F_OK) < 0 && errno == ENOENT, "%s is still there", argv[1]);
	CHECK(pwrite(fd, "later data\n", 11, 0) == 11, "write after the removal");
	CHECK(fsync(fd) == 0, "fsync after the removal");
	{
		int dc = open("/proc/sys/vm/drop_caches", O_WRONLY);

		if (dc >= 0) {
			CHECK(write(dc, "3\n", 2) == 2, "drop caches");
			close(dc);
		}
	}
	memset(buf, 0, sizeof(buf));
	CHECK(pread(fd, buf, sizeof(buf) - 1, 0) == 11, "read after the removal: '%s'", buf);
	CHECK(strcmp(buf, "later data\n") == 0, "read after the removal: '%s'", buf);
	CHECK(fstat(fd, &sb) == 0 && sb.st_size == 11, "fstat after the removal: size %lld", (long long)sb.st_size);
	CHECK(close(fd) == 0, "close after the removal");
	printf("heldopen: ok\n");
	return 0;
}
