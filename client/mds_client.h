/*
 * mds_client.h - the client's MDS session layer (private to client/).
 *
 * Shape (DESIGN.md section 6, the Linux ceph client after its
 * mutex-contention series):
 *   - tids come from an atomic counter; oldest_tid is an atomic u64 that the
 *     send path reads without a lock;
 *   - the request map is a common/xarray keyed by tid: RCU lookups without a
 *     lock, the tree's own lock for insert/erase, tid-ordered iteration;
 *   - requests waiting for a session sit on a wait list under
 *     wait_list_lock;
 *   - mdsc->mutex guards the session table only, held for session choice and
 *     registration and around replay setup/teardown, never while encoding or
 *     sending; handle_reply finds its request without it.
 *
 * Lock order: mdsc->mutex -> wait_list_lock -> (xarray internal lock);
 * conn->out_lock is a leaf (each connection's out queue; one writer thread
 * per connection does the socket writes).
 */
#ifndef LOLIGO_CLIENT_MDS_CLIENT_H
#define LOLIGO_CLIENT_MDS_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "mds_proto/proto.h"

struct mds_client;
struct asok;

/*
 * One request.  Refcounted: the map holds one ref, the caller another.
 *
 * Ownership of @args: the strings and blobs the caller hangs on it (name,
 * name2, target, data) must be malloc'd and belong to the request from then
 * on; the last mdsc_request_put() frees them.  They must outlive the call
 * because a request stays registered until its SAFE reply and may be
 * replayed after an MDS restart long after mdsc_do_request() returned.
 * tid, oldest_tid, attempt and flags are the session layer's: it sets them
 * on each send (on a copy, so a concurrent resend never races the caller).
 */
struct mds_request {
	struct mdsp_request args;   /* caller fills op, caller, ino, name, ...; tid set at submit */
	struct mdsp_reply *reply;   /* the first reply (UNSAFE or SAFE; later ones only move the
				     * state); owned by the request */
	int result;                 /* reply->result, or -errno from the session layer */
	/*
	 * The order its first reply arrived in, from 1 (0: none yet, or one
	 * the MDS answered from its table of completed requests).  The MDS
	 * sends the first reply of a change as it applies it (UNSAFE, or SAFE
	 * for a failed one, later), so for two successful changes this is the
	 * order the MDS made them in, whichever requester applies its reply
	 * first (client/dentry.c lc_dir_names_changed).
	 */
	uint64_t rx_seq;
	uint64_t timeout_ns;        /* caller, optional: give up on the first reply after this
				     * (-ETIMEDOUT, quietly) instead of client_request_timeout */
	/*
	 * caller, optional: a request nobody waits for (an asynchronous
	 * create, client/asyncdir.c).  Called once with the first reply, on
	 * the connection's reader thread before anything that follows it
	 * (must not block); a failed first reply is also what a later
	 * mdsc_wait_safe() returns.  args.want_ino, when set, is sent on
	 * every attempt; args.flags' MDSP_REQ_WANT_INOS on every attempt too.
	 */
	void (*on_reply)(struct mds_request *req, void *arg);
	void *on_reply_arg;
	/*
	 * caller, with args.want_ino: the connection generation whose reply
	 * delegated that ino (mdsc_request_reply_gen of that request).  Sent
	 * on a later connection, the request goes as a resend
	 * (MDSP_REQ_RETRY): the MDS may have restarted and forgotten the
	 * delegation, which it keeps in memory only (mds/prealloc.c), and
	 * takes a resent request's ino as it takes a replay's.
	 */
	uint64_t want_ino_gen;
	/* caller, with MDSP_REQ_WANT_INOS: the client's delegation epoch when it
	 * asked (client/request.c lc_deleg_want); a range in a reply to an
	 * older epoch's ask was delegated before a reconnect, and is stale */
	uint64_t deleg_epoch;
	/* the rest is private to mds_client.c */
	void *priv;
};

