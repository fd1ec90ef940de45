/*
 * ops_int.h - what the NFSv4 filesystem operations (ops_*.c) share: the
 * per-server context (open/lock state, write verifier), the file handle
 * helpers, errno to nfsstat4 mapping and the caller's credentials.  The
 * exports are the compound's (cs->exports: the table in force when the
 * compound began, nfs_gw/export/export.h).
 *
 * The context is the server's (srv->ops_ctx): nfs4_server_create() makes
 * it (nfs4ops_ctx_create, which also installs the state hooks) and
 * nfs4_server_destroy() frees it once every client is released.
 */
#ifndef LOLIGO_NFS_GW_NFS4_OPS_INT_H
#define LOLIGO_NFS_GW_NFS4_OPS_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "client/client.h"
#include "nfs_gw/export/export.h"
#include "nfs_gw/nfs4/fh.h"
#include "nfs_gw/nfs4/nfs4.h"
#include "nfs_gw/nfs4/open_state.h"
#include "nfs_gw/status.h"

struct nfs4ops_ctx {
	struct nfs4_server *srv;
	struct lclient *lc;
	struct ostate *st;               /* opens, locks, owners */
	struct idmap *idmap;             /* owner strings (idmap.h) */
	uint8_t write_verf[NFS4_VERIFIER_SIZE]; /* changes on every gateway start */
};

/** nfs4ops_ctx - the ops' context of cs->srv (never NULL while the server exists). */
struct nfs4ops_ctx *nfs4ops_ctx(struct nfs4_compound *cs);

/**
 * nfs4ops_cred - the caller's credentials after the export's squashing.
 * @exp may be NULL (pseudo fs: no squashing needed, nothing is writable).
 */
void nfs4ops_cred(const struct nfs4_compound *cs, const struct nfs_export *exp, struct lc_cred *cr);

/*
 * A resolved filehandle.  Pseudo-fs nodes have no inode.
 */
struct nfs4_obj {
	struct nfs4_fhinfo fi;
	const struct nfs_export *exp;    /* NULL for pseudo nodes; in cs->exports */
	struct lc_inode *in;             /* a reference (NULL for pseudo nodes) */
	struct lc_attr attr;             /* valid when in != NULL */
	struct lc_cred cr;               /* the caller, squashed for exp */
};

/**
 * nfs4ops_resolve - decode @fh and find its inode; also checks the client
 * may use the export.  Return: NFS4_OK, NFS4ERR_BADHANDLE, NFS4ERR_STALE,
 * NFS4ERR_ACCESS/WRONGSEC (export rules), NFS4ERR_SERVERFAULT (no client).
 */
uint32_t nfs4ops_resolve(struct nfs4_compound *cs, const struct nfs4_fh *fh, struct nfs4_obj *o);
/** nfs4ops_cur - nfs4ops_resolve(cs->cfh). */
uint32_t nfs4ops_cur(struct nfs4_compound *cs, struct nfs4_obj *o);
void nfs4ops_release(struct nfs4_compound *cs, struct nfs4_obj *o);
/** nfs4ops_set_cfh - make @in of @exp the current filehandle. */
void nfs4ops_set_cfh(struct nfs4_compound *cs, const struct nfs_export *exp, const struct lc_attr *a);
/** nfs4ops_writable - NFS4ERR_ROFS for ro exports and the pseudo fs. */
uint32_t nfs4ops_writable(const struct nfs4_obj *o);

/**
 * nfs4ops_stateid_in - the special stateids (RFC 7530 9.1.4.3, RFC 8881
 * 8.2.3): minor version 1's current stateid {1, 0} becomes the compound's
 * current one; a reserved "other" with any seqid but the defined ones
 * (4.1's invalid stateid {~0, 0} included) is NFS4ERR_BAD_STATEID.
 * @kind (may be NULL) gets what is left: OS_SID_REGULAR, _ANON or _BYPASS;
 * an operation that needs a real stateid answers the last two with
 * NFS4ERR_BAD_STATEID (nfs4ops_stateid_real).
 * Return: NFS4_OK or NFS4ERR_BAD_STATEID.
 */
