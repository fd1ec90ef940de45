/*
 * status.c - the cluster-level commands as people read them: `loligo -s`
 * (status with a health line, human units and rates), `health [detail]`,
 * `df` per pool, and plain tables for `session ls` and `ops`.
 *
 * Everything comes from the MDS's admin socket; this file only renders.
 * The rates (op/s) are the difference of two samples of the MDS's request
 * counter, `--interval` seconds apart (default 1; 0 leaves them out), as
 * `ceph -s` shows what the mgr computed from two reports.  When the MDS
 * does not answer, status and health still print, with HEALTH_ERR and the
 * check MDS_DOWN, and exit 3 (no daemon).  --format json gives the same
 * facts as one object (the MDS's own health object, checks included).
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/time.h"
#include "tools/cli/cli.h"

/* ---- units ----------------------------------------------------------------- */

const char *cli_bytes(uint64_t v, char *buf, size_t len)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double d = (double)v;
	int i = 0;

	while (d >= 1024 && i < 6) {
		d /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%" PRIu64 " B", v);
	else
		snprintf(buf, len, d < 10 ? "%.1f %s" : "%.0f %s", d, u[i]);
	return buf;
}

const char *cli_count(uint64_t v, char *buf, size_t len)
{
	static const char *const u[] = { "", " k", " M", " G", " T", " P" };
	double d = (double)v;
	int i = 0;

	while (d >= 1000 && i < 5) {
		d /= 1000;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%" PRIu64, v);
	else
		snprintf(buf, len, d < 10 ? "%.2f%s" : d < 100 ? "%.1f%s" : "%.0f%s", d, u[i]);
	return buf;
}

const char *cli_duration(double secs, char *buf, size_t len)
{
	uint64_t s = secs > 0 ? (uint64_t)secs : 0;

	if (s < 60)
		snprintf(buf, len, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m %" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%" PRIu64 "h %" PRIu64 "m", s / 3600, (s % 3600) / 60);
	else
		snprintf(buf, len, "%" PRIu64 "d %" PRIu64 "h", s / 86400, (s % 86400) / 3600);
	return buf;
}

/* ---- JSON helpers -------------------------------------------------------------- */

static struct json_object *get(struct json_object *o, const char *path)
{
	char key[128];

	while (o && *path) {
		const char *dot = strchr(path, '.');
		size_t n = dot ? (size_t)(dot - path) : strlen(path);

		snprintf(key, sizeof(key), "%.*s", (int)n, path);
		if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &o))
			return NULL;
		path += n + (dot ? 1 : 0);
	}
	return o;
}

static int64_t geti(struct json_object *o, const char *path, int64_t dflt)
{
	struct json_object *v = get(o, path);

	return v ? json_object_get_int64(v) : dflt;
}

static double getd(struct json_object *o, const char *path, double dflt)
{
	struct json_object *v = get(o, path);

	return v ? json_object_get_double(v) : dflt;
}

static const char *gets(struct json_object *o, const char *path, const char *dflt)
{
	struct json_object *v = get(o, path);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : dflt;
}

static void print_json(struct json_object *o, enum cli_format fmt)
{
	printf("%s\n", json_object_to_json_string_ext(o, fmt == FMT_JSON_PRETTY
							      ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
							      : JSON_C_TO_STRING_PLAIN));
}

/* ---- health ------------------------------------------------------------------ */

/* The health the CLI reports: the MDS's, or HEALTH_ERR MDS_DOWN if it does not answer. */
static struct json_object *mds_down_health(const char *why)
{
	struct json_object *h = json_object_new_object(), *checks = json_object_new_object(),
			   *c = json_object_new_object(), *sum = json_object_new_object(),
			   *det = json_object_new_array(), *d = json_object_new_object();

