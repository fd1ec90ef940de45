/*
 * rpc.h - ONC RPC (RFC 5531) server for the NFS gateway: private to nfs_gw/.
 *
 * Layers, bottom up:
 *   xdr.h        bounded XDR primitives
 *   record.c     TCP record marking: fragments reassembled into records
 *   msg.c        call header decoding, AUTH_SYS/AUTH_NONE, reply headers
 *   transport.c  one io_uring thread: accept, receive, send (struct rpc_xprt)
 *   svc.c        the program table, the worker pool and the DRC around
 *                each call
 *   drc.c        the duplicate reply cache (drc.h)
 *   clnt.c       calls the server makes: on a client's own connection (the
 *                NFSv4.1 back channel, replies matched by xid) or on a TCP
 *                connection of its own (NFSv4.0 callbacks)
 *
 * A program (NFSv4, later NFSv3 and MOUNT) registers a struct rpc_program;
 * its dispatch function runs in a worker thread with the decoded call and
 * appends its results to an encoder that already holds the reply header.
 * The NULL procedure (0) of every registered version is answered here.
 *
 * Lock order: svc->lock (program table, work queue) and the transport's
 * pending lock are leaves; the DRC's bucket locks are never held while
 * calling out of drc.c.
 */
#ifndef LOLIGO_NFS_GW_RPC_RPC_H
#define LOLIGO_NFS_GW_RPC_RPC_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "nfs_gw/rpc/gss.h"
#include "nfs_gw/rpc/xdr.h"

/* ---- RFC 5531 constants ------------------------------------------------ */

#define RPC_VERSION 2

enum rpc_msg_type { RPC_CALL = 0, RPC_REPLY = 1 };
enum rpc_reply_stat { RPC_MSG_ACCEPTED = 0, RPC_MSG_DENIED = 1 };
enum rpc_accept_stat {
	RPC_SUCCESS = 0,
	RPC_PROG_UNAVAIL = 1,
	RPC_PROG_MISMATCH = 2,
	RPC_PROC_UNAVAIL = 3,
	RPC_GARBAGE_ARGS = 4,
	RPC_SYSTEM_ERR = 5,
	RPC_DROP_REPLY = -1,    /* not on the wire: send nothing */
	RPC_AUTH_ERR_REPLY = -2, /* not on the wire: answer MSG_DENIED AUTH_ERROR req->auth_stat */
};
enum rpc_reject_stat { RPC_MISMATCH = 0, RPC_AUTH_ERROR = 1 };
enum rpc_auth_stat {
	RPC_AUTH_OK = 0,
	RPC_AUTH_BADCRED = 1,
	RPC_AUTH_REJECTEDCRED = 2,
	RPC_AUTH_BADVERF = 3,
	RPC_AUTH_REJECTEDVERF = 4,
	RPC_AUTH_TOOWEAK = 5,
	RPC_AUTH_INVALIDRESP = 6,
	RPC_AUTH_FAILED = 7,
};
enum rpc_auth_flavor { RPC_AUTH_NONE = 0, RPC_AUTH_SYS = 1, RPC_AUTH_SHORT = 2, RPC_AUTH_DH = 3, RPCSEC_GSS = 6 };

#define RPC_MAX_AUTH_BYTES 400
#define RPC_AUTHSYS_MAX_MACHINE 255
#define RPC_AUTHSYS_MAX_GIDS 16
/* bytes of record mark in front of every record */
#define RPC_RM_HDR 4
#define RPC_RM_LAST 0x80000000u

/* ---- decoded call -------------------------------------------------------- */

struct rpc_cred {
	uint32_t flavor;                 /* RPC_AUTH_NONE, RPC_AUTH_SYS or RPCSEC_GSS */
	uint32_t gss_service;            /* RPCSEC_GSS: enum rpc_gss_service */
	bool anon;                       /* RPCSEC_GSS: unmapped principal: the export's anonuid/anongid */
	uint64_t gss_princ;              /* RPCSEC_GSS: a hash of the principal's name (never 0); else 0 */
	uint32_t stamp;
	uint32_t uid, gid;               /* AUTH_NONE: 65534/65534 (nobody) */
	uint32_t ngids;
	uint32_t gids[RPC_AUTHSYS_MAX_GIDS];
	char machine[RPC_AUTHSYS_MAX_MACHINE + 1];
};

