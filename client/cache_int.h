/*
 * cache_int.h - private to client/: the cache core, the lowest layer of the
 * client library above the MDS session (types_int.h has the map): inodes
 * (inode.c), dentries (dentry.c), caps (caps.c), what a file's objects
 * hold (blocks.c), MDS requests and their traces (request.c), operations
 * in flight (optrack.c).  It calls nothing above it: what it needs from
 * the data path and the namespace layer goes through c->cache_ops.
 */
#ifndef LOLIGO_CLIENT_CACHE_INT_H
#define LOLIGO_CLIENT_CACHE_INT_H

#include "client/types_int.h"
#include "client/mds_client.h"
#include "common/lockdep.h"
#include "common/time.h"


/* ---- caps.c -------------------------------------------------------------- */
/** lc_cap_work_queue_locked - c->work_lock held: @w goes to its inode's cap worker. */
void lc_cap_work_queue_locked(struct lclient *c, struct cap_work *w);
/** lc_cap_workers_start / _stop - the cap worker threads (stop: joins; queued work stays). */
int lc_cap_workers_start(struct lclient *c);
void lc_cap_workers_stop(struct lclient *c);
/** lc_cap_work_run_queued - run what is queued in the caller (after the workers stopped).  Return: any. */
bool lc_cap_work_run_queued(struct lclient *c);

/* ---- inode.c ------------------------------------------------------------- */
/** lc_orphans_evict - the flusher: evict the queued orphans nobody uses (their caps go back to the MDS). */
void lc_orphans_evict(struct lclient *c);
/** lc_ns_changed - a name may have moved or gone: lc_ns_epoch() moves on (dentry.c). */
void lc_ns_changed(struct lclient *c);

/* ---- optrack.c ----------------------------------------------------------- */
/** lc_optrack_init - at create, before anything runs. */
int lc_optrack_init(struct lclient *c);
/** lc_optrack_start - start the watchdog thread. */
int lc_optrack_start(struct lclient *c);
/** lc_optrack_stop - stop it (idempotent). */
void lc_optrack_stop(struct lclient *c);
/** lc_optrack_destroy - at destroy: stop, and free this client's slots for others. */
void lc_optrack_destroy(struct lclient *c);
/** lc_ops_json - `ops`: every operation in flight with its age and wait. */
struct json_object *lc_ops_json(struct lclient *c);

/* ---- request.c ----------------------------------------------------------- */
/** lc_deleg_want - flag @req MDSP_REQ_WANT_INOS when a create should ask for more inos (then it is
 * asked), with the delegation epoch its reply's range is checked against. */
void lc_deleg_want(struct lclient *c, struct mds_request *req);
/** lc_deleg_reply - the reply of a create that carried MDSP_REQ_WANT_INOS: keep what it delegated. */
void lc_deleg_reply(struct lclient *c, const struct mds_request *req);
/** lc_deleg_take - an ino delegated to the session for an asynchronous create into *@ino, and the
 * generation of the connection that delegated it into *@gen (mds_request.want_ino_gen): false when
 * none is left. */
bool lc_deleg_take(struct lclient *c, uint64_t *ino, uint64_t *gen);
/** lc_deleg_reset - forget the delegated inos (a reconnect: the MDS may have lost their grant). */
void lc_deleg_reset(struct lclient *c);
/** lc_deleg_taken - the request of an ino lc_deleg_take gave is registered (or never will be); *@taking
 * says whether one is still owed, and is cleared. */
void lc_deleg_taken(struct lclient *c, bool *taking);
/**
 * lc_deleg_quiesce - mdsc_ops.deleg_quiesce: before a RECONNECT, stop taking delegated inos (until the
 * session is back: lc_deleg_reset) and wait up to @timeout_ns for those taken to be in registered
 * requests.  Return: true when none is owed.
 */
bool lc_deleg_quiesce(void *arg, uint64_t timeout_ns);

/* ---- caps.c -------------------------------------------------------------- */
/**
 * lc_caps_set_locked - in->lock held: @in's caps become @caps; a directory
 * that gains Dc starts a new Dc epoch (lc_async_setattr).
 */
