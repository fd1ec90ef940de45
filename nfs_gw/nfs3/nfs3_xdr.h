/*
 * nfs3_xdr.h - NFSv3 (RFC 1813) and MOUNT v3 (RFC 1813 appendix I) on the
 * wire: constants, the decoded arguments of every procedure, and the
 * encoders of the pieces results are built from.
 *
 * The decoders are pure functions over a struct xdr_dec (bounded reads,
 * sticky error): they return 0 or -EBADMSG and never look past the record.
 * Variable-length items (names, paths, write data) point into the record;
 * their length is checked against the protocol limit here, their content
 * (a '/' in a name, an empty path) by the procedures, which answer those
 * with an NFS status rather than GARBAGE_ARGS.  tests/fuzz/fuzz_nfs3.c
 * runs every decoder over arbitrary bytes.
 */
#ifndef LOLIGO_NFS_GW_NFS3_NFS3_XDR_H
#define LOLIGO_NFS_GW_NFS3_NFS3_XDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nfs_gw/rpc/xdr.h"

#define NFS3_PROGRAM 100003
#define NFS3_VERSION 3
#define MOUNT_PROGRAM 100005
#define MOUNT_V3 3

#define NFS3_FHSIZE 64
#define NFS3_COOKIEVERFSIZE 8
#define NFS3_CREATEVERFSIZE 8
#define NFS3_WRITEVERFSIZE 8
#define NFS3_MAXNAMLEN 255
#define NFS3_MAXPATHLEN 4096
#define MNTPATHLEN 1024
#define MNTNAMLEN 255

enum nfs3_proc {
	NFS3PROC_NULL = 0, NFS3PROC_GETATTR, NFS3PROC_SETATTR, NFS3PROC_LOOKUP, NFS3PROC_ACCESS,
	NFS3PROC_READLINK, NFS3PROC_READ, NFS3PROC_WRITE, NFS3PROC_CREATE, NFS3PROC_MKDIR, NFS3PROC_SYMLINK,
	NFS3PROC_MKNOD, NFS3PROC_REMOVE, NFS3PROC_RMDIR, NFS3PROC_RENAME, NFS3PROC_LINK, NFS3PROC_READDIR,
	NFS3PROC_READDIRPLUS, NFS3PROC_FSSTAT, NFS3PROC_FSINFO, NFS3PROC_PATHCONF, NFS3PROC_COMMIT,
	NFS3PROC_MAX
};

enum mount_proc {
	MOUNTPROC3_NULL = 0, MOUNTPROC3_MNT, MOUNTPROC3_DUMP, MOUNTPROC3_UMNT, MOUNTPROC3_UMNTALL,
	MOUNTPROC3_EXPORT, MOUNTPROC3_MAX
};

enum nfsstat3 {
	NFS3_OK = 0, NFS3ERR_PERM = 1, NFS3ERR_NOENT = 2, NFS3ERR_IO = 5, NFS3ERR_NXIO = 6, NFS3ERR_ACCES = 13,
	NFS3ERR_EXIST = 17, NFS3ERR_XDEV = 18, NFS3ERR_NODEV = 19, NFS3ERR_NOTDIR = 20, NFS3ERR_ISDIR = 21,
	NFS3ERR_INVAL = 22, NFS3ERR_FBIG = 27, NFS3ERR_NOSPC = 28, NFS3ERR_ROFS = 30, NFS3ERR_MLINK = 31,
	NFS3ERR_NAMETOOLONG = 63, NFS3ERR_NOTEMPTY = 66, NFS3ERR_DQUOT = 69, NFS3ERR_STALE = 70,
	NFS3ERR_REMOTE = 71, NFS3ERR_BADHANDLE = 10001, NFS3ERR_NOT_SYNC = 10002, NFS3ERR_BAD_COOKIE = 10003,
	NFS3ERR_NOTSUPP = 10004, NFS3ERR_TOOSMALL = 10005, NFS3ERR_SERVERFAULT = 10006, NFS3ERR_BADTYPE = 10007,
	NFS3ERR_JUKEBOX = 10008,
};

