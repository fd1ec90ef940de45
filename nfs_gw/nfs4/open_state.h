/*
 * open_state.h - NFSv4 opens, byte-range locks, open-owners, lock-owners
 * and their stateids (RFC 8881 section 8-9, RFC 7530 section 9), shared by
 * minor versions 0 and 1.  (The clients and sessions they belong to are
 * the dispatcher's: nfs4.h.)
 *
 * Stateid "other" is 12 bytes: the server incarnation's id (srv->boot, u32), the low half
 * of the owning client id (u32) and a per-instance counter (u32), so that
 * a stateid names its client even after the state is gone (a stateid of a
 * client whose lease was cancelled answers NFS4ERR_EXPIRED, RFC 7530
 * 9.6.3.2).  A stateid of an earlier instance is NFS4ERR_STALE_STATEID, an
 * unknown id NFS4ERR_BAD_STATEID, an older seqid NFS4ERR_OLD_STATEID, a
 * newer one NFS4ERR_BAD_STATEID; minor version 1 also accepts seqid 0
 * ("the current one").  "other" values of all zeros or all ones are the
 * special stateids (os_sid_classify()): only the anonymous {0, 0} and READ
 * bypass {~0, ~0} ones (and 4.1's current {1, 0}) mean anything, and only
 * to READ, WRITE and SETATTR; everywhere else they are NFS4ERR_BAD_STATEID.
 *
 * Closed stateids (RFC 7530 9.10.1): a 4.0 CLOSE does not free the open
 * stateid it names, nor the lock stateids it releases with it whose
 * owner's last request named them: they stay hashed, marked closed, with
 * no file, handle or locks, as their owner's single "closed" stateid, so a
 * retransmitted CLOSE (or a LOCKU retransmitted after the CLOSE) reaches
 * its owner's saved reply instead of failing the stateid lookup.  The
 * owner frees it when its sequence next advances, or with the client.
 *
 * Owner seqids: minor version 1 ignores them (RFC 8881 8.13): OPEN, CLOSE,
 * LOCK, LOCKU and OPEN_DOWNGRADE of one owner run concurrently, bounded only
 * by the session's slots.  Minor version 0 orders them per owner
 * (os_seq_begin/os_seq_end): the next seqid runs, a request that arrived
 * ahead of its predecessor waits for it (bounded), the last seqid is
 * answered from the owner's saved reply, anything else is
 * NFS4ERR_BAD_SEQID.  Waiting ties up a worker thread, so it is bounded:
 * at most st->seq_wait_per_owner waiting requests per owner and
 * st->seq_wait_max gateway-wide (the gateway sets it to nfs_workers/4);
 * a request beyond either is answered NFS4ERR_DELAY at once.  DELAY
 * advances a 4.0 owner's seqid (RFC 7530 9.1.7: a client retries with the
 * next one), so the seqid of a DELAYed request that was ahead of its
 * predecessor is remembered (ow->delayed) and consumed, as if it had run
 * and failed with DELAY, when the owner's sequence reaches it.
 *
 * Locking: one mutex, st->lock, protects every table and object here; it
 * is a leaf (nothing else is taken under it) and is never held across
 * client library calls (lockdep_might_wait at the MDS waits checks it):
 * lc_fh handles are refcounted (struct os_fhref) so a READ can use one
 * after dropping the lock while a CLOSE releases it.
 *
 * A LOCK or LOCKU asks the MDS with st->lock dropped (ops_lock.c).  Across
 * that round trip it holds:
 *  - a pin on its lock stateid (os_stid_pin): a CLOSE, RELEASE_LOCKOWNER,
 *    FREE_STATEID or the end of the client may still release the stateid
 *    meanwhile; it is then unhashed and detached at once ("gone",
 *    os_stid_live() is false) and freed by the last unpin, so the request
 *    finds out when it comes back and undoes what the MDS granted;
 *  - the file's lock-call marker f->lk_busy (os_file_lk_begin_locked), a
 *    flag lock of st->lock and st->lk_cv: one LOCK/LOCKU of a file at the
 *    MDS at a time, so they reach the MDS in the order they are recorded
 *    here and a conflict is answered with the lock-owner the gateway
 *    recorded, as when the whole call ran under st->lock.  It is held
 *    across the MDS round trip only; its waiters hold st->lock (released
 *    while they wait), bounded like the seqid waits (st->lk_wait_max, then
 *    NFS4ERR_DELAY).  OPEN, CLOSE and everything about other files never
 *    wait for it.
 *
 * Lock order: (a 4.0 owner's seqid turn, ow->busy) -> f->lk_busy ->
 * st->lock -> nothing.
 */
