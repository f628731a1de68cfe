/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * One thread that owns a datadev device's GPU state (datadev_owner.c).
 * Upstream 7.5.0/7.5.1 record the owner of a card's GpuAsyncCore as the
 * calling *thread* (current->pid) at the first add, and refuse the GPU-state
 * ioctls of every other thread with EBUSY; sending them all from one thread
 * makes a multi-threaded caller one owner.
 */
#ifndef GA_DATADEV_OWNER_H
#define GA_DATADEV_OWNER_H

struct dd_owner;

/* Start the thread for @fd: 0 or a negative errno (ga_err set). */
int dd_owner_start(int fd, struct dd_owner **out);
/* Stop and join it; NULL is fine. */
void dd_owner_stop(struct dd_owner *o);
/* ioctl(fd, @cmd, @arg) on the owner thread: its result, and its errno in
 * *@err when negative.  Callers from any thread; one request at a time. */
int dd_owner_ioctl(struct dd_owner *o, unsigned int cmd, unsigned long arg, int *err);

#endif
