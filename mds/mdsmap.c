/*
 * mdsmap.c - rank 0 and who holds it: the MDS map, beacons, takeover and
 * fencing.
 *
 * Several loligo-mds daemons may serve one filesystem; one of them is
 * active (holds rank 0: journals, serves clients), the others wait as
 * standbys.  There is no consensus service of our own: who holds the rank
 * is written in the object store itself, in one object of the metadata
 * pool (MDSMAP_OID), whose omap holds
 *
 *   epoch            "%020llu", grows by one at every change of the map
 *   map              JSON: the holder (name, gid, address, the store
 *                    instances a successor must fence), the last holder
 *                    that failed, the last takeover
 *   beacon.<gid>     the holder's renewal counter
 *   standby.<gid>    each standby's registration, rewritten as its beacon
 *   hostlock.<gid>   the holder holds the local store's host lock (below)
 *
 * Every change of "map" is one write op that compares "epoch" with the
 * value the writer read and sets the next one (store_op_omap_cmp: rados'
 * omap_cmp, or the local store's own write transaction), so of two
 * standbys racing for the rank exactly one wins, and the epoch grows by
 * one.  The holder renews its beacon every mds_beacon_interval with a
 * write that asserts the epoch is still the one it took the rank at: once
 * anyone moved the map, the holder's next renewal is refused and it
 * exits, writing nothing more.
 *
 * The lease is observed, not timestamped: a standby remembers when it
 * last saw the holder's beacon change, on its own monotonic clock, and
 * takes the rank when it has not changed for mds_beacon_grace.  No two
 * clocks are compared, so no clock skew can shorten a lease.  Three
 * shortcuts skip the grace where the answer is certain: a vacant rank (the
 * holder stepped down: SIGTERM or `mds fail`); a holder of our own name
 * (a restarted daemon replaces its predecessor, as Ceph's monitor fails
 * an old gid when a new one of the same name beacons); and, on the local
 * store, whose daemons all run on one host, the holder's host lock (an
 * flock on <store>/mds.active.lock that the kernel drops when the holder's
 * process dies, kill -9 included).
 *
 * Fencing is what makes the lease safe, not the timing.  A paused holder
 * (SIGSTOP, a stalled VM) may wake with writes in flight that it still
 * believes in.  So the new holder, right after winning the map, fences
 * the old one's store instances (rados: the OSD blocklist of its librados
 * client; local: the fence record every write batch checks in its own
 * transaction) and only then replays the journal.  From that moment no
 * write of the old holder lands: whatever it made durable before is in
 * the journal the new holder replays, whatever it acknowledged is either
 * there or replayed by its client, and it can no longer renew (its
 * renewal is a write too), so it learns it was deposed, logs who holds
 * the rank at which epoch, and exits.
 *
 * The map object is small and read whole (one omap listing); a standby
 * polls it a few times per beacon interval.  A map that cannot be parsed
 * is damage: it is reported (log, `fs status`) and nobody takes the rank
 * on a guess until an operator repairs it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "mds/mds.h"
#include "mds/journal.h"
#include "mds/mdsmap.h"
#include "mds/standby_replay.h"

#define MAP_VERSION 1
#define KEY_EPOCH "epoch"
#define KEY_MAP "map"
#define PFX_BEACON "beacon."
#define PFX_STANDBY "standby."
#define PFX_HOSTLOCK "hostlock."

struct mdsmap {
	char name[72];                /* "mds.NAME" (NAME at most 48) */
	char gid[17];                 /* random per process, hex */
	char fence_meta[STORE_ADDR_MAX];   /* our instance of m->st */
	char fence_data[STORE_ADDR_MAX];   /* of m->data_st (local), "" when data is in m->st */
	char host[128];
	int host_lock_fd;             /* local store: <store>/mds.active.lock; -1 on rados */
	bool host_lock_held;          /* beacon thread (or join, before it runs) */
	_Atomic bool registering;     /* a standby registration is in flight */

	pthread_mutex_t lock;         /* a leaf; guards what is marked */
	char addr[300];               /* protected by lock */
	_Atomic uint64_t epoch;       /* the epoch we hold the rank at; 0: standby */
	uint64_t beacons;             /* beacon thread */
	uint64_t active_since_mono;   /* when we took the rank */
	enum mdsmap_reason reason;
	char prev_holder[160];        /* whom we took it from ("" first) */
	struct json_object *view;     /* protected by lock: the last map listing the beacon read, for status */
	uint64_t view_mono;           /* protected by lock */
	struct json_object *seen;     /* protected by lock: gid -> [beacon string, mono ns it last changed] */
	char damage[512];             /* protected by lock: why the map cannot be read ("" fine) */

	pthread_t thread;
	bool thread_started;
	pthread_cond_t cond;          /* with lock: stop, fail */
	bool stop, fail;              /* protected by lock */
};

/* ---- the map object ---------------------------------------------------------------- */

/* What one read of the map object found. */
struct view {
	bool exists;
	uint64_t epoch;
	char epoch_raw[32];
	struct json_object *map;      /* parsed "map" (owned), NULL when missing or damaged */
	struct json_object *beacons;  /* gid -> value (owned) */
	struct json_object *standbys; /* gid -> registration (owned) */
	struct json_object *hostlocks; /* gid -> "1": holds the host lock (owned) */
	char damage[384];
};

static void view_free(struct view *v)
{
	json_object_put(v->map);
	json_object_put(v->beacons);
	json_object_put(v->standbys);
	json_object_put(v->hostlocks);
	memset(v, 0, sizeof(*v));
}

static double opt_secs(enum cfg_opt_id id, double dflt)
{
	double v = cfg_double(id);

	return v > 0 ? v : dflt;
}

static uint64_t secs_ns(double s)
{
	return (uint64_t)(s * 1e9);
}

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static struct json_object *jobj(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_object))
		return NULL;
	return v;
}

/* The holder in @v's map, or NULL (vacant or no map). */
static struct json_object *holder(const struct view *v)
{
	return jobj(v->map, "active");
}

/*
 * Read the whole map object.  A missing object is an empty view; a map
 * that does not parse, or whose epoch disagrees with the epoch key, is
 * damage (v->damage says what).  Return: 0 or -errno of the read.
 */
