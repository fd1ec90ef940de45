/*
 * mds.h - private to mds/: the metadata server's in-memory model (the
 * types every layer shares), the names of its objects and the inode blob
 * codec.  Each layer's functions are declared in a header of its own
 * (mdcache.h, journal.h, locker.h, ...); a file includes the headers of the
 * layers it calls.
 *
 * The shape (one paragraph per file):
 *  - net.c: a TCP listener and event loops (mds_net_loops epoll threads;
 *    0: one reader thread per connection).  A loop decodes the frames of
 *    its ready connections (loligo_proto) and runs requests under the
 *    namespace lock (mds->lock), the way Ceph's MDS serialises on mds_lock:
 *    the namespace work per request is a few microseconds, the expensive
 *    parts (decode, encode, send, the journal write) run outside the lock;
 *    a request that must wait for the journal's space is held, not waited
 *    for.
 *  - mdcache.c: inodes, directories and dentries in memory, loaded lazily
 *    from the store ("<ino hex>.dir" objects, omap name -> dentry with the
 *    inode embedded for primary links), and the edits that put changes back;
 *    mdcache_codec.c: those records' encodings; mdcache_replay.c: mkfs, the
 *    tables loaded at start, journal replay into memory.
 *  - server.c: the POSIX semantics of every op (permissions, nlink, rename).
 *  - session.c: sessions, the reconnect phase, completed-request tables
 *    (exactly-once).  request.c: the request pipeline (admit, run under
 *    mds->lock, answer UNSAFE then SAFE, park for revokes).
 *  - prealloc.c: inode numbers preallocated to each session and journaled
 *    with it, so that a replayed create gets exactly the ino it had.
 *  - journal.c: every mutation is a list of omap edits; the journal writes
 *    them to append-only segment objects with group commit and sends SAFE
 *    replies when a write is durable; journal_replay.c replays on start-up
 *    and journal_expire.c applies sealed segments to the objects
 *    ("expire") before moving the header's expire position past them.  A failing write makes the MDS read-only
 *    until a retry succeeds.  journal_fmt.c: the checksummed, sequenced
 *    on-disk format and the checker that refuses a damaged journal
 *    (journal_int.h); journal_tool.c: loligo-mds --journal-inspect and
 *    journal export/import/reset.
 *  - locker.c: capabilities: who caches what, revokes before conflicting
 *    changes, cap flushes, reconnect, orphans (open, unlinked); lease.c:
 *    dentry leases; park.c: requests waiting for the acks, parked off the
 *    loops (or reader threads).
 *  - flock.c: file locks (fcntl byte ranges, flock) of every client, their
 *    waits, deadlock detection, re-assertion after a restart (not journaled).
 *  - blocklist.c: evicted clients kept out (journaled, with expiry), and
 *    fenced from the data store (rados blocklist / the local store's fence).
 *  - purge.c: the journaled queue of unlinked files whose data objects the
 *    MDS removes after mds_purge_delay, on a thread of its own, in slices.
 *  - admin.c: admin-socket commands; main.c: start-up and shutdown;
 *    layers.c: the order of the layers, and the ops tables through which a
 *    lower one calls up.
 *
 * USDT probes (provider loligo_mds): request_start(tid, op, flags),
 * request_unsafe(tid, op, start_ns), request_done(tid, op, result) for
 * reads, journal_write(entries, bytes, ns).
 *
 * The lazy loads are safe because an object can only be stale in the store
 * while its newer state is in memory: mdcache_trim() evicts only directories
 * whose journaled changes have all expired into their objects (see
 * mdcache.c).
 *
 * Lock order (docs/LOCKING.md has every process's), outermost first; a
 * lock may be taken while holding any lock above it, never the other way:
 *
 *   mds->lock                  the namespace, sessions, caps, the locker
 *     conn->send_lock          one connection's output
 *       j->lock                the journal's queue (journal_priv.h)
 *       mds->flush_lock        the flusher's list
 *     plock                    the purge thread's wake-ups (purge.c)
 *   j->expire_lock             one expiry at a time (journal_priv.h)
 *     j->hdr_lock              held across a header write
 *     j->seg_lock              the sealed segments
 *     x->lock                  one japply's ops in flight
 *   mds->keys_admin_lock       one auth admin command, across its keyring write
 *     mds->keys_lock           (a leaf otherwise; also under mds->lock, where
 *                              authcaps.c copies a session's caps)
 *   leaves, taken alone: mds->conns_lock, mds->space_lock, mds->keys_lock,
 *     mds->tick_lock, an event loop's l->lock (net.c: what the acceptor
 *     hands it, its eventfd; also under j->lock, where the journal's
 *     space_freed hook wakes a loop); the store's locks are leaves under all of these, and
 *     so are common/slab.c's class locks (the cache's allocations) and
 *     mds->bigbufs.lock (common/bufpool.h: READDIR's buffers)
 *
 * Checked in the lockdep builds (common/lockdep.h): every static _locked
 * helper names its lock and asserts it with lockdep_assert_held().
 */