struct mdsc_ops {
	/* a CAPS message from the MDS (grant/revoke/flush_ack); runs on the
	 * connection's reader thread, which also delivers every reply: must not
	 * block (queue slow work) */
	void (*handle_caps)(void *arg, const struct mdsp_caps *caps);
	/*
	 * The session went stale / was evicted / came back.  @session_op is
	 * MDSP_SESSION_STALE (lease ran out; the layer renews at once),
	 * MDSP_SESSION_EVICTED (the session is lost, with every cap: evicted,
	 * or the MDS refused to resume it; a new one is being opened),
	 * MDSP_SESSION_RECONNECT (resumed after a lost connection, before the
	 * parked requests are sent) or MDSP_SESSION_OPEN (a new session after a
	 * lost one).  Runs on the reader or the session thread, no lock held.
	 */
	void (*session_event)(void *arg, uint32_t session_op);
	/*
	 * Optional (may be NULL): the caps to report in SESSION RECONNECT after
	 * the connection to the MDS was lost.  Set *caps to a malloc'd array
	 * (the session layer frees it, and each entry's malloc'd dname) and
	 * *ncaps to its length; return 0 or -errno (then what the array holds
	 * is still reported).  Runs on the session thread with
	 * no session-layer lock held.
	 */
	int (*reconnect_caps)(void *arg, struct mdsp_cap_reconnect **caps, uint32_t *ncaps);
	/*
	 * Optional: the file locks to re-assert in SESSION RECONNECT (each with
	 * .ino), as reconnect_caps.  locks_refused: the MDS did not grant back
	 * @n of them (it restarted and we came too late, or they conflicted);
	 * runs on the session thread before the session is OPEN, no lock held.
	 */
	int (*reconnect_locks)(void *arg, struct mdsp_lock **locks, uint32_t *nlocks);
	/*
	 * Optional: before a RECONNECT, stop handing out inos the MDS delegated
	 * (until the next session_event) and wait up to @timeout_ns until every
	 * one handed out is in a registered request; true when so.  The
	 * RECONNECT then says the last tid (deleg_tid), and the MDS frees the
	 * old delegations once our oldest_tid passes it.  Session thread, no
	 * lock held.
	 */
	bool (*deleg_quiesce)(void *arg, uint64_t timeout_ns);
	void (*locks_refused)(void *arg, const struct mdsp_lock *locks, uint32_t n);
};

/**
 * mdsc_set_meta - client metadata sent with every session open and
 * reconnect (Ceph's client_metadata: "hostname", "mount_point", "version"...;
 * `session ls` on the MDS shows it).  Call before mdsc_open_session(); a
 * key set again is replaced.  Return: 0, -E2BIG (MDSP_META_MAX entries),
 * -EINVAL (too long), -ENOMEM.
 */
int mdsc_set_meta(struct mds_client *m, const char *key, const char *val);

/**
 * mdsc_addrs_parse - split a client_mds_addr value: "host:port" or a
 * comma-separated list of them (the MDS daemons of one filesystem, active
 * and standbys, any order; spaces around entries are ignored; an IPv6 host
 * in brackets, "[::1]:6800").  Every entry is checked: a host, a port
 * 1-65535, no duplicate.
 * @list: the value.
 * @out: set to a malloc'd array of *@n malloc'd strings (mdsc_addrs_free);
 *       NULL: only check.
 * @err: on failure, a message naming the bad entry (may be NULL).
 * Return: 0, -EINVAL (@err says why), -ENOMEM.
 */
int mdsc_addrs_parse(const char *list, char ***out, uint32_t *n, char *err, size_t errlen);
/** mdsc_addrs_free - free what mdsc_addrs_parse() returned. */
void mdsc_addrs_free(char **addrs, uint32_t n);

/**
 * mdsc_create - a session layer talking to the MDS at @addr ("host:port",
 * or a comma-separated list of the filesystem's MDS daemons, see
 * mdsc_addrs_parse(); NULL: the client_mds_addr option).  The session
 * thread connects to them in turn and follows the one that serves (see
 * mds_client_session.c).  @client_name NULL: "client.<host>.<pid>".
 * @ops is copied.  Connects lazily; mdsc_open_session() waits for the first
 * session.  Reads the mdsc options (common/options/mdsc.def) once.
 * Return: 0, -EINVAL (a bad address: the entry is logged), -ENOMEM.
 */
int mdsc_create(const char *addr, const char *client_name, const struct mdsc_ops *ops, void *arg,
		struct mds_client **out);
/**
 * mdsc_addr - the MDS address in use (or being tried): one of the list's
 * strings, valid until mdsc_destroy.  Any thread, no lock.
 */
const char *mdsc_addr(struct mds_client *mdsc);
/**
 * mdsc_keyring_check - read client_keyring for client_auth_name as
 * mdsc_create() will, for a daemon to refuse a bad one at start with the
 * reason on its stderr.  Return: 0 (the key is there, or there is no
 * keyring: the client connects without a key), or -errno with @err saying
 * what is wrong and what to do (-EPERM: group or others may access the
 * file; -ENOKEY, -EINVAL, ...).  No lock, no thread; reads the file.
 */
