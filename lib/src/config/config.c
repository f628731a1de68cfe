// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Configuration: one table of keys drives loading (inih), -o options
 * (ga_config_set), rendering (ga_config_format, the "config" file of the
 * mount) and the device spec string.  Adding a key is adding a row to
 * ga_cfg_keys[] (and the field to struct ga_config).
 *
 * A bad file is an error, never a guess: unknown sections and keys, bad or
 * out-of-range values, a key set twice and lines inih cannot read all fail
 * with "file:line: [section] key: why".  Values go through parse.c, like
 * every file of the mount.  A failed load leaves the caller's struct as it
 * was (the file is applied to a copy).
 *
 * inih (as Debian builds it) does not tell the handler the line number, so
 * the stream reader below counts lines itself: inih asks the reader for
 * exactly one line per line it counts, so both numbers agree.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <ini.h>

#include "gpuasync/config.h"
#include "gpuasync/device.h"
#include "gpuasync/parse.h"
#include "gpuasync/sim.h"
#include "internal.h"

enum ga_cfg_type {
	GA_CT_DEVICE,  /* char[256]: "sim" or an absolute path */
	GA_CT_LATENCY, /* bool latency_legacy: "current" | "legacy" */
	GA_CT_BOOL,    /* bool */
	GA_CT_INT,     /* int, min..max */
	GA_CT_UINT,    /* unsigned int, min..max */
	GA_CT_U64,     /* uint64_t, min..max */
	GA_CT_SIZE32,  /* uint32_t, a size ("4K") */
	GA_CT_SIZE64,  /* uint64_t, a size ("64K") */
	GA_CT_PATTERN, /* char[16]: a frame generator pattern */
	GA_CT_PATH,    /* char[256]: an absolute file path, or empty (none) */
	GA_CT_UID,     /* uid_t + uid_set; a number or a user name; empty = unset */
	GA_CT_GID,     /* gid_t + gid_set */
	GA_CT_MODE,    /* unsigned int, octal permission bits */
	GA_CT_PIN,     /* int: enum ga_pin, "auto" | "p2p" | "dmabuf" */
	GA_CT_LISTEN,  /* char[64]: "[ADDR:]PORT", "yes" (all addresses, the default port), "" */
	GA_CT_LABEL,   /* char[64]: a Prometheus label value, [A-Za-z0-9_.:/-]*; "" = none */
};

#define GA_CK_POW2 0x1 /* value must be a power of two */

struct ga_cfg_key {
	const char *section;
	const char *key;
	enum ga_cfg_type type;
	size_t off; /* field in struct ga_config */
	uint64_t min, max;
	uint64_t multiple; /* value must be a multiple of this (0: any) */
	unsigned int flags;
	const char *doc; /* one line, rendered as a comment by ga_config_format */
};

#define GA_KEY(sec, name, type, field, lo, hi, mult, fl, doc)                                      \
	{                                                                                          \
		sec, name, type, offsetof(struct ga_config, field), lo, hi, mult, fl, doc          \
	}

/* Upper bounds come from the hardware where it has one (register widths,
 * GA_MAX_BUFFERS, the 32-bit size in GpuNvidiaData). */
