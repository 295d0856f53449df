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
#include <linux/delay.h>
#include <linux/sched/signal.h>
#include <linux/sched/task_stack.h>
#include <asm/desc.h>
#include <asm/msr.h>
#include <asm/unwind.h>
#include <asm/sync_core.h>
#include "rv.h"
#include "emit.h"

static gate_desc *shadow_idt;
static struct desc_ptr shadow_descr;
static unsigned long lstar_stub;
static DEFINE_PER_CPU(struct desc_ptr, native_idt);
static DEFINE_PER_CPU(u64, native_lstar);

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

static atomic_t on_once;
static atomic_long_t made_translated;

/*
 * Switch-on with the call/ret optimisation (thesis 3.7): the return
 * addresses of a task's kernel frames (found by the ORC unwinder) are
 * replaced by their translations, so that the task, once it runs again,
 * returns into the code cache instead of native code.
 */
static void translate_returns(struct task_struct *t)
{
	struct unwind_state st;
	unsigned long *first;
	long n = 0;

	if (t == current)
		asm volatile("mov %%rsp, %0" : "=r" (first));
	else
		first = (unsigned long *)t->thread.sp;
	for (rv_k.unwind_start(&st, t, NULL, first); !unwind_done(&st);
	     rv_k.unwind_next_frame(&st)) {
		unsigned long *p = rv_k.unwind_ret_ptr(&st), tr;

		/* not the rip of an interrupt/exception frame: a task sleeping
		 * in a fault handler may still look it up in the exception
		 * tables (it comes back into the cache through kret_fix) */
		if (st.regs || !p || !rv_translatable(*p))
			continue;
		tr = rv_lookup_or_translate(*p);
		if (tr != *p) {
			*p = tr;
			n++;
		}
	}
	atomic_long_add(n, &made_translated);
}

/* this CPU onto the shadow IDT and the LSTAR stub (interrupts off) */
void rv_entry_install_this_cpu(void)
{
	rv_sidt(this_cpu_ptr(&native_idt));
	rdmsrl(MSR_LSTAR, *this_cpu_ptr(&native_lstar));
	rv_lidt(&shadow_descr);
	wrmsrl(MSR_LSTAR, lstar_stub);
}

static int on_cpu(void *unused)
{
	rv_entry_install_this_cpu();
	if (rv_callret) {
		translate_returns(current);	/* the stopper returns translated */
		if (atomic_inc_return(&on_once) == 1) {
			struct task_struct *g, *t;
			int cpu;

			rcu_read_lock();
			for_each_process_thread(g, t)
				if (!READ_ONCE(t->on_cpu) && READ_ONCE(t->stack))
					translate_returns(t);
			rcu_read_unlock();
			for_each_online_cpu(cpu)
				translate_returns(rv_k.idle_task(cpu));
		}
	}
	return 0;
}

/*
 * Switch-off state, shared by the CPUs of one stop_machine() round.  The
 * first CPU to arrive (the leader) looks at every stack and decides for
 * all: switch now, or not yet.
 */
struct off_ctl {
	struct task_struct *caller;	/* rv_entry_off()'s: rewritten, not checked */
	bool force;			/* out of patience: switch anyway */
	atomic_t arrived;
	int verdict;			/* 0 undecided, 1 switch, -EAGAIN not now */
	unsigned long made_native;	/* code-cache words made native */
	unsigned long inexact;		/* ... that are no instruction start, on runnable tasks */
	unsigned long misplaced;	/* ... that rv_cache_to_native() maps all the same */
	pid_t blocker;			/* the first task with such a word */
	unsigned long blocker_word;
};

/*
 * @fix: make native the code-cache words of [from, to) that are the start
 * of an instruction's translation (every return address, an interrupt
 * frame's rip between instructions).  Else count the other code-cache
 * words: an interrupt frame's rip in the middle of one instruction's
 * translation or in a shared stub, or the return address of a dispatcher
 * call back into its stub.  Their task is still on its way somewhere and
 * must run on first.
 */
