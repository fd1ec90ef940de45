/*
 * test_idmap.c - NFSv4 owner strings (nfs_gw/nfs4/idmap.c): ids to
 * "name@domain" and back through this machine's NSS (Debian's root,
 * daemon and nogroup), numbers, names that do not exist, other domains,
 * nfs4_disable_idmapping on and off, the cache (a counting backend and a
 * clock the test moves), NSS called with no lock held, the bounded log,
 * and the SETATTR decoder on top (NFS4ERR_BADOWNER).
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "nfs_gw/nfs4/idmap.h"
#include "nfs_gw/nfs4/ops_int.h"
#include "nfs_gw/rpc/rpc.h"
#include "nfs_gw/rpc/xdr.h"

#define DOM "example.org"

static struct idmap *mk(bool numeric_sys, uint32_t anon)
{
	struct idmap_params p = { .domain = DOM, .numeric_sys = numeric_sys, .anon_uid = anon, .anon_gid = anon,
				  .ttl_ns = 600000000000ull, .cache_max = 64 };
	struct idmap *m;

	ck_assert_int_eq(idmap_create(&p, &m), 0);
	return m;
}

static const char *out(struct idmap *m, enum idmap_kind k, uint32_t id, bool numeric)
{
	static char buf[IDMAP_OWNER_MAX];

	ck_assert_uint_eq(idmap_id_to_owner(m, k, id, numeric, buf, sizeof(buf)), strlen(buf));
	return buf;
}

/* the id of @s, or -1 for -ENOENT, -2 for -EINVAL */
static long long in(struct idmap *m, enum idmap_kind k, const char *s, bool strict)
{
	uint32_t id = 12345678;
	int r = idmap_owner_to_id(m, k, s, strict, &id);

	if (r == -ENOENT)
		return -1;
	if (r == -EINVAL)
		return -2;
	ck_assert_msg(r == 0, "%s: %d", s, r);
	return id;
}

START_TEST(ids_out_as_names)
{
	struct idmap *m = mk(false, 65534);

	ck_assert_str_eq(idmap_domain(m), DOM);
	ck_assert_str_eq(out(m, IDMAP_USER, 0, false), "root@" DOM);
	ck_assert_str_eq(out(m, IDMAP_USER, 1, false), "daemon@" DOM);
	ck_assert_str_eq(out(m, IDMAP_GROUP, 0, false), "root@" DOM);
	ck_assert_str_eq(out(m, IDMAP_GROUP, 1, false), "daemon@" DOM);
	ck_assert_str_eq(out(m, IDMAP_GROUP, 65534, false), "nogroup@" DOM);
	/* an id with no name goes out as its number */
	ck_assert_str_eq(out(m, IDMAP_USER, 4000000, false), "4000000");
	ck_assert_str_eq(out(m, IDMAP_GROUP, 4000001, false), "4000001");
	/* asked for numbers (AUTH_SYS under nfs4_disable_idmapping) */
	ck_assert_str_eq(out(m, IDMAP_USER, 0, true), "0");
	ck_assert_str_eq(out(NULL, IDMAP_GROUP, 1, false), "1");
	/* the second time from the cache, the same */
	ck_assert_str_eq(out(m, IDMAP_USER, 0, false), "root@" DOM);
	idmap_destroy(m);
}
END_TEST

START_TEST(disable_idmapping)
{
	struct idmap *m = mk(true, 65534);

	/* on: numbers for AUTH_SYS and AUTH_NONE, names for RPCSEC_GSS */
	ck_assert(idmap_numeric_for(m, RPC_AUTH_SYS));
	ck_assert(idmap_numeric_for(m, RPC_AUTH_NONE));
	ck_assert(!idmap_numeric_for(m, RPCSEC_GSS));
	/* names are accepted in anyway, and numbers */
	ck_assert_int_eq(in(m, IDMAP_USER, "root@" DOM, true), 0);
	ck_assert_int_eq(in(m, IDMAP_USER, "1000", true), 1000);
	idmap_destroy(m);
	/* off: names for everybody; numbers still accepted */
	m = mk(false, 65534);
	ck_assert(!idmap_numeric_for(m, RPC_AUTH_SYS));
	ck_assert(!idmap_numeric_for(m, RPC_AUTH_NONE));
	ck_assert_int_eq(in(m, IDMAP_USER, "1000", true), 1000);
	ck_assert_int_eq(in(m, IDMAP_GROUP, "1000@" DOM, true), 1000);
	idmap_destroy(m);
}
END_TEST

