/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * metrics: the Prometheus text exposition (format 0.0.4) of the card.
 *
 *   # HELP gpuasync_rx_frame_count_total frames finished by the FPGA->GPU ...
 *   # TYPE gpuasync_rx_frame_count_total counter
 *   gpuasync_rx_frame_count_total{device="/dev/datadev_0",card="0"} 1042
 *   gpuasync_total_latency_seconds{device="/dev/datadev_0",card="0",direction="write",
 *                                  buffer="0"} 3.248e-06
 *
 * Names come from the register table, mechanically: gpuasync_<name>, plus
 * "_total" for counters (GA_F_COUNTER), "_seconds" for cycle counts
 * (converted with device/clock_hz) and "_bytes" for sizes.  Fields the
 * driver programs (counts, addresses) and write-only strobes are left out:
 * they are plumbing, not state.  Every sample carries the card's identity
 * (card_labels: device, card), so that the files of several cards can
 * feed one node_exporter without duplicate series; per-buffer values add
 * direction and buffer labels.  The same text is prometheus/gpuasync.prom, so that
 * node_exporter's textfile collector (which reads *.prom files of one
 * directory) can be pointed at MOUNTPOINT/prometheus.
 *
 * One render reads every register once and every buffer's state once, the
 * states of a direction with one batched header read (ga_buf_info_all):
 * with 1024 buffers in GPU memory that is one wait for the GPU, not 1024.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuasync/platform.h>

#include "fs.h"

/* @s escaped for a HELP text, or with @label for a label value.  Copied a
 * run at a time: the texts rarely hold anything to escape, and a HELP line
 * is written for every family of every render. */
static void put_escaped(struct strbuf *sb, const char *s, bool label)
{
	const char *special = label ? "\\\n\"" : "\\\n";

	for (;;) {
		size_t run = strcspn(s, special);

		sb_put(sb, s, run);
		s += run;
		if (!*s)
			return;
		sb_puts(sb, *s == '\n' ? "\\n" : *s == '"' ? "\\\"" : "\\\\");
		s++;
	}
}

/* The one writer of HELP and TYPE lines (fs.h): every part of the metrics
 * text calls it, so the format and HELP's escaping are the same throughout. */
void fs_metrics_family(struct strbuf *sb, const char *name, const char *type, const char *help,
		       const char *unit)
{
	sb_puts(sb, "# HELP ");
	sb_puts(sb, name);
	sb_puts(sb, " ");
	put_escaped(sb, help, false);
	if (unit && *unit) {
		sb_puts(sb, " (");
		sb_puts(sb, unit);
		sb_puts(sb, ")");
	}
	sb_puts(sb, "\n# TYPE ");
	sb_puts(sb, name);
	sb_puts(sb, " ");
	sb_puts(sb, type);
	sb_puts(sb, "\n");
}

/* gpuasync_<name><suffix> into @out (truncated to @len - 1 bytes), without
 * snprintf: it runs for every register of every render. */
static void metric_name(const struct ga_reg *r, char *out, size_t len)
{
	const char *suffix = "";
	size_t n = strlen(r->name), used = 0;
	const char *parts[3];

	if (r->flags & GA_F_COUNTER)
		suffix = "_total";
	else if (r->flags & GA_F_CYCLES)
		suffix = "_seconds";
	else if ((r->flags & GA_F_BYTES) && !(n >= 5 && !strcmp(r->name + n - 5, "bytes")))
		suffix = "_bytes";
	parts[0] = "gpuasync_";
	parts[1] = r->name;
	parts[2] = suffix;
	for (unsigned int i = 0; i < 3; i++) {
		size_t k = strlen(parts[i]);

		if (k > len - 1 - used)
			k = len - 1 - used;
		memcpy(out + used, parts[i], k);
		used += k;
	}
	out[used] = '\0';
}

/*
 * The labels naming this card, first in every sample (escaped, no braces):
 *   device  the device path (/dev/datadev_N); for the simulated card, whose
 *           spec is the same for every mount, its register file
 *           (/dev/shm/gpuasync-sim-PID-N), unique while it is mounted
 *   card    the number ending that path (N), where it ends in one
 *   dna     the FPGA's device DNA (unique per chip), where the card has an
 *           AxiVersion block; read at mount, so it stays while the link is
 *           down and series keep their identity
 */
