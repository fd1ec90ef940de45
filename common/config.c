/*
 * config.c - the option table, its INI file and command-line overrides.
 *
 * Every option is declared once in common/options/<subsys>.def; the OPT
 * X-macro turns all.def into cfg_options[] (name, type, default, runtime,
 * description) and the CFG_<name> ids of options.h.  Values live in one
 * slot per option: numbers (INT, UINT, BOOL, SIZE, and DOUBLE/SECS as their
 * bit pattern) in an atomic 64-bit word so the getters are a single load;
 * strings behind str_lock and handed out as copies, because a runtime
 * `config set` may replace them while another thread reads.
 *
 * Precedence is simply the order of the writes: defaults (cfg_init), then
 * [global], then the daemon's own section (cfg_load_file), then command-line
 * overrides (cfg_parse_args), then `config set` at runtime.  A file is
 * parsed and validated completely before any of it is applied, so a bad
 * file changes nothing.  Observers (cfg_observe) are called after every
 * successful change, whatever its source; log.c uses them for debug_* and
 * log_file.
 */
#include "common/config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <json-c/json.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

#define T_STR CFG_T_STR
#define T_INT CFG_T_INT
#define T_UINT CFG_T_UINT
#define T_BOOL CFG_T_BOOL
#define T_DOUBLE CFG_T_DOUBLE
#define T_SIZE CFG_T_SIZE
#define T_SECS CFG_T_SECS
#define T_LOGLEVEL CFG_T_LOGLEVEL

const struct cfg_option cfg_options[CFG_MAX] = {
#define OPT(n, t, d, rt, ds) [CFG_##n] = { .name = #n, .type = T_##t, .def = d, .runtime = rt, .desc = ds },
#include "common/options/all.def"
#undef OPT
};

#define MAX_OBSERVERS 8

struct observer {
	void (*fn)(int id, void *arg);
	void *arg;
};

static _Atomic uint64_t num_vals[CFG_MAX];
static char *str_vals[CFG_MAX];		/* protected by str_lock */
static pthread_mutex_t str_lock = PTHREAD_MUTEX_INITIALIZER;

static struct observer observers[CFG_MAX][MAX_OBSERVERS];	/* protected by obs_lock */
static pthread_mutex_t obs_lock = PTHREAD_MUTEX_INITIALIZER;

static char cfg_section[64] = "global";	/* set once by cfg_init(), before threads */
/* where each value came from (cfg_source()), and the config file loaded
 * last (cfg_reload_option() reads it again) */
static _Atomic unsigned char sources[CFG_MAX];
static char loaded_path[4096];			/* protected by str_lock */
static __thread bool loading_file;		/* cfg_set() is applying a file */

/* A parsed value, before it is stored. */
union cfg_val {
	int64_t i;
	uint64_t u;
	double d;
	bool b;
};

static const char *type_name(enum cfg_type t)
{
	switch (t) {
	case CFG_T_STR: return "str";
	case CFG_T_INT: return "int";
	case CFG_T_UINT: return "uint";
	case CFG_T_BOOL: return "bool";
	case CFG_T_DOUBLE: return "double";
	case CFG_T_SIZE: return "size";
	case CFG_T_SECS: return "secs";
	case CFG_T_LOGLEVEL: return "level[/memlevel]";
	}
	return "?";
}

/* Copy @s without leading and trailing blanks into @buf; false if too long. */
static bool trim_copy(const char *s, char *buf, size_t len)
{
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (n >= len)
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return true;
}

