/*
 * seek.c - lseek(2)'s SEEK_DATA and SEEK_HOLE (issue 25): where a file's
 * data and holes are, so cp --sparse, tar -S and qemu-img copy only what
 * is stored.
 *
 * The MDS keeps, per regular file, the extents its data objects hold (the
 * set st_blocks is counted from, blocks.c), fed by every client's cap
 * flushes.  So the answer is the MDS's: this client first writes back what
 * it buffered of the file and sends the flush that carries its extent
 * deltas, waiting for the ack (else its own recent writes would read as
 * holes), then asks for the set (MDSP_OP_EXTENTS; the MDS has another
 * client that buffers the file write back first) and walks it.
 *
 * The set is conservative in the allowed direction only: writes are
 * rounded out to MDSP_EXT_ALIGN, punches rounded in, and past
 * MDSP_INODE_EXT_MAX extents the nearest merge, so a hole may be answered
 * as data (which POSIX allows) but stored data never as a hole.  A file
 * whose extents the MDS does not know (MDSP_BLOCKS_UNKNOWN: written by an
 * older client), and an MDS without the op, get the kernel's generic
 * answer: all data, the one hole at the end of the file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>

#include "client/ns_int.h"
#include "common/log.h"

/* @off inside extent set @v/@n, or where the next extent starts (UINT64_MAX: none) */
static uint64_t next_data(const struct mdsp_extent *v, uint32_t n, uint64_t off)
{
	for (uint32_t i = 0; i < n; i++)
		if (v[i].off + v[i].len > off)
			return v[i].off > off ? v[i].off : off;
	return UINT64_MAX;
}

/* the first offset from @off on that no extent covers (sorted, disjoint, not touching) */
static uint64_t next_hole(const struct mdsp_extent *v, uint32_t n, uint64_t off)
{
	for (uint32_t i = 0; i < n; i++) {
		if (v[i].off > off)
			break;
		if (v[i].off + v[i].len > off)
			off = v[i].off + v[i].len;
	}
	return off;
}

int lc_lseek_data(struct lclient *c, struct lc_inode *in, off_t off, int whence, off_t *out)
{
	struct mds_request *req;
	struct lc_inode *t = NULL;
	struct lc_attr a;
	uint64_t pos;
	bool unknown;
	int r;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (lc_evicted(c, NULL, 0))
		return -EIO;
	/* our writes where the MDS sees them: data stored, extents flushed */
	r = lc_sync_inode(c, in);
	if (r < 0)
		return r;
	req = lc_req_new(c, MDSP_OP_EXTENTS, in->ino, NULL);
	if (!req)
		return c->mdsc ? -ENOMEM : -ENOTCONN;
	r = lc_req_run(c, req, &t);
	lc_put(c, t);
	if (r == -EOPNOTSUPP) {
		unknown = true;         /* an MDS older than EXTENTS */
	} else if (r < 0) {
		mdsc_request_put(req);
		return r == -ENOENT ? -ESTALE : r;
	} else {
		unknown = !req->reply || !req->reply->has_target ||
			  req->reply->target.blocks == MDSP_BLOCKS_UNKNOWN;
	}
	/* the size the caller's stat shows (ours if we wrote past the MDS's) */
	lc_inode_fill_attr(in, &a);
	if (off < 0 || (uint64_t)off >= a.size) {
		r = -ENXIO;             /* also a negative offset, as on Linux */
		goto out;
	}
	if (unknown)
		pos = whence == SEEK_DATA ? (uint64_t)off : a.size;
	else if (whence == SEEK_DATA)
		pos = next_data(req->reply->ext, req->reply->n_ext, (uint64_t)off);
	else
		pos = next_hole(req->reply->ext, req->reply->n_ext, (uint64_t)off);
	/* data only before the end of the file; the end is a hole */
	if (whence == SEEK_DATA && pos >= a.size) {
		r = -ENXIO;
		goto out;
	}
	if (pos > a.size)
		pos = a.size;
	*out = (off_t)pos;
	dout(CLIENT, 15, "inode %" PRIx64 ": %s from %jd: %" PRIu64 "%s", in->ino,
	     whence == SEEK_DATA ? "SEEK_DATA" : "SEEK_HOLE", (intmax_t)off, pos, unknown ? " (extents unknown)" : "");
out:
	mdsc_request_put(req);
	return r;
}
