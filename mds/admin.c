/*
 * admin.c - the MDS's admin commands, served on the admin socket (and over
 * the MDS port as COMMAND messages, for `loligo tell mds.0 ...`).
 *
 * Over the MDS port a COMMAND runs only on an authenticated connection
 * (net.c refuses it before it gets here), and even then only the read-only
 * commands in net_allowed[]: the others (client evict, dump cache - it
 * lists file names - and the auth commands) answer -EPERM with a message
 * that names the admin socket, whose owner-only permissions are the access
 * control.
 *
 * The CLI maps `loligo status`, `loligo fs ls|status`, `loligo mds stat`,
 * `loligo df` and `loligo tell mds.0 session ls|client evict id=N|dump cache`
 * to the prefixes in the table below; keep the names.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/admin_sock.h"
#include "common/config.h"
#include "common/log.h"
#include "common/rcu.h"
#include "common/time.h"
#include "mds/mds.h"
#include "mds/admin.h"
#include "mds/mdsmap.h"
#include "mds/auth.h"
#include "mds/blocklist.h"
#include "mds/flock.h"
#include "mds/fsset.h"
#include "mds/journal.h"
#include "mds/locker.h"
#include "mds/mdcache.h"
#include "mds/server.h"
#include "mds/session.h"

#define DUMP_CACHE_MAX 100000

static struct json_object *jerr(const char *msg)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "error", json_object_new_string(msg));
	return o;
}

static uint64_t nsessions(struct mds *m)
{
	uint64_t n;

	pthread_mutex_lock(&m->lock);
	n = xa_count(&m->sessions);
	pthread_mutex_unlock(&m->lock);
	return n;
}

static struct json_object *pools_json(struct mds *m)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "metadata_pool", json_object_new_string(m->meta_pool_name));
	json_object_object_add(o, "data_pool", json_object_new_string(m->data_pool_name));
	return o;
}

static struct json_object *space_json(struct store *st)
{
	struct json_object *o = json_object_new_object();
	struct store_space sp;

	if (store_space(st, &sp)) {
		json_object_object_add(o, "state", json_object_new_string("unknown"));
		return o;
	}
	json_object_object_add(o, "state", json_object_new_string(store_space_state_name(sp.state)));
	json_object_object_add(o, "bytes_total", json_object_new_int64((int64_t)sp.total));
	json_object_object_add(o, "bytes_used", json_object_new_int64((int64_t)sp.used));
	json_object_object_add(o, "bytes_avail", json_object_new_int64((int64_t)sp.avail));
	json_object_object_add(o, "nearfull_ratio", json_object_new_double(sp.nearfull_ratio));
	json_object_object_add(o, "full_ratio", json_object_new_double(sp.full_ratio));
	json_object_object_add(o, "failsafe_ratio", json_object_new_double(sp.failsafe_ratio));
	json_object_object_add(o, "enospc", json_object_new_int64((int64_t)sp.enospc));
	return o;
}

/*
 * How full the stores are: "metadata" (the MDS's own store) and "data" (the
 * data store the clients share; on rados the same cluster, so one entry), and
 * the worst state of the two as "state" (ok | nearfull | full | failsafe |
 * unknown), what `loligo status` shows as a health warning.
 */
static struct json_object *store_space_json(struct mds *m)
{
	struct json_object *o = json_object_new_object(), *md = space_json(m->st), *v;
	const char *worst = "ok";
	int wrank = 0;

	json_object_object_add(o, "metadata", md);
	if (m->data_st)
		json_object_object_add(o, "data", space_json(m->data_st));
	json_object_object_foreach(o, name, st) {
		static const char *const order[] = { "unknown", "ok", "nearfull", "full", "failsafe" };
		(void)name;
		if (!json_object_object_get_ex(st, "state", &v))
			continue;
		for (int i = 0; i < 5; i++)
			if (!strcmp(json_object_get_string(v), order[i]) && i > wrank) {
				wrank = i;
				worst = order[i];
			}
	}
	if (wrank == 0)
		worst = "unknown";
	json_object_object_add(o, "state", json_object_new_string(worst));
	return o;
}

/*
 * The health of this MDS in Ceph's shape: {"status": "HEALTH_OK|WARN|ERR",
 * "checks": {CODE: {"severity", "summary": {"message", "count"},
 * "detail": [{"message"}]}}}.  Each check is one function in health_checks[]
 * below: adding a check is one line there and its function.  `loligo status`
 * adds MDS_DOWN itself when the MDS does not answer.
 */
struct health {
	struct json_object *checks;
	const char *status;
};

/* Add check @code (or one more detail line to it, if it is there already). */
static void health_add(struct health *h, const char *code, bool err, const char *summary, const char *detail)
{
	struct json_object *c, *sum, *det, *v;

	if (!json_object_object_get_ex(h->checks, code, &c)) {
		c = json_object_new_object();
		sum = json_object_new_object();
		json_object_object_add(c, "severity", json_object_new_string(err ? "HEALTH_ERR" : "HEALTH_WARN"));
		json_object_object_add(sum, "message", json_object_new_string(summary));
		json_object_object_add(sum, "count", json_object_new_int(0));
		json_object_object_add(c, "summary", sum);
		json_object_object_add(c, "detail", json_object_new_array());
		json_object_object_add(h->checks, code, c);
	}
	json_object_object_get_ex(c, "summary", &sum);
	json_object_object_get_ex(sum, "count", &v);
	json_object_object_add(sum, "count", json_object_new_int(json_object_get_int(v) + 1));
	if (detail) {
		struct json_object *d = json_object_new_object();

		json_object_object_add(d, "message", json_object_new_string(detail));
		json_object_object_get_ex(c, "detail", &det);
		json_object_array_add(det, d);
	}
	if (err)
		h->status = "HEALTH_ERR";
	else if (!strcmp(h->status, "HEALTH_OK"))
		h->status = "HEALTH_WARN";
}

/* journal writes fail: read-only (faults, 9.2) */
static void check_read_only(struct mds *m, struct health *h)
{
	char msg[512];

	if (journal_health(m, msg, sizeof(msg)))
		health_add(h, "MDS_READ_ONLY", true, msg, msg);
}

