/*
 * main.c - loligo-fuse: mount loligo through FUSE (libfuse3 lowlevel API).
 *
 *   loligo-fuse [-f] [-d] [-o OPT,...] [-c FILE] [--OPTION=VALUE] MOUNTPOINT
 *   loligo-fuse --no-mount --nfs ADDR:PORT [...]
 *
 * Start-up order, and why:
 *   1. parse everything (no threads yet): our flags, -o options (ours go to
 *      the config, the rest to libfuse), -c/--conf and --key=value;
 *   2. daemonize unless -f, *before* any thread exists (the client library,
 *      the admin socket and libfuse all start threads; fork keeps only the
 *      caller).  The parent waits on a pipe and exits 0 only once the child
 *      reports the mount live, or non-zero with the child's error, which the
 *      child printed on the still shared stderr;
 *   3. block SIGINT/SIGTERM/SIGHUP/SIGQUIT so every thread started from here
 *      on inherits the mask: libfuse's handlers then run in the main thread,
 *      the one waiting in fuse_session_loop_mt(), which wakes and returns;
 *   4. lclient_create, the admin socket, fuse_session_new (checks the FUSE
 *      options before anything is mounted), lclient_mount (bounded by
 *      client_mount_timeout: a dead MDS fails here, with nothing mounted),
 *      fuse_session_mount;
 *   5. report success to the parent, detach stdio, run the loop.
 * Teardown mirrors it: on a signal or an external `fusermount3 -u` the loop
 * returns; we unmount, flush and close the client session, stop the admin
 * socket and exit 0.
 *
 * SIGHUP never stops us (libfuse's handlers would take it as "exit"): it
 * stays blocked in every thread and one thread of ours takes it with
 * sigwait() to reopen the log file (logrotate) and, with the gateway, read
 * nfs_exports again.  SIGTERM, SIGINT and SIGQUIT still end the mount.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/fuse/lfuse.h"
#include "common/admin_sock.h"
#include "common/config.h"
#include "common/log.h"
#include "common/prometheus.h"

#define PROG "loligo-fuse"

/* The client option -o mds= sets (defined by the client library). */
#define MDS_ADDR_OPTION "client_mds_addr"

struct args {
	char *mountpoint;
	bool foreground, debug, single_thread, no_mount, default_permissions, check_config;
	bool allow_others;           /* -o allow_other or allow_root: callers other than the mounter */
	const char *nfs_addr;
	char *fuse_opts;           /* comma-separated, for fuse_session_new */
	char **cfg_sets;           /* "name=value" from -o, applied after --conf */
	int n_cfg_sets;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [options] MOUNTPOINT\n"
		"       " PROG " --no-mount --nfs ADDR:PORT [options]\n"
		"\n"
		"Mount the loligo filesystem at MOUNTPOINT.  Runs in the background once the\n"
		"mount is live (exit status 0), or exits non-zero with the reason.\n"
		"\n"
		"  -o OPT[,OPT...]        mount options:\n"
		"       allow_other            let other users use the mount\n"
		"       default_permissions    permission checks in the kernel (else the MDS checks)\n"
		"       acl                    POSIX ACLs: the kernel checks them (implies default_permissions)\n"
		"       ro | rw                read-only / read-write mount\n"
		"       client_mountpoint=/sub mount /sub of the filesystem as the root\n"
		"       conf=FILE              read FILE as the config (like -c)\n"
		"       mds=HOST:PORT          MDS address (config option " MDS_ADDR_OPTION "); the MDS daemons of\n"
		"                              the filesystem (active, standbys): mds=HOST:PORT/HOST:PORT...\n"
		"       OPTION=VALUE           any loligo config option (see --help-options)\n"
		"       other FUSE mount options (fsname=, max_read=, auto_unmount, ...)\n"
		"  -f                     stay in the foreground (in the background stderr is\n"
		"                         closed: set log_file to keep the log)\n"
		"  -d                     debug: foreground, log every FUSE request\n"
		"  -s                     single-threaded request loop\n"
		"  -c, --conf FILE        config file ([global], [client] and [nfs] sections)\n"
		"  --OPTION=VALUE         override a config option\n"
		"  --nfs ADDR:PORT        also serve NFS from this process (embedded gateway)\n"
		"  --no-mount             serve NFS only, mount nothing\n"
		"  --check-config         check the configuration (nfs_exports; export paths\n"
		"                         too if the MDS answers) and exit: 0 valid, 1 not\n"
		"  -h, --help             this text\n"
		"  --help-options         every config option with its default\n"
		"  -V, --version          version\n"
		"\n"
		"Unmount with `fusermount3 -u MOUNTPOINT` (or umount as root), or send SIGTERM.\n");
}

