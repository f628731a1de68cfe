/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * gpuasyncfs internals: the one file table and the state shared by the
 * daemon's files.
 *
 * Every node of the tree (docs/guide.md) is one row of struct fs_node:
 * name, parent directory, mode, flags and its handlers.  Rows come from
 * the modules (core.c, registers.c, buffers.c, metrics.c, sim.c), which
 * hand fs_table_build() their static rows; register rows are generated
 * there from ga_regs[].  The table is built once, before the session
 * starts, keeping only rows the running device has (sysfs is_visible), and
 * is read-only afterwards.  lookup, getattr, readdir, open, README and the
 * tests all loop over it; nothing else lists files.
 *
 * Inode numbers are computed, never allocated (see fs_ino()): row + 1 for
 * nodes that exist once, plus FS_ROWS_MAX * (index + 1) for nodes inside
 * buffers/<i>/ or read_buffers/<i>/.  A buffer directory that is removed
 * and created again gets the same numbers but a new generation, so the
 * kernel marks inodes still held from the old buffer as stale.
 */
#ifndef GPUASYNCFS_FS_H
#define GPUASYNCFS_FS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include <fuse_lowlevel.h>
#include <gpuasync/gpuasync.h>
#include <gpuasync/platform.h>

#define FS_ROWS_MAX 256u  /* rows in the table; part of the inode scheme */
#define FS_TEXT_MAX 4096u /* longest accepted text write (one page, like sysfs) */

/* Directories of the tree.  Per-buffer ones exist once per buffer. */
enum fs_dir {
	FS_D_NONE = -1, /* row is a file */
	FS_D_ROOT,
	FS_D_DEVICE,
	FS_D_REGISTERS,
	FS_D_BUFFERS,	   /* buffers/: mkdir/rmdir of <i> */
	FS_D_WBUF,	   /* buffers/<i>/ */
	FS_D_WLAT,	   /* buffers/<i>/latency/ */
	FS_D_READ_BUFFERS, /* read_buffers/ */
	FS_D_RBUF,	   /* read_buffers/<i>/ */
	FS_D_RLAT,	   /* read_buffers/<i>/latency/ */
	FS_D_SIM,
	FS_D_SIM_STATS,
	FS_D_PROMETHEUS, /* prometheus/: a textfile-collector directory */
	FS_D_FIRMWARE,	 /* device/firmware/: the AxiVersion identity */
	FS_D_PLATFORM,	 /* device/platform/: the platform doctor's verdicts */
	FS_D_FRAMES,	 /* frames/: pulse-ID counters from the frames (frames.c) */
	FS_D_HEALTH,	 /* health/: verdicts a fleet alerts on (health.c) */
	FS_D_SYSMON,	 /* device/sysmon/: the FPGA's SysMon readings (sysmon.c) */
	FS_D_COUNT
};

/* Row flags. */
#define FS_LIVE	   0x01 /* value changes on its own: pollable (POLLPRI on change) */
#define FS_BINARY  0x02 /* read_bin/write_bin at the caller's offset, not text */
#define FS_DYNNAME 0x04 /* buffers/<i>: the name is the buffer index */
#define FS_VARSIZE 0x08 /* size() changes on its own: stat attributes are not cached */
/* Text whose st_size is its real length (every text file with a value, set
 * by fs_table_build: files people tail, page, count or copy): stat renders
 * it; an open file's stat (lseek SEEK_END) renders its snapshot, which the
 * reads that follow are served from. */
#define FS_SIZED 0x10
/* Text that only grows (errors, between drops): a read at or past the end
 * of the snapshot renders again, so tail -f gets the lines added since. */
#define FS_APPEND 0x20
/* Text of up to FS_WHOLE_WRITE bytes per write, not FS_TEXT_MAX
 * (settings.yaml: a pyrogue tree file; each write is one file). */
#define FS_BIG_TEXT 0x40

struct fs;
struct fs_frames;
struct fs_node;
struct strbuf;

/* What a handler works on: the node, the buffer index and (for nodes
 * inside a buffer directory) the buffer itself, valid while the caller
 * holds fs->bufs_lock for reading. */
struct fs_ctx {
	struct fs *fs;
	const struct fs_node *node;
	unsigned int idx;
	struct ga_buf *buf;
	bool locked; /* holds fs->bufs_lock for reading (fs_ctx_enter) */
	/* store: validate only, change nothing (a write is checked as it
	 * arrives and applied when the file is closed; tree.c) */
	bool check_only;
};