static int read_view(struct mds *m, struct view *v)
{
	struct store_omap_iter it;
	const struct store_kv *kv;
	bool have_epoch = false;
	int r;

	memset(v, 0, sizeof(*v));
	v->beacons = json_object_new_object();
	v->standbys = json_object_new_object();
	v->hostlocks = json_object_new_object();
	store_omap_iter_init(&it, m->meta, MDSMAP_OID, NULL, 256);
	while ((kv = store_omap_iter_next(&it)) != NULL) {
		v->exists = true;
		if (!strcmp(kv->key, KEY_EPOCH)) {
			char *end;

			if (kv->len == 0 || kv->len >= sizeof(v->epoch_raw)) {
				snprintf(v->damage, sizeof(v->damage), "its epoch key is %zu bytes long", kv->len);
				continue;
			}
			memcpy(v->epoch_raw, kv->val, kv->len);
			v->epoch_raw[kv->len] = '\0';
			errno = 0;
			v->epoch = strtoull(v->epoch_raw, &end, 10);
			if (errno || *end || end == v->epoch_raw)
				snprintf(v->damage, sizeof(v->damage), "its epoch key '%.31s' is not a number", v->epoch_raw);
			have_epoch = true;
		} else if (!strcmp(kv->key, KEY_MAP)) {
			struct json_tokener *tok = json_tokener_new();

			json_object_put(v->map);
			v->map = tok ? json_tokener_parse_ex(tok, kv->val, (int)kv->len) : NULL;
			if (!v->map || !json_object_is_type(v->map, json_type_object)) {
				snprintf(v->damage, sizeof(v->damage), "its map (%zu bytes) is not a JSON object: %s",
					 kv->len, tok ? json_tokener_error_desc(json_tokener_get_error(tok)) : "no memory");
				json_object_put(v->map);
				v->map = NULL;
			}
			if (tok)
				json_tokener_free(tok);
		} else if (!strncmp(kv->key, PFX_BEACON, strlen(PFX_BEACON))) {
			json_object_object_add(v->beacons, kv->key + strlen(PFX_BEACON),
					       json_object_new_string_len(kv->val, (int)(kv->len < 32 ? kv->len : 32)));
		} else if (!strncmp(kv->key, PFX_HOSTLOCK, strlen(PFX_HOSTLOCK))) {
			json_object_object_add(v->hostlocks, kv->key + strlen(PFX_HOSTLOCK), json_object_new_boolean(1));
		} else if (!strncmp(kv->key, PFX_STANDBY, strlen(PFX_STANDBY))) {
			struct json_object *reg = NULL;

			/* val is not NUL-terminated: parse a copy */
			if (kv->len < 4096) {
				char buf[4096];

				memcpy(buf, kv->val, kv->len);
				buf[kv->len] = '\0';
				reg = json_tokener_parse(buf);
			}
			if (reg && json_object_is_type(reg, json_type_object))
				json_object_object_add(v->standbys, kv->key + strlen(PFX_STANDBY), reg);
			else
				json_object_put(reg);
		}
	}
	r = store_omap_iter_end(&it);
	if (r)
		return r;
	if (v->exists && !*v->damage) {
		struct json_object *e;

		if (!have_epoch)
			snprintf(v->damage, sizeof(v->damage), "it has no epoch key");
		else if (!v->map)
			snprintf(v->damage, sizeof(v->damage), "it has no map key");
		else if (!json_object_object_get_ex(v->map, "epoch", &e) ||
			 (uint64_t)json_object_get_int64(e) != v->epoch)
			snprintf(v->damage, sizeof(v->damage), "its map says epoch %s, its epoch key %" PRIu64,
				 e ? json_object_get_string(e) : "(none)", v->epoch);
	}
	return 0;
}

/* the start time of process @pid (field 22 of /proc/PID/stat, clock ticks since boot); 0: unknown */
static unsigned long long proc_start(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');          /* the command name may hold spaces */
	for (field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (p)
		v = strtoull(p + 1, NULL, 10);
	return v;
}

/* Our registration in the map as holder. */
static struct json_object *me_json(struct mdsmap *mm)
{
	struct json_object *o = json_object_new_object(), *f = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(mm->name));
	json_object_object_add(o, "gid", json_object_new_string(mm->gid));
	pthread_mutex_lock(&mm->lock);
	json_object_object_add(o, "addr", json_object_new_string(mm->addr));
	pthread_mutex_unlock(&mm->lock);
	json_object_object_add(o, "host", json_object_new_string(mm->host));
	json_object_object_add(o, "pid", json_object_new_int((int)getpid()));
	json_object_object_add(o, "start", json_object_new_int64((int64_t)proc_start(getpid())));
	json_object_object_add(f, "meta", json_object_new_string(mm->fence_meta));
	if (*mm->fence_data)
		json_object_object_add(f, "data", json_object_new_string(mm->fence_data));
	json_object_object_add(o, "fence", f);
	json_object_object_add(o, "host_lock", json_object_new_boolean(mm->host_lock_held));
	json_object_object_add(o, "since", json_object_new_int64((int64_t)now_real_ns()));
	return o;
}

static const char *reason_name(enum mdsmap_reason r)
{
	switch (r) {
	case MDSMAP_FIRST: return "first holder";
	case MDSMAP_VACANT: return "the rank was vacant";
	case MDSMAP_SAME_NAME: return "a new instance of the holder's name";
	case MDSMAP_HOST_LOCK: return "the holder's process is gone (its host lock is free)";
	case MDSMAP_GRACE: return "the holder's beacon stopped for mds_beacon_grace";
	}
	return "?";
}

static void epoch_str(char *buf, size_t len, uint64_t e)
{
	snprintf(buf, len, "%020" PRIu64, e);
}

/*
 * Write @map as the next epoch after @v's, if the map is still at @v's
 * epoch.  @extra adds sub-ops (beacon keys).  Return: 0, -ECANCELED (the
 * map moved), -errno.
 */
static int cas_map(struct mds *m, const struct view *v, struct json_object *map,
		   void (*extra)(struct store_op *op, void *arg), void *arg)
{
	struct store_op *op = store_op_new();
	char next[32];
	const char *js;

	if (!op)
		return -ENOMEM;
	epoch_str(next, sizeof(next), v->epoch + 1);
	json_object_object_add(map, "v", json_object_new_int(MAP_VERSION));
	json_object_object_add(map, "epoch", json_object_new_int64((int64_t)(v->epoch + 1)));
	json_object_object_add(map, "fs", json_object_new_string(m->fs_name ? m->fs_name : ""));
	js = json_object_to_json_string_ext(map, JSON_C_TO_STRING_PLAIN);
	store_op_no_inject(op);
	if (v->exists)
		store_op_omap_cmp(op, KEY_EPOCH, v->epoch_raw, strlen(v->epoch_raw));
	else
		store_op_create(op, true);
	store_op_omap_set(op, KEY_EPOCH, next, strlen(next));
	store_op_omap_set(op, KEY_MAP, js, strlen(js));
	if (extra)
		extra(op, arg);
	return store_op_exec(m->meta, MDSMAP_OID, op);
}

/* ---- fencing -------------------------------------------------------------------------- */

/* Fence @old's store instances: every write of theirs refused from now on.  Return: 0 or -errno. */
static int fence(struct mds *m, struct json_object *old, char *err, size_t len)
{
	struct json_object *f = jobj(old, "fence");
	const char *meta = jstr(f, "meta"), *data = jstr(f, "data");
	int r = 0;

	if (meta && *meta) {
		r = store_blocklist_add(m->st, meta, 0);
		if (r == -ENOTSUP) {
			/* the in-memory test store: nothing to fence with */
			dinfo(MDS, "mdsmap: the %s store cannot fence %s", store_backend_name(m->st), meta);
			r = 0;
		}
	}
	if (!r && data && *data) {
		r = store_blocklist_add(m->data_st ? m->data_st : m->st, data, 0);
		if (r == -ENOTSUP)
			r = 0;
	}
	if (r)
		snprintf(err, len, "cannot fence %s (gid %s, store instances %s%s%s): %s", jstr(old, "name"),
			 jstr(old, "gid"), meta ? meta : "", data ? ", " : "", data ? data : "", strerror(-r));
	return r;
}

/* ---- taking the rank ------------------------------------------------------------------- */

/* The local store's host lock: held by the holder's process while it lives. */
static bool host_lock_try(struct mdsmap *mm)
{
	if (mm->host_lock_fd < 0)
		return false;
	if (!mm->host_lock_held && flock(mm->host_lock_fd, LOCK_EX | LOCK_NB) == 0)
		mm->host_lock_held = true;
	return mm->host_lock_held;
}

static void host_lock_release(struct mdsmap *mm)
{
	if (mm->host_lock_fd >= 0 && mm->host_lock_held) {
		flock(mm->host_lock_fd, LOCK_UN);
		mm->host_lock_held = false;
	}
}

