/*
 * nfs4.h - the NFSv4 server core, private to nfs_gw/: program registration,
 * the COMPOUND dispatcher and its per-request state, the operation table,
 * and NFSv4.1 clients, sessions and leases.
 *
 * How an operation is written (ops_*.c, one function per operation, listed
 * in op_table.c):
 *
 *     uint32_t nfs4_op_getfh(struct nfs4_compound *cs, struct xdr_dec *args,
 *                            struct xdr_enc *res);
 *
 * The dispatcher has already written the result's opnum and reserved its
 * status.  The function decodes its own arguments from @args (bounded
 * helpers; a decode failure is NFS4ERR_BADXDR), does the work, appends the
 * result body to @res when it returns NFS4_OK, and returns the nfsstat4.
 * For the few results that carry a body on an error (LOCK's
 * NFS4ERR_DENIED, SETCLIENTID's NFS4ERR_CLID_INUSE), set
 * cs->body_on_error; otherwise whatever was appended before an error is
 * discarded.  Table flags let the dispatcher do the common checks
 * (current filehandle present, allowed without a session, minor version).
 *
 * Lock order: srv->lock (client and session tables) before any
 * slot_table lock and before the state code's st->lock (its
 * client_has_state hook runs under srv->lock); nothing else is taken
 * under them.  The client records' lock (recovery.h) is a leaf, never
 * held across store I/O.
 */
#ifndef LOLIGO_NFS_GW_NFS4_NFS4_H
#define LOLIGO_NFS_GW_NFS4_NFS4_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/perf.h"
#include "nfs_gw/nfs4/idmap.h"
#include "nfs_gw/nfs4/nfs4_xdr.h"
#include "nfs_gw/nfs4/open_state.h"
#include "nfs_gw/nfs4/slot_table.h"
#include "nfs_gw/rpc/gss.h"
#include "nfs_gw/rpc/rpc.h"

struct lclient;
struct asok;
struct nfs_exports;
struct nfs_export_set;
struct nfs4_server;
struct nfs4_session;

/* ---- callbacks (callback.c) ------------------------------------------------ */

/*
 * The state of a callback path (a 4.1 session's back channel, a 4.0
 * client's callback address), as knfsd keeps it: NONE the client never
 * asked for one; UNKNOWN one is bound but not probed yet; UP the last call
 * was answered; DOWN the last call got no answer (timeout, connection
 * gone, connection refused); FAULT the client answered, but not as it
 * should (RPC error, CB_SEQUENCE refused).
 */
enum nfs4_cb_state { NFS4_CB_NONE = 0, NFS4_CB_UNKNOWN, NFS4_CB_UP, NFS4_CB_DOWN, NFS4_CB_FAULT };

#define NFS4_CB_SLOTS 4                  /* back-channel slots we use at most */

/*
 * The security a callback is sent with (callback_sec_parms4, cb_client4).
 * RPCSEC_GSS (4.1 only, RFC 8881 18.36.4): @ctx is a reference on the
 * fore-channel context gcbp_handle_from_server named (of the client's own
 * principal), @gss_handle the gcbp_handle_from_client the callbacks'
 * credential carries, @gss_service the gcbp_service they are sent with.
 * Whoever holds a struct with a @ctx releases it with nfs4_cb_sec_release().
 */
struct nfs4_cb_sec {
	bool ok;                         /* one we can send (AUTH_NONE, AUTH_SYS, a usable RPCSEC_GSS) */
	uint32_t flavor, uid, gid;
	char machine[RPC_AUTHSYS_MAX_MACHINE + 1];
	bool gss_offered;                /* the client offered RPCSEC_GSS (usable or not) */
	struct rpc_gss *gss;             /* RPCSEC_GSS: the table @ctx is in */
	struct gss_sctx *ctx;
	uint32_t gss_service;
	uint8_t gss_handle[RPC_GSS_MAX_HANDLE];
	uint32_t gss_handle_len;
};

