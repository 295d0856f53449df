/*
 * replay-vm: which virtual pages of a vCPU's softmmu TLB may map a RAM page.
 *
 * A page that changes hands under page CREW loses its previous owners'
 * TLB entries.  Scanning their whole TLBs for them (every MMU mode, tables
 * that grow to thousands of entries) was 60 % of the host time of a
 * 4-vCPU page-CREW boot.  Every fill of a RAM entry is noted here instead,
 * so that a revocation looks at the few entries a note names.  Notes live
 * until the vCPU's TLB is empty again (a full flush: every CR3 write under
 * TCG): one may be stale, but no entry lacks one.  Where notes were lost
 * (a full table, too many aliases of one page) the caller scans.
 *
 * All of it runs under the vCPU's TLB lock (tlb->c.lock), which both the
 * vCPU's own fills and flushes and another thread's revocation hold.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/core/cpu.h"
#include "sysemu/rrvm.h"
#include "rrvm-internal.h"

#define RMAP_SLOTS    8192                      /* a power of two */
#define RMAP_MAX_USED (RMAP_SLOTS / 4 * 3)      /* keeps probes short */
#define RMAP_VAS      4

typedef struct RmapSlot {
    uintptr_t host;          /* host address of the RAM page */
    uint32_t gen;            /* in use when equal to the map's */
    uint32_t n;              /* virtual pages noted; > RMAP_VAS: too many */
    uint64_t va[RMAP_VAS];   /* virtual page | MMU index */
} RmapSlot;

struct RRVMRmap {
    uint32_t gen;
    uint32_t used;
    bool lost;               /* a note did not fit since the last clear */
    RmapSlot slot[RMAP_SLOTS];
};

static uint32_t rmap_hash(uintptr_t host)
{
    return (uint32_t)(((uint64_t)host >> 12) * 0x9e3779b97f4a7c15ULL >> 40) &
           (RMAP_SLOTS - 1);
}

/* The slot of @host, or the free slot where it would go. */
static RmapSlot *rmap_probe(RRVMRmap *m, uintptr_t host)
{
    uint32_t i = rmap_hash(host);

    for (;;) {
        RmapSlot *s = &m->slot[i];

        if (s->gen != m->gen || s->host == host) {
            return s;
        }
        i = (i + 1) & (RMAP_SLOTS - 1);
    }
}

void rrvm_rmap_note(CPUState *cpu, uintptr_t host, uint64_t vaddr_page,
                    int mmu_idx)
{
    RRVMCpu *rc = &rrvm.cpus[cpu->cpu_index];
    RRVMRmap *m = rc->rmap;
    uint64_t v = vaddr_page | mmu_idx;
    RmapSlot *s;

    if (!m) {
        m = rc->rmap = g_new0(RRVMRmap, 1);
        m->gen = 1;
    }
    if (m->lost) {
        return;
    }
    s = rmap_probe(m, host);
    if (s->gen != m->gen) {
        if (m->used >= RMAP_MAX_USED) {
            m->lost = true;
            return;
        }
        m->used++;
        s->gen = m->gen;
        s->host = host;
        s->n = 0;
    }
    for (uint32_t k = 0; k < MIN(s->n, RMAP_VAS); k++) {
        if (s->va[k] == v) {
            return;
        }
    }
    if (s->n < RMAP_VAS) {
        s->va[s->n] = v;
    }
    if (s->n <= RMAP_VAS) {
        s->n++;
    }
}

void rrvm_rmap_clear(CPUState *cpu)
{
    RRVMRmap *m = rrvm.cpus[cpu->cpu_index].rmap;

    if (!m) {
        return;
    }
    m->used = 0;
    m->lost = false;
    if (++m->gen == 0) {             /* wrapped: no old slot may match */
        memset(m->slot, 0, sizeof(m->slot));
        m->gen = 1;
    }
}

int rrvm_rmap_find(CPUState *cpu, uintptr_t host, uint64_t *va, int max)
{
    RRVMRmap *m = rrvm.cpus[cpu->cpu_index].rmap;
    RmapSlot *s;

    if (!m || m->lost) {
        return -1;              /* fills were not (all) noted: scan */
    }
    s = rmap_probe(m, host);
    if (s->gen != m->gen) {
        return 0;
    }
    if (s->n > RMAP_VAS || s->n > (uint32_t)max) {
        return -1;
    }
    memcpy(va, s->va, s->n * sizeof(*va));
    return s->n;
}