/** rpc_cred_pseudoflavor - AUTH_SYS/AUTH_NONE, or the krb5 pseudo-flavor of a GSS call's service. */
static inline uint32_t rpc_cred_pseudoflavor(const struct rpc_cred *c)
{
	if (c->flavor != RPCSEC_GSS)
		return c->flavor;
	return c->gss_service == RPC_GSS_SVC_PRIVACY ? RPC_FLAVOR_KRB5P
	       : c->gss_service == RPC_GSS_SVC_INTEGRITY ? RPC_FLAVOR_KRB5I : RPC_FLAVOR_KRB5;
}

struct rpc_call {
	uint32_t xid;
	uint32_t rpcvers, prog, vers, proc;
	struct rpc_cred cred;
	uint32_t verf_flavor;
	struct rpc_gss_cred gss;         /* cred.flavor == RPCSEC_GSS */
	const uint8_t *args;             /* into the record */
	size_t args_len;
};

/* What rpc_decode_call() concluded about a record. */
enum rpc_decode_result {
	RPC_DEC_OK = 0,
	RPC_DEC_UNPARSABLE,      /* no xid or not a CALL: nothing to answer */
	RPC_DEC_RPC_MISMATCH,    /* answer MSG_DENIED / RPC_MISMATCH 2..2 */
	RPC_DEC_AUTH_ERROR,      /* answer MSG_DENIED / AUTH_ERROR (*auth_stat) */
};

/**
 * rpc_decode_call - parse the call header at the start of a record.
 * Pure function over @rec; never reads outside [rec, rec+len).
 * On every result but RPC_DEC_UNPARSABLE, c->xid is valid.
 * Return: the verdict; on RPC_DEC_AUTH_ERROR *@auth_stat says why.
 */
enum rpc_decode_result rpc_decode_call(const uint8_t *rec, size_t len, struct rpc_call *c,
				       enum rpc_auth_stat *auth_stat);

/*
 * Reply headers.  Each appends to @e; start the encoder with
 * rpc_reply_begin() (it reserves the record mark) and end with
 * rpc_reply_end() (which fills it in).
 */
void rpc_reply_begin(struct xdr_enc *e);
void rpc_reply_accepted(struct xdr_enc *e, uint32_t xid, enum rpc_accept_stat st);
void rpc_reply_prog_mismatch(struct xdr_enc *e, uint32_t xid, uint32_t low, uint32_t high);
void rpc_reply_rpc_mismatch(struct xdr_enc *e, uint32_t xid);
void rpc_reply_auth_error(struct xdr_enc *e, uint32_t xid, enum rpc_auth_stat why);
/** rpc_reply_end - write the record mark; return 0 or the encoder's error. */
int rpc_reply_end(struct xdr_enc *e);

/* ---- calls the server makes (NFSv4 callbacks) ------------------------------ */

/* The header of a call from this process: AUTH_NONE, or AUTH_SYS with no
 * supplementary groups. */
struct rpc_call_hdr {
	uint32_t prog, vers, proc;
	uint32_t flavor;                 /* RPC_AUTH_NONE or RPC_AUTH_SYS */
	uint32_t stamp, uid, gid;        /* AUTH_SYS */
	char machine[RPC_AUTHSYS_MAX_MACHINE + 1];
};

/**
 * rpc_call_begin - start a CALL record in @e: the record mark (reserved,
 * filled in by rpc_reply_end()), then the call header.  Append the
 * procedure's arguments after it.
 */
void rpc_call_begin(struct xdr_enc *e, uint32_t xid, const struct rpc_call_hdr *h);

/* A decoded reply header. */
struct rpc_reply {
	uint32_t xid;
	uint32_t reply_stat;             /* RPC_MSG_ACCEPTED or RPC_MSG_DENIED */
	uint32_t stat;                   /* accept_stat, or reject_stat */
	uint32_t low, high;              /* PROG_MISMATCH / RPC_MISMATCH */
	uint32_t auth_stat;              /* AUTH_ERROR */
	uint32_t verf_flavor;            /* accepted: the verifier */
	const uint8_t *verf;
	uint32_t verf_len;
	const uint8_t *res;              /* the results (accepted): into the record */
	size_t res_len;
};

