/*
 * test_nfs3_xdr.c - the NFSv3/MOUNT argument decoders (nfs3_xdr.c): each
 * procedure's arguments encoded as a client would, decoded back field by
 * field; every truncation of them refused; corrupted values (a bool that is
 * 2, an unknown createmode, stable_how or time_how, a handle over 64 bytes,
 * a WRITE whose count exceeds its data) refused; the result encoders'
 * sizes (fattr3 is 84 bytes, wcc_data 4+24+4+84).
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "client/client.h"
#include "nfs_gw/nfs3/nfs3_xdr.h"

static const uint8_t FH[32] = { 'L', 'G', 1, 2, 0, 7, 0, 0, 'a', 'b', 'c', 'd', 9, 10, 11, 12, 13, 14,
				15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28 };

static void put_fh(struct xdr_enc *e)
{
	xdr_put_opaque(e, FH, sizeof(FH));
}

/* mode 0640, size 99, atime: server time, mtime: client time 5.6 */
static void put_sattr(struct xdr_enc *e)
{
	xdr_put_bool(e, true);
	xdr_put_u32(e, 0640);
	xdr_put_bool(e, false);
	xdr_put_bool(e, false);
	xdr_put_bool(e, true);
	xdr_put_u64(e, 99);
	xdr_put_u32(e, SET_TO_SERVER_TIME);
	xdr_put_u32(e, SET_TO_CLIENT_TIME);
	xdr_put_u32(e, 5);
	xdr_put_u32(e, 6);
}

typedef int (*dec_fn)(struct xdr_dec *d, void *a);

/* Every proper prefix of @buf must be refused; the whole must decode. */
static void check_truncations(const struct xdr_enc *e, dec_fn fn, void *a)
{
	struct xdr_dec d;

	for (size_t n = 0; n < e->len; n++) {
		xdr_dec_init(&d, e->buf, n);
		ck_assert_msg(fn(&d, a) != 0, "a prefix of %zu of %zu bytes decoded", n, e->len);
	}
	xdr_dec_init(&d, e->buf, e->len);
	ck_assert_int_eq(fn(&d, a), 0);
	ck_assert_uint_eq(xdr_dec_left(&d), 0);
}

static int dec_setattr(struct xdr_dec *d, void *a) { return nfs3_dec_setattr(d, a); }
static int dec_write(struct xdr_dec *d, void *a) { return nfs3_dec_write(d, a); }
static int dec_create(struct xdr_dec *d, void *a) { return nfs3_dec_create(d, a); }
static int dec_symlink(struct xdr_dec *d, void *a) { return nfs3_dec_symlink(d, a); }
static int dec_mknod(struct xdr_dec *d, void *a) { return nfs3_dec_mknod(d, a); }
static int dec_rename(struct xdr_dec *d, void *a) { return nfs3_dec_rename(d, a); }
static int dec_link(struct xdr_dec *d, void *a) { return nfs3_dec_link(d, a); }
static int dec_rdplus(struct xdr_dec *d, void *a) { return nfs3_dec_readdir(d, true, a); }
static int dec_commit(struct xdr_dec *d, void *a) { return nfs3_dec_commit(d, a); }

START_TEST(setattr_round_trip)
{
	struct nfs3_setattr_args a;
	struct xdr_enc e;

	xdr_enc_init(&e, 4096);
	put_fh(&e);
	put_sattr(&e);
	xdr_put_bool(&e, true);          /* guard */
	xdr_put_u32(&e, 11);
	xdr_put_u32(&e, 12);
	check_truncations(&e, dec_setattr, &a);
	ck_assert_uint_eq(a.fh.len, 32);
	ck_assert_int_eq(memcmp(a.fh.data, FH, 32), 0);
	ck_assert_int_eq(a.sa.mask, LC_SET_MODE | LC_SET_SIZE | LC_SET_ATIME | LC_SET_ATIME_NOW | LC_SET_MTIME);
	ck_assert_uint_eq(a.sa.mode, 0640);
	ck_assert_uint_eq(a.sa.size, 99);
	ck_assert_uint_eq(a.sa.mtime.sec, 5);
	ck_assert_uint_eq(a.sa.mtime.nsec, 6);
	ck_assert(a.guard);
	ck_assert_uint_eq(a.guard_ctime.sec, 11);
	ck_assert_uint_eq(a.guard_ctime.nsec, 12);
	xdr_enc_free(&e);
}
END_TEST

