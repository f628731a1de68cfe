// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The datadev backend without a card: the errno mapping (the upstream
 * driver's bare -1 arrives as EPERM and must never reach a user as
 * "Operation not permitted"; its 524 must become ENOTSUP) and opening
 * things that are not a datadev device.  The backend against a real driver
 * is tested in QEMU with kmod/.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static const unsigned int all_cmds[] = {
	DMA_Get_Buff_Count,    DMA_Get_Buff_Size,     DMA_Get_Version,	     DMA_Write_Register,
	DMA_Read_Register,     GPU_Add_Nvidia_Memory, GPU_Rem_Nvidia_Memory, GPU_Set_Write_Enable,
	GPU_Is_Gpu_Async_Supp, GPU_Get_Gpu_Async_Ver, GPU_Get_Max_Buffers,   GPU_Enable_Tx,
	GPU_Enable_Rx,	       GA_Get_Abi_Version,    GA_Rem_Buffer,	     GA_Arm_Buffers,
	GA_Get_Buffer_Table,
};
#define NCMDS (sizeof(all_cmds) / sizeof(all_cmds[0]))

struct mapping {
	unsigned int cmd;
	int err;      /* errno the ioctl left */
	int expected; /* what the library returns */
};

static const struct mapping mappings[] = {
	{GPU_Add_Nvidia_Memory, EPERM, -EFAULT},
	{GPU_Add_Nvidia_Memory, EINVAL, -EINVAL},
	{GPU_Add_Nvidia_Memory, EBUSY, -EBUSY},
	{GPU_Add_Nvidia_Memory, ENOMEM, -ENOMEM},
	{GPU_Set_Write_Enable, EPERM, -ERANGE},
	{GPU_Set_Write_Enable, EINVAL, -ERANGE},
	{GPU_Set_Write_Enable, EBUSY, -EBUSY},
	{GA_Arm_Buffers, EINVAL, -ERANGE},
	{GPU_Set_Write_Enable, ENXIO, -ENXIO},
	{GA_Arm_Buffers, ENXIO, -ENXIO},
	{GPU_Rem_Nvidia_Memory, EPERM, -ENODEV},
	{GPU_Rem_Nvidia_Memory, EBUSY, -EBUSY},
	{DMA_Read_Register, EPERM, -ERANGE},
	{DMA_Write_Register, EPERM, -ERANGE},
	{GPU_Is_Gpu_Async_Supp, EPERM, -ENODEV},
	{GPU_Get_Gpu_Async_Ver, EPERM, -ENODEV},
	{GPU_Get_Max_Buffers, EPERM, -ENODEV},
	{GPU_Enable_Tx, EPERM, -ENOTTY},
	{GPU_Enable_Rx, EPERM, -ENOTTY},
	{GPU_Enable_Tx, EBUSY, -EBUSY},
	{GA_Get_Abi_Version, EPERM, -ENOTTY},
	{GA_Get_Buffer_Table, EPERM, -ENOTTY},
	{GA_Rem_Buffer, EPERM, -ENOTTY},
	{GA_Rem_Buffer, EINVAL, -EINVAL},
	{GA_Rem_Buffer, EBUSY, -EBUSY},
	{0x1234, EPERM, -EIO},
	{0x1234, EIO, -EIO},
	{GPU_Add_Nvidia_Memory, ENOTTY, -ENOTTY},
};

START_TEST(test_mapping_table)
{
	const struct mapping *m = &mappings[_i];
	int rc = ga_datadev_error(m->cmd, m->err);

	ck_assert_msg(rc == m->expected, "%s errno %d: got %d, want %d",
		      ga_datadev_cmd_name(m->cmd), m->err, rc, m->expected);
	ck_assert_msg(strstr(ga_last_error(), ga_datadev_cmd_name(m->cmd)) != NULL,
		      "explanation \"%s\" does not name the command", ga_last_error());
}
END_TEST

