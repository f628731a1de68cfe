// SPDX-License-Identifier: GPL-2.0
/*
 * nv_p2p_stub.ko: a stand-in for the NVIDIA driver's peer-to-peer symbols,
 * so gpuasync.ko builds, loads and is tested in a VM without a GPU.
 *
 * It exports nvidia_p2p_get_pages / put_pages / dma_map_pages /
 * dma_unmap_pages / free_page_table / free_dma_mapping with the semantics
 * of NVIDIA's open kernel modules, backed by system memory:
 *  - "GPU memory" is either a region allocated through /dev/nv_p2p_stub
 *    (NVSTUB_ALLOC, fake GPU VA, physically contiguous 64 KiB pages) or
 *    pinned host memory of the calling process (so libgpuasync's host
 *    memory layer works against the datadev backend);
 *  - the invalidation callback runs when a region is freed (NVSTUB_FREE,
 *    close of the stub fd) or on request (NVSTUB_INVALIDATE); like NVIDIA's
 *    resource manager, the stub frees the page table and its DMA mappings
 *    itself once the callback returns, and put_pages waits for a callback
 *    in flight and then succeeds;
 *  - bus addresses are fake, unique and never reused, and
 *    nv_p2p_stub_dma() lets the emulated card copy through them, counting
 *    DMA to a mapping that no longer exists;
 *  - a region can also be exported as a dma-buf (NVSTUB_EXPORT_DMABUF, the
 *    stand-in for CUDA's dma-buf export), static like NVIDIA's or dynamic
 *    (dmabuf_dynamic=1: revoked on free, moved on invalidate).
 * Rules of the interface that a client breaks are counted and WARNed.
 *
 * Locking: stub.lock (a mutex) guards every list and counter below.  The
 * client's callback is always called WITHOUT stub.lock, so the client may
 * take its own locks and call back into the stub (free_* calls, DMA).
 */
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/miscdevice.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/sched.h>
#include <linux/highmem.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>
#include <linux/version.h>

#include "gpuasync/dma.h"

#include "nv-p2p.h"
#include "nv_p2p_stub.h"
#include "nv_p2p_stub_uapi.h"

/* ---- module parameters --------------------------------------------------- */

static int max_region_mb = 64;
module_param(max_region_mb, int, 0644);
MODULE_PARM_DESC(max_region_mb, "largest NVSTUB_ALLOC region in MiB (default 64)");

static int max_total_mb = 256;
module_param(max_total_mb, int, 0644);
MODULE_PARM_DESC(max_total_mb, "all regions together, MiB (default 256)");

static int fail_get_pages;
module_param(fail_get_pages, int, 0644);
MODULE_PARM_DESC(fail_get_pages, "fail this many next nvidia_p2p_get_pages with -ENOMEM");

static int fail_dma_map;
module_param(fail_dma_map, int, 0644);
MODULE_PARM_DESC(fail_dma_map, "fail this many next nvidia_p2p_dma_map_pages with -ENOMEM");

static bool scatter;
module_param(scatter, bool, 0644);
MODULE_PARM_DESC(scatter, "hand out non-contiguous bus addresses (tests the client's check)");

static bool reenter_unmap;
module_param(reenter_unmap, bool, 0644);
MODULE_PARM_DESC(reenter_unmap,
		 "dma_unmap_pages runs the pin's callback synchronously first (tests re-entry guards)");

static int invalidate_after_map;
module_param(invalidate_after_map, int, 0644);
MODULE_PARM_DESC(invalidate_after_map,
		 "the next N dma_map_pages run the pin's callback after making the mapping, "
		 "before returning it (the memory goes away once the client's mapping exists)");

/*
 * Who frees after a free callback.  NVIDIA's open kernel modules (595.x):
 * the resource manager frees the page table and every DMA mapping left once
 * the callback returns; nvidia_p2p_free_page_table/free_dma_mapping are
 * no-ops.  The older reading of the interface, which legacy_free models:
 * the callback must free them itself with those calls, and whatever it
 * does not free is leaked (counted in NVSTUB_STATS leaked; the stub still
 * releases it so the machine stays clean).
 */
static bool legacy_free;
module_param(legacy_free, bool, 0644);
MODULE_PARM_DESC(legacy_free,
		 "the older free-callback contract: the client frees page table and mappings "
		 "in its callback; what it leaves counts as leaked");

static int invalidate_on_map;
module_param(invalidate_on_map, int, 0644);
MODULE_PARM_DESC(invalidate_on_map,
		 "the next N dma_map_pages find their memory freed: the callback runs first "
		 "(tests a callback that arrives while the client is still setting up)");

static int callback_during_map;
module_param(callback_during_map, int, 0644);
MODULE_PARM_DESC(callback_during_map,
		 "the next N dma_map_pages fire the pin's callback from another thread and wait "
		 "until it returns (the client let NVIDIA free the page table mid-call: misuse) "
		 "or blocks (the client holds it off); then the mapping is made");

static bool dmabuf_dynamic;
module_param(dmabuf_dynamic, bool, 0644);
MODULE_PARM_DESC(dmabuf_dynamic,
		 "dma-bufs exported from now on are dynamic (move_notify on free and invalidate) "
		 "instead of static like NVIDIA's (they keep the memory alive)");

/*
 * A fixture for node tooling that pairs cards with GPUs (LCLS-II's
 * gen_gres_conf.py): /proc/driver/nvidia/gpus/<PCI address>/information
 * for each PCI address listed, as NVIDIA's driver publishes it for a
 * healthy GPU (the lines such tools read), the device minor in list order.
 */
static char *gpus;
module_param(gpus, charp, 0444);
MODULE_PARM_DESC(gpus,
		 "comma-separated PCI addresses to publish as NVIDIA GPUs in "
		 "/proc/driver/nvidia/gpus/<address>/information (tests of node tooling)");

static int fail_dmabuf_attach;
module_param(fail_dmabuf_attach, int, 0644);
MODULE_PARM_DESC(fail_dmabuf_attach,
		 "refuse this many next dma-buf attachments with -ENOTSUPP, as NVIDIA's exporter "
		 "does when the PCIe topology gives no peer-to-peer path to the importer");

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
MODULE_IMPORT_NS("DMA_BUF");
#else
MODULE_IMPORT_NS(DMA_BUF);
#endif

/* ---- structures ---------------------------------------------------------- */

#define STUB_GPU_PAGE (64 * 1024)
#define STUB_PAGES_PER_GPU_PAGE (STUB_GPU_PAGE / PAGE_SIZE)
#define STUB_VA_BASE 0x00ff000000000000ULL /* not a user address: no clash with host pins */
#define STUB_BUS_BASE 0x000000b000000000ULL
#define STUB_MMAP_SHIFT 32 /* mmap offset = region id << 32 */

