/*
 * test_nfs4_gw_locks.c - the gateway's NFSv4 locks are the MDS's (issue 10
 * item 3): an NFSv4.1 client's LOCK/LOCKT/LOCKU over a real socket to a
 * gateway (nfs4gw_fixture.h) against a "peer": another client library in a
 * process of its own (another MDS session, as another loligo-fuse mount or
 * gateway would be) taking fcntl-style locks with lc_setlk/lc_getlk.
 *
 * Each sees the other's locks: the peer's lock makes LOCK and LOCKT
 * NFS4ERR_DENIED (naming a loligo session as the holder), the NFS lock
 * makes the peer's EAGAIN; LOCKU, a lease cancelled by another NFS
 * client's conflicting LOCK (its lock stateids go) and the gateway's end
 * release them at the MDS.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <time.h>

#include "nfs_gw/nfs4/ops_int.h"
#include "nfs4gw_fixture.h"
#include "tests/lib/wait.h"

/* ---- NFS helpers ------------------------------------------------------------------ */

static uint32_t lock_new(struct nc *n, const struct nfs4_fh *fh, uint32_t type, uint64_t off, uint64_t len,
			 const struct nfs4_stateid *osid, const char *lo, struct nfs4_stateid *lsid, char *holder,
			 size_t hlen)
{
	struct ncc c;
	struct nrep r;
	uint32_t st;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_lock_new(&c, type, off, len, 0, osid, 0, lo);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	st = rep_next(&r, OP_LOCK);
	if (!st && lsid) {
		rep_stateid(&r, lsid);
		lsid->seqid = 0;         /* 4.1: "the current one" from here on */
	}
	if (st == NFS4ERR_DENIED && holder) {
		uint64_t o, l, cid;
		uint32_t t, olen;
		const uint8_t *ow;

		ck_assert_int_eq(xdr_get_u64(&r.d, &o) || xdr_get_u64(&r.d, &l) || xdr_get_u32(&r.d, &t) ||
				 xdr_get_u64(&r.d, &cid) || xdr_get_opaque(&r.d, &ow, &olen, NFS4_OPAQUE_LIMIT), 0);
		snprintf(holder, hlen, "%.*s", (int)olen, (const char *)ow);
	}
	rep_free(&r);
	return st;
}

static uint32_t lock_more(struct nc *n, const struct nfs4_fh *fh, uint32_t type, uint64_t off, uint64_t len,
			  const struct nfs4_stateid *lsid)
{
	struct ncc c;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_lock(&c, type, off, len, lsid, 0);
	return ncc_status(&c);
}

static uint32_t lockt(struct nc *n, const struct nfs4_fh *fh, uint32_t type, uint64_t off, uint64_t len,
		      const char *lo)
{
	struct ncc c;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_lockt(&c, type, off, len, lo);
	return ncc_status(&c);
}

static uint32_t locku(struct nc *n, const struct nfs4_fh *fh, const struct nfs4_stateid *lsid, uint64_t off,
		      uint64_t len)
{
	struct ncc c;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_locku(&c, NC_WRITE_LT, 0, lsid, off, len);
	return ncc_status(&c);
}

/* ---- the peer: another client library in a process of its own ---------------------- */

struct peer_cmd {
	char op;                 /* 'L' lock, 'U' unlock, 'T' test, 'X' exit */
	int type;                /* F_RDLCK / F_WRLCK */
	uint64_t start, len;
};

struct peer_rep {
	int r;                   /* 0 or -errno */
	int type;                /* 'T': F_UNLCK or the holder's type */
	uint32_t holder_ns;
};

struct peer {
	pid_t pid;
	int cmd, rep;
};

