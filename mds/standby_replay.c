/*
 * standby_replay.c - a standby that follows rank 0's journal as it is
 * written (Ceph's standby-replay), so that a takeover replays only the
 * few entries it has not applied yet instead of loading the tables and
 * replaying the whole unexpired journal.
 *
 * A standby with mds_standby_replay reads the journal header first (where
 * following starts: the tables loaded after it hold everything before
 * its expire position, since expiry writes the objects before it moves
 * the header), then loads the tables as a takeover does but writes
 * nothing (main.c, mds_load_readonly()), then this thread looks at the
 * segment it reads every mds_standby_replay_interval: one stat, and a
 * read of the new bytes when the object grew.  Every new entry is checked
 * as jscan() checks it (magic, crc, the next sequence number, SEG_START
 * first) and applied to the cache with the replay code
 * (mdcache_replay_edit), under mds->lock.  Its position is the sequence
 * number of the last entry applied; that, what it found new at its last
 * look, and when it last reached the end go into its standby registration
 * in the MDS map, the only thing it ever writes.
 *
 * Directories are loaded lazily (mdir_get), possibly after the active
 * expired later entries into them: replaying older edits over a newer
 * object converges as a crash replay does (every edit sets or removes one
 * key with its whole value), and the takeover applies the rest.
 *
 * What it cannot follow it does not guess at:
 *   - the segment it reads was expired and removed before it got there
 *     (it fell behind by more than the active keeps): it asks the process
 *     to start again (SREPLAY_RELOAD), which loads the tables afresh;
 *   - an entry that is not the next one, or bytes that do not parse while
 *     a newer segment exists (not the torn tail of a crash, which the next
 *     active overwrites): damage; it asks to start again as a cold standby
 *     (SREPLAY_COLD), whose takeover refuses a damaged journal as today.
 * The active changing is nothing special: the journal is one sequence
 * across holders (a new holder seals the segment it replayed and goes on
 * with the next number), so the follower goes on reading.
 *
 * At takeover (main.c) the thread stops once the rank is taken and the old
 * holder fenced, and journal_replay_from() scans the journal as a cold
 * takeover does, applying only the entries after the follower's position:
 * whatever the old holder appended after the last look is read then, and
 * nothing is applied twice.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "mds/journal_int.h"
#include "mds/mds.h"
#include "mds/mdcache.h"
#include "mds/standby_replay.h"

struct sreplay {
	pthread_t th;
	bool started;
	pthread_mutex_t lock;         /* a leaf: stop and the status copies */
	pthread_cond_t cond;
	bool stop;                    /* protected by lock */
	_Atomic bool following;
	_Atomic int restart;          /* enum sreplay_restart */
	char why[384];                /* set before restart is */

	/* the thread's position: segment, bytes of it applied, last seq applied */
	uint64_t seg;
	size_t off;
	uint64_t seq;

	/* for status, protected by lock */
	uint64_t st_seg, st_off, st_seq;
	uint64_t applied;             /* EDITS entries applied since start */
	uint64_t behind_events, behind_bytes;  /* what its last look found new */
	uint64_t caught_up_mono;      /* its last look reached the end of the journal */
	uint64_t st_inodes, st_bytes; /* its cache at its last trim, */
	uint64_t st_inodes_seq;       /* when it had applied up to this entry */
	uint64_t start_mono;
};

static int apply_edit(void *arg, int op, const char *oid, const char *key, const void *val, uint32_t len,
		      const char *key2)
{
	struct mds *m = arg;
	int r = mdcache_replay_edit(m, op, oid, key, val, len, key2);

	if (r)
		derr(JOURNAL, "standby-replay: edit %d of %s/%s failed: %s (skipped, as a replay does)", op, oid, key,
		     strerror(-r));
	return 0;
}