void lc_caps_set_locked(struct lc_inode *in, uint32_t caps);

/* ---- inode.c ------------------------------------------------------------- */
/**
 * lc_async_order - before @req is submitted: if an inode it names (ino,
 * ino2) is an asynchronous create or mkdir whose own request is not
 * submitted yet (its name and inode are in the caches a moment before),
 * wait until it is, so that @req goes out behind it.  No lock held.
 */
void lc_async_order(struct lclient *c, const struct mds_request *req);
/** lc_async_order_ino - the same for the inode @ino. */
void lc_async_order_ino(struct lclient *c, uint64_t ino);
/** lc_create_unsent_begin - @in's name is about to be published by its async create (inode.c). */
void lc_create_unsent_begin(struct lclient *c, struct lc_inode *in);
/** lc_create_unsent_end - ... and its request is submitted, or never will be. */
void lc_create_unsent_end(struct lclient *c, struct lc_inode *in);
/** lc_async_submit_begin_locked - dir->lock held: an async operation of @dir passed its Dc check. */
void lc_async_submit_begin_locked(struct lc_inode *dir);
/** lc_async_submit_end - ... and has been sent (takes dir->lock). */
void lc_async_submit_end(struct lc_inode *dir);
/** lc_async_submit_wait_locked - dir->lock held (released while waiting): every one that passed it is sent. */
void lc_async_submit_wait_locked(struct lc_inode *dir);

/* ---- dentry.c ------------------------------------------------------------ */
/** lc_dir_complete_locked - dir->lock held: every name of @dir is in the dentry cache. */
bool lc_dir_complete_locked(struct lc_inode *dir);
/** lc_dir_set_complete_locked - dir->lock held: @dir is empty and ours (mkdir under Dc). */
void lc_dir_set_complete_locked(struct lc_inode *dir);
/** lc_dir_not_complete - a name of directory @dir_ino left the dentry cache while it exists. */
void lc_dir_not_complete(struct lclient *c, uint64_t dir_ino);

/* ---- request.c ----------------------------------------------------------- */
/** lc_track_unsafe - @in depends on @req until it is SAFE (fsync waits for it). */
void lc_track_unsafe(struct lc_inode *in, struct mds_request *req);
void lc_cred_to_caller(const struct lc_cred *cr, struct mdsp_caller *caller);
/** lc_req_new - a request for @op on @ino as @cr (NULL cred: root). */
struct mds_request *lc_req_new(struct lclient *c, uint32_t op, uint64_t ino, const struct lc_cred *cr);
/**
 * lc_req_run - send @req, wait for its first reply, apply its trace (dir and
 * target inodes, caps) to the cache.  If @target is non-NULL and the reply
 * has a target, *@target gets a new reference to its inode.
 */
int lc_req_run(struct lclient *c, struct mds_request *req, struct lc_inode **target);
/**
 * lc_req_submit - send @req without waiting (lc_req_run in two halves: a
 * read asked for ahead of its use), noting lc_caps_gen() in *@since just
 * before; lc_req_wait - wait for its first reply (client_request_timeout,
 * the thread's lc_intr) and apply it as lc_req_run does, its grants checked
 * against @since (lc_caps_seen).  Return: as lc_req_run.
 */
struct lc_caps_since;
int lc_req_submit(struct lclient *c, struct mds_request *req, struct lc_caps_since *since);
int lc_req_wait(struct lclient *c, struct mds_request *req, const struct lc_caps_since *since,
		struct lc_inode **target);
/**
 * lc_wait_unsafe - wait until every MDS request @in depends on is SAFE
 * (fsync, O_SYNC writes).  Return: 0, -EIO if the MDS lost one of them
 * (reported once), -ETIMEDOUT (client_request_timeout; they stay tracked).
 * No lock held.
 */
int lc_wait_unsafe(struct lclient *c, struct lc_inode *in);
/** lc_unsafe_prune_locked - in->lock held: drop what is SAFE; true if nothing is pending. */
bool lc_unsafe_prune_locked(struct lc_inode *in);
/** lc_unsafe_drop - free @in's list (the inode is being freed). */
void lc_unsafe_drop(struct lc_inode *in);