static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "true", "yes", "on" };
	static const char *const no[] = { "0", "false", "no", "off" };
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* "64K", "4M", "1G", "2T", "512", "1.5M", with optional "B"/"iB": bytes (1024-based). */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v;
	uint64_t mult = 1;

	if (!*s || *s == '-' || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	/* integers exactly (doubles lose precision above 2^53) */
	{
		unsigned long long u = strtoull(s, &end, 10);

		if (errno == 0 && *end == '\0') {
			*out = u;
			return 0;
		}
	}
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case '\0': break;
	case 'K': mult = 1ull << 10; end++; break;
	case 'M': mult = 1ull << 20; end++; break;
	case 'G': mult = 1ull << 30; end++; break;
	case 'T': mult = 1ull << 40; end++; break;
	case 'B': break;
	default: return -EINVAL;
	}
	if (mult > 1 && *end == 'i')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return -EINVAL;
	v *= (double)mult;
	if (!(v >= 0) || v >= 18446744073709551616.0)
		return -ERANGE;
	*out = (uint64_t)v;
	return 0;
}

/* decimal, or hex with 0x; never octal: "010" in a config file means ten */
static int int_base(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	return s[0] == '0' && (s[1] == 'x' || s[1] == 'X') ? 16 : 10;
}

/*
 * Parse @str as a value of option @id's type into @v.
 * Return: 0 or -EINVAL/-ERANGE with a reason in @err.
 */
static int parse_value(int id, const char *str, union cfg_val *v, char *err, size_t errlen)
{
	const struct cfg_option *o = &cfg_options[id];
	char s[256];
	char *end;
	int r = 0;

	if (o->type == CFG_T_STR)
		return 0;
	if (!trim_copy(str, s, sizeof(s))) {
		snprintf(err, errlen, "value of '%s' is too long", o->name);
		return -EINVAL;
	}
	errno = 0;
	switch (o->type) {
	case CFG_T_STR:
		break;
	case CFG_T_INT:
		v->i = strtoll(s, &end, int_base(s));
		if (!*s || *end)
			r = -EINVAL;
		else if (errno)
			r = -ERANGE;
		break;
	case CFG_T_UINT:
		v->u = strtoull(s, &end, int_base(s));
		if (!*s || *end || strchr(s, '-'))
			r = -EINVAL;
		else if (errno)
			r = -ERANGE;
		break;
	case CFG_T_BOOL:
		r = parse_bool(s, &v->b);
		break;
	case CFG_T_DOUBLE:
	case CFG_T_SECS:
		v->d = strtod(s, &end);
		if (!*s || *end || !isfinite(v->d))
			r = -EINVAL;
		else if (errno)
			r = -ERANGE;
		else if (o->type == CFG_T_SECS && v->d < 0)
			r = -ERANGE;
		break;
	case CFG_T_SIZE:
		r = parse_size(s, &v->u);
		break;
	case CFG_T_LOGLEVEL: {
		/* "N" or "N/M", decimal, 0..30 each */
		long a, b;
		char *slash;

		a = strtol(s, &end, 10);
		if (end == s || !isdigit((unsigned char)*s)) {
			r = -EINVAL;
			break;
		}
		b = a;
		slash = end;
		if (*slash == '/') {
			b = strtol(slash + 1, &end, 10);
			if (end == slash + 1 || !isdigit((unsigned char)slash[1]))
				end = slash;	/* "5/" or "5/x": bad below */
		}
		if (*end) {
			r = -EINVAL;
			break;
		}
		if (a > 30 || b > 30) {
			snprintf(err, errlen, "log level '%s' of option '%s' is out of range: each of N/M is 0..30",
				 s, o->name);
			return -EINVAL;
		}
		v->u = (uint64_t)b << 32 | (uint64_t)a;
		break;
	}
	}
	if (r == -ERANGE) {
		snprintf(err, errlen, "value '%s' of option '%s' is out of range", s, o->name);
		return -EINVAL;
	}
	if (r) {
		static const char *const hint[] = {
			[CFG_T_STR] = "",
			[CFG_T_INT] = "an integer",
			[CFG_T_UINT] = "a non-negative integer",
			[CFG_T_BOOL] = "true or false",
			[CFG_T_DOUBLE] = "a number",
			[CFG_T_SIZE] = "a size such as 4096, 64K, 4M or 1G",
			[CFG_T_SECS] = "a number of seconds such as 10 or 0.5",
			[CFG_T_LOGLEVEL] = "a log level N or N/M (log level / memory level, 0..30), such as 5 or 1/10",
		};
		snprintf(err, errlen, "invalid value '%s' for option '%s': expected %s", s,
			 o->name, hint[o->type]);
		return -EINVAL;
	}
	return 0;
}

