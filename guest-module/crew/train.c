// SPDX-License-Identifier: GPL-2.0
/*
 * Training mode and trained lists (issue 7, thesis 4.2.2).
 *
 * Training (crew=train, no recording host): the kernel runs translated
 * (dbt=1's interrupt-safe stubs, code-cache return addresses allowed) and
 * every memory access byte CREW would check runs the same shadow
 * ownership check, against the same shadow memory, but a miss goes to
 * rv_train_slow() on the kernel stack: it takes ownership with no record,
 * no wait and no seq, and when a byte was owned by another vCPU (what a
 * recording would log as a transfer) it marks the instruction's native
 * pc as a shared-memory accessor.  Every site also counts its executions,
 * so /proc/replayvm_train can say which share of the dynamic accesses the
 * shared pcs make.  Nothing here needs to be deterministic: training is
 * never recorded.
 *
 * Trained list (crew=byte,trained=1): the host hands the list to the
 * recording as the fw_cfg file opt/replayvm/trained; the module reads it by
 * fw_cfg DMA at load (before the switch: the bytes land in guest RAM as a
 * logged device write, so a replay reads the same list out of the log) and
 * refuses a list made for another kernel build.  Listed pcs get the full
 * check and the fenced release (crewinstr.c); the others the same check
 * and transfer with an unfenced release, and a transfer from another vCPU
 * there is an untrained access to shared memory: counted in the vCPU's
 * area for the host (the End record of the recording) and, with
 * untrained_report=1, one line per (vCPU, pc) at the 1st, 2nd, 4th, 8th ...
 * occurrence on the debug console port (0xe9, QEMU -debugcon).
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/vmalloc.h>
#include <linux/slab.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/utsname.h>
#include <linux/elf.h>
#include <linux/hash.h>
#include <linux/io.h>
#include <asm/processor-flags.h>
#include "rv.h"
#include "dbt/emit.h"
#include "dbt/instrument.h"
#include "crewinstr.h"
#include "crew.h"
#include "rvg_abi.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

bool rv_train, rv_trained;
unsigned long rv_untrained_sites;

static bool trained;
module_param(trained, bool, 0444);
bool rv_untrained_fence = true;
module_param_named(untrained_fence, rv_untrained_fence, bool, 0444);
MODULE_PARM_DESC(untrained_fence, "trained=1: untrained sites release with the fence too (default; 0: a plain release, which reopens crew.h hole 1 after each untrained access: the crew litmus tests catch it)");
/*
 * Report untrained accesses on the debug console (port 0xe9) as they
 * happen.  Off by default: QEMU parks a vCPU that writes a port at its
 * current position, which inside the slow path is not one a replay can
 * stop at, so a recording made with it may not replay (seen: diverged at
 * the next event logged while the other vCPU was parked).  For finding
 * what a list misses, not for recordings that must replay.
 */
static bool untrained_report;
module_param(untrained_report, bool, 0444);
MODULE_PARM_DESC(untrained_report, "trained=1: write each untrained access to a shared byte (1st, 2nd, 4th ... per vCPU and pc) to the debug console port 0xe9 (QEMU -debugcon); such a recording may not replay");
MODULE_PARM_DESC(trained, "crew=byte: a trained list (QEMU -fw_cfg name=opt/replayvm/trained,file=LIST); accesses to shared bytes by sites not in it are counted");

#define LIST_MAGIC	"# replayvm trained-pcs 1"
#define FWCFG_NAME	"opt/replayvm/trained"
#define LIST_MAX	(16UL << 20)

/* ---- the kernel build ------------------------------------------------------ */

static char build_id[41];