static int append_opt(char **list, const char *opt)
{
	size_t old = *list ? strlen(*list) : 0, n = strlen(opt);
	char *s = realloc(*list, old + n + 2);

	if (!s)
		return -ENOMEM;
	if (old)
		s[old++] = ',';
	memcpy(s + old, opt, n + 1);
	*list = s;
	return 0;
}

static int add_cfg_set(struct args *a, const char *set)
{
	char **v = realloc(a->cfg_sets, (size_t)(a->n_cfg_sets + 1) * sizeof(*v));
	char *dup = strdup(set);

	if (v)
		a->cfg_sets = v;
	if (!v || !dup) {
		free(dup);
		return -ENOMEM;
	}
	v[a->n_cfg_sets++] = dup;
	return 0;
}

/*
 * One -o list.  Ours: conf= (loaded now, so --key=value still overrides it),
 * mds=, client_mountpoint= and any loligo option name; everything else is a
 * FUSE mount option for fuse_session_new(), which rejects what it does not
 * know.
 */
static int parse_o(struct args *a, const char *list)
{
	char *dup = strdup(list), *save = NULL, *tok;
	int r = 0;

	if (!dup)
		return -ENOMEM;
	for (tok = strtok_r(dup, ",", &save); tok && !r; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		char name[128];

		if (!*tok)
			continue;
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - tok) : (int)strlen(tok), tok);
		if (eq && !strcmp(name, "conf")) {
			char err[512];
			r = cfg_load_file(eq + 1, err, sizeof(err));
			if (r)
				fprintf(stderr, PROG ": %s\n", err);
		} else if (eq && !strcmp(name, "mds")) {
			/* -o splits at commas: a list of MDS addresses is written
			 * mds=HOST:PORT/HOST:PORT here (as the kernel ceph client's mon_addr) */
			char set[512];
			snprintf(set, sizeof(set), MDS_ADDR_OPTION "=%s", eq + 1);
			for (char *sl = strchr(set, '/'); sl; sl = strchr(sl, '/'))
				*sl = ',';
			r = add_cfg_set(a, set);
		} else if (eq && cfg_lookup(name) >= 0) { /* client_mountpoint=, admin_socket=, ... */
			r = add_cfg_set(a, tok);
		} else if (!strcmp(tok, "acl") || !strcmp(tok, "noacl")) {
			/* ours (FUSE_CAP_POSIX_ACL at init), not libfuse's */
			r = add_cfg_set(a, tok[0] == 'n' ? "fuse_acl=false" : "fuse_acl=true");
		} else if (!strcmp(tok, "default_permissions")) {
			a->default_permissions = true;
			r = append_opt(&a->fuse_opts, tok);
		} else if (!strcmp(tok, "allow_other") || !strcmp(tok, "allow_root")) {
			a->allow_others = true;
			r = append_opt(&a->fuse_opts, tok);
		} else if (!strcmp(tok, "debug")) {
			a->debug = a->foreground = true;
			r = append_opt(&a->fuse_opts, tok);
		} else {
			r = append_opt(&a->fuse_opts, tok);
		}
	}
	free(dup);
	return r;
}