static const struct ga_cfg_key ga_cfg_keys[] = {
	GA_KEY("device", "path", GA_CT_DEVICE, device, 0, 0, 0, 0,
	       "sim (the simulated card) or a datadev device such as /dev/datadev_0"),
	GA_KEY("device", "latency_block", GA_CT_LATENCY, latency_legacy, 0, 0, 0, 0,
	       "V4/V5 latency registers: current (0xC0..0xF8) or legacy (0x48/0x50/0x58)"),
	GA_KEY("device", "core_offset", GA_CT_U64, core_offset, 0, GA_CORE_OFFSET_MAX,
	       GA_CORE_ALIGN, 0,
	       "GpuAsyncCore's offset in BAR0, for an image without it at 0x28000; 0: where "
	       "the driver has it (0x28000 on upstream's datadev)"),
	GA_KEY("device", "settings", GA_CT_PATH, settings_file, 0, 0, 0, 0,
	       "card settings (as MOUNTPOINT/settings shows them) applied at mount; empty: none"),
	GA_KEY("device", "gpu", GA_CT_INT, gpu_index, 0, 255, 0, 0, "CUDA device ordinal"),
	GA_KEY("device", "use_gpu", GA_CT_BOOL, use_gpu, 0, 1, 0, 0,
	       "put buffers in GPU memory when a GPU is present (else host memory)"),
	GA_KEY("device", "observe", GA_CT_BOOL, observe, 0, 1, 0, 0,
	       "look only: never add or remove a buffer, write a register or switch an engine; "
	       "writes and mkdir get EROFS (another process, e.g. LCLS-II's DRP, owns the card)"),
	GA_KEY("device", "reclaim", GA_CT_BOOL, reclaim, 0, 1, 0, 0,
	       "at mount, remove the card's buffers nobody here registered (a killed program's, "
	       "which upstream's datadev 7.4 keeps): only when that program is gone"),
	GA_KEY("device", "pin", GA_CT_PIN, pin, 0, 0, 0, 0,
	       "how buffers reach the driver: auto (dma-buf where memory and driver can), "
	       "p2p (by address, nvidia_p2p) or dmabuf (required)"),
	GA_KEY("sim", "version", GA_CT_UINT, sim_version, 1, GA_VERSION_MAX, 0, 0,
	       "firmware version, 1 to the newest this build knows"),
	GA_KEY("sim", "max_buffers", GA_CT_UINT, sim_max_buffers, 0, GA_MAX_BUFFERS, 0, 0,
	       "buffers per direction; 0 = all the version's register map holds"),
	GA_KEY("sim", "dma_data_bytes", GA_CT_UINT, sim_dma_data_bytes, 8, 128, 0, GA_CK_POW2,
	       "AXI data width = payload offset in each buffer (hardware 32 or 64)"),
	GA_KEY("sim", "clock_hz", GA_CT_U64, sim_clock_hz, 1, UINT32_MAX, 0, 0,
	       "clock of the latency counters"),
	GA_KEY("sim", "rate", GA_CT_U64, sim_rate_hz, 0, 1000000000, 0, 0,
	       "frame generator rate in Hz (0 = as fast as buffers allow)"),
	GA_KEY("sim", "size", GA_CT_SIZE32, sim_size, 1, UINT32_MAX, 0, 0,
	       "frame generator payload bytes per frame"),
	GA_KEY("sim", "pattern", GA_CT_PATTERN, sim_pattern, 0, 0, 0, 0,
	       "frame generator payload: prbs, counter, zero, timing, jungfrau or epixuhr"),
	GA_KEY("sim", "memory_map", GA_CT_UINT, sim_memory_map, 0, 255, 0, 0,
	       "AxiVersion's BAR0 memory-map version: 1 has SysMon (device/sysmon/), 0 none, "
	       "above 1 newer than known"),
	GA_KEY("buffers", "size", GA_CT_SIZE64, buffer_size, GA_GPU_PAGE_SIZE, 0xFFFF0000u,
	       GA_GPU_PAGE_SIZE, 0, "bytes per buffer made by mkdir (a multiple of 64K)"),
	GA_KEY("buffers", "max", GA_CT_UINT, buffer_max, 1, GA_MAX_BUFFERS, 0, 0,
	       "most buffers per direction the mount will create"),
	GA_KEY("access", "allow_other", GA_CT_BOOL, allow_other, 0, 1, 0, 0,
	       "let users other than the mounter in (needs user_allow_other in /etc/fuse.conf)"),
	GA_KEY("access", "uid", GA_CT_UID, uid, 0, UINT32_MAX - 1, 0, 0,
	       "owner of the files (user name or number; empty = the mounting user)"),
	GA_KEY("access", "gid", GA_CT_GID, gid, 0, UINT32_MAX - 1, 0, 0,
	       "group of the files (group name or number; empty = the mounting group)"),
	GA_KEY("access", "mode", GA_CT_MODE, mode, 0, 0777, 0, 0,
	       "permissions of writable files (octal)"),
	GA_KEY("monitor", "interval_ms", GA_CT_UINT, interval_ms, 1, 3600000, 0, 0,
	       "how often live values are sampled for poll() and metrics"),
	GA_KEY("monitor", "errors_kept", GA_CT_UINT, errors_kept, 1, 100000, 0, 0,
	       "lines the errors file keeps at least (up to twice as many)"),
	GA_KEY("prometheus", "http", GA_CT_LISTEN, http, 1, 65535, 0, 0,
	       "serve /metrics over HTTP on [ADDR:]PORT (yes: port 9330 on every address); "
	       "empty: off"),
	GA_KEY("prometheus", "targets_dir", GA_CT_PATH, targets_dir, 0, 0, 0, 0,
	       "directory of Prometheus file_sd target files: gpuasyncfs_HOST_PORT.yaml is "
	       "written there at start and removed at a clean stop; empty: none"),
	GA_KEY("prometheus", "instrument", GA_CT_LABEL, instrument, 0, 0, 0, 0,
	       "target label instrument (the hutch, e.g. tmo); empty: left out"),
	GA_KEY("prometheus", "partition", GA_CT_LABEL, partition, 0, 0, 0, 0,
	       "target label partition (the DAQ platform); empty: left out"),
	GA_KEY("prometheus", "detname", GA_CT_LABEL, detname, 0, 0, 0, 0,
	       "target label detname (the detector this card reads); empty: left out"),
	GA_KEY("prometheus", "alias", GA_CT_LABEL, alias, 0, 0, 0, 0,
	       "target label alias, as the DRP's own drp_* series have it; empty: left out"),
};

