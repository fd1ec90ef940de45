/*
 * open_state.h - NFSv4 opens, byte-range locks, open-owners, lock-owners
 * and their stateids (RFC 8881 section 8-9, RFC 7530 section 9), shared by
 * minor versions 0 and 1.  (The clients and sessions they belong to are
 * the dispatcher's: nfs4.h.)
 *
 * Stateid "other" is 12 bytes: the server's boot epoch (u32) and a 64-bit
 * id never reused in this instance; a stateid of an earlier instance is
 * NFS4ERR_STALE_STATEID, an unknown id NFS4ERR_BAD_STATEID, an older seqid
 * NFS4ERR_OLD_STATEID, a newer one NFS4ERR_BAD_STATEID; minor version 1
 * also accepts seqid 0 ("the current one").
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
 * client library calls: lc_fh handles are refcounted (struct os_fhref) so a
 * READ can use one after dropping the lock while a CLOSE releases it.
 */
#ifndef LOLIGO_NFS_GW_NFS4_OPEN_STATE_H
#define LOLIGO_NFS_GW_NFS4_OPEN_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "nfs_gw/nfs4/nfs4_xdr.h"

struct lclient;
struct lc_fh;

#define OS_SHARE_ACCESS_READ 1u
#define OS_SHARE_ACCESS_WRITE 2u
#define OS_SHARE_ACCESS_BOTH 3u

enum os_kind { OS_OPEN = 1, OS_LOCK = 2 };
#define OS_KIND_ANY (OS_OPEN | OS_LOCK)

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

struct os_stid {
	uint64_t id;
	uint32_t seqid;                  /* of the current stateid */
	enum os_kind kind;
	uint64_t clientid;
	struct os_owner *owner;
	struct os_file *file;
	/* OS_OPEN */
	uint32_t access, deny;
	struct os_fhref *fh;
	/* OS_LOCK: the open it came from (for CLOSE) */
	struct os_stid *open;
	struct os_stid *hnext;           /* st->stids chain */
	struct os_stid *fnext;           /* file->stids */
};

struct os_owner {
	uint64_t clientid;
	bool is_lock;
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
	struct os_stid *stids;
	struct os_lock *locks;
	struct os_file *hnext;
};

#define OS_HASH 4096

struct ostate {
	pthread_mutex_t lock;
	uint32_t boot;
	uint64_t next_id;                /* protected by lock */
	uint64_t grace_end_ns;
	struct os_stid *stids[OS_HASH];
	struct os_owner *owners[OS_HASH];
	struct os_file *files[OS_HASH];
	uint64_t nstids, nowners, nfiles;
	/* NFSv4.0 seqid waits: threads blocked in os_seq_begin_locked() now, and the caps */
	unsigned int seq_waiting;
	unsigned int seq_wait_max;       /* gateway-wide */
	unsigned int seq_wait_per_owner;
};

/* ---- lifetime ----------------------------------------------------------- */

int ostate_create(uint32_t boot, uint64_t grace_ns, struct ostate **out);
/** ostate_destroy - free everything, releasing open handles through @lc. */
void ostate_destroy(struct ostate *st, struct lclient *lc);
/** os_in_grace - the grace period after start is still running. */
bool os_in_grace(struct ostate *st);

/* ---- handles ------------------------------------------------------------------ */

struct os_fhref *os_fhref_new(struct lc_fh *fh, uint32_t access);
static inline struct os_fhref *os_fhref_get(struct os_fhref *r)
{
	atomic_fetch_add(&r->refs, 1);
	return r;
}
/** os_fhref_put - drop a reference; the last one lc_release()s the handle (do not hold st->lock). */
void os_fhref_put(struct lclient *lc, struct os_fhref *r);

/* A list of handles to put once st->lock is dropped. */
struct os_putlist {
	unsigned int n;
	struct os_fhref *r[64];
};
void os_putlist_add(struct os_putlist *pl, struct os_fhref *r);
void os_putlist_run(struct lclient *lc, struct os_putlist *pl);

/* ---- tables (caller holds st->lock) ---------------------------------------------- */

struct os_owner *os_owner_find_locked(struct ostate *st, uint64_t clientid, bool is_lock, const uint8_t *o,
				      uint32_t len, bool create);
struct os_file *os_file_get_locked(struct ostate *st, uint64_t ino, bool create);
struct os_stid *os_stid_new_locked(struct ostate *st, enum os_kind kind, struct os_owner *ow,
				   struct os_file *f);
/** os_stid_free_locked - unhash @s (and, for an open, nothing else: free its locks first). */
void os_stid_free_locked(struct ostate *st, struct os_stid *s, struct os_putlist *pl);
/** os_stid_find_locked - the stid of (owner, file, kind), or NULL. */
struct os_stid *os_stid_find_locked(struct os_file *f, struct os_owner *ow, enum os_kind kind);
/** os_file_put_locked - free @f if nothing refers to it any more. */
void os_file_put_locked(struct ostate *st, struct os_file *f);

void os_stid_wire(const struct ostate *st, const struct os_stid *s, struct nfs4_stateid *out);
/** os_is_special - all-zero (anonymous) or all-ones (READ bypass) stateid. */
bool os_is_special(const struct nfs4_stateid *sid);

/**
 * os_stid_check_locked - the RFC checks of a stateid a client sent.
 * @clientid: minor version 1: the session's client (0: any).
 * @kinds: OS_OPEN, OS_LOCK or both.
 * Return: NFS4_OK and *@out, or STALE_STATEID / BAD_STATEID / OLD_STATEID.
 */
uint32_t os_stid_check_locked(struct ostate *st, const struct nfs4_stateid *sid, uint32_t minor,
			      uint64_t clientid, unsigned int kinds, struct os_stid **out);

/** os_share_conflict_locked - would (access, deny) of @ow conflict with other owners' opens of @f? */
bool os_share_conflict_locked(struct os_file *f, struct os_owner *ow, uint32_t access, uint32_t deny);

/* ---- byte-range locks (caller holds st->lock) ------------------------------------ */

/** os_lock_range - [off, off+len) with len ~0 meaning to EOF; false on overflow (NFS4ERR_INVAL). */
bool os_lock_range(uint64_t off, uint64_t len, uint64_t *start, uint64_t *end);
/** os_lock_conflict_locked - a lock of another owner that conflicts, or NULL. */
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
 * @status and result body @body: advance the seqid (unless @status is one
 * of those that do not, RFC 7530 9.1.7) and keep the reply; then consume
 * the DELAYed seqids that follow it.
 */
void os_seq_end_locked(struct ostate *st, struct os_owner *ow, uint32_t seqid, uint32_t op, uint32_t status,
		       const uint8_t *body, size_t len, const struct nfs4_fh *fh);
/** os_seq_bumps - does @status advance an owner's seqid (RFC 7530 9.1.7)? */
bool os_seq_bumps(uint32_t status);

/* ---- clients ------------------------------------------------------------------ */

/** os_client_release - free every owner, stateid and lock of @clientid. */
void os_client_release(struct ostate *st, struct lclient *lc, uint64_t clientid);
/** os_client_has_state - @clientid holds opens or locks. */
bool os_client_has_state(struct ostate *st, uint64_t clientid);

#endif