/* ---- inode.c ------------------------------------------------------------- */
double lc_secs(int id);
uint64_t lc_secs_ns(int id);
int lc_icache_init(struct lclient *c);
/** lc_icache_destroy - free every inode (no concurrent users left). */
void lc_icache_destroy(struct lclient *c);
/**
 * lc_inode_update - insert or refresh the inode described by @mi (an MDS
 * reply), grant @caps with @cap_seq (0: none).  Returns a new reference,
 * or NULL on allocation failure.
 */
struct lc_inode *lc_inode_update(struct lclient *c, const struct mdsp_inode *mi, uint32_t caps,
				 uint64_t cap_seq);
/**
 * lc_inode_update_seen - lc_inode_update() for a reply applied by the
 * thread that sent its request, not by the session reader: @since is
 * lc_caps_gen() before the request went out, and a grant a revoke took
 * back meanwhile (acked as "not cached"), or one on an inode evicted since
 * (its caps released), is not installed (lc_caps_seen).
 * Takes no lock on entry; in->lock, c->rvt_lock and c->evt_lock inside.
 */
struct lc_caps_since;
struct lc_inode *lc_inode_update_seen(struct lclient *c, const struct mdsp_inode *mi, uint32_t caps,
				      uint64_t cap_seq, const struct lc_caps_since *since);
/** lc_inode_refresh - apply @mi (from the MDS) to a cached inode. */
void lc_inode_refresh(struct lc_inode *in, const struct mdsp_inode *mi);
/**
 * lc_inode_note_write_locked - in->lock held: a write (buffered or not)
 * changed the data, so lc_attr.change must move now, before the MDS hears
 * of it.  lc_attr.change is mi.change << LC_CHANGE_SHIFT plus the writes
 * since mi.change last moved: it grows with every write, and never goes
 * back when the MDS's change moves on (by at least one) and the local
 * count starts over.
 */
#define LC_CHANGE_SHIFT 20
/* in->lock held: @in's cap_seq moved now (in->caps_at_ms) */
static inline void lc_caps_moved_locked(struct lc_inode *in)
{
	in->caps_at_ms = (uint32_t)(now_mono_ns() / 1000000);
}

/*
 * When @in's caps last moved, in mono ns, rounded up to the end of its
 * millisecond: a grant from a request sent in that same millisecond is
 * taken as older (dropped: the client asks again, never keeps a grant the
 * MDS may have let go).  Caps that moved more than 2^32 ms (49 days) ago
 * read as more recent, with the same safe answer.
 */
static inline uint64_t lc_caps_at_ns(const struct lc_inode *in, uint64_t now_ns)
{
	uint64_t now_ms = now_ns / 1000000;
	uint64_t ago = (uint32_t)((uint32_t)now_ms - in->caps_at_ms);

	return (now_ms - (ago < now_ms ? ago : now_ms) + 1) * 1000000 - 1;
}

void lc_inode_note_write_locked(struct lc_inode *in);
/**
 * lc_err_record_locked - in->lock held: record @err (-errno) in @in's
 * errseq (in->wb_err, wb_eseq): the next fsync or close of each handle
 * reports it once (writeback.c lc_wb_err_check).  A failed writeback, or
 * size/mtime an eviction dropped (lc_session_event).
 */
void lc_err_record_locked(struct lc_inode *in, int err);
/** lc_inode_fill_attr_locked - in->lock held: @attr from the inode. */
void lc_inode_fill_attr_locked(const struct lc_inode *in, struct lc_attr *attr);
void lc_inode_fill_attr(struct lc_inode *in, struct lc_attr *attr);
/** lc_inode_attr_valid_locked - in->lock held: cached attributes may be used. */
bool lc_inode_attr_valid_locked(const struct lc_inode *in, uint64_t now);
/**
 * lc_attrs_forget_locked - in->lock held: @in's attributes are not the MDS's
 * (our change the reply did not carry, a local guess that failed): not
 * cached until attributes newer than now come (inode.c).
 */