/* the GNU build id of vmlinux, hex (its .notes section) */
static const char *kernel_build_id(void)
{
	const u8 *p = (const u8 *)rv_ksym("__start_notes");
	const u8 *end = (const u8 *)rv_ksym("__stop_notes");
	int i;

	if (build_id[0])
		return build_id;
	while (p && end && p + sizeof(Elf64_Nhdr) <= end) {
		const Elf64_Nhdr *n = (const Elf64_Nhdr *)p;
		const u8 *name = p + sizeof(*n);
		const u8 *desc = name + ALIGN(n->n_namesz, 4);

		if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
		    !memcmp(name, "GNU", 4) && n->n_descsz <= 20) {
			for (i = 0; i < n->n_descsz; i++)
				sprintf(build_id + 2 * i, "%02x", desc[i]);
			return build_id;
		}
		p = desc + ALIGN(n->n_descsz, 4);
	}
	strcpy(build_id, "unknown");
	return build_id;
}

/* ---- training: per-pc records ------------------------------------------- */

struct rv_trec {
	u64 count;		/* executions (inline incq, racy: approximate) */
	unsigned long pc;
	u32 shared;		/* found a byte owned by another vCPU */
	u8 size, dir, string;
};

#define TREC_MAX	(256 * 1024)
#define THASH_BITS	19
static struct rv_trec *trecs;		/* module_alloc: abs32-addressable */
static u32 *thash;			/* index + 1, open addressing */
static unsigned long n_trecs, trec_full;
static u64 train_slow, train_transfers;

static struct rv_trec *trec_get(const struct rv_memop *op)
{
	unsigned int h = hash_long(op->pc, THASH_BITS), i;
	struct rv_trec *r;

	for (i = 0; i < (1u << THASH_BITS); i++, h = (h + 1) & ((1u << THASH_BITS) - 1)) {
		if (!thash[h])
			break;
		if (trecs[thash[h] - 1].pc == op->pc)
			return &trecs[thash[h] - 1];
	}
	if (n_trecs >= TREC_MAX || thash[h]) {
		trec_full++;
		return NULL;
	}
	r = &trecs[n_trecs];
	r->pc = op->pc;
	r->size = op->size;
	r->dir = op->dir;
	r->string = op->string;
	smp_store_release(&thash[h], ++n_trecs);
	return r;
}

/* what the site's cold stub pushed, lowest address first */
struct rv_train_frame {
	u64 r11, r10, r9, r8, rdi, rsi, ax_flags, flags, rdx, rcx, rax;
};

/* take [phys, phys + len) for this CPU; true if another CPU owned a byte */
static bool train_take(struct crew_cpu *c, unsigned long phys, unsigned long len, bool write)
{
	u8 *s = (u8 *)(rv_cc.shadow_va + phys);
	u8 me = c->mask, others = 0;
	unsigned long i;

	if (phys >= rv_cc.span || len > rv_cc.span - phys)
		return false;
	for (i = 0; i < len; i++) {
		u8 old = READ_ONCE(s[i]), nv = write ? me : old | me;

		others |= old & ~me;
		if (nv != old)
			WRITE_ONCE(s[i], nv);
	}
	return others;
}

/*
 * The slow path of a training site, on the kernel stack (training has no
 * deterministic points: an interrupt may come at any instruction, so no
 * per-CPU slots and no private stack).
 */
notrace void rv_train_slow(struct rv_trec *r, unsigned long a, unsigned long kind,
			   struct rv_train_frame *f)
{
	struct crew_cpu *c = (struct crew_cpu *)this_cpu_ptr(&rv_vcpu)->crew;
	bool write = r->dir & RV_MEM_WRITE, shared = false, mmio = false;
	unsigned long len = r->size ? r->size : 16;
	struct rv_piece p[8];
	int np = 0, i;