/* A 4.1 session's back channel; protected by srv->lock. */
struct nfs4_back_chan {
	bool wanted;                     /* CONN_BACK_CHAN asked for, or a connection bound to it */
	struct rpc_xprt *xprt;           /* a reference: the connection callbacks go on, or NULL */
	uint32_t program;
	struct nfs4_cb_sec sec;
	enum nfs4_cb_state state;
	uint32_t nslots;                 /* slots we may use: min(ca_maxrequests, NFS4_CB_SLOTS) */
	uint32_t seqid[NFS4_CB_SLOTS];   /* last csa_sequenceid sent per slot (answered) */
	bool busy[NFS4_CB_SLOTS];
	uint64_t calls, failures;
};

/* ---- clients (RFC 8881 2.4, 18.35) ---------------------------------------- */

/*
 * The principal a client record was established with (RFC 7530 16.33.5,
 * RFC 8881 18.35.4): the RPC credential's flavor and, for AUTH_SYS, its
 * uid and gid.  Records are compared principal for principal.
 */
struct nfs4_principal {
	uint32_t flavor, uid, gid;
	uint64_t gss;                    /* RPCSEC_GSS: the principal (rpc_cred.gss_princ); not in recovery records */
};

static inline bool nfs4_principal_eq(const struct nfs4_principal *a, const struct nfs4_principal *b)
{
	return a->flavor == b->flavor && a->uid == b->uid && a->gid == b->gid && a->gss == b->gss;
}

struct nfs4_client {
	uint64_t clientid;
	uint8_t verifier[NFS4_VERIFIER_SIZE];
	uint8_t owner[NFS4_OPAQUE_LIMIT];
	uint32_t owner_len;
	struct nfs4_principal principal; /* of EXCHANGE_ID/SETCLIENTID */
	char addr[64];                   /* peer that sent it ("1.2.3.4:567"), for `nfs clients` */
	uint32_t minorversion;
	uint32_t flags;                  /* EXCHGID4_FLAG_* we granted */
	/* SP4_MACH_CRED (EXCHANGE_ID over krb5i/krb5p): the ops only its
	 * principal may send (the others: NFS4ERR_WRONG_CRED) */
	bool mach_cred;
	uint32_t spo_enforce[2], spo_allow[2];
	bool confirmed;                  /* protected by srv->lock */
	bool reclaim_complete;           /* protected by srv->lock */
	/* on stable storage (recovery.h): set once the record is durable;
	 * rec_val is what was written (removal compares it); protected by
	 * the records' lock (srv->rec->lock) */
	_Atomic bool recorded;
	uint8_t rec_val[4 + 44 + NFS4_OPAQUE_LIMIT];
	size_t rec_len;
	bool dead;                       /* unhashed; protected by srv->lock */
	/*
	 * Courtesy (RFC 7530 9.6.3.1): the lease expired but the client holds
	 * state nobody has asked for since; it is kept, and renewed by the
	 * client's next request, until a conflicting request cancels the lease
	 * (nfs4_client_cancel_courtesy) or NFS4_COURTESY_MAX_NS pass.
	 * Protected by srv->lock; courtesy_hint mirrors it for renewals.
	 */
	bool courtesy;
	_Atomic bool courtesy_hint;
	uint64_t courtesy_since;         /* mono ns; protected by srv->lock */
	_Atomic uint64_t renewed;        /* mono ns of the last lease renewal */
	_Atomic uint32_t seq_flags;      /* SEQ4_STATUS_* to report in SEQUENCE */
	/* 4.0 (RFC 7530 16.33.5): the setclientid_confirm verifier of this
	 * record, and a callback update awaiting its own confirmation;
	 * protected by srv->lock */
	uint8_t confirm_verf[NFS4_VERIFIER_SIZE];
	bool upd_pending;
	uint8_t upd_verf[NFS4_VERIFIER_SIZE];
	struct nfs4_principal upd_principal;
	char cb_netid[16], cb_addr[64];  /* 4.0 callback address (NFS4ERR_CLID_INUSE's client_using) */
	/* 4.0 callbacks (callback.c): where SETCLIENTID said, and the update
	 * waiting for SETCLIENTID_CONFIRM; protected by srv->lock */
	uint32_t cb_prog, cb_ident;
	struct sockaddr_storage cb_ss;   /* ss_family 0: no usable address */
	socklen_t cb_sl;
	enum nfs4_cb_state cb_state;
	char cb_why[96];                 /* why the path is not up, for `nfs clients` */
	uint32_t upd_cb_prog, upd_cb_ident;
	char upd_cb_netid[16], upd_cb_addr[64];
	int cb_fd;                       /* the callback thread's socket (only it touches it), -1 */
	/* CREATE_SESSION's own replay cache (18.36.4); protected by srv->lock */
	uint32_t cs_seqid;
	uint32_t cs_status;
	bool cs_cached;                  /* cs_status/cs_body answer a retry of cs_seqid */
	uint8_t *cs_body;
	size_t cs_body_len;
	struct nfs4_session *sessions;   /* protected by srv->lock */
	int refs;                        /* protected by srv->lock */
	void *state;                     /* opens, locks...: the state code's (nfs4ops) */
	struct nfs4_client *next;        /* srv->clients */
};

