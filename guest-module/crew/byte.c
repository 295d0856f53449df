// SPDX-License-Identifier: GPL-2.0
/*
 * Byte-granular CREW mode (crew=byte): setup, the host protocol and the
 * switch (rrlog/include/rvg_abi.h describes the protocol).
 *
 * Load (the host still records page-CREW, so everything here happens at
 * the same points in a recording and its replay): shadow memory (a RAM
 * range the kernel was told to leave alone, memmap=), the CREW domain,
 * per-CPU pages, rings and private stacks, then RVG_CMD_REGISTER with the
 * list of module-private memory the host must leave out of its hashes.
 *
 * Switch (stop_machine, every CPU, interrupts off): shadow IDT and LSTAR
 * installed; CPU 0 asks the host to switch (RVG_CMD_BYTE_ON), and only then
 * learns whether this is a recording or a replay, translates the entry
 * handlers with the matching instrumentation and publishes them; every CPU
 * starts its CREW state (ring producer, or replay reader) and returns into
 * the code cache (switch.S).
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/vmalloc.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/memblock.h>
#include <linux/seq_file.h>
#include <asm/pgtable.h>
#include "rv.h"
#include "dbt/emit.h"
#include "crewinstr.h"
#include "crew.h"
#include "rvg_abi.h"

bool rv_byte;
static unsigned long shadow_base = 0x20000000, shadow_size = 0x1e000000;
module_param(shadow_base, ulong, 0444);
MODULE_PARM_DESC(shadow_base, "crew=byte: physical address of the shadow memory, RAM the kernel does not use (boot with mem=)");
module_param(shadow_size, ulong, 0444);
MODULE_PARM_DESC(shadow_size, "crew=byte: its size; it covers RAM below it byte for byte");

DEFINE_PER_CPU(struct rv_vcpu, rv_vcpu);
u64 rv_byte_native_exits;
atomic64_t rv_byte_foreign_calls;
unsigned long rv_byte_foreign_last;

#define RING_NR		4096
#define RING_LEN	(RVG_RING_HDR + RING_NR * RVG_REC_SIZE)
#define RING_ORDER	get_order(RING_LEN)
#define STACK_ORDER	2		/* 16 KiB private stack per CPU */
#define EXCL_ORDER	8		/* 1 MiB: RVG_MAX_EXCL ranges */

static struct crew_dom *dom;
static void *shadow_va, *shadow_area;
static struct rvg_desc *desc;
static struct rvg_range *excl;
static unsigned int n_excl, excl_pages;
static void *rings[RVG_MAX_CPUS], *stacks[RVG_MAX_CPUS];
/* page generations, then each CPU's remembered pages (crew_owns_span) */
static void *pages_area;
static unsigned long pages_size;
static struct crew_ring prod[RVG_MAX_CPUS];
static struct crew_reader readers[RVG_MAX_CPUS];
static u64 cons_tail[RVG_MAX_CPUS];
static int host_mode;
static atomic_t arrived, started;
static int phase;
/* the shadow IDT's gates and LSTAR jump through these (entry.c) */
u64 rv_byte_gate_slot[256], rv_byte_lstar_slot;
unsigned long rv_byte_gate_native[256], rv_byte_lstar_native;

static inline void host_cmd3(u32 cmd, u64 a0, u64 a1, u64 a2)
{
	asm volatile("outl %%eax, %w1" : : "a" (cmd), "Nd" (RVG_PORT_CMD),
		     "D" (a0), "S" (a1), "d" (a2) : "memory");
}

static inline void host_cmd(u32 cmd, u64 a0, u64 a1)
{
	host_cmd3(cmd, a0, a1, 0);
}

/* an error that ends the recording or replay (QEMU names @code) */
void rv_byte_error(u64 code, unsigned long addr)
{
	if (host_mode != RVG_MODE_NONE)
		host_cmd(RVG_CMD_ERROR, code, addr);
}

