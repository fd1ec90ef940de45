/*
 * mds.h - private to mds/: the metadata server's in-memory model and the
 * entry points its files share.
 *
 * The shape (one paragraph per file):
 *  - net.c: a TCP listener and one reader thread per connection.  Each
 *    reader decodes frames (loligo_proto), and runs requests under the
 *    namespace lock (mds->lock), the way Ceph's MDS serialises on mds_lock:
 *    the namespace work per request is a few microseconds, the expensive
 *    parts (decode, encode, send, the journal write) run outside the lock.
 *  - mdcache.c: inodes, directories and dentries in memory, loaded lazily
 *    from the store ("<ino hex>.dir" objects, omap name -> dentry with the
 *    inode embedded for primary links), and the edits that put changes back.
 *  - server.c: the POSIX semantics of every op (permissions, nlink, rename).
 *  - session.c: sessions, leases, completed-request tables (exactly-once).
 *  - prealloc.c: inode numbers preallocated to each session and journaled
 *    with it, so that a replayed create gets exactly the ino it had.
 *  - journal.c: every mutation is a list of omap edits; the journal writes
 *    them to append-only segment objects with group commit, sends SAFE
 *    replies when a write is durable, replays on start-up and applies
 *    sealed segments to the objects ("expire") before moving the header's
 *    expire position past them.  A failing write makes the MDS read-only
 *    until a retry succeeds.  journal_fmt.c: the checksummed, sequenced
 *    on-disk format and the checker that refuses a damaged journal
 *    (journal_int.h); journal_tool.c: loligo-mds --journal-inspect and
 *    journal export/import/reset.
 *  - locker.c: capabilities and dentry leases: who caches what, revokes
 *    before conflicting changes (requests wait for the acks parked, off the
 *    reader threads), cap flushes, reconnect, orphans (open, unlinked).
 *  - flock.c: file locks (fcntl byte ranges, flock) of every client, their
 *    waits, deadlock detection, re-assertion after a restart (not journaled).
 *  - blocklist.c: evicted clients kept out (journaled, with expiry), and
 *    fenced from the data store (rados blocklist / the local store's fence).
 *  - purge.c: the journaled queue of unlinked files whose data objects the
 *    MDS removes after mds_purge_delay, on a thread of its own, in slices.
 *  - admin.c: admin-socket commands; main.c: start-up and shutdown.
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
 * Lock order: mds->lock -> conn->send_lock -> journal lock;
 *             conn->send_lock -> mds->flush_lock.
 *             mds->conns_lock is taken alone.
 */
#ifndef LOLIGO_MDS_MDS_H
#define LOLIGO_MDS_MDS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <urcu/list.h>

#include "common/perf.h"
#include "common/xarray.h"
#include "mds_proto/proto.h"
#include "store/store.h"

struct journal;
struct asok;
struct dec;
struct mds;

/* ---- namespace -------------------------------------------------------- */

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
	uint16_t gather;              /* locker.c: requests waiting to change it (no new leases) */
	struct mlease *leases;        /* locker.c: sessions that cache this name */
	uint64_t lease_id;            /* locker.c: key of its leases in the sessions' lease_index
				       * (0: none yet); moves with the leases (locker_dentry_move) */
	uint32_t hash;
	uint32_t namelen;
	char name[];
};

