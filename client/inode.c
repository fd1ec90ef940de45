/*
 * inode.c - the client's inode cache.
 *
 * A cds_lfht keyed by ino holds every inode the client knows.  Lookups
 * (lc_ino_to_inode, lc_inode_update's find step) run under rcu_read_lock()
 * and take no lock: they find the node and take a reference with a CAS that
 * refuses inodes already marked dead by the trimmer.  Attributes live under
 * the inode's own mutex, so the hot paths (getattr of a cached inode from
 * 32 FUSE threads) contend only when they hit the same inode.
 *
 * References: lc_get/lc_put/lc_forget count the pointers handed out (FUSE's
 * nlookup, open handles, the dirty list, callers in between).  The cache
 * holds no reference; see types_int.h for how unreferenced inodes are
 * evicted and freed.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "client/cache_int.h"
#include "common/lockdep.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time.h"
#include "perm/perm.h"
#include "store/store.h"

static inline unsigned long ino_hash(uint64_t ino)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ull;
	return (unsigned long)(h ^ (h >> 29));
}

static int ino_match(struct cds_lfht_node *node, const void *key)
{
	const struct lc_inode *in = caa_container_of(node, struct lc_inode, hnode);
	return in->ino == *(const uint64_t *)key;
}

int lc_icache_init(struct lclient *c)
{
	c->inodes = cds_lfht_new(1024, 1024, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, NULL);
	return c->inodes ? 0 : -ENOMEM;
}

static void extents_free(struct lc_extent *e)
{
	while (e) {
		struct lc_extent *n = e->next;
		free(e->buf);
		free(e);
		e = n;
	}
}

static void inode_free(struct lc_inode *in)
{
	in->c->cache_ops.async_unlink_drop(in);
	lc_unsafe_drop(in);
	pthread_mutex_destroy(&in->lock);
	pthread_cond_destroy(&in->cond);
	if (in->rare) {
		free(in->rare->symlink);
		if (in->rare->counted)
			lc_mem_sub(in->c, LC_MEM_INODE, lc_mem_size(in->rare));
		free(in->rare);
	}
	free(in->dcm);
	if (in->dstate) {
		if (in->dstate->rd)
			in->c->cache_ops.dir_batch_put(in->dstate->rd);
		if (in->dstate->rd_last)
			in->c->cache_ops.dir_batch_put(in->dstate->rd_last);
		lc_mem_sub(in->c, LC_MEM_DIRLIST, lc_mem_size(in->dstate));
		free(in->dstate);
	}
	extents_free(in->dirty);
	free(in->dtails);
	extents_free(in->flushing);
	lc_blocks_free(in);
	if (in->objs) {
		xa_destroy(in->objs);
		free(in->objs);
	}
	free(in);
}

/*
 * The LRU (c->lru): the inodes whose last reference went, in the order it
 * went; the only ones lc_icache_trim can evict, and so all it looks at.
 * Taking a reference again does not take an inode off (lookups of a cached
 * inode take no lock); the trim takes such an inode off when it meets it,
 * and its next last put appends it again: a visit either evicts, or takes
 * off an inode that was referenced since, or moves an inode it spares
 * (used in the last second, not clean) to the tail.
 *
 * Whoever kills an inode (ref 0 -> LC_REF_DEAD) takes it off before it
 * goes to call_rcu; lru_add refuses a dead one, so the two orders of a
 * kill and an append both end with the inode off the list.
 */
static void lru_del_locked(struct lclient *c, struct lc_inode *in)
{
	lockdep_assert_held(&c->lru_lock);
	if (in->lru_prev)
		in->lru_prev->lru_next = in->lru_next;
	else
		c->lru_head = in->lru_next;
	if (in->lru_next)
		in->lru_next->lru_prev = in->lru_prev;
	else
		c->lru_tail = in->lru_prev;
	in->lru_prev = in->lru_next = NULL;
	in->on_lru = false;
	c->nlru--;
}

/* @in has no reference (as far as anyone knows): to the tail, unless it is
 * there already, referenced again or dead */
static void lru_add(struct lclient *c, struct lc_inode *in)
{
	pthread_mutex_lock(&c->lru_lock);
	if (!in->on_lru && atomic_load(&in->ref) == 0 && !atomic_load(&in->unhashed)) {
		in->lru_prev = c->lru_tail;
		in->lru_next = NULL;
		if (c->lru_tail)
			c->lru_tail->lru_next = in;
		else
			c->lru_head = in;
		c->lru_tail = in;
		in->on_lru = true;
		atomic_store_explicit(&in->lru_used, false, memory_order_relaxed);
		c->nlru++;
	}
	pthread_mutex_unlock(&c->lru_lock);
}

/* @in was just killed (LC_REF_DEAD): off the LRU before it is freed */
static void lru_forget(struct lclient *c, struct lc_inode *in)
{
	pthread_mutex_lock(&c->lru_lock);
	if (in->on_lru)
		lru_del_locked(c, in);
	pthread_mutex_unlock(&c->lru_lock);
}

static void inode_free_rcu(struct rcu_head *h)
{
	inode_free(caa_container_of(h, struct lc_inode, rcu));
}

void lc_icache_destroy(struct lclient *c)
{
	struct cds_lfht_iter it;
	struct lc_inode *in;

	if (!c->inodes)
		return;
	/* (first: call_rcu reuses the LRU links, nothing walks them after this) */
	c->lru_head = c->lru_tail = NULL;
	c->nlru = 0;
	rcu_read_lock();
	LC_LFHT_FOR_EACH(c->inodes, &it, in, hnode) {
		if (!cds_lfht_del(c->inodes, &in->hnode))
			call_rcu(&in->rcu, inode_free_rcu);
	}
	rcu_read_unlock();
	/* every callback must have run before the table goes */
	rcu_barrier_bp();
	cds_lfht_destroy(c->inodes, NULL);
	c->inodes = NULL;
}

/* a reference unless the inode is already dead (evicted) */
static bool get_unless_dead(struct lc_inode *in)
{
	int64_t v = atomic_load_explicit(&in->ref, memory_order_relaxed);

	do {
		if (v < 0)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&in->ref, &v, v + 1, memory_order_acquire,
						       memory_order_relaxed));
	return true;
}

void lc_get(struct lc_inode *in)
{
	atomic_fetch_add_explicit(&in->ref, 1, memory_order_relaxed);
}

