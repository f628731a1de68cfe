// SPDX-License-Identifier: GPL-2.0
/*
 * kt case for the card's /proc entry (upstream datadev's status text,
 * kmod/README.md "/proc"): each value it prints is checked against what
 * the card and the driver say through their own interfaces (registers,
 * buffer table, sysfs), before buffers, with buffers live and enabled, and
 * after they are gone.  Whether each key is spelled and ordered as
 * upstream's is proc_cmp.sh's job, against upstream's own output.
 *
 * And the driver's own count of the commands it answered (debugfs
 * gpuasync/<card>/commands): a row per command of gpuasync/ioctls.def, in
 * its order, counting exactly the calls that reached that command.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuasync/axiversion.h"
#include "kt.h"

static char proc_text[16384];

/* The card's /proc text, re-read; 0 on success. */
static int proc_read(void)
{
	char path[128];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%s", strrchr(dev_path, '/') + 1);
	f = fopen(path, "r");
	if (!f) {
		fail(__func__, __LINE__, "open %s: %s", path, strerror(errno));
		proc_text[0] = 0;
		return -1;
	}
	n = fread(proc_text, 1, sizeof(proc_text) - 1, f);
	proc_text[n] = 0;
	fclose(f);
	return 0;
}

/*
 * The value of the @nth (0: first) line whose key, spaces trimmed, is
 * @key, up to the end of the line; NULL when there is none.
 */
static const char *proc_value_nth(const char *key, int nth)
{
	static char val[512];
	const char *line = proc_text;

	while (*line) {
		const char *end = strchrnul(line, '\n'), *sep = strstr(line, " : "), *k = line;

		if (sep && sep < end) {
			const char *ke = sep;

			while (*k == ' ')
				k++;
			while (ke > k && ke[-1] == ' ')
				ke--;
			if ((size_t)(ke - k) == strlen(key) && !strncmp(k, key, ke - k) && nth-- == 0) {
				snprintf(val, sizeof(val), "%.*s", (int)(end - sep - 3), sep + 3);
				return val;
			}
		}
		line = *end ? end + 1 : end;
	}
	return NULL;
}

static const char *proc_value(const char *key)
{
	return proc_value_nth(key, 0);
}

/* Does key @key read exactly @want? */
static void expect(const char *key, const char *want, const char *when)
{
	const char *v = proc_value(key);

	CHECK(v && !strcmp(v, want), "%s: '%s' is '%s', want '%s'", when, key, v ? v : "(absent)",
	      want);
}

static void expect_u(const char *key, unsigned long long want, const char *fmt, const char *when)
{
	char buf[64];

	snprintf(buf, sizeof(buf), fmt, want);
	expect(key, buf, when);
}

/* What the card holds with no buffers: identity, counts and owner. */
static void check_idle(int fd, const char *when)
{
	struct DmaRegisterData r = { .address = GA_FW_BASE };
	char want[GA_FW_TEXT_MAX];
	uint32_t words[64] = { 0 };
	const struct ga_fw_field *f = &ga_fw_fields[GA_FW_BUILD_STAMP];
	unsigned int w;

	if (proc_read())
		return;
	CHECK(!strstr(proc_text, "PCIe["), "%s: an emulated card has no PCIe address", when);
	CHECK_OK(ioctl(fd, DMA_Read_Register, &r));
	expect_u("Firmware Version", r.data, "0x%llx", when);
	for (w = 0; w < f->words; w++) {
		r = (struct DmaRegisterData){ .address = GA_FW_BASE + f->offset + 4 * w };
		CHECK_OK(ioctl(fd, DMA_Read_Register, &r));
		words[w] = r.data;
	}
	ga_fw_format(GA_FW_BUILD_STAMP, words, want, sizeof(want));
	expect("Build String", want, when);
	CHECK(strchr(want, ':'), "%s: build string '%s' has no ':' (the Slurm pairing reads the "
	      "part before it)", when, want);
	expect("Hardware Type", "XilinxKcu1500 (0x00D)", when);
	expect("GPU Async En", "1", when);
	expect("GPUAsync Support", "Enabled", when);
	expect_u("DMA Driver's API Version", DMA_VERSION, "0x%llx", when);
	expect_u("GpuAsyncCore Offset", sys_read("core_offset") > 0 ? sys_read("core_offset")
				    : 0x28000, "0x%llX", when);
	expect_u("GpuAsyncCore Version", version, "%llu", when);
	expect_u("Max Buffers", max_buffers, "%llu", when);
	expect_u("RX Frame Count", field(fd, GA_REG_RX_FRAME_COUNT, 0), "%llu", when);
	expect("Buffer Count", "0", when); /* no CPU buffers: DMA_Get_Buff_Count */
	expect_u("Buffer Size", ioctl(fd, DMA_Get_Buff_Size, 0), "%llu", when);
}

