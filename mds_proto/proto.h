/*
 * proto.h - the MDS wire protocol: framing, messages, encoding.
 *
 * TCP, little-endian.  Every message is a frame:
 *
 *   struct mdsp_hdr (MDSP_HDR_LEN = 32 bytes on the wire, frame version 2)
 *     u32 magic      MDSP_MAGIC
 *     u16 version    MDSP_PROTO_VERSION (the frame format)
 *     u16 type       enum mdsp_msg_type
 *     u32 flags      MDSP_FRAME_*; unknown bits are ignored
 *     u64 seq        per-connection sender sequence number, starts at 1
 *     u32 len        payload length, <= MDSP_MAX_PAYLOAD (the MAC not counted)
 *     u32 crc        crc32c of the payload
 *     u32 hdr_crc    crc32c of the 28 header bytes before it
 *   payload: one versioned struct of the message type
 *   mac: MDSP_MAC_LEN bytes when flags has MDSP_FRAME_MAC: the MAC, with the
 *        connection's key for this direction, of header and payload:
 *        AES-256-GMAC (the 16-byte tag, then 16 zero bytes; the IV is the
 *        header's seq) when both sides said so in AUTH, else HMAC-SHA256
 *
 * The header has a checksum of its own so that a receiver can trust the
 * length before it reserves memory for the payload (a corrupt or hostile
 * length is refused with 32 bytes read).  Frame version 1 (a 28-byte header
 * whose one crc covered header and payload) is still decoded from memory by
 * mdsp_decode_frame() -- replies stored in the completed tables of older
 * stores -- but never spoken on a socket.
 *
 * Authentication (cephx-like, mds_proto/auth.c): every connection starts
 * with AUTH HELLO (entity name, client nonce) and CHALLENGE (MDS nonce).  A
 * client that holds a key proves it (AUTH PROOF, HMAC-SHA256 of both nonces
 * keyed by its secret); the MDS answers OK with its own proof (so the client
 * knows it talks to an MDS that holds the key), and from then on every
 * frame in both directions carries a MAC keyed by a per-connection,
 * per-direction key derived from the secret and both nonces, and the
 * receiver takes only seq = previous seq + 1: an injected, altered,
 * replayed or reordered frame closes the connection.  The MAC is
 * AES-256-GMAC when the client offers it in HELLO and the MDS takes it in
 * CHALLENGE (MDSP_AUTH_GMAC; auth_frame_gmac on both), HMAC-SHA256 with a
 * peer that does not (older ones).  GMAC's IV is the frame's seq, never
 * the same twice under one key: keys are per connection and direction,
 * and a direction's seq only grows.  GMAC costs a sixth of HMAC-SHA256 on a
 * 6.6 KB listing here (AES-NI and carry-less multiply against SHA-NI).
 *
 * Every struct in a payload, and every nested struct, is encoded as
 *     u8 version, u8 compat, u32 length, <fields>
 * A decoder accepts a struct whose compat <= the version it understands and
 * skips fields past the ones it knows (newer peers add fields at the end).
 * Strings are u32 length + bytes (no NUL on the wire); byte blobs likewise;
 * arrays are u32 count + elements.  Every length is bounded (MDSP_NAME_MAX
 * etc.) before anything is allocated.
 *
 * Encoders and decoders are pure functions over memory.  Decoded messages
 * own their strings and arrays: release with mdsp_msg_free().
 */
#ifndef LOLIGO_MDS_PROTO_PROTO_H
#define LOLIGO_MDS_PROTO_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MDSP_MAGIC          0x474c4f4cu /* "LOLG" little-endian */
#define MDSP_PROTO_VERSION  2
#define MDSP_HDR_LEN        32
#define MDSP_HDR_LEN_V1     28          /* stored frames of older stores */
#define MDSP_MAC_LEN        32          /* HMAC-SHA256 */
#define MDSP_NONCE_LEN      32
#define MDSP_KEY_LEN        32          /* an entity's secret, a session secret */
#define MDSP_AUTH_NAME_MAX  128         /* "client.NAME" */
#define MDSP_MAX_PAYLOAD    (16u << 20)
#define MDSP_NAME_MAX       255         /* one path component */
#define MDSP_PATH_MAX       4096        /* symlink target */
#define MDSP_XATTR_NAME_MAX 255
#define MDSP_XATTR_SIZE_MAX 65536
#define MDSP_MAX_GROUPS     64
#define MDSP_READDIR_MAX    4096        /* entries in one readdir reply */
#define MDSP_CLIENT_NAME_MAX 256
#define MDSP_SLOW_OP_MAX 512            /* the description of a client's slow operation */
#define MDSP_STORE_ADDR_MAX 256         /* a data-store instance address (rados: "v2:1.2.3.4:0/123") */
#define MDSP_JSON_MAX       (1u << 20)

#define MDSP_ROOT_INO       1ull

enum mdsp_msg_type {
	MDSP_MSG_SESSION = 1,
	MDSP_MSG_REQUEST = 2,
	MDSP_MSG_REPLY = 3,
	MDSP_MSG_CAPS = 4,
	MDSP_MSG_COMMAND = 5,
	MDSP_MSG_COMMAND_REPLY = 6,
	MDSP_MSG_AUTH = 7,
};

/* mdsp_hdr.flags */
#define MDSP_FRAME_MAC  0x1             /* an MDSP_MAC_LEN trailer follows the payload */

struct mdsp_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t flags;
	uint64_t seq;
	uint32_t len;
	uint32_t crc;            /* of the payload */
	uint32_t hdr_crc;        /* of the 28 bytes before it */
};

/* ---- common structs --------------------------------------------------- */

struct mdsp_time {
	int64_t sec;
	uint32_t nsec;
};

