/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * settings.yaml and state.yaml (issue 22 item 2), on real mounts with cat,
 * cp and python3-yaml:
 *   - the export parses as YAML, in pyrogue's shape (Root.AxiPcieCore.
 *     AxiGpuAsyncCore), with the register files' values in pyrogue's
 *     display (enum names, hex, True/False); state.yaml has the RO ones too;
 *   - saved with cp, changed, restored with cp, on every firmware flavour;
 *   - a full-tree YAML as pyrogue's SaveConfig writes it (other devices'
 *     nodes around ours) applies our subtree and skips the rest, one errors
 *     line per skipped node; RO entries (a state dump) pass silently;
 *   - several files in order overlay each other (cat a b > settings.yaml);
 *   - AxiReadCache/AxiWriteCache: exported and applied here although pyrogue
 *     marks them RO; a file without them leaves them alone;
 *   - bad input is refused whole (errno, an errors line naming the line,
 *     nothing changed); a card that does not hold a value is rolled back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const char *const FLAVOURS[] = {
	"-o version=1", "-o version=3", "-o version=4", "-o version=4 -o latency_block=legacy",
	"-o version=5",
};
#define NFLAV ((int)(sizeof(FLAVOURS) / sizeof(FLAVOURS[0])))

static char dir[64];

/*
 * A tree file as pyrogue's SaveConfig writes it for a KCU1500-like root:
 * other devices with their RW variables (AxiVersion's ScratchPad, a
 * monitor, an application), a variable of ours pyrogue has but we do not,
 * our one RW variable in enum form, a cache bit in hex, and a RO variable
 * as a state dump would carry it.
 */
#define CORE "Root:\n  AxiPcieCore:\n    AxiGpuAsyncCore:\n      AxiReadCache: 0x9\n"

static const char FULL_TREE[] = "Root:\n"
				"  enable: true\n"
				"  AxiPcieCore:\n"
				"    AxiVersion:\n"
				"      ScratchPad: 0x0\n"
				"      FpgaReloadHalt: 0x0\n"
				"    DmaIbAxisMon:\n"
				"      Ch[0]: {}\n"
				"    AxiGpuAsyncCore:\n"
				"      # the card's one pyrogue RW variable\n"
				"      AxisDeMuxSelect: CPU_path\n"
				"      AxiReadCache: '0x2'\n"
				"      RxFrameCnt: 12\n"
				"      NotAVariable: 3\n"
				"      GpuIbAxisMon:\n"
				"        Ch[0]:\n"
				"          FrameCnt: 0\n"
				"    Qsfp[0]:\n"
				"      TxDisable:\n"
				"      - false\n"
				"      - true\n"
				"  App:\n"
				"    Lane[0]:\n"
				"      Enable: True\n"
				"      Mode: \"fast\"\n"
				"    Trigger: {rate: 120}\n";

