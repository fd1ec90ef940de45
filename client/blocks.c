/*
 * blocks.c - what a file's data objects hold, as this client changed it:
 * the client's half of st_blocks (issue 25.12; the MDS's half is
 * minode.ext, mds/locker.c apply_extents).
 *
 * The MDS keeps, per regular file, the extents its objects hold (an extent
 * set, mds_proto/extents.c) and serves st_blocks from it (mdsp_inode
 * .blocks), so du, cp --sparse and tar -S see what is stored: a 50 KiB write
 * at 1.6 MiB is 52 KiB, not the 1.65 MiB of the object from its start.  Only
 * the client knows what it stored, and exactly: every writeback and write
 * through says which byte ranges reached which object, every fallocate and
 * punch which ones it allocated and freed.  So each inode keeps what this
 * client added and took away since its last flush, and the cap flush that
 * reports size and mtime carries it (CAPS v3, ext_add/ext_rm): removals
 * first, then additions.  Deltas, not totals: two clients writing one
 * file, or one rewriting what is stored, add a range twice and it counts
 * once; a truncate is the MDS's own (op_setattr cuts the set).
 *
 * Like flushing_meta and dirty_meta, two generations: ext_* went out with
 * the flush in flight (flush_tid), dext_* came since.  A new flush sends
 * both composed (ext then dext), and they become the flush in flight; its
 * ack empties it (mi.blocks, in the ack's inode, has it); a lost session
 * puts it back in front of dext.  The composition keeps additions and
 * removals disjoint, so applying a flush twice (one sent again after a
 * reconnect) changes nothing the second time.
 *
 * Bounds: MDSP_FLUSH_EXT_MAX additions per flush (past it the nearest
 * merge: an upper bound of what a scattered writer stored), removals are
 * never merged (that would take away stored ranges) and go out
 * MDSP_FLUSH_EXT_MAX at a time; punches flush at once, so there are few.
 *
 * Everything runs under in->lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client/cache_int.h"
#include "common/lockdep.h"
#include "common/log.h"

#define ALIGN MDSP_EXT_ALIGN

static const struct lc_blocks no_blocks;

/* in->lock held: what @in's objects hold as far as known (never NULL, read-only) */
static const struct lc_blocks *B(const struct lc_inode *in)
{
	return in->blk ? in->blk : &no_blocks;
}

struct lc_blocks *lc_blocks_get_locked(struct lc_inode *in)
{
	lockdep_assert_held(&in->lock);
	if (!in->blk) {
		in->blk = calloc(1, sizeof(*in->blk));
		if (!in->blk)
			derr(CLIENT, "inode %" PRIx64 ": out of memory recording stored extents: st_blocks may be off",
			     in->ino);
	}
	return in->blk;
}
#define RM_MAX UINT32_MAX   /* removals are never merged */

static uint64_t down(uint64_t x)
{
	return x / ALIGN * ALIGN;
}

static uint64_t up(uint64_t x)
{
	return x > UINT64_MAX - ALIGN ? down(UINT64_MAX) : (x + ALIGN - 1) / ALIGN * ALIGN;
}

/*
 * Apply "add [lo, hi)" or "remove [lo, hi)" (aligned) to a delta: the two
 * sets stay disjoint.  An -ENOMEM leaves the delta claiming less than was
 * done: st_blocks is then off until the file is truncated to 0 (logged).
 */
static void delta_apply(struct lc_inode *in, struct mdsp_extset *add, struct mdsp_extset *rm, bool adding,
			uint64_t lo, uint64_t hi)
{
	int r;

	if (lo >= hi)
		return;
	if (adding) {
		r = mdsp_extset_remove_exact(rm, lo, hi - lo, RM_MAX);
		if (!r)
			r = mdsp_extset_add(add, lo, hi - lo, MDSP_FLUSH_EXT_MAX);
	} else {
		r = mdsp_extset_remove_exact(add, lo, hi - lo, MDSP_FLUSH_EXT_MAX);
		if (!r)
			r = mdsp_extset_add(rm, lo, hi - lo, RM_MAX);
	}
	if (r)
		derr(CLIENT, "inode %" PRIx64 ": out of memory recording stored extents: st_blocks may be off", in->ino);
}

