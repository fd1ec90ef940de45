/*
 * test_nfs4ops.c - the NFSv4 operations' building blocks without a
 * server: file handles, fattr4 encoding and
 * decoding, stateid checks, NFSv4.0 owner sequencing and byte-range locks.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/time.h"
#include "nfs_gw/export/export.h"
#include "nfs_gw/nfs4/acl.h"
#include "nfs_gw/nfs4/fh.h"
#include "nfs_gw/nfs4/open_state.h"
#include "nfs_gw/nfs4/ops_int.h"

/* ---- file handles ---------------------------------------------------------- */

START_TEST(fh_round_trip)
{
	struct nfs4_fhinfo a = { .kind = NFS4_FH_EXPORT, .export_id = 7, .fsid = 7, .ino = 0x123456789abcULL,
				 .gen = 42 }, b;
	struct nfs4_fh fh;

	nfs4_fh_encode(&a, &fh);
	ck_assert_uint_eq(fh.len, NFS4_FH_WIRE_LEN);
	ck_assert_uint_eq(nfs4_fh_decode(&fh, &b), NFS4_OK);
	ck_assert_uint_eq(b.kind, a.kind);
	ck_assert_uint_eq(b.export_id, 7);
	ck_assert_uint_eq(b.fsid, 7);
	ck_assert_uint_eq(b.ino, a.ino);
	ck_assert_uint_eq(b.gen, 42);
}
END_TEST

START_TEST(fh_bad)
{
	struct nfs4_fhinfo a = { .kind = NFS4_FH_PSEUDO, .ino = 1 }, b;
	struct nfs4_fh fh, bad;

	nfs4_fh_encode(&a, &fh);
	/* wrong length, magic, version, kind, reserved bytes: all BADHANDLE */
	bad = fh;
	bad.len = 31;
	ck_assert_uint_eq(nfs4_fh_decode(&bad, &b), NFS4ERR_BADHANDLE);
	bad = fh;
	bad.data[0] = 'X';
	ck_assert_uint_eq(nfs4_fh_decode(&bad, &b), NFS4ERR_BADHANDLE);
	bad = fh;
	bad.data[2] = 9;
	ck_assert_uint_eq(nfs4_fh_decode(&bad, &b), NFS4ERR_BADHANDLE);
	bad = fh;
	bad.data[3] = 0;
	ck_assert_uint_eq(nfs4_fh_decode(&bad, &b), NFS4ERR_BADHANDLE);
	bad = fh;
	bad.data[7] = 1;
	ck_assert_uint_eq(nfs4_fh_decode(&bad, &b), NFS4ERR_BADHANDLE);
	bad.len = 0;
	ck_assert_uint_eq(nfs4_fh_decode(&bad, &b), NFS4ERR_BADHANDLE);
}
END_TEST

/* ---- fattr4 --------------------------------------------------------------------- */

static struct xdr_bitmap bm(int n, ...)
{
	struct xdr_bitmap b;
	va_list ap;

	memset(&b, 0, sizeof(b));
	b.nwords = 3;
	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		int a = va_arg(ap, int);

		b.w[a / 32] |= 1u << (a % 32);
	}
	va_end(ap);
	return b;
}

START_TEST(attr_encode)
{
	struct lc_attr a = { .ino = 99, .mode = S_IFREG | 0640, .uid = 1000, .gid = 100, .nlink = 3, .size = 12345,
			     .change = 77 };
	struct nfs4_attr_src s = { .a = &a, .fsid_major = 5, .fsid_minor = 6, .mounted_on_fileid = 99,
				   .lease_secs = 90 };
	struct xdr_bitmap req = bm(8, FATTR4_TYPE, FATTR4_SIZE, FATTR4_FILEID, FATTR4_MODE, FATTR4_OWNER,
				   FATTR4_OWNER_GROUP, FATTR4_NUMLINKS, 70 /* unsupported: left out */);
	struct xdr_enc e;
	struct xdr_dec d;
	struct xdr_bitmap got;
	uint32_t len, v;
	uint64_t v64;
	char str[32];

	a.mtime.tv_sec = 1000;
	xdr_enc_init(&e, 4096);
	ck_assert_int_eq(nfs4_attr_encode(&e, &req, &s), 0);
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_int_eq(xdr_get_bitmap(&d, &got), 0);
	ck_assert_uint_eq(got.w[0], req.w[0]);
	ck_assert_uint_eq(got.w[1], req.w[1]);
	ck_assert_uint_eq(got.w[2], 0);       /* bit 70 is not ours */
	ck_assert_int_eq(xdr_get_u32(&d, &len), 0);
	ck_assert_uint_eq(len, xdr_dec_left(&d));
	/* in bit order: type(1) size(4) fileid(20) mode(33) numlinks(35) owner(36) owner_group(37) */
	xdr_get_u32(&d, &v);
	ck_assert_uint_eq(v, NF4REG);
	xdr_get_u64(&d, &v64);
	ck_assert_uint_eq(v64, 12345);
	xdr_get_u64(&d, &v64);
	ck_assert_uint_eq(v64, 99);
	xdr_get_u32(&d, &v);
	ck_assert_uint_eq(v, 0640);
	xdr_get_u32(&d, &v);
	ck_assert_uint_eq(v, 3);
	ck_assert_int_eq(xdr_get_string(&d, str, sizeof(str), 31), 0);
	ck_assert_str_eq(str, "1000");
	ck_assert_int_eq(xdr_get_string(&d, str, sizeof(str), 31), 0);
	ck_assert_str_eq(str, "100");
	ck_assert_uint_eq(xdr_dec_left(&d), 0);
	xdr_enc_free(&e);
}
END_TEST

START_TEST(attr_supported_has_required)
{
	uint32_t w[3];
	static const int required[] = { FATTR4_SUPPORTED_ATTRS, FATTR4_TYPE, FATTR4_FH_EXPIRE_TYPE, FATTR4_CHANGE,
					FATTR4_SIZE, FATTR4_LINK_SUPPORT, FATTR4_SYMLINK_SUPPORT, FATTR4_NAMED_ATTR,
					FATTR4_FSID, FATTR4_UNIQUE_HANDLES, FATTR4_LEASE_TIME, FATTR4_RDATTR_ERROR,
					FATTR4_FILEHANDLE, FATTR4_SUPPATTR_EXCLCREAT };

	nfs4_attr_supported(w);
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		ck_assert_msg(w[required[i] / 32] & (1u << (required[i] % 32)), "attr %d", required[i]);
}
END_TEST