#ifndef LOLIGO_NFS_GW_NFS4_OPEN_STATE_H
#define LOLIGO_NFS_GW_NFS4_OPEN_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/perf.h"
#include "nfs_gw/nfs4/nfs4_xdr.h"

struct lclient;
struct lc_fh;
struct lc_inode;

#define OS_SHARE_ACCESS_READ 1u
#define OS_SHARE_ACCESS_WRITE 2u
#define OS_SHARE_ACCESS_BOTH 3u

enum os_kind { OS_OPEN = 1, OS_LOCK = 2, OS_DELEG = 8 };
#define OS_KIND_ANY (OS_OPEN | OS_LOCK)
#define OS_KIND_ALL (OS_OPEN | OS_LOCK | OS_DELEG)

enum { OS_READ_LT = 1, OS_WRITE_LT = 2 };

/* A refcounted open handle of the client library. */
struct os_fhref {
	struct lc_fh *fh;
	uint32_t access;                 /* OS_SHARE_ACCESS_* it was opened for */
	_Atomic int refs;
};

struct os_file;
struct os_owner;

/* NFSv4.0 seqid waits (see the top of this file) */
#define OS_SEQ_DELAYED_MAX 64           /* DELAYed future seqids remembered per owner */
#define OS_SEQ_WAIT_PER_OWNER 1         /* default st->seq_wait_per_owner */
#define OS_SEQ_WAIT_MAX 4               /* default st->seq_wait_max */
#define OS_LK_WAIT_MAX 4                /* default st->lk_wait_max */

struct os_stid {
	uint64_t id;                     /* client id's low half << 32 | counter: "other" after the boot */
	uint32_t seqid;                  /* of the current stateid */
	enum os_kind kind;
	bool closed;                     /* 4.0: kept only to answer a retransmission (owner->closed) */
	bool gone;                       /* freed while pinned: unhashed, detached, no owner; the last unpin frees it */
	unsigned int pins;               /* requests that use it across an MDS round trip (os_stid_pin) */
	uint64_t clientid;
	struct os_owner *owner;
	struct os_file *file;            /* NULL once closed */
	/* OS_OPEN */
	uint32_t access, deny;           /* the union of the modes opened */
	uint16_t modes;                  /* bit (access << 2 | deny) for every OPEN in effect (not downgraded away) */
	uint32_t uid, gid;               /* of the first OPEN: I/O by others is checked against their credential */
	struct os_fhref *fh;
	/* OS_LOCK: the open it came from (for CLOSE) */
	struct os_stid *open;
	/* OS_DELEG: access is OS_SHARE_ACCESS_READ for a read delegation,
	 * BOTH for a write delegation.  recalled (CB_RECALL queued) at
	 * recall_ns; revoked: not returned within a lease after the recall,
	 * kept (no file, no handle) until FREE_STATEID, answering
	 * NFS4ERR_DELEG_REVOKED (RFC 8881 8.2.4, 10.2) */
	bool recalled, revoked;
	uint64_t recall_ns;
	/* a write delegation's CB_GETATTR bookkeeping (RFC 8881 10.4.3):
	 * the holder's change attribute and size as it last reported them
	 * (cb_valid), and how often its change moved since the grant: the
	 * change other clients see is the file's own plus cb_bumps */
	bool cb_valid;
	uint64_t cb_change, cb_size;
	uint64_t cb_bumps;
	struct nfs4_fh *dfh;             /* the file's handle, for CB_RECALL (malloc'd) */
	struct os_stid *dnext;           /* st->delegs */
	struct os_stid *hnext;           /* st->stids chain */
	struct os_stid *fnext;           /* file->stids */
};

