// SPDX-License-Identifier: GPL-2.0
/* /proc/replayvm: translator statistics (one "name value" per line). */
#include <linux/kernel.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include "rv.h"
#include "dbt/instrument.h"

static u64 sum(size_t off)
{
	u64 s = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		s += *(u64 *)((u8 *)per_cpu_ptr(&rv_pcpu_stats, cpu) + off);
	return s;
}

#define S(f) sum(offsetof(struct rv_stats, f))

static int rv_show(struct seq_file *m, void *v)
{
	int i;
	u64 st = READ_ONCE(rv_entries.samp_trans), sn = READ_ONCE(rv_entries.samp_native);
	u64 sd = READ_ONCE(rv_entries.samp_dispatch);

	seq_printf(m, "active %d\n", READ_ONCE(rv_active));
	seq_printf(m, "blocks %lu\n", rv_nblocks());
	seq_printf(m, "cache_bytes %lu\n", rv_cache ? rv_cache->used : 0);
	seq_printf(m, "cache_cold_bytes %lu\n", rv_cache ? rv_cold_used() : 0);
	seq_printf(m, "dispatch %llu\n", S(dispatch));
	seq_printf(m, "chains %llu\n", S(chains));
	seq_printf(m, "native_exits %llu\n", S(native_exits));
	seq_printf(m, "fallback_sites %llu\n", S(fallbacks));
	seq_printf(m, "cache_full %llu\n", S(cache_full));
	seq_printf(m, "stage_bypassed %llu\n", rv_stage_bypassed());
	seq_printf(m, "exc_rip_fixups %llu\n", (u64)atomic64_read(&rv_fixups));
	seq_printf(m, "exc_rip_unmapped %llu\n", (u64)atomic64_read(&rv_fixup_miss));
	seq_printf(m, "kernel_iret_into_cache %llu\n", S(kret_enter));
	seq_printf(m, "text_pokes %llu\n", (u64)atomic64_read(&rv_pokes_seen));
	seq_printf(m, "text_pokes_missed %lu\n", rv_poke_missed());
	seq_printf(m, "jump_label_sites_keyed %llu\n", S(jl_sites));
	seq_printf(m, "jump_label_sites_odd %lu\n", rv_jl_bad());
	seq_printf(m, "static_call_sites_keyed %llu\n", S(sc_sites));
	seq_printf(m, "static_call_sites_direct %llu\n", S(sc_direct));
	seq_printf(m, "poke_batch_sites %llu\n", S(pb_sites));
	seq_printf(m, "poke_sync_counts %llu\n", S(pb_sync_sites));
	rv_pokes_show(m);
	seq_printf(m, "invalidations %llu\n", S(invalidations));
	seq_printf(m, "invalidated_blocks %llu\n", S(inval_blocks));
	seq_printf(m, "entries_syscall %llu\n", READ_ONCE(rv_entries.syscalls));
	seq_printf(m, "entries_exception %llu\n", READ_ONCE(rv_entries.exceptions));
	seq_printf(m, "entries_interrupt %llu\n", READ_ONCE(rv_entries.interrupts));
	seq_printf(m, "entries_translated %llu\n", READ_ONCE(rv_entries.syscalls) +
		   READ_ONCE(rv_entries.exceptions) + READ_ONCE(rv_entries.interrupts));
	seq_printf(m, "samples_kernel_translated %llu\n", st);
	seq_printf(m, "samples_kernel_native %llu\n", sn);
	seq_printf(m, "samples_kernel_dispatcher %llu\n", sd);
	seq_printf(m, "samples_user %llu\n", READ_ONCE(rv_entries.samp_user));
	/* share of kernel time: translated code vs native kernel code (the
	 * dispatcher's own time is reported separately) */
	seq_printf(m, "kernel_time_translated_pct %llu\n", st + sn ? 100 * st / (st + sn) : 0);
	seq_printf(m, "kernel_time_dispatcher_pct %llu\n", st + sn + sd ? 100 * sd / (st + sn + sd) : 0);
	if (rv_instr) {
		seq_printf(m, "instr %s\n", rv_instr->name);
		seq_printf(m, "instr_mem_read %llu\n", READ_ONCE(rv_instr_mem_count[RV_MEM_READ]));
		seq_printf(m, "instr_mem_write %llu\n", READ_ONCE(rv_instr_mem_count[RV_MEM_WRITE]));
		seq_printf(m, "instr_mem_readwrite %llu\n", READ_ONCE(rv_instr_mem_count[3]));
		seq_printf(m, "instr_dp_io %llu\n", READ_ONCE(rv_instr_dp_count[RV_DP_IO]));
		seq_printf(m, "instr_dp_rdtsc %llu\n", READ_ONCE(rv_instr_dp_count[RV_DP_RDTSC]));
		seq_printf(m, "instr_dp_pause %llu\n", READ_ONCE(rv_instr_dp_count[RV_DP_PAUSE]));
		seq_printf(m, "instr_dp_backedge %llu\n", READ_ONCE(rv_instr_dp_count[RV_DP_BACKEDGE]));
	}
	if (rv_byte)
		rv_byte_show(m);
	seq_printf(m, "selftest_insns %lu\n", rv_selftest_insns);
	seq_printf(m, "selftest_undecodable %lu\n", rv_selftest_bad);
	for (i = 0; i < RV_RING; i++)
		if (rv_trans_ring[i])
			seq_printf(m, "trans_sample %pS\n", (void *)rv_trans_ring[i]);
	for (i = 0; i < RV_RING; i++)
		if (rv_native_ring[i])
			seq_printf(m, "native_sample %pS\n", (void *)rv_native_ring[i]);
	return 0;
}

int rv_stats_init(void)
{
	return proc_create_single("replayvm", 0444, NULL, rv_show) ? 0 : -ENOMEM;
}

void rv_stats_exit(void)
{
	remove_proc_entry("replayvm", NULL);
}
