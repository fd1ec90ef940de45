/*
 * reply.c - REPLY messages: the result of a request, with the trace (the
 * directory and target inodes, so the client can fill its cache without a
 * second round trip), caps granted on the target, and the op's output:
 * readdir entries, a symlink target, xattr data, a lock, statfs, the
 * extents a file's objects hold (version 4, EXTENTS).
 *
 * A readdir reply is the one large message: up to MDSP_READDIR_MAX entries.
 * The entry array is allocated only after its count has been checked
 * against both that bound and the bytes actually left in the message.
 */
#include <stdlib.h>
#include <string.h>

#include "mds_proto/proto_int.h"

/* a listing's bytes: each entry's fixed part, its optional inode fields
 * at their usual size, its name (names are checked before this is used) */
size_t mdsp_reply_size_hint(const struct mdsp_reply *rp)
{
	size_t n = MDSP_HDR_LEN + 512;
	uint32_t i;

	if (!rp->entries)
		return n;
	for (i = 0; i < rp->nentries; i++)
		n += DIRENT_WIRE_MIN + 32 + (rp->entries[i].name ? strlen(rp->entries[i].name) : 0);
	return n;
}

int enc_reply(struct mdsp_buf *b, const struct mdsp_reply *rp)
{
	size_t off, eoff;
	uint32_t i;
	int r;

	if ((r = enc_check_str(rp->dname, MDSP_NAME_MAX, "reply dname")) ||
	    (r = enc_check_count(rp->nentries, MDSP_READDIR_MAX, rp->entries, "readdir entries")) ||
	    (r = enc_check_str(rp->link, MDSP_PATH_MAX, "reply link")) ||
	    (r = enc_check_blob(rp->data, rp->data_len, MDSP_XATTR_SIZE_MAX, "reply data")) ||
	    (r = enc_check_count(rp->n_ext, MDSP_INODE_EXT_MAX, rp->ext, "reply extents")))
		return r;
	for (i = 0; i < rp->nentries; i++)
		if ((r = enc_check_str(rp->entries[i].name, MDSP_NAME_MAX, "readdir entry name")))
			return r;
	/* a big listing: room for it at once, not by doubling from 256 bytes */
	if (rp->nentries)
		buf_reserve(b, mdsp_reply_size_hint(rp));

	off = struct_open(b, V_REPLY, 1);
	put_u64(b, rp->tid);
	put_s32(b, rp->result);
	put_u32(b, rp->flags);
	put_bool(b, rp->has_dir);
	if (rp->has_dir)
		enc_inode(b, &rp->dir);
	put_str(b, rp->dname);
	put_bool(b, rp->has_target);
	if (rp->has_target)
		enc_inode(b, &rp->target);
	put_u32(b, rp->caps);
	put_u64(b, rp->cap_seq);
	put_u32(b, rp->nentries);
	for (i = 0; i < rp->nentries; i++) {
		eoff = struct_open(b, V_DIRENT, 1);
		put_str(b, rp->entries[i].name);
		put_u64(b, rp->entries[i].cookie);
		enc_inode(b, &rp->entries[i].inode);
		put_u32(b, rp->entries[i].caps);
		put_u64(b, rp->entries[i].cap_seq);
		put_bool(b, rp->entries[i].lease);
		put_u64(b, rp->entries[i].lease_seq);
		struct_close(b, eoff);
	}
	put_bool(b, rp->end);
	put_str(b, rp->link);
	put_blob(b, rp->data, rp->data_len);
	enc_lock(b, &rp->lock);
	enc_statfs(b, &rp->statfs);
	put_u32(b, rp->dir_caps);
	put_u64(b, rp->dir_cap_seq);
	put_u32(b, rp->trace_flags);
	put_u64(b, rp->lease_seq);
	put_u64(b, rp->deleg_start);
	put_u64(b, rp->deleg_len);
	put_extents(b, rp->ext, rp->n_ext);     /* v4 */
	struct_close(b, off);
	return 0;
}