enum mountstat3 {
	MNT3_OK = 0, MNT3ERR_PERM = 1, MNT3ERR_NOENT = 2, MNT3ERR_IO = 5, MNT3ERR_ACCES = 13, MNT3ERR_NOTDIR = 20,
	MNT3ERR_INVAL = 22, MNT3ERR_NAMETOOLONG = 63, MNT3ERR_NOTSUPP = 10004, MNT3ERR_SERVERFAULT = 10006,
};

enum ftype3 { NF3REG = 1, NF3DIR = 2, NF3BLK = 3, NF3CHR = 4, NF3LNK = 5, NF3SOCK = 6, NF3FIFO = 7 };

#define ACCESS3_READ 0x0001
#define ACCESS3_LOOKUP 0x0002
#define ACCESS3_MODIFY 0x0004
#define ACCESS3_EXTEND 0x0008
#define ACCESS3_DELETE 0x0010
#define ACCESS3_EXECUTE 0x0020

enum stable_how { NFS3_UNSTABLE = 0, NFS3_DATA_SYNC = 1, NFS3_FILE_SYNC = 2 };
enum createmode3 { NFS3_UNCHECKED = 0, NFS3_GUARDED = 1, NFS3_EXCLUSIVE = 2 };
enum time_how { DONT_CHANGE = 0, SET_TO_SERVER_TIME = 1, SET_TO_CLIENT_TIME = 2 };

#define FSF3_LINK 0x0001
#define FSF3_SYMLINK 0x0002
#define FSF3_HOMOGENEOUS 0x0008
#define FSF3_CANSETTIME 0x0010

/* ---- decoded pieces ------------------------------------------------------ */

struct nfs3_fh {
	uint32_t len;
	uint8_t data[NFS3_FHSIZE];
};

struct nfs3_time {
	uint32_t sec, nsec;
};

/* sattr3: what to set (LC_SET_* bits) and the values */
struct nfs3_sattr {
	int mask;                        /* LC_SET_MODE|UID|GID|SIZE|ATIME|MTIME|ATIME_NOW|MTIME_NOW */
	uint32_t mode, uid, gid;
	uint64_t size;
	struct nfs3_time atime, mtime;
};

/* a name in a directory: the name points into the record */
struct nfs3_diropargs {
	struct nfs3_fh dir;
	const uint8_t *name;
	uint32_t name_len;
};

struct nfs3_fattr {
	uint32_t type, mode, nlink, uid, gid;
	uint64_t size, used;
	uint32_t rdev_major, rdev_minor;
	uint64_t fsid, fileid;
	struct nfs3_time atime, mtime, ctime;
};

/* wcc_attr */
struct nfs3_wcc_attr {
	uint64_t size;
	struct nfs3_time mtime, ctime;
};

/* ---- arguments ----------------------------------------------------------- */

struct nfs3_setattr_args {
	struct nfs3_fh fh;
	struct nfs3_sattr sa;
	bool guard;
	struct nfs3_time guard_ctime;
};

struct nfs3_access_args {
	struct nfs3_fh fh;
	uint32_t access;
};

struct nfs3_read_args {
	struct nfs3_fh fh;
	uint64_t offset;
	uint32_t count;
};

struct nfs3_write_args {
	struct nfs3_fh fh;
	uint64_t offset;
	uint32_t count;
	uint32_t stable;
	const uint8_t *data;
	uint32_t data_len;
};

struct nfs3_create_args {
	struct nfs3_diropargs where;
	uint32_t mode;                   /* createmode3 */
	struct nfs3_sattr sa;            /* UNCHECKED, GUARDED */
	uint8_t verf[NFS3_CREATEVERFSIZE]; /* EXCLUSIVE */
};