/*
 * An orphan (the MDS said nlink 0) whose last reference here went: the MDS
 * keeps it, answering with nlink 0, while we hold a cap on it
 * (mds/locker.c locker_referenced); so it is evicted, and its caps released,
 * at the flusher's next round rather than when the cache is trimmed.
 */
static void orphan_queue(struct lclient *c, uint64_t ino)
{
	pthread_mutex_lock(&c->orphan_lock);
	if (c->norphan == c->orphan_cap) {
		size_t ncap = c->orphan_cap ? c->orphan_cap * 2 : 64;
		uint64_t *q = realloc(c->orphan_q, ncap * sizeof(*q));

		if (!q) {
			pthread_mutex_unlock(&c->orphan_lock);
			return;    /* the trimmer gets it */
		}
		c->orphan_q = q;
		c->orphan_cap = ncap;
	}
	c->orphan_q[c->norphan++] = ino;
	pthread_mutex_unlock(&c->orphan_lock);
	/* a wakeup, not a kick: a kicked round also writes back under memory
	 * pressure, which an rm -rf's stream of orphans must not cause */
	pthread_mutex_lock(&c->work_lock);
	c->orphan_wake = true;
	pthread_cond_signal(&c->work_cond);
	pthread_mutex_unlock(&c->work_lock);
}

static void put_n(struct lclient *c, struct lc_inode *in, int64_t n)
{
	int64_t old = atomic_fetch_sub_explicit(&in->ref, n, memory_order_acq_rel);

	if (old < n) {
		derr(CLIENT, "inode %llx: reference count underflow (%lld - %lld)", (unsigned long long)in->ino,
		     (long long)old, (long long)n);
		atomic_store(&in->ref, 0);
	}
	if (old > n)
		return;
	if (!atomic_load_explicit(&in->unhashed, memory_order_acquire)) {
		/* stays cached, unreferenced, until trimmed */
		lru_add(in->c, in);
		if (atomic_load_explicit(&in->orphaned, memory_order_relaxed) && c)
			orphan_queue(c, in->ino);
		return;
	}
	int64_t zero = 0;
	if (atomic_compare_exchange_strong(&in->ref, &zero, LC_REF_DEAD)) {
		lru_forget(in->c, in);
		call_rcu(&in->rcu, inode_free_rcu);
	}
}

void lc_put(struct lclient *c, struct lc_inode *in)
{
	if (in)
		put_n(c, in, 1);
}

void lc_forget(struct lclient *c, struct lc_inode *in, uint64_t n)
{
	if (in && n) {
		atomic_fetch_sub(&in->knlookup, (int64_t)n);
		put_n(c, in, (int64_t)n);
	}
}

uint64_t lc_ino(const struct lc_inode *in)
{
	return in->ino;
}

struct lc_inode *lc_ino_to_inode(struct lclient *c, uint64_t ino)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;
	struct lc_inode *in = NULL;

	rcu_read_lock();
	cds_lfht_lookup(c->inodes, ino_hash(ino), ino_match, &ino, &it);
	node = cds_lfht_iter_get_node(&it);
	if (node) {
		in = caa_container_of(node, struct lc_inode, hnode);
		if (!get_unless_dead(in))
			in = NULL;
	}
	rcu_read_unlock();
	if (in && !atomic_load_explicit(&in->lru_used, memory_order_relaxed))
		atomic_store_explicit(&in->lru_used, true, memory_order_relaxed);
	return in;
}

struct lc_inode *lc_ino_peek(struct lclient *c, uint64_t ino)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;
	struct lc_inode *in = NULL;

	rcu_read_lock();
	cds_lfht_lookup(c->inodes, ino_hash(ino), ino_match, &ino, &it);
	node = cds_lfht_iter_get_node(&it);
	if (node) {
		in = caa_container_of(node, struct lc_inode, hnode);
		if (atomic_load_explicit(&in->ref, memory_order_relaxed) <= 0)
			in = NULL;   /* nobody holds it: not the caller's */
	}
	rcu_read_unlock();
	return in;
}

/*
 * @in just left c->inodes (unhashed), and its own bytes the count: its
 * lc_irare leaves the count with it, not when call_rcu frees it a grace
 * period later.  Otherwise the lc_irare of every inode a trim evicted stays
 * counted against the inodes still cached until the callbacks run (the
 * bytes per cached inode, issue 21.4, read 1,132 instead of 839 after a
 * storm's eviction in test_fuse_memlim under ASan).  One made after this
 * is never counted (lc_rare_locked).  in->lock not held.
 */
static void rare_uncount(struct lclient *c, struct lc_inode *in)
{
	pthread_mutex_lock(&in->lock);
	if (in->rare && in->rare->counted) {
		lc_mem_sub(c, LC_MEM_INODE, lc_mem_size(in->rare));
		in->rare->counted = false;
	}
	pthread_mutex_unlock(&in->lock);
}

void lc_inode_unhash(struct lclient *c, struct lc_inode *in)
{
	bool was = atomic_exchange(&in->unhashed, true);

	if (was)
		return;
	rcu_read_lock();
	if (!cds_lfht_del(c->inodes, &in->hnode)) {
		atomic_fetch_sub(&c->ninodes, 1);
		lc_mem_sub(c, LC_MEM_INODE, lc_mem_size(in));
	}
	rcu_read_unlock();
	rare_uncount(c, in);
}

/*
 * Every cached inode pays for each byte of struct lc_inode (issue 21.4: at
 * most 1 KB of client memory per cached inode, its dentry and its share of
 * the kept listings included; docs/BENCHMARKS.md "Cache memory limits").
 * It was 912 bytes (928 with malloc's header); 744 is 752 with it.  A
 * field that makes it grow past this either replaces one or goes in a part
 * made on demand (lc_dstate, lc_irare, lc_dcmade, lc_blocks), and the bound
 * moves only with the measurement (tools/bench/run-memlim.sh).
 */
#define LC_INODE_MAX_BYTES 744
_Static_assert(sizeof(struct lc_inode) <= LC_INODE_MAX_BYTES, "struct lc_inode grew (issue 21.4)");

struct lc_dstate *lc_dstate_locked(struct lc_inode *in)
{
	lockdep_assert_held(&in->lock);
	if (!in->dstate) {
		in->dstate = calloc(1, sizeof(*in->dstate));
		if (in->dstate)
			lc_mem_add(in->c, LC_MEM_DIRLIST, lc_mem_size(in->dstate));
	}
	return in->dstate;
}