/**
 * rpc_decode_reply - parse the reply header at the start of a record.
 * Pure function over @rec; never reads outside [rec, rec+len).
 * Return: 0, or -EBADMSG (truncated, not a REPLY, unknown reply_stat or
 * reject_stat).
 */
int rpc_decode_reply(const uint8_t *rec, size_t len, struct rpc_reply *r);

/** rpc_reply_errno - 0 for accepted/SUCCESS, else a -errno that says why not. */
int rpc_reply_errno(const struct rpc_reply *r);

/** rpc_new_xid - an xid for a call of this process (random start, then +1). */
uint32_t rpc_new_xid(void);

/* ---- record marking ------------------------------------------------------- */

struct rpc_rm {
	size_t max;              /* largest record accepted */
	unsigned int max_frags;  /* most fragments in one record (0: no limit) */
	unsigned int nfrags;     /* fragments of the current record so far */
	uint8_t hdr[4];
	unsigned int hdr_have;
	uint32_t frag_left;      /* bytes of the current fragment still to come */
	bool in_frag;
	bool last;               /* current fragment is the last of its record */
	uint8_t *rec;
	size_t len, cap;
	uint32_t bad_mark;       /* the fragment length that broke the limit */
};

void rpc_rm_init(struct rpc_rm *rm, size_t max, unsigned int max_frags);
void rpc_rm_free(struct rpc_rm *rm);
/**
 * rpc_rm_feed - consume bytes of the stream.
 * @used: set to how many bytes of @in were consumed.
 * Return: 1 a record is complete (take it with rpc_rm_take() before feeding
 * again), 0 everything consumed and no record complete yet, -EMSGSIZE a
 * fragment would make the record larger than rm->max (rm->bad_mark holds
 * the offending length; the stream cannot be resynchronised: close it),
 * -E2BIG the record has more than rm->max_frags fragments (close it too),
 * -ENOMEM.
 */
int rpc_rm_feed(struct rpc_rm *rm, const uint8_t *in, size_t n, size_t *used);
/** rpc_rm_idle - no byte of a record is pending (between records). */
static inline bool rpc_rm_idle(const struct rpc_rm *rm)
{
	return !rm->hdr_have && !rm->in_frag && !rm->nfrags && !rm->len;
}
/** rpc_rm_take - the completed record (caller frees it) and its length. */
uint8_t *rpc_rm_take(struct rpc_rm *rm, size_t *len);

/* ---- transports -------------------------------------------------------------- */

struct rpc_xprt;
struct drc_entry;

/*
 * What a transport does for the service.  complete() and close() are called
 * from worker threads.
 */
struct rpc_xprt_ops {
	/* refs reached 0: free it */
	void (*release)(struct rpc_xprt *x);
	/* the call is finished: send @buf (ownership passes; NULL: nothing to
	 * send) after earlier replies, tell @drc (a reference passes) when it
	 * is sent, and drop the request's reference on @x */
	void (*complete)(struct rpc_xprt *x, uint8_t *buf, size_t len, struct drc_entry *drc);
	/* close after the replies already queued */
	void (*close)(struct rpc_xprt *x);
	/* optional: send @buf, a CALL record (ownership passes), after what is
	 * queued; its reply comes back through rpc_xprt_deliver_reply().
	 * Return 0, or -ENOTCONN (closed, or a transport that cannot) */
	int (*send_call)(struct rpc_xprt *x, uint8_t *buf, size_t len);
};

/*
 * struct rpc_xprt - one transport (a TCP connection; a datagram endpoint
 * would be one too).  Refcounted: the ring thread holds a reference while
 * the connection is open, each request in a worker holds one, and so does
 * each DRC entry, which is how the cache can look at the stream offsets
 * and closed_at of a connection long after it closed.
 *
 * The implied-ACK clock (drc.h) is kept in byte offsets of the
 * connection's two streams, written by the transport only:
 *   rx_parsed  receive-stream offset just past the newest record handed to
 *              the service (stored before the record is queued)
 *   tx_acked   send-stream bytes the peer's TCP has acknowledged (sampled
 *              with TCP_INFO on receives, sends, ticks and at the close)
 */
