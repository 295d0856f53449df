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
 * pokes drop nothing.  Byte mode orders the other sites of a batch
 * (pokebatch.c): while it runs they are translated from its table.
 */
#include <linux/kernel.h>
#include <linux/ftrace.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <asm/pgtable_64_types.h>
#include <linux/seq_file.h>
#include <linux/fs.h>
#include "rv.h"
#include "rvg_abi.h"
#include "pokebatch.h"
#include "notrace.h"

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
	bool ordered;		/* its sites are in pb */
};

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

/* byte mode: the batch in flight (text_mutex: one at a time) */
static struct rv_pokebatch pb;
static bool pb_live;		/* translator lock: the translator uses pb */
static u64 pb_gen;
u64 rv_pb_tag;			/* pb_gen << RV_PB_GEN_SHIFT, read at do_sync_core */
static u64 pb_ordered, pb_refused[RV_PB_KPROBE + 1];

bool rv_pb_in_text(unsigned long pc)
{
	return poked_text(pc);
}

/* translated from their keys, never from their bytes: no block depends on
 * them (and a key flipped in a loop would fill the code cache) */
bool rv_pb_keyed(unsigned long pc, unsigned int len)
{
	return rv_jl_keyed(pc) || (len == 5 && rv_sc_keyed(pc));
}

const u8 *rv_pb_bytes(unsigned long pc)
{
	return (const u8 *)pc;
}

/* translator only, under its lock */
const struct rv_pokebatch *rv_pokes_live(void)
{
	return pb_live ? &pb : NULL;
}

/* before the batch writes anything: its sites go to pb, their blocks go */
static bool pokes_begin(const u8 *tp, unsigned int n)
{
	enum rv_pb_refusal r;
	unsigned long flags;

	if (!rv_byte || !rv_k.do_sync_core)
		return false;
	flags = rv_xlate_lock();
	r = rv_pb_fill(&pb, tp, n, rv_k.stext, pb_gen + 1);
	if (r == RV_PB_OK) {
		pb_gen++;
		WRITE_ONCE(rv_pb_tag, pb_gen << RV_PB_GEN_SHIFT);
		pb_live = true;
	}
	rv_xlate_unlock(flags);
	if (r != RV_PB_OK) {
		pb_refused[r]++;
		/* a kprobe being optimized: its detour would run natively */
		if (r == RV_PB_KPROBE)
			rv_byte_error(RVG_ERR_INT3, pb.refused_pc);
		return false;
	}
	pb_ordered++;
	rv_invalidate_sites(&pb);
	return true;
}

/* every CPU has run the last sync: translate the sites from their bytes */
static void pokes_end(void)
{
	unsigned long flags = rv_xlate_lock();

	pb_live = false;
	rv_xlate_unlock(flags);
	rv_invalidate_sites(&pb);
}

static int batch_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct batch_data *d = (void *)ri->data;

	d->tp = (const u8 *)regs->di;
	d->n = regs->si;
	atomic64_inc(&rv_pokes_seen);
	d->ordered = pokes_begin(d->tp, d->n);
	return 0;
}

static int batch_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct batch_data *d = (void *)ri->data;
	unsigned int i;

	if (d->ordered) {
		pokes_end();
		return 0;
	}
	for (i = 0; i < d->n; i++) {
		const u8 *e = d->tp + RV_TPL_SIZE * i;
		unsigned long a = rv_k.stext + *(const s32 *)e;
		unsigned int len = e[RV_TPL_LEN];

		if (!len || len > 5 || d->n > 4096 || !poked_text(a)) {
			rv_invalidate_range(0, ~0UL);
			return 0;
		}
		if (rv_pb_keyed(a, len))
			continue;
		rv_invalidate_range(a, a + len);
	}
	return 0;
}

void rv_pokes_show(struct seq_file *m)
{
	static const char *const why[] = { "ok", "too_many", "len", "where", "order",
					   "old_insn", "new_insn", "kprobe" };
	int i;

	seq_printf(m, "poke_batches_ordered %llu\n", pb_ordered);
	for (i = 1; i <= RV_PB_KPROBE; i++)
		seq_printf(m, "poke_batches_unordered_%s %llu\n", why[i], pb_refused[i]);
}

static struct kretprobe batch_krp = {
	.kp.symbol_name = "text_poke_bp_batch",
	.entry_handler = batch_entry,
	.handler = batch_ret,
	.data_size = sizeof(struct batch_data),
	.maxactive = 16,
};