/*
 * Take our own flags out of argv (so cfg_parse_args never sees them), load
 * -o conf=, let cfg_parse_args take -c/--conf and --key=value, then what is
 * left must be the mount point.
 * Return: 0, 1 when the program should exit 0 (--help), or -errno.
 */
static int parse_args(int argc, char **argv, struct args *a)
{
	char **rest = calloc((size_t)argc + 1, sizeof(char *));
	int nrest = 0, r = 0;
	char err[512];

	if (!rest)
		return -ENOMEM;
	rest[nrest++] = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];

		if (!strcmp(s, "--")) {
			while (i < argc)
				rest[nrest++] = argv[i++];
			break;
		}
		if (!strcmp(s, "-o") || !strncmp(s, "-o", 2)) {
			const char *list = s[2] ? s + 2 : (i + 1 < argc ? argv[++i] : NULL);
			if (!list) {
				fprintf(stderr, PROG ": -o needs an argument\n");
				r = -EINVAL;
				goto out;
			}
			r = parse_o(a, list);
			if (r)
				goto out;
		} else if (!strcmp(s, "-f")) {
			a->foreground = true;
		} else if (!strcmp(s, "-d") || !strcmp(s, "--debug")) {
			a->debug = a->foreground = true;
		} else if (!strcmp(s, "-s")) {
			a->single_thread = true;
		} else if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
			usage(stdout);
			r = 1;
			goto out;
		} else if (!strcmp(s, "--help-options")) {
			cfg_print_help(stdout, NULL);
			r = 1;
			goto out;
		} else if (!strcmp(s, "-V") || !strcmp(s, "--version")) {
			printf(PROG " (loligo) %s, FUSE library %s\n", LOLIGO_VERSION, fuse_pkgversion());
			r = 1;
			goto out;
		} else if (!strcmp(s, "--no-mount")) {
			a->no_mount = true;
		} else if (!strcmp(s, "--check-config")) {
			a->check_config = true;
		} else if (!strcmp(s, "--nfs") || !strncmp(s, "--nfs=", 6)) {
			a->nfs_addr = s[5] == '=' ? s + 6 : (i + 1 < argc ? argv[++i] : NULL);
			if (!a->nfs_addr || !*a->nfs_addr) {
				fprintf(stderr, PROG ": --nfs needs ADDR:PORT\n");
				r = -EINVAL;
				goto out;
			}
		} else {
			rest[nrest++] = argv[i];
		}
	}
	rest[nrest] = NULL;

	r = cfg_parse_args(&nrest, rest, err, sizeof(err));
	if (r) {
		fprintf(stderr, PROG ": %s\n", err);
		goto out;
	}
	for (int i = 0; i < a->n_cfg_sets; i++) {
		char *set = a->cfg_sets[i], *eq = strchr(set, '=');
		int id;

		*eq = '\0';
		id = cfg_lookup(set);
		if (id < 0) {
			fprintf(stderr, PROG ": -o %s: this build has no option %s\n", set, set);
			r = -EINVAL;
			goto out;
		}
		r = cfg_set(id, eq + 1, false, err, sizeof(err));
		if (r) {
			fprintf(stderr, PROG ": -o %s=%s: %s\n", set, eq + 1, err);
			goto out;
		}
	}
	for (int i = 1; i < nrest; i++) {
		const char *s = rest[i];

		if (!strcmp(s, "--"))
			continue;
		if (s[0] == '-') {
			fprintf(stderr, PROG ": unknown option '%s' (try --help)\n", s);
			r = -EINVAL;
			goto out;
		}
		if (a->mountpoint) {
			fprintf(stderr, PROG ": more than one mount point ('%s' and '%s')\n", a->mountpoint, s);
			r = -EINVAL;
			goto out;
		}
		a->mountpoint = strdup(s);
	}
	if (!r && lclient_check_mds_addr(err, sizeof(err))) {
		fprintf(stderr, PROG ": %s\n", err);
		r = -EINVAL;
		goto out;
	}
	if (a->check_config) {
		/* no mount point needed: nothing is mounted */
	} else if (a->no_mount && !a->nfs_addr) {
		fprintf(stderr, PROG ": --no-mount needs --nfs ADDR:PORT\n");
		r = -EINVAL;
	} else if (a->no_mount && a->mountpoint) {
		fprintf(stderr, PROG ": --no-mount takes no mount point\n");
		r = -EINVAL;
	} else if (!a->no_mount && !a->mountpoint) {
		fprintf(stderr, PROG ": no mount point given (try --help)\n");
		r = -EINVAL;
	}
