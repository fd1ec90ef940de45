/*
 * caps.c - CAPS messages: grant, revoke, ack, flush, flush_ack, release,
 * update.  Fixed size, nothing allocated.
 */
#include "mds_proto/proto_int.h"

int enc_caps(struct mdsp_buf *b, const struct mdsp_caps *cp)
{
	size_t off = struct_open(b, V_CAPS, 1);

	put_u32(b, cp->op);
	put_u64(b, cp->ino);
	put_u32(b, cp->caps);
	put_u32(b, cp->wanted);
	put_u64(b, cp->seq);
	put_u64(b, cp->flush_tid);
	put_u32(b, cp->dirty);
	enc_inode(b, &cp->attr);
	struct_close(b, off);
	return 0;
}

int dec_caps(struct cur *c, struct mdsp_caps *cp)
{
	const uint8_t *outer;

	if (struct_enter(c, V_CAPS, &outer, NULL))
		return -EBADMSG;
	if (get_u32(c, &cp->op) || get_u64(c, &cp->ino) || get_u32(c, &cp->caps) ||
	    get_u32(c, &cp->wanted) || get_u64(c, &cp->seq) || get_u64(c, &cp->flush_tid) ||
	    get_u32(c, &cp->dirty) || dec_inode(c, &cp->attr))
		return -EBADMSG;
	struct_leave(c, outer);
	return 0;
}