/* a fattr4 as a client would send it */
static void put_fattr(struct xdr_enc *e, const struct xdr_bitmap *b, void (*vals)(struct xdr_enc *))
{
	struct xdr_enc v;

	xdr_enc_init(&v, 4096);
	vals(&v);
	xdr_put_bitmap(e, b->w, 3);
	xdr_put_opaque(e, v.buf, (uint32_t)v.len);
	xdr_enc_free(&v);
}

static void vals_mode_owner_time(struct xdr_enc *v)
{
	xdr_put_u32(v, 0755);                 /* mode */
	xdr_put_string(v, "1234");            /* owner */
	xdr_put_string(v, "55@localdomain");  /* owner_group */
	xdr_put_u32(v, 1);                    /* time_modify_set: SET_TO_CLIENT_TIME4 */
	xdr_put_u64(v, 1700000000);
	xdr_put_u32(v, 5);
}

static void vals_bad_owner(struct xdr_enc *v)
{
	xdr_put_string(v, "alice");
}

static void vals_none(struct xdr_enc *v)
{
	(void)v;
}

START_TEST(sattr_decode)
{
	struct xdr_bitmap b = bm(4, FATTR4_MODE, FATTR4_OWNER, FATTR4_OWNER_GROUP, FATTR4_TIME_MODIFY_SET);
	struct nfs4_sattr s;
	struct xdr_enc e;
	struct xdr_dec d;

	xdr_enc_init(&e, 4096);
	put_fattr(&e, &b, vals_mode_owner_time);
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_uint_eq(nfs4_sattr_decode(&d, NULL, &s), NFS4_OK);
	ck_assert_int_eq(s.mask, LC_SET_MODE | LC_SET_UID | LC_SET_GID | LC_SET_MTIME);
	ck_assert_uint_eq(s.a.mode, 0755);
	ck_assert_uint_eq(s.a.uid, 1234);
	ck_assert_uint_eq(s.a.gid, 55);
	ck_assert_int_eq(s.a.mtime.tv_sec, 1700000000);
	ck_assert_int_eq(s.a.mtime.tv_nsec, 5);

	/* a name that is not a number: BADOWNER */
	xdr_enc_truncate(&e, 0);
	b = bm(1, FATTR4_OWNER);
	put_fattr(&e, &b, vals_bad_owner);
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_uint_eq(nfs4_sattr_decode(&d, NULL, &s), NFS4ERR_BADOWNER);

	/* read-only attribute: INVAL; unsupported: ATTRNOTSUPP */
	xdr_enc_truncate(&e, 0);
	b = bm(1, FATTR4_FILEID);
	put_fattr(&e, &b, vals_none);
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_uint_eq(nfs4_sattr_decode(&d, NULL, &s), NFS4ERR_INVAL);
	xdr_enc_truncate(&e, 0);
	b = bm(1, 14 /* archive */);
	put_fattr(&e, &b, vals_none);
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_uint_eq(nfs4_sattr_decode(&d, NULL, &s), NFS4ERR_ATTRNOTSUPP);
	/* acl is settable (POSIX ACLs): its value must be there */
	xdr_enc_truncate(&e, 0);
	b = bm(1, 12 /* acl */);
	put_fattr(&e, &b, vals_none);
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_uint_eq(nfs4_sattr_decode(&d, NULL, &s), NFS4ERR_BADXDR);

	/* truncated values: BADXDR */
	xdr_enc_truncate(&e, 0);
	b = bm(1, FATTR4_MODE);
	put_fattr(&e, &b, vals_none);
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_uint_eq(nfs4_sattr_decode(&d, NULL, &s), NFS4ERR_BADXDR);
	xdr_enc_free(&e);
}
END_TEST

/* ---- the acl attribute (acl.c) ---------------------------------------------------------- */

static size_t acl_form(const uint16_t (*e)[2], const uint32_t *ids, size_t n, uint8_t *b)
{
	b[0] = 2, b[1] = b[2] = b[3] = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t *p = b + 4 + 8 * i;

		p[0] = (uint8_t)e[i][0], p[1] = 0, p[2] = (uint8_t)e[i][1], p[3] = 0;
		p[4] = (uint8_t)ids[i], p[5] = (uint8_t)(ids[i] >> 8), p[6] = (uint8_t)(ids[i] >> 16);
		p[7] = (uint8_t)(ids[i] >> 24);
	}
	return 4 + 8 * n;
}

/* POSIX -> NFSv4 -> POSIX gives back the ACL (knfsd's mapping is made to),
 * for a file and a directory with a default ACL; truncated ACE lists are
 * BADXDR, ACEs POSIX cannot say ATTRNOTSUPP */
START_TEST(acl_round_trip)
{
	static const uint16_t ent[][2] = { { 0x01, 6 }, { 0x02, 6 }, { 0x02, 4 }, { 0x04, 4 }, { 0x08, 5 },
					   { 0x10, 7 }, { 0x20, 0 } };
	static const uint32_t ids[] = { ~0u, 1001, 1005, ~0u, 3000, ~0u, ~0u };
	static const uint16_t dent[][2] = { { 0x01, 7 }, { 0x04, 5 }, { 0x20, 1 } };
	static const uint32_t dids[] = { ~0u, ~0u, ~0u };
	uint8_t acl[256], dacl[256], out[NFS4_ACL_XATTR_MAX], dout[NFS4_ACL_XATTR_MAX];
	size_t n = acl_form(ent, ids, 7, acl), dn = acl_form(dent, dids, 3, dacl), on, odn;
	struct xdr_enc e;
	struct xdr_dec d;

	xdr_enc_init(&e, 4096);
	ck_assert_int_eq(nfs4_acl_encode(&e, S_IFREG | 0670, acl, n, NULL, 0, NULL), 0);
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_uint_eq(nfs4_acl_decode(&d, false, NULL, out, &on, dout, &odn), NFS4_OK);
	ck_assert_uint_eq(on, n);
	ck_assert_int_eq(memcmp(out, acl, n), 0);
	ck_assert_uint_eq(odn, 0);
	/* every shorter prefix is malformed */
	for (size_t cut = 0; cut < e.len; cut += 4) {
		xdr_dec_init(&d, e.buf, cut);
		ck_assert_uint_eq(nfs4_acl_decode(&d, false, NULL, out, &on, dout, &odn), NFS4ERR_BADXDR);
	}
	/* a directory: access and default ACLs both come back */
	xdr_enc_truncate(&e, 0);
	ck_assert_int_eq(nfs4_acl_encode(&e, S_IFDIR | 0670, acl, n, dacl, dn, NULL), 0);
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_uint_eq(nfs4_acl_decode(&d, true, NULL, out, &on, dout, &odn), NFS4_OK);
	ck_assert_uint_eq(on, n);
	ck_assert_int_eq(memcmp(out, acl, n), 0);
	ck_assert_uint_eq(odn, dn);
	ck_assert_int_eq(memcmp(dout, dacl, dn), 0);
	/* the same inheritable ACEs on a file: not something POSIX says */
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_uint_eq(nfs4_acl_decode(&d, false, NULL, out, &on, dout, &odn), NFS4ERR_ATTRNOTSUPP);
	/* an AUDIT ACE */
	xdr_enc_truncate(&e, 0);
	xdr_put_u32(&e, 1);
	xdr_put_u32(&e, 2);
	xdr_put_u32(&e, 0);
	xdr_put_u32(&e, 1);
	xdr_put_string(&e, "OWNER@");
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_uint_eq(nfs4_acl_decode(&d, false, NULL, out, &on, dout, &odn), NFS4ERR_ATTRNOTSUPP);
	/* no ACL stored: the mode's three entries */
	xdr_enc_truncate(&e, 0);
	ck_assert_int_eq(nfs4_acl_encode(&e, S_IFREG | 0640, NULL, 0, NULL, 0, NULL), 0);
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_uint_eq(nfs4_acl_decode(&d, false, NULL, out, &on, dout, &odn), NFS4_OK);
	{
		static const uint16_t m[][2] = { { 0x01, 6 }, { 0x04, 4 }, { 0x20, 0 } };
		uint8_t want[64];
		size_t wn = acl_form(m, dids, 3, want);

		ck_assert_uint_eq(on, wn);
		ck_assert_int_eq(memcmp(out, want, wn), 0);
	}
	xdr_enc_free(&e);
}
END_TEST