static void t_proc(void)
{
	int fd = open_card(), s = open_stub();
	struct gmem g = galloc(s, 4 * KB64);
	struct ga_buffer_entry e[4];
	char path[128], want[64];
	struct stat st;
	int n, i;

	snprintf(path, sizeof(path), "/proc/%s", strrchr(dev_path, '/') + 1);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0444, "%s mode 0%o", path,
	      st.st_mode & 0777);
	check_idle(fd, "no buffers");
	expect("Owning Process", "0", "no buffers");
	expect("Write Enable", "0", "no buffers");
	CHECK(!strstr(proc_text, "Write Buffer 0"), "a buffer section with no buffers");

	/* Two write buffers and a read buffer, both engines on. */
	CHECK_OK(add_buf(fd, 1, g.va, KB64));
	CHECK_OK(add_buf(fd, 1, g.va + KB64, KB64));
	CHECK_OK(add_buf(fd, 0, g.va + 2 * KB64, KB64));
	CHECK_OK(ioctl(fd, GPU_Enable_Tx, 1));
	CHECK_OK(ioctl(fd, GPU_Enable_Rx, 1));
	n = get_table(fd, e, 4);
	CHECK(n == 3, "table has %d", n);
	if (proc_read() == 0 && n == 3) {
		expect_u("Owning Process", (unsigned long long)getpid(), "%llu", "live");
		expect("Write Buffer Count", "2", "live");
		expect("Write Enable", "1", "live");
		expect("Read Buffer Count", "1", "live");
		expect("Read Enable", "1", "live");
		for (i = 0; i < 3; i++) {
			const char *v = proc_value_nth(e[i].write ? "Write Address" : "Read Address",
						       (int)e[i].index);

			snprintf(want, sizeof(want), "0x%llX", (unsigned long long)e[i].bus_address);
			CHECK(v && !strcmp(v, want), "%s buffer %u address '%s', want %s",
			      e[i].write ? "write" : "read", e[i].index, v ? v : "(absent)", want);
		}
		/* The payload limit the driver programmed (V4 one word, V1 per buffer). */
		snprintf(want, sizeof(want), "0x%X", KB64 - ddb);
		for (i = 0; i < 2; i++) {
			const char *v = proc_value_nth("Write Size", i);

			CHECK(v && !strcmp(v, want), "write size %d '%s', want %s", i,
			      v ? v : "(absent)", want);
		}
		CHECK(!strstr(proc_text, "Write Buffer 2"), "a third write buffer section");
	}
	CHECK_OK(ioctl(fd, GPU_Enable_Tx, 0));
	CHECK_OK(ioctl(fd, GPU_Enable_Rx, 0));
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	check_idle(fd, "removed");
	expect("Owning Process", "0", "removed");
	CHECK(!strstr(proc_text, "Write Buffer 0"), "removed: a buffer section remains");
	gfree(s, &g);
	close(s);
	close(fd);
}

/* ---- debugfs commands ---------------------------------------------------- */

static const char *const cmd_names[] = {
#define GA_DEF_IOCTL(name, ...) #name,
#include <gpuasync/ioctls.def>
};
#define NCMD (sizeof(cmd_names) / sizeof(cmd_names[0]))

/* Every row's count into @n; 0 when the file lists exactly the table. */
static int commands_read(long long *n)
{
	char path[160], line[128], name[64];
	unsigned int i = 0;
	int bad = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/gpuasync/%s/commands",
		 strrchr(dev_path, '/') + 1);
	f = fopen(path, "r");
	if (!f) {
		fail(__func__, __LINE__, "open %s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (i >= NCMD || sscanf(line, "%63s %lld", name, &n[i]) != 2 ||
		    strcmp(name, cmd_names[i]) != 0 || n[i] < 0) {
			fail(__func__, __LINE__, "line %u '%.60s', want '%s COUNT'", i + 1, line,
			     i < NCMD ? cmd_names[i] : "(end)");
			bad = 1;
			break;
		}
		i++;
	}
	fclose(f);
	CHECK(bad || i == NCMD, "%u rows, the table has %zu", i, NCMD);
	return bad || i != NCMD ? -1 : 0;
}

/* The rows whose count moved from @a to @b, by how much: "NAME+N ...". */
static const char *commands_moved(const long long *a, const long long *b)
{
	static char out[512];
	size_t len = 0;

	out[0] = 0;
	for (unsigned int i = 0; i < NCMD && len < sizeof(out) - 80; i++)
		if (a[i] != b[i])
			len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s%+lld",
						len ? " " : "", cmd_names[i], b[i] - a[i]);
	return out;
}

static void t_commands(void)
{
	long long a[NCMD], b[NCMD];
	int fd = open_card();
	unsigned int bad_index = max_buffers + 7;
	/* GA_Get_Buffer_Table with a 1-byte argument: not a size it takes */
	unsigned long table_of_1 =
		_IOC(_IOC_READ | _IOC_WRITE, GA_IOC_TYPE, _IOC_NR(GA_Get_Buffer_Table), 1);

	if (commands_read(a) == 0) {
		/* Answered, refused by the handler, or by our size check. */
		for (int i = 0; i < 3; i++)
			CHECK(ioctl(fd, GPU_Get_Max_Buffers, 0) == (long)max_buffers);
		CHECK_ERR(ioctl(fd, GPU_Set_Write_Enable, &bad_index), EINVAL);
		CHECK_ERR(ioctl(fd, table_of_1, NULL), ENOTTY);
		CHECK_ERR(ioctl(fd, _IO(GA_IOC_TYPE, 0x7f), 0), ENOTTY);
		if (commands_read(b) == 0)
			CHECK(!strcmp(commands_moved(a, b),
				      "GPU_Set_Write_Enable+1 GPU_Get_Max_Buffers+3"),
			      "moved: %s", commands_moved(a, b));
	}
	close(fd);
}

const struct kcase proc_cases[] = {
	{ "proc", t_proc },
	{ "commands", t_commands },
};
const unsigned int n_proc_cases = sizeof(proc_cases) / sizeof(proc_cases[0]);
