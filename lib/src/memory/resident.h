/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The resident delivery kernel's mailbox (fill.cu ga_deliver; host side in
 * mem_cuda_resident.c): pinned host memory that the kernel polls, so that
 * the simulated card's small frames reach GPU memory with no CUDA call per
 * frame, as a real card's DMA makes none.
 *
 * A batch goes into slot seq % RES_SLOTS as 16-byte chunks.  Each chunk
 * holds 12 bytes of the batch and, in its last word, the batch's tag
 * (seq + 1): the host writes a chunk with one 16-byte store and the GPU
 * reads it with one 16-byte load, so a chunk whose tag matches holds this
 * batch's bytes, whatever order the reads crossed PCIe in.  That spares
 * the kernel a second read after it sees the doorbell.
 *
 * The batch's bytes: a header (jobs, descriptors, 0), the jobs (struct
 * fill_job: patterns and copies), then the descriptors (address, value:
 * 8-byte stores made after every job's bytes are in memory).  The kernel
 * writes done = seq + 1 after the descriptors; the host sets stop to have
 * it return once no batch is waiting, and it reports its work as it does.
 *
 * Included by C (the host) and by CUDA (fill.cu): plain types only.
 */
#ifndef GA_MEM_RESIDENT_H
#define GA_MEM_RESIDENT_H

#define RES_SLOTS      64u
#define RES_JOBS       32u /* WB_COPIES */
#define RES_DESCS      64u /* WB_DESCS */
#define RES_JOB_BYTES  32u /* sizeof(struct fill_job) */
#define RES_DESC_BYTES 16u
#define RES_HDR_BYTES  12u
#define RES_CHUNK_DATA 12u
/* Chunks of the largest batch: header, jobs and descriptors, 12 bytes each. */
#define RES_CHUNKS                                                                                 \
	((RES_HDR_BYTES + RES_JOBS * RES_JOB_BYTES + RES_DESCS * RES_DESC_BYTES + RES_CHUNK_DATA - \
	  1) /                                                                                     \
	 RES_CHUNK_DATA)
/* Chunks the kernel reads at every look: a batch of one frame and its
 * descriptor fits, so it is seen and read in one PCIe round trip. */
#define RES_LOOK 8u

/* The number of chunks a batch of @nj jobs and @nd descriptors takes. */
#define RES_BATCH_CHUNKS(nj, nd)                                                                   \
	((RES_HDR_BYTES + (nj)*RES_JOB_BYTES + (nd)*RES_DESC_BYTES + RES_CHUNK_DATA - 1) /         \
	 RES_CHUNK_DATA)

struct res_chunk {
	unsigned int w[4]; /* w[0..2]: data, w[3]: tag */
};

struct res_box {
	struct res_chunk slot[RES_SLOTS][RES_CHUNKS];
	/* Each on a line of its own: the GPU writes one, the host the other. */
	unsigned long long done;
	unsigned long long pad0[15];
	unsigned int stop;
	unsigned int pad1[31];
	/* Written by the kernel as it returns (for gpuasync-resident-rt):
	 * from seeing each batch to its descriptors' stores, in %globaltimer
	 * ns, summed over the batches it did. */
	unsigned long long work_ns, work_batches;
	unsigned long long pad2[14];
};

#endif