#ifndef LOLIGO_MDS_MDS_H
#define LOLIGO_MDS_MDS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <urcu/list.h>

#include "common/bufpool.h"
#include "common/perf.h"
#include "common/xarray.h"
#include "mds_proto/proto.h"
#include "store/store.h"

struct journal;
struct sreplay;
struct asok;
struct json_object;
struct net_ops;
struct mdcache_hooks;
struct journal_hooks;
struct locker_ops;
struct flock_ops;
struct dec;
struct mds;

/* ---- namespace -------------------------------------------------------- */

/*
 * What the cache holds, in bytes, per kind (mdcache.c): every allocation of
 * the namespace and the locker adds what malloc really gave it
 * (malloc_usable_size, plus the allocator's word of header) when it is made
 * and takes it away when it is freed, so `cache status` and the perf
 * counters (mds_mem) are what the heap holds for the cache, not an
 * estimate; mds_cache_memory_limit is enforced on their sum (mdcache_trim,
 * locker_recall_tick).  Not counted: the xarrays' nodes (inode and cap
 * indexes, ~9 bytes an entry with dense inode numbers), the journal's
 * buffers and the sessions' completed-request tables.  One MDS per
 * process: the counters are the process's.
 */
enum mds_mem_kind {
	MDS_MEM_INODE,        /* struct minode */
	MDS_MEM_INODE_DATA,   /* symlink targets, data extents */
	MDS_MEM_XATTR,        /* struct mxattr, names, values */
	MDS_MEM_DENTRY,       /* struct mdentry with its name */
	MDS_MEM_DIR,          /* struct mdir and its hash buckets */
	MDS_MEM_CAP,          /* struct mcap */
	MDS_MEM_LEASE,        /* struct mlease */
	MDS_MEM_NKINDS
};
/* the counters themselves and their helpers: mdcache.h */

struct mxattr {
	struct mxattr *next;
	char *name;
	uint8_t *val;
	uint32_t len;
};

struct mdir;
struct mlease;
struct mgather;

struct mdentry {
	struct mdentry *hnext;        /* name hash chain */
	struct mdir *dir;
	uint64_t cookie;              /* readdir position; unique in the dir, never reused */
	uint64_t ino;
	uint32_t dtype;               /* S_IFMT bits of the target */
	bool remote;                  /* target lives in the inode table (hard-linked) */
	uint16_t gather;              /* park.c: requests waiting to change it (no new leases) */
	struct mlease *leases;        /* lease.c: sessions that cache this name */
	uint64_t lease_id;            /* lease.c: key of its leases in the sessions' lease_index
				       * (0: none yet); moves with the leases (locker_dentry_move) */
	uint32_t hash;
	uint32_t namelen;
	struct mdentry *cl, *cr;      /* dir->by_cookie: children in the cookie treap */
	char name[];
};

/*
 * One fragment of a directory (mdcache.c, "Fragments"): the dentries whose
 * cookies' key (cookie - 2^61, sequence-number cookies: 0) has @value in
 * its top @bits of 61 bits, stored in object "<ino hex>.<bits>-<value
 * hex>.dir" ("<ino hex>.dir" itself while the directory has one fragment,
 * bits 0).  The leaves of a directory are kept sorted by @lo, and cover
 * [0, 2^61) without a gap: cookie order is fragment order.
 */
struct mfrag {
	uint64_t lo;                  /* the first key of its range: value << (61 - bits) */
	uint64_t value;
	uint32_t bits;
	uint32_t count;               /* its dentries in memory (all of them once loaded) */
	bool loaded;                  /* its object was read: every dentry of it is in memory */
	uint64_t last_used_ns;        /* for cache trimming */
};