struct rpc_xprt {
	uint64_t id;                     /* unique, never reused */
	_Atomic uint64_t last_recv;      /* mono ns: newest complete record */
	_Atomic uint64_t closed_at;      /* mono ns, 0 while open */
	_Atomic uint64_t rx_parsed;      /* see above */
	_Atomic uint64_t tx_acked;       /* see above */
	_Atomic unsigned int drc_count;  /* DRC entries on drc_entries (the transport samples ACKs only if > 0) */
	bool conn_oriented;              /* TCP: replies arrive in order */
	struct sockaddr_storage peer;
	socklen_t peer_len;
	char peer_str[64];               /* "1.2.3.4:567" for log lines */
	_Atomic int refs;
	const struct rpc_xprt_ops *ops;
	/* owned by drc.c: this transport's cache entries, so an implied ACK
	 * can evict them without searching the buckets */
	pthread_mutex_t drc_lock;
	struct drc_entry *drc_entries;   /* protected by drc_lock */
	/* owned by clnt.c: calls this process made on the connection (an
	 * NFSv4.1 back channel), waiting for their replies by xid */
	pthread_mutex_t call_lock;
	struct rpc_pending_call *calls;  /* protected by call_lock */
	bool calls_closed;               /* protected by call_lock: no more replies will come */
};

/** rpc_xprt_next_id - a new transport id (process-wide u64 counter). */
uint64_t rpc_xprt_next_id(void);
/** rpc_xprt_init - fill the common fields; refs = 1. */
void rpc_xprt_init(struct rpc_xprt *x, bool conn_oriented, const struct sockaddr *peer, socklen_t len,
		   const struct rpc_xprt_ops *ops);

static inline struct rpc_xprt *rpc_xprt_get(struct rpc_xprt *x)
{
	atomic_fetch_add_explicit(&x->refs, 1, memory_order_relaxed);
	return x;
}

static inline void rpc_xprt_put(struct rpc_xprt *x)
{
	if (x && atomic_fetch_sub_explicit(&x->refs, 1, memory_order_acq_rel) == 1)
		x->ops->release(x);
}

/* See struct rpc_xprt_ops.  Any thread. */
static inline void rpc_xprt_complete(struct rpc_xprt *x, uint8_t *buf, size_t len, struct drc_entry *drc)
{
	x->ops->complete(x, buf, len, drc);
}

static inline void rpc_xprt_close(struct rpc_xprt *x)
{
	if (x->ops->close)
		x->ops->close(x);
}

/*
 * Calls from the server to the client on one of the client's own
 * connections (clnt.c): the NFSv4.1 back channel shares the TCP connection
 * the client sends its requests on, so the transport hands records that are
 * REPLYs to rpc_xprt_deliver_reply() instead of the service.
 */

/**
 * rpc_xprt_call - send the CALL record @rec (with its record mark; ownership
 * passes) on @x and wait up to @timeout_ns for the reply with @xid.
 * Any thread but the transport's; blocks.
 * Return: 0 and the reply record in *@reply (malloc'd, without record mark),
 * -ETIMEDOUT, -ENOTCONN (the connection closed or cannot send calls),
 * -ECANCELED (rpc_xprt_fail_calls() while waiting), -ENOMEM.
 */
int rpc_xprt_call(struct rpc_xprt *x, uint8_t *rec, size_t len, uint32_t xid, uint64_t timeout_ns, uint8_t **reply,
		  size_t *reply_len);

/**
 * rpc_xprt_deliver_reply - a REPLY record arrived on @x: wake the call
 * waiting for its xid (ownership of @rec passes; freed if nobody waits).
 */
void rpc_xprt_deliver_reply(struct rpc_xprt *x, uint8_t *rec, size_t len);

/**
 * rpc_xprt_fail_calls - no reply will come on @x any more (it closed, or
 * the caller gives up on it): wake every waiting call with @err and make
 * later rpc_xprt_call()s on @x fail at once.
 */
void rpc_xprt_fail_calls(struct rpc_xprt *x, int err);

