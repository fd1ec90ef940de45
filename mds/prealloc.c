/*
 * prealloc.c - inode numbers preallocated to each session (Ceph's
 * prealloc_inos), so that a replayed create gets exactly the ino it had.
 *
 * A create answered UNSAFE may be lost in an MDS crash before its journal
 * entry is written.  Its client replays it after the restart, but by then
 * it has written data to the inode the UNSAFE reply named (data objects are
 * named after the ino), and it may have created children in it or linked it
 * elsewhere, requests that name that ino and are replayed after it.  So the
 * replay must create that very ino again, or fail loudly; a new ino would
 * leave the data and the children behind.
 *
 * Each session owns a few ranges of unused inode numbers, granted from the
 * global high-water mark (mds_grant_inos, mdcache.c) and kept in the
 * session record, which every create journals in the same entry as the
 * create itself.  Journal entries become durable in order, so after a crash
 * the session's pool is exactly what it was after its last durable create:
 * every ino taken by a create that was only UNSAFE is back in it.  A fresh
 * create takes the lowest ino of its session's pool; a replay
 * (MDSP_REQ_REPLAY with want_ino, the ino of its UNSAFE reply) takes
 * exactly that one:
 *   - it is in the session's pool: it is taken out;
 *   - it is at or above the high-water mark: the grant that gave it to the
 *     session rode in an entry that the crash lost too, and nobody has been
 *     given it since (a grant moves the mark in the same entry, with no
 *     reserve ahead); [mark, want] is granted to the session again and want
 *     taken.  Bounded: a want far above the mark is refused like the next;
 *   - otherwise it belongs to someone else or is in use: the replay fails
 *     with EEXIST and a log line saying the client's change is lost, never
 *     with another ino.
 * Restored sessions replay before any other session's new mutation runs
 * (the reconnect phase, session.c), so the second case does not race a new
 * grant; after mds_reconnect_timeout it may, and the replay then fails
 * loudly.  So does the rare replay whose lost grant lies below another
 * session's lost grant that was re-granted first (both sessions must have
 * used up half a pool in the unwritten tail of the journal for that).  A
 * want_ino on a request that is not a replay is refused (EINVAL).
 *
 * The pool gets a new grant of mds_client_prealloc_inos when it falls below
 * half of that, so the inos a create uses were usually granted many entries
 * earlier.  At most MDS_PREALLOC_RANGES ranges are kept (replays out of
 * order split ranges); beyond, the smallest is dropped (its inos are never
 * used: the high-water mark never comes back to them).
 *
 * Everything here runs under mds->lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "common/rcu.h"
#include "mds/codec.h"
#include "mds/mds.h"

/* how far above the high-water mark a replay may reach: grants lost in one crash */
#define LOST_GRANTS_MAX 64

static uint64_t chunk(void)
{
	uint64_t n = cfg_uint(CFG_mds_client_prealloc_inos);

	return n ? n : 1;
}

uint64_t prealloc_count(const struct session *s)
{
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; i < s->nprealloc; i++)
		n += s->prealloc[i].len;
	return n;
}

static void remove_at(struct session *s, uint32_t i)
{
	memmove(&s->prealloc[i], &s->prealloc[i + 1], (s->nprealloc - i - 1) * sizeof(s->prealloc[0]));
	s->nprealloc--;
}

/* Make room for one more range: drop the smallest (its inos are never used). */
static void make_room(struct session *s)
{
	uint32_t i, min = 0;

	if (s->nprealloc < MDS_PREALLOC_RANGES)
		return;
	for (i = 1; i < s->nprealloc; i++)
		if (s->prealloc[i].len < s->prealloc[min].len)
			min = i;
	dout(MDS, 5, "session %" PRIu64 ": ino pool has %u ranges: dropping [%" PRIx64 ", +%" PRIu64 ")", s->id,
	     s->nprealloc, s->prealloc[min].start, s->prealloc[min].len);
	remove_at(s, min);
}

/* A fresh grant: above everything in the pool (the mark only grows). */
static void add_grant(struct session *s, uint64_t start, uint64_t len)
{
	struct ino_range *last = s->nprealloc ? &s->prealloc[s->nprealloc - 1] : NULL;

	if (last && last->start + last->len == start) {
		last->len += len;
		return;
	}
	make_room(s);
	s->prealloc[s->nprealloc].start = start;
	s->prealloc[s->nprealloc].len = len;
	s->nprealloc++;
}

static int find(const struct session *s, uint64_t ino)
{
	uint32_t i;

	for (i = 0; i < s->nprealloc; i++)
		if (ino >= s->prealloc[i].start && ino - s->prealloc[i].start < s->prealloc[i].len)
			return (int)i;
	return -1;
}

