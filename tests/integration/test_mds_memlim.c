/*
 * test_mds_memlim.c - the MDS cache bounded in bytes (issue 21.4):
 * mds_cache_memory_limit holds under a load that would pass it, a client
 * that answers recalls gives caps back, and one that never answers is
 * named in health (MDS_CLIENT_RECALL) and finally evicted
 * (mds_recall_evict_timeout).
 *
 * A real loligo-mds with a limit of LIMIT bytes; wire clients
 * (tools/bench/mds_wire.c): a maker that caches nothing makes DIRS x FILES
 * files (several times the limit once cached), then two clients that keep
 * what the replies grant (caps on every entry, a lease on every name) list
 * every directory: C answers every revoke, H (no_ack) none.  Everything
 * is then pinned by clients, so the cache stays over the limit until they
 * let go: the test waits for C's recalls to come and be answered, for H to
 * be named, for H to be evicted, and then for the accounted bytes to come
 * under the limit.  All waits are for events (LT_WAIT_UNTIL), the bound
 * only turns a hang into a failure.
 *
 * What the MDS holds outside the cache is bounded too: test_journal_backpressure
 * stalls the journal writer (mds_journal_hold) under a tiny queue bound
 * (mds_journal_max_pending) and checks that creates wait, visibly (`ops`,
 * `journal status`), that the journal's queue stays within its bound, and
 * that every create completes, SAFE, once the writer resumes.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench/mds_wire.h"
#include "tests/lib/daemon.h"
#include "tests/lib/wait.h"

#define ROOT MDSP_ROOT_INO
#define DIRS 40
#define FILES 250
#define LIMIT (2u << 20)      /* 10,000 inodes with two clients' caps and leases: ~4x this */

static char parent_dir[256];
static struct mdsproc P;
static struct mdsw W;         /* the maker, and admin commands */
static uint64_t dirs[DIRS];

static void setup(void)
{
	ck_assert_int_eq(mdsproc_init(&P, parent_dir), 0);
	snprintf(P.extra[P.nextra++], sizeof(P.extra[0]), "--mds_cache_memory_limit=%u", LIMIT);
	snprintf(P.extra[P.nextra++], sizeof(P.extra[0]), "--mds_recall_warning_timeout=1");
	snprintf(P.extra[P.nextra++], sizeof(P.extra[0]), "--mds_recall_evict_timeout=4");
	snprintf(P.extra[P.nextra++], sizeof(P.extra[0]), "--mds_journal_expire_age=1");
	snprintf(P.extra[P.nextra++], sizeof(P.extra[0]), "--debug_mds=5");   /* the recall's pacing, logged */
	ck_assert_int_eq(mdsproc_mkfs(&P), 0);
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_open(&W, "client.memlim-admin"), 0);
}

static void teardown(void)
{
	mdsw_close(&W);
	mdsproc_cleanup(&P);
}

static struct json_object *command(const char *prefix)
{
	char req[128], *out = NULL;
	struct json_object *o;

	snprintf(req, sizeof(req), "{\"prefix\":\"%s\"}", prefix);
	ck_assert_msg(mdsw_command(&W, req, &out) == 0, "%s failed: %s", prefix, out ? out : "");
	o = json_tokener_parse(out);
	ck_assert_msg(o, "%s: not JSON: %s", prefix, out);
	free(out);
	return o;
}

static uint64_t jget(struct json_object *o, const char *k)
{
	struct json_object *v;

	return json_object_object_get_ex(o, k, &v) ? (uint64_t)json_object_get_int64(v) : 0;
}

/* `cache status`'s total_bytes, and @sid's entry's @key (sid 0: none) */
static uint64_t cache_total(uint64_t sid, const char *key, uint64_t *val)
{
	struct json_object *o = command("cache status"), *a;
	uint64_t t = jget(o, "total_bytes");

	if (sid && json_object_object_get_ex(o, "sessions", &a))
		for (size_t i = 0; i < json_object_array_length(a); i++) {
			struct json_object *e = json_object_array_get_idx(a, i);

			if (jget(e, "id") == sid)
				*val = jget(e, key);
		}
	json_object_put(o);
	return t;
}