/* An inode as the MDS describes it to clients (and journals it). */
struct mdsp_inode {
	uint64_t ino;
	uint64_t generation;     /* distinguishes reuse of an ino; for NFS handles */
	uint32_t mode;           /* type and permission bits, as st_mode */
	uint32_t uid, gid;
	uint32_t nlink;
	uint64_t size;
	uint64_t rdev;
	struct mdsp_time atime, mtime, ctime, btime;
	uint64_t change;         /* bumped on every change: NFS change attribute */
	uint32_t object_size;    /* data layout: bytes per object (default 4 MiB) */
	uint64_t max_size;       /* size the holder of write caps may write up to */
	uint64_t files;          /* directories: number of entries (rstat-lite) */
	/* version 2 */
	uint64_t blocks;         /* regular files: bytes the data objects hold (st_blocks * 512):
				  * the extents written, fallocated, not punched (MDSP_BLOCKS_UNKNOWN:
				  * not tracked, a file of an older MDS or written by an older client) */
	uint32_t flags;          /* MDSP_FL_*: chattr's immutable and append-only */
	/* version 3 */
	uint32_t xattrs;         /* MDSP_XATTRS_*: whether the inode has any xattr, in the
				  * traces of replies (the target, readdir entries) only */
	/* version 4: directories: recursive statistics of everything below
	 * (not the directory itself), exact at the MDS (mds/rstat.c), and the
	 * quotas set on it (0: none) */
	uint64_t rbytes;         /* sum of st_size of the regular files below */
	uint64_t rfiles;         /* names of non-directories below (a hard link counts per name) */
	uint64_t rsubdirs;       /* directories below */
	struct mdsp_time rctime; /* newest ctime of the directory and anything below */
	uint64_t quota_max_bytes;
	uint64_t quota_max_files;   /* limit on rentries (rfiles + rsubdirs) */
	/* regular files, in traces only: bytes the file may still grow by
	 * before the tightest byte quota above it is reached (MDSP_QUOTA_NONE:
	 * no byte quota above it) */
	uint64_t quota_room;
	/* version 5: the rest of the data layout, as Ceph's
	 * file_layout_t.  Files: how their bytes map to objects (mdsp_layout_*,
	 * store_file_map); 0 in stripe_unit/stripe_count is the plain layout of
	 * older inodes (stripe_unit = object_size, stripe_count = 1).
	 * Directories: the layout new files and directories below get (copied at
	 * mkdir), with MDSP_LAYOUT_DIR_SET when loligo.dir.layout was set here. */
	uint32_t stripe_unit;    /* bytes written to one object before the next (divides object_size) */
	uint32_t stripe_count;   /* objects a stripe spans: one object set */
	uint32_t pool;           /* data pool id (0: the filesystem's first data pool) */
	uint32_t layout_flags;   /* MDSP_LAYOUT_* */
};
#define MDSP_QUOTA_NONE   UINT64_MAX        /* quota_room: no byte quota above */
#define MDSP_QUOTA_UNSAID (UINT64_MAX - 1)  /* quota_room: this message does not say (CAPS,
					     * readdir entries, directories, older peers) */

#define MDSP_LAYOUT_DIR_SET 0x1  /* directories: an explicit loligo.dir.layout */
/* bounds a layout must keep (mdsp_layout_valid) */
#define MDSP_LAYOUT_UNIT_MIN   4096u          /* stripe_unit: a multiple of this */
#define MDSP_LAYOUT_OBJ_MAX    (1u << 30)     /* object_size at most */
#define MDSP_LAYOUT_COUNT_MAX  256u           /* stripe_count at most */

#define MDSP_BLOCKS_UNKNOWN UINT64_MAX
/* mdsp_inode.flags: the Linux FS_*_FL values (FS_IOC_GETFLAGS/SETFLAGS) */
#define MDSP_FL_IMMUTABLE 0x10   /* FS_IMMUTABLE_FL: no change of data, attributes or names */
#define MDSP_FL_APPEND    0x20   /* FS_APPEND_FL: data only appended; no other change */
#define MDSP_FL_ALL       (MDSP_FL_IMMUTABLE | MDSP_FL_APPEND)
/*
 * mdsp_inode.xattrs: a reply's trace says whether the inode has xattrs,
 * so a client holding As answers getxattr/listxattr of an inode with none
 * without asking (ls -l asks for security.selinux of every file): the MDS
 * revokes others' As before any xattr changes.  UNKNOWN (an older peer, a
 * CAPS message, the stored inode) means: ask the MDS.
 */
#define MDSP_XATTRS_UNKNOWN 0
#define MDSP_XATTRS_NONE    1
#define MDSP_XATTRS_SOME    2

/*
 * A byte range of a file's data (extents.c).  Extent sets are sorted,
 * disjoint, not touching, and aligned to MDSP_EXT_ALIGN: what a write
 * allocates is rounded out to it, what a punch frees rounded in.
 */
struct mdsp_extent {
	uint64_t off, len;
};
#define MDSP_EXT_ALIGN  4096u
#define MDSP_FLUSH_EXT_MAX 64     /* extents of each kind in one CAPS FLUSH */
#define MDSP_INODE_EXT_MAX 128    /* extents the MDS keeps per file (past it, nearest ones merge) */

struct mdsp_extset {
	struct mdsp_extent *v;
	uint32_t n, cap;
};

struct mdsp_caller {
	uint32_t uid, gid;
	uint32_t ngroups;
	uint32_t groups[MDSP_MAX_GROUPS];
	uint32_t pid;            /* informational (logs, lock owners) */
};

/* ---- SESSION ------------------------------------------------------------ */

enum mdsp_session_op {
	MDSP_SESSION_REQUEST_OPEN = 1,   /* client -> mds */
	MDSP_SESSION_OPEN = 2,           /* mds -> client: granted */
	MDSP_SESSION_REQUEST_RENEW = 3,  /* client -> mds, every renew interval */
	MDSP_SESSION_RENEW = 4,          /* mds -> client */
	MDSP_SESSION_REQUEST_CLOSE = 5,
	MDSP_SESSION_CLOSE = 6,
	MDSP_SESSION_RECONNECT = 7,      /* client -> mds after a reconnect: resume session_id */
	MDSP_SESSION_STALE = 8,          /* mds -> client: lease ran out, caps gone */
	MDSP_SESSION_EVICTED = 9,        /* mds -> client: evicted by the admin */
	MDSP_SESSION_REJECT = 10,        /* mds -> client: result and reason say why */
	MDSP_SESSION_CONFIG = 11,        /* mds -> client: a per-filesystem setting changed
					  * (max_file_size; `fs set`); older clients ignore it */
	MDSP_SESSION_REQUEST_FLUSH_JOURNAL = 12, /* client -> mds: it waits for the SAFE replies of what
						  * it sent (fsync): write the journal now, not after
						  * mds_journal_max_delay (Ceph's REQUEST_FLUSH_MDLOG);
						  * no answer; older MDSs ignore it */
};

/*
 * One cap (dname NULL: caps on inode @ino) or one dentry lease (dname set:
 * the name @dname in directory @ino) a client still holds, re-asserted in
 * RECONNECT so that a restarted MDS knows them again (Ceph's reconnect).
 */
struct mdsp_cap_reconnect {
	uint64_t ino;
	uint32_t caps;      /* issued */
	uint32_t wanted;
	/* version 2 */
	char *dname;        /* a dentry lease; NULL for inode caps */
	uint64_t seq;       /* the cap's (lease's) last sequence: a restarted MDS goes on from it */
};

/* Client metadata (SESSION v4): what `session ls` shows, as Ceph's client_metadata. */
#define MDSP_META_MAX 16          /* entries */
#define MDSP_META_KEY_MAX 64      /* bytes of a key */
#define MDSP_META_VAL_MAX 1024    /* bytes of a value */

struct mdsp_meta {
	char *key;                /* "hostname", "mount_point", "root", "version", "pid", "entity" */
	char *val;
};

