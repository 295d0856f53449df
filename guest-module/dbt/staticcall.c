// SPDX-License-Identifier: GPL-2.0
/*
 * Static-call sites, for translating them from their key (translate.c).
 *
 * The jump-label problem again (jumplabel.c): static_call_update() writes
 * key->func, then rewrites every inline call site of the key with
 * text_poke_bp; which target another vCPU called depended on when its
 * block was dropped, and a block translated while the int3 was in place
 * sent the vCPU to native code (a trace event toggled during a recording:
 * native kernel at a site in __schedule, a replay that diverged).  Byte
 * mode translates each site as a CREW-ordered read of
 * key->func: a call (or, at a tail site, a jump) through the dispatcher,
 * or where func is NULL a nop (a ret at a tail site), as the kernel's
 * __sc_insn() would patch it.  Not in training mode, whose calls push
 * code-cache return addresses (callret=1) and which orders nothing: it
 * copies the site, and a recording's key read there is an untrained
 * access, still ordered.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/static_call_types.h>
#include "rv.h"
#include "instrument.h"
#include "sitetab.h"

struct sc_ent {
	unsigned long pc;	/* first: rv_sitetab */
	const struct static_call_site *s;
};

static struct rv_sitetab tab;

static unsigned long site_pc(const struct static_call_site *s)
{
	return (long)s->addr + (unsigned long)&s->addr;
}

static unsigned long site_key(const struct static_call_site *s)
{
	return (long)s->key + (unsigned long)&s->key;
}

static bool fill(const struct static_call_site *site, struct rv_sc_site *s)
{
	s->pc = site_pc(site);
	s->key = site_key(site) & ~STATIC_CALL_SITE_FLAGS;
	s->tail = site_key(site) & STATIC_CALL_SITE_TAIL;
	return true;
}

static bool keyed_here(unsigned long pc)
{
	return rv_jl_keys && rv_byte && rv_instr_allowed(pc);
}

/*
 * A vmlinux site, translated from its key?  Calls no kernel text: for
 * coherence.c's kretprobe handler, on the kernel's stack.  A module's
 * sites are found when translated, and their pokes still drop blocks.
 */
bool rv_sc_keyed(unsigned long pc)
{
	return keyed_here(pc) && pc >= rv_k.stext && pc < rv_k.etext &&
	       rv_sitetab_find(&tab, pc);
}

/* is @pc a static-call site translated from its key (never its bytes)? */
bool rv_sc_find(unsigned long pc, struct rv_sc_site *s)
{
	const struct sc_ent *hit;
	struct module *mod;
	int i;

	if (!keyed_here(pc) || !tab.ents)
		return false;
	if (pc >= rv_k.stext && pc < rv_k.etext) {
		hit = rv_sitetab_find(&tab, pc);
		return hit && fill(hit->s, s);
	}
	mod = rv_k.module_text_address(pc);
	if (!mod || !mod->static_call_sites)
		return false;
	for (i = 0; i < mod->num_static_call_sites; i++) {
		const struct static_call_site *site = &mod->static_call_sites[i];

		if (site_pc(site) == pc && !(site_key(site) & STATIC_CALL_SITE_INIT))
			return fill(site, s);
	}
	return false;
}

int rv_sc_init(void)
{
	const struct static_call_site *start, *site;
	unsigned long n;
	int ret;

	if (!rv_jl_keys)
		return 0;
	start = rv_ksym_table("__start_static_call_sites", "__stop_static_call_sites",
			      sizeof(*start), &n);
	if (!start)
		return -ENOENT;
	ret = rv_sitetab_alloc(&tab, n, sizeof(struct sc_ent));
	if (ret)
		return ret;
	for (site = start; site < start + n; site++) {
		unsigned long pc = site_pc(site);
		struct sc_ent *v;

		/* init text is gone once the module can load */
		if ((site_key(site) & STATIC_CALL_SITE_INIT) || pc < rv_k.stext || pc >= rv_k.etext)
			continue;
		v = rv_sitetab_add(&tab, pc);
		v->s = site;
	}
	rv_sitetab_sort(&tab);
	pr_info(RV_PR "%lu static-call sites translated from their keys\n", tab.n);
	return 0;
}

/* byte mode: module-private memory (not hashed at checkpoints) */
void rv_sc_excl(void)
{
	if (tab.ents)
		rv_byte_excl_va(tab.ents, tab.bytes);
}

void rv_sc_exit(void)
{
	rv_sitetab_free(&tab);
}
