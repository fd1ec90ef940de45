/*
 * gss.h - RPCSEC_GSS (RFC 2203) on the server side, with the Kerberos v5
 * mechanism of MIT's libgssapi_krb5: krb5 (authentication), krb5i
 * (integrity) and krb5p (privacy).
 *
 * The credential of a call (msg.c decodes it into struct rpc_gss_cred):
 *
 *   rpc_gss_cred_vers_1_t { gss_proc, seq_num, service, opaque handle<> }
 *
 * gss_proc INIT / CONTINUE_INIT carry a GSS token as the NULL procedure's
 * argument and are answered here with rpc_gss_init_res { handle, major,
 * minor, seq_window, token } and, once the context is complete, a verifier
 * that is the MIC of the seq_window.  DATA calls carry a verifier that is
 * the MIC of the RPC header (xid up to the end of the credential); their
 * arguments are rpc_gss_integ_data { databody_integ<>, checksum<> } for
 * integrity and rpc_gss_priv_data { databody_priv<> } (gss_wrap) for
 * privacy, both over { seq_num, args }.  Replies carry the MIC of the
 * seq_num as verifier and their results wrapped the same way.  DESTROY
 * (a verified NULL call) drops the context.
 *
 * Contexts live in a table keyed by an opaque 16-byte handle; its size is
 * bounded (nfs_gss_max_contexts: at the bound the least recently used idle
 * context goes, and its client makes a new one after CREDPROBLEM), each
 * context ends with its ticket (gss_accept_sec_context's time_rec:
 * CTXPROBLEM after that).  The sequence window (RFC 2203 5.3.3.1) drops
 * replays and calls below the window without an answer.
 *
 * The principal is mapped once per context (rpc_gss_map_principal): a
 * user@REALM of the gateway's realm (or of nfs_gss_realms) through NSS to
 * its uid, primary gid and groups; a machine principal (nfs/, host/ or
 * root/ + a host name) to uid 0, as rpc.svcgssd/gssproxy map it for knfsd,
 * so an export's root_squash applies; anything else to the export's
 * anonymous id (anonuid/anongid), again as knfsd does with a principal
 * that has no mapping.
 */
#ifndef LOLIGO_NFS_GW_RPC_GSS_H
#define LOLIGO_NFS_GW_RPC_GSS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rpc_gss;
struct rpc_req;
struct rpc_cred;
struct xdr_enc;

enum rpc_gss_proc { RPCSEC_GSS_DATA = 0, RPCSEC_GSS_INIT = 1, RPCSEC_GSS_CONTINUE_INIT = 2, RPCSEC_GSS_DESTROY = 3 };
enum rpc_gss_service { RPC_GSS_SVC_NONE = 1, RPC_GSS_SVC_INTEGRITY = 2, RPC_GSS_SVC_PRIVACY = 3 };

#define RPCSEC_GSS_VERS_1 1
#define RPCSEC_GSS_CREDPROBLEM 13
#define RPCSEC_GSS_CTXPROBLEM 14
#define RPCSEC_GSS_MAXSEQ 0x80000000u
#define RPC_GSS_MAX_HANDLE 32

/* Pseudo-flavors (RFC 2623 section 2.1; what MOUNT and SECINFO list). */
#define RPC_FLAVOR_KRB5 390003u
#define RPC_FLAVOR_KRB5I 390004u
#define RPC_FLAVOR_KRB5P 390005u

/* The decoded RPCSEC_GSS credential of a call (pointers into the record). */
struct rpc_gss_cred {
	uint32_t proc, seq, service;
	const uint8_t *handle;
	uint32_t handle_len;
	size_t hdr_len;                  /* bytes of the record the header MIC covers */
	const uint8_t *verf;             /* the verifier's body */
	uint32_t verf_len;
};

struct rpc_gss_params {
	char keytab[1024];               /* "": the default keytab (KRB5_KTNAME) */
	char principal[256];             /* "": nfs/<hostname> */
	char realms[512];                /* user realms besides the default one, ',' or ' ' separated */
	unsigned int max_contexts;
	unsigned int window;             /* sequence window (1..1024) */
};

/** rpc_gss_params_from_config - fill @p from the nfs_gss_* options. */
void rpc_gss_params_from_config(struct rpc_gss_params *p);

/**
 * rpc_gss_create - acquire the acceptor credential from the keytab now, so
 * a bad keytab or principal stops the daemon with @err saying why.
 * Return: 0, -EINVAL (with @err), -ENOMEM.
 */
int rpc_gss_create(const struct rpc_gss_params *p, struct rpc_gss **out, char *err, size_t errlen);
void rpc_gss_destroy(struct rpc_gss *g);

/** rpc_gss_prune - drop the contexts whose ticket ended (the service's tick). */
void rpc_gss_prune(struct rpc_gss *g);

/** rpc_gss_contexts - contexts in the table (tests, dumps). */
unsigned int rpc_gss_contexts(struct rpc_gss *g);

/* What rpc_gss_accept() decided about an RPCSEC_GSS call. */
enum rpc_gss_verdict {
	RPC_GSS_DISPATCH = 0,    /* DATA, verified: args unwrapped into req->call, cred mapped */
	RPC_GSS_REPLIED,         /* answered in @e (INIT, CONTINUE_INIT, DESTROY) */
	RPC_GSS_DROP,            /* replay or below the window: send nothing */
	RPC_GSS_AUTH_ERROR,      /* answer AUTH_ERROR with *@why */
	RPC_GSS_GARBAGE,         /* verified header, undecodable body: GARBAGE_ARGS (with verifier) */
};