struct mdsp_session {
	uint32_t op;
	uint64_t session_id;   /* 0 in REQUEST_OPEN; the MDS assigns it */
	uint64_t seq;          /* renew sequence */
	char *client_name;     /* "client.host.pid" */
	uint8_t client_uuid[16];
	uint32_t lease_ms;     /* OPEN/RENEW: how long the session lives without renewal */
	int32_t result;        /* REJECT: -errno */
	char *reason;          /* REJECT/EVICTED/STALE: human text, may be NULL */
	uint64_t mds_epoch;    /* OPEN: changes on each MDS start (restart detection) */
	uint32_t ncaps;        /* RECONNECT: caps held */
	struct mdsp_cap_reconnect *caps;
	/* version 2 */
	uint8_t secret[MDSP_KEY_LEN];  /* OPEN on a connection without a MAC key: the session
					* secret (on an authenticated one both sides derive it,
					* mdsp_auth_derive(), and this is all zeros) */
	uint8_t proof[MDSP_MAC_LEN];   /* RECONNECT: mdsp_reconnect_proof() */
	/* version 3 */
	uint64_t max_file_size;        /* OPEN: the largest file size the filesystem allows (Ceph's
					* max_file_size); 0 from an older MDS, which did not say */
	/* version 4 */
	uint32_t nmeta;                /* REQUEST_OPEN, RECONNECT: who the client is (else 0) */
	struct mdsp_meta *meta;
	/* version 5 */
	uint32_t nlocks;               /* RECONNECT: the file locks the client holds (re-asserted);
					* OPEN answering a RECONNECT: those the MDS did not grant back */
	struct mdsp_lock *locks;       /* each with .ino set */
	char *store_addr;              /* REQUEST_OPEN, RECONNECT: the client's data-store instance
					* (store_instance_addr()), which an eviction fences; may be NULL */
	/* version 6 */
	uint32_t slow_ops;             /* REQUEST_RENEW: the client's operations blocked longer
					* than its client_op_warn_s (0: none; the MDS's health
					* check MDS_CLIENT_SLOW_OPS shows them) */
	char *slow_op;                 /* REQUEST_RENEW: the oldest of them, described; may be NULL */
	/* version 7 */
	uint64_t reclaim_sid;          /* REQUEST_OPEN: the session of this client's dead predecessor
					* (same name, same host and mount point: client/reclaim.c),
					* which the MDS evicts before opening ours; 0: none */
	uint8_t reclaim_uuid[16];      /* REQUEST_OPEN: that predecessor's client_uuid (it must match) */
	/* version 8 */
	uint64_t deleg_tid;            /* RECONNECT: no request above this tid names an ino delegated
					* before this reconnect (the client stopped taking them and
					* registered those it took); once the session's oldest_tid
					* passes it, the MDS frees those ranges.  0: no bound (the
					* MDS keeps them) */
};

/* ---- REQUEST ------------------------------------------------------------ */

enum mdsp_op {
	MDSP_OP_LOOKUP = 1,      /* ino=dir name            -> target (+dir) */
	MDSP_OP_GETATTR = 2,     /* ino                     -> target */
	MDSP_OP_SETATTR = 3,     /* ino mask attr           -> target */
	MDSP_OP_CREATE = 4,      /* ino=dir name mode flags -> target (+dir), caps */
	MDSP_OP_OPEN = 5,        /* ino flags               -> target, caps */
	MDSP_OP_MKNOD = 6,       /* ino=dir name mode rdev  -> target */
	MDSP_OP_MKDIR = 7,       /* ino=dir name mode       -> target */
	MDSP_OP_SYMLINK = 8,     /* ino=dir name target     -> target */
	MDSP_OP_LINK = 9,        /* ino=dir name ino2=existing inode -> target */
	MDSP_OP_UNLINK = 10,     /* ino=dir name            -> dir */
	MDSP_OP_RMDIR = 11,      /* ino=dir name            -> dir */
	MDSP_OP_RENAME = 12,     /* ino=src dir name, ino2=dst dir name2, flags=RENAME_* */
	MDSP_OP_READDIR = 13,    /* ino cookie max_entries  -> entries, end */
	MDSP_OP_READLINK = 14,   /* ino                     -> link */
	MDSP_OP_STATFS = 15,     /*                          -> statfs */
	MDSP_OP_GETXATTR = 16,   /* ino name                -> data */
	MDSP_OP_SETXATTR = 17,   /* ino name data flags(XATTR_CREATE/REPLACE) */
	MDSP_OP_LISTXATTR = 18,  /* ino                     -> data (NUL-separated names) */
	MDSP_OP_REMOVEXATTR = 19,/* ino name */
	MDSP_OP_GETLK = 20,      /* ino lock                -> lock */
	MDSP_OP_SETLK = 21,      /* ino lock (flags: MDSP_LOCK_WAIT) */
	MDSP_OP_LOOKUPINO = 22,  /* ino                     -> target (NFS file handles) */
	MDSP_OP_LOOKUPPARENT = 23, /* ino=dir               -> target = parent dir */
	/*
	 * ino=dir mode oflags -> target (a regular file with no name, nlink 0,
	 * open by the caller: O_TMPFILE), caps.  The directory gives only the
	 * permission context (write and search, setgid inheritance).  The file
	 * is an orphan from the start: purged at its last close unless a LINK
	 * gives it a name, which only an open one made without O_EXCL in oflags
	 * may get.  An MDS older than this op answers EOPNOTSUPP.
	 */
	MDSP_OP_TMPFILE = 24,
	/*
	 * ino -> target, ext: the extents a regular file's data objects hold,
	 * as the MDS knows them from the cap flushes it applied (lseek's
	 * SEEK_DATA/SEEK_HOLE).  Read-only, not journaled.  Not known
	 * (target.blocks MDSP_BLOCKS_UNKNOWN): no extents.  An unknown inode is
	 * ESTALE, anything but a regular file EINVAL (what lseek answers);
	 * an MDS older than this op answers EOPNOTSUPP.
	 */
	MDSP_OP_EXTENTS = 25,
	/*
	 * ino=session id, data=its client uuid (16 bytes) -> nothing: evict
	 * that session of the same authenticated name, blocklisted and fenced
	 * first (an NFS gateway taking over another's clients: it may still be
	 * alive).  Not journaled as a request (the eviction is); gone already:
	 * 0; another name: EPERM; an MDS older than this op answers EOPNOTSUPP.
	 */
	MDSP_OP_RECLAIM_SESSION = 26,
	MDSP_OP_MAX
};

/* mdsp_request.flags */
#define MDSP_REQ_REPLAY     0x1   /* resent after reconnect; MDS answers from its completed table */
#define MDSP_REQ_RETRY      0x2   /* resent after a lost connection, never answered */
#define MDSP_REQ_WANT_INOS  0x4   /* a create of a client that answers creates itself: delegate it
				   * a fresh range of inos (reply deleg_start/deleg_len) */
#define MDSP_REQ_UMASK      0x8   /* CREATE/MKNOD/MKDIR: @mode is unmasked; the MDS masks it with
				   * @umask unless the parent has a default ACL, which then
				   * decides instead (a FUSE mount with POSIX ACLs) */