struct takeover_keys {
	struct mdsmap *mm;
	const char *old_gid;
};

static void takeover_extra(struct store_op *op, void *arg)
{
	struct takeover_keys *k = arg;
	char key[64];

	snprintf(key, sizeof(key), PFX_STANDBY "%s", k->mm->gid);
	store_op_omap_rm(op, key);
	if (k->old_gid) {
		snprintf(key, sizeof(key), PFX_BEACON "%s", k->old_gid);
		store_op_omap_rm(op, key);
	}
	snprintf(key, sizeof(key), PFX_BEACON "%s", k->mm->gid);
	store_op_omap_set(op, key, "0", 1);
	if (k->old_gid) {
		snprintf(key, sizeof(key), PFX_HOSTLOCK "%s", k->old_gid);
		store_op_omap_rm(op, key);
	}
	if (k->mm->host_lock_held) {
		snprintf(key, sizeof(key), PFX_HOSTLOCK "%s", k->mm->gid);
		store_op_omap_set(op, key, "1", 1);
	}
}

struct stonith_arg {
	struct mdsmap *mm;
	struct json_object *holder;
};

/*
 * The local store is shared by processes on one host through locks of
 * its own: LMDB's single writer lock, and the OFD locks under which a
 * batch's effects on object files are made (store/local_share.c).  A
 * holder stopped (SIGSTOP, a debugger) or wedged while it holds one of
 * them keeps it, and no write of anyone - the takeover and the fence
 * included - nor even a read that queues behind a write, completes until
 * it runs again or dies: no fence record can reach a process that holds
 * the locks the fence needs.  All the daemons of a local store run on its
 * host, so a standby that takes the rank from a holder whose beacon
 * stopped makes sure that holder is dead first (Pacemaker's STONITH):
 * SIGKILL, checked against the pid and start time the holder wrote in
 * the map so that no other process is hit.  The kernel then drops its OFD
 * locks and LMDB's robust mutex passes the writer lock on.  On RADOS the
 * blocklist fences a holder wherever it runs, and a deposed holder that
 * wakes up finds out by itself and exits.
 */
