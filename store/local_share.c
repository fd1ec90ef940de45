/*
 * local_share.c - several processes on one local store.
 *
 * Any number of processes may have one store directory open at once (an
 * MDS, several loligo-fuse mounts, a gateway, a benchmark).  LMDB is
 * multi-process by itself: its writer mutex (in lock.mdb) serialises the
 * write transactions of all of them and readers never block.  What LMDB
 * does not know about is the object files, whose bytes land after the
 * transaction that logged them committed (local.c's redo "intents").  Three
 * things must hold across processes, and this file is how:
 *
 *   1. File effects land in commit order.  Two processes writing the same
 *      object must leave the bytes of the later commit, and a reader must
 *      see every byte of every commit its snapshot shows.  Whoever applies
 *      file effects or reads object files holds the effects lock, an
 *      exclusive open-file-description lock on byte LOCK_EFFECTS of
 *      store.lock, from before its LMDB transaction begins until every
 *      file effect and read it issued has completed.  So while one process
 *      holds it nobody else commits an intent or touches a file, and when
 *      it lets go all it committed is in the files (in the page cache).
 *      A process holds it while it has work in flight and lets go when it
 *      is idle, or, when another process waits, once it has held it for a
 *      slice (EFFECTS_SLICE_NS, 4 ms: so a stream of batches keeps its
 *      pipeline) and its own work has drained: waiters announce themselves
 *      with a shared lock on LOCK_WAITING, which the holder checks after
 *      every batch, and a process that let go for a waiter gives the
 *      waiters a few milliseconds to take it before it asks again (no
 *      barging; only a few, so that a stopped waiter, which never takes
 *      it, cannot stall the others).  A stopped *holder* does stall them,
 *      until it runs again.  Batches that touch no object
 *      file (omap, stat, object listing) need no effects lock at all: LMDB
 *      snapshots are enough for them.  The lock is taken before any LMDB
 *      write transaction and never while one is open, so it cannot
 *      deadlock with LMDB's writer mutex.
 *
 *   2. Intents are deleted only once synced, as a global prefix.  Every
 *      process has an owner id (a counter in LMDB) and holds an exclusive
 *      lock on byte LOCK_LIVE_BASE + id for its lifetime; the kernel drops
 *      it when the process dies, however it dies.  Intents carry their
 *      owner.  The owners table holds, per owner that has intents its own
 *      checkpoint has not yet synced, the lowest such sequence number,
 *      written in the same transaction as the intents.  An intent below
 *      the minimum over all owners is durable (its file was fdatasynced
 *      after it landed, by its owner) and any write transaction deletes
 *      it; nothing at or above the minimum is ever deleted, so what is
 *      left is always a suffix of the history and redoing it in sequence
 *      order gives the right bytes (every effect is absolute and fids are
 *      never reused).
 *
 *   3. A dead owner's pending effects are redone before anyone goes on.
 *      Whoever takes the effects lock first checks the owners table for
 *      owners whose liveness lock is free.  For such owners the process
 *      redoes every intent at or above the lowest of their records, in
 *      sequence order and of every owner, fdatasyncs what it touched, and
 *      deletes their records.  Redoing the live owners' intents in that
 *      suffix is harmless: they are all landed (no live owner has work in
 *      flight while another holds the effects lock), and redoing landed
 *      effects in order gives the same bytes.  It covers every case: a
 *      process killed with committed effects not yet applied (they are in
 *      its last stretch of holding the lock, above its record), a process
 *      that died with applied but unsynced effects (its record still
 *      stands), a store whose checkpoint fsync failed (the record was never
 *      advanced, so the bytes are rewritten rather than trusted to a sync
 *      that lied), and a crash of the whole machine (every owner is dead
 *      then, and the suffix above the lowest record is exactly what may be
 *      missing).  Redo runs only with the effects lock held, so never
 *      concurrently with a live owner's effects.
 *
 * A process keeps its open file descriptions across fork(): a child that
 * does not exec would keep the parent's locks alive.  Processes that open
 * a store do not fork without exec after opening it (loligo-fuse
 * daemonizes before).  Inside one process a store may be open once (LMDB
 * forbids opening one environment twice in a process): a second open gets
 * -EBUSY.  store.lock is also flock()ed shared, so a build that opens the
 * store alone (it takes the flock exclusively) and this one exclude each
 * other.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/io.h"
#include "common/log.h"
#include "common/time.h"
#include "store/local_int.h"

/* ---- open-file-description locks on single bytes of store.lock ------ */