/* A region of "GPU memory" allocated by a test (cudaMalloc). */
struct stub_region {
	struct kref ref;        /* one for the allocation, one per pin */
	struct list_head node;  /* stub.regions */
	struct file *owner;     /* NULL once freed by the user */
	u64 va, size;
	u32 id;
	unsigned long npages;   /* PAGE_SIZE pages */
	struct page **pages;
};

enum stub_pin_state {
	PIN_LIVE,       /* pinned, no callback yet */
	PIN_CB_RUNNING, /* the client's callback is running */
	PIN_DEAD,       /* released (put_pages or after the callback) */
};

/* One nvidia_p2p_get_pages: the page table handed out is embedded. */
struct stub_pin {
	struct kref ref;
	struct list_head node; /* stub.pins while LIVE or CB_RUNNING */
	struct nvidia_p2p_page_table pt;
	struct nvidia_p2p_page *pg;
	struct nvidia_p2p_page **pgp;
	u64 va, len;
	struct stub_region *region; /* region memory, or NULL: */
	struct page **hpages;       /* host memory pinned with pin_user_pages */
	const void *mm_key;         /* host pins: the mm, compared only */
	struct page **pages;        /* PAGE_SIZE pages backing [va, va+len) */
	void (*cb)(void *data);
	void *data;
	enum stub_pin_state state;
	bool pt_freed, maps_freed; /* in-callback release calls seen */
	struct completion cb_done;
	struct list_head maps;
};

struct stub_map {
	struct list_head node;  /* pin->maps, or the export's maps */
	struct list_head gnode; /* stub.maps: bus address lookup (empty once taken back) */
	struct nvidia_p2p_dma_mapping m;
	struct stub_pin *pin;    /* NULL for a dma-buf mapping */
	struct page **pages;     /* PAGE_SIZE pages behind entry 0 onwards */
	struct sg_table *sgt;    /* the dma-buf mapping handed out */
};

/* A dma-buf exported from part of a region. */
struct stub_export {
	struct list_head node;      /* stub.exports */
	struct stub_region *region; /* a reference: the memory lives while we do */
	unsigned long first;        /* first PAGE_SIZE page of the region */
	u64 len;
	bool dynamic;
	bool revoked;               /* freed: no new mappings */
	u64 pass;                   /* the last stub_move_exports that moved it */
	struct list_head maps;
	struct dma_buf *dmabuf;
};

static struct {
	struct mutex lock;
	struct list_head regions, pins, maps;
	struct list_head reserved; /* /dev/nvidia_p2p_stub_mem's regions */
	struct list_head exports;
	u64 move_pass;
	u64 next_va, next_bus;
	u32 next_id;
	unsigned long total_pages;
	struct nvstub_stats st;
} stub;

static u8 stub_uuid[16] = { 0x67, 0x61, 0x2d, 0x73, 0x74, 0x75, 0x62 };

/* ---- helpers ------------------------------------------------------------- */

static void stub_region_release(struct kref *ref)
{
	struct stub_region *r = container_of(ref, struct stub_region, ref);
	unsigned long i;

	/* Prerequisite: stub.lock held (kref_put_mutex-style callers). */
	list_del(&r->node);
	stub.total_pages -= r->npages;
	stub.st.regions--;
	for (i = 0; i < r->npages; i++)
		if (r->pages[i])
			put_page(r->pages[i]);
	kvfree(r->pages);
	kfree(r);
}

static void stub_region_put_locked(struct stub_region *r)
{
	lockdep_assert_held(&stub.lock);
	kref_put(&r->ref, stub_region_release);
}

static void stub_pin_free(struct kref *ref)
{
	struct stub_pin *pin = container_of(ref, struct stub_pin, ref);

	kfree(pin->pg);
	kfree(pin->pgp);
	kfree(pin);
}

static void stub_pin_put(struct stub_pin *pin)
{
	kref_put(&pin->ref, stub_pin_free);
}

/* Find a pin by the page table pointer a client handed back. */
static struct stub_pin *stub_find_pin(struct nvidia_p2p_page_table *pt)
{
	struct stub_pin *pin;

	lockdep_assert_held(&stub.lock);
	list_for_each_entry(pin, &stub.pins, node)
		if (&pin->pt == pt)
			return pin;
	return NULL;
}

static void stub_misuse(const char *what)
{
	stub.st.misuse++;
	WARN(1, "nv_p2p_stub: interface misuse: %s\n", what);
}

static void stub_free_maps_locked(struct stub_pin *pin)
{
	struct stub_map *map, *tmp;

	lockdep_assert_held(&stub.lock);
	list_for_each_entry_safe(map, tmp, &pin->maps, node) {
		list_del(&map->node);
		list_del(&map->gnode);
		stub.st.mappings--;
		kfree(map->m.dma_addresses);
		kfree(map);
	}
}

/*
 * Release the memory behind a pin and unlink it.  The struct lives on
 * while references remain (a put_pages waiting for a callback).
 * Prerequisite: stub.lock held; pin not DEAD.
 */
static void stub_pin_release_locked(struct stub_pin *pin)
{
	lockdep_assert_held(&stub.lock);
	stub_free_maps_locked(pin);
	list_del(&pin->node);
	pin->state = PIN_DEAD;
	stub.st.pins--;
	if (pin->region) {
		stub_region_put_locked(pin->region);
		pin->region = NULL;
	}
	if (pin->hpages) {
		unpin_user_pages_dirty_lock(pin->hpages, pin->len >> PAGE_SHIFT, true);
		kvfree(pin->hpages);
		pin->hpages = NULL;
	}
	pin->pages = NULL;
}

/*
 * Run the client's callback for @pin, already marked PIN_CB_RUNNING with a
 * reference taken by the caller under stub.lock.  Then do what NVIDIA's
 * resource manager does after a callback: free the page table and every
 * DMA mapping left.
 */
static void stub_fire(struct stub_pin *pin)
{
	struct stub_map *map;

	pin->cb(pin->data);

	mutex_lock(&stub.lock);
	stub.st.callbacks++;
	if (READ_ONCE(legacy_free)) {
		unsigned int left = !pin->pt_freed;

		list_for_each_entry(map, &pin->maps, node)
			left++;
		if (left)
			pr_warn("nv_p2p_stub: legacy_free: the callback left %u object(s) unfreed\n",
				left);
		stub.st.leaked += left;
	}
	stub_pin_release_locked(pin);
	mutex_unlock(&stub.lock);
	complete_all(&pin->cb_done);
	stub_pin_put(pin); /* the list's reference */
	stub_pin_put(pin); /* the caller's */
}