START_TEST(defaults_are_knfsds)
{
	struct idmap_params p;
	struct idmap *m;
	char dom[256];

	cfg_init("nfs");
	idmap_params_from_config(&p);
	ck_assert(p.numeric_sys);               /* nfs4_disable_idmapping = true */
	ck_assert_str_eq(p.domain, "");
	ck_assert_uint_eq(p.anon_uid, 65534);
	ck_assert_uint_eq(p.anon_gid, 65534);
	ck_assert_uint_gt(p.ttl_ns, 0);
	ck_assert_uint_gt(p.cache_max, 0);
	/* no domain given: the host's, as nfsidmap finds it, else localdomain */
	ck_assert_int_eq(idmap_create(&p, &m), 0);
	ck_assert_str_eq(idmap_domain(m), idmap_host_domain(dom, sizeof(dom)));
	ck_assert_uint_gt(strlen(idmap_domain(m)), 0);
	ck_assert_ptr_null(strchr(idmap_domain(m), '@'));
	idmap_destroy(m);
}
END_TEST

START_TEST(names_in)
{
	struct idmap *m = mk(false, 4242);

	/* known names, with our domain (any case) or none */
	ck_assert_int_eq(in(m, IDMAP_USER, "root@" DOM, true), 0);
	ck_assert_int_eq(in(m, IDMAP_USER, "root@EXAMPLE.Org", true), 0);
	ck_assert_int_eq(in(m, IDMAP_USER, "root", true), 0);
	ck_assert_int_eq(in(m, IDMAP_USER, "daemon@" DOM, true), 1);
	ck_assert_int_eq(in(m, IDMAP_GROUP, "daemon@" DOM, true), 1);
	ck_assert_int_eq(in(m, IDMAP_GROUP, "nogroup@" DOM, true), 65534);
	/* numbers: always; not with a leading zero or past 2^32 - 2 */
	ck_assert_int_eq(in(m, IDMAP_USER, "0", true), 0);
	ck_assert_int_eq(in(m, IDMAP_USER, "4294967294", true), 4294967294u);
	ck_assert_int_eq(in(m, IDMAP_USER, "4294967295", true), -1);
	ck_assert_int_eq(in(m, IDMAP_USER, "99999999999", true), -1);
	ck_assert_int_eq(in(m, IDMAP_USER, "007", true), -1);
	ck_assert_int_eq(in(m, IDMAP_USER, "-1", true), -1);
	ck_assert_int_eq(in(m, IDMAP_USER, " 12", true), -1);
	ck_assert_int_eq(in(m, IDMAP_GROUP, "55@" DOM, true), 55);
	/* nobody is the anonymous id (option), a user or a group */
	ck_assert_int_eq(in(m, IDMAP_USER, "nobody", true), 4242);
	ck_assert_int_eq(in(m, IDMAP_GROUP, "nobody@" DOM, true), 4242);
	/* names that do not exist: refused when strict, else the anonymous id */
	ck_assert_int_eq(in(m, IDMAP_USER, "no-such-user-loligo@" DOM, true), -1);
	ck_assert_int_eq(in(m, IDMAP_USER, "no-such-user-loligo@" DOM, false), 4242);
	ck_assert_int_eq(in(m, IDMAP_GROUP, "no-such-group-loligo", true), -1);
	ck_assert_int_eq(in(m, IDMAP_GROUP, "no-such-group-loligo", false), 4242);
	ck_assert_int_eq(in(m, IDMAP_USER, "@" DOM, true), -1);
	ck_assert_int_eq(in(m, IDMAP_USER, "", true), -2);
	/* another domain, even for a name or number we know */
	ck_assert_int_eq(in(m, IDMAP_USER, "root@other.org", true), -1);
	ck_assert_int_eq(in(m, IDMAP_USER, "root@other.org", false), 4242);
	ck_assert_int_eq(in(m, IDMAP_USER, "root@example.org.evil", true), -1);
	ck_assert_int_eq(in(m, IDMAP_USER, "1000@other.org", true), -1);
	ck_assert_int_eq(in(m, IDMAP_GROUP, "nobody@other.org", true), -1);
	/* the last '@' separates the domain */
	ck_assert_int_eq(in(m, IDMAP_USER, "root@x@" DOM, true), -1);
	/* a name too long for any system */
	{
		char longname[400];

		memset(longname, 'a', 300);
		snprintf(longname + 300, sizeof(longname) - 300, "@%s", DOM);
		ck_assert_int_eq(in(m, IDMAP_USER, longname, true), -1);
	}
	/* and without a map (numbers and nobody only, as the gateway before) */
	ck_assert_int_eq(in(NULL, IDMAP_USER, "1234", true), 1234);
	ck_assert_int_eq(in(NULL, IDMAP_USER, "nobody", true), 65534);
	ck_assert_int_eq(in(NULL, IDMAP_USER, "root", true), -1);
	idmap_destroy(m);
}
END_TEST