struct lc_irare *lc_rare_locked(struct lc_inode *in)
{
	lockdep_assert_held(&in->lock);
	if (!in->rare) {
		in->rare = calloc(1, sizeof(*in->rare));
		if (!in->rare)
			return NULL;
		in->rare->quota_room = MDSP_QUOTA_NONE;
		/* (unhashed: the inode is out of the count, so is this;
		 * rare_uncount sets unhashed before it takes in->lock) */
		in->rare->counted = !atomic_load(&in->unhashed);
		if (in->rare->counted)
			lc_mem_add(in->c, LC_MEM_INODE, lc_mem_size(in->rare));
	}
	return in->rare;
}

void lc_dir_rd_drop_locked(struct lc_inode *in)
{
	lockdep_assert_held(&in->lock);
	if (in->dstate && in->dstate->rd) {
		in->c->cache_ops.dir_batch_put(in->dstate->rd);
		in->dstate->rd = NULL;
	}
}

static struct lc_inode *inode_alloc(struct lclient *c, uint64_t ino)
{
	struct lc_inode *in = calloc(1, sizeof(*in));
	pthread_condattr_t ca;

	if (!in)
		return NULL;
	cds_lfht_node_init(&in->hnode);
	in->c = c;
	in->ino = ino;
	atomic_init(&in->ref, 1);
	atomic_init(&in->dgen, 1);
	pthread_mutex_init(&in->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&in->cond, &ca);
	pthread_condattr_destroy(&ca);
	return in;
}

uint64_t lc_secs_ns(int id)
{
	double s = cfg_double((enum cfg_opt_id)id);
	return s <= 0 ? 0 : (uint64_t)(s * 1e9);
}

double lc_secs(int id)
{
	return cfg_double((enum cfg_opt_id)id);
}

/* in->lock held: what a trace says of the byte quotas above a regular file */
static void note_quota_locked(struct lc_inode *in, const struct mdsp_inode *mi)
{
	lockdep_assert_held(&in->lock);
	if (mi->quota_room == MDSP_QUOTA_UNSAID)
		return;
	in->quota_nomem = false;
	if (mi->quota_room == MDSP_QUOTA_NONE && !in->rare)
		return;                 /* as lc_irare would say */
	struct lc_irare *r = lc_rare_locked(in);
	if (!r) {
		in->quota_nomem = true;
		return;
	}
	r->quota_room = mi->quota_room;
	r->quota_base = mi->size;
}

/* in->lock held: @mi from the MDS becomes the inode's attributes (@fresh: a
 * new inode; @sent_at: mono ns its request went out, 0: the session's
 * messages in order) */
static void apply_mi_locked(struct lc_inode *in, const struct mdsp_inode *mi, bool fresh, uint64_t sent_at)
{
	lockdep_assert_held(&in->lock);
	/* an older reply must not overwrite a newer state (change only grows) */
	if (!fresh && mi->change < in->mi.change)
		return;
	/* nor one older than what made ours stale (lc_attrs_forget_locked) */
	if (!fresh && (in->attr_until & LC_ATTRS_STALE) && sent_at && sent_at <= (in->attr_until & ~LC_ATTRS_STALE)) {
		/* though a directory newer than ours keeps no listing of before */
		if (S_ISDIR(in->mi.mode) && mi->change > in->mi.change)
			lc_dir_rd_drop_locked(in);
		return;
	}
	in->attr_until = 0;     /* the MDS's again (the end below decides for how long) */
	note_quota_locked(in, mi);
	uint64_t old_mtime = (uint64_t)in->mi.mtime.sec;
	uint32_t old_nsec = in->mi.mtime.nsec;
	if (S_ISREG(mi->mode) && mi->size < in->mi.size) {
		/* shrunk (another client's truncate may have removed objects and
		 * their index keys): keys past the end are no longer known set */
		struct store_file_layout ly;

		lc_mi_layout(in->c, &in->mi, &ly);
		lc_obj_index_forget(in, store_file_obj_first(&ly, mi->size));
	}
	if (!fresh && in->async_setattrs > 0) {
		/*
		 * Setattrs answered here (asyncdir.c lc_async_setattr) are still
		 * on their way: what the MDS says now may predate them (a cap
		 * flush's ack, a grant, another reply), and the change counter
		 * cannot tell, since the MDS's moves with flushes too.  The
		 * fields they set stay ours until the last one's reply, which
		 * brings the MDS's (issue 25.14: root's append to a user's file,
		 * then chmod ug+s; chmod g+x: the append's flush ack came between
		 * and took u+s back, and the next chmod sent the mode without it).
		 */
		struct mdsp_inode mine = in->mi;

		in->mi = *mi;
		in->mi.mode = mine.mode;
		in->mi.uid = mine.uid;
		in->mi.gid = mine.gid;
		in->mi.atime = mine.atime;
		in->mi.mtime = mine.mtime;
		in->mi.ctime = mine.ctime;
		if (mine.change > in->mi.change)
			in->mi.change = mine.change;
	} else {
		in->mi = *mi;
	}
	atomic_store_explicit(&in->orphaned, mi->nlink == 0, memory_order_relaxed);
	if (in->mi.object_size == 0)
		in->mi.object_size = in->c->default_object_size;
	if (!fresh && S_ISDIR(mi->mode) && (old_mtime != (uint64_t)mi->mtime.sec || old_nsec != mi->mtime.nsec)) {
		/* the directory changed under us (another client): drop its listing */
		lc_dir_rd_drop_locked(in);
	}
	/* fresh from the MDS: cached for as long as the caps cover them (the
	 * caller applies the reply's caps next, which may extend or end it) */
	in->attr_until = lc_attrs_cached_locked(in) ? now_mono_ns() + lc_secs_ns(CFG_client_caps_timeout) : 0;
}

/* @since: the reply is applied by its requester, whose request went out at
 * lc_caps_gen() @since (lc_inode_update_seen); NULL: by the session reader,
 * in order with the cap messages */