/* health detail's MDS_CLIENT_RECALL messages, or NULL (caller frees) */
static char *recall_health(void)
{
	struct json_object *o = command("health detail"), *checks, *c;
	char *s = NULL;

	if (json_object_object_get_ex(o, "checks", &checks) &&
	    json_object_object_get_ex(checks, "MDS_CLIENT_RECALL", &c))
		s = strdup(json_object_to_json_string(c));
	json_object_put(o);
	return s;
}

/* the recall's decisions the MDS logged (debug_mds 5): how it paced itself */
static void print_recalls(void)
{
	char path[512], line[1024];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "%s/mds.log", P.dir);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "cache pressure: recalled") && n++ < 12)
			fprintf(stderr, "memlim: %s", strstr(line, "cache pressure"));
	fclose(f);
	fprintf(stderr, "memlim: %d recall decisions logged\n", n);
}

static bool session_listed(uint64_t sid)
{
	struct json_object *o = command("session ls"), *a = o;
	bool found = false;

	if (!json_object_is_type(o, json_type_array))
		json_object_object_get_ex(o, "sessions", &a);
	for (size_t i = 0; a && json_object_is_type(a, json_type_array) && i < json_object_array_length(a); i++)
		if (jget(json_object_array_get_idx(a, i), "id") == sid)
			found = true;
	json_object_put(o);
	return found;
}

/* list every directory, keeping what the replies grant */
static void list_all(struct mdsw *w)
{
	struct mdsp_reply rep;

	for (int d = 0; d < DIRS; d++) {
		uint64_t cookie = 0;

		for (;;) {
			ck_assert_int_eq(mdsw_readdir(w, dirs[d], cookie, 1024, &rep), 0);
			bool end = rep.end || !rep.nentries;

			if (rep.nentries)
				cookie = rep.entries[rep.nentries - 1].cookie;
			mdsw_reply_free(&rep);
			if (end)
				break;
		}
	}
}