/* ---- sessions (RFC 8881 2.10) ---------------------------------------------- */

#define NFS4_SESSION_MAX_CONNS 16

struct nfs4_session {
	uint8_t id[NFS4_SESSIONID_SIZE];
	struct nfs4_client *clp;         /* holds a client reference */
	struct slot_table slots;         /* fore channel */
	struct nfs4_channel_attrs fore, back;
	uint32_t flags;                  /* CREATE_SESSION4_FLAG_* granted */
	struct nfs4_back_chan cb;        /* protected by srv->lock */
	uint64_t conns[NFS4_SESSION_MAX_CONNS];  /* bound transport ids; protected by srv->lock */
	unsigned int nconns;             /* protected by srv->lock */
	bool dead;                       /* protected by srv->lock */
	int refs;                        /* protected by srv->lock */
	struct nfs4_session *next;       /* srv->sessions */
	struct nfs4_session *cl_next;    /* clp->sessions */
};

/* ---- the compound being served ---------------------------------------------- */

struct nfs4_compound {
	struct nfs4_server *srv;
	struct rpc_req *req;
	const struct rpc_cred *cred;
	uint32_t minorversion;
	uint32_t opcnt;                  /* ops in the request */
	uint32_t opidx;                  /* index of the op being run */
	uint32_t op;                     /* its number */
	struct nfs4_fh cfh, sfh;         /* current and saved filehandle (len 0: none) */
	struct nfs4_stateid cur_stateid, saved_stateid;
	bool has_cur_stateid, has_saved_stateid;
	/* NFSv4.1: set by SEQUENCE */
	struct nfs4_session *session;    /* holds a session reference */
	struct nfs4_client *clp;         /* the session's client (no extra reference) */
	uint32_t slotid;
	bool slot_held;
	bool cachethis;
	/* set by SEQUENCE on a retry */
	uint8_t *replay;                 /* cached COMPOUND4res to send as is */
	size_t replay_len;
	bool replay_uncached;
	/* set by ops */
	bool body_on_error;
	bool modifies;                   /* an op changed state (NFSv4.0 DRC) */
	/* courtesy clients in the way of this request (ops' nfs4ops_courtesy_*) */
	uint64_t courtesy_cid;           /* the one to try cancelling */
	uint64_t courtesy_kept[8];       /* ones that turned out not to be courtesy clients */
	unsigned int ncourtesy_kept;
	size_t res_start;                /* offset of COMPOUND4res in the encoder */
	void *op_private;                /* free for the ops' use within one compound */
	struct nfs_exports *exports;     /* the table in force when it began (a reference) */
};

typedef uint32_t (*nfs4_op_fn)(struct nfs4_compound *cs, struct xdr_dec *args, struct xdr_enc *res);

/* op table flags */
#define OPF_NEED_FH 0x01         /* current filehandle required: NFS4ERR_NOFILEHANDLE */
#define OPF_SESSIONLESS 0x02     /* 4.1: may come first without SEQUENCE (then alone) */
#define OPF_MODIFIES 0x04        /* changes state: NFSv4.0 compounds holding one use the DRC */
#define OPF_V40_ONLY 0x08        /* NFS4ERR_NOTSUPP in 4.1 (RFC 8881 "MUST NOT implement") */
#define OPF_V41 0x10             /* new in 4.1: NFS4ERR_OP_ILLEGAL in 4.0 */
#define OPF_ATTRSSET 0x20        /* the result carries a bitmap4 whatever the status (SETATTR4res) */