/* Mark the first live pin matching (region or range) as running; NULL if none. */
static struct stub_pin *stub_next_victim(struct stub_region *r, u64 va, u64 len,
					 const void *mm_key)
{
	struct stub_pin *pin;

	mutex_lock(&stub.lock);
	list_for_each_entry(pin, &stub.pins, node) {
		if (pin->state != PIN_LIVE)
			continue;
		if (r ? pin->region != r
		      : (pin->va >= va + len || pin->va + pin->len <= va ||
			 (pin->hpages && pin->mm_key != mm_key)))
			continue;
		pin->state = PIN_CB_RUNNING;
		kref_get(&pin->ref);
		mutex_unlock(&stub.lock);
		return pin;
	}
	mutex_unlock(&stub.lock);
	return NULL;
}

static int stub_invalidate(struct stub_region *r, u64 va, u64 len)
{
	struct stub_pin *pin;
	int n = 0;

	while ((pin = stub_next_victim(r, va, len, current->mm))) {
		stub_fire(pin);
		n++;
	}
	return n;
}

/* ---- the NVIDIA interface ------------------------------------------------ */

int nvidia_p2p_get_pages(uint64_t p2p_token, uint32_t va_space, uint64_t virtual_address,
			 uint64_t length, struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data)
{
	unsigned long nh = length >> PAGE_SHIFT, i;
	struct stub_region *r, *region = NULL;
	struct page **hpages = NULL;
	struct stub_pin *pin;
	u32 entries;
	long got;
	int ret;

	if (!page_table || !free_callback || p2p_token || va_space)
		return -EINVAL;
	if (!length || !IS_ALIGNED(virtual_address, STUB_GPU_PAGE) ||
	    !IS_ALIGNED(length, STUB_GPU_PAGE) || length > (1ULL << 32) ||
	    virtual_address + length < virtual_address)
		return -EINVAL;
	if (READ_ONCE(fail_get_pages) > 0) {
		WRITE_ONCE(fail_get_pages, fail_get_pages - 1);
		return -ENOMEM;
	}
	entries = length / STUB_GPU_PAGE;

	pin = kzalloc(sizeof(*pin), GFP_KERNEL);
	if (!pin)
		return -ENOMEM;
	pin->pg = kcalloc(entries, sizeof(*pin->pg), GFP_KERNEL);
	pin->pgp = kcalloc(entries, sizeof(*pin->pgp), GFP_KERNEL);
	if (!pin->pg || !pin->pgp) {
		ret = -ENOMEM;
		goto out_free_pin;
	}

	mutex_lock(&stub.lock);
	list_for_each_entry(r, &stub.regions, node) {
		if (r->owner && virtual_address >= r->va &&
		    virtual_address + length <= r->va + r->size) {
			region = r;
			kref_get(&r->ref);
			pin->pages = r->pages + ((virtual_address - r->va) >> PAGE_SHIFT);
			break;
		}
	}
	mutex_unlock(&stub.lock);

	if (!region) {
		/* Host memory of the caller, as the upstream stub also allows. */
		if (!current->mm || virtual_address >= TASK_SIZE) {
			ret = -EINVAL;
			goto out_free_pin;
		}
		hpages = kvmalloc_array(nh, sizeof(*hpages), GFP_KERNEL);
		if (!hpages) {
			ret = -ENOMEM;
			goto out_free_pin;
		}
		got = pin_user_pages_fast(virtual_address, nh, FOLL_WRITE | FOLL_LONGTERM, hpages);
		if (got != nh) {
			if (got > 0)
				unpin_user_pages(hpages, got);
			kvfree(hpages);
			ret = -EINVAL;
			goto out_free_pin;
		}
		pin->hpages = hpages;
		pin->pages = hpages;
		pin->mm_key = current->mm;
	}

	kref_init(&pin->ref);
	init_completion(&pin->cb_done);
	INIT_LIST_HEAD(&pin->maps);
	pin->va = virtual_address;
	pin->len = length;
	pin->region = region;
	pin->cb = free_callback;
	pin->data = data;
	for (i = 0; i < entries; i++) {
		pin->pg[i].physical_address = page_to_phys(pin->pages[i * STUB_PAGES_PER_GPU_PAGE]);
		pin->pgp[i] = &pin->pg[i];
	}
	pin->pt.version = NVIDIA_P2P_PAGE_TABLE_VERSION;
	pin->pt.page_size = NVIDIA_P2P_PAGE_SIZE_64KB;
	pin->pt.pages = pin->pgp;
	pin->pt.entries = entries;
	pin->pt.gpu_uuid = stub_uuid;

	mutex_lock(&stub.lock);
	pin->state = PIN_LIVE;
	list_add_tail(&pin->node, &stub.pins);
	stub.st.pins++;
	stub.st.get_pages++;
	mutex_unlock(&stub.lock);
	*page_table = &pin->pt;
	return 0;

out_free_pin:
	if (region) {
		mutex_lock(&stub.lock);
		stub_region_put_locked(region);
		mutex_unlock(&stub.lock);
	}
	kfree(pin->pg);
	kfree(pin->pgp);
	kfree(pin);
	return ret;
}
EXPORT_SYMBOL(nvidia_p2p_get_pages);

int nvidia_p2p_put_pages(uint64_t p2p_token, uint32_t va_space, uint64_t virtual_address,
			 struct nvidia_p2p_page_table *page_table)
{
	struct stub_pin *pin;

	if (!page_table)
		return 0;
	mutex_lock(&stub.lock);
	pin = stub_find_pin(page_table);
	if (!pin) {
		/* Already released by a callback: NVIDIA reports success. */
		mutex_unlock(&stub.lock);
		return 0;
	}
	if (pin->va != virtual_address) {
		stub_misuse("put_pages with another address than get_pages");
		mutex_unlock(&stub.lock);
		return -EINVAL;
	}
	if (pin->state == PIN_CB_RUNNING) {
		/* Like the resource manager's lock: wait the callback out. */
		kref_get(&pin->ref);
		mutex_unlock(&stub.lock);
		wait_for_completion(&pin->cb_done);
		stub_pin_put(pin);
		return 0;
	}
	stub_pin_release_locked(pin);
	stub.st.put_pages++;
	mutex_unlock(&stub.lock);
	stub_pin_put(pin);
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_put_pages);

