/*
 * test_nfs4_gw_acl.c - the NFSv4 acl attribute over POSIX ACLs, on the
 * wire (raw COMPOUNDs to the gateway on a real client library and MDS):
 *
 *   getattr      a file's POSIX ACL comes out as knfsd's ACEs (OWNER@,
 *                the named user, GROUP@, EVERYONE@; DENYs where a later
 *                principal would get what an earlier one does not); a
 *                directory's default ACL as inherit-only ACEs; aclsupport
 *                says ALLOW and DENY; READDIR's acl is the entry's
 *   access       ACCESS honours the ACL (a named user may read and write
 *                what the mode bits alone deny it)
 *   setattr      an ACE list set by the owner becomes the POSIX ACL knfsd
 *                would make (named entries, mask, the mode's group class);
 *                ACEs POSIX cannot say are NFS4ERR_ATTRNOTSUPP; a non-owner
 *                gets NFS4ERR_PERM
 *   create       an acl among CREATE's attributes is set and in attrset
 */
#include "nfs_gw/nfs4/ops_int.h"
#include "nfs4gw_fixture.h"
#include "perm/perm.h"

static const struct nfs4_stateid anon_sid;

/* the numbers themselves: the test builds against a gateway without them too */
#define ATTR_ACL 12
#define ATTR_ACLSUPPORT 13
#ifndef MDSP_XATTR_ACL_ACCESS
#define MDSP_XATTR_ACL_ACCESS "system.posix_acl_access"
#define MDSP_XATTR_ACL_DEFAULT "system.posix_acl_default"
#endif

/* "u::rw-,u:2002:rw-,g::r--,m::rw-,o::---" in the xattr form */
static size_t acl_bytes(const char *text, uint8_t *b)
{
	size_t n = 4;
	const char *p = text;

	b[0] = 2, b[1] = b[2] = b[3] = 0;
	while (*p) {
		char kind = *p;
		uint32_t id = 0xffffffffu;
		unsigned tag = 0, perm = 0;

		p += 2;
		if (*p != ':')
			id = (uint32_t)strtoul(p, (char **)&p, 10);
		p++;
		for (int i = 0; i < 3 && *p && *p != ','; i++, p++)
			perm |= *p == 'r' ? 4 : *p == 'w' ? 2 : *p == 'x' ? 1 : 0;
		tag = kind == 'u' ? (id == 0xffffffffu ? 1 : 2) : kind == 'g' ? (id == 0xffffffffu ? 4 : 8) :
		      kind == 'm' ? 0x10 : 0x20;
		b[n] = (uint8_t)tag, b[n + 1] = 0, b[n + 2] = (uint8_t)perm, b[n + 3] = 0;
		b[n + 4] = (uint8_t)id, b[n + 5] = (uint8_t)(id >> 8), b[n + 6] = (uint8_t)(id >> 16);
		b[n + 7] = (uint8_t)(id >> 24);
		n += 8;
		if (*p == ',')
			p++;
	}
	return n;
}

static struct lc_inode *node_of(const char *name)
{
	struct lc_inode *d, *in;

	ck_assert_int_eq(lc_lookup(lc, lroot, tdir, &rootcr, NULL, &d), 0);
	ck_assert_int_eq(lc_lookup(lc, d, name, &rootcr, NULL, &in), 0);
	lc_put(lc, d);
	return in;
}

static void set_acl(const char *name, const char *xname, const char *text)
{
	uint8_t b[512];
	size_t n = acl_bytes(text, b);
	struct lc_inode *in = node_of(name);

	ck_assert_int_eq(lc_setxattr(lc, in, xname, b, n, 0, &rootcr), 0);
	lc_put(lc, in);
}

struct ace {
	uint32_t type, flag, mask;
	char who[64];
};