/* ---- the cache, with a backend that counts and a clock the test moves ------------------- */

static uint64_t clk = 1000000000000ull;
static int calls;
static pthread_mutex_t blk_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t blk_cond = PTHREAD_COND_INITIALIZER;
static bool blk_entered, blk_release;

static uint64_t fake_now(void)
{
	return __atomic_load_n(&clk, __ATOMIC_SEQ_CST);
}

static int fake_id_to_name(void *arg, enum idmap_kind k, uint32_t id, char *buf, size_t len)
{
	(void)arg;
	__atomic_fetch_add(&calls, 1, __ATOMIC_SEQ_CST);
	if (id == 99) {                  /* a slow directory server: wait for the test */
		pthread_mutex_lock(&blk_lock);
		blk_entered = true;
		pthread_cond_broadcast(&blk_cond);
		while (!blk_release)
			pthread_cond_wait(&blk_cond, &blk_lock);
		pthread_mutex_unlock(&blk_lock);
	}
	if (id >= 1000)
		return -ENOENT;
	if (id == 7)
		return -EIO;
	snprintf(buf, len, "%s%u", k == IDMAP_USER ? "u" : "g", id);
	return 0;
}

static int fake_name_to_id(void *arg, enum idmap_kind k, const char *name, uint32_t *id)
{
	(void)arg;
	(void)k;
	__atomic_fetch_add(&calls, 1, __ATOMIC_SEQ_CST);
	if (!strcmp(name, "down"))
		return -EIO;
	if (name[0] != 'u' && name[0] != 'g')
		return -ENOENT;
	*id = (uint32_t)atoi(name + 1);
	return 0;
}

static const struct idmap_backend fake = { fake_id_to_name, fake_name_to_id, NULL };

static struct idmap *mk_fake(unsigned int cache_max, struct idmap_stats *st)
{
	struct idmap_params p = { .domain = DOM, .anon_uid = 65534, .anon_gid = 65534, .ttl_ns = 10000000000ull,
				  .cache_max = cache_max, .backend = &fake, .now = fake_now, .stats = st };
	struct idmap *m;

	calls = 0;
	ck_assert_int_eq(idmap_create(&p, &m), 0);
	return m;
}

START_TEST(cache_ttl_and_bound)
{
	struct idmap_stats st;
	struct idmap *m;

	memset(&st, 0, sizeof(st));
	m = mk_fake(3, &st);
	ck_assert_str_eq(out(m, IDMAP_USER, 5, false), "u5@" DOM);
	ck_assert_str_eq(out(m, IDMAP_USER, 5, false), "u5@" DOM);
	ck_assert_str_eq(out(m, IDMAP_USER, 5, false), "u5@" DOM);
	ck_assert_int_eq(calls, 1);             /* the hot path does not ask NSS again */
	ck_assert_uint_eq(perf_get(&st.lookups), 1);
	ck_assert_uint_eq(perf_get(&st.hits), 2);
	/* users and groups are different keys; so are the two directions */
	ck_assert_str_eq(out(m, IDMAP_GROUP, 5, false), "g5@" DOM);
	ck_assert_int_eq(calls, 2);
	ck_assert_int_eq(in(m, IDMAP_USER, "u5@" DOM, true), 5);
	ck_assert_int_eq(calls, 3);
	ck_assert_int_eq(in(m, IDMAP_USER, "u5", true), 5);
	ck_assert_int_eq(calls, 3);
	ck_assert_str_eq(out(m, IDMAP_USER, 5, false), "u5@" DOM);   /* uid 5 used last, group 5 least */
	ck_assert_int_eq(calls, 3);
	/* numbers and nobody never ask */
	ck_assert_int_eq(in(m, IDMAP_USER, "77", true), 77);
	ck_assert_str_eq(out(m, IDMAP_USER, 5, true), "5");
	ck_assert_int_eq(calls, 3);
	/* bounded: a fourth key drops the least recently used (group 5) */
	ck_assert_str_eq(out(m, IDMAP_USER, 6, false), "u6@" DOM);
	ck_assert_int_eq(calls, 4);
	ck_assert_str_eq(out(m, IDMAP_USER, 5, false), "u5@" DOM);
	ck_assert_int_eq(calls, 4);
	ck_assert_str_eq(out(m, IDMAP_GROUP, 5, false), "g5@" DOM);
	ck_assert_int_eq(calls, 5);
	/* expiry: past the TTL, NSS is asked again */
	__atomic_fetch_add(&clk, 10000000001ull, __ATOMIC_SEQ_CST);
	ck_assert_str_eq(out(m, IDMAP_GROUP, 5, false), "g5@" DOM);
	ck_assert_int_eq(calls, 6);
	ck_assert_str_eq(out(m, IDMAP_GROUP, 5, false), "g5@" DOM);
	ck_assert_int_eq(calls, 6);
	idmap_destroy(m);
}
END_TEST