#define GA_NKEYS (sizeof(ga_cfg_keys) / sizeof(ga_cfg_keys[0]))

static const char *const ga_cfg_sections[] = {"device",	"sim",	   "buffers",
					      "access", "monitor", "prometheus"};

#define GA_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

void ga_config_defaults(struct ga_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->device, sizeof(cfg->device), "sim");
	cfg->latency_legacy = false;
	cfg->gpu_index = 0;
	cfg->use_gpu = true;
	cfg->pin = GA_PIN_AUTO;
	cfg->sim_version = GA_VERSION_EMULATED;
	cfg->sim_max_buffers = 0;
	cfg->sim_dma_data_bytes = 32;
	cfg->sim_clock_hz = GA_DMA_CLOCK_HZ_DEFAULT;
	cfg->sim_rate_hz = 1000;
	cfg->sim_size = 4096;
	cfg->sim_memory_map = 1;
	snprintf(cfg->sim_pattern, sizeof(cfg->sim_pattern), "prbs");
	cfg->buffer_size = 64 * 1024;
	cfg->buffer_max = 1024;
	cfg->allow_other = false;
	cfg->uid_set = cfg->gid_set = false;
	cfg->mode = 0644;
	cfg->interval_ms = 100;
	cfg->errors_kept = 64;
}

/* ---- one value ------------------------------------------------------------ */

static void *ga_field(struct ga_config *cfg, const struct ga_cfg_key *k)
{
	return (char *)cfg + k->off;
}

static const void *ga_cfield(const struct ga_config *cfg, const struct ga_cfg_key *k)
{
	return (const char *)cfg + k->off;
}

static int ga_why(char *why, size_t whylen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Write the reason for a rejected value and return @rc. */
static int ga_why(char *why, size_t whylen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return rc;
}

/* Explain a parse error: @rc from parse.c, @what the expected form. */
static int ga_bad(int rc, char *why, size_t whylen, const char *what, const struct ga_cfg_key *k,
		  const char *value)
{
	if (rc == -ERANGE)
		return ga_why(why, whylen, rc, "'%s' is out of range (%s %" PRIu64 "..%" PRIu64 ")",
			      value, what, k->min, k->max);
	return ga_why(why, whylen, rc, "'%s' is not %s", value, what);
}

static bool ga_in_list(const char *v, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v, list[i]) == 0)
			return true;
	return false;
}

/* Octal permission bits: "644", "0644", "0o644". */
static int ga_parse_mode(const char *v, unsigned int *out)
{
	unsigned int m = 0;
	const char *p = v;

	while (*p == ' ' || *p == '\t')
		p++;
	if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O'))
		p += 2;
	if (!*p)
		return -EINVAL;
	for (; *p >= '0' && *p <= '7'; p++) {
		m = m * 8 + (unsigned int)(*p - '0');
		if (m > 07777)
			return -ERANGE;
	}
	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	if (*p)
		return -EINVAL;
	*out = m;
	return 0;
}

/* A user/group: a number, or a name looked up in the system databases. */
static int ga_parse_id(const char *v, bool group, uint64_t max, uint64_t *out)
{
	char buf[4096];
	int rc;

	rc = ga_parse_u64(v, strlen(v), max, out);
	if (rc != -EINVAL)
		return rc;
	if (group) {
		struct group gr, *res = NULL;

		if (getgrnam_r(v, &gr, buf, sizeof(buf), &res) != 0 || !res)
			return -EINVAL;
		*out = gr.gr_gid;
	} else {
		struct passwd pw, *res = NULL;

		if (getpwnam_r(v, &pw, buf, sizeof(buf), &res) != 0 || !res)
			return -EINVAL;
		*out = pw.pw_uid;
	}
	return 0;
}