/*
 * A slow path that spins in guest code keeps its vCPU thread on a host core;
 * when vCPUs outnumber cores the vCPU it waits for may be the one that needs
 * that core, and gets it only when the spinner's time slice ends.  After
 * host_wait spins the wait goes to the host instead (RVG_CMD_WAIT), which
 * yields the core or sleeps; nothing in the guest can see it (the spin
 * counts are module-private).
 */
static unsigned int host_wait = 32;
module_param(host_wait, uint, 0444);
MODULE_PARM_DESC(host_wait, "crew=byte: spins before a CREW wait goes to the host (0: spin only)");

void crew_port_host_wait(int id, u64 old, bool active, unsigned long spins)
{
	if (!host_wait || spins % host_wait || host_mode == RVG_MODE_NONE)
		return;
	host_cmd3(RVG_CMD_WAIT, id < 0 ? RVG_WAIT_ANY : id, old,
		  active ? RVG_WAIT_ACTIVE : 0);
	this_cpu_inc(rv_vcpu.stats[RV_BS_HOST_WAIT]);
}

bool rv_byte_replaying(void)
{
	return host_mode == RVG_MODE_REPLAY;
}

unsigned long rv_byte_shadow_va(void)
{
	return (unsigned long)shadow_va;
}

static struct crew_cpu *crew_of(int cpu)
{
	return (struct crew_cpu *)per_cpu_ptr(&rv_vcpu, cpu)->crew;
}

/* ---- the list of module-private memory ---------------------------------- */

static void excl_add(unsigned long pa, unsigned long len)
{
	if (!len)
		return;
	if (n_excl && excl[n_excl - 1].gpa + excl[n_excl - 1].len == pa) {
		excl[n_excl - 1].len += len;
		return;
	}
	if (n_excl >= excl_pages * (PAGE_SIZE / sizeof(*excl)) || n_excl >= RVG_MAX_EXCL) {
		pr_warn(RV_PR "too many private ranges; some are hashed by the host\n");
		return;
	}
	excl[n_excl].gpa = pa;
	excl[n_excl].len = len;
	n_excl++;
}

/* pages of [va, va + len): vmalloc, module or direct-map memory */
void rv_byte_excl_va(const void *va, unsigned long len)
{
	unsigned long a = (unsigned long)va & PAGE_MASK;
	unsigned long end = (unsigned long)va + len;

	for (; a < end; a += PAGE_SIZE) {
		bool vm = is_vmalloc_addr((void *)a) || (a >= MODULES_VADDR && a < MODULES_END);
		unsigned long pa = vm ?
			page_to_phys(vmalloc_to_page((void *)a)) : slow_virt_to_phys((void *)a);

		excl_add(pa, PAGE_SIZE);
	}
}

/* ---- load --------------------------------------------------------------- */

/*
 * The shadow of physical byte P is at shadow_va + P.  The direct map and the
 * kernel image map P at addresses aligned like P, and so would memremap()
 * map the shadow (ioremap aligns large areas): an access and its shadow
 * check would then fall into the same set of a TLB indexed by low address
 * bits and evict each other.  QEMU's softmmu TLB is direct-mapped, where
 * that cost a victim-TLB swap on nearly every instrumented access.  So the
 * mapping starts SHADOW_SKEW pages below the shadow (reserved RAM too, never
 * touched), and the shadow itself that far into an aligned area.
 */
#define SHADOW_SKEW	1025

/*
 * host_fence=1: take the host's remote fence (RVG_CMD_FENCE, offered in
 * its hello), the CREW core's membarrier mode, where a transfer fences the
 * owners and releases need no fence of their own (crewinstr.c, crew_post).
 * Off by default: the fence per release is ~15 % of byte CREW's time at 2
 * vCPUs under MTTCG here, but this host is itself a VM, where the IPIs of
 * a membarrier are dear, and recordings with remote fences were no faster
 * (read 1.25x, ipc 0.98x, 2 rounds, 6,600-18,500 fences a run).
 */
