/*
 * test_export.c - nfs_gw/export: parsing nfs_exports fails closed with one
 * line naming the export and the field; knfsd's defaults (ro,
 * root_squash, secure); client rules; the NFSv4 pseudo tree; lookups by id
 * and by path; the `exports` listing; and the table in force replaced
 * while a request still holds the old one.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "nfs_gw/export/export.h"
#include "nfs_gw/rpc/rpc.h"

static struct sockaddr_storage v4(const char *a)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *s = (struct sockaddr_in *)&ss;

	memset(&ss, 0, sizeof(ss));
	s->sin_family = AF_INET;
	inet_pton(AF_INET, a, &s->sin_addr);
	return ss;
}

static struct sockaddr_storage v6(const char *a)
{
	struct sockaddr_storage ss;
	struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	s->sin6_family = AF_INET6;
	inet_pton(AF_INET6, a, &s->sin6_addr);
	return ss;
}

START_TEST(defaults_are_knfsd_s)
{
	struct nfs_exports *x;
	struct sockaddr_storage p = v4("10.1.2.3");
	char err[512];

	ck_assert_int_eq(nfs_exports_parse("id=1,path=/", &x, err, sizeof(err)), 0);
	ck_assert_uint_eq(x->n, 1);
	ck_assert_ptr_eq(x->root, &x->e[0]);
	ck_assert(x->e[0].ro);
	ck_assert(x->e[0].root_squash);
	ck_assert(!x->e[0].all_squash);
	ck_assert(!x->e[0].insecure);            /* secure: privileged ports only */
	ck_assert_uint_eq(x->e[0].anon_uid, 65534);
	ck_assert_uint_eq(x->e[0].anon_gid, 65534);
	ck_assert_str_eq(x->e[0].pseudo, "/");
	ck_assert(nfs_export_allows(&x->e[0], &p));  /* clients=* */
	nfs_exports_put(x);
	/* and what vstart and the tests say explicitly */
	ck_assert_int_eq(nfs_exports_parse("id=7, path=/a//b/ , rw,no_root_squash,insecure,sec=sys", &x, err,
					   sizeof(err)), 0);
	ck_assert_uint_eq(x->e[0].id, 7);
	ck_assert_str_eq(x->e[0].path, "/a/b");
	ck_assert(!x->e[0].ro && !x->e[0].root_squash && x->e[0].insecure);
	ck_assert(!nfs_exports_want_gss(x));
	nfs_exports_put(x);
	/* a sec= list keeps its order; the flavours are enforced exactly */
	ck_assert_int_eq(nfs_exports_parse("id=8,path=/k,sec=krb5p:sys:krb5i", &x, err, sizeof(err)), 0);
	ck_assert_uint_eq(x->e[0].nsec, 3);
	ck_assert_uint_eq(x->e[0].sec[0], RPC_FLAVOR_KRB5P);
	ck_assert_uint_eq(x->e[0].sec[1], RPC_AUTH_SYS);
	ck_assert_uint_eq(x->e[0].sec[2], RPC_FLAVOR_KRB5I);
	ck_assert(nfs_exports_want_gss(x));
	{
		struct rpc_cred c = { .flavor = RPC_AUTH_NONE };
		char opts[256];

		ck_assert(nfs_export_sec_ok(&x->e[0], &c));          /* AUTH_NONE counts as sys */
		c.flavor = RPCSEC_GSS;
		c.gss_service = RPC_GSS_SVC_INTEGRITY;
		ck_assert(nfs_export_sec_ok(&x->e[0], &c));
		c.gss_service = RPC_GSS_SVC_NONE;
		ck_assert(!nfs_export_sec_ok(&x->e[0], &c));         /* krb5 is not listed */
		nfs_export_options(&x->e[0], opts, sizeof(opts));
		ck_assert_ptr_nonnull(strstr(opts, ",sec=krb5p:sys:krb5i"));
	}
	nfs_exports_put(x);
}
END_TEST