/* "[ADDR:]PORT": an IPv4 address (dotted quad) or none (every address),
 * and a port @k->min..@k->max; "yes" is every address on the default port,
 * "no" or "" off.  Stored as "ADDR:PORT" ("0.0.0.0:9330"), or "". */
static int ga_parse_listen(struct ga_config *cfg, const struct ga_cfg_key *k, const char *value,
			   char *why, size_t whylen)
{
	const char *colon = strrchr(value, ':');
	const char *port = colon ? colon + 1 : value;
	char addr[INET_ADDRSTRLEN] = "0.0.0.0";
	struct in_addr in;
	uint64_t p = GA_HTTP_DEFAULT_PORT;
	int rc;

	if (!*value || !strcmp(value, "no")) {
		cfg->http[0] = '\0';
		return 0;
	}
	if (strcmp(value, "yes") != 0) {
		if (colon) {
			size_t n = (size_t)(colon - value);

			if (n >= sizeof(addr) || (memcpy(addr, value, n), addr[n] = '\0',
						  inet_pton(AF_INET, addr, &in) != 1))
				return ga_why(why, whylen, -EINVAL,
					      "'%.*s' is not an IPv4 address (a.b.c.d; leave it "
					      "out for every address)",
					      (int)n, value);
		}
		rc = ga_parse_u64(port, strlen(port), k->max, &p);
		if (rc == 0 && p < k->min)
			rc = -ERANGE;
		if (rc)
			return ga_why(why, whylen, rc,
				      "'%s' is not [ADDR:]PORT with a port 1..65535 (or yes: "
				      "port %d on every address)",
				      value, GA_HTTP_DEFAULT_PORT);
	}
	snprintf(cfg->http, sizeof(cfg->http), "%s:%u", addr, (unsigned int)p);
	return 0;
}

/*
 * Validate @value for @k and store it in @cfg.  On error returns -EINVAL
 * or -ERANGE and leaves @cfg untouched, with the reason in @why.
 */