bool rv_byte_remote_fence;
static bool host_fence;
module_param(host_fence, bool, 0444);

static int host_remote_fence(struct crew_dom *d, u32 mask)
{
	asm volatile("outl %%eax, %w0" : : "Nd" (RVG_PORT_CMD), "a" (RVG_CMD_FENCE),
		     "D" ((u64)mask) : "memory");
	return 0;
}

static int full_drain(struct crew_ring *r)
{
	host_cmd(RVG_CMD_DRAIN, 0, 0);
	this_cpu_inc(rv_vcpu.stats[RV_BS_DRAIN]);
	return 0;
}

static void *map_shadow(unsigned long base, unsigned long size)
{
	unsigned long skew = SHADOW_SKEW * PAGE_SIZE;

	shadow_area = memremap(base - skew, size + skew, MEMREMAP_WB);
	return shadow_area ? shadow_area + skew : NULL;
}

/*
 * The shadow memory and the constants the emitted checks use (byte mode and
 * training, crew=train): RAM the kernel was told to leave alone (mem=).
 */
int rv_shadow_setup(void)
{
	unsigned long ram = *(unsigned long *)rv_ksym("max_pfn") << PAGE_SHIFT;

	if (shadow_size < ram || shadow_base & ~PAGE_MASK ||
	    shadow_base < ram + SHADOW_SKEW * PAGE_SIZE ||
	    region_intersects(shadow_base - SHADOW_SKEW * PAGE_SIZE,
			      shadow_size + SHADOW_SKEW * PAGE_SIZE, IORESOURCE_SYSTEM_RAM,
			      IORES_DESC_NONE) != REGION_DISJOINT) {
		pr_err(RV_PR "shadow memory %#lx+%#lx must be reserved (mem=), with %lu KiB below it, and cover RAM (%#lx)\n",
		       shadow_base, shadow_size, SHADOW_SKEW * PAGE_SIZE / 1024, ram);
		return -EINVAL;
	}
	shadow_va = map_shadow(shadow_base, shadow_size);
	if (!shadow_va)
		return -ENOMEM;
	/* 0 = owned by nobody (the boot loader may have left an initrd here) */
	memset(shadow_va, 0, shadow_size);

	rv_cc.page_offset = PAGE_OFFSET;
	rv_cc.span = shadow_size;
	rv_cc.kimg_start = __START_KERNEL_map;
	rv_cc.kimg_size = rv_ksym("_end") - __START_KERNEL_map;
	rv_cc.phys_base = phys_base;
	rv_cc.shadow_va = (unsigned long)shadow_va;
	if (rv_cc.span >= (1UL << 31) || rv_cc.kimg_size >= (1UL << 31) ||
	    rv_cc.phys_base >= (1UL << 31)) {
		pr_err(RV_PR "crew=byte: RAM or kernel image too large for the fast path\n");
		return -ERANGE;
	}
	return 0;
}

void rv_shadow_release(void)
{
	if (shadow_area)
		memunmap(shadow_area);
	shadow_area = NULL;
	shadow_va = NULL;
}

