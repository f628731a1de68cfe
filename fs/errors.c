/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The errors file: an errno alone cannot say why a write was refused, so
 * every refused request leaves one line here, newest last:
 *
 *   2026-11-22T01:02:03Z buffers/7: EINVAL: buffer index must be 2 (...)
 *
 * fs_error_add() with err 0 records a note of the daemon's own instead
 * (the warning that an unattended start serves the simulated card).
 *
 * The explanation comes from the library (ga_last_error(), per thread) or
 * from the daemon's own checks (fs_err(), also per thread, so concurrent
 * requests in the multi-threaded loop never swap explanations).  err_lock
 * is a leaf lock.
 *
 * The file grows by appending, so tail -f (which reads from where the last
 * size ended) sees each new line: the ring holds up to twice [monitor]
 * errors_kept lines and, when full, drops the older ones down to
 * errors_kept at once.  The file then shrinks, which tail reports as a
 * truncation before showing the kept lines again; dropping one line per
 * new line would shift the text under a follower instead.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs.h"

static _Thread_local char fs_why[512];
static _Thread_local bool fs_why_set;

int fs_err(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fs_why, sizeof(fs_why), fmt, ap);
	va_end(ap);
	fs_why_set = true;
	return err;
}

void fs_err_clear(void)
{
	fs_why_set = false;
	fs_why[0] = '\0';
}

const char *fs_last_error(void)
{
	const char *lib;

	if (fs_why_set)
		return fs_why;
	lib = ga_last_error();
	return lib && *lib ? lib : "(no explanation recorded)";
}

const char *fs_errno_name(int err)
{
	static const struct {
		int err;
		const char *name;
	} names[] = {
		{EPERM, "EPERM"},
		{ENOENT, "ENOENT"},
		{EIO, "EIO"},
		{E2BIG, "E2BIG"},
		{EBADF, "EBADF"},
		{EAGAIN, "EAGAIN"},
		{ENOMEM, "ENOMEM"},
		{EACCES, "EACCES"},
		{EFAULT, "EFAULT"},
		{EBUSY, "EBUSY"},
		{EEXIST, "EEXIST"},
		{ENODEV, "ENODEV"},
		{ENOTDIR, "ENOTDIR"},
		{EISDIR, "EISDIR"},
		{EINVAL, "EINVAL"},
		{ENOSPC, "ENOSPC"},
		{ERANGE, "ERANGE"},
		{ENOSYS, "ENOSYS"},
		{ENOTEMPTY, "ENOTEMPTY"},
		{ENOTSUP, "ENOTSUP"},
		{ETIMEDOUT, "ETIMEDOUT"},
		{EFBIG, "EFBIG"},
		{ESTALE, "ESTALE"},
		{ENXIO, "ENXIO"},
		{ENOTTY, "ENOTTY"},
		{EROFS, "EROFS"},
		{ENOLINK, "ENOLINK"},
		{EPFNOSUPPORT, "EPFNOSUPPORT"},
		{EOVERFLOW, "EOVERFLOW"},
		{EBADMSG, "EBADMSG"}, {ENODATA, "ENODATA"}, {ENAMETOOLONG, "ENAMETOOLONG"},
		{EPROTONOSUPPORT, "EPROTONOSUPPORT"},
		{0, "OK"}, /* 0: a recovery note (link up again) */
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].err == err)
			return names[i].name;
	return "E?";
}

/* Lines the ring holds at most. */
static unsigned int ring_cap(const struct fs *fs)
{
	return 2 * fs->cfg.errors_kept;
}

int fs_errors_init(struct fs *fs)
{
	unsigned int n = fs->cfg.errors_kept ? fs->cfg.errors_kept : 1;

	fs->cfg.errors_kept = n;
	fs->err_lines = calloc(ring_cap(fs), sizeof(*fs->err_lines));
	if (!fs->err_lines)
		return -ENOMEM;
	return pthread_mutex_init(&fs->err_lock, NULL) ? -ENOMEM : 0;
}

void fs_errors_fini(struct fs *fs)
{
	if (!fs->err_lines)
		return;
	for (unsigned int i = 0; i < ring_cap(fs); i++)
		free(fs->err_lines[i]);
	free(fs->err_lines);
	fs->err_lines = NULL;
	pthread_mutex_destroy(&fs->err_lock);
}

/* @line (malloc'd, ending in its one newline) with every other control
 * character as \xNN, embedded newlines as spaces; frees @line. */
static char *escape_controls(char *line)
{
	size_t n = strlen(line), extra = 0, o = 0;
	char *out;

	for (size_t i = 0; i + 1 < n; i++)
		if (((unsigned char)line[i] < 0x20 && line[i] != '\n') || line[i] == 0x7f)
			extra += 3;
	if (!extra) {
		for (size_t i = 0; i + 1 < n; i++)
			if (line[i] == '\n')
				line[i] = ' ';
		return line;
	}
	out = malloc(n + extra + 1);
	if (out) {
		for (size_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)line[i];

			if (i + 1 < n && c == '\n')
				out[o++] = ' ';
			else if (i + 1 < n && (c < 0x20 || c == 0x7f))
				o += (size_t)sprintf(out + o, "\\x%02x", c);
			else
				out[o++] = (char)c;
		}
		out[o] = '\0';
	}
	free(line);
	return out;
}

void fs_error_add(struct fs *fs, const char *path, int err, const char *why)
{
	char stamp[32], *line;
	struct tm tm;
	time_t now = time(NULL);
	unsigned int cap = ring_cap(fs), slot;

	if (err < 0)
		err = -err;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
	/* err 0: a note from the daemon itself, no errno to name. */
	if ((err ? asprintf(&line, "%s %s: %s: %s\n", stamp, path, fs_errno_name(err), why)
		 : asprintf(&line, "%s %s: %s\n", stamp, path, why)) < 0)
		return; /* out of memory: the errno still reaches the caller */
	/* One line per error, and only printable text: an explanation must not
	 * forge extra lines, and a buffer name or written text must not drive
	 * the terminal of whoever reads errors (ESC, CR, BEL), so control
	 * characters are written \xNN as written values are. */
	line = escape_controls(line);
	if (!line)
		return;

	pthread_mutex_lock(&fs->err_lock);
	/* Full: back to the newest errors_kept - 1 lines plus this one, and
	 * shorter than before, so that followers see a truncation. */
	if (fs->err_count == cap)
		for (size_t dropped = 0, add = strlen(line);
		     fs->err_count && (fs->err_count >= fs->cfg.errors_kept || dropped <= add);) {
			dropped += strlen(fs->err_lines[fs->err_head]);
			free(fs->err_lines[fs->err_head]);
			fs->err_lines[fs->err_head] = NULL;
			fs->err_head = (fs->err_head + 1) % cap;
			fs->err_count--;
		}
	slot = (fs->err_head + fs->err_count) % cap;
	fs->err_count++;
	fs->err_lines[slot] = line;
	pthread_mutex_unlock(&fs->err_lock);
	atomic_fetch_add(&fs->err_total, 1);
	if (getenv("GPUASYNCFS_LOG_ERRORS")) /* foreground debugging aid */
		fputs(line, stderr);
}

int fs_show_errors(struct fs_ctx *c, struct strbuf *sb)
{
	struct fs *fs = c->fs;

	pthread_mutex_lock(&fs->err_lock);
	for (unsigned int i = 0; i < fs->err_count; i++)
		sb_puts(sb, fs->err_lines[(fs->err_head + i) % ring_cap(fs)]);
	pthread_mutex_unlock(&fs->err_lock);
	return sb->oom ? -ENOMEM : 0;
}