static void card_labels(struct fs *fs, struct strbuf *id)
{
	char path[sizeof(fs->info.path) + 64];
	uint64_t off;
	size_t n, digits = 0;

	snprintf(path, sizeof(path), "%s", fs->info.path);
	if (fs->sim && ga_dev_reg_path(fs->dev, path, sizeof(path), &off) < 0)
		snprintf(path, sizeof(path), "%s", fs->info.path);
	sb_printf(id, "device=\"");
	put_escaped(id, path, true);
	sb_printf(id, "\"");
	n = strlen(path);
	while (digits < n && path[n - digits - 1] >= '0' && path[n - digits - 1] <= '9')
		digits++;
	if (digits && digits < 10)
		sb_printf(id, ",card=\"%s\"", path + n - digits);
	if (fs->dna[0]) {
		sb_printf(id, ",dna=\"");
		put_escaped(id, fs->dna, true);
		sb_printf(id, "\"");
	}
}

static void scalar_registers(struct fs *fs, struct strbuf *sb, const char *id)
{
	char name[96];

	for (unsigned int i = 0; i < fs->nrows; i++) {
		const struct fs_node *n = &fs->rows[i];
		const struct ga_reg *r;
		uint64_t v;

		if (n->reg < 0 || n->parent != FS_D_REGISTERS || !n->show)
			continue;
		r = &ga_regs[n->reg];
		if (r->flags & GA_F_DRIVER)
			continue;
		/* Whole values: both words of 64-bit monitors, counts + 1. */
		if (ga_reg_read64(fs->dev, (enum ga_reg_id)n->reg, 0, &v) < 0)
			continue; /* a failing read leaves the sample out, never a fake 0 */
		metric_name(r, name, sizeof(name));
		fs_metrics_family(sb, name, (r->flags & GA_F_COUNTER) ? "counter" : "gauge", r->doc,
				  r->unit);
		sb_puts(sb, name);
		sb_puts(sb, "{");
		sb_puts(sb, id);
		sb_puts(sb, "} ");
		sb_put_uint(sb, v);
		sb_puts(sb, "\n");
	}
}

/* Latency rows exist per buffer: one family, a sample per measured buffer. */
static void buffer_latencies(struct fs *fs, struct strbuf *sb, const char *id)
{
	double hz = fs->info.clock_hz ? (double)fs->info.clock_hz : 1.0;
	char name[96];

	for (unsigned int i = 0; i < fs->nrows; i++) {
		const struct fs_node *n = &fs->rows[i];
		enum ga_dir dir = n->parent == FS_D_WLAT ? GA_DIR_WRITE : GA_DIR_READ;
		unsigned int count;
		bool first = true;

		if (n->reg < 0 || (n->parent != FS_D_WLAT && n->parent != FS_D_RLAT))
			continue;
		metric_name(&ga_regs[n->reg], name, sizeof(name));
		count = ga_buf_count(fs->dev, dir);
		/* Buffers are numbered densely and a layout measures a
		 * prefix of them: the first one without a sample ends the row. */
		for (unsigned int b = 0; b < count && b < GA_MAX_BUFFERS; b++) {
			uint32_t v;

			if (!ga_buf_get(fs->dev, dir, b) || (n->visible && !n->visible(fs, n, b)))
				break;
			if (ga_reg_read(fs->dev, (enum ga_reg_id)n->reg, b, &v) < 0)
				continue;
			/* a minimum with no sample yet has no value to export */
			if ((ga_regs[n->reg].flags & GA_F_RUNNING_MIN) &&
			    v == ga_reg_field_max((enum ga_reg_id)n->reg, fs->info.layout))
				continue;
			if (first)
				fs_metrics_family(sb, name, "gauge", ga_regs[n->reg].doc,
						  "seconds");
			first = false;
			sb_printf(sb, "%s{%s,direction=\"%s\",buffer=\"%u\"} %.9g\n", name, id,
				  dir == GA_DIR_WRITE ? "write" : "read", b, (double)v / hz);
		}
	}
}

