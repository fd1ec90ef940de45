/*
 * proto.h - the MDS wire protocol: framing, messages, encoding.
 *
 * TCP, little-endian.  Every message is a frame:
 *
 *   struct mdsp_hdr (MDSP_HDR_LEN = 28 bytes on the wire)
 *     u32 magic      MDSP_MAGIC
 *     u16 version    MDSP_PROTO_VERSION (the frame format)
 *     u16 type       enum mdsp_msg_type
 *     u32 flags      0 for now; unknown bits are ignored
 *     u64 seq        per-connection sender sequence number, starts at 1
 *     u32 len        payload length, <= MDSP_MAX_PAYLOAD
 *     u32 crc        crc32c of the first 24 header bytes, then of the payload
 *   payload: one versioned struct of the message type
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
#define MDSP_PROTO_VERSION  1
#define MDSP_HDR_LEN        28
#define MDSP_MAX_PAYLOAD    (16u << 20)
#define MDSP_NAME_MAX       255         /* one path component */
#define MDSP_PATH_MAX       4096        /* symlink target */
#define MDSP_XATTR_NAME_MAX 255
#define MDSP_XATTR_SIZE_MAX 65536
#define MDSP_MAX_GROUPS     64
#define MDSP_READDIR_MAX    4096        /* entries in one readdir reply */
#define MDSP_CLIENT_NAME_MAX 256
#define MDSP_JSON_MAX       (1u << 20)

#define MDSP_ROOT_INO       1ull

enum mdsp_msg_type {
	MDSP_MSG_SESSION = 1,
	MDSP_MSG_REQUEST = 2,
	MDSP_MSG_REPLY = 3,
	MDSP_MSG_CAPS = 4,
	MDSP_MSG_COMMAND = 5,
	MDSP_MSG_COMMAND_REPLY = 6,
};

struct mdsp_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t flags;
	uint64_t seq;
	uint32_t len;
	uint32_t crc;
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
};

struct mdsp_cap_reconnect {
	uint64_t ino;
	uint32_t caps;      /* issued */
	uint32_t wanted;
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
	MDSP_OP_MAX
};

/* mdsp_request.flags */
#define MDSP_REQ_REPLAY     0x1   /* resent after reconnect; MDS answers from its completed table */
#define MDSP_REQ_RETRY      0x2   /* resent after a lost connection, never answered */

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
#define MDSP_SETATTR_KILL_SUID 0x200   /* clear setuid/setgid (write by non-owner) */

/* rename flags: the Linux values */
#define MDSP_RENAME_NOREPLACE 0x1
#define MDSP_RENAME_EXCHANGE  0x2

struct mdsp_lock {
	uint32_t type;      /* F_RDLCK, F_WRLCK, F_UNLCK */
	uint32_t flags;     /* MDSP_LOCK_WAIT, MDSP_LOCK_FLOCK */
	uint64_t start, len;/* len 0 = to EOF */
	uint64_t owner;     /* lock owner (fuse lock_owner / NFS lock-owner id) */
	uint32_t pid;
};
#define MDSP_LOCK_WAIT  0x1
#define MDSP_LOCK_FLOCK 0x2

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
};

/* ---- REPLY -------------------------------------------------------------- */

/* mdsp_reply.flags */
#define MDSP_REPLY_UNSAFE 0x1   /* applied in memory, not yet journaled */
#define MDSP_REPLY_SAFE   0x2   /* journaled: survives an MDS crash */
#define MDSP_REPLY_REPLAYED 0x4 /* answered from the completed-request table */

/* cap bits (DESIGN.md section 7) */
#define MDSP_CAP_PIN      0x01  /* inode stays in the client's cache */
#define MDSP_CAP_SHARED   0x02  /* attributes and dentries may be cached (As/Ls/Fs) */
#define MDSP_CAP_EXCL     0x04  /* exclusive attributes/dentry changes (Ax) */
#define MDSP_CAP_RD       0x08  /* read file data, cache it (Fr/Fc) */
#define MDSP_CAP_WR       0x10  /* write file data (Fw) */
#define MDSP_CAP_BUFFER   0x20  /* buffer writes (Fb) */

struct mdsp_dirent {
	char *name;
	uint64_t cookie;         /* pass as request cookie to continue after this entry */
	struct mdsp_inode inode;
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
	bool end;                /* readdir reached the end of the directory */
	/* readlink */
	char *link;
	/* getxattr / listxattr / getlk encoded in data for xattrs, lock for getlk */
	uint32_t data_len;
	uint8_t *data;
	struct mdsp_lock lock;
	struct mdsp_statfs statfs;
};

/* ---- CAPS --------------------------------------------------------------- */

enum mdsp_caps_op {
	MDSP_CAPS_GRANT = 1,     /* mds -> client: new caps (more or fewer) */
	MDSP_CAPS_REVOKE = 2,    /* mds -> client: give up caps not in .caps, flush, then ACK */
	MDSP_CAPS_ACK = 3,       /* client -> mds: revoke done (with flushed attrs) */
	MDSP_CAPS_FLUSH = 4,     /* client -> mds: dirty size/mtime */
	MDSP_CAPS_FLUSH_ACK = 5, /* mds -> client: flush is journaled */
	MDSP_CAPS_RELEASE = 6,   /* client -> mds: drop the inode's caps (forget) */
	MDSP_CAPS_UPDATE = 7,    /* client -> mds: wanted caps changed */
};

#define MDSP_DIRTY_SIZE  0x1
#define MDSP_DIRTY_MTIME 0x2
#define MDSP_DIRTY_ATIME 0x4

struct mdsp_caps {
	uint32_t op;
	uint64_t ino;
	uint32_t caps;           /* issued (GRANT/REVOKE: what the client may keep) */
	uint32_t wanted;
	uint64_t seq;            /* cap sequence, echoed in ACK/FLUSH_ACK */
	uint64_t flush_tid;      /* FLUSH/FLUSH_ACK pairing */
	uint32_t dirty;          /* MDSP_DIRTY_* */
	struct mdsp_inode attr;  /* FLUSH/ACK: size, mtime, atime; GRANT: current attrs */
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
 * mdsp_decode_hdr - parse and check the fixed header in @buf (MDSP_HDR_LEN
 * bytes): magic, version, type, length bound.  The crc is checked later, by
 * mdsp_decode_payload(), once the payload has arrived.
 * Return: 0, or -EBADMSG (bad magic), -EPROTONOSUPPORT (version),
 * -EMSGSIZE (length over the bound); @why gets a short reason.
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

/** mdsp_decode_frame - header + payload in one buffer of exactly @len bytes. */
int mdsp_decode_frame(const uint8_t *buf, size_t len, struct mdsp_msg *msg, const char **why);

/** mdsp_msg_free - free everything a decoder (or a builder) allocated in @msg. */
void mdsp_msg_free(struct mdsp_msg *msg);

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

const char *mdsp_op_name(uint32_t op);
const char *mdsp_msg_type_name(uint32_t type);
const char *mdsp_session_op_name(uint32_t op);
/** mdsp_op_is_write - true for ops that change the namespace (journaled). */
bool mdsp_op_is_write(uint32_t op);

#endif