	json_object_object_add(sum, "message", json_object_new_string("1 MDS is down"));
	json_object_object_add(sum, "count", json_object_new_int(1));
	json_object_object_add(d, "message", json_object_new_string(why));
	json_object_array_add(det, d);
	json_object_object_add(c, "severity", json_object_new_string("HEALTH_ERR"));
	json_object_object_add(c, "summary", sum);
	json_object_object_add(c, "detail", det);
	json_object_object_add(checks, "MDS_DOWN", c);
	json_object_object_add(h, "status", json_object_new_string("HEALTH_ERR"));
	json_object_object_add(h, "checks", checks);
	return h;
}

static void print_checks(struct json_object *h, int indent, bool detail)
{
	struct json_object *checks = get(h, "checks");

	if (!checks || !json_object_is_type(checks, json_type_object))
		return;
	json_object_object_foreach(checks, code, c) {
		const char *sev = gets(c, "severity", "HEALTH_WARN");
		struct json_object *det = get(c, "detail");

		if (detail)
			printf("%*s[%s] %s: %s\n", indent, "", !strcmp(sev, "HEALTH_ERR") ? "ERR" : "WRN", code,
			       gets(c, "summary.message", ""));
		else
			printf("%*s%s: %s\n", indent, "", code, gets(c, "summary.message", ""));
		if (detail && det && json_object_is_type(det, json_type_array))
			for (size_t i = 0; i < json_object_array_length(det); i++)
				printf("%*s    %s\n", indent, "",
				       gets(json_object_array_get_idx(det, i), "message", ""));
	}
}

int cli_health(struct cli_ctx *x, bool detail)
{
	struct json_object *h = NULL;
	char why[4200];
	int r = asok_fetch(x->mds_sock, "mds.0", detail ? "health detail" : "health", x->timeout_ms, true, &h);

	if (r == EXIT_FAIL) {
		fprintf(stderr, "mds.0: %s\n", gets(h, "error", "health failed"));
		json_object_put(h);
		return r;
	}
	if (r) {
		json_object_put(h);
		snprintf(why, sizeof(why), "mds.0 does not answer on its admin socket %s", x->mds_sock);
		h = mds_down_health(why);
	}
	if (x->fmt != FMT_PLAIN) {
		print_json(h, x->fmt);
	} else {
		printf("%s\n", gets(h, "status", "HEALTH_ERR"));
		print_checks(h, detail ? 0 : 4, detail);
	}
	json_object_put(h);
	return r;
}

/* ---- status -------------------------------------------------------------------- */

static int sessions_summary(struct cli_ctx *x, int64_t *total, int64_t *stale)
{
	struct json_object *a = NULL;
	int r = asok_fetch(x->mds_sock, "mds.0", "session ls", x->timeout_ms, true, &a);

	*total = *stale = 0;
	if (!r && json_object_is_type(a, json_type_array)) {
		*total = (int64_t)json_object_array_length(a);
		for (size_t i = 0; i < json_object_array_length(a); i++)
			if (strcmp(gets(json_object_array_get_idx(a, i), "state", "open"), "open"))
				(*stale)++;
	}
	json_object_put(a);
	return r;
}

