/* SPDX-License-Identifier: GPL-2.0 */
/*
 * replay-vm guest module: kernel dynamic binary translator (BTKernel design,
 * thesis ch.3) for x86-64 Linux 6.1, and byte-granular CREW on top of it
 * (thesis 4.2).  Declarations shared by the layers: the translator (dbt/),
 * byte CREW's per-CPU state and host side (crew/byte.c), main.c, stats.c.
 * Each layer's own interfaces: dbt/instrument.h, dbt/emit.h,
 * crew/crewinstr.h, crew/crew.h (README.md draws the map).
 */
#ifndef RV_H
#define RV_H

#include <linux/types.h>
#include <linux/percpu.h>
#include <linux/atomic.h>
#include <asm/insn.h>

struct module;
struct seq_file;
struct rv_pokebatch;
struct task_struct;
struct unwind_state;
struct pt_regs;

#define RV_PR "replayvm: "

/* ---- kernel symbols not exported to modules (dbt/ksyms.c) ---- */
int rv_ksyms_init(void);
unsigned long rv_ksym(const char *name);
const void *rv_ksym_table(const char *start, const char *stop, size_t size, unsigned long *n);

struct rv_kfuncs {
	int (*insn_decode)(struct insn *insn, const void *kaddr, int buf_len,
			   enum insn_mode m);
	void *(*module_alloc)(unsigned long size);
	int (*set_memory_x)(unsigned long addr, int numpages);
	unsigned long stext, etext;
	unsigned long entry_syscall_64;
	unsigned long ftrace_lo, ftrace_hi;	/* ftrace's asm trampolines */
	struct module *(*module_text_address)(unsigned long addr);
	bool (*is_ftrace_trampoline)(unsigned long addr);
	unsigned long do_sync_core;	/* text_poke_bp's IPI function */
	struct task_struct *(*idle_task)(int cpu);
	void (*unwind_start)(struct unwind_state *state, struct task_struct *task,
			     struct pt_regs *regs, unsigned long *first_frame);
	bool (*unwind_next_frame)(struct unwind_state *state);
	unsigned long *(*unwind_ret_ptr)(struct unwind_state *state);
};
extern struct rv_kfuncs rv_k;

/* ---- decoder (dbt/decode.c): the kernel's own x86 decoder ---- */
int rv_decode(struct insn *insn, unsigned long pc);
int rv_selftest_decode(void);

/* ---- code cache (dbt/cache.c) ---- */
#define RV_CACHE_SIZE	(8UL << 20)	/* translated code + stubs */
#define RV_FT_BITS	16		/* fast lookup table, direct mapped */
#define RV_FT_SIZE	(1UL << RV_FT_BITS)

struct rv_cache {
	u8 *base;		/* code arena (module area: within +-2 GB of text) */
	unsigned long size;
	unsigned long used;	/* bump pointer, under rv_lock */
	u64 *ft_vals;		/* fast table: translated entries (abs32 addressable) */
	unsigned long ft_empty;	/* entry whose native address is 0 */
	void *alloc_base;	/* what module_alloc returned */
	unsigned long alloc_size;
	/* addresses of the shared stubs inside the arena */
	unsigned long ind_stub, ind_slow, chain_miss, kret_fix;
	unsigned long ind_off, ind_slow_off, chain_off; /* off-mode targets */
};
extern struct rv_cache *rv_cache;

int rv_cache_create(void);
void rv_cache_destroy(bool leak);
void *rv_cache_alloc(unsigned long size, unsigned long align);
void rv_stage_begin(u8 *blk, unsigned long len);
void rv_stage_commit(u8 *blk_end);
u64 rv_stage_bypassed(void);
unsigned long rv_cold_used(void);	/* byte mode's cold arena */
void *rv_cold_alloc(unsigned long size, unsigned long align);
/* fast-table index: low16(T + 8 * ((T >> 8) & 0xffff)), as ind_stub computes it */
static inline unsigned int rv_ft_index(unsigned long t)
{
	return (unsigned int)((t + 8 * ((t >> 8) & 0xffff)) & 0xffff);
}