uint32_t nfs4ops_stateid_in(struct nfs4_compound *cs, struct nfs4_stateid *sid, enum os_sid_kind *kind);
/** nfs4ops_stateid_real - nfs4ops_stateid_in() for CLOSE, LOCK, LOCKU...: special stateids are BAD_STATEID. */
uint32_t nfs4ops_stateid_real(struct nfs4_compound *cs, struct nfs4_stateid *sid);
/**
 * nfs4ops_stateid_verdict - the status for a stateid @st says is bad: a
 * stateid of a client whose lease was cancelled is NFS4ERR_EXPIRED (RFC
 * 7530 9.6.3.2, RFC 8881 8.4.3), not NFS4ERR_BAD_STATEID.  Call it without
 * st->lock.
 */
uint32_t nfs4ops_stateid_verdict(struct nfs4_compound *cs, const struct nfs4_stateid *sid, uint32_t st);
/** nfs4ops_stateid_out - @sid is the stateid an op just returned: the current one now. */
void nfs4ops_stateid_out(struct nfs4_compound *cs, const struct nfs4_stateid *sid);

/**
 * nfs4ops_courtesy_break - a request conflicts with state of @clientid:
 * if that client's lease has expired (a courtesy client, RFC 7530
 * 9.6.3.1), cancel its lease now, releasing all its state, so the request
 * can be granted; the caller then checks again.  Call it without st->lock.
 * Return: true if the client was cancelled (look again), false if the
 * conflict stands.
 */
bool nfs4ops_courtesy_break(struct nfs4_compound *cs, uint64_t clientid);

/*
 * Under st->lock a request finds state of another client in its way.  It
 * cannot cancel a courtesy client there (that takes srv->lock and releases
 * state), so it asks its caller to: nfs4ops_courtesy_candidate() is true
 * when @clientid is worth trying (not the caller's, not found to be live
 * already); the op then returns NFS4OPS_RETRY, and the caller drops
 * st->lock, calls nfs4ops_courtesy_retry() and runs the op again if that
 * says so (the client was cancelled), else again with the conflict
 * standing.
 */
#define NFS4OPS_RETRY 0xfffffffdu
bool nfs4ops_courtesy_candidate(struct nfs4_compound *cs, uint64_t clientid);
/** nfs4ops_courtesy_retry - cancel cs->courtesy_cid if it is a courtesy client; false: it is not (remembered). */
bool nfs4ops_courtesy_retry(struct nfs4_compound *cs);

/**
 * nfs4ops_file_type - the status of an operation that needs a regular file
 * on a file of type @mode (RFC 8881 18.10.3, 18.11.3, 18.12.3, 18.22.3):
 * NFS4_OK, NFS4ERR_ISDIR, NFS4ERR_SYMLINK, or for other types
 * NFS4ERR_WRONG_TYPE (4.1) / NFS4ERR_INVAL (4.0, which has no WRONG_TYPE).
 */
uint32_t nfs4ops_file_type(const struct nfs4_compound *cs, mode_t mode);

/*
 * Test hook: when set, called as an OPEN, CLOSE, LOCK, LOCKU,
 * OPEN_DOWNGRADE or OPEN_CONFIRM passes its owner's seqid gate (4.0), or
 * the place where 4.0 would have one (4.1), with no lock held; @owner
 * names the state-owner.  Tests use it to see which requests run at the
 * same time and in which order.
 */
typedef void (*nfs4ops_seq_hook_fn)(const struct nfs4_compound *cs, uint32_t op, const void *owner, uint32_t seqid);
extern _Atomic nfs4ops_seq_hook_fn nfs4ops_seq_hook;

