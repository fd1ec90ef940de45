/*
 * tests/lib/daemon.c - daemons of the integration suites (see daemon.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/daemon.h"
#include "tests/lib/wait.h"
#include "tests/test_keyring.h"
#include "tools/bench/mds_wire.h"

const char *lt_build_path(const char *rel, char *buf, size_t len)
{
	const char *b = getenv("LOLIGO_BUILD_DIR");

	snprintf(buf, len, "%s/%s", b ? b : ".", rel);
	return buf;
}

pid_t lt_spawn(char *const argv[], const char *out)
{
	pid_t p = fork();

	if (p < 0)
		return -errno;
	if (p == 0) {
		int fd;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	return p;
}

int lt_run(char *const argv[], const char *out)
{
	pid_t p = lt_spawn(argv, out);
	int st = -1;

	if (p < 0 || waitpid(p, &st, 0) != p)
		return -1;
	return st;
}

static int read_port(const char *pf)
{
	FILE *f = fopen(pf, "r");
	int port = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%d", &port) != 1)
		port = 0;
	fclose(f);
	return port;
}

int lt_wait_port_file(pid_t pid, const char *pf)
{
	int port = 0;
	bool exited = false;

	if (!LT_WAITED((port = read_port(pf)) > 0 || (exited = waitpid(pid, NULL, WNOHANG) == pid)))
		return 0;
	return exited ? 0 : port;
}

int lt_stop(pid_t pid, int sig)
{
	int st = -1;
	pid_t r;

	if (pid <= 0)
		return -1;
	kill(pid, sig);
	if (LT_WAITED((r = waitpid(pid, &st, WNOHANG)) != 0))
		return r == pid ? st : -1;
	kill(pid, SIGKILL);
	return waitpid(pid, &st, 0) == pid ? st : -1;
}

int lt_mds_mkfs(struct lt_mds *m)
{
	char bin[4096], conf[4096], out[4096];
	int st;

	lt_build_path("mds/loligo-mds", bin, sizeof(bin));
	snprintf(conf, sizeof(conf), "%s/loligo.conf", m->dir);
	snprintf(out, sizeof(out), "%s/mkfs.out", m->dir);
	char *argv[] = { bin, "-c", conf, "--mkfs", NULL };
	st = lt_run(argv, out);
	return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int lt_mds_start(struct lt_mds *m, int port, const char *const *extra)
{
	char bin[4096], conf[4096], out[4096], pf[4096], portarg[32];
	char *argv[32];
	int n = 0;

	lt_build_path("mds/loligo-mds", bin, sizeof(bin));
	snprintf(conf, sizeof(conf), "%s/loligo.conf", m->dir);
	snprintf(out, sizeof(out), "%s/mds.out", m->dir);
	snprintf(pf, sizeof(pf), "%s/mds.port", m->dir);
	snprintf(portarg, sizeof(portarg), "--mds_port=%d", port);
	unlink(pf);
	argv[n++] = bin;
	argv[n++] = "-c";
	argv[n++] = conf;
	argv[n++] = portarg;
	argv[n++] = "--port-file";
	argv[n++] = pf;
	for (; extra && *extra && n < 31; extra++)
		argv[n++] = (char *)*extra;
	argv[n] = NULL;
	m->pid = lt_spawn(argv, out);
	if (m->pid < 0) {
		m->pid = 0;
		return -1;
	}
	m->port = lt_wait_port_file(m->pid, pf);
	if (m->port > 0)
		return 0;
	lt_stop(m->pid, SIGKILL);        /* reaped already if it exited */
	m->pid = 0;
	fprintf(stderr, "loligo-mds did not start (see %s)\n", out);
	return -1;
}

int lt_mds_stop(struct lt_mds *m, int sig)
{
	int st;

	if (m->pid <= 0)
		return -1;
	st = lt_stop(m->pid, sig);
	m->pid = 0;
	return st;
}

int lt_fs_make(struct lt_mds *m, const char *tmpl, const char *mds_extra, const char *client_extra)
{
	char conf[sizeof(m->dir) + 16];
	const char *d = m->dir;
	FILE *f;

	memset(m, 0, sizeof(*m));
	if (strlen(tmpl) >= sizeof(m->dir) - 64)
		return -1;
	strcpy(m->dir, tmpl);
	if (!mkdtemp(m->dir)) {
		fprintf(stderr, "mkdtemp %s: %s\n", tmpl, strerror(errno));
		m->dir[0] = 0;
		return -1;
	}
	snprintf(conf, sizeof(conf), "%s/loligo.conf", d);
	f = fopen(conf, "w");
	if (!f)
		return -1;
	fprintf(f,
		"[global]\nstore_backend = local\nstore_local_path = %s/store\n"
		"[mds]\nmds_addr = 127.0.0.1\nlog_file = %s/mds.log\nadmin_socket = %s/mds.asok\nmds_keyring = %s/keyring\n%s"
		"[client]\nlog_file = %s/client.log\nclient_mount_timeout = 10\nclient_keyring = %s/client.keyring\n%s",
		d, d, d, d, mds_extra ? mds_extra : "", d, d, client_extra ? client_extra : "");
	if (fclose(f))
		return -1;
	if (test_write_keyrings(d))     /* <dir>/keyring (MDS), <dir>/client.keyring */
		return -1;
	if (lt_mds_mkfs(m)) {
		fprintf(stderr, "loligo-mds --mkfs failed (see %s/mkfs.out)\n", d);
		return -1;
	}
	return lt_mds_start(m, 0, NULL);
}

void lt_fs_remove(struct lt_mds *m, const char *keep_env)
{
	char cmd[sizeof(m->dir) + 16];

	lt_mds_stop(m, SIGTERM);
	if (!m->dir[0])
		return;
	if (keep_env && getenv(keep_env)) {
		fprintf(stderr, "kept %s\n", m->dir);
		return;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", m->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", m->dir);
}

int lt_suite_main(Suite *s, const char *prefix, char *parent, size_t len)
{
	SRunner *sr;
	int failed;

	if (mdsproc_parent_init(parent, len, prefix))
		return 1;
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	mdsproc_parent_remove(parent);
	return failed ? 1 : 0;
}
