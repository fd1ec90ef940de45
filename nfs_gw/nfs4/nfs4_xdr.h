/*
 * nfs4_xdr.h - NFSv4 protocol numbers and wire types (RFC 7530, RFC 8881,
 * RFC 5662) with bounded encode/decode helpers for the types more than one
 * operation uses.  The operations' own argument and result structures are
 * decoded where they are used (ops_*.c), with the helpers here and in
 * rpc/xdr.h, so there is no generated code and nothing unbounded.
 */
#ifndef LOLIGO_NFS_GW_NFS4_XDR_H
#define LOLIGO_NFS_GW_NFS4_XDR_H

#include <stdint.h>

#include "nfs_gw/rpc/xdr.h"

#define NFS4_PROGRAM 100003
#define NFS4_VERSION 4
#define NFS4_PROC_NULL 0
#define NFS4_PROC_COMPOUND 1

#define NFS4_FHSIZE 128
#define NFS4_VERIFIER_SIZE 8
#define NFS4_OTHER_SIZE 12
#define NFS4_SESSIONID_SIZE 16
#define NFS4_OPAQUE_LIMIT 1024
#define NFS4_MAX_NAME 255          /* component4 we accept */
#define NFS4_MAX_TAG 1024          /* COMPOUND tag we accept */

enum nfs_opnum4 {
	OP_ACCESS = 3,
	OP_CLOSE = 4,
	OP_COMMIT = 5,
	OP_CREATE = 6,
	OP_DELEGPURGE = 7,
	OP_DELEGRETURN = 8,
	OP_GETATTR = 9,
	OP_GETFH = 10,
	OP_LINK = 11,
	OP_LOCK = 12,
	OP_LOCKT = 13,
	OP_LOCKU = 14,
	OP_LOOKUP = 15,
	OP_LOOKUPP = 16,
	OP_NVERIFY = 17,
	OP_OPEN = 18,
	OP_OPENATTR = 19,
	OP_OPEN_CONFIRM = 20,
	OP_OPEN_DOWNGRADE = 21,
	OP_PUTFH = 22,
	OP_PUTPUBFH = 23,
	OP_PUTROOTFH = 24,
	OP_READ = 25,
	OP_READDIR = 26,
	OP_READLINK = 27,
	OP_REMOVE = 28,
	OP_RENAME = 29,
	OP_RENEW = 30,
	OP_RESTOREFH = 31,
	OP_SAVEFH = 32,
	OP_SECINFO = 33,
	OP_SETATTR = 34,
	OP_SETCLIENTID = 35,
	OP_SETCLIENTID_CONFIRM = 36,
	OP_VERIFY = 37,
	OP_WRITE = 38,
	OP_RELEASE_LOCKOWNER = 39,
	/* NFSv4.1 */
	OP_BACKCHANNEL_CTL = 40,
	OP_BIND_CONN_TO_SESSION = 41,
	OP_EXCHANGE_ID = 42,
	OP_CREATE_SESSION = 43,
	OP_DESTROY_SESSION = 44,
	OP_FREE_STATEID = 45,
	OP_GET_DIR_DELEGATION = 46,
	OP_GETDEVICEINFO = 47,
	OP_GETDEVICELIST = 48,
	OP_LAYOUTCOMMIT = 49,
	OP_LAYOUTGET = 50,
	OP_LAYOUTRETURN = 51,
	OP_SECINFO_NO_NAME = 52,
	OP_SEQUENCE = 53,
	OP_SET_SSV = 54,
	OP_TEST_STATEID = 55,
	OP_WANT_DELEGATION = 56,
	OP_DESTROY_CLIENTID = 57,
	OP_RECLAIM_COMPLETE = 58,
	OP_ILLEGAL = 10044,
};
#define NFS4_OP_MAX_V40 OP_RELEASE_LOCKOWNER
#define NFS4_OP_MAX OP_RECLAIM_COMPLETE

