/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The tree (docs/guide.md) on a real mount: device/, registers/ generated from
 * the register table (one file per scalar field of the running version,
 * modes by access, absent fields absent), registers/raw,
 * device/registers_path mapped from this process, device/pinned following
 * mkdir/rmdir, config, README listing
 * exactly what readdir finds, for V1 and V4 firmware; ipc_handle exactly
 * when device/memory says gpu.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gpuasync/gpuasync.h>

#include "harness.h"

START_TEST(device_files)
{
	mnt_start("-o version=4");
	assert_file_eq("device/backend", "sim\n");
	expect_nums("device/",
		    "version=4 max_buffers=1024 dma_data_bytes=32 clock_hz=250000000 supported=1");
	ck_assert_int_eq(sh("test \"$(cat $M/device/layout)\" = v4"), 0);
	/* Identity is read-only, even for root. */
	expect_refused("device/version", "5\n", EACCES);
}
END_TEST

/* Line @n (0 = header) of device/pinned as its nine fields; false when
 * there is no such line or it does not parse. */
struct pin_line {
	char dir[16], state[16], path[16];
	unsigned int index, pages;
	unsigned long long gpu, bus, size;
	int owner;
};

static bool pinned_line(const char *text, unsigned int n, struct pin_line *l)
{
	const char *p = text;

	for (unsigned int i = 0; i < n && p; i++) {
		p = strchr(p, '\n');
		p = p && p[1] ? p + 1 : NULL;
	}
	return p &&
	       sscanf(p, "%15s %u 0x%llx 0x%llx %llu %u %d %15s %15s", l->dir, &l->index, &l->gpu,
		      &l->bus, &l->size, &l->pages, &l->owner, l->state, l->path) == 9;
}

static unsigned int lines(const char *s)
{
	unsigned int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* device/pinned: the table of pinned buffers, following mkdir and rmdir,
 * one line per buffer whose fields match the buffer's own files. */
START_TEST(device_pinned)
{
	struct pin_line l;
	char *s, *gpu;

	/* p2p: gpu_address is the buffer's own (a dma-buf's is its offset,
	 * test_fs_pin.c). */
	mnt_start("-o version=4,pin=p2p");
	s = readf("device/pinned");
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "dir index gpu_address bus_address size pages owner state path\n");
	free(s);
	ck_assert_int_eq(sh("echo 128K > $M/buffers/alloc_size && mkdir $M/buffers/0 $M/buffers/1 "
			    "&& mkdir $M/read_buffers/0"),
			 0);
	s = readf("device/pinned");
	ck_assert_ptr_nonnull(s);
	ck_assert_msg(lines(s) == 4, "device/pinned:\n%s", s);
	ck_assert(pinned_line(s, 1, &l));
	ck_assert_str_eq(l.dir, "write");
	ck_assert_uint_eq(l.index, 0);
	ck_assert(pinned_line(s, 2, &l));
	ck_assert_str_eq(l.dir, "write");
	ck_assert_uint_eq(l.index, 1);
	gpu = readf("buffers/1/gpu_address");
	ck_assert_ptr_nonnull(gpu);
	ck_assert_uint_eq(l.gpu, strtoull(gpu, NULL, 16));
	free(gpu);
	ck_assert_uint_eq(l.size, 131072);
	ck_assert_uint_eq(l.pages, 2);
	ck_assert_int_eq(l.owner, (int)M.pid);
	ck_assert_str_eq(l.state, "pinned");
	ck_assert_str_eq(l.path, "p2p");
	ck_assert_uint_eq(l.bus >> 48, 0xdead); /* the sim's bus addresses */
	ck_assert(pinned_line(s, 3, &l));
	ck_assert_str_eq(l.dir, "read");
	ck_assert_uint_eq(l.index, 0);
	ck_assert_uint_eq(l.pages, 1);
	free(s);

	ck_assert_int_eq(sh("rmdir $M/buffers/1"), 0);
	s = readf("device/pinned");
	ck_assert_ptr_nonnull(s);
	ck_assert_msg(lines(s) == 3, "device/pinned:\n%s", s);
	ck_assert(pinned_line(s, 2, &l));
	ck_assert_str_eq(l.dir, "read");
	free(s);
	ck_assert_int_eq(sh("rmdir $M/buffers/0 $M/read_buffers/0"), 0);
	ck_assert_uint_eq(readnum("device/version"), 4);
	s = readf("device/pinned");
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(lines(s), 1);
	free(s);
	expect_refused("device/pinned", "x\n", EACCES);
}
END_TEST