struct mdir {
	uint64_t ino;
	struct mdentry **buckets;
	uint32_t nbuckets;
	uint32_t count;
	/* cookie -> mdentry, for readdir order: a treap through the dentries
	 * (mdcache.c mdir_cookie_*), ~16 bytes an entry.  Not an xarray: the
	 * cookies are hashes spread over [2^61, 2^62), where a 64-ary radix
	 * tree spends ~4.5 KiB of nodes per entry (issue 21.3). */
	struct mdentry *by_cookie;
	uint64_t next_cookie;
	uint64_t cookie_reserved;     /* next_cookie may go up to this before "/meta" is journaled */
	uint64_t last_jseq;           /* journal entry that last edited its object (0: none this run) */
	uint64_t last_used_ns;        /* for cache trimming */
	struct mfrag *frags;          /* the leaf fragments, by lo (one of bits 0: not fragmented) */
	uint32_t nfrags;
	bool split_pending;           /* a fragment grew past mds_dir_split_size: split at txn_finish */
};

struct minode {
	struct mdsp_inode a;
	/* regular files: what the data objects hold (a.blocks is its byte count,
	 * kept with it; empty and not used while a.blocks is MDSP_BLOCKS_UNKNOWN):
	 * cap flushes add and take away (locker.c), truncates cut it
	 * (server.c); journaled in the inode blob */
	struct mdsp_extset ext;
	char *symlink;
	struct mxattr *xattrs;
	uint32_t xattr_bytes;
	struct mdentry *primary;      /* NULL for the root, table and stray inodes */
	bool in_table;                /* stored in the inode table (has been hard-linked) */
	bool in_stray;                /* an orphan: no link left, open somewhere ("mds_stray") */
	bool linkable;                /* an O_TMPFILE file made without O_EXCL, never linked: a LINK
				       * may give it its first name (the kernel's I_LINKABLE) */
	bool dirty;                   /* in the current txn's dirty list */
	bool anchor_dirty;            /* primary dentry moved: journal its anchor */
	/* a regular file in the inode table (hard-linked): the directory of
	 * the link whose tree counts its bytes in rbytes (0: none, that link
	 * went); journaled in the inode blob (rstat.c) */
	uint64_t rparent;
	/* bytes of its symlink and extents (MDS_MEM_INODE_DATA) and of its
	 * xattrs (MDS_MEM_XATTR) as last counted (mdcache_inode_mem_sync) */
	uint32_t mem_data, mem_xattr;
	struct cds_list_head caps;    /* locker.c: struct mcap of each session caching it */
	struct mgather *gather;       /* park.c: cap bits requests wait to revoke (NULL: none) */
};

/*
 * One session's capabilities on one inode (locker.c).  @issued is what the
 * client may hold now, @pending what it is to keep once the revoke in
 * flight (revoke_seq) is acked: issued ^ pending are the bits being
 * revoked.  No bit is added while a revoke is in flight, so an ack of
 * revoke_seq (or later) means the client holds no more than pending.
 * Protected by mds->lock, like everything in the namespace.
 */
struct mcap {
	struct cds_list_head in_item;      /* in->caps */
	struct cds_list_head s_item;       /* s->caps */
	struct cds_list_head revoke_item;  /* m->revoking while revoke_seq != 0 */
	struct minode *in;
	struct session *s;
	uint32_t issued, pending, wanted;  /* MDSP_CAP_* */
	uint64_t seq;                      /* last sequence sent to the client */
	uint64_t issue_seq;                /* the last grant in a reply or that added bits (Ceph's last_issue) */
	uint64_t revoke_seq;               /* outstanding revoke (0: none) */
	uint64_t revoke_ns;                /* mono ns it was sent */
	bool recall;                       /* the revoke in flight is a recall for cache pressure
					    * (locker_recall_tick), not for a conflicting request */
};

/* One session's lease on one dentry: it caches that the name maps to its
 * target.  Same rules as struct mcap. */
struct mlease {
	struct mlease *next;               /* dn->leases */
	struct cds_list_head s_item;       /* s->leases */
	struct cds_list_head revoke_item;  /* m->revoking_leases while revoke_seq != 0 */
	struct mdentry *dn;
	struct session *s;
	uint64_t seq;
	uint64_t revoke_seq, revoke_ns;
	bool recall;                       /* as struct mcap.recall */
};

/* Edits of one mutation, journaled as one entry (see journal.c). */
enum edit_op { EDIT_SET = 1, EDIT_RM = 2, EDIT_RMRANGE = 3, EDIT_CLEAR = 4, EDIT_REMOVE = 5 };

/*
 * What a request has to wait for before it may run (locker.c): the inodes
 * whose caps other sessions must give up, and the dentries whose leases.
 * Filled by the ops through locker_want_*(); a request with any entry left
 * after its checks is parked until the acks come.
 */
