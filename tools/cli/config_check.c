/*
 * config_check.c - `loligo config check [-c FILE]`: read a config file as
 * each daemon would (loligo-mds: [global]+[mds]; loligo-fuse and its NFS
 * gateway: [global]+[client]+[nfs]) and check what can be checked without
 * the cluster: unknown options, bad values, and nfs_exports (every export
 * and field, as the gateway does before serving; export paths live in the
 * filesystem: `loligo-fuse --check-config` checks those against the MDS).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/config.h"
#include "nfs_gw/export/export.h"
#include "tools/cli/cli.h"

static const char *const fallbacks[] = { "./loligo.conf", "./vstart/loligo.conf", "/etc/loligo/loligo.conf" };

int cli_config_check(const char *conf)
{
	static const struct {
		const char *sections, *who;
	} daemons[] = { { "mds", "loligo-mds" }, { "client,nfs", "loligo-fuse" } };
	struct nfs_exports *x;
	char err[1024], *spec;
	size_t i;
	int bad = 0;

	if (!conf)
		conf = getenv("LOLIGO_CONF");
	for (i = 0; !conf && i < sizeof(fallbacks) / sizeof(fallbacks[0]); i++)
		if (access(fallbacks[i], R_OK) == 0)
			conf = fallbacks[i];
	if (!conf) {
		fprintf(stderr, "loligo: which config? pass -c FILE (or set LOLIGO_CONF)\n");
		return EXIT_USAGE;
	}
	for (i = 0; i < sizeof(daemons) / sizeof(daemons[0]); i++) {
		cfg_init(daemons[i].sections);
		if (cfg_load_file(conf, err, sizeof(err))) {
			fprintf(stderr, "loligo: %s (as %s reads it)\n", err, daemons[i].who);
			bad = 1;
			continue;
		}
		if (i == 1) {
			spec = cfg_strdup(CFG_nfs_exports);
			if (!spec || nfs_exports_parse(spec, &x, err, sizeof(err))) {
				fprintf(stderr, "loligo: %s: %s\n", conf, spec ? err : "out of memory");
				bad = 1;
			} else {
				nfs_exports_put(x);
			}
			free(spec);
		}
	}
	if (!bad)
		printf("%s: OK\n", conf);
	return bad;
}