struct fs_node {
	const char *name;
	enum fs_dir parent;
	enum fs_dir dir;   /* the directory this row is, or FS_D_NONE */
	unsigned int mode; /* permission bits; see fs_mode() for writable files */
	unsigned int flags;
	/* Text files: render the whole value / apply one written text (all
	 * that one open wrote).  Both return 0 or a negative errno; store
	 * must validate before it changes anything (a text is applied whole
	 * or not at all), and with c->check_only return after validating. */
	int (*show)(struct fs_ctx *c, struct strbuf *sb);
	int (*store)(struct fs_ctx *c, const char *buf, size_t len);
	/* Binary files: bytes read/written at @off, or a negative errno. */
	ssize_t (*read_bin)(struct fs_ctx *c, char *dst, size_t len, off_t off);
	ssize_t (*write_bin)(struct fs_ctx *c, const char *src, size_t len, off_t off);
	/* Size for stat (binary files): what a read from 0 to EOF returns.
	 * Text files report their rendered length (FS_SIZED, set for every
	 * row with show by fs_table_build), write-only ones 0; NULL = 0 for
	 * binary. */
	uint64_t (*size)(struct fs_ctx *c);
	/* Per-buffer rows: does buffer @idx have this file?  NULL = yes. */
	bool (*visible)(struct fs *fs, const struct fs_node *n, unsigned int idx);
	int reg;	     /* enum ga_reg_id for register rows, else -1 */
	const char *doc;     /* one line for README */
	char name_store[40]; /* generated names (register rows) */
};

/* Growable text buffer for show handlers. */
struct strbuf {
	char *buf;
	size_t len, cap;
	bool oom;
};
int sb_printf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sb_grow(struct strbuf *sb, size_t need);
int sb_reserve(struct strbuf *sb, size_t cap);
int sb_put_uint(struct strbuf *sb, uint64_t v);
void sb_reset(struct strbuf *sb);
void sb_free(struct strbuf *sb);

/* Append @len bytes.  Inline, as is sb_puts, because metrics appends a
 * few thousand pieces a render and nearly all of them fit: the check
 * and the copy then cost less than a call (and strlen of a literal folds). */
static inline int sb_put(struct strbuf *sb, const void *data, size_t len)
{
	if ((sb->oom || sb->len + len + 1 > sb->cap) && sb_grow(sb, len))
		return -1;
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return 0;
}

static inline int sb_puts(struct strbuf *sb, const char *s)
{
	return sb_put(sb, s, strlen(s));
}

/* Per-buffer slot bookkeeping, under fs->bufs_lock. */
struct fs_slot {
	uint32_t gen; /* bumped at every mkdir and rmdir; open files remember it */
};

struct fs {
	struct ga_dev *dev;
	struct ga_dev_info info;
	struct ga_config cfg;
	char device_spec[512];
	/* The FPGA's DNA (device/firmware/dna), read once at mount so every
	 * metrics sample names the chip even while its link is down; "" where
	 * the card has no AxiVersion block. */
	char dna[GA_FW_TEXT_MAX];
	bool sim;
	uid_t uid;
	gid_t gid;
	time_t start;

	struct fs_node rows[FS_ROWS_MAX];
	unsigned int nrows;
	int dir_row[FS_D_COUNT]; /* row of each directory */

	/* Guards the buffer set (create/destroy) against use by handlers:
	 * mkdir/rmdir take it for writing, every per-buffer handler for
	 * reading.  Taken before any library lock. */
	pthread_rwlock_t bufs_lock;
	struct fs_slot slots[2][GA_MAX_BUFFERS];
	/* Register stores: every write of a register through the mount
	 * (registers/<name>, registers/raw, settings) holds it, so a settings
	 * write's read-before, apply, read-back and roll-back are one
	 * transaction that no other client's write lands in the middle of.
	 * Taken after bufs_lock, before any library lock.  Other programs
	 * writing the card directly are not held off (docs/fs.md). */
	pthread_mutex_t reg_store_lock;
	/* Size the next mkdir allocates, per direction (buffers/alloc_size). */
	_Atomic uint64_t alloc_size[2];
	/* sim/fault_code: code used by the next injected fault. */
	_Atomic uint32_t fault_code;