struct os_owner {
	uint64_t clientid;
	bool is_lock;
	bool v40;                        /* of a minor version 0 client: sequenced, closed stateids kept */
	uint32_t len;
	uint8_t owner[NFS4_OPAQUE_LIMIT];
	/* NFSv4.0 sequencing */
	bool seq_valid;                  /* seqid holds the last seqid used */
	uint32_t seqid;
	bool busy;                       /* a seqid request runs */
	unsigned int waiters;            /* threads waiting in os_seq_begin_locked(), or a
					  * 4.1 OPEN using the owner: it is not freed meanwhile */
	unsigned int seq_waiting;        /* of them, those waiting for a predecessor (capped) */
	unsigned int ndelayed;           /* seqids answered DELAY ahead of their predecessor */
	uint32_t delayed[OS_SEQ_DELAYED_MAX];
	bool confirmed;                  /* open owner: OPEN_CONFIRM done */
	pthread_cond_t cv;
	uint32_t reply_op;
	uint32_t reply_status;
	uint8_t *reply;                  /* result body of the last seqid request */
	size_t reply_len;
	struct nfs4_fh reply_fh;         /* OPEN: the current filehandle it set */
	uint64_t reply_sid;              /* id of the stateid that request named or made (0: none) */
	struct os_stid *closed;          /* 4.0: the closed stateid kept for a retransmission */
	unsigned int nstids;
	struct os_owner *hnext;
};

struct os_lock {
	struct os_stid *ls;
	uint32_t type;                   /* OS_READ_LT / OS_WRITE_LT */
	uint64_t start, end;             /* [start, end), end UINT64_MAX: to EOF */
	struct os_lock *next;
};

struct os_file {
	uint64_t ino;
	struct lc_inode *in;             /* a reference while the file is open (os_file_set_inode) */
	struct os_stid *stids;
	struct os_lock *locks;
	bool lk_busy;                    /* a LOCK/LOCKU of the file is at the MDS (os_file_lk_begin_locked) */
	unsigned int refs;               /* requests holding or waiting for lk_busy: not freed meanwhile */
	struct os_file *hnext;
};

#define OS_HASH 4096

/* Counters of NFSv4.0 seqid waits (the gateway registers them for `perf dump`). */
struct os_seq_stats {
	struct perf_counter waits;       /* requests that waited for their predecessor */
	struct perf_counter delays;      /* requests refused with NFS4ERR_DELAY by a wait cap */
	struct perf_counter timeouts;    /* waits that ended without their predecessor (BAD_SEQID) */
	struct hist wait_ns;             /* how long the waits took */
};

struct ostate {
	pthread_mutex_t lock;
	uint32_t boot;
	uint32_t next_id;                /* protected by lock; the counter half of stateid ids */
	struct os_seq_stats *stats;      /* NULL: not counted (unit tests) */
	_Atomic uint64_t grace_end_ns;   /* mono ns; 0: over (os_end_grace) */
	struct os_stid *stids[OS_HASH];
	struct os_owner *owners[OS_HASH];
	struct os_file *files[OS_HASH];
	struct os_stid *delegs;          /* every OS_DELEG stid, granted, recalled or revoked */
	pthread_cond_t deleg_cv;         /* (CLOCK_MONOTONIC) a delegation was returned or revoked */
	uint64_t nstids, nowners, nfiles, nclosed, ndelegs;
	/* NFSv4.0 seqid waits: threads blocked in os_seq_begin_locked() now, and the caps */
	unsigned int seq_waiting;
	unsigned int seq_wait_max;       /* gateway-wide */
	unsigned int seq_wait_per_owner;
	/* requests waiting for a file's lock-call marker (f->lk_busy), and the cap */
	pthread_cond_t lk_cv;            /* (CLOCK_MONOTONIC) a file's lk_busy was cleared */
	unsigned int lk_waiting;
	unsigned int lk_wait_max;        /* gateway-wide */
};

/* ---- lifetime ----------------------------------------------------------- */

int ostate_create(uint32_t boot, uint64_t grace_ns, struct ostate **out);
/** ostate_destroy - free everything, releasing open handles through @lc. */
void ostate_destroy(struct ostate *st, struct lclient *lc);
/** os_in_grace - the grace period after start is still running. */
bool os_in_grace(struct ostate *st);
/** os_start_grace - a grace period of @grace_ns from now (a takeover), unless a longer one runs. */
void os_start_grace(struct ostate *st, uint64_t grace_ns);
/** os_end_grace - lift the grace period now (every recorded client reclaimed). */
void os_end_grace(struct ostate *st);

/* ---- handles ------------------------------------------------------------------ */