/* A check for the fullness of @st ("metadata" or "data" store; store, 9.3). */
static void space_check(struct health *h, struct store *st, const char *which)
{
	struct store_space sp;
	char msg[256], code[64], sum[128];

	if (!st || store_space(st, &sp) || sp.state == STORE_SPACE_OK)
		return;
	snprintf(code, sizeof(code), "MDS_%s_STORE_%s", !strcmp(which, "data") ? "DATA" : "METADATA",
		 sp.state == STORE_SPACE_NEARFULL ? "NEARFULL" : "FULL");
	snprintf(sum, sizeof(sum), "the %s store is %s", which, store_space_state_name(sp.state));
	snprintf(msg, sizeof(msg), "the %s store is %s: %" PRIu64 " of %" PRIu64 " bytes used (%.0f%%)", which,
		 store_space_state_name(sp.state), sp.used, sp.total,
		 sp.total ? 100.0 * (double)sp.used / (double)sp.total : 0.0);
	health_add(h, code, sp.state != STORE_SPACE_NEARFULL, sum, msg);
}

static void check_space(struct mds *m, struct health *h)
{
	space_check(h, m->st, "metadata");
	if (m->data_st)
		space_check(h, m->data_st, "data");
}

/* the directory objects fall behind the journal (Ceph's MDS_TRIM) */
static void check_trim(struct mds *m, struct health *h)
{
	uint64_t behind = journal_segments_behind(m), max = cfg_uint(CFG_mds_health_journal_segments);
	char msg[256];

	if (!max || behind <= max)
		return;
	snprintf(msg, sizeof(msg), "%" PRIu64 " journal segments wait to expire (mds_health_journal_segments %" PRIu64 ")",
		 behind, max);
	health_add(h, "MDS_TRIM", false, "MDS behind on trimming its journal", msg);
}

/* a request waits too long to become safe (Ceph's MDS_SLOW_REQUEST) */
static void check_slow_requests(struct mds *m, struct health *h)
{
	uint64_t t = journal_oldest_op_ns(m), now = now_mono_ns();
	double age = t ? (double)mono_since(now, t) / 1e9 : 0, max = cfg_double(CFG_mds_op_complaint_time);
	char msg[256];

	if (!t || max <= 0 || age < max)
		return;
	snprintf(msg, sizeof(msg), "the oldest request has waited %.1f s for the journal (mds_op_complaint_time %.0f s); "
		 "see 'loligo tell mds.0 ops'", age, max);
	health_add(h, "MDS_SLOW_REQUEST", false, "requests are blocked waiting for the journal", msg);
}

/* clients whose sessions went stale (not renewing: gone or unreachable) */
static void check_stale_clients(struct mds *m, struct health *h)
{
	struct session *s;
	uint64_t idx;
	char msg[256];

	pthread_mutex_lock(&m->lock);
	rcu_read_lock();
	xa_for_each(&m->sessions, idx, s) {
		if (s->state == SESSION_OPEN)
			continue;
		snprintf(msg, sizeof(msg), "session %" PRIu64 " (%s, %s) is stale: it stopped renewing its lease",
			 s->id, s->client_name ? s->client_name : "?", s->auth_name);
		health_add(h, "MDS_CLIENTS_STALE", false, "clients are not renewing their sessions", msg);
	}
	rcu_read_unlock();
	pthread_mutex_unlock(&m->lock);
}

/* one session that does not answer a revoke (locker_late_releases_locked) */
static void late_release_one(void *arg, const struct session *s, uint64_t ino, const char *dname, double secs)
{
	struct health *h = arg;
	const char *host = "";
	char msg[1024], what[320];
	uint32_t i;

	for (i = 0; i < s->nmeta; i++)
		if (!strcmp(s->meta[i].key, "hostname"))
			host = s->meta[i].val;
	if (dname)
		snprintf(what, sizeof(what), "its lease on %" PRIx64 "/%.255s", ino, dname);
	else
		snprintf(what, sizeof(what), "caps of inode %" PRIx64, ino);
	snprintf(msg, sizeof(msg),
		 "session %" PRIu64 " (%s%s%s) has not answered the revoke of %s for %.1f s "
		 "(mds_revoke_cap_timeout %.0f s); it is evicted at mds_session_timeout (%.0f s)",
		 s->id, s->client_name ? s->client_name : s->auth_name, *host ? " on " : "", host, what, secs,
		 cfg_double(CFG_mds_revoke_cap_timeout), cfg_double(CFG_mds_session_timeout));
	health_add(h, "MDS_CLIENT_LATE_RELEASE", false, "clients are failing to respond to capability release", msg);
}

/* clients not answering revokes (Ceph's MDS_CLIENT_LATE_RELEASE) */
static void check_late_release(struct mds *m, struct health *h)
{
	double t = cfg_double(CFG_mds_revoke_cap_timeout);

	if (t <= 0)
		return;
	pthread_mutex_lock(&m->lock);
	locker_late_releases_locked(m, (uint64_t)(t * 1e9), late_release_one, h);
	pthread_mutex_unlock(&m->lock);
}

/* one session that does not answer a cache-pressure recall (locker_recall_laggards_locked) */
static void recall_one(void *arg, const struct session *s, double secs)
{
	struct health *h = arg;
	const char *host = "";
	char msg[1024], ev[96];
	double ev_s = cfg_double(CFG_mds_recall_evict_timeout);
	uint32_t i;

	for (i = 0; i < s->nmeta; i++)
		if (!strcmp(s->meta[i].key, "hostname"))
			host = s->meta[i].val;
	if (ev_s > 0)
		snprintf(ev, sizeof(ev), "it is evicted at mds_recall_evict_timeout (%.0f s)", ev_s);
	else
		snprintf(ev, sizeof(ev), "mds_recall_evict_timeout is 0: it is not evicted for it");
	snprintf(msg, sizeof(msg),
		 "Client %s%s%s (session %" PRIu64 ") failing to respond to cache pressure: %" PRIu64
		 " caps and leases recalled %.1f s ago still held (%" PRIu64 " caps, %" PRIu64 " leases); %s",
		 s->client_name ? s->client_name : s->auth_name, *host ? " on " : "", host, s->id, s->recall_inflight,
		 secs, s->ncaps, s->nleases, ev);
	health_add(h, "MDS_CLIENT_RECALL", false, "clients are failing to respond to cache pressure", msg);
}