START_TEST(cache_negative_and_failures)
{
	struct idmap *m = mk_fake(16, NULL);

	/* no name: the number, and asked once */
	ck_assert_str_eq(out(m, IDMAP_USER, 5000, false), "5000");
	ck_assert_str_eq(out(m, IDMAP_USER, 5000, false), "5000");
	ck_assert_int_eq(calls, 1);
	ck_assert_int_eq(in(m, IDMAP_USER, "zed@" DOM, true), -1);
	ck_assert_int_eq(in(m, IDMAP_USER, "zed@" DOM, false), 65534);
	ck_assert_int_eq(calls, 2);
	/* another domain is refused without asking */
	ck_assert_int_eq(in(m, IDMAP_USER, "u1@other.org", true), -1);
	ck_assert_int_eq(calls, 2);
	/* NSS failing (LDAP down): a number out, EAGAIN in; neither cached */
	ck_assert_str_eq(out(m, IDMAP_USER, 7, false), "7");
	ck_assert_str_eq(out(m, IDMAP_USER, 7, false), "7");
	ck_assert_int_eq(calls, 4);
	{
		uint32_t id;

		ck_assert_int_eq(idmap_owner_to_id(m, IDMAP_USER, "down@" DOM, true, &id), -EAGAIN);
		ck_assert_int_eq(idmap_owner_to_id(m, IDMAP_USER, "down@" DOM, true, &id), -EAGAIN);
		ck_assert_int_eq(calls, 6);
	}
	idmap_destroy(m);
	/* no cache at all: every lookup asks */
	m = mk_fake(0, NULL);
	ck_assert_str_eq(out(m, IDMAP_USER, 5, false), "u5@" DOM);
	ck_assert_str_eq(out(m, IDMAP_USER, 5, false), "u5@" DOM);
	ck_assert_int_eq(calls, 2);
	idmap_destroy(m);
}
END_TEST

static void *slow_lookup(void *arg)
{
	static char buf[IDMAP_OWNER_MAX];

	idmap_id_to_owner(arg, IDMAP_USER, 99, false, buf, sizeof(buf));
	return buf;
}

/*
 * While one thread waits for NSS (a slow LDAP), others are answered from
 * the cache and ask NSS themselves: no lock is held across the call.
 * Held, this test would hang in the cached lookup (check's timeout).
 */
START_TEST(nss_called_without_the_lock)
{
	struct idmap *m = mk_fake(16, NULL);
	pthread_t t;
	char *r;

	ck_assert_str_eq(out(m, IDMAP_USER, 5, false), "u5@" DOM);
	ck_assert_int_eq(pthread_create(&t, NULL, slow_lookup, m), 0);
	pthread_mutex_lock(&blk_lock);
	while (!blk_entered)
		pthread_cond_wait(&blk_cond, &blk_lock);
	pthread_mutex_unlock(&blk_lock);
	ck_assert_str_eq(out(m, IDMAP_USER, 5, false), "u5@" DOM);      /* a hit */
	ck_assert_str_eq(out(m, IDMAP_GROUP, 6, false), "g6@" DOM);     /* a miss */
	ck_assert_int_eq(in(m, IDMAP_USER, "u8@" DOM, true), 8);
	pthread_mutex_lock(&blk_lock);
	blk_release = true;
	pthread_cond_broadcast(&blk_cond);
	pthread_mutex_unlock(&blk_lock);
	ck_assert_int_eq(pthread_join(t, (void **)&r), 0);
	ck_assert_str_eq(r, "u99@" DOM);
	idmap_destroy(m);
}
END_TEST