START_TEST(test_memlim_recall_warn_evict)
{
	struct mdsw C, H;
	struct mdsp_inode in;
	char name[32], *h;
	uint64_t total, inflight = 0, ccaps0 = 0, ccaps = 0;

	/* the namespace: ~4x the limit once two clients cache it all */
	W.oldest_tid = 0;
	for (int d = 0; d < DIRS; d++) {
		snprintf(name, sizeof(name), "d%02d", d);
		ck_assert_int_eq(mdsw_mkdir(&W, ROOT, name, 0755, &in), 0);
		dirs[d] = in.ino;
		for (int f = 0; f < FILES; f++) {
			snprintf(name, sizeof(name), "f%04d", f);
			W.wait_safe = f == FILES - 1;
			W.oldest_tid = W.next_tid > 64 ? W.next_tid - 64 : 0;
			ck_assert_int_eq(mdsw_create(&W, dirs[d], name, 0644, O_CREAT | O_EXCL, &in), 0);
		}
	}
	/* nobody caches any of it: trimming alone brings it under the limit */
	LT_WAIT_UNTIL((total = cache_total(0, NULL, NULL)) <= LIMIT,
		      "cache at %" PRIu64 " bytes with nothing pinned, limit %u", total, LIMIT);

	/* C answers everything, H nothing; both keep what they are given */
	ck_assert_int_eq(mdsw_connect(&C, P.port), 0);
	ck_assert_int_eq(mdsw_open(&C, "client.memlim-cooperating"), 0);
	ck_assert_int_eq(mdsw_connect(&H, P.port), 0);
	ck_assert_int_eq(mdsw_open(&H, "client.memlim-hung"), 0);
	C.keep_caps = H.keep_caps = true;
	H.no_ack = true;
	list_all(&H);
	list_all(&C);
	total = cache_total(C.sid, "caps", &ccaps0);
	fprintf(stderr, "memlim: both clients listed everything: %" PRIu64 " bytes cached (limit %u), C holds %"
		PRIu64 " caps\n", total, LIMIT, ccaps0);
	ck_assert_msg(ccaps0 >= DIRS * FILES, "C holds %" PRIu64 " caps after listing %d files", ccaps0,
		      DIRS * FILES);

	/* C is recalled, answers (its caps go down, nothing of it in flight) */
	LT_WAIT_UNTIL((mdsw_poll_caps(&C, 20), C.revokes + C.lease_revokes > 0),
		      "no recall reached the cooperating client");
	LT_WAIT_UNTIL((mdsw_poll_caps(&C, 20), cache_total(C.sid, "caps", &ccaps), ccaps < ccaps0 / 2),
		      "the cooperating client still holds %" PRIu64 " of %" PRIu64 " caps", ccaps, ccaps0);
	LT_WAIT_UNTIL((mdsw_poll_caps(&C, 20), cache_total(C.sid, "recall_inflight", &inflight), inflight == 0),
		      "the cooperating client has %" PRIu64 " recalls unanswered", inflight);

	/* H is named, C is not */
	LT_WAIT_UNTIL((mdsw_poll_caps(&C, 20), (h = recall_health()) != NULL), "no MDS_CLIENT_RECALL for the hung client");
	ck_assert_msg(strstr(h, "client.memlim-hung") && strstr(h, "failing to respond to cache pressure"),
		      "MDS_CLIENT_RECALL does not name the hung client: %s", h);
	ck_assert_msg(!strstr(h, "client.memlim-cooperating"), "MDS_CLIENT_RECALL names the cooperating client: %s", h);
	fprintf(stderr, "memlim: C down to %" PRIu64 " caps; health: %s\n", ccaps, h);
	free(h);

	/* ... then evicted, and with its caps gone the cache comes under the limit */
	LT_WAIT_UNTIL((mdsw_poll_caps(&C, 20), !session_listed(H.sid)), "the hung client was not evicted");
	ck_assert_msg(session_listed(C.sid), "the cooperating client lost its session");
	LT_WAIT_UNTIL((mdsw_poll_caps(&C, 20), (total = cache_total(0, NULL, NULL)) <= LIMIT),
		      "cache at %" PRIu64 " bytes after the eviction, limit %u", total, LIMIT);
	LT_WAIT_UNTIL((mdsw_poll_caps(&C, 20), (h = recall_health()) == NULL) || (free(h), false),
		      "MDS_CLIENT_RECALL stays after the eviction");

	{
		struct json_object *o = command("cache status");

		/* the process's RSS is printed, not asserted: it is the cache plus
		 * the journal's and the store's buffers, which the limit does not
		 * cover (docs/ARCHITECTURE.md, "Cache memory limits") */
		fprintf(stderr, "memlim: after the eviction %" PRIu64 " bytes cached, MDS RSS %" PRIu64 " bytes\n",
			total, jget(o, "rss_bytes"));
		json_object_put(o);
	}
	print_recalls();
	/* C still works: a lookup is answered (from the store, after the eviction) */
	ck_assert_int_eq(mdsw_lookup(&C, dirs[DIRS - 1], "f0007", &in), 0);
	mdsw_close(&H);
	mdsw_close(&C);
}
END_TEST

/* ---- the journal's queue, bounded in bytes ------------------------------ */

#define QBOUND (64u << 10)    /* mds_journal_max_pending: ~60 creates with their replies */
#define QCREATES 1000
/* a request is let in while the queue is under the bound, then adds its
 * entry and reply: one create's worth over it at most (one maker) */
#define QSLACK (8u << 10)

static void setup_journal(void)
{
	ck_assert_int_eq(mdsproc_init(&P, parent_dir), 0);
	snprintf(P.extra[P.nextra++], sizeof(P.extra[0]), "--mds_journal_max_pending=%u", QBOUND);
	ck_assert_int_eq(mdsproc_mkfs(&P), 0);
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_open(&W, "client.journal-admin"), 0);
}

struct maker {
	struct mdsw w;
	uint64_t dir;
	_Atomic int made;
	int errors;
};

static void *maker_main(void *arg)
{
	struct maker *mk = arg;
	struct mdsp_inode in;
	char name[32];

	for (int i = 0; i < QCREATES; i++) {
		snprintf(name, sizeof(name), "q%05d", i);
		mk->w.wait_safe = i == QCREATES - 1;   /* the last one: every entry is durable */
		if (mdsw_create(&mk->w, mk->dir, name, 0644, O_CREAT | O_EXCL, &in))
			mk->errors++;
		mk->made++;
	}
	return NULL;
}

