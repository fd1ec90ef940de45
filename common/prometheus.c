/*
 * prometheus.c - the perf registry (common/perf.c) as Prometheus text.
 *
 * Rendering walks the registry once (perf_visit(), under its lock, so it
 * only formats into a growing buffer).  Names are `loligo_<group>_<name>`
 * with every character outside [a-zA-Z0-9_] made '_'; a counter gets the
 * `_total` suffix, a histogram `_seconds` and its buckets.  Our histograms
 * are log-linear over nanoseconds with bucket edges on every power of two,
 * so the cumulative count below 2^k ns is exact (hist_count_below()):
 * those are the `le` bounds, from 2^10 ns (~1 us) to 2^36 ns (~69 s).
 *
 * The server is libmicrohttpd with its internal polling thread, bound to
 * one address (127.0.0.1 by default: metrics say a lot about a system),
 * GET only, at most 16 connections, each with a 10 s timeout.
 */
#include "common/prometheus.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/perf.h"

#define LE_MIN 10
#define LE_MAX 36

struct prom {
	struct MHD_Daemon *d;
	unsigned port;
	char daemon[128];
};

struct out {
	char *buf;
	size_t len, cap;
	bool oom;
	const char *daemon;
};

static void outf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->oom = true;
			return;
		}
		if ((size_t)n < o->cap - o->len) {
			o->len += (size_t)n;
			return;
		}
		size_t cap = o->cap * 2 + (size_t)n + 1;
		char *b = realloc(o->buf, cap);

		if (!b) {
			o->oom = true;
			return;
		}
		o->buf = b;
		o->cap = cap;
	}
}

static void metric_name(char *dst, size_t len, const char *group, const char *name, const char *suffix)
{
	size_t i;

	snprintf(dst, len, "loligo_%s_%s%s", group, name, suffix);
	for (i = 0; dst[i]; i++)
		if (!((dst[i] >= 'a' && dst[i] <= 'z') || (dst[i] >= 'A' && dst[i] <= 'Z') ||
		      (dst[i] >= '0' && dst[i] <= '9') || dst[i] == '_'))
			dst[i] = '_';
}

static void render_one(const struct perf_sample *s, void *arg)
{
	struct out *o = arg;
	char n[256];

	switch (s->type) {
	case PERF_COUNTER: {
		size_t l = strlen(s->name);
		bool has_total = l >= 6 && !strcmp(s->name + l - 6, "_total");

		metric_name(n, sizeof(n), s->group, s->name, has_total ? "" : "_total");
		outf(o, "# HELP %s loligo perf counter %s.%s\n# TYPE %s counter\n", n, s->group, s->name, n);
		outf(o, "%s{daemon=\"%s\"} %" PRIu64 "\n", n, o->daemon, s->value);
		break;
	}
	case PERF_GAUGE:
		metric_name(n, sizeof(n), s->group, s->name, "");
		outf(o, "# HELP %s loligo perf gauge %s.%s\n# TYPE %s gauge\n", n, s->group, s->name, n);
		outf(o, "%s{daemon=\"%s\"} %" PRIu64 "\n", n, o->daemon, s->value);
		break;
	case PERF_HISTOGRAM: {
		uint64_t count = atomic_load_explicit(&s->hist->count, memory_order_relaxed);
		uint64_t sum = atomic_load_explicit(&s->hist->sum, memory_order_relaxed);
		unsigned k;

		metric_name(n, sizeof(n), s->group, s->name, "_seconds");
		outf(o, "# HELP %s loligo latency histogram %s.%s\n# TYPE %s histogram\n", n, s->group, s->name, n);
		for (k = LE_MIN; k <= LE_MAX; k++) {
			uint64_t c = hist_count_below(s->hist, k);

			/* a snapshot taken while others record: keep it monotonic */
			if (c > count)
				c = count;
			outf(o, "%s_bucket{daemon=\"%s\",le=\"%.9g\"} %" PRIu64 "\n", n, o->daemon,
			     (double)(1ull << k) / 1e9, c);
		}
		outf(o, "%s_bucket{daemon=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", n, o->daemon, count);
		outf(o, "%s_sum{daemon=\"%s\"} %.9f\n", n, o->daemon, (double)sum / 1e9);
		outf(o, "%s_count{daemon=\"%s\"} %" PRIu64 "\n", n, o->daemon, count);
		break;
	}
	}
}