struct os_fhref *os_fhref_new(struct lc_fh *fh, uint32_t access);
static inline struct os_fhref *os_fhref_get(struct os_fhref *r)
{
	atomic_fetch_add(&r->refs, 1);
	return r;
}
/** os_fhref_put - drop a reference; the last one lc_release()s the handle (do not hold st->lock). */
void os_fhref_put(struct lclient *lc, struct os_fhref *r);

/* A list of handles and inodes to put, and MDS file locks to release (a
 * lock stateid that went with its locks), once st->lock is dropped. */
struct os_putlist {
	unsigned int n, ni, nu;
	struct os_fhref *r[64];
	struct lc_inode *in[64];
	struct {
		struct lc_inode *in;     /* a reference */
		uint64_t owner;          /* the lock stateid's id: its MDS lock owner */
	} unlock[64];
};
void os_putlist_add(struct os_putlist *pl, struct os_fhref *r);
/** os_putlist_add_inode - an inode reference to lc_put() once st->lock is dropped. */
void os_putlist_add_inode(struct os_putlist *pl, struct lc_inode *in);
/** os_putlist_run - put what @pl holds; the MDS locks of lock stateids that went are released first. */
void os_putlist_run(struct lclient *lc, struct os_putlist *pl);

/* ---- tables (caller holds st->lock) ---------------------------------------------- */

struct os_owner *os_owner_find_locked(struct ostate *st, uint64_t clientid, bool is_lock, const uint8_t *o,
				      uint32_t len, bool create);
/**
 * os_owner_forget_locked - @ow holds no stateids (maybe a closed one) and a
 * request of it is out of sequence: the client gave the owner up and uses
 * its name again (RFC 7530 9.1.10), so its sequence starts over (an open-
 * owner must be confirmed again, 9.1.11).
 */
void os_owner_forget_locked(struct ostate *st, struct os_owner *ow);
/** os_owner_release_locked - free @ow if nothing uses it (RELEASE_LOCKOWNER); false if something does. */
bool os_owner_release_locked(struct ostate *st, struct os_owner *ow);
struct os_file *os_file_get_locked(struct ostate *st, uint64_t ino, bool create);
struct os_stid *os_stid_new_locked(struct ostate *st, enum os_kind kind, struct os_owner *ow,
				   struct os_file *f);
/** os_stid_free_locked - unhash and free @s, its locks and its handle (into @pl). */
void os_stid_free_locked(struct ostate *st, struct os_stid *s, struct os_putlist *pl);
/**
 * os_stid_retire_locked - a stateid its owner gave up (CLOSE): 4.0 keeps it
 * closed as the owner's closed stateid when the owner's last request named
 * it (os_owner.reply_sid) or @current says this request does; otherwise
 * (4.1) it is freed.  Its locks, handle and file go either way.
 */
void os_stid_retire_locked(struct ostate *st, struct os_stid *s, bool current, struct os_putlist *pl);
/** os_stid_find_locked - the stid of (owner, file, kind), or NULL. */
struct os_stid *os_stid_find_locked(struct os_file *f, struct os_owner *ow, enum os_kind kind);
/** os_file_put_locked - free @f if nothing refers to it any more. */
void os_file_put_locked(struct ostate *st, struct os_file *f);

/* ---- requests that call the MDS about a stateid (see the top) ------------------------ */

/** os_stid_pin - keep @s's memory while st->lock is dropped (st->lock held). */
static inline void os_stid_pin(struct os_stid *s)
{
	s->pins++;
}
/** os_stid_unpin_locked - st->lock held: drop a pin; the last one frees a stateid that went meanwhile. */
void os_stid_unpin_locked(struct ostate *st, struct os_stid *s);
/** os_stid_live - st->lock held: @s (pinned) is still in force: not freed, not closed, on its file. */
static inline bool os_stid_live(const struct os_stid *s)
{
	return !s->gone && !s->closed && s->file;
}
/**
 * os_file_lk_begin_locked - st->lock held: take @f's lock-call marker
 * (f->lk_busy), waiting (st->lock dropped meanwhile) while another request
 * holds it, at most @wait_ns and only if fewer than st->lk_wait_max
 * requests wait already.  @f is not freed while the marker is held.
 * Return: NFS4_OK (call os_file_lk_end_locked()), or NFS4ERR_DELAY (not
 * taken; @f may be gone).  Stateids the caller has must be checked again
 * after it (os_stid_live()): it may have waited.
 */