void lc_attrs_forget_locked(struct lc_inode *in);
/** lc_inode_invalidate - lc_attrs_forget_locked with the lock taken. */
void lc_inode_invalidate(struct lc_inode *in);
/** lc_inode_unhash - drop @in from the cache; it is freed with its last reference. */
void lc_inode_unhash(struct lclient *c, struct lc_inode *in);
uint32_t lc_inode_object_size(struct lc_inode *in);
struct store_file_layout;
/**
 * lc_mi_layout - the data layout of @mi (store_file_map: object size,
 * stripe unit and count; 0s are the client's default object size, plain),
 * and its pool: ly->pool is NULL while the pool is not open here yet
 * (lc_layout_resolve opens it).  Takes c->pools_lock, nothing else.
 */
void lc_mi_layout(struct lclient *c, const struct mdsp_inode *mi, struct store_file_layout *ly);
struct store_pool;
/** lc_pool_peek - data pool @id's handle if it is open here (0: c->data), else NULL.  Takes c->pools_lock. */
struct store_pool *lc_pool_peek(struct lclient *c, uint32_t id);
/** lc_inode_layout - lc_mi_layout of @in's attributes.  Takes in->lock. */
void lc_inode_layout(struct lc_inode *in, struct store_file_layout *ly);
uint64_t lc_inode_size(struct lc_inode *in);
/** lc_mem_size - the heap bytes behind @p: malloc_usable_size and the chunk's header word (0 for NULL). */
size_t lc_mem_size(const void *p);
static inline void lc_mem_add(struct lclient *c, enum lc_mem_kind k, size_t n)
{
	atomic_fetch_add_explicit(&c->mem[k], n, memory_order_relaxed);
}
static inline void lc_mem_sub(struct lclient *c, enum lc_mem_kind k, size_t n)
{
	atomic_fetch_sub_explicit(&c->mem[k], n, memory_order_relaxed);
}
/**
 * lc_dstate_locked - directory @in's lc_dstate, made at the first call (NULL
 * only if it cannot be made: the caller then caches nothing of the kind).
 * in->lock held.
 */
struct lc_dstate *lc_dstate_locked(struct lc_inode *in);
/**
 * lc_rare_locked - @in's lc_irare, made at the first call (NULL only if it
 * cannot be made).  in->lock held.
 */
struct lc_irare *lc_rare_locked(struct lc_inode *in);
/** lc_dir_rd_drop_locked - drop directory @in's kept READDIR batch, if any.  in->lock held. */
void lc_dir_rd_drop_locked(struct lc_inode *in);
/** lc_mem_total - what the caches hold in bytes, every kind. */
uint64_t lc_mem_total(struct lclient *c);
/** lc_mem_over - past client_cache_memory_limit (@lo: past 90% of it, where trimming stops)? */
bool lc_mem_over(struct lclient *c, bool lo);
/**
 * lc_obj_index_set - @in's set of object numbers whose index keys are known
 * set, made at the first call (NULL only if it cannot be made).
 */
struct xarray *lc_obj_index_set(struct lc_inode *in);
/** lc_icache_trim - evict unreferenced clean inodes past client_cache_size or client_cache_memory_limit. */
void lc_icache_trim(struct lclient *c);
/** lc_lfht_fit - the flusher: size @ht (one of ours) to @count entries; *@fit is its size as we set it last. */
void lc_lfht_fit(struct cds_lfht *ht, unsigned long *fit, uint64_t count);
/* 0, -EACCES, or LC_PERM_ASK: an ACL may decide, ask for it (inode.c) */
#define LC_PERM_ASK 1
int lc_perm_check(const struct lc_attr *a, int mask, const struct lc_cred *cr);
struct json_object *lc_icache_dump(struct lclient *c);
/*
 * lc_inode_dump - one inode as `dump inode` shows it: attributes, caps, the
 * directory state that answers lookups and listings without the MDS (is it
 * complete, its generations) and its cached names (the kept READDIR batch
 * is the namespace layer's: lc_readdir_dump).
 */
