// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Configuration (config.c): defaults, a good file, every kind of error
 * with the line it names, -o style settings, the format -> load round trip
 * and the device spec string handed to ga_dev_open.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuasync/config.h"
#include "gpuasync/device.h"
#include "gpuasync/sim.h"
#include "common/doc_file.h"
#include "common/run_suite.h"

static char path[64];

/* Write @text to a fresh temporary file; its name lands in @path. */
static void write_file(const char *text)
{
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/tmp/ga-test-config-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* Load @text over defaults; returns rc, the message in @err. */
static int load(const char *text, struct ga_config *cfg, char *err, size_t errlen)
{
	int rc;

	ga_config_defaults(cfg);
	write_file(text);
	rc = ga_config_load(cfg, path, err, errlen);
	unlink(path);
	return rc;
}

static bool cfg_eq(const struct ga_config *a, const struct ga_config *b)
{
	return strcmp(a->device, b->device) == 0 && a->latency_legacy == b->latency_legacy &&
	       a->gpu_index == b->gpu_index && a->use_gpu == b->use_gpu && a->pin == b->pin &&
	       a->sim_version == b->sim_version && a->sim_max_buffers == b->sim_max_buffers &&
	       a->sim_dma_data_bytes == b->sim_dma_data_bytes &&
	       a->sim_clock_hz == b->sim_clock_hz && a->sim_rate_hz == b->sim_rate_hz &&
	       a->sim_size == b->sim_size && strcmp(a->sim_pattern, b->sim_pattern) == 0 &&
	       a->buffer_size == b->buffer_size && a->buffer_max == b->buffer_max &&
	       a->allow_other == b->allow_other && a->uid_set == b->uid_set &&
	       a->gid_set == b->gid_set && (!a->uid_set || a->uid == b->uid) &&
	       (!a->gid_set || a->gid == b->gid) && a->mode == b->mode &&
	       a->interval_ms == b->interval_ms && a->errors_kept == b->errors_kept;
}

START_TEST(test_defaults)
{
	struct ga_config c;

	memset(&c, 0x5a, sizeof(c));
	ga_config_defaults(&c);
	ck_assert_str_eq(c.device, "sim");
	ck_assert(!c.latency_legacy);
	ck_assert_int_eq(c.gpu_index, 0);
	ck_assert(c.use_gpu);
	ck_assert_uint_eq(c.sim_version, 4);
	ck_assert_uint_eq(c.sim_max_buffers, 0);
	ck_assert_uint_eq(c.sim_dma_data_bytes, 32);
	ck_assert_uint_eq(c.sim_clock_hz, 250000000);
	ck_assert_uint_eq(c.sim_rate_hz, 1000);
	ck_assert_uint_eq(c.sim_size, 4096);
	ck_assert_str_eq(c.sim_pattern, "prbs");
	ck_assert_uint_eq(c.buffer_size, 65536);
	ck_assert_uint_eq(c.buffer_max, 1024);
	ck_assert(!c.allow_other);
	ck_assert(!c.uid_set && !c.gid_set);
	ck_assert_uint_eq(c.mode, 0644);
	ck_assert_uint_eq(c.interval_ms, 100);
	ck_assert_uint_eq(c.errors_kept, 64);
}
END_TEST

START_TEST(test_good_file)
{
	struct ga_config c;
	char err[512];

	ck_assert_int_eq(load("; a comment\n"
			      "# another\n"
			      "\n"
			      "[device]\n"
			      "path = /dev/datadev_1\n"
			      "latency_block = legacy\n"
			      "gpu=2\n"
			      "use_gpu = no\n"
			      "[sim]\n"
			      "version = 5 ; inline comment\n"
			      "max_buffers = 0x10\n"
			      "dma_data_bytes = 64\n"
			      "clock_hz = 156250000\n"
			      "rate = 0\n"
			      "size = 8K\n"
			      "pattern = counter\n"
			      "[buffers]\n"
			      "size = 1MiB\n"
			      "max = 16\n"
			      "[access]\n"
			      "allow_other = yes\n"
			      "uid = 1000\n"
			      "gid = root\n"
			      "mode = 0660\n"
			      "[monitor]\n"
			      "interval_ms = 250\n"
			      "errors_kept = 10\n",
			      &c, err, sizeof(err)),
			 0);
	ck_assert_str_eq(err, "");
	ck_assert_str_eq(c.device, "/dev/datadev_1");
	ck_assert(c.latency_legacy);
	ck_assert_int_eq(c.gpu_index, 2);
	ck_assert(!c.use_gpu);
	ck_assert_uint_eq(c.sim_version, 5);
	ck_assert_uint_eq(c.sim_max_buffers, 16);
	ck_assert_uint_eq(c.sim_dma_data_bytes, 64);
	ck_assert_uint_eq(c.sim_clock_hz, 156250000);
	ck_assert_uint_eq(c.sim_rate_hz, 0);
	ck_assert_uint_eq(c.sim_size, 8192);
	ck_assert_str_eq(c.sim_pattern, "counter");
	ck_assert_uint_eq(c.buffer_size, 1 << 20);
	ck_assert_uint_eq(c.buffer_max, 16);
	ck_assert(c.allow_other);
	ck_assert(c.uid_set && c.uid == 1000);
	ck_assert(c.gid_set && c.gid == 0);
	ck_assert_uint_eq(c.mode, 0660);
	ck_assert_uint_eq(c.interval_ms, 250);
	ck_assert_uint_eq(c.errors_kept, 10);
}
END_TEST

/* A partial file changes only what it names. */
START_TEST(test_partial_file)
{
	struct ga_config c, d;
	char err[512];

	ck_assert_int_eq(load("[sim]\nversion = 2\n", &c, err, sizeof(err)), 0);
	ga_config_defaults(&d);
	d.sim_version = 2;
	ck_assert(cfg_eq(&c, &d));
	ck_assert_int_eq(load("", &c, err, sizeof(err)), 0);
	ga_config_defaults(&d);
	ck_assert(cfg_eq(&c, &d));
}
END_TEST

/* Each kind of error: rc, the line named, and words that must appear. */
static const struct bad {
	const char *text;
	int rc;
	int line;
	const char *words[3];
} bad_files[] = {
	{"[device]\npath = sim\n[bogus]\nx = 1\n", -EINVAL, 3, {"unknown section", "bogus"}},
	{"[device]\n[nothing_here]\n", -EINVAL, 2, {"unknown section", "nothing_here"}},
	{"[sim]\nversion = 4\nfoo = 1\n", -EINVAL, 3, {"unknown key", "'foo'", "max_buffers"}},
	{"[sim]\n\n\nversion = 9\n", -ERANGE, 4, {"[sim] version", "'9'", "1..5"}},
	{"[sim]\nversion = abc\n", -EINVAL, 2, {"[sim] version", "abc"}},
	{"[sim]\nversion = -1\n", -EINVAL, 2, {"version"}},
	{"[sim]\nversion =\n", -EINVAL, 2, {"version"}},
	{"[sim]\nmax_buffers = 1025\n", -ERANGE, 2, {"max_buffers"}},
	{"[sim]\ndma_data_bytes = 24\n", -EINVAL, 2, {"dma_data_bytes", "power of two"}},
	{"[sim]\nclock_hz = 0\n", -ERANGE, 2, {"clock_hz"}},
	{"[sim]\nsize = 5G\n", -ERANGE, 2, {"[sim] size"}},
	{"[sim]\npattern = sine\n", -EINVAL, 2, {"pattern", "sine"}},
	{"[buffers]\nsize = 100K\n", -EINVAL, 2, {"[buffers] size", "multiple of 65536"}},
	{"[buffers]\nsize = 0\n", -ERANGE, 2, {"[buffers] size"}},
	{"[buffers]\nmax = 0\n", -ERANGE, 2, {"[buffers] max"}},
	{"[device]\npath = datadev_0\n", -EINVAL, 2, {"[device] path", "absolute"}},
	{"[device]\npath = /dev/a b\n", -EINVAL, 2, {"[device] path"}},
	{"[device]\nlatency_block = old\n", -EINVAL, 2, {"latency_block", "legacy"}},
	{"[device]\nuse_gpu = maybe\n", -EINVAL, 2, {"use_gpu", "maybe"}},
	{"[device]\ngpu = 256\n", -ERANGE, 2, {"gpu"}},
	{"[device]\npin = nvidia\n",
	 -EINVAL,
	 2,
	 {"[device] pin", "'nvidia'", "auto, p2p or dmabuf"}},
	{"[device]\npin = DMABUF\n", -EINVAL, 2, {"[device] pin", "'DMABUF'"}},
	{"[device]\npin = dma buf\n", -EINVAL, 2, {"[device] pin"}},
	{"[device]\npin =\n", -EINVAL, 2, {"[device] pin"}},
	{"[access]\nmode = 0999\n", -EINVAL, 2, {"mode", "octal"}},
	{"[access]\nmode = 01777\n", -ERANGE, 2, {"mode"}},
	{"[access]\nuid = no_such_user_here\n", -EINVAL, 2, {"uid", "no_such_user_here"}},
	{"[access]\ngid = 4294967295\n", -ERANGE, 2, {"gid"}},
	{"[monitor]\ninterval_ms = 0\n", -ERANGE, 2, {"interval_ms"}},
	{"version = 4\n", -EINVAL, 1, {"outside any section"}},
	{"[sim]\nthis line is not ini\n", -EINVAL, 2, {"cannot parse"}},
	{"[sim\nversion = 4\n", -EINVAL, 1, {"cannot parse"}},
	{"[sim]\nversion = 4\nversion = 5\n", -EINVAL, 3, {"set twice", "line 2"}},
	{"[sim]\nrate = 10\n  20\n", -EINVAL, 3, {"indented", "rate"}},
	/* the first error wins, whichever kind */
	{"[sim]\nnot ini\nversion = 99\n", -EINVAL, 2, {"cannot parse"}},
	{"[sim]\nversion = 99\nnot ini\n", -ERANGE, 2, {"version"}},
	{"[bogus]\n[sim]\nversion = 99\n", -EINVAL, 1, {"bogus"}},
};

START_TEST(test_bad_files)
{
	const struct bad *b = &bad_files[_i];
	struct ga_config c, d;
	char err[512], where[128];
	int rc;

	rc = load(b->text, &c, err, sizeof(err));
	ck_assert_msg(rc == b->rc, "case %d: rc %d want %d (%s)", _i, rc, b->rc, err);
	snprintf(where, sizeof(where), "%s:%d: ", path, b->line);
	ck_assert_msg(strncmp(err, where, strlen(where)) == 0, "case %d: \"%s\" does not start %s",
		      _i, err, where);
	for (int w = 0; w < 3 && b->words[w]; w++)
		ck_assert_msg(strstr(err, b->words[w]), "case %d: \"%s\" lacks \"%s\"", _i, err,
			      b->words[w]);
	/* all or nothing: nothing from the file was applied */
	ga_config_defaults(&d);
	ck_assert_msg(cfg_eq(&c, &d), "case %d: config changed by a failed load", _i);
	/* and the explanation is what ga_last_error() says */
	ck_assert_str_eq(ga_last_error(), err);
}
END_TEST

START_TEST(test_missing_file)
{
	struct ga_config c;
	char err[256];

	ga_config_defaults(&c);
	ck_assert_int_eq(ga_config_load(&c, "/nonexistent/gpuasyncfs.conf", err, sizeof(err)),
			 -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/gpuasyncfs.conf"));
}
END_TEST

START_TEST(test_set)
{
	struct ga_config c, d;
	char err[256];

	ga_config_defaults(&c);
	ck_assert_int_eq(ga_config_set(&c, "sim", "version", "5", err, sizeof(err)), 0);
	ck_assert_uint_eq(c.sim_version, 5);
	ck_assert_int_eq(ga_config_set(&c, NULL, "sim.version", "3", err, sizeof(err)), 0);
	ck_assert_uint_eq(c.sim_version, 3);
	ck_assert_int_eq(ga_config_set(&c, NULL, "rate", "10", err, sizeof(err)), 0);
	ck_assert_uint_eq(c.sim_rate_hz, 10);
	ck_assert_int_eq(ga_config_set(&c, "", "buffers.size", "128K", err, sizeof(err)), 0);
	ck_assert_uint_eq(c.buffer_size, 128 * 1024);
	ck_assert_int_eq(ga_config_set(&c, NULL, "latency_block", "legacy", err, sizeof(err)), 0);
	ck_assert(c.latency_legacy);
	ck_assert_int_eq(ga_config_set(&c, NULL, "uid", "0", err, sizeof(err)), 0);
	ck_assert(c.uid_set && c.uid == 0);
	ck_assert_int_eq(ga_config_set(&c, NULL, "uid", "", err, sizeof(err)), 0);
	ck_assert(!c.uid_set);

	/* errors change nothing and explain */
	d = c;
	ck_assert_int_eq(ga_config_set(&c, NULL, "size", "4K", err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "ambiguous"));
	ck_assert_ptr_nonnull(strstr(err, "sim.size"));
	ck_assert_int_eq(ga_config_set(&c, NULL, "colour", "red", err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "colour"));
	ck_assert_int_eq(ga_config_set(&c, "sim", "path", "sim", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(ga_config_set(&c, NULL, "nosuch.version", "4", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(ga_config_set(&c, NULL, "version", "6", err, sizeof(err)), -ERANGE);
	ck_assert_ptr_nonnull(strstr(err, "[sim] version"));
	ck_assert_str_eq(ga_last_error(), err);
	ck_assert_int_eq(ga_config_set(&c, NULL, "buffers.size", "1000", err, sizeof(err)),
			 -ERANGE);
	ck_assert_int_eq(ga_config_set(&c, NULL, "buffers.size", "96K", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(ga_config_set(&c, NULL, "mode", "rw", err, sizeof(err)), -EINVAL);
	ck_assert(cfg_eq(&c, &d));
}
END_TEST

/* pin: the three names through -o and device.pin, and what is refused. */
START_TEST(test_pin)
{
	static const char *const bad[] = {"",		"p2p dmabuf", "dmabuf,",   "Auto",
					  "nvidia_p2p", "1",	      "dmabuf\n\n"};
	struct ga_config c, d;
	char err[256];

	ga_config_defaults(&c);
	ck_assert_int_eq(c.pin, GA_PIN_AUTO);
	ck_assert_int_eq(ga_config_set(&c, NULL, "pin", "dmabuf", err, sizeof(err)), 0);
	ck_assert_int_eq(c.pin, GA_PIN_DMABUF);
	ck_assert_int_eq(ga_config_set(&c, NULL, "device.pin", "p2p", err, sizeof(err)), 0);
	ck_assert_int_eq(c.pin, GA_PIN_P2P);
	ck_assert_int_eq(ga_config_set(&c, "device", "pin", "auto", err, sizeof(err)), 0);
	ck_assert_int_eq(c.pin, GA_PIN_AUTO);
	c.pin = GA_PIN_DMABUF;
	d = c;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(ga_config_set(&c, NULL, "pin", bad[i], err, sizeof(err)), -EINVAL);
		ck_assert_msg(strstr(err, "[device] pin") && strstr(err, "auto, p2p or dmabuf"),
			      "pin=%s: %s", bad[i], err);
		ck_assert_str_eq(ga_last_error(), err);
		ck_assert(cfg_eq(&c, &d)); /* nothing changed */
	}
	/* The library's own parser: one trailing newline and blanks are
	 * fine, as in every file of the mount. */
	for (int p = 0; p < GA_PIN_COUNT; p++) {
		char text[32];
		enum ga_pin got = GA_PIN_COUNT;

		snprintf(text, sizeof(text), " %s\n", ga_pin_name((enum ga_pin)p));
		ck_assert_int_eq(ga_pin_parse(text, &got), 0);
		ck_assert_int_eq(got, p);
	}
	ck_assert_ptr_null(ga_pin_name(GA_PIN_COUNT));
	ck_assert_int_eq(ga_pin_parse("dmabufx", &(enum ga_pin){0}), -EINVAL);
	ck_assert_ptr_nonnull(strstr(ga_last_error(), "dmabufx"));
	ck_assert_int_eq(ga_pin_parse(NULL, &(enum ga_pin){0}), -EINVAL);
}
END_TEST

/* Render, load the rendering into defaults, get the same config back. */
static void round_trip(const struct ga_config *c)
{
	char text[8192], err[512];
	struct ga_config back;
	int n;

	n = ga_config_format(c, text, sizeof(text));
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(n, (int)strlen(text));
	ck_assert_msg(load(text, &back, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(cfg_eq(c, &back), "round trip differs:\n%s", text);
}

START_TEST(test_round_trip)
{
	struct ga_config c;

	ga_config_defaults(&c);
	round_trip(&c);

	snprintf(c.device, sizeof(c.device), "/dev/datadev_3");
	c.latency_legacy = true;
	c.gpu_index = 7;
	c.use_gpu = false;
	c.pin = GA_PIN_DMABUF;
	c.sim_version = 1;
	c.sim_max_buffers = 12;
	c.sim_dma_data_bytes = 16;
	c.sim_clock_hz = 156250000;
	c.sim_rate_hz = 0;
	c.sim_size = 1000; /* not a whole K: stays bytes */
	snprintf(c.sim_pattern, sizeof(c.sim_pattern), "zero");
	c.buffer_size = 3 << 16;
	c.buffer_max = 1;
	c.allow_other = true;
	c.uid_set = c.gid_set = true;
	c.uid = 1234;
	c.gid = 5678;
	c.mode = 0600;
	c.interval_ms = 3600000;
	c.errors_kept = 100000;
	round_trip(&c);
}
END_TEST

START_TEST(test_format)
{
	static const char *const sections[] = {"[device]", "[sim]", "[buffers]", "[access]",
					       "[monitor]"};
	struct ga_config c;
	char text[8192], small[32];
	int n;

	ga_config_defaults(&c);
	n = ga_config_format(&c, text, sizeof(text));
	ck_assert_int_gt(n, 0);
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		ck_assert_ptr_nonnull(strstr(text, sections[i]));
	ck_assert_ptr_nonnull(strstr(text, "\npath = sim\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nmode = 0644\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nsize = 64K\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nlatency_block = current\n"));
	ck_assert_ptr_nonnull(strstr(text, "\npin = auto\n"));
	/* too small: an error, and still a terminated string */
	ck_assert_int_eq(ga_config_format(&c, small, sizeof(small)), -ENOSPC);
	ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
	ck_assert_int_eq(ga_config_format(&c, text, (size_t)n), -ENOSPC);
	ck_assert_int_eq(ga_config_format(&c, text, (size_t)n + 1), n);
}
END_TEST

START_TEST(test_device_spec)
{
	struct ga_config c;
	char buf[256];
	int n;

	ga_config_defaults(&c);
	n = ga_config_device_spec(&c, buf, sizeof(buf));
	ck_assert_str_eq(buf, "sim:version=4,dma_data_bytes=32,clock_hz=250000000,latency=current,"
			      "rate=1000,size=4096,pattern=prbs");
	ck_assert_int_eq(n, (int)strlen(buf));

	c.sim_max_buffers = 8;
	c.latency_legacy = true;
	c.sim_version = 5;
	ga_config_device_spec(&c, buf, sizeof(buf));
	ck_assert_str_eq(buf, "sim:version=5,max_buffers=8,dma_data_bytes=32,clock_hz=250000000,"
			      "latency=legacy,rate=1000,size=4096,pattern=prbs");

	snprintf(c.device, sizeof(c.device), "/dev/datadev_0");
	ck_assert_int_eq(ga_config_device_spec(&c, buf, sizeof(buf)), 14);
	ck_assert_str_eq(buf, "/dev/datadev_0");
	ck_assert_int_eq(ga_config_device_spec(&c, buf, 5), -ENOSPC);
}
END_TEST

/* Every generator pattern is named where a user meets the list: the
 * refusal of a bad one, the mounted config file's comment (the key
 * table's) and gpuasyncfs.conf(5). */
START_TEST(test_pattern_lists)
{
	char why[256], *text[2], *page;
	static char rendered[16384];
	struct ga_config c;

	ga_config_defaults(&c);
	ck_assert_int_eq(ga_config_set(&c, "sim", "pattern", "sine", why, sizeof(why)), -EINVAL);
	ck_assert_int_gt(ga_config_format(&c, rendered, sizeof(rendered)), 0);
	text[0] = strstr(rendered, "frame generator payload:");
	ck_assert_ptr_nonnull(text[0]);
	page = doc_file_read(doc_file_path("", __FILE__, "man/gpuasyncfs.conf.5"));
	ck_assert_ptr_nonnull(page);
	text[1] = strstr(page, ".B pattern");
	ck_assert_ptr_nonnull(text[1]);
	for (int p = 0; p <= GA_PATTERN_LAST; p++) {
		const char *name = ga_pattern_name((enum ga_pattern)p);
		char *eol = strchr(text[0], '\n');

		ck_assert_msg(strstr(why, name), "the refusal does not name %s: %s", name, why);
		ck_assert_msg(eol && memmem(text[0], (size_t)(eol - text[0]), name, strlen(name)),
			      "the config comment does not name pattern %s", name);
		ck_assert_msg(strstr(text[1], name), "gpuasyncfs.conf(5) does not name pattern %s",
			      name);
	}
	for (int p = 0; p <= GA_PATTERN_LAST; p++)
		ck_assert_int_eq(ga_config_set(&c, "sim", "pattern",
					       ga_pattern_name((enum ga_pattern)p), why, sizeof(why)),
				 0);
	free(page);
}
END_TEST

static Suite *config_suite(void)
{
	return suite_of(
		"config", "config", 0,
		SUITE_TESTS({test_defaults}, {test_good_file}, {test_partial_file},
			    {test_bad_files, (int)(sizeof(bad_files) / sizeof(bad_files[0]))},
			    {test_missing_file}, {test_set}, {test_pin}, {test_round_trip},
			    {test_format}, {test_device_spec}, {test_pattern_lists}));
}

int main(void)
{
	return run_suite(config_suite());
}
