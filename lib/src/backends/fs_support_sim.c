// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Support for long-running users of the simulated card (gpuasyncfs):
 * removal of register files left in /dev/shm by simulated cards whose
 * process was killed (SIGKILL, a crash), which could not unlink them.
 *
 * The default name is /dev/shm/gpuasync-sim-<pid>-<n> (sim.c); a file is
 * stale when no process <pid> exists.  A pid that was reused keeps its
 * file (conservative: never remove what a live process may map).  Names
 * chosen with shm= are never touched.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>

#include "gpuasync/sim.h"
#include "internal.h"

#define SWEEP_PREFIX "gpuasync-sim-"

/* "<pid>-<n>" with both decimal: the pid, else 0. */
static long stale_pid(const char *rest)
{
	char *end;
	long pid;

	if (!isdigit((unsigned char)rest[0]))
		return 0;
	pid = strtol(rest, &end, 10);
	if (*end != '-' || !isdigit((unsigned char)end[1]))
		return 0;
	for (end++; *end; end++)
		if (!isdigit((unsigned char)*end))
			return 0;
	return pid > 0 ? pid : 0;
}

/* Is process @pid gone for good: no such process, or a zombie (killed,
 * not yet reaped: it will never run or map anything again)? */
static bool process_dead(long pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return false; /* cannot tell: keep the file */
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "pid (comm) S ...": the state follows the last ')' */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'Z';
}

int ga_sim_sweep_stale(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	int removed = 0;

	if (!d)
		return errno == ENOENT ? 0 : ga_err(-errno, "cannot list /dev/shm");
	while ((e = readdir(d)) != NULL) {
		char name[300];
		long pid;

		if (strncmp(e->d_name, SWEEP_PREFIX, strlen(SWEEP_PREFIX)) != 0)
			continue;
		pid = stale_pid(e->d_name + strlen(SWEEP_PREFIX));
		if (!pid || !process_dead(pid))
			continue;
		snprintf(name, sizeof(name), "/%s", e->d_name);
		if (shm_unlink(name) == 0) {
			ga_log("sim: removed %s left by process %ld", name, pid);
			removed++;
		}
	}
	closedir(d);
	return removed;
}