static const char *const state_names[] = {
	[GA_BUF_IDLE] = "IDLE", [GA_BUF_FREE] = "FREE",	  [GA_BUF_READY] = "READY",
	[GA_BUF_BUSY] = "BUSY", [GA_BUF_ERROR] = "ERROR",
};
#define NSTATES (sizeof(state_names) / sizeof(state_names[0]))

/* What follows the buffer number in a gpuasync_buffer_state line, per
 * state, so that the line is three copies (written 1024 times a render). */
#define STATE_TAIL(s) "\",state=\"" s "\"} 1\n"
static const struct {
	const char *text;
	size_t len;
} state_tails[] = {
	[GA_BUF_IDLE] = {STATE_TAIL("IDLE"), sizeof(STATE_TAIL("IDLE")) - 1},
	[GA_BUF_FREE] = {STATE_TAIL("FREE"), sizeof(STATE_TAIL("FREE")) - 1},
	[GA_BUF_READY] = {STATE_TAIL("READY"), sizeof(STATE_TAIL("READY")) - 1},
	[GA_BUF_BUSY] = {STATE_TAIL("BUSY"), sizeof(STATE_TAIL("BUSY")) - 1},
	[GA_BUF_ERROR] = {STATE_TAIL("ERROR"), sizeof(STATE_TAIL("ERROR")) - 1},
};
_Static_assert(sizeof(state_tails) / sizeof(state_tails[0]) == NSTATES,
	       "a line ending for every state name");

/* Buffer states: left out while the link is down (@link false), as the
 * registers are: only a card that answers can say what a buffer is doing. */
static void buffer_states(struct fs *fs, struct strbuf *sb, const char *id, bool link)
{
	unsigned int per_state[2][NSTATES] = {{0}};
	static const char *const dirname[2] = {"write", "read"};
	struct ga_buf_info *bi = malloc(GA_MAX_BUFFERS * sizeof(*bi));

	if (!bi) {
		sb->oom = true; /* the render fails with -ENOMEM */
		return;
	}
	if (!link)
		goto out_lost;
	/* Per buffer: its state as a label (one sample), and its size. */
	fs_metrics_family(sb, "gpuasync_buffer_state", "gauge",
			  "1 for each buffer, labelled with its state: IDLE, FREE (armed), READY, "
			  "BUSY, ERROR",
			  NULL);
	for (int d = 0; d < 2; d++) {
		struct strbuf pre = {0};
		unsigned int count = 0;

		/* One batched header read per direction (ga_buf_info per
		 * buffer costs a GPU round trip each). */
		if (ga_buf_info_all(fs->dev, (enum ga_dir)d, bi, GA_MAX_BUFFERS, &count) < 0)
			continue;
		/* Every line starts alike: print that once, copy it after. */
		sb_printf(&pre, "gpuasync_buffer_state{%s,direction=\"%s\",buffer=\"", id,
			  dirname[d]);
		sb->oom |= pre.oom;
		for (unsigned int b = 0; b < count && b < GA_MAX_BUFFERS && !pre.oom; b++) {
			if ((unsigned int)bi[b].state >= NSTATES)
				continue;
			per_state[d][bi[b].state]++;
			sb_put(sb, pre.buf, pre.len);
			sb_put_uint(sb, bi[b].index);
			sb_put(sb, state_tails[bi[b].state].text, state_tails[bi[b].state].len);
		}
		sb_free(&pre);
	}
	fs_metrics_family(sb, "gpuasync_buffers", "gauge", "buffers per direction and state", NULL);
	for (int d = 0; d < 2; d++)
		for (unsigned int s = 0; s < NSTATES; s++) {
			sb_puts(sb, "gpuasync_buffers{");
			sb_puts(sb, id);
			sb_puts(sb, ",direction=\"");
			sb_puts(sb, dirname[d]);
			sb_puts(sb, "\",state=\"");
			sb_puts(sb, state_names[s]);
			sb_puts(sb, "\"} ");
			sb_put_uint(sb, per_state[d][s]);
			sb_puts(sb, "\n");
		}
out_lost:
	fs_metrics_family(sb, "gpuasync_registrations_lost_total", "counter",
			  "times the card was found no longer holding our buffers (another program "
			  "removed them, or the driver did)",
			  NULL);
	sb_printf(sb, "gpuasync_registrations_lost_total{%s} %u\n", id,
		  ga_dev_registrations_lost(fs->dev));
	fs_metrics_family(sb, "gpuasync_add_stopped_frames_total", "counter",
			  "frames the card counted while a buffer add had the write engine "
			  "stopped or the payload limit cleared (upstream's datadev: dropped or "
			  "cut short; 0 where adds run live)",
			  NULL);
	sb_printf(sb, "gpuasync_add_stopped_frames_total{%s} %llu\n", id,
		  (unsigned long long)ga_dev_add_stopped_frames(fs->dev));
	free(bi);
}

