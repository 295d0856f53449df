/*
 * Positions under KVM with a hardware PMU (issue 10): counter programming
 * and the way to an exact logged position.
 *
 * In user mode a position is (retired conditional branches, rip, rcx).
 * Under KVM the count comes from a PMU counter on the vCPU thread that
 * counts only while the guest runs in user mode.  (TCG's generated
 * counter counts every control transfer instead: a recording is replayed
 * on the accelerator it was made on.)  A replay reaches a
 * logged position in two moves: run with the counter armed to overflow
 * `margin` branches early (the overflow interrupt arrives with skid: the
 * guest may retire more branches before it stops; the thesis uses 128),
 * then single-step until count, rip and rcx all match.  Between two
 * branches the code is straight-line, so a rip is met at most once per
 * count, except in a rep-string instruction, where rcx tells its
 * iterations apart.  A count past the goal is a divergence (or a skid
 * larger than the margin): reported, never stepped over.
 *
 * This file is the logic only, so that it is tested without a PMU (this
 * project's machines have none); nothing here calls perf_event_open.
 */
#ifndef RR_PMU_H
#define RR_PMU_H

#include <stdint.h>
#include <linux/perf_event.h>

#ifdef __cplusplus
extern "C" {
#endif

enum rr_pmu_vendor {
	RR_PMU_INTEL,	/* BR_INST_RETIRED.CONDITIONAL: event 0xc4, umask 0x01 */
	RR_PMU_AMD,	/* Zen: retired conditional branches, PMCx0D1 */
};

/* the thesis' early-overflow margin, in branches */
#define RR_PMU_MARGIN 128

/* vendor from the CPUID vendor string ("GenuineIntel", "AuthenticAMD",
 * "HygonGenuine"); -1 for anything else */
int rr_pmu_vendor_of(const char *cpuid_vendor);

/*
 * perf_event_attr for a vCPU thread: the guest's user-mode conditional
 * branches (exclude_host, exclude_kernel, exclude_hv), pinned, created
 * disabled.  period: overflow after that many (0: count only).  Returns
 * 0, or -1 for an unknown vendor.
 */
int rr_pmu_attr(struct perf_event_attr *attr, int vendor, uint64_t period);

struct rr_pmu_goal {
	uint64_t branches, rip, rcx;
};

enum rr_pmu_action {
	RR_PMU_RUN,		/* run freely, the counter armed with *period */
	RR_PMU_STEP,		/* single-step one instruction */
	RR_PMU_ARRIVED,		/* at the goal: deliver the event */
	RR_PMU_OVERSHOT,	/* count past the goal: divergence */
};

/*
 * What to do next to reach @g from the vCPU's (count, rip, rcx).  margin
 * (RR_PMU_MARGIN) must be MORE than the largest skid: a vCPU stopped with
 * exactly margin branches of skid has the goal's count and may already be
 * past the goal's rip (tests/test_pmu.c shows it).  *period is set for RUN.
 */
enum rr_pmu_action rr_pmu_next(const struct rr_pmu_goal *g, uint64_t count,
			       uint64_t rip, uint64_t rcx, uint64_t margin,
			       uint64_t *period);

#ifdef __cplusplus
}
#endif
#endif