struct nfs4_op_desc {
	const char *name;
	nfs4_op_fn fn;                   /* NULL: NFS4ERR_NOTSUPP */
	uint32_t flags;
};

/** nfs4_op_lookup - the table entry for @op, or NULL for unknown numbers. */
const struct nfs4_op_desc *nfs4_op_lookup(uint32_t op);

/**
 * nfs4_op_stats_init - register the per-op counters and latency histograms
 * (perf group "nfs4_ops": <op>, <op>_lat) once per process, so `perf dump`
 * and the Prometheus endpoint list every op from the start.
 */
void nfs4_op_stats_init(void);

/* ---- the server ------------------------------------------------------------- */

/*
 * Hooks for the state code (opens, locks, delegations: ops_state.c and
 * friends).  client_release is called without srv->lock held;
 * client_has_state may be called with it (it takes only its own leaf lock).
 */
struct nfs4_state_hooks {
	/* @clp is going away (lease cancelled, DESTROY_CLIENTID, replaced by a
	 * rebooted client): release its opens and locks, free clp->state. */
	void (*client_release)(struct nfs4_server *srv, struct nfs4_client *clp);
	/* @clientid holds opens or locks */
	bool (*client_has_state)(struct nfs4_server *srv, uint64_t clientid);
	/* once a second from the lease reaper, without srv->lock (delegations
	 * not returned within a lease of their recall are revoked) */
	void (*tick)(struct nfs4_server *srv, uint64_t now);
	void *arg;                       /* the state code's, for its hooks */
};

/*
 * A client whose lease was cancelled (it expired with nothing to keep, or a
 * conflicting request ended its courtesy): its client id and its stateids
 * answer NFS4ERR_EXPIRED (RFC 7530 9.6.3.2) until the same client owner
 * establishes a new client id.  At most NFS4_EXPIRED_MAX are kept, the
 * oldest forgotten first.
 */
struct nfs4_expired {
	uint64_t clientid;
	uint32_t minorversion;
	uint32_t owner_len;
	uint8_t *owner;
	struct nfs4_expired *next;
};

#define NFS4_EXPIRED_MAX 1024
#define NFS4_COURTESY_MAX_NS (24ull * 3600 * 1000000000ull)   /* as knfsd's courteous server */

/* Counters the server registers under perf_group for `perf dump`. */
struct nfs4_perf {
	struct os_seq_stats seq;         /* NFSv4.0 seqid waits (open_state.h) */
	struct perf_counter courtesy;    /* clients kept as courtesy clients */
	struct perf_counter cancelled;   /* leases cancelled (tombstoned) */
	struct perf_counter delegs_granted, delegs_recalled, delegs_returned, delegs_revoked;
	struct perf_counter delegs_granted_write;   /* of delegs_granted: write delegations */
	struct perf_counter cb_getattrs, cb_getattr_failures;   /* CB_GETATTR sent; unanswered or refused */
	struct idmap_stats idmap;        /* owner strings (idmap.h) */
};

struct nfs4_params {
	uint64_t lease_ns;
	uint32_t max_ops;                /* per COMPOUND, and the ca_maxoperations cap */
	uint32_t slots;                  /* ca_maxrequests cap */
	uint32_t max_req;                /* ca_maxrequestsize cap (the RPC record limit) */
	uint32_t max_resp;               /* ca_maxresponsesize cap */
	uint32_t max_resp_cached;        /* ca_maxresponsesize_cached cap */
	uint64_t cb_timeout_ns;          /* a callback unanswered this long: the path is down */
	uint64_t cb_getattr_ns;          /* a GETATTR waits this long for a CB_GETATTR answer */
	/* the gateway's exports (not owned); NULL: nfs4_server_create makes
	 * its own from nfs_exports (tests, fuzzing) */
	struct nfs_export_set *exports;
	const char *perf_group;          /* counters for `perf dump` (NULL: none) */
};

struct nfs4ops_ctx;