out:
	free(rest);
	return r;
}

/* ---- daemonizing -------------------------------------------------------- */

static int status_fd = -1; /* the child's end of the pipe to a waiting parent */

/*
 * Fork; the parent waits until the child reports its result (one byte: 0
 * mounted, else an exit status) and exits with it.  Returns in the child.
 */
static int daemonize(void)
{
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		unsigned char st = 1;
		ssize_t n;

		close(fds[1]);
		do
			n = read(fds[0], &st, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1) {
			fprintf(stderr, PROG ": the mount process died before the mount was up\n");
			_exit(1);
		}
		_exit(st);
	}
	close(fds[0]);
	status_fd = fds[1];
	setsid();
	return 0;
}

static void report_status(unsigned char st)
{
	if (status_fd < 0)
		return;
	if (write(status_fd, &st, 1) != 1) {
		/* the parent is gone: nothing to tell */
	}
	close(status_fd);
	status_fd = -1;
}

/* After the mount is up: stop holding the terminal and the caller's cwd. */
static void detach_stdio(void)
{
	int fd = open("/dev/null", O_RDWR);

	if (chdir("/") < 0) {
		/* stays where it was; harmless */
	}
	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO); /* logs: set log_file to keep them */
	if (fd > STDERR_FILENO)
		close(fd);
}

/* ---- SIGHUP: reopen the log, reload the exports --------------------------- */

/*
 * The same thread watches for the end of the FUSE loop (SIGTERM/SIGINT/
 * SIGQUIT through libfuse's handlers, an unmount from outside): libfuse
 * joins its workers before fuse_session_loop_mt() returns, and a worker
 * may be waiting for an MDS that is gone (a hard mount waits for good), so
 * the client is told at once (lclient_shutdown_begin: every wait for the
 * MDS ends within client_unmount_timeout) rather than after the loop.
 */
#define LOOP_WATCH_MS 100

struct hup_thread {
	pthread_t thread;
	bool running;
	_Atomic bool stop;
	void *gw;	/* the NFS gateway or NULL; set before the thread starts */
	struct lfuse *lf;	/* set before the thread starts */
};

static void *hup_main(void *arg)
{
	struct hup_thread *h = arg;
	const struct timespec tick = { .tv_sec = 0, .tv_nsec = LOOP_WATCH_MS * 1000000L };
	bool told = false;
	sigset_t hup;
	int sig;

	pthread_setname_np(pthread_self(), "fuse-hup");
	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	for (;;) {
		sig = sigtimedwait(&hup, NULL, &tick);
		if (atomic_load(&h->stop))
			break;
		if (!told && h->lf && h->lf->se && fuse_session_exited(h->lf->se)) {
			lclient_shutdown_begin(h->lf->c);
			told = true;
		}
		if (sig != SIGHUP)
			continue;
		dinfo(FUSE, "SIGHUP: reopening the log file%s", h->gw ? " and reloading nfs_exports" : "");
		log_reopen();
		if (h->gw)
			lfuse_nfs_reload(h->gw);
	}
	return NULL;
}

/* SIGHUP must already be blocked in this thread (and so in all later ones). */
static int hup_start(struct hup_thread *h, void *gw, struct lfuse *lf)
{
	h->gw = gw;
	h->lf = lf;
	atomic_store(&h->stop, false);
	if (pthread_create(&h->thread, NULL, hup_main, h))
		return -EAGAIN;
	h->running = true;
	return 0;
}

