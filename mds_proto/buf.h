/*
 * buf.h - the growable output buffer of the MDS protocol (buf.c), for
 * encoders outside mds_proto: the MDS's on-disk records (mds/codec.c) are
 * written into the same struct mdsp_buf, with the same envelope ("u8
 * version, u8 compat, u32 length"), by the same code.  An allocation
 * failure sets b->oom, after which every put is a no-op: the encoder
 * checks oom once at the end.
 */
#ifndef LOLIGO_MDS_PROTO_BUF_H
#define LOLIGO_MDS_PROTO_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mds_proto/proto.h"

/** mdsp_buf_reserve - room for @n more bytes.  Return: false (and b->oom set) when there is none. */
bool mdsp_buf_reserve(struct mdsp_buf *b, size_t n);
/** mdsp_buf_put - append @n bytes of @p (nothing once b->oom is set). */
void mdsp_buf_put(struct mdsp_buf *b, const void *p, size_t n);
/** mdsp_struct_open - the envelope of a versioned struct; returns where its length goes. */
size_t mdsp_struct_open(struct mdsp_buf *b, uint8_t version, uint8_t compat);
/** mdsp_struct_close - patch the length of the struct opened at @len_off (nothing once b->oom is set). */
void mdsp_struct_close(struct mdsp_buf *b, size_t len_off);

#endif