static int ga_cfg_apply(struct ga_config *cfg, const struct ga_cfg_key *k, const char *value,
			char *why, size_t whylen)
{
	size_t len = strlen(value);
	uint64_t v = 0;
	bool b;
	int rc;

	switch (k->type) {
	case GA_CT_DEVICE:
		if (strcmp(value, "sim") != 0 && value[0] != '/')
			return ga_why(why, whylen, -EINVAL,
				      "'%s' is neither sim nor an absolute device path "
				      "(sim options go in [sim])",
				      value);
		/* Blanks and ';' would not survive a round trip through an ini file. */
		if (strpbrk(value, " \t;#") || len >= sizeof(cfg->device))
			return ga_why(why, whylen, -EINVAL,
				      "'%s' has blanks, ';' or '#', or is too long", value);
		memcpy(cfg->device, value, len + 1);
		return 0;
	case GA_CT_PATH:
		if (len && value[0] != '/')
			return ga_why(why, whylen, -EINVAL, "'%s' is not an absolute path", value);
		if (strpbrk(value, " \t;#") || len >= sizeof(cfg->settings_file))
			return ga_why(why, whylen, -EINVAL,
				      "'%s' has blanks, ';' or '#', or is too long", value);
		memcpy(ga_field(cfg, k), value, len + 1);
		return 0;
	case GA_CT_LATENCY:
		if (strcmp(value, "current") == 0)
			b = false;
		else if (strcmp(value, "legacy") == 0)
			b = true;
		else
			return ga_why(why, whylen, -EINVAL, "'%s' is not current or legacy", value);
		*(bool *)ga_field(cfg, k) = b;
		return 0;
	case GA_CT_PIN: {
		enum ga_pin pin;

		if (ga_pin_parse(value, &pin) != 0)
			return ga_why(why, whylen, -EINVAL, "'%s' is not auto, p2p or dmabuf",
				      value);
		*(int *)ga_field(cfg, k) = (int)pin;
		return 0;
	}
	case GA_CT_LISTEN:
		return ga_parse_listen(cfg, k, value, why, whylen);
	case GA_CT_LABEL:
		if (len >= sizeof(cfg->alias) ||
		    strspn(value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
				  "_.:/-") != len)
			return ga_why(why, whylen, -EINVAL,
				      "'%s' is not a label value: at most %zu of letters, digits "
				      "and _ . : / -",
				      value, sizeof(cfg->alias) - 1);
		memcpy(ga_field(cfg, k), value, len + 1);
		return 0;
	case GA_CT_BOOL:
		rc = ga_parse_bool(value, len, &b);
		if (rc)
			return ga_why(why, whylen, -EINVAL, "'%s' is not a boolean (yes/no, 1/0)",
				      value);
		*(bool *)ga_field(cfg, k) = b;
		return 0;
	case GA_CT_PATTERN: {
		enum ga_pattern pat;

		/* The generator's own parser and its message, so the lists
		 * cannot disagree. */
		if (ga_pattern_parse(value, &pat) != 0)
			return ga_why(why, whylen, -EINVAL, "%s", ga_last_error());
		snprintf((char *)ga_field(cfg, k), sizeof(cfg->sim_pattern), "%s",
			 ga_pattern_name(pat));
		return 0;
	}
	case GA_CT_UID:
	case GA_CT_GID:
		if (len == 0) {
			if (k->type == GA_CT_UID)
				cfg->uid_set = false;
			else
				cfg->gid_set = false;
			return 0;
		}
		rc = ga_parse_id(value, k->type == GA_CT_GID, k->max, &v);
		if (rc)
			return ga_bad(rc, why, whylen,
				      k->type == GA_CT_UID ? "a user name or uid"
							   : "a group name or gid",
				      k, value);
		if (k->type == GA_CT_UID) {
			cfg->uid = (uid_t)v;
			cfg->uid_set = true;
		} else {
			cfg->gid = (gid_t)v;
			cfg->gid_set = true;
		}
		return 0;
	case GA_CT_MODE: {
		unsigned int m;

		rc = ga_parse_mode(value, &m);
		if (rc == 0 && m > k->max)
			rc = -ERANGE;
		if (rc)
			return ga_why(why, whylen, rc, "'%s' is not an octal mode 0..0777", value);
		*(unsigned int *)ga_field(cfg, k) = m;
		return 0;
	}
	case GA_CT_INT:
	case GA_CT_UINT:
	case GA_CT_U64:
	case GA_CT_SIZE32:
	case GA_CT_SIZE64:
		break;
	}

	if (k->type == GA_CT_SIZE32 || k->type == GA_CT_SIZE64)
		rc = ga_parse_size(value, len, k->max, &v);
	else
		rc = ga_parse_u64(value, len, k->max, &v);
	if (rc == 0 && v < k->min)
		rc = -ERANGE;
	if (rc)
		return ga_bad(rc, why, whylen,
			      k->type == GA_CT_SIZE32 || k->type == GA_CT_SIZE64 ? "a size"
										 : "a number",
			      k, value);
	if (k->multiple && v % k->multiple)
		return ga_why(why, whylen, -EINVAL, "'%s' is not a multiple of %" PRIu64, value,
			      k->multiple);
	if ((k->flags & GA_CK_POW2) && (v & (v - 1)))
		return ga_why(why, whylen, -EINVAL, "'%s' is not a power of two", value);

	switch (k->type) {
	case GA_CT_INT:
		*(int *)ga_field(cfg, k) = (int)v;
		break;
	case GA_CT_UINT:
		*(unsigned int *)ga_field(cfg, k) = (unsigned int)v;
		break;
	case GA_CT_SIZE32:
		*(uint32_t *)ga_field(cfg, k) = (uint32_t)v;
		break;
	default:
		*(uint64_t *)ga_field(cfg, k) = v;
		break;
	}
	return 0;
}

static const struct ga_cfg_key *ga_cfg_find(const char *section, const char *key)
{
	size_t i;

	for (i = 0; i < GA_NKEYS; i++)
		if (strcmp(ga_cfg_keys[i].section, section) == 0 &&
		    strcmp(ga_cfg_keys[i].key, key) == 0)
			return &ga_cfg_keys[i];
	return NULL;
}

static bool ga_cfg_known_section(const char *section)
{
	return ga_in_list(section, ga_cfg_sections, GA_ARRAY_LEN(ga_cfg_sections));
}

/* "version, max_buffers, ..." for an unknown-key message. */
static void ga_cfg_key_list(const char *section, char *buf, size_t len)
{
	size_t i, pos = 0;

	buf[0] = '\0';
	for (i = 0; i < GA_NKEYS && pos < len; i++) {
		if (strcmp(ga_cfg_keys[i].section, section) != 0)
			continue;
		pos += (size_t)snprintf(buf + pos, len - pos, "%s%s", pos ? ", " : "",
					ga_cfg_keys[i].key);
	}
}

/* ---- loading -------------------------------------------------------------- */