struct nfs4_server {
	struct nfs4_params p;
	struct lclient *lc;              /* may be NULL in tests */
	struct nfs_export_set *exports;  /* what compounds serve (see nfs4_params) */
	struct nfs_export_set *own_exports; /* made by nfs4_server_create, or NULL */
	struct nfs4_state_hooks hooks;
	/* this incarnation's id: the high half of client ids, the first word of
	 * stateids and session ids.  Unique per start (random, never 0 or all
	 * ones), not the start second: two gateways on one filesystem, or one
	 * restarted within a second, must not hand out each other's ids. */
	uint32_t boot;
	int64_t boot_sec;                /* epoch seconds at start: the pseudo-fs's times */
	uint8_t boot_verifier[NFS4_VERIFIER_SIZE];

	pthread_mutex_t lock;
	struct nfs4_client *clients;     /* protected by lock */
	struct nfs4_session *sessions;   /* protected by lock */
	struct nfs4_expired *expired;    /* protected by lock; newest first */
	unsigned int nexpired;           /* protected by lock */
	uint32_t next_clientid;          /* protected by lock */
	uint32_t next_sessionid;         /* protected by lock */
	uint64_t next_verf;              /* protected by lock: confirm verifiers */
	struct nfs4_perf perf;
	bool perf_registered;

	/*
	 * The operations' per-server context (open/lock state, write
	 * verifier: ops_int.h): made by nfs4_server_create() before any
	 * thread can see the server, freed by nfs4_server_destroy() after
	 * every client was released, so a gateway restarted in the same
	 * process starts clean.  Read-only in between: no lock.
	 */
	struct nfs4ops_ctx *ops_ctx;

	pthread_t reaper;
	bool reaper_started;
	pthread_cond_t reaper_cond;
	bool stopping;                   /* protected by lock */

	struct nfs4_cb_queue *cbq;       /* the callback thread (callback.c) */
	struct nfs4_recovery *rec;       /* client records (recovery.h); NULL: no store */
	uint64_t grace_ns;               /* of this start (nfs4_rec_start): 0 none */
	_Atomic bool keep_records;       /* stopping: released clients keep their records */
};

/** nfs4_params_from_config - the nfs4_* options and the RPC limits. */
void nfs4_params_from_config(struct nfs4_params *p, size_t max_record, size_t max_reply);

/**
 * nfs4_server_create - the NFSv4 server state and its lease reaper thread.
 * @lc: the client library handle ops use (NULL: no filesystem, tests).
 */
int nfs4_server_create(const struct nfs4_params *p, struct lclient *lc, struct nfs4_server **out);
/** nfs4_server_destroy - stop the reaper, release every client. */
void nfs4_server_destroy(struct nfs4_server *srv);

/*
 * The filesystem operations' per-server context (ops_fh.c), for the
 * server's own lifetime code (state.c) only.
 */
/** nfs4ops_ctx_create - make srv->ops_ctx and install its state hooks.  0 or -ENOMEM. */
int nfs4ops_ctx_create(struct nfs4_server *srv);
/** nfs4ops_ctx_destroy - free srv->ops_ctx (NULL: nothing); every client must be released. */
void nfs4ops_ctx_destroy(struct nfs4_server *srv);

/** nfs4_register - register program 100003 version 4 on @svc. */
int nfs4_register(struct nfs4_server *srv, struct rpc_svc *svc);

/** nfs4_asok_attach - serve `nfs clients` on @a (detached by destroy). */
int nfs4_asok_attach(struct nfs4_server *srv, struct asok *a);

/* ---- client and session table (state.c) ------------------------------------ */

/**
 * nfs4_client_find - client by id, with a reference.
 * Return: NFS4_OK, NFS4ERR_EXPIRED (its lease was cancelled: a tombstone),
 * NFS4ERR_STALE_CLIENTID (unknown, or from before a restart).
 */
uint32_t nfs4_client_find(struct nfs4_server *srv, uint64_t clientid, struct nfs4_client **out);
void nfs4_client_put(struct nfs4_server *srv, struct nfs4_client *clp);
/**
 * nfs4_client_renew - the client showed it is alive (SEQUENCE, RENEW, a
 * stateid of it): renews the lease, and a courtesy client is one again.
 * Takes srv->lock only for a courtesy client.
 */