static void hup_stop(struct hup_thread *h)
{
	if (!h->running)
		return;
	atomic_store(&h->stop, true);
	pthread_kill(h->thread, SIGHUP);
	pthread_join(h->thread, NULL);
	h->running = false;
}

/* ---- main --------------------------------------------------------------- */

static const char *errmsg(int r)
{
	switch (r) {
	case -ETIMEDOUT:
		return "timed out (is loligo-mds running and reachable? see client_mount_timeout)";
	case -ECONNREFUSED:
		return "connection refused (is loligo-mds running at that address?)";
	default:
		return strerror(-r);
	}
}

/*
 * Whether SELinux is enabled on this host: selinuxfs is registered only
 * then (security/selinux/selinuxfs.c), and /proc/filesystems shows it even
 * where /sys/fs/selinux is not mounted (a container).
 */
static bool host_selinux(void)
{
	FILE *f = fopen("/proc/filesystems", "re");
	char line[128];
	bool on = false;

	if (!f)
		return true; /* cannot tell: keep the labels */
	while (!on && fgets(line, sizeof(line), f))
		on = strstr(line, "\tselinuxfs\n") != NULL;
	fclose(f);
	return on;
}

/*
 * fuse_selinux_xattr: with SELinux enabled the kernel answers getxattr of
 * security.selinux itself (the LSM's label of the inode) and FUSE mounts
 * are labelled by policy (genfscon), so the name reaches us only where no
 * SELinux uses it, from ls -l (getfilecon) for every file it lists: a
 * refusal (EOPNOTSUPP) is remembered by coreutils per filesystem.
 */
static int selinux_xattr_off(bool *off)
{
	char v[16];

	cfg_str(CFG_fuse_selinux_xattr, v, sizeof(v));
	if (!strcmp(v, "on"))
		*off = false;
	else if (!strcmp(v, "off"))
		*off = true;
	else if (!strcmp(v, "auto"))
		*off = !host_selinux();
	else
		return -EINVAL;
	return 0;
}

static struct fuse_args build_fuse_args(const char *argv0, const struct args *a)
{
	struct fuse_args fa = FUSE_ARGS_INIT(0, NULL);
	char fsname[256];

	fuse_opt_add_arg(&fa, argv0);
	if (a->debug)
		fuse_opt_add_arg(&fa, "-d");
	/* /proc/mounts shows "loligo /mnt fuse.loligo ...", as ceph-fuse shows ceph-fuse */
	snprintf(fsname, sizeof(fsname), "fsname=loligo,subtype=loligo");
	fuse_opt_add_arg(&fa, "-o");
	fuse_opt_add_arg(&fa, fsname);
	if (cfg_bool(CFG_fuse_allow_other)) {
		fuse_opt_add_arg(&fa, "-o");
		fuse_opt_add_arg(&fa, "allow_other");
	}
	if (cfg_bool(CFG_fuse_default_permissions)) {
		fuse_opt_add_arg(&fa, "-o");
		fuse_opt_add_arg(&fa, "default_permissions");
	}
	if (a->fuse_opts) {
		fuse_opt_add_arg(&fa, "-o");
		fuse_opt_add_arg(&fa, a->fuse_opts);
	}
	return fa;
}