int rv_byte_init(void)
{
	unsigned int hello, n = num_online_cpus();
	int cpu, ret;

	BUILD_BUG_ON(sizeof(struct crew_cpu) > RV_VCPU_CREW_SIZE);
	BUILD_BUG_ON(offsetof(struct rv_vcpu, dp_remain) != RVG_OFF_DP_REMAIN);
	BUILD_BUG_ON(offsetof(struct rv_vcpu, dp_pc) != RVG_OFF_DP_PC);
	BUILD_BUG_ON(offsetof(struct rv_vcpu, mode) != RVG_OFF_MODE);
	BUILD_BUG_ON(offsetof(struct rv_vcpu, enter_native) != 608);	/* switch.S */
	BUILD_BUG_ON(offsetof(struct rv_vcpu, priv_rsp) != 536);
	BUILD_BUG_ON(offsetof(struct rv_vcpu, priv_top) != RVG_OFF_PRIV_TOP);
	BUILD_BUG_ON(offsetof(struct rv_vcpu, bad_site) != RVG_OFF_BAD_SITE);
	BUILD_BUG_ON(sizeof(struct rv_vcpu) != RVG_VCPU_SIZE);
	BUILD_BUG_ON(CREW_ESITE != RVG_CREW_ESITE);
	BUILD_BUG_ON(CREW_ELIVELOCK != RVG_CREW_ELIVELOCK || CREW_ELIVELOCK != RVG_CREW_NERR);
	BUILD_BUG_ON((PAGE_SIZE << STACK_ORDER) != RVG_PRIV_STACK_SIZE);
	BUILD_BUG_ON(offsetof(struct crew_cpu, seq) != RVG_OFF_SEQ);
	BUILD_BUG_ON(offsetof(struct crew_cpu, state) != RVG_OFF_STATE);
	BUILD_BUG_ON(sizeof(struct rv_vcpu) != RVG_VCPU_SIZE);
	BUILD_BUG_ON(offsetof(struct rv_vcpu, untrained) != RVG_OFF_UNTRAINED);
	BUILD_BUG_ON(offsetof(struct rv_vcpu, untrained_pc) != RVG_OFF_UNTRAINED_PC);
	BUILD_BUG_ON(ARRAY_SIZE(((struct rv_vcpu *)0)->untrained_pc) != RVG_UNTRAINED_PCS);

	asm volatile("inl %w1, %0" : "=a" (hello) : "Nd" (RVG_PORT_CMD));
	if (hello != RVG_HELLO_MAGIC && hello != RVG_HELLO_MAGIC_FENCE) {
		pr_err(RV_PR "crew=byte needs a host recording or replaying it (QEMU -rr ...,crew=byte)\n");
		return -ENODEV;
	}
	if (n != num_possible_cpus() || n > RVG_MAX_CPUS) {
		pr_err(RV_PR "crew=byte: %u CPUs online of %u (all must be, at most %d)\n",
		       n, num_possible_cpus(), RVG_MAX_CPUS);
		return -EINVAL;
	}
	if (!rv_fits32((long)&rv_vcpu) || !rv_fits32((long)&rv_vtlb + sizeof(rv_vtlb))) {
		pr_err(RV_PR "per-CPU data out of gs:disp32 reach (%px)\n", &rv_vcpu);
		return -ERANGE;
	}
	ret = rv_shadow_setup();
	if (ret)
		goto err;

	ret = -ENOMEM;
	dom = vzalloc(sizeof(*dom));
	desc = (void *)get_zeroed_page(GFP_KERNEL);
	excl_pages = 1 << EXCL_ORDER;
	excl = (void *)__get_free_pages(GFP_KERNEL | __GFP_ZERO, EXCL_ORDER);
	if (!dom || !desc || !excl)
		goto err;
	rv_byte_remote_fence = hello == RVG_HELLO_MAGIC_FENCE && host_fence;
	if (crew_dom_init(dom, n, (long)shadow_va, rv_byte_remote_fence ?
			  CREW_TSO_MEMBARRIER : CREW_TSO_FENCED_RELEASE))
		goto err;
	if (rv_byte_remote_fence)
		dom->remote_fence = host_remote_fence;
	dom->rp_multi = 1;
	/* optional: without it every page-long check is a pass over its shadow */
	pages_size = (shadow_size >> PAGE_SHIFT) * sizeof(u32) + n * sizeof(struct crew_vcache);
	pages_area = alloc_pages_exact(pages_size, GFP_KERNEL | __GFP_ZERO);
	if (pages_area)
		crew_dom_pages(dom, pages_area, 0, shadow_size >> PAGE_SHIFT, PAGE_SHIFT);
	else
		pr_warn(RV_PR "no memory to remember page verifications\n");
	for_each_online_cpu(cpu) {
		struct rv_vcpu *v = per_cpu_ptr(&rv_vcpu, cpu);

		rings[cpu] = (void *)__get_free_pages(GFP_KERNEL | __GFP_ZERO, RING_ORDER);
		stacks[cpu] = (void *)__get_free_pages(GFP_KERNEL | __GFP_ZERO, STACK_ORDER);
		if (!rings[cpu] || !stacks[cpu])
			goto err;
		if (slow_virt_to_phys(v) & (RVG_VCPU_SIZE - 1)) {
			pr_err(RV_PR "per-CPU area of CPU %d not aligned\n", cpu);
			ret = -EINVAL;
			goto err;
		}
		memset(v, 0, sizeof(*v));
		if (crew_cpu_init(dom, (struct crew_cpu *)v->crew, cpu, NULL, NULL))
			goto err;
		if (pages_area)
			crew_cpu_vcache((struct crew_cpu *)v->crew, (struct crew_vcache *)
					(pages_area + (shadow_size >> PAGE_SHIFT) * sizeof(u32)) + cpu);
		v->dp_remain = 1ULL << 62;
		v->this_off = per_cpu_offset(cpu);
		v->priv_top = (u64)stacks[cpu] + (PAGE_SIZE << STACK_ORDER) - 16;
		if (crew_ring_init(&prod[cpu], rings[cpu], RING_NR))
			goto err;
	}
	return 0;
err:
	rv_byte_exit();
	return ret;
}