struct mdir {
	uint64_t ino;
	struct mdentry **buckets;
	uint32_t nbuckets;
	uint32_t count;
	struct xarray by_cookie;      /* cookie -> mdentry, for readdir order */
	uint64_t next_cookie;
	uint64_t cookie_reserved;     /* next_cookie may go up to this before "/meta" is journaled */
	uint64_t last_jseq;           /* journal entry that last edited its object (0: none this run) */
	uint64_t last_used_ns;        /* for cache trimming */
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
	struct cds_list_head caps;    /* locker.c: struct mcap of each session caching it */
	struct mgather *gather;       /* locker.c: cap bits requests wait to revoke (NULL: none) */
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
	uint64_t issue_seq;                /* the last one that added bits (Ceph's last_issue) */
	uint64_t revoke_seq;               /* outstanding revoke (0: none) */
	uint64_t revoke_ns;                /* mono ns it was sent */
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

/* A request parked until revokes are acked (locker.c).  Protected by mds->lock. */
struct mwaiter {
	struct mwaiter *next;         /* m->waiters */
	struct conn *conn;            /* holds a ref: where the reply goes */
	uint64_t sid;                 /* the session it ran for */
	struct mdsp_msg msg;          /* the request (owned) */
	uint64_t t0, parked_ns;
	struct locker_gather g;       /* what it waits for (names owned) */
	bool ready;                   /* something it waits for changed: run it again */
	bool queued;                  /* on m->waiters */
};

#define TXN_MAX_DIRTY 16
struct txn {
	struct mdsp_buf b;            /* u32 count placeholder + edits */
	uint32_t n;
	struct minode *dirty[TXN_MAX_DIRTY];
	int ndirty;
	struct minode *dead[4];       /* inodes whose last link went: removed at commit */
	int ndead;
	struct mdir *dirs[16];        /* directory objects the edits touch */
	int ndirs;
	struct session *s;            /* the session the request runs for (NULL: none) */
	struct locker_gather g;       /* revokes the request waits for (locker.c) */
	struct txn_listed *listed;    /* READDIR: the dentry and inode of each rep->entries[i], so
				       * locker_fill_reply need not look them up again (in the reply's
				       * entry block; valid while mds->lock is held since op_readdir) */
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
	struct conn *fnext;           /* protected by mds->flush_lock */
	bool on_flush_list;           /* protected by mds->flush_lock: the flusher has it (queued or polling) */
	uint64_t accepted_ns;         /* set before the reader starts, then read-only */
	uint64_t session_id;          /* protected by mds->lock; 0: none */
	/* the reader thread's own (nobody else touches them): */
	enum conn_auth auth;
	char auth_name[MDSP_AUTH_NAME_MAX + 1];
	uint8_t cnonce[MDSP_NONCE_LEN], snonce[MDSP_NONCE_LEN];
	uint8_t session_secret[MDSP_KEY_LEN]; /* CONN_AUTH_DONE: what a session opened here gets */
	struct mdsp_mac *rx_mac;      /* MAC key client -> mds, once authenticated */
	uint64_t in_seq;              /* seq of the last frame received */
	uint8_t *rbuf;                /* what one recv brought, not yet parsed */
	size_t rcap, rstart, rend;
};

enum session_state { SESSION_OPEN = 1, SESSION_STALE = 2, SESSION_CLOSED = 3 };

/* inode numbers [start, start + len) preallocated to a session (prealloc.c) */
struct ino_range {
	uint64_t start, len;
	bool deleg;     /* told to the client (MDSP_REQ_WANT_INOS): it names them in want_ino,
			 * the MDS never picks them itself; not journaled */
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

struct mds {
	pthread_mutex_t lock;         /* the namespace lock: everything below unless noted */
	struct store *st;
	struct store *data_st;        /* local backend: the data store the clients share (NULL: data in st) */
	struct store_pool *meta, *data;
	char *fs_name, *meta_pool_name, *data_pool_name, *store_path;

	struct xarray inodes;         /* ino -> minode */
	struct xarray dirs;           /* ino -> mdir (loaded directories) */
	struct xarray sessions;       /* id -> session */
	uint64_t nsessions;
	struct minode *root;
	uint64_t next_ino, ino_reserved;
	uint64_t next_sid;
	uint64_t nfiles;              /* inodes in the filesystem (statfs) */
	struct store_space space;     /* the data store's, for statfs; protected by space_lock */
	bool space_known;             /* protected by space_lock */
	pthread_mutex_t space_lock;   /* a leaf */
	uint64_t ninodes_cached, ndirs_cached;
	uint32_t object_size;
	uint64_t max_file_size;       /* the filesystem's limit (mds_table, set at mkfs); read-only once serving */
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

	struct asok *asok;