struct json_object *lc_inode_dump(struct lclient *c, struct lc_inode *in);
/** lc_dcache_dump_dir - every cached name under @dir (walks the whole table: for debugging). */
struct json_object *lc_dcache_dump_dir(struct lclient *c, struct lc_inode *dir);
void lc_attr_from_mdsp(const struct mdsp_inode *mi, struct lc_attr *a);

/* ---- dentry.c ------------------------------------------------------------ */
int lc_dcache_init(struct lclient *c);
void lc_dcache_destroy(struct lclient *c);
/**
 * lc_dcache_lookup - cached dentry @name in @dir: 1 with *@ino (0 = known
 * not to exist), or 0 if not cached / expired.
 */
int lc_dcache_lookup(struct lclient *c, struct lc_inode *dir, const char *name, uint64_t *ino);
/**
 * lc_dcache_add - @name in @dir is @ino (0: it does not exist).  A name is
 * only cached under a lease (lc_dcache_add_lease); this one keeps a leased
 * entry that says the same, drops any other, and caches a negative entry
 * while @dir holds Fs (which covers names known not to exist).
 */
void lc_dcache_add(struct lclient *c, struct lc_inode *dir, const char *name, uint64_t ino);
/**
 * lc_dcache_add_since - lc_dcache_add() of what a request sent at @dir's
 * ngen @ngen0 and change attribute @change0 found: a negative entry only
 * if the directory has held Fs since (its ngen did not move), nothing of
 * ours changed it (its change attribute did not move; 0 is "not known",
 * LC_CHANGE_ANY: not checked) and no reply of ours that changed names in
 * it is newer than @rx (lc_dir_names_rx when the request went out, or the
 * request's own rx_seq for what its change made; LC_RX_ANY: not checked).
 */
#define LC_CHANGE_ANY UINT64_MAX
#define LC_RX_ANY UINT64_MAX
/*
 * lc_dir_ngen_fs_locked - @dir->lock held: its ngen, to pass as @ngen0, if
 * it holds Fs now, else LC_NGEN_NO_FS (matches none).  An ngen that did not
 * move proves Fs held all along only if it was held at the start: another
 * client's change made while we held none revoked nothing, and a grant of
 * Fs since (another reply's) says nothing of before it.
 */
#define LC_NGEN_NO_FS UINT64_MAX
uint64_t lc_dir_ngen_fs_locked(const struct lc_inode *dir);
void lc_dcache_add_since(struct lclient *c, struct lc_inode *dir, const char *name, uint64_t ino, uint64_t ngen0,
			 uint64_t change0, uint64_t rx);
/**
 * lc_dir_names_changed - the reply with rx_seq @rx of a change of ours
 * changed names in directory @dir_ino: what was asked for before it (an
 * ENOENT, a listing) and older replies of ours applied after it no longer
 * make entries there (lc_dcache_add_since), and the kept listing goes.
 * Requesters apply their replies in any order; the MDS made the changes
 * in rx order.
 */
void lc_dir_names_changed(struct lclient *c, uint64_t dir_ino, uint64_t rx);
/** lc_dir_names_rx - @dir's latest lc_dir_names_changed (0: none), to pass to lc_dcache_add_since. */
uint64_t lc_dir_names_rx(struct lc_inode *dir);
/** lc_dir_names_rx_locked - the same, @dir->lock held. */
uint64_t lc_dir_names_rx_locked(const struct lc_inode *dir);
/** lc_dcache_add_lease - cache @name -> @ino under the lease with sequence @seq. */
void lc_dcache_add_lease(struct lclient *c, struct lc_inode *dir, const char *name, uint64_t ino, uint64_t seq);
/** lc_dcache_leased - @name in @dir is cached under a lease (a long kernel entry timeout is safe). */
bool lc_dcache_leased(struct lclient *c, struct lc_inode *dir, const char *name);
/** lc_dcache_revoke_lease - the MDS revokes the lease on @name in @dir_ino: forget it (and tell the frontend). */
void lc_dcache_revoke_lease(struct lclient *c, uint64_t dir_ino, const char *name);
/** lc_dcache_drop_all - the session's leases are gone: forget every name (and tell the frontend). */
void lc_dcache_drop_all(struct lclient *c);
/** lc_dcache_negatives_gone - @dir lost Fs: its negative entries are not valid any more (ours and the kernel's). */
void lc_dcache_negatives_gone(struct lclient *c, struct lc_inode *dir);
/**
 * lc_dcache_reconnect_leases - append the leases we hold to the RECONNECT
 * array *@v (*@n used of @cap); may grow it.  Return 0 or -ENOMEM (then
 * what was collected stays).
 */