#define GA_CFG_MAX_LINES 100000

struct ga_cfg_ctx {
	struct ga_config cfg; /* the file is applied to this copy */
	FILE *f;
	int lineno;    /* lines handed to inih so far = inih's line number */
	bool indented; /* the current line starts with a blank */
	char prev_key[64];
	int seen[GA_NKEYS]; /* line each key was set on, 0 = not yet */
	int err_line;	    /* first error found by us, 0 = none */
	int err_rc;
	char err[384];
};

static void ga_cfg_fail(struct ga_cfg_ctx *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void ga_cfg_fail(struct ga_cfg_ctx *c, int rc, const char *fmt, ...)
{
	va_list ap;

	if (c->err_line) /* keep the first error: later ones may be fallout */
		return;
	c->err_line = c->lineno;
	c->err_rc = rc;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
}

/*
 * inih reads lines through this, so here we count them and look at what
 * inih does not report: section headers (an empty unknown section would
 * otherwise pass silently) and leading blanks (inih takes an indented
 * line as the continuation of the previous value).
 */
static char *ga_cfg_reader(char *str, int num, void *stream)
{
	struct ga_cfg_ctx *c = stream;
	const char *p, *end;

	if (!fgets(str, num, c->f))
		return NULL;
	/* Something that never ends (-o config=/dev/zero) is not a config. */
	if (++c->lineno > GA_CFG_MAX_LINES) {
		if (!c->err_line)
			ga_cfg_fail(c, -EFBIG, "more than %d lines: not a configuration file",
				    GA_CFG_MAX_LINES);
		return NULL;
	}
	c->indented = str[0] == ' ' || str[0] == '\t';
	p = str;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '[' && (end = strchr(p, ']')) != NULL) {
		char name[64];
		size_t n = (size_t)(end - p - 1);

		c->prev_key[0] = '\0';
		if (n < sizeof(name)) {
			memcpy(name, p + 1, n);
			name[n] = '\0';
		}
		if (n >= sizeof(name) || !ga_cfg_known_section(name))
			ga_cfg_fail(c, -EINVAL,
				    "unknown section [%.*s] (known: device, sim, buffers, access, "
				    "monitor, prometheus)",
				    (int)(n < sizeof(name) ? n : sizeof(name)), p + 1);
	}
	return str;
}

static int ga_cfg_handler(void *user, const char *section, const char *name, const char *value)
{
	struct ga_cfg_ctx *c = user;
	const struct ga_cfg_key *k;
	char why[256], keys[256];
	size_t i;
	int rc;

	if (!section[0]) {
		ga_cfg_fail(c, -EINVAL,
			    "'%s' is outside any section (put it under [device], [sim], ...)",
			    name);
		return 0;
	}
	if (!ga_cfg_known_section(section))
		return 0; /* already reported by the reader */
	if (c->indented && strcmp(name, c->prev_key) == 0) {
		ga_cfg_fail(c, -EINVAL,
			    "[%s] %s: this line is indented, so it would continue the value of "
			    "'%s'; remove the leading blanks",
			    section, name, name);
		return 0;
	}
	snprintf(c->prev_key, sizeof(c->prev_key), "%s", name);
	k = ga_cfg_find(section, name);
	if (!k) {
		ga_cfg_key_list(section, keys, sizeof(keys));
		ga_cfg_fail(c, -EINVAL, "[%s] unknown key '%s' (known: %s)", section, name, keys);
		return 0;
	}
	i = (size_t)(k - ga_cfg_keys);
	if (c->seen[i]) {
		ga_cfg_fail(c, -EINVAL, "[%s] %s: set twice (first on line %d)", section, name,
			    c->seen[i]);
		return 0;
	}
	c->seen[i] = c->lineno;
	rc = ga_cfg_apply(&c->cfg, k, value, why, sizeof(why));
	if (rc) {
		ga_cfg_fail(c, rc, "[%s] %s: %s", section, name, why);
		return 0;
	}
	return 1;
}

/* @path opened for reading if it is a regular file, or /dev/null (the
 * usual "no configuration"): a FIFO or another device could block start-up
 * forever or never end, so it is refused.  NULL with *@rc and @err set
 * otherwise. */
static FILE *fopen_regular(const char *path, int *rc, char *err, size_t errlen)
{
	struct stat st;
	FILE *f;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		*rc = -errno;
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 ||
	    !(S_ISREG(st.st_mode) || (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)))) {
		close(fd);
		*rc = -EINVAL;
		snprintf(err, errlen, "%s: not a regular file (a FIFO or device is refused: it could "
				      "block start-up forever)", path);
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f) {
		*rc = -errno;
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		close(fd);
	}
	return f;
}