int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table)
{
	struct stub_pin *pin;

	mutex_lock(&stub.lock);
	pin = stub_find_pin(page_table);
	if (!pin || pin->state != PIN_CB_RUNNING)
		stub_misuse("free_page_table outside the invalidation callback");
	else
		pin->pt_freed = true;
	mutex_unlock(&stub.lock);
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_free_page_table);

int nvidia_p2p_free_dma_mapping(struct nvidia_p2p_dma_mapping *dma_mapping)
{
	struct stub_map *map;
	bool found = false;

	mutex_lock(&stub.lock);
	list_for_each_entry(map, &stub.maps, gnode) {
		if (&map->m == dma_mapping) {
			found = true;
			break;
		}
	}
	if (!found || !map->pin || map->pin->state != PIN_CB_RUNNING) {
		stub_misuse("free_dma_mapping outside the invalidation callback");
	} else if (READ_ONCE(legacy_free)) {
		list_del(&map->node); /* freed here, by the client */
		list_del(&map->gnode);
		stub.st.mappings--;
		kfree(map->m.dma_addresses);
		kfree(map);
	} else {
		map->pin->maps_freed = true;
	}
	mutex_unlock(&stub.lock);
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_free_dma_mapping);

/*
 * callback_during_map: the free callback of @pt's pin, fired from a work
 * item while a dma_map_pages on it is in progress, as a cudaFree on another
 * CPU would.  Waits for one of two events: the callback returned, so the
 * page table was freed under the call (NVIDIA would use freed memory; here
 * it is misuse and -EINVAL), or the callback's thread sleeps, held off by
 * the client's lock (0: the mapping goes ahead, @raced set).
 */
struct stub_race {
	struct work_struct work;
	struct stub_pin *pin;
	struct task_struct *task; /* the worker, set before the callback runs */
	struct completion entered;
	refcount_t users;         /* the worker and the waiter */
};

static void stub_race_fn(struct work_struct *work)
{
	struct stub_race *r = container_of(work, struct stub_race, work);

	WRITE_ONCE(r->task, current);
	complete(&r->entered);
	stub_fire(r->pin);
	if (refcount_dec_and_test(&r->users))
		kfree(r);
}

static int stub_fire_during_map(struct nvidia_p2p_page_table *pt, bool *raced)
{
	unsigned long deadline = jiffies + 30 * HZ;
	struct stub_race *r;
	struct stub_pin *pin;
	bool returned = false;
	int ret = 0;

	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	mutex_lock(&stub.lock);
	pin = stub_find_pin(pt);
	if (!pin || pin->state != PIN_LIVE) {
		mutex_unlock(&stub.lock);
		kfree(r);
		return 0;
	}
	pin->state = PIN_CB_RUNNING;
	kref_get(&pin->ref); /* stub_fire's */
	kref_get(&pin->ref); /* ours, to watch cb_done */
	mutex_unlock(&stub.lock);

	INIT_WORK(&r->work, stub_race_fn);
	init_completion(&r->entered);
	refcount_set(&r->users, 2);
	r->pin = pin;
	queue_work(system_unbound_wq, &r->work);
	wait_for_completion(&r->entered);
	for (;;) {
		if (completion_done(&pin->cb_done)) {
			returned = true;
			break;
		}
		if (READ_ONCE(r->task->__state) == TASK_UNINTERRUPTIBLE)
			break;
		if (time_after(jiffies, deadline)) {
			pr_warn("nv_p2p_stub: callback_during_map: the callback neither returned nor blocked in 30 s\n");
			break;
		}
		usleep_range(50, 100);
	}
	if (returned) {
		mutex_lock(&stub.lock);
		stub_misuse("the free callback returned during dma_map_pages: the page table was freed under the call");
		mutex_unlock(&stub.lock);
		ret = -EINVAL;
	} else {
		*raced = true;
	}
	stub_pin_put(pin);
	if (refcount_dec_and_test(&r->users))
		kfree(r);
	return ret;
}

int nvidia_p2p_dma_map_pages(struct pci_dev *peer, struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **dma_mapping)
{
	struct stub_map *map;
	struct stub_pin *pin;
	bool raced = false;
	u32 i, n;
	int ret = 0;

	/* peer may be NULL: gpuasync.ko's emulated cards have no pci_dev. */
	if (!page_table || !dma_mapping)
		return -EINVAL;
	if (READ_ONCE(fail_dma_map) > 0) {
		WRITE_ONCE(fail_dma_map, fail_dma_map - 1);
		return -ENOMEM;
	}
	if (READ_ONCE(invalidate_on_map) > 0) {
		WRITE_ONCE(invalidate_on_map, invalidate_on_map - 1);
		mutex_lock(&stub.lock);
		pin = stub_find_pin(page_table);
		if (pin && pin->state == PIN_LIVE) {
			pin->state = PIN_CB_RUNNING;
			kref_get(&pin->ref);
			mutex_unlock(&stub.lock);
			stub_fire(pin); /* the memory went away meanwhile */
		} else {
			mutex_unlock(&stub.lock);
		}
	}
	if (READ_ONCE(callback_during_map) > 0) {
		WRITE_ONCE(callback_during_map, callback_during_map - 1);
		ret = stub_fire_during_map(page_table, &raced);
		if (ret)
			return ret;
	}
	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map)
		return -ENOMEM;

	mutex_lock(&stub.lock);
	pin = stub_find_pin(page_table);
	/* raced: the callback waits for the client, the memory is still there */
	if (!pin || (pin->state != PIN_LIVE && !(raced && pin->state == PIN_CB_RUNNING))) {
		ret = -EINVAL;
		goto out_unlock;
	}
	n = pin->pt.entries;
	map->pages = pin->pages;
	map->m.dma_addresses = kcalloc(n, sizeof(u64), GFP_KERNEL);
	if (!map->m.dma_addresses) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	for (i = 0; i < n; i++)
		map->m.dma_addresses[i] =
			stub.next_bus + (u64)(scatter ? n - 1 - i : i) * STUB_GPU_PAGE;
	/* Never reuse a bus address: a later DMA to it is recognisably stale. */
	stub.next_bus += (u64)n * STUB_GPU_PAGE + STUB_GPU_PAGE;
	map->m.version = NVIDIA_P2P_DMA_MAPPING_VERSION;
	map->m.page_size_type = NVIDIA_P2P_PAGE_SIZE_64KB;
	map->m.entries = n;
	map->m.pci_dev = peer;
	map->pin = pin;
	list_add_tail(&map->node, &pin->maps);
	list_add_tail(&map->gnode, &stub.maps);
	stub.st.mappings++;
	*dma_mapping = &map->m;
	if (READ_ONCE(invalidate_after_map) > 0) {
		/* The memory goes away now: the callback runs before the client
		 * has its mapping back; what we return is then already gone. */
		WRITE_ONCE(invalidate_after_map, invalidate_after_map - 1);
		pin->state = PIN_CB_RUNNING;
		kref_get(&pin->ref);
		mutex_unlock(&stub.lock);
		stub_fire(pin);
		return 0;
	}
	mutex_unlock(&stub.lock);
	return 0;

