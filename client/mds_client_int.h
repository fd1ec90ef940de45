/*
 * mds_client_int.h - private to the session layer (mds_client.c, the
 * request path; mds_client_session.c, connections and the session thread).
 *
 * Lock order (outermost first):
 *   mdsc->mutex -> mdsc->wait_list_lock -> requests xarray's internal lock
 *   req->lock is taken alone (never while holding another of these);
 *   conn->out_lock is a leaf.
 * RCU: lookups in mdsc->requests run under rcu_read_lock() and pin a
 * request with mdsc_req_get_unless_zero(); requests are freed by call_rcu.
 */
#ifndef LOLIGO_CLIENT_MDS_CLIENT_INT_H
#define LOLIGO_CLIENT_MDS_CLIENT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "client/mds_client.h"
#include "common/options.h"
#include "common/perf.h"
#include "common/rcu.h"
#include "common/time.h"
#include "common/xarray.h"

#define MDSC_PERF_GROUP "mds_client"

/* Client-mutex sections, each with a hold-time histogram. */
enum mdsc_section {
	SEC_SUBMIT,        /* submit_request: tid + registration */
	SEC_DO_REQUEST,    /* do_request: session choice, bind to the connection */
	SEC_HANDLE_REPLY,  /* handle_reply: never taken (RCU lookup), a 0 sample per reply */
	SEC_REPLAY,        /* reconnect replay: setup and teardown */
	SEC_SESSION,       /* session thread, session messages, open/close */
	SEC_OTHER,         /* send_caps, admin socket */
	SEC_MAX
};

/* req->state bits.  Changed with atomic ops; GOT_* and ABORTED under req->lock. */
#define RS_REGISTERED  0x01   /* in mdsc->requests (holds a reference) */
#define RS_WAITING     0x02   /* on mdsc->wait_list (holds a reference); wait_list_lock */
#define RS_GOT_REPLY   0x04   /* first reply arrived: pub.reply/pub.result set */
#define RS_GOT_UNSAFE  0x08
#define RS_GOT_SAFE    0x10
#define RS_ABORTED     0x20   /* given up: abort_err says why */

struct mdsc_req {
	struct mds_request pub;
	struct mds_client *mdsc;
	_Atomic int ref;
	uint64_t tid;                   /* set once, at registration */
	_Atomic uint32_t state;         /* RS_* */
	_Atomic uint32_t attempts;      /* sends so far */
	_Atomic uint64_t sent_gen;      /* connection generation of the last send; 0: never sent */
	_Atomic uint64_t reply_gen;     /* sent_gen when the first reply was taken; 0: none yet */
	uint64_t submit_ns;              /* set before registration */
	int abort_err;                  /* protected by lock */
	int safe_err;                   /* protected by lock: the SAFE reply undid an UNSAFE one (-EIO) */
	_Atomic uint64_t replay_ino;    /* create-like ops: the ino of the first (UNSAFE) reply,
					 * sent as want_ino on a replay */
	struct mdsp_msg *reply_msg;     /* protected by lock; owns pub.reply */
	pthread_mutex_t lock;           /* reply, result, and the waits on cond */
	pthread_cond_t cond;
	/*
	 * The waiter's fast path (wait_state_intr): until an interrupt must
	 * be able to reach it, the waiting thread sleeps on this futex word
	 * with no lock; every state change that may end a wait bumps it and,
	 * if wsleepers says someone sleeps, wakes it (mdsc_req_kick).  The
	 * reader thread so wakes the requester directly: one futex wake and
	 * one wait per request instead of the condition variable's wake,
	 * its mutex hand-over and the unlock's wake.
	 */
	_Atomic uint32_t wseq;
	_Atomic uint32_t wsleepers;
	struct cds_list_head wait_item; /* protected by mdsc->wait_list_lock */
	struct rcu_head rcu;
};

/* A frame waiting in a connection's out queue (seq and crc already set). */
struct out_frame {
	struct out_frame *next;
	struct mdsp_buf b;
};

/*
 * One connection to the MDS.  Refcounted; the fd is closed by the last put,
 * so a sender still holding a dead connection never writes to a reused fd.
 * Submitters never write to the socket: they queue frames, and the
 * connection's writer thread sends them, several per writev.
 */
