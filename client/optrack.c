/*
 * optrack.c - the operations in flight, what each waits for, and the
 * watchdog that says when one is stuck.
 *
 * A frontend request (a FUSE operation, an NFS procedure or compound) runs
 * on one thread from its start to its reply.  Each thread that serves a
 * client has a slot here (struct lc_op_slot, registered on its first
 * request and reused after the thread exits); lc_op_begin() and
 * lc_op_end() fill and clear it with atomic stores only, so tracking costs
 * a request nothing it would notice.  The places in client/ that block set
 * what the request waits for (lc_op_wait_set: an MDS reply, a cap flush,
 * another thread's writeback of an inode, room in the write buffer, the
 * store, a file lock, the session, the kernel's invalidations) and clear
 * it after.  `ops` on the client's admin socket lists every slot in use
 * (Ceph's `dump_ops_in_flight`, with the wait added).
 *
 * The watchdog thread looks once a second.  An operation older than
 * client_op_warn_s is logged once, with its wait, and counted; the count
 * and the oldest one's description go to the MDS with the next session
 * renewal, sent at once when they change (mdsc_set_slow_ops), where
 * `loligo health` shows them as MDS_CLIENT_SLOW_OPS, and the warning
 * clears when they complete.  The watchdog touches no inode lock, no
 * writeback and no cap: a client deadlocked anywhere else still says so.
 *
 * Locking: slots_lock (a leaf) guards the slot list; a slot's fields are
 * atomics written by its own thread and read racily by the readers, which
 * is all a report needs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <json-c/json.h>

#include "client/cache_int.h"
#include "client/optrack.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"

/*
 * Slots are never freed (a thread's key destructor, or a thread still
 * holding a pointer to its slot, may come after its client is gone): one
 * per thread that ever served a client, reused once free.  slots_lock is a
 * leaf.
 */
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lc_op_slot *all_slots;
static _Atomic uint64_t next_cid = 1;
static __thread uint64_t my_cid;
/* the frontend request this thread serves (lc_op_begin .. lc_op_end), kept
 * apart from the slot (which may be missing: no memory, another client's
 * operation) for lc_op_frontend: whose change it is (frontend.c) */
static __thread const struct lclient *fe_client;
static __thread const char *fe_who;
static __thread int fe_depth;
static pthread_key_t slot_key;
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;

/* the thread is gone: its slot may serve another (unless it does already) */
static void slot_release(void *p)
{
	struct lc_op_slot *s = p;

	pthread_mutex_lock(&slots_lock);
	if (atomic_load(&s->tid) == (int)syscall(SYS_gettid)) {
		atomic_store(&s->start_ns, 0);
		atomic_store(&s->c, NULL);
		atomic_store(&s->tid, 0);
	}
	pthread_mutex_unlock(&slots_lock);
}

static void slot_key_init(void)
{
	pthread_key_create(&slot_key, slot_release);
}

static struct lc_op_slot *slot_get(struct lclient *c)
{
	struct lc_op_slot *s = lc_my_slot;
	int tid;

	if (s && my_cid == c->op_cid)
		return s;
	pthread_once(&slot_once, slot_key_init);
	if (s && s->depth)
		return NULL;       /* inside another client's operation: not tracked twice */
	if (s)
		slot_release(s);   /* this thread serves another client now */
	tid = (int)syscall(SYS_gettid);
	pthread_mutex_lock(&slots_lock);
	for (s = all_slots; s; s = s->next)
		if (atomic_load(&s->tid) == 0)
			break;
	if (!s && (s = calloc(1, sizeof(*s)))) {
		s->next = all_slots;
		all_slots = s;
	}
	if (s) {
		atomic_store(&s->tid, tid);
		s->cid = c->op_cid;
		s->depth = 0;
		s->warned_seq = 0;
		pthread_getname_np(pthread_self(), s->thread, sizeof(s->thread));
		atomic_store(&s->c, c);
	}
	pthread_mutex_unlock(&slots_lock);
	lc_my_slot = s;
	my_cid = c->op_cid;
	if (s)
		pthread_setspecific(slot_key, s);
	return s;
}

struct lc_op_slot *lc_op_begin(struct lclient *c, const char *who, const char *op, uint64_t ino)
{
	struct lc_op_slot *s;

	if (fe_depth++ == 0) {
		fe_client = c;
		fe_who = who;
	}
	s = slot_get(c);
	if (!s)
		return NULL;
	if (s->depth++ > 0)
		return s;     /* inside another operation of this thread: that one is what runs */
	atomic_store_explicit(&s->who, who, memory_order_relaxed);
	atomic_store_explicit(&s->op, op, memory_order_relaxed);
	atomic_store_explicit(&s->ino, ino, memory_order_relaxed);
	atomic_store_explicit(&s->wait, LC_WAIT_NONE, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->seq, 1, memory_order_relaxed);
	atomic_store_explicit(&s->start_ns, now_mono_ns(), memory_order_release);
	return s;
}