/* GETATTR acl (and aclsupport) of @fh: the ACEs into @a, their count */
static uint32_t get_acl(struct nc *n, const struct nfs4_fh *fh, struct ace *a, uint32_t max, uint32_t *support)
{
	static const int attrs[] = { ATTR_ACL, ATTR_ACLSUPPORT, -1 };
	struct xdr_bitmap bm;
	struct xdr_dec v;
	struct ncc c;
	struct nrep r;
	uint32_t cnt;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_getattr(&c, attrs);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	ck_assert_uint_eq(rep_next(&r, OP_GETATTR), NFS4_OK);
	rep_fattr(&r, &bm, &v);
	ck_assert_msg(bm.w[0] & (1u << ATTR_ACL), "acl not returned (bitmap 0x%x)", bm.w[0]);
	ck_assert_int_eq(xdr_get_u32(&v, &cnt), 0);
	ck_assert_uint_le(cnt, max);
	for (uint32_t i = 0; i < cnt; i++) {
		ck_assert_int_eq(xdr_get_u32(&v, &a[i].type), 0);
		ck_assert_int_eq(xdr_get_u32(&v, &a[i].flag), 0);
		ck_assert_int_eq(xdr_get_u32(&v, &a[i].mask), 0);
		ck_assert_int_eq(xdr_get_string(&v, a[i].who, sizeof(a[i].who), 63), 0);
	}
	ck_assert_int_eq(xdr_get_u32(&v, support), 0);
	rep_free(&r);
	return cnt;
}

#define ANYONE 0x120080u       /* READ_ATTRIBUTES | READ_ACL | SYNCHRONIZE */
#define OWNERM 0x040100u       /* WRITE_ATTRIBUTES | WRITE_ACL */

static void ace_is(const struct ace *a, uint32_t type, uint32_t flag, uint32_t mask, const char *who)
{
	ck_assert_msg(a->type == type && a->flag == flag && a->mask == mask && !strcmp(a->who, who),
		      "ACE {%u, 0x%x, 0x%x, %s}, expected {%u, 0x%x, 0x%x, %s}", a->type, a->flag, a->mask, a->who,
		      type, flag, mask, who);
}

static uint32_t access_as(struct nc *n, const struct nfs4_fh *fh, uint32_t uid, uint32_t want, uint32_t *got)
{
	struct ncc c;
	struct nrep r;
	uint32_t st, sup = 0;

	n->uid = n->gid = uid;
	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	ncc_op(&c, OP_ACCESS);
	xdr_put_u32(&c.e, want);
	ncc_call(&c, &r);
	n->uid = n->gid = 0;
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	st = rep_next(&r, OP_ACCESS);
	if (!st) {
		ck_assert_int_eq(xdr_get_u32(&r.d, &sup), 0);
		ck_assert_int_eq(xdr_get_u32(&r.d, got), 0);
	}
	rep_free(&r);
	return st;
}

/* SETATTR acl of @fh as @uid, @n ACEs */
static uint32_t set_acl_wire(struct nc *n, const struct nfs4_fh *fh, uint32_t uid, const struct ace *a, uint32_t cnt)
{
	uint32_t w[3] = { 1u << ATTR_ACL, 0, 0 }, st;
	struct xdr_enc v;
	struct ncc c;
	struct nrep r;

	xdr_enc_init(&v, 4096);
	xdr_put_u32(&v, cnt);
	for (uint32_t i = 0; i < cnt; i++) {
		xdr_put_u32(&v, a[i].type);
		xdr_put_u32(&v, a[i].flag);
		xdr_put_u32(&v, a[i].mask);
		xdr_put_string(&v, a[i].who);
	}
	n->uid = n->gid = uid;
	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_setattr_raw(&c, &anon_sid, w, v.buf, (uint32_t)v.len);
	ncc_call(&c, &r);
	n->uid = n->gid = 0;
	xdr_enc_free(&v);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	st = rep_next(&r, OP_SETATTR);
	rep_free(&r);
	return st;
}