/* clients not answering recalls (Ceph's MDS_CLIENT_RECALL) */
static void check_recall(struct mds *m, struct health *h)
{
	double t = cfg_double(CFG_mds_recall_warning_timeout);

	if (t <= 0)
		return;
	pthread_mutex_lock(&m->lock);
	locker_recall_laggards_locked(m, (uint64_t)(t * 1e9), recall_one, h);
	pthread_mutex_unlock(&m->lock);
}

/* the cache over its bound even after trimming and recall (Ceph's MDS_CACHE_OVERSIZED) */
static void check_cache_size(struct mds *m, struct health *h)
{
	uint64_t limit = cfg_uint(CFG_mds_cache_memory_limit), used = mds_mem_total();
	char msg[256];

	(void)m;
	if (!limit || used <= limit + limit / 2)
		return;
	snprintf(msg, sizeof(msg), "MDS cache is too large (%" PRIu64 " bytes/%" PRIu64 " bytes); see 'loligo tell mds.0 cache status'",
		 used, limit);
	health_add(h, "MDS_CACHE_OVERSIZED", false, "MDS cache is too large", msg);
}

/* clients whose FUSE or NFS requests are blocked (their client_op_warn_s; issue 24) */
static void check_client_slow_ops(struct mds *m, struct health *h)
{
	struct session *s;
	uint64_t idx;
	char msg[1024];

	pthread_mutex_lock(&m->lock);
	rcu_read_lock();
	xa_for_each(&m->sessions, idx, s) {
		if (!s->slow_ops)
			continue;
		snprintf(msg, sizeof(msg), "session %" PRIu64 " (%s): %u operations blocked%s%.600s; "
			 "'loligo daemon <its asok> ops' lists them", s->id,
			 s->client_name ? s->client_name : s->auth_name, s->slow_ops,
			 s->slow_op ? ", the oldest: " : "", s->slow_op ? s->slow_op : "");
		health_add(h, "MDS_CLIENT_SLOW_OPS", false, "clients have operations blocked longer than client_op_warn_s",
			   msg);
	}
	rcu_read_unlock();
	pthread_mutex_unlock(&m->lock);
}

static void mdsmap_add(void *h, const char *code, bool error, const char *summary, const char *msg)
{
	health_add(h, code, error, summary, msg);
}

/* standbys and failovers (mdsmap.c) */
static void check_mdsmap(struct mds *m, struct health *h)
{
	mdsmap_health(m, mdsmap_add, h);
}

static const struct {
	const char *code;	/* what it reports (a function may report several codes) */
	void (*fn)(struct mds *m, struct health *h);
} health_checks[] = {
	{ "MDS_READ_ONLY", check_read_only },
	{ "MDS_{DATA,METADATA}_STORE_{NEARFULL,FULL}", check_space },
	{ "MDS_TRIM", check_trim },
	{ "MDS_SLOW_REQUEST", check_slow_requests },
	{ "MDS_CLIENTS_STALE", check_stale_clients },
	{ "MDS_CLIENT_LATE_RELEASE", check_late_release },
	{ "MDS_CLIENT_SLOW_OPS", check_client_slow_ops },
	{ "MDS_CLIENT_RECALL", check_recall },
	{ "MDS_CACHE_OVERSIZED", check_cache_size },
	{ "MDS_INSUFFICIENT_STANDBY, FS_DEGRADED", check_mdsmap },
	/* eviction (10.4): { "MDS_BLOCKLISTED_CLIENTS", check_blocklist } */
};

static struct json_object *health_json(struct mds *m, bool detail)
{
	struct json_object *o = json_object_new_object();
	struct health h = { .checks = json_object_new_object(), .status = "HEALTH_OK" };
	size_t i;

	for (i = 0; i < sizeof(health_checks) / sizeof(health_checks[0]); i++)
		health_checks[i].fn(m, &h);
	if (!detail) {
		json_object_object_foreach(h.checks, code, c) {
			(void)code;
			json_object_object_del(c, "detail");
		}
	}
	json_object_object_add(o, "status", json_object_new_string(h.status));
	json_object_object_add(o, "checks", h.checks);
	return o;
}

static int cmd_health(struct json_object *args, struct json_object **out, void *priv)
{
	*out = health_json(priv, false);
	return 0;
}

static int cmd_health_detail(struct json_object *args, struct json_object **out, void *priv)
{
	*out = health_json(priv, true);
	return 0;
}

static int cmd_ops(struct json_object *args, struct json_object **out, void *priv)
{
	*out = journal_ops_json(priv);
	return 0;
}

static int cmd_status(struct json_object *args, struct json_object **out, void *priv)
{
	struct mds *m = priv;
	struct json_object *o = json_object_new_object();
	int ro = journal_read_only(m);

	json_object_object_add(o, "fs_name", json_object_new_string(m->fs_name));
	json_object_object_add(o, "state", json_object_new_string("active"));
	json_object_object_add(o, "health", health_json(m, false));
	json_object_object_add(o, "version", json_object_new_string(LOLIGO_VERSION));
	/* read-only: journal writes fail (the cause is in health and journal) */
	json_object_object_add(o, "read_only", json_object_new_boolean(ro != 0));
	if (ro)
		json_object_object_add(o, "read_only_cause", json_object_new_string(strerror(-ro)));
	json_object_object_add(o, "epoch", json_object_new_int64((int64_t)m->epoch));
	json_object_object_add(o, "port", json_object_new_int(m->port));
	json_object_object_add(o, "uptime_s",
			       json_object_new_double((double)(now_real_ns() - m->start_real_ns) / 1e9));
	json_object_object_add(o, "store_backend", json_object_new_string(store_backend_name(m->st)));
	json_object_object_add(o, "pools", pools_json(m));
	json_object_object_add(o, "sessions", json_object_new_int64((int64_t)nsessions(m)));
	pthread_mutex_lock(&m->lock);
	json_object_object_add(o, "inodes", json_object_new_int64((int64_t)m->nfiles));
	json_object_object_add(o, "inodes_cached", json_object_new_int64((int64_t)m->ninodes_cached));
	json_object_object_add(o, "dirs_cached", json_object_new_int64((int64_t)m->ndirs_cached));
	json_object_object_add(o, "reconnecting", json_object_new_boolean(m->reconnecting));
	/* evicted clients kept out (`loligo blocklist ls` lists them) */
	json_object_object_add(o, "blocklisted_clients", json_object_new_int64((int64_t)blocklist_count_locked(m)));
	pthread_mutex_unlock(&m->lock);
	json_object_object_add(o, "requests", json_object_new_int64((int64_t)perf_get(&m->req_total)));
	json_object_object_add(o, "journal", journal_status_json(m));
	json_object_object_add(o, "store_space", store_space_json(m));
	*out = o;
	return 0;
}