static inline bool rv_in_cache(unsigned long a)
{
	return rv_cache && a - (unsigned long)rv_cache->base < rv_cache->size;
}
void rv_text_write(void *dst, const void *src, size_t len);

/* ---- blocks, translation and the dispatcher (dbt/translate.c) ---- */
#define RV_MAX_INSNS	32
#define RV_MAX_BLOCKS	(96 * 1024)

struct rv_block {
	unsigned long native;		/* native start */
	unsigned long nlo, nhi;		/* native bytes covered (jmps followed) */
	unsigned long cache;		/* translated entry */
	u32 native_len;
	u32 cache_len;			/* body + exit stubs */
	struct rv_block *next;		/* hash chain */
	u8 ninsn;
	u8 dead;
	struct { u16 coff; s32 noff; } map[RV_MAX_INSNS + 1]; /* per insn: cache, native offset */
};

struct rv_stats {
	u64 blocks, dispatch, chains, native_exits, fallbacks, cache_full;
	u64 fixups, fixup_miss, invalidations, inval_blocks, kret_enter;
	u64 jl_sites;		/* jump-label sites translated from their key */
	u64 sc_sites;		/* static-call sites translated from their key */
	u64 sc_direct;		/* ... of which call their current target directly */
	u64 pb_sites;		/* sites of a text-poke batch, translated from it */
	u64 pb_sync_sites;	/* do_sync_core entries counting syncs */
};
DECLARE_PER_CPU(struct rv_stats, rv_pcpu_stats);
#define rv_stat_inc(f) this_cpu_inc(rv_pcpu_stats.f)

/* entry counters, incremented by generated stubs (lock inc, absolute) */
struct rv_entry_counts {
	u64 syscalls;		/* syscall instruction, 64-bit (LSTAR) */
	u64 exceptions;		/* IDT vectors 0..31 via shadow IDT */
	u64 interrupts;		/* IDT vectors 32..255 via shadow IDT */
	u64 samp_trans;		/* interrupts that hit kernel in translated code */
	u64 samp_native;	/* interrupts that hit kernel in native code */
	u64 samp_dispatch;	/* ... in the dispatcher/translator (this module) */
	u64 samp_user;		/* interrupts that hit user mode */
};
extern struct rv_entry_counts rv_entries;
#define RV_RING 256
extern unsigned long rv_native_ring[RV_RING];
void rv_sample_native(unsigned long ip);
void rv_sample_trans(unsigned long ip);
extern unsigned long rv_trans_ring[RV_RING];

int rv_translate_init(void);
void rv_translate_exit(void);
unsigned long rv_lookup_or_translate(unsigned long target);
bool rv_translatable(unsigned long pc);
unsigned long rv_cache_to_native(unsigned long ip);
unsigned long rv_cache_to_native_exact(unsigned long ip);
void rv_invalidate_range(unsigned long start, unsigned long end);
void rv_invalidate_sites(const struct rv_pokebatch *pb);
/* the translator lock, for dbt/coherence.c's batch table */
unsigned long rv_xlate_lock(void);
void rv_xlate_unlock(unsigned long flags);
unsigned long rv_nblocks(void);
extern bool rv_active;
extern bool rv_callret;
extern bool rv_superblock;
extern atomic64_t rv_fixups, rv_fixup_miss;

/* ---- jump-label sites (dbt/jumplabel.c) ---- */
struct rv_jl_site {
	unsigned long pc, target, key;
	u8 len;			/* 2 or 5 */
	bool branch;		/* jumps when the key is disabled */
};
extern bool rv_jl_keys;
int rv_jl_init(void);
void rv_jl_exit(void);
void rv_jl_excl(void);
bool rv_jl_find(unsigned long pc, struct rv_jl_site *s);
bool rv_jl_keyed(unsigned long pc);
unsigned long rv_jl_bad(void);

/* ---- static-call sites (dbt/staticcall.c; on with jl_keys) ---- */
struct rv_sc_site {
	unsigned long pc, key;	/* a 5-byte site; key->func is its target */
	bool tail;		/* jmp (ret when func is NULL), not call (nop) */
};
int rv_sc_init(void);
void rv_sc_exit(void);
void rv_sc_excl(void);
bool rv_sc_find(unsigned long pc, struct rv_sc_site *s);
bool rv_sc_keyed(unsigned long pc);