START_TEST(getattr_acl)
{
	struct ace a[32];
	struct nfs4_fh d, fh;
	struct nc *n;
	uint32_t cnt, support;

	gw_up();
	n = nc_connect(port, 1);
	nc_session(n, "acl-get", 1);
	test_dir(n, "aclget", &d);
	make_file("f", "x", 0640);
	set_owner_mode("f", 2001, 2001, 0640);
	set_acl("f", MDSP_XATTR_ACL_ACCESS, "u::rw-,u:2002:rw-,g::r--,m::rw-,o::---");
	nc_lookup(n, &d, "f", &fh);
	cnt = get_acl(n, &fh, a, 32, &support);
	ck_assert_uint_eq(support, 3);          /* ACL4_SUPPORT_ALLOW_ACL | ACL4_SUPPORT_DENY_ACL */
	ck_assert_uint_eq(cnt, 4);
	ace_is(&a[0], 0, 0, ANYONE | OWNERM | 0x7, "OWNER@");
	ace_is(&a[1], 0, 0, ANYONE | 0x7, "2002");
	ace_is(&a[2], 0, 0, ANYONE | 0x1, "GROUP@");
	ace_is(&a[3], 0, 0, ANYONE, "EVERYONE@");

	/* READDIR asking for acl: the same ACEs for the entry */
	{
		static const int attrs[] = { ATTR_ACL, -1 };
		struct nrep r;
		struct xdr_dec v;
		struct ace x;

		ck_assert_msg(nc_readdir_entry(n, &d, attrs, "f", &r, &v), "f not in READDIR");
		ck_assert_int_eq(xdr_get_u32(&v, &cnt), 0);
		ck_assert_uint_eq(cnt, 4);
		for (int i = 0; i < 2; i++) {
			ck_assert_int_eq(xdr_get_u32(&v, &x.type), 0);
			ck_assert_int_eq(xdr_get_u32(&v, &x.flag), 0);
			ck_assert_int_eq(xdr_get_u32(&v, &x.mask), 0);
			ck_assert_int_eq(xdr_get_string(&v, x.who, sizeof(x.who), 63), 0);
		}
		ace_is(&x, 0, 0, ANYONE | 0x7, "2002");
		rep_free(&r);
	}

	/* a mode alone: u::rw- g::--- o::r-- needs DENYs (knfsd's shape) */
	make_file("m", "x", 0604);
	nc_lookup(n, &d, "m", &fh);
	cnt = get_acl(n, &fh, a, 32, &support);
	ck_assert_uint_eq(cnt, 4);
	ace_is(&a[0], 0, 0, ANYONE | OWNERM | 0x7, "OWNER@");
	ace_is(&a[1], 0, 0, ANYONE, "GROUP@");
	ace_is(&a[2], 1, 0, 0x1, "GROUP@");
	ace_is(&a[3], 0, 0, ANYONE | 0x1, "EVERYONE@");

	/* a directory's default ACL: the same ACEs, inherit-only */
	make_node("dd", S_IFDIR);
	set_acl("dd", MDSP_XATTR_ACL_DEFAULT, "u::rwx,g::r-x,o::---");
	nc_lookup(n, &d, "dd", &fh);
	cnt = get_acl(n, &fh, a, 32, &support);
	ck_assert_uint_eq(cnt, 6);
	ace_is(&a[0], 0, 0, ANYONE | OWNERM | 0x67, "OWNER@");       /* rwx + DELETE_CHILD */
	ace_is(&a[3], 0, 0xb, ANYONE | OWNERM | 0x67, "OWNER@");
	ace_is(&a[4], 0, 0xb, ANYONE | 0x21, "GROUP@");
	ace_is(&a[5], 0, 0xb, ANYONE, "EVERYONE@");
	nc_close(n);
	gw_down();
}
END_TEST

START_TEST(access_by_acl)
{
	struct nfs4_fh d, fh;
	struct nc *n;
	uint32_t got = 0;

	gw_up();
	n = nc_connect(port, 1);
	nc_session(n, "acl-access", 1);
	test_dir(n, "aclaccess", &d);
	make_file("f", "x", 0640);
	set_owner_mode("f", 2001, 2001, 0640);
	set_acl("f", MDSP_XATTR_ACL_ACCESS, "u::rw-,u:2002:rw-,g::r--,m::rw-,o::---");
	nc_lookup(n, &d, "f", &fh);
	/* READ | MODIFY | EXTEND: the named user has them, another user not */
	ck_assert_uint_eq(access_as(n, &fh, 2002, 0x1 | 0x4 | 0x8, &got), NFS4_OK);
	ck_assert_uint_eq(got, 0x1 | 0x4 | 0x8);
	ck_assert_uint_eq(access_as(n, &fh, 2003, 0x1 | 0x4 | 0x8, &got), NFS4_OK);
	ck_assert_uint_eq(got, 0);
	nc_close(n);
	gw_down();
}
END_TEST

