/*
 * perf.c - latency histograms and the counter registry behind `perf dump`.
 *
 * Histogram buckets are log-linear: values below 2^HIST_SUB_BITS get a
 * bucket each; above that, every power of two [2^e, 2^(e+1)) is cut into
 * 2^HIST_SUB_BITS equal sub-buckets, so a bucket is at most 1/16 (~6%) of
 * its value wide.  Recording is relaxed atomic adds plus a CAS loop on max
 * only when the max grows; a snapshot taken while others record is not
 * exact across fields, which is fine for monitoring.
 *
 * The registry is a list under reg_lock, touched on registration and on a
 * dump, never on the recording path.
 */
#include "common/perf.h"

#include <json-c/json.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SUB (1u << HIST_SUB_BITS)

static unsigned int bucket_of(uint64_t v)
{
	unsigned int msb, shift;

	if (v < SUB)
		return (unsigned int)v;
	msb = 63 - (unsigned int)__builtin_clzll(v);
	shift = msb - HIST_SUB_BITS;
	return (msb - HIST_SUB_BITS + 1) * SUB + (unsigned int)((v >> shift) & (SUB - 1));
}

/* [*lo, *lo + *width) is the range of bucket @b. */
static void bucket_range(unsigned int b, uint64_t *lo, uint64_t *width)
{
	unsigned int e, sub, shift;

	if (b < SUB) {
		*lo = b;
		*width = 1;
		return;
	}
	e = b / SUB;
	sub = b % SUB;
	shift = e - 1;
	*lo = (uint64_t)(SUB + sub) << shift;
	*width = 1ull << shift;
}

void hist_add(struct hist *h, uint64_t v)
{
	uint64_t m;

	atomic_fetch_add_explicit(&h->b[bucket_of(v)], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum, v, memory_order_relaxed);
	m = atomic_load_explicit(&h->max, memory_order_relaxed);
	while (v > m &&
	       !atomic_compare_exchange_weak_explicit(&h->max, &m, v, memory_order_relaxed,
						      memory_order_relaxed))
		;
}

uint64_t hist_quantile(const struct hist *h, double q)
{
	uint64_t total = 0, rank, seen = 0, lo, width, mid, max;
	unsigned int b;

	for (b = 0; b < HIST_BUCKETS; b++)
		total += atomic_load_explicit(&h->b[b], memory_order_relaxed);
	if (!total)
		return 0;
	if (q < 0)
		q = 0;
	if (q > 1)
		q = 1;
	/* the smallest value with at least q of the samples at or below it */
	rank = (uint64_t)(q * (double)total + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > total)
		rank = total;
	max = atomic_load_explicit(&h->max, memory_order_relaxed);
	for (b = 0; b < HIST_BUCKETS; b++) {
		seen += atomic_load_explicit(&h->b[b], memory_order_relaxed);
		if (seen >= rank)
			break;
	}
	if (b == HIST_BUCKETS)
		b = HIST_BUCKETS - 1;
	bucket_range(b, &lo, &width);
	mid = lo + width / 2;
	/* the top bucket's midpoint can exceed every sample: report the max */
	return mid > max && max >= lo ? max : mid;
}

void hist_reset(struct hist *h)
{
	unsigned int b;

	for (b = 0; b < HIST_BUCKETS; b++)
		atomic_store_explicit(&h->b[b], 0, memory_order_relaxed);
	atomic_store_explicit(&h->count, 0, memory_order_relaxed);
	atomic_store_explicit(&h->sum, 0, memory_order_relaxed);
	atomic_store_explicit(&h->max, 0, memory_order_relaxed);
}

struct json_object *hist_json(const struct hist *h)
{
	struct json_object *o = json_object_new_object();
	uint64_t count = atomic_load_explicit(&h->count, memory_order_relaxed);
	uint64_t sum = atomic_load_explicit(&h->sum, memory_order_relaxed);

	if (!o)
		return NULL;
	json_object_object_add(o, "count", json_object_new_uint64(count));
	json_object_object_add(o, "sum_ns", json_object_new_uint64(sum));
	json_object_object_add(o, "avg_ns", json_object_new_uint64(count ? sum / count : 0));
	json_object_object_add(o, "p50_ns", json_object_new_uint64(hist_quantile(h, 0.50)));
	json_object_object_add(o, "p90_ns", json_object_new_uint64(hist_quantile(h, 0.90)));
	json_object_object_add(o, "p99_ns", json_object_new_uint64(hist_quantile(h, 0.99)));
	json_object_object_add(o, "max_ns",
			       json_object_new_uint64(atomic_load_explicit(&h->max,
									   memory_order_relaxed)));
	return o;
}

/* ---- registry ----------------------------------------------------- */

enum perf_kind { PK_COUNTER, PK_HIST, PK_FN };

