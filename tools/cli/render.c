/*
 * render.c - print admin-socket replies as plain text or JSON.
 *
 * plain is for people: "key: value" lines, nested objects indented under
 * their key, arrays of flat objects (session lists, filesystems) as a table
 * with a header, `help` as usage lines.  json and json-pretty print the
 * daemon's answer unchanged, for scripts.
 */
#include <json-c/json.h>
#include <stdbool.h>
#include <string.h>

#include "tools/cli/cli.h"

static void indent(FILE *f, int depth)
{
	fprintf(f, "%*s", depth * 4, "");
}

static bool is_scalar(struct json_object *v)
{
	return !json_object_is_type(v, json_type_object) && !json_object_is_type(v, json_type_array);
}

/* a scalar as a person would write it: strings without quotes */
static const char *scalar_text(struct json_object *v)
{
	if (!v)
		return "-";
	if (json_object_is_type(v, json_type_string))
		return json_object_get_string_len(v) ? json_object_get_string(v) : "\"\"";
	return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
}

/* true when @a is a non-empty array of objects whose values are all scalars */
static bool is_table(struct json_object *a)
{
	size_t i, n = json_object_array_length(a);

	if (!n)
		return false;
	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(a, i);

		if (!json_object_is_type(o, json_type_object))
			return false;
		json_object_object_foreach(o, k, v) {
			(void)k;
			if (!is_scalar(v))
				return false;
		}
	}
	return true;
}

#define MAX_COLS 32

static void render_table(FILE *f, struct json_object *a, int depth)
{
	const char *cols[MAX_COLS];
	size_t width[MAX_COLS];
	size_t ncols = 0, i, c, n = json_object_array_length(a);

	/* columns: the union of keys, in first-seen order */
	for (i = 0; i < n; i++) {
		json_object_object_foreach(json_object_array_get_idx(a, i), k, v) {
			(void)v;
			for (c = 0; c < ncols; c++)
				if (!strcmp(cols[c], k))
					break;
			if (c == ncols && ncols < MAX_COLS) {
				cols[ncols] = k;
				width[ncols] = strlen(k);
				ncols++;
			}
		}
	}
	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(a, i), *v;

		for (c = 0; c < ncols; c++) {
			size_t w;

			v = json_object_object_get_ex(o, cols[c], &v) ? v : NULL;
			w = strlen(scalar_text(v));
			if (w > width[c])
				width[c] = w;
		}
	}
	indent(f, depth);
	for (c = 0; c < ncols; c++)
		fprintf(f, "%-*s%s", c + 1 < ncols ? (int)width[c] : 0, cols[c], c + 1 < ncols ? "  " : "\n");
	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(a, i), *v;

		indent(f, depth);
		for (c = 0; c < ncols; c++) {
			v = json_object_object_get_ex(o, cols[c], &v) ? v : NULL;
			fprintf(f, "%-*s%s", c + 1 < ncols ? (int)width[c] : 0, scalar_text(v),
				c + 1 < ncols ? "  " : "\n");
		}
	}
}

static void render_value(FILE *f, struct json_object *v, int depth);

static void render_object(FILE *f, struct json_object *o, int depth)
{
	json_object_object_foreach(o, k, v) {
		indent(f, depth);
		if (is_scalar(v)) {
			fprintf(f, "%s: %s\n", k, scalar_text(v));
		} else if (json_object_is_type(v, json_type_array) && !json_object_array_length(v)) {
			fprintf(f, "%s: (none)\n", k);
		} else if (json_object_is_type(v, json_type_object) && !json_object_object_length(v)) {
			fprintf(f, "%s: {}\n", k);
		} else {
			fprintf(f, "%s:\n", k);
			render_value(f, v, depth + 1);
		}
	}
}

static void render_array(FILE *f, struct json_object *a, int depth)
{
	size_t i, n = json_object_array_length(a);
	bool scalars = true;

	if (is_table(a)) {
		render_table(f, a, depth);
		return;
	}
	for (i = 0; i < n; i++)
		if (!is_scalar(json_object_array_get_idx(a, i)))
			scalars = false;
	for (i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(a, i);

		indent(f, depth);
		if (scalars) {
			fprintf(f, "%s\n", scalar_text(v));
		} else {
			fprintf(f, "- [%zu]\n", i);
			render_value(f, v, depth + 1);
		}
	}
}

static void render_value(FILE *f, struct json_object *v, int depth)
{
	if (json_object_is_type(v, json_type_object))
		render_object(f, v, depth);
	else if (json_object_is_type(v, json_type_array))
		render_array(f, v, depth);
	else {
		indent(f, depth);
		fprintf(f, "%s\n", scalar_text(v));
	}
}

/* `help`: one usage line per command: "config set <var> <val>   change ..." */
static void render_help(FILE *f, struct json_object *cmds)
{
	size_t i, n = json_object_array_length(cmds), w = 0;
	char line[512];

	for (int pass = 0; pass < 2; pass++) {
		for (i = 0; i < n; i++) {
			struct json_object *c = json_object_array_get_idx(cmds, i), *p, *a, *h;
			const char *args;
			size_t len;

			if (!json_object_object_get_ex(c, "prefix", &p))
				continue;
			args = json_object_object_get_ex(c, "args", &a) ? json_object_get_string(a) : "";
			len = (size_t)snprintf(line, sizeof(line), "%s", json_object_get_string(p));
			/* "id:int force:bool?" -> " <id:int> [<force:bool>]" */
			while (args && *args && len < sizeof(line) - 4) {
				size_t t = strcspn(args, " ");
				bool opt = t && args[t - 1] == '?';

				if (t)
					len += (size_t)snprintf(line + len, sizeof(line) - len, " %s<%.*s>%s",
								opt ? "[" : "", (int)(opt ? t - 1 : t),
								args, opt ? "]" : "");
				args += t;
				while (*args == ' ')
					args++;
			}
			if (len >= sizeof(line))
				len = sizeof(line) - 1;
			if (pass == 0) {
				if (len > w)
					w = len;
				continue;
			}
			h = NULL;
			json_object_object_get_ex(c, "help", &h);
			fprintf(f, "%-*s  %s\n", (int)w, line, h ? json_object_get_string(h) : "");
		}
	}
}

void render(FILE *f, struct json_object *reply, enum cli_format fmt, const char *prefix)
{
	struct json_object *v;

	switch (fmt) {
	case FMT_JSON:
		fprintf(f, "%s\n", json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PLAIN));
		return;
	case FMT_JSON_PRETTY:
		fprintf(f, "%s\n", json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PRETTY |
									    JSON_C_TO_STRING_SPACED));
		return;
	case FMT_PLAIN:
		break;
	}
	if (prefix && !strcmp(prefix, "help") && json_object_object_get_ex(reply, "commands", &v) &&
	    json_object_is_type(v, json_type_array)) {
		render_help(f, v);
		return;
	}
	/* {"success": "text"} alone: just the text (or nothing if empty) */
	if (json_object_is_type(reply, json_type_object) &&
	    json_object_object_get_ex(reply, "success", &v) && json_object_object_length(reply) == 1) {
		if (json_object_get_string_len(v))
			fprintf(f, "%s\n", json_object_get_string(v));
		return;
	}
	render_value(f, reply, 0);
}
