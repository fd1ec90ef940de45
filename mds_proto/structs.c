/*
 * structs.c - the structs shared by several messages (inode, caller, lock,
 * statfs, extent lists).  The inode encoding is also what the MDS journals and stores in
 * its directory objects (through mdsp_encode_inode), so it must stay
 * decodable forever: only ever append fields and bump V_INODE.
 */
#include <stdlib.h>

#include "mds_proto/proto_int.h"

void put_extents(struct mdsp_buf *b, const struct mdsp_extent *v, uint32_t n)
{
	put_u32(b, n);
	for (uint32_t i = 0; i < n; i++) {
		put_u64(b, v[i].off);
		put_u64(b, v[i].len);
	}
}

int get_extents(struct cur *c, struct mdsp_extent **out, uint32_t *n, uint32_t max)
{
	int r = get_count(c, n, max, 16);

	if (r)
		return r;
	if (!*n)
		return 0;
	*out = calloc(*n, sizeof(**out));
	if (!*out) {
		*n = 0;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < *n; i++)
		if (get_u64(c, &(*out)[i].off) || get_u64(c, &(*out)[i].len))
			return -EBADMSG;
	if (!mdsp_extset_valid(*out, *n))
		return dec_bad(c, "extents not sorted, disjoint and aligned");
	return 0;
}

/* enc_inode's fields, version 5, after the envelope */
#define INODE_V5_BODY 216

static inline uint8_t *w32(uint8_t *p, uint32_t v)
{
	le32(p, v);
	return p + 4;
}

static inline uint8_t *w64(uint8_t *p, uint64_t v)
{
	le64(p, v);
	return p + 8;
}

static inline uint8_t *wtime(uint8_t *p, const struct mdsp_time *t)
{
	return w32(w64(p, (uint64_t)t->sec), t->nsec);
}

/*
 * Every reply carries inodes, a READDIR one per entry: the fixed-size
 * struct is written in one go into room reserved once, rather than as 37
 * puts that each check for room (enc_inode and its put_time calls were
 * ~7 % of the MDS's CPU in a listing storm).  The bytes are what the puts
 * wrote: version 5, compat 1, length, then the fields in order.
 */
void enc_inode(struct mdsp_buf *b, const struct mdsp_inode *in)
{
	uint8_t *p;

	if (!buf_reserve(b, ENVELOPE_LEN + INODE_V5_BODY))
		return;
	p = b->data + b->len;
	*p++ = V_INODE;
	*p++ = 1;
	p = w32(p, INODE_V5_BODY);
	p = w64(p, in->ino);
	p = w64(p, in->generation);
	p = w32(p, in->mode);
	p = w32(p, in->uid);
	p = w32(p, in->gid);
	p = w32(p, in->nlink);
	p = w64(p, in->size);
	p = w64(p, in->rdev);
	p = wtime(p, &in->atime);
	p = wtime(p, &in->mtime);
	p = wtime(p, &in->ctime);
	p = wtime(p, &in->btime);
	p = w64(p, in->change);
	p = w32(p, in->object_size);
	p = w64(p, in->max_size);
	p = w64(p, in->files);
	p = w64(p, in->blocks);                 /* v2 */
	p = w32(p, in->flags);
	p = w32(p, in->xattrs);                 /* v3 */
	p = w64(p, in->rbytes);                 /* v4 */
	p = w64(p, in->rfiles);
	p = w64(p, in->rsubdirs);
	p = wtime(p, &in->rctime);
	p = w64(p, in->quota_max_bytes);
	p = w64(p, in->quota_max_files);
	p = w64(p, in->quota_room);
	p = w32(p, in->stripe_unit);            /* v5 */
	p = w32(p, in->stripe_count);
	p = w32(p, in->pool);
	p = w32(p, in->layout_flags);
	b->len = (size_t)(p - b->data);
}

int dec_inode(struct cur *c, struct mdsp_inode *in)
{
	const uint8_t *outer;
	uint8_t v;

	if (struct_enter(c, V_INODE, &outer, &v))
		return -EBADMSG;
	if (get_u64(c, &in->ino) || get_u64(c, &in->generation) ||
	    get_u32(c, &in->mode) || get_u32(c, &in->uid) || get_u32(c, &in->gid) ||
	    get_u32(c, &in->nlink) || get_u64(c, &in->size) || get_u64(c, &in->rdev) ||
	    get_time(c, &in->atime) || get_time(c, &in->mtime) ||
	    get_time(c, &in->ctime) || get_time(c, &in->btime) ||
	    get_u64(c, &in->change) || get_u32(c, &in->object_size) ||
	    get_u64(c, &in->max_size) || get_u64(c, &in->files))
		return -EBADMSG;
	/* an older peer keeps no blocks: unknown, not "nothing stored" */
	in->blocks = MDSP_BLOCKS_UNKNOWN;
	in->flags = 0;
	if (v >= 2 && (get_u64(c, &in->blocks) || get_u32(c, &in->flags)))
		return -EBADMSG;
	in->xattrs = MDSP_XATTRS_UNKNOWN;
	if (v >= 3 && get_u32(c, &in->xattrs))
		return -EBADMSG;
	if (in->xattrs > MDSP_XATTRS_SOME)
		in->xattrs = MDSP_XATTRS_UNKNOWN;   /* a newer peer's value we cannot read: ask */
	/* an older peer keeps no rstats or quotas: zero, and no quota room limit */
	in->rbytes = in->rfiles = in->rsubdirs = 0;
	in->rctime = (struct mdsp_time){ 0, 0 };
	in->quota_max_bytes = in->quota_max_files = 0;
	in->quota_room = MDSP_QUOTA_UNSAID;
	if (v >= 4 && (get_u64(c, &in->rbytes) || get_u64(c, &in->rfiles) || get_u64(c, &in->rsubdirs) ||
		       get_time(c, &in->rctime) || get_u64(c, &in->quota_max_bytes) ||
		       get_u64(c, &in->quota_max_files) || get_u64(c, &in->quota_room)))
		return -EBADMSG;
	in->stripe_unit = in->stripe_count = in->pool = in->layout_flags = 0;
	if (v >= 5 && (get_u32(c, &in->stripe_unit) || get_u32(c, &in->stripe_count) ||
		       get_u32(c, &in->pool) || get_u32(c, &in->layout_flags)))
		return -EBADMSG;
	struct_leave(c, outer);
	return 0;
}

