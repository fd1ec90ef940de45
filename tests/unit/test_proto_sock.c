/*
 * test_proto_sock.c - mdsp_send()/mdsp_recv() over a socketpair: whole
 * frames back to back, a frame larger than the socket buffer, timeouts, a
 * peer that closes or stalls mid-frame, garbage, and no SIGPIPE.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mds_proto/proto.h"
#include "proto_samples.h"

static int sv[2];

static void setup(void)
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
}

static void teardown(void)
{
	close(sv[0]);
	close(sv[1]);
}

START_TEST(test_frames_back_to_back)
{
	struct mdsp_msg s[64], d;
	struct mdsp_buf b;
	const char *why;
	int i, n = sample_all_small(s);

	mdsp_buf_init(&b);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(mdsp_encode(&b, &s[i]), 0);
	ck_assert_uint_lt(b.len, 100000);       /* fits the socket buffer */
	ck_assert_int_eq(mdsp_send(sv[0], &b), 0);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(mdsp_recv(sv[1], &d, 1000, &why), 0);
		ck_assert(msg_eq(&s[i], &d));
		mdsp_msg_free(&d);
		mdsp_msg_free(&s[i]);
	}
	/* nothing more: a timeout, and the connection is still usable */
	ck_assert_int_eq(mdsp_recv(sv[1], &d, 20, &why), -ETIMEDOUT);
	ck_assert_int_eq(mdsp_send(sv[0], &b), 0);
	ck_assert_int_eq(mdsp_recv(sv[1], &d, 1000, &why), 0);
	mdsp_msg_free(&d);
	mdsp_buf_free(&b);
}
END_TEST

struct sender {
	int fd;
	struct mdsp_buf *b;
	int r;
};

static void *send_thread(void *arg)
{
	struct sender *st = arg;

	st->r = mdsp_send(st->fd, st->b);
	return NULL;
}

START_TEST(test_large_frame)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	struct sender st;
	pthread_t t;

	sample_reply(&m, MDSP_READDIR_MAX, MDSP_NAME_MAX, MDSP_XATTR_SIZE_MAX);
	mdsp_buf_init(&b);
	ck_assert_int_eq(mdsp_encode(&b, &m), 0);
	ck_assert_uint_gt(b.len, 1u << 20);
	st = (struct sender){ .fd = sv[0], .b = &b };
	ck_assert_int_eq(pthread_create(&t, NULL, send_thread, &st), 0);
	ck_assert_int_eq(mdsp_recv(sv[1], &d, 5000, NULL), 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(st.r, 0);
	ck_assert(msg_eq(&m, &d));
	mdsp_msg_free(&d);
	mdsp_msg_free(&m);
	mdsp_buf_free(&b);
}
END_TEST

START_TEST(test_peer_closes)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	const char *why;

	sample_caps(&m, MDSP_CAPS_REVOKE);
	mdsp_buf_init(&b);
	ck_assert_int_eq(mdsp_encode(&b, &m), 0);
	/* half a frame, then the peer goes away */
	ck_assert_int_eq(write(sv[0], b.data, b.len / 2), (ssize_t)(b.len / 2));
	close(sv[0]);
	sv[0] = -1;
	ck_assert_int_eq(mdsp_recv(sv[1], &d, 1000, &why), -ECONNRESET);
	ck_assert_str_eq(why, "peer closed the connection mid-frame");
	ck_assert_int_eq(mdsp_recv(sv[1], &d, 1000, &why), -ECONNRESET);
	ck_assert_str_eq(why, "peer closed the connection");
	/* sending to a closed peer is an error, not a SIGPIPE */
	ck_assert_int_eq(mdsp_send(sv[1], &b), -EPIPE);
	mdsp_buf_free(&b);
}
END_TEST

START_TEST(test_peer_stalls_mid_frame)
{
	struct mdsp_msg m, d;
	struct mdsp_buf b;
	const char *why;

	sample_caps(&m, MDSP_CAPS_REVOKE);
	mdsp_buf_init(&b);
	ck_assert_int_eq(mdsp_encode(&b, &m), 0);
	ck_assert_int_eq(write(sv[0], b.data, 10), 10);
	ck_assert_int_eq(mdsp_recv(sv[1], &d, 30, &why), -ECONNABORTED);
	ck_assert_str_eq(why, "peer stalled in the middle of a frame");
	mdsp_buf_free(&b);
}
END_TEST

START_TEST(test_garbage)
{
	struct mdsp_msg d;
	const char *why = NULL;
	uint8_t junk[MDSP_HDR_LEN];

	memset(junk, 'x', sizeof(junk));
	ck_assert_int_eq(write(sv[0], junk, sizeof(junk)), (ssize_t)sizeof(junk));
	ck_assert_int_eq(mdsp_recv(sv[1], &d, 1000, &why), -EBADMSG);
	ck_assert_str_eq(why, "bad magic");
}
END_TEST

static Suite *proto_sock_suite(void)
{
	Suite *s = suite_create("proto_sock");
	TCase *tc = tcase_create("sock");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_frames_back_to_back);
	tcase_add_test(tc, test_large_frame);
	tcase_add_test(tc, test_peer_closes);
	tcase_add_test(tc, test_peer_stalls_mid_frame);
	tcase_add_test(tc, test_garbage);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(proto_sock_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
