/*
 * buf.c - the growable output buffer and the bounded primitives that every
 * encoder and decoder of the MDS protocol is written with (proto_int.h has
 * the wire rules).  Nothing here knows about messages.
 */
#include <stdlib.h>

#include "common/log.h"
#include "mds_proto/buf.h"
#include "mds_proto/proto_int.h"

void mdsp_buf_init(struct mdsp_buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->oom = false;
}

void mdsp_buf_free(struct mdsp_buf *b)
{
	free(b->data);
	mdsp_buf_init(b);
}

/* Make room for @n more bytes; on failure set oom, after which every put is
 * a no-op and the encoder reports -ENOMEM. */
bool buf_reserve(struct mdsp_buf *b, size_t n)
{
	size_t need, cap;
	uint8_t *d;

	if (b->oom)
		return false;
	if (n > SIZE_MAX - b->len)
		goto oom;
	need = b->len + n;
	if (need <= b->cap)
		return true;
	cap = b->cap ? b->cap : 256;
	while (cap < need) {
		if (cap > SIZE_MAX / 2) {
			cap = need;
			break;
		}
		cap *= 2;
	}
	d = realloc(b->data, cap);
	if (!d)
		goto oom;
	b->data = d;
	b->cap = cap;
	return true;
oom:
	b->oom = true;
	return false;
}

void put_str(struct mdsp_buf *b, const char *s)
{
	size_t n;

	if (!s) {
		put_u32(b, MDSP_STR_NULL);
		return;
	}
	n = strlen(s);          /* bounded by enc_check_str() beforehand */
	put_u32(b, (uint32_t)n);
	put_bytes(b, s, n);
}

void put_blob(struct mdsp_buf *b, const uint8_t *data, uint32_t len)
{
	put_u32(b, len);
	put_bytes(b, data, len);
}

void put_time(struct mdsp_buf *b, const struct mdsp_time *t)
{
	put_s64(b, t->sec);
	put_u32(b, t->nsec);
}

size_t struct_open(struct mdsp_buf *b, uint8_t version, uint8_t compat)
{
	size_t off;

	put_u8(b, version);
	put_u8(b, compat);
	off = b->len;
	put_u32(b, 0);
	return off;
}

void struct_close(struct mdsp_buf *b, size_t len_off)
{
	if (b->oom)
		return;
	le32(b->data + len_off, (uint32_t)(b->len - len_off - 4));
}

int enc_check_str(const char *s, size_t max, const char *what)
{
	if (s && strnlen(s, max + 1) > max) {
		derr(PROTO, "mdsp encode: %s longer than %zu bytes", what, max);
		return -EINVAL;
	}
	return 0;
}

int enc_check_blob(const uint8_t *data, uint32_t len, uint32_t max, const char *what)
{
	if (len > max) {
		derr(PROTO, "mdsp encode: %s of %u bytes over the bound %u", what, len, max);
		return -EINVAL;
	}
	if (len && !data) {
		derr(PROTO, "mdsp encode: %s has length %u but no data", what, len);
		return -EINVAL;
	}
	return 0;
}

int enc_check_count(uint32_t n, uint32_t max, const void *array, const char *what)
{
	if (n > max) {
		derr(PROTO, "mdsp encode: %u %s over the bound %u", n, what, max);
		return -EINVAL;
	}
	if (n && !array) {
		derr(PROTO, "mdsp encode: %u %s but no array", n, what);
		return -EINVAL;
	}
	return 0;
}

int get_bool(struct cur *c, bool *v)
{
	uint8_t x;

	if (get_u8(c, &x))
		return -EBADMSG;
	if (x > 1)
		return dec_bad(c, "bool not 0 or 1");
	*v = x;
	return 0;
}

int get_time(struct cur *c, struct mdsp_time *t)
{
	if (get_s64(c, &t->sec) || get_u32(c, &t->nsec))
		return -EBADMSG;
	return 0;
}

int get_str(struct cur *c, char **out, uint32_t max)
{
	uint32_t n;
	char *s;

	if (get_u32(c, &n))
		return -EBADMSG;
	if (n == MDSP_STR_NULL) {
		*out = NULL;
		return 0;
	}
	if (n > max)
		return dec_bad(c, "string over its bound");
	if (cur_left(c) < n)
		return dec_bad(c, "truncated string");
	if (memchr(c->p, '\0', n))
		return dec_bad(c, "NUL inside a string");
	s = malloc((size_t)n + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, c->p, n);
	s[n] = '\0';
	c->p += n;
	*out = s;
	return 0;
}

int get_blob(struct cur *c, uint8_t **out, uint32_t *len, uint32_t max)
{
	uint32_t n;
	uint8_t *d;

	if (get_u32(c, &n))
		return -EBADMSG;
	if (n > max)
		return dec_bad(c, "blob over its bound");
	if (cur_left(c) < n)
		return dec_bad(c, "truncated blob");
	if (n == 0) {
		*out = NULL;
		*len = 0;
		return 0;
	}
	d = malloc(n);
	if (!d)
		return -ENOMEM;
	memcpy(d, c->p, n);
	c->p += n;
	*out = d;
	*len = n;
	return 0;
}

int get_count(struct cur *c, uint32_t *n, uint32_t max, size_t min_elem)
{
	if (get_u32(c, n))
		return -EBADMSG;
	if (*n > max)
		return dec_bad(c, "count over its bound");
	if (min_elem && *n > cur_left(c) / min_elem)
		return dec_bad(c, "count larger than the message");
	return 0;
}

int struct_enter(struct cur *c, uint8_t ours, const uint8_t **outer, uint8_t *version)
{
	uint8_t v, compat;
	uint32_t len;

	if (get_u8(c, &v) || get_u8(c, &compat) || get_u32(c, &len))
		return -EBADMSG;
	if (compat > ours)
		return dec_bad(c, "struct needs a newer decoder (compat)");
	if (v == 0 || v < compat)
		return dec_bad(c, "bad struct version");
	if (len > cur_left(c))
		return dec_bad(c, "struct length past the end");
	*outer = c->end;
	c->end = c->p + len;
	if (version)
		*version = v;
	return 0;
}

/* ---- buf.h: the same primitives for encoders outside mds_proto ---------- */

bool mdsp_buf_reserve(struct mdsp_buf *b, size_t n)
{
	return buf_reserve(b, n);
}

void mdsp_buf_put(struct mdsp_buf *b, const void *p, size_t n)
{
	put_bytes(b, p, n);
}

size_t mdsp_struct_open(struct mdsp_buf *b, uint8_t version, uint8_t compat)
{
	return struct_open(b, version, compat);
}

void mdsp_struct_close(struct mdsp_buf *b, size_t len_off)
{
	struct_close(b, len_off);
}