/**
 * rpc_tcp_call - one call over a TCP connection this process opened (an
 * NFSv4.0 callback), blocking: connect to @sa if *@fd < 0 (the socket is
 * left in *@fd for the next call; closed and set to -1 on any error), send
 * @rec (with its record mark), read records until the reply with @xid
 * (at most @max_reply bytes), all within @timeout_ns.
 * Return: 0 and the reply in *@reply (malloc'd), -ETIMEDOUT, -ECONNREFUSED
 * and the other connect/send errors, -EMSGSIZE, -EPROTO (garbage), -ENOMEM.
 */
int rpc_tcp_call(int *fd, const struct sockaddr *sa, socklen_t sl, const uint8_t *rec, size_t len, uint32_t xid,
		 size_t max_reply, uint64_t timeout_ns, uint8_t **reply, size_t *reply_len);

/** rpc_xprt_peer_port - the peer's source port (0 if not IP). */
uint16_t rpc_xprt_peer_port(const struct rpc_xprt *x);

/* ---- the service ----------------------------------------------------------- */

struct rpc_svc;
struct drc;

/* One call being served: owned by the worker running it. */
struct rpc_req {
	struct rpc_svc *svc;
	struct rpc_xprt *xprt;           /* holds a reference */
	uint8_t *rec;                    /* the record; call.args points into it */
	size_t rec_len;
	uint64_t recv_ns;                /* when the record was complete */
	struct rpc_call call;
	/* set by a dispatch function that used the DRC to say this reply must
	 * not be kept (the NFSv4.0 compound turned out to change nothing) */
	bool drc_nocache;
	/* set by a dispatch function returning RPC_AUTH_ERR_REPLY: why */
	uint32_t auth_stat;
	struct rpc_gss_req gss;          /* RPCSEC_GSS DATA calls (gss.h) */
	struct rpc_req *next;            /* work queue link */
};

/**
 * rpc_dispatch_fn - run one call of a registered program.
 * @args: decoder over the call's arguments.
 * @res:  encoder that already holds an accepted/SUCCESS reply header:
 *        append the procedure's results.
 * Return: RPC_SUCCESS, or RPC_PROC_UNAVAIL / RPC_GARBAGE_ARGS /
 * RPC_SYSTEM_ERR (whatever was appended is discarded and that status is
 * answered instead), or RPC_DROP_REPLY to send nothing.
 */
typedef int (*rpc_dispatch_fn)(void *priv, struct rpc_req *req, struct xdr_dec *args, struct xdr_enc *res);

struct rpc_program {
	uint32_t prog;
	uint32_t vers_lo, vers_hi;
	const char *name;
	rpc_dispatch_fn dispatch;
	/* Optional: true when this call must go through the duplicate reply
	 * cache (non-idempotent).  Called before dispatch. */
	bool (*cacheable)(void *priv, const struct rpc_req *req);
	void *priv;
};

/**
 * rpc_port_check_fn - decide whether a call from an unprivileged source port
 * (>= 1024) is served; returning false answers AUTH_ERROR / AUTH_TOOWEAK.
 */
typedef bool (*rpc_port_check_fn)(void *arg, const struct rpc_req *req);

struct rpc_svc_params {
	size_t max_record;               /* record-size limit */
	unsigned int max_inflight;       /* per connection */
	unsigned int max_conns;
	unsigned int max_conns_per_host; /* per client address (0: no limit) */
	unsigned int max_frags;          /* fragments per record (0: no limit) */
	/* close a connection whose current record is not whole this long
	 * after its first byte (0: never) */
	uint64_t record_timeout_ns;
	unsigned int workers;
	size_t max_reply;                /* encoder bound for one reply */
	/* reply bytes queued on one connection above which its requests are
	 * not read any more (0: 4 MiB) */
	size_t max_queued;
	/* close a connection with no request in flight and nothing received
	 * or sent for this long (0: never) */
	uint64_t idle_timeout_ns;
	/* close a connection whose queued replies made no progress for this
	 * long: the client stopped reading (0: never) */
	uint64_t send_timeout_ns;
};

/** rpc_svc_params_from_config - fill @p from the [nfs] options. */
void rpc_svc_params_from_config(struct rpc_svc_params *p);

