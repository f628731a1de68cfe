/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * poll(POLLPRI) on live files, the only change notification FUSE allows
 * (inotify does not see daemon-side changes):
 *
 *   fd = open("registers/rx_frame_count"); pread(fd, 0) ...;
 *   poll({fd, POLLPRI}) -> wakes when the value differs from what this fd
 *   last read; pread(fd, 0) takes the new value and re-arms.
 *
 * As with sysfs_notify, POLLPRI is reported while the current value
 * differs from the snapshot the open file last read (taken at the first
 * poll if it never read).  Nothing in hardware interrupts us, so a sampler
 * thread renders every file with a poll pending each [monitor]
 * interval_ms and, on a change, notifies the kernel, which polls again and
 * gets POLLPRI.  With no poll pending the sampler sleeps: it costs nothing
 * until someone polls.  One poll handle per open file: a new poll replaces
 * the old handle; a notification consumes it (libfuse example/poll.c).
 *
 * Locking: poll_lock guards the list of polled open files, every fo->ph and
 * fs->poll_pending; it is taken before fo->lock (which guards fo->snap),
 * which is taken before fs->bufs_lock and the library's locks.
 * sampler_mx is taken alone or after poll_lock.  Notifications are sent
 * with poll_lock held; they only write to /dev/fuse and never wait for a
 * request, so no handler can deadlock with them.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include "fs.h"

static bool differs(const struct strbuf *a, const struct strbuf *b)
{
	return a->len != b->len || (a->len && memcmp(a->buf, b->buf, a->len));
}

void fs_op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		struct fuse_pollhandle *ph)
{
	struct fs *fs = fuse_req_userdata(req);
	struct fs_open *fo = (struct fs_open *)(uintptr_t)fi->fh;
	const struct fs_node *n = fo->node;
	struct strbuf now = {0};
	unsigned int revents = 0;
	int ret;

	(void)ino;
	if (n->show || n->read_bin)
		revents |= POLLIN | POLLRDNORM;
	if (n->store || n->write_bin)
		revents |= POLLOUT | POLLWRNORM;
	if (!(n->flags & FS_LIVE) || !n->show) {
		if (ph)
			fuse_pollhandle_destroy(ph);
		fuse_reply_poll(req, revents);
		return;
	}

	ret = fs_render(fs, fo, &now);
	pthread_mutex_lock(&fs->poll_lock);
	pthread_mutex_lock(&fo->lock);
	if (ret < 0) {
		revents |= POLLERR | POLLPRI; /* e.g. its buffer is gone */
	} else if (!fo->have_snap) {
		struct strbuf tmp = fo->snap;

		fo->snap = now; /* first poll without a read: this is the baseline */
		now = tmp;
		fo->have_snap = true;
	} else if (differs(&now, &fo->snap)) {
		revents |= POLLPRI;
	}
	if (fo->ph) {
		fuse_pollhandle_destroy(fo->ph);
		fo->ph = NULL;
	}
	if (ph && !(revents & POLLPRI)) {
		fo->ph = ph; /* the sampler notifies it on a change */
		if (!atomic_load(&fs->poll_pending)) {
			atomic_store(&fs->poll_pending, true);
			pthread_mutex_lock(&fs->sampler_mx);
			pthread_cond_signal(&fs->sampler_cv);
			pthread_mutex_unlock(&fs->sampler_mx);
		}
	} else if (ph) {
		fuse_pollhandle_destroy(ph);
	}
	if (!fo->polled) {
		fo->polled = true;
		fo->next_polled = fs->polled;
		fs->polled = fo;
	}
	pthread_mutex_unlock(&fo->lock);
	pthread_mutex_unlock(&fs->poll_lock);
	sb_free(&now);
	fuse_reply_poll(req, revents);
}