#define YIELD_WAIT_NS (5ull * 1000 * 1000)   /* after letting go for waiters: how long we let them take it */

static int ofd(int fd, int cmd, short type, off_t start)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = 1 };

	while (fcntl(fd, cmd, &fl) < 0)
		if (errno != EINTR)
			return -errno;
	return cmd == F_OFD_GETLK ? fl.l_type != F_UNLCK : 0;
}

static int ofd_try(int fd, short type, off_t start)
{
	int r = ofd(fd, F_OFD_SETLK, type, start);
	return r == -EACCES ? -EAGAIN : r;
}

static int ofd_wait(int fd, short type, off_t start)
{
	return ofd(fd, F_OFD_SETLKW, type, start);
}

static void ofd_unlock(int fd, off_t start)
{
	ofd(fd, F_OFD_SETLK, F_UNLCK, start);
}

/* 1: another process holds a lock on @start that conflicts with @type; 0: not; -errno */
static int ofd_taken(int fd, short type, off_t start)
{
	return ofd(fd, F_OFD_GETLK, type, start);
}

static int owner_alive(struct local_store *ls, uint64_t id)
{
	return ofd_taken(ls->lockfd, F_WRLCK, LOCK_LIVE_BASE + (off_t)id);
}

/* ---- one open per process ------------------------------------------- */

struct open_store {
	struct open_store *next;
	dev_t dev;
	ino_t ino;
	pid_t pid;   /* a forked child may open what its parent had open */
};

static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct open_store *open_list;   /* protected by open_lock */

static int register_open(struct local_store *ls)
{
	struct open_store *o;
	pid_t pid = getpid();
	int r = 0;

	pthread_mutex_lock(&open_lock);
	for (o = open_list; o; o = o->next)
		if (o->dev == ls->dev && o->ino == ls->ino && o->pid == pid)
			break;
	if (o) {
		r = -EBUSY;
	} else if (!(o = calloc(1, sizeof(*o)))) {
		r = -ENOMEM;
	} else {
		o->dev = ls->dev;
		o->ino = ls->ino;
		o->pid = pid;
		o->next = open_list;
		open_list = o;
	}
	pthread_mutex_unlock(&open_lock);
	return r;
}

static void unregister_open(struct local_store *ls)
{
	struct open_store **pp, *o;
	pid_t pid = getpid();

	pthread_mutex_lock(&open_lock);
	for (pp = &open_list; (o = *pp); pp = &o->next)
		if (o->dev == ls->dev && o->ino == ls->ino && o->pid == pid) {
			*pp = o->next;
			free(o);
			break;
		}
	pthread_mutex_unlock(&open_lock);
}

/* ---- open and close ------------------------------------------------- */

int local_share_open(struct local_store *ls)
{
	struct stat sb;
	int r;

	if (fstat(ls->dirfd, &sb) < 0)
		return -errno;
	ls->dev = sb.st_dev;
	ls->ino = sb.st_ino;
	ls->lockfd = openat(ls->dirfd, "store.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (ls->lockfd < 0) {
		r = -errno;
		derr(STORE, "local store: %s/store.lock: %s", ls->path, strerror(errno));
		return r;
	}
	if (flock(ls->lockfd, LOCK_SH | LOCK_NB) < 0) {
		r = errno == EWOULDBLOCK ? -EBUSY : -errno;
		store_open_refuse("local store: %s is in use by a process that opens it alone (an older loligo build); "
		     "stop it first", ls->path);
		close(ls->lockfd);
		ls->lockfd = -1;
		return r;
	}
	r = register_open(ls);
	if (r == -EBUSY)
		store_open_refuse("local store: %s is already open in this process (share the handle)", ls->path);
	if (r) {
		close(ls->lockfd);
		ls->lockfd = -1;
		return r;
	}
	return 0;
}