/* setattr mask */
#define MDSP_SETATTR_MODE      0x001
#define MDSP_SETATTR_UID       0x002
#define MDSP_SETATTR_GID       0x004
#define MDSP_SETATTR_SIZE      0x008
#define MDSP_SETATTR_ATIME     0x010
#define MDSP_SETATTR_MTIME     0x020
#define MDSP_SETATTR_ATIME_NOW 0x040
#define MDSP_SETATTR_MTIME_NOW 0x080
#define MDSP_SETATTR_CTIME     0x100
#define MDSP_SETATTR_KILL_SUID 0x200   /* clear setuid/setgid as a write by the caller does (a no-op for root) */
#define MDSP_SETATTR_FH        0x400   /* SIZE through a handle open for writing (ftruncate): no write-permission check */
#define MDSP_SETATTR_CHOWN     0x800   /* a chown (also chown(-1, -1) with neither UID nor GID): clears setuid/setgid */
/* the change was made at the client's clock, attr.ctime (its ctime, and the
 * time of *_NOW): a setattr the client answered itself (asyncdir.c) ends at
 * the MDS exactly as the client showed it, also when replayed */
#define MDSP_SETATTR_CLIENT_TIME 0x1000
#define MDSP_SETATTR_FLAGS     0x2000  /* attr.flags (chattr): the owner or root; i and a: root only */

/* rename flags: the Linux values.  An MDS refuses bits it does not know
 * (EINVAL), so a flag added here never silently means less to an older one. */
#define MDSP_RENAME_NOREPLACE 0x1
#define MDSP_RENAME_EXCHANGE  0x2
#define MDSP_RENAME_WHITEOUT  0x4   /* the source name becomes a whiteout (char device 0/0,
				     * mode 0, the caller's), made in the same change (overlayfs) */

/*
 * A file lock (GETLK/SETLK, and the locks a RECONNECT re-asserts).  Types
 * are the Linux values F_RDLCK 0, F_WRLCK 1, F_UNLCK 2.  The owner is
 * (session, owner_ns, owner): FUSE's lock_owner (per process for fcntl
 * locks, per open file description for flock and OFD locks) or the NFS
 * gateway's id for an NFS lock-owner; a session's owners never conflict
 * with each other's locks unless they differ.  fcntl and flock locks are
 * separate (MDSP_LOCK_FLOCK), as on Linux: they never conflict.
 */
struct mdsp_lock {
	uint32_t type;      /* F_RDLCK, F_WRLCK, F_UNLCK */
	uint32_t flags;     /* MDSP_LOCK_* */
	uint64_t start, len;/* len 0 = to EOF */
	uint64_t owner;     /* lock owner (fuse lock_owner / NFS lock-owner id) */
	uint32_t pid;       /* the locking process (F_GETLK's l_pid) */
	/* version 2 */
	uint32_t owner_ns;  /* MDSP_LOCK_NS_*: which id space @owner is from */
	uint64_t session_id;/* GETLK reply: the session holding the conflicting lock */
	uint64_t wait_tid;  /* SETLK with MDSP_LOCK_CANCEL: the waiting SETLK to cancel */
	uint64_t ino;       /* SESSION RECONNECT/OPEN lock lists: the file (requests use .ino) */
};
#define MDSP_LOCK_WAIT   0x1   /* SETLK: wait until it can be granted (F_SETLKW) */
#define MDSP_LOCK_FLOCK  0x2   /* flock(2), not fcntl */
#define MDSP_LOCK_CANCEL 0x4   /* SETLK: stop the wait of wait_tid (a signal interrupted it); it
				* is answered EINTR unless it was granted already */
#define MDSP_LOCK_NS_FUSE 0    /* FUSE lock_owner values */
#define MDSP_LOCK_NS_NFS  1    /* the NFS gateway's lock-owner ids */
#define MDSP_LOCK_NS_MAX  1

struct mdsp_request {
	uint64_t tid;
	uint64_t oldest_tid;     /* client's oldest incomplete tid: trims the completed table */
	uint32_t attempt;        /* 1 on first send */
	uint32_t flags;          /* MDSP_REQ_* */
	uint32_t op;             /* enum mdsp_op */
	struct mdsp_caller caller;
	uint64_t ino;
	char *name;              /* NULL when unused */
	uint64_t ino2;
	char *name2;
	char *target;            /* symlink target */
	uint32_t mode;
	uint32_t oflags;         /* open flags / rename flags / xattr flags */
	uint64_t rdev;
	uint32_t mask;           /* setattr mask */
	struct mdsp_inode attr;  /* setattr values */
	uint64_t cookie;         /* readdir: resume after this cookie (0 = start) */
	uint32_t max_entries;    /* readdir */
	uint32_t data_len;       /* setxattr value */
	uint8_t *data;
	struct mdsp_lock lock;
	/*
	 * v2: CREATE/MKNOD/MKDIR/SYMLINK sent again with MDSP_REQ_REPLAY after
	 * an UNSAFE reply: the ino that reply gave.  The MDS creates exactly
	 * this inode (it is preallocated to the session) or fails the replay;
	 * it never gives a new one.  0 otherwise.
	 */
	uint64_t want_ino;
	uint32_t umask;          /* v3: with MDSP_REQ_UMASK, the caller's umask */
};

/* ---- REPLY -------------------------------------------------------------- */

/* mdsp_reply.flags */
#define MDSP_REPLY_UNSAFE 0x1   /* applied in memory, not yet journaled */
#define MDSP_REPLY_SAFE   0x2   /* journaled: survives an MDS crash */
#define MDSP_REPLY_REPLAYED 0x4 /* answered from the completed-request table */

/*
 * Cap bits (DESIGN.md section 7; mds/locker.c has the rules).  One "shared"
 * bit per part of the inode that a client may cache, and the file bits.
 * The MDS revokes a bit before anyone else changes what it covers.
 */
#define MDSP_CAP_PIN          0x001 /* the MDS keeps state for this client's inode */
#define MDSP_CAP_AUTH_SHARED  0x002 /* As: mode, uid, gid may be cached */
#define MDSP_CAP_LINK_SHARED  0x004 /* Ls: nlink may be cached */
#define MDSP_CAP_XATTR_SHARED 0x008 /* Xs: xattrs may be cached (not issued yet) */
#define MDSP_CAP_FILE_SHARED  0x010 /* Fs: size, times may be cached; a directory's
				     * entries: names known not to exist, the listing */
#define MDSP_CAP_FILE_CACHE   0x020 /* Fc: file data may be cached (page cache, readahead) */
#define MDSP_CAP_FILE_RD      0x040 /* Fr: file data may be read */
#define MDSP_CAP_FILE_WR      0x080 /* Fw: file data may be written, size/mtime flushed */
#define MDSP_CAP_FILE_BUFFER  0x100 /* Fb: writes may be buffered (only one writer) */
#define MDSP_CAP_DIR_CREATE   0x200 /* Dc (directories): the client may create names in it
				     * and answer them itself (async create/mkdir with a delegated
				     * ino); nobody else caches anything of the directory */