out_unlock:
	mutex_unlock(&stub.lock);
	kfree(map);
	return ret;
}
EXPORT_SYMBOL(nvidia_p2p_dma_map_pages);

int nvidia_p2p_dma_unmap_pages(struct pci_dev *peer, struct nvidia_p2p_page_table *page_table,
			       struct nvidia_p2p_dma_mapping *dma_mapping)
{
	struct stub_map *map;
	struct stub_pin *pin;

	mutex_lock(&stub.lock);
	pin = stub_find_pin(page_table);
	if (pin && READ_ONCE(reenter_unmap) && pin->state == PIN_LIVE) {
		/* A driver that tears the pin down from inside this call: the
		 * client's callback runs in the client's own thread.
		 */
		pin->state = PIN_CB_RUNNING;
		kref_get(&pin->ref);
		mutex_unlock(&stub.lock);
		stub_fire(pin);
		return 0;
	}
	if (!pin) {
		/* NVIDIA would dereference a freed page table here. */
		stub_misuse("dma_unmap_pages after the page table was released");
		mutex_unlock(&stub.lock);
		return -EINVAL;
	}
	list_for_each_entry(map, &pin->maps, node) {
		if (&map->m == dma_mapping) {
			list_del(&map->node);
			list_del(&map->gnode);
			stub.st.mappings--;
			mutex_unlock(&stub.lock);
			kfree(map->m.dma_addresses);
			kfree(map);
			return 0;
		}
	}
	/* Unlinked already (callback teardown racing): NVIDIA returns 0. */
	mutex_unlock(&stub.lock);
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_dma_unmap_pages);

/* ---- device DMA for the emulated card ----------------------------------- */

static struct stub_map *stub_find_bus(u64 bus, u32 *entry)
{
	struct stub_map *map;
	u32 i;

	list_for_each_entry(map, &stub.maps, gnode)
		for (i = 0; i < map->m.entries; i++)
			if (bus >= map->m.dma_addresses[i] &&
			    bus < map->m.dma_addresses[i] + STUB_GPU_PAGE) {
				*entry = i;
				return map;
			}
	return NULL;
}

int nv_p2p_stub_dma(u64 bus, void *buf, u32 len, bool to_bus)
{
	int ret = 0;

	mutex_lock(&stub.lock);
	while (len) {
		struct stub_map *map;
		struct page *page;
		u32 entry, off, chunk;
		void *va;

		map = stub_find_bus(bus, &entry);
		if (!map) {
			if (bus >= STUB_BUS_BASE && bus < stub.next_bus) {
				stub.st.stale_dma++;
				pr_warn_ratelimited("nv_p2p_stub: DMA to stale bus address %#llx\n",
						    bus);
			}
			ret = -EFAULT;
			break;
		}
		off = bus - map->m.dma_addresses[entry];
		page = map->pages[entry * STUB_PAGES_PER_GPU_PAGE + off / PAGE_SIZE];
		chunk = min_t(u32, len, PAGE_SIZE - off % PAGE_SIZE);
		va = kmap_local_page(page);
		if (to_bus)
			ga_dma_put(va + off % PAGE_SIZE, buf, chunk);
		else
			memcpy(buf, va + off % PAGE_SIZE, chunk);
		kunmap_local(va);
		bus += chunk;
		buf += chunk;
		len -= chunk;
	}
	mutex_unlock(&stub.lock);
	return ret;
}
EXPORT_SYMBOL_GPL(nv_p2p_stub_dma);

/* ---- dma-buf export ------------------------------------------------------ */

/*
 * An importer maps the export: fresh fake bus addresses for its 64 KiB
 * pages, in an sg_table without struct pages (peer memory, as a GPU's
 * BAR), findable by nv_p2p_stub_dma like nvidia_p2p mappings.
 */
static struct sg_table *stub_dmabuf_map(struct dma_buf_attachment *at, enum dma_data_direction dir)
{
	struct stub_export *x = at->dmabuf->priv;
	u32 n = x->len / STUB_GPU_PAGE, i;
	struct scatterlist *sg;
	struct stub_map *map;
	int ret = -ENOMEM;

	if (x->dynamic)
		dma_resv_assert_held(at->dmabuf->resv);
	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map)
		return ERR_PTR(-ENOMEM);
	map->sgt = kzalloc(sizeof(*map->sgt), GFP_KERNEL);
	map->m.dma_addresses = kcalloc(n, sizeof(u64), GFP_KERNEL);
	if (!map->sgt || !map->m.dma_addresses || sg_alloc_table(map->sgt, n, GFP_KERNEL))
		goto out_free;

	mutex_lock(&stub.lock);
	if (x->revoked) {
		mutex_unlock(&stub.lock);
		ret = -ENODEV;
		sg_free_table(map->sgt);
		goto out_free;
	}
	for_each_sgtable_sg(map->sgt, sg, i) {
		map->m.dma_addresses[i] =
			stub.next_bus + (u64)(scatter ? n - 1 - i : i) * STUB_GPU_PAGE;
		sg_dma_address(sg) = map->m.dma_addresses[i];
		sg_dma_len(sg) = STUB_GPU_PAGE;
	}
	stub.next_bus += (u64)n * STUB_GPU_PAGE + STUB_GPU_PAGE;
	map->m.entries = n;
	map->pages = x->region->pages + x->first;
	list_add_tail(&map->node, &x->maps);
	list_add_tail(&map->gnode, &stub.maps);
	stub.st.mappings++;
	mutex_unlock(&stub.lock);
	return map->sgt;

out_free:
	kfree(map->m.dma_addresses);
	kfree(map->sgt);
	kfree(map);
	return ERR_PTR(ret);
}

static void stub_dmabuf_unmap(struct dma_buf_attachment *at, struct sg_table *sgt,
			      enum dma_data_direction dir)
{
	struct stub_export *x = at->dmabuf->priv;
	struct stub_map *map, *found = NULL;

