/*
 * test_rlock.c - common/rlock.c: POSIX byte-range lock sets.  Merges,
 * splits, upgrades and downgrades of one owner, unlocks of part of a lock,
 * ranges to EOF and at the top of the 64-bit space, conflicts between
 * owners, the net record count rlock_delta() predicts, a failed allocation
 * leaving the set untouched, and a random walk checked byte by byte against
 * a model (what every byte of a small file is locked as, per owner).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/rlock.h"

static int allocs, frees, fail_after = -1;

static struct rlock *t_alloc(void *arg)
{
	(void)arg;
	if (fail_after == 0)
		return NULL;
	if (fail_after > 0)
		fail_after--;
	allocs++;
	return calloc(1, sizeof(struct rlock));
}

static void t_release(struct rlock *l, void *arg)
{
	(void)arg;
	frees++;
	free(l);
}

static const struct rlock_ops ops = { t_alloc, t_release };

static struct rlock_owner O(uint64_t id)
{
	struct rlock_owner o = { .sid = 1, .id = id, .ns = 0 };
	return o;
}

static void set_free(struct rlock_set *s)
{
	while (s->head)
		rlock_remove(s, s->head, &ops, NULL);
}

/* @o's lock covering byte @at: its type, or 0 */
static int type_at(const struct rlock_set *s, uint64_t id, uint64_t at, const struct rlock **out)
{
	const struct rlock *l;
	struct rlock_owner o = O(id);

	for (l = s->head; l; l = l->next)
		if (rlock_owner_eq(&l->owner, &o) && l->start <= at && at <= l->end) {
			if (out)
				*out = l;
			return l->type;
		}
	return 0;
}

static void apply(struct rlock_set *s, uint64_t id, int type, uint64_t start, uint64_t end)
{
	struct rlock_owner o = O(id);
	uint64_t before = s->n;
	int d = rlock_delta(s, &o, type, start, end);

	ck_assert_int_eq(rlock_apply(s, &o, 100 + (uint32_t)id, type, start, end, &ops, NULL), 0);
	ck_assert_int_eq((int64_t)s->n - (int64_t)before, d);
}

START_TEST(test_range)
{
	uint64_t end;

	ck_assert(rlock_range(0, 0, &end) && end == RLOCK_EOF);
	ck_assert(rlock_range(10, 5, &end) && end == 14);
	ck_assert(rlock_range(RLOCK_EOF, 1, &end) && end == RLOCK_EOF);
	ck_assert(!rlock_range(RLOCK_EOF, 2, &end));
	ck_assert(rlock_range(1, RLOCK_EOF, &end) && end == RLOCK_EOF);
	ck_assert(!rlock_range(2, RLOCK_EOF, &end));
	ck_assert_uint_eq(rlock_len(5, RLOCK_EOF), 0);
	ck_assert_uint_eq(rlock_len(5, 9), 5);
}
END_TEST

START_TEST(test_merge_adjacent_and_overlapping)
{
	struct rlock_set s = { 0 };
	const struct rlock *l;

	apply(&s, 1, RLOCK_RD, 0, 9);
	apply(&s, 1, RLOCK_RD, 10, 19);     /* adjoins: one lock */
	ck_assert_uint_eq(s.n, 1);
	ck_assert_int_eq(type_at(&s, 1, 15, &l), RLOCK_RD);
	ck_assert_uint_eq(l->start, 0);
	ck_assert_uint_eq(l->end, 19);
	apply(&s, 1, RLOCK_RD, 30, 39);
	ck_assert_uint_eq(s.n, 2);
	apply(&s, 1, RLOCK_RD, 15, 35);     /* bridges both */
	ck_assert_uint_eq(s.n, 1);
	ck_assert_int_eq(type_at(&s, 1, 0, &l), RLOCK_RD);
	ck_assert_uint_eq(l->end, 39);
	ck_assert_uint_eq(l->pid, 101);
	/* a different type adjoining does not merge */
	apply(&s, 1, RLOCK_WR, 40, 49);
	ck_assert_uint_eq(s.n, 2);
	set_free(&s);
	ck_assert_int_eq(allocs, frees);
}
END_TEST

