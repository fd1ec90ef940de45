/*
 * codec.c - bounded encode/decode helpers for the MDS's on-disk structs
 * (see codec.h).  Pure functions over memory.  The encoders write through
 * mds_proto's buffer (mds_proto/buf.h): one growable buffer and one
 * struct envelope for the wire and the disk.
 */
#include <stdlib.h>
#include <string.h>

#include "mds/codec.h"
#include "mds_proto/buf.h"

bool enc_reserve(struct mdsp_buf *b, size_t n)
{
	return mdsp_buf_reserve(b, n);
}

void enc_bytes(struct mdsp_buf *b, const void *p, size_t n)
{
	mdsp_buf_put(b, p, n);
}

void enc_u8(struct mdsp_buf *b, uint8_t v)
{
	enc_bytes(b, &v, 1);
}

void enc_u32(struct mdsp_buf *b, uint32_t v)
{
	uint8_t x[4];

	le32_put(x, v);
	enc_bytes(b, x, 4);
}

void enc_u64(struct mdsp_buf *b, uint64_t v)
{
	uint8_t x[8];

	le64_put(x, v);
	enc_bytes(b, x, 8);
}

void enc_str(struct mdsp_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	enc_u32(b, (uint32_t)n);
	enc_bytes(b, s, n);
}

void enc_blob(struct mdsp_buf *b, const void *p, uint32_t len)
{
	enc_u32(b, len);
	enc_bytes(b, p, len);
}

size_t enc_begin(struct mdsp_buf *b, uint8_t version, uint8_t compat)
{
	return mdsp_struct_open(b, version, compat);
}

void enc_end(struct mdsp_buf *b, size_t start)
{
	if (b->oom || start + 4 > b->len)
		return;
	mdsp_struct_close(b, start);
}

const void *dec_bytes(struct dec *c, size_t n)
{
	const uint8_t *p;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return NULL;
	}
	p = c->p;
	c->p += n;
	return p;
}

uint8_t dec_u8(struct dec *c)
{
	const uint8_t *p = dec_bytes(c, 1);

	return p ? p[0] : 0;
}

uint32_t dec_u32(struct dec *c)
{
	const uint8_t *p = dec_bytes(c, 4);

	return p ? le32_get(p) : 0;
}

uint64_t dec_u64(struct dec *c)
{
	const uint8_t *p = dec_bytes(c, 8);

	return p ? le64_get(p) : 0;
}

const char *dec_str_ref(struct dec *c, size_t max, uint32_t *len)
{
	uint32_t n = dec_u32(c);
	const char *p;

	if (c->bad || n > max) {
		c->bad = true;
		*len = 0;
		return NULL;
	}
	p = dec_bytes(c, n);
	*len = p ? n : 0;
	return p;
}

const void *dec_blob_ref(struct dec *c, size_t max, uint32_t *len)
{
	return dec_str_ref(c, max, len);
}

char *dec_str(struct dec *c, size_t max)
{
	uint32_t n;
	const char *p = dec_str_ref(c, max, &n);
	char *s;

	if (c->bad)
		return NULL;
	if (memchr(p ? p : "", 0, n)) {
		c->bad = true;
		return NULL;
	}
	s = malloc(n + 1);
	if (!s) {
		c->bad = true;
		return NULL;
	}
	if (n)
		memcpy(s, p, n);
	s[n] = 0;
	return s;
}

uint8_t dec_enter(struct dec *c, uint8_t known, struct dec *sub)
{
	uint8_t version = dec_u8(c);
	uint8_t compat = dec_u8(c);
	uint32_t len = dec_u32(c);
	const void *p;

	sub->bad = true;
	sub->p = sub->end = NULL;
	if (c->bad || compat > known || version == 0) {
		c->bad = true;
		return 0;
	}
	p = dec_bytes(c, len);
	if (!p)
		return 0;
	dec_init(sub, p, len);
	return version;
}
