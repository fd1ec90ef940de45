/* test_io.c - common/io.h: whole reads and writes, early end of file, deadlines. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/io.h"
#include "common/time.h"

#define SUITE "io"
#include "test_tmpdir.h"

#define BIG (1u << 20)   /* more than a pipe or socket buffer holds: short transfers happen */

struct feeder {
	int fd;
	const unsigned char *buf;
	size_t len;
	bool sock;
	int r;
};

static void *feed(void *arg)
{
	struct feeder *f = arg;

	f->r = f->sock ? io_send_all(f->fd, f->buf, f->len) : io_write_all(f->fd, f->buf, f->len);
	return NULL;
}

static unsigned char *pattern(size_t len)
{
	unsigned char *p = malloc(len);

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 7 + 3);
	return p;
}

START_TEST(test_pipe_round_trip)
{
	unsigned char *out = pattern(BIG), *in = malloc(BIG);
	struct feeder f;
	pthread_t th;
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	f = (struct feeder){ .fd = p[1], .buf = out, .len = BIG };
	ck_assert_int_eq(pthread_create(&th, NULL, feed, &f), 0);
	ck_assert_int_eq(io_read_all(p[0], in, BIG), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(f.r, 0);
	ck_assert(memcmp(in, out, BIG) == 0);
	close(p[0]);
	close(p[1]);
	free(in);
	free(out);
}
END_TEST

START_TEST(test_read_early_eof)
{
	char buf[16];
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(io_write_all(p[1], "abc", 3), 0);
	close(p[1]);
	ck_assert_int_eq(io_read_all(p[0], buf, sizeof(buf)), -EPIPE);
	close(p[0]);
}
END_TEST

START_TEST(test_write_closed_pipe)
{
	int p[2];

	signal(SIGPIPE, SIG_IGN);   /* write(2) raises it; the caller decides */
	ck_assert_int_eq(pipe(p), 0);
	close(p[0]);
	ck_assert_int_eq(io_write_all(p[1], "abc", 3), -EPIPE);
	close(p[1]);
}
END_TEST

START_TEST(test_send_closed_peer_no_signal)
{
	int sv[2];

	/* SIGPIPE left at its default: MSG_NOSIGNAL must keep the process alive */
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[1]);
	ck_assert_int_eq(io_send_all(sv[0], "abc", 3), -EPIPE);
	close(sv[0]);
}
END_TEST

START_TEST(test_socket_round_trip_deadline)
{
	unsigned char *out = pattern(BIG), *in = malloc(BIG);
	struct feeder f;
	pthread_t th;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	f = (struct feeder){ .fd = sv[1], .buf = out, .len = BIG, .sock = true };
	ck_assert_int_eq(pthread_create(&th, NULL, feed, &f), 0);
	/* a generous deadline: the data arrives, in pieces */
	ck_assert_int_eq(io_recv_all_deadline(sv[0], in, BIG, now_mono_ns() + 60ull * 1000000000), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(f.r, 0);
	ck_assert(memcmp(in, out, BIG) == 0);
	ck_assert_int_eq(io_send_all_deadline(sv[0], "x", 1, now_mono_ns() + 60ull * 1000000000), 0);
	ck_assert_int_eq(io_recv_all_deadline(sv[1], in, 1, now_mono_ns() + 60ull * 1000000000), 0);
	ck_assert_int_eq(in[0], 'x');
	close(sv[0]);
	close(sv[1]);
	free(in);
	free(out);
}
END_TEST

START_TEST(test_deadline_passes)
{
	char c;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	/* nothing is ever sent: the receive gives up at its (already passed or near) deadline */
	ck_assert_int_eq(io_recv_all_deadline(sv[0], &c, 1, now_mono_ns()), -ETIMEDOUT);
	ck_assert_int_eq(io_recv_all_deadline(sv[0], &c, 1, now_mono_ns() + 10 * 1000000), -ETIMEDOUT);
	close(sv[1]);
	ck_assert_int_eq(io_recv_all_deadline(sv[0], &c, 1, now_mono_ns() + 60ull * 1000000000), -EPIPE);
	close(sv[0]);
}
END_TEST

START_TEST(test_pwrite_all)
{
	char path[300], back[8];
	int fd;

	snprintf(path, sizeof(path), "%s/pwrite", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(io_pwrite_all(fd, "world", 5, 6), 0);
	ck_assert_int_eq(io_pwrite_all(fd, "hello ", 6, 0), 0);
	ck_assert_int_eq(pread(fd, back, 5, 6), 5);
	ck_assert(memcmp(back, "world", 5) == 0);
	ck_assert_int_eq(io_pwrite_all(-1, "x", 1, 0), -EBADF);
	close(fd);
}
END_TEST

int main(void)
{
	TCase *tc = tcase_create("io");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_pipe_round_trip);
	tcase_add_test(tc, test_read_early_eof);
	tcase_add_test(tc, test_write_closed_pipe);
	tcase_add_test(tc, test_send_closed_peer_no_signal);
	tcase_add_test(tc, test_socket_round_trip_deadline);
	tcase_add_test(tc, test_deadline_passes);
	tcase_add_test(tc, test_pwrite_all);
	return tmpdir_run("io", tc);
}