int ga_config_load(struct ga_config *cfg, const char *path, char *err, size_t errlen)
{
	struct ga_cfg_ctx *c;
	int r, rc = 0;

	if (errlen)
		err[0] = '\0';
	if (!path) {
		snprintf(err, errlen, "no configuration file given");
		return ga_err(-EINVAL, "no configuration file given");
	}
	/* A few KiB of state: heap, so daemons with small thread stacks are fine. */
	c = calloc(1, sizeof(*c));
	if (!c)
		return ga_err(-ENOMEM, "no memory to load %s", path);
	c->cfg = *cfg;
	c->f = fopen_regular(path, &rc, err, errlen);
	if (!c->f)
		goto out_free;

	r = ini_parse_stream(ga_cfg_reader, c, ga_cfg_handler, c);
	if (r < 0) {
		rc = r == -2 ? -ENOMEM : -EIO;
		snprintf(err, errlen, "%s: %s", path, r == -2 ? "out of memory" : "cannot read");
	} else if (c->err_line && (r == 0 || c->err_line <= r)) {
		rc = c->err_rc;
		snprintf(err, errlen, "%s:%d: %s", path, c->err_line, c->err);
	} else if (r > 0) {
		/* inih failed on a line that never reached the handler: syntax. */
		rc = -EINVAL;
		snprintf(err, errlen,
			 "%s:%d: cannot parse this line (expected '[section]' or 'key = value')",
			 path, r);
	} else if (ferror(c->f)) {
		rc = -EIO;
		snprintf(err, errlen, "%s: read error", path);
	}
	fclose(c->f);
	if (rc == 0)
		*cfg = c->cfg; /* all or nothing */
out_free:
	free(c);
	if (rc)
		ga_err(rc, "%s", errlen ? err : path);
	return rc;
}

/* ---- -o options ----------------------------------------------------------- */

int ga_config_set(struct ga_config *cfg, const char *section, const char *key, const char *value,
		  char *err, size_t errlen)
{
	const struct ga_cfg_key *k = NULL;
	char sec[32], why[256];
	const char *dot;
	size_t i;
	int rc;

	if (errlen)
		err[0] = '\0';
	if (!key || !value) {
		snprintf(err, errlen, "missing key or value");
		return ga_err(-EINVAL, "%s", err);
	}
	/* "sim.version" in @key when no section is given. */
	if ((!section || !section[0]) && (dot = strchr(key, '.')) != NULL) {
		if ((size_t)(dot - key) >= sizeof(sec)) {
			snprintf(err, errlen, "unknown option '%s'", key);
			return ga_err(-EINVAL, "%s", err);
		}
		memcpy(sec, key, (size_t)(dot - key));
		sec[dot - key] = '\0';
		section = sec;
		key = dot + 1;
	}

	if (section && section[0]) {
		k = ga_cfg_find(section, key);
	} else {
		for (i = 0; i < GA_NKEYS; i++) {
			if (strcmp(ga_cfg_keys[i].key, key) != 0)
				continue;
			if (k) {
				snprintf(err, errlen,
					 "option '%s' is ambiguous: say %s.%s or %s.%s", key,
					 k->section, key, ga_cfg_keys[i].section, key);
				return ga_err(-EINVAL, "%s", err);
			}
			k = &ga_cfg_keys[i];
		}
	}
	if (!k) {
		if (section && section[0])
			snprintf(err, errlen, "unknown option '%s.%s'", section, key);
		else
			snprintf(err, errlen, "unknown option '%s'", key);
		return ga_err(-EINVAL, "%s", err);
	}
	rc = ga_cfg_apply(cfg, k, value, why, sizeof(why));
	if (rc) {
		snprintf(err, errlen, "[%s] %s: %s", k->section, k->key, why);
		return ga_err(rc, "%s", err);
	}
	return 0;
}

/* ---- rendering ------------------------------------------------------------ */

struct ga_out {
	char *buf;
	size_t len, pos; /* pos counts what would have been written */
};

