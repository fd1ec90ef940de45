/*
 * codec.h - private to mds/: the bounded little-endian helpers the MDS
 * writes its on-disk structs with (dentries, inodes, journal entries,
 * session records, the journal header).
 *
 * Same rules as the wire protocol: every struct is "u8 version, u8 compat,
 * u32 length, fields"; a decoder enters a struct with a cursor narrowed to
 * its length and skips fields past the ones it knows when it leaves, so a
 * newer MDS can add fields that an older one steps over.  A reader never
 * reads past its cursor: a short or corrupt record sets c->bad and every
 * later read returns zeros, so callers check bad once at the end.
 */
#ifndef LOLIGO_MDS_CODEC_H
#define LOLIGO_MDS_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mds_proto/proto.h"

/* ---- encoding into a struct mdsp_buf (its oom flag records failures) ---- */
bool enc_reserve(struct mdsp_buf *b, size_t n);
void enc_bytes(struct mdsp_buf *b, const void *p, size_t n);
void enc_u8(struct mdsp_buf *b, uint8_t v);
void enc_u32(struct mdsp_buf *b, uint32_t v);
void enc_u64(struct mdsp_buf *b, uint64_t v);
void enc_str(struct mdsp_buf *b, const char *s);          /* u32 len + bytes */
void enc_blob(struct mdsp_buf *b, const void *p, uint32_t len);
/* enc_begin returns the offset to pass to enc_end, which patches the length. */
size_t enc_begin(struct mdsp_buf *b, uint8_t version, uint8_t compat);
void enc_end(struct mdsp_buf *b, size_t start);

/* ---- decoding ----------------------------------------------------------- */
struct dec {
	const uint8_t *p, *end;
	bool bad;
};

static inline void dec_init(struct dec *c, const void *p, size_t len)
{
	c->p = p;
	c->end = (const uint8_t *)p + len;
	c->bad = false;
}

uint8_t dec_u8(struct dec *c);
uint32_t dec_u32(struct dec *c);
uint64_t dec_u64(struct dec *c);
const void *dec_bytes(struct dec *c, size_t n);
/* A string into a new NUL-terminated buffer (NULL + bad on error or > max). */
char *dec_str(struct dec *c, size_t max);
/* A string as a pointer into the buffer (no copy, not NUL-terminated). */
const char *dec_str_ref(struct dec *c, size_t max, uint32_t *len);
const void *dec_blob_ref(struct dec *c, size_t max, uint32_t *len);
/*
 * dec_enter - enter a versioned struct: checks compat <= @known and narrows
 * @sub to the struct's bytes; the parent @c steps over the whole struct.
 * Returns the struct's version (0 and bad on error).
 */
uint8_t dec_enter(struct dec *c, uint8_t known, struct dec *sub);

/* little-endian stores into raw memory */
static inline void le32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}
static inline uint32_t le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline void le64_put(uint8_t *p, uint64_t v)
{
	le32_put(p, (uint32_t)v);
	le32_put(p + 4, (uint32_t)(v >> 32));
}
static inline uint64_t le64_get(const uint8_t *p)
{
	return (uint64_t)le32_get(p) | (uint64_t)le32_get(p + 4) << 32;
}

#endif