int main(int argc, char **argv)
{
	struct args a = {0};
	struct lfuse lf = {0};
	struct fuse_args fa = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *lcfg = NULL;
	struct asok *asok = NULL;
	struct hup_thread hup = { 0 };
	struct prom *prom = NULL;
	void *gw = NULL;
	char root_path[PATH_MAX], asok_path[PATH_MAX], raw[PATH_MAX], ident[128];
	sigset_t sigs, old, loop_mask;
	bool mounted = false, sig_handlers = false, started_client = false;
	int r, ret = 1;

	log_init(PROG);
	cfg_init("client,nfs");	/* the gateway's options live in [nfs] */
	r = parse_args(argc, argv, &a);
	if (r) {
		ret = r > 0 ? 0 : (r == -EINVAL ? 2 : 1);
		goto out_args;
	}
	if (a.check_config) {
		char kerr[1536];

		if (lclient_check_keyring(kerr, sizeof(kerr))) {
			fprintf(stderr, PROG ": %s\n", kerr);
			goto out_args;
		}
		ret = lfuse_check_config();
		goto out_args;
	}
	/* $name in admin_socket and log_file: the name we authenticate as */
	cfg_str(CFG_client_auth_name, ident, sizeof(ident));
	cfg_set_identity("client", ident);
	if (a.nfs_addr && lfuse_nfs_check_syntax())
		goto out_args;           /* a bad export: fail before anything starts */
	{
		/* a keyring group or others may read (or a broken one) stops us
		 * here, with the reason on stderr, before we fork or mount */
		char kerr[1536];

		if (lclient_check_keyring(kerr, sizeof(kerr))) {
			fprintf(stderr, PROG ": %s\n", kerr);
			goto out_args;
		}
	}
	if (a.mountpoint) {
		char *abs = realpath(a.mountpoint, NULL);
		struct stat st;

		if (!abs || stat(abs, &st) < 0 || !S_ISDIR(st.st_mode)) {
			fprintf(stderr, PROG ": mount point %s: %s\n", a.mountpoint,
				abs ? "not a directory" : strerror(errno));
			free(abs);
			goto out_args;
		}
		free(a.mountpoint);
		a.mountpoint = abs;
	}
	cfg_str(CFG_client_mountpoint, root_path, sizeof(root_path));
	if (!root_path[0])
		snprintf(root_path, sizeof(root_path), "/");

	lf.set_user_groups = cfg_bool(CFG_fuse_set_user_groups);
	lf.cache_readdir = cfg_bool(CFG_fuse_cache_readdir);
	lf.readdirplus = cfg_bool(CFG_fuse_readdirplus);
	lf.negative_timeout = cfg_double(CFG_fuse_negative_timeout);
	lf.max_write = (unsigned)cfg_uint(CFG_fuse_max_write);
	lf.max_readahead = (unsigned)cfg_uint(CFG_fuse_max_readahead);
	lf.acl = cfg_bool(CFG_fuse_acl);
	if (selinux_xattr_off(&lf.no_selinux_xattr) < 0) {
		fprintf(stderr, PROG ": fuse_selinux_xattr must be on, off or auto\n");
		goto out_args;
	}
	/* the kernel turns default_permissions on with FUSE_POSIX_ACL */
	lf.default_permissions = a.default_permissions || cfg_bool(CFG_fuse_default_permissions) || lf.acl;

	if (!a.foreground) {
		r = daemonize();
		if (r) {
			fprintf(stderr, PROG ": cannot fork: %s\n", strerror(-r));
			goto out_args;
		}
	}

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &sigs, &old);
	/* what the FUSE loop runs with: libfuse's handlers end it, SIGHUP stays ours */
	loop_mask = old;
	sigaddset(&loop_mask, SIGHUP);
	log_install_crash_dump();

	r = lclient_create(&lf.c);
	if (r) {
		fprintf(stderr, PROG ": cannot create the client: %s\n", strerror(-r));
		goto out;
	}
	{
		/* one live process per name and mount point on this host; a
		 * restart after kill -9 reclaims the dead one's session at mount
		 * (client/reclaim.c).  Before the admin socket and the mount: a
		 * refused second process must touch nothing of the first's.  The
		 * gateway alone keys on its address, unless the port is 0 (no
		 * address its NFS clients could come back to) */
		char key[PATH_MAX + 64] = "", err[PATH_MAX + 512] = "";
		const char *port = a.nfs_addr ? strrchr(a.nfs_addr, ':') : NULL;

		if (!a.no_mount)
			snprintf(key, sizeof(key), "%s", a.mountpoint);
		else if (port && atoi(port + 1) > 0)
			snprintf(key, sizeof(key), "nfs %s", a.nfs_addr);
		r = key[0] ? lclient_claim(lf.c, key, err, sizeof(err)) : 0;
		if (r) {
			fprintf(stderr, PROG ": refusing to mount: %s\n", err);
			goto out;
		}
	}
	cfg_str(CFG_admin_socket, raw, sizeof(raw));
	cfg_expand(raw, asok_path, sizeof(asok_path));
	if (asok_path[0]) {
		r = asok_start(asok_path, &asok);
		if (r) {
			fprintf(stderr, PROG ": admin socket %s: %s\n", asok_path, strerror(-r));
			goto out;
		}
		r = lclient_register_asok(lf.c, asok);
		if (r)
			fprintf(stderr, PROG ": admin socket commands: %s (continuing)\n", strerror(-r));
	}
	lf.mountpoint = a.mountpoint;
	r = lfuse_register_asok(&lf, asok);
	if (r)
		fprintf(stderr, PROG ": admin socket commands: %s (continuing)\n", strerror(-r));

	if (!a.no_mount) {
		fa = build_fuse_args(argv[0], &a);
		lf.se = fuse_session_new(&fa, &lfuse_ops, sizeof(lfuse_ops), &lf);
		if (!lf.se) {
			fprintf(stderr, PROG ": bad FUSE options (%s)\n", a.fuse_opts ? a.fuse_opts : "");
			goto out;
		}
		r = lfuse_inval_start(&lf);
		if (r) {
			fprintf(stderr, PROG ": cannot start the invalidation thread: %s\n", strerror(-r));
			goto out;
		}
		lclient_set_callbacks(lf.c, &lfuse_inval_callbacks, &lf);
		/* names in directories not everyone may search can be cached in
		 * the kernel when it checks search permission itself, or when only
		 * root reaches the mount (no allow_other: FUSE lets in only the
		 * mounter's uid and gid), who may search anything */
		lclient_set_search_unchecked_ok(lf.c, lf.default_permissions ||
							    (!a.allow_others && !cfg_bool(CFG_fuse_allow_other) &&
							     geteuid() == 0 && getegid() == 0));
	}

	{
		char where[PATH_MAX + 64];

		if (a.no_mount)
			snprintf(where, sizeof(where), "nfs %s", a.nfs_addr);
		else
			snprintf(where, sizeof(where), "%s%s%s", a.mountpoint, a.nfs_addr ? " + nfs " : "",
				 a.nfs_addr ? a.nfs_addr : "");
		lclient_set_mount_point(lf.c, where);
	}
	r = lclient_mount(lf.c, root_path);
	if (r) {
		char addr[256];
		int id = cfg_lookup(MDS_ADDR_OPTION);

		fprintf(stderr, PROG ": cannot mount loligo:%s from the MDS at %s: %s\n", root_path,
			id >= 0 ? cfg_get_string(id, addr, sizeof(addr)) : "?", errmsg(r));
		goto out;
	}
	started_client = true;
	lf.root = lc_root(lf.c);
	if (!lf.root) {
		fprintf(stderr, PROG ": the client has no root inode\n");
		goto out;
	}
	lf.root_ino = lc_ino(lf.root);

	if (a.nfs_addr) {
		r = lfuse_nfs_start(a.nfs_addr, lf.c, asok, &gw);
		if (r)
			goto out;
	}
	{
		char paddr[256], perr[512];

		cfg_str(CFG_prometheus_addr, paddr, sizeof(paddr));
		r = prom_start(paddr, (int)cfg_int(CFG_client_prometheus_port), ident, &prom, perr, sizeof(perr));
		if (r) {
			fprintf(stderr, PROG ": the Prometheus endpoint (client_prometheus_port, prometheus_addr): %s\n",
				perr);
			goto out;
		}
	}

	if (!a.no_mount) {
		if (fuse_set_signal_handlers(lf.se) != 0) {
			fprintf(stderr, PROG ": cannot install signal handlers\n");
			goto out;
		}
		sig_handlers = true;
		if (fuse_session_mount(lf.se, a.mountpoint) != 0) {
			fprintf(stderr, PROG ": cannot mount at %s (see the message above)\n", a.mountpoint);
			goto out;
		}
		mounted = true;
		r = lfuse_tmpfile_hook(lf.se);
		if (r)   /* O_TMPFILE stays EOPNOTSUPP; everything else works */
			derr(FUSE, "no O_TMPFILE on this mount: %s", strerror(-r));
		dinfo(FUSE, "mounted loligo:%s at %s", root_path, a.mountpoint);
	}

	report_status(0);
	if (!a.foreground)
		detach_stdio();

	if (a.no_mount) {
		/* The gateway serves from its own threads; wait for a signal. */
		int sig = 0;

		for (;;) {
			if (sigwait(&sigs, &sig))
				continue;
			if (sig != SIGHUP)
				break;
			dinfo(FUSE, "SIGHUP: reopening the log file and reloading nfs_exports");
			log_reopen();
			lfuse_nfs_reload(gw);
		}
		dinfo(FUSE, "signal %d: stopping", sig);
		ret = 0;
		goto out;
	}

	r = hup_start(&hup, gw, &lf);
	if (r) {
		fprintf(stderr, PROG ": cannot start the SIGHUP thread: %s\n", strerror(-r));
		goto out;
	}
	pthread_sigmask(SIG_SETMASK, &loop_mask, NULL);
	if (a.single_thread) {
		r = fuse_session_loop(lf.se);
	} else {
		lcfg = fuse_loop_cfg_create();
		if (!lcfg) {
			r = -ENOMEM;
		} else {
			fuse_loop_cfg_set_clone_fd(lcfg, cfg_bool(CFG_fuse_clone_fd));
			fuse_loop_cfg_set_idle_threads(lcfg, (unsigned)cfg_uint(CFG_fuse_max_idle_threads));
			fuse_loop_cfg_set_max_threads(lcfg, (unsigned)cfg_uint(CFG_fuse_max_threads));
			r = fuse_session_loop_mt(lf.se, lcfg);
		}
	}
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	/* >0: the signal that ended it; 0: unmounted from outside */
	if (r < 0)
		derr(FUSE, "request loop failed: %s", strerror(-r));
	ret = r < 0 ? 1 : 0;
	dinfo(FUSE, "unmounting %s", a.mountpoint);