static void sim_stats(struct fs *fs, struct strbuf *sb, const char *id)
{
	struct ga_sim_stats st;

	if (!fs->sim || ga_sim_stats(fs->dev, &st) < 0)
		return;
#define SIM_COUNTER(field, name, help)                                                             \
	fs_metrics_family(sb, "gpuasync_sim_" name, "counter", help, NULL);                        \
	sb_printf(sb, "gpuasync_sim_" name "{%s} %llu\n", id, (unsigned long long)st.field)
	SIM_COUNTER(generated, "generated_frames_total",
		    "frames the simulated card's generator produced");
	SIM_COUNTER(delivered, "delivered_frames_total",
		    "frames the simulated card wrote into a buffer");
	SIM_COUNTER(dropped, "dropped_frames_total",
		    "frames dropped while the write engine was off");
	SIM_COUNTER(overflowed, "overflowed_frames_total", "frames truncated at the payload size");
	SIM_COUNTER(reads, "read_frames_total", "GPU->FPGA frames the simulated card received");
	SIM_COUNTER(read_bytes, "read_bytes_total", "GPU->FPGA bytes the simulated card received");
#undef SIM_COUNTER
	fs_metrics_family(sb, "gpuasync_sim_stalled_seconds_total", "counter",
			  "time the input waited for a free buffer", NULL);
	sb_printf(sb, "gpuasync_sim_stalled_seconds_total{%s} %.9g\n", id,
		  (double)st.stalled_ns / 1e9);
}

/*
 * The PCIe links (links retrain at run time: a marginal slot drops to
 * Gen1, an idle GPU slows down), read from sysfs at most once a second
 * (fs_pcie_read): the card's, and the GPU's where the memory provider
 * knows its PCI address.  Names as node_exporter's pcidevice collector;
 * labels end="card"|"gpu" and pci=<its address>.  What could not be read
 * has no sample, and gpuasync_pcie_link_readable says which end could not
 * be told (0: no PCI function, as on the simulated card, or no link
 * files): never a made-up number.
 */
static void pcie_links(struct fs *fs, struct strbuf *sb, const char *id)
{
	struct fs_pcie p;
	const struct fs_pcie_end *e = p.e;
	unsigned int n;

	fs_pcie_read(fs, &p);
	n = p.n;
	fs_metrics_family(sb, "gpuasync_pcie_link_readable", "gauge",
			  "1 when this end's (card, gpu) PCIe link was read from sysfs, 0 when it "
			  "could not be told (no PCI function, as on the simulated card, or no "
			  "link files)",
			  NULL);
	for (unsigned int i = 0; i < n; i++)
		sb_printf(sb, "gpuasync_pcie_link_readable{%s,end=\"%s\",pci=\"%s\"} %d\n", id,
			  e[i].end, e[i].bdf, e[i].ok);
	/* One family per value; a family with no sample is left out. */
	for (unsigned int k = 0; k < 4; k++) {
		static const char *const name[4] = {
			"gpuasync_pcie_current_link_transfers_per_second",
			"gpuasync_pcie_max_link_transfers_per_second",
			"gpuasync_pcie_current_link_width", "gpuasync_pcie_max_link_width"};
		static const char *const help[4] = {
			"PCIe link speed now (sysfs current_link_speed)",
			"highest PCIe link speed the function can do (max_link_speed)",
			"PCIe lanes trained now (current_link_width; 0: link down)",
			"PCIe lanes the function can do (max_link_width)"};
		bool first = true;

		for (unsigned int i = 0; i < n; i++) {
			double v = k == 0   ? e[i].l.speed * 1e9
				   : k == 1 ? e[i].l.max_speed * 1e9
				   : k == 2 ? e[i].l.width
					    : e[i].l.max_width;

			if (k < 2 ? v <= 0 : v < 0)
				continue; /* could not tell: no sample */
			if (first)
				fs_metrics_family(sb, name[k], "gauge", help[k], NULL);
			first = false;
			sb_printf(sb, "%s{%s,end=\"%s\",pci=\"%s\"} %.9g\n", name[k], id, e[i].end,
				  e[i].bdf, v);
		}
	}
}