uint32_t os_file_lk_begin_locked(struct ostate *st, struct os_file *f, uint64_t wait_ns);
/** os_file_lk_end_locked - st->lock held: release @f's marker; @f is freed if nothing else refers to it. */
void os_file_lk_end_locked(struct ostate *st, struct os_file *f);

void os_stid_wire(const struct ostate *st, const struct os_stid *s, struct nfs4_stateid *out);
/** os_is_special - "other" is all zeros or all ones: a special stateid's, never one we hand out. */
bool os_is_special(const struct nfs4_stateid *sid);

/* What a stateid with a reserved "other" means (RFC 7530 9.1.4.3, RFC 8881 8.2.3). */
enum os_sid_kind {
	OS_SID_REGULAR = 0,              /* not special: look it up */
	OS_SID_ANON,                     /* {0, 0}: anonymous */
	OS_SID_BYPASS,                   /* {~0, ~0}: READ bypass */
	OS_SID_CURRENT,                  /* 4.1 {1, 0}: the compound's current stateid */
	OS_SID_BAD,                      /* any other special combination (4.1's invalid {~0, 0} too) */
};
enum os_sid_kind os_sid_classify(const struct nfs4_stateid *sid, uint32_t minor);
/** os_sid_client32 - the low half of the client id a stateid of this instance names. */
uint32_t os_sid_client32(const struct nfs4_stateid *sid);

#define OS_CLOSED 4                      /* os_stid_check_locked @kinds: closed stateids are found too */

/**
 * os_stid_check_locked - the RFC checks of a stateid a client sent.
 * @clientid: minor version 1: the session's client (0: any).
 * @kinds: OS_OPEN, OS_LOCK or both; | OS_CLOSED to find closed ones (4.0 replays).
 * Return: NFS4_OK and *@out, or STALE_STATEID / BAD_STATEID / OLD_STATEID
 * (*@out set for OK and OLD).
 */
uint32_t os_stid_check_locked(struct ostate *st, const struct nfs4_stateid *sid, uint32_t minor,
			      uint64_t clientid, unsigned int kinds, struct os_stid **out);

/**
 * os_share_conflict_locked - an open of @f that a new OPEN of (access,
 * deny) conflicts with, or NULL.  Opens of the same owner count too (RFC
 * 7530 9.9 and 16.16.5: "no exception for an existing OPEN for the same
 * open-owner").
 */
struct os_stid *os_share_conflict_locked(struct os_file *f, uint32_t access, uint32_t deny);
/**
 * os_deny_conflict_locked - an open of @f other than @self that denies
 * @access (OS_SHARE_ACCESS_READ or _WRITE) to I/O, or NULL.
 */
struct os_stid *os_deny_conflict_locked(struct os_file *f, const struct os_stid *self, uint32_t access);
/** os_open_add_locked - record an OPEN of (access, deny) in @s (its modes and their union). */
void os_open_add_locked(struct os_stid *s, uint32_t access, uint32_t deny);
/**
 * os_open_downgrade_locked - OPEN_DOWNGRADE @s to (access, deny), which
 * must be exactly the union of the modes of some of the OPENs in effect
 * (RFC 7530 16.19.4); the OPENs not within it are no longer in effect.
 * Return: 0, or -EINVAL.
 */
int os_open_downgrade_locked(struct os_stid *s, uint32_t access, uint32_t deny);

/* ---- open files' inodes ------------------------------------------------------ */

/**
 * os_file_set_inode_locked - @f keeps a reference to @in (taken by the
 * caller, lc_get) while it has open stateids, so a handle of an open file
 * still resolves when the MDS no longer finds its inode by number (a
 * removed or renamed-over file, RFC 7530 9.10: the open is not affected).
 * If @f already holds one, @in is put back into @pl's inode list.
 */
void os_file_set_inode_locked(struct os_file *f, struct lc_inode *in, struct os_putlist *pl);
/** os_open_inode - the inode an open of @ino holds, with a new reference (lc_get), or NULL. */
struct lc_inode *os_open_inode(struct ostate *st, uint64_t ino);

/* ---- byte-range locks (caller holds st->lock) ------------------------------------ */

/** os_lock_range - [off, off+len) with len ~0 meaning to EOF; false on overflow (NFS4ERR_INVAL). */
bool os_lock_range(uint64_t off, uint64_t len, uint64_t *start, uint64_t *end);
/** os_lock_conflict_locked - a lock of another owner that conflicts, or NULL (@ow may be NULL: nobody's). */
const struct os_lock *os_lock_conflict_locked(struct os_file *f, const struct os_owner *ow, uint32_t type,
					      uint64_t start, uint64_t end);
