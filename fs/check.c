// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * gpuasyncfs --check [options] [DEVICE]: the platform doctor
 * (gpuasync/platform.h) on this machine, no mount.  One short line per
 * check by default (verdict, check, what was found; at most
 * GA_CHECK_SHORT_WIDTH characters), why and what to do with --explain,
 * one JSON object per check with --json.  Exit status: 0 when GPUDirect is
 * expected to work (no FAIL; WARN lines may remain), 1 when it is not, 2
 * for bad arguments, which are refused before any check runs.
 *
 *     $ gpuasyncfs --check /dev/datadev_0
 *     OK   card: 0000:01:00.0 (1a4a:2030), driver datadev as datadev_0
 *     FAIL acs: bridges between 0000:01:00.0 and 0000:02:00.0: 0000:02:08.0: ACS ... (--explain)
 *     ...
 *     GPUDirect: not expected to work (1 FAIL, 2 WARN)
 *
 * gpuasyncfs --topology [DEVICE]: which GPU the card pairs with and why
 * (ga_platform_topology), what a mount shows as device/topology; the same
 * options, exit status 1 when the pairing is a FAIL.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <gpuasync/device.h>
#include <gpuasync/parse.h>
#include <gpuasync/platform.h>

#include "fs.h"

enum check_out { OUT_SHORT, OUT_EXPLAIN, OUT_JSON };

static void check_usage(FILE *f)
{
	fprintf(f,
		"usage: gpuasyncfs --check [options] [DEVICE]\n"
		"\n"
		"Will GPUDirect from the card into the GPU work on this machine?  One line per\n"
		"check: OK, WARN (works, but slower or fragile, or could not tell) or FAIL, and\n"
		"what was found; why it matters and what to do with --explain.\n"
		"\n"
		"    DEVICE                the card: /dev/datadev_N, /dev/gpuasync_N or a PCI\n"
		"                          address (default: the first card found)\n"
		"    --gpu BDF[,BDF...]    the GPUs by PCI address, 0000:04:00.0 or 04:00.0\n"
		"                          (default: every NVIDIA GPU on the bus)\n"
		"    --buffers SIZE        GPU memory the buffers will pin (e.g. 2G), for BAR1\n"
		"    --cpus LIST           CPUs the daemon will run on, as 0-7,16 (default: this\n"
		"                          process's); each must be one of the machine's\n"
		"    --root DIR            read DIR/sys, DIR/proc, ... instead of / (tests)\n"
		"    --no-open             do not open the card (skips the stale-address check)\n"
		"    -v, --explain         also why each check matters and what to do\n"
		"    --json                one JSON object per line and check: name, verdict,\n"
		"                          found, why, advice\n"
		"    --list                the checks and why each matters (markdown)\n"
		"\n"
		"Exit status: 0 expected to work (WARN lines may remain), 1 not expected to\n"
		"work (a FAIL line), 2 bad arguments.  docs/platform.md explains each check.\n"
		"\n"
		"usage: gpuasyncfs --topology [DEVICE[,BDF...]] [--gpu LIST] [--root DIR]\n"
		"                             [--paired BDF]\n"
		"\n"
		"Which GPU the card pairs with and why, by the rule LCLS-II's Slurm gres.conf\n"
		"generator uses (what a mount shows as device/topology).  Further cards after\n"
		"commas take part in the pairing; --paired names the GPU the card is known to\n"
		"feed, to say whether it is still on the bus and still the rule's choice.\n"
		"Exit status 1 when the verdict (the first line) is FAIL.\n");
}

/* @s as a JSON string. */
static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c == '\n')
			fputs("\\n", stdout);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void print_json(const struct ga_check_result *r)
{
	const struct ga_check_info *ci = ga_check_info(r->id);

	fputs("{\"name\": ", stdout);
	json_str(ci->name);
	fputs(", \"verdict\": ", stdout);
	json_str(ga_verdict_name(r->verdict));
	fputs(", \"found\": ", stdout);
	json_str(r->found);
	fputs(", \"why\": ", stdout);
	json_str(ci->why);
	fputs(", \"advice\": ", stdout);
	json_str(r->todo);
	fputs("}\n", stdout);
}

/* --gpu's list with each address in sysfs form (04:00.0 -> 0000:04:00.0). */
static int gpu_list(const char *val, char *out, size_t len)
{
	char list[512], *save = NULL, *tok;
	size_t n = 0;

	if (snprintf(list, sizeof(list), "%s", val) >= (int)sizeof(list))
		return -1;
	out[0] = 0;
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%s%s%s", n ? "," : "",
				      strlen(tok) == 7 ? "0000:" : "", tok);
	return n < len && out[0] ? 0 : -1;
}