/* C entry points called by generated stubs */
unsigned long rv_dispatch(unsigned long target, unsigned long stub_ret);
void rv_fix_exc_frame(unsigned long *frame, int errcode);
unsigned long rv_kret(unsigned long ip);

/* ---- emitters / stubs (dbt/stubs.c) ---- */
int rv_stubs_build(void);
void rv_stubs_off(void);
unsigned long rv_emit_gate_stub(int vector, bool exception, bool errcode,
				unsigned long handler_tr);
unsigned long rv_emit_syscall_stub(unsigned long entry_tr);

/* ---- entry interposition (dbt/entry.c, dbt/switch.S) ---- */
int rv_entry_on(void);
int rv_byte_switch_on(void);
int rv_byte_switch_failed(int ret);
#define RV_INIT_SWITCH 1	/* replayvm_init: byte mode, switch now */
int replayvm_init(void);
int __init init_module(void);	/* dbt/switch.S: calls replayvm_init, switches */
unsigned long rv_entry_off(void);

/* ---- coherence: text_poke, modules (dbt/coherence.c) ---- */
int rv_coherence_init(void);
void rv_coherence_exit(void);
extern atomic64_t rv_pokes_seen;
unsigned long rv_poke_missed(void);
void rv_pokes_show(struct seq_file *m);
/* ftrace trampolines once translated, until freed */
void rv_tramp_note(unsigned long pc);
bool rv_tramp_known(unsigned long pc);
/* the batch of text pokes byte mode orders now, if any (pokebatch.h) */
const struct rv_pokebatch *rv_pokes_live(void);
extern u64 rv_pb_tag;

/* ---- byte-granular CREW (crew/byte.c, crew/crewinstr.c, crew/crewslow.c) ---- */
/*
 * Byte mode (crew=byte): the host (QEMU -rr ...,crew=byte) delivers
 * kernel-mode interrupts only at deterministic points, so the stubs keep
 * their state in per-CPU slots of struct rv_vcpu (gs-relative) and run C
 * code on a private per-CPU stack: nothing that depends on the code
 * cache's layout is ever written to kernel memory (rrlog/include/rvg_abi.h).
 */
extern bool rv_byte;
struct rv_site;
#define RV_VCPU_CREW_SIZE	512

struct rv_vcpu {
	u8 crew[RV_VCPU_CREW_SIZE];	/* struct crew_cpu (crew/crew.h) */
	/* shared with the host (rvg_abi.h offsets) */
	u64 dp_remain;			/* 512 */
	u64 dp_pc;			/* 520 */
	u64 mode;			/* 528: enum rvg_host_mode (host) */
	/* stub slots */
	u64 priv_rsp;			/* kernel rsp while on the private stack */
	u64 priv_top;			/* top of this CPU's private stack */
	u64 x_target;			/* native target of an exit / lookup */
	u64 x_field;			/* rel32 field of an unchained exit */
	u64 x_dest;			/* where a stub continues */
	u64 x_addr;			/* slow path: shadow pointer or address */
	u64 x_site;			/* slow path: struct rv_site * */
	u64 x_kind;			/* slow path: RV_SLOW_* */
	u64 kret_native;		/* native rip a kernel iret resumes at */
	u64 enter_native;		/* switch-on: where this CPU re-enters */
	u64 this_off;			/* copy of this_cpu_off */
	u64 stats[12];			/* byte-mode counters, this CPU */
	u64 poke_seen;			/* text-poke syncs run (pokebatch.h) */
	u64 spare[24];			/* keeps the host's offsets below */
	/* shared with the host: untrained accesses to shared bytes (crew/train.c) */
	u64 untrained;			/* 920 */
	u64 untrained_pc[8];		/* 928 */
	/* shared with the host: a replay's CREW_ESITE (crew_cpu.bad_site) */
	u64 bad_site[4];		/* 992 */
} __aligned(1024);
/* plain .data..percpu: the module loader places nothing else */
DECLARE_PER_CPU(struct rv_vcpu, rv_vcpu);
/* gs-relative displacement of a field of this CPU's struct rv_vcpu */
#define RV_GS(field)	((u32)((unsigned long)&rv_vcpu + offsetof(struct rv_vcpu, field)))

