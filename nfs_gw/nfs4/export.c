/*
 * export.c - parse nfs_exports, match client addresses, resolve export
 * roots and build the pseudo filesystem (export.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "nfs_gw/nfs4/export.h"

static int fail(char *err, size_t errlen, const char *fmt, const char *what)
{
	snprintf(err, errlen, fmt, what);
	return -EINVAL;
}

static int parse_rule(const char *s, struct nfs4_client_rule *r)
{
	char buf[128], *slash;
	unsigned int maxp;

	memset(r, 0, sizeof(*r));
	if (!strcmp(s, "*"))
		return 0;
	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
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
		return -EINVAL;
	}
	r->prefix = maxp;
	if (slash) {
		char *end;
		unsigned long p = strtoul(slash, &end, 10);

		if (*end || !*slash || p > maxp)
			return -EINVAL;
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

bool nfs4_export_allows(const struct nfs4_export *e, const struct sockaddr_storage *peer)
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
		const struct nfs4_client_rule *r = &e->rules[i];

		if (r->family == 0)
			return true;
		if (r->family == AF_INET && have4 && prefix_match(a4, r->addr, r->prefix))
			return true;
		if (r->family == AF_INET6 && peer->ss_family == AF_INET6 && prefix_match(a6, r->addr, r->prefix))
			return true;
	}
	return false;
}

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

static int parse_one(char *spec, struct nfs4_export *e, char *err, size_t errlen)
{
	char *save = NULL, *tok;
	bool have_pseudo = false;

	strcpy(e->path, "/");
	e->anon_uid = e->anon_gid = 65534;
	e->insecure = true;
	e->nrules = 0;
	for (tok = strtok_r(spec, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		if (!*tok)
			continue;
		if (!strncmp(tok, "path=", 5)) {
			if (norm_path(tok + 5, e->path, sizeof(e->path)))
				return fail(err, errlen, "nfs_exports: bad path '%s' (absolute, no . or ..)", tok + 5);
		} else if (!strncmp(tok, "pseudo=", 7)) {
			if (norm_path(tok + 7, e->pseudo, sizeof(e->pseudo)))
				return fail(err, errlen, "nfs_exports: bad pseudo path '%s'", tok + 7);
			have_pseudo = true;
		} else if (!strncmp(tok, "clients=", 8)) {
			char *s2 = NULL, *c;

			for (c = strtok_r(tok + 8, "| ", &s2); c; c = strtok_r(NULL, "| ", &s2)) {
				if (e->nrules == NFS4_EXPORT_RULES_MAX)
					return fail(err, errlen, "nfs_exports: more than 16 client rules at '%s'", c);
				if (parse_rule(c, &e->rules[e->nrules++]))
					return fail(err, errlen, "nfs_exports: bad client rule '%s' (ADDR, ADDR/BITS or *)", c);
			}
		} else if (!strcmp(tok, "ro")) {
			e->ro = true;
		} else if (!strcmp(tok, "rw")) {
			e->ro = false;
		} else if (!strcmp(tok, "root_squash")) {
			e->root_squash = true;
		} else if (!strcmp(tok, "no_root_squash")) {
			e->root_squash = false;
		} else if (!strcmp(tok, "all_squash")) {
			e->all_squash = true;
		} else if (!strcmp(tok, "secure")) {
			e->insecure = false;
		} else if (!strcmp(tok, "insecure")) {
			e->insecure = true;
		} else if (!strncmp(tok, "anonuid=", 8)) {
			e->anon_uid = (uint32_t)strtoul(tok + 8, NULL, 10);
		} else if (!strncmp(tok, "anongid=", 8)) {
			e->anon_gid = (uint32_t)strtoul(tok + 8, NULL, 10);
		} else {
			return fail(err, errlen, "nfs_exports: unknown setting '%s'", tok);
		}
	}
	if (!have_pseudo)
		strcpy(e->pseudo, e->path);
	if (e->nrules == 0) {
		e->nrules = 1;
		memset(&e->rules[0], 0, sizeof(e->rules[0]));
	}
	return 0;
}

static uint32_t pnode_add(struct nfs4_exports *x, uint32_t parent, const char *name, size_t n)
{
	for (unsigned int i = 0; i < x->npnodes; i++) {
		struct nfs4_pnode *p = &x->pn[i];

		if (p->parent == parent && strlen(p->name) == n && !memcmp(p->name, name, n))
			return p->id;
	}
	if (x->npnodes == NFS4_PSEUDO_MAX)
		return 0;
	struct nfs4_pnode *p = &x->pn[x->npnodes];

	p->id = ++x->npnodes;
	p->parent = parent;
	memcpy(p->name, name, n);
	p->name[n] = 0;
	p->exp = NULL;
	return p->id;
}

int nfs4_exports_parse(const char *spec, struct nfs4_exports **out, char *err, size_t errlen)
{
	struct nfs4_exports *x = calloc(1, sizeof(*x));
	char *copy = strdup(spec ? spec : ""), *save = NULL, *one;
	int r = 0;

	if (!x || !copy) {
		free(x);
		free(copy);
		return -ENOMEM;
	}
	pthread_mutex_init(&x->lock, NULL);
	for (one = strtok_r(copy, ";", &save); one; one = strtok_r(NULL, ";", &save)) {
		char *t = one;

		while (*t == ' ')
			t++;
		if (!*t)
			continue;
		if (x->n == NFS4_EXPORTS_MAX) {
			r = fail(err, errlen, "nfs_exports: more than %s exports", "64");
			goto out;
		}
		struct nfs4_export *e = &x->e[x->n];

		r = parse_one(t, e, err, errlen);
		if (r)
			goto out;
		e->id = (uint16_t)(x->n + 1);
		for (unsigned int i = 0; i < x->n; i++)
			if (!strcmp(x->e[i].pseudo, e->pseudo)) {
				r = fail(err, errlen, "nfs_exports: two exports at pseudo path %s", e->pseudo);
				goto out;
			}
		x->n++;
	}
	if (x->n == 0) {
		r = fail(err, errlen, "nfs_exports: %s", "no export configured");
		goto out;
	}
	/* the pseudo tree: node 1 is the root */
	pnode_add(x, 0, "", 0);
	for (unsigned int i = 0; i < x->n; i++) {
		struct nfs4_export *e = &x->e[i];
		uint32_t node = NFS4_PSEUDO_ROOT;
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
				r = fail(err, errlen, "nfs_exports: pseudo tree too large at %s", e->pseudo);
				goto out;
			}
			p += n;
		}
		if (x->pn[node - 1].exp) {
			r = fail(err, errlen, "nfs_exports: two exports at %s", e->pseudo);
			goto out;
		}
		x->pn[node - 1].exp = e;
		e->pnode = node;
	}
	if (x->root)   /* one export at "/" hides the pseudo tree (others below it are unreachable) */
		x->npnodes = 1;
