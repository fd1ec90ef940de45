/*
 * journal.h - private to mds/: the journal: submit, write, expire, replay
 * (journal.c, journal_expire.c, journal_replay.c).  Types are in mds.h.
 */
#ifndef LOLIGO_MDS_JOURNAL_H
#define LOLIGO_MDS_JOURNAL_H

#include "mds/mds.h"

/*
 * struct journal_hooks - what the journal asks the layers above it: the
 * requests parked for revokes (locker.c), listed before the journal's own
 * in `ops`.  Called with mds->lock held.
 */
struct journal_hooks {
	void (*waiters_json)(struct mds *m, struct json_object *a);
	/* space freed (j->lock held: must not take locks or block) */
	void (*space_freed)(struct mds *m);
};

/* journal_set_hooks - register @h (static storage) before journal_start(). */
void journal_set_hooks(struct mds *m, const struct journal_hooks *h);

int journal_mkfs(struct mds *m);
int journal_replay(struct mds *m);
/*
 * journal_replay_from - journal_replay() by a standby-replay whose cache
 * holds every entry up to @applied: those are checked but not applied
 * again.  -ESTALE: the journal no longer holds the entries after @applied
 * (trimmed past it), or ends before it; the cache cannot be used.
 */
int journal_replay_from(struct mds *m, uint64_t applied);
int journal_start(struct mds *m);
/*
 * journal_submit_locked - queue the edits of @t (may be empty) and @item
 * (may be NULL) for the next journal write.  Caller holds mds->lock, which
 * orders journal entries exactly as the changes were applied in memory.
 * Returns the entry's sequence number.
 */
uint64_t journal_submit_locked(struct mds *m, struct txn *t, struct jitem *item);
/*
 * journal_submit_lazy_locked - as journal_submit_locked, for a mutation
 * whose client was answered UNSAFE and went on: the write may wait up to
 * mds_journal_max_delay for more entries, unless something else queued or
 * journal_flush_hint() says that somebody waits.
 */
uint64_t journal_submit_lazy_locked(struct mds *m, struct txn *t, struct jitem *item);
/*
 * journal_flush_hint - a client waits for the SAFE replies of what it sent
 * (SESSION REQUEST_FLUSH_JOURNAL): write what is queued without waiting for
 * more.  Any context; takes the journal's lock.
 */
void journal_flush_hint(struct mds *m);
/*
 * journal_wait_written - wait until the entry @seq (journal_submit_locked's
 * answer) is durable.  0; at @deadline_ns (CLOCK_MONOTONIC) -ETIMEDOUT,
 * or the write error while the journal is read-only (the entry may still
 * land when a retry succeeds); -ESHUTDOWN when it stopped.  Call without
 * mds->lock (admin commands, not the request path: requests get their SAFE
 * reply instead).
 */
int journal_wait_written(struct mds *m, uint64_t seq, uint64_t deadline_ns);
/*
 * journal_throttle - wait while what the journal holds in memory is over
 * its bounds: the queue (entries unwritten or being written, and the reply
 * frames waiting for their SAFE) over journal_queue_bound(), or the
 * segments in memory (applied by expiry from memory) over
 * journal_seg_bound(); not while read-only (see journal_admit).  Call
 * without mds->lock, before a mutation; @c (may be NULL): the reader's
 * connection, whose gathered replies go out before it waits; @req (may be
 * NULL): the request, listed in `ops` while it waits.
 */
void journal_throttle(struct mds *m, struct conn *c, const struct mdsp_request *req);
/* journal_over - whether journal_throttle() would wait now; when the sealed
 * segments are what is over, the ticker is asked to expire them at once
 * (mds->tick_expire) and the journal's space_freed hook says when it has. */
bool journal_over(struct mds *m);
/*
 * journal_hold - an event loop holds a request instead of waiting in
 * journal_throttle(): listed and counted as a throttled one (`ops`,
 * `journal status`) until journal_unhold().  NULL: no memory (the caller
 * waits as journal_throttle does).
 */
struct jwaiter *journal_hold(struct mds *m, struct conn *c, const struct mdsp_request *req);
void journal_unhold(struct mds *m, struct jwaiter *w);
/*
 * journal_queue_bound - the bytes of the journal's queue (entries and the
 * replies waiting for them) beyond which mutations wait: mds_journal_max_pending,
 * at most 1/16 of mds_cache_memory_limit (not below 1 MiB); 0: no bound.
 */
uint64_t journal_queue_bound(void);
/* journal_seg_bound - bytes of journal segments kept in memory until expired
 * beyond which mutations wait (and expiry runs at once); 0: no bound. */
uint64_t journal_seg_bound(void);
/* journal_seg_bytes - bytes of journal segments in memory now.  Lock-free. */
uint64_t journal_seg_bytes(void);
/*
 * journal_read_only - 0 while journal writes succeed; the -errno of the
 * failing write (ENOSPC, EIO, ETIMEDOUT...) while the MDS is read-only.
 * Lock-free.
 */
int journal_read_only(struct mds *m);
/*
 * journal_admit - may the journaled request @req change anything now?
 * 0, or the read-only error to refuse it with (before it changes
 * anything).  Replays and, on ENOSPC, unlink/rmdir are admitted.  Lock-free.
 */
int journal_admit(struct mds *m, const struct mdsp_request *req);
/* journal_health - 0, or the read-only error with a message for `status` in @msg. */
int journal_health(struct mds *m, char *msg, size_t len);
/* journal_damage_msg - why journal_replay() refused the journal (-EUCLEAN), or NULL. */
const char *journal_damage_msg(struct mds *m);
void journal_tick(struct mds *m);
/* journal_expire_sealed - expire every sealed segment now (takes
 * expire_lock; writes the objects they touched: not on an event loop). */
void journal_expire_sealed(struct mds *m);
/* journal_last_seq - the sequence number of the last entry durable in a segment (takes j->lock). */
uint64_t journal_last_seq(struct mds *m);
/* journal_clean_below - every entry with a lower sequence number is expired. */
uint64_t journal_clean_below(struct mds *m);
/*
 * journal_drain - at shutdown, before the connections close: write what is
 * queued without waiting for more (mds_journal_max_delay is cut short) and
 * send the SAFE replies, until @deadline_ns; failing writes are retried
 * until then.  Return: the replies still not sent (0: none).
 * No locks held.
 */
unsigned journal_drain(struct mds *m, uint64_t deadline_ns);
void journal_stop(struct mds *m);     /* drain, seal, expire everything */
struct json_object *journal_status_json(struct mds *m);
void journal_free(struct mds *m);

/**
 * journal_ops_json - the requests in flight: answered UNSAFE, their SAFE
 * reply waiting for the journal (queued or being written), with session,
 * tid, op and age, oldest first (`ops`).  Takes the journal lock only.
 */
struct json_object *journal_ops_json(struct mds *m);
/** journal_oldest_op_ns - start (mono ns) of the oldest request waiting for the journal; 0: none. */
uint64_t journal_oldest_op_ns(struct mds *m);
/** journal_segments_behind - sealed segments not yet expired (lock-free). */
uint64_t journal_segments_behind(struct mds *m);

#endif