	/* errors ring (errors.c), guarded by err_lock (a leaf lock). */
	pthread_mutex_t err_lock;
	char **err_lines;
	unsigned int err_head, err_count;
	_Atomic uint64_t err_total;

	/* Every open file and directory, so that the ones the kernel never
	 * released (lazy unmount, a dying connection) are freed at exit.
	 * open_lock is a leaf lock. */
	pthread_mutex_t open_lock;
	struct fs_open *open_list;

	/* poll and sampler (poll.c). */
	pthread_mutex_t poll_lock; /* guards the list of polled open files; before fh->lock */
	struct fs_open *polled;
	pthread_t sampler;
	bool sampler_running;
	/* sampler_mx with sampler_cv: wakes the sampler for a new poll or for
	 * fs_sampler_stop; sampler_mx is taken after poll_lock, never before. */
	pthread_mutex_t sampler_mx;
	pthread_cond_t sampler_cv;
	atomic_bool poll_pending; /* some open file has a poll handle; written under poll_lock */
	atomic_bool sampler_stop;
	atomic_uint lost_seen; /* ga_dev_registrations_lost already in errors */
	atomic_int link_down;  /* errors last said the link is down (0 at mount: up) */
	_Atomic uint64_t samples;
	_Atomic uint64_t notifies;
	/* Bytes of text snapshots open files hold (fs_snap_account): past
	 * FS_SNAP_BUDGET a read is served without keeping its snapshot, so
	 * thousands of open files cannot grow the daemon without bound. */
	_Atomic uint64_t snap_bytes;
	/* The last metrics render's length: the next one allocates about that
	 * at once (200 kB with 1024 buffers) instead of doubling up to it. */
	_Atomic size_t metrics_len;
	/* What the daemon read in the frames of its write buffers (frames.c);
	 * NULL on an observer mount or before fs_frames_start. */
	struct fs_frames *frames;
	/* The HTTP server and target file (http.c); NULL when not serving. */
	struct fs_http *http;
};
#define FS_SNAP_BUDGET (64u << 20)

/* Per-open state (fi->fh). */
struct fs_open {
	const struct fs_node *node;
	unsigned int idx;
	uint32_t gen;	      /* buffer generation at open */
	pthread_mutex_t lock; /* guards snap, the written text and ph */
	struct strbuf snap;   /* text rendered at offset 0, served at later offsets */
	bool have_snap;
	bool stat_snap; /* snap was rendered for a stat: the next read at 0 serves it */
	bool at_eof;	/* snap went at EOF, eof_len long: reads from there see EOF */
	size_t eof_len;
	size_t snap_counted;	    /* what fs->snap_bytes holds for snap */
	/* Text written through this open, checked at each write and applied
	 * at flush (close): one open writes one text (tree.c).  Under lock. */
	struct strbuf wtext;
	off_t wbase;	/* offset of its first write */
	bool wstarted;	/* a write came since the last flush */
	int wrefused;	/* the negative errno a write of it was refused with, or 0 */
	struct fuse_pollhandle *ph; /* pending poll, or NULL */
	bool polled;		    /* on fs->polled */
	struct fs_open *next_polled;
	struct fs_open *prev_open, *next_open; /* fs->open_list */
};

/* ---- table.c: the table and inode scheme --------------------------------- */
/* One part of the tree for fs_table_build(): static rows, or rows generated
 * for the running card (at most @max; the count or a negative errno). */
