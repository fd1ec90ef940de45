/*
 * test_nfs_gw.c - the NFS gateway's RPC layer against a real loligo-mds,
 * through the real client library, over real sockets: the duplicate reply
 * cache under a pipelining client whose connection is cut.
 *
 * Harness: test_nfs_wire.h (the MDS per test case in the runner, a gateway
 * per test in the forked test process).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_nfs_wire.h"

struct mdsproc nfsgw_mds;
static char parent[256];

static void mds_up(void)
{
	if (mdsproc_parent_init(parent, sizeof(parent), "nfsgw") || mdsproc_init(&nfsgw_mds, parent) ||
	    mdsproc_mkfs(&nfsgw_mds) || mdsproc_start(&nfsgw_mds))
		fprintf(stderr, "test_nfs_gw: the MDS did not start (see %s)\n", nfsgw_mds.dir);
}

static void mds_down(void)
{
	mdsproc_cleanup(&nfsgw_mds);
	mdsproc_parent_remove(parent);
}

static struct nfsgw g;

static void setup(void)
{
	ck_assert_msg(nfsgw_mds.port, "no MDS");
	nfsgw_config();
}

static void teardown(void)
{
	nfsgw_stop(&g);
}

static const struct lc_cred rootcr = { 0 };

/* ---- NFSv4.0 compounds ------------------------------------------------------- */

#define NFS4_PROG 100003
enum { V4_CREATE = 6, V4_PUTROOTFH = 24, V4_REMOVE = 28, V4_RENAME = 29, V4_SAVEFH = 32, V4_NF4DIR = 2 };

static void v40_begin(struct xdr_enc *e, uint32_t xid, uint32_t nops)
{
	xdr_enc_init(e, 64 * 1024);
	trpc_call_header(e, xid, NFS4_PROG, 4, 1);
	xdr_put_string(e, "t");
	xdr_put_u32(e, 0);          /* minor version 0: through the DRC */
	xdr_put_u32(e, nops);
}

/* PUTROOTFH; CREATE a directory @name */
static void v40_mkdir(struct xdr_enc *e, uint32_t xid, const char *name)
{
	v40_begin(e, xid, 2);
	xdr_put_u32(e, V4_PUTROOTFH);
	xdr_put_u32(e, V4_CREATE);
	xdr_put_u32(e, V4_NF4DIR);
	xdr_put_string(e, name);
	xdr_put_u32(e, 0);          /* empty attribute bitmap */
	xdr_put_u32(e, 0);          /* and no values */
}

/* PUTROOTFH; REMOVE @name */
static void v40_remove(struct xdr_enc *e, uint32_t xid, const char *name)
{
	v40_begin(e, xid, 2);
	xdr_put_u32(e, V4_PUTROOTFH);
	xdr_put_u32(e, V4_REMOVE);
	xdr_put_string(e, name);
}

/* PUTROOTFH; SAVEFH; PUTROOTFH; RENAME @from @to */
static void v40_rename(struct xdr_enc *e, uint32_t xid, const char *from, const char *to)
{
	v40_begin(e, xid, 4);
	xdr_put_u32(e, V4_PUTROOTFH);
	xdr_put_u32(e, V4_SAVEFH);
	xdr_put_u32(e, V4_PUTROOTFH);
	xdr_put_u32(e, V4_RENAME);
	xdr_put_string(e, from);
	xdr_put_string(e, to);
}

/* The COMPOUND status of a reply record, or -1 if it is not an accepted reply. */
static int64_t v4_status(const uint8_t *buf, size_t len, uint32_t *xid)
{
	struct trpc_reply r;
	uint32_t st;

	if (trpc_parse_reply(buf, len, &r) || r.reply_stat != RPC_MSG_ACCEPTED || r.stat != RPC_SUCCESS ||
	    xdr_get_u32(&r.res, &st))
		return -1;
	*xid = r.xid;
	return st;
}

static bool exists(const char *name)
{
	struct lc_inode *in = NULL;
	int r = lc_lookup(g.c, g.root, name, &rootcr, NULL, &in);

	if (!r)
		lc_put(g.c, in);
	return r == 0;
}

static void mkdir_lc(const char *name)
{
	struct lc_inode *in = NULL;

	ck_assert_int_eq(lc_mkdir(g.c, g.root, name, 0755, &rootcr, NULL, &in), 0);
	lc_put(g.c, in);
}

/*
 * Issue 8.2: a client pipelines 16 non-idempotent NFSv4.0 requests
 * (REMOVE, RENAME, CREATE), its connection is cut before it reads a single
 * reply, it reconnects from the same port and retransmits all 16: each is
 * answered from the cache (the original statuses: OK), none runs twice.
 *
 * nfs_max_inflight = 4 makes the gateway stop reading after 4 requests and
 * resume as each reply goes out, so requests 5..16 are parsed after replies
 * were written, although the client sent them all before any reply: an
 * implied ACK by arrival order alone (the code before issue 8.2) evicted 12
 * of the 16 replies, and their retransmissions ran again (REMOVE: NOENT,
 * CREATE: EXIST, RENAME: NOENT).
 */
