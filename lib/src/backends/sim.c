// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The simulated GpuAsyncCore card: ga_backend_sim (controls of gpuasync/sim.h in sim_api.c).
 *
 *   struct ga_dev *dev;
 *   ga_dev_open("sim:version=4,max_buffers=8,dma_data_bytes=32", &dev);
 *   ga_buf_create(dev, GA_DIR_WRITE, 0, 65536, &buf);   // add_buffer
 *   ga_buf_arm(buf); ga_dev_enable(dev, GA_DIR_WRITE, true);
 *   ga_sim_gen_set(dev, &(struct ga_sim_gen){.running = true, .size = 4096, ...});
 *
 * The sim plays two parts.  As the *driver* (add_buffer, remove_all, arm,
 * enable) it does what the upstream pre-release datadev driver does:
 * indices in call order, sizes in 64 KiB multiples, address/size registers
 * programmed, counts written to 0x08 with the engines left off.  As the
 * *card* it runs the firmware model (core/ga_model.c) in a thread
 * that polls the register block, runs the frame generator and services
 * the read engine.
 *
 * The register block is a POSIX shared-memory file (/dev/shm/NAME,
 * GA_CORE_SIZE bytes, unlinked on close), so another process can map it
 * and arm buffers or queue reads by plain stores, as a CUDA consumer does
 * on hardware.  The model notices those stores at its next poll.
 *
 * Registering from a dma-buf (the dmabuf pin path) checks what gpuasync.ko
 * would before it attaches: the fd is a dma-buf (its fdinfo names an
 * exporter), the range lies inside it (lseek to the end gives its size), 64
 * KiB rules.  The sim has no kernel to hand the fd to, so it keeps no
 * reference (the caller closes the fd) and goes on copying through the
 * memory layer; its table lists the buffer as dmabuf with the offset as
 * gpu_address, as the driver's does.
 *
 * Bus addresses: each registered buffer gets a fake bus address that
 * encodes direction, index and a generation number, so a DMA resolves to
 * its buffer in O(1) and a stale address (a buffer removed and re-added)
 * resolves to nothing, which the model reports as an AXI error.  DMA goes
 * through the memory layer (dev->mem): host memory, or CUDA memory.
 *
 * This file is the backend (spec parsing, open/close, register access,
 * the driver half), the top of the sim's files: it calls the card half
 * (sim_thread.c), the trapped mapping (sim_trap.c), the replay at close
 * (sim_replay.c) and the core they all stand on (sim_core.[ch]: struct
 * sim, the model lock, wake-ups), and none of them calls back into it.
 * The ga_sim_* controls are sim_api.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuasync/parse.h"
#include "sim_core.h"

static struct sim *dev_sim(struct ga_dev *dev)
{
	return dev->priv;
}

/* ---- helpers (s->lock held) ----------------------------------------------- */

static int sim_off(struct sim *s, enum ga_reg_id id, unsigned int index, uint32_t *off)
{
	return ga_reg_offset(id, s->layout, s->version, index, s->max_buffers, off);
}

static int sim_word_read(void *ctx, uint32_t off, uint32_t *word)
{
	*word = ((struct sim *)ctx)->regs[off / 4];
	return 0;
}

static int sim_word_write(void *ctx, uint32_t off, uint32_t word)
{
	ga_model_reg_write(&((struct sim *)ctx)->model, off, word);
	return 0;
}

/* One field through the model, with core's accessor, as a driver would. */
static void field_write(struct sim *s, enum ga_reg_id id, unsigned int index, uint32_t val)
{
	const struct ga_reg_io io = {s, sim_word_read, sim_word_write};
	uint32_t off;

	if (sim_off(s, id, index, &off))
		return;
	ga_field_write(&io, id, s->layout, off, val);
}

/* ---- spec parsing --------------------------------------------------------- */

struct sim_cfg {
	unsigned int version, max_buffers, ddb;
	uint64_t clock_hz;
	bool legacy;
	bool link_down;
	bool trap;
	uint32_t core_offset; /* 0: the shm file is the core block alone */
	int memory_map;	      /* AxiVersion's memory-map version; -1: the image's */
	char shm[128];
	struct ga_sim_gen gen;
};