#define LOCKER_GATHER_MAX 8
#define LOCKER_WAIT (-ERESTART)       /* an op's "wait for revokes" result; never on the wire */
struct mwaiter;
struct locker_gather {
	int n;
	struct {
		uint64_t ino;                 /* inode, or the directory of @name */
		uint32_t mask;                /* cap bits (0 for a dentry) */
		char *name;                   /* dentry name (malloc'd) or NULL */
	} e[LOCKER_GATHER_MAX];
	struct mwaiter *w;            /* the parked request being run again (NULL: first run) */
	bool overflow;                /* more than LOCKER_GATHER_MAX: wait for any ack */
};

/* A request parked until revokes are acked (park.c).  Protected by mds->lock. */
struct mwaiter {
	struct mwaiter *next;         /* m->waiters */
	struct conn *conn;            /* holds a ref: where the reply goes */
	uint64_t sid;                 /* the session it ran for */
	struct mdsp_msg msg;          /* the request (owned) */
	uint64_t t0, parked_ns;
	struct locker_gather g;       /* what it waits for (names owned) */
	bool ready;                   /* something it waits for changed: run it again */
	bool queued;                  /* on m->waiters */
	/* park.c, keeping a session's resent requests in order: its arrival
	 * number in the session (session.req_seq), and whether it is on the
	 * session's ordered list (session.ordered, by seq) */
	uint64_t seq;
	bool ordered;
	bool caps_done;               /* a parked caps message applied ahead of its turn (locker.c) */
	struct mwaiter *order_next;
};

#define TXN_INLINE_DIRTY 16
struct txn {
	struct mdsp_buf b;            /* u32 count placeholder + edits */
	uint32_t n;
	/* the inodes to journal: a handful, plus every ancestor of a change
	 * whose recursive statistics move (rstat.c), so it grows past the
	 * inline array on deep trees (txn_free frees it) */
	struct minode **dirty;
	struct minode *dirty_inline[TXN_INLINE_DIRTY];
	int ndirty, dirty_cap;
	struct minode *dead[4];       /* inodes whose last link went: removed at commit */
	int ndead;
	struct mdir *dirs[16];        /* directory objects the edits touch */
	int ndirs;
	struct session *s;            /* the session the request runs for (NULL: none) */
	struct locker_gather g;       /* revokes the request waits for (park.c) */
	struct txn_listed *listed;    /* READDIR: the dentry and inode of each rep->entries[i], so
				       * locker_fill_reply need not look them up again (in the reply's
				       * entry block; valid while mds->lock is held since op_readdir) */
	size_t entries_cap;           /* READDIR: the bytes of the reply's entry block (0: none), which
				       * goes back to mds->bigbufs after the reply is sent */
};

/* What op_readdir listed, one per reply entry (struct txn.listed). */
struct txn_listed {
	struct mdentry *dn;
	struct minode *in;
};

/* ---- sessions and connections ---------------------------------------- */

/* How far a connection got with AUTH (mds/auth.c). */
enum conn_auth {
	CONN_AUTH_NONE = 0,           /* no HELLO yet: nothing but AUTH HELLO is taken */
	CONN_AUTH_CHALLENGED,         /* CHALLENGE sent; PROOF expected from a client with a key */
	CONN_AUTH_UNAUTHENTICATED,    /* no key (auth_required off): sessions without MACs */
	CONN_AUTH_DONE,               /* proven: every frame carries a MAC */
};

/* What a connection's reader knows about its receive deadlines (net.c). */
struct rdstate {
	uint64_t last_msg_ns;         /* when the last whole message arrived (or accept) */
	uint64_t frame_until;         /* the frame in progress must be complete by then (0: none) */
	bool had_session;             /* a session was bound to it: no open deadline any more */
};

struct netloop;

