// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The owner thread of a datadev device (see datadev_owner.h): requests are
 * handed over one at a time through a mutex and a condition variable; the
 * thread performs the ioctl and hands back its result and errno.
 *
 * Locking: o->lock guards every field below it; a caller waits while
 * another request is in flight (busy), so requests never overlap.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "datadev_owner.h"
#include "internal.h"

struct dd_owner {
	int fd;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;    /* the thread is to exit */
	bool busy;    /* a caller owns the request slot */
	bool pending; /* the request is waiting for the thread */
	bool done;    /* the result is waiting for the caller */
	unsigned int cmd;
	unsigned long arg;
	int ret, err;
};

static void *owner_main(void *arg)
{
	struct dd_owner *o = arg;

	pthread_mutex_lock(&o->lock);
	for (;;) {
		while (!o->pending && !o->stop)
			pthread_cond_wait(&o->cond, &o->lock);
		if (o->stop)
			break;
		o->pending = false;
		pthread_mutex_unlock(&o->lock);
		int r = ioctl(o->fd, o->cmd, o->arg), e = r < 0 ? errno : 0;

		pthread_mutex_lock(&o->lock);
		o->ret = r;
		o->err = e;
		o->done = true;
		pthread_cond_broadcast(&o->cond);
	}
	pthread_mutex_unlock(&o->lock);
	return NULL;
}

int dd_owner_start(int fd, struct dd_owner **out)
{
	struct dd_owner *o = calloc(1, sizeof(*o));
	int rc;

	*out = NULL;
	if (!o)
		return ga_err(-ENOMEM, "out of memory");
	o->fd = fd;
	pthread_mutex_init(&o->lock, NULL);
	pthread_cond_init(&o->cond, NULL);
	rc = pthread_create(&o->thread, NULL, owner_main, o);
	if (rc) {
		pthread_cond_destroy(&o->cond);
		pthread_mutex_destroy(&o->lock);
		free(o);
		return ga_err(-rc, "cannot start the GPU-state owner thread: %s", strerror(rc));
	}
	*out = o;
	return 0;
}

void dd_owner_stop(struct dd_owner *o)
{
	if (!o)
		return;
	pthread_mutex_lock(&o->lock);
	o->stop = true;
	pthread_cond_broadcast(&o->cond);
	pthread_mutex_unlock(&o->lock);
	pthread_join(o->thread, NULL);
	pthread_cond_destroy(&o->cond);
	pthread_mutex_destroy(&o->lock);
	free(o);
}

int dd_owner_ioctl(struct dd_owner *o, unsigned int cmd, unsigned long arg, int *err)
{
	int r;

	pthread_mutex_lock(&o->lock);
	while (o->busy)
		pthread_cond_wait(&o->cond, &o->lock);
	o->busy = true;
	o->cmd = cmd;
	o->arg = arg;
	o->pending = true;
	pthread_cond_broadcast(&o->cond);
	while (!o->done)
		pthread_cond_wait(&o->cond, &o->lock);
	o->done = false;
	o->busy = false;
	r = o->ret;
	*err = o->err;
	pthread_cond_broadcast(&o->cond);
	pthread_mutex_unlock(&o->lock);
	return r;
}