/* ---- stateids and owners ---------------------------------------------------------------- */

static struct ostate *st;
static struct os_owner *ow;
static struct os_file *f;

static void state_setup(void)
{
	ck_assert_int_eq(ostate_create(0x5eed, 0, &st), 0);
	pthread_mutex_lock(&st->lock);
	ow = os_owner_find_locked(st, 11, false, (const uint8_t *)"owner", 5, true);
	f = os_file_get_locked(st, 1000, true);
	pthread_mutex_unlock(&st->lock);
}

static void state_teardown(void)
{
	ostate_destroy(st, NULL);
}

START_TEST(stateid_checks)
{
	struct os_stid *s, *got;
	struct nfs4_stateid sid, t;

	pthread_mutex_lock(&st->lock);
	s = os_stid_new_locked(st, OS_OPEN, ow, f);
	os_stid_wire(st, s, &sid);
	ck_assert_uint_eq(sid.seqid, 1);
	ck_assert_uint_eq(os_stid_check_locked(st, &sid, 0, 0, OS_OPEN, &got), NFS4_OK);
	ck_assert_ptr_eq(got, s);
	/* the wrong kind */
	ck_assert_uint_eq(os_stid_check_locked(st, &sid, 0, 0, OS_LOCK, &got), NFS4ERR_BAD_STATEID);
	/* 4.1: another client's stateid */
	ck_assert_uint_eq(os_stid_check_locked(st, &sid, 1, 12, OS_OPEN, &got), NFS4ERR_BAD_STATEID);
	/* the state moved on: the old seqid is OLD, a future one BAD; 4.1's 0 means current */
	s->seqid = 3;
	ck_assert_uint_eq(os_stid_check_locked(st, &sid, 0, 0, OS_OPEN, &got), NFS4ERR_OLD_STATEID);
	t = sid;
	t.seqid = 4;
	ck_assert_uint_eq(os_stid_check_locked(st, &t, 0, 0, OS_OPEN, &got), NFS4ERR_BAD_STATEID);
	t.seqid = 0;
	ck_assert_uint_eq(os_stid_check_locked(st, &t, 1, 11, OS_OPEN, &got), NFS4_OK);
	ck_assert_uint_eq(os_stid_check_locked(st, &t, 0, 0, OS_OPEN, &got), NFS4ERR_OLD_STATEID);
	/* from another server instance: STALE; an unknown id: BAD */
	t = sid;
	t.other[0] ^= 0xff;
	ck_assert_uint_eq(os_stid_check_locked(st, &t, 0, 0, OS_OPEN, &got), NFS4ERR_STALE_STATEID);
	t = sid;
	t.other[11] ^= 0x55;
	ck_assert_uint_eq(os_stid_check_locked(st, &t, 0, 0, OS_OPEN, &got), NFS4ERR_BAD_STATEID);
	pthread_mutex_unlock(&st->lock);

	/* the client's state released (lease expired): its stateids are gone */
	os_client_release(st, NULL, 11);
	pthread_mutex_lock(&st->lock);
	s = NULL;
	ck_assert_uint_eq(os_stid_check_locked(st, &sid, 0, 0, OS_OPEN, &got), NFS4ERR_BAD_STATEID);
	pthread_mutex_unlock(&st->lock);
	ck_assert(!os_client_has_state(st, 11));
}
END_TEST

START_TEST(special_stateids)
{
	struct nfs4_stateid z, o, n;

	memset(&z, 0, sizeof(z));
	memset(&o, 0xff, sizeof(o));
	memset(&n, 0, sizeof(n));
	n.other[3] = 1;
	ck_assert(os_is_special(&z));
	ck_assert(os_is_special(&o));
	ck_assert(!os_is_special(&n));
}
END_TEST

START_TEST(share_reservations)
{
	struct os_owner *other;
	struct os_stid *s;

	pthread_mutex_lock(&st->lock);
	other = os_owner_find_locked(st, 11, false, (const uint8_t *)"other", 5, true);
	ck_assert_ptr_nonnull(other);
	s = os_stid_new_locked(st, OS_OPEN, ow, f);
	os_open_add_locked(s, OS_SHARE_ACCESS_READ, OS_SHARE_ACCESS_WRITE);   /* read, deny writers */
	/* RFC 7530 9.9: no exception for the owner's own open */
	ck_assert_ptr_eq(os_share_conflict_locked(f, OS_SHARE_ACCESS_WRITE, 0), s);
	ck_assert_ptr_null(os_share_conflict_locked(f, OS_SHARE_ACCESS_READ, 0));
	ck_assert_ptr_eq(os_share_conflict_locked(f, OS_SHARE_ACCESS_READ, OS_SHARE_ACCESS_READ), s);
	/* I/O: the deny of another open, never the one used */
	ck_assert_ptr_eq(os_deny_conflict_locked(f, NULL, OS_SHARE_ACCESS_WRITE), s);
	ck_assert_ptr_null(os_deny_conflict_locked(f, s, OS_SHARE_ACCESS_WRITE));
	ck_assert_ptr_null(os_deny_conflict_locked(f, NULL, OS_SHARE_ACCESS_READ));
	pthread_mutex_unlock(&st->lock);
}
END_TEST