int cli_status(struct cli_ctx *x)
{
	struct json_object *s1 = NULL, *s2 = NULL, *out, *io, *h;
	char b1[64], b2[64], b3[64], why[4200];
	int64_t nsess = 0, nstale = 0;
	double rate = NAN, t1 = 0, dt = 0;
	int r;

	t1 = (double)now_mono_ns() / 1e9;
	r = asok_fetch(x->mds_sock, "mds.0", "status", x->timeout_ms, true, &s1);
	if (r && r != EXIT_FAIL) {
		snprintf(why, sizeof(why), "mds.0 does not answer on its admin socket %s", x->mds_sock);
		h = mds_down_health(why);
		if (x->fmt != FMT_PLAIN) {
			out = json_object_new_object();
			json_object_object_add(out, "health", h);
			print_json(out, x->fmt);
			json_object_put(out);
		} else {
			printf("  cluster:\n    health: %s\n", gets(h, "status", ""));
			print_checks(h, 12, false);
			printf("\n  services:\n    mds: no MDS answers (%s)\n", x->mds_sock);
			json_object_put(h);
		}
		json_object_put(s1);
		return r;
	}
	if (r) {
		fprintf(stderr, "mds.0: %s\n", gets(s1, "error", "status failed"));
		json_object_put(s1);
		return r;
	}
	if (x->interval > 0) {
		struct timespec ts = { (time_t)x->interval, (long)((x->interval - floor(x->interval)) * 1e9) };

		nanosleep(&ts, NULL);
		if (!asok_fetch(x->mds_sock, "mds.0", "status", x->timeout_ms, true, &s2)) {
			dt = (double)now_mono_ns() / 1e9 - t1;
			/* the MDS's own uptime is the better clock when it has one */
			if (get(s2, "uptime_s") && get(s1, "uptime_s"))
				dt = getd(s2, "uptime_s", 0) - getd(s1, "uptime_s", 0);
			if (dt > 0)
				rate = (double)(geti(s2, "requests", 0) - geti(s1, "requests", 0)) / dt;
		}
	}
	if (s2) {
		json_object_put(s1);
		s1 = s2;
	}
	sessions_summary(x, &nsess, &nstale);
	h = get(s1, "health");

	if (x->fmt != FMT_PLAIN) {
		out = json_object_new_object();
		json_object_object_add(out, "health", h ? json_object_get(h) : json_object_new_object());
		json_object_object_add(out, "fs_name", json_object_new_string(gets(s1, "fs_name", "")));
		json_object_object_add(out, "mds", json_object_get(s1));
		json_object_object_add(out, "sessions", json_object_new_int64(nsess));
		json_object_object_add(out, "sessions_stale", json_object_new_int64(nstale));
		io = json_object_new_object();
		if (!isnan(rate)) {
			json_object_object_add(io, "requests_per_sec", json_object_new_double(rate));
			json_object_object_add(io, "interval_s", json_object_new_double(dt));
		}
		json_object_object_add(out, "io", io);
		print_json(out, x->fmt);
		json_object_put(out);
		json_object_put(s1);
		return 0;
	}

	printf("  cluster:\n");
	printf("    fs:      %s (%s store; pools %s, %s)\n", gets(s1, "fs_name", "?"), gets(s1, "store_backend", "?"),
	       gets(s1, "pools.metadata_pool", "?"), gets(s1, "pools.data_pool", "?"));
	printf("    health:  %s\n", gets(h, "status", "HEALTH_OK"));
	print_checks(h, 13, false);
	printf("\n  services:\n");
	printf("    mds:     mds.0 up:active%s, up %s, port %" PRId64 "\n",
	       get(s1, "read_only") && json_object_get_boolean(get(s1, "read_only")) ? " (read-only)" : "",
	       cli_duration(getd(s1, "uptime_s", 0), b1, sizeof(b1)), geti(s1, "port", 0));
	printf("    clients: %" PRId64 " session%s", nsess, nsess == 1 ? "" : "s");
	if (nstale)
		printf(" (%" PRId64 " stale)", nstale);
	printf("\n\n  data:\n");
	printf("    inodes:  %s (%s cached, %s directories loaded)\n", cli_count((uint64_t)geti(s1, "inodes", 0), b1, sizeof(b1)),
	       cli_count((uint64_t)geti(s1, "inodes_cached", 0), b2, sizeof(b2)),
	       cli_count((uint64_t)geti(s1, "dirs_cached", 0), b3, sizeof(b3)));
	if (get(s1, "store_space.data.bytes_total") || get(s1, "store_space.metadata.bytes_total")) {
		const char *w = get(s1, "store_space.data.bytes_total") ? "store_space.data" : "store_space.metadata";
		char p[96];
		uint64_t tot, used, avail;

		snprintf(p, sizeof(p), "%s.bytes_total", w);
		tot = (uint64_t)geti(s1, p, 0);
		snprintf(p, sizeof(p), "%s.bytes_used", w);
		used = (uint64_t)geti(s1, p, 0);
		snprintf(p, sizeof(p), "%s.bytes_avail", w);
		avail = (uint64_t)geti(s1, p, 0);
		printf("    usage:   %s used, %s / %s avail (%s)\n", cli_bytes(used, b1, sizeof(b1)),
		       cli_bytes(avail, b2, sizeof(b2)), cli_bytes(tot, b3, sizeof(b3)), gets(s1, "store_space.state", "?"));
	}
	printf("    journal: segments %" PRId64 "..%" PRId64 ", %" PRId64 " entries pending%s\n",
	       geti(s1, "journal.expire_segment", 0), geti(s1, "journal.head_segment", 0),
	       geti(s1, "journal.pending_entries", 0),
	       get(s1, "journal.read_only") && json_object_get_boolean(get(s1, "journal.read_only")) ? ", WRITES FAIL" : "");
	printf("\n  io:\n");
	if (isnan(rate))
		printf("    client:  %s requests in all\n", cli_count((uint64_t)geti(s1, "requests", 0), b1, sizeof(b1)));
	else
		printf("    client:  %.0f op/s (%s requests in all)\n", rate,
		       cli_count((uint64_t)geti(s1, "requests", 0), b1, sizeof(b1)));
	json_object_put(s1);
	return 0;
}