/* Every command: 524 is ENOTSUP with the "no GPU support" text, and the
 * bare -1 never comes back as EPERM. */
START_TEST(test_mapping_every_command)
{
	for (unsigned int i = 0; i < NCMDS; i++) {
		const char *name = ga_datadev_cmd_name(all_cmds[i]);
		int rc;

		ck_assert_msg(strcmp(name, "unknown ioctl") != 0, "command 0x%x has no name",
			      all_cmds[i]);
		rc = ga_datadev_error(all_cmds[i], GA_KERNEL_ENOTSUPP);
		ck_assert_msg(rc == -ENOTSUP, "%s 524: got %d", name, rc);
		ck_assert_msg(strstr(ga_last_error(), "without GPU support") != NULL, "%s: \"%s\"",
			      name, ga_last_error());
		rc = ga_datadev_error(all_cmds[i], EPERM);
		ck_assert_msg(rc < 0 && rc != -EPERM, "%s bare -1 mapped to %d", name, rc);
		ck_assert_msg(ga_last_error()[0] != '\0', "%s: no explanation", name);
	}
}
END_TEST

/* Open through the backend's own op (struct ga_dev is plain memory). */
static int dd_open(const char *path, char *why, size_t len)
{
	struct ga_dev *dev = calloc(1, sizeof(*dev));
	int rc;

	ck_assert_ptr_nonnull(dev);
	dev->info.layout = GA_LAYOUT_COUNT;
	rc = ga_backend_datadev.open(dev, path);
	snprintf(why, len, "%s", ga_last_error());
	if (rc == 0)
		ga_backend_datadev.close(dev);
	free(dev);
	return rc;
}

START_TEST(test_open_missing)
{
	char why[256];
	int rc = dd_open("/dev/datadev_does_not_exist_42", why, sizeof(why));

	ck_assert_int_eq(rc, -ENOENT);
	ck_assert_msg(strstr(why, "datadev_does_not_exist_42") && strstr(why, "no such device"),
		      "\"%s\"", why);
}
END_TEST

START_TEST(test_open_regular_file)
{
	char path[] = "/tmp/ga-test-datadev-XXXXXX";
	char why[256];
	int fd = mkstemp(path);
	int rc;

	ck_assert_int_ge(fd, 0);
	close(fd);
	rc = dd_open(path, why, sizeof(why));
	unlink(path);
	ck_assert_int_eq(rc, -ENODEV);
	ck_assert_msg(strstr(why, "not a character device") != NULL, "\"%s\"", why);
}
END_TEST

/* A character device that is not a datadev answers the ioctls with ENOTTY. */
START_TEST(test_open_wrong_chardev)
{
	char why[256];
	int rc = dd_open("/dev/null", why, sizeof(why));

	ck_assert_int_eq(rc, -ENODEV);
	ck_assert_msg(strstr(why, "datadev ABI") != NULL, "\"%s\"", why);
}
END_TEST

START_TEST(test_open_directory)
{
	char why[256];
	int rc = dd_open("/tmp", why, sizeof(why));

	ck_assert_msg(rc == -EISDIR || rc == -ENODEV, "got %d (%s)", rc, why);
	ck_assert_msg(why[0] != '\0', "no explanation");
}
END_TEST

static Suite *datadev_suite(void)
{
	Suite *s = suite_create("datadev");
	TCase *tc = tcase_create("errno");

	tcase_add_loop_test(tc, test_mapping_table, 0, sizeof(mappings) / sizeof(mappings[0]));
	tcase_add_test(tc, test_mapping_every_command);
	suite_add_tcase(s, tc);
	tc = tcase_create("open");
	tcase_add_test(tc, test_open_missing);
	tcase_add_test(tc, test_open_regular_file);
	tcase_add_test(tc, test_open_wrong_chardev);
	tcase_add_test(tc, test_open_directory);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(datadev_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