	train_slow++;
	switch (kind) {
	case RV_SLOW_SHADOW:
		shared = train_take(c, a - rv_cc.shadow_va, len, write);
		break;
	case RV_SLOW_PHYS:
		shared = train_take(c, a, len, write);
		break;
	case RV_SLOW_OTHER:
		rv_add_piece_range(p, &np, a, len, write, &mmio);
		break;
	case RV_SLOW_STRING:
		/* pieces that fit: a longer list is cut short, not refused */
		rv_string_pieces(r->pc, r->size, f->rsi, f->rdi, f->rcx,
				 f->flags & X86_EFLAGS_DF, p, &np, &mmio);
		break;
	}
	for (i = 0; i < np && i < ARRAY_SIZE(p); i++)
		shared |= train_take(c, p[i].phys, p[i].len, p[i].write);
	if (shared) {
		train_transfers++;
		if (!READ_ONCE(r->shared))
			WRITE_ONCE(r->shared, 1);
	}
}

/*
 * cold: pushfq; push rax, rsi..r11; rsi = address; rcx = frame; edx = kind;
 * rdi = record; call rv_train_slow; pops; jmp back
 */
static u8 *train_cold_stub(struct rv_trec *r, int kind, int reg, u8 *back)
{
	/* rax too: it holds the site's saved flags (seto/lahf) */
	static const u8 push[] = { 0x9c, 0x50, 0x56, 0x57, 0x41, 0x50, 0x41, 0x51, 0x41, 0x52, 0x41, 0x53 };
	static const u8 pop[] = { 0x41, 0x5b, 0x41, 0x5a, 0x41, 0x59, 0x41, 0x58, 0x5f, 0x5e, 0x58, 0x9d };
	struct rv_emit c;
	u8 *stub = rv_cold_alloc(80, 16);

	if (!stub)
		return NULL;
	c.p = stub;
	e_bytes(&c, push, sizeof(push));
	e_u8(&c, 0x48); e_u8(&c, 0x89); e_u8(&c, reg == 1 ? 0xce : 0xd6);	/* mov %rcx/%rdx,%rsi */
	e_u8(&c, 0x48); e_u8(&c, 0x89); e_u8(&c, 0xe1);			/* mov %rsp,%rcx */
	e_u8(&c, 0xba); e_u32(&c, kind);					/* mov $kind,%edx */
	e_u8(&c, 0x48); e_u8(&c, 0xc7); e_u8(&c, 0xc7); e_u32(&c, (u32)(unsigned long)r); /* mov $r,%rdi */
	e_call_scrub(&c, (unsigned long)rv_train_slow);
	e_bytes(&c, pop, sizeof(pop));
	e_jmp(&c, (unsigned long)back);
	BUG_ON(c.p > stub + 80);
	return stub;
}

static bool train_link(u8 *field, struct rv_trec *r, int kind, int reg, u8 *back)
{
	u8 *stub;

	if (!field)
		return true;
	stub = train_cold_stub(r, kind, reg, back);
	if (!stub)
		return false;
	e_fill32(field, (unsigned long)stub);
	return true;
}

/* before every memory access byte CREW would check: count, check, maybe mark */
static bool train_mem(struct rv_emit *e, struct insn *insn, const struct rv_memop *op)
{
	struct rv_own_jumps j;
	u8 *back, *mark = e->p;
	struct rv_trec *r;
	bool flags;
	int pushed;

	if (rv_crew_skip(insn, op) || (rv_bdebug & 1))
		return false;
	r = trec_get(op);
	if (!r)
		goto bad;
	flags = op->keep_flags || !rv_flags_dead(op->pc);
	pushed = e_push(e, flags);
	if (!op->string && !e_lea_rdx(e, insn, op, pushed))
		goto bad;
	e_save_flags(e, flags);
	/* incq abs32(&r->count) */
	e_u8(e, 0x48); e_u8(e, 0xff); e_u8(e, 0x04); e_u8(e, 0x25);
	e_u32(e, (u32)(unsigned long)&r->count);
	if (op->bitreg >= 0)
		e_bitreg(e, op->bitreg, op->size, flags);
	e_own_check(e, op, true, &j);
	back = e->p;
	e_restore(e, flags);
	if (!train_link(j.other, r, RV_SLOW_OTHER, 2, back) ||
	    !train_link(j.slow, r, j.slow_kind, j.slow_reg, back) ||
	    !train_link(j.str, r, RV_SLOW_STRING, 1, back))
		goto bad;
	rv_cc.instrumented++;
	return false;			/* nothing after the access */
bad:
	e->p = mark;
	rv_cc.uninstrumented++;
	return false;
}

