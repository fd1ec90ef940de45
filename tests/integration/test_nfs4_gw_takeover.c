/*
 * test_nfs4_gw_takeover.c - two gateways on one filesystem: when one dies,
 * its NFSv4 clients move to the other and reclaim there (issue 19 item 5,
 * `nfs takeover`, nfs_gw/nfs4/recovery.c).
 *
 * Topology (network namespaces this test makes and removes, also when it
 * fails; run as root, else it is skipped with a message):
 *
 *   ns C (the NFS client)        ns A (gateway A)        ns B (gateway B)
 *   vca 10.77.1.2/24 ---- veth ---- va 10.77.1.1/24
 *                                   + 10.77.0.100/32  --(moves)-->  vb
 *   vcb 10.77.2.2/24 ---- veth ----------------------------- vb 10.77.2.1/24
 *   route 10.77.0.100/32 via 10.77.1.1, after the move via 10.77.2.1
 *
 * 10.77.0.100 is the "floating address": gateway A's, then B's.  The MDS
 * and the store stay in the root namespace on 127.0.0.1: each gateway (a
 * client library and the NFS gateway, as loligo-fuse --nfs runs them) has
 * its MDS connection there and only its NFS listener (0.0.0.0:2049, made
 * by a thread switched into A's or B's namespace) in its own namespace.
 * Gateway A runs in a process of its own, killed with SIGKILL; B in the
 * test process.  The client is the project's wire client (nfs4_client.h),
 * its sockets made in C.
 *
 * The story: client X (of A, through the floating address) opens a file,
 * locks [0, 10) and writes; client Y (B's own, at B's address) holds an
 * open of the same file and tries for the same lock all along, on a thread
 * of its own; kill -9 of A; `nfs takeover gw-a` on B; the address moves
 * to B; X reconnects to the same address, reclaims its open and its lock,
 * finishes its write and sends RECLAIM_COMPLETE, which lifts B's grace
 * period at once.  Checked: Y is never granted the lock while X holds it
 * or may still reclaim it (DENIED while A's session holds it, GRACE
 * during the takeover's grace, DENIED after the reclaim), Y gets it once
 * X unlocks; the data is intact; X's record moved to gw-b's object and
 * gw-a's is empty.  Prints the time from the kill to the reclaimed lock.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "nfs4gw_fixture.h"
#include "nfs_gw/nfs4/recovery.h"
#include "store/store.h"
#include "tests/lib/wait.h"

#define FLOAT_ADDR "10.77.0.100"
#define B_ADDR "10.77.2.1"
#define NFS_PORT 2049

static char ns_a[32], ns_b[32], ns_c[32];
static bool ns_made;

/* Run @cmd (a shell line); 0 when it exited 0. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static void netns_remove(void)
{
	/* deleting a namespace deletes the veth ends in it, and so their peers */
	if (ns_a[0])
		sh("ip netns del %s 2>/dev/null", ns_a);
	if (ns_b[0])
		sh("ip netns del %s 2>/dev/null", ns_b);
	if (ns_c[0])
		sh("ip netns del %s 2>/dev/null", ns_c);
	ns_made = false;
}

