// SPDX-License-Identifier: GPL-2.0
/*
 * Jump-label sites, for translating them from their key (translate.c).
 *
 * A static key flips by rewriting every site of the key with
 * text_poke_bp (int3, tail, first byte) and only then does coherence.c
 * drop the translations that copied the old bytes.  Which version another
 * vCPU runs therefore depends on when it last translated the block and on
 * when the invalidation landed, an order that no log holds: a replay can
 * take the other arm (DO_ONCE's slow path in inet_ehashfn: a different
 * number of instrumented accesses), or even translate the int3 and run the
 * site natively.  Byte mode translates each site as a CREW-ordered read of
 * key->enabled instead (the kernel lets a CPU run either arm while a key
 * flips, so this is one of the native outcomes).
 *
 * The kernel keeps its table sorted by key; this is a copy sorted by
 * address, for vmlinux.  Module sites are looked up in the module's own
 * table (a few hundred entries at most).
 */
#include <linux/kernel.h>
#include <linux/jump_label.h>
#include <linux/module.h>
#include "rv.h"
#include "instrument.h"
#include "crew/crewinstr.h"
#include "sitetab.h"

struct jl_ent {
	unsigned long pc;	/* first: rv_sitetab */
	const struct jump_entry *e;
	unsigned int len;	/* decoded at load: 2 or 5, 0 if odd */
};

static struct rv_sitetab tab;
static unsigned long n_bad;	/* sites left to their bytes (odd length) */
bool rv_jl_keys = true;
module_param_named(jl_keys, rv_jl_keys, bool, 0444);
MODULE_PARM_DESC(jl_keys, "byte/train mode: translate jump-label sites as an ordered read of their static key (0: copy their current bytes, as before; a key flipped during a recording may then not replay)");

/* 2 or 5: from the bytes, or where an int3 is in place, from the distance */
static unsigned int site_len(const struct jump_entry *e)
{
	unsigned long pc = jump_entry_code(e);
	long d = (long)jump_entry_target(e) - (long)(pc + 2);
	struct insn insn;

	if (!rv_decode(&insn, pc) && (insn.length == 2 || insn.length == 5))
		return insn.length;
	if (*(const u8 *)pc == 0xcc)
		return d >= -128 && d <= 127 ? 2 : 5;
	return 0;
}

static bool fill_site(const struct jump_entry *e, unsigned int len, struct rv_jl_site *s)
{
	s->pc = jump_entry_code(e);
	s->len = len;
	if (!len)
		return false;
	s->target = jump_entry_target(e);
	s->key = (unsigned long)jump_entry_key(e);
	s->branch = jump_entry_is_branch(e);
	return true;
}

static bool keyed_here(unsigned long pc)
{
	return rv_jl_keys && (rv_byte || rv_train) && rv_instr_allowed(pc);
}

/* vmlinux's site at @pc, or NULL; calls no kernel text */
static const struct jl_ent *vmlinux_entry(unsigned long pc)
{
	if (!keyed_here(pc) || pc < rv_k.stext || pc >= rv_k.etext)
		return NULL;
	return rv_sitetab_find(&tab, pc);
}

/* *@len: the site's length, known for vmlinux's sites (0: decode it) */
static const struct jump_entry *entry_at(unsigned long pc, unsigned int *len)
{
	const struct jl_ent *v;
	struct module *mod;
	unsigned int i;

	if (!keyed_here(pc) || !tab.ents)
		return NULL;
	if (pc >= rv_k.stext && pc < rv_k.etext) {
		v = rv_sitetab_find(&tab, pc);
		*len = v ? v->len : 0;
		return v ? v->e : NULL;
	}
	*len = 0;
	mod = rv_k.module_text_address(pc);
	if (!mod || !mod->jump_entries)
		return NULL;
	for (i = 0; i < mod->num_jump_entries; i++)
		if (jump_entry_code(&mod->jump_entries[i]) == pc)
			return &mod->jump_entries[i];
	return NULL;
}

/*
 * Is @pc a jump-label site that byte or training mode translates from its
 * key?  (Not in entry text, which is never instrumented.)  Translator
 * only: it may decode the site.
 */
bool rv_jl_find(unsigned long pc, struct rv_jl_site *s)
{
	unsigned int len;
	const struct jump_entry *e = entry_at(pc, &len);

	if (!e)
		return false;
	if (!len) {
		len = site_len(e);
		if (!len)
			n_bad++;
	}
	return fill_site(e, len, s);
}

/*
 * Surely translated from its key, without decoding (a kretprobe handler,
 * coherence.c, runs on the kernel's stack, where the module must not call
 * into kernel text): vmlinux's sites; a module's are decoded when first
 * translated, so its pokes still drop blocks.
 */
bool rv_jl_keyed(unsigned long pc)
{
	const struct jl_ent *v = vmlinux_entry(pc);

	return v && v->len;
}

/* callers of rv_jl_find hold the translator lock, whose irqs-off section
 * keeps a module's text and table from going away */
int rv_jl_init(void)
{
	const struct jump_entry *start, *e;
	unsigned long n;
	int ret;

	if (!rv_jl_keys)
		return 0;
	start = rv_ksym_table("__start___jump_table", "__stop___jump_table", sizeof(*start), &n);
	if (!start)
		return -ENOENT;
	ret = rv_sitetab_alloc(&tab, n, sizeof(struct jl_ent));
	if (ret)
		return ret;
	for (e = start; e < start + n; e++) {
		unsigned long pc = jump_entry_code(e);
		struct jl_ent *v;

		/* init text is gone once the module can load */
		if (jump_entry_is_init(e) || pc < rv_k.stext || pc >= rv_k.etext)
			continue;
		v = rv_sitetab_add(&tab, pc);
		v->e = e;
		v->len = site_len(e);
		if (!v->len)
			n_bad++;
	}
	rv_sitetab_sort(&tab);
	pr_info(RV_PR "%lu jump-label sites translated from their keys\n", tab.n);
	return 0;
}

/* byte mode: module-private memory (not hashed at checkpoints) */
void rv_jl_excl(void)
{
	if (tab.ents)
		rv_byte_excl_va(tab.ents, tab.bytes);
}

void rv_jl_exit(void)
{
	rv_sitetab_free(&tab);
}

unsigned long rv_jl_bad(void)
{
	return n_bad;
}
