/*
 * test_perm_acl.c - POSIX ACLs in perm/acl.c: what Linux's fs/posix_acl.c
 * decides, for the MDS, the client and the gateway alike.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "perm/perm.h"

#define U  MDSP_ACL_USER_OBJ
#define NU MDSP_ACL_USER
#define G  MDSP_ACL_GROUP_OBJ
#define NG MDSP_ACL_GROUP
#define M  MDSP_ACL_MASK
#define O  MDSP_ACL_OTHER
#define X  MDSP_ACL_UNDEFINED_ID

struct ent {
	uint16_t tag, perm;
	uint32_t id;
};

/* the xattr form of @n entries into @buf; its length */
static size_t mk(uint8_t *buf, const struct ent *e, size_t n)
{
	size_t i;

	buf[0] = 2, buf[1] = buf[2] = buf[3] = 0;
	for (i = 0; i < n; i++) {
		uint8_t *p = buf + 4 + 8 * i;

		p[0] = (uint8_t)e[i].tag, p[1] = (uint8_t)(e[i].tag >> 8);
		p[2] = (uint8_t)e[i].perm, p[3] = 0;
		p[4] = (uint8_t)e[i].id, p[5] = (uint8_t)(e[i].id >> 8);
		p[6] = (uint8_t)(e[i].id >> 16), p[7] = (uint8_t)(e[i].id >> 24);
	}
	return 4 + 8 * n;
}

#define MK(buf, ...) mk(buf, (const struct ent[]){ __VA_ARGS__ }, \
			sizeof((const struct ent[]){ __VA_ARGS__ }) / sizeof(struct ent))

static struct mdsp_caller user(uint32_t uid, uint32_t gid, uint32_t sup)
{
	struct mdsp_caller c = { .uid = uid, .gid = gid };

	if (sup) {
		c.ngroups = 1;
		c.groups[0] = sup;
	}
	return c;
}

START_TEST(test_valid)
{
	uint8_t b[256];
	size_t n;

	n = MK(b, { U, 7, X }, { G, 5, X }, { O, 4, X });
	ck_assert_int_eq(mdsp_acl_valid(b, n), 0);
	n = MK(b, { U, 7, X }, { NU, 6, 1001 }, { NU, 4, 1002 }, { G, 5, X }, { NG, 7, 3000 }, { M, 7, X }, { O, 0, X });
	ck_assert_int_eq(mdsp_acl_valid(b, n), 0);
	/* a header alone: valid, it removes the ACL */
	ck_assert_int_eq(mdsp_acl_valid(b, 4), 0);
	/* truncated entry, short header, other version */
	ck_assert_int_eq(mdsp_acl_valid(b, n - 1), -EINVAL);
	ck_assert_int_eq(mdsp_acl_valid(b, 3), -EINVAL);
	b[0] = 1;
	ck_assert_int_eq(mdsp_acl_valid(b, n), -EOPNOTSUPP);
	/* named entry without a mask */
	n = MK(b, { U, 7, X }, { NU, 6, 1001 }, { G, 5, X }, { O, 4, X });
	ck_assert_int_eq(mdsp_acl_valid(b, n), -EINVAL);
	/* unsorted and repeated ids */
	n = MK(b, { U, 7, X }, { NU, 6, 1002 }, { NU, 6, 1001 }, { G, 5, X }, { M, 7, X }, { O, 4, X });
	ck_assert_int_eq(mdsp_acl_valid(b, n), -EINVAL);
	n = MK(b, { U, 7, X }, { NU, 6, 1001 }, { NU, 6, 1001 }, { G, 5, X }, { M, 7, X }, { O, 4, X });
	ck_assert_int_eq(mdsp_acl_valid(b, n), -EINVAL);
	/* tags out of order, missing GROUP_OBJ / OTHER / USER_OBJ, perm past rwx, unknown tag */
	n = MK(b, { G, 5, X }, { U, 7, X }, { O, 4, X });
	ck_assert_int_eq(mdsp_acl_valid(b, n), -EINVAL);
	n = MK(b, { U, 7, X }, { O, 4, X });
	ck_assert_int_eq(mdsp_acl_valid(b, n), -EINVAL);
	n = MK(b, { U, 7, X }, { G, 4, X });
	ck_assert_int_eq(mdsp_acl_valid(b, n), -EINVAL);
	n = MK(b, { G, 5, X }, { O, 4, X });
	ck_assert_int_eq(mdsp_acl_valid(b, n), -EINVAL);
	n = MK(b, { U, 8, X }, { G, 5, X }, { O, 4, X });
	ck_assert_int_eq(mdsp_acl_valid(b, n), -EINVAL);
	n = MK(b, { U, 7, X }, { 0x40, 5, X }, { G, 5, X }, { O, 4, X });
	ck_assert_int_eq(mdsp_acl_valid(b, n), -EINVAL);
	/* two USER_OBJ */
	n = MK(b, { U, 7, X }, { U, 7, X }, { G, 5, X }, { O, 4, X });
	ck_assert_int_eq(mdsp_acl_valid(b, n), -EINVAL);
}
END_TEST