/* ---- df ------------------------------------------------------------------------- */

static void print_df(struct json_object *d)
{
	struct json_object *pools = get(d, "pools");
	char b1[64], b2[64], b3[64], b4[64];
	size_t i, n, w = 4;

	printf("--- RAW STORAGE ---\n");
	printf("%-10s  %-10s  %-10s  %s\n", "SIZE", "AVAIL", "USED", "%RAW USED");
	if (get(d, "stats.total_bytes"))
		printf("%-10s  %-10s  %-10s  %.2f\n", cli_bytes((uint64_t)geti(d, "stats.total_bytes", 0), b1, sizeof(b1)),
		       cli_bytes((uint64_t)geti(d, "stats.total_avail_bytes", 0), b2, sizeof(b2)),
		       cli_bytes((uint64_t)geti(d, "stats.total_used_raw_bytes", 0), b3, sizeof(b3)),
		       100 * getd(d, "stats.total_used_raw_ratio", 0));
	else
		printf("%-10s  %-10s  %-10s  %s\n", "-", "-", "-", "-");
	printf("\n--- POOLS ---\n");
	n = pools && json_object_is_type(pools, json_type_array) ? json_object_array_length(pools) : 0;
	for (i = 0; i < n; i++) {
		size_t l = strlen(gets(json_object_array_get_idx(pools, i), "name", ""));

		if (l > w)
			w = l;
	}
	printf("%-*s  %-10s  %-8s  %-10s  %-6s  %s\n", (int)w, "POOL", "STORED", "OBJECTS", "USED", "%USED", "MAX AVAIL");
	for (i = 0; i < n; i++) {
		struct json_object *p = json_object_array_get_idx(pools, i);

		if (get(p, "stats.error")) {
			printf("%-*s  (%s)\n", (int)w, gets(p, "name", "?"), gets(p, "stats.error", ""));
			continue;
		}
		printf("%-*s  %-10s  %-8s  %-10s  %-6.2f  %s%s\n", (int)w, gets(p, "name", "?"),
		       cli_bytes((uint64_t)geti(p, "stats.stored", 0), b1, sizeof(b1)),
		       cli_count((uint64_t)geti(p, "stats.objects", 0), b2, sizeof(b2)),
		       cli_bytes((uint64_t)geti(p, "stats.bytes_used", 0), b3, sizeof(b3)),
		       100 * getd(p, "stats.percent_used", 0),
		       get(p, "stats.max_avail") ? cli_bytes((uint64_t)geti(p, "stats.max_avail", 0), b4, sizeof(b4)) : "-",
		       get(p, "stats.partial") ? "  (counted in part)" : "");
	}
}