/* The peer mounts the filesystem and locks @dname/@file as one fcntl owner. */
static void peer_main(int cmd, int rep, const char *dname, const char *file)
{
	struct lclient *pc;
	struct lc_inode *root, *d, *in;
	char err[256], addr[64], lf[PATH_MAX + 16];
	struct peer_cmd q;

	cfg_init("client");
	if (cfg_load_file(conf, err, sizeof(err)))
		_exit(2);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", M.port);
	cfg_set(cfg_lookup("client_mds_addr"), addr, false, err, sizeof(err));
	snprintf(lf, sizeof(lf), "%s/peer.log", dir);
	cfg_set(cfg_lookup("log_file"), lf, false, err, sizeof(err));
	if (lclient_create(&pc) || lclient_mount(pc, NULL))
		_exit(3);
	root = lc_root(pc);
	if (lc_lookup(pc, root, dname, &rootcr, NULL, &d) || lc_lookup(pc, d, file, &rootcr, NULL, &in))
		_exit(4);
	while (read(cmd, &q, sizeof(q)) == sizeof(q) && q.op != 'X') {
		struct lc_lock lk = { .type = q.op == 'U' ? F_UNLCK : q.type, .start = q.start, .len = q.len,
				      .owner = 1, .owner_ns = LC_LOCK_NS_FUSE, .pid = getpid() };
		struct peer_rep a = { 0 };

		a.r = q.op == 'T' ? lc_getlk(pc, in, &lk) : lc_setlk(pc, in, &lk, false);
		a.type = lk.type;
		a.holder_ns = lk.holder_ns;
		if (write(rep, &a, sizeof(a)) != sizeof(a))
			break;
	}
	lc_put(pc, in);
	lc_put(pc, d);
	lc_put(pc, root);
	lclient_unmount(pc);
	lclient_destroy(pc);
	_exit(0);
}

/* Fork the peer before this test process has threads (before gw_up). */
static struct peer peer_start(const char *dname, const char *file)
{
	int c[2], r[2];
	struct peer p;

	ck_assert_int_eq(pipe(c), 0);
	ck_assert_int_eq(pipe(r), 0);
	p.pid = fork();
	ck_assert_int_ge(p.pid, 0);
	if (p.pid == 0) {
		char b;

		close(c[1]);
		close(r[0]);
		/* wait for the go: the test's directory and file exist then */
		if (read(c[0], &b, 1) != 1)
			_exit(1);
		peer_main(c[0], r[1], dname, file);
	}
	close(c[0]);
	close(r[1]);
	p.cmd = c[1];
	p.rep = r[0];
	return p;
}

static void peer_go(struct peer *p)
{
	ck_assert_int_eq(write(p->cmd, "g", 1), 1);
}

static struct peer_rep peer_do(struct peer *p, char op, int type, uint64_t start, uint64_t len)
{
	struct peer_cmd q = { op, type, start, len };
	struct peer_rep a = { .r = -ETIMEDOUT };

	ck_assert_int_eq(write(p->cmd, &q, sizeof(q)), (ssize_t)sizeof(q));
	ck_assert_msg(read(p->rep, &a, sizeof(a)) == sizeof(a), "the peer died (see peer.log in %s)", dir);
	return a;
}

static void peer_stop(struct peer *p)
{
	struct peer_cmd q = { 'X', 0, 0, 0 };
	int st = -1;

	ck_assert_int_eq(write(p->cmd, &q, sizeof(q)), (ssize_t)sizeof(q));
	waitpid(p->pid, &st, 0);
	close(p->cmd);
	close(p->rep);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "peer exit status %#x", st);
}

/* ---- the tests -------------------------------------------------------------------- */

