/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * libgpuasync card telemetry: the BAR0 memory-map version and the FPGA's
 * SysMon readings (temperature and supply voltages), on every backend.
 *
 *   struct ga_sysmon_reading r;
 *   if (ga_dev_sysmon(dev, &r) == 0)
 *           printf("%.1f C\n", r.value[GA_SYSMON_TEMP] / 1000.0);
 *
 * Where the readings come from, first that applies:
 *   hwmon      the card's hwmon device named "datadev" (the driver's: upstream
 *              aes-stream-drivers with hwmon, gpuasync.ko), found under the
 *              device node's sysfs device; values as the driver converts them
 *   registers  the SysMon block in BAR0 (GA_SYSMON_BASE), read through the
 *              backend (the register-read ioctl, the simulated card's model)
 *              and converted here by the card's family (gpuasync/sysmon.h),
 *              where the card has one: memory-map version >= 1, GEN_SYSMON_G
 *              set, an UltraScale(+) board type (ga_sysmon_probe)
 * A limit the hwmon device has no file for (the supplies' limits: neither
 * upstream's nor gpuasync.ko's hwmon has them) is read from the registers
 * beside it, where the card has the block; else limit_known says so.
 * Sensors, limits and the hwmon file of each are the rows of
 * gpuasync/sysmon.def; indices below are its enums.
 *
 * Errors: -ENODEV "no SysMon on this card" (map version 0, image without
 * SysMon), -EOPNOTSUPP (a 7-series or unknown board), -EPFNOSUPPORT (a
 * memory-map version newer than the newest known: refused, as upstream's
 * driver refuses the card), -ENOTSUP (a backend that reaches neither),
 * -ENOLINK (link down), each explained in ga_last_error().
 *
 * Cost: the first call finds the source (sysfs look-up or the AxiVersion
 * gate) and keeps it; every call after is one pass over the sensors, one
 * pread per hwmon file or one register read per word (the simulated card:
 * one lock).  Thread-safe.
 */
#ifndef GPUASYNC_TELEMETRY_H
#define GPUASYNC_TELEMETRY_H

#include <stdint.h>

#include "gpuasync/sysmon.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ga_dev;

enum ga_sysmon_source {
	GA_SYSMON_FROM_HWMON,	  /* the driver's hwmon device */
	GA_SYSMON_FROM_REGISTERS, /* the SysMon block, converted here */
};

/* One pass over the card's SysMon: millidegrees C (GA_SYSMON_MC sensors
 * and their limits) or millivolts (GA_SYSMON_MV), by the enums of
 * gpuasync/sysmon.h. */
struct ga_sysmon_reading {
	int32_t value[GA_SYSMON_SENSOR_COUNT];
	int32_t highest[GA_SYSMON_SENSOR_COUNT]; /* since power-up (or reset) */
	int32_t lowest[GA_SYSMON_SENSOR_COUNT];
	int32_t limit[GA_SYSMON_LIMIT_COUNT]; /* sysmon.def's limit rows */
	/* false for a limit no source holds: the driver's hwmon has no file
	 * for it and BAR0's SysMon block cannot be read */
	bool limit_known[GA_SYSMON_LIMIT_COUNT];
	enum ga_sysmon_source source;
	/* The hwmon directory read, or "BAR0 0x24000 (UltraScale, SYSMONE1)". */
	char where[192];
};

/* The card's BAR0 memory-map version (AxiVersion userValues[63]) into
 * *@version, also when it is newer than GA_MEMMAP_NEWEST (then
 * ga_memmap_refused() says why nothing relies on it).  -ENOTSUP where the
 * backend cannot read AxiVersion, -ENOLINK when the link is down. */
int ga_dev_memory_map_version(struct ga_dev *dev, unsigned int *version);

/* Read every sensor and limit once into @r (see above for the source and
 * the errors).  Nothing in @r is to be trusted after a failure. */
int ga_dev_sysmon(struct ga_dev *dev, struct ga_sysmon_reading *r);

#ifdef __cplusplus
}
#endif
#endif /* GPUASYNC_TELEMETRY_H */
