/*
 * locker.h - private to mds/: capabilities and dentry leases, and the
 * parking of requests that wait for their revokes (locker.c, lease.c,
 * park.c).  Types are in mds.h.
 */
#ifndef LOLIGO_MDS_LOCKER_H
#define LOLIGO_MDS_LOCKER_H

#include "mds/mds.h"

/*
 * struct locker_ops - what caps and leases ask the layers above them: run
 * a parked request again (the request pipeline; no lock held, consumes
 * @w) and evict a session that did not answer a revoke (no lock held).
 */
struct locker_ops {
	void (*request_resume)(struct mds *m, struct mwaiter *w);
	int (*session_evict)(struct mds *m, uint64_t id, const char *why);
	/* may @s change @in's data (a cap flush's size, mtime, extents)?  Its
	 * key's caps mds (authcaps.c).  Caller holds mds->lock. */
	bool (*may_write_locked)(struct mds *m, struct session *s, struct minode *in);
	/* a REPLAY of @s left its ordered list: its replay may be over now
	 * (session.c).  Caller holds mds->lock. */
	void (*replay_left_locked)(struct mds *m, struct session *s);
};

/* locker_set_ops - register @ops (static storage) before requests run. */
void locker_set_ops(struct mds *m, const struct locker_ops *ops);

void locker_init(struct mds *m);
/* locker_free - drop parked requests at shutdown.  Caller holds mds->lock. */
void locker_free_locked(struct mds *m);
void locker_register_perf(struct mds *m);

/*
 * locker_want_caps - the request of @t->s is about to change what the bits
 * @mask of @in cover: every other session must give them up first.  Sends
 * the revokes that are not in flight yet and notes the wait in @t->g; the
 * op checks locker_blocked() before changing anything.  Caller holds
 * mds->lock.
 */
void locker_want_caps(struct mds *m, struct txn *t, struct minode *in, uint32_t mask);
/*
 * locker_want_no_dir_create - directory @in gets an ACL: nobody may
 * answer creates in it any more (Dc).  Other sessions' Dc as
 * locker_want_caps; the caller's own is revoked without waiting (its
 * creates were sent before this request).  Caller holds mds->lock.
 */
void locker_want_no_dir_create(struct mds *m, struct txn *t, struct minode *in);
/* locker_want_dentry - likewise for the leases other sessions hold on @dn. */
void locker_want_dentry(struct mds *m, struct txn *t, struct mdentry *dn);
/* locker_blocked - LOCKER_WAIT if @t must wait for revokes, else 0. */
int locker_blocked(struct txn *t);
/*
 * locker_want_dir - another session answers creates in directory @in
 * itself (Dc): revoke it, so that what it created reaches us before this
 * request looks at or changes @in (its acks follow its requests on the one
 * connection).  No-op for the holder itself and for non-directories.
 */
void locker_want_dir(struct mds *m, struct txn *t, struct minode *in);
/* locker_want_open - the revokes an open of @in with @oflags needs (file caps). */
void locker_want_open(struct mds *m, struct txn *t, struct minode *in, uint32_t oflags);
/*
 * locker_fill_reply - grant caps on the reply's target and trace directory,
 * a lease on its trace dentry, caps and leases on readdir entries, and
 * record what an open wants.  Caller holds mds->lock; after the op ran.
 */
void locker_fill_reply(struct mds *m, struct session *s, const struct mdsp_request *req,
		       struct mdsp_reply *rep, struct txn *t);
/* locker_gather_release - the parked request of @t runs: its gathers end. */
void locker_gather_release(struct mds *m, struct txn *t);
void locker_gather_free(struct locker_gather *g);
/*
 * locker_park - park the request @msg of @c (its contents move into the
 * waiter; @msg is left empty) until the revokes in @t->g are acked.
 * Caller holds mds->lock.  Return: the waiter (NULL: no memory, the
 * request is dropped and the client resends it after its reconnect).
 */
struct mwaiter *locker_park(struct mds *m, struct conn *c, struct mdsp_msg *msg, uint64_t t0, struct txn *t);
/*
 * locker_order_blocked - an earlier request of @s than the one numbered
 * @seq waits on the session's ordered list: this one must wait behind it.
 * locker_order_add - put parked @w on the list (no-op if it is on it).
 * A waiter leaves the list when it is freed (locker_waiter_free), which
 * makes the rest of the list ready.  Caller holds mds->lock.
 */
bool locker_order_blocked(const struct session *s, uint64_t seq);
/* locker_order_holds_replay - a REPLAY of @s waits on its ordered list. */
bool locker_order_holds_replay(const struct session *s);
void locker_order_add(struct session *s, struct mwaiter *w);
/* locker_order_session_gone - @s is freed: its ordered waiters run (and are
 * dropped, their session gone).  mds->lock held. */