START_TEST(nfs_and_another_client_see_each_others_locks)
{
	struct peer p = peer_start("mdslocks", "f");
	struct nc *n;
	struct nfs4_fh d, fh;
	struct nfs4_stateid osid, lsid;
	char holder[128] = "";
	struct peer_rep a;

	gw_up();
	n = nc_connect(port, 1);
	nc_session(n, "mdslocks-41", 1);
	test_dir(n, "mdslocks", &d);
	make_file("f", "0123456789", 0644);
	peer_go(&p);
	ck_assert_uint_eq(nc_open(n, &d, "f", 3, 0, "o", NC_NOCREATE, NULL, &osid, &fh), NFS4_OK);

	/* the peer's write lock on [0,10): NFS is refused, and told who holds it */
	ck_assert_int_eq(peer_do(&p, 'L', F_WRLCK, 0, 10).r, 0);
	ck_assert_uint_eq(lock_new(n, &fh, NC_WRITE_LT, 5, 1, &osid, "lo", NULL, holder, sizeof(holder)),
			  NFS4ERR_DENIED);
	ck_assert_msg(!strncmp(holder, "loligo-session-", 15), "holder '%s'", holder);
	ck_assert_uint_eq(lockt(n, &fh, NC_READ_LT, 0, 1, "lo"), NFS4ERR_DENIED);
	ck_assert_uint_eq(lockt(n, &fh, NC_WRITE_LT, 10, 5, "lo"), NFS4_OK);
	/* NFS locks [20,30): the peer is refused there and sees it as an NFS owner's */
	ck_assert_uint_eq(lock_new(n, &fh, NC_WRITE_LT, 20, 10, &osid, "lo", &lsid, NULL, 0), NFS4_OK);
	ck_assert_int_eq(peer_do(&p, 'L', F_RDLCK, 25, 1).r, -EAGAIN);
	a = peer_do(&p, 'T', F_RDLCK, 25, 1);
	ck_assert_int_eq(a.r, 0);
	ck_assert_int_eq(a.type, F_WRLCK);
	ck_assert_uint_eq(a.holder_ns, LC_LOCK_NS_NFS);
	/* the peer unlocks: NFS gets [0,10) too; LOCKU gives both back */
	ck_assert_int_eq(peer_do(&p, 'U', 0, 0, 0).r, 0);
	ck_assert_uint_eq(lock_more(n, &fh, NC_WRITE_LT, 0, 10, &lsid), NFS4_OK);
	ck_assert_int_eq(peer_do(&p, 'L', F_RDLCK, 9, 1).r, -EAGAIN);
	ck_assert_uint_eq(locku(n, &fh, &lsid, 0, 10), NFS4_OK);
	ck_assert_int_eq(peer_do(&p, 'L', F_RDLCK, 9, 1).r, 0);
	ck_assert_int_eq(peer_do(&p, 'L', F_RDLCK, 25, 1).r, -EAGAIN);     /* [20,30) still NFS's */
	ck_assert_uint_eq(locku(n, &fh, &lsid, 20, 10), NFS4_OK);
	ck_assert_int_eq(peer_do(&p, 'L', F_WRLCK, 0, 0).r, 0);            /* all of it now */
	ck_assert_int_eq(peer_do(&p, 'U', 0, 0, 0).r, 0);

	/* the gateway ends holding a lock: the MDS drops it with its session */
	ck_assert_uint_eq(lock_more(n, &fh, NC_WRITE_LT, 0, 1, &lsid), NFS4_OK);
	ck_assert_int_eq(peer_do(&p, 'L', F_WRLCK, 0, 1).r, -EAGAIN);
	nc_close(n);
	gw_down();
	ck_assert_int_eq(peer_do(&p, 'L', F_WRLCK, 0, 1).r, 0);
	peer_stop(&p);
}
END_TEST

/*
 * A lock stateid that goes without a LOCKU takes its MDS locks with it:
 * here a courtesy client's, whose lease another NFS client's conflicting
 * LOCK cancels (RFC 8881 8.4.3); the second client's lock is then granted
 * by the MDS too, and the peer sees that one and no other.
 */
START_TEST(a_cancelled_lease_releases_its_mds_locks)
{
	const char *opts[] = { "nfs4_lease_time=2", NULL };
	struct peer p = peer_start("mdslease", "f");
	struct nc *a, *b;
	struct nfs4_fh d, fh;
	struct nfs4_stateid aosid, bosid, blsid;

	gw_up_opts(opts);
	a = nc_connect(port, 0);       /* 4.0 for the set-up, before a lease runs */
	test_dir(a, "mdslease", &d);
	make_file("f", "0123456789", 0644);
	nc_close(a);
	peer_go(&p);
	a = nc_connect(port, 1);
	nc_session(a, "mdslease-a", 1);
	ck_assert_uint_eq(nc_open(a, &d, "f", 3, 0, "oa", NC_NOCREATE, NULL, &aosid, &fh), NFS4_OK);
	ck_assert_uint_eq(lock_new(a, &fh, NC_WRITE_LT, 0, 10, &aosid, "la", NULL, NULL, 0), NFS4_OK);
	ck_assert_int_eq(peer_do(&p, 'L', F_WRLCK, 20, 1).r, 0);          /* elsewhere: fine */
	ck_assert_int_eq(peer_do(&p, 'L', F_RDLCK, 0, 1).r, -EAGAIN);

	ck_assert_msg(WAIT_FOR(perf_counter("nfs4", "courtesy_clients") >= 1, 15), "no courtesy client");
	b = nc_connect(port, 1);
	nc_session(b, "mdslease-b", 1);
	ck_assert_uint_eq(nc_open(b, &d, "f", 3, 0, "ob", NC_NOCREATE, NULL, &bosid, NULL), NFS4_OK);
	ck_assert_uint_eq(lock_new(b, &fh, NC_WRITE_LT, 5, 1, &bosid, "lb", &blsid, NULL, 0), NFS4_OK);
	ck_assert_int_ge(perf_counter("nfs4", "leases_cancelled"), 1);
	/* a's [0,10) is gone at the MDS; b's [5,6) is there */
	ck_assert_int_eq(peer_do(&p, 'L', F_RDLCK, 0, 1).r, 0);
	ck_assert_int_eq(peer_do(&p, 'L', F_RDLCK, 5, 1).r, -EAGAIN);
	ck_assert_uint_eq(locku(b, &fh, &blsid, 5, 1), NFS4_OK);
	ck_assert_int_eq(peer_do(&p, 'L', F_RDLCK, 5, 1).r, 0);
	nc_close(a);
	nc_close(b);
	gw_down();
	peer_stop(&p);
}
END_TEST

