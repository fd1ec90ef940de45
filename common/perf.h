/*
 * perf.h - performance counters and latency histograms for `perf dump`.
 *
 * A histogram has log-linear buckets over nanoseconds (16 sub-buckets per
 * power of two, ~6% resolution) of relaxed atomic counters, so recording is
 * a few instructions and never takes a lock.  Counters and histograms are
 * registered by name under a group ("mds_client", "mds", "drc"...);
 * perf_dump_json() renders every group for the admin socket:
 *   { "group": { "counter": 12, "hist": { "count":..,"sum_ns":..,"avg_ns":..,
 *     "p50_ns":..,"p90_ns":..,"p99_ns":..,"max_ns":.. } } }
 */
#ifndef LOLIGO_COMMON_PERF_H
#define LOLIGO_COMMON_PERF_H

#include <stdatomic.h>
#include <stdint.h>

struct json_object;

#define HIST_SUB_BITS 4
#define HIST_BUCKETS (64 << HIST_SUB_BITS)

struct hist {
	_Atomic uint64_t b[HIST_BUCKETS];
	_Atomic uint64_t count;
	_Atomic uint64_t sum;
	_Atomic uint64_t max;
};

/** hist_add - record one value (ns).  Lock-free, any thread. */
void hist_add(struct hist *h, uint64_t v);
/** hist_quantile - value at quantile @q (0..1), bucket midpoint; 0 if empty. */
uint64_t hist_quantile(const struct hist *h, double q);
void hist_reset(struct hist *h);
struct json_object *hist_json(const struct hist *h);

struct perf_counter {
	_Atomic uint64_t v;
};

static inline void perf_inc(struct perf_counter *c, uint64_t n)
{
	atomic_fetch_add_explicit(&c->v, n, memory_order_relaxed);
}
static inline void perf_set(struct perf_counter *c, uint64_t n)
{
	atomic_store_explicit(&c->v, n, memory_order_relaxed);
}
static inline uint64_t perf_get(const struct perf_counter *c)
{
	return atomic_load_explicit(&c->v, memory_order_relaxed);
}

/*
 * Registration: the objects must stay valid until unregistered.  Names are
 * copied.  perf_register_fn() adds a computed value (a gauge read on dump);
 * @fn runs under the registry's lock, so it must be quick and must not
 * register or unregister anything.  Registering a group/name pair again
 * replaces the old entry.
 */
void perf_register_counter(const char *group, const char *name, struct perf_counter *c);
void perf_register_hist(const char *group, const char *name, struct hist *h);
void perf_register_fn(const char *group, const char *name, uint64_t (*fn)(void *arg), void *arg);
/** perf_unregister_group - remove every entry of @group (on shutdown). */
void perf_unregister_group(const char *group);
/** perf_dump_json - snapshot of every registered entry. Caller puts the ref. */
struct json_object *perf_dump_json(void);
/** perf_reset_all - zero every histogram and counter (`perf reset`). */
void perf_reset_all(void);

/** perf_schema_json - {group: {name: {"type": "counter|gauge|histogram", "unit"}}} (`perf schema`). */
struct json_object *perf_schema_json(void);

enum perf_type { PERF_COUNTER, PERF_GAUGE, PERF_HISTOGRAM };

/* One registered entry as perf_visit() hands it out. */
struct perf_sample {
	const char *group, *name;
	enum perf_type type;
	uint64_t value;            /* counter or gauge */
	const struct hist *hist;   /* PERF_HISTOGRAM */
};

/**
 * perf_visit - call @fn for every registered entry, in registration order
 * (the Prometheus exporter).  @fn runs under the registry's lock: it must
 * be quick and must not register anything.
 */
void perf_visit(void (*fn)(const struct perf_sample *s, void *arg), void *arg);

/**
 * hist_count_below - samples of @h below 2^@log2_ns nanoseconds (exact:
 * bucket edges fall on powers of two).  For cumulative buckets.
 */
uint64_t hist_count_below(const struct hist *h, unsigned log2_ns);

#endif