/* Take @ino out of the pool.  Return: 0, or -ENOENT if it is not in it. */
static int take(struct session *s, uint64_t ino)
{
	struct ino_range *r;
	uint64_t end;
	int i = find(s, ino);

	if (i < 0)
		return -ENOENT;
	r = &s->prealloc[i];
	if (ino != r->start && ino != r->start + r->len - 1 && s->nprealloc == MDS_PREALLOC_RANGES) {
		make_room(s);                   /* a split needs a slot */
		i = find(s, ino);
		if (i < 0)
			return 0;               /* dropped with its range: unusable by anyone else */
		r = &s->prealloc[i];
	}
	end = r->start + r->len;
	if (ino == r->start) {
		r->start++;
		if (!--r->len)
			remove_at(s, (uint32_t)i);
	} else if (ino == end - 1) {
		r->len--;
	} else {
		/* split: [start, ino) stays, [ino + 1, end) follows it */
		r->len = ino - r->start;
		memmove(&s->prealloc[i + 2], &s->prealloc[i + 1],
			(s->nprealloc - (uint32_t)i - 1) * sizeof(s->prealloc[0]));
		s->prealloc[i + 1].start = ino + 1;
		s->prealloc[i + 1].len = end - ino - 1;
		s->nprealloc++;
	}
	return 0;
}

static bool ino_in_use(struct mds *m, uint64_t ino)
{
	bool used;

	rcu_read_lock();
	used = xa_load(&m->inodes, ino) != NULL;
	rcu_read_unlock();
	return used;
}

int prealloc_take_locked(struct mds *m, struct session *s, const struct mdsp_request *req, struct txn *t,
			 uint64_t *ino)
{
	uint64_t want = req->want_ino, n = chunk(), start;

	if (want) {
		if (!(req->flags & MDSP_REQ_REPLAY))
			return -EINVAL;
		if (ino_in_use(m, want))
			goto refuse;
		if (take(s, want) == 0)
			goto got;
		if (want >= m->next_ino && want - m->next_ino < n * LOST_GRANTS_MAX) {
			start = mds_grant_inos(m, t, 0, want + 1);
			add_grant(s, start, want + 1 - start);
			take(s, want);
			dinfo(MDS, "session %" PRIu64 " tid %" PRIu64 ": replay takes ino %" PRIx64 ", whose grant "
			      "was lost in the crash with it", s->id, req->tid, want);
			goto got;
		}
refuse:
		derr(MDS, "session %" PRIu64 " (%s) tid %" PRIu64 ": replayed %s of '%s' wants ino %" PRIx64 ", which "
		     "is not preallocated to the session (in use, or given to another): refusing it; the client's "
		     "unsafe change is lost", s->id, s->client_name ? s->client_name : "", req->tid,
		     mdsp_op_name(req->op), req->name ? req->name : "", want);
		return -EEXIST;
	}
	if (!s->nprealloc)
		prealloc_grant_locked(m, s, t);
	want = s->prealloc[0].start;
	take(s, want);
got:
	if (prealloc_count(s) < n / 2)
		prealloc_grant_locked(m, s, t);
	session_rec_edit_locked(s, t);
	*ino = want;
	return 0;
}

void prealloc_grant_locked(struct mds *m, struct session *s, struct txn *t)
{
	uint64_t n = chunk();

	add_grant(s, mds_grant_inos(m, t, n, 0), n);
}

void prealloc_encode(struct mdsp_buf *b, const struct session *s)
{
	uint32_t i;

	enc_u32(b, s->nprealloc);
	for (i = 0; i < s->nprealloc; i++) {
		enc_u64(b, s->prealloc[i].start);
		enc_u64(b, s->prealloc[i].len);
	}
}

int prealloc_decode(struct dec *d, struct session *s)
{
	uint32_t n = dec_u32(d), i;
	struct ino_range r[MDS_PREALLOC_RANGES];

	if (d->bad || n > MDS_PREALLOC_RANGES)
		return -EBADMSG;
	for (i = 0; i < n; i++) {
		r[i].start = dec_u64(d);
		r[i].len = dec_u64(d);
		if (!r[i].len || r[i].start + r[i].len < r[i].start ||
		    (i && r[i].start < r[i - 1].start + r[i - 1].len))
			return -EBADMSG;
	}
	if (d->bad)
		return -EBADMSG;
	memcpy(s->prealloc, r, n * sizeof(r[0]));
	s->nprealloc = n;
	return 0;
}
