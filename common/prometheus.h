/*
 * prometheus.h - the perf counters as a Prometheus text endpoint.
 *
 * GET /metrics on ADDR:PORT (prometheus_addr, default 127.0.0.1; the
 * daemon's mds_prometheus_port / client_prometheus_port, 0: off, -1: any
 * free port) answers the text exposition format 0.0.4 of every registered
 * perf entry: counters as `loligo_<group>_<name>_total`, gauges as
 * `loligo_<group>_<name>`, histograms (nanoseconds inside) as
 * `loligo_<group>_<name>_seconds` with cumulative `_bucket{le="..."}` at
 * powers of two (1 us .. 69 s, and +Inf), `_sum` and `_count`.  Every
 * sample carries `daemon="<name>"` (mds.0, client.NAME).  The HTTP server
 * is libmicrohttpd's, on a thread of its own.
 */
#ifndef LOLIGO_COMMON_PROMETHEUS_H
#define LOLIGO_COMMON_PROMETHEUS_H

#include <stddef.h>

struct prom;

/**
 * prom_start - serve /metrics on @addr:@port (@port -1: a free port; 0:
 * nothing is started, *@out = NULL).  @daemon labels every sample.
 * Return: 0, or -errno with what went wrong in @err (-EINVAL: a bad port
 * or address; bind's errno, e.g. -EADDRINUSE).
 */
int prom_start(const char *addr, int port, const char *daemon, struct prom **out, char *err, size_t errlen);

/** prom_port - the TCP port @p listens on (0 for NULL). */
unsigned prom_port(const struct prom *p);

/** prom_stop - stop serving and free @p (NULL: nothing). */
void prom_stop(struct prom *p);

/**
 * prom_render - the text exposition of the perf registry now (malloc'd,
 * NUL-terminated; *@len its length).  NULL on ENOMEM.
 */
char *prom_render(const char *daemon, size_t *len);

#endif