/** os_lock_set_locked - add/replace @ls's lock on the range (POSIX semantics: splits and merges). */
int os_lock_set_locked(struct os_file *f, struct os_stid *ls, uint32_t type, uint64_t start, uint64_t end);
/** os_lock_unset_locked - remove @ls's locks on the range. */
int os_lock_unset_locked(struct os_file *f, struct os_stid *ls, uint64_t start, uint64_t end);
/** os_stid_has_locks_locked - @ls holds at least one lock. */
bool os_stid_has_locks_locked(const struct os_stid *ls);

/* ---- NFSv4.0 owner sequencing ------------------------------------------------------ */

#define OS_SEQ_REPLAY 0xfffffffeu       /* not a status: answer from the owner's saved reply */

/**
 * os_seq_begin_locked - may a request with @seqid of @ow run now?  Waits
 * (st->lock released meanwhile) while a predecessor runs or has not
 * arrived, at most @wait_ns (CLOCK_MONOTONIC), unless st's wait caps are
 * reached.
 * Return: NFS4_OK (it runs: ow->busy is set, call os_seq_end_locked()),
 * OS_SEQ_REPLAY (it is the last request again: send ow->reply),
 * NFS4ERR_DELAY (a wait cap is reached: answer DELAY; nothing to end), or
 * NFS4ERR_BAD_SEQID.
 */
uint32_t os_seq_begin_locked(struct ostate *st, struct os_owner *ow, uint32_t seqid, uint64_t wait_ns);
/**
 * os_seq_end_locked - the request of os_seq_begin_locked() finished with
 * @status and result body @body, about stateid @sid (its id, 0: none):
 * advance the seqid (unless @status is one of those that do not, RFC 7530
 * 9.1.7) and keep the reply; free the owner's closed stateid unless the
 * request was about it; then consume the DELAYed seqids that follow it.
 */
void os_seq_end_locked(struct ostate *st, struct os_owner *ow, uint32_t seqid, uint32_t op, uint32_t status,
		       const uint8_t *body, size_t len, const struct nfs4_fh *fh, uint64_t sid);
/** os_seq_bumps - does @status advance an owner's seqid (RFC 7530 9.1.7)? */
bool os_seq_bumps(uint32_t status);

/* ---- delegations (caller holds st->lock) --------------------------------------- */

/**
 * os_deleg_new_locked - a delegation of @ow's client on @f (@write: a write
 * delegation, else a read one), using handle @ref (a reference passes).
 */
struct os_stid *os_deleg_new_locked(struct ostate *st, struct os_owner *ow, struct os_file *f, struct os_fhref *ref,
				    bool write);
/** os_deleg_is_write - @d is a write delegation. */
static inline bool os_deleg_is_write(const struct os_stid *d)
{
	return d->kind == OS_DELEG && (d->access & OS_SHARE_ACCESS_WRITE);
}
/** os_deleg_find_locked - @clientid's delegation on @f (not revoked), or NULL. */
struct os_stid *os_deleg_find_locked(struct os_file *f, uint64_t clientid);
/**
 * os_deleg_conflict_locked - a delegation on @f of another client than
 * @clientid (not revoked) that an open for @access or a change of the file
 * breaks (a read delegation: any write; a write delegation: any access,
 * reads too), or NULL.
 */
struct os_stid *os_deleg_conflict_locked(struct os_file *f, uint64_t clientid, uint32_t access);
/** os_deleg_revoke_locked - revoke @d: off its file (handle into @pl), kept for FREE_STATEID. */
void os_deleg_revoke_locked(struct ostate *st, struct os_stid *d, struct os_putlist *pl);
/** os_client_revoked - @clientid holds revoked delegations not freed yet. */
bool os_client_revoked_locked(struct ostate *st, uint64_t clientid);

/* ---- clients ------------------------------------------------------------------ */

/** os_client_release - free every owner, stateid and lock of @clientid. */
void os_client_release(struct ostate *st, struct lclient *lc, uint64_t clientid);
/** os_client_has_state - @clientid holds opens or locks (closed stateids do not count). */
bool os_client_has_state(struct ostate *st, uint64_t clientid);

#endif