static bool shm_name_ok(const char *v, size_t len)
{
	size_t i;

	if (len == 0 || len >= 100)
		return false;
	for (i = 0; i < len; i++) {
		char c = v[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			return false;
	}
	return v[0] != '.';
}

static int parse_kv(struct sim_cfg *c, const char *k, size_t klen, const char *v, size_t vlen)
{
	uint64_t x;
	int rc;

#define KEY(name) (klen == sizeof(name) - 1 && strncmp(k, name, klen) == 0)
	if (KEY("version")) {
		rc = ga_parse_u64(v, vlen, GA_VERSION_MAX, &x);
		if (rc || x < 1)
			return ga_err(rc ? rc : -ERANGE, "sim: version must be 1..%u",
				      GA_VERSION_MAX);
		c->version = (unsigned int)x;
	} else if (KEY("max_buffers")) {
		rc = ga_parse_u64(v, vlen, GA_MAX_BUFFERS, &x);
		if (rc || x < 1)
			return ga_err(rc ? rc : -ERANGE, "sim: max_buffers must be 1..%u",
				      GA_MAX_BUFFERS);
		c->max_buffers = (unsigned int)x;
	} else if (KEY("dma_data_bytes")) {
		rc = ga_parse_u64(v, vlen, 128, &x);
		if (rc || x < 8 || (x & (x - 1)))
			return ga_err(rc ? rc : -EINVAL,
				      "sim: dma_data_bytes must be a power of two from 8 to 128 "
				      "(the AXI width; the 8-byte header must fit)");
		c->ddb = (unsigned int)x;
	} else if (KEY("clock_hz")) {
		/* AxiVersion's DMA_CLK_FREQ_C word holds it (dma_clock_hz). */
		rc = ga_parse_u64(v, vlen, UINT32_MAX, &x);
		if (rc || x < 1)
			return ga_err(rc ? rc : -ERANGE,
				      "sim: clock_hz must be 1..4294967295 (the firmware's 32-bit "
				      "dma_clock_hz word)");
		c->clock_hz = x;
	} else if (KEY("latency")) {
		if (vlen == 6 && strncmp(v, "legacy", 6) == 0)
			c->legacy = true;
		else if (vlen == 7 && strncmp(v, "current", 7) == 0)
			c->legacy = false;
		else
			return ga_err(-EINVAL, "sim: latency must be legacy or current");
	} else if (KEY("link")) {
		if (vlen == 2 && !strncmp(v, "up", 2))
			c->link_down = false;
		else if (vlen == 4 && !strncmp(v, "down", 4))
			c->link_down = true;
		else
			return ga_err(-EINVAL, "sim: link must be up or down");
	} else if (KEY("trap")) {
		if (vlen == 3 && !strncmp(v, "yes", 3))
			c->trap = true;
		else if (vlen == 2 && !strncmp(v, "no", 2))
			c->trap = false;
		else
			return ga_err(-EINVAL, "sim: trap must be yes or no");
		if (c->trap && !sim_trap_supported())
			return ga_err(-ENOTSUP, "sim: trap=yes needs x86-64 Linux (the single-step "
						"flag)");
	} else if (KEY("core_offset")) {
		rc = ga_parse_u64(v, vlen, GA_CORE_OFFSET_MAX, &x);
		if (rc || (x & (GA_CORE_ALIGN - 1)))
			return ga_err(rc ? rc : -EINVAL,
				      "sim: core_offset must be a multiple of 0x%x up to 0x%x (the "
				      "card's BAR is 16 MiB)",
				      GA_CORE_ALIGN, GA_CORE_OFFSET_MAX);
		c->core_offset = (uint32_t)x;
	} else if (KEY("memory_map")) {
		/* 0: no SysMon block; above the newest known: refused by readers */
		rc = ga_parse_u64(v, vlen, 255, &x);
		if (rc)
			return ga_err(rc,
				      "sim: memory_map must be 0..255 (AxiVersion's 8-bit "
				      "memory-map version; %d has SysMon at 0x%x)",
				      (int)GA_SYSMON_SINCE_MAP, (unsigned int)GA_SYSMON_BASE);
		c->memory_map = (int)x;
	} else if (KEY("shm")) {
		if (!shm_name_ok(v, vlen))
			return ga_err(-EINVAL, "sim: shm name must be 1-99 characters of "
					       "[A-Za-z0-9._-], not starting with '.'");
		memcpy(c->shm, v, vlen);
		c->shm[vlen] = '\0';
	} else if (KEY("rate")) {
		rc = ga_parse_u64(v, vlen, NSEC_PER_SEC_U64, &x);
		if (rc)
			return ga_err(rc, "sim: rate must be 0..1000000000 frames per second");
		c->gen.rate_hz = x;
	} else if (KEY("size")) {
		rc = ga_parse_size(v, vlen, SIM_MAX_FRAME, &x);
		if (rc || x < 1)
			return ga_err(rc ? rc : -ERANGE, "sim: size must be 1 byte to 1G");
		c->gen.size = (uint32_t)x;
	} else if (KEY("pattern")) {
		char tmp[16];

		if (vlen >= sizeof(tmp))
			return ga_err(-EINVAL, "sim: pattern must be prbs, counter or zero");
		memcpy(tmp, v, vlen);
		tmp[vlen] = '\0';
		return ga_pattern_parse(tmp, &c->gen.pattern);
	} else {
		return ga_err(
			-EINVAL,
			"sim: unknown option '%.*s' (known: version, max_buffers, "
			"dma_data_bytes, clock_hz, latency, link, trap, core_offset, memory_map, "
			"shm, rate, size, pattern)",
			(int)klen, k);
	}
#undef KEY
	return 0;
}

static int parse_spec(const char *spec, struct sim_cfg *c)
{
	const char *p;
	bool max_given = false;
	unsigned int limit;
	int rc;

	memset(c, 0, sizeof(*c));
	c->version = GA_VERSION_EMULATED;
	c->ddb = 32;
	c->clock_hz = GA_DMA_CLOCK_HZ_DEFAULT;
	c->gen.size = 4096;
	c->gen.pattern = GA_PATTERN_PRBS;
	c->gen.first_user = 0x02; /* SOF, as the firmware's read path sends */
	c->trap = false;	  /* opt-in: it installs process-wide signal handlers */
	c->memory_map = -1;

	if (strncmp(spec, "sim", 3) != 0 || (spec[3] && spec[3] != ':'))
		return ga_err(-EINVAL, "'%s' is not a sim spec (sim[:key=value,...])", spec);
	p = spec[3] ? spec + 4 : spec + 3;
	while (*p) {
		const char *end = strchr(p, ',');
		const char *eq;
		size_t n = end ? (size_t)(end - p) : strlen(p);

		eq = memchr(p, '=', n);
		if (n == 0 || !eq)
			return ga_err(-EINVAL, "sim: expected key=value, got '%.*s'", (int)n, p);
		rc = parse_kv(c, p, (size_t)(eq - p), eq + 1, n - (size_t)(eq - p) - 1);
		if (rc)
			return rc;
		if ((size_t)(eq - p) == 11 && strncmp(p, "max_buffers", 11) == 0)
			max_given = true;
		p += n;
		if (*p == ',')
			p++;
	}
	/* The version's map bounds the buffers, and is the default. */
	limit = ga_layout_max_buffers(ga_layout_for_version(c->version, false));
	if (!max_given)
		c->max_buffers = limit;
	else if (c->max_buffers > limit)
		return ga_err(-ERANGE, "sim: version %u (%s map) holds at most %u buffers",
			      c->version, ga_layout_name(ga_layout_for_version(c->version, false)),
			      limit);
	return 0;
}

/* ---- backend ops ---------------------------------------------------------- */

static void sim_free(struct sim *s)
{
	sim_trap_unmap(s);
	if (s->regs)
		munmap((void *)s->regs, GA_CORE_SIZE);
	if (s->shm_fd >= 0) {
		close(s->shm_fd);
		shm_unlink(s->shm_name);
	}
	pthread_cond_destroy(&s->changed);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	free(s->scratch);
	free(s->last_read);
	free(s);
}

/*
 * The simulated card's AxiVersion: the image both emulated cards model
 * (ga_fw_emulated, docs/firmware.md §2.5), card number @n of this
 * process.  Two build constants follow the card's options, as the
 * firmware derives them from the same constants: the DMA clock is the
 * latency clock (§2.1), and the PCIe AXI data width is the core's
 * DmaDataBytes.
 */
static void sim_fw_words(struct sim *s, unsigned int n, int memory_map)
{
	const struct ga_fw_field *f = ga_fw_fields;
	uint32_t *w = &s->fw[f[GA_FW_PCIE_AXI_DATA_BYTES].offset / 4];
	uint32_t *mm = &s->fw[f[GA_FW_MEMORY_MAP_VERSION].offset / 4];

	/* The chip: "SIM", the process and its card: unique per open card. */
	ga_fw_emulated(s->fw, "libgpuasync sim",
		       0x53494d0000000000ull | (uint64_t)getpid() << 16 | (n & 0xffff));
	s->fw[f[GA_FW_DMA_CLOCK_HZ].offset / 4] = (uint32_t)s->clock_hz;
	*w = ga_fw_put(GA_FW_PCIE_AXI_DATA_BYTES, *w, s->ddb);
	if (memory_map >= 0)
		*mm = ga_fw_put(GA_FW_MEMORY_MAP_VERSION, *mm, (uint32_t)memory_map);
	s->power_up_ns = ga_mono_ns();
}

static uint32_t sim_fw_word(void *ctx, uint32_t off)
{
	struct sim *s = ctx;

	return off < GA_FW_SIZE ? s->fw[off / 4] : 0;
}

/* The SysMon block where the AxiVersion words just made say the card has
 * one (the gate every reader applies, ga_sysmon_probe): its power-up
 * values in the family the board type names. */
static void sim_sysmon_start(struct sim *s)
{
	int family = ga_sysmon_probe(sim_fw_word, s, NULL);

	s->has_sysmon = family >= 0;
	if (s->has_sysmon)
		ga_sysmon_init(&s->sysmon, s->sysmon_regs, (enum ga_sysmon_family)family);
}

/* SysMon words, as the card's BAR answers them (all ones over a dead link). */
static int sim_sysmon_read(struct ga_dev *dev, const uint32_t *off, uint32_t *val, unsigned int n)
{
	struct sim *s = dev_sim(dev);

	if (!s->has_sysmon)
		return ga_err(-ENODEV, "sim: this card has no SysMon block (its memory-map "
				       "version is 0, or newer than known)");
	sim_lock(s);
	for (unsigned int i = 0; i < n; i++)
		val[i] = atomic_load(&s->link_down)	? 0xffffffffu
			 : off[i] / 4 < GA_SYSMON_WORDS ? s->sysmon_regs[off[i] / 4]
							: 0;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static int sim_fw_read(struct ga_dev *dev, uint32_t off, uint32_t *val)
{
	struct sim *s = dev_sim(dev);

	if (atomic_load(&s->link_down))
		*val = 0xffffffffu;
	else if (off == ga_fw_fields[GA_FW_UPTIME].offset)
		*val = (uint32_t)((ga_mono_ns() - s->power_up_ns) / 1000000000ull);
	else
		*val = off < GA_FW_SIZE ? s->fw[off / 4] : 0;
	return 0;
}

/* The firmware keeps a write only in the bits of the RW rows (ScratchPad);
 * identity ignores it.  Callers hold dev->lock, which orders it against
 * sim_fw_read. */
static int sim_fw_write(struct ga_dev *dev, uint32_t off, uint32_t val)
{
	struct sim *s = dev_sim(dev);
	uint32_t mask = ga_fw_write_mask(off);

	if (!atomic_load(&s->link_down) && off < GA_FW_SIZE)
		s->fw[off / 4] = (s->fw[off / 4] & ~mask) | (val & mask);
	return 0;
}

static int sim_open(struct ga_dev *dev, const char *spec)
{
	static atomic_uint instance;
	struct ga_model_params mp;
	struct ga_model_env env;
	pthread_condattr_t ca;
	struct sim_cfg c;
	struct sim *s = NULL;
	unsigned int n;
	int rc;

	rc = parse_spec(spec, &c);
	if (rc)
		return rc;
	if (dev->opts.latency_legacy)
		c.legacy = true;

	s = calloc(1, sizeof(*s));
	if (!s)
		return ga_err(-ENOMEM, "sim: out of memory");
	s->dev = dev;
	s->shm_fd = -1;
	s->version = c.version;
	s->max_buffers = c.max_buffers;
	s->ddb = c.ddb;
	s->clock_hz = c.clock_hz;
	s->legacy = c.legacy;
	s->layout = ga_layout_for_version(c.version, c.legacy);
	s->gen = c.gen;
	atomic_store(&s->link_down, c.link_down);
	s->trap = c.trap;
	n = atomic_fetch_add(&instance, 1);
	sim_fw_words(s, n, c.memory_map);
	sim_sysmon_start(s);
	pthread_mutex_init(&s->lock, NULL);
	s->log_waits = ga_log_enabled();
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wake, &ca);
	pthread_cond_init(&s->changed, &ca);
	pthread_condattr_destroy(&ca);

	if (c.shm[0])
		snprintf(s->shm_name, sizeof(s->shm_name), "/%.100s", c.shm);
	else
		snprintf(s->shm_name, sizeof(s->shm_name), "/gpuasync-sim-%ld-%u", (long)getpid(),
			 n);
	s->shm_fd = shm_open(s->shm_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (s->shm_fd < 0) {
		rc = -errno;
		s->shm_fd = -1;
		rc = ga_err(rc, "sim: cannot create shared memory /dev/shm%s: %s%s", s->shm_name,
			    strerror(-rc),
			    rc == -EEXIST ? " (another sim uses that name; pick another shm=)"
					  : "");
		goto out_free;
	}
	/* With core_offset the file is the card's BAR up to the core block
	 * (sparse before it), as a consumer maps a real card's BAR. */
	s->core_offset = c.core_offset;
	if (ftruncate(s->shm_fd, (off_t)s->core_offset + GA_CORE_SIZE) < 0) {
		rc = ga_err(-errno, "sim: cannot size /dev/shm%s: %s", s->shm_name,
			    strerror(errno));
		goto out_free;
	}
	s->regs = mmap(NULL, GA_CORE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, s->shm_fd,
		       (off_t)s->core_offset);
	if (s->regs == MAP_FAILED) {
		s->regs = NULL;
		rc = ga_err(-errno, "sim: cannot map /dev/shm%s: %s", s->shm_name, strerror(errno));
		goto out_free;
	}
	sim_regs_shared(s->regs);

	memset(&mp, 0, sizeof(mp));
	mp.version = c.version;
	mp.latency_legacy = c.legacy;
	mp.max_buffers = c.max_buffers;
	mp.dma_data_bytes = c.ddb;
	mp.clock_hz = c.clock_hz;
	ga_simdev_env(s, &env);
	rc = ga_model_init(&s->model, s->regs, &mp, &env);
	if (rc) {
		rc = ga_err(rc, "sim: the model has no firmware version %u", c.version);
		goto out_free;
	}
	s->arm_poll_ns = SIM_ARM_POLL_MIN_NS;

	rc = pthread_create(&s->thread, NULL, ga_simdev_thread, s);
	if (rc) {
		rc = ga_err(-rc, "sim: cannot start the model thread");
		goto out_free;
	}
	s->thread_started = true;

	dev->priv = s;
	dev->info.version = c.version;
	dev->info.max_buffers = c.max_buffers;
	dev->info.dma_data_bytes = c.ddb;
	dev->info.clock_hz = c.clock_hz;
	dev->info.layout = s->layout;
	return 0;

out_free:
	sim_free(s);
	return rc;
}

static void sim_close(struct ga_dev *dev)
{
	struct sim *s = dev_sim(dev);

	if (!s)
		return;
	sim_replay_close(s); /* its reader wakes the card thread */
	sim_lock(s);
	s->stop = true;
	pthread_cond_broadcast(&s->wake);
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->lock);
	if (s->thread_started)
		pthread_join(s->thread, NULL);
	ga_simdev_zero_frame_free(s); /* before the memory layer closes (open.c order) */
	sim_free(s);
	dev->priv = NULL;
}

/* No lock: the register block is shared memory that other processes read
 * the same way, and a 32-bit load sees one value the register had, as a
 * read of the card's BAR does.  So the card thread never delays a read. */
static int sim_reg_read(struct ga_dev *dev, uint32_t off, uint32_t *val)
{
	struct sim *s = dev_sim(dev);

	*val = atomic_load(&s->link_down) ? 0xffffffffu : ga_model_reg_read(&s->model, off);
	return 0;
}

static int sim_reg_write(struct ga_dev *dev, uint32_t off, uint32_t val)
{
	struct sim *s = dev_sim(dev);

	if (atomic_load(&s->link_down))
		return 0; /* lost on the way, as over a dead link */
	sim_lock(s);
	if (s->reg_ignored)
		s->reg_ignored--; /* injected: the write goes nowhere, silently */
	else
		ga_model_reg_write(&s->model, off, val);
	ga_simdev_kick(s);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* With trap=yes a mapping of the process's own whose stores to the
 * control word are each seen (sim_trap.c); else the model's, whose stores
 * it sees when it looks. */
static int sim_map_regs(struct ga_dev *dev, volatile uint32_t **regs)
{
	struct sim *s = dev_sim(dev);
	int rc;

	if (!s->trap) {
		*regs = s->regs;
		return 0;
	}
	rc = sim_trap_map(s);
	if (rc)
		return rc;
	*regs = s->user_regs;
	return 0;
}

static void sim_unmap_regs(struct ga_dev *dev, volatile uint32_t *regs)
{
	struct sim *s = dev_sim(dev);

	/* The model's mapping lives until close; the trapped one until its
	 * last user unmaps it (then the signal handlers go too). */
	if (s->trap && regs == s->user_regs)
		sim_trap_put(s);
}

static int sim_reg_path(struct ga_dev *dev, char *path, size_t len, uint64_t *off)
{
	struct sim *s = dev_sim(dev);
	int n = snprintf(path, len, "/dev/shm%s", s->shm_name);

	if (n < 0 || (size_t)n >= len)
		return ga_err(-ENAMETOOLONG, "sim: register path needs %d bytes", n + 1);
	if (off)
		*off = s->core_offset;
	return 0;
}

/* Write the counts into 0x08, the engine enables left as they are. */
static void program_counts(struct sim *s)
{
	field_write(s, GA_REG_WRITE_COUNT, 0,
		    s->nbuf[GA_DIR_WRITE] ? s->nbuf[GA_DIR_WRITE] - 1 : 0);
	field_write(s, GA_REG_READ_COUNT, 0, s->nbuf[GA_DIR_READ] ? s->nbuf[GA_DIR_READ] - 1 : 0);
}

static void program_address(struct sim *s, enum ga_dir dir, unsigned int i, uint64_t bus)
{
	bool w = dir == GA_DIR_WRITE;

	field_write(s, w ? GA_REG_WRITE_ADDR_LO : GA_REG_READ_ADDR_LO, i, (uint32_t)bus);
	field_write(s, w ? GA_REG_WRITE_ADDR_HI : GA_REG_READ_ADDR_HI, i, (uint32_t)(bus >> 32));
}

/* @fd names a dma-buf (its /proc fdinfo has the exporter's name): the
 * exporter, or a negative errno with ga_err() set. */
static int dmabuf_exporter(int fd, char *name, size_t len)
{
	char path[64], line[160];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return ga_err(errno == ENOENT ? -EBADF : -errno, "sim: dma-buf fd %d: %s: %s", fd,
			      path, strerror(errno));
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "exp_name: %63s", name) == 1;
	fclose(f);
	(void)len;
	if (!found)
		return ga_err(-EINVAL, "sim: fd %d is not a dma-buf (no exporter in %s)", fd, path);
	return 0;
}

/* What GA_Add_Dmabuf checks before it attaches, on the fd itself. */
static int sim_dmabuf_check(const struct ga_dmabuf_ref *db, uint32_t size)
{
	char exporter[64] = "";
	struct stat st;
	off_t end;
	int rc;

	if (db->fd < 0 || fstat(db->fd, &st) < 0)
		return ga_err(-EBADF, "sim: dma-buf fd %d is not open", db->fd);
	rc = dmabuf_exporter(db->fd, exporter, sizeof(exporter));
	if (rc)
		return rc;
	end = lseek(db->fd, 0, SEEK_END);
	if (end < 0)
		return ga_err(-errno, "sim: lseek(SEEK_END) on dma-buf fd %d: %s", db->fd,
			      strerror(errno));
	if (db->offset % GA_GPU_PAGE_SIZE)
		return ga_err(-EINVAL, "sim: dma-buf offset 0x%llx is not 64 KiB aligned",
			      (unsigned long long)db->offset);
	if (db->offset > (uint64_t)end || size > (uint64_t)end - db->offset)
		return ga_err(-EINVAL,
			      "sim: %u bytes at offset 0x%llx lie outside the %lld-byte dma-buf",
			      size, (unsigned long long)db->offset, (long long)end);
	ga_log("sim: dma-buf fd %d from %s, %lld bytes: registering %u at 0x%llx", db->fd, exporter,
	       (long long)end, size, (unsigned long long)db->offset);
	return 0;
}

static int sim_add_buffer(struct ga_dev *dev, enum ga_dir dir, const struct ga_mem_block *blk,
			  uint32_t size, const struct ga_dmabuf_ref *db, uint64_t *bus_address)
{
	struct sim *s = dev_sim(dev);
	const char *what = dir == GA_DIR_WRITE ? "write" : "read";
	struct sim_block *b;
	unsigned int i;
	uint64_t bus;
	int rc = 0;

	if (size == 0 || size % GA_GPU_PAGE_SIZE)
		return ga_err(-EINVAL,
			      "sim: buffer size %u is not a non-zero multiple of 64 KiB "
			      "(RDMA pins 64 KiB GPU pages)",
			      size);
	if (!blk || blk->size < size)
		return ga_err(-EINVAL, "sim: registering %u bytes of a %zu-byte block", size,
			      blk ? blk->size : (size_t)0);
	if (db && (rc = sim_dmabuf_check(db, size)) != 0)
		return rc;

	sim_lock(s);
	i = s->nbuf[dir];
	if (i >= s->max_buffers) {
		rc = ga_err(-ENOSPC, "sim: all %u %s buffers the firmware supports are in use",
			    s->max_buffers, what);
		goto out;
	}
	if (dir == GA_DIR_WRITE && i > 0 && s->layout != GA_LAYOUT_V1 &&
	    s->blocks[dir][0].size != size) {
		rc = ga_err(-EINVAL,
			    "sim: write buffers must all be the same size on version %u "
			    "(one shared write_max_size): existing %u, new %u",
			    s->version, s->blocks[dir][0].size, size);
		goto out;
	}
	b = &s->blocks[dir][i];
	b->used = true;
	b->gen = s->next_gen++ & SIM_BUS_GEN_MASK;
	b->size = size;
	b->blk = *blk;
	b->dmabuf = db != NULL;
	b->dmabuf_off = db ? db->offset : 0;
	bus = sim_bus_encode(dir, i, b->gen);
	s->nbuf[dir]++;

	/* The count gates which slots the engine uses (docs/firmware.md
	 * §3.1), so the new slot is programmed first and the count raised
	 * last, with the engines running: no frame is dropped or cut short
	 * for an add (issue 24 item 10).  Upstream's drivers stop or
	 * restart the engine here (docs/sim.md). */
	program_address(s, dir, i, bus);
	if (dir == GA_DIR_WRITE) {
		/* The payload starts at +dma_data_bytes: that much less fits. */
		field_write(s, GA_REG_WRITE_SIZE, i, size - s->ddb);
		field_write(s, GA_REG_WRITE_MAX_SIZE, 0, size - s->ddb);
	}
	program_counts(s);
	*bus_address = bus;
	ga_simdev_kick(s);
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static void forget_buffer(struct sim *s, enum ga_dir dir, unsigned int i)
{
	program_address(s, dir, i, 0);
	if (dir == GA_DIR_WRITE)
		field_write(s, GA_REG_WRITE_SIZE, i, 0);
	memset(&s->blocks[dir][i], 0, sizeof(s->blocks[dir][i]));
}

static int sim_remove_all(struct ga_dev *dev)
{
	struct sim *s = dev_sim(dev);
	unsigned int d, i;

	sim_lock(s);
	/* Disable both engines and zero the counts in one go, as upstream.
	 * The model is idle whenever we hold its lock, so V5's active bits
	 * are already 0 and there is nothing in flight to wait for. */
	s->nbuf[0] = s->nbuf[1] = 0;
	field_write(s, GA_REG_WRITE_ENABLE, 0, 0);
	field_write(s, GA_REG_READ_ENABLE, 0, 0);
	program_counts(s);
	for (d = 0; d < 2; d++)
		for (i = 0; i < GA_MAX_BUFFERS; i++)
			if (s->blocks[d][i].used)
				forget_buffer(s, (enum ga_dir)d, i);
	field_write(s, GA_REG_WRITE_MAX_SIZE, 0, 0); /* the firmware stores 1 */
	/* Free-list bits stay set, as on hardware (docs/firmware.md §3.1 step 7). */
	ga_simdev_kick(s);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static int sim_remove_last(struct ga_dev *dev, enum ga_dir dir)
{
	struct sim *s = dev_sim(dev);
	enum ga_reg_id count = dir == GA_DIR_WRITE ? GA_REG_WRITE_COUNT : GA_REG_READ_COUNT;
	enum ga_reg_id enable = dir == GA_DIR_WRITE ? GA_REG_WRITE_ENABLE : GA_REG_READ_ENABLE;
	unsigned int i;
	int rc = 0;

	sim_lock(s);
	if (s->nbuf[dir] == 0) {
		rc = ga_err(-ENOENT, "sim: no %s buffer to remove",
			    dir == GA_DIR_WRITE ? "write" : "read");
		goto out;
	}
	i = --s->nbuf[dir];
	/* Shrink the ring first so the engine never picks the buffer again;
	 * with none left the engine goes off (buffer 0 has no address). */
	if (s->nbuf[dir])
		field_write(s, count, 0, s->nbuf[dir] - 1);
	else
		field_write(s, enable, 0, 0);
	forget_buffer(s, dir, i);
	ga_model_forget(&s->model, dir == GA_DIR_WRITE, i);
	if (dir == GA_DIR_WRITE && s->nbuf[dir] == 0)
		field_write(s, GA_REG_WRITE_MAX_SIZE, 0, 0);
	ga_simdev_kick(s);
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static int sim_arm(struct ga_dev *dev, const uint32_t *indices, unsigned int n)
{
	struct sim *s = dev_sim(dev);
	unsigned int k;
	uint32_t off;
	int rc = 0;

	sim_lock(s);
	/* Validate all first: never half-apply. */
	for (k = 0; k < n; k++) {
		if (indices[k] >= s->nbuf[GA_DIR_WRITE]) {
			rc = ga_err(-EINVAL, "sim: cannot arm write buffer %u: %u registered",
				    indices[k], s->nbuf[GA_DIR_WRITE]);
			goto out;
		}
	}
	for (k = 0; k < n; k++)
		if (!sim_off(s, GA_REG_FREE_LIST, indices[k], &off))
			ga_model_reg_write(&s->model, off, 1);
	ga_simdev_kick(s);
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static int sim_enable(struct ga_dev *dev, enum ga_dir dir, bool on)
{
	struct sim *s = dev_sim(dev);

	sim_lock(s);
	field_write(s, dir == GA_DIR_WRITE ? GA_REG_WRITE_ENABLE : GA_REG_READ_ENABLE, 0, on);
	ga_simdev_kick(s);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* The registered blocks as the driver's table would list them: the sim
 * pins nothing, so the memory is never invalidated and this process owns
 * every buffer. */
static int sim_pinned(struct ga_dev *dev, struct ga_pinned **list, unsigned int *n)
{
	static const enum ga_dir order[2] = {GA_DIR_WRITE, GA_DIR_READ};
	struct sim *s = dev_sim(dev);
	struct ga_pinned *out = NULL;
	unsigned int k, i, total;

	*list = NULL;
	*n = 0;
	sim_lock(s);
	total = s->nbuf[GA_DIR_WRITE] + s->nbuf[GA_DIR_READ];
	if (total) {
		out = calloc(total, sizeof(*out));
		if (!out) {
			pthread_mutex_unlock(&s->lock);
			return ga_err(-ENOMEM, "out of memory");
		}
	}
	total = 0;
	for (k = 0; k < 2; k++) {
		enum ga_dir d = order[k];

		for (i = 0; i < s->nbuf[d]; i++) {
			const struct sim_block *b = &s->blocks[d][i];

			if (!b->used)
				continue;
			out[total++] = (struct ga_pinned){
				.dir = d,
				.index = i,
				.gpu_address = b->dmabuf ? b->dmabuf_off : b->blk.dptr,
				.bus_address = sim_bus_encode(d, i, b->gen),
				.size = b->size,
				.pages = b->size / GA_GPU_PAGE_SIZE,
				.owner = (int)getpid(),
				.invalidated = false,
				.dmabuf = b->dmabuf,
			};
		}
	}
	pthread_mutex_unlock(&s->lock);
	*list = out;
	*n = total;
	return 0;
}

static bool sim_has(struct ga_dev *dev, enum ga_cap cap)
{
	switch (cap) {
	case GA_CAP_SUPPORTED:
	case GA_CAP_REG_MMAP:
	case GA_CAP_REMOVE_ONE:
	case GA_CAP_ARM_MANY:
	case GA_CAP_ENABLE_IOCTL:
	case GA_CAP_BUFFER_TABLE:
	case GA_CAP_PINNED_LIST:
	case GA_CAP_DMABUF:
	case GA_CAP_ADD_LIVE:  /* sim_add_buffer: the slot first, the count last */
	case GA_CAP_GPUDIRECT: /* buffers by address, as through nvidia_p2p */
		return true;
	case GA_CAP_GPU_MEMORY:
		return ga_mem_is_gpu(dev);
	default:
		return false;
	}
}

static bool sim_claims(const char *spec)
{
	return strcmp(spec, "sim") == 0 || strncmp(spec, "sim:", 4) == 0;
}

const struct ga_backend_ops ga_backend_sim = {
	.name = "sim",
	.flags = GA_BE_SIM,
	.claims = sim_claims,
	.open = sim_open,
	.close = sim_close,
	.reg_read = sim_reg_read,
	.reg_write = sim_reg_write,
	.fw_read = sim_fw_read,
	.fw_write = sim_fw_write,
	.map_regs = sim_map_regs,
	.unmap_regs = sim_unmap_regs,
	.reg_path = sim_reg_path,
	.add_buffer = sim_add_buffer,
	.remove_all = sim_remove_all,
	.remove_last = sim_remove_last,
	.arm = sim_arm,
	.enable = sim_enable,
	.has = sim_has,
	.pinned = sim_pinned,
	.sysmon_read = sim_sysmon_read,
};