static struct lc_inode *inode_update(struct lclient *c, const struct mdsp_inode *mi, uint32_t caps,
				     uint64_t cap_seq, const struct lc_caps_since *since)
{
	struct lc_inode *in, *nin = NULL;
	uint64_t ino = mi->ino;
	int spins = 0;

	if (since && caps)
		lc_caps_debug_apply_wait(c, ino);
	for (;;) {
		in = lc_ino_to_inode(c, ino);
		if (in && mi->generation && in->mi.generation && in->mi.generation != mi->generation) {
			/* the ino was reused: the old inode is stale */
			dout(CLIENT, 10, "inode %llx: generation %llu -> %llu, replacing", (unsigned long long)ino,
			     (unsigned long long)in->mi.generation, (unsigned long long)mi->generation);
			lc_inode_unhash(c, in);
			lc_put(c, in);
			in = NULL;
		}
		if (in)
			break;
		if (!nin) {
			nin = inode_alloc(c, ino);
			if (!nin)
				return NULL;
			nin->mi = *mi;
			if (nin->mi.object_size == 0)
				nin->mi.object_size = c->default_object_size;
			nin->attr_until = 0;
		}
		rcu_read_lock();
		struct cds_lfht_node *got =
			cds_lfht_add_unique(c->inodes, ino_hash(ino), ino_match, &ino, &nin->hnode);
		rcu_read_unlock();
		if (got == &nin->hnode) {
			atomic_fetch_add(&c->ninodes, 1);
			lc_mem_add(c, LC_MEM_INODE, lc_mem_size(nin));
			in = nin;
			nin = NULL;
			/* cached first, then the revokes noted meanwhile (caps.c) */
			if (since)
				caps = lc_caps_seen(c, ino, caps, &cap_seq, since);
			pthread_mutex_lock(&in->lock);
			note_quota_locked(in, mi);
			lc_caps_apply_locked(in, caps, cap_seq);
			pthread_mutex_unlock(&in->lock);
			return in;
		}
		/* someone else inserted it (or a dead one is being removed): retry */
		if (++spins > 1000) {
			inode_free(nin);
			return NULL;
		}
		if (spins > 10)
			sched_yield();
	}
	if (nin)
		inode_free(nin);
	if (since)
		caps = lc_caps_seen(c, ino, caps, &cap_seq, since);
	pthread_mutex_lock(&in->lock);
	apply_mi_locked(in, mi, false, since ? since->t : 0);
	lc_caps_apply_locked(in, caps, cap_seq);
	pthread_mutex_unlock(&in->lock);
	return in;
}

struct lc_inode *lc_inode_update(struct lclient *c, const struct mdsp_inode *mi, uint32_t caps,
				 uint64_t cap_seq)
{
	return inode_update(c, mi, caps, cap_seq, NULL);
}

struct lc_inode *lc_inode_update_seen(struct lclient *c, const struct mdsp_inode *mi, uint32_t caps,
				      uint64_t cap_seq, const struct lc_caps_since *since)
{
	return inode_update(c, mi, caps, cap_seq, since);
}

void lc_inode_refresh(struct lc_inode *in, const struct mdsp_inode *mi)
{
	pthread_mutex_lock(&in->lock);
	apply_mi_locked(in, mi, false, 0);
	pthread_mutex_unlock(&in->lock);
}

bool lc_inode_attr_valid_locked(const struct lc_inode *in, uint64_t now)
{
	return now < in->attr_until && lc_attrs_cached_locked(in);
}

/*
 * What we hold of @in's attributes is not what the MDS has: our own change
 * whose reply did not carry them (a rename's source directory), or counts
 * we moved ourselves for a change the MDS then refused.  Invalidating them
 * (attr_until = 0) did not last: the next grant of the caps made them
 * cached again (lc_caps_apply_locked), and a reply from a request sent
 * before the change, applied after it by its requester, brought the old
 * values back under the caps held then (test_caps
 * test_olddir_attrs_after_own_rename: a directory's nlink one too high on
 * the mount that moved its subdirectory out, test_fuse_stress).  So they
 * are marked stale until attributes newer than now arrive: from the
 * session in order (the reader's), or from a request sent after now.
 */
void lc_attrs_forget_locked(struct lc_inode *in)
{
	lockdep_assert_held(&in->lock);
	in->attr_until = LC_ATTRS_STALE | now_mono_ns();
}

void lc_inode_invalidate(struct lc_inode *in)
{
	pthread_mutex_lock(&in->lock);
	lc_attrs_forget_locked(in);
	pthread_mutex_unlock(&in->lock);
}

static struct timespec ts_of(struct mdsp_time t)
{
	return (struct timespec){ .tv_sec = (time_t)t.sec, .tv_nsec = (long)t.nsec };
}

void lc_attr_from_mdsp(const struct mdsp_inode *mi, struct lc_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = mi->ino;
	a->generation = mi->generation;
	a->change = mi->change << LC_CHANGE_SHIFT;   /* room for local writes: lc_inode_note_write_locked */
	a->mode = mi->mode;
	a->uid = mi->uid;
	a->gid = mi->gid;
	a->may_acl = mi->xattrs != MDSP_XATTRS_NONE && !S_ISLNK(mi->mode);
	a->nlink = mi->nlink;
	a->size = mi->size;
	/* what the objects hold, as the MDS keeps it; a file of an older
	 * one: its size until counted (lc_obj_allocated) */
	a->blocks = mi->blocks != MDSP_BLOCKS_UNKNOWN && S_ISREG(mi->mode) ? (mi->blocks + 511) / 512
									     : (mi->size + 511) / 512;
	a->blksize = mi->object_size ? mi->object_size : LC_DEFAULT_OBJECT_SIZE;
	if (a->blksize > (1u << 22))
		a->blksize = 1u << 22;
	a->rdev = (dev_t)mi->rdev;
	a->atime = ts_of(mi->atime);
	a->mtime = ts_of(mi->mtime);
	a->ctime = ts_of(mi->ctime);
	a->btime = ts_of(mi->btime);
	if (S_ISDIR(mi->mode))
		a->size = mi->files;
}

void lc_inode_note_write_locked(struct lc_inode *in)
{
	if (in->wchange_base != in->mi.change) {
		in->wchange_base = in->mi.change;
		in->wchanges = 0;
	}
	if (in->wchanges < (1u << LC_CHANGE_SHIFT) - 1)
		in->wchanges++;
}