int lc_dcache_reconnect_leases(struct lclient *c, struct mdsp_cap_reconnect **v, uint32_t *n, size_t cap);
void lc_dcache_remove(struct lclient *c, uint64_t dir_ino, const char *name);
/** lc_dcache_invalidate_dir - forget every cached dentry of @dir (O(1)). */
void lc_dcache_invalidate_dir(struct lc_inode *dir);
void lc_dcache_trim(struct lclient *c);
/** lc_dcache_revoke_dir - drop @dir's names and report each through lc_callbacks.inval_dentry. */
void lc_dcache_revoke_dir(struct lclient *c, struct lc_inode *dir);

/* ---- caps.c -------------------------------------------------------------- */
/**
 * lc_caps_apply_locked - in->lock held: the caps of a reply or grant with
 * sequence @seq are the inode's caps now, unless a newer state was applied.
 * Attributes stay cached (attr_until) only while they are all covered.
 */
void lc_caps_apply_locked(struct lc_inode *in, uint32_t caps, uint64_t seq);
/*
 * What a request notes before it goes out (lc_caps_gen), to check the grants
 * of its reply against when it is applied (lc_caps_seen): how many revokes
 * of inodes not cached here were acked and how many inodes were evicted with
 * their caps released so far, and when (mono ns).
 */
struct lc_caps_since {
	uint64_t rv, ev, t;
};
/** lc_caps_gen - the counts a request notes before it goes out, for lc_caps_seen. */
struct lc_caps_since lc_caps_gen(struct lclient *c);
/**
 * lc_caps_seen - the caps of a reply's grant on @ino (@caps, *@seq) that may be
 * installed, its request sent at lc_caps_gen() @since: 0 (and *@seq 0) if a
 * revoke as new as the grant was acked as "not cached" since, or @ino was
 * evicted (its caps released) after its caps moved since, or the records
 * of either lost what they would need to tell; @caps otherwise.  Call it
 * after the inode is in the cache, with no lock held (takes c->rvt_lock
 * and c->evt_lock, leaves).
 */
uint32_t lc_caps_seen(struct lclient *c, uint64_t ino, uint32_t caps, uint64_t *seq,
		      const struct lc_caps_since *since);
/**
 * lc_caps_evict_note - @ino is being evicted and its caps released, which
 * last moved at @caps_at (lc_caps_at_ns: in->caps_at_ms, rounded up): called after it is marked dead,
 * before it leaves the hash (a requester that caches it again then finds
 * the note).  Takes c->evt_lock (a leaf).
 */
void lc_caps_evict_note(struct lclient *c, uint64_t ino, uint64_t caps_at);
/** lc_caps_debug_apply_wait - test hook: see c->debug_apply_wait_ino. */
void lc_caps_debug_apply_wait(struct lclient *c, uint64_t ino);
/** lc_attrs_cached_locked - in->lock held: the caps cover every attribute. */
bool lc_attrs_cached_locked(const struct lc_inode *in);
void lc_handle_caps(void *arg, const struct mdsp_caps *caps);
void lc_session_event(void *arg, uint32_t op);
int lc_reconnect_caps(void *arg, struct mdsp_cap_reconnect **caps, uint32_t *ncaps);
/** lc_caps_process - the flusher thread runs queued revokes. */
void lc_caps_process(struct lclient *c, struct cap_work *w);
/** lc_revoke_expire - the flusher's tick: deferred revokes past their deadline are acked anyway. */
void lc_revoke_expire(struct lclient *c);
/**
 * lc_revoke_drain - unmount: wait for the deferred revokes to finish (up to
 * their deadlines; the flusher must still run), then complete the rest.
 */