/* after the code cache exists: tell the host what is ours */
int rv_byte_register(void)
{
	struct module *m = THIS_MODULE;
	int cpu;

	desc->version = RVG_ABI_VERSION;
	desc->nr_cpus = num_online_cpus();
	desc->ring_len = RING_LEN;
	desc->shadow_gpa = shadow_base;
	desc->shadow_len = shadow_size;
	desc->cache_lo = (unsigned long)rv_cache->base;
	desc->cache_hi = (unsigned long)rv_cache->base + rv_cache->size;
	desc->ktext_lo = rv_k.stext;
	desc->ktext_hi = rv_k.etext;
	for_each_online_cpu(cpu) {
		desc->vcpu_gpa[cpu] = slow_virt_to_phys(per_cpu_ptr(&rv_vcpu, cpu));
		desc->ring_gpa[cpu] = virt_to_phys(rings[cpu]);
		rv_byte_excl_va(rings[cpu], PAGE_SIZE << RING_ORDER);
		rv_byte_excl_va(stacks[cpu], PAGE_SIZE << STACK_ORDER);
		/* the module's per-CPU data (rv_vcpu, stats, ...) */
		rv_byte_excl_va(per_cpu_ptr(m->percpu, cpu), m->percpu_size);
	}
	rv_byte_excl_va(m->core_layout.base, m->core_layout.size);
	rv_byte_excl_va(rv_cache->alloc_base, rv_cache->alloc_size);
	rv_byte_excl_va(dom, sizeof(*dom));
	if (pages_area)
		rv_byte_excl_va(pages_area, pages_size);
	rv_byte_excl_va(desc, PAGE_SIZE);
	rv_byte_excl_va(excl, PAGE_SIZE * excl_pages);
	rv_translate_excl();
	desc->n_excl = n_excl;
	desc->excl_gpa = virt_to_phys(excl);
	host_cmd(RVG_CMD_REGISTER, virt_to_phys(desc), 0);
	pr_info(RV_PR "byte CREW: registered with the host (%u private ranges), module text %px\n",
		n_excl, m->core_layout.base);
	return 0;
}