static int cmd_fs_ls(struct json_object *args, struct json_object **out, void *priv)
{
	struct mds *m = priv;
	struct json_object *a = json_object_new_array(), *o = pools_json(m);

	json_object_object_add(o, "name", json_object_new_string(m->fs_name));
	json_object_array_add(a, o);
	*out = a;
	return 0;
}

static int cmd_fs_status(struct json_object *args, struct json_object **out, void *priv)
{
	struct mds *m = priv;
	struct json_object *o = json_object_new_object(), *mds = json_object_new_object();
	struct mdsp_statfs sf;

	json_object_object_add(o, "name", json_object_new_string(m->fs_name));
	json_object_object_add(mds, "rank", json_object_new_int(0));
	json_object_object_add(mds, "name", json_object_new_string(mdsmap_name(m)));
	json_object_object_add(mds, "state", json_object_new_string("active"));
	json_object_object_add(mds, "port", json_object_new_int(m->port));
	json_object_object_add(mds, "sessions", json_object_new_int64((int64_t)nsessions(m)));
	json_object_object_add(mds, "requests", json_object_new_int64((int64_t)perf_get(&m->req_total)));
	json_object_object_add(o, "mds", mds);
	json_object_object_add(o, "mdsmap", mdsmap_status_json(m));
	json_object_object_add(o, "pools", pools_json(m));
	pthread_mutex_lock(&m->lock);
	server_statfs(m, &sf);
	pthread_mutex_unlock(&m->lock);
	json_object_object_add(o, "inodes", json_object_new_int64((int64_t)(sf.files - sf.ffree)));
	json_object_object_add(o, "bytes_total", json_object_new_int64((int64_t)(sf.blocks * sf.bsize)));
	json_object_object_add(o, "bytes_avail", json_object_new_int64((int64_t)(sf.bavail * sf.bsize)));
	*out = o;
	return 0;
}

/* one pool's line of `df` (Ceph's: stored, objects, used, %used, max avail) */
static struct json_object *pool_df(const char *name, struct store_pool *p, struct store *st)
{
	struct json_object *o = json_object_new_object(), *stats = json_object_new_object();
	struct store_pool_stat ps;
	struct store_space sp;
	int r = p ? store_pool_stat(p, &ps) : -ENOENT;

	json_object_object_add(o, "name", json_object_new_string(name));
	if (r) {
		json_object_object_add(stats, "error", json_object_new_string(strerror(-r)));
	} else {
		json_object_object_add(stats, "stored", json_object_new_int64((int64_t)ps.bytes_stored));
		json_object_object_add(stats, "objects", json_object_new_int64((int64_t)ps.objects));
		json_object_object_add(stats, "bytes_used", json_object_new_int64((int64_t)ps.bytes_used));
		if (ps.partial)
			json_object_object_add(stats, "partial", json_object_new_boolean(true));
	}
	if (!store_space(st, &sp) && sp.total) {
		json_object_object_add(stats, "max_avail", json_object_new_int64((int64_t)sp.avail));
		if (!r)
			json_object_object_add(stats, "percent_used",
					       json_object_new_double((double)ps.bytes_used /
								      (double)(ps.bytes_used + sp.avail + 1)));
	}
	json_object_object_add(o, "stats", stats);
	return o;
}

/*
 * `df`: the raw capacity of the stores (the data store's and, on local,
 * the metadata store's filesystem) and per pool what it holds, in Ceph's
 * shape ({"stats": {...}, "pools": [{"name", "stats": {"stored",
 * "objects", "bytes_used", "percent_used", "max_avail"}}]}).  Counting a
 * local pool scans its objects: done here, without the namespace lock.
 */
static int cmd_df(struct json_object *args, struct json_object **out, void *priv)
{
	struct mds *m = priv;
	struct json_object *o = json_object_new_object(), *stats = json_object_new_object(),
			   *pools = json_object_new_array();
	struct store *dst = m->data_st ? m->data_st : m->st;
	struct mdsp_statfs sf;
	struct store_space sp;

	pthread_mutex_lock(&m->lock);
	server_statfs(m, &sf);
	pthread_mutex_unlock(&m->lock);
	if (!store_space(dst, &sp) && sp.total) {
		json_object_object_add(stats, "total_bytes", json_object_new_int64((int64_t)sp.total));
		json_object_object_add(stats, "total_avail_bytes", json_object_new_int64((int64_t)sp.avail));
		json_object_object_add(stats, "total_used_raw_bytes", json_object_new_int64((int64_t)sp.used));
		json_object_object_add(stats, "total_used_raw_ratio",
				       json_object_new_double((double)sp.used / (double)sp.total));
	}
	json_object_object_add(stats, "inodes", json_object_new_int64((int64_t)(sf.files - sf.ffree)));
	json_object_object_add(o, "stats", stats);
	json_object_array_add(pools, pool_df(m->meta_pool_name, m->meta, m->st));
	json_object_array_add(pools, pool_df(m->data_pool_name, m->data, dst));
	{
		/* the data pools after the first (fs add_data_pool) */
		struct json_object *names = json_object_new_array();

		fsset_dump_pools(m, names);
		for (size_t i = 0; i < json_object_array_length(names); i++) {
			const char *n = json_object_get_string(json_object_array_get_idx(names, i));
			struct store_pool *p;

			if (store_pool_open(dst, n, NULL, &p) == 0) {
				json_object_array_add(pools, pool_df(n, p, dst));
				store_pool_close(p);
			}
		}
		json_object_put(names);
	}
	json_object_object_add(o, "pools", pools);
	/* statfs as the clients see it */
	json_object_object_add(o, "bsize", json_object_new_int64((int64_t)sf.bsize));
	json_object_object_add(o, "blocks", json_object_new_int64((int64_t)sf.blocks));
	json_object_object_add(o, "bfree", json_object_new_int64((int64_t)sf.bfree));
	json_object_object_add(o, "bavail", json_object_new_int64((int64_t)sf.bavail));
	json_object_object_add(o, "files", json_object_new_int64((int64_t)sf.files));
	json_object_object_add(o, "ffree", json_object_new_int64((int64_t)sf.ffree));
	*out = o;
	return 0;
}