	mutex_lock(&stub.lock);
	list_for_each_entry(map, &x->maps, node)
		if (map->sgt == sgt)
			found = map;
	if (!found) {
		stub_misuse("dma-buf unmap of a mapping never handed out");
		mutex_unlock(&stub.lock);
		return;
	}
	list_del(&found->node);
	list_del_init(&found->gnode);
	stub.st.mappings--;
	mutex_unlock(&stub.lock);
	sg_free_table(found->sgt);
	kfree(found->sgt);
	kfree(found->m.dma_addresses);
	kfree(found);
}

static int stub_dmabuf_attach(struct dma_buf *d, struct dma_buf_attachment *at)
{
	/* Fake bus addresses are peer memory: only an importer that takes
	 * addresses without pages may have them.
	 */
	if (!at->peer2peer)
		return -EOPNOTSUPP;
	if (READ_ONCE(fail_dmabuf_attach) > 0) {
		WRITE_ONCE(fail_dmabuf_attach, fail_dmabuf_attach - 1);
		return -ENOTSUPP;
	}
	return 0;
}

/* Dynamic exports: a pin only promises not to move the memory. */
static int stub_dmabuf_pin(struct dma_buf_attachment *at)
{
	return 0;
}

static void stub_dmabuf_unpin(struct dma_buf_attachment *at)
{
}

static void stub_dmabuf_release(struct dma_buf *d)
{
	struct stub_export *x = d->priv;

	mutex_lock(&stub.lock);
	if (!list_empty(&x->maps))
		stub_misuse("dma-buf released with mappings");
	list_del(&x->node);
	stub.st.dmabufs--;
	stub_region_put_locked(x->region);
	mutex_unlock(&stub.lock);
	kfree(x);
}

static const struct dma_buf_ops stub_dmabuf_static_ops = {
	.attach = stub_dmabuf_attach,
	.map_dma_buf = stub_dmabuf_map,
	.unmap_dma_buf = stub_dmabuf_unmap,
	.release = stub_dmabuf_release,
};

static const struct dma_buf_ops stub_dmabuf_dynamic_ops = {
	.attach = stub_dmabuf_attach,
	.pin = stub_dmabuf_pin,
	.unpin = stub_dmabuf_unpin,
	.map_dma_buf = stub_dmabuf_map,
	.unmap_dma_buf = stub_dmabuf_unmap,
	.release = stub_dmabuf_release,
};

/* A reference to the dma-buf of @x unless it is already on its way out. */
static bool stub_export_get(struct stub_export *x)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
	return file_ref_get(&x->dmabuf->file->f_ref);
#else
	return atomic_long_inc_not_zero(&x->dmabuf->file->f_count);
#endif
}

/*
 * The memory of the dynamic exports of @r (of those overlapping
 * [va, va + len) when @r is NULL) moves: each importer hears move_notify,
 * and whatever mapping is left is taken back, so DMA to it is stale.
 * @revoke: the memory is gone for good (freed): no new mappings.  Returns
 * how many dma-bufs moved.
 */
static int stub_move_exports(struct stub_region *r, u64 va, u64 len, bool revoke)
{
	struct stub_export *x, *todo;
	struct stub_map *map;
	int total = 0;
	u64 pass;

	mutex_lock(&stub.lock);
	pass = ++stub.move_pass;
	mutex_unlock(&stub.lock);
	for (;;) {
		todo = NULL;
		mutex_lock(&stub.lock);
		list_for_each_entry(x, &stub.exports, node) {
			u64 xva = x->region->va + ((u64)x->first << PAGE_SHIFT);

			if (!x->dynamic || x->revoked || x->pass == pass)
				continue;
			if (r ? x->region != r : (xva >= va + len || xva + x->len <= va))
				continue;
			if (!stub_export_get(x))
				continue;
			x->pass = pass;
			todo = x;
			break;
		}
		mutex_unlock(&stub.lock);
		if (!todo)
			return total;
		dma_resv_lock(todo->dmabuf->resv, NULL);
		dma_buf_move_notify(todo->dmabuf);
		mutex_lock(&stub.lock);
		stub.st.moves++;
		list_for_each_entry(map, &todo->maps, node)
			list_del_init(&map->gnode);
		if (revoke)
			todo->revoked = true;
		mutex_unlock(&stub.lock);
		dma_resv_unlock(todo->dmabuf->resv);
		dma_buf_put(todo->dmabuf);
		total++;
	}
}

/* ---- /dev/nv_p2p_stub ---------------------------------------------------- */

/*
 * A region of @size bytes (rounded up to 64 KiB) for @file, on @list: with
 * a fake GPU VA when @gpu_va (NVSTUB_ALLOC), none for a reservation of
 * /dev/nvidia_p2p_stub_mem, which user space reaches only through mmap.
 */
static struct stub_region *stub_region_new(struct file *file, u64 size, struct list_head *list,
					   bool gpu_va)
{
	struct stub_region *r;
	unsigned long i, n;
	int ret;

	if (!size || size > (u64)max_region_mb << 20)
		return ERR_PTR(-EINVAL);
	size = ALIGN(size, STUB_GPU_PAGE);
	n = size >> PAGE_SHIFT;

	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return ERR_PTR(-ENOMEM);
	r->pages = kvcalloc(n, sizeof(*r->pages), GFP_KERNEL);
	if (!r->pages) {
		ret = -ENOMEM;
		goto out_free;
	}
	/* Physically contiguous 64 KiB GPU pages, split so mmap can map them. */
	for (i = 0; i < n; i += STUB_PAGES_PER_GPU_PAGE) {
		struct page *p = alloc_pages(GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN,
					     get_order(STUB_GPU_PAGE));
		unsigned long k;

		if (!p) {
			ret = -ENOMEM;
			goto out_free;
		}
		split_page(p, get_order(STUB_GPU_PAGE));
		for (k = 0; k < STUB_PAGES_PER_GPU_PAGE; k++)
			r->pages[i + k] = p + k;
	}
	kref_init(&r->ref);
	r->npages = n;
	r->size = size;
	r->owner = file;

	mutex_lock(&stub.lock);
	if (stub.total_pages + n > ((unsigned long)max_total_mb << 20) >> PAGE_SHIFT) {
		mutex_unlock(&stub.lock);
		ret = -ENOMEM;
		goto out_free;
	}
	stub.total_pages += n;
	if (gpu_va) {
		r->va = stub.next_va;
		stub.next_va += size + STUB_GPU_PAGE;
	}
	r->id = ++stub.next_id;
	list_add_tail(&r->node, list);
	stub.st.regions++;
	mutex_unlock(&stub.lock);
	return r;

out_free:
	if (r->pages)
		for (i = 0; i < n; i++)
			if (r->pages[i])
				put_page(r->pages[i]);
	kvfree(r->pages);
	kfree(r);
	return ERR_PTR(ret);
}

