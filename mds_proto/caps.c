/*
 * caps.c - CAPS messages: grant, revoke, ack, flush, flush_ack, release,
 * update, and the dentry lease ops.  Version 2 adds the lease's name;
 * version 3 the extents a flush adds to and takes from what the file's
 * objects hold (bounded: MDSP_FLUSH_EXT_MAX of each).
 */
#include <stdlib.h>

#include "mds_proto/proto_int.h"

int enc_caps(struct mdsp_buf *b, const struct mdsp_caps *cp)
{
	size_t off;
	int r;

	if ((r = enc_check_str(cp->dname, MDSP_NAME_MAX, "caps dname")) ||
	    (r = enc_check_count(cp->n_ext_add, MDSP_FLUSH_EXT_MAX, cp->ext_add, "caps ext_add")) ||
	    (r = enc_check_count(cp->n_ext_rm, MDSP_FLUSH_EXT_MAX, cp->ext_rm, "caps ext_rm")))
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
	put_bool(b, cp->has_ext);               /* v3 */
	put_extents(b, cp->ext_add, cp->n_ext_add);
	put_extents(b, cp->ext_rm, cp->n_ext_rm);
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
	if (v >= 3 && ((r = get_bool(c, &cp->has_ext)) || (r = get_extents(c, &cp->ext_add, &cp->n_ext_add, MDSP_FLUSH_EXT_MAX)) ||
		       (r = get_extents(c, &cp->ext_rm, &cp->n_ext_rm, MDSP_FLUSH_EXT_MAX)))) {
		free_caps(cp);
		return r;
	}
	struct_leave(c, outer);
	return 0;
}

void free_caps(struct mdsp_caps *cp)
{
	free(cp->dname);
	cp->dname = NULL;
	free(cp->ext_add);
	free(cp->ext_rm);
	cp->ext_add = cp->ext_rm = NULL;
	cp->n_ext_add = cp->n_ext_rm = 0;
}