void nfs4_client_renew(struct nfs4_server *srv, struct nfs4_client *clp);
/**
 * nfs4_client_cancel_courtesy - @clientid's state is in the way of another
 * client's request: if it is a courtesy client, cancel its lease now
 * (tombstone, release its state).  Return: true if it was cancelled.
 */
bool nfs4_client_cancel_courtesy(struct nfs4_server *srv, uint64_t clientid);
/** nfs4_client_expired32 - a tombstone of this instance has a client id whose low half is @low. */
bool nfs4_client_expired32(struct nfs4_server *srv, uint32_t low);
/** nfs4_forget_expired_locked - @owner established itself again: drop its tombstones.  Caller holds srv->lock. */
void nfs4_forget_expired_locked(struct nfs4_server *srv, const uint8_t *owner, uint32_t owner_len, uint32_t minor);
/** nfs4_new_verifier_locked - a verifier this server never handed out before.  Caller holds srv->lock. */
void nfs4_new_verifier_locked(struct nfs4_server *srv, uint8_t out[NFS4_VERIFIER_SIZE]);
struct nfs4_compound;
/**
 * nfs4_mach_cred_check - SP4_MACH_CRED (ops_session.c): NFS4ERR_WRONG_CRED
 * when @op is one @clp's EXCHANGE_ID made only its own principal's and the
 * request comes from another; NFS4_OK otherwise.
 */
uint32_t nfs4_mach_cred_check(const struct nfs4_compound *cs, const struct nfs4_client *clp, uint32_t op);

/** nfs4_principal_of - the principal of a request's credential. */
void nfs4_principal_of(const struct rpc_cred *cred, struct nfs4_principal *p);
/**
 * nfs4_client_new - a new unconfirmed client, hashed, with a reference.
 * Caller holds srv->lock.
 */
struct nfs4_client *nfs4_client_new_locked(struct nfs4_server *srv, const uint8_t *owner, uint32_t owner_len,
					   const uint8_t *verifier, const struct nfs4_principal *principal,
					   uint32_t minorversion);
/**
 * nfs4_client_expire_locked - unhash @clp and its sessions.  Caller holds
 * srv->lock and, if this returns true, must then call nfs4_client_release()
 * without it.  @tombstone: the lease was cancelled (not given up by the
 * client): keep a tombstone that answers NFS4ERR_EXPIRED.  Return: false if
 * @clp was already expired (someone else releases it).
 */
bool nfs4_client_expire_locked(struct nfs4_server *srv, struct nfs4_client *clp, bool tombstone);
/** nfs4_client_release - run the state hook for an expired client and drop the table's reference. */
void nfs4_client_release(struct nfs4_server *srv, struct nfs4_client *clp);
/** nfs4_client_set_addr - remember the peer of @cs as @clp's address (any lock). */
void nfs4_client_set_addr(struct nfs4_client *clp, const struct nfs4_compound *cs);

/** nfs4_session_find - session by id, with a reference; NULL if unknown. */
struct nfs4_session *nfs4_session_find(struct nfs4_server *srv, const uint8_t *id);
void nfs4_session_put(struct nfs4_server *srv, struct nfs4_session *ses);
/** nfs4_session_destroy - unhash @ses; requests holding references finish on it. */
void nfs4_session_destroy(struct nfs4_server *srv, struct nfs4_session *ses);
/** nfs4_session_bind_conn - bind transport @xprt_id to @ses (fore channel). */
void nfs4_session_bind_conn(struct nfs4_server *srv, struct nfs4_session *ses, uint64_t xprt_id);

/* ---- callbacks (callback.c) ---------------------------------------------------- */

/* What a callback job does. */
enum nfs4_cb_kind {
	NFS4_CBJ_NULL = 1,               /* CB_NULL: the probe */
	NFS4_CBJ_SEQUENCE,               /* 4.1: CB_COMPOUND { CB_SEQUENCE } (4.0: CB_NULL) */
	NFS4_CBJ_RECALL,                 /* CB_COMPOUND { [CB_SEQUENCE,] CB_RECALL } */
	NFS4_CBJ_GETATTR,                /* CB_COMPOUND { [CB_SEQUENCE,] CB_GETATTR(change, size) } */
};