int local_share_owner(struct local_store *ls)
{
	MDB_val k = { 10, "next_owner" }, v;
	unsigned char b[8];
	uint64_t id = 1;
	MDB_txn *txn;
	int r;

	r = mdb_err(mdb_txn_begin(ls->env, NULL, 0, &txn));
	if (r)
		return r;
	if (mdb_get(txn, ls->db_meta, &k, &v) == 0 && v.mv_size == 8)
		id = get_le64(v.mv_data);
	if (id == 0 || id >= (1ull << 62)) {
		mdb_txn_abort(txn);
		derr(STORE, "local store %s: owner counter %" PRIu64 " is out of range (damaged store?)", ls->path, id);
		return -EUCLEAN;
	}
	put_le64(b, id + 1);
	v.mv_size = 8;
	v.mv_data = b;
	r = mdb_err(mdb_put(txn, ls->db_meta, &k, &v, 0));
	if (r == 0)
		r = mdb_err(mdb_txn_commit(txn));
	else
		mdb_txn_abort(txn);
	if (r)
		return r;
	r = ofd_try(ls->lockfd, F_WRLCK, LOCK_LIVE_BASE + (off_t)id);
	if (r) {
		derr(STORE, "local store %s: cannot take the liveness lock of owner %" PRIu64 ": %s", ls->path, id,
		     strerror(-r));
		return r == -EAGAIN ? -EIO : r;
	}
	ls->owner = id;
	ls->my_lowest = ls->my_lowest_db = UINT64_MAX;
	dout(STORE, 5, "local store %s: owner %" PRIu64 " (pid %d)", ls->path, id, (int)getpid());
	return 0;
}

void local_share_close(struct local_store *ls)
{
	if (ls->dev || ls->ino)
		unregister_open(ls);
	if (ls->lockfd >= 0)
		close(ls->lockfd);   /* drops every lock of ours: flock, effects, liveness */
	ls->lockfd = -1;
}

/* ---- redo ----------------------------------------------------------- */

struct rfile {
	uint64_t fid;
	int fd;
};

struct rset {
	struct rfile *v;
	size_t n, cap;
};

static struct rfile *rset_get(struct rset *s, uint64_t fid, bool add)
{
	for (size_t j = 0; j < s->n; j++)
		if (s->v[j].fid == fid)
			return &s->v[j];
	if (!add)
		return NULL;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct rfile *nv = realloc(s->v, cap * sizeof(*nv));
		if (!nv)
			return NULL;
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->n] = (struct rfile){ fid, -1 };
	return &s->v[s->n++];
}

/* Apply one record synchronously. */
static int redo_rec(struct local_store *ls, struct rset *files, const struct irec *rec)
{
	struct rfile *f = rset_get(files, rec->fid, true);
	char name[17];

	if (!f)
		return -ENOMEM;
	local_fid_name(rec->fid, name);
	if (rec->kind == FW_UNLINK) {
		if (f->fd >= 0) {
			close(f->fd);
			f->fd = -1;
		}
		if (unlinkat(ls->objfd, name, 0) < 0 && errno != ENOENT)
			return -errno;
		return 0;
	}
	if (f->fd < 0 && (f->fd = openat(ls->objfd, name, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0)
		return -errno;
	switch (rec->kind) {
	case FW_WRITE:
		return io_pwrite_all(f->fd, rec->data, rec->b, rec->a);
	case FW_ZERO:
		return local_zero_range_sync(f->fd, rec->a, rec->b);
	case FW_TRUNC:
		return ftruncate(f->fd, (off_t)rec->a) < 0 ? -errno : 0;
	default:
		return -EIO;
	}
}

static int rfile_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct rfile *)a)->fid, y = ((const struct rfile *)b)->fid;
	return x < y ? -1 : x > y;
}

/* Files the suffix from @from unlinks: nothing else of theirs needs redoing (fids are never reused). */
static int collect_unlinked(MDB_cursor *cur, uint64_t from, struct rset *gone)
{
	unsigned char kb[8];
	MDB_val k = { 8, kb }, v;
	int rc, r = 0;

	put_be64(kb, from);
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0 && r == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		uint64_t owner;
		uint32_t n;
		size_t pos;

		if (local_intent_header(&v, &owner, &n, &pos))
			continue;   /* the redo pass reports it */
		for (uint32_t i = 0; i < n; i++) {
			struct irec rec;
			if (local_intent_next(&v, &pos, &rec))
				break;
			if (rec.kind != FW_UNLINK)
				continue;
			if (gone->n == gone->cap) {
				size_t cap = gone->cap ? gone->cap * 2 : 16;
				struct rfile *nv = realloc(gone->v, cap * sizeof(*nv));
				if (!nv) {
					r = -ENOMEM;
					break;
				}
				gone->v = nv;
				gone->cap = cap;
			}
			gone->v[gone->n++] = (struct rfile){ rec.fid, -1 };
		}
	}
	if (r == 0 && gone->n)
		qsort(gone->v, gone->n, sizeof(*gone->v), rfile_cmp);
	return r ? r : rc && rc != MDB_NOTFOUND ? mdb_err(rc) : 0;
}

