/*
 * proto_int.h - private to mds_proto/: the bounded little-endian primitives
 * every encoder and decoder is written with, the struct envelope, and the
 * per-message entry points that frame.c dispatches to.
 *
 * Wire rules (proto.h has the summary):
 *  - integers little-endian, fixed width; bools one byte, 0 or 1;
 *  - a struct mdsp_time is two scalars (s64 sec, u32 nsec) with no envelope
 *    of its own, like Ceph's utime_t: it will never grow fields;
 *  - every other struct is "u8 version, u8 compat, u32 length, fields";
 *    length counts the bytes after the envelope;
 *  - a string is u32 length + bytes, no NUL; length MDSP_STR_NULL (all ones)
 *    encodes a NULL pointer, so NULL and "" survive a round trip distinctly;
 *  - a blob is u32 length + bytes (length 0 decodes to a NULL pointer);
 *  - an array is u32 count + elements.
 *
 * Decoding runs over a cursor (p, end).  Every read checks what is left
 * first; a failure records a short static reason in the cursor and returns
 * -EBADMSG.  Entering a struct narrows end to the struct's length, so the
 * fields of a newer peer past the ones we know are skipped when the struct
 * is left, and no field of ours can read into the next struct.
 */
#ifndef LOLIGO_MDS_PROTO_PROTO_INT_H
#define LOLIGO_MDS_PROTO_PROTO_INT_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "mds_proto/proto.h"

/* Struct versions we write and understand.  Bump the version when adding a
 * field at the end of a struct; bump compat only when older decoders can no
 * longer make sense of the struct at all. */
#define V_SESSION        8   /* 2: secret, proof; 3: max_file_size; 4: client metadata;
				 * 5: locks, store_addr; 6: slow_ops, slow_op;
				 * 7: reclaim_sid, reclaim_uuid; 8: deleg_tid */
#define V_CAP_RECONNECT  2   /* 2: dname, seq */
#define V_REQUEST        3   /* 2: want_ino; 3: umask */
#define V_CALLER         1
#define V_LOCK           2   /* 2: owner_ns, session_id, wait_tid, ino */
#define V_INODE          5   /* 2: blocks, flags; 3: xattrs; 4: rstats, quotas; 5: layout */
#define V_REPLY          4   /* 2: dir caps, trace flags, lease; 3: delegated inos; 4: extents */
#define V_DIRENT         2
#define V_STATFS         1
#define V_CAPS           3   /* 2: dname; 3: has_ext, ext_add, ext_rm */
#define V_COMMAND        1
#define V_COMMAND_REPLY  1
#define V_AUTH           1

#define ENVELOPE_LEN     6          /* u8 version, u8 compat, u32 length */
#define MDSP_STR_NULL    0xffffffffu

/* Bound on free-text fields that proto.h leaves open (session reason). */
#define REASON_MAX       MDSP_PATH_MAX

/* Smallest wire size of a version-1 struct, for "count fits in what is
 * left" checks before an array is allocated. */
#define INODE_WIRE_MIN          (ENVELOPE_LEN + 124)
#define CAP_RECONNECT_WIRE_MIN  (ENVELOPE_LEN + 16)
#define LOCK_WIRE_MIN           (ENVELOPE_LEN + 36)
#define DIRENT_WIRE_MIN         (ENVELOPE_LEN + 4 + 8 + INODE_WIRE_MIN)

/* ---- encoding --------------------------------------------------------- */

bool buf_reserve(struct mdsp_buf *b, size_t n);

/* The fast path inline: most fields land in room the buffer already has. */
static inline void put_bytes(struct mdsp_buf *b, const void *src, size_t n)
{
	if (n == 0 || b->oom)
		return;
	if (b->cap - b->len < n && !buf_reserve(b, n))
		return;
	memcpy(b->data + b->len, src, n);
	b->len += n;
}

static inline void put_u8(struct mdsp_buf *b, uint8_t v)
{
	put_bytes(b, &v, 1);
}