static const struct rv_instrumentation train_instr = {
	.name = "train",
	.mem = train_mem,
	.at = rv_train_at,
};

const struct rv_instrumentation *rv_train_instrumentation(void)
{
	return &train_instr;
}

/* ---- /proc/replayvm_train ------------------------------------------------ */

static void *tr_start(struct seq_file *m, loff_t *pos)
{
	if (*pos == 0)
		return SEQ_START_TOKEN;
	return *pos <= READ_ONCE(n_trecs) ? &trecs[*pos - 1] : NULL;
}

static void *tr_next(struct seq_file *m, void *v, loff_t *pos)
{
	++*pos;
	return tr_start(m, pos);
}

static void tr_stop(struct seq_file *m, void *v)
{
}

static int tr_show(struct seq_file *m, void *v)
{
	struct rv_trec *r = v;

	if (v == SEQ_START_TOKEN) {
		u64 acc = 0, sacc = 0, exec = 0, spcs = 0;
		unsigned long i, n = READ_ONCE(n_trecs);

		for (i = 0; i < n; i++) {
			u64 c = READ_ONCE(trecs[i].count);

			if (!c)
				continue;
			exec++;
			acc += c;
			if (READ_ONCE(trecs[i].shared)) {
				spcs++;
				sacc += c;
			}
		}
		seq_printf(m, LIST_MAGIC "\n");
		seq_printf(m, "# kernel-release %s\n", init_utsname()->release);
		seq_printf(m, "# kernel-version %s\n", init_utsname()->version);
		seq_printf(m, "# build-id %s\n", kernel_build_id());
		seq_printf(m, "# vcpus %u\n", num_online_cpus());
		seq_printf(m, "# instrumented-pcs %lu\n", n);
		seq_printf(m, "# executed-pcs %llu\n", exec);
		seq_printf(m, "# accesses %llu\n", acc);
		seq_printf(m, "# shared-pcs %llu\n", spcs);
		seq_printf(m, "# shared-accesses %llu\n", sacc);
		seq_printf(m, "# slow-paths %llu\n", READ_ONCE(train_slow));
		seq_printf(m, "# transfers %llu\n", READ_ONCE(train_transfers));
		seq_printf(m, "# table-full %lu\n", trec_full);
		seq_printf(m, "# frees-reset %llu\n", READ_ONCE(rv_train_frees));
		seq_printf(m, "# freed-bytes-reset %llu\n", READ_ONCE(rv_train_freed_bytes));
		return 0;
	}
	if (!READ_ONCE(r->count))
		return 0;
	seq_printf(m, "%c %lx %llu %pS\n", READ_ONCE(r->shared) ? 'S' : 'P', r->pc,
		   READ_ONCE(r->count), (void *)r->pc);
	return 0;
}

static const struct seq_operations train_seq = {
	.start = tr_start, .next = tr_next, .stop = tr_stop, .show = tr_show,
};

int rv_train_init(void)
{
	int cpu, ret;

	if (num_online_cpus() > CREW_EXT_ID) {
		pr_err(RV_PR "crew=train: at most %d CPUs\n", CREW_EXT_ID);
		return -EINVAL;
	}
	ret = rv_shadow_setup();
	if (ret)
		goto err;
	ret = -ENOMEM;
	trecs = rv_k.module_alloc(TREC_MAX * sizeof(*trecs));
	thash = vzalloc(sizeof(u32) << THASH_BITS);
	if (!trecs || !thash || !rv_fits32((long)trecs) ||
	    !rv_fits32((long)(trecs + TREC_MAX)))
		goto err;
	memset(trecs, 0, TREC_MAX * sizeof(*trecs));
	for_each_online_cpu(cpu) {
		struct rv_vcpu *v = per_cpu_ptr(&rv_vcpu, cpu);
		struct crew_cpu *c = (struct crew_cpu *)v->crew;

		memset(v, 0, sizeof(*v));
		c->id = cpu;
		c->mask = 1u << cpu;
		c->rep = 0x0101010101010101ull * c->mask;
		v->this_off = per_cpu_offset(cpu);
	}
	rv_train_free_init();
	if (!proc_create_seq("replayvm_train", 0444, NULL, &train_seq))
		goto err;
	pr_info(RV_PR "training mode: kernel build %s\n", kernel_build_id());
	return 0;
err:
	rv_train_exit(false);
	return ret;
}