void locker_order_session_gone(struct mds *m, struct session *s);
/* locker_waiters_json - the parked requests, what they wait for and who holds it, into @a.  Caller holds mds->lock. */
void locker_waiters_json(struct mds *m, struct json_object *a);
/* locker_handle_caps - a CAPS message from a client (ack, flush, release, ...).  No lock held.
 * Return: 0, or -ENOTCONN when @c has no session (nothing done: the caller tells the client). */
int locker_handle_caps(struct mds *m, struct conn *c, struct mdsp_caps *msg);
/* locker_session_reconnect - the caps and leases a reconnecting client re-asserts.  mds->lock held. */
void locker_session_reconnect(struct mds *m, struct session *s, const struct mdsp_cap_reconnect *caps,
			      uint32_t n);
/* locker_session_drop - @s is going away: its caps and leases go, waiters are run again.  mds->lock held. */
void locker_session_drop(struct mds *m, struct session *s);
/* locker_conn_closed - requests parked from @c are dropped (the client resends them).  mds->lock held. */
void locker_conn_closed(struct mds *m, struct conn *c);
/* locker_inode_drop, locker_dentry_drop - @in / @dn leave memory: their caps / leases go.  mds->lock held. */
void locker_inode_drop(struct mds *m, struct minode *in);
void locker_dentry_drop(struct mds *m, struct mdentry *dn);
/* locker_dentry_move - @to replaces @from (same name and target): the leases move over. */
void locker_dentry_move(struct mdentry *from, struct mdentry *to);
/* locker_in_use - some session has @in open (wants file caps). */
bool locker_in_use(const struct minode *in);
/* locker_open_by - session @s has @in open. */
bool locker_open_by(const struct minode *in, const struct session *s);
/*
 * locker_referenced - some session holds a cap on @in (it caches it: its
 * kernel may hold it open or look it up by a dentry it still has).
 */
bool locker_referenced(const struct minode *in);
/*
 * locker_keeps_orphan - an unlinked @in stays an orphan, answering with
 * nlink 0, while this holds: a regular file while some session has it open
 * (its data is purged at the last close, as before); anything else (a
 * directory, a symlink, a device) while some session caches it, as Ceph's
 * strays, so that an fstat or fchdir of a directory removed or renamed over
 * while open is not ESTALE (no data to keep: it costs an inode record).
 */
bool locker_keeps_orphan(const struct minode *in);
/*
 * locker_stray_notify - @in just became an orphan: every session holding
 * a cap on it without having it open hears its nlink 0 (a revoke of all
 * but the pin, or a grant carrying the attributes), so a client that no
 * longer uses it releases it at once.  mds->lock held.
 */
void locker_stray_notify(struct mds *m, struct minode *in);
/* locker_dir_pinned - a dentry of @d with a cookie in [@lo, @hi), or its
 * inode, is cached by a client (and @d itself, for the whole range [0,
 * UINT64_MAX)): it must stay in memory. */
bool locker_dir_pinned(struct mds *m, struct mdir *d, uint64_t lo, uint64_t hi);
/*
 * locker_recall - cache pressure: ask the sessions for @want caps and
 * leases back, shared by what each holds and paced (locker.c has the
 * rules).  mds->lock held.
 */
void locker_recall(struct mds *m, uint64_t want);
/*
 * locker_recall_laggards_locked - call @fn once per session with a recall
 * unanswered for @age_ns or more, with the age of its oldest (health
 * MDS_CLIENT_RECALL).  mds->lock held.
 */
void locker_recall_laggards_locked(struct mds *m, uint64_t age_ns,
				   void (*fn)(void *arg, const struct session *s, double secs), void *arg);
/* locker_tick - revokes not acked within mds_session_timeout evict their session; orphans. No lock. */
void locker_tick(struct mds *m);
/* locker_wake_all - every parked request runs again soon (locker_run_waiters).  mds->lock held. */
void locker_wake_all(struct mds *m);
/* locker_waiter_free - a parked request that ran is done.  mds->lock held. */
void locker_waiter_free(struct mds *m, struct mwaiter *w);
/* locker_run_waiters - run the parked requests that may proceed now.  No lock held. */
void locker_run_waiters(struct mds *m);
/* locker_note_orphan - count an inode that became an orphan (perf). */
void locker_note_orphan(void);
struct json_object;
/**
 * locker_late_releases_locked - for each session with a cap or lease revoke
 * unanswered for @age_ns or more, call @fn once with its oldest such revoke
 * (@dname: NULL for a cap on @ino, else a lease on @dname in directory
 * @ino), at most 64 sessions.  Caller holds mds->lock.
 */
void locker_late_releases_locked(struct mds *m, uint64_t age_ns,
				 void (*fn)(void *arg, const struct session *s, uint64_t ino, const char *dname,
					    double secs),
				 void *arg);
void locker_session_json(struct session *s, struct json_object *o);
void locker_inode_json(struct minode *in, struct json_object *o);

#endif