START_TEST(export_parses)
{
	const char *check =
		"import yaml, sys, os\n"
		"m = os.environ['M']\n"
		"rd = lambda f: open(m + '/' + f).read().strip()\n"
		"s = yaml.safe_load(open(m + '/settings.yaml'))\n"
		"c = s['Root']['AxiPcieCore']['AxiGpuAsyncCore']\n"
		"want = ['AxiReadCache', 'AxiWriteCache']\n"
		"if os.path.exists(m + '/registers/demux_select'): want.append('AxisDeMuxSelect')\n"
		"assert list(s) == ['Root'] and list(s['Root']) == ['AxiPcieCore'], s\n"
		"assert list(c) == want, c\n"
		"assert c['AxiReadCache'] == int(rd('registers/ar_cache'), 0) == 3, c\n"
		"assert c['AxiWriteCache'] == int(rd('registers/aw_cache'), 0) == 5, c\n"
		"if 'AxisDeMuxSelect' in c: assert c['AxisDeMuxSelect'] == 'CPU_path', c\n"
		"t = yaml.safe_load(open(m + "
		"'/state.yaml'))['Root']['AxiPcieCore']['AxiGpuAsyncCore']\n"
		"assert t['VersionNumber'] == int(rd('device/version')), t\n"
		"assert t['RxFrameCnt'] == int(rd('registers/rx_frame_count')) == 2, t\n"
		"assert t['WriteEnable'] is True, t\n"
		"assert t['AxiBusWidth'] == int(rd('device/dma_data_bytes')), t\n"
		"assert 'CountReset' not in t, t\n"
		"for k in want: assert t[k] == c[k], k\n"
		"if os.path.exists(m + '/registers/inbound_frames'):\n"
		"    assert t['GpuIbAxisMon']['Ch[0]']['FrameCnt'] == 2, t\n"
		"    txt = open(m + '/state.yaml').read()\n"
		"    assert '      FrameCnt: 0x2\\n' in txt, txt\n"
		/* surf's Bandwidth: RawBandwidth (bytes/s) * 8e-6 Mbps, '{:1.1f}' */
		"    for ln in [l for l in txt.splitlines() if 'RawBandwidth' in l]:\n"
		"        k, raw = ln.split(': ')\n"
		"        link = k.replace('Raw', '') + ': ' + '{:1.1f}'.format(int(raw, 16) * 8e-6)\n"
		"        assert link == txt.split(ln + '\\n')[1].splitlines()[0], (link, txt)\n"
		"    assert t['RemoteWriteMaxSize'] == int(rd('registers/write_max_size')), t\n"
		"    assert ': 0x' in open(m + "
		"'/state.yaml').read().split('RemoteWriteMaxSize')[1][:4]\n";

	if (!have_py("yaml", "python3-yaml"))
		return;
	tmp_dir(dir, sizeof(dir), "yaml");
	put_file_in(dir, "check.py", check);
	mnt_start(FLAVOURS[_i]);
	ck_assert_int_eq(
		sh("cd $M && echo 3 > registers/ar_cache && echo 5 > registers/aw_cache && "
		   "mkdir buffers/0 buffers/1 && echo 1 > buffers/0/write_enable && "
		   "echo 1 > buffers/1/write_enable && echo 1 > registers/write_enable && "
		   "echo 0 > sim/rate && echo 2 > sim/remaining && echo 1 > sim/running"),
		0);
	wait_num("sim/stats/delivered", 2);
	ck_assert_int_eq(
		sh("[ ! -e $M/registers/demux_select ] || echo 0 > $M/registers/demux_select"), 0);
	ck_assert_int_eq(sh("M=$M python3 %s/check.py", dir), 0);
	/* state.yaml is read-only */
	ck_assert_int_eq(sh("test \"$(stat -c %%a $M/state.yaml)\" = 444"), 0);
	ck_assert_int_eq(mnt_stop(), 0);
	rm_dir(dir);
}
END_TEST

/* Saved with cp, changed, restored with cp: the same text again. */
START_TEST(save_change_restore)
{
	char *saved, *again;

	tmp_dir(dir, sizeof(dir), "yaml");
	mnt_start(FLAVOURS[_i]);
	ck_assert_int_eq(
		sh("echo 0x6 > $M/registers/ar_cache && cp $M/settings.yaml %s/card.yaml", dir), 0);
	saved = readf("settings.yaml");
	ck_assert_int_eq(sh("cd $M/registers && echo 0x3 > ar_cache && echo 0x5 > aw_cache && "
			    "{ [ ! -e demux_select ] || echo 0 > demux_select; }"),
			 0);
	again = readf("settings.yaml");
	ck_assert_str_ne(again, saved);
	free(again);
	ck_assert_int_eq(sh("cp %s/card.yaml $M/settings.yaml", dir), 0);
	assert_file_eq("settings.yaml", saved);
	free(saved);
	ck_assert_uint_eq(readnum("registers/ar_cache"), 6);
	ck_assert_uint_eq(readnum("registers/aw_cache"), 0);
	ck_assert_int_eq(mnt_stop(), 0);
	rm_dir(dir);
}
END_TEST

/* A full-tree file: our subtree applied, every other node skipped with
 * one errors line each, pyrogue's RO entries passed over silently. */