void lc_err_record_locked(struct lc_inode *in, int err)
{
	lockdep_assert_held(&in->lock);
	in->wb_err = err;
	/* bumped only once the previous error was seen (bit 0): else it just
	 * replaces it, nobody has been told either yet */
	if (in->wb_eseq == 0 || (in->wb_eseq & 1u)) {
		uint32_t n = (in->wb_eseq & ~1u) + 2;

		in->wb_eseq = n ? n : 2;   /* 0 means "never an error" */
	}
}

void lc_inode_fill_attr_locked(const struct lc_inode *in, struct lc_attr *attr)
{
	uint32_t meta = lc_meta_ours_locked(in) ? in->dirty_meta | in->flushing_meta : 0;

	lc_attr_from_mdsp(&in->mi, attr);
	/* st_blocks of a file whose blocks the MDS does not keep: what the
	 * objects hold, once lc_obj_allocated() counted it for this version */
	if (in->mi.blocks == MDSP_BLOCKS_UNKNOWN && in->blk && in->blk->alloc_known &&
	    in->blk->alloc_key[0] == in->mi.size && in->blk->alloc_key[2] == in->mi.change &&
	    in->blk->alloc_key[1] == in->mi.mtime.sec * 1000000000ull + in->mi.mtime.nsec)
		attr->blocks = (in->blk->alloc_bytes + 511) / 512;
	/* the NFS change attribute: the MDS's, and this client's writes since */
	if (in->wchange_base == in->mi.change)
		attr->change += in->wchanges;
	if (meta & MDSP_DIRTY_SIZE) {
		if (in->wsize > attr->size) {
			attr->size = in->wsize;
			if (in->mi.blocks == MDSP_BLOCKS_UNKNOWN)
				attr->blocks = (in->wsize + 511) / 512;
		}
	}
	/* the MDS's count, with what this client stored or freed since */
	if (S_ISREG(in->mi.mode) && in->mi.blocks != MDSP_BLOCKS_UNKNOWN)
		attr->blocks = (lc_blocks_estimate_locked(in, attr->size) + 511) / 512;
	if (meta & MDSP_DIRTY_MTIME) {
		attr->mtime = ts_of(in->wmtime);
		/* a write moves ctime too, but not back past a change the MDS
		 * made since (a chmod after a close whose flush is not acked
		 * yet: the MDS keeps the later ctime, apply_flush) */
		if (attr->mtime.tv_sec > attr->ctime.tv_sec ||
		    (attr->mtime.tv_sec == attr->ctime.tv_sec && attr->mtime.tv_nsec > attr->ctime.tv_nsec))
			attr->ctime = attr->mtime;
	}
}

void lc_inode_fill_attr(struct lc_inode *in, struct lc_attr *attr)
{
	pthread_mutex_lock(&in->lock);
	lc_inode_fill_attr_locked(in, attr);
	pthread_mutex_unlock(&in->lock);
}

void lc_cached_attr(struct lc_inode *in, struct lc_attr *attr)
{
	lc_inode_fill_attr(in, attr);
}

struct store_pool *lc_pool_peek(struct lclient *c, uint32_t id)
{
	struct store_pool *p = NULL;

	if (id == 0)
		return c->data;
	pthread_mutex_lock(&c->pools_lock);
	for (size_t i = 0; i < c->npools; i++)
		if (c->pools[i].id == id)
			p = c->pools[i].p;
	pthread_mutex_unlock(&c->pools_lock);
	return p;
}

void lc_mi_layout(struct lclient *c, const struct mdsp_inode *mi, struct store_file_layout *ly)
{
	store_file_layout_init(ly, mi->object_size ? mi->object_size : c->default_object_size, mi->stripe_unit,
			       mi->stripe_count);
	ly->pool_id = mi->pool;
	ly->pool = lc_pool_peek(c, mi->pool);
}

void lc_inode_layout(struct lc_inode *in, struct store_file_layout *ly)
{
	pthread_mutex_lock(&in->lock);
	lc_mi_layout(in->c, &in->mi, ly);
	pthread_mutex_unlock(&in->lock);
}

uint32_t lc_inode_object_size(struct lc_inode *in)
{
	uint32_t os;

	pthread_mutex_lock(&in->lock);
	os = in->mi.object_size ? in->mi.object_size : in->c->default_object_size;
	pthread_mutex_unlock(&in->lock);
	return os;
}

uint64_t lc_inode_size(struct lc_inode *in)
{
	uint64_t s;

	pthread_mutex_lock(&in->lock);
	s = in->mi.size;
	if (lc_meta_ours_locked(in) && in->wsize > s)
		s = in->wsize;
	pthread_mutex_unlock(&in->lock);
	return s;
}

/*
 * The mode-bit decision is perm/perm.c's, the MDS's own.  An inode that
 * may carry an access ACL (its trace said it has xattrs, or nobody said)
 * decides by it for everyone but root and the owner, and the ACL is not
 * cached here: LC_PERM_ASK tells the caller to fetch it (lc_access) or let
 * the MDS decide.
 */
int lc_perm_check(const struct lc_attr *a, int mask, const struct lc_cred *cr)
{
	struct mdsp_inode mi;
	struct mdsp_caller caller;

	memset(&mi, 0, sizeof(mi));
	mi.mode = a->mode;
	mi.uid = a->uid;
	mi.gid = a->gid;
	lc_cred_to_caller(cr, &caller);
	if (a->may_acl && caller.uid != 0 && caller.uid != mi.uid && (mi.mode & S_IRWXG))
		return LC_PERM_ASK;
	return mdsp_may_access(&mi, &caller, mask & 7);
}

/* in->lock held; drops SAFE entries of in->unsafe (an inode is not clean while
 * a request it depends on is not SAFE: fsync after a reopen must wait for it) */
static bool inode_clean_locked(struct lc_inode *in)
{
	lockdep_assert_held(&in->lock);
	return !in->dirty && !in->flushing && !in->dirty_meta && !in->flushing_meta && !in->on_dirty_list &&
	       !in->flushing_now && !in->nopen && lc_unsafe_prune_locked(in);
}