struct fs_part {
	const struct fs_node *rows;
	unsigned int nrows;
	int (*generate)(struct fs *fs, struct fs_node *rows, unsigned int max);
};
/* Join @parts, in order, into fs->rows, keeping what the running card has. */
int fs_table_build(struct fs *fs, const struct fs_part *parts, unsigned int nparts);
bool fs_dir_per_buffer(enum fs_dir d, enum ga_dir *dir);
/* Is row @n one per buffer (inside buffers/<i>/ or read_buffers/<i>/)? */
bool fs_row_per_buffer(const struct fs_node *n, enum ga_dir *dir);
/* buffers/ or read_buffers/: the directories mkdir and rmdir work in. */
bool fs_dir_is_collection(enum fs_dir d);
uint64_t fs_ino(const struct fs *fs, unsigned int row, unsigned int idx);
/* Inode -> row and buffer index; -ENOENT for numbers that name nothing now. */
int fs_node_of(struct fs *fs, fuse_ino_t ino, unsigned int *row, unsigned int *idx);
/* Is row @r there for buffer @idx (its visible() hook, or a non-empty directory)? */
bool fs_node_visible(struct fs *fs, unsigned int r, unsigned int idx);
unsigned int fs_mode(const struct fs *fs, const struct fs_node *n);
/* "buffers/3/status"; "buffers/<i>/status" when @idx is UINT_MAX. */
int fs_path(const struct fs *fs, const struct fs_node *n, unsigned int idx, char *buf, size_t len);
int fs_render_readme(struct fs *fs, struct strbuf *sb);
/* pyrogue: "VARIABLE PATH" for every file pyrogue names (table.c). */
int fs_show_pyrogue(struct fs_ctx *c, struct strbuf *sb);

/* ---- tree.c: the FUSE operations ------------------------------------------ */
/* Reply to a failed request: errors line for @path, then the errno. */
void fs_reply_fail(fuse_req_t req, struct fs *fs, const char *path, int err);
void fs_reply_fail_node(fuse_req_t req, struct fs *fs, const struct fs_node *n, unsigned int idx,
			int err);
/* fuse_session_new() with the operations table (kept static in tree.c). */
struct fuse_session *fs_session_new(struct fuse_args *args, struct fs *fs);
/* Free open files the kernel never released (after the session ends). */
void fs_opens_free_all(struct fs *fs);

/* ---- module rows -------------------------------------------------------- */
/* A file's table of rows, fs_NAME_rows, and its length, fs_NAME_nrows. */
#define FS_ROWS(name)                                                                              \
	extern const struct fs_node fs_##name##_rows[];                                            \
	extern const unsigned int fs_##name##_nrows
FS_ROWS(core);
FS_ROWS(buffer);
FS_ROWS(sim);
FS_ROWS(frame);
FS_ROWS(record);
FS_ROWS(health);
/* The health/ verdicts as metrics samples (health.c). */
void fs_health_metrics(struct fs *fs, struct strbuf *sb, const char *id);
/*
 * The PCIe links of the card (e[0], end "card") and of the GPU holding the
 * buffers (e[1], end "gpu", where its address is known), read from sysfs
 * at most once per FS_PCIE_TTL_MS and shared by metrics and health/gpu
 * (health.c).  bdf "" where there is no PCI function (the simulated card);
 * ok: the link files were read; listed: the function is on the bus.
 */
#define FS_PCIE_TTL_MS 1000
struct fs_pcie_end {
	const char *end;
	char bdf[16];
	struct ga_pci_link l;
	bool ok;
	bool listed;
};
struct fs_pcie {
	struct fs_pcie_end e[2];
	unsigned int n;
};
void fs_pcie_read(struct fs *fs, struct fs_pcie *out);
extern const struct fs_node fs_settings_rows[];
extern const unsigned int fs_settings_nrows;
/* Apply an ini settings text whole (the store of `settings`). */
int fs_store_settings(struct fs_ctx *c, const char *buf, size_t len);
/* A setting: a register field a user chooses that stays (settings.c). */
bool fs_is_setting(const struct fs *fs, enum ga_reg_id id);
/* -ENOLINK with the reason when the card's link is down. */
int fs_settings_link_check(struct fs *fs);
/* One staged setting: the value to write, where it came from. */
struct fs_staged {
	enum ga_reg_id id;
	uint32_t value, old;
	unsigned int line;
};
/* Write @n staged settings in table order, read each back, roll all back
 * on a failure (EIO), under fs->reg_store_lock.  Sorts @st. */
int fs_settings_commit(struct fs *fs, struct fs_staged *st, unsigned int n);
/* yaml.c: settings.yaml (pyrogue's SaveConfig/LoadConfig) and state.yaml. */
extern const struct fs_node fs_yaml_rows[];
extern const unsigned int fs_yaml_nrows;
int fs_show_settings_yaml(struct fs_ctx *c, struct strbuf *sb);
int fs_store_settings_yaml(struct fs_ctx *c, const char *buf, size_t len);
int fs_show_state_yaml(struct fs_ctx *c, struct strbuf *sb);
/* Apply the settings text of @path (YAML when the name ends in .yaml or
 * .yml, else ini); a negative errno with the reason in fs_last_error(). */
