/*
 * tmpfile_hook.c - O_TMPFILE on a libfuse that does not know FUSE_TMPFILE.
 *
 * The kernel sends open(dir, O_TMPFILE) as FUSE_TMPFILE (protocol 7.37),
 * with the body of a FUSE_CREATE (struct fuse_create_in and a name: the
 * VFS's placeholder "/") and wants the reply of a CREATE (fuse_entry_out,
 * fuse_open_out).  libfuse 3.14 has no operation for it and answers ENOSYS,
 * after which the kernel says EOPNOTSUPP for the mount's lifetime.
 *
 * So the request is renamed on its way in: a read hook (libfuse's custom
 * I/O, on the fd libfuse mounted with, and on each cloned one, as both
 * loops read through it) turns the opcode into FUSE_CREATE, and ll_create
 * tells it by the name "/", which no real CREATE can carry (a name is one
 * path component).  Everything else of the request - its unique id for the
 * reply and INTERRUPT, the credentials, the umask - is libfuse's usual
 * handling, and the reply is fuse_reply_create's.  This needs the request
 * in memory: splice reads (FUSE_CAP_SPLICE_READ) would bypass the hook, and
 * the init op keeps them off (it has no write_buf op, so they never are on).
 *
 * The same hook tells LeakSanitizer (ASan builds only) to ignore what
 * libfuse allocates for a FUSE_INTERRUPT.  libfuse 3.14 keeps an interrupt
 * whose request is no longer in flight (answered while the interrupt was
 * on its way: a signal to a process waiting on the mount at that moment)
 * in the session's interrupt list, in case the request comes later; it is
 * dropped when a next request comes, but fuse_session_destroy never frees
 * what is left, so one struct fuse_req could be reported leaked at exit.
 * Leak checking is off for this thread from the read of an INTERRUPT to
 * its next read, which is libfuse's do_interrupt (and our interrupt
 * callback) only; every other allocation, ours in a handler included,
 * stays checked.
 */
#include <errno.h>
#include <linux/fuse.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "client/fuse/lfuse.h"

#if defined(__SANITIZE_ADDRESS__)
#define LFUSE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LFUSE_LSAN 1
#endif
#endif
#ifdef LFUSE_LSAN
#include <sanitizer/lsan_interface.h>

static __thread bool lsan_off;  /* this thread read an INTERRUPT last */
#endif

static ssize_t hook_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n;
	struct fuse_in_header *h = buf;
	const char *name = (const char *)buf + sizeof(*h) + sizeof(struct fuse_create_in);

	(void)userdata;
#ifdef LFUSE_LSAN
	if (lsan_off) {
		__lsan_enable();
		lsan_off = false;
	}
#endif
	n = read(fd, buf, len);
#ifdef LFUSE_LSAN
	if (n >= (ssize_t)sizeof(*h) && h->opcode == FUSE_INTERRUPT) {
		__lsan_disable();
		lsan_off = true;
	}
#endif
	/* only a well-formed one: anything else stays FUSE_TMPFILE, which
	 * libfuse answers ENOSYS as before */
	if (n >= (ssize_t)(sizeof(*h) + sizeof(struct fuse_create_in) + 2) && h->opcode == FUSE_TMPFILE &&
	    h->len == (uint32_t)n && name[0] == '/' && name[1] == '\0')
		h->opcode = FUSE_CREATE;
	return n;
}

static ssize_t hook_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	return writev(fd, iov, count);
}

int lfuse_tmpfile_hook(struct fuse_session *se)
{
	static const struct fuse_custom_io io = {
		.read = hook_read,
		.writev = hook_writev,
	};

	return fuse_session_custom_io(se, &io, fuse_session_fd(se));
}