/* @in_use: translated code may still run (a leaked cache): keep its data */
void rv_train_exit(bool in_use)
{
	remove_proc_entry("replayvm_train", NULL);
	if (in_use)
		return;
	vfree(thash);
	thash = NULL;
	vfree(trecs);		/* module_alloc memory */
	trecs = NULL;
	rv_shadow_release();
}

/* ---- trained lists: fw_cfg, parsing, the set ----------------------------- */

#define FW_CFG_PORT_SEL		0x510
#define FW_CFG_PORT_DMA		0x514
#define FW_CFG_SIGNATURE	0x00
#define FW_CFG_FILE_DIR		0x19
#define FW_CFG_DMA_ERROR	0x01
#define FW_CFG_DMA_READ		0x02
#define FW_CFG_DMA_SELECT	0x08

struct fw_cfg_dma {
	__be32 control;
	__be32 length;
	__be64 address;
};

/* one DMA read of @len bytes into physically contiguous @buf */
static int fw_cfg_dma_read(struct fw_cfg_dma *d, int key, void *buf, u32 len)
{
	u64 pa = virt_to_phys(d);
	int spins;

	d->control = cpu_to_be32((key >= 0 ? (key << 16) | FW_CFG_DMA_SELECT : 0) |
				 FW_CFG_DMA_READ);
	d->length = cpu_to_be32(len);
	d->address = cpu_to_be64(virt_to_phys(buf));
	wmb();
	outl(cpu_to_be32(pa >> 32), FW_CFG_PORT_DMA);
	outl(cpu_to_be32((u32)pa), FW_CFG_PORT_DMA + 4);
	for (spins = 0; spins < 1000000; spins++) {
		u32 c = be32_to_cpu(READ_ONCE(d->control));

		if (c & FW_CFG_DMA_ERROR)
			return -EIO;
		if (!c)
			return 0;
		cpu_relax();
	}
	return -ETIMEDOUT;
}

/* the fw_cfg file @name, NUL-terminated, in a vmalloc'd buffer */
static char *fw_cfg_file(const char *name, u32 *size, const char **why)
{
	struct fw_cfg_dma *d = kzalloc(sizeof(*d), GFP_KERNEL);
	u8 *page = (u8 *)get_zeroed_page(GFP_KERNEL);
	char *buf = NULL;
	u32 n, i, sz = 0, off;
	int key = -1;

	*why = "out of memory";
	if (!d || !page)
		goto out;
	*why = "no fw_cfg DMA interface";
	if (fw_cfg_dma_read(d, FW_CFG_SIGNATURE, page, 4) || memcmp(page, "QEMU", 4))
		goto out;
	if (fw_cfg_dma_read(d, FW_CFG_FILE_DIR, page, 4))
		goto out;
	n = be32_to_cpu(*(__be32 *)page);
	for (i = 0; i < n && key < 0; i++) {
		struct { __be32 size; __be16 select; u16 res; char name[56]; } *f = (void *)page;

		if (fw_cfg_dma_read(d, -1, page, 64))
			goto out;
		if (!strncmp(f->name, name, sizeof(f->name))) {
			key = be16_to_cpu(f->select);
			sz = be32_to_cpu(f->size);
		}
	}
	*why = "no fw_cfg file " FWCFG_NAME " (QEMU -fw_cfg name=" FWCFG_NAME ",file=LIST)";
	if (key < 0)
		goto out;
	*why = "list too large";
	if (sz > LIST_MAX)
		goto out;
	*why = "out of memory";
	buf = vzalloc(sz + 1);
	if (!buf)
		goto out;
	/* page by page (vmalloc'd): the first read selects, the rest go on */
	for (off = 0; off < sz; ) {
		u32 chunk = min_t(u32, sz - off, PAGE_SIZE);

		if (fw_cfg_dma_read(d, off ? -1 : key, page, chunk)) {
			*why = "fw_cfg DMA read failed";
			vfree(buf);
			buf = NULL;
			goto out;
		}
		memcpy(buf + off, page, chunk);
		off += chunk;
	}
	buf[sz] = 0;
	*size = sz;
	*why = NULL;
out:
	kfree(d);
	free_page((unsigned long)page);
	return buf;
}