/* Each bad value: refused, and the one line says which export and field. */
START_TEST(bad_values_refused)
{
	static const struct {
		const char *spec, *want;
	} bad[] = {
		{ "id=1,path=/,bogus", "export 1 (id=1, path=/): unknown setting 'bogus'" },
		{ "id=1,path=/,colour=red", "export 1 (id=1, path=/): unknown setting 'colour='" },
		{ "id=1,path=/,clients=10.0.0.0/33", "export 1 (id=1, path=/): clients: bad prefix length '/33' in "
						     "'10.0.0.0/33' (0-32 for IPv4)" },
		{ "id=1,path=/,clients=10.0.0.0/", "clients: bad prefix length" },
		{ "id=1,path=/,clients=10.0.0.0/-1", "clients: bad prefix length" },
		{ "id=1,path=/,clients=::1/129", "(0-128 for IPv6)" },
		{ "id=1,path=/,clients=300.1.1.1", "clients: '300.1.1.1' is not an IPv4 or IPv6 address" },
		{ "id=1,path=/,clients=", "clients: empty" },
		{ "id=1,path=/,anonuid=-1", "anonuid: '-1' is not a number from 0 to 4294967294" },
		{ "id=1,path=/,anonuid=12x", "anonuid: '12x' is not a number" },
		{ "id=1,path=/,anongid=4294967295", "anongid: '4294967295' is not a number" },
		{ "id=1,path=/,anonuid=", "anonuid: '' is not a number" },
		{ "id=1,path=/,rw,ro", "export 1 (id=1, path=/): conflicting 'rw' and 'ro'" },
		{ "id=1,path=/,no_root_squash,root_squash", "conflicting 'no_root_squash' and 'root_squash'" },
		{ "id=1,path=/,secure,insecure", "conflicting 'secure' and 'insecure'" },
		{ "id=1,path=/,all_squash,no_all_squash", "conflicting 'all_squash' and 'no_all_squash'" },
		{ "id=1,path=/,ro,ro", "'ro' given twice" },
		{ "id=1,path=/,ro=1", "'ro' takes no value" },
		{ "id=1,path=/a,path=/b", "path given twice" },
		{ "id=1,path=relative", "path: 'relative' is not an absolute path" },
		{ "id=1,path=/a/../b", "path: '/a/../b' is not an absolute path" },
		{ "id=1,path=/,pseudo=x", "pseudo: 'x' is not an absolute path" },
		{ "id=1,path=/,sec=krb6", "sec: 'krb6' is not a flavour" },
		{ "id=1,path=/,sec=krb5:krb5", "sec: 'krb5' given twice" },
		{ "path=/", "export 1 (no id, path=/): no id=" },
		{ "id=1", "export 1 (id=1, no path): no path=" },
		{ "id=0,path=/", "id: '0' is not a number from 1 to 65535" },
		{ "id=65536,path=/", "id: '65536' is not a number" },
		{ "id=1,path=/a;id=1,path=/b", "export 2 (id=1, path=/b): id: export 1 has the same id" },
		{ "id=1,path=/a;id=2,path=/b,pseudo=/a", "export 2 (id=2, path=/b): pseudo: export 1 has the same pseudo" },
		{ "id=1,path=/a;id=2,path=/b,rw,ro", "export 2 (id=2, path=/b): conflicting" },
		{ "", "no export configured" },
		{ " ; ;", "no export configured" },
	};
	struct nfs_exports *x;
	char err[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		x = (struct nfs_exports *)0x1;
		err[0] = 0;
		ck_assert_msg(nfs_exports_parse(bad[i].spec, &x, err, sizeof(err)) == -EINVAL, "'%s' accepted",
			      bad[i].spec);
		ck_assert_ptr_eq(x, (struct nfs_exports *)0x1);   /* nothing handed out */
		ck_assert_msg(strstr(err, bad[i].want), "'%s': message '%s' lacks '%s'", bad[i].spec, err,
			      bad[i].want);
		ck_assert_msg(!strncmp(err, "nfs_exports: ", 13), "%s", err);
		ck_assert_msg(!strchr(err, '\n'), "one line: %s", err);
	}
}
END_TEST

START_TEST(client_rules)
{
	struct nfs_exports *x;
	char err[512];
	struct sockaddr_storage lo = v4("127.0.0.1"), ten = v4("10.200.0.1"), other = v4("192.168.1.6"),
				five = v4("192.168.1.5"), six = v6("fd00::1"), mapped = v6("::ffff:10.1.1.1");

	ck_assert_int_eq(nfs_exports_parse("id=1,path=/a,clients=127.0.0.1;"
					   "id=2,path=/b,clients=10.0.0.0/8|192.168.1.5|fd00::/8", &x, err, sizeof(err)), 0);
	ck_assert(nfs_export_allows(&x->e[0], &lo));
	ck_assert(!nfs_export_allows(&x->e[0], &ten));
	ck_assert(nfs_export_allows(&x->e[1], &ten));
	ck_assert(nfs_export_allows(&x->e[1], &five));
	ck_assert(!nfs_export_allows(&x->e[1], &other));
	ck_assert(nfs_export_allows(&x->e[1], &six));
	ck_assert(nfs_export_allows(&x->e[1], &mapped));   /* v4-mapped matches the v4 rule */
	ck_assert(!nfs_export_allows(&x->e[0], &six));
	nfs_exports_put(x);
}
END_TEST

