// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ga_buf_info_all: the infos of every buffer of a direction with one
 * batched header read where the memory layer offers one (GPU memory: one
 * copy instead of one per buffer), falling back to one read each.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf_internal.h"

/*
 * The headers of the @n buffers in @bufs into @raw (8 bytes each) and
 * each read's result into @rcs: one batched read where the memory layer
 * has one.  When the batch fails as a whole, each header is read on its
 * own, so one bad buffer reads as it would through ga_buf_info.
 * dev->lock held.
 */
static void read_headers_locked(struct ga_dev *dev, struct ga_buf *const *bufs, unsigned int n,
				uint8_t (*raw)[8], int *rcs)
{
	if (dev->mem->read_many) {
		const struct ga_mem_block **blks = malloc((n ? n : 1) * sizeof(*blks));

		if (blks) {
			int rc;

			for (unsigned int i = 0; i < n; i++)
				blks[i] = &bufs[i]->mem;
			rc = dev->mem->read_many(dev->mem_ctx, blks, n, 0, raw, 8);
			free(blks);
			if (rc == 0) {
				memset(rcs, 0, n * sizeof(*rcs));
				return;
			}
		}
	}
	for (unsigned int i = 0; i < n; i++)
		rcs[i] = buf_mem_read(bufs[i], 0, raw[i], 8);
}

int ga_buf_info_all(struct ga_dev *dev, enum ga_dir dir, struct ga_buf_info *out, unsigned int cap,
		    unsigned int *count)
{
	struct ga_buf *rd[GA_MAX_BUFFERS];
	unsigned int total, n, nrd = 0;
	uint8_t(*raw)[8] = NULL;
	int *rcs = NULL;

	if (!dev || !count || (cap && !out))
		return ga_err(-EINVAL, "ga_buf_info_all: NULL argument");
	if (!dir_valid(dir))
		return ga_err(-EINVAL, "ga_buf_info_all: bad direction %d", (int)dir);
	pthread_mutex_lock(&dev->lock);
	buf_check_registration_locked(dev);
	total = dev->nbufs[dir];
	n = total < cap ? total : cap;
	for (unsigned int i = 0; i < n; i++)
		if (dev->bufs[dir][i] && buf_state_needs_header(dev->bufs[dir][i]))
			rd[nrd++] = dev->bufs[dir][i];
	if (nrd) {
		raw = calloc(nrd, sizeof(*raw));
		rcs = calloc(nrd, sizeof(*rcs));
		if (!raw || !rcs) {
			pthread_mutex_unlock(&dev->lock);
			free(raw);
			free(rcs);
			return ga_err(-ENOMEM, "ga_buf_info_all: out of memory");
		}
		read_headers_locked(dev, rd, nrd, raw, rcs);
	}
	for (unsigned int i = 0, k = 0; i < n; i++) {
		struct ga_buf *b = dev->bufs[dir][i];
		static const uint8_t none[8];

		if (!b) { /* not expected: indices are dense under the lock */
			memset(&out[i], 0, sizeof(out[i]));
			out[i].dir = dir;
			out[i].index = i;
			out[i].state = GA_BUF_ERROR;
			continue;
		}
		buf_info_fill_locked(b, &out[i]);
		if (k < nrd && rd[k] == b) {
			out[i].state = buf_state_from_header_locked(b, raw[k], rcs[k]);
			k++;
		} else {
			out[i].state = buf_state_from_header_locked(b, none, 0);
		}
	}
	*count = total;
	pthread_mutex_unlock(&dev->lock);
	free(raw);
	free(rcs);
	return 0;
}