/* `ops` has a request throttled on the journal's queue */
static bool ops_throttled(void)
{
	struct json_object *o = command("ops");
	bool found = strstr(json_object_to_json_string(o), "throttled: journal queue") != NULL;

	json_object_put(o);
	return found;
}

/* Stall the journal writer and start @mk creating in a new directory "q"
 * until one of its creates waits for the journal's space. */
static void maker_start_stalled(struct maker *mk, pthread_t *th)
{
	struct mdsp_inode in;
	struct json_object *js;
	uint64_t waiting = 0;

	ck_assert_int_eq(mdsw_mkdir(&W, ROOT, "q", 0755, &in), 0);
	mk->dir = in.ino;
	ck_assert_int_eq(mdsw_connect(&mk->w, P.port), 0);
	ck_assert_int_eq(mdsw_open(&mk->w, "client.journal-maker"), 0);
	/* the writer stalls: nothing becomes durable, creates are answered
	 * UNSAFE and their entries and SAFE replies pile up until the bound */
	ck_assert_int_eq(mdsproc_config_set(&P, "mds_journal_hold", "true"), 0);
	ck_assert_int_eq(pthread_create(th, NULL, maker_main, mk), 0);
	LT_WAIT_UNTIL((js = command("journal status"), waiting = jget(js, "throttle_waiting"), json_object_put(js),
		       waiting > 0),
		      "no create waits for the journal (%d made with the writer stalled)", (int)mk->made);
}

