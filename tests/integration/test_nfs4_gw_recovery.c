/*
 * test_nfs4_gw_recovery.c - a restarted NFS gateway strands nobody (issue
 * 19 item 5): NFSv4 client records on stable storage per gateway id, a
 * grace period only when the previous incarnation recorded clients, lifted
 * early once they all sent RECLAIM_COMPLETE, reclaims only from recorded
 * clients (RECLAIM_BAD otherwise, NO_GRACE after RECLAIM_COMPLETE), and
 * records removed when a client's state is gone for good.
 *
 * Over real sockets with the project's NFSv4 client (nfs4_client.h)
 * against a gateway on a real MDS and client library (nfs4gw_fixture.h).
 * The gateway that dies does so by SIGKILL in a process of its own, as a
 * loligo-fuse would; its successor (same nfs_gateway_id) runs in the test
 * process.  The grace period is 60 s, longer than the hang bound of the
 * waits (LT_HANG_S), so a gateway that only lets grace run out fails.
 */
#include <sys/prctl.h>

#include "nfs4gw_fixture.h"
#include "nfs_gw/nfs4/recovery.h"
#include "store/store.h"
#include "tests/lib/wait.h"

/* The MDS of the restart cases evicts a dead gateway's session (and so its
 * locks) quickly, as the successor's mount does where the MDS knows it. */
static void fs_setup_fast_evict(void)
{
	lt_fs_make(&M, "/tmp/nfs4rec-XXXXXX",
		   "mds_session_timeout = 2\nmds_session_autoclose = 3\nmds_revoke_cap_timeout = 1\n"
		   "mds_tick_interval = 0.2\n",
		   NULL);
	snprintf(dir, sizeof(dir), "%s", M.dir);
	snprintf(conf, sizeof(conf), "%s/loligo.conf", M.dir);
}

