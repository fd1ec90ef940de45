/*
 * flock.h - private to mds/: file locks (fcntl byte ranges, flock) of every
 * client (flock.c).  Types are in mds.h.
 */
#ifndef LOLIGO_MDS_FLOCK_H
#define LOLIGO_MDS_FLOCK_H

#include "mds/mds.h"

/*
 * struct flock_ops - what file locks ask the sessions above them: must a
 * lock request of @s wait for the end of the reconnect phase
 * (session_reconnect_hold_locked)?  Called with mds->lock held.
 */
struct flock_ops {
	bool (*reconnect_hold_locked)(struct mds *m, struct session *s, const struct mdsp_request *req);
};

/* flock_set_ops - register @ops (static storage) before requests run. */
void flock_set_ops(struct mds *m, const struct flock_ops *ops);

void flock_init(struct mds *m);
void flock_register_perf(struct mds *m);
/* flock_free_locked - at shutdown, after every session is gone.  mds->lock held. */
void flock_free_locked(struct mds *m);
/* flock_request - a GETLK or SETLK from @c: answered now or when granted.  No lock held. */
void flock_request(struct mds *m, struct conn *c, struct mdsp_request *req);
/* flock_flush - send the answers queued under mds->lock (grants a session's end or the end
 * of the reconnect phase caused).  No lock held; call after such changes. */
void flock_flush(struct mds *m);
/* flock_session_open_locked - a new session: its locks are known (none).  Caller holds mds->lock. */
void flock_session_open_locked(struct mds *m, struct session *s);
/* flock_session_drop_locked - @s ends: its waits go, its locks are released (waiters of
 * others granted, answers queued for flock_flush). */
void flock_session_drop_locked(struct mds *m, struct session *s);
bool flock_session_has_locks_locked(const struct session *s);
/* flock_conn_closed_locked - waits parked from @c are dropped (the client sends them again). */
void flock_conn_closed_locked(struct mds *m, struct conn *c);
/* flock_reconnect_over_locked - the reconnect phase ended: run the lock requests it held back. */
void flock_reconnect_over_locked(struct mds *m);
/* flock_reconnect_phase_start_locked - the phase waits for @s: lock requests wait until it re-asserted. */
void flock_reconnect_phase_start_locked(struct mds *m, struct session *s);
/* flock_reassert_pending_locked - some session of the phase has not re-asserted its locks yet. */
bool flock_reassert_pending_locked(struct mds *m);
/*
 * flock_reconnect_locked - RECONNECT of @s re-asserts @locks.  A session the
 * reconnect phase of this start waits for gets them back (unless they
 * conflict with what others re-asserted first); otherwise the MDS keeps
 * what it knows (same instance) or refuses them all (it restarted and the
 * session came too late).  Sets *@refused (malloc'd, may be NULL) to the
 * locks not held.  When the last awaited session has re-asserted, the lock
 * requests held back run.  mds->lock held.
 */
int flock_reconnect_locked(struct mds *m, struct session *s, const struct mdsp_lock *locks, uint32_t n,
			   struct mdsp_lock **refused, uint32_t *nrefused);
struct json_object;
struct json_object *flock_dump_json(struct mds *m);
void flock_inode_json_locked(uint64_t ino, struct json_object *o);
void flock_session_json_locked(const struct session *s, struct json_object *o);

#endif