START_TEST(write_round_trip)
{
	struct nfs3_write_args a;
	struct xdr_enc e;
	struct xdr_dec d;

	xdr_enc_init(&e, 4096);
	put_fh(&e);
	xdr_put_u64(&e, 1ull << 40);
	xdr_put_u32(&e, 5);
	xdr_put_u32(&e, NFS3_FILE_SYNC);
	xdr_put_opaque(&e, "hello", 5);
	check_truncations(&e, dec_write, &a);
	ck_assert_uint_eq(a.offset, 1ull << 40);
	ck_assert_uint_eq(a.data_len, 5);
	ck_assert_int_eq(memcmp(a.data, "hello", 5), 0);
	ck_assert_uint_eq(a.stable, NFS3_FILE_SYNC);
	/* count larger than the data: garbage; smaller: that much is written */
	xdr_patch_u32(&e, 4 + 32 + 8, 6);
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_int_eq(nfs3_dec_write(&d, &a), -EBADMSG);
	xdr_patch_u32(&e, 4 + 32 + 8, 3);
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_int_eq(nfs3_dec_write(&d, &a), 0);
	ck_assert_uint_eq(a.data_len, 3);
	/* stable_how 3 */
	xdr_patch_u32(&e, 4 + 32 + 8 + 4, 3);
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_int_eq(nfs3_dec_write(&d, &a), -EBADMSG);
	xdr_enc_free(&e);
}
END_TEST

START_TEST(create_modes)
{
	struct nfs3_create_args a;
	struct xdr_enc e;
	struct xdr_dec d;

	xdr_enc_init(&e, 4096);
	put_fh(&e);
	xdr_put_string(&e, "newfile");
	xdr_put_u32(&e, NFS3_GUARDED);
	put_sattr(&e);
	check_truncations(&e, dec_create, &a);
	ck_assert_uint_eq(a.where.name_len, 7);
	ck_assert_int_eq(memcmp(a.where.name, "newfile", 7), 0);
	ck_assert_uint_eq(a.mode, NFS3_GUARDED);
	ck_assert_uint_eq(a.sa.mode, 0640);
	xdr_enc_free(&e);
	xdr_enc_init(&e, 4096);
	put_fh(&e);
	xdr_put_string(&e, "x");
	xdr_put_u32(&e, NFS3_EXCLUSIVE);
	xdr_put_fixed(&e, "verifier", 8);
	check_truncations(&e, dec_create, &a);
	ck_assert_int_eq(memcmp(a.verf, "verifier", 8), 0);
	xdr_patch_u32(&e, 4 + 32 + 8, 3);                 /* createmode 3 */
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_int_eq(nfs3_dec_create(&d, &a), -EBADMSG);
	xdr_enc_free(&e);
}
END_TEST

START_TEST(names_links_nodes)
{
	struct nfs3_symlink_args s;
	struct nfs3_mknod_args m;
	struct nfs3_rename_args r;
	struct nfs3_link_args l;
	struct xdr_enc e;

	xdr_enc_init(&e, 8192);
	put_fh(&e);
	xdr_put_string(&e, "lnk");
	put_sattr(&e);
	xdr_put_string(&e, "../target/path");
	check_truncations(&e, dec_symlink, &s);
	ck_assert_uint_eq(s.path_len, 14);
	xdr_enc_free(&e);

	xdr_enc_init(&e, 8192);
	put_fh(&e);
	xdr_put_string(&e, "dev");
	xdr_put_u32(&e, NF3CHR);
	put_sattr(&e);
	xdr_put_u32(&e, 4);
	xdr_put_u32(&e, 64);
	check_truncations(&e, dec_mknod, &m);
	ck_assert_uint_eq(m.type, NF3CHR);
	ck_assert_uint_eq(m.major, 4);
	ck_assert_uint_eq(m.minor, 64);
	xdr_enc_free(&e);

	xdr_enc_init(&e, 8192);
	put_fh(&e);
	xdr_put_string(&e, "from");
	put_fh(&e);
	xdr_put_string(&e, "to");
	check_truncations(&e, dec_rename, &r);
	ck_assert_uint_eq(r.to.name_len, 2);
	xdr_enc_free(&e);

	xdr_enc_init(&e, 8192);
	put_fh(&e);
	put_fh(&e);
	xdr_put_string(&e, "hard");
	check_truncations(&e, dec_link, &l);
	ck_assert_uint_eq(l.link.name_len, 4);
	xdr_enc_free(&e);
}
END_TEST