static bool is_gone(const struct rset *gone, uint64_t fid)
{
	struct rfile key = { fid, -1 };
	return gone->n && bsearch(&key, gone->v, gone->n, sizeof(*gone->v), rfile_cmp);
}

/*
 * Redo every intent with seq >= @from in sequence order, whoever owns it,
 * then fdatasync every file touched and the objects directory.  Effects on
 * files the same suffix unlinks are skipped: they would be written only to
 * be thrown away (and on a full disk need space nobody has).  *@count gets
 * the number of intents redone.  Needs LOCK_EFFECTS (or a store nobody else
 * has open).
 */
static int redo_from(struct local_store *ls, uint64_t from, size_t *count)
{
	struct rset files = { 0 }, gone = { 0 };
	unsigned char kb[8];
	MDB_val k = { 8, kb }, v;
	MDB_cursor *cur;
	MDB_txn *txn;
	size_t nint = 0;
	int r, rc;

	*count = 0;
	put_be64(kb, from);
	r = mdb_err(mdb_txn_begin(ls->env, NULL, MDB_RDONLY, &txn));
	if (r)
		return r;
	r = mdb_err(mdb_cursor_open(txn, ls->db_intents, &cur));
	if (r) {
		mdb_txn_abort(txn);
		return r;
	}
	r = collect_unlinked(cur, from, &gone);
	for (rc = r ? MDB_NOTFOUND : mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0 && r == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		uint64_t owner;
		uint32_t n;
		size_t pos;

		r = local_intent_header(&v, &owner, &n, &pos);
		nint++;
		for (uint32_t i = 0; i < n && r == 0; i++) {
			struct irec rec;
			r = local_intent_next(&v, &pos, &rec);
			if (r == 0 && (rec.kind == FW_UNLINK || !is_gone(&gone, rec.fid)))
				r = redo_rec(ls, &files, &rec);
		}
		if (r == -EIO)
			derr(STORE, "local store %s: intent %" PRIu64 " is damaged", ls->path,
			     k.mv_size == 8 ? get_be64(k.mv_data) : 0);
	}
	if (r == 0 && rc && rc != MDB_NOTFOUND)
		r = mdb_err(rc);
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	for (size_t j = 0; j < files.n; j++) {
		if (files.v[j].fd >= 0) {
			if (r == 0 && fdatasync(files.v[j].fd) < 0)
				r = -errno;
			close(files.v[j].fd);
		}
	}
	free(files.v);
	free(gone.v);
	if (r == 0 && nint && fsync(ls->objfd) < 0)
		r = -errno;
	if (r)
		derr(STORE, "local store %s: redoing the pending effects failed: %s", ls->path, strerror(-r));
	*count = nint;
	return r;
}

static int read_format(struct local_store *ls, uint32_t *fmt)
{
	MDB_val k = { 6, "format" }, v;
	MDB_txn *txn;
	int r = mdb_err(mdb_txn_begin(ls->env, NULL, MDB_RDONLY, &txn));

	if (r)
		return r;
	r = mdb_get(txn, ls->db_meta, &k, &v) == 0 && v.mv_size == 4 ? 0 : -EUCLEAN;
	if (r == 0)
		*fmt = get_le32(v.mv_data);
	mdb_txn_abort(txn);
	return r;
}

