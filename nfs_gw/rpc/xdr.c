/*
 * xdr.c - bounded XDR primitives (see xdr.h).
 *
 * Every decoder checks the space left before touching a byte, and sizes are
 * compared as size_t against what is left so a length of 0xffffffff cannot
 * wrap a pointer.  Padding bytes are skipped, not checked for zero: RFC 4506
 * says they are zero but real clients are not always careful, and accepting
 * them costs nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nfs_gw/rpc/xdr.h"

static int bad(struct xdr_dec *d)
{
	if (!d->err)
		d->err = -EBADMSG;
	return d->err;
}

int xdr_get_u32(struct xdr_dec *d, uint32_t *v)
{
	if (d->err)
		return d->err;
	if (xdr_dec_left(d) < 4)
		return bad(d);
	*v = xdr_load_u32(d->p);
	d->p += 4;
	return 0;
}

int xdr_get_u64(struct xdr_dec *d, uint64_t *v)
{
	if (d->err)
		return d->err;
	if (xdr_dec_left(d) < 8)
		return bad(d);
	*v = (uint64_t)xdr_load_u32(d->p) << 32 | xdr_load_u32(d->p + 4);
	d->p += 8;
	return 0;
}

int xdr_get_i64(struct xdr_dec *d, int64_t *v)
{
	uint64_t u;
	int r = xdr_get_u64(d, &u);

	if (!r)
		*v = (int64_t)u;
	return r;
}

int xdr_get_bool(struct xdr_dec *d, bool *v)
{
	uint32_t u;
	int r = xdr_get_u32(d, &u);

	if (r)
		return r;
	if (u > 1)
		return bad(d);
	*v = u;
	return 0;
}

int xdr_get_fixed_ptr(struct xdr_dec *d, const uint8_t **data, size_t len)
{
	size_t padded;

	if (d->err)
		return d->err;
	if (len > xdr_dec_left(d))
		return bad(d);
	padded = XDR_PAD(len);
	if (padded > xdr_dec_left(d))
		return bad(d);
	*data = d->p;
	d->p += padded;
	return 0;
}

int xdr_get_fixed(struct xdr_dec *d, void *buf, size_t len)
{
	const uint8_t *p;
	int r = xdr_get_fixed_ptr(d, &p, len);

	if (!r && len)
		memcpy(buf, p, len);
	return r;
}

int xdr_skip(struct xdr_dec *d, size_t len)
{
	const uint8_t *p;

	return xdr_get_fixed_ptr(d, &p, len);
}

int xdr_get_opaque(struct xdr_dec *d, const uint8_t **data, uint32_t *len, uint32_t max)
{
	uint32_t n;
	int r = xdr_get_u32(d, &n);

	if (r)
		return r;
	if (n > max)
		return bad(d);
	r = xdr_get_fixed_ptr(d, data, n);
	if (!r)
		*len = n;
	return r;
}

int xdr_get_opaque_copy(struct xdr_dec *d, void *buf, uint32_t *len, uint32_t max)
{
	const uint8_t *p;
	int r = xdr_get_opaque(d, &p, len, max);

	if (!r && *len)
		memcpy(buf, p, *len);
	return r;
}

int xdr_get_string(struct xdr_dec *d, char *buf, size_t bufsz, uint32_t max)
{
	const uint8_t *p;
	uint32_t n;
	int r;

	if (bufsz == 0 || max >= bufsz)
		return bad(d);      /* caller bug, but never overflow */
	r = xdr_get_opaque(d, &p, &n, max);
	if (r)
		return r;
	if (n && memchr(p, 0, n))
		return bad(d);
	memcpy(buf, p, n);
	buf[n] = 0;
	return 0;
}

int xdr_get_bitmap(struct xdr_dec *d, struct xdr_bitmap *bm)
{
	uint32_t n, i, w;

	memset(bm, 0, sizeof(*bm));
	if (xdr_get_u32(d, &n))
		return d->err;
	if (n > XDR_BITMAP_MAX_WORDS || (size_t)n * 4 > xdr_dec_left(d))
		return bad(d);
	bm->nwords = n;
	for (i = 0; i < n; i++) {
		if (xdr_get_u32(d, &w))
			return d->err;
		if (i < XDR_BITMAP_WORDS)
			bm->w[i] = w;
		else if (w)
			bm->extra = true;
	}
	return 0;
}

