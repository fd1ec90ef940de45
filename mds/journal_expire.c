/*
 * journal_expire.c - applying journaled edits to their objects: expiry of
 * sealed segments, and the same application for journal reset (japply,
 * journal_int.h).
 *
 * A sealed segment's edits are applied to their objects (one compound op
 * per object, all in parallel), then the header's expire position moves
 * past the segment and the segment object is removed.  The segment's bytes
 * stay in memory until then, so expiry reads nothing back.  Edits carry
 * absolute values, so applying a segment twice (a crash between the
 * objects' update and the header's) is harmless.
 */
#include <errno.h>
#include <malloc.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <unistd.h>

#include "common/config.h"
#include "common/crc32c.h"
#include "common/log.h"
#include "common/perf.h"
#include "common/time.h"
#include "mds/codec.h"
#include "mds/journal_int.h"
#include "mds/journal_priv.h"
#include "mds/mds.h"
#include "mds/journal.h"
#include "mds/mdcache.h"
#include "mds/net.h"

/* ---- applying edits to the objects (expire, journal reset) ---------------- */

struct objop {
	char *oid;
	struct store_op *op;
	bool needs_obj;         /* op has a sub-op that fails on a missing object */
	bool create_first;      /* op creates the object first (a set follows such a sub-op) */
};

struct japply {
	struct objop *tab;
	size_t cap, n;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t inflight;
	int first_err;
	bool split;             /* edits of a directory fragment split among them (the crash hook) */
};

static uint32_t str_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s) {
		h ^= (uint8_t)*s++;
		h *= 16777619u;
	}
	return h;
}

struct japply *japply_new(void)
{
	struct japply *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	pthread_mutex_init(&x->lock, NULL);
	pthread_cond_init(&x->cond, NULL);
	return x;
}

static struct objop *objop_get(struct japply *x, const char *oid)
{
	size_t i;

	if ((x->n + 1) * 2 > x->cap) {
		size_t ncap = x->cap ? x->cap * 2 : 64, k;
		struct objop *nt = calloc(ncap, sizeof(*nt));

		if (!nt)
			return NULL;
		for (k = 0; k < x->cap; k++) {
			if (!x->tab[k].oid)
				continue;
			i = str_hash(x->tab[k].oid) & (ncap - 1);
			while (nt[i].oid)
				i = (i + 1) & (ncap - 1);
			nt[i] = x->tab[k];
		}
		free(x->tab);
		x->tab = nt;
		x->cap = ncap;
	}
	i = str_hash(oid) & (x->cap - 1);
	while (x->tab[i].oid) {
		if (!strcmp(x->tab[i].oid, oid))
			return &x->tab[i];
		i = (i + 1) & (x->cap - 1);
	}
	x->tab[i].oid = strdup(oid);
	x->tab[i].op = store_op_new();
	if (!x->tab[i].oid || !x->tab[i].op) {
		free(x->tab[i].oid);
		if (x->tab[i].op)
			store_op_free(x->tab[i].op);
		x->tab[i].oid = NULL;
		x->tab[i].op = NULL;
		return NULL;
	}
	x->n++;
	return &x->tab[i];
}

int japply_edit(void *arg, int op, const char *oid, const char *key, const void *val, uint32_t len,
		const char *key2)
{
	struct japply *x = arg;
	struct objop *o = objop_get(x, oid);

	if (!o)
		return -ENOMEM;
	if (op == EDIT_SET && !strcmp(key, DIR_FRAGS_KEY))
		x->split = true;
	/*
	 * One compound op per object, in journal order.  The removals (rm,
	 * rm_range, clear, remove) fail the whole op with -ENOENT on a missing
	 * object, as in RADOS, and a set after them would go down with it: a
	 * removal edit queued before a set on an object that does not exist yet
	 * (made, emptied and made again in one segment; a trim journaled before
	 * the set that creates the object, as the completed table's was until
	 * 7a86309).  Such an op creates the object first: the removals then do
	 * nothing on a missing object and the sets apply.
	 */
	switch (op) {
	case EDIT_SET:
		if (o->needs_obj && !o->create_first) {
			store_op_create_first(o->op);
			o->create_first = true;
		}
		store_op_omap_set(o->op, key, val, len);
		break;
	case EDIT_RM:
		store_op_omap_rm(o->op, key);
		o->needs_obj = true;
		break;
	case EDIT_RMRANGE:
		store_op_omap_rm_range(o->op, key, *key2 ? key2 : NULL);
		o->needs_obj = true;
		break;
	case EDIT_CLEAR:
		store_op_omap_clear(o->op);
		o->needs_obj = true;
		break;
	case EDIT_REMOVE:
		/* the object goes: drop what was queued for it, remove it */
		store_op_free(o->op);
		o->op = store_op_new();
		if (!o->op)
			return -ENOMEM;
		store_op_remove(o->op);
		o->needs_obj = true;
		o->create_first = false;
		break;
	default:
		return -EBADMSG;
	}
	return 0;
}

