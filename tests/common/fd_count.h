/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Tests that check nothing leaks count their process's open fds with this. */
#ifndef GA_TEST_FD_COUNT_H
#define GA_TEST_FD_COUNT_H

#include <stdio.h>
#include <unistd.h>

/* Open file descriptors of this process (the first 4096 numbers). */
static inline unsigned int fd_count(void)
{
	char path[64];
	unsigned int n = 0;

	for (int fd = 0; fd < 4096; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n += access(path, F_OK) == 0;
	}
	return n;
}

#endif /* GA_TEST_FD_COUNT_H */