#define MDSP_CAP_ALL          0x3ff
/* every attribute coherent: what a long FUSE attribute timeout needs */
#define MDSP_CAP_ATTR_SHARED  (MDSP_CAP_AUTH_SHARED | MDSP_CAP_LINK_SHARED | MDSP_CAP_FILE_SHARED)

/* mdsp_reply.trace_flags */
#define MDSP_TRACE_LEASE   0x1  /* the client holds a lease on the trace dentry (dir, dname) */
/* the highest lease sequence an MDS hands out: a session's leases count
 * from 1, so a reconnect claiming one above it (a client's own marker for
 * a name it made itself, or garbage) is ignored */
#define MDSP_LEASE_SEQ_MAX  (1ull << 62)
#define MDSP_TRACE_ORPHAN  0x2  /* the target lost its last link but stays: another session has it open
                                  * (the receiver must not purge its data; the MDS does at the last close) */

struct mdsp_dirent {
	char *name;
	uint64_t cookie;         /* pass as request cookie to continue after this entry */
	struct mdsp_inode inode;
	/* version 2 */
	uint32_t caps;           /* caps granted on the entry's inode */
	uint64_t cap_seq;
	bool lease;              /* a lease on the entry's name */
	uint64_t lease_seq;
};

struct mdsp_statfs {
	uint64_t bsize;
	uint64_t blocks, bfree, bavail;
	uint64_t files, ffree;
	uint32_t namemax;
};

struct mdsp_reply {
	uint64_t tid;
	int32_t result;          /* 0 or -errno */
	uint32_t flags;          /* MDSP_REPLY_* */
	bool has_dir;
	struct mdsp_inode dir;   /* trace: the directory operated on */
	char *dname;             /* trace: the dentry name, may be NULL */
	bool has_target;
	struct mdsp_inode target;
	uint32_t caps;           /* caps granted on target */
	uint64_t cap_seq;
	/* readdir */
	uint32_t nentries;
	struct mdsp_dirent *entries;
	bool names_inline;       /* not on the wire: the names live in the entries' allocation
				  * (one free; a listing built by the MDS), else one each */
	bool end;                /* readdir reached the end of the directory */
	/* readlink */
	char *link;
	/* getxattr / listxattr / getlk encoded in data for xattrs, lock for getlk */
	uint32_t data_len;
	uint8_t *data;
	struct mdsp_lock lock;
	struct mdsp_statfs statfs;
	/* version 2 */
	uint32_t dir_caps;       /* caps granted on the trace directory */
	uint64_t dir_cap_seq;
	uint32_t trace_flags;    /* MDSP_TRACE_* */
	uint64_t lease_seq;      /* with MDSP_TRACE_LEASE */
	/* version 3: inos [deleg_start, +deleg_len) delegated to the session by
	 * this request (MDSP_REQ_WANT_INOS): it may name them in want_ino */
	uint64_t deleg_start;
	uint64_t deleg_len;
	/* version 4: EXTENTS: what the target's objects hold (sorted,
	 * disjoint, aligned; at most MDSP_INODE_EXT_MAX) */
	uint32_t n_ext;
	struct mdsp_extent *ext;
};

/* ---- CAPS --------------------------------------------------------------- */

enum mdsp_caps_op {
	MDSP_CAPS_GRANT = 1,     /* mds -> client: caps is the new set (only ever more) */
	MDSP_CAPS_REVOKE = 2,    /* mds -> client: give up caps not in .caps, flush, then ACK;
				  * attr carries the inode as the MDS has it */
	MDSP_CAPS_ACK = 3,       /* client -> mds: revoke done; dirty size/mtime ride in it */
	MDSP_CAPS_FLUSH = 4,     /* client -> mds: dirty size/mtime (caps: what it keeps) */
	MDSP_CAPS_FLUSH_ACK = 5, /* mds -> client: the flush of flush_tid is journaled */
	MDSP_CAPS_RELEASE = 6,   /* client -> mds: drop the inode's caps (forget) */
	MDSP_CAPS_UPDATE = 7,    /* client -> mds: wanted caps changed (caps: what it keeps) */
	MDSP_CAPS_LEASE_REVOKE = 8,  /* mds -> client: drop the lease on (ino = dir, dname), ACK */
	MDSP_CAPS_LEASE_ACK = 9,     /* client -> mds: lease dropped */
	MDSP_CAPS_LEASE_RELEASE = 10,/* client -> mds: lease no longer wanted */
	MDSP_CAPS_OP_MAX
};

#define MDSP_DIRTY_SIZE  0x1
#define MDSP_DIRTY_MTIME 0x2
#define MDSP_DIRTY_ATIME 0x4
#define MDSP_DIRTY_BLOCKS 0x8   /* ext_add / ext_rm change what the data objects hold */

struct mdsp_caps {
	uint32_t op;
	uint64_t ino;
	uint32_t caps;           /* issued (GRANT/REVOKE: what the client may keep) */
	uint32_t wanted;
	uint64_t seq;            /* cap sequence, echoed in ACK/FLUSH_ACK */
	uint64_t flush_tid;      /* FLUSH/FLUSH_ACK pairing */
	uint32_t dirty;          /* MDSP_DIRTY_* */
	struct mdsp_inode attr;  /* FLUSH/ACK: size (the end of what was written), mtime;
				  * GRANT/REVOKE: the inode as the MDS has it */
	/* version 2 */
	char *dname;             /* LEASE_*: the name in directory ino */
	/*
	 * version 3, FLUSH/ACK: how what the data objects hold changed since
	 * the last flush: ext_rm taken away (punched), then ext_add added
	 * (written back, fallocated), each at most MDSP_FLUSH_EXT_MAX.  A
	 * decoder sets has_ext when the sender was new enough to say it: a
	 * flush of size or mtime without it (an older client) leaves the MDS
	 * not knowing what is stored (MDSP_BLOCKS_UNKNOWN).
	 */
	bool has_ext;
	uint32_t n_ext_add, n_ext_rm;
	struct mdsp_extent *ext_add, *ext_rm;
};

/* ---- COMMAND (admin over the MDS port: `loligo tell mds.0 ...`) ---------- */

struct mdsp_command {
	uint64_t tid;
	char *json;              /* {"prefix": "session ls", ...} */
};

struct mdsp_command_reply {
	uint64_t tid;
	int32_t result;
	char *json;
};

/* ---- AUTH (before SESSION on every connection) ----------------------------- */

enum mdsp_auth_op {
	MDSP_AUTH_HELLO = 1,     /* client -> mds: name, nonce, flags (HAVE_KEY, GMAC) */
	MDSP_AUTH_CHALLENGE = 2, /* mds -> client: nonce, flags (REQUIRED, GMAC) */
	MDSP_AUTH_PROOF = 3,     /* client -> mds: proof */
	MDSP_AUTH_OK = 4,        /* mds -> client: proof (the MDS's); MACs from the next frame on */
	MDSP_AUTH_REJECT = 5,    /* mds -> client: result and reason; the MDS closes */
};

