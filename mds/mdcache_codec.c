/*
 * mdcache_codec.c - the namespace's on-disk records: the inode blob (in a
 * primary dentry, the inode table and the stray table), a dentry's value,
 * a directory's "/meta" and an anchor.  Each is versioned (mds/codec.h);
 * a record that does not decode is -EBADMSG, never a crash (a damaged
 * entry costs that entry: mdcache.c, mdcache_replay.c).  Pure functions:
 * no lock needed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "common/config.h"
#include "common/log.h"
#include "common/siphash.h"
#include "common/rcu.h"
#include "common/time.h"
#include "mds/codec.h"
#include "mds/mds.h"
#include "mds/mdcache.h"
#include "mds/mdcache_priv.h"

int inode_blob_encode(struct mdsp_buf *b, const struct minode *in)
{
	size_t off = enc_begin(b, V_INODE_BLOB, 1);
	const struct mxattr *x;
	uint32_t n = 0;

	mdsp_encode_inode(b, &in->a);
	enc_str(b, in->symlink);
	for (x = in->xattrs; x; x = x->next)
		n++;
	enc_u32(b, n);
	for (x = in->xattrs; x; x = x->next) {
		enc_str(b, x->name);
		enc_blob(b, x->val, x->len);
	}
	/* v2: an older MDS steps over this: it never lets an nlink-0 inode
	 * be linked anyway */
	enc_u32(b, in->linkable ? BLOB_LINKABLE : 0);
	/* v3: what the data objects hold (none while blocks is unknown) */
	n = in->a.blocks == MDSP_BLOCKS_UNKNOWN ? 0 : in->ext.n;
	enc_u32(b, n);
	for (uint32_t i = 0; i < n; i++) {
		enc_u64(b, in->ext.v[i].off);
		enc_u64(b, in->ext.v[i].len);
	}
	/* v4: the directory whose tree counts a hard-linked file's bytes (rstat.c) */
	enc_u64(b, in->rparent);
	enc_end(b, off);
	return b->oom ? -ENOMEM : 0;
}

/* Decode into @in, replacing its attributes, symlink and xattrs. */
int inode_blob_decode(const void *p, size_t len, struct minode *in)
{
	struct dec c, s;
	struct mdsp_inode a;
	struct mdsp_extset ext = { 0 };
	const uint8_t *q;
	char *symlink = NULL;
	struct mxattr *xs = NULL, **tail = &xs, *x;
	uint32_t n, i, bytes = 0, flags = 0;
	uint64_t rparent = 0;
	uint8_t ver;

	dec_init(&c, p, len);
	if (!(ver = dec_enter(&c, V_INODE_BLOB, &s)))
		return -EBADMSG;
	q = s.p;
	if (mdsp_decode_inode(&q, s.end, &a))
		return -EBADMSG;
	s.p = q;
	symlink = dec_str(&s, MDSP_PATH_MAX);
	n = dec_u32(&s);
	for (i = 0; i < n && !s.bad; i++) {
		uint32_t vlen;
		const void *v;

		x = calloc(1, sizeof(*x));
		if (!x) {
			s.bad = true;
			break;
		}
		*tail = x;
		tail = &x->next;
		x->name = dec_str(&s, MDSP_XATTR_NAME_MAX);
		v = dec_blob_ref(&s, MDSP_XATTR_SIZE_MAX, &vlen);
		if (s.bad)
			break;
		x->val = malloc(vlen ? vlen : 1);
		if (!x->val) {
			s.bad = true;
			break;
		}
		if (vlen)
			memcpy(x->val, v, vlen);
		x->len = vlen;
		bytes += vlen + (uint32_t)strlen(x->name);
	}
	if (ver >= 2)
		flags = dec_u32(&s);
	if (ver >= 3 && !s.bad) {
		/* the data extents; ones that make no sense (damage) make the
		 * blocks unknown, as for a file from before they were kept */
		n = dec_u32(&s);
		if (!s.bad && n && (size_t)(s.end - s.p) >= (size_t)n * 16) {
			struct mdsp_extent *v = malloc((size_t)n * sizeof(*v));

			for (i = 0; v && i < n; i++) {
				v[i].off = dec_u64(&s);
				v[i].len = dec_u64(&s);
			}
			if (!v || !mdsp_extset_valid(v, n) || mdsp_extset_set(&ext, v, n))
				a.blocks = MDSP_BLOCKS_UNKNOWN;
			free(v);
		} else if (n) {
			a.blocks = MDSP_BLOCKS_UNKNOWN;
		}
	}
	if (ver >= 4)
		rparent = dec_u64(&s);
	if (s.bad) {
		struct minode tmp = { .xattrs = xs };

		mdcache_xattrs_free(&tmp);
		free(symlink);
		mdsp_extset_free(&ext);
		return -EBADMSG;
	}
	mdcache_xattrs_free(in);
	free(in->symlink);
	mdsp_extset_free(&in->ext);
	in->ext = ext;
	in->a = a;
	in->a.xattrs = MDSP_XATTRS_UNKNOWN;   /* said by the traces only (server.c set_target) */
	in->a.quota_room = MDSP_QUOTA_UNSAID;
	if (ver < 3 || !S_ISREG(a.mode))
		mdsp_extset_clear(&in->ext);
	inode_blocks_sync(in);
	if (symlink && !*symlink) {
		free(symlink);
		symlink = NULL;
	}
	in->symlink = symlink;
	in->xattrs = xs;
	in->xattr_bytes = bytes;
	in->linkable = flags & BLOB_LINKABLE;
	in->rparent = rparent;
	return 0;
}