static uint64_t dbits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

static double bitsd(uint64_t u)
{
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

/* Store an already-validated value; returns 0 or -ENOMEM. */
static int store_value(int id, const char *str, const union cfg_val *v)
{
	char *copy, *old;

	switch (cfg_options[id].type) {
	case CFG_T_STR:
		copy = strdup(str);
		if (!copy)
			return -ENOMEM;
		pthread_mutex_lock(&str_lock);
		old = str_vals[id];
		str_vals[id] = copy;
		pthread_mutex_unlock(&str_lock);
		free(old);
		return 0;
	case CFG_T_INT:
		atomic_store(&num_vals[id], (uint64_t)v->i);
		return 0;
	case CFG_T_UINT:
	case CFG_T_SIZE:
	case CFG_T_LOGLEVEL:
		atomic_store(&num_vals[id], v->u);
		return 0;
	case CFG_T_BOOL:
		atomic_store(&num_vals[id], v->b ? 1 : 0);
		return 0;
	case CFG_T_DOUBLE:
	case CFG_T_SECS:
		atomic_store(&num_vals[id], dbits(v->d));
		return 0;
	}
	return -EINVAL;
}

static void notify(int id)
{
	struct observer obs[MAX_OBSERVERS];
	int i;

	pthread_mutex_lock(&obs_lock);
	memcpy(obs, observers[id], sizeof(obs));
	pthread_mutex_unlock(&obs_lock);
	for (i = 0; i < MAX_OBSERVERS && obs[i].fn; i++)
		obs[i].fn(id, obs[i].arg);
}

/* Reset every value to its default; the table's defaults must parse. */
static void set_defaults(void)
{
	char err[256];
	int id;

	for (id = 0; id < CFG_MAX; id++) {
		union cfg_val v = { 0 };

		if (parse_value(id, cfg_options[id].def, &v, err, sizeof(err)) ||
		    store_value(id, cfg_options[id].def, &v)) {
			fprintf(stderr, "loligo: bad built-in default of option %s: %s\n",
				cfg_options[id].name, err);
			abort();	/* a bug in a .def file, caught by every test */
		}
		atomic_store(&sources[id], CFG_SRC_DEFAULT);
	}
}

/* Values are valid before cfg_init(), e.g. in unit tests and tools. */
__attribute__((constructor)) static void cfg_early_defaults(void)
{
	set_defaults();
}

void cfg_init(const char *section)
{
	static uint64_t before[CFG_MAX];
	static char *sbefore[CFG_MAX];
	int id;

	snprintf(cfg_section, sizeof(cfg_section), "%s", section && *section ? section : "global");
	/* remember the old values, so only options that really change notify */
	for (id = 0; id < CFG_MAX; id++) {
		before[id] = atomic_load(&num_vals[id]);
		if (cfg_options[id].type == CFG_T_STR)
			sbefore[id] = cfg_strdup(id);
	}
	set_defaults();
	log_cfg_attach();
	for (id = 0; id < CFG_MAX; id++) {
		bool changed;

		if (cfg_options[id].type == CFG_T_STR) {
			pthread_mutex_lock(&str_lock);
			changed = !sbefore[id] || strcmp(sbefore[id], str_vals[id]);
			pthread_mutex_unlock(&str_lock);
			free(sbefore[id]);
			sbefore[id] = NULL;
		} else {
			changed = before[id] != atomic_load(&num_vals[id]);
		}
		if (changed)
			notify(id);
	}
}

int cfg_lookup(const char *name)
{
	char norm[128];
	size_t i;
	int id;

	if (!name || !trim_copy(name, norm, sizeof(norm)))
		return -1;
	for (i = 0; norm[i]; i++)
		if (norm[i] == '-' || norm[i] == ' ')
			norm[i] = '_';
	for (id = 0; id < CFG_MAX; id++)
		if (!strcmp(cfg_options[id].name, norm))
			return id;
	return -1;
}

int cfg_set(int id, const char *value, bool at_runtime, char *err, size_t errlen)
{
	union cfg_val v = { 0 };
	char dummy[8];
	int r;

	if (!err) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	if (id < 0 || id >= CFG_MAX || !value) {
		snprintf(err, errlen, "no such option");
		return -EINVAL;
	}
	if (at_runtime && !cfg_options[id].runtime) {
		snprintf(err, errlen,
			 "option '%s' can not be changed at runtime; set it in the config file "
			 "and restart the daemon", cfg_options[id].name);
		return -EPERM;
	}
	r = parse_value(id, value, &v, err, errlen);
	if (r)
		return r;
	r = store_value(id, value, &v);
	if (r) {
		snprintf(err, errlen, "out of memory");
		return r;
	}
	atomic_store(&sources[id], at_runtime ? CFG_SRC_RUNTIME : loading_file ? CFG_SRC_FILE : CFG_SRC_CMDLINE);
	dout(COMMON, 5, "config: %s = %s%s", cfg_options[id].name, value,
	     at_runtime ? " (runtime)" : "");
	notify(id);
	return 0;
}

enum cfg_source cfg_source(enum cfg_opt_id id)
{
	return (enum cfg_source)atomic_load(&sources[id]);
}

int64_t cfg_int(enum cfg_opt_id id)
{
	uint64_t v = atomic_load_explicit(&num_vals[id], memory_order_relaxed);

	if (cfg_options[id].type == CFG_T_LOGLEVEL)
		return (int64_t)(v & 0xffffffffu);
	return (int64_t)v;
}

void cfg_loglevel(enum cfg_opt_id id, int *log, int *mem)
{
	uint64_t v = atomic_load_explicit(&num_vals[id], memory_order_relaxed);

	*log = (int)(v & 0xffffffffu);
	*mem = cfg_options[id].type == CFG_T_LOGLEVEL ? (int)(v >> 32) : *log;
}

uint64_t cfg_uint(enum cfg_opt_id id)
{
	return atomic_load_explicit(&num_vals[id], memory_order_relaxed);
}

bool cfg_bool(enum cfg_opt_id id)
{
	return atomic_load_explicit(&num_vals[id], memory_order_relaxed) != 0;
}

double cfg_double(enum cfg_opt_id id)
{
	return bitsd(atomic_load_explicit(&num_vals[id], memory_order_relaxed));
}

const char *cfg_str(enum cfg_opt_id id, char *buf, size_t len)
{
	if (!len)
		return buf;
	pthread_mutex_lock(&str_lock);
	snprintf(buf, len, "%s", str_vals[id] ? str_vals[id] : "");
	pthread_mutex_unlock(&str_lock);
	return buf;
}

char *cfg_strdup(enum cfg_opt_id id)
{
	char *s;

	pthread_mutex_lock(&str_lock);
	s = strdup(str_vals[id] ? str_vals[id] : "");
	pthread_mutex_unlock(&str_lock);
	return s;
}

const char *cfg_get_string(int id, char *buf, size_t len)
{
	if (!len)
		return buf;
	if (id < 0 || id >= CFG_MAX) {
		buf[0] = '\0';
		return buf;
	}
	switch (cfg_options[id].type) {
	case CFG_T_STR:
		return cfg_str(id, buf, len);
	case CFG_T_INT:
		snprintf(buf, len, "%lld", (long long)cfg_int(id));
		break;
	case CFG_T_UINT:
	case CFG_T_SIZE:
		snprintf(buf, len, "%llu", (unsigned long long)cfg_uint(id));
		break;
	case CFG_T_BOOL:
		snprintf(buf, len, "%s", cfg_bool(id) ? "true" : "false");
		break;
	case CFG_T_DOUBLE:
	case CFG_T_SECS:
		snprintf(buf, len, "%g", cfg_double(id));
		break;
	case CFG_T_LOGLEVEL: {
		int l, m;

		cfg_loglevel(id, &l, &m);
		if (l == m)
			snprintf(buf, len, "%d", l);
		else
			snprintf(buf, len, "%d/%d", l, m);
		break;
	}
	}
	return buf;
}

void cfg_observe(enum cfg_opt_id id, void (*fn)(int id, void *arg), void *arg)
{
	int i;

	if ((int)id < 0 || id >= CFG_MAX || !fn)
		return;
	pthread_mutex_lock(&obs_lock);
	for (i = 0; i < MAX_OBSERVERS; i++) {
		if (!observers[id][i].fn) {
			observers[id][i].fn = fn;
			observers[id][i].arg = arg;
			break;
		}
	}
	pthread_mutex_unlock(&obs_lock);
	if (i == MAX_OBSERVERS)
		derr(COMMON, "config: too many observers of option %s", cfg_options[id].name);
}

struct json_object *cfg_value_json(int id)
{
	char buf[4096];

	switch (cfg_options[id].type) {
	case CFG_T_STR:
		return json_object_new_string(cfg_str(id, buf, sizeof(buf)));
	case CFG_T_INT:
		return json_object_new_int64(cfg_int(id));
	case CFG_T_UINT:
	case CFG_T_SIZE:
		return json_object_new_uint64(cfg_uint(id));
	case CFG_T_BOOL:
		return json_object_new_boolean(cfg_bool(id));
	case CFG_T_DOUBLE:
	case CFG_T_SECS:
		return json_object_new_double(cfg_double(id));
	case CFG_T_LOGLEVEL: {
		int l, m;

		cfg_loglevel(id, &l, &m);
		if (l == m)
			return json_object_new_int(l);
		return json_object_new_string(cfg_get_string(id, buf, sizeof(buf)));
	}
	}
	return NULL;
}

struct json_object *cfg_show_json(void)
{
	struct json_object *o = json_object_new_object();
	int id;

	if (!o)
		return NULL;
	for (id = 0; id < CFG_MAX; id++)
		json_object_object_add(o, cfg_options[id].name, cfg_value_json(id));
	return o;
}

void cfg_print_help(FILE *f, const char *prefix_filter)
{
	int id;

	for (id = 0; id < CFG_MAX; id++) {
		const struct cfg_option *o = &cfg_options[id];

		if (prefix_filter && strncmp(o->name, prefix_filter, strlen(prefix_filter)))
			continue;
		fprintf(f, "  --%s=<%s>%s\n      %s (default: \"%s\")\n", o->name,
			type_name(o->type), o->runtime ? "  [runtime]" : "", o->desc, o->def);
	}
}

/* ---- INI files ---------------------------------------------------- */

struct ini_entry {
	int id;
	int line;
	int tier;		/* 0: [global] (or before any section), 1: our section ([mds]),
				 * 2: our named section ([mds.b]): the higher wins */
	char *value;
};

struct ini_ctx {
	const char *path;
	FILE *f;
	int line;		/* line the reader returned last */
	struct ini_entry *ents;
	size_t n, cap;
	int err;		/* first error, reported with err_line */
	char *errbuf;
	size_t errlen;
};

/* inih reader: counts lines so the handler can name them in errors. */
static char *line_reader(char *str, int num, void *stream)
{
	struct ini_ctx *c = stream;
	char *s = fgets(str, num, c->f);

	if (s)
		c->line++;
	return s;
}

/* Is [@section] one of ours?  cfg_section is one name or a comma-separated
 * list ("client,nfs": loligo-fuse is the client and the NFS gateway). */
static bool section_is_ours(const char *section)
{
	size_t n = strlen(section);
	const char *p = cfg_section;

	while (*p) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == n && !strncmp(p, section, n))
			return true;
		if (!e)
			break;
		p = e + 1;
	}
	return false;
}