/* `fs dump`: the filesystem map, as Ceph's (one filesystem, one MDS rank). */
static int cmd_fs_dump(struct json_object *args, struct json_object **out, void *priv)
{
	struct mds *m = priv;
	struct json_object *o = json_object_new_object(), *fss = json_object_new_array(),
			   *fs = json_object_new_object(), *mdss = json_object_new_array(),
			   *md = json_object_new_object(), *dp = json_object_new_array(),
			   *flags = json_object_new_object();
	char addr[256], ep[300];

	cfg_str(CFG_mds_addr, addr, sizeof(addr));
	snprintf(ep, sizeof(ep), "%s:%u", addr, m->port);
	json_object_object_add(o, "epoch", json_object_new_int64((int64_t)m->epoch));
	json_object_object_add(fs, "name", json_object_new_string(m->fs_name));
	json_object_object_add(fs, "metadata_pool", json_object_new_string(m->meta_pool_name));
	json_object_array_add(dp, json_object_new_string(m->data_pool_name));
	fsset_dump_pools(m, dp);
	json_object_object_add(fs, "data_pools", dp);
	json_object_object_add(fs, "store_backend", json_object_new_string(store_backend_name(m->st)));
	fsset_dump(m, fs);
	json_object_object_add(fs, "default_object_size", json_object_new_int64((int64_t)m->object_size));
	json_object_object_add(flags, "auth_required", json_object_new_boolean(cfg_bool(CFG_auth_required)));
	json_object_object_add(flags, "read_only", json_object_new_boolean(journal_read_only(m) != 0));
	json_object_object_add(fs, "flags", flags);
	json_object_object_add(md, "name", json_object_new_string(mdsmap_name(m)));
	json_object_object_add(md, "rank", json_object_new_int(0));
	json_object_object_add(md, "state", json_object_new_string("up:active"));
	json_object_object_add(md, "addr", json_object_new_string(ep));
	json_object_object_add(md, "version", json_object_new_string(LOLIGO_VERSION));
	json_object_object_add(md, "pid", json_object_new_int((int)getpid()));
	json_object_object_add(md, "uptime_s", json_object_new_double((double)(now_real_ns() - m->start_real_ns) / 1e9));
	json_object_array_add(mdss, md);
	json_object_object_add(fs, "mds", mdss);
	json_object_object_add(fs, "sessions", json_object_new_int64((int64_t)nsessions(m)));
	json_object_object_add(fs, "mdsmap", mdsmap_status_json(m));
	json_object_array_add(fss, fs);
	json_object_object_add(o, "filesystems", fss);
	*out = o;
	return 0;
}

static int cmd_session_ls(struct json_object *args, struct json_object **out, void *priv)
{
	*out = session_ls_json(priv);
	return 0;
}

static int cmd_client_evict(struct json_object *args, struct json_object **out, void *priv)
{
	struct json_object *v;
	int64_t id;
	int r;

	if (!json_object_object_get_ex(args, "id", &v)) {
		*out = jerr("client evict needs id");
		return -EINVAL;
	}
	id = json_object_get_int64(v);
	r = session_evict(priv, (uint64_t)id, "evicted by the admin");
	if (r) {
		*out = jerr("no such session");
		return r;
	}
	*out = json_object_new_object();
	json_object_object_add(*out, "evicted", json_object_new_int64(id));
	return 0;
}

/* `mds fail 0`: hand rank 0 to a standby (this daemon leaves the map and exits) */
static int cmd_mds_fail(struct json_object *args, struct json_object **out, void *priv)
{
	struct mds *m = priv;
	struct json_object *v;
	char err[256];
	int r;

	if (json_object_object_get_ex(args, "rank", &v) && strcmp(json_object_get_string(v), "0") &&
	    strcmp(json_object_get_string(v), mdsmap_name(m)) &&
	    strcmp(json_object_get_string(v), mdsmap_name(m) + 4)) {
		*out = jerr("only rank 0 exists (give 0 or this daemon's name)");
		return -EINVAL;
	}
	r = mdsmap_fail(m, err, sizeof(err));
	if (r) {
		*out = jerr(err);
		return r;
	}
	*out = json_object_new_object();
	json_object_object_add(*out, "failed", json_object_new_string(mdsmap_name(m)));
	json_object_object_add(*out, "epoch", json_object_new_int64((int64_t)mdsmap_epoch(m)));
	return 0;
}

static int cmd_locks(struct json_object *args, struct json_object **out, void *priv)
{
	(void)args;
	*out = flock_dump_json(priv);
	return 0;
}

static int cmd_blocklist_ls(struct json_object *args, struct json_object **out, void *priv)
{
	(void)args;
	*out = blocklist_ls_json(priv);
	return 0;
}

static int cmd_blocklist_add(struct json_object *args, struct json_object **out, void *priv)
{
	struct json_object *v;
	const char *entity = NULL;
	double expire = cfg_double(CFG_mds_blocklist_expire);
	char err[512] = "";
	int r;

	if (json_object_object_get_ex(args, "entity", &v))
		entity = json_object_get_string(v);
	if (json_object_object_get_ex(args, "expire", &v))
		expire = (double)json_object_get_int64(v);
	r = blocklist_add(priv, entity, NULL, expire, "added by the operator", NULL, 0, err, sizeof(err));
	if (r) {
		*out = jerr(*err ? err : strerror(-r));
		return r;
	}
	*out = json_object_new_object();
	json_object_object_add(*out, "blocklisted", json_object_new_string(entity));
	json_object_object_add(*out, "expire_s", json_object_new_double(expire));
	return 0;
}