int local_upgrade_v2(struct local_store *ls)
{
	uint64_t until = now_mono_ns() + 5000000000ull;
	MDB_val k = { 6, "format" }, v;
	unsigned char b[4];
	uint32_t fmt;
	MDB_txn *txn;
	int r;

	for (;;) {
		r = read_format(ls, &fmt);
		if (r)
			return r;
		if (fmt != 2) {
			ls->format = fmt;   /* another process of this build upgraded it meanwhile */
			return 0;
		}
		/* let go of our shared lock while we try: a process of this build
		 * opening the store at the same time may take it exclusively first
		 * (then it upgrades, and we find format 3 next time round) */
		flock(ls->lockfd, LOCK_UN);
		if (flock(ls->lockfd, LOCK_EX | LOCK_NB) == 0)
			break;
		if (flock(ls->lockfd, LOCK_SH | LOCK_NB) < 0) {
			store_open_refuse("local store: %s is in use by a process that opens it alone (an older loligo "
					  "build); stop it first", ls->path);
			return -EBUSY;
		}
		if (now_mono_ns() >= until) {
			store_open_refuse("local store: %s is in store format 2 and open in another process (an older "
					  "loligo build?): stop every loligo process on it, then start this build's (the "
					  "first to open it moves it to format 3)", ls->path);
			return -EBUSY;
		}
		usleep(50000);
	}
	/* alone: format 3 is format 2 with inline objects, which nobody made yet */
	put_le32(b, FORMAT_VERSION);
	v.mv_size = 4;
	v.mv_data = b;
	r = mdb_err(mdb_txn_begin(ls->env, NULL, 0, &txn));
	if (r == 0) {
		r = mdb_err(mdb_put(txn, ls->db_meta, &k, &v, 0));
		if (r == 0)
			r = mdb_err(mdb_txn_commit(txn));
		else
			mdb_txn_abort(txn);
	}
	flock(ls->lockfd, LOCK_SH);   /* from exclusive: what every open holds */
	if (r)
		return r;
	dinfo(STORE, "local store %s: upgraded from format 2 to %u", ls->path, FORMAT_VERSION);
	ls->format = FORMAT_VERSION;
	return 0;
}

int local_redo_all(struct local_store *ls)
{
	MDB_val k = { 6, "format" }, v;
	unsigned char b[4];
	MDB_txn *txn;
	size_t n;
	int r;

	/* another process may have upgraded it while we waited for the effects lock */
	r = mdb_err(mdb_txn_begin(ls->env, NULL, MDB_RDONLY, &txn));
	if (r)
		return r;
	if (mdb_get(txn, ls->db_meta, &k, &v) == 0 && v.mv_size == 4 && get_le32(v.mv_data) == FORMAT_VERSION)
		ls->format = FORMAT_VERSION;
	mdb_txn_abort(txn);
	if (ls->format == FORMAT_VERSION)
		return 0;
	r = redo_from(ls, 0, &n);
	if (r)
		return r;
	r = mdb_err(mdb_txn_begin(ls->env, NULL, 0, &txn));
	if (r)
		return r;
	put_le32(b, FORMAT_VERSION);
	v.mv_size = 4;
	v.mv_data = b;
	r = mdb_err(mdb_drop(txn, ls->db_intents, 0));
	if (r == 0)
		r = mdb_err(mdb_drop(txn, ls->db_owners, 0));
	if (r == 0)
		r = mdb_err(mdb_put(txn, ls->db_meta, &k, &v, 0));
	if (r == 0)
		r = mdb_err(mdb_txn_commit(txn));
	else
		mdb_txn_abort(txn);
	if (r == 0 && n)
		dinfo(STORE, "local store %s: replayed %zu pending ops after an unclean shutdown", ls->path, n);
	if (r == 0 && ls->format != FORMAT_VERSION)
		dinfo(STORE, "local store %s: upgraded from format %u to %u", ls->path, ls->format, FORMAT_VERSION);
	if (r == 0)
		ls->format = FORMAT_VERSION;
	return r;
}

/*
 * With LOCK_EFFECTS held: owners in the table whose liveness lock is free
 * died with effects that may be unapplied or unsynced.  Redo the suffix
 * above the lowest of their records and drop their records.
 */