void lc_blocks_added_locked(struct lclient *c, struct lc_inode *in, uint64_t off, uint64_t len)
{
	struct lc_blocks *b;

	if (!len || !S_ISREG(in->mi.mode) || !(b = lc_blocks_get_locked(in)))
		return;
	delta_apply(in, &b->dext_add, &b->dext_rm, true, down(off), up(off + len));
	in->dirty_meta |= MDSP_DIRTY_BLOCKS;
	lc_mark_dirty_locked(c, in);
}

void lc_blocks_removed_locked(struct lclient *c, struct lc_inode *in, uint64_t off, uint64_t len)
{
	struct lc_blocks *b;

	if (!len || !S_ISREG(in->mi.mode) || !(b = lc_blocks_get_locked(in)))
		return;
	/* a punch frees only the whole blocks inside it */
	delta_apply(in, &b->dext_add, &b->dext_rm, false, up(off), down(off + len));
	in->dirty_meta |= MDSP_DIRTY_BLOCKS;
	lc_mark_dirty_locked(c, in);
}

void lc_blocks_truncated_locked(struct lc_inode *in, uint64_t size)
{
	/* what we would add past the size is gone with it (a flush that
	 * arrived after the MDS's truncate would bring it back) */
	if (!in->blk)
		return;
	mdsp_extset_truncate(&in->blk->ext_add, size);
	mdsp_extset_truncate(&in->blk->dext_add, size);
}

bool lc_blocks_in_flight_locked(const struct lc_inode *in)
{
	return B(in)->ext_add.n || B(in)->ext_rm.n;
}

/* in->lock held: changes not acked by the MDS yet */
static bool pending_locked(const struct lc_inode *in)
{
	const struct lc_blocks *b = B(in);

	lockdep_assert_held(&in->lock);
	return b->ext_add.n || b->ext_rm.n || b->dext_add.n || b->dext_rm.n;
}

void lc_blocks_send_free(struct mdsp_extset send[2])
{
	mdsp_extset_free(&send[0]);
	mdsp_extset_free(&send[1]);
}

void lc_blocks_fill_locked(struct lc_inode *in, struct mdsp_caps *m, struct mdsp_extset send[2])
{
	struct mdsp_extset *add = &send[0], *rm = &send[1];
	const struct lc_blocks *b = B(in);

	m->has_ext = true;
	memset(send, 0, 2 * sizeof(*send));
	if (!pending_locked(in))
		return;
	/* what is in flight, then what came since */
	if (mdsp_extset_set(add, b->ext_add.v, b->ext_add.n) || mdsp_extset_set(rm, b->ext_rm.v, b->ext_rm.n)) {
		derr(CLIENT, "inode %" PRIx64 ": out of memory sending stored extents", in->ino);
		lc_blocks_send_free(send);
		return;
	}
	for (uint32_t i = 0; i < b->dext_rm.n; i++)
		delta_apply(in, add, rm, false, b->dext_rm.v[i].off, b->dext_rm.v[i].off + b->dext_rm.v[i].len);
	for (uint32_t i = 0; i < b->dext_add.n; i++)
		delta_apply(in, add, rm, true, b->dext_add.v[i].off, b->dext_add.v[i].off + b->dext_add.v[i].len);
	m->dirty |= MDSP_DIRTY_BLOCKS;
	m->ext_add = add->v;
	m->n_ext_add = add->n;
	m->ext_rm = rm->v;
	m->n_ext_rm = rm->n < MDSP_FLUSH_EXT_MAX ? rm->n : MDSP_FLUSH_EXT_MAX;
}

void lc_blocks_sent_locked(struct lc_inode *in, struct mdsp_extset send[2])
{
	struct mdsp_extset *add = &send[0], *rm = &send[1];
	uint32_t keep = rm->n < MDSP_FLUSH_EXT_MAX ? rm->n : MDSP_FLUSH_EXT_MAX;
	struct lc_blocks *b = in->blk;

	if ((!add->v && !rm->v) || !b)
		return;   /* nothing was built (nothing pending, or no memory): it all stays */
	/* removals past what one flush carries stay for the next one (disjoint
	 * from everything sent, so their order after it does not matter) */
	mdsp_extset_clear(&b->dext_add);
	mdsp_extset_clear(&b->dext_rm);
	if (rm->n > keep) {
		mdsp_extset_set(&b->dext_rm, rm->v + keep, rm->n - keep);
		rm->n = keep;
		in->dirty_meta |= MDSP_DIRTY_BLOCKS;
	}
	mdsp_extset_free(&b->ext_add);
	mdsp_extset_free(&b->ext_rm);
	b->ext_add = *add;
	b->ext_rm = *rm;
	b->ext_base = in->mi.blocks;
	memset(send, 0, 2 * sizeof(*send));
}

