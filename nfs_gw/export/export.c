/*
 * export.c - parse and check nfs_exports, match client addresses, build
 * the NFSv4 pseudo filesystem, and keep the table in force (export.h).
 * Resolving export roots through the client library is in export_root.c,
 * so the parser links into programs that have no client (the CLI's
 * `config check`).
 *
 * The parser never guesses: each export is first scanned for its id= and
 * path= (so every message can name it), then each setting is checked
 * strictly (numbers in range and nothing after them, prefixes within the
 * address family, no setting twice, no pair of opposite flags), and only a
 * table where every export passed is returned.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "nfs_gw/export/export.h"
#include "nfs_gw/rpc/rpc.h"

/* ---- client rules --------------------------------------------------------- */

/* "*", "ADDR" or "ADDR/BITS"; a message in @why on failure. */
static int parse_rule(const char *s, struct nfs_client_rule *r, char *why, size_t wl)
{
	char buf[128], *slash, *end;
	unsigned int maxp;
	unsigned long p;

	memset(r, 0, sizeof(*r));
	if (!strcmp(s, "*"))
		return 0;
	if (strlen(s) >= sizeof(buf)) {
		snprintf(why, wl, "'%.40s...' is not an address", s);
		return -EINVAL;
	}
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash++ = 0;
	if (inet_pton(AF_INET, buf, r->addr) == 1) {
		r->family = AF_INET;
		maxp = 32;
	} else if (inet_pton(AF_INET6, buf, r->addr) == 1) {
		r->family = AF_INET6;
		maxp = 128;
	} else {
		snprintf(why, wl, "'%s' is not an IPv4 or IPv6 address (ADDR, ADDR/BITS or *)", buf);
		return -EINVAL;
	}
	r->prefix = maxp;
	if (slash) {
		errno = 0;
		p = strtoul(slash, &end, 10);
		if (!*slash || *end || errno || *slash == '-' || *slash == '+' || p > maxp) {
			snprintf(why, wl, "bad prefix length '/%s' in '%s' (0-%u for %s)", slash, s, maxp,
				 maxp == 32 ? "IPv4" : "IPv6");
			return -EINVAL;
		}
		r->prefix = (unsigned int)p;
	}
	return 0;
}

static bool prefix_match(const uint8_t *a, const uint8_t *b, unsigned int bits)
{
	unsigned int full = bits / 8, rest = bits % 8;

	if (memcmp(a, b, full))
		return false;
	if (rest) {
		uint8_t m = (uint8_t)(0xff << (8 - rest));

		return (a[full] & m) == (b[full] & m);
	}
	return true;
}

bool nfs_export_allows(const struct nfs_export *e, const struct sockaddr_storage *peer)
{
	uint8_t a4[4], a6[16];
	bool have4 = false;

	if (peer->ss_family == AF_INET) {
		memcpy(a4, &((const struct sockaddr_in *)peer)->sin_addr, 4);
		have4 = true;
	} else if (peer->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)peer;

		memcpy(a6, &s6->sin6_addr, 16);
		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
			memcpy(a4, a6 + 12, 4);
			have4 = true;
		}
	}
	for (unsigned int i = 0; i < e->nrules; i++) {
		const struct nfs_client_rule *r = &e->rules[i];

		if (r->family == 0)
			return true;
		if (r->family == AF_INET && have4 && prefix_match(a4, r->addr, r->prefix))
			return true;
		if (r->family == AF_INET6 && peer->ss_family == AF_INET6 && prefix_match(a6, r->addr, r->prefix))
			return true;
	}
	return false;
}

/* ---- paths ------------------------------------------------------------------ */