START_TEST(setattr_acl)
{
	struct nfs4_fh d, fh, dfh;
	struct lc_inode *in;
	struct lc_attr at;
	uint8_t got[512], want[512];
	ssize_t len;
	size_t wlen;
	struct nc *n;
	const struct ace acl[] = {
		{ 0, 0, 0x7, "OWNER@" },        /* READ_DATA | WRITE_DATA | APPEND_DATA */
		{ 0, 0, 0x1, "2003" },
		{ 0, 0, 0, "GROUP@" },
		{ 0, 0, 0, "EVERYONE@" },
	};
	const struct ace audit[] = { { 2, 0, 0x1, "OWNER@" } };
	const struct ace inherit[] = { { 0, 0x3, 0x1, "OWNER@" } };
	const struct ace dir_acl[] = {
		{ 0, 0, 0x67, "OWNER@" },
		{ 0, 0, 0x21, "GROUP@" },
		{ 0, 0, 0x21, "EVERYONE@" },
		{ 0, 0xb, 0x67, "OWNER@" },
		{ 0, 0xb | 0x40, 0x21, "3000" },
		{ 0, 0xb, 0, "GROUP@" },
		{ 0, 0xb, 0, "EVERYONE@" },
	};

	gw_up();
	n = nc_connect(port, 1);
	nc_session(n, "acl-set", 1);
	test_dir(n, "aclset", &d);
	make_file("f", "x", 0666);
	set_owner_mode("f", 2001, 2001, 0666);
	nc_lookup(n, &d, "f", &fh);
	/* not the owner */
	ck_assert_uint_eq(set_acl_wire(n, &fh, 2002, acl, 4), NFS4ERR_PERM);
	/* what POSIX cannot say */
	ck_assert_uint_eq(set_acl_wire(n, &fh, 2001, audit, 1), NFS4ERR_ATTRNOTSUPP);
	ck_assert_uint_eq(set_acl_wire(n, &fh, 2001, inherit, 1), NFS4ERR_ATTRNOTSUPP);
	/* the owner: u::rw- u:2003:r-- g::--- m::r-- o::--- and the mode follows */
	ck_assert_uint_eq(set_acl_wire(n, &fh, 2001, acl, 4), NFS4_OK);
	in = node_of("f");
	len = lc_getxattr(lc, in, MDSP_XATTR_ACL_ACCESS, got, sizeof(got), &rootcr);
	wlen = acl_bytes("u::rw-,u:2003:r--,g::---,m::r--,o::---", want);
	ck_assert_int_eq(len, (ssize_t)wlen);
	ck_assert_int_eq(memcmp(got, want, wlen), 0);
	ck_assert_int_eq(lc_getattr(lc, in, &rootcr, true, &at), 0);
	ck_assert_uint_eq(at.mode & 07777, 0640);
	lc_put(lc, in);
	/* and 2003 may read it now */
	{
		uint32_t acc = 0;

		ck_assert_uint_eq(access_as(n, &fh, 2003, 0x1 | 0x4, &acc), NFS4_OK);
		ck_assert_uint_eq(acc, 0x1);
	}
	/* a directory: the inheritable ACEs are its default ACL */
	make_node("dd", S_IFDIR);
	set_owner_mode("dd", 2001, 2001, 0755);
	nc_lookup(n, &d, "dd", &dfh);
	ck_assert_uint_eq(set_acl_wire(n, &dfh, 2001, dir_acl, 7), NFS4_OK);
	in = node_of("dd");
	len = lc_getxattr(lc, in, MDSP_XATTR_ACL_DEFAULT, got, sizeof(got), &rootcr);
	wlen = acl_bytes("u::rwx,g::---,g:3000:r-x,m::r-x,o::---", want);
	ck_assert_int_eq(len, (ssize_t)wlen);
	ck_assert_int_eq(memcmp(got, want, wlen), 0);
	/* the effective part is the mode's: no access ACL kept */
	ck_assert_int_eq(lc_getxattr(lc, in, MDSP_XATTR_ACL_ACCESS, got, sizeof(got), &rootcr), -ENODATA);
	ck_assert_int_eq(lc_getattr(lc, in, &rootcr, true, &at), 0);
	ck_assert_uint_eq(at.mode & 07777, 0755);
	lc_put(lc, in);
	nc_close(n);
	gw_down();
}
END_TEST