int mdsc_keyring_check(char *err, size_t errlen);
/**
 * mdsc_open_session - connect and open the session within @timeout_ms
 * (retrying a refused or failed connection with backoff until then).
 * Return: 0, or -ECONNREFUSED (nothing listening at the address),
 * -ETIMEDOUT (no answer), -EPERM and friends (the MDS rejected the client);
 * the reason is logged.
 */
int mdsc_open_session(struct mds_client *mdsc, int timeout_ms);
/**
 * mdsc_destroy - close the session and free.  First waits for SAFE on
 * everything, for at most client_unmount_timeout (also through a reconnect
 * to a restarted MDS); what is not SAFE then is logged request by request
 * and given up (-ESHUTDOWN to its waiters).
 */
void mdsc_destroy(struct mds_client *mdsc);
/**
 * mdsc_destroy_by - mdsc_destroy(), with the wait for SAFE replies ending at
 * @deadline_ns (CLOCK_MONOTONIC) instead of client_unmount_timeout from now:
 * for an unmount that has already waited part of its client_unmount_timeout
 * (for the session, for size/mtime flushes), so that the whole unmount is
 * bounded by the option once, not once per wait.  A deadline already past:
 * no wait.
 */
void mdsc_destroy_by(struct mds_client *mdsc, uint64_t deadline_ns);
/**
 * mdsc_shutdown_begin - the client is going away (SIGTERM, an unmount):
 * every wait for the MDS, those already waiting and those to come, ends
 * by @deadline_ns (CLOCK_MONOTONIC) at the latest, however it was bounded
 * before (client_request_timeout 0, a file lock, a wait for SAFE).  A
 * request still unanswered then is given up with -EIO (logged); a wait for
 * SAFE returns -ETIMEDOUT and leaves the request for mdsc_destroy_by().
 * Nothing is cut short before @deadline_ns: an MDS that answers meanwhile
 * (a restart) completes the requests as usual.  An earlier deadline wins
 * over a later call's.  Any thread, no lock held; never blocks.
 */
void mdsc_shutdown_begin(struct mds_client *mdsc, uint64_t deadline_ns);

/**
 * mdsc_set_store_addr - the client's data-store instance (store_instance_addr()),
 * sent when the session opens or reconnects, so that an eviction fences it.
 * Before mdsc_open_session().
 */
void mdsc_set_store_addr(struct mds_client *mdsc, const char *addr);
/**
 * mdsc_set_slow_ops - the client's operations blocked longer than
 * client_op_warn_s: @n of them, the oldest described by @oldest (NULL
 * when @n is 0).  They go to the MDS with a session renewal sent now, and
 * with every renewal after (the MDS's MDS_CLIENT_SLOW_OPS health check).
 * Never blocks on the network.
 */
void mdsc_set_slow_ops(struct mds_client *mdsc, uint32_t n, const char *oldest);

/**
 * mdsc_evicted - the MDS evicted this client (or keeps it blocklisted) and it
 * is not coming back by itself (client_reconnect_stale false): every request
 * fails with -EIO at once.  With client_reconnect_stale it is true until a
 * new session opens.  @why (may be NULL) gets the MDS's reason.  Lock-free
 * when it returns false.
 */
bool mdsc_evicted(struct mds_client *mdsc, char *why, size_t len);

/** mdsc_request_new - a request for @op with one reference held by the caller. */
struct mds_request *mdsc_request_new(struct mds_client *mdsc, uint32_t op);
void mdsc_request_put(struct mds_request *req);
/** mdsc_request_get - another reference on @req (drop it with mdsc_request_put). */
void mdsc_request_get(struct mds_request *req);
/**
 * mdsc_request_safe_state - without waiting: 1 once @req is SAFE (a read's
 * only reply counts), 0 while it is not yet, < 0 when it never will be
 * (what mdsc_wait_safe would return: -EIO for a change the MDS lost).
 */
int mdsc_request_safe_state(struct mds_request *req);

/**
 * mdsc_do_request - submit @req and wait for its first reply (UNSAFE or
 * SAFE) or a session-layer failure.  Return: the reply's result (0 or
 * -errno); -ETIMEDOUT/-EIO/-ESHUTDOWN for session failures.  Survives MDS
 * restarts: the request is resent/replayed on reconnect.
 * A request is submitted once (-EINVAL on a second call: make a new one).
 * -ETIMEDOUT comes only with client_request_timeout > 0 (default 0: wait
 * for the MDS to come back) or @req->timeout_ns; -ESHUTDOWN when
 * mdsc_destroy() gave up on it; -EINTR when the calling thread's lc_intr
 * fired (client.h) while it had no reply yet.
 * On success @req->reply holds the first reply until the last put.
 */