out:
	/* whatever still waits for the MDS (gateway workers too) ends in bounded time */
	if (started_client)
		lclient_shutdown_begin(lf.c);
	hup_stop(&hup);
	prom_stop(prom);
	lfuse_inval_stop(&lf);
	if (mounted)
		fuse_session_unmount(lf.se);
	if (sig_handlers)
		fuse_remove_signal_handlers(lf.se);
	if (gw)
		lfuse_nfs_stop(gw);
	if (lf.root)
		lc_put(lf.c, lf.root);
	if (started_client)
		lclient_unmount(lf.c);
	if (asok)
		asok_stop(asok);
	lfuse_perf_unregister();
	if (lf.c)
		lclient_destroy(lf.c);
	lfuse_inval_free(&lf);
	if (lf.se)
		fuse_session_destroy(lf.se);
	if (lcfg)
		fuse_loop_cfg_destroy(lcfg);
	fuse_opt_free_args(&fa);
out_args:
	for (int i = 0; i < a.n_cfg_sets; i++)
		free(a.cfg_sets[i]);
	free(a.cfg_sets);
	free(a.fuse_opts);
	free(a.mountpoint);
	/* a failed mount is reported once everything is released (the local
	 * data store's lock too), so a retry by the caller cannot find it busy */
	if (ret && status_fd >= 0)
		report_status(1);
	return ret;
}