int cli_df(struct cli_ctx *x)
{
	struct json_object *d = NULL;
	int r = asok_fetch(x->mds_sock, "mds.0", "df", x->timeout_ms, false, &d);

	if (!r) {
		if (x->fmt != FMT_PLAIN)
			print_json(d, x->fmt);
		else
			print_df(d);
	} else if (d && x->fmt != FMT_PLAIN) {
		print_json(d, x->fmt);
	}
	json_object_put(d);
	return r;
}

/* ---- tables for `tell mds.0 session ls | ops` --------------------------------------- */

static void print_sessions(struct json_object *a)
{
	size_t i, n = json_object_array_length(a);
	char b1[64];

	printf("%-4s  %-14s  %-6s  %-21s  %-12s  %-24s  %-8s  %-5s  %s\n", "ID", "NAME", "STATE", "ADDR", "HOST",
	       "MOUNT POINT", "VERSION", "CAPS", "IDLE");
	for (i = 0; i < n; i++) {
		struct json_object *s = json_object_array_get_idx(a, i);
		const char *name = gets(s, "auth_name", "");

		printf("%-4" PRId64 "  %-14s  %-6s  %-21s  %-12s  %-24s  %-8s  %-5" PRId64 "  %s\n", geti(s, "id", 0),
		       *name ? name : gets(s, "client_name", "?"), gets(s, "state", "?"),
		       *gets(s, "addr", "") ? gets(s, "addr", "") : "-",
		       *gets(s, "hostname", "") ? gets(s, "hostname", "") : "-",
		       *gets(s, "mount_point", "") ? gets(s, "mount_point", "") : "-",
		       *gets(s, "version", "") ? gets(s, "version", "") : "-", geti(s, "num_caps", 0),
		       cli_duration(getd(s, "idle_s", 0), b1, sizeof(b1)));
	}
}

static void print_ops(struct json_object *o)
{
	struct json_object *a = get(o, "ops");
	size_t i, n = a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;

	printf("%" PRId64 " request%s in flight\n", geti(o, "num_ops", 0), geti(o, "num_ops", 0) == 1 ? "" : "s");
	if (!n)
		return;
	printf("%-8s  %-10s  %-10s  %-10s  %s\n", "SESSION", "TID", "OP", "AGE", "STATE");
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(a, i);

		printf("%-8" PRId64 "  %-10" PRId64 "  %-10s  %-10.1f  %s\n", geti(e, "session", 0), geti(e, "tid", 0),
		       gets(e, "op", "?"), getd(e, "age_ms", 0), gets(e, "state", ""));
	}
}

bool cli_pretty(FILE *f, const char *prefix, struct json_object *reply)
{
	if (!prefix || f != stdout)
		return false;
	if (!strcmp(prefix, "session ls") && json_object_is_type(reply, json_type_array) &&
	    (!json_object_array_length(reply) || get(json_object_array_get_idx(reply, 0), "idle_s"))) {
		print_sessions(reply);
		return true;
	}
	if (!strcmp(prefix, "ops") && get(reply, "num_ops")) {
		print_ops(reply);
		return true;
	}
	if (!strcmp(prefix, "df") && get(reply, "pools") && json_object_is_type(get(reply, "pools"), json_type_array)) {
		print_df(reply);
		return true;
	}
	if ((!strcmp(prefix, "health") || !strcmp(prefix, "health detail")) && get(reply, "status")) {
		printf("%s\n", gets(reply, "status", ""));
		print_checks(reply, 0, !strcmp(prefix, "health detail"));
		return true;
	}
	return false;
}