struct conn {
	struct mds *mds;
	int fd;
	char peer[64];                /* "addr:port" for log lines */
	char peer_addr[48];           /* the address alone: per-peer limits; read-only after accept */
	_Atomic int ref;
	pthread_mutex_t send_lock;
	uint64_t out_seq;             /* protected by send_lock */
	struct mdsp_mac *tx_mac;      /* protected by send_lock: MAC key mds -> client, once authenticated */
	bool dead;                    /* protected by send_lock */
	struct mdsp_buf outq;         /* protected by send_lock: bytes the socket did not take yet */
	bool corked;                  /* protected by send_lock: the reader is working through what it
				       * read; its replies gather in cork until it is done (net.c) */
	struct mdsp_buf cork;         /* protected by send_lock: those replies, whole frames */
	size_t outq_off;              /* protected by send_lock: bytes of outq already sent */
	uint64_t drain_deadline_ns;   /* protected by send_lock: outq must be empty by then */
	pthread_t thread;
	struct conn *next;            /* protected by mds->conns_lock */
	bool exited;                  /* protected by mds->conns_lock: reader is done */
	/* net_stop closes it, its peer did not (no end of file was waiting):
	 * its session is not marked disconnected (session_conn_closed) */
	_Atomic bool closed_by_stop;
	struct conn *fnext;           /* protected by mds->flush_lock */
	bool on_flush_list;           /* protected by mds->flush_lock: the flusher has it (queued or polling) */
	uint64_t accepted_ns;         /* set before the reader starts, then read-only */
	uint64_t session_id;          /* protected by mds->lock; 0: none */
	/* the name its AUTH HELLO claims, published before the key of the name
	 * is looked up, so that a key removed, replaced or created finds every
	 * connection that may hold its old standing (auth.c cut_name);
	 * protected by mds->conns_lock ("" before HELLO) */
	char claimed_name[MDSP_AUTH_NAME_MAX + 1];
	bool claimed_keyless;         /* protected by mds->conns_lock: ... and offered no key */
	/* the reader thread's own (nobody else touches them): */
	enum conn_auth auth;
	char auth_name[MDSP_AUTH_NAME_MAX + 1];
	uint8_t cnonce[MDSP_NONCE_LEN], snonce[MDSP_NONCE_LEN];
	uint8_t session_secret[MDSP_KEY_LEN]; /* CONN_AUTH_DONE: what a session opened here gets */
	enum mdsp_mac_alg mac_alg;    /* the frame MACs chosen at HELLO (MDSP_AUTH_GMAC) */
	struct mdsp_mac *rx_mac;      /* MAC key client -> mds, once authenticated */
	uint64_t in_seq;              /* seq of the last frame received */
	uint8_t *rbuf;                /* what one recv brought, not yet parsed */
	size_t rcap, rstart, rend;
	bool rdrained;                /* the last recv into rbuf took less than it could: the
				       * socket was empty then, so wait before the next recv */
	struct rdstate rd;            /* its deadlines */
	/* served by an event loop (mds_net_loops) instead of a thread of its own */
	struct netloop *loop;         /* read-only after accept */
	struct conn *lnext;           /* the loop thread's own list of its connections */
	uint32_t rd_need;             /* a frame in progress: its whole length, once its header arrived */
	struct mdsp_msg *held;        /* a request the loop holds until the journal has space */
	struct jwaiter *held_w;       /* ... listed among the journal's throttled requests */
	struct conn *hnext;           /* the loop's list of connections holding one */
};

enum session_state { SESSION_OPEN = 1, SESSION_STALE = 2, SESSION_CLOSED = 3 };

/* inode numbers [start, start + len) preallocated to a session (prealloc.c) */
struct ino_range {
	uint64_t start, len;
	bool deleg;     /* told to the client (MDSP_REQ_WANT_INOS): it names them in want_ino,
			 * the MDS never picks them itself; journaled (session record v5) */
	bool stale;     /* delegated before the session's last reconnect (or the MDS's
			 * restart): the client forgot the range, only its requests resent
			 * with an ino it had taken use it; the first dropped for room */
	uint64_t stale_tid;     /* stale: no request above this tid names it (the RECONNECT's
				 * deleg_tid); freed once the session's oldest_tid passes
				 * it.  0: not known (kept).  In memory only */
};
#define MDS_PREALLOC_RANGES 16

struct completed {
	uint64_t tid;
	uint64_t jseq;                /* journal entry that made it durable */
	uint8_t *frame;               /* encoded SAFE reply frame */
	size_t len;
};

/* session.flags (journaled with the record) */
#define SESSION_F_MISSED_RECONNECT 0x1   /* did not come back in a reconnect phase: not waited for again */
#define SESSION_F_DISCONNECTED     0x2   /* its connection closed: everything it did is journaled before this */
#define SESSION_F_HELD_LOCKS       0x4   /* held file locks when its connection closed: the reconnect
					  * phase waits for it (it re-asserts them, flock.c) */

struct flk_session;