static void want_restart(struct sreplay *s, enum sreplay_restart what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void want_restart(struct sreplay *s, enum sreplay_restart what, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
	derr(JOURNAL, "standby-replay: %s: %s", s->why,
	     what == SREPLAY_COLD ? "this daemon stops following and starts again as a cold standby (it never takes "
				    "rank 0 on a journal it could not read)"
				  : "this daemon starts again and loads the metadata afresh");
	atomic_store(&s->following, false);
	atomic_store(&s->restart, what);
}

/* bytes at s->seg + off do not parse: the torn tail of a crash (wait for the next holder to overwrite it) or damage */
static int bad_bytes(struct mds *m, struct sreplay *s, size_t off, const char *what)
{
	struct jheader h;
	const char *why = NULL;
	int r = journal_header_read(m->meta, &h, &why);

	if (r || h.head_seg <= s->seg)
		return 0;
	want_restart(s, SREPLAY_COLD, "journal segment %" PRIx64 " offset %zu: %s, and segment %" PRIx64
		     " was started after it, so it is not a torn tail", s->seg, off, what, h.head_seg);
	return 1;
}

/*
 * One look at the journal: apply every new entry.  Owned by the thread.
 * Return: 0 (reached the end, or what follows is not written yet), 1 (a
 * restart is wanted), -errno (a read failed: try again at the next look).
 */
static int look(struct mds *m, struct sreplay *s)
{
	uint64_t napplied = 0, nbytes = 0;
	int ret = 0;

	for (;;) {
		struct store_stat sst;
		char oid[64];
		uint8_t *buf;
		ssize_t got;
		size_t p = 0;
		bool sealed = false;
		int r;

		journal_oid_seg(oid, sizeof(oid), s->seg);
		r = store_stat(m->meta, oid, &sst);
		if (r == -ENOENT) {
			struct jheader h;
			const char *why = NULL;

			r = journal_header_read(m->meta, &h, &why);
			if (r) {
				ret = r;
				break;
			}
			if (h.expire_seg > s->seg) {
				want_restart(s, SREPLAY_RELOAD, "journal segment %" PRIx64 " was expired and removed before "
					     "this standby read it (it has applied up to entry %" PRIu64 "; the journal "
					     "now starts at segment %" PRIx64 ")", s->seg, s->seq, h.expire_seg);
				return 1;
			}
			break;          /* not started yet */
		}
		if (r) {
			ret = r;
			break;
		}
		if (sst.size <= s->off)
			break;
		buf = malloc(sst.size - s->off);
		if (!buf) {
			ret = -ENOMEM;
			break;
		}
		got = store_read(m->meta, oid, s->off, sst.size - s->off, buf);
		if (got < 0) {
			free(buf);
			ret = (int)got;
			break;
		}
		while (p < (size_t)got) {
			struct jentry e;
			int pr = jent_parse(JFMT_V2, buf + p, (size_t)got - p, &e);

			if (pr == JP_SHORT)
				break;
			if (pr == JP_BAD) {
				if (bad_bytes(m, s, s->off + p, "the bytes there are not an entry")) {
					free(buf);
					return 1;
				}
				break;
			}
			if (e.seq != s->seq + 1 || (s->off + p == 0) != (e.type == JE_SEG_START)) {
				char what[160];

				snprintf(what, sizeof(what), "entry %" PRIu64 " of type %u where entry %" PRIu64 " was "
					 "expected", e.seq, e.type, s->seq + 1);
				free(buf);
				want_restart(s, SREPLAY_COLD, "journal segment %" PRIx64 " offset %zu: %s", s->seg,
					     s->off + p, what);
				return 1;
			}
			if (e.type == JE_EDITS) {
				pthread_mutex_lock(&m->lock);
				m->replay_stamp = e.seq;
				r = jedits_for_each(e.payload, e.plen, apply_edit, m);
				m->replay_stamp = 0;
				mdcache_replay_sweep(m);
				pthread_mutex_unlock(&m->lock);
				if (r)
					derr(JOURNAL, "standby-replay: entry %" PRIu64 " does not decode (%s); skipped, as "
					     "a replay does", e.seq, strerror(-r));
				napplied++;
			}
			s->seq = e.seq;
			p += e.len;
			if (e.type == JE_SEG_END) {
				sealed = true;
				break;
			}
		}
		free(buf);
		s->off += p;
		nbytes += p;
		if (!sealed)
			break;
		s->seg++;
		s->off = 0;
	}
	pthread_mutex_lock(&s->lock);
	s->st_seg = s->seg;
	s->st_off = s->off;
	s->st_seq = s->seq;
	s->applied += napplied;
	if (!ret) {
		s->behind_events = napplied;
		s->behind_bytes = nbytes;
		s->caught_up_mono = now_mono_ns();
	}
	pthread_mutex_unlock(&s->lock);
	if (napplied)
		dout(JOURNAL, 5, "standby-replay: applied %" PRIu64 " entries, at entry %" PRIu64 " (segment %" PRIx64
		     "+%zu)", napplied, s->seq, s->seg, s->off);
	return ret;
}

/*
 * The follower's cache is bounded as the active's is (mds_cache_size,
 * mds_cache_memory_limit): a directory whose last applied edit the active
 * has expired since (its entry is before the journal's expire position,
 * so its object holds it) may leave memory and be read again when a later
 * entry edits it.  What the replay edited after that stays.
 */
static void trim(struct mds *m, struct sreplay *s)
{
	struct jheader h;
	const char *why = NULL;
	uint64_t inodes;

	if (journal_header_read(m->meta, &h, &why))
		return;                  /* the next look tries again */
	pthread_mutex_lock(&m->lock);
	mdcache_trim(m, h.expire_seq);
	inodes = m->ninodes_cached;
	pthread_mutex_unlock(&m->lock);
	pthread_mutex_lock(&s->lock);
	s->st_inodes = inodes;
	s->st_bytes = mds_mem_total();
	s->st_inodes_seq = s->seq;       /* s->seq is this thread's own */
	pthread_mutex_unlock(&s->lock);
}

static void *follower_main(void *arg)
{
	struct mds *m = arg;
	struct sreplay *s = m->sreplay;
	uint64_t last_err_log = 0, last_trim = 0;
	bool first = true;

	for (;;) {
		double iv = cfg_double(CFG_mds_standby_replay_interval);
		struct timespec ts = ns_to_timespec(now_mono_ns() + (uint64_t)((iv > 0.001 ? iv : 0.001) * 1e9));
		int r;

		pthread_mutex_lock(&s->lock);
		if (!first && !s->stop)
			pthread_cond_timedwait(&s->cond, &s->lock, &ts);
		if (s->stop) {
			pthread_mutex_unlock(&s->lock);
			break;
		}
		pthread_mutex_unlock(&s->lock);
		r = look(m, s);
		if (r == 1)
			break;
		if (!r && now_mono_ns() - last_trim > 1000000000ull) {
			trim(m, s);
			last_trim = now_mono_ns();
		}
		if (r < 0 && now_mono_ns() - last_err_log > 10000000000ull) {
			derr(JOURNAL, "standby-replay: reading the journal (segment %" PRIx64 "): %s; retrying", s->seg,
			     strerror(-r));
			last_err_log = now_mono_ns();
		}
		if (first && !r)
			dinfo(JOURNAL, "standby-replay: caught up with the journal at entry %" PRIu64 " (segment %" PRIx64
			      "+%zu, %" PRIu64 " entries applied) in %.3f s; following it", s->seq, s->seg, s->off,
			      s->applied, (double)(now_mono_ns() - s->start_mono) / 1e9);
		if (!r)
			first = false;
	}
	return NULL;
}

int sreplay_begin(struct mds *m, char *err, size_t len)
{
	struct sreplay *s;
	struct jheader h;
	const char *why = "";
	int r = journal_header_read(m->meta, &h, &why);

	if (r) {
		snprintf(err, len, "cannot read the journal header %s: %s", OID_JOURNAL,
			 r == -EBADMSG && why ? why : strerror(-r));
		return r;
	}
	if (h.fmt != JFMT_V2) {
		snprintf(err, len, "the journal is in format %u, which a standby cannot follow (the next active "
			 "converts it)", h.fmt);
		return -EOPNOTSUPP;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&s->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&s->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	s->seg = h.expire_seg;
	s->off = 0;
	s->seq = h.expire_seq ? h.expire_seq - 1 : 0;
	s->st_seg = s->seg;
	s->st_seq = s->seq;
	s->start_mono = now_mono_ns();
	m->sreplay = s;
	return 0;
}

int sreplay_start(struct mds *m)
{
	struct sreplay *s = m->sreplay;
	int r;

	if (!s)
		return -EINVAL;
	atomic_store(&s->following, true);
	r = pthread_create(&s->th, NULL, follower_main, m);
	if (r) {
		atomic_store(&s->following, false);
		return -r;
	}
	s->started = true;
	dinfo(JOURNAL, "standby-replay: following the journal from segment %" PRIx64 " (entry %" PRIu64 ")", s->seg,
	      s->seq + 1);
	return 0;
}

int sreplay_stop(struct mds *m, uint64_t *applied)
{
	struct sreplay *s = m->sreplay;

	*applied = 0;
	if (!s)
		return -1;
	if (s->started) {
		pthread_mutex_lock(&s->lock);
		s->stop = true;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->th, NULL);
		s->started = false;
	}
	if (atomic_load(&s->restart) != SREPLAY_RUNNING || !atomic_load(&s->following))
		return -1;
	atomic_store(&s->following, false);
	*applied = s->seq;
	return 0;
}

bool sreplay_following(struct mds *m)
{
	return m->sreplay && atomic_load(&(m->sreplay)->following);
}

int sreplay_restart_wanted(struct mds *m)
{
	return m->sreplay ? atomic_load(&(m->sreplay)->restart) : SREPLAY_RUNNING;
}

const char *sreplay_why(struct mds *m)
{
	struct sreplay *s = m->sreplay;

	return s && atomic_load(&s->restart) != SREPLAY_RUNNING ? s->why : "";
}

void sreplay_status_add(struct mds *m, struct json_object *o)
{
	struct sreplay *s = m->sreplay;
	struct json_object *r;
	uint64_t now = now_mono_ns();

	if (!s || !atomic_load(&s->following))
		return;
	r = json_object_new_object();
	pthread_mutex_lock(&s->lock);
	json_object_object_add(r, "seq", json_object_new_int64((int64_t)s->st_seq));
	json_object_object_add(r, "segment", json_object_new_int64((int64_t)s->st_seg));
	json_object_object_add(r, "offset", json_object_new_int64((int64_t)s->st_off));
	json_object_object_add(r, "applied_events", json_object_new_int64((int64_t)s->applied));
	json_object_object_add(r, "last_look_events", json_object_new_int64((int64_t)s->behind_events));
	json_object_object_add(r, "last_look_bytes", json_object_new_int64((int64_t)s->behind_bytes));
	json_object_object_add(r, "caught_up_age_s",
			       json_object_new_double(s->caught_up_mono ? (double)(now - s->caught_up_mono) / 1e9
									: (double)(now - s->start_mono) / 1e9));
	json_object_object_add(r, "caught_up_ever", json_object_new_boolean(s->caught_up_mono != 0));
	json_object_object_add(r, "inodes_cached", json_object_new_int64((int64_t)s->st_inodes));
	json_object_object_add(r, "cache_bytes", json_object_new_int64((int64_t)s->st_bytes));
	json_object_object_add(r, "cache_at_seq", json_object_new_int64((int64_t)s->st_inodes_seq));
	pthread_mutex_unlock(&s->lock);
	json_object_object_add(o, "replay", r);
}

void sreplay_free(struct mds *m)
{
	struct sreplay *s = m->sreplay;

	uint64_t applied;

	if (!s)
		return;
	sreplay_stop(m, &applied);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
	m->sreplay = NULL;
}