static int entry_handler(void *user, const char *section, const char *name, const char *value)
{
	struct ini_ctx *c = user;
	char clean[4096];
	const char *hash;
	int tier, id;

	if (c->err)
		return 1;
	if (!*section || !strcmp(section, "global"))
		tier = 0;
	else if (section_is_ours(section))
		tier = strchr(section, '.') ? 2 : 1;
	else
		return 1;	/* another daemon's section: not ours to judge */

	/* inih strips "  ; comment"; strip ceph's "  # comment" too */
	for (hash = value; (hash = strchr(hash, '#')); hash++) {
		if (hash > value && isspace((unsigned char)hash[-1])) {
			size_t n = (size_t)(hash - value);

			while (n && isspace((unsigned char)value[n - 1]))
				n--;
			snprintf(clean, sizeof(clean), "%.*s", (int)n, value);
			value = clean;
			break;
		}
	}

	id = cfg_lookup(name);
	if (id < 0) {
		snprintf(c->errbuf, c->errlen, "%s:%d: unknown option '%s'", c->path, c->line, name);
		c->err = -EINVAL;
		return 1;
	}
	if (cfg_options[id].type != CFG_T_STR) {
		union cfg_val v;
		char why[256];

		if (parse_value(id, value, &v, why, sizeof(why))) {
			snprintf(c->errbuf, c->errlen, "%s:%d: %s", c->path, c->line, why);
			c->err = -EINVAL;
			return 1;
		}
	}
	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 16;
		struct ini_entry *ne = realloc(c->ents, ncap * sizeof(*ne));

		if (!ne)
			goto nomem;
		c->ents = ne;
		c->cap = ncap;
	}
	c->ents[c->n].value = strdup(value);
	if (!c->ents[c->n].value)
		goto nomem;
	c->ents[c->n].id = id;
	c->ents[c->n].line = c->line;
	c->ents[c->n].tier = tier;
	c->n++;
	return 1;