void fs_poll_forget(struct fs *fs, struct fs_open *fo)
{
	pthread_mutex_lock(&fs->poll_lock);
	if (fo->polled) {
		for (struct fs_open **p = &fs->polled; *p; p = &(*p)->next_polled) {
			if (*p == fo) {
				*p = fo->next_polled;
				break;
			}
		}
		fo->polled = false;
	}
	if (fo->ph) {
		fuse_pollhandle_destroy(fo->ph);
		fo->ph = NULL;
	}
	pthread_mutex_unlock(&fs->poll_lock);
}

/* One pass: notify every pending poll whose file changed; note whether
 * any remain. */
static bool sample(struct fs *fs, struct strbuf *now)
{
	bool pending = false;

	fs_note_link(fs);
	pthread_mutex_lock(&fs->poll_lock);
	for (struct fs_open *fo = fs->polled; fo; fo = fo->next_polled) {
		bool changed;
		int ret;

		if (!fo->ph)
			continue;
		ret = fs_render(fs, fo, now);
		pthread_mutex_lock(&fo->lock);
		changed = ret < 0 || !fo->have_snap || differs(now, &fo->snap);
		if (changed && !atomic_load(&fs->sampler_stop)) {
			/* ENOENT/EBADF/ENODEV just mean the kernel side is gone. */
			fuse_lowlevel_notify_poll(fo->ph);
			fuse_pollhandle_destroy(fo->ph);
			fo->ph = NULL;
			atomic_fetch_add(&fs->notifies, 1);
		}
		pending |= fo->ph != NULL;
		pthread_mutex_unlock(&fo->lock);
	}
	atomic_store(&fs->poll_pending, pending);
	pthread_mutex_unlock(&fs->poll_lock);
	atomic_fetch_add(&fs->samples, 1);
	return pending;
}

static void *sampler_main(void *arg)
{
	struct fs *fs = arg;
	struct strbuf now = {0};
	unsigned int ms = fs->cfg.interval_ms ? fs->cfg.interval_ms : 100;

	pthread_mutex_lock(&fs->sampler_mx);
	while (!atomic_load(&fs->sampler_stop)) {
		struct timespec ts;

		if (!atomic_load(&fs->poll_pending)) {
			/* Nothing to watch: sleep until a poll arrives.  fs_poll
			 * sets poll_pending, then signals holding sampler_mx, so
			 * the check and this wait cannot miss it. */
			pthread_cond_wait(&fs->sampler_cv, &fs->sampler_mx);
		} else {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += (long)(ms % 1000) * 1000000L;
			ts.tv_sec += ms / 1000 + ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
			pthread_cond_timedwait(&fs->sampler_cv, &fs->sampler_mx, &ts);
		}
		if (atomic_load(&fs->sampler_stop))
			break;
		pthread_mutex_unlock(&fs->sampler_mx);
		sample(fs, &now);
		pthread_mutex_lock(&fs->sampler_mx);
	}
	pthread_mutex_unlock(&fs->sampler_mx);
	sb_free(&now);
	return NULL;
}

int fs_sampler_start(struct fs *fs)
{
	pthread_condattr_t ca;
	int ret;

	atomic_store(&fs->sampler_stop, false);
	pthread_mutex_init(&fs->sampler_mx, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fs->sampler_cv, &ca);
	pthread_condattr_destroy(&ca);
	ret = pthread_create(&fs->sampler, NULL, sampler_main, fs);
	if (ret) {
		pthread_cond_destroy(&fs->sampler_cv);
		pthread_mutex_destroy(&fs->sampler_mx);
		return -ret;
	}
	fs->sampler_running = true;
	return 0;
}

void fs_sampler_stop(struct fs *fs)
{
	if (!fs->sampler_running)
		return;
	pthread_mutex_lock(&fs->sampler_mx);
	atomic_store(&fs->sampler_stop, true);
	pthread_cond_signal(&fs->sampler_cv);
	pthread_mutex_unlock(&fs->sampler_mx);
	pthread_join(fs->sampler, NULL);
	pthread_cond_destroy(&fs->sampler_cv);
	pthread_mutex_destroy(&fs->sampler_mx);
	fs->sampler_running = false;
}
