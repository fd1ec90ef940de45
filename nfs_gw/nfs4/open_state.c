/*
 * open_state.c - opens, locks, owners and stateids (open_state.h).
 *
 * Three chained hash tables under one mutex: stateids by id, owners by
 * (clientid, kind, owner bytes), files by inode number.  Objects are small
 * and the lock is only held for bookkeeping, never across the client
 * library, so one lock serves the gateway's worker pool; what limits a 4.1
 * client's concurrency is its session's slots, never an owner.  A request
 * that calls the MDS about a lock stateid pins it and holds its file's
 * lock-call marker instead (open_state.h).
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client.h"
#include "common/lockdep.h"
#include "common/log.h"
#include "common/time.h"
#include "nfs_gw/nfs4/open_state.h"

static void owner_free_locked(struct ostate *st, struct os_owner *ow);

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static unsigned int owner_hash(uint64_t clientid, bool is_lock, const uint8_t *o, uint32_t len)
{
	uint64_t h = 1469598103934665603ULL ^ clientid ^ (is_lock ? 0x9e3779b97f4a7c15ULL : 0);

	for (uint32_t i = 0; i < len; i++)
		h = (h ^ o[i]) * 1099511628211ULL;
	return (unsigned int)(mix64(h) % OS_HASH);
}

int ostate_create(uint32_t boot, uint64_t grace_ns, struct ostate **out)
{
	struct ostate *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	pthread_condattr_t ca;

	/* never held across an MDS round trip (lockdep_might_wait checks it) */
	pthread_mutex_init(&st->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&st->deleg_cv, &ca);
	pthread_cond_init(&st->lk_cv, &ca);
	pthread_condattr_destroy(&ca);
	st->boot = boot;
	st->next_id = 1;
	st->grace_end_ns = now_mono_ns() + grace_ns;
	st->seq_wait_max = OS_SEQ_WAIT_MAX;
	st->seq_wait_per_owner = OS_SEQ_WAIT_PER_OWNER;
	st->lk_wait_max = OS_LK_WAIT_MAX;
	*out = st;
	return 0;
}

bool os_in_grace(struct ostate *st)
{
	return now_mono_ns() < atomic_load(&st->grace_end_ns);
}

void os_start_grace(struct ostate *st, uint64_t grace_ns)
{
	uint64_t end = now_mono_ns() + grace_ns, cur = atomic_load(&st->grace_end_ns);

	while (cur < end && !atomic_compare_exchange_weak(&st->grace_end_ns, &cur, end))
		;
}

void os_end_grace(struct ostate *st)
{
	atomic_store(&st->grace_end_ns, 0);
}

struct os_fhref *os_fhref_new(struct lc_fh *fh, uint32_t access)
{
	struct os_fhref *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->fh = fh;
	r->access = access;
	atomic_init(&r->refs, 1);
	return r;
}

void os_fhref_put(struct lclient *lc, struct os_fhref *r)
{
	if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	if (r->fh && lc)
		lc_release(lc, r->fh);
	free(r);
}

void os_putlist_add(struct os_putlist *pl, struct os_fhref *r)
{
	if (!r)
		return;
	if (pl->n < sizeof(pl->r) / sizeof(pl->r[0])) {
		pl->r[pl->n++] = r;
		return;
	}
	/* cannot happen in practice (a few handles per call); never block here */
	if (atomic_fetch_sub(&r->refs, 1) == 1)
		atomic_fetch_add(&r->refs, 1); /* leak rather than lc_release under the lock */
}

void os_putlist_add_inode(struct os_putlist *pl, struct lc_inode *in)
{
	/* as above: a few per call; past the array the reference is leaked,
	 * never put under the lock */
	if (in && pl && pl->ni < sizeof(pl->in) / sizeof(pl->in[0]))
		pl->in[pl->ni++] = in;
}

/* @in's locks of the lock stateid @owner are the MDS's too: release them after the lock */
static void putlist_add_unlock(struct os_putlist *pl, struct lc_inode *in, uint64_t owner)
{
	if (!pl || !in)
		return;
	if (pl->nu >= sizeof(pl->unlock) / sizeof(pl->unlock[0])) {
		/* a few per call in practice; past it the MDS keeps them until
		 * the gateway's session ends (they conflict with nobody here) */
		dout(NFS, 1, "nfs4 state: the MDS locks of lock stateid %" PRIx64 " on ino %" PRIx64 " are not "
		     "released now (too many at once)", owner, lc_ino(in));
		return;
	}
	lc_get(in);
	pl->unlock[pl->nu].in = in;
	pl->unlock[pl->nu++].owner = owner;
}