/* mdsp_auth.flags */
#define MDSP_AUTH_HAVE_KEY  0x1   /* HELLO: the client will prove a key */
#define MDSP_AUTH_REQUIRED  0x2   /* CHALLENGE: the MDS takes no unauthenticated session */
#define MDSP_AUTH_GMAC      0x4   /* HELLO: the client takes AES-256-GMAC frame MACs;
				   * CHALLENGE: the MDS chose them (only if offered) */

struct mdsp_auth {
	uint32_t op;
	uint32_t flags;
	char *name;                    /* HELLO: "client.NAME" */
	uint8_t nonce[MDSP_NONCE_LEN]; /* HELLO: the client's; CHALLENGE: the MDS's */
	uint8_t proof[MDSP_MAC_LEN];   /* PROOF, OK */
	int32_t result;                /* REJECT: -errno (ENOKEY, EKEYREJECTED, EACCES) */
	char *reason;                  /* REJECT: what is wrong and what to do */
};

/* ---- messages, encoding, decoding ----------------------------------------- */

struct mdsp_msg {
	uint16_t type;           /* enum mdsp_msg_type */
	uint64_t seq;
	union {
		struct mdsp_session session;
		struct mdsp_request request;
		struct mdsp_reply reply;
		struct mdsp_caps caps;
		struct mdsp_command command;
		struct mdsp_command_reply command_reply;
		struct mdsp_auth auth;
	};
};

/* A growable output buffer. */
struct mdsp_buf {
	uint8_t *data;
	size_t len, cap;
	bool oom;                /* set by any failed allocation; encoders then return -ENOMEM */
};
void mdsp_buf_init(struct mdsp_buf *b);
void mdsp_buf_free(struct mdsp_buf *b);

/**
 * mdsp_encode - append a full frame (header + payload) for @msg to @b.
 * Return: 0, -ENOMEM, -EINVAL (a field over its bound: a caller bug, logged),
 * -E2BIG (payload over MDSP_MAX_PAYLOAD).
 */
int mdsp_encode(struct mdsp_buf *b, const struct mdsp_msg *msg);
/**
 * mdsp_reply_size_hint - about the bytes mdsp_encode() makes of a REPLY
 * with @rp (a listing's at least): what to have ready for it.
 */
size_t mdsp_reply_size_hint(const struct mdsp_reply *rp);

/**
 * mdsp_decode_hdr - parse and check the fixed header in @buf (MDSP_HDR_LEN
 * bytes): magic, version, the header's own crc, length bound.  Once this
 * returns 0 the length can be trusted to be what the sender wrote.  The
 * payload crc is checked later, by mdsp_decode_payload().
 * Return: 0, or -EBADMSG (bad magic, header crc), -EPROTONOSUPPORT
 * (version), -EMSGSIZE (length over the bound); @why gets a short reason.
 */
int mdsp_decode_hdr(const uint8_t *buf, struct mdsp_hdr *h, const char **why);

/**
 * mdsp_decode_payload - check the crc and decode @len payload bytes of a
 * frame whose header is @h into @msg.
 * Return: 0 or -EBADMSG (crc, truncation, bad bound; @why says which),
 * -EOPNOTSUPP (unknown message type), -ENOMEM.  On error @msg needs no free.
 */
int mdsp_decode_payload(const struct mdsp_hdr *h, const uint8_t *payload, size_t len,
			struct mdsp_msg *msg, const char **why);

/**
 * mdsp_decode_frame - header + payload in one buffer of exactly @len bytes
 * (a MAC trailer, if flagged, may follow and is not checked here).  Also
 * takes frame version 1, for replies stored by older MDSs.
 */
int mdsp_decode_frame(const uint8_t *buf, size_t len, struct mdsp_msg *msg, const char **why);

/** mdsp_msg_free - free everything a decoder (or a builder) allocated in @msg. */
void mdsp_msg_free(struct mdsp_msg *msg);

/**
 * mdsp_frame_seal - finish an encoded frame for sending: write @seq, the
 * payload and header crcs and, with @mac, the MDSP_FRAME_MAC flag and the
 * MAC into @mac_out.  @frame holds @len bytes (header + payload).
 * Return: 0, or -EINVAL (not a frame), -EIO (the MAC could not be computed).
 * Locking: @mac is used by one sender at a time (the caller's send lock).
 */
struct mdsp_mac;
int mdsp_frame_seal(uint8_t *frame, size_t len, uint64_t seq, struct mdsp_mac *mac, uint8_t *mac_out);
/*
 * mdsp_frame_seal_encoded - mdsp_frame_seal of a frame whose payload is as
 * mdsp_encode() left it (its payload crc already right): only the header
 * is rewritten, sparing a second crc over the payload (a listing's ~270
 * bytes an entry went through crc32c twice on their way out of the MDS).
 */
int mdsp_frame_seal_encoded(uint8_t *frame, size_t len, uint64_t seq, struct mdsp_mac *mac, uint8_t *mac_out);

/**
 * mdsp_frame_verify - check the MAC trailer @mac_in of a received frame
 * (@hdr_bytes: its MDSP_HDR_LEN header as received, @h decoded) with the
 * receive key @mac, and that its seq is *@last_seq + 1 (then advanced).
 * Return: 0; -EBADMSG with @why: no MAC where one is required, a bad MAC,
 * a replayed or reordered seq.
 */
int mdsp_frame_verify(struct mdsp_mac *mac, const struct mdsp_hdr *h, const uint8_t *hdr_bytes,
		      const uint8_t *payload, const uint8_t *mac_in, uint64_t *last_seq, const char **why);

/* ---- authentication: keys, HMAC, keyrings (mds_proto/auth.c) ------------------ */

/* The frame MACs (proto.h's top; MDSP_AUTH_GMAC). */
enum mdsp_mac_alg {
	MDSP_MAC_HMAC_SHA256,
	MDSP_MAC_GMAC_AES256,
};
/** mdsp_mac_alg_name - "hmac-sha256" or "aes256-gmac", for logs. */
const char *mdsp_mac_alg_name(enum mdsp_mac_alg alg);

/**
 * mdsp_mac_new - a keyed frame MAC of algorithm @alg (OpenSSL libcrypto)
 * for one direction of one connection.  Return: 0 or -ENOMEM/-EIO/-EINVAL.
 * Free with mdsp_mac_free().
 */
int mdsp_mac_new(struct mdsp_mac **out, enum mdsp_mac_alg alg, const uint8_t key[MDSP_KEY_LEN]);
void mdsp_mac_free(struct mdsp_mac *m);
/**
 * mdsp_frame_mac - the MAC trailer of the MDSP_HDR_LEN bytes @hdr (its seq
 * is the one used) and the @plen bytes @payload, into @out: what
 * mdsp_frame_seal() appends, for tools that alter a sealed frame on
 * purpose (nothing of the header is checked).  Return: 0 or -EIO.
 */