enum nfsstat4 {
	NFS4_OK = 0,
	NFS4ERR_PERM = 1,
	NFS4ERR_NOENT = 2,
	NFS4ERR_IO = 5,
	NFS4ERR_NXIO = 6,
	NFS4ERR_ACCESS = 13,
	NFS4ERR_EXIST = 17,
	NFS4ERR_XDEV = 18,
	NFS4ERR_NOTDIR = 20,
	NFS4ERR_ISDIR = 21,
	NFS4ERR_INVAL = 22,
	NFS4ERR_FBIG = 27,
	NFS4ERR_NOSPC = 28,
	NFS4ERR_ROFS = 30,
	NFS4ERR_MLINK = 31,
	NFS4ERR_NAMETOOLONG = 63,
	NFS4ERR_NOTEMPTY = 66,
	NFS4ERR_DQUOT = 69,
	NFS4ERR_STALE = 70,
	NFS4ERR_BADHANDLE = 10001,
	NFS4ERR_BAD_COOKIE = 10003,
	NFS4ERR_NOTSUPP = 10004,
	NFS4ERR_TOOSMALL = 10005,
	NFS4ERR_SERVERFAULT = 10006,
	NFS4ERR_BADTYPE = 10007,
	NFS4ERR_DELAY = 10008,
	NFS4ERR_SAME = 10009,
	NFS4ERR_DENIED = 10010,
	NFS4ERR_EXPIRED = 10011,
	NFS4ERR_LOCKED = 10012,
	NFS4ERR_GRACE = 10013,
	NFS4ERR_FHEXPIRED = 10014,
	NFS4ERR_SHARE_DENIED = 10015,
	NFS4ERR_WRONGSEC = 10016,
	NFS4ERR_CLID_INUSE = 10017,
	NFS4ERR_RESOURCE = 10018,
	NFS4ERR_MOVED = 10019,
	NFS4ERR_NOFILEHANDLE = 10020,
	NFS4ERR_MINOR_VERS_MISMATCH = 10021,
	NFS4ERR_STALE_CLIENTID = 10022,
	NFS4ERR_STALE_STATEID = 10023,
	NFS4ERR_OLD_STATEID = 10024,
	NFS4ERR_BAD_STATEID = 10025,
	NFS4ERR_BAD_SEQID = 10026,
	NFS4ERR_NOT_SAME = 10027,
	NFS4ERR_LOCK_RANGE = 10028,
	NFS4ERR_SYMLINK = 10029,
	NFS4ERR_RESTOREFH = 10030,
	NFS4ERR_LEASE_MOVED = 10031,
	NFS4ERR_ATTRNOTSUPP = 10032,
	NFS4ERR_NO_GRACE = 10033,
	NFS4ERR_RECLAIM_BAD = 10034,
	NFS4ERR_RECLAIM_CONFLICT = 10035,
	NFS4ERR_BADXDR = 10036,
	NFS4ERR_LOCKS_HELD = 10037,
	NFS4ERR_OPENMODE = 10038,
	NFS4ERR_BADOWNER = 10039,
	NFS4ERR_BADCHAR = 10040,
	NFS4ERR_BADNAME = 10041,
	NFS4ERR_BAD_RANGE = 10042,
	NFS4ERR_LOCK_NOTSUPP = 10043,
	NFS4ERR_OP_ILLEGAL = 10044,
	NFS4ERR_DEADLOCK = 10045,
	NFS4ERR_FILE_OPEN = 10046,
	NFS4ERR_ADMIN_REVOKED = 10047,
	NFS4ERR_CB_PATH_DOWN = 10048,
	NFS4ERR_BADIOMODE = 10049,
	NFS4ERR_BADLAYOUT = 10050,
	NFS4ERR_BAD_SESSION_DIGEST = 10051,
	NFS4ERR_BADSESSION = 10052,
	NFS4ERR_BADSLOT = 10053,
	NFS4ERR_COMPLETE_ALREADY = 10054,
	NFS4ERR_CONN_NOT_BOUND_TO_SESSION = 10055,
	NFS4ERR_DELEG_ALREADY_WANTED = 10056,
	NFS4ERR_BACK_CHAN_BUSY = 10057,
	NFS4ERR_LAYOUTTRYLATER = 10058,
	NFS4ERR_LAYOUTUNAVAILABLE = 10059,
	NFS4ERR_NOMATCHING_LAYOUT = 10060,
	NFS4ERR_RECALLCONFLICT = 10061,
	NFS4ERR_UNKNOWN_LAYOUTTYPE = 10062,
	NFS4ERR_SEQ_MISORDERED = 10063,
	NFS4ERR_SEQUENCE_POS = 10064,
	NFS4ERR_REQ_TOO_BIG = 10065,
	NFS4ERR_REP_TOO_BIG = 10066,
	NFS4ERR_REP_TOO_BIG_TO_CACHE = 10067,
	NFS4ERR_RETRY_UNCACHED_REP = 10068,
	NFS4ERR_UNSAFE_COMPOUND = 10069,
	NFS4ERR_TOO_MANY_OPS = 10070,
	NFS4ERR_OP_NOT_IN_SESSION = 10071,
	NFS4ERR_HASH_ALG_UNSUPP = 10072,
	NFS4ERR_CLIENTID_BUSY = 10074,
	NFS4ERR_PNFS_IO_HOLE = 10075,
	NFS4ERR_SEQ_FALSE_RETRY = 10076,
	NFS4ERR_BAD_HIGH_SLOT = 10077,
	NFS4ERR_DEADSESSION = 10078,
	NFS4ERR_ENCR_ALG_UNSUPP = 10079,
	NFS4ERR_PNFS_NO_LAYOUT = 10080,
	NFS4ERR_NOT_ONLY_OP = 10081,
	NFS4ERR_WRONG_CRED = 10082,
	NFS4ERR_WRONG_TYPE = 10083,
	NFS4ERR_DIRDELEG_UNAVAIL = 10084,
	NFS4ERR_REJECT_DELEG = 10085,
	NFS4ERR_RETURNCONFLICT = 10086,
	NFS4ERR_DELEG_REVOKED = 10087,
};