void lc_op_end(struct lc_op_slot *s)
{
	if (fe_depth > 0 && --fe_depth == 0) {
		fe_client = NULL;
		fe_who = NULL;
	}
	if (!s || --s->depth > 0)
		return;
	atomic_store_explicit(&s->start_ns, 0, memory_order_release);
}

const char *lc_op_frontend(const struct lclient *c)
{
	return fe_depth > 0 && fe_client == c ? fe_who : NULL;
}

/* What @w with @arg means, for people. */
static void wait_str(int w, uint64_t arg, char *buf, size_t len)
{
	switch (w) {
	case LC_WAIT_MDS:
		snprintf(buf, len, "a reply from the MDS (tid %" PRIu64 ")", arg);
		break;
	case LC_WAIT_SESSION:
		snprintf(buf, len, "a session with the MDS");
		break;
	case LC_WAIT_FLUSH_ACK:
		snprintf(buf, len, "the MDS to journal the size and times of inode %" PRIx64, arg);
		break;
	case LC_WAIT_WRITEBACK:
		snprintf(buf, len, "another thread's writeback of inode %" PRIx64, arg);
		break;
	case LC_WAIT_CACHE_ROOM:
		snprintf(buf, len, "room in the write buffer (%" PRIu64 " bytes dirty, client_oc_size)", arg);
		break;
	case LC_WAIT_STORE:
		if (arg)
			snprintf(buf, len, "the object store (inode %" PRIx64 ")", arg);
		else
			snprintf(buf, len, "the object store");
		break;
	case LC_WAIT_LOCK:
		snprintf(buf, len, "a file lock on inode %" PRIx64, arg);
		break;
	case LC_WAIT_KERNEL:
		snprintf(buf, len, "the kernel to drop its cache of inode %" PRIx64, arg);
		break;
	case LC_WAIT_ASYNC:
		snprintf(buf, len, "the background metadata operations of directory %" PRIx64, arg);
		break;
	default:
		snprintf(buf, len, "nothing (running)");
		break;
	}
}

/* One line on @s's operation (started at @start), as the log and the MDS get it. */
static void describe(const struct lc_op_slot *s, uint64_t start, uint64_t now, char *buf, size_t len)
{
	char w[160];
	int wt = atomic_load(&s->wait);
	uint64_t wns = atomic_load(&s->wait_ns);

	wait_str(wt, atomic_load(&s->wait_arg), w, sizeof(w));
	snprintf(buf, len, "%s %s of inode %" PRIx64 " blocked for %.1f s (thread %d %s), waiting %.1f s for %s",
		 atomic_load(&s->who), atomic_load(&s->op), atomic_load(&s->ino), (double)mono_since(now, start) / 1e9,
		 atomic_load(&s->tid), s->thread, wt == LC_WAIT_NONE ? 0.0 : (double)mono_since(now, wns) / 1e9, w);
}

struct json_object *lc_ops_json(struct lclient *c)
{
	struct json_object *o = json_object_new_object(), *arr = json_object_new_array();
	uint64_t now = now_mono_ns(), warn = lc_secs_ns(CFG_client_op_warn_s);
	int n = 0, slow = 0;

	pthread_mutex_lock(&slots_lock);
	for (struct lc_op_slot *s = all_slots; s; s = s->next) {
		uint64_t start = atomic_load_explicit(&s->start_ns, memory_order_acquire);
		struct json_object *e;
		char w[160];
		int wt;

		if (!start || atomic_load(&s->c) != c)
			continue;
		e = json_object_new_object();
		wt = atomic_load(&s->wait);
		wait_str(wt, atomic_load(&s->wait_arg), w, sizeof(w));
		json_object_object_add(e, "frontend", json_object_new_string(atomic_load(&s->who)));
		json_object_object_add(e, "op", json_object_new_string(atomic_load(&s->op)));
		json_object_object_add(e, "ino", json_object_new_uint64(atomic_load(&s->ino)));
		json_object_object_add(e, "age_ms", json_object_new_double((double)mono_since(now, start) / 1e6));
		json_object_object_add(e, "waiting_for", json_object_new_string(w));
		json_object_object_add(e, "wait_ms", json_object_new_double(
				       wt == LC_WAIT_NONE ? 0 : (double)mono_since(now, atomic_load(&s->wait_ns)) / 1e6));
		json_object_object_add(e, "thread", json_object_new_int(atomic_load(&s->tid)));
		json_object_object_add(e, "thread_name", json_object_new_string(s->thread));
		json_object_array_add(arr, e);
		n++;
		if (warn && mono_since(now, start) >= warn)
			slow++;
	}
	pthread_mutex_unlock(&slots_lock);
	json_object_object_add(o, "num_ops", json_object_new_int(n));
	json_object_object_add(o, "slow_ops", json_object_new_int(slow));
	json_object_object_add(o, "client_op_warn_s", json_object_new_double((double)warn / 1e9));
	json_object_object_add(o, "ops", arr);
	return o;
}