int mdsp_frame_mac(struct mdsp_mac *mac, const uint8_t *hdr, const uint8_t *payload, size_t plen,
		   uint8_t out[MDSP_MAC_LEN]);

/**
 * mdsp_hmac - HMAC-SHA256 keyed by @key over the concatenation of @n
 * pieces: parts[i] points at lens[i] bytes.  Return: 0 or -EIO.
 */
int mdsp_hmac(const uint8_t *key, size_t keylen, const void *const *parts, const size_t *lens, int n,
	      uint8_t out[MDSP_MAC_LEN]);
/** mdsp_mac_equal - constant-time comparison of two MACs. */
bool mdsp_mac_equal(const uint8_t *a, const uint8_t *b);
/** mdsp_random - @n bytes from the kernel's CSPRNG.  Return: 0 or -errno. */
int mdsp_random(void *buf, size_t n);

/* What both sides derive from an entity's secret and the two nonces. */
enum mdsp_derive {
	MDSP_DERIVE_CLIENT_PROOF,  /* PROOF */
	MDSP_DERIVE_MDS_PROOF,     /* OK */
	MDSP_DERIVE_KEY_C2M,       /* MAC key, client -> mds */
	MDSP_DERIVE_KEY_M2C,       /* MAC key, mds -> client */
	MDSP_DERIVE_SESSION,       /* the secret of a session opened on this connection */
	MDSP_DERIVE_GMAC_C2M,      /* GMAC key, client -> mds (the HMAC keys' counterparts) */
	MDSP_DERIVE_GMAC_M2C,      /* GMAC key, mds -> client */
};
/**
 * mdsp_auth_derive - HMAC-SHA256(@secret, label(@what) | @name | client
 * nonce | mds nonce).  Return: 0 or -EIO.
 */
int mdsp_auth_derive(const uint8_t secret[MDSP_KEY_LEN], enum mdsp_derive what, const char *name,
		     const uint8_t cnonce[MDSP_NONCE_LEN], const uint8_t snonce[MDSP_NONCE_LEN],
		     uint8_t out[MDSP_MAC_LEN]);
/**
 * mdsp_auth_macs - the frame MACs of an authenticated connection, @alg
 * keyed by what both sides derive from @secret, @name and the nonces:
 * *@c2m for the client's frames, *@m2c for the MDS's.  Return: 0 (both
 * set), or -EIO/-ENOMEM (neither).
 */
int mdsp_auth_macs(const uint8_t secret[MDSP_KEY_LEN], enum mdsp_mac_alg alg, const char *name,
		   const uint8_t cnonce[MDSP_NONCE_LEN], const uint8_t snonce[MDSP_NONCE_LEN],
		   struct mdsp_mac **c2m, struct mdsp_mac **m2c);
/**
 * mdsp_reconnect_proof - what RECONNECT of session @sid carries: proof that
 * the sender holds the session's secret, bound to this connection's nonces
 * (so a proof seen on one connection is worth nothing on another).
 */
int mdsp_reconnect_proof(const uint8_t secret[MDSP_KEY_LEN], uint64_t sid, const uint8_t cnonce[MDSP_NONCE_LEN],
			 const uint8_t snonce[MDSP_NONCE_LEN], uint8_t out[MDSP_MAC_LEN]);

/* ---- MDS capabilities of a client name (mds_proto/mdscaps.c) -------------------- */

/*
 * What a key may do, cephx's `caps mds = "..."`: one or more clauses,
 * separated by commas (or ';'), each
 *
 *     allow (r|rw|*) [path=/DIR] [root_squash] [uid=N] [gids=A,B,...]
 *
 * A request is allowed by the first clause whose path covers the inode it
 * names (DIR itself or anything under it), whose uid/gids admit the
 * caller's credentials, and whose access includes what the op needs (r:
 * reads; rw and *: everything).  A key without caps has "allow rw" (the
 * behaviour before caps existed).
 */
#define MDSP_MDSCAPS_MAX 16            /* clauses in one caps string */
#define MDSP_MDSCAPS_GIDS_MAX 16
#define MDSP_MDSCAPS_STR_MAX 1024
#define MDSP_ANON_ID 65534u            /* root_squash: uid/gid 0 become this (NFS's nobody) */

struct mdsp_mdscap {
	bool write;                     /* rw or *: else r */
	bool root_squash;
	bool has_uid;
	uint32_t uid;
	uint32_t ngids;
	uint32_t gids[MDSP_MDSCAPS_GIDS_MAX];
	char path[512];                  /* normalised: "/" or "/a/b" (no trailing '/', no ".", "..") */
};
struct mdsp_mdscaps {
	uint32_t n;
	struct mdsp_mdscap c[MDSP_MDSCAPS_MAX];
};

/**
 * mdsp_mdscaps_parse - parse the caps string @s into @out.
 * Return: 0, or -EINVAL with @err saying where (the offset and the token)
 * and what was expected.  Never reads past @s's NUL.
 */
int mdsp_mdscaps_parse(const char *s, struct mdsp_mdscaps *out, char *err, size_t errlen);
/** mdsp_mdscaps_allow_all - @out = "allow rw" (a key without caps). */
void mdsp_mdscaps_allow_all(struct mdsp_mdscaps *out);
/**
 * mdsp_mdscap_admits - does clause @c admit caller @uid/@gid/@groups (its
 * uid=, gids= restrictions)?  Ignores path and access.
 */
bool mdsp_mdscap_admits(const struct mdsp_mdscap *c, const struct mdsp_caller *caller);

/* A keyring: entity names, their secrets and MDS caps, as a file like Ceph's:
 *     [keyring]
 *         version = 2                  (written when a key has caps)
 *     [client.alice]
 *         key = <base64 of MDSP_KEY_LEN bytes>
 *         caps mds = "allow rw path=/home/alice"
 * Version 1 (no [keyring] section) has no caps: every key "allow rw".  A
 * binary that predates caps refuses a version 2 file ("[keyring]" is no
 * entity name) rather than granting everything.  Other caps (mon, osd)
 * are ignored. */
#define MDSP_KEYRING_VERSION 2
struct mdsp_key {
	char name[MDSP_AUTH_NAME_MAX + 1];
	uint8_t secret[MDSP_KEY_LEN];
	char *caps;                     /* caps mds string (malloc'd), NULL: none ("allow rw") */
};
struct mdsp_keyring {
	struct mdsp_key *keys;
	size_t n, cap;
};

/** mdsp_auth_name_valid - "client." then 1..120 of [A-Za-z0-9_.-]. */
bool mdsp_auth_name_valid(const char *name);
/**
 * mdsp_keyring_load - read @path into @kr (which it initialises).
 * Return: 0; -ENOENT, -EACCES, ... (the file), -EINVAL (@err says which
 * line and what is wrong).  On error @kr is empty.
 */
