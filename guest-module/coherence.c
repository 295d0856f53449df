// SPDX-License-Identifier: GPL-2.0
/*
 * Keeping translations coherent with the native text (issue 6: static keys,
 * jump labels, static calls, alternatives/ftrace/kprobes via text_poke, and
 * module unload).
 *
 * Every runtime text modification on x86 6.1 goes through text_poke()
 * (text_poke_bp_batch() calls it for the int3, the tail and the first byte).
 * A kretprobe invalidates the overlapping blocks after each write, under the
 * translator lock, so a block translated concurrently either saw the new
 * bytes or is dropped.  While the int3 of text_poke_bp is in place a
 * retranslation ends at the int3 with a jump to native code (where the
 * kernel's poke_int3_handler expects it).  Module text is dropped when the
 * module goes away.
 */
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include "rv.h"

struct poke_data {
	unsigned long addr, len;
};

static int poke_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct poke_data *d = (void *)ri->data;

	d->addr = regs->di;
	d->len = regs->dx;
	return 0;
}

static int poke_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct poke_data *d = (void *)ri->data;

	rv_invalidate_range(d->addr, d->addr + d->len);
	return 0;
}

static struct kretprobe poke_krp = {
	.kp.symbol_name = "text_poke",
	.entry_handler = poke_entry,
	.handler = poke_ret,
	.data_size = sizeof(struct poke_data),
	.maxactive = 16,
};

static int mod_event(struct notifier_block *nb, unsigned long ev, void *data)
{
	struct module *mod = data;

	if (ev == MODULE_STATE_GOING) {
		unsigned long s = (unsigned long)mod->core_layout.base;

		rv_invalidate_range(s, s + mod->core_layout.size);
	}
	return NOTIFY_DONE;
}

static struct notifier_block mod_nb = { .notifier_call = mod_event };
static bool poke_on, mod_on;

int rv_coherence_init(void)
{
	int ret = register_kretprobe(&poke_krp);

	if (ret) {
		pr_err(RV_PR "kretprobe on text_poke failed: %d\n", ret);
		return ret;
	}
	poke_on = true;
	ret = register_module_notifier(&mod_nb);
	if (ret)
		return ret;
	mod_on = true;
	return 0;
}

void rv_coherence_exit(void)
{
	if (mod_on)
		unregister_module_notifier(&mod_nb);
	if (poke_on)
		unregister_kretprobe(&poke_krp);
	mod_on = poke_on = false;
}
