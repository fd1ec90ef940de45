/*
 * session.h - private to mds/: client sessions: open, renew, close, evict,
 * reconnect after a restart, the completed-request tables (session.c).
 * Types are in mds.h.
 */
#ifndef LOLIGO_MDS_SESSION_H
#define LOLIGO_MDS_SESSION_H

#include "mds/mds.h"

void session_handle(struct mds *m, struct conn *c, struct mdsp_session *msg);
/* session_handle_caps - a CAPS message (locker_handle_caps); on a connection
 * without a session, a REJECT (ENOTCONN) tells the client so, as to a RENEW:
 * it resumes its session (and sends its flushes again) or learns it is gone. */
void session_handle_caps(struct mds *m, struct conn *c, struct mdsp_caps *msg);
void session_conn_closed(struct mds *m, struct conn *c);
/* Tell every connected session the per-filesystem settings (`fs set`):
 * MDSP_SESSION_CONFIG, queued.  Returns how many were told. */
unsigned session_push_config_locked(struct mds *m);
void session_tick(struct mds *m);
/* session_reconnect_phase_start - after replay: wait for restored sessions. */
void session_reconnect_phase_start(struct mds *m);
void session_reconnect_phase_cancel(struct mds *m);
/* session_reconnect_deadline - when the reconnect phase times out (0: none). */
uint64_t session_reconnect_deadline(struct mds *m);
/* session_reconnect_check - end a reconnect phase past its deadline, run what it held back. */
void session_reconnect_check(struct mds *m);
/*
 * session_evict - end session @id (the admin's `client evict`, a revoke not
 * acked in time): its caps and locks are released, and with
 * mds_session_blocklist_on_evict the client is blocklisted and fenced from
 * the data store first.  session_evict_timeout - the same for a session
 * that stopped renewing (mds_session_blocklist_on_timeout).  No lock held;
 * blocks while the store fence is set.  Return: 0 or -ENOENT.
 */
int session_evict(struct mds *m, uint64_t id, const char *why);
int session_evict_timeout(struct mds *m, uint64_t id, const char *why);
/*
 * session_evict_auth_name - session_evict() every session opened by a
 * connection authenticated as @name (its key was removed or replaced: what
 * the old key derived must not serve any more).  No lock held.
 * Return: how many were evicted, or -ENOMEM.
 */
int session_evict_auth_name(struct mds *m, const char *name, const char *why);
/*
 * session_reclaim_request - MDSP_OP_RECLAIM_SESSION from a client with a
 * session: evict session req->ino if its uuid is req->data (16 bytes) and
 * it belongs to the same authenticated name, blocklisted and fenced in the
 * data store first (an NFS gateway taking over another's clients, which
 * may still be alive: nfs_gw/nfs4/recovery.c).  Gone already: 0.  Not the
 * caller's own session.  *@result: 0 or -errno.  No lock held.
 */
struct mdsp_request;
void session_reclaim_request(struct mds *m, struct conn *c, const struct mdsp_request *req, int *result);
/*
 * session_reconnect_hold_locked - must @req of @s (not a mutation: a file
 * lock request) wait for the end of the reconnect phase?  Ends the phase
 * on its timeout, and @req ends @s's replay as any new request does.
 * Caller holds mds->lock.
 */
bool session_reconnect_hold_locked(struct mds *m, struct session *s, const struct mdsp_request *req);
void session_free_all(struct mds *m);
struct session *session_new_locked(struct mds *m, uint64_t id);
int session_replay_edit(struct mds *m, int op, const char *oid, const char *key, const void *val,
			uint32_t len, const char *key2);
int session_load(struct mds *m);
struct json_object *session_ls_json(struct mds *m);

/*
 * session_rec_edit_locked - journal @s's record (name, uuid, ino pool) in
 * @t.  Caller holds mds->lock.
 */
void session_rec_edit_locked(struct session *s, struct txn *t);

/* ---- used by the request pipeline (request.c) ---- */
/* session_key_tid - the omap key of @tid in a completed table. */
void session_key_tid(char *buf, size_t len, uint64_t tid);
/* session_item_new - a journal item that sends to session @sid (via @c, ref taken; may be NULL). */
struct jitem *session_item_new(struct conn *c, uint64_t sid);
/* session_completed_add - remember @s's reply @frame to @tid (journaled in entry @jseq).  mds->lock held. */
int session_completed_add(struct session *s, uint64_t tid, const void *frame, size_t len, uint64_t jseq);
/* session_completed_trim_locked - forget @s's replies below tid @below.  Caller holds mds->lock. */
void session_completed_trim_locked(struct session *s, uint64_t below);
/* session_replay_left_locked - a REPLAY of @s left its ordered list: the
 * replay it deferred may be over (locker_ops.replay_left_locked).  mds->lock held. */
void session_replay_left_locked(struct mds *m, struct session *s);
/*
 * session_reconnect_gate_locked - must @req of @s wait for the end of the
 * reconnect phase (the caller parks it)?  @journaled: @req is a mutation;
 * @first: its first run.  Caller holds mds->lock.
 */
bool session_reconnect_gate_locked(struct mds *m, struct session *s, const struct mdsp_request *req,
				   bool journaled, bool first);

#endif