int mdsp_keyring_load(const char *path, struct mdsp_keyring *kr, char *err, size_t errlen);
/* mdsp_keyring_load_flags: the file may be read by its owner only (no bit of
 * 077): what the daemons ask of the keyring they run with */
#define MDSP_KEYRING_PRIVATE 0x1
/**
 * mdsp_keyring_load_flags - mdsp_keyring_load() with @flags (MDSP_KEYRING_*).
 * With MDSP_KEYRING_PRIVATE a file that group or others may access is
 * refused with -EPERM (@err names the file, its mode and the chmod that
 * fixes it), before anything is read from it; -EINVAL if it is not a
 * regular file.
 */
int mdsp_keyring_load_flags(const char *path, unsigned flags, struct mdsp_keyring *kr, char *err, size_t errlen);
/**
 * mdsp_keyring_save - write @kr to @path atomically (a temp file renamed
 * over it), mode 0600.  Return: 0 or -errno (@err says what failed).
 */
int mdsp_keyring_save(const char *path, const struct mdsp_keyring *kr, char *err, size_t errlen);
const struct mdsp_key *mdsp_keyring_find(const struct mdsp_keyring *kr, const char *name);
/** mdsp_keyring_add - add or replace @name's secret.  Return: 0, -EINVAL (name), -ENOMEM. */
int mdsp_keyring_add(struct mdsp_keyring *kr, const char *name, const uint8_t secret[MDSP_KEY_LEN]);
/**
 * mdsp_keyring_set_caps - set @name's caps mds string (NULL: none), which
 * must parse (mdsp_mdscaps_parse).  Return: 0, -ENOENT, -EINVAL (@err), -ENOMEM.
 */
int mdsp_keyring_set_caps(struct mdsp_keyring *kr, const char *name, const char *caps, char *err, size_t errlen);
/** mdsp_keyring_remove - Return: 0 or -ENOENT. */
int mdsp_keyring_remove(struct mdsp_keyring *kr, const char *name);
void mdsp_keyring_free(struct mdsp_keyring *kr);
/** mdsp_key_base64 - @secret as base64 into @out (at least 48 bytes). */
void mdsp_key_base64(const uint8_t secret[MDSP_KEY_LEN], char *out, size_t outlen);
/** mdsp_key_unbase64 - base64 of exactly MDSP_KEY_LEN bytes.  Return: 0 or -EINVAL. */
int mdsp_key_unbase64(const char *s, uint8_t secret[MDSP_KEY_LEN]);

/* Inode and caller helpers shared by the MDS journal and the client. */
int mdsp_encode_inode(struct mdsp_buf *b, const struct mdsp_inode *in);
int mdsp_decode_inode(const uint8_t **p, const uint8_t *end, struct mdsp_inode *in);

/* Blocking socket helpers (client reader thread, tests, tools). */
/**
 * mdsp_send - write all of @b to @fd (MSG_NOSIGNAL).  Return: 0 or -errno.
 */
int mdsp_send(int fd, const struct mdsp_buf *b);
/**
 * mdsp_recv - read one frame from @fd and decode it.  @timeout_ms < 0 waits
 * forever.  Return: 0, -ECONNRESET (peer closed), -ETIMEDOUT, or a decode error.
 */
int mdsp_recv(int fd, struct mdsp_msg *msg, int timeout_ms, const char **why);
/**
 * mdsp_recv_auth - mdsp_recv on an authenticated connection: with @mac
 * (the receive key) every frame must carry a good MAC and seq *@last_seq
 * + 1.  @mac NULL: frames must carry none (*@last_seq still advances).
 */
int mdsp_recv_auth(int fd, struct mdsp_msg *msg, int timeout_ms, struct mdsp_mac *mac, uint64_t *last_seq,
		   const char **why);

const char *mdsp_op_name(uint32_t op);
const char *mdsp_msg_type_name(uint32_t type);
const char *mdsp_session_op_name(uint32_t op);
const char *mdsp_auth_op_name(uint32_t op);
const char *mdsp_caps_op_name(uint32_t op);
/** mdsp_caps_str - "pAsLsFscrwb"-style text of @caps into @buf (>= 16 bytes). */
const char *mdsp_caps_str(uint32_t caps, char *buf, size_t len);
/** mdsp_op_is_write - true for ops that change the namespace (journaled). */
bool mdsp_op_is_write(uint32_t op);
/* mdsp_op_changes_names - @op (when it succeeds) changes names of directory ino (and ino2: RENAME) */
bool mdsp_op_changes_names(uint32_t op);
/**
 * mdsp_check_name - is @name one path component a request may carry?
 * Both ends check it: the client before it sends, the MDS on what it
 * receives.
 * Return: 0, 1 for "." and ".." (which only a lookup resolves: the MDS
 * answers them, the client treats them as names), -ENOENT (NULL or
 * empty), -ENAMETOOLONG (over MDSP_NAME_MAX bytes), -EINVAL (has a '/').
 */
int mdsp_check_name(const char *name);

/*
 * Extent sets (extents.c): pure functions over a struct mdsp_extset, the
 * client's record of what it added and took away, the MDS's of what a
 * file's objects hold.  -ENOMEM leaves the set as it was.
 */
/** mdsp_extset_add - add [@off, @off+@len) rounded out to MDSP_EXT_ALIGN; past @max extents the nearest merge. */
int mdsp_extset_add(struct mdsp_extset *s, uint64_t off, uint64_t len, uint32_t max);
/** mdsp_extset_remove - take [@off, @off+@len) rounded in to MDSP_EXT_ALIGN away (a split may pass @max: then the nearest merge). */
int mdsp_extset_remove(struct mdsp_extset *s, uint64_t off, uint64_t len, uint32_t max);
/** mdsp_extset_remove_exact - take [@off, @off+@len) away as it is (a set built of aligned extents). */
int mdsp_extset_remove_exact(struct mdsp_extset *s, uint64_t off, uint64_t len, uint32_t max);
/** mdsp_extset_truncate - everything from @size rounded up to MDSP_EXT_ALIGN on goes (a truncate). */
void mdsp_extset_truncate(struct mdsp_extset *s, uint64_t size);
/** mdsp_extset_bytes - the bytes the set covers. */
uint64_t mdsp_extset_bytes(const struct mdsp_extset *s);
/** mdsp_extset_set - make @s a copy of @n extents @v (sorted, disjoint; as decoded, checked by the caller). */
int mdsp_extset_set(struct mdsp_extset *s, const struct mdsp_extent *v, uint32_t n);
/** mdsp_extset_valid - @n extents @v are sorted, disjoint, aligned and within 2^63. */
bool mdsp_extset_valid(const struct mdsp_extent *v, uint32_t n);
void mdsp_extset_clear(struct mdsp_extset *s);
void mdsp_extset_free(struct mdsp_extset *s);

#endif