char *prom_render(const char *daemon, size_t *len)
{
	struct out o = { .cap = 65536, .daemon = daemon && *daemon ? daemon : "loligo" };

	o.buf = malloc(o.cap);
	if (!o.buf)
		return NULL;
	o.buf[0] = '\0';
	perf_visit(render_one, &o);
	if (o.oom) {
		free(o.buf);
		return NULL;
	}
	*len = o.len;
	return o.buf;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_len, void **ctx)
{
	static const char index[] = "loligo metrics: GET /metrics\n";
	static const char notfound[] = "not found: the metrics are at /metrics\n";
	static const char badmethod[] = "only GET\n";
	struct prom *p = cls;
	struct MHD_Response *resp;
	enum MHD_Result r;
	unsigned status = MHD_HTTP_OK;
	size_t len;
	char *body;

	(void)version;
	(void)upload;
	(void)upload_len;
	(void)ctx;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
		resp = MHD_create_response_from_buffer(sizeof(badmethod) - 1, (void *)badmethod, MHD_RESPMEM_PERSISTENT);
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (!strcmp(url, "/metrics")) {
		body = prom_render(p->daemon, &len);
		if (!body)
			return MHD_NO;
		resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
		if (resp)
			MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
						"text/plain; version=0.0.4; charset=utf-8");
	} else if (!strcmp(url, "/")) {
		resp = MHD_create_response_from_buffer(sizeof(index) - 1, (void *)index, MHD_RESPMEM_PERSISTENT);
	} else {
		resp = MHD_create_response_from_buffer(sizeof(notfound) - 1, (void *)notfound, MHD_RESPMEM_PERSISTENT);
		status = MHD_HTTP_NOT_FOUND;
	}
	if (!resp)
		return MHD_NO;
	r = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return r;
}

int prom_start(const char *addr, int port, const char *daemon, struct prom **out, char *err, size_t errlen)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t sl;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
	struct prom *p = NULL;
	int fd = -1, one = 1, r;

	*out = NULL;
	if (port == 0)
		return 0;
	if (port < -1 || port > 65535) {
		snprintf(err, errlen, "port %d: want 0 (off), -1 (any free port) or 1..65535", port);
		return -EINVAL;
	}
	if (!addr || !*addr)
		addr = "127.0.0.1";
	if (inet_pton(AF_INET, addr, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)(port < 0 ? 0 : port));
		sl = sizeof(*sin);
	} else if (inet_pton(AF_INET6, addr, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)(port < 0 ? 0 : port));
		sl = sizeof(*sin6);
		flags |= MHD_USE_IPv6;
	} else {
		snprintf(err, errlen, "prometheus_addr '%s' is not an IPv4 or IPv6 address", addr);
		return -EINVAL;
	}
	/* our own listening socket: bind's errno is the operator's answer */
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&ss, sl) || listen(fd, 16) || getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		r = -errno;
		snprintf(err, errlen, "cannot listen on %s%s%s:%d: %s", ss.ss_family == AF_INET6 ? "[" : "", addr,
			 ss.ss_family == AF_INET6 ? "]" : "", port < 0 ? 0 : port, strerror(-r));
		goto fail;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	snprintf(p->daemon, sizeof(p->daemon), "%s", daemon ? daemon : "");
	p->port = ntohs(ss.ss_family == AF_INET6 ? sin6->sin6_port : sin->sin_port);
	p->d = MHD_start_daemon(flags, 0, NULL, NULL, answer, p, MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)16, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
				MHD_OPTION_END);
	if (!p->d) {
		r = -ENOMEM;
		snprintf(err, errlen, "libmicrohttpd would not start on %s:%u", addr, p->port);
		goto fail;
	}
	dinfo(COMMON, "prometheus metrics at http://%s%s%s:%u/metrics", ss.ss_family == AF_INET6 ? "[" : "", addr,
	      ss.ss_family == AF_INET6 ? "]" : "", p->port);
	*out = p;
	return 0;
fail:
	free(p);
	if (fd >= 0)
		close(fd);
	return r;
}

unsigned prom_port(const struct prom *p)
{
	return p ? p->port : 0;
}

void prom_stop(struct prom *p)
{
	if (!p)
		return;
	MHD_stop_daemon(p->d);
	free(p);
}
