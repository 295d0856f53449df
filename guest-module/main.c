// SPDX-License-Identifier: GPL-2.0
/*
 * replay-vm guest module.
 *
 * Placeholder for the kernel dynamic binary translator (BTKernel design) and
 * byte-granular CREW: today it only proves that a module built against the
 * headers of exactly the image's kernel loads, reports itself and unloads.
 */
#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/cpumask.h>
#include <linux/utsname.h>

static int __init replayvm_init(void)
{
	pr_info("replayvm: loaded on %s, %u cpus online\n",
		init_utsname()->release, num_online_cpus());
	return 0;
}

static void __exit replayvm_exit(void)
{
	pr_info("replayvm: unloaded\n");
}

module_init(replayvm_init);
module_exit(replayvm_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("replay-vm guest module (kernel DBT + byte-granular CREW)");
