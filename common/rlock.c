/*
 * rlock.c - byte-range lock sets with POSIX semantics (see rlock.h).
 *
 * The invariant every apply keeps: the locks of one owner in a set never
 * overlap, and two of them of the same type never adjoin (they would have
 * been merged).  So a request touches only the owner's locks that overlap
 * or adjoin its range, and at most one of them can contain the range
 * strictly (the one that splits).
 */
#include <errno.h>
#include <stddef.h>

#include "common/rlock.h"

bool rlock_range(uint64_t start, uint64_t len, uint64_t *end)
{
	if (!len) {
		*end = RLOCK_EOF;
		return true;
	}
	if (len - 1 > RLOCK_EOF - start)
		return false;
	*end = start + (len - 1);
	return true;
}

uint64_t rlock_len(uint64_t start, uint64_t end)
{
	if (end == RLOCK_EOF)
		return 0;
	return end - start + 1;
}

static bool overlaps(const struct rlock *l, uint64_t start, uint64_t end)
{
	return l->start <= end && start <= l->end;
}

/* @l ends right before @start or starts right after @end */
static bool adjoins(const struct rlock *l, uint64_t start, uint64_t end)
{
	return (l->end != RLOCK_EOF && l->end + 1 == start) || (end != RLOCK_EOF && end + 1 == l->start);
}

static bool incompatible(int a, int b)
{
	return a == RLOCK_WR || b == RLOCK_WR;
}

const struct rlock *rlock_conflict(const struct rlock_set *set, const struct rlock_owner *o, int type,
				   uint64_t start, uint64_t end)
{
	const struct rlock *l;

	if (type != RLOCK_RD && type != RLOCK_WR)
		return NULL;
	for (l = set->head; l; l = l->next)
		if (!rlock_owner_eq(&l->owner, o) && overlaps(l, start, end) && incompatible(type, l->type))
			return l;
	return NULL;
}

/* What an apply does to @l (one of the owner's locks). */
enum fate { KEEP, MERGE, DROP, SHRINK, SPLIT };

static enum fate fate_of(const struct rlock *l, int type, uint64_t start, uint64_t end)
{
	bool ov = overlaps(l, start, end);

	if (type != RLOCK_UN && l->type == type && (ov || adjoins(l, start, end)))
		return MERGE;
	if (!ov)
		return KEEP;
	if (l->start < start && l->end > end)
		return SPLIT;
	if (l->start >= start && l->end <= end)
		return DROP;
	return SHRINK;
}

int rlock_delta(const struct rlock_set *set, const struct rlock_owner *o, int type, uint64_t start,
		uint64_t end)
{
	const struct rlock *l;
	int d = type != RLOCK_UN;

	for (l = set->head; l; l = l->next) {
		if (!rlock_owner_eq(&l->owner, o))
			continue;
		switch (fate_of(l, type, start, end)) {
		case MERGE:
		case DROP:
			d--;
			break;
		case SPLIT:
			d++;
			break;
		default:
			break;
		}
	}
	return d;
}

static void unlink_lock(struct rlock_set *set, struct rlock *l)
{
	if (l->prev)
		l->prev->next = l->next;
	else
		set->head = l->next;
	if (l->next)
		l->next->prev = l->prev;
	l->prev = l->next = NULL;
	set->n--;
}

static void link_lock(struct rlock_set *set, struct rlock *l)
{
	l->prev = NULL;
	l->next = set->head;
	if (set->head)
		set->head->prev = l;
	set->head = l;
	set->n++;
}

void rlock_remove(struct rlock_set *set, struct rlock *l, const struct rlock_ops *ops, void *arg)
{
	unlink_lock(set, l);
	ops->release(l, arg);
}

int rlock_apply(struct rlock_set *set, const struct rlock_owner *o, uint32_t pid, int type, uint64_t start,
		uint64_t end, const struct rlock_ops *ops, void *arg)
{
	struct rlock *nl = NULL, *piece = NULL, *l, *next;
	bool split = false;

	/* what it needs, before anything changes */
	for (l = set->head; l; l = l->next)
		if (rlock_owner_eq(&l->owner, o) && fate_of(l, type, start, end) == SPLIT)
			split = true;
	if (type != RLOCK_UN && !(nl = ops->alloc(arg)))
		return -ENOMEM;
	if (split && !(piece = ops->alloc(arg))) {
		if (nl)
			ops->release(nl, arg);
		return -ENOMEM;
	}

	for (l = set->head; l; l = next) {
		next = l->next;
		if (!rlock_owner_eq(&l->owner, o))
			continue;
		switch (fate_of(l, type, start, end)) {
		case KEEP:
			break;
		case MERGE:
			if (l->start < start)
				start = l->start;
			if (l->end > end)
				end = l->end;
			rlock_remove(set, l, ops, arg);
			break;
		case DROP:
			rlock_remove(set, l, ops, arg);
			break;
		case SHRINK:
			if (l->start < start)
				l->end = start - 1;
			else
				l->start = end + 1;
			break;
		case SPLIT:
			/* @l keeps the left part, @piece takes the right one */
			*piece = *l;
			piece->start = end + 1;
			l->end = start - 1;
			link_lock(set, piece);
			piece = NULL;
			break;
		}
	}
	if (nl) {
		nl->start = start;
		nl->end = end;
		nl->owner = *o;
		nl->pid = pid;
		nl->type = (uint8_t)type;
		link_lock(set, nl);
	}
	return 0;
}

bool rlock_owner_holds(const struct rlock_set *set, const struct rlock_owner *o)
{
	const struct rlock *l;

	for (l = set->head; l; l = l->next)
		if (rlock_owner_eq(&l->owner, o))
			return true;
	return false;
}

const char *rlock_type_name(int type)
{
	switch (type) {
	case RLOCK_RD:
		return "read";
	case RLOCK_WR:
		return "write";
	case RLOCK_UN:
		return "unlock";
	}
	return "?";
}
