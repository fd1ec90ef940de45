/*
 * caps.c - CAPS messages: grant, revoke, ack, flush, flush_ack, release,
 * update, and the dentry lease ops.  Version 2 adds the lease's name, the
 * only allocation.
 */
#include <stdlib.h>

#include "mds_proto/proto_int.h"

int enc_caps(struct mdsp_buf *b, const struct mdsp_caps *cp)
{
	size_t off;
	int r;

	if ((r = enc_check_str(cp->dname, MDSP_NAME_MAX, "caps dname")))
		return r;
	off = struct_open(b, V_CAPS, 1);

	put_u32(b, cp->op);
	put_u64(b, cp->ino);
	put_u32(b, cp->caps);
	put_u32(b, cp->wanted);
	put_u64(b, cp->seq);
	put_u64(b, cp->flush_tid);
	put_u32(b, cp->dirty);
	enc_inode(b, &cp->attr);
	put_str(b, cp->dname);
	struct_close(b, off);
	return 0;
}

int dec_caps(struct cur *c, struct mdsp_caps *cp)
{
	const uint8_t *outer;
	uint8_t v;
	int r;

	if (struct_enter(c, V_CAPS, &outer, &v))
		return -EBADMSG;
	if (get_u32(c, &cp->op) || get_u64(c, &cp->ino) || get_u32(c, &cp->caps) ||
	    get_u32(c, &cp->wanted) || get_u64(c, &cp->seq) || get_u64(c, &cp->flush_tid) ||
	    get_u32(c, &cp->dirty) || dec_inode(c, &cp->attr))
		return -EBADMSG;
	if (v >= 2 && (r = get_str(c, &cp->dname, MDSP_NAME_MAX)))
		return r;
	struct_leave(c, outer);
	return 0;
}

void free_caps(struct mdsp_caps *cp)
{
	free(cp->dname);
	cp->dname = NULL;
}