static void stonith(void *arg)
{
	struct stonith_arg *a = arg;
	struct json_object *v;
	const char *host = jstr(a->holder, "host");
	pid_t pid = 0;
	unsigned long long start = 0;

	if (json_object_object_get_ex(a->holder, "pid", &v))
		pid = (pid_t)json_object_get_int(v);
	if (json_object_object_get_ex(a->holder, "start", &v))
		start = (unsigned long long)json_object_get_int64(v);
	if (host && !strcmp(host, a->mm->host) && pid > 1 && start && proc_start(pid) != start)
		return;         /* gone already (or its pid is another process's now) */
	if (!host || strcmp(host, a->mm->host) || pid <= 1 || pid == getpid() || !start) {
		derr(MDS, "mdsmap: the old holder %s did not renew its beacon and is not a process of this host that "
		     "can be killed (host %s, pid %d): if it holds the local store's locks, writes wait for them",
		     jstr(a->holder, "name"), host ? host : "?", (int)pid);
		return;
	}
	derr(MDS, "mdsmap: the old holder %s (pid %d, this host) did not renew its beacon: killing it (SIGKILL) "
	     "before taking rank 0, since on the local store no fence reaches a process that may hold the store's "
	     "locks", jstr(a->holder, "name"), (int)pid);
	kill(pid, SIGKILL);
	/* its locks go when it has exited (a zombie not yet reaped holds none) */
	for (int i = 0; i < 1000 && proc_start(pid) == start; i++) {
		char path[64], st[512];
		ssize_t n;
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			break;
		n = read(fd, st, sizeof(st) - 1);
		close(fd);
		if (n > 0) {
			char *p;

			st[n] = '\0';
			p = strrchr(st, ')');
			if (p && (p[2] == 'Z' || p[2] == 'X'))
				break;
		}
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
}

/* take the rank from the map @v (just read): 1 taken, 0 lost the race, -errno */
static int takeover(struct mds *m, struct view *v, enum mdsmap_reason why, char *err, size_t len)
{
	struct mdsmap *mm = m->map;
	struct json_object *old = holder(v), *failed = jobj(v->map, "failed"), *map, *hist, *victim;
	struct takeover_keys k = { .mm = mm, .old_gid = old ? jstr(old, "gid") : NULL };
	const char *vstate = failed ? jstr(failed, "reason") : NULL;
	struct stonith_arg sk = { .mm = mm, .holder = old };
	int r;

	/* local store: a holder whose beacon stopped dies before we write (see stonith()) */
	if (why == MDSMAP_GRACE && old && mm->host_lock_fd >= 0)
		stonith(&sk);
	host_lock_try(mm);      /* after the kill: the dead holder's lock is free now */
	map = json_object_new_object();
	json_object_object_add(map, "active", me_json(mm));
	hist = json_object_new_object();
	json_object_object_add(hist, "to", json_object_new_string(mm->name));
	json_object_object_add(hist, "from", json_object_new_string(old ? jstr(old, "name") ? jstr(old, "name") : "?"
							      : failed ? jstr(failed, "name") ? jstr(failed, "name") : "?"
							      : ""));
	json_object_object_add(hist, "reason", json_object_new_string(reason_name(why)));
	json_object_object_add(hist, "at", json_object_new_int64((int64_t)now_real_ns()));
	json_object_object_add(hist, "epoch", json_object_new_int64((int64_t)(v->epoch + 1)));
	json_object_object_add(map, "last_takeover", hist);
	/* whom the new epoch must fence: the holder, or one that left without draining */
	victim = old ? old : (failed && vstate && strcmp(vstate, "stopped")) ? failed : NULL;
	if (victim) {
		struct json_object *f = json_object_new_object();

		json_object_object_add(f, "name", json_object_new_string(jstr(victim, "name") ? jstr(victim, "name") : "?"));
		json_object_object_add(f, "gid", json_object_new_string(jstr(victim, "gid") ? jstr(victim, "gid") : ""));
		json_object_object_add(f, "reason", json_object_new_string(reason_name(why)));
		json_object_object_add(f, "fenced_by", json_object_new_string(mm->name));
		json_object_object_add(map, "failed", f);
	}
	r = cas_map(m, v, map, takeover_extra, &k);
	json_object_put(map);
	if (r == -ECANCELED || r == -EEXIST) {
		dinfo(MDS, "mdsmap: %s lost the race for rank 0 at epoch %" PRIu64 ": another daemon moved the map first",
		      mm->name, v->epoch);
		return 0;
	}
	if (r) {
		snprintf(err, len, "cannot write the MDS map (%s in pool %s): %s", MDSMAP_OID, m->meta_pool_name,
			 strerror(-r));
		return r;
	}
	atomic_store(&mm->epoch, v->epoch + 1);
	mm->reason = why;
	mm->active_since_mono = now_mono_ns();
	snprintf(mm->prev_holder, sizeof(mm->prev_holder), "%s%s%s",
		 victim && jstr(victim, "name") ? jstr(victim, "name") : "",
		 victim ? " gid " : "", victim && jstr(victim, "gid") ? jstr(victim, "gid") : "");
	dinfo(MDS, "mdsmap: %s (gid %s) holds rank 0 at epoch %" PRIu64 " (%s%s%s)", mm->name, mm->gid,
	      v->epoch + 1, reason_name(why), *mm->prev_holder ? "; previous holder " : "", mm->prev_holder);
	/* nothing of the old holder may land once we replay: fence before anything else */
	if (victim && jstr(victim, "gid") && strcmp(jstr(victim, "gid"), mm->gid)) {
		uint64_t t0 = now_mono_ns(), backoff = 50000000ull;

		for (;;) {
			r = fence(m, victim, err, len);
			if (!r)
				break;
			derr(MDS, "mdsmap: %s; retrying: this MDS replays nothing until the old holder is fenced", err);
			if (backoff < 2000000000ull)
				backoff *= 2;
			{
				struct timespec ts = { .tv_sec = (time_t)(backoff / 1000000000ull),
						       .tv_nsec = (long)(backoff % 1000000000ull) };

				nanosleep(&ts, NULL);
			}
			if (now_mono_ns() - t0 > secs_ns(opt_secs(CFG_mds_beacon_grace, 5) * 4))
				return r;
		}
		dinfo(MDS, "mdsmap: fenced %s (gid %s) in %.3f s: none of its writes can land any more",
		      jstr(victim, "name"), jstr(victim, "gid"), (double)(now_mono_ns() - t0) / 1e9);
	}
	return 1;
}

int mdsmap_try_takeover(struct mds *m, enum mdsmap_reason why, char *err, size_t len)
{
	struct view v;
	int r = read_view(m, &v);

	if (!r && *v.damage) {
		snprintf(err, len, "the MDS map (object %s in pool %s) is damaged: %s", MDSMAP_OID, m->meta_pool_name,
			 v.damage);
		r = -EUCLEAN;
	}
	if (!r)
		r = takeover(m, &v, why, err, len);
	view_free(&v);
	return r;
}

/* ---- standby --------------------------------------------------------------------------- */

/* when each standby's registration last changed, on our clock (mm->seen).  Caller holds mm->lock. */
static void seen_update_locked(struct mdsmap *mm, struct json_object *standbys, uint64_t now)
{
	json_object_object_foreach(standbys, gid, reg) {
		struct json_object *seen, *b = NULL;
		const char *cur;

		json_object_object_get_ex(reg, "beacon", &b);
		cur = b ? json_object_get_string(b) : "";
		if (!json_object_object_get_ex(mm->seen, gid, &seen) ||
		    strcmp(json_object_get_string(json_object_array_get_idx(seen, 0)), cur)) {
			seen = json_object_new_array();
			json_object_array_add(seen, json_object_new_string(cur));
			json_object_array_add(seen, json_object_new_int64((int64_t)now));
			json_object_object_add(mm->seen, gid, seen);
		}
	}
}

/* is the standby @gid alive: its beacon moved within the grace (as this daemon saw it) */
static bool standby_live_locked(struct mdsmap *mm, const char *gid, uint64_t now, double *age)
{
	struct json_object *seen;

	if (!json_object_object_get_ex(mm->seen, gid, &seen)) {
		*age = -1;
		return false;
	}
	*age = (double)(now - (uint64_t)json_object_get_int64(json_object_array_get_idx(seen, 1))) / 1e9;
	return *age < opt_secs(CFG_mds_beacon_grace, 5);
}

/*
 * A live standby-replay other than us in @v (its registration moved within
 * the grace): a cold standby lets it take a free rank first.
 */
static bool other_replay_live(struct mdsmap *mm, const struct view *v, uint64_t now)
{
	bool live = false;

	pthread_mutex_lock(&mm->lock);
	seen_update_locked(mm, v->standbys, now);
	json_object_object_foreach(v->standbys, gid, reg) {
		const char *st = jstr(reg, "state");
		double age;

		if (strcmp(gid, mm->gid) && st && !strcmp(st, "standby-replay") &&
		    standby_live_locked(mm, gid, now, &age) && age >= 0)
			live = true;
	}
	pthread_mutex_unlock(&mm->lock);
	return live;
}

static void registered(int r, void *arg)
{
	struct mdsmap *mm = arg;

	if (r)
		dout(MDS, 1, "mdsmap: standby registration: %s", strerror(-r));
	atomic_store(&mm->registering, false);
}

/*
 * Rewrite our standby registration (its beacon).  Not waited for: a write
 * may wait for the local store's writer lock, which a stopped holder may
 * keep, and the standby must still see the grace run out.  One at a time.
 */
static void register_standby(struct mds *m, uint64_t n)
{
	struct mdsmap *mm = m->map;
	struct json_object *o = json_object_new_object();
	struct store_op *op = store_op_new();
	const char *js;
	char key[64];
	int r;

	if (!op || atomic_exchange(&mm->registering, true)) {
		store_op_free(op);
		json_object_put(o);
		return;
	}
	json_object_object_add(o, "name", json_object_new_string(mm->name));
	json_object_object_add(o, "host", json_object_new_string(mm->host));
	json_object_object_add(o, "pid", json_object_new_int((int)getpid()));
	pthread_mutex_lock(&mm->lock);
	json_object_object_add(o, "addr", json_object_new_string(mm->addr));
	pthread_mutex_unlock(&mm->lock);
	json_object_object_add(o, "state", json_object_new_string(sreplay_following(m) ? "standby-replay" : "standby"));
	json_object_object_add(o, "beacon", json_object_new_int64((int64_t)n));
	sreplay_status_add(m, o);
	js = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	snprintf(key, sizeof(key), PFX_STANDBY "%s", mm->gid);
	store_op_no_inject(op);
	store_op_omap_set(op, key, js, strlen(js));
	r = store_op_submit(m->meta, MDSMAP_OID, op, registered, mm);
	if (r) {
		dout(MDS, 1, "mdsmap: standby registration: %s", strerror(-r));
		atomic_store(&mm->registering, false);
	}
	json_object_put(o);
}

static void unregister_standby(struct mds *m)
{
	struct store_op *op = store_op_new();
	char key[64];

	if (!op)
		return;
	snprintf(key, sizeof(key), PFX_STANDBY "%s", m->map->gid);
	store_op_no_inject(op);
	store_op_assert_exists(op);
	store_op_omap_rm(op, key);
	store_op_exec(m->meta, MDSMAP_OID, op);
}

/*
 * The standby's watchdog, local store only.  Every store call of a process
 * goes through its store worker, which waits for the writer lock; with a
 * stopped holder keeping that lock, even the standby's reads of the map
 * never return, so the standby would never see the grace run out.  The
 * watchdog sees it instead: a read of the map that has not returned for
 * the grace while the holder's beacon last moved longer than the grace ago
 * means the holder is stopped inside the lock, and it gets stonith().
 */
struct watchdog {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;                    /* protected by mu, and the rest */
	uint64_t busy_since;          /* a read of the map started then (0: none in flight) */
	uint64_t changed_mono;        /* the holder's beacon last moved then */
	struct json_object *holder;   /* the holder as last read (owned) */
	bool fired;                   /* stonith() ran for this holder */
	struct mdsmap *mm;
	double grace;
};

static void *watchdog_main(void *arg)
{
	struct watchdog *w = arg;

	pthread_mutex_lock(&w->mu);
	while (!w->stop) {
		struct timespec ts = ns_to_timespec(now_mono_ns() + 100000000ull);
		uint64_t now = now_mono_ns();

		if (w->busy_since && w->holder && !w->fired && now - w->busy_since >= secs_ns(w->grace) &&
		    now - w->changed_mono >= secs_ns(w->grace)) {
			struct stonith_arg a = { .mm = w->mm, .holder = json_object_get(w->holder) };

			w->fired = true;
			pthread_mutex_unlock(&w->mu);
			derr(MDS, "mdsmap: reading the MDS map has not returned for %.1f s, and the holder's beacon did "
			     "not move for as long: the store's writer lock is held by a process that does not run",
			     w->grace);
			stonith(&a);
			json_object_put(a.holder);
			pthread_mutex_lock(&w->mu);
			continue;
		}
		pthread_cond_timedwait(&w->cv, &w->mu, &ts);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static void watchdog_busy(struct watchdog *w, bool busy)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->busy_since = busy ? now_mono_ns() : 0;
	pthread_mutex_unlock(&w->mu);
}

static void watchdog_holder(struct watchdog *w, struct json_object *h, uint64_t changed_mono)
{
	const char *old, *cur;

	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	old = jstr(w->holder, "gid");
	cur = jstr(h, "gid");
	if (!old || !cur || strcmp(old, cur))
		w->fired = false;
	json_object_put(w->holder);
	w->holder = h ? json_object_get(h) : NULL;
	w->changed_mono = changed_mono;
	pthread_mutex_unlock(&w->mu);
}

static struct watchdog *watchdog_start(struct mdsmap *mm, double grace)
{
	struct watchdog *w;
	pthread_condattr_t ca;

	if (mm->host_lock_fd < 0 || !(w = calloc(1, sizeof(*w))))
		return NULL;
	w->mm = mm;
	w->grace = grace;
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&w->th, NULL, watchdog_main, w)) {
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		free(w);
		return NULL;
	}
	return w;
}