struct mds_conn {
	_Atomic int ref;
	int fd;
	uint64_t gen;                   /* set before the connection is published */
	struct mds_client *mdsc;
	pthread_mutex_t out_lock;       /* leaf: the out queue below */
	pthread_cond_t out_cond;        /* with out_lock: frames queued, or dead (the writer waits) */
	pthread_cond_t room_cond;       /* with out_lock: the queue shrank, or dead (submitters wait) */
	struct out_frame *out_head, **out_tail;  /* protected by out_lock; in send order */
	size_t out_off;                 /* protected by out_lock: bytes of out_head already sent */
	size_t out_bytes;               /* protected by out_lock: queued, not yet all sent */
	size_t out_limit;               /* client_mds_send_queue: submitters wait beyond it */
	uint64_t out_seq;               /* protected by out_lock */
	bool writing;                   /* protected by out_lock: a send is in progress (the writer's,
					 * or a submitter's straight to an idle socket) */
	uint64_t cork_until;            /* protected by out_lock: 0, or the queue holds only frames
					 * nobody waits for, and the writer sends them then
					 * (client_mds_cork_us) unless something uncorks it first */
	uint32_t out_nframes;           /* protected by out_lock: frames queued */
	/*
	 * protected by out_lock: what the writer's sleep is, so that arming a
	 * cork need not wake it for its timer.  0: not asleep (it looks at the
	 * queue under out_lock before it sleeps again); UINT64_MAX: asleep
	 * until signalled; else the time it wakes by itself.  A writer that
	 * saw a cork lately (last_cork_ns) naps client_mds_cork_us at a time
	 * instead of sleeping until signalled: any cork armed during the nap
	 * ends after it, so the nap's end serves as the cork's timer.
	 */
	uint64_t writer_wakes_by;
	uint64_t last_cork_ns;          /* protected by out_lock: the last cork armed */
	struct mdsp_mac *tx_mac;        /* protected by out_lock: client -> mds key, once authenticated */
	struct mdsp_mac *rx_mac;        /* the receiver's (handshake, then reader): mds -> client key */
	uint64_t in_seq;                /* the receiver's: seq of the last frame received */
	uint8_t cnonce[MDSP_NONCE_LEN]; /* set by the handshake, then read-only */
	uint8_t snonce[MDSP_NONCE_LEN];
	uint8_t session_secret[MDSP_KEY_LEN]; /* authenticated: what a session opened here gets */
	bool authenticated;             /* set by the handshake, then read-only */
	enum mdsp_mac_alg mac_alg;      /* its frame MACs (MDSP_AUTH_GMAC), set with authenticated */
	_Atomic bool dead;
	_Atomic uint64_t last_rx_ns;
	_Atomic uint64_t last_tx_ns;    /* the out queue last moved (or got its first frame) */
	pthread_t reader, writer;       /* the writer runs from conn_new to conn_reap */
	bool has_reader;                /* owned by the session thread */
	/* receive buffer: the handshake (session thread), then the reader thread */
	uint8_t *rx;
	size_t rx_cap, rx_start, rx_end;
};

enum sess_state {
	SESS_NEW = 0,          /* no session yet */
	SESS_OPENING,          /* REQUEST_OPEN sent */
	SESS_RECONNECTING,     /* connection lost; resuming the session */
	SESS_OPEN,
	SESS_CLOSING,
	SESS_CLOSED,
	SESS_EVICTED,          /* evicted / blocklisted: no session, requests fail with EIO
				* (client_reconnect_stale: retried, a new session ends it) */
};

/* The session table (one MDS).  Every field protected by mdsc->mutex. */
struct mds_session {
	enum sess_state state;
	uint64_t id;                    /* MDS-assigned; 0 until the first OPEN */
	uint64_t gen;                   /* bumps on every new connection */
	struct mds_conn *conn;          /* holds a reference; NULL when not connected */
	struct mds_conn *handshaking;   /* no reference: the session thread's attempt, so
					 * that mdsc_destroy can cut a stalled handshake short */
	uint64_t mds_epoch;
	uint32_t lease_ms;
	uint8_t secret[MDSP_KEY_LEN];   /* the session's: proven at RECONNECT */
	uint64_t renew_seq;
	uint64_t last_renew_sent_ns, last_renew_ack_ns;
	uint64_t opened_ns;
	uint64_t next_attempt_ns, backoff_ns;
	int last_error;                 /* of the last failed attempt */
	bool rejected;                  /* the MDS refused to open a session at all */
	char auth_error[768];           /* why the MDS refused our authentication, what to do */
	bool lost;                      /* evicted: the next open fails the UNSAFE requests */
	char evict_reason[512];         /* why the MDS evicted us (logged, mdsc_evicted) */
	uint32_t reconnects;
	uint32_t stale_count;
	uint32_t addr_idx;              /* m->addrs[] index of m->addr (session thread writes) */
	uint32_t round_failed;          /* attempts failed in a row: a round of m->naddrs backs off */
	uint64_t next_probe_ns;         /* a silent MDS: the other addresses probed again from then */
	uint32_t probe_moves;           /* the probe left a silent MDS for one that answered */
	uint32_t probes;                /* probes of the other addresses made */
	uint32_t addr_moves;            /* the session came up at another address than before */
	uint32_t open_idx;              /* m->addrs[] index of the last session that came up */
	uint64_t wait_logged_ns;        /* last "waiting for the MDS" line (0: not waiting) */
	/* cap messages (acks of revokes the reader thread already delivers,
	 * flushes) sent while a new connection is set up: the replays must go
	 * first, so they wait here and go out, in order, as the gate opens;
	 * dropped with the connection they were meant for (conn_gen) */
	struct out_frame *parked, **parked_tail;
	uint32_t nparked;
	uint64_t parked_gen;
};