/*
 * Byte mode: ftrace trampolines made for one ftrace_ops.  ftrace takes the
 * ops off its list (is_ftrace_trampoline() turns false) before the batch
 * that stops calling its trampoline, so for a while CPUs still run it, and
 * a translation made then sent them to native code.  A trampoline stays
 * translatable from its first translation until module_memfree() frees
 * it; then its blocks go, as its pages may come back as another one.
 * Each has pages of its own (module_alloc): one page each here, as
 * ftrace_regs_caller's copy is a few hundred bytes.
 */
#define N_TRAMPS 16
static unsigned long tramps[N_TRAMPS];

bool rv_tramp_known(unsigned long pc)
{
	unsigned long page = pc & PAGE_MASK;
	int i;

	for (i = 0; i < N_TRAMPS; i++)
		if (READ_ONCE(tramps[i]) == page)
			return true;
	return false;
}

void rv_tramp_note(unsigned long pc)
{
	int i;

	if (rv_tramp_known(pc))
		return;
	for (i = 0; i < N_TRAMPS; i++)
		if (!READ_ONCE(tramps[i]) && !cmpxchg(&tramps[i], 0, pc & PAGE_MASK))
			return;
}

static int memfree_entry(struct kprobe *kp, struct pt_regs *regs)
{
	unsigned long page = regs->di;
	int i;

	for (i = 0; i < N_TRAMPS; i++)
		if (page && READ_ONCE(tramps[i]) == page) {
			rv_invalidate_range(page, page + PAGE_SIZE);
			WRITE_ONCE(tramps[i], 0);
		}
	return 0;
}

static struct kprobe memfree_kp = {
	.symbol_name = "module_memfree",
	.pre_handler = memfree_entry,
};

static struct notifier_block mod_nb = { .notifier_call = mod_event };
static bool poke_on, mod_on, batch_on, memfree_on;

/*
 * Byte mode: kprobes stay int3.  The kprobe optimizer (a few jiffies after
 * a probe inside a function is armed) replaces the int3 with a jump to a
 * detour buffer that calls the handlers and runs the copied instructions,
 * all natively, unordered: on 6.1.0-57 the kprobe test's probe was
 * optimized before its first hit and the recording ran kernel text
 * natively until it stalled.  Switched off (which also unoptimizes every
 * probe optimized before the module loaded), a probe inside a function is
 * an int3 that the translator reports (RVG_ERR_INT3); a batch optimizing
 * one anyway (the sysctl turned back on) is reported by pokes_begin().
 */
#define KPROBES_OPT_SYSCTL "/proc/sys/debug/kprobes-optimization"
static int kprobes_opt_was = -1;	/* what the sysctl held at load */

/* the sysctl's old value (0 or 1) after writing @on, -ENOENT without optprobes */
static int kprobes_optimization(bool on)
{
	struct file *f = filp_open(KPROBES_OPT_SYSCTL, O_RDWR, 0);
	char was[4] = "";
	loff_t pos = 0;
	ssize_t n;

	if (IS_ERR(f))
		return PTR_ERR(f);
	n = kernel_read(f, was, sizeof(was) - 1, &pos);
	pos = 0;
	if (n > 0)
		n = kernel_write(f, on ? "1\n" : "0\n", 2, &pos);
	filp_close(f, NULL);
	if (n < 0)
		return n;
	return was[0] == '1';
}

/* byte mode: the function tracer leaves alone what the module runs natively */
static void notrace_native_callees(void)
{
	static const char *const names[] = { RV_NATIVE_CALLEES };
	char buf[KSYM_NAME_LEN];
	int i;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		strscpy(buf, names[i], sizeof(buf));
		ftrace_set_global_notrace(buf, strlen(buf), 0);
	}
}

int rv_coherence_init(void)
{
	int ret;

	if (rv_byte) {
		notrace_native_callees();
		ret = kprobes_optimization(false);
		if (ret < 0 && ret != -ENOENT) {
			pr_err(RV_PR "cannot switch kprobe optimization off (%s): %d\n",
			       KPROBES_OPT_SYSCTL, ret);
			return ret;
		}
		kprobes_opt_was = ret;
	}
	ret = register_kretprobe(&poke_krp);
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
	ret = register_kprobe(&memfree_kp);
	if (ret) {
		pr_err(RV_PR "kprobe on module_memfree failed: %d\n", ret);
		return ret;
	}
	memfree_on = true;
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
	if (memfree_on)
		unregister_kprobe(&memfree_kp);
	if (batch_on)
		unregister_kretprobe(&batch_krp);
	if (poke_on)
		unregister_kretprobe(&poke_krp);
	mod_on = poke_on = batch_on = memfree_on = false;
	if (kprobes_opt_was == 1)
		kprobes_optimization(true);
	kprobes_opt_was = -1;
}
