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
#include <linux/sort.h>
#include <linux/vmalloc.h>
#include "rv.h"
#include "instrument.h"
#include "crewinstr.h"

struct jl_ent {
	unsigned long pc;
	const struct jump_entry *e;
	unsigned int len;	/* decoded at load: 2 or 5, 0 if odd */
};

static struct jl_ent *tab;
static unsigned long ntab, tab_bytes;
static unsigned long n_bad;	/* sites left to their bytes (odd length) */
bool rv_jl_keys = true;
module_param_named(jl_keys, rv_jl_keys, bool, 0444);
MODULE_PARM_DESC(jl_keys, "byte/train mode: translate jump-label sites as an ordered read of their static key (0: copy their current bytes, as before; a key flipped during a recording may then not replay)");

static int cmp_ent(const void *a, const void *b)
{
	const struct jl_ent *x = a, *y = b;

	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

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

/* *@len: the site's length, known for vmlinux's sites (0: decode it) */
static const struct jump_entry *entry_at(unsigned long pc, unsigned int *len)
{
	unsigned long lo = 0, hi = ntab;
	struct module *mod;
	unsigned int i;

	if (!rv_jl_keys || !tab || !(rv_byte || rv_train) || !rv_instr_allowed(pc))
		return NULL;
	if (pc >= rv_k.stext && pc < rv_k.etext) {
		while (lo < hi) {
			unsigned long mid = lo + (hi - lo) / 2;

			if (tab[mid].pc == pc) {
				*len = tab[mid].len;
				return tab[mid].e;
			}
			if (tab[mid].pc < pc)
				lo = mid + 1;
			else
				hi = mid;
		}
		return NULL;
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
	unsigned int len;

	return entry_at(pc, &len) && len;
}

/* callers of rv_jl_find hold the translator lock, whose irqs-off section
 * keeps a module's text and table from going away */
int rv_jl_init(void)
{
	const struct jump_entry *start, *stop, *e;
	unsigned long n = 0;

	if (!rv_jl_keys)
		return 0;
	start = (const void *)rv_ksym("__start___jump_table");
	stop = (const void *)rv_ksym("__stop___jump_table");
	if (!start || !stop || stop < start)
		return -ENOENT;
	tab_bytes = array_size(stop - start, sizeof(*tab));
	tab = vmalloc(tab_bytes);
	if (!tab)
		return -ENOMEM;
	for (e = start; e < stop; e++) {
		unsigned long pc = jump_entry_code(e);

		/* init text is gone once the module can load */
		if (jump_entry_is_init(e) || pc < rv_k.stext || pc >= rv_k.etext)
			continue;
		tab[n].pc = pc;
		tab[n].len = site_len(e);
		if (!tab[n].len)
			n_bad++;
		tab[n++].e = e;
	}
	sort(tab, n, sizeof(*tab), cmp_ent, NULL);
	ntab = n;
	pr_info(RV_PR "%lu jump-label sites translated from their keys\n", n);
	return 0;
}

/* byte mode: module-private memory (not hashed at checkpoints) */
void rv_jl_excl(void)
{
	if (tab)
		rv_byte_excl_va(tab, tab_bytes);
}

void rv_jl_exit(void)
{
	vfree(tab);
	tab = NULL;
	ntab = 0;
}

unsigned long rv_jl_bad(void)
{
	return n_bad;
}