int fs_settings_apply_file(struct fs *fs, const char *path);
/* registers.c: rows generated from ga_regs[] (scalars and latencies). */
int fs_register_rows(struct fs *fs, struct fs_node *rows, unsigned int max);
/* sysmon.c: device/sysmon/, health/ and sim/fpga_temperature, generated from gpuasync/sysmon.def; and their metrics
 * (one SysMon pass per render). */
int fs_sysmon_rows(struct fs *fs, struct fs_node *rows, unsigned int max);
void fs_sysmon_metrics(struct fs *fs, struct strbuf *sb, const char *id);
/* device/platform/ (platform.c), from the library's check table. */
int fs_platform_rows(struct fs *fs, struct fs_node *rows, unsigned int max);
int fs_show_metrics(struct fs_ctx *c, struct strbuf *sb);
/* A metric family's "# HELP" and "# TYPE" lines (metrics.c): @help escaped
 * for HELP, then " (@unit)" where @unit is set.  Every part of the metrics
 * text writes its families with it. */
void fs_metrics_family(struct strbuf *sb, const char *name, const char *type, const char *help,
		       const char *unit);

/* ---- buffers.c ------------------------------------------------------------ */
int fs_buffer_mkdir(struct fs *fs, enum ga_dir dir, const char *name, unsigned int *idx);
int fs_buffer_rmdir(struct fs *fs, enum ga_dir dir, const char *name);
/* Parse a buffer directory name: 0 and the index, or -EINVAL. */
int fs_buffer_name(const char *name, unsigned int *idx);

/* ---- frames.c: pulse IDs and latencies from the frames ------------------ */
int fs_frames_start(struct fs *fs);
void fs_frames_stop(struct fs *fs);
/* Read the frames that landed since the last look, in ring order; how
 * many.  fs->bufs_lock held for reading. */
int fs_frames_scan(struct fs *fs);
/* Arm write buffer @idx (@buf) for the mount, its frame and those before
 * it read first.  fs->bufs_lock held for reading. */
int fs_frames_arm(struct fs *fs, unsigned int idx, struct ga_buf *buf);
/* A new run begins (the write engine switched on: @ring_reset, the card
 * starts at buffer 0; the simulated card's generator restarted): the
 * frames there now are read, the next one starts a new pulse-ID sequence.
 * Takes fs->bufs_lock for reading: the caller must not hold it. */
void fs_frames_new_run(struct fs *fs, bool ring_reset);
struct ga_timing_header;
struct ga_batch_sub;
/* A new frame the watcher saw in write buffer @b (descriptor and payload at
 * @raw's +0 and +dma_data_bytes in its buffer @buf; @th NULL: no
 * TimingHeader; @sub/@nsub: the batch walked; @seen: frames seen, this one
 * included), for a part that keeps frames (record.c).  Called under the
 * watcher's lock: it must be cheap while it keeps nothing. */
typedef void fs_frame_hook(struct fs *fs, unsigned int b, struct ga_buf *buf, const uint8_t *raw,
			   size_t payload_max, uint64_t seen, const struct ga_timing_header *th,
			   int batch_err, const struct ga_batch_sub *sub, unsigned int nsub);
/* Hand every frame seen from now on to @hook too (one per mount). */
void fs_frames_observe(struct fs *fs, fs_frame_hook *hook);
/* Held around a write buffer's add or removal, after bufs_lock (for
 * writing): the watcher's scans take this instead of bufs_lock. */
void fs_frames_exclude(struct fs *fs);
void fs_frames_unexclude(struct fs *fs);
/* The frame counters and histograms, for metrics (bufs_lock held for reading). */
void fs_frames_metrics(struct fs *fs, struct strbuf *sb, const char *id);

/* ---- record.c: frames/record ------------------------------------------------ */
/* Write what is queued and close the file (at unmount). */
void fs_record_stop(struct fs *fs);

/* ---- http.c: metrics over HTTP, the file_sd target file ---------------- */
/* Serve metrics on [prometheus] http and write the target file into
 * targets_dir; 0 when neither is set.  A negative errno, the reason in
 * fs_last_error(), when the port cannot be had or the file written. */