struct nfs4_cb_job {
	enum nfs4_cb_kind kind;
	uint64_t clientid;
	bool has_session;                /* 4.1: this session's back channel, not any */
	uint8_t sessionid[NFS4_SESSIONID_SIZE];
	struct nfs4_stateid stateid;     /* RECALL */
	struct nfs4_fh fh;
	bool truncate;
	/* GETATTR: what the client answered, set before done() runs when
	 * status is NFS4_OK (mask: NFS4_CB_GETATTR_* bits it returned) */
	uint32_t attr_mask;
	uint64_t attr_change, attr_size;
	/* called on the callback thread when it is over (NULL: the job is
	 * freed): @err 0 the client answered and @status is the CB_COMPOUND's
	 * (NFS4_OK for CB_NULL), else -ETIMEDOUT, -ENOTCONN (no path),
	 * -ECANCELED (the server stops), -EPROTO; the callee frees @job */
	void (*done)(struct nfs4_server *srv, struct nfs4_cb_job *job, int err, uint32_t status);
	void *arg;
	struct nfs4_cb_job *next;
};

/** nfs4_cb_start - start the callback thread (nfs4_server_create). */
int nfs4_cb_start(struct nfs4_server *srv);
/**
 * nfs4_cb_stop - stop the callback thread: a call in progress is abandoned,
 * queued jobs end with -ECANCELED.  Before the RPC service is destroyed
 * (back-channel calls use its connections).  Idempotent.
 */
void nfs4_cb_stop(struct nfs4_server *srv);
/** nfs4_cb_free - stop (if need be) and free the callback thread's state (nfs4_server_destroy). */
void nfs4_cb_free(struct nfs4_server *srv);
/** nfs4_cb_queue - run @job on the callback thread (ownership passes). */
void nfs4_cb_queue(struct nfs4_server *srv, struct nfs4_cb_job *job);
/** nfs4_cb_probe - queue a CB_NULL probe of @clientid's path (of @ses, if not NULL). */
void nfs4_cb_probe(struct nfs4_server *srv, uint64_t clientid, const struct nfs4_session *ses);
/**
 * nfs4_cb_get_sec - decode a callback_sec_parms4<> list: the first entry we
 * can send with goes into @sec (sec->ok false if none).  AUTH_NONE and
 * AUTH_SYS always can; RPCSEC_GSS when @req is an RPCSEC_GSS call (NULL:
 * never) and gcbp_handle_from_server names a live context of the caller's
 * own principal (then @sec holds a reference: nfs4_cb_sec_release()).
 * Return: NFS4_OK or NFS4ERR_BADXDR.
 */
uint32_t nfs4_cb_get_sec(struct xdr_dec *args, const struct rpc_req *req, struct nfs4_cb_sec *sec);
/** nfs4_cb_sec_release - drop @sec's context reference, if any (any lock may be held). */
void nfs4_cb_sec_release(struct nfs4_cb_sec *sec);
/**
 * nfs4_cb_bind_back_locked - make @x @ses's back channel (a reference is
 * taken, the old one dropped); state UNKNOWN until the probe.  Caller holds
 * srv->lock and then calls nfs4_cb_probe() without it.
 */
void nfs4_cb_bind_back_locked(struct nfs4_session *ses, struct rpc_xprt *x);
/**
 * nfs4_cb_seq_flags_locked - the SEQ4_STATUS_* bits about callback paths
 * for a SEQUENCE on @ses: CB_PATH_DOWN when the client wants a back channel
 * and none of its sessions has a working one, CB_PATH_DOWN_SESSION when
 * @ses has none, BACKCHANNEL_FAULT when @ses's client answered wrongly.
 * Caller holds srv->lock.
 */
uint32_t nfs4_cb_seq_flags_locked(const struct nfs4_session *ses);
/**
 * nfs4_cb_set_addr40_locked - parse a 4.0 cb_client4 (netid, universal
 * address) for @clp, who sent it from @peer.  Only "tcp"/"tcp6" to the
 * client's own host (the address its SETCLIENTID came from) are accepted;
 * otherwise the path is DOWN with the reason in clp->cb_why.  Caller holds
 * srv->lock.
 */
void nfs4_cb_set_addr40_locked(struct nfs4_client *clp, const char *netid, const char *uaddr,
			       const struct sockaddr_storage *peer);