/*
 * Per call state (in struct rpc_req): the context (a reference), the
 * service and the sequence number the reply must carry, and the unwrapped
 * arguments.
 */
struct rpc_gss_req {
	struct rpc_gss *g;
	struct gss_sctx *ctx;
	uint32_t seq, service;
	void *plain;                     /* malloc'd unwrapped arguments (privacy) */
};

/**
 * rpc_gss_accept - authenticate @req (cred flavor RPCSEC_GSS).  @e holds
 * only the record mark.  On RPC_GSS_DISPATCH and RPC_GSS_GARBAGE the
 * caller answers with rpc_gss_reply_accepted() and, for SUCCESS, wraps
 * the results with rpc_gss_wrap(); rpc_gss_req_done() at the end.
 */
enum rpc_gss_verdict rpc_gss_accept(struct rpc_gss *g, struct rpc_req *req, struct xdr_enc *e, uint32_t *why);

/** rpc_gss_reply_accepted - the accepted reply header with the MIC of the seq_num as verifier. */
void rpc_gss_reply_accepted(struct rpc_req *req, struct xdr_enc *e, uint32_t stat);

/** rpc_gss_body_reserve - bytes to reserve after the accept stat before the results (0 or 8). */
size_t rpc_gss_body_reserve(const struct rpc_req *req);

/**
 * rpc_gss_wrap - the results are the bytes from @body_off (rpc_gss_body_reserve()
 * bytes after the accept stat) to the end of @e: wrap them for integrity
 * or privacy.  Return 0 or -errno (then answer SYSTEM_ERR).
 */
int rpc_gss_wrap(struct rpc_req *req, struct xdr_enc *e, size_t body_off);

/** rpc_gss_req_done - drop the call's context reference and buffers. */
void rpc_gss_req_done(struct rpc_req *req);

/**
 * rpc_gss_decode_cred - parse an RPCSEC_GSS credential body (msg.c).
 * Return 0 or -EBADMSG.
 */
int rpc_gss_decode_cred(const uint8_t *body, uint32_t len, struct rpc_gss_cred *gc);

/**
 * rpc_gss_map_principal - @name ("user@REALM", "nfs/host@REALM") to @cr
 * (uid, gid, groups; cr->anon set when nothing maps it).  @default_realm
 * and @realms (extra accepted user realms) decide which user principals
 * are looked up in NSS.  Exposed for tests.
 */
void rpc_gss_map_principal(const char *name, const char *default_realm, const char *realms, struct rpc_cred *cr);

/*
 * ---- the NFSv4.1 back channel (RFC 8881 2.10.8.3, 18.33, 18.36) ----------
 *
 * A 4.1 client may ask for callbacks under RPCSEC_GSS with gss_cb_handles4
 * { gcbp_service, gcbp_handle_from_server, gcbp_handle_from_client }: the
 * server reuses the context the client made on the fore channel (named by
 * handle_from_server, a handle we gave out), puts handle_from_client in
 * the callbacks' credential, and signs and wraps them with that context as
 * the service says.  No context is created by the server.  The calls have
 * sequence numbers of their own (a counter per context, separate from the
 * window of the client's calls); each reply's verifier must be the MIC of
 * the call's seq_num.
 */

/**
 * rpc_gss_ctx_get - a reference on the complete, unexpired context @h names
 * if its principal is @princ (rpc_cred.gss_princ), else NULL.
 */
struct gss_sctx *rpc_gss_ctx_get(struct rpc_gss *g, const uint8_t *h, uint32_t len, uint64_t princ);
/** rpc_gss_ctx_hold - another reference on @c. */
void rpc_gss_ctx_hold(struct rpc_gss *g, struct gss_sctx *c);
/** rpc_gss_ctx_put - drop a reference from rpc_gss_ctx_get()/hold() (NULL: nothing). */
void rpc_gss_ctx_put(struct rpc_gss *g, struct gss_sctx *c);
/** rpc_gss_ctx_alive - @c still in the table (not destroyed, evicted or pruned) and unexpired. */
bool rpc_gss_ctx_alive(struct rpc_gss *g, struct gss_sctx *c);

struct rpc_call_hdr;
struct rpc_reply;

/**
 * rpc_gss_call_encode - a CALL record in @e (record mark reserved, filled
 * in by rpc_reply_end()): the header of @h with the credential
 * { DATA, seq, @service, @handle } and the MIC of the header as verifier,
 * then @args (@args_len bytes of XDR; may be 0) as @service says (plain,
 * rpc_gss_integ_data or rpc_gss_priv_data).  *@seq: the seq_num used.
 * Return 0, -EKEYEXPIRED (context gone or expired: the path is down),
 * -EIO (GSS failed), -EINVAL.
 */
int rpc_gss_call_encode(struct rpc_gss *g, struct gss_sctx *c, struct xdr_enc *e, uint32_t xid,
			const struct rpc_call_hdr *h, const uint8_t *handle, uint32_t handle_len, uint32_t service,
			const uint8_t *args, size_t args_len, uint32_t *seq);

/**
 * rpc_gss_reply_check - the reply @rr (decoded from the record) to the call
 * made with seq_num @seq: its verifier must be RPCSEC_GSS and the MIC of
 * @seq.  For an accepted SUCCESS under integrity or privacy the results are
 * unwrapped (checksum, seq_num) and rr->res/res_len point at them (*@plain:
 * a malloc'd buffer to free, or NULL).  Return 0, -EBADMSG (verifier or
 * body does not verify: never trust the reply), -EKEYEXPIRED.
 */
int rpc_gss_reply_check(struct rpc_gss *g, struct gss_sctx *c, uint32_t seq, uint32_t service,
			struct rpc_reply *rr, void **plain);

#endif
