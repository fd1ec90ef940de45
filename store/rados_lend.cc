/*
 * rados_lend.cc - the lent reads of rados_lend.h, through librados' C++ API
 * (the only one that hands out a reply's bufferlist).
 *
 * The C handle the rest of the backend uses (rados_ioctx_t) is wrapped in an
 * IoCtx per read (IoCtx::from_rados_ioctx_t: a reference on the same
 * IoCtxImpl, no new connection); the completion has no callback, so the
 * waiter is woken by the messenger thread that received the reply, as for
 * the C API's waited reads.  Nothing here throws into C: every librados or
 * bufferlist call that can is inside a try block.
 */
#include <cerrno>
#include <new>
#include <string>

#include <rados/librados.hpp>

#include "store/rados_lend.h"

struct rados_lend {
	librados::AioCompletion *c = nullptr;
	ceph::bufferlist bl;
	bool waited = false;
};

extern "C" int rados_lend_read(rados_ioctx_t io, const char *oid, uint64_t off, size_t len, struct rados_lend **out)
{
	struct rados_lend *l = new (std::nothrow) rados_lend;
	int r;

	if (!l)
		return -ENOMEM;
	try {
		librados::IoCtx ioctx;

		librados::IoCtx::from_rados_ioctx_t(io, ioctx);
		l->c = librados::Rados::aio_create_completion();
		r = ioctx.aio_read(oid, l->c, &l->bl, len, off);
	} catch (const std::bad_alloc &) {
		r = -ENOMEM;
	} catch (...) {
		r = -EIO;
	}
	if (r < 0) {
		if (l->c)
			l->c->release();
		delete l;
		return r;
	}
	*out = l;
	return 0;
}

extern "C" ssize_t rados_lend_wait(struct rados_lend *l, const char **data)
{
	l->c->wait_for_complete();
	l->waited = true;
	int r = l->c->get_return_value();
	*data = nullptr;
	if (r < 0)
		return r;
	try {
		/* one segment (a reply's data is one receive buffer): no copy;
		 * else c_str() makes it one */
		if (l->bl.length())
			*data = l->bl.c_str();
	} catch (...) {
		return -ENOMEM;
	}
	return (ssize_t)l->bl.length() < r ? (ssize_t)l->bl.length() : r;
}

extern "C" void rados_lend_put(struct rados_lend *l)
{
	if (!l)
		return;
	if (!l->waited)
		l->c->wait_for_complete();   /* librados writes l->bl until then */
	l->c->release();
	delete l;
}