static void watchdog_stop(struct watchdog *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	json_object_put(w->holder);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w);
}

/* the registration in flight (its callback uses @mm) has completed */
static void wait_registered(struct mdsmap *mm)
{
	struct timespec ts = { 0, 1000000 };

	while (atomic_load(&mm->registering))
		nanosleep(&ts, NULL);
}

int mdsmap_join(struct mds *m, const sigset_t *sigs, int *sig, char *err, size_t len)
{
	struct mdsmap *mm = m->map;
	double grace = opt_secs(CFG_mds_beacon_grace, 5), iv = opt_secs(CFG_mds_beacon_interval, 1);
	uint64_t poll_ns = secs_ns(iv / 4 < 0.05 ? 0.05 : iv / 4 > 1 ? 1 : iv / 4);
	char watched_gid[64] = "", watched_beacon[40] = "", last_damage[384] = "";
	uint64_t changed_mono = 0, next_reg = 0, nreg = 0, vacant_since = 0;
	bool said_standby = false, defer = false;
	double defer_s = opt_secs(CFG_mds_standby_replay_defer, 2);
	struct watchdog *wd = watchdog_start(mm, grace);
	int r;

	for (;;) {
		struct view v;
		struct json_object *h;
		enum mdsmap_reason why = MDSMAP_GRACE;
		bool take = false;
		uint64_t now;

		if (sreplay_restart_wanted(m) != SREPLAY_RUNNING) {
			watchdog_stop(wd);
			wait_registered(mm);
			unregister_standby(m);
			return 2;
		}
		watchdog_busy(wd, true);
		r = read_view(m, &v);
		watchdog_busy(wd, false);
		now = now_mono_ns();
		if (r) {
			derr(MDS, "mdsmap: cannot read the MDS map (%s in pool %s): %s; retrying", MDSMAP_OID,
			     m->meta_pool_name, strerror(-r));
			view_free(&v);
			goto sleep;
		}
		if (*v.damage) {
			if (strcmp(v.damage, last_damage))
				derr(MDS, "mdsmap: the MDS map (object %s in pool %s) is damaged: %s.  No daemon takes "
				     "rank 0 on a guess: repair or remove the object (the journal and the namespace are "
				     "not in it) and the standbys go on", MDSMAP_OID, m->meta_pool_name, v.damage);
			snprintf(last_damage, sizeof(last_damage), "%s", v.damage);
			pthread_mutex_lock(&mm->lock);
			snprintf(mm->damage, sizeof(mm->damage), "%s", v.damage);
			pthread_mutex_unlock(&mm->lock);
			view_free(&v);
			goto sleep;
		}
		if (*last_damage) {
			dinfo(MDS, "mdsmap: the MDS map is readable again");
			*last_damage = '\0';
			pthread_mutex_lock(&mm->lock);
			mm->damage[0] = '\0';
			pthread_mutex_unlock(&mm->lock);
		}
		h = holder(&v);
		/* a cold standby lets a live standby-replay take a free rank first */
		defer = !sreplay_following(m) && other_replay_live(mm, &v, now);
		if (!v.exists || (!h && !jobj(v.map, "failed") && !jobj(v.map, "last_takeover"))) {
			take = true;
			why = MDSMAP_FIRST;
		} else if (!h) {
			struct json_object *f = jobj(v.map, "failed");
			const char *fname = jstr(f, "name"), *freason = jstr(f, "reason");

			/* `mds fail`: the failed daemon's next instance lets a standby go first */
			if (!vacant_since)
				vacant_since = now;
			take = true;
			why = MDSMAP_VACANT;
			if (fname && !strcmp(fname, mm->name) && freason && !strcmp(freason, "mds fail") &&
			    now - vacant_since < secs_ns(grace))
				take = false;
			if (defer && now - vacant_since < secs_ns(defer_s))
				take = false;
		} else {
			const char *gid = jstr(h, "gid") ? jstr(h, "gid") : "", *name = jstr(h, "name");
			const char *b = jstr(v.beacons, gid);
			struct json_object *hl;

			vacant_since = 0;
			if (strcmp(gid, watched_gid) || strcmp(b ? b : "", watched_beacon)) {
				snprintf(watched_gid, sizeof(watched_gid), "%s", gid);
				snprintf(watched_beacon, sizeof(watched_beacon), "%s", b ? b : "");
				changed_mono = now;
			}
			watchdog_holder(wd, h, changed_mono);
			if (name && !strcmp(name, mm->name) && strcmp(gid, mm->gid)) {
				take = true;
				why = MDSMAP_SAME_NAME;
			} else if (!defer &&
				   ((json_object_object_get_ex(h, "host_lock", &hl) && json_object_get_boolean(hl)) ||
				    json_object_object_get_ex(v.hostlocks, gid, &hl)) && mm->host_lock_fd >= 0) {
				if (host_lock_try(mm)) {
					take = true;
					why = MDSMAP_HOST_LOCK;
				}
			}
			if (!take && now - changed_mono >= secs_ns(grace + (defer ? defer_s : 0))) {
				take = true;
				why = MDSMAP_GRACE;
			}
			if (!take && !said_standby) {
				dinfo(MDS, "mdsmap: %s (gid %s) is a standby: rank 0 is held by %s (gid %s) at epoch %" PRIu64,
				      mm->name, mm->gid, name ? name : "?", gid, v.epoch);
				said_standby = true;
			}
		}
		if (take) {
			if (why == MDSMAP_GRACE)
				derr(MDS, "mdsmap: the beacon of rank 0's holder (gid %s) has not moved for %.1f s "
				     "(mds_beacon_grace %.1f s): taking over", watched_gid,
				     (double)(now - changed_mono) / 1e9, grace);
			r = takeover(m, &v, why, err, len);
			view_free(&v);
			if (r == 1 || r < 0) {
				watchdog_stop(wd);
				wait_registered(mm);
				return r == 1 ? 0 : r;
			}
			host_lock_release(mm);
			changed_mono = now_mono_ns();   /* someone else won: watch the new holder */
			*watched_gid = '\0';
			goto sleep;
		}
		/* a standby keeps no host lock it does not take the rank with */
		host_lock_release(mm);
		view_free(&v);
		if (now >= next_reg) {
			register_standby(m, ++nreg);
			next_reg = now + secs_ns(iv);
		}
sleep:
		{
			struct timespec ts = { .tv_sec = (time_t)(poll_ns / 1000000000ull),
					       .tv_nsec = (long)(poll_ns % 1000000000ull) };
			siginfo_t si;
			int s = sigtimedwait(sigs, &si, &ts);

			if (s == SIGTERM || s == SIGINT) {
				watchdog_stop(wd);
				wait_registered(mm);
				unregister_standby(m);
				*sig = s;
				return 1;
			}
			if (s == SIGHUP)
				log_reopen();
		}
	}
}

