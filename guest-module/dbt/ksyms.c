// SPDX-License-Identifier: GPL-2.0
/* Kernel symbols the translator needs that 6.1 does not export to modules:
 * kallsyms_lookup_name is found with the usual kprobe trick. */
#include <linux/kprobes.h>
#include <linux/kernel.h>
#include "rv.h"

struct rv_kfuncs rv_k;
static unsigned long (*kln)(const char *name);

unsigned long rv_ksym(const char *name)
{
	unsigned long a = kln ? kln(name) : 0;

	if (!a)
		pr_err(RV_PR "symbol %s not found\n", name);
	return a;
}

/* the table between two linker symbols (__start_X, __stop_X): its first
 * entry, and in *@n how many of @size bytes it holds; NULL if not found */
const void *rv_ksym_table(const char *start, const char *stop, size_t size, unsigned long *n)
{
	unsigned long lo = rv_ksym(start), hi = rv_ksym(stop);

	if (!lo || !hi || hi < lo)
		return NULL;
	*n = (hi - lo) / size;
	return (const void *)lo;
}

int rv_ksyms_init(void)
{
	struct kprobe kp = { .symbol_name = "kallsyms_lookup_name" };
	int ret = register_kprobe(&kp);

	if (ret < 0)
		return ret;
	kln = (void *)kp.addr;
	unregister_kprobe(&kp);
	if (!kln)
		return -ENOENT;

	rv_k.insn_decode = (void *)rv_ksym("insn_decode");
	rv_k.module_alloc = (void *)rv_ksym("module_alloc");
	rv_k.set_memory_x = (void *)rv_ksym("set_memory_x");
	rv_k.stext = rv_ksym("_stext");
	rv_k.etext = rv_ksym("_etext");
	rv_k.entry_syscall_64 = rv_ksym("entry_SYSCALL_64");
	/* optional: they find their traced function from the return address */
	rv_k.ftrace_lo = kln("ftrace_stub");
	rv_k.ftrace_hi = kln("ftrace_regs_caller_end");
	if (!rv_k.ftrace_lo || !rv_k.ftrace_hi || rv_k.ftrace_hi < rv_k.ftrace_lo)
		rv_k.ftrace_lo = rv_k.ftrace_hi = 0;
	else
		rv_k.ftrace_hi += 0x40;
	/* optional: ftrace's trampolines made for one ftrace_ops */
	rv_k.is_ftrace_trampoline = (void *)kln("is_ftrace_trampoline");
	/* optional: without it text pokes are not ordered (pokebatch.c) */
	rv_k.do_sync_core = kln("do_sync_core");
	rv_k.module_text_address = (void *)rv_ksym("__module_text_address");
	rv_k.idle_task = (void *)rv_ksym("idle_task");
	rv_k.unwind_start = (void *)rv_ksym("__unwind_start");
	rv_k.unwind_next_frame = (void *)rv_ksym("unwind_next_frame");
	rv_k.unwind_ret_ptr = (void *)rv_ksym("unwind_get_return_address_ptr");
	if (!rv_k.insn_decode || !rv_k.module_alloc || !rv_k.set_memory_x ||
	    !rv_k.stext || !rv_k.etext || !rv_k.entry_syscall_64 ||
	    !rv_k.module_text_address || !rv_k.idle_task ||
	    !rv_k.unwind_start || !rv_k.unwind_next_frame || !rv_k.unwind_ret_ptr)
		return -ENOENT;
	return 0;
}