START_TEST(test_upgrade_splits_in_three)
{
	struct rlock_set s = { 0 };
	struct rlock_owner o = O(1);

	apply(&s, 1, RLOCK_RD, 0, 99);
	ck_assert_int_eq(rlock_delta(&s, &o, RLOCK_WR, 40, 59), 2);
	apply(&s, 1, RLOCK_WR, 40, 59);
	ck_assert_uint_eq(s.n, 3);
	ck_assert_int_eq(type_at(&s, 1, 39, NULL), RLOCK_RD);
	ck_assert_int_eq(type_at(&s, 1, 40, NULL), RLOCK_WR);
	ck_assert_int_eq(type_at(&s, 1, 59, NULL), RLOCK_WR);
	ck_assert_int_eq(type_at(&s, 1, 60, NULL), RLOCK_RD);
	/* downgrade back: one read lock again */
	apply(&s, 1, RLOCK_RD, 40, 59);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_int_eq(type_at(&s, 1, 50, NULL), RLOCK_RD);
	set_free(&s);
}
END_TEST

START_TEST(test_unlock_releases_only_the_range)
{
	struct rlock_set s = { 0 };

	apply(&s, 1, RLOCK_WR, 0, RLOCK_EOF);
	apply(&s, 1, RLOCK_UN, 100, 199);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_int_eq(type_at(&s, 1, 99, NULL), RLOCK_WR);
	ck_assert_int_eq(type_at(&s, 1, 100, NULL), 0);
	ck_assert_int_eq(type_at(&s, 1, 199, NULL), 0);
	ck_assert_int_eq(type_at(&s, 1, 200, NULL), RLOCK_WR);
	ck_assert_int_eq(type_at(&s, 1, RLOCK_EOF, NULL), RLOCK_WR);
	/* unlocking what is not held changes nothing */
	apply(&s, 1, RLOCK_UN, 120, 130);
	ck_assert_uint_eq(s.n, 2);
	/* an unlock to EOF trims the second one away, the first shrinks */
	apply(&s, 1, RLOCK_UN, 50, RLOCK_EOF);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_int_eq(type_at(&s, 1, 49, NULL), RLOCK_WR);
	ck_assert_int_eq(type_at(&s, 1, 50, NULL), 0);
	apply(&s, 1, RLOCK_UN, 0, RLOCK_EOF);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_ptr_null(s.head);
}
END_TEST

START_TEST(test_top_of_the_range)
{
	struct rlock_set s = { 0 };

	/* locks that end at the last byte adjoin nothing after them */
	apply(&s, 1, RLOCK_RD, RLOCK_EOF - 9, RLOCK_EOF);
	apply(&s, 1, RLOCK_RD, 0, RLOCK_EOF - 10);
	ck_assert_uint_eq(s.n, 1);
	apply(&s, 1, RLOCK_UN, RLOCK_EOF, RLOCK_EOF);
	ck_assert_int_eq(type_at(&s, 1, RLOCK_EOF - 1, NULL), RLOCK_RD);
	ck_assert_int_eq(type_at(&s, 1, RLOCK_EOF, NULL), 0);
	apply(&s, 1, RLOCK_WR, RLOCK_EOF, RLOCK_EOF);
	ck_assert_uint_eq(s.n, 2);
	set_free(&s);
}
END_TEST

START_TEST(test_conflicts_between_owners)
{
	struct rlock_set s = { 0 };
	struct rlock_owner a = O(1), b = O(2), a2 = { .sid = 2, .id = 1, .ns = 0 }, a3 = { .sid = 1, .id = 1, .ns = 1 };
	const struct rlock *c;

	apply(&s, 1, RLOCK_RD, 0, 9);
	ck_assert_ptr_null(rlock_conflict(&s, &b, RLOCK_RD, 0, 9));
	c = rlock_conflict(&s, &b, RLOCK_WR, 9, 20);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(c->pid, 101);
	ck_assert_ptr_null(rlock_conflict(&s, &b, RLOCK_WR, 10, 20));
	ck_assert_ptr_null(rlock_conflict(&s, &a, RLOCK_WR, 0, 9));   /* its own */
	ck_assert_ptr_null(rlock_conflict(&s, &b, RLOCK_UN, 0, 9));
	/* the same id in another session, or another namespace, is another owner */
	ck_assert_ptr_nonnull(rlock_conflict(&s, &a2, RLOCK_WR, 0, 0));
	ck_assert_ptr_nonnull(rlock_conflict(&s, &a3, RLOCK_WR, 0, 0));
	apply(&s, 2, RLOCK_RD, 5, 15);
	ck_assert_ptr_nonnull(rlock_conflict(&s, &a, RLOCK_WR, 12, 12));
	/* an owner's change never touches another's locks */
	apply(&s, 1, RLOCK_UN, 0, RLOCK_EOF);
	ck_assert_int_eq(type_at(&s, 2, 5, NULL), RLOCK_RD);
	ck_assert_uint_eq(s.n, 1);
	ck_assert(rlock_owner_holds(&s, &b));
	ck_assert(!rlock_owner_holds(&s, &a));
	set_free(&s);
}
END_TEST