static int take_over_dead(struct local_store *ls)
{
	uint64_t *dead = NULL, from = UINT64_MAX;
	size_t ndead = 0, cap = 0, nint = 0;
	MDB_cursor *cur;
	MDB_txn *txn;
	MDB_val k, v;
	int r, rc;

	r = mdb_err(mdb_txn_begin(ls->env, NULL, MDB_RDONLY, &txn));
	if (r)
		return r;
	r = mdb_err(mdb_cursor_open(txn, ls->db_owners, &cur));
	for (rc = r ? MDB_NOTFOUND : mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		uint64_t id = k.mv_size == 8 ? get_be64(k.mv_data) : 0;
		int alive;

		if (id == ls->owner)
			continue;
		alive = id && id < (1ull << 62) ? owner_alive(ls, id) : 0;
		if (alive < 0) {
			r = alive;
			break;
		}
		if (alive)
			continue;
		if (ndead == cap) {
			size_t nc = cap ? cap * 2 : 8;
			uint64_t *nd = realloc(dead, nc * sizeof(*nd));
			if (!nd) {
				r = -ENOMEM;
				break;
			}
			dead = nd;
			cap = nc;
		}
		/* a record we cannot read: redo everything (the safe direction) */
		dead[ndead++] = id;
		uint64_t low = v.mv_size == 8 ? get_le64(v.mv_data) : 0;
		if (low < from)
			from = low;
	}
	if (r == 0 && rc && rc != MDB_NOTFOUND)
		r = mdb_err(rc);
	if (cur)
		mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	if (r || ndead == 0)
		goto out;

	r = redo_from(ls, from, &nint);
	if (r)
		goto out;
	{
		/* their LMDB reader slots too: a stale reader keeps every page freed after it in use */
		int stale = 0;
		mdb_reader_check(ls->env, &stale);
	}
	r = mdb_err(mdb_txn_begin(ls->env, NULL, 0, &txn));
	if (r)
		goto out;
	for (size_t i = 0; i < ndead && r == 0; i++) {
		unsigned char kb[8];
		MDB_val dk = { 8, kb };
		put_be64(kb, dead[i]);
		rc = mdb_del(txn, ls->db_owners, &dk, NULL);
		r = rc == MDB_NOTFOUND ? 0 : mdb_err(rc);
	}
	if (r == 0)
		r = mdb_err(mdb_txn_commit(txn));
	else
		mdb_txn_abort(txn);
	if (r == 0) {
		perf_inc(&ls->pc_takeovers, ndead);
		dinfo(STORE, "local store %s: took over the pending effects of %zu owner(s) that exited uncleanly "
		      "(%zu intents redone from seq %" PRIu64 ")", ls->path, ndead, nint, from);
	}
out:
	free(dead);
	return r;
}

/* ---- the effects lock ----------------------------------------------- */