/* EXCHANGE_ID flags (RFC 8881 18.35) */
#define EXCHGID4_FLAG_SUPP_MOVED_REFER 0x00000001
#define EXCHGID4_FLAG_SUPP_MOVED_MIGR 0x00000002
#define EXCHGID4_FLAG_SUPP_FENCE_OPS 0x00000004
#define EXCHGID4_FLAG_BIND_PRINC_STATEID 0x00000100
#define EXCHGID4_FLAG_USE_NON_PNFS 0x00010000
#define EXCHGID4_FLAG_USE_PNFS_MDS 0x00020000
#define EXCHGID4_FLAG_USE_PNFS_DS 0x00040000
#define EXCHGID4_FLAG_MASK_PNFS 0x00070000
#define EXCHGID4_FLAG_UPD_CONFIRMED_REC_A 0x40000000
#define EXCHGID4_FLAG_CONFIRMED_R 0x80000000u

enum state_protect_how4 { SP4_NONE = 0, SP4_MACH_CRED = 1, SP4_SSV = 2 };

/* CREATE_SESSION flags */
#define CREATE_SESSION4_FLAG_PERSIST 0x00000001
#define CREATE_SESSION4_FLAG_CONN_BACK_CHAN 0x00000002
#define CREATE_SESSION4_FLAG_CONN_RDMA 0x00000004

/* BIND_CONN_TO_SESSION directions */
enum channel_dir_from_client4 { CDFC4_FORE = 1, CDFC4_BACK = 2, CDFC4_FORE_OR_BOTH = 3, CDFC4_BACK_OR_BOTH = 7 };
enum channel_dir_from_server4 { CDFS4_FORE = 1, CDFS4_BACK = 2, CDFS4_BOTH = 3 };

/* SEQUENCE sr_status_flags */
#define SEQ4_STATUS_CB_PATH_DOWN 0x00000001
#define SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING 0x00000002
#define SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED 0x00000004
#define SEQ4_STATUS_EXPIRED_ALL_STATE_REVOKED 0x00000008
#define SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED 0x00000010
#define SEQ4_STATUS_ADMIN_STATE_REVOKED 0x00000020
#define SEQ4_STATUS_RECALLABLE_STATE_REVOKED 0x00000040
#define SEQ4_STATUS_LEASE_MOVED 0x00000080
#define SEQ4_STATUS_RESTART_RECLAIM_NEEDED 0x00000100
#define SEQ4_STATUS_CB_PATH_DOWN_SESSION 0x00000200
#define SEQ4_STATUS_BACKCHANNEL_FAULT 0x00000400
#define SEQ4_STATUS_DEVID_CHANGED 0x00000800
#define SEQ4_STATUS_DEVID_DELETED 0x00001000

/* ---- the callback program (RFC 7530 16, RFC 8881 20) ---------------------- */

#define NFS4_CB_VERSION 1                /* both minor versions */
#define NFS4_CB_PROC_NULL 0
#define NFS4_CB_PROC_COMPOUND 1
enum nfs_cb_opnum4 { OP_CB_GETATTR = 3, OP_CB_RECALL = 4, OP_CB_SEQUENCE = 11, OP_CB_ILLEGAL = 10044 };

/* ---- shared types ------------------------------------------------------- */

struct nfs4_fh {
	uint32_t len;                    /* 0: no filehandle */
	uint8_t data[NFS4_FHSIZE];
};