static void ga_out(struct ga_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void ga_out(struct ga_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->pos < o->len ? o->buf + o->pos : NULL,
		      o->pos < o->len ? o->len - o->pos : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->pos += (size_t)n;
}

/* Room check shared by the renderers: length, or -ENOSPC (buf cut short). */
static int ga_out_done(const struct ga_out *o)
{
	if (o->pos >= o->len)
		return ga_err(-ENOSPC, "%zu bytes needed, buffer has %zu", o->pos + 1, o->len);
	return (int)o->pos;
}

static void ga_cfg_render_value(struct ga_out *o, const struct ga_config *cfg,
				const struct ga_cfg_key *k)
{
	const void *f = ga_cfield(cfg, k);
	char tmp[32];

	switch (k->type) {
	case GA_CT_DEVICE:
	case GA_CT_PATTERN:
	case GA_CT_PATH:
	case GA_CT_LISTEN:
	case GA_CT_LABEL:
		ga_out(o, "%s", (const char *)f);
		break;
	case GA_CT_LATENCY:
		ga_out(o, "%s", *(const bool *)f ? "legacy" : "current");
		break;
	case GA_CT_PIN:
		ga_out(o, "%s", ga_pin_name((enum ga_pin) * (const int *)f));
		break;
	case GA_CT_BOOL:
		ga_out(o, "%s", *(const bool *)f ? "yes" : "no");
		break;
	case GA_CT_INT:
		ga_out(o, "%d", *(const int *)f);
		break;
	case GA_CT_UINT:
		ga_out(o, "%u", *(const unsigned int *)f);
		break;
	case GA_CT_U64:
		ga_out(o, "%" PRIu64, *(const uint64_t *)f);
		break;
	case GA_CT_SIZE32:
	case GA_CT_SIZE64:
		ga_format_size(tmp, sizeof(tmp),
			       k->type == GA_CT_SIZE32 ? *(const uint32_t *)f
						       : *(const uint64_t *)f);
		tmp[strcspn(tmp, "\n")] = '\0';
		ga_out(o, "%s", tmp);
		break;
	case GA_CT_UID:
		if (cfg->uid_set)
			ga_out(o, "%u", (unsigned int)cfg->uid);
		break;
	case GA_CT_GID:
		if (cfg->gid_set)
			ga_out(o, "%u", (unsigned int)cfg->gid);
		break;
	case GA_CT_MODE:
		ga_out(o, "0%o", *(const unsigned int *)f);
		break;
	}
}

int ga_config_format(const struct ga_config *cfg, char *buf, size_t len)
{
	struct ga_out o = {buf, len, 0};
	const char *section = NULL;
	size_t i;

	if (len)
		buf[0] = '\0';
	ga_out(&o,
	       "; gpuasyncfs configuration in effect (an ini file gpuasyncfs -o config= reads)\n");
	for (i = 0; i < GA_NKEYS; i++) {
		const struct ga_cfg_key *k = &ga_cfg_keys[i];

		if (!section || strcmp(section, k->section) != 0) {
			section = k->section;
			ga_out(&o, "\n[%s]\n", section);
		}
		char val[sizeof(cfg->device) + 8];
		struct ga_out vo = {val, sizeof(val), 0};

		val[0] = '\0';
		ga_cfg_render_value(&vo, cfg, k);
		ga_out(&o, "; %s\n%s =%s%s\n", k->doc, k->key, val[0] ? " " : "", val);
	}
	return ga_out_done(&o);
}

int ga_config_device_spec(const struct ga_config *cfg, char *buf, size_t len)
{
	struct ga_out o = {buf, len, 0};

	if (len)
		buf[0] = '\0';
	if (strcmp(cfg->device, "sim") != 0) {
		ga_out(&o, "%s", cfg->device);
		return ga_out_done(&o);
	}
	ga_out(&o, "sim:version=%u", cfg->sim_version);
	if (cfg->sim_max_buffers) /* 0: let the simulated firmware pick its default */
		ga_out(&o, ",max_buffers=%u", cfg->sim_max_buffers);
	ga_out(&o, ",dma_data_bytes=%u,clock_hz=%" PRIu64 ",latency=%s", cfg->sim_dma_data_bytes,
	       cfg->sim_clock_hz, cfg->latency_legacy ? "legacy" : "current");
	ga_out(&o, ",rate=%" PRIu64 ",size=%" PRIu32 ",pattern=%s", cfg->sim_rate_hz, cfg->sim_size,
	       cfg->sim_pattern);
	if (cfg->sim_memory_map != 1) /* 1: the emulated image's own */
		ga_out(&o, ",memory_map=%u", cfg->sim_memory_map);
	if (cfg->core_offset)
		ga_out(&o, ",core_offset=0x%" PRIx64, cfg->core_offset);
	return ga_out_done(&o);
}
