/*
 * xdr.h - bounded XDR (RFC 4506) encoding and decoding for nfs_gw.
 *
 * Decoders read from a struct xdr_dec, a window [p, end) over a received
 * record; every read checks the window first, so a truncated or hostile
 * message can only ever produce -EBADMSG, never a read past the end.
 * Variable-length items come with a caller-chosen maximum and are returned
 * as pointers into the record (zero copy; valid while the record is).
 * The first failure is sticky in d->err, so a caller may decode a run of
 * fields and test once at the end.
 *
 * Encoders append to a growable struct xdr_enc bounded by a maximum size
 * (the reply limit); overflow makes the encoder sticky-failed with
 * -EMSGSIZE (or -ENOMEM).  Offsets, not pointers, name positions in the
 * buffer because it may move while it grows.
 */
#ifndef LOLIGO_NFS_GW_RPC_XDR_H
#define LOLIGO_NFS_GW_RPC_XDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XDR_UNIT 4u
#define XDR_PAD(n) (((n) + 3u) & ~(size_t)3u)

/* bitmap4: we know attributes/flags up to 96 bits; words past that are
 * read (bounded by XDR_BITMAP_MAX_WORDS) and remembered as "extra". */
#define XDR_BITMAP_WORDS 3
#define XDR_BITMAP_MAX_WORDS 64

struct xdr_dec {
	const uint8_t *p;
	const uint8_t *end;
	int err;                /* 0 or -EBADMSG, sticky */
};

struct xdr_bitmap {
	uint32_t w[XDR_BITMAP_WORDS];
	uint32_t nwords;        /* words on the wire, up to XDR_BITMAP_MAX_WORDS */
	bool extra;             /* a bit beyond XDR_BITMAP_WORDS*32 was set */
};

static inline void xdr_dec_init(struct xdr_dec *d, const void *buf, size_t len)
{
	d->p = buf;
	d->end = (const uint8_t *)buf + len;
	d->err = 0;
}

static inline size_t xdr_dec_left(const struct xdr_dec *d)
{
	return (size_t)(d->end - d->p);
}

int xdr_get_u32(struct xdr_dec *d, uint32_t *v);
int xdr_get_u64(struct xdr_dec *d, uint64_t *v);
int xdr_get_i64(struct xdr_dec *d, int64_t *v);
/** xdr_get_bool - a u32 that must be 0 or 1 (anything else is -EBADMSG). */
int xdr_get_bool(struct xdr_dec *d, bool *v);
/** xdr_get_fixed - @len bytes (plus padding) copied to @buf. */
int xdr_get_fixed(struct xdr_dec *d, void *buf, size_t len);
/** xdr_get_fixed_ptr - @len bytes (plus padding), returned in place. */
int xdr_get_fixed_ptr(struct xdr_dec *d, const uint8_t **data, size_t len);
/**
 * xdr_get_opaque - variable-length opaque<@max>, returned in place.
 * A length over @max or over what is left is -EBADMSG.
 */
int xdr_get_opaque(struct xdr_dec *d, const uint8_t **data, uint32_t *len, uint32_t max);
/** xdr_get_opaque_copy - opaque<@max> copied into @buf (@max <= buf size). */
int xdr_get_opaque_copy(struct xdr_dec *d, void *buf, uint32_t *len, uint32_t max);
/**
 * xdr_get_string - string<@max> copied into @buf and NUL-terminated;
 * @bufsz must be > @max.  An embedded NUL is -EBADMSG.
 */
int xdr_get_string(struct xdr_dec *d, char *buf, size_t bufsz, uint32_t max);
/** xdr_get_bitmap - bitmap4, bounded by XDR_BITMAP_MAX_WORDS. */
int xdr_get_bitmap(struct xdr_dec *d, struct xdr_bitmap *bm);
/** xdr_skip - skip @len bytes plus padding. */
int xdr_skip(struct xdr_dec *d, size_t len);

struct xdr_enc {
	uint8_t *buf;
	size_t len;             /* bytes written */
	size_t cap;             /* bytes allocated */
	size_t max;             /* hard bound on len */
	int err;                /* 0, -EMSGSIZE or -ENOMEM, sticky */
};

/** xdr_enc_init - empty encoder bounded by @max bytes; allocates lazily. */
void xdr_enc_init(struct xdr_enc *e, size_t max);
void xdr_enc_free(struct xdr_enc *e);
/** xdr_enc_steal - hand the buffer to the caller (free() it); resets @e. */
uint8_t *xdr_enc_steal(struct xdr_enc *e, size_t *len);
/** xdr_enc_truncate - drop everything after offset @len (clears err). */
void xdr_enc_truncate(struct xdr_enc *e, size_t len);

/** xdr_reserve - append @n bytes; return their offset or -err. */
long xdr_reserve(struct xdr_enc *e, size_t n);
static inline uint8_t *xdr_at(struct xdr_enc *e, size_t off)
{
	return e->buf + off;
}
int xdr_put_u32(struct xdr_enc *e, uint32_t v);
int xdr_put_i32(struct xdr_enc *e, int32_t v);
int xdr_put_u64(struct xdr_enc *e, uint64_t v);
int xdr_put_bool(struct xdr_enc *e, bool v);
int xdr_put_fixed(struct xdr_enc *e, const void *data, size_t len);
int xdr_put_opaque(struct xdr_enc *e, const void *data, uint32_t len);
int xdr_put_string(struct xdr_enc *e, const char *s);
/** xdr_put_bitmap - the shortest bitmap4 holding every set bit of @w[0..n). */
int xdr_put_bitmap(struct xdr_enc *e, const uint32_t *w, uint32_t n);
/** xdr_patch_u32 - overwrite the u32 at offset @off (written earlier). */
void xdr_patch_u32(struct xdr_enc *e, size_t off, uint32_t v);

static inline uint32_t xdr_load_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void xdr_store_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

#endif