struct nfs4_stateid {
	uint32_t seqid;
	uint8_t other[NFS4_OTHER_SIZE];
};

struct nfs4_channel_attrs {
	uint32_t headerpadsize;
	uint32_t maxrequestsize;
	uint32_t maxresponsesize;
	uint32_t maxresponsesize_cached;
	uint32_t maxoperations;
	uint32_t maxrequests;
	uint32_t nrdma_ird;              /* 0 or 1 */
	uint32_t rdma_ird;
};

struct nfs4_time {
	int64_t seconds;
	uint32_t nseconds;
};

/* All return 0 or -EBADMSG (decoders) / the encoder's error. */
int nfs4_get_fh(struct xdr_dec *d, struct nfs4_fh *fh);
int nfs4_put_fh(struct xdr_enc *e, const struct nfs4_fh *fh);
int nfs4_get_stateid(struct xdr_dec *d, struct nfs4_stateid *s);
int nfs4_put_stateid(struct xdr_enc *e, const struct nfs4_stateid *s);
int nfs4_get_channel_attrs(struct xdr_dec *d, struct nfs4_channel_attrs *a);
int nfs4_put_channel_attrs(struct xdr_enc *e, const struct nfs4_channel_attrs *a);
int nfs4_get_time(struct xdr_dec *d, struct nfs4_time *t);
/**
 * nfs4_get_component - a component4 (utf8str_cs) into @buf, NUL-terminated.
 * Return: NFS4_OK, NFS4ERR_BADXDR (truncated), NFS4ERR_INVAL (empty),
 * NFS4ERR_NAMETOOLONG, NFS4ERR_BADNAME ('/' or NUL inside, "." or "..").
 */
uint32_t nfs4_get_component(struct xdr_dec *d, char *buf, size_t bufsz);

/* CB_GETATTR (RFC 8881 20.1): the attributes the gateway asks a write
 * delegation's holder for, in bitmap word 0 */
#define NFS4_CB_GETATTR_CHANGE (1u << 3)     /* FATTR4_CHANGE */
#define NFS4_CB_GETATTR_SIZE (1u << 4)       /* FATTR4_SIZE */

/* CB_COMPOUND4args as the gateway sends it: [CB_SEQUENCE (4.1),] [CB_RECALL | CB_GETATTR] */
struct nfs4_cb_args {
	uint32_t minorversion;
	uint32_t ident;                  /* 4.0: SETCLIENTID's callback_ident (4.1: 0) */
	bool sequence;
	uint8_t sessionid[NFS4_SESSIONID_SIZE];
	uint32_t seqid, slotid, highest_slotid;
	bool recall;
	struct nfs4_stateid stateid;
	bool truncate;
	struct nfs4_fh fh;               /* CB_RECALL's and CB_GETATTR's */
	bool getattr;
	uint32_t getattr_mask;           /* NFS4_CB_GETATTR_* */
};

/* What the gateway reads of a CB_COMPOUND4res. */
struct nfs4_cb_res {
	uint32_t status;                 /* the compound's */
	uint32_t nres;
	bool has_seq;                    /* the first result is CB_SEQUENCE's */
	uint32_t seq_status;
	uint8_t sessionid[NFS4_SESSIONID_SIZE];
	uint32_t seqid, slotid, highest_slotid, target_highest_slotid;
	bool has_recall;
	uint32_t recall_status;
	/* CB_GETATTR4res: status; when NFS4_OK the attributes it returned
	 * (getattr_mask: NFS4_CB_GETATTR_* bits present) */
	bool has_getattr;
	uint32_t getattr_status;
	uint32_t getattr_mask;
	uint64_t change, size;
};

/** nfs4_cb_put_compound - CB_COMPOUND4args (after the RPC call header). */
int nfs4_cb_put_compound(struct xdr_enc *e, const struct nfs4_cb_args *a);
/**
 * nfs4_cb_get_compound_res - parse a CB_COMPOUND4res: its status and the
 * results of CB_SEQUENCE, CB_RECALL and CB_GETATTR (the first results;
 * anything after them, or of another operation, ends the walk).  A
 * CB_GETATTR fattr4 may hold only the change and size (what we ask for),
 * exactly.  Pure and bounded.
 * Return: 0 or -EBADMSG.
 */
int nfs4_cb_get_compound_res(const uint8_t *p, size_t len, struct nfs4_cb_res *r);

/** nfs4_op_name - "SEQUENCE", or "OP_<n>" for numbers nobody named. */
const char *nfs4_op_name(uint32_t op);

#endif