/* ---- the holder's beacon ------------------------------------------------------------------ */

/* The map moved or the store fenced us: someone else holds the rank.  Never returns. */
static void __attribute__((noreturn)) deposed(struct mds *m, int r)
{
	struct mdsmap *mm = m->map;
	struct view v;
	struct json_object *h = NULL;
	int rr = read_view(m, &v);

	if (rr == 0)
		h = holder(&v);
	if (rr)
		derr(MDS, "mdsmap: %s (gid %s) was deposed: %s, and the map cannot be read (%s: a fenced RADOS "
		     "client may not read either).  This daemon held rank 0 at epoch %" PRIu64 ", writes nothing "
		     "more and exits (start it again to serve as a standby)", mm->name, mm->gid,
		     r == -ESHUTDOWN ? "the store fenced its writes" : "the map moved", strerror(-rr),
		     atomic_load(&mm->epoch));
	else
		derr(MDS, "mdsmap: %s (gid %s) was deposed: %s; the MDS map is at epoch %" PRIu64 " and rank 0 is "
		     "held by %s (gid %s).  This daemon held it at epoch %" PRIu64 ", writes nothing more and exits "
		     "(start it again to serve as a standby)", mm->name, mm->gid,
		     r == -ESHUTDOWN ? "the store fenced its writes" : "the map moved", v.epoch,
		     h && jstr(h, "name") ? jstr(h, "name") : "nobody", h && jstr(h, "gid") ? jstr(h, "gid") : "-",
		     atomic_load(&mm->epoch));
	view_free(&v);
	_exit(1);
}

struct renew_keys {
	struct mdsmap *mm;
	uint64_t n;
};

static void renew_extra(struct store_op *op, void *arg)
{
	struct renew_keys *k = arg;
	char key[64], val[32];

	snprintf(key, sizeof(key), PFX_BEACON "%s", k->mm->gid);
	snprintf(val, sizeof(val), "%" PRIu64, k->n);
	store_op_omap_set(op, key, val, strlen(val));
}

/*
 * One renewal: assert our epoch, bump the beacon, and say whether we hold
 * the host lock (a key of its own beside the beacon: a liveness hint for
 * the standbys, not a change of who holds the rank, so the epoch stays).
 * Return: 0, -ECANCELED/-ESHUTDOWN (deposed), -errno.
 */
#define PRUNE_MAX 8               /* dead standbys dropped per renewal */
#define PRUNE_GRACES 3            /* silent this many beacon graces: dead */

/*
 * Standbys whose registration has not moved for PRUNE_GRACES x the grace,
 * as the holder saw it (killed -9, their machine gone): their entries go
 * with our next renewal, as Ceph's monitors drop a standby whose beacons
 * stopped, so `fs status` does not list them for ever and health counts
 * only live ones.  One that was only paused registers again when it runs.
 */
static int stale_standbys(struct mdsmap *mm, uint64_t now, char gids[][sizeof(mm->gid)], char names[][64])
{
	struct json_object *sbs = NULL;
	double limit = PRUNE_GRACES * opt_secs(CFG_mds_beacon_grace, 5), age;
	int n = 0;

	pthread_mutex_lock(&mm->lock);
	if (mm->view && json_object_object_get_ex(mm->view, "standbys", &sbs)) {
		json_object_object_foreach(sbs, gid, reg) {
			if (n == PRUNE_MAX)
				break;
			if (standby_live_locked(mm, gid, now, &age) || age < limit || strlen(gid) >= sizeof(mm->gid))
				continue;
			snprintf(gids[n], sizeof(mm->gid), "%s", gid);
			snprintf(names[n], 64, "%s", jstr(reg, "name") ? jstr(reg, "name") : "?");
			n++;
		}
	}
	pthread_mutex_unlock(&mm->lock);
	return n;
}

static int renew(struct mds *m)
{
	struct mdsmap *mm = m->map;
	struct renew_keys k = { .mm = mm, .n = ++mm->beacons };
	struct store_op *op = store_op_new();
	char cur[32], key[192], gids[PRUNE_MAX][sizeof(mm->gid)], names[PRUNE_MAX][64];
	int nstale, i, r;

	if (!op)
		return -ENOMEM;
	epoch_str(cur, sizeof(cur), atomic_load(&mm->epoch));
	store_op_no_inject(op);
	store_op_omap_cmp(op, KEY_EPOCH, cur, strlen(cur));
	renew_extra(op, &k);
	snprintf(key, sizeof(key), PFX_HOSTLOCK "%s", mm->gid);
	if (mm->host_lock_held)
		store_op_omap_set(op, key, "1", 1);
	nstale = stale_standbys(mm, now_mono_ns(), gids, names);
	for (i = 0; i < nstale; i++) {
		snprintf(key, sizeof(key), PFX_STANDBY "%s", gids[i]);
		store_op_omap_rm(op, key);
	}
	r = store_op_exec(m->meta, MDSMAP_OID, op);
	if (!r && nstale) {
		pthread_mutex_lock(&mm->lock);
		for (i = 0; i < nstale; i++)
			json_object_object_del(mm->seen, gids[i]);
		pthread_mutex_unlock(&mm->lock);
		for (i = 0; i < nstale; i++)
			dinfo(MDS, "mdsmap: standby %s (gid %s) silent for %d beacon graces: dropped from the map "
			      "(it registers again if it runs)", names[i], gids[i], PRUNE_GRACES);
	}
	return r;
}

/* For status: the map as the beacon last read it, and when each daemon's beacon last moved. */
static void refresh_view(struct mds *m)
{
	struct mdsmap *mm = m->map;
	struct view v;
	struct json_object *o;
	uint64_t now = now_mono_ns();

	if (read_view(m, &v))
		return;
	o = json_object_new_object();
	json_object_object_add(o, "standbys", json_object_get(v.standbys));
	json_object_object_add(o, "beacons", json_object_get(v.beacons));
	if (v.map)
		json_object_object_add(o, "map", json_object_get(v.map));
	pthread_mutex_lock(&mm->lock);
	seen_update_locked(mm, v.standbys, now);
	json_object_put(mm->view);
	mm->view = o;
	mm->view_mono = now;
	snprintf(mm->damage, sizeof(mm->damage), "%s", v.damage);
	pthread_mutex_unlock(&mm->lock);
	view_free(&v);
}