START_TEST(test_journal_backpressure)
{
	struct maker mk = { 0 };
	struct mdsp_inode in;
	struct json_object *js;
	pthread_t th;
	uint64_t queued, peak, bound;
	char name[32];
	int made;

	maker_start_stalled(&mk, &th);
	ck_assert_msg(ops_throttled(), "`ops` does not say why the create waits");
	js = command("journal status");
	queued = jget(js, "queued_bytes");
	peak = jget(js, "queued_bytes_max");
	bound = jget(js, "queued_bytes_bound");
	json_object_put(js);
	made = mk.made;
	fprintf(stderr, "memlim: writer stalled: %d creates in, the next waits; journal queue %" PRIu64
		" bytes (max %" PRIu64 ", bound %" PRIu64 ")\n", made, queued, peak, bound);
	ck_assert_uint_eq(bound, QBOUND);
	ck_assert_msg(made < QCREATES, "all %d creates went through a stalled journal", made);
	ck_assert_msg(queued >= QBOUND / 2, "the queue holds %" PRIu64 " bytes: it should be near its bound", queued);
	ck_assert_msg(peak <= QBOUND + QSLACK, "the queue reached %" PRIu64 " bytes, bound %u", peak, QBOUND);
	/* the create stays waiting while the writer does (its connection too:
	 * nothing else comes from it) */
	ck_assert_int_eq(mk.made, made);

	/* the writer resumes: every create completes, the last one SAFE */
	ck_assert_int_eq(mdsproc_config_set(&P, "mds_journal_hold", "false"), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(mk.errors, 0);
	ck_assert_int_eq(mk.made, QCREATES);
	js = command("journal status");
	peak = jget(js, "queued_bytes_max");
	fprintf(stderr, "memlim: writer resumed: %d creates done, throttled %" PRIu64 " times, queue max %" PRIu64
		" bytes\n", (int)mk.made, jget(js, "throttled"), peak);
	ck_assert_msg(jget(js, "throttled") > 0, "perf mds_journal.throttled did not count the waits");
	ck_assert_msg(peak <= QBOUND + QSLACK, "the queue reached %" PRIu64 " bytes, bound %u", peak, QBOUND);
	json_object_put(js);
	ck_assert_msg(!ops_throttled(), "a request is still throttled");
	/* nothing lost */
	for (int i = 0; i < QCREATES; i++) {
		snprintf(name, sizeof(name), "q%05d", i);
		ck_assert_msg(mdsw_lookup(&W, mk.dir, name, &in) == 0, "%s is missing", name);
	}
	mdsw_close(&mk.w);
}
END_TEST

/*
 * Requests waiting for the journal's space when its writes start failing:
 * the MDS is read-only, nothing will drain until the store heals, so they
 * must not wait for that; they go on and are refused with the error, as
 * every other mutation is (journal_admit).  Seen failing before the write
 * failure woke them: the maker's create stayed held with the store failing.
 */
START_TEST(test_journal_waiters_refused_when_read_only)
{
	struct maker mk = { 0 };
	struct json_object *js;
	pthread_t th;

	maker_start_stalled(&mk, &th);
	/* the store fails every write; the writer resumes and fails: read-only */
	ck_assert_int_eq(mdsproc_config_set(&P, "store_inject_write_error", "EIO"), 0);
	ck_assert_int_eq(mdsproc_config_set(&P, "mds_journal_hold", "false"), 0);
	/* the waiting create is answered (EIO), and the next ones at once */
	LT_WAIT_UNTIL(mk.errors > 0, "a create waiting for the journal stayed waiting while the MDS is read-only "
		      "(%d made, %d refused)", (int)mk.made, mk.errors);
	js = command("journal status");
	ck_assert_msg(json_object_get_boolean(json_object_object_get(js, "read_only")), "not read-only: %s",
		      json_object_to_json_string(js));
	json_object_put(js);
	/* the store heals: the queue drains, the maker ends */
	ck_assert_int_eq(mdsproc_config_set(&P, "store_inject_write_error", ""), 0);
	pthread_join(th, NULL);
	ck_assert_msg(!ops_throttled(), "a request is still throttled");
	mdsw_close(&mk.w);
}
END_TEST

/* ---- many connections against a tiny journal --------------------------- */

/*
 * Eight connections create as fast as UNSAFE replies let them into a
 * journal whose queue and segments are tiny, so that requests keep waiting
 * for its space: for the queue's bytes (freed by the writer) and for the
 * sealed segments (freed by expiry).  With event loops a waiting request
 * is held with its connection unread and the loop goes on with the others;
 * a wake-up lost between "it must wait" and "it is held" leaves it held
 * for good once everything else waits too.  The checker: every create
 * completes, no connection stops making progress, and each name is there
 * exactly once.  Run with a thread per connection and with 2 loops.
 */
#define SMAKERS 8
#define SCREATES 500
#define SQBOUND (16u << 10)

static unsigned stress_loops;

static void setup_stress(unsigned loops)
{
	stress_loops = loops;
	ck_assert_int_eq(mdsproc_init(&P, parent_dir), 0);
	snprintf(P.extra[P.nextra++], sizeof(P.extra[0]), "--mds_journal_max_pending=%u", SQBOUND);
	snprintf(P.extra[P.nextra++], sizeof(P.extra[0]), "--mds_journal_segment_size=8192");
	snprintf(P.extra[P.nextra++], sizeof(P.extra[0]), "--mds_net_loops=%u", loops);
	ck_assert_int_eq(mdsproc_mkfs(&P), 0);
	ck_assert_int_eq(mdsproc_start(&P), 0);
	ck_assert_int_eq(mdsw_connect(&W, P.port), 0);
	ck_assert_int_eq(mdsw_open(&W, "client.stress-admin"), 0);
}

static void setup_stress_threads(void)
{
	setup_stress(0);
}

static void setup_stress_loops(void)
{
	setup_stress(2);
}

static void *smaker_main(void *arg)
{
	struct maker *mk = arg;
	struct mdsp_inode in;
	char name[32];

	for (int i = 0; i < SCREATES; i++) {
		snprintf(name, sizeof(name), "s%p-%04d", (void *)mk, i);
		mk->w.wait_safe = i == SCREATES - 1;
		if (mdsw_create(&mk->w, mk->dir, name, 0644, O_CREAT | O_EXCL, &in))
			mk->errors++;
		mk->made++;
	}
	return NULL;
}

START_TEST(test_journal_stress)
{
	struct maker mk[SMAKERS];
	pthread_t th[SMAKERS];
	struct mdsp_inode in;
	struct json_object *js;
	uint64_t last_change = lt_mono_ns(), cookie = 0, listed = 0, throttled, throttled_seg;
	int done = 0, last = -1, i;
	bool stuck = false;

	memset(mk, 0, sizeof(mk));
	ck_assert_int_eq(mdsw_mkdir(&W, ROOT, "s", 0755, &in), 0);
	for (i = 0; i < SMAKERS; i++) {
		char cname[48];

		mk[i].dir = in.ino;
		snprintf(cname, sizeof(cname), "client.stress-%d", i);
		ck_assert_int_eq(mdsw_connect(&mk[i].w, P.port), 0);
		ck_assert_int_eq(mdsw_open(&mk[i].w, cname), 0);
	}
	for (i = 0; i < SMAKERS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, smaker_main, &mk[i]), 0);
	/* progress, not a deadline: fail when no create completes for the
	 * hang bound, saying what the MDS says its requests wait for */
	while (done < SMAKERS * SCREATES) {
		done = 0;
		for (i = 0; i < SMAKERS; i++)
			done += mk[i].made;
		if (done != last) {
			last = done;
			last_change = lt_mono_ns();
		} else if (lt_mono_ns() - last_change > lt_hang_ns()) {
			stuck = true;
			break;
		}
		lt_nap();
	}
	if (stuck) {
		js = command("ops");
		fprintf(stderr, "memlim stress: stuck at %d creates; ops: %s\n", done, json_object_to_json_string(js));
		json_object_put(js);
		js = command("journal status");
		fprintf(stderr, "memlim stress: journal status: %s\n", json_object_to_json_string(js));
		json_object_put(js);
		/* the makers wait for replies that will not come: let them go */
		mdsproc_stop(&P, SIGKILL);
		for (i = 0; i < SMAKERS; i++)
			pthread_join(th[i], NULL);
		ck_abort_msg("no create completed for %.0f s (%d of %d done, %u loops)", lt_hang_ns() / 1e9, done,
			     SMAKERS * SCREATES, stress_loops);
	}
	for (i = 0; i < SMAKERS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(mk[i].errors, 0);
		mdsw_close(&mk[i].w);
	}
	js = command("journal status");
	throttled = jget(js, "throttled");
	throttled_seg = jget(js, "throttled_segments");
	fprintf(stderr, "memlim stress (%u loops): %d creates, throttled %" PRIu64 " times (%" PRIu64
		" for expiry), queue max %" PRIu64 " bytes\n", stress_loops, done, throttled, throttled_seg,
		jget(js, "queued_bytes_max"));
	json_object_put(js);
	ck_assert_msg(throttled > throttled_seg, "no create waited for a journal write: the test did not test it");
	ck_assert_msg(throttled_seg > 0, "no create waited for expiry: the test did not test it");
	ck_assert_msg(!ops_throttled(), "a request is still throttled");
	/* each name exactly once */
	for (;;) {
		struct mdsp_reply rep;

		bool end;

		ck_assert_int_eq(mdsw_readdir(&W, in.ino, cookie, 1024, &rep), 0);
		listed += rep.nentries;
		if (rep.nentries)
			cookie = rep.entries[rep.nentries - 1].cookie;
		end = rep.end;
		mdsw_reply_free(&rep);
		if (end)
			break;
	}
	ck_assert_uint_eq(listed, SMAKERS * SCREATES);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mds_memlim");
	TCase *tc = tcase_create("memlim");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_memlim_recall_warn_evict);
	suite_add_tcase(s, tc);
	tc = tcase_create("journal");
	tcase_add_checked_fixture(tc, setup_journal, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_journal_backpressure);
	tcase_add_test(tc, test_journal_waiters_refused_when_read_only);
	suite_add_tcase(s, tc);
	tc = tcase_create("stress_threads");
	tcase_add_checked_fixture(tc, setup_stress_threads, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_journal_stress);
	suite_add_tcase(s, tc);
	tc = tcase_create("stress_loops");
	tcase_add_checked_fixture(tc, setup_stress_loops, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_journal_stress);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return lt_suite_main(suite(), "test_mds_memlim", parent_dir, sizeof(parent_dir));
}