static bool gw_log_has(const char *needle)
{
	char path[PATH_MAX + 16], *buf;
	FILE *f;
	long n;
	bool found = false;

	snprintf(path, sizeof(path), "%s/gw.log", dir);
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

/* OPEN CLAIM_PREVIOUS of @fh (4.1: seqid and clientid unused; 4.0: OPEN_CONFIRM if asked). */
static uint32_t reclaim_open(struct nc *n, const struct nfs4_fh *fh, uint32_t access, const char *owner,
			     uint32_t *seqid, struct nfs4_stateid *sid)
{
	struct ncc c;
	struct nrep r;
	uint32_t st, rflags = 0;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_open_head(&c, seqid ? *seqid : 0, access, 0, n->clientid, owner);
	xdr_put_u32(&c.e, 0);            /* NOCREATE */
	xdr_put_u32(&c.e, 1);            /* CLAIM_PREVIOUS */
	xdr_put_u32(&c.e, 0);            /* OPEN_DELEGATE_NONE */
	ncc_call(&c, &r);
	ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
	st = rep_next(&r, OP_OPEN);
	if (seqid && st != NFS4ERR_BADXDR && st != NFS4ERR_STALE_CLIENTID)
		(*seqid)++;
	if (st == NFS4_OK)
		rep_open(&r, sid, &rflags, NULL);
	rep_free(&r);
	if (st == NFS4_OK && n->minor == 0 && (rflags & 0x2)) {
		ncc_begin(&c, n);
		enc_putfh(&c, fh);
		enc_open_confirm(&c, sid, (*seqid)++);
		ncc_call(&c, &r);
		ck_assert_uint_eq(rep_next(&r, OP_PUTFH), NFS4_OK);
		ck_assert_uint_eq(rep_next(&r, OP_OPEN_CONFIRM), NFS4_OK);
		rep_stateid(&r, sid);
		rep_free(&r);
	}
	if (st == NFS4_OK && n->minor >= 1)
		sid->seqid = 0;
	return st;
}

/* LOCK (WRITE, [0, 10)) with a new lock-owner from open stateid @osid; @reclaim as asked. */
static uint32_t lock_new(struct nc *n, const struct nfs4_fh *fh, bool reclaim, const struct nfs4_stateid *osid,
			 const char *lo)
{
	struct ncc c;

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
	return ncc_status(&c);
}

static uint32_t lockt(struct nc *n, const struct nfs4_fh *fh, const char *lo)
{
	struct ncc c;

	ncc_begin(&c, n);
	enc_putfh(&c, fh);
	enc_lockt(&c, NC_WRITE_LT, 0, 10, lo);
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

/* DESTROY_SESSION, then DESTROY_CLIENTID (4.1). */
static void destroy_client(struct nc *n)
{
	struct ncc c;

	ncc_begin(&c, n);
	ncc_op(&c, OP_DESTROY_SESSION);
	xdr_put_fixed(&c.e, n->sessionid, NFS4_SESSIONID_SIZE);
	ck_assert_uint_eq(ncc_status(&c), NFS4_OK);
	n->has_session = false;
	ncc_begin_raw(&c, n, 1, 0);
	ncc_op(&c, OP_DESTROY_CLIENTID);
	xdr_put_u64(&c.e, n->clientid);
	ck_assert_uint_eq(ncc_status(&c), NFS4_OK);
}

/*
 * A gateway in a process of its own (forked before this one has threads),
 * with directory "rec" and file "rec/f" made; its port in *@pport.
 */
static pid_t gw_child(const char *const *opts, uint16_t *pport)
{
	int p[2];
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct lc_inode *d = NULL;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		gw_up_opts(opts);
		ck_assert_int_eq(lc_mkdir(lc, lroot, "rec", 0777, &rootcr, NULL, &d), 0);
		lc_put(lc, d);
		snprintf(tdir, sizeof(tdir), "rec");
		make_file("f", "0123456789", 0666);
		if (write(p[1], &port, sizeof(port)) != sizeof(port))
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	ck_assert_msg(read(p[0], pport, sizeof(*pport)) == sizeof(*pport), "the first gateway did not start (%s/gw.log)",
		      dir);
	close(p[0]);
	return pid;
}

/*
 * The whole story over 4.1: a first start with no records serves at once;
 * its client is recorded; kill -9; the successor (same gateway id) has a
 * grace period in which the recorded client reclaims its open and its
 * lock, while its owner string from another principal and a stranger may
 * not (RECLAIM_BAD) and the stranger's new opens wait (GRACE); the
 * recorded client's RECLAIM_COMPLETE lifts the grace at once (not after
 * 60 s), the stranger opens, and a reclaim after that is NO_GRACE.
 */
START_TEST(v41_restart_reclaim_and_early_lift)
{
	const char *opts[] = { "nfs_gateway_id=gw-a", "nfs4_grace_time=60", NULL };
	struct nfs4_fh d, fh, gfh;
	struct nfs4_stateid sid, sid2;
	struct nc *n, *s;
	uint16_t cport;
	pid_t child;
	int wst;

	child = gw_child(opts, &cport);
	n = nc_connect(cport, 1);
	nc_session(n, "recovery-41", 7);
	nc_lookup_path(n, "rec", &d);
	/* no records before: no grace period, the open is served at once */
	ck_assert_uint_eq(nc_open(n, &d, "f", 3, 0, "o", NC_NOCREATE, NULL, &sid, &fh), NFS4_OK);
	ck_assert_uint_eq(lock_new(n, &fh, false, &sid, "lo"), NFS4_OK);
	nc_close(n);
	ck_assert_int_eq(kill(child, SIGKILL), 0);
	ck_assert_int_eq(waitpid(child, &wst, 0), child);

	gw_up_opts(opts);
	ck_assert_msg(gw_log_has("1 clients recorded (0 NFSv4.0): grace period of 60s starts"),
		      "no grace period for the recorded client (%s/gw.log)", dir);
	/* the recorded owner string from another principal is not the client */
	s = nc_connect(port, 1);
	s->uid = s->gid = 1000;
	nc_session_rc(s, "recovery-41", 7, false);
	ck_assert_uint_eq(reclaim_open(s, &fh, 3, "o", NULL, &sid2), NFS4ERR_RECLAIM_BAD);
	ck_assert_uint_eq(reclaim_complete(s), NFS4_OK);    /* and does not end the grace (below) */
	destroy_client(s);
	nc_close(s);
	n = nc_connect(port, 1);
	nc_session_rc(n, "recovery-41", 7, false);
	s = nc_connect(port, 1);
	nc_session_rc(s, "stranger-41", 1, false);
	/* the stranger was not recorded: it may not reclaim */
	ck_assert_uint_eq(reclaim_open(s, &fh, 3, "so", NULL, &sid2), NFS4ERR_RECLAIM_BAD);
	/* the recorded client reclaims its open (the dead gateway's session
	 * holds the file at the MDS until it is evicted: DELAY meanwhile) */
	{
		uint32_t st;

		LT_WAIT_UNTIL((st = reclaim_open(n, &fh, 3, "o", NULL, &sid)) != NFS4ERR_DELAY, "reclaim open: DELAY");
		ck_assert_uint_eq(st, NFS4_OK);
		LT_WAIT_UNTIL((st = lock_new(n, &fh, true, &sid, "lo")) != NFS4ERR_DENIED && st != NFS4ERR_DELAY,
			      "reclaim LOCK: still denied (the dead gateway's lock at the MDS)");
		ck_assert_uint_eq(st, NFS4_OK);
	}
	/* the stranger waits for the grace period, RECLAIM_COMPLETE or not */
	ck_assert_uint_eq(reclaim_complete(s), NFS4_OK);
	ck_assert_uint_eq(nc_open(s, &d, "g", 3, 0, "so", NC_CREATE, NULL, &sid2, &gfh), NFS4ERR_GRACE);
	ck_assert_uint_eq(reclaim_open(s, &fh, 3, "so", NULL, &sid2), NFS4ERR_NO_GRACE);
	/* the last recorded client is done: the grace period ends now */
	ck_assert_uint_eq(reclaim_complete(n), NFS4_OK);
	LT_WAIT_UNTIL(gw_log_has("grace period lifted early"), "grace not lifted after the only recorded client's "
								 "RECLAIM_COMPLETE (%s/gw.log)", dir);
	ck_assert_uint_eq(nc_open(s, &d, "g", 3, 0, "so", NC_CREATE, NULL, &sid2, &gfh), NFS4_OK);
	/* the reclaimed lock is held: the stranger is denied it */
	ck_assert_uint_eq(lockt(s, &fh, "slo"), NFS4ERR_DENIED);
	ck_assert_uint_eq(reclaim_open(n, &fh, 3, "o", NULL, &sid), NFS4ERR_NO_GRACE);
	nc_close(s);
	nc_close(n);
	gw_down();
}
END_TEST

/*
 * 4.0 after a clean stop: the records stay; the recorded client reclaims
 * (CLAIM_PREVIOUS, OPEN_CONFIRM), one that was not recorded gets
 * RECLAIM_BAD, and GRACE for a new open even after every recorded 4.1
 * client sent RECLAIM_COMPLETE (a recorded 4.0 client keeps the whole
 * grace period, as knfsd).
 */
START_TEST(v40_records_survive_a_stop_and_only_they_reclaim)
{
	const char *opts[] = { "nfs_gateway_id=gw-40", "nfs4_grace_time=60", NULL };
	struct nfs4_fh d, fh;
	struct nfs4_stateid sid;
	struct nc *n, *m, *b;
	uint32_t seq = 1, bseq = 1;

	gw_up_opts(opts);
	n = nc_connect(port, 0);
	nc_setclientid(n, "recovery-40", 5);
	test_dir(n, "rec40", &d);
	make_file("f", "data", 0644);
	ck_assert_uint_eq(nc_open(n, &d, "f", 1, 0, "o", NC_NOCREATE, &seq, &sid, &fh), NFS4_OK);
	nc_close(n);
	m = nc_connect(port, 1);
	nc_session(m, "mixed-41", 5);
	nc_close(m);
	gw_down();

	gw_up_opts(opts);
	ck_assert_msg(gw_log_has("2 clients recorded (1 NFSv4.0): grace period of 60s starts"), "%s/gw.log", dir);
	n = nc_connect(port, 0);
	nc_setclientid(n, "recovery-40", 5);
	seq = 1;
	ck_assert_uint_eq(reclaim_open(n, &fh, 1, "o", &seq, &sid), NFS4_OK);
	/* every 4.1 client sent RECLAIM_COMPLETE, but a 4.0 client never
	 * says it is done: the grace period runs on (checked below) */
	m = nc_connect(port, 1);
	nc_session(m, "mixed-41", 5);
	b = nc_connect(port, 0);
	nc_setclientid(b, "stranger-40", 5);
	ck_assert_uint_eq(reclaim_open(b, &fh, 1, "bo", &bseq, &sid), NFS4ERR_RECLAIM_BAD);
	ck_assert_uint_eq(nc_open(b, &d, "f", 1, 0, "bo", NC_NOCREATE, &bseq, &sid, &fh), NFS4ERR_GRACE);
	ck_assert(!gw_log_has("lifted early"));
	nc_close(b);
	nc_close(m);
	nc_close(n);
	gw_down();
}
END_TEST

/* The record of @owner in gateway @id's object: 0 there, -ENOENT not. */
static int record_of(const char *id, const char *owner)
{
	char oid[128], key[256];
	void *val = NULL;
	size_t len;
	int r;

	snprintf(oid, sizeof(oid), "nfs4_recovery.%s", id);
	for (size_t i = 0; owner[i]; i++)
		sprintf(key + 2 * i, "%02x", (unsigned char)owner[i]);
	r = store_omap_get(lclient_data_pool(lc), oid, key, &val, &len);
	free(val);
	return r;
}

/* The verifier in @owner's record of gateway @id (the record must be there). */
static uint64_t record_verifier(const char *id, const char *owner)
{
	char oid[128], key[256];
	struct nfs4_rec rec;
	void *val = NULL;
	size_t len;
	uint64_t v;

	snprintf(oid, sizeof(oid), "nfs4_recovery.%s", id);
	nfs4_rec_key((const uint8_t *)owner, (uint32_t)strlen(owner), key);
	ck_assert_int_eq(store_omap_get(lclient_data_pool(lc), oid, key, &val, &len), 0);
	ck_assert_int_eq(nfs4_rec_decode(val, len, &rec), 0);
	free(val);
	v = 0;
	for (int i = 0; i < NFS4_VERIFIER_SIZE; i++)     /* as EXCHANGE_ID sent it: XDR, big-endian */
		v = v << 8 | rec.verifier[i];
	return v;
}

/*
 * Records come and go with the client's state: recorded at
 * RECLAIM_COMPLETE (4.1) and SETCLIENTID_CONFIRM (4.0); gone when the
 * lease expires with nothing held and at DESTROY_CLIENTID; a rebooted
 * client's new record replaces its old incarnation's.
 */
START_TEST(records_follow_the_clients)
{
	const char *opts[] = { "nfs_gateway_id=gw-exp", "nfs4_lease_time=2", NULL };
	struct nc *a, *b, *c;

	gw_up_opts(opts);
	a = nc_connect(port, 1);
	nc_session_rc(a, "expiring-41", 3, false);
	ck_assert_int_eq(record_of("gw-exp", "expiring-41"), -ENOENT);   /* nothing to reclaim yet */
	ck_assert_uint_eq(reclaim_complete(a), NFS4_OK);
	ck_assert_int_eq(record_of("gw-exp", "expiring-41"), 0);
	b = nc_connect(port, 0);
	nc_setclientid(b, "expiring-40", 3);
	ck_assert_int_eq(record_of("gw-exp", "expiring-40"), 0);
	c = nc_connect(port, 1);
	nc_session(c, "destroyed-41", 3);
	ck_assert_int_eq(record_of("gw-exp", "destroyed-41"), 0);
	destroy_client(c);
	ck_assert_int_eq(record_of("gw-exp", "destroyed-41"), -ENOENT);
	/* a client that rebooted (new verifier): its old incarnation goes,
	 * the new one is what is recorded */
	{
		struct nc *r1 = nc_connect(port, 1), *r2;
		uint64_t v1 = 0x1111, v2 = 0x2222;

		nc_session(r1, "rebooting-41", 0x1111);
		ck_assert(record_verifier("gw-exp", "rebooting-41") == v1);
		r2 = nc_connect(port, 1);
		nc_session(r2, "rebooting-41", 0x2222);
		ck_assert(record_verifier("gw-exp", "rebooting-41") == v2);
		nc_close(r1);
		nc_close(r2);
	}
	/* a and b say nothing more: their leases (2 s) run out */
	LT_WAIT_UNTIL(record_of("gw-exp", "expiring-41") == -ENOENT, "the expired 4.1 client is still recorded");
	LT_WAIT_UNTIL(record_of("gw-exp", "expiring-40") == -ENOENT, "the expired 4.0 client is still recorded");
	nc_close(a);
	nc_close(b);
	nc_close(c);
	gw_down();
}
END_TEST

/*
 * When the grace period runs out (here 2 s: a recorded client stays away,
 * so it cannot end early), the records of the clients that did not come
 * back are dropped and those of the ones that did stay.
 */
START_TEST(grace_end_drops_the_clients_that_did_not_come_back)
{
	const char *opts[] = { "nfs_gateway_id=gw-drop", "nfs4_grace_time=2", NULL };
	struct nc *a, *b;

	gw_up_opts(opts);
	a = nc_connect(port, 1);
	nc_session(a, "back-41", 3);
	b = nc_connect(port, 1);
	nc_session(b, "gone-41", 3);
	nc_close(a);
	nc_close(b);
	gw_down();

	gw_up_opts(opts);
	ck_assert_msg(gw_log_has("2 clients recorded (0 NFSv4.0): grace period of 2s starts"), "%s/gw.log", dir);
	a = nc_connect(port, 1);
	nc_session(a, "back-41", 3);
	LT_WAIT_UNTIL(record_of("gw-drop", "gone-41") == -ENOENT, "the client that did not come back is still recorded");
	ck_assert_int_eq(record_of("gw-drop", "back-41"), 0);
	/* the line follows the drop (recovery.c grace_end): waited for, not raced */
	LT_WAIT_UNTIL(gw_log_has("1 recorded clients came back, 1 records of clients that did not dropped"),
		      "no grace-end line in %s/gw.log", dir);
	ck_assert(!gw_log_has("lifted early"));
	nc_close(a);
	gw_down();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("nfs4_gw_recovery");

	(void)gw_up;                     /* every case names its gateway id */
	TCase *tc;

	tc = tcase_create("restart");
	tcase_add_unchecked_fixture(tc, fs_setup_fast_evict, fs_teardown);
	tcase_add_checked_fixture(tc, evict_leftover_sessions, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, v41_restart_reclaim_and_early_lift);
	suite_add_tcase(s, tc);
	tc = tcase_create("v40");
	tcase_add_unchecked_fixture(tc, fs_setup, fs_teardown);
	tcase_add_checked_fixture(tc, evict_leftover_sessions, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, v40_records_survive_a_stop_and_only_they_reclaim);
	suite_add_tcase(s, tc);
	tc = tcase_create("records");
	tcase_add_unchecked_fixture(tc, fs_setup, fs_teardown);
	tcase_add_checked_fixture(tc, evict_leftover_sessions, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, records_follow_the_clients);
	tcase_add_test(tc, grace_end_drops_the_clients_that_did_not_come_back);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	log_init("test_nfs4_gw_recovery");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