/*
 * A per-CPU software TLB for the inline check (crew/crewinstr.c): kernel
 * addresses outside the direct map and the kernel image (vmalloc'd kernel
 * stacks, whose objects the kernel reaches through other registers than
 * %rsp; vmemmap's struct pages; vmalloc and module data) found their
 * shadow byte only in slow_common's page-table walk, which in a read loop
 * took 3 of every 10 instrumented accesses.  Entries are filled there and
 * dropped at every TLB-flushing instruction the translated kernel runs
 * (invlpg, invpcid, mov to cr3/cr4), so an entry lives no longer than the
 * CPU's own TLB entry for the same page could.
 */
#define RV_VTLB_SIZE	128
struct rv_vtlb {
	struct { u64 vpn; s64 delta; } e[RV_VTLB_SIZE];	/* delta: phys - virt */
	u64 fills, flushes;
	u64 checked, stale;		/* bdebug=512 */
} ____cacheline_aligned;
DECLARE_PER_CPU(struct rv_vtlb, rv_vtlb);
#define RV_VTLB(field)	((u32)((unsigned long)&rv_vtlb + offsetof(struct rv_vtlb, field)))
void rv_vtlb_flush(void);
extern unsigned long rv_vtlb_flush_common;	/* dbt/stubs_byte.c */

enum rv_bstat {
	RV_BS_SLOW, RV_BS_CLASSIFY, RV_BS_MMIO, RV_BS_STRING, RV_BS_REPLAY_WAIT,
	RV_BS_DOORBELL, RV_BS_DRAIN, RV_BS_REFILL, RV_BS_NATIVE_EXIT,
	RV_BS_UNINSTR, RV_BS_HOST_WAIT, RV_BS_NR
};

int rv_byte_init(void);			/* load: allocate */
int rv_shadow_setup(void);			/* byte mode and training */
void rv_shadow_release(void);
int rv_byte_register(void);			/* load, after the cache: tell the host */
void rv_byte_excl_va(const void *va, unsigned long len);
void rv_byte_error(u64 code, unsigned long addr);
void rv_translate_excl(void);
int rv_byte_on_cpu(void *unused);
int rv_byte_stop_fn(void *unused);		/* dbt/switch.S */
void rv_entry_install_this_cpu(void);
extern u64 rv_byte_gate_slot[256], rv_byte_lstar_slot, rv_byte_native_exits;
/* calls from translated code into native code other than this module's */
extern atomic64_t rv_byte_foreign_calls;
extern unsigned long rv_byte_foreign_last;
extern unsigned long rv_byte_gate_native[256], rv_byte_lstar_native;
int rv_byte_switch_on_cpu(void);		/* in stop_machine, every CPU */
void rv_byte_exit(void);
bool rv_byte_replaying(void);
extern bool rv_byte_remote_fence;	/* crew/byte.c: releases need no fence */
unsigned long rv_byte_shadow_va(void);
void rv_byte_show(struct seq_file *m);
/* stubs for byte mode (dbt/stubs_byte.c) */
int rv_stubs_build_byte(void);
unsigned long rv_emit_gate_stub_byte(int vector, bool exception, bool errcode, u64 *slot);
extern unsigned long rv_byte_enter_tramp, rv_slow_common;
unsigned long rv_dispatch_b(unsigned long target, unsigned long field);
unsigned long rv_dispatch_ind(unsigned long target, unsigned long *ksp);
unsigned long rv_dispatch_call(unsigned long target, unsigned long *ksp);
void rv_native_return(unsigned long *frame);
extern unsigned long rv_ind_call, rv_ret_tramp;
void rv_byte_slow(void);			/* crew/crewslow.c, private stack */

/* ---- /proc/replayvm (stats.c) ---- */
int rv_stats_init(void);
void rv_stats_exit(void);
extern unsigned long rv_selftest_insns, rv_selftest_bad;

#endif