int local_effects_acquire(struct local_store *ls)
{
	int r;

	if (ls->effects_yielded) {
		/*
		 * We let go because others waited: they hold LOCK_WAITING until they
		 * got it.  Give them a moment to take it, but only a moment: a waiter
		 * that is stopped (SIGSTOP) never takes it and must not stall us.
		 */
		uint64_t until = now_mono_ns() + YIELD_WAIT_NS;
		ls->effects_yielded = false;
		while (ofd_taken(ls->lockfd, F_WRLCK, LOCK_WAITING) == 1 &&
		       ofd_taken(ls->lockfd, F_WRLCK, LOCK_EFFECTS) == 0 && now_mono_ns() < until) {
			struct timespec ts = { 0, 100 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	r = ofd_try(ls->lockfd, F_WRLCK, LOCK_EFFECTS);
	if (r == -EAGAIN) {
		uint64_t t0 = now_mono_ns();

		perf_inc(&ls->pc_effects_waits, 1);
		ofd_try(ls->lockfd, F_RDLCK, LOCK_WAITING);   /* best effort: only fairness depends on it */
		r = ofd_wait(ls->lockfd, F_WRLCK, LOCK_EFFECTS);
		ofd_unlock(ls->lockfd, LOCK_WAITING);
		hist_add(&ls->h_effects_wait, now_mono_ns() - t0);
	}
	if (r) {
		derr(STORE, "local store %s: cannot take the effects lock in store.lock: %s", ls->path, strerror(-r));
		return r;
	}
	ls->effects_held = true;
	ls->effects_since_ns = now_mono_ns();
	r = take_over_dead(ls);
	if (r)
		local_effects_release(ls);
	return r;
}

void local_effects_release(struct local_store *ls)
{
	ofd_unlock(ls->lockfd, LOCK_EFFECTS);
	ls->effects_held = false;
	if (ls->effects_yield) {
		ls->effects_yield = false;
		ls->effects_yielded = true;
		perf_inc(&ls->pc_effects_yields, 1);
	}
}

void local_share_retire(struct local_store *ls)
{
	if (ls->effects_held)
		local_effects_release(ls);
	ofd_unlock(ls->lockfd, LOCK_LIVE_BASE + (off_t)ls->owner);
	ls->retired = true;
	derr(STORE, "local store %s: a committed effect could not be applied to its file; this process applies no "
	     "more (its reads and writes of object data fail with EIO): the next process to take the effects "
	     "lock, or a reopen, redoes what it left", ls->path);
}

bool local_effects_contended(struct local_store *ls)
{
	return ofd_taken(ls->lockfd, F_WRLCK, LOCK_WAITING) == 1;
}

/* ---- the shared part of every write transaction --------------------- */

static int get_u64(MDB_txn *txn, MDB_dbi dbi, const char *key, uint64_t dflt, uint64_t *out)
{
	MDB_val k = { strlen(key), (void *)key }, v;
	int rc = mdb_get(txn, dbi, &k, &v);

	*out = dflt;
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return mdb_err(rc);
	if (v.mv_size != 8)
		return -EIO;
	*out = get_le64(v.mv_data);
	return 0;
}

static int put_u64(MDB_txn *txn, MDB_dbi dbi, const char *key, uint64_t val)
{
	unsigned char b[8];
	MDB_val k = { strlen(key), (void *)key }, v = { 8, b };

	put_le64(b, val);
	return mdb_err(mdb_put(txn, dbi, &k, &v, 0));
}

/* Delete the intents below the lowest unsynced seq of every owner. */
static int clear_synced(struct local_store *ls, MDB_txn *txn)
{
	uint64_t g = ls->my_lowest;
	MDB_cursor *cur;
	MDB_val k, v;
	int rc, r;

	r = mdb_err(mdb_cursor_open(txn, ls->db_owners, &cur));
	if (r)
		return r;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size == 8 && get_be64(k.mv_data) == ls->owner)
			continue;   /* ours: ls->my_lowest is newer than the record */
		uint64_t low = v.mv_size == 8 ? get_le64(v.mv_data) : 0;
		if (low < g)
			g = low;
	}
	mdb_cursor_close(cur);
	if (rc != MDB_NOTFOUND)
		return mdb_err(rc);
	if (g == 0)
		return 0;
	r = mdb_err(mdb_cursor_open(txn, ls->db_intents, &cur));
	if (r)
		return r;
	rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	while (rc == 0 && k.mv_size == 8 && get_be64(k.mv_data) < g) {
		rc = mdb_cursor_del(cur, 0);
		if (rc)
			break;
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	return rc && rc != MDB_NOTFOUND ? mdb_err(rc) : 0;
}

/*
 * The next intent seq follows the last intent in the table.  It need not
 * grow forever: every seq anyone remembers (an owners record, a process'
 * own pending intents) names an intent still in the table, and deleting
 * never takes the last one... unless all are deleted, and then nobody
 * remembers any.
 */
static int next_seq(MDB_txn *txn, MDB_dbi dbi, uint64_t *out)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc, r;

	*out = 1;
	r = mdb_err(mdb_cursor_open(txn, dbi, &cur));
	if (r)
		return r;
	rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
	if (rc == 0 && k.mv_size == 8)
		*out = get_be64(k.mv_data) + 1;
	mdb_cursor_close(cur);
	return rc && rc != MDB_NOTFOUND ? mdb_err(rc) : 0;
}

int local_txn_begin_shared(struct local_store *ls, MDB_txn *txn)
{
	int r;

	if ((r = get_u64(txn, ls->db_meta, "next_fid", 1, &ls->next_fid)) ||
	    (r = next_seq(txn, ls->db_intents, &ls->next_seq)))
		return r;
	ls->saved_fid = ls->next_fid;
	return clear_synced(ls, txn);
}

int local_txn_end_shared(struct local_store *ls, MDB_txn *txn, uint64_t first_seq, uint64_t *lowest)
{
	uint64_t want = ls->my_lowest;
	int r = 0;

	if (first_seq && first_seq < want)
		want = first_seq;
	if (want != ls->my_lowest_db) {
		unsigned char kb[8], vb[8];
		MDB_val k = { 8, kb }, v = { 8, vb };
		put_be64(kb, ls->owner);
		put_le64(vb, want);
		if (want == UINT64_MAX) {
			int rc = mdb_del(txn, ls->db_owners, &k, NULL);
			r = rc == MDB_NOTFOUND ? 0 : mdb_err(rc);
		} else {
			r = mdb_err(mdb_put(txn, ls->db_owners, &k, &v, 0));
		}
	}
	if (r == 0 && ls->next_fid != ls->saved_fid)
		r = put_u64(txn, ls->db_meta, "next_fid", ls->next_fid);
	*lowest = want;
	return r;
}

void local_txn_committed_shared(struct local_store *ls, uint64_t lowest)
{
	ls->my_lowest = ls->my_lowest_db = lowest;
	ls->saved_fid = ls->next_fid;
}