/* device/registers_path names the block another process maps: this
 * daemon's shared-memory file at offset 0, live (a word stored through the
 * mapping is what registers/ shows); with core_offset (issue 12: an image
 * may place the core elsewhere in BAR0; 0xD00000 is a test value) the file
 * is the BAR up to the core and the offset says where it is. */
static const struct {
	const char *opts;
	unsigned int version;
	unsigned long long off;
} PLACES[] = {
	{"-o version=4", 4, 0},
	{"-o version=1 -o core_offset=0xd00000", 1, 0xd00000},
	{"-o version=4 -o core_offset=0x10000", 4, 0x10000},
};

START_TEST(registers_path_maps)
{
	char path[256], want[64], *s;
	unsigned long long off = 1;
	volatile uint32_t *regs;
	uint32_t w;
	int fd;

	mnt_start(PLACES[_i].opts);
	s = readf("device/registers_path");
	ck_assert_ptr_nonnull(s);
	ck_assert_msg(sscanf(s, "%255s 0x%llx", path, &off) == 2, "registers_path '%s'", s);
	ck_assert_msg(strchr(s, ' ') == strrchr(s, ' ') && s[strlen(s) - 1] == '\n',
		      "registers_path is one line 'FILE 0xOFFSET': '%s'", s);
	free(s);
	snprintf(want, sizeof(want), "/dev/shm/gpuasync-sim-%d-", (int)M.pid);
	ck_assert_msg(!strncmp(path, want, strlen(want)), "%s is not %s*", path, want);
	ck_assert_uint_eq(off, PLACES[_i].off);
	fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	regs = mmap(NULL, GA_CORE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
	close(fd);
	ck_assert(regs != MAP_FAILED);
	ck_assert_uint_eq(regs[0x30 / 4] & 0xff, PLACES[_i].version); /* every layout */
	w = regs[0x04 / 4];
	regs[0x04 / 4] = (w & ~0xfu) | 0x6; /* ar_cache */
	ck_assert_uint_eq(readnum("registers/ar_cache"), 6);
	ck_assert_int_eq(sh("echo 0x9 > $M/registers/ar_cache"), 0);
	ck_assert_uint_eq(regs[0x04 / 4] & 0xf, 9);
	munmap((void *)regs, GA_CORE_SIZE);
	expect_refused("device/registers_path", "/tmp/x 0x0\n", EACCES);
}
END_TEST

/* A core offset that is not page aligned, or past the 16 MiB BAR the
 * register window reaches, stops the mount with a reason. */
START_TEST(core_offset_refused)
{
	char dir[] = "/tmp/gafs-core.XXXXXX", *out;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	out = sh_out("$GAFS --sim %s -o core_offset=0x28800 2>&1; echo rc=$?", dir);
	ck_assert_msg(strstr(out, "core_offset") && strstr(out, "not a multiple of 4096") &&
			      !strstr(out, "rc=0"),
		      "%s", out);
	free(out);
	out = sh_out("$GAFS --sim %s -o core_offset=0xff9000 2>&1; echo rc=$?", dir);
	ck_assert_msg(strstr(out, "core_offset") && !strstr(out, "rc=0"), "%s", out);
	free(out);
	ck_assert(!is_mounted(dir));
	rmdir(dir);
}
END_TEST

/*
 * Modes from what the fields are (docs/firmware.md §2.3-2.4 and the rule in
 * docs/registers.md: driver-programmed fields are read-only files), not
 * from the table's columns:
 * status and counters read-only, settings read-write, CntRst a write-only
 * strobe, counts and the shared max size programmed by the driver.
 */
static const struct {
	const char *name;
	unsigned int mode;
} mode_facts[] = {
	{"version", 0444},	  {"max_buffers", 0444},       {"dma_data_bytes", 0444},
	{"rx_frame_count", 0444}, {"tx_frame_count", 0444},    {"axi_write_error_count", 0444},
	{"ar_cache", 0644},	  {"aw_cache", 0644},	       {"write_enable", 0644},
	{"read_enable", 0644},	  {"demux_select", 0644},      {"count_reset", 0200},
	{"write_count", 0444},	  {"read_count", 0444},	       {"write_max_size", 0444},
	{"write_active", 0444},	  {"min_write_buffers", 0444},
};

/*
 * The scalar registers each version has, typed from docs/firmware.md
 * (§2.2 versions, §2.3 V1 map, §2.4 V4 map with its two stream monitors),
 * not taken from the table the daemon builds registers/ from.
 */
#define FILES_EVERY                                                                                \
	" max_buffers ar_cache aw_cache dma_data_bytes write_count write_buffers write_enable"     \
	" read_count read_buffers read_enable rx_frame_count tx_frame_count"                       \
	" axi_write_error_count axi_read_error_count count_reset axi_write_error_value"            \
	" axi_read_error_value version "
#define FILES_MON(d)                                                                               \
	" " d "_monitor_reset " d "_frames " d "_frame_rate " d "_frame_rate_max " d               \
	"_frame_rate_min " d "_bandwidth " d "_bandwidth_max " d "_bandwidth_min " d               \
	"_frame_size " d "_frame_size_max " d "_frame_size_min "
#define FILES_V4                                                                                   \
	FILES_EVERY "axi_write_timeout_count demux_select min_write_buffers max_read_queue "       \
		    "write_max_size" FILES_MON("inbound") FILES_MON("outbound")

static const char *const version_files[] = {
	[1] = FILES_EVERY "route_mask0 route_dest0 route_mask1 route_dest1 ",
	[4] = FILES_V4,
	[5] = FILES_V4 "write_active read_active ",
};

static bool in_list(const char *list, const char *name)
{
	char word[64];

	snprintf(word, sizeof(word), " %s ", name);
	return strstr(list, word) != NULL;
}

/* registers/ holds exactly the version's files (and raw), those of
 * mode_facts with that mode, every readable one reads as one line. */
static void check_registers(unsigned int version)
{
	const char *facts = version_files[version];
	char opt[32], *ls, *want;

	snprintf(opt, sizeof(opt), "-o version=%u", version);
	mnt_start(opt);
	for (int id = 0; id < GA_REG_COUNT; id++) {
		const struct ga_reg *r = &ga_regs[id];
		char rel[96];
		struct stat st;
		bool present = in_list(facts, r->name);
		unsigned int mode;

		if (r->array != GA_ARRAY_NONE)
			continue;
		snprintf(rel, sizeof(rel), "registers/%s", r->name);
		if (!present) {
			ck_assert_msg(stat(P(rel), &st) < 0 && errno == ENOENT,
				      "%s is absent from version %u but exists", rel, version);
			continue;
		}
		ck_assert_msg(stat(P(rel), &st) == 0, "%s missing on version %u", rel, version);
		mode = st.st_mode & 07777;
		for (size_t k = 0; k < sizeof(mode_facts) / sizeof(mode_facts[0]); k++)
			if (strcmp(mode_facts[k].name, r->name) == 0)
				ck_assert_msg(mode == mode_facts[k].mode, "%s: mode %o, want %o",
					      rel, mode, mode_facts[k].mode);
		ck_assert_msg(mode == 0444 || mode == 0644 || mode == 0200, "%s: mode %o", rel,
			      mode);
		if (mode & 0444) {
			char *v = readf(rel);

			ck_assert_msg(v && strlen(v) > 1 && v[strlen(v) - 1] == '\n', "%s: '%s'",
				      rel, v ? v : strerror(errno));
			free(v);
		}
	}
	/* Every fact is a row of the table, and nothing else is a file. */
	ls = sh_out("ls $M/registers | LC_ALL=C sort");
	want = sh_out("printf '%%s\\n' %s raw | LC_ALL=C sort", facts);
	ck_assert_str_eq(ls, want);
	free(ls);
	free(want);
	ck_assert_uint_eq(readnum("registers/version"), version);
	ck_assert_int_eq(mnt_stop(), 0);
}

START_TEST(registers_by_version_v1)
{
	check_registers(1);
}
END_TEST

START_TEST(registers_by_version_v4)
{
	check_registers(4);
}
END_TEST

START_TEST(registers_by_version_v5)
{
	check_registers(5);
}
END_TEST

START_TEST(register_read_write)
{
	unsigned int lines;

	mnt_start(NULL);
	/* ar_cache and aw_cache share the word at 0x04: RMW keeps the other. */
	ck_assert_int_eq(sh("echo 0x5 > $M/registers/ar_cache"), 0);
	ck_assert_int_eq(sh("printf 9 > $M/registers/aw_cache"), 0);
	ck_assert_int_eq(sh("test \"$(cat $M/registers/ar_cache)\" = 0x5"), 0);
	ck_assert_int_eq(sh("test \"$(cat $M/registers/aw_cache)\" = 0x9"), 0);
	/* count_reset is a 0200 strobe: writable, not readable, clears counters. */
	ck_assert_int_eq(sh("echo 1 > $M/registers/write_enable"), 0);
	ck_assert_int_eq(sh("mkdir $M/buffers/0 && echo 1 > $M/buffers/0/write_enable"), 0);
	ck_assert_int_eq(sh("printf abc > $M/sim/push"), 0);
	ck_assert_uint_ge(readnum("registers/rx_frame_count"), 1);
	lines = err_lines();
	ck_assert_ptr_null(readf("registers/count_reset"));
	ck_assert_int_eq(errno, EACCES);
	ck_assert_uint_eq(err_lines(), lines); /* its mode says so: no errors line */
	ck_assert_int_eq(sh("echo 1 > $M/registers/count_reset"), 0);
	ck_assert_uint_eq(readnum("registers/rx_frame_count"), 0);
	/* O_TRUNC is not a command: ': >' changes nothing and succeeds. */
	ck_assert_int_eq(sh(": > $M/registers/ar_cache"), 0);
	ck_assert_int_eq(sh("test \"$(cat $M/registers/ar_cache)\" = 0x5"), 0);
	ck_assert_int_eq(sh("rmdir $M/buffers/0 2>/dev/null || { echo 0 > "
			    "$M/registers/write_enable; rmdir $M/buffers/0; }"),
			 0);
}
END_TEST

START_TEST(register_raw_window)
{
	int fd;
	uint32_t w, ar;
	struct stat st;

	mnt_start("-o version=4");
	ck_assert_int_eq(stat(P("registers/raw"), &st), 0);
	ck_assert_uint_eq(st.st_size, GA_CORE_SIZE);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	fd = open(P("registers/raw"), O_RDWR);
	ck_assert_int_ge(fd, 0);
	/* version at 0x30, bits 7:0 */
	ck_assert_int_eq(pread(fd, &w, 4, 0x30), 4);
	ck_assert_uint_eq(w & 0xff, 4);
	/* misaligned offset or length: EINVAL */
	ck_assert_int_eq(pread(fd, &w, 4, 0x31), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(pread(fd, &w, 3, 0x30), -1);
	ck_assert_int_eq(errno, EINVAL);
	/* past the end: EOF on read, ERANGE on write */
	ck_assert_int_eq(pread(fd, &w, 4, GA_CORE_SIZE), 0);
	ck_assert_int_eq(pwrite(fd, &w, 4, GA_CORE_SIZE), -1);
	ck_assert_int_eq(errno, ERANGE);
	/* a raw write shows through the register file */
	ck_assert_int_eq(pread(fd, &w, 4, 0x04), 4);
	w = (w & ~0xfu) | 0x3;
	ck_assert_int_eq(pwrite(fd, &w, 4, 0x04), 4);
	ck_assert_uint_eq(readnum("registers/ar_cache"), 3);
	ar = 0;
	ck_assert_int_eq(pread(fd, &ar, 4, 0x04), 4);
	ck_assert_uint_eq(ar & 0xf, 3);
	close(fd);
	/* dd reads the whole block */
	ck_assert_int_eq(sh("test $(dd if=$M/registers/raw bs=4096 2>/dev/null | wc -c) -eq %u",
			    GA_CORE_SIZE),
			 0);
}
END_TEST

START_TEST(config_file_and_options)
{
	char conf[] = "/tmp/gafs-conf-XXXXXX";
	int fd = mkstemp(conf);
	char *cfg;

	ck_assert_int_ge(fd, 0);
	dprintf(fd, "[sim]\nversion = 1\n[monitor]\ninterval_ms = 20\nerrors_kept = 3\n");
	close(fd);
	/* -o options win over the file; the config file shows the result. */
	mnt_start(NULL);
	mnt_stop();
	{
		char opt[128];

		snprintf(opt, sizeof(opt), "-o config=%s,max_buffers=8", conf);
		mnt_start(opt);
	}
	ck_assert_uint_eq(readnum("device/version"), 1);
	ck_assert_uint_eq(readnum("device/max_buffers"), 8);
	cfg = readf("config");
	ck_assert_ptr_nonnull(strstr(cfg, "interval_ms = 20"));
	ck_assert_ptr_nonnull(strstr(cfg, "version = 1"));
	free(cfg);
	/* errors_kept = 3: the ring keeps up to six, then drops to the last
	 * three at once (so that the file only grows between drops: tail -f) */
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(writef("registers/ar_cache", "junk"), -EINVAL);
	ck_assert_uint_eq(err_lines(), 6);
	ck_assert_int_eq(writef("registers/ar_cache", "junk"), -EINVAL);
	ck_assert_uint_eq(err_lines(), 3);
	ck_assert_int_eq(mnt_stop(), 0);

	/* A bad file or option stops the daemon before it mounts. */
	fd = open(conf, O_WRONLY | O_TRUNC);
	dprintf(fd, "[sim]\nversion = 9\n");
	close(fd);
	setenv("GAFS", GAFS_BIN, 1);
	ck_assert_int_eq(sh("d=$(mktemp -d); \"$GAFS\" -o config=%s --sim $d 2>$d.err; rc=$?; "
			    "grep -q version $d.err; g=$?; rm -f $d.err; "
			    "mountpoint -q $d && %s $d; rmdir $d; [ $rc -ne 0 ] && [ $g -eq 0 ]",
			    conf, umount_cmd(false)),
			 0);
	ck_assert_int_eq(
		sh("d=$(mktemp -d); \"$GAFS\" -o nosuchkey=1,version=77 --sim $d 2>/dev/null; "
		   "rc=$?; mountpoint -q $d && %s $d; rmdir $d; [ $rc -ne 0 ]",
		   umount_cmd(false)),
		0);
	unlink(conf);
}
END_TEST

/* README, readdir and the table name the same files. */
static void check_readme_matches(const char *opts)
{
	char *readme, *found;

	mnt_start(opts);
	ck_assert_int_eq(sh("mkdir $M/buffers/0 $M/read_buffers/0"), 0);
	/* paths from README (without the header lines), paths from find with
	 * buffer 0 written as <i>; both sorted; they must be equal. */
	readme = sh_out("grep -v '^#' $M/README | awk '{print $1}' | sed 's:/$::' | sort");
	found = sh_out(
		"cd $M && find . -mindepth 1 | sed -e 's:^\\./::' "
		"-e 's:^buffers/0:buffers/<i>:' -e 's:^read_buffers/0:read_buffers/<i>:' | sort");
	ck_assert_str_eq(readme, found);
	/* and every register file README lists comes from the table */
	ck_assert_int_eq(sh("for f in $(grep '^registers/' $M/README | awk '{print $1}'); do "
			    "test -e $M/$f || exit 1; done"),
			 0);
	free(readme);
	free(found);
	ck_assert_int_eq(sh("rmdir $M/buffers/0 $M/read_buffers/0"), 0);
	ck_assert_int_eq(mnt_stop(), 0);
}

START_TEST(readme_matches_tree_v4)
{
	check_readme_matches("-o version=4");
}
END_TEST

START_TEST(readme_matches_tree_v1)
{
	check_readme_matches("-o version=1");
}
END_TEST

START_TEST(readme_matches_tree_v4_legacy)
{
	check_readme_matches("-o version=5,latency_block=legacy");
}
END_TEST

START_TEST(absent_not_failing)
{
	struct stat st;

	/* V1 has no read latency (no read_buffers/<i>/latency) and route
	 * registers that V4 lacks; V4 measures latency on buffer 0 only. */
	mnt_start("-o version=1");
	ck_assert_int_eq(sh("mkdir $M/read_buffers/0 $M/buffers/0 $M/buffers/1"), 0);
	ck_assert_int_eq(stat(P("read_buffers/0/latency"), &st), -1);
	ck_assert_int_eq(stat(P("buffers/1/latency/total"), &st), 0);
	ck_assert_int_eq(stat(P("registers/route_mask0"), &st), 0);
	ck_assert_int_eq(stat(P("registers/write_active"), &st), -1);
	mnt_stop();
	mnt_start("-o version=4");
	ck_assert_int_eq(sh("mkdir $M/buffers/0 $M/buffers/1"), 0);
	ck_assert_int_eq(stat(P("buffers/0/latency/total_max"), &st), 0);
	ck_assert_int_eq(stat(P("buffers/1/latency"), &st), -1);
	ck_assert_int_eq(sh("ls $M/buffers/1 | grep -q latency"), 1);
	ck_assert_int_eq(stat(P("registers/route_mask0"), &st), -1);
	/* ipc_handle exactly when buffers are CUDA memory (device/memory) */
	{
		char *mem = readf("device/memory");
		bool gpu;

		ck_assert_ptr_nonnull(mem);
		ck_assert_msg(!strcmp(mem, "gpu\n") || !strcmp(mem, "host\n"), "memory '%s'", mem);
		gpu = !strcmp(mem, "gpu\n");
		free(mem);
		ck_assert_int_eq(sh("mkdir $M/read_buffers/0"), 0);
		ck_assert_int_eq(stat(P("buffers/0/ipc_handle"), &st), gpu ? 0 : -1);
		ck_assert_int_eq(stat(P("read_buffers/0/ipc_handle"), &st), gpu ? 0 : -1);
		ck_assert_int_eq(sh("ls $M/buffers/1 | grep -qx ipc_handle"), gpu ? 0 : 1);
	}
}
END_TEST

/* docs/guide.md's tree listing (fs/gen-readme-tree.sh) and a mount agree;
 * ipc_handle is the one file a host-memory mount lacks. */
START_TEST(repo_readme_tree)
{
	char *diff;

	mnt_start("-o version=4");
	diff = sh_out(
		"sed -n '/fs-tree:begin/,/fs-tree:end/p' " GAFS_SRC "/docs/guide.md | "
		"grep -v '^<!--\\|^```' | awk '{print $1}' | grep -v ipc_handle | sort > $M.a; "
		"grep -v '^#' $M/README | awk '{print $1}' | grep -v ipc_handle | sort > $M.b; "
		"diff $M.a $M.b; rm -f $M.a $M.b");
	ck_assert_msg(diff[0] == '\0',
		      "docs/guide.md tree differs from the mount (run fs/gen-readme-tree.sh):\n%s",
		      diff);
	free(diff);
}
END_TEST

/* pyrogue: a user who knows pyrogue's name finds the file with grep, and
 * every file the index names exists and reads (with a buffer of each kind,
 * so the per-buffer files are there). */
START_TEST(pyrogue_index)
{
	char *n;

	mnt_start("-o version=4");
	ck_assert_int_eq(sh("mkdir $M/buffers/0 $M/read_buffers/0"), 0);
	ck_assert_int_eq(sh("test \"$(awk '$1 == \"AxiGpuAsyncCore.RxFrameCnt\" {print $2}' "
			    "$M/pyrogue)\" = registers/rx_frame_count"),
			 0);
	ck_assert_int_eq(sh("test \"$(awk '$1 == \"AxiVersion.GitHash\" {print $2}' $M/pyrogue)\" "
			    "= device/firmware/git_hash"),
			 0);
	ck_assert_int_eq(sh("test \"$(awk '$1 == \"AxiGpuAsyncCore.TotLatencyMax\" {print $2}' "
			    "$M/pyrogue)\" = buffers/0/latency/total_max"),
			 0);
	/* every named file exists; the readable ones read (count_reset and the
	 * monitor resets are write-only strobes) */
	ck_assert_int_eq(sh("grep -v '^#' $M/pyrogue | while read -r py f; do "
			    "test -f \"$M/$f\" || { echo \"$py: $f missing\"; exit 1; }; "
			    "test \"$(stat -c %%a \"$M/$f\")\" = 200 || cat \"$M/$f\" >/dev/null "
			    "|| exit 1; done"),
			 0);
	n = sh_out("grep -vc '^#' $M/pyrogue");
	ck_assert_int_ge(atoi(n), 60);
	free(n);
	ck_assert_int_eq(sh("rmdir $M/buffers/0 $M/read_buffers/0"), 0);
}
END_TEST

SUITE_MAIN("fs_tree", "tree", TEST_TIMEOUT, {device_files}, {device_pinned},
	   {registers_path_maps, sizeof(PLACES) / sizeof(PLACES[0])}, {core_offset_refused},
	   {registers_by_version_v1}, {registers_by_version_v4}, {registers_by_version_v5},
	   {register_read_write}, {register_raw_window}, {config_file_and_options},
	   {readme_matches_tree_v4}, {readme_matches_tree_v1}, {readme_matches_tree_v4_legacy},
	   {absent_not_failing}, {repo_readme_tree}, {pyrogue_index})