int fs_http_start(struct fs *fs);
/* Remove the target file, then stop serving. */
void fs_http_stop(struct fs *fs);

/* ---- errors.c ------------------------------------------------------------- */
int fs_errors_init(struct fs *fs);
void fs_errors_fini(struct fs *fs);
/* Append "<time> <path>: <ERRNO>: <why>" to errors ("<time> <path>: <why>", a note, for err 0). */
void fs_error_add(struct fs *fs, const char *path, int err, const char *why);
int fs_show_errors(struct fs_ctx *c, struct strbuf *sb);
/* Record why a daemon-side check failed and return @err (like ga_err). */
int fs_err(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The explanation of the last failure in this thread: the daemon's own
 * (fs_err) if newer, else the library's (ga_last_error). */
const char *fs_last_error(void);
void fs_err_clear(void);
const char *fs_errno_name(int err);

/* ---- poll.c --------------------------------------------------------------- */
void fs_op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		struct fuse_pollhandle *ph);
int fs_sampler_start(struct fs *fs);
void fs_sampler_stop(struct fs *fs);
void fs_poll_forget(struct fs *fs, struct fs_open *fo);

/* The largest write the kernel hands over in one piece (fs_op_init); it
 * splits bigger ones, and unaligned ones at a page boundary up to a page
 * earlier. */
#define FS_MAX_WRITE (1024u * 1024u)
/* So a write of at most this many bytes always arrives whole. */
#define FS_WHOLE_WRITE (FS_MAX_WRITE - 4096u)

/* ---- values.c: parse written values, render current ones ------------------ */
/* Render a text file's current value into @sb (reset first). */
int fs_render(struct fs *fs, const struct fs_open *fo, struct strbuf *sb);
/* Count @fo's snapshot (fo->lock held, or the file unreachable) in
 * fs->snap_bytes; false when the daemon holds more than FS_SNAP_BUDGET. */
bool fs_snap_account(struct fs *fs, struct fs_open *fo);
/* A stat's render handed to the same process's open (values.c): the
 * thread's requesting pid for the stats it makes (0: none), the open's
 * adoption of it, and dropping it at any change the mount makes. */
extern _Thread_local pid_t fs_stat_caller;
void fs_stat_handoff_adopt(struct fs *fs, struct fs_open *fo, pid_t pid);
void fs_stat_handoff_drop(struct fs *fs);
/* The same for node @n of buffer @idx without an open file. */
int fs_render_node(struct fs *fs, const struct fs_node *n, unsigned int idx, struct strbuf *sb);
/* Enter/leave a handler on node @n of buffer @idx: per-buffer nodes hold
 * fs->bufs_lock for reading and check the buffer is still the one @fo (if
 * any) was opened on (-ENODEV otherwise). */
int fs_ctx_enter(struct fs *fs, struct fs_ctx *c, const struct fs_node *n, unsigned int idx,
		 const struct fs_open *fo);
void fs_ctx_leave(struct fs *fs, struct fs_ctx *c);
/* stat of row @row for buffer @idx; a size handler runs in the node's context. */
void fs_node_stat(struct fs *fs, unsigned int row, unsigned int idx, struct stat *st);
/* The same through open file @fo (NULL: none): an FS_SIZED file's size is
 * then its snapshot's, rendered now and served to the reads that follow,
 * so tail -n reads the very text whose end it sought. */
void fs_node_stat_open(struct fs *fs, unsigned int row, unsigned int idx, struct fs_open *fo,
		       struct stat *st);
/* An errors line when the card was found without our buffers (once). */
void fs_note_lost(struct fs *fs);
/* Check the card's link; an errors line when it went down or came back. */
void fs_note_link(struct fs *fs);
/* -ENOLINK with the reason while the card's link is down (a store's
 * check: c->check_only), else 0. */
int fs_write_link_check(struct fs *fs);
/* Parse one unsigned value written to a file (text, "0x", suffixes when
 * @size): -EINVAL/-ERANGE with the reason recorded. */
int fs_parse_u64(const char *buf, size_t len, uint64_t max, bool size, uint64_t *out);
int fs_parse_bool(const char *buf, size_t len, bool *out);
/* gpuasyncfs --check ... (check.c): argv[0] is "--check"; the exit status. */
int fs_check_main(int argc, char **argv);

#endif /* GPUASYNCFS_FS_H */
