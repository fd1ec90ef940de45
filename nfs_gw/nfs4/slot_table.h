/*
 * slot_table.h - an NFSv4.1 session's fore-channel slot table and reply
 * cache (RFC 8881 section 2.10.6.1).
 *
 * Each slot holds the sequence id of the last request on it and, when that
 * request asked for it (sa_cachethis), its whole COMPOUND reply.  A request
 * whose seqid is the slot's + 1 is new: it is the client's implied
 * acknowledgement of the previous reply, which is freed there and then.
 * The same seqid is a retry: answered from the cache, or with
 * NFS4ERR_RETRY_UNCACHED_REP if nothing was cached, or NFS4ERR_DELAY if the
 * original is still running.  Anything else is NFS4ERR_SEQ_MISORDERED; a
 * slot number past the table is NFS4ERR_BADSLOT.
 *
 * Locking: t->lock protects every slot; held only for bookkeeping (the
 * cached reply is copied out, never used under the lock by callers).
 */
#ifndef LOLIGO_NFS_GW_NFS4_SLOT_TABLE_H
#define LOLIGO_NFS_GW_NFS4_SLOT_TABLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nfs4_slot {
	uint32_t seqid;          /* last seqid seen on this slot */
	bool used;               /* seqid is meaningful (a request was seen) */
	bool inuse;              /* a request on this slot is being served */
	bool cached;             /* reply holds that request's full reply */
	bool cachethis;          /* of the request that made the reply */
	uint32_t opcnt;          /* of the request that made the reply */
	uint8_t *reply;
	size_t reply_len;
};

struct slot_table {
	pthread_mutex_t lock;
	uint32_t nslots;
	struct nfs4_slot *slots; /* protected by lock */
	size_t cached_bytes;     /* protected by lock */
};

/* slot_table_begin() verdicts that are not NFS4 errors */
#define SLOT_NEW 0                 /* serve it; the slot is now in use */
#define SLOT_REPLAY (-1)           /* *reply is a copy of the cached reply */
#define SLOT_REPLAY_UNCACHED (-2)  /* a retry of a reply that was not kept */

int slot_table_init(struct slot_table *t, uint32_t nslots);
void slot_table_destroy(struct slot_table *t);

/**
 * slot_table_begin - the slot check of SEQUENCE.
 * @cachethis/@opcnt: of this request, to tell a retry from a false retry.
 * @reply/@len: on SLOT_REPLAY, a malloc'd copy of the cached reply.
 * Return: SLOT_NEW, SLOT_REPLAY, SLOT_REPLAY_UNCACHED, or an nfsstat4:
 * NFS4ERR_BADSLOT, NFS4ERR_SEQ_MISORDERED, NFS4ERR_DELAY (the original is
 * in progress), NFS4ERR_SEQ_FALSE_RETRY.
 */
int slot_table_begin(struct slot_table *t, uint32_t slotid, uint32_t seqid, bool cachethis, uint32_t opcnt,
		     uint8_t **reply, size_t *len);

/**
 * slot_table_end - the request begun on @slotid is answered.  @cache: keep
 * a copy of @reply (the COMPOUND4res bytes) for retries; otherwise only the
 * fact that the reply was not kept.  -ENOMEM keeps nothing (a retry then
 * gets NFS4ERR_RETRY_UNCACHED_REP).
 */
int slot_table_end(struct slot_table *t, uint32_t slotid, const uint8_t *reply, size_t len, bool cache);

/** slot_table_cached_bytes - memory held by cached replies. */
size_t slot_table_cached_bytes(struct slot_table *t);

#endif