/*
 * Test hook: when set, called just before LOCK, LOCKT or LOCKU asks the MDS
 * about the file @ino (lc_setlk, lc_getlk), in the thread that makes the
 * call.  Tests hold a request there to stand for a slow MDS answer.
 */
typedef void (*nfs4ops_mds_lock_hook_fn)(const struct nfs4_compound *cs, uint32_t op, uint64_t ino);
extern _Atomic nfs4ops_mds_lock_hook_fn nfs4ops_mds_lock_hook;

/* ---- delegations (ops_deleg.c) ---------------------------------------------- */

/* A recall decided under the state lock, sent after it is dropped. */
struct nfs4ops_recall {
	bool pending;
	uint64_t clientid;
	struct nfs4_stateid sid;
	struct nfs4_fh fh;
};

/* why_no_delegation4 (RFC 8881 18.16.2) */
enum { WND4_NOT_WANTED = 0, WND4_CONTENTION = 1, WND4_RESOURCE = 2, WND4_NOT_SUPP_FTYPE = 3,
       WND4_WRITE_DELEG_NOT_SUPP_FTYPE = 4, WND4_NOT_SUPP_UPGRADE = 5, WND4_NOT_SUPP_DOWNGRADE = 6,
       WND4_CANCELLED = 7, WND4_IS_DIR = 8 };
#define NFS4_DELEG_GRANT 0xffffffffu    /* nfs4ops_deleg_may_grant: yes */

/**
 * nfs4ops_deleg_may_grant - may an open of (@access, @deny) by @clientid of
 * @f get a delegation (a write one if @access has write, else a read one)?
 * NFS4_DELEG_GRANT, or the WND4_* reason why not.  st->lock held.
 */
uint32_t nfs4ops_deleg_may_grant(struct nfs4_compound *cs, struct os_file *f, uint64_t clientid, uint32_t access,
				 uint32_t deny);
/** nfs4ops_deleg_nfs_handles_locked - client-library handles the NFS opens of @f hold.  st->lock held. */
unsigned int nfs4ops_deleg_nfs_handles_locked(const struct os_file *f);
/**
 * nfs4ops_deleg_getattr - another client than the holder of a write
 * delegation of @attr's file asks its size or change: CB_GETATTR, and
 * @attr's size and change as the holder reports them (ops_deleg.c).
 */
void nfs4ops_deleg_getattr(struct nfs4_compound *cs, struct lc_attr *attr);
/** nfs4ops_deleg_put - open_delegation4 for a delegation @sid (@write: a write one). */
void nfs4ops_deleg_put(struct xdr_enc *res, const struct nfs4_stateid *sid, bool write);
/**
 * nfs4ops_deleg_break_locked - a request of @clientid for @access to @f is
 * in the way of another client's delegation: true (answer NFS4ERR_DELAY),
 * with the recall to send in @rc if it is the first.  st->lock held.
 */
bool nfs4ops_deleg_break_locked(struct nfs4_compound *cs, struct os_file *f, uint64_t clientid, uint32_t access,
				struct nfs4ops_recall *rc);
/** nfs4ops_deleg_recall_send - queue the CB_RECALL @rc decided (no lock held). */
void nfs4ops_deleg_recall_send(struct nfs4_compound *cs, const struct nfs4ops_recall *rc);
/** nfs4ops_deleg_tick - revoke delegations not returned within a lease of their recall. */
void nfs4ops_deleg_tick(struct nfs4_server *srv, struct nfs4ops_ctx *c, uint64_t now);
/**
 * nfs4ops_deleg_conflict - this gateway's own request changes @ino (REMOVE,
 * RENAME, LINK, SETATTR of size/mode/owner, a truncating OPEN): recall the
 * delegations on it that are not @holder's (0: the session's client, or
 * the client of @sid if it is a regular stateid); NFS4ERR_DELAY while one
 * is out, else NFS4_OK.  No lock held.
 */