/* ---- a slow MDS answer to one lock request (issue 21 item 5) -------------------------- */

/*
 * nfs4ops_mds_lock_hook holds the gateway's lock calls to the MDS about
 * one file until the test releases them: a slow MDS answer, as the test
 * sees it.  The hook gives up by itself after the hang bound, so a
 * gateway that stalls other clients meanwhile fails the test (they finish
 * only after the held request went on) instead of hanging it.
 */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static _Atomic uint64_t hold_ino;
static _Atomic int hold_inside;          /* requests held in the hook now */
static bool hold_released;               /* protected by hold_lock */

static void hold_hook(const struct nfs4_compound *cs, uint32_t op, uint64_t ino)
{
	struct timespec ts;
	uint64_t end = now_mono_ns() + lt_hang_ns();

	(void)cs;
	(void)op;
	if (ino != atomic_load(&hold_ino))
		return;
	ts.tv_sec = (time_t)(end / 1000000000ull);
	ts.tv_nsec = (long)(end % 1000000000ull);
	pthread_mutex_lock(&hold_lock);
	atomic_fetch_add(&hold_inside, 1);
	while (!hold_released && now_mono_ns() < end)
		pthread_cond_timedwait(&hold_cond, &hold_lock, &ts);
	atomic_fetch_sub(&hold_inside, 1);
	pthread_mutex_unlock(&hold_lock);
}

static void hold_start(uint64_t ino)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&hold_cond, &ca);
	pthread_condattr_destroy(&ca);
	hold_released = false;
	atomic_store(&hold_ino, ino);
	nfs4ops_mds_lock_hook = hold_hook;
}

static void hold_release(void)
{
	pthread_mutex_lock(&hold_lock);
	hold_released = true;
	pthread_cond_broadcast(&hold_cond);
	pthread_mutex_unlock(&hold_lock);
}

static uint64_t file_ino(const char *name)
{
	struct lc_inode *d, *in;
	struct lc_attr a;

	ck_assert_int_eq(lc_lookup(lc, lroot, tdir, &rootcr, NULL, &d), 0);
	ck_assert_int_eq(lc_lookup(lc, d, name, &rootcr, &a, &in), 0);
	lc_put(lc, in);
	lc_put(lc, d);
	return a.ino;
}

/* @n waits for replies longer than the hook holds a request: a reply that
 * waited for the held request arrives late rather than not at all */