static int dec_dirent(struct cur *c, struct mdsp_dirent *de)
{
	const uint8_t *outer;
	uint8_t v;
	int r;

	if ((r = struct_enter(c, V_DIRENT, &outer, &v)))
		return r;
	if ((r = get_str(c, &de->name, MDSP_NAME_MAX)) || (r = get_u64(c, &de->cookie)) ||
	    (r = dec_inode(c, &de->inode)))
		return r;
	if (v >= 2 && ((r = get_u32(c, &de->caps)) || (r = get_u64(c, &de->cap_seq)) ||
		       (r = get_bool(c, &de->lease)) || (r = get_u64(c, &de->lease_seq))))
		return r;
	struct_leave(c, outer);
	return 0;
}

int dec_reply(struct cur *c, struct mdsp_reply *rp)
{
	const uint8_t *outer;
	uint32_t i, n;
	uint8_t v;
	int r;

	if ((r = struct_enter(c, V_REPLY, &outer, &v)))
		return r;
	if ((r = get_u64(c, &rp->tid)) || (r = get_s32(c, &rp->result)) ||
	    (r = get_u32(c, &rp->flags)) || (r = get_bool(c, &rp->has_dir)))
		goto bad;
	if (rp->has_dir && (r = dec_inode(c, &rp->dir)))
		goto bad;
	if ((r = get_str(c, &rp->dname, MDSP_NAME_MAX)) || (r = get_bool(c, &rp->has_target)))
		goto bad;
	if (rp->has_target && (r = dec_inode(c, &rp->target)))
		goto bad;
	if ((r = get_u32(c, &rp->caps)) || (r = get_u64(c, &rp->cap_seq)) ||
	    (r = get_count(c, &n, MDSP_READDIR_MAX, DIRENT_WIRE_MIN)))
		goto bad;
	if (n) {
		rp->entries = calloc(n, sizeof(*rp->entries));
		if (!rp->entries) {
			r = -ENOMEM;
			goto bad;
		}
		rp->nentries = n;
		for (i = 0; i < n; i++)
			if ((r = dec_dirent(c, &rp->entries[i])))
				goto bad;
	}
	if ((r = get_bool(c, &rp->end)) || (r = get_str(c, &rp->link, MDSP_PATH_MAX)) ||
	    (r = get_blob(c, &rp->data, &rp->data_len, MDSP_XATTR_SIZE_MAX)) ||
	    (r = dec_lock(c, &rp->lock)) || (r = dec_statfs(c, &rp->statfs)))
		goto bad;
	if (v >= 2 && ((r = get_u32(c, &rp->dir_caps)) || (r = get_u64(c, &rp->dir_cap_seq)) ||
		       (r = get_u32(c, &rp->trace_flags)) || (r = get_u64(c, &rp->lease_seq))))
		goto bad;
	if (v >= 3 && ((r = get_u64(c, &rp->deleg_start)) || (r = get_u64(c, &rp->deleg_len))))
		goto bad;
	if (rp->deleg_start + rp->deleg_len < rp->deleg_start || (rp->deleg_len && !rp->deleg_start)) {
		r = -EBADMSG;           /* a range that wraps, or ino 0 */
		goto bad;
	}
	if (v >= 4 && (r = get_extents(c, &rp->ext, &rp->n_ext, MDSP_INODE_EXT_MAX)))
		goto bad;
	struct_leave(c, outer);
	return 0;
bad:
	free_reply(rp);
	return r;
}

void free_reply(struct mdsp_reply *rp)
{
	uint32_t i;

	free(rp->dname);
	if (rp->entries && !rp->names_inline)
		for (i = 0; i < rp->nentries; i++)
			free(rp->entries[i].name);
	free(rp->entries);
	free(rp->link);
	free(rp->data);
	free(rp->ext);
	rp->ext = NULL;
	rp->n_ext = 0;
	rp->dname = NULL;
	rp->entries = NULL;
	rp->nentries = 0;
	rp->names_inline = false;
	rp->link = NULL;
	rp->data = NULL;
	rp->data_len = 0;
}