	/* authentication: the keyring, read at start-up and changed by the
	 * auth admin commands (written back to keyring_path) */
	pthread_mutex_t keys_lock;    /* taken alone */
	struct mdsp_keyring keys;     /* protected by keys_lock */
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
	struct perf_counter auth_ok, auth_failed, sessions_refused;
};

extern struct mds *g_mds;

/* ---- mdcache.c -------------------------------------------------------- */
int mdcache_mkfs(struct mds *m);
/* mdcache_cookie_key_ensure - the readdir cookies' key exists (made and stored now if not). */
int mdcache_cookie_key_ensure(struct mds *m);
int mdcache_load(struct mds *m);          /* tables before journal replay */
void mdcache_after_replay(struct mds *m);
void mdcache_free(struct mds *m);

struct minode *minode_alloc(struct mds *m, uint64_t ino);
void minode_free(struct mds *m, struct minode *in);
int inode_get(struct mds *m, uint64_t ino, struct minode **out);
int mdir_get(struct mds *m, uint64_t ino, struct mdir **out);
struct mdentry *mdir_lookup(struct mdir *d, const char *name);
struct mdentry *mdir_add(struct mds *m, struct mdir *d, const char *name, uint64_t ino, uint32_t dtype,
			 bool remote, uint64_t cookie, struct txn *t);
void mdir_del(struct mds *m, struct mdentry *dn, struct txn *t);
struct mdir *mdir_create(struct mds *m, uint64_t ino);
void mdir_destroy(struct mds *m, struct mdir *d, struct txn *t);
/* mds_grant_inos - [next_ino, max(next_ino + n, min_end)) for a session's
 * pool, journaled in @t.  Caller holds mds->lock.  Returns the start. */
uint64_t mds_grant_inos(struct mds *m, struct txn *t, uint64_t n, uint64_t min_end);

void txn_init(struct txn *t);
void txn_free(struct txn *t);
void txn_edit(struct txn *t, enum edit_op op, const char *oid, const char *key, const void *val,
	      size_t len, const char *key2);
void txn_dirty(struct txn *t, struct minode *in);
void txn_kill_inode(struct txn *t, struct minode *in);
/*
 * txn_unstray - orphan @in gets a name again (an O_TMPFILE file linked): it
 * leaves the stray table in @t's journal entry, before the dentry that
 * holds it is written at txn_finish (replay finds them in that order).  The
 * caller links it.  Caller holds mds->lock.
 */
void txn_unstray(struct txn *t, struct minode *in);
/* mdcache_trim - evict clean, unused directories (and the inodes they hold)
 * while more than mds_cache_size inodes are cached.  @clean_below: journal
 * entries below it are expired.  Caller holds mds->lock. */
void mdcache_trim(struct mds *m, uint64_t clean_below);
/* txn_finish - emit the dirty inodes' edits, free dead inodes.  Caller holds mds->lock. */
void txn_finish(struct mds *m, struct txn *t);

/* journal replay: apply one edit to memory.  Caller holds mds->lock. */
int mdcache_replay_edit(struct mds *m, int op, const char *oid, const char *key, const void *val,
			uint32_t len, const char *key2);

int inode_blob_encode(struct mdsp_buf *b, const struct minode *in);
/* inode_blocks_sync - @in->a.blocks from @in->ext (unless unknown); call after changing ext */
void inode_blocks_sync(struct minode *in);
int inode_blob_decode(const void *p, size_t len, struct minode *in);
struct mxattr *xattr_find(struct minode *in, const char *name);

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
#define COOKIE_FIRST  3          /* 0 = start of dir; 1 and 2 stay free for . and .. */
#define COOKIE_HASHED (1ull << 61) /* cookies from names live in [2^61, 2^62) (mdcache.c) */

/* ---- locker.c --------------------------------------------------------- */
void locker_init(struct mds *m);
/* locker_free - drop parked requests at shutdown.  Caller holds mds->lock. */
void locker_free_locked(struct mds *m);
void locker_register_perf(struct mds *m);

/*
 * locker_want_caps - the request of @t->s is about to change what the bits
 * @mask of @in cover: every other session must give them up first.  Sends
 * the revokes that are not in flight yet and notes the wait in @t->g; the
 * op checks locker_blocked() before changing anything.  Caller holds
 * mds->lock.
 */
void locker_want_caps(struct mds *m, struct txn *t, struct minode *in, uint32_t mask);
/* locker_want_dentry - likewise for the leases other sessions hold on @dn. */
void locker_want_dentry(struct mds *m, struct txn *t, struct mdentry *dn);
/* locker_blocked - LOCKER_WAIT if @t must wait for revokes, else 0. */
int locker_blocked(struct txn *t);
/*
 * locker_want_dir - another session answers creates in directory @in
 * itself (Dc): revoke it, so that what it created reaches us before this
 * request looks at or changes @in (its acks follow its requests on the one
 * connection).  No-op for the holder itself and for non-directories.
 */
void locker_want_dir(struct mds *m, struct txn *t, struct minode *in);
/* locker_want_open - the revokes an open of @in with @oflags needs (file caps). */
void locker_want_open(struct mds *m, struct txn *t, struct minode *in, uint32_t oflags);
/*
 * locker_fill_reply - grant caps on the reply's target and trace directory,
 * a lease on its trace dentry, caps and leases on readdir entries, and
 * record what an open wants.  Caller holds mds->lock; after the op ran.
 */
void locker_fill_reply(struct mds *m, struct session *s, const struct mdsp_request *req,
		       struct mdsp_reply *rep, struct txn *t);
/* locker_gather_release - the parked request of @t runs: its gathers end. */
void locker_gather_release(struct mds *m, struct txn *t);
void locker_gather_free(struct locker_gather *g);
/*
 * locker_park - park the request @msg of @c (its contents move into the
 * waiter; @msg is left empty) until the revokes in @t->g are acked.
 * Caller holds mds->lock.
 */
void locker_park(struct mds *m, struct conn *c, struct mdsp_msg *msg, uint64_t t0, struct txn *t);
/* locker_waiters_json - the parked requests, what they wait for and who holds it, into @a.  Caller holds mds->lock. */
void locker_waiters_json(struct mds *m, struct json_object *a);
/* locker_handle_caps - a CAPS message from a client (ack, flush, release, ...).  No lock held. */
void locker_handle_caps(struct mds *m, struct conn *c, struct mdsp_caps *msg);
/* locker_session_reconnect - the caps and leases a reconnecting client re-asserts.  mds->lock held. */
void locker_session_reconnect(struct mds *m, struct session *s, const struct mdsp_cap_reconnect *caps,
			      uint32_t n);
/* locker_session_drop - @s is going away: its caps and leases go, waiters are run again.  mds->lock held. */
void locker_session_drop(struct mds *m, struct session *s);
/* locker_conn_closed - requests parked from @c are dropped (the client resends them).  mds->lock held. */
void locker_conn_closed(struct mds *m, struct conn *c);
/* locker_inode_drop, locker_dentry_drop - @in / @dn leave memory: their caps / leases go.  mds->lock held. */
void locker_inode_drop(struct mds *m, struct minode *in);
void locker_dentry_drop(struct mds *m, struct mdentry *dn);
/* locker_dentry_move - @to replaces @from (same name and target): the leases move over. */
void locker_dentry_move(struct mdentry *from, struct mdentry *to);
/* locker_in_use - some session has @in open (wants file caps). */
bool locker_in_use(const struct minode *in);
/* locker_open_by - session @s has @in open. */
bool locker_open_by(const struct minode *in, const struct session *s);
/*
 * locker_referenced - some session holds a cap on @in (it caches it: its
 * kernel may hold it open or look it up by a dentry it still has).
 */
bool locker_referenced(const struct minode *in);
/*
 * locker_keeps_orphan - an unlinked @in stays an orphan, answering with
 * nlink 0, while this holds: a regular file while some session has it open
 * (its data is purged at the last close, as before); anything else (a
 * directory, a symlink, a device) while some session caches it, as Ceph's
 * strays, so that an fstat or fchdir of a directory removed or renamed over
 * while open is not ESTALE (no data to keep: it costs an inode record).
 */
bool locker_keeps_orphan(const struct minode *in);
/*
 * locker_stray_notify - @in just became an orphan: every session holding
 * a cap on it without having it open hears its nlink 0 (a revoke of all
 * but the pin, or a grant carrying the attributes), so a client that no
 * longer uses it releases it at once.  mds->lock held.
 */
void locker_stray_notify(struct mds *m, struct minode *in);
/* locker_dir_pinned - @d or something in it is cached by a client: it must stay in memory. */
bool locker_dir_pinned(struct mds *m, struct mdir *d);
/* locker_recall_dir - ask the clients caching @d (not for open files) to give it up.  mds->lock held. */
int locker_recall_dir(struct mds *m, struct mdir *d);
/* locker_tick - revokes not acked within mds_session_timeout evict their session; orphans. No lock. */
void locker_tick(struct mds *m);
/* locker_wake_all - every parked request runs again soon (locker_run_waiters).  mds->lock held. */
void locker_wake_all(struct mds *m);
/* locker_waiter_free - a parked request that ran is done.  mds->lock held. */
void locker_waiter_free(struct mds *m, struct mwaiter *w);
/* locker_run_waiters - run the parked requests that may proceed now.  No lock held. */
void locker_run_waiters(struct mds *m);
/* locker_note_orphan - count an inode that became an orphan (perf). */
void locker_note_orphan(void);
struct json_object;
/**
 * locker_late_releases_locked - for each session with a cap or lease revoke
 * unanswered for @age_ns or more, call @fn once with its oldest such revoke
 * (@dname: NULL for a cap on @ino, else a lease on @dname in directory
 * @ino), at most 64 sessions.  Caller holds mds->lock.
 */
void locker_late_releases_locked(struct mds *m, uint64_t age_ns,
				 void (*fn)(void *arg, const struct session *s, uint64_t ino, const char *dname,
					    double secs),
				 void *arg);
void locker_session_json(struct session *s, struct json_object *o);
void locker_inode_json(struct minode *in, struct json_object *o);

/* ---- flock.c ---------------------------------------------------------- */
void flock_init(struct mds *m);
void flock_register_perf(struct mds *m);
/* flock_free_locked - at shutdown, after every session is gone.  mds->lock held. */
void flock_free_locked(struct mds *m);
/* flock_request - a GETLK or SETLK from @c: answered now or when granted.  No lock held. */
void flock_request(struct mds *m, struct conn *c, struct mdsp_request *req);
/* flock_flush - send the answers queued under mds->lock (grants a session's end or the end
 * of the reconnect phase caused).  No lock held; call after such changes. */
void flock_flush(struct mds *m);
/* flock_session_open_locked - a new session: its locks are known (none). */
void flock_session_open_locked(struct session *s);
/* flock_session_drop_locked - @s ends: its waits go, its locks are released (waiters of
 * others granted, answers queued for flock_flush). */
void flock_session_drop_locked(struct mds *m, struct session *s);
bool flock_session_has_locks_locked(const struct session *s);
/* flock_conn_closed_locked - waits parked from @c are dropped (the client sends them again). */
void flock_conn_closed_locked(struct mds *m, struct conn *c);
/* flock_reconnect_over_locked - the reconnect phase ended: run the lock requests it held back. */
void flock_reconnect_over_locked(struct mds *m);
/* flock_reconnect_phase_start_locked - the phase waits for @s: lock requests wait until it re-asserted. */
void flock_reconnect_phase_start_locked(struct mds *m, struct session *s);
/* flock_reassert_pending_locked - some session of the phase has not re-asserted its locks yet. */
bool flock_reassert_pending_locked(struct mds *m);
/*
 * flock_reconnect_locked - RECONNECT of @s re-asserts @locks.  A session the
 * reconnect phase of this start waits for gets them back (unless they
 * conflict with what others re-asserted first); otherwise the MDS keeps
 * what it knows (same instance) or refuses them all (it restarted and the
 * session came too late).  Sets *@refused (malloc'd, may be NULL) to the
 * locks not held.  When the last awaited session has re-asserted, the lock
 * requests held back run.  mds->lock held.
 */
int flock_reconnect_locked(struct mds *m, struct session *s, const struct mdsp_lock *locks, uint32_t n,
			   struct mdsp_lock **refused, uint32_t *nrefused);
struct json_object;
struct json_object *flock_dump_json(struct mds *m);
void flock_inode_json_locked(uint64_t ino, struct json_object *o);
void flock_session_json_locked(const struct session *s, struct json_object *o);

/* ---- blocklist.c ------------------------------------------------------ */
/* blocklist_uuid_str - a client uuid as 8-4-4-4-12 hex (what the blocklist names). */
void blocklist_uuid_str(const uint8_t *uuid, char *buf, size_t len);
/*
 * blocklist_add - keep @entity (a client uuid or data-store address) out for
 * @expire_secs (0: until removed), journaled; then fence @store_addr (or the
 * entity itself when it is an address) in the data store.  No lock held;
 * blocks on the store.  Return: 0, -EINVAL (@err says why), or the store's
 * error (the entry stands; @err says the fence failed).
 */
int blocklist_add(struct mds *m, const char *entity, const char *store_addr, double expire_secs, const char *why,
		  const char *client_name, uint64_t sid, char *err, size_t errlen);
/* blocklist_rm - lift @entity (and its store fence).  No lock held.  0, -ENOENT or the store's error. */
int blocklist_rm(struct mds *m, const char *entity, char *err, size_t errlen);
/* blocklist_check_locked - 0, or -ESHUTDOWN with @reason when the client @uuid / @store_addr
 * (may be NULL) is blocklisted.  mds->lock held. */
int blocklist_check_locked(struct mds *m, const uint8_t *uuid, const char *store_addr, char *reason, size_t len);
void blocklist_tick(struct mds *m);
uint64_t blocklist_count_locked(struct mds *m);
struct json_object *blocklist_ls_json(struct mds *m);
int blocklist_replay_edit(struct mds *m, int op, const char *key, const void *val, uint32_t len);
int blocklist_load(struct mds *m);
void blocklist_register_perf(struct mds *m);
void blocklist_free(struct mds *m);

/* ---- server.c --------------------------------------------------------- */
/*
 * server_dispatch - run @req for session @s.  Fills @rep; a mutation's edits
 * go into @t.  Caller holds mds->lock.
 */
void server_dispatch(struct mds *m, struct session *s, struct mdsp_request *req, struct mdsp_reply *rep,
		     struct txn *t);
/** server_statfs - statfs of the filesystem.  Caller holds mds->lock; no I/O (see server_space_refresh). */
void server_statfs(struct mds *m, struct mdsp_statfs *sf);
/**
 * server_space_refresh - read the data store's capacity and use for
 * statfs (a statvfs on local, a mon call on rados).  The ticker calls it
 * without any lock held, so statfs never waits for the store.
 */
void server_space_refresh(struct mds *m);
/**
 * journal_ops_json - the requests in flight: answered UNSAFE, their SAFE
 * reply waiting for the journal (queued or being written), with session,
 * tid, op and age, oldest first (`ops`).  Takes the journal lock only.
 */
struct json_object *journal_ops_json(struct mds *m);
/** journal_oldest_op_ns - start (mono ns) of the oldest request waiting for the journal; 0: none. */
uint64_t journal_oldest_op_ns(struct mds *m);
/** journal_segments_behind - sealed segments not yet expired (lock-free). */
uint64_t journal_segments_behind(struct mds *m);
bool server_op_journaled(const struct mdsp_request *req);

/* ---- session.c -------------------------------------------------------- */
void session_handle(struct mds *m, struct conn *c, struct mdsp_session *msg);
/* request_handle - run a request; a request that must wait for revokes is
 * parked and @msg is left empty (the waiter owns its contents). */
void request_handle(struct mds *m, struct conn *c, struct mdsp_msg *msg);
/* request_resume - run a parked request again (locker.c); consumes @w.  No lock held. */
void request_resume(struct mds *m, struct mwaiter *w);
void session_conn_closed(struct mds *m, struct conn *c);
void session_tick(struct mds *m);
/* session_reconnect_phase_start - after replay: wait for restored sessions. */
void session_reconnect_phase_start(struct mds *m);
void session_reconnect_phase_cancel(struct mds *m);
/* session_reconnect_deadline - when the reconnect phase times out (0: none). */
uint64_t session_reconnect_deadline(struct mds *m);
/* session_reconnect_check - end a reconnect phase past its deadline, run what it held back. */
void session_reconnect_check(struct mds *m);
/*
 * session_evict - end session @id (the admin's `client evict`, a revoke not
 * acked in time): its caps and locks are released, and with
 * mds_session_blocklist_on_evict the client is blocklisted and fenced from
 * the data store first.  session_evict_timeout - the same for a session
 * that stopped renewing (mds_session_blocklist_on_timeout).  No lock held;
 * blocks while the store fence is set.  Return: 0 or -ENOENT.
 */
int session_evict(struct mds *m, uint64_t id, const char *why);
int session_evict_timeout(struct mds *m, uint64_t id, const char *why);
/*
 * session_reconnect_hold_locked - must @req of @s (not a mutation: a file
 * lock request) wait for the end of the reconnect phase?  Ends the phase
 * on its timeout, and @req ends @s's replay as any new request does.
 * Caller holds mds->lock.
 */
bool session_reconnect_hold_locked(struct mds *m, struct session *s, const struct mdsp_request *req);
void session_free_all(struct mds *m);
struct session *session_new_locked(struct mds *m, uint64_t id);
int session_replay_edit(struct mds *m, int op, const char *oid, const char *key, const void *val,
			uint32_t len, const char *key2);
int session_load(struct mds *m);
struct json_object *session_ls_json(struct mds *m);

/*
 * session_rec_edit_locked - journal @s's record (name, uuid, ino pool) in
 * @t.  Caller holds mds->lock.
 */
void session_rec_edit_locked(struct session *s, struct txn *t);

/* ---- prealloc.c ------------------------------------------------------- */
/*
 * prealloc_take_locked - the ino for a create of @s: the one @req wants
 * (a replay: exactly it, or -EEXIST), else the lowest of the session's
 * pool; grants more when the pool runs low; journals the session record in
 * @t.  Caller holds mds->lock.  Return: 0 with *@ino, -EEXIST, -EINVAL.
 */
int prealloc_take_locked(struct mds *m, struct session *s, const struct mdsp_request *req, struct txn *t,
			 uint64_t *ino);
/* prealloc_grant_locked - grant @s mds_client_prealloc_inos more, journaled
 * in @t (the caller journals the session record).  Caller holds mds->lock. */
void prealloc_grant_locked(struct mds *m, struct session *s, struct txn *t);
/*
 * prealloc_delegate_locked - give @s a fresh range of
 * mds_client_prealloc_inos that its client picks from itself (async
 * creates, want_ino), journaled in @t with the session record.  Caller
 * holds mds->lock.  Return: the range's first ino (*@len: its length).
 */
uint64_t prealloc_delegate_locked(struct mds *m, struct session *s, struct txn *t, uint64_t *len);
/* prealloc_count - inos left in @s's pool.  Caller holds mds->lock. */
uint64_t prealloc_count(const struct session *s);
/* prealloc_encode, prealloc_decode - the pool in the session record. */
void prealloc_encode(struct mdsp_buf *b, const struct session *s);
int prealloc_decode(struct dec *d, struct session *s);

/* ---- journal.c -------------------------------------------------------- */
int journal_mkfs(struct mds *m);
int journal_replay(struct mds *m);
int journal_start(struct mds *m);
/*
 * journal_submit_locked - queue the edits of @t (may be empty) and @item
 * (may be NULL) for the next journal write.  Caller holds mds->lock, which
 * orders journal entries exactly as the changes were applied in memory.
 * Returns the entry's sequence number.
 */
uint64_t journal_submit_locked(struct mds *m, struct txn *t, struct jitem *item);
/* journal_throttle - wait while the unwritten journal backlog is over
 * mds_journal_max_pending (not while read-only: see journal_admit).  Call
 * without mds->lock, before a mutation; @c (may be NULL): the reader's
 * connection, whose gathered replies go out before it waits. */
void journal_throttle(struct mds *m, struct conn *c);
/*
 * journal_read_only - 0 while journal writes succeed; the -errno of the
 * failing write (ENOSPC, EIO, ETIMEDOUT...) while the MDS is read-only.
 * Lock-free.
 */
int journal_read_only(struct mds *m);
/*
 * journal_admit - may the journaled request @req change anything now?
 * 0, or the read-only error to refuse it with (before it changes
 * anything).  Replays and, on ENOSPC, unlink/rmdir are admitted.  Lock-free.
 */
int journal_admit(struct mds *m, const struct mdsp_request *req);
/* journal_health - 0, or the read-only error with a message for `status` in @msg. */
int journal_health(struct mds *m, char *msg, size_t len);
/* journal_damage_msg - why journal_replay() refused the journal (-EUCLEAN), or NULL. */
const char *journal_damage_msg(struct mds *m);
void journal_tick(struct mds *m);
/* journal_clean_below - every entry with a lower sequence number is expired. */
uint64_t journal_clean_below(struct mds *m);
/*
 * journal_drain - at shutdown, before the connections close: write what is
 * queued without waiting for more (mds_journal_max_delay is cut short) and
 * send the SAFE replies, until @deadline_ns; failing writes are retried
 * until then.  Return: the replies still not sent (0: none).
 * No locks held.
 */
unsigned journal_drain(struct mds *m, uint64_t deadline_ns);
void journal_stop(struct mds *m);     /* drain, seal, expire everything */
struct json_object *journal_status_json(struct mds *m);
void journal_free(struct mds *m);

/* ---- purge.c ---------------------------------------------------------- */
/* purge_queue_inode - @in lost its last link: journal and queue the purge
 * of its data objects.  Caller holds mds->lock. */
void purge_queue_inode(struct mds *m, struct txn *t, const struct minode *in);
int purge_replay_edit(struct mds *m, int op, const char *key, const void *val, uint32_t len);
int purge_load(struct mds *m);
/* purge_start - start the purge thread (after journal replay).  No locks held. */
int purge_start(struct mds *m);
/* purge_stop - stop it within one slice and join it; what is left stays
 * queued (journaled) for the next start.  No locks held. */
void purge_stop(struct mds *m);
void purge_register_perf(struct mds *m);
void purge_free(struct mds *m);

/* ---- net.c ------------------------------------------------------------ */
int net_listen(struct mds *m, const char *addr, int port);
int net_start(struct mds *m);
/* net_quiesce - stop accepting connections and running requests (m->draining);
 * the connections stay open for the replies still to come.  No locks held. */
void net_quiesce(struct mds *m);
/*
 * net_flush - wait until every connection's queued replies are written and
 * acknowledged by the peer (nothing in the socket's send queue), or it is
 * dead, until @deadline_ns.  Return: the connections not flushed.
 * No locks held.
 */
unsigned net_flush(struct mds *m, uint64_t deadline_ns);
void net_stop(struct mds *m);
void conn_get(struct conn *c);
void conn_put(struct conn *c);
/* conn_send_frame - patch seq and crc of the frame in @b and send it. */
int conn_send_frame(struct conn *c, struct mdsp_buf *b);
/* conn_send_frame_locked - the same; caller holds c->send_lock. */
int conn_send_frame_locked(struct conn *c, struct mdsp_buf *b);
int conn_send_msg(struct conn *c, struct mdsp_msg *msg);
void conn_shutdown(struct conn *c);
/* conn_uncork - on @c's reader thread: send the replies it queued while working
 * through a batch of requests (before anything that may wait). */
void conn_uncork(struct conn *c);

/* ---- auth.c ------------------------------------------------------------ */
/* auth_load - read the keyring at start-up.  Return 0 or -errno with @err set. */
int auth_load(struct mds *m, char *err, size_t errlen);
void auth_free(struct mds *m);
/*
 * auth_handle - an AUTH message on @c (its reader thread).  Returns 0, or
 * -EACCES when the connection is to be closed (a REJECT was sent and the
 * reason logged with the peer).
 */
int auth_handle(struct mds *m, struct conn *c, struct mdsp_auth *a);
/* auth_admin_* - the auth admin commands; the keyring is written back. */
struct json_object;
int auth_admin_get_or_create(struct mds *m, const char *name, bool create, struct json_object *out, char *err,
			     size_t errlen);
int auth_admin_rm(struct mds *m, const char *name, char *err, size_t errlen);
struct json_object *auth_admin_ls(struct mds *m);

/* ---- admin.c ---------------------------------------------------------- */
int admin_start(struct mds *m, const char *path);
void admin_stop(struct mds *m);
/*
 * admin_command_json - run an admin command given as JSON (COMMAND over the
 * MDS port, from an authenticated connection: net.c refuses it otherwise).
 * Only the read-only commands run there; the others return -EPERM and a
 * message pointing at the admin socket (a unix socket only its owner can
 * use), which runs all.
 */
int admin_command_json(struct mds *m, const char *json, char **out);

#endif