/* Unknown names are logged at most once a second, with the count of the rest. */
START_TEST(unknown_names_logged_at_a_bounded_rate)
{
	char path[] = "/tmp/loligo-test-idmap-XXXXXX", line[1024];
	struct idmap_stats st;
	struct idmap *m;
	int fd = mkstemp(path), n = 0;
	FILE *f;

	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(log_set_file(path), 0);
	memset(&st, 0, sizeof(st));
	m = mk_fake(16, &st);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(in(m, IDMAP_USER, "x@other.org", true), -1);
	__atomic_fetch_add(&clk, 1000000000ull, __ATOMIC_SEQ_CST);
	ck_assert_int_eq(in(m, IDMAP_USER, "y@other.org", false), 65534);
	ck_assert_uint_eq(perf_get(&st.unknown), 6);
	idmap_destroy(m);
	ck_assert_int_eq(log_set_file(NULL), 0);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "nfs4 idmap:"))
			continue;
		n++;
		if (n == 1)
			ck_assert_msg(strstr(line, "'x@other.org' is of another domain (domain " DOM "): NFS4ERR_BADOWNER (0 more"),
				      "%s", line);
		else
			ck_assert_msg(strstr(line, "'y@other.org' is of another domain (domain " DOM "): mapped to 65534 (4 more"),
				      "%s", line);
	}
	fclose(f);
	unlink(path);
	ck_assert_int_eq(n, 2);
}
END_TEST

/* ---- SETATTR's decoder over the map ---------------------------------------------------- */

static void put_owners(struct xdr_enc *e, const char *owner, const char *group)
{
	struct xdr_enc v;
	uint32_t w[3] = { 0, 0, 0 };

	xdr_enc_init(&v, 4096);
	if (owner) {
		w[1] |= 1u << (FATTR4_OWNER - 32);
		xdr_put_string(&v, owner);
	}
	if (group) {
		w[1] |= 1u << (FATTR4_OWNER_GROUP - 32);
		xdr_put_string(&v, group);
	}
	xdr_put_bitmap(e, w, 3);
	xdr_put_opaque(e, v.buf, (uint32_t)v.len);
	xdr_enc_free(&v);
}

static uint32_t decode(struct idmap *m, const char *owner, const char *group, struct nfs4_sattr *s)
{
	struct xdr_enc e;
	struct xdr_dec d;
	uint32_t st;

	xdr_enc_init(&e, 4096);
	put_owners(&e, owner, group);
	xdr_dec_init(&d, e.buf, e.len);
	st = nfs4_sattr_decode(&d, m, s);
	xdr_enc_free(&e);
	return st;
}

START_TEST(sattr_owner_names)
{
	struct idmap *m = mk(true, 65534);
	struct nfs4_sattr s;

	ck_assert_uint_eq(decode(m, "root@" DOM, "daemon@" DOM, &s), NFS4_OK);
	ck_assert_int_eq(s.mask, LC_SET_UID | LC_SET_GID);
	ck_assert_uint_eq(s.a.uid, 0);
	ck_assert_uint_eq(s.a.gid, 1);
	ck_assert_uint_eq(decode(m, "daemon", "nogroup", &s), NFS4_OK);
	ck_assert_uint_eq(s.a.uid, 1);
	ck_assert_uint_eq(s.a.gid, 65534);
	ck_assert_uint_eq(decode(m, "1234", "4321@" DOM, &s), NFS4_OK);
	ck_assert_uint_eq(s.a.uid, 1234);
	ck_assert_uint_eq(s.a.gid, 4321);
	ck_assert_uint_eq(decode(m, "no-such-user-loligo@" DOM, NULL, &s), NFS4ERR_BADOWNER);
	ck_assert_uint_eq(decode(m, NULL, "no-such-group-loligo@" DOM, &s), NFS4ERR_BADOWNER);
	ck_assert_uint_eq(decode(m, "root@other.org", NULL, &s), NFS4ERR_BADOWNER);
	ck_assert_uint_eq(decode(m, "", NULL, &s), NFS4ERR_INVAL);
	idmap_destroy(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("idmap");
	TCase *t;
	SRunner *sr;
	int failed;

	t = tcase_create("nss");
	tcase_add_test(t, ids_out_as_names);
	tcase_add_test(t, disable_idmapping);
	tcase_add_test(t, defaults_are_knfsds);
	tcase_add_test(t, names_in);
	tcase_add_test(t, sattr_owner_names);
	suite_add_tcase(s, t);
	t = tcase_create("cache");
	tcase_add_test(t, cache_ttl_and_bound);
	tcase_add_test(t, cache_negative_and_failures);
	tcase_add_test(t, nss_called_without_the_lock);
	tcase_add_test(t, unknown_names_logged_at_a_bounded_rate);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