START_TEST(pseudo_tree_and_lookups)
{
	struct nfs_exports *x;
	char err[512];
	const struct nfs_pnode *a, *b, *c;

	ck_assert_int_eq(nfs_exports_parse("id=10,path=/data,pseudo=/srv/data;"
					   " id=20 , path=/home , pseudo=/srv/home", &x, err, sizeof(err)), 0);
	ck_assert_uint_eq(x->n, 2);
	ck_assert_ptr_null(x->root);
	a = nfs_pnode_child(x, NFS_PSEUDO_ROOT, "srv");
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_null(a->exp);
	b = nfs_pnode_child(x, a->id, "data");
	c = nfs_pnode_child(x, a->id, "home");
	ck_assert_ptr_eq(b->exp, &x->e[0]);
	ck_assert_ptr_eq(c->exp, &x->e[1]);
	ck_assert_ptr_null(nfs_pnode_child(x, a->id, "nothere"));
	/* ids are what the config says, not positions */
	ck_assert_ptr_eq(nfs_export_by_id(x, 20), &x->e[1]);
	ck_assert_ptr_eq(nfs_export_by_id(x, 10), &x->e[0]);
	ck_assert_ptr_null(nfs_export_by_id(x, 1));
	ck_assert_ptr_null(nfs_export_by_id(x, 2));
	/* MOUNT paths: the path, else the pseudo path; never a subdirectory */
	ck_assert_ptr_eq(nfs_export_by_path(x, "/data"), &x->e[0]);
	ck_assert_ptr_eq(nfs_export_by_path(x, "//home/"), &x->e[1]);
	ck_assert_ptr_eq(nfs_export_by_path(x, "/srv/home"), &x->e[1]);
	ck_assert_ptr_null(nfs_export_by_path(x, "/data/sub"));
	ck_assert_ptr_null(nfs_export_by_path(x, "/"));
	ck_assert_ptr_null(nfs_export_by_path(x, "data"));
	ck_assert_ptr_null(nfs_export_by_path(x, "/data/../home"));
	nfs_exports_put(x);
}
END_TEST

START_TEST(listing)
{
	struct nfs_exports *x;
	struct json_object *a, *e, *v;
	char err[512];

	ck_assert_int_eq(nfs_exports_parse("id=3,path=/p,pseudo=/q,clients=10.0.0.0/8|127.0.0.1,rw,anonuid=7", &x, err,
					   sizeof(err)), 0);
	a = nfs_exports_json(x);
	ck_assert_int_eq((int)json_object_array_length(a), 1);
	e = json_object_array_get_idx(a, 0);
	ck_assert(json_object_object_get_ex(e, "id", &v));
	ck_assert_int_eq(json_object_get_int(v), 3);
	ck_assert(json_object_object_get_ex(e, "path", &v));
	ck_assert_str_eq(json_object_get_string(v), "/p");
	ck_assert(json_object_object_get_ex(e, "pseudo", &v));
	ck_assert_str_eq(json_object_get_string(v), "/q");
	ck_assert(json_object_object_get_ex(e, "clients", &v));
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(v, 0)), "10.0.0.0/8");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(v, 1)), "127.0.0.1");
	ck_assert(json_object_object_get_ex(e, "options", &v));
	ck_assert_str_eq(json_object_get_string(v), "rw,root_squash,no_all_squash,secure,anonuid=7,anongid=65534,sec=sys");
	json_object_put(a);
	nfs_exports_put(x);
}
END_TEST

/* A request that took the old table keeps it whole across a reload. */
START_TEST(set_replace)
{
	struct nfs_export_set s;
	struct nfs_exports *a, *b, *held;
	char err[512];

	ck_assert_int_eq(nfs_exports_parse("id=1,path=/a", &a, err, sizeof(err)), 0);
	ck_assert_int_eq(nfs_exports_parse("id=1,path=/b,rw", &b, err, sizeof(err)), 0);
	nfs_export_set_init(&s, a);
	held = nfs_export_set_get(&s);
	ck_assert_ptr_eq(held, a);
	nfs_export_set_replace(&s, b);
	ck_assert_uint_eq(s.generation, 2);
	ck_assert_str_eq(held->e[0].path, "/a");       /* still valid */
	nfs_exports_put(held);                         /* the last reference on a */
	held = nfs_export_set_get(&s);
	ck_assert_ptr_eq(held, b);
	ck_assert(!held->e[0].ro);
	nfs_exports_put(held);
	nfs_export_set_fini(&s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("export");
	TCase *t = tcase_create("export");
	SRunner *sr;
	int nf;

	tcase_add_test(t, defaults_are_knfsd_s);
	tcase_add_test(t, bad_values_refused);
	tcase_add_test(t, client_rules);
	tcase_add_test(t, pseudo_tree_and_lookups);
	tcase_add_test(t, listing);
	tcase_add_test(t, set_replace);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
