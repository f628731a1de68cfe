/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * frames/record: the frames the watcher sees (frames.c), written to a file
 * (gpuasync/record.h, docs/record.md) while they come:
 *
 *   $ echo /data/run1.gar > /mnt/gpuasync/frames/record     # start
 *   $ cat /mnt/gpuasync/frames/record_status                # frames, bytes, drops
 *   $ echo stop > /mnt/gpuasync/frames/record               # flush, close
 *
 * The watcher reads each new frame's payload into a record and queues it;
 * a thread of the recorder's own encodes each record (its CRC covers the
 * payload: the costly part) and writes the queue to the file, so neither
 * the CRC nor a slow disk holds the watcher back.  The queue is bounded (queue=SIZE,
 * default 64 MiB): a frame that does not fit is not recorded and counted
 * as a drop (the record's "seen" field shows where).  Every record goes
 * to the file in one write, so a daemon killed with SIGKILL leaves a file
 * readable up to its last whole record.  One recorder per daemon.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gpuasync/frame.h>
#include <gpuasync/record.h>
#include <gpuasync/sim.h>
#include <gpuasync/timing.h>

#include "fs.h"

#define REC_QUEUE_DEFAULT (64ull << 20)
#define REC_QUEUE_MIN	  (64ull << 10)

struct rec_item {
	struct rec_item *next;
	size_t bytes;
	struct ga_rec_frame f; /* encoded into data by the writer; the payload is there already */
	uint8_t data[];
};

enum rec_state { REC_OFF, REC_ON, REC_STOPPED, REC_FAILED };

static struct recorder {
	/* Tested by the watcher at every frame without the lock. */
	atomic_bool active;
	/* Guards everything below; a leaf (taken after the watcher's lock). */
	pthread_mutex_t mx;
	pthread_cond_t cv; /* the writer: items queued, or stop */
	enum rec_state state;
	char path[256], error[512];
	int fd;
	bool stop;
	pthread_t thread;
	struct rec_item *head, *tail;
	uint64_t queued, queue_max; /* bytes waiting, and the bound */
	uint64_t number;	    /* records queued so far: the next one's number */
	uint64_t frames, bytes;	    /* written to the file (its header included) */
	uint64_t drops;
	unsigned int inflight; /* frames numbered, not queued yet: the writer waits */
} R = {.mx = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .fd = -1};

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void *writer_main(void *arg)
{
	struct fs *fs = arg;

	pthread_mutex_lock(&R.mx);
	for (;;) {
		struct rec_item *it;
		bool failed;
		int ret;

		while (!R.head && !(R.stop && !R.inflight))
			pthread_cond_wait(&R.cv, &R.mx);
		if (!R.head)
			break; /* stopped, everything written */
		it = R.head;
		R.head = it->next;
		if (!R.head)
			R.tail = NULL;
		failed = R.state == REC_FAILED;
		pthread_mutex_unlock(&R.mx);
		if (!failed)
			ga_rec_frame_encode(&it->f, it->data);
		ret = failed ? 0 : write_all(R.fd, it->data, it->bytes);
		pthread_mutex_lock(&R.mx);
		R.queued -= it->bytes;
		if (ret == 0 && R.state != REC_FAILED) {
			R.frames++;
			R.bytes += it->bytes;
		} else if (ret < 0) {
			/* Disk full, file system gone: say so once, record no more. */
			R.state = REC_FAILED;
			atomic_store(&R.active, false);
			snprintf(R.error, sizeof(R.error),
				 "writing %s failed after %llu frames: %s", R.path,
				 (unsigned long long)R.frames, strerror(-ret));
			fs_error_add(fs, "frames/record", ret, R.error);
		}
		free(it);
	}
	pthread_mutex_unlock(&R.mx);
	return NULL;
}

/* fs_frame_hook: queue the frame's record while recording. */
static void record_frame(struct fs *fs, unsigned int b, struct ga_buf *buf, const uint8_t *raw,
			 size_t payload_max, uint64_t seen, const struct ga_timing_header *th,
			 int batch_err, const struct ga_batch_sub *sub, unsigned int nsub)
{
	struct ga_rec_frame f = {0};
	struct rec_item *it;
	struct timespec rt, mt;
	struct ga_header h;
	uint8_t *payload;
	size_t n;

	if (!atomic_load_explicit(&R.active, memory_order_acquire))
		return;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mt);
	memcpy(f.desc, raw, sizeof(f.desc));
	ga_header_decode(raw, &h);
	f.payload_bytes = h.size;
	if (h.size > payload_max) {
		f.payload_bytes = (uint32_t)payload_max; /* what landed */
		f.flags |= GA_REC_F_CUT;
	}
	f.realtime_ns = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
	f.monotonic_ns = (uint64_t)mt.tv_sec * 1000000000ull + (uint64_t)mt.tv_nsec;
	f.seen = seen;
	f.buffer = b;
	if (ga_reg_read(fs->dev, GA_REG_RX_FRAME_COUNT, 0, &f.rx_frame_count) < 0)
		f.rx_frame_count = 0;
	f.batch = GA_REC_BATCH_NONE;
	if (nsub) {
		f.batch = GA_BATCH_OK;
		f.nsub = (uint16_t)nsub;
		memcpy(f.sub, sub, nsub * sizeof(*sub));
		f.th_off = sub[0].off;
	} else if (batch_err != GA_BATCH_OK) {
		f.batch = (uint8_t)batch_err;
	}
	if (th) {
		f.flags |= GA_REC_F_TIMING;
		f.pulse_ctl = th->pulse_ctl;
		f.th_time_ns = th->time_ns;
		f.th_time_s = th->time_s;
	}
	n = ga_rec_frame_bytes(&f);
	pthread_mutex_lock(&R.mx);
	if (R.state != REC_ON || R.queued + n > R.queue_max) {
		if (R.state == REC_ON)
			R.drops++;
		pthread_mutex_unlock(&R.mx);
		return;
	}
	R.queued += n; /* reserved: the writer cannot free what is not queued */
	R.inflight++;
	f.number = R.number++;
	pthread_mutex_unlock(&R.mx);
	it = malloc(sizeof(*it) + n);
	payload = it ? it->data + GA_REC_HEADER_BYTES + (size_t)f.nsub * GA_REC_SUB_BYTES : NULL;
	/* The payload straight into its place in the record. */
	if (!it || (f.payload_bytes &&
		    ga_buf_read(buf, fs->info.dma_data_bytes, payload, f.payload_bytes) < 0)) {
		free(it);
		it = NULL;
	} else {
		f.payload = payload;
		it->f = f;
		it->bytes = n;
		it->next = NULL;
	}
	pthread_mutex_lock(&R.mx);
	R.inflight--;
	if (!it) {
		/* Numbered already: the file would skip a number, so it ends here. */
		R.queued -= n;
		R.state = REC_FAILED;
		atomic_store(&R.active, false);
		snprintf(R.error, sizeof(R.error), "frame %llu could not be read or kept",
			 (unsigned long long)f.number);
		fs_error_add(fs, "frames/record", -EIO, R.error);
	} else {
		if (R.tail)
			R.tail->next = it;
		else
			R.head = it;
		R.tail = it;
	}
	pthread_cond_signal(&R.cv);
	pthread_mutex_unlock(&R.mx);
}