nomem:
	snprintf(c->errbuf, c->errlen, "%s: out of memory", c->path);
	c->err = -ENOMEM;
	return 1;
}

/* Read and check @path into @c (every entry validated, nothing applied). */
static int read_file(const char *path, struct ini_ctx *c, char *err, size_t errlen)
{
	int r;

	memset(c, 0, sizeof(*c));
	c->path = path;
	c->errbuf = err;
	c->errlen = errlen;
	c->f = fopen(path, "r");
	if (!c->f) {
		r = -errno;
		snprintf(err, errlen, "cannot open config file '%s': %s", path, strerror(-r));
		return r;
	}
	r = ini_parse_stream(line_reader, c, entry_handler, c);
	if (ferror(c->f)) {
		snprintf(err, errlen, "%s: read error", path);
		return -EIO;
	}
	if (c->err)
		return c->err;
	if (r > 0) {
		snprintf(err, errlen, "%s:%d: syntax error (expected 'key = value' or '[section]')",
			 path, r);
		return -EINVAL;
	}
	if (r < 0) {
		snprintf(err, errlen, "%s: cannot parse (out of memory)", path);
		return -ENOMEM;
	}
	return 0;
}

static void free_ctx(struct ini_ctx *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		free(c->ents[i].value);
	free(c->ents);
	if (c->f)
		fclose(c->f);
}