/* RFC 7530 16.19.4: OPEN_DOWNGRADE only to a union of the OPENs in effect */
START_TEST(open_downgrade_modes)
{
	struct os_stid *s;

	pthread_mutex_lock(&st->lock);
	s = os_stid_new_locked(st, OS_OPEN, ow, f);
	os_open_add_locked(s, OS_SHARE_ACCESS_BOTH, 0);          /* one OPEN of BOTH */
	ck_assert_int_eq(os_open_downgrade_locked(s, OS_SHARE_ACCESS_READ, 0), -EINVAL);
	ck_assert_int_eq(os_open_downgrade_locked(s, OS_SHARE_ACCESS_BOTH, 0), 0);
	os_open_add_locked(s, OS_SHARE_ACCESS_READ, 0);
	ck_assert_int_eq(os_open_downgrade_locked(s, OS_SHARE_ACCESS_BOTH, 1), -EINVAL);   /* no deny read was opened */
	ck_assert_int_eq(os_open_downgrade_locked(s, OS_SHARE_ACCESS_READ, 0), 0);
	ck_assert_uint_eq(s->access, OS_SHARE_ACCESS_READ);
	/* the BOTH open is no longer in effect */
	ck_assert_int_eq(os_open_downgrade_locked(s, OS_SHARE_ACCESS_BOTH, 0), -EINVAL);
	/* READ deny WRITE and WRITE deny READ: their union, or either alone */
	s->modes = 0;
	s->access = s->deny = 0;
	os_open_add_locked(s, OS_SHARE_ACCESS_READ, 2);
	os_open_add_locked(s, OS_SHARE_ACCESS_WRITE, 1);
	ck_assert_int_eq(os_open_downgrade_locked(s, OS_SHARE_ACCESS_READ, 1), -EINVAL);
	ck_assert_int_eq(os_open_downgrade_locked(s, OS_SHARE_ACCESS_BOTH, 3), 0);
	ck_assert_int_eq(os_open_downgrade_locked(s, OS_SHARE_ACCESS_WRITE, 1), 0);
	ck_assert_uint_eq(s->deny, 1);
	pthread_mutex_unlock(&st->lock);
}
END_TEST

START_TEST(v40_seqid_order)
{
	static const uint8_t body[] = { 1, 2, 3, 4 };

	pthread_mutex_lock(&st->lock);
	/* a new owner takes any seqid */
	ck_assert_uint_eq(os_seq_begin_locked(st, ow, 41, 0), NFS4_OK);
	ck_assert(ow->busy);
	os_seq_end_locked(st, ow, 41, 18, NFS4_OK, body, sizeof(body), NULL, 0);
	ck_assert(!ow->busy);
	/* the same seqid again is a replay of the saved reply */
	ck_assert_uint_eq(os_seq_begin_locked(st, ow, 41, 0), OS_SEQ_REPLAY);
	ck_assert_uint_eq(ow->reply_len, 4);
	ck_assert_mem_eq(ow->reply, body, 4);
	/* older, or ahead with nobody to wait for: BAD_SEQID */
	ck_assert_uint_eq(os_seq_begin_locked(st, ow, 40, 0), NFS4ERR_BAD_SEQID);
	ck_assert_uint_eq(os_seq_begin_locked(st, ow, 44, 1000000), NFS4ERR_BAD_SEQID);
	/* an error that does not advance the seqid (RFC 7530 9.1.7) */
	ck_assert_uint_eq(os_seq_begin_locked(st, ow, 42, 0), NFS4_OK);
	os_seq_end_locked(st, ow, 42, 18, NFS4ERR_BAD_STATEID, NULL, 0, NULL, 0);
	ck_assert_uint_eq(ow->seqid, 41);
	/* one that does */
	ck_assert_uint_eq(os_seq_begin_locked(st, ow, 42, 0), NFS4_OK);
	os_seq_end_locked(st, ow, 42, 18, NFS4ERR_NOENT, NULL, 0, NULL, 0);
	ck_assert_uint_eq(ow->seqid, 42);
	ck_assert_uint_eq(os_seq_begin_locked(st, ow, 42, 0), OS_SEQ_REPLAY);
	ck_assert_uint_eq(ow->reply_status, NFS4ERR_NOENT);
	/* wrap-around */
	ow->seqid = UINT32_MAX;
	ck_assert_uint_eq(os_seq_begin_locked(st, ow, 0, 0), NFS4_OK);
	os_seq_end_locked(st, ow, 0, 18, NFS4_OK, NULL, 0, NULL, 0);
	ck_assert_uint_eq(ow->seqid, 0);
	pthread_mutex_unlock(&st->lock);
}
END_TEST

/* until @o has @n requests waiting for their predecessor (5 s at most) */
static void wait_seq_waiting(struct os_owner *o, unsigned int n)
{
	uint64_t end = now_mono_ns() + 5000000000ull;
	unsigned int got;

	for (;;) {
		pthread_mutex_lock(&st->lock);
		got = o->seq_waiting;
		pthread_mutex_unlock(&st->lock);
		if (got == n)
			return;
		ck_assert_msg(now_mono_ns() < end, "%u requests waiting, expected %u", got, n);
		usleep(1000);
	}
}

/* a request that arrived ahead of its predecessor waits for it */
static void *run_next(void *arg)
{
	uint32_t *res = arg;

	pthread_mutex_lock(&st->lock);
	*res = os_seq_begin_locked(st, ow, 7, 5000000000ull);
	if (*res == NFS4_OK)
		os_seq_end_locked(st, ow, 7, 18, NFS4_OK, NULL, 0, NULL, 0);
	pthread_mutex_unlock(&st->lock);
	return NULL;
}