START_TEST(test_failed_alloc_changes_nothing)
{
	struct rlock_set s = { 0 };
	struct rlock_owner o = O(1);

	apply(&s, 1, RLOCK_RD, 0, 99);
	fail_after = 1;                     /* the new lock, not the split piece */
	ck_assert_int_eq(rlock_apply(&s, &o, 7, RLOCK_WR, 10, 20, &ops, NULL), -ENOMEM);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_int_eq(type_at(&s, 1, 15, NULL), RLOCK_RD);
	fail_after = 0;
	ck_assert_int_eq(rlock_apply(&s, &o, 7, RLOCK_UN, 10, 20, &ops, NULL), -ENOMEM);
	ck_assert_int_eq(type_at(&s, 1, 15, NULL), RLOCK_RD);
	fail_after = -1;
	set_free(&s);
	ck_assert_int_eq(allocs, frees);
}
END_TEST

START_TEST(test_flock_shape)
{
	struct rlock_set s = { 0 };

	/* flock: the whole file; converting replaces the one lock */
	apply(&s, 7, RLOCK_RD, 0, RLOCK_EOF);
	apply(&s, 7, RLOCK_WR, 0, RLOCK_EOF);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_int_eq(type_at(&s, 7, 12345, NULL), RLOCK_WR);
	apply(&s, 7, RLOCK_UN, 0, RLOCK_EOF);
	ck_assert_uint_eq(s.n, 0);
}
END_TEST

/*
 * A random walk of three owners over a 64-byte file (byte 63 stands for
 * "to EOF"), each request checked first for conflicts as the MDS does, and
 * the set compared with a byte map after every step.  Also checks the
 * invariant: an owner's locks never overlap, and two of one type never
 * adjoin.
 */
#define NB 64
START_TEST(test_random_against_a_model)
{
	struct rlock_set s = { 0 };
	int model[4][NB];                   /* owner -> byte -> type (0 none) */
	unsigned seed = 12345;
	int step, b, o;

	memset(model, 0, sizeof(model));
	for (step = 0; step < 4000; step++) {
		int id = 1 + (int)((seed = seed * 1103515245 + 12345) >> 16) % 3;
		int type = 1 + (int)((seed = seed * 1103515245 + 12345) >> 16) % 3;
		uint64_t a = ((seed = seed * 1103515245 + 12345) >> 16) % NB;
		uint64_t z = ((seed = seed * 1103515245 + 12345) >> 16) % NB;
		struct rlock_owner ow = O((uint64_t)id);
		bool conflict = false;
		const struct rlock *l, *m;

		if (z < a) {
			uint64_t t = a;
			a = z;
			z = t;
		}
		for (o = 1; o <= 3; o++)
			for (b = (int)a; b <= (int)z && o != id && type != RLOCK_UN; b++)
				if (model[o][b] && (type == RLOCK_WR || model[o][b] == RLOCK_WR))
					conflict = true;
		ck_assert_int_eq(conflict, rlock_conflict(&s, &ow, type, a, z == NB - 1 ? RLOCK_EOF : z) != NULL);
		if (conflict)
			continue;
		apply(&s, (uint64_t)id, type, a, z == NB - 1 ? RLOCK_EOF : z);
		for (b = (int)a; b <= (int)z; b++)
			model[id][b] = type == RLOCK_UN ? 0 : type;
		for (o = 1; o <= 3; o++)
			for (b = 0; b < NB; b++)
				ck_assert_int_eq(type_at(&s, (uint64_t)o, (uint64_t)b, NULL), model[o][b]);
		for (l = s.head; l; l = l->next)
			for (m = l->next; m; m = m->next) {
				if (!rlock_owner_eq(&l->owner, &m->owner))
					continue;
				ck_assert(l->end < m->start || m->end < l->start);
				if (l->type == m->type)
					ck_assert((l->end == RLOCK_EOF || l->end + 1 != m->start) &&
					  (m->end == RLOCK_EOF || m->end + 1 != l->start));
			}
	}
	set_free(&s);
	ck_assert_int_eq(allocs, frees);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rlock");
	TCase *tc = tcase_create("rlock");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, test_range);
	tcase_add_test(tc, test_merge_adjacent_and_overlapping);
	tcase_add_test(tc, test_upgrade_splits_in_three);
	tcase_add_test(tc, test_unlock_releases_only_the_range);
	tcase_add_test(tc, test_top_of_the_range);
	tcase_add_test(tc, test_conflicts_between_owners);
	tcase_add_test(tc, test_failed_alloc_changes_nothing);
	tcase_add_test(tc, test_flock_shape);
	tcase_add_test(tc, test_random_against_a_model);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