/* Stop: the writer writes what is queued, the file is closed.  R.mx held
 * by the caller, who must not be the watcher (it queues under its lock). */
static void stop_locked(void)
{
	if (R.fd < 0)
		return;
	atomic_store(&R.active, false);
	R.stop = true;
	pthread_cond_signal(&R.cv);
	pthread_mutex_unlock(&R.mx);
	pthread_join(R.thread, NULL);
	pthread_mutex_lock(&R.mx);
	if (fsync(R.fd) < 0 && R.state == REC_ON) {
		R.state = REC_FAILED;
		snprintf(R.error, sizeof(R.error), "fsync of %s: %s", R.path, strerror(errno));
	}
	close(R.fd);
	R.fd = -1;
	if (R.state == REC_ON)
		R.state = REC_STOPPED;
}

void fs_record_stop(struct fs *fs)
{
	(void)fs;
	pthread_mutex_lock(&R.mx);
	stop_locked();
	pthread_mutex_unlock(&R.mx);
}

/* "PATH [queue=SIZE]": parsed whole before anything changes. */
static int parse_start(const char *buf, size_t len, char *path, size_t path_len, uint64_t *queue)
{
	char text[512], *save = NULL, *w;

	if (len >= sizeof(text))
		return fs_err(-ENAMETOOLONG, "record: at most %zu bytes", sizeof(text) - 1);
	memcpy(text, buf, len);
	text[len] = '\0';
	*queue = REC_QUEUE_DEFAULT;
	path[0] = '\0';
	for (w = strtok_r(text, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
		if (!strncmp(w, "queue=", 6)) {
			if (fs_parse_u64(w + 6, strlen(w + 6), 1ull << 40, true, queue) < 0 ||
			    *queue < REC_QUEUE_MIN)
				return fs_err(-EINVAL, "record: queue=%s: a size of 64K or more",
					      w + 6);
		} else if (!path[0]) {
			if (w[0] != '/')
				return fs_err(
					-EINVAL,
					"record: '%s': an absolute path (the daemon's working "
					"directory is not yours)",
					w);
			if (strlen(w) >= path_len)
				return fs_err(-ENAMETOOLONG, "record: the path is too long");
			snprintf(path, path_len, "%s", w);
		} else {
			return fs_err(-EINVAL, "record: '%s': write PATH [queue=SIZE], or stop", w);
		}
	}
	if (!path[0])
		return fs_err(-EINVAL, "record: write PATH [queue=SIZE], or stop");
	return 0;
}

/* What open(O_CREAT | O_EXCL) and a second start would refuse, said at
 * write(2), where a shell sees it (the file is made at close). */
static int check_start(const char *path)
{
	char parent[256], *slash;
	struct stat st;
	int fd;

	pthread_mutex_lock(&R.mx);
	fd = R.fd;
	pthread_mutex_unlock(&R.mx);
	if (fd >= 0)
		return fs_err(-EBUSY, "record: already recording to %s (write stop first)", R.path);
	if (lstat(path, &st) == 0)
		return fs_err(-EEXIST, "record: %s: exists (a recording never replaces a file)",
			      path);
	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	*(slash == parent ? slash + 1 : slash) = '\0';
	if (stat(parent, &st) < 0)
		return fs_err(-errno, "record: %s: %s", parent, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return fs_err(-ENOTDIR, "record: %s: not a directory", parent);
	return 0;
}

static int store_record(struct fs_ctx *c, const char *buf, size_t len)
{
	struct ga_rec_file hdr = {0};
	uint8_t raw[GA_REC_FILE_BYTES];
	char path[256];
	uint64_t queue;
	struct timespec ts;
	int fd, ret;

	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	if (len == 0 || (len == 4 && !memcmp(buf, "stop", 4))) {
		if (c->check_only)
			return 0;
		/* The frames that landed up to now go in first. */
		pthread_rwlock_rdlock(&c->fs->bufs_lock);
		fs_frames_scan(c->fs);
		pthread_rwlock_unlock(&c->fs->bufs_lock);
		fs_record_stop(c->fs);
		return 0;
	}
	ret = parse_start(buf, len, path, sizeof(path), &queue);
	if (ret < 0)
		return ret;
	if (c->check_only)
		return check_start(path);
	/* The watcher hands every frame to record_frame from the first start
	 * on; R.active says whether it keeps them. */
	fs_frames_observe(c->fs, record_frame);
	pthread_mutex_lock(&R.mx);
	if (R.fd >= 0) {
		pthread_mutex_unlock(&R.mx);
		return fs_err(-EBUSY, "record: already recording to %s (write stop first)", R.path);
	}
	/* Never over a file: a run recorded is not lost to a typo. */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		pthread_mutex_unlock(&R.mx);
		return fs_err(ret, "record: %s: %s", path, strerror(-ret));
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	hdr.dma_data_bytes = c->fs->info.dma_data_bytes;
	hdr.card_version = c->fs->info.version;
	hdr.created_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	snprintf(hdr.source, sizeof(hdr.source), "%s", c->fs->sim ? "sim" : "card");
	ga_rec_file_encode(&hdr, raw);
	ret = write_all(fd, raw, sizeof(raw));
	if (ret == 0) {
		R.fd = fd;
		R.stop = false;
		R.head = R.tail = NULL;
		R.queued = R.number = R.frames = R.drops = 0;
		R.bytes = sizeof(raw);
		R.queue_max = queue;
		R.error[0] = '\0';
		snprintf(R.path, sizeof(R.path), "%s", path);
		R.state = REC_ON;
		ret = -pthread_create(&R.thread, NULL, writer_main, c->fs);
		if (ret < 0) {
			R.fd = -1;
			R.state = REC_FAILED;
		}
	}
	if (ret < 0) {
		close(fd);
		unlink(path);
		pthread_mutex_unlock(&R.mx);
		return fs_err(ret, "record: %s: %s", path, strerror(-ret));
	}
	atomic_store_explicit(&R.active, true, memory_order_release);
	pthread_mutex_unlock(&R.mx);
	return 0;
}

static int show_record(struct fs_ctx *c, struct strbuf *sb)
{
	int ret;

	(void)c;
	pthread_mutex_lock(&R.mx);
	ret = sb_printf(sb, "%s\n", R.fd >= 0 ? R.path : "off");
	pthread_mutex_unlock(&R.mx);
	return ret ? -ENOMEM : 0;
}

static int show_record_status(struct fs_ctx *c, struct strbuf *sb)
{
	static const char *const state[] = {"off", "recording", "stopped", "failed"};
	int ret;

	/* Frames seen up to now are queued first. */
	pthread_rwlock_rdlock(&c->fs->bufs_lock);
	fs_frames_scan(c->fs);
	pthread_rwlock_unlock(&c->fs->bufs_lock);
	pthread_mutex_lock(&R.mx);
	ret = sb_printf(sb,
			"state %s\npath %s\nframes %llu\nbytes %llu\ndrops %llu\nqueued_bytes "
			"%llu\nqueue_max %llu\nerror %s\n",
			state[R.state], R.path[0] ? R.path : "-", (unsigned long long)R.frames,
			(unsigned long long)R.bytes, (unsigned long long)R.drops,
			(unsigned long long)R.queued, (unsigned long long)R.queue_max,
			R.error[0] ? R.error : "-");
	pthread_mutex_unlock(&R.mx);
	return ret ? -ENOMEM : 0;
}

/* ---- sim/replay: the simulated card plays a file ----------------------------- */

/* "PATH [rate=recorded|max|HZ] [repeat=N] [count=N] [live=0|1] [queue=SIZE]
 * [hold=auto|0|1]". */
static int parse_replay(char *text, struct ga_sim_replay *r)
{
	char *save = NULL, *w, *v;
	uint64_t n;

	memset(r, 0, sizeof(*r));
	r->rate_hz = GA_SIM_REPLAY_RECORDED;
	r->repeat = 1;
	for (w = strtok_r(text, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
		v = strchr(w, '=');
		if (!v) {
			if (r->path)
				return fs_err(-EINVAL, "replay: '%s': one file only", w);
			if (w[0] != '/')
				return fs_err(-EINVAL, "replay: '%s': an absolute path", w);
			r->path = w;
			continue;
		}
		*v++ = '\0';
		if (!strcmp(w, "rate") && !strcmp(v, "recorded")) {
			r->rate_hz = GA_SIM_REPLAY_RECORDED;
		} else if (!strcmp(w, "rate") && !strcmp(v, "max")) {
			r->rate_hz = GA_SIM_REPLAY_MAX;
		} else if (!strcmp(w, "rate")) {
			if (fs_parse_u64(v, strlen(v), 1000000000ull, false, &n) < 0 || !n)
				return fs_err(
					-EINVAL,
					"replay: rate=%s: recorded, max, or frames per second "
					"1..1000000000",
					v);
			r->rate_hz = n;
		} else if (!strcmp(w, "repeat") || !strcmp(w, "count")) {
			if (fs_parse_u64(v, strlen(v), UINT64_MAX, false, &n) < 0)
				return fs_err(-EINVAL, "replay: %s=%s: a number (0: no limit)", w,
					      v);
			*(!strcmp(w, "repeat") ? &r->repeat : &r->count) = n;
		} else if (!strcmp(w, "live")) {
			bool on;

			if (fs_parse_bool(v, strlen(v), &on) < 0)
				return fs_err(-EINVAL, "replay: live=%s: 0 or 1", v);
			r->live = on;
		} else if (!strcmp(w, "queue")) {
			if (fs_parse_u64(v, strlen(v), 1ull << 40, true, &n) < 0 || n < 4096)
				return fs_err(-EINVAL, "replay: queue=%s: a size of 4K or more", v);
			r->queue_bytes = n;
		} else if (!strcmp(w, "hold")) {
			bool on;

			if (!strcmp(v, "auto"))
				r->hold = GA_SIM_REPLAY_HOLD_AUTO;
			else if (fs_parse_bool(v, strlen(v), &on) < 0)
				return fs_err(-EINVAL, "replay: hold=%s: auto, 0 or 1", v);
			else
				r->hold = on ? GA_SIM_REPLAY_HOLD_ON : GA_SIM_REPLAY_HOLD_OFF;
		} else {
			return fs_err(-EINVAL,
				      "replay: '%s': write PATH [rate=recorded|max|HZ] [repeat=N] "
				      "[count=N] [live=0|1] [queue=SIZE] [hold=auto|0|1], or stop",
				      w);
		}
	}
	if (!r->path)
		return fs_err(-EINVAL, "replay: write PATH [options], or stop");
	return 0;
}

static int store_replay(struct fs_ctx *c, const char *buf, size_t len)
{
	struct ga_sim_replay r;
	char text[512];
	int ret;

	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	if (len == 0 || (len == 4 && !memcmp(buf, "stop", 4)))
		return c->check_only ? 0 : ga_sim_replay_stop(c->fs->dev);
	if (len >= sizeof(text))
		return fs_err(-ENAMETOOLONG, "replay: at most %zu bytes", sizeof(text) - 1);
	memcpy(text, buf, len);
	text[len] = '\0';
	ret = parse_replay(text, &r);
	if (ret < 0)
		return ret;
	/* The file is checked where the writer sees a refusal: at write(2),
	 * not at close (docs/fs.md); start checks it again. */
	if (c->check_only)
		return ga_sim_replay_check(c->fs->dev, &r);
	/* The new run starts a new sequence in frames/, as sim/running does. */
	fs_frames_new_run(c->fs, false);
	return ga_sim_replay_start(c->fs->dev, &r);
}

static int show_replay(struct fs_ctx *c, struct strbuf *sb)
{
	struct ga_sim_replay_status st;
	int ret = ga_sim_replay_status(c->fs->dev, &st);

	if (ret < 0)
		return ret;
	return sb_printf(sb, "%s\n", st.running ? st.path : "off") ? -ENOMEM : 0;
}

static int show_replay_status(struct fs_ctx *c, struct strbuf *sb)
{
	struct ga_sim_replay_status st;
	int ret = ga_sim_replay_status(c->fs->dev, &st);

	if (ret < 0)
		return ret;
	ret = sb_printf(sb,
			"state %s\npath %s\nframes %llu\nplays %llu\nfile_frames %llu\n"
			"queued_bytes %llu\nqueued_most %llu\nqueue_max %llu\nheld %d\n"
			"held_bytes %llu\nerror %s\n",
			!st.path[0]  ? "off"
			: st.running ? "playing"
			: st.failed  ? "failed"
				     : "ended",
			st.path[0] ? st.path : "-", (unsigned long long)st.frames,
			(unsigned long long)st.plays, (unsigned long long)st.file_frames,
			(unsigned long long)st.queued_bytes, (unsigned long long)st.queued_most,
			(unsigned long long)st.queue_max, st.held,
			(unsigned long long)st.held_bytes, st.error[0] ? st.error : "-");
	return ret ? -ENOMEM : 0;
}

static bool has_replay(struct fs *fs, const struct fs_node *n, unsigned int idx)
{
	(void)n;
	(void)idx;
	return fs->sim;
}

static bool has_record(struct fs *fs, const struct fs_node *n, unsigned int idx)
{
	(void)n;
	(void)idx;
	return !fs->cfg.observe;
}

/* clang-format off */
const struct fs_node fs_record_rows[] = {
	{ .name = "record", .parent = FS_D_FRAMES, .dir = FS_D_NONE, .mode = 0644, .flags = FS_LIVE,
	  .show = show_record, .store = store_record, .visible = has_record, .reg = -1,
	  .doc = "write PATH [queue=SIZE] to record every frame seen into a new file (docs/record.md), stop to end" },
	{ .name = "record_status", .parent = FS_D_FRAMES, .dir = FS_D_NONE, .mode = 0444, .flags = FS_LIVE,
	  .show = show_record_status, .visible = has_record, .reg = -1,
	  .doc = "the recording: state, path, frames and bytes written, drops (queue full), queued bytes" },
	{ .name = "replay", .parent = FS_D_SIM, .dir = FS_D_NONE, .mode = 0644, .flags = FS_LIVE,
	  .show = show_replay, .store = store_replay, .visible = has_replay, .reg = -1,
	  .doc = "write PATH [rate=recorded|max|HZ] [repeat=N] [count=N] [live=0|1] [queue=SIZE] [hold=auto|0|1] to play a recorded run into the write buffers, stop to end" },
	{ .name = "replay_status", .parent = FS_D_SIM, .dir = FS_D_NONE, .mode = 0444, .flags = FS_LIVE,
	  .show = show_replay_status, .visible = has_replay, .reg = -1,
	  .doc = "the replay: state, path, frames sent, plays begun, frames in the file, read-ahead bytes, whether it plays from a held copy" },
};
const unsigned int fs_record_nrows = sizeof(fs_record_rows) / sizeof(fs_record_rows[0]);
/* clang-format on */