/* The namespaces and veths of the topology above: 0, or -1 (removed again). */
static int netns_make(void)
{
	int pid = (int)getpid() % 100000;

	snprintf(ns_a, sizeof(ns_a), "lgtkA%d", pid);
	snprintf(ns_b, sizeof(ns_b), "lgtkB%d", pid);
	snprintf(ns_c, sizeof(ns_c), "lgtkC%d", pid);
	if (sh("ip netns add %s && ip netns add %s && ip netns add %s", ns_a, ns_b, ns_c) ||
	    sh("ip link add va%d netns %s type veth peer name vca%d netns %s", pid, ns_a, pid, ns_c) ||
	    sh("ip link add vb%d netns %s type veth peer name vcb%d netns %s", pid, ns_b, pid, ns_c) ||
	    sh("ip -n %s link set lo up && ip -n %s link set lo up && ip -n %s link set lo up", ns_a, ns_b, ns_c) ||
	    sh("ip -n %s addr add 10.77.1.1/24 dev va%d && ip -n %s link set va%d up", ns_a, pid, ns_a, pid) ||
	    sh("ip -n %s addr add 10.77.2.1/24 dev vb%d && ip -n %s link set vb%d up", ns_b, pid, ns_b, pid) ||
	    sh("ip -n %s addr add 10.77.1.2/24 dev vca%d && ip -n %s link set vca%d up", ns_c, pid, ns_c, pid) ||
	    sh("ip -n %s addr add 10.77.2.2/24 dev vcb%d && ip -n %s link set vcb%d up", ns_c, pid, ns_c, pid) ||
	    sh("ip -n %s addr add " FLOAT_ADDR "/32 dev va%d", ns_a, pid) ||
	    sh("ip -n %s route add " FLOAT_ADDR "/32 via 10.77.1.1", ns_c)) {
		netns_remove();
		return -1;
	}
	ns_made = true;
	return 0;
}

/* The floating address moves from A's side to B's (A is dead). */
static int move_address(void)
{
	/* the runner made the names with its own pid: take the suffix from them */
	int pid = atoi(ns_a + 5);
	return sh("ip -n %s addr del " FLOAT_ADDR "/32 dev va%d && ip -n %s addr add " FLOAT_ADDR "/32 dev vb%d && "
		  "ip -n %s route replace " FLOAT_ADDR "/32 via 10.77.2.1",
		  ns_a, pid, ns_b, pid, ns_c);
}

static void fs_setup_takeover(void)
{
	/* the dead gateway's session would stay for mds_session_autoclose
	 * (an hour here): only the takeover's eviction releases its lock */
	lt_fs_make(&M, "/tmp/nfs4tk-XXXXXX", "mds_session_autoclose = 3600\nmds_session_timeout = 3600\n", NULL);
	snprintf(dir, sizeof(dir), "%s", M.dir);
	snprintf(conf, sizeof(conf), "%s/loligo.conf", M.dir);
	if (netns_make())
		fprintf(stderr, "test_nfs4_gw_takeover: cannot make the network namespaces\n");
}

static void fs_teardown_takeover(void)
{
	netns_remove();
	fs_teardown();
}