/* All fields protected by mds->lock. */
struct session {
	uint64_t id;
	char *client_name;
	uint8_t uuid[16];
	uint8_t secret[MDSP_KEY_LEN]; /* proven at RECONNECT; all zeros: none (an older record) */
	char auth_name[MDSP_AUTH_NAME_MAX + 1]; /* "" when opened without authentication */
	/* authcaps.c: auth_name's caps mds as of keys_gen authcaps_gen (0:
	 * not read yet); NULL: everything (no caps, or no auth_name) */
	struct mdsp_mdscaps *authcaps;
	uint64_t authcaps_gen;
	char peer_addr[48];           /* address it was opened from: mds_max_sessions_per_peer */
	uint32_t flags;               /* SESSION_F_* */
	enum session_state state;
	struct conn *conn;            /* holds a ref; NULL while disconnected */
	uint64_t last_renew_ns;
	uint64_t renew_seq;
	struct xarray completed;      /* tid -> struct completed */
	uint64_t ncompleted;
	uint64_t trimmed_below;       /* completed tids < this were trimmed in memory */
	uint64_t trimmed_stored;      /* ... and in the store (journaled) */
	bool warned_completed;
	bool replay_pending;          /* restored at start-up, has not finished replaying */
	uint64_t nreq;
	/* park.c: requests are numbered as they arrive (req_seq); a resent
	 * request (REPLAY, RETRY) that parks, and every later request of the
	 * session while one does, wait on @ordered (sorted by seq) and run
	 * only when no earlier one is left there (Ceph's clientreplay runs a
	 * client's replays one at a time) */
	uint64_t req_seq;
	struct mwaiter *ordered;
	/* its first request that is not a REPLAY came while a REPLAY waited
	 * on @ordered: its replay ends once none does (session.c) */
	bool replay_deferred;
	/* unused inos preallocated to the session, sorted, disjoint; journaled
	 * in the session record by every create (prealloc.c) */
	struct ino_range prealloc[MDS_PREALLOC_RANGES];
	uint32_t nprealloc;
	/* the client's metadata from its last OPEN or RECONNECT (host name,
	 * mount point, version: `session ls`); not journaled */
	struct mdsp_meta *meta;
	uint32_t nmeta;
	/* locker.c */
	struct cds_list_head caps;    /* struct mcap.s_item */
	struct xarray cap_index;      /* locker.c: the same caps by inode number (cap_find) */
	struct xarray lease_index;    /* locker.c: the leases by mdentry.lease_id (lease_find) */
	struct cds_list_head leases;  /* struct mlease.s_item */
	uint64_t ncaps, nleases;
	uint64_t lease_seq;           /* last lease sequence handed out */
	bool reconnected;             /* sent RECONNECT (or OPEN) since this MDS started */
	struct flk_session *flk;      /* flock.c: its file locks and waits (NULL: none known, e.g.
				       * restored at start and not re-asserted yet) */
	char *store_addr;             /* its data-store instance (fenced at eviction); journaled */
	/* what its last renewal said of its operations blocked past the client's
	 * client_op_warn_s (health MDS_CLIENT_SLOW_OPS); not journaled */
	uint32_t slow_ops;
	char *slow_op;
	/* locker.c locker_recall_tick (cache pressure, Ceph's recall_client_state):
	 * recall revokes of its caps and leases not answered yet, what was
	 * recalled lately (a count decaying with half-life
	 * mds_recall_max_decay_rate: Ceph's recall_caps), and totals */
	uint64_t recall_inflight;
	double recall_decayed;
	uint64_t recall_decayed_ns;
	uint64_t recalled, recall_answered;
};

/* An action the journal runs once the entry it rides with is durable. */
struct jitem {
	struct jitem *next;
	uint64_t jseq;
	struct conn *conn;            /* holds a ref */
	uint64_t sid;                 /* send via the session's current conn if it has one */
	struct mdsp_buf frame;        /* frame to send (seq and crc patched at send) */
	uint64_t start_ns;            /* for latency of SAFE replies */
	uint32_t op;                  /* request op, 0 for session frames */
	uint64_t tid;                 /* request tid (`ops`) */
};

/* A data pool a layout may name (id 0 is the first, mds->data). */
struct mds_data_pool {
	uint32_t id;
	char *name;
	struct store_pool *p;         /* opened at its first purge (NULL until then) */
};

struct mds {
	pthread_mutex_t lock;         /* the namespace lock: everything below unless noted */
	struct store *st;
	struct store *data_st;        /* local backend: the data store the clients share (NULL: data in st) */
	struct store_pool *meta, *data;
	char *fs_name, *meta_pool_name, *data_pool_name, *store_path;
	/* data pools after the first (`fs add_data_pool`, fsset.c): file layouts
	 * name them by id; kept in mds_table "data_pools" ("ID=NAME" lines) */
	struct mds_data_pool *data_pools;
	uint32_t ndata_pools;

