/*
 * options.h - the one table of configuration options.
 *
 * Every option of every daemon is declared once, in the .def file of the
 * subsystem that reads it (common/options/<subsys>.def), as
 *
 *   OPT(name, TYPE, "default", RUNTIME, "description")
 *
 * TYPE is one of STR, INT, UINT, BOOL, DOUBLE, SIZE (accepts K/M/G suffixes),
 * SECS (double seconds), LOGLEVEL ("N" or Ceph's "N/M": log level / memory level).  RUNTIME is 1 when `config set` may change it while
 * the daemon runs, 0 when it is read once at start-up.  `config show`,
 * `--help` and the defaults all come from this table.
 */
#ifndef LOLIGO_COMMON_OPTIONS_H
#define LOLIGO_COMMON_OPTIONS_H

enum cfg_opt_id {
#define OPT(name, type, def, rt, desc) CFG_##name,
#include "common/options/all.def"
#undef OPT
	CFG_MAX
};

#endif