void lc_revoke_drain(struct lclient *c);
/** lc_caps_wanted_locked - in->lock held: the file caps the open handles want. */
uint32_t lc_caps_wanted_locked(const struct lc_inode *in);
/**
 * lc_caps_update - tell the MDS what @in's open handles want now and give
 * up what nothing needs (Fw/Fb once the last writer closed); carries dirty
 * size/mtime as a FLUSH if there are any.  No lock held.
 */
void lc_caps_update(struct lclient *c, struct lc_inode *in);
/**
 * lc_cap_flush - send @in's dirty size/mtime to the MDS in a CAPS FLUSH
 * (never blocks on the MDS).  *@tid gets the flush to wait for (0: none).
 * Return: 0, or -ENOTCONN when no session is open (they stay dirty).
 */
int lc_cap_flush(struct lclient *c, struct lc_inode *in, uint64_t *tid);
/**
 * lc_cap_flush_sync - flush @in's size/mtime and wait until journaled
 * (waiting for the session if need be).  -ETIMEDOUT after
 * client_request_timeout (if set), -EINTR when the caller's lc_intr fires;
 * what is not acked stays dirty and is sent again.
 */
int lc_cap_flush_sync(struct lclient *c, struct lc_inode *in);
/** lc_cap_flush_wait - wait until the flush @tid of @in is journaled at the MDS (bounded as lc_cap_flush_sync). */
int lc_cap_flush_wait(struct lclient *c, struct lc_inode *in, uint64_t tid);
/** lc_release_caps - @in leaves the cache: drop its caps at the MDS. */
void lc_release_caps(struct lclient *c, struct lc_inode *in, uint32_t caps, uint64_t seq);

/* ---- blocks.c ------------------------------------------------------------ */
/*
 * blocks.c: what a file's data objects hold, as this client changed it.
 * Every function takes in->lock held by the caller.
 */
/** lc_blocks_added_locked - [@off, @off+@len) of @in is in the store now (written back, fallocated). */
void lc_blocks_added_locked(struct lclient *c, struct lc_inode *in, uint64_t off, uint64_t len);
/** lc_blocks_removed_locked - [@off, @off+@len) of @in was punched (its whole blocks are free). */
void lc_blocks_removed_locked(struct lclient *c, struct lc_inode *in, uint64_t off, uint64_t len);
/**
 * lc_blocks_in_flight_locked - a cap flush carrying extents is not acked
 * yet: st_blocks is an estimate the MDS's count may already include (not
 * for the kernel to cache).
 */
bool lc_blocks_in_flight_locked(const struct lc_inode *in);
/** lc_blocks_truncated_locked - a truncate to @size: nothing past it is ours to report (the MDS cuts its own). */
void lc_blocks_truncated_locked(struct lc_inode *in, uint64_t size);
/**
 * lc_blocks_fill_locked - put into @m (a CAPS FLUSH or ACK) the changes
 * since the last acked flush, built in @send (the caller's, empty; @m
 * points into it until it is sent).  lc_blocks_sent_locked() after a
 * successful send makes them the ones in flight, else the caller frees
 * @send with lc_blocks_send_free().
 */
void lc_blocks_fill_locked(struct lc_inode *in, struct mdsp_caps *m, struct mdsp_extset send[2]);
void lc_blocks_sent_locked(struct lc_inode *in, struct mdsp_extset send[2]);
void lc_blocks_send_free(struct mdsp_extset send[2]);
/** lc_blocks_resend_locked - @m carries the changes in flight again (a flush resent after a reconnect). */
void lc_blocks_resend_locked(const struct lc_inode *in, struct mdsp_caps *m);
/** lc_blocks_acked_locked - the flush in flight is journaled: its changes are in mi.blocks. */
void lc_blocks_acked_locked(struct lc_inode *in);
/** lc_blocks_lost_locked - the session went: what was in flight is to be sent again, with what followed. */
void lc_blocks_lost_locked(struct lc_inode *in);
/**
 * lc_blocks_estimate_locked - st_blocks of @in (bytes) as this client sees
 * it: the MDS's, with what this client added and took away since on top
 * (added bytes may overlap stored ones: never past max(the MDS's, @size)).
 * MDSP_BLOCKS_UNKNOWN when the MDS does not know.
 */