static void scan_words(struct off_ctl *c, struct task_struct *t, unsigned long *from,
		       unsigned long *to, bool fix)
{
	unsigned long *p;

	for (p = from; p < to; p++) {
		unsigned long w = READ_ONCE(*p), nat;

		if (!rv_in_cache(w))
			continue;
		nat = rv_cache_to_native_exact(w);
		if (fix) {
			if (nat) {
				*p = nat;
				c->made_native++;
			}
			continue;
		}
		if (nat)
			continue;
		c->inexact++;
		c->misplaced += rv_cache_to_native(w) != 0;
		if (!c->blocker) {
			c->blocker = t->pid;
			c->blocker_word = w;
		}
	}
}

static void scan_task(struct off_ctl *c, struct task_struct *t, bool fix)
{
	unsigned long *stack = READ_ONCE(t->stack), *sp = (unsigned long *)t->thread.sp;
	unsigned long *end;

	if (!stack)
		return;
	end = (unsigned long *)((u8 *)stack + THREAD_SIZE);
	if (sp < stack || sp >= end)
		sp = stack;
	scan_words(c, t, sp, end, fix);
}

/*
 * Every task that is not running (all but the stoppers) and every idle
 * task.  Only a preempted task (still on a runqueue) can stop in the
 * middle of a translation: interrupts keep the code-cache rip, exceptions
 * get the native one, and the dispatcher never sleeps.  A sleeping task's
 * other code-cache words are stale data in its frames, left as they are.
 * The caller of rv_entry_off() is in this module, called from the cache:
 * it is only rewritten.  Idle tasks are never preempted.
 */
static void scan_all(struct off_ctl *c, bool fix)
{
	struct task_struct *g, *t;
	int cpu;

	rcu_read_lock();
	for_each_process_thread(g, t) {
		if (READ_ONCE(t->on_cpu))
			continue;
		if (fix || (t != c->caller && READ_ONCE(t->on_rq)))
			scan_task(c, t, fix);
	}
	rcu_read_unlock();
	if (fix)
		for_each_online_cpu(cpu)
			scan_task(c, rv_k.idle_task(cpu), fix);
}

/*
 * Switch-off, on every CPU at once with interrupts off (thesis 3.7).  The
 * leader first looks at every stack: while some task is in the middle of
 * one instruction's translation, in a shared stub or in the dispatcher, it
 * answers -EAGAIN for all CPUs and nothing changes (rv_entry_off() lets
 * the tasks run on and asks again).  Otherwise: native IDT and LSTAR back,
 * and every code-cache return address and interrupt-frame rip on every
 * kernel stack replaced by its native counterpart: this CPU's own stack
 * (the stopper thread, whose callers may be translated: it returns into
 * native code), then, on the leader, every other task's.  Afterwards no
 * task can reach the code cache any more.
 */
static int off_cpu(void *data)
{
	struct off_ctl *c = data, own;
	bool leader = atomic_inc_return(&c->arrived) == 1;
	unsigned long *sp;
	int v;

	if (leader) {
		scan_all(c, false);
		v = c->inexact ? -EAGAIN : 1;
		if (c->force)
			v = 1;
		smp_store_release(&c->verdict, v);
	} else {
		while (!(v = smp_load_acquire(&c->verdict)))
			cpu_relax();
	}
	if (v < 0)
		return v;

	rv_lidt(this_cpu_ptr(&native_idt));
	wrmsrl(MSR_LSTAR, *this_cpu_ptr(&native_lstar));
	asm volatile("mov %%rsp, %0" : "=r" (sp));
	if (leader) {
		rv_stubs_off();
		WRITE_ONCE(rv_active, false);
		scan_all(c, true);	/* what blocked a forced switch stays counted */
	}
	/* this stopper's own stack: its code-cache words are return addresses */
	memset(&own, 0, sizeof(own));
	scan_words(&own, current, sp, (unsigned long *)((u8 *)task_stack_page(current) + THREAD_SIZE),
		   true);
	if (leader)
		c->made_native += own.made_native;
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
		if (rv_byte) {
			/*
			 * Translated only after the host's switch (the
			 * instrumentation depends on record vs replay): until
			 * then the slot holds the native handler.
			 */
			if (!rv_translatable(h))
				continue;
			rv_byte_gate_native[v] = h;
			rv_byte_gate_slot[v] = h;
			stub = rv_emit_gate_stub_byte(v, v < 32, v < 32 && has_errcode(v),
						      &rv_byte_gate_slot[v]);
			if (!stub)
				return -ENOMEM;
			goto set;
		}
		th = rv_lookup_or_translate(h);
		if (th == h)
			continue;
		stub = rv_emit_gate_stub(v, v < 32, v < 32 && has_errcode(v), th);
		if (!stub)
			return -ENOMEM;
set:
		g->offset_low = (u16)stub;
		g->offset_middle = (u16)(stub >> 16);
		g->offset_high = (u32)(stub >> 32);
		nstub++;
	}
	shadow_descr.size = nd.size;
	shadow_descr.address = (unsigned long)shadow_idt;

	rdmsrl(MSR_LSTAR, lstar);
	if (rv_byte) {
		struct rv_emit e;

		rv_byte_lstar_native = rv_byte_lstar_slot = lstar;
		lstar_stub = (unsigned long)rv_cache_alloc(16, 16);
		if (!lstar_stub)
			return -ENOMEM;
		e.p = (u8 *)lstar_stub;
		e_u8(&e, 0xff); e_u8(&e, 0x24); e_u8(&e, 0x25);	/* jmp *slot */
		e_u32(&e, (u32)(unsigned long)&rv_byte_lstar_slot);
		goto on;
	}
	th = rv_lookup_or_translate(lstar);
	if (th == lstar)
		return -EINVAL;
	lstar_stub = rv_emit_syscall_stub(th);
	if (!lstar_stub)
		return -ENOMEM;
	pr_info(RV_PR "shadow IDT: %d of %d gates translated; LSTAR %px -> %px\n",
		nstub, (nd.size + 1) / (int)sizeof(gate_desc), (void *)lstar, (void *)lstar_stub);