/*
 * -ENOENT is not an error here: with the sets guarded (japply_edit), only an
 * op of removals alone can fail so, on an object that is not there, and what
 * it was to do - those keys or that object gone - already holds: an object
 * removed by an earlier application of the same segment (an expiry cut short
 * by a crash is redone whole), or one the segment created and removed again
 * (whose edits the remove dropped).  The object was never half-applied: a
 * compound op applies whole or not at all.
 */
static void japply_cb(int r, void *arg)
{
	struct japply *x = arg;

	pthread_mutex_lock(&x->lock);
	if (r && r != -ENOENT && !x->first_err)
		x->first_err = r;
	x->inflight--;
	pthread_cond_signal(&x->cond);
	pthread_mutex_unlock(&x->lock);
}

void japply_free(struct japply *x)
{
	size_t i;

	if (!x)
		return;
	for (i = 0; i < x->cap; i++) {
		if (x->tab[i].op)
			store_op_free(x->tab[i].op);
		free(x->tab[i].oid);
	}
	free(x->tab);
	pthread_mutex_destroy(&x->lock);
	pthread_cond_destroy(&x->cond);
	free(x);
}

int japply_run(struct japply *x, struct store_pool *pool, size_t *nobjects)
{
	uint64_t crash_after = x->split ? cfg_uint(CFG_mds_debug_split_crash_after) : 0, done = 0;
	size_t i;
	int r;

	if (nobjects)
		*nobjects = x->n;
	for (i = 0; i < x->cap; i++) {
		struct objop *o = &x->tab[i];

		if (!o->oid)
			continue;
		pthread_mutex_lock(&x->lock);
		x->inflight++;
		pthread_mutex_unlock(&x->lock);
		r = store_op_submit(pool, o->oid, o->op, japply_cb, x);
		o->op = NULL;   /* consumed */
		if (r) {
			pthread_mutex_lock(&x->lock);
			x->inflight--;
			if (!x->first_err)
				x->first_err = r;
			pthread_mutex_unlock(&x->lock);
		}
		if (crash_after) {
			/* the test hook: one object at a time, then die halfway */
			pthread_mutex_lock(&x->lock);
			while (x->inflight)
				pthread_cond_wait(&x->cond, &x->lock);
			pthread_mutex_unlock(&x->lock);
			if (++done == crash_after) {
				derr(JOURNAL, "mds_debug_split_crash_after: exiting after %" PRIu64
					      " objects of a fragment split", done);
				_exit(99);
			}
		}
	}
	pthread_mutex_lock(&x->lock);
	while (x->inflight)
		pthread_cond_wait(&x->cond, &x->lock);
	r = x->first_err;
	pthread_mutex_unlock(&x->lock);
	japply_free(x);
	return r;
}

/* ---- expire --------------------------------------------------------------- */

/*
 * Remove the objects of expired segments below @below.  Nothing depends on
 * the removal; the header's removed_upto lets a restart finish what a
 * failed removal left.  Caller holds expire_lock.
 */
void journal_remove_segments(struct mds *m, uint64_t below)
{
	struct journal *j = m->j;
	char oid[64];
	int r;

	for (; j->removed_upto < below; j->removed_upto++) {
		struct store_op *op = store_op_new();

		if (!op)
			return;
		journal_oid_seg(oid, sizeof(oid), j->removed_upto);
		store_op_remove(op);
		r = store_op_exec(m->meta, oid, op);
		if (r && r != -ENOENT)
			dout(JOURNAL, 1, "removing expired segment %s: %s", oid, strerror(-r));
	}
}

