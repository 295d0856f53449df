// SPDX-License-Identifier: GPL-2.0
/*
 * Keeping translations coherent with the native text (issue 6: static keys,
 * jump labels, static calls, alternatives/ftrace/kprobes via text_poke, and
 * module unload).
 *
 * Runtime text modification on x86 6.1 goes through text_poke() (kprobes)
 * or text_poke_bp_batch() (jump labels, static calls, ftrace, optprobes).
 * Kretprobes invalidate the overlapping blocks after each write, under the
 * translator lock, so a block translated concurrently either saw the new
 * bytes or is dropped.  While the int3 of text_poke_bp is in place a
 * retranslation ends at the int3 with a jump to native code (where the
 * kernel's poke_int3_handler expects it).  Module text is dropped when the
 * module goes away.  Byte and training mode translate jump-label and
 * static-call sites from their keys (jumplabel.c, staticcall.c): their
 * pokes drop nothing.
 */
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <asm/pgtable_64_types.h>
#include "rv.h"

static struct kretprobe poke_krp, batch_krp;
atomic64_t rv_pokes_seen;

unsigned long rv_poke_missed(void)
{
	return poke_krp.nmissed + poke_krp.kp.nmissed + batch_krp.nmissed + batch_krp.kp.nmissed;
}

struct poke_data {
	unsigned long addr, len;
};

static int poke_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct poke_data *d = (void *)ri->data;

	d->addr = regs->di;
	d->len = regs->dx;
	atomic64_inc(&rv_pokes_seen);
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

static void invalidate_layout(const struct module_layout *l)
{
	unsigned long s = (unsigned long)l->base;

	if (s)
		rv_invalidate_range(s, s + l->size);
}

static int mod_event(struct notifier_block *nb, unsigned long ev, void *data)
{
	struct module *mod = data;

	/* init text is translated while COMING (rv_translatable) */
	if (ev == MODULE_STATE_LIVE || ev == MODULE_STATE_GOING)
		invalidate_layout(&mod->init_layout);
	if (ev == MODULE_STATE_GOING)
		invalidate_layout(&mod->core_layout);
	return NOTIFY_DONE;
}

/*
 * Jump labels, static calls and ftrace patch through text_poke_bp_batch(),
 * which calls an inlined copy of text_poke() that the probe above does not
 * see.  Its argument is an array of struct text_poke_loc (6.1 layout:
 * s32 rel_addr from _stext, s32 disp, u8 len, u8 opcode, u8 text[5],
 * u8 old; 16 bytes).  Anything that does not look like that array flushes
 * every translation.
 */
struct batch_data {
	const u8 *tp;
	unsigned int n;
};

static int batch_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct batch_data *d = (void *)ri->data;

	d->tp = (const u8 *)regs->di;
	d->n = regs->si;
	atomic64_inc(&rv_pokes_seen);
	return 0;
}

/*
 * Where text_poke_bp may write: vmlinux's text, module text or an ftrace
 * trampoline.  Only a range check: this handler runs on the kernel's
 * stack, where a call into kernel text (rv_translatable() asks the module
 * list) would run natively, unordered.
 */
static bool poked_text(unsigned long a)
{
	return (a >= rv_k.stext && a < rv_k.etext) || (a >= MODULES_VADDR && a < MODULES_END);
}

static int batch_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct batch_data *d = (void *)ri->data;
	unsigned int i;

	for (i = 0; i < d->n; i++) {
		const u8 *e = d->tp + 16 * i;
		unsigned long a = rv_k.stext + *(const s32 *)e;
		unsigned int len = e[8];

		if (!len || len > 5 || d->n > 4096 || !poked_text(a)) {
			rv_invalidate_range(0, ~0UL);
			return 0;
		}
		/* translated from its key, never from its bytes: no block
		 * depends on them (and a key flipped in a loop would fill the
		 * code cache with retranslations) */
		if (rv_jl_keyed(a) || (len == 5 && rv_sc_keyed(a)))
			continue;
		rv_invalidate_range(a, a + len);
	}
	return 0;
}

static struct kretprobe batch_krp = {
	.kp.symbol_name = "text_poke_bp_batch",
	.entry_handler = batch_entry,
	.handler = batch_ret,
	.data_size = sizeof(struct batch_data),
	.maxactive = 16,
};

static struct notifier_block mod_nb = { .notifier_call = mod_event };
static bool poke_on, mod_on, batch_on;

int rv_coherence_init(void)
{
	int ret = register_kretprobe(&poke_krp);

	if (ret) {
		pr_err(RV_PR "kretprobe on text_poke failed: %d\n", ret);
		return ret;
	}
	poke_on = true;
	ret = register_kretprobe(&batch_krp);
	if (ret) {
		pr_err(RV_PR "kretprobe on text_poke_bp_batch failed: %d\n", ret);
		return ret;
	}
	batch_on = true;
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
	if (batch_on)
		unregister_kretprobe(&batch_krp);
	if (poke_on)
		unregister_kretprobe(&poke_krp);
	mod_on = poke_on = batch_on = false;
}
