/*
 * drc.h - the duplicate reply cache (DESIGN.md section 10).
 *
 * A non-idempotent call (an NFSv4.0 compound that changes state, later the
 * NFSv3 CREATE/REMOVE/...) retransmitted after its reply was lost must get
 * the same reply, not run twice.  Entries are keyed by xid, program,
 * version, procedure, the client's address and port, and a crc32c of the
 * first csum_len bytes of the arguments (so a reused xid with different
 * arguments is a miss).
 *
 * Eviction with implied acknowledgement: on a connection-oriented transport
 * an entry may go once BOTH
 *   - a newer request arrived: the connection has handed the service a
 *     record whose last byte the kernel received after the reply's last
 *     byte was written (x->rx_parsed > e->rx_mark; offsets in the
 *     connection's receive stream, so a request that sat in a buffer while
 *     the gateway paused reading the connection, sent by the client before
 *     it could have seen the reply, does not count), and
 *   - the peer's TCP has acknowledged the reply's last byte
 *     (x->tx_acked >= e->tx_end; offsets in the send stream, from
 *     TCP_INFO's tcpi_bytes_acked), so a pipelining client whose newer
 *     request overtook a reply still in our socket buffer keeps it.
 * FreeBSD's nfsd trims its TCP cache by acknowledged sequence numbers; the
 * Linux series this follows uses the arrival of a newer request alone: the
 * two together keep the cache population, and so the chain walk of every
 * lookup, down to the replies really still in doubt.  Entries of datagram
 * transports and of connections that have closed (the retransmission comes
 * on a new connection) age out after `expiry` seconds.  In DRC_MODE_EXPIRY
 * (the A/B baseline: what knfsd did before) every entry simply lives
 * `expiry`.
 *
 * The population is bounded: at the bound the oldest completed entry of the
 * bucket (or of another bucket) is evicted, but never a "pinned" one: in
 * progress, or on a connection whose peer has not acknowledged its reply
 * (the client may not have it).  When everything is pinned the new call runs
 * uncached.  A hit moves the entry to the connection it arrived on (its
 * reply is sent again there, and that connection's ACKs release it).
 *
 * Locking: one mutex per bucket.  Under it a bucket's code takes the entry's
 * xprt->drc_lock (to link and unlink it from its connection's list: bucket
 * lock, then drc_lock, never the other way: ack_transport() drops drc_lock
 * before it takes a bucket lock), and eviction at the bound only trylocks
 * other buckets (buckets have no order among themselves).  Entries
 * are refcounted: the cache holds one while linked, a caller holds one from
 * drc_lookup() until drc_entry_put().  Each entry holds a reference on its
 * struct rpc_xprt so it can read last_recv/closed_at after the connection
 * is gone.
 *
 * USDT probes (provider "loligo"):
 *   drc_lookup(xid, verdict, chain_len, population, ns)
 *   drc_evict(xid, reason, xprt_id, age_ns)
 */
#ifndef LOLIGO_NFS_GW_RPC_DRC_H
#define LOLIGO_NFS_GW_RPC_DRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rpc_xprt;
struct rpc_call;
struct asok;
struct json_object;
struct drc;
struct drc_entry;

enum drc_mode { DRC_MODE_IMPLIED_ACK = 0, DRC_MODE_EXPIRY = 1 };

enum drc_evict_reason {
	DRC_EV_IMPLIED_ACK = 0,  /* the transport received a newer request */
	DRC_EV_EXPIRED,          /* datagram transport, or DRC_MODE_EXPIRY */
	DRC_EV_CLOSED,           /* its connection closed `expiry` ago */
	DRC_EV_SIZE,             /* the population bound */
	DRC_EV_MAX
};

enum drc_verdict {
	DRC_MISS = 0,            /* run the call; *ep is the new in-progress entry (or NULL: not cached) */
	DRC_HIT,                 /* send *reply (a copy) */
	DRC_INPROGRESS,          /* the original is still running: drop this one */
};

struct drc_params {
	unsigned int buckets;    /* rounded up to a power of two */
	unsigned int max_entries;
	uint64_t expiry_ns;
	size_t csum_len;         /* bytes of arguments checksummed */
	size_t max_reply;        /* larger replies are not kept (0: no limit) */
	enum drc_mode mode;
	uint64_t (*clock)(void); /* monotonic ns; NULL: now_mono_ns (tests fake it) */
	const char *perf_group;  /* register counters under this perf group, or NULL */
};