struct mds_client {
	pthread_mutex_t mutex;          /* the client mutex: the session table only */
	struct mds_session session;     /* protected by mutex */
	pthread_cond_t session_cond;    /* with mutex: session state changed */
	pthread_cond_t tick_cond;       /* with mutex: wake the session thread */
	bool kick;                      /* protected by mutex */
	bool want_session;              /* protected by mutex */
	bool stopping;                  /* protected by mutex; read racily by fast paths */
	_Atomic uint64_t shutdown_by;   /* mdsc_shutdown_begin: every wait for the MDS ends by
					 * then (CLOCK_MONOTONIC ns; 0: not shutting down) */
	bool locking_before;            /* client_mds_locking=before (set at create, read-only) */
	_Atomic uint64_t rx_seq;        /* the last mds_request.rx_seq given */
	pthread_t session_thread;

	struct xarray requests;         /* tid -> struct mdsc_req; its own lock */
	_Atomic uint64_t last_tid;
	_Atomic uint64_t oldest_tid;    /* see the top of mds_client.c */
	_Atomic uint64_t registered_tid;/* every tid <= this is in the map or done; stored
					 * under mutex after the insert */
	_Atomic uint64_t flush_hint_tid;/* the requests up to this tid were sent before a
					 * REQUEST_FLUSH_JOURNAL (mdsc_flush_hint) */
	_Atomic uint64_t max_file_size; /* from the last session OPEN; 0: not said (older MDS) */

	pthread_mutex_t wait_list_lock;
	struct cds_list_head wait_list; /* protected by wait_list_lock */
	_Atomic uint64_t nr_waiting;    /* changed under wait_list_lock */
	/* the session is OPEN but the wait list is still being sent
	 * (mdsc_kick_wait_list): new requests wait for the end (session_cond),
	 * and caps messages are parked until then, so that none overtakes a
	 * request that waited for the session.  Set and cleared under mutex by
	 * the session thread */
	bool wait_kicking;

	/*
	 * The MDS daemons of the filesystem (client_mds_addr, a comma-separated
	 * list: the active one and the standbys, in any order).  addrs[] and
	 * its strings are made by mdsc_create and freed by mdsc_destroy only,
	 * so any thread may keep and print a pointer to one of them.  addr is
	 * the one in use (or being tried): it always points into addrs[], is
	 * stored by the session thread only, and read by anyone with no lock
	 * (an atomic load: every "mds %s" log line reads it that way).
	 */
	char **addrs;
	uint32_t naddrs;
	_Atomic(char *) addr;
	char *name;
	uint8_t uuid[16];
	/* who we are (SESSION v4 metadata, `session ls`): set by mdsc_set_meta
	 * before the first session opens, then read-only */
	struct mdsp_meta meta[MDSP_META_MAX];
	uint32_t nmeta;
	char *store_addr;               /* set before the session opens, then read-only */
	/* the dead predecessor's session to reclaim (mdsc_set_reclaim): set
	 * before the first session opens, sent in its REQUEST_OPEN only, and
	 * cleared by the session thread once a session opened */
	uint64_t reclaim_sid;
	uint8_t reclaim_uuid[16];
	/* the client's operations blocked past client_op_warn_s (mdsc_set_slow_ops),
	 * sent with every renewal; protected by mutex */
	uint32_t slow_ops;
	char *slow_op;
	_Atomic bool evicted;           /* SESS_EVICTED: requests fail with EIO (see mdsc_evicted) */
	bool reconnect_stale;           /* client_reconnect_stale, read at create */
	/* authentication: set by mdsc_auth_init, then read-only */
	char *auth_name;                /* client_auth_name */
	char *keyring_path;             /* client_keyring */
	bool have_key;
	bool keyring_missing;           /* client_keyring does not exist: connect without a key */
	uint8_t key[MDSP_KEY_LEN];
	struct mdsc_ops ops;
	void *ops_arg;