/* ---- encoding --------------------------------------------------------- */

void xdr_enc_init(struct xdr_enc *e, size_t max)
{
	memset(e, 0, sizeof(*e));
	e->max = max;
}

void xdr_enc_free(struct xdr_enc *e)
{
	free(e->buf);
	e->buf = NULL;
	e->len = e->cap = 0;
}

uint8_t *xdr_enc_steal(struct xdr_enc *e, size_t *len)
{
	uint8_t *b = e->buf;

	*len = e->len;
	e->buf = NULL;
	e->len = e->cap = 0;
	e->err = 0;
	return b;
}

void xdr_enc_truncate(struct xdr_enc *e, size_t len)
{
	if (len < e->len)
		e->len = len;
	e->err = 0;
}

long xdr_reserve(struct xdr_enc *e, size_t n)
{
	size_t off = e->len, need, ncap;
	uint8_t *nb;

	if (e->err)
		return e->err;
	if (n > e->max || e->len > e->max - n) {
		e->err = -EMSGSIZE;
		return e->err;
	}
	need = e->len + n;
	if (need > e->cap) {
		ncap = e->cap ? e->cap : 512;
		while (ncap < need)
			ncap *= 2;
		if (ncap > e->max)
			ncap = e->max;
		nb = realloc(e->buf, ncap);
		if (!nb) {
			e->err = -ENOMEM;
			return e->err;
		}
		e->buf = nb;
		e->cap = ncap;
	}
	e->len = need;
	return (long)off;
}

int xdr_put_u32(struct xdr_enc *e, uint32_t v)
{
	long off = xdr_reserve(e, 4);

	if (off < 0)
		return (int)off;
	xdr_store_u32(e->buf + off, v);
	return 0;
}

int xdr_put_i32(struct xdr_enc *e, int32_t v)
{
	return xdr_put_u32(e, (uint32_t)v);
}

int xdr_put_u64(struct xdr_enc *e, uint64_t v)
{
	long off = xdr_reserve(e, 8);

	if (off < 0)
		return (int)off;
	xdr_store_u32(e->buf + off, (uint32_t)(v >> 32));
	xdr_store_u32(e->buf + off + 4, (uint32_t)v);
	return 0;
}

int xdr_put_bool(struct xdr_enc *e, bool v)
{
	return xdr_put_u32(e, v ? 1 : 0);
}

int xdr_put_fixed(struct xdr_enc *e, const void *data, size_t len)
{
	size_t padded = XDR_PAD(len);
	long off;

	if (padded < len) {
		e->err = -EMSGSIZE;
		return e->err;
	}
	off = xdr_reserve(e, padded);
	if (off < 0)
		return (int)off;
	if (len)
		memcpy(e->buf + off, data, len);
	if (padded > len)
		memset(e->buf + off + len, 0, padded - len);
	return 0;
}

int xdr_put_opaque(struct xdr_enc *e, const void *data, uint32_t len)
{
	int r = xdr_put_u32(e, len);

	return r ? r : xdr_put_fixed(e, data, len);
}

int xdr_put_string(struct xdr_enc *e, const char *s)
{
	size_t n = strlen(s);

	if (n > UINT32_MAX) {
		e->err = -EMSGSIZE;
		return e->err;
	}
	return xdr_put_opaque(e, s, (uint32_t)n);
}

int xdr_put_bitmap(struct xdr_enc *e, const uint32_t *w, uint32_t n)
{
	uint32_t i;
	int r;

	while (n && !w[n - 1])
		n--;
	r = xdr_put_u32(e, n);
	for (i = 0; i < n && !r; i++)
		r = xdr_put_u32(e, w[i]);
	return r;
}

void xdr_patch_u32(struct xdr_enc *e, size_t off, uint32_t v)
{
	if (off + 4 <= e->len)
		xdr_store_u32(e->buf + off, v);
}