int mdsc_do_request(struct mds_client *mdsc, struct mds_request *req);
/**
 * mdsc_submit - submit @req without waiting (its tid is set in req->args.tid
 * on return 0); mdsc_wait_reply - wait for its first reply until
 * @deadline_ns (0: no bound; client_request_timeout does not apply: for
 * waits that may rightly last, a blocked F_SETLKW).  With @intr, the calling
 * thread's lc_intr ends the wait with -EINTR and the request stays in
 * flight (its caller cancels it at the MDS and waits again, without @intr,
 * for the answer that says whether it was carried out).  mdsc_do_request
 * is the two with client_request_timeout.  Return: as mdsc_do_request.
 */
int mdsc_submit(struct mds_client *mdsc, struct mds_request *req);
/*
 * mdsc_uncork - send now the requests nobody waits for that the cork
 * (client_mds_cork_us) still holds, in order, as far as the socket takes
 * them at once (the writer sends the rest).  No lock held.
 */
void mdsc_uncork(struct mds_client *mdsc);
int mdsc_wait_reply(struct mds_client *mdsc, struct mds_request *req, uint64_t deadline_ns, bool intr);
/**
 * mdsc_wait_safe - wait until @req got its SAFE reply (bounded by
 * client_request_timeout when it is set).  Return: 0 once SAFE; -EIO when
 * the MDS lost the session while the request had only an UNSAFE reply (the
 * change may be lost); -ETIMEDOUT; the abort error of a request given up.
 */
int mdsc_wait_safe(struct mds_client *mdsc, struct mds_request *req);
/**
 * mdsc_sync - wait until every request submitted so far is SAFE (syncfs),
 * bounded by client_request_timeout in all when it is set.  Return: 0, or
 * as mdsc_wait_safe for the first request that will never be SAFE.
 */
int mdsc_sync(struct mds_client *mdsc);

/**
 * mdsc_send_caps - queue a CAPS message (flush, ack, release) on the
 * session's connection.  Never blocks: it takes the client mutex for the
 * session choice only and never waits for room in the out queue (caps
 * messages may pass its limit).  Return: 0, -ENOTCONN (no open session).
 */
int mdsc_send_caps(struct mds_client *mdsc, const struct mdsp_caps *caps);

/**
 * mdsc_send_caps_corked - as mdsc_send_caps, for a message nobody waits for
 * yet (a voluntary update: size and mtime after a writeback, wanted caps):
 * it may wait in the cork (client_mds_cork_us) for others to share its
 * send, the writeback flusher's 16 files in one.  A thread that comes to
 * wait for its ack calls mdsc_uncork first.  Return: as mdsc_send_caps.
 */
int mdsc_send_caps_corked(struct mds_client *mdsc, const struct mdsp_caps *caps);

/**
 * mdsc_register_asok - add `mds_requests` and `mds_sessions` to @a.  The
 * admin socket must be stopped before mdsc_destroy().
 */
int mdsc_register_asok(struct mds_client *mdsc, struct asok *a);

/** mdsc_oldest_tid - the oldest tid not yet SAFE (what requests carry as oldest_tid). */
uint64_t mdsc_oldest_tid(struct mds_client *mdsc);
/* mdsc_request_reply_gen - the generation of the connection @req's first
 * reply came on (0: no reply yet). */
uint64_t mdsc_request_reply_gen(const struct mds_request *req);
/** mdsc_last_tid - the last tid handed out (0: none yet). */
uint64_t mdsc_last_tid(struct mds_client *mdsc);
/** mdsc_max_file_size - the filesystem's max_file_size from the session OPEN; 0 if the MDS did not say.  No lock. */
uint64_t mdsc_max_file_size(struct mds_client *mdsc);
/**
 * mdsc_set_reclaim - the session @sid of client @uuid (16 bytes; NULL:
 * none) is our dead predecessor's (client/reclaim.c): the first
 * REQUEST_OPEN names it, and the MDS evicts it before our session opens.
 * Before mdsc_open_session().
 */
void mdsc_set_reclaim(struct mds_client *mdsc, uint64_t sid, const uint8_t *uuid);
/**
 * mdsc_session_ident - our session's id (0 while none is open) and, in
 * @uuid (16 bytes), our client uuid: what a successor reclaims.  Takes the
 * client mutex briefly; never blocks on the network.
 */
uint64_t mdsc_session_ident(struct mds_client *mdsc, uint8_t *uuid);
/** mdsc_is_open - true while the session is open (not connecting or reconnecting). */
bool mdsc_is_open(struct mds_client *mdsc);

#endif
