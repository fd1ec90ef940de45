/*
 * latency_proxy - a TCP proxy on 127.0.0.1 that delays each direction of
 * every connection by a fixed time, to put a round-trip time between a
 * benchmark client and a server on the same machine.
 *
 *   latency_proxy --target PORT [--delay-ms MS] [--listen PORT] [--port-file F]
 *
 * --delay-ms is the one-way delay (default 5: 10 ms of round trip).  Every
 * chunk read from one side is written to the other side no earlier than
 * MS after it was read, in order; throughput is not limited.  Listens on
 * 127.0.0.1 (port 0: ephemeral, written to --port-file and stdout) and
 * connects only to 127.0.0.1:PORT.  Runs until killed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t delay_ns = 5000000;
static int target_port;

struct chunk {
	struct chunk *next;
	uint64_t due;
	size_t len;
	uint8_t data[];
};

struct pipe_dir {
	int from, to;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	struct chunk *head, *tail;
	int eof;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { .tv_sec = (time_t)(t / 1000000000ull), .tv_nsec = (long)(t % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void *reader(void *arg)
{
	struct pipe_dir *d = arg;
	uint8_t buf[65536];

	for (;;) {
		ssize_t n = read(d->from, buf, sizeof(buf));
		struct chunk *c;

		if (n <= 0)
			break;
		c = malloc(sizeof(*c) + (size_t)n);
		if (!c)
			break;
		c->next = NULL;
		c->due = now_ns() + delay_ns;
		c->len = (size_t)n;
		memcpy(c->data, buf, (size_t)n);
		pthread_mutex_lock(&d->lock);
		if (d->tail)
			d->tail->next = c;
		else
			d->head = c;
		d->tail = c;
		pthread_cond_signal(&d->cv);
		pthread_mutex_unlock(&d->lock);
	}
	pthread_mutex_lock(&d->lock);
	d->eof = 1;
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

static void *writer(void *arg)
{
	struct pipe_dir *d = arg;
	int ok = 1;

	for (;;) {
		struct chunk *c;

		pthread_mutex_lock(&d->lock);
		while (!d->head && !d->eof)
			pthread_cond_wait(&d->cv, &d->lock);
		c = d->head;
		if (c) {
			d->head = c->next;
			if (!d->head)
				d->tail = NULL;
		}
		pthread_mutex_unlock(&d->lock);
		if (!c)
			break;
		sleep_until(c->due);
		for (size_t off = 0; ok && off < c->len;) {
			ssize_t n = write(d->to, c->data + off, c->len - off);

			if (n <= 0)
				ok = 0;
			else
				off += (size_t)n;
		}
		free(c);
	}
	shutdown(d->to, SHUT_WR);
	return NULL;
}

struct conn {
	struct pipe_dir up, down;
	pthread_t t[4];
	int a, b;
};

static void *conn_main(void *arg)
{
	struct conn *c = arg;

	pthread_create(&c->t[0], NULL, reader, &c->up);
	pthread_create(&c->t[1], NULL, writer, &c->up);
	pthread_create(&c->t[2], NULL, reader, &c->down);
	pthread_create(&c->t[3], NULL, writer, &c->down);
	for (int i = 0; i < 4; i++)
		pthread_join(c->t[i], NULL);
	close(c->a);
	close(c->b);
	free(c);
	return NULL;
}

static void dir_init(struct pipe_dir *d, int from, int to)
{
	memset(d, 0, sizeof(*d));
	d->from = from;
	d->to = to;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cv, NULL);
}

int main(int argc, char **argv)
{
	int listen_port = 0, one = 1, ls;
	const char *port_file = NULL;
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--target") && i + 1 < argc)
			target_port = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--delay-ms") && i + 1 < argc)
			delay_ns = (uint64_t)(atof(argv[++i]) * 1e6);
		else if (!strcmp(argv[i], "--listen") && i + 1 < argc)
			listen_port = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--port-file") && i + 1 < argc)
			port_file = argv[++i];
		else {
			fprintf(stderr, "usage: %s --target PORT [--delay-ms MS (one way, default 5)] [--listen PORT] "
				"[--port-file FILE]\n", argv[0]);
			return 2;
		}
	}
	if (target_port <= 0 || target_port > 65535) {
		fprintf(stderr, "latency_proxy: --target PORT is required\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)listen_port);
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 64) ||
	    getsockname(ls, (struct sockaddr *)&sa, &sl)) {
		perror("latency_proxy: listen");
		return 1;
	}
	printf("%d\n", ntohs(sa.sin_port));
	fflush(stdout);
	if (port_file) {
		FILE *f = fopen(port_file, "w");

		if (f) {
			fprintf(f, "%d\n", ntohs(sa.sin_port));
			fclose(f);
		}
	}
	for (;;) {
		int a = accept(ls, NULL, NULL), b;
		struct sockaddr_in t;
		struct conn *c;
		pthread_t th;

		if (a < 0)
			continue;
		b = socket(AF_INET, SOCK_STREAM, 0);
		memset(&t, 0, sizeof(t));
		t.sin_family = AF_INET;
		t.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		t.sin_port = htons((uint16_t)target_port);
		if (connect(b, (struct sockaddr *)&t, sizeof(t))) {
			close(a);
			close(b);
			continue;
		}
		setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = calloc(1, sizeof(*c));
		c->a = a;
		c->b = b;
		dir_init(&c->up, a, b);
		dir_init(&c->down, b, a);
		pthread_create(&th, NULL, conn_main, c);
		pthread_detach(th);
	}
}