	struct hist hold[SEC_MAX];
	struct hist lat_reply, lat_safe;
	struct hist send_wait;          /* a submitter waited for room in a full out queue */
	_Atomic uint64_t send_waiters;  /* submitters waiting for room now */
	struct hist frames_per_write;   /* frames the writer offered to one writev */
	_Atomic uint64_t out_bytes, out_frames;  /* queued on every connection */
	struct perf_counter c_sent, c_replies_unsafe, c_replies_safe, c_replies_replayed;
	struct perf_counter c_flush_hints;      /* REQUEST_FLUSH_JOURNAL sent: a wait for SAFE began */
	struct perf_counter c_replays, c_retries, c_reconnects, c_opens, c_rejects;
	struct perf_counter c_timeouts, c_unsafe_lost, c_sent_lost, c_interrupted;
	struct perf_counter c_direct_sends;     /* frames a submitter sent itself (idle socket) */
	struct perf_counter c_no_session;       /* "no session on this connection" answers (ENOTCONN): reconnected */
	struct perf_counter c_corked;           /* frames held for a shared send (client_mds_cork_us) */
	struct perf_counter c_cork_wakes;       /* corks armed that had to wake the writer for its timer */
};

/* mds_client.c */
void mdsc_cond_init(pthread_cond_t *c);
uint64_t mdsc_lock(struct mds_client *m);
void mdsc_unlock(struct mds_client *m, enum mdsc_section sec, uint64_t t0);
/* cond wait on mdsc->mutex: closes the hold section before sleeping, reopens it after. */
int mdsc_cond_wait(struct mds_client *m, pthread_cond_t *cond, uint64_t deadline_ns,
		   enum mdsc_section sec, uint64_t *t0);
uint64_t mdsc_secs_to_ns(enum cfg_opt_id id);

void mdsc_req_get(struct mdsc_req *r);
bool mdsc_req_get_unless_zero(struct mdsc_req *r);
void mdsc_req_put(struct mdsc_req *r);
struct mdsc_req *mdsc_req_next(struct mds_client *m, uint64_t *idx, uint64_t last);
int mdsc_register_request(struct mds_client *m, struct mdsc_req *r);
void mdsc_unregister(struct mds_client *m, struct mdsc_req *r);
bool mdsc_abort_request(struct mds_client *m, struct mdsc_req *r, int err, bool only_unanswered);
/* mdsc_req_kick - wake @r's fast-path waiters after a change of r->state
 * (or of what bounds their wait: the shutdown); no lock needed. */
void mdsc_req_kick(struct mdsc_req *r);
int mdsc_send_request(struct mds_client *m, struct mds_conn *c, struct mdsc_req *r, uint32_t flags);
void mdsc_handle_reply(struct mds_client *m, struct mdsp_msg *msg);
void mdsc_kick_wait_list(struct mds_client *m);
int mdsc_sync_until(struct mds_client *m, uint64_t deadline_ns);

#ifdef MDSC_TEST_HOOKS
/* test builds only (tests/unit/mdsc.cmake): called after every oldest_tid
 * publication with the candidate just offered */
extern void (*mdsc_test_published)(struct mds_client *m, uint64_t candidate);
/* called by a waiter right before it sleeps on r->wseq (wait_fast) */
extern void (*mdsc_test_before_sleep)(struct mdsc_req *r);
#endif

/* mds_client_session.c */
/* mdsc_auth_init - read the client's key (client_keyring, client_auth_name).
 * Return: 0 (a missing keyring is not an error: no key), or -errno with the
 * reason logged (an unreadable or malformed keyring, no key for the name). */
int mdsc_auth_init(struct mds_client *m);
void mdsc_session_init(struct mds_client *m);
void mdsc_session_fini(struct mds_client *m);
int mdsc_session_thread_start(struct mds_client *m);
/* mdsc_session_close - wait for SAFE (until @deadline_ns, CLOCK_MONOTONIC),
 * close the session, stop every thread. */
void mdsc_session_close(struct mds_client *m, uint64_t deadline_ns);
/* mdsc_kick_locked - wake the session thread.  Caller holds mdsc->mutex. */
void mdsc_kick_locked(struct mds_client *m);
void mdsc_conn_get(struct mds_conn *c);
void mdsc_conn_put(struct mds_conn *c);
/*
 * mdsc_conn_send - queue one encoded frame for the connection's writer (seq
 * and crc are set here; @b's data moves to the queue).  Waits only while
 * the out queue is full (client_mds_send_queue), on the session thread for
 * at most the stall bound.  No lock held.
 */