/* CREATE (a directory) with an acl among its attributes: set on the new
 * directory, and said so in attrset */
START_TEST(create_with_acl)
{
	const struct ace acl[] = {
		{ 0, 0, 0x67, "OWNER@" },
		{ 0, 0, 0x67, "2002" },
		{ 0, 0, 0x21, "GROUP@" },
		{ 0, 0, 0x21, "EVERYONE@" },
	};
	uint32_t w[3] = { 1u << ATTR_ACL, 1u << (33 - 32) /* mode */, 0 };
	uint8_t got[512], want[512];
	struct nfs4_fh d;
	struct xdr_bitmap set;
	struct xdr_enc v;
	struct lc_inode *in;
	struct lc_attr at;
	struct ncc c;
	struct nrep r;
	struct nc *n;
	ssize_t len;
	size_t wlen;

	gw_up();
	n = nc_connect(port, 1);
	nc_session(n, "acl-create", 1);
	test_dir(n, "aclcreate", &d);
	xdr_enc_init(&v, 4096);
	xdr_put_u32(&v, 4);
	for (int i = 0; i < 4; i++) {
		xdr_put_u32(&v, acl[i].type);
		xdr_put_u32(&v, acl[i].flag);
		xdr_put_u32(&v, acl[i].mask);
		xdr_put_string(&v, acl[i].who);
	}
	xdr_put_u32(&v, 0700);                  /* mode */
	ncc_begin(&c, n);
	enc_putfh(&c, &d);
	ncc_op(&c, OP_CREATE);
	xdr_put_u32(&c.e, 2);                   /* NF4DIR */
	xdr_put_string(&c.e, "cd");
	xdr_put_bitmap(&c.e, w, 2);
	xdr_put_opaque(&c.e, v.buf, (uint32_t)v.len);
	ncc_call(&c, &r);
	xdr_enc_free(&v);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	ck_assert_uint_eq(rep_next(&r, OP_CREATE), NFS4_OK);
	ck_assert_int_eq(xdr_skip(&r.d, 4 + 8 + 8), 0);     /* change_info4 */
	ck_assert_int_eq(xdr_get_bitmap(&r.d, &set), 0);
	ck_assert_msg(set.w[0] & (1u << ATTR_ACL), "acl not in attrset (0x%x)", set.w[0]);
	rep_free(&r);
	in = node_of("cd");
	len = lc_getxattr(lc, in, MDSP_XATTR_ACL_ACCESS, got, sizeof(got), &rootcr);
	wlen = acl_bytes("u::rwx,u:2002:rwx,g::r-x,m::rwx,o::r-x", want);
	ck_assert_int_eq(len, (ssize_t)wlen);
	ck_assert_int_eq(memcmp(got, want, wlen), 0);
	ck_assert_int_eq(lc_getattr(lc, in, &rootcr, true, &at), 0);
	ck_assert_uint_eq(at.mode & 07777, 0775);
	lc_put(lc, in);
	nc_close(n);
	gw_down();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("nfs4_gw_acl");
	TCase *tc = tcase_create("acl");

	tcase_add_unchecked_fixture(tc, fs_setup, fs_teardown);
	tcase_add_checked_fixture(tc, evict_leftover_sessions, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, getattr_acl);
	tcase_add_test(tc, access_by_acl);
	tcase_add_test(tc, setattr_acl);
	tcase_add_test(tc, create_with_acl);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	log_init("test_nfs4_gw_acl");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