/* One look: warn once per slow operation; the count and the oldest to the MDS when they change. */
static void watchdog_round(struct lclient *c)
{
	uint64_t now = now_mono_ns(), warn = lc_secs_ns(CFG_client_op_warn_s), oldest = 0;
	char line[MDSP_SLOW_OP_MAX], first[MDSP_SLOW_OP_MAX] = "";
	uint32_t slow = 0;

	if (!warn)
		return;
	pthread_mutex_lock(&slots_lock);
	for (struct lc_op_slot *s = all_slots; s; s = s->next) {
		uint64_t start = atomic_load_explicit(&s->start_ns, memory_order_acquire);
		uint64_t seq = atomic_load(&s->seq);

		if (!start || atomic_load(&s->c) != c || mono_since(now, start) < warn)
			continue;
		slow++;
		describe(s, start, now, line, sizeof(line));
		if (s->warned_seq != seq) {
			s->warned_seq = seq;
			derr(CLIENT, "slow operation: %s (client_op_warn_s %.0f s; 'ops' on the admin socket lists "
			     "what is in flight)", line, (double)warn / 1e9);
		}
		if (!oldest || start < oldest) {
			oldest = start;
			memcpy(first, line, sizeof(first));
		}
	}
	pthread_mutex_unlock(&slots_lock);
	if (slow != c->slow_reported || (slow && now - c->slow_reported_ns > 5000000000ull)) {
		if (!slow && c->slow_reported)
			dinfo(CLIENT, "slow operations completed: none blocked longer than client_op_warn_s now");
		c->slow_reported = slow;
		c->slow_reported_ns = now;
		perf_set(&c->perf.slow_ops, slow);
		if (c->mdsc)
			mdsc_set_slow_ops(c->mdsc, slow, slow ? first : NULL);
	}
}

static void *watchdog_main(void *arg)
{
	struct lclient *c = arg;

	pthread_setname_np(pthread_self(), "lc-watchdog");
	pthread_mutex_lock(&c->wd_lock);
	while (!c->wd_stop) {
		struct timespec dl = deadline_ms(1000);

		pthread_cond_timedwait(&c->wd_cond, &c->wd_lock, &dl);
		if (c->wd_stop)
			break;
		pthread_mutex_unlock(&c->wd_lock);
		watchdog_round(c);
		pthread_mutex_lock(&c->wd_lock);
	}
	pthread_mutex_unlock(&c->wd_lock);
	return NULL;
}

int lc_optrack_init(struct lclient *c)
{
	pthread_condattr_t ca;

	c->op_cid = atomic_fetch_add(&next_cid, 1);
	pthread_mutex_init(&c->wd_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->wd_cond, &ca);
	pthread_condattr_destroy(&ca);
	return 0;
}

int lc_optrack_start(struct lclient *c)
{
	int r;

	c->wd_stop = false;
	r = pthread_create(&c->wd_thread, NULL, watchdog_main, c);
	if (r)
		return -r;
	c->wd_running = true;
	return 0;
}

void lc_optrack_stop(struct lclient *c)
{
	if (!c->wd_running)
		return;
	pthread_mutex_lock(&c->wd_lock);
	c->wd_stop = true;
	pthread_cond_signal(&c->wd_cond);
	pthread_mutex_unlock(&c->wd_lock);
	pthread_join(c->wd_thread, NULL);
	c->wd_running = false;
}

void lc_optrack_destroy(struct lclient *c)
{
	lc_optrack_stop(c);
	/* its slots serve others from now on (their threads' pointers stay
	 * valid: slots are never freed; my_cid tells them apart) */
	pthread_mutex_lock(&slots_lock);
	for (struct lc_op_slot *s = all_slots; s; s = s->next)
		if (atomic_load(&s->c) == c) {
			atomic_store(&s->start_ns, 0);
			atomic_store(&s->c, NULL);
			atomic_store(&s->tid, 0);
		}
	pthread_mutex_unlock(&slots_lock);
	pthread_mutex_destroy(&c->wd_lock);
	pthread_cond_destroy(&c->wd_cond);
}