/* Leave the rank vacant (@reason "stopped": drained, nothing to fence; "mds fail": fence us). */
static int vacate(struct mds *m, const char *reason)
{
	struct mdsmap *mm = m->map;
	struct view v;
	char cur[32];
	int r = read_view(m, &v);

	epoch_str(cur, sizeof(cur), atomic_load(&mm->epoch));
	if (!r && strcmp(v.epoch_raw, cur))
		r = -ECANCELED;
	if (!r) {
		struct json_object *map = json_object_get(v.map), *f = me_json(mm);

		json_object_object_del(map, "active");
		json_object_object_add(f, "reason", json_object_new_string(reason));
		json_object_object_add(map, "failed", f);
		r = cas_map(m, &v, map, NULL, NULL);
		json_object_put(map);
	}
	view_free(&v);
	if (!r)
		dinfo(MDS, "mdsmap: %s (gid %s) left rank 0 (%s) at epoch %" PRIu64, mm->name, mm->gid, reason,
		      v.epoch + 1);
	else
		derr(MDS, "mdsmap: could not leave rank 0 in the map (%s): standbys take it after mds_beacon_grace",
		     strerror(-r));
	return r;
}

static void *beacon_main(void *arg)
{
	struct mds *m = arg;
	struct mdsmap *mm = m->map;
	uint64_t last_ok = now_mono_ns(), next_view = 0, last_said = 0;

	refresh_view(m);        /* `fs status` knows the standbys from the start */

	for (;;) {
		double iv = opt_secs(CFG_mds_beacon_interval, 1), grace = opt_secs(CFG_mds_beacon_grace, 5);
		uint64_t wake = now_mono_ns() + secs_ns(iv);
		struct timespec ts = ns_to_timespec(wake);
		bool stop, fail;
		int r;

		pthread_mutex_lock(&mm->lock);
		while (!mm->stop && !mm->fail && now_mono_ns() < wake)
			if (pthread_cond_timedwait(&mm->cond, &mm->lock, &ts))
				break;
		stop = mm->stop;
		fail = mm->fail;
		pthread_mutex_unlock(&mm->lock);
		if (stop)
			break;
		if (fail) {
			vacate(m, "mds fail");
			derr(MDS, "mdsmap: %s (gid %s) failed by the operator (mds fail): exiting; a standby takes "
			     "rank 0 and fences this daemon", mm->name, mm->gid);
					_exit(1);
		}
		if (mm->host_lock_fd >= 0 && !mm->host_lock_held)
			host_lock_try(mm);   /* the renewal then says our death is quick to see */
		r = renew(m);
		if (r == -ECANCELED || r == -ESHUTDOWN)
			deposed(m, r);
		if (!r) {
			last_ok = now_mono_ns();
		} else if (now_mono_ns() - last_ok > secs_ns(grace) && now_mono_ns() - last_said > secs_ns(grace)) {
			/*
			 * Not an exit: a store that refuses every write refuses
			 * a standby's takeover too, and the journal's read-only
			 * state keeps serving reads.  A standby that can write
			 * fences us, and then the refusal says so (ESHUTDOWN).
			 */
			derr(MDS, "mdsmap: %s (gid %s) has not renewed its beacon for %.1f s (%s): a standby that can "
			     "reach the store takes rank 0 and fences this daemon", mm->name, mm->gid,
			     (double)(now_mono_ns() - last_ok) / 1e9, strerror(-r));
			last_said = now_mono_ns();
		} else {
			dout(MDS, 1, "mdsmap: beacon: %s", strerror(-r));
		}
		if (now_mono_ns() >= next_view) {
			refresh_view(m);
			next_view = now_mono_ns() + secs_ns(iv);
		}
	}
	return NULL;
}

/* ---- set-up, status ---------------------------------------------------------------------- */

int mdsmap_init(struct mds *m, char *err, size_t len)
{
	struct mdsmap *mm = calloc(1, sizeof(*mm));
	uint8_t rnd[8];
	char name[64];
	pthread_condattr_t ca;
	int r;

	if (!mm) {
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	cfg_str(CFG_mds_name, name, sizeof(name));
	if (!*name || strlen(name) > 48 || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
						       "0123456789_-") != strlen(name)) {
		snprintf(err, len, "mds_name '%s' is not a name: 1 to 48 letters, digits, '_' or '-'", name);
		free(mm);
		return -EINVAL;
	}
	snprintf(mm->name, sizeof(mm->name), "mds.%s", name);
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		uint64_t x = now_real_ns() ^ ((uint64_t)getpid() << 40);

		memcpy(rnd, &x, sizeof(rnd));
	}
	for (int i = 0; i < 8; i++)
		snprintf(mm->gid + 2 * i, 3, "%02x", rnd[i]);
	r = store_instance_addr(m->st, mm->fence_meta, sizeof(mm->fence_meta));
	if (r && r != -ENOTSUP) {
		snprintf(err, len, "the store gives no instance address to fence: %s", strerror(-r));
		free(mm);
		return r;
	}
	if (m->data_st) {
		r = store_instance_addr(m->data_st, mm->fence_data, sizeof(mm->fence_data));
		if (r && r != -ENOTSUP) {
			snprintf(err, len, "the data store gives no instance address to fence: %s", strerror(-r));
			free(mm);
			return r;
		}
	}
	if (gethostname(mm->host, sizeof(mm->host)))
		snprintf(mm->host, sizeof(mm->host), "localhost");
	mm->host[sizeof(mm->host) - 1] = '\0';
	mm->host_lock_fd = -1;
	if (m->store_path && !strcmp(store_backend_name(m->st), "local")) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/mds.active.lock", m->store_path);
		mm->host_lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (mm->host_lock_fd < 0)
			dinfo(MDS, "mdsmap: %s: %s: a dead holder is seen after mds_beacon_grace only", path,
			      strerror(errno));
	}
	pthread_mutex_init(&mm->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&mm->cond, &ca);
	pthread_condattr_destroy(&ca);
	mm->seen = json_object_new_object();
	m->map = mm;
	return 0;
}

void mdsmap_set_addr(struct mds *m, const char *addr)
{
	pthread_mutex_lock(&m->map->lock);
	snprintf(m->map->addr, sizeof(m->map->addr), "%s", addr);
	pthread_mutex_unlock(&m->map->lock);
}

int mdsmap_start(struct mds *m)
{
	int r = pthread_create(&m->map->thread, NULL, beacon_main, m);

	if (r)
		return -r;
	m->map->thread_started = true;
	return 0;
}

void mdsmap_stop(struct mds *m, bool vacate_rank)
{
	struct mdsmap *mm = m->map;

	if (!mm)
		return;
	if (mm->thread_started) {
		pthread_mutex_lock(&mm->lock);
		mm->stop = true;
		pthread_cond_broadcast(&mm->cond);
		pthread_mutex_unlock(&mm->lock);
		pthread_join(mm->thread, NULL);
		mm->thread_started = false;
	}
	if (vacate_rank && atomic_load(&mm->epoch))
		vacate(m, "stopped");
	host_lock_release(mm);
}

void mdsmap_free(struct mds *m)
{
	struct mdsmap *mm = m->map;

	if (!mm)
		return;
	if (mm->host_lock_fd >= 0)
		close(mm->host_lock_fd);
	json_object_put(mm->view);
	json_object_put(mm->seen);
	pthread_mutex_destroy(&mm->lock);
	pthread_cond_destroy(&mm->cond);
	free(mm);
	m->map = NULL;
}

int mdsmap_fail(struct mds *m, char *err, size_t len)
{
	struct mdsmap *mm = m->map;

	if (!mm || !atomic_load(&mm->epoch) || !mm->thread_started) {
		snprintf(err, len, "this daemon does not hold rank 0");
		return -EINVAL;
	}
	pthread_mutex_lock(&mm->lock);
	mm->fail = true;
	pthread_cond_broadcast(&mm->cond);
	pthread_mutex_unlock(&mm->lock);
	return 0;
}

uint64_t mdsmap_epoch(struct mds *m)
{
	return m->map ? atomic_load(&m->map->epoch) : 0;
}