/**
 * nfs4_cb_call_sync - run a @kind job for @clientid and wait for it (bounded
 * by nfs4_cb_timeout per job in the queue).  Return: as a job's done().
 */
int nfs4_cb_call_sync(struct nfs4_server *srv, uint64_t clientid, enum nfs4_cb_kind kind, uint32_t *status);
/** nfs4_cb_path_up - @clientid's callback path answered its last call (4.1: on some session). */
bool nfs4_cb_path_up(struct nfs4_server *srv, uint64_t clientid);
/**
 * nfs4_cb_getattr - CB_GETATTR of the change and size of @fh to @clientid
 * (a write delegation's holder, RFC 8881 10.4.3), waiting at most @wait_ns
 * (the call itself goes on, bounded by nfs4_cb_timeout, if we stop
 * waiting).  No lock held.
 * Return: 0 and *@mask (NFS4_CB_GETATTR_* it returned), *@change, *@size;
 * -ETIMEDOUT (no answer in time), -ENOTCONN, -ECANCELED, -EPROTO, or
 * -EREMOTEIO (it answered with an error).
 */
int nfs4_cb_getattr(struct nfs4_server *srv, uint64_t clientid, const struct nfs4_fh *fh, uint64_t wait_ns,
		    uint32_t *mask, uint64_t *change, uint64_t *size);
/** nfs4_cb_recall - queue a CB_RECALL of delegation @sid on @fh to @clientid. */
void nfs4_cb_recall(struct nfs4_server *srv, uint64_t clientid, const struct nfs4_stateid *sid,
		    const struct nfs4_fh *fh);
/**
 * nfs4_deleg_break_ino - a frontend beside NFSv4 (FUSE, NFSv3) writes
 * @ino (@write) or opens / reads it (!@write): recall the delegations on it
 * that this breaks (a writer: all; a reader: write delegations) and, if
 * @wait, wait until they are returned or revoked (bounded by the lease;
 * never from an NFSv4 worker).
 * Return: 0, or -EAGAIN (!@wait and some are still out).
 */
int nfs4_deleg_break_ino(struct nfs4_server *srv, uint64_t ino, bool write, bool wait);
/** nfs4_deleg_break_ino_until - as nfs4_deleg_break_ino for a writer, waiting until @deadline (mono ns; 0: no wait). */
int nfs4_deleg_break_ino_until(struct nfs4_server *srv, uint64_t ino, uint64_t deadline);
/**
 * nfs4_deleg_caps_revoked - the MDS takes back caps the delegations on
 * @ino stand on (@lost: the LC_CAP_* bits taken; LC_CAP_CACHE or
 * LC_CAP_ATTRS end every delegation, LC_CAP_BUFFER alone the write ones):
 * recall them, wait up to @wait_ns for DELEGRETURN, revoke what is still
 * out (RECALLABLE_STATE_REVOKED), return.  The client library writes back
 * what the holders flushed and acks the revoke after.  No lock held.
 */
void nfs4_deleg_caps_revoked(struct nfs4_server *srv, uint64_t ino, uint32_t lost, uint64_t wait_ns);
/**
 * nfs4_deleg_break_caps - as nfs4_deleg_break_ino_until for the
 * delegations the loss of @lost (LC_CAP_*) ends: all of them for
 * LC_CAP_CACHE or LC_CAP_ATTRS, the write ones for LC_CAP_BUFFER alone.
 */
int nfs4_deleg_break_caps(struct nfs4_server *srv, uint64_t ino, uint32_t lost, uint64_t deadline);
/**
 * nfs4_deleg_wait - sleep until a delegation is returned or revoked, or
 * @deadline (mono ns) passes, whichever comes first (at once when no client
 * ever sent a compound: there is no delegation to wait for).
 */
void nfs4_deleg_wait(struct nfs4_server *srv, uint64_t deadline);
/** nfs4_cb_state_name - "none", "unknown", "up", "down", "fault". */
const char *nfs4_cb_state_name(enum nfs4_cb_state st);
/** nfs4_cb_session_free_locked - drop @ses's back-channel reference (session freed). */
void nfs4_cb_session_free_locked(struct nfs4_session *ses);

#endif
