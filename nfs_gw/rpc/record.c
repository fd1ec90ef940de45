/*
 * record.c - TCP record marking (RFC 5531 section 11).
 *
 * A record is a run of fragments, each preceded by a 4-byte mark: the top
 * bit says "last fragment", the low 31 bits give its length.  The
 * reassembler below is a pure state machine over whatever bytes the socket
 * handed us, so a mark split across two reads or a record split into many
 * fragments comes out the same.  The size limit is checked against the
 * running record length plus the new fragment *before* anything is
 * allocated, so an oversized mark costs nothing but the connection.  The
 * buffer then grows (doubling, capped at the limit) as the fragment's bytes
 * arrive, not to the size the mark announces: a mark alone costs nothing,
 * so a client cannot make the gateway reserve a megabyte per connection by
 * sending 4 bytes on each.  The fragments of one record are counted too: a
 * stream of empty fragments never completes a record and costs a mark
 * parse each, so past max_frags the stream is refused (and the transport
 * closes it) instead of being chewed on for as long as the peer likes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nfs_gw/rpc/rpc.h"

void rpc_rm_init(struct rpc_rm *rm, size_t max, unsigned int max_frags)
{
	memset(rm, 0, sizeof(*rm));
	rm->max = max;
	rm->max_frags = max_frags;
}

void rpc_rm_free(struct rpc_rm *rm)
{
	free(rm->rec);
	rm->rec = NULL;
	rm->len = rm->cap = 0;
}

/* Room for @need bytes; @end: the size the record will have at the end of
 * the current fragment (never allocate past it). */
static int grow(struct rpc_rm *rm, size_t need, size_t end)
{
	size_t ncap;
	uint8_t *nb;

	if (need <= rm->cap)
		return 0;
	ncap = rm->cap ? rm->cap : 256;
	while (ncap < need)
		ncap *= 2;
	if (ncap > end)
		ncap = end;
	if (ncap > rm->max)
		ncap = rm->max;
	if (ncap < need)
		ncap = need;
	nb = realloc(rm->rec, ncap ? ncap : 1);
	if (!nb)
		return -ENOMEM;
	rm->rec = nb;
	rm->cap = ncap;
	return 0;
}

int rpc_rm_feed(struct rpc_rm *rm, const uint8_t *in, size_t n, size_t *used)
{
	size_t off = 0, take;
	uint32_t mark, flen;
	int r;

	for (;;) {
		if (!rm->in_frag) {
			while (rm->hdr_have < 4 && off < n)
				rm->hdr[rm->hdr_have++] = in[off++];
			if (rm->hdr_have < 4)
				break;
			rm->hdr_have = 0;
			mark = xdr_load_u32(rm->hdr);
			flen = mark & ~RPC_RM_LAST;
			if (flen > rm->max || rm->len > rm->max - flen) {
				rm->bad_mark = flen;
				*used = off;
				return -EMSGSIZE;
			}
			if (rm->max_frags && rm->nfrags >= rm->max_frags) {
				*used = off;
				return -E2BIG;
			}
			rm->nfrags++;
			rm->in_frag = true;
			rm->frag_left = flen;
			rm->last = !!(mark & RPC_RM_LAST);
		}
		take = n - off;
		if (take > rm->frag_left)
			take = rm->frag_left;
		if (take) {
			r = grow(rm, rm->len + take, rm->len + rm->frag_left);
			if (r) {
				*used = off;
				return r;
			}
			memcpy(rm->rec + rm->len, in + off, take);
			rm->len += take;
			off += take;
			rm->frag_left -= (uint32_t)take;
		}
		if (rm->frag_left)
			break;          /* input exhausted mid-fragment */
		rm->in_frag = false;
		if (rm->last) {
			*used = off;
			return 1;
		}
	}
	*used = off;
	return 0;
}

uint8_t *rpc_rm_take(struct rpc_rm *rm, size_t *len)
{
	uint8_t *r = rm->rec;

	*len = rm->len;
	if (!r)
		r = malloc(1);   /* an empty record still has a buffer */
	rm->rec = NULL;
	rm->len = rm->cap = 0;
	rm->last = false;
	rm->nfrags = 0;
	return r;
}
