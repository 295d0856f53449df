/*
 * rr_pmu (include/rr_pmu.h) without a PMU: counter programming, and a
 * replay reaching logged positions in a simulated guest whose simulated
 * counter overflows with random skid.  Every goal must be reached at
 * exactly its recorded instruction while the skid stays within the margin;
 * a larger skid must be reported as an overshoot, never as an arrival
 * somewhere else.
 */
#include "testlib.h"
#include "rr_pmu.h"

/* one executed instruction: the position before it, whether it branches */
struct step {
	uint64_t count, rip, rcx;
	int branch;
};

static uint64_t rng = 88172645463325252ULL;

static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

/*
 * A loop whose body is straight-line code, sometimes with a rep-string
 * instruction (one step per iteration, same rip, rcx counting down),
 * ending in a conditional branch: rips repeat at other counts, and within
 * one count only rcx tells the rep iterations apart.
 */
static struct step *trace(size_t *n_out, int iters)
{
	size_t n = 0, cap = 1024;
	struct step *t = malloc(cap * sizeof(*t));
	uint64_t count = 0, rcx = 7;

	for (int i = 0; i < iters; i++) {
		int len = 1 + (int)rnd(12), rep_at = rnd(3) ? -1 : (int)rnd(len);

		for (int k = 0; k <= len; k++) {
			int reps = k == rep_at ? 1 + (int)rnd(40) : 1;

			if (k == rep_at)
				rcx = reps;
			for (int r = 0; r < reps; r++) {
				if (n == cap)
					t = realloc(t, (cap *= 2) * sizeof(*t));
				t[n++] = (struct step){ count, 0x401000 + 3 * k, rcx, k == len };
				if (k == rep_at)
					rcx--;
			}
		}
		count++;		/* the branch at the end of the body */
	}
	*n_out = n;
	return t;
}

/* the simulated vCPU: runs until the counter overflows, plus skid */
static size_t run_armed(const struct step *t, size_t n, size_t k, uint64_t period,
			uint64_t skid)
{
	uint64_t stop = t[k].count + period + skid;

	while (k < n - 1 && t[k].count < stop)
		k++;
	/* the interrupt lands somewhere before the next branch retires */
	while (k < n - 1 && !t[k].branch && rnd(2))
		k++;
	return k;
}

/* replay @goals (trace indices, ascending); 0 all exact, 1 an overshoot */
static int replay(const struct step *t, size_t n, const size_t *goals, int ngoals,
		  uint64_t max_skid, long *runs, long *steps)
{
	size_t k = 0;

	for (int i = 0; i < ngoals; i++) {
		const struct step *want = &t[goals[i]];
		struct rr_pmu_goal g = { want->count, want->rip, want->rcx };

		for (;;) {
			uint64_t period = 0;
			enum rr_pmu_action a = rr_pmu_next(&g, t[k].count, t[k].rip, t[k].rcx,
							   RR_PMU_MARGIN, &period);

			if (a == RR_PMU_ARRIVED) {
				CHECK(k == goals[i], "goal %d: arrived at step %zu, recorded at %zu",
				      i, k, goals[i]);
				break;
			}
			if (a == RR_PMU_OVERSHOT)
				return 1;
			CHECK(k < n - 1, "goal %d: ran off the end of the trace", i);
			if (a == RR_PMU_RUN) {
				CHECK(period > 0, "armed with period 0");
				k = run_armed(t, n, k, period, rnd(max_skid + 1));
				(*runs)++;
			} else {
				k++;
				(*steps)++;
			}
		}
	}
	return 0;
}

static void check_goals(uint64_t max_skid, int want_overshoot)
{
	size_t n, goals[200];
	struct step *t = trace(&n, 300000);
	int overshoots = 0, rounds = 20;
	long runs = 0, steps = 0;

	for (int r = 0; r < rounds; r++) {
		size_t at = 0;

		for (int i = 0; i < 200; i++) {
			at += rnd(n / 200);
			goals[i] = at;
		}
		overshoots += replay(t, n, goals, 200, max_skid, &runs, &steps);
	}
	printf("skid <= %3" PRIu64 ": %d of %d replays overshot; %ld armed runs, %ld single steps\n",
	       max_skid, overshoots, rounds, runs, steps);
	if (want_overshoot)
		CHECK(overshoots > 0, "a skid past the margin was never reported");
	else
		CHECK(overshoots == 0, "overshoot with skid within the margin");
	free(t);
}

static void check_next_edges(void)
{
	struct rr_pmu_goal g = { 1000, 0x10, 5 };
	uint64_t p = 0;

	CHECK(rr_pmu_next(&g, 1000 - RR_PMU_MARGIN, 0, 0, RR_PMU_MARGIN, &p) == RR_PMU_STEP,
	      "margin away: step");
	CHECK(rr_pmu_next(&g, 999 - RR_PMU_MARGIN, 0, 0, RR_PMU_MARGIN, &p) == RR_PMU_RUN &&
	      p == 1, "margin + 1 away: run, period 1 (got %" PRIu64 ")", p);
	CHECK(rr_pmu_next(&g, 0, 0, 0, RR_PMU_MARGIN, &p) == RR_PMU_RUN &&
	      p == 1000 - RR_PMU_MARGIN, "from 0: period %" PRIu64, p);
	CHECK(rr_pmu_next(&g, 1000, 0x10, 4, RR_PMU_MARGIN, &p) == RR_PMU_STEP,
	      "same count and rip, other rcx: step (a rep iteration)");
	CHECK(rr_pmu_next(&g, 1000, 0x10, 5, RR_PMU_MARGIN, &p) == RR_PMU_ARRIVED, "arrived");
	CHECK(rr_pmu_next(&g, 1001, 0x10, 5, RR_PMU_MARGIN, &p) == RR_PMU_OVERSHOT,
	      "one past: overshot even at the same rip");
}

static void check_attr(void)
{
	struct perf_event_attr a;

	CHECK(rr_pmu_vendor_of("GenuineIntel") == RR_PMU_INTEL, "intel");
	CHECK(rr_pmu_vendor_of("AuthenticAMD") == RR_PMU_AMD, "amd");
	CHECK(rr_pmu_vendor_of("HygonGenuine") == RR_PMU_AMD, "hygon");
	CHECK(rr_pmu_vendor_of("TCGTCGTCGTCG") == -1, "no PMU model for TCG");
	CHECK(rr_pmu_attr(&a, -1, 0) == -1, "unknown vendor refused");

	CHECK(rr_pmu_attr(&a, RR_PMU_INTEL, 0) == 0, "intel attr");
	CHECK(a.type == PERF_TYPE_RAW && a.config == 0x01c4 && a.size == sizeof(a), "intel event");
	CHECK(a.exclude_kernel && a.exclude_host && a.exclude_hv && !a.exclude_user &&
	      !a.exclude_guest, "guest user mode only");
	CHECK(a.disabled && a.pinned && a.sample_period == 0 && a.wakeup_events == 0,
	      "counting only, created disabled");
	CHECK(rr_pmu_attr(&a, RR_PMU_AMD, 4096) == 0, "amd attr");
	CHECK(a.config == 0x00d1 && a.sample_period == 4096 && a.wakeup_events == 1,
	      "amd event, overflow after 4096");
}

int main(void)
{
	check_attr();
	check_next_edges();
	check_goals(0, 0);
	check_goals(RR_PMU_MARGIN - 1, 0);
	/* skid == margin stops at the goal's count, possibly past its rip */
	check_goals(RR_PMU_MARGIN, 1);
	check_goals(RR_PMU_MARGIN + 200, 1);
	printf("test_pmu: ok\n");
	return 0;
}