void mdcache_dentry_value_encode(struct mdsp_buf *b, const struct mdentry *dn, const struct minode *in)
{
	size_t off = enc_begin(b, V_DENTRY, 1);

	enc_u64(b, dn->cookie);
	enc_u8(b, dn->remote ? 1 : 0);
	enc_u64(b, dn->ino);
	enc_u32(b, dn->dtype);
	if (!dn->remote && in) {
		struct mdsp_buf ib;

		mdsp_buf_init(&ib);
		inode_blob_encode(&ib, in);
		if (ib.oom)
			b->oom = true;
		enc_blob(b, ib.data, (uint32_t)ib.len);
		mdsp_buf_free(&ib);
	} else {
		enc_blob(b, NULL, 0);
	}
	enc_end(b, off);
}

int mdcache_dentry_value_decode(const void *p, size_t len, struct dentry_val *v)
{
	struct dec c, s;

	dec_init(&c, p, len);
	if (!dec_enter(&c, V_DENTRY, &s))
		return -EBADMSG;
	v->cookie = dec_u64(&s);
	v->remote = dec_u8(&s) != 0;
	v->ino = dec_u64(&s);
	v->dtype = dec_u32(&s);
	v->blob = dec_blob_ref(&s, 1u << 24, &v->bloblen);
	if (s.bad || (!v->remote && !v->bloblen))
		return -EBADMSG;
	return 0;
}

int mdcache_dir_meta_decode(const void *p, size_t len, uint64_t *reserved)
{
	struct dec c, s;

	dec_init(&c, p, len);
	if (!dec_enter(&c, V_DIRMETA, &s))
		return -EBADMSG;
	*reserved = dec_u64(&s);
	return s.bad ? -EBADMSG : 0;
}

int mdcache_anchor_decode(const void *p, size_t len, uint64_t *parent, char **name)
{
	struct dec c, s;

	dec_init(&c, p, len);
	if (!dec_enter(&c, V_ANCHOR, &s))
		return -EBADMSG;
	*parent = dec_u64(&s);
	*name = dec_str(&s, MDSP_NAME_MAX);
	return s.bad ? -EBADMSG : 0;
}

void mdcache_dir_frags_encode(struct mdsp_buf *b, const struct mfrag *f, uint32_t n)
{
	size_t off = enc_begin(b, V_DIRFRAGS, 1);

	enc_u32(b, n);
	for (uint32_t i = 0; i < n; i++) {
		enc_u32(b, f[i].bits);
		enc_u64(b, f[i].value);
	}
	enc_end(b, off);
}

int mdcache_dir_frags_decode(const void *p, size_t len, struct mfrag **out, uint32_t *np)
{
	struct dec c, s;
	struct mfrag *f;
	uint64_t next = 0;
	uint32_t n, i;

	dec_init(&c, p, len);
	if (!dec_enter(&c, V_DIRFRAGS, &s))
		return -EBADMSG;
	n = dec_u32(&s);
	if (s.bad || !n || n > (1u << 24))
		return -EBADMSG;
	f = calloc(n, sizeof(*f));
	if (!f)
		return -ENOMEM;
	for (i = 0; i < n && !s.bad; i++) {
		f[i].bits = dec_u32(&s);
		f[i].value = dec_u64(&s);
		/* leaves in order, each starting where the one before ended */
		if (f[i].bits > FRAG_KEY_BITS || (f[i].bits < 64 && f[i].value >> f[i].bits) ||
		    (f[i].value << (FRAG_KEY_BITS - f[i].bits)) != next)
			break;
		f[i].lo = next;
		next += 1ull << (FRAG_KEY_BITS - f[i].bits);
	}
	if (s.bad || i < n || next != 1ull << FRAG_KEY_BITS) {
		free(f);
		return -EBADMSG;
	}
	*out = f;
	*np = n;
	return 0;
}
