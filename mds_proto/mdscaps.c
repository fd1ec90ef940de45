/*
 * mdscaps.c - the MDS caps of a client name: cephx's `caps mds` strings.
 *
 *     allow rw path=/home/alice, allow r path=/shared root_squash
 *
 * Parsed once, where the caps enter (the admin command, the keyring at
 * start-up), into clauses the MDS checks every request against
 * (mds/authcaps.c).  Bad input is never a crash: each error says at which
 * offset, what was found and what was expected, so an operator who typed
 * `allow rx` or `path=home` knows what to fix.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mds_proto/proto.h"

void mdsp_mdscaps_allow_all(struct mdsp_mdscaps *out)
{
	memset(out, 0, sizeof(*out));
	out->n = 1;
	out->c[0].write = true;
	snprintf(out->c[0].path, sizeof(out->c[0].path), "/");
}

static bool gid_named(const struct mdsp_mdscap *c, uint32_t g)
{
	uint32_t j;

	for (j = 0; j < c->ngids; j++)
		if (c->gids[j] == g)
			return true;
	return false;
}

bool mdsp_mdscap_admits(const struct mdsp_mdscap *c, const struct mdsp_caller *caller)
{
	uint32_t i;

	if (c->has_uid && caller->uid != c->uid)
		return false;
	if (!c->ngids)
		return true;
	/* every group the caller acts with must be one the clause names */
	if (!gid_named(c, caller->gid))
		return false;
	for (i = 0; i < caller->ngroups && i < MDSP_MAX_GROUPS; i++)
		if (!gid_named(c, caller->groups[i]))
			return false;
	return true;
}

struct pctx {
	const char *s, *p;
	char *err;
	size_t errlen;
};

static int bad(struct pctx *x, const char *what)
{
	const char *e = x->p;
	int len = 0;

	while (e[len] && !isspace((unsigned char)e[len]) && e[len] != ',' && len < 24)
		len++;
	if (!*x->p)
		snprintf(x->err, x->errlen, "caps '%.200s': at the end: expected %s", x->s, what);
	else
		snprintf(x->err, x->errlen, "caps '%.200s': at offset %d ('%.*s'): expected %s", x->s,
			 (int)(x->p - x->s), len, x->p, what);
	return -EINVAL;
}

static void skip_ws(struct pctx *x)
{
	while (*x->p == ' ' || *x->p == '\t')
		x->p++;
}

/* the word at x->p: letters, digits, '_', '*' */
static size_t word_len(const char *p)
{
	size_t n = 0;

	while (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '*')
		n++;
	return n;
}

static bool word_is(const char *p, size_t n, const char *w)
{
	return strlen(w) == n && !strncmp(p, w, n);
}

static int parse_u32(struct pctx *x, uint32_t *v)
{
	unsigned long long n = 0;
	const char *p = x->p;

	if (!isdigit((unsigned char)*p))
		return bad(x, "a number");
	while (isdigit((unsigned char)*p)) {
		n = n * 10 + (unsigned)(*p - '0');
		if (n > 0xffffffffull)
			return bad(x, "a number below 2^32");
		p++;
	}
	*v = (uint32_t)n;
	x->p = p;
	return 0;
}

/* path=/a/b or path="/a b": absolute, normalised (no ".", "..", empty part) */
static int parse_path(struct pctx *x, struct mdsp_mdscap *c)
{
	char raw[sizeof(c->path)], *tok, *save = NULL;
	size_t n = 0, o = 0;
	bool quoted = *x->p == '"';

	if (quoted)
		x->p++;
	if (*x->p != '/')
		return bad(x, "an absolute path (path=/DIR)");
	while (x->p[n] && (quoted ? x->p[n] != '"' : !isspace((unsigned char)x->p[n]) && x->p[n] != ',' &&
									x->p[n] != ';'))
		n++;
	if (quoted && x->p[n] != '"')
		return bad(x, "the closing '\"' of the path");
	if (n >= sizeof(raw))
		return bad(x, "a path shorter than 512 bytes");
	memcpy(raw, x->p, n);
	raw[n] = '\0';
	for (tok = strtok_r(raw, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (!strcmp(tok, ".") || !strcmp(tok, ".."))
			return bad(x, "a path without '.' or '..' components");
		o += (size_t)snprintf(c->path + o, sizeof(c->path) - o, "/%s", tok);
	}
	if (!o)
		snprintf(c->path, sizeof(c->path), "/");
	x->p += n + (quoted ? 1 : 0);
	return 0;
}

static int parse_clause(struct pctx *x, struct mdsp_mdscap *c)
{
	size_t n;
	int r;

	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "/");
	skip_ws(x);
	n = word_len(x->p);
	if (!word_is(x->p, n, "allow"))
		return bad(x, "'allow'");
	x->p += n;
	if (*x->p != ' ' && *x->p != '\t')
		return bad(x, "a space, then r, rw or *");
	skip_ws(x);
	n = word_len(x->p);
	if (word_is(x->p, n, "r"))
		c->write = false;
	else if (word_is(x->p, n, "rw") || word_is(x->p, n, "*"))
		c->write = true;
	else
		return bad(x, "r, rw or * after 'allow'");
	x->p += n;
	for (;;) {
		const char *before = x->p;

		skip_ws(x);
		if (!*x->p || *x->p == ',' || *x->p == ';')
			return 0;
		if (x->p == before)
			return bad(x, "a space before the next restriction");
		n = word_len(x->p);
		if (word_is(x->p, n, "root_squash")) {
			c->root_squash = true;
			x->p += n;
		} else if (word_is(x->p, n, "path") && x->p[n] == '=') {
			x->p += n + 1;
			if ((r = parse_path(x, c)))
				return r;
		} else if (word_is(x->p, n, "uid") && x->p[n] == '=') {
			x->p += n + 1;
			if ((r = parse_u32(x, &c->uid)))
				return r;
			c->has_uid = true;
		} else if (word_is(x->p, n, "gids") && x->p[n] == '=') {
			x->p += n + 1;
			for (;;) {
				if (c->ngids == MDSP_MDSCAPS_GIDS_MAX)
					return bad(x, "at most 16 gids");
				if ((r = parse_u32(x, &c->gids[c->ngids++])))
					return r;
				/* a ',' followed by a digit continues the list;
				 * anything else after ',' is the next clause */
				if (x->p[0] == ',' && isdigit((unsigned char)x->p[1]))
					x->p++;
				else
					break;
			}
		} else {
			return bad(x, "path=/DIR, root_squash, uid=N or gids=A,B");
		}
	}
}

int mdsp_mdscaps_parse(const char *s, struct mdsp_mdscaps *out, char *err, size_t errlen)
{
	struct pctx x = { .s = s ? s : "", .p = s ? s : "", .err = err, .errlen = errlen };
	int r;

	memset(out, 0, sizeof(*out));
	if (strlen(x.s) >= MDSP_MDSCAPS_STR_MAX) {
		snprintf(err, errlen, "caps string is %zu bytes: at most %d", strlen(x.s), MDSP_MDSCAPS_STR_MAX - 1);
		return -EINVAL;
	}
	for (const char *q = x.s; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f) {
			x.p = q;
			return bad(&x, "printable characters only (no control characters)");
		}
	for (;;) {
		if (out->n == MDSP_MDSCAPS_MAX)
			return bad(&x, "at most 16 clauses");
		if ((r = parse_clause(&x, &out->c[out->n])))
			goto fail;
		out->n++;
		skip_ws(&x);
		if (!*x.p)
			return 0;
		x.p++;          /* ',' or ';' */
	}
fail:
	memset(out, 0, sizeof(*out));
	return r;
}