START_TEST(readdir_commit)
{
	struct nfs3_readdir_args a;
	struct nfs3_commit_args c;
	struct xdr_enc e;

	xdr_enc_init(&e, 4096);
	put_fh(&e);
	xdr_put_u64(&e, 77);
	xdr_put_fixed(&e, "cookieve", 8);
	xdr_put_u32(&e, 1000);
	xdr_put_u32(&e, 2000);
	check_truncations(&e, dec_rdplus, &a);
	ck_assert_uint_eq(a.cookie, 77);
	ck_assert_uint_eq(a.dircount, 1000);
	ck_assert_uint_eq(a.count, 2000);
	xdr_enc_free(&e);
	xdr_enc_init(&e, 4096);
	put_fh(&e);
	xdr_put_u64(&e, 5);
	xdr_put_u32(&e, 6);
	check_truncations(&e, dec_commit, &c);
	ck_assert_uint_eq(c.offset, 5);
	ck_assert_uint_eq(c.count, 6);
	xdr_enc_free(&e);
}
END_TEST

START_TEST(corrupt)
{
	struct nfs3_fh fh;
	struct nfs3_sattr sa;
	struct xdr_enc e;
	struct xdr_dec d;
	uint8_t big[65] = { 0 };
	const uint8_t *p;
	uint32_t len;

	/* a handle of 65 bytes */
	xdr_enc_init(&e, 4096);
	xdr_put_opaque(&e, big, sizeof(big));
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_int_eq(nfs3_dec_fh(&d, &fh), -EBADMSG);
	xdr_enc_free(&e);
	/* set_mode3 with a bool of 2, a time_how of 3 */
	xdr_enc_init(&e, 4096);
	put_sattr(&e);
	xdr_patch_u32(&e, 0, 2);
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_int_eq(nfs3_dec_sattr(&d, &sa), -EBADMSG);
	xdr_patch_u32(&e, 0, 1);
	xdr_patch_u32(&e, 4 * 7, 3);                      /* atime's time_how */
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_int_eq(nfs3_dec_sattr(&d, &sa), -EBADMSG);
	xdr_enc_free(&e);
	/* MOUNT dirpath over MNTPATHLEN */
	xdr_enc_init(&e, 8192);
	xdr_put_u32(&e, MNTPATHLEN + 1);
	for (int i = 0; i < (MNTPATHLEN + 4) / 4; i++)
		xdr_put_u32(&e, 0x41414141);
	xdr_dec_init(&d, e.buf, e.len);
	ck_assert_int_eq(nfs3_dec_dirpath(&d, &p, &len), -EBADMSG);
	xdr_enc_free(&e);
}
END_TEST

START_TEST(result_sizes)
{
	struct nfs3_fattr f = { .type = NF3REG, .mode = 0644, .size = 7, .fileid = 9 };
	struct nfs3_wcc_attr w = { .size = 1 };
	struct nfs3_fh fh = { .len = 32 };
	struct xdr_enc e;

	xdr_enc_init(&e, 4096);
	nfs3_put_fattr(&e, &f);
	ck_assert_uint_eq(e.len, 84);
	xdr_enc_truncate(&e, 0);
	nfs3_put_wcc(&e, &w, &f);
	ck_assert_uint_eq(e.len, 4 + 24 + 4 + 84);
	xdr_enc_truncate(&e, 0);
	nfs3_put_wcc(&e, NULL, NULL);
	ck_assert_uint_eq(e.len, 8);
	xdr_enc_truncate(&e, 0);
	nfs3_put_post_op_fh(&e, &fh);
	ck_assert_uint_eq(e.len, 4 + 4 + 32);
	xdr_enc_free(&e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nfs3_xdr");
	TCase *t = tcase_create("nfs3_xdr");
	SRunner *sr;
	int nf;

	tcase_add_test(t, setattr_round_trip);
	tcase_add_test(t, write_round_trip);
	tcase_add_test(t, create_modes);
	tcase_add_test(t, names_links_nodes);
	tcase_add_test(t, readdir_commit);
	tcase_add_test(t, corrupt);
	tcase_add_test(t, result_sizes);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