/* evict one unreferenced inode; rcu_read_lock held */
static bool try_evict(struct lclient *c, struct lc_inode *in)
{
	int64_t zero = 0;

	if (in == c->root)
		return false;
	pthread_mutex_lock(&in->lock);
	bool clean = inode_clean_locked(in);
	uint32_t caps = in->caps;
	uint64_t seq = in->cap_seq, caps_at = lc_caps_at_ns(in, now_mono_ns());
	pthread_mutex_unlock(&in->lock);
	if (!clean)
		return false;
	if (!atomic_compare_exchange_strong(&in->ref, &zero, LC_REF_DEAD))
		return false;
	lru_forget(c, in);
	/* before it leaves the hash: a reply that caches it again after finds
	 * the note and does not install a grant from before the release */
	if (caps)
		lc_caps_evict_note(c, in->ino, caps_at);
	if (!atomic_exchange(&in->unhashed, true)) {
		if (!cds_lfht_del(c->inodes, &in->hnode)) {
			atomic_fetch_sub(&c->ninodes, 1);
			lc_mem_sub(c, LC_MEM_INODE, lc_mem_size(in));
		}
		rare_uncount(c, in);
	}
	lc_release_caps(c, in, caps, seq);
	perf_inc(&c->perf.ino_evicted, 1);
	call_rcu(&in->rcu, inode_free_rcu);
	return true;
}

void lc_orphans_evict(struct lclient *c)
{
	uint64_t *q;
	size_t n, keep = 0;

	pthread_mutex_lock(&c->orphan_lock);
	q = c->orphan_q;
	n = c->norphan;
	c->orphan_q = NULL;
	c->norphan = c->orphan_cap = 0;
	pthread_mutex_unlock(&c->orphan_lock);
	for (size_t i = 0; i < n; i++) {
		struct cds_lfht_iter it;
		struct cds_lfht_node *node;
		struct lc_inode *in;
		bool again = false;

		rcu_read_lock();
		cds_lfht_lookup(c->inodes, ino_hash(q[i]), ino_match, &q[i], &it);
		node = cds_lfht_iter_get_node(&it);
		in = node ? caa_container_of(node, struct lc_inode, hnode) : NULL;
		/* still unreferenced (a new reference puts it back when it goes):
		 * dirty data of an unlinked file still open elsewhere, a request
		 * not yet SAFE, keep it for the next round */
		if (in && atomic_load(&in->orphaned) && atomic_load(&in->ref) == 0 && !try_evict(c, in))
			again = atomic_load(&in->ref) == 0;
		rcu_read_unlock();
		if (again)
			q[keep++] = q[i];
	}
	if (keep) {
		pthread_mutex_lock(&c->orphan_lock);
		for (size_t i = 0; i < keep; i++) {
			if (c->norphan == c->orphan_cap) {
				size_t ncap = c->orphan_cap ? c->orphan_cap * 2 : 64;
				uint64_t *nq = realloc(c->orphan_q, ncap * sizeof(*nq));

				if (!nq)
					break;
				c->orphan_q = nq;
				c->orphan_cap = ncap;
			}
			c->orphan_q[c->norphan++] = q[i];
		}
		pthread_mutex_unlock(&c->orphan_lock);
	}
	free(q);
}

/*
 * The lazy auto-resize of liburcu 0.13's hash table can stop for good:
 * __cds_lfht_resize_lazy_launch queues the resize and only then marks it
 * initiated, so a resize that runs to its end in between leaves the mark set
 * and no later one is ever queued.  The tables then stayed at the size they
 * had (2048 buckets for 65,000 inodes in a long-running loligo-fuse: 30
 * nodes a chain, cds_lfht_lookup 9% of its CPU in a create storm).  So the
 * flusher sizes them itself, every round: a bucket per entry, a power of
 * two, grown as soon as the entries pass it and shrunk once they are under
 * an eighth of it.  cds_lfht_resize runs the resize here (outside any read
 * section, as it requires) and clears a stuck mark.
 */
void lc_lfht_fit(struct cds_lfht *ht, unsigned long *fit, uint64_t count)
{
	unsigned long want = 1024;

	while (want < count && want < (1ul << 30))
		want <<= 1;
	if (*fit == 0)
		*fit = 1024;    /* cds_lfht_new's size */
	if (want > *fit || (want < *fit && count < *fit / 8)) {
		cds_lfht_resize(ht, want);
		*fit = want;
	}
}

/* drop every directory's cached READDIR batches (memory pressure) */
static void dirlists_drop(struct lclient *c)
{
	struct cds_lfht_iter it;
	struct lc_inode *in;

	rcu_read_lock();
	LC_LFHT_FOR_EACH(c->inodes, &it, in, hnode) {
		struct rd_batch *rd = NULL, *last = NULL;

		if (!atomic_load_explicit(&c->mem[LC_MEM_DIRLIST], memory_order_relaxed) || !lc_mem_over(c, true))
			break;
		if (!get_unless_dead(in))
			continue;
		pthread_mutex_lock(&in->lock);
		if (!in->rd_busy && in->dstate) {
			rd = in->dstate->rd;
			last = in->dstate->rd_last;
			in->dstate->rd = in->dstate->rd_last = NULL;
		}
		pthread_mutex_unlock(&in->lock);
		if (rd)
			c->cache_ops.dir_batch_put(rd);
		if (last)
			c->cache_ops.dir_batch_put(last);
		put_n(c, in, 1);
	}
	rcu_read_unlock();
}

/* over the trim's target: past 7/8 of client_cache_size, or past 90% of the byte limit */
static bool itrim_over(struct lclient *c, uint64_t target)
{
	return atomic_load(&c->ninodes) > target || lc_mem_over(c, true);
}

/*
 * Inodes are evicted from the head of the LRU (c->lru), the inodes nobody
 * holds, oldest first; those the kernel holds (every name it caches holds
 * its inode) or that are open are not on it.  Before, the trim walked the
 * whole table and met mostly those: the `ls -l` of 200,000 names, every
 * inode held by the kernel, spent 13 % of loligo-fuse's CPU in its walks
 * (cds_lfht_next), even once a second (issue 21.3).  Now a round looks at
 * client_trim_batch inodes at most, each one it can evict, or one that was
 * referenced again since it went on (taken off: its next last put puts it
 * back), or one it spares for now (moved to the tail): looked up since it
 * went on or was last spared (a second chance, as the kernel's inode LRU
 * gives) or not clean.
 */