struct nfs3_mkdir_args {
	struct nfs3_diropargs where;
	struct nfs3_sattr sa;
};

struct nfs3_symlink_args {
	struct nfs3_diropargs where;
	struct nfs3_sattr sa;
	const uint8_t *path;
	uint32_t path_len;
};

struct nfs3_mknod_args {
	struct nfs3_diropargs where;
	uint32_t type;                   /* ftype3 */
	struct nfs3_sattr sa;            /* CHR, BLK, SOCK, FIFO */
	uint32_t major, minor;           /* CHR, BLK */
};

struct nfs3_rename_args {
	struct nfs3_diropargs from, to;
};

struct nfs3_link_args {
	struct nfs3_fh fh;
	struct nfs3_diropargs link;
};

struct nfs3_readdir_args {
	struct nfs3_fh dir;
	uint64_t cookie;
	uint8_t verf[NFS3_COOKIEVERFSIZE];
	uint32_t dircount;               /* READDIRPLUS only */
	uint32_t count;                  /* READDIR count, READDIRPLUS maxcount */
};

struct nfs3_commit_args {
	struct nfs3_fh fh;
	uint64_t offset;
	uint32_t count;
};

/* ---- decoders: 0 or -EBADMSG --------------------------------------------- */

int nfs3_dec_fh(struct xdr_dec *d, struct nfs3_fh *fh);
int nfs3_dec_sattr(struct xdr_dec *d, struct nfs3_sattr *sa);
int nfs3_dec_diropargs(struct xdr_dec *d, struct nfs3_diropargs *a);
int nfs3_dec_setattr(struct xdr_dec *d, struct nfs3_setattr_args *a);
int nfs3_dec_access(struct xdr_dec *d, struct nfs3_access_args *a);
int nfs3_dec_read(struct xdr_dec *d, struct nfs3_read_args *a);
int nfs3_dec_write(struct xdr_dec *d, struct nfs3_write_args *a);
int nfs3_dec_create(struct xdr_dec *d, struct nfs3_create_args *a);
int nfs3_dec_mkdir(struct xdr_dec *d, struct nfs3_mkdir_args *a);
int nfs3_dec_symlink(struct xdr_dec *d, struct nfs3_symlink_args *a);
int nfs3_dec_mknod(struct xdr_dec *d, struct nfs3_mknod_args *a);
int nfs3_dec_rename(struct xdr_dec *d, struct nfs3_rename_args *a);
int nfs3_dec_link(struct xdr_dec *d, struct nfs3_link_args *a);
/** @plus: READDIRPLUS (dircount and maxcount) rather than READDIR (count). */
int nfs3_dec_readdir(struct xdr_dec *d, bool plus, struct nfs3_readdir_args *a);
int nfs3_dec_commit(struct xdr_dec *d, struct nfs3_commit_args *a);
/** nfs3_dec_dirpath - MOUNT's dirpath (string<MNTPATHLEN>), pointing into the record. */
int nfs3_dec_dirpath(struct xdr_dec *d, const uint8_t **path, uint32_t *len);

/* ---- encoders (sticky errors in the encoder) ------------------------------ */

void nfs3_put_fh(struct xdr_enc *e, const struct nfs3_fh *fh);
void nfs3_put_fattr(struct xdr_enc *e, const struct nfs3_fattr *a);
/** post_op_attr: @a NULL encodes "no attributes". */
void nfs3_put_post_op_attr(struct xdr_enc *e, const struct nfs3_fattr *a);
/** wcc_data: pre (NULL: none) then post (NULL: none). */
void nfs3_put_wcc(struct xdr_enc *e, const struct nfs3_wcc_attr *pre, const struct nfs3_fattr *post);
/** post_op_fh3: @fh NULL encodes "no handle". */
void nfs3_put_post_op_fh(struct xdr_enc *e, const struct nfs3_fh *fh);

#endif
