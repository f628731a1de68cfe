/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The NVIDIA peer-to-peer (GPUDirect RDMA) kernel interface, as declared
 * by NVIDIA's nv-p2p.h, for building gpuasync.ko without NVIDIA's sources.
 *
 * Only what gpuasync.ko calls is declared, with the same names, argument
 * order, struct layouts and version constants, so the module builds the
 * same way against this file (stand-in module nv_p2p_stub.ko) and against
 * the real header (make NVIDIA_SRC=...).  Written from NVIDIA's public
 * documentation of the interface ("Developing a Linux Kernel Module using
 * GPUDirect RDMA").
 */
#ifndef GA_NV_P2P_STUB_API_H
#define GA_NV_P2P_STUB_API_H

#include <linux/types.h>

struct pci_dev;

/* GPU page sizes a page table can describe. */
enum nvidia_p2p_page_size_type {
	NVIDIA_P2P_PAGE_SIZE_4KB = 0,
	NVIDIA_P2P_PAGE_SIZE_64KB,
	NVIDIA_P2P_PAGE_SIZE_128KB,
	NVIDIA_P2P_PAGE_SIZE_COUNT
};

/* One GPU page: its BAR1 physical address (plus legacy mailbox words). */
typedef struct nvidia_p2p_page {
	uint64_t physical_address;
	union nvidia_p2p_request_registers {
		struct {
			uint32_t wreqmb_h;
			uint32_t rreqmb_h;
			uint32_t rreqmb_0;
			uint32_t reserved[3];
		} fermi;
	} registers;
} nvidia_p2p_page_t;

/* A structure is usable when its major version (upper 16 bits) matches
 * and its minor version is at least the one compiled against.
 */
#define NVIDIA_P2P_VERSION_COMPATIBLE(p, v)                                                        \
	((((p)->version) >> 16) == ((v) >> 16) && (((p)->version) & 0xffff) >= ((v) & 0xffff))

#define NVIDIA_P2P_PAGE_TABLE_VERSION 0x00010002
#define NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(p)                                                \
	NVIDIA_P2P_VERSION_COMPATIBLE(p, NVIDIA_P2P_PAGE_TABLE_VERSION)

/* Newer drivers append fields (flags); the driver reads only these. */
typedef struct nvidia_p2p_page_table {
	uint32_t version;
	uint32_t page_size; /* enum nvidia_p2p_page_size_type */
	struct nvidia_p2p_page **pages;
	uint32_t entries;
	uint8_t *gpu_uuid;
} nvidia_p2p_page_table_t;

#define NVIDIA_P2P_DMA_MAPPING_VERSION 0x00020003
#define NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE(p)                                               \
	NVIDIA_P2P_VERSION_COMPATIBLE(p, NVIDIA_P2P_DMA_MAPPING_VERSION)

typedef struct nvidia_p2p_dma_mapping {
	uint32_t version;
	enum nvidia_p2p_page_size_type page_size_type;
	uint32_t entries;
	uint64_t *dma_addresses;
	void *private;
	struct pci_dev *pci_dev;
} nvidia_p2p_dma_mapping_t;

/*
 * Pin @length bytes of GPU memory at @virtual_address (both 64 KiB aligned).
 * @free_callback(@data) runs when the memory goes away before put_pages; it
 * must stop all DMA and may only call nvidia_p2p_free_dma_mapping() and
 * nvidia_p2p_free_page_table().  @p2p_token and @va_space must be 0.
 */
int nvidia_p2p_get_pages(uint64_t p2p_token, uint32_t va_space, uint64_t virtual_address,
			 uint64_t length, struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data);
/* Normal-path release; waits for a callback in flight; an already
 * invalidated page table is not an error worth acting on.
 */
int nvidia_p2p_put_pages(uint64_t p2p_token, uint32_t va_space, uint64_t virtual_address,
			 struct nvidia_p2p_page_table *page_table);
/* In-callback releases. */
int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_free_dma_mapping(struct nvidia_p2p_dma_mapping *dma_mapping);
/* Bus addresses of the pages as seen by @peer. */
int nvidia_p2p_dma_map_pages(struct pci_dev *peer, struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **dma_mapping);
int nvidia_p2p_dma_unmap_pages(struct pci_dev *peer, struct nvidia_p2p_page_table *page_table,
			       struct nvidia_p2p_dma_mapping *dma_mapping);

#endif /* GA_NV_P2P_STUB_API_H */