int cfg_load_file(const char *path, char *err, size_t errlen)
{
	struct ini_ctx c;
	char dummy[8];
	size_t i;
	int pass, r;

	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = '\0';
	r = read_file(path, &c, err, errlen);
	if (r)
		goto out_free;

	/* everything validated: apply [global] first, then our section, then our named one */
	loading_file = true;
	for (pass = 0; pass < 3; pass++) {
		for (i = 0; i < c.n; i++) {
			if (c.ents[i].tier != pass)
				continue;
			r = cfg_set(c.ents[i].id, c.ents[i].value, false, err, errlen);
			if (r) {
				char why[256];

				snprintf(why, sizeof(why), "%s", err);
				snprintf(err, errlen, "%s:%d: %s", path, c.ents[i].line, why);
				loading_file = false;
				goto out_free;
			}
		}
	}
	loading_file = false;
	pthread_mutex_lock(&str_lock);
	snprintf(loaded_path, sizeof(loaded_path), "%s", path);
	pthread_mutex_unlock(&str_lock);
	dout(COMMON, 2, "loaded config file %s (%zu options for [global]/[%s])", path, c.n,
	     cfg_section);
out_free:
	free_ctx(&c);
	return r;
}

/* Option @id's value as text, malloc'd (NULL: no memory). */
static char *value_text(int id)
{
	char buf[128];

	if (cfg_options[id].type == CFG_T_STR)
		return cfg_strdup(id);
	return strdup(cfg_get_string(id, buf, sizeof(buf)));
}