uint32_t nfs4ops_deleg_conflict(struct nfs4_compound *cs, uint64_t ino, uint64_t holder,
				const struct nfs4_stateid *sid);
/** nfs4ops_deleg_freed - a revoked delegation of @clientid was freed: clear the flag when none is left. */
void nfs4ops_deleg_freed(struct nfs4_compound *cs, uint64_t clientid);

/* change_info4 */
void nfs4ops_put_cinfo(struct xdr_enc *e, uint64_t before, uint64_t after);

/* ---- attributes (ops_attr.c) ---------------------------------------------- */

/* fattr4 attribute numbers (RFC 8881 5.6, 5.7) */
enum {
	FATTR4_SUPPORTED_ATTRS = 0, FATTR4_TYPE = 1, FATTR4_FH_EXPIRE_TYPE = 2, FATTR4_CHANGE = 3,
	FATTR4_SIZE = 4, FATTR4_LINK_SUPPORT = 5, FATTR4_SYMLINK_SUPPORT = 6, FATTR4_NAMED_ATTR = 7,
	FATTR4_FSID = 8, FATTR4_UNIQUE_HANDLES = 9, FATTR4_LEASE_TIME = 10, FATTR4_RDATTR_ERROR = 11,
	FATTR4_ACL = 12, FATTR4_ACLSUPPORT = 13, FATTR4_CANSETTIME = 15, FATTR4_CASE_INSENSITIVE = 16,
	FATTR4_CASE_PRESERVING = 17, FATTR4_CHOWN_RESTRICTED = 18, FATTR4_FILEHANDLE = 19,
	FATTR4_FILEID = 20, FATTR4_FILES_AVAIL = 21, FATTR4_FILES_FREE = 22, FATTR4_FILES_TOTAL = 23,
	FATTR4_HOMOGENEOUS = 26, FATTR4_MAXFILESIZE = 27, FATTR4_MAXLINK = 28, FATTR4_MAXNAME = 29,
	FATTR4_MAXREAD = 30, FATTR4_MAXWRITE = 31, FATTR4_MODE = 33, FATTR4_NO_TRUNC = 34,
	FATTR4_NUMLINKS = 35, FATTR4_OWNER = 36, FATTR4_OWNER_GROUP = 37, FATTR4_RAWDEV = 41,
	FATTR4_SPACE_AVAIL = 42, FATTR4_SPACE_FREE = 43, FATTR4_SPACE_TOTAL = 44, FATTR4_SPACE_USED = 45,
	FATTR4_TIME_ACCESS = 47, FATTR4_TIME_ACCESS_SET = 48, FATTR4_TIME_DELTA = 51,
	FATTR4_TIME_METADATA = 52, FATTR4_TIME_MODIFY = 53, FATTR4_TIME_MODIFY_SET = 54,
	FATTR4_MOUNTED_ON_FILEID = 55, FATTR4_SUPPATTR_EXCLCREAT = 75,
};

/* nfs_ftype4 */
enum { NF4REG = 1, NF4DIR = 2, NF4BLK = 3, NF4CHR = 4, NF4LNK = 5, NF4SOCK = 6, NF4FIFO = 7,
       NF4ATTRDIR = 8, NF4NAMEDATTR = 9 };

#define NFS4_MAXIO (1024u * 1024u)

/* What an encode needs about one object besides its lc_attr. */
struct nfs4_attr_src {
	const struct lc_attr *a;
	const struct nfs4_fh *fh;        /* for FATTR4_FILEHANDLE, may be NULL */
	uint64_t fsid_major, fsid_minor;
	uint64_t mounted_on_fileid;
	uint32_t lease_secs;
	uint64_t maxfilesize;            /* lc_max_file_size(); 0: INT64_MAX */
	const struct statvfs *sfs;       /* NULL: space/files attributes read as 0 */
	uint32_t rdattr_error;           /* for READDIR entries that failed */
	uint32_t minor;                  /* the minor version asking: supported_attrs depends on it */
	struct idmap *idmap;             /* owner strings by name; NULL: numeric */
	/* FATTR4_ACL: the POSIX ACLs (xattr form) nfs4ops_fetch_acls read;
	 * NULL: none (or not read: READDIR), the mode stands for it */
	const uint8_t *acl, *dacl;
	size_t acl_len, dacl_len;
};

