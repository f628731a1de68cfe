/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * gpuasyncfs: the GpuAsyncCore control plane as a directory tree.
 *
 *   $ gpuasyncfs --sim /mnt/gpuasync              # the simulated card
 *   $ gpuasyncfs /dev/datadev_0 /mnt/gpuasync      # a real card
 *   $ gpuasyncfs -o config=/etc/gpuasyncfs.conf,allow_other,gid=daq,mode=0664 \
 *         /dev/datadev_0 /mnt/gpuasync
 *   $ fusermount3 -u /mnt/gpuasync                 # or SIGINT/SIGTERM
 *
 * Settings, later ones winning: built-in defaults, the config file (-o
 * config=FILE, else /etc/gpuasyncfs.conf when it exists), then -o options
 * ("key=value" or "section.key=value", the keys of the config file), then
 * the DEVICE argument or --sim.  Every other -o option goes to FUSE.
 * mount.fuse3 (fstab) runs "gpuasyncfs SOURCE MOUNTPOINT -o ...": SOURCE
 * is the device ("sim", "/dev/datadev_0"); "gpuasyncfs" or "none" mean
 * "take it from the config".
 *
 * Start-up follows the libfuse 3.14 sequence (parse, session, signal
 * handlers, mount, loop, unmount, destroy) with one change: the daemon
 * forks *before* opening the device instead of calling fuse_daemonize()
 * after mounting, because the simulated card runs threads that a fork
 * would lose.  The parent waits until the child has mounted (or failed)
 * and exits with its status, so "gpuasyncfs ... && ls MNT" works and
 * errors reach the terminal.  Every exit path closes the device, which
 * releases all buffers (GPU memory freed, pins released).
 *
 * Around that: messages go to syslog as well once the daemon forks (its
 * stderr ends on /dev/null), systemd hears "READY=1" once the mount is
 * live (Type=notify), then STATUS= and watchdog pings while the mount
 * answers, and STOPPING=1 at the end, a mountpoint that already holds a live gpuasyncfs
 * (or a dead FUSE mount) is refused, and a daemon started unattended with
 * no device says loudly that it serves the simulated card.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <malloc.h>
#include <pwd.h>
#include <stdarg.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <fuse_log.h>
#include <fuse_lowlevel.h>

#include "fs.h"

/* More FUSE threads than this only wait on the device lock. */
#define GA_FS_MAX_THREADS 256

/* Said at start (log) and kept in errors when nobody chose the simulated
 * card and nobody is at a terminal to see which card got mounted. */
#define SIM_WARNING                                                                                \
	"WARNING: no device given and no [device] path in the config: serving the SIMULATED "      \
	"card, not hardware (set [device] path, or give --sim to mean it)"

struct options {
	int sim;
	int help;
	int version;
	unsigned int threads;
	char *threads_arg; /* -o threads= as given */
	const char *config;
	char *positional[3];
	int npositional;
	/* -o settings for the config, in order: "key=value". */
	char **settings;
	int nsettings;
	/* Known config keys, learnt from ga_config_format: "section.key". */
	char keys[64][48];
	int nkeys;
	int failed;
};

enum { KEY_SIM, KEY_HELP, KEY_VERSION };

static const struct fuse_opt option_spec[] = {
	FUSE_OPT_KEY("--sim", KEY_SIM),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	{"config=%s", offsetof(struct options, config), 0},
	{"threads=%s", offsetof(struct options, threads_arg), 0},
	FUSE_OPT_END};

static void usage(const char *prog)
{
	printf("usage: %s [options] [DEVICE] MOUNTPOINT\n"
	       "\n"
	       "Mount a GpuAsyncCore card (FPGA->GPU RDMA) as a directory tree.\n"
	       "\n"
	       "DEVICE:\n"
	       "    --sim                  the simulated card (also DEVICE \"sim\"; its "
	       "settings: -o version=...)\n"
	       "    /dev/datadev_N         a card driven by datadev or gpuasync.ko\n"
	       "    (none)                 [device] path from the config (default: sim)\n"
	       "\n"
	       "gpuasyncfs options (-o key=value, or section.key=value when ambiguous):\n"
	       "    -o config=FILE         ini file (default %s when present)\n"
	       "    -o allow_other         let other users in (default: only the mounting user)\n"
	       "    -o uid=USER,gid=GROUP  owner of the files\n"
	       "    -o mode=0664           permissions of writable files (default 0644)\n"
	       "    -o version=1..%u        simulated firmware version (sim.version)\n"
	       "    -o max_buffers=N       simulated buffers per direction\n"
	       "    -o buffers.size=64K    size mkdir allocates; -o max=N buffers at most\n"
	       "    -o interval_ms=100     sampling interval for poll() on live files\n"
	       "    -o settings=FILE       apply card settings at mount (ini as MNT/settings, *.yaml as settings.yaml)\n"
	       "    -o pin=auto|p2p|dmabuf how buffers reach the driver (default auto: dma-buf\n"
	       "                           where memory and driver can; dmabuf: or fail)\n"
	       "    -o threads=N           serve with N threads, 1-256 (default 1: one loop)\n"
	       "    -o observe             look only: another process owns the card; writes and\n"
	       "                           mkdir get EROFS, registers are mapped read-only\n"
	       "    -o reclaim             remove buffers a killed program left on the card\n"
	       "    -o http=[ADDR:]PORT    serve metrics over HTTP (yes: port %d, every address)\n"
	       "    -o targets_dir=DIR     write a Prometheus file_sd target file there\n"
	       "    -o instrument=,partition=,detname=,alias=   its labels\n"
	       "    (every key of the config file is accepted; see the 'config' file of a mount)\n"
	       "\n"
	       "    -h, --help             this help     -V, --version   versions\n"
	       "    --check [DEVICE]       will GPUDirect work here? (--check --help)\n"
	       "    --topology [DEVICE]    which GPU the card pairs with, and why\n"
	       "\n",
	       prog, GA_DEFAULT_CONFIG_PATH, GA_VERSION_MAX, GA_HTTP_DEFAULT_PORT);
	/* libfuse's own list would offer max_threads (refused here) and -s
	 * (a single loop is already the default): the ones that apply. */
	printf("FUSE options:\n"
	       "    -d   -o debug          print every FUSE request (implies -f)\n"
	       "    -f                     stay in the foreground\n"
	       "    -o clone_fd            with -o threads=N above 1: a /dev/fuse descriptor "
	       "per thread\n");
	fflush(stdout);
	fuse_lowlevel_help();
}