void lc_icache_trim(struct lclient *c)
{
	uint64_t max = cfg_uint(CFG_client_cache_size);
	uint64_t n = atomic_load(&c->ninodes);
	uint64_t budget = cfg_uint(CFG_client_trim_batch), visited = 0;

	lc_lfht_fit(c->inodes, &c->inodes_fit, n);
	bool mem = lc_mem_over(c, false);
	if (n <= max && !mem)
		return;
	uint64_t target = max - max / 8;

	pthread_mutex_lock(&c->itrim_lock);
	/* past the bound in bytes, the directories' cached listings go first
	 * (a READDIR batch repeats every entry's attributes: ~230 bytes an
	 * entry listed); a listing in progress holds its own reference, and
	 * one waiting for a fetch (rd_busy) fetches again when it finds none */
	if (mem)
		dirlists_drop(c);
	pthread_mutex_lock(&c->lru_lock);
	bool none = !c->lru_head;
	pthread_mutex_unlock(&c->lru_lock);
	if (none) {
		/* every inode referenced (a listing the kernel holds): nothing to do */
		perf_inc(&c->perf.ino_trim_skipped, 1);
		pthread_mutex_unlock(&c->itrim_lock);
		return;
	}
	perf_inc(&c->perf.ino_trim_walks, 1);
	/* the read section keeps the inodes taken off the list alive while we
	 * look at them (a kill frees through call_rcu) */
	rcu_read_lock();
	/* each inode looked at twice at most: a second chance, then it goes */
	pthread_mutex_lock(&c->lru_lock);
	uint64_t left = 2 * c->nlru;
	pthread_mutex_unlock(&c->lru_lock);
	for (; left && (!budget || visited < budget) && itrim_over(c, target); left--) {
		struct lc_inode *in;

		pthread_mutex_lock(&c->lru_lock);
		in = c->lru_head;
		if (in)
			lru_del_locked(c, in);
		pthread_mutex_unlock(&c->lru_lock);
		if (!in)
			break;
		visited++;
		if (atomic_load(&in->ref) != 0)
			continue;   /* referenced again (or dead): off the list */
		if (atomic_exchange_explicit(&in->lru_used, false, memory_order_relaxed) || !try_evict(c, in))
			lru_add(c, in);     /* spared: to the tail */
	}
	rcu_read_unlock();
	perf_inc(&c->perf.ino_trim_visited, visited);
	pthread_mutex_unlock(&c->itrim_lock);
}

struct json_object *lc_inode_dump(struct lclient *c, struct lc_inode *in)
{
	struct json_object *o = json_object_new_object();
	uint64_t now = now_mono_ns();
	char cs[24];

	pthread_mutex_lock(&in->lock);
	json_object_object_add(o, "ino", json_object_new_uint64(in->ino));
	json_object_object_add(o, "ref", json_object_new_int64(atomic_load(&in->ref)));
	json_object_object_add(o, "mode", json_object_new_int((int)in->mi.mode));
	json_object_object_add(o, "nlink", json_object_new_uint64(in->mi.nlink));
	json_object_object_add(o, "size", json_object_new_uint64(in->mi.size));
	json_object_object_add(o, "change", json_object_new_uint64(in->mi.change));
	json_object_object_add(o, "mtime_ns", json_object_new_uint64((uint64_t)in->mi.mtime.sec * 1000000000ull +
								      (uint64_t)in->mi.mtime.nsec));
	json_object_object_add(o, "caps", json_object_new_string(mdsp_caps_str(in->caps, cs, sizeof(cs))));
	json_object_object_add(o, "cap_seq", json_object_new_uint64(in->cap_seq));
	json_object_object_add(o, "attrs_stale", json_object_new_boolean(in->attr_until & LC_ATTRS_STALE));
	json_object_object_add(o, "attr_valid", json_object_new_boolean(lc_inode_attr_valid_locked(in, now)));
	json_object_object_add(o, "kernel_lookups", json_object_new_int64(atomic_load(&in->knlookup)));
	if (S_ISDIR(in->mi.mode)) {
		json_object_object_add(o, "complete", json_object_new_boolean(lc_dir_complete_locked(in)));
		json_object_object_add(o, "dgen", json_object_new_uint64(atomic_load(&in->dgen)));
		json_object_object_add(o, "ngen", json_object_new_uint64(atomic_load(&in->ngen)));
	}
	pthread_mutex_unlock(&in->lock);
	if (S_ISDIR(in->mi.mode))
		json_object_object_add(o, "dentries", lc_dcache_dump_dir(c, in));
	return o;
}

struct json_object *lc_icache_dump(struct lclient *c)
{
	struct json_object *arr = json_object_new_array();
	struct cds_lfht_iter it;
	struct lc_inode *in;
	uint64_t now = now_mono_ns();

	rcu_read_lock();
	LC_LFHT_FOR_EACH(c->inodes, &it, in, hnode) {
		struct json_object *o = json_object_new_object();
		pthread_mutex_lock(&in->lock);
		json_object_object_add(o, "ino", json_object_new_uint64(in->ino));
		json_object_object_add(o, "ref", json_object_new_int64(atomic_load(&in->ref)));
		json_object_object_add(o, "mode", json_object_new_int((int)in->mi.mode));
		json_object_object_add(o, "size", json_object_new_uint64(in->mi.size));
		json_object_object_add(o, "wsize", json_object_new_uint64(in->wsize));
		{
			char cs[24];

			json_object_object_add(o, "caps", json_object_new_string(mdsp_caps_str(in->caps, cs, sizeof(cs))));
			json_object_object_add(o, "wanted",
					       json_object_new_string(mdsp_caps_str(lc_caps_wanted_locked(in), cs, sizeof(cs))));
		}
		json_object_object_add(o, "cap_seq", json_object_new_uint64(in->cap_seq));
		json_object_object_add(o, "open", json_object_new_int(in->nopen));
		json_object_object_add(o, "flushing_meta", json_object_new_int((int)in->flushing_meta));
		json_object_object_add(o, "attr_valid", json_object_new_boolean(lc_inode_attr_valid_locked(in, now)));
		json_object_object_add(o, "dirty_bytes", json_object_new_uint64(in->dirty_bytes));
		json_object_object_add(o, "dirty_meta", json_object_new_int((int)in->dirty_meta));
		pthread_mutex_unlock(&in->lock);
		json_object_array_add(arr, o);
	}
	rcu_read_unlock();
	return arr;
}

/* ---- the async submissions of a directory: a flag lock on the inode --------- */

