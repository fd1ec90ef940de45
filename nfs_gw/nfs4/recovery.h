/*
 * recovery.h - NFSv4 client records on stable storage (private to
 * nfs_gw/nfs4/), so that a restarted gateway knows who may reclaim, as
 * knfsd's nfsdcld and nfs-ganesha's rados_kv recovery backends do.
 *
 * One object per gateway, nfs4_recovery.<nfs_gateway_id>, in the data
 * pool, with one omap key per confirmed client: the hex of its client
 * owner (co_ownerid / nfs_client_id4 id), the value a versioned record
 * (nfs4_rec_encode).  A client is recorded (durably, before the reply)
 * before it can hold state it would have to reclaim: 4.0 at
 * SETCLIENTID_CONFIRM, 4.1 at RECLAIM_COMPLETE or its first OPEN; its
 * record goes when its state is gone for good (lease cancelled,
 * DESTROY_CLIENTID, replaced by a rebooted client), never at a clean stop.
 *
 * At start the previous incarnation's records are read: none, no grace
 * period; some, a grace period in which only those clients reclaim, lifted
 * early once each of them sent RECLAIM_COMPLETE (never early while a 4.0
 * client is recorded: 4.0 has no RECLAIM_COMPLETE, so, as knfsd, the
 * whole grace runs), after which the records of clients that did not come
 * back are dropped.
 *
 * Locking: rec->lock is a leaf (taken under nothing of ours but may be
 * taken with srv->lock held); never held across store I/O.
 */
#ifndef LOLIGO_NFS_GW_NFS4_RECOVERY_H
#define LOLIGO_NFS_GW_NFS4_RECOVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nfs_gw/nfs4/nfs4_xdr.h"

struct nfs4_server;
struct nfs4_client;

/* A record as stored (the value of its omap key). */
struct nfs4_rec {
	uint64_t clientid;               /* the client id of the incarnation that wrote it */
	uint32_t boot;                   /* that incarnation's id (nfs4_server.boot) */
	uint32_t minorversion;
	uint8_t verifier[NFS4_VERIFIER_SIZE];
	uint32_t flavor, uid, gid;       /* the principal */
	uint32_t owner_len;
	uint8_t owner[NFS4_OPAQUE_LIMIT];
};

#define NFS4_REC_VERSION 1
#define NFS4_REC_COMPAT 1
#define NFS4_REC_MAX (4 + 44 + NFS4_OPAQUE_LIMIT)
#define NFS4_REC_KEY_MAX 1024

/**
 * nfs4_rec_encode - @r as stored: u8 version, u8 compat, u16 body length,
 * then the body (big-endian).  @buf holds NFS4_REC_MAX.  Return: bytes.
 */
size_t nfs4_rec_encode(const struct nfs4_rec *r, uint8_t *buf);
/**
 * nfs4_rec_decode - the inverse; a newer version's unknown tail is skipped.
 * Return: 0, or -EINVAL (truncated, corrupt, or an incompatible version).
 */
int nfs4_rec_decode(const uint8_t *buf, size_t len, struct nfs4_rec *r);
/**
 * nfs4_rec_key - the omap key of a client owner: its hex; an owner too long
 * for a key is its first bytes' hex, '.', and a 64-bit hash of it all.
 * @key holds NFS4_REC_KEY_MAX + 1.
 */
void nfs4_rec_key(const uint8_t *owner, uint32_t len, char *key);

/**
 * nfs4_rec_start - read the previous incarnation's records (the gateway
 * id's object) and decide the grace period: srv->rec, and *@grace_ns (0:
 * none).  Without a filesystem (srv->lc NULL: unit tests) there is no
 * store: no records, and the configured grace runs with any client
 * reclaiming, as before records existed.  Logs what it found.
 * Return: 0 or -ENOMEM (a store error is logged, and then any client may
 * reclaim during a full grace: better than refusing one that may).
 */
int nfs4_rec_start(struct nfs4_server *srv, uint64_t *grace_ns);
/** nfs4_rec_free - free srv->rec (the records stay on the store). */
void nfs4_rec_free(struct nfs4_server *srv);

/**
 * nfs4_rec_record - record @clp durably if it is not yet (idempotent; no
 * lock held; blocks on the store).  Return: 0 or -errno (the caller
 * answers NFS4ERR_DELAY: no state without a record).
 */
int nfs4_rec_record(struct nfs4_server *srv, struct nfs4_client *clp);
/**
 * nfs4_rec_forget - @clp's state is gone for good: remove its record, if it
 * is still the one @clp wrote (a rebooted client's new record stays).  No
 * lock held; blocks on the store; errors are logged.
 */
void nfs4_rec_forget(struct nfs4_server *srv, struct nfs4_client *clp);
/**
 * nfs4_rec_may_reclaim - whether @clp's owner was recorded by the previous
 * incarnation, with the same principal (it may reclaim in the grace
 * period).  Any lock but the records' own.
 */
bool nfs4_rec_may_reclaim(struct nfs4_server *srv, const struct nfs4_client *clp);
/**
 * nfs4_rec_reclaim_complete - @clp (4.1) sent RECLAIM_COMPLETE: if every
 * recorded client now has, and none is 4.0, lift the grace period.  No lock held.
 */
void nfs4_rec_reclaim_complete(struct nfs4_server *srv, const struct nfs4_client *clp);
/**
 * nfs4_rec_tick - from the lease reaper, no lock held: once the grace
 * period is over, drop the records of clients that did not come back.
 */
void nfs4_rec_tick(struct nfs4_server *srv);

/**
 * nfs4_rec_takeover - take over the clients of gateway @id (another
 * gateway on the filesystem, dead or to be fenced; its address moves here):
 * read its records (nfs4_recovery.@id), start a grace period of
 * nfs4_grace_time for the whole gateway (our own clients' new opens and
 * locks wait too), then have the MDS evict and fence the MDS session its
 * object names (its opens, locks and caps released; a live one can no
 * longer write).  Its recorded clients then reclaim here; the grace ends
 * early once each sent RECLAIM_COMPLETE (none of them 4.0), and at its end
 * the records of those that came back are in our object and theirs is
 * empty.  In our own start's grace their clients join it; refused
 * (-EBUSY) in another takeover's, and when the session cannot be fenced
 * (the grace is then lifted, nothing taken).  @msg: what
 * happened, for the admin.  Blocks on the store and the MDS; no lock held.
 * Return: 0 or -errno.
 */
int nfs4_rec_takeover(struct nfs4_server *srv, const char *id, char *msg, size_t msglen);

#endif