/* Learn "section.key" for every config key from the rendered defaults, so
 * -o options can be told apart from FUSE's own without a second list. */
static void learn_keys(struct options *o)
{
	struct ga_config cfg;
	char buf[8192], section[24] = "";
	char *save = NULL;

	ga_config_defaults(&cfg);
	if (ga_config_format(&cfg, buf, sizeof(buf)) < 0)
		return;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t klen;

		while (*line == ' ' || *line == '\t')
			line++;
		if (*line == '[') {
			snprintf(section, sizeof(section), "%.*s", (int)strcspn(line + 1, "]"),
				 line + 1);
			continue;
		}
		if (!*line || *line == '#' || *line == ';' || !strchr(line, '='))
			continue;
		klen = strcspn(line, " \t=");
		if (o->nkeys < 64)
			snprintf(o->keys[o->nkeys++], sizeof(o->keys[0]), "%s.%.*s", section,
				 (int)klen, line);
	}
}

static bool is_config_key(const struct options *o, const char *key, size_t len)
{
	for (int i = 0; i < o->nkeys; i++) {
		const char *k = o->keys[i], *dot = strchr(k, '.');

		if ((strlen(k) == len && !strncmp(k, key, len)) ||
		    (dot && strlen(dot + 1) == len && !strncmp(dot + 1, key, len)))
			return true;
	}
	return false;
}

/* The mount options libfuse 3.14 takes (fuse_session_new, mount.fuse3(8));
 * anything else is refused here, with a message naming it, instead of
 * libfuse's terse one. */
static bool is_fuse_option(const char *arg)
{
	static const char *const flags[] = {
		"allow_root",  "auto_unmount",
		"blkdev",      "default_permissions",
		"ro",	       "rw",
		"suid",	       "nosuid",
		"dev",	       "nodev",
		"exec",	       "noexec",
		"async",       "sync",
		"atime",       "noatime",
		"diratime",    "nodiratime",
		"relatime",    "norelatime",
		"strictatime", "nostrictatime",
		"lazytime",    "nolazytime",
		"dirsync",     "nodirsync",
		"debug",       "clone_fd",
	};
	static const char *const valued[] = {
		"fsname=",	     "subtype=", "max_read=",  "blksize=",
		"max_idle_threads=", "context=", "fscontext=", "defcontext=",
		"rootcontext=",	     "user=",	 "max_write=", "max_readahead="};

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (!strcmp(arg, flags[i]))
			return true;
	for (size_t i = 0; i < sizeof(valued) / sizeof(valued[0]); i++)
		if (!strncmp(arg, valued[i], strlen(valued[i])))
			return true;
	return false;
}

static int option_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct options *o = data;
	char **grown;

	(void)outargs;
	switch (key) {
	case KEY_SIM:
		o->sim = 1;
		return 0;
	case KEY_HELP:
		o->help = 1;
		return 0;
	case KEY_VERSION:
		o->version = 1;
		return 0;
	case FUSE_OPT_KEY_NONOPT:
		if (o->npositional == 3) {
			fprintf(stderr, "gpuasyncfs: too many arguments: '%s'\n", arg);
			o->failed = 1;
			return -1;
		}
		o->positional[o->npositional] = strdup(arg);
		return o->positional[o->npositional++] ? 0 : -1;
	case FUSE_OPT_KEY_OPT:
		/* fstab comments and systemd's x-systemd.*: mount(8) drops them,
		 * mount.fuse3 run by hand passes them on. */
		if (!strncmp(arg, "x-", 2))
			return 0;
		if (is_config_key(o, arg, strcspn(arg, "="))) {
			grown = realloc(o->settings, sizeof(*grown) * (size_t)(o->nsettings + 1));
			if (!grown)
				return -1;
			o->settings = grown;
			/* A bare flag ("allow_other") means yes. */
			if (!strchr(arg, '=')) {
				if (asprintf(&o->settings[o->nsettings], "%s=yes", arg) < 0)
					return -1;
			} else if (!(o->settings[o->nsettings] = strdup(arg))) {
				return -1;
			}
			o->nsettings++;
			return 0;
		}
		/* libfuse's own thread cap would be ignored: the loop is ours */
		if (!strncmp(arg, "max_threads", strlen("max_threads"))) {
			fprintf(stderr,
				"gpuasyncfs: -o %s: not used by gpuasyncfs; -o threads=N serves "
				"requests with N threads\n",
				arg);
			o->failed = 1;
			return -1;
		}
		/* "-f", "-d": flags fuse_parse_cmdline takes, not -o options */
		if (arg[0] != '-' && !is_fuse_option(arg)) {
			fprintf(stderr,
				"gpuasyncfs: unknown option -o %s: neither a gpuasyncfs option "
				"(--help lists them) nor a FUSE mount option (mount.fuse3(8))\n",
				arg);
			o->failed = 1;
			return -1;
		}
		return 1; /* FUSE's */
	default:
		return 1;
	}
}