/** nfs4_attr_supported - the bitmap of attributes we encode for minor version 1 (3 words). */
void nfs4_attr_supported(uint32_t w[3]);
/** nfs4_attr_supported_minor - ... for @minor: 4.0 gets no attribute it does not define (suppattr_exclcreat). */
void nfs4_attr_supported_minor(uint32_t w[3], uint32_t minor);
/** nfs4_attr_write_only - @req asks for a write-only attribute (time_*_set): NFS4ERR_INVAL in GETATTR/READDIR. */
bool nfs4_attr_write_only(const struct xdr_bitmap *req);
/**
 * nfs4_attr_encode - fattr4 {bitmap4 attrmask; attrlist4 attr_vals} for the
 * requested bits we support.  Return: 0 or the encoder's error.
 */
int nfs4_attr_encode(struct xdr_enc *e, const struct xdr_bitmap *req, const struct nfs4_attr_src *s);
/** nfs4_attr_want_statfs - @req asks for an attribute that needs lc_statfs(). */
bool nfs4_attr_want_statfs(const struct xdr_bitmap *req);

/* A decoded settable fattr4 (SETATTR, CREATE, OPEN createattrs). */
struct nfs4_sattr {
	struct lc_attr a;
	int mask;                        /* LC_SET_* */
	uint32_t set[3];                 /* the attribute bits given */
	bool has_acl;                    /* FATTR4_ACL given: its value at @acl (checked XDR) */
	struct xdr_dec acl;
};

/**
 * nfs4_sattr_decode - a fattr4 with only settable attributes; owner and
 * owner_group mapped with @map (NULL: numbers and "nobody" only).  May ask
 * NSS (idmap.h): call it with no lock held.
 * Return: NFS4_OK, NFS4ERR_BADXDR, NFS4ERR_ATTRNOTSUPP, NFS4ERR_INVAL
 * (read-only attribute given, empty owner), NFS4ERR_BADOWNER (a name
 * unknown or of another domain), NFS4ERR_DELAY (NSS failed).
 */
uint32_t nfs4_sattr_decode(struct xdr_dec *d, struct idmap *map, struct nfs4_sattr *s);

/* the buffers nfs4ops_fetch_acls filled (nfs4ops_acl_bufs_free) */
struct nfs4_acl_bufs {
	uint8_t *acl, *dacl;
};
/**
 * nfs4ops_fetch_acls - read @o's POSIX access and default ACLs into @b and
 * point @s at them (FATTR4_ACL); what is missing stays NULL (the mode
 * stands for it).  No lock may be held.
 */
void nfs4ops_fetch_acls(struct nfs4_compound *cs, const struct nfs4_obj *o, struct nfs4_acl_bufs *b,
			struct nfs4_attr_src *s);
void nfs4ops_acl_bufs_free(struct nfs4_acl_bufs *b);
/**
 * nfs4ops_set_acl - set the acl attribute @sa holds (sa->has_acl) on @o, as
 * @o->cr: a POSIX access ACL and, for a directory, its default ACL (knfsd's
 * nfsd4_set_nfs4_acl).  No lock may be held.  Return: NFS4_OK or a status.
 */
uint32_t nfs4ops_set_acl(struct nfs4_compound *cs, const struct nfs4_obj *o, struct nfs4_sattr *sa);
/** nfs4ops_fill_src - fill @s for @o (fsid, mounted_on, lease). */
void nfs4ops_fill_src(struct nfs4_compound *cs, const struct nfs4_obj *o, const struct nfs4_fh *fh,
		      struct nfs4_attr_src *s);

#endif