	struct xarray inodes;         /* ino -> minode */
	struct xarray dirs;           /* ino -> mdir (loaded directories) */
	struct xarray sessions;       /* id -> session */
	uint64_t nsessions;
	struct minode *root;
	uint64_t next_ino, ino_reserved;
	uint64_t next_sid;
	uint64_t nfiles;              /* inodes in the filesystem (statfs) */
	/* some directory loaded or changed since the start has a quota: until
	 * then rstat.c's quota walks are skipped (every cached inode's
	 * ancestors were loaded before it, so none was missed) */
	bool quotas_seen;
	/*
	 * standby-replay (standby_replay.c): the journal entry being applied.
	 * Replay stamps the directories it edits with it (last_jseq), so the
	 * follower may trim the ones the active has expired since, and notes
	 * the primary names it removes (replay_unlinked) so that inodes left
	 * without a name can go at the entry's end (mdcache_replay_sweep).
	 * 0 in a takeover's replay: nothing is trimmed before its journal
	 * expires (journal_clean_below).  Protected by lock.
	 */
	uint64_t replay_stamp;
	uint64_t *replay_unlinked;
	uint32_t nreplay_unlinked, replay_unlinked_cap;
	struct store_space space;     /* the data store's, for statfs; protected by space_lock */
	bool space_known;             /* protected by space_lock */
	pthread_mutex_t space_lock;   /* a leaf */
	uint64_t ninodes_cached, ndirs_cached;
	uint32_t object_size;
	/* the filesystem's limit (mds_table, set at mkfs, changed by `fs set`,
	 * journaled): written under lock, read without it by hot paths */
	_Atomic uint64_t max_file_size;
	/* `fs set` settings kept with the filesystem (mds_table, journaled;
	 * fsset.c); written under lock.  The *_ms ones are 0 when never set
	 * (the config file's value counts), standby_wanted is value + 1. */
	_Atomic bool refuse_client_session;
	uint64_t fs_session_timeout_ms, fs_session_autoclose_ms, fs_standby_wanted;
	uint8_t cookie_key[16];       /* readdir cookies' SipHash key (mds_table cookie_key0/1); read-only once serving */
	bool have_cookie_key;
	bool data_indexed;            /* the data pool's files keep object indexes (store_file_pool_indexed) */
	uint64_t epoch;
	uint64_t start_real_ns;
	bool replaying;
	/* reconnect phase after a restart: mutations other than replays wait
	 * until every restored session has replayed, or until the deadline */
	bool reconnecting;
	uint64_t reconnect_until_ns;
	uint64_t nreplay_pending;
	pthread_cond_t reconnect_cond;  /* with mds->lock */

	struct journal *j;
	struct sreplay *sreplay;       /* standby_replay.c: this standby follows the journal (NULL: it does not) */
	uint64_t committed_jseq;      /* every entry <= this is durable */

	/* network */
	int listen_fd;
	uint16_t port;
	int stop_pipe[2];
	pthread_t acceptor;
	pthread_mutex_t conns_lock;
	struct conn *conns;           /* protected by conns_lock */
	uint32_t nconns;              /* protected by conns_lock: connections whose reader runs */
	_Atomic bool stopping;
	/* SIGTERM: requests are no longer run (set under mds->lock, so once
	 * it is set no request handler is between its check and its journal
	 * submission); what is queued is written and answered (mds_drain) */
	_Atomic bool draining;
	struct netloop *loops;        /* mds_net_loops event loops (net.c); NULL: a thread per connection */
	unsigned nloops;
	/* READDIR's big buffers (the entries, their encoding), kept for the
	 * next listing instead of mapped and unmapped per reply (bufpool.h);
	 * bounded, charged against mds_cache_memory_limit; its own leaf lock */
	struct bufpool bigbufs;
#define MDS_BIGBUF_LIMIT (1u << 20)   /* a READDIR of 1,024 entries: ~330 KB of entries, ~200 KB encoded */
#define MDS_BIGBUF_MIN (64u << 10)    /* smaller buffers are malloc's business */
	/* the flusher: writes what slow sockets did not take at once, polling
	 * every connection with queued bytes (never blocks on one of them) */
	pthread_t flusher;
	bool flusher_started;
	pthread_mutex_t flush_lock;
	int flush_pipe[2];            /* wakes the flusher: a connection was queued, or stop */
	struct conn *flush_head, **flush_tail;   /* protected by flush_lock */
	bool flush_stop;                          /* protected by flush_lock */