START_TEST(v40_seqid_waits_for_predecessor)
{
	pthread_t t;
	uint32_t res = 1;

	pthread_mutex_lock(&st->lock);
	ck_assert_uint_eq(os_seq_begin_locked(st, ow, 5, 0), NFS4_OK);
	os_seq_end_locked(st, ow, 5, 18, NFS4_OK, NULL, 0, NULL, 0);
	pthread_mutex_unlock(&st->lock);
	ck_assert_int_eq(pthread_create(&t, NULL, run_next, &res), 0);   /* seqid 7 */
	wait_seq_waiting(ow, 1);              /* 7 has reached the wait */
	pthread_mutex_lock(&st->lock);
	ck_assert_uint_eq(ow->waiters, 1);
	ck_assert_uint_eq(ow->seqid, 5);      /* 7 is still waiting for 6 */
	ck_assert_uint_eq(os_seq_begin_locked(st, ow, 6, 0), NFS4_OK);
	os_seq_end_locked(st, ow, 6, 18, NFS4_OK, NULL, 0, NULL, 0);
	pthread_mutex_unlock(&st->lock);
	pthread_join(t, NULL);
	ck_assert_uint_eq(res, NFS4_OK);
	ck_assert_uint_eq(ow->seqid, 7);
}
END_TEST

/* a request of (owner, seqid) from its own thread, as a worker would run it */
struct seq_req {
	struct os_owner *o;
	uint32_t seqid;
	uint32_t res;
	pthread_t t;
};

static void *run_seq(void *arg)
{
	struct seq_req *q = arg;

	pthread_mutex_lock(&st->lock);
	q->res = os_seq_begin_locked(st, q->o, q->seqid, 5000000000ull);
	if (q->res == NFS4_OK)
		os_seq_end_locked(st, q->o, q->seqid, 18, NFS4_OK, NULL, 0, NULL, 0);
	pthread_mutex_unlock(&st->lock);
	return NULL;
}

static struct os_owner *seq_owner(const char *name, uint32_t seqid)
{
	struct os_owner *o;

	pthread_mutex_lock(&st->lock);
	o = os_owner_find_locked(st, 11, false, (const uint8_t *)name, (uint32_t)strlen(name), true);
	ck_assert_ptr_nonnull(o);
	ck_assert_uint_eq(os_seq_begin_locked(st, o, seqid, 0), NFS4_OK);
	os_seq_end_locked(st, o, seqid, 18, NFS4_OK, NULL, 0, NULL, 0);
	pthread_mutex_unlock(&st->lock);
	return o;
}

/*
 * Waiting for a seqid predecessor ties up a worker thread: one waiting
 * request per owner, seq_wait_max in all; beyond that DELAY at once, and
 * the DELAYed seqids are stepped over in order (the client retries with
 * the next seqid).  Many future seqids of one owner must not block the
 * threads other owners need.
 */