static int stub_alloc(struct file *file, struct nvstub_alloc __user *uarg)
{
	struct nvstub_alloc a;
	struct stub_region *r;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	r = stub_region_new(file, a.size, &stub.regions, true);
	if (IS_ERR(r))
		return PTR_ERR(r);
	a.size = r->size;
	a.gpu_va = r->va;
	a.mmap_offset = (u64)r->id << STUB_MMAP_SHIFT;
	if (copy_to_user(uarg, &a, sizeof(a))) {
		/* The region stays with the file and goes away at close. */
		return -EFAULT;
	}
	return 0;
}

/* The region of @file containing @va, or NULL.  Prerequisite: stub.lock. */
static struct stub_region *stub_file_region(struct file *file, u64 va)
{
	struct stub_region *r;

	list_for_each_entry(r, &stub.regions, node)
		if (r->owner == file && va >= r->va && va < r->va + r->size)
			return r;
	return NULL;
}

/* cuMemGetHandleForAddressRange(..DMA_BUF_FD..) for a range of a region. */
static int stub_export(struct file *file, struct nvstub_export __user *uarg)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct stub_region *r;
	struct stub_export *x;
	struct nvstub_export a;
	struct dma_buf *d;
	int fd;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags)
		return -EINVAL;
	x = kzalloc(sizeof(*x), GFP_KERNEL);
	if (!x)
		return -ENOMEM;
	INIT_LIST_HEAD(&x->maps);
	x->dynamic = READ_ONCE(dmabuf_dynamic);

	mutex_lock(&stub.lock);
	r = stub_file_region(file, a.va);
	if (r && !a.len)
		a.len = r->va + r->size - a.va;
	if (!r || (a.va - r->va) % STUB_GPU_PAGE || !a.len || a.len % STUB_GPU_PAGE ||
	    a.len > r->va + r->size - a.va) {
		mutex_unlock(&stub.lock);
		kfree(x);
		return -EINVAL;
	}
	kref_get(&r->ref);
	x->region = r;
	x->first = (a.va - r->va) >> PAGE_SHIFT;
	x->len = a.len;
	mutex_unlock(&stub.lock);

	info.ops = x->dynamic ? &stub_dmabuf_dynamic_ops : &stub_dmabuf_static_ops;
	info.size = x->len;
	info.flags = O_RDWR;
	info.priv = x;
	d = dma_buf_export(&info);
	if (IS_ERR(d)) {
		mutex_lock(&stub.lock);
		stub_region_put_locked(r);
		mutex_unlock(&stub.lock);
		kfree(x);
		return PTR_ERR(d);
	}
	mutex_lock(&stub.lock);
	x->dmabuf = d;
	list_add_tail(&x->node, &stub.exports);
	stub.st.dmabufs++;
	mutex_unlock(&stub.lock);

	/* From here the dma-buf's release frees x. */
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(d);
		return fd;
	}
	a.fd = fd;
	if (copy_to_user(uarg, &a, sizeof(a))) {
		put_unused_fd(fd);
		dma_buf_put(d);
		return -EFAULT;
	}
	fd_install(fd, d->file);
	return 0;
}

/*
 * cudaFree: the region leaves the file, every pin on it is invalidated and
 * its dynamic dma-bufs revoked; static ones keep the memory alive.
 */
static void stub_free_region(struct stub_region *r)
{
	stub_invalidate(r, 0, 0);
	stub_move_exports(r, 0, 0, true);
	mutex_lock(&stub.lock);
	stub_region_put_locked(r);
	mutex_unlock(&stub.lock);
}

static long stub_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *argp = (void __user *)arg;
	struct nvstub_range rg;
	struct stub_region *r;
	int ret;

	switch (cmd) {
	case NVSTUB_ALLOC:
		return stub_alloc(file, argp);
	case NVSTUB_FREE:
		if (copy_from_user(&rg, argp, sizeof(rg)))
			return -EFAULT;
		mutex_lock(&stub.lock);
		r = stub_file_region(file, rg.va);
		if (r)
			r->owner = NULL; /* no new pins, no second free */
		mutex_unlock(&stub.lock);
		if (!r)
			return -EINVAL;
		stub_free_region(r);
		return 0;
	case NVSTUB_INVALIDATE:
		if (copy_from_user(&rg, argp, sizeof(rg)))
			return -EFAULT;
		if (rg.len == 0) {
			mutex_lock(&stub.lock);
			r = stub_file_region(file, rg.va);
			if (r) {
				rg.va = r->va;
				rg.len = r->size;
			}
			mutex_unlock(&stub.lock);
			if (!r)
				return -EINVAL;
		}
		if (rg.va + rg.len < rg.va)
			return -EINVAL;
		ret = stub_invalidate(NULL, rg.va, rg.len);
		return ret + stub_move_exports(NULL, rg.va, rg.len, false);
	case NVSTUB_EXPORT_DMABUF:
		return stub_export(file, argp);
	case NVSTUB_STATS: {
		struct nvstub_stats st;

		mutex_lock(&stub.lock);
		st = stub.st;
		mutex_unlock(&stub.lock);
		return copy_to_user(argp, &st, sizeof(st)) ? -EFAULT : 0;
	}
	default:
		return -ENOTTY;
	}
}

/* Map pages @first.. of @file's region @id on @list into @vma. */
static int stub_map_region(struct file *file, struct vm_area_struct *vma, struct list_head *list,
			   unsigned long id, unsigned long first)
{
	unsigned long n = vma_pages(vma), i;
	struct stub_region *r, *found = NULL;
	int ret = 0;

	mutex_lock(&stub.lock);
	list_for_each_entry(r, list, node)
		if (r->owner == file && r->id == id)
			found = r;
	if (!found || first + n > found->npages) {
		mutex_unlock(&stub.lock);
		return -EINVAL;
	}
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
#endif
	/* The mapping holds its own page references: a later free is safe. */
	for (i = 0; i < n && !ret; i++)
		ret = vm_insert_page(vma, vma->vm_start + i * PAGE_SIZE, found->pages[first + i]);
	mutex_unlock(&stub.lock);
	return ret;
}

static int stub_mmap(struct file *file, struct vm_area_struct *vma)
{
	return stub_map_region(file, vma, &stub.regions,
			       vma->vm_pgoff >> (STUB_MMAP_SHIFT - PAGE_SHIFT),
			       vma->vm_pgoff & ((1UL << (STUB_MMAP_SHIFT - PAGE_SHIFT)) - 1));
}