const char *mdsmap_name(struct mds *m)
{
	return m->map ? m->map->name : "mds.0";
}


struct json_object *mdsmap_status_json(struct mds *m)
{
	struct mdsmap *mm = m->map;
	struct json_object *o = json_object_new_object(), *ranks = json_object_new_array(),
			   *r0 = json_object_new_object(), *sb = json_object_new_array(), *map = NULL;
	uint64_t now = now_mono_ns(), aseq = m->j ? journal_last_seq(m) : 0;  /* not under mm->lock, a leaf */

	if (!mm) {
		json_object_put(ranks);
		json_object_put(r0);
		json_object_put(sb);
		return o;
	}
	json_object_object_add(o, "epoch", json_object_new_int64((int64_t)atomic_load(&mm->epoch)));
	json_object_object_add(r0, "rank", json_object_new_int(0));
	json_object_object_add(r0, "state", json_object_new_string("active"));
	json_object_object_add(r0, "name", json_object_new_string(mm->name));
	json_object_object_add(r0, "gid", json_object_new_string(mm->gid));
	pthread_mutex_lock(&mm->lock);
	json_object_object_add(r0, "addr", json_object_new_string(mm->addr));
	json_object_object_add(r0, "host_lock", json_object_new_boolean(mm->host_lock_held));
	json_object_object_add(r0, "active_for_s", json_object_new_double((double)(now - mm->active_since_mono) / 1e9));
	json_object_object_add(r0, "took_over_because", json_object_new_string(reason_name(mm->reason)));
	if (*mm->prev_holder)
		json_object_object_add(r0, "previous_holder", json_object_new_string(mm->prev_holder));
	json_object_array_add(ranks, r0);
	if (mm->view) {
		struct json_object *sbs = NULL;

		json_object_object_get_ex(mm->view, "standbys", &sbs);
		json_object_object_get_ex(mm->view, "map", &map);
		if (sbs) {
			json_object_object_foreach(sbs, gid, reg) {
				struct json_object *e = json_object_new_object();
				double age;
				bool live = standby_live_locked(mm, gid, now, &age);

				json_object_object_add(e, "name", json_object_new_string(jstr(reg, "name") ? jstr(reg, "name") : "?"));
				json_object_object_add(e, "gid", json_object_new_string(gid));
				const char *st = jstr(reg, "state") ? jstr(reg, "state") : "standby";
				struct json_object *rp = jobj(reg, "replay");
				char stb[48];

				snprintf(stb, sizeof(stb), "%s%s", st, live ? "" : " (laggy)");
				json_object_object_add(e, "state", json_object_new_string(stb));
				if (rp) {
					struct json_object *c = json_object_get(rp), *q;
					uint64_t seq = json_object_object_get_ex(rp, "seq", &q) ? (uint64_t)json_object_get_int64(q) : 0;

					/* as of its registration, at most a beacon interval old */
					json_object_object_add(c, "active_seq", json_object_new_int64((int64_t)aseq));
					json_object_object_add(c, "behind_events",
							       json_object_new_int64(aseq > seq ? (int64_t)(aseq - seq) : 0));
					json_object_object_add(e, "replay", c);
				}
				json_object_object_add(e, "host", json_object_new_string(jstr(reg, "host") ? jstr(reg, "host") : ""));
				json_object_object_add(e, "addr", json_object_new_string(jstr(reg, "addr") ? jstr(reg, "addr") : ""));
				json_object_object_add(e, "beacon_age_s", json_object_new_double(age));
				json_object_array_add(sb, e);
			}
		}
		if (map) {
			struct json_object *lt = jobj(map, "last_takeover"), *f = jobj(map, "failed");

			if (lt)
				json_object_object_add(o, "last_takeover", json_object_get(lt));
			if (f)
				json_object_object_add(o, "last_failed", json_object_get(f));
		}
	}
	if (*mm->damage)
		json_object_object_add(o, "damage", json_object_new_string(mm->damage));
	pthread_mutex_unlock(&mm->lock);
	json_object_object_add(o, "ranks", ranks);
	json_object_object_add(o, "standbys", sb);
	json_object_object_add(o, "object", json_object_new_string(MDSMAP_OID));
	json_object_object_add(o, "beacon_interval_s", json_object_new_double(opt_secs(CFG_mds_beacon_interval, 1)));
	json_object_object_add(o, "beacon_grace_s", json_object_new_double(opt_secs(CFG_mds_beacon_grace, 5)));
	return o;
}

void mdsmap_health(struct mds *m, mdsmap_health_fn add, void *h)
{
	struct mdsmap *mm = m->map;
	uint64_t now = now_mono_ns();
	unsigned live = 0, total = 0;
	char msg[512];

	if (!mm || !atomic_load(&mm->epoch))
		return;
	pthread_mutex_lock(&mm->lock);
	if (mm->view) {
		struct json_object *sbs = NULL;

		json_object_object_get_ex(mm->view, "standbys", &sbs);
		if (sbs) {
			json_object_object_foreach(sbs, gid, reg) {
				double age;

				(void)reg;
				total++;
				live += standby_live_locked(mm, gid, now, &age);
			}
		}
	}
	pthread_mutex_unlock(&mm->lock);
	if (live < cfg_uint(CFG_mds_standby_count_wanted)) {
		snprintf(msg, sizeof(msg), "%u standby daemon%s registered, %u alive (mds_standby_count_wanted %" PRIu64
			 "): if %s fails, %s", total, total == 1 ? "" : "s", live,
			 cfg_uint(CFG_mds_standby_count_wanted), mm->name,
			 live ? "fewer standbys than wanted remain" : "nobody takes rank 0 over");
		add(h, "MDS_INSUFFICIENT_STANDBY", false, "no standby MDS daemon is available", msg);
	}
	pthread_mutex_lock(&mm->lock);
	if (mm->view) {
		struct json_object *sbs = NULL;
		double warn = opt_secs(CFG_mds_standby_replay_lag_warn, 10);

		json_object_object_get_ex(mm->view, "standbys", &sbs);
		if (sbs) {
			json_object_object_foreach(sbs, gid, reg) {
				struct json_object *rp = jobj(reg, "replay"), *q;
				double age, lag;

				if (!rp || !standby_live_locked(mm, gid, now, &age) ||
				    !json_object_object_get_ex(rp, "caught_up_age_s", &q))
					continue;
				lag = json_object_get_double(q) + (age > 0 ? age : 0);
				if (lag < warn)
					continue;
				snprintf(msg, sizeof(msg), "standby-replay %s last caught up with the journal %.1f s ago "
					 "(mds_standby_replay_lag_warn %.1f s): a takeover by it replays what it lacks",
					 jstr(reg, "name") ? jstr(reg, "name") : gid, lag, warn);
				pthread_mutex_unlock(&mm->lock);
				add(h, "MDS_STANDBY_REPLAY_LAGGING", false, "a standby-replay daemon is falling behind", msg);
				pthread_mutex_lock(&mm->lock);
				break;
			}
		}
	}
	pthread_mutex_unlock(&mm->lock);
	if (m->reconnecting && mm->reason != MDSMAP_FIRST) {
		snprintf(msg, sizeof(msg), "%s took rank 0 over %.1f s ago (%s) and waits for the clients of %s to "
			 "reconnect", mm->name, (double)(now - mm->active_since_mono) / 1e9, reason_name(mm->reason),
			 *mm->prev_holder ? mm->prev_holder : "the previous holder");
		add(h, "FS_DEGRADED", false, "a failover is in progress", msg);
	}
}
