/*
 * rlock.h - sets of byte-range locks with POSIX semantics.
 *
 * One struct rlock_set is the locks of one kind (fcntl or flock) on one
 * file.  Each lock belongs to an owner (struct rlock_owner) and covers the
 * inclusive range [start, end] (end RLOCK_EOF: "to the end of the file,
 * however far it grows").  rlock_apply() sets or removes a range for an
 * owner the way fcntl(F_SETLK) does on Linux (fs/locks.c
 * posix_lock_inode()): the owner's locks of the same type that overlap or
 * adjoin the range merge with it into one, those of the other type lose the
 * part the range covers (a lock that contains it strictly splits in two),
 * and an unlock removes exactly the range.  Other owners' locks are never
 * touched; whether the request conflicts with them is the caller's question
 * (rlock_conflict()), asked first.  flock(2) locks are the same with the
 * whole file as the range: an owner then holds at most one lock.
 *
 * The MDS keeps one set per file and kind for every client (mds/flock.c);
 * the client keeps the same sets for the locks it holds itself, applying
 * every change the MDS granted, so that it can re-assert exactly them after
 * an MDS restart (client/flock.c).
 *
 * Cost: every call walks the set once, so it costs what exists (the locks
 * on that file), never anything proportional to the length of a range; an
 * apply changes at most two records besides the ones it removes.  The set
 * does not allocate: records come from the caller's ops (so the MDS can
 * account them to a session and bound them), and rlock_apply() asks for
 * what it needs before it changes anything, so a failed allocation leaves
 * the set as it was.
 *
 * Locking: none; the caller serialises access to a set.
 */
#ifndef LOLIGO_COMMON_RLOCK_H
#define LOLIGO_COMMON_RLOCK_H

#include <stdbool.h>
#include <stdint.h>

#define RLOCK_EOF UINT64_MAX

enum rlock_type { RLOCK_RD = 1, RLOCK_WR = 2, RLOCK_UN = 3 };

/* Who holds a lock: equal owners never conflict with each other. */
struct rlock_owner {
	uint64_t sid;      /* the MDS session (0 in a client's own sets) */
	uint64_t id;       /* FUSE lock_owner, an NFS lock-owner's id */
	uint32_t ns;       /* which frontend's id space @id is from (MDSP_LOCK_NS_*) */
};

struct rlock {
	struct rlock *prev, *next;   /* in the set, in no particular order */
	uint64_t start, end;         /* inclusive */
	struct rlock_owner owner;
	uint32_t pid;                /* of the process that took it (F_GETLK's l_pid) */
	uint8_t type;                /* RLOCK_RD or RLOCK_WR */
};

struct rlock_set {
	struct rlock *head;
	uint64_t n;
};

/* Where the records of a set come from and go to. */
struct rlock_ops {
	/* a new record (its fields are filled by the caller of alloc), or NULL */
	struct rlock *(*alloc)(void *arg);
	/* @l left the set (or was allocated and never used): free it */
	void (*release)(struct rlock *l, void *arg);
};

static inline bool rlock_owner_eq(const struct rlock_owner *a, const struct rlock_owner *b)
{
	return a->sid == b->sid && a->id == b->id && a->ns == b->ns;
}

/**
 * rlock_range - the inclusive end of the range of @len bytes at @start
 * (@len 0: to the end of the file, RLOCK_EOF).
 * Return: false when the range does not fit in 64 bits (EINVAL to the caller).
 */
bool rlock_range(uint64_t start, uint64_t len, uint64_t *end);

/**
 * rlock_len - the inverse of rlock_range(): 0 for a lock to RLOCK_EOF.
 */
uint64_t rlock_len(uint64_t start, uint64_t end);

/**
 * rlock_conflict - the first lock of @set held by another owner than @o
 * that overlaps [@start, @end] and is incompatible with @type (a write lock
 * conflicts with every lock, a read lock with write locks), or NULL.
 * RLOCK_UN conflicts with nothing.
 */
const struct rlock *rlock_conflict(const struct rlock_set *set, const struct rlock_owner *o, int type,
				   uint64_t start, uint64_t end);

/**
 * rlock_delta - how many records rlock_apply() with these arguments would
 * add to @set, net (negative: it frees some).  For limits, before applying.
 */
int rlock_delta(const struct rlock_set *set, const struct rlock_owner *o, int type, uint64_t start,
		uint64_t end);

/**
 * rlock_apply - give @o the lock @type (RLOCK_UN: none) on [@start, @end]
 * in @set, with the merge/split rules above; a record that changes or
 * comes in gets @pid.  Records come from and go back to @ops (at most two
 * are allocated, all before anything changes).
 * Return: 0, or -ENOMEM (the set is unchanged).
 */
int rlock_apply(struct rlock_set *set, const struct rlock_owner *o, uint32_t pid, int type, uint64_t start,
		uint64_t end, const struct rlock_ops *ops, void *arg);

/** rlock_remove - take @l out of @set and hand it to @ops->release. */
void rlock_remove(struct rlock_set *set, struct rlock *l, const struct rlock_ops *ops, void *arg);

/** rlock_owner_holds - @o has at least one lock in @set. */
bool rlock_owner_holds(const struct rlock_set *set, const struct rlock_owner *o);

/** rlock_type_name - "read", "write", "unlock". */
const char *rlock_type_name(int type);

#endif
