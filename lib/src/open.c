/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Opening and closing a device (gpuasync/device.h): what ties the parts
 * together, so it sits above them (dev.c, buffers/, backends/, memory/).
 *
 * Opening picks two ops tables once, each from its list below: the first
 * backend that claims the spec (the simulated card claims "sim...", the
 * datadev backend every device path) and the first memory provider that
 * can serve (CUDA when asked for and available, p2p stub memory in front
 * of a driver, host memory otherwise, with the reason kept in
 * info.memory_note).  Everything after that goes
 * through the tables, never through per-backend branches.  Closing takes
 * the buffers down first, then the backend, then the memory layer.
 *
 * Then the pin path (dev_pin_choose): dma-buf needs the driver to take one
 * (GA_CAP_DMABUF: GA_Add_Dmabuf, or upstream's GPU_DmaBuf_Add_*) and the
 * memory to export one (its dmabuf_probe; host
 * memory is swapped for the udmabuf layer, which exports); pin=dmabuf
 * fails the open when either is missing, saying which, pin=auto falls back
 * to p2p and says why in info.pin_note.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuasync/parse.h"
#include "internal.h"

/* ---- the lists ------------------------------------------------------------ */

/* Backends in the order they are asked whether a spec is theirs; the one
 * that claims every spec last. */
const struct ga_backend_ops *const ga_backends[] = {
	&ga_backend_sim,
	&ga_backend_datadev,
	NULL,
};

/* Memory providers in order of preference; host memory, always there, last. */
const struct ga_mem_provider *const ga_mem_providers[] = {
	&ga_mem_cuda,
	&ga_mem_stub,
	&ga_mem_host,
	NULL,
};

static const struct ga_backend_ops *backend_for(const char *spec)
{
	const struct ga_backend_ops *const *b;

	for (b = ga_backends; (*b)->claims && !(*b)->claims(spec); b++)
		;
	return *b;
}

/* ---- open / close -------------------------------------------------------- */

/* The first provider whose conditions hold and whose open succeeds; the
 * first reason another was passed over goes into info.memory_note. */
static void dev_mem_open(struct ga_dev *dev)
{
	char why[sizeof(dev->info.memory_note)] = "";
	char pwhy[sizeof(why)], gpu[sizeof(dev->info.gpu)];
	const struct ga_mem_provider *const *p;
	bool driver = dev->kind->flags & GA_BE_DRIVER;

	for (p = ga_mem_providers; *p; p++) {
		const struct ga_mem_provider *m = *p;
		const struct ga_mem_ops *ops = NULL;
		const char *note;
		void *ctx = NULL;

		if ((m->flags & GA_MEMP_GPU) && (!dev->opts.use_gpu || dev->opts.gpu_index < 0)) {
			snprintf(why, sizeof(why), "GPU memory not requested");
			continue;
		}
		if ((m->flags & GA_MEMP_DRIVER) && !driver)
			continue;
		pwhy[0] = gpu[0] = '\0';
		if (m->open(dev, &ops, &ctx, gpu, sizeof(gpu), pwhy, sizeof(pwhy))) {
			if (!why[0])
				snprintf(why, sizeof(why), "%s", pwhy);
			continue;
		}
		dev->mem = ops;
		dev->mem_ctx = ctx;
		dev->memp = m;
		snprintf(dev->info.gpu, sizeof(dev->info.gpu), "%s", m->gpu ? m->gpu : gpu);
		snprintf(dev->info.memory, sizeof(dev->info.memory), "%s", m->memory);
		if (!ops->pci_address ||
		    ops->pci_address(ctx, dev->info.gpu_pci, sizeof(dev->info.gpu_pci)))
			dev->info.gpu_pci[0] = '\0';
		note = driver && m->note_driver ? m->note_driver : m->note;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		snprintf(dev->info.memory_note, sizeof(dev->info.memory_note), note, why);
#pragma GCC diagnostic pop
		if (dev->info.memory_note[0])
			ga_log("%s memory: %s", m->memory, dev->info.memory_note);
		return;
	}
}

/* ---- the pin path -------------------------------------------------------- */

static const char *const pin_names[GA_PIN_COUNT] = {
	[GA_PIN_AUTO] = "auto",
	[GA_PIN_P2P] = "p2p",
	[GA_PIN_DMABUF] = "dmabuf",
};

const char *ga_pin_name(enum ga_pin pin)
{
	return (unsigned int)pin < GA_PIN_COUNT ? pin_names[pin] : NULL;
}

int ga_pin_parse(const char *s, enum ga_pin *out)
{
	const char *v;
	size_t n;

	if (!s || !out)
		return ga_err(-EINVAL, "ga_pin_parse: NULL argument");
	if (ga_parse_value(s, strlen(s), &v, &n) == 0) {
		for (unsigned int i = 0; i < GA_PIN_COUNT; i++) {
			if (strlen(pin_names[i]) == n && strncmp(v, pin_names[i], n) == 0) {
				*out = (enum ga_pin)i;
				return 0;
			}
		}
	}
	return ga_err(-EINVAL,
		      "'%.*s' is not a pin path: auto (dma-buf where possible), p2p "
		      "(GPU_Add_Nvidia_Memory) or dmabuf (GA_Add_Dmabuf, required)",
		      (int)strcspn(s, "\n"), s);
}

/* Can the memory export dma-bufs?  0, or a negative errno and why.  Memory
 * without an exporter of its own (GA_MEMP_UDMABUF) is replaced by the
 * udmabuf layer when that works (nothing is allocated yet). */
static int dev_mem_dmabuf(struct ga_dev *dev, char *why, size_t len)
{
	const struct ga_mem_ops *ops;
	void *ctx;
	int rc;

	/* Host memory, and upstream's p2p stub memory (which has no exporter;
	 * on gpuasync.ko, the one driver with GA_Add_Dmabuf, host memory works
	 * as well), become udmabuf memory when that works. */
	if (dev->memp->flags & GA_MEMP_UDMABUF) {
		rc = ga_mem_udmabuf_open(dev->opts.pin == GA_PIN_DMABUF, &ops, &ctx, why, len);
		if (rc)
			return rc;
		if (dev->memp != &ga_mem_host) {
			if (dev->mem->close)
				dev->mem->close(dev->mem_ctx);
			snprintf(dev->info.gpu, sizeof(dev->info.gpu), "none (host memory)");
			snprintf(dev->info.memory, sizeof(dev->info.memory), "host");
			snprintf(dev->info.memory_note, sizeof(dev->info.memory_note),
				 "GPU memory not requested; host memory in udmabuf dma-bufs "
				 "instead of p2p stub memory, which has no exporter");
		}
		dev->memp = &ga_mem_host;
		dev->mem = ops;
		dev->mem_ctx = ctx;
		return 0;
	}
	if (!dev->mem->dmabuf_probe || !dev->mem->dmabuf_export) {
		snprintf(why, len, "%s memory has no dma-buf exporter", dev->mem->name);
		return -ENOTSUP;
	}
	return dev->mem->dmabuf_probe(dev->mem_ctx, why, len);
}

static int dev_pin_choose(struct ga_dev *dev)
{
	enum ga_pin want = (enum ga_pin)dev->opts.pin;
	char why[sizeof(dev->info.pin_note) - 64] = "";
	int rc;

	dev->dmabuf = false;
	if (!ga_pin_name(want))
		return ga_err(-EINVAL, "pin path %d is not auto, p2p or dmabuf", (int)want);
	if (want == GA_PIN_P2P) {
		snprintf(dev->info.pin, sizeof(dev->info.pin), "p2p");
		snprintf(dev->info.pin_note, sizeof(dev->info.pin_note),
			 "pin=p2p: buffers are registered by address (GPU_Add_Nvidia_Memory)");
		return 0;
	}
	if (!ga_dev_has(dev, GA_CAP_DMABUF)) {
		snprintf(why, sizeof(why),
			 "the %s driver takes no dma-bufs (neither gpuasync.ko's GA_Add_Dmabuf "
			 "nor upstream's GPU_DmaBuf_Add_Wr/Rd_Buffer, which releases up to "
			 "7.5.1 lack)",
			 dev->be->name);
		rc = -ENOTSUP;
	} else {
		rc = dev_mem_dmabuf(dev, why, sizeof(why));
	}
	if (rc == 0) {
		dev->dmabuf = true;
		snprintf(dev->info.pin, sizeof(dev->info.pin), "dmabuf");
		snprintf(dev->info.pin_note, sizeof(dev->info.pin_note),
			 "pin=%s: buffers are registered as dma-bufs (%s)", ga_pin_name(want), why);
		return 0;
	}
	if (want == GA_PIN_DMABUF)
		return ga_err(-ENOTSUP, "pin=dmabuf: %s", why); /* what is missing: in why */
	snprintf(dev->info.pin, sizeof(dev->info.pin), "p2p");
	snprintf(dev->info.pin_note, sizeof(dev->info.pin_note),
		 "pin=auto: buffers are registered by address (p2p), no dma-buf: %s", why);
	return 0;
}

/* ---- open, continued ---------------------------------------------------- */

int ga_dev_open_opts(const char *spec, const struct ga_open_opts *opts, struct ga_dev **out)
{
	static const struct ga_open_opts defaults = GA_OPEN_OPTS_DEFAULT;
	struct ga_dev *dev;
	int rc;

	if (!out)
		return ga_err(-EINVAL, "ga_dev_open: no place for the handle");
	*out = NULL;
	if (!spec || !spec[0])
		return ga_err(-EINVAL,
			      "no device given: a path such as /dev/datadev_0, or \"sim\"");

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return ga_err(-ENOMEM, "out of memory");
	rc = pthread_mutex_init(&dev->lock, NULL);
	if (rc) {
		free(dev);
		return ga_err(-rc, "pthread_mutex_init failed");
	}
	dev->opts = opts ? *opts : defaults;
	dev->be = backend_for(spec);
	dev->kind = dev->be;
	dev->info.layout = GA_LAYOUT_COUNT;
	snprintf(dev->info.backend, sizeof(dev->info.backend), "%s", dev->be->name);
	snprintf(dev->info.path, sizeof(dev->info.path), "%s", spec);

	rc = dev->be->open(dev, spec);
	if (rc) {
		if (rc > 0)
			rc = ga_err(-EIO, "%s: backend open returned %d", spec, rc);
		goto out_free;
	}
	/* The buffer arrays hold GA_MAX_BUFFERS per direction. */
	if (dev->info.max_buffers == 0 || dev->info.max_buffers > GA_MAX_BUFFERS) {
		rc = ga_err(-EPROTO, "%s: %u buffers per direction reported (1..%u supported)",
			    spec, dev->info.max_buffers, GA_MAX_BUFFERS);
		dev->be->close(dev);
		goto out_free;
	}
	if (dev->info.layout >= GA_LAYOUT_COUNT)
		dev->info.layout =
			ga_layout_for_version(dev->info.version, dev->opts.latency_legacy);
	if (dev->info.layout >= GA_LAYOUT_COUNT) {
		rc = ga_err(-ENOTSUP,
			    "%s: firmware version %u is not one this library knows (1-%u)", spec,
			    dev->info.version, GA_VERSION_MAX);
		dev->be->close(dev);
		goto out_free;
	}
	/* A card whose link is down answers all-ones: its "identity" above is
	 * noise, so say what is wrong instead of building on it. */
	rc = ga_link_check_locked(dev);
	if (rc) {
		dev->be->close(dev);
		goto out_free;
	}

	if (dev->opts.observe) {
		/* Nothing of ours goes to the card: no memory, no pin path. */
		ga_observe_wrap(dev);
		snprintf(dev->info.gpu, sizeof(dev->info.gpu), "none (observer)");
		snprintf(dev->info.memory, sizeof(dev->info.memory), "none");
		snprintf(dev->info.pin, sizeof(dev->info.pin), "none");
		snprintf(dev->info.pin_note, sizeof(dev->info.pin_note),
			 "observer: adds no buffers");
		ga_err_clear();
		*out = dev;
		return 0;
	}
	dev_mem_open(dev);
	rc = dev_pin_choose(dev);
	if (rc) {
		dev->be->close(dev);
		if (dev->mem && dev->mem->close)
			dev->mem->close(dev->mem_ctx);
		goto out_free;
	}
	ga_log("pin path: %s", dev->info.pin_note);
	ga_err_clear();
	*out = dev;
	return 0;

out_free:
	pthread_mutex_destroy(&dev->lock);
	free(dev);
	return rc;
}

int ga_dev_open(const char *spec, struct ga_dev **out)
{
	return ga_dev_open_opts(spec, NULL, out);
}

void ga_dev_close(struct ga_dev *dev)
{
	bool kept;

	if (!dev)
		return;
	pthread_mutex_lock(&dev->lock);
	kept = ga_buf_destroy_all_locked(dev) != 0;
	if (kept)
		ga_log("close: buffers left registered, their memory is not freed: %s",
		       ga_last_error());
	pthread_mutex_unlock(&dev->lock);
	/* Backend before memory: the card must forget the buffers before the
	 * memory layer tears down its context.  When the driver would not
	 * remove them, neither the buffers nor the memory layer go: the card
	 * may still reach that memory (leaked on purpose). */
	dev->be->close(dev);
	if (!kept && dev->mem && dev->mem->close)
		dev->mem->close(dev->mem_ctx);
	/* Parked blocks left here are pinned by a driver that would not remove
	 * them: leaked on purpose, never freed under the card. */
	free(dev->parked);
	ga_telemetry_free(dev);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}
