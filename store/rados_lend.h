/*
 * rados_lend.h - reads whose bytes stay in librados' own buffer (the C++
 * API: rados_lend.cc), for the rados backend's store_aio_read_lend().
 *
 * librados' C API copies a read's bytes out of the reply message into the
 * caller's buffer, in the messenger thread that every OSD reply of the
 * client goes through (C_aio_Complete).  A lent read keeps the reply's
 * bufferlist instead: no copy at all, and the one thread that receives and
 * checksums every reply does nothing more for it.
 */
#ifndef LOLIGO_STORE_RADOS_LEND_H
#define LOLIGO_STORE_RADOS_LEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rados/librados.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rados_lend;

/* Start a read of @len (> 0) bytes at @off of @oid.  0 and *@out, or -errno (nothing started). */
int rados_lend_read(rados_ioctx_t io, const char *oid, uint64_t off, size_t len, struct rados_lend **out);
/*
 * Wait for @l: bytes read (short at the object's end) or -errno.  *@data
 * points at them, contiguous, valid until rados_lend_put(@l).  Once only.
 */
ssize_t rados_lend_wait(struct rados_lend *l, const char **data);
/* Drop @l and its buffer (waiting first for a read nobody waited for). */
void rados_lend_put(struct rados_lend *l);

#ifdef __cplusplus
}
#endif

#endif