int fs_show_metrics(struct fs_ctx *c, struct strbuf *sb)
{
	struct fs *fs = c->fs;
	struct strbuf idsb = {0};
	const char *id;
	size_t len_hint;
	int link;

	/* Room for the last length and a little more (counters grow digits),
	 * or the doublings would copy about as much as the render writes. */
	len_hint = atomic_load(&fs->metrics_len);
	if (len_hint)
		sb_reserve(sb, sb->len + len_hint + len_hint / 16);
	card_labels(fs, &idsb);
	if (idsb.oom) {
		sb_free(&idsb);
		return -ENOMEM;
	}
	id = idsb.buf;
	fs_metrics_family(sb, "gpuasync_device_info", "gauge",
			  "identity of the card (value is always 1)", NULL);
	sb_printf(sb, "gpuasync_device_info{%s,backend=\"", id);
	put_escaped(sb, fs->info.backend, true);
	sb_printf(sb, "\",version=\"%u\",layout=\"%s\",memory=\"%s\",gpu=\"", fs->info.version,
		  ga_layout_name(fs->info.layout), fs->info.memory);
	put_escaped(sb, fs->info.gpu, true);
	sb_printf(sb, "\"} 1\n");
	fs_metrics_family(sb, "gpuasync_link_up", "gauge",
			  "1 while the card answers, 0 when its link is down (registers read all "
			  "ones)",
			  NULL);
	link = ga_dev_link(fs->dev) > 0;
	sb_printf(sb, "gpuasync_link_up{%s} %d\n", id, link);
	fs_health_metrics(fs, sb, id);
	if (link)
		fs_sysmon_metrics(fs, sb, id);
	fs_metrics_family(sb, "gpuasync_clock_hertz", "gauge", "clock of the latency counters",
			  NULL);
	sb_printf(sb, "gpuasync_clock_hertz{%s} %llu\n", id, (unsigned long long)fs->info.clock_hz);

	/* A card whose link is down reads all ones: no register or buffer
	 * state sample then, rather than garbage; gpuasync_link_up says why. */
	if (link)
		scalar_registers(fs, sb, id);
	/* The card's queued copies land before bufs_lock is taken (the
	 * buffer states and the frame watcher's look read after them). */
	ga_dev_sync(fs->dev);
	pthread_rwlock_rdlock(&fs->bufs_lock);
	if (link)
		buffer_latencies(fs, sb, id);
	buffer_states(fs, sb, id, link);
	fs_frames_metrics(fs, sb, id);
	pthread_rwlock_unlock(&fs->bufs_lock);
	sim_stats(fs, sb, id);
	pcie_links(fs, sb, id);

	fs_metrics_family(sb, "gpuasyncfs_errors_total", "counter",
			  "requests refused (lines added to errors)", NULL);
	sb_printf(sb, "gpuasyncfs_errors_total{%s} %llu\n", id,
		  (unsigned long long)atomic_load(&fs->err_total));
	fs_metrics_family(sb, "gpuasyncfs_poll_samples_total", "counter",
			  "times the sampler looked at the polled live files", NULL);
	sb_printf(sb, "gpuasyncfs_poll_samples_total{%s} %llu\n", id,
		  (unsigned long long)atomic_load(&fs->samples));
	fs_metrics_family(sb, "gpuasyncfs_poll_notifications_total", "counter",
			  "poll wake-ups sent for changed live files", NULL);
	sb_printf(sb, "gpuasyncfs_poll_notifications_total{%s} %llu\n", id,
		  (unsigned long long)atomic_load(&fs->notifies));
	sb_free(&idsb);
	if (!sb->oom)
		atomic_store(&fs->metrics_len, sb->len);
	return sb->oom ? -ENOMEM : 0;
}