	/* housekeeping */
	pthread_t ticker;
	pthread_mutex_t tick_lock;
	pthread_cond_t tick_cond;
	bool tick_stop;               /* protected by tick_lock */
	/* protected by tick_lock: an event loop holds requests until sealed
	 * segments expire, and leaves the expiry to the ticker (journal_over) */
	bool tick_expire;

	struct asok *asok;
	struct mdsmap *map;            /* mdsmap.c: rank 0, beacons (NULL: in-process tests without one) */

	/*
	 * What a lower layer calls in the layers above it, set once by
	 * mds_layers_wire() (layers.c) before anything runs; read-only after.
	 */
	const struct net_ops *net_ops;
	const struct mdcache_hooks *cache_hooks;
	const struct journal_hooks *journal_hooks;
	const struct locker_ops *locker_ops;
	const struct flock_ops *flock_ops;

	/* authentication: the keyring, read at start-up and changed by the
	 * auth admin commands (written back to keyring_path) */
	pthread_mutex_t keys_admin_lock; /* one auth admin command at a time: held across the keyring
					  * file's write, which keys_lock never is (every handshake
					  * takes keys_lock); taken before keys_lock, nothing else */
	pthread_mutex_t keys_lock;    /* a leaf: under keys_admin_lock, or under mds->lock where a
				       * session's caps are refreshed (authcaps.c) */
	struct mdsp_keyring keys;     /* protected by keys_lock */
	_Atomic uint64_t keys_gen;    /* bumped after every change of the keys: sessions re-read
				       * their caps when it moved (authcaps.c) */
	char *keyring_path;           /* read-only after start-up */
	bool auth_required;           /* read-only after start-up */
	/* locker.c (protected by mds->lock) */
	struct cds_list_head revoking;        /* struct mcap with a revoke in flight, oldest first */
	struct cds_list_head revoking_leases; /* struct mlease likewise */
	uint64_t lease_ids;           /* locker.c: last mdentry.lease_id handed out */
	struct mwaiter *waiters, **waiters_tail; /* parked requests, in arrival order */
	uint64_t nwaiters;
	_Atomic bool waiters_ready;           /* some waiter is ready (read without the lock) */
	bool strays_unchecked;                /* orphans loaded at start: purge the unused after reconnect */

	/* perf (lock-free) */
	struct hist op_lat[MDSP_OP_MAX];
	struct hist safe_lat;
	struct perf_counter op_count[MDSP_OP_MAX];
	struct perf_counter req_replayed, req_total, bad_peers;
	struct perf_counter sessions_opened, sessions_evicted, sessions_stale;
	struct perf_counter sessions_reclaimed;    /* evicted by their restarted client (session.c) */
	struct perf_counter auth_ok, auth_failed, auth_gmac, sessions_refused;
	struct perf_counter deleg_stale_freed;  /* stale delegated ranges freed (prealloc.c) */
	_Atomic uint64_t net_rbuf_bytes;   /* net.c: every connection's receive buffer (perf mds_net.rbuf_bytes) */
};


/* ---- shared by every layer: object names and the inode blob -------- */
void oid_dir(char *buf, size_t len, uint64_t ino);
void oid_completed(char *buf, size_t len, uint64_t sid);

#define OID_TABLE     "mds_table"
#define OID_INOTABLE  "mds_inotable"
#define OID_SESSIONS  "mds_sessions"
#define OID_JOURNAL   "mds_journal"
#define OID_PURGE     "mds_purge"
#define OID_STRAY     "mds_stray"
#define OID_BLOCKLIST "mds_blocklist"
#define DIR_META_KEY  "/meta"
#define DIR_FRAGS_KEY "/frags"   /* in the head "<ino>.dir": the leaf fragments, once split */
#define FRAG_KEY_BITS 61         /* fragments divide the cookie keys [0, 2^61) (mdcache.c) */
#define COOKIE_FIRST  3          /* 0 = start of dir; 1 and 2 stay free for . and .. */
#define COOKIE_HASHED (1ull << 61) /* cookies from names live in [2^61, 2^62) (mdcache.c) */

/* inode_blob_encode, inode_blob_decode - an inode's on-disk blob (mdcache.c; the unit tests use them) */
int inode_blob_encode(struct mdsp_buf *b, const struct minode *in);
int inode_blob_decode(const void *p, size_t len, struct minode *in);

#endif