void rv_byte_exit(void)
{
	int cpu;

	for (cpu = 0; cpu < RVG_MAX_CPUS; cpu++) {
		if (rings[cpu])
			free_pages((unsigned long)rings[cpu], RING_ORDER);
		if (stacks[cpu])
			free_pages((unsigned long)stacks[cpu], STACK_ORDER);
		rings[cpu] = stacks[cpu] = NULL;
	}
	vfree(dom);
	if (pages_area)
		free_pages_exact(pages_area, pages_size);
	pages_area = NULL;
	free_page((unsigned long)desc);
	free_pages((unsigned long)excl, EXCL_ORDER);
	rv_shadow_release();
	dom = NULL;
	desc = NULL;
	excl = NULL;
}

/* ---- replay: the ring the host fills ------------------------------------ */

static int ring_next(struct crew_reader *rd, struct crew_rec *out)
{
	int cpu = (int)(long)rd->priv, tries;
	struct crew_ring_shared *sh = rings[cpu];

	for (tries = 0; tries < 3; tries++) {
		u64 head = READ_ONCE(sh->head);

		smp_rmb();
		if (head > cons_tail[cpu] && head - cons_tail[cpu] <= RING_NR) {
			*out = sh->rec[cons_tail[cpu] & (RING_NR - 1)];
			cons_tail[cpu]++;
			smp_store_release(&sh->tail, cons_tail[cpu]);
			return 1;
		}
		host_cmd(RVG_CMD_REFILL, 0, 0);
		this_cpu_inc(rv_vcpu.stats[RV_BS_REFILL]);
	}
	return -CREW_EPROTO;
}

/* ---- the switch --------------------------------------------------------- */

static void translate_entries(void)
{
	int v;

	for (v = 0; v < 256; v++)
		if (rv_byte_gate_native[v])
			WRITE_ONCE(rv_byte_gate_slot[v],
				   rv_lookup_or_translate(rv_byte_gate_native[v]));
	WRITE_ONCE(rv_byte_lstar_slot, rv_lookup_or_translate(rv_byte_lstar_native));
}

/*
 * Testing only: act like a hostile or broken guest, a record with a bad
 * checksum (bdebug=32) or a well-formed one whose site lies beyond guest
 * RAM (bdebug=64) in the ring; the host must stop with an error.
 */
static void hostile_record(int cpu, bool bad_site)
{
	struct crew_rec r = { 0 };

	r.magic = CREW_REC_MAGIC;
	r.version = CREW_REC_VERSION;
	r.type = CREW_REC_TRANSFER;
	r.acq_id = cpu;
	r.n_owners = 1;
	r.owner[0] = (u64)(cpu ^ 1) << CREW_SEQ_BITS;
	r.site_range = CREW_SITE_ADDR_MASK;
	crew_rec_seal(&r);
	if (!bad_site)
		r.acq_seq ^= 0x5a;		/* breaks the checksum */
	crew_ring_emit(&prod[cpu], &r);
	host_cmd(RVG_CMD_DRAIN, 0, 0);
}

static void start_cpu(int cpu)
{
	struct crew_cpu *c = crew_of(cpu);

	rv_vtlb_flush();
	if (host_mode == RVG_MODE_REPLAY) {
		readers[cpu].next = ring_next;
		readers[cpu].priv = (void *)(long)cpu;
		if (crew_replay_start(c, &readers[cpu]))
			host_cmd(RVG_CMD_ERROR, -c->rp_err, 0);
	} else {
		prod[cpu].full = full_drain;
		c->emit = crew_ring_emit;
		c->emit_priv = &prod[cpu];
		if ((rv_bdebug & (32 | 64)) && cpu == 0)
			hostile_record(cpu, rv_bdebug & 64);
		if ((rv_bdebug & 128) && cpu == 0)	/* a vCPU that is not */
			host_cmd3(RVG_CMD_WAIT, RVG_MAX_CPUS + 3, 0, 0);
	}
}