static unsigned long *tset;
static unsigned int tset_bits;
static unsigned long n_trained;

static bool tset_add(unsigned long pc)
{
	unsigned int h = hash_long(pc, tset_bits), mask = (1u << tset_bits) - 1;

	while (tset[h] && tset[h] != pc)
		h = (h + 1) & mask;
	if (tset[h])
		return false;
	tset[h] = pc;
	return true;
}

bool rv_trained_has(unsigned long pc)
{
	unsigned int h, mask;

	if (!tset)
		return false;
	mask = (1u << tset_bits) - 1;
	for (h = hash_long(pc, tset_bits); tset[h]; h = (h + 1) & mask)
		if (tset[h] == pc)
			return true;
	return false;
}

/* "# key value" of the header, or NULL */
static const char *hdr_value(const char *text, const char *key, char *out, size_t outlen)
{
	const char *p = text;
	size_t k = strlen(key);

	while (p && *p == '#') {
		if (!strncmp(p + 2, key, k) && p[2 + k] == ' ') {
			size_t n = strcspn(p + 3 + k, "\n");

			strscpy(out, p + 3 + k, min(n + 1, outlen));
			return out;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

/* crew=byte,trained=1: read, check and index the list (load, before the switch) */
int rv_trained_load(void)
{
	char val[128], rel[72];
	const char *why, *p;
	unsigned long lines = 0, bad = 0;
	u32 size = 0;
	char *text;

	if (!trained)
		return 0;
	text = fw_cfg_file(FWCFG_NAME, &size, &why);
	if (!text) {
		pr_err(RV_PR "trained list: %s\n", why);
		return -ENOENT;
	}
	if (strncmp(text, LIST_MAGIC "\n", strlen(LIST_MAGIC) + 1)) {
		pr_err(RV_PR "trained list: not a replayvm trained-pcs file (first line must be \"%s\")\n",
		       LIST_MAGIC);
		goto refuse;
	}
	if (!hdr_value(text, "build-id", val, sizeof(val))) {
		pr_err(RV_PR "trained list: no build-id in its header\n");
		goto refuse;
	}
	if (!hdr_value(text, "kernel-release", rel, sizeof(rel)))
		strcpy(rel, "?");
	if (strcmp(val, kernel_build_id())) {
		pr_err(RV_PR "trained list was made for another kernel build (%s, build-id %s); this kernel is %s, build-id %s: refusing it\n",
		       rel, val, init_utsname()->release, kernel_build_id());
		goto refuse;
	}
	for (p = text; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
		if (*p == 'S')
			lines++;
	for (tset_bits = 10; (1UL << tset_bits) < 2 * lines + 16; tset_bits++)
		;
	tset = vzalloc(sizeof(*tset) << tset_bits);
	if (!tset) {
		vfree(text);
		return -ENOMEM;
	}
	for (p = text; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
		unsigned long pc;
		char *end;

		if (*p != 'S')
			continue;
		pc = simple_strtoul(p + 2, &end, 16);
		if (p[1] != ' ' || end == p + 2 || (*end != ' ' && *end != '\n' && *end) || !pc) {
			bad++;		/* a line cut short (truncated list) */
			continue;
		}
		if (tset_add(pc))
			n_trained++;
	}
	vfree(text);
	rv_trained = true;
	pr_info(RV_PR "trained list: %lu pcs (%u bytes, %lu unreadable lines), kernel build %s\n",
		n_trained, size, bad, kernel_build_id());
	return 0;
refuse:
	vfree(text);
	return -EINVAL;
}

/* ---- untrained accesses (record, from the slow path) --------------------- */

#define UT_SLOTS	1024
struct ut_slot { unsigned long pc; u64 n; };
static struct ut_slot ut[RVG_MAX_CPUS][UT_SLOTS];
static u64 ut_total[RVG_MAX_CPUS];

/*
 * The debug console: QEMU -debugcon; nothing there without it.  Whole
 * lines, one vCPU at a time (the lock is module data: private memory).
 */
static int dbgcon_lock;

static void dbgcon(const char *s)
{
	while (xchg(&dbgcon_lock, 1))
		cpu_relax();
	for (; *s; s++)
		outb(*s, 0xe9);
	smp_store_release(&dbgcon_lock, 0);
}

/*
 * The count and the first distinct pcs, in this vCPU's area the host reads
 * at the end of a recording (rvg_abi.h): it says how many accesses the
 * list missed, without a port write (which would park the vCPU at a
 * position a replay cannot stop at).  Module memory: not in the RAM hash.
 */
static void note_for_host(struct rv_vcpu *v, unsigned long pc)
{
	int i;

	v->untrained++;
	for (i = 0; i < ARRAY_SIZE(v->untrained_pc); i++) {
		if (v->untrained_pc[i] == pc)
			return;
		if (!v->untrained_pc[i]) {
			v->untrained_pc[i] = pc;
			return;
		}
	}
}

/*
 * Private stack, no kernel memory written: formats with the module's own
 * buffer (no %pS: kallsyms could take RCU read locks); the host names pcs.
 */
void rv_untrained_event(unsigned long pc, int cpu, bool write, unsigned long phys)
{
	struct ut_slot *s = NULL;
	unsigned int h, i;
	char line[112];
	u64 n;

	if (cpu >= RVG_MAX_CPUS)
		return;
	n = ++ut_total[cpu];
	note_for_host(per_cpu_ptr(&rv_vcpu, cpu), pc);
	if (!untrained_report)
		return;
	if (!(n & (n - 1))) {
		snprintf(line, sizeof(line), "RVUNTRAINED-TOTAL cpu=%d n=%llu\n", cpu, n);
		dbgcon(line);
	}
	h = hash_long(pc, 10);
	for (i = 0; i < UT_SLOTS; i++, h = (h + 1) & (UT_SLOTS - 1)) {
		if (ut[cpu][h].pc == pc || !ut[cpu][h].pc) {
			s = &ut[cpu][h];
			break;
		}
	}
	if (!s)
		return;
	s->pc = pc;
	n = ++s->n;
	if (!(n & (n - 1))) {
		snprintf(line, sizeof(line), "RVUNTRAINED cpu=%d pc=%lx n=%llu %s phys=%lx\n",
			 cpu, pc, n, write ? "write" : "read", phys);
		dbgcon(line);
	}
}

void rv_train_show(struct seq_file *m)
{
	int cpu;
	u64 t = 0;

	for (cpu = 0; cpu < RVG_MAX_CPUS; cpu++)
		t += ut_total[cpu];
	seq_printf(m, "trained %d\n", rv_trained);
	seq_printf(m, "trained_pcs %lu\n", n_trained);
	seq_printf(m, "untrained_sites %lu\n", rv_untrained_sites);
	seq_printf(m, "untrained_events %llu\n", t);
}