START_TEST(drc_pipelined_cut_replay)
{
	static const char *const kinds = "CRMCRMCRMCRMCRMC";   /* create, remove, rename (move) */
	struct xdr_enc all, one;
	struct json_object *d;
	uint16_t sport = 0;
	char name[32], to[32];
	int fd, i, hits0, got = 0;

	nfsgw_opt("nfs_max_inflight", "4");
	nfsgw_start(&g);
	for (i = 0; i < 16; i++) {
		snprintf(name, sizeof(name), "%c%02d", kinds[i], i);
		if (kinds[i] != 'C')
			mkdir_lc(name);
	}
	xdr_enc_init(&all, 1 << 20);
	for (i = 0; i < 16; i++) {
		uint32_t xid = 0x8200 + (uint32_t)i;

		snprintf(name, sizeof(name), "%c%02d", kinds[i], i);
		snprintf(to, sizeof(to), "moved%02d", i);
		if (kinds[i] == 'C')
			v40_mkdir(&one, xid, name);
		else if (kinds[i] == 'R')
			v40_remove(&one, xid, name);
		else
			v40_rename(&one, xid, name, to);
		nfsw_append_record(&all, &one);
		xdr_enc_free(&one);
	}
	ck_assert_int_eq(all.err, 0);

	fd = nfsw_connect(NULL, &sport, g.port);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(trpc_write_all(fd, all.buf, all.len), 0);    /* all 16 at once */
	ck_assert_msg(NFSW_WAIT(nfsw_peek_records(fd) == 16, 30), "only %u of 16 replies arrived",
		      nfsw_peek_records(fd));
	/* every one ran once */
	for (i = 0; i < 16; i++) {
		snprintf(name, sizeof(name), "%c%02d", kinds[i], i);
		snprintf(to, sizeof(to), "moved%02d", i);
		ck_assert_msg(exists(name) == (kinds[i] == 'C'), "%s", name);
		if (kinds[i] == 'M')
			ck_assert(exists(to));
	}
	d = nfsgw_cmd(&g, "drc dump", NULL, NULL);
	hits0 = (int)nfsgw_json_int(d, "hits");
	ck_assert_int_eq(nfsgw_json_int(d, "inserts"), 16);
	json_object_put(d);

	nfsw_reset(fd);                             /* cut, nothing read */
	fd = -1;
	ck_assert(NFSW_WAIT((fd = nfsw_connect(NULL, &sport, g.port)) >= 0, 10));
	ck_assert_int_eq(trpc_write_all(fd, all.buf, all.len), 0);
	for (i = 0; i < 16; i++) {
		size_t len;
		uint32_t xid = 0;
		uint8_t *rep = trpc_recv_record(fd, &len, NULL);
		int64_t st;

		ck_assert_msg(rep, "reply %d of the retransmissions missing", i);
		st = v4_status(rep, len, &xid);
		free(rep);
		ck_assert_msg(st == 0, "xid %#x (%c) answered %lld: it ran again", xid, kinds[xid - 0x8200],
			      (long long)st);
		got++;
	}
	ck_assert_int_eq(got, 16);
	d = nfsgw_cmd(&g, "drc dump", NULL, NULL);
	ck_assert_int_eq(nfsgw_json_int(d, "hits") - hits0, 16);
	ck_assert_int_eq(nfsgw_json_int(d, "inserts"), 16);
	json_object_put(d);
	close(fd);
	xdr_enc_free(&all);
}
END_TEST

/*
 * The population stays bounded by what is in doubt: a client that sends
 * one request at a time leaves at most a couple of entries per connection
 * (the last reply, and one whose ACK the gateway has not sampled yet),
 * however many requests it sends.
 */
START_TEST(drc_population_bounded)
{
	struct json_object *d;
	char name[32];
	int fds[4], i, k;

	nfsgw_start(&g);
	for (k = 0; k < 4; k++) {
		fds[k] = nfsw_connect(NULL, NULL, g.port);
		ck_assert_int_ge(fds[k], 0);
	}
	for (i = 0; i < 50; i++) {
		for (k = 0; k < 4; k++) {
			struct xdr_enc e;
			uint8_t *rep;
			size_t len;
			uint32_t xid;

			snprintf(name, sizeof(name), "p%d-%d", k, i);
			v40_mkdir(&e, 0x9000 + (uint32_t)(k * 1000 + i), name);
			ck_assert_int_eq(trpc_send_record(fds[k], e.buf, e.len, 0), 0);
			xdr_enc_free(&e);
			rep = trpc_recv_record(fds[k], &len, NULL);
			ck_assert_ptr_nonnull(rep);
			ck_assert_int_eq(v4_status(rep, len, &xid), 0);
			free(rep);
		}
	}
	d = nfsgw_cmd(&g, "drc dump", NULL, NULL);
	ck_assert_int_eq(nfsgw_json_int(d, "inserts"), 200);
	ck_assert_msg(nfsgw_json_int(d, "population") <= 4 * 2, "population %lld after 200 calls on 4 connections",
		      (long long)nfsgw_json_int(d, "population"));
	ck_assert_int_ge(nfsgw_json_int(json_object_object_get(d, "evictions"), "implied_ack"), 200 - 8);
	json_object_put(d);
	for (k = 0; k < 4; k++)
		close(fds[k]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nfs_gw");
	TCase *tc = tcase_create("drc");
	SRunner *sr;
	int nf;

	tcase_add_unchecked_fixture(tc, mds_up, mds_down);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, drc_pipelined_cut_replay);
	tcase_add_test(tc, drc_population_bounded);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