int cfg_reload_option(enum cfg_opt_id id, cfg_check_fn check, void *arg, char *err, size_t errlen)
{
	struct ini_ctx c;
	char path[sizeof(loaded_path)], dummy[8], *old = NULL, *now = NULL;
	const char *sec = NULL, *glob = NULL, *val;
	bool named = false;           /* a value from our named section: [mds] ones no longer override it */
	size_t i;
	int r;

	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = '\0';
	if (cfg_source(id) == CFG_SRC_CMDLINE || cfg_source(id) == CFG_SRC_RUNTIME)
		return 0;                /* they win over the file, as at start */
	pthread_mutex_lock(&str_lock);
	snprintf(path, sizeof(path), "%s", loaded_path);
	pthread_mutex_unlock(&str_lock);
	if (!path[0])
		return 0;
	r = read_file(path, &c, err, errlen);
	if (r)
		goto out;
	for (i = 0; i < c.n; i++) {
		if (c.ents[i].id != (int)id)
			continue;
		if (c.ents[i].tier == 0)
			glob = c.ents[i].value;
		else if (c.ents[i].tier == 1 ? !named : true)
			sec = c.ents[i].value;
		if (c.ents[i].tier == 2)
			named = true;
	}
	val = sec ? sec : glob;          /* our sections over [global], as at start */
	if (check) {
		r = check(val ? val : cfg_options[id].def, arg, err, errlen);
		if (r)
			goto out;
	}
	old = value_text(id);
	loading_file = val != NULL;
	r = cfg_set(id, val ? val : cfg_options[id].def, false, err, errlen);
	loading_file = false;
	if (r)
		goto out;
	if (!val)                        /* no longer in the file: the default */
		atomic_store(&sources[id], CFG_SRC_DEFAULT);
	now = value_text(id);
	r = !old || !now || strcmp(old, now) != 0;
out:
	free(old);
	free(now);
	free_ctx(&c);
	return r;
}

/* ---- command line ------------------------------------------------- */

/* "--conf FILE", "--conf=FILE", "-c FILE", "-cFILE": the file, else NULL. */
static const char *conf_arg(int argc, char **argv, int *i)
{
	const char *a = argv[*i];

	if (!strcmp(a, "-c") || !strcmp(a, "--conf")) {
		if (*i + 1 >= argc)
			return "";
		return argv[++*i];
	}
	if (!strncmp(a, "--conf=", 7))
		return a + 7;
	if (!strncmp(a, "-c", 2) && a[2] != '-')
		return a + 2;
	return NULL;
}