/*
 * dir->async_submitting counts the operations between their Dc check and
 * their send: a lock many may hold at once, that a revoke of Dc and an
 * fsync of the directory wait to see free.  Its holders wait for nothing
 * but the send (mdsc_submit: room in the queue to the MDS, which reads
 * every connection whatever it waits for), so no holder waits for a
 * waiter; lockdep checks it as a class of its own.
 */
static LOCKDEP_CLASS(submit_class, "directory async submissions (dir->async_submitting)");

void lc_async_submit_begin_locked(struct lc_inode *dir)
{
	lockdep_assert_held(&dir->lock);
	dir->async_submitting++;
	lockdep_acquired(&submit_class, &dir->async_submitting, true);   /* taking it never waits */
}

void lc_async_submit_end(struct lc_inode *dir)
{
	pthread_mutex_lock(&dir->lock);
	lockdep_released(&dir->async_submitting);
	if (!--dir->async_submitting)
		pthread_cond_broadcast(&dir->cond);
	pthread_mutex_unlock(&dir->lock);
}

void lc_async_submit_wait_locked(struct lc_inode *dir)
{
	lockdep_assert_held(&dir->lock);
	if (!dir->async_submitting)
		return;
	lockdep_wait_cond(&submit_class, &dir->async_submitting, &dir->lock);
	lc_op_wait_set(LC_WAIT_ASYNC, dir->ino);
	while (dir->async_submitting)
		pthread_cond_wait(&dir->cond, &dir->lock);
	lc_op_wait_clear();
}

/* ---- an async create not submitted yet: a flag lock on its new inode ---------- */

/*
 * in->create_unsent: an inode made by an async create (asyncdir.c), from
 * the moment its name is in the caches until its request is submitted.  A
 * request naming it waits (lc_async_order) so as to go out behind the
 * create.  A flag lock like dir->async_submitting, taken after it (the
 * creator holds its directory's); its holder waits only for the send, and
 * takes it only after waiting for its own directory's, so nobody waits
 * holding one.
 */
static LOCKDEP_CLASS(unsent_class, "async create not submitted yet (in->create_unsent)");

void lc_create_unsent_begin(struct lclient *c, struct lc_inode *in)
{
	pthread_mutex_lock(&in->lock);
	in->create_unsent = true;
	lockdep_acquired(&unsent_class, &in->create_unsent, true);   /* taking it never waits */
	pthread_mutex_unlock(&in->lock);
	atomic_fetch_add(&c->async_unsent, 1);
}

void lc_create_unsent_end(struct lclient *c, struct lc_inode *in)
{
	pthread_mutex_lock(&in->lock);
	lockdep_released(&in->create_unsent);
	in->create_unsent = false;
	pthread_cond_broadcast(&in->cond);
	pthread_mutex_unlock(&in->lock);
	atomic_fetch_sub(&c->async_unsent, 1);
}

/* Wait until the inode @ino (and the one @name names in it, if it is a
 * cached directory) is not an unsent async create. */
static void order_behind(struct lclient *c, uint64_t ino, const char *name)
{
	struct lc_inode *in = ino ? lc_ino_to_inode(c, ino) : NULL;
	uint64_t known = 0;

	if (!in)
		return;
	pthread_mutex_lock(&in->lock);
	if (in->create_unsent) {
		perf_inc(&c->perf.async_order_waits, 1);
		lockdep_wait_cond(&unsent_class, &in->create_unsent, &in->lock);
		lc_op_wait_set(LC_WAIT_ASYNC, in->ino);
		while (in->create_unsent)
			pthread_cond_wait(&in->cond, &in->lock);
		lc_op_wait_clear();
	}
	pthread_mutex_unlock(&in->lock);
	/* an unlink, rename or link of the name goes behind its create too */
	if (name && lc_dcache_lookup(c, in, name, &known) == 1 && known && known != ino)
		order_behind(c, known, NULL);
	lc_put(c, in);
}

void lc_async_order_ino(struct lclient *c, uint64_t ino)
{
	if (atomic_load_explicit(&c->async_unsent, memory_order_acquire))
		order_behind(c, ino, NULL);
}

void lc_async_order(struct lclient *c, const struct mds_request *req)
{
	if (!atomic_load_explicit(&c->async_unsent, memory_order_acquire))
		return;
	order_behind(c, req->args.ino, req->args.name);
	if (req->args.ino2)
		order_behind(c, req->args.ino2, req->args.name2);
}

void lc_mark_dirty_locked(struct lclient *c, struct lc_inode *in)
{
	if (in->on_dirty_list)
		return;
	in->on_dirty_list = true;
	lc_get(in);
	pthread_mutex_lock(&c->dirty_lock);
	in->dirty_next = c->dirty_list;
	c->dirty_list = in;
	pthread_mutex_unlock(&c->dirty_lock);
}

size_t lc_mem_size(const void *p)
{
	return p ? malloc_usable_size((void *)p) + sizeof(size_t) : 0;
}

uint64_t lc_mem_total(struct lclient *c)
{
	uint64_t t = 0;

	for (int k = 0; k < LC_MEM_NKINDS; k++)
		t += atomic_load_explicit(&c->mem[k], memory_order_relaxed);
	return t;
}

bool lc_mem_over(struct lclient *c, bool lo)
{
	uint64_t limit = cfg_uint(CFG_client_cache_memory_limit);

	return limit && lc_mem_total(c) > (lo ? limit - limit / 10 : limit);
}

struct xarray *lc_obj_index_set(struct lc_inode *in)
{
	struct xarray *xa = atomic_load_explicit(&in->objs, memory_order_acquire), *nx, *none = NULL;

	if (xa)
		return xa;
	nx = malloc(sizeof(*nx));
	if (!nx)
		return NULL;
	xa_init(nx);
	if (atomic_compare_exchange_strong_explicit(&in->objs, &none, nx, memory_order_acq_rel,
						    memory_order_acquire))
		return nx;
	xa_destroy(nx);   /* another thread made it first */
	free(nx);
	return none;
}

void lc_obj_index_forget(struct lc_inode *in, uint64_t objno)
{
	uint64_t idx = objno;

	if (!atomic_load_explicit(&in->objs, memory_order_acquire))
		return;     /* nothing known: nothing to forget */

	for (;;) {
		rcu_read_lock();
		void *e = xa_find(in->objs, &idx);
		rcu_read_unlock();
		if (!e)
			break;
		xa_erase(in->objs, idx);
		if (idx == UINT64_MAX)
			break;
		idx++;
	}
}
