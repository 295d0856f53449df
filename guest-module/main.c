// SPDX-License-Identifier: GPL-2.0
/*
 * replay-vm guest module: kernel dynamic binary translator (BTKernel,
 * thesis ch.3) for x86-64 Linux 6.1.
 *
 * Load with dbt=1 to switch every CPU's kernel execution into translated
 * code (syscall entry and shadow IDT); unload switches back (3.7).
 * callret=0 keeps native return addresses on stacks (returns through the
 * jumptable: slower, but nothing but interrupt frames ever holds a
 * code-cache address).
 * selftest=1 runs the decoder over the whole kernel text first.
 */
#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/cpumask.h>
#include <linux/utsname.h>
#include "rv.h"
#include "dbt/instrument.h"
#include "crew/crewinstr.h"

static bool dbt;
module_param(dbt, bool, 0444);
MODULE_PARM_DESC(dbt, "run the kernel from the code cache (identity translation)");
module_param_named(callret, rv_callret, bool, 0444);
MODULE_PARM_DESC(callret, "identity-translate call/ret (code-cache return addresses on stacks, rewritten at switch-off; thesis 3.3/3.7); 0: calls push native return addresses and returns go through the jumptable");
module_param_named(sb, rv_superblock, bool, 0444);
MODULE_PARM_DESC(sb, "identity translation: a conditional branch's fall-through path goes on in the same block (superblocks); 0: every jcc ends its block (always so with crew=byte or train)");
static char *instr = "none";
module_param(instr, charp, 0444);
MODULE_PARM_DESC(instr, "instrumentation of translated code: none, count (inline counters of memory accesses and deterministic points)");
static char *crew = "none";
module_param(crew, charp, 0444);
MODULE_PARM_DESC(crew, "byte: byte-granular CREW for a recording or replay (needs dbt=1 and a QEMU host with -rr ...,crew=byte; implies callret=0 and instr=crew; cannot be unloaded); train: training mode, no host needed (needs dbt=1 and the shadow memory of byte mode; /proc/replayvm_train lists the pcs found to access shared memory)");
static bool selftest;
module_param(selftest, bool, 0444);
MODULE_PARM_DESC(selftest, "decode the whole kernel text at load and report coverage");

/* returns RV_INIT_SWITCH when init_module (dbt/switch.S) must still switch to byte CREW */
int __init replayvm_init(void)
{
	int ret;

	pr_info("replayvm: loaded on %s, %u cpus online\n",
		init_utsname()->release, num_online_cpus());
	ret = rv_ksyms_init();
	if (ret)
		return ret;
	ret = rv_stats_init();
	if (ret)
		return ret;
	if (selftest)
		rv_selftest_decode();
	if (!dbt)
		return 0;

	if (!strcmp(crew, "byte")) {
		rv_byte = true;
		rv_callret = false;	/* stacks hold native return addresses */
		/* not yet run through byte mode's record/replay stress */
		rv_superblock = false;
		instr = "crew";
		ret = rv_byte_init();
		if (ret)
			goto out_stats;
		ret = rv_trained_load();
		if (ret)
			goto out_byte;
	} else if (!strcmp(crew, "train")) {
		rv_train = true;
		rv_superblock = false;	/* as byte mode, whose lists it makes */
		instr = "train";
		ret = rv_train_init();
		if (ret)
			goto out_stats;
	} else if (strcmp(crew, "none")) {
		pr_err(RV_PR "crew=%s: byte, train or none\n", crew);
		ret = -EINVAL;
		goto out_stats;
	}
	ret = rv_instr_select(instr);
	if (ret)
		goto out_byte;
	ret = rv_translate_init();
	if (ret)
		goto out_byte;
	ret = rv_cache_create();
	if (ret)
		goto out_tr;
	ret = rv_byte ? rv_stubs_build_byte() : rv_stubs_build();
	if (ret)
		goto out_cache;
	if (rv_byte) {
		ret = rv_byte_register();
		if (ret)
			goto out_cache;
	}
	ret = rv_coherence_init();
	if (ret)
		goto out_coh;
	ret = rv_entry_on();
	if (ret)
		goto out_coh;
	if (rv_byte) {
		/* a recording or replay cannot go back to native code */
		__module_get(THIS_MODULE);
		/* (nothing that differs between record and replay: the kernel log
		 * is guest memory like any other) */
		pr_info(RV_PR "byte CREW: switching on\n");
		return RV_INIT_SWITCH;
	}
	pr_info(RV_PR "translation on: %lu blocks, %lu bytes of code cache\n",
		rv_nblocks(), rv_cache->used);
	return 0;

out_coh:
	rv_coherence_exit();
out_cache:
	rv_cache_destroy(false);
out_tr:
	rv_translate_exit();
out_byte:
	if (rv_byte)
		rv_byte_exit();
	if (rv_train)
		rv_train_exit(false);
out_stats:
	rv_stats_exit();
	return ret;
}

static void __exit replayvm_exit(void)
{
	if (dbt && rv_cache) {
		/* words left: a task still runs in the middle of a translation */
		bool busy = rv_entry_off() != 0;

		rv_coherence_exit();
		pr_info(RV_PR "translation off: %lu blocks, %lu bytes of code cache\n",
			rv_nblocks(), rv_cache->used);
		rv_cache_destroy(busy);
		rv_translate_exit();
		if (rv_train)
			rv_train_exit(busy);
	}
	rv_stats_exit();
	pr_info("replayvm: unloaded\n");
}

/* byte mode: the failed switch undoes what replayvm_init did */
int rv_byte_switch_failed(int ret)
{
	module_put(THIS_MODULE);
	rv_coherence_exit();
	rv_cache_destroy(false);
	rv_translate_exit();
	rv_byte_exit();
	rv_stats_exit();
	return ret;
}

/* the module's init function is init_module in dbt/switch.S */
module_exit(replayvm_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("replay-vm guest module (kernel DBT + byte-granular CREW)");
