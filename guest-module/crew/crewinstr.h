/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Byte CREW: the instrumentation the translator emits (crewinstr.c), its
 * slow paths (crewslow.c), training and trained lists (train.c,
 * trainfree.c).  The module's per-CPU state and the host protocol's side
 * (byte.c) are declared in rv.h.
 */
#ifndef RV_CREWINSTR_H
#define RV_CREWINSTR_H
#include "dbt/emit.h"
#include "dbt/instrument.h"
struct seq_file;

/* what an instrumentation site is; lives in the cold part of the cache */
struct rv_site {
	unsigned long pc;	/* native address of the instruction */
	u8 size;		/* bytes (string: element size) */
	u8 dir;			/* RV_MEM_READ | RV_MEM_WRITE */
	u8 string;		/* movs/stos/lods/cmps/scas */
};

/*
 * why slow_common was entered (x_kind); x_addr holds what the name says.
 * RV_SLOW_SENTINEL is or'ed in by an untrained site (record with a trained
 * list, train.c): the same transfer, counted when another vCPU owned a byte.
 */
#define RV_SLOW_SENTINEL	0x100
enum rv_slow_kind {
	RV_SLOW_SHADOW = 1,	/* record: fast check failed, x_addr = shadow byte */
	RV_SLOW_PHYS,		/* record: odd size, x_addr = physical address */
	RV_SLOW_OTHER,		/* neither direct map nor image: x_addr = address */
	RV_SLOW_REPLAY,		/* replay: seq == rp_next, x_addr = address
				 * (string sites: unused) */
	RV_SLOW_STRING,		/* string instruction: ranges from registers */
};

/* constants the emitted code uses, fixed at load */
struct rv_crew_consts {
	unsigned long page_offset;	/* direct map base */
	unsigned long span;		/* RAM bytes the shadow covers */
	unsigned long kimg_start;	/* __START_KERNEL_map */
	unsigned long kimg_size;	/* _end - __START_KERNEL_map */
	unsigned long phys_base;
	unsigned long shadow_va;	/* shadow(phys) = shadow_va + phys */
	/* translation-time counts */
	unsigned long instrumented, uninstrumented, skipped_stack, tlb_flush_sites;
	unsigned long release_inc;	/* releases by incq (flags dead after) */
};
extern struct rv_crew_consts rv_cc;
extern unsigned int rv_bdebug;

/* a piece of a classified access: physical range the shadow covers */
#define RV_MAX_PIECES 64
struct rv_piece { unsigned long phys, len; bool write; };
bool rv_add_piece_range(struct rv_piece *p, int *np, unsigned long a, unsigned long len,
			bool write, bool *mmio);
int rv_string_pieces(unsigned long pc, int size, u64 rsi, u64 rdi, u64 rcx, bool down,
		     struct rv_piece *p, int *np, bool *mmio);

/* shared emitters (crewinstr.c) */
int e_push(struct rv_emit *e, bool rax);
void e_save_flags(struct rv_emit *e, bool flags);
void e_restore(struct rv_emit *e, bool flags);
bool e_lea_rdx(struct rv_emit *e, struct insn *insn, const struct rv_memop *op, int pushed);
void e_bitreg(struct rv_emit *e, int reg, int size, bool rax);
u8 *e_to_phys(struct rv_emit *e);
u8 *e_shadow_check(struct rv_emit *e, int size, bool write);
/* the jumps e_own_check leaves to fill, and the slow path the check wants */
struct rv_own_jumps {
	u8 *other, *slow, *str;
	u8 *phys;		/* where %rcx holds the physical address */
	int slow_kind, slow_reg;
};
void e_own_check(struct rv_emit *e, const struct rv_memop *op, bool check,
		 struct rv_own_jumps *j);
u8 *e_jcc32(struct rv_emit *e, u8 cc);
bool rv_crew_skip(struct insn *insn, const struct rv_memop *op);

/* training mode and trained lists (train.c) */
extern bool rv_train;			/* crew=train */
extern bool rv_trained;			/* crew=byte with a trained list */
extern bool rv_untrained_fence;		/* ... whose untrained sites fence too */
extern unsigned long rv_untrained_sites;	/* untrained sites emitted (record) */
const struct rv_instrumentation *rv_train_instrumentation(void);
int rv_train_init(void);
void rv_train_exit(bool in_use);
int rv_trained_load(void);
bool rv_trained_has(unsigned long pc);
void rv_train_free_init(void);
void rv_train_at(struct rv_emit *e, struct insn *insn, unsigned long pc);
extern u64 rv_train_frees, rv_train_freed_bytes;
void rv_untrained_event(unsigned long pc, int cpu, bool write, unsigned long phys);
void rv_train_show(struct seq_file *m);

int rv_flags_dead(unsigned long pc);
const struct rv_instrumentation *rv_crew_instrumentation(void);
#endif