/* stop_machine callback, every CPU, interrupts off (called by switch.S) */
int rv_byte_on_cpu(void *unused)
{
	int cpu = smp_processor_id(), n = num_online_cpus();

	rv_entry_install_this_cpu();
	atomic_inc(&arrived);
	while (atomic_read(&arrived) < n)
		cpu_relax();
	if (cpu == 0) {
		host_cmd(RVG_CMD_BYTE_ON, 0, 0);
		host_mode = (int)READ_ONCE(this_cpu_ptr(&rv_vcpu)->mode);
		if (host_mode != RVG_MODE_RECORD && host_mode != RVG_MODE_REPLAY)
			host_mode = RVG_MODE_RECORD;
		rv_instr_select("crew");
		translate_entries();
		smp_store_release(&phase, 1);
	} else {
		while (!smp_load_acquire(&phase))
			cpu_relax();
	}
	start_cpu(cpu);
	atomic_inc(&started);
	while (atomic_read(&started) < n)
		cpu_relax();
	return 0;
}

void rv_byte_show(struct seq_file *m)
{
	u64 s[RV_BS_NR] = { 0 };
	int cpu, i;

	for_each_online_cpu(cpu)
		for (i = 0; i < RV_BS_NR; i++)
			s[i] += per_cpu_ptr(&rv_vcpu, cpu)->stats[i];
	seq_printf(m, "byte_mode %s\n", host_mode == RVG_MODE_REPLAY ? "replay" :
		   host_mode == RVG_MODE_RECORD ? "record" : "none");
	seq_printf(m, "byte_sites_instrumented %lu\n", rv_cc.instrumented);
	seq_printf(m, "byte_sites_uninstrumented %lu\n", rv_cc.uninstrumented);
	seq_printf(m, "byte_sites_own_stack %lu\n", rv_cc.skipped_stack);
	seq_printf(m, "byte_slow %llu\n", s[RV_BS_SLOW]);
	seq_printf(m, "byte_classify %llu\n", s[RV_BS_CLASSIFY]);
	seq_printf(m, "byte_tlb_flush_sites %lu\n", rv_cc.tlb_flush_sites);
	seq_printf(m, "byte_release_inc_sites %lu\n", rv_cc.release_inc);
	{
		u64 fills = 0, flushes = 0, checked = 0, stale = 0;

		for_each_online_cpu(cpu) {
			struct rv_vtlb *t = per_cpu_ptr(&rv_vtlb, cpu);

			fills += t->fills;
			flushes += t->flushes;
			checked += t->checked;
			stale += t->stale;
		}
		seq_printf(m, "byte_vtlb_fills %llu\nbyte_vtlb_flushes %llu\n", fills, flushes);
		seq_printf(m, "byte_vtlb_checked %llu\nbyte_vtlb_stale %llu\n", checked, stale);
	}
	seq_printf(m, "byte_mmio %llu\n", s[RV_BS_MMIO]);
	seq_printf(m, "byte_string %llu\n", s[RV_BS_STRING]);
	seq_printf(m, "byte_replay_waits %llu\n", s[RV_BS_REPLAY_WAIT]);
	seq_printf(m, "byte_drains %llu\n", s[RV_BS_DRAIN]);
	seq_printf(m, "byte_refills %llu\n", s[RV_BS_REFILL]);
	seq_printf(m, "byte_host_waits %llu\n", s[RV_BS_HOST_WAIT]);
	seq_printf(m, "byte_native_exits %llu\n", READ_ONCE(rv_byte_native_exits));
	seq_printf(m, "byte_foreign_calls %lld last %pS\n",
		   atomic64_read(&rv_byte_foreign_calls), (void *)READ_ONCE(rv_byte_foreign_last));
	rv_train_show(m);
	for_each_online_cpu(cpu)
		seq_printf(m, "byte_cpu%d seq %llu transfers %llu page_hits %llu\n", cpu,
			   crew_of(cpu)->seq, crew_of(cpu)->st.records, crew_of(cpu)->st.vc_hits);
}