static bool is_placeholder(const char *s)
{
	return !strcmp(s, "gpuasyncfs") || !strcmp(s, "none") || !*s;
}

/* Defaults, then the file, then -o settings, then DEVICE/--sim.  Sets
 * @implicit_sim when nothing named a device and the default (the simulated
 * card) is what gets served. */
static int build_config(struct options *o, const char *device, struct ga_config *cfg,
			bool *implicit_sim)
{
	char err[512];
	const char *path = o->config;
	int ret;

	ga_config_defaults(cfg);
	/* Empty until the file or an -o setting names a device. */
	cfg->device[0] = '\0';
	if (!path && access(GA_DEFAULT_CONFIG_PATH, F_OK) == 0)
		path = GA_DEFAULT_CONFIG_PATH;
	if (path) {
		ret = ga_config_load(cfg, path, err, sizeof(err));
		if (ret < 0) {
			fprintf(stderr, "gpuasyncfs: %s\n", err);
			return ret;
		}
	}
	for (int i = 0; i < o->nsettings; i++) {
		char *eq = strchr(o->settings[i], '=');

		if (!eq)
			continue; /* cannot happen: option_proc stores key=value */
		*eq = '\0';
		ret = ga_config_set(cfg, NULL, o->settings[i], eq + 1, err, sizeof(err));
		*eq = '=';
		if (ret < 0) {
			fprintf(stderr, "gpuasyncfs: -o %s: %s\n", o->settings[i], err);
			return ret;
		}
	}
	*implicit_sim = false;
	if (!cfg->device[0]) {
		snprintf(cfg->device, sizeof(cfg->device), "sim");
		*implicit_sim = !o->sim && (!device || is_placeholder(device));
	}
	if (o->sim)
		device = "sim";
	if (device && !is_placeholder(device)) {
		ret = ga_config_set(cfg, "device", "path", device, err, sizeof(err));
		if (ret < 0) {
			fprintf(stderr, "gpuasyncfs: device '%s': %s\n", device, err);
			return ret;
		}
	}
	return 0;
}

/* ---- messages ------------------------------------------------------------------------- */

/* In the foreground, messages go to stderr: a terminal, or the journal
 * under systemd.  A daemon in the background (no -f) detaches its stderr
 * onto /dev/null once the mount is up, so from the fork on everything also
 * goes to syslog (LOG_DAEMON, which journald collects): a failure before
 * the mount is both printed for mount(8) and recorded.  LOG_INFO lines
 * (start and stop) go to syslog only. */
static bool log_to_syslog;

static void fs_vlog(int prio, const char *fmt, va_list ap)
{
	char line[1024];

	/* Format once; one call per sink keeps concurrent lines whole. */
	vsnprintf(line, sizeof(line), fmt, ap);
	if (log_to_syslog)
		syslog(prio, "%s", line);
	if (prio <= LOG_NOTICE)
		fprintf(stderr, "gpuasyncfs: %s\n", line);
}

static void fs_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fs_log(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fs_vlog(prio, fmt, ap);
	va_end(ap);
}

/*
 * Buffers on the card that nobody here registered: a program holding the
 * card, or one killed without removing them (upstream 7.4 keeps them and
 * the card keeps writing into them).  mkdir would be refused, so say at
 * mount what to do; with -o reclaim take them back (the driver's
 * remove-all), or fail the mount when the driver will not.
 */
static int fs_foreign_buffers(struct fs *fs)
{
	unsigned int n[2] = {0, 0};
	char why[512];

	if (ga_dev_foreign_buffers(fs->dev, n) < 0 || n[GA_DIR_WRITE] + n[GA_DIR_READ] == 0)
		return 0;
	if (fs->cfg.reclaim) {
		if (ga_buf_destroy_all(fs->dev) < 0) {
			fs_log(LOG_ERR,
			       "-o reclaim: the card's %u write and %u read buffers could not be "
			       "removed: %s",
			       n[GA_DIR_WRITE], n[GA_DIR_READ], ga_last_error());
			return -1;
		}
		snprintf(why, sizeof(why),
			 "-o reclaim: removed every buffer of the card (at least %u write and %u "
			 "read that no process of this mount registered)",
			 n[GA_DIR_WRITE], n[GA_DIR_READ]);
		fs_log(LOG_WARNING, "%s", why);
		fs_error_add(fs, "device", 0, why);
		return 0;
	}
	snprintf(why, sizeof(why),
		 "the card holds buffers that no process of this mount registered (at least "
		 "%u write and %u read): mkdir is refused (EBUSY) while they are there. Stop the "
		 "program "
		 "that holds them; if it is gone (killed: upstream's datadev 7.4 keeps its "
		 "buffers, and the card keeps writing into them), mount with -o reclaim or "
		 "reload the driver",
		 n[GA_DIR_WRITE], n[GA_DIR_READ]);
	fs_log(LOG_WARNING, "%s", why);
	fs_error_add(fs, "buffers", -EBUSY, why);
	return 0;
}