int enc_caller(struct mdsp_buf *b, const struct mdsp_caller *cl)
{
	size_t off;
	uint32_t i;

	if (cl->ngroups > MDSP_MAX_GROUPS)
		return enc_check_count(cl->ngroups, MDSP_MAX_GROUPS, cl->groups, "caller groups");
	off = struct_open(b, V_CALLER, 1);
	put_u32(b, cl->uid);
	put_u32(b, cl->gid);
	put_u32(b, cl->ngroups);
	for (i = 0; i < cl->ngroups; i++)
		put_u32(b, cl->groups[i]);
	put_u32(b, cl->pid);
	struct_close(b, off);
	return 0;
}

int dec_caller(struct cur *c, struct mdsp_caller *cl)
{
	const uint8_t *outer;
	uint32_t i;

	if (struct_enter(c, V_CALLER, &outer, NULL))
		return -EBADMSG;
	if (get_u32(c, &cl->uid) || get_u32(c, &cl->gid) ||
	    get_count(c, &cl->ngroups, MDSP_MAX_GROUPS, 4))
		goto bad;
	for (i = 0; i < cl->ngroups; i++)
		if (get_u32(c, &cl->groups[i]))
			goto bad;
	if (get_u32(c, &cl->pid))
		goto bad;
	struct_leave(c, outer);
	return 0;
bad:
	cl->ngroups = 0;
	return -EBADMSG;
}

void enc_lock(struct mdsp_buf *b, const struct mdsp_lock *l)
{
	size_t off = struct_open(b, V_LOCK, 1);

	put_u32(b, l->type);
	put_u32(b, l->flags);
	put_u64(b, l->start);
	put_u64(b, l->len);
	put_u64(b, l->owner);
	put_u32(b, l->pid);
	put_u32(b, l->owner_ns);        /* v2 */
	put_u64(b, l->session_id);
	put_u64(b, l->wait_tid);
	put_u64(b, l->ino);
	struct_close(b, off);
}

/* Version 1 (before owner_ns, session_id, wait_tid and ino) decodes with
 * them 0: a FUSE owner, as every owner of a version-1 peer was. */
int dec_lock(struct cur *c, struct mdsp_lock *l)
{
	const uint8_t *outer;
	uint8_t ver;

	if (struct_enter(c, V_LOCK, &outer, &ver))
		return -EBADMSG;
	if (get_u32(c, &l->type) || get_u32(c, &l->flags) || get_u64(c, &l->start) ||
	    get_u64(c, &l->len) || get_u64(c, &l->owner) || get_u32(c, &l->pid))
		return -EBADMSG;
	if (ver >= 2 && (get_u32(c, &l->owner_ns) || get_u64(c, &l->session_id) || get_u64(c, &l->wait_tid) ||
			 get_u64(c, &l->ino)))
		return -EBADMSG;
	struct_leave(c, outer);
	return 0;
}

void enc_statfs(struct mdsp_buf *b, const struct mdsp_statfs *s)
{
	size_t off = struct_open(b, V_STATFS, 1);

	put_u64(b, s->bsize);
	put_u64(b, s->blocks);
	put_u64(b, s->bfree);
	put_u64(b, s->bavail);
	put_u64(b, s->files);
	put_u64(b, s->ffree);
	put_u32(b, s->namemax);
	struct_close(b, off);
}

int dec_statfs(struct cur *c, struct mdsp_statfs *s)
{
	const uint8_t *outer;

	if (struct_enter(c, V_STATFS, &outer, NULL))
		return -EBADMSG;
	if (get_u64(c, &s->bsize) || get_u64(c, &s->blocks) || get_u64(c, &s->bfree) ||
	    get_u64(c, &s->bavail) || get_u64(c, &s->files) || get_u64(c, &s->ffree) ||
	    get_u32(c, &s->namemax))
		return -EBADMSG;
	struct_leave(c, outer);
	return 0;
}

/* ---- public: the MDS journal and directory objects embed inodes ---------- */

int mdsp_encode_inode(struct mdsp_buf *b, const struct mdsp_inode *in)
{
	enc_inode(b, in);
	return b->oom ? -ENOMEM : 0;
}

int mdsp_decode_inode(const uint8_t **p, const uint8_t *end, struct mdsp_inode *in)
{
	struct cur c = { .p = *p, .end = end };
	struct mdsp_inode tmp;

	if (!*p || end < *p)
		return -EBADMSG;
	memset(&tmp, 0, sizeof(tmp));
	if (dec_inode(&c, &tmp))
		return -EBADMSG;
	*in = tmp;
	*p = c.p;
	return 0;
}