static int cmd_blocklist_rm(struct json_object *args, struct json_object **out, void *priv)
{
	struct json_object *v;
	const char *entity = NULL;
	char err[512] = "";
	int r;

	if (json_object_object_get_ex(args, "entity", &v))
		entity = json_object_get_string(v);
	r = blocklist_rm(priv, entity, err, sizeof(err));
	if (r) {
		*out = jerr(*err ? err : strerror(-r));
		return r;
	}
	*out = json_object_new_object();
	json_object_object_add(*out, "un-blocklisted", json_object_new_string(entity));
	return 0;
}

static const char *type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR: return "dir";
	case S_IFREG: return "file";
	case S_IFLNK: return "symlink";
	case S_IFCHR: return "chr";
	case S_IFBLK: return "blk";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "sock";
	}
	return "?";
}

/* `cache status`: what the cache holds in bytes per kind, its bounds, and the recall per session */
static int cmd_cache_status(struct json_object *args, struct json_object **out, void *priv)
{
	struct mds *m = priv;
	struct json_object *o = json_object_new_object(), *b = json_object_new_object(), *a = json_object_new_array();
	struct session *s;
	uint64_t idx, total;
	int k;

	(void)args;
	pthread_mutex_lock(&m->lock);
	for (k = 0; k < MDS_MEM_NKINDS; k++)
		json_object_object_add(b, mds_mem_names[k], json_object_new_uint64(atomic_load(&mds_mem_bytes[k])));
	total = mds_mem_total();
	json_object_object_add(o, "bytes", b);
	json_object_object_add(o, "total_bytes", json_object_new_uint64(total));
	json_object_object_add(o, "limit_bytes", json_object_new_uint64(cfg_uint(CFG_mds_cache_memory_limit)));
	/* the limit is the MDS's: what the cache may hold once the bounded
	 * consumers outside it are charged (main.c, charge_outside) */
	json_object_object_add(o, "cache_budget_bytes", json_object_new_uint64(mdcache_budget()));
	json_object_object_add(o, "charged_outside_bytes", json_object_new_uint64(mdcache_outside_bytes()));
	json_object_object_add(o, "journal_queued_bytes_bound", json_object_new_uint64(journal_queue_bound()));
	json_object_object_add(o, "journal_segment_bytes", json_object_new_uint64(journal_seg_bytes()));
	json_object_object_add(o, "journal_segment_bytes_bound", json_object_new_uint64(journal_seg_bound()));
	json_object_object_add(o, "log_ring_bytes", json_object_new_uint64(log_recent_bytes()));
	json_object_object_add(o, "inodes_cached", json_object_new_uint64(m->ninodes_cached));
	json_object_object_add(o, "inodes_limit", json_object_new_uint64(cfg_uint(CFG_mds_cache_size)));
	json_object_object_add(o, "dirs", json_object_new_uint64(m->ndirs_cached));
	json_object_object_add(o, "bytes_per_inode",
			       json_object_new_uint64(m->ninodes_cached ? total / m->ninodes_cached : 0));
	json_object_object_add(o, "rss_bytes", json_object_new_uint64(mds_rss_bytes()));
	rcu_read_lock();
	xa_for_each(&m->sessions, idx, s) {
		struct json_object *e = json_object_new_object();

		json_object_object_add(e, "id", json_object_new_uint64(s->id));
		json_object_object_add(e, "client", json_object_new_string(s->client_name ? s->client_name : ""));
		json_object_object_add(e, "caps", json_object_new_uint64(s->ncaps));
		json_object_object_add(e, "leases", json_object_new_uint64(s->nleases));
		json_object_object_add(e, "recalled", json_object_new_uint64(s->recalled));
		json_object_object_add(e, "recall_answered", json_object_new_uint64(s->recall_answered));
		json_object_object_add(e, "recall_inflight", json_object_new_uint64(s->recall_inflight));
		json_object_object_add(e, "recall_decayed", json_object_new_double(s->recall_decayed));
		json_object_array_add(a, e);
	}
	rcu_read_unlock();
	pthread_mutex_unlock(&m->lock);
	json_object_object_add(o, "sessions", a);
	*out = o;
	return 0;
}

static int cmd_dump_cache(struct json_object *args, struct json_object **out, void *priv)
{
	struct mds *m = priv;
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();
	struct minode *in;
	uint64_t idx, n = 0;

	pthread_mutex_lock(&m->lock);
	rcu_read_lock();
	xa_for_each(&m->inodes, idx, in) {
		struct json_object *e;

		if (n++ >= DUMP_CACHE_MAX)
			break;
		e = json_object_new_object();
		json_object_object_add(e, "ino", json_object_new_int64((int64_t)in->a.ino));
		json_object_object_add(e, "type", json_object_new_string(type_name(in->a.mode)));
		json_object_object_add(e, "mode", json_object_new_int((int)(in->a.mode & 07777)));
		json_object_object_add(e, "uid", json_object_new_int64(in->a.uid));
		json_object_object_add(e, "gid", json_object_new_int64(in->a.gid));
		json_object_object_add(e, "nlink", json_object_new_int64(in->a.nlink));
		json_object_object_add(e, "size", json_object_new_int64((int64_t)in->a.size));
		if (in->primary) {
			json_object_object_add(e, "parent", json_object_new_int64((int64_t)in->primary->dir->ino));
			json_object_object_add(e, "name", json_object_new_string(in->primary->name));
		}
		json_object_object_add(e, "in_inode_table", json_object_new_boolean(in->in_table));
		locker_inode_json(in, e);
		flock_inode_json_locked(in->a.ino, e);
		if (S_ISDIR(in->a.mode)) {
			struct mdir *d = xa_load(&m->dirs, in->a.ino);

			json_object_object_add(e, "dir_loaded", json_object_new_boolean(d != NULL));
			if (d)
				json_object_object_add(e, "entries", json_object_new_int64(d->count));
		}
		json_object_array_add(a, e);
	}
	rcu_read_unlock();
	json_object_object_add(o, "inodes_cached", json_object_new_int64((int64_t)m->ninodes_cached));
	json_object_object_add(o, "dirs_cached", json_object_new_int64((int64_t)m->ndirs_cached));
	json_object_object_add(o, "requests_waiting", json_object_new_int64((int64_t)m->nwaiters));
	pthread_mutex_unlock(&m->lock);
	json_object_object_add(o, "inodes", a);
	*out = o;
	return 0;
}