static int acc(uint32_t mode, const uint8_t *acl, size_t n, const struct mdsp_caller *c, int mask)
{
	struct mdsp_inode in = { .mode = mode, .uid = 1000, .gid = 100 };

	return mdsp_may_access_acl(&in, acl, n, c, mask);
}

START_TEST(test_permission)
{
	struct mdsp_caller owner = user(1000, 100, 0), alice = user(1001, 500, 0), bob = user(1002, 500, 0),
			   grp = user(1003, 100, 0), staff = user(1004, 500, 3000), other = user(1005, 500, 0),
			   root = user(0, 0, 0);
	uint8_t b[256];
	size_t n;

	/* u::rwx u:alice:rw- u:bob:--- g::r-- g:staff:rwx m::rw- o::--- ; mode's group class = mask */
	n = MK(b, { U, 7, X }, { NU, 6, 1001 }, { NU, 0, 1002 }, { G, 4, X }, { NG, 7, 3000 }, { M, 6, X },
	       { O, 0, X });
	ck_assert_int_eq(mdsp_acl_valid(b, n), 0);
	ck_assert_int_eq(acc(S_IFREG | 0760, b, n, &owner, 7), 0);
	/* named user allowed; mask limits it (no x) */
	ck_assert_int_eq(acc(S_IFREG | 0760, b, n, &alice, MDSP_MAY_READ | MDSP_MAY_WRITE), 0);
	ck_assert_int_eq(acc(S_IFREG | 0760, b, n, &alice, MDSP_MAY_EXEC), -EACCES);
	/* a named user entry wins over the groups the user is in */
	ck_assert_int_eq(acc(S_IFREG | 0760, b, n, &bob, MDSP_MAY_READ), -EACCES);
	/* owning group: its entry (r), not the mode's group class (the mask) */
	ck_assert_int_eq(acc(S_IFREG | 0760, b, n, &grp, MDSP_MAY_READ), 0);
	ck_assert_int_eq(acc(S_IFREG | 0760, b, n, &grp, MDSP_MAY_WRITE), -EACCES);
	/* named group: rwx masked to rw */
	ck_assert_int_eq(acc(S_IFREG | 0760, b, n, &staff, MDSP_MAY_WRITE), 0);
	ck_assert_int_eq(acc(S_IFREG | 0760, b, n, &staff, MDSP_MAY_EXEC), -EACCES);
	/* other */
	ck_assert_int_eq(acc(S_IFREG | 0760, b, n, &other, MDSP_MAY_READ), -EACCES);
	ck_assert_int_eq(acc(S_IFREG | 0764, b, n, &other, MDSP_MAY_READ), 0);
	/* the mode is the truth for the mask: a chmod g-w the ACL did not see yet */
	ck_assert_int_eq(acc(S_IFREG | 0740, b, n, &alice, MDSP_MAY_WRITE), -EACCES);
	/* a group class of 0: Linux skips the ACL, a named user gets other */
	ck_assert_int_eq(acc(S_IFREG | 0704, b, n, &alice, MDSP_MAY_READ), 0);
	ck_assert_int_eq(acc(S_IFREG | 0700, b, n, &alice, MDSP_MAY_READ), -EACCES);
	/* root passes; exec of a file with no x still refused */
	ck_assert_int_eq(acc(S_IFREG | 0660, b, n, &root, MDSP_MAY_READ | MDSP_MAY_WRITE), 0);
	ck_assert_int_eq(acc(S_IFREG | 0660, b, n, &root, MDSP_MAY_EXEC), -EACCES);
	/* without the ACL, mode bits alone: alice is other */
	ck_assert_int_eq(acc(S_IFREG | 0760, NULL, 0, &alice, MDSP_MAY_READ), -EACCES);
	/* several matching groups: any that grants */
	struct mdsp_caller both = user(1009, 100, 3000), owning = user(1009, 100, 0);

	n = MK(b, { U, 7, X }, { G, 0, X }, { NG, 4, 3000 }, { M, 7, X }, { O, 0, X });
	ck_assert_int_eq(acc(S_IFDIR | 0770, b, n, &both, MDSP_MAY_READ), 0);
	/* a matching group that does not grant: EACCES, not other's bits */
	ck_assert_int_eq(acc(S_IFDIR | 0777, b, n, &owning, MDSP_MAY_READ), -EACCES);
}
END_TEST