int mdsc_conn_send(struct mds_conn *c, struct mdsp_buf *b);
/*
 * mdsc_conn_send_corked - as mdsc_conn_send, for a frame nobody waits for
 * (a request with on_reply): it may wait in the queue up to
 * client_mds_cork_us for others to go out in the same send.  Any frame
 * sent without the cork sends the queue at once (in order, by the sender
 * itself when the socket takes it).
 */
int mdsc_conn_send_corked(struct mds_conn *c, struct mdsp_buf *b);
/* mdsc_conn_send_corked_nowait - as mdsc_conn_send_corked, never waiting for
 * room (a caps message nobody waits for: mdsc_send_caps_corked). */
int mdsc_conn_send_corked_nowait(struct mds_conn *c, struct mdsp_buf *b);
/*
 * mdsc_flush_hint - we wait for the SAFE reply of @tid: unless a hint sent
 * since covers it, tell the MDS (SESSION REQUEST_FLUSH_JOURNAL) not to hold
 * its journal write for more entries (mds_journal_max_delay).  Sent after
 * what the cork holds, never waiting for room; nothing without an open
 * session (the replays after a reconnect are written at once).
 */
void mdsc_flush_hint(struct mds_client *m, uint64_t tid);
/* mdsc_conn_uncork - send what the cork holds on @c now (mdsc_uncork). */
void mdsc_conn_uncork(struct mds_conn *c);
struct json_object *mdsc_session_json(struct mds_client *m);


/* ---- shared by mds_client_session.c, mds_client_conn.c, mds_client_auth.c ---- */

/* conn_send_wait's @wait_ns: never wait (may pass the limit), or wait for room as long as it takes */
#define SEND_NOWAIT  UINT64_MAX
#define SEND_WAIT    0

/* what the MDS granted in a handshake (mdsc_handshake) */
struct mdsc_granted {
	uint64_t id, seq, epoch;
	uint32_t lease_ms;
	uint8_t secret[MDSP_KEY_LEN];
	uint64_t max_file_size;
	struct mdsp_lock *refused;    /* RECONNECT: locks the MDS did not grant back (malloc'd) */
	uint32_t nrefused;
	char reason[512];             /* a refusal's reason */
};

/* Set on the session thread: its sends never wait for room unbounded. */
extern __thread bool mdsc_on_session_thread;

/* the connection's last reference is gone: close the socket, free it (mds_client_session.c) */
void mdsc_conn_reap(struct mds_conn *c);
/* wake the session thread (mds_client_session.c) */
void mdsc_kick(struct mds_client *m);
/* the connection is dead: wake its waiters and readers, shut the socket down, @why logged (conn.c) */
void mdsc_conn_mark_dead(struct mds_conn *c, bool wake, int err, const char *why);
/* a connection on connected socket @fd, its writer thread started; NULL on failure (conn.c) */
struct mds_conn *mdsc_conn_new(struct mds_client *m, int fd);
/* the next frame from @c, waited for up to @timeout_ms: 0 or -errno with *@why (conn.c) */
int mdsc_conn_recv(struct mds_conn *c, struct mdsp_msg *msg, int timeout_ms, const char **why);
/* queue @b on @c, waiting for room up to @wait_ns (SEND_NOWAIT, SEND_WAIT) (conn.c) */
int mdsc_conn_send_wait(struct mds_conn *c, struct mdsp_buf *b, uint64_t wait_ns);
/* how long @c's out queue has not moved at @now, 0 if it has nothing queued (conn.c) */
uint64_t mdsc_conn_stalled_ns(struct mds_conn *c, uint64_t now);
/* the stall bound: client_session_timeout, 30 s when that is 0 (conn.c) */
uint64_t mdsc_send_stall_ns(void);
/* can a TCP connection to @addr be made within @timeout_ms?  0 (closed at once) or -errno (conn.c) */
/* an MDS answers at @addr: connect, AUTH HELLO, a byte back (mds_client_auth.c) */
int mdsc_probe_answers(struct mds_client *m, const char *addr, int timeout_ms);
/* connect to @addr within @timeout_ms, the socket's send stall bound @stall_ms (conn.c) */
int mdsc_tcp_connect(const char *addr, int timeout_ms, unsigned int stall_ms, int *out, const char **why);
/* AUTH, then SESSION open (or RECONNECT of @resume_id with @secret): what was granted in @g (auth.c) */
int mdsc_handshake(struct mds_client *m, struct mds_conn *c, uint64_t resume_id, const uint8_t *secret,
		   uint64_t deleg_tid, int timeout_ms, struct mdsc_granted *g, int *result);

#endif