on:
	WRITE_ONCE(rv_active, true);
	atomic_set(&on_once, 0);
	atomic_long_set(&made_translated, 0);
	if (rv_byte)
		return 0;	/* the switch is rv_byte_switch_on(), last */
	ret = stop_machine(on_cpu, NULL, cpu_online_mask);
	if (ret)
		WRITE_ONCE(rv_active, false);
	else if (rv_callret)
		pr_info(RV_PR "switch-on: %ld return addresses on kernel stacks now point into the code cache\n",
			atomic_long_read(&made_translated));
	return ret;
}

/*
 * Byte mode: the switch itself, the last thing module init does (called
 * from init_module in switch.S, which then returns into the code cache).
 * This task sleeps natively in stop_machine() and is woken by translated
 * code; from its return on, nothing here may call into the kernel: that
 * would run kernel code natively, outside CREW and det points.
 */
int rv_byte_switch_on(void)
{
	int ret = stop_machine(rv_byte_stop_fn, NULL, cpu_online_mask);

	if (ret)
		WRITE_ONCE(rv_active, false);
	return ret;
}

/* how long switch-off waits for tasks to leave a translation's middle */
#define RV_OFF_PATIENCE	(20 * HZ)

/*
 * Returns how many code-cache words were left on stacks (only when tasks
 * stayed in the middle of a translation for RV_OFF_PATIENCE): then the
 * cache must stay allocated.
 */
unsigned long rv_entry_off(void)
{
	unsigned long t0 = jiffies, retries = 0, misplaced = 0;
	struct off_ctl c;
	pid_t blocker = 0;
	unsigned long blocker_word = 0;

	for (;;) {
		memset(&c, 0, sizeof(c));
		c.caller = current;
		c.force = time_after(jiffies, t0 + RV_OFF_PATIENCE);
		if (stop_machine(off_cpu, &c, cpu_online_mask) != -EAGAIN)
			break;
		if (!retries++) {
			blocker = c.blocker;
			blocker_word = c.blocker_word;
		}
		misplaced += c.misplaced;
		msleep(1);
	}
	pr_info(RV_PR "switch-off: %lu code-cache addresses on stacks made native, %lu retries (first: task %d at %px), %lu mid-instruction frames the instruction map would have resumed\n",
		c.made_native, retries, blocker, (void *)blocker_word, misplaced);
	if (c.inexact)
		pr_err(RV_PR "switch-off after %u s: task %d still at %px, %lu code-cache words left on stacks\n",
			jiffies_to_msecs(jiffies - t0) / 1000, c.blocker, (void *)c.blocker_word,
			c.inexact);
	free_page((unsigned long)shadow_idt);
	shadow_idt = NULL;
	return c.inexact;
}