static int stub_release(struct inode *inode, struct file *file)
{
	struct stub_region *r;

	for (;;) {
		mutex_lock(&stub.lock);
		r = NULL;
		list_for_each_entry(r, &stub.regions, node)
			if (r->owner == file)
				break;
		if (list_entry_is_head(r, &stub.regions, node)) {
			mutex_unlock(&stub.lock);
			break;
		}
		r->owner = NULL;
		mutex_unlock(&stub.lock);
		stub_free_region(r);
	}
	return 0;
}

static const struct file_operations stub_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = stub_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = stub_mmap,
	.release = stub_release,
	.llseek = noop_llseek,
};

static struct miscdevice stub_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "nv_p2p_stub",
	.fops = &stub_fops,
	.mode = 0666,
};

/* ---- /dev/nvidia_p2p_stub_mem --------------------------------------------- */

/*
 * The node upstream's GPU tools (rdmaTestEmu, dmaGpuToggleTest, 7.5's
 * dmaGpuIoctlTest) take their "GPU memory" from: STUB_RESERVE_BUF sets
 * pages aside, mmap at offset buf_id pages maps them, closing the file
 * drops them.  What the tools then register is ordinary memory of their
 * process to nvidia_p2p_get_pages, which pins it as host memory; the pins
 * keep their own page references, so the order of close, munmap and
 * GPU_Rem_Nvidia_Memory does not matter.
 */
static long stub_mem_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct stub_reserve_req req;
	struct stub_region *r;

	if (cmd != STUB_RESERVE_BUF)
		return -ENOTTY;
	if (copy_from_user(&req, (void __user *)arg, sizeof(req)))
		return -EFAULT;
	r = stub_region_new(file, req.size, &stub.reserved, false);
	if (IS_ERR(r))
		return PTR_ERR(r);
	req.buf_id = r->id;
	return copy_to_user((void __user *)arg, &req, sizeof(req)) ? -EFAULT : 0;
}

static int stub_mem_mmap(struct file *file, struct vm_area_struct *vma)
{
	return stub_map_region(file, vma, &stub.reserved, vma->vm_pgoff, 0);
}

static int stub_mem_release(struct inode *inode, struct file *file)
{
	struct stub_region *r, *tmp;

	mutex_lock(&stub.lock);
	list_for_each_entry_safe(r, tmp, &stub.reserved, node)
		if (r->owner == file)
			stub_region_put_locked(r);
	mutex_unlock(&stub.lock);
	return 0;
}

static const struct file_operations stub_mem_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = stub_mem_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = stub_mem_mmap,
	.release = stub_mem_release,
	.llseek = noop_llseek,
};

static struct miscdevice stub_mem_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "nvidia_p2p_stub_mem",
	.fops = &stub_mem_fops,
	.mode = 0600, /* as upstream's */
};

/* ---- the GPU fixture (gpus=) --------------------------------------------- */

#define STUB_MAX_GPUS 16
static struct proc_dir_entry *stub_proc_nvidia;
/* The listed addresses; a GPU's device minor is its index here. */
static char stub_gpu_addr[STUB_MAX_GPUS][32];

static int stub_gpu_info_show(struct seq_file *m, void *v)
{
	const char *addr = m->private;

	seq_puts(m, "Model: \t\t nv_p2p_stub stand-in GPU\n");
	seq_puts(m, "Bus Type: \t PCIe\n");
	seq_printf(m, "Bus Location: \t %s\n", addr);
	seq_printf(m, "Device Minor: \t %ld\n", (long)((addr - stub_gpu_addr[0]) /
							sizeof(stub_gpu_addr[0])));
	seq_puts(m, "GPU Excluded:\t No\n");
	return 0;
}

static void stub_gpus_remove(void)
{
	proc_remove(stub_proc_nvidia);
	stub_proc_nvidia = NULL;
}

/* Not fatal: a fixture that cannot be made is logged, the stub loads. */
static void stub_gpus_publish(void)
{
	struct proc_dir_entry *dir, *gpu;
	const char *p = gpus;
	unsigned int n = 0;
	size_t len;

	if (!gpus || !*gpus)
		return;
	stub_proc_nvidia = proc_mkdir("driver/nvidia", NULL);
	dir = stub_proc_nvidia ? proc_mkdir("gpus", stub_proc_nvidia) : NULL;
	if (!dir) {
		pr_warn("nv_p2p_stub: gpus=%s: cannot make /proc/driver/nvidia/gpus\n", gpus);
		stub_gpus_remove();
		return;
	}
	while (*p && n < STUB_MAX_GPUS) {
		len = strcspn(p, ",");
		if (len && len < sizeof(stub_gpu_addr[0])) {
			memcpy(stub_gpu_addr[n], p, len);
			stub_gpu_addr[n][len] = '\0';
			gpu = proc_mkdir(stub_gpu_addr[n], dir);
			if (!gpu || !proc_create_single_data("information", 0444, gpu,
							     stub_gpu_info_show, stub_gpu_addr[n]))
				pr_warn("nv_p2p_stub: no /proc/driver/nvidia/gpus/%s/information\n",
					stub_gpu_addr[n]);
			n++;
		}
		p += len;
		if (*p == ',')
			p++;
	}
}

/* ---- init/exit ----------------------------------------------------------- */

static int __init stub_init(void)
{
	int ret;

	mutex_init(&stub.lock);
	INIT_LIST_HEAD(&stub.regions);
	INIT_LIST_HEAD(&stub.pins);
	INIT_LIST_HEAD(&stub.maps);
	INIT_LIST_HEAD(&stub.reserved);
	INIT_LIST_HEAD(&stub.exports);
	stub.next_va = STUB_VA_BASE;
	stub.next_bus = STUB_BUS_BASE;
	ret = misc_register(&stub_misc);
	if (ret)
		return ret;
	ret = misc_register(&stub_mem_misc);
	if (ret) {
		misc_deregister(&stub_misc);
		return ret;
	}
	stub_gpus_publish();
	return 0;
}

static void __exit stub_exit(void)
{
	stub_gpus_remove();
	misc_deregister(&stub_mem_misc);
	misc_deregister(&stub_misc);
	/* Clients depend on our symbols, so they are gone: nothing may remain. */
	WARN(!list_empty(&stub.pins), "nv_p2p_stub: %llu pins leaked by a client\n",
	     stub.st.pins);
	WARN(!list_empty(&stub.regions) || !list_empty(&stub.reserved),
	     "nv_p2p_stub: regions left at exit\n");
}

module_init(stub_init);
module_exit(stub_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Stand-in for NVIDIA's nvidia_p2p_* symbols, backed by system memory");