out:
	free(copy);
	if (r) {
		nfs4_exports_free(x);
		return r;
	}
	*out = x;
	return 0;
}

void nfs4_exports_free(struct nfs4_exports *x)
{
	if (!x)
		return;
	pthread_mutex_destroy(&x->lock);
	free(x);
}

const struct nfs4_export *nfs4_export_by_id(const struct nfs4_exports *x, uint16_t id)
{
	if (id == 0 || id > x->n)
		return NULL;
	return &x->e[id - 1];
}

int nfs4_export_root(struct nfs4_exports *x, struct nfs4_export *e, struct lclient *lc, uint64_t *ino,
		     uint64_t *gen)
{
	struct lc_cred root = { 0 };
	struct lc_inode *cur, *next;
	struct lc_attr a;
	char path[PATH_MAX], *save = NULL, *c;
	int r = 0;

	pthread_mutex_lock(&x->lock);
	if (e->resolved) {
		*ino = e->root_ino;
		*gen = e->root_gen;
		pthread_mutex_unlock(&x->lock);
		return 0;
	}
	pthread_mutex_unlock(&x->lock);

	cur = lc_root(lc);
	if (!cur)
		return -ESTALE;
	r = lc_getattr(lc, cur, &root, false, &a);
	strcpy(path, e->path);
	for (c = strtok_r(path, "/", &save); c && !r; c = strtok_r(NULL, "/", &save)) {
		r = lc_lookup(lc, cur, c, &root, &a, &next);
		lc_put(lc, cur);
		cur = r ? NULL : next;
	}
	if (cur)
		lc_put(lc, cur);
	if (r)
		return r;
	if (!S_ISDIR(a.mode))
		return -ENOTDIR;
	pthread_mutex_lock(&x->lock);
	e->root_ino = a.ino;
	e->root_gen = a.generation;
	e->resolved = true;
	pthread_mutex_unlock(&x->lock);
	*ino = a.ino;
	*gen = a.generation;
	return 0;
}

const struct nfs4_pnode *nfs4_pnode_get(const struct nfs4_exports *x, uint32_t id)
{
	if (id == 0 || id > x->npnodes)
		return NULL;
	return &x->pn[id - 1];
}

const struct nfs4_pnode *nfs4_pnode_child(const struct nfs4_exports *x, uint32_t id, const char *name)
{
	for (unsigned int i = 0; i < x->npnodes; i++)
		if (x->pn[i].parent == id && x->pn[i].id != id && !strcmp(x->pn[i].name, name))
			return &x->pn[i];
	return NULL;
}