struct perf_entry {
	struct perf_entry *next;
	char *group;
	char *name;
	enum perf_kind kind;
	union {
		struct perf_counter *c;
		struct hist *h;
		struct {
			uint64_t (*fn)(void *arg);
			void *arg;
		} f;
	} u;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct perf_entry *reg_head;	/* protected by reg_lock; in registration order */

/* Add (or replace, for a name registered twice) one entry. */
static void reg_add(const char *group, const char *name, struct perf_entry *tmpl)
{
	struct perf_entry *e, **pp;

	pthread_mutex_lock(&reg_lock);
	for (pp = &reg_head; *pp; pp = &(*pp)->next) {
		e = *pp;
		if (!strcmp(e->group, group) && !strcmp(e->name, name)) {
			e->kind = tmpl->kind;
			e->u = tmpl->u;
			goto out_unlock;
		}
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		goto out_unlock;
	e->group = strdup(group);
	e->name = strdup(name);
	if (!e->group || !e->name) {
		free(e->group);
		free(e->name);
		free(e);
		goto out_unlock;
	}
	e->kind = tmpl->kind;
	e->u = tmpl->u;
	*pp = e;
out_unlock:
	pthread_mutex_unlock(&reg_lock);
}

void perf_register_counter(const char *group, const char *name, struct perf_counter *c)
{
	struct perf_entry t = { .kind = PK_COUNTER, .u.c = c };

	reg_add(group, name, &t);
}

void perf_register_hist(const char *group, const char *name, struct hist *h)
{
	struct perf_entry t = { .kind = PK_HIST, .u.h = h };

	reg_add(group, name, &t);
}

void perf_register_fn(const char *group, const char *name, uint64_t (*fn)(void *arg), void *arg)
{
	struct perf_entry t = { .kind = PK_FN, .u.f = { fn, arg } };

	reg_add(group, name, &t);
}

void perf_unregister_group(const char *group)
{
	struct perf_entry *e, **pp;

	pthread_mutex_lock(&reg_lock);
	pp = &reg_head;
	while ((e = *pp)) {
		if (!strcmp(e->group, group)) {
			*pp = e->next;
			free(e->group);
			free(e->name);
			free(e);
		} else {
			pp = &e->next;
		}
	}
	pthread_mutex_unlock(&reg_lock);
}

struct json_object *perf_dump_json(void)
{
	struct json_object *root = json_object_new_object(), *g, *v;
	struct perf_entry *e;

	if (!root)
		return NULL;
	/*
	 * Function gauges run under reg_lock: they must be quick and must not
	 * register or unregister anything themselves.
	 */
	pthread_mutex_lock(&reg_lock);
	for (e = reg_head; e; e = e->next) {
		if (!json_object_object_get_ex(root, e->group, &g)) {
			g = json_object_new_object();
			if (!g)
				continue;
			json_object_object_add(root, e->group, g);
		}
		switch (e->kind) {
		case PK_COUNTER:
			v = json_object_new_uint64(perf_get(e->u.c));
			break;
		case PK_HIST:
			v = hist_json(e->u.h);
			break;
		case PK_FN:
			v = json_object_new_uint64(e->u.f.fn(e->u.f.arg));
			break;
		default:
			v = NULL;
		}
		json_object_object_add(g, e->name, v);
	}
	pthread_mutex_unlock(&reg_lock);
	return root;
}

void perf_reset_all(void)
{
	struct perf_entry *e;

	pthread_mutex_lock(&reg_lock);
	for (e = reg_head; e; e = e->next) {
		if (e->kind == PK_COUNTER)
			perf_set(e->u.c, 0);
		else if (e->kind == PK_HIST)
			hist_reset(e->u.h);
	}
	pthread_mutex_unlock(&reg_lock);
}

static enum perf_type entry_type(const struct perf_entry *e)
{
	switch (e->kind) {
	case PK_HIST: return PERF_HISTOGRAM;
	case PK_FN: return PERF_GAUGE;
	case PK_COUNTER: break;
	}
	return PERF_COUNTER;
}

struct json_object *perf_schema_json(void)
{
	static const char *const tnames[] = { [PERF_COUNTER] = "counter", [PERF_GAUGE] = "gauge",
					      [PERF_HISTOGRAM] = "histogram" };
	struct json_object *root = json_object_new_object(), *g, *d;
	struct perf_entry *e;

	if (!root)
		return NULL;
	pthread_mutex_lock(&reg_lock);
	for (e = reg_head; e; e = e->next) {
		enum perf_type t = entry_type(e);

		if (!json_object_object_get_ex(root, e->group, &g)) {
			g = json_object_new_object();
			if (!g)
				continue;
			json_object_object_add(root, e->group, g);
		}
		d = json_object_new_object();
		json_object_object_add(d, "type", json_object_new_string(tnames[t]));
		json_object_object_add(d, "unit", json_object_new_string(t == PERF_HISTOGRAM ? "ns" : "count"));
		if (t == PERF_HISTOGRAM)
			json_object_object_add(d, "fields", json_object_new_string(
				"count sum_ns avg_ns p50_ns p90_ns p99_ns max_ns"));
		json_object_object_add(g, e->name, d);
	}
	pthread_mutex_unlock(&reg_lock);
	return root;
}

void perf_visit(void (*fn)(const struct perf_sample *s, void *arg), void *arg)
{
	struct perf_entry *e;

	pthread_mutex_lock(&reg_lock);
	for (e = reg_head; e; e = e->next) {
		struct perf_sample s = { .group = e->group, .name = e->name, .type = entry_type(e) };

		switch (e->kind) {
		case PK_COUNTER:
			s.value = perf_get(e->u.c);
			break;
		case PK_FN:
			s.value = e->u.f.fn(e->u.f.arg);
			break;
		case PK_HIST:
			s.hist = e->u.h;
			break;
		}
		fn(&s, arg);
	}
	pthread_mutex_unlock(&reg_lock);
}

uint64_t hist_count_below(const struct hist *h, unsigned log2_ns)
{
	uint64_t n = 0;
	unsigned int b, end;

	if (log2_ns >= 64)
		return atomic_load_explicit(&h->count, memory_order_relaxed);
	end = bucket_of(1ull << log2_ns);	/* the first bucket at or above 2^k */
	for (b = 0; b < end && b < HIST_BUCKETS; b++)
		n += atomic_load_explicit(&h->b[b], memory_order_relaxed);
	return n;
}