int cfg_parse_args(int *argc, char **argv, char *err, size_t errlen)
{
	char dummy[8];
	int i, out, r;

	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = '\0';

	/* the config file first, so overrides win whatever their position */
	for (i = 1; i < *argc; i++) {
		const char *conf;

		if (!strcmp(argv[i], "--"))
			break;
		conf = conf_arg(*argc, argv, &i);
		if (!conf)
			continue;
		if (!*conf) {
			snprintf(err, errlen, "%s needs a file name", argv[i]);
			return -EINVAL;
		}
		r = cfg_load_file(conf, err, errlen);
		if (r)
			return r;
	}

	out = 1;
	for (i = 1; i < *argc; i++) {
		char name[128];
		const char *a = argv[i], *eq, *val;
		int id, j = i;

		if (!strcmp(a, "--")) {
			/* keep "--" and everything after it for the program */
			while (i < *argc)
				argv[out++] = argv[i++];
			break;
		}
		if (conf_arg(*argc, argv, &j))
			goto skip;	/* handled above; also skips its FILE */
		if (strncmp(a, "--", 2) || !a[2]) {
			argv[out++] = argv[i];
			continue;
		}
		eq = strchr(a + 2, '=');
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - a - 2) : (int)strlen(a + 2),
			 a + 2);
		id = cfg_lookup(name);
		if (id < 0) {
			argv[out++] = argv[i];
			continue;
		}
		if (eq) {
			val = eq + 1;
		} else if (cfg_options[id].type == CFG_T_BOOL) {
			bool b;

			/* "--flag" alone means true; "--flag false" is accepted too */
			if (i + 1 < *argc && !parse_bool(argv[i + 1], &b))
				val = argv[++i];
			else
				val = "true";
		} else if (i + 1 < *argc) {
			val = argv[++i];
		} else {
			snprintf(err, errlen, "option --%s needs a value", cfg_options[id].name);
			return -EINVAL;
		}
		r = cfg_set(id, val, false, err, errlen);
		if (r)
			return r;
		continue;
skip:
		i = j;
	}
	argv[out] = NULL;
	*argc = out;
	return 0;
}

/* ---- metavariables ($cluster, $name, $pid...) ----------------------- */

static char id_type[32] = "";	/* set once by cfg_set_identity(), before threads */
static char id_name[128] = "";

void cfg_set_identity(const char *type, const char *name)
{
	char buf[8];

	snprintf(id_type, sizeof(id_type), "%s", type ? type : "");
	snprintf(id_name, sizeof(id_name), "%s", name ? name : "");
	/* a log_file with metavariables was opened before we knew who we are */
	cfg_str(CFG_log_file, buf, sizeof(buf));
	if (*buf)
		notify(CFG_log_file);
}

bool cfg_identity_known(void)
{
	return id_name[0] != '\0';
}

char *cfg_expand(const char *in, char *out, size_t len)
{
	size_t o = 0;

	if (!len)
		return out;
	while (in && *in && o + 1 < len) {
		static const char *const vars[] = { "cluster", "type", "name", "id", "pid", "host" };
		char val[256];
		size_t i, vl = 0;

		if (*in != '$') {
			out[o++] = *in++;
			continue;
		}
		for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
			vl = strlen(vars[i]);
			if (!strncmp(in + 1, vars[i], vl) && !isalnum((unsigned char)in[1 + vl]) &&
			    in[1 + vl] != '_')
				break;
		}
		if (i == sizeof(vars) / sizeof(vars[0])) {
			out[o++] = *in++;	/* not ours: keep the '$' */
			continue;
		}
		switch (i) {
		case 0: cfg_str(CFG_fs_name, val, sizeof(val)); break;
		case 1: snprintf(val, sizeof(val), "%s", id_type); break;
		case 2: snprintf(val, sizeof(val), "%s", id_name); break;
		case 3: {
			const char *dot = strchr(id_name, '.');

			snprintf(val, sizeof(val), "%s", dot ? dot + 1 : id_name);
			break;
		}
		case 4: snprintf(val, sizeof(val), "%d", (int)getpid()); break;
		default:
			if (gethostname(val, sizeof(val)))
				snprintf(val, sizeof(val), "localhost");
			val[sizeof(val) - 1] = '\0';
		}
		o += (size_t)snprintf(out + o, len - o, "%s", val);
		if (o >= len)
			o = len - 1;
		in += 1 + vl;
	}
	out[o] = '\0';
	return out;
}