/**
 * rpc_svc_create - a service with no program and no listener yet.
 * @drc: duplicate reply cache to use for cacheable calls, or NULL (then no
 *       call is cached).  Not owned.
 */
int rpc_svc_create(const struct rpc_svc_params *p, struct drc *drc, struct rpc_svc **out);

/** rpc_svc_register - add a program version range (before rpc_svc_start). */
int rpc_svc_register(struct rpc_svc *svc, const struct rpc_program *prog);

/**
 * rpc_svc_set_gss - serve RPCSEC_GSS calls with @g (not owned; before
 * rpc_svc_start).  Without it they are AUTH_BADCRED, as before.
 */
void rpc_svc_set_gss(struct rpc_svc *svc, struct rpc_gss *g);


/** rpc_svc_set_port_check - install the privileged-port policy hook. */
void rpc_svc_set_port_check(struct rpc_svc *svc, rpc_port_check_fn fn, void *arg);

/**
 * rpc_svc_start - bind and listen on @addr_port ("ADDR:PORT", "[V6]:PORT",
 * ":PORT"), start the ring thread and the workers.
 * Return: 0, -EINVAL (unparsable address), -EADDRINUSE, or -errno.
 */
int rpc_svc_start(struct rpc_svc *svc, const char *addr_port);

/** rpc_svc_port - the port actually bound (after rpc_svc_start). */
uint16_t rpc_svc_port(const struct rpc_svc *svc);

/**
 * rpc_svc_stop - close the listener and every connection, finish the calls
 * already running, join every thread.  Idempotent.
 */
void rpc_svc_stop(struct rpc_svc *svc);

/** rpc_svc_destroy - stop (if needed) and free.  NULL is fine. */
void rpc_svc_destroy(struct rpc_svc *svc);

/** rpc_svc_conns - number of open connections (for tests and dumps). */
unsigned int rpc_svc_conns(struct rpc_svc *svc);

/** rpc_svc_queued - reply bytes queued on all connections, not yet sent
 * (for tests and dumps). */
size_t rpc_svc_queued(struct rpc_svc *svc);

/**
 * rpc_svc_listen_addr - the address the service listens on (after
 * rpc_svc_start): for registering it with rpcbind.
 */
void rpc_svc_listen_addr(struct rpc_svc *svc, struct sockaddr_storage *ss);

/* rpcbind registration: nfs_gw/rpc/rpcb.h (apart: libtirpc's headers
 * clash with these names) */

/** rpc_svc_max_conns - the connection limit in force (after rpc_svc_start
 * clamped it to the file-descriptor limit). */
unsigned int rpc_svc_max_conns(struct rpc_svc *svc);

/* ---- internal: between svc.c and transport.c ----------------------------- */

struct rpc_transport;

int rpc_transport_start(struct rpc_svc *svc, const struct rpc_svc_params *p, const char *addr_port,
			struct rpc_transport **out);
uint16_t rpc_transport_port(const struct rpc_transport *t);
unsigned int rpc_transport_conns(struct rpc_transport *t);
size_t rpc_transport_queued(struct rpc_transport *t);
unsigned int rpc_transport_max_conns(struct rpc_transport *t);
void rpc_transport_listen_addr(const struct rpc_transport *t, struct sockaddr_storage *ss);
void rpc_transport_stop(struct rpc_transport *t);
void rpc_transport_destroy(struct rpc_transport *t);

/* svc.c: a complete record arrived on @x (called by the ring thread; takes
 * ownership of @rec and a new reference on @x). */
void rpc_svc_enqueue(struct rpc_svc *svc, struct rpc_xprt *x, uint8_t *rec, size_t len, uint64_t now);
/* svc.c: periodic tick from the ring thread (DRC pruning); about once a
 * second, more often when a short idle timeout is configured. */
void rpc_svc_tick(struct rpc_svc *svc, uint64_t now);

/**
 * rpc_svc_run - serve one record synchronously in the calling thread (for
 * fuzzing and tests: no transport thread, no workers).  Takes ownership of
 * @rec and of a reference on @x; the reply goes to x->ops->complete().
 */
void rpc_svc_run(struct rpc_svc *svc, struct rpc_xprt *x, uint8_t *rec, size_t len, uint64_t now);

#endif