START_TEST(full_tree)
{
	static const char *const skipped[] = {
		"line 2: Root.enable skipped",
		"line 4: Root.AxiPcieCore.AxiVersion skipped",
		"line 7: Root.AxiPcieCore.DmaIbAxisMon skipped",
		"line 14: Root.AxiPcieCore.AxiGpuAsyncCore.NotAVariable skipped: no such",
		"line 18: Root.AxiPcieCore.Qsfp[0] skipped",
		"line 22: Root.App skipped",
	};
	unsigned int lines, n = sizeof(skipped) / sizeof(skipped[0]);
	char *errs;

	tmp_dir(dir, sizeof(dir), "yaml");
	put_file_in(dir, "tree.yaml", FULL_TREE);
	mnt_start("-o version=4");
	ck_assert_int_eq(sh("echo 0x7 > $M/registers/aw_cache"), 0);
	lines = err_lines();
	ck_assert_int_eq(sh("cat %s/tree.yaml > $M/settings.yaml", dir), 0);
	ck_assert_uint_eq(readnum("registers/demux_select"), 0);
	ck_assert_uint_eq(readnum("registers/ar_cache"), 2);
	ck_assert_uint_eq(readnum("registers/aw_cache"), 7); /* not in the file: kept */
	ck_assert_uint_eq(err_lines(), lines + n);
	errs = readf("errors");
	for (unsigned int k = 0; k < n; k++)
		ck_assert_msg(strstr(errs, skipped[k]), "no '%s' in errors:\n%s", skipped[k], errs);
	ck_assert_ptr_null(strstr(errs, "RxFrameCnt"));
	ck_assert_ptr_null(strstr(errs, "GpuIbAxisMon"));
	free(errs);
	/* the same as pyrogue's dotted top-level path */
	put_file_in(dir, "dotted.yaml",
		    "Root.AxiPcieCore.AxiGpuAsyncCore:\n  AxisDeMuxSelect: GPU_path\n");
	ck_assert_int_eq(sh("cat %s/dotted.yaml > $M/settings.yaml", dir), 0);
	ck_assert_uint_eq(readnum("registers/demux_select"), 1);
	/* our own state dump loads back: its RO variables pass silently */
	lines = err_lines();
	ck_assert_int_eq(sh("echo 0x4 > $M/registers/ar_cache && cp $M/state.yaml %s/state.yaml && "
			    "echo 0 > $M/registers/ar_cache && "
			    "cat %s/state.yaml > $M/settings.yaml",
			    dir, dir),
			 0);
	ck_assert_uint_eq(readnum("registers/ar_cache"), 4);
	ck_assert_uint_eq(err_lines(), lines);
	ck_assert_int_eq(mnt_stop(), 0);
	/* version 1 has no AxisDeMuxSelect: skipped with its line, the rest applied */
	mnt_start("-o version=1");
	lines = err_lines();
	ck_assert_int_eq(sh("cat %s/tree.yaml > $M/settings.yaml", dir), 0);
	ck_assert_uint_eq(readnum("registers/ar_cache"), 2);
	ck_assert_uint_eq(err_lines(), lines + n + 1);
	errs = readf("errors");
	ck_assert_ptr_nonnull(strstr(errs, "AxisDeMuxSelect skipped: not part of this firmware"));
	free(errs);
	ck_assert_int_eq(mnt_stop(), 0);
	rm_dir(dir);
}
END_TEST

/* -o settings=FILE.yaml applies pyrogue YAML at mount; a refused one
 * stops the mount. */
START_TEST(applied_at_mount)
{
	char opt[160], *out;

	tmp_dir(dir, sizeof(dir), "yaml");
	put_file_in(dir, "tree.yaml", FULL_TREE);
	snprintf(opt, sizeof(opt), "-o version=4 -o settings=%s/tree.yaml", dir);
	mnt_start(opt);
	ck_assert_uint_eq(readnum("registers/ar_cache"), 2);
	ck_assert_uint_eq(readnum("registers/demux_select"), 0);
	ck_assert_int_eq(mnt_stop(), 0);
	put_file_in(dir, "bad.yaml", CORE "      AxisDeMuxSelect: sideways\n");
	ck_assert_int_eq(sh("mkdir %s/m", dir), 0);
	out = sh_out("$GAFS --sim %s/m -o settings=%s/bad.yaml 2>&1; echo rc=$?", dir, dir);
	ck_assert_msg(strstr(out, "line 5: AxiGpuAsyncCore.AxisDeMuxSelect: 'sideways'") &&
			      !strstr(out, "rc=0"),
		      "%s", out);
	free(out);
	ck_assert(!is_mounted(dir));
	rm_dir(dir);
}
END_TEST

/* Several files in order, as LoadConfig of a list: the later value wins,
 * and what only the earlier sets stays applied. */