static void patient(struct nc *n)
{
	struct timeval tv = { .tv_sec = (time_t)(2 * lt_hang_ns() / 1000000000ull) };

	ck_assert_int_eq(setsockopt(n->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
}

/* no reply has come on @n's connection yet */
static bool no_reply_yet(struct nc *n)
{
	char b;

	return recv(n->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* send a compound and come back for its reply later (lock_wait) */
static void lock_send(struct ncc *c)
{
	ck_assert_int_eq(c->e.err, 0);
	ck_assert_int_eq(trpc_send_record(c->n->fd, c->e.buf, c->e.len, 0), 0);
}

/* the reply of the PUTFH + LOCK @c sent: LOCK's status */
static uint32_t lock_wait(struct ncc *c)
{
	struct nrep r;
	uint32_t st;

	memset(&r, 0, sizeof(r));
	r.buf = trpc_recv_record(c->n->fd, &r.len, NULL);
	ck_assert_msg(r.buf != NULL, "no reply to the held LOCK");
	rep_parse(&r, c->seq);
	ck_assert_uint_eq(r.xid, c->xid);
	ncc_free(c);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	st = rep_next(&r, OP_LOCK);
	rep_free(&r);
	return st;
}

static uint32_t close_sid(struct nc *n, const struct nfs4_fh *fh, const struct nfs4_stateid *sid)
{
	struct ncc c;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_close(&c, 0, sid);
	return ncc_status(&c);
}

/*
 * Client A's LOCK waits for the MDS (held in the hook); meanwhile client B
 * opens, locks, tests, unlocks and closes other files, and opens and
 * closes A's file too.  All of that completes while A's LOCK is still
 * unanswered: one slow lock stalls nobody else (before, the gateway made
 * the round trip under its state lock, and B's OPEN waited for it).
 */
START_TEST(a_slow_mds_lock_stalls_no_other_client)
{
	struct nc *a, *b;
	struct nfs4_fh d, fa, fb, fc, fx;
	struct nfs4_stateid aosid, bosid, bosid2, blsid;
	struct ncc held;

	gw_up();
	a = nc_connect(port, 1);
	nc_session(a, "slowlock-a", 1);
	b = nc_connect(port, 1);
	nc_session(b, "slowlock-b", 1);
	patient(a);
	patient(b);
	test_dir(a, "slowlock", &d);
	make_file("fa", "0123456789", 0666);
	make_file("fb", "0123456789", 0666);
	make_file("fc", "0123456789", 0666);
	ck_assert_uint_eq(nc_open(a, &d, "fa", 3, 0, "oa", NC_NOCREATE, NULL, &aosid, &fa), NFS4_OK);

	hold_start(file_ino("fa"));
	ncc_begin(&held, a);
	enc_putfh(&held, &fa);
	enc_lock_new(&held, NC_WRITE_LT, 0, 10, 0, &aosid, 0, "la");
	lock_send(&held);
	LT_WAIT_UNTIL(atomic_load(&hold_inside) == 1, "A's LOCK never reached the MDS call");

	/* B, on other files: OPEN, LOCK, LOCKT, LOCKU, CLOSE, and OPEN with create */
	ck_assert_uint_eq(nc_open(b, &d, "fb", 3, 0, "ob", NC_NOCREATE, NULL, &bosid, &fb), NFS4_OK);
	ck_assert_uint_eq(lock_new(b, &fb, NC_WRITE_LT, 0, 10, &bosid, "lb", &blsid, NULL, 0), NFS4_OK);
	ck_assert_uint_eq(lockt(b, &fb, NC_WRITE_LT, 0, 10, "other"), NFS4ERR_DENIED);
	ck_assert_uint_eq(lock_more(b, &fb, NC_READ_LT, 20, 5, &blsid), NFS4_OK);
	ck_assert_uint_eq(locku(b, &fb, &blsid, 0, 30), NFS4_OK);
	ck_assert_uint_eq(close_sid(b, &fb, &bosid), NFS4_OK);
	ck_assert_uint_eq(nc_open(b, &d, "fc", 3, 0, "ob", NC_NOCREATE, NULL, &bosid, &fc), NFS4_OK);
	ck_assert_uint_eq(close_sid(b, &fc, &bosid), NFS4_OK);
	ck_assert_uint_eq(nc_open(b, &d, "fnew", 3, 0, "ob", NC_CREATE, NULL, &bosid, &fx), NFS4_OK);
	ck_assert_uint_eq(close_sid(b, &fx, &bosid), NFS4_OK);
	/* and A's file itself: OPEN and CLOSE do not wait for its locks */
	ck_assert_uint_eq(nc_open(b, &d, "fa", 1, 0, "ob2", NC_NOCREATE, NULL, &bosid2, NULL), NFS4_OK);
	ck_assert_uint_eq(close_sid(b, &fa, &bosid2), NFS4_OK);

	ck_assert_msg(atomic_load(&hold_inside) == 1 && no_reply_yet(a),
		      "B's operations completed only after A's LOCK was answered: they waited for it");
	hold_release();
	ck_assert_uint_eq(lock_wait(&held), NFS4_OK);
	nfs4ops_mds_lock_hook = NULL;
	/* A holds the lock, at the MDS too: B is refused */
	ck_assert_uint_eq(nc_open(b, &d, "fa", 3, 0, "ob3", NC_NOCREATE, NULL, &bosid, NULL), NFS4_OK);
	ck_assert_uint_eq(lock_new(b, &fa, NC_WRITE_LT, 5, 1, &bosid, "lb3", NULL, NULL, 0), NFS4ERR_DENIED);
	nc_close(a);
	nc_close(b);
	gw_down();
}
END_TEST

/*
 * The open a LOCK came with is closed while the LOCK waits for the MDS:
 * the CLOSE completes at once (the lock stateid had no lock yet), the LOCK
 * then answers NFS4ERR_BAD_STATEID, and what the MDS granted it is given
 * back: another client gets the range.
 */
START_TEST(a_close_beside_a_slow_lock_leaves_no_mds_lock)
{
	struct nc *a, *a2, *b;
	struct nfs4_fh d, fa;
	struct nfs4_stateid aosid, bosid;
	struct ncc held;
	uint32_t st;

	gw_up();
	a = nc_connect(port, 1);
	nc_session(a, "slowclose-a", 1);
	b = nc_connect(port, 1);
	nc_session(b, "slowclose-b", 1);
	patient(a);
	patient(b);
	test_dir(a, "slowclose", &d);
	make_file("fa", "0123456789", 0666);
	ck_assert_uint_eq(nc_open(a, &d, "fa", 3, 0, "oa", NC_NOCREATE, NULL, &aosid, &fa), NFS4_OK);

	hold_start(file_ino("fa"));
	ncc_begin(&held, a);
	enc_putfh(&held, &fa);
	enc_lock_new(&held, NC_WRITE_LT, 0, 10, 0, &aosid, 0, "la");
	lock_send(&held);
	LT_WAIT_UNTIL(atomic_load(&hold_inside) == 1, "A's LOCK never reached the MDS call");

	/* A's CLOSE on another slot and connection of its session */
	a2 = nc_clone(a);
	patient(a2);
	a2->slot = 1;
	aosid.seqid = 0;
	st = close_sid(a2, &fa, &aosid);
	ck_assert_msg(atomic_load(&hold_inside) == 1 && no_reply_yet(a),
		      "A's CLOSE completed only after its LOCK was answered: it waited for it");
	ck_assert_uint_eq(st, NFS4_OK);
	hold_release();
	ck_assert_uint_eq(lock_wait(&held), NFS4ERR_BAD_STATEID);
	nfs4ops_mds_lock_hook = NULL;
	/* nothing of A's is left, at the MDS either */
	ck_assert_uint_eq(nc_open(b, &d, "fa", 3, 0, "ob", NC_NOCREATE, NULL, &bosid, NULL), NFS4_OK);
	ck_assert_uint_eq(lock_new(b, &fa, NC_WRITE_LT, 0, 10, &bosid, "lb", NULL, NULL, 0), NFS4_OK);
	nc_close(a2);
	nc_close(a);
	nc_close(b);
	gw_down();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("nfs4_gw_locks");
	TCase *tc = tcase_create("locks");

	tcase_add_unchecked_fixture(tc, fs_setup, fs_teardown);
	tcase_add_checked_fixture(tc, evict_leftover_sessions, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, nfs_and_another_client_see_each_others_locks);
	tcase_add_test(tc, a_cancelled_lease_releases_its_mds_locks);
	suite_add_tcase(s, tc);

	/* an MDS each: a test that fails here leaves a session the MDS waits
	 * out (its caps), which would stall the next test's mount */
	tc = tcase_create("slow_mds_lock");
	tcase_add_unchecked_fixture(tc, fs_setup, fs_teardown);
	tcase_add_checked_fixture(tc, evict_leftover_sessions, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_slow_mds_lock_stalls_no_other_client);
	suite_add_tcase(s, tc);
	tc = tcase_create("slow_mds_lock_close");
	tcase_add_unchecked_fixture(tc, fs_setup, fs_teardown);
	tcase_add_checked_fixture(tc, evict_leftover_sessions, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_close_beside_a_slow_lock_leaves_no_mds_lock);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	log_init("test_nfs4_gw_locks");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