static int bad_arg(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "gpuasyncfs --check: %s '%s': %s\n", opt, val, why);
	return 2;
}

int fs_check_main(int argc, char **argv)
{
	struct ga_platform_opts o = GA_PLATFORM_OPTS_DEFAULT;
	static struct ga_check_result res[GA_CHECK_COUNT];
	enum check_out out = OUT_SHORT;
	static char gpus[1024], paired[64];
	static struct ga_topology topo;
	bool topology = false;
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
		} else if (!strcmp(a, "--topology")) {
			topology = true;
		} else if (!strcmp(a, "--paired") && val) {
			i++;
			if (gpu_list(val, paired, sizeof(paired)) || strchr(paired, ','))
				return bad_arg(a, val, "not one PCI address");
			topo.paired = paired;
			topo.paired_from = "--paired";
		} else if (!strcmp(a, "--no-open")) {
			o.open_device = 0;
		} else if (!strcmp(a, "-v") || !strcmp(a, "--explain")) {
			out = OUT_EXPLAIN;
		} else if (!strcmp(a, "--json")) {
			out = OUT_JSON;
		} else if ((!strcmp(a, "--gpu") || !strcmp(a, "--root") || !strcmp(a, "--cpus") ||
			    !strcmp(a, "--buffers")) &&
			   val) {
			struct stat st;

			i++;
			if (!strcmp(a, "--gpu")) {
				if (gpu_list(val, gpus, sizeof(gpus)))
					return bad_arg(a, val, "not a list of PCI addresses");
				o.gpus = gpus;
			} else if (!strcmp(a, "--root")) {
				if (stat(val, &st))
					return bad_arg(a, val, strerror(errno));
				if (!S_ISDIR(st.st_mode))
					return bad_arg(a, val, "not a directory");
				o.root = val;
			} else if (!strcmp(a, "--cpus")) {
				o.cpus = val;
			} else {
				int e = ga_parse_size(val, strlen(val), UINT64_MAX, &o.buffer_bytes);

				if (e == -ERANGE)
					return bad_arg(a, val, "too large");
				if (e)
					return bad_arg(a, val,
						       "not a size: a number with an optional K, M "
						       "or G suffix (2G)");
				if (!o.buffer_bytes)
					return bad_arg(a, val, "0 bytes: give what the buffers will pin");
			}
		} else if (a[0] == '-' || o.card) {
			bool valued = !strcmp(a, "--gpu") || !strcmp(a, "--root") ||
				      !strcmp(a, "--cpus") || !strcmp(a, "--buffers") ||
				      !strcmp(a, "--paired");

			fprintf(stderr, "gpuasyncfs --check: %s '%s'%s\n",
				valued ? "no value after" : "unexpected", a,
				a[0] == '-' || valued ? "" : " (one DEVICE only)");
			check_usage(stderr);
			return 2;
		} else {
			o.card = a;
		}
	}
	if (topology) {
		int rc = ga_platform_topology(&o, &topo);

		if (rc < 0) {
			fprintf(stderr, "gpuasyncfs --topology: %s\n",
				ga_last_error()[0] ? ga_last_error() : strerror(-rc));
			return 2;
		}
		fputs(topo.text, stdout);
		return topo.verdict == GA_VERDICT_FAIL ? 1 : 0;
	}
	worst = ga_platform_run(&o, res);
	if (worst < 0) {
		/* An option the library refused (a GPU or CPU list): a usage error. */
		fprintf(stderr, "gpuasyncfs --check: %s\n", ga_last_error()[0] ? ga_last_error()
									 : strerror(-worst));
		return 2;
	}
	for (int i = 0; i < GA_CHECK_COUNT; i++) {
		if (out == OUT_JSON) {
			print_json(&res[i]);
		} else {
			if (out == OUT_EXPLAIN)
				ga_check_format(&res[i], line, sizeof(line));
			else
				ga_check_format_short(&res[i], line, sizeof(line));
			fputs(line, stdout);
		}
		n[res[i].verdict]++;
	}
	if (out != OUT_JSON)
		printf("GPUDirect: %s (%d OK, %d WARN, %d FAIL)\n",
		       worst == GA_VERDICT_FAIL ? "not expected to work" : "expected to work",
		       n[GA_VERDICT_OK], n[GA_VERDICT_WARN], n[GA_VERDICT_FAIL]);
	return worst == GA_VERDICT_FAIL ? 1 : 0;
}