static int cmd_journal_status(struct json_object *args, struct json_object **out, void *priv)
{
	*out = journal_status_json(priv);
	return 0;
}

static int entity_arg(struct json_object *args, const char **name, struct json_object **out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(args, "entity", &v) || !json_object_is_type(v, json_type_string)) {
		*out = jerr("needs entity (client.NAME)");
		return -EINVAL;
	}
	*name = json_object_get_string(v);
	return 0;
}

/* the optional caps mds string of an auth command */
static const char *caps_arg(struct json_object *args)
{
	struct json_object *v;

	if (json_object_object_get_ex(args, "caps", &v) && json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return NULL;
}

static int cmd_auth_caps(struct json_object *args, struct json_object **out, void *priv)
{
	const char *name;
	char err[MDSP_MDSCAPS_STR_MAX + 512];
	struct json_object *o;
	int r = entity_arg(args, &name, out);

	if (r)
		return r;
	o = json_object_new_object();
	r = auth_admin_caps(priv, name, caps_arg(args), o, err, sizeof(err));
	if (r) {
		json_object_put(o);
		*out = jerr(err);
		return r;
	}
	*out = o;
	return 0;
}

static int auth_get_common(struct json_object *args, struct json_object **out, void *priv, bool create)
{
	const char *name;
	char err[MDSP_MDSCAPS_STR_MAX + 512];
	struct json_object *o;
	int r = entity_arg(args, &name, out);

	if (r)
		return r;
	o = json_object_new_object();
	r = auth_admin_get_or_create(priv, name, caps_arg(args), create, o, err, sizeof(err));
	if (r) {
		json_object_put(o);
		*out = jerr(err);
		return r;
	}
	*out = o;
	return 0;
}

static int cmd_auth_get_or_create(struct json_object *args, struct json_object **out, void *priv)
{
	return auth_get_common(args, out, priv, true);
}

static int cmd_auth_get(struct json_object *args, struct json_object **out, void *priv)
{
	return auth_get_common(args, out, priv, false);
}

static int cmd_auth_rm(struct json_object *args, struct json_object **out, void *priv)
{
	const char *name;
	char err[512];
	int nconns = 0, nsessions = 0;
	int r = entity_arg(args, &name, out);

	if (r)
		return r;
	r = auth_admin_rm(priv, name, &nconns, &nsessions, err, sizeof(err));
	if (r) {
		*out = jerr(err);
		return r;
	}
	*out = json_object_new_object();
	json_object_object_add(*out, "removed", json_object_new_string(name));
	json_object_object_add(*out, "connections_closed", json_object_new_int(nconns));
	json_object_object_add(*out, "sessions_evicted", json_object_new_int(nsessions));
	return 0;
}

static int cmd_fs_set(struct json_object *args, struct json_object **out, void *priv)
{
	const char *a[3], *names[3] = { "fs_name", "var", "val" };
	struct json_object *v;
	char err[512];
	int i, r;

	for (i = 0; i < 3; i++) {
		if (!json_object_object_get_ex(args, names[i], &v) || !json_object_is_type(v, json_type_string)) {
			*out = jerr("usage: fs set <fs_name> <var> <val> (var: max_file_size, refuse_client_session, "
				    "session_timeout, session_autoclose, standby_count_wanted)");
			return -EINVAL;
		}
		a[i] = json_object_get_string(v);
	}
	r = fsset_set(priv, a[0], a[1], a[2], out, err, sizeof(err));
	if (r)
		*out = jerr(err);
	return r;
}

static int cmd_fs_data_pool(struct json_object *args, struct json_object **out, void *priv, bool add)
{
	const char *a[2], *names[2] = { "fs_name", "pool" };
	struct json_object *v;
	char err[512];
	int i, r;

	for (i = 0; i < 2; i++) {
		if (!json_object_object_get_ex(args, names[i], &v) || !json_object_is_type(v, json_type_string)) {
			*out = jerr(add ? "usage: fs add_data_pool <fs_name> <pool>" : "usage: fs rm_data_pool <fs_name> <pool>");
			return -EINVAL;
		}
		a[i] = json_object_get_string(v);
	}
	r = fsset_data_pool(priv, a[0], a[1], add, out, err, sizeof(err));
	if (r)
		*out = jerr(err);
	return r;
}

static int cmd_fs_add_data_pool(struct json_object *args, struct json_object **out, void *priv)
{
	return cmd_fs_data_pool(args, out, priv, true);
}

static int cmd_fs_rm_data_pool(struct json_object *args, struct json_object **out, void *priv)
{
	return cmd_fs_data_pool(args, out, priv, false);
}

static int cmd_auth_ls(struct json_object *args, struct json_object **out, void *priv)
{
	*out = auth_admin_ls(priv);
	return 0;
}

static const struct asok_cmd mds_cmds[] = {
	{ "status", "", "MDS and filesystem status", cmd_status },
	{ "mds stat", "", "MDS state (same as status)", cmd_status },
	{ "fs ls", "", "list filesystems and their pools", cmd_fs_ls },
	{ "fs status", "", "filesystem status: MDS, pools, usage", cmd_fs_status },
	{ "df", "", "space and inode usage: raw capacity, and per pool stored bytes, objects and used bytes", cmd_df },
	{ "fs dump", "", "the filesystem map: pools, flags, MDS ranks and their addresses", cmd_fs_dump },
	{ "fs set", "fs_name:str var:str val:str", "change a setting kept with the filesystem (journaled): "
	  "max_file_size BYTES, refuse_client_session true|false, session_timeout SECS, session_autoclose SECS, "
	  "standby_count_wanted N", cmd_fs_set },
	{ "fs add_data_pool", "fs_name:str pool:str", "a data pool file layouts may name (loligo.dir.layout.pool); "
	  "made if missing (an erasure-coded RADOS pool: make it with ceph first)", cmd_fs_add_data_pool },
	{ "fs rm_data_pool", "fs_name:str pool:str", "remove a data pool no file uses (refused while it holds "
	  "objects or a layout names it)", cmd_fs_rm_data_pool },
	{ "health", "", "health status and the checks behind it", cmd_health },
	{ "health detail", "", "health checks with a line per affected item", cmd_health_detail },
	{ "ops", "", "requests in flight with their age: parked for revokes (what for, and which sessions hold it), waiting for the journal, throttled on the journal's memory bounds (queue or segments, with the bytes and the bound)", cmd_ops },
	{ "session ls", "", "list client sessions", cmd_session_ls },
	{ "mds fail", "rank:str?", "fail rank 0's holder (this daemon): it leaves the MDS map and exits, a standby "
	  "fences it and takes over", cmd_mds_fail },
	{ "client evict", "id:int", "close a client session and drop its connection", cmd_client_evict },
	{ "cache status", "", "bytes the cache holds per kind (inodes, dentries, dirs, xattrs, caps, leases) against "
	  "mds_cache_memory_limit, the process RSS, and each session's caps and recall", cmd_cache_status },
	{ "dump cache", "", "inodes held in the MDS cache, with the caps clients hold, the lock states and the file locks", cmd_dump_cache },
	{ "locks", "", "file locks held and waited for, per file, and requests held back by a reconnect phase",
	  cmd_locks },
	{ "blocklist ls", "", "clients kept out after an eviction (or by hand), with expiry", cmd_blocklist_ls },
	{ "blocklist add", "entity:str expire:int?", "keep a client (uuid or data-store address, see session ls) "
	  "out and fence its data writes, for expire seconds (default mds_blocklist_expire; 0: until removed)",
	  cmd_blocklist_add },
	{ "blocklist rm", "entity:str", "let a blocklisted client in again (and lift its data-store fence)",
	  cmd_blocklist_rm },
	{ "journal status", "", "journal positions and group-commit statistics", cmd_journal_status },
	{ "auth get-or-create", "entity:str caps:str?", "the key of entity (client.NAME), created with caps "
	  "(caps mds, e.g. 'allow rw path=/home/alice'; none: allow rw) if it has none; the keyring file is "
	  "rewritten", cmd_auth_get_or_create },
	{ "auth caps", "entity:str caps:str?", "set the caps mds of entity (none: allow rw); its sessions follow "
	  "them from their next request", cmd_auth_caps },
	{ "auth get", "entity:str", "the key of entity (client.NAME)", cmd_auth_get },
	{ "auth rm", "entity:str", "remove the key of entity: it can no longer authenticate, and its connections and sessions are cut at once", cmd_auth_rm },
	{ "auth ls", "", "entities with a key in the MDS keyring, and their caps mds", cmd_auth_ls },
};

#define NCMDS ((int)(sizeof(mds_cmds) / sizeof(mds_cmds[0])))

/* Commands that change nothing and reveal no file names: allowed over the MDS port. */
static const char *const net_allowed[] = {
	"status", "mds stat", "fs ls", "fs status", "df", "session ls", "journal status",
	"fs dump", "health", "health detail", "ops", "cache status",
};

static bool net_allows(const char *prefix)
{
	size_t i;

	for (i = 0; i < sizeof(net_allowed) / sizeof(net_allowed[0]); i++)
		if (!strcmp(prefix, net_allowed[i]))
			return true;
	return false;
}

int admin_start(struct mds *m, const char *path)
{
	int r;

	if (!path || !*path)
		return 0;
	r = asok_start(path, &m->asok);
	if (r)
		return r;
	r = asok_register(m->asok, mds_cmds, NCMDS, m);
	if (r) {
		asok_stop(m->asok);
		m->asok = NULL;
	}
	return r;
}

void admin_stop(struct mds *m)
{
	if (m->asok)
		asok_stop(m->asok);
	m->asok = NULL;
}

int admin_command_json(struct mds *m, const char *json, char **out)
{
	struct json_object *req = json_tokener_parse(json), *p, *res = NULL;
	const char *prefix;
	int i, r = -EINVAL;

	*out = NULL;
	if (!req || !json_object_object_get_ex(req, "prefix", &p) || !json_object_is_type(p, json_type_string)) {
		res = jerr("a command is a JSON object with a \"prefix\"");
		goto out;
	}
	prefix = json_object_get_string(p);
	for (i = 0; i < NCMDS; i++)
		if (!strcmp(prefix, mds_cmds[i].prefix))
			break;
	if (i == NCMDS) {
		res = jerr("unknown command");
		r = -ENOSYS;
		goto out;
	}
	if (!net_allows(prefix)) {
		char msg[256];

		snprintf(msg, sizeof(msg),
			 "'%s' is not allowed over the MDS port; use the MDS admin socket "
			 "(admin_socket, e.g. loligo --mds-asok PATH tell mds.0 %s)", prefix, prefix);
		res = jerr(msg);
		r = -EPERM;
		goto out;
	}
	if (!strcmp(mds_cmds[i].args, "id:int")) {
		struct json_object *v;

		if (!json_object_object_get_ex(req, "id", &v) ||
		    !(json_object_is_type(v, json_type_int) ||
		      (json_object_is_type(v, json_type_string) && *json_object_get_string(v)))) {
			res = jerr("missing or bad argument id:int");
			goto out;
		}
		if (json_object_is_type(v, json_type_string))
			json_object_object_add(req, "id",
					       json_object_new_int64(strtoll(json_object_get_string(v), NULL, 10)));
	}
	r = mds_cmds[i].fn(req, &res, m);
out:
	if (res) {
		*out = strdup(json_object_to_json_string_ext(res, JSON_C_TO_STRING_PLAIN));
		json_object_put(res);
	}
	if (req)
		json_object_put(req);
	return r;
}
