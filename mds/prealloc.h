/*
 * prealloc.h - private to mds/: inode numbers preallocated to each session
 * (prealloc.c).  Types are in mds.h.
 */
#ifndef LOLIGO_MDS_PREALLOC_H
#define LOLIGO_MDS_PREALLOC_H

#include "mds/mds.h"

/*
 * prealloc_take_locked - the ino for a create of @s: the one @req wants
 * (a replay: exactly it, or -EEXIST), else the lowest of the session's
 * pool; grants more when the pool runs low; journals the session record in
 * @t.  Caller holds mds->lock.  Return: 0 with *@ino, -EEXIST, -EINVAL.
 */
int prealloc_take_locked(struct mds *m, struct session *s, const struct mdsp_request *req, struct txn *t,
			 uint64_t *ino);
/* prealloc_grant_locked - grant @s mds_client_prealloc_inos more, journaled
 * in @t (the caller journals the session record).  Caller holds mds->lock. */
void prealloc_grant_locked(struct mds *m, struct session *s, struct txn *t);
/*
 * prealloc_delegate_locked - give @s a fresh range of
 * mds_client_prealloc_inos that its client picks from itself (async
 * creates, want_ino), journaled in @t with the session record.  Caller
 * holds mds->lock.  Return: the range's first ino (*@len: its length).
 */
uint64_t prealloc_delegate_locked(struct mds *m, struct session *s, struct txn *t, uint64_t *len);
/* prealloc_count - inos left in @s's pool.  Caller holds mds->lock. */
uint64_t prealloc_count(const struct session *s);
/* prealloc_stale_count - stale delegated ranges in @s's pool.  Caller holds mds->lock. */
uint32_t prealloc_stale_count(const struct session *s);
/* prealloc_encode, prealloc_decode - the pool in the session record. */
void prealloc_encode(struct mdsp_buf *b, const struct session *s);
int prealloc_decode(struct dec *d, struct session *s);
/* prealloc_deleg_mask - bit i set when range i of @s's pool is delegated
 * (session record v5); prealloc_deleg_restore - apply such a mask to a
 * decoded pool: those ranges are delegated and stale (the client forgets
 * its delegations when it reconnects). */
uint32_t prealloc_deleg_mask(const struct session *s);
void prealloc_deleg_restore(struct session *s, uint32_t mask);
/* prealloc_reconnect_locked - @s's client reconnected and forgot the
 * ranges delegated to it: they become stale, and no request above
 * @deleg_tid (0: not known) names them.  Caller holds mds->lock. */
void prealloc_reconnect_locked(struct session *s, uint64_t deleg_tid);
/* prealloc_trim_stale_locked - @s's client has every request below
 * @oldest_tid answered safely: free the stale ranges only those named.
 * Return: how many were freed.  Caller holds mds->lock. */
unsigned int prealloc_trim_stale_locked(struct session *s, uint64_t oldest_tid);

#endif
