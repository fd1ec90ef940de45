/*
 * layout.c - the loligo.{file,dir}.layout virtual xattrs: what their names
 * mean, their text (Ceph's "stripe_unit=4194304 stripe_count=1
 * object_size=4194304 pool=cephfs_data"), and what a layout must be.
 *
 * An inode keeps its layout in mdsp_inode (object_size, stripe_unit,
 * stripe_count, pool; 0 in the stripe fields is the plain layout of older
 * inodes).  How a layout maps a file's bytes to objects is
 * store_file_map's (store/file_data.c), the one mapping the clients and
 * the purge use.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mds/layout.h"
#include "mds/mds.h"

static const struct {
	const char *name;
	enum layout_field field;
} fields[] = {
	{ "object_size", LAYOUT_OBJECT_SIZE },
	{ "stripe_unit", LAYOUT_STRIPE_UNIT },
	{ "stripe_count", LAYOUT_STRIPE_COUNT },
	{ "pool", LAYOUT_POOL },
};

int layout_xattr(const char *name, bool *dir, enum layout_field *field)
{
	const char *rest;

	if (!strncmp(name, "loligo.file.layout", 18)) {
		*dir = false;
		rest = name + 18;
	} else if (!strncmp(name, "loligo.dir.layout", 17)) {
		*dir = true;
		rest = name + 17;
	} else {
		return 0;
	}
	if (!*rest) {
		*field = LAYOUT_ALL;
		return 1;
	}
	if (*rest != '.')
		return 0;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!strcmp(rest + 1, fields[i].name)) {
			*field = fields[i].field;
			return 1;
		}
	return -EINVAL;
}

void layout_of(const struct mdsp_inode *a, uint32_t default_osize, struct mlayout *ly)
{
	ly->object_size = a->object_size ? a->object_size : default_osize;
	ly->stripe_unit = a->stripe_unit ? a->stripe_unit : ly->object_size;
	ly->stripe_count = a->stripe_count ? a->stripe_count : 1;
	ly->pool = a->pool;
}

void layout_store(struct mdsp_inode *a, const struct mlayout *ly)
{
	a->object_size = ly->object_size;
	a->stripe_unit = ly->stripe_unit;
	a->stripe_count = ly->stripe_count;
	a->pool = ly->pool;
}

const char *layout_pool_name(const struct mds *m, uint32_t id)
{
	if (id == 0)
		return m->data_pool_name;
	for (uint32_t i = 0; i < m->ndata_pools; i++)
		if (m->data_pools[i].id == id)
			return m->data_pools[i].name;
	return NULL;
}

static int parse_u32(const char *s, uint32_t *out);

int layout_pool_id(const struct mds *m, const char *name, uint32_t *id)
{
	uint32_t v;

	if (m->data_pool_name && !strcmp(name, m->data_pool_name)) {
		*id = 0;
		return 0;
	}
	for (uint32_t i = 0; i < m->ndata_pools; i++)
		if (!strcmp(m->data_pools[i].name, name)) {
			*id = m->data_pools[i].id;
			return 0;
		}
	/* by id, as Ceph takes a pool id too */
	if (parse_u32(name, &v) == 0 && layout_pool_name(m, v)) {
		*id = v;
		return 0;
	}
	return -ENOENT;
}

size_t layout_format(const struct mds *m, const struct mlayout *ly, enum layout_field field, char *buf,
		     size_t len)
{
	const char *pn = layout_pool_name(m, ly->pool);
	char pool[256];
	int n = 0;

	if (pn)
		snprintf(pool, sizeof(pool), "%s", pn);
	else
		snprintf(pool, sizeof(pool), "%" PRIu32, ly->pool);   /* removed under it: the id */
	switch (field) {
	case LAYOUT_ALL:
		n = snprintf(buf, len, "stripe_unit=%" PRIu32 " stripe_count=%" PRIu32 " object_size=%" PRIu32
			     " pool=%s", ly->stripe_unit, ly->stripe_count, ly->object_size, pool);
		break;
	case LAYOUT_OBJECT_SIZE:
		n = snprintf(buf, len, "%" PRIu32, ly->object_size);
		break;
	case LAYOUT_STRIPE_UNIT:
		n = snprintf(buf, len, "%" PRIu32, ly->stripe_unit);
		break;
	case LAYOUT_STRIPE_COUNT:
		n = snprintf(buf, len, "%" PRIu32, ly->stripe_count);
		break;
	case LAYOUT_POOL:
		n = snprintf(buf, len, "%s", pool);
		break;
	}
	return n < 0 ? 0 : (size_t)n;
}

static int parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int parse_one(const struct mds *m, struct mlayout *ly, enum layout_field field, const char *s)
{
	switch (field) {
	case LAYOUT_OBJECT_SIZE:
		return parse_u32(s, &ly->object_size);
	case LAYOUT_STRIPE_UNIT:
		return parse_u32(s, &ly->stripe_unit);
	case LAYOUT_STRIPE_COUNT:
		return parse_u32(s, &ly->stripe_count);
	case LAYOUT_POOL:
		return layout_pool_id(m, s, &ly->pool) ? -EINVAL : 0;
	case LAYOUT_ALL:
		break;
	}
	return -EINVAL;
}

int layout_parse(const struct mds *m, struct mlayout *ly, enum layout_field field, const char *val, size_t len)
{
	struct mlayout n = *ly;
	char *s, *tok, *save = NULL;
	int r = 0;

	if (!len || len > 4096)
		return -EINVAL;
	s = malloc(len + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, val, len);
	s[len] = '\0';
	/* setfattr -v 65536 is the text; a trailing newline (echo) is not part of it */
	while (len && (s[len - 1] == '\n' || s[len - 1] == ' '))
		s[--len] = '\0';
	if (field != LAYOUT_ALL) {
		r = parse_one(m, &n, field, s);
		goto out;
	}
	for (tok = strtok_r(s, " ", &save); tok && !r; tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '=');
		size_t i;

		if (!eq) {
			r = -EINVAL;
			break;
		}
		*eq = '\0';
		for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
			if (!strcmp(tok, fields[i].name))
				break;
		r = i < sizeof(fields) / sizeof(fields[0]) ? parse_one(m, &n, fields[i].field, eq + 1) : -EINVAL;
	}
out:
	free(s);
	if (r == 0 && !layout_valid(&n))
		r = -EINVAL;
	if (r == 0)
		*ly = n;
	return r;
}

bool layout_valid(const struct mlayout *ly)
{
	return ly->stripe_unit && ly->stripe_unit % MDSP_LAYOUT_UNIT_MIN == 0 && ly->object_size &&
	       ly->object_size <= MDSP_LAYOUT_OBJ_MAX && ly->object_size % ly->stripe_unit == 0 &&
	       ly->stripe_count >= 1 && ly->stripe_count <= MDSP_LAYOUT_COUNT_MAX;
}
