/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* libgpuasync: everything.  See device.h for conventions. */
#ifndef GPUASYNC_GPUASYNC_H
#define GPUASYNC_GPUASYNC_H
#include "gpuasync/abi.h"
#include "gpuasync/config.h"
#include "gpuasync/device.h"
#include "gpuasync/parse.h"
#include "gpuasync/platform.h"
#include "gpuasync/regs.h"
#include "gpuasync/sim.h"
#include "gpuasync/telemetry.h"

#define GPUASYNC_VERSION_STRING "0.1.0"
#endif