static inline void put_u16(struct mdsp_buf *b, uint16_t v)
{
	uint8_t x[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
	put_bytes(b, x, 2);
}

static inline void le32(uint8_t *x, uint32_t v)
{
	x[0] = (uint8_t)v;
	x[1] = (uint8_t)(v >> 8);
	x[2] = (uint8_t)(v >> 16);
	x[3] = (uint8_t)(v >> 24);
}

static inline void le64(uint8_t *x, uint64_t v)
{
	le32(x, (uint32_t)v);
	le32(x + 4, (uint32_t)(v >> 32));
}

static inline void put_u32(struct mdsp_buf *b, uint32_t v)
{
	uint8_t x[4];
	le32(x, v);
	put_bytes(b, x, 4);
}

static inline void put_u64(struct mdsp_buf *b, uint64_t v)
{
	uint8_t x[8];
	le64(x, v);
	put_bytes(b, x, 8);
}

static inline void put_s32(struct mdsp_buf *b, int32_t v)
{
	put_u32(b, (uint32_t)v);
}

static inline void put_s64(struct mdsp_buf *b, int64_t v)
{
	put_u64(b, (uint64_t)v);
}

static inline void put_bool(struct mdsp_buf *b, bool v)
{
	put_u8(b, v ? 1 : 0);
}

/* A NULL @s is written as MDSP_STR_NULL.  Bounds are checked beforehand
 * with enc_check_str(). */
void put_str(struct mdsp_buf *b, const char *s);
void put_blob(struct mdsp_buf *b, const uint8_t *data, uint32_t len);
void put_time(struct mdsp_buf *b, const struct mdsp_time *t);

/* Open a struct: writes the envelope with a placeholder length and returns
 * where the length sits; struct_close() patches it. */
size_t struct_open(struct mdsp_buf *b, uint8_t version, uint8_t compat);
void struct_close(struct mdsp_buf *b, size_t len_off);

/* Encoder-side bound checks: a field over its bound is a caller bug; these
 * log it (naming @what) and return -EINVAL. */
int enc_check_str(const char *s, size_t max, const char *what);
int enc_check_blob(const uint8_t *data, uint32_t len, uint32_t max, const char *what);
int enc_check_count(uint32_t n, uint32_t max, const void *array, const char *what);

/* ---- decoding --------------------------------------------------------- */

struct cur {
	const uint8_t *p, *end;
	const char *why;            /* first failure reason, static text */
};

static inline int dec_bad(struct cur *c, const char *why)
{
	if (!c->why)
		c->why = why;
	return -EBADMSG;
}

static inline size_t cur_left(const struct cur *c)
{
	return (size_t)(c->end - c->p);
}

static inline uint32_t rd32(const uint8_t *x)
{
	return (uint32_t)x[0] | (uint32_t)x[1] << 8 | (uint32_t)x[2] << 16 |
	       (uint32_t)x[3] << 24;
}

static inline uint64_t rd64(const uint8_t *x)
{
	return (uint64_t)rd32(x) | (uint64_t)rd32(x + 4) << 32;
}

static inline int get_u8(struct cur *c, uint8_t *v)
{
	if (c->end - c->p < 1)
		return dec_bad(c, "truncated");
	*v = c->p[0];
	c->p += 1;
	return 0;
}

static inline int get_u16(struct cur *c, uint16_t *v)
{
	if (c->end - c->p < 2)
		return dec_bad(c, "truncated");
	*v = (uint16_t)(c->p[0] | c->p[1] << 8);
	c->p += 2;
	return 0;
}

static inline int get_u32(struct cur *c, uint32_t *v)
{
	if (c->end - c->p < 4)
		return dec_bad(c, "truncated");
	*v = rd32(c->p);
	c->p += 4;
	return 0;
}

static inline int get_u64(struct cur *c, uint64_t *v)
{
	if (c->end - c->p < 8)
		return dec_bad(c, "truncated");
	*v = rd64(c->p);
	c->p += 8;
	return 0;
}

static inline int get_s32(struct cur *c, int32_t *v)
{
	uint32_t u;
	int r = get_u32(c, &u);

	if (!r)
		*v = (int32_t)u;
	return r;
}

static inline int get_s64(struct cur *c, int64_t *v)
{
	uint64_t u;
	int r = get_u64(c, &u);

	if (!r)
		*v = (int64_t)u;
	return r;
}

static inline int get_bytes(struct cur *c, void *dst, size_t n)
{
	if (cur_left(c) < n)
		return dec_bad(c, "truncated");
	memcpy(dst, c->p, n);
	c->p += n;
	return 0;
}

int get_bool(struct cur *c, bool *v);
int get_time(struct cur *c, struct mdsp_time *t);

/* Decode a string into a fresh allocation (or NULL for MDSP_STR_NULL).
 * Rejects a length over @max or over what is left, and embedded NULs.
 * Return 0, -EBADMSG or -ENOMEM; *out is only set on success. */
int get_str(struct cur *c, char **out, uint32_t max);
/* Blob: 0 bytes -> NULL.  Same rules, NULs allowed. */
int get_blob(struct cur *c, uint8_t **out, uint32_t *len, uint32_t max);
/* Array count: over @max, or more elements than fit in what is left at
 * @min_elem bytes each, is malformed. */
int get_count(struct cur *c, uint32_t *n, uint32_t max, size_t min_elem);

/* Enter a struct whose version we understand up to @ours: checks compat,
 * narrows c->end to the struct and saves the outer end in *outer.  Leave
 * with struct_leave(), which skips any fields we do not know. */
int struct_enter(struct cur *c, uint8_t ours, const uint8_t **outer, uint8_t *version);

static inline void struct_leave(struct cur *c, const uint8_t *outer)
{
	c->p = c->end;
	c->end = outer;
}

/* ---- shared structs (structs.c) ----------------------------------------- */

void enc_inode(struct mdsp_buf *b, const struct mdsp_inode *in);
int dec_inode(struct cur *c, struct mdsp_inode *in);
/* an extent list: u32 count, then (off, len) pairs; the decoder takes at
 * most @max, checks them sorted, disjoint and aligned, and leaves *out
 * for the caller to free on failure too */
void put_extents(struct mdsp_buf *b, const struct mdsp_extent *v, uint32_t n);
int get_extents(struct cur *c, struct mdsp_extent **out, uint32_t *n, uint32_t max);
int enc_caller(struct mdsp_buf *b, const struct mdsp_caller *cl);
int dec_caller(struct cur *c, struct mdsp_caller *cl);
void enc_lock(struct mdsp_buf *b, const struct mdsp_lock *l);
int dec_lock(struct cur *c, struct mdsp_lock *l);
void enc_statfs(struct mdsp_buf *b, const struct mdsp_statfs *s);
int dec_statfs(struct cur *c, struct mdsp_statfs *s);

/* ---- messages: encode returns 0 or -EINVAL (bounds); decode returns 0,
 * -EBADMSG or -ENOMEM and frees its partial allocations on error. --------- */

int enc_session(struct mdsp_buf *b, const struct mdsp_session *s);
int dec_session(struct cur *c, struct mdsp_session *s);
void free_session(struct mdsp_session *s);

int enc_request(struct mdsp_buf *b, const struct mdsp_request *r);
int dec_request(struct cur *c, struct mdsp_request *r);
void free_request(struct mdsp_request *r);

int enc_reply(struct mdsp_buf *b, const struct mdsp_reply *r);
int dec_reply(struct cur *c, struct mdsp_reply *r);
void free_reply(struct mdsp_reply *r);

int enc_caps(struct mdsp_buf *b, const struct mdsp_caps *cp);
int dec_caps(struct cur *c, struct mdsp_caps *cp);
void free_caps(struct mdsp_caps *cp);

int enc_command(struct mdsp_buf *b, const struct mdsp_command *cmd);
int dec_command(struct cur *c, struct mdsp_command *cmd);
void free_command(struct mdsp_command *cmd);

int enc_auth(struct mdsp_buf *b, const struct mdsp_auth *a);
int dec_auth(struct cur *c, struct mdsp_auth *a);
void free_auth(struct mdsp_auth *a);

/* The MAC of @a (@alen bytes) then @b (@blen) with @mac's key, for the frame of @seq (auth.c). */
int mdsp_mac_compute(struct mdsp_mac *mac, uint64_t seq, const uint8_t *a, size_t alen, const uint8_t *b,
		     size_t blen, uint8_t out[MDSP_MAC_LEN]);

int enc_command_reply(struct mdsp_buf *b, const struct mdsp_command_reply *cr);
int dec_command_reply(struct cur *c, struct mdsp_command_reply *cr);
void free_command_reply(struct mdsp_command_reply *cr);

#endif
