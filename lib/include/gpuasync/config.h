/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * gpuasyncfs / libgpuasync configuration, read with inih.
 *
 *   [device]   path = sim | /dev/datadev_0 ; latency_block = current|legacy
 *              gpu = 0 ; use_gpu = yes ; pin = auto|p2p|dmabuf
 *   [sim]      version, max_buffers, dma_data_bytes, clock_hz, rate, size,
 *              pattern
 *   [buffers]  size = 64K ; max = 1024   (default size for mkdir)
 *   [access]   allow_other = no ; uid = ; gid = ; mode = 0644 (writable files)
 *   [monitor]  interval_ms = 100 ; errors_kept = 64
 *
 * Unknown sections/keys and bad values are errors naming file:line.
 * Defaults come from ga_config_defaults().  Not thread-safe while loading;
 * a loaded config is read-only.
 */
#ifndef GPUASYNC_CONFIG_H
#define GPUASYNC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GA_DEFAULT_CONFIG_PATH "/etc/gpuasyncfs.conf"

struct ga_config {
	/* [device] */
	char device[256];
	char settings_file[256]; /* applied at mount ("" = none) */
	uint64_t core_offset;	 /* GpuAsyncCore in BAR0; 0 = the driver's */
	bool latency_legacy;
	int gpu_index;
	bool use_gpu;
	bool observe; /* look only: another process owns the card (docs/drp.md) */
	bool reclaim; /* remove buffers nobody here registered, at mount */
	int pin; /* enum ga_pin (gpuasync/device.h): auto, p2p, dmabuf */
	/* [sim] */
	unsigned int sim_version;
	unsigned int sim_max_buffers; /* 0 = firmware default */
	unsigned int sim_dma_data_bytes;
	uint64_t sim_clock_hz;
	uint64_t sim_rate_hz;
	uint32_t sim_size;
	char sim_pattern[16];
	unsigned int sim_memory_map; /* AxiVersion's memory-map version (SysMon from 1) */
	/* [buffers] */
	uint64_t buffer_size;
	unsigned int buffer_max;
	/* [access] */
	bool allow_other;
	bool uid_set, gid_set;
	uid_t uid;
	gid_t gid;
	unsigned int mode; /* for writable files */
	/* [monitor] */
	unsigned int interval_ms;
	unsigned int errors_kept;
	/* [prometheus]: metrics over HTTP and a file_sd target file */
	char http[64];		 /* "ADDR:PORT" served, "" = off (GA_HTTP_DEFAULT_PORT) */
	char targets_dir[256];	 /* file_sd directory for the target file; "" = none */
	char instrument[64];	 /* target labels for the fleet; "" = left out */
	char partition[64];
	char detname[64];
	char alias[64];
};

/* The port -o http=yes serves on: Prometheus' exporter range, clear of the
 * LCLS-II DAQ's 9200-9299 (docs/operations.md). */
#define GA_HTTP_DEFAULT_PORT 9330

void ga_config_defaults(struct ga_config *cfg);
/* Load @path over @cfg.  On error returns negative errno and writes
 * "file:line: explanation" into @err. */
int ga_config_load(struct ga_config *cfg, const char *path, char *err, size_t errlen);
/* Apply one "key=value" or "section.key=value" setting (for -o options). */
int ga_config_set(struct ga_config *cfg, const char *section, const char *key, const char *value,
		  char *err, size_t errlen);
/* Render the effective configuration as an ini file. */
int ga_config_format(const struct ga_config *cfg, char *buf, size_t len);
/* Build the ga_dev_open spec string ("sim:version=4,..." or the path). */
int ga_config_device_spec(const struct ga_config *cfg, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* GPUASYNC_CONFIG_H */
