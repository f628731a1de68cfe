// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * gpuasyncfs --check [options] [DEVICE]: the platform doctor
 * (gpuasync/platform.h) on this machine, one verdict line per check, no
 * mount.  Exit status: 0 when GPUDirect is expected to work (no FAIL;
 * WARN lines may remain), 1 when it is not, 2 for bad arguments.
 *
 *     $ gpuasyncfs --check /dev/datadev_0
 *     OK   card: 0000:01:00.0 (1a4a:2030), driver datadev as datadev_0. Why: ...
 *     FAIL acs: bridges between ...: 0000:02:08.0: ACS ctrl 0x001d, P2P redirect ON; ...
 *     ...
 *     GPUDirect: not expected to work (1 FAIL, 2 WARN)
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <gpuasync/parse.h>
#include <gpuasync/platform.h>

#include "fs.h"

static void check_usage(FILE *f)
{
	fprintf(f,
		"usage: gpuasyncfs --check [options] [DEVICE]\n"
		"\n"
		"Will GPUDirect from the card into the GPU work on this machine?  One line per\n"
		"check: OK, WARN or FAIL, what was found, why it matters, what to do.\n"
		"\n"
		"    DEVICE                the card: /dev/datadev_N, /dev/gpuasync_N or a PCI\n"
		"                          address (default: the first card found)\n"
		"    --gpu BDF[,BDF...]    the GPUs (default: every NVIDIA GPU on the bus)\n"
		"    --buffers SIZE        GPU memory the buffers will pin (e.g. 2G), for BAR1\n"
		"    --cpus LIST           CPUs the daemon will run on (default: this process's)\n"
		"    --root DIR            read DIR/sys, DIR/proc, ... instead of / (tests)\n"
		"    --no-open             do not open the card (skips the stale-address check)\n"
		"    --list                the checks and why each matters (markdown)\n"
		"\n"
		"Exit status: 0 expected to work (WARN lines may remain), 1 not expected to\n"
		"work (a FAIL line), 2 bad arguments.  docs/platform.md explains each check.\n");
}

int fs_check_main(int argc, char **argv)
{
	struct ga_platform_opts o = GA_PLATFORM_OPTS_DEFAULT;
	static struct ga_check_result res[GA_CHECK_COUNT];
	int n[3] = {0}, worst;
	char line[2048];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			check_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--list")) {
			/* The checks as docs/platform.md lists them (regenerated from here). */
			for (int k = 0; k < GA_CHECK_COUNT; k++) {
				const struct ga_check_info *ci = ga_check_info(k);

				printf("### `%s`: %s\n\n%c%s.\n\nVerdicts: %s.\n\n", ci->name,
				       ci->title, toupper((unsigned char)ci->why[0]), ci->why + 1,
				       ci->fixes);
			}
			return 0;
		} else if (!strcmp(a, "--no-open")) {
			o.open_device = 0;
		} else if ((!strcmp(a, "--gpu") || !strcmp(a, "--root") || !strcmp(a, "--cpus") ||
			    !strcmp(a, "--buffers")) &&
			   val) {
			i++;
			if (!strcmp(a, "--gpu"))
				o.gpus = val;
			else if (!strcmp(a, "--root"))
				o.root = val;
			else if (!strcmp(a, "--cpus"))
				o.cpus = val;
			else if (ga_parse_size(val, strlen(val), UINT64_MAX, &o.buffer_bytes)) {
				fprintf(stderr, "gpuasyncfs --check: --buffers '%s': %s\n", val,
					ga_last_error());
				return 2;
			}
		} else if (a[0] == '-' || o.card) {
			fprintf(stderr, "gpuasyncfs --check: unexpected '%s'%s\n", a,
				a[0] == '-' && !val ? " (missing its value?)" : "");
			check_usage(stderr);
			return 2;
		} else {
			o.card = a;
		}
	}
	worst = ga_platform_run(&o, res);
	if (worst < 0) {
		fprintf(stderr, "gpuasyncfs --check: %s\n", strerror(-worst));
		return 2;
	}
	for (int i = 0; i < GA_CHECK_COUNT; i++) {
		ga_check_format(&res[i], line, sizeof(line));
		fputs(line, stdout);
		n[res[i].verdict]++;
	}
	printf("GPUDirect: %s (%d OK, %d WARN, %d FAIL)\n",
	       worst == GA_VERDICT_FAIL ? "not expected to work" : "expected to work",
	       n[GA_VERDICT_OK], n[GA_VERDICT_WARN], n[GA_VERDICT_FAIL]);
	return worst == GA_VERDICT_FAIL ? 1 : 0;
}