START_TEST(test_mode_interplay)
{
	uint8_t b[256];
	struct mdsp_acl_entry e;
	uint32_t mode;
	size_t n;

	/* equivalent to the mode: only the mode stays */
	n = MK(b, { U, 6, X }, { G, 4, X }, { O, 0, X });
	mode = S_IFREG | 0777;
	ck_assert_int_eq(mdsp_acl_equiv_mode(b, n, &mode), 0);
	ck_assert_uint_eq(mode, S_IFREG | 0640);
	/* a mask alone is not equivalent; the group class is the mask */
	n = MK(b, { U, 6, X }, { G, 4, X }, { M, 6, X }, { O, 0, X });
	mode = S_IFREG | S_ISGID | 0777;
	ck_assert_int_eq(mdsp_acl_equiv_mode(b, n, &mode), 1);
	ck_assert_uint_eq(mode, S_IFREG | S_ISGID | 0660);
	/* chmod rewrites USER_OBJ, MASK and OTHER, not GROUP_OBJ */
	n = MK(b, { U, 7, X }, { NU, 7, 1001 }, { G, 5, X }, { M, 7, X }, { O, 5, X });
	mdsp_acl_chmod(b, n, S_IFREG | 0640);
	mdsp_acl_entry(b, 0, &e);
	ck_assert_uint_eq(e.perm, 6);
	mdsp_acl_entry(b, 1, &e);
	ck_assert_uint_eq(e.perm, 7);
	mdsp_acl_entry(b, 2, &e);
	ck_assert_uint_eq(e.perm, 5);
	mdsp_acl_entry(b, 3, &e);
	ck_assert_uint_eq(e.perm, 4);
	mdsp_acl_entry(b, 4, &e);
	ck_assert_uint_eq(e.perm, 0);
	/* without a mask chmod rewrites GROUP_OBJ */
	n = MK(b, { U, 7, X }, { G, 5, X }, { O, 5, X });
	mdsp_acl_chmod(b, n, S_IFREG | 0710);
	mdsp_acl_entry(b, 1, &e);
	ck_assert_uint_eq(e.perm, 1);
	/* create from a default ACL: mode 0666 asked, default u::rwx g::r-x m::rwx o::r-x + named */
	n = MK(b, { U, 7, X }, { NU, 7, 1001 }, { G, 5, X }, { M, 7, X }, { O, 5, X });
	mode = S_IFREG | 0666;
	ck_assert_int_eq(mdsp_acl_create_masq(b, n, &mode), 1);
	ck_assert_uint_eq(mode, S_IFREG | 0664);
	mdsp_acl_entry(b, 0, &e);
	ck_assert_uint_eq(e.perm, 6);
	mdsp_acl_entry(b, 3, &e);
	ck_assert_uint_eq(e.perm, 6);
	mdsp_acl_entry(b, 4, &e);
	ck_assert_uint_eq(e.perm, 4);
	/* a default with only the base entries: equivalent, the mode alone */
	n = MK(b, { U, 7, X }, { G, 0, X }, { O, 0, X });
	mode = S_IFDIR | 0777;
	ck_assert_int_eq(mdsp_acl_create_masq(b, n, &mode), 0);
	ck_assert_uint_eq(mode, S_IFDIR | 0700);
}
END_TEST

/* SETATTR's write-permission checks (truncate by path, times to now) honour the ACL */
START_TEST(test_setattr_by_acl)
{
	struct mdsp_caller alice = user(1001, 500, 0), other = user(1005, 500, 0);
	struct mdsp_inode in = { .mode = S_IFREG | 0660, .uid = 1000, .gid = 100 }, a = { 0 };
	uint32_t kill;
	uint8_t b[256];
	size_t n = MK(b, { U, 6, X }, { NU, 6, 1001 }, { G, 4, X }, { M, 6, X }, { O, 0, X });

	ck_assert_int_eq(mdsp_setattr_check_acl(&in, b, n, &alice, MDSP_SETATTR_SIZE, &a, 1 << 20, &kill), 0);
	ck_assert_int_eq(mdsp_setattr_check_acl(&in, b, n, &other, MDSP_SETATTR_SIZE, &a, 1 << 20, &kill), -EACCES);
	ck_assert_int_eq(mdsp_setattr_check_acl(&in, b, n, &alice, MDSP_SETATTR_ATIME_NOW | MDSP_SETATTR_MTIME_NOW,
						&a, 1 << 20, &kill), 0);
	/* without the ACL alice is other */
	ck_assert_int_eq(mdsp_setattr_check(&in, &alice, MDSP_SETATTR_SIZE, &a, 1 << 20, &kill), -EACCES);
	/* explicit times stay the owner's */
	ck_assert_int_eq(mdsp_setattr_check_acl(&in, b, n, &alice, MDSP_SETATTR_MTIME, &a, 1 << 20, &kill), -EPERM);
}
END_TEST

static Suite *acl_suite(void)
{
	Suite *s = suite_create("perm_acl");
	TCase *tc = tcase_create("acl");

	tcase_add_test(tc, test_valid);
	tcase_add_test(tc, test_permission);
	tcase_add_test(tc, test_mode_interplay);
	tcase_add_test(tc, test_setattr_by_acl);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(acl_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
