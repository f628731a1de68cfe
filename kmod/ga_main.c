// SPDX-License-Identifier: GPL-2.0
/*
 * gpuasync.ko, the module: which cards to drive (emulate=N emulated cards,
 * bind_pci=1 for real ones) and init/exit in gdrdrv.c's order.  The driver
 * (ga_drv.c) knows cards only through struct ga_card_ops, so the emulated
 * cards (ga_emu.c) are its clients, set up here after it.  Without GA_EMU
 * (the packages' build) there are no emulated cards and no emulate=.
 */
#include <linux/module.h>

#include "ga_drv.h"
#include "ga_emu.h"

static int emulate;
#ifdef GA_EMU
module_param(emulate, int, 0444);
MODULE_PARM_DESC(emulate, "number of emulated cards to create (0-8, default 0)");
#endif

static bool bind_pci;
module_param(bind_pci, bool, 0444);
MODULE_PARM_DESC(bind_pci, "bind real PCI cards 1a4a:2030 (default 0: upstream datadev owns them)");

static int __init ga_init(void)
{
	int ret;

	if (emulate < 0 || emulate > 8) {
		pr_err("gpuasync: emulate=%d out of range 0..8\n", emulate);
		return -EINVAL;
	}
	ret = ga_drv_init();
	if (ret)
		return ret;
	ret = ga_emu_create_all(emulate);
	if (ret)
		goto out_drv_exit;
	if (bind_pci) {
		ret = ga_pci_register();
		if (ret)
			goto out_destroy_emu;
	}
	pr_info("gpuasync: version " GA_DRV_VERSION ", %d emulated card(s)%s\n", emulate,
		bind_pci ? ", binding PCI cards" : "");
	return 0;

out_destroy_emu:
	ga_emu_destroy_all();
out_drv_exit:
	ga_drv_exit();
	return ret;
}

static void __exit ga_exit(void)
{
	if (bind_pci)
		ga_pci_unregister();
	ga_emu_destroy_all();
	ga_drv_exit();
}

module_init(ga_init);
module_exit(ga_exit);
MODULE_LICENSE("GPL");
MODULE_VERSION(GA_DRV_VERSION);
#ifdef GA_EMU
MODULE_DESCRIPTION("GpuAsyncCore FPGA<->GPU RDMA driver (datadev GPU ABI) with emulated cards");
#else
MODULE_DESCRIPTION("GpuAsyncCore FPGA<->GPU RDMA driver (datadev GPU ABI)");
#endif