START_TEST(overlay)
{
	tmp_dir(dir, sizeof(dir), "yaml");
	put_file_in(dir, "base.yaml",
		    "Root:\n  AxiPcieCore:\n    AxiGpuAsyncCore:\n"
		    "      AxiReadCache: 0x1\n      AxiWriteCache: 0x2\n"
		    "      AxisDeMuxSelect: CPU_path\n");
	put_file_in(dir, "site.yaml",
		    "Root:\n  AxiPcieCore:\n    AxiGpuAsyncCore:\n"
		    "      AxiWriteCache: 0xb\n      AxisDeMuxSelect: GPU_path\n");
	mnt_start("-o version=5");
	ck_assert_int_eq(sh("cat %s/base.yaml %s/site.yaml > $M/settings.yaml", dir, dir), 0);
	ck_assert_uint_eq(readnum("registers/ar_cache"), 1);
	ck_assert_uint_eq(readnum("registers/aw_cache"), 0xb);
	ck_assert_uint_eq(readnum("registers/demux_select"), 1);
	ck_assert_int_eq(sh("cat %s/site.yaml %s/base.yaml > $M/settings.yaml", dir, dir), 0);
	ck_assert_uint_eq(readnum("registers/aw_cache"), 2);
	ck_assert_uint_eq(readnum("registers/demux_select"), 0);
	/* within one file, as pyrogue's loader: a repeated entry, the later wins */
	ck_assert_int_eq(writef("settings.yaml",
				"Root:\n  AxiPcieCore:\n    AxiGpuAsyncCore:\n"
				"      AxiWriteCache: 0x3\n      AxiWriteCache: 0x4\n"),
			 0);
	ck_assert_uint_eq(readnum("registers/aw_cache"), 4);
	ck_assert_int_eq(mnt_stop(), 0);
	rm_dir(dir);
}
END_TEST

START_TEST(bad_input_refused_whole)
{
	mnt_start("-o version=4");
	ck_assert_int_eq(sh("echo 0x1 > $M/registers/ar_cache"), 0);
	write_refused("settings.yaml", CORE "      AxisDeMuxSelect: GPU\n", EINVAL,
		"line 5: AxiGpuAsyncCore.AxisDeMuxSelect: 'GPU' is not CPU_path or GPU_path");
	write_refused("settings.yaml", CORE "      AxiWriteCache: 0x10\n", ERANGE,
		"line 5: AxiGpuAsyncCore.AxiWriteCache: '0x10': out of range");
	write_refused("settings.yaml", CORE "      AxiWriteCache: many\n", EINVAL, "not a number");
	write_refused("settings.yaml", CORE "      AxiWriteCache: [1, 2]\n", EINVAL, "line 5");
	write_refused("settings.yaml", CORE "      AxiWriteCache: &a 1\n", EINVAL, "not understood");
	write_refused("settings.yaml", CORE "      - 1\n", EINVAL, "line 5");
	write_refused("settings.yaml", CORE "\tAxiWriteCache: 1\n", EINVAL, "line 5: a tab");
	write_refused("settings.yaml", CORE "        AxiWriteCache: 1\n", EINVAL, "line 5: indented below a key");
	write_refused("settings.yaml", CORE "      AxiWriteCache 1\n", EINVAL, "is not 'name: value'");
	write_refused("settings.yaml", "Root:\n  AxiPcieCore: 3\n", EINVAL, "AxiPcieCore is a device");
	write_refused("settings.yaml", "- Root\n", EINVAL, "line 1");
	write_refused("settings.yaml", CORE "---\nRoot: {}\n", EINVAL, "a second YAML document");
	write_refused("settings.yaml", CORE "      AxiWriteCache: \"\\x31\"\n", EINVAL, "not understood");
	/* a list elsewhere is no reason to refuse: that node is skipped */
	ck_assert_int_eq(writef("settings.yaml", CORE "  App:\n    - 1\n    - {a: b}\n"), 0);
	ck_assert_uint_eq(readnum("registers/ar_cache"), 9);
	/* state.yaml cannot be written */
	expect_refused("state.yaml", CORE, EACCES);
}
END_TEST

/* A card that does not hold a value: every setting rolled back (EIO). */
START_TEST(rolled_back)
{
	mnt_start("-o version=4");
	ck_assert_int_eq(sh("echo 0x1 > $M/registers/ar_cache && echo 0x2 > $M/registers/aw_cache"),
			 0);
	ck_assert_int_eq(writef("sim/inject_register_ignored", "1"), 0);
	ck_assert_int_eq(writef("settings.yaml", CORE "      AxiWriteCache: 0x5\n"), -EIO);
	ck_assert_msg(strstr(err_last(), "EIO") && strstr(err_last(), "line"), "%s", err_last());
	ck_assert_uint_eq(readnum("registers/ar_cache"), 1);
	ck_assert_uint_eq(readnum("registers/aw_cache"), 2);
	ck_assert_int_eq(writef("settings.yaml", CORE "      AxiWriteCache: 0x5\n"), 0);
	ck_assert_uint_eq(readnum("registers/aw_cache"), 5);
}
END_TEST

SUITE_MAIN("settings_yaml", "settings_yaml", 120, {export_parses, NFLAV},
	   {save_change_restore, NFLAV}, {full_tree}, {overlay}, {applied_at_mount},
	   {bad_input_refused_whole}, {rolled_back})