struct drc_key {
	uint32_t xid, prog, vers, proc;
	uint32_t flavor;         /* RPCSEC_GSS entries keep the unwrapped results only */
	uint32_t csum;
	uint32_t args_len;
	uint16_t family, port;
	uint8_t addr[16];
};

struct drc_stats {
	uint64_t hits, misses, inserts, inprogress, uncached;
	uint64_t evictions[DRC_EV_MAX];
	uint64_t population;
	uint64_t pinned;         /* in progress or reply not acknowledged by the peer */
	uint64_t size_skipped_pinned;  /* size evictions that passed over a pinned entry */
	uint64_t longest_chain;
};

/** drc_params_from_config - fill @p from the nfs_drc_* options. */
void drc_params_from_config(struct drc_params *p);

/** drc_create - an empty cache. Return: 0 or -ENOMEM / -EINVAL. */
int drc_create(const struct drc_params *p, struct drc **out);

/** drc_destroy - free every entry (dropping their transport references). */
void drc_destroy(struct drc *d);

/** drc_make_key - key of @c received on @x. */
void drc_make_key(const struct drc *d, const struct rpc_call *c, const struct rpc_xprt *x,
		  struct drc_key *k);

/**
 * drc_lookup - look the call up; on a miss insert it as in progress.
 * @x: the transport the call came on (the new entry takes a reference).
 * @ep: DRC_MISS: the new entry, or NULL if it could not be cached (every
 *      entry in progress at the size bound, or no memory): run the call
 *      uncached.  DRC_HIT: the entry (to pass to drc_reply_sent()).  The
 *      caller owns a reference on *ep; drop it with drc_entry_put().
 * @reply/@reply_len: DRC_HIT: a malloc'd copy of the cached reply.
 * Also prunes the bucket it walks (implied ACK, expiry).
 */
enum drc_verdict drc_lookup(struct drc *d, struct rpc_xprt *x, const struct drc_key *k,
			    struct drc_entry **ep, uint8_t **reply, size_t *reply_len);

/**
 * drc_finish - the call of in-progress entry @e is done: keep a copy of
 * @reply.  The caller's reference stays either way (pass it on to
 * drc_reply_sent(), then drc_entry_put()).
 * Return: 0, or -EMSGSIZE (over max_reply) / -ENOMEM: the entry was
 * dropped from the cache and counted as uncached.
 */
int drc_finish(struct drc *d, struct drc_entry *e, const uint8_t *reply, size_t len);

/** drc_abort - forget in-progress entry @e (no reply to keep) and drop the caller's reference. */
void drc_abort(struct drc *d, struct drc_entry *e);

/**
 * drc_reply_sent - the last byte of @e's reply was written to the socket.
 * @tx_end:  offset in the connection's send stream just past that byte
 *           (what x->tx_acked must reach for the peer to have it); > 0.
 * @rx_mark: bytes of the receive stream the kernel had received by then: a
 *           record ending past this arrived after the reply went out.
 * Called by the transport (ring thread); NULL @e is fine.
 */
void drc_reply_sent(struct drc_entry *e, uint64_t tx_end, uint64_t rx_mark);


/** drc_entry_put - drop a reference from drc_lookup(). NULL is fine. */
void drc_entry_put(struct drc_entry *e);

/** drc_prune - walk every bucket and evict what may go. Return: entries evicted. */
unsigned int drc_prune(struct drc *d);

/** drc_get_stats - the counters; walks every bucket (one lock at a time) to count the pinned. */
void drc_get_stats(struct drc *d, struct drc_stats *s);

/** drc_dump_json - the `drc dump` object: counters, population, settings. */
struct json_object *drc_dump_json(struct drc *d);

/**
 * drc_asok_attach - serve `drc dump` for @d on @a.  The command is
 * registered on an admin socket once; drc_destroy() detaches, after which
 * the command answers an error instead of touching freed memory.
 */
int drc_asok_attach(struct drc *d, struct asok *a);

#endif