void lc_blocks_resend_locked(const struct lc_inode *in, struct mdsp_caps *m)
{
	const struct lc_blocks *b = B(in);

	m->has_ext = true;
	m->ext_add = b->ext_add.v;
	m->n_ext_add = b->ext_add.n;
	m->ext_rm = b->ext_rm.v;
	m->n_ext_rm = b->ext_rm.n;
	if (b->ext_add.n || b->ext_rm.n)
		m->dirty |= MDSP_DIRTY_BLOCKS;
}

void lc_blocks_acked_locked(struct lc_inode *in)
{
	if (!in->blk)
		return;
	mdsp_extset_clear(&in->blk->ext_add);
	mdsp_extset_clear(&in->blk->ext_rm);
}

void lc_blocks_lost_locked(struct lc_inode *in)
{
	struct lc_blocks *b = in->blk;

	if (!b || (!b->ext_add.n && !b->ext_rm.n))
		return;
	struct mdsp_extset d[2] = { b->dext_add, b->dext_rm };

	/* in flight first, then what came since: dext becomes their composition */
	b->dext_add = b->ext_add;
	b->dext_rm = b->ext_rm;
	memset(&b->ext_add, 0, sizeof(b->ext_add));
	memset(&b->ext_rm, 0, sizeof(b->ext_rm));
	for (uint32_t i = 0; i < d[1].n; i++)
		delta_apply(in, &b->dext_add, &b->dext_rm, false, d[1].v[i].off, d[1].v[i].off + d[1].v[i].len);
	for (uint32_t i = 0; i < d[0].n; i++)
		delta_apply(in, &b->dext_add, &b->dext_rm, true, d[0].v[i].off, d[0].v[i].off + d[0].v[i].len);
	mdsp_extset_free(&d[0]);
	mdsp_extset_free(&d[1]);
	in->dirty_meta |= MDSP_DIRTY_BLOCKS;
}

/* in->lock held: bytes of buffered data not written back yet, in whole blocks */
static uint64_t buffered_locked(const struct lc_inode *in)
{
	const struct lc_extent *lists[2] = { in->dirty, in->flushing };
	uint64_t t = 0;

	lockdep_assert_held(&in->lock);
	for (int i = 0; i < 2; i++)
		for (const struct lc_extent *e = lists[i]; e; e = e->next)
			t += up(e->off + e->len) - down(e->off);
	return t;
}

uint64_t lc_blocks_estimate_locked(const struct lc_inode *in, uint64_t size)
{
	uint64_t base = in->mi.blocks, add, rm, est;
	const struct lc_blocks *b = B(in);

	if (base == MDSP_BLOCKS_UNKNOWN)
		return MDSP_BLOCKS_UNKNOWN;
	add = mdsp_extset_bytes(&b->dext_add) + buffered_locked(in);
	rm = mdsp_extset_bytes(&b->dext_rm);
	/* the flush in flight, unless the MDS's count moved since it went out:
	 * then it has most likely been applied (a reply to a later request
	 * came first), and counting it again showed a write twice until the
	 * ack; a move by another client's flush makes this an underestimate
	 * until the ack instead, which the kernel is not given to cache */
	if (in->mi.blocks == b->ext_base) {
		add += mdsp_extset_bytes(&b->ext_add);
		rm += mdsp_extset_bytes(&b->ext_rm);
	}
	est = base + add;
	if (add) {
		/* what we add may be stored already (a rewrite): never more than
		 * the file's size holds, or than the MDS counted */
		uint64_t cap = up(size) > base ? up(size) : base;

		if (est > cap)
			est = cap;
	}
	return est > rm ? est - rm : 0;
}

void lc_blocks_free(struct lc_inode *in)
{
	if (!in->blk)
		return;
	mdsp_extset_free(&in->blk->ext_add);
	mdsp_extset_free(&in->blk->ext_rm);
	mdsp_extset_free(&in->blk->dext_add);
	mdsp_extset_free(&in->blk->dext_rm);
	free(in->blk);
	in->blk = NULL;
}
