// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel entry interposition (thesis 3.1, 3.7): a shadow IDT whose gates
 * point at stubs that jump into translated handlers, and MSR_LSTAR pointing
 * at a stub that jumps into the translated entry_SYSCALL_64.  Installed and
 * removed on every CPU at once under stop_machine().
 *
 * Left native: IST vectors (NMI, #DB, #DF, #MC, #VC: they run on their own
 * stacks and NMI nesting checks compare against native rips), the 32-bit
 * compat entries (CSTAR, SYSENTER; the guest userland is 64-bit).
 */
#include <linux/kernel.h>
#include <linux/stop_machine.h>
#include <linux/percpu.h>
#include <linux/gfp.h>
#include <asm/desc.h>
#include <asm/msr.h>
#include <asm/sync_core.h>
#include "rv.h"

static gate_desc *shadow_idt;
static struct desc_ptr shadow_descr;
static unsigned long lstar_stub;
static DEFINE_PER_CPU(struct desc_ptr, native_idt);
static DEFINE_PER_CPU(u64, native_lstar);
static atomic_t off_once;

static inline void rv_lidt(const struct desc_ptr *d)
{
	asm volatile("lidt %0" : : "m" (*d));
}

static inline void rv_sidt(struct desc_ptr *d)
{
	asm volatile("sidt %0" : "=m" (*d));
}

static bool has_errcode(int v)
{
	return v == 8 || (v >= 10 && v <= 14) || v == 17 || v == 21 || v == 29 || v == 30;
}

static int on_cpu(void *unused)
{
	rv_sidt(this_cpu_ptr(&native_idt));
	rdmsrl(MSR_LSTAR, *this_cpu_ptr(&native_lstar));
	rv_lidt(&shadow_descr);
	wrmsrl(MSR_LSTAR, lstar_stub);
	return 0;
}

static int off_cpu(void *unused)
{
	rv_lidt(this_cpu_ptr(&native_idt));
	wrmsrl(MSR_LSTAR, *this_cpu_ptr(&native_lstar));
	if (atomic_inc_return(&off_once) == 1) {
		rv_stubs_off();
		WRITE_ONCE(rv_active, false);
	}
	sync_core();
	return 0;
}

int rv_entry_on(void)
{
	struct desc_ptr nd;
	gate_desc *nidt;
	unsigned long h, th, stub;
	u64 lstar;
	int v, nstub = 0, ret;

	rv_sidt(&nd);
	nidt = (gate_desc *)nd.address;
	shadow_idt = (gate_desc *)get_zeroed_page(GFP_KERNEL);
	if (!shadow_idt)
		return -ENOMEM;
	memcpy(shadow_idt, nidt, nd.size + 1);

	for (v = 0; v < (nd.size + 1) / (int)sizeof(gate_desc); v++) {
		gate_desc *g = &shadow_idt[v];

		if (!g->bits.p || g->bits.ist)
			continue;
		h = gate_offset(g);
		th = rv_lookup_or_translate(h);
		if (th == h)
			continue;
		stub = rv_emit_gate_stub(v, v < 32, v < 32 && has_errcode(v), th);
		if (!stub)
			return -ENOMEM;
		g->offset_low = (u16)stub;
		g->offset_middle = (u16)(stub >> 16);
		g->offset_high = (u32)(stub >> 32);
		nstub++;
	}
	shadow_descr.size = nd.size;
	shadow_descr.address = (unsigned long)shadow_idt;

	rdmsrl(MSR_LSTAR, lstar);
	th = rv_lookup_or_translate(lstar);
	if (th == lstar)
		return -EINVAL;
	lstar_stub = rv_emit_syscall_stub(th);
	if (!lstar_stub)
		return -ENOMEM;
	pr_info(RV_PR "shadow IDT: %d of %d gates translated; LSTAR %px -> %px\n",
		nstub, (nd.size + 1) / (int)sizeof(gate_desc), (void *)lstar, (void *)lstar_stub);

	WRITE_ONCE(rv_active, true);
	ret = stop_machine(on_cpu, NULL, cpu_online_mask);
	if (ret)
		WRITE_ONCE(rv_active, false);
	return ret;
}

void rv_entry_off(void)
{
	atomic_set(&off_once, 0);
	stop_machine(off_cpu, NULL, cpu_online_mask);
	free_page((unsigned long)shadow_idt);
	shadow_idt = NULL;
}