/* Switch the calling thread into namespace @name (NULL: the root one, @root). */
static void enter_ns(const char *name, int root)
{
	char path[128];
	int fd;

	if (!name) {
		ck_assert_int_eq(setns(root, CLONE_NEWNET), 0);
		return;
	}
	snprintf(path, sizeof(path), "/var/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	ck_assert_msg(setns(fd, CLONE_NEWNET) == 0, "setns %s: %s", name, strerror(errno));
	close(fd);
}

static int root_ns(void)
{
	int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	return fd;
}

/* A gateway (id @id) whose NFS listener is 0.0.0.0:2049 in namespace @ns. */
static void gw_up_in(const char *ns, const char *id)
{
	char err[256], addr[64], lf[PATH_MAX + 16];
	int root;

	ck_assert_msg(M.port > 0, "no MDS");
	cfg_init("client,nfs");
	ck_assert_msg(cfg_load_file(conf, err, sizeof(err)) == 0, "%s", err);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", M.port);
	set_opt("client_mds_addr", addr);
	snprintf(lf, sizeof(lf), "%s/gw-%s.log", dir, id);
	set_opt("log_file", lf);
	set_opt("nfs_gateway_id", id);
	set_opt("nfs4_grace_time", "60");         /* longer than LT_HANG_S: only an early lift passes */
	set_opt("nfs_exports", "id=1,path=/,rw,no_root_squash,insecure");
	set_opt("nfs_workers", "8");
	set_opt("nfs_rpcbind", "false");
	if (getenv("NFS4GW_DEBUG"))
		set_opt("debug_nfs", getenv("NFS4GW_DEBUG"));
	ck_assert_int_eq(lclient_create(&lc), 0);
	ck_assert_int_eq(lclient_mount(lc, NULL), 0);
	lroot = lc_root(lc);
	snprintf(asok_path, sizeof(asok_path), "%s/gw-%s.asok", dir, id);
	ck_assert_int_eq(asok_start(asok_path, &asok), 0);
	/* the listener (and the gateway's threads) in @ns; the MDS connection
	 * and the store stay where they are */
	root = root_ns();
	enter_ns(ns, -1);
	ck_assert_int_eq(gw_start("0.0.0.0:2049", lc, asok, &gw), 0);
	enter_ns(NULL, root);
	close(root);
}

/* A connection of the wire client from namespace C to @addr:2049. */
static int connect_c(const char *addr)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(NFS_PORT) };
	int root = root_ns(), fd, one = 1;

	inet_pton(AF_INET, addr, &sa.sin_addr);
	enter_ns(ns_c, -1);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	enter_ns(NULL, root);
	close(root);
	ck_assert_int_ge(fd, 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static struct nc *nc_connect_c(const char *addr, uint32_t minor)
{
	struct nc *n = calloc(1, sizeof(*n));

	ck_assert_ptr_nonnull(n);
	n->minor = minor;
	LT_WAIT_UNTIL((n->fd = connect_c(addr)) >= 0, "cannot connect to %s:%d from %s", addr, NFS_PORT, ns_c);
	n->cs_seq = 1;
	return n;
}

/* Gateway A (id @id): a process of its own (forked before the test has threads), with @dname/f made. */
static pid_t gw_a_child(const char *id, const char *dname)
{
	int p[2];
	pid_t pid;
	char ok;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct lc_inode *d = NULL;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		gw_up_in(ns_a, id);
		ck_assert_int_eq(lc_mkdir(lc, lroot, dname, 0777, &rootcr, NULL, &d), 0);
		lc_put(lc, d);
		snprintf(tdir, sizeof(tdir), "%s", dname);
		make_file("f", "..........", 0666);
		if (write(p[1], "y", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	ck_assert_msg(read(p[0], &ok, 1) == 1, "gateway A did not start (%s/gw-%s.log)", dir, id);
	close(p[0]);
	return pid;
}

/* OPEN CLAIM_PREVIOUS of @fh for reading and writing (4.1). */
static uint32_t reclaim_open(struct nc *n, const struct nfs4_fh *fh, const char *owner, struct nfs4_stateid *sid)
{
	struct ncc c;
	struct nrep r;
	uint32_t st;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_open_head(&c, 0, 3, 0, n->clientid, owner);
	xdr_put_u32(&c.e, 0);            /* NOCREATE */
	xdr_put_u32(&c.e, 1);            /* CLAIM_PREVIOUS */
	xdr_put_u32(&c.e, 0);            /* OPEN_DELEGATE_NONE */
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	st = rep_next(&r, OP_OPEN);
	if (st == NFS4_OK) {
		rep_open(&r, sid, NULL, NULL);
		sid->seqid = 0;
	}
	rep_free(&r);
	return st;
}

/* LOCK WRITE [0, 10) with a new lock-owner @lo from open stateid @osid; the lock stateid in @lsid. */
static uint32_t lock_new(struct nc *n, const struct nfs4_fh *fh, bool reclaim, const struct nfs4_stateid *osid,
			 const char *lo, struct nfs4_stateid *lsid)
{
	struct ncc c;
	struct nrep r;
	uint32_t st;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	ncc_op(&c, OP_LOCK);
	xdr_put_u32(&c.e, NC_WRITE_LT);
	xdr_put_bool(&c.e, reclaim);
	xdr_put_u64(&c.e, 0);
	xdr_put_u64(&c.e, 10);
	xdr_put_bool(&c.e, true);
	xdr_put_u32(&c.e, 0);
	enc_stateid(&c, osid);
	xdr_put_u32(&c.e, 0);
	xdr_put_u64(&c.e, n->clientid);
	xdr_put_string(&c.e, lo);
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	st = rep_next(&r, OP_LOCK);
	if (st == NFS4_OK && lsid)
		rep_stateid(&r, lsid);
	rep_free(&r);
	return st;
}

static uint32_t write_at(struct nc *n, const struct nfs4_fh *fh, const struct nfs4_stateid *sid, uint64_t off,
			 const char *data)
{
	struct ncc c;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_write(&c, sid, off, 2 /* FILE_SYNC4 */, data, (uint32_t)strlen(data));
	return ncc_status(&c);
}

static uint32_t reclaim_complete(struct nc *n)
{
	struct ncc c;

	ncc_begin(&c, n);
	ncc_op(&c, OP_RECLAIM_COMPLETE);
	xdr_put_bool(&c.e, false);
	return ncc_status(&c);
}

static bool log_has(const char *id, const char *needle)
{
	char path[PATH_MAX + 32], *buf;
	FILE *f;
	long n;
	bool found = false;

	snprintf(path, sizeof(path), "%s/gw-%s.log", dir, id);
	f = fopen(path, "r");
	if (!f)
		return false;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
		buf[n] = 0;
		found = strstr(buf, needle) != NULL;
	}
	free(buf);
	fclose(f);
	return found;
}

/* The keys of gateway @id's records object: how many, and whether @key is one. */
static unsigned int object_keys(const char *id, const char *key, bool *has)
{
	struct store_omap_iter it;
	const struct store_kv *kv;
	char oid[128];
	unsigned int n = 0;

	snprintf(oid, sizeof(oid), "nfs4_recovery.%s", id);
	*has = false;
	store_omap_iter_init(&it, lclient_data_pool(lc), oid, NULL, 64);
	while ((kv = store_omap_iter_next(&it)) != NULL) {
		n++;
		if (key && !strcmp(kv->key, key))
			*has = true;
	}
	store_omap_iter_end(&it);
	return n;
}

/* ---- client Y: B's own, after the same lock all along ---------------------- */

struct hammer {
	struct nc *n;
	struct nfs4_fh fh;
	struct nfs4_stateid osid;
	_Atomic bool x_released;          /* X unlocked: Y may get it now */
	_Atomic bool stop;
	_Atomic unsigned int denied, grace, other, tries;
	_Atomic unsigned int granted_early; /* the lock granted while X held it or might reclaim it */
	_Atomic bool granted;
};

static void *hammer_main(void *arg)
{
	struct hammer *h = arg;
	unsigned int i = 0;
	char lo[32];

	while (!atomic_load(&h->stop)) {
		uint32_t st;

		snprintf(lo, sizeof(lo), "ylo-%u", i++);
		st = lock_new(h->n, &h->fh, false, &h->osid, lo, NULL);
		atomic_fetch_add(&h->tries, 1);
		if (st == NFS4_OK) {
			/* x_released is set before X's LOCKU is sent: a grant seen
			 * before it came while X held the lock.  (Read before the
			 * LOCK, it also counted a LOCK sent just before the release
			 * and granted after the LOCKU: CI saw that once.) */
			if (!atomic_load(&h->x_released))
				atomic_fetch_add(&h->granted_early, 1);
			atomic_store(&h->granted, true);
			break;
		}
		if (st == NFS4ERR_DENIED)
			atomic_fetch_add(&h->denied, 1);
		else if (st == NFS4ERR_GRACE)
			atomic_fetch_add(&h->grace, 1);
		else
			atomic_fetch_add(&h->other, 1);
		usleep(2000);
	}
	return NULL;
}

START_TEST(takeover_moves_clients_and_their_locks)
{
	struct nfs4_fh d, fh;
	struct nfs4_stateid xsid, xlsid;
	struct hammer h = { 0 };
	struct json_object *req, *reply = NULL, *v;
	struct nc *x, *y;
	pthread_t ht;
	uint64_t t_kill, t_takeover = 0, t_reclaimed;
	pid_t child;
	uint32_t st;
	unsigned int grace_before;
	bool has;
	int wst;

	ck_assert_msg(ns_made, "no network namespaces (the runner could not make them)");
	child = gw_a_child("gw-a", "tk");
	gw_up_in(ns_b, "gw-b");
	ck_assert_msg(log_has("gw-b", "no clients recorded: no grace period"), "%s/gw-gw-b.log", dir);

	/* X, a client of A through the floating address */
	x = nc_connect_c(FLOAT_ADDR, 1);
	nc_session(x, "mover-41", 7);
	nc_lookup_path(x, "tk", &d);
	ck_assert_uint_eq(nc_open(x, &d, "f", 3, 0, "xo", NC_NOCREATE, NULL, &xsid, &fh), NFS4_OK);
	ck_assert_uint_eq(lock_new(x, &fh, false, &xsid, "xlo", &xlsid), NFS4_OK);
	ck_assert_uint_eq(write_at(x, &fh, &xlsid, 0, "AAAAA"), NFS4_OK);

	/* Y, B's own client, holds an open of the same file and wants the lock */
	y = nc_connect_c(B_ADDR, 1);
	nc_session(y, "own-41", 9);
	h.n = y;
	h.fh = fh;
	{
		struct nfs4_fh f2;

		ck_assert_uint_eq(nc_open(y, &d, "f", 3, 0, "yo", NC_NOCREATE, NULL, &h.osid, &f2), NFS4_OK);
	}
	ck_assert_int_eq(pthread_create(&ht, NULL, hammer_main, &h), 0);
	LT_WAIT_UNTIL(atomic_load(&h.denied) >= 3, "Y's LOCK not denied while A's client holds it (%u tries)",
		      atomic_load(&h.tries));

	/* A dies; B is told to take over, then the address moves to B (in
	 * that order, as the HA manager's hook does it: a client that came
	 * to B before its grace would be answered NO_GRACE and lose its locks) */
	t_kill = lt_mono_ns();
	ck_assert_int_eq(kill(child, SIGKILL), 0);
	ck_assert_int_eq(waitpid(child, &wst, 0), child);
	grace_before = atomic_load(&h.grace);
	req = json_object_new_object();
	json_object_object_add(req, "prefix", json_object_new_string("nfs takeover"));
	json_object_object_add(req, "id", json_object_new_string("gw-a"));
	ck_assert_int_eq(asok_request(asok_path, req, &reply, 30000), 0);
	t_takeover = lt_mono_ns();
	ck_assert_msg(!json_object_object_get_ex(reply, "error", &v), "nfs takeover gw-a: %s",
		      json_object_to_json_string(reply));
	ck_assert(json_object_object_get_ex(reply, "result", &v));
	fprintf(stderr, "takeover: %s\n", json_object_get_string(v));
	json_object_put(reply);
	json_object_put(req);
	ck_assert_msg(move_address() == 0, "cannot move " FLOAT_ADDR " to B's side");
	/* B's own client is held off by the takeover's grace */
	LT_WAIT_UNTIL(atomic_load(&h.grace) > grace_before, "Y's LOCK not answered GRACE after the takeover");
	ck_assert_uint_eq(atomic_load(&h.granted_early), 0);

	/* X reconnects to the same address (now B), establishes itself again
	 * (B knows neither its session nor its client id) and reclaims */
	close(x->fd);
	x->fd = -1;
	free(x);
	x = nc_connect_c(FLOAT_ADDR, 1);
	nc_session_rc(x, "mover-41", 7, false);
	LT_WAIT_UNTIL((st = reclaim_open(x, &fh, "xo", &xsid)) != NFS4ERR_DELAY, "reclaim open: DELAY");
	ck_assert_uint_eq(st, NFS4_OK);
	LT_WAIT_UNTIL((st = lock_new(x, &fh, true, &xsid, "xlo", &xlsid)) != NFS4ERR_DELAY, "reclaim LOCK: DELAY");
	ck_assert_msg(st == NFS4_OK, "reclaim LOCK: %u", st);
	t_reclaimed = lt_mono_ns();
	ck_assert_uint_eq(write_at(x, &fh, &xlsid, 5, "BBBBB"), NFS4_OK);
	ck_assert_uint_eq(reclaim_complete(x), NFS4_OK);
	LT_WAIT_UNTIL(log_has("gw-b", "grace period lifted early"), "B's grace not lifted by the only recorded "
								  "client's RECLAIM_COMPLETE (%s/gw-gw-b.log)", dir);
	fprintf(stderr, "takeover: kill -9 of gateway A to the reclaimed lock on B: %.1f ms (takeover command "
			"done after %.1f ms)\n", (t_reclaimed - t_kill) / 1e6, (t_takeover - t_kill) / 1e6);
	/* the grace is over, X holds the lock: Y is denied it, not granted */
	{
		unsigned int dn = atomic_load(&h.denied);

		LT_WAIT_UNTIL(atomic_load(&h.denied) > dn + 2, "Y's LOCK not denied after X's reclaim");
	}
	ck_assert_uint_eq(atomic_load(&h.granted_early), 0);
	ck_assert(!atomic_load(&h.granted));

	/* the data: A's write and the one after the move */
	{
		struct ncc c;
		struct nrep r;
		const uint8_t *data;
		uint32_t len;
		bool eof;

		ncc_begin(&c, x);
		enc_putfh(&c, &fh);
		enc_read(&c, &xlsid, 0, 100);
		ncc_call(&c, &r);
		ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
		ck_assert_uint_eq(rep_next(&r, OP_READ), NFS4_OK);
		rep_read(&r, &eof, &data, &len);
		ck_assert_uint_eq(len, 10);
		ck_assert_msg(!memcmp(data, "AAAAABBBBB", 10), "file holds '%.*s'", (int)len, data);
		rep_free(&r);
	}

	/* X lets go: now Y gets it */
	atomic_store(&h.x_released, true);
	{
		struct ncc c;

		ncc_begin(&c, x);
		enc_putfh(&c, &fh);
		enc_locku(&c, NC_WRITE_LT, 0, &xlsid, 0, 10);
		ck_assert_uint_eq(ncc_status(&c), NFS4_OK);
	}
	LT_WAIT_UNTIL(atomic_load(&h.granted), "Y never got the lock after X released it");
	atomic_store(&h.stop, true);
	pthread_join(ht, NULL);
	ck_assert_uint_eq(atomic_load(&h.granted_early), 0);
	fprintf(stderr, "takeover: Y's LOCK answers: %u DENIED, %u GRACE, %u other, granted only after X's LOCKU\n",
		atomic_load(&h.denied), atomic_load(&h.grace), atomic_load(&h.other));

	/* the records: X's in gw-b's object now, gw-a's object empty */
	LT_WAIT_UNTIL(log_has("gw-b", "takeover of gateway gw-a: grace period over"), "%s/gw-gw-b.log", dir);
	{
		char key[NFS4_REC_KEY_MAX + 1];

		nfs4_rec_key((const uint8_t *)"mover-41", 8, key);
		object_keys("gw-b", key, &has);
		ck_assert_msg(has, "X's record is not in gw-b's object");
		ck_assert_uint_eq(object_keys("gw-a", NULL, &has), 0);
	}
	nc_close(y);
	nc_close(x);
	gw_down();
}
END_TEST

/*
 * A gateway taken over that is not dead (a network partition, a hung
 * process that wakes up) must not go on changing the files its clients
 * moved away from: the takeover fences it as `client evict` does
 * (blocklisted, its data-store instance fenced).  Its client Z, still on
 * A's own address, writes before (served) and after the takeover (not
 * served), and the file holds only the first write.
 */
START_TEST(takeover_fences_a_live_gateway)
{
	struct json_object *req, *reply = NULL, *v;
	struct nfs4_fh d, fh;
	struct nfs4_stateid sid;
	struct nc *z;
	pid_t child;
	uint32_t st;
	int wst;

	ck_assert_msg(ns_made, "no network namespaces (the runner could not make them)");
	child = gw_a_child("gw-live", "live");
	gw_up_in(ns_b, "gw-b2");
	z = nc_connect_c("10.77.1.1", 1);        /* A's own address, which does not move */
	nc_session(z, "stays-41", 5);
	nc_lookup_path(z, "live", &d);
	ck_assert_uint_eq(nc_open(z, &d, "f", 3, 0, "zo", NC_NOCREATE, NULL, &sid, &fh), NFS4_OK);
	ck_assert_uint_eq(write_at(z, &fh, &sid, 0, "11111"), NFS4_OK);

	req = json_object_new_object();
	json_object_object_add(req, "prefix", json_object_new_string("nfs takeover"));
	json_object_object_add(req, "id", json_object_new_string("gw-live"));
	ck_assert_int_eq(asok_request(asok_path, req, &reply, 30000), 0);
	ck_assert_msg(!json_object_object_get_ex(reply, "error", &v), "nfs takeover gw-live: %s",
		      json_object_to_json_string(reply));
	json_object_put(reply);
	json_object_put(req);
	/* A is alive and its client still talks to it: nothing it writes lands */
	st = write_at(z, &fh, &sid, 5, "22222");
	ck_assert_msg(st != NFS4_OK, "a fenced gateway still wrote for its client");
	{
		struct lc_inode *dd, *in;
		struct lc_fh *f;
		char buf[16] = "";

		ck_assert_int_eq(lc_lookup(lc, lroot, "live", &rootcr, NULL, &dd), 0);
		ck_assert_int_eq(lc_lookup(lc, dd, "f", &rootcr, NULL, &in), 0);
		ck_assert_int_eq(lc_open(lc, in, O_RDONLY, &rootcr, &f), 0);
		ck_assert_int_eq(lc_read(lc, f, 0, 10, buf), 10);
		ck_assert_msg(!memcmp(buf, "11111.....", 10), "the file holds '%.10s'", buf);
		lc_release(lc, f);
		lc_put(lc, in);
		lc_put(lc, dd);
	}
	fprintf(stderr, "takeover of a live gateway: its client's next WRITE answered %u\n", st);
	nc_close(z);
	kill(child, SIGKILL);
	waitpid(child, &wst, 0);
	gw_down();
}
END_TEST

/* `nfs takeover @id` on the gateway of this process: NULL, or the error it answered. */
static char *takeover(const char *id)
{
	struct json_object *req, *reply = NULL, *v;
	char *err = NULL;

	req = json_object_new_object();
	json_object_object_add(req, "prefix", json_object_new_string("nfs takeover"));
	json_object_object_add(req, "id", json_object_new_string(id));
	ck_assert_int_eq(asok_request(asok_path, req, &reply, 30000), 0);
	if (json_object_object_get_ex(reply, "error", &v))
		err = strdup(json_object_get_string(v));
	json_object_put(reply);
	json_object_put(req);
	return err;
}

/*
 * A takeover while the survivor's own start grace runs (it restarted, and
 * then the other died too): the dead one's clients join the same grace,
 * which ends early only once its own recorded client and the dead one's
 * both sent RECLAIM_COMPLETE.
 */
START_TEST(takeover_during_own_grace)
{
	struct nfs4_fh d, fh, qd, qfh;
	struct nfs4_stateid sid, qsid;
	struct nc *p, *q;
	pid_t child;
	uint32_t st;
	char *err;
	int wst;

	ck_assert_msg(ns_made, "no network namespaces (the runner could not make them)");
	child = gw_a_child("gw-p", "pg");
	p = nc_connect_c("10.77.1.1", 1);
	nc_session(p, "p-41", 3);
	nc_lookup_path(p, "pg", &d);
	ck_assert_uint_eq(nc_open(p, &d, "f", 3, 0, "po", NC_NOCREATE, NULL, &sid, &fh), NFS4_OK);
	nc_close(p);
	/* the survivor's previous incarnation recorded its own client */
	gw_up_in(ns_b, "gw-q");
	q = nc_connect_c(B_ADDR, 1);
	nc_session(q, "q-41", 4);
	nc_lookup_path(q, "pg", &qd);
	ck_assert_uint_eq(nc_open(q, &qd, "g", 3, 0, "qo", NC_CREATE, NULL, &qsid, &qfh), NFS4_OK);
	nc_close(q);
	gw_down();
	ck_assert_int_eq(kill(child, SIGKILL), 0);
	ck_assert_int_eq(waitpid(child, &wst, 0), child);

	gw_up_in(ns_b, "gw-q");
	ck_assert_msg(log_has("gw-q", "1 clients recorded (0 NFSv4.0): grace period of 60s starts"),
		      "%s/gw-gw-q.log", dir);
	err = takeover("gw-p");
	ck_assert_msg(!err, "nfs takeover gw-p in our start's grace: %s", err);
	q = nc_connect_c(B_ADDR, 1);
	nc_session_rc(q, "q-41", 4, false);
	ck_assert_uint_eq(reclaim_open(q, &qfh, "qo", &qsid), NFS4_OK);
	ck_assert_uint_eq(reclaim_complete(q), NFS4_OK);
	p = nc_connect_c(B_ADDR, 1);
	nc_session_rc(p, "p-41", 3, false);
	/* the dead one's client has not said it is done: the grace goes on */
	ck_assert(!log_has("gw-q", "lifted early"));
	LT_WAIT_UNTIL((st = reclaim_open(p, &fh, "po", &sid)) != NFS4ERR_DELAY, "reclaim open: DELAY");
	ck_assert_uint_eq(st, NFS4_OK);
	ck_assert_uint_eq(reclaim_complete(p), NFS4_OK);
	LT_WAIT_UNTIL(log_has("gw-q", "grace period lifted early"), "%s/gw-gw-q.log", dir);
	LT_WAIT_UNTIL(log_has("gw-q", "takeover of gateway gw-p: grace period over"), "%s/gw-gw-q.log", dir);
	nc_close(p);
	nc_close(q);
	gw_down();
}
END_TEST

/* A takeover of a gateway id nobody recorded anything under is refused. */
START_TEST(takeover_of_nothing_is_refused)
{
	struct json_object *req, *reply = NULL, *v;

	ck_assert_msg(ns_made, "no network namespaces (the runner could not make them)");
	gw_up_in(ns_b, "gw-c");
	req = json_object_new_object();
	json_object_object_add(req, "prefix", json_object_new_string("nfs takeover"));
	json_object_object_add(req, "id", json_object_new_string("gw-nobody"));
	ck_assert_int_eq(asok_request(asok_path, req, &reply, 30000), 0);
	ck_assert_msg(json_object_object_get_ex(reply, "error", &v), "%s", json_object_to_json_string(reply));
	ck_assert_msg(strstr(json_object_get_string(v), "no clients to take over"), "%s", json_object_get_string(v));
	json_object_put(reply);
	json_object_put(req);
	gw_down();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("nfs4_gw_takeover");
	TCase *tc;

	(void)gw_up;
	(void)fs_setup;
	(void)test_dir;
	tc = tcase_create("takeover");
	tcase_add_unchecked_fixture(tc, fs_setup_takeover, fs_teardown_takeover);
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, takeover_moves_clients_and_their_locks);
	tcase_add_test(tc, takeover_fences_a_live_gateway);
	tcase_add_test(tc, takeover_of_nothing_is_refused);
	tcase_add_test(tc, takeover_during_own_grace);
	suite_add_tcase(s, tc);
	return s;
}

/* Whether this process may make network namespaces (root, iproute2). */
static bool netns_usable(char *why, size_t len)
{
	char name[32];

	if (geteuid() != 0) {
		snprintf(why, len, "not root");
		return false;
	}
	snprintf(name, sizeof(name), "lgtkP%d", (int)getpid() % 100000);
	if (sh("ip netns add %s >/dev/null 2>&1", name)) {
		snprintf(why, len, "`ip netns add` fails (no iproute2, or no CAP_SYS_ADMIN/CAP_NET_ADMIN)");
		return false;
	}
	sh("ip netns del %s", name);
	return true;
}

int main(void)
{
	SRunner *sr;
	char why[128];
	int failed;

	if (!netns_usable(why, sizeof(why))) {
		printf("test_nfs4_gw_takeover: SKIPPED: network namespaces not usable here: %s\n", why);
		return 77;
	}
	sr = srunner_create(suite());
	log_init("test_nfs4_gw_takeover");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