static int expire_one(struct mds *m, struct jseg *s)
{
	struct journal *j = m->j;
	struct japply *x = japply_new();
	struct jchunk *c;
	size_t nobj = 0;
	int r = x ? 0 : -ENOMEM;
	uint64_t t0 = now_mono_ns();

	for (c = s->chunks; c && !r; c = c->next) {
		size_t off = 0;
		struct jentry e;

		while (off < c->len && !r) {
			if (jent_parse(s->fmt, c->data + off, c->len - off, &e) != JP_OK) {
				r = -EBADMSG;
				break;
			}
			if (e.type == JE_EDITS)
				r = jedits_for_each(e.payload, e.plen, japply_edit, x);
			off += e.len;
		}
	}
	if (r)
		japply_free(x);
	else
		r = japply_run(x, m->meta, &nobj);
	if (!r) {
		pthread_mutex_lock(&j->hdr_lock);
		j->hdr.expire_seg = s->no + 1;
		j->hdr.expire_seq = s->last_seq + 1;
		if (j->hdr.head_seg < s->no)
			j->hdr.head_seg = s->no;   /* it exists; expire may not pass head + 1 */
		j->hdr.removed_upto = j->removed_upto;
		r = journal_header_write(m->meta, &j->hdr);
		if (!r)
			journal_hdr_publish(j);
		pthread_mutex_unlock(&j->hdr_lock);
	}
	if (r) {
		/* retried at every tick: logged once per failing stretch */
		if (!j->expire_failing)
			derr(JOURNAL, "expiring journal segment %" PRIx64 " failed (%s); will retry", s->no, strerror(-r));
		else
			dout(JOURNAL, 5, "expiring journal segment %" PRIx64 " failed again (%s)", s->no, strerror(-r));
		j->expire_failing = true;
		perf_inc(&j->expire_errors, 1);
		return r;
	}
	if (j->expire_failing)
		dinfo(JOURNAL, "expiring journal segment %" PRIx64 " succeeded again", s->no);
	j->expire_failing = false;
	j->expire_seg = s->no + 1;
	j->expired_ns[s->no % JOURNAL_KEEP_RING] = now_mono_ns();
	if (s->last_seq >= j->replay_last_edit && s->last_seq + 1 > atomic_load(&j->clean_below))
		atomic_store(&j->clean_below, s->last_seq + 1);
	perf_inc(&j->expired, 1);
	hist_add(&j->expire_lat, now_mono_ns() - t0);
	dout(JOURNAL, 5, "expired journal segment %" PRIx64 " (%" PRIu64 " entries, %zu objects)", s->no,
	     s->nentries, nobj);
	return 0;
}

/*
 * Remove the objects of segments expired mds_journal_keep_expired ago (a
 * standby-replay follower that far behind still reads them), or that the
 * ring no longer remembers.  Caller holds expire_lock.
 */
static void remove_aged(struct mds *m)
{
	struct journal *j = m->j;
	uint64_t keep = (uint64_t)(cfg_double(CFG_mds_journal_keep_expired) * 1e9), now = now_mono_ns();
	uint64_t below = j->removed_upto;

	for (; below < j->expire_seg; below++) {
		uint64_t at = j->expired_ns[below % JOURNAL_KEEP_RING];

		if (keep && at && now - at < keep && j->expire_seg - below <= JOURNAL_KEEP_RING)
			break;
	}
	journal_remove_segments(m, below);
}

void journal_expire_sealed(struct mds *m)
{
	struct journal *j = m->j;
	struct jseg *s;
	bool expired = false;

	pthread_mutex_lock(&j->expire_lock);
	for (;;) {
		pthread_mutex_lock(&j->seg_lock);
		s = j->sealed;
		pthread_mutex_unlock(&j->seg_lock);
		if (!s || expire_one(m, s))
			break;
		pthread_mutex_lock(&j->seg_lock);
		j->sealed = s->next;
		if (!j->sealed)
			j->sealed_tail = &j->sealed;
		j->nsealed--;
		pthread_mutex_unlock(&j->seg_lock);
		jseg_free(s);
		expired = true;
	}
	remove_aged(m);
	pthread_mutex_unlock(&j->expire_lock);
	if (expired) {
		/* an expiry's peak (the segment's edits gathered per object,
		 * the store's write batch) is freed now: hand the whole pages
		 * back, or the arenas keep that peak in the RSS that
		 * mds_cache_memory_limit bounds */
		malloc_trim(0);
		/* requests throttled on the segments in memory (journal_throttle) */
		pthread_mutex_lock(&j->lock);
		journal_space_freed_locked(m);
		pthread_mutex_unlock(&j->lock);
	}
}


uint64_t journal_clean_below(struct mds *m)
{
	return atomic_load(&m->j->clean_below);
}

void journal_tick(struct mds *m)
{
	struct journal *j = m->j;
	double age = cfg_double(CFG_mds_journal_expire_age);

	pthread_mutex_lock(&j->lock);
	if (j->cur_nedits && j->cur_first_ns && !j->seal_req &&
	    now_mono_ns() - j->cur_first_ns > (uint64_t)(age * 1e9)) {
		j->seal_req = true;
		pthread_cond_signal(&j->cond);
	}
	pthread_mutex_unlock(&j->lock);
	journal_expire_sealed(m);
}
