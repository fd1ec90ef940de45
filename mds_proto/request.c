/*
 * request.c - REQUEST messages: one metadata operation from a client.
 *
 * Every field of struct mdsp_request travels whatever the op, so the codec
 * knows nothing of op semantics; the MDS checks that the fields an op needs
 * are there (a decoded name may be NULL: the sender sent none).  Names are
 * bounded by MDSP_NAME_MAX (which equals MDSP_XATTR_NAME_MAX, so xattr names
 * fit the same field).
 */
#include <stdlib.h>

#include "mds_proto/proto_int.h"

int enc_request(struct mdsp_buf *b, const struct mdsp_request *q)
{
	size_t off;
	int r;

	if ((r = enc_check_str(q->name, MDSP_NAME_MAX, "request name")) ||
	    (r = enc_check_str(q->name2, MDSP_NAME_MAX, "request name2")) ||
	    (r = enc_check_str(q->target, MDSP_PATH_MAX, "request symlink target")) ||
	    (r = enc_check_blob(q->data, q->data_len, MDSP_XATTR_SIZE_MAX, "request xattr value")))
		return r;

	off = struct_open(b, V_REQUEST, 1);
	put_u64(b, q->tid);
	put_u64(b, q->oldest_tid);
	put_u32(b, q->attempt);
	put_u32(b, q->flags);
	put_u32(b, q->op);
	if ((r = enc_caller(b, &q->caller)))
		return r;
	put_u64(b, q->ino);
	put_str(b, q->name);
	put_u64(b, q->ino2);
	put_str(b, q->name2);
	put_str(b, q->target);
	put_u32(b, q->mode);
	put_u32(b, q->oflags);
	put_u64(b, q->rdev);
	put_u32(b, q->mask);
	enc_inode(b, &q->attr);
	put_u64(b, q->cookie);
	put_u32(b, q->max_entries);
	put_blob(b, q->data, q->data_len);
	enc_lock(b, &q->lock);
	put_u64(b, q->want_ino);                /* v2 */
	put_u32(b, q->umask);                   /* v3 */
	struct_close(b, off);
	return 0;
}

int dec_request(struct cur *c, struct mdsp_request *q)
{
	const uint8_t *outer;
	uint8_t ver;
	int r;

	if ((r = struct_enter(c, V_REQUEST, &outer, &ver)))
		return r;
	if ((r = get_u64(c, &q->tid)) || (r = get_u64(c, &q->oldest_tid)) ||
	    (r = get_u32(c, &q->attempt)) || (r = get_u32(c, &q->flags)) ||
	    (r = get_u32(c, &q->op)) || (r = dec_caller(c, &q->caller)) ||
	    (r = get_u64(c, &q->ino)) || (r = get_str(c, &q->name, MDSP_NAME_MAX)) ||
	    (r = get_u64(c, &q->ino2)) || (r = get_str(c, &q->name2, MDSP_NAME_MAX)) ||
	    (r = get_str(c, &q->target, MDSP_PATH_MAX)) ||
	    (r = get_u32(c, &q->mode)) || (r = get_u32(c, &q->oflags)) ||
	    (r = get_u64(c, &q->rdev)) || (r = get_u32(c, &q->mask)) ||
	    (r = dec_inode(c, &q->attr)) || (r = get_u64(c, &q->cookie)) ||
	    (r = get_u32(c, &q->max_entries)) ||
	    (r = get_blob(c, &q->data, &q->data_len, MDSP_XATTR_SIZE_MAX)) ||
	    (r = dec_lock(c, &q->lock)))
		goto bad;
	if (ver >= 2 && (r = get_u64(c, &q->want_ino)))
		goto bad;
	if (ver >= 3 && (r = get_u32(c, &q->umask)))
		goto bad;
	struct_leave(c, outer);
	return 0;
bad:
	free_request(q);
	return r;
}

void free_request(struct mdsp_request *q)
{
	free(q->name);
	free(q->name2);
	free(q->target);
	free(q->data);
	q->name = q->name2 = q->target = NULL;
	q->data = NULL;
	q->data_len = 0;
}
