// SPDX-License-Identifier: GPL-2.0
/*
 * as_user UID PROGRAM [ARG...]: run PROGRAM as user and group UID with no
 * supplementary groups and no capabilities, for the QEMU guests' busybox,
 * which has no setpriv.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
	uid_t uid;

	if (argc < 3) {
		fprintf(stderr, "usage: %s UID PROGRAM [ARG...]\n", argv[0]);
		return 2;
	}
	uid = (uid_t)strtoul(argv[1], NULL, 0);
	if (setgroups(0, NULL) || setgid(uid) || setuid(uid)) {
		fprintf(stderr, "as_user: cannot become %u: %s\n", (unsigned int)uid,
			strerror(errno));
		return 1;
	}
	execv(argv[2], argv + 2);
	fprintf(stderr, "as_user: %s: %s\n", argv[2], strerror(errno));
	return 127;
}