void os_putlist_run(struct lclient *lc, struct os_putlist *pl)
{
	for (unsigned int i = 0; i < pl->nu; i++) {
		if (!lc)
			continue;
		int r = lc_lock_release_owner(lc, pl->unlock[i].in, LC_LOCK_NS_NFS, pl->unlock[i].owner, false);

		if (r < 0)
			dout(NFS, 1, "nfs4 state: releasing the MDS locks of lock stateid %" PRIx64 ": %s",
			     pl->unlock[i].owner, strerror(-r));
		lc_put(lc, pl->unlock[i].in);
	}
	pl->nu = 0;
	for (unsigned int i = 0; i < pl->n; i++)
		os_fhref_put(lc, pl->r[i]);
	pl->n = 0;
	for (unsigned int i = 0; i < pl->ni; i++)
		if (lc)
			lc_put(lc, pl->in[i]);
	pl->ni = 0;
}

struct os_owner *os_owner_find_locked(struct ostate *st, uint64_t clientid, bool is_lock, const uint8_t *o,
				      uint32_t len, bool create)
{
	unsigned int h = owner_hash(clientid, is_lock, o, len);
	struct os_owner *ow;

	for (ow = st->owners[h]; ow; ow = ow->hnext)
		if (ow->clientid == clientid && ow->is_lock == is_lock && ow->len == len && !memcmp(ow->owner, o, len))
			return ow;
	if (!create || len > NFS4_OPAQUE_LIMIT)
		return NULL;
	ow = calloc(1, sizeof(*ow));
	if (!ow)
		return NULL;
	ow->clientid = clientid;
	ow->is_lock = is_lock;
	ow->len = len;
	memcpy(ow->owner, o, len);
	{
		/* seqid waits time out on the monotonic clock */
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&ow->cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	ow->hnext = st->owners[h];
	st->owners[h] = ow;
	st->nowners++;
	return ow;
}

void os_owner_forget_locked(struct ostate *st, struct os_owner *ow)
{
	if (ow->closed)
		os_stid_free_locked(st, ow->closed, NULL);
	ow->seq_valid = false;
	ow->confirmed = false;
	ow->ndelayed = 0;
	ow->reply_sid = 0;
	free(ow->reply);
	ow->reply = NULL;
	ow->reply_len = 0;
}

bool os_owner_release_locked(struct ostate *st, struct os_owner *ow)
{
	if (ow->busy || ow->waiters || ow->nstids)
		return false;
	owner_free_locked(st, ow);
	return true;
}

static void owner_free_locked(struct ostate *st, struct os_owner *ow)
{
	unsigned int h = owner_hash(ow->clientid, ow->is_lock, ow->owner, ow->len);
	struct os_owner **pp;

	if (ow->closed)
		os_stid_free_locked(st, ow->closed, NULL);
	for (pp = &st->owners[h]; *pp; pp = &(*pp)->hnext)
		if (*pp == ow) {
			*pp = ow->hnext;
			break;
		}
	st->nowners--;
	pthread_cond_destroy(&ow->cv);
	free(ow->reply);
	free(ow);
}

struct os_file *os_file_get_locked(struct ostate *st, uint64_t ino, bool create)
{
	unsigned int h = (unsigned int)(mix64(ino) % OS_HASH);
	struct os_file *f;

	for (f = st->files[h]; f; f = f->hnext)
		if (f->ino == ino)
			return f;
	if (!create)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->ino = ino;
	f->hnext = st->files[h];
	st->files[h] = f;
	st->nfiles++;
	return f;
}

void os_file_put_locked(struct ostate *st, struct os_file *f)
{
	unsigned int h;
	struct os_file **pp;

	if (!f || f->stids || f->locks || f->refs)
		return;
	h = (unsigned int)(mix64(f->ino) % OS_HASH);
	for (pp = &st->files[h]; *pp; pp = &(*pp)->hnext)
		if (*pp == f) {
			*pp = f->hnext;
			break;
		}
	st->nfiles--;
	free(f);
}

/* f->lk_busy: a flag lock (st->lock, st->lk_cv) held by the one LOCK/LOCKU
 * of the file at the MDS; its holder waits for nothing else of the kind,
 * its waiters hold only st->lock, which they release while waiting */
static LOCKDEP_CLASS(lk_class, "NFSv4 lock call of a file at the MDS (f->lk_busy)");

uint32_t os_file_lk_begin_locked(struct ostate *st, struct os_file *f, uint64_t wait_ns)
{
	lockdep_assert_held(&st->lock);
	f->refs++;
	if (f->lk_busy) {
		struct timespec deadline;

		if (st->lk_waiting >= st->lk_wait_max) {
			/* a waiter holds a worker thread: bounded, as the seqid waits */
			f->refs--;
			os_file_put_locked(st, f);
			return NFS4ERR_DELAY;
		}
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += (time_t)(wait_ns / 1000000000ULL);
		deadline.tv_nsec += (long)(wait_ns % 1000000000ULL);
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
		st->lk_waiting++;
		lockdep_wait_cond(&lk_class, f, &st->lock);
		while (f->lk_busy)
			if (pthread_cond_timedwait(&st->lk_cv, &st->lock, &deadline) == ETIMEDOUT)
				break;
		st->lk_waiting--;
		if (f->lk_busy) {
			f->refs--;
			os_file_put_locked(st, f);
			return NFS4ERR_DELAY;
		}
	}
	f->lk_busy = true;
	lockdep_acquired(&lk_class, f, true);
	return NFS4_OK;
}

void os_file_lk_end_locked(struct ostate *st, struct os_file *f)
{
	lockdep_assert_held(&st->lock);
	assert(f->lk_busy && f->refs > 0);
	lockdep_released(f);
	f->lk_busy = false;
	pthread_cond_broadcast(&st->lk_cv);
	f->refs--;
	os_file_put_locked(st, f);
}

static struct os_stid *stid_lookup_locked(struct ostate *st, uint64_t id)
{
	for (struct os_stid *s = st->stids[mix64(id) % OS_HASH]; s; s = s->hnext)
		if (s->id == id)
			return s;
	return NULL;
}

struct os_stid *os_stid_new_locked(struct ostate *st, enum os_kind kind, struct os_owner *ow, struct os_file *f)
{
	struct os_stid *s = calloc(1, sizeof(*s));
	uint64_t id;
	unsigned int h;

	if (!s)
		return NULL;
	/* "other" = boot, the client id's low half, a counter; the counter
	 * skips 0 and ~0 (no "other" may look special) and ids still in use
	 * after it wrapped */
	do {
		if (++st->next_id == UINT32_MAX)
			st->next_id = 1;
		id = (uint64_t)(uint32_t)ow->clientid << 32 | st->next_id;
	} while (stid_lookup_locked(st, id));
	s->id = id;
	s->seqid = 1;
	s->kind = kind;
	s->clientid = ow->clientid;
	s->owner = ow;
	s->file = f;
	h = (unsigned int)(mix64(s->id) % OS_HASH);
	s->hnext = st->stids[h];
	st->stids[h] = s;
	s->fnext = f->stids;
	f->stids = s;
	ow->nstids++;
	st->nstids++;
	return s;
}

struct os_stid *os_stid_find_locked(struct os_file *f, struct os_owner *ow, enum os_kind kind)
{
	for (struct os_stid *s = f->stids; s; s = s->fnext)
		if (s->owner == ow && s->kind == kind)
			return s;
	return NULL;
}

static void stid_unhash_locked(struct ostate *st, struct os_stid *s)
{
	unsigned int h = (unsigned int)(mix64(s->id) % OS_HASH);
	struct os_stid **pp;

	for (pp = &st->stids[h]; *pp; pp = &(*pp)->hnext)
		if (*pp == s) {
			*pp = s->hnext;
			break;
		}
}

/* Take @s off its file: its locks, the lock stateids' pointers to it, its
 * handle (into @pl), and the file's inode once no open is left. */
static void stid_detach_locked(struct os_stid *s, struct os_putlist *pl)
{
	struct os_file *f = s->file;
	struct os_stid **pp;
	struct os_lock **lp;
	bool opens = false, had_locks = false;

	if (!f) {                /* a revoked delegation: nothing attached */
		if (s->fh)
			os_putlist_add(pl, s->fh);
		s->fh = NULL;
		return;
	}

	for (pp = &f->stids; *pp; pp = &(*pp)->fnext)
		if (*pp == s) {
			*pp = s->fnext;
			break;
		}
	/* a lock stateid's locks go with it, at the MDS too */
	for (lp = &f->locks; *lp;) {
		if ((*lp)->ls == s) {
			struct os_lock *l = *lp;

			*lp = l->next;
			free(l);
			had_locks = true;
		} else {
			lp = &(*lp)->next;
		}
	}
	if (had_locks && s->kind == OS_LOCK)
		putlist_add_unlock(pl, f->in, s->id);
	/* lock stateids that pointed at this open forget it */
	for (struct os_stid *o = f->stids; o; o = o->fnext) {
		if (s->kind == OS_OPEN && o->open == s)
			o->open = NULL;
		opens |= o->kind == OS_OPEN;
	}
	if (s->fh)
		os_putlist_add(pl, s->fh);
	s->fh = NULL;
	/* the inode stays while locks are left: their release at the MDS needs it */
	if (!opens && !f->locks && f->in) {
		os_putlist_add_inode(pl, f->in);
		f->in = NULL;
	}
	s->file = NULL;
	s->open = NULL;
}

static void deleg_unlink_locked(struct ostate *st, struct os_stid *d)
{
	struct os_stid **pp;

	for (pp = &st->delegs; *pp; pp = &(*pp)->dnext)
		if (*pp == d) {
			*pp = d->dnext;
			st->ndelegs--;
			return;
		}
}

/* @s is unhashed and detached: free it, or leave it to the last unpin */
static void stid_release_locked(struct os_stid *s)
{
	if (s->pins) {
		s->gone = true;
		s->owner = NULL;         /* may go now: nothing of a gone stateid is used */
		s->open = NULL;
		return;
	}
	free(s);
}

void os_stid_unpin_locked(struct ostate *st, struct os_stid *s)
{
	lockdep_assert_held(&st->lock);
	assert(s->pins > 0);
	if (--s->pins == 0 && s->gone)
		free(s);
}

void os_stid_free_locked(struct ostate *st, struct os_stid *s, struct os_putlist *pl)
{
	stid_unhash_locked(st, s);
	if (s->kind == OS_DELEG) {
		deleg_unlink_locked(st, s);
		free(s->dfh);
		s->dfh = NULL;
		pthread_cond_broadcast(&st->deleg_cv);
	}
	if (s->closed) {
		/* nothing but the stateid itself is left */
		if (s->owner->closed == s)
			s->owner->closed = NULL;
		st->nclosed--;
		stid_release_locked(s);
		return;
	}
	stid_detach_locked(s, pl);
	s->owner->nstids--;
	st->nstids--;
	stid_release_locked(s);
}

void os_stid_retire_locked(struct ostate *st, struct os_stid *s, bool current, struct os_putlist *pl)
{
	struct os_owner *ow = s->owner;

	if (!ow->v40 || !(current || ow->reply_sid == s->id)) {
		os_stid_free_locked(st, s, pl);
		return;
	}
	/* 4.0: keep the bare stateid for a retransmission of its owner's last
	 * request (RFC 7530 9.10.1); the owner holds one at most */
	stid_detach_locked(s, pl);
	ow->nstids--;
	st->nstids--;
	if (ow->closed)
		os_stid_free_locked(st, ow->closed, pl);
	s->closed = true;
	ow->closed = s;
	st->nclosed++;
}

void os_stid_wire(const struct ostate *st, const struct os_stid *s, struct nfs4_stateid *out)
{
	out->seqid = s->seqid;
	xdr_store_u32(out->other, st->boot);
	xdr_store_u32(out->other + 4, (uint32_t)(s->id >> 32));
	xdr_store_u32(out->other + 8, (uint32_t)s->id);
}

static void other_fill(const struct nfs4_stateid *sid, bool *zero, bool *ones)
{
	*zero = *ones = true;
	for (int i = 0; i < NFS4_OTHER_SIZE; i++) {
		*zero &= sid->other[i] == 0;
		*ones &= sid->other[i] == 0xff;
	}
}

bool os_is_special(const struct nfs4_stateid *sid)
{
	bool zero, ones;

	other_fill(sid, &zero, &ones);
	return zero || ones;
}

enum os_sid_kind os_sid_classify(const struct nfs4_stateid *sid, uint32_t minor)
{
	bool zero, ones;

	other_fill(sid, &zero, &ones);
	if (zero) {
		if (sid->seqid == 0)
			return OS_SID_ANON;
		if (minor >= 1 && sid->seqid == 1)
			return OS_SID_CURRENT;
		return OS_SID_BAD;
	}
	if (ones)
		return sid->seqid == UINT32_MAX ? OS_SID_BYPASS : OS_SID_BAD;
	return OS_SID_REGULAR;
}

uint32_t os_sid_client32(const struct nfs4_stateid *sid)
{
	return xdr_load_u32(sid->other + 4);
}

uint32_t os_stid_check_locked(struct ostate *st, const struct nfs4_stateid *sid, uint32_t minor,
			      uint64_t clientid, unsigned int kinds, struct os_stid **out)
{
	uint64_t id = (uint64_t)xdr_load_u32(sid->other + 4) << 32 | xdr_load_u32(sid->other + 8);
	struct os_stid *s;

	*out = NULL;
	if (os_is_special(sid))
		return NFS4ERR_BAD_STATEID;    /* no real stateid looks like one */
	if (xdr_load_u32(sid->other) != st->boot)
		return NFS4ERR_STALE_STATEID;
	s = stid_lookup_locked(st, id);
	if (!s || !(s->kind & kinds) || (s->closed && !(kinds & OS_CLOSED)))
		return NFS4ERR_BAD_STATEID;
	if (minor >= 1 && clientid && s->clientid != clientid)
		return NFS4ERR_BAD_STATEID;
	*out = s;
	if (s->revoked)
		return NFS4ERR_DELEG_REVOKED;
	if (minor >= 1 && sid->seqid == 0)
		return NFS4_OK;
	if ((int32_t)(sid->seqid - s->seqid) > 0)
		return NFS4ERR_BAD_STATEID;
	if (sid->seqid != s->seqid)
		return NFS4ERR_OLD_STATEID;
	return NFS4_OK;
}

struct os_stid *os_share_conflict_locked(struct os_file *f, uint32_t access, uint32_t deny)
{
	for (struct os_stid *s = f->stids; s; s = s->fnext) {
		if (s->kind != OS_OPEN)
			continue;
		if ((access & s->deny) || (deny & s->access))
			return s;
	}
	return NULL;
}

struct os_stid *os_deny_conflict_locked(struct os_file *f, const struct os_stid *self, uint32_t access)
{
	for (struct os_stid *s = f ? f->stids : NULL; s; s = s->fnext)
		if (s->kind == OS_OPEN && s != self && (s->deny & access))
			return s;
	return NULL;
}

void os_open_add_locked(struct os_stid *s, uint32_t access, uint32_t deny)
{
	s->modes |= (uint16_t)(1u << ((access & 3) << 2 | (deny & 3)));
	s->access |= access;
	s->deny |= deny;
}

int os_open_downgrade_locked(struct os_stid *s, uint32_t access, uint32_t deny)
{
	uint32_t ua = 0, ud = 0;
	uint16_t keep = 0;

	/* the OPENs whose modes lie within (access, deny) are the largest
	 * subset that can make up that union: it must make it up exactly */
	for (uint32_t a = 1; a <= 3; a++)
		for (uint32_t d = 0; d <= 3; d++) {
			uint16_t bit = (uint16_t)(1u << (a << 2 | d));

			if ((s->modes & bit) && (a & ~access) == 0 && (d & ~deny) == 0) {
				keep |= bit;
				ua |= a;
				ud |= d;
			}
		}
	if (!keep || ua != access || ud != deny)
		return -EINVAL;
	s->modes = keep;
	s->access = access;
	s->deny = deny;
	return 0;
}

void os_file_set_inode_locked(struct os_file *f, struct lc_inode *in, struct os_putlist *pl)
{
	if (f->in)
		os_putlist_add_inode(pl, in);
	else
		f->in = in;
}

struct lc_inode *os_open_inode(struct ostate *st, uint64_t ino)
{
	struct lc_inode *in = NULL;
	struct os_file *f;

	pthread_mutex_lock(&st->lock);
	f = os_file_get_locked(st, ino, false);
	if (f && f->in) {
		in = f->in;
		lc_get(in);      /* a reference count: no client library work under the lock */
	}
	pthread_mutex_unlock(&st->lock);
	return in;
}

/* ---- byte-range locks ---------------------------------------------------------- */

bool os_lock_range(uint64_t off, uint64_t len, uint64_t *start, uint64_t *end)
{
	if (len == 0)
		return false;
	*start = off;
	if (len == UINT64_MAX) {
		*end = UINT64_MAX;
		return true;
	}
	if (UINT64_MAX - off < len)
		return false;
	*end = off + len;
	return true;
}

const struct os_lock *os_lock_conflict_locked(struct os_file *f, const struct os_owner *ow, uint32_t type,
					      uint64_t start, uint64_t end)
{
	for (const struct os_lock *l = f->locks; l; l = l->next) {
		if (l->ls->owner == ow)
			continue;
		if (l->end <= start || end <= l->start)
			continue;
		if (type == OS_WRITE_LT || l->type == OS_WRITE_LT)
			return l;
	}
	return NULL;
}

bool os_stid_has_locks_locked(const struct os_stid *ls)
{
	for (const struct os_lock *l = ls->file->locks; l; l = l->next)
		if (l->ls == ls)
			return true;
	return false;
}

static struct os_lock *lock_new(struct os_stid *ls, uint32_t type, uint64_t start, uint64_t end)
{
	struct os_lock *l = calloc(1, sizeof(*l));

	if (l) {
		l->ls = ls;
		l->type = type;
		l->start = start;
		l->end = end;
	}
	return l;
}

int os_lock_unset_locked(struct os_file *f, struct os_stid *ls, uint64_t start, uint64_t end)
{
	struct os_lock **pp = &f->locks;

	while (*pp) {
		struct os_lock *l = *pp;

		if (l->ls != ls || l->end <= start || end <= l->start) {
			pp = &l->next;
			continue;
		}
		if (l->start < start && l->end > end) {
			/* split in two */
			struct os_lock *tail = lock_new(ls, l->type, end, l->end);

			if (!tail)
				return -ENOMEM;
			l->end = start;
			tail->next = l->next;
			l->next = tail;
			return 0;
		}
		if (l->start < start) {
			l->end = start;
			pp = &l->next;
		} else if (l->end > end) {
			l->start = end;
			pp = &l->next;
		} else {
			*pp = l->next;
			free(l);
		}
	}
	return 0;
}

int os_lock_set_locked(struct os_file *f, struct os_stid *ls, uint32_t type, uint64_t start, uint64_t end)
{
	struct os_lock *n;
	int r;

	/* POSIX: the new lock replaces whatever this owner held on the range;
	 * then merge with adjacent locks of the same type */
	r = os_lock_unset_locked(f, ls, start, end);
	if (r)
		return r;
	for (struct os_lock **pp = &f->locks; *pp;) {
		struct os_lock *l = *pp;

		if (l->ls == ls && l->type == type && (l->end == start || l->start == end)) {
			if (l->start < start)
				start = l->start;
			if (l->end > end)
				end = l->end;
			*pp = l->next;
			free(l);
			continue;
		}
		pp = &l->next;
	}
	n = lock_new(ls, type, start, end);
	if (!n)
		return -ENOMEM;
	n->next = f->locks;
	f->locks = n;
	return 0;
}

/* ---- NFSv4.0 owner sequencing ------------------------------------------------------- */

bool os_seq_bumps(uint32_t status)
{
	switch (status) {
	case NFS4ERR_STALE_CLIENTID:
	case NFS4ERR_STALE_STATEID:
	case NFS4ERR_BAD_STATEID:
	case NFS4ERR_BAD_SEQID:
	case NFS4ERR_BADXDR:
	case NFS4ERR_RESOURCE:
	case NFS4ERR_NOFILEHANDLE:
	case NFS4ERR_MOVED:
		return false;
	default:
		return true;
	}
}

static bool seq_delayed_take(struct os_owner *ow, uint32_t seqid)
{
	for (unsigned int i = 0; i < ow->ndelayed; i++)
		if (ow->delayed[i] == seqid) {
			ow->delayed[i] = ow->delayed[--ow->ndelayed];
			return true;
		}
	return false;
}

/* drop remembered seqids the owner's sequence has passed */
static void seq_delayed_prune(struct os_owner *ow)
{
	for (unsigned int i = 0; i < ow->ndelayed;) {
		if ((int32_t)(ow->delayed[i] - ow->seqid) <= 0)
			ow->delayed[i] = ow->delayed[--ow->ndelayed];
		else
			i++;
	}
}

/*
 * A wait cap is reached: answer DELAY.  A seqid ahead of the owner's next
 * one is remembered so the sequence steps over it in order (the client
 * retries with the following seqid); a retransmission of the running
 * request (or a request of an owner with no sequence yet) is not.
 */
static uint32_t seq_delay(struct os_owner *ow, uint32_t seqid)
{
	if (!ow->seq_valid || (int32_t)(seqid - ow->seqid) < 2)
		return NFS4ERR_DELAY;
	for (unsigned int i = 0; i < ow->ndelayed; i++)
		if (ow->delayed[i] == seqid)
			return NFS4ERR_DELAY;
	if (ow->ndelayed >= OS_SEQ_DELAYED_MAX)
		return NFS4ERR_BAD_SEQID;     /* a pipeline this deep is beyond what the gateway orders */
	ow->delayed[ow->ndelayed++] = seqid;
	return NFS4ERR_DELAY;
}

uint32_t os_seq_begin_locked(struct ostate *st, struct os_owner *ow, uint32_t seqid, uint64_t wait_ns)
{
	struct timespec deadline;
	bool counted = false;
	uint64_t t0 = 0;
	uint32_t r;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += (time_t)(wait_ns / 1000000000ULL);
	deadline.tv_nsec += (long)(wait_ns % 1000000000ULL);
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	for (;;) {
		if (!ow->busy) {
			if (!ow->seq_valid || seqid == ow->seqid + 1) {
				/* a client that retries DELAY with the same seqid: run it now */
				seq_delayed_take(ow, seqid);
				ow->busy = true;
				r = NFS4_OK;
				break;
			}
			if (seqid == ow->seqid) {
				r = ow->reply ? OS_SEQ_REPLAY : NFS4ERR_BAD_SEQID;
				break;
			}
			/* behind: a stale retransmission */
			if ((int32_t)(seqid - ow->seqid) < 0) {
				r = NFS4ERR_BAD_SEQID;
				break;
			}
			/* ahead: its predecessor has not arrived yet; wait for it */
		}
		if (!counted) {
			/* a waiting request holds a worker thread: bounded per owner and in all */
			if (ow->seq_waiting >= st->seq_wait_per_owner || st->seq_waiting >= st->seq_wait_max) {
				r = seq_delay(ow, seqid);
				if (st->stats)
					perf_inc(&st->stats->delays, 1);
				break;
			}
			/* it waits itself now: not stepped over as DELAYed */
			seq_delayed_take(ow, seqid);
			counted = true;
			if (st->stats) {
				perf_inc(&st->stats->waits, 1);
				t0 = now_mono_ns();
			}
			ow->seq_waiting++;
			st->seq_waiting++;
			ow->waiters++;
		}
		int w = pthread_cond_timedwait(&ow->cv, &st->lock, &deadline);
		if (w == ETIMEDOUT) {
			if (!ow->busy && ow->seq_valid && seqid == ow->seqid + 1)
				continue;
			/* a predecessor that never comes (lost with a connection,
			 * or from before a restart): the client must start over
			 * (BAD_SEQID), not retry into the same gap */
			r = NFS4ERR_BAD_SEQID;
			if (st->stats)
				perf_inc(&st->stats->timeouts, 1);
			dout(NFS, 1, "v4.0 owner of client %" PRIx64 ": seqid %u waited %.1f s for seqid %u (%s): "
			     "NFS4ERR_BAD_SEQID", ow->clientid, seqid, (double)wait_ns / 1e9, ow->seqid + 1,
			     ow->busy ? "still running" : "not arrived");
			break;
		}
	}
	if (counted) {
		ow->seq_waiting--;
		st->seq_waiting--;
		ow->waiters--;
		if (st->stats)
			hist_add(&st->stats->wait_ns, now_mono_ns() - t0);
	}
	return r;
}

void os_seq_end_locked(struct ostate *st, struct os_owner *ow, uint32_t seqid, uint32_t op, uint32_t status,
		       const uint8_t *body, size_t len, const struct nfs4_fh *fh, uint64_t sid)
{
	if (os_seq_bumps(status)) {
		uint8_t *copy = len ? malloc(len) : malloc(1);

		ow->seqid = seqid;
		ow->seq_valid = true;
		ow->reply_sid = sid;
		/* the sequence moved on: a closed stateid's last request can no
		 * longer be retransmitted (RFC 7530 9.10.1) */
		if (ow->closed && ow->closed->id != sid)
			os_stid_free_locked(st, ow->closed, NULL);
		if (copy) {
			if (len)
				memcpy(copy, body, len);
			free(ow->reply);
			ow->reply = copy;
			ow->reply_len = len;
			ow->reply_status = status;
			ow->reply_op = op;
			if (fh)
				ow->reply_fh = *fh;
			else
				ow->reply_fh.len = 0;
		}
		/* the DELAYed seqids that follow are consumed now, in order */
		while (ow->ndelayed && seq_delayed_take(ow, ow->seqid + 1)) {
			uint8_t *empty = malloc(1);

			ow->seqid++;
			ow->reply_sid = 0;
			if (empty) {
				free(ow->reply);
				ow->reply = empty;
				ow->reply_len = 0;
				ow->reply_status = NFS4ERR_DELAY;
				ow->reply_op = 0;
				ow->reply_fh.len = 0;
			} else {
				free(ow->reply);    /* a replay of it is then BAD_SEQID */
				ow->reply = NULL;
			}
		}
		seq_delayed_prune(ow);
	}
	ow->busy = false;
	pthread_cond_broadcast(&ow->cv);
}

/* ---- clients ------------------------------------------------------------------------ */

void os_client_release(struct ostate *st, struct lclient *lc, uint64_t clientid)
{
	struct os_putlist pl = { 0 };

	pthread_mutex_lock(&st->lock);
	for (unsigned int h = 0; h < OS_HASH; h++) {
		struct os_stid *s = st->stids[h];

		while (s) {
			struct os_stid *next = s->hnext;

			if (s->clientid == clientid) {
				struct os_file *f = s->file;

				os_stid_free_locked(st, s, &pl);
				if (f)
					os_file_put_locked(st, f);
				if (pl.n > 48 || pl.ni > 48) {
					pthread_mutex_unlock(&st->lock);
					os_putlist_run(lc, &pl);
					pthread_mutex_lock(&st->lock);
					next = st->stids[h]; /* the chain may have changed */
				}
			}
			s = next;
		}
	}
	for (unsigned int h = 0; h < OS_HASH; h++) {
		struct os_owner *ow = st->owners[h];

		while (ow) {
			struct os_owner *next = ow->hnext;

			if (ow->clientid == clientid && !ow->busy && !ow->waiters)
				owner_free_locked(st, ow);
			ow = next;
		}
	}
	pthread_mutex_unlock(&st->lock);
	os_putlist_run(lc, &pl);
}

struct os_stid *os_deleg_new_locked(struct ostate *st, struct os_owner *ow, struct os_file *f, struct os_fhref *ref,
				    bool write)
{
	struct os_stid *d = os_stid_new_locked(st, OS_DELEG, ow, f);

	if (!d)
		return NULL;
	d->access = write ? OS_SHARE_ACCESS_BOTH : OS_SHARE_ACCESS_READ;
	d->fh = ref;
	d->dnext = st->delegs;
	st->delegs = d;
	st->ndelegs++;
	return d;
}

struct os_stid *os_deleg_find_locked(struct os_file *f, uint64_t clientid)
{
	for (struct os_stid *s = f ? f->stids : NULL; s; s = s->fnext)
		if (s->kind == OS_DELEG && s->clientid == clientid && !s->revoked)
			return s;
	return NULL;
}

struct os_stid *os_deleg_conflict_locked(struct os_file *f, uint64_t clientid, uint32_t access)
{
	for (struct os_stid *s = f ? f->stids : NULL; s; s = s->fnext)
		if (s->kind == OS_DELEG && s->clientid != clientid && !s->revoked &&
		    ((access & OS_SHARE_ACCESS_WRITE) || os_deleg_is_write(s)))
			return s;           /* reads break only a write delegation */
	return NULL;
}

void os_deleg_revoke_locked(struct ostate *st, struct os_stid *d, struct os_putlist *pl)
{
	struct os_file *f = d->file;

	if (d->revoked)
		return;
	stid_detach_locked(d, pl);
	d->revoked = true;
	os_file_put_locked(st, f);
	pthread_cond_broadcast(&st->deleg_cv);
}

bool os_client_revoked_locked(struct ostate *st, uint64_t clientid)
{
	for (struct os_stid *d = st->delegs; d; d = d->dnext)
		if (d->revoked && d->clientid == clientid)
			return true;
	return false;
}

bool os_client_has_state(struct ostate *st, uint64_t clientid)
{
	bool has = false;

	pthread_mutex_lock(&st->lock);
	for (unsigned int h = 0; h < OS_HASH && !has; h++)
		for (struct os_stid *s = st->stids[h]; s; s = s->hnext)
			if (s->clientid == clientid && !s->closed && !s->revoked) {
				has = true;
				break;
			}
	pthread_mutex_unlock(&st->lock);
	return has;
}

void ostate_destroy(struct ostate *st, struct lclient *lc)
{
	if (!st)
		return;
	/* stateids first: they point at owners and files in other buckets */
	for (unsigned int h = 0; h < OS_HASH; h++) {
		while (st->stids[h]) {
			struct os_putlist pl = { 0 };

			os_stid_free_locked(st, st->stids[h], &pl);
			os_putlist_run(lc, &pl);
		}
	}
	for (unsigned int h = 0; h < OS_HASH; h++) {
		while (st->owners[h])
			owner_free_locked(st, st->owners[h]);
		while (st->files[h]) {
			struct os_file *f = st->files[h];

			st->files[h] = f->hnext;
			if (f->in && lc)
				lc_put(lc, f->in);
			free(f);
		}
	}
	pthread_cond_destroy(&st->deleg_cv);
	pthread_cond_destroy(&st->lk_cv);
	pthread_mutex_destroy(&st->lock);
	free(st);
}