uint64_t lc_blocks_estimate_locked(const struct lc_inode *in, uint64_t size);
void lc_blocks_free(struct lc_inode *in);
/** lc_blocks_get_locked - @in's struct lc_blocks, made if it has none (NULL: no memory, logged); in->lock held. */
struct lc_blocks *lc_blocks_get_locked(struct lc_inode *in);

/* ---- inode.c ------------------------------------------------------------- */
/** lc_obj_index_forget - @in's objects at or past @objno are being removed: forget they are listed. */
void lc_obj_index_forget(struct lc_inode *in, uint64_t objno);
/** lc_mark_dirty_locked - in->lock held: put @in on the dirty list. */
void lc_mark_dirty_locked(struct lclient *c, struct lc_inode *in);

/* ---- caps.c -------------------------------------------------------------- */
void lc_queue_cap_work(struct lclient *c, const struct mdsp_caps *caps);

/* ---- inode.c ------------------------------------------------------------- */
/*
 * in->lock held: our own writes define the size and mtime (wsize, wmtime)
 * over what the MDS last said: while they are not all acked and we hold
 * Fs or Fw.  Without either, another client may have changed them since
 * (a revoke of Fs comes after our flush, so the MDS's answer has ours).
 */
static inline bool lc_meta_ours_locked(const struct lc_inode *in)
{
	lockdep_assert_held(&in->lock);
	return ((in->dirty_meta | in->flushing_meta) & MDSP_DIRTY_SIZE) && !in->meta_given_up &&
	       (!in->c->mdsc || (in->caps & (MDSP_CAP_FILE_SHARED | MDSP_CAP_FILE_WR)));
}
/* before a kernel cache timeout of @in (or of a name in it) is computed
 * from the caps: lc_kernel_promise_ns() */
static inline void lc_kernel_promise(struct lc_inode *in)
{
	atomic_store(&in->kpromise_ns, now_mono_ns());
}
static inline struct mdsp_time lc_now_mdsp(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (struct mdsp_time){ .sec = ts.tv_sec, .nsec = (uint32_t)ts.tv_nsec };
}

/* ---- frontend.c ------------------------------------------------------------ */
/**
 * lc_frontends_inode_changed - a namespace or data operation changed @ino's
 * data in [@off, @off+@len) (@len 0: to the end; @off -1: attributes
 * only): tell the registered frontend (lc_callbacks.inval_inode) when the
 * change came through another one (the thread serves its lc_op_begin
 * request).  No lock held; cheap otherwise.
 */
void lc_frontends_inode_changed(struct lclient *c, uint64_t ino, off_t off, off_t len);
/** lc_frontends_entry_changed - ... the name @name in @dir changed, and with it @dir's attributes. */
void lc_frontends_entry_changed(struct lclient *c, struct lc_inode *dir, const char *name);
/** lc_frontends_to_tell - would the two above tell anyone (worth finding the inode they would name)? */
bool lc_frontends_to_tell(struct lclient *c);
/**
 * lc_op_frontend - the frontend ("fuse", "nfs4", "client"...) whose request
 * (lc_op_begin) this thread serves for @c, or NULL.
 */
const char *lc_op_frontend(const struct lclient *c);

/* ---- the inode's writeback state, read by the caps (the data path owns it) */
/** lc_data_pending_locked - in->lock held: buffered data not yet in the store (dirty or being written). */
static inline bool lc_data_pending_locked(const struct lc_inode *in)
{
	lockdep_assert_held(&in->lock);
	return in->dirty || in->flushing_now;
}

#endif
