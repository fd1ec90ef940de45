/*
 * du.c - `loligo fs du PATH...`: the recursive statistics of directories of
 * a mounted loligo filesystem (issue 22.1), without walking them.
 *
 * Each number is a virtual xattr the MDS answers from the directory's inode
 * (mds/rstat.c: exact, O(1)), read through the mount with getxattr(2), as
 * `getfattr -n loligo.dir.rbytes DIR` does; the quotas are shown beside
 * them when set.  Plain output is one line per directory, like du -s;
 * json has every field.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "tools/cli/cli.h"

static const char *const fields[] = {
	"rbytes", "rfiles", "rsubdirs", "rentries", "files", "subdirs", "entries",
};

/* loligo.@ns.@name of @path as a string in @buf; -errno */
static int vx(const char *path, const char *ns, const char *name, char *buf, size_t len)
{
	char full[64];
	ssize_t n;

	snprintf(full, sizeof(full), "loligo.%s.%s", ns, name);
	n = getxattr(path, full, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

static int du_one(const char *path, enum cli_format fmt, struct json_object *arr)
{
	char v[64], rctime[64], qb[32] = "", qf[32] = "";
	struct json_object *o;
	int r;

	r = vx(path, "dir", "rbytes", v, sizeof(v));
	if (r) {
		fprintf(stderr, "loligo fs du: %s: %s\n", path,
			r == -EOPNOTSUPP ? "not on a loligo mount (no loligo.dir.* xattrs)"
			: r == -ENODATA ? "not a directory" : strerror(-r));
		return 1;
	}
	if (vx(path, "dir", "rctime", rctime, sizeof(rctime)))
		rctime[0] = 0;
	if (vx(path, "quota", "max_bytes", qb, sizeof(qb)) || !strcmp(qb, "0"))
		qb[0] = 0;
	if (vx(path, "quota", "max_files", qf, sizeof(qf)) || !strcmp(qf, "0"))
		qf[0] = 0;
	if (fmt == FMT_PLAIN) {
		char rf[32] = "", rs[32] = "";

		vx(path, "dir", "rfiles", rf, sizeof(rf));
		vx(path, "dir", "rsubdirs", rs, sizeof(rs));
		printf("%15s %10s %10s  %-22s %s", v, rf, rs, rctime, path);
		if (*qb || *qf)
			printf("  (quota:%s%s%s%s)", *qb ? " max_bytes " : "", qb, *qf ? " max_files " : "", qf);
		printf("\n");
		return 0;
	}
	o = json_object_new_object();
	json_object_object_add(o, "path", json_object_new_string(path));
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!vx(path, "dir", fields[i], v, sizeof(v)))
			json_object_object_add(o, fields[i], json_object_new_int64(strtoll(v, NULL, 10)));
	json_object_object_add(o, "rctime", json_object_new_string(rctime));
	json_object_object_add(o, "quota_max_bytes", json_object_new_int64(*qb ? strtoll(qb, NULL, 10) : 0));
	json_object_object_add(o, "quota_max_files", json_object_new_int64(*qf ? strtoll(qf, NULL, 10) : 0));
	json_object_array_add(arr, o);
	return 0;
}

int cli_fs_du(int n, char **paths, enum cli_format fmt)
{
	struct json_object *arr = fmt == FMT_PLAIN ? NULL : json_object_new_array();
	int rc = 0;

	if (n < 1) {
		fprintf(stderr, "loligo fs du: which directory? (usage: loligo fs du PATH...)\n");
		json_object_put(arr);
		return EXIT_USAGE;
	}
	if (!arr)
		printf("%15s %10s %10s  %-22s %s\n", "RBYTES", "RFILES", "RSUBDIRS", "RCTIME", "PATH");
	for (int i = 0; i < n; i++)
		if (du_one(paths[i], fmt, arr))
			rc = 1;
	if (arr) {
		printf("%s\n", json_object_to_json_string_ext(arr, fmt == FMT_JSON_PRETTY ? JSON_C_TO_STRING_PRETTY
											     : JSON_C_TO_STRING_PLAIN));
		json_object_put(arr);
	}
	return rc;
}