/* libfuse's own messages ("fuse: ..."), once in the background.  Its
 * levels are syslog's. */
static void fs_fuse_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	char line[1024];
	size_t len;

	vsnprintf(line, sizeof(line), fmt, ap);
	len = strlen(line);
	while (len && line[len - 1] == '\n')
		line[--len] = '\0';
	fs_log((int)level, "%s", line);
}

static void log_start_syslog(void)
{
	openlog("gpuasyncfs", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	log_to_syslog = true;
	fuse_set_log_func(fs_fuse_log);
}

/* ---- systemd -------------------------------------------------------------------------- */

/* Type=notify: tell the service manager how the daemon is doing.  The
 * protocol is one datagram of "KEY=value" lines ("READY=1", "STATUS=...",
 * "WATCHDOG=1", "STOPPING=1") to the unix socket $NOTIFY_SOCKET names (a
 * leading '@' is the abstract namespace).  It is written out here in a few
 * lines instead of linking libsystemd's sd_notify(): the daemon keeps
 * depending on libfuse3 and inih only, builds where libsystemd-dev is
 * absent, and does nothing at all without the variable. */
static void notify_send(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len;
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@'))
		return;
	len = strlen(path);
	if (len >= sizeof(sa.sun_path)) {
		fs_log(LOG_WARNING, "NOTIFY_SOCKET too long; systemd is not told how we are");
		return;
	}
	memcpy(sa.sun_path, path, len);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
			     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
		fs_log(LOG_WARNING, "cannot notify systemd (NOTIFY_SOCKET=%s): %s", path,
		       strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* The notifier thread, started once the mount is live when systemd listens
 * ($NOTIFY_SOCKET): every period it looks up a name that does not exist in
 * the mount's root (a miss is never cached, so each one is a LOOKUP the
 * FUSE loop must answer) and, once that came back, pings the watchdog
 * (WatchdogSec=, $WATCHDOG_USEC) and updates STATUS= with the card and its
 * frame rate (rx_frame_count's growth over the period).  A stalled loop
 * leaves the lookup hanging and the pings stop: systemd kills and restarts
 * the daemon.  It is stopped after fuse_session_destroy(), which ends a
 * lookup still in flight (ENOTCONN), as notify_inval_inode.c's thread is by
 * a flag. */
#define NOTIFY_PERIOD_MAX_US 5000000ULL /* STATUS= at least this often */
#define NOTIFY_PROBE_NAME ".gpuasyncfs-watchdog"

struct notifier {
	struct fs *fs;
	const char *mountpoint;
	char probe[PATH_MAX];
	unsigned long long period_us;
	bool watchdog;
	bool started;
	pthread_t thread;
	pthread_mutex_t lock; /* guards stop; cond signals it */
	pthread_cond_t cond;
	bool stop;
};

/* "/dev/datadev_0 on /run/gpuasyncfs/datadev_0: 1042 frames/s" */
static void notifier_status(struct notifier *nt, uint32_t *last, bool *have_last, double secs)
{
	/* The card: "/dev/datadev_0", or "sim" without the simulator's settings. */
	const char *card = nt->fs->device_spec;
	int clen = (int)strcspn(card, ":");
	char msg[PATH_MAX + 256];
	uint32_t now, d;

	if (ga_reg_read(nt->fs->dev, GA_REG_RX_FRAME_COUNT, 0, &now) < 0) {
		snprintf(msg, sizeof(msg), "STATUS=%.*s on %s: frame rate unknown",
			 clen, card, nt->mountpoint);
		*have_last = false;
	} else {
		/* The counter may be cleared (to 0) in between: count from there. */
		d = now >= *last ? now - *last : now;
		if (*have_last && secs > 0)
			snprintf(msg, sizeof(msg), "STATUS=%.*s on %s: %.0f frames/s",
				 clen, card, nt->mountpoint, d / secs);
		else
			snprintf(msg, sizeof(msg), "STATUS=%.*s on %s: serving", clen, card,
				 nt->mountpoint);
		*last = now;
		*have_last = true;
	}
	notify_send(msg);
}

static void *notifier_run(void *arg)
{
	struct notifier *nt = arg;
	struct timespec t0, t1, until;
	uint32_t last = 0;
	bool have_last = false;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	notifier_status(nt, &last, &have_last, 0);
	pthread_mutex_lock(&nt->lock);
	while (!nt->stop) {
		struct stat st;
		bool alive;

		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += (time_t)(nt->period_us / 1000000);
		until.tv_nsec += (long)(nt->period_us % 1000000) * 1000;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		while (!nt->stop && pthread_cond_timedwait(&nt->cond, &nt->lock, &until) == 0)
			;
		if (nt->stop)
			break;
		pthread_mutex_unlock(&nt->lock);
		/* Blocks while the FUSE loop does not answer: no ping then. */
		alive = stat(nt->probe, &st) == 0 || errno == ENOENT;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (alive && nt->watchdog)
			notify_send("WATCHDOG=1");
		notifier_status(nt, &last, &have_last,
				(double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
		t0 = t1;
		pthread_mutex_lock(&nt->lock);
	}
	pthread_mutex_unlock(&nt->lock);
	return NULL;
}

/* Only under systemd; the watchdog only when the unit asks for one (and for
 * this process: $WATCHDOG_PID, when set). */
static int notifier_start(struct notifier *nt, struct fs *fs, const char *mountpoint)
{
	const char *wd = getenv("WATCHDOG_USEC"), *wpid = getenv("WATCHDOG_PID");
	unsigned long long usec = wd ? strtoull(wd, NULL, 10) : 0;
	pthread_condattr_t ca;

	if (!getenv("NOTIFY_SOCKET"))
		return 0;
	nt->fs = fs;
	nt->mountpoint = mountpoint;
	snprintf(nt->probe, sizeof(nt->probe), "%s/%s", mountpoint, NOTIFY_PROBE_NAME);
	nt->watchdog = usec > 0 && (!wpid || strtol(wpid, NULL, 10) == (long)getpid());
	/* Twice per watchdog interval, as sd_watchdog_enabled(3) advises. */
	nt->period_us = nt->watchdog && usec / 2 < NOTIFY_PERIOD_MAX_US ? usec / 2
									: NOTIFY_PERIOD_MAX_US;
	nt->stop = false;
	if (pthread_condattr_init(&ca) || pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) ||
	    pthread_cond_init(&nt->cond, &ca) || pthread_mutex_init(&nt->lock, NULL))
		return -ENOMEM;
	pthread_condattr_destroy(&ca);
	if (pthread_create(&nt->thread, NULL, notifier_run, nt))
		return -EAGAIN;
	nt->started = true;
	return 0;
}

/* The loop has returned: no more lookups, STOPPING=1 while we unmount. */
static void notifier_stopping(struct notifier *nt)
{
	bool was;

	if (!nt->started)
		return;
	pthread_mutex_lock(&nt->lock);
	was = nt->stop;
	nt->stop = true;
	pthread_cond_signal(&nt->cond);
	pthread_mutex_unlock(&nt->lock);
	if (!was)
		notify_send("STOPPING=1\nSTATUS=unmounting");
}

/* After fuse_session_destroy(): a lookup in flight has returned. */
static void notifier_stop(struct notifier *nt)
{
	if (!nt->started)
		return;
	notifier_stopping(nt);
	pthread_join(nt->thread, NULL);
	pthread_cond_destroy(&nt->cond);
	pthread_mutex_destroy(&nt->lock);
	nt->started = false;
}

/* Started by systemd (a unit, or a mount unit from fstab), or by mount(8)
 * from an fstab line whose source is a placeholder ("gpuasyncfs", "none"):
 * nobody is at a terminal to notice which card got mounted. */
static bool started_unattended(const char *device)
{
	return getenv("INVOCATION_ID") || getenv("NOTIFY_SOCKET") ||
	       (device && is_placeholder(device));
}

/* ---- the mountpoint ------------------------------------------------------------------- */

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape_mountinfo(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

/* The type and source of the mount on top at @mnt (the last mountinfo line
 * for it): 1 when there is one, 0 when none. */
static int mount_at(const char *mnt, char *type, size_t tlen, char *source, size_t slen)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char *line = NULL;
	size_t cap = 0;
	int found = 0;

	if (!f)
		return 0;
	while (getline(&line, &cap, f) > 0) {
		char *save = NULL, *point = NULL, *dash, *t, *src;

		/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - TYPE SOURCE SUPER" */
		dash = strstr(line, " - ");
		if (!dash)
			continue;
		*dash = '\0';
		for (int i = 0; i < 5; i++)
			point = strtok_r(i ? NULL : line, " ", &save);
		t = strtok_r(dash + 3, " ", &save);
		src = strtok_r(NULL, " ", &save);
		if (!point || !t || !src)
			continue;
		unescape_mountinfo(point);
		if (strcmp(point, mnt) != 0)
			continue;
		unescape_mountinfo(src);
		snprintf(type, tlen, "%s", t);
		snprintf(source, slen, "%s", src);
		found = 1;
	}
	free(line);
	fclose(f);
	return found;
}

/* The mountpoint is a directory.  A FUSE mount whose daemon died answers
 * ENOTCONN; libfuse would only say "bad mount point".  It is refused with
 * the command that clears it, not detached here: it may be another
 * filesystem's, and a unit clears its own (ExecStartPre=-fusermount3 -uz). */
static int check_mountpoint(const char *mnt)
{
	struct stat st;

	if (stat(mnt, &st) == 0) {
		/* The kernel mounts a directory tree on a file too, and every
		 * access then fails with EIO until fusermount3 -u. */
		if (S_ISDIR(st.st_mode))
			return 0;
		fprintf(stderr, "gpuasyncfs: %s: not a directory; the mountpoint must be one\n",
			mnt);
		return -1;
	}
	if (errno != ENOTCONN)
		return 0; /* libfuse names a missing mountpoint itself */
	fprintf(stderr,
		"gpuasyncfs: %s: a dead FUSE mount (its daemon is gone: ENOTCONN); "
		"detach it first: fusermount3 -uz %s\n",
		mnt, mnt);
	return -1;
}

/* A second gpuasyncfs on a live one would stack on top and hide it (and
 * share its card).  Two daemons started at the same instant both pass. */
static int check_not_mounted(const char *mnt)
{
	char type[64], source[512];
	struct stat st;

	if (!mount_at(mnt, type, sizeof(type), source, sizeof(source)))
		return 0;
	if (strcmp(type, "fuse.gpuasyncfs") != 0 || stat(mnt, &st) != 0)
		return 0;
	fprintf(stderr,
		"gpuasyncfs: %s is already mounted by a running gpuasyncfs (device %s); "
		"unmount it first: fusermount3 -u %s\n",
		mnt, source, mnt);
	return -1;
}

/* ---- background start ---------------------------------------------------------------- */

/* Fork; the parent waits for the child's verdict and exits with it.
 * Returns, in the child, the fd to report readiness on. */
static int daemon_start(void)
{
	int p[2];
	pid_t pid;
	char status = 1;

	if (pipe(p) < 0) {
		perror("gpuasyncfs: pipe");
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		perror("gpuasyncfs: fork");
		exit(1);
	}
	if (pid > 0) {
		close(p[1]);
		if (read(p[0], &status, 1) != 1)
			status = 1; /* the child died before it was ready */
		_exit(status);
	}
	close(p[0]);
	setsid();
	return p[1];
}

/* Tell the parent how start-up went; on success detach from the terminal. */
static void daemon_ready(int *fd, char status)
{
	int null;

	if (*fd < 0)
		return;
	if (status == 0) {
		if (chdir("/") < 0) {
			/* cannot happen for "/"; keep going from where we are */
		}
		null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
			if (null > 2)
				close(null);
		}
	}
	if (write(*fd, &status, 1) != 1) {
		/* the parent is gone; nothing to tell */
	}
	close(*fd);
	*fd = -1;
}

/* ---- state ---------------------------------------------------------------------------- */

static int fs_state_init(struct fs *fs)
{
	int ret;

	fs->start = time(NULL);
	fs->uid = fs->cfg.uid_set ? fs->cfg.uid : getuid();
	fs->gid = fs->cfg.gid_set ? fs->cfg.gid : getgid();
	fs->sim = ga_dev_has(fs->dev, GA_CAP_SIM);
	atomic_store(&fs->alloc_size[GA_DIR_WRITE], fs->cfg.buffer_size);
	atomic_store(&fs->alloc_size[GA_DIR_READ], fs->cfg.buffer_size);
	atomic_store(&fs->fault_code, 1);
	ret = ga_dev_info(fs->dev, &fs->info);
	if (ret < 0)
		return ret;
	if (ga_fw_read(fs->dev, GA_FW_DNA, fs->dna, sizeof(fs->dna)) < 0)
		fs->dna[0] = '\0'; /* no AxiVersion block: no dna label */
	if (pthread_rwlock_init(&fs->bufs_lock, NULL) || pthread_mutex_init(&fs->poll_lock, NULL) ||
	    pthread_mutex_init(&fs->open_lock, NULL) ||
	    pthread_mutex_init(&fs->reg_store_lock, NULL))
		return -ENOMEM;
	ret = fs_errors_init(fs);
	if (ret < 0)
		return ret;
	{
		/* The tree's parts, in the order the table lists them. */
		const struct fs_part parts[] = {
			{.rows = fs_core_rows, .nrows = fs_core_nrows},
			{.generate = fs_platform_rows},
			{.rows = fs_settings_rows, .nrows = fs_settings_nrows},
			{.rows = fs_yaml_rows, .nrows = fs_yaml_nrows},
			{.generate = fs_register_rows},
			{.rows = fs_buffer_rows, .nrows = fs_buffer_nrows},
			{.rows = fs_sim_rows, .nrows = fs_sim_nrows},
			{.rows = fs_frame_rows, .nrows = fs_frame_nrows},
			{.rows = fs_record_rows, .nrows = fs_record_nrows},
			{.rows = fs_health_rows, .nrows = fs_health_nrows},
			{.generate = fs_sysmon_rows},
		};

		ret = fs_table_build(fs, parts, sizeof(parts) / sizeof(parts[0]));
	}
	if (ret < 0)
		fs_errors_fini(fs);
	return ret;
}

static void fs_state_fini(struct fs *fs)
{
	fs_opens_free_all(fs);
	fs_errors_fini(fs);
	pthread_mutex_destroy(&fs->reg_store_lock);
	pthread_mutex_destroy(&fs->open_lock);
	pthread_mutex_destroy(&fs->poll_lock);
	pthread_rwlock_destroy(&fs->bufs_lock);
}

static int add_mount_options(struct fuse_args *args, const struct fs *fs)
{
	char *opt = NULL;
	int ret = 0;

	/* Modes are checked by the daemon (fs/tree.c, may()), not the kernel:
	 * default_permissions would cost every open() of an uncached file a
	 * permission GETATTR. */
	ret |= fuse_opt_add_arg(args, "-osubtype=gpuasyncfs");
	/* An observer changes nothing: a read-only mount says so to findmnt,
	 * test -w and every writer (EROFS from the kernel). */
	if (fs->cfg.observe)
		ret |= fuse_opt_add_arg(args, "-oro");
	if (fs->cfg.allow_other)
		ret |= fuse_opt_add_arg(args, "-oallow_other");
	if (fuse_opt_add_opt_escaped(&opt, fs->cfg.device) == 0) {
		char *full = NULL;

		if (asprintf(&full, "-ofsname=%s", opt) >= 0) {
			ret |= fuse_opt_add_arg(args, full);
			free(full);
		}
		free(opt);
	}
	return ret ? -ENOMEM : 0;
}

/*
 * The daemon's exit status from how the serving loop ended.  libfuse
 * returns 0 when the kernel ended the session (its read of /dev/fuse gave
 * ENODEV: unmounted, or aborted through /sys/fs/fuse/connections), a
 * signal number after SIGINT/SIGTERM/SIGHUP, and -errno when a read failed.
 * -ECONNABORTED is no failure either: the kernel gives it to a read that
 * had just taken a request off the queue when the connection was shut
 * down.  That is how a lazily unmounted mount ends when its last open file
 * closes while the daemon takes that file's RELEASE (libfuse prints
 * "fuse: reading device: Software caused connection abort" first), so it
 * ends the session exactly as ENODEV does.
 */
static int loop_exit_status(int loop)
{
	if (loop == -ECONNABORTED) {
		fs_log(LOG_INFO, "the kernel closed the connection while handing over a request: "
				 "the mount is gone (not an error)");
		return 0;
	}
	if (loop < 0) {
		fs_log(LOG_ERR, "reading /dev/fuse failed: %s", strerror(-loop));
		return 1;
	}
	return 0;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts = {0};
	struct options *o = calloc(1, sizeof(*o));
	static struct fs fs; /* large (slot table); lives for the whole run */
	struct notifier nt = {0}; /* STATUS= and the watchdog under systemd */
	struct fuse_session *se;
	const char *device = NULL, *mnt;
	int ready_fd = -1, ret = 1, loop;
	bool implicit_sim = false;

	if (!o)
		return 1;
	/* metrics with 1024 buffers renders 200 KB: a freed rendering keeps
	 * its pages for the next one instead of going back to the kernel and
	 * faulting in again (about 80 page faults a render). */
	mallopt(M_MMAP_THRESHOLD, 8 << 20);
	mallopt(M_TRIM_THRESHOLD, 16 << 20);
	/* The platform doctor runs alone: no mount, no FUSE options. */
	if (argc >= 2 && !strcmp(argv[1], "--check")) {
		free(o);
		return fs_check_main(argc - 1, argv + 1);
	}
	if (argc >= 2 && !strcmp(argv[1], "--topology")) { /* the same parser, its own mode */
		free(o);
		return fs_check_main(argc, argv);
	}
	learn_keys(o);
	if (fuse_opt_parse(&args, o, option_spec, option_proc) == -1 || o->failed)
		goto out_free_args;
	if (o->help) {
		usage(argv[0]);
		ret = 0;
		goto out_free_args;
	}
	if (o->version) {
		printf("gpuasyncfs %s (libgpuasync %s)\n", GPUASYNC_VERSION_STRING,
		       GPUASYNC_VERSION_STRING);
		printf("FUSE library version %s\n", fuse_pkgversion());
		fflush(stdout); /* fuse_lowlevel_version runs fusermount3 */
		fuse_lowlevel_version();
		ret = 0;
		goto out_free_args;
	}
	if (o->npositional == 0) {
		fprintf(stderr, "usage: %s [options] [DEVICE] MOUNTPOINT  (--help for more)\n",
			argv[0]);
		goto out_free_args;
	}
	if (o->npositional == 3) {
		fprintf(stderr, "gpuasyncfs: too many arguments\n");
		goto out_free_args;
	}
	o->threads = 1;
	if (o->threads_arg) {
		uint64_t t = 0;

		if (ga_parse_u64(o->threads_arg, strlen(o->threads_arg), GA_FS_MAX_THREADS, &t) <
			    0 ||
		    t == 0) {
			fprintf(stderr, "gpuasyncfs: -o threads=%s: a number of threads, 1 to %d\n",
				o->threads_arg, GA_FS_MAX_THREADS);
			goto out_free_args;
		}
		o->threads = (unsigned int)t;
	}
	mnt = o->positional[o->npositional - 1];
	if (o->npositional == 2)
		device = o->positional[0];
	if (o->sim && device && !is_placeholder(device) && strcmp(device, "sim") != 0) {
		fprintf(stderr,
			"gpuasyncfs: both --sim and the device '%s' given: --sim serves the "
			"simulated card, '%s' names a real one; give one of them\n",
			device, device);
		goto out_free_args;
	}
	if (build_config(o, device, &fs.cfg, &implicit_sim) < 0)
		goto out_free_args;
	if (ga_config_device_spec(&fs.cfg, fs.device_spec, sizeof(fs.device_spec)) < 0) {
		fprintf(stderr, "gpuasyncfs: %s\n", ga_last_error());
		goto out_free_args;
	}
	if (check_mountpoint(mnt) < 0)
		goto out_free_args;
	if (add_mount_options(&args, &fs) < 0 || fuse_opt_add_arg(&args, mnt) < 0)
		goto out_free_args;
	if (fuse_parse_cmdline(&args, &opts) != 0)
		goto out_free_args;
	if (!opts.mountpoint) {
		fprintf(stderr, "gpuasyncfs: no mountpoint\n");
		goto out_free_opts;
	}
	/* fuse_parse_cmdline made it absolute, as mountinfo has it. */
	if (check_not_mounted(opts.mountpoint) < 0)
		goto out_free_opts;

	if (!opts.foreground) {
		ready_fd = daemon_start();
		log_start_syslog();
	}
	if (implicit_sim && started_unattended(device))
		fs_log(LOG_WARNING, "%s", SIM_WARNING);
	else
		implicit_sim = false;

	/* A simulated card killed earlier could not remove its register file. */
	if (!strncmp(fs.device_spec, "sim", 3))
		ga_sim_sweep_stale();
	{
		struct ga_open_opts oo = GA_OPEN_OPTS_DEFAULT;

		oo.latency_legacy = fs.cfg.latency_legacy;
		oo.gpu_index = fs.cfg.gpu_index;
		oo.use_gpu = fs.cfg.use_gpu;
		oo.core_offset = (uint32_t)fs.cfg.core_offset;
		oo.pin = fs.cfg.pin;
		oo.observe = fs.cfg.observe;
		ret = ga_dev_open_opts(fs.device_spec, &oo, &fs.dev);
	}
	if (ret < 0) {
		fs_log(LOG_ERR, "%s: %s", fs.device_spec, ga_last_error());
		ret = 1;
		goto out_free_opts;
	}
	ret = 1;
	if (fs_state_init(&fs) < 0) {
		fs_log(LOG_ERR, "cannot build the tree: %s", fs_last_error());
		goto out_close_dev;
	}
	if (implicit_sim)
		fs_error_add(&fs, "device", 0, SIM_WARNING);
	if (!fs.cfg.observe && fs_foreign_buffers(&fs) < 0)
		goto out_fini_state;
	/* Before the mount exists: nobody sees the card half configured. */
	if (fs.cfg.settings_file[0] && fs_settings_apply_file(&fs, fs.cfg.settings_file) < 0) {
		fprintf(stderr, "gpuasyncfs: -o settings=%s: %s\n", fs.cfg.settings_file,
			fs_last_error());
		goto out_fini_state;
	}
	se = fs_session_new(&args, &fs);
	if (!se)
		goto out_fini_state;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_destroy_session;
	if (fuse_session_mount(se, opts.mountpoint) != 0)
		goto out_remove_handlers;
	if (fs_sampler_start(&fs) < 0) {
		fs_log(LOG_ERR, "cannot start the sampler thread");
		goto out_unmount;
	}
	if (fs_frames_start(&fs) < 0) {
		fs_log(LOG_ERR, "cannot start the frame watcher thread");
		goto out_stop_sampler;
	}
	if (fs_http_start(&fs) < 0) {
		fs_log(LOG_ERR, "%s", fs_last_error());
		goto out_stop_frames;
	}
	daemon_ready(&ready_fd, 0);
	notify_send("READY=1");
	if (notifier_start(&nt, &fs, opts.mountpoint) < 0)
		fs_log(LOG_WARNING, "no notifier thread: systemd gets no STATUS= and no watchdog");
	fs_log(LOG_INFO, "serving %s on %s", fs.device_spec, opts.mountpoint);

	if (o->threads > 1) {
		struct fuse_loop_config *lc = fuse_loop_cfg_create();

		if (!lc)
			goto out_stop_http;
		fuse_loop_cfg_set_clone_fd(lc, (unsigned int)opts.clone_fd);
		fuse_loop_cfg_set_max_threads(lc, o->threads);
		loop = fuse_session_loop_mt(se, lc);
		fuse_loop_cfg_destroy(lc);
	} else {
		loop = fuse_session_loop(se);
	}
	ret = loop_exit_status(loop);
	/* The teardown runs to its end: a second SIGINT/SIGTERM/SIGHUP (a
	 * script's kill right after its unmount, a service manager) would
	 * otherwise end the process halfway with the GPU's kernels running,
	 * and under MPS that fails the next program to open the GPU.  SIGKILL
	 * still ends a teardown that hangs. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	notifier_stopping(&nt);
	fs_log(LOG_INFO, "unmounting %s", opts.mountpoint);

out_stop_http:
	fs_http_stop(&fs); /* the target file goes first: a clean stop */
out_stop_frames:
	fs_record_stop(&fs); /* its queue written out while the watcher still stands */
	fs_frames_stop(&fs);
out_stop_sampler:
	fs_sampler_stop(&fs);
out_unmount:
	fuse_session_unmount(se);
out_remove_handlers:
	fuse_remove_signal_handlers(se);
out_destroy_session:
	fuse_session_destroy(se);
	notifier_stop(&nt); /* after destroy: a lookup in flight has come back */
out_fini_state:
	fs_state_fini(&fs);
out_close_dev:
	ga_dev_close(fs.dev); /* releases every buffer: GPU memory and pins */
out_free_opts:
	free(opts.mountpoint);
out_free_args:
	daemon_ready(&ready_fd, (char)(ret ? ret : 1));
	fuse_opt_free_args(&args);
	for (int i = 0; i < o->npositional; i++)
		free(o->positional[i]);
	for (int i = 0; i < o->nsettings; i++)
		free(o->settings[i]);
	free(o->settings);
	free((void *)o->config);
	free(o->threads_arg);
	free(o);
	return ret;
}