/* "/a//b/" -> "/a/b"; must be absolute, no "." or ".." components. */
static int norm_path(const char *in, char *out, size_t outsz)
{
	size_t o = 0;
	const char *p = in;

	if (*p != '/')
		return -EINVAL;
	while (*p) {
		const char *q;
		size_t n;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		q = strchr(p, '/');
		n = q ? (size_t)(q - p) : strlen(p);
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.') || n > 255)
			return -EINVAL;
		if (o + 1 + n + 1 > outsz)
			return -EINVAL;
		out[o++] = '/';
		memcpy(out + o, p, n);
		o += n;
		p += n;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = 0;
	return 0;
}

/* ---- one export --------------------------------------------------------------- */

/* Strict unsigned number in [0, max]. */
static bool parse_num(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

/* The settings that take no value, as exclusive pairs: [i][0] sets the field
 * to false, [i][1] to true.  Giving both of a pair is a conflict. */
enum { F_RO, F_ROOT_SQUASH, F_ALL_SQUASH, F_INSECURE, F_NFLAGS };
static const char *const flag_names[F_NFLAGS][2] = {
	[F_RO] = { "rw", "ro" },
	[F_ROOT_SQUASH] = { "no_root_squash", "root_squash" },
	[F_ALL_SQUASH] = { "no_all_squash", "all_squash" },
	[F_INSECURE] = { "secure", "insecure" },
};

static bool *flag_field(struct nfs_export *e, int f)
{
	switch (f) {
	case F_RO: return &e->ro;
	case F_ROOT_SQUASH: return &e->root_squash;
	case F_ALL_SQUASH: return &e->all_squash;
	default: return &e->insecure;
	}
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = 0;
	return s;
}

/* How the messages name an export: its position, and id/path if given. */
static void export_name(const char *spec, unsigned int pos, char *buf, size_t len)
{
	const char *id = strstr(spec, "id="), *path = strstr(spec, "path=");
	int il = 0, pl = 0;

	/* "id=" must start a setting ("anonuid=" contains it) */
	while (id && id != spec && id[-1] != ',' && id[-1] != ' ')
		id = strstr(id + 1, "id=");
	while (path && path != spec && path[-1] != ',' && path[-1] != ' ')
		path = strstr(path + 1, "path=");
	if (id)
		il = (int)strcspn(id + 3, ",");
	if (path)
		pl = (int)strcspn(path + 5, ",");
	snprintf(buf, len, "export %u (%s%.*s%s%s%.*s)", pos, id ? "id=" : "no id", il > 16 ? 16 : il,
		 id ? id + 3 : "", ", ", path ? "path=" : "no path", pl > 200 ? 200 : pl, path ? path + 5 : "");
}

#define FAIL(...)                                              \
	do {                                                   \
		snprintf(why, sizeof(why), __VA_ARGS__);       \
		goto bad;                                      \
	} while (0)

static uint32_t sec_flavor(const char *f)
{
	if (!strcmp(f, "sys"))
		return RPC_AUTH_SYS;
	if (!strcmp(f, "krb5"))
		return RPC_FLAVOR_KRB5;
	if (!strcmp(f, "krb5i"))
		return RPC_FLAVOR_KRB5I;
	if (!strcmp(f, "krb5p"))
		return RPC_FLAVOR_KRB5P;
	return 0;
}

static const char *sec_name(uint32_t fl)
{
	switch (fl) {
	case RPC_FLAVOR_KRB5: return "krb5";
	case RPC_FLAVOR_KRB5I: return "krb5i";
	case RPC_FLAVOR_KRB5P: return "krb5p";
	default: return "sys";
	}
}

bool nfs_export_sec_ok(const struct nfs_export *e, const struct rpc_cred *rc)
{
	uint32_t fl = rc->flavor == RPC_AUTH_NONE ? RPC_AUTH_SYS : rpc_cred_pseudoflavor(rc);

	for (unsigned int i = 0; i < e->nsec; i++)
		if (e->sec[i] == fl)
			return true;
	return false;
}

bool nfs_exports_want_gss(const struct nfs_exports *x)
{
	for (unsigned int i = 0; i < x->n; i++)
		for (unsigned int j = 0; j < x->e[i].nsec; j++)
			if (x->e[i].sec[j] != RPC_AUTH_SYS)
				return true;
	return false;
}

static int parse_one(char *spec, unsigned int pos, struct nfs_export *e, char *err, size_t errlen)
{
	char name[300], why[400], *save = NULL, *tok;
	bool seen_flag[F_NFLAGS][2] = { { false } };
	bool have_id = false, have_path = false, have_pseudo = false, have_clients = false, have_uid = false,
	     have_gid = false, have_sec = false;
	uint64_t v;

	export_name(spec, pos, name, sizeof(name));
	memset(e, 0, sizeof(*e));
	/* knfsd's defaults */
	e->ro = true;
	e->root_squash = true;
	e->insecure = false;
	e->anon_uid = e->anon_gid = 65534;
	e->sec[0] = RPC_AUTH_SYS;
	e->nsec = 1;
	for (tok = strtok_r(spec, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *val;
		int f, k;

		tok = trim(tok);
		if (!*tok)
			continue;
		val = strchr(tok, '=');
		if (val) {
			*val++ = 0;
			val = trim(val);
			tok = trim(tok);
		}
		for (f = 0; f < F_NFLAGS; f++)
			for (k = 0; k < 2; k++)
				if (!strcmp(tok, flag_names[f][k]))
					goto flag;
		if (!val)
			FAIL("unknown setting '%s' (flags: ro rw root_squash no_root_squash all_squash "
			     "no_all_squash secure insecure; settings: id= path= pseudo= clients= anonuid= anongid= sec=)",
			     tok);
		if (!strcmp(tok, "id")) {
			if (have_id)
				FAIL("id given twice");
			if (!parse_num(val, 65535, &v) || v == 0)
				FAIL("id: '%s' is not a number from 1 to 65535", val);
			e->id = (uint16_t)v;
			have_id = true;
		} else if (!strcmp(tok, "path")) {
			if (have_path)
				FAIL("path given twice");
			if (norm_path(val, e->path, sizeof(e->path)))
				FAIL("path: '%s' is not an absolute path without . or .. components", val);
			have_path = true;
		} else if (!strcmp(tok, "pseudo")) {
			if (have_pseudo)
				FAIL("pseudo given twice");
			if (norm_path(val, e->pseudo, sizeof(e->pseudo)))
				FAIL("pseudo: '%s' is not an absolute path without . or .. components", val);
			have_pseudo = true;
		} else if (!strcmp(tok, "clients")) {
			char *s2 = NULL, *c, rwhy[200];

			if (have_clients)
				FAIL("clients given twice (list them with '|')");
			have_clients = true;
			for (c = strtok_r(val, "| ", &s2); c; c = strtok_r(NULL, "| ", &s2)) {
				if (e->nrules == NFS_EXPORT_RULES_MAX)
					FAIL("clients: more than %d rules", NFS_EXPORT_RULES_MAX);
				if (parse_rule(c, &e->rules[e->nrules++], rwhy, sizeof(rwhy)))
					FAIL("clients: %s", rwhy);
			}
			if (!e->nrules)
				FAIL("clients: empty (give ADDR, ADDR/BITS or *)");
		} else if (!strcmp(tok, "anonuid") || !strcmp(tok, "anongid")) {
			bool uid = tok[4] == 'u';

			if (uid ? have_uid : have_gid)
				FAIL("%s given twice", tok);
			/* (uid_t)-1 means "no change" to chown: not an identity */
			if (!parse_num(val, 0xfffffffeu, &v))
				FAIL("%s: '%s' is not a number from 0 to 4294967294", tok, val);
			if (uid) {
				e->anon_uid = (uint32_t)v;
				have_uid = true;
			} else {
				e->anon_gid = (uint32_t)v;
				have_gid = true;
			}
		} else if (!strcmp(tok, "sec")) {
			char *fs, *s3 = NULL;

			if (have_sec)
				FAIL("sec given twice");
			e->nsec = 0;             /* not the default any more */
			for (fs = strtok_r(val, ":", &s3); fs; fs = strtok_r(NULL, ":", &s3)) {
				uint32_t fl = sec_flavor(fs);

				if (!fl)
					FAIL("sec: '%s' is not a flavour (sys, krb5, krb5i, krb5p, ':'-separated)", fs);
				for (unsigned int i = 0; i < e->nsec; i++)
					if (e->sec[i] == fl)
						FAIL("sec: '%s' given twice", fs);
				e->sec[e->nsec++] = fl;   /* at most 4 distinct ones */
			}
			if (!e->nsec)
				FAIL("sec: empty (give sys, krb5, krb5i and/or krb5p)");
			have_sec = true;
		} else {
			FAIL("unknown setting '%s='", tok);
		}
		continue;
flag:
		if (val)
			FAIL("'%s' takes no value", tok);
		if (seen_flag[f][k])
			FAIL("'%s' given twice", tok);
		if (seen_flag[f][!k])
			FAIL("conflicting '%s' and '%s'", flag_names[f][!k], flag_names[f][k]);
		seen_flag[f][k] = true;
		*flag_field(e, f) = k;
	}
	if (!have_id)
		FAIL("no id= (give every export a stable id=N, 1-65535: file handles carry it)");
	if (!have_path)
		FAIL("no path= (the directory inside loligo to export)");
	if (!have_pseudo)
		strcpy(e->pseudo, e->path);
	if (e->nrules == 0)
		e->nrules = 1;           /* rules[0] is all zeroes: '*' */
	return 0;
bad:
	snprintf(err, errlen, "nfs_exports: %s: %s", name, why);
	return -EINVAL;
}

/* ---- the table --------------------------------------------------------------- */

static uint32_t pnode_add(struct nfs_exports *x, uint32_t parent, const char *name, size_t n)
{
	struct nfs_pnode *p;

	for (unsigned int i = 0; i < x->npnodes; i++) {
		p = &x->pn[i];
		if (p->parent == parent && strlen(p->name) == n && !memcmp(p->name, name, n))
			return p->id;
	}
	if (x->npnodes == NFS_PSEUDO_MAX)
		return 0;
	p = &x->pn[x->npnodes];
	p->id = ++x->npnodes;
	p->parent = parent;
	memcpy(p->name, name, n);
	p->name[n] = 0;
	p->exp = NULL;
	return p->id;
}

/* The pseudo tree: node 1 is the root, one node per pseudo path component. */
static int build_pseudo(struct nfs_exports *x, char *err, size_t errlen)
{
	pnode_add(x, 0, "", 0);
	for (unsigned int i = 0; i < x->n; i++) {
		struct nfs_export *e = &x->e[i];
		uint32_t node = NFS_PSEUDO_ROOT;
		const char *p = e->pseudo;

		if (!strcmp(e->pseudo, "/")) {
			x->root = e;
			e->pnode = 0;
			continue;
		}
		while (*p) {
			const char *q;
			size_t n;

			while (*p == '/')
				p++;
			if (!*p)
				break;
			q = strchr(p, '/');
			n = q ? (size_t)(q - p) : strlen(p);
			node = pnode_add(x, node, p, n);
			if (!node) {
				snprintf(err, errlen, "nfs_exports: export %u (id=%u, path=%s): pseudo: the pseudo "
					 "tree has more than %d directories", i + 1, e->id, e->path, NFS_PSEUDO_MAX);
				return -EINVAL;
			}
			p += n;
		}
		x->pn[node - 1].exp = e;
		e->pnode = node;
	}
	if (x->root)   /* one export at "/" hides the pseudo tree (the others: MOUNT only) */
		x->npnodes = 1;
	return 0;
}

int nfs_exports_parse(const char *spec, struct nfs_exports **out, char *err, size_t errlen)
{
	struct nfs_exports *x = calloc(1, sizeof(*x));
	char *copy = strdup(spec ? spec : ""), *save = NULL, *one;
	unsigned int pos = 0;
	int r = -ENOMEM;

	err[0] = 0;
	if (!x || !copy)
		goto out;
	x->e = calloc(NFS_EXPORTS_MAX, sizeof(*x->e));
	x->pn = calloc(NFS_PSEUDO_MAX, sizeof(*x->pn));
	if (!x->e || !x->pn)
		goto out;
	atomic_init(&x->refs, 1);
	pthread_mutex_init(&x->lock, NULL);
	r = 0;
	for (one = strtok_r(copy, ";", &save); one; one = strtok_r(NULL, ";", &save)) {
		struct nfs_export *e;
		char *t = trim(one);

		if (!*t)
			continue;
		pos++;
		if (x->n == NFS_EXPORTS_MAX) {
			snprintf(err, errlen, "nfs_exports: more than %d exports", NFS_EXPORTS_MAX);
			r = -EINVAL;
			goto out;
		}
		e = &x->e[x->n];
		r = parse_one(t, pos, e, err, errlen);
		if (r)
			goto out;
		for (unsigned int i = 0; i < x->n; i++) {
			const char *what = x->e[i].id == e->id ? "id" : !strcmp(x->e[i].pseudo, e->pseudo) ? "pseudo" : NULL;

			if (what) {
				snprintf(err, errlen, "nfs_exports: export %u (id=%u, path=%s): %s: export %u has the "
					 "same %s", pos, e->id, e->path, what, i + 1, what);
				r = -EINVAL;
				goto out;
			}
		}
		x->n++;
	}
	if (x->n == 0) {
		snprintf(err, errlen, "nfs_exports: no export configured (nothing would be served; "
			 "e.g. nfs_exports = id=1,path=/)");
		r = -EINVAL;
		goto out;
	}
	r = build_pseudo(x, err, errlen);
out:
	free(copy);
	if (r) {
		if (r == -ENOMEM && !err[0])
			snprintf(err, errlen, "nfs_exports: out of memory");
		if (x && x->e && x->pn) {
			nfs_exports_put(x);
		} else if (x) {
			free(x->e);
			free(x->pn);
			free(x);
		}
		return r;
	}
	*out = x;
	return 0;
}

void nfs_exports_put(struct nfs_exports *x)
{
	if (!x || atomic_fetch_sub_explicit(&x->refs, 1, memory_order_acq_rel) != 1)
		return;
	pthread_mutex_destroy(&x->lock);
	free(x->stc);
	free(x->e);
	free(x->pn);
	free(x);
}

const struct nfs_export *nfs_export_by_id(const struct nfs_exports *x, uint16_t id)
{
	for (unsigned int i = 0; i < x->n; i++)
		if (x->e[i].id == id)
			return &x->e[i];
	return NULL;
}

const struct nfs_export *nfs_export_by_path(const struct nfs_exports *x, const char *path)
{
	char p[PATH_MAX];
	unsigned int i;

	if (norm_path(path, p, sizeof(p)))
		return NULL;
	for (i = 0; i < x->n; i++)
		if (!strcmp(x->e[i].path, p))
			return &x->e[i];
	for (i = 0; i < x->n; i++)
		if (!strcmp(x->e[i].pseudo, p))
			return &x->e[i];
	return NULL;
}

const struct nfs_pnode *nfs_pnode_get(const struct nfs_exports *x, uint32_t id)
{
	if (id == 0 || id > x->npnodes)
		return NULL;
	return &x->pn[id - 1];
}

const struct nfs_pnode *nfs_pnode_child(const struct nfs_exports *x, uint32_t id, const char *name)
{
	for (unsigned int i = 0; i < x->npnodes; i++)
		if (x->pn[i].parent == id && x->pn[i].id != id && !strcmp(x->pn[i].name, name))
			return &x->pn[i];
	return NULL;
}

/* ---- listing ------------------------------------------------------------------ */

void nfs_export_options(const struct nfs_export *e, char *buf, size_t len)
{
	char sec[64] = "";
	size_t o = 0;

	for (unsigned int i = 0; i < e->nsec && o < sizeof(sec); i++)
		o += (size_t)snprintf(sec + o, sizeof(sec) - o, "%s%s", i ? ":" : "", sec_name(e->sec[i]));
	snprintf(buf, len, "%s,%s,%s,%s,anonuid=%u,anongid=%u,sec=%s", e->ro ? "ro" : "rw",
		 e->root_squash ? "root_squash" : "no_root_squash", e->all_squash ? "all_squash" : "no_all_squash",
		 e->insecure ? "insecure" : "secure", e->anon_uid, e->anon_gid, sec);
}

void nfs_export_rule_str(const struct nfs_client_rule *r, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (!r->family) {
		snprintf(buf, len, "*");
		return;
	}
	inet_ntop(r->family, r->addr, a, sizeof(a));
	if (r->prefix == (r->family == AF_INET ? 32u : 128u))
		snprintf(buf, len, "%s", a);
	else
		snprintf(buf, len, "%s/%u", a, r->prefix);
}

struct json_object *nfs_exports_json(const struct nfs_exports *x)
{
	struct json_object *arr = json_object_new_array();
	char buf[256];

	for (unsigned int i = 0; i < x->n; i++) {
		const struct nfs_export *e = &x->e[i];
		struct json_object *o = json_object_new_object(), *cl = json_object_new_array();

		json_object_object_add(o, "id", json_object_new_int(e->id));
		json_object_object_add(o, "path", json_object_new_string(e->path));
		json_object_object_add(o, "pseudo", json_object_new_string(e->pseudo));
		for (unsigned int k = 0; k < e->nrules; k++) {
			nfs_export_rule_str(&e->rules[k], buf, sizeof(buf));
			json_object_array_add(cl, json_object_new_string(buf));
		}
		json_object_object_add(o, "clients", cl);
		nfs_export_options(e, buf, sizeof(buf));
		json_object_object_add(o, "options", json_object_new_string(buf));
		json_object_array_add(arr, o);
	}
	return arr;
}

/* ---- the table in force ------------------------------------------------------- */

void nfs_export_set_init(struct nfs_export_set *s, struct nfs_exports *x)
{
	pthread_mutex_init(&s->lock, NULL);
	s->cur = x;
	s->generation = 1;
}

void nfs_export_set_fini(struct nfs_export_set *s)
{
	nfs_exports_put(s->cur);
	s->cur = NULL;
	pthread_mutex_destroy(&s->lock);
}

struct nfs_exports *nfs_export_set_get(struct nfs_export_set *s)
{
	struct nfs_exports *x;

	pthread_mutex_lock(&s->lock);
	x = nfs_exports_get(s->cur);
	pthread_mutex_unlock(&s->lock);
	return x;
}

void nfs_export_set_replace(struct nfs_export_set *s, struct nfs_exports *x)
{
	struct nfs_exports *old;

	pthread_mutex_lock(&s->lock);
	old = s->cur;
	s->cur = x;
	s->generation++;
	pthread_mutex_unlock(&s->lock);
	nfs_exports_put(old);
}
