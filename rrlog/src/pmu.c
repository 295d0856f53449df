/* Positions under KVM with a PMU: see include/rr_pmu.h. */
#include <string.h>

#include "rr_pmu.h"

int rr_pmu_vendor_of(const char *v)
{
	if (!strcmp(v, "GenuineIntel"))
		return RR_PMU_INTEL;
	if (!strcmp(v, "AuthenticAMD") || !strcmp(v, "HygonGenuine"))
		return RR_PMU_AMD;
	return -1;
}

int rr_pmu_attr(struct perf_event_attr *attr, int vendor, uint64_t period)
{
	/*
	 * Conditional branches, not all branches: they are what both vendors
	 * count without over-counting (far transfers, interrupts), and the
	 * user-mode position only needs a count both runs agree on.
	 */
	static const uint64_t config[] = {
		[RR_PMU_INTEL] = 0x01c4,
		[RR_PMU_AMD] = 0x00d1,
	};

	if (vendor != RR_PMU_INTEL && vendor != RR_PMU_AMD)
		return -1;
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_RAW;
	attr->config = config[vendor];
	attr->sample_period = period;
	attr->wakeup_events = period ? 1 : 0;
	attr->disabled = 1;
	attr->pinned = 1;
	attr->exclude_kernel = 1;	/* kernel positions are det points */
	attr->exclude_hv = 1;
	attr->exclude_host = 1;		/* only while the guest runs */
	return 0;
}

enum rr_pmu_action rr_pmu_next(const struct rr_pmu_goal *g, uint64_t count,
			       uint64_t rip, uint64_t rcx, uint64_t margin,
			       uint64_t *period)
{
	if (count > g->branches)
		return RR_PMU_OVERSHOT;
	if (count == g->branches)
		return rip == g->rip && rcx == g->rcx ? RR_PMU_ARRIVED : RR_PMU_STEP;
	if (g->branches - count > margin) {
		*period = g->branches - count - margin;
		return RR_PMU_RUN;
	}
	return RR_PMU_STEP;
}