START_TEST(v40_seqid_wait_caps)
{
	enum { N = 16 };
	struct seq_req a = { .o = ow, .seqid = 7 }, b, many[N];
	struct os_owner *ow2, *ow3;
	uint64_t t0;

	st->seq_wait_max = 2;
	ck_assert_uint_eq(st->seq_wait_per_owner, 1);
	pthread_mutex_lock(&st->lock);
	ck_assert_uint_eq(os_seq_begin_locked(st, ow, 5, 0), NFS4_OK);
	os_seq_end_locked(st, ow, 5, 18, NFS4_OK, NULL, 0, NULL, 0);
	pthread_mutex_unlock(&st->lock);
	/* 7 waits for 6 */
	ck_assert_int_eq(pthread_create(&a.t, NULL, run_seq, &a), 0);
	wait_seq_waiting(ow, 1);
	/* 8..23 of the same owner at once: DELAY, none of them waits */
	t0 = now_mono_ns();
	for (int i = 0; i < N; i++) {
		many[i] = (struct seq_req){ .o = ow, .seqid = 8 + (uint32_t)i };
		ck_assert_int_eq(pthread_create(&many[i].t, NULL, run_seq, &many[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(many[i].t, NULL);
		ck_assert_uint_eq(many[i].res, NFS4ERR_DELAY);
	}
	ck_assert_uint_lt(now_mono_ns() - t0, 2000000000ull);   /* (a wait would take 5 s) */
	/* another owner is served meanwhile */
	ow2 = seq_owner("owner2", 1);
	t0 = now_mono_ns();
	pthread_mutex_lock(&st->lock);
	ck_assert_uint_eq(os_seq_begin_locked(st, ow2, 2, 5000000000ull), NFS4_OK);
	os_seq_end_locked(st, ow2, 2, 18, NFS4_OK, NULL, 0, NULL, 0);
	pthread_mutex_unlock(&st->lock);
	ck_assert_uint_lt(now_mono_ns() - t0, 1000000000ull);
	/* and may have one waiting request too: the gateway-wide cap (2) is then reached */
	b = (struct seq_req){ .o = ow2, .seqid = 4 };
	ck_assert_int_eq(pthread_create(&b.t, NULL, run_seq, &b), 0);
	wait_seq_waiting(ow2, 1);
	ow3 = seq_owner("owner3", 1);
	pthread_mutex_lock(&st->lock);
	ck_assert_uint_eq(st->seq_waiting, 2);
	ck_assert_uint_eq(os_seq_begin_locked(st, ow3, 3, 5000000000ull), NFS4ERR_DELAY);
	ck_assert_uint_eq(os_seq_begin_locked(st, ow3, 2, 0), NFS4_OK);   /* its next one runs */
	os_seq_end_locked(st, ow3, 2, 18, NFS4_OK, NULL, 0, NULL, 0);
	ck_assert_uint_eq(ow3->seqid, 3);     /* ... and steps over the DELAYed 3 */
	ck_assert_uint_eq(ow3->reply_status, NFS4ERR_DELAY);
	/* 6 arrives: 6 and the waiting 7 run, the DELAYed 8..23 are stepped over */
	ck_assert_uint_eq(ow->ndelayed, N);
	ck_assert_uint_eq(os_seq_begin_locked(st, ow, 6, 0), NFS4_OK);
	os_seq_end_locked(st, ow, 6, 18, NFS4_OK, NULL, 0, NULL, 0);
	ck_assert_uint_eq(os_seq_begin_locked(st, ow2, 3, 0), NFS4_OK);
	os_seq_end_locked(st, ow2, 3, 18, NFS4_OK, NULL, 0, NULL, 0);
	pthread_mutex_unlock(&st->lock);
	pthread_join(a.t, NULL);
	pthread_join(b.t, NULL);
	ck_assert_uint_eq(a.res, NFS4_OK);
	ck_assert_uint_eq(b.res, NFS4_OK);
	pthread_mutex_lock(&st->lock);
	ck_assert_uint_eq(st->seq_waiting, 0);
	ck_assert_uint_eq(ow->seqid, 8 + N - 1);
	ck_assert_uint_eq(ow->ndelayed, 0);
	/* a retransmission of the last DELAYed one gets DELAY again; the client's next seqid runs */
	ck_assert_uint_eq(os_seq_begin_locked(st, ow, 8 + N - 1, 0), OS_SEQ_REPLAY);
	ck_assert_uint_eq(ow->reply_status, NFS4ERR_DELAY);
	ck_assert_uint_eq(os_seq_begin_locked(st, ow, 8 + N, 0), NFS4_OK);
	os_seq_end_locked(st, ow, 8 + N, 18, NFS4_OK, NULL, 0, NULL, 0);
	ck_assert_uint_eq(ow2->seqid, 4);
	pthread_mutex_unlock(&st->lock);
}
END_TEST

START_TEST(byte_range_locks)
{
	struct os_owner *lo1, *lo2;
	struct os_stid *l1, *l2;
	uint64_t s, e;

	pthread_mutex_lock(&st->lock);
	lo1 = os_owner_find_locked(st, 11, true, (const uint8_t *)"l1", 2, true);
	lo2 = os_owner_find_locked(st, 11, true, (const uint8_t *)"l2", 2, true);
	l1 = os_stid_new_locked(st, OS_LOCK, lo1, f);
	l2 = os_stid_new_locked(st, OS_LOCK, lo2, f);
	ck_assert(os_lock_range(0, 10, &s, &e) && s == 0 && e == 10);
	ck_assert(os_lock_range(5, UINT64_MAX, &s, &e) && e == UINT64_MAX);
	ck_assert(!os_lock_range(10, 0, &s, &e));
	ck_assert(!os_lock_range(UINT64_MAX - 1, 5, &s, &e));

	ck_assert_int_eq(os_lock_set_locked(f, l1, OS_WRITE_LT, 0, 10), 0);
	ck_assert_ptr_nonnull(os_lock_conflict_locked(f, lo2, OS_READ_LT, 5, 6));
	ck_assert_ptr_null(os_lock_conflict_locked(f, lo2, OS_READ_LT, 10, 20));
	ck_assert_ptr_null(os_lock_conflict_locked(f, lo1, OS_WRITE_LT, 0, 10));   /* own lock */
	/* unlock the middle: two pieces stay */
	ck_assert_int_eq(os_lock_unset_locked(f, l1, 3, 6), 0);
	ck_assert_ptr_null(os_lock_conflict_locked(f, lo2, OS_WRITE_LT, 3, 6));
	ck_assert_ptr_nonnull(os_lock_conflict_locked(f, lo2, OS_WRITE_LT, 2, 3));
	ck_assert_ptr_nonnull(os_lock_conflict_locked(f, lo2, OS_WRITE_LT, 6, 7));
	/* read locks share */
	ck_assert_int_eq(os_lock_set_locked(f, l1, OS_READ_LT, 100, UINT64_MAX), 0);
	ck_assert_ptr_null(os_lock_conflict_locked(f, lo2, OS_READ_LT, 200, 300));
	ck_assert_int_eq(os_lock_set_locked(f, l2, OS_READ_LT, 200, 300), 0);
	ck_assert_ptr_nonnull(os_lock_conflict_locked(f, lo2, OS_WRITE_LT, 150, 160));
	/* a whole-file flock-style unlock frees everything of l1 */
	ck_assert_int_eq(os_lock_unset_locked(f, l1, 0, UINT64_MAX), 0);
	ck_assert(!os_stid_has_locks_locked(l1));
	ck_assert(os_stid_has_locks_locked(l2));
	ck_assert_ptr_null(os_lock_conflict_locked(f, lo2, OS_WRITE_LT, 0, 100));
	pthread_mutex_unlock(&st->lock);
}
END_TEST

/*
 * A LOCK pins its lock stateid across its MDS call (st->lock dropped): the
 * client's state released meanwhile unhashes and detaches it at once (its
 * id answers BAD_STATEID), and the memory stays until the last unpin.
 */
START_TEST(pinned_stid_outlives_release)
{
	struct os_owner *lo;
	struct os_stid *o, *l, *got;
	struct nfs4_stateid lsid;

	pthread_mutex_lock(&st->lock);
	lo = os_owner_find_locked(st, 11, true, (const uint8_t *)"lo", 2, true);
	o = os_stid_new_locked(st, OS_OPEN, ow, f);
	l = os_stid_new_locked(st, OS_LOCK, lo, f);
	l->open = o;
	os_stid_wire(st, l, &lsid);
	os_stid_pin(l);
	ck_assert(os_stid_live(l));
	pthread_mutex_unlock(&st->lock);

	os_client_release(st, NULL, 11);      /* the lease ended while the LOCK was at the MDS */
	pthread_mutex_lock(&st->lock);
	ck_assert(l->gone);
	ck_assert(!os_stid_live(l));
	ck_assert_ptr_null(l->file);
	ck_assert_ptr_null(l->owner);
	ck_assert_uint_eq(os_stid_check_locked(st, &lsid, 0, 0, OS_LOCK, &got), NFS4ERR_BAD_STATEID);
	ck_assert_uint_eq(st->nstids, 0);
	os_stid_unpin_locked(st, l);          /* freed now (ASan/valgrind would see a leak or a double free) */
	pthread_mutex_unlock(&st->lock);
}
END_TEST

struct lk_req {
	pthread_t t;
	struct os_file *f;
	uint64_t wait_ns;
	uint32_t res;
};

/* take @q->f's lock-call marker and give it back at once */
static void *run_lk(void *arg)
{
	struct lk_req *q = arg;

	pthread_mutex_lock(&st->lock);
	q->res = os_file_lk_begin_locked(st, q->f, q->wait_ns);
	if (q->res == NFS4_OK)
		os_file_lk_end_locked(st, q->f);
	pthread_mutex_unlock(&st->lock);
	return NULL;
}

static void wait_lk_waiting(unsigned int n)
{
	for (;;) {
		pthread_mutex_lock(&st->lock);
		bool ok = st->lk_waiting == n;
		pthread_mutex_unlock(&st->lock);
		if (ok)
			return;
		usleep(1000);
	}
}

/*
 * One LOCK/LOCKU per file at the MDS: a second one waits for the first
 * (st->lock released meanwhile, so everything else goes on), at most
 * lk_wait_max of them in all and each at most its wait; beyond that
 * NFS4ERR_DELAY.  A file is not freed while its marker is held.
 */
START_TEST(file_lock_call_marker)
{
	struct lk_req b = { .f = f, .wait_ns = 30000000000ull }, c = { .f = f, .wait_ns = 30000000000ull };
	struct os_file *g;

	st->lk_wait_max = 1;
	pthread_mutex_lock(&st->lock);
	os_stid_new_locked(st, OS_OPEN, ow, f);   /* an open keeps f after the markers */
	ck_assert_uint_eq(os_file_lk_begin_locked(st, f, 0), NFS4_OK);
	pthread_mutex_unlock(&st->lock);
	ck_assert_int_eq(pthread_create(&b.t, NULL, run_lk, &b), 0);
	wait_lk_waiting(1);
	/* st->lock is free while b waits: another file's marker, and the cap */
	pthread_mutex_lock(&st->lock);
	g = os_file_get_locked(st, 2000, true);
	ck_assert_uint_eq(os_file_lk_begin_locked(st, g, 0), NFS4_OK);
	os_file_put_locked(st, g);            /* nothing else on it, but the marker keeps it */
	ck_assert_ptr_eq(os_file_get_locked(st, 2000, false), g);
	os_file_lk_end_locked(st, g);         /* ... until it is given back */
	ck_assert_ptr_null(os_file_get_locked(st, 2000, false));
	pthread_mutex_unlock(&st->lock);
	ck_assert_int_eq(pthread_create(&c.t, NULL, run_lk, &c), 0);
	pthread_join(c.t, NULL);
	ck_assert_uint_eq(c.res, NFS4ERR_DELAY);   /* lk_wait_max (1) waits already */
	/* the holder gives it back: b gets it */
	pthread_mutex_lock(&st->lock);
	os_file_lk_end_locked(st, f);
	pthread_mutex_unlock(&st->lock);
	pthread_join(b.t, NULL);
	ck_assert_uint_eq(b.res, NFS4_OK);
	/* a wait that ends before the holder does: DELAY */
	st->lk_wait_max = 4;
	pthread_mutex_lock(&st->lock);
	ck_assert_uint_eq(os_file_lk_begin_locked(st, f, 0), NFS4_OK);
	pthread_mutex_unlock(&st->lock);
	c = (struct lk_req){ .f = f, .wait_ns = 1000000ull };
	ck_assert_int_eq(pthread_create(&c.t, NULL, run_lk, &c), 0);
	pthread_join(c.t, NULL);
	ck_assert_uint_eq(c.res, NFS4ERR_DELAY);
	pthread_mutex_lock(&st->lock);
	ck_assert(f->lk_busy);
	ck_assert_uint_eq(st->lk_waiting, 0);
	os_file_lk_end_locked(st, f);
	pthread_mutex_unlock(&st->lock);
}
END_TEST

START_TEST(grace_period)
{
	struct ostate *g;

	ck_assert_int_eq(ostate_create(1, 200000000ull, &g), 0);
	ck_assert(os_in_grace(g));
	usleep(250000);
	ck_assert(!os_in_grace(g));
	ostate_destroy(g, NULL);
}
END_TEST

START_TEST(errno_map)
{
	ck_assert_uint_eq(nfs4_errno_to_status(0), NFS4_OK);
	ck_assert_uint_eq(nfs4_errno_to_status(-ENOENT), NFS4ERR_NOENT);
	ck_assert_uint_eq(nfs4_errno_to_status(-ESTALE), NFS4ERR_STALE);
	ck_assert_uint_eq(nfs4_errno_to_status(-ENOTEMPTY), NFS4ERR_NOTEMPTY);
	ck_assert_uint_eq(nfs4_errno_to_status(-ETIMEDOUT), NFS4ERR_DELAY);
	ck_assert_uint_eq(nfs4_errno_to_status(-EPROTO), NFS4ERR_IO);
}
END_TEST

/* ---- leases: the server's reaper expires a silent client and its state goes ---- */

START_TEST(lease_expiry_releases_state)
{
	struct nfs4_params p = { .lease_ns = 200000000ull, .max_ops = 16, .slots = 4, .max_req = 65536,
				 .max_resp = 65536, .max_resp_cached = 4096 };
	struct nfs4_server *srv;
	struct nfs4_compound cs;
	struct nfs4ops_ctx *c;
	struct nfs4_client *clp, *found;
	struct rpc_cred cred = { .flavor = 1 };
	uint64_t id;
	uint8_t verf[NFS4_VERIFIER_SIZE] = { 1 };

	ck_assert_int_eq(nfs4_server_create(&p, NULL, &srv), 0);
	memset(&cs, 0, sizeof(cs));
	cs.srv = srv;
	cs.cred = &cred;
	c = nfs4ops_ctx(&cs);               /* the server's, made with it (and its hooks) */
	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(srv->hooks.client_release);
	pthread_mutex_lock(&srv->lock);
	clp = nfs4_client_new_locked(srv, (const uint8_t *)"lease-test", 10, verf, &(struct nfs4_principal){ .flavor = 1 },
				     0);
	clp->confirmed = true;
	id = clp->clientid;
	pthread_mutex_unlock(&srv->lock);
	nfs4_client_put(srv, clp);
	pthread_mutex_lock(&c->st->lock);
	{
		struct os_owner *o = os_owner_find_locked(c->st, id, false, (const uint8_t *)"o", 1, true);
		struct os_file *fl = os_file_get_locked(c->st, 5, true);

		ck_assert_ptr_nonnull(os_stid_new_locked(c->st, OS_OPEN, o, fl));
	}
	pthread_mutex_unlock(&c->st->lock);
	ck_assert(os_client_has_state(c->st, id));
	/* renewing keeps it */
	for (int i = 0; i < 4; i++) {
		usleep(100000);
		ck_assert_uint_eq(nfs4_client_find(srv, id, &found), NFS4_OK);
		nfs4_client_renew(srv, found);
		nfs4_client_put(srv, found);
	}
	ck_assert(os_client_has_state(c->st, id));
	/* silence: the reaper (1 s tick) finds the lease expired; the client
	 * holds state, so it is kept as a courtesy client (RFC 7530 9.6.3.1) */
	for (int i = 0; i < 40; i++) {
		bool courtesy;

		pthread_mutex_lock(&srv->lock);
		courtesy = clp->courtesy;
		pthread_mutex_unlock(&srv->lock);
		if (courtesy)
			break;
		usleep(100000);
	}
	ck_assert(clp->courtesy);
	ck_assert(os_client_has_state(c->st, id));
	/* a conflicting request cancels its lease: the state goes, the client
	 * id answers NFS4ERR_EXPIRED (9.6.3.2) */
	ck_assert(nfs4_client_cancel_courtesy(srv, id));
	ck_assert(!os_client_has_state(c->st, id));
	ck_assert_uint_eq(nfs4_client_find(srv, id, &found), NFS4ERR_EXPIRED);
	ck_assert(nfs4_client_expired32(srv, (uint32_t)id));
	ck_assert(!nfs4_client_cancel_courtesy(srv, id));
	/* the same client owner establishing itself again forgets it */
	pthread_mutex_lock(&srv->lock);
	nfs4_forget_expired_locked(srv, (const uint8_t *)"lease-test", 10, 0);
	pthread_mutex_unlock(&srv->lock);
	ck_assert_uint_eq(nfs4_client_find(srv, id, &found), NFS4ERR_STALE_CLIENTID);
	nfs4_server_destroy(srv);
}
END_TEST

/*
 * Two gateway instances started in the same second (two gateways on one
 * filesystem, or one restarted at once) hand out different client ids,
 * and each takes the other's for stale: they share the server owner and
 * scope, so a client would otherwise take them for one server.
 */
START_TEST(instances_never_share_ids)
{
	struct nfs4_params p = { .lease_ns = 1000000000ull, .max_ops = 16, .slots = 4, .max_req = 65536,
				 .max_resp = 65536, .max_resp_cached = 4096 };
	uint8_t verf[NFS4_VERIFIER_SIZE] = { 7 };
	struct nfs4_principal pr = { .flavor = 1 };

	for (int attempt = 0;; attempt++) {
		struct nfs4_server *a, *b;
		struct nfs4_client *ca, *cb, *found;
		uint64_t t0 = now_real_ns(), t1;
		uint64_t ida, idb;

		ck_assert_int_eq(nfs4_server_create(&p, NULL, &a), 0);
		ck_assert_int_eq(nfs4_server_create(&p, NULL, &b), 0);
		t1 = now_real_ns();
		pthread_mutex_lock(&a->lock);
		ca = nfs4_client_new_locked(a, (const uint8_t *)"same-second", 11, verf, &pr, 1);
		ca->confirmed = true;
		ida = ca->clientid;
		pthread_mutex_unlock(&a->lock);
		pthread_mutex_lock(&b->lock);
		cb = nfs4_client_new_locked(b, (const uint8_t *)"same-second", 11, verf, &pr, 1);
		cb->confirmed = true;
		idb = cb->clientid;
		pthread_mutex_unlock(&b->lock);
		if (t0 / 1000000000ull == t1 / 1000000000ull || attempt == 5) {
			ck_assert_uint_ne(a->boot, b->boot);
			/* the admin socket's `nfs client` commands take ids as JSON's signed 64 bits */
			ck_assert_uint_le(ida, (uint64_t)INT64_MAX);
			ck_assert_uint_le(idb, (uint64_t)INT64_MAX);
			ck_assert_uint_ne(ida, idb);
			ck_assert_uint_eq(nfs4_client_find(b, ida, &found), NFS4ERR_STALE_CLIENTID);
			ck_assert_uint_eq(nfs4_client_find(a, idb, &found), NFS4ERR_STALE_CLIENTID);
			ck_assert_uint_eq(nfs4_client_find(b, idb, &found), NFS4_OK);
			nfs4_client_put(b, found);
		}
		nfs4_client_put(a, ca);
		nfs4_client_put(b, cb);
		nfs4_server_destroy(a);
		nfs4_server_destroy(b);
		if (t0 / 1000000000ull == t1 / 1000000000ull || attempt == 5)
			break;           /* the pair straddled a second: try again */
	}
}
END_TEST

START_TEST(root_squash)
{
	struct nfs_exports *x;
	struct nfs4_compound cs;
	struct rpc_cred root = { .flavor = 1, .uid = 0, .gid = 0, .ngids = 1, .gids = { 10 } },
			user = { .flavor = 1, .uid = 1000, .gid = 100 };
	struct lc_cred cr;
	char err[128];

	ck_assert_int_eq(nfs_exports_parse("id=1,path=/,anonuid=99,anongid=98;id=2,path=/b,no_root_squash", &x,
					   err, sizeof(err)), 0);
	memset(&cs, 0, sizeof(cs));
	cs.cred = &root;
	nfs4ops_cred(&cs, &x->e[0], &cr);
	ck_assert_uint_eq(cr.uid, 99);
	ck_assert_uint_eq(cr.gid, 98);
	ck_assert_int_eq(cr.ngroups, 0);
	nfs4ops_cred(&cs, &x->e[1], &cr);       /* no_root_squash */
	ck_assert_uint_eq(cr.uid, 0);
	ck_assert_int_eq(cr.ngroups, 1);
	cs.cred = &user;
	nfs4ops_cred(&cs, &x->e[0], &cr);
	ck_assert_uint_eq(cr.uid, 1000);
	ck_assert_uint_eq(cr.gid, 100);
	nfs_exports_put(x);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nfs4ops");
	TCase *t;
	SRunner *sr;
	int failed;

	t = tcase_create("fh");
	tcase_add_test(t, fh_round_trip);
	tcase_add_test(t, fh_bad);
	suite_add_tcase(s, t);
	t = tcase_create("fattr4");
	tcase_add_test(t, attr_encode);
	tcase_add_test(t, attr_supported_has_required);
	tcase_add_test(t, sattr_decode);
	tcase_add_test(t, acl_round_trip);
	tcase_add_test(t, errno_map);
	suite_add_tcase(s, t);
	t = tcase_create("state");
	tcase_add_checked_fixture(t, state_setup, state_teardown);
	tcase_add_test(t, stateid_checks);
	tcase_add_test(t, special_stateids);
	tcase_add_test(t, share_reservations);
	tcase_add_test(t, open_downgrade_modes);
	tcase_add_test(t, v40_seqid_order);
	tcase_add_test(t, v40_seqid_waits_for_predecessor);
	tcase_add_test(t, v40_seqid_wait_caps);
	tcase_add_test(t, byte_range_locks);
	tcase_add_test(t, pinned_stid_outlives_release);
	tcase_add_test(t, file_lock_call_marker);
	tcase_add_test(t, grace_period);
	suite_add_tcase(s, t);
	t = tcase_create("server");
	tcase_set_timeout(t, 30);
	tcase_add_test(t, lease_expiry_releases_state);
	tcase_add_test(t, root_squash);
	tcase_add_test(t, instances_never_share_ids);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
